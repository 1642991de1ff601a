/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The dataplane-level daemon tests' common ground (test_state.c,
 * test_sync.c), written once: the EAL of a test of net_null devices, a
 * dataplane made from config text, an IPv4 address, the worker a flow's
 * tuple hashes to, a frame through a worker.  Include after <cmocka.h> (it asserts).
 */
#ifndef FLOWGATE_DP_FIXTURE_H
#define FLOWGATE_DP_FIXTURE_H

#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

#include <rte_common.h>
#include <rte_eal.h>
#include <rte_cycles.h>
#include <rte_errno.h>
#include <rte_mbuf.h>

#include "ct_rec.h"
#include "fg_config_parse.h"
#include "fg_dp.h"
#include "fg_pktbuild.h"
#include "fg_rss.h"
#include "fg_worker_private.h"
#include "../fg_test_eal.h"

/* EAL for test @p prog on lcores @p lcores (all on CPU 0), net_null0 and
 * its own file prefix @p prefix<pid>.  @return 0, or -1 (said). */
static inline int
dpf_eal_init(const char *prog, const char *lcores, const char *prefix)
{
	char pfx[64];
	char *eal[] = {(char *)prog, "--lcores", (char *)lcores, "--no-huge", "-m", "512",
		       "--no-shconf", "--log-level=lib.eal:error", "--log-level=flowgate:error",
		       "--no-pci", "--vdev", "net_null0",
		       fg_test_eal_prefix(pfx, sizeof(pfx), prefix)};

	if (rte_eal_init(RTE_DIM(eal), eal) < 0) {
		fprintf(stderr, "EAL init failed: %s\n", rte_strerror(rte_errno));
		return -1;
	}
	fg_test_eal_started();
	return 0;
}

/* A dataplane of @p workers workers (software RSS) from config @p text
 * (named @p name in errors), its restart state file @p state_path (NULL:
 * none).  The two last configs stay alive: a test holds two dataplanes. */
static inline struct fg_dp *
dpf_make(const char *text, const char *name, unsigned int workers, const char *state_path)
{
	static struct fg_config cfg[2];
	static int k;
	struct fg_config *c = &cfg[k++ % 2];
	struct fg_dp_params prm;
	struct fg_dp *dp;

	assert_int_equal(fg_config_parse(text, strlen(text), name, c, NULL), 0);
	assert_int_equal(fg_config_assign_ids(c, NULL), 0);
	fg_dp_params_init(&prm);
	prm.cfg = c;
	prm.n_workers = workers;
	prm.sw_rss = 1;
	prm.n_mbufs = 2047;
	prm.state_path = state_path;
	assert_int_equal(fg_dp_create(&prm, &dp), 0);
	return dp;
}

static inline uint32_t
dpf_ip4(const char *s)
{
	struct in_addr a;

	assert_int_equal(inet_pton(AF_INET, s, &a), 1);
	return a.s_addr;
}

/* The worker (index) that IPv4 tuple @p k hashes to. */
static inline unsigned int
dpf_owner(const struct fg_dp *dp, const struct ct_key4 *k)
{
	return fg_rss_queue(fg_rss_hash_v4(k->saddr, k->daddr, k->sport, k->dport), dp->reta);
}

/* Frame @p s (port 0) through worker @p w of @p dp, one burst, port 0's
 * TX emptied first.  @return the frames it sent: left in w->txb[0], the
 * caller frees them. */
static inline unsigned int
dpf_burst_one(struct fg_dp *dp, struct fg_worker *w, const struct pb_spec *s)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(dp->pool[0]);
	uint8_t buf[256];
	int len = pb_build(s, buf, sizeof(buf));

	assert_true(len > 0 && m != NULL);
	memcpy(rte_pktmbuf_append(m, (uint16_t)len), buf, (size_t)len);
	m->port = 0;
	fg_mbuf_priv(m)->parsed = FG_PARSED_NO;
	w->tx[0].n = 0;
	fg_worker_burst(w, &m, 1, rte_rdtsc(), false);
	return w->tx[0].n;
}

#endif /* FLOWGATE_DP_FIXTURE_H */
