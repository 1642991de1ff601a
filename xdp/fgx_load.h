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
#include "fg_ctl_server.h"

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
};

/** fgx_apply() flags */
#define FGX_APPLY_SKIP_NAT 0x1 /**< leave NAT services out instead of refusing */

/**
 * Opens and loads the program (not attached).
 * @return 0 and *out; -EPERM (no CAP_BPF / memlock), -ENOMEM, or the
 *   libbpf error (verifier log on stderr).
 */
int fgx_open(const struct fgx_params *p, struct fgx **out);

/** Detaches (if attached) and frees everything.  NULL is a no-op. */
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

/**
 * Attaches to @p ifindex: native (driver) mode, or generic (skb) mode
 * when the driver has no XDP support (AUTO tries native first).
 * @param used  receives the mode in effect (may be NULL).
 * @return 0, or the negative errno of the last attempt.
 */
int fgx_attach(struct fgx *x, int ifindex, enum fgx_mode mode, enum fgx_mode *used);

/** Detaches from the interface fgx_attach used.  @return 0 or -errno. */
int fgx_detach(struct fgx *x);

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

/** Live flow counts by state and CPU. */
int fgx_flows_count(struct fgx *x, struct fg_flow_counts *out);

#ifdef __cplusplus
}
#endif
#endif /* FLOWGATE_FGX_LOAD_H */
