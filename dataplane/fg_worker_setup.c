/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Construction of a worker: its conntrack shard and mailbox, event ring,
 * least-connections rows and TX buffers, and the dispatch rings between
 * workers.  Runs on the main lcore before the workers start (fg_worker.c
 * is the packet's route; nothing here runs per packet).
 */
#include <errno.h>
#include <stdio.h>

#include <rte_cycles.h>
#include <rte_lcore.h>
#include <rte_malloc.h>

#include "fg_config_ct.h"
#include "fg_worker_private.h"

const char *const fg_dp_counter_names[FG_DC_MAX] = {
#define FG_X(n, d) #n,
	FG_DP_COUNTER_LIST(FG_X)
#undef FG_X
};

/* A local address into the worker's set of its family (once; the
 * unspecified address is no local one). */
static void local_add(struct fg_worker *w, const struct fg_addr *a)
{
	uint32_t h;

	if (a->family == AF_INET) {
		uint32_t v = a->v4.s_addr;

		if (v == 0 || fg_local4_has(w, v))
			return;
		for (h = fg_local4_home(v); w->local4[h] != 0; h = (h + 1) & (FG_LOCAL_SLOTS - 1))
			;
		w->local4[h] = v;
	} else if (a->family == AF_INET6) {
		struct fg_local6 x = fg_local6_of(a->bytes);

		if ((x.w[0] | x.w[1]) == 0 || fg_local6_has(w, a->bytes))
			return;
		for (h = fg_local6_home(x); (w->local6[h].w[0] | w->local6[h].w[1]) != 0;
		     h = (h + 1) & (FG_LOCAL_SLOTS - 1))
			;
		w->local6[h] = x;
	}
}

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
	fg_config_ct(dp->cfg, &cc);
	cc.capacity = dp->ct_capacity; /* the file's, or --ct-capacity */
	cc.socket_id = socket;
	cc.hz = rte_get_tsc_hz();
	for (unsigned int i = 0; i < dp->n_locals; i++)
		local_add(w, &dp->locals[i]);
	w->ct = ct_shard_create(&cc);
	if (w->ct == NULL) {
		rc = -rte_errno;
		goto fail;
	}
	rc = ct_mbox_attach(w->ct);
	if (rc < 0)
		goto fail;
	ct_set_destroy_cb(w->ct, fg_flow_on_destroy, w);
	ct_set_state_cb(w->ct, fg_flow_on_state, w);
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
		struct fg_worker_txq *q = &w->tx[p];

		q->port_id = dp->ports[p].port_id;
		q->rx_only = dp->ports[p].rx_only;
		q->vlan = dp->ports[p].cfg.vlan;
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
	for (unsigned int i = 0; i < FG_MAX_WORKERS; i++)
		rte_ring_free(w->in[i]);
	rte_free(w);
}
