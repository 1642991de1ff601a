/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * conntrack unit tests.  Cases are tables; each row becomes one cmocka
 * test.  The clock is the test's own counter (hz = 1000: one tick = 1 ms).
 */
#include <unistd.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <errno.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <cmocka.h>

#include <rte_common.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_lcore.h>

#include "ct.h"
#include "../fg_test_eal.h"
#include "ct_fixture.h"

#define HZ 1000

static struct ct_shard *
mk_shard_r(uint32_t cap, uint32_t rcap, uint32_t flood,
	   uint32_t (*hash_fn)(const void *, uint32_t, uint32_t))
{
	return ct_fixture_shard(cap, rcap, HZ, flood, hash_fn, 64, true);
}

static struct ct_shard *
mk_shard(uint32_t cap, uint32_t flood, uint32_t (*hash_fn)(const void *, uint32_t, uint32_t))
{
	return mk_shard_r(cap, 0, flood, hash_fn);
}

static struct ct_key4
k4(uint32_t i)
{
	return ct_fixture_k4(i, IPPROTO_TCP);
}

static struct ct_key6
k6(uint32_t i)
{
	struct ct_key6 k;

	memset(&k, 0, sizeof(k));
	k.saddr[0] = 0xfd;
	memcpy(&k.saddr[12], &i, 4);
	k.daddr[0] = 0xfd;
	k.daddr[15] = 1;
	k.sport = htons(40000);
	k.dport = htons(443);
	k.proto = IPPROTO_TCP;
	return k;
}

static struct ct_entry *
ins4(struct ct_shard *s, uint32_t i, enum ct_state st, bool assured,
     uint64_t now, int *err)
{
	struct ct_key4 k = k4(i);
	int e = 0;
	struct ct_entry *ent = ct_insert(s, CT_V4, &k, ct_key4_hash(s, &k),
					 IPPROTO_TCP, st, assured, now, NULL, &e);
	if (err)
		*err = e;
	return ent;
}

static struct ct_entry *
get4(struct ct_shard *s, uint32_t i, uint64_t now)
{
	struct ct_key4 k = k4(i);

	return ct_lookup(s, CT_V4, &k, ct_key4_hash(s, &k), now, NULL);
}

/* ct_touch without sequence numbers (no window checks) */
static enum ct_state
touch(struct ct_shard *s, struct ct_entry *e, bool reply, uint8_t flags,
      uint32_t bytes, uint64_t now)
{
	struct ct_seg g = {.flags = flags, .wscale = CT_SEG_NO_SEQ};

	return ct_touch(s, e, reply, &g, bytes, now);
}

#define seg(...) ct_fixture_seg(__VA_ARGS__)

/* ---- basic operations ---------------------------------------------- */

static void
test_insert_lookup_delete_v4(void **state)
{
	struct ct_shard *s = mk_shard(1024, 0, NULL);
	struct ct_key4 k = k4(7);
	uint32_t pos;
	int err;

	assert_null(get4(s, 7, 1));
	struct ct_entry *e = ct_insert(s, CT_V4, &k, ct_key4_hash(s, &k),
				       IPPROTO_TCP, CT_ST_SYN_SENT, false, 1,
				       &pos, &err);
	assert_non_null(e);
	e->backend = 3;
	struct ct_entry *f = get4(s, 7, 2);
	assert_ptr_equal(e, f);
	assert_int_equal(f->backend, 3);
	/* the tuple (the pad bytes are the table's) */
	assert_memory_equal(ct_key_at(s, CT_V4, pos), &k, offsetof(struct ct_key4, pad));
	assert_null(ct_insert(s, CT_V4, &k, ct_key4_hash(s, &k), IPPROTO_TCP,
			      CT_ST_SYN_SENT, false, 1, NULL, &err));
	assert_int_equal(err, -EEXIST);
	assert_int_equal(ct_count(s), 1);
	assert_int_equal(ct_delete(s, CT_V4, &k, ct_key4_hash(s, &k)), 0);
	assert_null(get4(s, 7, 3));
	assert_int_equal(ct_delete(s, CT_V4, &k, ct_key4_hash(s, &k)), -ENOENT);
	assert_int_equal(ct_count(s), 0);
	assert_int_equal(ct_stats_get(s)->live[CT_ST_SYN_SENT], 0);
	ct_shard_free(s);
}

/*
 * Regression (issue 9, defect 1; failed on 1398c27): a second insert of a
 * live key -- two packets of a new flow in one burst, a NAT port search
 * that meets a port in use -- must leave the live entry alone.  rte_hash's
 * add overwrote the key's data word, so every later lookup of the flow
 * resolved to entry 0, another flow's.  Checked on the normal, the full
 * (early-drop) and the flood paths, IPv4 and IPv6.
 */
static void
test_reinsert_keeps_live_entry(void **state)
{
	for (int mode = 0; mode < 3; mode++) {
		/* 0: room; 1: table full of assured flows; 2: flood mode */
		struct ct_shard *s = mk_shard(mode == 1 ? 64 : 1024,
					      mode == 2 ? 1 : 0, NULL);
		uint32_t n = mode == 1 ? 64 : 16, pos, pos2;
		int err;

		for (uint32_t i = 0; i < n; i++) {
			struct ct_entry *e = ins4(s, i, CT_ST_ESTABLISHED, true, 1, &err);

			if (e == NULL && mode == 1)
				break;   /* capacity rounds: full earlier */
			assert_non_null(e);
			e->backend = 100 + i;
		}
		for (uint32_t i = 1; i < 8; i++) {
			struct ct_key4 k = k4(i);
			struct ct_entry *before = get4(s, i, 2);

			assert_non_null(before);
			ct_lookup(s, CT_V4, &k, ct_key4_hash(s, &k), 2, &pos);
			assert_null(ct_insert(s, CT_V4, &k, ct_key4_hash(s, &k),
					      IPPROTO_TCP, CT_ST_SYN_SENT, false, 3,
					      &pos2, &err));
			assert_int_equal(err, -EEXIST);
			assert_int_equal(pos2, pos);   /* the live entry's position */
			struct ct_entry *after = get4(s, i, 4);

			assert_ptr_equal(after, before);
			assert_int_equal(after->backend, 100 + i);
			assert_int_equal(after->state, CT_ST_ESTABLISHED);
		}
		ct_shard_free(s);
	}
	/* IPv6: same rule */
	struct ct_shard *s = mk_shard(1024, 0, NULL);
	uint32_t pos;
	int err;

	for (uint32_t i = 0; i < 8; i++) {
		struct ct_key6 k = k6(i);
		struct ct_entry *e = ct_insert(s, CT_V6, &k, ct_key6_hash(s, &k),
					       IPPROTO_TCP, CT_ST_SYN_SENT, false,
					       1, &pos, &err);
		assert_non_null(e);
		e->backend = 200 + i;
	}
	for (uint32_t i = 0; i < 8; i++) {
		struct ct_key6 k = k6(i);
		uint32_t sig = ct_key6_hash(s, &k);

		assert_null(ct_insert(s, CT_V6, &k, sig, IPPROTO_TCP, CT_ST_SYN_SENT,
				      false, 2, NULL, &err));
		assert_int_equal(err, -EEXIST);
		struct ct_entry *e = ct_lookup(s, CT_V6, &k, sig, 3, NULL);

		assert_non_null(e);
		assert_int_equal(e->backend, 200 + i);
	}
	ct_shard_free(s);
}

/*
 * Regression (issue 9, found by the invariant checker, seed 2865891407 of
 * flood1): a burst's bulk lookup hits flow A; a new flow earlier in the
 * same burst finds the table full, evicts A (unassured) and takes A's slot;
 * A's packet then read the new flow's entry and left for its backend.
 * ct_removal_seq moves on every removal, so the burst knows to look again.
 */
static void
test_removal_seq_tells_stale_hits(void **state)
{
	struct ct_shard *s = mk_shard(64, 0, NULL);
	const uint64_t *seq = ct_removal_seq(s);
	uint32_t n = 0, pos_a;
	int err;

	/* full of unassured flows: fill until the next insert would evict */
	while (ct_count(s) == n && n < 4096) {
		assert_non_null(ins4(s, n, CT_ST_SYN_SENT, false, 1, &err));
		if (*seq != 0)
			break;
		n++;
	}
	/* the last insert evicted flow 0: start the check from a full table */
	assert_int_equal(*seq, 1);
	n++;
	{
		struct ct_key4 k0 = k4(0);

		assert_null(ct_lookup(s, CT_V4, &k0, ct_key4_hash(s, &k0), 1, NULL));
	}
	struct ct_key4 ka = k4(1);     /* now the oldest: early drop's victim */
	struct ct_entry *a = ct_lookup(s, CT_V4, &ka, ct_key4_hash(s, &ka), 2, &pos_a);

	assert_non_null(a);
	a->backend = 7;
	uint64_t before = *seq;
	struct ct_key4 kb = k4(n);
	uint32_t pos_b;
	struct ct_entry *b = ct_insert(s, CT_V4, &kb, ct_key4_hash(s, &kb), IPPROTO_TCP,
				       CT_ST_SYN_SENT, false, 3, &pos_b, &err);

	assert_non_null(b);
	assert_int_equal(*seq, before + 1);   /* A was evicted... */
	/* ...and the stale pointer is a free slot or B's (when B's probe
	 * reached A's slot): never flow A any more */
	if (pos_b == pos_a)
		assert_ptr_equal(b, a);
	else
		assert_int_equal(a->state, CT_ST_NONE);
	assert_null(ct_lookup(s, CT_V4, &ka, ct_key4_hash(s, &ka), 4, NULL));
	ct_shard_free(s);
}

static void
test_insert_lookup_v6(void **state)
{
	struct ct_shard *s = mk_shard(1024, 0, NULL);
	struct ct_key6 k[100];
	uint32_t sig[100];

	for (uint32_t i = 0; i < 100; i++) {
		k[i] = k6(i);
		sig[i] = ct_key6_hash(s, &k[i]);
		struct ct_entry *e = ct_insert(s, CT_V6, &k[i], sig[i], IPPROTO_TCP,
					       CT_ST_ESTABLISHED, true, 1, NULL, NULL);
		assert_non_null(e);
		assert_true(e->flags & CT_F_V6);
		e->backend = i;
	}
	/* Bulk lookup, with a missing key in the middle. */
	const void *keys[64];
	uint32_t sigs[64], pos[64];
	struct ct_entry *ents[64];
	struct ct_key6 miss = k6(5000);
	for (int i = 0; i < 64; i++) {
		keys[i] = i == 10 ? (const void *)&miss : (const void *)&k[i];
		sigs[i] = i == 10 ? ct_key6_hash(s, &miss) : sig[i];
	}
	uint64_t hits = ct_lookup_bulk(s, CT_V6, keys, sigs, 64, 2, ents, pos);
	assert_int_equal(__builtin_popcountll(hits), 63);
	assert_false(hits & (1ull << 10));
	assert_null(ents[10]);
	for (int i = 0; i < 64; i++)
		if (i != 10)
			assert_int_equal(ents[i]->backend, i);
	/* The IPv4 table is separate. */
	assert_int_equal(ct_count(s), 100);
	ct_shard_free(s);
}

struct one_flow {
	struct ct_flow f;
	int n;
};

static int
keep_one(const struct ct_flow *f, void *arg)
{
	struct one_flow *o = arg;

	o->f = *f;
	o->n++;
	return 0;
}

/* NAT: forward and reply keys linked; either direction finds the flow and
 * deleting one removes both. */
static void
test_both_directions(void **state)
{
	struct ct_shard *s = mk_shard(1024, 0, NULL);
	struct ct_key4 fwd = k4(1), rep;
	uint32_t pf, pr;

	memset(&rep, 0, sizeof(rep));
	rep.saddr = htonl(0x0a010001);  /* backend */
	rep.daddr = htonl(0x0a000001);  /* balancer local */
	rep.sport = htons(80);
	rep.dport = htons(33333);
	rep.proto = IPPROTO_TCP;
	struct ct_entry *fe = ct_insert(s, CT_V4, &fwd, ct_key4_hash(s, &fwd),
					IPPROTO_TCP, CT_ST_SYN_SENT, false, 1, &pf, NULL);
	assert_non_null(fe);
	fe->backend = 9;
	fe->nat_port = htons(33333);
	struct ct_entry *re = ct_insert(s, CT_V4, &rep, ct_key4_hash(s, &rep),
					IPPROTO_TCP, CT_ST_SYN_SENT, false, 1, &pr, NULL);
	assert_non_null(re);
	ct_link_peer(s, CT_V4, pf, pr);
	assert_int_equal(ct_stats_get(s)->live[CT_ST_SYN_SENT], 1);

	struct ct_entry *r = ct_lookup(s, CT_V4, &rep, ct_key4_hash(s, &rep), 2, NULL);
	assert_ptr_equal(r, re);
	assert_true(r->flags & CT_F_REPLY);
	assert_int_equal(r->backend, 9);
	assert_int_equal(r->peer, pf);
	/* Handshake across both directions drives the forward state. */
	assert_int_equal(ct_update(s, re, true, CT_TCP_SYN | CT_TCP_ACK, 60, 3), CT_ST_SYN_RECV);
	assert_int_equal(ct_update(s, fe, false, CT_TCP_ACK, 52, 4), CT_ST_ESTABLISHED);
	assert_int_equal(fe->state, CT_ST_ESTABLISHED);
	assert_int_equal(re->state, CT_ST_ESTABLISHED);
	assert_true(fe->flags & CT_F_SEEN_REPLY);
	assert_int_equal(re->packets, 1);
	assert_int_equal(fe->packets, 1);

	/* Walk reports the flow once, with its reply key. */
	uint64_t cur = 0;
	struct one_flow seen = {0};
	while (cur != CT_WALK_DONE)
		ct_walk(s, &cur, 100, 5, keep_one, &seen);
	assert_int_equal(seen.n, 1);
	const struct ct_flow *fl = &seen.f;
	assert_true(fl->has_reply);
	assert_int_equal(fl->e.backend, 9);
	assert_memory_equal(&fl->reply.k4, &rep, sizeof(rep));
	assert_memory_equal(&fl->k4, &fwd, sizeof(fwd));

	assert_int_equal(ct_delete(s, CT_V4, &rep, ct_key4_hash(s, &rep)), 0);
	assert_null(get4(s, 1, 6));
	assert_int_equal(ct_count(s), 0);
	assert_int_equal(ct_stats_get(s)->live[CT_ST_ESTABLISHED], 0);
	ct_shard_free(s);
}

/* ---- TCP transitions: one test per row ----------------------------- */

struct tcp_case {
	const char *name;
	enum ct_state cur;
	bool reply;
	uint8_t flags;
	enum ct_state want;
};

#define S CT_TCP_SYN
#define A CT_TCP_ACK
#define F CT_TCP_FIN
#define R CT_TCP_RST
static const struct tcp_case tcp_cases[] = {
	{"new SYN", CT_ST_NONE, false, S, CT_ST_SYN_SENT},
	{"SYN retransmit", CT_ST_SYN_SENT, false, S, CT_ST_SYN_SENT},
	{"SYN-ACK from server (NAT)", CT_ST_SYN_SENT, true, S | A, CT_ST_SYN_RECV},
	{"client ACK after SYN-ACK", CT_ST_SYN_RECV, false, A, CT_ST_ESTABLISHED},
	{"client ACK in SYN_SENT (DSR)", CT_ST_SYN_SENT, false, A, CT_ST_ESTABLISHED},
	{"client ACK+FIN in SYN_SENT", CT_ST_SYN_SENT, false, A | F, CT_ST_FIN_WAIT},
	{"client SYN-ACK is not a handshake", CT_ST_SYN_SENT, false, S | A, CT_ST_SYN_SENT},
	{"data in ESTABLISHED", CT_ST_ESTABLISHED, false, A, CT_ST_ESTABLISHED},
	{"server data", CT_ST_ESTABLISHED, true, A, CT_ST_ESTABLISHED},
	{"client FIN", CT_ST_ESTABLISHED, false, F | A, CT_ST_FIN_WAIT},
	{"server FIN", CT_ST_ESTABLISHED, true, F | A, CT_ST_CLOSE_WAIT},
	{"server FIN after client FIN", CT_ST_FIN_WAIT, true, F | A, CT_ST_LAST_ACK},
	{"client ACK in FIN_WAIT (DSR)", CT_ST_FIN_WAIT, false, A, CT_ST_FIN_WAIT},
	{"client FIN after server FIN", CT_ST_CLOSE_WAIT, false, F | A, CT_ST_LAST_ACK},
	{"server data in CLOSE_WAIT", CT_ST_CLOSE_WAIT, true, A, CT_ST_CLOSE_WAIT},
	{"last ACK", CT_ST_LAST_ACK, false, A, CT_ST_TIME_WAIT},
	{"last ACK from server", CT_ST_LAST_ACK, true, A, CT_ST_TIME_WAIT},
	{"FIN retransmit in LAST_ACK", CT_ST_LAST_ACK, true, F | A, CT_ST_LAST_ACK},
	{"SYN reuses TIME_WAIT", CT_ST_TIME_WAIT, false, S, CT_ST_SYN_SENT},
	{"ACK in TIME_WAIT", CT_ST_TIME_WAIT, false, A, CT_ST_TIME_WAIT},
	{"SYN reopens CLOSE", CT_ST_CLOSE, false, S, CT_ST_SYN_SENT},
	{"server SYN does not open", CT_ST_CLOSE, true, S, CT_ST_CLOSE},
	{"RST in SYN_SENT", CT_ST_SYN_SENT, false, R, CT_ST_CLOSE},
	{"RST in ESTABLISHED", CT_ST_ESTABLISHED, true, R | A, CT_ST_CLOSE},
	{"RST in FIN_WAIT", CT_ST_FIN_WAIT, false, R, CT_ST_CLOSE},
	{"RST in TIME_WAIT", CT_ST_TIME_WAIT, false, R, CT_ST_CLOSE},
	{"data on a pickup stays on probation", CT_ST_PICKUP, false, A, CT_ST_PICKUP},
	{"FIN on a pickup stays on probation", CT_ST_PICKUP, false, F | A, CT_ST_PICKUP},
	{"SYN on a pickup opens anew", CT_ST_PICKUP, false, S, CT_ST_SYN_SENT},
	{"reply to a pickup (NAT) establishes", CT_ST_PICKUP, true, A, CT_ST_ESTABLISHED},
	{"RST on a pickup", CT_ST_PICKUP, false, R | A, CT_ST_CLOSE},
};

static void
test_tcp_transition(void **state)
{
	const struct tcp_case *c = *state;

	assert_int_equal(ct_tcp_next(c->cur, c->reply, c->flags), c->want);
}

/* Transitions through ct_update keep live-by-state and assured right: a
 * DSR handshake is probation (unassured, evictable) until the flow has
 * sent pickup_pkts packets over pickup_ms; closing makes it evictable. */
static void
test_update_live_counts_and_assured(void **state)
{
	struct ct_shard *s = mk_shard(64, 0, NULL);
	struct ct_entry *e = ins4(s, 1, CT_ST_SYN_SENT, false, 0, NULL);
	const struct ct_stats *st = ct_stats_get(s);

	assert_false(e->flags & CT_F_ASSURED);
	assert_true(e->flags & CT_F_LISTED);
	assert_int_equal(st->live[CT_ST_SYN_SENT], 1);
	ct_update(s, e, false, CT_TCP_ACK, 40, 1);
	assert_int_equal(e->state, CT_ST_ESTABLISHED);
	assert_false(e->flags & CT_F_ASSURED);   /* two packets prove nothing */
	assert_true(e->flags & CT_F_LISTED);
	assert_int_equal(st->live[CT_ST_SYN_SENT], 0);
	assert_int_equal(st->live[CT_ST_ESTABLISHED], 1);
	ct_update(s, e, false, CT_TCP_ACK, 40, 2);
	ct_update(s, e, false, CT_TCP_ACK, 40, 3);
	assert_false(e->flags & CT_F_ASSURED);   /* 4 packets, but in 3 ms */
	ct_update(s, e, false, CT_TCP_ACK, 40, 2500);
	assert_true(e->flags & CT_F_ASSURED);
	assert_false(e->flags & CT_F_LISTED);
	assert_int_equal(ct_check(s), 0);
	ct_update(s, e, false, CT_TCP_FIN | CT_TCP_ACK, 40, 2501);
	assert_int_equal(st->live[CT_ST_FIN_WAIT], 1);
	assert_true(e->flags & CT_F_ASSURED); /* earned, but evictable again */
	assert_true(e->flags & CT_F_LISTED);
	assert_int_equal(e->packets, 5);
	assert_int_equal(e->bytes, 200);
	assert_int_equal(e->last_seen, 2501);
	assert_int_equal(ct_check(s), 0);
	ct_shard_free(s);
}

/* ct_touch: the inline fast path agrees with ct_update. */
static void
test_touch_fast_path(void **state)
{
	struct ct_shard *s = mk_shard(64, 0, NULL);
	struct ct_entry *e = ins4(s, 1, CT_ST_ESTABLISHED, true, 0, NULL);
	const struct ct_stats *st = ct_stats_get(s);

	assert_int_equal(touch(s, e, false, CT_TCP_ACK, 100, 5), CT_ST_ESTABLISHED);
	assert_int_equal(e->packets, 1);
	assert_int_equal(e->bytes, 100);
	assert_int_equal(e->last_seen, 5);
	/* a FIN leaves the fast path and changes state and counts */
	assert_int_equal(touch(s, e, false, CT_TCP_ACK | CT_TCP_FIN, 40, 6), CT_ST_FIN_WAIT);
	assert_int_equal(st->live[CT_ST_ESTABLISHED], 0);
	assert_int_equal(st->live[CT_ST_FIN_WAIT], 1);
	assert_int_equal(e->packets, 2);
	/* SYN_SENT never takes the fast path */
	struct ct_entry *f = ins4(s, 2, CT_ST_SYN_SENT, false, 0, NULL);
	assert_int_equal(touch(s, f, false, CT_TCP_ACK, 40, 7), CT_ST_ESTABLISHED);
	assert_false(f->flags & CT_F_ASSURED);
	/* with sequence numbers: the fast path follows the window */
	struct ct_entry *g = ins4(s, 3, CT_ST_SYN_SENT, false, 0, NULL);
	seg(s, g, false, CT_TCP_SYN, 1000, 0, 512, 7, 0, NULL);
	for (uint32_t i = 0; i < 4; i++)
		seg(s, g, false, CT_TCP_ACK, 1001 + i * 100, 1, 512, CT_SEG_NO_WSCALE,
		    1 + i * 1000, NULL);
	assert_true(g->flags & CT_F_ASSURED);
	assert_true(g->td_flags & CT_TD_VALID);
	assert_int_equal(g->td_end, 1301);
	seg(s, g, false, CT_TCP_ACK, 1401, 1, 512, CT_SEG_NO_WSCALE, 5000, NULL);
	assert_int_equal(g->td_end, 1401);
	assert_int_equal(g->last_seen, 5000);
	seg(s, g, false, CT_TCP_ACK, 1201, 1, 512, CT_SEG_NO_WSCALE, 5001, NULL);
	assert_int_equal(g->td_end, 1401);  /* a retransmission moves nothing */
	assert_int_equal(ct_check(s), 0);
	ct_shard_free(s);
}

/* ---- a blind attacker (issue 34) ------------------------------------ */

static uint64_t
xs(uint64_t *r)
{
	*r ^= *r << 13;
	*r ^= *r >> 7;
	*r ^= *r << 17;
	return *r;
}

/* A NAT flow as the dataplane makes it: forward entry k4(i), reply entry
 * k4(i + 1000000), a SYN (ISN @p ci, window scale 7), the backend's SYN-ACK
 * (ISN @p bi, scale 7, window 500 << 7), the client's ACK. */
static struct ct_entry *
nat_flow(struct ct_shard *s, uint32_t i, uint32_t ci, uint32_t bi, uint64_t now,
	 struct ct_entry **rep)
{
	struct ct_key4 rk = k4(i + 1000000);
	uint32_t pos, rpos;
	struct ct_key4 k = k4(i);
	struct ct_entry *e = ct_insert(s, CT_V4, &k, ct_key4_hash(s, &k), IPPROTO_TCP,
				       CT_ST_SYN_SENT, false, now, &pos, NULL);
	struct ct_entry *re;

	assert_non_null(e);
	re = ct_insert_reply(s, CT_V4, &rk, ct_key4_hash(s, &rk), pos, now, &rpos, NULL);
	assert_non_null(re);
	assert_int_equal(seg(s, e, false, CT_TCP_SYN, ci, 0, 64240, 7, now, NULL),
			 CT_ST_SYN_SENT);
	assert_int_equal(seg(s, re, true, CT_TCP_SYN | CT_TCP_ACK, bi, ci + 1, 65160, 7,
			     now, NULL), CT_ST_SYN_RECV);
	assert_int_equal(seg(s, e, false, CT_TCP_ACK, ci + 1, bi + 1, 502, CT_SEG_NO_WSCALE,
			     now, NULL), CT_ST_ESTABLISHED);
	seg(s, re, true, CT_TCP_ACK, bi + 1, ci + 1, 500, CT_SEG_NO_WSCALE, now, NULL);
	assert_true(e->flags & CT_F_ASSURED);
	if (rep)
		*rep = re;
	return e;
}

/* NAT: ESTABLISHED only after the backend's SYN-ACK acked the client's SYN
 * and the client's ACK acked the SYN-ACK; a blind attacker's SYN then ACK
 * (it never saw the backend's ISN) leaves an unassured, evictable entry. */
static void
test_nat_handshake_proves_both_sides(void **state)
{
	struct ct_shard *s = mk_shard(64, 0, NULL);
	const struct ct_stats *st = ct_stats_get(s);
	struct ct_key4 k = k4(1), rk = k4(1000001);
	uint32_t pos, rpos;
	struct ct_entry *e = ct_insert(s, CT_V4, &k, ct_key4_hash(s, &k), IPPROTO_TCP,
				       CT_ST_SYN_SENT, false, 0, &pos, NULL);
	struct ct_entry *re = ct_insert_reply(s, CT_V4, &rk, ct_key4_hash(s, &rk), pos,
					      0, &rpos, NULL);
	uint8_t oow;

	assert_non_null(re);
	seg(s, e, false, CT_TCP_SYN, 5000, 0, 64240, 7, 1, NULL);
	/* the attacker's ACK before any SYN-ACK: nothing */
	assert_int_equal(seg(s, e, false, CT_TCP_ACK, 5001, 777, 502, CT_SEG_NO_WSCALE, 2,
			     &oow), CT_ST_SYN_SENT);
	assert_int_equal(oow, CT_OOW_PASS);
	/* a SYN-ACK that acks another ISN: nothing */
	assert_int_equal(seg(s, re, true, CT_TCP_SYN | CT_TCP_ACK, 9000, 1234, 65160, 7, 3,
			     &oow), CT_ST_SYN_SENT);
	assert_int_equal(oow, CT_OOW_PASS);
	assert_int_equal(seg(s, re, true, CT_TCP_SYN | CT_TCP_ACK, 9000, 5001, 65160, 7, 4,
			     NULL), CT_ST_SYN_RECV);
	/* the attacker's ACK of a SYN-ACK it never saw: still nothing */
	assert_int_equal(seg(s, e, false, CT_TCP_ACK, 5001, 123456, 502, CT_SEG_NO_WSCALE, 5,
			     &oow), CT_ST_SYN_RECV);
	assert_false(e->flags & CT_F_ASSURED);
	assert_true(e->flags & CT_F_LISTED);
	assert_int_equal(st->tcp_hs_bad, 3);
	/* the client's own ACK */
	assert_int_equal(seg(s, e, false, CT_TCP_ACK, 5001, 9001, 502, CT_SEG_NO_WSCALE, 6,
			     NULL), CT_ST_ESTABLISHED);
	assert_true(e->flags & CT_F_ASSURED);
	assert_false(e->flags & CT_F_LISTED);
	assert_int_equal(e->td_end, 5001);
	assert_int_equal(e->td_wscale & 0x0f, 7);
	assert_int_equal(re->td_end, 9001);
	assert_int_equal(ct_check(s), 0);
	ct_shard_free(s);
}

/* A blind RST or FIN spray over a NAT flow's tuple (random sequence
 * numbers) changes nothing: the RSTs are to be dropped, the FINs pass;
 * the endpoints' own RST and FIN, in window, close it. */
static void
test_nat_blind_rst_fin_spray(void **state)
{
	struct ct_shard *s = mk_shard(256, 0, NULL);
	const struct ct_stats *st = ct_stats_get(s);
	uint64_t r = 0x5eed0034;
	struct ct_entry *e[100], *re[100];
	uint32_t ci[100], bi[100], moved = 0, drops = 0;

	for (uint32_t i = 0; i < 100; i++) {
		ci[i] = (uint32_t)xs(&r);
		bi[i] = (uint32_t)xs(&r);
		e[i] = nat_flow(s, i, ci[i], bi[i], 10, &re[i]);
		/* some data both ways */
		seg(s, e[i], false, CT_TCP_ACK | 0x08, ci[i] + 1, bi[i] + 1, 502,
		    CT_SEG_NO_WSCALE, 11, NULL);
		seg(s, re[i], true, CT_TCP_ACK | 0x08, bi[i] + 1, ci[i] + 301, 500,
		    CT_SEG_NO_WSCALE, 11, NULL);
	}
	for (uint32_t n = 0; n < 100 * 50; n++) {
		uint32_t i = n % 100;
		uint8_t fl = (n / 100) & 1 ? CT_TCP_FIN | CT_TCP_ACK : CT_TCP_RST;
		uint8_t oow = 0;

		seg(s, e[i], false, fl, (uint32_t)xs(&r), (uint32_t)xs(&r), 512,
		    CT_SEG_NO_WSCALE, 12, &oow);
		drops += oow == CT_OOW_DROP;
		if (e[i]->state != CT_ST_ESTABLISHED)
			moved++;
	}
	assert_int_equal(moved, 0);
	assert_int_equal(drops, 100 * 25);
	assert_int_equal(st->tcp_oow, 100 * 50);
	/* the client's own FIN (at what it sent) and the backend's RST */
	assert_int_equal(seg(s, e[0], false, CT_TCP_FIN | CT_TCP_ACK, ci[0] + 301,
			     bi[0] + 1, 502, CT_SEG_NO_WSCALE, 13, NULL), CT_ST_FIN_WAIT);
	assert_int_equal(seg(s, re[1], true, CT_TCP_RST, bi[1] + 1, 0, 0,
			     CT_SEG_NO_WSCALE, 13, NULL), CT_ST_CLOSE);
	assert_true(e[0]->flags & CT_F_LISTED);   /* closing: evictable */
	assert_int_equal(ct_check(s), 0);
	ct_shard_free(s);
}

/* DSR, capacity 1024: 1,100 spoofed SYN + ACK pairs leave no assured
 * entry, and a new flow (a NAT connection's) is admitted by evicting one
 * of theirs, never a real, assured connection. */
static void
test_spoofed_handshakes_evictable(void **state)
{
	struct ct_shard *s = mk_shard(1024, 0, NULL);
	const struct ct_stats *st = ct_stats_get(s);
	uint32_t cap = ct_slots(s, CT_V4);
	uint64_t r = 0x5eed1100;

	/* 20 real DSR connections that have lived a while */
	for (uint32_t i = 0; i < 20; i++) {
		struct ct_entry *e = ins4(s, i, CT_ST_SYN_SENT, false, 0, NULL);

		seg(s, e, false, CT_TCP_SYN, 100, 0, 512, 7, 0, NULL);
		for (uint32_t p = 0; p < 4; p++)
			seg(s, e, false, CT_TCP_ACK, 101 + p, 1, 512, CT_SEG_NO_WSCALE,
			    1 + p * 1000, NULL);
		assert_true(e->flags & CT_F_ASSURED);
	}
	for (uint32_t i = 0; i < 1100; i++) {
		int err = 0;
		struct ct_entry *e = ins4(s, 5000 + i, CT_ST_SYN_SENT, false, 4000 + i, &err);
		uint32_t isn = (uint32_t)xs(&r);

		assert_non_null(e);
		seg(s, e, false, CT_TCP_SYN, isn, 0, 512, 7, 4000 + i, NULL);
		seg(s, e, false, CT_TCP_ACK, isn + 1, (uint32_t)xs(&r), 512,
		    CT_SEG_NO_WSCALE, 4000 + i, NULL);
		assert_int_equal(e->state, CT_ST_ESTABLISHED);
		assert_false(e->flags & CT_F_ASSURED);
	}
	assert_int_equal(ct_count(s), cap);
	/* a NAT connection's SYN */
	struct ct_entry *n = ins4(s, 9999, CT_ST_SYN_SENT, false, 6000, NULL);

	assert_non_null(n);
	for (uint32_t i = 0; i < 20; i++)
		assert_non_null(get4(s, i, 6000));
	assert_true(st->evictions[CT_EVICT_EARLY_DROP] >= 1100 + 20 - cap);
	assert_int_equal(ct_check(s), 0);
	ct_shard_free(s);
}

/* The client reuses its port: FIN (and the connection's end), then a SYN
 * on the tuple is a new connection (SYN_SENT, unassured, tcp_reopen),
 * whatever closing state the flow was in. */
static void
test_fin_then_syn_reopens(void **state)
{
	static const uint8_t closing[] = {CT_TCP_FIN | CT_TCP_ACK, CT_TCP_RST};

	for (unsigned int c = 0; c < RTE_DIM(closing); c++) {
		struct ct_shard *s = mk_shard(64, 0, NULL);
		const struct ct_stats *st = ct_stats_get(s);
		struct ct_entry *e = ins4(s, 1, CT_ST_SYN_SENT, false, 0, NULL);

		seg(s, e, false, CT_TCP_SYN, 100, 0, 512, 7, 0, NULL);
		for (uint32_t p = 0; p < 4; p++)
			seg(s, e, false, CT_TCP_ACK, 101 + p, 1, 512, CT_SEG_NO_WSCALE,
			    1 + p * 1000, NULL);
		assert_true(e->flags & CT_F_ASSURED);
		seg(s, e, false, closing[c], 104, 1, 512, CT_SEG_NO_WSCALE, 4000, NULL);
		assert_true(e->state == CT_ST_FIN_WAIT || e->state == CT_ST_CLOSE);
		/* a new ISN anywhere in sequence space (2^31 away here) */
		assert_int_equal(seg(s, e, false, CT_TCP_SYN, 77777u + 0x80000000u, 0, 512, 7, 5000, NULL),
				 CT_ST_SYN_SENT);
		assert_false(e->flags & CT_F_ASSURED);
		assert_true(e->flags & CT_F_LISTED);
		assert_int_equal(st->tcp_reopen, 1);
		assert_int_equal(st->live[CT_ST_SYN_SENT], 1);
		/* and it proves itself afresh */
		for (uint32_t p = 0; p < 4; p++)
			seg(s, e, false, CT_TCP_ACK, 77778u + 0x80000000u + p, 1, 512, CT_SEG_NO_WSCALE,
			    5001 + p * 1000, NULL);
		assert_int_equal(e->last_seen, 8001); /* each one refreshed it */
		assert_true(e->flags & CT_F_ASSURED);
		assert_int_equal(e->state, CT_ST_ESTABLISHED);
		assert_int_equal(ct_check(s), 0);
		ct_shard_free(s);
	}
}

/* DSR: an assured flow's RST or FIN outside CT_TD_WIN_MIN of what the
 * client sent changes nothing (and passes: the server judges it), even
 * within CT_TD_WIN_DSR, where its data still refreshes the flow. */
static void
test_dsr_blind_rst_keeps_flow(void **state)
{
	struct ct_shard *s = mk_shard(64, 0, NULL);
	struct ct_entry *e = ins4(s, 1, CT_ST_SYN_SENT, false, 0, NULL);
	uint8_t oow;

	seg(s, e, false, CT_TCP_SYN, 100, 0, 512, 7, 0, NULL);
	for (uint32_t p = 0; p < 4; p++)
		seg(s, e, false, CT_TCP_ACK, 101 + p * 10, 1, 512, CT_SEG_NO_WSCALE,
		    1 + p * 1000, NULL);
	assert_true(e->flags & CT_F_ASSURED);
	assert_int_equal(seg(s, e, false, CT_TCP_RST, 131 + CT_TD_WIN_DSR + 1, 0, 0,
			     CT_SEG_NO_WSCALE, 4000, &oow), CT_ST_ESTABLISHED);
	assert_int_equal(oow, CT_OOW_PASS);
	assert_int_equal(seg(s, e, false, CT_TCP_RST, 131 + CT_TD_WIN_MIN + 1, 0, 0,
			     CT_SEG_NO_WSCALE, 4000, &oow), CT_ST_ESTABLISHED);
	assert_int_equal(oow, CT_OOW_PASS);
	assert_int_equal(seg(s, e, false, CT_TCP_FIN | CT_TCP_ACK, 131 - CT_TD_WIN_MIN - 1,
			     0, 0, CT_SEG_NO_WSCALE, 4000, &oow), CT_ST_ESTABLISHED);
	assert_int_equal(oow, CT_OOW_PASS);
	assert_int_equal(e->last_seen, 3001);     /* nor refreshes it */
	assert_int_equal(seg(s, e, false, CT_TCP_FIN | CT_TCP_ACK, 131 - CT_TD_WIN_DSR - 1,
			     0, 0, CT_SEG_NO_WSCALE, 4000, &oow), CT_ST_ESTABLISHED);
	assert_int_equal(seg(s, e, false, CT_TCP_RST, 131, 0, 0, CT_SEG_NO_WSCALE, 4001,
			     &oow), CT_ST_CLOSE);
	assert_int_equal(oow, 0);
	assert_int_equal(ct_check(s), 0);
	ct_shard_free(s);
}

/* NAT: the client's SYN of a new connection on the tuple overtook the old
 * one's close (ignored on an open flow); the backend's SYN-ACK of it
 * reopens the flow, and a late RST of the old connection is then out of
 * the new one's window. */
static void
test_nat_synack_reopens(void **state)
{
	struct ct_shard *s = mk_shard(64, 0, NULL);
	const struct ct_stats *st = ct_stats_get(s);
	struct ct_entry *re, *e = nat_flow(s, 1, 1000, 2000000, 1, &re);
	uint8_t oow;

	assert_int_equal(seg(s, e, false, CT_TCP_SYN, 90000, 0, 64240, 7, 2, NULL),
			 CT_ST_ESTABLISHED);
	assert_int_equal(seg(s, re, true, CT_TCP_SYN | CT_TCP_ACK, 7000000, 90001, 65160, 7,
			     3, NULL), CT_ST_SYN_RECV);
	assert_false(e->flags & CT_F_ASSURED);
	assert_int_equal(st->tcp_reopen, 1);
	assert_int_equal(seg(s, e, false, CT_TCP_ACK, 90001, 7000001, 502, CT_SEG_NO_WSCALE,
			     4, NULL), CT_ST_ESTABLISHED);
	assert_true(e->flags & CT_F_ASSURED);
	assert_int_equal(seg(s, e, false, CT_TCP_RST, 1001, 0, 0, CT_SEG_NO_WSCALE, 5, &oow),
			 CT_ST_ESTABLISHED);
	assert_int_equal(oow, CT_OOW_DROP);
	assert_int_equal(ct_check(s), 0);
	ct_shard_free(s);
}

/* NAT: the client reuses its port (FIN, FIN, last ACK, then a SYN with a
 * new ISN anywhere in sequence space).  Until the new connection is
 * assured the client's window is unknown, not the old connection's: an
 * ICMP error quoting the new connection is plausible, and its handshake
 * then sets the window afresh. */
static void
test_nat_syn_reopen_forgets_window(void **state)
{
	struct ct_shard *s = mk_shard(64, 0, NULL);
	struct ct_entry *re, *e = nat_flow(s, 1, 1000, 2000000, 1, &re);
	uint32_t isn = 1000 + 0x80000000u;

	seg(s, e, false, CT_TCP_FIN | CT_TCP_ACK, 1001, 2000001, 502, CT_SEG_NO_WSCALE, 2, NULL);
	seg(s, re, true, CT_TCP_FIN | CT_TCP_ACK, 2000001, 1002, 500, CT_SEG_NO_WSCALE, 3, NULL);
	seg(s, e, false, CT_TCP_ACK, 1002, 2000002, 502, CT_SEG_NO_WSCALE, 4, NULL);
	assert_true(e->state != CT_ST_ESTABLISHED && e->state != CT_ST_SYN_SENT);
	assert_int_equal(seg(s, e, false, CT_TCP_SYN, isn, 0, 64240, 7, 5, NULL),
			 CT_ST_SYN_SENT);
	assert_true(ct_tcp_seq_plausible(s, e, isn + 1));
	assert_int_equal(seg(s, re, true, CT_TCP_SYN | CT_TCP_ACK, 9000000, isn + 1, 65160, 7,
			     6, NULL), CT_ST_SYN_RECV);
	assert_int_equal(seg(s, e, false, CT_TCP_ACK, isn + 1, 9000001, 502, CT_SEG_NO_WSCALE,
			     7, NULL), CT_ST_ESTABLISHED);
	assert_true(e->flags & CT_F_ASSURED);
	assert_true(ct_tcp_seq_plausible(s, e, isn + 1));
	assert_false(ct_tcp_seq_plausible(s, e, 1002));
	assert_true(ct_tcp_seq_plausible(s, re, 9000001));
	assert_int_equal(ct_check(s), 0);
	ct_shard_free(s);
}

/* ct_tcp_seq_plausible: an ICMP error's quoted sequence number */
static void
test_seq_plausible(void **state)
{
	struct ct_shard *s = mk_shard(64, 0, NULL);
	struct ct_entry *re, *e = nat_flow(s, 1, 1000, 2000000, 1, &re);

	assert_true(ct_tcp_seq_plausible(s, e, 1001));
	assert_true(ct_tcp_seq_plausible(s, re, 2000001));
	assert_false(ct_tcp_seq_plausible(s, e, 1001 + 0x40000000u));
	assert_false(ct_tcp_seq_plausible(s, re, 2000001 - 0x40000000u));
	ct_shard_free(s);
}

static void
test_initial_states(void **state)
{
	assert_int_equal(ct_state_initial(IPPROTO_TCP, CT_TCP_SYN), CT_ST_SYN_SENT);
	assert_int_equal(ct_state_initial(IPPROTO_TCP, CT_TCP_ACK), CT_ST_PICKUP);
	assert_int_equal(ct_state_initial(IPPROTO_TCP, CT_TCP_ACK | CT_TCP_FIN), CT_ST_PICKUP);
	assert_int_equal(ct_state_initial(IPPROTO_TCP, CT_TCP_SYN | CT_TCP_ACK), CT_ST_PICKUP);
	assert_int_equal(ct_state_initial(IPPROTO_TCP, CT_TCP_RST), CT_ST_CLOSE);
	assert_int_equal(ct_state_initial(IPPROTO_UDP, 0), CT_ST_UDP);
	assert_int_equal(ct_state_initial(IPPROTO_ICMP, 0), CT_ST_OTHER);
}

static void
test_udp_becomes_stream(void **state)
{
	struct ct_shard *s = mk_shard(64, 0, NULL);
	struct ct_key4 k = k4(3);
	k.proto = IPPROTO_UDP;
	struct ct_entry *e = ct_insert(s, CT_V4, &k, ct_key4_hash(s, &k), IPPROTO_UDP,
				       CT_ST_UDP, false, 0, NULL, NULL);
	assert_non_null(e);
	ct_update(s, e, false, 0, 100, 1);
	assert_int_equal(e->state, CT_ST_UDP);
	ct_update(s, e, false, 0, 100, 2);
	assert_int_equal(e->state, CT_ST_UDP_STREAM);
	assert_true(e->flags & CT_F_ASSURED);
	ct_shard_free(s);
}

/* ---- timeouts: one test per state ----------------------------------- */

static const enum ct_state timeout_states[] = {
	CT_ST_SYN_SENT, CT_ST_SYN_RECV, CT_ST_ESTABLISHED, CT_ST_FIN_WAIT,
	CT_ST_CLOSE_WAIT, CT_ST_LAST_ACK, CT_ST_TIME_WAIT, CT_ST_CLOSE,
	CT_ST_UDP, CT_ST_UDP_STREAM, CT_ST_OTHER, CT_ST_PICKUP,
};

static void
test_timeout_state(void **state)
{
	enum ct_state st = *(const enum ct_state *)*state;
	struct ct_shard *s = mk_shard(64, 0, NULL);
	struct ct_timeouts t;

	memset(&t, 0, sizeof(t));
	for (int i = 0; i < CT_ST_MAX; i++)
		t.ms[i] = 1000 + 100 * i; /* distinct per state */
	ct_set_timeouts(s, &t);
	uint64_t t0 = 5000, to = 1000 + 100 * st; /* ms == ticks at HZ 1000 */

	assert_non_null(ins4(s, 1, st, false, t0, NULL));
	assert_non_null(get4(s, 1, t0 + to));      /* exactly at the limit: alive */
	assert_null(get4(s, 1, t0 + to + 1));      /* one tick later: expired */
	assert_int_equal(ct_stats_get(s)->expired[st], 1);
	assert_int_equal(ct_stats_get(s)->expired_on_lookup, 1);
	assert_int_equal(ct_stats_get(s)->live[st], 0);

	/* Same through the sweep, without any lookup. */
	assert_non_null(ins4(s, 2, st, false, t0, NULL));
	unsigned int n = 0;
	for (uint64_t now = t0 + to + 1; now < t0 + to + 3000; now += 100)
		n += ct_expire(s, now);
	assert_int_equal(n, 1);
	assert_int_equal(ct_stats_get(s)->expired[st], 2);
	assert_int_equal(ct_count(s), 0);
	ct_shard_free(s);
}

/*
 * Two packets of an expired flow in one bulk lookup (a flow idle past its
 * timeout that resumes with a burst): the first removes the entry, and the
 * second must not find the freed slot, whose key bytes stay behind, as a
 * hit, nor remove it again (the live counts would go wrong).  IPv4 and
 * IPv6, with a live flow between them.
 */
static void
test_expired_twice_in_burst(void **state)
{
	struct ct_shard *s = mk_shard(64, 0, NULL);
	struct ct_timeouts t;

	memset(&t, 0, sizeof(t));
	for (int i = 0; i < CT_ST_MAX; i++)
		t.ms[i] = 1000;
	ct_set_timeouts(s, &t);
	for (int fam = CT_V4; fam <= CT_V6; fam++) {
		struct ct_key4 a4 = k4(1), b4 = k4(2);
		struct ct_key6 a6 = k6(1), b6 = k6(2);
		const void *a = fam == CT_V4 ? (const void *)&a4 : (const void *)&a6;
		const void *b = fam == CT_V4 ? (const void *)&b4 : (const void *)&b6;
		uint32_t klen = fam == CT_V4 ? sizeof(a4) : sizeof(a6);
		uint32_t sa = ct_key_sig(a, klen), sb = ct_key_sig(b, klen);
		const void *keys[3] = {a, b, a};
		uint32_t sigs[3] = {sa, sb, sa}, pos[3];
		struct ct_entry *ents[3];
		int err;

		assert_non_null(ct_insert(s, fam, a, sa, IPPROTO_TCP, CT_ST_ESTABLISHED,
					  true, 100, NULL, &err));
		assert_non_null(ct_insert(s, fam, b, sb, IPPROTO_TCP, CT_ST_ESTABLISHED,
					  true, 1500, NULL, &err));
		/* at 2000, a (last seen at 100) is past its 1000 and b is not:
		 * only b, key 1 of the burst, hits */
		assert_int_equal(ct_lookup_bulk(s, fam, keys, sigs, 3, 2000, ents, pos),
				 1u << 1);
		assert_null(ents[0]);
		assert_null(ents[2]);
		assert_non_null(ents[1]);
		assert_int_equal(ct_count(s), 1);
		assert_int_equal(ct_stats_get(s)->live[CT_ST_ESTABLISHED], 1);
		assert_int_equal(ct_check(s), 0);
		assert_int_equal(ct_delete(s, fam, b, sb), 0);
		assert_int_equal(ct_count(s), 0);
	}
	ct_shard_free(s);
}

/* A NAT flow: forward entry @p i (assured or not) and its reply entry
 * 1000 + i, the reply linked by ct_insert_reply; its forward position. */
static uint32_t
nat4(struct ct_shard *s, uint32_t i, bool assured, uint64_t now, int *err)
{
	struct ct_key4 kf = k4(i), kr = k4(1000 + i);
	uint32_t pf, pr;

	if (ct_insert(s, CT_V4, &kf, ct_key4_hash(s, &kf), IPPROTO_TCP,
		      assured ? CT_ST_ESTABLISHED : CT_ST_SYN_SENT, assured, now,
		      &pf, err) == NULL)
		return CT_NONE;
	if (ct_insert_reply(s, CT_V4, &kr, ct_key4_hash(s, &kr), pf, now, &pr,
			    err) == NULL)
		return CT_NONE;
	return pf;
}

/*
 * A NAT flow's reply entry into a full reply region: early drop makes room
 * with the oldest unassured flow that has a reply entry there, other than
 * the one the entry is for, and refuses when there is none.  It never
 * evicts that flow's own forward entry, which its caller still holds
 * (ct_insert did once: the caller then linked a freed slot, and the table
 * broke), nor a flow without a reply entry (a DSR flow: evicting it frees
 * no reply slot).
 */
static void
test_insert_reply_keeps_its_flow(void **state)
{
	enum { CAP = 16, RCAP = 8 };
	struct ct_shard *s = mk_shard_r(CAP, RCAP, 0, NULL);
	struct ct_key4 kf = k4(2), rf = k4(1002), kg = k4(4), rg = k4(1004);
	uint32_t pf, ph, pg, pr;
	int err = 0;

	/* D (unassured DSR, the oldest), F (unassured, no reply entry yet),
	 * H (unassured NAT), then assured NAT flows: the reply region full */
	assert_non_null(ins4(s, 1, CT_ST_SYN_SENT, false, 10, NULL));
	assert_non_null(ct_insert(s, CT_V4, &kf, ct_key4_hash(s, &kf), IPPROTO_TCP,
				  CT_ST_SYN_SENT, false, 11, &pf, &err));
	ph = nat4(s, 3, false, 12, &err);
	assert_int_not_equal(ph, CT_NONE);
	for (uint32_t i = 0; i < RCAP - 1; i++)
		assert_int_not_equal(nat4(s, 10 + i, true, 13, &err), CT_NONE);
	assert_int_equal(ct_count(s), 3 + (RCAP - 1) + RCAP);
	assert_int_equal(ct_check(s), 0);
	/* F's reply entry evicts H's pair: not D (no reply entry), not F */
	assert_non_null(ct_insert_reply(s, CT_V4, &rf, ct_key4_hash(s, &rf), pf, 14,
					&pr, &err));
	assert_non_null(get4(s, 1, 15));
	assert_non_null(get4(s, 2, 15));
	assert_null(get4(s, 3, 15));
	assert_null(get4(s, 1003, 15));
	assert_ptr_equal(get4(s, 1002, 15), ct_entry_at(s, CT_V4, pr));
	assert_int_equal(ct_entry_at(s, CT_V4, pf)->peer, pr);
	assert_int_equal(ct_entry_at(s, CT_V4, pr)->peer, pf);
	assert_int_equal(ct_count(s), 2 + (RCAP - 1) + RCAP);
	assert_int_equal(ct_check(s), 0);
	/* a new unassured flow G: the forward region has room, nothing goes;
	 * G's reply entry evicts F's pair (D has none) */
	assert_non_null(ct_insert(s, CT_V4, &kg, ct_key4_hash(s, &kg), IPPROTO_TCP,
				  CT_ST_SYN_SENT, false, 16, &pg, &err));
	assert_non_null(get4(s, 2, 17));
	assert_non_null(ct_insert_reply(s, CT_V4, &rg, ct_key4_hash(s, &rg), pg, 17,
					&pr, &err));
	assert_null(get4(s, 2, 18));
	assert_null(get4(s, 1002, 18));
	assert_non_null(get4(s, 1, 18));
	assert_int_equal(ct_check(s), 0);
	/* G gone, an assured NAT flow in its place: full, and no unassured
	 * NAT flow but K, whose reply entry is refused; K stays */
	struct ct_key4 kk = k4(5), rk = k4(1005);
	uint32_t pk;

	assert_int_equal(ct_delete_pos(s, CT_V4, pg), 0);
	assert_int_not_equal(nat4(s, 20, true, 18, &err), CT_NONE);
	assert_non_null(ct_insert(s, CT_V4, &kk, ct_key4_hash(s, &kk), IPPROTO_TCP,
				  CT_ST_SYN_SENT, false, 19, &pk, &err));
	assert_null(ct_insert_reply(s, CT_V4, &rk, ct_key4_hash(s, &rk), pk, 19,
				    &pr, &err));
	assert_int_equal(err, -ENOSPC);
	assert_non_null(get4(s, 5, 20));
	assert_int_equal(ct_entry_at(s, CT_V4, pk)->peer, CT_NONE);
	assert_int_equal(ct_check(s), 0);
	/* only an unlinked forward entry takes a reply entry */
	assert_null(ct_insert_reply(s, CT_V4, &rk, ct_key4_hash(s, &rk), ph, 21,
				    &pr, &err));
	assert_int_equal(err, -EINVAL);
	ct_shard_free(s);
}

/* Keys the caller marks as no reply's (flow_only, ct_insert_flow) read
 * the flows' region only: a reply entry's key so marked is not found (the
 * contract's other side, which shows that the reply region was not read);
 * the same keys unmarked or hinted are; hits and misses of the flows'
 * region are as without the mark, and so is ct_insert_flow's EEXIST. */
static void
test_flow_only_reads_flows_region(void **state)
{
	struct ct_shard *s = mk_shard_r(64, 16, 0, NULL);
	struct ct_key4 kf = k4(1), kr = k4(1001), kn = k4(2), kx = k4(3);
	const void *keys[3] = {&kf, &kr, &kn};
	uint32_t sigs[3], pos[3], p;
	struct ct_entry *ents[3];
	int err = 0;

	(void)state;
	assert_int_not_equal(nat4(s, 1, true, 10, &err), CT_NONE);
	assert_int_equal(ct_stats_get(s)->nat_flows, 1);   /* the NAT gauge */
	for (int i = 0; i < 3; i++)
		sigs[i] = ct_key4_hash(s, keys[i]);
	/* all marked: the forward key hits, the reply key and the absent one miss */
	assert_int_equal(ct_lookup_bulk_hint(s, CT_V4, keys, sigs, 3, 0, 7, 11, ents, pos), 1);
	assert_null(ents[1]);
	/* unmarked, or hinted (a bit in both masks is a hint): found */
	assert_int_equal(ct_lookup_bulk_hint(s, CT_V4, keys, sigs, 3, 0, 5, 11, ents, pos), 3);
	assert_int_equal(ct_lookup_bulk_hint(s, CT_V4, keys, sigs, 3, 2, 7, 11, ents, pos), 3);
	assert_int_equal(ct_entry_at(s, CT_V4, pos[1])->flags & CT_F_REPLY, CT_F_REPLY);
	/* ct_insert_flow: a live forward key exists; a new one goes in */
	assert_null(ct_insert_flow(s, CT_V4, &kf, sigs[0], IPPROTO_TCP, CT_ST_SYN_SENT,
				   false, 12, &p, &err));
	assert_int_equal(err, -EEXIST);
	assert_non_null(ct_insert_flow(s, CT_V4, &kx, ct_key4_hash(s, &kx), IPPROTO_TCP,
				       CT_ST_SYN_SENT, false, 12, &p, &err));
	assert_ptr_equal(get4(s, 3, 13), ct_entry_at(s, CT_V4, p));
	assert_int_equal(ct_check(s), 0);
	ct_shard_free(s);
}

/* A full flows' region evicts the oldest unassured flow, NAT or not: the
 * two early-drop lists' heads compared by creation time. */
static void
test_early_drop_oldest_of_both(void **state)
{
	enum { CAP = 16 };
	struct ct_shard *s = mk_shard(CAP, 0, NULL);
	int err = 0;

	assert_int_not_equal(nat4(s, 1, false, 1 * HZ, &err), CT_NONE);   /* N */
	assert_non_null(ins4(s, 2, CT_ST_SYN_SENT, false, 2 * HZ, NULL));  /* D */
	assert_int_not_equal(nat4(s, 3, false, 3 * HZ, &err), CT_NONE);   /* M */
	for (uint32_t i = 0; i < CAP - 3; i++)
		assert_non_null(ins4(s, 100 + i, CT_ST_ESTABLISHED, true, 3 * HZ, NULL));
	/* X evicts N (the oldest), Y then D, Z then M */
	assert_non_null(ins4(s, 4, CT_ST_SYN_SENT, false, 4 * HZ, NULL));
	assert_null(get4(s, 1, 4 * HZ));
	assert_null(get4(s, 1001, 4 * HZ));
	assert_non_null(get4(s, 2, 4 * HZ));
	assert_non_null(ins4(s, 5, CT_ST_SYN_SENT, false, 5 * HZ, NULL));
	assert_null(get4(s, 2, 5 * HZ));
	assert_non_null(get4(s, 3, 5 * HZ));
	assert_non_null(ins4(s, 6, CT_ST_SYN_SENT, false, 6 * HZ, NULL));
	assert_null(get4(s, 3, 6 * HZ));
	assert_null(get4(s, 1003, 6 * HZ));
	assert_non_null(get4(s, 4, 6 * HZ));
	assert_int_equal(ct_count(s), CAP);
	assert_int_equal(ct_check(s), 0);
	ct_shard_free(s);
}

/* ct_config::capacity counts flows in every mode: with a reply region as
 * large as the flows' (capacity_reply = capacity), as many NAT flows as
 * DSR flows fit, each a forward and a reply entry; the next flow is
 * refused.  The default reply region holds half as many. */
static void
test_capacity_counts_flows(void **state)
{
	enum { CAP = 1000 };
	struct ct_shard *s = mk_shard_r(CAP, CAP, 0, NULL);
	int err = 0;

	for (uint32_t i = 0; i < CAP; i++)
		assert_int_not_equal(nat4(s, i, true, 1, &err), CT_NONE);
	assert_int_equal(ct_count(s), 2 * CAP);
	assert_int_equal(ct_stats_get(s)->live[CT_ST_ESTABLISHED], CAP);
	assert_null(ins4(s, 5000, CT_ST_ESTABLISHED, true, 1, &err));
	assert_int_equal(err, -ENOSPC);
	for (uint32_t i = 0; i < CAP; i++) {
		struct ct_entry *f = get4(s, i, 2), *r = get4(s, 1000 + i, 2);

		assert_non_null(f);
		assert_non_null(r);
		assert_true(r->flags & CT_F_REPLY);
		assert_int_equal(ct_entry_at(s, CT_V4, f->peer), r);
	}
	assert_int_equal(ct_check(s), 0);
	ct_shard_free(s);
	/* the default: CAP / 2 NAT flows, then the reply entry is refused
	 * (no unassured NAT flow to evict) */
	s = mk_shard(CAP, 0, NULL);
	for (uint32_t i = 0; i < CAP / 2; i++)
		assert_int_not_equal(nat4(s, i, true, 1, &err), CT_NONE);
	assert_int_equal(nat4(s, CAP / 2, true, 1, &err), CT_NONE);
	assert_int_equal(err, -ENOSPC);
	assert_int_equal(ct_check(s), 0);
	ct_shard_free(s);
}

static void
test_default_timeouts_documented(void **state)
{
	struct ct_config c;

	ct_config_defaults(&c);
	assert_int_equal(c.timeouts.ms[CT_ST_SYN_SENT], 30000);
	assert_int_equal(c.timeouts.ms[CT_ST_ESTABLISHED], 900000);
	assert_int_equal(c.timeouts.ms[CT_ST_TIME_WAIT], 30000);
	assert_int_equal(c.timeouts.ms[CT_ST_UDP], 30000);
	assert_int_equal(c.timeouts.ms[CT_ST_UDP_STREAM], 120000);
	assert_int_equal(c.timeouts.ms[CT_ST_PICKUP], 10000);
	assert_int_equal(c.pickup_pkts, 4);
	assert_int_equal(c.pickup_ms, 2000);
}

/* The lookup keeps a coarse deadline next to the key: a state change with a
 * shorter timeout must move it in, and an active flow must outlive it. */
static void
test_deadline_follows_state_and_activity(void **state)
{
	struct ct_shard *s = mk_shard(64, 0, NULL);
	struct ct_entry *e = ins4(s, 1, CT_ST_ESTABLISHED, true, 0, NULL);

	/* established 900 s; FIN at t=10 s -> FIN_WAIT 30 s */
	assert_non_null(get4(s, 1, 10 * HZ));
	ct_update(s, e, false, CT_TCP_FIN | CT_TCP_ACK, 40, 10 * HZ);
	assert_non_null(get4(s, 1, 40 * HZ));
	assert_null(get4(s, 1, 40 * HZ + 1));
	assert_int_equal(ct_stats_get(s)->expired[CT_ST_FIN_WAIT], 1);

	/* active for 10 timeouts (SYN_SENT 30 s, touched every 20 s): alive */
	struct ct_entry *f = ins4(s, 2, CT_ST_UDP_STREAM, true, 0, NULL);
	for (uint64_t t = 20; t <= 1200; t += 20) {
		struct ct_entry *g = get4(s, 2, t * HZ);
		assert_ptr_equal(g, f);
		touch(s, g, false, 0, 10, t * HZ);
	}
	assert_null(get4(s, 2, (1200 + 121) * HZ));
	ct_shard_free(s);
}

/* ---- bounded expiry -------------------------------------------------- */

static void
test_expire_bounded_per_call(void **state)
{
	struct ct_shard *s = mk_shard(4096, 0, NULL); /* expire_budget 64 */

	for (uint32_t i = 0; i < 4000; i++)
		assert_non_null(ins4(s, i, CT_ST_SYN_SENT, false, 0, NULL));
	/* A huge clock jump: one call still examines at most 64 slots. */
	uint64_t now = 10ull * 3600 * HZ;
	unsigned int first = ct_expire(s, now); /* v4 turn */
	assert_true(first <= 64);
	assert_true(first > 0);
	assert_true(ct_count(s) >= 4000 - 64);
	/* Paced: no time elapsed, no work. */
	assert_int_equal(ct_expire(s, now), 0);
	assert_int_equal(ct_expire(s, now), 0);
	/* Over time everything goes, 64 slots per call at most. */
	unsigned int total = first, calls = 1;
	while (ct_count(s) > 0 && calls < 10000) {
		unsigned int n = ct_expire(s, now + calls);
		assert_true(n <= 64);
		total += n;
		calls++;
	}
	assert_int_equal(total, 4000);
	assert_int_equal(ct_stats_get(s)->expired[CT_ST_SYN_SENT], 4000);
	ct_shard_free(s);
}

/* The sweep's pace holds for each family: one pass over a family's slots
 * per CT_SWEEP_PERIOD_S, whichever family the calls alternate to.  Both
 * families have 7168 slots here, on a 1 GHz clock called every 10 us, as
 * a worker calls.  (A family that got only the time since the other
 * family's call took two periods per pass.) */
static void
test_expire_pass_per_period(void **state)
{
	const uint64_t hz = 1000000000ull, step = hz / 100000;
	struct ct_config c;
	struct ct_shard *s;

	ct_config_defaults(&c);
	c.name = "tpace";
	c.capacity = c.capacity_v6 = 4096;
	c.hz = hz;
	s = ct_shard_create(&c);
	assert_non_null(s);
	for (uint32_t i = 0; i < 4000; i++) {
		struct ct_key4 k = k4(i);
		struct ct_key6 k6_ = k6(i);

		assert_non_null(ct_insert(s, CT_V4, &k, ct_key4_hash(s, &k),
					  IPPROTO_TCP, CT_ST_SYN_SENT, false, 0,
					  NULL, NULL));
		assert_non_null(ct_insert(s, CT_V6, &k6_, ct_key6_hash(s, &k6_),
					  IPPROTO_TCP, CT_ST_SYN_SENT, false, 0,
					  NULL, NULL));
	}
	/* capacity 4096 each: 7168 slots */
	assert_int_equal(ct_slots(s, CT_V4), 4096);
	assert_int_equal(ct_slots(s, CT_V6), 4096);
	/* every entry long expired; the first calls set the pace */
	uint64_t t0 = 10ull * 3600 * hz;

	ct_expire(s, t0);
	ct_expire(s, t0);
	/* the first call of each family swept 256 slots (the budget), 3.6%:
	 * at 90% of the period some are left */
	for (uint64_t t = step; t <= CT_SWEEP_PERIOD_S * hz * 90 / 100; t += step)
		ct_expire(s, t0 + t);
	assert_true(ct_count(s) > 0);
	for (uint64_t t = CT_SWEEP_PERIOD_S * hz * 90 / 100 + step;
	     t <= CT_SWEEP_PERIOD_S * hz * 101 / 100; t += step)
		ct_expire(s, t0 + t);
	/* a pass and 1% over: nothing is left in either family */
	assert_int_equal(ct_count(s), 0);
	assert_int_equal(ct_stats_get(s)->expired[CT_ST_SYN_SENT], 8000);
	ct_shard_free(s);
}

/* ---- table full ------------------------------------------------------ */

struct full_case {
	const char *name;
	uint32_t unassured;   /* unassured entries in the full table */
	uint32_t room;        /* free slots left; the rest is established */
	uint32_t extra;       /* new inserts attempted */
	bool extra_assured;   /* the new inserts are assured (mid-stream) */
};

static const struct full_case full_cases[] = {
	{"all established: refuse", 0, 0, 10, false},
	{"all unassured: evict oldest", 257, 0, 10, false},
	{"mix: evict unassured only", 56, 0, 56, false},
	{"mix: unassured run out", 6, 0, 20, true},
	{"room left, then evict", 40, 16, 30, false},
	{"room left, assured, then refuse", 5, 3, 20, true},
};

static void
test_table_full(void **state)
{
	const struct full_case *c = *state;
	struct ct_shard *s = mk_shard(256, 0, NULL);
	uint32_t cap = ct_slots(s, CT_V4); /* the shard may round up */
	uint32_t unassured = RTE_MIN(c->unassured, cap - c->room);
	uint32_t established = cap - c->room - unassured;
	uint32_t i, ok = 0, refused = 0;
	int err;

	assert_true(cap >= 256);
	for (i = 0; i < established; i++)
		assert_non_null(ins4(s, i, CT_ST_ESTABLISHED, true, 1, NULL));
	for (; i < established + unassured; i++)
		assert_non_null(ins4(s, i, CT_ST_SYN_SENT, false, 2 + i, NULL));
	assert_int_equal(ct_count(s), cap - c->room);
	for (uint32_t j = 0; j < c->extra; j++) {
		if (ins4(s, 100000 + j, c->extra_assured ? CT_ST_ESTABLISHED : CT_ST_SYN_SENT,
			 c->extra_assured, 1000, &err))
			ok++;
		else {
			assert_int_equal(err, -ENOSPC);
			refused++;
		}
	}
	/* Every established entry survives. */
	for (uint32_t j = 0; j < established; j++)
		assert_non_null(get4(s, j, 1000));
	/* New unassured entries evict older unassured ones (new ones too,
	 * oldest first), so while any unassured entry exists inserts go on;
	 * assured newcomers use up the room and the unassured, then stop. */
	uint32_t expect_ok;
	if (c->extra_assured)
		expect_ok = RTE_MIN(c->extra, c->room + unassured);
	else
		expect_ok = (unassured + c->room) > 0 ? c->extra : 0;
	assert_int_equal(ok, expect_ok);
	assert_int_equal(refused, c->extra - expect_ok);
	const struct ct_stats *st = ct_stats_get(s);
	assert_int_equal(st->insert_fail_by[CT_INSFAIL_FULL], refused);
	assert_int_equal(st->evictions[CT_EVICT_EARLY_DROP], ok > c->room ? ok - c->room : 0);
	assert_true(ct_count(s) <= cap);
	/* The oldest unassured went first. */
	if (unassured && ok > c->room)
		assert_null(get4(s, established, 1000));
	ct_shard_free(s);
}

/* Every key with one home slot: the probe runs through one cluster, and
 * the table still takes its capacity. */
static uint32_t
collide_hash(const void *k, uint32_t len, uint32_t init)
{
	(void)k; (void)len; (void)init;
	return 0x12345678;
}

static void
test_colliding_hash_fills_to_capacity(void **state)
{
	struct ct_shard *s = mk_shard(100, 0, collide_hash);
	uint32_t cap = ct_slots(s, CT_V4);

	assert_int_equal(cap, 100); /* capacity is exact */
	for (uint32_t i = 0; i < cap; i++)
		assert_non_null(ins4(s, i, CT_ST_ESTABLISHED, true, 1, NULL));
	for (uint32_t i = 0; i < cap; i++)
		assert_non_null(get4(s, i, 2));
	int err;
	assert_null(ins4(s, 999, CT_ST_ESTABLISHED, true, 1, &err));
	assert_int_equal(err, -ENOSPC);
	ct_shard_free(s);

	/* Past the 255 a probe count holds (it stays saturated: lookups go on
	 * further) and the 4096 slots a key may land from home (refused as
	 * HASH, never placed where a probe would not find it). */
	s = mk_shard(5000, 0, collide_hash);
	uint32_t placed = 0;
	for (uint32_t i = 0; i < 5000; i++) {
		if (ins4(s, i, CT_ST_ESTABLISHED, true, 1, &err) != NULL) {
			placed++;
			continue;
		}
		assert_int_equal(err, -EIO);
	}
	assert_int_equal(placed, 4096);
	assert_int_equal(ct_stats_get(s)->insert_fail_by[CT_INSFAIL_HASH], 5000 - 4096);
	assert_int_equal(ct_check(s), 0);
	for (uint32_t i = 0; i < 4096; i += 2) {
		struct ct_key4 k = k4(i);

		assert_int_equal(ct_delete(s, CT_V4, &k, ct_key4_hash(s, &k)), 0);
	}
	assert_int_equal(ct_check(s), 0);
	for (uint32_t i = 0; i < 4096; i++)
		if (i & 1)
			assert_non_null(get4(s, i, 2));
		else
			assert_null(get4(s, i, 2));
	ct_shard_free(s);
}

/* ---- flood mode ------------------------------------------------------ */

static void
test_flood_mode(void **state)
{
	/* 160 new flows/s -> 10 per 1/16 s window (62 ticks at HZ 1000). */
	struct ct_shard *s = mk_shard(1024, 160, NULL);
	int err;
	uint32_t i;

	for (i = 0; i < 10; i++)
		assert_non_null(ins4(s, i, CT_ST_SYN_SENT, false, 100, NULL));
	assert_null(ins4(s, i++, CT_ST_SYN_SENT, false, 100, &err));
	assert_int_equal(err, -EBUSY);
	/* Assured (mid-stream ACK) flows are still inserted in flood mode. */
	assert_non_null(ins4(s, i++, CT_ST_ESTABLISHED, true, 101, NULL));
	assert_int_equal(ct_stats_get(s)->insert_fail_by[CT_INSFAIL_FLOOD], 1);
	assert_int_equal(ct_stats_get(s)->flood_windows, 1);
	/* A mid-stream pickup (no SYN) is unassured: refused like a SYN. */
	assert_null(ins4(s, i++, ct_state_initial(IPPROTO_TCP, CT_TCP_ACK), false, 101, &err));
	assert_int_equal(err, -EBUSY);
	assert_int_equal(ct_stats_get(s)->insert_fail_by[CT_INSFAIL_FLOOD], 2);
	/* The next window admits new flows again. */
	assert_non_null(ins4(s, i++, CT_ST_SYN_SENT, false, 100 + 63, NULL));
	/* Off: unlimited. */
	ct_set_flood_rate(s, 0);
	for (uint32_t j = 0; j < 100; j++)
		assert_non_null(ins4(s, 500 + j, CT_ST_SYN_SENT, false, 170, NULL));
	ct_shard_free(s);
}

/* ---- mid-stream pickups (issue 9, defect 2) ------------------------- */

/*
 * Regression: one spoofed ACK per random tuple used to create an assured
 * ESTABLISHED entry (15 min, never early-dropped), so a flood of them filled
 * the table and every new connection was refused.  Now they are unassured
 * pickups: evicted first, not counted as established, and neither new
 * connections nor established flows suffer.
 */
static void
test_spoofed_ack_flood(void **state)
{
	struct ct_shard *s = mk_shard(256, 0, NULL);
	uint32_t cap = ct_slots(s, CT_V4);
	const struct ct_stats *st = ct_stats_get(s);
	uint64_t now = 10;

	/* 100 real connections: SYN, the client's ACK, and the requests
	 * that prove them (pickup_pkts packets over pickup_ms) */
	for (uint32_t i = 0; i < 100; i++) {
		struct ct_entry *e = ins4(s, i, ct_state_initial(IPPROTO_TCP, CT_TCP_SYN),
					  false, now, NULL);
		assert_non_null(e);
		assert_int_equal(ct_update(s, e, false, CT_TCP_ACK, 40, now + 1),
				 CT_ST_ESTABLISHED);
		ct_update(s, e, false, CT_TCP_ACK, 40, now + 2);
		ct_update(s, e, false, CT_TCP_ACK, 40, now + 3);
		ct_update(s, e, false, CT_TCP_ACK, 40, now + 2500);
		assert_true(e->flags & CT_F_ASSURED);
	}
	now += 2500;
	/* 10 x capacity spoofed ACKs, each on a new tuple, as the dataplane
	 * handles them: insert with the initial state, then the packet */
	for (uint32_t i = 0; i < 10 * cap; i++) {
		int err = 0;
		struct ct_entry *e = ins4(s, 1000000 + i,
					  ct_state_initial(IPPROTO_TCP, CT_TCP_ACK),
					  false, now + i / 64, &err);

		assert_non_null(e);
		assert_false(e->flags & CT_F_ASSURED);
		ct_update(s, e, false, CT_TCP_ACK, 40, now + i / 64);
		assert_false(e->flags & CT_F_ASSURED);
	}
	assert_int_equal(st->live[CT_ST_ESTABLISHED], 100);
	now += 10 * cap / 64 + 1;
	/* new connections still get in, established flows all survive */
	for (uint32_t i = 0; i < 50; i++)
		assert_non_null(ins4(s, 500 + i, ct_state_initial(IPPROTO_TCP, CT_TCP_SYN),
				     false, now, NULL));
	for (uint32_t i = 0; i < 100; i++)
		assert_non_null(get4(s, i, now));
	assert_true(st->evictions[CT_EVICT_EARLY_DROP] >= 10 * cap - cap);
	ct_shard_free(s);
}

/* A pickup proves itself with pickup_pkts packets over pickup_ms. */
struct pickup_case {
	const char *name;
	uint32_t pkts;       /* packets, the first one creates the entry */
	uint32_t gap_ms;     /* between packets */
	enum ct_state want;
};

static const struct pickup_case pickup_cases[] = {
	{"one spoofed ACK", 1, 0, CT_ST_PICKUP},
	{"burst of 20 in 20 ms", 20, 1, CT_ST_PICKUP},
	{"3 packets over 6 s: too few", 3, 3000, CT_ST_PICKUP},
	{"4 packets over 2.4 s", 4, 800, CT_ST_ESTABLISHED},
	{"50 packets over 2.5 s", 50, 50, CT_ST_ESTABLISHED},
	{"idle past the pickup timeout: gone", 2, 10001, CT_ST_NONE},
};

static void
test_pickup_probation(void **state)
{
	const struct pickup_case *c = *state;
	struct ct_shard *s = mk_shard(64, 0, NULL);
	const struct ct_stats *st = ct_stats_get(s);
	uint64_t now = 1000;
	struct ct_entry *e = ins4(s, 1, ct_state_initial(IPPROTO_TCP, CT_TCP_ACK),
				  false, now, NULL);

	assert_non_null(e);
	assert_int_equal(e->state, CT_ST_PICKUP);
	assert_int_equal(st->live[CT_ST_PICKUP], 1);
	touch(s, e, false, CT_TCP_ACK, 40, now);
	for (uint32_t i = 1; i < c->pkts; i++) {
		now += c->gap_ms;
		e = get4(s, 1, now);
		if (e == NULL)
			break;
		touch(s, e, false, CT_TCP_ACK, 40, now);
	}
	e = get4(s, 1, now);
	if (c->want == CT_ST_NONE) {
		assert_null(e);
		assert_int_equal(st->expired[CT_ST_PICKUP], 1);
		ct_shard_free(s);
		return;
	}
	assert_non_null(e);
	assert_int_equal(e->state, c->want);
	assert_int_equal(!!(e->flags & CT_F_ASSURED), c->want == CT_ST_ESTABLISHED);
	assert_int_equal(st->live[CT_ST_ESTABLISHED], c->want == CT_ST_ESTABLISHED);
	assert_int_equal(st->live[CT_ST_PICKUP], c->want == CT_ST_PICKUP);
	if (c->want == CT_ST_ESTABLISHED) {
		/* assured: a full table of pickups cannot evict it */
		uint32_t cap = ct_slots(s, CT_V4);

		for (uint32_t i = 0; i < 3 * cap; i++)
			assert_non_null(ins4(s, 100 + i, CT_ST_PICKUP, false, now, NULL));
		assert_non_null(get4(s, 1, now));
		/* and it now lives by the ESTABLISHED timeout */
		assert_non_null(get4(s, 1, now + 60000));
	}
	ct_shard_free(s);
}

/* ---- counters -------------------------------------------------------- */

static void
test_counters(void **state)
{
	struct ct_shard *s = mk_shard(1024, 0, NULL);
	const struct ct_stats *st = ct_stats_get(s);

	for (uint32_t i = 0; i < 10; i++)
		ins4(s, i, i < 4 ? CT_ST_SYN_SENT : CT_ST_ESTABLISHED, i >= 4, 1, NULL);
	for (uint32_t i = 0; i < 20; i++)
		get4(s, i, 2);
	struct ct_key4 k = k4(0);
	ct_delete(s, CT_V4, &k, ct_key4_hash(s, &k));
	assert_int_equal(st->inserts, 10);
	assert_int_equal(st->lookups, 20);
	assert_int_equal(st->hits, 10);
	assert_int_equal(st->misses, 10);
	assert_int_equal(st->deletes, 1);
	assert_int_equal(st->live[CT_ST_SYN_SENT], 3);
	assert_int_equal(st->live[CT_ST_ESTABLISHED], 6);
	assert_int_equal(st->insert_fail, 0);
	assert_string_equal(ct_state_names[CT_ST_TIME_WAIT], "TIME_WAIT");
	assert_string_equal(ct_insfail_names[CT_INSFAIL_FLOOD], "FLOOD");
	assert_string_equal(ct_evict_names[CT_EVICT_EARLY_DROP], "EARLY_DROP");
	assert_true(ct_memory(s) > 0);
	ct_shard_free(s);
}

/* ---- iteration while the owner writes (two real threads) ------------ */

#define STABLE 3000
#define CHURN 2000

struct owner_ctx {
	struct ct_shard *s;
	volatile int stop;
	uint64_t ops;
};

static void *
owner_thread(void *arg)
{
	struct owner_ctx *o = arg;
	uint64_t now = 10;
	uint32_t r = 1;

	while (!__atomic_load_n(&o->stop, __ATOMIC_ACQUIRE)) {
		/* churn: insert and delete keys in [STABLE, STABLE+CHURN) */
		for (int i = 0; i < 32; i++) {
			r = r * 1103515245u + 12345u;
			uint32_t id = STABLE + (r >> 8) % CHURN;
			struct ct_key4 k = k4(id);
			uint32_t sig = ct_key4_hash(o->s, &k);
			if (ct_lookup(o->s, CT_V4, &k, sig, now, NULL))
				ct_delete(o->s, CT_V4, &k, sig);
			else
				ct_insert(o->s, CT_V4, &k, sig, IPPROTO_TCP,
					  CT_ST_ESTABLISHED, true, now, NULL, NULL);
			o->ops++;
		}
		ct_shard_poll(o->s, now);
		now++;
	}
	/* drain whatever is pending so the poster never waits forever */
	while (ct_shard_poll(o->s, now))
		;
	return NULL;
}

struct walk_acc {
	uint8_t seen[STABLE + CHURN];
	uint32_t bad;
	uint32_t total;
	uint32_t delete_below; /* delete matching flows with id < this (0 = none) */
};

static int
walk_cb(const struct ct_flow *f, void *arg)
{
	struct walk_acc *a = arg;
	uint32_t id = ntohl(f->k4.saddr) & 0xffffff;

	a->total++;
	if (id >= STABLE + CHURN || f->family != CT_V4 ||
	    f->e.state != CT_ST_ESTABLISHED) {
		a->bad++;
		return 0;
	}
	struct ct_key4 want = k4(id);
	if (memcmp(&want, &f->k4, sizeof(want)) != 0)
		a->bad++;
	if (a->seen[id]++ && id < STABLE)
		a->bad++; /* a stable flow reported twice */
	return id < a->delete_below;
}

static void
test_walk_while_owner_writes(void **state)
{
	struct ct_shard *s = mk_shard(8192, 0, NULL);
	struct owner_ctx o = { .s = s };
	pthread_t th;

	for (uint32_t i = 0; i < STABLE; i++)
		assert_non_null(ins4(s, i, CT_ST_ESTABLISHED, true, 1, NULL));
	assert_int_equal(pthread_create(&th, NULL, owner_thread, &o), 0);

	for (int round = 0; round < 20; round++) {
		static struct walk_acc acc;
		struct ct_mbox_req req = { .fn = walk_cb, .arg = &acc, .chunk = 97 };

		memset(&acc, 0, sizeof(acc));
		int ret;
		while ((ret = ct_mbox_post(s, &req)) == -ENOBUFS)
			;
		assert_int_equal(ret, 0);
		assert_int_equal(ct_mbox_wait(&req, 10 * 1000 * 1000), 0);
		assert_int_equal(acc.bad, 0);
		for (uint32_t i = 0; i < STABLE; i++)
			assert_int_equal(acc.seen[i], 1);
		assert_true(acc.total >= STABLE);
		assert_true(req.stats.inserts >= STABLE);
	}
	/* Filtered delete through the mailbox while churn goes on. */
	static struct walk_acc del;
	memset(&del, 0, sizeof(del));
	del.delete_below = 1000;
	struct ct_mbox_req dreq = { .fn = walk_cb, .arg = &del };
	while (ct_mbox_post(s, &dreq) == -ENOBUFS)
		;
	assert_int_equal(ct_mbox_wait(&dreq, 10 * 1000 * 1000), 0);
	/* A stats-only request. */
	struct ct_mbox_req sreq = { .fn = NULL };
	while (ct_mbox_post(s, &sreq) == -ENOBUFS)
		;
	assert_int_equal(ct_mbox_wait(&sreq, 10 * 1000 * 1000), 0);
	assert_true(sreq.stats.evictions[CT_EVICT_FLUSH] >= 1000);

	__atomic_store_n(&o.stop, 1, __ATOMIC_RELEASE);
	pthread_join(th, NULL);
	assert_true(o.ops > 0);
	for (uint32_t i = 0; i < STABLE; i++) {
		if (i < 1000)
			assert_null(get4(s, i, 100));
		else
			assert_non_null(get4(s, i, 100));
	}
	ct_shard_free(s);
}

/* ---- destroy hook ---------------------------------------------------- */

struct ev_log {
	int n[CT_DESTROY_MAX];
	struct ct_key4 last;
	uint32_t last_backend;
};

static void
ev_cb(void *arg, enum ct_family fam, const void *key, const struct ct_entry *e,
      enum ct_destroy_reason why)
{
	struct ev_log *l = arg;

	assert_int_equal(fam, CT_V4);
	assert_false(e->flags & CT_F_REPLY);
	l->n[why]++;
	memcpy(&l->last, key, sizeof(l->last));
	l->last_backend = e->backend;
}

static void
test_destroy_hook(void **state)
{
	struct ct_shard *s = mk_shard(256, 0, NULL);
	struct ev_log log = {0};
	uint32_t cap = ct_slots(s, CT_V4);

	ct_set_destroy_cb(s, ev_cb, &log);
	/* expired on lookup */
	struct ct_entry *e = ins4(s, 1, CT_ST_SYN_SENT, false, 0, NULL);
	e->backend = 7;
	assert_null(get4(s, 1, 31 * HZ));
	assert_int_equal(log.n[CT_DESTROY_EXPIRED], 1);
	assert_int_equal(log.last_backend, 7);
	struct ct_key4 k1 = k4(1);
	assert_memory_equal(&log.last, &k1, sizeof(k1));
	/* deleted by key and by position */
	ins4(s, 2, CT_ST_ESTABLISHED, true, 0, NULL);
	struct ct_key4 k2 = k4(2);
	assert_int_equal(ct_delete(s, CT_V4, &k2, ct_key4_hash(s, &k2)), 0);
	assert_int_equal(log.n[CT_DESTROY_DELETED], 1);
	/* evicted: fill with unassured, one more */
	for (uint32_t i = 0; i < cap; i++)
		assert_non_null(ins4(s, 100 + i, CT_ST_SYN_SENT, false, 1000, NULL));
	assert_non_null(ins4(s, 99999, CT_ST_SYN_SENT, false, 1000, NULL));
	assert_int_equal(log.n[CT_DESTROY_EVICTED], 1);
	/* a NAT flow is reported once, with its forward key */
	struct ct_shard *t = mk_shard(64, 0, NULL);
	struct ev_log tl = {0};
	ct_set_destroy_cb(t, ev_cb, &tl);
	struct ct_key4 f = k4(5), r = k4(6);
	uint32_t pf, pr;
	ct_insert(t, CT_V4, &f, ct_key4_hash(t, &f), IPPROTO_TCP, CT_ST_SYN_SENT, false, 0, &pf, NULL);
	ct_insert(t, CT_V4, &r, ct_key4_hash(t, &r), IPPROTO_TCP, CT_ST_SYN_SENT, false, 0, &pr, NULL);
	ct_link_peer(t, CT_V4, pf, pr);
	assert_int_equal(ct_delete(t, CT_V4, &r, ct_key4_hash(t, &r)), 0);
	assert_int_equal(tl.n[CT_DESTROY_DELETED], 1);
	assert_memory_equal(&tl.last, &f, sizeof(f));
	assert_int_equal(ct_count(t), 0);
	ct_shard_free(t);
	ct_shard_free(s);
}

/* ---- state hook and creation time ------------------------------------ */

struct st_log {
	int n;
	enum ct_state old[8], now[8];
	struct ct_key4 key[8];
	uint64_t life[8];
	struct ct_shard *s;
};

static void
st_cb(void *arg, enum ct_family fam, const void *key, const struct ct_entry *e,
      enum ct_state old, uint64_t now)
{
	struct st_log *l = arg;

	assert_int_equal(fam, CT_V4);
	assert_false(e->flags & CT_F_REPLY);   /* always the forward entry */
	assert_true(l->n < 8);
	l->old[l->n] = old;
	l->now[l->n] = (enum ct_state)e->state;
	memcpy(&l->key[l->n], key, sizeof(l->key[0]));
	l->life[l->n] = ct_entry_life(l->s, e, now);
	l->n++;
}

static int
walk_life(const struct ct_flow *f, void *arg)
{
	uint64_t *life = arg;

	*life = f->life_ticks;
	return 0;
}

/* The state hook fires once per change, with the forward key and entry
 * (also for a packet of the NAT reply direction), never for a packet that
 * keeps the state; ct_entry_life and the walk tell the time since insert,
 * for either direction's entry. */
static void
test_state_hook_and_life(void **state)
{
	struct ct_shard *s = mk_shard(256, 0, NULL);
	struct st_log log = {.s = s};
	struct ct_key4 f = k4(5), r = k4(6);
	uint32_t pf, pr;

	ct_set_state_cb(s, st_cb, &log);
	struct ct_entry *e = ct_insert(s, CT_V4, &f, ct_key4_hash(s, &f), IPPROTO_TCP,
				       CT_ST_SYN_SENT, false, 100, &pf, NULL);
	struct ct_entry *re = ct_insert(s, CT_V4, &r, ct_key4_hash(s, &r), IPPROTO_TCP,
					CT_ST_SYN_SENT, false, 100, &pr, NULL);
	assert_non_null(e);
	assert_non_null(re);
	ct_link_peer(s, CT_V4, pf, pr);
	assert_int_equal(ct_entry_life(s, e, 100), 0);
	assert_int_equal(ct_entry_life(s, e, 2600), 2500);
	assert_int_equal(ct_entry_life(s, re, 2600), 2500);   /* the flow's birth */
	/* a SYN again: no change, no call */
	ct_update(s, e, false, CT_TCP_SYN, 60, 200);
	assert_int_equal(log.n, 0);
	/* the backend's SYN-ACK through the reply entry */
	ct_update(s, re, true, CT_TCP_SYN | CT_TCP_ACK, 60, 300);
	assert_int_equal(log.n, 1);
	assert_int_equal(log.old[0], CT_ST_SYN_SENT);
	assert_int_equal(log.now[0], CT_ST_SYN_RECV);
	assert_memory_equal(&log.key[0], &f, sizeof(f));
	assert_int_equal(log.life[0], 200);
	ct_update(s, e, false, CT_TCP_ACK, 60, 400);
	assert_int_equal(log.n, 2);
	assert_int_equal(log.old[1], CT_ST_SYN_RECV);
	assert_int_equal(log.now[1], CT_ST_ESTABLISHED);
	/* data: no change, whatever the direction */
	touch(s, e, false, CT_TCP_ACK, 1000, 500);
	ct_update(s, re, true, CT_TCP_ACK, 1000, 600);
	assert_int_equal(log.n, 2);
	ct_update(s, e, false, CT_TCP_RST, 40, 700);
	assert_int_equal(log.n, 3);
	assert_int_equal(log.old[2], CT_ST_ESTABLISHED);
	assert_int_equal(log.now[2], CT_ST_CLOSE);
	uint64_t cur = 0, life = 0;
	ct_walk(s, &cur, 1024, 10100, walk_life, &life);
	assert_int_equal(life, 10000);
	/* without a hook nothing is called */
	ct_set_state_cb(s, NULL, NULL);
	struct ct_entry *u = ins4(s, 9, CT_ST_SYN_SENT, false, 0, NULL);
	ct_update(s, u, false, CT_TCP_ACK, 40, 10);
	assert_int_equal(log.n, 3);
	ct_shard_free(s);
}

/*
 * The table against a model, under seeded random churn: inserts (assured
 * and not), lookups, deletes by key and by position, time passing, the
 * sweep, a full table's early drop, NAT pairs.  After every operation the
 * shard's count is the model's; a key the model holds alive is found at
 * the position it was given (slots never move), one it does not hold is
 * not found; every removal reaches the destroy hook once, for a key the
 * model holds, for a reason the model allows.  Three hashes: CRC32C, one
 * with 16 values (long clusters, freed slots inside them) and a constant.
 */
#define CHURN_KEYS 600
struct churn {
	uint8_t live[CHURN_KEYS], assured[CHURN_KEYS], reply[CHURN_KEYS];
	uint8_t rreg[CHURN_KEYS];   /* in the reply region (ct_insert_reply) */
	uint32_t pos[CHURN_KEYS], peer[CHURN_KEYS]; /* peer: key index or -1 */
	uint64_t seen[CHURN_KEYS];
	uint32_t nlive;  /* entries (a NAT pair counts two) */
	uint32_t nrlive; /* of them, in the reply region */
	uint64_t now, timeout;
	enum ct_family fam;
};

static uint32_t
narrow_hash(const void *k, uint32_t len, uint32_t init)
{
	return ct_hash_crc(k, len) & 0xF0000000u;
}

typedef union {
	struct ct_key4 k4;
	struct ct_key6 k6;
} churn_key_t;

static void
churn_key(const struct churn *c, uint32_t i, churn_key_t *k)
{
	if (c->fam == CT_V4)
		k->k4 = k4(i);
	else
		k->k6 = k6(i);
}

static uint32_t
churn_sig(struct ct_shard *s, const struct churn *c, const churn_key_t *k)
{
	return c->fam == CT_V4 ? ct_key4_hash(s, &k->k4) : ct_key6_hash(s, &k->k6);
}

/* the destroy hook: the model lets the flow go (both halves of a pair) */
static void
churn_destroy(void *arg, enum ct_family fam, const void *key,
	      const struct ct_entry *e, enum ct_destroy_reason why)
{
	struct churn *c = arg;
	uint32_t i = e->backend;
	churn_key_t k;

	assert_int_equal(fam, c->fam);
	assert_true(i < CHURN_KEYS && c->live[i]);
	churn_key(c, i, &k);
	assert_memory_equal(key, &k, c->fam == CT_V4 ? 16 : 48);
	if (why == CT_DESTROY_EXPIRED)
		assert_true(c->now - c->seen[i] > c->timeout);
	if (why == CT_DESTROY_EVICTED)
		assert_false(c->assured[i]);
	c->live[i] = 0;
	c->nlive--;
	if (c->peer[i] != UINT32_MAX) {
		c->nrlive -= c->rreg[c->peer[i]];
		c->rreg[c->peer[i]] = 0;
		c->live[c->peer[i]] = 0;
		c->nlive--;
		c->peer[c->peer[i]] = UINT32_MAX;
		c->peer[i] = UINT32_MAX;
	}
}

/*
 * A burst as the dataplane looks it up: 1-24 keys drawn from three flows
 * and their NAT halves, so that a flow often comes more than once, both
 * of its halves sometimes, expired or not.  In the burst's order, a key
 * the model holds alive hits at its position, any other misses, and an
 * expired flow is removed once (the destroy hook asserts that what it
 * removes is live in the model).
 */
static void
churn_bulk(struct ct_shard *s, struct churn *c, uint32_t i, uint32_t r)
{
	churn_key_t ks[24];
	const void *keys[24];
	uint32_t sigs[24], pos[24], idx[24];
	struct ct_entry *ents[24];
	unsigned int n = 1 + r % 24;
	uint64_t hits;

	for (unsigned int b = 0; b < n; b++) {
		r = r * 1103515245u + 12345u;
		idx[b] = (i + (r >> 16) % 3 + ((r >> 20) & 1) * (CHURN_KEYS / 2)) % CHURN_KEYS;
		churn_key(c, idx[b], &ks[b]);
		keys[b] = &ks[b];
		sigs[b] = churn_sig(s, c, &ks[b]);
	}
	/* a hint that is right, wrong or random: it must not change the
	 * answer (ct_lookup_bulk_hint); and keys marked flow_only, the
	 * caller's contract: some of those that no reply region holds (any
	 * other key of the model, live or not, is found or missed as it
	 * should) */
	r = r * 1103515245u + 12345u;
	uint64_t hint = 0, flow_only = 0;

	for (unsigned int b = 0; b < n; b++) {
		if ((r >> 30) == 0 ? c->reply[idx[b]] : (r >> 30) == 1 ? !c->reply[idx[b]]
		    : (r >> 30) == 2 ? 0 : (idx[b] * 2654435761u) >> 31)
			hint |= 1ull << b;
		if (!c->rreg[idx[b]] && ((idx[b] + r) >> 3 & 1))
			flow_only |= 1ull << b;
	}
	hits = ct_lookup_bulk_hint(s, c->fam, keys, sigs, n, hint, flow_only, c->now,
				   ents, pos);
	/* the model after the burst: every flow it held alive still is, the
	 * others are gone (the destroy hook took the expired ones out) */
	for (unsigned int b = 0; b < n; b++) {
		uint32_t x = idx[b];

		if (c->live[x]) {
			assert_true(c->now - c->seen[x] <= c->timeout);
			assert_true(hits >> b & 1);
			assert_ptr_equal(ents[b], ct_entry_at(s, c->fam, c->pos[x]));
			assert_int_equal(pos[b], c->pos[x]);
		} else {
			assert_false(hits >> b & 1);
			assert_null(ents[b]);
		}
	}
}

static void
test_churn_model(void **state)
{
	static uint32_t (*const hashes[])(const void *, uint32_t, uint32_t) = {
		NULL, narrow_hash, collide_hash,
	};
	(void)state;
	for (unsigned int h = 0; h < RTE_DIM(hashes); h++)
	for (unsigned int fam = 0; fam < CT_FAMILIES; fam++) {
		struct ct_config cfg;
		struct churn *c = calloc(1, sizeof(*c));
		uint64_t r = 0x9e3779b97f4a7c15ull * (h * 2 + fam + 1);
		char name[24];

		assert_non_null(c);
		ct_config_defaults(&cfg);
		snprintf(name, sizeof(name), "churn%d", ct_fixture_seq++);
		cfg.name = name;
		cfg.capacity = cfg.capacity_v6 = 200;
		cfg.capacity_reply = 60;   /* full now and then: its early drop */
		cfg.hz = HZ;
		cfg.hash_fn = hashes[h];
		cfg.expire_budget = 16;
		cfg.timeouts.ms[CT_ST_ESTABLISHED] = 50;
		cfg.timeouts.ms[CT_ST_SYN_SENT] = 50;
		struct ct_shard *s = ct_shard_create(&cfg);

		assert_non_null(s);
		c->fam = (enum ct_family)fam;
		c->timeout = 50;
		c->now = 1;
		for (uint32_t i = 0; i < CHURN_KEYS; i++)
			c->peer[i] = UINT32_MAX;
		ct_set_destroy_cb(s, churn_destroy, c);
		for (uint32_t op = 0; op < 40000; op++) {
			r ^= r << 13, r ^= r >> 7, r ^= r << 17;
			uint32_t i = (uint32_t)(r >> 20) % CHURN_KEYS, what = (uint32_t)(r % 100);
			churn_key_t k;
			uint32_t pos;
			int err = 0;

			churn_key(c, i, &k);
			uint32_t sig = churn_sig(s, c, &k);

			if (what < 8) {             /* a burst: bulk lookup */
				churn_bulk(s, c, i, (uint32_t)(r >> 8));
			} else if (what < 40) {     /* lookup (and refresh) */
				bool had = c->live[i];
				bool alive = had && c->now - c->seen[i] <= c->timeout;
				struct ct_entry *e = ct_lookup(s, c->fam, &k, sig, c->now, &pos);

				if (alive) {
					assert_non_null(e);
					assert_int_equal(pos, c->pos[i]);
					/* a reply half carries its flow's backend */
					assert_int_equal(e->backend, c->reply[i] ? c->peer[i] : i);
					/* a segment without flags: no state to
					 * prove (a NAT flow's ACK before its
					 * SYN-ACK would prove nothing, and not
					 * refresh it) */
					ct_update(s, e, (e->flags & CT_F_REPLY) != 0, 0, 60, c->now);
					c->seen[i] = c->now;   /* the flow's clock */
					if (c->peer[i] != UINT32_MAX)
						c->seen[c->peer[i]] = c->now;
				} else {
					assert_null(e);
					assert_false(c->live[i]);   /* expired on lookup */
				}
			} else if (what < 70) {     /* insert */
				bool assured = (r >> 40) & 1;
				uint32_t before = c->nlive - c->nrlive;
				/* a key no reply region holds: now and then
				 * inserted as the dataplane inserts a key it
				 * knows is no reply's */
				struct ct_entry *e = (!c->rreg[i] && (r >> 44) & 1
						      ? ct_insert_flow : ct_insert)(
					s, c->fam, &k, sig, IPPROTO_TCP,
					assured ? CT_ST_ESTABLISHED : CT_ST_SYN_SENT,
					assured, c->now, &pos, &err);
				if (c->live[i]) {
					assert_null(e);
					assert_int_equal(err, -EEXIST);
					assert_int_equal(pos, c->pos[i]);
				} else if (e == NULL) {
					assert_int_equal(err, -ENOSPC);
					assert_int_equal(before, ct_slots(s, c->fam));
				} else {
					e->backend = i;
					c->reply[i] = 0;
					c->live[i] = 1;
					c->assured[i] = assured;
					c->pos[i] = pos;
					c->seen[i] = c->now;
					c->nlive++;
					/* now and then the reply half of a NAT flow */
					uint32_t j = (i + CHURN_KEYS / 2) % CHURN_KEYS;
					churn_key_t kj;

					churn_key(c, j, &kj);
					if (((r >> 41) & 3) == 1 && !c->live[j]) {
						/* as NAT does: into the reply region,
						 * which may evict another NAT flow */
						uint32_t pj;
						struct ct_entry *re = ct_insert_reply(s, c->fam, &kj,
										      churn_sig(s, c, &kj),
										      pos, c->now, &pj, &err);
						assert_true(c->live[i]);   /* never its own flow */
						if (re == NULL) {
							assert_int_equal(err, -ENOSPC);
						} else {
							assert_int_equal(re->backend, i);
							c->live[j] = c->assured[j] = 1;
							c->reply[j] = c->rreg[j] = 1;
							c->pos[j] = pj;
							c->seen[j] = c->now;
							c->nlive++;
							c->nrlive++;
							c->peer[i] = j;
							c->peer[j] = i;
						}
					} else if (((r >> 41) & 3) == 0 && !c->live[j] &&
						   c->nlive - c->nrlive < ct_slots(s, c->fam)) {
						uint32_t pj;
						struct ct_entry *re = ct_insert(s, c->fam, &kj, churn_sig(s, c, &kj),
										IPPROTO_TCP, CT_ST_ESTABLISHED, true,
										c->now, &pj, &err);
						assert_non_null(re);
						/* the insert may have evicted i itself */
						re->backend = j;
						c->live[j] = 1;
						c->assured[j] = 1;
						c->pos[j] = pj;
						c->seen[j] = c->now;
						c->nlive++;
						c->reply[j] = 0;
						if (c->live[i]) {
							ct_link_peer(s, c->fam, pos, pj);
							c->reply[j] = 1;
							c->peer[i] = j;
							c->peer[j] = i;
						}
					}
				}
			} else if (what < 80) {     /* delete by key */
				bool had = c->live[i];

				assert_int_equal(ct_delete(s, c->fam, &k, sig), had ? 0 : -ENOENT);
				assert_false(c->live[i]);
			} else if (what < 85) {     /* delete by position */
				if (c->live[i]) {
					assert_int_equal(ct_delete_pos(s, c->fam, c->pos[i]), 0);
					assert_false(c->live[i]);
				}
			} else if (what < 92) {
				c->now += (r >> 50) % 12;
			} else {
				ct_expire(s, c->now);
			}
			assert_int_equal(ct_count(s), c->nlive);
			if (op % 997 == 0) {
				assert_int_equal(ct_check(s), 0);
				/* every live key where the model put it */
				for (uint32_t x = 0; x < CHURN_KEYS; x++) {
					churn_key_t kx;
					const void *at;

					if (!c->live[x])
						continue;
					churn_key(c, x, &kx);
					at = ct_key_at(s, c->fam, c->pos[x]);
					assert_non_null(at);
					assert_memory_equal(at, &kx, c->fam == CT_V4
								? offsetof(struct ct_key4, pad)
								: offsetof(struct ct_key6, pad));
					assert_int_equal(ct_entry_at(s, c->fam, c->pos[x])->backend,
							 c->reply[x] ? c->peer[x] : x);
				}
			}
		}
		ct_set_destroy_cb(s, NULL, NULL);
		ct_shard_free(s);
		free(c);
	}
}

/* Capacity is exact (the table keeps at most 2/3 of its slots live when
 * full), whatever the power of two around it: cap entries fit, the next
 * one evicts or is refused. */
static void
test_capacity_exact(void **state)
{
	static const uint32_t asks[] = {8, 100, 900, 1000, 1024, 1025, 1100, 1900};

	for (size_t i = 0; i < RTE_DIM(asks); i++) {
		struct ct_shard *s = mk_shard(asks[i], 0, NULL);
		int err;

		assert_int_equal(ct_slots(s, CT_V4), asks[i]);
		for (uint32_t j = 0; j < asks[i]; j++)
			assert_non_null(ins4(s, j, CT_ST_ESTABLISHED, true, 1, NULL));
		assert_int_equal(ct_count(s), asks[i]);
		assert_null(ins4(s, asks[i], CT_ST_ESTABLISHED, true, 1, &err));
		assert_int_equal(err, -ENOSPC);
		for (uint32_t j = 0; j < asks[i]; j++)
			assert_non_null(get4(s, j, 2));
		ct_shard_free(s);
	}
}

static void
test_bad_config(void **state)
{
	struct ct_config c;

	ct_config_defaults(&c);
	c.capacity = 0;
	assert_null(ct_shard_create(&c));
	assert_int_equal(rte_errno, EINVAL);
	ct_config_defaults(&c);
	c.hz = 0;
	assert_null(ct_shard_create(&c));
	assert_null(ct_shard_create(NULL));
	struct ct_shard *s = mk_shard(64, 0, NULL);
	struct ct_key4 k = k4(1);
	int err = 0;
	assert_null(ct_insert(s, CT_V4, &k, 1, IPPROTO_TCP, CT_ST_NONE, false, 1, NULL, &err));
	assert_int_equal(err, -EINVAL);
	assert_int_equal(ct_delete_pos(s, CT_V4, 1u << 30), -ENOENT);
	assert_null(ct_entry_at(s, CT_V4, 5));
	ct_shard_free(s);
}

int
main(void)
{
	char prefix[64];	/* its own runtime directory, removed at exit */

	char *eal[] = {"test_ct", "--no-pci", "--no-huge", "--no-shconf", "-m", "512",
		       "--log-level=lib.eal:error", "-l", "0",
		       fg_test_eal_prefix(prefix, sizeof(prefix), "fgtct")};

	if (rte_eal_init(RTE_DIM(eal), eal) < 0) {
		fprintf(stderr, "EAL init failed: %s\n", rte_strerror(rte_errno));
		return 1;
	}
	fg_test_eal_started();
	struct CMUnitTest tests[128];
	size_t n = 0;
	static char names[128][96];

#define ADD(f) tests[n++] = (struct CMUnitTest)cmocka_unit_test(f)
	ADD(test_insert_lookup_delete_v4);
	ADD(test_insert_lookup_v6);
	ADD(test_reinsert_keeps_live_entry);
	ADD(test_removal_seq_tells_stale_hits);
	ADD(test_both_directions);
	for (size_t i = 0; i < RTE_DIM(tcp_cases); i++) {
		snprintf(names[n], sizeof(names[n]), "tcp: %s", tcp_cases[i].name);
		tests[n] = (struct CMUnitTest)cmocka_unit_test_prestate(test_tcp_transition,
									  (void *)&tcp_cases[i]);
		tests[n].name = names[n];
		n++;
	}
	ADD(test_update_live_counts_and_assured);
	ADD(test_touch_fast_path);
	ADD(test_nat_handshake_proves_both_sides);
	ADD(test_nat_blind_rst_fin_spray);
	ADD(test_spoofed_handshakes_evictable);
	ADD(test_fin_then_syn_reopens);
	ADD(test_dsr_blind_rst_keeps_flow);
	ADD(test_seq_plausible);
	ADD(test_nat_synack_reopens);
	ADD(test_nat_syn_reopen_forgets_window);
	ADD(test_initial_states);
	ADD(test_udp_becomes_stream);
	for (size_t i = 0; i < RTE_DIM(timeout_states); i++) {
		snprintf(names[n], sizeof(names[n]), "timeout: %s",
			 ct_state_names[timeout_states[i]]);
		tests[n] = (struct CMUnitTest)cmocka_unit_test_prestate(test_timeout_state,
									  (void *)&timeout_states[i]);
		tests[n].name = names[n];
		n++;
	}
	ADD(test_expired_twice_in_burst);
	ADD(test_insert_reply_keeps_its_flow);
	ADD(test_flow_only_reads_flows_region);
	ADD(test_capacity_counts_flows);
	ADD(test_early_drop_oldest_of_both);
	ADD(test_default_timeouts_documented);
	ADD(test_deadline_follows_state_and_activity);
	ADD(test_expire_bounded_per_call);
	ADD(test_expire_pass_per_period);
	for (size_t i = 0; i < RTE_DIM(full_cases); i++) {
		snprintf(names[n], sizeof(names[n]), "full: %s", full_cases[i].name);
		tests[n] = (struct CMUnitTest)cmocka_unit_test_prestate(test_table_full,
									  (void *)&full_cases[i]);
		tests[n].name = names[n];
		n++;
	}
	ADD(test_colliding_hash_fills_to_capacity);
	ADD(test_flood_mode);
	ADD(test_spoofed_ack_flood);
	for (size_t i = 0; i < RTE_DIM(pickup_cases); i++) {
		snprintf(names[n], sizeof(names[n]), "pickup: %s", pickup_cases[i].name);
		tests[n] = (struct CMUnitTest)cmocka_unit_test_prestate(test_pickup_probation,
									  (void *)&pickup_cases[i]);
		tests[n].name = names[n];
		n++;
	}
	ADD(test_counters);
	ADD(test_walk_while_owner_writes);
	ADD(test_capacity_exact);
	ADD(test_churn_model);
	ADD(test_destroy_hook);
	ADD(test_state_hook_and_life);
	ADD(test_bad_config);
#undef ADD
	int rc = _cmocka_run_group_tests("conntrack", tests, n, NULL, NULL);
	rte_eal_cleanup();
	return rc;
}
