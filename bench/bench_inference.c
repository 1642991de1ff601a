/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * flowgate-bench inference: an LLM inference cluster, simulated event by
 * event, behind flowgate's real placement code.
 *
 *   flowgate-bench inference [--scheduler maglev|lc|maglev-load|all]
 *       [--load F] [--seed N] [--runs R] [--workers N] [--slots S]
 *       [--requests N] [--interval-ms MS] [--saturate SCORE] [--margin SCORE]
 *       [--half-slots] [--json]
 *
 * The cluster (default): 4 workers with 8 continuous-batching slots each;
 * worker 3 runs 2x slower (--half-slots: worker 2 also has half the
 * slots).  A request holds a slot for prefill + output tokens x 5 ms x the
 * worker's slowness; output tokens are log-normal (median 200, sigma 1,
 * clipped to 8..4096: a 100x spread, as LLM replies have), prompts
 * log-normal (median 500).  A worker whose slots are all busy queues
 * requests (FIFO).
 *
 * Clients (open loop): Poisson arrivals at --load x the cluster's
 * capacity.  Half of the requests open a new TCP connection (a random
 * client address and port: a new flow), the others reuse an idle
 * kept-alive connection when there is one; a connection closes after a
 * geometric number of requests (mean 3).  A request on a kept-alive
 * connection goes where its connection is (the conntrack entry): only new
 * connections are placed.  Same seed, same trace for every scheduler.
 *
 * Placement of a new connection, with the daemon's own code:
 * - maglev: the Maglev table of fg_maglev_build() (weights 1), slot
 *   ct_hash_crc(5-tuple) % M, exactly as the worker;
 * - lc: least open connections / weight, ties to the lower index (the
 *   rule of the worker's pick_lc());
 * - maglev-load: fg_place_pick() (pkt/fg_place.h) over load slots built
 *   from signals sampled as the health checker does: every --interval-ms
 *   (default 250) each worker's /metrics page is rendered in vLLM's text
 *   format from its true state (num_requests_waiting, _running,
 *   kv_cache_usage_perc) and read back with fg_loadsig_eval() (the
 *   checker's parser and score, vLLM preset); placement sees the last
 *   scrape only, like the daemon.
 *
 * Reported per scheduler (median of --runs runs with seeds N, N+1, ...):
 * p50/p99/p99.9 request latency (arrival to last token), time to first
 * token p99, per-worker utilisation, flows placed on stale signals, and
 * moved_connections: requests whose reply came from a worker other than
 * the one that served their connection's first request (must be 0).
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ct.h"
#include "fg_config.h"
#include "fg_loadsig.h"
#include "fg_maglev.h"
#include "fg_place.h"

#define MAXW 16
#define MAXSLOTS 64

enum sched { S_MAGLEV, S_LC, S_MLOAD, S_ALL };
static const char *const sched_names[] = { "maglev", "lc", "maglev-load" };

struct opts {
	int sched;
	double load;
	uint64_t seed;
	unsigned int runs, workers, slots, requests, interval_ms;
	uint32_t saturate_milli, margin_milli;
	bool half_slots, json;
};

/* ---- random -------------------------------------------------------------- */

struct rng {
	uint64_t s;
};

static uint64_t rnext(struct rng *r)
{
	/* splitmix64 */
	uint64_t z = (r->s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static double runi(struct rng *r) { return ((double)(rnext(r) >> 11) + 0.5) / 9007199254740992.0; }
static double rexp(struct rng *r, double mean) { return -mean * log(runi(r)); }
static double rnorm(struct rng *r)
{
	return sqrt(-2.0 * log(runi(r))) * cos(2.0 * M_PI * runi(r));
}

/* ---- the trace (same for every scheduler) -------------------------------- */

struct req {
	double t_arrive;
	double service_s;   /* at speed 1 */
	double prefill_s;   /* at speed 1 */
	bool new_conn;      /* opens a new connection (else reuses, if one is idle) */
	uint32_t keep;      /* new connection: requests it carries before closing */
	struct ct_key4 key; /* new connection's tuple */
	uint32_t pick;      /* which idle connection to reuse (random) */
};

#define TOKEN_S 0.005
#define PREFILL_TOKEN_S 0.0002

static double mean_service_s(void)
{
	/* E[clip(lognormal)] ~ E[lognormal] (clipping is rare): median x e^(s^2/2) */
	return 200.0 * exp(0.5) * TOKEN_S + 500.0 * exp(0.5 * 0.64) * PREFILL_TOKEN_S;
}

static void trace_make(struct req *r, unsigned int n, double rate, uint64_t seed)
{
	struct rng g = { seed * 0x2545F4914F6CDD1DULL + 7 };
	double t = 0;

	for (unsigned int i = 0; i < n; i++) {
		t += rexp(&g, 1.0 / rate);
		double out = exp(log(200.0) + 1.0 * rnorm(&g));
		double in = exp(log(500.0) + 0.8 * rnorm(&g));

		out = out < 8 ? 8 : out > 4096 ? 4096 : out;
		in = in < 16 ? 16 : in > 8192 ? 8192 : in;
		r[i].t_arrive = t;
		r[i].prefill_s = in * PREFILL_TOKEN_S;
		r[i].service_s = r[i].prefill_s + out * TOKEN_S;
		r[i].new_conn = runi(&g) < 0.5;
		r[i].keep = 1;
		while (runi(&g) < 2.0 / 3.0 && r[i].keep < 64)
			r[i].keep++;
		r[i].key.saddr = (uint32_t)rnext(&g);
		r[i].key.daddr = 0x0a000001u;
		r[i].key.sport = (uint16_t)(1024 + rnext(&g) % 64000);
		r[i].key.dport = 8000;
		r[i].key.proto = 6;
		r[i].pick = (uint32_t)rnext(&g);
	}
}

/* ---- simulation ---------------------------------------------------------- */

enum ev_type { EV_ARRIVE, EV_DONE, EV_SCRAPE };

struct ev {
	double t;
	uint32_t type, a, b; /* ARRIVE: request; DONE: worker, slot; SCRAPE: worker */
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
	if (h->n == h->cap) {
		size_t cap = h->cap ? h->cap * 2 : 1024;
		struct ev *v = realloc(h->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		h->v = v;
		h->cap = cap;
	}
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

struct conn {
	uint32_t worker;
	uint32_t left;      /* requests it will still carry */
	bool busy;
	uint32_t served_by; /* worker of its first reply (UINT32_MAX: none yet) */
};

struct worker {
	double slow;
	unsigned int slots;
	uint32_t slot_req[MAXSLOTS]; /* request in the slot, UINT32_MAX = free */
	unsigned int running;
	uint32_t *queue;             /* FIFO of request indexes */
	size_t qh, qt, qcap;
	uint32_t open_conns;         /* lc: open connections */
	double busy_s;               /* slot-seconds used */
	double kv;                   /* tokens held / capacity (0..1) */
};

struct result {
	double p50, p99, p999, ttft_p99;
	double util[MAXW];
	uint64_t moved, stale, placed_load, new_conns;
	double duration_s;
};

static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double pct(const double *v, size_t n, double p)
{
	if (!n)
		return 0;
	size_t k = (size_t)(p * (double)(n - 1) + 0.5);

	return v[k < n ? k : n - 1];
}

/* A new connection's worker under @p sched (maglev-load counts how). */
static uint32_t pick_worker(int sched, const uint32_t *table, const struct worker *w,
			    unsigned int nw, const uint32_t *weights, uint32_t sig,
			    const struct fg_load_slot *slot, const struct fg_metrics_cfg *m,
			    struct result *res)
{
	enum fg_place_how how = FG_PLACE_MAGLEV;
	uint32_t best = 0;

	if (sched == S_MAGLEV)
		return fg_maglev_lookup(table, FG_MAGLEV_MIN_SIZE, sig);
	if (sched == S_LC) {
		for (uint32_t k = 1; k < nw; k++)
			if ((uint64_t)w[k].open_conns * weights[best] <
			    (uint64_t)w[best].open_conns * weights[k])
				best = k;
		return best;
	}
	best = fg_place_pick(table, FG_MAGLEV_MIN_SIZE, sig, slot, nw, m->margin_milli, &how);
	res->stale += how == FG_PLACE_STALE;
	res->placed_load += how == FG_PLACE_LOAD || how == FG_PLACE_SATURATED;
	return best;
}

/* Starts worker @p wi's queued requests on its free slots.  @return 0 or
 * -ENOMEM (event heap). */
static int start_queued(struct worker *x, uint32_t wi, const struct req *r, double now,
			double *start, double *ttft, struct heap *h, uint64_t *seq)
{
	for (unsigned int k = 0; k < x->slots && x->qh < x->qt; k++) {
		if (x->slot_req[k] != UINT32_MAX)
			continue;
		uint32_t q = x->queue[x->qh++];
		double d = r[q].service_s * x->slow;

		x->slot_req[k] = q;
		x->running++;
		x->kv += 1.0 / x->slots;
		x->busy_s += d;
		start[q] = now;
		ttft[q] = now - r[q].t_arrive + r[q].prefill_s * x->slow;
		if (heap_push(h, (struct ev){ now + d, EV_DONE, wi, k, (*seq)++ }))
			return -ENOMEM;
	}
	if (x->qh == x->qt)
		x->qh = x->qt = 0;
	return 0;
}

/* Percentiles and utilisation of one finished run. */
static void summarize(struct result *res, const struct req *r, unsigned int nr,
		      const struct worker *w, unsigned int nw, double *lat, size_t n_done,
		      double *ttft)
{
	res->duration_s = r[nr - 1].t_arrive;
	qsort(lat, n_done, sizeof(double), cmp_dbl);
	qsort(ttft, nr, sizeof(double), cmp_dbl);
	res->p50 = pct(lat, n_done, 0.50) * 1000;
	res->p99 = pct(lat, n_done, 0.99) * 1000;
	res->p999 = pct(lat, n_done, 0.999) * 1000;
	res->ttft_p99 = pct(ttft, nr, 0.99) * 1000;
	for (unsigned int i = 0; i < nw; i++) {
		double u = w[i].busy_s / (w[i].slots * res->duration_s);

		res->util[i] = u > 1 ? 1 : u;
	}
}

/* The cluster: worker 3 is 2x slower, worker 2 has half the slots with
 * --half-slots.  @return the cluster's capacity in requests/s. */
static double workers_init(struct worker *w, const struct opts *o)
{
	unsigned int nw = o->workers;
	double cap = 0;

	memset(w, 0, MAXW * sizeof(*w));
	for (unsigned int i = 0; i < nw; i++) {
		w[i].slow = i == 3 % nw ? 2.0 : 1.0;
		w[i].slots = o->slots;
		if (o->half_slots && i == 2 % nw && nw > 2)
			w[i].slots = o->slots / 2 ? o->slots / 2 : 1;
		for (unsigned int k = 0; k < MAXSLOTS; k++)
			w[i].slot_req[k] = UINT32_MAX;
		cap += w[i].slots / (mean_service_s() * w[i].slow);
	}
	return cap;
}

/* renders a worker's /metrics page as vLLM does and reads it back with the
 * checker's code: the score placement sees */
static void scrape(const struct worker *w, const struct fg_metrics_cfg *m,
		   struct fg_load_slot *slot)
{
	char page[1024];
	size_t q = w->qt - w->qh;
	int n = snprintf(page, sizeof(page),
			 "# HELP vllm:num_requests_running Number of requests in model execution batches.\n"
			 "# TYPE vllm:num_requests_running gauge\n"
			 "vllm:num_requests_running{engine=\"0\",model_name=\"sim\"} %u.0\n"
			 "# HELP vllm:num_requests_waiting Number of requests waiting to be processed.\n"
			 "# TYPE vllm:num_requests_waiting gauge\n"
			 "vllm:num_requests_waiting{engine=\"0\",model_name=\"sim\"} %zu.0\n"
			 "# TYPE vllm:kv_cache_usage_perc gauge\n"
			 "vllm:kv_cache_usage_perc{engine=\"0\",model_name=\"sim\"} %.4f\n",
			 w->running, q, w->kv);
	double raw[FG_LOAD_SERIES_MAX];
	uint32_t score = 0;
	char why[96];

	if (fg_loadsig_eval(m, page, (size_t)n, 0, UINT32_MAX, raw, &score, why, sizeof(why)) !=
	    FG_LS_scrapes_ok) {
		slot->flags &= ~FG_LOAD_F_FRESH;
		return;
	}
	slot->score_milli = score;
	slot->flags = FG_LOAD_F_FRESH | FG_LOAD_F_USABLE |
		      (m->saturate_milli && score >= m->saturate_milli ? FG_LOAD_F_SAT : 0);
}

static int simulate(const struct opts *o, int sched, uint64_t seed, struct result *res)
{
	unsigned int nw = o->workers, nr = o->requests;
	struct worker w[MAXW];
	double cap;
	int rc = -ENOMEM;

	cap = workers_init(w, o);
	struct req *r = calloc(nr, sizeof(*r));
	uint32_t *conn_of = calloc(nr, sizeof(*conn_of));     /* request -> connection */
	double *start = calloc(nr, sizeof(*start));
	double *lat = calloc(nr, sizeof(*lat)), *ttft = calloc(nr, sizeof(*ttft));
	struct conn *c = calloc(nr, sizeof(*c));
	uint32_t *idle = calloc(nr, sizeof(*idle));            /* idle connections */
	uint32_t *table = malloc(FG_MAGLEV_MIN_SIZE * sizeof(*table));
	struct heap h = { 0 };
	size_t n_idle = 0, n_conn = 0, n_done = 0;
	uint64_t seq = 0;

	memset(res, 0, sizeof(*res));
	if (!r || !conn_of || !start || !lat || !ttft || !c || !idle || !table)
		goto out;
	for (unsigned int i = 0; i < nw; i++) {
		w[i].qcap = nr + 1;
		w[i].queue = malloc(w[i].qcap * sizeof(uint32_t));
		if (!w[i].queue)
			goto out;
	}
	trace_make(r, nr, o->load * cap, seed);

	/* Maglev over the workers' stable keys, weight 1 each */
	uint32_t weights[MAXW] = { 0 };
	uint64_t keys[MAXW] = { 0 };

	for (unsigned int i = 0; i < nw; i++) {
		uint8_t a[16] = { 10, 1, 0, (uint8_t)(i + 1) };

		weights[i] = 1;
		keys[i] = fg_maglev_backend_key(a, 8000);
	}
	rc = fg_maglev_build(weights, keys, nw, FG_MAGLEV_MIN_SIZE, table);
	if (rc)
		goto out;
	rc = -ENOMEM;

	struct fg_metrics_cfg m;
	struct fg_load_slot slot[MAXW];

	fg_loadsig_preset(FG_LOAD_PRESET_VLLM, &m);
	m.saturate_milli = o->saturate_milli;
	m.margin_milli = o->margin_milli;
	memset(slot, 0, sizeof(slot)); /* no scrape yet: stale */

	if (heap_push(&h, (struct ev){ r[0].t_arrive, EV_ARRIVE, 0, 0, seq++ }))
		goto out;
	if (sched == S_MLOAD)
		for (unsigned int i = 0; i < nw; i++)
			/* first scrapes spread over one interval, as the checker does */
			if (heap_push(&h, (struct ev){ (double)o->interval_ms / 1000.0 * i / nw,
						       EV_SCRAPE, i, 0, seq++ }))
				goto out;

	while (h.n && n_done < nr) {
		struct ev e = heap_pop(&h);
		double now = e.t;

		if (e.type == EV_SCRAPE) {
			scrape(&w[e.a], &m, &slot[e.a]);
			if (heap_push(&h, (struct ev){ now + o->interval_ms / 1000.0, EV_SCRAPE, e.a,
						       0, seq++ }))
				goto out;
			continue;
		}
		uint32_t wi, ri;

		if (e.type == EV_ARRIVE) {
			ri = e.a;
			if (ri + 1 < nr &&
			    heap_push(&h, (struct ev){ r[ri + 1].t_arrive, EV_ARRIVE, ri + 1, 0,
						       seq++ }))
				goto out;
			uint32_t ci;

			if (!r[ri].new_conn && n_idle) {
				/* a kept-alive connection: conntrack keeps it where it is */
				size_t k = r[ri].pick % n_idle;

				ci = idle[k];
				idle[k] = idle[--n_idle];
			} else {
				uint32_t sig = ct_hash_crc(&r[ri].key, sizeof(r[ri].key));

				ci = (uint32_t)n_conn++;
				c[ci].left = r[ri].keep;
				c[ci].served_by = UINT32_MAX;
				c[ci].worker = pick_worker(sched, table, w, nw, weights, sig, slot,
							   &m, res);
				w[c[ci].worker].open_conns++;
				res->new_conns++;
			}
			c[ci].busy = true;
			conn_of[ri] = ci;
			wi = c[ci].worker;
			struct worker *x = &w[wi];

			x->queue[x->qt++] = ri;
		} else {
			/* a request finished: its reply came from this worker */
			wi = e.a;
			struct worker *x = &w[wi];

			ri = x->slot_req[e.b];
			x->slot_req[e.b] = UINT32_MAX;
			x->running--;
			x->kv -= 1.0 / x->slots;
			uint32_t ci = conn_of[ri];

			if (c[ci].served_by == UINT32_MAX)
				c[ci].served_by = wi;
			if (c[ci].served_by != wi || c[ci].worker != wi)
				res->moved++;
			lat[n_done++] = now - r[ri].t_arrive;
			c[ci].busy = false;
			if (--c[ci].left == 0)
				w[c[ci].worker].open_conns--;
			else
				idle[n_idle++] = ci;
		}
		if (start_queued(&w[wi], wi, r, now, start, ttft, &h, &seq))
			goto out;
	}
	summarize(res, r, nr, w, nw, lat, n_done, ttft);
	rc = 0;
out:
	for (unsigned int i = 0; i < nw; i++)
		free(w[i].queue);
	free(h.v);
	free(r);
	free(conn_of);
	free(start);
	free(lat);
	free(ttft);
	free(c);
	free(idle);
	free(table);
	return rc;
}

/* ---- median of runs, output ---------------------------------------------- */

static double med(double *v, unsigned int n)
{
	qsort(v, n, sizeof(double), cmp_dbl);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static int run_sched(const struct opts *o, int s, struct result *out)
{
	struct result rr[16];
	double a[16];

	for (unsigned int k = 0; k < o->runs; k++) {
		int rc = simulate(o, s, o->seed + k, &rr[k]);

		if (rc)
			return rc;
	}
	*out = rr[0];
#define MED(f)                                                     \
	do {                                                       \
		for (unsigned int k = 0; k < o->runs; k++)         \
			a[k] = rr[k].f;                            \
		out->f = med(a, o->runs);                          \
	} while (0)
	MED(p50);
	MED(p99);
	MED(p999);
	MED(ttft_p99);
	for (unsigned int i = 0; i < o->workers; i++)
		MED(util[i]);
#undef MED
	out->moved = out->stale = out->placed_load = out->new_conns = 0;
	for (unsigned int k = 0; k < o->runs; k++) {
		/* totals over the runs: 0 moved means 0 in every run */
		out->moved += rr[k].moved;
		out->stale += rr[k].stale;
		out->placed_load += rr[k].placed_load;
		out->new_conns += rr[k].new_conns;
	}
	return 0;
}

static void print_json(const struct opts *o, int s, const struct result *r, bool last)
{
	printf("{\"scheduler\":\"%s\",\"load\":%.3f,\"requests\":%u,\"runs\":%u,\"seed\":%llu,"
	       "\"workers\":%u,\"slots\":%u,\"interval_ms\":%u,\"saturate\":%.3f,\"margin\":%.3f,"
	       "\"p50_ms\":%.1f,\"p99_ms\":%.1f,\"p999_ms\":%.1f,\"ttft_p99_ms\":%.1f,"
	       "\"moved_connections\":%llu,\"stale_signal_flows\":%llu,\"load_placed_flows\":%llu,"
	       "\"new_connections\":%llu,\"per_worker_util\":[",
	       sched_names[s], o->load, o->requests, o->runs, (unsigned long long)o->seed,
	       o->workers, o->slots, o->interval_ms, o->saturate_milli / 1000.0,
	       o->margin_milli / 1000.0, r->p50, r->p99, r->p999, r->ttft_p99,
	       (unsigned long long)r->moved, (unsigned long long)r->stale,
	       (unsigned long long)r->placed_load, (unsigned long long)r->new_conns);
	for (unsigned int i = 0; i < o->workers; i++)
		printf("%s%.3f", i ? "," : "", r->util[i]);
	printf("]}%s\n", last ? "" : ",");
}

static void usage(void)
{
	fprintf(stderr,
		"usage: flowgate-bench inference [--scheduler maglev|lc|maglev-load|all] "
		"[--load F] [--seed N]\n"
		"       [--runs R] [--workers N] [--slots S] [--requests N] [--interval-ms MS]\n"
		"       [--saturate SCORE] [--margin SCORE] [--half-slots] [--json]\n"
		"A simulated LLM cluster (default 4 workers x 8 slots, worker 3 2x slower)\n"
		"behind flowgate's placement code; p50/p99 request latency, median of R runs.\n");
}

int bench_inference_main(int argc, char **argv);

int bench_inference_main(int argc, char **argv)
{
	struct opts o = { .sched = S_ALL, .load = 0.8, .seed = 1, .runs = 3, .workers = 4,
			  .slots = 8, .requests = 20000, .interval_ms = 250,
			  .saturate_milli = 4000, .margin_milli = 1000 };
	static const struct option lo[] = {
		{ "scheduler", required_argument, NULL, 's' },
		{ "load", required_argument, NULL, 'l' },
		{ "seed", required_argument, NULL, 'S' },
		{ "runs", required_argument, NULL, 'r' },
		{ "workers", required_argument, NULL, 'w' },
		{ "slots", required_argument, NULL, 'k' },
		{ "requests", required_argument, NULL, 'n' },
		{ "interval-ms", required_argument, NULL, 'i' },
		{ "saturate", required_argument, NULL, 'T' },
		{ "margin", required_argument, NULL, 'm' },
		{ "half-slots", no_argument, NULL, 'H' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	int ch;
	char *end;

	optind = 1;
	while ((ch = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (ch) {
		case 's':
			o.sched = -1;
			for (int k = 0; k < 3; k++)
				if (!strcmp(optarg, sched_names[k]))
					o.sched = k;
			if (!strcmp(optarg, "all"))
				o.sched = S_ALL;
			if (o.sched < 0) {
				fprintf(stderr, "inference: --scheduler '%s': maglev, lc, "
					"maglev-load or all\n", optarg);
				return 2;
			}
			break;
		case 'l':
			o.load = strtod(optarg, &end);
			if (*end || !(o.load > 0 && o.load < 1.5)) {
				fprintf(stderr, "inference: --load must be in (0, 1.5)\n");
				return 2;
			}
			break;
		case 'S': o.seed = strtoull(optarg, NULL, 0); break;
		case 'r': o.runs = (unsigned int)strtoul(optarg, NULL, 0); break;
		case 'w': o.workers = (unsigned int)strtoul(optarg, NULL, 0); break;
		case 'k': o.slots = (unsigned int)strtoul(optarg, NULL, 0); break;
		case 'n': o.requests = (unsigned int)strtoul(optarg, NULL, 0); break;
		case 'i': o.interval_ms = (unsigned int)strtoul(optarg, NULL, 0); break;
		case 'T': o.saturate_milli = (uint32_t)(strtod(optarg, NULL) * 1000 + 0.5); break;
		case 'm': o.margin_milli = (uint32_t)(strtod(optarg, NULL) * 1000 + 0.5); break;
		case 'H': o.half_slots = true; break;
		case 'j': o.json = true; break;
		case 'h': usage(); return 0;
		default: usage(); return 2;
		}
	}
	if (o.runs < 1 || o.runs > 15 || o.workers < 2 || o.workers > MAXW || o.slots < 1 ||
	    o.slots > MAXSLOTS || o.requests < 100 || o.requests > 50000000 ||
	    o.interval_ms < 1) {
		fprintf(stderr, "inference: --runs 1..15, --workers 2..%d, --slots 1..%d, "
			"--requests >= 100, --interval-ms >= 1\n", MAXW, MAXSLOTS);
		return 2;
	}
	struct result res[3];
	int first = o.sched == S_ALL ? 0 : o.sched, last = o.sched == S_ALL ? 2 : o.sched;

	for (int s = first; s <= last; s++) {
		int rc = simulate(&o, s, o.seed, &res[s]); /* warm: fail early */

		if (!rc)
			rc = run_sched(&o, s, &res[s]);
		if (rc) {
			fprintf(stderr, "inference: %s\n", strerror(-rc));
			return 1;
		}
	}
	if (o.json) {
		if (o.sched == S_ALL)
			printf("[\n");
		for (int s = first; s <= last; s++)
			print_json(&o, s, &res[s], s == last || o.sched != S_ALL);
		if (o.sched == S_ALL)
			printf("]\n");
	} else {
		printf("inference cluster: %u workers x %u slots (worker %u 2x slower%s), load %.2f, "
		       "%u requests, median of %u runs (seeds %llu..%llu)\n",
		       o.workers, o.slots, 3 % o.workers, o.half_slots ? ", worker 2 half slots" : "",
		       o.load, o.requests, o.runs, (unsigned long long)o.seed,
		       (unsigned long long)(o.seed + o.runs - 1));
		printf("%-12s %10s %10s %10s %10s %6s %8s  %s\n", "scheduler", "p50_ms", "p99_ms",
		       "p999_ms", "ttft_p99", "moved", "stale", "util per worker");
		for (int s = first; s <= last; s++) {
			printf("%-12s %10.1f %10.1f %10.1f %10.1f %6llu %8llu ", sched_names[s],
			       res[s].p50, res[s].p99, res[s].p999, res[s].ttft_p99,
			       (unsigned long long)res[s].moved, (unsigned long long)res[s].stale);
			for (unsigned int i = 0; i < o.workers; i++)
				printf(" %.2f", res[s].util[i]);
			printf("\n");
		}
	}
	int bad = 0;

	for (int s = first; s <= last; s++)
		bad |= res[s].moved != 0;
	if (o.sched == S_ALL) {
		double gain = res[S_MLOAD].p99 > 0 ? res[S_MAGLEV].p99 / res[S_MLOAD].p99 : 0;
		bool ok = gain >= 2.0 && res[S_MLOAD].p99 <= res[S_LC].p99;

		fprintf(o.json ? stderr : stdout,
			"maglev-load p99 %.2fx better than maglev (>= 2 wanted), %s least-connections "
			"(%.1f vs %.1f ms): %s\n", gain,
			res[S_MLOAD].p99 <= res[S_LC].p99 ? "no worse than" : "WORSE than",
			res[S_MLOAD].p99, res[S_LC].p99, ok && !bad ? "held" : "NOT held");
	}
	if (bad)
		fprintf(stderr, "inference: connections moved between workers\n");
	return bad ? 1 : 0;
}
