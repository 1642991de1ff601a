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
 * them again (fg_worker.c, next_hop_slow), so a live neighbour is
 * confirmed before it expires.  The ageing check runs on the main lcore
 * and rebuilds the table only when an entry is due.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_malloc.h>

#include "fg_dp.h"

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

void fg_dp_neigh_poll(struct fg_dp *dp)
{
	struct fg_neigh_learn msgs[64];
	struct fg_neigh_learn add[64];
	unsigned int n, k = 0;
	uint64_t now = rte_rdtsc();
	bool age_due = false;

	/* ageing: look at the table 16 times per age, rebuild when due */
	if (dp->neigh_age && now - dp->neigh_aged_at >= dp->neigh_age / 16) {
		dp->neigh_aged_at = now;
		age_due = fg_neigh_table_due(dp->neigh, now, dp->neigh_age);
	}
	n = rte_ring_dequeue_burst_elem(dp->learn_ring, msgs, sizeof(msgs[0]),
					RTE_DIM(msgs), NULL);
	for (unsigned int i = 0; i < n; i++) {
		const struct fg_neigh_entry *e =
			fg_neigh_lookup(dp->neigh, msgs[i].family, msgs[i].addr);

		/* only republish for news (new, moved, or a stale entry
		 * confirmed): a worker may post the same entry several times
		 * before the new table reaches it */
		if (e == NULL || (!e->is_static &&
				  (!rte_is_same_ether_addr(&e->mac, &msgs[i].mac) ||
				   e->port != msgs[i].port || e->stale)))
			add[k++] = msgs[i];
	}
	if (k == 0 && !age_due)
		return;
	pthread_mutex_lock(&dp->cfg_lock);
	struct fg_neigh_table *old = dp->neigh;
	struct fg_neigh_table *nt = fg_neigh_table_build_aged(dp->cfg, old, add, k,
							      now, dp->neigh_age);

	if (nt != NULL) {
		__atomic_store_n(&dp->neigh, nt, __ATOMIC_RELEASE);
		rte_rcu_qsbr_synchronize(dp->qsbr, RTE_QSBR_THRID_INVALID);
		fg_neigh_table_free(old);
	}
	pthread_mutex_unlock(&dp->cfg_lock);
}
