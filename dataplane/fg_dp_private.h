/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * The daemon's own state (struct fg_dp: fg_dp.c writes it at start-up)
 * and the glue between its parts: control socket, config loading, the
 * conntrack and control counters the control side reads.  The face is
 * fg_dp.h (create / start / stop / destroy); each part has its own header:
 * fg_lb.h (service table), fg_neigh.h (neighbours), fg_port.h (devices,
 * mbufs, host path), fg_flow.h (flow decisions), fg_worker_private.h (a
 * worker's layout, owned by its lcore).
 */
#ifndef FLOWGATE_FG_DP_PRIVATE_H
#define FLOWGATE_FG_DP_PRIVATE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <rte_common.h>
#include <rte_mempool.h>
#include <rte_rcu_qsbr.h>
#include <rte_ring.h>

#include "ct.h"
#include "fg_config.h"
#include "fg_config_gate.h"
#include "fg_dp.h"
#include "fg_port.h"
#include "fg_rss.h"
#include "fg_state.h"

#ifdef __cplusplus
extern "C" {
#endif

struct fg_worker;
struct fg_lb_table;
struct fg_load_table;
struct fg_neigh_table;
struct fg_metrics;
struct fg_announce;
struct fg_ctl_server;
struct fg_health;
struct fg_sync;

/** fg_dp::local_peer of this node's own `sync { nat }` addresses */
#define FG_LOCAL_OWN_NAT 0xFF

struct fg_dp {
	/** first: the control ops' ctx is the gate (config.check / apply) */
	struct fg_config_gate gate;
	unsigned int n_workers;
	unsigned int n_ports;
	struct fg_port ports[FG_MAX_PORTS];
	uint16_t reta[FG_RSS_RETA_SIZE]; /**< worker of a dispatch hash */
	bool sw_rss;            /**< dispatch in software over rings */
	struct fg_worker *workers[FG_MAX_WORKERS];
	struct rte_mempool *pool[RTE_MAX_NUMA_NODES];
	struct rte_rcu_qsbr *qsbr;
	struct fg_lb_table *lb;         /**< read with __atomic acquire */
	/** maglev-load signals (fg_load.h); read with __atomic acquire */
	struct fg_load_table *load;
	struct fg_neigh_table *neigh;   /**< read with __atomic acquire */
	struct rte_ring *learn_ring;    /**< MP/SC: workers -> main */
	uint64_t neigh_age;             /**< FG_NEIGH_AGE_S in ticks (0: never) */
	uint32_t icmp_rate;             /**< generated errors/s per worker (0: none) */
	uint64_t neigh_aged_at;         /**< main lcore: last ageing check */
	pthread_mutex_t cfg_lock;       /**< serializes control-side readers/writers */
	pthread_mutex_t mbox_lock;      /**< one mailbox producer at a time */
	struct fg_config *cfg;          /**< running config (owned) */
	/** Local addresses of all ports, flattened (ct_entry::nat_addr). */
	struct fg_addr locals[FG_MAX_PORTS * FG_MAX_LOCAL_ADDRS];
	unsigned int n_locals;
	/** sync: 0 = locals[i] is this node's, FG_LOCAL_OWN_NAT one of its
	 *  `sync { nat }` addresses, p + 1 = sync peer p's NAT address (held
	 *  for a takeover: never a new flow's source) */
	uint8_t local_peer[FG_MAX_PORTS * FG_MAX_LOCAL_ADDRS];
	/** sync { nat } names this node's NAT addresses: only those are new
	 *  NAT flows' sources */
	bool nat_own_only;
	uint64_t hz;
	uint64_t flush_ticks;
	uint32_t ct_capacity;
	/** mbuf data room (0 = RTE_MBUF_DEFAULT_BUF_SIZE); the bench uses
	 *  small buffers to replay 10M-packet pcaps from memory. */
	uint16_t mbuf_data_room;
	bool host_tap;                  /**< --host-tap: host[] is set up */
	struct fg_host_port host[FG_MAX_PORTS];
	volatile bool stop;
	bool no_tx;                     /**< bench: free instead of TX */
	/** --second-chance: a dsr-gue packet of a flow picked up without its
	 *  SYN carries the previous Maglev owner when it differs (GLB-style
	 *  second chance, pkt/fg_xlate.h FG_GUE_FLAG_PREV). */
	bool second_chance;
	/** --idle-sleep: longest sleep (us) of a worker whose polls come back
	 *  empty; 0 = busy polling (fg_worker_main). */
	uint32_t idle_sleep_us;
	/** Worker i polls queue 0 of port i only (one RX port per worker,
	 *  as with one NIC queue per core; bench and multi-port testbeds). */
	bool rx_port_per_worker;
	/** The command line fixed these (-s / $FLOWGATE_SOCKET,
	 *  --ct-capacity): a config apply keeps the running value, as a
	 *  restart with the same command line would. */
	bool cli_socket, cli_ct_capacity;
	/* lifecycle (fg_dp.c) */
	struct fg_dp_params params;     /**< as created; strings below */
	char socket_path[FG_PATH_MAX];
	char metrics_addr[64];
	char gpu_mode[16];
	char host_tap_prefix[16];
	char state_path[4096];
	/** restart hand-over: what the load at start and the save at stop
	 *  did (fg_state.c; main lcore writes, control threads read) */
	struct fg_state_stats state;
	struct fg_metrics *metrics;     /**< --metrics listener or NULL */
	/** fg_control.c: the control server and the health checker (NULL
	 *  without); set before and cleared after the threads that read them */
	struct fg_ctl_server *ctl;
	struct fg_health *health;
	struct fg_announce *announce;   /**< --announce route keeper or NULL */
	struct fg_sync *sync;           /**< the config's sync block, or NULL */
	bool pdump_on;                  /**< rte_pdump_init() succeeded */
	bool control_on;                /**< fg_control_start() succeeded */
	bool launched;                  /**< workers launched (fg_dp_start) */
	uint64_t alive_seen[FG_MAX_WORKERS]; /**< tx_flushes at the last check */
};

/* fg_gpupath.c: the optional GPU batch path (`flowgate --gpu`) */
/** Creates one GPU context per worker in launch mode @p mode ("graph" or
 *  "persistent") and gives it the dispatch RETA.  Main lcore, after the
 *  workers exist and before they run.  @return 0, -ENOTSUP (built without
 *  CUDA), -ENODEV (no CUDA device), -EINVAL (bad mode), or the -errno of
 *  fg_gpu_create (a message is printed in every case). */
int fg_gpupath_create(struct fg_dp *dp, const char *mode);
/** Destroys the workers' GPU contexts.  Main lcore, workers stopped. */
void fg_gpupath_free(struct fg_dp *dp);

/* fg_control.c */
/** Conntrack counters of worker @p i through its mailbox.  Control side.
 *  @return 0, -ETIMEDOUT (worker stuck), -ENOMEM. */
int fg_dp_ct_stats(struct fg_dp *dp, unsigned int i, struct ct_stats *out);
/** Loads a config file with control/fg_config_parse (errors printed as
 *  file:line: reason).  @return 0 or -errno. */
int fg_dp_config_load(const char *path, struct fg_config *out);
/** Creates the control socket and starts its thread; @p idle_timeout_ms
 *  as fg_ctl_server_params::idle_timeout_ms (0 = default, < 0 = never).
 *  @return 0 or -errno. */
int fg_control_start(struct fg_dp *dp, const char *socket_path, const char *config_path,
		     int idle_timeout_ms);
void fg_control_stop(struct fg_dp *dp);

#ifdef __cplusplus
}
#endif
#endif /* FLOWGATE_FG_DP_PRIVATE_H */
