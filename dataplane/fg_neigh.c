/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Neighbour (ARP/ND) table: an immutable open-addressing table, republished
 * by the main lcore when a worker learns a new or changed entry.  Learning
 * is rare (first contact, MAC change); lookups are one per forwarded packet,
 * so readers get a plain array walk with no locks and no atomics.
 *
 * What gets in (issue 9, defect 4: 5,000 spoofed ARP requests used to fill
 * the table for good): configured static neighbours; replies (ARP reply,
 * neighbour advertisement) for an address a worker solicited in the last
 * FG_NEIGH_SOLICIT_WINDOW_S seconds; anything from a configured gateway.
 * Learned entries age out FG_NEIGH_AGE_S after their last confirmation;
 * from 3/4 of that they are stale, and the workers that use them solicit
 * them again (fg_neigh_next_hop_slow below), so a live neighbour is
 * confirmed before it expires.  The ageing check runs on the main lcore
 * and rebuilds the table only when an entry is due.
 *
 * What an on-link attacker cannot do (issue 34): take over an address
 * answered less than FG_NEIGH_LOCKTIME_MS ago (the first answer wins, as
 * with Linux's locktime; neigh_locked), or make us broadcast a request
 * per spoofed source: requests for addresses the table does not hold
 * share a token bucket per port (FG_SOLICIT_RATE; arp_ratelimited).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_malloc.h>

#include "fg_rcu.h"
#include "fg_worker_private.h"
#include "fg_xlate.h"

/* One lookup per forwarded packet: a multiplicative mix, not CRC. */
static inline uint32_t neigh_hash(uint8_t family, const void *addr)
{
	uint32_t w[4] = {0, 0, 0, 0};
	uint64_t h;

	memcpy(w, addr, family == AF_INET6 ? 16 : 4);
	h = (uint64_t)(w[0] ^ w[1] ^ w[2] ^ w[3] ^ family) * 0x9E3779B97F4A7C15ull;
	return (uint32_t)(h >> 32);
}

const struct fg_neigh_entry *fg_neigh_lookup(const struct fg_neigh_table *t,
					     uint8_t family, const void *addr)
{
	uint32_t alen = family == AF_INET6 ? 16 : 4;

	if (t == NULL)
		return NULL;
	for (uint32_t i = neigh_hash(family, addr) & t->mask;;
	     i = (i + 1) & t->mask) {
		const struct fg_neigh_entry *e = &t->e[i];

		if (!e->used)
			return NULL;
		if (e->family == family && memcmp(e->addr, addr, alen) == 0)
			return e;
	}
}

/* Inserts or updates; static entries win over learned ones.  False when
 * the table is full. */
static bool neigh_put(struct fg_neigh_table *t, uint8_t family,
		      const void *addr, const struct rte_ether_addr *mac,
		      uint8_t port, bool is_static, uint64_t tsc, bool stale)
{
	uint32_t alen = family == AF_INET6 ? 16 : 4;

	for (uint32_t i = neigh_hash(family, addr) & t->mask;;
	     i = (i + 1) & t->mask) {
		struct fg_neigh_entry *e = &t->e[i];

		if (e->used && e->family == family &&
		    memcmp(e->addr, addr, alen) == 0) {
			if (e->is_static && !is_static)
				return true;
			e->mac = *mac;
			e->port = port;
			e->is_static = is_static;
			e->learned_tsc = tsc;
			e->stale = stale;
			return true;
		}
		if (!e->used) {
			if (t->count >= FG_NEIGH_MAX)
				return false;
			e->used = 1;
			e->family = family;
			memcpy(e->addr, addr, alen);
			e->mac = *mac;
			e->port = port;
			e->is_static = is_static;
			e->learned_tsc = tsc;
			e->stale = stale;
			t->count++;
			return true;
		}
	}
}

/* 0 = fresh, 1 = stale, 2 = expired (learned entries only). */
static inline int neigh_age_of(const struct fg_neigh_entry *e, uint64_t now,
			       uint64_t age)
{
	uint64_t a = now - e->learned_tsc;

	if (age == 0 || e->is_static || (int64_t)a < 0)
		return 0;
	return a >= age ? 2 : a >= age - age / 4 ? 1 : 0;
}

bool fg_neigh_table_due(const struct fg_neigh_table *t, uint64_t now,
			uint64_t age)
{
	if (t == NULL || age == 0)
		return false;
	for (uint32_t i = 0; i <= t->mask; i++) {
		int a;

		if (!t->e[i].used)
			continue;
		a = neigh_age_of(&t->e[i], now, age);
		if (a == 2 || (a == 1 && !t->e[i].stale))
			return true;
	}
	return false;
}

struct fg_neigh_table *fg_neigh_table_build(const struct fg_config *cfg,
					    const struct fg_neigh_table *old,
					    const struct fg_neigh_learn *add,
					    unsigned int n_add)
{
	return fg_neigh_table_build_aged(cfg, old, add, n_add, rte_rdtsc(), 0);
}

struct fg_neigh_table *fg_neigh_table_build_aged(const struct fg_config *cfg,
						 const struct fg_neigh_table *old,
						 const struct fg_neigh_learn *add,
						 unsigned int n_add, uint64_t now,
						 uint64_t age)
{
	struct fg_neigh_table *t = rte_zmalloc("fg_neigh", sizeof(*t), 0);

	if (t == NULL)
		return NULL;
	/* twice the maximum keeps probe chains short at any fill */
	/* Workers cache resolutions tagged with this; builds happen on the
	 * main lcore only, so a plain counter is enough. */
	static uint64_t neigh_gen;

	t->gen = ++neigh_gen;
	t->mask = 2 * FG_NEIGH_MAX - 1;
	t->e = rte_zmalloc("fg_neigh_e", (t->mask + 1) * sizeof(*t->e),
			   RTE_CACHE_LINE_SIZE);
	if (t->e == NULL) {
		rte_free(t);
		return NULL;
	}
	for (uint32_t i = 0; cfg && i < cfg->n_neigh; i++) {
		const struct fg_neigh_cfg *n = &cfg->neigh[i];

		neigh_put(t, n->ip.family, n->ip.bytes,
			  (const struct rte_ether_addr *)n->mac, n->port, true, now,
			  false);
	}
	if (old != NULL)
		for (uint32_t i = 0; i <= old->mask; i++) {
			const struct fg_neigh_entry *e = &old->e[i];
			int a;

			if (!e->used || e->is_static)
				continue;
			a = neigh_age_of(e, now, age);
			if (a == 2)
				continue;   /* not confirmed in time: gone */
			neigh_put(t, e->family, e->addr, &e->mac, e->port, false,
				  e->learned_tsc, a == 1);
		}
	for (unsigned int i = 0; i < n_add; i++)
		neigh_put(t, add[i].family, add[i].addr, &add[i].mac, add[i].port,
			  false, now, false);
	return t;
}

void fg_neigh_table_free(struct fg_neigh_table *t)
{
	if (t == NULL)
		return;
	rte_free(t->e);
	rte_free(t);
}

/* @p e (learned) was answered less than @p lock ticks from @p now (either
 * way: workers' clocks are read at their own burst starts) with another
 * MAC or port than @p mac, @p port. */
static inline bool neigh_fresh_other(uint64_t tsc, const uint8_t *e_mac,
				     uint8_t e_port, const uint8_t *mac,
				     uint16_t port, uint64_t now, uint64_t lock)
{
	int64_t d = (int64_t)(now - tsc);

	return d < (int64_t)lock && d > -(int64_t)lock &&
	       (memcmp(e_mac, mac, 6) != 0 || e_port != port);
}

static inline uint64_t neigh_lock_ticks(const struct fg_dp *dp)
{
	return dp->hz * FG_NEIGH_LOCKTIME_MS / 1000;
}

void fg_dp_neigh_poll(struct fg_dp *dp)
{
	struct fg_neigh_learn msgs[64];
	struct fg_neigh_learn add[64];
	unsigned int n, k = 0;
	uint64_t now = rte_rdtsc(), lock = neigh_lock_ticks(dp);
	bool age_due = false;

	/* ageing: look at the table 16 times per age, rebuild when due */
	if (dp->neigh_age && now - dp->neigh_aged_at >= dp->neigh_age / 16) {
		dp->neigh_aged_at = now;
		age_due = fg_neigh_table_due(dp->neigh, now, dp->neigh_age);
	}
	n = rte_ring_dequeue_burst_elem(dp->learn_ring, msgs, sizeof(msgs[0]),
					RTE_DIM(msgs), NULL);
	for (unsigned int i = 0; i < n; i++) {
		const struct fg_neigh_learn *l = &msgs[i];
		const struct fg_neigh_entry *e =
			fg_neigh_lookup(dp->neigh, l->family, l->addr);
		/* locktime again: two answers can cross on their way here
		 * (each worker's own check passed); the first stays */
		bool locked = e != NULL && !e->is_static &&
			      neigh_fresh_other(e->learned_tsc, e->mac.addr_bytes,
						e->port, l->mac.addr_bytes, l->port,
						l->tsc, lock);

		for (unsigned int j = 0; j < k && !locked; j++)
			locked = add[j].family == l->family &&
				 memcmp(add[j].addr, l->addr, 16) == 0 &&
				 neigh_fresh_other(add[j].tsc, add[j].mac.addr_bytes,
						   add[j].port, l->mac.addr_bytes,
						   l->port, l->tsc, lock);
		/* only republish for news (new, moved, or a stale entry
		 * confirmed): a worker may post the same entry several times
		 * before the new table reaches it */
		if (!locked && (e == NULL || (!e->is_static &&
				  (!rte_is_same_ether_addr(&e->mac, &msgs[i].mac) ||
				   e->port != msgs[i].port || e->stale))))
			add[k++] = msgs[i];
	}
	if (k == 0 && !age_due)
		return;
	pthread_mutex_lock(&dp->cfg_lock);
	struct fg_neigh_table *old = dp->neigh;
	struct fg_neigh_table *nt = fg_neigh_table_build_aged(dp->cfg, old, add, k,
							      now, dp->neigh_age);

	if (nt != NULL)
		fg_neigh_table_free(fg_rcu_publish(dp->qsbr, &dp->neigh, nt));
	pthread_mutex_unlock(&dp->cfg_lock);
}

/* ------------------------------------------------ worker side: resolution */

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

/* This worker's share of port @p port's FG_SOLICIT_RATE: true when one
 * request may go now (and takes its token). */
static bool solicit_budget(struct fg_worker *w, uint16_t port, uint64_t now)
{
	uint64_t nw = RTE_MAX(1u, w->dp->n_workers);
	uint64_t cost = w->dp->hz * nw / FG_SOLICIT_RATE;
	uint64_t full = cost * RTE_MAX(1u, FG_SOLICIT_BURST / nw);
	uint64_t credit = w->solicit_credit[port] + (now - w->solicit_last[port]);

	w->solicit_last[port] = now;
	if (credit > full || credit < w->solicit_credit[port])
		credit = full;   /* full, the first call, or the clock went back */
	if (credit < cost) {
		w->solicit_credit[port] = credit;
		return false;
	}
	w->solicit_credit[port] = credit - cost;
	return true;
}

/* Asks @p port who has @p addr, at most once a second per address and,
 * when @p limited (an address the table does not hold and no gateway),
 * within the port's request budget. */
static void solicit(struct fg_worker *w, uint16_t port, uint8_t af,
		    const uint8_t *addr, bool limited, uint64_t now)
{
	struct fg_port *pt = &w->dp->ports[port];
	uint32_t alen = af == AF_INET6 ? 16 : 4;
	uint32_t set = ct_hash_crc(addr, alen) & (FG_SOLICIT_SETS - 1), way = 0;
	struct rte_mbuf *m;
	int rc;

	if (pt->rx_only)
		return;   /* a replay source (bench) asks nobody */
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
	if (limited && !solicit_budget(w, port, now)) {
		w->dc[FG_DC_arp_ratelimited]++;
		return;
	}
	memcpy(w->solicit_addr[set][way], addr, alen);
	w->solicit_tsc[set][way] = now;
	m = rte_pktmbuf_alloc(w->dp->pool[rte_socket_id() < RTE_MAX_NUMA_NODES ?
							  rte_socket_id() : 0]);
	if (m == NULL)
		return;
	/* the port's first local address of the family is the sender (none:
	 * an ARP probe from 0.0.0.0; IPv6 needs a source) */
	const struct fg_addr *src = NULL;

	for (uint32_t i = 0; i < pt->cfg.n_local && !src; i++)
		if (pt->cfg.local[i].family == af)
			src = &pt->cfg.local[i];
	uint32_t len = af == AF_INET ? FG_XLATE_ARP_REQUEST_LEN : FG_XLATE_ND_SOLICIT_LEN;
	uint8_t *d = (uint8_t *)rte_pktmbuf_append(m, (uint16_t)len);

	if (d == NULL)
		rc = -ENOSPC;
	else if (af == AF_INET)
		rc = fg_xlate_arp_request(d, len, pt->mac.addr_bytes,
					  src ? src->bytes : NULL, addr);
	else if (src != NULL)
		rc = fg_xlate_nd_solicit(d, len, pt->mac.addr_bytes, src->bytes, addr);
	else
		rc = -EADDRNOTAVAIL;
	if (rc < 0) {
		rte_pktmbuf_free(m);
		return;
	}
	w->dc[FG_DC_arp_requests]++;
	fg_worker_tx(w, port, m);
}

bool fg_neigh_next_hop_slow(struct fg_worker *w, const struct fg_neigh_table *nt,
			  uint8_t af, const uint8_t *addr, uint16_t *port,
			  const struct rte_ether_addr **mac, uint64_t now)
{
	const struct fg_neigh_entry *e = fg_neigh_lookup(nt, af, addr);

	if (likely(e != NULL)) {
		/* ageing: confirm it before it expires (once per table
		 * generation and worker: this runs on next-hop cache misses) */
		if (unlikely(e->stale))
			solicit(w, e->port, af, addr, false, now);
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
				solicit(w, e->port, af, gw->bytes, false, now);
			*port = e->port;
			*mac = &e->mac;
			return true;
		}
		solicit(w, p, af, gw->bytes, false, now);
		return false;
	}
	/* on-link guess: ask on every port (a spoofed NAT source lands
	 * here: each port's budget) */
	for (unsigned int p = 0; p < w->dp->n_ports; p++)
		solicit(w, p, af, addr, true, now);
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

/* True when @p addr was answered less than FG_NEIGH_LOCKTIME_MS ago with
 * another MAC or port: the published entry @p e, or an answer a worker
 * posted that the main lcore may not have published yet. */
static bool neigh_locked(const struct fg_worker *w, const struct fg_neigh_entry *e,
			 uint8_t af, const uint8_t *addr, const uint8_t *mac,
			 uint16_t port, uint64_t now)
{
	uint64_t lock = neigh_lock_ticks(w->dp);
	uint32_t alen = af == AF_INET6 ? 16 : 4;
	uint32_t set = ct_hash_crc(addr, alen) & (FG_SOLICIT_SETS - 1);

	if (e != NULL && !e->is_static &&
	    neigh_fresh_other(e->learned_tsc, e->mac.addr_bytes, e->port, mac, port,
			      now, lock))
		return true;
	for (unsigned int i = 0; i < w->dp->n_workers; i++) {
		const struct fg_worker *o = w->dp->workers[i];
		const struct fg_neigh_posted *q;

		if (o == NULL)
			continue;
		q = &o->neigh_posted[set];
		if (q->family == af && memcmp(q->addr, addr, alen) == 0 &&
		    neigh_fresh_other(q->tsc, q->mac, q->port, mac, port, now, lock))
			return true;
	}
	return false;
}

/*
 * Posts a neighbour for the main lcore to publish, if it may be learned:
 * a reply (@p reply: ARP reply / NA) to our own solicitation, or anything
 * from a configured gateway, unless the address was answered with another
 * MAC less than FG_NEIGH_LOCKTIME_MS ago.  Requests from other hosts are
 * answered but never learned: 5,000 spoofed requests used to fill the
 * table for good (issue 9, defect 4).
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
	if (neigh_locked(w, e, af, addr, mac, port, now)) {
		w->dc[FG_DC_neigh_locked]++;
		return;
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
	l.tsc = now;
	if (rte_ring_enqueue_elem(w->dp->learn_ring, &l, sizeof(l)) != 0) {
		w->dc[FG_DC_neigh_learn_full]++;
		return;
	}
	w->dc[FG_DC_neigh_learned]++;
	struct fg_neigh_posted *q = &w->neigh_posted[ct_hash_crc(addr, af == AF_INET6 ?
								   16 : 4) &
						     (FG_SOLICIT_SETS - 1)];

	q->tsc = now;
	memcpy(q->addr, l.addr, sizeof(q->addr));
	memcpy(q->mac, mac, 6);
	q->family = af;
	q->port = (uint8_t)port;
}

void fg_neigh_arp_input(struct fg_worker *w, const struct fg_lb_table *lb,
		       const struct fg_neigh_table *nt, struct fg_burst_out *o,
		       struct rte_mbuf *m, const struct fg_pkt *p, uint64_t now)
{
	uint8_t *d = rte_pktmbuf_mtod(m, uint8_t *);
	uint16_t port = m->port;

	if (p->key.k4.saddr != 0)
		learn(w, nt, AF_INET, (const uint8_t *)&p->key.k4.saddr,
		      d + p->l3_off + 8, port, p->flags & FG_PF_ARP_REPLY, now);
	if (p->flags & FG_PF_ARP_REPLY) {
		fg_worker_consumed_reply(w, o, m);   /* learned above */
		return;
	}
	if (fg_lb_addr_kind(lb, AF_INET, &p->key.k4.daddr) == 0) {
		fg_worker_drop(w, o, m, FG_DROP_arp_not_ours);
		return;
	}
	struct fg_frame f = {d, m->data_len, rte_pktmbuf_headroom(m),
			     rte_pktmbuf_tailroom(m)};
	int len = fg_xlate_arp_reply(&f, p, w->dp->ports[port].mac.addr_bytes);

	if (len < 0) {
		fg_worker_drop(w, o, m, FG_DROP_arp_malformed);
		return;
	}
	w->cc[FG_CC_arp_replies]++;
	fg_worker_tx(w, port, m);
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

void fg_neigh_nd_input(struct fg_worker *w, const struct fg_lb_table *lb,
		      const struct fg_neigh_table *nt, struct fg_burst_out *o,
		      struct rte_mbuf *m, const struct fg_pkt *p, uint64_t now)
{
	uint8_t *d = rte_pktmbuf_mtod(m, uint8_t *);
	uint16_t port = m->port;
	static const uint8_t zero[16];

	if (p->flags & FG_PF_ND_ADVERT) {
		const uint8_t *ll = nd_lladdr(d, m->data_len, p, 2);

		if (ll)
			learn(w, nt, AF_INET6, p->key.k6.daddr, ll, port, true, now);
		fg_worker_consumed_reply(w, o, m);
		return;
	}
	if (memcmp(p->key.k6.saddr, zero, 16) != 0) {
		const uint8_t *ll = nd_lladdr(d, m->data_len, p, 1);

		if (ll)
			learn(w, nt, AF_INET6, p->key.k6.saddr, ll, port, false, now);
	}
	if (fg_lb_addr_kind(lb, AF_INET6, p->key.k6.daddr) == 0) {
		fg_worker_drop(w, o, m, FG_DROP_arp_not_ours);
		return;
	}
	struct fg_frame f = {d, m->data_len, rte_pktmbuf_headroom(m),
			     rte_pktmbuf_tailroom(m)};
	int len = fg_xlate_nd_advert(&f, p, w->dp->ports[port].mac.addr_bytes);

	if (len < 0) {
		fg_worker_drop(w, o, m, len == -ENOSPC ? FG_DROP_no_headroom : FG_DROP_nd_malformed);
		return;
	}
	m->data_len = m->pkt_len = len;
	w->cc[FG_CC_nd_adverts]++;
	fg_worker_tx(w, port, m);
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
void fg_neigh_resolve_client(struct fg_worker *w, const struct fg_neigh_table *nt,
			       uint8_t af, const uint8_t *client, uint64_t now)
{
	const struct rte_ether_addr *mac;
	uint16_t port;

	/* a client's flows come in runs: its first one asked already */
	if (solicit_recent(w, af, client, now))
		return;
	(void)fg_neigh_next_hop(w, nt, af, client, &port, &mac, now);
}
