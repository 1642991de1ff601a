/* SPDX-License-Identifier: BSD-3-Clause */
/* Log lines and sd_notify, shared by both daemons (fg_logline.h). */
#include "fg_logline.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>

static const char *const prio_names[] = {
	"emerg", "alert", "crit", "err", "warning", "notice", "info", "debug",
};

static enum fg_logline_sink g_sink;
static bool g_journal;

/* systemd sets JOURNAL_STREAM=dev:ino of the stream it connected to
 * stderr; only then are "<N>" prefixes understood (sd-daemon(3)). */
static bool stderr_is_journal(void)
{
	const char *js = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;

	if (js == NULL || sscanf(js, "%llu:%llu", &dev, &ino) != 2 ||
	    fstat(2, &st) < 0)
		return false;
	return (unsigned long long)st.st_dev == dev &&
	       (unsigned long long)st.st_ino == ino;
}

void fg_logline_open(enum fg_logline_sink sink, const char *ident)
{
	g_sink = sink;
	g_journal = sink == FG_LOGLINE_STDERR && stderr_is_journal();
	if (sink == FG_LOGLINE_SYSLOG)
		openlog(ident, LOG_PID | LOG_NDELAY, LOG_DAEMON);
}

void fg_logline_close(void)
{
	if (g_sink == FG_LOGLINE_SYSLOG)
		closelog();
	g_sink = FG_LOGLINE_STDERR;
}

const char *fg_logline_prio_name(int prio)
{
	return prio >= LOG_EMERG && prio <= LOG_DEBUG ? prio_names[prio] : "info";
}

void fg_logline_write(int prio, const char *p, size_t n)
{
	char ts[40];
	struct timeval tv;
	struct tm tm;

	if (prio < LOG_EMERG || prio > LOG_DEBUG)
		prio = LOG_INFO;
	if (g_sink == FG_LOGLINE_SYSLOG) {
		syslog(prio, "%.*s", (int)n, p);
		return;
	}
	if (g_journal) {
		fprintf(stderr, "<%d>%.*s\n", prio, (int)n, p);
		return;
	}
	gettimeofday(&tv, NULL);
	gmtime_r(&tv.tv_sec, &tm);
	strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%S", &tm);
	fprintf(stderr, "%s.%03dZ %s %.*s\n", ts, (int)(tv.tv_usec / 1000),
		prio_names[prio], (int)n, p);
}

void fg_logline(int prio, const char *fmt, ...)
{
	char buf[4096];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	fg_logline_write(prio, buf, (size_t)n < sizeof(buf) ? (size_t)n : sizeof(buf) - 1);
}

int fg_sd_notify(const char *msg)
{
	const char *path = getenv("NOTIFY_SOCKET");
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	socklen_t len;
	int fd, rc = 0;

	if (path == NULL || (path[0] != '/' && path[0] != '@') ||
	    strlen(path) >= sizeof(sa.sun_path))
		return 0;
	memcpy(sa.sun_path, path, strlen(path));
	if (path[0] == '@')
		sa.sun_path[0] = '\0';
	len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + strlen(path));
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (sendto(fd, msg, strlen(msg), MSG_NOSIGNAL, (struct sockaddr *)&sa, len) < 0)
		rc = -errno;
	close(fd);
	return rc;
}

uint64_t fg_sd_watchdog_half_us(void)
{
	const char *wd = getenv("WATCHDOG_USEC");

	return wd ? strtoull(wd, NULL, 10) / 2 : 0;
}
