/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * A bounded parser of the Prometheus text exposition format (version
 * 0.0.4), for the `metrics` health check that reads GPU workers' load
 * (vLLM, SGLang, Triton /metrics pages).
 *
 * What is accepted, line by line ('\n', an optional '\r' before it):
 * - empty lines and lines of blanks;
 * - `# HELP name text` and `# TYPE name counter|gauge|histogram|summary|
 *   untyped` (the name must be valid; TYPE's type must be one of those);
 *   any other `#` line is a comment;
 * - samples: `name[{label="value",...[,]}] value [timestamp]` with
 *   name `[a-zA-Z_:][a-zA-Z0-9_:]*`, label names `[a-zA-Z_][a-zA-Z0-9_]*`,
 *   label values in double quotes with the escapes `\\`, `\"`, `\n` only;
 *   value a decimal float, `+Inf`, `-Inf`, `Inf` or `NaN` (any case);
 *   timestamp an integer (milliseconds, may be negative).  Blanks are
 *   spaces and tabs.  A name may have several series (label sets).
 *
 * Anything else is an error for the whole page (-EINVAL with the line and a
 * reason): a scrape that is half wrong is not trusted.
 *
 * Bounds: input at most FG_PROM_MAX_INPUT bytes (-E2BIG), at most
 * FG_PROM_MAX_LABELS labels per sample, names and unescaped label values at
 * most FG_PROM_MAX_NAME bytes.  One pass, no allocation, no recursion: time
 * is linear in the input.
 *
 * Thread safety: every function is pure (state only in its arguments).
 */
#ifndef FLOWGATE_FG_PROMTEXT_H
#define FLOWGATE_FG_PROMTEXT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Largest page accepted (bytes). */
#define FG_PROM_MAX_INPUT (1u << 20)
/** Labels per sample. */
#define FG_PROM_MAX_LABELS 32
/** Metric names, label names and (unescaped) label values, bytes + NUL. */
#define FG_PROM_MAX_NAME 128
/** Label matchers in one selector. */
#define FG_PROM_SEL_MAX 4

/** One label of a sample (views into the parser's scratch, valid only
 *  during the callback). */
struct fg_prom_label {
	const char *name;
	const char *value;
};

/** One sample, passed to the callback. */
struct fg_prom_sample {
	const char *name;
	const struct fg_prom_label *labels;
	unsigned int n_labels;
	double value;
	int has_ts;       /**< 1 when a timestamp followed the value */
	int64_t ts_ms;
	unsigned int line;
};

/** Where and why a page was refused. */
struct fg_prom_err {
	unsigned int line;   /**< 1-based; 0 = not about a line */
	char msg[96];
};

/**
 * Called for every sample.  Return 0 to go on, anything else stops the
 * parse, which returns that value.
 */
typedef int (*fg_prom_sample_cb)(const struct fg_prom_sample *s, void *ctx);

/**
 * Parses a page.
 * @param text  the page (need not be NUL-terminated; a NUL byte is an error)
 * @param len   its length
 * @param cb    called per sample (may be NULL: validation only)
 * @param err   reason on failure (may be NULL)
 * @return the number of samples (>= 0), -E2BIG (len > FG_PROM_MAX_INPUT),
 *   -EINVAL (malformed: @p err says where), or what @p cb returned.
 */
int fg_prom_parse(const char *text, size_t len, fg_prom_sample_cb cb, void *ctx,
		  struct fg_prom_err *err);

/** A label selector: every matcher must equal (name = value). */
struct fg_prom_selector {
	unsigned int n;
	char name[FG_PROM_SEL_MAX][FG_PROM_MAX_NAME];
	char value[FG_PROM_SEL_MAX][FG_PROM_MAX_NAME];
};

/**
 * Parses a selector written as in the exposition format without braces:
 * `model_name="llama-3-8b"` or `a="x",b="y"`.  The empty string (or NULL)
 * selects everything.
 * @return 0, or -EINVAL (syntax, > FG_PROM_SEL_MAX matchers; @p err says why).
 */
int fg_prom_selector_parse(const char *s, struct fg_prom_selector *out,
			   struct fg_prom_err *err);

/** True when @p smp carries every label of @p sel with the same value. */
int fg_prom_selector_match(const struct fg_prom_selector *sel,
			   const struct fg_prom_sample *smp);

/** One series to read from a page: @c name, else @c alt (may be "" or
 *  NULL) when no sample of @c name matched. */
struct fg_prom_query {
	const char *name;
	const char *alt;
	/* results */
	double value;         /**< sum of the matching samples (NaN stays NaN) */
	unsigned int matches; /**< samples summed (0: absent) */
	int used_alt;         /**< 1 when the value came from @c alt */
	int has_ts;           /**< some summed sample had a timestamp */
	int64_t ts_ms;        /**< the oldest such timestamp */
};

/**
 * Parses a page and, for each query, sums the samples of its series that
 * @p sel selects (several series per name: e.g. one per model).
 * @return 0 (queries filled; a series may still be absent: matches 0),
 *   -E2BIG, -EINVAL as fg_prom_parse().
 */
int fg_prom_query(const char *text, size_t len, const struct fg_prom_selector *sel,
		  struct fg_prom_query *q, unsigned int nq, struct fg_prom_err *err);

#ifdef __cplusplus
}
#endif
#endif /* FLOWGATE_FG_PROMTEXT_H */
