/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Flow decisions (fg_flow.c): a packet with no entry, a hit, a NAT reply,
 * and conntrack's hooks; the `flows watch` event a worker posts.
 */
#ifndef FLOWGATE_FG_FLOW_H
#define FLOWGATE_FG_FLOW_H

#include <stdbool.h>
#include <stdint.h>

#include "ct.h"
#include "fg_lb.h"
#include "fg_pkt.h"

#ifdef __cplusplus
extern "C" {
#endif

/** A `flows watch` event, posted by a worker to its event ring (SP/SC:
 *  the worker produces, the control thread consumes). */
enum fg_flow_ev_type { FG_EV_NEW = 0, FG_EV_DESTROY = 1, FG_EV_UPDATE = 2 };
#define FG_EV_RING_SIZE 8192

struct fg_flow_ev {
	uint8_t type;           /**< enum fg_flow_ev_type */
	uint8_t family;         /**< enum ct_family */
	uint8_t reason;         /**< DESTROY: enum ct_destroy_reason */
	uint8_t prev_state;     /**< UPDATE: enum ct_state before the change */
	uint8_t pad[4];
	union {
		struct ct_key4 k4;
		struct ct_key6 k6;
	} key;                  /**< forward key (client -> VIP) */
	struct ct_entry e;      /**< forward entry at the event */
	uint64_t tsc;           /**< when (the worker's burst clock) */
	uint64_t life;          /**< ticks since the flow was created */
};

struct fg_worker;
struct fg_neigh_table;
struct fg_burst_out;
struct rte_mbuf;

/* A packet with no tracked entry: service lookup, scheduler, ct_insert
 * (and the NAT reply entry), then fg_flow_forward(). */
void fg_flow_new(struct fg_worker *w, const struct fg_lb_table *lb,
		 const struct fg_neigh_table *nt, struct fg_burst_out *o,
		 struct rte_mbuf *m, const struct fg_pkt *p, uint32_t sig,
		 const void *key, uint64_t now);
/* A bulk lookup's hit of a request-direction entry: its common case in one
 * pass, everything else by fg_flow_forward().  @return true when it took
 * fg_flow_forward(), which may insert (a first fragment's follow entry)
 * and so evict; the one pass removes nothing. */
bool fg_flow_hit(struct fg_worker *w, const struct fg_lb_table *lb,
		 const struct fg_neigh_table *nt, struct fg_burst_out *o,
		 struct rte_mbuf *m, const struct fg_pkt *p, struct ct_entry *e,
		 uint64_t now);
/* Forwards a packet of a tracked (or untracked: e == NULL) request-direction
 * flow to its backend (s, b: known already, else taken from e). */
void fg_flow_forward(struct fg_worker *w, const struct fg_lb_table *lb,
		     const struct fg_neigh_table *nt, struct fg_burst_out *o,
		     struct rte_mbuf *m, const struct fg_pkt *p,
		     struct ct_entry *e, const struct fg_lb_service *s,
		     const struct fg_lb_backend *b, uint64_t now);
/* A packet of the reply direction of a NAT flow: backend -> local. */
void fg_flow_reply(struct fg_worker *w, const struct fg_lb_table *lb,
		   const struct fg_neigh_table *nt, struct fg_burst_out *o,
		   struct rte_mbuf *m, const struct fg_pkt *p,
		   struct ct_entry *e, uint64_t now);
/* conntrack destroy hook (ct_set_destroy_cb), on the owner lcore. */
void fg_flow_on_destroy(void *arg, enum ct_family fam, const void *key,
			const struct ct_entry *e, enum ct_destroy_reason why);
/* conntrack state hook (ct_set_state_cb), on the owner lcore: a flow's
 * state changed (per-backend established counts, watch UPDATE events). */
void fg_flow_on_state(void *arg, enum ct_family fam, const void *key,
		      const struct ct_entry *e, enum ct_state old, uint64_t now);

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
static inline bool fg_flow_syn_reopens(const struct fg_lb_table *lb,
			       const struct fg_pkt *p, const struct ct_entry *e)
{
	if (likely((p->tcp_flags & (CT_TCP_SYN | CT_TCP_ACK)) != CT_TCP_SYN) ||
	    p->kind != FG_PK_FLOW)
		return false;
	uint16_t sid = lb->svc_by_id[e->service];
	const struct fg_lb_backend *b;

	if (sid == 0)
		return false; /* service gone: fg_flow_forward counts and drops */
	b = fg_lb_backend_get(&lb->services[sid - 1], e->backend);
	return b != NULL && !b->usable;
}

#ifdef __cplusplus
}
#endif
#endif /* FLOWGATE_FG_FLOW_H */
