/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * One packet's path, RX to TX.  Read top to bottom:
 *
 *   fg_worker_main()            poll loop of one worker lcore
 *     rte_eth_rx_burst()        one RX queue per port owned by this worker
 *     [fg_gpupath_classify()]   --gpu only: the GPU does step 1's parse,
 *                               signature and RSS plus the service and
 *                               Maglev answers (fg_gpupath.c); the steps
 *                               below use its results
 *     fg_worker_burst()
 *       1. prefetch + fg_pkt_parse()  -> struct fg_pkt in the mbuf's private area
 *          fg_pkt_sig()               -> CRC32C flow signature (rte_hash sig + Maglev slot)
 *          software RSS: fg_rss_hash() -> owner worker; others' packets go
 *          to the owner over an SP/SC ring (already parsed)
 *       2. ct_lookup_bulk()           once per family (v4 / v6 groups)
 *       3. hit  -> flow_forward()     ct_update, rewrite for the flow's mode
 *          miss -> flow_new()         service lookup, scheduler (Maglev /
 *                                     least-conn), ct_insert, NAT port pick +
 *                                     reply entry, then flow_forward()
 *       4. rewrite: fg_xlate_ipip / fg_xlate_gue / fg_xlate_nat, neighbour
 *          MAC fill (next_hop())
 *       5. rte_eth_tx_buffer() per (worker, port), flushed every ~100 us
 *     fg_worker_housekeeping()  dispatch rings, ct_expire (bounded),
 *                               ct_shard_poll (control mailbox), TX flush,
 *                               RCU quiescent state
 *
 * Everything written here belongs to this lcore (struct fg_worker, its
 * conntrack shard, its rows of the service/backend counters); the shared
 * tables (services, neighbours) are read through one acquire load per burst
 * and stay valid until this lcore reports a quiescent state.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_ip.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_prefetch.h>

#include "fg_csum.h"
#include "fg_dp.h"
#include "fg_maglev.h"
#include "fg_xlate.h"

#define PREFETCH_OFFSET 4
#define NAT_PORT_LO 1024
#define NAT_PORT_HI 65535
#define NAT_PORT_TRIES 64

/* A conntrack key of either family (NAT targets, reply keys). */
union fg_key {
	struct ct_key4 k4;
	struct ct_key6 k6;
};

static inline uint8_t af_of(uint8_t ct_family)
{
	return ct_family == CT_V6 ? AF_INET6 : AF_INET;
}

static inline uint8_t ct_family_of(uint8_t af)
{
	return af == AF_INET6 ? CT_V6 : CT_V4;
}

/* ---------------------------------------------------------------- drops */

struct burst_out {
	struct rte_mbuf *free[FG_BURST * 2];
	unsigned int n_free;
};

/* Counts a packet as dropped for @p why (its mbuf may still carry a
 * generated reply: see "Accounting" in fg_counters.h). */
static inline void count_drop(struct fg_worker *w, enum fg_drop why)
{
	w->drops[why]++;
	w->cc[FG_CC_drops]++;
}

static inline void drop(struct fg_worker *w, struct burst_out *o,
			struct rte_mbuf *m, enum fg_drop why)
{
	count_drop(w, why);
	o->free[o->n_free++] = m;
}

/* Token bucket of generated ICMP errors / RSTs, per worker: true when one
 * may be sent now (and takes its token), else counts icmp_ratelimited. */
static bool gen_budget(struct fg_worker *w, uint64_t now)
{
	uint32_t rate = w->dp->icmp_rate;
	uint64_t cost, credit;

	if (rate == 0) {
		w->cc[FG_CC_icmp_ratelimited]++;
		return false;
	}
	cost = w->dp->hz / rate;
	credit = w->icmp_credit + (now - w->icmp_last);
	w->icmp_last = now;
	if (credit > cost * FG_ICMP_BURST || credit < w->icmp_credit)
		credit = cost * FG_ICMP_BURST;   /* full, or the first call */
	if (credit < cost) {
		w->icmp_credit = credit;
		w->cc[FG_CC_icmp_ratelimited]++;
		return false;
	}
	w->icmp_credit = credit - cost;
	return true;
}

static inline void svc_count(struct fg_worker *w, const struct fg_lb_table *lb,
			     const struct fg_lb_service *s,
			     enum fg_service_counter c, uint64_t v)
{
	lb->core[w->idx].svc[s->stat_idx * FG_SC_MAX + c] += v;
}

static inline void be_count(struct fg_worker *w, const struct fg_lb_table *lb,
			    const struct fg_lb_backend *b,
			    enum fg_backend_counter c, uint64_t v)
{
	lb->core[w->idx].be[b->stat_idx * FG_BC_MAX + c] += v;
}

/* ------------------------------------------------------------------- TX */

static inline void tx(struct fg_worker *w, uint16_t port, struct rte_mbuf *m)
{
	w->cc[FG_CC_tx_packets]++;
	w->cc[FG_CC_tx_bytes] += m->pkt_len;
	rte_eth_tx_buffer(w->dp->ports[port].port_id, w->idx, w->txb[port], m);
}

/* --host-tap: hands @p m to the main lcore for the kernel's TAP.  False
 * when there is no host path or its ring is full (the caller keeps m). */
static inline bool host_enqueue(struct fg_worker *w, struct rte_mbuf *m)
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
static void to_host(struct fg_worker *w, struct burst_out *o, struct rte_mbuf *m,
		    enum fg_drop why)
{
	if (!host_enqueue(w, m))
		drop(w, o, m, why);
}

/* ARP / ND replies: learned; the host's kernel may be waiting for them.
 * Not a drop (nothing went wrong), but counted: every input is accounted
 * for (fg_counters.h, "Accounting"). */
static inline void consumed_reply(struct fg_worker *w, struct burst_out *o,
				  struct rte_mbuf *m)
{
	if (host_enqueue(w, m))
		return;
	w->cc[FG_CC_arp_replies_consumed]++;
	o->free[o->n_free++] = m;
}

static void tx_err_cb(struct rte_mbuf **unsent, uint16_t count, void *userdata)
{
	struct fg_worker *w = userdata;

	for (uint16_t i = 0; i < count; i++) {
		w->cc[FG_CC_tx_packets]--;
		w->cc[FG_CC_tx_bytes] -= unsent[i]->pkt_len;
	}
	w->drops[FG_DROP_tx_full] += count;
	w->cc[FG_CC_drops] += count;
	rte_pktmbuf_free_bulk(unsent, count);
}

/* ----------------------------------------------------------- neighbours */

/* Sends an ARP request / neighbour solicitation for @p addr, at most once a
 * second per address (fg_worker::solicit_addr, set-associative). */
/* True when this worker solicited @p addr less than a second ago. */
static inline bool solicit_recent(const struct fg_worker *w, uint8_t af,
				  const uint8_t *addr, uint64_t now)
{
	uint32_t alen = af == AF_INET6 ? 16 : 4;
	uint32_t set = ct_hash_crc(addr, alen) & (FG_SOLICIT_SETS - 1);

	for (uint32_t i = 0; i < FG_SOLICIT_WAYS; i++)
		if (memcmp(w->solicit_addr[set][i], addr, alen) == 0)
			return now - w->solicit_tsc[set][i] < w->dp->hz;
	return false;
}

static void solicit(struct fg_worker *w, uint16_t port, uint8_t af,
		    const uint8_t *addr, uint64_t now)
{
	struct fg_port *pt = &w->dp->ports[port];
	uint32_t alen = af == AF_INET6 ? 16 : 4;
	uint32_t set = ct_hash_crc(addr, alen) & (FG_SOLICIT_SETS - 1), way = 0;
	struct rte_mbuf *m;
	uint8_t *d;

	for (uint32_t i = 0; i < FG_SOLICIT_WAYS; i++) {
		if (memcmp(w->solicit_addr[set][i], addr, alen) == 0) {
			if (now - w->solicit_tsc[set][i] < w->dp->hz)
				return;
			way = i;
			break;
		}
		if (w->solicit_tsc[set][i] < w->solicit_tsc[set][way])
			way = i;   /* else the oldest */
	}
	memcpy(w->solicit_addr[set][way], addr, alen);
	w->solicit_tsc[set][way] = now;
	m = rte_pktmbuf_alloc(w->dp->pool[rte_socket_id() < RTE_MAX_NUMA_NODES ?
							  rte_socket_id() : 0]);
	if (m == NULL)
		return;
	if (af == AF_INET) {
		const struct fg_addr *src = NULL;

		for (uint32_t i = 0; i < pt->cfg.n_local && !src; i++)
			if (pt->cfg.local[i].family == AF_INET)
				src = &pt->cfg.local[i];
		d = (uint8_t *)rte_pktmbuf_append(m, 60);
		if (d == NULL) {
			rte_pktmbuf_free(m);
			return;
		}
		memset(d, 0, 60);
		memset(d, 0xff, 6);
		memcpy(d + 6, pt->mac.addr_bytes, 6);
		d[12] = 0x08; d[13] = 0x06;
		d[14] = 0; d[15] = 1; d[16] = 0x08; d[17] = 0; d[18] = 6; d[19] = 4;
		d[20] = 0; d[21] = 1;
		memcpy(d + 22, pt->mac.addr_bytes, 6);
		if (src)
			memcpy(d + 28, &src->v4, 4);
		memcpy(d + 38, addr, 4);
	} else {
		const struct fg_addr *src = NULL;
		uint8_t ip6[16] = {0xff, 0x02, [11] = 1, [12] = 0xff};

		for (uint32_t i = 0; i < pt->cfg.n_local && !src; i++)
			if (pt->cfg.local[i].family == AF_INET6)
				src = &pt->cfg.local[i];
		if (src == NULL) {
			rte_pktmbuf_free(m);
			return;
		}
		memcpy(ip6 + 13, addr + 13, 3);   /* solicited-node multicast */
		d = (uint8_t *)rte_pktmbuf_append(m, 14 + 40 + 32);
		if (d == NULL) {
			rte_pktmbuf_free(m);
			return;
		}
		memset(d, 0, 14 + 40 + 32);
		d[0] = 0x33; d[1] = 0x33; memcpy(d + 2, ip6 + 12, 4);
		memcpy(d + 6, pt->mac.addr_bytes, 6);
		d[12] = 0x86; d[13] = 0xdd;
		uint8_t *ip = d + 14, *icmp = ip + 40;

		ip[0] = 0x60; ip[5] = 32; ip[6] = IPPROTO_ICMPV6; ip[7] = 255;
		memcpy(ip + 8, src->v6.s6_addr, 16);
		memcpy(ip + 24, ip6, 16);
		icmp[0] = 135;
		memcpy(icmp + 8, addr, 16);
		icmp[24] = 1; icmp[25] = 1;
		memcpy(icmp + 26, pt->mac.addr_bytes, 6);
		/* pseudo header: src, dst, length, next header */
		uint32_t sum = fg_csum_partial(ip + 8, 32, 0);
		uint8_t ph[8] = {0, 0, 0, 32, 0, 0, 0, IPPROTO_ICMPV6};

		sum = fg_csum_partial(ph, 8, sum);
		sum = fg_csum_partial(icmp, 32, sum);
		uint16_t c = (uint16_t)~fg_csum_fold(sum);   /* fold does not invert */

		memcpy(icmp + 2, &c, 2);
	}
	w->dc[FG_DC_arp_requests]++;
	tx(w, port, m);
}

/* Finds the egress port and MAC for a destination: the neighbour entry of
 * the address itself, else the gateway of the first port with one.
 * Returns false (and solicits) when nothing is known. */
static bool next_hop_slow(struct fg_worker *w, const struct fg_neigh_table *nt,
			  uint8_t af, const uint8_t *addr, uint16_t *port,
			  const struct rte_ether_addr **mac, uint64_t now);

/* Per-worker direct-mapped cache in front of next_hop_slow: DSR sends to
 * a handful of backends, NAT replies to a gateway, so this almost always
 * hits; an entry is valid for one neighbour-table generation. */
static inline bool next_hop(struct fg_worker *w, const struct fg_neigh_table *nt,
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
	if (!next_hop_slow(w, nt, af, addr, port, mac, now))
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

static bool next_hop_slow(struct fg_worker *w, const struct fg_neigh_table *nt,
			  uint8_t af, const uint8_t *addr, uint16_t *port,
			  const struct rte_ether_addr **mac, uint64_t now)
{
	const struct fg_neigh_entry *e = fg_neigh_lookup(nt, af, addr);

	if (likely(e != NULL)) {
		/* ageing: confirm it before it expires (once per table
		 * generation and worker: this runs on next-hop cache misses) */
		if (unlikely(e->stale))
			solicit(w, e->port, af, addr, now);
		*port = e->port;
		*mac = &e->mac;
		return true;
	}
	for (unsigned int p = 0; p < w->dp->n_ports; p++) {
		const struct fg_addr *gw = af == AF_INET6 ?
			&w->dp->ports[p].cfg.gateway6 : &w->dp->ports[p].cfg.gateway;

		if (gw->family != af)
			continue;
		e = fg_neigh_lookup(nt, af, gw->bytes);
		if (e != NULL) {
			if (unlikely(e->stale))
				solicit(w, e->port, af, gw->bytes, now);
			*port = e->port;
			*mac = &e->mac;
			return true;
		}
		solicit(w, p, af, gw->bytes, now);
		return false;
	}
	/* on-link guess: ask on every port */
	for (unsigned int p = 0; p < w->dp->n_ports; p++)
		solicit(w, p, af, addr, now);
	return false;
}

/* True when some worker solicited @p addr in the last
 * FG_NEIGH_SOLICIT_WINDOW_S seconds (its solicit cache; other workers'
 * caches are read racily, see struct fg_worker). */
static bool solicited(const struct fg_worker *w, uint8_t af, const uint8_t *addr,
		      uint64_t now)
{
	uint32_t alen = af == AF_INET6 ? 16 : 4;
	uint32_t set = ct_hash_crc(addr, alen) & (FG_SOLICIT_SETS - 1);
	uint64_t win = FG_NEIGH_SOLICIT_WINDOW_S * w->dp->hz;

	for (unsigned int i = 0; i < w->dp->n_workers; i++) {
		const struct fg_worker *o = w->dp->workers[i];

		if (o == NULL)
			continue;
		for (uint32_t k = 0; k < FG_SOLICIT_WAYS; k++)
			if (memcmp(o->solicit_addr[set][k], addr, alen) == 0 &&
			    (int64_t)(now - o->solicit_tsc[set][k]) < (int64_t)win)
				return true;
	}
	return false;
}

/* A configured gateway of @p port: learned from anything it sends
 * (gratuitous ARP / unsolicited NA after a failover). */
static bool is_gateway(const struct fg_worker *w, uint8_t af, const uint8_t *addr,
		       uint16_t port)
{
	const struct fg_port_cfg *pc = &w->dp->ports[port].cfg;
	const struct fg_addr *gw = af == AF_INET6 ? &pc->gateway6 : &pc->gateway;

	return gw->family == af && memcmp(gw->bytes, addr, af == AF_INET6 ? 16 : 4) == 0;
}

/*
 * Posts a neighbour for the main lcore to publish, if it may be learned:
 * a reply (@p reply: ARP reply / NA) to our own solicitation, or anything
 * from a configured gateway.  Requests from other hosts are answered but
 * never learned: 5,000 spoofed requests used to fill the table for good
 * (issue 9, defect 4).
 */
static void learn(struct fg_worker *w, const struct fg_neigh_table *nt,
		  uint8_t af, const uint8_t *addr, const uint8_t *mac,
		  uint16_t port, bool reply, uint64_t now)
{
	const struct fg_neigh_entry *e = fg_neigh_lookup(nt, af, addr);
	struct fg_neigh_learn l;

	if (e != NULL && (e->is_static ||
			  (memcmp(e->mac.addr_bytes, mac, 6) == 0 && e->port == port &&
			   !e->stale)))
		return;
	if (!is_gateway(w, af, addr, port)) {
		if (!reply)
			return;
		if (!solicited(w, af, addr, now)) {
			w->dc[FG_DC_neigh_unsolicited]++;
			return;
		}
	}
	if (e == NULL && nt != NULL && nt->count >= FG_NEIGH_MAX) {
		w->dc[FG_DC_neigh_table_full]++;
		return;
	}
	memset(&l, 0, sizeof(l));
	l.family = af;
	l.port = (uint8_t)port;
	memcpy(l.addr, addr, af == AF_INET6 ? 16 : 4);
	memcpy(l.mac.addr_bytes, mac, 6);
	if (rte_ring_enqueue_elem(w->dp->learn_ring, &l, sizeof(l)) == 0)
		w->dc[FG_DC_neigh_learned]++;
	else
		w->dc[FG_DC_neigh_learn_full]++;
}

static void handle_arp(struct fg_worker *w, const struct fg_lb_table *lb,
		       const struct fg_neigh_table *nt, struct burst_out *o,
		       struct rte_mbuf *m, const struct fg_pkt *p, uint64_t now)
{
	uint8_t *d = rte_pktmbuf_mtod(m, uint8_t *);
	uint16_t port = m->port;

	if (p->key.k4.saddr != 0)
		learn(w, nt, AF_INET, (const uint8_t *)&p->key.k4.saddr,
		      d + p->l3_off + 8, port, p->flags & FG_PF_ARP_REPLY, now);
	if (p->flags & FG_PF_ARP_REPLY) {
		consumed_reply(w, o, m);   /* learned above */
		return;
	}
	if (fg_lb_addr_kind(lb, AF_INET, &p->key.k4.daddr) == 0) {
		drop(w, o, m, FG_DROP_arp_not_ours);
		return;
	}
	struct fg_frame f = {d, m->data_len, rte_pktmbuf_headroom(m),
			     rte_pktmbuf_tailroom(m)};
	int len = fg_xlate_arp_reply(&f, p, w->dp->ports[port].mac.addr_bytes);

	if (len < 0) {
		drop(w, o, m, FG_DROP_arp_malformed);
		return;
	}
	w->cc[FG_CC_arp_replies]++;
	tx(w, port, m);
}

/* Source / target link-layer address option of an NS / NA, or NULL. */
static const uint8_t *nd_lladdr(const uint8_t *d, uint32_t len,
				const struct fg_pkt *p, uint8_t type)
{
	uint32_t off = p->l4_off + 24;
	uint32_t end = RTE_MIN(len, (uint32_t)p->l3_off + p->l3_len);

	for (int i = 0; i < 8 && off + 8 <= end; i++) {
		uint32_t olen = d[off + 1] * 8u;

		if (olen == 0)
			return NULL;
		if (d[off] == type && olen >= 8)
			return d + off + 2;
		off += olen;
	}
	return NULL;
}

static void handle_nd(struct fg_worker *w, const struct fg_lb_table *lb,
		      const struct fg_neigh_table *nt, struct burst_out *o,
		      struct rte_mbuf *m, const struct fg_pkt *p, uint64_t now)
{
	uint8_t *d = rte_pktmbuf_mtod(m, uint8_t *);
	uint16_t port = m->port;
	static const uint8_t zero[16];

	if (p->flags & FG_PF_ND_ADVERT) {
		const uint8_t *ll = nd_lladdr(d, m->data_len, p, 2);

		if (ll)
			learn(w, nt, AF_INET6, p->key.k6.daddr, ll, port, true, now);
		consumed_reply(w, o, m);
		return;
	}
	if (memcmp(p->key.k6.saddr, zero, 16) != 0) {
		const uint8_t *ll = nd_lladdr(d, m->data_len, p, 1);

		if (ll)
			learn(w, nt, AF_INET6, p->key.k6.saddr, ll, port, false, now);
	}
	if (fg_lb_addr_kind(lb, AF_INET6, p->key.k6.daddr) == 0) {
		drop(w, o, m, FG_DROP_arp_not_ours);
		return;
	}
	struct fg_frame f = {d, m->data_len, rte_pktmbuf_headroom(m),
			     rte_pktmbuf_tailroom(m)};
	int len = fg_xlate_nd_advert(&f, p, w->dp->ports[port].mac.addr_bytes);

	if (len < 0) {
		drop(w, o, m, len == -ENOSPC ? FG_DROP_no_headroom : FG_DROP_nd_malformed);
		return;
	}
	m->data_len = m->pkt_len = len;
	w->cc[FG_CC_nd_adverts]++;
	tx(w, port, m);
}

/* ------------------------------------------------------------- rewrite */

/* Applies a fg_frame result back to its mbuf. */
static inline void frame_commit(struct rte_mbuf *m, const struct fg_frame *f,
				uint32_t old_headroom, int len)
{
	if (f->headroom < old_headroom)
		rte_pktmbuf_prepend(m, (uint16_t)(old_headroom - f->headroom));
	else if (f->headroom > old_headroom)
		rte_pktmbuf_adj(m, (uint16_t)(f->headroom - old_headroom));
	m->data_len = (uint16_t)len;
	m->pkt_len = (uint32_t)len;
}

/*
 * A packet too big for its path: counted as @p why, and (IPv4 with DF, or
 * IPv6; within the rate limit) its mbuf becomes the ICMP frag-needed /
 * packet-too-big that tells the sender @p mtu, sent back out of the port
 * it came in on, as Katran does.  Otherwise the sender would black-hole:
 * a 1500-byte client behind IPIP (1480) or GUE (1472).
 */
static void too_big(struct fg_worker *w, struct burst_out *o, struct rte_mbuf *m,
		    const struct fg_pkt *p, uint32_t mtu, enum fg_drop why,
		    uint64_t now)
{
	if (p->kind != FG_PK_FLOW || (p->family == CT_V4 && !(p->flags & FG_PF_DF)) ||
	    !gen_budget(w, now)) {
		drop(w, o, m, why);
		return;
	}
	struct fg_frame f = {rte_pktmbuf_mtod(m, uint8_t *), m->data_len,
			     rte_pktmbuf_headroom(m), rte_pktmbuf_tailroom(m)};
	uint32_t hr = f.headroom;
	int len = fg_xlate_icmp_too_big(&f, p, mtu, w->dp->ports[m->port].mac.addr_bytes);

	if (len < 0) {
		drop(w, o, m, why);
		return;
	}
	count_drop(w, why);
	frame_commit(m, &f, hr, len);
	w->cc[FG_CC_icmp_too_big_sent]++;
	tx(w, m->port, m);
}

/*
 * A new flow for a service with no usable backend: counted as no_backend,
 * and (within the rate limit) the client is told at once instead of
 * waiting for its connect timeout: a TCP RST, or ICMP port unreachable
 * for UDP, from the VIP, out of the port the packet came in on.
 */
static void refuse(struct fg_worker *w, struct burst_out *o, struct rte_mbuf *m,
		   const struct fg_pkt *p, uint64_t now)
{
	bool tcp = p->proto == IPPROTO_TCP;

	if (p->kind != FG_PK_FLOW || (tcp && (p->tcp_flags & CT_TCP_RST)) ||
	    (!tcp && p->proto != IPPROTO_UDP) || !gen_budget(w, now)) {
		drop(w, o, m, FG_DROP_no_backend);
		return;
	}
	struct fg_frame f = {rte_pktmbuf_mtod(m, uint8_t *), m->data_len,
			     rte_pktmbuf_headroom(m), rte_pktmbuf_tailroom(m)};
	uint32_t hr = f.headroom;
	const uint8_t *mac = w->dp->ports[m->port].mac.addr_bytes;
	int len = tcp ? fg_xlate_tcp_rst(&f, p, mac) : fg_xlate_icmp_unreach(&f, p, mac);

	if (len < 0) {
		drop(w, o, m, FG_DROP_no_backend);
		return;
	}
	count_drop(w, FG_DROP_no_backend);
	frame_commit(m, &f, hr, len);
	w->cc[tcp ? FG_CC_no_backend_rst : FG_CC_no_backend_unreach]++;
	tx(w, m->port, m);
}

static inline enum fg_drop xlate_err(int rc)
{
	switch (rc) {
	case -EMSGSIZE:
		return FG_DROP_encap_too_big;
	case -ENOSPC:
		return FG_DROP_no_headroom;
	case -ETIME:
		return FG_DROP_ttl_expired;
	default:
		return FG_DROP_l4_unsupported_proto;
	}
}

/* DSR: encapsulate towards the backend.  Returns true when sent. */
static bool send_dsr(struct fg_worker *w, const struct fg_neigh_table *nt,
		     struct burst_out *o, struct rte_mbuf *m,
		     const struct fg_pkt *p, const struct fg_lb_service *s,
		     const struct fg_lb_backend *b, uint64_t now)
{
	const struct rte_ether_addr *mac;
	uint16_t port;
	struct fg_encap e;
	int len;

	if (unlikely(!next_hop(w, nt, b->addr.family, b->addr.bytes, &port, &mac,
			       now))) {
		drop(w, o, m, FG_DROP_no_neighbor);
		return false;
	}
	const struct fg_port *pt = &w->dp->ports[port];

	e.family = ct_family_of(b->addr.family);
	e.flags = 0;
	/* the egress port's VLAN (a packet came in on its port's VLAN:
	 * others are dropped as vlan_foreign) */
	e.vlan = pt->cfg.vlan;
	e.gue_port = s->gue_port_be;
	e.mtu = pt->mtu;
	memcpy(e.src_mac, pt->mac.addr_bytes, 6);
	memcpy(e.dst_mac, mac->addr_bytes, 6);
	memcpy(&e.src, b->src.bytes, 16);
	memcpy(&e.dst, b->addr.bytes, 16);

	struct fg_frame f = {rte_pktmbuf_mtod(m, uint8_t *), m->data_len,
			     rte_pktmbuf_headroom(m), rte_pktmbuf_tailroom(m)};
	uint32_t hr = f.headroom;

	if (s->mode == FG_MODE_DSR_GUE) {
		const struct fg_mbuf_priv *pr = fg_mbuf_priv(m);

		len = fg_xlate_gue(&f, p, &e, pr->parsed == FG_PARSED_GPU ?
				   pr->gpu_rss : fg_rss_hash(p));
	} else
		len = fg_xlate_ipip(&f, p, &e);
	if (unlikely(len < 0)) {
		uint32_t over = fg_xlate_encap_hdr_len(&e, s->mode == FG_MODE_DSR_GUE) -
				(e.vlan ? 18 : 14);

		if (len == -EMSGSIZE && e.mtu > over)
			too_big(w, o, m, p, e.mtu - over, FG_DROP_encap_too_big, now);
		else
			drop(w, o, m, xlate_err(len));
		return false;
	}
	frame_commit(m, &f, hr, len);
	tx(w, port, m);
	return true;
}

/* NAT: rewrite the packet's tuple to @p to, fix L2, send towards @p dst.
 * With @p inner, the packet is an ICMP error about a NAT flow (path-MTU
 * discovery through the balancer): @p to gives the outer addresses and
 * @p inner the quoted packet's tuple, in its own direction. */
static bool send_nat(struct fg_worker *w, const struct fg_neigh_table *nt,
		     struct burst_out *o, struct rte_mbuf *m,
		     const struct fg_pkt *p, const void *to, const void *inner,
		     uint8_t af, const uint8_t *dst, uint64_t now)
{
	const struct rte_ether_addr *mac;
	uint16_t port;
	uint8_t *d = rte_pktmbuf_mtod(m, uint8_t *);
	int rc;

	if (unlikely(!next_hop(w, nt, af, dst, &port, &mac, now))) {
		drop(w, o, m, FG_DROP_no_neighbor);
		return false;
	}
	if (unlikely(p->l3_len > w->dp->ports[port].mtu && w->dp->ports[port].mtu)) {
		/* NAT does not fragment: tell the sender, as DSR does */
		too_big(w, o, m, p, w->dp->ports[port].mtu, FG_DROP_mtu_exceeded, now);
		return false;
	}
	rc = fg_xlate_ttl_dec(d, p);
	if (unlikely(rc < 0)) {
		drop(w, o, m, xlate_err(rc));
		return false;
	}
	struct fg_frame f = {d, m->data_len, rte_pktmbuf_headroom(m),
			     rte_pktmbuf_tailroom(m)};

	if (inner == NULL)
		rc = fg_xlate_nat(&f, p, to);
	else
		rc = fg_xlate_nat_icmp_err(&f, p, to, inner);
	if (unlikely(rc < 0)) {
		drop(w, o, m, inner ? FG_DROP_icmp_unrelated : xlate_err(rc));
		return false;
	}
	fg_xlate_eth(d, w->dp->ports[port].mac.addr_bytes, mac->addr_bytes);
	tx(w, port, m);
	return true;
}

/* ------------------------------------------------------- flow handling */

struct flow_ref {
	struct ct_entry *e;
	uint32_t pos;
};

/* Builds the request-direction NAT target: local:nat_port -> backend. */
static void nat_fwd_key(struct fg_worker *w, const struct fg_pkt *p,
			const struct ct_entry *e, const struct fg_lb_backend *b,
			union fg_key *to)
{
	const struct fg_addr *local = &w->dp->locals[e->nat_addr];

	memset(to, 0, sizeof(*to));
	if (p->family == CT_V4) {
		to->k4.saddr = local->v4.s_addr;
		to->k4.daddr = b->addr.v4.s_addr;
		to->k4.sport = e->nat_port;
		to->k4.dport = b->port_be;
		to->k4.proto = p->key.k4.proto;
	} else {
		memcpy(to->k6.saddr, local->v6.s6_addr, 16);
		memcpy(to->k6.daddr, b->addr.v6.s6_addr, 16);
		to->k6.sport = e->nat_port;
		to->k6.dport = b->port_be;
		to->k6.proto = p->key.k6.proto;
	}
}

/* A packet of the reply direction of a NAT flow: backend -> local.  The
 * forward entry's key (client -> VIP) gives the tuple to restore. */
static void flow_reply(struct fg_worker *w, const struct fg_lb_table *lb,
		       const struct fg_neigh_table *nt, struct burst_out *o,
		       struct rte_mbuf *m, const struct fg_pkt *p,
		       struct ct_entry *e, uint64_t now)
{
	union fg_key to;
	const void *fk = ct_key_at(w->ct, p->family, e->peer);
	const uint8_t *client;

	if (unlikely(p->kind != FG_PK_FLOW && p->kind != FG_PK_ICMP_ERR)) {
		/* later fragments towards the local address carry no ports */
		drop(w, o, m, FG_DROP_reply_untracked);
		return;
	}
	if (unlikely(p->kind == FG_PK_ICMP_ERR)) {
		/* an error about local:P -> backend (e.g. frag-needed from a
		 * router on the backend side): for the client it is about
		 * client:cp -> VIP:vp, sent from the VIP */
		union fg_key outer;

		memset(&outer, 0, sizeof(outer));
		if (p->family == CT_V4) {
			const struct ct_key4 *k = fk;

			outer.k4.saddr = k->daddr;
			outer.k4.daddr = k->saddr;
			client = (const uint8_t *)&k->saddr;
		} else {
			const struct ct_key6 *k = fk;

			memcpy(outer.k6.saddr, k->daddr, 16);
			memcpy(outer.k6.daddr, k->saddr, 16);
			client = k->saddr;
		}
		w->cc[FG_CC_icmp_err_fwd]++;
		send_nat(w, nt, o, m, p, &outer, fk, af_of(p->family),
				  client, now);
		return;
	}
	ct_update(w->ct, e, true, p->tcp_flags, p->l3_len, now);
	if (p->family == CT_V4) {
		const struct ct_key4 *k = fk;

		memset(&to.k4, 0, sizeof(to.k4));
		to.k4.saddr = k->daddr;
		to.k4.daddr = k->saddr;
		to.k4.sport = k->dport;
		to.k4.dport = k->sport;
		to.k4.proto = k->proto;
		client = (const uint8_t *)&k->saddr;
	} else {
		const struct ct_key6 *k = fk;

		memset(&to.k6, 0, sizeof(to.k6));
		memcpy(to.k6.saddr, k->daddr, 16);
		memcpy(to.k6.daddr, k->saddr, 16);
		to.k6.sport = k->dport;
		to.k6.dport = k->sport;
		to.k6.proto = k->proto;
		client = k->saddr;
	}
	uint16_t sid = lb->svc_by_id[e->service];

	if (likely(sid)) {
		const struct fg_lb_service *s = &lb->services[sid - 1];
		const struct fg_lb_backend *b = fg_lb_backend_find(s, e->backend);

		if (b) {
			be_count(w, lb, b, FG_BC_reply_packets, 1);
			be_count(w, lb, b, FG_BC_reply_bytes, p->l3_len);
		}
	}
	send_nat(w, nt, o, m, p, &to, NULL, af_of(p->family), client, now);
}

/* Least-connections on this core: fewest (opened - closed) / weight. */
static const struct fg_lb_backend *pick_lc(struct fg_worker *w,
					   const struct fg_lb_service *s)
{
	const struct fg_lb_backend *best = NULL;
	uint64_t best_num = 0, best_w = 1;

	for (uint32_t i = 0; i < s->n_live; i++) {
		const struct fg_lb_backend *b = &s->backends[i];

		if (!b->usable)
			continue;
		uint64_t a = b->stat_idx < w->lc_size ? w->lc_active[b->stat_idx] : 0;

		/* a / weight < best_num / best_w without division */
		if (best == NULL || a * best_w < best_num * b->weight) {
			best = b;
			best_num = a;
			best_w = b->weight;
		}
	}
	return best;
}

static inline bool state_closed(uint8_t st)
{
	return st == CT_ST_TIME_WAIT || st == CT_ST_CLOSE || st == CT_ST_NONE;
}

/* flows watch: posts an event for the control thread; never blocks (a full
 * ring drops the event and counts it). */
static void watch_post(struct fg_worker *w, uint8_t type, uint8_t fam,
		       const void *key, const struct ct_entry *e, uint8_t reason)
{
	struct fg_flow_ev ev;

	ev.type = type;
	ev.family = fam;
	ev.reason = reason;
	memset(ev.pad, 0, sizeof(ev.pad));
	memcpy(&ev.key, key, fam == CT_V4 ? sizeof(struct ct_key4) :
					   sizeof(struct ct_key6));
	ev.e = *e;
	if (rte_ring_sp_enqueue_elem(w->ev_ring, &ev, sizeof(ev)) != 0)
		w->dc[FG_DC_watch_dropped]++;
}

/* conntrack destroy hook (owner lcore, inside ct_expire / ct_lookup /
 * ct_insert's early drop / mailbox deletes): a flow that leaves the table
 * before it closed gives its least-connections slot back, and watchers
 * get a DESTROY event. */
static void on_flow_destroy(void *arg, enum ct_family fam, const void *key,
			    const struct ct_entry *e, enum ct_destroy_reason why)
{
	struct fg_worker *w = arg;
	const struct fg_lb_table *lb = __atomic_load_n(&w->dp->lb, __ATOMIC_ACQUIRE);

	if (lb != NULL && !state_closed(e->state) &&
	    lb->generation == w->lc_generation) {
		uint16_t sid = lb->svc_by_id[e->service];
		const struct fg_lb_service *s = sid ? &lb->services[sid - 1] : NULL;

		if (s != NULL && s->sched == FG_SCHED_LC) {
			const struct fg_lb_backend *b = fg_lb_backend_find(s, e->backend);

			/* closed flows were already given back by flow_forward */
			if (b != NULL && b->stat_idx < w->lc_size &&
			    w->lc_active[b->stat_idx] > 0)
				w->lc_active[b->stat_idx]--;
		}
	}
	if (unlikely(w->watch))
		watch_post(w, FG_EV_DESTROY, (uint8_t)fam, key, e, (uint8_t)why);
}

/* A first fragment of a DSR flow: later fragments carry no ports, so they
 * look up the flow's 3-tuple with ports 0 (their parsed key).  Insert or
 * refresh that entry with the flow's service and backend (state OTHER:
 * 30 s by default, as Linux's ipfrag_time).  Two flows of one 3-tuple
 * fragmenting at the same time share it: the last first fragment wins, as
 * with Maglev's 3-tuple rule for fragments. */
static void frag_follow(struct fg_worker *w, const struct fg_pkt *p,
			const struct fg_lb_service *s,
			const struct fg_lb_backend *b, uint64_t now)
{
	struct fg_pkt f = *p;
	struct ct_entry *e;
	uint32_t pos, sig;
	int err = 0;

	if (f.family == CT_V4)
		f.key.k4.sport = f.key.k4.dport = 0;
	else
		f.key.k6.sport = f.key.k6.dport = 0;
	sig = fg_pkt_sig(&f);
	e = ct_lookup(w->ct, f.family, &f.key, sig, now, &pos);
	if (e == NULL) {
		uint8_t proto = f.family == CT_V4 ? f.key.k4.proto : f.key.k6.proto;

		e = ct_insert(w->ct, f.family, &f.key, sig, proto, CT_ST_OTHER,
			      false, now, &pos, &err);
		if (e == NULL) {
			w->dc[FG_DC_frag_follow_fail]++;
			return;
		}
	} else if (!(e->flags & CT_F_FRAG)) {
		return; /* a real flow with ports 0 (e.g. protocol without ports) */
	}
	e->flags |= CT_F_FRAG;
	e->service = (uint16_t)s->id;
	e->backend = b->id;
	e->last_seen = now;
	w->dc[FG_DC_frag_follow]++;
}

/* Forwards a packet of a tracked (or untracked: e == NULL) request-direction
 * flow to its backend. */
static void flow_forward(struct fg_worker *w, const struct fg_lb_table *lb,
			 const struct fg_neigh_table *nt, struct burst_out *o,
			 struct rte_mbuf *m, const struct fg_pkt *p,
			 struct ct_entry *e, const struct fg_lb_service *s,
			 const struct fg_lb_backend *b, uint64_t now)
{
	if (s == NULL) {
		uint16_t sid = lb->svc_by_id[e->service];

		if (unlikely(sid == 0)) {
			w->dc[FG_DC_service_gone]++;
			drop(w, o, m, FG_DROP_unknown_vip);
			return;
		}
		s = &lb->services[sid - 1];
	}
	if (b == NULL) {
		b = fg_lb_backend_get(s, e->backend);
		if (unlikely(b == NULL || (b->gone && s->on_fail == FG_FAIL_RESET))) {
			w->dc[FG_DC_backend_gone_drop]++;
			drop(w, o, m, FG_DROP_no_backend);
			svc_count(w, lb, s, FG_SC_drops, 1);
			return;
		}
		if (unlikely(b->gone))
			w->dc[FG_DC_backend_gone_fwd]++;
	}
	svc_count(w, lb, s, FG_SC_packets, 1);
	svc_count(w, lb, s, FG_SC_bytes, p->l3_len);
	if (e != NULL && p->kind == FG_PK_FLOW) {
		uint8_t before = e->state;
		uint8_t after = ct_touch(w->ct, e, false, p->tcp_flags, p->l3_len, now);

		if (unlikely(s->sched == FG_SCHED_LC && !state_closed(before) &&
			     state_closed(after) && b->stat_idx < w->lc_size &&
			     w->lc_active[b->stat_idx] > 0))
			w->lc_active[b->stat_idx]--;
	}
	be_count(w, lb, b, FG_BC_packets, 1);
	be_count(w, lb, b, FG_BC_bytes, p->l3_len);
	if (p->kind == FG_PK_ICMP_ERR)
		w->cc[FG_CC_icmp_err_fwd]++;
	else if (p->kind == FG_PK_FRAG_LATER)
		w->cc[FG_CC_frag_later]++;

	if (s->mode != FG_MODE_NAT) {
		if (unlikely(p->flags & FG_PF_FRAG) && p->kind == FG_PK_FLOW)
			frag_follow(w, p, s, b, now);
		send_dsr(w, nt, o, m, p, s, b, now);
		return;
	}
	if (unlikely(e == NULL || p->kind == FG_PK_FRAG_LATER)) {
		/* NAT needs the flow's local port; later fragments carry
		 * none */
		drop(w, o, m, e == NULL ? FG_DROP_ct_full : FG_DROP_reply_untracked);
		svc_count(w, lb, s, FG_SC_drops, 1);
		return;
	}
	union fg_key to;

	nat_fwd_key(w, p, e, b, &to);
	if (unlikely(p->kind == FG_PK_ICMP_ERR)) {
		/* an error about VIP:vp -> client:cp (e.g. frag-needed from
		 * the client's side): for the backend it is about its own
		 * backend:bp -> local:P, sent from the local address */
		union fg_key inner;

		memset(&inner, 0, sizeof(inner));
		if (p->family == CT_V4) {
			inner.k4.saddr = to.k4.daddr;
			inner.k4.daddr = to.k4.saddr;
			inner.k4.sport = to.k4.dport;
			inner.k4.dport = to.k4.sport;
			inner.k4.proto = to.k4.proto;
		} else {
			memcpy(inner.k6.saddr, to.k6.daddr, 16);
			memcpy(inner.k6.daddr, to.k6.saddr, 16);
			inner.k6.sport = to.k6.dport;
			inner.k6.dport = to.k6.sport;
			inner.k6.proto = to.k6.proto;
		}
		send_nat(w, nt, o, m, p, &to, &inner, b->addr.family,
				  b->addr.bytes, now);
		return;
	}
	send_nat(w, nt, o, m, p, &to, NULL, b->addr.family, b->addr.bytes, now);
}

/* NAT: the k-th local address of @p af (k taken modulo their number), so
 * flows spread over all local addresses: the reply tuple space is
 * locals x backends x 64512 ports. */
static int nat_local(const struct fg_dp *dp, uint8_t af, uint32_t k)
{
	unsigned int n = 0;

	for (unsigned int i = 0; i < dp->n_locals; i++)
		n += dp->locals[i].family == af;
	if (n == 0)
		return -1;
	k %= n;
	for (unsigned int i = 0; i < dp->n_locals; i++)
		if (dp->locals[i].family == af && k-- == 0)
			return (int)i;
	return -1;
}

/* True when some port has a gateway of @p af: then everything without a
 * neighbour entry of its own, NAT clients included, is reached through it. */
static inline bool has_gateway(const struct fg_worker *w, uint8_t af)
{
	for (unsigned int p = 0; p < w->dp->n_ports; p++) {
		const struct fg_port_cfg *pc = &w->dp->ports[p].cfg;

		if ((af == AF_INET6 ? pc->gateway6.family : pc->gateway.family) == af)
			return true;
	}
	return false;
}

/*
 * NAT without a gateway: the replies of a new flow go to its client on the
 * link, whose MAC is learned only from a reply to our own solicitation
 * (learn(): requests are never learned, issue 9 defect 4).  Soliciting
 * when the first reply needs the MAC dropped that reply (no_neighbor) on
 * every new on-link client; soliciting now, when the flow opens, has the
 * client's answer learned a round trip before the backend's first reply.
 * It sends nothing that the first reply would not have sent (the same
 * solicit(), same per-address limit), and a spoofed source learns nothing:
 * only a host that answers for the address does.
 */
static void nat_resolve_client(struct fg_worker *w, const struct fg_neigh_table *nt,
			       uint8_t af, const uint8_t *client, uint64_t now)
{
	const struct rte_ether_addr *mac;
	uint16_t port;

	/* a client's flows come in runs: its first one asked already */
	if (solicit_recent(w, af, client, now))
		return;
	(void)next_hop(w, nt, af, client, &port, &mac, now);
}

/* Full NAT: picks a local port whose reply hashes to this worker and that
 * no tracked reply uses, inserts the reply entry and links it. */
static int nat_setup(struct fg_worker *w, const struct fg_pkt *p,
		     struct ct_entry *e, uint32_t pos,
		     const struct fg_lb_backend *b, uint32_t sig, uint64_t now)
{
	int li = nat_local(w->dp, b->addr.family, sig);
	struct fg_rss_port_range r = {NAT_PORT_LO, NAT_PORT_HI, w->nat_next};
	const struct fg_addr *local;

	if (li < 0)
		return -EADDRNOTAVAIL;
	local = &w->dp->locals[li];
	for (int tries = 0; tries < NAT_PORT_TRIES; tries++) {
		union fg_key rk;
		int port;

		if (tries && (tries & 7) == 0) {
			/* crowded pair: move on to the next local address */
			li = nat_local(w->dp, b->addr.family, sig + (uint32_t)tries / 8);
			local = &w->dp->locals[li];
		}

		memset(&rk, 0, sizeof(rk));
		if (p->family == CT_V4)
			port = fg_rss_nat_port_pick4(b->addr.v4.s_addr, b->port_be,
						     local->v4.s_addr, w->dp->reta,
						     w->idx, &r);
		else
			port = fg_rss_nat_port_pick6(b->addr.v6.s6_addr, b->port_be,
						     local->v6.s6_addr, w->dp->reta,
						     w->idx, &r);
		if (port < 0)
			return port;
		r.start = port == NAT_PORT_HI ? NAT_PORT_LO : port + 1;
		w->nat_next = r.start;
		if (p->family == CT_V4) {
			rk.k4.saddr = b->addr.v4.s_addr;
			rk.k4.daddr = local->v4.s_addr;
			rk.k4.sport = b->port_be;
			rk.k4.dport = rte_cpu_to_be_16((uint16_t)port);
			rk.k4.proto = p->key.k4.proto;
		} else {
			memcpy(rk.k6.saddr, b->addr.v6.s6_addr, 16);
			memcpy(rk.k6.daddr, local->v6.s6_addr, 16);
			rk.k6.sport = b->port_be;
			rk.k6.dport = rte_cpu_to_be_16((uint16_t)port);
			rk.k6.proto = p->key.k6.proto;
		}
		uint32_t rsig = ct_hash_crc(&rk, p->family == CT_V4 ?
					    sizeof(rk.k4) : sizeof(rk.k6));
		uint32_t rpos;
		int err = 0;
		/* assured: the reply entry is half of a flow just admitted (flood
		 * mode must not refuse it, early drop must not evict its own
		 * forward entry for it); ct_link_peer marks it assured anyway */
		struct ct_entry *re = ct_insert(w->ct, p->family, &rk, rsig,
						e->proto, e->state, true, now,
						&rpos, &err);

		if (re == NULL && err == -EEXIST)
			continue;
		if (re == NULL)
			return err;
		re->service = e->service;
		re->backend = e->backend;
		re->nat_port = rte_cpu_to_be_16((uint16_t)port);
		re->nat_addr = (uint8_t)li;
		e->nat_port = re->nat_port;
		e->nat_addr = (uint8_t)li;
		ct_link_peer(w->ct, p->family, pos, rpos);
		return 0;
	}
	return -EADDRNOTAVAIL;
}

/* The bulk lookup of a burst runs before its misses create entries, so a
 * NAT reply (or an ICMP error about a NAT flow) right behind the packet
 * that created its flow misses.  Paths that would drop such a packet look
 * again; true when the packet was handled. */
static bool late_hit(struct fg_worker *w, const struct fg_lb_table *lb,
		     const struct fg_neigh_table *nt, struct burst_out *o,
		     struct rte_mbuf *m, const struct fg_pkt *p, const void *key,
		     uint32_t sig, uint64_t now)
{
	uint32_t pos;
	struct ct_entry *e = ct_lookup(w->ct, p->family, key, sig, now, &pos);

	if (e == NULL)
		return false;
	if (e->flags & CT_F_REPLY)
		flow_reply(w, lb, nt, o, m, p, e, now);
	else
		flow_forward(w, lb, nt, o, m, p, e, NULL, NULL, now);
	return true;
}

/*
 * A client SYN that hits a tracked entry whose backend may take no new
 * flows (health down, drained, weight 0, removed) opens a new connection
 * on a reused tuple, or retries one that the dead backend never answered:
 * schedule it afresh instead of following the old flow.  Everything else
 * keeps its backend (a SYN on a TIME_WAIT tuple reopens the flow on the
 * same backend, and NAT keeps the same local port the backend may still
 * hold in TIME_WAIT).  SYNs are rare: the check costs nothing on the data
 * path.
 */
static inline bool syn_reopens(const struct fg_lb_table *lb,
			       const struct fg_pkt *p, const struct ct_entry *e)
{
	if (likely((p->tcp_flags & (CT_TCP_SYN | CT_TCP_ACK)) != CT_TCP_SYN) ||
	    p->kind != FG_PK_FLOW)
		return false;
	uint16_t sid = lb->svc_by_id[e->service];
	const struct fg_lb_backend *b;

	if (sid == 0)
		return false; /* service gone: flow_forward counts and drops */
	b = fg_lb_backend_get(&lb->services[sid - 1], e->backend);
	return b != NULL && !b->usable;
}

/* The service the GPU matched (its index is the table's, same generation). */
static inline const struct fg_lb_service *svc_of_gpu(const struct fg_lb_table *lb,
						     const struct fg_mbuf_priv *pr)
{
	return pr->gpu_service < lb->n_services ? &lb->services[pr->gpu_service] :
						  NULL;
}

/* A packet with no tracked entry. */
static void flow_new(struct fg_worker *w, const struct fg_lb_table *lb,
		     const struct fg_neigh_table *nt, struct burst_out *o,
		     struct rte_mbuf *m, const struct fg_pkt *p, uint32_t sig,
		     const void *key, uint64_t now)
{
	const uint8_t *daddr = p->family == CT_V4 ?
		(const uint8_t *)&p->key.k4.daddr : p->key.k6.daddr;
	const uint8_t *saddr = p->family == CT_V4 ?
		(const uint8_t *)&p->key.k4.saddr : p->key.k6.saddr;
	uint16_t dport = p->family == CT_V4 ? p->key.k4.dport : p->key.k6.dport;
	uint8_t proto = p->family == CT_V4 ? p->key.k4.proto : p->key.k6.proto;
	uint8_t af = af_of(p->family);
	const struct fg_lb_service *s;
	const struct fg_lb_backend *b;
	/* --gpu: the service and the Maglev slot were computed on the GPU,
	 * valid when it held the tables of this very generation */
	const struct fg_mbuf_priv *pr = fg_mbuf_priv(m);
	bool gpu = pr->parsed == FG_PARSED_GPU;

	if (unlikely(gpu && pr->gpu_gen != lb->generation)) {
		w->dc[FG_DC_gpu_stale]++;
		gpu = false;
	}

	if (p->kind == FG_PK_FRAG_LATER) {
		/* its first fragment may have armed the fragment-follow
		 * entry earlier in this very burst */
		if (!late_hit(w, lb, nt, o, m, p, key, sig, now))
			drop(w, o, m, FG_DROP_frag_later_untracked);
		return;
	}
	if (p->kind == FG_PK_ICMP_ERR) {
		/* the key is the embedded flow reversed: client -> VIP.  An
		 * untracked flow of a DSR service still has a Maglev answer. */
		s = gpu ? svc_of_gpu(lb, pr) :
			  fg_lb_service_find(lb, af, daddr, dport, proto);
		if (s == NULL || s->mode == FG_MODE_NAT || s->n_usable == 0) {
			/* NAT flows are only known by their entries, which
			 * an earlier packet of this burst may have created */
			bool local = fg_lb_addr_kind(lb, af, daddr) == 2;

			if ((s != NULL || local) &&
			    late_hit(w, lb, nt, o, m, p, key, sig, now))
				return;
			if (local && s == NULL)   /* about the host's own traffic */
				to_host(w, o, m, FG_DROP_icmp_unrelated);
			else
				drop(w, o, m, FG_DROP_icmp_unrelated);
			return;
		}
		b = &s->backends[gpu ? pr->gpu_backend :
				       s->maglev[sig % s->maglev_size]];
		flow_forward(w, lb, nt, o, m, p, NULL, s, b, now);
		return;
	}
	s = gpu ? svc_of_gpu(lb, pr) :
		  fg_lb_service_find(lb, af, daddr, dport, proto);
	if (unlikely(s == NULL)) {
		if (fg_lb_addr_kind(lb, af, daddr) == 2) {
			/* to a local address: a NAT reply whose entry an
			 * earlier packet of this burst created, else the
			 * host's own traffic (SSH, BGP, ping, its replies) */
			if (!late_hit(w, lb, nt, o, m, p, key, sig, now))
				to_host(w, o, m, FG_DROP_reply_untracked);
			return;
		}
		drop(w, o, m, FG_DROP_unknown_vip);
		return;
	}
	if (unlikely(s->mode == FG_MODE_NAT && proto == IPPROTO_TCP &&
		     (p->tcp_flags & (CT_TCP_SYN | CT_TCP_ACK | CT_TCP_RST)) != CT_TCP_SYN)) {
		/* Full NAT opens a flow only on a SYN: a mid-stream packet has
		 * no local port to leave on (the flow it belonged to is gone,
		 * or never was: a spoofed ACK must not take two entries).  Its
		 * SYN may have created the flow earlier in this burst. */
		if (!late_hit(w, lb, nt, o, m, p, key, sig, now)) {
			svc_count(w, lb, s, FG_SC_drops, 1);
			drop(w, o, m, FG_DROP_nat_not_syn);
		}
		return;
	}
	if (s->sched == FG_SCHED_LC) {
		if (unlikely(lb->generation != w->lc_generation)) {
			/* rows moved: counts restart with the new table */
			memset(w->lc_active, 0, w->lc_size * sizeof(uint32_t));
			w->lc_generation = lb->generation;
		}
		b = pick_lc(w, s);
	} else {
		uint32_t bi = gpu ? pr->gpu_backend :
			      s->n_usable ? s->maglev[sig % s->maglev_size] :
			      UINT32_MAX;

		b = bi == UINT32_MAX ? NULL : &s->backends[bi];
	}
	if (unlikely(b == NULL)) {
		svc_count(w, lb, s, FG_SC_no_backend, 1);
		svc_count(w, lb, s, FG_SC_drops, 1);
		refuse(w, o, m, p, now);
		return;
	}

	uint32_t pos;
	int err = 0;
	struct ct_entry *e = ct_insert(w->ct, p->family, key, sig, proto,
				       ct_state_initial(proto, p->tcp_flags),
				       false, now, &pos, &err);

	if (unlikely(e == NULL && err == -EEXIST)) {
		/* an earlier packet of this burst created it: follow that
		 * flow.  Its lookup also settles a due expiry, after which the
		 * tuple is free for this packet. */
		e = ct_lookup(w->ct, p->family, key, sig, now, &pos);
		if (e != NULL) {
			if (e->flags & CT_F_REPLY)
				flow_reply(w, lb, nt, o, m, p, e, now);
			else
				flow_forward(w, lb, nt, o, m, p, e, NULL, NULL, now);
			return;
		}
		e = ct_insert(w->ct, p->family, key, sig, proto,
			      ct_state_initial(proto, p->tcp_flags), false, now,
			      &pos, &err);
	}
	if (unlikely(e == NULL)) {
		if (s->mode == FG_MODE_NAT) {
			svc_count(w, lb, s, FG_SC_drops, 1);
			drop(w, o, m, err == -EBUSY ? FG_DROP_ct_flood : FG_DROP_ct_full);
			return;
		}
		/* DSR without state: Maglev alone sends the flow to the same
		 * backend as long as the backend set does not change */
		w->cc[FG_CC_ct_untracked]++;
		flow_forward(w, lb, nt, o, m, p, NULL, s, b, now);
		return;
	}
	e->service = (uint16_t)s->id;
	e->backend = b->id;
	if (p->tcp_flags && !(p->tcp_flags & CT_TCP_SYN))
		e->flags |= CT_F_MIDSTREAM;
	if (s->mode == FG_MODE_NAT) {
		int rc = nat_setup(w, p, e, pos, b, sig, now);

		if (unlikely(rc < 0)) {
			ct_delete_pos(w->ct, p->family, pos);
			svc_count(w, lb, s, FG_SC_drops, 1);
			drop(w, o, m, rc == -EBUSY ? FG_DROP_ct_flood :
				      rc == -ENOSPC ? FG_DROP_ct_full : FG_DROP_nat_no_port);
			return;
		}
		if (unlikely(!has_gateway(w, af)))
			nat_resolve_client(w, nt, af, saddr, now);
	}
	w->cc[FG_CC_new_flows]++;
	svc_count(w, lb, s, FG_SC_new_flows, 1);
	be_count(w, lb, b, FG_BC_new_flows, 1);
	if (s->sched == FG_SCHED_LC && b->stat_idx < w->lc_size)
		w->lc_active[b->stat_idx]++;
	if (unlikely(w->watch))
		watch_post(w, FG_EV_NEW, p->family, key, e, 0);
	flow_forward(w, lb, nt, o, m, p, e, s, b, now);
}

/* ------------------------------------------------------------ the burst */

/* Software RSS owner of a first fragment: the hash of its addresses alone,
 * as its later fragments (ports 0) hash and as NICs hash IP fragments, so
 * the worker that holds the fragment-follow entry sees them all.  Except
 * for a NAT service: its flows live on the owner of their 5-tuple (the
 * NAT port was picked so that the reply hashes there) and NAT forwards no
 * later fragment, so a first fragment goes where its flow is; by the
 * address hash it would open a second NAT flow with another local port on
 * another worker (seen by tests/daemon/test_invariants.py, 2 workers). */
static inline uint16_t frag_owner(const struct fg_lb_table *lb,
				  const struct fg_pkt *p, const uint16_t *reta)
{
	if (p->kind == FG_PK_FLOW && lb != NULL) {
		uint8_t af = p->family == CT_V6 ? AF_INET6 : AF_INET;
		const struct fg_lb_service *s = p->family == CT_V4 ?
			fg_lb_service_find(lb, af, &p->key.k4.daddr, p->key.k4.dport,
					   p->key.k4.proto) :
			fg_lb_service_find(lb, af, p->key.k6.daddr, p->key.k6.dport,
					   p->key.k6.proto);

		if (s != NULL && s->mode == FG_MODE_NAT)
			return fg_rss_queue(fg_rss_hash(p), reta);
	}
	uint32_t h = p->family == CT_V4 ?
		fg_rss_hash_v4(p->key.k4.saddr, p->key.k4.daddr, 0, 0) :
		fg_rss_hash_v6(p->key.k6.saddr, p->key.k6.daddr, 0, 0);

	return fg_rss_queue(h, reta);
}

/* Parses a packet into its mbuf's private area (once per packet). */
static inline struct fg_mbuf_priv *parse(struct fg_worker *w, struct rte_mbuf *m)
{
	struct fg_mbuf_priv *pr = fg_mbuf_priv(m);

	if (pr->parsed == FG_PARSED_NO) {
		w->cc[FG_CC_rx_packets]++;
		w->cc[FG_CC_rx_bytes] += m->pkt_len;
		fg_pkt_parse(rte_pktmbuf_mtod(m, const uint8_t *), m->data_len,
			     &pr->pkt);
		pr->parsed = FG_PARSED_CPU;
	}
	return pr;
}

void fg_worker_burst(struct fg_worker *w, struct rte_mbuf **pkts, uint16_t n,
		     uint64_t now)
{
	const struct fg_lb_table *lb = __atomic_load_n(&w->dp->lb, __ATOMIC_ACQUIRE);
	const struct fg_neigh_table *nt = __atomic_load_n(&w->dp->neigh,
							  __ATOMIC_ACQUIRE);
	struct rte_mbuf *grp[CT_FAMILIES][FG_BURST];
	const void *keys[CT_FAMILIES][FG_BURST];
	uint32_t sigs[CT_FAMILIES][FG_BURST];
	unsigned int ng[CT_FAMILIES] = {0, 0};
	struct rte_mbuf *disp[FG_MAX_WORKERS][FG_BURST];
	unsigned int nd[FG_MAX_WORKERS];
	bool dispatch = w->dp->sw_rss;
	struct burst_out o;

	o.n_free = 0;
	if (dispatch)
		memset(nd, 0, sizeof(nd[0]) * w->dp->n_workers);

	/* 1. parse, sign, dispatch, group by family */
	for (uint16_t i = 0; i < n && i < PREFETCH_OFFSET; i++) {
		rte_prefetch0(rte_pktmbuf_mtod(pkts[i], void *));
		rte_prefetch0_write(rte_pktmbuf_mtod(pkts[i], uint8_t *) - RTE_CACHE_LINE_SIZE);
	}
	for (uint16_t i = 0; i < n; i++) {
		struct rte_mbuf *m = pkts[i];

		if (i + PREFETCH_OFFSET < n) {
			uint8_t *d = rte_pktmbuf_mtod(pkts[i + PREFETCH_OFFSET], uint8_t *);

			rte_prefetch0(d);
			/* encapsulation writes the outer headers into the
			 * line before the frame: own it before we get there */
			rte_prefetch0_write(d - RTE_CACHE_LINE_SIZE);
		}
		if (unlikely(m->nb_segs > 1)) {
			/* the parser and rewriters work on one segment */
			if (rte_pktmbuf_linearize(m) < 0) {
				/* more than one mbuf holds: longer than the
				 * port's MTU (--mtu sizes the mbufs for it) */
				w->cc[FG_CC_rx_packets]++;
				w->cc[FG_CC_rx_bytes] += m->pkt_len;
				drop(w, &o, m, FG_DROP_frame_too_long);
				continue;
			}
		}
		struct fg_mbuf_priv *pr = parse(w, m);
		struct fg_pkt *p = &pr->pkt;

		if (unlikely((p->vlan & 0x0fff) != w->dp->ports[m->port].cfg.vlan) &&
		    p->kind != FG_PK_DROP) {
			/* not for this port: a VLAN we are not on.  Forwarding
			 * it would carry it into another VLAN (tag kept or
			 * stripped), as no L3 interface does */
			drop(w, &o, m, FG_DROP_vlan_foreign);
			continue;
		}
		switch (p->kind) {
		case FG_PK_FLOW:
		case FG_PK_ICMP_ERR:
		case FG_PK_FRAG_LATER:
			break;
		case FG_PK_ARP:
			handle_arp(w, lb, nt, &o, m, p, now);
			continue;
		case FG_PK_ND:
			handle_nd(w, lb, nt, &o, m, p, now);
			continue;
		case FG_PK_HOST:
			to_host(w, &o, m, FG_DROP_host_unhandled);
			continue;
		default:
			drop(w, &o, m, p->drop ? p->drop : FG_DROP_l4_unsupported_proto);
			continue;
		}
		if (dispatch) {
			uint16_t owner = unlikely(p->flags & FG_PF_FRAG) ?
					 frag_owner(lb, p, w->dp->reta) :
					 pr->parsed == FG_PARSED_GPU ? pr->gpu_owner :
					 fg_rss_queue(fg_rss_hash(p), w->dp->reta);

			if (owner != w->idx) {
				disp[owner][nd[owner]++] = m;
				continue;
			}
		}
		unsigned int f = p->family;

		grp[f][ng[f]] = m;
		keys[f][ng[f]] = &p->key;
		ng[f]++;
	}
	/* Signatures in their own pass: the parser has just stored the key
	 * in 2- and 4-byte pieces, and reading it back 8 bytes at a time
	 * right away stalls on store forwarding; a burst later it is free. */
	for (unsigned int f = 0; f < CT_FAMILIES; f++)
		for (unsigned int j = 0; j < ng[f]; j++) {
			const struct fg_mbuf_priv *pr = fg_mbuf_priv(grp[f][j]);

			sigs[f][j] = pr->parsed == FG_PARSED_GPU ? pr->gpu_sig :
				     fg_pkt_sig(&pr->pkt);
		}
	if (dispatch) {
		for (unsigned int d = 0; d < w->dp->n_workers; d++) {
			unsigned int k;

			if (nd[d] == 0)
				continue;
			k = rte_ring_sp_enqueue_burst(w->dp->workers[d]->in[w->idx],
						      (void **)disp[d], nd[d], NULL);
			w->cc[FG_CC_dispatched] += k;
			for (; k < nd[d]; k++)
				drop(w, &o, disp[d][k], FG_DROP_dispatch_full);
		}
	}

	/* 2-5. lookup, then forward hits and create misses, in order */
	for (unsigned int f = 0; f < CT_FAMILIES; f++) {
		struct ct_entry *ents[FG_BURST];
		uint32_t pos[FG_BURST];
		uint64_t hits;

		if (ng[f] == 0)
			continue;
		hits = ct_lookup_bulk(w->ct, f, keys[f], sigs[f], ng[f], now, ents, pos);
		w->cc[FG_CC_ct_hits] += __builtin_popcountll(hits);
		/* a new flow earlier in this burst may evict an entry a later
		 * packet hit and give its slot to another flow: trust a hit
		 * only while nothing was removed since the lookup */
		const uint64_t *removals = ct_removal_seq(w->ct);
		uint64_t removals0 = *removals;

		for (unsigned int j = 0; j < ng[f]; j++) {
			struct rte_mbuf *m = grp[f][j];
			const struct fg_pkt *p = &fg_mbuf_priv(m)->pkt;

			if (unlikely(*removals != removals0) && (hits & (1ULL << j))) {
				ents[j] = ct_lookup(w->ct, f, keys[f][j], sigs[f][j], now,
						    &pos[j]);
				if (ents[j] == NULL)
					hits &= ~(1ULL << j);
				w->dc[FG_DC_ct_hit_relookup]++;
			}
			if (hits & (1ULL << j)) {
				if (unlikely(ents[j]->flags & CT_F_REPLY))
					flow_reply(w, lb, nt, &o, m, p, ents[j], now);
				else if (unlikely(syn_reopens(lb, p, ents[j]))) {
					/* a new connection on the tuple of an
					 * old one: schedule it afresh */
					ct_delete_pos(w->ct, f, pos[j]);
					w->cc[FG_CC_ct_reopened]++;
					flow_new(w, lb, nt, &o, m, p, sigs[f][j],
						 keys[f][j], now);
				} else
					flow_forward(w, lb, nt, &o, m, p, ents[j],
						     NULL, NULL, now);
			} else {
				flow_new(w, lb, nt, &o, m, p, sigs[f][j], keys[f][j], now);
			}
		}
	}
	if (o.n_free)
		rte_pktmbuf_free_bulk(o.free, o.n_free);
}

/* ------------------------------------------------------ housekeeping */

void fg_worker_housekeeping(struct fg_worker *w, uint64_t now)
{
	struct fg_dp *dp = w->dp;

	if (dp->sw_rss) {
		struct rte_mbuf *pkts[FG_BURST];

		for (unsigned int i = 0; i < dp->n_workers; i++) {
			unsigned int k;

			if (i == w->idx)
				continue;
			k = rte_ring_sc_dequeue_burst(w->in[i], (void **)pkts,
						      FG_BURST, NULL);
			if (k)
				fg_worker_burst(w, pkts, (uint16_t)k, now);
		}
	}
	/* --host-tap: worker 0 sends what the kernel wrote to the TAPs */
	if (dp->host_tap && w->idx == 0) {
		struct rte_mbuf *hm[FG_BURST];

		for (unsigned int p = 0; p < dp->n_ports; p++) {
			unsigned int k = rte_ring_sc_dequeue_burst(dp->host[p].to_wire,
								   (void **)hm, FG_BURST,
								   NULL);

			for (unsigned int i = 0; i < k; i++)
				tx(w, (uint16_t)p, hm[i]);
			w->dc[FG_DC_host_to_wire] += k;
		}
	}
	/* expiry and the mailbox every ~10 us, not every loop: both are
	 * bounded, but a call per burst costs ~6% at line rate */
	if (now - w->last_expire >= dp->hz / 100000) {
		ct_expire(w->ct, now);
		ct_shard_poll(w->ct, now);
		w->last_expire = now;
	}
	if (now - w->last_flush >= dp->flush_ticks) {
		for (unsigned int p = 0; p < dp->n_ports; p++)
			rte_eth_tx_buffer_flush(dp->ports[p].port_id, w->idx,
						w->txb[p]);
		w->last_flush = now;
		w->dc[FG_DC_tx_flushes]++;
	}
	rte_rcu_qsbr_quiescent(dp->qsbr, w->idx);
}

int fg_worker_main(void *arg)
{
	struct fg_worker *w = arg;
	struct fg_dp *dp = w->dp;
	struct rte_mbuf *pkts[FG_BURST];

	rte_rcu_qsbr_thread_register(dp->qsbr, w->idx);
	rte_rcu_qsbr_thread_online(dp->qsbr, w->idx);
	while (!__atomic_load_n(&w->stop, __ATOMIC_RELAXED)) {
		uint64_t now = rte_rdtsc();

		for (unsigned int p = 0; p < dp->n_ports; p++) {
			const struct fg_port *pt = &dp->ports[p];

			if (dp->rx_port_per_worker && p != w->idx)
				continue;
			for (uint16_t q = dp->rx_port_per_worker ? 0 : w->idx;
			     q < pt->n_rxq; q += dp->n_workers) {
				uint16_t n = rte_eth_rx_burst(pt->port_id, q, pkts,
							      FG_BURST);

				if (n) {
					/* mbuf->port is the ethdev id; the
					 * pipeline wants our port index */
					for (uint16_t i = 0; i < n; i++) {
						pkts[i]->port = (uint16_t)p;
						fg_mbuf_priv(pkts[i])->parsed = FG_PARSED_NO;
					}
					/* --gpu: parse + hashes on the GPU */
					if (w->gpu)
						fg_gpupath_classify(w, pkts, n);
					fg_worker_burst(w, pkts, n, now);
				}
			}
		}
		fg_worker_housekeeping(w, now);
	}
	for (unsigned int p = 0; p < dp->n_ports; p++)
		rte_eth_tx_buffer_flush(dp->ports[p].port_id, w->idx, w->txb[p]);
	rte_rcu_qsbr_thread_offline(dp->qsbr, w->idx);
	rte_rcu_qsbr_thread_unregister(dp->qsbr, w->idx);
	return 0;
}

/* ------------------------------------------------------ construction */

int fg_worker_create(struct fg_dp *dp, unsigned int idx, unsigned int lcore,
		     struct fg_worker **out)
{
	int socket = (int)rte_lcore_to_socket_id(lcore);
	struct fg_worker *w;
	struct ct_config cc;
	char name[32];
	int rc = -ENOMEM;

	if (socket < 0 || socket >= RTE_MAX_NUMA_NODES)
		socket = 0;
	w = rte_zmalloc_socket("fg_worker", sizeof(*w), RTE_CACHE_LINE_SIZE, socket);
	if (w == NULL)
		return -ENOMEM;
	w->idx = idx;
	w->lcore = lcore;
	w->dp = dp;
	w->nat_next = NAT_PORT_LO + (uint16_t)(idx * 977);

	ct_config_defaults(&cc);
	snprintf(name, sizeof(name), "fgct%u", idx);
	cc.name = name;
	cc.capacity = dp->ct_capacity;
	cc.socket_id = socket;
	cc.hz = rte_get_tsc_hz();
	if (dp->cfg) {
		for (unsigned int s = 0; s < CT_ST_MAX && s < 16; s++)
			if (dp->cfg->ct_timeouts_ms[s])
				cc.timeouts.ms[s] = dp->cfg->ct_timeouts_ms[s];
		cc.flood_rate = dp->cfg->flood_rate;
	}
	w->ct = ct_shard_create(&cc);
	if (w->ct == NULL) {
		rc = -rte_errno;
		goto fail;
	}
	rc = ct_mbox_attach(w->ct);
	if (rc < 0)
		goto fail;
	ct_set_destroy_cb(w->ct, on_flow_destroy, w);
	char ev_name[RTE_RING_NAMESIZE];

	snprintf(ev_name, sizeof(ev_name), "fgev%u", idx);
	w->ev_ring = rte_ring_create_elem(ev_name, sizeof(struct fg_flow_ev),
					  FG_EV_RING_SIZE, socket,
					  RING_F_SP_ENQ | RING_F_SC_DEQ);
	if (w->ev_ring == NULL) {
		rc = -rte_errno;
		goto fail;
	}
	rc = -ENOMEM;
	w->lc_size = 65536;
	w->lc_active = rte_zmalloc_socket("fg_lc", w->lc_size * sizeof(uint32_t),
					  RTE_CACHE_LINE_SIZE, socket);
	if (w->lc_active == NULL)
		goto fail;
	for (unsigned int p = 0; p < dp->n_ports; p++) {
		w->txb[p] = rte_zmalloc_socket("fg_txb",
					       RTE_ETH_TX_BUFFER_SIZE(FG_BURST), 0,
					       socket);
		if (w->txb[p] == NULL)
			goto fail;
		rte_eth_tx_buffer_init(w->txb[p], FG_BURST);
		rte_eth_tx_buffer_set_err_callback(w->txb[p], tx_err_cb, w);
	}
	*out = w;
	return 0;
fail:
	fg_worker_free(w);
	return rc;
}

/* Creates the SP/SC dispatch rings between every pair of workers. */
int fg_worker_rings_create(struct fg_dp *dp)
{
	char name[RTE_RING_NAMESIZE];

	for (unsigned int d = 0; d < dp->n_workers; d++)
		for (unsigned int s = 0; s < dp->n_workers; s++) {
			if (s == d)
				continue;
			snprintf(name, sizeof(name), "fgdisp_%u_%u", s, d);
			dp->workers[d]->in[s] = rte_ring_create(name, 4096,
					(int)rte_lcore_to_socket_id(dp->workers[d]->lcore),
					RING_F_SP_ENQ | RING_F_SC_DEQ);
			if (dp->workers[d]->in[s] == NULL)
				return -rte_errno;
		}
	return 0;
}

void fg_worker_free(struct fg_worker *w)
{
	if (w == NULL)
		return;
	ct_shard_free(w->ct);
	rte_ring_free(w->ev_ring);
	rte_free(w->lc_active);
	for (unsigned int p = 0; p < FG_MAX_PORTS; p++)
		rte_free(w->txb[p]);
	for (unsigned int i = 0; i < FG_MAX_WORKERS; i++)
		rte_ring_free(w->in[i]);
	rte_free(w);
}
