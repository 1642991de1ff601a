/* SPDX-License-Identifier: BSD-3-Clause */
/* The serving life both daemons share (fg_daemon.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "fg_ctl_server.h"
#include "fg_daemon.h"
#include "fg_logline.h"

volatile sig_atomic_t fg_daemon_stop_sig;
static volatile sig_atomic_t g_hup;

static void on_signal(int sig)
{
	if (sig == SIGHUP)
		g_hup = 1;
	else
		fg_daemon_stop_sig = sig;
}

void fg_daemon_signals(void)
{
	struct sigaction sa = { .sa_handler = on_signal };

	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
}

static void logf_(const struct fg_daemon *d, int prio, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void logf_(const struct fg_daemon *d, int prio, const char *fmt, ...)
{
	char line[3072];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	d->log(prio, line);
}

void fg_daemon_notify(const struct fg_daemon *d, const char *msg)
{
	static bool warned;
	int rc = fg_sd_notify(msg);

	if (rc < 0 && !warned) {
		warned = true;
		logf_(d, LOG_WARNING, "sd_notify %s: %s", msg, strerror(-rc));
	}
}

int fg_daemon_reload(const struct fg_daemon *d)
{
	char err[2048] = "";
	int rc;

	if (d->config_file == NULL) {
		d->log(LOG_WARNING, "SIGHUP: no -c file to re-read; nothing changed");
		return -ENOENT;
	}
	if (d->srv == NULL) {
		d->log(LOG_WARNING, "SIGHUP: no control socket: nothing applies files");
		return -ENOTSUP;
	}
	fg_daemon_notify(d, "RELOADING=1");
	logf_(d, LOG_NOTICE, "SIGHUP: re-reading %s", d->config_file);
	rc = fg_ctl_server_reload(d->srv, d->config_file, "SIGHUP", err, sizeof(err));
	for (char *nl = strchr(err, '\n'); rc < 0 && nl; nl = strchr(nl, '\n'))
		*nl = ' ';     /* one log line: the problems joined */
	if (rc == 0)
		logf_(d, LOG_NOTICE, "SIGHUP: %s applied", d->config_file);
	else
		logf_(d, LOG_ERR, "SIGHUP: %s not applied, the running config is "
		      "unchanged: %s", d->config_file, err);
	fg_daemon_notify(d, "READY=1");
	return rc;
}

static uint64_t mono_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000ull + (uint64_t)ts.tv_nsec / 1000ull;
}

void fg_daemon_serve(const struct fg_daemon *d)
{
	uint64_t wd_us = fg_sd_watchdog_half_us(), wd_next = 0;
	char why[256];

	fg_daemon_notify(d, "READY=1");
	while (!fg_daemon_stop_sig) {
		if (g_hup) {
			g_hup = 0;
			fg_daemon_reload(d);
		}
		/* a stuck daemon stops the pings: systemd restarts the unit */
		if (wd_us && mono_us() >= wd_next) {
			why[0] = '\0';
			if (d->alive(d->arg, why, sizeof(why)))
				fg_daemon_notify(d, "WATCHDOG=1");
			else if (wd_next)
				logf_(d, LOG_ERR, "watchdog: %s", why);
			wd_next = mono_us() + wd_us;
		}
		usleep(d->poll(d->arg));
	}
}
