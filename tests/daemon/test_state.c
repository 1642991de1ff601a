/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Issue 35: the restart hand-over at the dataplane's own level
 * (fg_dp_state_save / fg_dp_state_load, dataplane/fg_state.c), no root:
 *  - t_restart: a dataplane of 2 workers on net_null0 tracks 300 DSR, 60
 *    NAT and 40 IPv6 DSR flows (each in the shard its tuple hashes to, NAT ports that
 *    steer replies there); it is saved and destroyed, and a dataplane of
 *    3 workers on net_null1 loads the file with another config: a new
 *    service first (other service ids), backends and local addresses
 *    listed in another order (other ids and indexes), a DSR backend
 *    removed.  Every DSR flow is back, in the shard its tuple hashes to
 *    with 3 workers, with the backend of the same address (the removed
 *    one kept as a tombstone, its flows counted on it, a packet still
 *    sent to it); NAT flows whose reply no longer hashes to their
 *    flow's worker are refused as nat_split and the rest are back with
 *    their local address found by address; nothing else is refused.
 *  - t_refusals: a file of another format version, a flipped byte, a
 *    truncated file, a foreign file and a stale one are refused whole,
 *    each by its name, and change nothing; loading a file twice refuses
 *    every flow as duplicate.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include <rte_dev.h>
#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>

#include "ct_rec.h"
#include "fg_config_parse.h"
#include "fg_dp.h"
#include "fg_pktbuild.h"
#include "fg_rss.h"
#include "fg_state.h"
#include "fg_worker_private.h"
#include "dp_fixture.h"

#define N_DSR 300
#define N_NAT 60

static const char cfg_a[] =
	"conntrack { capacity 4096; }\n"
	"port net_null0 { mac 02:00:00:00:00:01; local 10.0.0.2; local 10.0.0.3;"
	" local fd00::2; }\n"
	"neighbour 10.1.0.10 02:00:00:00:01:10 port net_null0;\n"
	"neighbour 10.1.0.11 02:00:00:00:01:11 port net_null0;\n"
	"neighbour 10.1.0.12 02:00:00:00:01:12 port net_null0;\n"
	"service dsr 10.0.0.100:80/tcp {\n mode dsr-ipip;\n"
	" backend 10.1.0.10;\n backend 10.1.0.11;\n backend 10.1.0.12;\n}\n"
	"service nat 10.0.0.101:80/tcp {\n mode nat;\n"
	" backend 10.1.0.20;\n backend 10.1.0.21;\n}\n"
	"service dsr6 [fd00::100]:80/tcp {\n mode dsr-ipip;\n"
	" backend fd01::10;\n backend fd01::11;\n}\n";

/* another order everywhere, a service first, 10.1.0.11 removed */
static const char cfg_b[] =
	"conntrack { capacity 4096; }\n"
	"port net_null1 { mac 02:00:00:00:00:01; local fd00::2; local 10.0.0.3;"
	" local 10.0.0.2; }\n"
	"neighbour 10.1.0.10 02:00:00:00:01:10 port net_null1;\n"
	"neighbour 10.1.0.11 02:00:00:00:01:11 port net_null1;\n"
	"neighbour 10.1.0.12 02:00:00:00:01:12 port net_null1;\n"
	"service first 10.0.0.99:80/tcp {\n mode dsr-ipip;\n backend 10.1.0.12;\n}\n"
	"service nat 10.0.0.101:80/tcp {\n mode nat;\n"
	" backend 10.1.0.21;\n backend 10.1.0.20;\n}\n"
	"service dsr6 [fd00::100]:80/tcp {\n mode dsr-ipip;\n"
	" backend fd01::11;\n backend fd01::10;\n}\n"
	"service dsr 10.0.0.100:80/tcp {\n mode dsr-ipip;\n"
	" backend 10.1.0.12;\n backend 10.1.0.10;\n}\n";

static char g_path[256];
static struct fg_dp *g_b;      /* t_restart's second dataplane, for t_refusals */

static const struct fg_lb_service *
svc(const struct fg_dp *dp, const char *vip)
{
	uint32_t a = dpf_ip4(vip);

	return fg_lb_service_find(dp->lb, AF_INET, &a, htons(80), IPPROTO_TCP);
}

static const struct fg_lb_backend *
be_by_addr(const struct fg_lb_service *s, uint32_t a)
{
	for (uint32_t j = 0; j < s->n_backends; j++)
		if (!memcmp(s->backends[j].addr.bytes, &a, 4))
			return &s->backends[j];
	return NULL;
}

/* What each flow's backend was in the first dataplane, by client port. */
static uint32_t g_backend_of[65536];

static struct ct_key4
client_key(unsigned int i, const char *vip)
{
	struct ct_key4 k = {.saddr = htonl(0xc0000200u + (i & 0xff)), .daddr = dpf_ip4(vip),
			    .sport = htons((uint16_t)(20000 + i)), .dport = htons(80),
			    .proto = IPPROTO_TCP};

	return k;
}

/* Flow @p i of dataplane @p dp, in the shard its tuple hashes to. */
static void
track(struct fg_dp *dp, unsigned int i, bool nat)
{
	const char *vip = nat ? "10.0.0.101" : "10.0.0.100";
	const struct fg_lb_service *s = svc(dp, vip);
	static const char *const dsr_be[] = {"10.1.0.10", "10.1.0.11", "10.1.0.12"};
	static const char *const nat_be[] = {"10.1.0.20", "10.1.0.21"};
	uint32_t ba = dpf_ip4(nat ? nat_be[i % 2] : dsr_be[i % 3]);
	const struct fg_lb_backend *b = be_by_addr(s, ba);
	struct ct_rec r = {.family = CT_V4, .proto = IPPROTO_TCP, .state = CT_ST_ESTABLISHED,
			   .flags = CT_REC_F_ASSURED | CT_REC_F_COUNTERS,
			   .td = {.end = 1000 * i, .win = 502, .wscale = 7, .flags = CT_TD_VALID},
			   .idle_ms = 10, .life_ms = 5000, .packets = 9, .bytes = 999};
	struct ct_rec_ids ids = {.service = (uint16_t)s->id, .backend = b->id};
	unsigned int w;

	assert_non_null(b);
	r.key.k4 = client_key(i, vip);
	w = dpf_owner(dp, &r.key.k4);
	if (nat) {
		struct fg_rss_port_range pr = {1024, 65535, (uint16_t)(1024 + 97 * i)};
		uint32_t local = dpf_ip4(i % 2 ? "10.0.0.3" : "10.0.0.2");
		int port = fg_rss_nat_port_pick4(ba, htons(80), local, dp->reta, (uint16_t)w, &pr);

		assert_true(port > 0);
		r.flags |= CT_REC_F_NAT;
		r.reply.k4 = (struct ct_key4){.saddr = ba, .daddr = local, .sport = htons(80),
					      .dport = htons((uint16_t)port),
					      .proto = IPPROTO_TCP};
		r.reply_td = (struct ct_rec_td){.end = 7000 * i, .win = 500, .wscale = 0x77,
						.flags = CT_TD_VALID};
		ids.nat_addr = (uint8_t)(i % 2);   /* cfg_a's locals in order */
	}
	assert_int_equal(ct_rec_restore(dp->workers[w]->ct, &r, &ids, rte_rdtsc(), NULL), 0);
	g_backend_of[20000 + i] = ba;
}

#define N_V6 40

/* IPv6 DSR flow @p i: fd00:c::i:port -> [fd00::100]:80, backend fd01::1(i % 2). */
static struct ct_key6
key6(unsigned int i)
{
	struct ct_key6 k = {.sport = htons((uint16_t)(30000 + i)), .dport = htons(80),
			    .proto = IPPROTO_TCP};

	assert_int_equal(inet_pton(AF_INET6, "fd00:c::", k.saddr), 1);
	k.saddr[15] = (uint8_t)i;
	assert_int_equal(inet_pton(AF_INET6, "fd00::100", k.daddr), 1);
	return k;
}

static unsigned int
owner6(const struct fg_dp *dp, const struct ct_key6 *k)
{
	return fg_rss_queue(fg_rss_hash_v6(k->saddr, k->daddr, k->sport, k->dport), dp->reta);
}

static void
track6(struct fg_dp *dp, unsigned int i)
{
	uint8_t vip[16], be[16];
	const struct fg_lb_service *s;
	struct ct_rec r = {.family = CT_V6, .proto = IPPROTO_TCP, .state = CT_ST_ESTABLISHED,
			   .flags = CT_REC_F_ASSURED, .idle_ms = 5, .life_ms = 500,
			   .td = {.end = 9 * i, .flags = CT_TD_VALID}};
	struct ct_rec_ids ids = {0};

	inet_pton(AF_INET6, "fd00::100", vip);
	inet_pton(AF_INET6, i % 2 ? "fd01::11" : "fd01::10", be);
	s = fg_lb_service_find(dp->lb, AF_INET6, vip, htons(80), IPPROTO_TCP);
	assert_non_null(s);
	for (uint32_t j = 0; j < s->n_backends; j++)
		if (!memcmp(s->backends[j].addr.bytes, be, 16))
			ids.backend = s->backends[j].id;
	ids.service = (uint16_t)s->id;
	r.key.k6 = key6(i);
	assert_int_equal(ct_rec_restore(dp->workers[owner6(dp, &r.key.k6)]->ct, &r, &ids,
					rte_rdtsc(), NULL), 0);
}

struct seen {
	struct fg_dp *dp;
	unsigned int shard, n, nat, wrong, v6;
};

static int
check_flow(const struct ct_flow *f, void *arg)
{
	struct seen *c = arg;
	const struct fg_lb_table *lb = c->dp->lb;
	uint16_t sid = lb->svc_by_id[f->e.service];
	const struct fg_lb_backend *b = sid ?
		fg_lb_backend_find(&lb->services[sid - 1], f->e.backend) : NULL;

	c->n++;
	if (f->family == CT_V6) {
		uint8_t want[16];

		inet_pton(AF_INET6, f->k6.saddr[15] % 2 ? "fd01::11" : "fd01::10", want);
		c->v6++;
		c->wrong += owner6(c->dp, &f->k6) != c->shard || b == NULL ||
			    memcmp(b->addr.bytes, want, 16) != 0;
		return 0;
	}
	if (dpf_owner(c->dp, &f->k4) != c->shard || b == NULL ||
	    memcmp(b->addr.bytes, &g_backend_of[ntohs(f->k4.sport)], 4) != 0)
		c->wrong++;
	if (f->has_reply) {
		c->nat++;
		if (memcmp(c->dp->locals[f->e.nat_addr].bytes, &f->reply.k4.daddr, 4) ||
		    f->e.nat_port != f->reply.k4.dport)
			c->wrong++;
	}
	return 0;
}

/* An ACK of DSR flow @p i through its worker: the IPIP outer
 * destination it left for (0: nothing left). */
static uint32_t
ack_to(struct fg_dp *dp, unsigned int i)
{
	struct ct_key4 k = client_key(i, "10.0.0.100");
	struct fg_worker *w = dp->workers[dpf_owner(dp, &k)];
	struct pb_spec s = {0};
	uint64_t before = w->cc[FG_CC_new_flows];
	unsigned int sent;
	char src[32];

	snprintf(src, sizeof(src), "192.0.2.%u", i & 0xff);
	s.saddr = src;
	s.daddr = "10.0.0.100";
	s.proto = IPPROTO_TCP;
	s.sport = (uint16_t)(20000 + i);
	s.dport = 80;
	s.tcp_flags = 0x10;
	sent = dpf_burst_one(dp, w, &s);
	assert_int_equal(w->cc[FG_CC_new_flows], before);   /* a hit */
	if (sent != 1)
		return 0;
	uint32_t dst;

	memcpy(&dst, rte_pktmbuf_mtod(w->txb[0][0], uint8_t *) + 14 + 16, 4);
	rte_pktmbuf_free(w->txb[0][0]);
	w->tx[0].n = 0;
	return dst;
}

static void
t_restart(void **state)
{
	struct fg_dp *a = dpf_make(cfg_a, "state", 2, g_path), *b;
	unsigned int split = 0, tomb_flows = 0;
	struct seen c = {0};

	for (unsigned int i = 0; i < N_DSR; i++)
		track(a, i, false);
	for (unsigned int i = N_DSR; i < N_DSR + N_NAT; i++)
		track(a, i, true);
	for (unsigned int i = 0; i < N_V6; i++)
		track6(a, i);
	assert_int_equal(fg_dp_state_save(a), 0);
	assert_int_equal(a->state.saved, N_DSR + N_NAT + N_V6);
	assert_int_equal(a->state.saved_nat, N_NAT);
	fg_dp_destroy(a);

	assert_int_equal(rte_dev_probe("net_null1"), 0);
	b = dpf_make(cfg_b, "state", 3, g_path);
	assert_int_equal(fg_dp_state_load(b), 0);
	assert_int_equal(access(g_path, F_OK), -1);     /* loaded once */
	for (unsigned int i = N_DSR; i < N_DSR + N_NAT; i++) {
		struct ct_key4 k = client_key(i, "10.0.0.101"), rk;
		struct fg_rss_port_range pr = {1024, 65535, (uint16_t)(1024 + 97 * i)};
		uint32_t local = dpf_ip4(i % 2 ? "10.0.0.3" : "10.0.0.2");
		uint16_t reta_a[FG_RSS_RETA_SIZE];
		int port;

		/* the port the first dataplane picked, and where it hashes now */
		fg_rss_reta_fill(reta_a, 2);
		port = fg_rss_nat_port_pick4(g_backend_of[20000 + i], htons(80), local, reta_a,
					     fg_rss_queue(fg_rss_hash_v4(k.saddr, k.daddr,
									 k.sport, k.dport), reta_a),
					     &pr);
		rk = (struct ct_key4){.saddr = g_backend_of[20000 + i], .daddr = local,
				      .sport = htons(80), .dport = htons((uint16_t)port)};
		split += dpf_owner(b, &k) != dpf_owner(b, &rk);
	}
	assert_true(split > 0 && split < N_NAT);
	assert_int_equal(b->state.refused[FG_STATE_FLOW_nat_split], split);
	assert_int_equal(b->state.restored, N_DSR + N_NAT + N_V6 - split);
	assert_int_equal(b->state.restored_nat, N_NAT - split);
	for (int r = 0; r < FG_STATE_FLOW_MAX; r++)
		if (r != FG_STATE_FLOW_nat_split)
			assert_int_equal(b->state.refused[r], 0);
	assert_int_equal(b->state.tombstones, 1);
	c.dp = b;
	for (c.shard = 0; c.shard < b->n_workers; c.shard++) {
		uint64_t cur = 0;

		while (cur != CT_WALK_DONE)
			ct_walk(b->workers[c.shard]->ct, &cur, 1u << 20, rte_rdtsc(),
				check_flow, &c);
	}
	assert_int_equal(c.n, N_DSR + N_NAT + N_V6 - split);
	assert_int_equal(c.v6, N_V6);
	assert_int_equal(c.nat, N_NAT - split);
	assert_int_equal(c.wrong, 0);
	/* the removed backend: a tombstone with its flows, still sent to */
	const struct fg_lb_backend *tb = be_by_addr(svc(b, "10.0.0.100"), dpf_ip4("10.1.0.11"));

	assert_non_null(tb);
	assert_true(tb->gone);
	for (unsigned int i = 0; i < N_DSR; i++)
		tomb_flows += i % 3 == 1;
	assert_int_equal(fg_lb_be_counter(b->lb, b->n_workers, tb, FG_BC_conns_opened),
			 tomb_flows);
	assert_int_equal(ack_to(b, 1), dpf_ip4("10.1.0.11"));
	assert_int_equal(ack_to(b, 2), dpf_ip4("10.1.0.12"));
	assert_int_equal(ack_to(b, 3), dpf_ip4("10.1.0.10"));
	g_b = b;
}

static uint8_t *
slurp(size_t *len)
{
	FILE *f = fopen(g_path, "rb");
	uint8_t *b = malloc(1 << 20);

	assert_non_null(f);
	assert_non_null(b);
	*len = fread(b, 1, 1 << 20, f);
	fclose(f);
	return b;
}

static void
spit(const uint8_t *b, size_t len)
{
	FILE *f = fopen(g_path, "wb");

	assert_non_null(f);
	assert_int_equal(fwrite(b, 1, len, f), len);
	fclose(f);
}

/* Loads @p b as the state file; the reason it was refused for. */
static int
load_as(const uint8_t *b, size_t len)
{
	struct fg_state_stats before = g_b->state;

	spit(b, len);
	assert_int_equal(fg_dp_state_load(g_b), 0);
	for (int r = 1; r < FG_STATE_FILE_MAX; r++)
		if (g_b->state.file_refused[r] != before.file_refused[r]) {
			assert_int_equal(g_b->state.restored, before.restored);
			return r;
		}
	return 0;
}

static void
t_refusals(void **state)
{
	struct fg_dp *b = g_b;
	struct fg_state_stats before;
	size_t flen, len;
	uint8_t *f, *x;

	assert_non_null(b);
	/* the flows b holds, as a file (b never ran: its shards are its own) */
	assert_int_equal(fg_dp_state_save(b), 0);
	f = slurp(&flen);
	x = malloc(flen);
	assert_non_null(x);
	memcpy(x, f, flen);
	x[9] = 2;                                   /* format version 2 */
	assert_int_equal(load_as(x, flen), FG_STATE_FILE_version);
	assert_int_equal(access(g_path, F_OK), 0);  /* kept for a build that reads it */
	memcpy(x, f, flen);
	x[flen / 2] ^= 0x40;                        /* a byte of a record */
	assert_int_equal(load_as(x, flen), FG_STATE_FILE_checksum);
	assert_int_equal(load_as(f, flen - 3), FG_STATE_FILE_truncated);
	assert_int_equal(load_as((const uint8_t *)"#!/bin/sh\n", 10), FG_STATE_FILE_not_state);
	free(x);
	/* written three hours ago: every flow has expired since */
	{
		struct fg_state_writer w;
		struct timespec ts;
		FILE *fp = fopen(g_path, "w");

		assert_non_null(fp);
		clock_gettime(CLOCK_REALTIME, &ts);
		fg_state_writer_init(&w, fp, 1, "old", ((uint64_t)ts.tv_sec - 3 * 3600) *
				     1000000000ull);
		fg_state_section(&w, FG_STATE_SEC_FLOWS);
		assert_int_equal(fg_state_writer_finish(&w), 0);
		fclose(fp);
		x = slurp(&len);
	}
	assert_int_equal(load_as(x, len), FG_STATE_FILE_stale);
	assert_int_equal(access(g_path, F_OK), -1); /* stale: removed */
	free(x);
	/* the good file again: every flow in it is tracked already */
	before = b->state;
	assert_int_equal(load_as(f, flen), 0);
	assert_int_equal(b->state.restored, before.restored);
	assert_int_equal(b->state.refused[FG_STATE_FLOW_duplicate] -
			 before.refused[FG_STATE_FLOW_duplicate], before.saved);
	free(f);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(t_restart),
		cmocka_unit_test(t_refusals),
	};

	if (dpf_eal_init("test_state", "0@0,1@0,2@0,3@0", "fgtstate") != 0)
		return 1;
	snprintf(g_path, sizeof(g_path), "/tmp/fgtstate%d.state", (int)getpid());
	int rc = cmocka_run_group_tests_name("state", tests, NULL, NULL);

	fg_dp_destroy(g_b);
	unlink(g_path);
	rte_eal_cleanup();
	return rc;
}
