/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * The daemon's one stats model: a snapshot of every counter, service and
 * backend, taken on a control-side thread, that every reader renders.
 *
 * `fgctl stats` (fg_control.c), the /flowgate/ telemetry commands
 * (fg_stats.c), the Prometheus endpoint (fg_metrics.c) and the counters
 * printed at exit all call fg_stats_snap_take() and print its fields, so a
 * state name, a label or a sum is decided here once and cannot differ
 * between them.
 *
 * How a snapshot is read, and what it costs the workers: nothing on the
 * packet path.  The service table is walked under fg_dp::cfg_lock (never
 * taken by workers) so it is not freed meanwhile; the workers' per-core
 * counters are plain uint64_t read racily (64-bit aligned loads on the
 * supported 64-bit targets: a value is at worst one burst old).  With
 * FG_STATS_SNAP_CT each worker's conntrack counters come through its
 * mailbox, which the worker answers between bursts.
 */
#ifndef FLOWGATE_FG_STATS_H
#define FLOWGATE_FG_STATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "ct.h"
#include "fg_config.h"
#include "fg_ctl_server.h"
#include "fg_dp.h"
#include "fg_dp_counters.h"
#include "fg_lb.h"
#include "fg_port.h"
#include "fg_health.h"
#include "fg_state.h"
#include "fg_sync.h"

struct fg_dp;

#ifdef __cplusplus
extern "C" {
#endif

/** Backend states, as every reader names them. */
#define FG_STATS_BACKEND_STATE_LIST(X) \
	X(up,      "in the config, usable: takes new flows") \
	X(drained, "in the config, weight 0 or drained by the operator: no new flows") \
	X(down,    "in the config, health checks failing: no new flows") \
	X(gone,    "removed from the config; remembered while its flows live")

enum fg_stats_backend_state {
#define FG_X(n, d) FG_STATS_BE_##n,
	FG_STATS_BACKEND_STATE_LIST(FG_X)
#undef FG_X
	FG_STATS_BE_MAX
};
extern const char *const fg_stats_backend_state_names[FG_STATS_BE_MAX];
extern const char *const fg_stats_backend_state_help[FG_STATS_BE_MAX];

/** A backend's state from its table entry.  Pure, any thread. */
enum fg_stats_backend_state fg_stats_backend_state(const struct fg_lb_backend *b);

/**
 * A backend's active (ESTABLISHED) and inactive (other states) tracked
 * flows from its summed counters c[FG_BC_MAX]: opened - closed flows, of
 * which established - unestablished are ESTABLISHED.  The counters are
 * read racily one after another, so a flow changing state meanwhile can
 * make a difference briefly negative: it reads 0.  Pure, any thread.
 */
void fg_stats_conns(const uint64_t *c, uint64_t *active, uint64_t *inactive);
/** A backend's load-signal state as every reader names it: "fresh",
 *  "saturated" (fresh, at or over the threshold), "stale" (the last scrape
 *  failed or is older than the stale age), "never" (no good scrape yet),
 *  "none" (not a `health metrics` backend).  Pure, any thread. */
struct fg_stats_backend;
const char *fg_stats_load_state(const struct fg_stats_backend *b);

/** Daemon-only per-core counter help strings (FG_DP_COUNTER_LIST). */
extern const char *const fg_dp_counter_help[FG_DC_MAX];

/** One backend of a service. */
struct fg_stats_backend {
	uint32_t id;
	struct fg_addr addr;
	uint16_t port;                  /**< host order; 0 = the service's */
	uint32_t weight;
	enum fg_stats_backend_state state;
	uint64_t c[FG_BC_MAX];          /**< summed over cores + earlier tables */
	char addr_str[64];              /**< fg_addr_format(addr) */
	/** ipvsadm's ActiveConn / InActConn: tracked flows of the backend in
	 *  ESTABLISHED / in any other state, from its conns_* counters
	 *  (fg_stats_conns()) */
	uint64_t active, inactive;
	bool checked;                   /**< health-checked: hc_* are set */
	uint64_t hc_successes, hc_failures; /**< health probes */
	bool has_load;                  /**< `health metrics`: load is set */
	struct fg_health_load load;     /**< the worker's load signal, aged now */
};

/** One service, with its backends (tombstones last). */
struct fg_stats_service {
	uint32_t id;
	char name[FG_NAME_MAX];         /**< "" when unnamed */
	char spec[96];                  /**< VIP:PORT/PROTO */
	const char *label;              /**< name, or spec when unnamed */
	const char *mode;               /**< fg_mode_name() */
	const char *sched;              /**< fg_sched_name() */
	uint32_t n_live, n_usable;
	uint64_t c[FG_SC_MAX];
	uint64_t active, inactive;      /**< sums of its backends' */
	/** FG_STATS_SNAP_SVC_CORE: per worker [n_workers][FG_SC_MAX] (they
	 *  sum to c[]); NULL otherwise */
	uint64_t *core_c;
	uint32_t n_backends;
	struct fg_stats_backend *backends;
};

/** Counters of one worker (or their sum). */
struct fg_stats_core {
	uint64_t cc[FG_CC_MAX];
	uint64_t dc[FG_DC_MAX];
	uint64_t drops[FG_DROP_MAX];
	bool has_ct;                    /**< ct filled (FG_STATS_SNAP_CT and the
					     worker answered) */
	struct ct_stats ct;
};

/** The whole snapshot.  Owned by the caller; fg_stats_snap_free(). */
struct fg_stats_snap {
	unsigned int n_workers;
	bool sw_rss;
	uint32_t ct_capacity;           /**< conntrack entries per worker */
	uint32_t ct_nat_capacity;       /**< NAT flows per worker (IPv4) */
	struct fg_stats_core total;     /**< sum of core[] (ct: summed too) */
	struct fg_stats_core core[FG_MAX_WORKERS];
	uint32_t n_services;
	struct fg_stats_service *services;
	bool has_ctl;                   /**< ctl is set (a control server runs) */
	struct fg_ctl_counters ctl;     /**< control socket counters */
	unsigned int n_ports;
	struct {
		char name[64];              /**< the DPDK device name */
		bool ok;                    /**< the device answered */
		uint64_t c[FG_PC_MAX];      /**< FG_PORT_COUNTER_LIST */
	} port[FG_MAX_PORTS];           /**< the devices' own counters */
	/** restart hand-over: the load at start, the last save (fg_state.h) */
	struct fg_state_stats state;
	/** state sync between nodes (fg_sync.h); sync.on false without */
	struct fg_sync_stats sync;
};

/** fg_stats_snap_take() flags. */
#define FG_STATS_SNAP_CT 0x1u   /**< also each shard's conntrack counters */
#define FG_STATS_SNAP_SVC_CORE 0x2u /**< also per-worker service counters */

/**
 * Takes a snapshot.  Thread safety: any non-worker thread (control,
 * telemetry, metrics); takes fg_dp::cfg_lock, and with FG_STATS_SNAP_CT
 * the mailbox lock, one worker at a time.
 * @param service  NULL for every service, else a service name or
 *                 VIP:PORT/PROTO: the snapshot holds that one only.
 * @return 0 and *out, -ENOENT (@p service not configured), -ENOMEM.  A
 *         worker that does not answer its mailbox leaves has_ct false.
 */
int fg_stats_snap_take(struct fg_dp *dp, const char *service, unsigned int flags,
		       struct fg_stats_snap **out);
/** Frees a snapshot.  NULL is a no-op. */
void fg_stats_snap_free(struct fg_stats_snap *s);

/**
 * Escapes @p in into a DPDK telemetry dict key: DPDK 22.11 accepts
 * [A-Za-z0-9_/] only, so every byte outside [A-Za-z0-9] becomes `_XX`
 * (two upper-case hex digits): `infer-a.b` -> `infer_2Da_2Eb`,
 * `10.0.0.1:80/tcp` -> `10_2E0_2E0_2E1_3A80_2Ftcp`.  `_` itself is
 * escaped (`_5F`), so the mapping is one to one; '/' stays free to join
 * escaped parts.  To map back: replace each `_XX` by the byte 0xXX.
 * Pure, any thread.
 * @return the key length, or -ENAMETOOLONG (key and NUL do not fit @p len).
 */
int fg_stats_key_escape(const char *in, char *out, size_t len);

/** Registers /flowgate/{stats,services,backends,ct}.  Main lcore, once.
 *  @return 0 or -EINVAL. */
int fg_stats_telemetry_register(struct fg_dp *dp);
/** Prints the final counters (exit).  Any non-worker thread. */
void fg_stats_print(struct fg_dp *dp, FILE *f);

#ifdef __cplusplus
}
#endif
#endif /* FLOWGATE_FG_STATS_H */
