/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * /metrics of flowgate-xdp (fgx_daemon.h), served by control/fg_promserve.c
 * as the DPDK daemon's is.  Family names are the DPDK daemon's
 * (dataplane/fg_metrics.h) wherever the series mean the same thing, and
 * come from the same X-macro lists (fg_counters.h, FGX_PORT_COUNTER_LIST,
 * ct.h, FG_CTL_COUNTER_LIST); a "core" is a CPU.  XDP's own:
 * flowgate_xdp_attached{interface,mode}.  Not written (the program does
 * not count them): per-service counters, the DPDK-only core counters and
 * conntrack shard internals, load placement.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>

#include "ct.h"
#include "fg_config_parse.h"
#include "fg_counters.h"
#include "fg_promserve.h"
#include "fgx_daemon.h"
#include "fgx_maps.h"

#ifndef FG_VERSION
#define FG_VERSION "unknown"
#endif

static void render_cores(FILE *f, const uint64_t *pc, int ncpu)
{
	char name[160];

	for (int c = 0; c < FG_CC_MAX; c++) {
		fg_prom_family3(f, name, sizeof(name), "flowgate_core_", fg_core_counter_names[c],
				"_total", "counter", fg_core_counter_help[c]);
		for (int i = 0; i < ncpu; i++)
			fprintf(f, "%s{core=\"%d\"} %" PRIu64 "\n", name, i,
				pc[(size_t)i * FGX_CNT_N + c]);
	}
	fg_prom_family(f, "flowgate_drops_total", "counter",
		       "packets dropped, by core and reason (pkt/fg_counters.h)");
	for (int i = 0; i < ncpu; i++)
		for (int r = 1; r < FG_DROP_MAX; r++)
			fprintf(f, "flowgate_drops_total{core=\"%d\",reason=\"%s\"} %" PRIu64 "\n",
				i, fg_drop_names[r], pc[(size_t)i * FGX_CNT_N + FGX_CNT_DROP(r)]);
}

static void render_port(FILE *f, const struct xd *d)
{
	uint64_t pc[FGX_PC_MAX];
	char name[96], dev[2 * IF_NAMESIZE];

	if (fgx_port_counters(d->ifname, pc))
		return;
	fg_metrics_label_escape(d->ifname, dev, sizeof(dev));
	for (int c = 0; c < FGX_PC_MAX; c++) {
		fg_prom_family3(f, name, sizeof(name), "flowgate_port_", fgx_port_counter_names[c],
				"_total", "counter", fgx_port_counter_help[c]);
		fprintf(f, "%s{port=\"0\",device=\"%s\"} %" PRIu64 "\n", name, dev, pc[c]);
	}
	fg_prom_family(f, "flowgate_xdp_attached", "gauge",
		       "1: the XDP program runs on the interface, in this mode");
	fprintf(f, "flowgate_xdp_attached{interface=\"%s\",mode=\"%s\"} 1\n", dev,
		fgx_mode_name(d->att.mode));
}

static void render_ct(FILE *f, const struct fgx_census *c, int ncpu, uint32_t capacity)
{
	fg_prom_family(f, "flowgate_conntrack_capacity", "gauge",
		       "flows a core's conntrack shard holds (XDP: one LRU for all "
		       "CPUs, capacity / CPUs an even share)");
	for (int i = 0; i < ncpu; i++)
		fprintf(f, "flowgate_conntrack_capacity{core=\"%d\"} %u\n", i,
			capacity / (uint32_t)ncpu);
	if (!c)
		return;
	fg_prom_family(f, "flowgate_conntrack_entries", "gauge",
		       "live conntrack entries by core and state");
	for (int i = 0; i < ncpu && i < FG_CTL_MAX_CORES; i++)
		for (int s = 1; s < CT_ST_MAX; s++)
			fprintf(f, "flowgate_conntrack_entries{core=\"%d\",state=\"%s\"} %" PRIu64
				"\n", i, ct_state_names[s], c->by_cpu_state[i][s]);
}

/* The "service" label: its name, else VIP:PORT/PROTO (escaped). */
static void svc_label(const struct fg_service_cfg *s, char *out, size_t len)
{
	char spec[96];

	fg_service_spec_format(&s->vip, s->port, s->proto, spec, sizeof(spec));
	fg_metrics_label_escape(s->name[0] ? s->name : spec, out, len);
}

static void render_services(FILE *f, const struct fg_config *cfg)
{
	char sl[192], spec[96], spec_e[192];

	fg_prom_family(f, "flowgate_service_info", "gauge",
		       "one series per service: its VIP:PORT/PROTO, forwarding mode and scheduler");
	for (uint32_t i = 0; i < cfg->n_services; i++) {
		const struct fg_service_cfg *s = &cfg->services[i];

		svc_label(s, sl, sizeof(sl));
		fg_service_spec_format(&s->vip, s->port, s->proto, spec, sizeof(spec));
		fg_metrics_label_escape(spec, spec_e, sizeof(spec_e));
		fprintf(f, "flowgate_service_info{service=\"%s\",vip=\"%s\",mode=\"%s\","
			"sched=\"%s\",id=\"%u\"} 1\n", sl, spec_e, fg_mode_name(s->mode),
			fg_sched_name(s->sched), s->id);
	}
	fg_prom_family(f, "flowgate_service_backends", "gauge",
		       "backends of the service in the running config");
	for (uint32_t i = 0; i < cfg->n_services; i++) {
		svc_label(&cfg->services[i], sl, sizeof(sl));
		fprintf(f, "flowgate_service_backends{service=\"%s\"} %u\n", sl,
			cfg->services[i].n_backends);
	}
	fg_prom_family(f, "flowgate_service_usable_backends", "gauge",
		       "backends of the service that take new flows");
	for (uint32_t i = 0; i < cfg->n_services; i++) {
		const struct fg_service_cfg *s = &cfg->services[i];
		uint32_t u = 0;

		for (uint32_t j = 0; j < s->n_backends; j++)
			u += s->backends[j].weight && !s->backends[j].drained &&
			     !s->backends[j].health_down;
		svc_label(s, sl, sizeof(sl));
		fprintf(f, "flowgate_service_usable_backends{service=\"%s\"} %u\n", sl, u);
	}
}

/* One backend's series values: weight, state, counters, connections. */
struct be_row {
	char sl[192], bl[192];
	uint32_t weight;
	int slot;
	const char *state;
	uint64_t c[3];          /* packets, bytes, new_flows */
	uint64_t active, inactive;
	int checked;
	uint64_t hc_ok, hc_fail;
};

static struct be_row *backend_rows(struct xd *d, const struct fgx_census *c, size_t *n)
{
	struct be_row *rows;
	size_t k = 0, total = 0;

	for (uint32_t i = 0; i < d->cfg.n_services; i++)
		total += d->cfg.services[i].n_backends;
	rows = calloc(total ? total : 1, sizeof(*rows));
	for (uint32_t i = 0; rows && i < d->cfg.n_services; i++) {
		const struct fg_service_cfg *s = &d->cfg.services[i];

		for (uint32_t j = 0; j < s->n_backends; j++, k++) {
			struct be_row *r = &rows[k];
			const struct fg_backend_cfg *b = &s->backends[j];
			char a[64];

			svc_label(s, r->sl, sizeof(r->sl));
			fg_addr_format(&b->addr, a, sizeof(a));
			fg_prom_backend_label(a, b->addr.family == AF_INET6, b->port, r->bl,
					      sizeof(r->bl));
			r->weight = b->weight;
			r->state = b->health_down ? "down" : b->drained || !b->weight ?
				   "drained" : "up";
			r->slot = fgx_backend_slot(d->x, s->id, b->id);
			if (r->slot >= 0)
				fgx_backend_counters(d->x, (uint32_t)r->slot, &r->c[0], &r->c[1],
						     &r->c[2]);
			if (r->slot >= 0 && c) {
				r->active = c->active[r->slot];
				r->inactive = c->inactive[r->slot];
			}
			r->checked = d->health && fg_health_counters(d->health, s->id, b->id,
								     &r->hc_ok, &r->hc_fail) == 0;
		}
	}
	*n = k;
	return rows;
}

static void render_backends(FILE *f, const struct be_row *rows, size_t n)
{
	static const char *const states[] = { "up", "drained", "down", "gone" };
	static const int bc[3] = { FG_BC_packets, FG_BC_bytes, FG_BC_new_flows };
	char name[160];

	fg_prom_family(f, "flowgate_backend_weight", "gauge", "configured backend weight");
	for (size_t k = 0; k < n; k++)
		fprintf(f, "flowgate_backend_weight{service=\"%s\",backend=\"%s\"} %u\n",
			rows[k].sl, rows[k].bl, rows[k].weight);
	fg_prom_family(f, "flowgate_backend_state", "gauge",
		       "1 for the backend's current state (up, drained, down, gone), 0 for the others");
	for (size_t k = 0; k < n; k++)
		for (unsigned int s = 0; s < 4; s++)
			fprintf(f, "flowgate_backend_state{service=\"%s\",backend=\"%s\","
				"state=\"%s\"} %d\n", rows[k].sl, rows[k].bl, states[s],
				!strcmp(states[s], rows[k].state));
	fg_prom_family(f, "flowgate_backend_connections", "gauge",
		       "tracked flows of the backend by state: active = ESTABLISHED (ipvsadm "
		       "ActiveConn), inactive = any other state (InActConn)");
	for (size_t k = 0; k < n; k++) {
		fprintf(f, "flowgate_backend_connections{service=\"%s\",backend=\"%s\","
			"state=\"active\"} %" PRIu64 "\n", rows[k].sl, rows[k].bl, rows[k].active);
		fprintf(f, "flowgate_backend_connections{service=\"%s\",backend=\"%s\","
			"state=\"inactive\"} %" PRIu64 "\n", rows[k].sl, rows[k].bl,
			rows[k].inactive);
	}
	fg_prom_family(f, "flowgate_backend_health_checks_total", "counter",
		       "health-check probes of the backend, by result (checked backends only)");
	for (size_t k = 0; k < n; k++) {
		if (!rows[k].checked)
			continue;
		fprintf(f, "flowgate_backend_health_checks_total{service=\"%s\",backend=\"%s\","
			"result=\"success\"} %" PRIu64 "\n", rows[k].sl, rows[k].bl, rows[k].hc_ok);
		fprintf(f, "flowgate_backend_health_checks_total{service=\"%s\",backend=\"%s\","
			"result=\"failure\"} %" PRIu64 "\n", rows[k].sl, rows[k].bl,
			rows[k].hc_fail);
	}
	for (int i = 0; i < 3; i++) {
		fg_prom_family3(f, name, sizeof(name), "flowgate_backend_",
				fg_backend_counter_names[bc[i]], "_total", "counter",
				fg_backend_counter_help[bc[i]]);
		for (size_t k = 0; k < n; k++)
			fprintf(f, "%s{service=\"%s\",backend=\"%s\"} %" PRIu64 "\n", name,
				rows[k].sl, rows[k].bl, rows[k].c[i]);
	}
}

static void render_control(FILE *f, struct fg_ctl_server *srv)
{
	struct fg_ctl_counters cc;
	char name[96];

	if (!srv)
		return;
	fg_ctl_server_counters(srv, &cc);
#define FG_X(n) \
	fg_prom_family3(f, name, sizeof(name), "flowgate_control_", #n, "_total", "counter", \
			"control socket (fgctl): " #n " (control/fg_ctl_server.h FG_CTL_COUNTER_LIST)"); \
	fprintf(f, "%s %" PRIu64 "\n", name, cc.n);
	FG_CTL_COUNTER_LIST(FG_X)
#undef FG_X
}

int fgx_view_metrics(FILE *f, void *ctx)
{
	struct xd *d = ctx;
	int ncpu = fgx_ncpus(), rc;
	uint64_t sum[FGX_CNT_N], *pc = calloc((size_t)(ncpu > 0 ? ncpu : 1) * FGX_CNT_N,
					      sizeof(*pc));
	struct be_row *rows;
	struct utsname u;
	size_t n = 0;

	if (!pc)
		return -ENOMEM;
	rc = fgx_counters(d->x, sum, pc);
	if (rc) {
		free(pc);
		return rc;
	}
	uname(&u);
	fg_prom_family(f, "flowgate_build_info", "gauge",
		       "flowgate version and, for flowgate-xdp, the kernel (value always 1)");
	fprintf(f, "flowgate_build_info{version=\"%s\",dataplane=\"xdp\",kernel=\"%s\"} 1\n",
		FG_VERSION, u.release);
	fg_prom_family(f, "flowgate_workers", "gauge", "worker cores (XDP: possible CPUs)");
	fprintf(f, "flowgate_workers %d\n", ncpu);
	render_cores(f, pc, ncpu);
	free(pc);
	render_port(f, d);
	pthread_mutex_lock(&d->cfg_lock);
	{
		const struct fgx_census *c = fgx_view_census(d);

		render_ct(f, c, ncpu, d->cfg.ct_capacity);
		render_services(f, &d->cfg);
		rows = backend_rows(d, c, &n);
	}
	pthread_mutex_unlock(&d->cfg_lock);
	if (rows)
		render_backends(f, rows, n);
	free(rows);
	render_control(f, d->srv);
	return ferror(f) ? -EIO : rows ? 0 : -ENOMEM;
}
