/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * LLM request traces: a strict CSV reader.  See fgb_trace.h.
 *
 * Times are kept as whole seconds (int64) plus a fraction until the first
 * row's time is subtracted: an epoch date-time with 100 ns digits has 17
 * significant digits, more than a double holds.
 */
#include "fgb_trace.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define FIELDS_MAX 64

struct span {
	const char *p;
	size_t len;
	bool quoted; /* "..." (may hold "" escapes) */
};

/* a time as whole seconds (or ms, us) + a fraction in [0, 1) */
struct tval {
	int64_t whole;
	double frac;
};

static int fail(struct fgb_trace_err *err, unsigned long line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(struct fgb_trace_err *err, unsigned long line, const char *fmt, ...)
{
	va_list ap;

	err->line = line;
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	va_end(ap);
	return -EINVAL;
}

/* @p s as a printable quote for a message: at most 40 bytes, others '?' */
static const char *shown(const struct span *s, char *buf, size_t cap)
{
	size_t n = s->len < 40 ? s->len : 40, k = 0;

	for (size_t i = 0; i < n && k + 1 < cap; i++)
		buf[k++] = s->p[i] >= 0x20 && s->p[i] < 0x7f ? s->p[i] : '?';
	if (s->len > n && k + 4 < cap) {
		memcpy(buf + k, "...", 3);
		k += 3;
	}
	buf[k] = 0;
	return buf;
}

/* Splits @p line into fields (RFC 4180 quoting, spaces around a field
 * ignored).  @return the number of fields, or -1 (why in @p why). */
static int split(const char *line, size_t len, struct span *f, const char **why)
{
	size_t i = 0;
	int n = 0;

	for (;;) {
		if (n == FIELDS_MAX) {
			*why = "more than 64 fields";
			return -1;
		}
		while (i < len && (line[i] == ' ' || line[i] == '\t'))
			i++;
		struct span *s = &f[n++];

		s->quoted = i < len && line[i] == '"';
		if (s->quoted) {
			s->p = line + ++i;
			for (;;) {
				if (i == len) {
					*why = "a quoted field does not end";
					return -1;
				}
				if (line[i] == '"' && i + 1 < len && line[i + 1] == '"')
					i += 2;
				else if (line[i] == '"')
					break;
				else
					i++;
			}
			s->len = (size_t)(line + i - s->p);
			i++;
			while (i < len && (line[i] == ' ' || line[i] == '\t'))
				i++;
			if (i < len && line[i] != ',') {
				*why = "text after a quoted field";
				return -1;
			}
		} else {
			s->p = line + i;
			while (i < len && line[i] != ',') {
				if (line[i] == '"') {
					*why = "a quote inside an unquoted field";
					return -1;
				}
				i++;
			}
			s->len = (size_t)(line + i - s->p);
			while (s->len && (s->p[s->len - 1] == ' ' || s->p[s->len - 1] == '\t'))
				s->len--;
		}
		if (i >= len)
			return n;
		i++; /* the comma */
	}
}

/* @p s unescaped ("" -> ") into @p out; false when it does not fit */
static bool unquote(const struct span *s, char *out, size_t cap)
{
	size_t k = 0;

	for (size_t i = 0; i < s->len; i++) {
		if (k + 1 >= cap)
			return false;
		out[k++] = s->p[i];
		if (s->quoted && s->p[i] == '"')
			i++;
	}
	out[k] = 0;
	return true;
}

/* "#N" -> N-1, else -1 */
static int col_number(const char *name)
{
	if (name[0] != '#' || !name[1])
		return -1;
	long v = 0;

	for (const char *p = name + 1; *p; p++) {
		if (*p < '0' || *p > '9' || v > FIELDS_MAX)
			return -1;
		v = v * 10 + (*p - '0');
	}
	return v >= 1 && v <= FIELDS_MAX ? (int)v - 1 : -1;
}

/* Strict unsigned decimal integer (digits only) <= max. */
static bool parse_uint(const struct span *s, uint64_t max, uint64_t *out)
{
	uint64_t v = 0;

	if (!s->len || s->len > 20)
		return false;
	for (size_t i = 0; i < s->len; i++) {
		if (s->p[i] < '0' || s->p[i] > '9')
			return false;
		v = v * 10 + (uint64_t)(s->p[i] - '0');
		if (v > max)
			return false;
	}
	*out = v;
	return true;
}

/* digits[.digits] (at least one digit), whole part < 1e15 */
static bool parse_number(const struct span *s, struct tval *t)
{
	size_t i = 0;
	int64_t w = 0;
	double f = 0, scale = 0.1;
	bool digit = false;

	for (; i < s->len && s->p[i] >= '0' && s->p[i] <= '9'; i++, digit = true) {
		w = w * 10 + (s->p[i] - '0');
		if (w >= 1000000000000000LL)
			return false;
	}
	if (i < s->len && s->p[i] == '.')
		for (i++; i < s->len && s->p[i] >= '0' && s->p[i] <= '9'; i++, digit = true) {
			f += (s->p[i] - '0') * scale;
			scale /= 10;
		}
	if (i != s->len || !digit)
		return false;
	t->whole = w;
	t->frac = f < 1 ? f : 0.999999999999;
	return true;
}

/* fixed-width decimal field of @p n digits at @p p into @p v */
static bool digits(const char *p, int n, int *v)
{
	*v = 0;
	for (int i = 0; i < n; i++) {
		if (p[i] < '0' || p[i] > '9')
			return false;
		*v = *v * 10 + (p[i] - '0');
	}
	return true;
}

/* days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's
 * days_from_civil) */
static int64_t days_from_civil(int y, int m, int d)
{
	y -= m <= 2;
	int64_t era = (y >= 0 ? y : y - 399) / 400;
	int64_t yoe = y - era * 400;
	int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;

	return era * 146097 + doe - 719468;
}

static bool looks_like_date(const struct span *s)
{
	int v;

	return s->len >= 10 && digits(s->p, 4, &v) && s->p[4] == '-' && digits(s->p + 5, 2, &v) &&
	       s->p[7] == '-' && digits(s->p + 8, 2, &v);
}

/* YYYY-MM-DD[ T]HH:MM:SS[.f{1,9}][Z] */
static bool parse_datetime(const struct span *s, struct tval *t)
{
	static const int mdays[] = { 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
	const char *p = s->p;
	int y, mo, d, h, mi, se;

	if (s->len < 19 || !looks_like_date(s) || (p[10] != ' ' && p[10] != 'T') ||
	    !digits(p + 11, 2, &h) || p[13] != ':' || !digits(p + 14, 2, &mi) || p[16] != ':' ||
	    !digits(p + 17, 2, &se))
		return false;
	digits(p, 4, &y);
	digits(p + 5, 2, &mo);
	digits(p + 8, 2, &d);
	if (y < 1970 || mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1] ||
	    (mo == 2 && d == 29 && (y % 4 || (y % 100 == 0 && y % 400))) || h > 23 || mi > 59 ||
	    se > 59)
		return false;
	size_t i = 19;
	double f = 0, scale = 0.1;

	if (i < s->len && p[i] == '.') {
		size_t start = ++i;

		for (; i < s->len && p[i] >= '0' && p[i] <= '9' && i - start < 9; i++) {
			f += (p[i] - '0') * scale;
			scale /= 10;
		}
		if (i == start)
			return false;
	}
	if (i < s->len && p[i] == 'Z')
		i++;
	if (i != s->len)
		return false;
	t->whole = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + se;
	t->frac = f < 1 ? f : 0.999999999;
	return true;
}

int fgb_trace_cols_parse(const char *spec, struct fgb_trace_cols *cols,
			 struct fgb_trace_err *err)
{
	static const char *const units[] = { "", "datetime", "s", "ms", "us" };
	char buf[256];
	char *part[5], *save = NULL;
	int n = 0;

	memset(cols, 0, sizeof(*cols));
	err->line = 0;
	err->msg[0] = 0;
	if (!spec || !*spec)
		spec = FGB_TRACE_AZURE_COLS;
	if (strlen(spec) >= sizeof(buf))
		return fail(err, 0, "column mapping longer than %zu bytes", sizeof(buf) - 1);
	snprintf(buf, sizeof(buf), "%s", spec);
	for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (n == 4)
			return fail(err, 0, "column mapping '%s': TIME,PROMPT,OUTPUT[,UNIT]", spec);
		part[n++] = tok;
	}
	if (n < 3)
		return fail(err, 0, "column mapping '%s': TIME,PROMPT,OUTPUT[,UNIT]", spec);
	char *dst[3] = { cols->time, cols->prompt, cols->output };

	for (int i = 0; i < 3; i++) {
		if (!*part[i] || strlen(part[i]) >= sizeof(cols->time))
			return fail(err, 0, "column mapping '%s': empty or overlong column", spec);
		if (part[i][0] == '#' && col_number(part[i]) < 0)
			return fail(err, 0, "column '%s': #N wants N in 1..%d", part[i], FIELDS_MAX);
		snprintf(dst[i], sizeof(cols->time), "%s", part[i]);
	}
	if (n == 4) {
		int u = -1;

		for (int k = 1; k < 5; k++)
			if (!strcmp(part[3], units[k]))
				u = k;
		if (u < 0)
			return fail(err, 0, "time unit '%s': datetime, s, ms or us", part[3]);
		cols->unit = (enum fgb_time_unit)u;
	}
	return 0;
}

struct reader {
	const struct fgb_trace_cols *cols;
	int nf;      /* fields of the header */
	int ci[3];   /* time, prompt, output columns */
	enum fgb_time_unit unit;
	struct tval t0, prev;
	unsigned long prev_line;
	double prev_s;
	struct fgb_trace_req *req;
	size_t n, cap;
};

static int header(struct reader *r, const struct span *f, int nf, unsigned long line,
		  struct fgb_trace_err *err)
{
	const char *want[3] = { r->cols->time, r->cols->prompt, r->cols->output };
	char name[64];

	r->nf = nf;
	for (int k = 0; k < 3; k++) {
		int c = col_number(want[k]);

		if (want[k][0] == '#') {
			if (c < 0 || c >= nf)
				return fail(err, line, "column %s: the header has %d fields", want[k],
					    nf);
			r->ci[k] = c;
			continue;
		}
		r->ci[k] = -1;
		for (int i = 0; i < nf && r->ci[k] < 0; i++)
			if (unquote(&f[i], name, sizeof(name)) && !strcmp(name, want[k]))
				r->ci[k] = i;
		if (r->ci[k] < 0)
			return fail(err, line, "no column '%s' in the header (see --columns)",
				    want[k]);
	}
	return 0;
}

static int row_time(struct reader *r, const struct span *s, unsigned long line, double *t_s,
		    struct fgb_trace_err *err)
{
	static const double div[] = { 1, 1, 1, 1e3, 1e6 };
	struct tval t;
	char b[48];

	if (r->unit == FGB_TIME_AUTO)
		r->unit = looks_like_date(s) ? FGB_TIME_DATETIME : FGB_TIME_S;
	if (r->unit == FGB_TIME_DATETIME ? !parse_datetime(s, &t) : !parse_number(s, &t))
		return fail(err, line, "%s '%s': not %s", r->cols->time, shown(s, b, sizeof(b)),
			    r->unit == FGB_TIME_DATETIME ?
			    "a date-time YYYY-MM-DD HH:MM:SS[.frac]" : "a number >= 0");
	if (!r->n)
		r->t0 = r->prev = t;
	if (t.whole < r->prev.whole || (t.whole == r->prev.whole && t.frac < r->prev.frac))
		return fail(err, line, "%s '%s' is earlier than line %lu's: rows must be in "
			    "arrival order", r->cols->time, shown(s, b, sizeof(b)), r->prev_line);
	r->prev = t;
	r->prev_line = line;
	*t_s = ((double)(t.whole - r->t0.whole) + (t.frac - r->t0.frac)) / div[r->unit];
	if (*t_s < r->prev_s) /* rounding of near-equal times: keep the order */
		*t_s = r->prev_s;
	r->prev_s = *t_s;
	return 0;
}

static int row(struct reader *r, const struct span *f, int nf, unsigned long line,
	       struct fgb_trace_err *err)
{
	struct fgb_trace_req q;
	uint64_t tok[2];
	char b[48];

	if (nf != r->nf)
		return fail(err, line, "%d fields, the header has %d", nf, r->nf);
	for (int k = 0; k < 2; k++) {
		const struct span *s = &f[r->ci[k + 1]];

		if (!parse_uint(s, FGB_TRACE_TOKENS_MAX, &tok[k]))
			return fail(err, line, "%s '%s': not an integer in 0..%u",
				    k ? r->cols->output : r->cols->prompt, shown(s, b, sizeof(b)),
				    FGB_TRACE_TOKENS_MAX);
	}
	int rc = row_time(r, &f[r->ci[0]], line, &q.t_s, err);

	if (rc)
		return rc;
	if (r->n == r->cap) {
		if (r->n >= FGB_TRACE_ROWS_MAX) {
			fail(err, line, "more than %u requests", FGB_TRACE_ROWS_MAX);
			return -E2BIG;
		}
		size_t cap = r->cap ? r->cap * 2 : 1024;
		struct fgb_trace_req *v = realloc(r->req, cap * sizeof(*v));

		if (!v) {
			fail(err, line, "out of memory");
			return -ENOMEM;
		}
		r->req = v;
		r->cap = cap;
	}
	q.prompt = (uint32_t)tok[0];
	q.output = (uint32_t)tok[1];
	r->req[r->n++] = q;
	return 0;
}

int fgb_trace_parse(const char *buf, size_t len, const struct fgb_trace_cols *cols,
		    struct fgb_trace *t, struct fgb_trace_err *err)
{
	struct reader r = { .cols = cols, .nf = -1, .unit = cols->unit };
	struct span f[FIELDS_MAX];
	unsigned long line = 0;
	size_t off = 0;
	int rc = 0;

	err->line = 0;
	err->msg[0] = 0;
	if (len >= 3 && !memcmp(buf, "\xef\xbb\xbf", 3))
		off = 3; /* UTF-8 byte order mark */
	while (off < len && !rc) {
		const char *p = buf + off, *nl = memchr(p, '\n', len - off);
		size_t l = nl ? (size_t)(nl - p) : len - off;
		const char *why = NULL;

		off += l + (nl != NULL);
		line++;
		if (l && p[l - 1] == '\r')
			l--;
		if (l > FGB_TRACE_LINE_MAX)
			rc = fail(err, line, "line longer than %u bytes", FGB_TRACE_LINE_MAX);
		else if (memchr(p, 0, l))
			rc = fail(err, line, "a NUL byte");
		else if (memchr(p, '\r', l))
			rc = fail(err, line, "a carriage return inside the line");
		if (rc || !l)
			continue;
		int nf = split(p, l, f, &why);

		if (nf < 0)
			rc = fail(err, line, "%s", why);
		else if (r.nf < 0)
			rc = header(&r, f, nf, line, err);
		else
			rc = row(&r, f, nf, line, err);
	}
	if (!rc && r.nf < 0)
		rc = fail(err, line ? line : 1, "no header line");
	else if (!rc && !r.n)
		rc = fail(err, line, "no requests after the header");
	if (rc) {
		free(r.req);
		return rc;
	}
	t->req = r.req;
	t->n = r.n;
	t->unit = r.unit;
	return 0;
}

int fgb_trace_load(const char *path, const struct fgb_trace_cols *cols, struct fgb_trace *t,
		   struct fgb_trace_err *err)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC), rc;

	err->line = 0;
	if (fd < 0 || fstat(fd, &st)) {
		rc = -errno;
		snprintf(err->msg, sizeof(err->msg), "%s: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return rc;
	}
	if (!S_ISREG(st.st_mode) || (unsigned long long)st.st_size > FGB_TRACE_FILE_MAX) {
		snprintf(err->msg, sizeof(err->msg), "%s: not a regular file of at most %llu MiB",
			 path, FGB_TRACE_FILE_MAX >> 20);
		close(fd);
		return -EINVAL;
	}
	size_t len = (size_t)st.st_size, got = 0;
	char *buf = malloc(len ? len : 1);

	if (!buf) {
		close(fd);
		snprintf(err->msg, sizeof(err->msg), "%s: out of memory", path);
		return -ENOMEM;
	}
	while (got < len) {
		ssize_t k = read(fd, buf + got, len - got);

		if (k <= 0) {
			rc = k ? -errno : -EIO;
			snprintf(err->msg, sizeof(err->msg), "%s: read: %s", path,
				 k ? strerror(errno) : "file shrank");
			free(buf);
			close(fd);
			return rc;
		}
		got += (size_t)k;
	}
	close(fd);
	rc = fgb_trace_parse(buf, len, cols, t, err);
	free(buf);
	return rc;
}

void fgb_trace_free(struct fgb_trace *t)
{
	free(t->req);
	t->req = NULL;
	t->n = 0;
}
