/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Load table build and RCU publication for maglev-load.  See fg_load.h.
 */
#include "fg_dp_private.h"
#include "fg_load.h"
#include "fg_rcu.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_malloc.h>

int fg_load_table_build(const struct fg_lb_table *lb,
			int (*get)(void *ctx, uint32_t service_id, uint32_t backend_id,
				   struct fg_health_load *out),
			void *ctx, struct fg_load_table **out)
{
	struct fg_load_table *t = rte_zmalloc("fg_load", sizeof(*t), 0);

	if (t == NULL)
		return -ENOMEM;
	t->lb_generation = lb->generation;
	t->n_services = lb->n_services;
	t->svc = rte_zmalloc("fg_load_svc", RTE_MAX(1u, lb->n_services) * sizeof(*t->svc), 0);
	if (t->svc == NULL)
		goto nomem;
	for (uint32_t i = 0; i < lb->n_services; i++) {
		const struct fg_lb_service *s = &lb->services[i];
		struct fg_load_svc *ls = &t->svc[i];

		if (s->sched != FG_SCHED_MAGLEV_LOAD || s->n_live == 0)
			continue;
		ls->slot = rte_zmalloc("fg_load_slot", s->n_live * sizeof(*ls->slot),
				       RTE_CACHE_LINE_SIZE);
		if (ls->slot == NULL)
			goto nomem;
		ls->n = s->n_live;
		ls->margin_milli = FG_LOADSIG_MARGIN_DEFAULT;
		for (uint32_t j = 0; j < s->n_live; j++) {
			const struct fg_lb_backend *b = &s->backends[j];
			struct fg_health_load l;

			/* no signal (not checked yet, checker gone): flags 0 = stale */
			if (get == NULL || get(ctx, s->id, b->id, &l) != 0)
				continue;
			ls->margin_milli = l.margin_milli;
			ls->slot[j].score_milli = l.score_milli;
			ls->slot[j].flags = (l.fresh ? FG_LOAD_F_FRESH : 0) |
					    (b->usable ? FG_LOAD_F_USABLE : 0) |
					    (l.saturate_milli && l.score_milli >= l.saturate_milli ?
					     FG_LOAD_F_SAT : 0);
		}
	}
	*out = t;
	return 0;
nomem:
	fg_load_table_free(t);
	return -ENOMEM;
}

bool fg_load_table_same(const struct fg_load_table *a, const struct fg_load_table *b)
{
	if (a == NULL || b == NULL)
		return a == b;
	if (a->lb_generation != b->lb_generation || a->n_services != b->n_services)
		return false;
	for (uint32_t i = 0; i < a->n_services; i++) {
		const struct fg_load_svc *x = &a->svc[i], *y = &b->svc[i];

		if (x->n != y->n || x->margin_milli != y->margin_milli ||
		    (x->n && memcmp(x->slot, y->slot, x->n * sizeof(*x->slot))))
			return false;
	}
	return true;
}

void fg_load_table_free(struct fg_load_table *t)
{
	if (t == NULL)
		return;
	for (uint32_t i = 0; t->svc != NULL && i < t->n_services; i++)
		rte_free(t->svc[i].slot);
	rte_free(t->svc);
	rte_free(t);
}

/* The checker's signal of one backend (fg_load_table_build's get). */
static int health_load(void *ctx, uint32_t service_id, uint32_t backend_id,
		       struct fg_health_load *out)
{
	return ctx == NULL ? -ENOENT : fg_health_load(ctx, service_id, backend_id, out);
}

/* main lcore state of the poll */
static uint64_t g_last_gen = UINT64_MAX;
static uint64_t g_last_look, g_last_publish;

void fg_dp_load_poll(struct fg_dp *dp)
{
	uint64_t now = rte_rdtsc();
	uint64_t ms = dp->hz / 1000;
	uint64_t gen = dp->health == NULL ? 0 : fg_health_load_gen(dp->health);
	const struct fg_lb_table *lb = __atomic_load_n(&dp->lb, __ATOMIC_ACQUIRE);
	struct fg_load_table *old = dp->load;
	bool lb_moved = lb != NULL && (old == NULL || old->lb_generation != lb->generation);

	if (lb == NULL)
		return;
	if (now - g_last_publish < FG_LOAD_MIN_PUBLISH_MS * ms)
		return;
	if (!lb_moved && gen == g_last_gen && now - g_last_look < FG_LOAD_AGE_CHECK_MS * ms)
		return;
	g_last_look = now;
	g_last_gen = gen;
	pthread_mutex_lock(&dp->cfg_lock);
	lb = dp->lb; /* stable under cfg_lock */
	struct fg_load_table *nt = NULL;

	if (fg_load_table_build(lb, health_load, dp->health, &nt) == 0) {
		if (fg_load_table_same(nt, old)) {
			fg_load_table_free(nt);
		} else {
			fg_load_table_free(fg_rcu_publish(dp->qsbr, &dp->load, nt));
			g_last_publish = now;
		}
	}
	pthread_mutex_unlock(&dp->cfg_lock);
}

void fg_dp_load_free(struct fg_dp *dp)
{
	fg_load_table_free(dp->load);
	dp->load = NULL;
}
