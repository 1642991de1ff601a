/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * flowgate's log: DPDK's rte_log with a registered log type "flowgate"
 * (so `--log-level=flowgate:debug` works as for any DPDK component) and
 * one output stream for flowgate's and DPDK's own messages:
 *
 * - stderr (default): each line as "2026-11-23T18:40:00.123Z NOTICE text";
 * - journald: when stderr is the journal (systemd sets $JOURNAL_STREAM to
 *   its device:inode), each line gets a "<N>" priority prefix instead of
 *   the timestamp (journald keeps its own), so `journalctl -p warning`
 *   filters by level;
 * - syslog (`flowgate --log-syslog`): syslog(3), ident "flowgate",
 *   facility daemon, priority = the message's level.
 *
 * Audit lines (one per control-plane change) are NOTICE lines starting
 * with "flowgate: audit: ".
 *
 * Threads: FG_LOG may be called from any thread, before and after EAL
 * init; fg_log_open/close from the main thread only.
 */
#ifndef FLOWGATE_FG_LOG_H
#define FLOWGATE_FG_LOG_H

#include <stdbool.h>

#include <rte_log.h>

#ifdef __cplusplus
extern "C" {
#endif

/** The "flowgate" rte_log type (registered at load, default INFO). */
extern int fg_logtype;

/** Logs "flowgate: <fmt>\n" at rte_log level @p lvl (ERR, WARNING,
 *  NOTICE, INFO, DEBUG). */
#define FG_LOG(lvl, fmt, ...) \
	rte_log(RTE_LOG_##lvl, fg_logtype, "flowgate: " fmt "\n", ##__VA_ARGS__)

/** Where log lines go. */
enum fg_log_sink {
	FG_LOG_STDERR = 0, /**< timestamped lines (journal prefixes under journald) */
	FG_LOG_SYSLOG,     /**< syslog(3) */
};

/**
 * Routes rte_log (flowgate's and DPDK's messages) to @p sink.  Call before
 * rte_eal_init() so EAL's messages take the same path.
 * @return 0 or -ENOMEM (the stream could not be created: DPDK's default
 *   stays).
 */
int fg_log_open(enum fg_log_sink sink);

/** Back to DPDK's default stream; closes syslog.  Main thread, at exit. */
void fg_log_close(void);

/** "emerg".."debug" (or 1..8) -> RTE_LOG_* level, or -EINVAL. */
int fg_log_level_parse(const char *s);

/** Sets the level of the "flowgate" type.  @return 0 or -EINVAL. */
int fg_log_level_set(int level);

#ifdef __cplusplus
}
#endif
#endif /* FLOWGATE_FG_LOG_H */
