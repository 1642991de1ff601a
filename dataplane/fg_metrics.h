/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * Prometheus endpoint: `flowgate --metrics ADDR:PORT` serves GET /metrics in
 * the Prometheus text exposition format (version 0.0.4).
 *
 * What it shows: the snapshot of fg_stats.h (the one `fgctl stats` and the
 * telemetry commands render), with conntrack counters: every per-core
 * counter of fg_counters.h and FG_DP_COUNTER_LIST as a
 * `flowgate_core_<name>_total{core}` family, every drop reason as a label
 * of `flowgate_drops_total{core,reason}`, per service and backend the
 * counter lists of fg_counters.h (`flowgate_service_<name>_total{service}`,
 * `flowgate_backend_<name>_total{service,backend}`), weights, backend
 * states, conntrack occupancy by state and capacity, build info.  Family
 * names come from the X-macro lists, so a counter added there appears here
 * with no edit.
 *
 * Threads: the server (control/fg_promserve.h) runs on its own pthread
 * (name "fg-metrics"), never on a worker.  A scrape costs the workers one
 * mailbox answer each (conntrack counters, between bursts) and nothing else.
 *
 * Security: the endpoint has no authentication; bind it to a management
 * address (e.g. --metrics 192.0.2.10:9469 or 127.0.0.1:9469), not to a VIP
 * network.
 */
#ifndef FLOWGATE_FG_METRICS_H
#define FLOWGATE_FG_METRICS_H

#include <stddef.h>
#include <stdio.h>
#include <sys/socket.h>

#include "fg_promserve.h"

#ifdef __cplusplus
extern "C" {
#endif

struct fg_dp;
struct fg_metrics;

/**
 * Binds @p listen ("ADDR:PORT", "[V6ADDR]:PORT"; numeric addresses only)
 * and starts the server thread.  Call after the services are configured.
 * Thread safety: main thread, once per server.
 * @return 0 and *out, -EINVAL (bad @p listen), -ENOMEM, or the -errno of
 *         socket/bind/listen/pthread_create.
 */
int fg_metrics_start(struct fg_dp *dp, const char *listen, struct fg_metrics **out);

/** Stops the thread, closes every socket, frees @p m.  NULL is a no-op.
 *  Main thread. */
void fg_metrics_stop(struct fg_metrics *m);

/**
 * Writes the exposition text of a fresh snapshot to @p f.
 * Thread safety: any non-worker thread (takes the snapshot locks).
 * @return 0, -ENOMEM (snapshot), -EIO (write error on @p f).
 */
int fg_metrics_render(struct fg_dp *dp, FILE *f);

#ifdef __cplusplus
}
#endif
#endif /* FLOWGATE_FG_METRICS_H */
