/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The daemon's side of the control socket: struct fg_ctl_ops callbacks.
 * They run on the control thread (control/fg_ctl_server.c).  Config
 * changes rebuild the service tables under fg_dp::cfg_lock and publish them
 * with an RCU grace period (fg_lb.c); everything that touches a conntrack
 * shard goes through that shard's mailbox and runs on its worker.
 */
#include <errno.h>
#include <grp.h>
#include <stdio.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>

#include <rte_cycles.h>

#include "fg_config_ct.h"
#include "fg_config_parse.h"
#include "fg_ctl_server.h"
#include "fg_dp_private.h"
#include "fg_load.h"
#include "fg_log.h"
#include "fg_opts.h"
#include "fg_worker_private.h"
#include "fg_rcu.h"
#include "fg_health.h"
#include "fg_proto.h"
#include "fg_stats.h"

#define MBOX_TIMEOUT_US (30ull * 1000 * 1000)


/* Posts @p req to worker @p i and waits.  mbox_lock serializes producers
 * (one control thread plus the telemetry thread). */
static int mbox_run(struct fg_dp *dp, unsigned int i, struct ct_mbox_req *req)
{
	int rc;

	pthread_mutex_lock(&dp->mbox_lock);
	req->done = 0;
	rc = ct_mbox_post(dp->workers[i]->ct, req);
	if (rc == 0)
		rc = ct_mbox_wait(req, MBOX_TIMEOUT_US);
	pthread_mutex_unlock(&dp->mbox_lock);
	return rc;
}

int fg_dp_ct_stats(struct fg_dp *dp, unsigned int i, struct ct_stats *out)
{
	struct ct_mbox_req *req = calloc(1, sizeof(*req));
	int rc;

	if (req == NULL)
		return -ENOMEM;
	rc = mbox_run(dp, i, req);
	if (rc == 0)
		*out = req->stats;
	if (rc != -ETIMEDOUT)
		free(req);  /* on timeout the shard still owns it: leak, rare */
	return rc;
}

/* ------------------------------------------------------------ flows */

/* Listing / deleting flows streams: one mailbox request per chunk of
 * WALK_CHUNK conntrack slots, resumed from the cursor the last one stopped
 * at (ct_mbox_req::resume), so a buffer holds at most WALK_CHUNK flows
 * whatever the table size.  Two buffers: the worker fills one while the
 * control thread sends the other. */
#define WALK_CHUNK 4096

/* What the worker's callback writes; the control thread reads it only
 * after the request completed (acquire on req->done).
 *
 * Listing: the worker only copies the raw entries (pre-filtered by service
 * id, a compare); formatting, the full filter and the limit run on the
 * control thread, so a listing costs the dataplane little more than the
 * walk itself.  Deleting: the worker must decide, so it formats and
 * filters (delete is rare and usually narrow). */
struct walk_ctx {
	struct fg_dp *dp;
	const struct fg_lb_table *lb;
	const struct fg_flow_filter *f;
	bool del;
	unsigned int core;
	uint64_t *matched;      /* delete: shared by the chunks of one core */
	struct fg_flow_info *v; /* delete: WALK_CHUNK matching flows */
	struct ct_flow *raw;    /* list: WALK_CHUNK flows as copied */
	size_t n;
	int err;
	uint64_t wall_ms;       /* Unix time of the chunk's request (created_ms) */
};

/* Unix time in ms (CLOCK_REALTIME): flow creation and event times are
 * reported in wall-clock terms, converted from the workers' TSC ages. */
static uint64_t wall_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

struct walk_buf {
	struct ct_mbox_req req;
	struct walk_ctx c;
};

static void flow_info_fill(struct walk_ctx *c, const struct ct_flow *cf,
			   struct fg_flow_info *fi)
{
	const struct fg_lb_table *lb = c->lb;
	double ms_per_tick = 1000.0 / (double)c->dp->hz;

	memset(fi, 0, sizeof(*fi));
	if (cf->family == CT_V4) {
		fi->src.family = fi->dst.family = AF_INET;
		fi->src.v4.s_addr = cf->k4.saddr;
		fi->dst.v4.s_addr = cf->k4.daddr;
		fi->sport = rte_be_to_cpu_16(cf->k4.sport);
		fi->dport = rte_be_to_cpu_16(cf->k4.dport);
		fi->proto = cf->k4.proto;
	} else {
		fi->src.family = fi->dst.family = AF_INET6;
		memcpy(fi->src.v6.s6_addr, cf->k6.saddr, 16);
		memcpy(fi->dst.v6.s6_addr, cf->k6.daddr, 16);
		fi->sport = rte_be_to_cpu_16(cf->k6.sport);
		fi->dport = rte_be_to_cpu_16(cf->k6.dport);
		fi->proto = cf->k6.proto;
	}
	fi->flags = cf->e.flags;
	snprintf(fi->state, sizeof(fi->state), "%s",
		 cf->e.state < CT_ST_MAX ? ct_state_names[cf->e.state] : "?");
	fi->service_id = cf->e.service;
	fi->backend_id = cf->e.backend;
	fi->core = (int32_t)c->core;
	fi->packets = cf->e.packets + cf->reply_packets;
	fi->bytes = cf->e.bytes + cf->reply_bytes;
	fi->idle_ms = (uint64_t)(cf->age_ticks * ms_per_tick);
	fi->expires_ms = (uint64_t)(cf->expires_ticks * ms_per_tick);
	fi->lifetime_ms = (uint64_t)(cf->life_ticks * ms_per_tick);
	if (fi->idle_ms > fi->lifetime_ms)
		fi->idle_ms = fi->lifetime_ms;  /* coarse birth clock: never idle longer than alive */
	fi->created_ms = c->wall_ms > fi->lifetime_ms ? c->wall_ms - fi->lifetime_ms : 0;
	uint16_t sid = lb->svc_by_id[cf->e.service];

	if (sid) {
		const struct fg_lb_service *s = &lb->services[sid - 1];
		const struct fg_lb_backend *b = fg_lb_backend_find(s, cf->e.backend);

		if (s->name[0])
			snprintf(fi->service, sizeof(fi->service), "%s", s->name);
		else
			fg_service_spec_format(&s->vip, rte_be_to_cpu_16(s->port_be),
					       s->proto, fi->service,
					       sizeof(fi->service));
		if (b != NULL && !b->gone) {
			fi->backend = b->addr;
			fi->backend_port = rte_be_to_cpu_16(b->port_be);
		}
	}
	if (cf->has_reply && (cf->e.flags & CT_F_NAT) &&
	    cf->e.nat_addr < c->dp->n_locals) {
		fi->nat_addr = c->dp->locals[cf->e.nat_addr];
		fi->nat_port = rte_be_to_cpu_16(cf->e.nat_port);
	}
}

/* Runs on the worker that owns the shard, at most WALK_CHUNK slots per
 * request: never more than WALK_CHUNK flows (a NAT flow's two entries are
 * reported once). */
static int walk_cb(const struct ct_flow *cf, void *arg)
{
	struct walk_ctx *c = arg;
	struct fg_flow_info fi;

	if (!c->del) {
		if (c->f->service_id >= 0 &&
		    (uint64_t)c->f->service_id != cf->e.service)
			return 0;
		if (unlikely(c->n == WALK_CHUNK)) {
			c->err = -EOVERFLOW;   /* cannot happen, as below */
			return 0;
		}
		c->raw[c->n++] = *cf;
		return 0;
	}
	if (c->err || (c->f->limit && *c->matched >= c->f->limit))
		return 0;
	flow_info_fill(c, cf, &fi);
	if (!fg_flow_filter_match(c->f, &fi))
		return 0;
	if (c->n == WALK_CHUNK) {
		c->err = -EOVERFLOW;   /* cannot happen: chunk bounds the flows */
		return 0;
	}
	(*c->matched)++;
	c->v[c->n++] = fi;
	return c->del ? 1 : 0;
}

/* Posts chunk @p b of core @p i from @p cursor.  Holds mbox_lock until
 * walk_wait(): one mailbox producer at a time. */
static int walk_post(struct fg_dp *dp, unsigned int i, struct walk_buf *b,
		     uint64_t cursor)
{
	int rc;

	memset(&b->req, 0, sizeof(b->req));
	b->c.n = 0;
	b->c.wall_ms = wall_now_ms();
	b->req.fn = walk_cb;
	b->req.arg = &b->c;
	b->req.chunk = WALK_CHUNK;
	b->req.resume = 1;
	b->req.cursor = cursor;
	pthread_mutex_lock(&dp->mbox_lock);
	rc = ct_mbox_post(dp->workers[i]->ct, &b->req);
	if (rc < 0)
		pthread_mutex_unlock(&dp->mbox_lock);
	return rc;
}

/* @p wait_ms: the request's own bound (fgctl --timeout), else 30 s. */
static int walk_wait(struct fg_dp *dp, struct walk_buf *b, uint64_t wait_ms)
{
	int rc = ct_mbox_wait(&b->req, wait_ms ? wait_ms * 1000 : MBOX_TIMEOUT_US);

	pthread_mutex_unlock(&dp->mbox_lock);
	return rc;
}

/* Streams the matching flows of worker @p i to @p emit.  @return 0,
 * -ETIMEDOUT (the worker still owns @p bufs: the caller must not free
 * them), or the first error of the walk or of @p emit. */
static int walk_core(struct fg_dp *dp, unsigned int i, const struct fg_flow_filter *f,
		     bool del, fg_flow_emit_fn emit, void *emit_arg,
		     struct walk_buf bufs[2], uint64_t *matched)
{
	struct walk_buf *cur = &bufs[0], *next = &bufs[1];
	int rc;

	for (int k = 0; k < 2; k++) {
		bufs[k].c.dp = dp;
		bufs[k].c.lb = dp->lb;
		bufs[k].c.f = f;
		bufs[k].c.del = del;
		bufs[k].c.core = i;
		bufs[k].c.matched = matched;
		bufs[k].c.err = 0;
	}
	rc = walk_post(dp, i, cur, 0);
	while (rc == 0) {
		rc = walk_wait(dp, cur, f->wait_ms);
		if (rc < 0)
			return rc;
		rc = cur->c.err;
		if (rc < 0)
			break;
		/* listing: filter + limit here, on the control thread; delete:
		 * no request in flight, so *matched is stable here */
		size_t n_list = 0;

		if (!del) {
			for (size_t k = 0; k < cur->c.n; k++) {
				if (f->limit && *matched >= f->limit)
					break;
				flow_info_fill(&cur->c, &cur->c.raw[k], &cur->c.v[n_list]);
				if (!fg_flow_filter_match(f, &cur->c.v[n_list]))
					continue;
				n_list++;
				(*matched)++;
			}
		}
		bool more = cur->req.cursor != CT_WALK_DONE &&
			    !(f->limit && *matched >= f->limit);

		if (more) {
			rc = walk_post(dp, i, next, cur->req.cursor);
			if (rc < 0)
				break;
		}
		/* the worker fills @next while we send @cur */
		int erc = 0;
		size_t n_out = del ? cur->c.n : n_list;

		for (size_t k = 0; erc == 0 && emit && k < n_out; k++)
			erc = emit(&cur->c.v[k], emit_arg);
		if (!more)
			return erc;
		if (erc < 0) {
			/* finish the chunk in flight before giving up */
			rc = walk_wait(dp, next, f->wait_ms);
			return rc < 0 ? rc : erc;
		}
		struct walk_buf *t = cur;

		cur = next;
		next = t;
	}
	return rc;
}

static int64_t op_flows_walk(const struct fg_flow_filter *f, fg_flow_emit_fn emit,
			     void *emit_arg, bool delete_matching, void *ctx)
{
	struct fg_dp *dp = ctx;
	struct walk_buf *bufs = calloc(2, sizeof(*bufs));
	uint64_t *matched = calloc(1, sizeof(*matched));
	int rc = 0;

	bool nomem = bufs == NULL || matched == NULL;

	/* bounded: 2 x WALK_CHUNK flows (~2.5 MB listing, ~2 MB deleting),
	 * whatever the number of flows */
	for (int k = 0; k < 2 && !nomem; k++) {
		bufs[k].c.v = malloc(WALK_CHUNK * sizeof(struct fg_flow_info));
		if (!delete_matching)
			bufs[k].c.raw = malloc(WALK_CHUNK * sizeof(struct ct_flow));
		nomem = bufs[k].c.v == NULL ||
			(!delete_matching && bufs[k].c.raw == NULL);
	}
	if (nomem) {
		for (int k = 0; bufs && k < 2; k++) {
			free(bufs[k].c.v);
			free(bufs[k].c.raw);
		}
		free(bufs);
		free(matched);
		return -ENOMEM;
	}
	pthread_mutex_lock(&dp->cfg_lock);
	for (unsigned int i = 0; i < dp->n_workers && rc == 0; i++) {
		if (f->core >= 0 && (unsigned int)f->core != i)
			continue;
		if (f->limit && *matched >= f->limit)
			break;
		rc = walk_core(dp, i, f, delete_matching, emit, emit_arg, bufs, matched);
		if (rc == -ETIMEDOUT) {
			/* the worker still owns a request and its buffer:
			 * leak them rather than block the control thread */
			pthread_mutex_unlock(&dp->cfg_lock);
			return -ETIMEDOUT;
		}
	}
	pthread_mutex_unlock(&dp->cfg_lock);
	int64_t total = (int64_t)*matched;

	for (int k = 0; k < 2; k++) {
		free(bufs[k].c.v);
		free(bufs[k].c.raw);
	}
	free(bufs);
	free(matched);
	return rc < 0 ? rc : total;
}

static int op_flows_count(struct fg_flow_counts *out, void *ctx)
{
	struct fg_dp *dp = ctx;

	memset(out, 0, sizeof(*out));
	out->n_cores = dp->n_workers;
	for (unsigned int i = 0; i < dp->n_workers && i < FG_CTL_MAX_CORES; i++) {
		struct ct_stats st;
		int rc = fg_dp_ct_stats(dp, i, &st);

		if (rc < 0)
			return rc;
		for (int s = 1; s < CT_ST_MAX && s < 16; s++) {
			/* NAT flows have two entries of one state: count flows */
			out->per_state[s] += st.live[s];
			out->per_core[i] += st.live[s];
		}
		out->total += out->per_core[i];
		out->nat += st.nat_flows;
		/* the reply region's size in effect, as /metrics reports it */
		out->nat_capacity += ct_reply_slots(dp->workers[i]->ct, CT_V4);
	}
	return 0;
}

/* ------------------------------------------------------------ config */

static int op_config_get(struct fg_config *out, void *ctx)
{
	struct fg_dp *dp = ctx;
	int rc;

	pthread_mutex_lock(&dp->cfg_lock);
	rc = fg_config_copy(out, dp->cfg);
	pthread_mutex_unlock(&dp->cfg_lock);
	return rc;
}

/* The conntrack settings of @p c as the shards run them (fg_config_ct(),
 * the one mapping, over ct_config_defaults(); nat_capacity 0 is capacity
 * / 2 as ct.h has it), so a file that writes a default out
 * (`timeout established 15m;`) equals one that leaves it out. */
static void ct_effective(struct fg_config *c)
{
	struct ct_config cc;

	ct_config_defaults(&cc);
	fg_config_ct(c, &cc);
	c->ct_capacity = cc.capacity;
	c->ct_nat_capacity = cc.capacity_reply ? cc.capacity_reply :
			     RTE_MAX(cc.capacity / 2, 8u);
	for (unsigned int st = 0; st < CT_ST_MAX; st++)
		c->ct_timeouts_ms[st] = cc.timeouts.ms[st];
	c->flood_rate = cc.flood_rate;
}

/* fg_config_restart_diff() of the effective values (ct_effective): shallow
 * copies, the configs themselves keep what their files say. */
static int restart_diff(const struct fg_config *running, const struct fg_config *next,
			char *err, size_t errlen)
{
	struct fg_config *x = malloc(2 * sizeof(*x));
	int rc;

	if (x == NULL) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	x[0] = *running;
	x[1] = *next;
	ct_effective(&x[0]);
	ct_effective(&x[1]);
	rc = fg_config_restart_diff(&x[0], &x[1], err, errlen);
	free(x);
	return rc;
}

/*
 * @p cfg in the running daemon's terms, into @p out (a shallow copy: the
 * services stay @p cfg's): ports matched to devices by name; a conntrack
 * capacity or control socket the file leaves out (0, the default path)
 * takes the value a restart with the same command line would give it (-s,
 * --ct-capacity, else the default).  A value the file does set is
 * compared as it is: a file that says another capacity than the running
 * one is refused, even when --ct-capacity fixed it.  cfg_lock held.
 * @return 0, or 1 with @p err naming a restart-only field that differs
 *   from the running config, or -errno with @p err.
 */
static int config_in_force(void *ctx, const struct fg_config *cfg,
			   struct fg_config *out, char *err, size_t errlen)
{
	const struct fg_dp *dp = ctx;
	int rc;

	*out = *cfg;
	rc = fg_port_cfg_resolve(dp, out, err, errlen);
	if (rc < 0)
		return rc;
	if (dp->cli_socket && !strcmp(out->control_socket, FG_CTL_DEFAULT_SOCKET))
		memcpy(out->control_socket, dp->cfg->control_socket,
		       sizeof(out->control_socket));
	if (out->ct_capacity == 0)
		out->ct_capacity = dp->cli_ct_capacity ? dp->cfg->ct_capacity : CT_DEFAULT_CAPACITY;
	return restart_diff(dp->cfg, out, err, errlen);
}

/* The config in force, applied; static neighbours may have changed
 * (learned ones are kept).  cfg_lock held. */
static int config_apply_locked(void *ctx, const struct fg_config *next, char *err,
			       size_t errlen)
{
	struct fg_dp *dp = ctx;
	int rc = fg_dp_apply_config(dp, next, err, errlen);

	if (rc == 0) {
		struct fg_neigh_table *old = dp->neigh;
		struct fg_neigh_table *nt = fg_neigh_table_build(dp->cfg, old, NULL, 0);

		if (nt != NULL)
			fg_neigh_table_free(fg_rcu_publish(dp->qsbr, &dp->neigh, nt));
	}
	return rc;
}

/* ------------------------------------------------------------- stats */

/* Renders the snapshot (fg_stats.h) that telemetry and /metrics render
 * too: one source for names, states and sums. */
static void write_core(struct fg_json_writer *w, const char *key,
		       const struct fg_stats_core *c)
{
	fg_jw_obj_open(w, key);
	for (int i = 0; i < FG_CC_MAX; i++)
		fg_jw_u64(w, fg_core_counter_names[i], c->cc[i]);
	for (int i = 0; i < FG_DC_MAX; i++)
		fg_jw_u64(w, fg_dp_counter_names[i], c->dc[i]);
	fg_jw_obj_open(w, "drops_by_reason");
	for (int r = 1; r < FG_DROP_MAX; r++)
		fg_jw_u64(w, fg_drop_names[r], c->drops[r]);
	fg_jw_obj_close(w);
	fg_jw_obj_close(w);
}

/* The restart hand-over: what the start restored (fg_state.h). */
static void write_state(struct fg_json_writer *w, const struct fg_state_stats *st)
{
	fg_jw_obj_open(w, "state");
	fg_jw_bool(w, "loaded", st->loaded);
	fg_jw_str(w, "writer", st->writer);
#define FG_X(k, v, m, h) fg_jw_u64(w, k, v);
	FG_STATE_LOAD_LIST(FG_X, st)
#undef FG_X
	fg_jw_obj_open(w, "refused");
	for (int r = 0; r < FG_STATE_FLOW_MAX; r++)
		fg_jw_u64(w, fg_state_flow_refuse_names[r], st->refused[r]);
	fg_jw_obj_close(w);
	fg_jw_obj_open(w, "file_refused");
	for (int r = 1; r < FG_STATE_FILE_MAX; r++)
		fg_jw_u64(w, fg_state_file_refuse_names[r], st->file_refused[r]);
	fg_jw_obj_close(w);
	fg_jw_obj_close(w);
}

/* State sync between nodes (fg_sync.h): `fgctl sync` prints it. */
static void write_sync(struct fg_json_writer *w, const struct fg_sync_stats *st)
{
	fg_jw_obj_open(w, "sync");
	fg_jw_bool(w, "on", st->on);
	fg_jw_bool(w, "ready", st->ready);
	fg_jw_str(w, "waiting", st->waiting);
	fg_jw_u64(w, "node", st->node);
	fg_jw_str(w, "listen", st->listen);
	fg_jw_bool(w, "dsr", st->dsr);
	fg_jw_u64(w, "rate", st->rate);
	fg_jw_u64(w, "epoch", st->epoch);
	fg_jw_u64(w, "seq", st->seq);
	fg_jw_u64(w, "backlog", st->backlog);
	for (int c = 0; c < FG_SYNC_NC_MAX; c++)
		fg_jw_u64(w, fg_sync_nc_names[c], st->nc[c]);
	for (int c = 0; c < FG_SYNC_WC_MAX; c++)
		fg_jw_u64(w, fg_sync_wc_names[c], st->wc[c]);
	fg_jw_obj_open(w, "refused");
	for (int r = 1; r < FG_SYNC_REFUSE_MAX; r++)
		fg_jw_u64(w, fg_sync_refuse_names[r], st->refused[r]);
	fg_jw_obj_close(w);
	fg_jw_obj_open(w, "install_refused");
	for (int r = 0; r < FG_STATE_FLOW_MAX; r++)
		fg_jw_u64(w, fg_state_flow_refuse_names[r], st->install_refused[r]);
	fg_jw_obj_close(w);
	fg_jw_arr_open(w, "peers");
	for (uint32_t i = 0; i < st->n_peers; i++) {
		const struct fg_sync_peer_stats *p = &st->peers[i];

		fg_jw_obj_open(w, NULL);
		fg_jw_str(w, "name", p->name);
		fg_jw_str(w, "addr", p->addr);
		fg_jw_u64(w, "node", p->node);
		fg_jw_u64(w, "epoch", p->epoch);
		fg_jw_u64(w, "seq", p->seq);
		fg_jw_i64(w, "last_rx_ms", p->last_rx_ms);
		fg_jw_u64(w, "recv_msgs", p->recv_msgs);
		fg_jw_u64(w, "recv_records", p->recv_records);
		fg_jw_u64(w, "refused", p->refused);
		fg_jw_u64(w, "sent_msgs", p->sent_msgs);
		fg_jw_u64(w, "send_failed", p->send_failed);
		fg_jw_bool(w, "dead", p->dead);
		fg_jw_bool(w, "caught_up", p->caught_up);
		fg_jw_bool(w, "announcing", p->announcing);
		fg_jw_obj_close(w);
	}
	fg_jw_arr_close(w);
	fg_jw_obj_close(w);
}

/* fgctl stats --zero: the snapshot taken then, subtracted from later
 * `stats` answers (control thread only: ops run there one at a time).  A
 * reader-side offset: the workers' counters are never written, and
 * /metrics and telemetry keep counting from the start. */
static struct fg_stats_snap *g_zero;
static uint64_t g_zero_ms;

/* @p v minus its baseline; a counter below its baseline was reset (a
 * service deleted and added again): it counts from 0, as it reads. */
static inline uint64_t since_zero(uint64_t v, uint64_t base)
{
	return v >= base ? v - base : v;
}

static void core_since_zero(struct fg_stats_core *c, const struct fg_stats_core *z)
{
	for (int i = 0; i < FG_CC_MAX; i++)
		c->cc[i] = since_zero(c->cc[i], z->cc[i]);
	for (int i = 0; i < FG_DC_MAX; i++)
		c->dc[i] = since_zero(c->dc[i], z->dc[i]);
	for (int i = 0; i < FG_DROP_MAX; i++)
		c->drops[i] = since_zero(c->drops[i], z->drops[i]);
}

static const struct fg_stats_service *zero_service(uint32_t id)
{
	for (uint32_t i = 0; g_zero && i < g_zero->n_services; i++)
		if (g_zero->services[i].id == id)
			return &g_zero->services[i];
	return NULL;
}

/* Subtracts the baseline in place: per core and port by index, services
 * and backends by id.  Gauges (weights, states, active/inactive
 * connections) are not counters and stay as they are. */
static void snap_since_zero(struct fg_stats_snap *sn)
{
	const struct fg_stats_snap *z = g_zero;

	if (z == NULL)
		return;
	core_since_zero(&sn->total, &z->total);
	for (unsigned int i = 0; i < sn->n_workers && i < z->n_workers; i++)
		core_since_zero(&sn->core[i], &z->core[i]);
	for (unsigned int p = 0; p < sn->n_ports && p < z->n_ports; p++)
		for (int c = 0; c < FG_PC_MAX; c++)
			sn->port[p].c[c] = since_zero(sn->port[p].c[c], z->port[p].c[c]);
	for (uint32_t i = 0; i < sn->n_services; i++) {
		struct fg_stats_service *s = &sn->services[i];
		const struct fg_stats_service *zs = zero_service(s->id);

		if (zs == NULL)
			continue;
		for (int c = 0; c < FG_SC_MAX; c++)
			s->c[c] = since_zero(s->c[c], zs->c[c]);
		for (uint32_t j = 0; j < s->n_backends; j++) {
			struct fg_stats_backend *b = &s->backends[j];

			for (uint32_t k = 0; k < zs->n_backends; k++) {
				if (zs->backends[k].id != b->id)
					continue;
				for (int c = 0; c < FG_BC_MAX; c++)
					b->c[c] = since_zero(b->c[c], zs->backends[k].c[c]);
				break;
			}
		}
	}
}

/* A deep copy of an unscoped snapshot (no per-worker service rows). */
static int snap_dup(const struct fg_stats_snap *sn, struct fg_stats_snap **out)
{
	struct fg_stats_snap *d = malloc(sizeof(*d));

	if (d == NULL)
		return -ENOMEM;
	*d = *sn;
	d->n_services = 0;
	d->services = calloc(sn->n_services ? sn->n_services : 1, sizeof(*d->services));
	if (d->services == NULL) {
		free(d);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < sn->n_services; i++) {
		struct fg_stats_service *o = &d->services[i];

		*o = sn->services[i];
		o->label = o->name[0] ? o->name : o->spec;
		o->core_c = NULL;
		o->backends = calloc(o->n_backends ? o->n_backends : 1, sizeof(*o->backends));
		d->n_services = i + 1;
		if (o->backends == NULL) {
			fg_stats_snap_free(d);
			return -ENOMEM;
		}
		memcpy(o->backends, sn->services[i].backends,
		       o->n_backends * sizeof(*o->backends));
	}
	*out = d;
	return 0;
}

/* Renders the snapshot (fg_stats.h) that telemetry and /metrics render
 * too: one source for names, states and sums.  With a service, only that
 * service: its counters, backends and (per_core) its per-worker counters,
 * no global totals. */
static int op_stats(struct fg_json_writer *w, const char *service, bool per_core,
		    bool zero, void *ctx)
{
	struct fg_dp *dp = ctx;
	struct fg_stats_snap *sn, *all = NULL;
	int rc = fg_stats_snap_take(dp, service,
				    service && per_core ? FG_STATS_SNAP_SVC_CORE : 0, &sn);

	if (rc < 0)
		return rc;
	if (zero) {
		/* the baseline is the whole daemon, whatever this reply shows;
		 * unscoped, exactly the counters of this answer */
		rc = service ? fg_stats_snap_take(dp, NULL, 0, &all) : snap_dup(sn, &all);
		if (rc < 0) {
			fg_stats_snap_free(sn);
			return rc;
		}
	}
	uint64_t zero_ms = g_zero_ms;

	snap_since_zero(sn);
	fg_jw_obj_open(w, NULL);
	fg_jw_u64(w, "workers", sn->n_workers);
	fg_jw_bool(w, "sw_rss", sn->sw_rss);
	/* counters count from this Unix time (ms): the last --zero, 0 = start */
	fg_jw_u64(w, "zeroed_at_ms", zero_ms);
	if (service != NULL) {
		fg_jw_str(w, "scope", "service");
	} else {
		fg_jw_str(w, "scope", "all");
		write_core(w, "total", &sn->total);
	}
	if (per_core && service == NULL) {
		fg_jw_arr_open(w, "per_core");
		for (unsigned int i = 0; i < sn->n_workers; i++)
			write_core(w, NULL, &sn->core[i]);
		fg_jw_arr_close(w);
	} else if (per_core && sn->n_services && sn->services[0].core_c) {
		/* the service's own counters per worker (they sum to its
		 * totals, earlier tables included) */
		fg_jw_arr_open(w, "per_core");
		for (unsigned int i = 0; i < sn->n_workers; i++) {
			fg_jw_obj_open(w, NULL);
			for (int c = 0; c < FG_SC_MAX; c++)
				fg_jw_u64(w, fg_service_counter_names[c],
					  sn->services[0].core_c[i * FG_SC_MAX + c]);
			fg_jw_obj_close(w);
		}
		fg_jw_arr_close(w);
	}
	if (service == NULL) {
		fg_jw_arr_open(w, "ports");
		for (unsigned int p = 0; p < sn->n_ports; p++) {
			fg_jw_obj_open(w, NULL);
			fg_jw_u64(w, "port", p);
			fg_jw_str(w, "name", sn->port[p].name);
			for (int c = 0; c < FG_PC_MAX; c++)
				fg_jw_u64(w, fg_port_counter_names[c], sn->port[p].c[c]);
			fg_jw_obj_close(w);
		}
		fg_jw_arr_close(w);
		write_state(w, &sn->state);
		write_sync(w, &sn->sync);
	}
	fg_jw_arr_open(w, "services");
	for (uint32_t i = 0; i < sn->n_services; i++) {
		const struct fg_stats_service *s = &sn->services[i];

		fg_jw_obj_open(w, NULL);
		fg_jw_u64(w, "id", s->id);
		fg_jw_str(w, "name", s->name);
		fg_jw_str(w, "service", s->spec);
		for (int c = 0; c < FG_SC_MAX; c++)
			fg_jw_u64(w, fg_service_counter_names[c], s->c[c]);
		fg_jw_u64(w, "active_conns", s->active);
		fg_jw_u64(w, "inactive_conns", s->inactive);
		fg_jw_arr_open(w, "backends");
		for (uint32_t j = 0; j < s->n_backends; j++) {
			const struct fg_stats_backend *b = &s->backends[j];

			fg_jw_obj_open(w, NULL);
			fg_jw_u64(w, "id", b->id);
			fg_jw_str(w, "addr", b->addr_str);
			fg_jw_u64(w, "port", b->port);
			fg_jw_u64(w, "weight", b->weight);
			fg_jw_str(w, "state", fg_stats_backend_state_names[b->state]);
			fg_jw_u64(w, "active_conns", b->active);
			fg_jw_u64(w, "inactive_conns", b->inactive);
			for (int c = 0; c < FG_BC_MAX; c++)
				fg_jw_u64(w, fg_backend_counter_names[c], b->c[c]);
			if (b->has_load) {
				fg_jw_obj_open(w, "load");
				fg_jw_str(w, "state", fg_stats_load_state(b));
				fg_jw_dbl(w, "score", (double)b->load.score_milli / 1000.0);
				if (b->load.ever)
					fg_jw_u64(w, "age_ms", b->load.age_ms);
				else
					fg_jw_null(w, "age_ms");
				fg_jw_obj_open(w, "series");
				for (uint32_t k = 0; k < b->load.n_series; k++)
					fg_jw_dbl(w, b->load.series[k], b->load.raw[k]);
				fg_jw_obj_close(w);
				fg_jw_obj_close(w);
			}
			fg_jw_obj_close(w);
		}
		fg_jw_arr_close(w);
		fg_jw_obj_close(w);
	}
	fg_jw_arr_close(w);
	fg_jw_obj_close(w);
	rc = fg_jw_error(w);
	if (zero && rc == 0) {
		fg_stats_snap_free(g_zero);
		g_zero = all;
		all = NULL;
		g_zero_ms = wall_now_ms();
	}
	fg_stats_snap_free(all);
	fg_stats_snap_free(sn);
	return rc;
}

static int op_backend_conns(uint32_t service_id, uint32_t backend_id, uint64_t *active,
			    uint64_t *inactive, void *ctx)
{
	struct fg_dp *dp = ctx;
	uint64_t c[FG_BC_MAX];
	int rc = -ENOENT;

	pthread_mutex_lock(&dp->cfg_lock);
	const struct fg_lb_table *lb = dp->lb;
	uint16_t sid = lb != NULL && service_id < 65536 ? lb->svc_by_id[service_id] : 0;
	const struct fg_lb_backend *b = sid ?
		fg_lb_backend_find(&lb->services[sid - 1], backend_id) : NULL;

	if (b != NULL) {
		for (int k = 0; k < FG_BC_MAX; k++)
			c[k] = fg_lb_be_counter(lb, dp->n_workers, b, k);
		fg_stats_conns(c, active, inactive);
		rc = 0;
	}
	pthread_mutex_unlock(&dp->cfg_lock);
	return rc;
}

/* ------------------------------------------------------------- watch */

/* flows watch: workers post NEW (flow_new) and DESTROY (conntrack destroy
 * hook) events to their SP/SC event ring while fg_worker::watch is set;
 * the control thread drains them here.  A full ring drops events on the
 * worker (counter watch_dropped), never blocks it. */
static int op_watch_set(bool on, void *ctx)
{
	struct fg_dp *dp = ctx;

	for (unsigned int i = 0; i < dp->n_workers; i++) {
		struct fg_worker *w = dp->workers[i];

		__atomic_store_n(&w->watch, on, __ATOMIC_RELEASE);
		if (!on) {
			/* drop what is left: a later watcher starts fresh */
			struct fg_flow_ev ev[64];

			while (rte_ring_sc_dequeue_burst_elem(w->ev_ring, ev, sizeof(ev[0]),
							      RTE_DIM(ev), NULL) > 0)
				;
		}
	}
	return 0;
}

static int op_watch_poll(struct fg_flow_event *out, unsigned int max, void *ctx)
{
	struct fg_dp *dp = ctx;
	struct fg_flow_ev ev[64];
	unsigned int n = 0;

	uint64_t wall = wall_now_ms(), tsc = rte_rdtsc();
	double ms_per_tick = 1000.0 / (double)dp->hz;

	pthread_mutex_lock(&dp->cfg_lock);
	/* round robin over the workers, a bounded batch each */
	for (unsigned int i = 0; i < dp->n_workers && n < max; i++) {
		struct walk_ctx c = {.dp = dp, .lb = dp->lb, .core = i, .wall_ms = wall};
		unsigned int k = rte_ring_sc_dequeue_burst_elem(dp->workers[i]->ev_ring,
				ev, sizeof(ev[0]), RTE_MIN(max - n, RTE_DIM(ev)), NULL);

		for (unsigned int j = 0; j < k; j++, n++) {
			struct ct_flow cf;

			memset(&cf, 0, sizeof(cf));
			cf.family = ev[j].family;
			if (cf.family == CT_V4)
				cf.k4 = ev[j].key.k4;
			else
				cf.k6 = ev[j].key.k6;
			cf.e = ev[j].e;
			cf.has_reply = (ev[j].e.flags & CT_F_NAT) != 0;
			/* ages at the event, then the event's own wall time */
			uint64_t ago = tsc > ev[j].tsc ?
				(uint64_t)((double)(tsc - ev[j].tsc) * ms_per_tick) : 0;

			cf.age_ticks = ev[j].tsc > ev[j].e.last_seen ?
				       ev[j].tsc - ev[j].e.last_seen : 0;
			cf.life_ticks = ev[j].life;
			c.wall_ms = wall > ago ? wall - ago : 0;
			flow_info_fill(&c, &cf, &out[n].flow);
			out[n].flow.ts_ms = c.wall_ms;
			snprintf(out[n].type, sizeof(out[n].type), "%s",
				 ev[j].type == FG_EV_NEW ? "NEW" :
				 ev[j].type == FG_EV_UPDATE ? "UPDATE" : "DESTROY");
			if (ev[j].type == FG_EV_UPDATE)
				snprintf(out[n].flow.prev_state,
					 sizeof(out[n].flow.prev_state), "%s",
					 ev[j].prev_state < CT_ST_MAX ?
					 ct_state_names[ev[j].prev_state] : "?");
			if (ev[j].type == FG_EV_DESTROY) {
				/* a TCP flow that timed out after its FIN/RST closed */
				bool closed = ev[j].reason == CT_DESTROY_EXPIRED &&
					      (cf.e.state == CT_ST_TIME_WAIT ||
					       cf.e.state == CT_ST_CLOSE);

				snprintf(out[n].flow.end_reason,
					 sizeof(out[n].flow.end_reason), "%s",
					 closed ? "closed" : ev[j].reason < CT_DESTROY_MAX ?
					 ct_destroy_names[ev[j].reason] : "?");
			}
		}
	}
	pthread_mutex_unlock(&dp->cfg_lock);
	return (int)n;
}

static int op_backend_placed(uint32_t service_id, uint32_t backend_id, uint64_t *new_flows,
			     uint64_t *new_flows_load, void *ctx)
{
	struct fg_dp *dp = ctx;
	int rc = -ENOENT;

	/* cfg_lock: the table is not freed meanwhile (never taken by workers) */
	pthread_mutex_lock(&dp->cfg_lock);
	const struct fg_lb_table *lb = dp->lb;
	uint16_t si = lb != NULL && service_id < 65536 ? lb->svc_by_id[service_id] : 0;

	if (si != 0) {
		const struct fg_lb_service *s = &lb->services[si - 1];
		const struct fg_lb_backend *b = fg_lb_backend_find(s, backend_id);

		if (b != NULL) {
			*new_flows = fg_lb_be_counter(lb, dp->n_workers, b, FG_BC_new_flows);
			*new_flows_load = fg_lb_be_counter(lb, dp->n_workers, b,
							   FG_BC_new_flows_load);
			rc = 0;
		}
	}
	pthread_mutex_unlock(&dp->cfg_lock);
	return rc;
}

/* The version command's build keys (fg_opts_build_get: the same words as
 * `flowgate --version` and /metrics' flowgate_build_info). */
static void op_build_info(struct fg_json_writer *w, void *ctx)
{
	struct fg_opts_build b;

	RTE_SET_USED(ctx);
	fg_opts_build_get(&b);
	fg_jw_str(w, "version", b.version);
	fg_jw_str(w, "dpdk", b.dpdk);
	fg_jw_str(w, "gpu", b.gpu);
	fg_jw_str(w, "march", b.march);
	fg_jw_str(w, "options", b.options);
}

static const struct fg_ctl_ops g_ops = {
	.build_info = op_build_info,
	.backend_placed = op_backend_placed,
	.config_get = op_config_get,
	.config_apply = fg_config_gate_apply,
	.config_check = fg_config_gate_check,
	.flows_walk = op_flows_walk,
	.flows_count = op_flows_count,
	.stats = op_stats,
	.backend_conns = op_backend_conns,
	.watch_set = op_watch_set,
	.watch_poll = op_watch_poll,
};

int fg_dp_config_load(const char *path, struct fg_config *out)
{
	struct fg_cfg_err ev[32];
	struct fg_cfg_errs errs = {ev, RTE_DIM(ev), 0};
	struct fg_config cfg;
	int rc;

	memset(&cfg, 0, sizeof(cfg));
	rc = fg_config_load(path, &cfg, &errs);
	if (rc == 0)
		rc = fg_config_assign_ids(&cfg, NULL);
	if (rc < 0) {
		for (unsigned int i = 0; i < errs.n && i < errs.max; i++)
			fprintf(stderr, "%s:%u: %s\n", ev[i].file, ev[i].line, ev[i].msg);
		if (errs.n == 0)
			fprintf(stderr, "flowgate: %s: %s\n", path, strerror(-rc));
		fg_config_free(&cfg);
		return rc;
	}
	/* hand over: the caller frees services with free() */
	struct fg_service_cfg *sv = NULL;

	if (cfg.n_services) {
		sv = malloc(cfg.n_services * sizeof(*sv));
		if (sv == NULL) {
			fg_config_free(&cfg);
			return -ENOMEM;
		}
		memcpy(sv, cfg.services, cfg.n_services * sizeof(*sv));
	}
	free(out->services);
	*out = cfg;
	out->services = sv;
	cfg.n_services = 0;
	fg_config_free(&cfg);
	if (out->ct_capacity == 0)
		out->ct_capacity = CT_DEFAULT_CAPACITY;
	return 0;
}

/* ------------------------------------------------------------ health */

/* The checker's set_health callback (fg_health.h), on the checker thread.
 * The verdict reaches the workers through the config: copy the running
 * config, fg_health_mark() (every down backend gets health_down, so a
 * verdict racing another transition or a config apply is never lost),
 * apply it like any edit (all-or-nothing, RCU publish).  fg_lb.c builds a
 * health_down backend like a drained one: no new flows.  Its existing
 * flows follow the service's on_fail: keep (they stay until they end) or
 * reset (deleted here, through the shards' mailboxes; their next packets
 * are new flows on the remaining backends). */
static int health_set(uint32_t service_id, uint32_t backend_id, bool up,
		      const char *reason, void *ctx)
{
	struct fg_dp *dp = ctx;
	struct fg_flow_filter f;
	struct fg_config next;
	char err[256] = "", name[96] = "?", addr[64] = "?";
	bool reset = false;
	int rc;

	memset(&next, 0, sizeof(next));
	fg_flow_filter_init(&f);
	pthread_mutex_lock(&dp->cfg_lock);
	rc = fg_config_copy(&next, dp->cfg);
	if (rc == 0) {
		fg_health_mark(dp->health, &next);
		rc = fg_dp_apply_config(dp, &next, err, sizeof(err));
	}
	for (uint32_t i = 0; rc == 0 && i < dp->cfg->n_services; i++) {
		const struct fg_service_cfg *sc = &dp->cfg->services[i];

		if (sc->id != service_id)
			continue;
		for (uint32_t j = 0; j < sc->n_backends; j++) {
			const struct fg_backend_cfg *bc = &sc->backends[j];

			if (bc->id != backend_id)
				continue;
			fg_addr_format(&bc->addr, addr, sizeof(addr));
			if (!up && sc->on_fail == FG_FAIL_RESET) {
				reset = true;
				f.service_id = service_id;
				f.has_backend = true;
				f.backend = bc->addr;
				f.backend_port = bc->port ? bc->port : sc->port;
			}
		}
		if (sc->name[0])
			snprintf(name, sizeof(name), "%s", sc->name);
		else
			fg_service_spec_format(&sc->vip, sc->port, sc->proto, name,
					       sizeof(name));
	}
	pthread_mutex_unlock(&dp->cfg_lock);
	fg_config_free(&next);
	if (rc < 0) {
		fprintf(stderr, "flowgate: health: service %u backend %u %s: apply "
			"failed: %s\n", service_id, backend_id, up ? "up" : "down",
			err[0] ? err : strerror(-rc));
		return rc;
	}
	printf("flowgate: health: %s backend %s (id %u) %s: %s\n", name, addr,
	       backend_id, up ? "up" : "down", reason ? reason : "");
	if (reset) {
		int64_t n = op_flows_walk(&f, NULL, NULL, true, dp);

		if (n < 0)
			fprintf(stderr, "flowgate: health: on_fail reset of %s backend "
				"%s: %s\n", name, addr, strerror((int)-n));
		else
			printf("flowgate: health: on_fail reset: %lld flows of %s "
			       "backend %s deleted\n", (long long)n, name, addr);
	}
	fflush(stdout);
	return 0;
}

/* The audit trail: one NOTICE line per change request (fg_ctl_server.h),
 * on the control thread. */
static void audit_log(const struct fg_ctl_audit *a, void *ctx)
{
	RTE_SET_USED(ctx);
	FG_LOG(NOTICE, "audit: uid=%ld pid=%ld cmd=%s args=%s result=%s%s%s",
	       a->uid, a->pid, a->cmd, a->args, a->ok ? "ok" : "refused",
	       a->ok ? "" : ": ", a->error);
}

/* control_socket_ro PATH group G: G resolved here (a name, else a number),
 * each failure one sentence with its fix. */
static int control_listen_ro(struct fg_ctl_server *srv, const struct fg_config *cfg)
{
	const char *path = cfg->control_socket_ro, *grp = cfg->control_socket_ro_group;
	struct group gr, *res = NULL;
	char buf[4096], *end;
	unsigned long gid;
	int rc;

	if (path[0] == '\0')
		return 0;
	if (getgrnam_r(grp, &gr, buf, sizeof(buf), &res) == 0 && res != NULL) {
		gid = gr.gr_gid;
	} else {
		errno = 0;
		gid = strtoul(grp, &end, 10);
		if (grp[0] < '0' || grp[0] > '9' || *end || errno || gid > INT32_MAX) {
			FG_LOG(ERR, "control_socket_ro %s group %s: no such group on this host: "
			       "create it (groupadd --system %s) or name an existing one", path,
			       grp, grp);
			return -ENOENT;
		}
	}
	rc = fg_ctl_server_listen_ro(srv, path, (gid_t)gid);
	if (rc < 0)
		FG_LOG(ERR, "control_socket_ro %s: %s: give it a path of its own in a directory "
		       "only root may write (like /run/flowgate), with no other socket there",
		       path, strerror(-rc));
	else
		FG_LOG(INFO, "read-only control socket %s (group %s, mode 0660)", path, grp);
	return rc;
}

int fg_control_start(struct fg_dp *dp, const char *socket_path, const char *config_path,
		     int idle_timeout_ms)
{
	struct fg_ctl_server_params p;
	int rc;

	/* the checker first: the server answers "health" from it */
	rc = fg_health_create(&(struct fg_health_params){
				      .set_health = health_set, .ctx = dp },
			      dp->cfg, &dp->health);
	if (rc < 0) {
		fprintf(stderr, "flowgate: health checker: %s\n", strerror(-rc));
		return rc;
	}
	memset(&p, 0, sizeof(p));
	p.socket_path = socket_path;
	p.config_path = config_path;
	p.ops = &g_ops;
	dp->gate = (struct fg_config_gate){ .lock = &dp->cfg_lock, .in_force = config_in_force,
					    .apply = config_apply_locked, .ctx = dp };
	p.ctx = dp;
	p.health = dp->health;
	p.idle_timeout_ms = idle_timeout_ms;
	p.audit = audit_log;
	rc = fg_ctl_server_create(&p, &dp->ctl);
	if (rc < 0) {
		FG_LOG(ERR, "control socket %s: %s: %s",
		       socket_path ? socket_path : FG_CTL_DEFAULT_SOCKET, strerror(-rc),
		       rc == -EADDRINUSE ? "another flowgate answers there: stop it, or give "
		       "this one -s PATH" : rc == -EPERM ? "its directory is writable by "
		       "others: give -s PATH in a directory only root may write (like "
		       "/run/flowgate)" : "give -s PATH (or control_socket) in a directory "
		       "flowgate may write");
		goto fail;
	}
	rc = control_listen_ro(dp->ctl, dp->cfg);
	if (rc < 0)
		goto fail;
	rc = fg_ctl_server_start(dp->ctl);
	if (rc < 0) {
		fprintf(stderr, "flowgate: control thread: %s\n", strerror(-rc));
		goto fail;
	}
	rc = fg_health_start(dp->health);
	if (rc < 0) {
		fprintf(stderr, "flowgate: health thread: %s\n", strerror(-rc));
		goto fail;
	}
	return 0;
fail:
	fg_ctl_server_destroy(dp->ctl);
	dp->ctl = NULL;
	fg_health_destroy(dp->health);
	dp->health = NULL;
	return rc;
}

void fg_control_stop(struct fg_dp *dp)
{
	RTE_SET_USED(dp);
	fg_stats_snap_free(g_zero);
	g_zero = NULL;
	/* checker first: its callback applies configs and walks shards */
	fg_health_stop(dp->health);
	fg_ctl_server_destroy(dp->ctl);
	dp->ctl = NULL;
	fg_health_destroy(dp->health);
	dp->health = NULL;
}
