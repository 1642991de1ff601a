/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Table-driven command lines (fg_opt.h): getopt's tables, the usage text
 * and the refusals of both daemons come from their option tables here.
 */
#include "fg_opt.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

void fg_opt_verr(const struct fg_opt_table *t, FILE *err, unsigned int id,
		 const char *arg, const char *fmt, va_list ap)
{
	fprintf(err, "%s: --%s%s%s: ", t->prog, t->defs[id].name, arg ? " " : "",
		arg ? arg : "");
	vfprintf(err, fmt, ap);
	fputc('\n', err);
}

void fg_opt_err(const struct fg_opt_table *t, FILE *err, unsigned int id,
		const char *arg, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fg_opt_verr(t, err, id, arg, fmt, ap);
	va_end(ap);
}

bool fg_opt_u64(const char *s, uint64_t *out)
{
	char *end;

	if (s == NULL || *s < '0' || *s > '9')
		return false;
	errno = 0;
	*out = strtoull(s, &end, 10);
	return errno == 0 && *end == '\0';
}

bool fg_opt_uint(const struct fg_opt_table *t, FILE *err, unsigned int id,
		 const char *arg, uint64_t *out)
{
	const struct fg_opt_def *d = &t->defs[id];

	if (fg_opt_u64(arg, out) && *out >= d->min && *out <= d->max)
		return true;
	fg_opt_err(t, err, id, arg, "expected an integer in %" PRIu64 "..%" PRIu64,
		   d->min, d->max);
	return false;
}

int fg_opt_enum(const struct fg_opt_table *t, FILE *err, unsigned int id,
		const char *arg)
{
	const char *m = t->defs[id].meta, *w;
	char list[256];
	size_t n = 0;
	int i = 0, nw = 0;

	m += strspn(m, "[=");
	for (w = m; *w && *w != ']'; i++) {
		size_t len = strcspn(w, "|]");

		if (arg && strlen(arg) == len && !strncmp(w, arg, len))
			return i;
		w += len + (w[len] == '|');
	}
	/* "expected a, b or c" */
	for (w = m; *w && *w != ']' && n < sizeof(list); nw++) {
		size_t len = strcspn(w, "|]");

		n += (size_t)snprintf(list + n, sizeof(list) - n, "%s%.*s",
				      nw == 0 ? "" : nw == i - 1 ? " or " : ", ", (int)len, w);
		w += len + (w[len] == '|');
	}
	fg_opt_err(t, err, id, arg, "expected %s", list);
	return -1;
}

int fg_opt_getopt(const struct fg_opt_table *t, int argc, char **argv, FILE *err,
		  fg_opt_apply_fn apply, void *ctx)
{
	struct option *lo = calloc(t->n + 1, sizeof(*lo));
	char shorts[3 * 26 * 2 + 2] = ":";
	size_t ns = 1;
	int c, rc = 0, bad = 0;

	if (lo == NULL)
		return -ENOMEM;
	for (unsigned int i = 0; i < t->n; i++) {
		const struct fg_opt_def *d = &t->defs[i];

		lo[i] = (struct option){ d->name, d->has_arg, NULL, 256 + (int)i };
		if (d->short_name && ns + 4 < sizeof(shorts)) {
			shorts[ns++] = (char)d->short_name;
			if (d->has_arg != no_argument)
				shorts[ns++] = ':';
			if (d->has_arg == optional_argument)
				shorts[ns++] = ':';
		}
	}
	shorts[ns] = '\0';
	optind = 1;
	opterr = 0;
	while (rc == 0 && (c = getopt_long(argc, argv, shorts, lo, NULL)) != -1) {
		unsigned int id = c >= 256 ? (unsigned int)(c - 256) : t->n;

		for (unsigned int i = 0; c < 256 && i < t->n; i++)
			if (t->defs[i].short_name == c)
				id = i;
		if (c == '?') {
			fprintf(err, "%s: unknown option '%s' (%s --help lists them%s)\n",
				t->prog, argv[optind - 1], t->prog, t->unknown_hint);
			bad++;
		} else if (c == ':') {
			fprintf(err, "%s: option '%s' needs a value\n", t->prog, argv[optind - 1]);
			bad++;
		} else if (id < t->n) {
			rc = apply(ctx, id, optarg);
		}
	}
	if (rc == 0 && optind < argc) {
		fprintf(err, "%s: unexpected argument '%s'\n", t->prog, argv[optind]);
		bad++;
	}
	free(lo);
	return rc < 0 ? rc : bad;
}

void fg_opt_usage(FILE *f, const struct fg_opt_table *t, fg_opt_note_fn note)
{
	for (unsigned int i = 0; i < t->n; i++) {
		const struct fg_opt_def *d = &t->defs[i];
		char head[160], extra[256] = "";
		int n;

		if (d->short_name)
			n = snprintf(head, sizeof(head), "  -%c, --%s", d->short_name, d->name);
		else
			n = snprintf(head, sizeof(head), "      --%s", d->name);
		if (d->meta[0])
			snprintf(head + n, sizeof(head) - (size_t)n, "%s%s",
				 d->has_arg == optional_argument ? "" : " ", d->meta);
		if (note)
			note(i, extra, sizeof(extra));
		fprintf(f, "%s\n          %s%s", head, d->help, extra);
		if (d->kind == FG_OPT_UINT)
			fprintf(f, " (%" PRIu64 "..%" PRIu64 ")", d->min, d->max);
		if (d->dflt[0])
			fprintf(f, " [default: %s]", d->dflt);
		fputc('\n', f);
	}
}
