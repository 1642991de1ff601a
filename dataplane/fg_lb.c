/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Service/backend tables: built from struct fg_config on the main lcore,
 * published by one pointer swap, freed after an RCU QSBR grace period.
 *
 * Why tombstones: conntrack entries hold (service id, backend id).  When an
 * apply removes a backend, its flows must keep going to the same address
 * (FG_FAIL_KEEP) until they end, so the new table keeps the removed
 * backend as a non-schedulable tombstone for as long as conntrack tracks
 * a flow of it: its conns_opened - conns_closed counters (the workers'
 * destroy hook counts every flow that leaves), read at each build.  No
 * timer: a 20-minute stream outlives any.  A service keeps at most
 * FG_TOMBSTONE_MAX of them; above that the ones with the fewest flows go
 * (logged; their packets count tombstone_evicted and drop as no_backend).
 * Backend ids are never handed out twice (fg_config_assign_ids), so a
 * tombstone's id is its own while it lives.
 *
 * Why counters live in the table: they are indexed by the table's rows, so
 * the hot path does one array index; on a swap the main lcore waits for the
 * grace period (no worker writes the old rows any more) and then adds the
 * old totals into the new table's base rows, matched by id.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_malloc.h>

#include "fg_dp_private.h"
#include "fg_lb.h"
#include "fg_log.h"
#include "fg_rcu.h"
#include "fg_maglev.h"

static uint32_t addr_len(uint8_t family)
{
	return family == AF_INET6 ? 16 : 4;
}

static uint32_t lb_hash(uint8_t family, const void *addr, uint32_t extra)
{
	uint8_t buf[24] = {0};

	buf[0] = family;
	memcpy(buf + 4, &extra, 4);
	memcpy(buf + 8, addr, addr_len(family));
	return ct_hash_crc(buf, sizeof(buf));
}

static uint32_t pow2_at_least(uint32_t n)
{
	uint32_t p = 16;

	while (p < n)
		p <<= 1;
	return p;
}

struct fg_config *fg_dp_config_dup(const struct fg_config *c)
{
	struct fg_config *d = calloc(1, sizeof(*d));

	if (d == NULL)
		return NULL;
	*d = *c;
	d->services = NULL;
	if (c->n_services) {
		d->services = calloc(c->n_services, sizeof(*d->services));
		if (d->services == NULL) {
			free(d);
			return NULL;
		}
		memcpy(d->services, c->services,
		       c->n_services * sizeof(*d->services));
	}
	return d;
}

void fg_dp_config_free(struct fg_config *c)
{
	if (c == NULL)
		return;
	free(c->services);
	free(c);
}

void fg_lb_table_free(struct fg_lb_table *t)
{
	if (t == NULL)
		return;
	for (uint32_t i = 0; i < t->n_services; i++) {
		rte_free(t->services[i].backends);
		rte_free(t->services[i].maglev);
		rte_free(t->services[i].prev_maglev);
		rte_free(t->services[i].by_id);
	}
	rte_free(t->services);
	rte_free(t->svc_slots);
	rte_free(t->addr_slots);
	rte_free(t->svc_by_id);
	for (unsigned int c = 0; c < FG_MAX_WORKERS; c++) {
		rte_free(t->core[c].svc);
		rte_free(t->core[c].be);
	}
	rte_free(t->base_svc);
	rte_free(t->base_be);
	rte_free(t->base_core_svc);
	fg_dp_config_free(t->cfg);
	rte_free(t);
}

static int cmp_backend_id(const void *a, const void *b)
{
	const struct fg_lb_backend *x = a, *y = b;

	if (x->gone != y->gone)
		return x->gone ? 1 : -1;
	return x->id < y->id ? -1 : x->id > y->id;
}

/* Binary search of backends[lo, hi), sorted by id. */
static const struct fg_lb_backend *backend_search(const struct fg_lb_service *s,
						  uint32_t lo, uint32_t hi,
						  uint32_t id)
{
	while (lo < hi) {
		uint32_t mid = (lo + hi) / 2;

		if (s->backends[mid].id == id)
			return &s->backends[mid];
		if (s->backends[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* The slow path of fg_lb_backend_get (ids >= 65536): live backends, then
 * tombstones, two sorted runs. */
const struct fg_lb_backend *fg_lb_backend_find(const struct fg_lb_service *s,
					       uint32_t id)
{
	const struct fg_lb_backend *b;

	if (s->by_id != NULL)
		return fg_lb_backend_get(s, id);
	b = backend_search(s, 0, s->n_live, id);
	return b ? b : backend_search(s, s->n_live, s->n_backends, id);
}

const struct fg_lb_service *fg_lb_service_find(const struct fg_lb_table *t,
					       uint8_t family, const void *addr,
					       uint16_t port_be, uint8_t proto)
{
	uint32_t alen = addr_len(family);
	uint32_t h = lb_hash(family, addr, ((uint32_t)port_be << 8) | proto);

	for (uint32_t i = h & t->svc_mask;; i = (i + 1) & t->svc_mask) {
		const struct fg_lb_svc_slot *s = &t->svc_slots[i];

		if (!s->used)
			return NULL;
		if (s->family == family && s->port_be == port_be &&
		    s->proto == proto && memcmp(s->addr, addr, alen) == 0)
			return &t->services[s->svc];
	}
}

int fg_lb_addr_kind(const struct fg_lb_table *t, uint8_t family,
		    const void *addr)
{
	uint32_t alen = addr_len(family);
	uint32_t h = lb_hash(family, addr, 0);

	for (uint32_t i = h & t->addr_mask;; i = (i + 1) & t->addr_mask) {
		const struct fg_lb_addr_slot *s = &t->addr_slots[i];

		if (!s->used)
			return 0;
		if (s->family == family && memcmp(s->addr, addr, alen) == 0)
			return s->kind;
	}
}

static void addr_set_add(struct fg_lb_table *t, const struct fg_addr *a,
			 uint8_t kind)
{
	uint32_t h = lb_hash(a->family, a->bytes, 0);

	for (uint32_t i = h & t->addr_mask;; i = (i + 1) & t->addr_mask) {
		struct fg_lb_addr_slot *s = &t->addr_slots[i];

		if (s->used && s->family == a->family &&
		    memcmp(s->addr, a->bytes, addr_len(a->family)) == 0) {
			s->kind |= kind;   /* a VIP that is a local address too */
			return;
		}
		if (!s->used) {
			s->used = 1;
			s->family = a->family;
			s->kind = kind;
			memcpy(s->addr, a->bytes, addr_len(a->family));
			return;
		}
	}
}

static const struct fg_addr *port_local(const struct fg_port_cfg *ports,
					uint32_t n_ports, uint8_t family)
{
	for (uint32_t p = 0; p < n_ports; p++)
		for (uint32_t i = 0; i < ports[p].n_local; i++)
			if (ports[p].local[i].family == family)
				return &ports[p].local[i];
	return NULL;
}

static uint64_t backend_key(const struct fg_lb_backend *b)
{
	return fg_maglev_backend_key(b->addr.bytes,
				     rte_be_to_cpu_16(b->port_be));
}

static int keep_prev(struct fg_lb_service *s, const struct fg_lb_service *old_s);

/* Flows conntrack tracks on backend @p ob of table @p t: opened - closed
 * over the workers' rows and the carried base.  Closed is read first: a
 * flow's close is counted after its open, so the difference read this way
 * is never below the truth (a tombstone is never dropped under a flow). */
static uint64_t backend_flows(const struct fg_lb_table *t,
			      const struct fg_lb_backend *ob)
{
	uint64_t closed = fg_lb_be_counter(t, t->n_workers, ob, FG_BC_conns_closed);

	rte_compiler_barrier();
	uint64_t opened = fg_lb_be_counter(t, t->n_workers, ob, FG_BC_conns_opened);

	return opened > closed ? opened - closed : 0;
}

/* A backend of the old service that the new config no longer lists. */
struct tomb {
	uint32_t i;             /* index in the old service's backends */
	uint64_t flows;
	uint64_t gone_tsc;
};

/* Most flows first, then the most recently removed. */
static int tomb_cmp(const void *a, const void *b)
{
	const struct tomb *x = a, *y = b;

	if (x->flows != y->flows)
		return x->flows > y->flows ? -1 : 1;
	if (x->gone_tsc != y->gone_tsc)
		return x->gone_tsc > y->gone_tsc ? -1 : 1;
	return x->i < y->i ? -1 : x->i > y->i;
}

/*
 * The tombstones @p old_s leaves to the new service: every backend the
 * config just removed (its flows are still being counted: workers on the
 * table before @p old may open flows on it until the grace period ends),
 * and every older tombstone that conntrack still holds a flow of; at most
 * FG_TOMBSTONE_MAX, the ones with the most flows.  Fills @p keep (free()
 * it) and returns how many; -ENOMEM.
 */
static int tombstones_pick(const struct fg_lb_service *old_s,
			   const struct fg_lb_table *old,
			   const struct fg_service_cfg *sc, struct tomb **keep)
{
	struct tomb *v;
	uint32_t n = 0, evicted = 0;
	uint64_t lost = 0;

	*keep = NULL;
	if (old_s == NULL)
		return 0;
	v = calloc(RTE_MAX(1u, old_s->n_backends), sizeof(*v));
	if (v == NULL)
		return -ENOMEM;
	for (uint32_t i = 0; i < old_s->n_backends; i++) {
		const struct fg_lb_backend *ob = &old_s->backends[i];
		bool listed = false;

		for (uint32_t j = 0; j < sc->n_backends && !listed; j++)
			listed = sc->backends[j].id == ob->id;
		if (listed)
			continue;
		v[n].i = i;
		v[n].flows = backend_flows(old, ob);
		v[n].gone_tsc = ob->gone ? ob->gone_tsc : UINT64_MAX;
		if (ob->gone && v[n].flows == 0)
			continue;   /* its last flow has left conntrack */
		n++;
	}
	if (n > FG_TOMBSTONE_MAX) {
		qsort(v, n, sizeof(*v), tomb_cmp);
		for (uint32_t k = FG_TOMBSTONE_MAX; k < n; k++) {
			evicted++;
			lost += v[k].flows;
		}
		n = FG_TOMBSTONE_MAX;
		FG_LOG(WARNING, "service %s: %u removed backends dropped from the "
		       "table with %" PRIu64 " flows (more than %u tombstones); "
		       "their packets drop (tombstone_evicted)", sc->name, evicted,
		       lost, FG_TOMBSTONE_MAX);
	}
	*keep = v;   /* in any order: build_service sorts by id */
	return (int)n;
}

/* The service's Maglev table over its usable backends (the first @p n of
 * s->backends are the configured ones), as backend indexes; all
 * UINT32_MAX when none is usable. */
static int service_maglev(struct fg_lb_service *s, const struct fg_service_cfg *sc,
			  const struct fg_lb_service *old_s, uint32_t n, char *err, size_t err_len)
{
	uint32_t M = sc->maglev_size;

	if (M == 0) {
		M = fg_maglev_size(n);
	} else if (!fg_maglev_is_prime(M) || M < n) {
		snprintf(err, err_len, "service %s: maglev_size %u must be a prime "
			 ">= the number of backends", sc->name, M);
		return -EINVAL;
	}
	s->maglev_size = M;
	s->maglev = rte_malloc("fg_maglev", (size_t)M * sizeof(uint32_t), 0);
	if (s->maglev == NULL)
		return -ENOMEM;

	uint32_t *w = calloc(RTE_MAX(1u, n), sizeof(uint32_t));
	uint64_t *keys = calloc(RTE_MAX(1u, n), sizeof(uint64_t));
	uint32_t *map = calloc(RTE_MAX(1u, n), sizeof(uint32_t));
	uint32_t nu = 0;
	int rc = 0;

	if (w == NULL || keys == NULL || map == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	for (uint32_t j = 0; j < n; j++) {
		if (!s->backends[j].usable)
			continue;
		w[nu] = s->backends[j].weight;
		keys[nu] = backend_key(&s->backends[j]);
		map[nu] = j;
		nu++;
	}
	s->n_usable = nu;
	if (nu == 0) {
		for (uint32_t i = 0; i < M; i++)
			s->maglev[i] = UINT32_MAX;
	} else {
		rc = fg_maglev_build(w, keys, nu, M, s->maglev);
		if (rc < 0) {
			snprintf(err, err_len, "service %s: Maglev build failed: %s",
				 sc->name, strerror(-rc));
			goto out;
		}
		rc = 0;
		for (uint32_t i = 0; i < M; i++)
			s->maglev[i] = map[s->maglev[i]];
	}
	if (rc == 0 && keep_prev(s, old_s) < 0)
		rc = -ENOMEM;
out:
	free(w);
	free(keys);
	free(map);
	return rc;
}

static int build_service(struct fg_lb_service *s,
			 const struct fg_service_cfg *sc,
			 const struct fg_lb_service *old_s,
			 const struct fg_lb_table *old,
			 const struct fg_config *cfg, uint64_t now,
			 char *err, size_t err_len)
{
	uint32_t n = sc->n_backends;
	struct tomb *tombs;
	int n_tomb;

	s->id = sc->id;
	snprintf(s->name, sizeof(s->name), "%s", sc->name);
	s->vip = sc->vip;
	s->port_be = rte_cpu_to_be_16(sc->port);
	s->proto = sc->proto;
	s->mode = sc->mode;
	s->sched = sc->sched;
	s->on_fail = sc->on_fail;
	s->gue_port_be = rte_cpu_to_be_16(sc->gue_port ? sc->gue_port :
					  (cfg->gue_port ? cfg->gue_port : FG_GUE_DEFAULT_PORT));

	/* tombstones: backends of the old service that are not in the new
	 * one, while conntrack holds flows of them */
	n_tomb = tombstones_pick(old_s, old, sc, &tombs);
	if (n_tomb < 0)
		return n_tomb;
	s->n_live = n;
	s->n_backends = n + (uint32_t)n_tomb;
	s->backends = rte_zmalloc("fg_lb_be",
				  RTE_MAX(1u, s->n_backends) * sizeof(*s->backends), 0);
	if (s->backends == NULL) {
		free(tombs);
		return -ENOMEM;
	}
	for (uint32_t j = 0; j < n; j++) {
		const struct fg_backend_cfg *bc = &sc->backends[j];
		struct fg_lb_backend *b = &s->backends[j];

		if (bc->addr.family != sc->vip.family && sc->mode != FG_MODE_NAT) {
			snprintf(err, err_len, "service %s: backend %u family differs "
				 "from the VIP (DSR encapsulates in the VIP's family)",
				 sc->name, bc->id);
			free(tombs);
			return -EINVAL;
		}
		b->addr = bc->addr;
		b->port_be = rte_cpu_to_be_16(bc->port ? bc->port : sc->port);
		b->id = bc->id;
		b->weight = bc->weight;
		/* a backend the health checker marked down is built like a
		 * drained one: out of Maglev and lc, so no new flows; its
		 * existing flows still find it (on_fail keep; reset deletes
		 * them, fg_control.c) */
		b->health_down = bc->health_down;
		b->usable = bc->weight > 0 && !bc->drained && !bc->health_down;
		b->src = bc->src;
	}
	for (int k = 0; k < n_tomb; k++) {
		const struct fg_lb_backend *ob = &old_s->backends[tombs[k].i];
		struct fg_lb_backend *b = &s->backends[n + (uint32_t)k];

		*b = *ob;
		b->usable = false;
		if (!ob->gone) {
			b->gone = true;
			b->gone_tsc = now;
		}
	}
	free(tombs);
	qsort(s->backends, s->n_backends, sizeof(*s->backends), cmp_backend_id);
	for (uint32_t j = 1; j < n; j++)
		if (s->backends[j].id == s->backends[j - 1].id) {
			snprintf(err, err_len, "service %s: duplicate backend id %u",
				 sc->name, s->backends[j].id);
			return -EINVAL;
		}

	uint32_t max_id = 0;

	for (uint32_t j = 0; j < s->n_backends; j++)
		max_id = RTE_MAX(max_id, s->backends[j].id);
	if (max_id < 65536) {
		s->by_id = rte_zmalloc("fg_be_by_id", (max_id + 1) * sizeof(uint16_t), 0);
		if (s->by_id == NULL)
			return -ENOMEM;
		for (uint32_t j = 0; j < s->n_backends; j++)
			s->by_id[s->backends[j].id] = (uint16_t)(j + 1);
		s->max_id = max_id;
	}

	return service_maglev(s, sc, old_s, n, err, err_len);
}

/* The usable set of @p a and @p b (ids, weights, Maglev keys, table
 * size) is the same: their Maglev tables are identical. */
static bool same_usable(const struct fg_lb_service *a,
			const struct fg_lb_service *b)
{
	uint32_t i = 0, j = 0;

	if (a->maglev_size != b->maglev_size || a->n_usable != b->n_usable)
		return false;
	for (;;) {
		while (i < a->n_backends && !a->backends[i].usable)
			i++;
		while (j < b->n_backends && !b->backends[j].usable)
			j++;
		if (i == a->n_backends || j == b->n_backends)
			return i == a->n_backends && j == b->n_backends;
		if (a->backends[i].id != b->backends[j].id ||
		    a->backends[i].weight != b->backends[j].weight ||
		    backend_key(&a->backends[i]) != backend_key(&b->backends[j]))
			return false;
		i++;
		j++;
	}
}

/*
 * Second chance: @p s keeps, as backend ids, the Maglev table in force
 * before the last change of its usable set: @p old_s's own table when the
 * set changed now, else @p old_s's previous one.  Off the fast path (a
 * copy of M words per rebuild of a dsr-gue Maglev service).
 */
static int keep_prev(struct fg_lb_service *s, const struct fg_lb_service *old_s)
{
	const uint32_t *src;
	uint32_t M;

	if (old_s == NULL || s->mode != FG_MODE_DSR_GUE ||
	    s->sched != FG_SCHED_MAGLEV || old_s->mode != s->mode ||
	    old_s->sched != s->sched)
		return 0;
	if (same_usable(s, old_s)) {
		if (old_s->prev_maglev == NULL)
			return 0;
		M = old_s->prev_size;
		src = old_s->prev_maglev;
	} else {
		M = old_s->maglev_size;
		src = NULL;
	}
	s->prev_maglev = rte_malloc("fg_maglev_prev", (size_t)M * sizeof(uint32_t), 0);
	if (s->prev_maglev == NULL)
		return -ENOMEM;
	s->prev_size = M;
	if (src != NULL) {
		memcpy(s->prev_maglev, src, (size_t)M * sizeof(uint32_t));
		return 0;
	}
	for (uint32_t i = 0; i < M; i++) {
		uint32_t bi = old_s->maglev[i];

		s->prev_maglev[i] = bi == UINT32_MAX ? UINT32_MAX :
				    old_s->backends[bi].id;
	}
	return 0;
}

static const struct fg_lb_service *old_service(const struct fg_lb_table *old,
					       uint32_t id)
{
	if (old == NULL || old->svc_by_id[id & 0xffff] == 0)
		return NULL;
	return &old->services[old->svc_by_id[id & 0xffff] - 1];
}

/* Outer source address of each backend (its own src, else the first
 * local address of its family on a port) and its counter row. */
static int backends_src(struct fg_lb_service *s, const struct fg_service_cfg *sc,
			const struct fg_port_cfg *ports, uint32_t n_ports,
			uint32_t *n_be, char *err, size_t err_len)
{
	for (uint32_t j = 0; j < s->n_backends; j++) {
		struct fg_lb_backend *b = &s->backends[j];

		if (b->src.family == 0) {
			const struct fg_addr *l = port_local(ports, n_ports,
							     b->addr.family);
			if (l)
				b->src = *l;
		}
		if (b->src.family == 0 && sc->mode != FG_MODE_NAT) {
			snprintf(err, err_len, "service %s: DSR needs an outer "
				 "source: give backend %u a src or a port a "
				 "local address of its family", sc->name, b->id);
			return -EINVAL;
		}
		b->stat_idx = (*n_be)++;
	}
	return 0;
}

/* Service @p i into the (VIP, port, proto) open-addressing table. */
static void svc_slot_add(struct fg_lb_table *t, const struct fg_service_cfg *sc,
			 uint16_t port_be, uint32_t i)
{
	uint32_t h = lb_hash(sc->vip.family, sc->vip.bytes,
			     ((uint32_t)port_be << 8) | sc->proto);

	for (uint32_t k = h & t->svc_mask;; k = (k + 1) & t->svc_mask) {
		struct fg_lb_svc_slot *sl = &t->svc_slots[k];

		if (sl->used)
			continue;
		sl->used = 1;
		sl->family = sc->vip.family;
		sl->proto = sc->proto;
		sl->port_be = port_be;
		sl->svc = i;
		memcpy(sl->addr, sc->vip.bytes, addr_len(sc->vip.family));
		return;
	}
}

int fg_lb_table_build(const struct fg_config *cfg, const struct fg_lb_table *old,
		      unsigned int n_workers, const struct fg_port_cfg *ports,
		      struct fg_lb_table **out, char *err, size_t err_len)
{
	struct fg_lb_table *t;
	uint64_t now = rte_rdtsc();
	uint32_t n_addr = 0, n_be = 0;
	int rc = -ENOMEM;

	err[0] = '\0';
	if (cfg->n_services > FG_MAX_SERVICES) {
		snprintf(err, err_len, "%u services (max %u)", cfg->n_services,
			 FG_MAX_SERVICES);
		return -EINVAL;
	}
	t = rte_zmalloc("fg_lb", sizeof(*t), RTE_CACHE_LINE_SIZE);
	if (t == NULL)
		return -ENOMEM;
	t->generation = old ? old->generation + 1 : 1;
	t->cfg = fg_dp_config_dup(cfg);
	t->n_services = cfg->n_services;
	t->services = rte_zmalloc("fg_lb_svc",
				  RTE_MAX(1u, cfg->n_services) * sizeof(*t->services), 0);
	t->svc_mask = pow2_at_least(2 * cfg->n_services) - 1;
	t->svc_slots = rte_zmalloc("fg_lb_svch",
				   (t->svc_mask + 1) * sizeof(*t->svc_slots), 0);
	t->svc_by_id = rte_zmalloc("fg_lb_svcid", 65536 * sizeof(uint16_t), 0);
	if (t->cfg == NULL || t->services == NULL || t->svc_slots == NULL ||
	    t->svc_by_id == NULL)
		goto fail;

	for (uint32_t i = 0; i < cfg->n_services; i++) {
		const struct fg_service_cfg *sc = &cfg->services[i];
		struct fg_lb_service *s = &t->services[i];

		if (sc->vip.family != AF_INET && sc->vip.family != AF_INET6) {
			snprintf(err, err_len, "service %s: VIP has no address family",
				 sc->name);
			rc = -EINVAL;
			goto fail;
		}
		if (sc->id > 0xffff) {
			snprintf(err, err_len, "service %s: id %u > 65535 (conntrack "
				 "stores 16 bits)", sc->name, sc->id);
			rc = -EINVAL;
			goto fail;
		}
		if (t->svc_by_id[sc->id]) {
			snprintf(err, err_len, "service %s: duplicate id %u", sc->name,
				 sc->id);
			rc = -EINVAL;
			goto fail;
		}
		if (fg_lb_service_find(t, sc->vip.family, sc->vip.bytes,
				       rte_cpu_to_be_16(sc->port), sc->proto)) {
			snprintf(err, err_len, "service %s: VIP:port/proto already "
				 "used by another service", sc->name);
			rc = -EINVAL;
			goto fail;
		}
		rc = build_service(s, sc, old_service(old, sc->id), old, cfg, now,
				   err, err_len);
		if (rc < 0)
			goto fail;
		if (sc->mode == FG_MODE_NAT &&
		    port_local(ports, cfg->n_ports, sc->vip.family) == NULL) {
			/* NAT needs a local address of the client's family */
			snprintf(err, err_len, "service %s: NAT mode needs a local "
				 "address of the VIP's family on a port", sc->name);
			rc = -EINVAL;
			goto fail;
		}
		rc = backends_src(s, sc, ports, cfg->n_ports, &n_be, err, err_len);
		if (rc < 0)
			goto fail;
		s->stat_idx = i;
		t->svc_by_id[sc->id] = i + 1;
		svc_slot_add(t, sc, s->port_be, i);
	}
	t->n_stat_backends = n_be;

	/* addresses we answer ARP/ND for */
	n_addr = cfg->n_services;
	for (uint32_t p = 0; p < cfg->n_ports; p++)
		n_addr += ports[p].n_local;
	t->addr_mask = pow2_at_least(2 * n_addr) - 1;
	t->addr_slots = rte_zmalloc("fg_lb_addr",
				    (t->addr_mask + 1) * sizeof(*t->addr_slots), 0);
	if (t->addr_slots == NULL)
		goto fail_nomem;
	for (uint32_t i = 0; i < cfg->n_services; i++)
		addr_set_add(t, &cfg->services[i].vip, FG_LB_ADDR_VIP);
	for (uint32_t p = 0; p < cfg->n_ports; p++)
		for (uint32_t i = 0; i < ports[p].n_local; i++)
			addr_set_add(t, &ports[p].local[i], FG_LB_ADDR_LOCAL);

	/* counters: per core rows + carried base */
	for (unsigned int c = 0; c < n_workers; c++) {
		t->core[c].svc = rte_zmalloc("fg_lb_csvc", RTE_MAX(1u, t->n_services) *
					     FG_SC_MAX * sizeof(uint64_t),
					     RTE_CACHE_LINE_SIZE);
		t->core[c].be = rte_zmalloc("fg_lb_cbe", RTE_MAX(1u, n_be) *
					    FG_BC_MAX * sizeof(uint64_t),
					    RTE_CACHE_LINE_SIZE);
		if (t->core[c].svc == NULL || t->core[c].be == NULL)
			goto fail_nomem;
	}
	t->base_svc = rte_zmalloc("fg_lb_bsvc", RTE_MAX(1u, t->n_services) *
				  FG_SC_MAX * sizeof(uint64_t), 0);
	t->base_be = rte_zmalloc("fg_lb_bbe", RTE_MAX(1u, n_be) * FG_BC_MAX *
				 sizeof(uint64_t), 0);
	t->n_workers = n_workers;
	t->base_core_svc = rte_zmalloc("fg_lb_bcsvc", RTE_MAX(1u, n_workers) *
				       RTE_MAX(1u, t->n_services) * FG_SC_MAX *
				       sizeof(uint64_t), 0);
	if (t->base_svc == NULL || t->base_be == NULL || t->base_core_svc == NULL)
		goto fail_nomem;
	*out = t;
	return 0;

fail_nomem:
	rc = -ENOMEM;
fail:
	if (rc == -ENOMEM && err[0] == '\0')
		snprintf(err, err_len, "out of memory building service tables");
	fg_lb_table_free(t);
	return rc;
}

uint64_t fg_lb_svc_counter(const struct fg_lb_table *t, unsigned int n_workers,
			   const struct fg_lb_service *s, enum fg_service_counter c)
{
	uint64_t sum = t->base_svc[s->stat_idx * FG_SC_MAX + c];

	for (unsigned int w = 0; w < n_workers; w++)
		sum += t->core[w].svc[s->stat_idx * FG_SC_MAX + c];
	return sum;
}

uint64_t fg_lb_svc_core_counter(const struct fg_lb_table *t, unsigned int worker,
				const struct fg_lb_service *s, enum fg_service_counter c)
{
	size_t row = ((size_t)worker * t->n_services + s->stat_idx) * FG_SC_MAX + c;

	return t->base_core_svc[row] + t->core[worker].svc[s->stat_idx * FG_SC_MAX + c];
}

uint64_t fg_lb_be_counter(const struct fg_lb_table *t, unsigned int n_workers,
			  const struct fg_lb_backend *b, enum fg_backend_counter c)
{
	uint64_t sum = t->base_be[b->stat_idx * FG_BC_MAX + c];

	for (unsigned int w = 0; w < n_workers; w++)
		sum += t->core[w].be[b->stat_idx * FG_BC_MAX + c];
	return sum;
}

/* Carries the old table's totals into the new one's base rows.  Called
 * after the grace period, so no worker writes the old rows any more. */
static void carry_counters(struct fg_lb_table *nt, const struct fg_lb_table *ot,
			   unsigned int n_workers)
{
	for (uint32_t i = 0; i < nt->n_services; i++) {
		struct fg_lb_service *s = &nt->services[i];
		const struct fg_lb_service *os = old_service(ot, s->id);

		if (os == NULL)
			continue;
		for (unsigned int c = 0; c < FG_SC_MAX; c++)
			nt->base_svc[s->stat_idx * FG_SC_MAX + c] +=
				fg_lb_svc_counter(ot, n_workers, os, c);
		for (unsigned int w = 0; w < n_workers; w++)
			for (unsigned int c = 0; c < FG_SC_MAX; c++)
				nt->base_core_svc[((size_t)w * nt->n_services + s->stat_idx) *
						  FG_SC_MAX + c] +=
					fg_lb_svc_core_counter(ot, w, os, c);
		for (uint32_t j = 0; j < s->n_backends; j++) {
			const struct fg_lb_backend *ob =
				fg_lb_backend_find(os, s->backends[j].id);

			if (ob == NULL)
				continue;
			for (unsigned int c = 0; c < FG_BC_MAX; c++)
				nt->base_be[s->backends[j].stat_idx * FG_BC_MAX + c] +=
					fg_lb_be_counter(ot, n_workers, ob, c);
		}
	}
}

int fg_dp_apply_config(struct fg_dp *dp, const struct fg_config *cfg,
		       char *err, size_t err_len)
{
	struct fg_lb_table *nt = NULL, *ot;
	struct fg_port_cfg ports[FG_MAX_PORTS];
	int rc;

	/* ports/locals come from the running ports (not changeable at run
	 * time: changing them needs a restart) */
	for (unsigned int p = 0; p < FG_MAX_PORTS; p++)
		ports[p] = p < dp->n_ports ? dp->ports[p].cfg : (struct fg_port_cfg){0};
	struct fg_config tmp = *cfg;

	tmp.n_ports = dp->n_ports;
	rc = fg_lb_table_build(&tmp, dp->lb, dp->n_workers, ports, &nt, err, err_len);
	if (rc < 0)
		return rc;
	ot = fg_rcu_publish(dp->qsbr, &dp->lb, nt);
	if (ot != NULL) {
		carry_counters(nt, ot, dp->n_workers);
		fg_lb_table_free(ot);
	}
	/* running config: ports stay as started */
	struct fg_config *c = fg_dp_config_dup(cfg);

	if (c != NULL) {
		memcpy(c->ports, dp->cfg ? dp->cfg->ports : cfg->ports, sizeof(c->ports));
		c->n_ports = dp->cfg ? dp->cfg->n_ports : cfg->n_ports;
		fg_dp_config_free(dp->cfg);
		dp->cfg = c;
	}
	return 0;
}
