/* SPDX-License-Identifier: BSD-3-Clause */
#include "fake_ops.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void fake_dp_init(struct fake_dp *d, unsigned int n_cores)
{
	memset(d, 0, sizeof(*d));
	pthread_mutex_init(&d->lock, NULL);
	fg_config_init(&d->cfg);
	d->n_cores = n_cores;
}

void fake_dp_fini(struct fake_dp *d)
{
	fg_config_free(&d->cfg);
	free(d->flows);
	pthread_mutex_destroy(&d->lock);
}

/* NAT flows a fake core holds (flows.count's nat_capacity) */
#define FAKE_NAT_CAPACITY 4096

void fake_dp_add_flows(struct fake_dp *d, size_t n)
{
	pthread_mutex_lock(&d->lock);
	struct fg_flow_info *v = realloc(d->flows, (d->n_flows + n) * sizeof(*v));
	if (!v) {
		pthread_mutex_unlock(&d->lock);
		return;
	}
	d->flows = v;
	for (size_t k = 0; k < n; k++) {
		size_t i = d->n_flows + k;
		struct fg_flow_info *f = &v[i];
		memset(f, 0, sizeof(*f));
		const struct fg_service_cfg *s = d->cfg.n_services ?
			&d->cfg.services[i % d->cfg.n_services] : NULL;
		f->src.family = AF_INET;
		f->src.v4.s_addr = htonl(0xC0A80000u + (uint32_t)(i / 60000));
		f->sport = (uint16_t)(1024 + i % 60000);
		if (s) {
			f->dst = s->vip;
			f->src.family = s->vip.family;
			if (s->vip.family == AF_INET6) {
				f->src.bytes[0] = 0xfd;
				f->src.bytes[15] = (uint8_t)i;
				memcpy(&f->src.bytes[8], &i, 4);
			}
			f->dport = s->port;
			f->proto = s->proto;
			f->service_id = s->id;
			fg_service_spec_format(&s->vip, s->port, s->proto, f->service,
					       sizeof(f->service));
			if (s->n_backends) {
				const struct fg_backend_cfg *b = &s->backends[i % s->n_backends];
				f->backend_id = b->id;
				f->backend = b->addr;
				f->backend_port = b->port ? b->port : s->port;
			}
		} else {
			f->dst.family = AF_INET;
			f->dst.v4.s_addr = htonl(0x0A000001);
			f->dport = 80;
			f->proto = IPPROTO_TCP;
		}
		snprintf(f->state, sizeof(f->state), "%s", i % 3 ? "ESTABLISHED" : "SYN_SENT");
		f->core = (int32_t)(i % d->n_cores);
		f->packets = i;
		f->bytes = i * 100;
		f->idle_ms = i % 1000;
		f->expires_ms = 900000 - i % 1000;
	}
	d->n_flows += n;
	pthread_mutex_unlock(&d->lock);
}

void fake_dp_push_event(struct fake_dp *d, const char *type, const struct fg_flow_info *f)
{
	pthread_mutex_lock(&d->lock);
	if (d->n_ev < 64) {
		snprintf(d->ev[d->n_ev].type, sizeof(d->ev[0].type), "%s", type);
		d->ev[d->n_ev++].flow = *f;
	}
	pthread_mutex_unlock(&d->lock);
}

static int op_config_get(struct fg_config *out, void *ctx)
{
	struct fake_dp *d = ctx;
	pthread_mutex_lock(&d->lock);
	int rc = fg_config_copy(out, &d->cfg);
	pthread_mutex_unlock(&d->lock);
	return rc;
}

/* The fake has no devices: only the restart-only fields are checked. */
static int op_config_check(const struct fg_config *cfg, char *err, size_t errlen, void *ctx)
{
	struct fake_dp *d = ctx;
	pthread_mutex_lock(&d->lock);
	int rc = fg_config_restart_diff(&d->cfg, cfg, err, errlen);
	pthread_mutex_unlock(&d->lock);
	return rc;
}

static int op_config_apply(const struct fg_config *cfg, char *err, size_t errlen, void *ctx)
{
	struct fake_dp *d = ctx;
	pthread_mutex_lock(&d->lock);
	if (d->fail_apply) {
		int rc = d->fail_apply;
		d->fail_apply = 0;
		snprintf(err, errlen, "fake dataplane refused (%d)", rc);
		pthread_mutex_unlock(&d->lock);
		return rc;
	}
	struct fg_config n;
	int rc = fg_config_copy(&n, cfg);
	if (!rc) {
		fg_config_free(&d->cfg);
		d->cfg = n;
		d->applies++;
	}
	pthread_mutex_unlock(&d->lock);
	return rc;
}

static int64_t op_flows_walk(const struct fg_flow_filter *f, fg_flow_emit_fn emit, void *arg,
			     bool del, void *ctx)
{
	struct fake_dp *d = ctx;
	int64_t n = 0;
	pthread_mutex_lock(&d->lock);
	d->last_wait_ms = f->wait_ms;
	size_t w = 0;
	for (size_t i = 0; i < d->n_flows; i++) {
		bool m = (!f->limit || (uint64_t)n < f->limit) &&
			 fg_flow_filter_match(f, &d->flows[i]);
		if (m) {
			n++;
			if (emit) {
				int rc = emit(&d->flows[i], arg);
				if (rc) {
					pthread_mutex_unlock(&d->lock);
					return rc;
				}
			}
		}
		if (!(m && del))
			d->flows[w++] = d->flows[i];
	}
	d->n_flows = w;
	pthread_mutex_unlock(&d->lock);
	return n;
}

static int op_flows_count(struct fg_flow_counts *out, void *ctx)
{
	struct fake_dp *d = ctx;
	pthread_mutex_lock(&d->lock);
	memset(out, 0, sizeof(*out));
	out->n_cores = d->n_cores;
	out->nat_capacity = FAKE_NAT_CAPACITY * d->n_cores;
	for (size_t i = 0; i < d->n_flows; i++) {
		out->total++;
		out->per_core[d->flows[i].core]++;
		if (d->flows[i].nat_addr.family != 0)
			out->nat++;
		int st = fg_flow_state_lookup(d->flows[i].state);
		if (st >= 0 && st < 16)
			out->per_state[st]++;
	}
	pthread_mutex_unlock(&d->lock);
	return 0;
}

static int op_stats(struct fg_json_writer *w, const char *service, bool per_core, bool zero,
		    void *ctx)
{
	(void)zero;
	struct fake_dp *d = ctx;
	int rc = 0;
	pthread_mutex_lock(&d->lock);
	int si = service ? fg_config_find_service(&d->cfg, service) : -1;
	if (service && si < 0) {
		rc = -ENOENT;
		goto out;
	}
	fg_jw_obj_open(w, NULL);
	fg_jw_u64(w, "rx_packets", 1000);
	fg_jw_u64(w, "tx_packets", 990);
	fg_jw_obj_open(w, "drops_by_reason");
	fg_jw_u64(w, "TRUNCATED", 10);
	fg_jw_obj_close(w);
	if (per_core) {
		fg_jw_arr_open(w, "per_core");
		for (unsigned c = 0; c < d->n_cores; c++) {
			fg_jw_obj_open(w, NULL);
			fg_jw_u64(w, "rx_packets", 1000 / d->n_cores);
			fg_jw_obj_close(w);
		}
		fg_jw_arr_close(w);
	}
	fg_jw_arr_open(w, "services");
	for (uint32_t i = 0; i < d->cfg.n_services; i++) {
		if (si >= 0 && (uint32_t)si != i)
			continue;
		char b[96];
		const struct fg_service_cfg *s = &d->cfg.services[i];
		fg_jw_obj_open(w, NULL);
		fg_jw_str(w, "service", fg_service_spec_format(&s->vip, s->port, s->proto, b,
							       sizeof(b)));
		fg_jw_u64(w, "new_flows", 5);
		fg_jw_obj_close(w);
	}
	fg_jw_arr_close(w);
	fg_jw_obj_close(w);
out:
	pthread_mutex_unlock(&d->lock);
	return rc;
}

static int op_watch_set(bool on, void *ctx)
{
	struct fake_dp *d = ctx;
	pthread_mutex_lock(&d->lock);
	d->watching = on;
	pthread_mutex_unlock(&d->lock);
	return 0;
}

static int op_watch_poll(struct fg_flow_event *ev, unsigned int max, void *ctx)
{
	struct fake_dp *d = ctx;
	pthread_mutex_lock(&d->lock);
	unsigned n = d->n_ev < max ? d->n_ev : max;
	memcpy(ev, d->ev, n * sizeof(*ev));
	memmove(d->ev, d->ev + n, (d->n_ev - n) * sizeof(*ev));
	d->n_ev -= n;
	pthread_mutex_unlock(&d->lock);
	return (int)n;
}

int fake_set_health(uint32_t sid, uint32_t bid, bool up, const char *reason, void *ctx)
{
	struct fake_dp *d = ctx;
	(void)sid;
	(void)bid;
	(void)reason;
	pthread_mutex_lock(&d->lock);
	d->health_calls++;
	d->last_up = up;
	pthread_mutex_unlock(&d->lock);
	return 0;
}

/* member m is op_m; the members the fake leaves NULL are the optional ones */
#define FAKE_OP(m) .m = op_##m,
const struct fg_ctl_ops fake_ops = {
	FAKE_OP(config_get) FAKE_OP(config_apply) FAKE_OP(config_check)
	FAKE_OP(flows_walk) FAKE_OP(flows_count) FAKE_OP(stats)
	FAKE_OP(watch_set) FAKE_OP(watch_poll)
};
#undef FAKE_OP
