/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * What the benches of one dataplane on net_null devices share (bench_state.c,
 * bench_sync.c), written once: their EAL, the daemon's dataplane made from
 * config text, and the clock their rounds are timed with.
 */
#ifndef FLOWGATE_BENCH_FGB_NULLDP_H
#define FLOWGATE_BENCH_FGB_NULLDP_H

#include <stdio.h>
#include <string.h>
#include <time.h>

#include <rte_common.h>
#include <rte_eal.h>
#include <rte_errno.h>

#include "fg_config_parse.h"
#include "fg_dp.h"

/** CLOCK_MONOTONIC in seconds. */
static inline double
fgb_now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/** EAL on lcores 0 and 1, @p mem_mb ("4096") of memory without hugepages,
 *  net_null0, file prefix @p prefix.  @return 0, or -1 (said). */
static inline int
fgb_nulldp_eal_init(const char *mem_mb, const char *prefix)
{
	char pfx[64];
	char *eal[] = {"flowgate-bench", "-l", "0,1", "--no-huge", "-m", (char *)mem_mb,
		       "--no-shconf", "--log-level=lib.eal:error", "--log-level=flowgate:warning",
		       "--no-pci", "--vdev", "net_null0", pfx};

	snprintf(pfx, sizeof(pfx), "--file-prefix=%s", prefix);
	if (rte_eal_init(RTE_DIM(eal), eal) < 0) {
		fprintf(stderr, "EAL init failed: %s\n", rte_strerror(rte_errno));
		return -1;
	}
	return 0;
}

/** The daemon's dataplane of one worker (no software RSS) from config
 *  @p text, @p n_mbufs mbufs, restart state file @p state_path (NULL:
 *  none).  The two last configs stay alive (a bench holds two
 *  dataplanes).  @return it, or NULL. */
static inline struct fg_dp *
fgb_nulldp_make(const char *text, unsigned int n_mbufs, const char *state_path)
{
	static struct fg_config cfg[2];
	static int k;
	struct fg_config *c = &cfg[k++ % 2];
	struct fg_dp_params prm;
	struct fg_dp *dp;

	if (fg_config_parse(text, strlen(text), "bench", c, NULL) < 0 ||
	    fg_config_assign_ids(c, NULL) < 0)
		return NULL;
	fg_dp_params_init(&prm);
	prm.cfg = c;
	prm.n_workers = 1;
	prm.sw_rss = 0;
	prm.n_mbufs = n_mbufs;
	prm.state_path = state_path;
	return fg_dp_create(&prm, &dp) == 0 ? dp : NULL;
}

#endif /* FLOWGATE_BENCH_FGB_NULLDP_H */
