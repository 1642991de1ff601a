/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Prometheus text parser: a table of pages (accepted with their samples,
 * or refused with the line), selectors, queries with alternates, the size
 * bound, and a seeded random round trip (generated pages with escapes,
 * special values and timestamps parse back to what was generated; every
 * single-byte corruption is either accepted or refused, never crashes).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fg_loadsig.h"
#include "fg_promtext.h"

/* ---- the page table ------------------------------------------------------ */

struct want {
	const char *name;
	const char *labels; /* "a=x,b=y" rendering of the parsed labels */
	double value;       /* NaN: expect NaN */
	int has_ts;
	int64_t ts;
};

struct page_case {
	const char *desc;
	const char *text;
	int rc;              /* expected return: sample count or -errno */
	unsigned int line;   /* error line */
	struct want w[6];
};

static const struct page_case pages[] = {
	{ "empty page", "", 0, 0, { { 0 } } },
	{ "blank lines and comments", "\n   \n# hello\n#\n\t\n", 0, 0, { { 0 } } },
	{ "one gauge", "# HELP vllm:num_requests_waiting Waiting.\n"
		       "# TYPE vllm:num_requests_waiting gauge\n"
		       "vllm:num_requests_waiting{model_name=\"m\"} 3.0\n",
	  1, 0, { { "vllm:num_requests_waiting", "model_name=m", 3, 0, 0 } } },
	{ "no labels, timestamp", "a 1 1700000000000\n", 1, 0,
	  { { "a", "", 1, 1, 1700000000000LL } } },
	{ "negative timestamp", "a 1 -5\n", 1, 0, { { "a", "", 1, 1, -5 } } },
	{ "empty label set", "a{} 2\n", 1, 0, { { "a", "", 2, 0, 0 } } },
	{ "trailing comma", "a{x=\"1\",} 2\n", 1, 0, { { "a", "x=1", 2, 0, 0 } } },
	{ "escapes", "a{x=\"q\\\"b\\\\s\\nn\"} 1\n", 1, 0,
	  { { "a", "x=q\"b\\s\nn", 1, 0, 0 } } },
	{ "specials", "a +Inf\nb -Inf\nc NaN\nd inf\ne 1e3\nf -0.5\n", 6, 0,
	  { { "a", "", INFINITY, 0, 0 }, { "b", "", -INFINITY, 0, 0 },
	    { "c", "", NAN, 0, 0 }, { "d", "", INFINITY, 0, 0 },
	    { "e", "", 1000, 0, 0 }, { "f", "", -0.5, 0, 0 } } },
	{ "CRLF and tabs", "a{x=\"1\"}\t4\r\nb 5\r\n", 2, 0,
	  { { "a", "x=1", 4, 0, 0 }, { "b", "", 5, 0, 0 } } },
	{ "several series per name", "a{m=\"x\"} 1\na{m=\"y\"} 2\n", 2, 0,
	  { { "a", "m=x", 1, 0, 0 }, { "a", "m=y", 2, 0, 0 } } },
	{ "no final newline", "a 7", 1, 0, { { "a", "", 7, 0, 0 } } },
	{ "histogram lines", "# TYPE h histogram\nh_bucket{le=\"+Inf\"} 3\nh_sum 1.5\nh_count 3\n",
	  3, 0, { { "h_bucket", "le=+Inf", 3, 0, 0 }, { "h_sum", "", 1.5, 0, 0 },
		  { "h_count", "", 3, 0, 0 } } },
	{ "blanks around braces", "a {x = \"1\" , y=\"2\" } 3\n", 1, 0,
	  { { "a", "x=1,y=2", 3, 0, 0 } } },
	/* refused */
	{ "missing value", "a\n", -EINVAL, 1, { { 0 } } },
	{ "bad value", "ok 1\na{x=\"1\"} one\n", -EINVAL, 2, { { 0 } } },
	{ "hex value", "a 0x10\n", -EINVAL, 1, { { 0 } } },
	{ "unterminated value", "a{x=\"1} 3\n", -EINVAL, 1, { { 0 } } },
	{ "bad escape", "a{x=\"\\t\"} 3\n", -EINVAL, 1, { { 0 } } },
	{ "unquoted label", "a{x=1} 3\n", -EINVAL, 1, { { 0 } } },
	{ "duplicate label", "a{x=\"1\",x=\"2\"} 3\n", -EINVAL, 1, { { 0 } } },
	{ "label starts with a digit", "a{1x=\"1\"} 3\n", -EINVAL, 1, { { 0 } } },
	{ "name starts with a digit", "1a 3\n", -EINVAL, 1, { { 0 } } },
	{ "bad char in name", "a-b 3\n", -EINVAL, 1, { { 0 } } },
	{ "text after timestamp", "a 1 2 3\n", -EINVAL, 1, { { 0 } } },
	{ "float timestamp", "a 1 2.5\n", -EINVAL, 1, { { 0 } } },
	{ "timestamp overflow", "a 1 99999999999999999999\n", -EINVAL, 1, { { 0 } } },
	{ "unknown TYPE", "# TYPE a meter\n", -EINVAL, 1, { { 0 } } },
	{ "TYPE without name", "# TYPE\n", -EINVAL, 1, { { 0 } } },
	{ "missing brace", "a{x=\"1\" 3\n", -EINVAL, 1, { { 0 } } },
	{ "NUL byte", "a 1\nb\0 2\n", -EINVAL, 2, { { 0 } } },
	{ "HTML error page", "<html>503</html>\n", -EINVAL, 1, { { 0 } } },
};

struct collect {
	unsigned int n;
	char name[8][FG_PROM_MAX_NAME];
	char labels[8][256];
	double value[8];
	int has_ts[8];
	int64_t ts[8];
};

static int collect_cb(const struct fg_prom_sample *s, void *arg)
{
	struct collect *c = arg;

	if (c->n >= 8)
		return 0;
	snprintf(c->name[c->n], sizeof(c->name[0]), "%s", s->name);
	c->labels[c->n][0] = 0;
	for (unsigned int k = 0; k < s->n_labels; k++) {
		size_t l = strlen(c->labels[c->n]);

		snprintf(c->labels[c->n] + l, sizeof(c->labels[0]) - l, "%s%s=%s", k ? "," : "",
			 s->labels[k].name, s->labels[k].value);
	}
	c->value[c->n] = s->value;
	c->has_ts[c->n] = s->has_ts;
	c->ts[c->n] = s->ts_ms;
	c->n++;
	return 0;
}

static size_t page_len(const struct page_case *pc)
{
	/* the NUL case has an embedded NUL: its length is spelled out */
	if (!strcmp(pc->desc, "NUL byte"))
		return 10;
	return strlen(pc->text);
}

static void test_pages(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(pages) / sizeof(pages[0]); i++) {
		const struct page_case *pc = &pages[i];
		struct collect c;
		struct fg_prom_err err;

		memset(&c, 0, sizeof(c));
		int rc = fg_prom_parse(pc->text, page_len(pc), collect_cb, &c, &err);

		if (rc != pc->rc)
			fail_msg("%s: rc %d, expected %d (%u: %s)", pc->desc, rc, pc->rc, err.line,
				 err.msg);
		if (rc < 0) {
			if (err.line != pc->line)
				fail_msg("%s: error on line %u, expected %u (%s)", pc->desc, err.line,
					 pc->line, err.msg);
			assert_true(err.msg[0] != 0);
			continue;
		}
		assert_int_equal(c.n, (unsigned)rc);
		for (int k = 0; k < rc; k++) {
			const struct want *w = &pc->w[k];

			if (strcmp(c.name[k], w->name) || strcmp(c.labels[k], w->labels))
				fail_msg("%s: sample %d is %s{%s}, expected %s{%s}", pc->desc, k,
					 c.name[k], c.labels[k], w->name, w->labels);
			if (isnan(w->value))
				assert_true(isnan(c.value[k]));
			else if (c.value[k] != w->value)
				fail_msg("%s: sample %d value %g, expected %g", pc->desc, k,
					 c.value[k], w->value);
			assert_int_equal(c.has_ts[k], w->has_ts);
			if (w->has_ts)
				assert_true(c.ts[k] == w->ts);
		}
	}
}

/* ---- bounds ------------------------------------------------------------- */

static void test_bounds(void **state)
{
	(void)state;
	size_t big = FG_PROM_MAX_INPUT + 1;
	char *p = malloc(big);

	assert_non_null(p);
	memset(p, '\n', big);
	struct fg_prom_err err;

	assert_int_equal(fg_prom_parse(p, big, NULL, NULL, &err), -E2BIG);
	assert_int_equal(fg_prom_parse(p, big - 1, NULL, NULL, &err), 0);
	/* a name one byte too long */
	memset(p, 'a', FG_PROM_MAX_NAME);
	memcpy(p + FG_PROM_MAX_NAME, " 1\n", 3);
	assert_int_equal(fg_prom_parse(p, FG_PROM_MAX_NAME + 3, NULL, NULL, &err), -EINVAL);
	assert_int_equal(fg_prom_parse(p + 1, FG_PROM_MAX_NAME + 2, NULL, NULL, &err), 1);
	/* FG_PROM_MAX_LABELS + 1 labels */
	size_t n = (size_t)snprintf(p, 64, "a{");

	for (int k = 0; k <= FG_PROM_MAX_LABELS; k++)
		n += (size_t)snprintf(p + n, 64, "l%d=\"v\",", k);
	n += (size_t)snprintf(p + n, 64, "} 1\n");
	assert_int_equal(fg_prom_parse(p, n, NULL, NULL, &err), -EINVAL);
	/* a line of 1 MiB - 1 of label value: refused quickly, no overflow */
	memset(p, 'x', big - 1);
	memcpy(p, "a{x=\"", 5);
	assert_int_equal(fg_prom_parse(p, big - 1, NULL, NULL, &err), -EINVAL);
	free(p);
}

/* ---- selectors and queries ---------------------------------------------- */

static const char vllm_page[] =
	"# HELP vllm:num_requests_running Number of requests in model execution batches.\n"
	"# TYPE vllm:num_requests_running gauge\n"
	"vllm:num_requests_running{engine=\"0\",model_name=\"llama\"} 12.0\n"
	"vllm:num_requests_running{engine=\"0\",model_name=\"qwen\"} 3.0\n"
	"# TYPE vllm:num_requests_waiting gauge\n"
	"vllm:num_requests_waiting{engine=\"0\",model_name=\"llama\"} 4.0\n"
	"vllm:num_requests_waiting{engine=\"1\",model_name=\"llama\"} 1.0\n"
	"vllm:num_requests_waiting{engine=\"0\",model_name=\"qwen\"} 9.0\n"
	"# TYPE vllm:gpu_cache_usage_perc gauge\n"
	"vllm:gpu_cache_usage_perc{engine=\"0\",model_name=\"llama\"} 0.5\n"
	"vllm:e2e_request_latency_seconds_bucket{le=\"+Inf\",model_name=\"llama\"} 10\n";

static void test_selector_parse(void **state)
{
	(void)state;
	struct fg_prom_selector s;
	struct fg_prom_err err;

	assert_int_equal(fg_prom_selector_parse("", &s, &err), 0);
	assert_int_equal(s.n, 0);
	assert_int_equal(fg_prom_selector_parse(NULL, &s, &err), 0);
	assert_int_equal(fg_prom_selector_parse("model_name=\"llama\"", &s, &err), 0);
	assert_int_equal(s.n, 1);
	assert_string_equal(s.name[0], "model_name");
	assert_string_equal(s.value[0], "llama");
	assert_int_equal(fg_prom_selector_parse(" a = \"x,y\" , b=\"\\\"\" ", &s, &err), 0);
	assert_int_equal(s.n, 2);
	assert_string_equal(s.value[0], "x,y");
	assert_string_equal(s.value[1], "\"");
	static const char *const bad[] = { "model_name", "model_name=llama", "a=\"x\" b=\"y\"",
					   "a=\"x", "=\"x\"", "a=\"1\",b=\"2\",c=\"3\",d=\"4\",e=\"5\"",
					   "a=\"x\",," };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (fg_prom_selector_parse(bad[i], &s, &err) != -EINVAL)
			fail_msg("selector '%s' accepted", bad[i]);
		assert_true(err.msg[0] != 0);
	}
}

static void test_query(void **state)
{
	(void)state;
	struct fg_prom_selector sel;
	struct fg_prom_err err;
	struct fg_prom_query q[3] = {
		{ .name = "vllm:num_requests_waiting" },
		{ .name = "vllm:num_requests_running" },
		{ .name = "vllm:kv_cache_usage_perc", .alt = "vllm:gpu_cache_usage_perc" },
	};

	/* no selector: every series summed */
	assert_int_equal(fg_prom_selector_parse("", &sel, &err), 0);
	assert_int_equal(fg_prom_query(vllm_page, strlen(vllm_page), &sel, q, 3, &err), 0);
	assert_true(q[0].value == 14.0 && q[0].matches == 3);
	assert_true(q[1].value == 15.0 && q[1].matches == 2);
	assert_true(q[2].value == 0.5 && q[2].matches == 1 && q[2].used_alt == 1);
	/* one model */
	assert_int_equal(fg_prom_selector_parse("model_name=\"llama\"", &sel, &err), 0);
	assert_int_equal(fg_prom_query(vllm_page, strlen(vllm_page), &sel, q, 3, &err), 0);
	assert_true(q[0].value == 5.0 && q[0].matches == 2);
	assert_true(q[1].value == 12.0);
	/* two matchers */
	assert_int_equal(fg_prom_selector_parse("model_name=\"llama\",engine=\"1\"", &sel, &err),
			 0);
	assert_int_equal(fg_prom_query(vllm_page, strlen(vllm_page), &sel, q, 3, &err), 0);
	assert_true(q[0].value == 1.0 && q[0].matches == 1);
	assert_int_equal(q[1].matches, 0);
	/* an absent model */
	assert_int_equal(fg_prom_selector_parse("model_name=\"none\"", &sel, &err), 0);
	assert_int_equal(fg_prom_query(vllm_page, strlen(vllm_page), &sel, q, 3, &err), 0);
	assert_int_equal(q[0].matches + q[1].matches + q[2].matches, 0);
	/* the main name wins over the alternate when both are there */
	static const char both[] = "vllm:kv_cache_usage_perc 0.25\nvllm:gpu_cache_usage_perc 0.75\n";

	assert_int_equal(fg_prom_selector_parse("", &sel, &err), 0);
	assert_int_equal(fg_prom_query(both, strlen(both), &sel, &q[2], 1, &err), 0);
	assert_true(q[2].value == 0.25 && q[2].used_alt == 0);
	/* a malformed page answers nothing */
	static const char bad[] = "vllm:num_requests_waiting 3\nvllm:num_requests_running x\n";

	assert_int_equal(fg_prom_query(bad, strlen(bad), &sel, q, 3, &err), -EINVAL);
	assert_int_equal(err.line, 2);
}

/* ---- seeded random round trip ------------------------------------------- */

static uint64_t rng;
static uint32_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)(rng >> 11);
}

struct gen_sample {
	char name[32];
	unsigned int nl;
	char ln[3][16], lv[3][24];
	double v;
	int has_ts;
	int64_t ts;
};

struct rt_ctx {
	const struct gen_sample *g;
	unsigned int n, bad;
};

static int rt_cb(const struct fg_prom_sample *s, void *arg)
{
	struct rt_ctx *x = arg;
	const struct gen_sample *g = &x->g[x->n++];
	int ok = !strcmp(s->name, g->name) && s->n_labels == g->nl && s->has_ts == g->has_ts &&
		 (!g->has_ts || s->ts_ms == g->ts) &&
		 (isnan(g->v) ? isnan(s->value) : s->value == g->v);

	for (unsigned int k = 0; ok && k < g->nl; k++)
		ok = !strcmp(s->labels[k].name, g->ln[k]) && !strcmp(s->labels[k].value, g->lv[k]);
	x->bad += !ok;
	return 0;
}

static void test_random_roundtrip(void **state)
{
	(void)state;
	const char *seed_env = getenv("FG_TEST_SEED");
	uint64_t seed = seed_env ? strtoull(seed_env, NULL, 0) : 0x5eed12ULL;
	static const char alpha[] = "abcXYZ_:09";
	static const char valch[] = "ab \"\\\n,={}#x";

	print_message("seed %llu (FG_TEST_SEED)\n", (unsigned long long)seed);
	for (int round = 0; round < 200; round++) {
		rng = seed + (uint64_t)round * 0x9e3779b97f4a7c15ULL + 1;
		struct gen_sample g[40];
		char page[16384];
		size_t len = 0;
		unsigned int n = 1 + rnd() % 40;

		for (unsigned int i = 0; i < n; i++) {
			struct gen_sample *s = &g[i];
			unsigned int nn = 1 + rnd() % 12;

			s->name[0] = "abvZ_:"[rnd() % 6];
			for (unsigned int k = 1; k < nn; k++)
				s->name[k] = alpha[rnd() % (sizeof(alpha) - 1)];
			s->name[nn] = 0;
			s->nl = rnd() % 4;
			for (unsigned int k = 0; k < s->nl; k++) {
				snprintf(s->ln[k], sizeof(s->ln[k]), "l%u_%c", k, "xy"[rnd() % 2]);
				unsigned int vl = rnd() % 10;

				for (unsigned int j = 0; j < vl; j++)
					s->lv[k][j] = valch[rnd() % (sizeof(valch) - 1)];
				s->lv[k][vl] = 0;
			}
			switch (rnd() % 6) {
			case 0: s->v = INFINITY; break;
			case 1: s->v = -INFINITY; break;
			case 2: s->v = NAN; break;
			default: s->v = (double)(int32_t)rnd() / 64.0; break;
			}
			s->has_ts = rnd() % 2;
			s->ts = (int64_t)rnd() * 1000 - 5000;
			if (rnd() % 3 == 0)
				len += (size_t)snprintf(page + len, sizeof(page) - len,
							"# TYPE %s gauge\n", s->name);
			len += (size_t)snprintf(page + len, sizeof(page) - len, "%s", s->name);
			if (s->nl || rnd() % 2) {
				page[len++] = '{';
				for (unsigned int k = 0; k < s->nl; k++) {
					len += (size_t)snprintf(page + len, sizeof(page) - len,
								"%s%s=\"", k ? "," : "", s->ln[k]);
					for (const char *q = s->lv[k]; *q; q++) {
						if (*q == '"' || *q == '\\')
							page[len++] = '\\', page[len++] = *q;
						else if (*q == '\n')
							page[len++] = '\\', page[len++] = 'n';
						else
							page[len++] = *q;
					}
					page[len++] = '"';
				}
				page[len++] = '}';
			}
			if (isnan(s->v))
				len += (size_t)snprintf(page + len, sizeof(page) - len, " NaN");
			else if (isinf(s->v))
				len += (size_t)snprintf(page + len, sizeof(page) - len, " %cInf",
							s->v > 0 ? '+' : '-');
			else
				len += (size_t)snprintf(page + len, sizeof(page) - len, " %.17g", s->v);
			if (s->has_ts)
				len += (size_t)snprintf(page + len, sizeof(page) - len, " %lld",
							(long long)s->ts);
			page[len++] = rnd() % 8 ? '\n' : '\n';
		}
		struct rt_ctx x = { .g = g };
		struct fg_prom_err err;
		int rc = fg_prom_parse(page, len, rt_cb, &x, &err);

		if (rc != (int)n || x.bad)
			fail_msg("seed %llu round %d: rc %d (want %u), %u mismatches (%u: %s)",
				 (unsigned long long)seed, round, rc, n, x.bad, err.line, err.msg);
		/* corruptions: each either parses or is refused with a line */
		for (int k = 0; k < 20; k++) {
			char copy[16384];

			memcpy(copy, page, len);
			copy[rnd() % len] = (char)(rnd() & 0xff);
			rc = fg_prom_parse(copy, len, NULL, NULL, &err);
			assert_true(rc >= 0 || (rc == -EINVAL && err.line >= 1));
		}
	}
}

/* ---- load signals: presets, score, outcomes (fg_loadsig.c) ------------ */

struct ls_case {
	const char *desc;
	enum fg_load_preset preset;
	const char *select;
	const char *page;
	enum fg_loadsig_counter oc;
	uint32_t score;           /* when scrapes_ok */
};

static const struct ls_case ls_cases[] = {
	{ "vllm", FG_LOAD_PRESET_VLLM, "",
	  "vllm:num_requests_waiting 3\nvllm:num_requests_running 8\nvllm:kv_cache_usage_perc 0.5\n",
	  FG_LS_scrapes_ok, 3000 + 2000 + 1000 },
	{ "vllm, older kv name", FG_LOAD_PRESET_VLLM, "",
	  "vllm:num_requests_waiting 0\nvllm:num_requests_running 4\nvllm:gpu_cache_usage_perc 0.25\n",
	  FG_LS_scrapes_ok, 1000 + 500 },
	{ "vllm, two models, selector", FG_LOAD_PRESET_VLLM, "model_name=\"a\"",
	  "vllm:num_requests_waiting{model_name=\"a\"} 2\nvllm:num_requests_waiting{model_name=\"b\"} 50\n"
	  "vllm:num_requests_running{model_name=\"a\"} 0\nvllm:kv_cache_usage_perc{model_name=\"a\"} 0\n",
	  FG_LS_scrapes_ok, 2000 },
	{ "sglang", FG_LOAD_PRESET_SGLANG, "",
	  "sglang:num_queue_reqs 5\nsglang:token_usage 0.75\n", FG_LS_scrapes_ok, 5000 + 1500 },
	{ "triton", FG_LOAD_PRESET_TRITON, "",
	  "nv_inference_pending_request_count{model=\"r\",version=\"1\"} 7\n"
	  "nv_inference_pending_request_count{model=\"s\",version=\"1\"} 1\n", FG_LS_scrapes_ok, 8000 },
	{ "missing series", FG_LOAD_PRESET_SGLANG, "", "sglang:num_queue_reqs 5\n",
	  FG_LS_scrape_missing, 0 },
	{ "selector matches nothing", FG_LOAD_PRESET_TRITON, "model=\"x\"",
	  "nv_inference_pending_request_count{model=\"r\"} 7\n", FG_LS_scrape_missing, 0 },
	{ "NaN", FG_LOAD_PRESET_TRITON, "", "nv_inference_pending_request_count NaN\n",
	  FG_LS_scrape_bad_value, 0 },
	{ "+Inf", FG_LOAD_PRESET_TRITON, "", "nv_inference_pending_request_count +Inf\n",
	  FG_LS_scrape_bad_value, 0 },
	{ "negative", FG_LOAD_PRESET_TRITON, "", "nv_inference_pending_request_count -1\n",
	  FG_LS_scrape_bad_value, 0 },
	{ "old timestamp", FG_LOAD_PRESET_TRITON, "",
	  "nv_inference_pending_request_count 1 1000\n", FG_LS_scrape_old, 0 },
	{ "recent timestamp", FG_LOAD_PRESET_TRITON, "",
	  "nv_inference_pending_request_count 1 1999999999500\n", FG_LS_scrapes_ok, 1000 },
	{ "malformed", FG_LOAD_PRESET_TRITON, "", "nv_inference_pending_request_count\n",
	  FG_LS_scrape_malformed, 0 },
	{ "huge score saturates", FG_LOAD_PRESET_TRITON, "",
	  "nv_inference_pending_request_count 1e300\n", FG_LS_scrapes_ok, FG_LOADSIG_SCORE_MAX },
};

static void test_loadsig_eval(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(ls_cases) / sizeof(ls_cases[0]); i++) {
		const struct ls_case *c = &ls_cases[i];
		struct fg_metrics_cfg m;
		double raw[FG_LOAD_SERIES_MAX];
		uint32_t score = 0;
		char why[96];

		fg_loadsig_preset(c->preset, &m);
		snprintf(m.select, sizeof(m.select), "%s", c->select);
		enum fg_loadsig_counter oc = fg_loadsig_eval(&m, c->page, strlen(c->page),
							     2000000000000LL, 1000, raw, &score,
							     why, sizeof(why));

		if (oc != c->oc)
			fail_msg("%s: %s (%s), expected %s", c->desc, fg_loadsig_counter_names[oc], why,
				 fg_loadsig_counter_names[c->oc]);
		if (oc == FG_LS_scrapes_ok && score != c->score)
			fail_msg("%s: score %u, expected %u", c->desc, score, c->score);
		if (oc != FG_LS_scrapes_ok)
			assert_true(why[0] != 0);
	}
	/* the page limit */
	struct fg_metrics_cfg m;
	double raw[FG_LOAD_SERIES_MAX];
	uint32_t score;
	char why[96];
	char *big = calloc(1, FG_LOADSIG_PAGE_MAX + 2);

	assert_non_null(big);
	memset(big, '\n', FG_LOADSIG_PAGE_MAX + 1);
	fg_loadsig_preset(FG_LOAD_PRESET_VLLM, &m);
	assert_int_equal(fg_loadsig_eval(&m, big, FG_LOADSIG_PAGE_MAX + 1, 0, 1000, raw, &score,
					 why, sizeof(why)), FG_LS_scrape_too_big);
	free(big);
	assert_int_equal(fg_load_preset_parse("SGLang"), FG_LOAD_PRESET_SGLANG);
	assert_int_equal(fg_load_preset_parse("tgi"), -EINVAL);
	assert_int_equal(fg_loadsig_stale_ms(&m, 250), 1000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pages),
		cmocka_unit_test(test_bounds),
		cmocka_unit_test(test_selector_parse),
		cmocka_unit_test(test_query),
		cmocka_unit_test(test_random_roundtrip),
		cmocka_unit_test(test_loadsig_eval),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
