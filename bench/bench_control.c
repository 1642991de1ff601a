/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * flowgate-bench control: the control plane against a running daemon.
 *
 *   flowgate-bench control [--flows N] [--lcores 0-1] [--seconds S]
 *                          [--changes K] [--json]
 *
 * 1. fg-pcapgen writes N established IPv4 flows (one ACK each) to a pcap.
 * 2. The real daemon (build/dataplane/flowgate, 1 worker) replays it from
 *    memory (net_pcap infinite_rx=1) into a DSR-IPIP service and sends the
 *    result to net_null; we wait until conntrack holds the flows.
 * 3. list_s: wall time of `fgctl --json flows list > /dev/null` (every flow
 *    copied out by its worker through the conntrack mailbox, serialized,
 *    streamed, re-printed by fgctl).
 * 4. dataplane_drop_pct: the worker's packet rate while listing vs the rate
 *    in idle windows just before and after (same run, same traffic), median
 *    of --rounds listings (steps 3 and 4 repeat); as a
 *    baseline, the rate while a busy loop occupies the main lcore's CPU for
 *    as long as the listing took (dataplane_cpu_busy_*).
 * 5. publish_ms: request -> reply of `backend.weight`, K times, median.  The
 *    daemon replies only after rte_rcu_qsbr_synchronize() returned, i.e.
 *    once every worker has passed a quiescent point after the pointer swap
 *    and so forwards with the new table.
 *
 * Needs hugepages (scripts/hugepages.sh) and root (hugetlbfs).  Prints one
 * JSON object (--json) or a short text report.
 */
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <sched.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fg_proto.h"

extern char **environ;

int bench_control_main(int argc, char **argv);

struct bc {
	uint64_t flows;
	const char *lcores;
	double seconds;
	unsigned int changes;
	unsigned int rounds;
	bool json;
	char build[PATH_MAX - 64];
	char daemon[PATH_MAX], fgctl[PATH_MAX], pcapgen[PATH_MAX];
	char tmp[64], sock[100], log[160], pcap[160], scn[160];
	pid_t pid;
	int fd; /* persistent control connection */
	char *rbuf;
	size_t rlen, rcap;
};

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int fail(struct bc *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int fail(struct bc *b, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (b->json) {
		struct fg_json_writer w;
		fg_jw_init(&w, 0);
		fg_jw_obj_open(&w, NULL);
		fg_jw_str(&w, "bench", "control");
		fg_jw_str(&w, "status", "failed");
		fg_jw_str(&w, "reason", msg);
		fg_jw_str(&w, "daemon_log", b->log);
		fg_jw_obj_close(&w);
		printf("%s\n", w.buf);
		fg_jw_fini(&w);
	}
	fprintf(stderr, "flowgate-bench control: %s (daemon log: %s)\n", msg, b->log);
	return 1;
}

/* Runs argv with stdout/stderr to @p out (NULL = inherit); no wait. */
static pid_t spawn(char *const *args, const char *out)
{
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	if (out) {
		posix_spawn_file_actions_addopen(&fa, 1, out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		posix_spawn_file_actions_adddup2(&fa, 1, 2);
	}
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	pid_t pid;
	int rc = posix_spawn(&pid, args[0], &fa, NULL, args, environ);
	posix_spawn_file_actions_destroy(&fa);
	return rc ? -1 : pid;
}

static int wait_exit(pid_t pid)
{
	int st;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* ---- control connection ------------------------------------------------ */

static int ctl_connect(struct bc *b)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", b->sock);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		int e = -errno;
		close(fd);
		return e;
	}
	b->fd = fd;
	return 0;
}

/* One request, one (non-streaming) reply; resp must be freed. */
static int ctl_call(struct bc *b, const char *cmd, const char *args, struct fg_proto_resp *resp)
{
	char req[512];
	int n = snprintf(req, sizeof(req), "{\"v\":1,\"id\":1,\"cmd\":\"%s\",\"args\":%s}\n", cmd,
			 args ? args : "{}");
	if (send(b->fd, req, (size_t)n, MSG_NOSIGNAL) != n)
		return -EPIPE;
	for (;;) {
		char *nl = b->rlen ? memchr(b->rbuf, '\n', b->rlen) : NULL;
		if (nl) {
			size_t len = (size_t)(nl - b->rbuf);
			char err[200];
			int rc = fg_proto_resp_parse(b->rbuf, len, resp, err, sizeof(err));
			memmove(b->rbuf, nl + 1, b->rlen - len - 1);
			b->rlen -= len + 1;
			if (rc)
				return rc;
			if (resp->more) { /* not expected here: skip items */
				fg_proto_resp_free(resp);
				continue;
			}
			return resp->ok ? 0 : -EINVAL;
		}
		if (b->rcap - b->rlen < 65536) {
			b->rcap = b->rcap ? b->rcap * 2 : 1 << 20;
			b->rbuf = realloc(b->rbuf, b->rcap);
			if (!b->rbuf)
				return -ENOMEM;
		}
		ssize_t k = recv(b->fd, b->rbuf + b->rlen, b->rcap - b->rlen, 0);
		if (k <= 0)
			return -EPIPE;
		b->rlen += (size_t)k;
	}
}

/* rx_packets summed over workers (stats.total.rx_packets). */
static int rx_packets(struct bc *b, uint64_t *out)
{
	struct fg_proto_resp r;
	int rc = ctl_call(b, "stats", NULL, &r);
	if (!rc && fg_json_get_u64(fg_json_get(r.data, "total"), "rx_packets", out))
		rc = -EINVAL;
	fg_proto_resp_free(&r);
	return rc;
}

static int flows_total(struct bc *b, uint64_t *out)
{
	struct fg_proto_resp r;
	int rc = ctl_call(b, "flows.count", NULL, &r);
	if (!rc && fg_json_get_u64(r.data, "total", out))
		rc = -EINVAL;
	fg_proto_resp_free(&r);
	return rc;
}

/* Worker rate over a window of @p secs. */
static int measure_rate(struct bc *b, double secs, double *pps)
{
	uint64_t a, z;
	double t0 = now_s();
	if (rx_packets(b, &a))
		return -1;
	usleep((useconds_t)(secs * 1e6));
	if (rx_packets(b, &z))
		return -1;
	*pps = (double)(z - a) / (now_s() - t0);
	return 0;
}

static int cmp_dbl(const void *x, const void *y)
{
	double a = *(const double *)x, c = *(const double *)y;
	return a < c ? -1 : a > c;
}

static uint64_t pcap_packets(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return 0;
	uint64_t n = 0;
	uint32_t h[4];
	if (fseek(f, 24, SEEK_SET) == 0)
		while (fread(h, sizeof(h), 1, f) == 1 && fseek(f, h[2], SEEK_CUR) == 0)
			n++;
	fclose(f);
	return n;
}

static void stop_daemon(struct bc *b)
{
	if (b->fd >= 0)
		close(b->fd);
	b->fd = -1;
	if (b->pid > 0) {
		kill(b->pid, SIGINT);
		for (int i = 0; i < 100; i++) {
			if (waitpid(b->pid, NULL, WNOHANG) == b->pid) {
				b->pid = -1;
				break;
			}
			usleep(100000);
		}
		if (b->pid > 0) {
			kill(b->pid, SIGKILL);
			waitpid(b->pid, NULL, 0);
		}
	}
	b->pid = -1;
	unlink(b->sock);
}

static int usage(int rc)
{
	fprintf(rc ? stderr : stdout,
		"usage: flowgate-bench control [--flows N] [--lcores LIST] [--seconds S]\n"
		"                              [--changes K] [--rounds R] [--json]\n"
		"  --flows N     tracked flows to list (default 1000000)\n"
		"  --lcores L    EAL lcores: main + 1 worker (default 0-1)\n"
		"  --seconds S   idle rate window (default 1)\n"
		"  --rounds R    listings, each between two idle windows; the median drop\n"
		"                and list time are reported (default 5, at most 15)\n"
		"  --changes K   backend.weight changes timed for publish_ms (default 20)\n");
	return rc;
}

int bench_control_main(int argc, char **argv)
{
	struct bc b = { .flows = 1000000, .lcores = "0-1", .seconds = 1, .changes = 20,
			.rounds = 5,
			.pid = -1, .fd = -1 };
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "--json")) {
			b.json = true;
		} else if (!strcmp(a, "--flows") && v) {
			b.flows = strtoull(v, NULL, 10);
			i++;
		} else if (!strcmp(a, "--lcores") && v) {
			b.lcores = v;
			i++;
		} else if (!strcmp(a, "--seconds") && v) {
			b.seconds = atof(v);
			i++;
		} else if (!strcmp(a, "--rounds") && v) {
			b.rounds = (unsigned)atoi(v);
			i++;
		} else if (!strcmp(a, "--changes") && v) {
			b.changes = (unsigned)atoi(v);
			i++;
		} else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			return usage(0);
		} else {
			fprintf(stderr, "flowgate-bench control: unknown option '%s'\n", a);
			return usage(2);
		}
	}
	if (b.flows < 1000 || b.flows > 50000000 || b.seconds <= 0 || !b.changes ||
	    b.rounds < 1 || b.rounds > 15 ||
	    b.changes > 10000)
		return usage(2);

	/* binaries next to this one: BUILD/bench/flowgate-bench */
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0)
		return fail(&b, "cannot find my own path");
	self[n] = 0;
	snprintf(b.build, sizeof(b.build), "%s", dirname(dirname(self)));
	snprintf(b.daemon, sizeof(b.daemon), "%s/dataplane/flowgate", b.build);
	snprintf(b.fgctl, sizeof(b.fgctl), "%s/control/fgctl", b.build);
	snprintf(b.pcapgen, sizeof(b.pcapgen), "%s/bench/tools/fg-pcapgen", b.build);
	snprintf(b.tmp, sizeof(b.tmp), "/tmp/fg-bench-control-%d", (int)getpid());
	snprintf(b.log, sizeof(b.log), "%s.log", b.tmp);
	snprintf(b.sock, sizeof(b.sock), "%s.sock", b.tmp);
	snprintf(b.scn, sizeof(b.scn), "%s.scn", b.tmp);
	snprintf(b.pcap, sizeof(b.pcap), "/tmp/fg-bench-control-%" PRIu64 ".pcap", b.flows);
	const char *miss = access(b.daemon, X_OK) ? b.daemon : access(b.fgctl, X_OK) ? b.fgctl :
			   access(b.pcapgen, X_OK) ? b.pcapgen : NULL;
	if (miss)
		return fail(&b, "%s not built", miss);

	/* 1. traffic: N established flows to the DSR-IPIP VIP (cached pcap) */
	if (pcap_packets(b.pcap) != b.flows) {
		FILE *f = fopen(b.scn, "w");
		if (!f)
			return fail(&b, "cannot write %s", b.scn);
		fprintf(f, "name = control-%" PRIu64 "\nmode = dsr-ipip\nvip4 = 10.100.0.1\n"
			"vport = 80\nproto = tcp\npkt_size = 64\nflows = %" PRIu64 "\n"
			"flow_packets = 0\nsyn_flood_share = 0\nipv6_share = 0\n", b.flows, b.flows);
		fclose(f);
		char *gen[] = { b.pcapgen, b.scn, "-o", b.pcap, "--quiet", NULL };
		pid_t p = spawn(gen, NULL);
		int rc = p > 0 ? wait_exit(p) : -1;
		unlink(b.scn);
		if (rc)
			return fail(&b, "fg-pcapgen failed (%d)", rc);
	}
	uint64_t npk = pcap_packets(b.pcap);

	/* 2. the daemon */
	uint64_t cap = 65536;
	while (cap < 2 * b.flows)
		cap *= 2;
	char prefix[64], vdev_rx[256], capstr[32], mbufs[32];
	snprintf(prefix, sizeof(prefix), "fg-bench-ctl-%d", (int)getpid());
	snprintf(vdev_rx, sizeof(vdev_rx), "net_pcap0,rx_pcap=%s,infinite_rx=1", b.pcap);
	snprintf(capstr, sizeof(capstr), "%" PRIu64, cap);
	snprintf(mbufs, sizeof(mbufs), "%" PRIu64, npk + 65536);
	char *dargs[] = { b.daemon, "-l", (char *)b.lcores, "--file-prefix", prefix,
			  "--log-level=*:warning",
			  "--no-pci", "--vdev", vdev_rx, "--vdev", "net_null0,no-rx=1",
			  "--", "--workers", "1", "--socket", b.sock, "--ct-capacity", capstr,
			  "--mbufs", mbufs,
			  "--service", "10.100.0.1:80/tcp,mode=dsr-ipip,name=bench",
			  "--backend", "10.200.0.11,weight=100", "--backend", "10.200.0.12",
			  "--backend", "10.200.0.13",
			  "--local", "10.200.0.2,port=1", "--gateway", "10.200.0.1,port=1",
			  "--neigh", "10.200.0.1,02:00:00:00:00:01,port=1",
			  "--port-mac", "0,02:00:00:00:00:02", NULL };
	b.pid = spawn(dargs, b.log);
	if (b.pid < 0)
		return fail(&b, "cannot start %s", b.daemon);
	int rc = -1;
	double t_up = now_s();
	while (now_s() - t_up < 120) {
		if (waitpid(b.pid, NULL, WNOHANG) == b.pid) {
			b.pid = -1;
			return fail(&b, "the daemon exited during start-up");
		}
		if (!ctl_connect(&b)) {
			uint64_t x;
			if (!rx_packets(&b, &x)) {
				rc = 0;
				break;
			}
			close(b.fd);
			b.fd = -1;
		}
		usleep(100000);
	}
	if (rc) {
		stop_daemon(&b);
		return fail(&b, "the daemon did not answer on %s", b.sock);
	}
	/* wait for the table to fill: every flow seen at least once */
	uint64_t tracked = 0;
	double t_fill = now_s();
	while (now_s() - t_fill < 120) {
		if (flows_total(&b, &tracked)) {
			stop_daemon(&b);
			return fail(&b, "flows.count failed");
		}
		if (tracked >= b.flows * 99 / 100)
			break;
		usleep(200000);
	}
	if (tracked < b.flows * 99 / 100) {
		stop_daemon(&b);
		return fail(&b, "only %" PRIu64 " of %" PRIu64 " flows tracked after 120 s", tracked,
			    b.flows);
	}

	/* 3 + 4. listing vs idle rate.  fgctl and this process stay on the
	 * main lcore's CPU: a deployment isolates the worker cores (isolcpus),
	 * and without pinning the scheduler may time-share fgctl with the busy
	 * worker, which measures the kernel scheduler, not flowgate. */
	{
		cpu_set_t cs;
		CPU_ZERO(&cs);
		CPU_SET(atoi(b.lcores), &cs);
		if (sched_setaffinity(0, sizeof(cs), &cs))
			fprintf(stderr, "flowgate-bench control: cannot pin to cpu %d: %s\n",
				atoi(b.lcores), strerror(errno));
	}
	/* R rounds of (idle window, listing), then a last idle window: the
	 * drop of round r compares its listing rate with the idle windows on
	 * both sides of it.  The median over rounds is reported (one 0.7 s
	 * window on this shared VM swings by tens of percent either way:
	 * 0.4% to 32% were seen for the same binary), the samples beside it. */
	enum { MAX_ROUNDS = 15 };
	double idle_w[MAX_ROUNDS + 1], list_w[MAX_ROUNDS], drop_w[MAX_ROUNDS];
	double t0 = 0, t1 = 0;
	uint64_t rx0, rx1;
	char *largs[] = { b.fgctl, "-s", b.sock, "--json", "flows", "list", NULL };
	double list_s_w[MAX_ROUNDS];
	for (unsigned r = 0; r <= b.rounds; r++) {
		if (measure_rate(&b, b.seconds, &idle_w[r])) {
			stop_daemon(&b);
			return fail(&b, "stats failed");
		}
		if (r == b.rounds)
			break;
		if (rx_packets(&b, &rx0)) {
			stop_daemon(&b);
			return fail(&b, "stats failed");
		}
		t0 = now_s();
		pid_t lp = spawn(largs, "/dev/null");
		int lrc = lp > 0 ? wait_exit(lp) : -1;
		t1 = now_s();
		if (lrc || rx_packets(&b, &rx1)) {
			stop_daemon(&b);
			return fail(&b, "fgctl flows list failed (exit %d)", lrc);
		}
		list_s_w[r] = t1 - t0;
		list_w[r] = (double)(rx1 - rx0) / (t1 - t0);
	}
	for (unsigned r = 0; r < b.rounds; r++) {
		double idle = (idle_w[r] + idle_w[r + 1]) / 2;
		drop_w[r] = idle > 0 ? (1 - list_w[r] / idle) * 100 : 0;
		if (drop_w[r] < 0)
			drop_w[r] = 0;
	}
	double drop_sorted[MAX_ROUNDS], list_sorted[MAX_ROUNDS];
	memcpy(drop_sorted, drop_w, b.rounds * sizeof(double));
	memcpy(list_sorted, list_s_w, b.rounds * sizeof(double));
	qsort(drop_sorted, b.rounds, sizeof(double), cmp_dbl);
	qsort(list_sorted, b.rounds, sizeof(double), cmp_dbl);
	/* baseline for the drop: the same CPU busy for as long as a listing,
	 * without any control-plane work (separates "the main lcore's CPU was
	 * busy" from "the workers did listing work") */
	double hog_pps = 0;
	{
		uint64_t h0, h1;
		double hs = now_s(), dur = list_sorted[b.rounds / 2];
		if (rx_packets(&b, &h0) == 0) {
			pid_t hp = fork();
			if (hp == 0) {
				double end = now_s() + dur;
				volatile uint64_t x = 0;
				while (now_s() < end)
					x++;
				_exit(0);
			}
			if (hp > 0)
				waitpid(hp, NULL, 0);
			if (rx_packets(&b, &h1) == 0)
				hog_pps = (double)(h1 - h0) / (now_s() - hs);
		}
	}
	double list_s = list_sorted[b.rounds / 2];
	double drop = drop_sorted[b.rounds / 2];
	double idle = 0, listing = 0;
	for (unsigned r = 0; r <= b.rounds; r++)
		idle += idle_w[r] / (b.rounds + 1);
	for (unsigned r = 0; r < b.rounds; r++)
		listing += list_w[r] / b.rounds;

	/* 5. publish: backend.weight round trips */
	double *ms = calloc(b.changes, sizeof(*ms));
	for (unsigned i = 0; i < b.changes && ms; i++) {
		char args[200];
		snprintf(args, sizeof(args), "{\"service\":\"10.100.0.1:80/tcp\",\"addr\":\"10.200.0.11\","
			 "\"weight\":%u}", 100 + (i & 1));
		struct fg_proto_resp r;
		double s = now_s();
		int crc = ctl_call(&b, "backend.weight", args, &r);
		ms[i] = (now_s() - s) * 1e3;
		if (crc) {
			char why[300];
			snprintf(why, sizeof(why), "backend.weight failed: %s",
				 r.error ? r.error : strerror(-crc));
			fg_proto_resp_free(&r);
			free(ms);
			stop_daemon(&b);
			return fail(&b, "%s", why);
		}
		fg_proto_resp_free(&r);
	}
	if (!ms) {
		stop_daemon(&b);
		return fail(&b, "out of memory");
	}
	qsort(ms, b.changes, sizeof(*ms), cmp_dbl);
	double pub_med = ms[b.changes / 2], pub_max = ms[b.changes - 1];
	free(ms);
	stop_daemon(&b);
	unlink(b.log);

	if (b.json) {
		struct fg_json_writer w;
		fg_jw_init(&w, 0);
		fg_jw_obj_open(&w, NULL);
		fg_jw_str(&w, "bench", "control");
		fg_jw_u64(&w, "flows", b.flows);
		fg_jw_u64(&w, "flows_tracked", tracked);
		fg_jw_dbl(&w, "list_s", list_s);
		fg_jw_dbl(&w, "list_flows_per_s", (double)tracked / list_s);
		fg_jw_dbl(&w, "dataplane_idle_mpps", idle / 1e6);
		fg_jw_dbl(&w, "dataplane_listing_mpps", listing / 1e6);
		fg_jw_dbl(&w, "dataplane_drop_pct", drop);
		fg_jw_u64(&w, "rounds", b.rounds);
		fg_jw_dbl(&w, "dataplane_drop_pct_min", drop_sorted[0]);
		fg_jw_dbl(&w, "dataplane_drop_pct_max", drop_sorted[b.rounds - 1]);
		fg_jw_arr_open(&w, "dataplane_drop_pct_rounds");
		for (unsigned r = 0; r < b.rounds; r++)
			fg_jw_dbl(&w, NULL, drop_w[r]);
		fg_jw_arr_close(&w);
		fg_jw_dbl(&w, "dataplane_cpu_busy_mpps", hog_pps / 1e6);
		fg_jw_dbl(&w, "dataplane_cpu_busy_drop_pct",
			  idle > 0 && hog_pps < idle ? (1 - hog_pps / idle) * 100 : 0);
		fg_jw_dbl(&w, "publish_ms", pub_med);
		fg_jw_dbl(&w, "publish_ms_max", pub_max);
		fg_jw_u64(&w, "publish_changes", b.changes);
		fg_jw_u64(&w, "workers", 1);
		fg_jw_str(&w, "lcores", b.lcores);
		fg_jw_str(&w, "source", "net_pcap infinite_rx -> flowgate (DSR-IPIP) -> net_null");
		fg_jw_obj_open(&w, "targets");
		fg_jw_dbl(&w, "list_s", 2);
		fg_jw_dbl(&w, "dataplane_drop_pct", 5);
		fg_jw_dbl(&w, "publish_ms", 10);
		fg_jw_obj_close(&w);
		fg_jw_obj_close(&w);
		printf("%s\n", w.buf);
		fg_jw_fini(&w);
	} else {
		printf("flows tracked        %" PRIu64 "\n", tracked);
		printf("list_s               %.3f  (fgctl --json flows list > /dev/null; target <= 2)\n",
		       list_s);
		printf("dataplane idle       %.3f Mpps\n", idle / 1e6);
		printf("dataplane listing    %.3f Mpps\n", listing / 1e6);
		printf("dataplane_drop_pct   %.2f  (median of %u rounds, %.2f..%.2f; target <= 5)\n",
		       drop, b.rounds, drop_sorted[0], drop_sorted[b.rounds - 1]);
		printf("main cpu busy only   %.3f Mpps (baseline: same CPU load, no listing)\n",
		       hog_pps / 1e6);
		printf("publish_ms           %.3f median, %.3f max of %u backend.weight changes "
		       "(target <= 10)\n", pub_med, pub_max, b.changes);
	}
	return 0;
}
