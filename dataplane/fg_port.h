/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Ports (fg_port.c): the devices, their queues and mempools, the private
 * area of every mbuf, the devices' own counters; and the host exception
 * path (fg_host.c, --host-tap).
 */
#ifndef FLOWGATE_FG_PORT_H
#define FLOWGATE_FG_PORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rte_ether.h>
#include <rte_mbuf.h>
#include <rte_ring.h>

#include "fg_config.h"
#include "fg_pkt.h"

#ifdef __cplusplus
extern "C" {
#endif

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
#define FG_PORT_COUNTER_LIST(X) FG_DEV_COUNTER_LIST(X)   /* fg_counters.h */

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

#ifdef __cplusplus
}
#endif
#endif /* FLOWGATE_FG_PORT_H */
