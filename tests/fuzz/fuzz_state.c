/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer target: raw bytes as a state file (dataplane/fg_state.h) ->
 * fg_state_parse -> every flow record decoded and restored into a real
 * conntrack shard, every neighbour read.  Then the same bytes with their
 * checksums made right (so the fuzzer reaches the sections and records,
 * not only the CRC) go the same way.  Invariants, checked with
 * __builtin_trap(): a file the parser accepts decodes record by record to
 * exactly its section (nothing left, nothing past it), each record
 * re-encodes to its own bytes (nothing is read as something else), and
 * the shard it was restored into passes ct_check().
 *
 * FUZZ_REPLAY builds a main() instead:
 *   fuzz_state_replay IGNORED --corpus DIR   writes seed files (valid state
 *                                            files of every record kind)
 *   fuzz_state_replay FILE...                 replays each file, every
 *                                            prefix of it and every
 *                                            one-byte change of its first
 *                                            4 KB (sanitizer builds)
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <rte_eal.h>

#include "fg_state.h"
#include "fuzz_fixture.h"

static int shard_seq;

static struct ct_shard *shard_new(void)
{
	char name[24];

	snprintf(name, sizeof(name), "fz%d", shard_seq++ % 1000000);
	return fuzz_shard_new(name, 64, 16);
}

/* A parsed view: every record decodes, re-encodes to its bytes and is
 * restored (or refused by its own rule) into a shard that stays sound. */
static void view_check(const struct fg_state_view *v)
{
	struct ct_shard *s = shard_new();
	size_t off = 0;

	CHECK(s != NULL);
	for (uint32_t i = 0; i < v->n_flows; i++) {
		struct ct_rec r;
		struct ct_rec_ids ids = {.service = (uint16_t)i, .backend = i, .nat_addr = 1};
		uint8_t b[CT_REC_LEN_MAX];
		int n = ct_rec_decode(v->flows + off, v->flows_len - off, &r);

		CHECK(n > 0);
		CHECK(ct_rec_encode(&r, b, sizeof(b)) == n);
		CHECK(memcmp(b, v->flows + off, (size_t)n) == 0);
		off += (size_t)n;
		ct_rec_restore(s, &r, &ids, 1000000000ull, NULL);
	}
	CHECK(off == v->flows_len);
	CHECK(ct_check(s) == 0);
	for (uint32_t i = 0; i < v->n_neigh; i++) {
		struct fg_state_neigh n;

		fg_state_neigh_get(v, i, &n);
		CHECK(n.family == AF_INET || n.family == AF_INET6);
		CHECK(strlen(n.port) <= FG_STATE_PORT_NAME);
	}
	ct_shard_free(s);
}

/* The checksums of @p b made right wherever its lengths fit. */
static void crc_fix(uint8_t *b, size_t len)
{
	size_t off = FG_STATE_HDR_LEN;

	if (len < FG_STATE_HDR_LEN)
		return;
	fg_state_be32_put(b + 60, fg_state_crc(CT_HASH_SEED, b, 60));
	for (uint32_t s = 0, n = fg_state_be32_get(b + 12); s < n && s < 16; s++) {
		uint64_t blen;

		if (len - off < FG_STATE_SEC_HDR_LEN)
			return;
		blen = (uint64_t)fg_state_be32_get(b + off + 8) << 32 | fg_state_be32_get(b + off + 12);
		off += FG_STATE_SEC_HDR_LEN;
		if (blen > len - off || len - off - blen < 4)
			return;
		fg_state_be32_put(b + off + blen, fg_state_crc(CT_HASH_SEED, b + off, blen));
		off += blen + 4;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int ready;
	struct fg_state_view v;
	uint8_t *copy;

	if (!ready) {
		if (fuzz_eal_init("fuzz_state", "fgfuzzst"))
			abort();
		ready = 1;
	}
	if (fg_state_parse(data, size, &v) == FG_STATE_FILE_OK)
		view_check(&v);
	if (size > (1u << 20))
		return 0;
	copy = malloc(size ? size : 1);
	CHECK(copy != NULL);
	memcpy(copy, data, size);
	crc_fix(copy, size);
	if (fg_state_parse(copy, size, &v) == FG_STATE_FILE_OK)
		view_check(&v);
	free(copy);
	return 0;
}

#ifdef FUZZ_REPLAY
/* ---- seeds ---------------------------------------------------------------- */

static void seed_rec(struct ct_rec *r, unsigned int k)
{
	static const uint8_t tcp[] = {CT_ST_SYN_SENT, CT_ST_SYN_RECV, CT_ST_ESTABLISHED,
				      CT_ST_FIN_WAIT, CT_ST_TIME_WAIT, CT_ST_PICKUP};

	memset(r, 0, sizeof(*r));
	r->family = k & 1 ? CT_V6 : CT_V4;
	r->proto = k % 5 == 4 ? IPPROTO_UDP : IPPROTO_TCP;
	r->state = r->proto == IPPROTO_UDP ? CT_ST_UDP_STREAM : tcp[k % 6];
	r->flags = CT_REC_F_COUNTERS | (k % 3 == 0 ? CT_REC_F_NAT : 0) |
		   (r->state == CT_ST_ESTABLISHED ? CT_REC_F_ASSURED : 0);
	if (k % 7 == 6) {
		r->flags = CT_REC_F_FRAG;
		r->state = CT_ST_OTHER;
	}
	fuzz_seed_addrs(r, k);
	r->idle_ms = 100 * k;
	r->life_ms = 1000 * k;
	if (r->flags & CT_REC_F_ASSURED)
		r->td = (struct ct_rec_td){.end = 1000 + k, .win = 502, .wscale = 7,
					   .flags = CT_TD_VALID};
	if (r->flags & CT_REC_F_NAT)
		r->reply_td = r->state == CT_ST_SYN_SENT ?
			(struct ct_rec_td){.end = 77, .wscale = 0x7f, .flags = CT_TD_HS} :
			(struct ct_rec_td){.end = 5000, .win = 500, .wscale = 0x77,
					   .flags = CT_TD_VALID};
	r->packets = k;
	r->bytes = 60 * k;
}

/* IGNORED --corpus DIR writes these (tests/fuzz/fuzz_replay_main.c) */
int fuzz_replay_seeds(const char *dir);
int fuzz_replay_seeds(const char *dir)
{
	char path[4096];

	for (unsigned int f = 0; f < 4; f++) {
		struct fg_state_writer w;
		FILE *fp;

		snprintf(path, sizeof(path), "%s/state-%u", dir, f);
		fp = fopen(path, "w+");
		if (fp == NULL) {
			perror(path);
			return 1;
		}
		fg_state_writer_init(&w, fp, 2, "seed", 1700000000000000000ull + f);
		fg_state_section(&w, FG_STATE_SEC_FLOWS);
		for (unsigned int k = 0; k < 8 * f + 1; k++) {
			struct ct_rec r;

			seed_rec(&r, k + 11 * f);
			fg_state_put_flow(&w, &r);
		}
		if (f != 1) {
			struct fg_state_neigh n = {.family = f == 2 ? AF_INET6 : AF_INET,
						   .port = "net_af_packet0",
						   .addr = {10, 99, 0, 2},
						   .mac = {2, 0, 0, 0x99, 0, 2}, .age_ms = 1234};

			fg_state_section(&w, FG_STATE_SEC_NEIGH);
			fg_state_put_neigh(&w, &n);
		}
		if (fg_state_writer_finish(&w) != 0 || fclose(fp) != 0) {
			fprintf(stderr, "%s: write failed\n", path);
			return 1;
		}
	}
	return 0;
}

/* a seed is a file the parser takes */
int fuzz_replay_seed_ok(const uint8_t *data, size_t size);
int fuzz_replay_seed_ok(const uint8_t *data, size_t size)
{
	struct fg_state_view v;

	return fg_state_parse(data, size, &v) == FG_STATE_FILE_OK;
}

/* every one-byte change of the first 4 KB */
extern const size_t fuzz_replay_flips;
const size_t fuzz_replay_flips = 4096;
#endif
