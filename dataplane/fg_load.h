/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * The workers' copy of the GPU workers' load signals, for `scheduler
 * maglev-load` (pkt/fg_place.h, docs/INFERENCE.md).
 *
 * The health checker (control/fg_health.c, `health metrics`) scrapes each
 * worker's Prometheus page on its own thread.  The main lcore
 * (fg_dp_load_poll(), from its loop) turns those signals into an immutable
 * fg_load_table, one fg_load_slot per backend of each maglev-load service,
 * indexed like the fg_lb_table it was built for, and publishes it as the
 * service tables are: build a new copy, swap fg_dp::load, wait for an RCU
 * QSBR grace period, free the old one.  Workers read it on the new-flow
 * path only; a table built for another fg_lb_table generation is not used
 * (plain Maglev, counted placed_stale) until the next poll rebuilds it.
 *
 * Churn: a table is published only when some slot differs from the
 * running one, at most once per FG_LOAD_MIN_PUBLISH_MS, and looked at
 * again at least every FG_LOAD_AGE_CHECK_MS so a signal that stops coming
 * turns stale on time.
 */
#ifndef FLOWGATE_FG_LOAD_H
#define FLOWGATE_FG_LOAD_H

#include <stdint.h>

#include "fg_lb.h"
#include "fg_health.h"
#include "fg_place.h"

#ifdef __cplusplus
extern "C" {
#endif

struct fg_dp;

#define FG_LOAD_MIN_PUBLISH_MS 10
#define FG_LOAD_AGE_CHECK_MS 50

/** Load slots of one service (n = 0, slot NULL: not a maglev-load service). */
struct fg_load_svc {
	uint32_t n;             /**< live backends of the service */
	uint32_t margin_milli;
	struct fg_load_slot *slot;
};

struct fg_load_table {
	uint64_t lb_generation; /**< fg_lb_table::generation it indexes */
	uint32_t n_services;
	struct fg_load_svc *svc; /**< like fg_lb_table::services */
};

/**
 * Builds a load table for @p lb from the checker's signals (@p get answers
 * one backend of @p ctx: 0 and *out, or -ENOENT).  Off the fast path.
 * @return 0 and *out, or -ENOMEM.
 */
int fg_load_table_build(const struct fg_lb_table *lb,
			int (*get)(void *ctx, uint32_t service_id, uint32_t backend_id,
				   struct fg_health_load *out),
			void *ctx, struct fg_load_table **out);
/** True when @p a and @p b place every flow alike. */
bool fg_load_table_same(const struct fg_load_table *a, const struct fg_load_table *b);
/** Frees (after the grace period).  NULL is a no-op. */
void fg_load_table_free(struct fg_load_table *t);

/**
 * Main lcore, from its loop: republishes the load table when signals,
 * ages or the service table changed (rate-limited, see above).  Takes
 * fg_dp::cfg_lock while it reads fg_dp::lb and publishes.
 */
void fg_dp_load_poll(struct fg_dp *dp);

/** Main lcore, workers stopped: frees the published table. */
void fg_dp_load_free(struct fg_dp *dp);


#ifdef __cplusplus
}
#endif
#endif /* FLOWGATE_FG_LOAD_H */
