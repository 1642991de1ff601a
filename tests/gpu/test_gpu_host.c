/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * GPU path, host-side checks that need no GPU (run by every `make test`):
 * the exact hash code (fg_gpu_hash.h, compiled for host and device) and the
 * tables fg_gpu_create uploads, against the CPU libraries; the CPU
 * reference's service/Maglev rules; and the fuzz generator's coverage (so
 * the device test's 10M frames keep reaching every parser verdict).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ct.h"
#include "fg_gpu.h"
#include "fg_gpu_ref.h"
#include "fg_gpu_hash.h"
#include "fg_maglev.h"
#include "fg_rss.h"

static int fails;

#define CHECK(c, ...)                                                       \
	do {                                                                \
		if (!(c)) {                                                 \
			fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
			fprintf(stderr, __VA_ARGS__);                       \
			fprintf(stderr, "\n");                              \
			fails++;                                            \
		}                                                           \
	} while (0)

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint32_t r32(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)(rng >> 16);
}

static uint32_t crc[4][256], rss[2][256];

static void case_crc_matches_ct_hash_crc(void)
{
	for (int i = 0; i < 200000; i++) {
		uint32_t w[12];
		unsigned int nw = (i & 1) ? 12 : 4;

		for (unsigned int j = 0; j < nw; j++)
			w[j] = r32();
		uint32_t a = fg_gpu_crc32c_words(w, nw, crc);
		uint32_t b = ct_hash_crc(w, nw * 4);

		CHECK(a == b, "crc %u words: gpu %08x cpu %08x", nw, a, b);
		if (fails > 5)
			return;
	}
}

static void case_rss_tables_match_lib(void)
{
	CHECK(memcmp(rss, fg_rss_table, sizeof(rss)) == 0,
	      "fg_gpu_rss_tables differs from fg_rss_table");
}

static void case_toeplitz_matches_rss_hash(void)
{
	for (int i = 0; i < 100000; i++) {
		struct ct_key4 k4;
		struct ct_key6 k6;
		uint32_t w[12];

		memset(&k4, 0, sizeof(k4));
		memset(&k6, 0, sizeof(k6));
		k4.saddr = r32();
		k4.daddr = r32();
		k4.sport = (uint16_t)r32();
		k4.dport = (uint16_t)r32();
		memcpy(w, &k4, 16);
		CHECK(fg_gpu_toeplitz_words(w, 3, rss) ==
		      fg_rss_hash_v4(k4.saddr, k4.daddr, k4.sport, k4.dport),
		      "toeplitz v4");
		for (int j = 0; j < 16; j++) {
			k6.saddr[j] = (uint8_t)r32();
			k6.daddr[j] = (uint8_t)r32();
		}
		k6.sport = (uint16_t)r32();
		k6.dport = (uint16_t)r32();
		memcpy(w, &k6, 48);
		CHECK(fg_gpu_toeplitz_words(w, 9, rss) ==
		      fg_rss_hash_v6(k6.saddr, k6.daddr, k6.sport, k6.dport),
		      "toeplitz v6");
		if (fails > 5)
			return;
	}
}

static void case_ref_service_and_maglev(void)
{
	struct fg_gpu_service s[2];
	uint32_t table[13 + 13], w[3] = { 1, 2, 3 };
	uint64_t keys[3] = { 11, 22, 33 };
	uint16_t reta[FG_GPU_RETA_SIZE];
	uint64_t g = 7;
	int hit = 0, miss = 0;

	memset(s, 0, sizeof(s));
	s[0].family = CT_V4;
	s[0].proto = 6;
	s[0].port = __builtin_bswap16(80);
	s[0].vip[0] = 10;
	s[0].vip[3] = 1;
	s[0].m = 13;
	s[1] = s[0];
	s[1].proto = 17;
	s[1].table_off = 13;
	CHECK(fg_maglev_build(w, keys, 3, 13, table) == 0, "maglev");
	CHECK(fg_maglev_build(w, keys, 3, 13, table + 13) == 0, "maglev");
	fg_rss_reta_fill(reta, 3);
	for (int i = 0; i < 20000; i++) {
		uint8_t b[256];
		uint32_t len = fg_gpu_gen_frame(&g, b, sizeof(b), s, 2,
						FG_GPU_GEN_VALID);
		struct fg_gpu_result r;
		struct fg_pkt p;

		fg_gpu_ref_one(b, len, reta, s, 2, table, &r);
		fg_pkt_parse(b, len, &p);
		CHECK(memcmp(&r.pkt, &p, sizeof(p)) == 0, "pkt differs");
		if (p.kind == FG_PK_DROP) {
			CHECK(r.sig == 0 && r.rss == 0 && r.worker == 0 &&
			      r.service == FG_GPU_NO_SERVICE &&
			      r.backend == FG_GPU_NO_BACKEND, "drop fields");
			continue;
		}
		CHECK(r.sig == fg_pkt_sig(&p), "sig");
		CHECK(r.rss == fg_rss_hash(&p), "rss");
		CHECK(r.worker == reta[r.rss % FG_GPU_RETA_SIZE], "worker");
		if (p.family == CT_V4 && p.key.k4.daddr == 0x0100000a &&
		    p.key.k4.dport == s[0].port &&
		    (p.key.k4.proto == 6 || p.key.k4.proto == 17)) {
			int si = p.key.k4.proto == 6 ? 0 : 1;

			CHECK(r.service == si, "service %u", r.service);
			CHECK(r.backend == table[s[si].table_off + r.sig % 13],
			      "backend");
			hit++;
		} else {
			CHECK(r.service == FG_GPU_NO_SERVICE, "unexpected service");
			CHECK(r.backend == FG_GPU_NO_BACKEND, "unexpected backend");
			miss++;
		}
		if (fails > 5)
			return;
	}
	CHECK(hit > 1000 && miss > 1000, "generator: %d VIP hits, %d misses",
	      hit, miss);
}

static void case_generator_reaches_every_verdict(void)
{
	unsigned long kinds[FG_PK_MAX] = { 0 }, drops[FG_DROP_MAX] = { 0 };
	uint64_t g = 99;
	int reasons = 0;

	for (int i = 0; i < 300000; i++) {
		uint8_t b[2048];
		uint32_t len = fg_gpu_gen_frame(&g, b, sizeof(b), NULL, 0,
						FG_GPU_GEN_FUZZ);
		struct fg_pkt p;

		CHECK(len <= sizeof(b), "frame longer than room");
		fg_pkt_parse(b, len, &p);
		kinds[p.kind]++;
		if (p.kind == FG_PK_DROP)
			drops[p.drop]++;
	}
	for (int k = 0; k < FG_PK_MAX; k++)
		CHECK(kinds[k] > 0, "kind %s never generated", fg_pkt_kind_name(k));
	for (int d = 0; d < FG_DROP_MAX; d++)
		reasons += drops[d] > 0;
	CHECK(reasons >= 22, "only %d drop reasons generated", reasons);
	printf("generator: %d distinct drop reasons in 300k fuzz frames\n",
	       reasons);
}

static const struct {
	const char *name;
	void (*fn)(void);
} cases[] = {
	{ "crc_matches_ct_hash_crc", case_crc_matches_ct_hash_crc },
	{ "rss_tables_match_lib", case_rss_tables_match_lib },
	{ "toeplitz_matches_rss_hash", case_toeplitz_matches_rss_hash },
	{ "ref_service_and_maglev", case_ref_service_and_maglev },
	{ "generator_reaches_every_verdict", case_generator_reaches_every_verdict },
};

int main(void)
{
	fg_gpu_crc_tables(crc);
	fg_gpu_rss_tables(rss);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int before = fails;

		cases[i].fn();
		printf("%-34s %s\n", cases[i].name, fails == before ? "ok" : "FAIL");
	}
	return fails ? 1 : 0;
}
