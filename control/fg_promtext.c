/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Prometheus text exposition parser.  See fg_promtext.h.
 *
 * The page is walked once with an index that only moves forward; every
 * copy goes into fixed scratch arrays sized by the FG_PROM_MAX_* bounds and
 * checked before each byte, so a hostile page costs O(len) and no memory.
 */
#include "fg_promtext.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

struct scratch {
	char name[FG_PROM_MAX_NAME];
	char lname[FG_PROM_MAX_LABELS][FG_PROM_MAX_NAME];
	char lval[FG_PROM_MAX_LABELS][FG_PROM_MAX_NAME];
	struct fg_prom_label labels[FG_PROM_MAX_LABELS];
};

struct cur {
	const char *p;
	size_t i, end;     /* end: index of the line's end ('\n' or len) */
	unsigned int line;
	struct fg_prom_err *err;
};

static int fail(struct cur *c, const char *fmt, ...)
{
	if (c->err) {
		va_list ap;

		c->err->line = c->line;
		va_start(ap, fmt);
		vsnprintf(c->err->msg, sizeof(c->err->msg), fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

static int is_blank(char ch) { return ch == ' ' || ch == '\t'; }
static int is_alpha_(char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || ch == '_';
}
static int is_digit(char ch) { return ch >= '0' && ch <= '9'; }

static void skip_blanks(struct cur *c)
{
	while (c->i < c->end && is_blank(c->p[c->i]))
		c->i++;
}

/* Copies a name into @p out; @p colon: metric names may hold ':'. */
static int read_name(struct cur *c, char *out, int colon, const char *what)
{
	size_t n = 0;

	if (c->i >= c->end || !(is_alpha_(c->p[c->i]) || (colon && c->p[c->i] == ':')))
		return fail(c, "%s expected", what);
	while (c->i < c->end) {
		char ch = c->p[c->i];

		if (!(is_alpha_(ch) || is_digit(ch) || (colon && ch == ':')))
			break;
		if (n + 1 >= FG_PROM_MAX_NAME)
			return fail(c, "%s longer than %u bytes", what, FG_PROM_MAX_NAME - 1);
		out[n++] = ch;
		c->i++;
	}
	out[n] = 0;
	return 0;
}

/* "..." with \\ \" \n escapes, into @p out. */
static int read_quoted(struct cur *c, char *out)
{
	size_t n = 0;

	if (c->i >= c->end || c->p[c->i] != '"')
		return fail(c, "label value must start with '\"'");
	c->i++;
	for (;;) {
		if (c->i >= c->end)
			return fail(c, "unterminated label value");
		char ch = c->p[c->i++];

		if (ch == '"')
			break;
		if (ch == '\\') {
			if (c->i >= c->end)
				return fail(c, "unterminated escape in label value");
			char e = c->p[c->i++];

			if (e == 'n')
				ch = '\n';
			else if (e == '\\' || e == '"')
				ch = e;
			else
				return fail(c, "bad escape '\\%c' in label value (only \\\\, \\\", \\n)",
					    e);
		}
		if (n + 1 >= FG_PROM_MAX_NAME)
			return fail(c, "label value longer than %u bytes", FG_PROM_MAX_NAME - 1);
		out[n++] = ch;
	}
	out[n] = 0;
	return 0;
}

/* The next blank-delimited token, as [*b, *e). */
static void token(struct cur *c, size_t *b, size_t *e)
{
	skip_blanks(c);
	*b = c->i;
	while (c->i < c->end && !is_blank(c->p[c->i]))
		c->i++;
	*e = c->i;
}

static int parse_value(struct cur *c, size_t b, size_t e, double *out)
{
	char buf[64];
	size_t n = e - b;

	if (n == 0)
		return fail(c, "sample value expected");
	if (n >= sizeof(buf))
		return fail(c, "sample value too long");
	memcpy(buf, c->p + b, n);
	buf[n] = 0;
	const char *s = buf;
	int neg = 0;

	if (*s == '+' || *s == '-')
		neg = *s++ == '-';
	if (!strcasecmp(s, "inf")) {
		*out = neg ? -INFINITY : INFINITY;
		return 0;
	}
	if (!strcasecmp(s, "nan")) {
		*out = NAN;
		return 0;
	}
	/* decimal only: strtod would take hex floats, "infinity", "nan(...)" */
	for (const char *q = s; *q; q++)
		if (!is_digit(*q) && *q != '.' && *q != 'e' && *q != 'E' && *q != '+' &&
		    *q != '-')
			return fail(c, "bad sample value '%.40s'", buf);
	if (!is_digit(*s) && *s != '.')
		return fail(c, "bad sample value '%.40s'", buf);
	char *end;

	*out = strtod(buf, &end);
	if (*end)
		return fail(c, "bad sample value '%.40s'", buf);
	return 0;
}

static int parse_ts(struct cur *c, size_t b, size_t e, int64_t *out)
{
	size_t k = b;
	int neg = 0;
	uint64_t v = 0;

	if (k < e && (c->p[k] == '-' || c->p[k] == '+'))
		neg = c->p[k++] == '-';
	if (k == e)
		return fail(c, "bad timestamp");
	for (; k < e; k++) {
		if (!is_digit(c->p[k]))
			return fail(c, "bad timestamp (integer milliseconds expected)");
		if (v > (uint64_t)INT64_MAX / 10)
			return fail(c, "timestamp out of range");
		v = v * 10 + (uint64_t)(c->p[k] - '0');
	}
	if (v > (uint64_t)INT64_MAX)
		return fail(c, "timestamp out of range");
	*out = neg ? -(int64_t)v : (int64_t)v;
	return 0;
}

static int parse_comment(struct cur *c)
{
	char name[FG_PROM_MAX_NAME];
	size_t b, e;

	c->i++; /* '#' */
	token(c, &b, &e);
	size_t n = e - b;
	int help = n == 4 && !memcmp(c->p + b, "HELP", 4);
	int type = n == 4 && !memcmp(c->p + b, "TYPE", 4);

	if (!help && !type)
		return 0; /* a plain comment */
	skip_blanks(c);
	int rc = read_name(c, name, 1, help ? "HELP: metric name" : "TYPE: metric name");

	if (rc)
		return rc;
	if (c->i < c->end && !is_blank(c->p[c->i]))
		return fail(c, "bad character after the metric name");
	if (help)
		return 0; /* docstring: anything */
	token(c, &b, &e);
	n = e - b;
	static const char *const types[] = { "counter", "gauge", "histogram", "summary",
					     "untyped" };
	int ok = 0;

	for (size_t k = 0; k < sizeof(types) / sizeof(types[0]) && !ok; k++)
		ok = strlen(types[k]) == n && !memcmp(c->p + b, types[k], n);
	if (!ok)
		return fail(c, "TYPE: unknown type '%.*s'", (int)(n > 32 ? 32 : n), c->p + b);
	skip_blanks(c);
	if (c->i != c->end)
		return fail(c, "TYPE: text after the type");
	return 0;
}

static int parse_sample(struct cur *c, struct scratch *sc, struct fg_prom_sample *smp)
{
	int rc = read_name(c, sc->name, 1, "metric name");

	if (rc)
		return rc;
	smp->name = sc->name;
	smp->n_labels = 0;
	smp->labels = sc->labels;
	if (c->i < c->end && !is_blank(c->p[c->i]) && c->p[c->i] != '{')
		return fail(c, "bad character '%c' after the metric name", c->p[c->i]);
	skip_blanks(c);
	if (c->i < c->end && c->p[c->i] == '{') {
		c->i++;
		for (;;) {
			skip_blanks(c);
			if (c->i < c->end && c->p[c->i] == '}') {
				c->i++;
				break;
			}
			if (smp->n_labels == FG_PROM_MAX_LABELS)
				return fail(c, "more than %u labels", FG_PROM_MAX_LABELS);
			unsigned int k = smp->n_labels;

			rc = read_name(c, sc->lname[k], 0, "label name");
			if (rc)
				return rc;
			skip_blanks(c);
			if (c->i >= c->end || c->p[c->i] != '=')
				return fail(c, "'=' expected after label '%s'", sc->lname[k]);
			c->i++;
			skip_blanks(c);
			rc = read_quoted(c, sc->lval[k]);
			if (rc)
				return rc;
			for (unsigned int j = 0; j < k; j++)
				if (!strcmp(sc->lname[j], sc->lname[k]))
					return fail(c, "label '%s' given twice", sc->lname[k]);
			sc->labels[k].name = sc->lname[k];
			sc->labels[k].value = sc->lval[k];
			smp->n_labels++;
			skip_blanks(c);
			if (c->i < c->end && c->p[c->i] == ',') {
				c->i++;
				continue;
			}
			if (c->i < c->end && c->p[c->i] == '}') {
				c->i++;
				break;
			}
			return fail(c, "',' or '}' expected in the label set");
		}
	}
	size_t b, e;

	token(c, &b, &e);
	rc = parse_value(c, b, e, &smp->value);
	if (rc)
		return rc;
	token(c, &b, &e);
	smp->has_ts = e > b;
	smp->ts_ms = 0;
	if (smp->has_ts) {
		rc = parse_ts(c, b, e, &smp->ts_ms);
		if (rc)
			return rc;
	}
	skip_blanks(c);
	if (c->i != c->end)
		return fail(c, "text after the timestamp");
	return 0;
}

int fg_prom_parse(const char *text, size_t len, fg_prom_sample_cb cb, void *ctx,
		  struct fg_prom_err *err)
{
	struct scratch sc;
	struct cur c = { .p = text, .err = err };
	int n = 0;

	if (err) {
		err->line = 0;
		err->msg[0] = 0;
	}
	if (len > FG_PROM_MAX_INPUT) {
		if (err)
			snprintf(err->msg, sizeof(err->msg), "page of %zu bytes (limit %u)", len,
				 FG_PROM_MAX_INPUT);
		return -E2BIG;
	}
	if (len && !text)
		return -EINVAL;
	while (c.i < len) {
		const char *nl = memchr(text + c.i, '\n', len - c.i);

		c.line++;
		c.end = nl ? (size_t)(nl - text) : len;
		size_t next = c.end + 1;

		if (c.end > c.i && text[c.end - 1] == '\r')
			c.end--;
		if (memchr(text + c.i, 0, c.end - c.i))
			return fail(&c, "NUL byte");
		skip_blanks(&c);
		if (c.i == c.end) {
			/* empty */
		} else if (text[c.i] == '#') {
			int rc = parse_comment(&c);

			if (rc)
				return rc;
		} else {
			struct fg_prom_sample smp;
			int rc = parse_sample(&c, &sc, &smp);

			if (rc)
				return rc;
			smp.line = c.line;
			if (n < INT32_MAX)
				n++;
			if (cb) {
				rc = cb(&smp, ctx);
				if (rc)
					return rc;
			}
		}
		c.i = next;
	}
	return n;
}

int fg_prom_selector_parse(const char *s, struct fg_prom_selector *out,
			   struct fg_prom_err *err)
{
	memset(out, 0, sizeof(*out));
	if (err) {
		err->line = 0;
		err->msg[0] = 0;
	}
	if (!s || !*s)
		return 0;
	struct cur c = { .p = s, .end = strlen(s), .err = err };

	for (;;) {
		skip_blanks(&c);
		if (c.i == c.end)
			break;
		if (out->n == FG_PROM_SEL_MAX)
			return fail(&c, "more than %u label matchers", FG_PROM_SEL_MAX);
		int rc = read_name(&c, out->name[out->n], 0, "label name");

		if (rc)
			return rc;
		skip_blanks(&c);
		if (c.i >= c.end || s[c.i] != '=')
			return fail(&c, "'=' expected after label '%s'", out->name[out->n]);
		c.i++;
		skip_blanks(&c);
		rc = read_quoted(&c, out->value[out->n]);
		if (rc)
			return rc;
		out->n++;
		skip_blanks(&c);
		if (c.i == c.end)
			break;
		if (s[c.i] != ',')
			return fail(&c, "',' expected between label matchers");
		c.i++;
	}
	return 0;
}

int fg_prom_selector_match(const struct fg_prom_selector *sel,
			   const struct fg_prom_sample *smp)
{
	for (unsigned int k = 0; sel && k < sel->n; k++) {
		int ok = 0;

		for (unsigned int j = 0; j < smp->n_labels && !ok; j++)
			ok = !strcmp(smp->labels[j].name, sel->name[k]) &&
			     !strcmp(smp->labels[j].value, sel->value[k]);
		if (!ok)
			return 0;
	}
	return 1;
}

struct query_ctx {
	const struct fg_prom_selector *sel;
	struct fg_prom_query *q;
	unsigned int nq;
	/* alternates are summed apart and used only if the main name is absent */
	double alt_value[16];
	unsigned int alt_matches[16];
	int alt_has_ts[16];
	int64_t alt_ts[16];
};

static void oldest(int *has, int64_t *ts, const struct fg_prom_sample *s)
{
	if (!s->has_ts)
		return;
	if (!*has || s->ts_ms < *ts)
		*ts = s->ts_ms;
	*has = 1;
}

static int query_cb(const struct fg_prom_sample *s, void *arg)
{
	struct query_ctx *x = arg;

	if (!fg_prom_selector_match(x->sel, s))
		return 0;
	for (unsigned int k = 0; k < x->nq; k++) {
		struct fg_prom_query *q = &x->q[k];

		if (q->name && !strcmp(q->name, s->name)) {
			q->value += s->value;
			q->matches++;
			oldest(&q->has_ts, &q->ts_ms, s);
		} else if (q->alt && q->alt[0] && !strcmp(q->alt, s->name)) {
			x->alt_value[k] += s->value;
			x->alt_matches[k]++;
			oldest(&x->alt_has_ts[k], &x->alt_ts[k], s);
		}
	}
	return 0;
}

int fg_prom_query(const char *text, size_t len, const struct fg_prom_selector *sel,
		  struct fg_prom_query *q, unsigned int nq, struct fg_prom_err *err)
{
	struct query_ctx x = { .sel = sel, .q = q, .nq = nq };

	if (nq > 16)
		return -EINVAL;
	for (unsigned int k = 0; k < nq; k++) {
		q[k].value = 0;
		q[k].matches = 0;
		q[k].used_alt = 0;
		q[k].has_ts = 0;
		q[k].ts_ms = 0;
	}
	int rc = fg_prom_parse(text, len, query_cb, &x, err);

	if (rc < 0)
		return rc;
	for (unsigned int k = 0; k < nq; k++)
		if (!q[k].matches && x.alt_matches[k]) {
			q[k].value = x.alt_value[k];
			q[k].matches = x.alt_matches[k];
			q[k].used_alt = 1;
			q[k].has_ts = x.alt_has_ts[k];
			q[k].ts_ms = x.alt_ts[k];
		}
	return 0;
}
