/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The LLM trace reader of `flowgate-bench inference --trace` (bench/
 * fgb_trace.c): a table of files (accepted with their requests, or refused
 * with the line number), column mappings, and a seeded property test:
 * generated traces in random dialects (extra columns, column order,
 * quoting, spaces, CRLF, blank lines, a BOM, date-times or numbers) parse
 * back to what was generated, and the same trace with ONE row broken in
 * one of many ways is refused with exactly that row's line number.
 * FGB_TRACE_SEED=N reruns one seed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fgb_trace.h"

/* ---- the file table ------------------------------------------------------ */

struct file_case {
	const char *desc;
	const char *cols; /* NULL: Azure */
	const char *text;
	int rc;
	unsigned long line; /* refused: the line */
	size_t n;           /* accepted: requests */
	double t_last;      /* accepted: last request's t_s */
	uint32_t p_last, o_last;
};

#define AZ "TIMESTAMP,ContextTokens,GeneratedTokens\n"

static const struct file_case files[] = {
	{ "azure rows", NULL, AZ "2023-11-16 18:15:46.6805900,374,44\n"
				 "2023-11-16 18:15:50.9951690,396,109\n", 0, 0, 2, 4.314579, 396, 109 },
	{ "no final newline, CRLF", NULL, AZ "2023-11-16 18:15:46.5,1,2\r\n"
					 "2023-11-16 18:15:47,3,4", 0, 0, 2, 0.5, 3, 4 },
	{ "midnight and a month end", NULL, AZ "2023-01-31 23:59:59.9,1,1\n2023-02-01 00:00:00.1,1,1\n",
	  0, 0, 2, 0.2, 1, 1 },
	{ "leap day", NULL, AZ "2024-02-28 12:00:00,1,1\n2024-02-29T12:00:00Z,1,1\n",
	  0, 0, 2, 86400, 1, 1 },
	{ "blank lines, BOM, spaces", NULL, "\xef\xbb\xbf" AZ "\n 2023-11-16 18:15:46 , 7 , 8 \n\n",
	  0, 0, 1, 0, 7, 8 },
	{ "zero tokens, equal times", NULL, AZ "2023-11-16 18:15:46,0,0\n2023-11-16 18:15:46,0,1\n",
	  0, 0, 2, 0, 0, 1 },
	{ "burstgpt columns", "Timestamp,Request tokens,Response tokens,s",
	  "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
	  "5,ChatGPT,472,18,490,Conversation log\n7.25,GPT-4,1087,230,1317,Conversation log\n",
	  0, 0, 2, 2.25, 1087, 230 },
	{ "numbers, ms, quoted", "#3,#1,#2,ms", "out,\"in, tokens\",t\n5,\"6\",1000\n7,8,1500\n",
	  0, 0, 2, 0.5, 7, 8 },
	{ "auto unit: seconds", "t,p,o", "t,p,o\n100,1,1\n103.5,2,2\n", 0, 0, 2, 3.5, 2, 2 },
	{ "empty file", NULL, "", -EINVAL, 1 },
	{ "header only", NULL, AZ, -EINVAL, 1 },
	{ "no such column", NULL, "TIMESTAMP,ContextTokens,Generated\n", -EINVAL, 1 },
	{ "column number past the header", "#4,#1,#2", "a,b,c\n1,2,3\n", -EINVAL, 1 },
	{ "short row", NULL, AZ "2023-11-16 18:15:46,1,1\n2023-11-16 18:15:47,1\n", -EINVAL, 3 },
	{ "long row", NULL, AZ "2023-11-16 18:15:46,1,1,9\n", -EINVAL, 2 },
	{ "not an integer", NULL, AZ "2023-11-16 18:15:46,1,1\n2023-11-16 18:15:47,1x,1\n",
	  -EINVAL, 3 },
	{ "negative tokens", NULL, AZ "2023-11-16 18:15:46,-1,1\n", -EINVAL, 2 },
	{ "fractional tokens", NULL, AZ "2023-11-16 18:15:46,1,1.5\n", -EINVAL, 2 },
	{ "too many tokens", NULL, AZ "2023-11-16 18:15:46,10000001,1\n", -EINVAL, 2 },
	{ "empty field", NULL, AZ "2023-11-16 18:15:46,,1\n", -EINVAL, 2 },
	{ "month 13", NULL, AZ "2023-13-16 18:15:46,1,1\n", -EINVAL, 2 },
	{ "February 30", NULL, AZ "2023-02-30 18:15:46,1,1\n", -EINVAL, 2 },
	{ "February 29, 2023", NULL, AZ "2023-02-29 18:15:46,1,1\n", -EINVAL, 2 },
	{ "hour 24", NULL, AZ "2023-11-16 24:00:00,1,1\n", -EINVAL, 2 },
	{ "date only", NULL, AZ "2023-11-16,1,1\n", -EINVAL, 2 },
	{ "empty fraction", NULL, AZ "2023-11-16 18:15:46.,1,1\n", -EINVAL, 2 },
	{ "time goes back", NULL, AZ "2023-11-16 18:15:46,1,1\n2023-11-16 18:15:47,1,1\n"
				     "2023-11-16 18:15:46.9,1,1\n", -EINVAL, 4 },
	{ "a fraction goes back", NULL, AZ "2023-11-16 18:15:46.5,1,1\n2023-11-16 18:15:46.4999,1,1\n",
	  -EINVAL, 3 },
	{ "a number where a date-time was", NULL, AZ "2023-11-16 18:15:46,1,1\n5,1,1\n",
	  -EINVAL, 3 },
	{ "a date-time in seconds", "t,p,o,s", "t,p,o\n2023-11-16 18:15:46,1,1\n", -EINVAL, 2 },
	{ "signed seconds", "t,p,o", "t,p,o\n+5,1,1\n", -EINVAL, 2 },
	{ "exponent", "t,p,o", "t,p,o\n1e3,1,1\n", -EINVAL, 2 },
	{ "NUL byte", NULL, AZ "2023-11-16 18:15:46,1\0,1\n", -EINVAL, 2 },
	{ "CR inside a line", NULL, AZ "2023-11-16 18:15:46,1\r,1\n", -EINVAL, 2 },
	{ "open quote", NULL, AZ "2023-11-16 18:15:46,\"1,1\n", -EINVAL, 2 },
	{ "quote in a field", NULL, AZ "2023-11-16 18:15:46,1\"2,1\n", -EINVAL, 2 },
	{ "text after a quote", NULL, AZ "2023-11-16 18:15:46,\"1\"2,1\n", -EINVAL, 2 },
	{ "HTML", NULL, "<html><body>404</body></html>\n", -EINVAL, 1 },
};

static size_t text_len(const struct file_case *c)
{
	/* the NUL-byte case holds a NUL: its length is that of the literal */
	if (!strcmp(c->desc, "NUL byte"))
		return strlen(AZ) + strlen("2023-11-16 18:15:46,1") + 1 + strlen(",1\n");
	return strlen(c->text);
}

static void test_files(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		const struct file_case *c = &files[i];
		struct fgb_trace_cols cols;
		struct fgb_trace_err err;
		struct fgb_trace t = { 0 };

		assert_int_equal(fgb_trace_cols_parse(c->cols, &cols, &err), 0);
		int rc = fgb_trace_parse(c->text, text_len(c), &cols, &t, &err);

		if (rc != c->rc || (rc && err.line != c->line))
			fail_msg("%s: rc %d line %lu (%s), wanted rc %d line %lu", c->desc, rc,
				 err.line, err.msg, c->rc, c->line);
		if (rc) {
			assert_true(err.msg[0] != 0);
			continue;
		}
		assert_int_equal(t.n, c->n);
		assert_true(t.req[0].t_s == 0);
		if (fabs(t.req[t.n - 1].t_s - c->t_last) > 1e-6)
			fail_msg("%s: last time %.9f, wanted %.9f", c->desc, t.req[t.n - 1].t_s,
				 c->t_last);
		assert_int_equal(t.req[t.n - 1].prompt, c->p_last);
		assert_int_equal(t.req[t.n - 1].output, c->o_last);
		fgb_trace_free(&t);
	}
}

static void test_long_line(void **state)
{
	size_t n = FGB_TRACE_LINE_MAX + 64;
	char *buf = malloc(strlen(AZ) + n + 64);
	struct fgb_trace_cols cols;
	struct fgb_trace_err err;
	struct fgb_trace t = { 0 };

	(void)state;
	assert_non_null(buf);
	int k = sprintf(buf, AZ "2023-11-16 18:15:46,1,1\n2023-11-16 18:15:47,1,");

	memset(buf + k, '1', n);
	buf[k + n] = '\n';
	assert_int_equal(fgb_trace_cols_parse(NULL, &cols, &err), 0);
	assert_int_equal(fgb_trace_parse(buf, (size_t)k + n + 1, &cols, &t, &err), -EINVAL);
	assert_int_equal(err.line, 3);
	free(buf);
}

static void test_cols(void **state)
{
	static const struct {
		const char *spec;
		int rc;
	} c[] = {
		{ "a,b,c", 0 }, { "a,b,c,datetime", 0 }, { "#1,#2,#64,us", 0 },
		{ "a,b", -EINVAL }, { "a,b,c,d,e", -EINVAL }, { "a,b,c,minutes", -EINVAL },
		{ "#0,b,c", -EINVAL }, { "#65,b,c", -EINVAL }, { "#x,b,c", -EINVAL },
		{ ",,", -EINVAL },
	};
	struct fgb_trace_cols cols;
	struct fgb_trace_err err;

	(void)state;
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++)
		if (fgb_trace_cols_parse(c[i].spec, &cols, &err) != c[i].rc)
			fail_msg("mapping '%s': wanted %d", c[i].spec, c[i].rc);
	assert_int_equal(fgb_trace_cols_parse("", &cols, &err), 0);
	assert_string_equal(cols.time, "TIMESTAMP");
	assert_string_equal(cols.output, "GeneratedTokens");
}

/* ---- seeded property test ------------------------------------------------ */

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

static unsigned int rn(struct rng *r, unsigned int n) { return (unsigned int)(rnext(r) % n); }

struct buf {
	char *p;
	size_t len, cap;
};

static void put(struct buf *b, const char *fmt, ...)
{
	va_list ap;

	for (;;) {
		va_start(ap, fmt);
		int n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);

		va_end(ap);
		if ((size_t)n < b->cap - b->len) {
			b->len += (size_t)n;
			return;
		}
		b->cap = b->cap * 2 + (size_t)n + 64;
		b->p = realloc(b->p, b->cap);
		assert_non_null(b->p);
	}
}

/* a dialect: which field holds what, how many fields, how rows are written */
struct dialect {
	int nf, pos[3]; /* field index of time, prompt, output */
	bool datetime, crlf, quote, spaces;
	char cols[128];
};

static void dialect_make(struct rng *g, struct dialect *d)
{
	d->nf = 3 + (int)rn(g, 4);
	for (int k = 0; k < 3; k++) {
		int p;
		bool used;

		do {
			p = (int)rn(g, (unsigned int)d->nf);
			used = false;
			for (int j = 0; j < k; j++)
				used |= d->pos[j] == p;
		} while (used);
		d->pos[k] = p;
	}
	d->datetime = rn(g, 2);
	d->crlf = rn(g, 4) == 0;
	d->quote = rn(g, 4) == 0;
	d->spaces = rn(g, 4) == 0;
	if (rn(g, 2))
		snprintf(d->cols, sizeof(d->cols), "T%d,P%d,O%d%s", d->pos[0], d->pos[1], d->pos[2],
			 d->datetime ? "" : ",s");
	else
		snprintf(d->cols, sizeof(d->cols), "#%d,#%d,#%d,%s", d->pos[0] + 1, d->pos[1] + 1,
			 d->pos[2] + 1, d->datetime ? "datetime" : "s");
}

/* one field: @p text, quoted / padded as the dialect says */
static void field(struct buf *b, const struct dialect *d, struct rng *g, int i, const char *text)
{
	const char *sp = d->spaces && rn(g, 2) ? " " : "";

	if (i)
		put(b, ",");
	if (d->quote && rn(g, 2))
		put(b, "%s\"%s\"%s", sp, text, sp);
	else
		put(b, "%s%s%s", sp, text, sp);
}

static void header(struct buf *b, const struct dialect *d, struct rng *g)
{
	char name[16];

	for (int i = 0; i < d->nf; i++) {
		snprintf(name, sizeof(name), "X%d", i);
		for (int k = 0; k < 3; k++)
			if (d->pos[k] == i)
				snprintf(name, sizeof(name), "%c%d", "TPO"[k], i);
		field(b, d, g, i, name);
	}
	put(b, d->crlf ? "\r\n" : "\n");
}

static void fmt_time(const struct dialect *d, int64_t us, char *out, size_t cap)
{
	/* base: 2023-11-16 00:00:00 UTC + us */
	int64_t s = us / 1000000, frac = us % 1000000;

	if (!d->datetime) {
		snprintf(out, cap, "%lld.%06lld", (long long)(1700000000 + s), (long long)frac);
		return;
	}
	int day = 16 + (int)(s / 86400), sod = (int)(s % 86400);

	snprintf(out, cap, "2023-11-%02d %02d:%02d:%02d.%06lld", day, sod / 3600, sod / 60 % 60,
		 sod % 60, (long long)frac);
}

static void fmt_time(const struct dialect *d, int64_t us, char *out, size_t cap);

/* A broken rendering of a row's fields into @p f (3 texts); @p prev_us:
 * the time of the row before. */
static void corrupt(struct rng *g, const struct dialect *d, char f[3][64], int *nf_delta,
		    int64_t prev_us)
{
	static const char *const bad_tok[] = { "-1", "1.5", "x", "", "10000001", "0x10", "1e3",
					       "99999999999999999999999" };
	static const char *const bad_dt[] = { "2023-11-31 00:00:00", "2023-11-16 25:00:00",
					      "2023-11-16", "2023-11-16 00:00:00.", "16/11/2023",
					      "2023-11-16 00:00:00.5Q", "" };
	static const char *const bad_num[] = { "-1", "1e3", "", "1.2.3", "+1", "0x10", ".",
					       "1000000000000000" };
	unsigned int kind = rn(g, 4);

	if (kind == 0) {
		*nf_delta = rn(g, 2) ? 1 : -1; /* a field more or less */
	} else if (kind == 1) {
		snprintf(f[1 + rn(g, 2)], 64, "%s", bad_tok[rn(g, 8)]);
	} else if (kind == 2 && d->datetime) {
		snprintf(f[0], 64, "%s", bad_dt[rn(g, 7)]);
	} else if (kind == 2) {
		snprintf(f[0], 64, "%s", bad_num[rn(g, 8)]);
	} else if (prev_us > 1000 && rn(g, 2)) {
		/* a microsecond to a millisecond before the row above */
		fmt_time(d, prev_us - 1 - (int64_t)rn(g, 1000), f[0], 64);
	} else {
		snprintf(f[0], 64, "%s", d->datetime ? "2023-11-15 23:59:59" : "1699999999");
	}
}

/* Writes a trace of @p n rows (row @p bad broken, -1 none) and returns
 * the line number of row @p bad. */
static unsigned long trace_write(struct rng *g, const struct dialect *d, struct buf *b, int n,
				 int bad, struct fgb_trace_req *want)
{
	unsigned long line = 1, bad_line = 0;
	int64_t us = 0;

	b->len = 0;
	if (rn(g, 8) == 0)
		put(b, "\xef\xbb\xbf");
	header(b, d, g);
	for (int r = 0; r < n; r++) {
		char f[3][64];
		int nf_delta = 0;
		int64_t prev_us = us;

		while (rn(g, 10) == 0) {
			put(b, d->crlf ? "\r\n" : "\n");
			line++;
		}
		line++;
		us += rn(g, 3) ? (int64_t)rn(g, 5000000) : 0;
		want[r].t_s = (double)us / 1e6;
		want[r].prompt = rn(g, 5) ? rn(g, 9000) : rn(g, 10000001);
		want[r].output = rn(g, 2000);
		fmt_time(d, us, f[0], sizeof(f[0]));
		snprintf(f[1], sizeof(f[1]), "%u", want[r].prompt);
		snprintf(f[2], sizeof(f[2]), "%u", want[r].output);
		if (r == bad) {
			corrupt(g, d, f, &nf_delta, r ? prev_us : 0);
			bad_line = line;
		}
		for (int i = 0; i < d->nf + nf_delta; i++) {
			const char *text = "z";

			for (int k = 0; k < 3; k++)
				if (d->pos[k] == i)
					text = f[k];
			field(b, d, g, i, text);
		}
		put(b, d->crlf ? "\r\n" : "\n");
	}
	return bad_line;
}

static void test_property(void **state)
{
	const char *env = getenv("FGB_TRACE_SEED");
	uint64_t first = env ? strtoull(env, NULL, 0) : 1, last = env ? first : 3000;
	struct fgb_trace_req *want = malloc(200 * sizeof(*want));
	struct buf b = { 0 };

	(void)state;
	assert_non_null(want);
	for (uint64_t seed = first; seed <= last; seed++) {
		struct rng g = { seed };
		struct dialect d;
		struct fgb_trace_cols cols;
		struct fgb_trace_err err;
		struct fgb_trace t = { 0 };
		int n = 1 + (int)rn(&g, 200);

		dialect_make(&g, &d);
		if (fgb_trace_cols_parse(d.cols, &cols, &err))
			fail_msg("seed %llu: mapping %s: %s", (unsigned long long)seed, d.cols, err.msg);
		trace_write(&g, &d, &b, n, -1, want);
		int rc = fgb_trace_parse(b.p, b.len, &cols, &t, &err);

		if (rc || t.n != (size_t)n)
			fail_msg("seed %llu: valid trace refused: line %lu: %s", (unsigned long long)seed,
				 err.line, err.msg);
		for (int r = 0; r < n; r++)
			if (fabs(t.req[r].t_s - (want[r].t_s - want[0].t_s)) > 2e-6 || t.req[r].prompt != want[r].prompt ||
			    t.req[r].output != want[r].output)
				fail_msg("seed %llu: row %d differs", (unsigned long long)seed, r);
		fgb_trace_free(&t);

		/* the same dialect, one row broken: refused at that row's line */
		int bad = (int)rn(&g, (unsigned int)n);
		unsigned long bad_line = trace_write(&g, &d, &b, n, bad, want);

		rc = fgb_trace_parse(b.p, b.len, &cols, &t, &err);
		if (rc == 0) {
			/* a "time goes back" on row 0 is not an error: nothing before it */
			if (bad != 0)
				fail_msg("seed %llu: row %d broken, accepted", (unsigned long long)seed, bad);
			fgb_trace_free(&t);
			continue;
		}
		if (rc != -EINVAL || err.line != bad_line)
			fail_msg("seed %llu: row %d (line %lu) broken: rc %d at line %lu: %s",
				 (unsigned long long)seed, bad, bad_line, rc, err.line, err.msg);
	}
	free(b.p);
	free(want);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_files),
		cmocka_unit_test(test_long_line),
		cmocka_unit_test(test_cols),
		cmocka_unit_test(test_property),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
