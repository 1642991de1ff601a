/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The simulated LLM cluster of `flowgate-bench inference` (fgb_infer.h).
 *
 * Placement is flowgate's own code, not a model of it:
 * - maglev: the table of fg_maglev_build() over the workers' stable keys,
 *   slot ct_hash_crc(5-tuple) % M, as the worker computes it;
 * - lc: least open connections / weight, ties to the lower index (the
 *   rule of the worker's pick_lc());
 * - maglev-load: fg_place_pick() (pkt/fg_place.h) over load slots filled
 *   as the health checker fills them: every interval each worker's
 *   /metrics page is rendered in vLLM's text format (num_requests_running,
 *   num_requests_waiting, kv_cache_usage_perc) from the numbers it had
 *   lag_ms earlier, read back with fg_loadsig_eval() (the checker's parser
 *   and score), and a signal whose last good scrape is older than the
 *   stale age, or whose last scrape failed, is stale (plain Maglev).
 */
#include "fgb_infer.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ct.h"
#include "fg_grow.h"
#include "fg_loadsig.h"
#include "fg_maglev.h"
#include "fg_place.h"

const char *const fgb_inf_sched_names[FGB_INF_NSCHED] = {
#define FG_X(e, n) n,
	FGB_INF_SCHED_LIST(FG_X)
#undef FG_X
};

#define NONE UINT32_MAX
#define MAGLEV_M FG_MAGLEV_MIN_SIZE

/* ---- random (splitmix64) ------------------------------------------------- */

struct rng {
	uint64_t s;
};

static uint64_t rnext(struct rng *r)
{
	uint64_t z = (r->s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static double runi(struct rng *r)
{
	return ((double)(rnext(r) >> 11) + 0.5) / 9007199254740992.0;
}

/* ---- events --------------------------------------------------------------- */

enum ev_type { EV_ARRIVE, EV_DONE, EV_SNAP, EV_SCRAPE };

struct ev {
	double t;
	uint32_t type, a, b; /* ARRIVE: request; DONE: worker, slot; SNAP/SCRAPE: worker */
	uint64_t seq;        /* FIFO among equal times: deterministic */
};

struct heap {
	struct ev *v;
	size_t n, cap;
};

static bool ev_less(const struct ev *x, const struct ev *y)
{
	return x->t < y->t || (x->t == y->t && x->seq < y->seq);
}

static int heap_push(struct heap *h, struct ev e)
{
	struct ev *v = fg_grow(h->v, &h->cap, h->n, sizeof(*v), 1024);

	if (!v)
		return -ENOMEM;
	h->v = v;
	size_t i = h->n++;

	while (i && ev_less(&e, &h->v[(i - 1) / 2])) {
		h->v[i] = h->v[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	h->v[i] = e;
	return 0;
}

static struct ev heap_pop(struct heap *h)
{
	struct ev top = h->v[0], last = h->v[--h->n];
	size_t i = 0;

	for (;;) {
		size_t c = 2 * i + 1;

		if (c >= h->n)
			break;
		if (c + 1 < h->n && ev_less(&h->v[c + 1], &h->v[c]))
			c++;
		if (!ev_less(&h->v[c], &last))
			break;
		h->v[i] = h->v[c];
		i = c;
	}
	if (h->n)
		h->v[i] = last;
	return top;
}

/* ---- state ---------------------------------------------------------------- */

struct conn {
	struct ct_key4 key;
	uint32_t worker; /* where it was placed (NONE until its first request) */
	uint32_t left;   /* its requests not finished yet */
	bool moved;      /* a request served off its worker */
};

struct worker {
	double speed;
	uint32_t slots;
	uint64_t kv_cap, kv_used;
	uint32_t running;
	uint32_t *slot_req;  /* request in each slot */
	uint32_t *free_slot; /* stack of free slots */
	uint32_t n_free;
	uint32_t *q;         /* waiting requests: ring */
	size_t qh, qn, qcap;
	uint32_t open_conns; /* lc */
	uint64_t outstanding; /* l7: tokens of its unfinished requests */
	double busy_s;       /* slot-seconds */
	uint32_t snap_running, snap_waiting; /* the numbers the next scrape reads */
	double snap_kv, last_ok;
};

struct sim {
	const struct fgb_inf_cfg *c;
	enum fgb_inf_sched s;
	uint32_t nr;
	double *arrive; /* simulated arrival times */
	uint32_t *conn_of, *worker_of;
	double *ttft, *e2e, *kvq;
	struct conn *conn;
	uint32_t nconn;
	struct worker w[FGB_INF_MAXW];
	uint32_t *table;
	uint32_t weights[FGB_INF_MAXW];
	struct fg_load_slot slot[FGB_INF_MAXW];
	uint32_t stale_ms;
	struct heap h;
	uint64_t seq;
	struct rng scrape_rng, conn_rng, pick_rng;
	uint32_t *idle; /* HTTP/1.1: open connections with no request in flight */
	uint32_t n_idle;
	uint32_t n_done;
	double end;
	struct fgb_inf_result *res;
};

static int push(struct sim *m, double t, uint32_t type, uint32_t a, uint32_t b)
{
	return heap_push(&m->h, (struct ev){ t, type, a, b, m->seq++ });
}

static uint64_t tokens(const struct fgb_trace_req *q)
{
	return (uint64_t)q->prompt + q->output;
}

/* service seconds at speed 1: whole request, and its prefill part */
static double service_s(const struct fgb_inf_cfg *c, const struct fgb_trace_req *q,
			double *prefill)
{
	double pre = q->prompt * c->prefill_ms / 1000.0;

	if (prefill)
		*prefill = pre;
	return pre + q->output * c->decode_ms / 1000.0;
}

double fgb_inf_capacity(const struct fgb_inf_cfg *c)
{
	const struct fgb_trace *t = c->trace;
	double s_sum = 0, tok_w = 0, cap = 0;

	for (size_t i = 0; i < t->n; i++) {
		double s = service_s(c, &t->req[i], NULL);

		s_sum += s;
		tok_w += s * (double)tokens(&t->req[i]);
	}
	if (!(s_sum > 0))
		return 0;
	double mean_s = s_sum / (double)t->n, occ = tok_w / s_sum;

	for (uint32_t i = 0; i < c->nw; i++) {
		double conc = c->w[i].slots;

		if (occ > 0 && c->w[i].kv_tokens / occ < conc)
			conc = c->w[i].kv_tokens / occ;
		cap += c->w[i].speed * conc / mean_s;
	}
	return cap;
}

/* ---- connections (the same for every scheduler of one seed) -------------- */

static uint32_t draw_quota(struct rng *g, double mean)
{
	if (mean <= 1.0)
		return 1;
	double q = 1.0 + floor(log(runi(g)) / log(1.0 - 1.0 / mean));

	return q < 1e6 ? (uint32_t)q : 1000000u;
}

static void conn_open(struct sim *m, struct conn *cn, uint32_t quota)
{
	memset(cn, 0, sizeof(*cn));
	cn->key.saddr = (uint32_t)rnext(&m->conn_rng);
	cn->key.daddr = 0x0a000001u;
	cn->key.sport = (uint16_t)(1024 + rnext(&m->conn_rng) % 64000);
	cn->key.dport = 8000;
	cn->key.proto = 6;
	cn->worker = NONE;
	cn->left = quota;
}

/* HTTP/1.1 (mux 0): the connection of request @p ri when it arrives: an
 * idle one drawn at random, else a new one */
static uint32_t conn_take(struct sim *m)
{
	if (m->n_idle) {
		uint32_t k = (uint32_t)(rnext(&m->pick_rng) % m->n_idle), ci = m->idle[k];

		m->idle[k] = m->idle[--m->n_idle];
		return ci;
	}
	conn_open(m, &m->conn[m->nconn], draw_quota(&m->conn_rng, m->c->keepalive));
	return m->nconn++;
}

/* HTTP/2 (mux N): every request's connection, drawn before the run (the
 * same for every scheduler): a uniform one of the N open; a connection is
 * replaced once it has carried its quota */
static int conns_mux(struct sim *m)
{
	uint32_t nc = m->c->mux;
	uint32_t *pool = malloc(nc * sizeof(*pool)), *quota = malloc(nc * sizeof(*quota));

	if (!pool || !quota) {
		free(pool);
		free(quota);
		return -ENOMEM;
	}
	for (uint32_t k = 0; k < nc; k++)
		pool[k] = NONE;
	for (uint32_t i = 0; i < m->nr; i++) {
		uint32_t u = (uint32_t)(rnext(&m->pick_rng) % nc);

		if (pool[u] == NONE) {
			conn_open(m, &m->conn[m->nconn], 0);
			pool[u] = m->nconn++;
			quota[u] = draw_quota(&m->conn_rng, m->c->keepalive);
		}
		m->conn_of[i] = pool[u];
		m->conn[pool[u]].left++;
		if (--quota[u] == 0)
			pool[u] = NONE;
	}
	free(pool);
	free(quota);
	return 0;
}

/* ---- workers -------------------------------------------------------------- */

static int q_push(struct worker *x, uint32_t ri)
{
	if (x->qn == x->qcap) {
		size_t cap = x->qcap ? x->qcap * 2 : 256;
		uint32_t *v = malloc(cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		for (size_t k = 0; k < x->qn; k++)
			v[k] = x->q[(x->qh + k) % x->qcap];
		free(x->q);
		x->q = v;
		x->qh = 0;
		x->qcap = cap;
	}
	x->q[(x->qh + x->qn++) % x->qcap] = ri;
	return 0;
}

/* Admits worker @p wi's waiting requests in arrival order while a slot is
 * free and the KV cache has room for the head (head-of-line blocking, as
 * vLLM's FCFS scheduler). */
static int admit(struct sim *m, uint32_t wi, double now)
{
	struct worker *x = &m->w[wi];

	while (x->n_free && x->qn) {
		uint32_t ri = x->q[x->qh];
		const struct fgb_trace_req *q = &m->c->trace->req[ri];
		uint64_t need = tokens(q);

		if (x->running && x->kv_used + need > x->kv_cap)
			break;
		x->qh = (x->qh + 1) % x->qcap;
		x->qn--;
		uint32_t k = x->free_slot[--x->n_free];
		double pre, d = service_s(m->c, q, &pre) / x->speed;

		x->slot_req[k] = ri;
		x->running++;
		x->kv_used += need;
		x->busy_s += d;
		m->kvq[ri] = now - m->arrive[ri];
		m->ttft[ri] = m->kvq[ri] + pre / x->speed;
		if (push(m, now + d, EV_DONE, wi, k))
			return -ENOMEM;
	}
	return 0;
}

static int workers_init(struct sim *m)
{
	const struct fgb_inf_cfg *c = m->c;
	uint64_t keys[FGB_INF_MAXW];

	for (uint32_t i = 0; i < c->nw; i++) {
		struct worker *x = &m->w[i];
		uint8_t a[16] = { 10, 1, (uint8_t)(i >> 8), (uint8_t)(i + 1) };

		x->speed = c->w[i].speed;
		x->slots = c->w[i].slots;
		x->kv_cap = c->w[i].kv_tokens;
		x->slot_req = malloc(x->slots * sizeof(uint32_t));
		x->free_slot = malloc(x->slots * sizeof(uint32_t));
		if (!x->slot_req || !x->free_slot)
			return -ENOMEM;
		for (uint32_t k = 0; k < x->slots; k++)
			x->free_slot[k] = x->slots - 1 - k;
		x->n_free = x->slots;
		x->last_ok = -1e300;
		keys[i] = fg_maglev_backend_key(a, 8000);
		m->weights[i] = c->speed_weights ? (uint32_t)(c->w[i].speed * 1000 + 0.5) : 1;
		if (!m->weights[i])
			m->weights[i] = 1;
	}
	return fg_maglev_build(m->weights, keys, c->nw, MAGLEV_M, m->table);
}

/* ---- signals -------------------------------------------------------------- */

/* Renders worker @p wi's snapshot as vLLM's /metrics page and reads it back
 * with the health checker's code: the load slot placement sees. */
static void scrape(struct sim *m, uint32_t wi, double now)
{
	const struct worker *x = &m->w[wi];
	struct fg_load_slot *sl = &m->slot[wi];
	const struct fg_metrics_cfg *mc = &m->c->metrics;
	char page[1024];

	if (m->c->scrape_loss > 0 && runi(&m->scrape_rng) < m->c->scrape_loss) {
		sl->flags &= ~FG_LOAD_F_FRESH; /* a timeout: stale until the next good one */
		return;
	}
	int n = snprintf(page, sizeof(page),
			 "# HELP vllm:num_requests_running Number of requests in model execution batches.\n"
			 "# TYPE vllm:num_requests_running gauge\n"
			 "vllm:num_requests_running{engine=\"0\",model_name=\"sim\"} %u.0\n"
			 "# HELP vllm:num_requests_waiting Number of requests waiting to be processed.\n"
			 "# TYPE vllm:num_requests_waiting gauge\n"
			 "vllm:num_requests_waiting{engine=\"0\",model_name=\"sim\"} %u.0\n"
			 "# HELP vllm:kv_cache_usage_perc KV-cache usage. 1 means 100 percent usage.\n"
			 "# TYPE vllm:kv_cache_usage_perc gauge\n"
			 "vllm:kv_cache_usage_perc{engine=\"0\",model_name=\"sim\"} %.6f\n",
			 x->snap_running, x->snap_waiting, x->snap_kv);
	double raw[FG_LOAD_SERIES_MAX];
	uint32_t score = 0;
	char why[96];

	if (fg_loadsig_eval(mc, page, (size_t)n, 0, UINT32_MAX, raw, &score, why, sizeof(why)) !=
	    FG_LS_scrapes_ok) {
		sl->flags &= ~FG_LOAD_F_FRESH;
		return;
	}
	sl->score_milli = score;
	sl->flags = FG_LOAD_F_FRESH | FG_LOAD_F_USABLE |
		    (mc->saturate_milli && score >= mc->saturate_milli ? FG_LOAD_F_SAT : 0);
	m->w[wi].last_ok = now;
}

static void snapshot(struct worker *x)
{
	x->snap_running = x->running;
	x->snap_waiting = (uint32_t)x->qn;
	x->snap_kv = x->kv_cap ? (double)x->kv_used / (double)x->kv_cap : 1.0;
	if (x->snap_kv > 1)
		x->snap_kv = 1;
}

/* ---- placement ------------------------------------------------------------ */

static uint32_t place_l4(struct sim *m, const struct conn *cn, double now)
{
	uint32_t sig = ct_hash_crc(&cn->key, sizeof(cn->key)), nw = m->c->nw, best = 0;
	enum fg_place_how how = FG_PLACE_MAGLEV;

	if (m->s == FGB_INF_MAGLEV)
		return fg_maglev_lookup(m->table, MAGLEV_M, sig);
	if (m->s == FGB_INF_LC) {
		for (uint32_t k = 1; k < nw; k++)
			if ((uint64_t)m->w[k].open_conns * m->weights[best] <
			    (uint64_t)m->w[best].open_conns * m->weights[k])
				best = k;
		return best;
	}
	/* the daemon's poll: a signal whose last good scrape is too old is stale */
	for (uint32_t k = 0; k < nw; k++)
		if ((now - m->w[k].last_ok) * 1000.0 > m->stale_ms)
			m->slot[k].flags &= ~FG_LOAD_F_FRESH;
	best = fg_place_pick(m->table, MAGLEV_M, sig, m->slot, nw, m->c->metrics.margin_milli,
			     &how);
	m->res->stale += how == FG_PLACE_STALE;
	m->res->placed_load += how == FG_PLACE_LOAD || how == FG_PLACE_SATURATED;
	return best;
}

/* l7-least-loaded: the worker with the fewest outstanding tokens */
static uint32_t place_l7(const struct sim *m)
{
	uint32_t best = 0;

	for (uint32_t k = 1; k < m->c->nw; k++)
		if (m->w[k].outstanding < m->w[best].outstanding)
			best = k;
	return best;
}

static int on_arrive(struct sim *m, uint32_t ri, double now)
{
	struct conn *cn;
	uint32_t wi;

	if (!m->c->mux)
		m->conn_of[ri] = conn_take(m);
	cn = &m->conn[m->conn_of[ri]];
	if (ri + 1 < m->nr && push(m, m->arrive[ri + 1], EV_ARRIVE, ri + 1, 0))
		return -ENOMEM;
	if (cn->worker == NONE)
		m->res->connections++;
	if (m->s == FGB_INF_L7) {
		wi = place_l7(m);
		if (cn->worker == NONE)
			cn->worker = wi;
	} else {
		if (cn->worker == NONE) {
			cn->worker = place_l4(m, cn, now);
			if (cn->worker >= m->c->nw)
				return -EINVAL; /* no usable worker: cannot happen here */
			m->w[cn->worker].open_conns++;
		}
		wi = cn->worker;
	}
	m->worker_of[ri] = wi;
	m->w[wi].outstanding += tokens(&m->c->trace->req[ri]);
	if (q_push(&m->w[wi], ri))
		return -ENOMEM;
	return admit(m, wi, now);
}

static int on_done(struct sim *m, uint32_t wi, uint32_t k, double now)
{
	struct worker *x = &m->w[wi];
	uint32_t ri = x->slot_req[k];
	const struct fgb_trace_req *q = &m->c->trace->req[ri];
	struct conn *cn = &m->conn[m->conn_of[ri]];

	x->free_slot[x->n_free++] = k;
	x->running--;
	x->kv_used -= tokens(q);
	x->outstanding -= tokens(q);
	m->e2e[ri] = now - m->arrive[ri];
	m->n_done++;
	m->end = now;
	/* L4: the reply must come from the connection's worker; l7: counts the
	 * client connections whose requests the router spread */
	if (wi != cn->worker)
		cn->moved = true;
	if (--cn->left == 0) {
		if (m->s != FGB_INF_L7)
			m->w[cn->worker].open_conns--;
	} else if (!m->c->mux) {
		m->idle[m->n_idle++] = m->conn_of[ri];
	}
	return admit(m, wi, now);
}

/* ---- a run ---------------------------------------------------------------- */

static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double pct_ms(double *v, size_t n, double p)
{
	if (!n)
		return 0;
	size_t k = (size_t)(p * (double)(n - 1) + 0.5);

	return v[k < n ? k : n - 1] * 1000.0;
}

static void summarize(struct sim *m)
{
	struct fgb_inf_result *r = m->res;
	size_t n = m->nr;

	qsort(m->ttft, n, sizeof(double), cmp_dbl);
	qsort(m->e2e, n, sizeof(double), cmp_dbl);
	qsort(m->kvq, n, sizeof(double), cmp_dbl);
	r->requests = n;
	r->ttft_p50_ms = pct_ms(m->ttft, n, 0.50);
	r->ttft_p99_ms = pct_ms(m->ttft, n, 0.99);
	r->e2e_p50_ms = pct_ms(m->e2e, n, 0.50);
	r->e2e_p99_ms = pct_ms(m->e2e, n, 0.99);
	r->kv_queue_p99_ms = pct_ms(m->kvq, n, 0.99);
	r->run_s = m->end - m->arrive[0];
	for (uint32_t i = 0; i < m->c->nw; i++) {
		double u = r->run_s > 0 ? m->w[i].busy_s / (m->w[i].slots * r->run_s) : 0;

		r->util[i] = u > 1 ? 1 : u;
	}
	for (uint32_t k = 0; k < m->nconn; k++)
		r->moved += m->conn[k].moved;
}

static int loop(struct sim *m)
{
	const struct fgb_inf_cfg *c = m->c;
	double iv = c->interval_ms / 1000.0, lag = c->lag_ms / 1000.0;
	int rc = push(m, m->arrive[0], EV_ARRIVE, 0, 0);

	for (uint32_t i = 0; !rc && m->s == FGB_INF_MLOAD && i < c->nw; i++) {
		/* first scrapes spread over one interval, as the checker does */
		double t0 = m->arrive[0] + iv * i / c->nw;

		rc = push(m, t0, EV_SNAP, i, 0);
		if (!rc)
			rc = push(m, t0 + lag, EV_SCRAPE, i, 0);
	}
	while (!rc && m->h.n && m->n_done < m->nr) {
		struct ev e = heap_pop(&m->h);

		switch (e.type) {
		case EV_ARRIVE:
			rc = on_arrive(m, e.a, e.t);
			break;
		case EV_DONE:
			rc = on_done(m, e.a, e.b, e.t);
			break;
		case EV_SNAP:
			snapshot(&m->w[e.a]);
			rc = push(m, e.t + iv, EV_SNAP, e.a, 0);
			break;
		default:
			scrape(m, e.a, e.t);
			rc = push(m, e.t + iv, EV_SCRAPE, e.a, 0);
			break;
		}
	}
	return rc;
}

static void sim_free(struct sim *m)
{
	for (uint32_t i = 0; i < FGB_INF_MAXW; i++) {
		free(m->w[i].slot_req);
		free(m->w[i].free_slot);
		free(m->w[i].q);
	}
	free(m->h.v);
	free(m->arrive);
	free(m->conn_of);
	free(m->worker_of);
	free(m->ttft);
	free(m->e2e);
	free(m->kvq);
	free(m->conn);
	free(m->idle);
	free(m->table);
	free(m);
}

int fgb_inf_run(const struct fgb_inf_cfg *c, enum fgb_inf_sched s, uint64_t seed,
		struct fgb_inf_result *res)
{
	const struct fgb_trace *t = c->trace;
	double cap = fgb_inf_capacity(c);
	struct sim *m;
	int rc = -ENOMEM;

	memset(res, 0, sizeof(*res));
	if (!t->n || t->n > UINT32_MAX - 1 || !(t->req[t->n - 1].t_s > 0) || !(cap > 0) ||
	    !c->nw || c->nw > FGB_INF_MAXW)
		return -EINVAL;
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->c = c;
	m->s = s;
	m->res = res;
	m->nr = (uint32_t)t->n;
	m->stale_ms = fg_loadsig_stale_ms(&c->metrics, c->interval_ms);
	m->scrape_rng.s = seed * 0x9E3779B97F4A7C15ULL + 29;
	m->conn_rng.s = seed * 0x2545F4914F6CDD1DULL + 11;
	m->pick_rng.s = seed * 0xD6E8FEB86659FD93ULL + 17;
	m->arrive = malloc(m->nr * sizeof(double));
	m->conn_of = malloc(m->nr * sizeof(uint32_t));
	m->worker_of = malloc(m->nr * sizeof(uint32_t));
	m->ttft = malloc(m->nr * sizeof(double));
	m->e2e = malloc(m->nr * sizeof(double));
	m->kvq = malloc(m->nr * sizeof(double));
	m->conn = malloc(m->nr * sizeof(struct conn));
	m->idle = malloc(m->nr * sizeof(uint32_t));
	m->table = malloc(MAGLEV_M * sizeof(uint32_t));
	if (!m->arrive || !m->conn_of || !m->worker_of || !m->ttft || !m->e2e || !m->kvq ||
	    !m->conn || !m->idle || !m->table)
		goto out;
	/* the trace's spacing, stretched to offer load x capacity */
	res->time_scale = ((double)t->n / t->req[t->n - 1].t_s) / (c->load * cap);
	for (uint32_t i = 0; i < m->nr; i++)
		m->arrive[i] = t->req[i].t_s * res->time_scale;
	rc = workers_init(m);
	if (!rc && c->mux)
		rc = conns_mux(m);
	if (!rc)
		rc = loop(m);
	if (!rc && m->n_done != m->nr)
		rc = -EINVAL;
	if (!rc)
		summarize(m);
out:
	sim_free(m);
	return rc;
}
