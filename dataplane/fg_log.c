/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The log stream behind rte_log (fg_log.h).  rte_vlog() formats a message
 * into the stream and flushes it, so each write() of the cookie stream is
 * one message (possibly several lines) at rte_log_cur_msg_loglevel().
 */
#include "fg_log.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <syslog.h>
#include <time.h>

RTE_LOG_REGISTER(fg_logtype, flowgate, INFO);

static const char *const level_names[] = {
	[RTE_LOG_EMERG] = "emerg", [RTE_LOG_ALERT] = "alert",
	[RTE_LOG_CRIT] = "crit", [RTE_LOG_ERR] = "err",
	[RTE_LOG_WARNING] = "warning", [RTE_LOG_NOTICE] = "notice",
	[RTE_LOG_INFO] = "info", [RTE_LOG_DEBUG] = "debug",
};

static FILE *g_stream;
static enum fg_log_sink g_sink;
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

static void line_out(int level, const char *p, size_t n)
{
	char ts[40];
	struct timeval tv;
	struct tm tm;

	if (g_sink == FG_LOG_SYSLOG) {
		syslog(level - 1, "%.*s", (int)n, p);
		return;
	}
	if (g_journal) {
		fprintf(stderr, "<%d>%.*s\n", level - 1, (int)n, p);
		return;
	}
	gettimeofday(&tv, NULL);
	gmtime_r(&tv.tv_sec, &tm);
	strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%S", &tm);
	fprintf(stderr, "%s.%03dZ %s %.*s\n", ts, (int)(tv.tv_usec / 1000),
		level >= (int)RTE_LOG_EMERG && level <= (int)RTE_LOG_DEBUG ?
		level_names[level] : "info", (int)n, p);
}

static ssize_t stream_write(void *cookie, const char *buf, size_t size)
{
	int level = rte_log_cur_msg_loglevel();
	size_t off = 0;

	(void)cookie;
	if (level < (int)RTE_LOG_EMERG || level > (int)RTE_LOG_DEBUG)
		level = RTE_LOG_INFO;
	while (off < size) {
		const char *nl = memchr(buf + off, '\n', size - off);
		size_t n = nl ? (size_t)(nl - (buf + off)) : size - off;

		line_out(level, buf + off, n);
		off += n + (nl != NULL);
	}
	fflush(stderr);
	return (ssize_t)size;
}

int fg_log_open(enum fg_log_sink sink)
{
	cookie_io_functions_t io = { .write = stream_write };
	FILE *f;

	g_sink = sink;
	g_journal = sink == FG_LOG_STDERR && stderr_is_journal();
	if (sink == FG_LOG_SYSLOG)
		openlog("flowgate", LOG_PID | LOG_NDELAY, LOG_DAEMON);
	f = fopencookie(NULL, "w", io);
	if (f == NULL)
		return -ENOMEM;
	/* one message per flush (rte_vlog flushes): a buffer that holds the
	 * longest message keeps its lines together */
	setvbuf(f, NULL, _IOFBF, 8192);
	rte_openlog_stream(f);
	g_stream = f;
	return 0;
}

void fg_log_close(void)
{
	if (g_stream == NULL)
		return;
	rte_openlog_stream(NULL);
	fclose(g_stream);
	g_stream = NULL;
	if (g_sink == FG_LOG_SYSLOG)
		closelog();
}

int fg_log_level_parse(const char *s)
{
	char *end;
	long v = strtol(s, &end, 10);

	if (*s != '\0' && *end == '\0')
		return v >= (long)RTE_LOG_EMERG && v <= (long)RTE_LOG_DEBUG ? (int)v : -EINVAL;
	for (int i = (int)RTE_LOG_EMERG; i <= (int)RTE_LOG_DEBUG; i++)
		if (!strcasecmp(s, level_names[i]))
			return i;
	if (!strcasecmp(s, "error"))
		return RTE_LOG_ERR;
	if (!strcasecmp(s, "warn"))
		return RTE_LOG_WARNING;
	return -EINVAL;
}

int fg_log_level_set(int level)
{
	return rte_log_set_level((uint32_t)fg_logtype, (uint32_t)level) < 0 ?
	       -EINVAL : 0;
}
