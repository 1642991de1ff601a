/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * What both daemons (flowgate, flowgate-xdp) do alike once they run: the
 * signals (SIGINT / SIGTERM stop, SIGHUP re-reads the config file), the
 * systemd notifications (READY, RELOADING, WATCHDOG, STOPPING; a failure
 * logged once), and the serving loop.  A SIGHUP applies the file in
 * process, through fg_ctl_server_reload(): the very path `fgctl config
 * apply FILE` takes (parse, validate, restart-only check, stable ids,
 * apply, health checker, audit line with origin "SIGHUP").
 *
 * Threads: the main thread only; the signal handler sets the flags.
 */
#ifndef FLOWGATE_FG_DAEMON_H
#define FLOWGATE_FG_DAEMON_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

struct fg_ctl_server;

/** One log line of the daemon: @p prio syslog's (LOG_ERR..), @p line
 *  without the daemon's name (the callback adds it). */
typedef void (*fg_daemon_log_fn)(int prio, const char *line);

/** What the serving loop needs of a daemon. */
struct fg_daemon {
	/** SIGHUP applies through it; NULL: no control socket, nothing
	 *  applies files (logged) */
	struct fg_ctl_server *srv;
	/** the file a SIGHUP re-reads; NULL: nothing to re-read (logged) */
	const char *config_file;
	fg_daemon_log_fn log;
	/** systemd's watchdog: true while the daemon does its job; false
	 *  with @p why (logged at ERR, not on the first round) */
	bool (*alive)(void *arg, char *why, size_t whylen);
	/** one round of the daemon's own work; @return microseconds to
	 *  sleep before the next */
	unsigned int (*poll)(void *arg);
	void *arg;
};

/** The signal that asked to stop (0: none yet). */
extern volatile sig_atomic_t fg_daemon_stop_sig;

/** Installs the handler: SIGINT and SIGTERM set fg_daemon_stop_sig,
 *  SIGHUP asks the serving loop for a reload. */
void fg_daemon_signals(void);

/** sd_notify(3) @p msg (fg_logline.h); a failure is logged once (the
 *  watchdog would repeat it). */
void fg_daemon_notify(const struct fg_daemon *d, const char *msg);

/** Re-reads d->config_file and applies it (fg_ctl_server_reload, origin
 *  "SIGHUP") between RELOADING=1 and READY=1, and logs the outcome in one
 *  line.  @return 0 applied, or the negative errno (not applied, the
 *  running config unchanged). */
int fg_daemon_reload(const struct fg_daemon *d);

/** READY=1, then until a stop signal: a reload per SIGHUP, the watchdog
 *  pings while d->alive, d->poll. */
void fg_daemon_serve(const struct fg_daemon *d);

#ifdef __cplusplus
}
#endif
#endif /* FLOWGATE_FG_DAEMON_H */
