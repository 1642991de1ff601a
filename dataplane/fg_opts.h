/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * The daemon's command line (the part after EAL's `--`): one table of
 * options (name, argument, range, help) that `flowgate --help`, the parser
 * and docs/CONFIG.md all follow, and one set of rules with the config file.
 *
 * Options that describe configuration (--service, --backend, --local,
 * --gateway, --neigh, --port-mac, --ct-capacity, --flood-rate) are turned
 * into config-file statements, one line per option, and read by the config
 * file's own parser and validator (control/fg_config_parse.h): a value the
 * file refuses is refused on the command line with the same reason, and
 * the message names the option that carried it.  The other options are
 * checked against their range in the table.
 *
 * Pure C: no EAL needed, so `flowgate --help`, `--version` and every bad
 * value are answered before DPDK initializes (nothing to clean up).
 *
 * Threads: not reentrant (getopt); main thread at start-up.
 */
#ifndef FLOWGATE_FG_OPTS_H
#define FLOWGATE_FG_OPTS_H

#include <stdbool.h>
#include <stdio.h>

#include "fg_config.h"
#include "fg_dp.h"

#ifdef __cplusplus
extern "C" {
#endif

/** What the command line asked for. */
struct fg_opts {
	struct fg_dp_params dp;   /**< dp.cfg points to @c cfg below */
	struct fg_config cfg;     /**< config in force at start (file or options) */
	const char *config_file;  /**< -c FILE (absolute or as given), or NULL */
	char socket_path[FG_PATH_MAX]; /**< resolved control socket (absolute) */
	char config_abs[FG_PATH_MAX]; /**< -c FILE made absolute (dp.config_path) */
	char metrics_buf[64];
	/** --state-file PATH (dp.state_path), "none" = off; unset: beside the
	 *  control socket (fg_opts_parse resolves it) */
	char state_buf[4096];
	bool state_set;
	int log_level;            /**< --log-level (RTE_LOG_*), or -1 */
	bool log_syslog;          /**< --log-syslog */
	bool help;                /**< -h / --help: print fg_opts_usage, exit 0 */
	bool version;             /**< -V / --version: print fg_opts_version, exit 0 */
};

/**
 * Parses and validates the daemon options @p argv[1..argc-1] (without the
 * EAL part) into @p o, loading the -c file.  Every problem is written to
 * @p err as "flowgate: --OPTION VALUE: reason (allowed range)", or
 * "FILE:LINE: reason" for the config file.
 * @return 0 (fg_opts_free @p o later), or -EINVAL (usage error: exit 2),
 *   -ENOENT/-EACCES/... (config file unreadable: exit 1).
 */
int fg_opts_parse(int argc, char **argv, struct fg_opts *o, FILE *err);

/** Frees what fg_opts_parse allocated. */
void fg_opts_free(struct fg_opts *o);

/** Prints the usage: every option of the table with its argument, range
 *  and default. */
void fg_opts_usage(FILE *f, const char *prog);

/** Prints "flowgate VERSION" and the build options (DPDK version, CUDA
 *  path on/off, -march). */
void fg_opts_version(FILE *f, const char *prog);

/** The build, as `flowgate --version`, `fgctl version` and /metrics'
 *  flowgate_build_info report it (each from here). */
struct fg_opts_build {
	const char *version;    /**< meson project version */
	const char *dpdk;       /**< rte_version() of the DPDK in use */
	const char *gpu;        /**< CUDA batch path built: "on" / "off" */
	const char *march;      /**< -march level, "default" for the compiler's */
	const char *options;    /**< "buildtype=release b_lto=true static_dpdk=false" */
};

/** Fills @p out (static strings). */
void fg_opts_build_get(struct fg_opts_build *out);

/** Number of options in the table, and the long name of option @p i
 *  (for tests and docs checks). */
unsigned int fg_opts_count(void);
const char *fg_opts_name(unsigned int i);
/** A value option @p i refuses (NULL when it takes no value; a leading
 *  '=' means "--name=VALUE"): the test that every option names itself in
 *  its refusal feeds these. */
const char *fg_opts_bad_example(unsigned int i);

#ifdef __cplusplus
}
#endif
#endif /* FLOWGATE_FG_OPTS_H */
