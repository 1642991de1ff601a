/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Sync messages (dataplane/fg_sync.h, issue 35): built and parsed back
 * with seeded random records; every refusal by its name; the replay
 * window; a refused message leaves the receiver's replay state as it was.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>

#include <cmocka.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "fg_sync.h"

static uint64_t g_seed = 0x5f0c35a1ull;

static uint64_t rnd(void)
{
	g_seed ^= g_seed >> 12;
	g_seed ^= g_seed << 25;
	g_seed ^= g_seed >> 27;
	return g_seed * 0x2545F4914F6CDD1Dull;
}

static const struct fg_sync_key key_a = {.k = "0123456789abcdef-shared-key", .len = 27};
static const struct fg_sync_key key_b = {.k = "0123456789abcdef-shared-kez", .len = 27};

static void rand_key(uint8_t fam, uint8_t proto, union ct_key *k)
{
	memset(k, 0, sizeof(*k));
	if (fam == CT_V4) {
		k->k4.saddr = (uint32_t)rnd();
		k->k4.daddr = (uint32_t)rnd();
		k->k4.sport = (uint16_t)rnd();
		k->k4.dport = (uint16_t)rnd();
		k->k4.proto = proto;
		return;
	}
	for (int i = 0; i < 16; i++) {
		k->k6.saddr[i] = (uint8_t)rnd();
		k->k6.daddr[i] = (uint8_t)rnd();
	}
	k->k6.sport = (uint16_t)rnd();
	k->k6.dport = (uint16_t)rnd();
	k->k6.proto = proto;
}

/* A valid record, DSR or NAT, TCP or UDP, either family. */
static void rand_rec(struct ct_rec *r)
{
	static const uint8_t st[] = {CT_ST_SYN_SENT, CT_ST_ESTABLISHED, CT_ST_FIN_WAIT,
				     CT_ST_TIME_WAIT, CT_ST_PICKUP};

	memset(r, 0, sizeof(*r));
	r->family = (uint8_t)(rnd() % 2);
	r->proto = rnd() % 3 ? IPPROTO_TCP : IPPROTO_UDP;
	r->state = r->proto == IPPROTO_TCP ? st[rnd() % 5] : CT_ST_UDP_STREAM;
	r->flags = (uint8_t)((rnd() & 1 ? CT_REC_F_NAT : 0) |
			     (rnd() & 1 ? CT_REC_F_COUNTERS : 0));
	rand_key(r->family, r->proto, &r->key);
	if (r->flags & CT_REC_F_NAT)
		rand_key(r->family, r->proto, &r->reply);
	for (int i = 0; i < (r->family == CT_V4 ? 4 : 16); i++)
		r->backend[i] = (uint8_t)rnd();
	r->backend_port = (uint16_t)rnd();
	r->service_port = (uint16_t)rnd();
	r->idle_ms = (uint32_t)rnd() % 100000;
	r->life_ms = (uint32_t)rnd();
	if (r->flags & CT_REC_F_COUNTERS) {
		r->packets = rnd();
		r->bytes = rnd();
		if (r->flags & CT_REC_F_NAT)
			r->reply_bytes = rnd();
	}
}

/* A full message of random entries; their records in @p recs. */
static size_t build(uint8_t *buf, const struct fg_sync_key *k, uint32_t node,
		    uint64_t epoch, uint64_t seq, struct fg_sync_entry *ents,
		    uint16_t *count)
{
	struct fg_sync_msg m;

	fg_sync_msg_init(&m, buf, node, epoch, seq);
	for (;;) {
		struct fg_sync_entry e = {.op = rnd() % 4 ? FG_SYNC_OP_FLOW : FG_SYNC_OP_CLOSE};
		int rc;

		rand_rec(&e.rec);
		rc = fg_sync_msg_add(&m, e.op, &e.rec);
		if (rc == -ENOSPC)
			break;
		assert_int_equal(rc, 0);
		ents[m.count - 1] = e;
	}
	*count = m.count;
	return fg_sync_msg_finish(&m, k);
}

/* The MAC of a changed message made right again (to reach the checks
 * behind it). */
static void remac(uint8_t *buf, size_t len, const struct fg_sync_key *k)
{
	unsigned int olen = FG_SYNC_MAC_LEN;

	HMAC(EVP_sha256(), k->k, (int)k->len, buf, len - FG_SYNC_MAC_LEN,
	     buf + len - FG_SYNC_MAC_LEN, &olen);
}

/* 500 seeded messages: parsed back to their entries, one by one. */
static void t_roundtrip(void **state)
{
	(void)state;
	for (int i = 0; i < 500; i++) {
		uint8_t buf[FG_SYNC_MSG_MAX];
		struct fg_sync_entry ents[FG_SYNC_MSG_MAX / CT_REC_LEN_MIN], e;
		struct fg_sync_view v;
		uint16_t count;
		size_t len = build(buf, &key_a, 7, 1000 + i, 1 + i, ents, &count), off = 0;

		assert_true(len <= FG_SYNC_MSG_MAX);
		assert_true(count >= FG_SYNC_MSG_MAX / (CT_REC_LEN_MAX + 1) - 1);
		assert_int_equal(fg_sync_parse(buf, len, &key_a, &v), FG_SYNC_OK);
		assert_int_equal(v.node, 7);
		assert_int_equal(v.epoch, 1000 + i);
		assert_int_equal(v.seq, 1 + i);
		assert_int_equal(v.count, count);
		for (uint16_t j = 0; j < count; j++) {
			assert_int_equal(fg_sync_entry_next(&v, &off, &e), 0);
			assert_int_equal(e.op, ents[j].op);
			assert_memory_equal(&e.rec, &ents[j].rec, sizeof(e.rec));
		}
		assert_int_equal(off, v.entries_len);
		assert_int_equal(fg_sync_entry_next(&v, &off, &e), -EINVAL);
	}
}

/* Every prefix of a message is refused: truncated (or bad_mac once the
 * header and a MAC's length are there: the MAC covers the length). */
static void t_truncated(void **state)
{
	uint8_t buf[FG_SYNC_MSG_MAX];
	struct fg_sync_entry ents[64];
	struct fg_sync_view v;
	uint16_t count;
	size_t len = build(buf, &key_a, 7, 1, 1, ents, &count);

	(void)state;
	for (size_t n = 0; n < len; n++) {
		enum fg_sync_refuse r = fg_sync_parse(buf, n, &key_a, &v);

		assert_int_equal(r, n < FG_SYNC_HDR_LEN + FG_SYNC_MAC_LEN ?
				 FG_SYNC_truncated : FG_SYNC_bad_mac);
	}
}

/* Each refusal by its name, on a message otherwise valid. */
static void t_refusals(void **state)
{
	uint8_t buf[FG_SYNC_MSG_MAX], b[FG_SYNC_MSG_MAX];
	struct fg_sync_entry ents[64];
	struct fg_sync_view v;
	uint16_t count;
	size_t len = build(buf, &key_a, 7, 1, 1, ents, &count);

	(void)state;
	memcpy(b, buf, len);
	b[0] = 'X';
	assert_int_equal(fg_sync_parse(b, len, &key_a, &v), FG_SYNC_bad_magic);
	memcpy(b, buf, len);
	b[4] = FG_SYNC_VERSION_STATUS + 1;
	remac(b, len, &key_a);
	assert_int_equal(fg_sync_parse(b, len, &key_a, &v), FG_SYNC_bad_version);
	/* a status message has no entries */
	memcpy(b, buf, len);
	b[4] = FG_SYNC_VERSION_STATUS;
	remac(b, len, &key_a);
	assert_int_equal(fg_sync_parse(b, len, &key_a, &v), FG_SYNC_bad_record);
	/* a flow message has no status */
	memcpy(b, buf, len);
	b[12] = FG_SYNC_ST_READY;
	remac(b, len, &key_a);
	assert_int_equal(fg_sync_parse(b, len, &key_a, &v), FG_SYNC_bad_record);
	memcpy(b, buf, len);
	b[5] = CT_REC_VERSION + 1;
	remac(b, len, &key_a);
	assert_int_equal(fg_sync_parse(b, len, &key_a, &v), FG_SYNC_bad_version);
	/* the other key; and every one-bit change of header, entries, MAC */
	assert_int_equal(fg_sync_parse(buf, len, &key_b, &v), FG_SYNC_bad_mac);
	for (size_t i = 6; i < len; i++) {
		memcpy(b, buf, len);
		b[i] ^= (uint8_t)(1u << (i % 8));
		assert_int_equal(fg_sync_parse(b, len, &key_a, &v), FG_SYNC_bad_mac);
	}
	/* authenticated but wrong inside: count, op, record, node 0 */
	memcpy(b, buf, len);
	b[7] ^= 1;
	remac(b, len, &key_a);
	assert_int_equal(fg_sync_parse(b, len, &key_a, &v), FG_SYNC_bad_record);
	memcpy(b, buf, len);
	b[FG_SYNC_HDR_LEN] = 9;
	remac(b, len, &key_a);
	assert_int_equal(fg_sync_parse(b, len, &key_a, &v), FG_SYNC_bad_record);
	memcpy(b, buf, len);
	b[FG_SYNC_HDR_LEN + 1] = 5;         /* the record's family */
	remac(b, len, &key_a);
	assert_int_equal(fg_sync_parse(b, len, &key_a, &v), FG_SYNC_bad_record);
	memcpy(b, buf, len);
	memset(b + 8, 0, 4);
	remac(b, len, &key_a);
	assert_int_equal(fg_sync_parse(b, len, &key_a, &v), FG_SYNC_bad_record);
	/* nothing behind the entries but the MAC */
	memcpy(b, buf, len - FG_SYNC_MAC_LEN);
	b[len - FG_SYNC_MAC_LEN] = 0;
	remac(b, len + 1, &key_a);
	assert_int_equal(fg_sync_parse(b, len + 1, &key_a, &v), FG_SYNC_bad_record);
	for (int i = 1; i < FG_SYNC_REFUSE_MAX; i++)
		assert_non_null(fg_sync_refuse_names[i]);
}

/* The status message: what it says comes back as said; flags it does not
 * know, an echo without CAUGHT_UP, a wrong key are refused by name; a
 * version-1 reader (the previous release) refuses it as bad_version. */
static void t_status(void **state)
{
	uint8_t buf[FG_SYNC_MSG_MAX];
	struct fg_sync_view v;
	uint64_t epoch = 0x1234567890abcdefull;
	size_t len;

	(void)state;
	for (uint8_t f = 0; f <= (FG_SYNC_ST_READY | FG_SYNC_ST_CAUGHT_UP); f++) {
		len = fg_sync_msg_status(buf, 7, 5, 9, f, fg_sync_epoch_tag(epoch), &key_a);
		assert_int_equal(len, FG_SYNC_HDR_LEN + FG_SYNC_MAC_LEN);
		assert_int_equal(fg_sync_parse(buf, len, &key_a, &v), FG_SYNC_OK);
		assert_int_equal(v.version, FG_SYNC_VERSION_STATUS);
		assert_int_equal(v.count, 0);
		assert_int_equal(v.node, 7);
		assert_int_equal(v.epoch, 5);
		assert_int_equal(v.seq, 9);
		assert_int_equal(v.status, f);
		/* the echo only with CAUGHT_UP (the builder drops it otherwise) */
		assert_int_equal(v.echo, f & FG_SYNC_ST_CAUGHT_UP ? fg_sync_epoch_tag(epoch) : 0);
		assert_int_equal(fg_sync_parse(buf, len, &key_b, &v), FG_SYNC_bad_mac);
	}
	len = fg_sync_msg_status(buf, 7, 5, 9, FG_SYNC_ST_READY, 0, &key_a);
	buf[12] |= 0x80;                         /* a flag this build does not know */
	remac(buf, len, &key_a);
	assert_int_equal(fg_sync_parse(buf, len, &key_a, &v), FG_SYNC_bad_record);
	len = fg_sync_msg_status(buf, 7, 5, 9, FG_SYNC_ST_READY, 0, &key_a);
	buf[15] = 1;                             /* an echo without CAUGHT_UP */
	remac(buf, len, &key_a);
	assert_int_equal(fg_sync_parse(buf, len, &key_a, &v), FG_SYNC_bad_record);
	/* epoch tags: 24 bits, and two starts 1 ns apart differ */
	assert_true(fg_sync_epoch_tag(epoch) <= 0xffffff);
	assert_int_not_equal(fg_sync_epoch_tag(epoch), fg_sync_epoch_tag(epoch + 1));
}

/* The replay window: new sequences once, reordering within the window,
 * older epochs never, a newer epoch starts over; a refusal changes
 * nothing. */
static void t_replay(void **state)
{
	struct fg_sync_replay r = {0}, before;
	struct fg_sync_view v = {.node = 7, .epoch = 100, .seq = 10};

	(void)state;
	assert_int_equal(fg_sync_replay_check(&r, &v), FG_SYNC_OK);
	assert_int_equal(fg_sync_replay_check(&r, &v), FG_SYNC_replay);
	v.seq = 12;
	assert_int_equal(fg_sync_replay_check(&r, &v), FG_SYNC_OK);
	v.seq = 11;                               /* late, inside the window */
	assert_int_equal(fg_sync_replay_check(&r, &v), FG_SYNC_OK);
	assert_int_equal(fg_sync_replay_check(&r, &v), FG_SYNC_replay);
	v.seq = 12 + FG_SYNC_REPLAY_WIN;
	assert_int_equal(fg_sync_replay_check(&r, &v), FG_SYNC_OK);
	v.seq = 12;                               /* fell out of the window */
	before = r;
	assert_int_equal(fg_sync_replay_check(&r, &v), FG_SYNC_replay);
	assert_memory_equal(&r, &before, sizeof(r));
	v.epoch = 99;
	v.seq = 1000;
	assert_int_equal(fg_sync_replay_check(&r, &v), FG_SYNC_replay);
	assert_memory_equal(&r, &before, sizeof(r));
	v.epoch = 101;
	v.seq = 1;
	assert_int_equal(fg_sync_replay_check(&r, &v), FG_SYNC_OK);
	assert_int_equal(r.epoch, 101);
	/* seeded: a random order of 0..299 accepts each sequence at most once */
	struct fg_sync_replay q = {0};
	uint8_t seen[300] = {0};

	for (int i = 0; i < 3000; i++) {
		v.epoch = 5;
		v.seq = 1 + rnd() % 300;
		if (fg_sync_replay_check(&q, &v) == FG_SYNC_OK)
			assert_int_equal(seen[v.seq - 1]++, 0);
	}
}

/* The builder refuses bad ops and a full message. */
static void t_builder(void **state)
{
	uint8_t buf[FG_SYNC_MSG_MAX];
	struct fg_sync_msg m;
	struct ct_rec r;

	(void)state;
	rand_rec(&r);
	fg_sync_msg_init(&m, buf, 1, 1, 1);
	assert_int_equal(fg_sync_msg_add(&m, 0, &r), -EINVAL);
	r.state = CT_ST_NONE;
	assert_int_equal(fg_sync_msg_add(&m, FG_SYNC_OP_FLOW, &r), -EINVAL);
	assert_int_equal(m.count, 0);
	assert_int_equal(m.len, FG_SYNC_HDR_LEN);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(t_roundtrip),
		cmocka_unit_test(t_truncated),
		cmocka_unit_test(t_refusals),
		cmocka_unit_test(t_status),
		cmocka_unit_test(t_replay),
		cmocka_unit_test(t_builder),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
