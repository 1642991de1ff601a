/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Health checker against real servers on 127.0.0.1: TCP and HTTP checks,
 * stop -> down after exactly `fall` failed checks, restart -> up after
 * exactly `rise` good ones (counted by the checker's history, not timed:
 * a loaded machine stretches every interval; the times are printed), wrong
 * HTTP status, a server that accepts and never answers (timeout), history,
 * JSON, config updates keeping state.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "fg_config_parse.h"
#include "fg_health.h"

/* Checks every 200 ms, each given 150 ms (the silent server holds a
 * connection 300 ms).  Waits poll for the transition under GUARD_MS, a
 * hang guard, never a bound. */
#define INTERVAL_MS 200
#define TIMEOUT_MS 150
#define GUARD_MS 60000

/* ---- a tiny TCP/HTTP server ---------------------------------------------- */

struct srv {
	int lfd;
	uint16_t port;
	volatile int status;   /* HTTP status to answer; 0 = accept and stay silent */
	volatile bool stop;
	pthread_t th;
	bool running;
};

static void *srv_main(void *arg)
{
	struct srv *s = arg;
	while (!s->stop) {
		struct pollfd p = { .fd = s->lfd, .events = POLLIN };
		if (poll(&p, 1, 20) <= 0)
			continue;
		int c = accept(s->lfd, NULL, NULL);
		if (c < 0)
			continue;
		if (!s->status) {
			/* hold it open without answering: the checker must time out */
			usleep(300000);
			close(c);
			continue;
		}
		char buf[512];
		struct pollfd q = { .fd = c, .events = POLLIN };
		ssize_t n = 0;
		if (poll(&q, 1, 200) > 0)
			n = recv(c, buf, sizeof(buf) - 1, 0);
		if (n > 0) {
			buf[n] = 0;
			char resp[128];
			int st = strncmp(buf, "GET /health HTTP/1.0\r\n", 22) ? 404 : s->status;
			int k = snprintf(resp, sizeof(resp), "HTTP/1.0 %d X\r\nContent-Length: 0\r\n\r\n", st);
			(void)!send(c, resp, (size_t)k, MSG_NOSIGNAL);
		}
		close(c);
	}
	return NULL;
}

static int srv_start(struct srv *s, uint16_t port)
{
	s->lfd = socket(AF_INET, SOCK_STREAM, 0);
	int one = 1;
	setsockopt(s->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(s->lfd, (struct sockaddr *)&sa, sizeof(sa)) || listen(s->lfd, 16))
		return -errno;
	socklen_t l = sizeof(sa);
	getsockname(s->lfd, (struct sockaddr *)&sa, &l);
	s->port = ntohs(sa.sin_port);
	s->stop = false;
	s->running = true;
	return pthread_create(&s->th, NULL, srv_main, s);
}

static void srv_stop(struct srv *s)
{
	if (!s->running)
		return;
	s->stop = true;
	pthread_join(s->th, NULL);
	close(s->lfd);
	s->running = false;
}

/* ---- recorder of set_health calls ------------------------------------------ */

struct rec {
	pthread_mutex_t lock;
	int calls;
	bool up;
	uint32_t sid, bid;
	char reason[128];
};

static int rec_cb(uint32_t sid, uint32_t bid, bool up, const char *reason, void *ctx)
{
	struct rec *r = ctx;
	pthread_mutex_lock(&r->lock);
	r->calls++;
	r->up = up;
	r->sid = sid;
	r->bid = bid;
	snprintf(r->reason, sizeof(r->reason), "%s", reason);
	pthread_mutex_unlock(&r->lock);
	return 0;
}

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Waits until the recorder saw state @p up; returns ms waited or -1. */
static int64_t wait_state(struct rec *r, int calls_before, bool up, uint64_t limit_ms)
{
	uint64_t t0 = now_ms();
	while (now_ms() - t0 < limit_ms) {
		pthread_mutex_lock(&r->lock);
		bool done = r->calls > calls_before && r->up == up;
		pthread_mutex_unlock(&r->lock);
		if (done)
			return (int64_t)(now_ms() - t0);
		usleep(5000);
	}
	return -1;
}

static void make_cfg(struct fg_config *c, const char *type, uint16_t hport, int rise, int fall,
		     const char *extra_backend)
{
	char text[1024];
	snprintf(text, sizeof(text),
		 "service 10.0.0.1:80/tcp {\n health %s {\n  port %u;\n  interval %dms;\n"
		 "  timeout %dms;\n  rise %d;\n  fall %d;\n }\n backend 127.0.0.1;\n%s}\n",
		 type, hport, INTERVAL_MS, TIMEOUT_MS, rise, fall, extra_backend);
	struct fg_cfg_err ev[4];
	struct fg_cfg_errs e = { .v = ev, .max = 4 };
	int rc = fg_config_parse(text, strlen(text), "h", c, &e);
	if (rc)
		fail_msg("config: %s", e.n ? ev[0].msg : strerror(-rc));
	assert_int_equal(fg_config_assign_ids(c, NULL), 0);
}

static void check_transitions(const char *type)
{
	struct srv s = { .status = 200 };
	assert_int_equal(srv_start(&s, 0), 0);
	uint16_t port = s.port;
	struct fg_config cfg;
	const int rise = 2, fall = 3;
	make_cfg(&cfg, type, port, rise, fall, "");
	struct rec r = { .lock = PTHREAD_MUTEX_INITIALIZER };
	struct fg_health_params hp = { .set_health = rec_cb, .ctx = &r };
	struct fg_health *h;
	assert_int_equal(fg_health_create(&hp, &cfg, &h), 0);
	assert_int_equal(fg_health_start(h), 0);
	uint32_t sid = cfg.services[0].id, bid = cfg.services[0].backends[0].id;
	assert_int_equal(fg_health_is_up(h, sid, bid), 1);
	usleep(3 * INTERVAL_MS * 1000);
	assert_int_equal(r.calls, 0); /* healthy: no transition */
	assert_int_equal(fg_health_is_up(h, sid, bid), 1);

	/* stop -> down after `fall` failed checks (the history says how many) */
	srv_stop(&s);
	int64_t t = wait_state(&r, 0, false, GUARD_MS);
	print_message("%s: down after %lld ms (%d checks of %d ms: a figure, not a bound)\n",
		      type, (long long)t, fall, INTERVAL_MS);
	assert_true(t >= 0);
	assert_true(r.sid == sid && r.bid == bid);
	assert_non_null(strstr(r.reason, "connect: Connection refused"));
	assert_int_equal(fg_health_is_up(h, sid, bid), 0);

	/* restart -> up after `rise` good checks */
	assert_int_equal(srv_start(&s, port), 0);
	t = wait_state(&r, 1, true, GUARD_MS);
	print_message("%s: up after %lld ms (%d checks of %d ms: a figure, not a bound)\n",
		      type, (long long)t, rise, INTERVAL_MS);
	assert_true(t >= 0);
	assert_int_equal(fg_health_is_up(h, sid, bid), 1);

	/* history and JSON */
	struct fg_json_writer w;
	fg_jw_init(&w, 0);
	fg_health_to_json(h, &w);
	struct fg_json_doc *d = fg_json_parse(w.buf, w.len, 0, NULL, 0);
	assert_non_null(d);
	const struct fg_json *b = fg_json_get(fg_json_root(d), "backends")->child;
	const char *st;
	assert_int_equal(fg_json_get_str(b, "state", &st), 0);
	assert_string_equal(st, "up");
	const struct fg_json *hist = fg_json_get(b, "history");
	assert_int_equal(hist->len, 2);
	assert_int_equal(fg_json_get_str(hist->child, "state", &st), 0);
	assert_string_equal(st, "up"); /* newest first */
	/* each flip came at the first check that completed its streak: exactly
	 * `rise` successes and `fall` failures, whatever the clock did */
	char want[64];
	assert_int_equal(fg_json_get_str(hist->child, "reason", &st), 0);
	snprintf(want, sizeof(want), "%d consecutive successes", rise);
	assert_string_equal(st, want);
	assert_int_equal(fg_json_get_str(hist->child->next, "reason", &st), 0);
	snprintf(want, sizeof(want), "%d consecutive failures, ", fall);
	assert_true(strncmp(st, want, strlen(want)) == 0);
	fg_json_free(d);
	fg_jw_fini(&w);

	fg_health_destroy(h);
	srv_stop(&s);
	fg_config_free(&cfg);
}

static void test_tcp(void **state)
{
	(void)state;
	check_transitions("tcp");
}

static void test_http(void **state)
{
	(void)state;
	check_transitions("http");
}

static void test_http_status_and_timeout(void **state)
{
	(void)state;
	struct srv s = { .status = 200 };
	assert_int_equal(srv_start(&s, 0), 0);
	struct fg_config cfg;
	make_cfg(&cfg, "http", s.port, 1, 2, "");
	struct rec r = { .lock = PTHREAD_MUTEX_INITIALIZER };
	struct fg_health_params hp = { .set_health = rec_cb, .ctx = &r };
	struct fg_health *h;
	assert_int_equal(fg_health_create(&hp, &cfg, &h), 0);
	assert_int_equal(fg_health_start(h), 0);
	usleep(2 * INTERVAL_MS * 1000);
	assert_int_equal(r.calls, 0);
	s.status = 503;
	assert_true(wait_state(&r, 0, false, GUARD_MS) >= 0);
	assert_non_null(strstr(r.reason, "http status 503 (expected 200)"));
	s.status = 200;
	assert_true(wait_state(&r, 1, true, GUARD_MS) >= 0);
	s.status = 0; /* accepts, never answers */
	assert_true(wait_state(&r, 2, false, GUARD_MS) >= 0);
	assert_non_null(strstr(r.reason, "timeout after 150 ms"));
	fg_health_destroy(h);
	srv_stop(&s);
	fg_config_free(&cfg);
}

static void test_update_keeps_state(void **state)
{
	(void)state;
	struct fg_config a, b;
	/* port 1 on loopback: refused -> the backend goes down */
	make_cfg(&a, "tcp", 1, 1, 1, "");
	struct rec r = { .lock = PTHREAD_MUTEX_INITIALIZER };
	struct fg_health_params hp = { .set_health = rec_cb, .ctx = &r };
	struct fg_health *h;
	assert_int_equal(fg_health_create(&hp, &a, &h), 0);
	assert_int_equal(fg_health_start(h), 0);
	assert_true(wait_state(&r, 0, false, GUARD_MS) >= 0);
	uint32_t sid = a.services[0].id, bid = a.services[0].backends[0].id;
	/* new config: same backend plus one more; ids assigned against a */
	make_cfg(&b, "tcp", 1, 1, 1, " backend 127.0.0.2;\n");
	assert_int_equal(fg_config_assign_ids(&b, &a), 0);
	assert_int_equal(b.services[0].backends[0].id, bid);
	assert_int_equal(fg_health_update(h, &b), 0);
	assert_int_equal(fg_health_is_up(h, sid, bid), 0); /* kept down */
	assert_int_equal(fg_health_is_up(h, sid, b.services[0].backends[1].id), 1); /* new: up */
	/* verdicts copied into a config for the daemon to apply */
	b.services[0].backends[1].health_down = true; /* stale flag: cleared */
	fg_health_mark(h, &b);
	assert_true(b.services[0].backends[0].health_down);
	assert_false(b.services[0].backends[1].health_down);
	/* runtime state: not in the dump, not a config difference */
	char *text = NULL;
	assert_int_equal(fg_config_dump_str(&b, &text), 0);
	assert_null(strstr(text, "down"));
	free(text);
	struct fg_config b2;
	assert_int_equal(fg_config_copy(&b2, &b), 0);
	b2.services[0].backends[0].health_down = false;
	assert_true(fg_config_equal(&b, &b2));
	fg_config_free(&b2);
	/* health none: nothing checked any more */
	struct fg_config c;
	const char *t = "service 10.0.0.1:80/tcp {\n backend 127.0.0.1;\n}\n";
	assert_int_equal(fg_config_parse(t, strlen(t), "c", &c, NULL), 0);
	assert_int_equal(fg_config_assign_ids(&c, &b), 0);
	assert_int_equal(fg_health_update(h, &c), 0);
	assert_int_equal(fg_health_is_up(h, sid, bid), -ENOENT);
	fg_health_destroy(h);
	fg_config_free(&a);
	fg_config_free(&b);
	fg_config_free(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tcp),
		cmocka_unit_test(test_http),
		cmocka_unit_test(test_http_status_and_timeout),
		cmocka_unit_test(test_update_keeps_state),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
