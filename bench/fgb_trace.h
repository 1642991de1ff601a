/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * LLM request traces for `flowgate-bench inference --trace FILE`.
 *
 * Format: CSV with a header line.  By default the columns of the Azure LLM
 * inference trace 2023 (Azure/AzurePublicDataset,
 * data/AzureLLMInferenceTrace_{conv,code}.csv):
 *
 *     TIMESTAMP,ContextTokens,GeneratedTokens
 *     2023-11-16 18:15:46.6805900,374,44
 *
 * Other traces through a column mapping (FGB_TRACE_COLS_HELP): which
 * header column holds the arrival time, the prompt tokens and the output
 * tokens (a header name or a 1-based number), and the time's unit
 * (`datetime` = `YYYY-MM-DD HH:MM:SS[.frac]`, `s`, `ms`, `us`; by default
 * datetime when the first time field looks like a date, else seconds).
 * BurstGPT: `--columns 'Timestamp,Request tokens,Response tokens,s'`.
 *
 * The reader is strict: every line of the file must be a well-formed row
 * (same number of fields as the header; fields may be double-quoted with
 * "" for a quote), times must not go back, token counts are integers in
 * 0..FGB_TRACE_TOKENS_MAX; blank lines are skipped.  Anything else is
 * refused with the 1-based line number and the reason.  Linear time, no
 * allocation except the request array.
 *
 * Thread safety: every function is reentrant (no global state).
 */
#ifndef FLOWGATE_FGB_TRACE_H
#define FLOWGATE_FGB_TRACE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** The Azure LLM inference trace's columns (the default mapping). */
#define FGB_TRACE_AZURE_COLS "TIMESTAMP,ContextTokens,GeneratedTokens"
/** What --columns accepts, for help texts (continuation lines indented
 *  by 20 columns, flowgate-bench's help layout). */
#define FGB_TRACE_COLS_HELP \
	"TIME,PROMPT,OUTPUT[,UNIT]: header names or\n" \
	"                    1-based numbers of the arrival-time, prompt-token and\n" \
	"                    output-token columns; UNIT datetime|s|ms|us (default:\n" \
	"                    datetime when the first time looks like YYYY-MM-DD, else s)"
/** Largest token count of one request accepted. */
#define FGB_TRACE_TOKENS_MAX 10000000u
/** Longest line accepted (bytes, without the line end). */
#define FGB_TRACE_LINE_MAX 4096u
/** Most requests in one trace. */
#define FGB_TRACE_ROWS_MAX 50000000u
/** Largest file fgb_trace_load() reads. */
#define FGB_TRACE_FILE_MAX (2048ull << 20)

enum fgb_time_unit {
	FGB_TIME_AUTO = 0,
	FGB_TIME_DATETIME,
	FGB_TIME_S,
	FGB_TIME_MS,
	FGB_TIME_US,
};

/** Which columns hold what.  A name of the form "#N" is column N (1-based). */
struct fgb_trace_cols {
	char time[64], prompt[64], output[64];
	enum fgb_time_unit unit;
};

/** One request: arrival (seconds after the trace's first), token counts. */
struct fgb_trace_req {
	double t_s;
	uint32_t prompt, output;
};

struct fgb_trace {
	struct fgb_trace_req *req; /**< in file order (arrival order) */
	size_t n;
	enum fgb_time_unit unit;   /**< the unit used (AUTO resolved) */
};

/** Why a trace or a mapping was refused. */
struct fgb_trace_err {
	unsigned long line; /**< 1-based line of the file; 0: not about a line */
	char msg[160];
};

/**
 * Parses a column mapping "TIME,PROMPT,OUTPUT[,UNIT]" (FGB_TRACE_COLS_HELP);
 * NULL or "" gives the Azure columns.
 * @return 0, or -EINVAL (err says why).
 */
int fgb_trace_cols_parse(const char *spec, struct fgb_trace_cols *cols,
			 struct fgb_trace_err *err);

/**
 * Parses a trace held in memory.
 * @param buf   the file's bytes (need not be NUL-terminated)
 * @param cols  the mapping (fgb_trace_cols_parse)
 * @param t     out: the requests (free with fgb_trace_free); untouched on error
 * @return 0; -EINVAL a malformed file (err->line, err->msg); -ENOMEM;
 *         -E2BIG more than FGB_TRACE_ROWS_MAX rows.
 */
int fgb_trace_parse(const char *buf, size_t len, const struct fgb_trace_cols *cols,
		    struct fgb_trace *t, struct fgb_trace_err *err);

/**
 * Reads and parses the file @p path (at most FGB_TRACE_FILE_MAX bytes).
 * @return as fgb_trace_parse, or -errno of open/read (err->msg says which).
 */
int fgb_trace_load(const char *path, const struct fgb_trace_cols *cols, struct fgb_trace *t,
		   struct fgb_trace_err *err);

/** Frees @p t's requests (t may be zeroed or already freed). */
void fgb_trace_free(struct fgb_trace *t);

#ifdef __cplusplus
}
#endif
#endif /* FLOWGATE_FGB_TRACE_H */
