/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * The flowgate dataplane as one object: its lifecycle.
 *
 *   fg_dp_params_init(&p); p.cfg = &cfg; ...
 *   fg_dp_create(&p, &dp);     ports configured and started, workers and
 *                              conntrack shards allocated, config applied
 *   fg_dp_start(dp);           worker lcores launched, control socket,
 *                              telemetry and metrics serving
 *   while (!stop) fg_dp_poll(dp);   main lcore: neighbours, host path
 *   fg_dp_stop(dp);            control side stopped, then the workers
 *   fg_dp_destroy(dp);         ports closed, everything freed
 *   rte_eal_cleanup();         the caller's (it ran rte_eal_init)
 *
 * The daemon (fg_main.c) and `flowgate-bench dataplane` both build the
 * dataplane through these functions; the bench then runs its own lcore
 * loops over fg_worker_burst() (fg_worker_private.h) instead of fg_dp_start().
 *
 * Struct layouts are private (fg_dp_private.h and one header per part: fg_lb.h, fg_neigh.h, fg_port.h, fg_flow.h, fg_worker_private.h).
 *
 * Threads: every function here runs on the main lcore, after rte_eal_init()
 * and before rte_eal_cleanup(); none of them is reentrant.
 * A SIGHUP reload (fg_dp_ctl_server()) runs on the control thread, as a
 * `fgctl config apply` does.
 */
#ifndef FLOWGATE_FG_DP_H
#define FLOWGATE_FG_DP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "fg_config.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Most worker lcores a dataplane runs. */
#define FG_MAX_WORKERS 16
/** --idle-sleep without a value: the longest sleep, in microseconds. */
#define FG_IDLE_SLEEP_DEFAULT_US 200
/** mbufs per NUMA socket unless fg_dp_params::n_mbufs says otherwise. */
#define FG_DP_MBUFS_DEFAULT 65535
/** ICMP errors (frag-needed / packet-too-big, unreachable) and TCP RSTs
 *  the workers generate: at most this many per second per worker by
 *  default (`flowgate --icmp-rate N`, 0 = never), bursts of up to
 *  FG_ICMP_BURST.  Linux's icmp_ratelimit is 1000/s with burst 50 per
 *  host; a balancer sends on behalf of every VIP, so less per core. */
#define FG_ICMP_RATE_DEFAULT 100

struct fg_dp;
struct fg_ctl_server;

/** What a dataplane is built from.  fg_dp_params_init() fills defaults. */
struct fg_dp_params {
	/** Services, ports, neighbours, conntrack settings (required).
	 *  Copied; ports are matched to the probed ethdevs by name
	 *  (fg_port_cfg_resolve).  ct_capacity 0: CT_DEFAULT_CAPACITY. */
	const struct fg_config *cfg;
	/** Worker lcores used, in lcore order; 0 = every worker lcore. */
	unsigned int n_workers;
	/** Software RSS dispatch between workers: -1 auto, 0 off, 1 on. */
	int sw_rss;
	/** mbufs per NUMA socket (default FG_DP_MBUFS_DEFAULT). */
	unsigned int n_mbufs;
	/** Egress L3 MTU per port index, 0 = the device's own.  mbufs grow to
	 *  hold a frame of the largest (unless mbuf_data_room is set). */
	uint16_t mtu[FG_MAX_PORTS];
	/** mbuf data room; 0 = RTE_MBUF_DEFAULT_BUF_SIZE (the bench uses small
	 *  buffers to replay 10M-packet pcaps from memory). */
	uint16_t mbuf_data_room;
	/** Generated ICMP errors / RSTs per second per worker (0 = none). */
	uint32_t icmp_rate;
	/** Worker i polls queue 0 of port i only (bench, multi-port beds). */
	bool rx_port_per_worker;
	/** Bit p set: port index p only receives (one TX queue, never sent). */
	uint32_t rx_only_ports;
	/** The command line fixed the control socket / conntrack capacity: a
	 *  config apply keeps the running value (fgctl config apply). */
	bool cli_socket, cli_ct_capacity;
	/** --gpu launch mode ("graph" / "persistent"), NULL = CPU only. */
	const char *gpu_mode;
	/** --host-tap interface prefix, NULL = no host exception path. */
	const char *host_tap;
	/** --pdump: let dpdk-dumpcap attach (needs shared hugepage memory). */
	bool pdump;
	/** Control socket path served by fg_dp_start(); NULL = none (bench).
	 *  Telemetry commands are registered with it. */
	const char *socket_path;
	/** The -c file (absolute), or NULL: `fgctl config show` names it and
	 *  `fgctl config save` writes there by default. */
	const char *config_path;
	/** Control client idle limit in ms (0 = server default, < 0 = never). */
	int ctl_idle_ms;
	/** Prometheus listener "ADDR:PORT" started by fg_dp_start(), or NULL. */
	const char *metrics_addr;
	/** --announce: kernel routing table of the VIP routes kept through
	 *  port 0's host TAP (fg_announce.h; needs host_tap), 0 = off. */
	uint32_t announce_table;
	/** --second-chance (dsr-gue): picked-up flows carry the previous
	 *  Maglev owner in the GUE header (pkt/fg_xlate.h FG_GUE_FLAG_PREV). */
	bool second_chance;
	/** --idle-sleep: longest sleep of a worker whose polls come back
	 *  empty, in microseconds; 0 = busy polling. */
	uint32_t idle_sleep_us;
	/** --state-file: where fg_dp_state_save() writes the tracked flows
	 *  and learned neighbours on a stop and fg_dp_state_load() reads
	 *  them on a start (fg_state.h); NULL = neither (bench, tests). */
	const char *state_path;
};

/** Fills @p p with the defaults (every field above). */
void fg_dp_params_init(struct fg_dp_params *p);

/**
 * Builds a dataplane on the probed ethdevs and the worker lcores: conntrack
 * shards, RCU, mempools, ports configured and started, service and
 * neighbour tables published from @p p->cfg, GPU contexts and host TAPs
 * when asked.  Nothing runs yet.  Every failure is logged with what to
 * change (the option to raise or lower); everything built so far is freed
 * before it returns.
 * @return 0 and *out, or -EINVAL (bad params or config, no port / worker
 *   lcore), -ENODEV (a config port that is no device), -ENOMEM (conntrack,
 *   mbufs: lower --ct-capacity / --mbufs / --mtu), -ENOTSUP (--gpu without
 *   CUDA), or the -errno of the ethdev call that failed.
 */
int fg_dp_create(const struct fg_dp_params *p, struct fg_dp **out);

/**
 * Enforces @p mtu (68..16000) on what is encapsulated out of port index
 * @p port and asks the device for it (a device that refuses keeps its own;
 * flowgate still enforces it).  Before fg_dp_start().
 * @return 0 or -EINVAL.
 */
int fg_dp_port_mtu_set(struct fg_dp *dp, unsigned int port, uint16_t mtu);

/**
 * Launches fg_worker_main() on every worker lcore, then registers the
 * telemetry commands and starts the control socket and the metrics
 * listener when the params named them.  Logs "flowgate: running: ...".
 * @return 0, or the -errno of the control socket / metrics listener (the
 *   workers then run: call fg_dp_stop()).
 */
int fg_dp_start(struct fg_dp *dp);

/**
 * One round of the main lcore's housekeeping: publishes learned
 * neighbours, ages the neighbour table, moves the host path's packets.
 * @return the microseconds to sleep before the next round.
 */
unsigned int fg_dp_poll(struct fg_dp *dp);

/**
 * The control server, or NULL when the daemon runs without a control
 * socket.  A SIGHUP hands it the -c file (fg_daemon_reload(),
 * control/fg_daemon.h): applied in process exactly as `fgctl config
 * apply` does: validated, all-or-nothing, restart-only fields refused,
 * stable backend ids, tracked flows keep their backends, the health
 * checker follows.  Main lcore, between fg_dp_start() and fg_dp_stop().
 */
struct fg_ctl_server *fg_dp_ctl_server(struct fg_dp *dp);

/**
 * Restart hand-over, first half: restores the flows and learned
 * neighbours a stopped flowgate left in fg_dp_params::state_path (its
 * services and backends found again by address, its worker by the
 * dispatch hash; DESIGN.md "Restart and upgrade hand-over"), then removes
 * the file.  A missing file restores nothing; a file this build does not
 * read (another format version, a checksum, truncated, stale...) is
 * refused whole, by name (state_file_refused), logged and left in place
 * (a stale one removed); a flow that cannot be restored is counted by
 * reason (state_refused).  Logs one line with what it restored.  Main
 * lcore, after fg_dp_create() and before fg_dp_start().
 * @return 0 (a refusal is no failure: the daemon starts with empty tables).
 */
int fg_dp_state_load(struct fg_dp *dp);

/**
 * Restart hand-over, second half: writes every shard's live flows and the
 * learned neighbours to fg_dp_params::state_path (a temporary file, synced
 * and renamed over it, mode 0600).  Main lcore, after fg_dp_stop() (the
 * workers stopped), before fg_dp_destroy().  Logs what it wrote.
 * @return 0 (nothing to do without a path), or the -errno of the write
 *   (logged; the next start then restores nothing).
 */
int fg_dp_state_save(struct fg_dp *dp);

/** True while every started worker lcore has finished a loop iteration
 *  since the previous call (a stuck worker makes it false): the systemd
 *  watchdog's check.  Main lcore. */
bool fg_dp_workers_alive(struct fg_dp *dp);

struct ct_shard;
struct fg_lb_table;

/** Worker @p i's conntrack shard, NULL past the last worker: for the
 *  bench and tests that fill or walk a shard without a worker's layout
 *  (flowgate-bench state).  Main lcore, workers not started. */
struct ct_shard *fg_dp_worker_ct(struct fg_dp *dp, unsigned int i);

/** The service table in force (fg_lb.h), as the workers read it. */
const struct fg_lb_table *fg_dp_lb(const struct fg_dp *dp);

struct fg_state_stats;

/** What the last state load and save did (fg_state.h). */
const struct fg_state_stats *fg_dp_state_stats(const struct fg_dp *dp);

/**
 * Stops the metrics listener, the health checker and the control socket
 * (the socket file is removed), then the workers, and waits for every
 * lcore.  Safe after a failed fg_dp_start() and when never started.
 */
void fg_dp_stop(struct fg_dp *dp);

/** Prints the final counters (fg_stats_print) to @p f. */
void fg_dp_summary_print(struct fg_dp *dp, FILE *f);

/**
 * Stops and closes the ports, frees the GPU contexts, host TAPs, workers,
 * tables, rings and mempools.  The workers must be stopped (fg_dp_stop or
 * never started).  NULL is a no-op.  Does not call rte_eal_cleanup().
 */
void fg_dp_destroy(struct fg_dp *dp);

#ifdef __cplusplus
}
#endif
#endif /* FLOWGATE_FG_DP_H */
