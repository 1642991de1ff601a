/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Counters: per-core plain uint64_t arrays (struct fg_worker, and the
 * per-core rows of struct fg_lb_table), summed on read.  Exposed as DPDK
 * telemetry commands under /flowgate/ and printed at exit.
 *
 * Readers run on the telemetry thread: they take fg_dp::cfg_lock so the
 * service table they walk is not freed under them (the lock is never taken
 * on the packet path), and read the workers' counters racily, which is fine
 * for 64-bit aligned counters on the supported 64-bit targets.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_telemetry.h>

#include "fg_dp.h"
#include "fg_proto.h"

static struct fg_dp *g_dp;

uint64_t fg_stats_core_sum(const struct fg_dp *dp, enum fg_core_counter c)
{
	uint64_t s = 0;

	for (unsigned int i = 0; i < dp->n_workers; i++)
		s += dp->workers[i]->cc[c];
	return s;
}

uint64_t fg_stats_drop_sum(const struct fg_dp *dp, enum fg_drop d)
{
	uint64_t s = 0;

	for (unsigned int i = 0; i < dp->n_workers; i++)
		s += dp->workers[i]->drops[d];
	return s;
}

static uint64_t dc_sum(const struct fg_dp *dp, enum fg_dp_counter c)
{
	uint64_t s = 0;

	for (unsigned int i = 0; i < dp->n_workers; i++)
		s += dp->workers[i]->dc[c];
	return s;
}

static void svc_label(const struct fg_lb_service *s, char *buf, size_t len)
{
	if (s->name[0])
		snprintf(buf, len, "%s", s->name);
	else
		fg_service_spec_format(&s->vip, rte_be_to_cpu_16(s->port_be),
				       s->proto, buf, len);
}

static int tel_stats(const char *cmd, const char *params, struct rte_tel_data *d)
{
	struct fg_dp *dp = g_dp;
	struct rte_tel_data *drops = rte_tel_data_alloc();

	if (drops == NULL)
		return -ENOMEM;
	rte_tel_data_start_dict(d);
	rte_tel_data_add_dict_u64(d, "workers", dp->n_workers);
	rte_tel_data_add_dict_u64(d, "sw_rss", dp->sw_rss);
	for (int c = 0; c < FG_CC_MAX; c++)
		rte_tel_data_add_dict_u64(d, fg_core_counter_names[c],
					  fg_stats_core_sum(dp, c));
	for (int c = 0; c < FG_DC_MAX; c++)
		rte_tel_data_add_dict_u64(d, fg_dp_counter_names[c], dc_sum(dp, c));
	rte_tel_data_start_dict(drops);
	for (int r = 1; r < FG_DROP_MAX; r++)
		rte_tel_data_add_dict_u64(drops, fg_drop_names[r],
					  fg_stats_drop_sum(dp, r));
	rte_tel_data_add_dict_container(d, "drops_by_reason", drops, 0);
	for (unsigned int p = 0; p < dp->n_ports; p++) {
		struct rte_tel_data *pd = rte_tel_data_alloc();
		uint64_t pc[FG_PC_MAX];
		char name[16];

		if (pd == NULL)
			break;
		fg_port_counters(dp, p, pc);
		rte_tel_data_start_dict(pd);
		for (int c = 0; c < FG_PC_MAX; c++)
			rte_tel_data_add_dict_u64(pd, fg_port_counter_names[c], pc[c]);
		snprintf(name, sizeof(name), "port%u", p);
		rte_tel_data_add_dict_container(d, name, pd, 0);
	}
	return 0;
}

static int tel_services(const char *cmd, const char *params,
			struct rte_tel_data *d)
{
	struct fg_dp *dp = g_dp;

	rte_tel_data_start_dict(d);
	pthread_mutex_lock(&dp->cfg_lock);
	const struct fg_lb_table *lb = dp->lb;

	for (uint32_t i = 0; lb && i < lb->n_services; i++) {
		const struct fg_lb_service *s = &lb->services[i];
		struct rte_tel_data *sd = rte_tel_data_alloc();
		char name[96];

		if (sd == NULL)
			break;
		rte_tel_data_start_dict(sd);
		rte_tel_data_add_dict_u64(sd, "id", s->id);
		rte_tel_data_add_dict_string(sd, "mode", s->mode == FG_MODE_NAT ? "nat" :
					     s->mode == FG_MODE_DSR_GUE ? "dsr-gue" :
					     "dsr-ipip");
		rte_tel_data_add_dict_u64(sd, "backends", s->n_live);
		rte_tel_data_add_dict_u64(sd, "usable_backends", s->n_usable);
		for (int c = 0; c < FG_SC_MAX; c++)
			rte_tel_data_add_dict_u64(sd, fg_service_counter_names[c],
						  fg_lb_svc_counter(lb, dp->n_workers, s, c));
		svc_label(s, name, sizeof(name));
		rte_tel_data_add_dict_container(d, name, sd, 0);
	}
	pthread_mutex_unlock(&dp->cfg_lock);
	return 0;
}

static int tel_backends(const char *cmd, const char *params,
			struct rte_tel_data *d)
{
	struct fg_dp *dp = g_dp;

	rte_tel_data_start_dict(d);
	pthread_mutex_lock(&dp->cfg_lock);
	const struct fg_lb_table *lb = dp->lb;

	for (uint32_t i = 0; lb && i < lb->n_services; i++) {
		const struct fg_lb_service *s = &lb->services[i];
		char sname[96];

		svc_label(s, sname, sizeof(sname));
		if (params && params[0] && strcmp(params, sname) != 0)
			continue;
		for (uint32_t j = 0; j < s->n_backends; j++) {
			const struct fg_lb_backend *b = &s->backends[j];
			struct rte_tel_data *bd = rte_tel_data_alloc();
			char addr[64], name[RTE_TEL_MAX_STRING_LEN + 64];

			if (bd == NULL)
				break;
			rte_tel_data_start_dict(bd);
			rte_tel_data_add_dict_u64(bd, "id", b->id);
			rte_tel_data_add_dict_u64(bd, "weight", b->weight);
			rte_tel_data_add_dict_string(bd, "state", b->gone ? "gone" :
						     b->usable ? "up" : "drained");
			for (int c = 0; c < FG_BC_MAX; c++)
				rte_tel_data_add_dict_u64(bd, fg_backend_counter_names[c],
					fg_lb_be_counter(lb, dp->n_workers, b, c));
			fg_addr_format(&b->addr, addr, sizeof(addr));
			snprintf(name, sizeof(name), "%s|%s", sname, addr);
			rte_tel_data_add_dict_container(d, name, bd, 0);
		}
	}
	pthread_mutex_unlock(&dp->cfg_lock);
	return 0;
}

static int tel_ct(const char *cmd, const char *params, struct rte_tel_data *d)
{
	struct fg_dp *dp = g_dp;
	uint64_t live = 0;

	rte_tel_data_start_dict(d);
	for (unsigned int i = 0; i < dp->n_workers; i++) {
		struct rte_tel_data *cd = rte_tel_data_alloc();
		struct ct_stats st;
		char name[16];

		if (cd == NULL)
			break;
		if (fg_dp_ct_stats(dp, i, &st) < 0) {
			rte_tel_data_free(cd);
			continue;
		}
		rte_tel_data_start_dict(cd);
		uint64_t n = 0;

		for (int s = 1; s < CT_ST_MAX; s++) {
			n += st.live[s];
			if (st.live[s])
				rte_tel_data_add_dict_u64(cd, ct_state_names[s], st.live[s]);
		}
		rte_tel_data_add_dict_u64(cd, "live", n);
#define CT_X(c) rte_tel_data_add_dict_u64(cd, #c, st.c);
		CT_COUNTER_LIST(CT_X)
#undef CT_X
		for (int r = 0; r < CT_INSFAIL_MAX; r++)
			rte_tel_data_add_dict_u64(cd, ct_insfail_names[r],
						  st.insert_fail_by[r]);
		for (int r = 0; r < CT_EVICT_MAX; r++)
			rte_tel_data_add_dict_u64(cd, ct_evict_names[r], st.evictions[r]);
		live += n;
		snprintf(name, sizeof(name), "core%u", i);
		rte_tel_data_add_dict_container(d, name, cd, 0);
	}
	rte_tel_data_add_dict_u64(d, "live", live);
	return 0;
}

int fg_stats_telemetry_register(struct fg_dp *dp)
{
	g_dp = dp;
	int rc = rte_telemetry_register_cmd("/flowgate/stats", tel_stats,
			"flowgate per-core counters summed, drops by reason. No parameters");

	rc |= rte_telemetry_register_cmd("/flowgate/services", tel_services,
			"flowgate per-service counters. No parameters");
	rc |= rte_telemetry_register_cmd("/flowgate/backends", tel_backends,
			"flowgate per-backend counters. Parameter: service name or VIP:PORT/PROTO (optional)");
	rc |= rte_telemetry_register_cmd("/flowgate/ct", tel_ct,
			"flowgate conntrack per core: live flows by state, counters. No parameters");
	return rc ? -EINVAL : 0;
}

void fg_stats_print(struct fg_dp *dp, FILE *f)
{
	fprintf(f, "flowgate: final counters (%u workers, %s)\n", dp->n_workers,
		dp->sw_rss ? "software RSS" : "hardware RSS / single worker");
	for (int c = 0; c < FG_CC_MAX; c++)
		fprintf(f, "  %-22s %" PRIu64 "\n", fg_core_counter_names[c],
			fg_stats_core_sum(dp, c));
	for (int c = 0; c < FG_DC_MAX; c++) {
		uint64_t v = dc_sum(dp, c);

		if (v)
			fprintf(f, "  %-22s %" PRIu64 "\n", fg_dp_counter_names[c], v);
	}
	for (int r = 1; r < FG_DROP_MAX; r++) {
		uint64_t v = fg_stats_drop_sum(dp, r);

		if (v)
			fprintf(f, "  drop %-17s %" PRIu64 "\n", fg_drop_names[r], v);
	}
	for (unsigned int p = 0; p < dp->n_ports; p++) {
		uint64_t pc[FG_PC_MAX];

		if (fg_port_counters(dp, p, pc) < 0)
			continue;
		fprintf(f, "  port %u (%s):", p, dp->cfg ? dp->cfg->ports[p].name : "?");
		for (int c = 0; c < FG_PC_MAX; c++)
			fprintf(f, " %s %" PRIu64, fg_port_counter_names[c], pc[c]);
		fprintf(f, "\n");
	}
	pthread_mutex_lock(&dp->cfg_lock);
	const struct fg_lb_table *lb = dp->lb;

	for (uint32_t i = 0; lb && i < lb->n_services; i++) {
		const struct fg_lb_service *s = &lb->services[i];
		char name[96];

		svc_label(s, name, sizeof(name));
		fprintf(f, "  service %s: packets %" PRIu64 " new_flows %" PRIu64
			" drops %" PRIu64 "\n", name,
			fg_lb_svc_counter(lb, dp->n_workers, s, FG_SC_packets),
			fg_lb_svc_counter(lb, dp->n_workers, s, FG_SC_new_flows),
			fg_lb_svc_counter(lb, dp->n_workers, s, FG_SC_drops));
		for (uint32_t j = 0; j < s->n_backends; j++) {
			char addr[64];

			fg_addr_format(&s->backends[j].addr, addr, sizeof(addr));
			fprintf(f, "    backend %-20s packets %" PRIu64 " new_flows %"
				PRIu64 "\n", addr,
				fg_lb_be_counter(lb, dp->n_workers, &s->backends[j],
						 FG_BC_packets),
				fg_lb_be_counter(lb, dp->n_workers, &s->backends[j],
						 FG_BC_new_flows));
		}
	}
	pthread_mutex_unlock(&dp->cfg_lock);
}
