/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * flowgate-xdp's operator view (fgx_daemon.h): the control socket's
 * callbacks (config, flows, watch, stats, backend connections), the
 * health checker's verdicts, the audit trail and /metrics.
 *
 * The same view as the DPDK daemon, names included: `fgctl stats` keys
 * and /metrics families are the DPDK ones wherever they mean the same
 * thing (core counters and drop reasons per CPU, the interface's
 * counters, conntrack entries by state, services, backends with their
 * weight, state, active/inactive connections and the packets / bytes /
 * new_flows counters); what the XDP program does not count is left out,
 * not reported as 0.
 *
 * Costs: counters are per-CPU map reads; connection counts and conntrack
 * entries are a walk of the conntrack maps from user space (a census),
 * taken at most once per CENSUS_MS and shared by stats, backend list and
 * /metrics.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <syslog.h>
#include <sys/utsname.h>

#include <bpf/libbpf.h>

#include "ct.h"
#include "fg_config_parse.h"
#include "fg_counters.h"
#include "fg_logline.h"
#include "fg_promserve.h"
#include "fgx_daemon.h"
#include "fgx_maps.h"

#ifndef FG_VERSION
#define FG_VERSION "unknown"
#endif

#define CENSUS_MS 1000

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000ull + (uint64_t)ts.tv_nsec / 1000000ull;
}

int fgx_view_apply_locked(struct xd *d, const struct fg_config *next, char *err,
			  size_t errlen)
{
	struct fg_config copy;
	int rc;

	memset(&copy, 0, sizeof(copy));
	rc = fg_config_copy(&copy, next);
	if (rc)
		return rc;
	if (d->health)
		fg_health_mark(d->health, &copy);
	rc = fgx_apply(d->x, &copy, d->mac, d->mtu, 0, err, errlen);
	if (rc) {
		fg_config_free(&copy);
		return rc;
	}
	fg_config_free(&d->cfg);
	d->cfg = copy;
	d->census_ms = 0;   /* slots may have moved */
	return 0;
}

void fgx_view_free(struct xd *d)
{
	free(d->active);
	free(d->inactive);
	d->active = d->inactive = NULL;
	fgx_watch_destroy(d->watch);
	d->watch = NULL;
}

/* The conntrack census, at most CENSUS_MS old; cfg_lock held.  NULL
 * when it cannot be taken. */
const struct fgx_census *fgx_view_census(struct xd *d)
{
	static struct fgx_census c;
	uint64_t now = mono_ms();

	if (!d->active) {
		d->active = calloc(FGX_MAX_BACKENDS, sizeof(*d->active));
		d->inactive = calloc(FGX_MAX_BACKENDS, sizeof(*d->inactive));
		if (!d->active || !d->inactive)
			return NULL;
	}
	if (d->census_ms && now - d->census_ms < CENSUS_MS)
		return &c;
	c.active = d->active;
	c.inactive = d->inactive;
	if (fgx_census(d->x, &c))
		return NULL;
	d->census_ms = now ? now : 1;
	return &c;
}

/* ---- control ops ------------------------------------------------------ */

static int op_config_get(struct fg_config *out, void *ctx)
{
	struct xd *d = ctx;
	int rc;

	pthread_mutex_lock(&d->cfg_lock);
	rc = fg_config_copy(out, &d->cfg);
	pthread_mutex_unlock(&d->cfg_lock);
	return rc;
}

/* @p cfg as it would be in force (the running conntrack capacity when
 * the file leaves it out) into *tmp, against the running config's
 * restart-only fields: fg_config_restart_diff()'s answer.  cfg_lock held. */
static int in_force(void *ctx, const struct fg_config *cfg, struct fg_config *tmp,
		    char *err, size_t errlen)
{
	struct xd *d = ctx;

	*tmp = *cfg;
	if (tmp->ct_capacity == 0)
		tmp->ct_capacity = d->cfg.ct_capacity;
	return fg_config_restart_diff(&d->cfg, tmp, err, errlen);
}

static int gate_apply(void *ctx, const struct fg_config *next, char *err, size_t errlen)
{
	return fgx_view_apply_locked(ctx, next, err, errlen);
}

void fgx_view_gate_init(struct xd *d)
{
	d->gate = (struct fg_config_gate){ .lock = &d->cfg_lock, .in_force = in_force,
					   .apply = gate_apply, .ctx = d };
}

static int64_t op_flows_walk(const struct fg_flow_filter *f, fg_flow_emit_fn emit,
			     void *emit_arg, bool del, void *ctx)
{
	struct xd *d = ctx;
	int64_t rc;

	/* the emit callback may block on the client: walk under the lock
	 * anyway, the config is only read to name services and backends */
	pthread_mutex_lock(&d->cfg_lock);
	rc = fgx_flows_walk(d->x, &d->cfg, f, emit, emit_arg, del);
	if (del)
		d->census_ms = 0;
	pthread_mutex_unlock(&d->cfg_lock);
	return rc;
}

static int op_flows_count(struct fg_flow_counts *out, void *ctx)
{
	struct xd *d = ctx;

	return fgx_flows_count(d->x, out);
}

static int op_watch_set(bool on, void *ctx)
{
	struct xd *d = ctx;
	int rc = 0;

	pthread_mutex_lock(&d->cfg_lock);
	if (on && !d->watch)
		rc = fgx_watch_create(&d->watch);
	else if (!on) {
		/* the last watcher left: its walk (a copy of every flow) goes */
		fgx_watch_destroy(d->watch);
		d->watch = NULL;
	}
	pthread_mutex_unlock(&d->cfg_lock);
	return rc;
}

static int op_watch_poll(struct fg_flow_event *ev, unsigned int max, void *ctx)
{
	struct xd *d = ctx;
	int n = 0;

	pthread_mutex_lock(&d->cfg_lock);
	if (d->watch)
		n = fgx_watch_poll(d->watch, d->x, &d->cfg, ev, max);
	pthread_mutex_unlock(&d->cfg_lock);
	return n < 0 ? 0 : n;
}

/* A backend's counters by its slot; false when it has none. */
static bool backend_view(struct xd *d, const struct fg_service_cfg *s,
			 const struct fg_backend_cfg *b, const struct fgx_census *c,
			 uint64_t *v /* packets, bytes, new_flows, active, inactive */)
{
	int slot = fgx_backend_slot(d->x, s->id, b->id);

	memset(v, 0, 5 * sizeof(*v));
	if (slot < 0 || fgx_backend_counters(d->x, (uint32_t)slot, &v[0], &v[1], &v[2]))
		return false;
	if (c) {
		v[3] = c->active[slot];
		v[4] = c->inactive[slot];
	}
	return true;
}

static int op_backend_conns(uint32_t service_id, uint32_t backend_id, uint64_t *active,
			    uint64_t *inactive, void *ctx)
{
	struct xd *d = ctx;
	const struct fgx_census *c;
	int slot, rc = -ENOENT;

	pthread_mutex_lock(&d->cfg_lock);
	slot = fgx_backend_slot(d->x, service_id, backend_id);
	c = slot >= 0 ? fgx_view_census(d) : NULL;
	if (c) {
		*active = c->active[slot];
		*inactive = c->inactive[slot];
		rc = 0;
	}
	pthread_mutex_unlock(&d->cfg_lock);
	return rc;
}

static int op_backend_placed(uint32_t service_id, uint32_t backend_id, uint64_t *new_flows,
			     uint64_t *new_flows_load, void *ctx)
{
	struct xd *d = ctx;
	uint64_t p, b;
	int slot, rc = -ENOENT;

	pthread_mutex_lock(&d->cfg_lock);
	slot = fgx_backend_slot(d->x, service_id, backend_id);
	if (slot >= 0)
		rc = fgx_backend_counters(d->x, (uint32_t)slot, &p, &b, new_flows);
	pthread_mutex_unlock(&d->cfg_lock);
	*new_flows_load = 0;    /* maglev only: nothing is placed by load */
	return rc;
}

static void write_core(struct fg_json_writer *w, const char *key, const uint64_t *c)
{
	fg_jw_obj_open(w, key);
	for (int i = 0; i < FG_CC_MAX; i++)
		fg_jw_u64(w, fg_core_counter_names[i], c[i]);
	fg_jw_obj_open(w, "drops_by_reason");
	for (int r = 1; r < FG_DROP_MAX; r++)
		fg_jw_u64(w, fg_drop_names[r], c[FGX_CNT_DROP(r)]);
	fg_jw_obj_close(w);
	fg_jw_obj_close(w);
}

static void write_port(struct xd *d, struct fg_json_writer *w)
{
	uint64_t pc[FGX_PC_MAX];

	fg_jw_arr_open(w, "ports");
	if (fgx_port_counters(d->ifname, pc) == 0) {
		fg_jw_obj_open(w, NULL);
		fg_jw_u64(w, "port", 0);
		fg_jw_str(w, "name", d->ifname);
		for (int c = 0; c < FGX_PC_MAX; c++)
			fg_jw_u64(w, fgx_port_counter_names[c], pc[c]);
		fg_jw_obj_close(w);
	}
	fg_jw_arr_close(w);
}

static void write_service(struct xd *d, struct fg_json_writer *w,
			  const struct fg_service_cfg *s, const struct fgx_census *c)
{
	uint64_t act = 0, inact = 0, v[5];
	char spec[96];

	fg_service_spec_format(&s->vip, s->port, s->proto, spec, sizeof(spec));
	fg_jw_obj_open(w, NULL);
	fg_jw_u64(w, "id", s->id);
	fg_jw_str(w, "name", s->name);
	fg_jw_str(w, "service", spec);
	fg_jw_str(w, "mode", fg_mode_name(s->mode));
	fg_jw_arr_open(w, "backends");
	for (uint32_t j = 0; j < s->n_backends; j++) {
		const struct fg_backend_cfg *b = &s->backends[j];
		char a[64];

		backend_view(d, s, b, c, v);
		act += v[3];
		inact += v[4];
		fg_addr_format(&b->addr, a, sizeof(a));
		fg_jw_obj_open(w, NULL);
		fg_jw_u64(w, "id", b->id);
		fg_jw_str(w, "addr", a);
		fg_jw_u64(w, "port", b->port ? b->port : s->port);
		fg_jw_u64(w, "weight", b->weight);
		fg_jw_str(w, "state", b->health_down ? "down" : b->drained || !b->weight ?
			  "drained" : "up");
		fg_jw_u64(w, "active_conns", v[3]);
		fg_jw_u64(w, "inactive_conns", v[4]);
		fg_jw_u64(w, "packets", v[0]);
		fg_jw_u64(w, "bytes", v[1]);
		fg_jw_u64(w, "new_flows", v[2]);
		fg_jw_obj_close(w);
	}
	fg_jw_arr_close(w);
	fg_jw_u64(w, "active_conns", act);
	fg_jw_u64(w, "inactive_conns", inact);
	fg_jw_obj_close(w);
}

static int op_stats(struct fg_json_writer *w, const char *service, bool per_core,
		    bool zero, void *ctx)
{
	struct xd *d = ctx;
	int ncpu = fgx_ncpus(), rc, sid = -1;
	uint64_t sum[FGX_CNT_N], *pc;
	const struct fgx_census *c;

	if (zero)
		return -ENOTSUP; /* stats --zero: a baseline the DPDK daemon keeps; not here */
	pc = calloc((size_t)ncpu * FGX_CNT_N, sizeof(*pc));
	if (!pc)
		return -ENOMEM;
	rc = fgx_counters(d->x, sum, pc);
	pthread_mutex_lock(&d->cfg_lock);
	if (!rc && service && (sid = fg_config_find_service(&d->cfg, service)) < 0)
		rc = -ENOENT;
	if (rc) {
		pthread_mutex_unlock(&d->cfg_lock);
		free(pc);
		return rc;
	}
	c = fgx_view_census(d);
	fg_jw_obj_open(w, NULL);
	fg_jw_str(w, "dataplane", "xdp");
	fg_jw_str(w, "interface", d->ifname);
	fg_jw_str(w, "attach_mode", fgx_mode_name(d->att.mode));
	fg_jw_u64(w, "workers", (uint64_t)ncpu);
	fg_jw_bool(w, "sw_rss", false);
	fg_jw_str(w, "scope", service ? "service" : "all");
	if (!service) {
		write_core(w, "total", sum);
		if (per_core) {
			fg_jw_arr_open(w, "per_core");
			for (int k = 0; k < ncpu; k++)
				write_core(w, NULL, pc + (size_t)k * FGX_CNT_N);
			fg_jw_arr_close(w);
		}
		write_port(d, w);
	}
	fg_jw_arr_open(w, "services");
	for (uint32_t i = 0; i < d->cfg.n_services; i++)
		if (sid < 0 || (uint32_t)sid == i)
			write_service(d, w, &d->cfg.services[i], c);
	fg_jw_arr_close(w);
	fg_jw_obj_close(w);
	pthread_mutex_unlock(&d->cfg_lock);
	free(pc);
	return fg_jw_error(w);
}

/* fgctl version: this build, the libbpf it runs with, the kernel, the
 * attach mode (the words of flowgate-xdp --version and /metrics'
 * flowgate_build_info). */
static void op_build_info(struct fg_json_writer *w, void *ctx)
{
	const struct xd *d = ctx;
	struct utsname u;
	char lb[32];

	uname(&u);
	snprintf(lb, sizeof(lb), "%u.%u", libbpf_major_version(), libbpf_minor_version());
	fg_jw_str(w, "version", FG_VERSION);
	fg_jw_str(w, "dataplane", "xdp");
	fg_jw_str(w, "libbpf", lb);
	fg_jw_str(w, "kernel", u.release);
	fg_jw_str(w, "attach_mode", fgx_mode_name(d->att.mode));
}

/* the control interface (control/fg_ctl.h), members in name order */
const struct fg_ctl_ops fgx_view_ops = {
	.backend_conns = op_backend_conns,
	.backend_placed = op_backend_placed,
	.build_info = op_build_info,
	.config_apply = fg_config_gate_apply,
	.config_check = fg_config_gate_check,
	.config_get = op_config_get,
	.flows_count = op_flows_count,
	.flows_walk = op_flows_walk,
	.stats = op_stats,
	.watch_poll = op_watch_poll,
	.watch_set = op_watch_set,
};

void fgx_view_audit(const struct fg_ctl_audit *a, void *ctx)
{
	(void)ctx;
	fg_logline(LOG_NOTICE, "flowgate-xdp: audit: uid=%ld pid=%ld cmd=%s args=%s "
		   "result=%s%s%s", a->uid, a->pid, a->cmd, a->args, a->ok ? "ok" : "refused",
		   a->ok ? "" : ": ", a->error);
}

/* The checker's verdict reaches the program through the config, as in
 * the DPDK daemon: copy, fg_health_mark, apply.  on_fail reset deletes
 * the backend's flows from the conntrack maps. */
int fgx_view_health_set(uint32_t service_id, uint32_t backend_id, bool up,
			const char *reason, void *ctx)
{
	struct xd *d = ctx;
	struct fg_flow_filter f;
	char err[256] = "";
	int rc, reset = 0;

	fg_flow_filter_init(&f);
	pthread_mutex_lock(&d->cfg_lock);
	rc = fgx_view_apply_locked(d, &d->cfg, err, sizeof(err));
	for (uint32_t i = 0; rc == 0 && !up && i < d->cfg.n_services; i++) {
		const struct fg_service_cfg *s = &d->cfg.services[i];

		if (s->id != service_id || s->on_fail != FG_FAIL_RESET)
			continue;
		for (uint32_t j = 0; j < s->n_backends; j++)
			if (s->backends[j].id == backend_id) {
				f.service_id = service_id;
				f.has_backend = true;
				f.backend = s->backends[j].addr;
				reset = 1;
			}
	}
	if (reset)
		fgx_flows_walk(d->x, &d->cfg, &f, NULL, NULL, true);
	pthread_mutex_unlock(&d->cfg_lock);
	fg_logline(rc ? LOG_ERR : LOG_NOTICE, "flowgate-xdp: service %u backend %u %s (%s)%s%s", service_id,
		   backend_id, up ? "up" : "down", reason, rc ? ": apply failed: " : "", err);
	return rc;
}
