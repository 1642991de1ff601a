/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Prometheus endpoint (fg_metrics.h): the exposition renderer and a small
 * HTTP/1.x server on its own thread.
 *
 * Every family below is generated from an X-macro list (fg_counters.h,
 * FG_DP_COUNTER_LIST, ct.h, FG_STATS_BACKEND_STATE_LIST): nothing here names
 * a counter.  Each family's HELP/TYPE is written once, then its series for
 * every core / service / backend, as the format requires (a family's
 * samples must be contiguous).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>


#include "fg_dp_counters.h"
#include "fg_dp_private.h"
#include "fg_metrics.h"
#include "fg_opts.h"
#include "fg_stats.h"

/* ------------------------------------------------------------ render */

int fg_metrics_label_escape(const char *in, char *out, size_t len)
{
	size_t o = 0;
	int rc = 0;

	if (len == 0)
		return -ENOSPC;
	for (const char *p = in; *p; p++) {
		const char *rep = *p == '\\' ? "\\\\" : *p == '"' ? "\\\"" :
				  *p == '\n' ? "\\n" : NULL;
		size_t n = rep ? 2 : 1;

		if (o + n >= len) {
			rc = -ENOSPC;
			break;
		}
		if (rep) {
			out[o++] = rep[0];
			out[o++] = rep[1];
		} else {
			out[o++] = *p;
		}
	}
	out[o] = '\0';
	return rc < 0 ? rc : (int)o;
}

/* HELP text: backslash and newline escaped (quotes are literal there). */
static void help_write(FILE *f, const char *s)
{
	for (; *s; s++) {
		if (*s == '\\')
			fputs("\\\\", f);
		else if (*s == '\n')
			fputs("\\n", f);
		else
			fputc(*s, f);
	}
}

static void family(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP %s ", name);
	help_write(f, help);
	fprintf(f, "\n# TYPE %s %s\n", name, type);
}

/* A family whose name is prefix + X-macro name + suffix. */
static void family3(FILE *f, char *name, size_t len, const char *prefix,
		    const char *mid, const char *suffix, const char *type,
		    const char *help)
{
	snprintf(name, len, "%s%s%s", prefix, mid, suffix);
	family(f, name, type, help);
}

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
	char name[80];

	service_labels(s, lv);
	if (b->port)
		snprintf(name, sizeof(name), b->addr.family == AF_INET6 ?
			 "[%s]:%u" : "%s:%u", b->addr_str, b->port);
	else
		snprintf(name, sizeof(name), "%s", b->addr_str);
	fg_metrics_label_escape(name, lv->backend, sizeof(lv->backend));
}

static void render_cores(FILE *f, const struct fg_stats_snap *sn)
{
	char name[160];

	for (int c = 0; c < FG_CC_MAX; c++) {
		family3(f, name, sizeof(name), "flowgate_core_", fg_core_counter_names[c],
			"_total", "counter", fg_core_counter_help[c]);
		for (unsigned int i = 0; i < sn->n_workers; i++)
			fprintf(f, "%s{core=\"%u\"} %" PRIu64 "\n", name, i,
				sn->core[i].cc[c]);
	}
	for (int c = 0; c < FG_DC_MAX; c++) {
		family3(f, name, sizeof(name), "flowgate_core_", fg_dp_counter_names[c],
			"_total", "counter", fg_dp_counter_help[c]);
		for (unsigned int i = 0; i < sn->n_workers; i++)
			fprintf(f, "%s{core=\"%u\"} %" PRIu64 "\n", name, i,
				sn->core[i].dc[c]);
	}
	family(f, "flowgate_drops_total", "counter",
	       "packets dropped, by core and reason (pkt/fg_counters.h)");
	for (unsigned int i = 0; i < sn->n_workers; i++)
		for (int r = 1; r < FG_DROP_MAX; r++)
			fprintf(f, "flowgate_drops_total{core=\"%u\",reason=\"%s\"} %"
				PRIu64 "\n", i, fg_drop_names[r], sn->core[i].drops[r]);
}

static void render_ct(FILE *f, const struct fg_stats_snap *sn)
{
	char name[160];

	family(f, "flowgate_conntrack_capacity", "gauge",
	       "flows a core's conntrack shard holds (conntrack { capacity })");
	for (unsigned int i = 0; i < sn->n_workers; i++)
		fprintf(f, "flowgate_conntrack_capacity{core=\"%u\"} %u\n", i,
			sn->ct_capacity);
	family(f, "flowgate_conntrack_nat_capacity", "gauge",
	       "NAT flows a core's conntrack shard holds, IPv4 (conntrack { nat_capacity })");
	for (unsigned int i = 0; i < sn->n_workers; i++)
		fprintf(f, "flowgate_conntrack_nat_capacity{core=\"%u\"} %u\n", i,
			sn->ct_nat_capacity);
	family(f, "flowgate_conntrack_nat_flows", "gauge",
	       "live NAT flows (reply entries) by core: also in conntrack_entries");
	for (unsigned int i = 0; i < sn->n_workers; i++)
		if (sn->core[i].has_ct)
			fprintf(f, "flowgate_conntrack_nat_flows{core=\"%u\"} %" PRIu64 "\n",
				i, sn->core[i].ct.nat_flows);
	family(f, "flowgate_conntrack_up", "gauge",
	       "1 when the core answered its conntrack counters for this scrape");
	for (unsigned int i = 0; i < sn->n_workers; i++)
		fprintf(f, "flowgate_conntrack_up{core=\"%u\"} %d\n", i,
			sn->core[i].has_ct ? 1 : 0);
	family(f, "flowgate_conntrack_entries", "gauge",
	       "live conntrack entries by core and state");
	for (unsigned int i = 0; i < sn->n_workers; i++)
		for (int s = 1; sn->core[i].has_ct && s < CT_ST_MAX; s++)
			fprintf(f, "flowgate_conntrack_entries{core=\"%u\",state=\"%s\"} %"
				PRIu64 "\n", i, ct_state_names[s], sn->core[i].ct.live[s]);
	family(f, "flowgate_conntrack_expired_total", "counter",
	       "conntrack entries expired, by core and the state they were in");
	for (unsigned int i = 0; i < sn->n_workers; i++)
		for (int s = 1; sn->core[i].has_ct && s < CT_ST_MAX; s++)
			fprintf(f, "flowgate_conntrack_expired_total{core=\"%u\",state=\"%s\"} %"
				PRIu64 "\n", i, ct_state_names[s],
				sn->core[i].ct.expired[s]);
#define CT_X(n) \
	family3(f, name, sizeof(name), "flowgate_conntrack_", #n, "_total", \
		"counter", "conntrack shard counter " #n " (conntrack/ct.h)"); \
	for (unsigned int i = 0; i < sn->n_workers; i++) \
		if (sn->core[i].has_ct) \
			fprintf(f, "%s{core=\"%u\"} %" PRIu64 "\n", name, i, \
				sn->core[i].ct.n);
	CT_COUNTER_LIST(CT_X)
#undef CT_X
	family(f, "flowgate_conntrack_insert_failures_total", "counter",
	       "conntrack inserts refused, by core and reason");
	for (unsigned int i = 0; i < sn->n_workers; i++)
		for (int r = 0; sn->core[i].has_ct && r < CT_INSFAIL_MAX; r++)
			fprintf(f, "flowgate_conntrack_insert_failures_total{core=\"%u\","
				"reason=\"%s\"} %" PRIu64 "\n", i, ct_insfail_names[r],
				sn->core[i].ct.insert_fail_by[r]);
	family(f, "flowgate_conntrack_evictions_total", "counter",
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

	family(f, "flowgate_service_info", "gauge",
	       "one series per service: its VIP:PORT/PROTO, forwarding mode and scheduler");
	for (uint32_t i = 0; i < sn->n_services; i++) {
		const struct fg_stats_service *s = &sn->services[i];

		service_labels(s, &lv);
		fg_metrics_label_escape(s->spec, spec, sizeof(spec));
		fprintf(f, "flowgate_service_info{service=\"%s\",vip=\"%s\",mode=\"%s\","
			"sched=\"%s\",id=\"%u\"} 1\n", lv.service, spec, s->mode,
			s->sched, s->id);
	}
	family(f, "flowgate_service_backends", "gauge",
	       "backends of the service in the running config");
	for (uint32_t i = 0; i < sn->n_services; i++) {
		service_labels(&sn->services[i], &lv);
		fprintf(f, "flowgate_service_backends{service=\"%s\"} %u\n", lv.service,
			sn->services[i].n_live);
	}
	family(f, "flowgate_service_usable_backends", "gauge",
	       "backends of the service that take new flows");
	for (uint32_t i = 0; i < sn->n_services; i++) {
		service_labels(&sn->services[i], &lv);
		fprintf(f, "flowgate_service_usable_backends{service=\"%s\"} %u\n",
			lv.service, sn->services[i].n_usable);
	}
	for (int c = 0; c < FG_SC_MAX; c++) {
		family3(f, name, sizeof(name), "flowgate_service_",
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

	family(f, "flowgate_backend_weight", "gauge", "configured backend weight");
	FOR_EACH_BACKEND(sn, s, b) {
		backend_labels(s, b, &lv);
		fprintf(f, "flowgate_backend_weight{service=\"%s\",backend=\"%s\"} %u\n",
			lv.service, lv.backend, b->weight);
	}
	family(f, "flowgate_backend_state", "gauge",
	       "1 for the backend's current state (up, drained, down, gone), 0 for the others");
	FOR_EACH_BACKEND(sn, s, b) {
		backend_labels(s, b, &lv);
		for (int st = 0; st < FG_STATS_BE_MAX; st++)
			fprintf(f, "flowgate_backend_state{service=\"%s\",backend=\"%s\","
				"state=\"%s\"} %d\n", lv.service, lv.backend,
				fg_stats_backend_state_names[st], (int)b->state == st);
	}
	family(f, "flowgate_backend_connections", "gauge",
	       "tracked flows of the backend by state: active = ESTABLISHED (ipvsadm "
	       "ActiveConn), inactive = any other state (InActConn)");
	FOR_EACH_BACKEND(sn, s, b) {
		backend_labels(s, b, &lv);
		fprintf(f, "flowgate_backend_connections{service=\"%s\",backend=\"%s\","
			"state=\"active\"} %" PRIu64 "\n", lv.service, lv.backend, b->active);
		fprintf(f, "flowgate_backend_connections{service=\"%s\",backend=\"%s\","
			"state=\"inactive\"} %" PRIu64 "\n", lv.service, lv.backend, b->inactive);
	}
	family(f, "flowgate_backend_health_checks_total", "counter",
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
	family(f, "flowgate_backend_load_score", "gauge",
	       "maglev-load: the worker's load score from its own metrics (health metrics backends)");
	FOR_EACH_BACKEND(sn, s, b) {
		if (!b->has_load)
			continue;
		backend_labels(s, b, &lv);
		fprintf(f, "flowgate_backend_load_score{service=\"%s\",backend=\"%s\"} %.3f\n",
			lv.service, lv.backend, (double)b->load.score_milli / 1000.0);
	}
	family(f, "flowgate_backend_load_age_seconds", "gauge",
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
	family(f, "flowgate_backend_load_state", "gauge",
	       "1 for the worker's load-signal state (fresh, saturated, stale, never), 0 for the others");
	FOR_EACH_BACKEND(sn, s, b) {
		static const char *const st[] = { "fresh", "saturated", "stale", "never" };

		if (!b->has_load)
			continue;
		backend_labels(s, b, &lv);
		for (unsigned int k = 0; k < RTE_DIM(st); k++)
			fprintf(f, "flowgate_backend_load_state{service=\"%s\",backend=\"%s\","
				"state=\"%s\"} %d\n", lv.service, lv.backend, st[k],
				!strcmp(fg_stats_load_state(b), st[k]));
	}
	family(f, "flowgate_backend_load_series", "gauge",
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
	family(f, "flowgate_backend_load_scrapes_total", "counter",
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
		family3(f, name, sizeof(name), "flowgate_backend_",
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
		family3(f, name, sizeof(name), "flowgate_port_", fg_port_counter_names[c],
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

/* The restart hand-over (fg_state.h): counted once, at start. */
static void render_state(FILE *f, const struct fg_stats_snap *sn)
{
	const struct fg_state_stats *st = &sn->state;

	family(f, "flowgate_state_restored_flows_total", "counter",
	       "flows restored from the state file at start (--state-file)");
	fprintf(f, "flowgate_state_restored_flows_total %" PRIu64 "\n", st->restored);
	family(f, "flowgate_state_restored_nat_flows_total", "counter",
	       "full-NAT flows among them");
	fprintf(f, "flowgate_state_restored_nat_flows_total %" PRIu64 "\n",
		st->restored_nat);
	family(f, "flowgate_state_refused_flows_total", "counter",
	       "flows of the state file not restored at start, by reason "
	       "(dataplane/fg_state.h FG_STATE_FLOW_REFUSE_LIST)");
	for (int r = 0; r < FG_STATE_FLOW_MAX; r++)
		fprintf(f, "flowgate_state_refused_flows_total{reason=\"%s\"} %" PRIu64 "\n",
			fg_state_flow_refuse_names[r], st->refused[r]);
	family(f, "flowgate_state_file_refused_total", "counter",
	       "state files not loaded at start, by reason "
	       "(dataplane/fg_state.h FG_STATE_FILE_REFUSE_LIST)");
	for (int r = 1; r < FG_STATE_FILE_MAX; r++)
		fprintf(f, "flowgate_state_file_refused_total{reason=\"%s\"} %" PRIu64 "\n",
			fg_state_file_refuse_names[r], st->file_refused[r]);
	family(f, "flowgate_state_gap_seconds", "gauge",
	       "from the state file's write by the previous process to its load "
	       "by this one (0: none loaded)");
	fprintf(f, "flowgate_state_gap_seconds %.3f\n", (double)st->gap_ms / 1000.0);
}

int fg_metrics_render(struct fg_dp *dp, FILE *f)
{
	struct fg_stats_snap *sn;
	struct fg_opts_build bi;
	int rc = fg_stats_snap_take(dp, NULL, FG_STATS_SNAP_CT, &sn);

	if (rc < 0)
		return rc;
	fg_opts_build_get(&bi);
	family(f, "flowgate_build_info", "gauge",
	       "flowgate's version and build options, the DPDK in use (value always 1)");
	fprintf(f, "flowgate_build_info{version=\"%s\",dpdk=\"%s\",gpu=\"%s\",march=\"%s\","
		"options=\"%s\"} 1\n", bi.version, bi.dpdk, bi.gpu, bi.march, bi.options);
	family(f, "flowgate_workers", "gauge", "worker lcores");
	fprintf(f, "flowgate_workers %u\n", sn->n_workers);
	render_cores(f, sn);
	render_ports(f, sn);
	render_ct(f, sn);
	render_services(f, sn);
	render_backends(f, sn);
	render_state(f, sn);
	if (sn->has_ctl) {
		char name[96];

#define FG_X(n) \
		family3(f, name, sizeof(name), "flowgate_control_", #n, "_total", \
			"counter", "control socket (fgctl): " #n \
			" (control/fg_ctl_server.h FG_CTL_COUNTER_LIST)"); \
		fprintf(f, "%s %" PRIu64 "\n", name, sn->ctl.n);
		FG_CTL_COUNTER_LIST(FG_X)
#undef FG_X
	}
	fg_stats_snap_free(sn);
	return ferror(f) ? -EIO : 0;
}

/* -------------------------------------------------------------- HTTP */

int fg_metrics_listen_parse(const char *s, struct sockaddr_storage *ss,
			    socklen_t *len)
{
	char host[64];
	const char *colon, *h = s;
	size_t hl;
	char *end;

	memset(ss, 0, sizeof(*ss));
	if (s == NULL)
		return -EINVAL;
	if (s[0] == '[') {
		const char *rb = strchr(s, ']');

		if (rb == NULL || rb[1] != ':')
			return -EINVAL;
		h = s + 1;
		hl = (size_t)(rb - h);
		colon = rb + 1;
	} else {
		colon = strrchr(s, ':');
		if (colon == NULL || memchr(s, ':', (size_t)(colon - s)) != NULL)
			return -EINVAL;  /* IPv6 needs brackets */
		hl = (size_t)(colon - s);
	}
	if (hl == 0 || hl >= sizeof(host))
		return -EINVAL;
	memcpy(host, h, hl);
	host[hl] = '\0';
	errno = 0;
	unsigned long port = strtoul(colon + 1, &end, 10);

	if (colon[1] == '\0' || *end != '\0' || errno || port == 0 || port > 65535)
		return -EINVAL;
	struct sockaddr_in *a4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)ss;

	if (s[0] != '[' && inet_pton(AF_INET, host, &a4->sin_addr) == 1) {
		a4->sin_family = AF_INET;
		a4->sin_port = htons((uint16_t)port);
		*len = sizeof(*a4);
		return 0;
	}
	if (s[0] == '[' && inet_pton(AF_INET6, host, &a6->sin6_addr) == 1) {
		a6->sin6_family = AF_INET6;
		a6->sin6_port = htons((uint16_t)port);
		*len = sizeof(*a6);
		return 0;
	}
	return -EINVAL;
}

enum fg_metrics_http fg_metrics_http_parse(const char *buf, size_t len)
{
	const char *eoh = NULL, *sp1, *sp2, *eol;

	for (size_t i = 0; i + 1 < len && eoh == NULL; i++) {
		if (buf[i] == '\n' && buf[i + 1] == '\n')
			eoh = buf + i;
		else if (i + 3 < len && !memcmp(buf + i, "\r\n\r\n", 4))
			eoh = buf + i;
	}
	if (eoh == NULL)
		return len >= FG_METRICS_MAX_REQUEST ? FG_METRICS_HTTP_TOO_LARGE :
		       FG_METRICS_HTTP_INCOMPLETE;
	eol = memchr(buf, '\n', len);  /* the end of headers has one */
	if (eol == NULL)
		return FG_METRICS_HTTP_BAD_REQUEST;
	sp1 = memchr(buf, ' ', (size_t)(eol - buf));
	sp2 = sp1 ? memchr(sp1 + 1, ' ', (size_t)(eol - sp1 - 1)) : NULL;
	if (sp1 == NULL || sp2 == NULL || sp1 == buf || sp2 == sp1 + 1 ||
	    (size_t)(eol - sp2) < 9 || memcmp(sp2 + 1, "HTTP/1.", 7) != 0)
		return FG_METRICS_HTTP_BAD_REQUEST;
	bool get = sp1 - buf == 3 && !memcmp(buf, "GET", 3);
	bool head = sp1 - buf == 4 && !memcmp(buf, "HEAD", 4);

	if (!get && !head)
		return FG_METRICS_HTTP_BAD_METHOD;
	const char *path = sp1 + 1;
	size_t plen = (size_t)(sp2 - path);
	const char *q = memchr(path, '?', plen);

	if (q != NULL)
		plen = (size_t)(q - path);
	if (plen != 8 || memcmp(path, "/metrics", 8) != 0)
		return FG_METRICS_HTTP_NOT_FOUND;
	return get ? FG_METRICS_HTTP_METRICS : FG_METRICS_HTTP_HEAD;
}

struct client {
	int fd;                         /* -1: free slot */
	char in[FG_METRICS_MAX_REQUEST];
	size_t in_len;
	char *out;                      /* response, once the request is read */
	size_t out_len, out_off;
	uint64_t deadline_ms;
};

struct fg_metrics {
	struct fg_dp *dp;
	int lfd;
	int wake[2];                    /* stop: main writes, thread polls */
	pthread_t thread;
	bool started;
	struct client c[FG_METRICS_MAX_CLIENTS];
};

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void client_close(struct client *c)
{
	close(c->fd);
	c->fd = -1;
	free(c->out);
	c->out = NULL;
	c->in_len = c->out_len = c->out_off = 0;
}

/* Builds the whole response in memory (a few hundred KB for thousands of
 * backends), so the socket is then written without rendering again. */
static void client_respond(struct fg_metrics *m, struct client *c,
			   enum fg_metrics_http what)
{
	static const char *const status[] = {
		[FG_METRICS_HTTP_NOT_FOUND] = "404 Not Found",
		[FG_METRICS_HTTP_BAD_METHOD] = "405 Method Not Allowed",
		[FG_METRICS_HTTP_BAD_REQUEST] = "400 Bad Request",
		[FG_METRICS_HTTP_TOO_LARGE] = "431 Request Header Fields Too Large",
	};
	char *body = NULL;
	size_t body_len = 0;
	const char *st = "200 OK", *ctype = "text/plain; version=0.0.4; charset=utf-8";
	FILE *f = open_memstream(&body, &body_len);
	int rc = f ? 0 : -ENOMEM;

	if (rc == 0 && (what == FG_METRICS_HTTP_METRICS || what == FG_METRICS_HTTP_HEAD))
		rc = fg_metrics_render(m->dp, f);
	else if (rc == 0)
		fprintf(f, "%s\n", status[what]);
	if (f != NULL && fclose(f) != 0 && rc == 0)
		rc = -ENOMEM;
	if (what != FG_METRICS_HTTP_METRICS && what != FG_METRICS_HTTP_HEAD) {
		st = status[what];
		ctype = "text/plain; charset=utf-8";
	}
	if (rc < 0) {
		free(body);
		body = NULL;
		st = "503 Service Unavailable";
		ctype = "text/plain; charset=utf-8";
		int n = asprintf(&body, "metrics snapshot failed: %s\n", strerror(-rc));

		if (n < 0) {
			client_close(c);
			return;
		}
		body_len = (size_t)n;
	}
	char *resp = NULL;
	size_t resp_len = 0;
	FILE *r = open_memstream(&resp, &resp_len);

	if (r == NULL) {
		free(body);
		client_close(c);
		return;
	}
	fprintf(r, "HTTP/1.1 %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
		"Connection: close\r\n\r\n", st, ctype, body_len);
	if (what != FG_METRICS_HTTP_HEAD)
		fwrite(body, 1, body_len, r);
	free(body);
	if (fclose(r) != 0) {
		free(resp);
		client_close(c);
		return;
	}
	c->out = resp;
	c->out_len = resp_len;
	c->out_off = 0;
	c->deadline_ms = now_ms() + FG_METRICS_TIMEOUT_MS;
}

static void client_read(struct fg_metrics *m, struct client *c)
{
	ssize_t n = recv(c->fd, c->in + c->in_len, sizeof(c->in) - c->in_len, 0);

	if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
		client_close(c);
		return;
	}
	if (n < 0)
		return;
	c->in_len += (size_t)n;
	enum fg_metrics_http what = fg_metrics_http_parse(c->in, c->in_len);

	if (what != FG_METRICS_HTTP_INCOMPLETE)
		client_respond(m, c, what);
}

static void client_write(struct client *c)
{
	ssize_t n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off,
			 MSG_NOSIGNAL);

	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		client_close(c);
		return;
	}
	c->out_off += (size_t)n;
	if (c->out_off == c->out_len) {
		shutdown(c->fd, SHUT_WR);
		client_close(c);
	}
}

static void accept_one(struct fg_metrics *m)
{
	struct client *c = NULL;

	for (int i = 0; i < FG_METRICS_MAX_CLIENTS && c == NULL; i++)
		if (m->c[i].fd < 0)
			c = &m->c[i];
	if (c == NULL)
		return;         /* full: the connection waits in the backlog */
	int fd = accept4(m->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

	if (fd < 0)
		return;
	c->fd = fd;
	c->in_len = 0;
	c->deadline_ms = now_ms() + FG_METRICS_TIMEOUT_MS;
}

static void *metrics_main(void *arg)
{
	struct fg_metrics *m = arg;
	struct pollfd pfd[FG_METRICS_MAX_CLIENTS + 2];
	int idx[FG_METRICS_MAX_CLIENTS + 2];

	for (;;) {
		int n = 0, busy = 0;

		pfd[n++] = (struct pollfd){.fd = m->wake[0], .events = POLLIN};
		for (int i = 0; i < FG_METRICS_MAX_CLIENTS; i++) {
			if (m->c[i].fd < 0)
				continue;
			busy++;
			idx[n] = i;
			pfd[n++] = (struct pollfd){.fd = m->c[i].fd,
				.events = m->c[i].out ? POLLOUT : POLLIN};
		}
		if (busy < FG_METRICS_MAX_CLIENTS) {
			idx[n] = -1;
			pfd[n++] = (struct pollfd){.fd = m->lfd, .events = POLLIN};
		}
		int rc = poll(pfd, (nfds_t)n, 250);

		if (rc < 0 && errno != EINTR)
			break;
		if (pfd[0].revents)
			break;  /* stop */
		for (int k = 1; rc > 0 && k < n; k++) {
			if (!pfd[k].revents)
				continue;
			if (idx[k] < 0) {
				accept_one(m);
				continue;
			}
			struct client *c = &m->c[idx[k]];

			if (c->out)
				client_write(c);
			else
				client_read(m, c);
		}
		uint64_t t = now_ms();

		for (int i = 0; i < FG_METRICS_MAX_CLIENTS; i++)
			if (m->c[i].fd >= 0 && t > m->c[i].deadline_ms)
				client_close(&m->c[i]);
	}
	return NULL;
}

int fg_metrics_start(struct fg_dp *dp, const char *listen_on, struct fg_metrics **out)
{
	struct sockaddr_storage ss;
	socklen_t sl;
	int one = 1, rc;
	struct fg_metrics *m;

	rc = fg_metrics_listen_parse(listen_on, &ss, &sl);
	if (rc < 0)
		return rc;
	m = calloc(1, sizeof(*m));
	if (m == NULL)
		return -ENOMEM;
	m->dp = dp;
	m->wake[0] = m->wake[1] = -1;
	for (int i = 0; i < FG_METRICS_MAX_CLIENTS; i++)
		m->c[i].fd = -1;
	m->lfd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (m->lfd < 0)
		goto fail_errno;
	setsockopt(m->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(m->lfd, (struct sockaddr *)&ss, sl) < 0 ||
	    listen(m->lfd, FG_METRICS_MAX_CLIENTS) < 0 ||
	    pipe2(m->wake, O_CLOEXEC) < 0)
		goto fail_errno;
	rc = -pthread_create(&m->thread, NULL, metrics_main, m);
	if (rc < 0)
		goto fail;
	pthread_setname_np(m->thread, "fg-metrics");
	m->started = true;
	*out = m;
	return 0;
fail_errno:
	rc = -errno;
fail:
	if (m->lfd >= 0)
		close(m->lfd);
	if (m->wake[0] >= 0) {
		close(m->wake[0]);
		close(m->wake[1]);
	}
	free(m);
	return rc;
}

void fg_metrics_stop(struct fg_metrics *m)
{
	if (m == NULL)
		return;
	if (m->started) {
		char b = 1;

		if (write(m->wake[1], &b, 1) != 1)
			pthread_cancel(m->thread);
		pthread_join(m->thread, NULL);
	}
	for (int i = 0; i < FG_METRICS_MAX_CLIENTS; i++)
		if (m->c[i].fd >= 0)
			client_close(&m->c[i]);
	close(m->lfd);
	close(m->wake[0]);
	close(m->wake[1]);
	free(m);
}
