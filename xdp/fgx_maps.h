/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * Private layouts shared by the XDP balancer (fg_xdp.bpf.c) and its
 * user-space loader (fgx_load.c): map keys and values, the counter index
 * layout, limits.  Compiled both by clang -target bpf and by the host
 * compiler, so it uses fixed-width types only and includes nothing but
 * headers that compile under BPF (ct.h, fg_pkt.h, fg_counters.h,
 * fg_maglev.h: declarations and constants only).
 *
 * Counters: one per-CPU array `fgx_counters` of FGX_CNT_N u64:
 *   [0, FG_CC_MAX)                    core counters (FG_CORE_COUNTER_LIST)
 *   [FG_CC_MAX, FG_CC_MAX+FG_DROP_MAX) drops by reason (FG_DROP_LIST)
 * so stats print the names of fg_counters.h, declared once.
 */
#ifndef FLOWGATE_FGX_MAPS_H
#define FLOWGATE_FGX_MAPS_H

#include "ct.h"
#include "fg_counters.h"
#include "fg_maglev.h"
#include "fg_pkt.h"

/** Services in the XDP tables (service ids 0 .. FGX_MAX_SERVICES-1). */
#define FGX_MAX_SERVICES 256
/** Backends over all services. */
#define FGX_MAX_BACKENDS 65536
/** Default conntrack entries per family (config ct_capacity overrides v4). */
#define FGX_CT_DEFAULT 1048576

#define FGX_CNT_DROP(r) (FG_CC_MAX + (r))
#define FGX_CNT_N (FG_CC_MAX + FG_DROP_MAX)

/** fgx_svc_key: one per VIP:port/proto, plus one per VIP address with
 *  port 0 / proto 0 (FGX_SVC_ADDR), so "a VIP address, wrong port" is
 *  told from "not a VIP at all" (the kernel's traffic). */
struct fgx_svc_key {
	uint8_t addr[16];   /**< IPv4 in the first 4 bytes, rest 0 */
	uint16_t port;      /**< network order; 0 for the address marker */
	uint8_t proto;      /**< 0 for the address marker */
	uint8_t family;     /**< CT_V4 / CT_V6 */
};

/** Service modes the XDP program forwards (fg_fwd_mode values). */
#define FGX_MODE_IPIP 0
#define FGX_MODE_GUE 1
/** fgx_svc::mode of an address marker (no service). */
#define FGX_SVC_ADDR 0xff

struct fgx_svc {
	uint32_t id;          /**< service id: index of fgx_maglev */
	uint8_t mode;         /**< FGX_MODE_* or FGX_SVC_ADDR */
	uint8_t live;         /**< 1 in fgx_svc_by_id for a configured service */
	uint16_t gue_port;    /**< network order */
	uint32_t maglev_size; /**< M (prime) */
	uint32_t n_usable;    /**< backends with a positive weight */
};

/** fgx_backend::flags */
#define FGX_BE_USABLE 0x1  /**< takes new flows (weight > 0, not drained/down) */
#define FGX_BE_MAC    0x2  /**< dmac is known (else drop: no_neighbor) */
#define FGX_BE_LIVE   0x4  /**< the slot holds a configured backend */

/** fgx_backends value, by slot.  A backend keeps its slot while it
 *  exists (the loader's slot table); a flow checks service + id. */
struct fgx_backend {
	uint8_t family;       /**< outer family CT_V4 / CT_V6 */
	uint8_t flags;        /**< FGX_BE_* */
	uint8_t dmac[6];      /**< next hop towards the backend */
	uint32_t service;     /**< service id */
	uint32_t id;          /**< stable backend id (fg_backend_cfg::id) */
	uint8_t addr[16];     /**< outer destination */
	uint8_t src[16];      /**< outer source */
};

/** Conntrack value (both families).  Written by the CPU that receives
 *  the flow (NIC RSS keeps a flow on one CPU).  The maps outlive the
 *  process (pinned, fgx_pin.c): a build that changes this layout has its
 *  entries converted member by member, by name (FGX_SEMANTICS). */
struct fgx_ct {
	uint64_t last_seen;   /**< bpf_ktime_get_coarse_ns of the last packet */
	uint64_t first_seen;  /**< insertion time, the same clock (PICKUP
				   probation; flows list lifetime_ms, created_ms) */
#ifdef FGX_TEST_LAYOUT_NEXT
	/* tests/xdp only: the "next version" of this layout, a member that
	 * moves every later one (e2e-xdp-restart upgrades to it and back) */
	uint64_t layout_next;
#endif
	uint64_t packets;
	uint64_t bytes;       /**< L3 bytes */
	uint32_t backend;     /**< backend id */
	uint16_t service;     /**< service id */
	uint8_t state;        /**< enum ct_state */
	uint8_t flags;        /**< CT_F_* */
	uint16_t gue_sport;   /**< host order, cached fg_rss_gue_sport (GUE) */
	uint16_t cpu;         /**< CPU that created it (flows list "core") */
	uint32_t slot;        /**< backend slot (fgx_backends) */
};

/** fgx_be_stats value (per CPU), by backend slot: the DPDK worker's
 *  per-backend counters that mean the same on XDP (FG_BACKEND_COUNTER_LIST
 *  packets, bytes, new_flows).  A freed slot is zeroed by the loader. */
struct fgx_be_stats {
	uint64_t packets;     /**< packets sent to the backend */
	uint64_t bytes;       /**< their L3 bytes before encapsulation */
	uint64_t new_flows;   /**< new flows assigned to it */
};

/**
 * What the maps' contents mean beyond their layout (which the loader
 * reads from BTF): bump it when a member keeps its name and type but
 * changes meaning (a flag bit, a unit), so that a build never reads maps
 * a different build left pinned as if they were its own (fgx_pin.c).
 * The counter and state name lists are hashed in automatically.
 */
#define FGX_SEMANTICS 1

/** fgx_counters value (per CPU): core counters then drops by reason. */
struct fgx_counters {
	uint64_t c[FGX_CNT_N];
};

/** Global settings (array map fgx_cfg, one entry). */
struct fgx_cfg {
	uint8_t lb_mac[6];    /**< Ethernet source of what we send */
	uint16_t vlan;        /**< port VLAN id (0 = untagged): others are vlan_foreign */
	uint16_t mtu;         /**< egress L3 MTU (0 = no check) */
	uint16_t pickup_pkts; /**< ct_config::pickup_pkts */
	uint32_t pass_unknown; /**< 1: packets to an address that is no VIP go to the kernel */
	uint64_t pickup_ns;   /**< ct_config::pickup_ms in ns */
	uint64_t timeout_ns[16]; /**< by enum ct_state */
};

#endif /* FLOWGATE_FGX_MAPS_H */
