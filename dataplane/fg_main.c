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
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_errno.h>

#include "fg_daemon.h"
#include "fg_dp.h"
#include "fg_log.h"
#include "fg_logline.h"
#include "fg_opts.h"
#include "fg_proto.h"

/* One log line of the shared serving loop (fg_daemon.h), on the
 * "flowgate" rte_log type: RTE_LOG_* levels are syslog's plus one. */
static void dp_log(int prio, const char *line)
{
	rte_log((uint32_t)prio + 1, fg_logtype, "flowgate: %s\n", line);
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

/* ------------------------------------------------ failures, explained */

/* The last line of a failed start: its cause and what to do about it, in
 * one sentence, written by the check that found it.  Also on stderr when
 * the log goes to syslog (a start that fails says why where it ran). */
static char g_why[768];

static void why(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void why(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(g_why, sizeof(g_why), fmt, ap);
	va_end(ap);
}

static void why_log(bool syslog_sink)
{
	if (g_why[0] == '\0')
		return;
	FG_LOG(ERR, "%s", g_why);
	if (syslog_sink)
		fprintf(stderr, "flowgate: %s\n", g_why);
}

/* Free hugepages of every size, as EAL counts them. */
static unsigned long hugepages_free(void)
{
	static const char dir[] = "/sys/kernel/mm/hugepages";
	DIR *d = opendir(dir);
	unsigned long n = 0;
	struct dirent *e;

	while (d != NULL && (e = readdir(d)) != NULL) {
		char path[PATH_MAX];
		FILE *f;
		unsigned long v;

		if (strncmp(e->d_name, "hugepages-", 10) != 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s/free_hugepages", dir, e->d_name);
		f = fopen(path, "r");
		if (f != NULL && fscanf(f, "%lu", &v) == 1)
			n += v;
		if (f != NULL)
			fclose(f);
	}
	if (d != NULL)
		closedir(d);
	return n;
}

/* Why rte_eal_init() failed, as far as flowgate can tell. */
static void eal_failed(int argc, char **argv, int err)
{
	unsigned int uid = (unsigned int)geteuid();
	bool no_huge = has_arg(argc, argv, "--no-huge");

	if (uid != 0 && !no_huge)
		why("EAL init failed (%s): flowgate runs as uid %u, and DPDK needs root for "
		    "hugepages and devices: start it as root (sudo, or systemctl start "
		    "flowgate)", rte_strerror(err), uid);
	else if (!no_huge && hugepages_free() == 0)
		why("EAL init failed (%s): no free hugepages in /sys/kernel/mm/hugepages: "
		    "reserve them with 'make hugepages' (or echo 1024 > "
		    "/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages), or add the EAL "
		    "option --no-huge (virtual devices and tests only)", rte_strerror(err));
	else
		why("EAL init failed (%s): the EAL lines above name the option or resource "
		    "to fix", rte_strerror(err));
}

/* --pdump lets dpdk-dumpcap, a secondary process, map the daemon's
 * memory: shared hugepage memory, which these EAL modes do not keep. */
static int pdump_check(int argc, char **argv)
{
	static const char *const no_share[] = { "--no-huge", "--in-memory", "--no-shconf" };

	for (size_t i = 0; i < RTE_DIM(no_share); i++)
		if (has_arg(argc, argv, no_share[i])) {
			fprintf(stderr, "flowgate: --pdump with the EAL option %s: dpdk-dumpcap "
				"attaches to shared hugepage memory, which %s does not keep: drop "
				"%s, reserve hugepages (make hugepages) and give an EAL "
				"--file-prefix (docs/OBSERVABILITY.md), or drop --pdump\n",
				no_share[i], no_share[i], no_share[i]);
			return -EINVAL;
		}
	return 0;
}

/* --log-syslog writes to _PATH_LOG: without a daemon there, every line,
 * the reason of a failed start included, would vanish. */
static int syslog_check(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int e = 0;

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", _PATH_LOG);
	for (int type = SOCK_DGRAM; ; type = SOCK_STREAM) {
		int fd = socket(AF_UNIX, type | SOCK_CLOEXEC, 0);

		e = fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 ? 0 : errno;
		if (fd >= 0)
			close(fd);
		if (e != EPROTOTYPE || type == SOCK_STREAM)
			break;
	}
	if (e == 0)
		return 0;
	fprintf(stderr, "flowgate: --log-syslog: no syslog daemon listens on %s (%s): start "
		"one (systemd-journald or rsyslog), or drop --log-syslog to log to stderr\n",
		_PATH_LOG, strerror(e));
	return -e;
}

/* The control socket goes into an existing directory the daemon may write
 * (fg_ctl_server.h): checked before ports and workers are set up. */
static int socket_dir_check(const char *path)
{
	char dir[PATH_MAX];
	char *slash;
	unsigned int uid = (unsigned int)geteuid();
	int e;

	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (slash == NULL)
		snprintf(dir, sizeof(dir), ".");
	else
		*(slash == dir ? slash + 1 : slash) = '\0';
	if (faccessat(AT_FDCWD, dir, W_OK | X_OK, AT_EACCESS) == 0)
		return 0;
	e = errno;
	if (e == ENOENT || e == ENOTDIR)
		why("the control socket %s cannot be created: its directory %s does not "
		    "exist: create it, or give -s PATH (or control_socket) in an existing "
		    "directory", path, dir);
	else
		why("the control socket %s cannot be created: %s: %s (flowgate runs as uid "
		    "%u): run flowgate as root, as the systemd unit does, or give -s PATH in a "
		    "directory uid %u may write", path, dir, strerror(e), uid, uid);
	return -e;
}

/* ------------------------------------------------------------- serving */

static bool dp_alive(void *arg, char *why, size_t whylen)
{
	if (fg_dp_workers_alive(arg))
		return true;
	snprintf(why, whylen, "a worker lcore made no progress for %llu ms",
		 (unsigned long long)fg_sd_watchdog_half_us() / 1000);
	return false;
}

static unsigned int dp_poll(void *arg)
{
	return fg_dp_poll(arg);
}

static void serve(struct fg_dp *dp, const char *config_file)
{
	struct fg_daemon d = {
		.srv = fg_dp_ctl_server(dp), .config_file = config_file, .log = dp_log,
		.alive = dp_alive, .poll = dp_poll, .arg = dp,
	};

	fg_daemon_serve(&d);
}

static int run(struct fg_opts *o)
{
	struct fg_dp *dp;
	int rc;

	if (!strcmp(o->socket_path, FG_CTL_DEFAULT_SOCKET))
		mkdir("/run/flowgate", 0755);
	if (socket_dir_check(o->socket_path) < 0)
		return 1;
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
	fg_daemon_notify(&(struct fg_daemon){ .log = dp_log }, "STOPPING=1");
	if (rc == 0)
		FG_LOG(NOTICE, "signal %d, stopping health checks, control, workers",
		       (int)fg_daemon_stop_sig);
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
	if (o.dp.pdump && pdump_check(dd < argc ? dd : argc, argv) < 0) {
		fg_opts_free(&o);
		return 2;
	}
	if (o.log_syslog && syslog_check() < 0) {
		fg_opts_free(&o);
		return 1;
	}
	fg_log_open(o.log_syslog ? FG_LOG_SYSLOG : FG_LOG_STDERR);
	if (o.log_level >= 0)
		fg_log_level_set(o.log_level);
	eal = eal_args(dd < argc ? dd : argc, argv, o.dp.pdump, &n_eal);
	rte_set_application_usage_hook(usage_hook);
	atexit(rundir_remove);
	if (eal == NULL || rte_eal_init(n_eal, eal) < 0) {
		eal_failed(dd < argc ? dd : argc, argv, eal == NULL ? ENOMEM : rte_errno);
		why_log(o.log_syslog);
		fg_log_close();
		free(eal);
		fg_opts_free(&o);
		return 1;
	}
	fg_daemon_signals();
	snprintf(g_rundir, sizeof(g_rundir), "%s", rte_eal_get_runtime_dir());
	rc = run(&o);
	rte_eal_cleanup();
	if (rc == 0)
		FG_LOG(NOTICE, "stopped cleanly");
	else
		FG_LOG(ERR, "stopped after a failed start (EAL memory released)");
	if (rc != 0)
		why_log(o.log_syslog);
	fg_log_close();
	free(eal);
	fg_opts_free(&o);
	return rc;
}
