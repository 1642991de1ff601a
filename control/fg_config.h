/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * flowgate's declarative configuration: the one model of services,
 * backends, timeouts, ports and health checks.  The config file, every
 * `fgctl` change and the dataplane all speak this struct: a change is
 * "copy the running config, edit the copy, validate, apply the whole copy".
 * Apply is all-or-nothing; live flows keep their backend (conntrack holds
 * the backend id, and ids are stable: a backend keeps its id as long as it
 * exists in the service).
 *
 * Plain C data, no DPDK types, so the CLI, the parser fuzz target and the
 * daemon share it.
 */
#ifndef FLOWGATE_FG_CONFIG_H
#define FLOWGATE_FG_CONFIG_H

#include <stdbool.h>
#include <stdint.h>
#include <netinet/in.h>

#ifdef __cplusplus
extern "C" {
#endif

#define FG_MAX_SERVICES 256
#define FG_MAX_BACKENDS 1024   /**< per service */
#define FG_MAX_PORTS 16  /**< one RX port per worker on multi-queue-less testbeds */
#define FG_MAX_LOCAL_ADDRS 16
#define FG_MAX_NEIGH 256
#define FG_NAME_MAX 32
#define FG_PATH_MAX 108
#define FG_GUE_DEFAULT_PORT 6080 /**< GUE destination port when the config names none */

/** An IPv4 or IPv6 address. */
struct fg_addr {
	uint8_t family; /**< AF_INET or AF_INET6 */
	union {
		struct in_addr v4;
		struct in6_addr v6;
		uint8_t bytes[16];
	};
};

enum fg_fwd_mode { FG_MODE_DSR_IPIP = 0, FG_MODE_DSR_GUE, FG_MODE_NAT };
/** maglev-load: Maglev, or a second Maglev candidate when the workers' own
 *  load signals (health metrics) say it is less loaded; docs/INFERENCE.md. */
enum fg_sched { FG_SCHED_MAGLEV = 0, FG_SCHED_LC, FG_SCHED_MAGLEV_LOAD };
/** What happens to a failed backend's existing flows. */
enum fg_fail_policy { FG_FAIL_KEEP = 0, FG_FAIL_RESET };
/** metrics: scrape the worker's Prometheus endpoint for load signals
 *  (control/fg_loadsig.h); never marks a backend down. */
enum fg_hc_type { FG_HC_NONE = 0, FG_HC_TCP, FG_HC_HTTP, FG_HC_METRICS };

/** Series read by a `metrics` check (FG_LOAD_SERIES_MAX at most). */
#define FG_LOAD_SERIES_MAX 4
#define FG_LOAD_NAME_MAX 64

/** Load-signal presets of the `metrics` check (control/fg_loadsig.c). */
enum fg_load_preset { FG_LOAD_PRESET_VLLM = 0, FG_LOAD_PRESET_SGLANG,
		      FG_LOAD_PRESET_TRITON, FG_LOAD_PRESET_CUSTOM };

struct fg_load_series_cfg {
	char name[FG_LOAD_NAME_MAX];  /**< Prometheus series name */
	char alt[FG_LOAD_NAME_MAX];   /**< read instead when name is absent ("" none) */
	uint32_t weight_milli;        /**< score = sum(value x weight / 1000) */
};

/** The `metrics` check's parameters (fg_health_cfg::type FG_HC_METRICS). */
struct fg_metrics_cfg {
	enum fg_load_preset preset;
	uint32_t n_series;
	struct fg_load_series_cfg series[FG_LOAD_SERIES_MAX];
	char select[128];        /**< label selector, e.g. model_name="llama" ("" all) */
	uint32_t stale_ms;       /**< signal older than this is stale (default 4 x interval) */
	uint32_t saturate_milli; /**< score at which a worker gets no new flows (0 = never) */
	uint32_t margin_milli;   /**< hysteresis: the second candidate must be this much
				      less loaded than the Maglev one (default 1000) */
};

struct fg_health_cfg {
	enum fg_hc_type type;
	uint32_t interval_ms; /**< default 1000 */
	uint32_t timeout_ms;  /**< default 500 */
	uint8_t rise;         /**< default 2 */
	uint8_t fall;         /**< default 3 */
	uint16_t port;        /**< 0 = backend's port */
	char path[64];        /**< HTTP path, default "/health" */
	uint16_t expect_status; /**< HTTP status, default 200 */
	struct fg_metrics_cfg metrics; /**< type FG_HC_METRICS only (else zero) */
};

struct fg_backend_cfg {
	struct fg_addr addr;
	uint16_t port;       /**< NAT: backend port (host order); 0 = service port */
	uint32_t weight;     /**< 0..65535; 0 = no new flows */
	bool drained;        /**< no new flows, existing ones stay */
	uint32_t id;         /**< stable id, assigned by the config layer */
	struct fg_addr src;  /**< DSR: outer source address (0 = port's local) */
	uint32_t src_line;   /**< config file line (0 = not from a file) */
	/** Runtime state, never in the file: failed its health check
	 *  (fg_health_mark).  Treat like drained (no new flows); the service's
	 *  on_fail policy says what happens to its existing flows. */
	bool health_down;
};

struct fg_service_cfg {
	char name[FG_NAME_MAX];
	struct fg_addr vip;
	uint16_t port;       /**< host order */
	uint8_t proto;       /**< IPPROTO_TCP / IPPROTO_UDP */
	enum fg_fwd_mode mode;
	enum fg_sched sched;
	enum fg_fail_policy on_fail;
	uint16_t gue_port;   /**< GUE destination port (host order), default FG_GUE_DEFAULT_PORT */
	uint32_t maglev_size; /**< prime, 0 = smallest prime >= max(65537, 100 x backends) */
	struct fg_health_cfg health;
	uint32_t n_backends;
	struct fg_backend_cfg backends[FG_MAX_BACKENDS];
	uint32_t id;
	uint32_t src_line;   /**< config file line (0 = not from a file) */
};

struct fg_neigh_cfg {
	struct fg_addr ip;
	uint8_t mac[6];
	uint16_t port;
};

struct fg_port_cfg {
	char name[FG_NAME_MAX];   /**< ethdev name (e.g. net_af_packet0) */
	uint8_t mac[6];           /**< 0 = the device's own */
	uint32_t n_local;
	struct fg_addr local[FG_MAX_LOCAL_ADDRS]; /**< balancer's own addresses (NAT source) */
	struct fg_addr gateway;   /**< default next hop (family 0 = none) */
	struct fg_addr gateway6;
	uint16_t vlan;            /**< 0 = untagged */
};

/** Peers of `sync` at most. */
#define FG_MAX_SYNC_PEERS 16
/** Default `sync rate`: flow records a second each peer gets at most. */
#define FG_SYNC_RATE_DEFAULT 200000

/** NAT source addresses of one peer at most (`peer ... nat ADDR...`). */
#define FG_SYNC_PEER_NAT_MAX 4

/** A `sync { peer NAME ADDR:PORT node ID [nat ADDR...]; }`. */
struct fg_sync_peer_cfg {
	char name[FG_NAME_MAX];
	struct fg_addr addr;
	uint16_t port;       /**< host order */
	uint32_t node;       /**< its node id (never 0) */
	/** the peer's own NAT source addresses: `local` addresses of a port
	 *  here too, never used for this node's new flows, announced (with
	 *  --announce) while the peer is dead: the takeover */
	uint32_t n_nat;
	struct fg_addr nat[FG_SYNC_PEER_NAT_MAX];
};

/** The `sync { }` block: state sync between nodes (issue 35,
 *  dataplane/fg_sync.h).  Restart-only. */
struct fg_sync_cfg {
	bool on;             /**< the block is there */
	struct fg_addr listen;
	uint16_t port;       /**< host order */
	uint32_t node;       /**< this node's id (never 0) */
	char key_path[FG_PATH_MAX];
	bool dsr;            /**< `dsr on`: DSR services too (NAT always) */
	/** `nat ADDR...;`: this node's own NAT source addresses (`local`
	 *  addresses of a port): new NAT flows take only these, and
	 *  --announce announces them; none: every local address of this
	 *  node's (not a peer's), none announced */
	uint32_t n_nat;
	struct fg_addr nat[FG_SYNC_PEER_NAT_MAX];
	uint32_t rate;       /**< records/s per peer (0: FG_SYNC_RATE_DEFAULT) */
	uint32_t n_peers;
	struct fg_sync_peer_cfg peers[FG_MAX_SYNC_PEERS];
};

struct fg_config {
	uint32_t n_services;
	struct fg_service_cfg *services; /**< array of n_services */
	uint32_t n_ports;
	struct fg_port_cfg ports[FG_MAX_PORTS];
	uint32_t n_neigh;
	struct fg_neigh_cfg neigh[FG_MAX_NEIGH];
	/* conntrack */
	uint32_t ct_capacity;       /**< flows per core */
	/** NAT flows per core (their reply entries' region); 0 = conntrack's
	 *  default (ct_config::capacity_reply) */
	uint32_t ct_nat_capacity;
	uint32_t ct_timeouts_ms[16]; /**< by enum ct_state; 0 = default */
	uint32_t flood_rate;        /**< per core new flows/s; 0 = off */
	/* daemon */
	char control_socket[FG_PATH_MAX];
	/** `control_socket_ro PATH group G;`: a second control socket, mode
	 *  0660 and group G, on which every request that changes state is
	 *  refused (monitoring users); "" = none.  Restart-only. */
	char control_socket_ro[FG_PATH_MAX];
	char control_socket_ro_group[FG_NAME_MAX]; /**< group name or number */
	uint32_t gue_port;
	struct fg_sync_cfg sync;
	/** Runtime state, not in the file: the highest backend id
	 *  fg_config_assign_ids has handed out, so it never hands one out
	 *  twice (the dataplane keeps a removed backend's id for its flows:
	 *  a new backend under it would take them over). */
	uint32_t backend_id_max;
};

#ifdef __cplusplus
}
#endif
#endif /* FLOWGATE_FG_CONFIG_H */
