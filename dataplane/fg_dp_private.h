/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * flowgate dataplane internals: the struct layouts and functions shared by
 * the files of dataplane/ (the face is fg_dp.h: create / start / stop /
 * destroy).  flowgate-bench dataplane and the tests include this header to
 * drive fg_worker_burst() and read per-core counters directly.
 *
 * Objects and who writes them:
 * - struct fg_dp: one per process; written by the main lcore at start-up.
 * - struct fg_lb_table: services, backends, Maglev tables, addresses we
 *   answer ARP/ND for.  Immutable once published; the main lcore builds a
 *   new one, swaps fg_dp::lb, waits for an rte_rcu_qsbr grace period and
 *   frees the old one (fg_lb.c).
 * - struct fg_neigh_table: next-hop MACs, same publication scheme; workers
 *   post learned entries over an MP/SC ring, the main lcore republishes.
 * - struct fg_worker: one per worker lcore, written only by that lcore
 *   (its conntrack shard, TX buffers, counters).  Readers sum counters.
 */
#ifndef FLOWGATE_FG_DP_PRIVATE_H
#define FLOWGATE_FG_DP_PRIVATE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <rte_common.h>
#include <rte_ethdev.h>
#include <rte_ether.h>
#include <rte_mbuf.h>
#include <rte_rcu_qsbr.h>
#include <rte_ring.h>

#include "ct.h"
#include "fg_dp.h"
#include "fg_config.h"
#include "fg_counters.h"
#include "fg_pkt.h"
#include "fg_rss.h"
#include "fg_state.h"

#ifdef __cplusplus
extern "C" {
#endif

#define FG_BURST 32
/** --idle-sleep: empty polls in a row before a worker starts sleeping. */
#define FG_IDLE_SPINS 64
#define FG_NEIGH_MAX 4096
/** Learned neighbours expire this long (seconds) after they were last
 *  confirmed; from 3/4 of it they are "stale": still used, and re-solicited
 *  by the workers that use them, so a live neighbour is refreshed before
 *  it expires.  Static (configured) neighbours never expire. */
#define FG_NEIGH_AGE_S 300
/** Burst of generated ICMP errors / RSTs allowed above the rate
 *  (FG_ICMP_RATE_DEFAULT, fg_dp.h). */
#define FG_ICMP_BURST 10
/** An ARP reply / neighbour advertisement is learned only for an address a
 *  worker solicited within this many seconds (or a configured gateway). */
#define FG_NEIGH_SOLICIT_WINDOW_S 3
/** Addresses each worker remembers having solicited: sets x ways. */
#define FG_SOLICIT_SETS 256
#define FG_SOLICIT_WAYS 4
/** A learned neighbour answered less than this long ago (ms) keeps its
 *  MAC: a later answer with another MAC is not learned (neigh_locked),
 *  as Linux's ARP locktime (1 s): the first answer to a solicitation
 *  wins, not the last (an on-link host answering for a NAT client took
 *  its replies). */
#define FG_NEIGH_LOCKTIME_MS 1000
/** ARP requests / neighbour solicitations for addresses we hold no entry
 *  for, per port and second, all workers together (each worker gets its
 *  share), in bursts of up to FG_SOLICIT_BURST: a flood of spoofed
 *  on-link NAT sources made one broadcast request each (2,400 a second
 *  measured).  Beyond it they are not sent (arp_ratelimited); the address
 *  is asked for again at its next packet.  Requests for a configured
 *  gateway and re-solicitations of entries the table holds are not
 *  limited.  The burst lets 256 on-link clients that connect at once be
 *  asked for at once. */
#define FG_SOLICIT_RATE 256
#define FG_SOLICIT_BURST 256
/** Backends removed by an apply stay in the table (tombstones) while
 *  conntrack tracks flows of them, so those flows are still forwarded
 *  (FG_FAIL_KEEP) until they end; a service keeps at most this many.
 *  Above it, the tombstones with the fewest flows are dropped (logged) and
 *  their flows' packets count tombstone_evicted (fg_lb.c).  Each costs
 *  one struct fg_lb_backend and a counter row per worker (~1 KB at 8
 *  workers), as a live backend does. */
#define FG_TOMBSTONE_MAX 256

/** Daemon-only counters that are not (yet) in fg_counters.h. */
#define FG_DP_COUNTER_LIST(X) \
	X(backend_gone_fwd,  "packets of flows whose backend left the config, sent to its last address") \
	X(backend_gone_drop, "packets of flows whose backend left the config, dropped (on_fail=reset)") \
	X(service_gone,      "packets of flows whose service left the config, dropped") \
	X(nat_rst_sent,      "NAT: RSTs sent for TCP segments of flows the balancer does not know (the segment counts as nat_not_syn; --icmp-rate limits them)") \
	X(tombstone_evicted, "packets of flows whose removed backend the table no longer holds (more than FG_TOMBSTONE_MAX removed backends with flows), dropped as no_backend") \
	X(arp_requests,      "ARP requests / neighbour solicitations sent for unknown next hops") \
	X(neigh_learned,     "neighbour entries learned from ARP / NDP") \
	X(neigh_learn_full,  "learned neighbour not posted: learn ring full") \
	X(neigh_table_full,  "neighbour not learned: the table holds FG_NEIGH_MAX entries") \
	X(neigh_unsolicited, "ARP replies / neighbour advertisements for addresses nobody solicited (not learned)") \
	X(neigh_locked,      "ARP replies / neighbour advertisements with another MAC for an address answered less than FG_NEIGH_LOCKTIME_MS ago (not learned)") \
	X(arp_ratelimited,   "ARP requests / neighbour solicitations for unknown addresses not sent: the port's FG_SOLICIT_RATE was spent") \
	X(tx_flushes,        "TX buffer flushes by the 100 us timer") \
	X(watch_dropped,     "flows watch events dropped: event ring full (watcher too slow)") \
	X(host_to_wire,      "--host-tap: packets from the host kernel's TAP sent out of their port") \
	X(host_ring_full,    "--host-tap: packets for the host dropped, ring to the main lcore full") \
	X(ct_hit_relookup,   "hits looked up again: an insert earlier in the burst evicted or deleted an entry (the hit may have lost its slot)") \
	X(frag_follow,       "first fragments that (re)armed a fragment-follow entry for their flow's later fragments") \
	X(frag_follow_fail,  "first fragments whose fragment-follow entry could not be inserted (table full / flood; or their IP ID unreadable: never expected)") \
	X(second_chance,     "--second-chance: packets of picked-up flows sent with the previous Maglev owner as a GUE hint") \
	X(idle_sleeps,       "--idle-sleep: empty polls after which the worker slept") \
	X(gpu_packets,       "--gpu: packets parsed and hashed by the GPU batch path") \
	X(gpu_fallback,      "--gpu: packets the CPU parsed instead (multi-segment, GPU error or GPU path stopped)") \
	X(gpu_stale,         "--gpu: new flows whose GPU Maglev answer predates the service table (recomputed on the CPU)") \
	X(gpu_table_uploads, "--gpu: service / Maglev tables uploaded to the GPU after a config change") \
	X(gpu_errors,        "--gpu: GPU bursts that failed (the burst ran on the CPU)")

enum fg_dp_counter {
#define FG_X(n, d) FG_DC_##n,
	FG_DP_COUNTER_LIST(FG_X)
#undef FG_X
	FG_DC_MAX
};
extern const char *const fg_dp_counter_names[FG_DC_MAX];

/* ---------------- service / backend table (fg_lb.c) ---------------- */

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

/* ---------------- neighbours (fg_neigh.c) ---------------- */

struct fg_neigh_entry {
	uint8_t used, family, is_static, port;
	uint8_t addr[16];
	struct rte_ether_addr mac;
	uint8_t stale;          /**< learned, past 3/4 of its age: re-solicit */
	uint64_t learned_tsc;   /**< last confirmation (rte_rdtsc) */
};

struct fg_neigh_table {
	uint64_t gen;           /**< build number, never 0 (worker caches) */
	uint32_t mask;
	uint32_t count;
	struct fg_neigh_entry *e;
};

/** What a worker posts when it learns a neighbour (to fg_dp::learn_ring). */
struct fg_neigh_learn {
	uint8_t family, port;
	uint8_t addr[16];
	struct rte_ether_addr mac;
	uint64_t tsc;           /**< when the worker took the answer (locktime) */
};

const struct fg_neigh_entry *fg_neigh_lookup(const struct fg_neigh_table *t,
					     uint8_t family, const void *addr);
/** Builds a table from static config entries plus @p old's learned ones plus
 *  @p add (may be NULL).  @return NULL on ENOMEM. */
struct fg_neigh_table *fg_neigh_table_build(const struct fg_config *cfg,
					    const struct fg_neigh_table *old,
					    const struct fg_neigh_learn *add,
					    unsigned int n_add);
/**
 * fg_neigh_table_build with ageing at time @p now (rte_rdtsc ticks): a
 * learned entry of @p old confirmed @p age ticks ago or more is left out,
 * one confirmed 3/4 @p age ago or more is copied as stale; @p add entries
 * are confirmed at @p now.  @p age 0: no ageing.  Entries beyond
 * FG_NEIGH_MAX are left out (statics first, then @p old, then @p add).
 * Main lcore (or a test).  @return NULL on ENOMEM.
 */
struct fg_neigh_table *fg_neigh_table_build_aged(const struct fg_config *cfg,
						 const struct fg_neigh_table *old,
						 const struct fg_neigh_learn *add,
						 unsigned int n_add, uint64_t now,
						 uint64_t age);
/** True when @p t has a learned entry that ageing at @p now would drop or
 *  newly mark stale (the main lcore rebuilds only then). */
bool fg_neigh_table_due(const struct fg_neigh_table *t, uint64_t now,
			uint64_t age);
void fg_neigh_table_free(struct fg_neigh_table *t);

/* ---------------- ports and workers ---------------- */

struct fg_port {
	uint16_t port_id;
	struct rte_ether_addr mac;
	uint16_t n_rxq, n_txq;
	uint16_t mtu;
	bool hw_rss;            /**< symmetric key programmed */
	bool rx_only;           /**< replay source (bench): never transmits,
				     one TX queue whatever the workers */
	struct fg_port_cfg cfg; /**< locals, gateways */
};


/** --host-tap: the host exception path of one port.  Packets for the host
 *  (to a local address and not a tracked flow, ICMP the balancer does not
 *  handle, ARP/ND replies) go from any worker over @c to_host (MP/SC) to
 *  the main lcore, which writes them to the kernel's TAP; what the kernel
 *  sends comes back over @c to_wire (SP/SC) to worker 0, which transmits
 *  it on its own queue of the port. */
struct fg_host_port {
	uint16_t tap;           /**< ethdev id of the net_tap */
	struct rte_ring *to_host;
	struct rte_ring *to_wire;
	uint64_t to_kernel;     /**< main lcore: packets written to the TAP */
	uint64_t tap_full;      /**< main lcore: TAP TX refused, freed */
	uint64_t wire_full;     /**< main lcore: to_wire ring full, freed */
};

struct fg_dp;

/** A `flows watch` event, posted by a worker to its event ring (SP/SC:
 *  the worker produces, the control thread consumes). */
enum fg_flow_ev_type { FG_EV_NEW = 0, FG_EV_DESTROY = 1, FG_EV_UPDATE = 2 };
#define FG_EV_RING_SIZE 8192

struct fg_flow_ev {
	uint8_t type;           /**< enum fg_flow_ev_type */
	uint8_t family;         /**< enum ct_family */
	uint8_t reason;         /**< DESTROY: enum ct_destroy_reason */
	uint8_t prev_state;     /**< UPDATE: enum ct_state before the change */
	uint8_t pad[4];
	union {
		struct ct_key4 k4;
		struct ct_key6 k6;
	} key;                  /**< forward key (client -> VIP) */
	struct ct_entry e;      /**< forward entry at the event */
	uint64_t tsc;           /**< when (the worker's burst clock) */
	uint64_t life;          /**< ticks since the flow was created */
};

/* struct fg_worker: fg_worker_private.h (its layout is the worker's own) */
struct fg_worker;

struct fg_dp {
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
	struct fg_announce *announce;   /**< --announce route keeper or NULL */
	bool pdump_on;                  /**< rte_pdump_init() succeeded */
	bool control_on;                /**< fg_control_start() succeeded */
	bool launched;                  /**< workers launched (fg_dp_start) */
	uint64_t alive_seen[FG_MAX_WORKERS]; /**< tx_flushes at the last check */
};

/** fg_mbuf_priv::parsed */
enum {
	FG_PARSED_NO = 0,  /**< not parsed yet (fg_worker_burst's rx) */
	FG_PARSED_CPU = 1, /**< pkt filled by fg_pkt_parse() */
	FG_PARSED_GPU = 2, /**< pkt and the gpu_* fields filled by the GPU path */
};
/** fg_mbuf_priv::gpu_service of a packet that matches no service. */
#define FG_GPUPATH_NO_SERVICE 0xFFFFu

/** Private area of every mbuf of flowgate's pools. */
struct fg_mbuf_priv {
	struct fg_pkt pkt;
	uint8_t parsed;         /**< FG_PARSED_* */
	/* FG_PARSED_GPU only: what fg_gpupath_classify() read back, exactly
	 * the CPU path's values (gpu/fg_gpu.h, tests/gpu) */
	uint16_t gpu_owner;     /**< reta[rss % 128]: the owning worker */
	uint16_t gpu_service;   /**< index in lb->services or FG_GPUPATH_NO_SERVICE */
	uint32_t gpu_sig;       /**< fg_pkt_sig() */
	uint32_t gpu_rss;       /**< fg_rss_hash() */
	uint32_t gpu_backend;   /**< service's maglev[sig % size] or UINT32_MAX */
	uint64_t gpu_gen;       /**< fg_lb_table::generation those tables had */
};

static inline struct fg_mbuf_priv *fg_mbuf_priv(struct rte_mbuf *m)
{
	return (struct fg_mbuf_priv *)rte_mbuf_to_priv(m);
}

/* fg_port.c */
/**
 * Matches the config's ports to this daemon's devices by name
 * (rte_eth_dev_get_port_by_name; a port without a name is device i, as
 * options-built configs write them) and rewrites @p cfg in the dataplane's
 * terms: one port entry per device, in device order, named after the
 * device (devices without a port block get an empty one), and every
 * neighbour's port turned from a config port position into that device
 * index.  So the order of port blocks in a file never decides where
 * packets leave.  Main lcore or control thread (reads dp->ports only).
 * @return 0; -ENODEV (a name that is not a device here, or an unnamed port
 *   beyond the devices) or -EINVAL (two ports on one device, a neighbour on
 *   an undefined port), with @p err saying which.
 */
int fg_port_cfg_resolve(const struct fg_dp *dp, struct fg_config *cfg,
			char *err, size_t err_len);

/** The device's own counters (rte_eth_stats) shown next to flowgate's:
 *  a device that drops on TX (tx_errors) is visible in `fgctl stats`,
 *  telemetry and the exit summary.  Declared once. */
#define FG_PORT_COUNTER_LIST(X)                                              \
	X(rx_packets, ipackets, "packets the device received")              \
	X(tx_packets, opackets, "packets the device sent")                  \
	X(rx_missed, imissed, "packets the device dropped: RX queue full")  \
	X(rx_errors, ierrors, "erroneous packets the device received")      \
	X(tx_errors, oerrors, "packets the device failed to send (its own TX drops)")

enum fg_port_counter {
#define FG_X(n, field, d) FG_PC_##n,
	FG_PORT_COUNTER_LIST(FG_X)
#undef FG_X
	FG_PC_MAX
};
extern const char *const fg_port_counter_names[FG_PC_MAX];

/** Reads the counters of port index @p p (rte_eth_stats_get).  Any thread.
 *  @return 0, -EINVAL (no such port) or the ethdev's -errno. */
int fg_port_counters(const struct fg_dp *dp, unsigned int p,
		     uint64_t out[FG_PC_MAX]);

/** Creates the mempools and configures/starts every port with one RX and
 *  TX queue per worker where it can; programs the symmetric RSS key when
 *  the port supports RSS.  @p sw_rss: -1 auto, 0 off, 1 on.
 *  @return 0 or -errno (message printed). */
int fg_port_setup(struct fg_dp *dp, int sw_rss, unsigned int n_mbufs);

/* fg_worker.c */
/** Allocates a worker (conntrack shard, TX buffers).  Main lcore. */
int fg_worker_create(struct fg_dp *dp, unsigned int idx, unsigned int lcore,
		     struct fg_worker **out);
void fg_worker_free(struct fg_worker *w);
/** The per-lcore loop (rte_eal_remote_launch entry).  Returns on w->stop. */
int fg_worker_main(void *arg);
/** Processes one burst (the pipeline of DESIGN.md).  mbuf->port must be
 *  the flowgate port index.  @p rx: the burst is straight from a port's
 *  RX and every packet is parsed here; else the private area's parsed flag
 *  says which are parsed already (another worker's dispatch: all; the GPU
 *  path: those it classified; FG_PARSED_NO: not yet).  Exposed for tests
 *  and the bench.  Owner lcore only. */
void fg_worker_burst(struct fg_worker *w, struct rte_mbuf **pkts, uint16_t n,
		     uint64_t now, bool rx);
/** Creates the SP/SC software-RSS rings between all workers.  Main lcore. */
int fg_worker_rings_create(struct fg_dp *dp);
/** Drains dispatch rings, expires, polls the mailbox, flushes TX.
 *  @return packets it took from the dispatch rings and the host path
 *  (--idle-sleep counts them as work).  Owner lcore only. */
unsigned int fg_worker_housekeeping(struct fg_worker *w, uint64_t now);

/* fg_host.c: the host exception path (`flowgate --host-tap[=PREFIX]`) */
/** Creates a net_tap per port (kernel interface PREFIX<port index>, the
 *  port's MAC) and its two rings.  Main lcore, after fg_port_setup().
 *  @return 0 or -errno (message printed). */
int fg_host_setup(struct fg_dp *dp, const char *prefix);
/** Main lcore: moves packets worker -> TAP and TAP -> ring of worker 0.
 *  @return the packets it moved (either way). */
unsigned int fg_host_poll(struct fg_dp *dp);
/** Main lcore, workers stopped: stops the TAPs, frees rings and mbufs. */
void fg_host_free(struct fg_dp *dp);

/* fg_gpupath.c: the optional GPU batch path (`flowgate --gpu`) */
/** Creates one GPU context per worker in launch mode @p mode ("graph" or
 *  "persistent") and gives it the dispatch RETA.  Main lcore, after the
 *  workers exist and before they run.  @return 0, -ENOTSUP (built without
 *  CUDA), -ENODEV (no CUDA device), -EINVAL (bad mode), or the -errno of
 *  fg_gpu_create (a message is printed in every case). */
int fg_gpupath_create(struct fg_dp *dp, const char *mode);
/** Destroys the workers' GPU contexts.  Main lcore, workers stopped. */
void fg_gpupath_free(struct fg_dp *dp);
/** Runs a received burst through the GPU: parse, flow signature, dispatch
 *  hash and Maglev answer land in each mbuf's private area
 *  (FG_PARSED_GPU), so fg_worker_burst() skips that work.  Uploads the
 *  service tables first when their generation changed.  Packets the GPU
 *  path cannot take stay FG_PARSED_NO and the CPU parses them (counted as
 *  gpu_fallback).  Owner lcore only; w->gpu must be set. */
void fg_gpupath_classify(struct fg_worker *w, struct rte_mbuf **pkts,
			 uint16_t n);

/* fg_lb_publish (fg_lb.c): swap + grace period + free, cfg_lock held. */
int fg_dp_apply_config(struct fg_dp *dp, const struct fg_config *cfg,
		       char *err, size_t err_len);
/** Main lcore: drains learned neighbours and republishes. */
void fg_dp_neigh_poll(struct fg_dp *dp);

/* fg_control.c */
/** Conntrack counters of worker @p i through its mailbox.  Control side.
 *  @return 0, -ETIMEDOUT (worker stuck), -ENOMEM. */
int fg_dp_ct_stats(struct fg_dp *dp, unsigned int i, struct ct_stats *out);
/** Loads a config file with control/fg_config_parse (errors printed as
 *  file:line: reason).  @return 0 or -errno. */
int fg_dp_config_load(const char *path, struct fg_config *out);
/** Health-check probe counters of a backend, from the running checker.
 *  Any non-worker thread.  @return 0, or -ENOENT (no checker / not checked). */
int fg_dp_health_counters(uint32_t service_id, uint32_t backend_id,
			  uint64_t *successes, uint64_t *failures);
struct fg_ctl_counters;
/** Control socket counters.  Any non-worker thread.  @return 0, or
 *  -ENOENT (no control server). */
int fg_dp_ctl_counters(struct fg_ctl_counters *out);
/** Creates the control socket and starts its thread; @p idle_timeout_ms
 *  as fg_ctl_server_params::idle_timeout_ms (0 = default, < 0 = never).
 *  @return 0 or -errno. */
int fg_control_start(struct fg_dp *dp, const char *socket_path, const char *config_path,
		     int idle_timeout_ms);
void fg_control_stop(struct fg_dp *dp);

/* fg_stats.c, fg_metrics.c: see fg_stats.h and fg_metrics.h */

#ifdef __cplusplus
}
#endif
#endif /* FLOWGATE_FG_DP_PRIVATE_H */
