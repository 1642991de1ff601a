/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Flow records (conntrack/ct_rec.h): the byte format (seeded random
 * records round-trip, every truncation and every out-of-range field
 * refused) and the way back into a shard (a shard's flows of every kind,
 * walked, encoded, decoded and restored into a shard with another clock,
 * read back equal and behaving as before: windows, probation, expiry).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <cmocka.h>

#include <rte_common.h>
#include <rte_eal.h>

#include "ct.h"
#include "ct_rec.h"
#include "../fg_test_eal.h"
#include "ct_fixture.h"

static uint64_t g_seed = 0x35f10a6a7eull;

static uint64_t
rnd(void)
{
	/* xorshift64*: the same records every run for a seed */
	g_seed ^= g_seed >> 12;
	g_seed ^= g_seed << 25;
	g_seed ^= g_seed >> 27;
	return g_seed * 0x2545F4914F6CDD1Dull;
}

static struct ct_shard *
mk(uint32_t cap, uint64_t hz)
{
	return ct_fixture_shard(cap, 0, hz, 0, NULL, 0, false);
}

/* ---- the byte format -------------------------------------------------- */

static void
rand_key(uint8_t fam, uint8_t proto, void *key)
{
	if (fam == CT_V4) {
		struct ct_key4 *k = key;

		memset(k, 0, sizeof(*k));
		k->saddr = (uint32_t)rnd();
		k->daddr = (uint32_t)rnd();
		k->sport = (uint16_t)rnd();
		k->dport = (uint16_t)rnd();
		k->proto = proto;
		return;
	}
	struct ct_key6 *k = key;

	memset(k, 0, sizeof(*k));
	for (int i = 0; i < 16; i++) {
		k->saddr[i] = (uint8_t)rnd();
		k->daddr[i] = (uint8_t)rnd();
	}
	k->sport = (uint16_t)rnd();
	k->dport = (uint16_t)rnd();
	k->proto = proto;
}

static void
rand_td(struct ct_rec_td *t)
{
	static const uint8_t fl[] = {0, CT_TD_VALID, CT_TD_HS};

	t->end = (uint32_t)rnd();
	t->win = (uint16_t)rnd();
	t->flags = fl[rnd() % 3];
	t->wscale = t->flags == CT_TD_VALID ? (uint8_t)(rnd() % 15 | (rnd() % 15) << 4)
					    : (uint8_t)rnd();
}

/* A valid record with every unused byte zero (as the decoder leaves it). */
static void
rand_rec(struct ct_rec *r)
{
	static const uint8_t tcp_st[] = {CT_ST_SYN_SENT, CT_ST_SYN_RECV, CT_ST_ESTABLISHED,
		CT_ST_FIN_WAIT, CT_ST_CLOSE_WAIT, CT_ST_LAST_ACK, CT_ST_TIME_WAIT,
		CT_ST_CLOSE, CT_ST_PICKUP};
	uint8_t kind = (uint8_t)(rnd() % 4);

	memset(r, 0, sizeof(*r));
	r->family = (uint8_t)(rnd() % 2);
	r->flags = (uint8_t)(rnd() & (CT_REC_F_COUNTERS | CT_REC_F_ASSURED |
				     CT_REC_F_SEEN_REPLY | CT_REC_F_MIDSTREAM));
	switch (kind) {
	case 0: /* TCP, DSR or NAT */
		r->proto = IPPROTO_TCP;
		r->state = tcp_st[rnd() % RTE_DIM(tcp_st)];
		r->flags |= rnd() & 1 ? CT_REC_F_NAT : 0;
		break;
	case 1:
		r->proto = IPPROTO_UDP;
		r->state = rnd() & 1 ? CT_ST_UDP : CT_ST_UDP_STREAM;
		r->flags |= rnd() & 1 ? CT_REC_F_NAT : 0;
		break;
	case 2: /* a fragment-follow entry */
		r->proto = rnd() & 1 ? IPPROTO_TCP : IPPROTO_UDP;
		r->state = CT_ST_OTHER;
		r->flags |= CT_REC_F_FRAG;
		break;
	default:
		r->proto = IPPROTO_SCTP;
		r->state = CT_ST_OTHER;
		break;
	}
	rand_key(r->family, r->proto, &r->key);
	for (int i = 0; i < (r->family == CT_V4 ? 4 : 16); i++)
		r->backend[i] = (uint8_t)rnd();
	r->backend_port = (uint16_t)rnd();
	r->service_port = (uint16_t)rnd();
	r->idle_ms = (uint32_t)rnd();
	r->life_ms = (uint32_t)rnd();
	r->probation_ms = (uint32_t)rnd();
	rand_td(&r->td);
	if (r->flags & CT_REC_F_NAT) {
		rand_key(r->family, r->proto, &r->reply);
		rand_td(&r->reply_td);
	}
	if (r->flags & CT_REC_F_COUNTERS) {
		r->packets = rnd();
		r->bytes = rnd();
		if (r->flags & CT_REC_F_NAT) {
			r->reply_packets = rnd();
			r->reply_bytes = rnd();
		}
	}
}

/* 20,000 seeded records: encode, length as announced, decode equal;
 * every prefix of each is refused as short. */
static void
t_codec_roundtrip(void **state)
{
	uint8_t buf[CT_REC_LEN_MAX + 8];

	for (int i = 0; i < 20000; i++) {
		struct ct_rec r, d;
		int n;

		rand_rec(&r);
		n = ct_rec_encode(&r, buf, sizeof(buf));
		assert_true(n >= CT_REC_LEN_MIN && n <= CT_REC_LEN_MAX);
		assert_int_equal((size_t)n, ct_rec_len(buf[0], buf[1]));
		assert_int_equal(ct_rec_encode(&r, buf, (size_t)n - 1), -ENOSPC);
		assert_int_equal(ct_rec_decode(buf, (size_t)n + 8, &d), n);
		assert_memory_equal(&r, &d, sizeof(r));
		for (int k = 0; k < n; k++)
			assert_int_equal(ct_rec_decode(buf, (size_t)k, &d), -EMSGSIZE);
	}
}

/* One byte of a valid record changed, and what the decoder says. */
struct mut {
	const char *what;
	size_t off;
	uint8_t val;
};

static void
t_codec_refuses(void **state)
{
	/* offsets in an IPv4 TCP NAT record with counters (flags 0x07) */
	static const struct mut muts[] = {
		{"family 5", 0, 5}, {"family 0", 0, 0},
		{"unknown flag", 1, 0x47}, {"NAT and FRAG", 1, 0x27},
		{"state NONE", 3, 0}, {"state past the last", 3, CT_ST_MAX},
		{"a UDP state for TCP", 3, CT_ST_UDP}, {"OTHER for TCP", 3, CT_ST_OTHER},
		{"NAT for ICMP", 2, IPPROTO_ICMP},
		{"window flags unknown", 27, 0x04}, {"VALID and HS", 27, 0x03},
		{"a known window's scale 15", 26, 0x0f},
		{"reply window flags unknown", 28 + 12 + 4 + 12 + 7, 0x80},
	};
	struct ct_rec r, d;
	uint8_t buf[CT_REC_LEN_MAX];
	int n;

	memset(&r, 0, sizeof(r));
	r.family = CT_V4;
	r.flags = CT_REC_F_NAT | CT_REC_F_COUNTERS | CT_REC_F_ASSURED;
	r.proto = IPPROTO_TCP;
	r.state = CT_ST_ESTABLISHED;
	rand_key(CT_V4, IPPROTO_TCP, &r.key);
	rand_key(CT_V4, IPPROTO_TCP, &r.reply);
	r.td = (struct ct_rec_td){.end = 1, .win = 2, .wscale = 7, .flags = CT_TD_VALID};
	r.reply_td = r.td;
	n = ct_rec_encode(&r, buf, sizeof(buf));
	assert_int_equal(n, 96);
	assert_int_equal(ct_rec_decode(buf, (size_t)n, &d), n);
	for (size_t i = 0; i < RTE_DIM(muts); i++) {
		uint8_t b[CT_REC_LEN_MAX];
		int rc;

		memcpy(b, buf, (size_t)n);
		b[muts[i].off] = muts[i].val;
		rc = ct_rec_decode(b, (size_t)n, &d);
		if (rc != -EINVAL)
			fail_msg("%s: decode returned %d, not -EINVAL", muts[i].what, rc);
	}
	/* and the encoder will not write what the decoder refuses */
	d = r;
	d.state = CT_ST_UDP;
	assert_int_equal(ct_rec_encode(&d, buf, sizeof(buf)), -EINVAL);
	d = r;
	d.flags |= CT_REC_F_FRAG;
	assert_int_equal(ct_rec_encode(&d, buf, sizeof(buf)), -EINVAL);
	assert_int_equal(ct_rec_len(4, 0), CT_REC_LEN_MIN);
	assert_int_equal(ct_rec_len(6, CT_REC_F_ALL & ~CT_REC_F_FRAG), CT_REC_LEN_MAX);
	assert_int_equal(ct_rec_len(5, 0), 0);
}

/* ---- into a shard and back --------------------------------------------- */

#define HZ_A 1000ull          /* shard A: 1 tick = 1 ms */
#define HZ_B 2000000000ull    /* shard B: a 2 GHz TSC */

#define k4(i, proto) ct_fixture_k4(i, proto)
#define seg(...) ct_fixture_seg(__VA_ARGS__)

/* A NAT flow k4(i) / reply k4(i + 100000) taken through @p steps of its
 * handshake (1: SYN, 2: + SYN-ACK, 3: + ACK, 4: + a FIN). */
static struct ct_entry *
nat(struct ct_shard *s, uint32_t i, int steps, uint64_t now)
{
	struct ct_key4 k = k4(i, IPPROTO_TCP), rk = k4(i + 100000, IPPROTO_TCP);
	uint32_t pos, rpos;
	struct ct_entry *e = ct_insert(s, CT_V4, &k, ct_key4_hash(s, &k), IPPROTO_TCP,
				       CT_ST_SYN_SENT, false, now, &pos, NULL);
	struct ct_entry *re;

	assert_non_null(e);
	e->nat_port = rk.dport;
	re = ct_insert_reply(s, CT_V4, &rk, ct_key4_hash(s, &rk), pos, now, &rpos, NULL);
	assert_non_null(re);
	seg(s, e, false, CT_TCP_SYN, 1000 * i, 0, 64240, 7, now, NULL);
	if (steps >= 2)
		seg(s, re, true, CT_TCP_SYN | CT_TCP_ACK, 5000 * i, 1000 * i + 1, 65160, 7,
		    now + 1, NULL);
	if (steps >= 3) {
		seg(s, e, false, CT_TCP_ACK, 1000 * i + 1, 5000 * i + 1, 502,
		    CT_SEG_NO_WSCALE, now + 2, NULL);
		seg(s, re, true, CT_TCP_ACK, 5000 * i + 1, 1000 * i + 1, 500,
		    CT_SEG_NO_WSCALE, now + 3, NULL);
	}
	if (steps >= 4)
		seg(s, e, false, CT_TCP_FIN | CT_TCP_ACK, 1000 * i + 1, 5000 * i + 1, 502,
		    CT_SEG_NO_WSCALE, now + 4, NULL);
	return e;
}

/* A DSR TCP flow: SYN, ACK, then @p more packets 1 s apart. */
static struct ct_entry *
dsr(struct ct_shard *s, uint32_t i, int more, uint64_t now)
{
	struct ct_key4 k = k4(i, IPPROTO_TCP);
	struct ct_entry *e = ct_insert(s, CT_V4, &k, ct_key4_hash(s, &k), IPPROTO_TCP,
				       CT_ST_SYN_SENT, false, now, NULL, NULL);

	assert_non_null(e);
	e->backend = i;
	seg(s, e, false, CT_TCP_SYN, 77 * i, 0, 64240, 7, now, NULL);
	seg(s, e, false, CT_TCP_ACK, 77 * i + 1, 1, 502, CT_SEG_NO_WSCALE, now + 1, NULL);
	for (int j = 1; j <= more; j++)
		seg(s, e, false, CT_TCP_ACK, 77 * i + 1 + 100 * (uint32_t)j, 1, 502,
		    CT_SEG_NO_WSCALE, now + 1000 * (uint64_t)j, NULL);
	return e;
}

/* Shard A's flows, every kind a restart must carry. */
static void
populate(struct ct_shard *a)
{
	struct ct_key4 k;
	struct ct_key6 k6;
	struct ct_entry *e;

	dsr(a, 1, 0, 100);            /* ESTABLISHED on probation */
	dsr(a, 2, 4, 100);            /* assured */
	nat(a, 3, 1, 200);            /* SYN_SENT: the reply entry holds the ISN */
	nat(a, 4, 2, 200);            /* SYN_RECV */
	nat(a, 5, 3, 200);            /* ESTABLISHED, both windows */
	nat(a, 6, 4, 200);            /* FIN_WAIT: closing, listed again */
	k = k4(7, IPPROTO_UDP);       /* UDP stream */
	e = ct_insert(a, CT_V4, &k, ct_key4_hash(a, &k), IPPROTO_UDP, CT_ST_UDP, false, 300,
		      NULL, NULL);
	ct_update(a, e, false, 0, 100, 301);
	k = k4(8, IPPROTO_UDP);       /* a fragment-follow entry */
	e = ct_insert(a, CT_V4, &k, ct_key4_hash(a, &k), IPPROTO_UDP, CT_ST_OTHER, false, 400,
		      NULL, NULL);
	e->flags |= CT_F_FRAG;
	k = k4(9, IPPROTO_TCP);       /* a pickup (no SYN seen) */
	e = ct_insert(a, CT_V4, &k, ct_key4_hash(a, &k), IPPROTO_TCP, CT_ST_PICKUP, false, 500,
		      NULL, NULL);
	e->flags |= CT_F_MIDSTREAM;
	memset(&k6, 0, sizeof(k6));   /* IPv6 DSR, assured */
	k6.saddr[0] = 0xfd;
	k6.daddr[15] = 1;
	k6.sport = htons(4242);
	k6.dport = htons(80);
	k6.proto = IPPROTO_TCP;
	e = ct_insert(a, CT_V6, &k6, ct_key6_hash(a, &k6), IPPROTO_TCP, CT_ST_ESTABLISHED,
		      true, 600, NULL, NULL);
	e->td_end = 99;
	e->td_flags = CT_TD_VALID;
	assert_int_equal(ct_check(a), 0);
}

/* A synced copy (ct_entry_relearn): each direction's first segment other
 * than an RST sets its window wherever the stream is now; the next far
 * jump is out of window again; a record of it encodes (the bit stays
 * home). */
static void
t_relearn(void **state)
{
	struct ct_shard *s = mk(1024, HZ_A);
	struct ct_entry *e = nat(s, 5, 3, 200), *re;
	struct ct_key4 k = k4(5, IPPROTO_TCP);
	uint8_t buf[CT_REC_LEN_MAX], oow = 0;
	struct ct_rec r;
	uint32_t pos;

	(void)state;
	assert_non_null(ct_lookup(s, CT_V4, &k, ct_key4_hash(s, &k), 210, &pos));
	re = ct_entry_at(s, CT_V4, e->peer);
	assert_non_null(re);
	assert_int_equal(e->state, CT_ST_ESTABLISHED);
	/* the record's window: 50 MB further is out of it */
	seg(s, e, false, CT_TCP_ACK, 5001 + 50000000, 25001, 502, CT_SEG_NO_WSCALE, 210, &oow);
	assert_int_equal(oow, CT_OOW_PASS);
	ct_entry_relearn(s, CT_V4, pos);
	assert_true(e->td_flags & CT_TD_RELEARN);
	assert_true(re->td_flags & CT_TD_RELEARN);
	ct_rec_fill_entry(s, CT_V4, &k, e, 211, &r);
	assert_true(ct_rec_encode(&r, buf, sizeof(buf)) > 0);
	/* an RST out of the record's window is still not believed */
	seg(s, re, true, CT_TCP_RST, 25001 + 70000000, 0, 500, CT_SEG_NO_WSCALE, 211, &oow);
	assert_int_equal(oow, CT_OOW_DROP);
	assert_int_equal(e->state, CT_ST_ESTABLISHED);
	/* the stream's segments, each direction: taken where they are */
	oow = 0;
	seg(s, e, false, CT_TCP_ACK, 5001 + 50000000, 25001 + 70000000, 502,
	    CT_SEG_NO_WSCALE, 212, &oow);
	assert_int_equal(oow, 0);
	assert_int_equal(e->td_end, 5001 + 50000000);
	assert_false(e->td_flags & CT_TD_RELEARN);
	seg(s, re, true, CT_TCP_ACK, 25001 + 70000000, 5001 + 50000000, 500,
	    CT_SEG_NO_WSCALE, 213, &oow);
	assert_int_equal(oow, 0);
	assert_int_equal(re->td_end, 25001 + 70000000);
	assert_false(re->td_flags & CT_TD_RELEARN);
	assert_int_equal(e->last_seen, 213);
	/* learnt: a jump as far again is out of window */
	seg(s, e, false, CT_TCP_ACK, 5001 + 100000000, 25001, 502, CT_SEG_NO_WSCALE, 214, &oow);
	assert_int_equal(oow, CT_OOW_PASS);
	assert_int_equal(ct_check(s), 0);
	ct_shard_free(s);
}

struct coll {
	struct ct_shard *s;
	uint64_t now;
	struct ct_rec r[64];
	struct ct_flow f[64];
	unsigned int n;
};

static int
collect(const struct ct_flow *f, void *arg)
{
	struct coll *c = arg;

	assert_true(c->n < RTE_DIM(c->r));
	c->f[c->n] = *f;
	ct_rec_fill(c->s, f, c->now, &c->r[c->n++]);
	return 0;
}

static void
walk(struct ct_shard *s, uint64_t now, struct coll *c)
{
	uint64_t cur = 0;

	memset(c, 0, sizeof(*c));
	c->s = s;
	c->now = now;
	while (cur != CT_WALK_DONE)
		ct_walk(s, &cur, 1u << 20, now, collect, c);
}

static const struct ct_rec *
find(const struct coll *c, const struct ct_rec *r)
{
	for (unsigned int i = 0; i < c->n; i++)
		if (c->r[i].family == r->family &&
		    !memcmp(&c->r[i].key, &r->key, r->family == CT_V4 ?
			    sizeof(struct ct_key4) : sizeof(struct ct_key6)))
			return &c->r[i];
	return NULL;
}

/* A's flows through bytes into B (another clock, 7 s later): B holds the
 * same flows with the same state, flags, windows, counters and ids, and
 * the same times (to the millisecond). */
static void
t_restore_roundtrip(void **state)
{
	struct ct_shard *a = mk(64, HZ_A), *b = mk(64, HZ_B);
	uint64_t now_a = 10000, now_b = 5 * HZ_B;
	static struct coll ca, cb;
	uint8_t buf[64 * CT_REC_LEN_MAX];
	size_t len = 0;

	populate(a);
	walk(a, now_a, &ca);
	assert_int_equal(ca.n, 10);
	for (unsigned int i = 0; i < ca.n; i++) {
		int n = ct_rec_encode(&ca.r[i], buf + len, sizeof(buf) - len);

		assert_true(n > 0);
		len += (size_t)n;
	}
	for (size_t off = 0; off < len;) {
		struct ct_rec r;
		struct ct_rec_ids ids = {.service = 7, .nat_addr = 1};
		int n = ct_rec_decode(buf + off, len - off, &r);

		assert_true(n > 0);
		off += (size_t)n;
		ids.backend = 1000 + ntohs(r.key.k4.sport);
		assert_int_equal(ct_rec_restore(b, &r, &ids, now_b, NULL), 0);
	}
	assert_int_equal(ct_check(b), 0);
	assert_int_equal(ct_count(b), ct_count(a));
	const struct ct_stats *sa = ct_stats_get(a), *sb = ct_stats_get(b);

	assert_memory_equal(sa->live, sb->live, sizeof(sa->live));
	assert_int_equal(sa->nat_flows, sb->nat_flows);
	walk(b, now_b, &cb);
	assert_int_equal(cb.n, ca.n);
	for (unsigned int i = 0; i < ca.n; i++) {
		const struct ct_rec *x = &ca.r[i], *y = find(&cb, x);
		struct ct_rec xa = *x, ya;

		assert_non_null(y);
		ya = *y;
		/* times: to the millisecond (B's clock converts them) */
		assert_true(xa.idle_ms - ya.idle_ms + 1 <= 2);
		assert_true(xa.life_ms - ya.life_ms + 1 <= 2);
		assert_true(xa.probation_ms - ya.probation_ms + 64 <= 128);
		xa.idle_ms = ya.idle_ms = xa.life_ms = ya.life_ms = 0;
		xa.probation_ms = ya.probation_ms = 0;
		assert_memory_equal(&xa, &ya, sizeof(xa));
	}
	for (unsigned int i = 0; i < cb.n; i++) {
		const struct ct_flow *f = &cb.f[i];

		assert_int_equal(f->e.service, 7);
		assert_int_equal(f->e.backend, 1000 + ntohs(f->k4.sport));
		if (f->has_reply) {
			assert_int_equal(f->e.nat_addr, 1);
			assert_int_equal(f->e.nat_port, f->reply.k4.dport);
		}
		/* listed exactly where A's flow was (unassured or closing) */
		for (unsigned int j = 0; j < ca.n; j++)
			if (ca.f[j].family == f->family &&
			    !memcmp(&ca.f[j].k6, &f->k6, f->family == CT_V4 ? 16 : 48))
				assert_int_equal(ca.f[j].e.flags, f->e.flags);
	}
	ct_shard_free(a);
	ct_shard_free(b);
}

static struct ct_entry *
get(struct ct_shard *s, uint32_t i, uint8_t proto, uint64_t now)
{
	struct ct_key4 k = k4(i, proto);

	return ct_lookup(s, CT_V4, &k, ct_key4_hash(s, &k), now, NULL);
}

/* Restored flows behave as they would have: a NAT flow's window still
 * keeps an off-window RST out and lets its next segment through the fast
 * path; a DSR flow on probation is assured by the packets and the time it
 * had plus the ones it gets; the half-open NAT flow's SYN-ACK must still
 * ack the client's ISN. */
static void
t_restore_behaves(void **state)
{
	struct ct_shard *a = mk(64, HZ_A), *b = mk(64, HZ_A);
	struct coll ca;
	uint64_t now = 20000;
	struct ct_entry *e, *re;
	uint8_t oow;

	populate(a);
	walk(a, 1500, &ca);
	for (unsigned int i = 0; i < ca.n; i++) {
		struct ct_rec_ids ids = {.service = 1, .backend = 2};

		assert_int_equal(ct_rec_restore(b, &ca.r[i], &ids, now, NULL), 0);
	}
	/* NAT 5: ESTABLISHED; the client's next segment in window */
	e = get(b, 5, IPPROTO_TCP, now);
	assert_non_null(e);
	assert_int_equal(seg(b, e, false, CT_TCP_RST, 1000 * 5 + 1 + 0x40000000u, 0, 0,
			     CT_SEG_NO_WSCALE, now, &oow), CT_ST_ESTABLISHED);
	assert_int_equal(oow, CT_OOW_DROP);
	assert_int_equal(seg(b, e, false, CT_TCP_ACK, 1000 * 5 + 101, 5000 * 5 + 1, 502,
			     CT_SEG_NO_WSCALE, now + 1, &oow), CT_ST_ESTABLISHED);
	assert_int_equal(oow, 0);
	/* NAT 3: SYN_SENT; a SYN-ACK acking nothing the client sent is refused,
	 * the right one moves it on */
	re = get(b, 3 + 100000, IPPROTO_TCP, now);
	assert_non_null(re);
	assert_int_equal(seg(b, re, true, CT_TCP_SYN | CT_TCP_ACK, 9, 3001 + 0x10000000u, 65160, 7, now,
			     &oow), CT_ST_SYN_SENT);
	assert_int_equal(oow, CT_OOW_PASS);
	assert_int_equal(seg(b, re, true, CT_TCP_SYN | CT_TCP_ACK, 9, 3001, 65160, 7, now,
			     &oow), CT_ST_SYN_RECV);
	/* DSR 1: on probation since 101 (1.4 s before the walk); two more
	 * packets past 2 s of probation assure it */
	e = get(b, 1, IPPROTO_TCP, now);
	assert_false(e->flags & CT_F_ASSURED);
	seg(b, e, false, CT_TCP_ACK, 79, 1, 502, CT_SEG_NO_WSCALE, now + 100, NULL);
	assert_false(e->flags & CT_F_ASSURED);
	seg(b, e, false, CT_TCP_ACK, 80, 1, 502, CT_SEG_NO_WSCALE, now + 800, NULL);
	assert_true(e->flags & CT_F_ASSURED);
	assert_int_equal(ct_check(b), 0);
	ct_shard_free(a);
	ct_shard_free(b);
}

/* Refusals: expired, already tracked (forward or reply key: nothing of
 * the flow stays), full. */
static void
t_restore_refuses(void **state)
{
	struct ct_shard *a = mk(64, HZ_A), *b = mk(8, HZ_A);
	struct ct_rec_ids ids = {0};
	struct coll ca;
	struct ct_rec r;
	unsigned int ok = 0;

	populate(a);
	walk(a, 1000, &ca);
	r = ca.r[0];
	r.idle_ms = 900 * 1000 + 1;
	r.state = CT_ST_ESTABLISHED;
	assert_int_equal(ct_rec_restore(b, &r, &ids, 1000000, NULL), -ETIME);
	for (unsigned int i = 0; i < ca.n; i++)
		if (ca.r[i].flags & CT_REC_F_NAT) {
			r = ca.r[i];
			break;
		}
	assert_int_equal(ct_rec_restore(b, &r, &ids, 1000000, NULL), 0);
	assert_int_equal(ct_rec_restore(b, &r, &ids, 1000000, NULL), -EEXIST);
	r.key.k4.sport ^= 0x5555;    /* a new forward key, the same reply key */
	assert_int_equal(ct_rec_restore(b, &r, &ids, 1000000, NULL), -EEXIST);
	assert_int_equal(ct_count(b), 2);
	assert_int_equal(ct_check(b), 0);
	for (uint32_t i = 0; i < 20; i++) {
		struct ct_rec d = *find(&ca, &(struct ct_rec){.family = CT_V4,
							     .key.k4 = k4(2, IPPROTO_TCP)});

		d.key.k4.saddr = htonl(0x0b000000u + i);
		ok += ct_rec_restore(b, &d, &ids, 1000000, NULL) == 0;
	}
	assert_int_equal(ok, 7);     /* 8 flows: one is the NAT flow */
	assert_int_equal(ct_check(b), 0);
	ct_shard_free(a);
	ct_shard_free(b);
}

int
main(void)
{
	char prefix[64];
	char *eal[] = {"test_ct_rec", "--no-pci", "--no-huge", "--no-shconf", "-m", "128",
		       "--log-level=lib.eal:error", "-l", "0",
		       fg_test_eal_prefix(prefix, sizeof(prefix), "fgrec")};
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(t_codec_roundtrip),
		cmocka_unit_test(t_codec_refuses),
		cmocka_unit_test(t_restore_roundtrip),
		cmocka_unit_test(t_restore_behaves),
		cmocka_unit_test(t_restore_refuses),
		cmocka_unit_test(t_relearn),
	};

	if (rte_eal_init(RTE_DIM(eal), eal) < 0) {
		fprintf(stderr, "EAL init failed\n");
		return 1;
	}
	fg_test_eal_started();
	int rc = cmocka_run_group_tests(tests, NULL, NULL);

	rte_eal_cleanup();
	return rc;
}
