/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The parser corpus through the XDP program: every fixture input (the fuzz
 * seed corpus, tests/fuzz), every prefix of it, and seeded random byte
 * mutations of each, run through both pkt/'s fg_pkt_parse() and the XDP
 * program (BPF_PROG_TEST_RUN).  Invariants, per frame:
 *   - a frame the DPDK parser drops is dropped by XDP with exactly the
 *     same reason (one drop counter moves, and `drops`);
 *   - a frame with a VLAN tag the port is not on (the config is untagged)
 *     drops as vlan_foreign;
 *   - ARP / ND / host frames go to the kernel (XDP_PASS, host_packets);
 *   - every other frame is never dropped with a parser reason (except
 *     icmp_unrelated for an ICMP error about no service's flow, the
 *     daemon's own answer);
 * and over the whole run rx_packets = tx_packets + host_packets + drops
 * (every input accounted for once; the program generates nothing).
 * The verifier accepting the program and no frame making the test run
 * fail is the "no surprise" part.
 *
 *   test_xdp_parse [MUTATIONS_PER_FRAME]   (seed: FG_SEED, else fixed; printed)
 * Exit 77 when BPF programs cannot be loaded here.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>
#include <linux/bpf.h>

#include "fg_fixtures.h"
#include "fgx_load.h"
#include "fgx_maps.h"

#define MAX_FRAME 3520

static struct fgx *x;
static unsigned long runs, bad;

static uint32_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return (uint32_t)*s;
}

static void check(const uint8_t *f, uint32_t len, const char *what)
{
	static uint8_t out[MAX_FRAME + 512];
	uint64_t before[FGX_CNT_N], after[FGX_CNT_N];
	struct fg_pkt p;
	int why = 0, moved = 0, want_v, want_why = -1;
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = f, .data_size_in = len,
		    .data_out = out, .data_size_out = sizeof(out), .repeat = 1);

	if (len < 14 || len > MAX_FRAME)
		return;
	fg_pkt_parse(f, len, &p);
	if (p.kind == FG_PK_DROP) {
		want_v = XDP_DROP;
		want_why = p.drop;
	} else if (p.vlan & 0x0fff) {
		want_v = XDP_DROP;
		want_why = FG_DROP_vlan_foreign;
	} else if (p.kind == FG_PK_ARP || p.kind == FG_PK_ND || p.kind == FG_PK_HOST) {
		want_v = XDP_PASS;
	} else {
		want_v = -1; /* any verdict, never a parser drop */
	}
	fgx_counters(x, before, NULL);
	if (bpf_prog_test_run_opts(fgx_prog_fd(x), &o)) {
		printf("FAIL %s (%u bytes): BPF_PROG_TEST_RUN: %s\n", what, len, strerror(errno));
		bad++;
		return;
	}
	fgx_counters(x, after, NULL);
	runs++;
	for (int r = 1; r < FG_DROP_MAX; r++)
		if (after[FGX_CNT_DROP(r)] != before[FGX_CNT_DROP(r)]) {
			moved += (int)(after[FGX_CNT_DROP(r)] - before[FGX_CNT_DROP(r)]);
			why = r;
		}
	if ((want_v >= 0 && o.retval != (uint32_t)want_v) ||
	    (want_why >= 0 && (moved != 1 || why != want_why)) ||
	    (o.retval == XDP_DROP && moved != 1) ||
	    (o.retval != XDP_DROP && moved != 0) ||
	    (want_v < 0 && o.retval == XDP_DROP && why < FG_DROP_frag_later_untracked &&
	     /* the daemon's answer to an error about no flow of a service */
	     !(p.kind == FG_PK_ICMP_ERR && why == FG_DROP_icmp_unrelated))) {
		if (bad < 20)
			printf("FAIL %s (%u bytes): parse kind %s drop %s; XDP verdict %u drop %s "
			       "(%d counters moved)\n", what, len, fg_pkt_kind_name(p.kind),
			       fg_drop_names[p.drop], o.retval, fg_drop_names[why], moved);
		bad++;
	}
}

int main(int argc, char **argv)
{
	unsigned int muts = argc > 1 ? (unsigned int)strtoul(argv[1], NULL, 0) : 200;
	const struct fg_config *cfg = fx_config();
	struct fgx_params par = { .ct_capacity = 65536, .pass_unknown = false };
	struct fx_case *c = calloc(1, sizeof(*c));
	uint64_t seed = getenv("FG_SEED") ? strtoull(getenv("FG_SEED"), NULL, 0) :
					    0x9e3779b97f4a7c15ull, s;
	uint64_t tot[FGX_CNT_N];
	static uint8_t m[MAX_FRAME];
	char err[256], what[96];
	int rc;

	if (!cfg || !c)
		return 1;
	rc = fgx_open(&par, &x, err, sizeof(err));
	if (rc == -EPERM || rc == -EACCES) {
		printf("xdp-parse: cannot load BPF programs here (%s): skipped\n", strerror(-rc));
		return 77;
	}
	if (rc || fgx_apply(x, cfg, NULL, FX_MTU, FGX_APPLY_SKIP_NAT, err, sizeof(err))) {
		printf("FAIL: load/apply: %s %s\n", strerror(-rc), err);
		return 1;
	}
	printf("xdp-parse: seed 0x%llx (FG_SEED=... to replay), %u mutations per frame\n",
	       (unsigned long long)seed, muts);
	s = seed;
	for (unsigned int i = 0; i < fx_count(); i++) {
		const struct fg_fixture *fx = fx_get(i);

		if (fx_build(fx, c))
			continue;
		for (uint32_t j = 0; j < c->n; j++) {
			const struct fx_pkt *pk = &c->p[j];
			uint32_t len = pk->in_len;

			snprintf(what, sizeof(what), "%s#%u", fx->name, j);
			check(pk->in, len, what);
			for (uint32_t cut = 14; cut < len && cut <= MAX_FRAME; cut++) {
				snprintf(what, sizeof(what), "%s#%u prefix", fx->name, j);
				check(pk->in, cut, what);
			}
			if (len > MAX_FRAME || len < 15)
				continue;
			for (unsigned int k = 0; k < muts; k++) {
				uint32_t n = 1 + rnd(&s) % 4, l = len;

				memcpy(m, pk->in, len);
				for (uint32_t b = 0; b < n; b++) {
					/* headers live in the first ~100 bytes */
					uint32_t at = rnd(&s) % (len < 100 ? len : 100);

					m[at] = (uint8_t)rnd(&s);
				}
				if (rnd(&s) % 4 == 0)
					l = 14 + rnd(&s) % (len - 13);
				snprintf(what, sizeof(what), "%s#%u mutation %u", fx->name, j, k);
				check(m, l, what);
			}
		}
	}
	fgx_counters(x, tot, NULL);
	if (tot[FG_CC_rx_packets] != tot[FG_CC_tx_packets] + tot[FG_CC_host_packets] +
	    tot[FG_CC_drops] || tot[FG_CC_rx_packets] != runs) {
		printf("FAIL: accounting: rx %llu, tx %llu + host %llu + drops %llu, runs %lu\n",
		       (unsigned long long)tot[FG_CC_rx_packets],
		       (unsigned long long)tot[FG_CC_tx_packets],
		       (unsigned long long)tot[FG_CC_host_packets],
		       (unsigned long long)tot[FG_CC_drops], runs);
		bad++;
	}
	printf("xdp-parse: %lu frames, %lu failures (forwarded %llu, host %llu, dropped %llu)\n",
	       runs, bad, (unsigned long long)tot[FG_CC_tx_packets],
	       (unsigned long long)tot[FG_CC_host_packets], (unsigned long long)tot[FG_CC_drops]);
	fgx_close(x);
	free(c);
	return bad ? 1 : 0;
}
