/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The log stream behind rte_log (fg_log.h).  rte_vlog() formats a message
 * into the stream and flushes it, so each write() of the cookie stream is
 * one message (possibly several lines) at rte_log_cur_msg_loglevel().
 */
#include "fg_log.h"
#include "fg_logline.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

RTE_LOG_REGISTER(fg_logtype, flowgate, INFO);

static FILE *g_stream;

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

		fg_logline_write(level - 1, buf + off, n);   /* RTE_LOG_* = syslog + 1 */
		off += n + (nl != NULL);
	}
	fflush(stderr);
	return (ssize_t)size;
}

int fg_log_open(enum fg_log_sink sink)
{
	cookie_io_functions_t io = { .write = stream_write };
	FILE *f;

	fg_logline_open(sink == FG_LOG_SYSLOG ? FG_LOGLINE_SYSLOG : FG_LOGLINE_STDERR,
			"flowgate");
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
	fg_logline_close();
}

int fg_log_level_parse(const char *s)
{
	char *end;
	long v = strtol(s, &end, 10);

	if (*s != '\0' && *end == '\0')
		return v >= (long)RTE_LOG_EMERG && v <= (long)RTE_LOG_DEBUG ? (int)v : -EINVAL;
	for (int i = (int)RTE_LOG_EMERG; i <= (int)RTE_LOG_DEBUG; i++)
		if (!strcasecmp(s, fg_logline_prio_name(i - 1)))
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
