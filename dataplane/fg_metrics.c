/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Prometheus endpoint (fg_metrics.h): the exposition renderer; the HTTP
 * server and the format's writers are control/fg_promserve.c's.
 *
 * Every family below is generated from an X-macro list (fg_counters.h,
 * FG_DP_COUNTER_LIST, ct.h, FG_STATS_BACKEND_STATE_LIST): nothing here names
 * a counter.  Each family's HELP/TYPE is written once, then its series for
 * every core / service / backend, as the format requires (a family's
 * samples must be contiguous).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


#include "fg_dp_counters.h"
#include "fg_dp_private.h"
#include "fg_metrics.h"
#include "fg_opts.h"
#include "fg_stats.h"

/* ------------------------------------------------------------ render */

struct label_vals {
	char service[2 * 96];
	char backend[2 * 80];
};

static void service_labels(const struct fg_stats_service *s, struct label_vals *lv)
{
	fg_metrics_label_escape(s->label, lv->service, sizeof(lv->service));
}

static void backend_labels(const struct fg_stats_service *s,
			   const struct fg_stats_backend *b, struct label_vals *lv)
{
	service_labels(s, lv);
	fg_prom_backend_label(b->addr_str, b->addr.family == AF_INET6, b->port, lv->backend,
			      sizeof(lv->backend));
}

static void render_cores(FILE *f, const struct fg_stats_snap *sn)
{
	char name[160];

	for (int c = 0; c < FG_CC_MAX; c++) {
		fg_prom_family3(f, name, sizeof(name), "flowgate_core_", fg_core_counter_names[c],
			"_total", "counter", fg_core_counter_help[c]);
		for (unsigned int i = 0; i < sn->n_workers; i++)
			fprintf(f, "%s{core=\"%u\"} %" PRIu64 "\n", name, i,
				sn->core[i].cc[c]);
	}
	for (int c = 0; c < FG_DC_MAX; c++) {
		fg_prom_family3(f, name, sizeof(name), "flowgate_core_", fg_dp_counter_names[c],
			"_total", "counter", fg_dp_counter_help[c]);
		for (unsigned int i = 0; i < sn->n_workers; i++)
			fprintf(f, "%s{core=\"%u\"} %" PRIu64 "\n", name, i,
				sn->core[i].dc[c]);
	}
	fg_prom_family(f, "flowgate_drops_total", "counter",
	       "packets dropped, by core and reason (pkt/fg_counters.h)");
	for (unsigned int i = 0; i < sn->n_workers; i++)
		for (int r = 1; r < FG_DROP_MAX; r++)
			fprintf(f, "flowgate_drops_total{core=\"%u\",reason=\"%s\"} %"
				PRIu64 "\n", i, fg_drop_names[r], sn->core[i].drops[r]);
}

static void render_ct(FILE *f, const struct fg_stats_snap *sn)
{
	char name[160];

	fg_prom_family(f, "flowgate_conntrack_capacity", "gauge",
	       "flows a core's conntrack shard holds (conntrack { capacity })");
	for (unsigned int i = 0; i < sn->n_workers; i++)
		fprintf(f, "flowgate_conntrack_capacity{core=\"%u\"} %u\n", i,
			sn->ct_capacity);
	fg_prom_family(f, "flowgate_conntrack_nat_capacity", "gauge",
	       "NAT flows a core's conntrack shard holds, IPv4 (conntrack { nat_capacity })");
	for (unsigned int i = 0; i < sn->n_workers; i++)
		fprintf(f, "flowgate_conntrack_nat_capacity{core=\"%u\"} %u\n", i,
			sn->ct_nat_capacity);
	fg_prom_family(f, "flowgate_conntrack_nat_flows", "gauge",
	       "live NAT flows (reply entries) by core: also in conntrack_entries");
	for (unsigned int i = 0; i < sn->n_workers; i++)
		if (sn->core[i].has_ct)
			fprintf(f, "flowgate_conntrack_nat_flows{core=\"%u\"} %" PRIu64 "\n",
				i, sn->core[i].ct.nat_flows);
	fg_prom_family(f, "flowgate_conntrack_up", "gauge",
	       "1 when the core answered its conntrack counters for this scrape");
	for (unsigned int i = 0; i < sn->n_workers; i++)
		fprintf(f, "flowgate_conntrack_up{core=\"%u\"} %d\n", i,
			sn->core[i].has_ct ? 1 : 0);
	fg_prom_family(f, "flowgate_conntrack_entries", "gauge",
	       "live conntrack entries by core and state");
	for (unsigned int i = 0; i < sn->n_workers; i++)
		for (int s = 1; sn->core[i].has_ct && s < CT_ST_MAX; s++)
			fprintf(f, "flowgate_conntrack_entries{core=\"%u\",state=\"%s\"} %"
				PRIu64 "\n", i, ct_state_names[s], sn->core[i].ct.live[s]);
	fg_prom_family(f, "flowgate_conntrack_expired_total", "counter",
	       "conntrack entries expired, by core and the state they were in");
	for (unsigned int i = 0; i < sn->n_workers; i++)
		for (int s = 1; sn->core[i].has_ct && s < CT_ST_MAX; s++)
			fprintf(f, "flowgate_conntrack_expired_total{core=\"%u\",state=\"%s\"} %"
				PRIu64 "\n", i, ct_state_names[s],
				sn->core[i].ct.expired[s]);
#define CT_X(n) \
	fg_prom_family3(f, name, sizeof(name), "flowgate_conntrack_", #n, "_total", \
		"counter", "conntrack shard counter " #n " (conntrack/ct.h)"); \
	for (unsigned int i = 0; i < sn->n_workers; i++) \
		if (sn->core[i].has_ct) \
			fprintf(f, "%s{core=\"%u\"} %" PRIu64 "\n", name, i, \
				sn->core[i].ct.n);
	CT_COUNTER_LIST(CT_X)
#undef CT_X
	fg_prom_family(f, "flowgate_conntrack_insert_failures_total", "counter",
	       "conntrack inserts refused, by core and reason");
	for (unsigned int i = 0; i < sn->n_workers; i++)
		for (int r = 0; sn->core[i].has_ct && r < CT_INSFAIL_MAX; r++)
			fprintf(f, "flowgate_conntrack_insert_failures_total{core=\"%u\","
				"reason=\"%s\"} %" PRIu64 "\n", i, ct_insfail_names[r],
				sn->core[i].ct.insert_fail_by[r]);
	fg_prom_family(f, "flowgate_conntrack_evictions_total", "counter",
	       "conntrack entries evicted, by core and reason");
	for (unsigned int i = 0; i < sn->n_workers; i++)
		for (int r = 0; sn->core[i].has_ct && r < CT_EVICT_MAX; r++)
			fprintf(f, "flowgate_conntrack_evictions_total{core=\"%u\","
				"reason=\"%s\"} %" PRIu64 "\n", i, ct_evict_names[r],
				sn->core[i].ct.evictions[r]);
}

static void render_services(FILE *f, const struct fg_stats_snap *sn)
{
	struct label_vals lv;
	char name[160], spec[2 * 96];

	fg_prom_family(f, "flowgate_service_info", "gauge",
	       "one series per service: its VIP:PORT/PROTO, forwarding mode and scheduler");
	for (uint32_t i = 0; i < sn->n_services; i++) {
		const struct fg_stats_service *s = &sn->services[i];

		service_labels(s, &lv);
		fg_metrics_label_escape(s->spec, spec, sizeof(spec));
		fprintf(f, "flowgate_service_info{service=\"%s\",vip=\"%s\",mode=\"%s\","
			"sched=\"%s\",id=\"%u\"} 1\n", lv.service, spec, s->mode,
			s->sched, s->id);
	}
	fg_prom_family(f, "flowgate_service_backends", "gauge",
	       "backends of the service in the running config");
	for (uint32_t i = 0; i < sn->n_services; i++) {
		service_labels(&sn->services[i], &lv);
		fprintf(f, "flowgate_service_backends{service=\"%s\"} %u\n", lv.service,
			sn->services[i].n_live);
	}
	fg_prom_family(f, "flowgate_service_usable_backends", "gauge",
	       "backends of the service that take new flows");
	for (uint32_t i = 0; i < sn->n_services; i++) {
		service_labels(&sn->services[i], &lv);
		fprintf(f, "flowgate_service_usable_backends{service=\"%s\"} %u\n",
			lv.service, sn->services[i].n_usable);
	}
	for (int c = 0; c < FG_SC_MAX; c++) {
		fg_prom_family3(f, name, sizeof(name), "flowgate_service_",
			fg_service_counter_names[c], "_total", "counter",
			fg_service_counter_help[c]);
		for (uint32_t i = 0; i < sn->n_services; i++) {
			service_labels(&sn->services[i], &lv);
			fprintf(f, "%s{service=\"%s\"} %" PRIu64 "\n", name, lv.service,
				sn->services[i].c[c]);
		}
	}
}

#define FOR_EACH_BACKEND(sn, s, b) \
	for (const struct fg_stats_service *s = (sn)->services; \
	     s < (sn)->services + (sn)->n_services; s++) \
		for (const struct fg_stats_backend *b = s->backends; \
		     b < s->backends + s->n_backends; b++)

static void render_backends(FILE *f, const struct fg_stats_snap *sn)
{
	struct label_vals lv;
	char name[160];

	fg_prom_family(f, "flowgate_backend_weight", "gauge", "configured backend weight");
	FOR_EACH_BACKEND(sn, s, b) {
		backend_labels(s, b, &lv);
		fprintf(f, "flowgate_backend_weight{service=\"%s\",backend=\"%s\"} %u\n",
			lv.service, lv.backend, b->weight);
	}
	fg_prom_family(f, "flowgate_backend_state", "gauge",
	       "1 for the backend's current state (up, drained, down, gone), 0 for the others");
	FOR_EACH_BACKEND(sn, s, b) {
		backend_labels(s, b, &lv);
		for (int st = 0; st < FG_STATS_BE_MAX; st++)
			fprintf(f, "flowgate_backend_state{service=\"%s\",backend=\"%s\","
				"state=\"%s\"} %d\n", lv.service, lv.backend,
				fg_stats_backend_state_names[st], (int)b->state == st);
	}
	fg_prom_family(f, "flowgate_backend_connections", "gauge",
	       "tracked flows of the backend by state: active = ESTABLISHED (ipvsadm "
	       "ActiveConn), inactive = any other state (InActConn)");
	FOR_EACH_BACKEND(sn, s, b) {
		backend_labels(s, b, &lv);
		fprintf(f, "flowgate_backend_connections{service=\"%s\",backend=\"%s\","
			"state=\"active\"} %" PRIu64 "\n", lv.service, lv.backend, b->active);
		fprintf(f, "flowgate_backend_connections{service=\"%s\",backend=\"%s\","
			"state=\"inactive\"} %" PRIu64 "\n", lv.service, lv.backend, b->inactive);
	}
	fg_prom_family(f, "flowgate_backend_health_checks_total", "counter",
	       "health-check probes of the backend, by result (checked backends only)");
	FOR_EACH_BACKEND(sn, s, b) {
		if (!b->checked)
			continue;
		backend_labels(s, b, &lv);
		fprintf(f, "flowgate_backend_health_checks_total{service=\"%s\",backend=\"%s\","
			"result=\"success\"} %" PRIu64 "\n", lv.service, lv.backend,
			b->hc_successes);
		fprintf(f, "flowgate_backend_health_checks_total{service=\"%s\",backend=\"%s\","
			"result=\"failure\"} %" PRIu64 "\n", lv.service, lv.backend,
			b->hc_failures);
	}
	fg_prom_family(f, "flowgate_backend_load_score", "gauge",
	       "maglev-load: the worker's load score from its own metrics (health metrics backends)");
	FOR_EACH_BACKEND(sn, s, b) {
		if (!b->has_load)
			continue;
		backend_labels(s, b, &lv);
		fprintf(f, "flowgate_backend_load_score{service=\"%s\",backend=\"%s\"} %.3f\n",
			lv.service, lv.backend, (double)b->load.score_milli / 1000.0);
	}
	fg_prom_family(f, "flowgate_backend_load_age_seconds", "gauge",
	       "age of the worker's last good metrics scrape (+Inf: never)");
	FOR_EACH_BACKEND(sn, s, b) {
		if (!b->has_load)
			continue;
		backend_labels(s, b, &lv);
		if (b->load.ever)
			fprintf(f, "flowgate_backend_load_age_seconds{service=\"%s\",backend=\"%s\"} "
				"%.3f\n", lv.service, lv.backend, (double)b->load.age_ms / 1000.0);
		else
			fprintf(f, "flowgate_backend_load_age_seconds{service=\"%s\",backend=\"%s\"} "
				"+Inf\n", lv.service, lv.backend);
	}
	fg_prom_family(f, "flowgate_backend_load_state", "gauge",
	       "1 for the worker's load-signal state (fresh, saturated, stale, never), 0 for the others");
	FOR_EACH_BACKEND(sn, s, b) {
		static const char st[][10] = { "fresh", "saturated", "stale", "never" };

		const char *cur = fg_stats_load_state(b);

		if (!b->has_load)
			continue;
		backend_labels(s, b, &lv);
		for (unsigned int k = 0; k < RTE_DIM(st); k++) {
			const char *name = st[k];

			fprintf(f, "flowgate_backend_load_state{service=\"%s\",backend=\"%s\","
				"state=\"%s\"} %d\n", lv.service, lv.backend, name,
				!strcmp(cur, name));
		}
	}
	fg_prom_family(f, "flowgate_backend_load_series", "gauge",
	       "the raw series the worker's load score is made of, as last scraped");
	FOR_EACH_BACKEND(sn, s, b) {
		if (!b->has_load || !b->load.ever)
			continue;
		backend_labels(s, b, &lv);
		for (uint32_t k = 0; k < b->load.n_series; k++)
			fprintf(f, "flowgate_backend_load_series{service=\"%s\",backend=\"%s\","
				"series=\"%s\"} %.17g\n", lv.service, lv.backend,
				b->load.series[k], b->load.raw[k]);
	}
	fg_prom_family(f, "flowgate_backend_load_scrapes_total", "counter",
	       "metrics scrapes of the worker, by outcome (every outcome but scrapes_ok leaves the signal stale)");
	FOR_EACH_BACKEND(sn, s, b) {
		if (!b->has_load)
			continue;
		backend_labels(s, b, &lv);
		for (unsigned int k = 0; k < FG_LS_MAX; k++)
			fprintf(f, "flowgate_backend_load_scrapes_total{service=\"%s\",backend=\"%s\","
				"outcome=\"%s\"} %" PRIu64 "\n", lv.service, lv.backend,
				fg_loadsig_counter_names[k], b->load.ls[k]);
	}
	for (int c = 0; c < FG_BC_MAX; c++) {
		fg_prom_family3(f, name, sizeof(name), "flowgate_backend_",
			fg_backend_counter_names[c], "_total", "counter",
			fg_backend_counter_help[c]);
		FOR_EACH_BACKEND(sn, s, b) {
			backend_labels(s, b, &lv);
			fprintf(f, "%s{service=\"%s\",backend=\"%s\"} %" PRIu64 "\n", name,
				lv.service, lv.backend, b->c[c]);
		}
	}
}

/* The devices' own counters (rte_eth_stats), by port name. */
static void render_ports(FILE *f, const struct fg_stats_snap *sn)
{
	static const char *const help[FG_PC_MAX] = {
#define FG_X(n, field, d) "device counter: " d,
		FG_PORT_COUNTER_LIST(FG_X)
#undef FG_X
	};
	char name[96], dev[2 * 64];

	for (int c = 0; c < FG_PC_MAX; c++) {
		fg_prom_family3(f, name, sizeof(name), "flowgate_port_", fg_port_counter_names[c],
			"_total", "counter", help[c]);
		for (unsigned int p = 0; p < sn->n_ports; p++) {
			if (!sn->port[p].ok)
				continue;
			fg_metrics_label_escape(sn->port[p].name, dev, sizeof(dev));
			fprintf(f, "%s{port=\"%u\",device=\"%s\"} %" PRIu64 "\n", name,
				p, dev, sn->port[p].c[c]);
		}
	}
}

/* One counter family by reason: names[from..n) with their values. */
static void render_by_reason(FILE *f, const char *name, const char *help,
			     const char *const *names, const uint64_t *v, int from, int n)
{
	fg_prom_family(f, name, "counter", help);
	for (int r = from; r < n; r++)
		fprintf(f, "%s{reason=\"%s\"} %" PRIu64 "\n", name, names[r], v[r]);
}

/* The restart hand-over (fg_state.h): counted once, at start. */
static void render_state(FILE *f, const struct fg_stats_snap *sn)
{
	const struct fg_state_stats *st = &sn->state;

#define FG_X(k, v, m, h) \
	if (sizeof(m) > 1) { \
		fg_prom_family(f, "flowgate_state_" m, "counter", h); \
		fprintf(f, "flowgate_state_" m " %" PRIu64 "\n", (uint64_t)(v)); \
	}
	FG_STATE_LOAD_LIST(FG_X, st)
#undef FG_X
	render_by_reason(f, "flowgate_state_refused_flows_total",
			 "flows of the state file not restored at start, by reason "
			 "(dataplane/fg_state.h FG_STATE_FLOW_REFUSE_LIST)",
			 fg_state_flow_refuse_names, st->refused, 0, FG_STATE_FLOW_MAX);
	render_by_reason(f, "flowgate_state_file_refused_total",
			 "state files not loaded at start, by reason "
			 "(dataplane/fg_state.h FG_STATE_FILE_REFUSE_LIST)",
			 fg_state_file_refuse_names, st->file_refused, 1, FG_STATE_FILE_MAX);
	fg_prom_family(f, "flowgate_state_gap_seconds", "gauge",
	       "from the state file's write by the previous process to its load "
	       "by this one (0: none loaded)");
	fprintf(f, "flowgate_state_gap_seconds %.3f\n", (double)st->gap_ms / 1000.0);
}

/* State sync between nodes (fg_sync.h): only with a sync block. */
static void render_sync(FILE *f, const struct fg_sync_stats *st)
{
	char name[96];

	if (!st->on)
		return;
	for (int c = 0; c < FG_SYNC_NC_MAX; c++) {
		bool gauge = c == FG_SYNC_NC_delay_us_max;

		snprintf(name, sizeof(name), gauge ? "flowgate_sync_%s" : "flowgate_sync_%s_total",
			 fg_sync_nc_names[c]);
		fg_prom_family(f, name, gauge ? "gauge" : "counter", fg_sync_nc_help[c]);
		fprintf(f, "%s %" PRIu64 "\n", name, st->nc[c]);
	}
	for (int c = 0; c < FG_SYNC_WC_MAX; c++) {
		snprintf(name, sizeof(name), "flowgate_sync_%s_total", fg_sync_wc_names[c]);
		fg_prom_family(f, name, "counter", fg_sync_wc_help[c]);
		fprintf(f, "%s %" PRIu64 "\n", name, st->wc[c]);
	}
	render_by_reason(f, "flowgate_sync_refused_total",
			 "sync messages dropped whole, by reason (dataplane/fg_sync.h "
			 "FG_SYNC_REFUSE_LIST)",
			 fg_sync_refuse_names, st->refused, 1, FG_SYNC_REFUSE_MAX);
	render_by_reason(f, "flowgate_sync_install_refused_total",
			 "flow records from peers not installed, by reason (dataplane/fg_state.h "
			 "FG_STATE_FLOW_REFUSE_LIST)",
			 fg_state_flow_refuse_names, st->install_refused, 0, FG_STATE_FLOW_MAX);
	fg_prom_family(f, "flowgate_sync_ready", "gauge",
	       "1 once every peer's catch-up is installed and this node may announce "
	       "(fgctl sync: what it waits for), else 0");
	fprintf(f, "flowgate_sync_ready %d\n", st->ready ? 1 : 0);
	fg_prom_family(f, "flowgate_sync_backlog", "gauge",
	       "flow records queued by the workers, not sent yet");
	fprintf(f, "flowgate_sync_backlog %" PRIu64 "\n", st->backlog);
	fg_prom_family(f, "flowgate_sync_peer_last_rx_seconds", "gauge",
	       "since the last message accepted from a peer (its lag; -1: never)");
	for (uint32_t i = 0; i < st->n_peers; i++)
		fprintf(f, "flowgate_sync_peer_last_rx_seconds{peer=\"%s\"} %.3f\n",
			st->peers[i].name, st->peers[i].last_rx_ms < 0 ? -1.0 :
			(double)st->peers[i].last_rx_ms / 1000.0);
	fg_prom_family(f, "flowgate_sync_peer_caught_up", "gauge",
	       "1 when the peer has sent this node its flows since this node started "
	       "(its status said so), else 0");
	for (uint32_t i = 0; i < st->n_peers; i++)
		fprintf(f, "flowgate_sync_peer_caught_up{peer=\"%s\"} %d\n",
			st->peers[i].name, st->peers[i].caught_up ? 1 : 0);
	fg_prom_family(f, "flowgate_sync_peer_records_total", "counter",
	       "flow records accepted from a peer");
	for (uint32_t i = 0; i < st->n_peers; i++)
		fprintf(f, "flowgate_sync_peer_records_total{peer=\"%s\"} %" PRIu64 "\n",
			st->peers[i].name, st->peers[i].recv_records);
}

int fg_metrics_render(struct fg_dp *dp, FILE *f)
{
	struct fg_stats_snap *sn;
	struct fg_opts_build bi;
	int rc = fg_stats_snap_take(dp, NULL, FG_STATS_SNAP_CT, &sn);

	if (rc < 0)
		return rc;
	fg_opts_build_get(&bi);
	fg_prom_family(f, "flowgate_build_info", "gauge",
	       "flowgate's version and build options, the DPDK in use (value always 1)");
	fprintf(f, "flowgate_build_info{version=\"%s\",dpdk=\"%s\",gpu=\"%s\",march=\"%s\","
		"options=\"%s\"} 1\n", bi.version, bi.dpdk, bi.gpu, bi.march, bi.options);
	fg_prom_family(f, "flowgate_workers", "gauge", "worker lcores");
	fprintf(f, "flowgate_workers %u\n", sn->n_workers);
	render_cores(f, sn);
	render_ports(f, sn);
	render_ct(f, sn);
	render_services(f, sn);
	render_backends(f, sn);
	render_state(f, sn);
	render_sync(f, &sn->sync);
	if (sn->has_ctl) {
		char name[96];

#define FG_X(n) \
		fg_prom_family3(f, name, sizeof(name), "flowgate_control_", #n, "_total", \
			"counter", "control socket (fgctl): " #n \
			" (control/fg_ctl_server.h FG_CTL_COUNTER_LIST)"); \
		fprintf(f, "%s %" PRIu64 "\n", name, sn->ctl.n);
		FG_CTL_COUNTER_LIST(FG_X)
#undef FG_X
	}
	fg_stats_snap_free(sn);
	return ferror(f) ? -EIO : 0;
}

/* ------------------------------------------------------------ server */

struct fg_metrics {
	struct fg_promserve *srv;
};

static int render_cb(FILE *f, void *ctx)
{
	return fg_metrics_render(ctx, f);
}

int fg_metrics_start(struct fg_dp *dp, const char *listen_on, struct fg_metrics **out)
{
	struct fg_metrics *m = calloc(1, sizeof(*m));
	int rc;

	if (m == NULL)
		return -ENOMEM;
	rc = fg_promserve_start(listen_on, "fg-metrics", render_cb, dp, &m->srv);
	if (rc < 0) {
		free(m);
		return rc;
	}
	*out = m;
	return 0;
}

void fg_metrics_stop(struct fg_metrics *m)
{
	if (m == NULL)
		return;
	fg_promserve_stop(m->srv);
	free(m);
}
