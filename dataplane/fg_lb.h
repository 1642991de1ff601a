/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The service / backend table (fg_lb.c): services, backends, Maglev
 * tables, the addresses the balancer answers for, per-core counter rows.
 * Immutable once published: the main lcore builds a new table, swaps
 * fg_dp::lb, waits for an rte_rcu_qsbr grace period and frees the old one.
 */
#ifndef FLOWGATE_FG_LB_H
#define FLOWGATE_FG_LB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rte_branch_prediction.h>
#include <rte_common.h>

#include "fg_config.h"
#include "fg_counters.h"
#include "fg_dp.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Backends removed by an apply stay in the table (tombstones) while
 *  conntrack tracks flows of them, so those flows are still forwarded
 *  (FG_FAIL_KEEP) until they end; a service keeps at most this many.
 *  Above it, the tombstones with the fewest flows are dropped (logged) and
 *  their flows' packets count tombstone_evicted (fg_lb.c).  Each costs
 *  one struct fg_lb_backend and a counter row per worker (~1 KB at 8
 *  workers), as a live backend does. */
#define FG_TOMBSTONE_MAX 256

struct fg_lb_backend {
	struct fg_addr addr;
	struct fg_addr src;     /**< DSR outer source (resolved at build). */
	uint16_t port_be;       /**< NAT destination port, network order. */
	uint32_t id;
	uint32_t weight;
	bool usable;            /**< weight > 0, not drained, not down. */
	bool gone;              /**< tombstone: removed from the config. */
	bool health_down;       /**< health checker says down (not usable). */
	uint64_t gone_tsc;      /**< when it was removed (tombstones; at
				     FG_TOMBSTONE_MAX, of two with as many
				     flows the older goes). */
	uint32_t stat_idx;      /**< row in the per-core backend counters. */
};

struct fg_lb_service {
	uint32_t id;
	char name[FG_NAME_MAX];
	struct fg_addr vip;
	uint16_t port_be;       /**< network order */
	uint8_t proto;
	uint8_t mode;           /**< enum fg_fwd_mode */
	uint8_t sched;          /**< enum fg_sched */
	uint8_t on_fail;        /**< enum fg_fail_policy */
	uint16_t gue_port_be;   /**< network order */
	uint32_t n_backends;    /**< live + tombstones (tombstones last) */
	uint32_t n_live;        /**< backends in the running config */
	struct fg_lb_backend *backends; /**< sorted by id within live/tombstones */
	uint32_t maglev_size;
	uint32_t *maglev;       /**< slot -> backend index; UINT32_MAX = none */
	uint32_t n_usable;
	/** Second chance (dsr-gue + maglev only): the Maglev table in force
	 *  before the last change of the usable backend set, as backend ids
	 *  (slot -> id, UINT32_MAX = none), NULL before the first change.
	 *  Rebuilding an unchanged set keeps it, so "previous" always means
	 *  the table before the last real change (fg_lb.c keep_prev()). */
	uint32_t *prev_maglev;
	uint32_t prev_size;
	uint32_t stat_idx;      /**< row in the per-core service counters. */
	/** id -> index + 1 into backends (0 = none), when every id < 65536:
	 *  conntrack holds backend ids, and this makes a hit's backend one
	 *  load instead of a binary search.  NULL: fall back to the search. */
	uint16_t *by_id;
	uint32_t max_id;
};

/** Per-core counters of one table: svc[n_services][FG_SC_MAX] then
 *  be[n_stat_backends][FG_BC_MAX]. */
struct fg_lb_counters {
	uint64_t *svc;
	uint64_t *be;
} __rte_cache_aligned;

struct fg_lb_svc_slot {
	uint8_t used, family, proto, pad;
	uint16_t port_be;
	uint16_t svc;           /**< index into services */
	uint8_t addr[16];
};

struct fg_lb_addr_slot {
	uint8_t used, family, kind, port; /**< kind: FG_LB_ADDR_* bits */
	uint8_t addr[16];
};

struct fg_lb_table {
	uint64_t generation;
	uint32_t n_services;
	struct fg_lb_service *services;
	uint32_t svc_mask;
	struct fg_lb_svc_slot *svc_slots;
	uint32_t addr_mask;
	struct fg_lb_addr_slot *addr_slots;
	uint16_t *svc_by_id;    /**< 65536 entries: service index + 1, 0 none */
	uint32_t n_stat_backends;
	struct fg_lb_counters core[FG_MAX_WORKERS];
	/* Totals carried over from earlier tables (written by the main lcore
	 * only, after a grace period), same layout as one core's arrays. */
	uint64_t *base_svc;
	uint64_t *base_be;
	/* The same carry per worker for the service counters:
	 * [n_workers][n_services][FG_SC_MAX], so a service's per-worker rows
	 * (fgctl stats --service S --per-core) survive a config change; their
	 * sum over workers is base_svc. */
	uint64_t *base_core_svc;
	unsigned int n_workers;
	struct fg_config *cfg;  /**< deep copy of the config it was built from */
};

/**
 * Builds an immutable table from a config.  Maglev tables, service hash and
 * address set are computed here (main lcore, off the fast path).  @p old
 * (may be NULL) supplies tombstones for removed backends and counter bases.
 * Thread safety: main lcore / control thread with fg_dp::cfg_lock held.
 * @return 0 and *out, or -EINVAL (bad config: message in @p err), -ENOMEM.
 */
int fg_lb_table_build(const struct fg_config *cfg, const struct fg_lb_table *old,
		      unsigned int n_workers, const struct fg_port_cfg *ports,
		      struct fg_lb_table **out, char *err, size_t err_len);
/** Frees a table (after the grace period).  NULL is a no-op. */
void fg_lb_table_free(struct fg_lb_table *t);
/** Finds a service by VIP/port/proto.  Any thread holding a table ref. */
const struct fg_lb_service *fg_lb_service_find(const struct fg_lb_table *t,
					       uint8_t family, const void *addr,
					       uint16_t port_be, uint8_t proto);
/** Finds a backend of a service by id (binary search).  NULL if none. */
const struct fg_lb_backend *fg_lb_backend_find(const struct fg_lb_service *s,
					       uint32_t id);

/** fg_lb_backend_find with the by-id table inline (a hit's backend on the
 *  per-packet path).  Same result, same thread safety. */
static inline const struct fg_lb_backend *
fg_lb_backend_get(const struct fg_lb_service *s, uint32_t id)
{
	if (likely(s->by_id != NULL)) {
		uint16_t i = id <= s->max_id ? s->by_id[id] : 0;

		return i ? &s->backends[i - 1] : NULL;
	}
	return fg_lb_backend_find(s, id);
}
/** What @p addr is of ours: FG_LB_ADDR_VIP, FG_LB_ADDR_LOCAL, both (a
 *  service on a local address), or 0. */
#define FG_LB_ADDR_VIP   1
#define FG_LB_ADDR_LOCAL 2
int fg_lb_addr_kind(const struct fg_lb_table *t, uint8_t family,
		    const void *addr);
/** Sums one service / backend counter over cores + base. */
uint64_t fg_lb_svc_counter(const struct fg_lb_table *t, unsigned int n_workers,
			   const struct fg_lb_service *s, enum fg_service_counter c);
/** One worker's share of a service counter: its row plus what it counted
 *  in earlier tables (control side, like fg_lb_svc_counter). */
uint64_t fg_lb_svc_core_counter(const struct fg_lb_table *t, unsigned int worker,
				const struct fg_lb_service *s, enum fg_service_counter c);
uint64_t fg_lb_be_counter(const struct fg_lb_table *t, unsigned int n_workers,
			  const struct fg_lb_backend *b, enum fg_backend_counter c);
/** Deep-copies a config (services array included).  NULL on ENOMEM. */
struct fg_config *fg_dp_config_dup(const struct fg_config *c);
void fg_dp_config_free(struct fg_config *c);

struct fg_dp;
/** Builds a table from @p cfg and publishes it (swap, grace period, free
 *  of the old one): the one apply path (control socket, SIGHUP, start).
 *  Caller holds fg_dp::cfg_lock.  @return 0, or -errno with @p err set. */
int fg_dp_apply_config(struct fg_dp *dp, const struct fg_config *cfg,
		       char *err, size_t err_len);

#ifdef __cplusplus
}
#endif
#endif /* FLOWGATE_FG_LB_H */
