/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Flow decisions: what the worker does with a parsed packet once the
 * conntrack lookup has answered (fg_worker.c calls in here).
 *
 *   fg_flow_new()      no entry: service lookup, scheduler (Maglev slot
 *                      or least-connections), ct_insert, full NAT's local
 *                      port and reply entry (nat_setup), then forward
 *   fg_flow_hit()      a hit's common case in one pass (flow_account, then
 *                      dsr_send or nat4_send with the forwarding slot);
 *                      anything else goes to fg_flow_forward
 *   fg_flow_forward()  request direction: counters, conntrack state, then
 *                      DSR encapsulation (send_dsr) or NAT (send_nat);
 *                      first fragments arm the fragment-follow entry
 *   fg_flow_reply()    reply direction of a NAT flow: restore the tuple
 *   too_big / refuse   generated ICMP errors and RSTs (rate limited)
 *
 * Everything here runs on the worker's own lcore and writes only its own
 * state (struct fg_worker, its conntrack shard, its counter rows).
 */
#include <errno.h>
#include <string.h>

#include <rte_ip.h>

#include "fg_load.h"
#include "fg_maglev.h"
#include "fg_place.h"
#include "fg_worker_private.h"
#include "fg_xlate.h"

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

/* This worker's counter row of service @p s / backend @p b in table @p lb
 * (a forwarding slot keeps both: fwd_slot) */
static inline uint64_t *svc_row(const struct fg_worker *w,
				const struct fg_lb_table *lb,
				const struct fg_lb_service *s)
{
	return &lb->core[w->idx].svc[s->stat_idx * FG_SC_MAX];
}

static inline uint64_t *be_row(const struct fg_worker *w,
			       const struct fg_lb_table *lb,
			       const struct fg_lb_backend *b)
{
	return &lb->core[w->idx].be[b->stat_idx * FG_BC_MAX];
}

static inline void svc_count(struct fg_worker *w, const struct fg_lb_table *lb,
			     const struct fg_lb_service *s,
			     enum fg_service_counter c, uint64_t v)
{
	svc_row(w, lb, s)[c] += v;
}

static inline void be_count(struct fg_worker *w, const struct fg_lb_table *lb,
			    const struct fg_lb_backend *b,
			    enum fg_backend_counter c, uint64_t v)
{
	be_row(w, lb, b)[c] += v;
}

/* Applies a fg_frame result back to its mbuf: @p f was made of the mbuf's
 * one segment (burst_sort linearizes), its headroom the mbuf's data_off. */
static inline void frame_commit(struct rte_mbuf *m, const struct fg_frame *f,
				int len)
{
	m->data_off = (uint16_t)f->headroom;
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
static void too_big(struct fg_worker *w, struct fg_burst_out *o, struct rte_mbuf *m,
		    const struct fg_pkt *p, uint32_t mtu, enum fg_drop why,
		    uint64_t now)
{
	if (p->kind != FG_PK_FLOW || (p->family == CT_V4 && !(p->flags & FG_PF_DF)) ||
	    !gen_budget(w, now)) {
		fg_worker_drop(w, o, m, why);
		return;
	}
	struct fg_frame f = {rte_pktmbuf_mtod(m, uint8_t *), m->data_len,
			     rte_pktmbuf_headroom(m), rte_pktmbuf_tailroom(m)};
	int len = fg_xlate_icmp_too_big(&f, p, mtu, w->dp->ports[m->port].mac.addr_bytes);

	if (len < 0) {
		fg_worker_drop(w, o, m, why);
		return;
	}
	fg_worker_count_drop(w, why);
	frame_commit(m, &f, len);
	w->cc[FG_CC_icmp_too_big_sent]++;
	fg_worker_tx(w, m->port, m);
}

/*
 * A new flow for a service with no usable backend: counted as no_backend,
 * and (within the rate limit) the client is told at once instead of
 * waiting for its connect timeout: a TCP RST, or ICMP port unreachable
 * for UDP, from the VIP, out of the port the packet came in on.
 */
static void refuse(struct fg_worker *w, struct fg_burst_out *o, struct rte_mbuf *m,
		   const struct fg_pkt *p, uint64_t now)
{
	bool tcp = p->proto == IPPROTO_TCP;

	if (p->kind != FG_PK_FLOW || (tcp && (p->tcp_flags & CT_TCP_RST)) ||
	    (!tcp && p->proto != IPPROTO_UDP) || !gen_budget(w, now)) {
		fg_worker_drop(w, o, m, FG_DROP_no_backend);
		return;
	}
	struct fg_frame f = {rte_pktmbuf_mtod(m, uint8_t *), m->data_len,
			     rte_pktmbuf_headroom(m), rte_pktmbuf_tailroom(m)};
	const uint8_t *mac = w->dp->ports[m->port].mac.addr_bytes;
	int len = tcp ? fg_xlate_tcp_rst(&f, p, mac) : fg_xlate_icmp_unreach(&f, p, mac);

	if (len < 0) {
		fg_worker_drop(w, o, m, FG_DROP_no_backend);
		return;
	}
	fg_worker_count_drop(w, FG_DROP_no_backend);
	frame_commit(m, &f, len);
	w->cc[tcp ? FG_CC_no_backend_rst : FG_CC_no_backend_unreach]++;
	fg_worker_tx(w, m->port, m);
}

/*
 * A TCP segment (not a RST) for a NAT service with no flow: the flow was
 * lost (a restart, another node, an expiry) or never was.  Counted as
 * nat_not_syn and, within the rate limit, answered with the RST that
 * makes the client's TCP give up at once (RFC 793 reset generation, from
 * the VIP:port; fg_xlate_tcp_rst) instead of retransmitting into silence
 * until its own timeout.
 */
static void nat_reset(struct fg_worker *w, struct fg_burst_out *o, struct rte_mbuf *m,
		      const struct fg_pkt *p, uint64_t now)
{
	if (p->kind != FG_PK_FLOW || (p->tcp_flags & CT_TCP_RST) || !gen_budget(w, now)) {
		fg_worker_drop(w, o, m, FG_DROP_nat_not_syn);
		return;
	}
	struct fg_frame f = {rte_pktmbuf_mtod(m, uint8_t *), m->data_len,
			     rte_pktmbuf_headroom(m), rte_pktmbuf_tailroom(m)};
	int len = fg_xlate_tcp_rst(&f, p, w->dp->ports[m->port].mac.addr_bytes);

	if (len < 0) {
		fg_worker_drop(w, o, m, FG_DROP_nat_not_syn);
		return;
	}
	fg_worker_count_drop(w, FG_DROP_nat_not_syn);
	frame_commit(m, &f, len);
	w->dc[FG_DC_nat_rst_sent]++;
	fg_worker_tx(w, m->port, m);
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

/* Whether --second-chance weighs this service's packets at all (GUE, and
 * a previous Maglev table to consult). */
static inline bool second_chance_on(const struct fg_worker *w,
				    const struct fg_lb_service *s)
{
	return w->dp->second_chance && s->prev_maglev != NULL &&
	       s->mode == FG_MODE_DSR_GUE;
}

/* --second-chance: a TCP packet without SYN of a flow this node picked up
 * mid-stream (no entry, or CT_F_MIDSTREAM) may belong to the backend that
 * the service's previous Maglev table chose (the flow began on another
 * node before the backend set changed).  Returns that backend when it
 * differs (to be named in the GUE header: the chosen backend forwards the
 * packet there once if it holds no socket for it), else NULL. */
static inline const struct fg_lb_backend *
second_chance(struct fg_worker *w, const struct fg_pkt *p,
	      const struct ct_entry *ce, const struct fg_lb_service *s,
	      const struct fg_lb_backend *b)
{
	const struct fg_lb_backend *pb;
	uint32_t sig, pid;
	uint8_t proto = p->family == CT_V4 ? p->key.k4.proto : p->key.k6.proto;

	if (p->kind != FG_PK_FLOW || proto != IPPROTO_TCP ||
	    (p->tcp_flags & CT_TCP_SYN) ||
	    (ce != NULL && !(ce->flags & CT_F_MIDSTREAM)))
		return NULL;
	sig = ct_key_sig(&p->key, p->family == CT_V4 ? sizeof(struct ct_key4) :
			 sizeof(struct ct_key6));
	pid = s->prev_maglev[sig % s->prev_size];
	if (pid == UINT32_MAX || pid == b->id)
		return NULL;
	pb = fg_lb_backend_get(s, pid);
	if (pb == NULL || pb->addr.family != b->addr.family)
		return NULL;
	w->dc[FG_DC_second_chance]++;
	return pb;
}

/* Where (service @p sid, backend @p bid) lives in the forwarding cache
 * (direct-mapped), and whether that slot holds it in table @p lb. */
static inline struct fg_fwd_slot *fwd_slot_of(struct fg_worker *w,
					      uint16_t sid, uint32_t bid)
{
	uint32_t h = ((uint32_t)sid * 0x9E3779B1u ^ bid) * 0x85EBCA6Bu;

	return &w->fwd[h >> 24 & (FG_FWD_SLOTS - 1)];
}

static inline bool fwd_slot_holds(const struct fg_fwd_slot *c, uint64_t lb_gen,
				  uint16_t sid, uint32_t bid)
{
	return c->lb_gen == lb_gen && c->service == sid && c->backend == bid;
}

/* The forwarding cache slot of (service @p sid, backend @p bid) in this
 * table, filled on a miss; NULL when the service or the backend is gone
 * (the caller's slow path counts and decides).  fg_worker_private.h. */
static inline struct fg_fwd_slot *fwd_slot(struct fg_worker *w,
					   const struct fg_lb_table *lb,
					   uint16_t sid, uint32_t bid)
{
	struct fg_fwd_slot *c = fwd_slot_of(w, sid, bid);
	const struct fg_lb_service *s;
	const struct fg_lb_backend *b;
	uint16_t i;

	if (likely(fwd_slot_holds(c, lb->generation, sid, bid)))
		return c;
	i = lb->svc_by_id[sid];
	if (i == 0)
		return NULL;
	s = &lb->services[i - 1];
	b = fg_lb_backend_get(s, bid);
	if (b == NULL || b->gone)
		return NULL;
	c->lb_gen = lb->generation;
	c->nt_gen = 0;
	c->service = sid;
	c->backend = bid;
	c->s = s;
	c->b = b;
	c->svc_ctr = svc_row(w, lb, s);
	c->be_ctr = be_row(w, lb, b);
	c->direct = !second_chance_on(w, s);
	c->nat = s->mode == FG_MODE_NAT;
	c->lc = s->sched == FG_SCHED_LC;
	return c;
}

/* The outer headers towards @p b (and @p prev, second chance) and their
 * egress port.  False when the next hop is unknown (solicited). */
static bool dsr_build(struct fg_worker *w, const struct fg_neigh_table *nt,
		      const struct fg_lb_service *s, const struct fg_lb_backend *b,
		      const struct fg_lb_backend *prev, struct fg_encap_tmpl *t,
		      uint16_t *port, uint64_t now)
{
	const struct rte_ether_addr *mac;
	struct fg_encap e;

	if (unlikely(!fg_neigh_next_hop(w, nt, b->addr.family, b->addr.bytes, port,
					&mac, now)))
		return false;
	const struct fg_port *pt = &w->dp->ports[*port];

	e.family = ct_family_of_af(b->addr.family);
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
	if (prev != NULL) {
		e.flags |= FG_ENCAP_GUE_PREV;
		memcpy(&e.prev, prev->addr.bytes, 16);
	}
	return fg_xlate_encap_build(t, &e, s->mode == FG_MODE_DSR_GUE) == 0;
}

/* GUE's flow hash of @p m (the UDP source port's entropy). */
static inline uint32_t dsr_hash(struct rte_mbuf *m, const struct fg_pkt *p)
{
	const struct fg_mbuf_priv *pr = fg_mbuf_priv(m);

	return pr->parsed == FG_PARSED_GPU ? pr->gpu_rss : fg_rss_hash(p);
}

/* A packet the outer headers @p t do not fit (fg_xlate error @p rc): a
 * packet too big is answered, within the rate limit; others dropped. */
static void dsr_refuse(struct fg_worker *w, struct fg_burst_out *o,
		       struct rte_mbuf *m, const struct fg_pkt *p,
		       const struct fg_encap_tmpl *t, int rc, uint64_t now)
{
	uint32_t over = (uint32_t)t->len - t->l2_len;

	if (rc == -EMSGSIZE && t->mtu > over)
		too_big(w, o, m, p, t->mtu - over, FG_DROP_encap_too_big, now);
	else
		fg_worker_drop(w, o, m, xlate_err(rc));
}

/* The end of a DSR send: the frame @p f that the rewrite made, of length
 * @p len (or its error), out of @p port. */
static __rte_always_inline bool
dsr_commit(struct fg_worker *w, struct fg_burst_out *o, struct rte_mbuf *m,
	   const struct fg_pkt *p, const struct fg_encap_tmpl *t,
	   const struct fg_frame *f, int len, uint16_t port, uint64_t now)
{
	if (unlikely(len < 0)) {
		dsr_refuse(w, o, m, p, t, len, now);
		return false;
	}
	frame_commit(m, f, len);
	fg_worker_tx(w, port, m);
	return true;
}

/* dsr_send() for what it does not inline: an IPv6 inner or outer header. */
static bool dsr_send_other(struct fg_worker *w, struct fg_burst_out *o,
			   struct rte_mbuf *m, const struct fg_pkt *p,
			   const struct fg_encap_tmpl *t, uint16_t port,
			   uint64_t now)
{
	struct fg_frame f = {rte_pktmbuf_mtod(m, uint8_t *), m->data_len,
			     rte_pktmbuf_headroom(m), rte_pktmbuf_tailroom(m)};
	int len = fg_xlate_encap_apply(&f, p, t, t->gue ? dsr_hash(m, p) : 0);

	return dsr_commit(w, o, m, p, t, &f, len, port, now);
}

/* DSR: the outer headers @p t in front of the packet, out of @p port.
 * IPv4 in an IPv4 outer header inline, as most are: the inner family a
 * constant, the frame in registers (the other cases and the errors out of
 * line). */
static __rte_always_inline bool
dsr_send(struct fg_worker *w, struct fg_burst_out *o, struct rte_mbuf *m,
	 const struct fg_pkt *p, const struct fg_encap_tmpl *t, uint16_t port,
	 uint64_t now)
{
	if (unlikely(t->family != CT_V4 || p->family != CT_V4))
		return dsr_send_other(w, o, m, p, t, port, now);

	/* no tailroom: an IPv4 outer header only drops the padding */
	struct fg_frame f = {rte_pktmbuf_mtod(m, uint8_t *), m->data_len,
			     rte_pktmbuf_headroom(m), 0};
	int len = fg_xlate_encap4_apply(&f, p, t, t->gue ? dsr_hash(m, p) : 0);

	return dsr_commit(w, o, m, p, t, &f, len, port, now);
}

/* DSR: encapsulate towards the backend, with the headers of its
 * forwarding cache slot @p c when there is one.  Returns true when sent. */
static bool send_dsr(struct fg_worker *w, const struct fg_neigh_table *nt,
		     struct fg_burst_out *o, struct rte_mbuf *m,
		     const struct fg_pkt *p, const struct ct_entry *ce,
		     const struct fg_lb_service *s, const struct fg_lb_backend *b,
		     struct fg_fwd_slot *c, uint64_t now)
{
	const struct fg_lb_backend *prev = NULL;
	const struct fg_encap_tmpl *t;
	struct fg_encap_tmpl local;
	uint16_t port;

	if (unlikely(second_chance_on(w, s)))
		prev = second_chance(w, p, ce, s, b);
	if (likely(c != NULL && prev == NULL && nt != NULL)) {
		/* the slot's headers, built on its first packet of this
		 * neighbour table */
		if (unlikely(c->nt_gen != nt->gen)) {
			c->nt_gen = 0;
			if (!dsr_build(w, nt, s, b, NULL, &c->t, &c->port, now)) {
				fg_worker_drop(w, o, m, FG_DROP_no_neighbor);
				return false;
			}
			c->nt_gen = nt->gen;
		}
		t = &c->t;
		port = c->port;
	} else {
		/* untracked, second chance or no neighbour table: one-off */
		if (unlikely(!dsr_build(w, nt, s, b, prev, &local, &port, now))) {
			fg_worker_drop(w, o, m, FG_DROP_no_neighbor);
			return false;
		}
		t = &local;
	}
	return dsr_send(w, o, m, p, t, port, now);
}

/* NAT's hit template towards @p b out of @p pt to next hop @p mac
 * (fg_flow_hit's nat4_send); not filled for an IPv6 backend. */
static void nat4_fill(struct fg_fwd_nat4 *n, const struct fg_lb_backend *b,
		      const struct fg_port *pt, const struct rte_ether_addr *mac)
{
	n->ok = b->addr.family == AF_INET;
	if (!n->ok)
		return;
	n->mtu = pt->mtu ? pt->mtu : 0xFFFF;
	n->dport = b->port_be;
	memcpy(&n->daddr, b->addr.bytes, 4);
	fg_xlate_eth(n->eth, pt->mac.addr_bytes, mac->addr_bytes);
}

/* NAT: rewrite the packet's tuple to @p to, fix L2, send towards @p dst.
 * With @p inner, the packet is an ICMP error about a NAT flow (path-MTU
 * discovery through the balancer): @p to gives the outer addresses and
 * @p inner the quoted packet's tuple, in its own direction. */
static bool send_nat(struct fg_worker *w, const struct fg_neigh_table *nt,
		     struct fg_burst_out *o, struct rte_mbuf *m,
		     const struct fg_pkt *p, const void *to, const void *inner,
		     uint8_t af, const uint8_t *dst, struct fg_fwd_slot *c,
		     uint64_t now)
{
	const struct rte_ether_addr *mac;
	uint16_t port;
	uint8_t *d = rte_pktmbuf_mtod(m, uint8_t *);
	int rc;

	if (likely(c != NULL && nt != NULL && c->nt_gen == nt->gen)) {
		port = c->port;
		mac = &c->mac;
	} else if (unlikely(!fg_neigh_next_hop(w, nt, af, dst, &port, &mac, now))) {
		fg_worker_drop(w, o, m, FG_DROP_no_neighbor);
		return false;
	} else if (c != NULL && nt != NULL) {
		c->port = port;
		c->mac = *mac;
		nat4_fill(&c->n4, c->b, &w->dp->ports[port], mac);
		c->nt_gen = nt->gen;
	}
	if (unlikely(p->l3_len > w->dp->ports[port].mtu && w->dp->ports[port].mtu)) {
		/* NAT does not fragment: tell the sender, as DSR does */
		too_big(w, o, m, p, w->dp->ports[port].mtu, FG_DROP_mtu_exceeded, now);
		return false;
	}
	struct fg_frame f = {d, m->data_len, rte_pktmbuf_headroom(m),
			     rte_pktmbuf_tailroom(m)};

	if (inner == NULL && fg_xlate_nat4_fits(p)) {
		/* an IPv4 TCP/UDP packet inline, as most are, its TTL with
		 * the addresses */
		rc = fg_xlate_nat4_apply(&f, p, to, 1);
		if (unlikely(rc < 0)) {
			fg_worker_drop(w, o, m, xlate_err(rc));
			return false;
		}
	} else {
		rc = fg_xlate_ttl_dec(d, p);
		if (unlikely(rc < 0)) {
			fg_worker_drop(w, o, m, xlate_err(rc));
			return false;
		}
		rc = inner == NULL ? fg_xlate_nat(&f, p, to) :
		     fg_xlate_nat_icmp_err(&f, p, to, inner);
		if (unlikely(rc < 0)) {
			fg_worker_drop(w, o, m, inner ? FG_DROP_icmp_unrelated :
					 xlate_err(rc));
			return false;
		}
	}
	fg_xlate_eth(d, w->dp->ports[port].mac.addr_bytes, mac->addr_bytes);
	fg_worker_tx(w, port, m);
	return true;
}

/* Builds the request-direction NAT target: local:nat_port -> backend. */
static void nat_fwd_key(struct fg_worker *w, const struct fg_pkt *p,
			const struct ct_entry *e, const struct fg_lb_backend *b,
			union ct_key *to)
{
	const struct fg_addr *local = &w->dp->locals[e->nat_addr];

	ct_key_make(to, p->family, local->bytes, b->addr.bytes, e->nat_port,
		    b->port_be, ct_key_proto(&p->key, p->family));
}

/*
 * Whether an ICMP error about a NAT flow may be translated and passed on
 * (docs/DESIGN.md, "ICMP errors about NAT flows"): it comes from the
 * endpoint its quoted packet was sent to (the key's source: the backend
 * for an error about local:P -> backend, the client for one about VIP ->
 * client), or it is a path-MTU message (IPv4 frag-needed, ICMPv6 packet
 * too big) from any router, whose quoted TCP sequence number lies in the
 * window of the direction that sent it (@p sender, its entry).  Anything
 * else would let anyone who guesses a tuple reset or shrink a client's
 * connection.
 */
static bool nat_icmp_err_ok(struct fg_worker *w, const struct rte_mbuf *m,
			    const struct fg_pkt *p, const struct ct_entry *sender)
{
	const uint8_t *d = rte_pktmbuf_mtod(m, const uint8_t *);
	bool v6 = p->family == CT_V6;
	const uint8_t *ic = d + p->l4_off;
	uint16_t il4;
	uint32_t seq;

	if (memcmp(d + p->l3_off + (v6 ? 8 : 12), ct_key_saddr(&p->key, p->family),
		   v6 ? 16 : 4) == 0)
		return true;
	if (v6 ? ic[0] != 2 : (ic[0] != 3 || ic[1] != 4))
		return false;
	if (ct_key_proto(&p->key, p->family) != IPPROTO_TCP)
		return true;   /* no sequence number to prove anything */
	if (sender == NULL || fg_pkt_icmp_inner(d, m->data_len, p, &il4) < 0 ||
	    il4 + 8u > m->data_len)
		return false;
	memcpy(&seq, d + il4 + 4, 4);
	return ct_tcp_seq_plausible(w->ct, sender, rte_be_to_cpu_32(seq));
}

/* A packet of the reply direction of a NAT flow: backend -> local.  The
 * forward entry's key (client -> VIP) gives the tuple to restore. */
void fg_flow_reply(struct fg_worker *w, const struct fg_lb_table *lb,
		       const struct fg_neigh_table *nt, struct fg_burst_out *o,
		       struct rte_mbuf *m, const struct fg_pkt *p,
		       struct ct_entry *e, uint64_t now)
{
	union ct_key to;
	const void *fk = ct_key_at(w->ct, p->family, e->peer);
	const uint8_t *client;

	if (unlikely(p->kind != FG_PK_FLOW && p->kind != FG_PK_ICMP_ERR)) {
		/* later fragments towards the local address carry no ports */
		fg_worker_drop(w, o, m, FG_DROP_reply_untracked);
		return;
	}
	if (unlikely(p->kind == FG_PK_ICMP_ERR)) {
		/* an error about local:P -> backend (e.g. frag-needed from a
		 * router on the backend side): for the client it is about
		 * client:cp -> VIP:vp, sent from the VIP */
		union ct_key outer;

		if (unlikely(!nat_icmp_err_ok(w, m, p, ct_entry_at(w->ct, p->family,
								    e->peer)))) {
			fg_worker_drop(w, o, m, FG_DROP_icmp_err_foreign);
			return;
		}
		/* only the addresses of the outer key count: from the VIP
		 * to the client */
		ct_key_reverse(&outer, p->family, fk);
		client = ct_key_saddr(fk, p->family);
		w->cc[FG_CC_icmp_err_fwd]++;
		send_nat(w, nt, o, m, p, &outer, fk, ct_family_af(p->family), client,
			 NULL, now);
		return;
	}
	struct ct_seg g;

	fg_pkt_tcp_seg(rte_pktmbuf_mtod(m, const uint8_t *), p, &g);
	ct_update_seg(w->ct, e, true, &g, p->l3_len, now);
	if (unlikely(g.oow == CT_OOW_DROP)) {
		fg_worker_drop(w, o, m, FG_DROP_tcp_rst_oow);
		return;
	}
	ct_key_reverse(&to, p->family, fk);
	client = ct_key_saddr(fk, p->family);
	uint16_t sid = lb->svc_by_id[e->service];

	if (likely(sid)) {
		const struct fg_lb_service *s = &lb->services[sid - 1];
		const struct fg_lb_backend *b = fg_lb_backend_find(s, e->backend);

		if (b) {
			be_count(w, lb, b, FG_BC_reply_packets, 1);
			be_count(w, lb, b, FG_BC_reply_bytes, p->l3_len);
		}
	}
	send_nat(w, nt, o, m, p, &to, NULL, ct_family_af(p->family), client, NULL, now);
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

/* The backend row a flow's connection counts go to (conns_*): its
 * service's backend by id, tombstones included; NULL for fragment-follow
 * entries (not flows) and flows of a service no longer configured. */
static inline const struct fg_lb_backend *
conns_backend(const struct fg_lb_table *lb, const struct ct_entry *e)
{
	if (lb == NULL || (e->flags & CT_F_FRAG))
		return NULL;
	uint16_t sid = lb->svc_by_id[e->service];

	return sid ? fg_lb_backend_get(&lb->services[sid - 1], e->backend) : NULL;
}

/* flows watch: posts an event for the control thread; never blocks (a full
 * ring drops the event and counts it). */
static void watch_post(struct fg_worker *w, uint8_t type, uint8_t fam,
		       const void *key, const struct ct_entry *e, uint8_t reason,
		       uint8_t prev_state, uint64_t now)
{
	struct fg_flow_ev ev;

	ev.type = type;
	ev.family = fam;
	ev.reason = reason;
	ev.prev_state = prev_state;
	ev.tsc = now;
	ev.life = ct_entry_life(w->ct, e, now);
	memset(ev.pad, 0, sizeof(ev.pad));
	memcpy(&ev.key, key, fam == CT_V4 ? sizeof(struct ct_key4) :
					   sizeof(struct ct_key6));
	ev.e = *e;
	if (rte_ring_sp_enqueue_elem(w->ev_ring, &ev, sizeof(ev)) != 0)
		w->dc[FG_DC_watch_dropped]++;
}

/* A new flow for its watchers and the sync peers. */
static void new_flow_tell(struct fg_worker *w, uint8_t fam, const void *key,
			  const struct ct_entry *e, const struct fg_lb_service *s,
			  const struct fg_lb_backend *b, uint64_t now)
{
	if (w->watch)
		watch_post(w, FG_EV_NEW, fam, key, e, 0, 0, now);
	if (w->sync_out != NULL)
		fg_sync_note(w, FG_SYNC_OP_FLOW, fam, key, e, s, b, now);
}

/* conntrack destroy hook (owner lcore, inside ct_expire / ct_lookup /
 * ct_insert's early drop / mailbox deletes): a flow that leaves the table
 * before it closed gives its least-connections slot back, and watchers
 * get a DESTROY event. */
void fg_flow_on_destroy(void *arg, enum ct_family fam, const void *key,
			    const struct ct_entry *e, enum ct_destroy_reason why)
{
	struct fg_worker *w = arg;
	const struct fg_lb_table *lb = __atomic_load_n(&w->dp->lb, __ATOMIC_ACQUIRE);
	const struct fg_lb_backend *cb = conns_backend(lb, e);

	if (cb != NULL) {
		be_count(w, lb, cb, FG_BC_conns_closed, 1);
		if (e->state == CT_ST_ESTABLISHED)
			be_count(w, lb, cb, FG_BC_conns_unestablished, 1);
	}
	if (lb != NULL && !state_closed(e->state) &&
	    lb->generation == w->lc_generation) {
		uint16_t sid = lb->svc_by_id[e->service];
		const struct fg_lb_service *s = sid ? &lb->services[sid - 1] : NULL;

		if (s != NULL && s->sched == FG_SCHED_LC) {
			const struct fg_lb_backend *b = fg_lb_backend_find(s, e->backend);

			/* closed flows were already given back by fg_flow_forward */
			if (b != NULL && b->stat_idx < w->lc_size &&
			    w->lc_active[b->stat_idx] > 0)
				w->lc_active[b->stat_idx]--;
		}
	}
	if (unlikely(w->watch))
		watch_post(w, FG_EV_DESTROY, (uint8_t)fam, key, e, (uint8_t)why, 0,
			   rte_rdtsc());
	/* sync: an operator's delete only (expiry and eviction are each
	 * node's own: fg_sync.c) */
	if (unlikely(w->sync_out != NULL) && why == CT_DESTROY_DELETED && cb != NULL)
		fg_sync_note(w, FG_SYNC_OP_CLOSE, (uint8_t)fam, key, e,
			     &lb->services[lb->svc_by_id[e->service] - 1], cb, rte_rdtsc());
}

/* conntrack state hook (owner lcore, inside ct_update, on a change only):
 * keeps the backend's established count (ipvsadm's ActiveConn = flows in
 * ESTABLISHED; InActConn = the backend's other flows) and gives watchers
 * an UPDATE event. */
void fg_flow_on_state(void *arg, enum ct_family fam, const void *key,
		      const struct ct_entry *e, enum ct_state old, uint64_t now)
{
	struct fg_worker *w = arg;
	const struct fg_lb_table *lb = __atomic_load_n(&w->dp->lb, __ATOMIC_ACQUIRE);
	const struct fg_lb_backend *cb = conns_backend(lb, e);

	if (cb != NULL) {
		if (old == CT_ST_ESTABLISHED)
			be_count(w, lb, cb, FG_BC_conns_unestablished, 1);
		if (e->state == CT_ST_ESTABLISHED)
			be_count(w, lb, cb, FG_BC_conns_established, 1);
	}
	if (unlikely(w->watch))
		watch_post(w, FG_EV_UPDATE, (uint8_t)fam, key, e, 0, (uint8_t)old, now);
	if (unlikely(w->sync_out != NULL) && cb != NULL)
		fg_sync_note(w, FG_SYNC_OP_FLOW, (uint8_t)fam, key, e,
			     &lb->services[lb->svc_by_id[e->service] - 1], cb, now);
}

/* A first fragment of a DSR flow: later fragments carry no ports, so they
 * look up their datagram's key, (source, destination, protocol, IP ID) as
 * the kernel's reassembly keys it (fg_pkt_frag_key(): the ID in the
 * ports).  Insert or refresh that entry with the flow's service and
 * backend (state OTHER: 30 s by default, as Linux's ipfrag_time).  Each
 * datagram has its own entry: concurrent datagrams of one client follow
 * their own first fragments, and a first fragment spoofed from the
 * client's address re-points only a datagram whose ID it guessed (one in
 * 65,536 for IPv4).  An ICMP echo flow whose id equals the IP ID holds the
 * same key: that flow is left alone and the later fragments follow it. */
static void frag_follow(struct fg_worker *w, struct rte_mbuf *m,
			const struct fg_pkt *p, const struct fg_lb_service *s,
			const struct fg_lb_backend *b, uint64_t now)
{
	struct fg_pkt f;
	struct ct_entry *e;
	uint32_t pos, sig;
	int err = 0;

	if (unlikely(fg_pkt_frag_key(rte_pktmbuf_mtod(m, const uint8_t *),
				     m->data_len, p, &f) < 0)) {
		w->dc[FG_DC_frag_follow_fail]++; /* the parser said FRAG */
		return;
	}
	sig = fg_pkt_sig(&f);
	e = ct_lookup(w->ct, f.family, &f.key, sig, now, &pos);
	if (e == NULL) {
		e = ct_insert(w->ct, f.family, &f.key, sig,
			      ct_key_proto(&f.key, f.family), CT_ST_OTHER,
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

/* A request-direction packet's counters (service row @p sc, backend row
 * @p bc) and, for a tracked flow's TCP/UDP packet, its conntrack state; a
 * flow that closes leaves least-connections' count (@p lc_b: the backend
 * when its service schedules by least connections, else NULL), and a SYN
 * that reopens a closing flow's tuple counts as a new flow.  True when
 * the packet must be dropped (an RST outside a NAT flow's window). */
static __rte_always_inline bool
flow_account(struct fg_worker *w, uint64_t *sc, uint64_t *bc,
	     const struct fg_lb_backend *lc_b, struct ct_entry *e,
	     const struct fg_pkt *p, struct rte_mbuf *m, uint64_t now)
{
	if (e != NULL && p->kind == FG_PK_FLOW) {
		const uint8_t *frame = rte_pktmbuf_mtod(m, const uint8_t *);
		uint8_t before = e->state, after = before;

		if (unlikely(!ct_touch_fast(e, p->tcp_flags, frame + p->l4_off, p->l3_len,
					    now))) {
			struct ct_seg g;

			fg_pkt_tcp_seg(frame, p, &g);
			after = ct_update_seg(w->ct, e, false, &g, p->l3_len, now);
			if (unlikely(g.oow == CT_OOW_DROP))
				return true; /* counted by conntrack: tcp_oow */
		}
		if (unlikely(after != before)) {
			if (lc_b != NULL && !state_closed(before) && state_closed(after) &&
			    lc_b->stat_idx < w->lc_size && w->lc_active[lc_b->stat_idx] > 0)
				w->lc_active[lc_b->stat_idx]--;
			if (after == CT_ST_SYN_SENT && before != CT_ST_SYN_SENT) {
				/* the client reopened its tuple: a new flow,
				 * on the backend it had (still usable:
				 * fg_flow_syn_reopens) */
				w->cc[FG_CC_new_flows]++;
				sc[FG_SC_new_flows]++;
				bc[FG_BC_new_flows]++;
				if (lc_b != NULL && state_closed(before) &&
				    lc_b->stat_idx < w->lc_size)
					w->lc_active[lc_b->stat_idx]++;
			}
		}
	}
	sc[FG_SC_packets]++;
	sc[FG_SC_bytes] += p->l3_len;
	bc[FG_BC_packets]++;
	bc[FG_BC_bytes] += p->l3_len;
	return false;
}

/* Forwards a packet of a tracked (or untracked: e == NULL) request-direction
 * flow to its backend. */
void fg_flow_forward(struct fg_worker *w, const struct fg_lb_table *lb,
			 const struct fg_neigh_table *nt, struct fg_burst_out *o,
			 struct rte_mbuf *m, const struct fg_pkt *p,
			 struct ct_entry *e, const struct fg_lb_service *s,
			 const struct fg_lb_backend *b, uint64_t now)
{
	struct fg_fwd_slot *c = fwd_slot(w, lb, s ? (uint16_t)s->id : e->service,
					 b ? b->id : e->backend);

	if (likely(c != NULL)) {
		s = c->s;
		b = c->b;
	}
	if (s == NULL) {
		uint16_t sid = lb->svc_by_id[e->service];

		if (unlikely(sid == 0)) {
			w->dc[FG_DC_service_gone]++;
			fg_worker_drop(w, o, m, FG_DROP_unknown_vip);
			return;
		}
		s = &lb->services[sid - 1];
	}
	if (b == NULL) {
		b = fg_lb_backend_get(s, e->backend);
		if (unlikely(b == NULL || (b->gone && s->on_fail == FG_FAIL_RESET))) {
			/* NULL: a tombstone dropped at FG_TOMBSTONE_MAX (fg_lb.c) */
			w->dc[b == NULL ? FG_DC_tombstone_evicted :
					  FG_DC_backend_gone_drop]++;
			fg_worker_drop(w, o, m, FG_DROP_no_backend);
			svc_count(w, lb, s, FG_SC_drops, 1);
			return;
		}
		if (unlikely(b->gone))
			w->dc[FG_DC_backend_gone_fwd]++;
	}
	if (unlikely(p->kind == FG_PK_ICMP_ERR && s->mode == FG_MODE_NAT && e != NULL &&
		     !nat_icmp_err_ok(w, m, p, e->peer == CT_NONE ? NULL :
				      ct_entry_at(w->ct, p->family, e->peer)))) {
		/* about VIP -> client: the reply direction sent it */
		fg_worker_drop(w, o, m, FG_DROP_icmp_err_foreign);
		svc_count(w, lb, s, FG_SC_drops, 1);
		return;
	}
	if (unlikely(flow_account(w, svc_row(w, lb, s), be_row(w, lb, b),
				  s->sched == FG_SCHED_LC ? b : NULL, e, p, m, now))) {
		fg_worker_drop(w, o, m, FG_DROP_tcp_rst_oow);
		return;
	}
	if (p->kind == FG_PK_ICMP_ERR)
		w->cc[FG_CC_icmp_err_fwd]++;
	else if (p->kind == FG_PK_FRAG_LATER)
		w->cc[FG_CC_frag_later]++;

	if (s->mode != FG_MODE_NAT) {
		if (unlikely(p->flags & FG_PF_FRAG) && p->kind == FG_PK_FLOW)
			frag_follow(w, m, p, s, b, now);
		send_dsr(w, nt, o, m, p, e, s, b, c, now);
		return;
	}
	if (unlikely(e == NULL || p->kind == FG_PK_FRAG_LATER)) {
		/* NAT needs the flow's local port; later fragments carry
		 * none */
		fg_worker_drop(w, o, m, e == NULL ? FG_DROP_ct_full : FG_DROP_reply_untracked);
		svc_count(w, lb, s, FG_SC_drops, 1);
		return;
	}
	union ct_key to;

	nat_fwd_key(w, p, e, b, &to);
	if (unlikely(p->kind == FG_PK_ICMP_ERR)) {
		/* an error about VIP:vp -> client:cp (e.g. frag-needed from
		 * the client's side): for the backend it is about its own
		 * backend:bp -> local:P, sent from the local address */
		union ct_key inner;

		ct_key_reverse(&inner, p->family, &to);
		send_nat(w, nt, o, m, p, &to, &inner, b->addr.family,
			 b->addr.bytes, c, now);
		return;
	}
	send_nat(w, nt, o, m, p, &to, NULL, b->addr.family, b->addr.bytes, c, now);
}

/* NAT of an IPv4 TCP/UDP hit that fits its port's MTU, with the slot's
 * template: send_nat()'s common case in one pass, the TTL in the same
 * header checksum update. */
static __rte_always_inline void nat4_send(struct fg_worker *w, struct fg_burst_out *o,
					  struct rte_mbuf *m, const struct fg_pkt *p,
					  const struct ct_entry *e,
					  const struct fg_fwd_slot *c)
{
	struct fg_frame f = {rte_pktmbuf_mtod(m, uint8_t *), m->data_len, 0, 0};
	struct ct_key4 to;
	int rc;

	memcpy(&to.saddr, w->dp->locals[e->nat_addr].bytes, 4);
	to.daddr = c->n4.daddr;
	to.sport = e->nat_port;
	to.dport = c->n4.dport;
	to.proto = p->proto;
	rc = fg_xlate_nat4_apply(&f, p, &to, 1);
	if (unlikely(rc < 0)) {
		fg_worker_drop(w, o, m, xlate_err(rc));
		return;
	}
	memcpy(f.data, c->n4.eth, sizeof(c->n4.eth));
	fg_worker_tx(w, c->port, m);
}

/*
 * A hit of a request-direction entry.  The common case goes through in one
 * pass: a whole TCP/UDP packet (no fragment, no ICMP error) whose
 * forwarding slot holds its service and backend in this table, with the
 * next hop (and, DSR, the headers) built for this neighbour table, and no
 * second chance to weigh.  Anything else, and the first packet that fills
 * the slot, takes fg_flow_forward, which decides the common case the same
 * way in more steps: both share the accounting and the send.  Inlined
 * into the burst loop by LTO, with both sends: as a call, or with the NAT
 * send a call of its own, a DSR hit ran 13 and a NAT hit 26 more
 * instructions (scripts/cg-ipp.sh), the loop's values spilled.
 */
__rte_always_inline bool fg_flow_hit(struct fg_worker *w, const struct fg_lb_table *lb,
		 const struct fg_neigh_table *nt, struct fg_burst_out *o,
		 struct rte_mbuf *m, const struct fg_pkt *p, struct ct_entry *e,
		 uint64_t now)
{
	struct fg_fwd_slot *c = fwd_slot_of(w, e->service, e->backend);

	/* the slot holds the flow's service and backend, built for this
	 * burst's tables (their generations read once a burst) */
	if (unlikely(!fwd_slot_holds(c, o->lb_gen, e->service, e->backend) ||
		     c->nt_gen != o->nt_gen ||
		     p->kind != FG_PK_FLOW || (p->flags & FG_PF_FRAG) || !c->direct)) {
		fg_flow_forward(w, lb, nt, o, m, p, e, NULL, NULL, now);
		return true;
	}
	if (unlikely(flow_account(w, c->svc_ctr, c->be_ctr, c->lc ? c->b : NULL, e, p,
				  m, now))) {
		fg_worker_drop(w, o, m, FG_DROP_tcp_rst_oow);
		return false;
	}
	if (!c->nat) {
		dsr_send(w, o, m, p, &c->t, c->port, now);
		return false;
	}
	if (likely(c->n4.ok && fg_xlate_nat4_fits(p) && p->l3_len <= c->n4.mtu)) {
		nat4_send(w, o, m, p, e, c);
		return false;
	}
	union ct_key to;

	nat_fwd_key(w, p, e, c->b, &to);
	send_nat(w, nt, o, m, p, &to, NULL, c->b->addr.family, c->b->addr.bytes,
		 c, now);
	return false;
}

/* NAT: the k-th local address of @p af (k taken modulo their number), so
 * flows spread over all local addresses: the reply tuple space is
 * locals x backends x 64512 ports.  A sync peer's NAT addresses
 * (local_peer) are held for a takeover only: never a new flow's; with
 * `sync { nat }`, only those addresses are. */
static int nat_local(const struct fg_dp *dp, uint8_t af, uint32_t k)
{
	uint8_t own = dp->nat_own_only ? FG_LOCAL_OWN_NAT : 0;
	unsigned int n = 0;

	for (unsigned int i = 0; i < dp->n_locals; i++)
		n += dp->locals[i].family == af && dp->local_peer[i] == own;
	if (n == 0)
		return -1;
	k %= n;
	for (unsigned int i = 0; i < dp->n_locals; i++)
		if (dp->locals[i].family == af && dp->local_peer[i] == own && k-- == 0)
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
		union ct_key rk;
		int port;

		if (tries && (tries & 7) == 0) {
			/* crowded pair: move on to the next local address */
			li = nat_local(w->dp, b->addr.family, sig + (uint32_t)tries / 8);
			local = &w->dp->locals[li];
		}

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
		ct_key_make(&rk, p->family, b->addr.bytes, local->bytes, b->port_be,
			    rte_cpu_to_be_16((uint16_t)port),
			    ct_key_proto(&p->key, p->family));
		uint32_t rsig = ct_hash_crc(&rk, p->family == CT_V4 ?
					    sizeof(rk.k4) : sizeof(rk.k6));
		uint32_t rpos;
		int err = 0;

		/* the reply entry takes these (ct_link_peer); a full table
		 * makes room by another flow than this one */
		e->nat_port = rte_cpu_to_be_16((uint16_t)port);
		e->nat_addr = (uint8_t)li;
		if (ct_insert_reply(w->ct, p->family, &rk, rsig, pos, now, &rpos,
				    &err) != NULL)
			return 0;
		if (err != -EEXIST)
			return err;
	}
	return -EADDRNOTAVAIL;
}

/* The bulk lookup of a burst runs before its misses create entries, so a
 * NAT reply (or an ICMP error about a NAT flow) right behind the packet
 * that created its flow misses.  Paths that would drop such a packet look
 * again; true when the packet was handled. */
static bool late_hit(struct fg_worker *w, const struct fg_lb_table *lb,
		     const struct fg_neigh_table *nt, struct fg_burst_out *o,
		     struct rte_mbuf *m, const struct fg_pkt *p, const void *key,
		     uint32_t sig, uint64_t now)
{
	uint32_t pos;
	struct ct_entry *e = ct_lookup(w->ct, p->family, key, sig, now, &pos);

	if (e == NULL)
		return false;
	if (e->flags & CT_F_REPLY)
		fg_flow_reply(w, lb, nt, o, m, p, e, now);
	else
		fg_flow_forward(w, lb, nt, o, m, p, e, NULL, NULL, now);
	return true;
}

/* The service the GPU matched (its index is the table's, same generation). */
static inline const struct fg_lb_service *svc_of_gpu(const struct fg_lb_table *lb,
						     const struct fg_mbuf_priv *pr)
{
	return pr->gpu_service < lb->n_services ? &lb->services[pr->gpu_service] :
						  NULL;
}

/* A new ICMP error: its key is the embedded flow reversed (client -> VIP)
 * and @p s the service of that destination.  An untracked flow of a DSR
 * service still has a Maglev answer; NAT flows are only known by their
 * entries, which an earlier packet of this burst may have created. */
static void flow_new_icmp_err(struct fg_worker *w, const struct fg_lb_table *lb,
			      const struct fg_neigh_table *nt, struct fg_burst_out *o,
			      struct rte_mbuf *m, const struct fg_pkt *p,
			      const struct fg_lb_service *s, bool gpu, uint32_t sig,
			      const void *key, uint64_t now)
{
	if (s == NULL || s->mode == FG_MODE_NAT || s->n_usable == 0) {
		bool local = fg_lb_addr_kind(lb, ct_family_af(p->family),
					     ct_key_daddr(&p->key, p->family)) &
			     FG_LB_ADDR_LOCAL;

		if ((s != NULL || local) &&
		    late_hit(w, lb, nt, o, m, p, key, sig, now))
			return;
		if (local && s == NULL)   /* about the host's own traffic */
			fg_worker_to_host(w, o, m, FG_DROP_icmp_unrelated);
		else
			fg_worker_drop(w, o, m, FG_DROP_icmp_unrelated);
		return;
	}
	const struct fg_lb_backend *b =
		&s->backends[gpu ? fg_mbuf_priv(m)->gpu_backend :
				   s->maglev[sig % s->maglev_size]];

	fg_flow_forward(w, lb, nt, o, m, p, NULL, s, b, now);
}

/* maglev-load: how the new flow was placed, per service; per backend the
 * flows that load (not the Maglev slot) sent there. */
static inline void place_count(struct fg_worker *w, const struct fg_lb_table *lb,
			       const struct fg_lb_service *s, const struct fg_lb_backend *b,
			       enum fg_place_how how)
{
	static const enum fg_service_counter c[] = {
		[FG_PLACE_MAGLEV] = FG_SC_placed_maglev,
		[FG_PLACE_LOAD] = FG_SC_placed_load,
		[FG_PLACE_STALE] = FG_SC_placed_stale,
		[FG_PLACE_SATURATED] = FG_SC_placed_saturated,
	};

	if (unlikely(how >= FG_PLACE_NONE))
		return;
	svc_count(w, lb, s, c[how], 1);
	if (how == FG_PLACE_LOAD || how == FG_PLACE_SATURATED)
		be_count(w, lb, b, FG_BC_new_flows_load, 1);
}

/* The scheduler: least-connections on this core, the flow's Maglev slot
 * (computed on the GPU when @p gpu is its result), or maglev-load
 * (pkt/fg_place.h; *how says which rule placed it).  NULL: no usable
 * backend. */
static inline const struct fg_lb_backend *pick(struct fg_worker *w,
					       const struct fg_lb_table *lb,
					       const struct fg_lb_service *s,
					       const struct fg_mbuf_priv *gpu,
					       uint32_t sig, enum fg_place_how *how)
{
	if (s->sched == FG_SCHED_MAGLEV_LOAD) {
		/* new flows only: a table for another service-table generation
		 * is not trusted (fg_place_pick with NULL: plain Maglev) */
		const struct fg_load_table *lt = __atomic_load_n(&w->dp->load,
								 __ATOMIC_ACQUIRE);
		const struct fg_load_svc *ls =
			lt != NULL && lt->lb_generation == lb->generation ?
			&lt->svc[s - lb->services] : NULL;
		uint32_t bi = s->n_usable ?
			fg_place_pick(s->maglev, s->maglev_size, sig,
				      ls != NULL ? ls->slot : NULL, ls != NULL ? ls->n : 0,
				      ls != NULL ? ls->margin_milli : 0, how) :
			UINT32_MAX;

		return bi == UINT32_MAX ? NULL : &s->backends[bi];
	}
	if (s->sched == FG_SCHED_LC) {
		if (unlikely(lb->generation != w->lc_generation)) {
			/* rows moved: counts restart with the new table */
			memset(w->lc_active, 0, w->lc_size * sizeof(uint32_t));
			w->lc_generation = lb->generation;
		}
		return pick_lc(w, s);
	}
	uint32_t bi = gpu ? gpu->gpu_backend :
		      s->n_usable ? s->maglev[sig % s->maglev_size] : UINT32_MAX;

	return bi == UINT32_MAX ? NULL : &s->backends[bi];
}

/* A new flow from one of our own addresses (a VIP, a port's local
 * address) is a spoof or a loop: as a NAT client it would take a local
 * port whose replies come back to us; to DSR it has a backend answer one
 * of our VIPs.  Dropped as src_own_addr (true).  New flows only (one
 * address-set probe): a hit's entry can only have been made here, and the
 * parser has refused martian sources and src == dst already. */
static inline bool src_own_drop(struct fg_worker *w, const struct fg_lb_table *lb,
				struct fg_burst_out *o, struct rte_mbuf *m,
				const struct fg_lb_service *s, uint8_t af,
				const uint8_t *saddr)
{
	if (likely(fg_lb_addr_kind(lb, af, saddr) == 0))
		return false;
	svc_count(w, lb, s, FG_SC_drops, 1);
	fg_worker_drop(w, o, m, FG_DROP_src_own_addr);
	return true;
}

/* A packet forwarded with no entry (ct_untracked): where Maglev alone
 * sends its tuple, so that maglev-load, whose answer follows the load
 * signals, gives way to the plain slot the flow's next packets agree on. */
static void forward_untracked(struct fg_worker *w, const struct fg_lb_table *lb,
			      const struct fg_neigh_table *nt, struct fg_burst_out *o,
			      struct rte_mbuf *m, const struct fg_pkt *p,
			      const struct fg_lb_service *s, const struct fg_lb_backend *b,
			      uint32_t sig, uint64_t now)
{
	w->cc[FG_CC_ct_untracked]++;
	if (s->sched == FG_SCHED_MAGLEV_LOAD)
		b = &s->backends[s->maglev[sig % s->maglev_size]];
	fg_flow_forward(w, lb, nt, o, m, p, NULL, s, b, now);
}

/* A packet with no tracked entry. */
void fg_flow_new(struct fg_worker *w, const struct fg_lb_table *lb,
		     const struct fg_neigh_table *nt, struct fg_burst_out *o,
		     struct rte_mbuf *m, const struct fg_pkt *p, uint32_t sig,
		     const void *key, uint64_t now)
{
	const uint8_t *daddr = ct_key_daddr(&p->key, p->family);
	const uint8_t *saddr = ct_key_saddr(&p->key, p->family);
	uint16_t dport = ct_key_dport(&p->key, p->family);
	uint8_t proto = ct_key_proto(&p->key, p->family);
	uint8_t af = ct_family_af(p->family);
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
			fg_worker_drop(w, o, m, FG_DROP_frag_later_untracked);
		return;
	}
	s = gpu ? svc_of_gpu(lb, pr) :
		  fg_lb_service_find(lb, af, daddr, dport, proto);
	if (p->kind == FG_PK_ICMP_ERR) {
		flow_new_icmp_err(w, lb, nt, o, m, p, s, gpu, sig, key, now);
		return;
	}
	if (unlikely(s == NULL)) {
		if (fg_lb_addr_kind(lb, af, daddr) & FG_LB_ADDR_LOCAL) {
			/* to a local address (a VIP's too, on another
			 * port): a NAT reply whose entry an earlier packet
			 * of this burst created, else the host's own
			 * traffic (SSH, BGP, ping, its replies) */
			if (!late_hit(w, lb, nt, o, m, p, key, sig, now))
				fg_worker_to_host(w, o, m, FG_DROP_reply_untracked);
			return;
		}
		fg_worker_drop(w, o, m, FG_DROP_unknown_vip);
		return;
	}
	if (unlikely(src_own_drop(w, lb, o, m, s, af, saddr)))
		return;
	if (unlikely(s->mode == FG_MODE_NAT && proto == IPPROTO_TCP &&
		     (p->tcp_flags & (CT_TCP_SYN | CT_TCP_ACK | CT_TCP_RST)) != CT_TCP_SYN)) {
		/* Full NAT opens a flow only on a SYN: a mid-stream packet has
		 * no local port to leave on (the flow it belonged to is gone,
		 * or never was: a spoofed ACK must not take two entries).  Its
		 * SYN may have created the flow earlier in this burst. */
		if (!late_hit(w, lb, nt, o, m, p, key, sig, now)) {
			svc_count(w, lb, s, FG_SC_drops, 1);
			nat_reset(w, o, m, p, now);
		}
		return;
	}
	enum fg_place_how placed = FG_PLACE_NONE;

	b = pick(w, lb, s, gpu ? pr : NULL, sig, &placed);
	if (unlikely(b == NULL)) {
		svc_count(w, lb, s, FG_SC_no_backend, 1);
		svc_count(w, lb, s, FG_SC_drops, 1);
		refuse(w, o, m, p, now);
		return;
	}
	if (unlikely(proto == IPPROTO_TCP && (p->tcp_flags & CT_TCP_RST))) {
		/* An RST opens nothing: with no flow to end, it goes where
		 * Maglev sends its tuple, untracked (a spoofed RST spray would
		 * otherwise take an entry a guessed port, and evict real flows
		 * still on probation: issue 34) */
		forward_untracked(w, lb, nt, o, m, p, s, b, sig, now);
		return;
	}

	uint32_t pos;
	int err = 0;
	/* a key no reply entry can hold is looked for in the flows' region
	 * only, as its lookup was (fg_worker_no_reply) */
	struct ct_entry *e = (fg_worker_no_reply(w, p) ? ct_insert_flow : ct_insert)(
		w->ct, p->family, key, sig, proto, ct_state_initial(proto, p->tcp_flags),
		false, now, &pos, &err);

	if (unlikely(e == NULL && err == -EEXIST)) {
		/* an earlier packet of this burst created it: follow that
		 * flow.  Its lookup also settles a due expiry, after which the
		 * tuple is free for this packet. */
		e = ct_lookup(w->ct, p->family, key, sig, now, &pos);
		if (e != NULL) {
			if (e->flags & CT_F_REPLY)
				fg_flow_reply(w, lb, nt, o, m, p, e, now);
			else
				fg_flow_forward(w, lb, nt, o, m, p, e, NULL, NULL, now);
			return;
		}
		e = ct_insert(w->ct, p->family, key, sig, proto,
			      ct_state_initial(proto, p->tcp_flags), false, now,
			      &pos, &err);
	}
	if (unlikely(e == NULL)) {
		if (s->mode == FG_MODE_NAT) {
			svc_count(w, lb, s, FG_SC_drops, 1);
			fg_worker_drop(w, o, m, err == -EBUSY ? FG_DROP_ct_flood : FG_DROP_ct_full);
			return;
		}
		/* DSR without state: Maglev alone sends the flow to the same
		 * backend as long as the backend set does not change (so
		 * maglev-load, whose answer follows the signals, gives way to
		 * the plain Maglev slot: the flow's next packets agree) */
		forward_untracked(w, lb, nt, o, m, p, s, b, sig, now);
		return;
	}
	e->service = (uint16_t)s->id;
	e->backend = b->id;
	/* counted before anything can delete it (NAT setup below), so every
	 * destroy hook call has its open: conns_opened - conns_closed = the
	 * backend's tracked flows */
	be_count(w, lb, b, FG_BC_conns_opened, 1);
	if (p->tcp_flags && !(p->tcp_flags & CT_TCP_SYN))
		e->flags |= CT_F_MIDSTREAM;
	if (s->mode == FG_MODE_NAT) {
		int rc = nat_setup(w, p, e, pos, b, sig, now);

		if (unlikely(rc < 0)) {
			ct_delete_pos(w->ct, p->family, pos);
			svc_count(w, lb, s, FG_SC_drops, 1);
			fg_worker_drop(w, o, m, rc == -EBUSY ? FG_DROP_ct_flood :
				      rc == -ENOSPC ? FG_DROP_ct_full : FG_DROP_nat_no_port);
			return;
		}
		if (unlikely(!has_gateway(w, af)))
			fg_neigh_resolve_client(w, nt, af, saddr, now);
	}
	w->cc[FG_CC_new_flows]++;
	svc_count(w, lb, s, FG_SC_new_flows, 1);
	be_count(w, lb, b, FG_BC_new_flows, 1);
	if (s->sched == FG_SCHED_LC && b->stat_idx < w->lc_size)
		w->lc_active[b->stat_idx]++;
	if (s->sched == FG_SCHED_MAGLEV_LOAD)
		place_count(w, lb, s, b, placed);
	if (unlikely(w->watch || w->sync_out != NULL))
		new_flow_tell(w, p->family, key, e, s, b, now);
	fg_flow_forward(w, lb, nt, o, m, p, e, s, b, now);
}
