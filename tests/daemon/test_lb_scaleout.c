/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Issue 13 (BGP/ECMP scale-out), the service tables behind it
 * (dataplane/fg_lb.c), built as the daemon builds them:
 *  - consistent choice on every node: two configs listing the same
 *    backends in other orders, under other ids, give the same backend
 *    address in every Maglev slot (so a flow that ECMP moves to another
 *    node keeps its backend);
 *  - second chance: a dsr-gue Maglev service keeps, as backend ids, the
 *    table in force before the last change of its usable set; a rebuild
 *    with the same set keeps the older one; other modes keep none.
 * Table-driven: each row of order_cases is a permutation and id set; each
 * row of prev_cases a sequence of configs and what prev must be after each.
 */
#include <errno.h>
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

#include "fg_config_parse.h"
#include "fg_dp_private.h"
#include "fg_lb.h"
#include "../fg_test_eal.h"

#define NB 4

static const char *const be_addr[NB] = {"10.1.0.11", "10.1.0.12", "10.1.0.13", "10.1.0.14"};

/* A one-service config: backends be_addr[order[i]] with ids[i], weight
 * weights[order[i]] (0 = 1), drained when bit order[i] of @p drained. */
static void make_cfg(struct fg_config *c, struct fg_service_cfg *sc, uint8_t mode,
		     const int *order, const uint32_t *ids, const uint32_t *weights,
		     unsigned int drained)
{
	fg_config_init(c);
	memset(sc, 0, sizeof(*sc));
	c->n_services = 1;
	c->services = sc;
	c->n_ports = 1;
	snprintf(c->ports[0].name, sizeof(c->ports[0].name), "net_null0");
	c->ports[0].n_local = 1;
	c->ports[0].local[0].family = AF_INET;
	inet_pton(AF_INET, "10.0.0.2", c->ports[0].local[0].bytes);
	snprintf(sc->name, sizeof(sc->name), "svc");
	sc->vip.family = AF_INET;
	inet_pton(AF_INET, "10.0.0.100", sc->vip.bytes);
	sc->port = 80;
	sc->proto = IPPROTO_TCP;
	sc->mode = mode;
	sc->sched = FG_SCHED_MAGLEV;
	sc->id = 1;
	sc->n_backends = NB;
	for (int i = 0; i < NB; i++) {
		struct fg_backend_cfg *b = &sc->backends[i];
		int k = order[i];

		b->addr.family = AF_INET;
		inet_pton(AF_INET, be_addr[k], b->addr.bytes);
		b->id = ids[i];
		b->weight = weights && weights[k] ? weights[k] : 1;
		b->drained = (drained >> k) & 1;
	}
}

static struct fg_lb_table *build(const struct fg_config *c, const struct fg_lb_table *old)
{
	struct fg_lb_table *t = NULL;
	char err[256];
	int rc = fg_lb_table_build(c, old, 1, c->ports, &t, err, sizeof(err));

	if (rc < 0)
		fail_msg("fg_lb_table_build: %d %s", rc, err);
	return t;
}

/* slot -> backend address (first 4 bytes), UINT32_MAX for none */
static uint32_t slot_addr(const struct fg_lb_service *s, uint32_t slot)
{
	uint32_t bi = s->maglev[slot], a;

	if (bi == UINT32_MAX)
		return UINT32_MAX;
	memcpy(&a, s->backends[bi].addr.bytes, 4);
	return a;
}

/* ------------------------------------------- consistent choice per node */

static const struct order_case {
	const char *name;
	int order[NB];
	uint32_t ids[NB];
	unsigned int drained;
} order_cases[] = {
	{"reference",         {0, 1, 2, 3}, {1, 2, 3, 4}, 0},
	{"reversed",          {3, 2, 1, 0}, {1, 2, 3, 4}, 0},
	{"shuffled, new ids", {2, 0, 3, 1}, {17, 5, 9, 1000}, 0},
	{"drained, shuffled", {1, 3, 0, 2}, {8, 6, 4, 2}, 1u << 2},
};

static void t_same_table_any_order(void **st)
{
	const struct order_case *oc = *st;
	static const uint32_t w[NB] = {3, 1, 2, 1};
	struct fg_config c1, c2;
	struct fg_service_cfg s1, s2;
	static const int ref[NB] = {0, 1, 2, 3};
	static const uint32_t ref_ids[NB] = {1, 2, 3, 4};

	make_cfg(&c1, &s1, FG_MODE_DSR_GUE, ref, ref_ids, w, oc->drained);
	make_cfg(&c2, &s2, FG_MODE_DSR_GUE, oc->order, oc->ids, w, oc->drained);
	struct fg_lb_table *a = build(&c1, NULL), *b = build(&c2, NULL);
	const struct fg_lb_service *sa = &a->services[0], *sb = &b->services[0];

	assert_int_equal(sa->maglev_size, sb->maglev_size);
	for (uint32_t i = 0; i < sa->maglev_size; i++)
		if (slot_addr(sa, i) != slot_addr(sb, i))
			fail_msg("slot %u: %08x vs %08x", i, slot_addr(sa, i), slot_addr(sb, i));
	fg_lb_table_free(a);
	fg_lb_table_free(b);
}

/* ------------------------------------------------- second-chance table */

enum prev_want { NONE, KEEP, FROM_OLD };

static const struct prev_case {
	const char *name;
	uint8_t mode;
	int steps;
	unsigned int drained[5];     /* usable set of each build */
	uint32_t weight0[5];         /* weight of backend 0 in each build */
	enum prev_want want[5];      /* prev after each build */
} prev_cases[] = {
	{"first build has none, a drain keeps the old table", FG_MODE_DSR_GUE, 3,
	 {0, 1, 1}, {1, 1, 1}, {NONE, FROM_OLD, KEEP}},
	{"an unchanged rebuild keeps it, a weight change replaces it", FG_MODE_DSR_GUE, 5,
	 {0, 0, 2, 2, 2}, {1, 1, 1, 1, 5}, {NONE, NONE, FROM_OLD, KEEP, FROM_OLD}},
	{"undrain: the drained table becomes previous", FG_MODE_DSR_GUE, 3,
	 {0, 4, 0}, {1, 1, 1}, {NONE, FROM_OLD, FROM_OLD}},
	{"every backend drained: prev kept, current empty", FG_MODE_DSR_GUE, 2,
	 {0, 15}, {1, 1}, {NONE, FROM_OLD}},
	{"dsr-ipip keeps none (no room for the hint)", FG_MODE_DSR_IPIP, 2,
	 {0, 1}, {1, 1}, {NONE, NONE}},
	{"nat keeps none", FG_MODE_NAT, 2, {0, 1}, {1, 1}, {NONE, NONE}},
};

static void t_prev_table(void **st)
{
	const struct prev_case *pc = *st;
	static const int ord[NB] = {0, 1, 2, 3};
	static const uint32_t ids[NB] = {1, 2, 3, 4};
	struct fg_lb_table *old = NULL;

	for (int i = 0; i < pc->steps; i++) {
		struct fg_config c;
		struct fg_service_cfg sc;
		uint32_t w[NB] = {pc->weight0[i], 1, 1, 1};

		make_cfg(&c, &sc, pc->mode, ord, ids, w, pc->drained[i]);
		struct fg_lb_table *t = build(&c, old);
		const struct fg_lb_service *s = &t->services[0];
		const struct fg_lb_service *os = old ? &old->services[0] : NULL;

		switch (pc->want[i]) {
		case NONE:
			assert_null(s->prev_maglev);
			break;
		case KEEP:
			assert_non_null(s->prev_maglev);
			assert_non_null(os->prev_maglev);
			assert_int_equal(s->prev_size, os->prev_size);
			assert_memory_equal(s->prev_maglev, os->prev_maglev,
					    s->prev_size * sizeof(uint32_t));
			break;
		case FROM_OLD: {
			uint32_t moved = 0;

			assert_non_null(s->prev_maglev);
			assert_int_equal(s->prev_size, os->maglev_size);
			for (uint32_t k = 0; k < s->prev_size; k++) {
				uint32_t bi = os->maglev[k];
				uint32_t id = bi == UINT32_MAX ? UINT32_MAX : os->backends[bi].id;

				assert_int_equal(s->prev_maglev[k], id);
				if (k < s->maglev_size && s->maglev[k] != UINT32_MAX &&
				    s->backends[s->maglev[k]].id != id)
					moved++;
			}
			/* a real change moves slots: the hint has work to do */
			if (s->n_usable > 0)
				assert_true(moved > 0);
			break;
		}
		}
		fg_lb_table_free(old);
		old = t;
	}
	fg_lb_table_free(old);
}

int main(void)
{
	char prefix[64];
	char *eal[] = {"test_lb_scaleout", "--no-pci", "--no-huge", "--no-shconf", "-m", "256",
		       "--log-level=lib.eal:error", "-l", "0",
		       fg_test_eal_prefix(prefix, sizeof(prefix), "fgtlbso")};
	struct CMUnitTest tests[RTE_DIM(order_cases) + RTE_DIM(prev_cases)];
	size_t n = 0;

	if (rte_eal_init(RTE_DIM(eal), eal) < 0) {
		fprintf(stderr, "EAL init failed: %s\n", rte_strerror(rte_errno));
		return 1;
	}
	fg_test_eal_started();
	for (size_t i = 0; i < RTE_DIM(order_cases); i++) {
		tests[n] = (struct CMUnitTest)cmocka_unit_test_prestate(t_same_table_any_order,
									(void *)&order_cases[i]);
		tests[n++].name = order_cases[i].name;
	}
	for (size_t i = 0; i < RTE_DIM(prev_cases); i++) {
		tests[n] = (struct CMUnitTest)cmocka_unit_test_prestate(t_prev_table,
									(void *)&prev_cases[i]);
		tests[n++].name = prev_cases[i].name;
	}
	int rc = _cmocka_run_group_tests("lb_scaleout", tests, n, NULL, NULL);

	rte_eal_cleanup();
	return rc;
}
