/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fuzz target for the Prometheus text parser (control/fg_promtext.c), the
 * page the `metrics` health check reads from every GPU worker.  Invariant
 * (a violation traps): a page the parser accepts re-serializes, sample by
 * sample, to a page it accepts again with the very same samples (names,
 * labels, values bit for bit or both NaN, timestamps).  The first line of
 * the input is also tried as a label selector and a query runs with it.
 * libFuzzer target with -Dfuzz=true (clang); with tests/fuzz/fuzz_replay_main.c a plain
 * program that replays the seed files and all their prefixes.
 */
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fg_promtext.h"

struct out {
	char *buf;
	size_t len, cap;
	unsigned int n;
};

static void put(struct out *o, const char *s, size_t n)
{
	if (o->len + n + 1 > o->cap) {
		size_t cap = (o->len + n + 1) * 2;
		char *b = realloc(o->buf, cap);

		if (!b)
			__builtin_trap();
		o->buf = b;
		o->cap = cap;
	}
	memcpy(o->buf + o->len, s, n);
	o->len += n;
}

static void puts_(struct out *o, const char *s) { put(o, s, strlen(s)); }

static void put_value(struct out *o, double v)
{
	char b[64];

	if (isnan(v))
		snprintf(b, sizeof(b), "NaN");
	else if (isinf(v))
		snprintf(b, sizeof(b), "%cInf", v > 0 ? '+' : '-');
	else
		snprintf(b, sizeof(b), "%.17g", v);
	puts_(o, b);
}

static int write_cb(const struct fg_prom_sample *s, void *arg)
{
	struct out *o = arg;
	char b[32];

	puts_(o, s->name);
	puts_(o, "{");
	for (unsigned int k = 0; k < s->n_labels; k++) {
		puts_(o, k ? "," : "");
		puts_(o, s->labels[k].name);
		puts_(o, "=\"");
		for (const char *q = s->labels[k].value; *q; q++)
			if (*q == '"' || *q == '\\')
				put(o, "\\", 1), put(o, q, 1);
			else if (*q == '\n')
				puts_(o, "\\n");
			else
				put(o, q, 1);
		puts_(o, "\"");
	}
	puts_(o, "} ");
	put_value(o, s->value);
	if (s->has_ts) {
		snprintf(b, sizeof(b), " %lld", (long long)s->ts_ms);
		puts_(o, b);
	}
	puts_(o, "\n");
	o->n++;
	return 0;
}

static int samples_equal(const char *a, size_t la, const char *b, size_t lb)
{
	/* re-serialize both: equal text means equal samples (the writer is
	 * canonical: one spelling per value, label order kept) */
	struct out x = { 0 }, y = { 0 };
	int ra = fg_prom_parse(a, la, write_cb, &x, NULL);
	int rb = fg_prom_parse(b, lb, write_cb, &y, NULL);
	int eq = ra == rb && x.len == y.len && (!x.len || !memcmp(x.buf, y.buf, x.len));

	free(x.buf);
	free(y.buf);
	return eq;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data;
	struct fg_prom_err err;
	struct out o = { 0 };
	int rc = fg_prom_parse(text, size, write_cb, &o, &err);

	if (rc >= 0) {
		if ((unsigned int)rc != o.n)
			__builtin_trap();
		if (fg_prom_parse(o.buf, o.len, NULL, NULL, NULL) != rc)
			__builtin_trap();
		if (!samples_equal(text, size, o.buf, o.len))
			__builtin_trap();
	} else if (rc == -EINVAL) {
		if (err.line == 0 || err.msg[0] == 0)
			__builtin_trap();
	} else if (rc != -E2BIG) {
		__builtin_trap();
	}
	free(o.buf);

	/* first line as a selector, then a query with it */
	char sel_text[256];
	const char *nl = memchr(text, '\n', size);
	size_t sl = nl ? (size_t)(nl - text) : size;

	if (sl < sizeof(sel_text) && !memchr(text, 0, sl)) {
		struct fg_prom_selector sel;

		memcpy(sel_text, text, sl);
		sel_text[sl] = 0;
		if (fg_prom_selector_parse(sel_text, &sel, &err) == 0) {
			struct fg_prom_query q[3] = {
				{ .name = "vllm:num_requests_waiting" },
				{ .name = "a", .alt = "b" },
				{ .name = "nv_inference_pending_request_count" },
			};
			int qr = fg_prom_query(text, size, &sel, q, 3, &err);

			if ((qr == 0) != (rc >= 0))
				__builtin_trap();
		}
	}
	return 0;
}
