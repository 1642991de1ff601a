/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer target: raw bytes as a sync message (dataplane/fg_sync.h) ->
 * fg_sync_parse -> every entry decoded, a flow's record restored into a
 * real conntrack shard, a close deleted from it, the replay window fed.
 * Then the same bytes with their MAC made right (so the fuzzer reaches
 * the entries, not only the MAC) go the same way.  Invariants, checked
 * with __builtin_trap(): a message the parser accepts decodes entry by
 * entry to exactly its length, each record re-encodes to its own bytes,
 * the shard stays sound (ct_check), and a message under another key is
 * never accepted.
 *
 * FUZZ_REPLAY adds the hooks of tests/fuzz/fuzz_replay_main.c (linked
 * instead of libFuzzer into fuzz_sync_replay):
 *   fuzz_sync_replay IGNORED --corpus DIR   writes seed messages
 *   fuzz_sync_replay FILE...                 replays each, every prefix
 *                                           and every one-byte change
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <rte_eal.h>

#include "fg_sync.h"
#include "fuzz_fixture.h"

static const struct fg_sync_key key = {.k = "fuzz-sync-shared-key-0123", .len = 25};
static const struct fg_sync_key other = {.k = "fuzz-sync-shared-key-0124", .len = 25};
static struct ct_shard *shard;
static struct fg_sync_replay replay;

static int setup(void)
{
	if (fuzz_eal_init("fuzz_sync", "fgfuzzsy") != 0)
		return -1;
	shard = fuzz_shard_new("fzsync", 256, 64);
	return shard ? 0 : -1;
}

static int drop_all(const struct ct_flow *f, void *arg)
{
	(void)f;
	(void)arg;
	return 1;
}

static void view_check(const struct fg_sync_view *v)
{
	size_t off = 0;

	for (uint32_t i = 0; i < v->count; i++) {
		struct fg_sync_entry e;
		struct ct_rec_ids ids = {.service = (uint16_t)i, .backend = i, .nat_addr = 1};
		uint8_t b[CT_REC_LEN_MAX];
		size_t at = off;
		int n;

		CHECK(fg_sync_entry_next(v, &off, &e) == 0);
		CHECK(e.op == FG_SYNC_OP_FLOW || e.op == FG_SYNC_OP_CLOSE);
		n = ct_rec_encode(&e.rec, b, sizeof(b));
		CHECK(n > 0 && (size_t)n + 1 == off - at);
		CHECK(memcmp(b, v->entries + at + 1, (size_t)n) == 0);
		if (e.op == FG_SYNC_OP_FLOW)
			ct_rec_restore(shard, &e.rec, &ids, 1000000000ull, NULL);
		else
			ct_delete(shard, (enum ct_family)e.rec.family, &e.rec.key,
				  ct_hash_crc(&e.rec.key, e.rec.family == CT_V4 ?
					      sizeof(struct ct_key4) : sizeof(struct ct_key6)));
	}
	CHECK(off == v->entries_len);
	/* a status: no entries, known flags, an echo only with CAUGHT_UP;
	 * a flow message: no status */
	if (v->version == FG_SYNC_VERSION_STATUS) {
		CHECK(v->count == 0 && v->entries_len == 0);
		CHECK(!(v->status & ~(FG_SYNC_ST_READY | FG_SYNC_ST_CAUGHT_UP)));
		CHECK((v->status & FG_SYNC_ST_CAUGHT_UP) || v->echo == 0);
	} else {
		CHECK(v->version == FG_SYNC_VERSION && v->status == 0 && v->echo == 0);
	}
	CHECK(ct_check(shard) == 0);
	fg_sync_replay_check(&replay, v);
	for (uint64_t cur = 0; cur != CT_WALK_DONE;)
		ct_walk(shard, &cur, 1u << 16, 1000000000ull, drop_all, NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int ready;
	struct fg_sync_view v;
	uint8_t *copy;
	unsigned int olen = FG_SYNC_MAC_LEN;

	if (!ready) {
		if (setup())
			abort();
		ready = 1;
	}
	if (fg_sync_parse(data, size, &key, &v) == FG_SYNC_OK)
		view_check(&v);
	if (size < FG_SYNC_HDR_LEN + FG_SYNC_MAC_LEN || size > 65536)
		return 0;
	copy = malloc(size);
	CHECK(copy != NULL);
	memcpy(copy, data, size);
	HMAC(EVP_sha256(), key.k, (int)key.len, copy, size - FG_SYNC_MAC_LEN,
	     copy + size - FG_SYNC_MAC_LEN, &olen);
	if (fg_sync_parse(copy, size, &key, &v) == FG_SYNC_OK)
		view_check(&v);
	CHECK(fg_sync_parse(copy, size, &other, &v) != FG_SYNC_OK);
	free(copy);
	return 0;
}

#ifdef FUZZ_REPLAY
static void seed_rec(struct ct_rec *r, unsigned int k)
{
	memset(r, 0, sizeof(*r));
	r->family = k & 1 ? CT_V6 : CT_V4;
	r->proto = k % 5 == 4 ? IPPROTO_UDP : IPPROTO_TCP;
	r->state = r->proto == IPPROTO_UDP ? CT_ST_UDP_STREAM :
		   k % 3 ? CT_ST_ESTABLISHED : CT_ST_SYN_SENT;
	r->flags = CT_REC_F_COUNTERS | (k % 2 == 0 ? CT_REC_F_NAT : 0);
	fuzz_seed_addrs(r, k);
	r->idle_ms = 10 * k;
	r->life_ms = 1000 * k;
	r->packets = k;
}

/* IGNORED --corpus DIR writes these (tests/fuzz/fuzz_replay_main.c) */
int fuzz_replay_seeds(const char *dir);
int fuzz_replay_seeds(const char *dir)
{
	for (unsigned int f = 0; f < 4; f++) {
		uint8_t buf[FG_SYNC_MSG_MAX];
		struct fg_sync_msg m;
		char path[4096];
		size_t len;
		FILE *fp;

		fg_sync_msg_init(&m, buf, 1 + f, 1700000000000000000ull, 1 + f);
		for (unsigned int k = 0; k < 3 * f + 1; k++) {
			struct ct_rec r;

			seed_rec(&r, k + 7 * f);
			if (fg_sync_msg_add(&m, k % 4 == 3 ? FG_SYNC_OP_CLOSE : FG_SYNC_OP_FLOW,
					    &r) != 0)
				return 1;
		}
		len = fg_sync_msg_finish(&m, &key);
		if (f == 3)   /* a status (version 2): READY | CAUGHT_UP */
			len = fg_sync_msg_status(buf, 2, 1700000000000000001ull, 9,
						 FG_SYNC_ST_READY | FG_SYNC_ST_CAUGHT_UP,
						 fg_sync_epoch_tag(1700000000000000000ull), &key);
		snprintf(path, sizeof(path), "%s/sync-%u", dir, f);
		fp = fopen(path, "w");
		if (fp == NULL || fwrite(buf, 1, len, fp) != len || fclose(fp) != 0) {
			perror(path);
			return 1;
		}
	}
	return 0;
}

/* a seed is a message the parser takes */
int fuzz_replay_seed_ok(const uint8_t *data, size_t size);
int fuzz_replay_seed_ok(const uint8_t *data, size_t size)
{
	struct fg_sync_view v;

	return fg_sync_parse(data, size, &key, &v) == FG_SYNC_OK;
}

/* every one-byte change of a whole message */
extern const size_t fuzz_replay_flips;
const size_t fuzz_replay_flips = FG_SYNC_MSG_MAX;
#endif
