/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * Load signals of GPU inference workers: what the `metrics` health check
 * reads from a worker's Prometheus page, and the one load score that
 * placement (`scheduler maglev-load`, pkt/fg_place.h) compares.
 *
 * Score (docs/INFERENCE.md): score = sum over the configured series of
 * value x weight, in thousandths (score_milli, saturating at
 * FG_LOADSIG_SCORE_MAX).  Presets:
 * - vllm (default): vllm:num_requests_waiting x 1, vllm:num_requests_running
 *   x 0.25, vllm:kv_cache_usage_perc x 2 (or, when a page has no such
 *   series, the older vllm:gpu_cache_usage_perc);
 * - sglang: sglang:num_queue_reqs x 1, sglang:token_usage x 2;
 * - triton: nv_inference_pending_request_count x 1.
 * Waiting requests weigh most: a queued request waits for a whole slot;
 * a full KV cache is the next sign that the worker is about to queue.
 *
 * A scrape that is refused for any reason (no connection, timeout, an HTTP
 * status other than 200, a page over FG_LOADSIG_PAGE_MAX, a page the parser
 * refuses, a configured series absent, a value that is NaN, infinite or
 * negative, a sample timestamp older than the stale age) leaves the signal
 * stale, counted under one of FG_LOADSIG_COUNTER_LIST.
 *
 * Thread safety: every function is pure.
 */
#ifndef FLOWGATE_FG_LOADSIG_H
#define FLOWGATE_FG_LOADSIG_H

#include <stddef.h>
#include <stdint.h>

#include "fg_config.h"
#include "fg_xlist.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Largest metrics page read (bytes): vLLM pages are ~50-150 KiB. */
#define FG_LOADSIG_PAGE_MAX (512u << 10)
/** Scores saturate here (thousandths). */
#define FG_LOADSIG_SCORE_MAX 0xfffffffeu
/** Default margin (hysteresis) and stale age multiplier. */
#define FG_LOADSIG_MARGIN_DEFAULT 1000u
#define FG_LOADSIG_STALE_INTERVALS 4u

/** Outcomes of a scrape: the first is success, every other one leaves the
 *  signal stale.  Declared once: health JSON, fgctl, telemetry and
 *  /metrics print these names. */
#define FG_LOADSIG_COUNTER_LIST(X) \
	X(scrapes_ok,        "metrics scrapes that gave a fresh load signal") \
	X(scrape_connect,    "scrapes that could not connect (endpoint absent): signal stale") \
	X(scrape_timeout,    "scrapes not done within the timeout (slow endpoint): signal stale") \
	X(scrape_http,       "scrapes answered without HTTP 200: signal stale") \
	X(scrape_too_big,    "pages over FG_LOADSIG_PAGE_MAX: signal stale") \
	X(scrape_malformed,  "pages the Prometheus text parser refused: signal stale") \
	X(scrape_missing,    "pages without a configured series (or none the selector matched): signal stale") \
	X(scrape_bad_value,  "series values that are NaN, infinite or negative: signal stale") \
	X(scrape_old,        "series whose own timestamp is older than the stale age: signal stale")

#define FG_LS_(n, d) FG_LS_##n,
enum fg_loadsig_counter { FG_LOADSIG_COUNTER_LIST(FG_LS_) FG_LS_MAX };
FG_XL_TABLES(fg_loadsig_counter_names, fg_loadsig_counter_help, FG_LS_MAX);

/** Preset names ("vllm", "sglang", "triton", "custom"). */
const char *fg_load_preset_name(enum fg_load_preset p);
/** @return the preset, or -EINVAL. */
int fg_load_preset_parse(const char *s);

/**
 * Fills @p m with the defaults of preset @p p: its series and weights,
 * stale_ms 0 (= FG_LOADSIG_STALE_INTERVALS x interval), margin
 * FG_LOADSIG_MARGIN_DEFAULT, no saturation, no selector.  custom: no series.
 */
void fg_loadsig_preset(enum fg_load_preset p, struct fg_metrics_cfg *m);

/** The stale age of a check: m->stale_ms, else 4 x @p interval_ms. */
uint32_t fg_loadsig_stale_ms(const struct fg_metrics_cfg *m, uint32_t interval_ms);

/** score_milli of raw series values (one per m->series).  Values must be
 *  finite and >= 0 (fg_loadsig_eval checks). */
uint32_t fg_loadsig_score(const struct fg_metrics_cfg *m, const double *raw);

/**
 * Reads a metrics page (the HTTP body).
 * @param now_wall_ms  wall clock (ms since the epoch), for sample timestamps
 * @param stale_ms     a sample whose timestamp is older than this is stale
 * @param raw          out: m->n_series values
 * @param score_milli  out: fg_loadsig_score(raw)
 * @param why          out: a reason when not FG_LS_scrapes_ok
 * @return FG_LS_scrapes_ok, or the counter that says why the signal is stale.
 */
enum fg_loadsig_counter fg_loadsig_eval(const struct fg_metrics_cfg *m, const char *page,
					size_t len, int64_t now_wall_ms, uint32_t stale_ms,
					double *raw, uint32_t *score_milli, char *why,
					size_t why_len);

#ifdef __cplusplus
}
#endif
#endif /* FLOWGATE_FG_LOADSIG_H */
