/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * The LLM cluster that `flowgate-bench inference` simulates, event by
 * event, behind flowgate's own placement code (docs/INFERENCE.md,
 * "Measured").  bench_inference.c holds the command line and the output.
 *
 * Requests come from a trace (fgb_trace.h: arrival time, prompt tokens,
 * output tokens); arrivals keep their recorded spacing, stretched so that
 * the offered work is --load x the cluster's capacity (fgb_inf_capacity).
 *
 * Connections.  HTTP/1.1 clients (mux 0, the default): a kept-alive
 * connection carries one request at a time; a request takes an idle one,
 * drawn at random, else opens a new one (a new client address and port)
 * that will carry a geometric number of requests (mean `keepalive`;
 * keepalive 1: one request per connection), then closes.  The k-th new
 * connection gets the same tuple and quota under every scheduler of one
 * seed; which requests it carries depends on when its worker answers, as
 * it does for real clients.  HTTP/2 clients (mux N): N connections open at
 * once, each request on a uniformly drawn one whatever its load (drawn
 * before the run: the same for every scheduler), several in flight on one
 * connection; a connection is replaced once it has carried its quota.
 * L4 schedulers place a connection once, on its first request; every
 * later request follows it (the conntrack entry).  l7-least-loaded
 * places every request (it terminates the client's connection).
 *
 * A worker (continuous batching): `slots` requests run at once; a request
 * is admitted, in arrival order, when a slot is free and the KV cache has
 * room for its prompt + output tokens (reserved on admission, released at
 * its end; a request larger than the whole cache runs alone); it then
 * takes (prompt x prefill_ms + output x decode_ms) / speed, its first
 * token after the prefill part.  The waiting queue is what vLLM calls
 * waiting requests.
 *
 * Thread safety: fgb_inf_run() is reentrant.
 */
#ifndef FLOWGATE_FGB_INFER_H
#define FLOWGATE_FGB_INFER_H

#include <stdbool.h>
#include <stdint.h>

#include "fg_config.h"
#include "fgb_trace.h"

#ifdef __cplusplus
extern "C" {
#endif

#define FGB_INF_MAXW 64
#define FGB_INF_MAXSLOTS 1024

/** Schedulers, in output order.  The first three are flowgate's (per
 *  connection); l7-least-loaded is the per-request reference. */
#define FGB_INF_SCHED_LIST(X) \
	X(MAGLEV, "maglev")   \
	X(LC, "lc")           \
	X(MLOAD, "maglev-load") \
	X(L7, "l7-least-loaded")

enum fgb_inf_sched {
#define FG_X(e, n) FGB_INF_##e,
	FGB_INF_SCHED_LIST(FG_X)
#undef FG_X
	FGB_INF_NSCHED
};
extern const char *const fgb_inf_sched_names[FGB_INF_NSCHED];

struct fgb_inf_worker_spec {
	double speed;       /**< 1.0 = the reference GPU */
	uint32_t slots;     /**< continuous-batching slots (max batch) */
	uint32_t kv_tokens; /**< KV-cache capacity in tokens */
};

struct fgb_inf_cfg {
	const struct fgb_trace *trace;
	double load;                /**< offered work / cluster capacity */
	double keepalive;           /**< mean requests per connection (>= 1) */
	uint32_t mux;               /**< 0: HTTP/1.1 clients; N: HTTP/2, N connections */
	double prefill_ms;          /**< per prompt token at speed 1 */
	double decode_ms;           /**< per output token at speed 1 */
	uint32_t nw;
	struct fgb_inf_worker_spec w[FGB_INF_MAXW];
	bool speed_weights;         /**< maglev / lc weights = speed (else 1) */
	uint32_t interval_ms;       /**< scrape interval */
	uint32_t lag_ms;            /**< age of a page's numbers when scraped */
	double scrape_loss;         /**< fraction of scrapes that fail */
	struct fg_metrics_cfg metrics; /**< series, weights, saturate, margin, stale */
};

struct fgb_inf_result {
	uint64_t requests, connections;
	uint64_t moved;        /**< connections with a request served off their worker */
	uint64_t stale;        /**< maglev-load: placements on stale signals */
	uint64_t placed_load;  /**< maglev-load: placements by load (not A) */
	double ttft_p50_ms, ttft_p99_ms, e2e_p50_ms, e2e_p99_ms, kv_queue_p99_ms;
	double util[FGB_INF_MAXW]; /**< busy slot-time / (slots x run time) */
	double time_scale;     /**< trace time x this = simulated time */
	double run_s;          /**< first arrival to last reply */
};

/**
 * The cluster's capacity in requests per second for @p c's trace: per
 * worker speed x min(slots, kv_tokens / T) / E[service at speed 1], where
 * T is the mean tokens a running request holds (weighted by its time).
 */
double fgb_inf_capacity(const struct fgb_inf_cfg *c);

/**
 * One simulated run of scheduler @p s; @p seed draws the connections,
 * their tuples and the scrape losses (same seed: same connections for
 * every scheduler).
 * @return 0, -ENOMEM, or -EINVAL (a trace that spans no time).
 */
int fgb_inf_run(const struct fgb_inf_cfg *c, enum fgb_inf_sched s, uint64_t seed,
		struct fgb_inf_result *res);

#ifdef __cplusplus
}
#endif
#endif /* FLOWGATE_FGB_INFER_H */
