/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * flowgate-bench inference: LLM traffic, replayed from a real trace or
 * generated, through a simulated GPU cluster placed by flowgate's own code
 * (maglev, lc, maglev-load) next to a per-request L7 router
 * (l7-least-loaded).  The cluster, the connections and the placement are
 * described in fgb_infer.h / fgb_infer.c; the trace reader in fgb_trace.h;
 * usage() lists the options and their defaults; docs/INFERENCE.md
 * ("Measured") says what the figures mean.
 *
 * Reported per scheduler (median of --runs runs with seeds N, N+1, ...;
 * the trace is the same for every run, the seeds draw the connections,
 * their tuples and the lost scrapes): TTFT p50/p99 (arrival to first
 * token), e2e p50/p99 (arrival to last token), kv_queue p99 (arrival to
 * admission into the batch: slots or KV cache full), per-worker slot
 * utilisation, moved_connections (L4: connections a reply of which came
 * from a worker other than the one the connection was placed on, must be
 * 0, summed over the runs; l7-least-loaded: client connections whose
 * requests the router spread over several workers, which it may do
 * because it terminates them).
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fg_loadsig.h"
#include "fgb_infer.h"
#include "fgb_trace.h"

#define DEFAULT_WORKERS "4x1.0,2x0.5"
#define DEFAULT_SLOTS 16u
#define DEFAULT_KV 32768u
#define RUNS_MAX 15

struct opts {
	struct fgb_inf_cfg c;
	const char *trace_path, *columns, *workers;
	uint32_t slots, kv, requests, runs;
	uint64_t seed;
	bool sched[FGB_INF_NSCHED];
	bool json;
};

static void usage(void)
{
	fprintf(stderr,
		"usage: flowgate-bench inference [--trace FILE [--columns MAP]] [--scheduler LIST]\n"
		"  [--load F] [--keepalive R] [--mux N] [--workers SPEC] [--slots S]\n"
		"  [--kv-tokens K] [--prefill-ms MS] [--decode-ms MS] [--interval-ms MS]\n"
		"  [--stale-ms MS] [--signal-lag-ms MS] [--scrape-loss P] [--score-weights W,R,K]\n"
		"  [--saturate SCORE] [--margin SCORE] [--speed-weights] [--requests N] [--seed N]\n"
		"  [--runs R] [--json]\n"
		"An LLM cluster simulated request by request behind flowgate's placement code.\n"
		"  --trace FILE      requests from a CSV trace; by default the Azure LLM inference\n"
		"                    trace format (Azure/AzurePublicDataset,\n"
		"                    data/AzureLLMInferenceTrace_{conv,code}.csv:\n"
		"                    " FGB_TRACE_AZURE_COLS ");\n"
		"                    without it: a synthetic trace (Poisson, log-normal tokens)\n"
		"  --columns MAP     another format: " FGB_TRACE_COLS_HELP "\n"
		"                    (BurstGPT: 'Timestamp,Request tokens,Response tokens,s')\n"
		"  --scheduler LIST  comma list of maglev, lc, maglev-load, l7-least-loaded, or all (all)\n"
		"  --load F          offered work / cluster capacity; the trace's arrival times are\n"
		"                    stretched to it, keeping their bursts (0.8)\n"
		"  --keepalive R     mean requests per client connection, geometric (1: one each)\n"
		"  --mux N           clients multiplex their requests over N HTTP/2 connections\n"
		"                    (drawn at random); default 0: HTTP/1.1 keep-alive pools, a\n"
		"                    request takes an idle connection or opens one\n"
		"  --workers SPEC    NxSPEED[:SLOTS[:KV]],...  (" DEFAULT_WORKERS ")\n"
		"  --slots S, --kv-tokens K  per worker unless SPEC says (16, 32768)\n"
		"  --prefill-ms, --decode-ms  cost per prompt / output token at speed 1 (0.1, 20)\n"
		"  --interval-ms, --stale-ms, --signal-lag-ms, --scrape-loss  the metrics scrape:\n"
		"                    every 250 ms, stale after 4 intervals, page numbers 0 ms old, 0 lost\n"
		"  --score-weights W,R,K  weights of vllm:num_requests_waiting, _running,\n"
		"                    kv_cache_usage_perc (1,0.5,0; the daemon's vllm preset: 1,0.25,2)\n"
		"  --saturate, --margin  as `health metrics` (4, 0)\n"
		"                    (the defaults were tuned on the Azure conv trace only:\n"
		"                    bench/tools/inference_tune.py, docs/INFERENCE.md)\n"
		"  --speed-weights   maglev / lc weights = worker speed (default: all 1)\n"
		"  --requests N      synthetic: N requests (20000); trace: its first N (all)\n"
		"  --seed N, --runs R  median of R runs, seeds N.. (1, 3)\n");
}

/* ---- the synthetic trace -------------------------------------------------- */

static uint64_t rnext(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static double runi(uint64_t *s)
{
	return ((double)(rnext(s) >> 11) + 0.5) / 9007199254740992.0;
}

static double lognormal(uint64_t *s, double median, double sigma, double lo, double hi)
{
	double v = exp(log(median) + sigma * sqrt(-2.0 * log(runi(s))) * cos(2.0 * M_PI * runi(s)));

	return v < lo ? lo : v > hi ? hi : v;
}

/* Poisson arrivals (1/s before scaling), prompts log-normal (median 500,
 * sigma 0.8, 16..8192), outputs log-normal (median 200, sigma 1, 8..4096) */
static int trace_synthetic(struct fgb_trace *t, uint32_t n, uint64_t seed)
{
	uint64_t s = seed * 0x2545F4914F6CDD1DULL + 7;
	double at = 0;

	t->req = malloc(n * sizeof(*t->req));
	if (!t->req)
		return -ENOMEM;
	t->n = n;
	for (uint32_t i = 0; i < n; i++) {
		if (i)
			at += -log(runi(&s));
		t->req[i].t_s = at;
		t->req[i].prompt = (uint32_t)lognormal(&s, 500, 0.8, 16, 8192);
		t->req[i].output = (uint32_t)lognormal(&s, 200, 1.0, 8, 4096);
	}
	return 0;
}

/* ---- options -------------------------------------------------------------- */

/* "NxSPEED[:SLOTS[:KV]],..." */
static int workers_parse(struct opts *o)
{
	char buf[512], *save = NULL;

	snprintf(buf, sizeof(buf), "%s", o->workers);
	o->c.nw = 0;
	for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *x = strchr(tok, 'x'), *end;
		unsigned long n = 1;

		if (x) {
			n = strtoul(tok, &end, 10);
			if (end != x || !n)
				return -EINVAL;
			tok = x + 1;
		}
		double speed = strtod(tok, &end);
		unsigned long slots = o->slots, kv = o->kv;

		if (*end == ':')
			slots = strtoul(end + 1, &end, 10);
		if (*end == ':')
			kv = strtoul(end + 1, &end, 10);
		if (*end || !(speed > 0 && speed <= 100) || slots < 1 ||
		    slots > FGB_INF_MAXSLOTS || kv < 1 || kv > 1u << 30 ||
		    o->c.nw + n > FGB_INF_MAXW)
			return -EINVAL;
		for (unsigned long k = 0; k < n; k++)
			o->c.w[o->c.nw++] = (struct fgb_inf_worker_spec){ speed, (uint32_t)slots,
									   (uint32_t)kv };
	}
	return o->c.nw >= 2 ? 0 : -EINVAL;
}

static int sched_parse(struct opts *o, const char *arg)
{
	char buf[256], *save = NULL;

	memset(o->sched, 0, sizeof(o->sched));
	snprintf(buf, sizeof(buf), "%s", arg);
	for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		int hit = -1;

		for (int k = 0; k < FGB_INF_NSCHED; k++)
			if (!strcmp(tok, fgb_inf_sched_names[k]) || !strcmp(tok, "all"))
				o->sched[k] = true, hit = k;
		if (hit < 0) {
			fprintf(stderr, "inference: --scheduler '%s': maglev, lc, maglev-load, "
				"l7-least-loaded or all\n", tok);
			return -EINVAL;
		}
	}
	return 0;
}

static int weights_parse(struct fg_metrics_cfg *m, const char *arg)
{
	double v[3];
	char *end;
	const char *p = arg;

	for (int k = 0; k < 3; k++) {
		v[k] = strtod(p, &end);
		if (end == p || !(v[k] >= 0 && v[k] <= 1000) || (k < 2 ? *end != ',' : *end))
			return -EINVAL;
		p = end + 1;
	}
	for (int k = 0; k < 3; k++)
		m->series[k].weight_milli = (uint32_t)(v[k] * 1000 + 0.5);
	return 0;
}

static bool num(const char *arg, double lo, double hi, double *out)
{
	char *end;
	double v = strtod(arg, &end);

	if (end == arg || *end || !(v >= lo && v <= hi))
		return false;
	*out = v;
	return true;
}

enum { O_TRACE = 256, O_COLS, O_SCHED, O_LOAD, O_KEEP, O_MUX, O_WORKERS, O_SLOTS, O_KV,
       O_PRE, O_DEC, O_IVL, O_STALE, O_LAG, O_LOSS, O_SW, O_SAT, O_MARGIN, O_SPEEDW, O_REQ,
       O_SEED, O_RUNS, O_JSON, O_HELP };

static const struct option long_opts[] = {
	{ "trace", required_argument, NULL, O_TRACE },
	{ "columns", required_argument, NULL, O_COLS },
	{ "scheduler", required_argument, NULL, O_SCHED },
	{ "load", required_argument, NULL, O_LOAD },
	{ "keepalive", required_argument, NULL, O_KEEP },
	{ "mux", required_argument, NULL, O_MUX },
	{ "workers", required_argument, NULL, O_WORKERS },
	{ "slots", required_argument, NULL, O_SLOTS },
	{ "kv-tokens", required_argument, NULL, O_KV },
	{ "prefill-ms", required_argument, NULL, O_PRE },
	{ "decode-ms", required_argument, NULL, O_DEC },
	{ "interval-ms", required_argument, NULL, O_IVL },
	{ "stale-ms", required_argument, NULL, O_STALE },
	{ "signal-lag-ms", required_argument, NULL, O_LAG },
	{ "scrape-loss", required_argument, NULL, O_LOSS },
	{ "score-weights", required_argument, NULL, O_SW },
	{ "saturate", required_argument, NULL, O_SAT },
	{ "margin", required_argument, NULL, O_MARGIN },
	{ "speed-weights", no_argument, NULL, O_SPEEDW },
	{ "requests", required_argument, NULL, O_REQ },
	{ "seed", required_argument, NULL, O_SEED },
	{ "runs", required_argument, NULL, O_RUNS },
	{ "json", no_argument, NULL, O_JSON },
	{ "help", no_argument, NULL, O_HELP },
	{ 0 },
};

/* One option's value into @p o.  @return 0, or -EINVAL (message printed). */
static int opt_set(struct opts *o, int ch, const char *arg)
{
	struct fgb_inf_cfg *c = &o->c;
	double v = 0;
	bool ok = true;

	switch (ch) {
	case O_TRACE: o->trace_path = arg; break;
	case O_COLS: o->columns = arg; break;
	case O_SCHED: return sched_parse(o, arg);
	case O_LOAD: ok = num(arg, 0.01, 1.5, &c->load); break;
	case O_KEEP: ok = num(arg, 1, 1e6, &c->keepalive); break;
	case O_MUX: ok = num(arg, 0, 1e7, &v); c->mux = (uint32_t)v; break;
	case O_WORKERS: o->workers = arg; break;
	case O_SLOTS: ok = num(arg, 1, FGB_INF_MAXSLOTS, &v); o->slots = (uint32_t)v; break;
	case O_KV: ok = num(arg, 1, 1 << 30, &v); o->kv = (uint32_t)v; break;
	case O_PRE: ok = num(arg, 0, 1e4, &c->prefill_ms); break;
	case O_DEC: ok = num(arg, 0, 1e4, &c->decode_ms); break;
	case O_IVL: ok = num(arg, 1, 1e6, &v); c->interval_ms = (uint32_t)v; break;
	case O_STALE: ok = num(arg, 1, 1e7, &v); c->metrics.stale_ms = (uint32_t)v; break;
	case O_LAG: ok = num(arg, 0, 1e6, &v); c->lag_ms = (uint32_t)v; break;
	case O_LOSS: ok = num(arg, 0, 1, &c->scrape_loss); break;
	case O_SW: ok = !weights_parse(&c->metrics, arg); break;
	case O_SAT: ok = num(arg, 0, 1e6, &v); c->metrics.saturate_milli = (uint32_t)(v * 1000 + 0.5); break;
	case O_MARGIN: ok = num(arg, 0, 1e6, &v); c->metrics.margin_milli = (uint32_t)(v * 1000 + 0.5); break;
	case O_SPEEDW: c->speed_weights = true; break;
	case O_REQ: ok = num(arg, 100, FGB_TRACE_ROWS_MAX, &v); o->requests = (uint32_t)v; break;
	case O_SEED: o->seed = strtoull(arg, NULL, 0); break;
	case O_RUNS: ok = num(arg, 1, RUNS_MAX, &v); o->runs = (uint32_t)v; break;
	case O_JSON: o->json = true; break;
	default: return -EINVAL;
	}
	if (!ok) {
		fprintf(stderr, "inference: bad value '%s' (see --help)\n", arg);
		return -EINVAL;
	}
	return 0;
}

static int opts_parse(struct opts *o, int argc, char **argv)
{
	int ch;

	memset(o, 0, sizeof(*o));
	fg_loadsig_preset(FG_LOAD_PRESET_VLLM, &o->c.metrics);
	/* tuned on the conv trace (docs/INFERENCE.md "Measured"): waiting x 1 +
	 * running x 0.5, no KV term, saturate 4, margin 0 */
	o->c.metrics.series[1].weight_milli = 500;
	o->c.metrics.series[2].weight_milli = 0;
	o->c.metrics.saturate_milli = 4000;
	o->c.metrics.margin_milli = 0;
	o->c.load = 0.8;
	o->c.keepalive = 1;
	o->c.prefill_ms = 0.1;
	o->c.decode_ms = 20;
	o->c.interval_ms = 250;
	o->workers = DEFAULT_WORKERS;
	o->slots = DEFAULT_SLOTS;
	o->kv = DEFAULT_KV;
	o->runs = 3;
	o->seed = 1;
	for (int k = 0; k < FGB_INF_NSCHED; k++)
		o->sched[k] = true;
	optind = 1;
	while ((ch = getopt_long(argc, argv, "", long_opts, NULL)) != -1) {
		if (ch == O_HELP) {
			usage();
			return 1;
		}
		if (opt_set(o, ch, optarg)) {
			if (ch == '?')
				usage();
			return -EINVAL;
		}
	}
	if (optind < argc || workers_parse(o)) {
		fprintf(stderr, "inference: %s (see --help)\n", optind < argc ?
			"unexpected argument" : "--workers: NxSPEED[:SLOTS[:KV]],... (2..64 workers)");
		return -EINVAL;
	}
	return 0;
}

/* ---- runs and output ------------------------------------------------------ */

static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double med(double *v, unsigned int n)
{
	qsort(v, n, sizeof(double), cmp_dbl);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Median of the runs' figures; counters summed over the runs. */
static int run_sched(const struct opts *o, enum fgb_inf_sched s, struct fgb_inf_result *out)
{
	static struct fgb_inf_result rr[RUNS_MAX];
	double a[RUNS_MAX];

	for (unsigned int k = 0; k < o->runs; k++) {
		int rc = fgb_inf_run(&o->c, s, o->seed + k, &rr[k]);

		if (rc)
			return rc;
	}
	*out = rr[0];
#define MED(f)                                             \
	do {                                               \
		for (unsigned int k = 0; k < o->runs; k++) \
			a[k] = rr[k].f;                    \
		out->f = med(a, o->runs);                  \
	} while (0)
	MED(ttft_p50_ms);
	MED(ttft_p99_ms);
	MED(e2e_p50_ms);
	MED(e2e_p99_ms);
	MED(kv_queue_p99_ms);
	for (uint32_t i = 0; i < o->c.nw; i++)
		MED(util[i]);
#undef MED
	out->moved = out->stale = out->placed_load = out->connections = 0;
	for (unsigned int k = 0; k < o->runs; k++) {
		out->moved += rr[k].moved;
		out->stale += rr[k].stale;
		out->placed_load += rr[k].placed_load;
		out->connections += rr[k].connections;
	}
	return 0;
}

static const char *base_name(const char *p)
{
	const char *s = p ? strrchr(p, '/') : NULL;

	return p ? (s ? s + 1 : p) : "synthetic";
}

static void print_json(const struct opts *o, enum fgb_inf_sched s, const struct fgb_inf_result *r,
		       bool first)
{
	const struct fg_metrics_cfg *m = &o->c.metrics;

	printf("%s{\"scheduler\":\"%s\",\"trace\":\"%s\",\"load\":%.3f,\"keepalive\":%g,"
	       "\"requests\":%llu,\"ttft_p50_ms\":%.1f,\"ttft_p99_ms\":%.1f,\"e2e_p50_ms\":%.1f,"
	       "\"e2e_p99_ms\":%.1f,\"moved_connections\":%llu,\"per_worker_util\":[",
	       first ? "" : ",\n", fgb_inf_sched_names[s], base_name(o->trace_path), o->c.load,
	       o->c.keepalive, (unsigned long long)r->requests, r->ttft_p50_ms, r->ttft_p99_ms,
	       r->e2e_p50_ms, r->e2e_p99_ms, (unsigned long long)r->moved);
	for (uint32_t i = 0; i < o->c.nw; i++)
		printf("%s%.3f", i ? "," : "", r->util[i]);
	printf("],\"kv_queue_p99_ms\":%.1f,\"workers\":\"%s\",\"mux\":%u,\"runs\":%u,"
	       "\"seed\":%llu,\"connections\":%llu,\"stale_signal_placements\":%llu,"
	       "\"load_placements\":%llu,\"interval_ms\":%u,\"signal_lag_ms\":%u,"
	       "\"scrape_loss\":%g,\"score_weights\":[%.3f,%.3f,%.3f],\"saturate\":%.3f,"
	       "\"margin\":%.3f,\"speed_weights\":%s,\"time_scale\":%.4f}",
	       r->kv_queue_p99_ms, o->workers, o->c.mux, o->runs,
	       (unsigned long long)o->seed, (unsigned long long)r->connections,
	       (unsigned long long)r->stale, (unsigned long long)r->placed_load,
	       o->c.interval_ms, o->c.lag_ms, o->c.scrape_loss, m->series[0].weight_milli / 1e3,
	       m->series[1].weight_milli / 1e3, m->series[2].weight_milli / 1e3,
	       m->saturate_milli / 1e3, m->margin_milli / 1e3, o->c.speed_weights ? "true" : "false",
	       r->time_scale);
}

static void print_table(const struct opts *o, const struct fgb_inf_result *res)
{
	printf("inference: trace %s (%zu requests), workers %s, load %.2f, keepalive %g, "
	       "%s, median of %u runs (seeds %llu..%llu)\n",
	       base_name(o->trace_path), o->c.trace->n, o->workers, o->c.load, o->c.keepalive,
	       o->c.mux ? "HTTP/2 connections" : "HTTP/1.1 connections", o->runs, (unsigned long long)o->seed,
	       (unsigned long long)(o->seed + o->runs - 1));
	printf("%-16s %9s %9s %9s %9s %9s %6s  %s\n", "scheduler", "ttft_p50", "ttft_p99",
	       "e2e_p50", "e2e_p99", "kvq_p99", "moved", "util per worker");
	for (int s = 0; s < FGB_INF_NSCHED; s++) {
		if (!o->sched[s])
			continue;
		printf("%-16s %9.0f %9.0f %9.0f %9.0f %9.0f %6llu ", fgb_inf_sched_names[s],
		       res[s].ttft_p50_ms, res[s].ttft_p99_ms, res[s].e2e_p50_ms, res[s].e2e_p99_ms,
		       res[s].kv_queue_p99_ms, (unsigned long long)res[s].moved);
		for (uint32_t i = 0; i < o->c.nw; i++)
			printf(" %.2f", res[s].util[i]);
		printf("\n");
	}
}

/* issue 39's targets, when the three schedulers they compare ran */
static void print_targets(const struct opts *o, const struct fgb_inf_result *res)
{
	const struct fgb_inf_result *ml = &res[FGB_INF_MLOAD];

	if (!o->sched[FGB_INF_MLOAD] || !o->sched[FGB_INF_MAGLEV] || !o->sched[FGB_INF_L7])
		return;
	double vs_m = ml->ttft_p99_ms / res[FGB_INF_MAGLEV].ttft_p99_ms;
	double vs_l7 = ml->ttft_p99_ms / res[FGB_INF_L7].ttft_p99_ms;

	fprintf(o->json ? stderr : stdout,
		"maglev-load ttft_p99 = %.3fx maglev's (<= 0.5 wanted), %.3fx l7-least-loaded's "
		"(<= 1.5 wanted), %llu moved: %s\n", vs_m, vs_l7, (unsigned long long)ml->moved,
		vs_m <= 0.5 && vs_l7 <= 1.5 && !ml->moved ? "held" : "NOT held");
}

int bench_inference_main(int argc, char **argv);

int bench_inference_main(int argc, char **argv)
{
	struct fgb_inf_result res[FGB_INF_NSCHED];
	struct fgb_trace t = { 0 };
	struct fgb_trace_cols cols;
	struct fgb_trace_err err;
	struct opts o;
	int rc = opts_parse(&o, argc, argv), bad = 0;

	if (rc)
		return rc > 0 ? 0 : 2;
	if (fgb_trace_cols_parse(o.columns, &cols, &err)) {
		fprintf(stderr, "inference: --columns: %s\n", err.msg);
		return 2;
	}
	rc = o.trace_path ? fgb_trace_load(o.trace_path, &cols, &t, &err)
			  : trace_synthetic(&t, o.requests ? o.requests : 20000, o.seed);
	if (rc) {
		if (err.line)
			fprintf(stderr, "inference: %s:%lu: %s\n", o.trace_path, err.line, err.msg);
		else
			fprintf(stderr, "inference: %s\n", o.trace_path ? err.msg : strerror(-rc));
		return 1;
	}
	if (o.trace_path && o.requests && o.requests < t.n)
		t.n = o.requests;
	o.c.trace = &t;
	for (int s = 0; s < FGB_INF_NSCHED && !rc; s++)
		if (o.sched[s])
			rc = run_sched(&o, (enum fgb_inf_sched)s, &res[s]);
	if (rc) {
		fprintf(stderr, "inference: %s\n", rc == -EINVAL ?
			"the trace spans no time, or the cluster has no capacity" : strerror(-rc));
		fgb_trace_free(&t);
		return 1;
	}
	if (o.json) {
		bool first = true;

		printf("[\n");
		for (int s = 0; s < FGB_INF_NSCHED; s++)
			if (o.sched[s]) {
				print_json(&o, (enum fgb_inf_sched)s, &res[s], first);
				first = false;
			}
		printf("\n]\n");
	} else {
		print_table(&o, res);
	}
	print_targets(&o, res);
	for (int s = 0; s < FGB_INF_NSCHED; s++)
		bad |= o.sched[s] && s != FGB_INF_L7 && res[s].moved;
	if (bad)
		fprintf(stderr, "inference: connections moved between workers\n");
	fgb_trace_free(&t);
	return bad ? 1 : 0;
}
