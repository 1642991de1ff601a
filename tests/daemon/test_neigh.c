/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Neighbour table ageing and size limit (issue 9, defect 4): a table-driven
 * run of fg_neigh_table_build_aged with a clock the test sets.
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
#include <arpa/inet.h>
#include <cmocka.h>

#include <rte_eal.h>
#include <rte_errno.h>

#include "fg_dp_private.h"
#include "../fg_test_eal.h"

#define AGE 1000ull   /* ticks */

static struct fg_neigh_learn nl(uint32_t i)
{
	struct fg_neigh_learn l;

	memset(&l, 0, sizeof(l));
	l.family = AF_INET;
	uint32_t a = htonl(0x0a000000u + i);
	memcpy(l.addr, &a, 4);
	l.mac.addr_bytes[0] = 2;
	memcpy(&l.mac.addr_bytes[2], &i, 4);
	return l;
}

static struct fg_config *cfg_with_static(void)
{
	struct fg_config *c = calloc(1, sizeof(*c));

	assert_non_null(c);
	c->n_neigh = 1;
	c->neigh[0].ip.family = AF_INET;
	inet_pton(AF_INET, "10.200.0.1", c->neigh[0].ip.bytes);
	c->neigh[0].mac[0] = 2;
	return c;
}

/* One learned entry confirmed at 0, the table rebuilt (aged) at @now. */
struct age_case {
	const char *name;
	uint64_t now;
	bool present, stale, due;
};

static const struct age_case age_cases[] = {
	{"fresh", AGE / 2, true, false, false},
	{"just before 3/4: fresh", AGE * 3 / 4 - 1, true, false, false},
	{"3/4 of its age: stale, re-solicited", AGE * 3 / 4, true, true, true},
	{"just before its age: stale", AGE - 1, true, true, true},
	{"its age: gone", AGE, false, false, true},
	{"long after: gone", 100 * AGE, false, false, true},
};

static void test_age(void **state)
{
	const struct age_case *c = *state;
	struct fg_config *cfg = cfg_with_static();
	struct fg_neigh_learn l = nl(1);
	struct fg_neigh_table *t0 = fg_neigh_table_build_aged(cfg, NULL, &l, 1, 0, AGE);

	assert_non_null(t0);
	assert_int_equal(t0->count, 2);
	assert_int_equal(fg_neigh_table_due(t0, c->now, AGE), c->due);
	struct fg_neigh_table *t1 = fg_neigh_table_build_aged(cfg, t0, NULL, 0, c->now, AGE);
	const struct fg_neigh_entry *e = fg_neigh_lookup(t1, AF_INET, l.addr);

	assert_int_equal(e != NULL, c->present);
	if (e)
		assert_int_equal(e->stale, c->stale);
	/* a static neighbour never ages */
	assert_non_null(fg_neigh_lookup(t1, AF_INET, cfg->neigh[0].ip.bytes));
	assert_false(fg_neigh_lookup(t1, AF_INET, cfg->neigh[0].ip.bytes)->stale);
	/* a stale entry confirmed again is fresh for a whole age */
	if (c->stale) {
		struct fg_neigh_table *t2 =
			fg_neigh_table_build_aged(cfg, t1, &l, 1, c->now, AGE);

		e = fg_neigh_lookup(t2, AF_INET, l.addr);
		assert_non_null(e);
		assert_false(e->stale);
		assert_false(fg_neigh_table_due(t2, c->now + AGE / 2, AGE));
		fg_neigh_table_free(t2);
	}
	fg_neigh_table_free(t1);
	fg_neigh_table_free(t0);
	free(cfg);
}

/* More learned neighbours than FG_NEIGH_MAX: the table stops at the limit,
 * statics and older entries stay, and no ageing (age 0) drops nothing. */
static void test_full(void **state)
{
	struct fg_config *cfg = cfg_with_static();
	unsigned int n = FG_NEIGH_MAX + 100;
	struct fg_neigh_learn *add = calloc(n, sizeof(*add));

	for (unsigned int i = 0; i < n; i++)
		add[i] = nl(i + 10);
	struct fg_neigh_table *t = fg_neigh_table_build_aged(cfg, NULL, add, n, 5, 0);

	assert_non_null(t);
	assert_int_equal(t->count, FG_NEIGH_MAX);
	assert_non_null(fg_neigh_lookup(t, AF_INET, cfg->neigh[0].ip.bytes));
	assert_non_null(fg_neigh_lookup(t, AF_INET, add[0].addr));
	assert_null(fg_neigh_lookup(t, AF_INET, add[n - 1].addr));
	assert_false(fg_neigh_table_due(t, 1000000, 0));
	fg_neigh_table_free(t);
	free(add);
	free(cfg);
}


int main(void)
{
	char prefix[64];	/* its own runtime directory, removed at exit */

	char *eal[] = {"test_neigh", "--no-pci", "--no-huge", "--no-shconf", "-m", "128",
		       "--log-level=lib.eal:error", "-l", "0",
		       fg_test_eal_prefix(prefix, sizeof(prefix), "fgtneigh")};

	if (rte_eal_init(RTE_DIM(eal), eal) < 0) {
		fprintf(stderr, "EAL init failed: %s\n", rte_strerror(rte_errno));
		return 1;
	}
	fg_test_eal_started();
	struct CMUnitTest tests[16];
	size_t n = 0;

	for (size_t i = 0; i < RTE_DIM(age_cases); i++) {
		tests[n] = (struct CMUnitTest)cmocka_unit_test_prestate(test_age,
								(void *)&age_cases[i]);
		tests[n++].name = age_cases[i].name;
	}
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_full);
	int rc = _cmocka_run_group_tests("neigh", tests, n, NULL, NULL);

	rte_eal_cleanup();
	return rc;
}
