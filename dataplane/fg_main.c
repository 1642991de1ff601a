/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * flowgate daemon: options (fg_opts.c), then the dataplane's lifecycle
 * (fg_dp.h): create, start, serve signals, stop, destroy.
 *
 *   flowgate [EAL options] -- [options]
 *
 * Signals: SIGINT / SIGTERM stop cleanly (the tracked flows written to the
 * --state-file for the next start, final counters, the control socket
 * removed); SIGHUP re-reads the -c file and applies it exactly as
 * `fgctl config apply` does (an invalid file changes nothing and is
 * logged).  Under systemd (Type=notify) the daemon reports READY=1,
 * RELOADING=1, STOPPING=1 and, when the unit has WatchdogSec, WATCHDOG=1
 * while every worker lcore makes progress.
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_errno.h>

#include "fg_dp.h"
#include "fg_log.h"
#include "fg_logline.h"
#include "fg_opts.h"
#include "fg_proto.h"

static volatile sig_atomic_t g_stop, g_hup;

static void on_signal(int sig)
{
	if (sig == SIGHUP)
		g_hup = 1;
	else
		g_stop = sig;
}

/* ---------------------------------------------------- systemd notify */

/* sd_notify(3) (control/fg_logline.h); a failure is logged once: the
 * watchdog would repeat it. */
static void notify(const char *msg)
{
	static bool warned;
	int rc = fg_sd_notify(msg);

	if (rc < 0 && !warned) {
		warned = true;
		FG_LOG(WARNING, "sd_notify %s: %s", getenv("NOTIFY_SOCKET"), strerror(-rc));
	}
}

static uint64_t mono_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* ------------------------------------------------------------ EAL args */

static bool has_arg(int argc, char **argv, const char *opt)
{
	size_t n = strlen(opt);

	for (int i = 1; i < argc; i++)
		if (!strncmp(argv[i], opt, n) && (argv[i][n] == '\0' || argv[i][n] == '='))
			return true;
	return false;
}

/* EAL's argv plus --in-memory when the operator chose no memory mode: no
 * hugepage file and no runtime file outlive the process, whatever ends it
 * (SIGKILL included).  --pdump needs shared memory: not added. */
static char **eal_args(int argc, char **argv, bool pdump, int *out_argc)
{
	static const char *const modes[] = { "--in-memory", "--no-shconf",
		"--proc-type", "--huge-unlink" };
	char **v = calloc((size_t)argc + 2, sizeof(*v));
	bool chosen = pdump;

	if (v == NULL)
		return NULL;
	for (size_t i = 0; i < RTE_DIM(modes); i++)
		chosen |= has_arg(argc, argv, modes[i]);
	memcpy(v, argv, (size_t)argc * sizeof(*v));
	*out_argc = argc;
	/* --no-huge is legacy memory, which --in-memory refuses: nothing
	 * in hugetlbfs then, and --no-shconf keeps the runtime files away */
	if (!chosen)
		v[(*out_argc)++] = (char *)(uintptr_t)(has_arg(argc, argv, "--no-huge") ?
						       "--no-shconf" : "--in-memory");
	return v;
}

/* EAL leaves its runtime directory behind, and its telemetry socket goes
 * only in an atexit handler; this one is registered before EAL's, so it
 * runs after it and removes the directory once empty. */
static char g_rundir[PATH_MAX];

static void rundir_remove(void)
{
	if (g_rundir[0])
		rmdir(g_rundir);
}

static void usage_hook(const char *prog)
{
	fg_opts_usage(stdout, prog);
}

/* ------------------------------------------------------------- serving */

static void reload(struct fg_dp *dp, const char *file)
{
	char err[2048];
	int rc;

	if (file == NULL) {
		FG_LOG(WARNING, "SIGHUP: no -c file to re-read; nothing changed");
		return;
	}
	notify("RELOADING=1");
	FG_LOG(NOTICE, "SIGHUP: re-reading %s", file);
	rc = fg_dp_reload(dp, file, err, sizeof(err));
	for (char *nl = strchr(err, '\n'); rc < 0 && nl; nl = strchr(nl, '\n'))
		*nl = ' ';     /* one log line: the problems joined */
	if (rc == 0)
		FG_LOG(NOTICE, "SIGHUP: %s applied", file);
	else
		FG_LOG(ERR, "SIGHUP: %s not applied, the running config is unchanged: %s",
		       file, err);
	notify("READY=1");
}

static void serve(struct fg_dp *dp, const char *config_file)
{
	uint64_t wd_us = fg_sd_watchdog_half_us(), wd_next = 0;

	notify("READY=1");
	while (!g_stop) {
		if (g_hup) {
			g_hup = 0;
			reload(dp, config_file);
		}
		/* a stuck worker stops the pings: systemd restarts the unit */
		if (wd_us && mono_us() >= wd_next) {
			if (fg_dp_workers_alive(dp))
				notify("WATCHDOG=1");
			else if (wd_next)
				FG_LOG(ERR, "watchdog: a worker lcore made no progress "
				       "for %llu ms", (unsigned long long)wd_us / 1000);
			wd_next = mono_us() + wd_us;
		}
		usleep(fg_dp_poll(dp));
	}
}

static int run(struct fg_opts *o)
{
	struct fg_dp *dp;
	int rc;

	if (!strcmp(o->socket_path, FG_CTL_DEFAULT_SOCKET))
		mkdir("/run/flowgate", 0755);
	rc = fg_dp_create(&o->dp, &dp);
	if (rc < 0) {
		FG_LOG(ERR, "start failed: %s", strerror(-rc));
		return 1;
	}
	/* the flows the previous process left (--state-file), before any
	 * worker runs */
	fg_dp_state_load(dp);
	rc = fg_dp_start(dp);
	if (rc == 0)
		serve(dp, o->config_file);
	else
		FG_LOG(ERR, "start failed: %s", strerror(-rc));
	notify("STOPPING=1");
	if (rc == 0)
		FG_LOG(NOTICE, "signal %d, stopping health checks, control, workers",
		       (int)g_stop);
	fg_dp_stop(dp);
	/* the workers stopped: their flows for the next process */
	if (rc == 0)
		fg_dp_state_save(dp);
	fg_dp_summary_print(dp, stdout);
	fg_dp_destroy(dp);
	return rc == 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = on_signal };
	struct fg_opts o;
	char **eal;
	int dd, n_eal, rc;

	/* flowgate's options follow the first "--"; --help and --version
	 * are answered anywhere, before EAL runs */
	for (dd = 1; dd < argc && strcmp(argv[dd], "--") != 0; dd++) {
		if (!strcmp(argv[dd], "--help") || !strcmp(argv[dd], "-h")) {
			fg_opts_usage(stdout, argv[0]);
			return 0;
		}
		if (!strcmp(argv[dd], "--version") || !strcmp(argv[dd], "-V")) {
			fg_opts_version(stdout, "flowgate");
			return 0;
		}
	}
	argv[dd < argc ? dd : 0] = argv[0];  /* getopt's argv[0] */
	rc = fg_opts_parse(dd < argc ? argc - dd : 1, dd < argc ? argv + dd : argv,
			   &o, stderr);
	if (o.help || o.version) {
		o.help ? fg_opts_usage(stdout, argv[0]) : fg_opts_version(stdout, "flowgate");
		fg_opts_free(&o);
		return 0;
	}
	if (rc < 0) {
		if (rc == -EINVAL)
			fprintf(stderr, "flowgate: 'flowgate --help' lists the options\n");
		fg_opts_free(&o);
		return rc == -EINVAL ? 2 : 1;
	}
	fg_log_open(o.log_syslog ? FG_LOG_SYSLOG : FG_LOG_STDERR);
	if (o.log_level >= 0)
		fg_log_level_set(o.log_level);
	eal = eal_args(dd < argc ? dd : argc, argv, o.dp.pdump, &n_eal);
	rte_set_application_usage_hook(usage_hook);
	atexit(rundir_remove);
	if (eal == NULL || rte_eal_init(n_eal, eal) < 0) {
		FG_LOG(ERR, "EAL init failed: %s", rte_strerror(rte_errno));
		free(eal);
		fg_opts_free(&o);
		return 1;
	}
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	snprintf(g_rundir, sizeof(g_rundir), "%s", rte_eal_get_runtime_dir());
	rc = run(&o);
	rte_eal_cleanup();
	if (rc == 0)
		FG_LOG(NOTICE, "stopped cleanly");
	else
		FG_LOG(ERR, "stopped after a failed start (EAL memory released)");
	fg_log_close();
	free(eal);
	fg_opts_free(&o);
	return rc;
}
