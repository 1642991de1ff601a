/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Config file parser and validator: the full example parses; every kind of
 * invalid field is rejected with file:line and a reason; several problems
 * are reported together; dump -> parse is the identity; ids are stable.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fg_config_parse.h"
#include "fg_proto.h"

static const char *g_full; /* path of full.conf (argv[1]) */

static void test_full_example(void **state)
{
	(void)state;
	struct fg_cfg_err ev[16];
	struct fg_cfg_errs e = { .v = ev, .max = 16 };
	struct fg_config c;
	int rc = fg_config_load(g_full, &c, &e);
	for (unsigned i = 0; i < e.n && i < e.max; i++)
		print_error("%s:%u: %s\n", ev[i].file, ev[i].line, ev[i].msg);
	assert_int_equal(rc, 0);
	assert_int_equal(c.n_services, 4);
	assert_int_equal(c.n_ports, 2);
	assert_int_equal(c.n_neigh, 2);
	assert_int_equal(c.ct_capacity, 1048576);
	assert_int_equal(c.ct_nat_capacity, 524288);
	assert_int_equal(c.flood_rate, 125000);
	assert_int_equal(c.ct_timeouts_ms[fg_flow_state_lookup("ESTABLISHED")], 900000);
	assert_int_equal(c.ct_timeouts_ms[fg_flow_state_lookup("UDP_STREAM")], 120000);
	const struct fg_service_cfg *s = &c.services[0];
	assert_string_equal(s->name, "infer");
	assert_int_equal(s->mode, FG_MODE_DSR_GUE);
	assert_int_equal(s->health.type, FG_HC_HTTP);
	assert_int_equal(s->health.port, 8080);
	assert_int_equal(s->health.timeout_ms, 500);
	assert_string_equal(s->health.path, "/health");
	assert_int_equal(s->n_backends, 4);
	assert_true(s->backends[2].drained);
	assert_int_equal(s->backends[2].weight, 50);
	assert_int_equal(s->backends[3].addr.family, AF_INET6);
	assert_int_equal(s->backends[3].src.family, AF_INET);
	assert_int_equal(c.services[1].mode, FG_MODE_NAT);
	assert_int_equal(c.services[1].sched, FG_SCHED_LC);
	assert_int_equal(c.services[1].on_fail, FG_FAIL_RESET);
	assert_int_equal(c.services[1].backends[1].port, 8443);
	assert_int_equal(c.services[2].vip.family, AF_INET6);
	assert_int_equal(c.services[2].name[0], 0);
	assert_int_equal(c.services[3].proto, IPPROTO_UDP);
	assert_int_equal(c.services[3].backends[0].weight, 1); /* default */
	assert_int_equal(c.ports[0].mac[5], 1);
	assert_int_equal(c.neigh[1].port, 1);
	fg_config_free(&c);
}

/* One row per kind of invalid field: the text, the line the error must
 * carry and a substring of the reason. */
struct bad_case {
	const char *text;
	unsigned int line;
	const char *reason;
};

#define SVC(body) "service 10.0.0.1:80/tcp {\n" body "\n}\n"

static const struct bad_case bad_cases[] = {
	{ "bogus 1;\n", 1, "unknown keyword 'bogus'" },
	{ "\n\ngue_port 70000;\n", 3, "gue_port" },
	{ "gue_port x;\n", 1, "not an integer" },
	{ "control_socket relative.sock;\n", 1, "absolute path" },
	{ "control_socket_ro ro.sock group g;\n", 1, "absolute path" },
	{ "control_socket_ro /run/ro.sock;\n", 1, "PATH group GROUP" },
	{ "control_socket_ro /run/ro.sock owner g;\n", 1, "group name or number" },
	{ "control_socket_ro /run/ro.sock group \"a b\";\n", 1, "group name or number" },
	{ "control_socket /run/x.sock;\ncontrol_socket_ro /run/x.sock group g;\n", 0,
	  "a path of its own" },
	{ "conntrack {\n capacity 10;\n}\n", 2, "capacity" },
	{ "conntrack {\n nat_capacity 1000;\n}\n", 2, "nat_capacity" },
	{ "conntrack {\n timeout estab 5s;\n}\n", 2, "unknown state" },
	{ "conntrack {\n timeout established 5;\n}\n", 2, "not a duration" },
	{ "conntrack {\n timeout established 5parsecs;\n}\n", 2, "not a duration" },
	{ "conntrack {\n flood_rate -1;\n}\n", 2, "not an integer" },
	{ "conntrack {\n sizes 1;\n}\n", 2, "unknown keyword" },
	{ "port p0 {\n mac 02:00:00:00:00;\n}\n", 2, "MAC" },
	{ "port p0 {\n local 10.0.0.999;\n}\n", 2, "not an IPv4 or IPv6" },
	{ "port p0 {\n gateway fd00::1;\n}\n", 2, "must be an IPv4" },
	{ "port p0 {\n gateway6 10.0.0.1;\n}\n", 2, "must be an IPv6" },
	{ "port p0 {\n vlan 4095;\n}\n", 2, "vlan" },
	{ "port p0 {}\nport p0 {}\n", 2, "defined twice" },
	{ "port bad/name {}\n", 1, "name" },
	{ "neighbour 10.0.0.1 zz:00:00:00:00:00;\n", 1, "MAC" },
	{ "neighbour 10.0.0.1 02:00:00:00:00:01 port p9;\n", 1, "not defined" },
	{ "neighbour 10.0.0.1;\n", 1, "takes IP MAC" },
	{ "service 10.0.0.1:80/sctp {\n}\n", 1, "VIP:PORT/PROTO" },
	{ "service 10.0.0.1/tcp {\n}\n", 1, "VIP:PORT/PROTO" },
	{ "service 10.0.0.1:80/tcp;\n", 1, "needs a { } block" },
	{ "service b@d 10.0.0.1:80/tcp {\n}\n", 1, "name 'b@d'" },
	{ SVC(" mode turbo;"), 2, "unknown mode" },
	{ SVC(" scheduler rr;"), 2, "unknown scheduler" },
	{ SVC(" on_fail maybe;"), 2, "unknown policy" },
	{ SVC(" maglev_size 65536;"), 1, "not prime" },
	{ SVC(" maglev_size 2;\n backend 10.1.0.1;\n backend 10.1.0.2;\n backend 10.1.0.3;"), 1,
	  "smaller than" },
	{ SVC(" gue_port 0;"), 2, "gue_port" },
	{ SVC(" colour blue;"), 2, "unknown keyword 'colour'" },
	{ SVC(" health icmp;"), 2, "unknown check type" },
	{ SVC(" health http {\n  interval 5;\n }"), 3, "not a duration" },
	{ SVC(" health http {\n  interval 5ms;\n }"), 3, "out of range" },
	{ SVC(" health http {\n  timeout 2s;\n  interval 1s;\n }"), 1, "<= the interval" },
	{ SVC(" health http {\n  rise 0;\n }"), 3, "rise" },
	{ SVC(" health http {\n  fall 1000;\n }"), 3, "fall" },
	{ SVC(" health http {\n  path health;\n }"), 3, "must start with '/'" },
	{ SVC(" health http {\n  expect 99;\n }"), 3, "expect" },
	{ SVC(" health tcp {\n  path /x;\n }"), 3, "only for 'health http'" },
	{ SVC(" health http {\n  port 0;\n }"), 3, "port" },
	{ SVC(" backend nothost;"), 2, "not ADDR" },
	{ SVC(" backend 10.1.0.1 weight 65536;"), 2, "0..65535" },
	{ SVC(" backend 10.1.0.1 weight;"), 2, "unexpected 'weight'" },
	{ SVC(" backend 10.1.0.1 heavy;"), 2, "unexpected 'heavy'" },
	{ SVC(" backend 10.1.0.1 src nowhere;"), 2, "src" },
	{ SVC(" backend 10.1.0.1:8080;"), 2, "cannot change the destination port" },
	{ SVC(" backend fd00::1;"), 2, "address family differs" },
	{ SVC(" backend 10.1.0.1;\n backend 10.1.0.1;"), 3, "listed twice" },
	{ SVC("") SVC(""), 4, "defined twice" },
	{ "service a 10.0.0.1:80/tcp {\n}\nservice a 10.0.0.2:80/tcp {\n}\n", 3, "duplicate name" },
	{ "port p0 {\n local 10.0.0.2;\n}\nservice 10.0.0.1:80/tcp {\n mode nat;\n}\n"
	  "service [fd00::1]:80/tcp {\n mode nat;\n}\n", 7, "needs a local IPv6" },
	{ SVC(" mode nat;\n backend 10.1.0.1 src 10.0.0.2;"), 3, "DSR modes only" },
	/* health metrics / maglev-load (issue 12) */
	{ SVC(" scheduler maglev-load;"), 1, "needs 'health metrics" },
	{ SVC(" health metrics {\n  preset tgi;\n }"), 3, "unknown preset" },
	{ SVC(" health metrics {\n  series a 1;\n  preset vllm;\n }"), 4, "before the 'series'" },
	{ SVC(" health metrics {\n  series a b c;\n }"), 3, "weight 'b'" },
	{ SVC(" health metrics {\n  series a 1 or;\n }"), 3, "series NAME" },
	{ SVC(" health metrics {\n  series a 0.0001;\n }"), 3, "at most 3 decimals" },
	{ SVC(" health metrics {\n  series a;\n  series b;\n  series c;\n  series d;\n"
	      "  series e;\n }"), 7, "at most 4 series" },
	{ SVC(" health metrics {\n  select model_name;\n }"), 3, "select" },
	{ SVC(" health metrics {\n  series \"a b\";\n }"), 3, "not a Prometheus metric name" },
	{ SVC(" health metrics {\n  select \"a=\\\"x\\\" b\";\n }"), 3, "select" },
	{ SVC(" health metrics {\n  saturate -1;\n }"), 3, "saturate" },
	{ SVC(" health metrics {\n  margin x;\n }"), 3, "margin" },
	{ SVC(" health metrics {\n  stale 100ms;\n }"), 1, "stale (100ms) must be >=" },
	{ SVC(" health metrics {\n  expect 200;\n }"), 3, "only for 'health http'" },
	{ SVC(" health tcp {\n  preset vllm;\n }"), 3, "unknown keyword 'preset'" },
	/* sync (issue 35) */
	{ "sync {\n key /k;\n}\n", 0, "needs 'listen ADDR:PORT node ID;'" },
	{ "sync {\n listen 10.0.0.1:7 node 1;\n}\n", 0, "needs 'key FILE;'" },
	{ "sync {\n listen 10.0.0.1 node 1;\n key /k;\n}\n", 2, "is not ADDR:PORT" },
	{ "sync {\n listen 10.0.0.1:7 node 0;\n key /k;\n}\n", 2, "in 1..4294967295" },
	{ "sync {\n listen 10.0.0.1:7 id 1;\n key /k;\n}\n", 2, "expected 'node ID'" },
	{ "sync {\n listen 10.0.0.1:7 node 1;\n key /k;\n peer b 10.0.0.2:7 node 1;\n}\n", 0,
	  "this node's id" },
	{ "sync {\n listen 10.0.0.1:7 node 1;\n key /k;\n peer b 10.0.0.2:7 node 2;\n"
	  " peer b 10.0.0.3:7 node 3;\n}\n", 0, "share a name or node id" },
	{ "sync {\n listen 10.0.0.1:7 node 1;\n key k;\n}\n", 3, "absolute path" },
	{ "sync {\n listen 10.0.0.1:7 node 1;\n key /k;\n dsr maybe;\n}\n", 4, "on or off" },
	{ "sync {\n listen 10.0.0.1:7 node 1;\n key /k;\n rate 10;\n}\n", 4, "rate" },
	{ "sync {\n listen 10.0.0.1:7 node 1;\n key /k;\n nat 10.9.9.9;\n}\n", 0,
	  "no port's local address" },
	{ "sync {\n listen 10.0.0.1:7 node 1;\n key /k;\n peer b 10.0.0.2:7 node 2 nat 10.9.9.9;\n}\n",
	  0, "no port's local address here" },
	{ "sync {\n listen 10.0.0.1:7 node 1;\n key /k;\n peer b 10.0.0.2:7 node 2 via 10.9.9.9;\n}\n",
	  4, "expected 'nat ADDR...'" },
	{ "sync {\n listen 10.0.0.1:7 node 1;\n key /k;\n peers 1;\n}\n", 4,
	  "unknown keyword 'peers' in sync" },
	/* syntax */
	{ "service 10.0.0.1:80/tcp {\n mode nat\n}\n", 2, "missing ';'" },
	{ "service 10.0.0.1:80/tcp {\n mode nat;\n", 3, "missing '}'" },
	{ "}\n", 1, "without a matching" },
	{ ";\n", 1, "stray ';'" },
	{ "{\n", 1, "without a keyword" },
	{ "control_socket \"/tmp/x;\n", 1, "unterminated quoted" },
	{ "gue_port 1\x01;\n", 1, "control character" },
};

static void test_bad_fields(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]); i++) {
		const struct bad_case *b = &bad_cases[i];
		struct fg_cfg_err ev[8];
		struct fg_cfg_errs e = { .v = ev, .max = 8 };
		struct fg_config c;
		int rc = fg_config_parse(b->text, strlen(b->text), "t.conf", &c, &e);
		fg_config_free(&c);
		if (rc != -EINVAL || e.n == 0)
			fail_msg("case %zu: accepted (rc %d):\n%s", i, rc, b->text);
		bool found = false;
		for (unsigned k = 0; k < e.n && k < e.max; k++)
			if (ev[k].line == b->line && strstr(ev[k].msg, b->reason) &&
			    !strcmp(ev[k].file, "t.conf"))
				found = true;
		if (!found) {
			for (unsigned k = 0; k < e.n && k < e.max; k++)
				print_error("  got %s:%u: %s\n", ev[k].file, ev[k].line, ev[k].msg);
			fail_msg("case %zu: no error at line %u with '%s'", i, b->line, b->reason);
		}
	}
}

static void test_many_errors(void **state)
{
	(void)state;
	const char *t =
		"gue_port 0;\n"                       /* 1 */
		"conntrack { capacity 1; }\n"         /* 2 */
		"service 10.0.0.1:80/tcp {\n"         /* 3 */
		" mode nope;\n"                       /* 4 */
		" backend 10.1.0.1 weight 99999;\n"   /* 5 */
		" backend 10.1.0.2:81;\n"             /* 6 */
		"}\n"
		"what ever;\n";                       /* 8 */
	struct fg_cfg_err ev[16];
	struct fg_cfg_errs e = { .v = ev, .max = 16 };
	struct fg_config c;
	assert_int_equal(fg_config_parse(t, strlen(t), "m.conf", &c, &e), -EINVAL);
	fg_config_free(&c);
	unsigned lines[] = { 1, 2, 4, 5, 6, 8 };
	for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
		bool found = false;
		for (unsigned k = 0; k < e.n && k < e.max; k++)
			found |= ev[k].line == lines[i];
		if (!found)
			fail_msg("no error reported for line %u (%u errors)", lines[i], e.n);
	}
	assert_true(e.n >= 6);
	/* more errors than the array holds: counted, not written past */
	struct fg_cfg_err one[2];
	struct fg_cfg_errs e2 = { .v = one, .max = 2 };
	assert_int_equal(fg_config_parse(t, strlen(t), "m.conf", &c, &e2), -EINVAL);
	fg_config_free(&c);
	assert_int_equal(e2.n, e.n);
}

static void test_round_trip(void **state)
{
	(void)state;
	struct fg_config a, b;
	struct fg_cfg_err ev[8];
	struct fg_cfg_errs e = { .v = ev, .max = 8 };
	assert_int_equal(fg_config_load(g_full, &a, &e), 0);
	assert_int_equal(fg_config_assign_ids(&a, NULL), 0);
	char *text = NULL;
	assert_int_equal(fg_config_dump_str(&a, &text), 0);
	int rc = fg_config_parse(text, strlen(text), "dump", &b, &e);
	for (unsigned i = 0; i < e.n && i < e.max; i++)
		print_error("%s:%u: %s\n", ev[i].file, ev[i].line, ev[i].msg);
	assert_int_equal(rc, 0);
	assert_true(fg_config_equal(&a, &b));
	/* and the dump of the re-parsed config is the same text */
	assert_int_equal(fg_config_assign_ids(&b, &a), 0);
	char *text2 = NULL;
	assert_int_equal(fg_config_dump_str(&b, &text2), 0);
	assert_string_equal(text, text2);
	free(text);
	free(text2);
	/* a change is seen by fg_config_equal */
	b.services[0].backends[1].weight++;
	assert_false(fg_config_equal(&a, &b));
	fg_config_free(&a);
	fg_config_free(&b);
}

/* The sync block (issue 35): parsed, dumped, parsed back equal; a change
 * of it is seen by fg_config_equal and needs a restart. */
static void test_sync_config(void **state)
{
	(void)state;
	const char *t =
		"port net_null0 { local 10.0.0.1 10.0.0.2 fd00::3; }\n"
		"sync {\n"
		"    listen 10.0.0.1:7870 node 1;\n"
		"    nat 10.0.0.1;\n"
		"    peer lb2 10.0.0.2:7870 node 2 nat 10.0.0.2;\n"
		"    peer lb3 [fd00::3]:7870 node 3 nat fd00::3;\n"
		"    key /etc/flowgate/sync.key;\n"
		"    dsr on;\n"
		"    rate 50000;\n"
		"}\n";
	struct fg_cfg_err ev[8];
	struct fg_cfg_errs e = { .v = ev, .max = 8 };
	struct fg_config a, b;
	char *text = NULL, msg[256];

	assert_int_equal(fg_config_parse(t, strlen(t), "sync.conf", &a, &e), 0);
	assert_true(a.sync.on);
	assert_int_equal(a.sync.node, 1);
	assert_int_equal(a.sync.port, 7870);
	assert_int_equal(a.sync.n_nat, 1);
	assert_int_equal(a.sync.n_peers, 2);
	assert_int_equal(a.sync.peers[1].node, 3);
	assert_int_equal(a.sync.peers[1].addr.family, AF_INET6);
	assert_int_equal(a.sync.peers[1].n_nat, 1);
	assert_true(a.sync.dsr);
	assert_int_equal(a.sync.rate, 50000);
	assert_int_equal(fg_config_dump_str(&a, &text), 0);
	assert_int_equal(fg_config_parse(text, strlen(text), "dump", &b, &e), 0);
	assert_true(fg_config_equal(&a, &b));
	assert_int_equal(fg_config_restart_diff(&a, &b, msg, sizeof(msg)), 0);
	b.sync.peers[0].node = 9;
	assert_false(fg_config_equal(&a, &b));
	assert_int_equal(fg_config_restart_diff(&a, &b, msg, sizeof(msg)), 1);
	assert_non_null(strstr(msg, "sync"));
	free(text);
	fg_config_free(&a);
	fg_config_free(&b);
}

/* health metrics: defaults, presets, custom series, selector; the dump
 * parses back to an equal config (issue 12). */
static void test_metrics_config(void **state)
{
	(void)state;
	static const char t[] =
		"service infer 10.0.0.1:8000/tcp {\n"
		" scheduler maglev-load;\n"
		" health metrics {\n"
		"  port 9000;\n"
		"  select model_name \"llama-3 \\\"8b\\\"\";\n"
		"  saturate 16;\n"
		"  margin 0.5;\n"
		" }\n"
		" backend 10.1.0.1;\n"
		"}\n"
		"service s2 10.0.0.2:8000/tcp {\n"
		" scheduler maglev-load;\n"
		" health metrics { preset sglang; interval 100ms; timeout 50ms; stale 1s; }\n"
		" backend 10.1.0.1;\n"
		"}\n"
		"service s3 10.0.0.3:8000/tcp {\n"
		" health metrics { preset triton; }\n"
		" backend 10.1.0.1;\n"
		"}\n"
		"service s4 10.0.0.4:8000/tcp {\n"
		" health metrics { series my:queue 1.5 or my:q2; series my:kv 0.002; path /m; }\n"
		" backend 10.1.0.1;\n"
		"}\n";
	struct fg_cfg_err ev[8];
	struct fg_cfg_errs e = { .v = ev, .max = 8 };
	struct fg_config a, b;
	int rc = fg_config_parse(t, strlen(t), "m.conf", &a, &e);

	for (unsigned i = 0; i < e.n && i < e.max; i++)
		print_error("%s:%u: %s\n", ev[i].file, ev[i].line, ev[i].msg);
	assert_int_equal(rc, 0);
	const struct fg_service_cfg *s = &a.services[0];
	const struct fg_health_cfg *h = &s->health;

	assert_int_equal(s->sched, FG_SCHED_MAGLEV_LOAD);
	assert_int_equal(h->type, FG_HC_METRICS);
	assert_int_equal(h->interval_ms, 250);
	assert_int_equal(h->timeout_ms, 200);
	assert_int_equal(h->port, 9000);
	assert_string_equal(h->path, "/metrics");
	assert_int_equal(h->metrics.preset, FG_LOAD_PRESET_VLLM);
	assert_int_equal(h->metrics.n_series, 3);
	assert_string_equal(h->metrics.series[0].name, "vllm:num_requests_waiting");
	assert_string_equal(h->metrics.series[1].name, "vllm:num_requests_running");
	assert_string_equal(h->metrics.series[2].name, "vllm:kv_cache_usage_perc");
	assert_string_equal(h->metrics.series[2].alt, "vllm:gpu_cache_usage_perc");
	assert_string_equal(h->metrics.select, "model_name=\"llama-3 \\\"8b\\\"\"");
	assert_int_equal(h->metrics.saturate_milli, 16000);
	assert_int_equal(h->metrics.margin_milli, 500);
	h = &a.services[1].health;
	assert_int_equal(h->metrics.preset, FG_LOAD_PRESET_SGLANG);
	assert_string_equal(h->metrics.series[0].name, "sglang:num_queue_reqs");
	assert_string_equal(h->metrics.series[1].name, "sglang:token_usage");
	assert_int_equal(h->metrics.stale_ms, 1000);
	assert_int_equal(h->interval_ms, 100);
	h = &a.services[2].health;
	assert_int_equal(h->metrics.n_series, 1);
	assert_string_equal(h->metrics.series[0].name, "nv_inference_pending_request_count");
	h = &a.services[3].health;
	assert_int_equal(h->metrics.preset, FG_LOAD_PRESET_CUSTOM);
	assert_int_equal(h->metrics.n_series, 2);
	assert_int_equal(h->metrics.series[0].weight_milli, 1500);
	assert_string_equal(h->metrics.series[0].alt, "my:q2");
	assert_int_equal(h->metrics.series[1].weight_milli, 2);
	assert_string_equal(h->path, "/m");

	assert_int_equal(fg_config_assign_ids(&a, NULL), 0);
	char *text = NULL;

	assert_int_equal(fg_config_dump_str(&a, &text), 0);
	e.n = 0;
	rc = fg_config_parse(text, strlen(text), "dump", &b, &e);
	for (unsigned i = 0; i < e.n && i < e.max; i++)
		print_error("%s:%u: %s\n%s", ev[i].file, ev[i].line, ev[i].msg, text);
	assert_int_equal(rc, 0);
	assert_true(fg_config_equal(&a, &b));
	b.services[3].health.metrics.series[1].weight_milli++;
	assert_false(fg_config_equal(&a, &b));
	free(text);
	fg_config_free(&a);
	fg_config_free(&b);
}

/* Values the dump writes in quotes keep their '"' and '\': a control
 * socket path and health paths holding both dump to text that parses back
 * to the same config, and dumps again to the same text.  Found by
 * tests/control/fuzz_ctl: a socket path with four backslashes came back
 * with two. */
static void test_dump_quoting(void **state)
{
	(void)state;
	static const char t[] =
		"control_socket /run/fg/a\\\\\\\\b;\n"
		"service web 10.0.0.1:80/tcp {\n"
		"    health http { path \"/h\\\"q\\\\x\"; expect 200; }\n"
		"    backend 10.1.0.1;\n"
		"}\n"
		"service lm 10.0.0.2:80/tcp {\n"
		"    health metrics { path \"/m\\\\\\\"\"; preset vllm; }\n"
		"    backend 10.1.0.2;\n"
		"}\n";
	struct fg_cfg_err ev[8];
	struct fg_cfg_errs e = { .v = ev, .max = 8 };
	struct fg_config a, b;
	char *text = NULL, *text2 = NULL;

	assert_int_equal(fg_config_parse(t, strlen(t), "quoting", &a, &e), 0);
	assert_string_equal(a.control_socket, "/run/fg/a\\\\\\\\b");
	assert_string_equal(a.services[0].health.path, "/h\"q\\x");
	assert_string_equal(a.services[1].health.path, "/m\\\"");
	assert_int_equal(fg_config_assign_ids(&a, NULL), 0);
	assert_int_equal(fg_config_dump_str(&a, &text), 0);
	e.n = 0;
	if (fg_config_parse(text, strlen(text), "dump", &b, &e) != 0) {
		for (unsigned i = 0; i < e.n && i < e.max; i++)
			print_error("%s:%u: %s\n", ev[i].file, ev[i].line, ev[i].msg);
		print_error("%s", text);
		fail();
	}
	assert_string_equal(b.control_socket, a.control_socket);
	assert_string_equal(b.services[0].health.path, a.services[0].health.path);
	assert_string_equal(b.services[1].health.path, a.services[1].health.path);
	assert_true(fg_config_equal(&a, &b));
	assert_int_equal(fg_config_assign_ids(&b, &a), 0);
	assert_int_equal(fg_config_dump_str(&b, &text2), 0);
	assert_string_equal(text, text2);
	free(text);
	free(text2);
	fg_config_free(&a);
	fg_config_free(&b);
}

static void test_stable_ids(void **state)
{
	(void)state;
	const char *t1 = "service 10.0.0.1:80/tcp {\n backend 10.1.0.1;\n backend 10.1.0.2;\n"
			 " backend 10.1.0.3;\n}\nservice 10.0.0.2:80/tcp {\n backend 10.1.0.1;\n}\n";
	const char *t2 = "service 10.0.0.3:80/tcp {\n backend 10.1.0.9;\n}\n"
			 "service 10.0.0.1:80/tcp {\n backend 10.1.0.3 weight 7;\n backend 10.1.0.4;\n"
			 " backend 10.1.0.1;\n}\n";
	struct fg_config a, b, c;
	assert_int_equal(fg_config_parse(t1, strlen(t1), "a", &a, NULL), 0);
	assert_int_equal(fg_config_assign_ids(&a, NULL), 0);
	/* every backend id unique across the config, services distinct */
	assert_int_not_equal(a.services[0].id, a.services[1].id);
	assert_int_not_equal(a.services[0].backends[0].id, a.services[1].backends[0].id);
	assert_int_equal(fg_config_parse(t2, strlen(t2), "b", &b, NULL), 0);
	assert_int_equal(fg_config_assign_ids(&b, &a), 0);
	/* 10.0.0.1:80 kept its id; its backends .3 and .1 kept theirs */
	assert_int_equal(b.services[1].id, a.services[0].id);
	assert_int_equal(b.services[1].backends[0].id, a.services[0].backends[2].id);
	assert_int_equal(b.services[1].backends[2].id, a.services[0].backends[0].id);
	/* new backend and new service got ids never used before */
	uint32_t nb = b.services[1].backends[1].id;
	for (uint32_t s = 0; s < a.n_services; s++)
		for (uint32_t k = 0; k < a.services[s].n_backends; k++)
			assert_int_not_equal(nb, a.services[s].backends[k].id);
	assert_int_not_equal(b.services[0].id, a.services[0].id);
	assert_int_not_equal(b.services[0].id, a.services[1].id); /* removed: not reused */
	/* removing then re-adding a backend gives a new id */
	assert_int_equal(fg_config_parse(t1, strlen(t1), "c", &c, NULL), 0);
	assert_int_equal(fg_config_assign_ids(&c, &b), 0);
	assert_int_not_equal(c.services[0].backends[1].id, a.services[0].backends[1].id);
	/* the backend with the highest id removed, then a backend added: it
	 * never gets the removed one's id (the dataplane keeps that id for
	 * the removed backend's flows, fg_lb.c tombstones) */
	const char *t3 = "service 10.0.0.1:80/tcp {\n backend 10.1.0.1;\n backend 10.1.0.2;\n"
			 " backend 10.1.0.3;\n}\n";
	struct fg_config d, e;
	assert_int_equal(fg_config_parse(t3, strlen(t3), "d", &d, NULL), 0);
	assert_int_equal(fg_config_assign_ids(&d, &c), 0);
	assert_int_equal(fg_config_parse(t1, strlen(t1), "e", &e, NULL), 0);
	assert_int_equal(fg_config_assign_ids(&e, &d), 0);
	for (uint32_t s = 0; s < c.n_services; s++)
		for (uint32_t k = 0; k < c.services[s].n_backends; k++)
			assert_int_not_equal(e.services[1].backends[0].id,
					     c.services[s].backends[k].id);
	fg_config_free(&a);
	fg_config_free(&b);
	fg_config_free(&c);
	fg_config_free(&d);
	fg_config_free(&e);
}

static void test_edit_helpers(void **state)
{
	(void)state;
	struct fg_config c;
	fg_config_init(&c);
	struct fg_service_cfg *s = malloc(sizeof(*s));
	fg_service_init(s);
	assert_int_equal(fg_service_spec_parse("10.0.0.9:8080/udp", &s->vip, &s->port, &s->proto), 0);
	snprintf(s->name, sizeof(s->name), "svc");
	assert_int_equal(fg_config_add_service(&c, s), 0);
	assert_int_equal(fg_config_add_service(&c, s), -EEXIST);
	assert_int_equal(fg_config_find_service(&c, "10.0.0.9:8080/udp"), 0);
	assert_int_equal(fg_config_find_service(&c, "svc"), 0);
	assert_int_equal(fg_config_find_service(&c, "10.0.0.9:8080/tcp"), -ENOENT);
	assert_int_equal(fg_config_find_service(&c, "other"), -ENOENT);
	assert_int_equal(fg_config_validate(&c, "x", NULL), 0);
	struct fg_config d;
	assert_int_equal(fg_config_copy(&d, &c), 0);
	assert_true(d.services != c.services);
	assert_true(fg_config_equal(&c, &d));
	fg_config_del_service(&d, 0);
	assert_int_equal(d.n_services, 0);
	fg_config_free(&d);
	fg_config_free(&c);
	free(s);
	/* unreadable file: errno, one message */
	struct fg_cfg_err ev[2];
	struct fg_cfg_errs e = { .v = ev, .max = 2 };
	assert_int_equal(fg_config_load("/nonexistent/x.conf", &c, &e), -ENOENT);
	assert_int_equal(e.n, 1);
	assert_non_null(strstr(ev[0].msg, "cannot open"));
	fg_config_free(&c);
}

/* fg_config_restart_diff: one row per edit of the running config; which
 * edits need a restart, and that the message names the field. */
static void edit_capacity(struct fg_config *c) { c->ct_capacity = 1024; }
static void edit_flood(struct fg_config *c) { c->flood_rate = 7; }
static void edit_nat_capacity(struct fg_config *c) { c->ct_nat_capacity = 2048; }
static void edit_timeout(struct fg_config *c)
{
	c->ct_timeouts_ms[fg_flow_state_lookup("UDP")] = 5000;
}
static void edit_port_name(struct fg_config *c) { strcpy(c->ports[1].name, "net_x9"); }
static void edit_port_vlan(struct fg_config *c) { c->ports[0].vlan = 7; }
static void edit_port_gone(struct fg_config *c) { c->n_ports = 1; }
static void edit_socket(struct fg_config *c) { strcpy(c->control_socket, "/tmp/o.sock"); }
static void edit_socket_ro(struct fg_config *c) { strcpy(c->control_socket_ro_group, "adm"); }
static void edit_backend(struct fg_config *c) { c->services[0].backends[0].weight = 3; }
static void edit_neigh(struct fg_config *c) { c->neigh[0].mac[5] ^= 1; }
static void edit_gue(struct fg_config *c) { c->gue_port = 7000; }
static void edit_no_services(struct fg_config *c) { c->n_services = 0; }

static const struct restart_case {
	const char *name;
	void (*edit)(struct fg_config *c);
	int rc;
	const char *msg_has;
} restart_cases[] = {
	{ "capacity", edit_capacity, 1, "conntrack capacity: 1048576 running, 1024" },
	{ "nat_capacity", edit_nat_capacity, 1,
	  "conntrack nat_capacity: 524288 running, 2048" },
	{ "flood_rate", edit_flood, 1, "conntrack flood_rate: 125000 running, 7" },
	{ "timeout", edit_timeout, 1, "conntrack timeout udp: 30000ms running, 5000ms" },
	{ "port name", edit_port_name, 1, "port 1: name 'net_af_packet1' running, 'net_x9'" },
	{ "port vlan", edit_port_vlan, 1, "port 0 ('net_af_packet0'): its settings" },
	{ "port removed", edit_port_gone, 1, "ports: 2 running, 1" },
	{ "control_socket", edit_socket, 1, "control_socket: '/run/flowgate/flowgate.sock'" },
	{ "control_socket_ro", edit_socket_ro, 1,
	  "control_socket_ro: '/run/flowgate/flowgate-ro.sock' group 'flowgate-mon' running" },
	{ "backend weight (live)", edit_backend, 0, NULL },
	{ "neighbour (live)", edit_neigh, 0, NULL },
	{ "gue_port (live)", edit_gue, 0, NULL },
	{ "no services (live)", edit_no_services, 0, NULL },
};

static void test_restart_diff(void **state)
{
	(void)state;
	struct fg_config run;
	assert_int_equal(fg_config_load(g_full, &run, NULL), 0);
	for (size_t i = 0; i < sizeof(restart_cases) / sizeof(restart_cases[0]); i++) {
		const struct restart_case *c = &restart_cases[i];
		struct fg_config next;
		char msg[512] = "";
		assert_int_equal(fg_config_copy(&next, &run), 0);
		c->edit(&next);
		int rc = fg_config_restart_diff(&run, &next, msg, sizeof(msg));
		if (rc != c->rc || (c->msg_has && !strstr(msg, c->msg_has)))
			fail_msg("case '%s': rc %d (want %d), '%s' (want '%s')", c->name, rc, c->rc,
				 msg, c->msg_has ? c->msg_has : "");
		fg_config_free(&next);
	}
	fg_config_free(&run);
}

int main(int argc, char **argv)
{
	g_full = argc > 1 ? argv[1] : "tests/control/full.conf";
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_full_example),
		cmocka_unit_test(test_bad_fields),
		cmocka_unit_test(test_many_errors),
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_sync_config),
		cmocka_unit_test(test_dump_quoting),
		cmocka_unit_test(test_metrics_config),
		cmocka_unit_test(test_stable_ids),
		cmocka_unit_test(test_edit_helpers),
		cmocka_unit_test(test_restart_diff),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
