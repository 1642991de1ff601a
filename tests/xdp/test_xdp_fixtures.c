/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Every DPDK packet fixture (tests/fixtures) through the XDP balancer with
 * BPF_PROG_TEST_RUN: same verdict, same drop-reason counter (exactly one
 * named counter moves, plus `drops`), same output bytes.  One program,
 * its conntrack maps emptied before each fixture (flow state starts
 * empty, as one fresh daemon per fixture does for the DPDK pcap run).
 *
 * Exceptions (what the XDP dataplane does instead, docs/XDP.md):
 *   - full NAT is not in the XDP program: fixtures whose services are NAT
 *     (nat4_both_ways) are skipped;
 *   - ARP / ND are the kernel's on an XDP node: packets the DPDK worker
 *     answers (REPLY: arp_vip, arp_local, nd_vip6) or refuses
 *     (arp_not_ours) are handed to the kernel (XDP_PASS, host_packets);
 *   - an oversize packet drops as encap_too_big like DPDK, but no ICMP
 *     frag-needed / packet-too-big is generated (the DPDK row's error
 *     frame is not compared);
 *   - frames longer than one page less XDP's headroom (3,520 bytes: the
 *     jumbo fixtures) are multi-buffer XDP, which the program does not
 *     declare (xdp.frags); on a NIC it is attached to, the MTU must stay
 *     below that (flowgate-xdp says so at attach).  Skipped; the
 *     encap_too_big path is checked instead by too_big_small_mtu below
 *     (dsr4_syn with an MTU one byte short of its encapsulation);
 *   - frames shorter than an Ethernet header cannot be fed to
 *     BPF_PROG_TEST_RUN (the kernel refuses them; a NIC never delivers
 *     them): those rows are skipped.
 * Exit 77 (skip) when BPF programs cannot be loaded (not root / no BPF).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <linux/bpf.h>

#include "fg_fixtures.h"
#include "fgx_load.h"
#include "fgx_maps.h"

#define FGX_TEST_MAX_FRAME 3520

static const char *const vname[] = { "forward", "drop", "reply", "host" };

static int fixture_uses_nat(const char *name)
{
	return strncmp(name, "nat", 3) == 0;
}

/* The verdict / reason the XDP program must give for a DPDK row. */
static void xdp_expect(const struct fx_pkt *pk, int *verdict, int *why, int *cmp_bytes)
{
	*verdict = pk->verdict;
	*why = pk->drop;
	*cmp_bytes = pk->verdict == FG_V_FORWARD;
	if (pk->verdict == FG_V_REPLY ||
	    (pk->verdict == FG_V_DROP && pk->drop == FG_DROP_arp_not_ours)) {
		*verdict = FG_V_HOST;
		*why = 0;
	}
}

/* dsr4_syn's packet with the egress MTU one byte below its IPIP size:
 * encap_too_big (and only it), nothing sent. */
static unsigned int too_big_small_mtu(const struct fg_config *cfg, struct fx_case *c)
{
	struct fgx_params par = { .ct_capacity = 4096 };
	uint64_t before[FGX_CNT_N], after[FGX_CNT_N];
	static uint8_t out[FX_BUF + 512];
	struct fgx *x = NULL;
	char err[256];
	const struct fg_fixture *fx = NULL;
	uint32_t l3;
	int rc;

	for (unsigned int i = 0; i < fx_count(); i++)
		if (!strcmp(fx_get(i)->name, "dsr4_syn"))
			fx = fx_get(i);
	if (!fx || fx_build(fx, c) || fgx_open(&par, &x, err, sizeof(err)))
		return 1;
	l3 = (uint32_t)c->p[0].in[16] << 8 | c->p[0].in[17]; /* IPv4 total length */
	rc = fgx_apply(x, cfg, NULL, (uint16_t)(l3 + 20 - 1), FGX_APPLY_SKIP_NAT, err,
		       sizeof(err));
	{
		LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = c->p[0].in,
			    .data_size_in = c->p[0].in_len, .data_out = out,
			    .data_size_out = sizeof(out), .repeat = 1);

		fgx_counters(x, before, NULL);
		rc = rc ? rc : bpf_prog_test_run_opts(fgx_prog_fd(x), &o);
		fgx_counters(x, after, NULL);
		fgx_close(x);
		if (rc || o.retval != XDP_DROP ||
		    after[FGX_CNT_DROP(FG_DROP_encap_too_big)] -
		    before[FGX_CNT_DROP(FG_DROP_encap_too_big)] != 1 ||
		    after[FG_CC_tx_packets] != before[FG_CC_tx_packets]) {
			printf("FAIL too_big_small_mtu: retval %u, encap_too_big %+lld\n",
			       o.retval, (long long)(after[FGX_CNT_DROP(FG_DROP_encap_too_big)] -
			       before[FGX_CNT_DROP(FG_DROP_encap_too_big)]));
			return 1;
		}
	}
	printf("ok   %-28s %s\n", "too_big_small_mtu",
	       "dsr4_syn at MTU = its IPIP size - 1: encap_too_big");
	return 0;
}

int main(void)
{
	const struct fg_config *cfg = fx_config();
	struct fx_case *c = calloc(1, sizeof(*c));
	uint64_t before[FGX_CNT_N], after[FGX_CNT_N];
	unsigned int nfx = fx_count(), pass = 0, fail = 0, skipped = 0, rows = 0;
	static uint8_t out[FX_BUF + 512];
	char err[256];

	if (!cfg || !c) {
		fprintf(stderr, "xdp-fixtures: fixture config failed\n");
		return 1;
	}
	struct fgx_params par = { .ct_capacity = 4096, .pass_unknown = false };
	struct fgx *x = NULL;
	int rc;

	rc = fgx_open(&par, &x, err, sizeof(err));
	if (rc == -EPERM || rc == -EACCES) {
		printf("xdp-fixtures: cannot load BPF programs here (%s): skipped\n",
		       strerror(-rc));
		return 77;
	}
	if (rc) {
		printf("FAIL load: %s\n", strerror(-rc));
		return 1;
	}
	rc = fgx_apply(x, cfg, NULL, FX_MTU, FGX_APPLY_SKIP_NAT, err, sizeof(err));
	if (rc) {
		printf("FAIL apply: %s (%s)\n", strerror(-rc), err);
		return 1;
	}
	for (unsigned int i = 0; i < nfx; i++) {
		const struct fg_fixture *fx = fx_get(i);
		int bad = 0;

		if (fixture_uses_nat(fx->name)) {
			printf("SKIP %-28s full NAT is not in the XDP dataplane\n", fx->name);
			skipped++;
			continue;
		}
		if (fx_build(fx, c)) {
			printf("FAIL %-28s fixture build\n", fx->name);
			fail++;
			continue;
		}
		if (fgx_ct_flush(x) < 0) {
			printf("FAIL %-28s conntrack flush\n", fx->name);
			return 1;
		}
		for (uint32_t j = 0; j < c->n; j++) {
			const struct fx_pkt *pk = &c->p[j];
			int ev, ewhy, cmp, got_v = -1, got_why = 0, moved = 0;
			LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = pk->in,
				    .data_size_in = pk->in_len, .data_out = out,
				    .data_size_out = sizeof(out), .repeat = 1);

			if (pk->in_len > FGX_TEST_MAX_FRAME) {
				printf("  skip %s#%u: %u-byte frame (multi-buffer XDP)\n",
				       fx->name, j, pk->in_len);
				continue;
			}
			if (pk->in_len < 14) {
				printf("  skip %s#%u: %u-byte frame (BPF_PROG_TEST_RUN needs >= 14)\n",
				       fx->name, j, pk->in_len);
				continue;
			}
			rows++;
			xdp_expect(pk, &ev, &ewhy, &cmp);
			fgx_counters(x, before, NULL);
			rc = bpf_prog_test_run_opts(fgx_prog_fd(x), &o);
			fgx_counters(x, after, NULL);
			if (rc) {
				printf("FAIL %s#%u: BPF_PROG_TEST_RUN: %s\n", fx->name, j,
				       strerror(errno));
				bad = 1;
				continue;
			}
			switch (o.retval) {
			case XDP_TX: got_v = FG_V_FORWARD; break;
			case XDP_DROP: got_v = FG_V_DROP; break;
			case XDP_PASS: got_v = FG_V_HOST; break;
			default: got_v = -1;
			}
			for (uint32_t r = 1; r < FG_DROP_MAX; r++) {
				uint64_t d = after[FGX_CNT_DROP(r)] - before[FGX_CNT_DROP(r)];

				if (d) {
					moved += (int)d;
					got_why = (int)r;
				}
			}
			if (got_v != ev || (ev == FG_V_DROP && (moved != 1 || got_why != ewhy ||
			    after[FG_CC_drops] - before[FG_CC_drops] != 1)) ||
			    (ev != FG_V_DROP && moved != 0)) {
				printf("FAIL %s#%u: verdict %s drop %s (%d counters moved), "
				       "want %s drop %s\n", fx->name, j,
				       got_v >= 0 ? vname[got_v] : "?",
				       fg_drop_names[got_why], moved, vname[ev],
				       fg_drop_names[ewhy]);
				bad = 1;
				continue;
			}
			if (ev == FG_V_HOST &&
			    after[FG_CC_host_packets] - before[FG_CC_host_packets] != 1) {
				printf("FAIL %s#%u: passed to the kernel without host_packets\n",
				       fx->name, j);
				bad = 1;
			}
			if (cmp && (o.data_size_out != pk->out_len ||
				    memcmp(out, pk->out, pk->out_len))) {
				printf("FAIL %s#%u: output differs (%u bytes, want %u)\n",
				       fx->name, j, o.data_size_out, pk->out_len);
				for (uint32_t b = 0; b < o.data_size_out && b < pk->out_len; b++)
					if (out[b] != pk->out[b]) {
						printf("  first difference at byte %u: %02x, want %02x\n",
						       b, out[b], pk->out[b]);
						break;
					}
				bad = 1;
			}
			if (cmp && (after[FG_CC_tx_packets] - before[FG_CC_tx_packets] != 1)) {
				printf("FAIL %s#%u: forwarded without tx_packets\n", fx->name, j);
				bad = 1;
			}
		}
		if (bad) {
			fail++;
		} else {
			pass++;
			printf("ok   %-28s %s\n", fx->name, fx->desc);
		}
	}
	fgx_close(x);
	fail += too_big_small_mtu(cfg, c);
	printf("xdp-fixtures: %u fixtures passed, %u failed, %u skipped (NAT); %u packets run\n",
	       pass, fail, skipped, rows);
	free(c);
	return fail ? 1 : 0;
}
