/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Neighbours (fg_neigh.c): the next-hop table the main lcore publishes
 * (same scheme as the service table: build, swap, grace period, free),
 * what workers post when they learn an entry, and the workers' ARP / ND
 * input and resolution.
 */
#ifndef FLOWGATE_FG_NEIGH_H
#define FLOWGATE_FG_NEIGH_H

#include <stdbool.h>
#include <stdint.h>

#include <rte_ether.h>

#include "fg_config.h"
#include "fg_pkt.h"

#ifdef __cplusplus
extern "C" {
#endif

#define FG_NEIGH_MAX 4096
/** Learned neighbours expire this long (seconds) after they were last
 *  confirmed; from 3/4 of it they are "stale": still used, and re-solicited
 *  by the workers that use them, so a live neighbour is refreshed before
 *  it expires.  Static (configured) neighbours never expire. */
#define FG_NEIGH_AGE_S 300
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

struct fg_dp;
struct fg_worker;
struct fg_lb_table;
struct fg_burst_out;
struct rte_mbuf;

/* ARP input: learns what may be learned, answers requests for our
 * addresses, consumes replies. */
void fg_neigh_arp_input(struct fg_worker *w, const struct fg_lb_table *lb,
			const struct fg_neigh_table *nt, struct fg_burst_out *o,
			struct rte_mbuf *m, const struct fg_pkt *p, uint64_t now);
/* ND input: the same for neighbour solicitations and advertisements. */
void fg_neigh_nd_input(struct fg_worker *w, const struct fg_lb_table *lb,
		       const struct fg_neigh_table *nt, struct fg_burst_out *o,
		       struct rte_mbuf *m, const struct fg_pkt *p, uint64_t now);
/* Finds the egress port and MAC for a destination: the neighbour entry of
 * the address itself, else the gateway of the first port with one.
 * Returns false (and solicits) when nothing is known. */
bool fg_neigh_next_hop_slow(struct fg_worker *w, const struct fg_neigh_table *nt,
			    uint8_t af, const uint8_t *addr, uint16_t *port,
			    const struct rte_ether_addr **mac, uint64_t now);
/* NAT without a gateway: solicit a new flow's on-link client now, so its
 * MAC is known when the backend's first reply needs it. */
void fg_neigh_resolve_client(struct fg_worker *w, const struct fg_neigh_table *nt,
			     uint8_t af, const uint8_t *client, uint64_t now);

/** Main lcore: drains learned neighbours and republishes. */
void fg_dp_neigh_poll(struct fg_dp *dp);

#ifdef __cplusplus
}
#endif
#endif /* FLOWGATE_FG_NEIGH_H */
