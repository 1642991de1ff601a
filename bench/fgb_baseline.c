/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * flowgate-bench dataplane's baselines (fgb_dp.h): dpdk-testpmd io and
 * DPDK's l3fwd in exact-match mode, as child processes on the bench's pcap.
 *
 * l3fwd is DPDK 22.11's example as Debian's dpdk-doc ships it, copied to a
 * fresh directory under $TMPDIR (never into the source tree) and built
 * there with its own Makefile (pkg-config libdpdk).  Four lines of the copy
 * are changed, each because the stock example cannot run the bench's
 * replay otherwise; every change must apply exactly once or the build
 * stops (another DPDK's example would need looking at again):
 *   main.c  port_conf.rxmode.offloads RTE_ETH_RX_OFFLOAD_CHECKSUM -> 0:
 *           net_pcap offers no RX offload and rte_eth_dev_configure
 *           refuses the request (-EINVAL); the EM path never reads the
 *           checksum flags (its RFC 1812 checks look at version/length).
 *   main.c  NB_MBUF's floor 8192 -> FGB_L3FWD_MIN_MBUFS: net_pcap
 *           infinite_rx holds the whole pcap in mbufs of the RX pool (the
 *           pool is 8192 mbufs and --rx-queue-size stops at 65535).
 *   main.c  the pool's RTE_MBUF_DEFAULT_BUF_SIZE -> FGB_L3FWD_MBUF_BUF_SIZE:
 *           the same data room as testpmd's --mbuf-size and flowgate's
 *           pool, so the three replay the same memory footprint.
 *   l3fwd.h L3FWD_HASH_ENTRIES 4M -> FGB_L3FWD_HASH_ENTRIES: 4M, or the
 *           power of two >= 1.25 x the rules above 3.3M rules.
 * The rules: one exact-match route per distinct 5-tuple of the pcap, port
 * 1 out, in the file format of --rule_ipv4 (22.11 reads rule files; with
 * only one of --rule_ipv4/--rule_ipv6 it falls back to its built-in
 * arrays, so a one-line IPv6 file goes with it; without --ipv6 only the
 * IPv4 table is filled).  A miss would leave by port 0 (l3fwd sends it
 * back where it came from), so port 0's TX count is the miss count.
 *
 * Counters come from the running l3fwd's telemetry socket
 * (/ethdev/stats,N): l3fwd prints no rates of its own.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fgb_dp.h"

#define TAIL_LINES 24

/* the last lines a child printed, for the error message */
struct tail {
	char line[TAIL_LINES][256];
	unsigned int n;
};

static void tail_add(struct tail *t, const char *s)
{
	char *l = t->line[t->n++ % TAIL_LINES];
	size_t n = strnlen(s, sizeof(t->line[0]) - 1);

	memcpy(l, s, n);
	l[n] = '\0';
}

static void tail_print(const struct tail *t, const char *who)
{
	unsigned int first = t->n > TAIL_LINES ? t->n - TAIL_LINES : 0;

	fprintf(stderr, "  %s's last lines:\n", who);
	for (unsigned int i = first; i < t->n; i++) {
		const char *l = t->line[i % TAIL_LINES];

		fprintf(stderr, "    %s%s", l, l[0] && l[strlen(l) - 1] == '\n' ? "" : "\n");
	}
}

static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* `sh -c "exec CMD"` with stdout and stderr on a pipe: the pid is CMD's.
 * @return the pid (and *@p out the pipe's read end), or -1. */
static pid_t spawn_piped(const char *cmd, int *out)
{
	int p[2];
	pid_t pid;

	if (pipe(p) != 0)
		return -1;
	pid = fork();
	if (pid == 0) {
		int in = open("/dev/null", O_RDONLY);

		/* never outlive the bench */
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		if (in < 0 || dup2(in, 0) < 0 || dup2(p[1], 1) < 0 || dup2(p[1], 2) < 0)
			_exit(126);
		close(p[0]);
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	if (pid < 0) {
		close(p[0]);
		return -1;
	}
	*out = p[0];
	return pid;
}

/* port 0's Rx-pps samples of testpmd's stats blocks (port 0, then 1) */
struct pps {
	int port, n;
	double v[64];
};

static void pps_line(struct pps *p, const char *l)
{
	const char *x;

	if ((x = strstr(l, "NIC statistics for port ")) != NULL)
		p->port = atoi(x + 24);
	else if ((x = strstr(l, "Rx-pps:")) != NULL && p->port == 0 && p->n < 64 &&
		 strtod(x + 7, NULL) > 0)
		p->v[p->n++] = strtod(x + 7, NULL);
}

/* Reads what @p fd has within @p wait seconds, line by line into @p t and
 * @p p (and stderr when verbose).  @return 1 at EOF, else 0. */
static int read_lines(int fd, struct tail *t, struct pps *p, char *buf, size_t cap,
		      size_t *len, double wait, bool verbose)
{
	struct pollfd pfd = {.fd = fd, .events = POLLIN};
	ssize_t n;

	if (poll(&pfd, 1, (int)(wait * 1000)) <= 0)
		return 0;
	n = read(fd, buf + *len, cap - 1 - *len);
	if (n <= 0)
		return 1;
	*len += (size_t)n;
	buf[*len] = '\0';
	for (char *nl; (nl = strchr(buf, '\n')) != NULL || *len == cap - 1;) {
		size_t k = nl ? (size_t)(nl - buf) + 1 : *len;
		char c = buf[k];

		buf[k] = '\0';
		if (verbose)
			fputs(buf, stderr);
		tail_add(t, buf);
		pps_line(p, buf);
		buf[k] = c;
		memmove(buf, buf + k, *len - k + 1);
		*len -= k;
	}
	return 0;
}

static void runtime_dir(char *buf, size_t len, const char *prefix);
static void rm_tree(const char *dir);

int fgb_testpmd_run(const struct fgb_base_cfg *c, double *mpps)
{
	/* FG_TESTPMD / FG_TESTPMD_EAL: where testpmd is not installed (the
	 * device machine carries it with its PMDs: "-d DIR") */
	const char *bin = getenv("FG_TESTPMD") ? getenv("FG_TESTPMD") : "dpdk-testpmd";
	const char *extra = getenv("FG_TESTPMD_EAL") ? getenv("FG_TESTPMD_EAL") : "";
	bool verbose = getenv("FG_BENCH_VERBOSE") != NULL, oversub;
	char cmd[1024], lcores[96], size[32] = "", buf[4096];
	/* the first sample includes start-up; then one a second */
	int want = 1 + (c->seconds < 2 ? 2 : (int)(c->seconds + 0.999));
	/* start-up: EAL memory, then the whole pcap read into mbufs */
	double deadline = now_s() + 60 + (double)c->pcap_packets / 1e5;
	static struct tail tail;
	struct pps p = {.port = -1};
	int fd, st, eof = 0;
	size_t len = 0;
	pid_t pid;

	fgb_eal_lcores(lcores, sizeof(lcores), 0, 2, &oversub);
	if (c->mbuf_size)
		snprintf(size, sizeof(size), "--mbuf-size=%u", c->mbuf_size);
	snprintf(cmd, sizeof(cmd),
		 "exec %s '%s' %s %s --file-prefix fgb-tpmd%d %s '--log-level=*:error' -- "
		 "--forward-mode=io --auto-start --stats-period 1 --nb-cores=1 --rxq=1 "
		 "--txq=1 --total-num-mbufs=%u %s",
		 bin, lcores, extra, c->mem_args, (int)getpid(), c->vdevs, c->n_mbufs, size);
	if (verbose)
		fprintf(stderr, "flowgate-bench: %s\n", cmd);
	tail.n = 0;
	pid = spawn_piped(cmd, &fd);
	if (pid < 0) {
		fprintf(stderr, "flowgate-bench: testpmd baseline: %s\n", strerror(errno));
		return -1;
	}
	/* SIGINT once the samples are in (testpmd stops its ports and exits) */
	while (!eof && p.n < want && now_s() < deadline) {
		int had = p.n;

		eof = read_lines(fd, &tail, &p, buf, sizeof(buf), &len, 0.5, verbose);
		if (had == 0 && p.n > 0)	/* started: a sample a second from now */
			deadline = now_s() + want + 10;
	}
	if (!eof)
		kill(pid, SIGINT);
	for (double stop = now_s() + 10; !eof && now_s() < stop;)
		eof = read_lines(fd, &tail, &p, buf, sizeof(buf), &len, 0.5, verbose);
	if (!eof)
		kill(pid, SIGKILL);
	close(fd);
	waitpid(pid, &st, 0);
	{	/* EAL leaves its runtime directory behind: testpmd's goes with it */
		char pfx[32], rundir[PATH_MAX];

		snprintf(pfx, sizeof(pfx), "fgb-tpmd%d", (int)getpid());
		runtime_dir(rundir, sizeof(rundir), pfx);
		rm_tree(rundir);
	}
	if (p.n < want) {
		fprintf(stderr, "flowgate-bench: the testpmd io baseline did not run "
			"(%d of %d Rx-pps samples, %s %d; --no-testpmd skips it): %s\n", p.n, want,
			WIFEXITED(st) ? "exit status" : "signal",
			WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st), cmd);
		tail_print(&tail, "testpmd");
		return -1;
	}
	/* the first sample includes start-up */
	qsort(p.v + 1, (size_t)p.n - 1, sizeof(p.v[0]), cmp_dbl);
	*mpps = p.v[1 + (p.n - 1) / 2] / 1e6;
	return 0;
}

/* ------------------------------------------------------------- l3fwd ---- */

struct fgb_l3fwd {
	char dir[PATH_MAX - 64];	/* the temp dir: l3fwd/, common/, rules, logs */
	char bin[PATH_MAX], rules4[PATH_MAX], rules6[PATH_MAX], log[PATH_MAX];
	uint64_t rules, hash_entries;
	pid_t pid;
};

/* one IPv4 5-tuple, as two words that sort and compare */
struct tuple {
	uint64_t addrs;	/* src << 32 | dst */
	uint64_t rest;	/* sport << 24 | dport << 8 | proto */
};

static int cmp_tuple(const void *a, const void *b)
{
	const struct tuple *x = a, *y = b;

	if (x->addrs != y->addrs)
		return x->addrs < y->addrs ? -1 : 1;
	return x->rest < y->rest ? -1 : x->rest > y->rest;
}

static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* The distinct 5-tuples of @p path (Ethernet, IPv4, TCP/UDP frames only:
 * what l3fwd EM can match), sorted.  @return the count, or -1. */
static int64_t pcap_tuples(const char *path, uint64_t max, struct tuple **out)
{
	struct { uint32_t magic; uint16_t maj, min; int32_t z; uint32_t sf, snap, lt; } gh;
	struct { uint32_t sec, frac, caplen, len; } rh;
	static uint8_t d[65536];
	struct tuple *t = malloc((max ? max : 1) * sizeof(*t));
	FILE *f = fopen(path, "rb");
	uint64_t n = 0, u = 0;

	if (t == NULL || f == NULL || fread(&gh, sizeof(gh), 1, f) != 1 ||
	    (gh.magic != 0xa1b2c3d4 && gh.magic != 0xa1b23c4d) || gh.lt != 1) {
		fprintf(stderr, "flowgate-bench: l3fwd rules: %s is not an Ethernet pcap of "
			"this host's byte order\n", path);
		goto fail;
	}
	while (fread(&rh, sizeof(rh), 1, f) == 1) {
		if (rh.caplen > sizeof(d) || fread(d, rh.caplen, 1, f) != 1 || n == max)
			goto short_read;
		unsigned int l4 = 14 + (d[14] & 0xfu) * 4;

		if (rh.caplen < l4 + 4 || d[12] != 0x08 || d[13] != 0x00 ||
		    (d[23] != 6 && d[23] != 17)) {
			fprintf(stderr, "flowgate-bench: l3fwd rules: packet %" PRIu64 " of %s is "
				"not IPv4 TCP/UDP, which l3fwd EM cannot match\n", n, path);
			goto fail;
		}
		t[n].addrs = (uint64_t)be32(d + 26) << 32 | be32(d + 30);
		t[n++].rest = (uint64_t)(d[l4] << 8 | d[l4 + 1]) << 24 |
			      (uint64_t)(d[l4 + 2] << 8 | d[l4 + 3]) << 8 | d[23];
	}
	if (n != max)
		goto short_read;
	fclose(f);
	qsort(t, n, sizeof(*t), cmp_tuple);
	for (uint64_t i = 0; i < n; i++)
		if (u == 0 || cmp_tuple(&t[u - 1], &t[i]) != 0)
			t[u++] = t[i];
	*out = t;
	return (int64_t)u;
short_read:
	fprintf(stderr, "flowgate-bench: l3fwd rules: %s does not hold %" PRIu64
		" whole packets\n", path, max);
fail:
	if (f)
		fclose(f);
	free(t);
	return -1;
}

static int write_rules(struct fgb_l3fwd *l, const struct fgb_base_cfg *c)
{
	struct tuple *t = NULL;
	int64_t n = pcap_tuples(c->pcap, c->pcap_packets, &t);
	FILE *f;

	if (n <= 0)
		return -1;
	f = fopen(l->rules4, "w");
	for (int64_t i = 0; f && i < n; i++) {
		uint32_t s = (uint32_t)(t[i].addrs >> 32), d = (uint32_t)t[i].addrs;

		/* R<dst> <src> <dst port> <src port> <proto> <out port> */
		fprintf(f, "R%u.%u.%u.%u %u.%u.%u.%u %u %u %u 1\n", d >> 24, d >> 16 & 255,
			d >> 8 & 255, d & 255, s >> 24, s >> 16 & 255, s >> 8 & 255, s & 255,
			(unsigned int)(t[i].rest >> 8 & 0xffff), (unsigned int)(t[i].rest >> 24),
			(unsigned int)(t[i].rest & 255));
	}
	free(t);
	if (f == NULL || fclose(f) != 0) {
		fprintf(stderr, "flowgate-bench: l3fwd rules: cannot write %s\n", l->rules4);
		return -1;
	}
	/* not loaded (no --ipv6), but l3fwd reads files only when given both */
	f = fopen(l->rules6, "w");
	if (f == NULL || fputs("R2001:db8::1 2001:db8::2 9 9 17 1\n", f) < 0 || fclose(f) != 0) {
		fprintf(stderr, "flowgate-bench: l3fwd rules: cannot write %s\n", l->rules6);
		return -1;
	}
	l->rules = (uint64_t)n;
	return 0;
}

/* Replaces the one occurrence of @p from in @p path by @p to. */
static int patch_file(const char *path, const char *from, const char *to)
{
	FILE *f = fopen(path, "rb");
	char *s = NULL, *hit = NULL;
	long len;
	int rc = -1;

	if (f == NULL || fseek(f, 0, SEEK_END) != 0 || (len = ftell(f)) < 0 ||
	    fseek(f, 0, SEEK_SET) != 0 || (s = calloc(1, (size_t)len + 1)) == NULL ||
	    fread(s, 1, (size_t)len, f) != (size_t)len)
		goto out;
	fclose(f);
	f = NULL;
	hit = strstr(s, from);
	if (hit == NULL || strstr(hit + 1, from) != NULL) {
		fprintf(stderr, "flowgate-bench: l3fwd: \"%s\" is not in %s exactly once: "
			"not the DPDK 22.11 example this bench patches\n", from, path);
		free(s);
		return -1;
	}
	f = fopen(path, "wb");
	if (f == NULL || fwrite(s, 1, (size_t)(hit - s), f) != (size_t)(hit - s) ||
	    fputs(to, f) < 0 || fputs(hit + strlen(from), f) < 0)
		goto out;
	rc = fclose(f) == 0 ? 0 : -1;
	f = NULL;
out:
	if (f)
		fclose(f);
	if (rc < 0)
		fprintf(stderr, "flowgate-bench: l3fwd: cannot patch %s: %s\n", path,
			strerror(errno));
	free(s);
	return rc;
}

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb, (void)flag, (void)ftw;
	return remove(path);
}

/* removes @p dir and everything under it (a directory this bench made) */
static void rm_tree(const char *dir)
{
	if (dir[0])
		nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* @p path's last lines, without l3fwd's line per rule */
static void log_print(const char *path, const char *who)
{
	static struct tail t;
	char line[256];
	FILE *f = fopen(path, "r");

	t.n = 0;
	while (f && fgets(line, sizeof(line), f))
		if (strncmp(line, "EM: Adding route", 16) != 0)
			tail_add(&t, line);
	if (f)
		fclose(f);
	tail_print(&t, who);
}

/* Runs @p cmd through sh, output appended to @p log.  @return 0 or -1. */
static int run_logged(const char *cmd, const char *log)
{
	char full[8192];
	int st;

	if (getenv("FG_BENCH_VERBOSE"))
		fprintf(stderr, "flowgate-bench: %s\n", cmd);
	snprintf(full, sizeof(full), "(%s) >>'%s' 2>&1 </dev/null", cmd, log);
	st = system(full);
	if (st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0)
		return 0;
	fprintf(stderr, "flowgate-bench: l3fwd baseline: `%s` failed (status %d)\n", cmd,
		st != -1 && WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	log_print(log, "the build");
	return -1;
}

/* the changes to the example's copy (this file's header says why) */
static const struct { const char *file, *from, *to; } l3fwd_patches[] = {
	{"main.c", "\t\t.offloads = RTE_ETH_RX_OFFLOAD_CHECKSUM,\n",
	 "\t\t.offloads = 0, /* flowgate-bench: vdevs have no RX offload */\n"},
	{"main.c", "\t(unsigned)8192)\n", "\t(unsigned)FGB_L3FWD_MIN_MBUFS)\n"},
	{"main.c", "RTE_MBUF_DEFAULT_BUF_SIZE, socketid);",
	 "FGB_L3FWD_MBUF_BUF_SIZE, socketid);"},
	{"l3fwd.h", "#define L3FWD_HASH_ENTRIES\t\t(1024*1024*4)\n",
	 "#define L3FWD_HASH_ENTRIES\t\tFGB_L3FWD_HASH_ENTRIES\n"},
};

static int l3fwd_compile(struct fgb_l3fwd *l, const struct fgb_base_cfg *c, const char *src)
{
	char cmd[4 * PATH_MAX + 256], path[PATH_MAX + 32], size[32];

	snprintf(cmd, sizeof(cmd), "cp -r '%s/l3fwd' '%s/common' '%s/'", src, src, l->dir);
	if (run_logged(cmd, l->log) < 0)
		return -1;
	for (size_t i = 0; i < sizeof(l3fwd_patches) / sizeof(l3fwd_patches[0]); i++) {
		snprintf(path, sizeof(path), "%s/l3fwd/%s", l->dir, l3fwd_patches[i].file);
		if (patch_file(path, l3fwd_patches[i].from, l3fwd_patches[i].to) < 0)
			return -1;
	}
	if (c->mbuf_size)
		snprintf(size, sizeof(size), "%u", c->mbuf_size);
	else
		snprintf(size, sizeof(size), "RTE_MBUF_DEFAULT_BUF_SIZE");
	snprintf(cmd, sizeof(cmd),
		 "CFLAGS='-DFGB_L3FWD_MIN_MBUFS=%u -DFGB_L3FWD_MBUF_BUF_SIZE=%s "
		 "-DFGB_L3FWD_HASH_ENTRIES=%" PRIu64 "' make -C '%s/l3fwd'",
		 c->n_mbufs, size, l->hash_entries, l->dir);
	if (run_logged(cmd, l->log) < 0)
		return -1;
	if (access(l->bin, X_OK) != 0) {
		fprintf(stderr, "flowgate-bench: l3fwd baseline: make built no %s\n", l->bin);
		return -1;
	}
	return 0;
}

/* DPDK's examples (dpdk-doc), or $FG_L3FWD_EXAMPLES */
static const char *l3fwd_src(void)
{
	return getenv("FG_L3FWD_EXAMPLES") ? getenv("FG_L3FWD_EXAMPLES")
					   : "/usr/share/dpdk/examples";
}

/* A new fgb_l3fwd with its temp dir under $TMPDIR and the paths in it;
 * NULL with the reason on stderr. */
static struct fgb_l3fwd *l3fwd_new(void)
{
	const char *tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	struct fgb_l3fwd *l = calloc(1, sizeof(*l));

	if (l == NULL)
		return NULL;
	snprintf(l->dir, sizeof(l->dir), "%s/fgb-l3fwd-XXXXXX", tmp);
	if (mkdtemp(l->dir) == NULL) {
		fprintf(stderr, "flowgate-bench: l3fwd baseline: mkdtemp %s: %s\n", l->dir,
			strerror(errno));
		free(l);
		return NULL;
	}
	snprintf(l->bin, sizeof(l->bin), "%s/l3fwd/build/l3fwd", l->dir);
	snprintf(l->rules4, sizeof(l->rules4), "%s/rules_v4.cfg", l->dir);
	snprintf(l->rules6, sizeof(l->rules6), "%s/rules_v6.cfg", l->dir);
	snprintf(l->log, sizeof(l->log), "%s/build.log", l->dir);
	return l;
}

/* PATH.params of a prebuilt l3fwd: the sizes it was compiled with, as
 * flowgate-bench l3fwd writes them and FG_L3FWD_BIN reads them. */
#define L3FWD_PARAMS(u64) "mbufs=%u mbuf_size=%u entries=%" u64

/* The sizes a prebuilt l3fwd was compiled with (flowgate-bench l3fwd
 * writes them to PATH.params). */
struct l3fwd_params {
	unsigned int mbufs, mbuf_size;
	uint64_t entries;
};

/* FG_L3FWD_BIN: a prebuilt l3fwd, for a machine without DPDK's examples
 * and toolchain (the device).  It serves a run whose pcap fits its pool,
 * whose rules fit its table and whose mbuf size it was built with; any
 * other run is refused, never measured with the wrong sizes. */
static int l3fwd_prebuilt(struct fgb_l3fwd *l, const struct fgb_base_cfg *c,
			  const char *bin)
{
	struct l3fwd_params pr;
	char pp[PATH_MAX + 8];
	FILE *f;
	int n = 0;

	snprintf(pp, sizeof(pp), "%s.params", bin);
	f = fopen(pp, "r");
	if (f != NULL) {
		n = fscanf(f, L3FWD_PARAMS(SCNu64), &pr.mbufs,
			   &pr.mbuf_size, &pr.entries);
		fclose(f);
	}
	if (n != 3 || access(bin, X_OK) != 0) {
		fprintf(stderr, "flowgate-bench: FG_L3FWD_BIN=%s: no such executable with its "
			"%s (`flowgate-bench l3fwd` builds both)\n", bin, pp);
		return -1;
	}
	if (pr.mbufs < c->n_mbufs || pr.entries < l->hash_entries ||
	    pr.mbuf_size != c->mbuf_size) {
		fprintf(stderr, "flowgate-bench: FG_L3FWD_BIN=%s was built for %u mbufs of "
			"size %u and %" PRIu64 " hash entries; this run needs >= %u mbufs of "
			"size %u and >= %" PRIu64 " entries\n", bin, pr.mbufs, pr.mbuf_size,
			pr.entries, c->n_mbufs, c->mbuf_size, l->hash_entries);
		return -1;
	}
	snprintf(l->bin, sizeof(l->bin), "%s", bin);
	l->hash_entries = pr.entries;
	return 0;
}

int fgb_l3fwd_build(const struct fgb_base_cfg *c, struct fgb_l3fwd **out)
{
	const char *prebuilt = getenv("FG_L3FWD_BIN");
	struct fgb_l3fwd *l;
	char probe[PATH_MAX];

	*out = NULL;
	snprintf(probe, sizeof(probe), "%s/l3fwd/l3fwd_em.c", l3fwd_src());
	if (prebuilt == NULL && access(probe, R_OK) != 0) {
		fprintf(stderr, "flowgate-bench: the l3fwd baseline needs DPDK's examples: "
			"no %s (apt-get install dpdk-doc, as scripts/install-deps.sh does; "
			"--no-l3fwd skips it)\n", probe);
		return -1;
	}
	l = l3fwd_new();
	if (l == NULL)
		return -1;
	if (write_rules(l, c) < 0)
		goto fail;
	l->hash_entries = 4u << 20;
	while (l->hash_entries < l->rules + l->rules / 4)
		l->hash_entries *= 2;
	if (prebuilt != NULL ? l3fwd_prebuilt(l, c, prebuilt) < 0 :
			       l3fwd_compile(l, c, l3fwd_src()) < 0)
		goto fail;
	snprintf(l->log, sizeof(l->log), "%s/l3fwd.log", l->dir);
	*out = l;
	return 0;
fail:
	fgb_l3fwd_destroy(l);
	return -1;
}

/*
 * flowgate-bench l3fwd: builds the l3fwd baseline once, for a machine that
 * has no DPDK examples or toolchain (FG_L3FWD_BIN there): the same copy and
 * patches as a run's build, with the sizes given, to PATH and PATH.params.
 */
int bench_l3fwd_main(int argc, char **argv)
{
	struct fgb_base_cfg c = {0};
	struct fgb_l3fwd *l = NULL;
	const char *outp = NULL;
	uint64_t entries = 0;
	char cmd[2 * PATH_MAX + 64];
	FILE *f;
	int rc = 1;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--mbufs") && i + 1 < argc)
			c.n_mbufs = (unsigned int)strtoul(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--mbuf-size") && i + 1 < argc)
			c.mbuf_size = (unsigned int)strtoul(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--entries") && i + 1 < argc)
			entries = strtoull(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--out") && i + 1 < argc)
			outp = argv[++i];
		else {
			fprintf(stderr, "usage: flowgate-bench l3fwd --mbufs N --entries E "
				"[--mbuf-size B (0: DPDK's default)] --out PATH\n"
				"  builds the dataplane bench's l3fwd baseline for FG_L3FWD_BIN=PATH\n"
				"  (a run needs N >= its pcap's packets + 65536, E >= 1.25 x its "
				"flows, and its mbuf size:\n  256 + headroom for 64 B frames, 0 "
				"for --imix)\n");
			return strcmp(argv[i], "--help") && strcmp(argv[i], "-h") ? 2 : 0;
		}
	}
	if (outp == NULL || c.n_mbufs == 0 || entries == 0) {
		fprintf(stderr, "flowgate-bench l3fwd: --mbufs, --entries and --out are required\n");
		return 2;
	}
	l = l3fwd_new();
	if (l == NULL)
		return 1;
	l->hash_entries = entries;
	if (l3fwd_compile(l, &c, l3fwd_src()) < 0)
		goto out;
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", l->bin, outp);
	if (run_logged(cmd, l->log) < 0)
		goto out;
	snprintf(cmd, sizeof(cmd), "%s.params", outp);
	f = fopen(cmd, "w");
	if (f == NULL || fprintf(f, L3FWD_PARAMS(PRIu64) "\n", c.n_mbufs, c.mbuf_size,
				 l->hash_entries) < 0 || fclose(f) != 0) {
		fprintf(stderr, "flowgate-bench l3fwd: cannot write %s\n", cmd);
		goto out;
	}
	printf("%s (%s.params: %u mbufs of size %u, %" PRIu64 " entries)\n", outp, outp,
	       c.n_mbufs, c.mbuf_size, l->hash_entries);
	rc = 0;
out:
	fgb_l3fwd_destroy(l);
	return rc;
}

void fgb_l3fwd_destroy(struct fgb_l3fwd *l)
{
	if (l == NULL)
		return;
	rm_tree(l->dir);
	free(l);
}

/* ---- the running l3fwd, read through its telemetry socket ---- */

static int tel_connect(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	char hello[1024];
	size_t n = strlen(path);
	int fd;

	if (n >= sizeof(sa.sun_path))
		return -1;
	memcpy(sa.sun_path, path, n + 1);
	fd = socket(AF_UNIX, SOCK_SEQPACKET, 0);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 &&
	    read(fd, hello, sizeof(hello)) > 0)	/* {"version": ...} */
		return fd;
	if (fd >= 0)
		close(fd);
	return -1;
}

/* port @p port's ipackets and opackets.  @return 0 or -1. */
static int tel_port(int fd, unsigned int port, uint64_t *ipk, uint64_t *opk)
{
	static char buf[16385];	/* telemetry answers in at most 16 KiB */
	char cmd[32];
	const char *i, *o;
	ssize_t n;

	snprintf(cmd, sizeof(cmd), "/ethdev/stats,%u", port);
	if (write(fd, cmd, strlen(cmd)) < 0 || (n = read(fd, buf, sizeof(buf) - 1)) <= 0)
		return -1;
	buf[n] = '\0';
	i = strstr(buf, "\"ipackets\":");
	o = strstr(buf, "\"opackets\":");
	if (i == NULL || o == NULL)
		return -1;
	*ipk = strtoull(i + 11, NULL, 10);
	*opk = strtoull(o + 11, NULL, 10);
	return 0;
}

/* Port 0 in (rx_a), port 1 out (fwd, at t), port 0 again (rx_c, and its
 * out: misses).  Every packet in by rx_a has had time to leave by fwd's
 * read, but for the few l3fwd holds (a burst, a TX buffer). */
struct l3_sample {
	double t;
	uint64_t rx_a, fwd, rx_c, miss;
};

static int l3_sample(int fd, struct l3_sample *s)
{
	uint64_t x;
	double t0;

	if (tel_port(fd, 0, &s->rx_a, &x) < 0)
		return -1;
	t0 = now_s();
	if (tel_port(fd, 1, &x, &s->fwd) < 0)
		return -1;
	s->t = (t0 + now_s()) / 2;
	return tel_port(fd, 0, &s->rx_c, &s->miss);
}

/* packets l3fwd may hold between RX and TX: a burst and a TX buffer per
 * port (MAX_PKT_BURST 32), drained every 100 us */
#define L3FWD_IN_FLIGHT 256

static void sleep_s(double s)
{
	struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* EAL's runtime directory of file prefix @p prefix (eal_create_runtime_dir) */
static void runtime_dir(char *buf, size_t len, const char *prefix)
{
	const char *base = getuid() == 0 ? "/var/run" :
			   getenv("XDG_RUNTIME_DIR") ? getenv("XDG_RUNTIME_DIR") : "/tmp";

	snprintf(buf, len, "%s/dpdk/%s", base, prefix);
}

/* argv of the l3fwd run in @p words (storage) / @p argv; @p cmd: as text */
static void l3fwd_argv(const struct fgb_l3fwd *l, const struct fgb_base_cfg *c,
		       const char *prefix, char *words, size_t wlen, char **argv,
		       char *cmd, size_t clen)
{
	static char lcores[96], r4[PATH_MAX + 16], r6[PATH_MAX + 16];
	/* FG_L3FWD_EAL: more EAL words, as FG_TESTPMD_EAL (-d PMD_DIR where
	 * DPDK is not installed) */
	const char *extra = getenv("FG_L3FWD_EAL") ? getenv("FG_L3FWD_EAL") : "";
	char *save = NULL, *tok;
	bool oversub;
	int ac = 0;
	size_t o;

	/* lcore 1 alone: the CPU flowgate's worker 0 and testpmd's forwarding
	 * lcore use; one lcore, so one TX queue per port (net_pcap has one) */
	fgb_eal_lcores(lcores, sizeof(lcores), 1, 2, &oversub);
	if (strstr(c->mem_args, "--no-huge")) {
		/* the pcap in mbufs and both EM tables (the IPv6 one is sized
		 * alike): ~120 B a hash entry, plus slack */
		uint64_t mb = ((uint64_t)c->n_mbufs * ((c->mbuf_size ? c->mbuf_size : 2176) + 192) +
			       l->hash_entries * 120) / (1u << 20) + 1024;

		snprintf(words, wlen, "--no-huge -m %" PRIu64 " --file-prefix %s %s %s", mb < 4096 ?
			 4096 : mb, prefix, c->vdevs, extra);
	} else {
		snprintf(words, wlen, "%s --file-prefix %s %s %s", c->mem_args, prefix, c->vdevs,
			 extra);
	}
	argv[ac++] = (char *)l->bin;
	argv[ac++] = lcores;
	for (tok = strtok_r(words, " ", &save); tok && ac < 40; tok = strtok_r(NULL, " ", &save))
		argv[ac++] = tok;
	argv[ac++] = "--log-level=*:error";
	argv[ac++] = "--";
	argv[ac++] = "-p";
	argv[ac++] = "0x3";
	argv[ac++] = "--config=(0,0,1)";
	argv[ac++] = "-E";
	argv[ac++] = "--parse-ptype";
	snprintf(r4, sizeof(r4), "--rule_ipv4=%s", l->rules4);
	snprintf(r6, sizeof(r6), "--rule_ipv6=%s", l->rules6);
	argv[ac++] = r4;
	argv[ac++] = r6;
	argv[ac] = NULL;
	o = 0;
	for (int k = 0; k < ac && o < clen; k++)
		o += (size_t)snprintf(cmd + o, clen - o, "%s%s", k ? " " : "", argv[k]);
}

static pid_t l3fwd_spawn(const char *log, char **argv)
{
	pid_t pid = fork();

	if (pid == 0) {
		int out = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		int in = open("/dev/null", O_RDONLY);

		/* never outlive the bench (l3fwd quits on SIGTERM) */
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		if (out < 0 || in < 0 || dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(out, 2) < 0)
			_exit(126);
		execv(argv[0], argv);
		_exit(127);
	}
	return pid;
}

/* SIGINT (l3fwd stops its ports and exits), SIGKILL after 10 s */
static void l3fwd_stop(pid_t pid)
{
	int st;

	kill(pid, SIGINT);
	for (int i = 0; i < 200; i++) {
		if (waitpid(pid, &st, WNOHANG) == pid)
			return;
		sleep_s(0.05);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
}

/* Waits until l3fwd answers on @p sock and port 0 received the pcap once.
 * @return the telemetry socket, or -1 (reason printed). */
static int l3fwd_ready(pid_t pid, const char *sock, const struct fgb_base_cfg *c,
		       double limit)
{
	double deadline = now_s() + limit;
	uint64_t in = 0, out;
	int fd = -1, st;

	for (;;) {
		if (waitpid(pid, &st, WNOHANG) == pid) {
			fprintf(stderr, "flowgate-bench: l3fwd baseline: l3fwd exited while "
				"starting (%s %d)\n", WIFEXITED(st) ? "status" : "signal",
				WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
			break;
		}
		if (fd < 0)
			fd = tel_connect(sock);
		if (fd >= 0 && tel_port(fd, 0, &in, &out) < 0) {
			close(fd);
			fd = -1;
		}
		if (fd >= 0 && in >= c->pcap_packets)
			return fd;
		if (now_s() > deadline) {
			fprintf(stderr, "flowgate-bench: l3fwd baseline: no full pass of the pcap "
				"within %.0f s (telemetry %s, %" PRIu64 " packets in)\n", limit,
				fd >= 0 ? "up" : "not answering", in);
			break;
		}
		sleep_s(0.05);
	}
	if (fd >= 0)
		close(fd);
	return -1;
}

/* Every packet l3fwd received by @p s's first read left by port 1. */
static int l3fwd_check(const struct l3_sample *s)
{
	if (s->miss != 0) {
		fprintf(stderr, "flowgate-bench: l3fwd baseline: %" PRIu64 " packets went back "
			"out of port 0: they missed the exact-match table\n", s->miss);
		return -1;
	}
	if (s->rx_a > s->fwd + L3FWD_IN_FLIGHT) {
		fprintf(stderr, "flowgate-bench: l3fwd baseline: %" PRIu64 " of %" PRIu64
			" packets received did not leave by port 1\n", s->rx_a - s->fwd, s->rx_a);
		return -1;
	}
	return 0;
}

int fgb_l3fwd_run(struct fgb_l3fwd *l, const struct fgb_base_cfg *c,
		  struct fgb_l3fwd_result *r)
{
	char prefix[64], rundir[PATH_MAX - 32], sock[PATH_MAX], words[PATH_MAX + 512];
	char *argv[64], cmd[2 * PATH_MAX + 1024];
	struct l3_sample s0, s1;
	int fd, rc = -1;

	memset(r, 0, sizeof(*r));
	snprintf(prefix, sizeof(prefix), "fgb-l3fwd%d", (int)getpid());
	runtime_dir(rundir, sizeof(rundir), prefix);
	snprintf(sock, sizeof(sock), "%s/dpdk_telemetry.v2", rundir);
	l3fwd_argv(l, c, prefix, words, sizeof(words), argv, cmd, sizeof(cmd));
	if (getenv("FG_BENCH_VERBOSE"))
		fprintf(stderr, "flowgate-bench: %s\n", cmd);
	l->pid = l3fwd_spawn(l->log, argv);
	if (l->pid < 0) {
		fprintf(stderr, "flowgate-bench: l3fwd baseline: fork: %s\n", strerror(errno));
		return -1;
	}
	/* l3fwd prints and adds its rules one by one before it starts */
	fd = l3fwd_ready(l->pid, sock, c, 60 + (double)l->rules / 20000);
	if (fd >= 0 && l3_sample(fd, &s0) == 0 && l3fwd_check(&s0) == 0) {
		sleep_s(c->seconds);
		if (l3_sample(fd, &s1) < 0)
			fprintf(stderr, "flowgate-bench: l3fwd baseline: telemetry stopped "
				"answering\n");
		else if (l3fwd_check(&s1) == 0 && s1.fwd > s0.fwd)
			rc = 0;
	}
	if (fd >= 0)
		close(fd);
	if (waitpid(l->pid, NULL, WNOHANG) == 0)
		l3fwd_stop(l->pid);
	l->pid = 0;
	rm_tree(rundir);
	if (rc < 0) {
		fprintf(stderr, "  command: %s\n", cmd);
		log_print(l->log, "l3fwd");
		return -1;
	}
	r->mpps = (double)(s1.fwd - s0.fwd) / (s1.t - s0.t) / 1e6;
	r->rules = l->rules;
	r->rx = s1.rx_a;
	r->fwd = s1.fwd;
	r->missed = s1.miss;
	return 0;
}
