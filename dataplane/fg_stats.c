/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The stats model (fg_stats.h): the snapshot every reader renders, the
 * /flowgate/ telemetry commands and the counters printed at exit.
 *
 * Readers run on control-side threads (control, telemetry, metrics): they
 * take fg_dp::cfg_lock so the service table they walk is not freed under
 * them (the lock is never taken on the packet path), and read the workers'
 * counters racily, which is fine for 64-bit aligned counters on the
 * supported 64-bit targets.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_telemetry.h>

#include "fg_config_parse.h"
#include "fg_dp_private.h"
#include "fg_worker_private.h"
#include "fg_proto.h"
#include "fg_stats.h"
#include "fg_load.h"

const char *const fg_stats_backend_state_names[FG_STATS_BE_MAX] = {
#define FG_X(n, d) #n,
	FG_STATS_BACKEND_STATE_LIST(FG_X)
#undef FG_X
};

const char *const fg_stats_backend_state_help[FG_STATS_BE_MAX] = {
#define FG_X(n, d) d,
	FG_STATS_BACKEND_STATE_LIST(FG_X)
#undef FG_X
};

const char *const fg_dp_counter_help[FG_DC_MAX] = {
#define FG_X(n, d) d,
	FG_DP_COUNTER_LIST(FG_X)
#undef FG_X
};

const char *fg_stats_load_state(const struct fg_stats_backend *b)
{
	if (!b->has_load)
		return "none";
	if (!b->load.fresh)
		return b->load.ever ? "stale" : "never";
	return b->load.saturated ? "saturated" : "fresh";
}

enum fg_stats_backend_state fg_stats_backend_state(const struct fg_lb_backend *b)
{
	if (b->gone)
		return FG_STATS_BE_gone;
	if (b->usable)
		return FG_STATS_BE_up;
	return b->health_down ? FG_STATS_BE_down : FG_STATS_BE_drained;
}

/* ----------------------------------------------------------- snapshot */

static void core_add(struct fg_stats_core *sum, const struct fg_stats_core *c)
{
	for (int i = 0; i < FG_CC_MAX; i++)
		sum->cc[i] += c->cc[i];
	for (int i = 0; i < FG_DC_MAX; i++)
		sum->dc[i] += c->dc[i];
	for (int i = 0; i < FG_DROP_MAX; i++)
		sum->drops[i] += c->drops[i];
	if (!c->has_ct)
		return;
	sum->has_ct = true;
#define CT_X(n) sum->ct.n += c->ct.n;
	CT_COUNTER_LIST(CT_X)
#undef CT_X
	for (int i = 0; i < CT_INSFAIL_MAX; i++)
		sum->ct.insert_fail_by[i] += c->ct.insert_fail_by[i];
	for (int i = 0; i < CT_EVICT_MAX; i++)
		sum->ct.evictions[i] += c->ct.evictions[i];
	for (int i = 0; i < CT_ST_MAX; i++) {
		sum->ct.expired[i] += c->ct.expired[i];
		sum->ct.live[i] += c->ct.live[i];
	}
	sum->ct.nat_flows += c->ct.nat_flows;
}

void fg_stats_conns(const uint64_t *c, uint64_t *active, uint64_t *inactive)
{
	uint64_t open = c[FG_BC_conns_opened], closed = c[FG_BC_conns_closed];
	uint64_t est = c[FG_BC_conns_established], unest = c[FG_BC_conns_unestablished];
	uint64_t all = open > closed ? open - closed : 0;

	*active = est > unest ? est - unest : 0;
	if (*active > all)
		*active = all;
	*inactive = all - *active;
}

static void service_fill(const struct fg_lb_table *lb, unsigned int n_workers,
			 const struct fg_lb_service *s, struct fg_stats_service *o)
{
	o->id = s->id;
	snprintf(o->name, sizeof(o->name), "%s", s->name);
	fg_service_spec_format(&s->vip, rte_be_to_cpu_16(s->port_be), s->proto,
			       o->spec, sizeof(o->spec));
	o->label = o->name[0] ? o->name : o->spec;
	o->mode = fg_mode_name(s->mode);
	o->sched = fg_sched_name(s->sched);
	o->n_live = s->n_live;
	o->n_usable = s->n_usable;
	for (int c = 0; c < FG_SC_MAX; c++)
		o->c[c] = fg_lb_svc_counter(lb, n_workers, s, c);
	for (uint32_t j = 0; j < o->n_backends; j++) {
		const struct fg_lb_backend *b = &s->backends[j];
		struct fg_stats_backend *ob = &o->backends[j];

		ob->id = b->id;
		ob->addr = b->addr;
		ob->port = rte_be_to_cpu_16(b->port_be);
		ob->weight = b->weight;
		ob->state = fg_stats_backend_state(b);
		fg_addr_format(&b->addr, ob->addr_str, sizeof(ob->addr_str));
		for (int c = 0; c < FG_BC_MAX; c++)
			ob->c[c] = fg_lb_be_counter(lb, n_workers, b, c);
		fg_stats_conns(ob->c, &ob->active, &ob->inactive);
		o->active += ob->active;
		o->inactive += ob->inactive;
	}
}

int fg_stats_snap_take(struct fg_dp *dp, const char *service, unsigned int flags,
		       struct fg_stats_snap **out)
{
	struct fg_stats_snap *sn = calloc(1, sizeof(*sn));
	int rc = 0, only = -1;

	if (sn == NULL)
		return -ENOMEM;
	sn->n_workers = dp->n_workers;
	sn->sw_rss = dp->sw_rss;
	sn->ct_capacity = dp->ct_capacity;
	sn->state = dp->state;
	fg_sync_stats_get(dp, &sn->sync);
	/* the reply region's size in effect (nat_capacity or its default):
	 * the same in every shard, fixed at creation */
	if (dp->n_workers > 0 && dp->workers[0]->ct != NULL)
		sn->ct_nat_capacity = ct_reply_slots(dp->workers[0]->ct, CT_V4);
	for (unsigned int i = 0; i < dp->n_workers; i++) {
		const struct fg_worker *w = dp->workers[i];
		struct fg_stats_core *c = &sn->core[i];

		memcpy(c->cc, w->cc, sizeof(c->cc));
		memcpy(c->dc, w->dc, sizeof(c->dc));
		memcpy(c->drops, w->drops, sizeof(c->drops));
	}

	sn->n_ports = dp->n_ports;
	for (unsigned int p = 0; p < dp->n_ports; p++) {
		snprintf(sn->port[p].name, sizeof(sn->port[p].name), "%s",
			 dp->cfg ? dp->cfg->ports[p].name : "");
		sn->port[p].ok = fg_port_counters(dp, p, sn->port[p].c) == 0;
	}
	pthread_mutex_lock(&dp->cfg_lock);
	const struct fg_lb_table *lb = dp->lb;

	if (service != NULL) {
		only = lb ? fg_config_find_service(lb->cfg, service) : -ENOENT;
		if (only < 0)
			rc = -ENOENT;
	}
	uint32_t n = lb == NULL || rc < 0 ? 0 : only >= 0 ? 1 : lb->n_services;

	if (n) {
		sn->services = calloc(n, sizeof(*sn->services));
		if (sn->services == NULL)
			rc = -ENOMEM;
	}
	for (uint32_t i = 0, k = 0; rc == 0 && k < n; i++) {
		const struct fg_lb_service *s = &lb->services[i];
		struct fg_stats_service *o = &sn->services[k];

		if (only >= 0 && (uint32_t)only != i)
			continue;
		o->backends = calloc(s->n_backends ? s->n_backends : 1,
				     sizeof(*o->backends));
		if (o->backends == NULL) {
			rc = -ENOMEM;
			break;
		}
		o->n_backends = s->n_backends;
		service_fill(lb, dp->n_workers, s, o);
		if (flags & FG_STATS_SNAP_SVC_CORE) {
			o->core_c = calloc((size_t)dp->n_workers * FG_SC_MAX + 1,
					   sizeof(uint64_t));
			if (o->core_c == NULL) {
				sn->n_services = ++k;
				rc = -ENOMEM;
				break;
			}
			for (unsigned int w = 0; w < dp->n_workers; w++)
				for (int c = 0; c < FG_SC_MAX; c++)
					o->core_c[w * FG_SC_MAX + c] =
						fg_lb_svc_core_counter(lb, w, s, c);
		}
		sn->n_services = ++k;
	}
	pthread_mutex_unlock(&dp->cfg_lock);
	if (rc < 0) {
		fg_stats_snap_free(sn);
		return rc;
	}
	/* the checker's and the control server's own locks, after cfg_lock:
	 * neither calls back into the dataplane while holding them */
	for (uint32_t i = 0; i < sn->n_services; i++)
		for (uint32_t j = 0; j < sn->services[i].n_backends; j++) {
			struct fg_stats_backend *b = &sn->services[i].backends[j];

			b->checked = b->state != FG_STATS_BE_gone &&
				     dp->health != NULL &&
				     fg_health_counters(dp->health, sn->services[i].id, b->id,
							&b->hc_successes,
							&b->hc_failures) == 0;
			b->has_load = b->state != FG_STATS_BE_gone &&
				      dp->health != NULL &&
				      fg_health_load(dp->health, sn->services[i].id, b->id,
						     &b->load) == 0;
		}
	sn->has_ctl = dp->ctl != NULL;
	if (sn->has_ctl)
		fg_ctl_server_counters(dp->ctl, &sn->ctl);

	for (unsigned int i = 0; (flags & FG_STATS_SNAP_CT) && i < dp->n_workers; i++)
		sn->core[i].has_ct = fg_dp_ct_stats(dp, i, &sn->core[i].ct) == 0;
	for (unsigned int i = 0; i < dp->n_workers; i++)
		core_add(&sn->total, &sn->core[i]);
	*out = sn;
	return 0;
}

void fg_stats_snap_free(struct fg_stats_snap *s)
{
	if (s == NULL)
		return;
	for (uint32_t i = 0; i < s->n_services; i++) {
		free(s->services[i].backends);
		free(s->services[i].core_c);
	}
	free(s->services);
	free(s);
}

int fg_stats_key_escape(const char *in, char *out, size_t len)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t o = 0;

	for (const unsigned char *p = (const unsigned char *)in; *p; p++) {
		bool plain = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
			     (*p >= '0' && *p <= '9');
		size_t need = plain ? 1 : 3;

		if (o + need >= len)
			return -ENAMETOOLONG;
		if (plain) {
			out[o++] = (char)*p;
		} else {
			out[o++] = '_';
			out[o++] = hex[*p >> 4];
			out[o++] = hex[*p & 15];
		}
	}
	if (o >= len)
		return -ENAMETOOLONG;
	out[o] = '\0';
	return (int)o;
}

/* ---------------------------------------------------------- telemetry */

static struct fg_dp *g_dp;

static int tel_stats(const char *cmd, const char *params, struct rte_tel_data *d)
{
	struct fg_stats_snap *sn;
	struct rte_tel_data *drops;
	int rc = fg_stats_snap_take(g_dp, NULL, 0, &sn);

	if (rc < 0)
		return rc;
	drops = rte_tel_data_alloc();
	if (drops == NULL) {
		fg_stats_snap_free(sn);
		return -ENOMEM;
	}
	rte_tel_data_start_dict(d);
	rte_tel_data_add_dict_u64(d, "workers", sn->n_workers);
	rte_tel_data_add_dict_u64(d, "sw_rss", sn->sw_rss);
	for (int c = 0; c < FG_CC_MAX; c++)
		rte_tel_data_add_dict_u64(d, fg_core_counter_names[c], sn->total.cc[c]);
	for (int c = 0; c < FG_DC_MAX; c++)
		rte_tel_data_add_dict_u64(d, fg_dp_counter_names[c], sn->total.dc[c]);
	rte_tel_data_start_dict(drops);
	for (int r = 1; r < FG_DROP_MAX; r++)
		rte_tel_data_add_dict_u64(drops, fg_drop_names[r], sn->total.drops[r]);
	rte_tel_data_add_dict_container(d, "drops_by_reason", drops, 0);
	for (unsigned int p = 0; p < sn->n_ports; p++) {
		struct rte_tel_data *pd = rte_tel_data_alloc();
		char name[16];

		if (pd == NULL)
			break;
		rte_tel_data_start_dict(pd);
		for (int c = 0; c < FG_PC_MAX; c++)
			rte_tel_data_add_dict_u64(pd, fg_port_counter_names[c],
						  sn->port[p].c[c]);
		snprintf(name, sizeof(name), "port%u", p);
		rte_tel_data_add_dict_container(d, name, pd, 0);
	}
	fg_stats_snap_free(sn);
	return 0;
}

static int tel_services(const char *cmd, const char *params,
			struct rte_tel_data *d)
{
	struct fg_stats_snap *sn;
	int rc = fg_stats_snap_take(g_dp, NULL, 0, &sn);

	if (rc < 0)
		return rc;
	rte_tel_data_start_dict(d);
	for (uint32_t i = 0; i < sn->n_services; i++) {
		const struct fg_stats_service *s = &sn->services[i];
		struct rte_tel_data *sd;
		char key[RTE_TEL_MAX_STRING_LEN];

		if (fg_stats_key_escape(s->label, key, sizeof(key)) < 0)
			snprintf(key, sizeof(key), "id%u", s->id);
		sd = rte_tel_data_alloc();
		if (sd == NULL)
			break;
		rte_tel_data_start_dict(sd);
		rte_tel_data_add_dict_u64(sd, "id", s->id);
		rte_tel_data_add_dict_string(sd, "name", s->name);
		rte_tel_data_add_dict_string(sd, "service", s->spec);
		rte_tel_data_add_dict_string(sd, "mode", s->mode);
		rte_tel_data_add_dict_string(sd, "sched", s->sched);
		rte_tel_data_add_dict_u64(sd, "backends", s->n_live);
		rte_tel_data_add_dict_u64(sd, "usable_backends", s->n_usable);
		rte_tel_data_add_dict_u64(sd, "active_conns", s->active);
		rte_tel_data_add_dict_u64(sd, "inactive_conns", s->inactive);
		for (int c = 0; c < FG_SC_MAX; c++)
			rte_tel_data_add_dict_u64(sd, fg_service_counter_names[c], s->c[c]);
		if (rte_tel_data_add_dict_container(d, key, sd, 0) < 0)
			rte_tel_data_free(sd);
	}
	fg_stats_snap_free(sn);
	return 0;
}

static int tel_backends(const char *cmd, const char *params,
			struct rte_tel_data *d)
{
	struct fg_stats_snap *sn;
	int rc = fg_stats_snap_take(g_dp, params && params[0] ? params : NULL, 0, &sn);

	rte_tel_data_start_dict(d);
	if (rc == -ENOENT)
		return 0;       /* no such service: an empty dict */
	if (rc < 0)
		return rc;
	for (uint32_t i = 0; i < sn->n_services; i++) {
		const struct fg_stats_service *s = &sn->services[i];
		char skey[RTE_TEL_MAX_STRING_LEN];

		if (fg_stats_key_escape(s->label, skey, sizeof(skey)) < 0)
			snprintf(skey, sizeof(skey), "id%u", s->id);
		for (uint32_t j = 0; j < s->n_backends; j++) {
			const struct fg_stats_backend *b = &s->backends[j];
			struct rte_tel_data *bd;
			char bname[80], bkey[RTE_TEL_MAX_STRING_LEN], key[2 * RTE_TEL_MAX_STRING_LEN];

			if (b->port)
				snprintf(bname, sizeof(bname), b->addr.family == AF_INET6 ?
					 "[%s]:%u" : "%s:%u", b->addr_str, b->port);
			else
				snprintf(bname, sizeof(bname), "%s", b->addr_str);
			/* service/backend, or service/id<N> where that is too long */
			if (fg_stats_key_escape(bname, bkey, sizeof(bkey)) < 0 ||
			    strlen(skey) + 1 + strlen(bkey) >= RTE_TEL_MAX_STRING_LEN)
				snprintf(bkey, sizeof(bkey), "id%u", b->id);
			snprintf(key, sizeof(key), "%s/%s", skey, bkey);
			bd = rte_tel_data_alloc();
			if (bd == NULL)
				break;
			rte_tel_data_start_dict(bd);
			rte_tel_data_add_dict_u64(bd, "id", b->id);
			rte_tel_data_add_dict_string(bd, "service", s->label);
			rte_tel_data_add_dict_string(bd, "addr", b->addr_str);
			rte_tel_data_add_dict_u64(bd, "port", b->port);
			rte_tel_data_add_dict_u64(bd, "weight", b->weight);
			rte_tel_data_add_dict_string(bd, "state",
						     fg_stats_backend_state_names[b->state]);
			rte_tel_data_add_dict_u64(bd, "active_conns", b->active);
			rte_tel_data_add_dict_u64(bd, "inactive_conns", b->inactive);
			for (int c = 0; c < FG_BC_MAX; c++)
				rte_tel_data_add_dict_u64(bd, fg_backend_counter_names[c],
							  b->c[c]);
			if (b->has_load) {
				rte_tel_data_add_dict_string(bd, "load_state",
							     fg_stats_load_state(b));
				rte_tel_data_add_dict_u64(bd, "load_score_milli",
							  b->load.score_milli);
				rte_tel_data_add_dict_u64(bd, "load_age_ms",
							  b->load.ever ? b->load.age_ms : 0);
				for (uint32_t k = 0; k < b->load.n_series; k++) {
					char sk[RTE_TEL_MAX_STRING_LEN];

					if (fg_stats_key_escape(b->load.series[k], sk, sizeof(sk)) > 0)
						rte_tel_data_add_dict_u64(bd, sk,
							(uint64_t)(b->load.raw[k] * 1000.0 + 0.5));
				}
			}
			if (rte_tel_data_add_dict_container(d, key, bd, 0) < 0)
				rte_tel_data_free(bd);
		}
	}
	fg_stats_snap_free(sn);
	return 0;
}

static int tel_ct(const char *cmd, const char *params, struct rte_tel_data *d)
{
	struct fg_stats_snap *sn;
	uint64_t live = 0;
	int rc = fg_stats_snap_take(g_dp, NULL, FG_STATS_SNAP_CT, &sn);

	if (rc < 0)
		return rc;
	rte_tel_data_start_dict(d);
	for (unsigned int i = 0; i < sn->n_workers; i++) {
		const struct ct_stats *st = &sn->core[i].ct;
		struct rte_tel_data *cd;
		char name[16];
		uint64_t n = 0;

		if (!sn->core[i].has_ct)
			continue;
		cd = rte_tel_data_alloc();
		if (cd == NULL)
			break;
		rte_tel_data_start_dict(cd);
		for (int s = 1; s < CT_ST_MAX; s++) {
			n += st->live[s];
			if (st->live[s])
				rte_tel_data_add_dict_u64(cd, ct_state_names[s], st->live[s]);
		}
		rte_tel_data_add_dict_u64(cd, "live", n);
		rte_tel_data_add_dict_u64(cd, "capacity", sn->ct_capacity);
		rte_tel_data_add_dict_u64(cd, "nat_flows", st->nat_flows);
		rte_tel_data_add_dict_u64(cd, "nat_capacity", sn->ct_nat_capacity);
#define CT_X(c) rte_tel_data_add_dict_u64(cd, #c, st->c);
		CT_COUNTER_LIST(CT_X)
#undef CT_X
		for (int r = 0; r < CT_INSFAIL_MAX; r++)
			rte_tel_data_add_dict_u64(cd, ct_insfail_names[r],
						  st->insert_fail_by[r]);
		for (int r = 0; r < CT_EVICT_MAX; r++)
			rte_tel_data_add_dict_u64(cd, ct_evict_names[r], st->evictions[r]);
		live += n;
		snprintf(name, sizeof(name), "core%u", i);
		if (rte_tel_data_add_dict_container(d, name, cd, 0) < 0)
			rte_tel_data_free(cd);
	}
	rte_tel_data_add_dict_u64(d, "live", live);
	fg_stats_snap_free(sn);
	return 0;
}

/* Help texts must stay under RTE_TEL_MAX_STRING_LEN (128) bytes, or the
 * command is not registered. */
/* /flowgate/state: what the start restored from the state file (and what
 * it refused, by reason), as `fgctl stats` "state" and /metrics show it */
static int tel_state(const char *cmd, const char *params, struct rte_tel_data *d)
{
	const struct fg_state_stats *st = &g_dp->state;
	struct rte_tel_data *ref = rte_tel_data_alloc(), *fref = rte_tel_data_alloc();

	if (ref == NULL || fref == NULL) {
		rte_tel_data_free(ref);
		rte_tel_data_free(fref);
		return -ENOMEM;
	}
	rte_tel_data_start_dict(d);
	rte_tel_data_add_dict_u64(d, "loaded", st->loaded);
	rte_tel_data_add_dict_string(d, "writer", st->writer);
#define FG_X(k, v, m, h) rte_tel_data_add_dict_u64(d, k, v);
	FG_STATE_LOAD_LIST(FG_X, st)
#undef FG_X
	rte_tel_data_start_dict(ref);
	for (int r = 0; r < FG_STATE_FLOW_MAX; r++)
		rte_tel_data_add_dict_u64(ref, fg_state_flow_refuse_names[r], st->refused[r]);
	rte_tel_data_add_dict_container(d, "refused", ref, 0);
	rte_tel_data_start_dict(fref);
	for (int r = 1; r < FG_STATE_FILE_MAX; r++)
		rte_tel_data_add_dict_u64(fref, fg_state_file_refuse_names[r],
					  st->file_refused[r]);
	rte_tel_data_add_dict_container(d, "file_refused", fref, 0);
	return 0;
}

/* /flowgate/sync: state sync between nodes, the keys of `fgctl stats`
 * "sync" (peers as a list of dicts) */
static int tel_sync(const char *cmd, const char *params, struct rte_tel_data *d)
{
	struct fg_sync_stats st;
	struct rte_tel_data *ref = rte_tel_data_alloc(), *iref = rte_tel_data_alloc();
	struct rte_tel_data *peers = rte_tel_data_alloc();

	(void)cmd;
	(void)params;
	if (ref == NULL || iref == NULL || peers == NULL) {
		rte_tel_data_free(ref);
		rte_tel_data_free(iref);
		rte_tel_data_free(peers);
		return -ENOMEM;
	}
	fg_sync_stats_get(g_dp, &st);
	rte_tel_data_start_dict(d);
	rte_tel_data_add_dict_u64(d, "on", st.on);
	rte_tel_data_add_dict_u64(d, "ready", st.ready);
	rte_tel_data_add_dict_string(d, "waiting", st.waiting);
	rte_tel_data_add_dict_u64(d, "node", st.node);
	rte_tel_data_add_dict_u64(d, "seq", st.seq);
	rte_tel_data_add_dict_u64(d, "backlog", st.backlog);
	for (int c = 0; c < FG_SYNC_NC_MAX; c++)
		rte_tel_data_add_dict_u64(d, fg_sync_nc_names[c], st.nc[c]);
	for (int c = 0; c < FG_SYNC_WC_MAX; c++)
		rte_tel_data_add_dict_u64(d, fg_sync_wc_names[c], st.wc[c]);
	rte_tel_data_start_dict(ref);
	for (int r = 1; r < FG_SYNC_REFUSE_MAX; r++)
		rte_tel_data_add_dict_u64(ref, fg_sync_refuse_names[r], st.refused[r]);
	rte_tel_data_add_dict_container(d, "refused", ref, 0);
	rte_tel_data_start_dict(iref);
	for (int r = 0; r < FG_STATE_FLOW_MAX; r++)
		rte_tel_data_add_dict_u64(iref, fg_state_flow_refuse_names[r],
					  st.install_refused[r]);
	rte_tel_data_add_dict_container(d, "install_refused", iref, 0);
	rte_tel_data_start_array(peers, RTE_TEL_CONTAINER);
	for (uint32_t i = 0; i < st.n_peers; i++) {
		struct rte_tel_data *p = rte_tel_data_alloc();

		if (p == NULL)
			break;
		rte_tel_data_start_dict(p);
		rte_tel_data_add_dict_string(p, "name", st.peers[i].name);
		rte_tel_data_add_dict_string(p, "addr", st.peers[i].addr);
		rte_tel_data_add_dict_u64(p, "node", st.peers[i].node);
		rte_tel_data_add_dict_int(p, "last_rx_ms", (int)RTE_MIN(st.peers[i].last_rx_ms,
									INT32_MAX));
		rte_tel_data_add_dict_u64(p, "recv_msgs", st.peers[i].recv_msgs);
		rte_tel_data_add_dict_u64(p, "recv_records", st.peers[i].recv_records);
		rte_tel_data_add_dict_u64(p, "refused", st.peers[i].refused);
		rte_tel_data_add_dict_u64(p, "sent_msgs", st.peers[i].sent_msgs);
		rte_tel_data_add_dict_u64(p, "send_failed", st.peers[i].send_failed);
		rte_tel_data_add_dict_u64(p, "dead", st.peers[i].dead);
		rte_tel_data_add_dict_u64(p, "caught_up", st.peers[i].caught_up);
		rte_tel_data_add_dict_u64(p, "announcing", st.peers[i].announcing);
		rte_tel_data_add_array_container(peers, p, 0);
	}
	rte_tel_data_add_dict_container(d, "peers", peers, 0);
	return 0;
}

int fg_stats_telemetry_register(struct fg_dp *dp)
{
	g_dp = dp;
	int rc = rte_telemetry_register_cmd("/flowgate/stats", tel_stats,
			"flowgate per-core counters summed, drops by reason. No parameters");

	rc |= rte_telemetry_register_cmd("/flowgate/services", tel_services,
			"flowgate services, keyed by name (or VIP:PORT/PROTO) with bytes "
			"outside [A-Za-z0-9] as _XX hex");
	rc |= rte_telemetry_register_cmd("/flowgate/backends", tel_backends,
			"flowgate backends, keyed <service key>/<escaped addr[:port]>. "
			"Parameter: service (optional)");
	rc |= rte_telemetry_register_cmd("/flowgate/ct", tel_ct,
			"flowgate conntrack per core: live flows by state, counters. No parameters");
	rc |= rte_telemetry_register_cmd("/flowgate/sync", tel_sync,
			"flowgate state sync between nodes: peers, lag, sent / received / "
			"refused records by reason. No parameters");
	rc |= rte_telemetry_register_cmd("/flowgate/state", tel_state,
			"flowgate restart hand-over: flows restored from the state file at "
			"start, refused by reason. No parameters");
	return rc ? -EINVAL : 0;
}

void fg_stats_print(struct fg_dp *dp, FILE *f)
{
	struct fg_stats_snap *sn;

	if (fg_stats_snap_take(dp, NULL, 0, &sn) < 0) {
		fprintf(f, "flowgate: final counters: out of memory\n");
		return;
	}
	fprintf(f, "flowgate: final counters (%u workers, %s)\n", sn->n_workers,
		sn->sw_rss ? "software RSS" : "hardware RSS / single worker");
	for (int c = 0; c < FG_CC_MAX; c++)
		fprintf(f, "  %-22s %" PRIu64 "\n", fg_core_counter_names[c],
			sn->total.cc[c]);
	for (int c = 0; c < FG_DC_MAX; c++)
		if (sn->total.dc[c])
			fprintf(f, "  %-22s %" PRIu64 "\n", fg_dp_counter_names[c],
				sn->total.dc[c]);
	for (int r = 1; r < FG_DROP_MAX; r++)
		if (sn->total.drops[r])
			fprintf(f, "  drop %-17s %" PRIu64 "\n", fg_drop_names[r],
				sn->total.drops[r]);
	for (unsigned int p = 0; p < sn->n_ports; p++) {
		if (!sn->port[p].ok)
			continue;
		fprintf(f, "  port %u (%s):", p, sn->port[p].name);
		for (int c = 0; c < FG_PC_MAX; c++)
			fprintf(f, " %s %" PRIu64, fg_port_counter_names[c],
				sn->port[p].c[c]);
		fprintf(f, "\n");
	}
	for (uint32_t i = 0; i < sn->n_services; i++) {
		const struct fg_stats_service *s = &sn->services[i];

		fprintf(f, "  service %s: packets %" PRIu64 " new_flows %" PRIu64
			" drops %" PRIu64 "\n", s->label, s->c[FG_SC_packets],
			s->c[FG_SC_new_flows], s->c[FG_SC_drops]);
		for (uint32_t j = 0; j < s->n_backends; j++)
			fprintf(f, "    backend %-20s packets %" PRIu64 " new_flows %"
				PRIu64 "\n", s->backends[j].addr_str,
				s->backends[j].c[FG_BC_packets],
				s->backends[j].c[FG_BC_new_flows]);
	}
	fg_stats_snap_free(sn);
}
