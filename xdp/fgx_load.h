/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * The user-space side of flowgate's XDP balancer (fg_xdp.bpf.c): loads
 * the program through its libbpf skeleton, fills its maps from a struct
 * fg_config (the same config file and validator as the DPDK daemon),
 * builds each service's Maglev table with pkt/fg_maglev.c and publishes
 * it by map-in-map swap, attaches to an interface, and reads counters and
 * flows back.
 *
 * ## Publishing
 * fgx_apply() writes, in this order: backends (new and changed), the
 * per-service Maglev inner maps (a fresh map per service, swapped into
 * the outer array in one update: a packet sees the old or the new
 * table), services, then deletes what the new config no longer has.  A
 * packet that races an apply sees a mix of old and new *services* for at
 * most the duration of the apply, never a half-written table.  Tracked
 * flows keep their backend (by id) as long as it exists.
 *
 * ## Restarts
 * With fgx_params::pin_dir the maps (conntrack, services, backends,
 * counters) are pinned there and the program is attached through a
 * bpf_link pinned there too (DIR/link): the program keeps forwarding with
 * its tables when the process ends, however it ends.  The next fgx_open()
 * with the same directory adopts the maps the running program uses; a
 * map this build lays out differently (its BTF), or whose meaning differs
 * (FGX_SEMANTICS, the counter and state names), is converted, rebuilt or
 * reset (enum fgx_map_fate), or the open is refused with a sentence when
 * it cannot be read: never misread.  fgx_attach() then takes the link
 * over and, if the program changed, swaps it for this build's with one
 * bpf_link_update() (atomic: a packet runs the old or the new program).
 * fgx_remove() takes everything away.
 *
 * ## Threads
 * One struct fgx is used by one thread at a time (the daemon's control
 * thread and its main loop serialize on their own mutex).  The BPF
 * program runs concurrently; every map update is atomic per element.
 *
 * Errors: every function returns 0 or a negative errno; the ones with an
 * @p err buffer also say why in words.
 */
#ifndef FLOWGATE_FGX_LOAD_H
#define FLOWGATE_FGX_LOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fg_config.h"
#include "fg_counters.h"
#include "fg_ctl_server.h"
#include "fg_xlist.h"

#ifdef __cplusplus
extern "C" {
#endif

struct fgx;

/** Load-time parameters. */
struct fgx_params {
	uint32_t ct_capacity;   /**< IPv4 entries (0 = FGX_CT_DEFAULT); v6 gets 1/4 */
	bool pass_unknown;      /**< packets to addresses that are no VIP go to
				     the kernel (true for a daemon on a shared
				     NIC; false reproduces the DPDK drop
				     unknown_vip, as the fixtures expect) */
	/** bpffs directory that keeps the maps and the bpf_link across
	 *  restarts (see "Restarts" above); NULL or "" = nothing pinned: the
	 *  program leaves with the process (tests, the bench). */
	const char *pin_dir;
};

/** What fgx_open() did with each map the pin directory held. */
enum fgx_map_fate {
	FGX_MAP_NEW = 0,     /**< nothing pinned: a new, empty map */
	FGX_MAP_ADOPTED,     /**< the running program's map, taken as it is */
	FGX_MAP_CONVERTED,   /**< another layout or size: its entries copied,
				  member by member by name, into a new map */
	FGX_MAP_REBUILT,     /**< another layout: a new map, filled from the
				  config by fgx_apply() */
	FGX_MAP_RESET,       /**< counters of another layout: a new map from 0 */
};

/** fgx_apply() flags */
#define FGX_APPLY_SKIP_NAT 0x1 /**< leave NAT services out instead of refusing */

/**
 * Opens and loads the program (not attached), adopting what
 * fgx_params::pin_dir holds ("Restarts").
 * @return 0 and *out; -EPERM (no CAP_BPF / memlock), -ENOMEM, -ESTALE
 *   (a pinned map this build cannot read; @p err says which and what to
 *   do), -ENOTDIR (pin_dir is not on a bpf filesystem), or the libbpf
 *   error (verifier log on stderr); @p err says why in words.
 */
int fgx_open(const struct fgx_params *p, struct fgx **out, char *err, size_t errlen);

/** One line for the start-up log: what became of the pinned maps
 *  ("new maps", "adopted 10 pinned maps", or each map that was not
 *  adopted and why). */
void fgx_open_report(const struct fgx *x, char *buf, size_t len);

/** Frees everything.  An unpinned link is detached with it; a pinned one
 *  (and the maps) stay for the next start.  NULL is a no-op. */
void fgx_close(struct fgx *x);

/**
 * Fills the maps from @p cfg (validated, ids assigned).  Port 0 of the
 * config gives the MAC (@p lb_mac overrides when non-NULL), VLAN, local
 * addresses and gateways; next-hop MACs come from the config's static
 * neighbours (the backend's own address first, else its family's
 * gateway).  @p mtu is the egress L3 MTU (0 = no check).
 * @return 0; -ENOTSUP (a NAT service without FGX_APPLY_SKIP_NAT, a
 *   least-connections service), -E2BIG (service id >= FGX_MAX_SERVICES,
 *   too many backends), -EINVAL, or a map error; @p err says which.
 */
int fgx_apply(struct fgx *x, const struct fg_config *cfg, const uint8_t *lb_mac,
	      uint16_t mtu, unsigned int flags, char *err, size_t errlen);

/** XDP attach modes */
enum fgx_mode { FGX_MODE_AUTO = 0, FGX_MODE_NATIVE, FGX_MODE_GENERIC };
/** "auto", "native", "generic". */
const char *fgx_mode_name(enum fgx_mode m);
/** @return the mode named @p s, or -EINVAL. */
int fgx_mode_parse(const char *s);

/** How fgx_attach() went. */
struct fgx_attach_info {
	enum fgx_mode mode;     /**< in effect: FGX_MODE_NATIVE or _GENERIC */
	bool adopted;           /**< a running flowgate-xdp's link taken over */
	bool swapped;           /**< its program replaced by this build's */
	char why[256];          /**< the mode decision (and any warning), in words */
};

/**
 * Attaches to @p ifindex through a bpf_link (pinned with pin_dir), or
 * takes over the pinned link of a running flowgate-xdp ("Restarts").
 *
 * The mode is decided honestly: native only where the driver takes it
 * and its XDP_TX path works; a veth's XDP_TX needs an XDP program on
 * its peer (else every forwarded packet is an xdp_tx_error), so on a
 * veth whose peer has none AUTO attaches generic and says why, and
 * NATIVE is refused.  A taken-over link keeps its mode.
 * @return 0; -EBUSY (another XDP program is attached without a link:
 *   @p err names it and how to remove it), -EXDEV (the pinned link is on
 *   another interface), -EOPNOTSUPP (native refused), or the errno of the
 *   kernel; @p err says why in words.
 */
int fgx_attach(struct fgx *x, int ifindex, enum fgx_mode mode,
	       struct fgx_attach_info *info, char *err, size_t errlen);

/**
 * Removes what flowgate-xdp leaves on an interface: the link pinned in
 * @p pin_dir (the program detaches), the pinned maps, the directory; and
 * a flowgate program attached to @p ifindex through netlink (builds
 * before the bpf_link).  @p ifindex 0: the interface is gone (pins only).
 * @p msg says what was removed.
 * @return 0, -ENOENT (nothing to remove), or -errno.
 */
int fgx_remove(const char *pin_dir, int ifindex, char *msg, size_t len);

/** The interface's own counters, FGX_PORT_COUNTER_LIST order. */
#define FGX_PORT_COUNTER_LIST(X) \
	FG_DEV_COUNTER_LIST(X)   /* fg_counters.h: as the DPDK daemon's */ \
	X(tx_dropped, -, "packets dropped on transmit (generic XDP: XDP_TX the device refused)") \
	X(xdp_tx_errors, -, "native XDP: XDP_TX frames the driver failed to send (ethtool -S *xdp*tx*err*, summed)")

#define FGX_PC_(n, f, d) FGX_PC_##n,
enum fgx_port_counter { FGX_PORT_COUNTER_LIST(FGX_PC_) FGX_PC_MAX };
FG_XL_TABLES(fgx_port_counter_names, fgx_port_counter_help, FGX_PC_MAX);

/** Reads the interface's counters into @p out[FGX_PC_MAX]: its link
 *  statistics and the driver's XDP TX errors (ethtool).  @return 0 or
 *  -errno. */
int fgx_port_counters(const char *ifname, uint64_t *out);

/** The slot (fgx_backends index) of backend @p backend_id of service
 *  @p service_id.  @return the slot, or -ENOENT. */
int fgx_backend_slot(const struct fgx *x, uint32_t service_id, uint32_t backend_id);

/** Per-backend counters of slot @p slot summed over CPUs (struct
 *  fgx_be_stats: packets, bytes, new_flows).  @return 0 or -errno. */
int fgx_backend_counters(const struct fgx *x, uint32_t slot, uint64_t *packets,
			 uint64_t *bytes, uint64_t *new_flows);

/** A count of the live tracked flows (fgx_census). */
struct fgx_census {
	uint64_t total;
	/** by creating CPU (< FG_CTL_MAX_CORES) and state index */
	uint64_t by_cpu_state[FG_CTL_MAX_CORES][16];
	/** per backend slot, arrays of FGX_MAX_BACKENDS the caller provides
	 *  (NULL: not counted): ESTABLISHED (ipvsadm's ActiveConn) and any
	 *  other live state (InActConn) */
	uint64_t *active, *inactive;
};

/**
 * Counts the live tracked flows in one conntrack walk (a map walk from
 * user space: about a microsecond per flow, nothing on the packet path).
 * The arrays are zeroed first.  @return 0 or -errno.
 */
int fgx_census(struct fgx *x, struct fgx_census *out);

/** File descriptor of the XDP program (BPF_PROG_TEST_RUN). */
int fgx_prog_fd(const struct fgx *x);

/** Counters: FGX_CNT_N values (fgx_maps.h layout).  @p per_cpu, when
 *  non-NULL, receives fgx_ncpus() x FGX_CNT_N values (cpu-major). */
int fgx_counters(const struct fgx *x, uint64_t *sum, uint64_t *per_cpu);

/** Possible CPUs (the per-CPU arrays' width). */
int fgx_ncpus(void);

/** Number of counters (core counters then drop reasons). */
unsigned int fgx_counter_count(void);

/**
 * Walks the conntrack maps, filling fg_flow_info from each live entry
 * (expired entries are skipped, as the DPDK lookups do) with the service
 * and backend of @p cfg.  @p emit as in fg_ctl_ops::flows_walk; with
 * @p del the matching entries are deleted.
 * @return flows matched, or a negative errno (also one from emit).
 */
int64_t fgx_flows_walk(struct fgx *x, const struct fg_config *cfg,
		       const struct fg_flow_filter *f, fg_flow_emit_fn emit,
		       void *arg, bool del);

/**
 * Empties both conntrack maps (every entry, fragment-follow entries and
 * expired ones included): the state of a fresh load, without reloading.
 * @return entries deleted, or a negative errno.
 */
int64_t fgx_ct_flush(struct fgx *x);

/** flows watch (fgx_watch.c): conntrack events from a diff of walks. */
struct fgx_watch;

/** A watch whose first poll walks the baseline (no events).
 *  @return 0 and *out, or -ENOMEM. */
int fgx_watch_create(struct fgx_watch **out);

/** Frees @p w.  NULL is a no-op. */
void fgx_watch_destroy(struct fgx_watch *w);

/**
 * Hands out up to @p max events (NEW / UPDATE / DESTROY, fg_ctl_server.h)
 * that happened since the previous walk, walking conntrack again when
 * the last walk's events are all out and FGX_WATCH_MIN_MS passed; flows
 * named with @p cfg.  Thread safety: one caller at a time.
 * @return events written (>= 0), or -errno.
 */
int fgx_watch_poll(struct fgx_watch *w, struct fgx *x, const struct fg_config *cfg,
		   struct fg_flow_event *ev, unsigned int max);

/** Live flow counts by state and CPU. */
int fgx_flows_count(struct fgx *x, struct fg_flow_counts *out);

#ifdef __cplusplus
}
#endif
#endif /* FLOWGATE_FGX_LOAD_H */
