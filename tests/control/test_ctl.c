/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Control server + fgctl against the fake dataplane (tests/control/
 * fake_ops.c): every verb with --json output parsed back, error cases and
 * exit codes, and hostile clients on the socket (random bytes, oversized,
 * truncated, unknown version, never reading, too many clients) while other
 * clients keep being served.
 *
 * argv[1] = full.conf, argv[2] = the fgctl binary.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fake_ops.h"
#include "fg_health.h"

static const char *g_full, *g_fgctl;
static char g_dir[64], g_sock[100], g_out[160], g_err[160];

struct env {
	struct fake_dp dp;
	struct fg_ctl_server *srv;
	struct fg_health *health;
};

static int setup(void **state)
{
	struct env *e = calloc(1, sizeof(*e));
	fake_dp_init(&e->dp, 4);
	struct fg_cfg_errs errs = { 0 };
	if (fg_config_load(g_full, &e->dp.cfg, &errs) || fg_config_assign_ids(&e->dp.cfg, NULL))
		return -1;
	fake_dp_add_flows(&e->dp, 1000);
	/* health checker created (not started): answers "health" with every
	 * checked backend up */
	struct fg_health_params hp = { .set_health = fake_set_health, .ctx = &e->dp };
	if (fg_health_create(&hp, &e->dp.cfg, &e->health))
		return -1;
	struct fg_ctl_server_params p = {
		.socket_path = g_sock, .ops = &fake_ops, .ctx = &e->dp, .health = e->health,
		.max_clients = 8, .max_request = 64 << 10, .max_outbuf = 1 << 20,
		.write_timeout_ms = 500,
	};
	int rc = fg_ctl_server_create(&p, &e->srv);
	if (rc) {
		fprintf(stderr, "server create: %s\n", strerror(-rc));
		return -1;
	}
	if (fg_ctl_server_start(e->srv))
		return -1;
	*state = e;
	return 0;
}

static int teardown(void **state)
{
	struct env *e = *state;
	fg_ctl_server_destroy(e->srv);
	fg_health_destroy(e->health);
	fake_dp_fini(&e->dp);
	free(e);
	return 0;
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return strdup("");
	size_t cap = 1 << 16, n = 0;
	char *b = malloc(cap);
	size_t k;
	while ((k = fread(b + n, 1, cap - n - 1, f)) > 0) {
		n += k;
		if (cap - n < 2)
			b = realloc(b, cap *= 2);
	}
	b[n] = 0;
	fclose(f);
	return b;
}

/* Runs fgctl; returns its exit code; *out / *err get stdout / stderr. */
static int fgctl(char **out, char **err, const char *fmt, ...)
{
	char args[1024], cmd[2048];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(args, sizeof(args), fmt, ap);
	va_end(ap);
	snprintf(cmd, sizeof(cmd), "%s -s %s %s >%s 2>%s", g_fgctl, g_sock, args, g_out, g_err);
	int st = system(cmd);
	char *o = slurp(g_out), *e = slurp(g_err);
	if (out)
		*out = o;
	else
		free(o);
	if (err)
		*err = e;
	else
		free(e);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

/* stdout must be exactly one JSON document; returns it. */
static struct fg_json_doc *json_out(const char *out)
{
	char err[200];
	size_t n = strlen(out);
	while (n && out[n - 1] == '\n')
		n--;
	struct fg_json_doc *d = fg_json_parse(out, n, 256u << 20, err, sizeof(err));
	if (!d)
		fail_msg("fgctl --json output is not JSON (%s): %.300s", err, out);
	return d;
}

static const struct fg_json *jget(const struct fg_json *o, const char *k)
{
	const struct fg_json *v = fg_json_get(o, k);
	if (!v)
		fail_msg("no \"%s\" in the output", k);
	return v;
}

static uint64_t ju(const struct fg_json *o, const char *k)
{
	uint64_t v;
	if (fg_json_get_u64(o, k, &v))
		fail_msg("\"%s\" is not an unsigned number", k);
	return v;
}

/* ---- every verb, --json parsed back ------------------------------------ */

static void test_services(void **state)
{
	struct env *e = *state;
	char *out, *err;
	assert_int_equal(fgctl(&out, NULL, "service list --json"), 0);
	struct fg_json_doc *d = json_out(out);
	const struct fg_json *r = fg_json_root(d);
	assert_int_equal(r->type, FG_JSON_ARR);
	assert_int_equal(r->len, 4);
	const struct fg_json *s0 = r->child;
	const char *str;
	assert_int_equal(fg_json_get_str(s0, "service", &str), 0);
	assert_string_equal(str, "10.0.0.100:80/tcp");
	assert_int_equal(jget(s0, "backends")->len, 4);
	fg_json_free(d);
	free(out);

	unsigned applies = e->dp.applies;
	assert_int_equal(fgctl(&out, NULL, "service add 10.0.0.200:8080/tcp --mode nat --sched lc "
			       "--name web2 --json"), 0);
	d = json_out(out);
	assert_int_equal(fg_json_get_str(fg_json_root(d), "mode", &str), 0);
	assert_string_equal(str, "nat");
	assert_int_equal(fg_json_get_str(fg_json_root(d), "sched", &str), 0);
	assert_string_equal(str, "lc");
	assert_true(ju(fg_json_root(d), "id") > 0);
	fg_json_free(d);
	free(out);
	assert_int_equal(e->dp.applies, applies + 1);
	assert_int_equal(e->dp.cfg.n_services, 5);

	/* duplicate: daemon error, exit 1, message and hint */
	assert_int_equal(fgctl(NULL, &err, "service add 10.0.0.200:8080/tcp"), 1);
	assert_non_null(strstr(err, "already exists"));
	assert_non_null(strstr(err, "hint:"));
	free(err);
	/* --json error output is JSON too */
	assert_int_equal(fgctl(&out, NULL, "--json service add 10.0.0.200:8080/tcp"), 1);
	d = json_out(out);
	bool ok = true;
	assert_int_equal(fg_json_get_bool(fg_json_root(d), "ok", &ok), 0);
	assert_false(ok);
	fg_json_free(d);
	free(out);
	/* usage errors: exit 2, nothing sent */
	assert_int_equal(fgctl(NULL, &err, "service add 10.0.0.200/tcp"), 2);
	assert_non_null(strstr(err, "VIP:PORT/PROTO"));
	free(err);
	assert_int_equal(fgctl(NULL, NULL, "service add 10.0.0.201:80/tcp --mode fast"), 2);
	assert_int_equal(fgctl(NULL, NULL, "service add 10.0.0.201:80/tcp --sched rr"), 2);
	assert_int_equal(fgctl(NULL, NULL, "service add"), 2);
	assert_int_equal(fgctl(NULL, NULL, "service frob"), 2);
	assert_int_equal(fgctl(NULL, NULL, "service add 10.0.0.201:80/tcp --bogus"), 2);
	assert_int_equal(e->dp.applies, applies + 1);

	/* del by name and by spec; unknown service: exit 1 */
	assert_int_equal(fgctl(&out, NULL, "service del web2 --json"), 0);
	free(out);
	assert_int_equal(e->dp.cfg.n_services, 4);
	assert_int_equal(fgctl(NULL, &err, "service del 10.0.0.200:8080/tcp"), 1);
	assert_non_null(strstr(err, "no service"));
	free(err);
	/* IPv6 service */
	assert_int_equal(fgctl(&out, NULL, "service add [fd00::200]:443/tcp --mode dsr-gue --json"), 0);
	free(out);
	assert_int_equal(fgctl(&out, NULL, "service del [fd00::200]:443/tcp"), 0);
	free(out);

	/* human table */
	assert_int_equal(fgctl(&out, NULL, "service list"), 0);
	assert_non_null(strstr(out, "SERVICE"));
	assert_non_null(strstr(out, "  -> 10.1.0.10:80"));
	assert_non_null(strstr(out, "[fd01::13]:80"));
	free(out);
}

static void test_backends(void **state)
{
	struct env *e = *state;
	char *out, *err;
	struct fg_json_doc *d;
	assert_int_equal(fgctl(&out, NULL, "backend add infer 10.1.0.50 --weight 5 --json"), 0);
	d = json_out(out);
	uint64_t id = ju(fg_json_root(d), "id");
	assert_int_equal(ju(fg_json_root(d), "weight"), 5);
	fg_json_free(d);
	free(out);

	assert_int_equal(fgctl(&out, NULL, "backend weight 10.0.0.100:80/tcp 10.1.0.50 9 --json"), 0);
	d = json_out(out);
	assert_int_equal(ju(fg_json_root(d), "weight"), 9);
	assert_true(ju(fg_json_root(d), "id") == id); /* stable id across changes */
	fg_json_free(d);
	free(out);

	bool dr = false;
	assert_int_equal(fgctl(&out, NULL, "backend drain infer 10.1.0.50 --json"), 0);
	d = json_out(out);
	assert_int_equal(fg_json_get_bool(fg_json_root(d), "drained", &dr), 0);
	assert_true(dr);
	fg_json_free(d);
	free(out);
	assert_int_equal(fgctl(&out, NULL, "backend undrain infer 10.1.0.50 --json"), 0);
	d = json_out(out);
	assert_int_equal(fg_json_get_bool(fg_json_root(d), "drained", &dr), 0);
	assert_false(dr);
	fg_json_free(d);
	free(out);

	assert_int_equal(fgctl(&out, NULL, "backend list infer --json"), 0);
	d = json_out(out);
	assert_int_equal(fg_json_root(d)->len, 1);
	assert_int_equal(jget(fg_json_root(d)->child, "backends")->len, 5);
	fg_json_free(d);
	free(out);
	assert_int_equal(fgctl(&out, NULL, "backend list --json"), 0);
	d = json_out(out);
	assert_int_equal(fg_json_root(d)->len, 4);
	fg_json_free(d);
	free(out);

	/* errors */
	assert_int_equal(fgctl(NULL, &err, "backend add infer 10.1.0.50"), 1);
	assert_non_null(strstr(err, "already in service"));
	free(err);
	assert_int_equal(fgctl(NULL, &err, "backend add infer 10.1.0.60:8080"), 1);
	assert_non_null(strstr(err, "cannot change the destination port")); /* DSR */
	free(err);
	assert_int_equal(fgctl(NULL, &err, "backend add 10.0.0.100:80/tcp fd01::99"), 0);
	free(err);
	assert_int_equal(fgctl(NULL, &err, "backend add dns fd01::99"), 1); /* dsr-ipip family */
	assert_non_null(strstr(err, "family"));
	free(err);
	assert_int_equal(fgctl(NULL, NULL, "backend weight infer 10.1.0.50 70000"), 2);
	assert_int_equal(fgctl(NULL, NULL, "backend weight infer 10.1.0.50"), 2);
	assert_int_equal(fgctl(NULL, NULL, "backend add infer not-an-ip"), 2);
	assert_int_equal(fgctl(NULL, NULL, "backend drain infer"), 2);
	assert_int_equal(fgctl(NULL, &err, "backend drain infer 10.9.9.9"), 1);
	assert_non_null(strstr(err, "is not in service"));
	free(err);
	assert_int_equal(fgctl(NULL, &err, "backend add nosuch 10.1.0.70"), 1);
	assert_non_null(strstr(err, "no service named"));
	free(err);

	assert_int_equal(fgctl(&out, NULL, "backend del infer 10.1.0.50 --json"), 0);
	free(out);
	assert_int_equal(fgctl(NULL, NULL, "backend del infer 10.1.0.50"), 1);
	assert_int_equal(fgctl(NULL, NULL, "backend del infer [fd01::99]"), 0);
	assert_int_equal(e->dp.cfg.services[0].n_backends, 4);
	/* the surviving backends kept their ids through all of this */
	struct fg_config fresh;
	assert_int_equal(fg_config_load(g_full, &fresh, NULL), 0);
	assert_int_equal(fg_config_assign_ids(&fresh, NULL), 0);
	for (uint32_t b = 0; b < 4; b++)
		assert_int_equal(e->dp.cfg.services[0].backends[b].id,
				 fresh.services[0].backends[b].id);
	fg_config_free(&fresh);
}

static void test_flows(void **state)
{
	struct env *e = *state;
	char *out, *err;
	struct fg_json_doc *d;
	assert_int_equal(fgctl(&out, &err, "flows list --json"), 0);
	d = json_out(out);
	assert_int_equal(fg_json_root(d)->type, FG_JSON_ARR);
	assert_int_equal(fg_json_root(d)->len, e->dp.n_flows);
	struct fg_flow_info fi;
	assert_int_equal(fg_flow_info_from_json(fg_json_root(d)->child, &fi), 0);
	fg_json_free(d);
	free(out);
	free(err);

	struct {
		const char *args;
		size_t expect;
	} cases[] = {
		{ "--limit 5", 5 },
		{ "--service infer", 250 },
		{ "--service 10.0.0.102:53/udp", 250 },
		{ "--state established", 666 },
		{ "--state SYN_SENT --core 0", 0 },  /* computed below */
		{ "--core 1", 250 },
		{ "--backend 10.1.0.10", 0 },        /* computed below */
		{ "--service infer --backend 10.1.0.10 --limit 3", 3 },
	};
	/* expectations from the fake table itself */
	struct fg_flow_filter f;
	fg_flow_filter_init(&f);
	f.state = fg_flow_state_lookup("SYN_SENT");
	f.core = 0;
	for (size_t i = 0; i < e->dp.n_flows; i++)
		cases[4].expect += fg_flow_filter_match(&f, &e->dp.flows[i]);
	fg_flow_filter_init(&f);
	f.has_backend = true;
	fg_addr_parse("10.1.0.10", &f.backend);
	for (size_t i = 0; i < e->dp.n_flows; i++)
		cases[6].expect += fg_flow_filter_match(&f, &e->dp.flows[i]);
	assert_true(cases[4].expect > 0 && cases[6].expect > 0);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_int_equal(fgctl(&out, NULL, "flows list %s --json", cases[i].args), 0);
		d = json_out(out);
		if (fg_json_root(d)->len != cases[i].expect)
			fail_msg("flows list %s: %u flows, expected %zu", cases[i].args,
				 fg_json_root(d)->len, cases[i].expect);
		fg_json_free(d);
		free(out);
	}
	/* human listing: header, rows, count on stderr */
	assert_int_equal(fgctl(&out, &err, "flows list --limit 2"), 0);
	assert_non_null(strstr(out, "BACKEND"));
	assert_non_null(strstr(out, "ESTABLISHED"));
	assert_non_null(strstr(err, "2 flow entries shown"));
	free(out);
	free(err);
	assert_int_equal(fgctl(NULL, NULL, "flows list --state BOGUS"), 2);
	assert_int_equal(fgctl(NULL, NULL, "flows list --core x"), 2);
	assert_int_equal(fgctl(NULL, NULL, "flows list --limit 0"), 2);
	assert_int_equal(fgctl(NULL, &err, "flows list --service nosuch"), 1);
	assert_non_null(strstr(err, "no service"));
	free(err);

	/* get: exact tuple, IPv4 and IPv6 */
	char src[80], dst[80];
	const struct fg_flow_info *f1 = &e->dp.flows[1], *f2 = &e->dp.flows[2];
	fg_endpoint_format(&f1->src, f1->sport, src, sizeof(src));
	fg_endpoint_format(&f1->dst, f1->dport, dst, sizeof(dst));
	assert_int_equal(fgctl(&out, NULL, "flows get %s %s tcp --json", src, dst), 0);
	d = json_out(out);
	assert_int_equal(fg_json_root(d)->len, 1);
	assert_int_equal(fg_flow_info_from_json(fg_json_root(d)->child, &fi), 0);
	assert_int_equal(fi.sport, f1->sport);
	assert_true(fg_addr_equal(&fi.backend, &f1->backend));
	fg_json_free(d);
	free(out);
	assert_int_equal(f2->src.family, AF_INET6);
	fg_endpoint_format(&f2->src, f2->sport, src, sizeof(src));
	fg_endpoint_format(&f2->dst, f2->dport, dst, sizeof(dst));
	assert_int_equal(fgctl(&out, NULL, "flows get '%s' '%s' tcp --json", src, dst), 0);
	d = json_out(out);
	assert_int_equal(fg_json_root(d)->len, 1);
	fg_json_free(d);
	free(out);
	assert_int_equal(fgctl(NULL, &err, "flows get 1.2.3.4:5 10.0.0.100:80 tcp"), 1);
	assert_non_null(strstr(err, "no tracked flow"));
	free(err);
	assert_int_equal(fgctl(NULL, NULL, "flows get 1.2.3.4 10.0.0.100:80 tcp"), 2);
	assert_int_equal(fgctl(NULL, NULL, "flows get 1.2.3.4:5 10.0.0.100:80 sctp"), 2);

	/* count; one flow holds a NAT port (the fake's others none) */
	pthread_mutex_lock(&e->dp.lock);
	e->dp.flows[0].nat_addr.family = AF_INET;
	pthread_mutex_unlock(&e->dp.lock);
	assert_int_equal(fgctl(&out, NULL, "flows count --per-core --json"), 0);
	d = json_out(out);
	assert_int_equal(ju(fg_json_root(d), "total"), e->dp.n_flows);
	assert_int_equal(jget(fg_json_root(d), "per_core")->len, 4);
	assert_int_equal(ju(jget(fg_json_root(d), "per_state"), "ESTABLISHED"), 666);
	/* the NAT region's fill */
	assert_int_equal(ju(fg_json_root(d), "nat"), 1);
	assert_int_equal(ju(fg_json_root(d), "nat_capacity"), 4 * 4096);
	fg_json_free(d);
	free(out);
	assert_int_equal(fgctl(&out, NULL, "flows count"), 0);
	assert_non_null(strstr(out, "total 1000"));
	assert_non_null(strstr(out, "nat 1 of 16384 (0.0%)"));
	free(out);
	pthread_mutex_lock(&e->dp.lock);
	e->dp.flows[0].nat_addr.family = 0;
	pthread_mutex_unlock(&e->dp.lock);

	/* delete: filter required, or --all */
	assert_int_equal(fgctl(NULL, &err, "flows delete"), 2);
	assert_non_null(strstr(err, "--all"));
	free(err);
	size_t before = e->dp.n_flows;
	assert_int_equal(fgctl(&out, NULL, "flows delete --state SYN_SENT --json"), 0);
	d = json_out(out);
	assert_int_equal(ju(fg_json_root(d), "deleted"), 334);
	fg_json_free(d);
	free(out);
	assert_int_equal(e->dp.n_flows, before - 334);
	assert_int_equal(fgctl(&out, NULL, "flows delete --service infer --limit 10"), 0);
	assert_non_null(strstr(out, "10 flow entries deleted"));
	free(out);
	assert_int_equal(fgctl(&out, NULL, "flows delete --all --json"), 0);
	free(out);
	assert_int_equal(e->dp.n_flows, 0);
	fake_dp_add_flows(&e->dp, 1000);
}

static void test_watch(void **state)
{
	struct env *e = *state;
	/* run fgctl as our own child so that we can stop it like Ctrl-C */
	int pp[2];
	assert_int_equal(pipe(pp), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		dup2(pp[1], 1);
		close(pp[0]);
		execl(g_fgctl, g_fgctl, "-s", g_sock, "flows", "watch", "--json", (char *)NULL);
		_exit(127);
	}
	close(pp[1]);
	FILE *p = fdopen(pp[0], "r");
	assert_non_null(p);
	/* wait until the server registered the watcher (polled; 60 s is the
	 * hang guard: fgctl may take seconds to start on a loaded machine) */
	for (int i = 0; i < 6000 && !e->dp.watching; i++)
		usleep(10000);
	assert_true(e->dp.watching);
	fake_dp_push_event(&e->dp, "NEW", &e->dp.flows[0]);
	fake_dp_push_event(&e->dp, "DESTROY", &e->dp.flows[1]);
	char line[2048];
	for (int k = 0; k < 2; k++) {
		assert_non_null(fgets(line, sizeof(line), p));
		struct fg_json_doc *d = json_out(line);
		const char *ev;
		assert_int_equal(fg_json_get_str(fg_json_root(d), "event", &ev), 0);
		assert_string_equal(ev, k ? "DESTROY" : "NEW");
		struct fg_flow_info fi;
		assert_int_equal(fg_flow_info_from_json(jget(fg_json_root(d), "flow"), &fi), 0);
		fg_json_free(d);
	}
	/* the watcher goes away: event reporting is switched off */
	kill(pid, SIGINT);
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	fclose(p);
	for (int i = 0; i < 6000 && e->dp.watching; i++)
		usleep(10000);
	assert_false(e->dp.watching);
}

static void test_stats_health_ping(void **state)
{
	(void)state;
	char *out, *err;
	struct fg_json_doc *d;
	assert_int_equal(fgctl(&out, NULL, "stats --json"), 0);
	d = json_out(out);
	assert_int_equal(ju(fg_json_root(d), "rx_packets"), 1000);
	assert_null(fg_json_get(fg_json_root(d), "per_core"));
	fg_json_free(d);
	free(out);
	assert_int_equal(fgctl(&out, NULL, "stats --per-core --service infer --json"), 0);
	d = json_out(out);
	assert_int_equal(jget(fg_json_root(d), "per_core")->len, 4);
	assert_int_equal(jget(fg_json_root(d), "services")->len, 1);
	fg_json_free(d);
	free(out);
	assert_int_equal(fgctl(&out, NULL, "stats --per-core"), 0);
	assert_non_null(strstr(out, "rx_packets"));
	assert_non_null(strstr(out, "TRUNCATED"));
	free(out);
	assert_int_equal(fgctl(NULL, &err, "stats --service 10.9.9.9:1/tcp"), 1);
	assert_non_null(strstr(err, "no service"));
	free(err);

	assert_int_equal(fgctl(&out, NULL, "health --json"), 0);
	d = json_out(out);
	const struct fg_json *bs = jget(fg_json_root(d), "backends");
	assert_int_equal(bs->len, 6); /* infer 4 + nat-api 2 */
	const char *st;
	assert_int_equal(fg_json_get_str(bs->child, "state", &st), 0);
	assert_string_equal(st, "up");
	fg_json_free(d);
	free(out);
	assert_int_equal(fgctl(&out, NULL, "health"), 0);
	assert_non_null(strstr(out, "LAST ERROR"));
	assert_non_null(strstr(out, "10.1.0.10:8080"));
	free(out);

	assert_int_equal(fgctl(&out, NULL, "ping --json"), 0);
	d = json_out(out);
	assert_int_equal(ju(fg_json_root(d), "protocol"), FG_PROTO_VERSION);
	assert_true(ju(jget(fg_json_root(d), "control"), "requests") > 0);
	fg_json_free(d);
	free(out);
}

static void test_config_verbs(void **state)
{
	struct env *e = *state;
	char *out, *err;
	struct fg_json_doc *d;
	/* show: the text parses back to the running config */
	assert_int_equal(fgctl(&out, NULL, "config show --json"), 0);
	d = json_out(out);
	const char *text;
	assert_int_equal(fg_json_get_str(fg_json_root(d), "text", &text), 0);
	struct fg_config c;
	assert_int_equal(fg_config_parse(text, strlen(text), "shown", &c, NULL), 0);
	assert_true(fg_config_equal(&c, &e->dp.cfg));
	fg_config_free(&c);
	fg_json_free(d);
	free(out);
	assert_int_equal(fgctl(&out, NULL, "config show"), 0);
	assert_non_null(strstr(out, "service infer 10.0.0.100:80/tcp {"));
	free(out);

	/* check works offline */
	char cmd[600];
	snprintf(cmd, sizeof(cmd), "%s -s /nonexistent/sock config check %s >/dev/null 2>&1",
		 g_fgctl, g_full);
	int st = system(cmd);
	assert_int_equal(WEXITSTATUS(st), 0);
	char bad[200];
	snprintf(bad, sizeof(bad), "%s/bad.conf", g_dir);
	FILE *f = fopen(bad, "w");
	fputs("service 10.0.0.1:80/tcp {\n mode fast;\n backend 10.1.0.1 weight -3;\n}\n", f);
	fclose(f);
	assert_int_equal(fgctl(NULL, &err, "config check %s", bad), 1);
	char want[300];
	snprintf(want, sizeof(want), "%s:2: mode", bad);
	assert_non_null(strstr(err, want));
	snprintf(want, sizeof(want), "%s:3: backend weight", bad);
	assert_non_null(strstr(err, want));
	free(err);
	assert_int_equal(fgctl(&out, NULL, "config check %s --json", bad), 1);
	d = json_out(out);
	assert_int_equal(jget(fg_json_root(d), "errors")->len, 2);
	fg_json_free(d);
	free(out);
	assert_int_equal(fgctl(NULL, NULL, "config check"), 2);

	/* apply: invalid -> nothing applied, running config unchanged */
	unsigned applies = e->dp.applies;
	struct fg_config before;
	assert_int_equal(fg_config_copy(&before, &e->dp.cfg), 0);
	assert_int_equal(fgctl(NULL, &err, "config apply %s", bad), 1);
	assert_non_null(strstr(err, "nothing was applied"));
	free(err);
	assert_int_equal(e->dp.applies, applies);
	/* dataplane refuses: error, exit 1 */
	e->dp.fail_apply = -ENOMEM;
	assert_int_equal(fgctl(NULL, &err, "config apply %s", g_full), 1);
	assert_non_null(strstr(err, "apply failed"));
	free(err);
	assert_true(fg_config_equal(&before, &e->dp.cfg));
	/* valid: applied, ids of surviving backends unchanged (the file keeps
	 * the running restart-only settings: everything before the services) */
	char good[200];
	snprintf(good, sizeof(good), "%s/good.conf", g_dir);
	char *full = slurp(g_full);
	char *svc = strstr(full, "\n# service [NAME]");
	assert_non_null(svc);
	svc[1] = 0;
	f = fopen(good, "w");
	fputs(full, f);
	fputs("service infer 10.0.0.100:80/tcp {\n mode dsr-gue;\n backend 10.1.0.11 weight 7;\n"
	      " backend 10.1.0.99;\n}\n", f);
	fclose(f);
	free(full);
	assert_int_equal(fgctl(&out, NULL, "config apply %s --json", good), 0);
	d = json_out(out);
	assert_int_equal(ju(fg_json_root(d), "services"), 1);
	fg_json_free(d);
	free(out);
	assert_int_equal(e->dp.applies, applies + 1);
	assert_int_equal(e->dp.cfg.n_services, 1);
	assert_int_equal(e->dp.cfg.services[0].id, before.services[0].id);
	assert_int_equal(e->dp.cfg.services[0].backends[0].id, before.services[0].backends[1].id);
	/* restore */
	assert_int_equal(fgctl(NULL, NULL, "config apply %s", g_full), 0);
	fg_config_free(&before);
}

/*
 * config apply replaces the whole config (issue 9, defect 5): a field that
 * needs a restart is refused by name (exit 1, nothing applied), never shown
 * by 'config show' while the dataplane keeps the old value; live fields are
 * applied; a file without services needs --allow-empty.  Each row edits
 * full.conf (the running config) by replacing every @from with @to.
 */
static const struct apply_case {
	const char *name;
	const char *from, *to;   /* to NULL: cut the text from @from to the end */
	const char *args;        /* extra fgctl arguments */
	int rc;
	const char *err_has;     /* stderr substring (rc != 0) */
} apply_cases[] = {
	{ "ct capacity", "capacity 1048576;", "capacity 1024;", "", 1,
	  "conntrack capacity: 1048576 running, 1024 in the new config: needs a restart" },
	{ "flood_rate", "flood_rate 125000;", "flood_rate 5;", "", 1,
	  "conntrack flood_rate: 125000 running, 5" },
	{ "timeout", "timeout established 15m;", "timeout established 1m;", "", 1,
	  "conntrack timeout established: 900000ms running, 60000ms" },
	{ "renamed port", "net_af_packet1", "net_af_packet7", "", 1,
	  "port 1: name 'net_af_packet1' running, 'net_af_packet7'" },
	{ "port settings", "local fd01::1;", "local fd01::2;", "", 1,
	  "port 1 ('net_af_packet1'): its settings" },
	{ "control_socket", "control_socket /run/flowgate/flowgate.sock;",
	  "control_socket /tmp/elsewhere.sock;", "", 1, "control_socket: '/run/flowgate/flowgate.sock'"
	  " running, '/tmp/elsewhere.sock'" },
	{ "no services", "\n# service [NAME]", NULL, "", 1,
	  "the config has no service: applying it would remove every service" },
	{ "no services, --allow-empty", "\n# service [NAME]", NULL, "--allow-empty", 0, NULL },
	{ "backend (live)", "backend 10.1.0.20;", "backend 10.1.0.21;", "", 0, NULL },
	{ "gue_port (live)", "gue_port 6080;   ", "gue_port 6081;   ", "", 0, NULL },
};

/* @p text with every @p from replaced by @p to (or cut at @p from). */
static char *edit_text(const char *text, const char *from, const char *to)
{
	size_t fl = strlen(from), tl = to ? strlen(to) : 0, n = 0;
	char *out = malloc(strlen(text) * 2 + 64), *o = out;
	const char *p = text, *q;
	while ((q = strstr(p, from))) {
		memcpy(o, p, (size_t)(q - p));
		o += q - p;
		n++;
		if (!to) {
			*o++ = '\n';
			p = q + strlen(q);
			break;
		}
		memcpy(o, to, tl);
		o += tl;
		p = q + fl;
	}
	strcpy(o, p);
	if (!n)
		fail_msg("'%s' not in the text", from);
	return out;
}

static void test_config_apply_fields(void **state)
{
	struct env *e = *state;
	char *full = slurp(g_full), path[200], *err, *out;
	snprintf(path, sizeof(path), "%s/edit.conf", g_dir);
	for (size_t i = 0; i < sizeof(apply_cases) / sizeof(apply_cases[0]); i++) {
		const struct apply_case *c = &apply_cases[i];
		char *text = edit_text(full, c->from, c->to);
		FILE *f = fopen(path, "w");
		fputs(text, f);
		fclose(f);
		free(text);
		struct fg_config before;
		assert_int_equal(fg_config_copy(&before, &e->dp.cfg), 0);
		unsigned applies = e->dp.applies;
		int rc = fgctl(NULL, &err, "config apply %s %s", path, c->args);
		if (rc != c->rc || (c->err_has && !strstr(err, c->err_has)))
			fail_msg("case '%s': exit %d (want %d), stderr: %s (want '%s')", c->name, rc,
				 c->rc, err, c->err_has ? c->err_has : "");
		free(err);
		if (c->rc) {
			/* refused: nothing applied, config show unchanged */
			assert_int_equal(e->dp.applies, applies);
			assert_true(fg_config_equal(&before, &e->dp.cfg));
			assert_int_equal(fgctl(&out, NULL, "config show"), 0);
			struct fg_config shown;
			assert_int_equal(fg_config_parse(out, strlen(out), "shown", &shown, NULL), 0);
			if (!fg_config_equal(&shown, &before))
				fail_msg("case '%s': config show changed after a refused apply", c->name);
			fg_config_free(&shown);
			free(out);
			/* check (daemon running): ok, with the restart note, or the
			 * same refusal for an empty file (check is not apply) */
			rc = fgctl(NULL, &err, "config check %s", path);
			if (c->to) {
				if (rc != 0 || !strstr(err, "takes effect only on a restart"))
					fail_msg("case '%s': config check exit %d, stderr %s", c->name,
						 rc, err);
			}
			free(err);
		} else {
			assert_int_equal(e->dp.applies, applies + 1);
		}
		fg_config_free(&before);
		/* back to full.conf (with --allow-empty if the row emptied it) */
		assert_int_equal(fgctl(NULL, NULL, "config apply %s", g_full), 0);
	}
	free(full);
}

static void test_cli_misc(void **state)
{
	(void)state;
	char *out, *err;
	assert_int_equal(fgctl(&out, NULL, "--help"), 0);
	assert_non_null(strstr(out, "flows list"));
	free(out);
	assert_int_equal(fgctl(NULL, NULL, ""), 2);
	assert_int_equal(fgctl(NULL, NULL, "frobnicate"), 2);
	/* daemon not there: exit 1 with a hint */
	char cmd[600];
	snprintf(cmd, sizeof(cmd), "%s -s %s/none.sock service list 2>%s", g_fgctl, g_dir, g_err);
	int st = system(cmd);
	assert_int_equal(WEXITSTATUS(st), 1);
	err = slurp(g_err);
	assert_non_null(strstr(err, "cannot connect"));
	assert_non_null(strstr(err, "is flowgate running"));
	free(err);
	/* FLOWGATE_SOCKET is honoured */
	snprintf(cmd, sizeof(cmd), "FLOWGATE_SOCKET=%s %s ping >/dev/null 2>&1", g_sock, g_fgctl);
	st = system(cmd);
	assert_int_equal(WEXITSTATUS(st), 0);
}

/* fgctl --timeout (issue 36): the request carries it to the engine's
 * waits on its workers (fg_flow_filter::wait_ms), and fgctl stops waiting
 * on a daemon that does not answer, by how long it waits for the next line,
 * not by how long the whole answer takes. */
static void test_fgctl_timeout(void **state)
{
	struct env *e = *state;
	char path[200], cmd[600];

	assert_int_equal(fgctl(NULL, NULL, "flows list --limit 1"), 0);
	assert_true(e->dp.last_wait_ms == 5 * 60 * 1000);   /* the default */
	assert_int_equal(fgctl(NULL, NULL, "--timeout 2s flows list --limit 1"), 0);
	assert_true(e->dp.last_wait_ms == 2000);
	assert_int_equal(fgctl(NULL, NULL, "flows list --limit 1 --timeout 0"), 0);
	assert_true(e->dp.last_wait_ms == 0);                /* not sent: the engine's */
	assert_int_equal(fgctl(NULL, NULL, "--timeout 100h flows list --limit 1"), 0);
	assert_true(e->dp.last_wait_ms == 24ull * 3600 * 1000); /* capped at a day */
	assert_int_equal(fgctl(NULL, NULL, "--timeout soon ping"), 2);
	assert_int_equal(fgctl(NULL, NULL, "ping --timeout"), 2);
	/* a daemon that takes the request and never answers (a listening
	 * socket nobody accepts on): fgctl gives up and says why */
	snprintf(path, sizeof(path), "%s/silent.sock", g_dir);
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	memcpy(sa.sun_path, path, strlen(path) + 1);
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(fd, 4), 0);
	snprintf(cmd, sizeof(cmd), "%s -s %s --timeout 300ms ping 2>%s", g_fgctl, path, g_err);
	int st = system(cmd);
	assert_int_equal(WEXITSTATUS(st), 1);
	char *err = slurp(g_err);
	assert_non_null(strstr(err, "no answer from flowgate within --timeout"));
	free(err);
	close(fd);
	unlink(path);
}

/* ---- hostile clients ------------------------------------------------------ */

static int raw_connect(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", g_sock);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(fd >= 0);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	return fd;
}

static void send_all(int fd, const void *b, size_t n)
{
	const char *p = b;
	while (n) {
		ssize_t k = send(fd, p, n, MSG_NOSIGNAL);
		if (k <= 0)
			return; /* the server may have dropped us: fine */
		p += k;
		n -= (size_t)k;
	}
}

/* Reads one line (2 s limit).  @return length, 0 on EOF, -1 on timeout. */
static ssize_t read_line(int fd, char *buf, size_t cap)
{
	size_t n = 0;
	while (n + 1 < cap) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		if (poll(&p, 1, 2000) <= 0)
			return -1;
		ssize_t k = recv(fd, buf + n, 1, 0);
		if (k <= 0)
			return 0;
		if (buf[n++] == '\n')
			break;
	}
	buf[n] = 0;
	return (ssize_t)n;
}

/* A fresh client gets a ping answered: the server is alive. */
static void assert_serving(void)
{
	int fd = raw_connect();
	const char *ping = "{\"v\":1,\"id\":42,\"cmd\":\"ping\"}\n";
	send_all(fd, ping, strlen(ping));
	char line[4096];
	assert_true(read_line(fd, line, sizeof(line)) > 0);
	assert_non_null(strstr(line, "\"id\":42,\"ok\":true"));
	close(fd);
}

static void test_bad_input(void **state)
{
	struct env *e = *state;
	char line[4096];
	struct fg_ctl_counters c0, c1;
	fg_ctl_server_counters(e->srv, &c0);

	/* random bytes: error reply, connection keeps working */
	int fd = raw_connect();
	unsigned char rnd[512];
	srand(7);
	for (size_t i = 0; i < sizeof(rnd); i++) {
		rnd[i] = (unsigned char)rand();
		if (rnd[i] == '\n')
			rnd[i] = 'x';
	}
	send_all(fd, rnd, sizeof(rnd));
	send_all(fd, "\n", 1);
	assert_true(read_line(fd, line, sizeof(line)) > 0);
	assert_non_null(strstr(line, "\"ok\":false"));
	assert_non_null(strstr(line, "malformed request"));
	const char *ping = "{\"v\":1,\"id\":5,\"cmd\":\"ping\"}\n";
	send_all(fd, ping, strlen(ping));
	assert_true(read_line(fd, line, sizeof(line)) > 0);
	assert_non_null(strstr(line, "\"ok\":true"));

	/* unknown version, unknown command, truncated JSON, wrong types */
	static const struct {
		const char *req;
		const char *reply_has;
	} rows[] = {
		{ "{\"v\":99,\"id\":1,\"cmd\":\"ping\"}\n", "unsupported protocol version 99" },
		{ "{\"v\":1,\"id\":2,\"cmd\":\"reboot\"}\n", "unknown command" },
		{ "{\"v\":1,\"id\":3,\"cmd\":\"ping\"\n", "malformed request" },
		{ "{\"v\":1,\"id\":4,\"cmd\":\"backend.add\",\"args\":{\"service\":1}}\n",
		  "must be a string" },
		{ "{\"v\":1,\"id\":5,\"cmd\":\"backend.weight\",\"args\":{\"service\":\"infer\","
		  "\"addr\":\"10.1.0.10\",\"weight\":-1}}\n", "0..65535" },
		{ "{\"v\":1,\"id\":6,\"cmd\":\"flows.list\",\"args\":{\"core\":\"x\"}}\n",
		  "must be an integer in 0..127" },
		{ "{\"v\":1,\"id\":7,\"cmd\":\"config.apply\",\"args\":{\"text\":\"bogus;\"}}\n",
		  "unknown keyword" },
		{ "\n", "malformed request" },
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		send_all(fd, rows[i].req, strlen(rows[i].req));
		assert_true(read_line(fd, line, sizeof(line)) > 0);
		if (!strstr(line, "\"ok\":false") || !strstr(line, rows[i].reply_has))
			fail_msg("row %zu: reply %s lacks %s", i, line, rows[i].reply_has);
	}
	close(fd);

	/* truncated: half a request, then hang up */
	fd = raw_connect();
	send_all(fd, "{\"v\":1,\"id\":9,\"cm", 17);
	close(fd);
	assert_serving();

	/* oversized: error reply, then the server closes */
	fd = raw_connect();
	size_t big = (64 << 10) + 100;
	char *b = malloc(big);
	memset(b, 'a', big);
	send_all(fd, b, big);
	free(b);
	assert_true(read_line(fd, line, sizeof(line)) > 0);
	assert_non_null(strstr(line, "exceeds"));
	assert_int_equal(read_line(fd, line, sizeof(line)), 0); /* EOF */
	close(fd);
	assert_serving();

	/* never reads: its further requests wait unread (FG_CTL_QUEUE_MAX),
	 * and it is dropped when its replies stay unread for the write
	 * timeout (500 ms here) */
	int slow = raw_connect();
	int sz = 4096;
	setsockopt(slow, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
	const char *show = "{\"v\":1,\"id\":1,\"cmd\":\"config.show\"}\n";
	for (int i = 0; i < 2000; i++)
		send_all(slow, show, strlen(show));
	for (int i = 0; i < 1500; i++) {
		fg_ctl_server_counters(e->srv, &c1);
		if (c1.write_timeouts > c0.write_timeouts)
			break;
		usleep(20000);
	}
	assert_true(c1.write_timeouts > c0.write_timeouts);
	assert_true(c1.requests < c0.requests + 2000);
	assert_serving();
	close(slow);
	struct fg_ctl_counters c2;
	fg_ctl_server_counters(e->srv, &c2);

	/* never reads during a stream: dropped after the write timeout */
	fake_dp_add_flows(&e->dp, 100000);
	slow = raw_connect();
	setsockopt(slow, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
	const char *list = "{\"v\":1,\"id\":1,\"cmd\":\"flows.list\"}\n";
	send_all(slow, list, strlen(list));
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_serving(); /* waits at most write_timeout_ms (500) behind the stream */
	clock_gettime(CLOCK_MONOTONIC, &t1);
	double waited = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	assert_true(waited < 1.5);
	fg_ctl_server_counters(e->srv, &c1);
	assert_true(c1.write_timeouts > c2.write_timeouts);
	close(slow);
	struct fg_flow_filter all;
	fg_flow_filter_init(&all);
	fake_ops.flows_walk(&all, NULL, NULL, true, &e->dp);
	fake_dp_add_flows(&e->dp, 1000);

	/* too many clients: the extra one is told and closed */
	int many[8];
	for (int i = 0; i < 8; i++)
		many[i] = raw_connect();
	usleep(100000);
	int extra = raw_connect();
	assert_true(read_line(extra, line, sizeof(line)) > 0);
	assert_non_null(strstr(line, "too many control clients"));
	close(extra);
	for (int i = 0; i < 8; i++)
		close(many[i]);
	usleep(100000);
	assert_serving();
	fg_ctl_server_counters(e->srv, &c1);
	assert_true(c1.bad_requests >= c0.bad_requests + 6);
	assert_true(c1.errors >= c0.errors + 9);
	assert_true(c1.oversized == c0.oversized + 1);
	assert_true(c1.rejected_full >= c0.rejected_full + 1);
}

/* ---- idle clients (issue 9, defect 8) ---------------------------------- */

static int connect_path(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(fd >= 0);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	return fd;
}

/* true while the server keeps @p fd open (data waiting counts as open) */
static bool still_open(int fd)
{
	char b;
	ssize_t n = recv(fd, &b, 1, MSG_DONTWAIT | MSG_PEEK);
	return n > 0 || (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK));
}

static int fgctl_at(const char *sock, const char *args)
{
	char cmd[600];
	snprintf(cmd, sizeof(cmd), "%s -s %s %s >/dev/null 2>%s", g_fgctl, sock, args, g_err);
	int st = system(cmd);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

struct idle_case {
	const char *name;
	unsigned int max_clients;   /* 0 = server default (64) */
	int idle_timeout_ms;        /* 0 = server default (30 s) */
	void (*run)(struct env *e, const char *sock, struct fg_ctl_server *srv);
};

/* 70 silent clients against the default cap of 64: fgctl still gets in,
 * by evicting the client idle longest. */
static void idle_case_lockout(struct env *e, const char *sock, struct fg_ctl_server *srv)
{
	int fds[70];
	struct fg_ctl_counters c;
	for (int i = 0; i < 70; i++)
		fds[i] = connect_path(sock);
	usleep((FG_CTL_EVICT_IDLE_MS + 200) * 1000);
	if (fgctl_at(sock, "ping") != 0) {
		char *err = slurp(g_err);
		fail_msg("fgctl ping behind 70 silent clients failed: %s", err);
	}
	fg_ctl_server_counters(srv, &c);
	assert_true(c.evicted_idle >= 1);
	assert_int_equal(c.idle_closed, 0); /* 30 s default not reached */
	for (int i = 0; i < 70; i++)
		close(fds[i]);
}

/* at the cap, a client busy a moment ago is not evicted: the new one is
 * refused instead */
static void idle_case_cap_busy(struct env *e, const char *sock, struct fg_ctl_server *srv)
{
	int fds[4];
	char line[4096];
	struct fg_ctl_counters c;
	for (int i = 0; i < 4; i++)
		fds[i] = connect_path(sock);
	usleep(100000);
	int extra = connect_path(sock);
	assert_true(read_line(extra, line, sizeof(line)) > 0);
	assert_non_null(strstr(line, "too many control clients"));
	close(extra);
	fg_ctl_server_counters(srv, &c);
	assert_int_equal(c.evicted_idle, 0);
	assert_int_equal(c.rejected_full, 1);
	for (int i = 0; i < 4; i++)
		close(fds[i]);
}

/* silent and half-a-request clients are closed after the idle timeout;
 * a client that keeps talking and a watcher are kept */
static void idle_case_timeout(struct env *e, const char *sock, struct fg_ctl_server *srv)
{
	char line[4096];
	struct fg_ctl_counters c;
	int silent = connect_path(sock), partial = connect_path(sock);
	int talker = connect_path(sock), watcher = connect_path(sock);
	const char *watch = "{\"v\":1,\"id\":3,\"cmd\":\"flows.watch\"}\n";
	const char *ping = "{\"v\":1,\"id\":4,\"cmd\":\"ping\"}\n";
	send_all(partial, "{\"v\":1,\"id\":9,\"cm", 17);
	send_all(watcher, watch, strlen(watch));
	/* pings 100 ms apart until the server closes the idle two (polled:
	 * no bound on when; the 2 s timeout is 20 pings, so a loaded machine
	 * must stall this thread 2 s to make the talker look idle) */
	for (int i = 0; i < 600 && (still_open(silent) || still_open(partial)); i++) {
		send_all(talker, ping, strlen(ping));
		assert_true(read_line(talker, line, sizeof(line)) > 0);
		assert_non_null(strstr(line, "\"ok\":true"));
		usleep(100000);
	}
	assert_false(still_open(silent));
	assert_false(still_open(partial));
	assert_true(still_open(talker));
	assert_true(still_open(watcher));
	fg_ctl_server_counters(srv, &c);
	assert_int_equal(c.idle_closed, 2);
	close(silent);
	close(partial);
	close(talker);
	close(watcher);
	(void)e;
}

static const struct idle_case idle_cases[] = {
	{ "70 silent clients, default cap", 0, 0, idle_case_lockout },
	{ "cap reached by busy clients", 4, 0, idle_case_cap_busy },
	{ "idle timeout 2 s", 8, 2000, idle_case_timeout },
};

static void test_idle_clients(void **state)
{
	struct env *e = *state;
	for (size_t i = 0; i < sizeof(idle_cases) / sizeof(idle_cases[0]); i++) {
		const struct idle_case *ic = &idle_cases[i];
		char sock[120];
		struct fg_ctl_server *srv;
		struct fg_ctl_server_params p = {
			.socket_path = sock, .ops = &fake_ops, .ctx = &e->dp,
			.max_clients = ic->max_clients, .idle_timeout_ms = ic->idle_timeout_ms,
		};
		snprintf(sock, sizeof(sock), "%s/idle%zu.sock", g_dir, i);
		assert_int_equal(fg_ctl_server_create(&p, &srv), 0);
		assert_int_equal(fg_ctl_server_start(srv), 0);
		print_message("idle case: %s\n", ic->name);
		ic->run(e, sock, srv);
		fg_ctl_server_destroy(srv);
	}
}

/* ---- lock-out attempts (issue 34): drip-feeders, clients that never read,
 * watchers ----------------------------------------------------------------- */

/* A field of the "control" object of a ping answered on a new connection
 * (queued_bytes and buffer_bytes count the other clients). */
static uint64_t ctl_gauge(const char *sock, const char *key)
{
	const char *ping = "{\"v\":1,\"id\":7,\"cmd\":\"ping\"}\n";
	char line[8192], err[200];
	int fd = connect_path(sock);
	uint64_t v = 0;

	send_all(fd, ping, strlen(ping));
	ssize_t n = read_line(fd, line, sizeof(line));
	close(fd);
	if (n <= 1 || !strstr(line, "\"ok\":true"))
		fail_msg("no ping answer for %s: %s", key, n > 0 ? line : "(none)");
	struct fg_json_doc *d = fg_json_parse(line, (size_t)n - 1, 0, err, sizeof(err));
	if (!d)
		fail_msg("ping answer is not JSON (%s)", err);
	const struct fg_json *ctl = jget(jget(fg_json_root(d), "data"), "control");
	if (fg_json_get_u64(ctl, key, &v))
		fail_msg("ping: no control.%s", key);
	fg_json_free(d);
	return v;
}

/* One byte of a request that never ends (no newline) on each open fd;
 * a send that fails marks the fd closed by the server (-1). */
static void drip(int *fds, int n, unsigned int k)
{
	static const char req[] = "{\"v\":1,\"id\":1,\"cmd\":\"ping\",\"args\":{}}";

	for (int i = 0; i < n; i++)
		if (fds[i] >= 0 &&
		    send(fds[i], &req[k % (sizeof(req) - 1)], 1, MSG_NOSIGNAL | MSG_DONTWAIT) != 1) {
			close(fds[i]);
			fds[i] = -1;
		}
}

/* A client that never reads: a tiny receive buffer, then 2000 pipelined
 * config.show requests (as many as the socket takes). */
static int never_reader(const char *sock)
{
	static const char show[] = "{\"v\":1,\"id\":1,\"cmd\":\"config.show\"}\n";
	size_t n = 2000 * (sizeof(show) - 1), off = 0;
	char *b = malloc(n);
	int fd = connect_path(sock), sz = 4096;

	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
	for (size_t i = 0; i < 2000; i++)
		memcpy(b + i * (sizeof(show) - 1), show, sizeof(show) - 1);
	while (off < n) {
		ssize_t k = send(fd, b + off, n - off, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (k <= 0)
			break;  /* the server stopped reading: fine */
		off += (size_t)k;
	}
	free(b);
	return fd;
}

/* Reads until EOF (what the server sent before closing).  @return true on
 * EOF, false if the server keeps the connection open (2 s without data). */
static bool read_to_eof(int fd)
{
	char b[65536];

	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		if (poll(&p, 1, 2000) <= 0)
			return false;
		ssize_t k = recv(fd, b, sizeof(b), 0);
		if (k <= 0)
			return true;
	}
}

#define WAIT_ROUNDS 1500  /* x 20 ms: a hang guard, not a time bound */

/* fgctl ping at a full server, until it gets in (the attackers' slots age
 * past FG_CTL_EVICT_IDLE_MS from when the server took them, which a loaded
 * host may do late); @p drip_fds keep dripping meanwhile. */
static void fgctl_gets_in(const char *sock, int *drip_fds, int n_drip, const char *who)
{
	for (int k = 0; k < 50; k++) {
		drip(drip_fds, n_drip, (unsigned int)k);
		if (fgctl_at(sock, "ping") == 0)
			return;
		usleep(200000);
	}
	char *err = slurp(g_err);
	fail_msg("fgctl ping behind %s failed: %s", who, err);
}

struct lock_case {
	const char *name;
	struct fg_ctl_server_params p;   /* socket_path, ops, ctx filled in */
	void (*run)(struct fg_ctl_server *srv, const char *sock,
		    const struct fg_ctl_server_params *p);
};

/* Bytes of one request a round, never a newline: the idle timeout runs
 * from the last complete request, so they are closed as silent ones are. */
static void lock_drip_idle(struct fg_ctl_server *srv, const char *sock,
			   const struct fg_ctl_server_params *p)
{
	int fds[3];
	struct fg_ctl_counters c;

	for (int i = 0; i < 3; i++)
		fds[i] = connect_path(sock);
	for (unsigned int k = 0; k < 5 * WAIT_ROUNDS; k++) {
		drip(fds, 3, k);
		fg_ctl_server_counters(srv, &c);
		if (c.idle_closed >= 3)
			break;
		usleep(20000 / 5);
	}
	assert_int_equal(c.idle_closed, 3);
	for (int i = 0; i < 3; i++) {
		if (fds[i] >= 0) {
			assert_true(read_to_eof(fds[i]));
			close(fds[i]);
		}
	}
	(void)p;
}

/* Drip-feeders fill every slot: a new client evicts one of them. */
static void lock_drip_cap(struct fg_ctl_server *srv, const char *sock,
			  const struct fg_ctl_server_params *p)
{
	int fds[4];
	struct fg_ctl_counters c;

	for (int i = 0; i < 4; i++)
		fds[i] = connect_path(sock);
	/* a byte every 50 ms for at least FG_CTL_EVICT_IDLE_MS + 250 ms */
	for (unsigned int k = 0; k < (FG_CTL_EVICT_IDLE_MS + 250) / 50; k++) {
		drip(fds, 4, k);
		usleep(50000);
	}
	fgctl_gets_in(sock, fds, 4, "4 drip-feeders");
	fg_ctl_server_counters(srv, &c);
	assert_true(c.evicted_idle >= 1);
	for (int i = 0; i < 4; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	(void)p;
}

/* Per-client memory bound of fg_ctl_server.h ("Isolation") for these
 * params, with 64 KiB for the largest reply (config.show of full.conf). */
static uint64_t client_bound(const struct fg_ctl_server_params *p)
{
	return 2 * (p->max_request + (128u << 10)) + 2 * (FG_CTL_QUEUE_MAX + (64u << 10)) + 4096;
}

/* 8 clients pipeline 2000 config.show each and never read: their further
 * requests wait unread, so what the server holds stays within the bound
 * (all 2000 answered would be ~6 MB a client). */
static void lock_noread_bound(struct fg_ctl_server *srv, const char *sock,
			      const struct fg_ctl_server_params *p)
{
	int fds[8];
	struct fg_ctl_counters c;
	uint64_t queued = 0;

	for (int i = 0; i < 8; i++)
		fds[i] = never_reader(sock);
	/* every one of them paused: FG_CTL_QUEUE_MAX or more unread */
	for (int k = 0; k < WAIT_ROUNDS; k++) {
		queued = ctl_gauge(sock, "queued_bytes");
		if (queued >= 8 * (uint64_t)FG_CTL_QUEUE_MAX)
			break;
		usleep(20000);
	}
	assert_true(queued >= 8 * (uint64_t)FG_CTL_QUEUE_MAX);
	uint64_t held = ctl_gauge(sock, "buffer_bytes");
	fg_ctl_server_counters(srv, &c);
	print_message("8 never-reading clients: %" PRIu64 " bytes queued, %" PRIu64
		      " held, %" PRIu64 " requests answered of 16000\n", queued, held, c.requests);
	assert_true(queued <= 8 * (uint64_t)(FG_CTL_QUEUE_MAX + (64u << 10)));
	assert_true(held <= 8 * client_bound(p));
	assert_true(c.requests < 8 * 2000);
	assert_int_equal(c.write_timeouts, 0);     /* 60 s not reached */
	for (int i = 0; i < 8; i++)
		close(fds[i]);
}

/* The same clients with a 300 ms write timeout: each is dropped, and the
 * server holds nothing for them afterwards. */
static void lock_noread_drop(struct fg_ctl_server *srv, const char *sock,
			     const struct fg_ctl_server_params *p)
{
	int fds[8];
	struct fg_ctl_counters c;

	for (int i = 0; i < 8; i++)
		fds[i] = never_reader(sock);
	for (int k = 0; k < WAIT_ROUNDS; k++) {
		fg_ctl_server_counters(srv, &c);
		if (c.write_timeouts >= 8)
			break;
		usleep(20000);
	}
	assert_int_equal(c.write_timeouts, 8);
	assert_int_equal(c.dropped_slow, 0);
	for (int i = 0; i < 8; i++) {
		assert_true(read_to_eof(fds[i]));
		close(fds[i]);
	}
	assert_int_equal(ctl_gauge(sock, "queued_bytes"), 0);
	assert_int_equal(ctl_gauge(sock, "buffer_bytes"), 0);
	(void)p;
}

/* Never-reading clients fill every slot (write timeout 15 s not reached):
 * a new client evicts one of them. */
static void lock_noread_cap(struct fg_ctl_server *srv, const char *sock,
			    const struct fg_ctl_server_params *p)
{
	int fds[4];
	struct fg_ctl_counters c;

	for (int i = 0; i < 4; i++)
		fds[i] = never_reader(sock);
	usleep((FG_CTL_EVICT_IDLE_MS + 250) * 1000);
	fgctl_gets_in(sock, NULL, 0, "4 never-reading clients");
	fg_ctl_server_counters(srv, &c);
	assert_true(c.evicted_idle >= 1);
	assert_int_equal(c.write_timeouts, 0);
	for (int i = 0; i < 4; i++)
		close(fds[i]);
	(void)p;
}

/* 70 flows watch clients at the default caps: 16 watch, 54 are told why
 * not (and stay ordinary clients); ordinary slots filled with silent
 * clients then, fgctl still gets in, and no watcher is evicted. */
static void lock_watchers(struct fg_ctl_server *srv, const char *sock,
			  const struct fg_ctl_server_params *p)
{
	const char *watch = "{\"v\":1,\"id\":3,\"cmd\":\"flows.watch\"}\n";
	int fds[70 + 10];
	char line[4096];
	struct fg_ctl_counters c;

	for (int i = 0; i < 70; i++) {
		fds[i] = connect_path(sock);
		send_all(fds[i], watch, strlen(watch));
		if (i < FG_CTL_DEFAULT_WATCHERS) {
			/* a watcher gets no answer until events come: wait
			 * until the server counts it */
			int k;
			for (k = 0; k < WAIT_ROUNDS; k++) {
				if (ctl_gauge(sock, "watchers") == (uint64_t)i + 1)
					break;
				usleep(20000);
			}
			assert_true(k < WAIT_ROUNDS);
			continue;
		}
		if (read_line(fds[i], line, sizeof(line)) <= 0)
			fail_msg("watcher %d over the cap: no answer", i);
		if (!strstr(line, "\"ok\":false") ||
		    !strstr(line, "too many flows watch clients (max 16)"))
			fail_msg("watcher %d over the cap: %s", i, line);
	}
	fg_ctl_server_counters(srv, &c);
	assert_int_equal(c.watch_rejected, 70 - FG_CTL_DEFAULT_WATCHERS);
	assert_int_equal(c.rejected_full, 0);
	/* 54 refused watchers + 10 silent = 64 ordinary clients, the cap */
	for (int i = 70; i < 80; i++)
		fds[i] = connect_path(sock);
	usleep((FG_CTL_EVICT_IDLE_MS + 250) * 1000);
	fgctl_gets_in(sock, NULL, 0, "16 watchers and 64 idle clients");
	fg_ctl_server_counters(srv, &c);
	assert_true(c.evicted_idle >= 1);
	for (int i = 0; i < FG_CTL_DEFAULT_WATCHERS; i++)
		assert_true(still_open(fds[i]));
	for (int i = 0; i < 80; i++)
		close(fds[i]);
	(void)p;
}

static const struct lock_case lock_cases[] = {
	{ "drip-feeders, idle timeout 300 ms",
	  { .max_clients = 8, .idle_timeout_ms = 300 }, lock_drip_idle },
	{ "drip-feeders at the cap",
	  { .max_clients = 4 }, lock_drip_cap },
	{ "never-reading clients: memory bound",
	  { .max_clients = 16, .max_request = 64 << 10, .write_timeout_ms = 60000 },
	  lock_noread_bound },
	{ "never-reading clients: write timeout 300 ms",
	  { .max_clients = 16, .max_request = 64 << 10, .write_timeout_ms = 300 },
	  lock_noread_drop },
	{ "never-reading clients at the cap",
	  { .max_clients = 4 }, lock_noread_cap },
	{ "70 watchers, default caps", { 0 }, lock_watchers },
};

static void test_lockout(void **state)
{
	struct env *e = *state;

	for (size_t i = 0; i < sizeof(lock_cases) / sizeof(lock_cases[0]); i++) {
		const struct lock_case *lc = &lock_cases[i];
		struct fg_ctl_server_params p = lc->p;
		struct fg_ctl_server *srv;
		char sock[120];

		snprintf(sock, sizeof(sock), "%s/lock%zu.sock", g_dir, i);
		p.socket_path = sock;
		p.ops = &fake_ops;
		p.ctx = &e->dp;
		assert_int_equal(fg_ctl_server_create(&p, &srv), 0);
		assert_int_equal(fg_ctl_server_start(srv), 0);
		print_message("lock-out case: %s\n", lc->name);
		lc->run(srv, sock, &p);
		fg_ctl_server_destroy(srv);
	}
}

static void test_socket_safety(void **state)
{
	(void)state;
	struct stat st;
	assert_int_equal(stat(g_sock, &st), 0);
	assert_true(S_ISSOCK(st.st_mode));
	assert_int_equal(st.st_mode & 0777, 0600);
	/* a second server on a live socket: refused, the first keeps it */
	struct fg_ctl_server *s2;
	struct fg_ctl_server_params p = { .socket_path = g_sock, .ops = &fake_ops };
	assert_int_equal(fg_ctl_server_create(&p, &s2), -EADDRINUSE);
	assert_serving();
	/* world-writable parent without the sticky bit: refused */
	char dir[200], path[260];
	snprintf(dir, sizeof(dir), "%s/open", g_dir);
	mkdir(dir, 0777);
	chmod(dir, 0777);
	snprintf(path, sizeof(path), "%s/s.sock", dir);
	p.socket_path = path;
	assert_int_equal(fg_ctl_server_create(&p, &s2), -EPERM);
	chmod(dir, 01777);
	assert_int_equal(fg_ctl_server_create(&p, &s2), 0);
	fg_ctl_server_destroy(s2);
	assert_int_not_equal(access(path, F_OK), 0); /* unlinked */
	/* missing parent, path too long, a regular file in the way */
	snprintf(path, sizeof(path), "%s/nodir/s.sock", g_dir);
	assert_int_equal(fg_ctl_server_create(&p, &s2), -ENOENT);
	char longp[300];
	memset(longp, 'a', sizeof(longp) - 1);
	longp[0] = '/';
	longp[sizeof(longp) - 1] = 0;
	p.socket_path = longp;
	assert_int_equal(fg_ctl_server_create(&p, &s2), -EINVAL);
	snprintf(path, sizeof(path), "%s/file", g_dir);
	fclose(fopen(path, "w"));
	p.socket_path = path;
	assert_int_equal(fg_ctl_server_create(&p, &s2), -EEXIST);
	/* a stale socket file (nobody listening) is replaced */
	snprintf(path, sizeof(path), "%s/stale.sock", g_dir);
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	assert_true(strlen(path) < sizeof(sa.sun_path));
	memcpy(sa.sun_path, path, strlen(path) + 1);
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	close(fd);
	p.socket_path = path;
	assert_int_equal(fg_ctl_server_create(&p, &s2), 0);
	fg_ctl_server_destroy(s2);
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: %s full.conf path/to/fgctl\n", argv[0]);
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	g_full = argv[1];
	g_fgctl = argv[2];
	snprintf(g_dir, sizeof(g_dir), "/tmp/fgctl-test-XXXXXX");
	if (!mkdtemp(g_dir))
		return 1;
	snprintf(g_sock, sizeof(g_sock), "%s/fg.sock", g_dir);
	snprintf(g_out, sizeof(g_out), "%s/out", g_dir);
	snprintf(g_err, sizeof(g_err), "%s/err", g_dir);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_services),
		cmocka_unit_test(test_backends),
		cmocka_unit_test(test_flows),
		cmocka_unit_test(test_watch),
		cmocka_unit_test(test_stats_health_ping),
		cmocka_unit_test(test_config_verbs),
		cmocka_unit_test(test_config_apply_fields),
		cmocka_unit_test(test_cli_misc),
		cmocka_unit_test(test_fgctl_timeout),
		cmocka_unit_test(test_bad_input),
		cmocka_unit_test(test_idle_clients),
		cmocka_unit_test(test_lockout),
		cmocka_unit_test(test_socket_safety),
	};
	int rc = cmocka_run_group_tests(tests, setup, teardown);
	char cmd[200];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", g_dir);
	(void)!system(cmd);
	return rc;
}
