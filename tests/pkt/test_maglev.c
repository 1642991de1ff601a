/* SPDX-License-Identifier: BSD-3-Clause */
/* Weighted Maglev: sizes, distribution, drained, disruption, determinism. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>

#include <cmocka.h>

#include "ct.h"
#include "fg_maglev.h"

#define M 65537u

static uint32_t table[M], table2[M];

static void keys_for(uint64_t *k, uint32_t n, uint32_t first_id)
{
	uint32_t i;

	for (i = 0; i < n; i++) {
		uint8_t a[16] = { 10, 1, 0, (uint8_t)(first_id + i + 1) };

		k[i] = fg_maglev_backend_key(a, 80);
	}
}

static void counts(const uint32_t *t, uint32_t m, uint32_t n, uint32_t *c)
{
	uint32_t i;

	memset(c, 0, n * sizeof(*c));
	for (i = 0; i < m; i++) {
		assert_true(t[i] < n);
		c[t[i]]++;
	}
}

static void t_size(void **st)
{
	assert_int_equal(fg_maglev_size(0), 65537);
	assert_int_equal(fg_maglev_size(3), 65537);
	assert_int_equal(fg_maglev_size(655), 65537);
	assert_int_equal(fg_maglev_size(656), 65609);
	assert_int_equal(fg_maglev_size(1000), 100003);
	assert_true(fg_maglev_is_prime(65537));
	assert_false(fg_maglev_is_prime(65535));
	assert_false(fg_maglev_is_prime(1));
	assert_true(fg_maglev_is_prime(2));
}

static void t_bad_args(void **st)
{
	uint32_t w[2] = { 1, 1 };
	uint64_t k[2] = { 1, 2 };

	assert_int_equal(fg_maglev_build(w, k, 2, 65535, table), -EINVAL);
	assert_int_equal(fg_maglev_build(w, k, 2, 2, table), -EINVAL);
	assert_int_equal(fg_maglev_build(NULL, k, 2, M, table), -EINVAL);
	assert_int_equal(fg_maglev_build(w, k, 2, M, NULL), -EINVAL);
}

static void t_equal_weights(void **st)
{
	uint32_t w[10], c[10], i;
	uint64_t k[10];

	for (i = 0; i < 10; i++)
		w[i] = 100;
	keys_for(k, 10, 0);
	assert_int_equal(fg_maglev_build(w, k, 10, M, table), 0);
	counts(table, M, 10, c);
	for (i = 0; i < 10; i++)
		assert_true(abs((int)c[i] - (int)(M / 10)) <= (int)(M / 10) / 100);
}

static void t_weighted(void **st)
{
	uint32_t w[4] = { 1, 2, 3, 4 }, c[4], i;
	uint64_t k[4];

	keys_for(k, 4, 0);
	assert_int_equal(fg_maglev_build(w, k, 4, M, table), 0);
	counts(table, M, 4, c);
	for (i = 0; i < 4; i++) {
		double want = (double)M * w[i] / 10.0;

		assert_true(c[i] > want * 0.99 && c[i] < want * 1.01);
	}
}

static void t_drained(void **st)
{
	uint32_t w[5] = { 1, 0, 1, 1, 0 }, c[5];
	uint64_t k[5];
	uint32_t i;

	keys_for(k, 5, 0);
	assert_int_equal(fg_maglev_build(w, k, 5, M, table), 0);
	counts(table, M, 5, c);
	assert_int_equal(c[1], 0);
	assert_int_equal(c[4], 0);
	assert_int_equal(c[0] + c[2] + c[3], M);
	/* everything drained: NONE everywhere */
	memset(w, 0, sizeof(w));
	assert_int_equal(fg_maglev_build(w, k, 5, M, table), 0);
	for (i = 0; i < M; i++)
		assert_int_equal(table[i], FG_MAGLEV_NONE);
	assert_int_equal(fg_maglev_build(NULL, NULL, 0, M, table), 0);
	assert_int_equal(fg_maglev_lookup(table, M, 12345), FG_MAGLEV_NONE);
}

static void t_deterministic(void **st)
{
	uint32_t w[7] = { 5, 1, 9, 3, 3, 0, 7 };
	uint64_t k[7];

	keys_for(k, 7, 40);
	assert_int_equal(fg_maglev_build(w, k, 7, M, table), 0);
	assert_int_equal(fg_maglev_build(w, k, 7, M, table2), 0);
	assert_memory_equal(table, table2, sizeof(table));
	/* Pinned known answers: the GPU path and other hosts must build the
	 * very same table.  Changing the algorithm must be deliberate: update
	 * these and tell the GPU engineer. */
	assert_int_equal(k[0], 0x1d911ce0872d837bULL);
	assert_int_equal(ct_hash_crc(table, sizeof(table)), 0x9c141b1f);
	/* the key is the backend's identity: address and port */
	assert_int_equal(fg_maglev_backend_key((uint8_t[16]){ 10, 1, 0, 1 }, 80),
			 fg_maglev_backend_key((uint8_t[16]){ 10, 1, 0, 1 }, 80));
	assert_int_not_equal(fg_maglev_backend_key((uint8_t[16]){ 10, 1, 0, 1 }, 80),
			     fg_maglev_backend_key((uint8_t[16]){ 10, 1, 0, 1 }, 81));
	assert_int_not_equal(fg_maglev_backend_key((uint8_t[16]){ 10, 1, 0, 1 }, 80),
			     fg_maglev_backend_key((uint8_t[16]){ 10, 1, 0, 2 }, 80));
}

/*
 * Issue 9 defect 6: the same backend set, listed in another order (as a
 * restart after runtime changes does, with ids reassigned), must put the
 * same backend in every slot.  Table-driven: each row is a permutation of
 * the reference order; slots are compared by backend key, not by index.
 */
#define ORD_N 7
static const struct order_case {
	const char *name;
	uint32_t perm[ORD_N];
} order_cases[] = {
	{ "identity",  { 0, 1, 2, 3, 4, 5, 6 } },
	{ "reversed",  { 6, 5, 4, 3, 2, 1, 0 } },
	{ "rotated",   { 3, 4, 5, 6, 0, 1, 2 } },
	{ "swap 0 1",  { 1, 0, 2, 3, 4, 5, 6 } },
	{ "shuffled",  { 4, 0, 6, 2, 5, 3, 1 } },
};

static void t_order_independent(void **st)
{
	/* unequal weights and a drained one: the round order matters most
	 * when credits differ */
	const uint32_t w_ref[ORD_N] = { 5, 1, 9, 3, 3, 0, 7 };
	uint64_t k_ref[ORD_N];
	uint32_t c, i;

	keys_for(k_ref, ORD_N, 0);
	assert_int_equal(fg_maglev_build(w_ref, k_ref, ORD_N, M, table), 0);
	for (c = 0; c < sizeof(order_cases) / sizeof(order_cases[0]); c++) {
		const struct order_case *oc = &order_cases[c];
		uint32_t w[ORD_N], diff = 0;
		uint64_t k[ORD_N];

		for (i = 0; i < ORD_N; i++) {
			w[i] = w_ref[oc->perm[i]];
			k[i] = k_ref[oc->perm[i]];
		}
		assert_int_equal(fg_maglev_build(w, k, ORD_N, M, table2), 0);
		for (i = 0; i < M; i++)
			if (k[table2[i]] != k_ref[table[i]])
				diff++;
		print_message("order %-9s: %u of %u slots name another backend\n",
			      oc->name, diff, M);
		assert_int_equal(diff, 0);
	}
}

/* Removing backend j of n: its slots move; others should mostly stay. */
static void t_disruption_remove(void **st)
{
	uint32_t n = 10, w[10], i, moved_other = 0, j = 4;
	uint64_t k[10];

	for (i = 0; i < n; i++)
		w[i] = 1;
	keys_for(k, n, 0);
	assert_int_equal(fg_maglev_build(w, k, n, M, table), 0);
	w[j] = 0; /* drained / removed: same indices for the others */
	assert_int_equal(fg_maglev_build(w, k, n, M, table2), 0);
	for (i = 0; i < M; i++) {
		assert_int_not_equal(table2[i], j);
		if (table[i] != j && table2[i] != table[i])
			moved_other++;
	}
	/* Maglev's extra churn is a few percent of the table. */
	print_message("remove 1 of 10: %u of %u other slots moved (%.2f%%)\n",
		      moved_other, M, 100.0 * moved_other / M);
	assert_true(moved_other < M * 3 / 100);
}

static void t_disruption_add(void **st)
{
	uint32_t n = 10, w[11], i, changed = 0;
	uint64_t k[11];

	for (i = 0; i < 11; i++)
		w[i] = 1;
	keys_for(k, 11, 0);
	assert_int_equal(fg_maglev_build(w, k, n, M, table), 0);
	assert_int_equal(fg_maglev_build(w, k, n + 1, M, table2), 0);
	for (i = 0; i < M; i++)
		if (table2[i] != table[i])
			changed++;
	/* ideal is 1/11 = 9.1% */
	print_message("add 11th: %.2f%% slots changed\n", 100.0 * changed / M);
	assert_true(changed < M * 12 / 100);
	assert_true(changed > M * 8 / 100);
}

static void t_big(void **st)
{
	uint32_t n = 1000, m = fg_maglev_size(n), *t, *w, *c, i;
	uint64_t *k;

	t = malloc(m * sizeof(*t));
	w = malloc(n * sizeof(*w));
	c = malloc(n * sizeof(*c));
	k = malloc(n * sizeof(*k));
	assert_non_null(t);
	assert_non_null(w);
	assert_non_null(c);
	assert_non_null(k);
	uint32_t sum = 0;

	for (i = 0; i < n; i++) {
		w[i] = 1 + (i % 3);
		sum += w[i];
	}
	keys_for(k, n, 0);
	assert_int_equal(fg_maglev_build(w, k, n, m, t), 0);
	counts(t, m, n, c);
	for (i = 0; i < n; i++) {
		/* 100 slots per backend on average: within one slot of ideal */
		double want = (double)m * w[i] / sum;

		assert_true(c[i] >= want - 1.5 && c[i] <= want + 1.5);
	}
	free(t);
	free(w);
	free(c);
	free(k);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(t_size),
		cmocka_unit_test(t_bad_args),
		cmocka_unit_test(t_equal_weights),
		cmocka_unit_test(t_weighted),
		cmocka_unit_test(t_drained),
		cmocka_unit_test(t_deterministic),
		cmocka_unit_test(t_order_independent),
		cmocka_unit_test(t_disruption_remove),
		cmocka_unit_test(t_disruption_add),
		cmocka_unit_test(t_big),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
