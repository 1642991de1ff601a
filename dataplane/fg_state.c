/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Restart and upgrade hand-over (issue 35): a stopping daemon writes its
 * tracked flows and learned neighbours to the state file (fg_state.h), the
 * next one restores them before its workers start.  docs/DESIGN.md
 * "Restart and upgrade hand-over" says why a file and what it keeps.
 *
 * What a flow keeps across, and how each part is found again:
 *  - its service: by (VIP = the forward key's destination, port, proto),
 *    the record's; its id is the new config's;
 *  - its backend: by address and port (never by id or index: the new
 *    config may list, number or drop them otherwise).  A backend the new
 *    config no longer has becomes a tombstone, as a config change makes
 *    one: staged by applying the config once with it (drained) and once
 *    without, so fg_lb.c's own rule keeps it while its flows live;
 *  - its worker: the owner its forward key hashes to now (software RSS /
 *    the NIC's RETA, fg_rss.h), so a changed worker count re-shards DSR
 *    flows; a NAT flow also needs its reply key to hash there (the NAT
 *    port was chosen for the old RETA), else it is refused (nat_split);
 *  - its NAT local address: by address;
 *  - state, flags, windows, counters, times: the record (ct_rec.h), its
 *    idle and life times grown by the time between the write and the load.
 *
 * Everything here runs on the main lcore while no worker runs (load:
 * between fg_dp_create and fg_dp_start; save: after fg_dp_stop), so the
 * shards and the per-core counter rows are written directly.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_ethdev.h>

#include "ct_rec.h"
#include "fg_config_ct.h"
#include "fg_config_parse.h"
#include "fg_dp_private.h"
#include "fg_log.h"
#include "fg_rss.h"
#include "fg_state.h"
#include "fg_worker_private.h"

#ifndef FG_VERSION
#define FG_VERSION "unknown"
#endif

static uint64_t
mono_us(void)
{
	return fg_state_clock_ns(CLOCK_MONOTONIC) / 1000u;
}

static inline uint32_t
addr_len(uint8_t fam)
{
	return fam == CT_V6 ? 16 : 4;
}

/* ---- save --------------------------------------------------------------- */

struct save_ctx {
	struct fg_dp *dp;
	const struct fg_lb_table *lb;
	struct ct_shard *ct;
	struct fg_state_writer *wr;
	uint64_t now;
	uint64_t saved, nat, skipped;
};

static int
save_flow(const struct ct_flow *f, void *arg)
{
	struct save_ctx *c = arg;
	const struct fg_lb_service *s;
	const struct fg_lb_backend *b;
	uint16_t sid = c->lb->svc_by_id[f->e.service];
	struct ct_rec r;

	if (f->expires_ticks == 0)
		return 0;          /* expired, not swept yet */
	s = sid ? &c->lb->services[sid - 1] : NULL;
	b = s ? fg_lb_backend_find(s, f->e.backend) : NULL;
	if (b == NULL || b->addr.family != ct_family_af(f->family)) {
		c->skipped++;      /* its service or backend left the table */
		return 0;
	}
	ct_rec_fill(c->ct, f, c->now, &r);
	memcpy(r.backend, b->addr.bytes, addr_len(f->family));
	r.backend_port = b->port_be;
	r.service_port = s->port_be;
	fg_state_put_flow(c->wr, &r);
	c->saved++;
	c->nat += f->has_reply;
	return 0;
}

static void
save_neigh(struct fg_dp *dp, struct fg_state_writer *wr, uint64_t now)
{
	const struct fg_neigh_table *t = dp->neigh;

	fg_state_section(wr, FG_STATE_SEC_NEIGH);
	for (uint32_t i = 0; t != NULL && i <= t->mask; i++) {
		const struct fg_neigh_entry *e = &t->e[i];
		struct fg_state_neigh n;

		if (!e->used || e->is_static || e->port >= dp->n_ports)
			continue;
		memset(&n, 0, sizeof(n));
		n.family = e->family;
		snprintf(n.port, sizeof(n.port), "%s", dp->ports[e->port].cfg.name);
		memcpy(n.addr, e->addr, 16);
		memcpy(n.mac, e->mac.addr_bytes, 6);
		n.age_ms = (uint32_t)RTE_MIN((now - e->learned_tsc) * 1000 / dp->hz,
					     (uint64_t)UINT32_MAX);
		fg_state_put_neigh(wr, &n);
		dp->state.neigh_saved++;
	}
}

/* Every shard's flows, then the learned neighbours, into @p f. */
static int
save_to(struct fg_dp *dp, FILE *f, uint64_t *skipped)
{
	struct fg_state_writer wr;
	struct save_ctx c = {.dp = dp, .lb = dp->lb, .wr = &wr, .now = rte_rdtsc()};

	fg_state_writer_init(&wr, f, dp->n_workers, FG_VERSION,
			     fg_state_clock_ns(CLOCK_REALTIME));
	dp->state.neigh_saved = 0;
	fg_state_section(&wr, FG_STATE_SEC_FLOWS);
	for (unsigned int i = 0; i < dp->n_workers && c.lb != NULL; i++) {
		uint64_t cur = 0;

		c.ct = dp->workers[i]->ct;
		while (cur != CT_WALK_DONE && !wr.err)
			ct_walk(c.ct, &cur, 1u << 16, c.now, save_flow, &c);
	}
	save_neigh(dp, &wr, c.now);
	dp->state.saved = c.saved;
	dp->state.saved_nat = c.nat;
	*skipped = c.skipped;
	int rc = fg_state_writer_finish(&wr);

	dp->state.saved_bytes = wr.bytes;
	return rc;
}

int
fg_dp_state_save(struct fg_dp *dp)
{
	const char *path = dp->params.state_path;
	uint64_t t0 = mono_us(), skipped = 0;
	char tmp[sizeof(dp->state_path) + 8];
	FILE *f;
	int fd, rc;

	if (path == NULL)
		return 0;
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	f = fd >= 0 ? fdopen(fd, "w") : NULL;
	if (f == NULL) {
		rc = -errno;
		FG_LOG(ERR, "state: cannot write %s: %s; the next start restores no flow",
		       tmp, strerror(errno));
		if (fd >= 0)
			close(fd);
		return rc;
	}
	setvbuf(f, NULL, _IOFBF, 1 << 20);
	rc = save_to(dp, f, &skipped);
	if (rc == 0 && fsync(fd) != 0)
		rc = -errno;
	if (fclose(f) != 0 && rc == 0)
		rc = -errno;
	if (rc == 0 && rename(tmp, path) != 0)
		rc = -errno;
	if (rc < 0) {
		unlink(tmp);
		FG_LOG(ERR, "state: writing %s failed: %s; the next start restores no flow",
		       path, strerror(-rc));
		return rc;
	}
	dp->state.save_us = mono_us() - t0;
	FG_LOG(NOTICE, "state: saved %" PRIu64 " flows (%" PRIu64 " NAT) and %" PRIu64
	       " neighbours to %s: %" PRIu64 " bytes in %" PRIu64 " ms%s", dp->state.saved,
	       dp->state.saved_nat, dp->state.neigh_saved, path, dp->state.saved_bytes,
	       dp->state.save_us / 1000, skipped ? " (flows of removed services "
	       "or backends left out)" : "");
	return 0;
}

/* ---- load: finding things again by identity ------------------------------ */

/* Every backend of a table (tombstones too) by (service, address, port). */
struct be_slot {
	uint32_t svc;           /* index in lb->services + 1, 0 = free */
	uint32_t bi;            /* index in its backends */
	uint16_t port_be;
	uint8_t family;         /* AF_* */
	uint8_t addr[16];
};

struct be_map {
	uint32_t mask;
	struct be_slot *slot;
};

struct fg_state_bemap {
	struct be_map m;
};

static uint32_t
be_hash(uint32_t svc, uint8_t family, const uint8_t *addr, uint16_t port)
{
	uint8_t k[24] = {0};

	memcpy(k, &svc, 4);
	k[4] = family;
	memcpy(k + 6, &port, 2);
	memcpy(k + 8, addr, family == AF_INET6 ? 16 : 4);
	return ct_hash_crc(k, sizeof(k));
}

static struct be_slot *
be_slot_of(const struct be_map *m, uint32_t svc, uint8_t family, const uint8_t *addr,
	   uint16_t port)
{
	uint32_t al = family == AF_INET6 ? 16 : 4;

	for (uint32_t i = be_hash(svc, family, addr, port) & m->mask;; i = (i + 1) & m->mask) {
		struct be_slot *e = &m->slot[i];

		if (e->svc == 0 || (e->svc == svc && e->family == family &&
				    e->port_be == port && !memcmp(e->addr, addr, al)))
			return e;
	}
}

static int
be_map_build(const struct fg_lb_table *lb, struct be_map *m)
{
	uint32_t n = 0, size = 16;

	for (uint32_t i = 0; i < lb->n_services; i++)
		n += lb->services[i].n_backends;
	while (size < 2 * n + 2)
		size <<= 1;
	m->mask = size - 1;
	m->slot = calloc(size, sizeof(*m->slot));
	if (m->slot == NULL)
		return -ENOMEM;
	for (uint32_t i = 0; i < lb->n_services; i++)
		for (uint32_t j = 0; j < lb->services[i].n_backends; j++) {
			const struct fg_lb_backend *b = &lb->services[i].backends[j];
			struct be_slot *e = be_slot_of(m, i + 1, b->addr.family,
						       b->addr.bytes, b->port_be);

			if (e->svc != 0)
				continue;   /* twice (a tombstone and a live one) */
			*e = (struct be_slot){.svc = i + 1, .bi = j, .port_be = b->port_be,
					      .family = b->addr.family};
			memcpy(e->addr, b->addr.bytes, 16);
		}
	return 0;
}

static const struct fg_lb_service *
rec_service(const struct fg_lb_table *lb, const struct ct_rec *r)
{
	return fg_lb_service_find(lb, ct_family_af(r->family), ct_key_daddr(&r->key, r->family),
				  r->service_port, r->proto);
}

static const struct fg_lb_backend *
rec_backend(const struct fg_lb_table *lb, const struct be_map *m,
	    const struct fg_lb_service *s, const struct ct_rec *r)
{
	uint32_t si = (uint32_t)(s - lb->services) + 1;
	const struct be_slot *e = be_slot_of(m, si, ct_family_af(r->family), r->backend,
					     r->backend_port);

	return e->svc ? &s->backends[e->bi] : NULL;
}

/* The worker that owns the flow of key @p key now: its dispatch hash
 * (fg_rss_hash: a fragment-follow entry's by its addresses alone). */
unsigned int
fg_state_owner(const struct fg_dp *dp, uint8_t fam, const void *key, bool frag)
{
	uint32_t h;

	if (fam == CT_V4) {
		const struct ct_key4 *k = key;

		h = fg_rss_hash_v4(k->saddr, k->daddr, frag ? 0 : k->sport,
				   frag ? 0 : k->dport);
	} else {
		const struct ct_key6 *k = key;

		h = fg_rss_hash_v6(k->saddr, k->daddr, frag ? 0 : k->sport,
				   frag ? 0 : k->dport);
	}
	return dp->n_workers > 1 ? fg_rss_queue(h, dp->reta) : 0;
}

/* Index of NAT local address @p addr among dp->locals, or -1. */
static int
local_index(const struct fg_dp *dp, uint8_t fam, const void *addr)
{
	for (unsigned int i = 0; i < dp->n_locals; i++)
		if (dp->locals[i].family == ct_family_af(fam) &&
		    !memcmp(dp->locals[i].bytes, addr, addr_len(fam)))
			return (int)i;
	return -1;
}

/* ---- load: tombstones ------------------------------------------------------ */

/* Appends backend (@p r's) to service @p si of @p c, drained, unless it is
 * there already or the service is full. */
static void
stage_add(struct fg_config *c, uint32_t si, const struct ct_rec *r)
{
	struct fg_service_cfg *sc = &c->services[si];
	struct fg_backend_cfg *b;
	uint8_t af = ct_family_af(r->family);

	for (uint32_t j = 0; j < sc->n_backends; j++)
		if (sc->backends[j].addr.family == af &&
		    !memcmp(sc->backends[j].addr.bytes, r->backend, addr_len(r->family)) &&
		    (sc->backends[j].port ? sc->backends[j].port : sc->port) ==
		    rte_be_to_cpu_16(r->backend_port))
			return;
	if (sc->n_backends >= FG_MAX_BACKENDS)
		return;
	b = &sc->backends[sc->n_backends++];
	memset(b, 0, sizeof(*b));
	b->addr.family = af;
	memcpy(b->addr.bytes, r->backend, addr_len(r->family));
	b->port = rte_be_to_cpu_16(r->backend_port);
	b->drained = true;
}

/* The config in force plus every backend a flow of @p v names that the
 * table lacks (drained); NULL when none is missing (or no memory). */
static struct fg_config *
stage_config(struct fg_dp *dp, const struct fg_state_view *v)
{
	const struct fg_lb_table *lb = dp->lb;
	struct fg_config *c = NULL;
	struct be_map m;
	size_t off = 0;

	if (be_map_build(lb, &m) < 0)
		return NULL;
	for (uint32_t i = 0; i < v->n_flows; i++) {
		const struct fg_lb_service *s;
		struct ct_rec r;

		off += (size_t)ct_rec_decode(v->flows + off, v->flows_len - off, &r);
		s = rec_service(lb, &r);
		if (s == NULL || rec_backend(lb, &m, s, &r) != NULL ||
		    (r.flags & CT_REC_F_FRAG))
			continue;
		if (c == NULL && (c = fg_dp_config_dup(dp->cfg)) == NULL)
			break;
		stage_add(c, (uint32_t)(s - lb->services), &r);
	}
	free(m.slot);
	return c;
}

/*
 * Backends that flows of the file name and the config does not list
 * become tombstones: the config applied with them (drained: no new
 * flows), then without them, as an operator's removal would (fg_lb.c
 * keeps what was just removed, and from then on while flows of it live:
 * the restored flows are counted as opened).  Backend ids handed out for
 * them stay reserved (backend_id_max).
 */
static void
tombstones_stage(struct fg_dp *dp, const struct fg_state_view *v)
{
	struct fg_config *with = stage_config(dp, v), *real;
	char err[256];
	uint32_t before = 0, after = 0;

	if (with == NULL)
		return;
	real = fg_dp_config_dup(dp->cfg);
	if (real == NULL || fg_config_assign_ids(with, dp->cfg) < 0 ||
	    fg_dp_apply_config(dp, with, err, sizeof(err)) < 0) {
		FG_LOG(WARNING, "state: removed backends of restored flows not kept "
		       "(their flows are refused as backend_gone)");
		goto out;
	}
	real->backend_id_max = with->backend_id_max;
	if (fg_dp_apply_config(dp, real, err, sizeof(err)) < 0)
		FG_LOG(ERR, "state: config without the staged backends refused: %s", err);
	for (uint32_t i = 0; i < dp->lb->n_services; i++) {
		before += dp->lb->services[i].n_live;
		after += dp->lb->services[i].n_backends;
	}
	dp->state.tombstones = after - before;
out:
	fg_dp_config_free(with);
	fg_dp_config_free(real);
}

/* ---- load: flows ---------------------------------------------------------- */

struct load_ctx {
	struct fg_dp *dp;
	struct fg_lb_table *lb;
	struct fg_state_bemap *m;
	uint64_t now, gap_ms;
};

static inline uint32_t
sat_add(uint32_t a, uint64_t b)
{
	return a + b > UINT32_MAX ? UINT32_MAX : (uint32_t)(a + b);
}

/* The flow's counts as fg_flow_new and the hooks keep them: opened (and
 * established) on its backend's row of its worker, least-connections. */
void
fg_state_count_restored(struct fg_worker *w, struct fg_lb_table *lb,
			const struct ct_rec *r, const struct ct_rec_ids *ids)
{
	uint16_t sid = lb->svc_by_id[ids->service];
	const struct fg_lb_service *s = sid ? &lb->services[sid - 1] : NULL;
	const struct fg_lb_backend *b = s ? fg_lb_backend_get(s, ids->backend) : NULL;
	uint64_t *be;

	if (b == NULL || (r->flags & CT_REC_F_FRAG))
		return;            /* no flow of its own (conns_backend) */
	be = &lb->core[w->idx].be[(size_t)b->stat_idx * FG_BC_MAX];
	be[FG_BC_conns_opened]++;
	if (r->state == CT_ST_ESTABLISHED)
		be[FG_BC_conns_established]++;
	if (s->sched == FG_SCHED_LC && b->stat_idx < w->lc_size &&
	    r->state != CT_ST_TIME_WAIT && r->state != CT_ST_CLOSE)
		w->lc_active[b->stat_idx]++;
}

struct fg_state_bemap *
fg_state_bemap_build(const struct fg_lb_table *lb)
{
	struct fg_state_bemap *m = malloc(sizeof(*m));

	if (m != NULL && be_map_build(lb, &m->m) < 0) {
		free(m);
		return NULL;
	}
	return m;
}

void
fg_state_bemap_free(struct fg_state_bemap *m)
{
	if (m != NULL)
		free(m->m.slot);
	free(m);
}

int
fg_state_resolve(const struct fg_dp *dp, const struct fg_lb_table *lb,
		 const struct fg_state_bemap *m, const struct ct_rec *r,
		 struct ct_rec_ids *ids, unsigned int *worker)
{
	const struct fg_lb_service *s = rec_service(lb, r);
	const struct fg_lb_backend *b;
	bool nat = r->flags & CT_REC_F_NAT;
	unsigned int wi;

	if (s == NULL)
		return FG_STATE_FLOW_service_gone;
	if (nat != (s->mode == FG_MODE_NAT))
		return FG_STATE_FLOW_mode_changed;
	b = rec_backend(lb, &m->m, s, r);
	if (b == NULL)
		return FG_STATE_FLOW_backend_gone;
	wi = fg_state_owner(dp, r->family, &r->key, r->flags & CT_REC_F_FRAG);
	memset(ids, 0, sizeof(*ids));
	if (nat) {
		int li = local_index(dp, r->family, ct_key_daddr(&r->reply, r->family));

		if (li < 0)
			return FG_STATE_FLOW_nat_local_gone;
		if (fg_state_owner(dp, r->family, &r->reply, false) != wi)
			return FG_STATE_FLOW_nat_split;
		ids->nat_addr = (uint8_t)li;
	}
	ids->service = (uint16_t)s->id;
	ids->backend = b->id;
	*worker = wi;
	return -1;
}

int
fg_state_restore_refusal(int rc)
{
	if (rc == -ETIME)
		return FG_STATE_FLOW_expired;
	if (rc == -EEXIST)
		return FG_STATE_FLOW_duplicate;
	return FG_STATE_FLOW_table_full;
}

/* One record into its worker's shard; the refusal, or -1 when restored. */
static int
restore_one(struct load_ctx *c, struct ct_rec *r)
{
	struct ct_rec_ids ids;
	unsigned int wi;
	int why = fg_state_resolve(c->dp, c->lb, c->m, r, &ids, &wi), rc;

	if (why >= 0)
		return why;
	r->idle_ms = sat_add(r->idle_ms, c->gap_ms);
	r->life_ms = sat_add(r->life_ms, c->gap_ms);
	if (r->probation_ms)
		r->probation_ms = sat_add(r->probation_ms, c->gap_ms);
	rc = ct_rec_restore(c->dp->workers[wi]->ct, r, &ids, c->now, NULL);
	if (rc < 0)
		return fg_state_restore_refusal(rc);
	fg_state_count_restored(c->dp->workers[wi], c->lb, r, &ids);
	return -1;
}

static void
restore_flows(struct fg_dp *dp, const struct fg_state_view *v, uint64_t gap_ms)
{
	struct load_ctx c = {.dp = dp, .lb = dp->lb, .now = rte_rdtsc(), .gap_ms = gap_ms};
	size_t off = 0;

	if ((c.m = fg_state_bemap_build(c.lb)) == NULL) {
		dp->state.refused[FG_STATE_FLOW_table_full] += v->n_flows;
		FG_LOG(ERR, "state: out of memory: no flow restored");
		return;
	}
	for (uint32_t i = 0; i < v->n_flows; i++) {
		struct ct_rec r;
		int why;

		off += (size_t)ct_rec_decode(v->flows + off, v->flows_len - off, &r);
		why = restore_one(&c, &r);
		if (why >= 0) {
			dp->state.refused[why]++;
			continue;
		}
		dp->state.restored++;
		dp->state.restored_nat += !!(r.flags & CT_REC_F_NAT);
	}
	for (unsigned int i = 0; i < dp->n_workers; i++)
		dp->workers[i]->lc_generation = c.lb->generation;
	fg_state_bemap_free(c.m);
}

/* Learned neighbours back, aged by the time since they were confirmed
 * (the gap included); statics are the config's. */
static void
restore_neigh(struct fg_dp *dp, const struct fg_state_view *v, uint64_t gap_ms)
{
	struct fg_neigh_table tmp = {.mask = v->n_neigh ? v->n_neigh - 1 : 0};
	uint64_t now = rte_rdtsc();
	struct fg_neigh_table *nt;

	if (v->n_neigh == 0)
		return;
	tmp.e = calloc(v->n_neigh, sizeof(*tmp.e));
	if (tmp.e == NULL)
		return;
	for (uint32_t i = 0; i < v->n_neigh; i++) {
		struct fg_neigh_entry *e = &tmp.e[i];
		struct fg_state_neigh n;
		uint64_t age;

		fg_state_neigh_get(v, i, &n);
		for (unsigned int p = 0; p < dp->n_ports && !e->used; p++) {
			if (strcmp(dp->ports[p].cfg.name, n.port) != 0)
				continue;
			age = ((uint64_t)n.age_ms + gap_ms) * dp->hz / 1000;
			e->used = age < now;
			e->family = n.family;
			e->port = (uint8_t)p;
			memcpy(e->addr, n.addr, 16);
			memcpy(e->mac.addr_bytes, n.mac, 6);
			e->learned_tsc = now - age;
		}
	}
	/* ageing drops what is past FG_NEIGH_AGE_S and marks the stale */
	nt = fg_neigh_table_build_aged(dp->cfg, &tmp, NULL, 0, now, dp->neigh_age);
	free(tmp.e);
	if (nt == NULL)
		return;
	for (uint32_t i = 0; i <= nt->mask; i++)
		dp->state.neigh_restored += nt->e[i].used && !nt->e[i].is_static;
	fg_neigh_table_free(dp->neigh);   /* no worker runs yet */
	dp->neigh = nt;
}

/* The longest timeout of any state (the config's over the defaults, as
 * the shards hold them): older files hold expired flows only. */
static uint64_t
longest_timeout_ms(const struct fg_dp *dp)
{
	struct ct_config cc;
	uint32_t ms = 0;

	ct_config_defaults(&cc);
	fg_config_ct(dp->cfg, &cc);
	for (int st = 1; st < CT_ST_MAX; st++)
		ms = RTE_MAX(ms, cc.timeouts.ms[st]);
	return ms;
}

static void
log_loaded(const struct fg_dp *dp, const char *path)
{
	const struct fg_state_stats *st = &dp->state;
	char why[512] = "";
	size_t n = 0;

	for (int r = 0; r < FG_STATE_FLOW_MAX; r++)
		if (st->refused[r] && n < sizeof(why))
			n += (size_t)snprintf(why + n, sizeof(why) - n, "%s %s %" PRIu64,
					      n ? "," : "; refused:",
					      fg_state_flow_refuse_names[r], st->refused[r]);
	FG_LOG(NOTICE, "state: restored %" PRIu64 " of %" PRIu64 " flows (%" PRIu64
	       " NAT, %" PRIu64 " removed backends kept) and %" PRIu64 " neighbours from %s, "
	       "written %" PRIu64 " ms before by flowgate %s with %u workers (now %u), "
	       "in %" PRIu64 " ms%s", st->restored, st->flows_in_file, st->restored_nat,
	       st->tombstones, st->neigh_restored, path, st->gap_ms, st->writer,
	       st->writer_workers, dp->n_workers, st->load_us / 1000, why);
}

static void
file_refused(struct fg_dp *dp, const char *path, enum fg_state_file_refuse why,
	     const char *detail)
{
	dp->state.file_refused[why]++;
	FG_LOG(ERR, "state: %s not loaded (state_file_refused %s: %s%s%s); starting with "
	       "empty tables", path, fg_state_file_refuse_names[why],
	       fg_state_file_refuse_help[why], detail ? ": " : "", detail ? detail : "");
}

/* Restores what the view holds, @p gap_ms after it was written. */
static void
load_view(struct fg_dp *dp, const struct fg_state_view *v, uint64_t gap_ms)
{
	dp->state.loaded = true;
	dp->state.written_ns = v->written_ns;
	memcpy(dp->state.writer, v->writer, sizeof(dp->state.writer));
	dp->state.writer_workers = v->workers;
	dp->state.gap_ms = gap_ms;
	dp->state.flows_in_file = v->n_flows;
	tombstones_stage(dp, v);
	restore_flows(dp, v, gap_ms);
	restore_neigh(dp, v, gap_ms);
}

int
fg_dp_state_load(struct fg_dp *dp)
{
	const char *path = dp->params.state_path;
	uint64_t t0 = mono_us(), now_ns = fg_state_clock_ns(CLOCK_REALTIME), gap_ms;
	struct fg_state_view v;
	enum fg_state_file_refuse why;
	struct stat sb;
	void *map = NULL;
	int fd;

	if (path == NULL)
		return 0;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT) {
		FG_LOG(INFO, "state: no %s: starting with empty tables", path);
		return 0;
	}
	if (fd < 0 || fstat(fd, &sb) != 0 ||
	    (sb.st_size > 0 && (map = mmap(NULL, (size_t)sb.st_size, PROT_READ,
					   MAP_PRIVATE, fd, 0)) == MAP_FAILED)) {
		file_refused(dp, path, FG_STATE_FILE_unreadable, strerror(errno));
		if (fd >= 0)
			close(fd);
		return 0;
	}
	close(fd);
	why = fg_state_parse(map ? map : (const uint8_t *)"", map ? (size_t)sb.st_size : 0, &v);
	gap_ms = why == FG_STATE_FILE_OK && now_ns > v.written_ns ?
		 (now_ns - v.written_ns) / 1000000 : 0;
	if (why == FG_STATE_FILE_OK && gap_ms > longest_timeout_ms(dp))
		why = FG_STATE_FILE_stale;
	if (why != FG_STATE_FILE_OK) {
		file_refused(dp, path, why, NULL);
	} else {
		load_view(dp, &v, gap_ms);
		dp->state.load_us = mono_us() - t0;
		log_loaded(dp, path);
	}
	if (map != NULL)
		munmap(map, (size_t)sb.st_size);
	/* loaded once: a later start (after a crash) must not load it again;
	 * a refused one stays for a build that reads it, unless stale */
	if (why == FG_STATE_FILE_OK || why == FG_STATE_FILE_stale)
		unlink(path);
	return 0;
}
