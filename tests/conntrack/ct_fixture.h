/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the conntrack tests (test_ct.c, test_ct_rec.c) build alike, written
 * once: a shard of a given capacity and clock, keys numbered i, a TCP
 * segment with or without sequence numbers.  Include after <cmocka.h>
 * and ct.h.
 */
#ifndef FLOWGATE_TEST_CT_FIXTURE_H
#define FLOWGATE_TEST_CT_FIXTURE_H

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

/* Shard names t0, t1...: each test's shards are distinct. */
static int ct_fixture_seq;

/* A shard of @p cap entries per family and @p rcap reply entries, @p hz
 * ticks a second; @p flood, @p hash_fn, @p budget as ct_config's
 * (0 / NULL: the defaults); its mailbox attached when @p mbox. */
static inline struct ct_shard *
ct_fixture_shard(uint32_t cap, uint32_t rcap, uint64_t hz, uint32_t flood,
		 uint32_t (*hash_fn)(const void *, uint32_t, uint32_t), uint32_t budget,
		 bool mbox)
{
	struct ct_config c;
	char name[24];

	ct_config_defaults(&c);
	snprintf(name, sizeof(name), "t%d", ct_fixture_seq++);
	c.name = name;
	c.capacity = cap;
	c.capacity_v6 = cap;
	c.capacity_reply = rcap;
	c.hz = hz;
	c.flood_rate = flood;
	c.hash_fn = hash_fn;
	if (budget)
		c.expire_budget = budget;
	struct ct_shard *s = ct_shard_create(&c);
	assert_non_null(s);
	if (mbox)
		assert_int_equal(ct_mbox_attach(s), 0);
	return s;
}

/* IPv4 key number @p i of protocol @p proto: 10.x.y.z -> 10.100.0.1:80. */
static inline struct ct_key4
ct_fixture_k4(uint32_t i, uint8_t proto)
{
	struct ct_key4 k;

	memset(&k, 0, sizeof(k));
	k.saddr = htonl(0x0a000000u | (i & 0xffffff));
	k.daddr = htonl(0x0a640001u);
	k.sport = htons((uint16_t)(1024 + (i >> 24) + (i % 50000)));
	k.dport = htons(80);
	k.proto = proto;
	return k;
}

/* ct_touch / ct_update_seg with a segment: sequence and ack numbers,
 * window (CT_SEG_NO_WSCALE: a SYN without the option); @p oow receives
 * g.oow (may be NULL) */
static inline enum ct_state
ct_fixture_seg(struct ct_shard *s, struct ct_entry *e, bool reply, uint8_t flags,
	       uint32_t seq, uint32_t ack, uint16_t win, uint8_t wscale, uint64_t now,
	       uint8_t *oow)
{
	struct ct_seg g = {.seq = seq, .ack = ack, .win = win, .flags = flags,
			   .wscale = wscale};
	enum ct_state st = reply ? ct_update_seg(s, e, true, &g, 60, now) :
				   ct_touch(s, e, false, &g, 60, now);

	if (oow)
		*oow = g.oow;
	return st;
}

#endif /* FLOWGATE_TEST_CT_FIXTURE_H */
