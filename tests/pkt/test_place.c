/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * maglev-load placement (pkt/fg_place.h) on real Maglev tables with seeded
 * random scores and tuples: without signals it is plain Maglev bit for bit;
 * a stale candidate gives plain Maglev; every answer is A, B or (both
 * saturated) the least-loaded worker, by the documented rule; near-equal
 * scores keep Maglev's answer; a saturated worker gets no new flows while
 * another is not saturated; an overloaded worker's share falls to about
 * 1/n^2; answers are deterministic.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fg_maglev.h"
#include "fg_place.h"

#define M 65537u
#define NB 4

static uint64_t rng;
static uint32_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)(rng >> 7);
}

static uint32_t *table;
static uint64_t seed;

static int setup(void **state)
{
	(void)state;
	uint32_t w[NB] = { 1, 1, 1, 1 };
	uint64_t keys[NB];
	const char *s = getenv("FG_TEST_SEED");

	seed = s ? strtoull(s, NULL, 0) : 0x12345;
	print_message("seed %llu (FG_TEST_SEED)\n", (unsigned long long)seed);
	rng = seed | 1;
	for (int i = 0; i < NB; i++) {
		uint8_t a[16] = { 10, 1, 0, (uint8_t)(i + 1) };

		keys[i] = fg_maglev_backend_key(a, 8000);
	}
	table = malloc(M * sizeof(*table));
	return table == NULL || fg_maglev_build(w, keys, NB, M, table);
}

static int teardown(void **state)
{
	(void)state;
	free(table);
	return 0;
}

static void fill(struct fg_load_slot *l, uint32_t max_score, uint32_t sat)
{
	for (int i = 0; i < NB; i++) {
		l[i].score_milli = rnd() % (max_score + 1);
		l[i].flags = FG_LOAD_F_FRESH | FG_LOAD_F_USABLE |
			     (sat && l[i].score_milli >= sat ? FG_LOAD_F_SAT : 0);
	}
}

static void test_no_signal_is_maglev(void **state)
{
	(void)state;
	struct fg_load_slot l[NB];
	enum fg_place_how how;

	fill(l, 10000, 0);
	for (int i = 0; i < 100000; i++) {
		uint32_t sig = rnd();

		assert_int_equal(fg_place_pick(table, M, sig, NULL, NB, 1000, &how),
				 table[sig % M]);
		assert_int_equal(how, FG_PLACE_STALE);
		/* one stale candidate: plain Maglev too */
		uint32_t a = table[sig % M], b = table[fg_place_sig2(sig) % M];

		l[rnd() % 2 ? a : b].flags &= ~FG_LOAD_F_FRESH;
		assert_int_equal(fg_place_pick(table, M, sig, l, NB, 1000, &how), a);
		assert_int_equal(how, FG_PLACE_STALE);
		fill(l, 10000, 0);
	}
}

static void test_rule(void **state)
{
	(void)state;
	struct fg_load_slot l[NB];
	enum fg_place_how how, how2;
	uint64_t n_how[5] = { 0 };

	for (int round = 0; round < 2000; round++) {
		uint32_t margin = rnd() % 3000, sat = rnd() % 2 ? 1 + rnd() % 8000 : 0;

		fill(l, 10000, sat);
		for (int i = 0; i < 200; i++) {
			uint32_t sig = rnd();
			uint32_t a = table[sig % M], b = table[fg_place_sig2(sig) % M];
			uint32_t r = fg_place_pick(table, M, sig, l, NB, margin, &how);

			n_how[how]++;
			/* deterministic */
			assert_int_equal(fg_place_pick(table, M, sig, l, NB, margin, &how2), r);
			assert_int_equal(how, how2);
			bool sa = l[a].flags & FG_LOAD_F_SAT, sb = l[b].flags & FG_LOAD_F_SAT;

			switch (how) {
			case FG_PLACE_MAGLEV:
				assert_int_equal(r, a);
				assert_false(sa);
				assert_true(a == b || sb ||
					    l[b].score_milli + margin >= l[a].score_milli);
				break;
			case FG_PLACE_LOAD:
				assert_int_equal(r, b);
				assert_false(sb);
				assert_true(sa || l[b].score_milli + margin < l[a].score_milli);
				break;
			case FG_PLACE_SATURATED:
			{
				/* the least loaded of the unsaturated ones, if any */
				bool any = false;

				assert_true(sa && sb);
				for (int k = 0; k < NB; k++)
					any |= !(l[k].flags & FG_LOAD_F_SAT);
				if (any && (l[r].flags & FG_LOAD_F_SAT))
					fail_msg("seed %llu: a saturated worker took the fallback",
						 (unsigned long long)seed);
				for (int k = 0; k < NB; k++)
					if (!any || !(l[k].flags & FG_LOAD_F_SAT))
						assert_true(l[r].score_milli <= l[k].score_milli);
				break;
			}
			default:
				fail_msg("unexpected how %d", how);
			}
		}
	}
	print_message("maglev %llu load %llu saturated %llu\n", (unsigned long long)n_how[0],
		      (unsigned long long)n_how[1], (unsigned long long)n_how[3]);
	assert_true(n_how[FG_PLACE_MAGLEV] > 0 && n_how[FG_PLACE_LOAD] > 0 &&
		    n_how[FG_PLACE_SATURATED] > 0);
}

static void test_hysteresis_keeps_maglev(void **state)
{
	(void)state;
	struct fg_load_slot l[NB];
	enum fg_place_how how;

	for (int i = 0; i < NB; i++) {
		l[i].score_milli = 5000 + (uint32_t)i * 300; /* within a 1000 margin */
		l[i].flags = FG_LOAD_F_FRESH | FG_LOAD_F_USABLE;
	}
	for (int i = 0; i < 100000; i++) {
		uint32_t sig = rnd();

		assert_int_equal(fg_place_pick(table, M, sig, l, NB, 1000, &how), table[sig % M]);
		assert_int_equal(how, FG_PLACE_MAGLEV);
	}
}

static void test_overloaded_share(void **state)
{
	(void)state;
	struct fg_load_slot l[NB];
	enum fg_place_how how;
	uint32_t cnt[NB] = { 0 }, n = 200000;

	for (int i = 0; i < NB; i++) {
		l[i].score_milli = 2000;
		l[i].flags = FG_LOAD_F_FRESH | FG_LOAD_F_USABLE;
	}
	l[2].score_milli = 20000; /* the slow worker's queue */
	for (uint32_t i = 0; i < n; i++)
		cnt[fg_place_pick(table, M, rnd(), l, NB, 1000, &how)]++;
	print_message("shares: %u %u %u %u\n", cnt[0], cnt[1], cnt[2], cnt[3]);
	/* A and B both the hot one: 1/16 of the flows (Maglev's slot shares
	 * are within 1%) */
	assert_true(cnt[2] > n / 16 * 8 / 10 && cnt[2] < n / 16 * 12 / 10);
	/* saturated: none at all */
	l[2].flags |= FG_LOAD_F_SAT;
	memset(cnt, 0, sizeof(cnt));
	for (uint32_t i = 0; i < n; i++)
		cnt[fg_place_pick(table, M, rnd(), l, NB, 1000, &how)]++;
	assert_int_equal(cnt[2], 0);
	/* every one saturated: the least loaded takes what A and B both refuse */
	for (int i = 0; i < NB; i++)
		l[i].flags |= FG_LOAD_F_SAT;
	l[1].score_milli = 1000;
	for (uint32_t i = 0; i < 1000; i++) {
		uint32_t sig = rnd();
		uint32_t r = fg_place_pick(table, M, sig, l, NB, 1000, &how);

		assert_int_equal(how, FG_PLACE_SATURATED);
		assert_int_equal(r, 1);
	}
	/* nothing fresh is usable: A */
	for (int i = 0; i < NB; i++)
		l[i].flags &= ~FG_LOAD_F_USABLE;
	uint32_t sig = rnd();

	assert_int_equal(fg_place_pick(table, M, sig, l, NB, 1000, &how), table[sig % M]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_no_signal_is_maglev),
		cmocka_unit_test(test_rule),
		cmocka_unit_test(test_hysteresis_keeps_maglev),
		cmocka_unit_test(test_overloaded_share),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
