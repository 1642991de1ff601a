/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Issue 34: a removed backend's flows keep their backend until they end
 * (on_fail keep), however long that is (dataplane/fg_lb.c tombstones).
 *  - t_flow_outlives_removal: the daemon's own dataplane (fg_dp_create on
 *    net_null0, the worker driven here): a flow opens on a backend, the
 *    backend is removed, the tombstone is aged 1000 s (a table built at
 *    any later time reads it so: the old rule dropped tombstones 900 s
 *    after their removal), an unrelated change rebuilds the table, and
 *    the flow's next packet still leaves for its backend; once the flow
 *    has left conntrack, the next build drops the tombstone.
 *  - bound_cases: fg_lb_table_build with flow counts set in the old
 *    table's rows: tombstones without flows go, more than
 *    FG_TOMBSTONE_MAX keep the ones with the most flows.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_malloc.h>

#include "fg_config_parse.h"
#include "fg_dp.h"
#include "fg_pktbuild.h"
#include "fg_worker_private.h"
#include "../fg_test_eal.h"

#define CAP_MAX 16

static struct {
	uint8_t data[CAP_MAX][256];
	uint32_t len[CAP_MAX];
	unsigned int n;
} cap;

static uint16_t tx_capture(uint16_t port, uint16_t queue, struct rte_mbuf **pkts,
			   uint16_t n, void *arg)
{
	for (uint16_t i = 0; i < n && cap.n < CAP_MAX; i++) {
		uint32_t len = RTE_MIN(pkts[i]->pkt_len, (uint32_t)sizeof(cap.data[0]));

		cap.len[cap.n] = len;
		memcpy(cap.data[cap.n], rte_pktmbuf_read(pkts[i], 0, len,
							 cap.data[cap.n]), len);
		cap.n++;
	}
	return n;
}

static const char cfg_text[] =
	"conntrack { capacity 1024; }\n"
	"port net_null0 { mac 02:00:00:00:00:01; local 10.0.0.2; }\n"
	"neighbour 10.1.0.10 02:00:00:00:01:10 port net_null0;\n"
	"neighbour 10.1.0.11 02:00:00:00:01:11 port net_null0;\n"
	"service 10.0.0.100:80/tcp {\n mode dsr-ipip;\n on_fail keep;\n"
	" backend 10.1.0.10;\n backend 10.1.0.11;\n}\n";

static struct fg_dp *dp;

static int dp_setup(void **state)
{
	static struct fg_config cfg;
	struct fg_dp_params prm;

	assert_int_equal(fg_config_parse(cfg_text, strlen(cfg_text), "tomb", &cfg, NULL), 0);
	assert_int_equal(fg_config_assign_ids(&cfg, NULL), 0);
	fg_dp_params_init(&prm);
	prm.cfg = &cfg;
	prm.n_workers = 1;
	prm.sw_rss = 0;
	prm.n_mbufs = 1023;
	assert_int_equal(fg_dp_create(&prm, &dp), 0);
	assert_non_null(rte_eth_add_tx_callback(dp->ports[0].port_id, 0, tx_capture, NULL));
	/* no group state: it would replace the bound cases' own */
	return 0;
}

static int dp_teardown(void **state)
{
	fg_dp_destroy(dp);
	return 0;
}

/* One TCP packet of the client's flow through worker 0 at @p now; the
 * outer destination (the backend) of what left, 0 when nothing did. */
static uint32_t send_tcp(uint8_t flags, uint64_t now)
{
	struct pb_spec s = {0};
	struct rte_mbuf *m = rte_pktmbuf_alloc(dp->pool[0]);
	uint8_t buf[256];
	uint32_t dst = 0;
	int len;

	s.saddr = "192.0.2.7";
	s.daddr = "10.0.0.100";
	s.proto = IPPROTO_TCP;
	s.sport = 40000;
	s.dport = 80;
	s.tcp_flags = flags;
	len = pb_build(&s, buf, sizeof(buf));
	assert_true(len > 0 && m != NULL);
	memcpy(rte_pktmbuf_append(m, (uint16_t)len), buf, (size_t)len);
	m->port = 0;
	fg_mbuf_priv(m)->parsed = FG_PARSED_NO;
	cap.n = 0;
	fg_worker_burst(dp->workers[0], &m, 1, now, false);
	fg_worker_tx_flush(dp->workers[0], 0);
	if (cap.n == 1 && cap.len[0] >= 14 + 20 + 20)
		memcpy(&dst, cap.data[0] + 14 + 16, 4);   /* IPIP outer dst */
	return dst;
}

/* The running config with backend @p drop removed (0: none) and the
 * weight of the others set to @p weight, applied as fgctl would. */
static void change(uint32_t drop, uint32_t weight)
{
	struct fg_config *c = fg_dp_config_dup(dp->cfg);
	struct fg_service_cfg *sc = &c->services[0];
	char err[256];
	uint32_t k = 0;

	for (uint32_t j = 0; j < sc->n_backends; j++) {
		uint32_t a;

		memcpy(&a, sc->backends[j].addr.bytes, 4);
		if (a == drop)
			continue;
		sc->backends[k] = sc->backends[j];
		sc->backends[k++].weight = weight;
	}
	sc->n_backends = k;
	assert_int_equal(fg_config_assign_ids(c, dp->cfg), 0);
	assert_int_equal(fg_dp_apply_config(dp, c, err, sizeof(err)), 0);
	fg_dp_config_free(c);
}

static const struct fg_lb_backend *backend_at(uint32_t addr)
{
	const struct fg_lb_service *s = &dp->lb->services[0];

	for (uint32_t j = 0; j < s->n_backends; j++)
		if (memcmp(s->backends[j].addr.bytes, &addr, 4) == 0)
			return &s->backends[j];
	return NULL;
}

static void t_flow_outlives_removal(void **state)
{
	uint64_t now = rte_rdtsc(), hz = rte_get_tsc_hz();
	uint32_t be = send_tcp(0x02, now);
	struct fg_lb_backend *tomb;

	assert_int_not_equal(be, 0);
	assert_int_equal(send_tcp(0x10, now), be);
	change(be, 1);
	tomb = (struct fg_lb_backend *)backend_at(be);
	assert_non_null(tomb);
	assert_true(tomb->gone);
	assert_int_equal(send_tcp(0x10, now), be);
	/* 1000 s since the removal, as any later build sees it (the
	 * published table is only read by this thread's worker) */
	tomb->gone_tsc -= 1000 * hz;
	assert_int_equal(send_tcp(0x10, now + 500 * hz), be);   /* a long stream */
	change(0, 2);   /* unrelated: the other backend's weight */
	assert_non_null(backend_at(be));
	assert_int_equal(send_tcp(0x10, now + 1000 * hz), be);
	assert_int_equal(dp->workers[0]->dc[FG_DC_tombstone_evicted], 0);
	/* the flow leaves conntrack (expired): the next build drops it */
	ct_expire(dp->workers[0]->ct, now + 86400 * hz);
	assert_int_equal(ct_count(dp->workers[0]->ct), 0);
	change(0, 3);
	assert_null(backend_at(be));
}

/* ------------------------------------------- the bound, table builds */

#define NB_OLD (FG_TOMBSTONE_MAX + 44)

/* One service of @p n backends 10.1.x.y with ids 1..n. */
static void bound_cfg(struct fg_config *c, struct fg_service_cfg *sc, uint32_t n)
{
	fg_config_init(c);
	fg_service_init(sc);
	c->n_services = 1;
	c->services = sc;
	c->n_ports = 1;
	snprintf(c->ports[0].name, sizeof(c->ports[0].name), "net_null0");
	c->ports[0].n_local = 1;
	c->ports[0].local[0].family = AF_INET;
	inet_pton(AF_INET, "10.0.0.2", c->ports[0].local[0].bytes);
	sc->vip.family = AF_INET;
	inet_pton(AF_INET, "10.0.0.100", sc->vip.bytes);
	sc->port = 80;
	sc->proto = IPPROTO_TCP;
	sc->mode = FG_MODE_DSR_IPIP;
	sc->id = 1;
	sc->n_backends = n;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t a = htonl(0x0a010000u + i + 1);

		sc->backends[i].addr.family = AF_INET;
		memcpy(sc->backends[i].addr.bytes, &a, 4);
		sc->backends[i].id = i + 1;
		sc->backends[i].weight = 1;
	}
}

static struct fg_lb_table *bound_build(const struct fg_config *c,
				       const struct fg_lb_table *old)
{
	struct fg_lb_table *t = NULL;
	char err[256];

	if (fg_lb_table_build(c, old, 1, c->ports, &t, err, sizeof(err)) < 0)
		fail_msg("fg_lb_table_build: %s", err);
	return t;
}

/* Flows of backend @p b in @p t's worker row (opened - closed). */
static void set_flows(struct fg_lb_table *t, const struct fg_lb_backend *b,
		      uint64_t opened, uint64_t closed)
{
	t->core[0].be[b->stat_idx * FG_BC_MAX + FG_BC_conns_opened] = opened;
	t->core[0].be[b->stat_idx * FG_BC_MAX + FG_BC_conns_closed] = closed;
}

struct bound_case {
	const char *name;
	uint32_t removed;        /* backends 2..removed+1 removed, 1 stays */
	uint32_t with_flows;     /* of them, the first this many have flows */
	uint32_t kept;           /* tombstones in the second build */
};

static const struct bound_case bound_cases[] = {
	{"a tombstone without flows goes", 10, 0, 0},
	{"tombstones with flows stay", 10, 4, 4},
	{"the bound keeps those with the most flows", NB_OLD - 1, NB_OLD - 1,
	 FG_TOMBSTONE_MAX},
};

/* Flows of removed backend @p id in case @p bc: id i has i flows (the
 * first with_flows removed ones); the others had one, closed again. */
static void flows_of(const struct bound_case *bc, uint32_t id, uint64_t *opened,
		     uint64_t *closed)
{
	bool has = id - 2 < bc->with_flows;

	*opened = has ? 2 * (uint64_t)id : 1;
	*closed = has ? id : 1;
}

/* Sets every removed backend's counters of table @p t (as its workers
 * would have counted them). */
static void set_all(struct fg_lb_table *t, const struct bound_case *bc)
{
	const struct fg_lb_service *s = &t->services[0];

	for (uint32_t j = 0; j < s->n_backends; j++) {
		uint64_t o, c;

		if (s->backends[j].id == 1)
			continue;
		flows_of(bc, s->backends[j].id, &o, &c);
		set_flows(t, &s->backends[j], o, c);
	}
}

/* Which removed backends @p t holds: all just removed ones within the
 * bound (@p settled false), or those with flows (true); the bound evicts
 * the fewest flows, here the smallest ids. */
static void check_kept(const struct fg_lb_table *t, const struct bound_case *bc,
		       bool settled)
{
	const struct fg_lb_service *s = &t->services[0];

	assert_int_equal(s->n_live, 1);
	assert_int_equal(s->n_backends - s->n_live,
			 settled ? bc->kept : RTE_MIN(bc->removed, (uint32_t)FG_TOMBSTONE_MAX));
	for (uint32_t id = 2; id <= bc->removed + 1; id++) {
		const struct fg_lb_backend *b = fg_lb_backend_find(s, id);
		bool want = (!settled || id - 2 < bc->with_flows) &&
			    (bc->removed <= FG_TOMBSTONE_MAX ||
			     id + FG_TOMBSTONE_MAX > bc->removed + 1);

		if (want != (b != NULL))
			fail_msg("%s: backend %u %s", bc->name, id,
				 want ? "dropped" : "kept");
		if (b != NULL)
			assert_true(b->gone && !b->usable);
	}
}

static void t_bound(void **state)
{
	const struct bound_case *bc = *state;
	static struct fg_service_cfg s0, s1;
	struct fg_config c0, c1;

	bound_cfg(&c0, &s0, bc->removed + 1);
	bound_cfg(&c1, &s1, 1);
	struct fg_lb_table *t0 = bound_build(&c0, NULL);

	set_all(t0, bc);
	/* the removal: every removed backend is a tombstone (its flows
	 * are still being counted), at most FG_TOMBSTONE_MAX */
	struct fg_lb_table *t1 = bound_build(&c1, t0);

	check_kept(t1, bc, false);
	/* a later build: those without flows go */
	set_all(t1, bc);
	struct fg_lb_table *t2 = bound_build(&c1, t1);

	check_kept(t2, bc, true);
	fg_lb_table_free(t2);
	fg_lb_table_free(t1);
	fg_lb_table_free(t0);
}

int main(void)
{
	char prefix[64];
	char *eal[] = {"test_tombstone", "-l", "0,1", "--no-huge", "-m", "256",
		       "--no-shconf", "--log-level=lib.eal:error", "--log-level=flowgate:error",
		       "--no-pci", "--vdev", "net_null0",
		       fg_test_eal_prefix(prefix, sizeof(prefix), "fgttomb")};

	if (rte_eal_init(RTE_DIM(eal), eal) < 0) {
		fprintf(stderr, "EAL init failed: %s\n", rte_strerror(rte_errno));
		return 1;
	}
	fg_test_eal_started();
	struct CMUnitTest tests[8];
	size_t n = 0;

	tests[n++] = (struct CMUnitTest)cmocka_unit_test(t_flow_outlives_removal);
	for (size_t i = 0; i < RTE_DIM(bound_cases); i++) {
		tests[n] = (struct CMUnitTest)cmocka_unit_test_prestate(t_bound,
							(void *)&bound_cases[i]);
		tests[n++].name = bound_cases[i].name;
	}
	int rc = _cmocka_run_group_tests("tombstone", tests, n, dp_setup, dp_teardown);

	rte_eal_cleanup();
	return rc;
}
