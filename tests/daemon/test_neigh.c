/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Neighbour table ageing and size limit (issue 9, defect 4): a table-driven
 * run of fg_neigh_table_build_aged with a clock the test sets.
 *
 * Then the daemon's own dataplane (fg_dp_create on net_null0, a NAT
 * service without a gateway, worker 0 driven here with its clock set by
 * the test; issue 34):
 *  - t_locktime: two answers for a solicited client in one burst, the
 *    first MAC is learned and the second counted neigh_locked; another
 *    within FG_NEIGH_LOCKTIME_MS is refused too; one after it updates the
 *    entry (as Linux's locktime);
 *  - t_solicit_rate: SYNs from hundreds of spoofed on-link sources make at
 *    most FG_SOLICIT_BURST ARP requests at one instant, and at most
 *    FG_SOLICIT_RATE a second more after it; the rest count
 *    arp_ratelimited.
 */
#include <unistd.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <cmocka.h>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>

#include "fg_config_parse.h"
#include "fg_pktbuild.h"
#include "fg_worker_private.h"
#include "../fg_test_eal.h"

#define AGE 1000ull   /* ticks */

static struct fg_neigh_learn nl(uint32_t i)
{
	struct fg_neigh_learn l;

	memset(&l, 0, sizeof(l));
	l.family = AF_INET;
	uint32_t a = htonl(0x0a000000u + i);
	memcpy(l.addr, &a, 4);
	l.mac.addr_bytes[0] = 2;
	memcpy(&l.mac.addr_bytes[2], &i, 4);
	return l;
}

static struct fg_config *cfg_with_static(void)
{
	struct fg_config *c = calloc(1, sizeof(*c));

	assert_non_null(c);
	c->n_neigh = 1;
	c->neigh[0].ip.family = AF_INET;
	inet_pton(AF_INET, "10.200.0.1", c->neigh[0].ip.bytes);
	c->neigh[0].mac[0] = 2;
	return c;
}

/* One learned entry confirmed at 0, the table rebuilt (aged) at @now. */
struct age_case {
	const char *name;
	uint64_t now;
	bool present, stale, due;
};

static const struct age_case age_cases[] = {
	{"fresh", AGE / 2, true, false, false},
	{"just before 3/4: fresh", AGE * 3 / 4 - 1, true, false, false},
	{"3/4 of its age: stale, re-solicited", AGE * 3 / 4, true, true, true},
	{"just before its age: stale", AGE - 1, true, true, true},
	{"its age: gone", AGE, false, false, true},
	{"long after: gone", 100 * AGE, false, false, true},
};

static void test_age(void **state)
{
	const struct age_case *c = *state;
	struct fg_config *cfg = cfg_with_static();
	struct fg_neigh_learn l = nl(1);
	struct fg_neigh_table *t0 = fg_neigh_table_build_aged(cfg, NULL, &l, 1, 0, AGE);

	assert_non_null(t0);
	assert_int_equal(t0->count, 2);
	assert_int_equal(fg_neigh_table_due(t0, c->now, AGE), c->due);
	struct fg_neigh_table *t1 = fg_neigh_table_build_aged(cfg, t0, NULL, 0, c->now, AGE);
	const struct fg_neigh_entry *e = fg_neigh_lookup(t1, AF_INET, l.addr);

	assert_int_equal(e != NULL, c->present);
	if (e)
		assert_int_equal(e->stale, c->stale);
	/* a static neighbour never ages */
	assert_non_null(fg_neigh_lookup(t1, AF_INET, cfg->neigh[0].ip.bytes));
	assert_false(fg_neigh_lookup(t1, AF_INET, cfg->neigh[0].ip.bytes)->stale);
	/* a stale entry confirmed again is fresh for a whole age */
	if (c->stale) {
		struct fg_neigh_table *t2 =
			fg_neigh_table_build_aged(cfg, t1, &l, 1, c->now, AGE);

		e = fg_neigh_lookup(t2, AF_INET, l.addr);
		assert_non_null(e);
		assert_false(e->stale);
		assert_false(fg_neigh_table_due(t2, c->now + AGE / 2, AGE));
		fg_neigh_table_free(t2);
	}
	fg_neigh_table_free(t1);
	fg_neigh_table_free(t0);
	free(cfg);
}

/* More learned neighbours than FG_NEIGH_MAX: the table stops at the limit,
 * statics and older entries stay, and no ageing (age 0) drops nothing. */
static void test_full(void **state)
{
	struct fg_config *cfg = cfg_with_static();
	unsigned int n = FG_NEIGH_MAX + 100;
	struct fg_neigh_learn *add = calloc(n, sizeof(*add));

	for (unsigned int i = 0; i < n; i++)
		add[i] = nl(i + 10);
	struct fg_neigh_table *t = fg_neigh_table_build_aged(cfg, NULL, add, n, 5, 0);

	assert_non_null(t);
	assert_int_equal(t->count, FG_NEIGH_MAX);
	assert_non_null(fg_neigh_lookup(t, AF_INET, cfg->neigh[0].ip.bytes));
	assert_non_null(fg_neigh_lookup(t, AF_INET, add[0].addr));
	assert_null(fg_neigh_lookup(t, AF_INET, add[n - 1].addr));
	assert_false(fg_neigh_table_due(t, 1000000, 0));
	fg_neigh_table_free(t);
	free(add);
	free(cfg);
}

/* --------------------------------------------- the worker (issue 34) */

static struct fg_dp *dp;
static unsigned int arp_out;   /* ARP frames that reached the port */

static uint16_t tx_count(uint16_t port, uint16_t queue, struct rte_mbuf **pkts,
			 uint16_t n, void *arg)
{
	for (uint16_t i = 0; i < n; i++) {
		const uint8_t *d = rte_pktmbuf_mtod(pkts[i], const uint8_t *);

		arp_out += d[12] == 0x08 && d[13] == 0x06;
	}
	return n;
}

static const char dp_cfg[] =
	"conntrack { capacity 4096; }\n"
	"port net_null0 { mac 02:00:00:00:00:01; local 10.0.0.2; }\n"
	"neighbour 10.0.0.10 02:00:00:00:01:10 port net_null0;\n"
	"service 10.0.0.100:80/tcp {\n mode nat;\n backend 10.0.0.10;\n}\n";

static int dp_setup(void **state)
{
	static struct fg_config cfg;
	struct fg_dp_params prm;

	if (fg_config_parse(dp_cfg, strlen(dp_cfg), "neigh", &cfg, NULL) ||
	    fg_config_assign_ids(&cfg, NULL))
		return -1;
	fg_dp_params_init(&prm);
	prm.cfg = &cfg;
	prm.n_workers = 1;
	prm.sw_rss = 0;
	prm.n_mbufs = 2047;
	if (fg_dp_create(&prm, &dp) < 0)
		return -1;
	return rte_eth_add_tx_callback(dp->ports[0].port_id, 0, tx_count, NULL) ? 0 : -1;
}

static int dp_teardown(void **state)
{
	fg_dp_destroy(dp);
	return 0;
}

static struct rte_mbuf *mbuf_of(const uint8_t *fr, int len)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(dp->pool[0]);

	assert_true(m != NULL && len > 0);
	memcpy(rte_pktmbuf_append(m, (uint16_t)len), fr, (size_t)len);
	m->port = 0;
	fg_mbuf_priv(m)->parsed = FG_PARSED_NO;
	return m;
}

/* A SYN from @p client to the NAT VIP. */
static struct rte_mbuf *syn_from(const char *client, uint16_t sport)
{
	struct pb_spec sp = {0};
	uint8_t fr[128];

	sp.saddr = client;
	sp.daddr = "10.0.0.100";
	sp.proto = IPPROTO_TCP;
	sp.sport = sport;
	sp.dport = 80;
	sp.tcp_flags = 0x02;
	return mbuf_of(fr, pb_build(&sp, fr, sizeof(fr)));
}

/* "@p ip is at 02:00:00:00:0a:@p mac" to the balancer. */
static struct rte_mbuf *arp_reply(const char *ip, uint8_t mac)
{
	const uint8_t smac[6] = {2, 0, 0, 0, 0x0a, mac};
	uint8_t fr[64];

	return mbuf_of(fr, pb_arp(2, smac, ip, "10.0.0.2", 0, fr, sizeof(fr)));
}

static void burst(struct rte_mbuf **m, uint16_t n, uint64_t now)
{
	fg_worker_burst(dp->workers[0], m, n, now, false);
	fg_worker_tx_flush(dp->workers[0], 0);
}

/* The MAC's last byte the published table holds for @p ip, 0 for none;
 * when it was learned in @p tsc. */
static uint8_t mac_of(const char *ip, uint64_t *tsc)
{
	uint8_t a[16];

	fg_dp_neigh_poll(dp);   /* publish what the worker posted */
	assert_int_equal(pb_addr(ip, a), 0);
	const struct fg_neigh_entry *e = fg_neigh_lookup(dp->neigh, AF_INET, a);

	if (e != NULL && tsc != NULL)
		*tsc = e->learned_tsc;
	return e ? e->mac.addr_bytes[5] : 0;
}

static void t_locktime(void **state)
{
	struct fg_worker *w = dp->workers[0];
	uint64_t now = rte_rdtsc(), learned = 0;
	uint64_t lock = rte_get_tsc_hz() * FG_NEIGH_LOCKTIME_MS / 1000;
	uint64_t locked0 = w->dc[FG_DC_neigh_locked];
	struct rte_mbuf *m[2];

	/* a NAT client on the link: its flow's first packet asks for it */
	arp_out = 0;
	m[0] = syn_from("10.0.0.50", 1000);
	burst(m, 1, now);
	assert_int_equal(arp_out, 1);
	/* the client and a host answering for it, in one burst */
	m[0] = arp_reply("10.0.0.50", 0xaa);
	m[1] = arp_reply("10.0.0.50", 0xbb);
	burst(m, 2, now);
	assert_int_equal(mac_of("10.0.0.50", &learned), 0xaa);
	assert_int_equal(w->dc[FG_DC_neigh_locked] - locked0, 1);
	/* again, half a locktime later: still the first */
	m[0] = arp_reply("10.0.0.50", 0xbb);
	burst(m, 1, learned + lock / 2);
	assert_int_equal(mac_of("10.0.0.50", NULL), 0xaa);
	assert_int_equal(w->dc[FG_DC_neigh_locked] - locked0, 2);
	/* after the locktime (and within the solicitation's window of
	 * FG_NEIGH_SOLICIT_WINDOW_S) an answer may move the entry, as
	 * Linux's */
	m[0] = arp_reply("10.0.0.50", 0xbb);
	burst(m, 1, learned + lock + lock / 10);
	assert_int_equal(w->dc[FG_DC_neigh_locked] - locked0, 2);
	assert_int_equal(mac_of("10.0.0.50", NULL), 0xbb);
}

#define SPOOFED 300

/* SYNs from SPOOFED new on-link sources 10.@p net.x.y, in bursts of 32
 * at @p now; the ARP requests that left. */
static unsigned int spoof_round(unsigned int net, uint64_t now)
{
	struct rte_mbuf *m[32];
	char ip[32];
	unsigned int k = 0;

	arp_out = 0;
	for (unsigned int i = 0; i < SPOOFED; i++) {
		snprintf(ip, sizeof(ip), "10.%u.%u.%u", net, i / 250, 1 + i % 250);
		m[k++] = syn_from(ip, 2000);
		if (k == RTE_DIM(m) || i == SPOOFED - 1) {
			burst(m, (uint16_t)k, now);
			k = 0;
		}
	}
	return arp_out;
}

static void t_solicit_rate(void **state)
{
	struct fg_worker *w = dp->workers[0];
	uint64_t hz = rte_get_tsc_hz(), now = rte_rdtsc() + 100 * hz;
	uint64_t req0 = w->dc[FG_DC_arp_requests], lim0 = w->dc[FG_DC_arp_ratelimited];
	unsigned int a = spoof_round(1, now), b;

	/* one instant: one bucket's worth (this worker is all the port's) */
	assert_int_equal(a, FG_SOLICIT_BURST);
	assert_int_equal(w->dc[FG_DC_arp_requests] - req0, a);
	assert_int_equal(w->dc[FG_DC_arp_ratelimited] - lim0, SPOOFED - a);
	/* 1/16 s later: 8 more at 128 a second */
	b = spoof_round(2, now + hz / 16);
	assert_int_equal(b, FG_SOLICIT_RATE / 16);
	assert_int_equal(w->dc[FG_DC_arp_ratelimited] - lim0, 2 * SPOOFED - a - b);
}

int main(void)
{
	char prefix[64];	/* its own runtime directory, removed at exit */

	char *eal[] = {"test_neigh", "--no-huge", "--no-shconf", "-m", "256",
		       "--log-level=lib.eal:error", "-l", "0,1", "--no-pci", "--vdev", "net_null0",
		       fg_test_eal_prefix(prefix, sizeof(prefix), "fgtneigh")};

	if (rte_eal_init(RTE_DIM(eal), eal) < 0) {
		fprintf(stderr, "EAL init failed: %s\n", rte_strerror(rte_errno));
		return 1;
	}
	fg_test_eal_started();
	struct CMUnitTest tests[16];
	size_t n = 0;

	for (size_t i = 0; i < RTE_DIM(age_cases); i++) {
		tests[n] = (struct CMUnitTest)cmocka_unit_test_prestate(test_age,
								(void *)&age_cases[i]);
		tests[n++].name = age_cases[i].name;
	}
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_full);
	int rc = _cmocka_run_group_tests("neigh", tests, n, NULL, NULL);
	const struct CMUnitTest wtests[] = {
		cmocka_unit_test(t_locktime),
		cmocka_unit_test(t_solicit_rate),
	};

	rc |= cmocka_run_group_tests_name("neigh_worker", wtests, dp_setup, dp_teardown);

	rte_eal_cleanup();
	return rc;
}
