/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * Active health checks of every backend (GPU worker), run by one pthread in
 * the daemon process (not a DPDK lcore, never on the packet path).
 *
 * Per backend of a service with `health tcp|http`: every interval_ms a
 * non-blocking TCP connect to the backend address (port: health.port, else
 * the backend's port, else the service port), and for http a
 * `GET path HTTP/1.0` whose status line must carry expect_status, all
 * within timeout_ms.  `rise` consecutive successes mark a down backend up,
 * `fall` consecutive failures mark an up backend down.  Backends start up
 * (so a restart of the daemon does not black-hole traffic for rise x
 * interval); services with `health none` are never checked.
 *
 * On every transition the checker calls set_health() (from its own
 * thread); the daemon republishes its tables so a down backend gets no new
 * flows, and applies the service's on_fail policy (keep|reset) to its
 * existing flows.  The last FG_HEALTH_HISTORY transitions of each backend
 * are kept with a timestamp and the reason ("connect: Connection refused",
 * "http status 503", "timeout after 500 ms", ...).
 *
 * `health metrics` (GPU inference workers, docs/INFERENCE.md) scrapes
 * `GET path HTTP/1.0` every interval_ms (default 250) on the same poll loop:
 * the page (at most FG_LOADSIG_PAGE_MAX) is read as the socket delivers it,
 * never blocking, and evaluated by fg_loadsig_eval().  A metrics check
 * never marks a backend down: a scrape that fails in any way (counted
 * under its FG_LOADSIG_COUNTER_LIST name) only makes the backend's load
 * signal stale, as does a signal older than its stale age; placement then
 * falls back to plain Maglev for flows that would have read it.
 */
#ifndef FLOWGATE_FG_HEALTH_H
#define FLOWGATE_FG_HEALTH_H

#include <stdbool.h>
#include <stdint.h>

#include "fg_config.h"
#include "fg_loadsig.h"
#include "fg_proto.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Transitions remembered per backend. */
#define FG_HEALTH_HISTORY 8

struct fg_health;

struct fg_health_params {
	/**
	 * Called on each up/down transition, from the checker thread.
	 * @param service_id  fg_service_cfg::id
	 * @param backend_id  fg_backend_cfg::id
	 * @param reason      why (human text)
	 * @return 0, or a negative errno (logged in the history, state kept).
	 */
	int (*set_health)(uint32_t service_id, uint32_t backend_id, bool up,
			  const char *reason, void *ctx);
	void *ctx;
	/** Bind the probes to this network namespace path ("" = current). */
	const char *netns;
};

/**
 * Creates a checker for the services of @p cfg (copied; ids must be
 * assigned).  No thread yet.
 * @return 0 and *out, -EINVAL, -ENOMEM.
 * Thread safety: any single thread.
 */
int fg_health_create(const struct fg_health_params *p, const struct fg_config *cfg,
		     struct fg_health **out);

/** Starts the checker thread ("fg-health").  @return 0, -EALREADY, -errno. */
int fg_health_start(struct fg_health *h);

/**
 * Replaces the set of checked backends after a config apply.  A backend
 * that stays (same service id and backend id) keeps its state, counters and
 * history; a new one starts up; a removed one is forgotten.
 * @return 0 or -ENOMEM (old set kept).
 * Thread safety: any thread (internal mutex, never held across a probe).
 */
int fg_health_update(struct fg_health *h, const struct fg_config *cfg);

/**
 * Current state of one backend.
 * @return 1 up, 0 down, -ENOENT unknown (not checked: treat as up).
 * Thread safety: any thread.
 */
int fg_health_is_up(struct fg_health *h, uint32_t service_id, uint32_t backend_id);

/**
 * Probe counters of one backend (for /metrics).
 * @return 0 and *successes / *failures (probes since the backend was first
 *   checked), or -ENOENT (not checked).
 * Thread safety: any thread.
 */
int fg_health_counters(struct fg_health *h, uint32_t service_id, uint32_t backend_id,
		       uint64_t *successes, uint64_t *failures);

/**
 * Copies the checker's verdicts into a config: sets
 * fg_backend_cfg::health_down on every backend that is currently down and
 * clears it on all others (unchecked backends count as up).  The daemon's
 * set_health callback does "copy the running config, fg_health_mark,
 * apply"; the control server does the same before every config apply, so
 * a down backend stays down across edits.
 * Thread safety: any thread (takes the checker's mutex, never calls back).
 */
void fg_health_mark(struct fg_health *h, struct fg_config *cfg);

/**
 * Writes the state of every checked backend as one JSON value (an object
 * with "backends": [...]; each: service, backend, id, check, state, since_s,
 * successes, failures, last_error, last_rtt_us, history[{t, up, reason}];
 * metrics checks add "load": {fresh, score, age_ms, stale_ms, saturated,
 * series{name: value}, scrapes{outcome: count}}).
 * Thread safety: any thread.
 */
void fg_health_to_json(struct fg_health *h, struct fg_json_writer *w);

/** The load signal of one backend of a `health metrics` service. */
struct fg_health_load {
	bool fresh;             /**< last scrape good and younger than the stale age */
	bool ever;              /**< some scrape was ever good */
	uint32_t score_milli;   /**< of the last good scrape */
	uint32_t n_series;
	double raw[FG_LOAD_SERIES_MAX]; /**< series values of the last good scrape */
	uint64_t age_ms;        /**< since the last good scrape (UINT64_MAX: never) */
	uint32_t stale_ms;      /**< the check's stale age */
	uint32_t saturate_milli, margin_milli; /**< from the check's config */
	bool saturated;         /**< fresh and score >= saturate (saturate > 0) */
	char series[FG_LOAD_SERIES_MAX][FG_LOAD_NAME_MAX]; /**< names of raw[] */
	uint64_t ls[FG_LS_MAX]; /**< scrape outcomes */
	char last_error[96];
};

/**
 * The load signal of a backend, aged now.
 * @return 0, or -ENOENT (not a `health metrics` backend).
 * Thread safety: any thread (takes the checker's mutex).
 */
int fg_health_load(struct fg_health *h, uint32_t service_id, uint32_t backend_id,
		   struct fg_health_load *out);

/**
 * A number that changes with every metrics scrape result (and config
 * update): a reader republishes signals only when it changed, or when a
 * signal may have aged past its stale age.
 * Thread safety: any thread.
 */
uint64_t fg_health_load_gen(struct fg_health *h);

/** Stops and joins the thread (no-op if not running). */
void fg_health_stop(struct fg_health *h);

/** Stops and frees.  NULL is a no-op. */
void fg_health_destroy(struct fg_health *h);

#ifdef __cplusplus
}
#endif
#endif /* FLOWGATE_FG_HEALTH_H */
