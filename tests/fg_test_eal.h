/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * EAL for a test binary: its own file prefix (NAME + PID, so two runs never
 * share a runtime directory) and that directory removed at exit.  EAL
 * leaves /run/dpdk/PREFIX behind even after rte_eal_cleanup(), and its
 * telemetry socket goes only in an atexit handler: the handler here is
 * registered before EAL's, so it runs after it and removes the directory
 * once empty (as the daemon does, dataplane/fg_main.c).
 *
 *   char prefix[64];
 *   char *eal[] = {"test_x", ..., fg_test_eal_prefix(prefix, sizeof(prefix), "fgtx")};
 *   if (rte_eal_init(RTE_DIM(eal), eal) < 0) ...
 *   fg_test_eal_started();
 */
#ifndef FLOWGATE_FG_TEST_EAL_H
#define FLOWGATE_FG_TEST_EAL_H

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <rte_eal.h>

static char fg_test_rundir[PATH_MAX];

static void fg_test_rundir_remove(void)
{
	if (fg_test_rundir[0])
		rmdir(fg_test_rundir);
}

/* "--file-prefix=NAME<pid>" in @p buf; registers the removal at exit.
 * Call before rte_eal_init(). */
static inline char *fg_test_eal_prefix(char *buf, size_t len, const char *name)
{
	snprintf(buf, len, "--file-prefix=%s%d", name, (int)getpid());
	atexit(fg_test_rundir_remove);
	return buf;
}

/* Records the runtime directory to remove; call after rte_eal_init(). */
static inline void fg_test_eal_started(void)
{
	snprintf(fg_test_rundir, sizeof(fg_test_rundir), "%s", rte_eal_get_runtime_dir());
}

#endif /* FLOWGATE_FG_TEST_EAL_H */
