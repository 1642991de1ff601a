/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer target: raw bytes -> fg_pkt_parse (and its general path: the
 * same bytes) -> signature + RSS hash ->
 * a real conntrack shard (lookup / insert / update / expire) -> Maglev pick
 * -> every applicable rewrite (IPIP, GUE, NAT, TTL, ARP/ND replies,
 * checksums), then the rewritten frame is parsed again.  Invariants are
 * checked with __builtin_trap() so the fuzzer reports them.
 *
 * Built with -fsanitize=fuzzer when -Dfuzz=true and the compiler is clang;
 * fuzz_pkt_replay links the same code with tests/fuzz/fuzz_replay_main.c, which replays files (the
 * seed corpus) for sanitizer builds without libFuzzer.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_eal.h>

#include "ct.h"
#include "fg_maglev.h"
#include "fg_pkt.h"
#include "fg_rss.h"
#include "fg_xlate.h"
#include "../fg_test_eal.h"

#define M 65537u
#define NB 3
#define HEAD 128
#define TAIL 64

static struct ct_shard *shard;
static uint32_t table[M];
static uint16_t reta[FG_RSS_RETA_SIZE];
static uint64_t now;

#define CHECK(c) do { if (!(c)) { fprintf(stderr, "invariant: %s (%s:%d)\n", \
	#c, __FILE__, __LINE__); __builtin_trap(); } } while (0)

static int setup(void)
{
	static char prefix[64];	/* libFuzzer exits through exit(): atexit runs */
	char *eal[] = { "fuzz_pkt", "--no-pci", "--no-huge", "--no-shconf",
			"-m", "128", "--log-level=lib.eal:error", "-l", "0",
			fg_test_eal_prefix(prefix, sizeof(prefix), "fgfuzzpkt") };
	struct ct_config cfg;
	uint32_t w[NB] = { 1, 2, 3 };
	uint64_t k[NB];
	uint32_t i;

	if (rte_eal_init((int)(sizeof(eal) / sizeof(eal[0])), eal) < 0)
		return -1;
	fg_test_eal_started();
	ct_config_defaults(&cfg);
	cfg.name = "fuzz";
	cfg.capacity = 4096;
	cfg.socket_id = -1;
	cfg.hz = 1000;
	shard = ct_shard_create(&cfg);
	if (shard == NULL)
		return -1;
	for (i = 0; i < NB; i++) {
		uint8_t a[16] = { 10, 1, 0, (uint8_t)(i + 1) };

		k[i] = fg_maglev_backend_key(a, 0);
	}
	if (fg_maglev_build(w, k, NB, M, table))
		return -1;
	return fg_rss_reta_fill(reta, 4);
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	if (setup()) {
		fprintf(stderr, "fuzz_pkt: setup failed\n");
		exit(1);
	}
	return 0;
}

static void reparse(const struct fg_frame *f)
{
	struct fg_pkt q;
	uint8_t *copy = malloc(f->len ? f->len : 1);

	CHECK(copy != NULL);
	memcpy(copy, f->data, f->len);
	(void)fg_pkt_parse(copy, f->len, &q);
	free(copy);
}

static void rewrite(const uint8_t *data, size_t size, const struct fg_pkt *p,
		    uint32_t sig, uint32_t backend)
{
	static uint8_t buf[HEAD + 65536 + TAIL];
	struct fg_encap e;
	struct fg_frame f;
	int r, mode = (int)(sig & 3);

	memcpy(buf + HEAD, data, size);
	f.data = buf + HEAD;
	f.len = (uint32_t)size;
	f.headroom = HEAD;
	f.tailroom = TAIL;

	memset(&e, 0, sizeof(e));
	e.family = (sig >> 2) & 1 ? CT_V6 : CT_V4;
	e.vlan = (sig >> 3) & 1 ? 42 : 0;
	e.flags = (sig >> 4) & 1 ? FG_ENCAP_GUE_HDR : 0;
	e.mtu = (sig >> 5) & 1 ? 1500 : 0;
	e.gue_port = 0xc017;
	e.dst.v4 = 0x0100010a + (backend << 24);
	e.dst.v6[15] = (uint8_t)backend;

	switch (p->kind) {
	case FG_PK_FLOW:
	case FG_PK_FRAG_LATER:
	case FG_PK_ICMP_ERR:
		if (mode == 0) {
			r = fg_xlate_ipip(&f, p, &e);
		} else if (mode == 1) {
			r = fg_xlate_gue(&f, p, &e, fg_rss_hash(p));
		} else if (mode == 2 && p->kind == FG_PK_ICMP_ERR) {
			union { struct ct_key4 k4; struct ct_key6 k6; } o, in;

			memcpy(&o, &p->key, sizeof(o));
			memcpy(&in, &p->key, sizeof(in));
			if (p->family == CT_V6)
				in.k6.sport ^= 0x0101;
			else
				in.k4.dport ^= 0x0202;
			r = fg_xlate_nat_icmp_err(&f, p, &o, &in);
			CHECK(r == -EINVAL || r == (int)size);
		} else if (mode == 2) {
			union { struct ct_key4 k4; struct ct_key6 k6; } to;

			memcpy(&to, &p->key, sizeof(to));
			if (p->family == CT_V6) {
				to.k6.saddr[0] ^= 0x5a;
				to.k6.sport ^= 0x1234;
			} else {
				to.k4.saddr ^= 0x5a5a;
				to.k4.dport ^= 0x4321;
			}
			r = fg_xlate_nat(&f, p, &to);
			CHECK(r == -EINVAL || r == (int)size);
			if (r > 0 && p->kind == FG_PK_FLOW &&
			    fg_xlate_csum_verify(data, p) == 0 &&
			    !(p->flags & FG_PF_FRAG))
				/* incremental update keeps a valid checksum valid */
				CHECK(fg_xlate_csum_verify(f.data, p) == 0);
		} else {
			r = fg_xlate_ttl_dec(f.data, p);
			CHECK(r == 0); /* the parser drops TTL <= 1 */
			r = (int)f.len;
			(void)fg_xlate_csum_full(f.data, p);
			if (p->family == CT_V4 || fg_pkt_l4_len(p) > 0)
				(void)fg_xlate_csum_verify(f.data, p);
		}
		if (r > 0) {
			CHECK((uint32_t)r == f.len);
			CHECK(f.data >= buf && f.data + f.len <= buf + sizeof(buf));
			reparse(&f);
		} else {
			CHECK(r == -EINVAL || r == -ENOSPC || r == -EMSGSIZE);
		}
		if (p->kind == FG_PK_FLOW) {
			/* errors / RSTs generated about the packet (issue 9,
			 * defects 3 and 8): from a fresh copy; what they
			 * build parses and carries valid checksums */
			static const uint8_t lb[6] = { 2, 0, 0, 0, 0, 1 };
			struct fg_pkt q;

			memcpy(buf + HEAD, data, size);
			f.data = buf + HEAD;
			f.len = (uint32_t)size;
			f.headroom = HEAD;
			f.tailroom = TAIL;
			switch ((sig >> 6) & 3) {
			case 0:
				r = fg_xlate_icmp_too_big(&f, p, 1280 + (sig >> 8) % 8000, lb);
				break;
			case 1:
				r = fg_xlate_icmp_unreach(&f, p, lb);
				break;
			default:
				r = fg_xlate_tcp_rst(&f, p, lb);
				break;
			}
			if (r > 0) {
				CHECK((uint32_t)r == f.len);
				CHECK(f.data >= buf && f.data + f.len <= buf + sizeof(buf));
				if (fg_pkt_parse(f.data, f.len, &q) != FG_PK_DROP &&
				    (q.kind == FG_PK_FLOW || q.kind == FG_PK_ICMP_ERR))
					CHECK(fg_xlate_csum_verify(f.data, &q) == 0);
			} else {
				CHECK(r == -EINVAL || r == -ENOSPC);
			}
		}
		if (p->kind == FG_PK_ICMP_ERR) {
			uint16_t il4;

			(void)fg_pkt_icmp_inner(data, (uint32_t)size, p, &il4);
		}
		break;
	case FG_PK_ARP:
		r = fg_xlate_arp_reply(&f, p, (const uint8_t[6]){ 2, 0, 0, 0, 0, 1 });
		CHECK(r == (int)size || r == -EINVAL);
		break;
	case FG_PK_ND:
		r = fg_xlate_nd_advert(&f, p, (const uint8_t[6]){ 2, 0, 0, 0, 0, 1 });
		if (r > 0)
			reparse(&f);
		else
			CHECK(r == -EINVAL || r == -ENOSPC);
		break;
	default:
		break;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fg_pkt p;
	struct ct_entry *e;
	uint8_t *copy;
	uint32_t sig, backend, pos;
	enum ct_family fam;
	int kind, err;

	if (size > 65535)
		return 0;
	/* exact-size heap copy: ASan catches any read past size */
	copy = malloc(size ? size : 1);
	if (copy == NULL)
		return 0;
	memcpy(copy, data, size);
	kind = fg_pkt_parse(copy, (uint32_t)size, &p);
	CHECK(kind == p.kind && kind < FG_PK_MAX);
	{
		/* the one-step IPv4/TCP path writes what the general
		 * parser writes, byte for byte */
		struct fg_pkt g;

		memset(&g, 0x5a, sizeof(g));
		CHECK(fg_pkt_parse_ex(copy, (uint32_t)size, &g, FG_PARSE_GENERAL) == kind &&
		      memcmp(&g, &p, sizeof(g)) == 0);
	}
	if (kind == FG_PK_DROP) {
		CHECK(p.drop > 0 && p.drop < FG_DROP_MAX);
		goto out;
	}
	CHECK(p.drop == 0);
	CHECK(p.l3_off == p.l2_len && p.l3_off <= size);
	if (kind == FG_PK_FLOW || kind == FG_PK_ICMP_ERR ||
	    kind == FG_PK_FRAG_LATER) {
		CHECK((uint32_t)p.l3_off + p.l3_len <= size);
		CHECK(p.l4_off >= p.l3_off && p.l4_off <= p.l3_off + p.l3_len);
	}
	/* key padding is zero */
	if (p.family == CT_V4)
		CHECK(!p.key.k4.pad[0] && !p.key.k4.pad[1] && !p.key.k4.pad[2]);
	else
		CHECK(!memcmp(p.key.k6.pad, (uint8_t[11]){ 0 }, 11));

	if (kind == FG_PK_FLOW && (p.flags & FG_PF_FRAG)) {
		/* a first fragment's follow key: a later fragment's, read
		 * within the frame, padding zero */
		struct fg_pkt later;

		CHECK(fg_pkt_frag_key(copy, (uint32_t)size, &p, &later) == 0 &&
		      later.kind == FG_PK_FRAG_LATER && later.family == p.family);
		if (later.family == CT_V4)
			CHECK(!later.key.k4.pad[0] && !later.key.k4.pad[1] &&
			      !later.key.k4.pad[2] && later.key.k4.dport == 0);
		else
			CHECK(!memcmp(later.key.k6.pad, (uint8_t[11]){ 0 }, 11));
	}
	sig = fg_pkt_sig(&p);
	(void)fg_rss_queue(fg_rss_hash(&p), reta);
	backend = fg_maglev_lookup(table, M, sig);
	CHECK(backend < NB);
	fam = p.family == CT_V6 ? CT_V6 : CT_V4;
	now += 7;
	if (kind == FG_PK_FLOW) {
		e = ct_lookup(shard, fam, &p.key, sig, now, &pos);
		if (e == NULL)
			e = ct_insert(shard, fam, &p.key, sig, p.proto,
				      ct_state_initial(p.proto, p.tcp_flags),
				      false, now, &pos, &err);
		if (e) {
			if (e->backend == 0 && e->packets == 0)
				e->backend = backend;
			backend = e->backend;
			struct ct_seg g;

			/* the segment as the dataplane reads it (the window
			 * option parser on SYNs), half the time as a reply */
			fg_pkt_tcp_seg(copy, &p, &g);
			ct_touch(shard, e, (size & 1) && (e->flags & CT_F_NAT), &g,
				 p.l3_len, now);
		}
	} else if (kind == FG_PK_ICMP_ERR || kind == FG_PK_FRAG_LATER) {
		e = ct_lookup(shard, fam, &p.key, sig, now, &pos);
		if (e)
			backend = e->backend;
	}
	if ((now & 0xff) == 0)
		(void)ct_expire(shard, now);
	rewrite(copy, size, &p, sig, backend);
out:
	free(copy);
	return 0;
}
