/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Active health checker: one thread, non-blocking probes multiplexed with
 * poll().  See fg_health.h.
 */
#include "fg_health.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "fg_config_parse.h"
#include "fg_loadsig.h"

enum phase { P_IDLE, P_CONNECT, P_SEND, P_RECV };

struct hist {
	uint64_t t_ms; /* wall clock, ms since the epoch */
	bool up;
	char reason[96];
};

struct target {
	uint32_t service_id, backend_id;
	char service[96];
	char backend[80];
	struct fg_addr addr;
	uint16_t port;
	struct fg_health_cfg hc;
	/* state */
	bool up;
	uint32_t ok_streak, fail_streak;
	uint64_t successes, failures;
	uint64_t since_ms;        /* wall clock of the last transition (or creation) */
	char last_error[96];
	uint64_t last_rtt_us;
	struct hist hist[FG_HEALTH_HISTORY];
	uint32_t n_hist;          /* total transitions recorded */
	/* probe */
	enum phase ph;
	int fd;
	uint64_t due_ms;          /* monotonic: next probe start */
	uint64_t start_us, deadline_ms;
	char req[160];
	size_t req_len, req_off;
	char resp[64];
	size_t resp_len;
	/* metrics: the page being read (grows to FG_LOADSIG_PAGE_MAX + headers)
	 * and the signal of the last scrape */
	char *page;
	size_t page_len, page_cap;
	bool load_valid;          /* last scrape gave a signal */
	uint64_t load_ok_ms;      /* monotonic ms of the last good scrape (0 never) */
	uint32_t load_score;
	double load_raw[FG_LOAD_SERIES_MAX];
	uint64_t ls[FG_LS_MAX];
};

/* headers we accept on top of the page limit */
#define METRICS_HDR_MAX (16u << 10)

struct fg_health {
	struct fg_health_params p;
	char netns[256];
	pthread_mutex_t lock;
	struct target *t;
	uint32_t n;
	uint64_t gen;             /* bumped by update: poll results are stale */
	uint64_t load_gen;        /* bumped by every metrics scrape result */
	pthread_t thread;
	bool running;
	volatile bool stop;
	int wake[2];
};

struct transition {
	uint32_t service_id, backend_id;
	bool up;
	char reason[96];
};

static uint64_t mono_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

static uint64_t wall_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void probe_close(struct target *t)
{
	if (t->fd >= 0)
		close(t->fd);
	t->fd = -1;
	t->ph = P_IDLE;
}

/* Builds the target list of a config; state of targets in @p old (same ids)
 * is carried over, including an in-flight probe. */
static int build_targets(const struct fg_config *cfg, struct target *old, uint32_t n_old,
			 struct target **out, uint32_t *n_out)
{
	uint32_t n = 0;
	for (uint32_t i = 0; i < cfg->n_services; i++)
		if (cfg->services[i].health.type != FG_HC_NONE)
			n += cfg->services[i].n_backends;
	struct target *t = n ? calloc(n, sizeof(*t)) : NULL;
	if (n && !t)
		return -ENOMEM;
	uint32_t k = 0;
	uint64_t now = mono_us() / 1000;
	for (uint32_t i = 0; i < cfg->n_services; i++) {
		const struct fg_service_cfg *s = &cfg->services[i];
		if (s->health.type == FG_HC_NONE)
			continue;
		for (uint32_t b = 0; b < s->n_backends; b++) {
			const struct fg_backend_cfg *be = &s->backends[b];
			struct target *x = &t[k++];
			struct target *o = NULL;
			for (uint32_t j = 0; j < n_old && !o; j++)
				if (old[j].service_id == s->id && old[j].backend_id == be->id)
					o = &old[j];
			if (o) {
				*x = *o;
				o->fd = -1; /* moved */
				o->page = NULL;
			} else {
				x->fd = -1;
				x->up = true;
				x->since_ms = wall_ms();
				/* spread first probes over one interval */
				x->due_ms = now + (s->health.interval_ms * (uint64_t)b) /
					(s->n_backends ? s->n_backends : 1) / 4;
			}
			x->service_id = s->id;
			x->backend_id = be->id;
			fg_service_spec_format(&s->vip, s->port, s->proto, x->service,
					       sizeof(x->service));
			if (s->name[0]) {
				char tmp[96];
				snprintf(tmp, sizeof(tmp), "%s", x->service);
				snprintf(x->service, sizeof(x->service), "%.31s (%.60s)", s->name, tmp);
			}
			x->addr = be->addr;
			x->port = s->health.port ? s->health.port : be->port ? be->port : s->port;
			fg_endpoint_format(&be->addr, x->port, x->backend, sizeof(x->backend));
			if (o && memcmp(&x->hc, &s->health, sizeof(x->hc))) {
				probe_close(x); /* check changed: restart the probe */
				x->load_valid = false; /* other series or weights */
			}
			x->hc = s->health;
		}
	}
	*out = t;
	*n_out = n;
	return 0;
}

int fg_health_create(const struct fg_health_params *p, const struct fg_config *cfg,
		     struct fg_health **out)
{
	if (!p || !cfg || !out)
		return -EINVAL;
	struct fg_health *h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	h->p = *p;
	if (p->netns)
		snprintf(h->netns, sizeof(h->netns), "%s", p->netns);
	h->p.netns = h->netns;
	pthread_mutex_init(&h->lock, NULL);
	if (pipe2(h->wake, O_NONBLOCK | O_CLOEXEC)) {
		int e = -errno;
		free(h);
		return e;
	}
	int rc = build_targets(cfg, NULL, 0, &h->t, &h->n);
	if (rc) {
		close(h->wake[0]);
		close(h->wake[1]);
		free(h);
		return rc;
	}
	*out = h;
	return 0;
}

int fg_health_update(struct fg_health *h, const struct fg_config *cfg)
{
	pthread_mutex_lock(&h->lock);
	struct target *t;
	uint32_t n;
	int rc = build_targets(cfg, h->t, h->n, &t, &n);
	if (!rc) {
		for (uint32_t i = 0; i < h->n; i++) {
			probe_close(&h->t[i]); /* removed targets (moved ones have fd -1) */
			free(h->t[i].page);    /* moved ones have NULL */
		}
		free(h->t);
		h->t = t;
		h->n = n;
		h->gen++;
		__atomic_add_fetch(&h->load_gen, 1, __ATOMIC_RELAXED);
	}
	pthread_mutex_unlock(&h->lock);
	(void)!write(h->wake[1], "u", 1);
	return rc;
}

int fg_health_is_up(struct fg_health *h, uint32_t service_id, uint32_t backend_id)
{
	int r = -ENOENT;
	pthread_mutex_lock(&h->lock);
	for (uint32_t i = 0; i < h->n; i++)
		if (h->t[i].service_id == service_id && h->t[i].backend_id == backend_id) {
			r = h->t[i].up;
			break;
		}
	pthread_mutex_unlock(&h->lock);
	return r;
}

int fg_health_counters(struct fg_health *h, uint32_t service_id, uint32_t backend_id,
		       uint64_t *successes, uint64_t *failures)
{
	int r = -ENOENT;
	pthread_mutex_lock(&h->lock);
	for (uint32_t i = 0; i < h->n; i++)
		if (h->t[i].service_id == service_id && h->t[i].backend_id == backend_id) {
			*successes = h->t[i].successes;
			*failures = h->t[i].failures;
			r = 0;
			break;
		}
	pthread_mutex_unlock(&h->lock);
	return r;
}

static void load_fill(const struct target *t, uint64_t now_ms, struct fg_health_load *o)
{
	const struct fg_metrics_cfg *m = &t->hc.metrics;

	memset(o, 0, sizeof(*o));
	o->stale_ms = fg_loadsig_stale_ms(m, t->hc.interval_ms);
	o->ever = t->load_ok_ms != 0;
	o->age_ms = o->ever ? (now_ms >= t->load_ok_ms ? now_ms - t->load_ok_ms : 0) :
			      UINT64_MAX;
	o->fresh = t->load_valid && o->age_ms <= o->stale_ms;
	o->score_milli = t->load_score;
	o->n_series = m->n_series < FG_LOAD_SERIES_MAX ? m->n_series : FG_LOAD_SERIES_MAX;
	memcpy(o->raw, t->load_raw, sizeof(o->raw));
	o->saturate_milli = m->saturate_milli;
	o->margin_milli = m->margin_milli;
	o->saturated = o->fresh && m->saturate_milli && o->score_milli >= m->saturate_milli;
	for (uint32_t k = 0; k < o->n_series; k++)
		memcpy(o->series[k], m->series[k].name, FG_LOAD_NAME_MAX);
	memcpy(o->ls, t->ls, sizeof(o->ls));
	snprintf(o->last_error, sizeof(o->last_error), "%s", t->last_error);
}

int fg_health_load(struct fg_health *h, uint32_t service_id, uint32_t backend_id,
		   struct fg_health_load *out)
{
	int r = -ENOENT;
	uint64_t now = mono_us() / 1000;

	pthread_mutex_lock(&h->lock);
	for (uint32_t i = 0; i < h->n; i++)
		if (h->t[i].service_id == service_id && h->t[i].backend_id == backend_id) {
			if (h->t[i].hc.type == FG_HC_METRICS) {
				load_fill(&h->t[i], now, out);
				r = 0;
			}
			break;
		}
	pthread_mutex_unlock(&h->lock);
	return r;
}

uint64_t fg_health_load_gen(struct fg_health *h)
{
	return __atomic_load_n(&h->load_gen, __ATOMIC_RELAXED);
}

/* ---- probe state machine (called with the lock held) ------------------- */

static void record(struct target *t, bool ok, const char *reason, struct transition *tr,
		   uint32_t *n_tr, uint32_t max_tr)
{
	uint64_t now = mono_us();
	probe_close(t);
	t->due_ms = t->start_us / 1000 + t->hc.interval_ms;
	if (t->due_ms < now / 1000)
		t->due_ms = now / 1000;
	if (ok) {
		t->successes++;
		t->ok_streak++;
		t->fail_streak = 0;
		t->last_rtt_us = now - t->start_us;
	} else {
		t->failures++;
		t->fail_streak++;
		t->ok_streak = 0;
		snprintf(t->last_error, sizeof(t->last_error), "%s", reason);
	}
	bool flip = (!t->up && ok && t->ok_streak >= t->hc.rise) ||
		    (t->up && !ok && t->fail_streak >= t->hc.fall);
	if (!flip)
		return;
	t->up = ok;
	t->since_ms = wall_ms();
	struct hist *hs = &t->hist[t->n_hist++ % FG_HEALTH_HISTORY];
	hs->t_ms = t->since_ms;
	hs->up = ok;
	if (ok)
		snprintf(hs->reason, sizeof(hs->reason), "%u consecutive successes",
			 t->ok_streak);
	else
		snprintf(hs->reason, sizeof(hs->reason), "%u consecutive failures, last: %s",
			 t->fail_streak, reason);
	if (*n_tr < max_tr) {
		struct transition *x = &tr[(*n_tr)++];
		x->service_id = t->service_id;
		x->backend_id = t->backend_id;
		x->up = ok;
		snprintf(x->reason, sizeof(x->reason), "%s", hs->reason);
	}
}

/* A metrics scrape ended: never an up/down transition, only the signal. */
static void record_metrics(struct fg_health *h, struct target *t, enum fg_loadsig_counter oc,
			   const char *why)
{
	uint64_t now = mono_us();

	probe_close(t);
	t->due_ms = t->start_us / 1000 + t->hc.interval_ms;
	if (t->due_ms < now / 1000)
		t->due_ms = now / 1000;
	t->ls[oc]++;
	__atomic_add_fetch(&h->load_gen, 1, __ATOMIC_RELAXED);
	if (oc == FG_LS_scrapes_ok) {
		t->successes++;
		t->load_valid = true;
		t->load_ok_ms = now / 1000;
		t->last_rtt_us = now - t->start_us;
		return;
	}
	t->failures++;
	t->load_valid = false;
	snprintf(t->last_error, sizeof(t->last_error), "%s: %.70s", fg_loadsig_counter_names[oc],
		 why);
}

/* A probe failed: a transition for tcp/http, a stale signal for metrics. */
static void probe_fail(struct fg_health *h, struct target *t, enum fg_loadsig_counter oc,
		       const char *why, struct transition *tr, uint32_t *n_tr, uint32_t max)
{
	if (t->hc.type == FG_HC_METRICS)
		record_metrics(h, t, oc, why);
	else
		record(t, false, why, tr, n_tr, max);
}

/* The whole response of a metrics scrape is in t->page (the server closed). */
static void metrics_done(struct fg_health *h, struct target *t)
{
	char why[96];
	unsigned int st = 0;
	char v;

	if (t->page_len == 0) {
		record_metrics(h, t, FG_LS_scrape_http, "connection closed without a response");
		return;
	}
	t->page[t->page_len] = 0;
	if (sscanf(t->page, "HTTP/1.%c %3u", &v, &st) != 2) {
		record_metrics(h, t, FG_LS_scrape_http, "malformed status line");
		return;
	}
	if (st != 200) {
		snprintf(why, sizeof(why), "http status %u", st);
		record_metrics(h, t, FG_LS_scrape_http, why);
		return;
	}
	const char *body = strstr(t->page, "\r\n\r\n");
	size_t skip = 4;

	if (!body) {
		body = strstr(t->page, "\n\n");
		skip = 2;
	}
	if (!body) {
		record_metrics(h, t, FG_LS_scrape_http, "no end of headers");
		return;
	}
	body += skip;
	uint32_t stale = fg_loadsig_stale_ms(&t->hc.metrics, t->hc.interval_ms);
	double raw[FG_LOAD_SERIES_MAX];
	uint32_t score = 0;
	enum fg_loadsig_counter oc =
		fg_loadsig_eval(&t->hc.metrics, body, t->page_len - (size_t)(body - t->page),
				(int64_t)wall_ms(), stale, raw, &score, why, sizeof(why));

	if (oc == FG_LS_scrapes_ok) {
		memcpy(t->load_raw, raw, sizeof(raw));
		t->load_score = score;
	}
	record_metrics(h, t, oc, why);
}

static void probe_start(struct fg_health *h, struct target *t, struct transition *tr,
			uint32_t *n_tr, uint32_t max)
{
	char err[96];
	t->start_us = mono_us();
	t->deadline_ms = t->start_us / 1000 + t->hc.timeout_ms;
	t->resp_len = 0;
	t->req_off = 0;
	struct sockaddr_storage ss;
	socklen_t sl;
	memset(&ss, 0, sizeof(ss));
	if (t->addr.family == AF_INET) {
		struct sockaddr_in *sa = (struct sockaddr_in *)&ss;
		sa->sin_family = AF_INET;
		sa->sin_port = htons(t->port);
		sa->sin_addr = t->addr.v4;
		sl = sizeof(*sa);
	} else {
		struct sockaddr_in6 *sa = (struct sockaddr_in6 *)&ss;
		sa->sin6_family = AF_INET6;
		sa->sin6_port = htons(t->port);
		sa->sin6_addr = t->addr.v6;
		sl = sizeof(*sa);
	}
	t->fd = socket(t->addr.family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (t->fd < 0) {
		snprintf(err, sizeof(err), "socket: %s", strerror(errno));
		probe_fail(h, t, FG_LS_scrape_connect, err, tr, n_tr, max);
		return;
	}
	if (connect(t->fd, (struct sockaddr *)&ss, sl) && errno != EINPROGRESS) {
		snprintf(err, sizeof(err), "connect: %s", strerror(errno));
		probe_fail(h, t, FG_LS_scrape_connect, err, tr, n_tr, max);
		return;
	}
	t->ph = P_CONNECT;
	t->page_len = 0;
	if (t->hc.type == FG_HC_HTTP || t->hc.type == FG_HC_METRICS) {
		char host[64];
		fg_addr_format(&t->addr, host, sizeof(host));
		int n = snprintf(t->req, sizeof(t->req),
				 "GET %s HTTP/1.0\r\nHost: %s%s%s\r\nUser-Agent: flowgate-health\r\n"
				 "Connection: close\r\n\r\n", t->hc.path,
				 t->addr.family == AF_INET6 ? "[" : "", host,
				 t->addr.family == AF_INET6 ? "]" : "");
		t->req_len = n > 0 && (size_t)n < sizeof(t->req) ? (size_t)n : 0;
	}
}

/* metrics: reads what the server sent; the page ends when it closes
 * (HTTP/1.0, Connection: close).  Never more than the page limit. */
static void metrics_recv(struct fg_health *h, struct target *t)
{
	char err[96];

	for (;;) {
		if (t->page_len + 1 >= t->page_cap) {
			size_t cap = t->page_cap ? t->page_cap * 2 : 16384;

			if (cap > FG_LOADSIG_PAGE_MAX + METRICS_HDR_MAX + 1)
				cap = FG_LOADSIG_PAGE_MAX + METRICS_HDR_MAX + 1;
			if (t->page_len + 1 >= cap) {
				snprintf(err, sizeof(err), "response over %u bytes",
					 FG_LOADSIG_PAGE_MAX + METRICS_HDR_MAX);
				record_metrics(h, t, FG_LS_scrape_too_big, err);
				return;
			}
			char *p = realloc(t->page, cap);

			if (!p) {
				record_metrics(h, t, FG_LS_scrape_too_big, "out of memory");
				return;
			}
			t->page = p;
			t->page_cap = cap;
		}
		ssize_t n = recv(t->fd, t->page + t->page_len, t->page_cap - 1 - t->page_len,
				 MSG_DONTWAIT);

		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		if (n < 0) {
			snprintf(err, sizeof(err), "recv: %s", strerror(errno));
			record_metrics(h, t, FG_LS_scrape_connect, err);
			return;
		}
		if (n == 0) {
			metrics_done(h, t);
			return;
		}
		t->page_len += (size_t)n;
	}
}

/* Advances a probe after poll reported @p re on its socket. */
static void probe_step(struct fg_health *h, struct target *t, short re, struct transition *tr,
		       uint32_t *n_tr, uint32_t max)
{
	char err[96];
	if (t->ph == P_CONNECT) {
		if (!(re & (POLLOUT | POLLERR | POLLHUP)))
			return;
		int so = 0;
		socklen_t l = sizeof(so);
		if (getsockopt(t->fd, SOL_SOCKET, SO_ERROR, &so, &l) || so) {
			snprintf(err, sizeof(err), "connect: %s", strerror(so ? so : errno));
			probe_fail(h, t, FG_LS_scrape_connect, err, tr, n_tr, max);
			return;
		}
		if (t->hc.type == FG_HC_TCP) {
			record(t, true, "", tr, n_tr, max);
			return;
		}
		if (!t->req_len) {
			probe_fail(h, t, FG_LS_scrape_http, "http: request too long (path)", tr,
				   n_tr, max);
			return;
		}
		t->ph = P_SEND;
		re = POLLOUT;
	}
	if (t->ph == P_SEND) {
		if (!(re & (POLLOUT | POLLERR | POLLHUP)))
			return;
		ssize_t n = send(t->fd, t->req + t->req_off, t->req_len - t->req_off,
				 MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0 && errno != EAGAIN && errno != EINTR) {
			snprintf(err, sizeof(err), "http send: %s", strerror(errno));
			probe_fail(h, t, FG_LS_scrape_connect, err, tr, n_tr, max);
			return;
		}
		if (n > 0)
			t->req_off += (size_t)n;
		if (t->req_off == t->req_len)
			t->ph = P_RECV;
		return;
	}
	if (t->ph == P_RECV) {
		if (!(re & (POLLIN | POLLERR | POLLHUP)))
			return;
		if (t->hc.type == FG_HC_METRICS) {
			metrics_recv(h, t);
			return;
		}
		ssize_t n = recv(t->fd, t->resp + t->resp_len, sizeof(t->resp) - 1 - t->resp_len,
				 MSG_DONTWAIT);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		if (n < 0) {
			snprintf(err, sizeof(err), "http recv: %s", strerror(errno));
			record(t, false, err, tr, n_tr, max);
			return;
		}
		t->resp_len += (size_t)n;
		t->resp[t->resp_len] = 0;
		/* "HTTP/1.x NNN" is all we need */
		if (t->resp_len >= 12 || n == 0) {
			unsigned int st = 0;
			char v;
			if (sscanf(t->resp, "HTTP/1.%c %3u", &v, &st) != 2) {
				record(t, false, n == 0 && t->resp_len == 0 ?
				       "http: connection closed without a response" :
				       "http: malformed status line", tr, n_tr, max);
				return;
			}
			if (st != t->hc.expect_status) {
				snprintf(err, sizeof(err), "http status %u (expected %u)", st,
					 t->hc.expect_status);
				record(t, false, err, tr, n_tr, max);
				return;
			}
			record(t, true, "", tr, n_tr, max);
		}
	}
}

/* ---- thread -------------------------------------------------------------- */

#define MAX_TR 64

static void *health_main(void *arg)
{
	struct fg_health *h = arg;
	struct pollfd *pfd = NULL;
	uint32_t *idx = NULL;
	uint32_t cap = 0;
	struct transition tr[MAX_TR];

	if (h->netns[0]) {
		/* setns() affects only this thread: probes originate in the
		 * namespace that routes to the backends */
		int fd = open(h->netns, O_RDONLY | O_CLOEXEC);
		if (fd < 0 || setns(fd, CLONE_NEWNET))
			fprintf(stderr, "fg-health: cannot enter netns %s: %s\n", h->netns,
				strerror(errno));
		if (fd >= 0)
			close(fd);
	}
	while (!h->stop) {
		uint32_t n_tr = 0;
		pthread_mutex_lock(&h->lock);
		uint64_t gen = h->gen;
		uint64_t now = mono_us() / 1000;
		int timeout = 200;
		if (cap < h->n + 1) {
			cap = h->n + 16;
			free(pfd);
			free(idx);
			pfd = calloc(cap, sizeof(*pfd));
			idx = calloc(cap, sizeof(*idx));
			if (!pfd || !idx) {
				pthread_mutex_unlock(&h->lock);
				free(pfd);
				free(idx);
				pfd = NULL;
				idx = NULL;
				cap = 0;
				usleep(100000);
				continue;
			}
		}
		uint32_t np = 1;
		pfd[0].fd = h->wake[0];
		pfd[0].events = POLLIN;
		for (uint32_t i = 0; i < h->n; i++) {
			struct target *t = &h->t[i];
			if (t->ph == P_IDLE && now >= t->due_ms)
				probe_start(h, t, tr, &n_tr, MAX_TR);
			if (t->ph != P_IDLE && now >= t->deadline_ms) {
				char err[96];
				snprintf(err, sizeof(err), "timeout after %u ms", t->hc.timeout_ms);
				probe_fail(h, t, FG_LS_scrape_timeout, err, tr, &n_tr, MAX_TR);
			}
			if (t->ph != P_IDLE) {
				pfd[np].fd = t->fd;
				pfd[np].events = t->ph == P_RECV ? POLLIN : POLLOUT;
				pfd[np].revents = 0;
				idx[np++] = i;
				int64_t left = (int64_t)t->deadline_ms - (int64_t)now;
				if (left < timeout)
					timeout = left < 0 ? 0 : (int)left;
			} else {
				int64_t left = (int64_t)t->due_ms - (int64_t)now;
				if (left < timeout)
					timeout = left < 0 ? 0 : (int)left;
			}
		}
		pthread_mutex_unlock(&h->lock);
		for (uint32_t i = 0; i < n_tr; i++)
			if (h->p.set_health)
				h->p.set_health(tr[i].service_id, tr[i].backend_id, tr[i].up,
						tr[i].reason, h->p.ctx);
		n_tr = 0;
		int r = poll(pfd, np, timeout);
		if (r <= 0)
			continue;
		if (pfd[0].revents & POLLIN) {
			char b[64];
			while (read(h->wake[0], b, sizeof(b)) > 0)
				;
		}
		pthread_mutex_lock(&h->lock);
		if (gen == h->gen)
			for (uint32_t k = 1; k < np; k++)
				if (pfd[k].revents && h->t[idx[k]].fd == pfd[k].fd)
					probe_step(h, &h->t[idx[k]], pfd[k].revents, tr, &n_tr, MAX_TR);
		pthread_mutex_unlock(&h->lock);
		for (uint32_t i = 0; i < n_tr; i++)
			if (h->p.set_health)
				h->p.set_health(tr[i].service_id, tr[i].backend_id, tr[i].up,
						tr[i].reason, h->p.ctx);
	}
	free(pfd);
	free(idx);
	return NULL;
}

int fg_health_start(struct fg_health *h)
{
	if (h->running)
		return -EALREADY;
	h->stop = false;
	int rc = pthread_create(&h->thread, NULL, health_main, h);
	if (rc)
		return -rc;
	pthread_setname_np(h->thread, "fg-health");
	h->running = true;
	return 0;
}

void fg_health_stop(struct fg_health *h)
{
	if (!h || !h->running)
		return;
	h->stop = true;
	(void)!write(h->wake[1], "s", 1);
	pthread_join(h->thread, NULL);
	h->running = false;
}

void fg_health_destroy(struct fg_health *h)
{
	if (!h)
		return;
	fg_health_stop(h);
	for (uint32_t i = 0; i < h->n; i++) {
		probe_close(&h->t[i]);
		free(h->t[i].page);
	}
	free(h->t);
	close(h->wake[0]);
	close(h->wake[1]);
	pthread_mutex_destroy(&h->lock);
	free(h);
}

void fg_health_mark(struct fg_health *h, struct fg_config *cfg)
{
	pthread_mutex_lock(&h->lock);
	for (uint32_t i = 0; i < cfg->n_services; i++) {
		struct fg_service_cfg *s = &cfg->services[i];
		for (uint32_t b = 0; b < s->n_backends; b++) {
			struct fg_backend_cfg *be = &s->backends[b];
			be->health_down = false;
			for (uint32_t k = 0; k < h->n; k++)
				if (h->t[k].service_id == s->id && h->t[k].backend_id == be->id) {
					be->health_down = !h->t[k].up;
					break;
				}
		}
	}
	pthread_mutex_unlock(&h->lock);
}

void fg_health_to_json(struct fg_health *h, struct fg_json_writer *w)
{
	uint64_t now = wall_ms();
	pthread_mutex_lock(&h->lock);
	fg_jw_obj_open(w, NULL);
	fg_jw_arr_open(w, "backends");
	for (uint32_t i = 0; i < h->n; i++) {
		const struct target *t = &h->t[i];
		fg_jw_obj_open(w, NULL);
		fg_jw_str(w, "service", t->service);
		fg_jw_u64(w, "service_id", t->service_id);
		fg_jw_str(w, "backend", t->backend);
		fg_jw_u64(w, "id", t->backend_id);
		fg_jw_str(w, "check", fg_hc_name(t->hc.type));
		fg_jw_str(w, "state", t->up ? "up" : "down");
		fg_jw_dbl(w, "since_s", now >= t->since_ms ? (double)(now - t->since_ms) / 1000.0 : 0);
		fg_jw_u64(w, "successes", t->successes);
		fg_jw_u64(w, "failures", t->failures);
		fg_jw_u64(w, "ok_streak", t->ok_streak);
		fg_jw_u64(w, "fail_streak", t->fail_streak);
		fg_jw_str(w, "last_error", t->last_error);
		fg_jw_u64(w, "last_rtt_us", t->last_rtt_us);
		fg_jw_u64(w, "interval_ms", t->hc.interval_ms);
		fg_jw_u64(w, "rise", t->hc.rise);
		fg_jw_u64(w, "fall", t->hc.fall);
		if (t->hc.type == FG_HC_METRICS) {
			struct fg_health_load l;

			load_fill(t, mono_us() / 1000, &l);
			fg_jw_obj_open(w, "load");
			fg_jw_bool(w, "fresh", l.fresh);
			fg_jw_dbl(w, "score", (double)l.score_milli / 1000.0);
			if (l.ever)
				fg_jw_u64(w, "age_ms", l.age_ms);
			else
				fg_jw_null(w, "age_ms");
			fg_jw_u64(w, "stale_ms", l.stale_ms);
			fg_jw_bool(w, "saturated", l.saturated);
			fg_jw_str(w, "preset", fg_load_preset_name(t->hc.metrics.preset));
			fg_jw_obj_open(w, "series");
			for (uint32_t k = 0; k < l.n_series; k++)
				fg_jw_dbl(w, t->hc.metrics.series[k].name, l.raw[k]);
			fg_jw_obj_close(w);
			fg_jw_obj_open(w, "scrapes");
			for (unsigned int k = 0; k < FG_LS_MAX; k++)
				fg_jw_u64(w, fg_loadsig_counter_names[k], l.ls[k]);
			fg_jw_obj_close(w);
			fg_jw_obj_close(w);
		}
		fg_jw_arr_open(w, "history");
		uint32_t n = t->n_hist < FG_HEALTH_HISTORY ? t->n_hist : FG_HEALTH_HISTORY;
		for (uint32_t k = 0; k < n; k++) {
			/* newest first */
			const struct hist *hs = &t->hist[(t->n_hist - 1 - k) % FG_HEALTH_HISTORY];
			fg_jw_obj_open(w, NULL);
			fg_jw_dbl(w, "t", (double)hs->t_ms / 1000.0);
			fg_jw_str(w, "state", hs->up ? "up" : "down");
			fg_jw_str(w, "reason", hs->reason);
			fg_jw_obj_close(w);
		}
		fg_jw_arr_close(w);
		fg_jw_obj_close(w);
	}
	fg_jw_arr_close(w);
	fg_jw_obj_close(w);
	pthread_mutex_unlock(&h->lock);
}
