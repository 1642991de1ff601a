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
 *          software RSS: fg_rss_hash() -> owner worker; others' packets go
 *          to the owner over an SP/SC ring (already parsed); ARP / ND go
 *          to fg_neigh_arp_input / fg_neigh_nd_input (fg_neigh.c)
 *          fg_pkt_sig()               -> CRC32C flow signature (conntrack slot + Maglev slot)
 *       2. ct_lookup_bulk_hint()      once per burst (a burst that mixes
 *                                     families: once per family); in a
 *                                     shard with NAT flows, packets to a
 *                                     local address hinted as replies,
 *                                     the others marked no replies
 *       3. hit  -> fg_flow_hit()      counters, ct_touch, the flow's forwarding
 *                                     slot's headers (DSR) or tuple (NAT), in
 *                                     one pass; a packet that needs more
 *                                     (a fragment, an ICMP error, a slot to
 *                                     fill) -> fg_flow_forward()
 *          miss -> fg_flow_new()      service lookup, scheduler (Maglev /
 *                                     least-conn), ct_insert, NAT port pick +
 *                                     reply entry, then fg_flow_forward()
 *          (fg_flow.c: the decisions)
 *       4. rewrite: the flow's forwarding cache slot (fg_flow.c fwd_slot:
 *          service, backend, their counter rows, egress port, prebuilt
 *          DSR outer headers or NAT's IPv4 template) ->
 *          fg_xlate_encap4_apply (IPIP / GUE, IPv4 in IPv4; inline) or
 *          fg_xlate_nat4_apply (IPv4 TCP/UDP and the TTL; inline), the
 *          other cases fg_xlate_encap_apply / fg_xlate_nat; on a slot miss
 *          the next hop from fg_neigh_next_hop()
 *       5. fg_worker_tx(): a burst array per (worker, port), sent when
 *          full, when a loop's RX bursts all came back short (no input
 *          waits) and every ~100 us (fg_worker_tx_flush)
 *     fg_worker_housekeeping()  dispatch rings, ct_expire (bounded),
 *                               ct_shard_poll (control mailbox), TX flush,
 *                               RCU quiescent state
 *
 * Construction is fg_worker_setup.c; the worker's layout and the helpers
 * its files share are in fg_worker_private.h.
 *
 * Everything written here belongs to this lcore (struct fg_worker, its
 * conntrack shard, its rows of the service/backend counters); the shared
 * tables (services, neighbours) are read through one acquire load per burst
 * and stay valid until this lcore reports a quiescent state.
 */
#include <string.h>

#include <rte_cycles.h>
#include <rte_prefetch.h>

#include "fg_worker_private.h"

#define PREFETCH_OFFSET 4

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
		const struct fg_lb_service *s =
			fg_lb_service_find(lb, ct_family_af(p->family),
					   ct_key_daddr(&p->key, p->family),
					   ct_key_dport(&p->key, p->family),
					   ct_key_proto(&p->key, p->family));

		if (s != NULL && s->mode == FG_MODE_NAT)
			return fg_rss_queue(fg_rss_hash(p), reta);
	}
	uint32_t h = p->family == CT_V4 ?
		fg_rss_hash_v4(p->key.k4.saddr, p->key.k4.daddr, 0, 0) :
		fg_rss_hash_v6(p->key.k6.saddr, p->key.k6.daddr, 0, 0);

	return fg_rss_queue(h, reta);
}

/* What a burst received (rx_packets, rx_bytes), added to the worker's
 * counters once per burst: a packet's two adds then stay in registers. */
struct rx_count {
	uint64_t packets, bytes;
};

/* Parses a packet into its mbuf's private area (once per packet: a burst
 * straight from RX (@p rx) is all fresh, the others say so by their flag). */
static inline struct fg_mbuf_priv *parse(struct rx_count *rc, struct rte_mbuf *m,
					 bool rx)
{
	struct fg_mbuf_priv *pr = fg_mbuf_priv(m);

	if (rx || pr->parsed == FG_PARSED_NO) {
		rc->packets++;
		rc->bytes += m->pkt_len;
		fg_pkt_parse(rte_pktmbuf_mtod(m, const uint8_t *), m->data_len,
			     &pr->pkt);
		pr->parsed = FG_PARSED_CPU;
	}
	return pr;
}

/* What one burst carries from stage to stage: its flow packets in
 * arrival order with their keys and signatures (v6: which are IPv6; a
 * burst of one family, the common case, is looked up as it stands, a mixed
 * one a family at a time), the packets other workers own, and what it
 * frees at the end. */
static_assert(FG_BURST <= 64, "struct burst: one bit a packet in v6");

struct burst {
	struct rte_mbuf *pk[FG_BURST];
	const void *keys[FG_BURST];
	uint32_t sigs[FG_BURST];
	unsigned int n;
	uint64_t v6;
	struct rte_mbuf *disp[FG_MAX_WORKERS][FG_BURST];
	unsigned int nd[FG_MAX_WORKERS];
	struct fg_burst_out o;
};

/* 1. One packet: linearize, parse, VLAN check; ARP / ND / host / refused
 * kinds end here; flow packets go to their owner worker or, returned,
 * into this burst's group (the caller appends them). */
static inline const struct fg_pkt *
burst_sort(struct fg_worker *w, const struct fg_lb_table *lb,
	   const struct fg_neigh_table *nt, struct burst *bu, struct rx_count *rc,
	   struct rte_mbuf *m, bool rx, bool dispatch, uint64_t now)
{
	struct fg_burst_out *o = &bu->o;

	if (unlikely(m->nb_segs > 1)) {
		/* the parser and rewriters work on one segment */
		if (rte_pktmbuf_linearize(m) < 0) {
			/* more than one mbuf holds: longer than the port's
			 * MTU (--mtu sizes the mbufs for it) */
			rc->packets++;
			rc->bytes += m->pkt_len;
			fg_worker_drop(w, o, m, FG_DROP_frame_too_long);
			return NULL;
		}
	}
	struct fg_mbuf_priv *pr = parse(rc, m, rx);
	struct fg_pkt *p = &pr->pkt;

	if (unlikely((p->vlan & 0x0fff) != w->tx[m->port].vlan) &&
	    p->kind != FG_PK_DROP) {
		/* not for this port: a VLAN we are not on.  Forwarding it
		 * would carry it into another VLAN (tag kept or stripped), as
		 * no L3 interface does */
		fg_worker_drop(w, o, m, FG_DROP_vlan_foreign);
		return NULL;
	}
	/* a flow packet first: the other kinds after one test */
	if (unlikely(p->kind != FG_PK_FLOW))
		switch (p->kind) {
		case FG_PK_ICMP_ERR:
		case FG_PK_FRAG_LATER:
			break;
		case FG_PK_ARP:
			fg_neigh_arp_input(w, lb, nt, o, m, p, now);
			return NULL;
		case FG_PK_ND:
			fg_neigh_nd_input(w, lb, nt, o, m, p, now);
			return NULL;
		case FG_PK_HOST:
			fg_worker_to_host(w, o, m, FG_DROP_host_unhandled);
			return NULL;
		default:
			fg_worker_drop(w, o, m, p->drop ? p->drop :
				       FG_DROP_l4_unsupported_proto);
			return NULL;
		}
	if (dispatch) {
		uint16_t owner = unlikely(p->flags & FG_PF_FRAG) ?
				 frag_owner(lb, p, w->dp->reta) :
				 pr->parsed == FG_PARSED_GPU ? pr->gpu_owner :
				 fg_rss_queue(fg_rss_hash(p), w->dp->reta);

		if (owner != w->idx) {
			bu->disp[owner][bu->nd[owner]++] = m;
			return NULL;
		}
	}
	return p;
}

/* Signatures in their own pass: the general parser stores the key in 2-
 * and 4-byte pieces, and reading it back 8 bytes at a time right away
 * stalls on store forwarding; a burst later it is free (session 12: with
 * the key stored whole, a signature in the parse loop gained nothing).
 * Then the other workers' packets leave for their rings. */
static inline void burst_sign_dispatch(struct fg_worker *w, struct burst *bu,
				       bool dispatch)
{
	for (unsigned int j = 0; j < bu->n; j++) {
		const struct fg_mbuf_priv *pr = fg_mbuf_priv(bu->pk[j]);

		bu->sigs[j] = pr->parsed == FG_PARSED_GPU ? pr->gpu_sig :
			      fg_pkt_sig(&pr->pkt);
	}
	if (!dispatch)
		return;
	for (unsigned int d = 0; d < w->dp->n_workers; d++) {
		unsigned int k;

		if (bu->nd[d] == 0)
			continue;
		k = rte_ring_sp_enqueue_burst(w->dp->workers[d]->in[w->idx],
					      (void **)bu->disp[d], bu->nd[d], NULL);
		w->cc[FG_CC_dispatched] += k;
		for (; k < bu->nd[d]; k++)
			fg_worker_drop(w, &bu->o, bu->disp[d][k], FG_DROP_dispatch_full);
	}
}

/* The region hints of a burst, for a shard that holds NAT flows
 * (ct_lookup_bulk_hint): hint, probably replies (a destination that is a
 * local address), whose lookup reads the reply region first; flow_only,
 * the others, no replies (fg_worker_no_reply), whose lookup reads the
 * flows' region only, so that a new flow reads no reply region's line.
 * The worker's own sets of local addresses, not the service table's
 * (fg_lb_addr_kind): asked for every packet of a NAT shard, that one cost
 * 88 more instructions a packet (594.8 against 506.6 a 1K nat hit,
 * scripts/cg-ipp.sh), this one ~6. */
struct region_hint {
	uint64_t hint, flow_only;
};

static struct region_hint burst_region_hint(const struct fg_worker *w,
					    const struct burst *bu)
{
	struct region_hint h = {0, 0};

	for (unsigned int j = 0; j < bu->n; j++) {
		const struct fg_pkt *p = &fg_mbuf_priv(bu->pk[j])->pkt;

		if (fg_worker_to_local(w, p))
			h.hint |= 1ull << j;
	}
	static_assert(FG_BURST < 64, "a burst's mask");
	h.flow_only = ~h.hint & ((1ull << bu->n) - 1);
	return h;
}

/* 2-5. @p n packets of family @p f: bulk lookup, then hits forwarded and
 * misses created, in arrival order. */
static inline void burst_lookup(struct fg_worker *w, const struct fg_lb_table *lb,
				const struct fg_neigh_table *nt, struct fg_burst_out *o,
				struct rte_mbuf *const *pk, const void *const *keys,
				const uint32_t *sigs, unsigned int n, unsigned int f,
				struct region_hint h, uint64_t now)
{
	struct ct_entry *ents[FG_BURST];
	uint32_t pos[FG_BURST];
	uint64_t hits;

	hits = ct_lookup_bulk_hint(w->ct, f, keys, sigs, n, h.hint, h.flow_only, now,
				   ents, pos);
	fg_worker_prof(w, FG_ST_lookup);
	w->cc[FG_CC_ct_hits] += __builtin_popcountll(hits);
	/* a new flow earlier in this burst may evict an entry a later packet
	 * hit and give its slot to another flow: trust a hit only while
	 * nothing was removed since the lookup, checked after each call that
	 * may remove (all but a hit's one pass) */
	const uint64_t *removals = ct_removal_seq(w->ct);
	const uint64_t removals0 = *removals;
	bool stale = false;

	for (unsigned int j = 0; j < n; j++) {
		struct rte_mbuf *m = pk[j];
		const struct fg_pkt *p = &fg_mbuf_priv(m)->pkt;
		bool hit = hits & (1ULL << j);

		if (unlikely(stale) && hit) {
			ents[j] = ct_lookup(w->ct, f, keys[j], sigs[j], now, &pos[j]);
			hit = ents[j] != NULL;
			w->dc[FG_DC_ct_hit_relookup]++;
		}
		if (likely(hit && !(ents[j]->flags & CT_F_REPLY) &&
			   !fg_flow_syn_reopens(lb, p, ents[j]))) {
			if (likely(!fg_flow_hit(w, lb, nt, o, m, p, ents[j], now)))
				continue;
		} else if (!hit) {
			fg_flow_new(w, lb, nt, o, m, p, sigs[j], keys[j], now);
		} else if (ents[j]->flags & CT_F_REPLY) {
			fg_flow_reply(w, lb, nt, o, m, p, ents[j], now);
		} else {
			/* a new connection on the tuple of an old one:
			 * schedule it afresh */
			ct_delete_pos(w->ct, f, pos[j]);
			w->cc[FG_CC_ct_reopened]++;
			fg_flow_new(w, lb, nt, o, m, p, sigs[j], keys[j], now);
		}
		stale = *removals != removals0;
	}
	fg_worker_prof(w, FG_ST_forward);
}

/* 2-5 for a burst that holds IPv6 packets: each family's packets in their
 * order, IPv4 first. */
static void burst_lookup_mixed(struct fg_worker *w, const struct fg_lb_table *lb,
			       const struct fg_neigh_table *nt, struct burst *bu,
			       struct region_hint h, uint64_t now)
{
	struct rte_mbuf *pk[FG_BURST];
	const void *keys[FG_BURST];
	uint32_t sigs[FG_BURST];

	for (unsigned int f = 0; f < CT_FAMILIES; f++) {
		struct region_hint fh = {0, 0};
		unsigned int n = 0;

		for (unsigned int j = 0; j < bu->n; j++)
			if ((bu->v6 >> j & 1) == f) {
				fh.hint |= (h.hint >> j & 1) << n;
				fh.flow_only |= (h.flow_only >> j & 1) << n;
				pk[n] = bu->pk[j];
				keys[n] = bu->keys[j];
				sigs[n++] = bu->sigs[j];
			}
		if (n)
			burst_lookup(w, lb, nt, &bu->o, pk, keys, sigs, n, f, fh, now);
	}
}

/* noinline, noclone: one symbol whatever LTO does, the scope that
 * scripts/cg-ipp.sh counts instructions in (a call per burst costs
 * nothing); clang has no noclone (and clones no function it may not
 * inline) */
#ifdef __clang__
__attribute__((noinline))
#else
__attribute__((noinline, noclone))
#endif
void fg_worker_burst(struct fg_worker *w, struct rte_mbuf **pkts, uint16_t n,
		     uint64_t now, bool rx)
{
	const struct fg_lb_table *lb = __atomic_load_n(&w->dp->lb, __ATOMIC_ACQUIRE);
	const struct fg_neigh_table *nt = __atomic_load_n(&w->dp->neigh,
							  __ATOMIC_ACQUIRE);
	bool dispatch = w->dp->sw_rss;
	struct rx_count rc = {0, 0};
	struct burst bu;

	bu.o.n_free = 0;
	bu.o.lb_gen = lb != NULL ? lb->generation : UINT64_MAX;
	bu.o.nt_gen = nt != NULL ? nt->gen : UINT64_MAX;
	if (dispatch)
		memset(bu.nd, 0, sizeof(bu.nd[0]) * w->dp->n_workers);

	/* 1. parse, sort, dispatch, group by family */
	for (uint16_t i = 0; i < n && i < PREFETCH_OFFSET; i++) {
		rte_prefetch0(rte_pktmbuf_mtod(pkts[i], void *));
		rte_prefetch0_write(rte_pktmbuf_mtod(pkts[i], uint8_t *) - RTE_CACHE_LINE_SIZE);
	}
	unsigned int nf = 0;
	uint64_t v6 = 0;

	for (uint16_t i = 0; i < n; i++) {
		if (i + PREFETCH_OFFSET < n) {
			uint8_t *d = rte_pktmbuf_mtod(pkts[i + PREFETCH_OFFSET], uint8_t *);

			rte_prefetch0(d);
			/* encapsulation writes the outer headers into the
			 * line before the frame: own it before we get there */
			rte_prefetch0_write(d - RTE_CACHE_LINE_SIZE);
		}
		const struct fg_pkt *p = burst_sort(w, lb, nt, &bu, &rc, pkts[i], rx,
						    dispatch, now);

		if (p == NULL)
			continue;
		v6 |= (uint64_t)p->family << nf;
		bu.pk[nf] = pkts[i];
		bu.keys[nf] = &p->key;
		nf++;
	}
	bu.n = nf;
	bu.v6 = v6;
	w->cc[FG_CC_rx_packets] += rc.packets;
	w->cc[FG_CC_rx_bytes] += rc.bytes;
	fg_worker_prof(w, FG_ST_parse);
	burst_sign_dispatch(w, &bu, dispatch);
	fg_worker_prof(w, FG_ST_sign);
	/* 2-5. lookup, then forward hits and create misses, in order */
	struct region_hint h = {0, 0};

	if (unlikely(ct_reply_count(w->ct) != 0))
		h = burst_region_hint(w, &bu);
	if (likely(bu.v6 == 0))
		burst_lookup(w, lb, nt, &bu.o, bu.pk, bu.keys, bu.sigs, bu.n, CT_V4,
			     h, now);
	else
		burst_lookup_mixed(w, lb, nt, &bu, h, now);
	if (bu.o.n_free)
		rte_pktmbuf_free_bulk(bu.o.free, bu.o.n_free);
	fg_worker_prof(w, FG_ST_forward);
}

/* ------------------------------------------------------ housekeeping */

/* A burst array rather than rte_eth_tx_buffer(): the counters are added
 * once a burst, for the packets the driver took, where the buffer's path
 * added them a packet at a time and took them back in its error callback
 * (bench/RESULTS.md, session 16). */
void fg_worker_tx_flush(struct fg_worker *w, uint16_t port)
{
	struct fg_worker_txq *q = &w->tx[port];
	struct rte_mbuf **b = w->txb[port];
	uint16_t n = q->n, sent;
	uint64_t bytes = 0;

	if (n == 0)
		return;
	q->n = 0;
	/* the lengths before the driver owns the mbufs */
	for (uint16_t i = 0; i < n; i++)
		bytes += b[i]->pkt_len;
	/* --profile: the driver's time is tx, not its caller's */
	uint64_t t0 = unlikely(w->prof) ? rte_rdtsc() : 0;

	sent = rte_eth_tx_burst(q->port_id, (uint16_t)w->idx, b, n);
	if (unlikely(w->prof)) {
		uint64_t d = rte_rdtsc() - t0;

		w->prof_cyc[FG_ST_tx] += d;
		w->prof_t += d;
	}
	if (unlikely(sent < n)) {
		for (uint16_t i = sent; i < n; i++)
			bytes -= b[i]->pkt_len;
		w->drops[FG_DROP_tx_full] += n - sent;
		w->cc[FG_CC_drops] += n - sent;
		rte_pktmbuf_free_bulk(b + sent, n - sent);
	}
	w->cc[FG_CC_tx_packets] += sent;
	w->cc[FG_CC_tx_bytes] += bytes;
}

/* Sends what every port's TX burst holds. */
static void tx_flush_all(struct fg_worker *w)
{
	for (unsigned int p = 0; p < w->dp->n_ports; p++)
		fg_worker_tx_flush(w, (uint16_t)p);
}

unsigned int fg_worker_housekeeping(struct fg_worker *w, uint64_t now)
{
	struct fg_dp *dp = w->dp;
	unsigned int got = 0;

	if (dp->sw_rss) {
		struct rte_mbuf *pkts[FG_BURST];

		for (unsigned int i = 0; i < dp->n_workers; i++) {
			unsigned int k;

			if (i == w->idx)
				continue;
			k = rte_ring_sc_dequeue_burst(w->in[i], (void **)pkts,
						      FG_BURST, NULL);
			if (k)
				fg_worker_burst(w, pkts, (uint16_t)k, now, false);
			got += k;
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
				fg_worker_tx(w, (uint16_t)p, hm[i]);
			w->dc[FG_DC_host_to_wire] += k;
			got += k;
		}
	}
	/* expiry and the mailbox every ~10 us, not every loop: both are
	 * bounded, but a call per burst costs ~6% at line rate */
	if (now - w->last_expire >= dp->hz / 100000) {
		ct_expire(w->ct, now);
		ct_shard_poll(w->ct, now);
		w->last_expire = now;
	}
	if (w->sync_out != NULL)
		got += fg_sync_worker_poll(w, now);
	if (now - w->last_flush >= dp->flush_ticks) {
		tx_flush_all(w);
		w->last_flush = now;
		w->dc[FG_DC_tx_flushes]++;
	}
	rte_rcu_qsbr_quiescent(dp->qsbr, w->idx);
	return got;
}

/* Stop path under software RSS: a packet another worker took from its
 * port before the stop may still wait in our dispatch ring.  Every worker
 * first stops polling its ports (rx_done), and once all have, nobody
 * dispatches any more: each then empties its rings, so that every packet
 * received is forwarded or counted, never dropped silently.  The wait is
 * bounded (1 s) so that a worker that never ran cannot hang the stop; what
 * is left after it is counted as stop_undrained. */
static void worker_drain(struct fg_worker *w)
{
	struct fg_dp *dp = w->dp;
	uint64_t until = rte_rdtsc() + dp->hz;
	struct rte_mbuf *pkts[FG_BURST];
	unsigned int got;

	__atomic_store_n(&w->rx_done, true, __ATOMIC_RELEASE);
	for (unsigned int i = 0; i < dp->n_workers; i++)
		while (!__atomic_load_n(&dp->workers[i]->rx_done, __ATOMIC_ACQUIRE) &&
		       rte_rdtsc() < until)
			rte_pause();
	do {
		uint64_t now = rte_rdtsc();

		got = 0;
		for (unsigned int i = 0; i < dp->n_workers; i++) {
			unsigned int k;

			if (i == w->idx)
				continue;
			k = rte_ring_sc_dequeue_burst(w->in[i], (void **)pkts, FG_BURST, NULL);
			if (k)
				fg_worker_burst(w, pkts, (uint16_t)k, now, false);
			got += k;
		}
	} while (got);
}

/* A burst from port index @p p (ethdev @p port_id) into the pipeline.
 * mbuf->port is the ethdev id; the pipeline wants the port index, which
 * is the same on most nodes: then nothing is written.  Without --gpu the
 * burst is parsed as it stands, with no flag written into each mbuf first
 * (that pass cost 1.9% at 1K flows; bench/RESULTS.md, session 17); with
 * it, the GPU path marks what it parsed and the rest is fresh. */
static inline void worker_rx(struct fg_worker *w, struct rte_mbuf **pkts, uint16_t n,
			     uint16_t p, uint16_t port_id, uint64_t now)
{
	if (unlikely(port_id != p))
		for (uint16_t i = 0; i < n; i++)
			pkts[i]->port = p;
	if (w->gpu) {
		for (uint16_t i = 0; i < n; i++)
			fg_mbuf_priv(pkts[i])->parsed = FG_PARSED_NO;
		fg_gpupath_classify(w, pkts, n);
	}
	fg_worker_burst(w, pkts, n, now, !w->gpu);
}

int fg_worker_main(void *arg)
{
	struct fg_worker *w = arg;
	struct fg_dp *dp = w->dp;
	struct rte_mbuf *pkts[FG_BURST];
	uint32_t empty = 0, nap_us = 0;

	rte_rcu_qsbr_thread_register(dp->qsbr, w->idx);
	rte_rcu_qsbr_thread_online(dp->qsbr, w->idx);
	while (!__atomic_load_n(&w->stop, __ATOMIC_RELAXED)) {
		uint64_t now = rte_rdtsc();
		unsigned int got = 0;
		bool more = false;

		for (unsigned int p = 0; p < dp->n_ports; p++) {
			const struct fg_port *pt = &dp->ports[p];

			if (dp->rx_port_per_worker && p != w->idx)
				continue;
			for (uint16_t q = dp->rx_port_per_worker ? 0 : w->idx;
			     q < pt->n_rxq; q += dp->n_workers) {
				uint16_t n = rte_eth_rx_burst(pt->port_id, q, pkts,
							      FG_BURST);

				fg_worker_prof(w, FG_ST_rx);
				got += n;
				more |= n == FG_BURST;
				if (n)
					worker_rx(w, pkts, n, (uint16_t)p, pt->port_id, now);
			}
		}
		got += fg_worker_housekeeping(w, now);
		/* every queue came back short: no input waits, so what the TX
		 * bursts hold would wait for nothing but the ~100 us timer
		 * (at 10% load, 32 packets take ~50 us to gather: the median
		 * packet waited ~25 us, bench/RESULTS.md "Latency").  Under
		 * load the RX bursts are full and the TX bursts stay whole. */
		if (got && !more)
			tx_flush_all(w);
		fg_worker_prof(w, FG_ST_housekeeping);
		if (dp->idle_sleep_us == 0)
			continue;
		/* --idle-sleep, l3fwd-power's rule: after FG_IDLE_SPINS empty
		 * polls in a row, sleep 1 us, doubling while the polls stay
		 * empty, up to the option's bound; the first packet resets it.
		 * Under load no poll is empty and this costs one branch. */
		if (got) {
			empty = 0;
			nap_us = 0;
			continue;
		}
		if (++empty < FG_IDLE_SPINS)
			continue;
		nap_us = nap_us ? RTE_MIN(2 * nap_us, dp->idle_sleep_us) : 1;
		/* nothing waits in a TX buffer while we sleep */
		tx_flush_all(w);
		w->dc[FG_DC_idle_sleeps]++;
		rte_delay_us_sleep(nap_us);
	}
	if (dp->sw_rss)
		worker_drain(w);
	tx_flush_all(w);
	rte_rcu_qsbr_thread_offline(dp->qsbr, w->idx);
	rte_rcu_qsbr_thread_unregister(dp->qsbr, w->idx);
	return 0;
}
