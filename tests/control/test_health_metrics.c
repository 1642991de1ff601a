/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * `health metrics` against a fake vLLM worker on 127.0.0.1: the load
 * signal follows the page; every way a worker can go wrong (malformed page,
 * HTTP 503, a page over the limit, a series missing, NaN, an old sample
 * timestamp, a worker that accepts and never answers, no worker at all)
 * makes the signal stale under its own counter, and none of them marks the
 * backend down or calls set_health.  Then recovery: the signal is fresh
 * again.  No wall-clock bound is asserted: each wait is "until it happens"
 * with a generous cap for a loaded machine.
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
#include "fg_loadsig.h"

enum mode { M_OK, M_MALFORMED, M_503, M_BIG, M_MISSING, M_NAN, M_OLD, M_SILENT };

struct worker {
	int lfd;
	uint16_t port;
	volatile int mode;
	volatile int waiting, running;
	volatile bool stop;
	pthread_t th;
	bool running_thread;
};

static void send_all(int c, const char *p, size_t n)
{
	while (n) {
		ssize_t k = send(c, p, n, MSG_NOSIGNAL);

		if (k <= 0)
			return;
		p += k;
		n -= (size_t)k;
	}
}

static void answer(struct worker *w, int c)
{
	char page[4096];
	int n = 0;

	switch (w->mode) {
	case M_OK:
	case M_OLD:
		n = snprintf(page, sizeof(page),
			     "# HELP vllm:num_requests_waiting Waiting.\n"
			     "# TYPE vllm:num_requests_waiting gauge\n"
			     "vllm:num_requests_waiting{model_name=\"m\"} %d%s\n"
			     "vllm:num_requests_waiting{model_name=\"other\"} 100\n"
			     "vllm:num_requests_running{model_name=\"m\"} %d\n"
			     "vllm:gpu_cache_usage_perc{model_name=\"m\"} 0.5\n",
			     w->waiting, w->mode == M_OLD ? " 1000" : "", w->running);
		break;
	case M_MALFORMED:
		n = snprintf(page, sizeof(page), "vllm:num_requests_waiting{model_name=\"m} 3\n");
		break;
	case M_MISSING:
		n = snprintf(page, sizeof(page), "vllm:num_requests_running{model_name=\"m\"} 3\n");
		break;
	case M_NAN:
		n = snprintf(page, sizeof(page),
			     "vllm:num_requests_waiting{model_name=\"m\"} NaN\n"
			     "vllm:num_requests_running{model_name=\"m\"} 1\n"
			     "vllm:kv_cache_usage_perc{model_name=\"m\"} 0.1\n");
		break;
	default:
		break;
	}
	char hdr[128];
	int hn;

	if (w->mode == M_503) {
		hn = snprintf(hdr, sizeof(hdr), "HTTP/1.0 503 Busy\r\n\r\n");
		send_all(c, hdr, (size_t)hn);
		return;
	}
	hn = snprintf(hdr, sizeof(hdr), "HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\n");
	send_all(c, hdr, (size_t)hn);
	if (w->mode == M_BIG) {
		/* a valid page, one comment line at a time, over the limit */
		static char line[1024];

		memset(line, 'x', sizeof(line));
		line[0] = '#';
		line[sizeof(line) - 1] = '\n';
		for (size_t sent = 0; sent <= FG_LOADSIG_PAGE_MAX + 65536; sent += sizeof(line))
			send_all(c, line, sizeof(line));
		return;
	}
	send_all(c, page, (size_t)n);
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;

	while (!w->stop) {
		struct pollfd p = { .fd = w->lfd, .events = POLLIN };

		if (poll(&p, 1, 20) <= 0)
			continue;
		int c = accept(w->lfd, NULL, NULL);

		if (c < 0)
			continue;
		char buf[512];
		struct pollfd q = { .fd = c, .events = POLLIN };

		if (poll(&q, 1, 200) > 0 && recv(c, buf, sizeof(buf) - 1, 0) > 0) {
			if (w->mode == M_SILENT)
				usleep(300000); /* past the 100 ms timeout */
			else
				answer(w, c);
		}
		close(c);
	}
	return NULL;
}

static int worker_start(struct worker *w, uint16_t port)
{
	w->lfd = socket(AF_INET, SOCK_STREAM, 0);
	int one = 1;

	setsockopt(w->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(w->lfd, (struct sockaddr *)&sa, sizeof(sa)) || listen(w->lfd, 16))
		return -errno;
	socklen_t l = sizeof(sa);

	getsockname(w->lfd, (struct sockaddr *)&sa, &l);
	w->port = ntohs(sa.sin_port);
	w->stop = false;
	w->running_thread = true;
	return pthread_create(&w->th, NULL, worker_main, w);
}

static void worker_stop(struct worker *w)
{
	if (!w->running_thread)
		return;
	w->stop = true;
	pthread_join(w->th, NULL);
	close(w->lfd);
	w->running_thread = false;
}

static int calls;
static int rec_cb(uint32_t sid, uint32_t bid, bool up, const char *reason, void *ctx)
{
	(void)sid, (void)bid, (void)up, (void)reason, (void)ctx;
	__atomic_add_fetch(&calls, 1, __ATOMIC_RELAXED);
	return 0;
}

/* Waits (capped at 10 s) until outcome @p oc was counted more than
 * @p before times and freshness is @p fresh. */
static bool wait_outcome(struct fg_health *h, uint32_t sid, uint32_t bid,
			 enum fg_loadsig_counter oc, uint64_t before, bool fresh,
			 struct fg_health_load *l)
{
	for (int i = 0; i < 1000; i++) {
		assert_int_equal(fg_health_load(h, sid, bid, l), 0);
		if (l->ls[oc] > before && l->fresh == fresh)
			return true;
		usleep(10000);
	}
	return false;
}

static void test_metrics_signal(void **state)
{
	(void)state;
	struct worker w = { .mode = M_OK, .waiting = 3, .running = 8 };

	assert_int_equal(worker_start(&w, 0), 0);
	char text[512];

	snprintf(text, sizeof(text),
		 "service 10.0.0.1:80/tcp {\n scheduler maglev-load;\n"
		 " health metrics {\n  port %u;\n  interval 100ms;\n  timeout 100ms;\n"
		 "  stale 2s;\n  select model_name \"m\";\n  saturate 10;\n }\n"
		 " backend 127.0.0.1;\n}\n", w.port);
	struct fg_config cfg;
	struct fg_cfg_err ev[4];
	struct fg_cfg_errs e = { .v = ev, .max = 4 };

	if (fg_config_parse(text, strlen(text), "m", &cfg, &e))
		fail_msg("config: %s", ev[0].msg);
	assert_int_equal(fg_config_assign_ids(&cfg, NULL), 0);
	struct fg_health_params hp = { .set_health = rec_cb };
	struct fg_health *h;

	assert_int_equal(fg_health_create(&hp, &cfg, &h), 0);
	uint32_t sid = cfg.services[0].id, bid = cfg.services[0].backends[0].id;
	struct fg_health_load l;

	assert_int_equal(fg_health_load(h, sid, bid, &l), 0);
	assert_false(l.fresh);
	assert_false(l.ever);
	assert_int_equal(fg_health_start(h), 0);

	/* good: 3 waiting x 1 + 8 running x 0.25 + 0.5 (the older kv name) x 2 */
	assert_true(wait_outcome(h, sid, bid, FG_LS_scrapes_ok, 0, true, &l));
	assert_int_equal(l.score_milli, 3000 + 2000 + 1000);
	assert_true(l.raw[0] == 3 && l.raw[1] == 8 && l.raw[2] == 0.5);
	assert_int_equal(l.saturate_milli, 10000);
	uint64_t gen = fg_health_load_gen(h);

	/* the signal follows the page */
	w.waiting = 9;
	for (int i = 0; i < 1000 && l.raw[0] != 9; i++) {
		usleep(10000);
		fg_health_load(h, sid, bid, &l);
	}
	assert_int_equal(l.score_milli, 9000 + 2000 + 1000);
	assert_true(fg_health_load_gen(h) != gen);

	static const struct {
		int mode;
		enum fg_loadsig_counter oc;
		const char *why;
	} bad[] = {
		{ M_MALFORMED, FG_LS_scrape_malformed, "unterminated" },
		{ M_503, FG_LS_scrape_http, "503" },
		{ M_BIG, FG_LS_scrape_too_big, "over" },
		{ M_MISSING, FG_LS_scrape_missing, "vllm:num_requests_waiting" },
		{ M_NAN, FG_LS_scrape_bad_value, "nan" },
		{ M_OLD, FG_LS_scrape_old, "ago" },
		{ M_SILENT, FG_LS_scrape_timeout, "timeout" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		uint64_t before = l.ls[bad[i].oc];

		w.mode = bad[i].mode;
		if (!wait_outcome(h, sid, bid, bad[i].oc, before, false, &l))
			fail_msg("mode %d: no %s", bad[i].mode, fg_loadsig_counter_names[bad[i].oc]);
		print_message("%s: %s\n", fg_loadsig_counter_names[bad[i].oc], l.last_error);
		assert_non_null(strstr(l.last_error, bad[i].why));
		assert_int_equal(fg_health_is_up(h, sid, bid), 1);
		/* back to good: fresh again */
		w.mode = M_OK;
		assert_true(wait_outcome(h, sid, bid, FG_LS_scrapes_ok, l.ls[FG_LS_scrapes_ok],
					 true, &l));
	}
	/* absent: nobody listens */
	worker_stop(&w);
	assert_true(wait_outcome(h, sid, bid, FG_LS_scrape_connect, l.ls[FG_LS_scrape_connect],
				 false, &l));
	assert_non_null(strstr(l.last_error, "refused"));
	assert_true(l.ever);

	/* JSON carries the signal */
	struct fg_json_writer jw;

	fg_jw_init(&jw, 0);
	fg_health_to_json(h, &jw);
	assert_false(fg_jw_error(&jw));
	assert_non_null(strstr(jw.buf, "\"load\":{\"fresh\":false"));
	assert_non_null(strstr(jw.buf, "\"vllm:num_requests_waiting\":9"));
	assert_non_null(strstr(jw.buf, "\"scrape_connect\":"));
	fg_jw_fini(&jw);

	/* a metrics check never marks the backend down */
	assert_int_equal(fg_health_is_up(h, sid, bid), 1);
	assert_int_equal(__atomic_load_n(&calls, __ATOMIC_RELAXED), 0);
	fg_health_destroy(h);
	fg_config_free(&cfg);
}

/* A stale age shorter than the time since the last good scrape makes a
 * fresh-looking signal stale without any failed scrape counted. */
static void test_metrics_ages(void **state)
{
	(void)state;
	struct worker w = { .mode = M_OK, .waiting = 1, .running = 1 };

	assert_int_equal(worker_start(&w, 0), 0);
	char text[512];

	snprintf(text, sizeof(text),
		 "service 10.0.0.1:80/tcp {\n health metrics {\n  port %u;\n"
		 "  interval 1s;\n  timeout 100ms;\n  stale 1s;\n }\n backend 127.0.0.1;\n}\n",
		 w.port);
	struct fg_config cfg;

	assert_int_equal(fg_config_parse(text, strlen(text), "m", &cfg, NULL), 0);
	assert_int_equal(fg_config_assign_ids(&cfg, NULL), 0);
	struct fg_health_params hp = { .set_health = rec_cb };
	struct fg_health *h;

	assert_int_equal(fg_health_create(&hp, &cfg, &h), 0);
	assert_int_equal(fg_health_start(h), 0);
	uint32_t sid = cfg.services[0].id, bid = cfg.services[0].backends[0].id;
	struct fg_health_load l;

	assert_true(wait_outcome(h, sid, bid, FG_LS_scrapes_ok, 0, true, &l));
	/* the worker hangs from now on: the next scrape times out, and
	 * before it the signal ages */
	w.mode = M_SILENT;
	bool aged = false;

	for (int i = 0; i < 1000 && !aged; i++) {
		fg_health_load(h, sid, bid, &l);
		aged = !l.fresh;
		usleep(5000);
	}
	assert_true(aged);
	assert_true(l.age_ms > l.stale_ms || l.ls[FG_LS_scrape_timeout] > 0);
	fg_health_destroy(h);
	worker_stop(&w);
	fg_config_free(&cfg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_metrics_signal),
		cmocka_unit_test(test_metrics_ages),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
