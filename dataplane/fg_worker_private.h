/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A worker (one per worker lcore, written only by that lcore): its layout
 * and the helpers the burst pipeline's files share on the per-packet path
 * (fg_worker.c: the pipeline; fg_flow.c: flow decisions; fg_neigh.c:
 * neighbour resolution; fg_worker_setup.c: construction).  Other files
 * include it to read a worker's counters.  The helpers are static inline
 * so that splitting the worker into files costs the packet no call.
 */
#ifndef FLOWGATE_FG_WORKER_PRIVATE_H
#define FLOWGATE_FG_WORKER_PRIVATE_H

#include <assert.h>
#include <stddef.h>
#include <string.h>

#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include "ct.h"
#include "fg_counters.h"
#include "fg_dp_counters.h"
#include "fg_dp_private.h"
#include "fg_flow.h"
#include "fg_lb.h"
#include "fg_neigh.h"
#include "fg_port.h"
#include "fg_sync.h"
#include "fg_xlate.h"

#ifdef __cplusplus
extern "C" {
#endif

#define FG_BURST 32
/** --idle-sleep: empty polls in a row before a worker starts sleeping. */
#define FG_IDLE_SPINS 64
/** Burst of generated ICMP errors / RSTs allowed above the rate
 *  (FG_ICMP_RATE_DEFAULT, fg_dp.h). */
#define FG_ICMP_BURST 10

/* NAT: local ports handed out per worker, and how often to try */
#define NAT_PORT_LO 1024
#define NAT_PORT_HI 65535
#define NAT_PORT_TRIES 64

/*
 * Forwarding cache, per worker: a tracked flow's (service id, backend id)
 * -> the service and backend in the current table, the egress port
 * towards the backend and, for DSR, the outer headers, prebuilt (struct
 * fg_encap_tmpl), for NAT the next hop's MAC.  A slot's s and b are valid for one service
 * table generation, its port and headers for one neighbour table
 * generation as well (nt_gen 0: not built).  Direct-mapped: a balancer
 * sends to a few hundred backends at most, and a collision costs one
 * rebuild.  A hit packet then skips the service and backend lookups, the
 * next-hop cache and building the headers (fg_flow.c).
 */
#define FG_FWD_SLOTS 256
/* slots of each of a worker's two sets of local addresses, IPv4 and IPv6
 * (4x the most there are) */
#define FG_LOCAL_SLOTS 1024
static_assert(FG_LOCAL_SLOTS >= 4 * FG_MAX_PORTS * FG_MAX_LOCAL_ADDRS &&
	      (FG_LOCAL_SLOTS & (FG_LOCAL_SLOTS - 1)) == 0,
	      "FG_LOCAL_SLOTS: a power of two, at most 1/4 full");

struct fg_fwd_slot {
	/* a hit reads two lines: this one (ids, counter rows, flags, port,
	 * the template's lengths and sums, or NAT's MTU and backend) and the
	 * next (the header bytes, or NAT's Ethernet header) */
	uint64_t lb_gen;        /**< fg_lb_table::generation; 0 = empty */
	uint64_t nt_gen;        /**< fg_neigh_table::gen of port, t; 0 = none */
	uint64_t *svc_ctr;      /**< this worker's counter row of s in lb */
	uint64_t *be_ctr;       /**< this worker's counter row of b in lb */
	uint32_t backend;
	uint16_t service;
	uint16_t port;          /**< egress port index towards b */
	bool direct;            /**< fg_flow_hit may forward in one pass (no
				 *  second chance for this service) */
	bool nat;               /**< s->mode == FG_MODE_NAT */
	bool lc;                /**< s->sched == FG_SCHED_LC */
	uint8_t pad[5];
	union {
		struct fg_encap_tmpl t; /**< DSR: outer headers (ipip or gue) */
		/** NAT towards an IPv4 b: what a hit writes besides the
		 *  entry's local address and port (send_nat fills it) */
		struct fg_fwd_nat4 {
			uint16_t mtu;     /**< egress port's; 0xFFFF: none */
			uint16_t dport;   /**< b->port_be */
			uint32_t daddr;   /**< b's address */
			uint8_t eth[12];  /**< Ethernet destination, source */
			bool ok;          /**< filled (b is IPv4) */
		} n4;
	};
	const struct fg_lb_service *s;
	const struct fg_lb_backend *b;
	struct rte_ether_addr mac; /**< NAT: next hop MAC towards b */
} __rte_cache_aligned;

static_assert(offsetof(struct fg_fwd_slot, t.hdr) == RTE_CACHE_LINE_SIZE,
	      "fg_fwd_slot: the header bytes start the slot's second line");
static_assert(offsetof(struct fg_fwd_slot, s) >= 2 * RTE_CACHE_LINE_SIZE,
	      "fg_fwd_slot: a DSR hit reads two lines");
static_assert(offsetof(struct fg_fwd_slot, n4) + sizeof(struct fg_fwd_nat4) <=
	      2 * RTE_CACHE_LINE_SIZE, "fg_fwd_slot: a NAT hit reads two lines");

/* Where a worker's cycles go, by stage of the poll loop (fg_worker_prof):
 * rx = the driver's RX burst (empty polls too), parse = parse, sort and
 * dispatch, sign = signatures, lookup = ct_lookup_bulk, forward = the
 * decisions, rewrites and TX buffering of hits and new flows,
 * housekeeping = between bursts, tx = the driver's TX burst (taken out of
 * the stage that sent it, forward or housekeeping: fg_worker_tx_flush). */
#define FG_STAGE_LIST(X) \
	X(rx) X(parse) X(sign) X(lookup) X(forward) X(housekeeping) X(tx)
enum fg_stage {
#define FG_STAGE_ENUM(n) FG_ST_##n,
	FG_STAGE_LIST(FG_STAGE_ENUM)
#undef FG_STAGE_ENUM
	FG_ST_MAX
};

/* One per worker lcore, written only by that lcore. */
struct fg_worker {
	unsigned int idx;       /**< 0..n_workers-1 (= QSBR thread id, RETA value) */
	unsigned int lcore;
	struct fg_dp *dp;
	struct ct_shard *ct;
	/* per port: what a packet needs to leave (fg_worker_tx and the VLAN
	 * check read these 8 bytes, not the port table's entry) and the
	 * packets waiting in txb[port] */
	struct fg_worker_txq {
		uint16_t port_id;   /**< ethdev id (fg_port::port_id) */
		bool rx_only;       /**< fg_port::rx_only: never transmit */
		uint16_t vlan;      /**< fg_port_cfg::vlan: the port's VLAN, 0 none */
		uint16_t n;         /**< packets in txb[port] */
	} tx[FG_MAX_PORTS];
	/* TX bursts, sent when full (fg_worker_tx) and every ~100 us
	 * (housekeeping); counted as tx when the driver takes them */
	struct rte_mbuf *txb[FG_MAX_PORTS][FG_BURST];
	/** dispatch rings: in[i] receives from worker i (SP/SC). */
	struct rte_ring *in[FG_MAX_WORKERS];
	uint64_t last_flush;
	uint64_t last_expire;
	uint64_t cc[FG_CC_MAX];
	uint64_t drops[FG_DROP_MAX];
	uint64_t dc[FG_DC_MAX];
	/* cycles by stage (rte_rdtsc at each stage's end) while prof is set
	 * (flowgate-bench dataplane --profile); off, a branch per stage of a
	 * burst */
	bool prof;
	uint64_t prof_t;
	uint64_t prof_cyc[FG_ST_MAX];
	/* least-connections: opened - closed flows per backend stat row */
	uint32_t *lc_active;
	uint32_t lc_size;
	uint64_t lc_generation;
	uint16_t nat_next;      /**< where the next NAT port search starts */
	/* the local addresses (a NAT reply's destination), open addressing
	 * from fg_local4_home() / fg_local6_home(), 0 / :: = free: the bulk
	 * lookup's region hints (fg_worker.c) */
	uint32_t local4[FG_LOCAL_SLOTS];
	struct fg_local6 {
		uint64_t w[2];
	} local6[FG_LOCAL_SLOTS];
	/* next-hop cache: destination -> (port, MAC), valid for one
	 * neighbour-table generation; saves a table probe per packet */
	struct fg_nh_slot {
		uint64_t gen;
		uint8_t family, port;
		uint8_t addr[16];
		struct rte_ether_addr mac;
	} nh[256];
	struct fg_fwd_slot fwd[FG_FWD_SLOTS];
	/* flows watch: events to the control thread while someone watches */
	struct rte_ring *ev_ring;
	volatile bool watch;
	/* rate limit for ARP/NS we originate; also what we asked for: an
	 * ARP reply / NA is learned only if some worker solicited its address
	 * (other workers read these, racily: a torn read only delays or
	 * refuses one learn, and the table is confirmed again later).
	 * Set-associative, oldest way replaced: a direct-mapped 64 forgot
	 * most of a burst of new on-link NAT clients before their answers
	 * came (neigh_unsolicited), and their first replies dropped. */
	uint64_t solicit_tsc[FG_SOLICIT_SETS][FG_SOLICIT_WAYS];
	uint8_t solicit_addr[FG_SOLICIT_SETS][FG_SOLICIT_WAYS][16];
	/* ARP/NS requests for unknown addresses, a token bucket per port
	 * (this worker's share of FG_SOLICIT_RATE): credit in TSC ticks */
	uint64_t solicit_credit[FG_MAX_PORTS];
	uint64_t solicit_last[FG_MAX_PORTS];
	/* the neighbour answers this worker posted to be learned, one per
	 * solicit set (newest): an address answered less than
	 * FG_NEIGH_LOCKTIME_MS ago keeps that MAC, also before the main
	 * lcore publishes it (other workers read these racily, as above) */
	struct fg_neigh_posted {
		uint64_t tsc;
		uint8_t addr[16];
		uint8_t mac[6];
		uint8_t family, port;
	} neigh_posted[FG_SOLICIT_SETS];
	/* token bucket of generated ICMP errors / RSTs (fg_dp::icmp_rate):
	 * credit in TSC ticks, one packet costs hz / rate */
	uint64_t icmp_credit;
	uint64_t icmp_last;
	/* state sync (fg_sync.c; rings NULL without a sync block): records
	 * for the peers wait in sync_buf until housekeeping hands them to
	 * sync_out in one burst; sync_in brings the peers' records */
	struct rte_ring *sync_out;  /**< SP/SC: this worker -> sync thread */
	struct rte_ring *sync_in;   /**< SP/SC: sync thread -> this worker */
	uint16_t sync_n;            /**< records in sync_buf */
	bool sync_dsr;              /**< DSR services are synced too */
	bool sync_applying;         /**< installing: the hooks stay quiet */
	uint64_t sync_cursor;       /**< the refresh walk's place */
	uint64_t sync_walk_last;    /**< tsc of its last step */
	uint64_t sync_walk_slots;   /**< slots of the shard (a whole walk) */
	uint64_t sync_walk_acc;     /**< slots owed x REFRESH_MS */
	uint32_t sync_catchup_seen; /**< the peers' starts walked for */
	uint32_t sync_walked;       /**< the catch-up generation last walked whole */
	uint32_t sync_catchup_done; /**< sync_walked once its records are in
				         sync_out (release; the sync thread reads it) */
	bool sync_fast;             /**< a catch-up walk: as fast as the ring */
	uint64_t sync[FG_SYNC_WC_MAX];
	uint64_t sync_refused[FG_STATE_FLOW_MAX];
	struct fg_sync_item sync_buf[FG_SYNC_BATCH];
	/** --gpu: this worker's GPU context (fg_gpupath.c), else NULL */
	struct fg_gpupath *gpu;
	volatile bool stop;
	/** set when this worker has stopped polling its ports (stop path) */
	bool rx_done;
} __rte_cache_aligned;

/* --profile: the cycles since the last mark go to stage @p st. */
static inline void fg_worker_prof(struct fg_worker *w, enum fg_stage st)
{
	if (unlikely(w->prof)) {
		uint64_t t = rte_rdtsc();

		w->prof_cyc[st] += t - w->prof_t;
		w->prof_t = t;
	}
}

/* ---------------------------------------------------- drops and TX */

/* Packets a burst gives up, freed in one call at its end. */
struct fg_burst_out {
	struct rte_mbuf *free[FG_BURST * 2];
	unsigned int n_free;
	/* the generations of the burst's service and neighbour tables
	 * (UINT64_MAX: no table), read once a burst: what a forwarding slot
	 * must hold for fg_flow_hit to send in one pass */
	uint64_t lb_gen, nt_gen;
};

/* Counts a packet as dropped for @p why (its mbuf may still carry a
 * generated reply: see "Accounting" in fg_counters.h). */
static inline void fg_worker_count_drop(struct fg_worker *w, enum fg_drop why)
{
	w->drops[why]++;
	w->cc[FG_CC_drops]++;
}

static inline void fg_worker_drop(struct fg_worker *w, struct fg_burst_out *o,
			struct rte_mbuf *m, enum fg_drop why)
{
	fg_worker_count_drop(w, why);
	o->free[o->n_free++] = m;
}

/* Sends what waits in @p port's TX burst (fg_worker.c): the packets the
 * driver takes are tx_packets and tx_bytes, the others tx_full drops. */
void fg_worker_tx_flush(struct fg_worker *w, uint16_t port);

static inline void fg_worker_tx(struct fg_worker *w, uint16_t port, struct rte_mbuf *m)
{
	struct fg_worker_txq *q = &w->tx[port];

	if (unlikely(q->rx_only)) {
		/* one TX queue, not one per worker: never transmit there */
		fg_worker_count_drop(w, FG_DROP_port_rx_only);
		rte_pktmbuf_free(m);
		return;
	}
	w->txb[port][q->n] = m;
	if (unlikely(++q->n == FG_BURST))
		fg_worker_tx_flush(w, port);
}

/* --host-tap: hands @p m to the main lcore for the kernel's TAP.  False
 * when there is no host path or its ring is full (the caller keeps m). */
static inline bool fg_worker_host_enqueue(struct fg_worker *w, struct rte_mbuf *m)
{
	if (!w->dp->host_tap)
		return false;
	if (unlikely(rte_ring_mp_enqueue(w->dp->host[m->port].to_host, m) != 0)) {
		w->dc[FG_DC_host_ring_full]++;
		return false;
	}
	w->cc[FG_CC_host_packets]++;
	return true;
}

/* A packet for the balancer host itself: to the kernel, else dropped as
 * @p why. */
static inline void fg_worker_to_host(struct fg_worker *w, struct fg_burst_out *o,
				     struct rte_mbuf *m, enum fg_drop why)
{
	if (!fg_worker_host_enqueue(w, m))
		fg_worker_drop(w, o, m, why);
}

/* ARP / ND replies: learned; the host's kernel may be waiting for them.
 * Not a drop (nothing went wrong), but counted: every input is accounted
 * for (fg_counters.h, "Accounting"). */
static inline void fg_worker_consumed_reply(struct fg_worker *w,
					    struct fg_burst_out *o,
					    struct rte_mbuf *m)
{
	if (fg_worker_host_enqueue(w, m))
		return;
	w->cc[FG_CC_arp_replies_consumed]++;
	o->free[o->n_free++] = m;
}

/* Per-worker direct-mapped cache in front of next_hop_slow: DSR sends to
 * a handful of backends, NAT replies to a gateway, so this almost always
 * hits; an entry is valid for one neighbour-table generation. */
static inline bool fg_neigh_next_hop(struct fg_worker *w, const struct fg_neigh_table *nt,
			    uint8_t af, const uint8_t *addr, uint16_t *port,
			    const struct rte_ether_addr **mac, uint64_t now)
{
	uint32_t alen = af == AF_INET6 ? 16 : 4, k;

	memcpy(&k, addr + alen - 4, 4);
	struct fg_nh_slot *c = &w->nh[(k ^ (k >> 8) ^ (k >> 16) ^ (k >> 24)) & 255];

	if (likely(nt != NULL && c->gen == nt->gen && c->family == af &&
		   (af == AF_INET ? !memcmp(c->addr, addr, 4) : !memcmp(c->addr, addr, 16)))) {
		*port = c->port;
		*mac = &c->mac;
		return true;
	}
	if (!fg_neigh_next_hop_slow(w, nt, af, addr, port, mac, now))
		return false;
	if (nt != NULL) {
		c->gen = nt->gen;
		c->family = af;
		c->port = (uint8_t)*port;
		memcpy(c->addr, addr, alen);
		c->mac = **mac;
		*mac = &c->mac;
	}
	return true;
}

/* Home slot of an IPv4 address (network order) in fg_worker::local4. */
static inline uint32_t fg_local4_home(uint32_t a)
{
	return (a * 0x9E3779B1u) >> (32 - __builtin_ctz(FG_LOCAL_SLOTS));
}

/* An IPv6 address as fg_worker::local6 holds it, and its home slot. */
static inline struct fg_local6 fg_local6_of(const uint8_t *a)
{
	struct fg_local6 x;

	memcpy(x.w, a, sizeof(x.w));
	return x;
}

static inline uint32_t fg_local6_home(struct fg_local6 x)
{
	return (uint32_t)(((x.w[0] ^ x.w[1]) * 0x9E3779B97F4A7C15ull) >>
			  (64 - __builtin_ctz(FG_LOCAL_SLOTS)));
}

/* Whether @p a is one of this balancer's IPv4 local addresses. */
static inline bool fg_local4_has(const struct fg_worker *w, uint32_t a)
{
	for (uint32_t i = fg_local4_home(a); w->local4[i] != 0;
	     i = (i + 1) & (FG_LOCAL_SLOTS - 1))
		if (w->local4[i] == a)
			return true;
	return false;
}

/* Whether @p a (16 bytes) is one of this balancer's IPv6 local addresses. */
static inline bool fg_local6_has(const struct fg_worker *w, const uint8_t *a)
{
	struct fg_local6 x = fg_local6_of(a);

	for (uint32_t i = fg_local6_home(x); (w->local6[i].w[0] | w->local6[i].w[1]) != 0;
	     i = (i + 1) & (FG_LOCAL_SLOTS - 1))
		if (w->local6[i].w[0] == x.w[0] && w->local6[i].w[1] == x.w[1])
			return true;
	return false;
}

/* Whether @p p's key goes to a local address: a NAT reply, likely. */
static inline bool fg_worker_to_local(const struct fg_worker *w,
				      const struct fg_pkt *p)
{
	return p->family == CT_V4 ? fg_local4_has(w, p->key.k4.daddr)
				  : fg_local6_has(w, p->key.k6.daddr);
}

/* Whether @p p's key is no NAT reply's: a destination that is no local
 * address, where every reply key's is one (the locals are fixed at
 * start).  Its lookup and insert then read the flows' region only
 * (ct_lookup_bulk_hint's flow_only, ct_insert_flow). */
static inline bool fg_worker_no_reply(const struct fg_worker *w,
				      const struct fg_pkt *p)
{
	return !fg_worker_to_local(w, p);
}

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

/** Runs a received burst through the GPU: parse, flow signature, dispatch
 *  hash and Maglev answer land in each mbuf's private area
 *  (FG_PARSED_GPU), so fg_worker_burst() skips that work.  Uploads the
 *  service tables first when their generation changed.  Packets the GPU
 *  path cannot take stay FG_PARSED_NO and the CPU parses them (counted as
 *  gpu_fallback).  Owner lcore only; w->gpu must be set. */
void fg_gpupath_classify(struct fg_worker *w, struct rte_mbuf **pkts,
			 uint16_t n);

#ifdef __cplusplus
}
#endif
#endif /* FLOWGATE_FG_WORKER_PRIVATE_H */
