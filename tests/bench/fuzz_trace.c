/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fuzz target for the LLM trace reader (bench/fgb_trace.c), the file
 * `flowgate-bench inference --trace` reads.  An input whose first line is
 * "#cols:MAP" is read with that column mapping, any other with the Azure
 * columns.  Invariants (a violation traps):
 * - accepted: at least one request, the first at 0 s, times finite and
 *   non-decreasing, tokens <= FGB_TRACE_TOKENS_MAX; written back as
 *   "t,p,o" rows in seconds, it is accepted again with the same requests;
 * - refused: -EINVAL with a line number within the input's lines and a
 *   reason (or -E2BIG / -ENOMEM with a reason).
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

#include "fgb_trace.h"

static void check_roundtrip(const struct fgb_trace *t)
{
	size_t cap = 16 + t->n * 64, len = 0;
	char *buf = malloc(cap);
	struct fgb_trace_cols cols;
	struct fgb_trace_err err;
	struct fgb_trace u = { 0 };

	if (!buf)
		__builtin_trap();
	len += (size_t)snprintf(buf, cap, "t,p,o\n");
	for (size_t i = 0; i < t->n; i++)
		len += (size_t)snprintf(buf + len, cap - len, "%.6f,%u,%u\n", t->req[i].t_s,
					t->req[i].prompt, t->req[i].output);
	if (fgb_trace_cols_parse("t,p,o,s", &cols, &err) ||
	    fgb_trace_parse(buf, len, &cols, &u, &err) || u.n != t->n)
		__builtin_trap();
	for (size_t i = 0; i < t->n; i++) {
		double d = fabs(u.req[i].t_s - t->req[i].t_s);

		if (d > 1e-5 + 1e-9 * t->req[i].t_s || u.req[i].prompt != t->req[i].prompt ||
		    u.req[i].output != t->req[i].output)
			__builtin_trap();
	}
	fgb_trace_free(&u);
	free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data;
	char spec[128] = "";
	struct fgb_trace_cols cols;
	struct fgb_trace_err err;
	struct fgb_trace t = { 0 };

	if (size > 6 && !memcmp(text, "#cols:", 6)) {
		const char *nl = memchr(text, '\n', size);
		size_t l = (nl ? (size_t)(nl - text) : size) - 6;

		if (l < sizeof(spec) && !memchr(text + 6, 0, l)) {
			memcpy(spec, text + 6, l);
			spec[l] = 0;
		}
		if (nl) { /* the mapping line is not part of the file */
			size -= (size_t)(nl + 1 - text);
			text = nl + 1;
		} else {
			size = 0;
		}
	}
	if (fgb_trace_cols_parse(spec, &cols, &err)) {
		if (err.msg[0] == 0)
			__builtin_trap();
		return 0;
	}
	unsigned long lines = 1;

	for (size_t i = 0; i < size; i++)
		lines += text[i] == '\n';
	int rc = fgb_trace_parse(text, size, &cols, &t, &err);

	if (rc == 0) {
		if (!t.n || t.req[0].t_s != 0)
			__builtin_trap();
		for (size_t i = 0; i < t.n; i++)
			if (!isfinite(t.req[i].t_s) || (i && t.req[i].t_s < t.req[i - 1].t_s) ||
			    t.req[i].prompt > FGB_TRACE_TOKENS_MAX ||
			    t.req[i].output > FGB_TRACE_TOKENS_MAX)
				__builtin_trap();
		check_roundtrip(&t);
		fgb_trace_free(&t);
	} else if (rc == -EINVAL) {
		if (err.line == 0 || err.line > lines || err.msg[0] == 0)
			__builtin_trap();
	} else if ((rc != -E2BIG && rc != -ENOMEM) || err.msg[0] == 0) {
		__builtin_trap();
	}
	return 0;
}
