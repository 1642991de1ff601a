/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * Table-driven command lines, the one machinery of both daemons
 * (flowgate: dataplane/fg_opts.c, FG_OPT_LIST; flowgate-xdp:
 * xdp/fgx_main.c, FGX_OPT_LIST).  A daemon writes its options once, as an
 * X-macro of rows
 *
 *   X(id, long name, short letter, has_arg, kind, min, max, metavar/range,
 *     default, help, a value it refuses)
 *
 * and gets from here getopt's long options and short-option string, the
 * usage text ("  -c, --config FILE\n          help (min..max) [default: d]"),
 * integer and word checks, and every refusal in one form:
 * "PROG: --OPTION VALUE: reason (allowed range)".
 *
 * The rows both daemons have are written once below (FG_OPT_COMMON_HEAD,
 * FG_OPT_COMMON_METRICS, FG_OPT_COMMON_TAIL); each daemon passes the help
 * words that are its own.
 *
 * Plain C, no DPDK.  Threads: not reentrant (getopt); main thread.
 */
#ifndef FLOWGATE_FG_OPT_H
#define FLOWGATE_FG_OPT_H

#include <getopt.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Kinds of argument checks. */
enum fg_opt_kind {
	FG_OPT_FLAG,   /**< no argument */
	FG_OPT_UINT,   /**< unsigned integer in min..max (usage prints the range) */
	FG_OPT_ENUM,   /**< one of the words of the metavar ("a|b|c", "[=a|b]") */
	FG_OPT_STR,    /**< free text, checked by the daemon's handler */
	FG_OPT_CFG,    /**< a config statement: the config file parser checks it */
};

/** One row of a table. */
struct fg_opt_def {
	const char *name;
	int short_name;            /**< 0: none */
	int has_arg;               /**< no_argument, required_argument, optional_argument */
	enum fg_opt_kind kind;
	uint64_t min, max;
	const char *meta, *dflt, *help;
	const char *bad;           /**< a value it refuses (tests); '=' leads: --name=VALUE */
};

/** X-macro helpers: `enum { LIST(FG_OPT_ID) N }` and
 *  `struct fg_opt_def defs[] = { LIST(FG_OPT_ROW) }` (ids prefixed OPT_). */
#define FG_OPT_ID(id, ...) OPT_##id,
#define FG_OPT_ROW(id, n, s, a, k, mn, mx, meta, d, h, bad) \
	[OPT_##id] = { n, s, a, k, mn, mx, meta, d, h, bad },

/** The rows both daemons open with: -c FILE, -s PATH. */
#define FG_OPT_COMMON_HEAD(X, config_help, socket_default, socket_help) \
	X(CONFIG, "config", 'c', required_argument, FG_OPT_STR, 0, 0, "FILE", "", \
	  config_help, "/nonexistent/flowgate.conf") \
	X(SOCKET, "socket", 's', required_argument, FG_OPT_STR, 0, 0, "PATH", \
	  socket_default, socket_help, "")
/** --metrics ADDR:PORT (Prometheus). */
#define FG_OPT_COMMON_METRICS(X, metrics_help) \
	X(METRICS, "metrics", 0, required_argument, FG_OPT_STR, 0, 0, "ADDR:PORT", "off", \
	  metrics_help, "nowhere:1")
/** The rows both daemons close their own options with. */
#define FG_OPT_COMMON_TAIL(X) \
	X(LOG_SYSLOG, "log-syslog", 0, no_argument, FG_OPT_FLAG, 0, 0, "", "off", \
	  "log to syslog (facility daemon) instead of stderr", "") \
	X(VERSION, "version", 'V', no_argument, FG_OPT_FLAG, 0, 0, "", "", \
	  "print the version and build options, exit", "") \
	X(HELP, "help", 'h', no_argument, FG_OPT_FLAG, 0, 0, "", "", \
	  "print this help, exit", "")

/** A daemon's table. */
struct fg_opt_table {
	const char *prog;            /**< "flowgate": the messages' first word */
	const struct fg_opt_def *defs;
	unsigned int n;
	const char *unknown_hint;    /**< after "(PROG --help lists them", or "" */
};

/** What fg_opt_getopt calls for each option given: 0 or -errno (stops). */
typedef int (*fg_opt_apply_fn)(void *ctx, unsigned int id, const char *arg);

/**
 * Runs getopt_long over @p argv (argv[0] skipped) with the table's long and
 * short options, calling @p apply for each.  An unknown option, a missing
 * value and an argument that is no option are reported on @p err.
 * @return the number of those problems (0: all went to @p apply), or
 *   @p apply's negative return.
 */
int fg_opt_getopt(const struct fg_opt_table *t, int argc, char **argv, FILE *err,
		  fg_opt_apply_fn apply, void *ctx);

/** Writes "PROG: --NAME ARG: " + the reason + "\n" to @p err (ARG left out
 *  when NULL). */
void fg_opt_err(const struct fg_opt_table *t, FILE *err, unsigned int id,
		const char *arg, const char *fmt, ...) __attribute__((format(printf, 5, 6)));
void fg_opt_verr(const struct fg_opt_table *t, FILE *err, unsigned int id,
		 const char *arg, const char *fmt, va_list ap)
	__attribute__((format(printf, 5, 0)));

/** A decimal unsigned integer, the whole of @p s (no sign, no blank). */
bool fg_opt_u64(const char *s, uint64_t *out);

/** Checks a FG_OPT_UINT option's @p arg against its range; refuses it on
 *  @p err ("expected an integer in MIN..MAX").  @return true: *out set. */
bool fg_opt_uint(const struct fg_opt_table *t, FILE *err, unsigned int id,
		 const char *arg, uint64_t *out);

/** The index of @p arg among a FG_OPT_ENUM option's words (its metavar),
 *  or -1 after refusing it on @p err ("expected a, b or c"). */
int fg_opt_enum(const struct fg_opt_table *t, FILE *err, unsigned int id,
		const char *arg);

/** What a daemon adds after an option's help (before its range and
 *  default): writes it to @p buf ("" for nothing). */
typedef void (*fg_opt_note_fn)(unsigned int id, char *buf, size_t len);

/** Prints every row: "  -s, --long META\n          help[note] (min..max)
 *  [default: d]" (@p note may be NULL). */
void fg_opt_usage(FILE *f, const struct fg_opt_table *t, fg_opt_note_fn note);

#ifdef __cplusplus
}
#endif
#endif /* FLOWGATE_FG_OPT_H */
