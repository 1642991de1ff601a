/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The Prometheus endpoint's HTTP side and the exposition format's writers
 * (fg_promserve.h): one small HTTP/1.x server on its own thread, shared by
 * the DPDK daemon (dataplane/fg_metrics.c) and flowgate-xdp, each with its
 * own renderer.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "fg_promserve.h"

/* ------------------------------------------------------- exposition */

int fg_metrics_label_escape(const char *in, char *out, size_t len)
{
	size_t o = 0;
	int rc = 0;

	if (len == 0)
		return -ENOSPC;
	for (const char *p = in; *p; p++) {
		const char *rep = *p == '\\' ? "\\\\" : *p == '"' ? "\\\"" :
				  *p == '\n' ? "\\n" : NULL;
		size_t n = rep ? 2 : 1;

		if (o + n >= len) {
			rc = -ENOSPC;
			break;
		}
		if (rep) {
			out[o++] = rep[0];
			out[o++] = rep[1];
		} else {
			out[o++] = *p;
		}
	}
	out[o] = '\0';
	return rc < 0 ? rc : (int)o;
}

/* HELP text: backslash and newline escaped (quotes are literal there). */
static void help_write(FILE *f, const char *s)
{
	for (; *s; s++) {
		if (*s == '\\')
			fputs("\\\\", f);
		else if (*s == '\n')
			fputs("\\n", f);
		else
			fputc(*s, f);
	}
}

void fg_prom_family(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP %s ", name);
	help_write(f, help);
	fprintf(f, "\n# TYPE %s %s\n", name, type);
}

/* A family whose name is prefix + X-macro name + suffix. */
void fg_prom_family3(FILE *f, char *name, size_t len, const char *prefix,
		     const char *mid, const char *suffix, const char *type,
		     const char *help)
{
	snprintf(name, len, "%s%s%s", prefix, mid, suffix);
	fg_prom_family(f, name, type, help);
}

void fg_prom_backend_label(const char *addr, int v6, uint16_t port, char *out, size_t len)
{
	char name[96];

	if (port)
		snprintf(name, sizeof(name), v6 ? "[%s]:%u" : "%s:%u", addr, port);
	else
		snprintf(name, sizeof(name), "%s", addr);
	fg_metrics_label_escape(name, out, len);
}

/* -------------------------------------------------------------- HTTP */

int fg_metrics_listen_parse(const char *s, struct sockaddr_storage *ss,
			    socklen_t *len)
{
	char host[64];
	const char *colon, *h = s;
	size_t hl;
	char *end;

	memset(ss, 0, sizeof(*ss));
	if (s == NULL)
		return -EINVAL;
	if (s[0] == '[') {
		const char *rb = strchr(s, ']');

		if (rb == NULL || rb[1] != ':')
			return -EINVAL;
		h = s + 1;
		hl = (size_t)(rb - h);
		colon = rb + 1;
	} else {
		colon = strrchr(s, ':');
		if (colon == NULL || memchr(s, ':', (size_t)(colon - s)) != NULL)
			return -EINVAL;  /* IPv6 needs brackets */
		hl = (size_t)(colon - s);
	}
	if (hl == 0 || hl >= sizeof(host))
		return -EINVAL;
	memcpy(host, h, hl);
	host[hl] = '\0';
	errno = 0;
	unsigned long port = strtoul(colon + 1, &end, 10);

	if (colon[1] == '\0' || *end != '\0' || errno || port == 0 || port > 65535)
		return -EINVAL;
	struct sockaddr_in *a4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)ss;

	if (s[0] != '[' && inet_pton(AF_INET, host, &a4->sin_addr) == 1) {
		a4->sin_family = AF_INET;
		a4->sin_port = htons((uint16_t)port);
		*len = sizeof(*a4);
		return 0;
	}
	if (s[0] == '[' && inet_pton(AF_INET6, host, &a6->sin6_addr) == 1) {
		a6->sin6_family = AF_INET6;
		a6->sin6_port = htons((uint16_t)port);
		*len = sizeof(*a6);
		return 0;
	}
	return -EINVAL;
}

enum fg_metrics_http fg_metrics_http_parse(const char *buf, size_t len)
{
	const char *eoh = NULL, *sp1, *sp2, *eol;

	for (size_t i = 0; i + 1 < len && eoh == NULL; i++) {
		if (buf[i] == '\n' && buf[i + 1] == '\n')
			eoh = buf + i;
		else if (i + 3 < len && !memcmp(buf + i, "\r\n\r\n", 4))
			eoh = buf + i;
	}
	if (eoh == NULL)
		return len >= FG_METRICS_MAX_REQUEST ? FG_METRICS_HTTP_TOO_LARGE :
		       FG_METRICS_HTTP_INCOMPLETE;
	eol = memchr(buf, '\n', len);  /* the end of headers has one */
	if (eol == NULL)
		return FG_METRICS_HTTP_BAD_REQUEST;
	sp1 = memchr(buf, ' ', (size_t)(eol - buf));
	sp2 = sp1 ? memchr(sp1 + 1, ' ', (size_t)(eol - sp1 - 1)) : NULL;
	if (sp1 == NULL || sp2 == NULL || sp1 == buf || sp2 == sp1 + 1 ||
	    (size_t)(eol - sp2) < 9 || memcmp(sp2 + 1, "HTTP/1.", 7) != 0)
		return FG_METRICS_HTTP_BAD_REQUEST;
	bool get = sp1 - buf == 3 && !memcmp(buf, "GET", 3);
	bool head = sp1 - buf == 4 && !memcmp(buf, "HEAD", 4);

	if (!get && !head)
		return FG_METRICS_HTTP_BAD_METHOD;
	const char *path = sp1 + 1;
	size_t plen = (size_t)(sp2 - path);
	const char *q = memchr(path, '?', plen);

	if (q != NULL)
		plen = (size_t)(q - path);
	if (plen != 8 || memcmp(path, "/metrics", 8) != 0)
		return FG_METRICS_HTTP_NOT_FOUND;
	return get ? FG_METRICS_HTTP_METRICS : FG_METRICS_HTTP_HEAD;
}

struct client {
	int fd;                         /* -1: free slot */
	char in[FG_METRICS_MAX_REQUEST];
	size_t in_len;
	char *out;                      /* response, once the request is read */
	size_t out_len, out_off;
	uint64_t deadline_ms;
};

struct fg_promserve {
	fg_promserve_render_fn render;
	void *ctx;
	int lfd;
	int wake[2];                    /* stop: main writes, thread polls */
	pthread_t thread;
	bool started;
	struct client c[FG_METRICS_MAX_CLIENTS];
};

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void client_close(struct client *c)
{
	close(c->fd);
	c->fd = -1;
	free(c->out);
	c->out = NULL;
	c->in_len = c->out_len = c->out_off = 0;
}

/* Builds the whole response in memory (a few hundred KB for thousands of
 * backends), so the socket is then written without rendering again. */
static void client_respond(struct fg_promserve *m, struct client *c,
			   enum fg_metrics_http what)
{
	static const char *const status[] = {
		[FG_METRICS_HTTP_NOT_FOUND] = "404 Not Found",
		[FG_METRICS_HTTP_BAD_METHOD] = "405 Method Not Allowed",
		[FG_METRICS_HTTP_BAD_REQUEST] = "400 Bad Request",
		[FG_METRICS_HTTP_TOO_LARGE] = "431 Request Header Fields Too Large",
	};
	char *body = NULL;
	size_t body_len = 0;
	const char *st = "200 OK", *ctype = "text/plain; version=0.0.4; charset=utf-8";
	FILE *f = open_memstream(&body, &body_len);
	int rc = f ? 0 : -ENOMEM;

	if (rc == 0 && (what == FG_METRICS_HTTP_METRICS || what == FG_METRICS_HTTP_HEAD))
		rc = m->render(f, m->ctx);
	else if (rc == 0)
		fprintf(f, "%s\n", status[what]);
	if (f != NULL && fclose(f) != 0 && rc == 0)
		rc = -ENOMEM;
	if (what != FG_METRICS_HTTP_METRICS && what != FG_METRICS_HTTP_HEAD) {
		st = status[what];
		ctype = "text/plain; charset=utf-8";
	}
	if (rc < 0) {
		free(body);
		body = NULL;
		st = "503 Service Unavailable";
		ctype = "text/plain; charset=utf-8";
		int n = asprintf(&body, "metrics snapshot failed: %s\n", strerror(-rc));

		if (n < 0) {
			client_close(c);
			return;
		}
		body_len = (size_t)n;
	}
	char *resp = NULL;
	size_t resp_len = 0;
	FILE *r = open_memstream(&resp, &resp_len);

	if (r == NULL) {
		free(body);
		client_close(c);
		return;
	}
	fprintf(r, "HTTP/1.1 %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
		"Connection: close\r\n\r\n", st, ctype, body_len);
	if (what != FG_METRICS_HTTP_HEAD)
		fwrite(body, 1, body_len, r);
	free(body);
	if (fclose(r) != 0) {
		free(resp);
		client_close(c);
		return;
	}
	c->out = resp;
	c->out_len = resp_len;
	c->out_off = 0;
	c->deadline_ms = now_ms() + FG_METRICS_TIMEOUT_MS;
}

static void client_read(struct fg_promserve *m, struct client *c)
{
	ssize_t n = recv(c->fd, c->in + c->in_len, sizeof(c->in) - c->in_len, 0);

	if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
		client_close(c);
		return;
	}
	if (n < 0)
		return;
	c->in_len += (size_t)n;
	enum fg_metrics_http what = fg_metrics_http_parse(c->in, c->in_len);

	if (what != FG_METRICS_HTTP_INCOMPLETE)
		client_respond(m, c, what);
}

static void client_write(struct client *c)
{
	ssize_t n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off,
			 MSG_NOSIGNAL);

	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		client_close(c);
		return;
	}
	c->out_off += (size_t)n;
	if (c->out_off == c->out_len) {
		shutdown(c->fd, SHUT_WR);
		client_close(c);
	}
}

static void accept_one(struct fg_promserve *m)
{
	struct client *c = NULL;

	for (int i = 0; i < FG_METRICS_MAX_CLIENTS && c == NULL; i++)
		if (m->c[i].fd < 0)
			c = &m->c[i];
	if (c == NULL)
		return;         /* full: the connection waits in the backlog */
	int fd = accept4(m->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

	if (fd < 0)
		return;
	c->fd = fd;
	c->in_len = 0;
	c->deadline_ms = now_ms() + FG_METRICS_TIMEOUT_MS;
}

static void *metrics_main(void *arg)
{
	struct fg_promserve *m = arg;
	struct pollfd pfd[FG_METRICS_MAX_CLIENTS + 2];
	int idx[FG_METRICS_MAX_CLIENTS + 2];

	for (;;) {
		int n = 0, busy = 0;

		pfd[n++] = (struct pollfd){.fd = m->wake[0], .events = POLLIN};
		for (int i = 0; i < FG_METRICS_MAX_CLIENTS; i++) {
			if (m->c[i].fd < 0)
				continue;
			busy++;
			idx[n] = i;
			pfd[n++] = (struct pollfd){.fd = m->c[i].fd,
				.events = m->c[i].out ? POLLOUT : POLLIN};
		}
		if (busy < FG_METRICS_MAX_CLIENTS) {
			idx[n] = -1;
			pfd[n++] = (struct pollfd){.fd = m->lfd, .events = POLLIN};
		}
		int rc = poll(pfd, (nfds_t)n, 250);

		if (rc < 0 && errno != EINTR)
			break;
		if (pfd[0].revents)
			break;  /* stop */
		for (int k = 1; rc > 0 && k < n; k++) {
			if (!pfd[k].revents)
				continue;
			if (idx[k] < 0) {
				accept_one(m);
				continue;
			}
			struct client *c = &m->c[idx[k]];

			if (c->out)
				client_write(c);
			else
				client_read(m, c);
		}
		uint64_t t = now_ms();

		for (int i = 0; i < FG_METRICS_MAX_CLIENTS; i++)
			if (m->c[i].fd >= 0 && t > m->c[i].deadline_ms)
				client_close(&m->c[i]);
	}
	return NULL;
}

int fg_promserve_start(const char *listen_on, const char *thread_name,
		       fg_promserve_render_fn render, void *ctx, struct fg_promserve **out)
{
	struct sockaddr_storage ss;
	socklen_t sl;
	int one = 1, rc;
	struct fg_promserve *m;

	rc = fg_metrics_listen_parse(listen_on, &ss, &sl);
	if (rc < 0)
		return rc;
	m = calloc(1, sizeof(*m));
	if (m == NULL)
		return -ENOMEM;
	m->render = render;
	m->ctx = ctx;
	m->wake[0] = m->wake[1] = -1;
	for (int i = 0; i < FG_METRICS_MAX_CLIENTS; i++)
		m->c[i].fd = -1;
	m->lfd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (m->lfd < 0)
		goto fail_errno;
	setsockopt(m->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(m->lfd, (struct sockaddr *)&ss, sl) < 0 ||
	    listen(m->lfd, FG_METRICS_MAX_CLIENTS) < 0 ||
	    pipe2(m->wake, O_CLOEXEC) < 0)
		goto fail_errno;
	rc = -pthread_create(&m->thread, NULL, metrics_main, m);
	if (rc < 0)
		goto fail;
	pthread_setname_np(m->thread, thread_name ? thread_name : "fg-metrics");
	m->started = true;
	*out = m;
	return 0;
fail_errno:
	rc = -errno;
fail:
	if (m->lfd >= 0)
		close(m->lfd);
	if (m->wake[0] >= 0) {
		close(m->wake[0]);
		close(m->wake[1]);
	}
	free(m);
	return rc;
}

void fg_promserve_stop(struct fg_promserve *m)
{
	if (m == NULL)
		return;
	if (m->started) {
		char b = 1;

		if (write(m->wake[1], &b, 1) != 1)
			pthread_cancel(m->thread);
		pthread_join(m->thread, NULL);
	}
	for (int i = 0; i < FG_METRICS_MAX_CLIENTS; i++)
		if (m->c[i].fd >= 0)
			client_close(&m->c[i]);
	close(m->lfd);
	close(m->wake[0]);
	close(m->wake[1]);
	free(m);
}
