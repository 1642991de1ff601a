/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The daemon's option table (dataplane/fg_opts.c), without EAL:
 * - every option that takes a value refuses a bad one, and the message
 *   names the option (issue 14);
 * - config options follow the config file's rules (same parser): the
 *   ranges the file enforces are enforced on the command line;
 * - a good command line builds the config the file would;
 * - seeded random garbage never crashes the parser and is either refused
 *   with a message naming an option or accepted.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "fg_opts.h"

struct run {
	int rc;
	char out[8192];
	struct fg_opts o;
};

/* Parses the NULL-terminated words after a "flowgate" argv[0]. */
static void run_words(struct run *r, const char *const *words)
{
	char *argv[64];
	int argc = 0;
	FILE *f = fmemopen(r->out, sizeof(r->out) - 1, "w");

	argv[argc++] = (char *)"flowgate";
	for (; *words && argc < 63; words++)
		argv[argc++] = (char *)*words;
	argv[argc] = NULL;
	memset(r->out, 0, sizeof(r->out));
	assert_non_null(f);
	r->rc = fg_opts_parse(argc, argv, &r->o, f);
	fclose(f);
}

#define RUN(r, ...) run_words(r, (const char *const[]){__VA_ARGS__, NULL})

static void every_option_names_itself(void **state)
{
	unsigned int n = fg_opts_count(), tested = 0;

	(void)state;
	assert_true(n >= 20);
	for (unsigned int i = 0; i < n; i++) {
		const char *name = fg_opts_name(i), *bad = fg_opts_bad_example(i);
		char opt[64], want[80];
		struct run r;

		if (bad == NULL)
			continue;       /* a flag: no value to get wrong */
		if (bad[0] == '=') {
			snprintf(opt, sizeof(opt), "--%s%s", name, bad);
			RUN(&r, opt);
		} else if (!strcmp(name, "backend")) {
			/* a backend belongs to a service */
			snprintf(opt, sizeof(opt), "--%s", name);
			RUN(&r, "--service", "10.0.0.1:80", opt, bad);
		} else {
			snprintf(opt, sizeof(opt), "--%s", name);
			RUN(&r, opt, bad);
		}
		snprintf(want, sizeof(want), "flowgate: --%s", name);
		if (r.rc >= 0 || strstr(r.out, want) == NULL)
			fail_msg("--%s '%s': rc %d, message: %s", name, bad, r.rc, r.out);
		fg_opts_free(&r.o);
		tested++;
	}
	assert_true(tested >= 18);
}

/* The reported drift (issue 14): each row was accepted before. */
static void drift_rows(void **state)
{
	static const struct { const char *w[6]; const char *want; } rows[] = {
		{{"--service", "10.0.0.1:80,on-fail=never"}, "expected keep or reset"},
		{{"--service", "10.0.0.1:99999"}, "is not VIP:PORT/PROTO"},
		{{"--workers", "abc"}, "1..16"},
		{{"--mbufs", "xyz"}, "--mbufs xyz"},
		{{"--ct-capacity", "10"}, "1024..1073741824"},
		{{"--service", "10.0.0.1:80", "--backend", "10.0.1.1:0x50"}, "--backend"},
		{{"--flood-rate", "1e6"}, "--flood-rate 1e6"},
		{{"--port-mac", "16,02:00:00:00:00:01"}, "0..15"},
		{{"--service", "10.0.0.1:80,gue-port=0"}, "1..65535"},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct run r;

		run_words(&r, rows[i].w);
		if (r.rc != -EINVAL || strstr(r.out, rows[i].want) == NULL)
			fail_msg("row %zu (%s %s): rc %d: %s", i, rows[i].w[0],
				 rows[i].w[1], r.rc, r.out);
		fg_opts_free(&r.o);
	}
}

static void good_line_builds_config(void **state)
{
	struct run r;

	(void)state;
	RUN(&r, "-s", "/tmp/fg-opts-test.sock", "--workers", "2", "--mbufs", "4095",
	    "--ct-capacity", "4096", "--port-mac", "0,02:00:00:00:00:01",
	    "--local", "10.0.0.1", "--local", "fd00::1,port=1", "--gateway", "10.0.0.254",
	    "--gateway", "fd00::fe", "--neigh", "10.0.0.254,02:00:00:00:00:fe",
	    "--service", "10.100.0.1:80/udp,mode=nat,sched=lc,name=web,on-fail=reset",
	    "--backend", "10.1.0.1:8080,weight=3", "--backend", "10.1.0.2,drained,id=0",
	    "--service", "[fd00:100::1]:443,mode=dsr-gue,gue-port=7000",
	    "--backend", "[fd00:1::1]", "--mtu", "9000,port=1", "--sw-rss", "on",
	    "--icmp-rate", "0", "--ctl-idle-timeout", "0", "--log-level", "debug");
	if (r.rc != 0)
		fail_msg("rc %d: %s", r.rc, r.out);
	const struct fg_config *c = &r.o.cfg;
	assert_ptr_equal(r.o.dp.cfg, c);
	assert_int_equal(c->n_services, 2);
	assert_string_equal(c->services[0].name, "web");
	assert_int_equal(c->services[0].mode, FG_MODE_NAT);
	assert_int_equal(c->services[0].sched, FG_SCHED_LC);
	assert_int_equal(c->services[0].on_fail, FG_FAIL_RESET);
	assert_int_equal(c->services[0].proto, IPPROTO_UDP);
	assert_int_equal(c->services[0].n_backends, 2);
	assert_int_equal(c->services[0].backends[0].port, 8080);
	assert_int_equal(c->services[0].backends[0].weight, 3);
	assert_true(c->services[0].backends[1].drained);
	assert_int_equal(c->services[0].backends[1].id, 0);
	assert_int_equal(c->services[1].mode, FG_MODE_DSR_GUE);
	assert_int_equal(c->services[1].gue_port, 7000);
	assert_int_equal(c->n_ports, 2);
	assert_string_equal(c->ports[0].name, "");
	assert_int_equal(c->ports[0].mac[5], 1);
	assert_int_equal(c->ports[0].n_local, 1);
	assert_int_equal(c->ports[0].gateway.family, AF_INET);
	assert_int_equal(c->ports[0].gateway6.family, AF_INET6);
	assert_int_equal(c->ports[1].n_local, 1);
	assert_int_equal(c->ports[1].local[0].family, AF_INET6);
	assert_int_equal(c->n_neigh, 1);
	assert_int_equal(c->ct_capacity, 4096);
	assert_int_equal(r.o.dp.n_workers, 2);
	assert_int_equal(r.o.dp.n_mbufs, 4095);
	assert_int_equal(r.o.dp.sw_rss, 1);
	assert_int_equal(r.o.dp.icmp_rate, 0);
	assert_int_equal(r.o.dp.ctl_idle_ms, -1);
	assert_int_equal(r.o.dp.mtu[0], 0);
	assert_int_equal(r.o.dp.mtu[1], 9000);
	assert_string_equal(r.o.socket_path, "/tmp/fg-opts-test.sock");
	assert_true(r.o.dp.cli_socket);
	assert_int_equal(r.o.log_level, 8);
	fg_opts_free(&r.o);
}

/* -c FILE with config options is refused (they would be ignored). */
static void file_and_options_conflict(void **state)
{
	char path[] = "/tmp/fg-opts-XXXXXX";
	int fd = mkstemp(path);
	FILE *f = fdopen(fd, "w");
	struct run r;

	(void)state;
	fputs("service web 10.0.0.1:80/tcp { backend 10.1.0.1; }\n", f);
	fclose(f);
	RUN(&r, "-c", path, "--service", "10.0.0.2:80");
	assert_int_equal(r.rc, -EINVAL);
	assert_non_null(strstr(r.out, "with -c"));
	fg_opts_free(&r.o);
	RUN(&r, "-c", path, "--ct-capacity", "2048");
	assert_int_equal(r.rc, 0);
	assert_int_equal(r.o.cfg.ct_capacity, 2048);
	assert_true(r.o.dp.cli_ct_capacity);
	assert_int_equal(r.o.cfg.n_services, 1);
	fg_opts_free(&r.o);
	unlink(path);
}

/* Seeded garbage: no crash; refusals name an option. */
static void random_words(void **state)
{
	static const char *const opts[] = { "--service", "--backend", "--local",
		"--gateway", "--neigh", "--port-mac", "--mtu", "--workers",
		"--ct-capacity", "--flood-rate", "--metrics", "--sw-rss" };
	static const char alphabet[] = "0123456789abcdef:.,=[]/ \"\\;{}-xyz";
	unsigned int seed = 4711;

	(void)state;
	for (int it = 0; it < 3000; it++) {
		char vals[4][24];
		const char *w[10];
		int n = 0;
		struct run r;

		for (int k = 0; k < 4; k++) {
			int len = (int)(rand_r(&seed) % 20);

			for (int j = 0; j < len; j++)
				vals[k][j] = alphabet[rand_r(&seed) % (sizeof(alphabet) - 1)];
			vals[k][len] = '\0';
			w[n++] = opts[rand_r(&seed) % (sizeof(opts) / sizeof(opts[0]))];
			w[n++] = vals[k];
		}
		w[n] = NULL;
		run_words(&r, w);
		if (r.rc < 0 && strstr(r.out, "flowgate: --") == NULL)
			fail_msg("iteration %d: rc %d without an option named: %s", it, r.rc,
				 r.out);
		fg_opts_free(&r.o);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_option_names_itself),
		cmocka_unit_test(drift_rows),
		cmocka_unit_test(good_line_builds_config),
		cmocka_unit_test(file_and_options_conflict),
		cmocka_unit_test(random_words),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
