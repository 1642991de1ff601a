/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * Where a daemon's log lines go, and the systemd notification protocol:
 * shared by the DPDK daemon (its rte_log stream, dataplane/fg_log.c) and
 * flowgate-xdp, so both write the same lines the same way.
 *
 * Lines (fg_logline_write, fg_logline):
 * - stderr (default): "2026-11-23T18:40:00.123Z notice text";
 * - journald: when stderr is the journal (systemd sets $JOURNAL_STREAM to
 *   its device:inode), a "<N>" priority prefix instead of the timestamp
 *   (journald keeps its own), so `journalctl -p warning` filters;
 * - syslog: syslog(3), facility daemon, ident given to fg_logline_open.
 * Priorities are syslog's (LOG_ERR, LOG_NOTICE, ...).  Audit lines (one
 * per control-plane change) are NOTICE lines "<daemon>: audit: ...".
 *
 * sd_notify(3) without libsystemd (fg_sd_notify): one datagram to
 * $NOTIFY_SOCKET (a path, or with a leading '@' an abstract name).
 *
 * Threads: fg_logline_write / fg_logline / fg_sd_notify from any thread
 * (one fprintf per line); fg_logline_open / close from the main thread.
 */
#ifndef FLOWGATE_FG_LOGLINE_H
#define FLOWGATE_FG_LOGLINE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Where lines go. */
enum fg_logline_sink {
	FG_LOGLINE_STDERR = 0, /**< timestamped lines (journal prefixes under journald) */
	FG_LOGLINE_SYSLOG,     /**< syslog(3) */
};

/** Chooses the sink; @p ident names the daemon to syslog. */
void fg_logline_open(enum fg_logline_sink sink, const char *ident);

/** Closes syslog if it was opened. */
void fg_logline_close(void);

/** Writes one line of @p n bytes (no newline) at syslog priority @p prio. */
void fg_logline_write(int prio, const char *text, size_t n);

/** printf-style fg_logline_write (lines over 4 KiB are cut). */
void fg_logline(int prio, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/** "emerg".."debug" for syslog priority @p prio ("info" when out of range). */
const char *fg_logline_prio_name(int prio);

/**
 * Sends @p msg ("READY=1", "WATCHDOG=1", ...) to systemd.
 * @return 0 (sent, or no $NOTIFY_SOCKET: not under systemd), or -errno.
 */
int fg_sd_notify(const char *msg);

/** Half of $WATCHDOG_USEC (the interval to ping at), or 0 without one. */
uint64_t fg_sd_watchdog_half_us(void);

#ifdef __cplusplus
}
#endif
#endif /* FLOWGATE_FG_LOGLINE_H */
