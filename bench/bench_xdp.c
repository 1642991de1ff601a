/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * flowgate-bench xdp: ns per packet of flowgate-xdp's program, next to
 * Katran's balancer on the same packets, through BPF_PROG_TEST_RUN.
 *
 *   flowgate-bench xdp --flows N [--katran-obj FILE | --katran-src DIR]
 *                      [--sample S] [--rounds R] [--backends B] [--no-dpdk]
 *                      [--json]
 *
 * Setup, identical for both programs: one VIP 10.100.0.1:80/tcp, B
 * backends (IPIP, 10.1.0.1..B), weight 1, Maglev ring 65537 (Katran's
 * ring is filled from pkt/'s Maglev over the same backends).  Traffic:
 * 64-byte TCP ACK frames of N distinct flows (client 172.16/12, ports
 * 1024..2047).  Every flow is opened first, SYN then ACK, in each
 * program (flowgate's conntrack has it ESTABLISHED, 15 min; Katran's
 * per-CPU LRU has it), then the
 * measured rounds run a random sample of S of those flows, each packet
 * once (repeat 1: the XDP test run does not restore a frame between
 * repeats, so repeat > 1 would time the second pass on the already
 * encapsulated frame), and report the median of the kernel's run time
 * per packet (the median: a run preempted on a busy machine counts its
 * wait; the timer's own cost, a few ns, is in both programs' figures).
 * New flows: SYNs of S never-seen tuples (miss, Maglev, insert).
 * Every sampled hit is checked to be a conntrack hit (ct_hits), and in
 * Katran an LRU hit (its stats[MAX_VIPS + LRU_MISS_CNTR].v2, the TCP
 * non-SYN LRU misses, does not move).  The measurement runs pinned to
 * one CPU, as NIC RSS keeps a flow on one CPU: Katran's LRUs are per
 * CPU, and a test run that migrated would look its flow up in another
 * CPU's LRU, miss, and time Maglev + insert instead of the hit path.
 * Katran's flood guard (is_under_flood: past MAX_CONN_RATE, 125000 new
 * connections per second and CPU, it stops inserting into its LRU) would
 * leave most of a 1M-flow warm-up out of the LRU and make its new-flow
 * figure skip the insert: between test runs, every 65536 packets, the
 * bench zeroes that window (stats[MAX_VIPS + NEW_CONN_RATE_CNTR]), so
 * Katran still runs the check on every new flow but never trips it.
 * Rounds alternate which program goes first; the figure is the median
 * of the rounds (this machine is shared: take the ratio, not the ns).
 * Hits are measured at 1000 flows and at N.
 *
 * Katran is not part of flowgate: --katran-obj takes a balancer.bpf.o
 * built from its public source (scripts/katran-bpf.sh builds one from a
 * checkout under a temp dir; --katran-src DIR runs it).  Without either,
 * the Katran figures are null and the reason is printed.
 *
 * dpdk_worker_ns_per_pkt: `flowgate-bench dataplane --flows N --mode
 * dsr-ipip --no-testpmd` run as a child (the DPDK worker, same machine,
 * same flows count), 1000 / its Mpps; null with the reason when it
 * cannot run (hugepages, --no-dpdk).
 */
#include <errno.h>
#include <getopt.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/wait.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "fg_config.h"
#include "fg_maglev.h"
#include "fgx_load.h"
#include "fgx_maps.h"

#define PKT_LEN 64
#define VIP "10.100.0.1"

struct prog {
	const char *name;
	int fd;
	struct fgx *fgx;             /* flowgate */
	struct bpf_object *obj;      /* katran */
	int lru_fds[256];
	int n_lru;
	int kstats_fd;               /* katran: its per-CPU "stats" map */
};

static uint8_t g_nh_mac[6] = { 0x02, 0, 0, 0, 0, 0xfe };
static uint8_t g_lb_mac[6] = { 0x02, 0, 0, 0, 0, 0x01 };

static void build_pkt(uint8_t *f, uint32_t flow, uint8_t tcp_flags)
{
	uint32_t s = htonl(0xAC100000u | (flow >> 10)), d;
	uint16_t sp = htons((uint16_t)(1024 + (flow & 1023))), dp = htons(80);
	uint32_t sum = 0;

	memset(f, 0, PKT_LEN);
	memcpy(f, g_lb_mac, 6);
	memcpy(f + 6, "\x02\x00\x00\x00\x00\xaa", 6);
	f[12] = 0x08;
	inet_pton(AF_INET, VIP, &d);
	f[14] = 0x45;
	f[16] = 0;
	f[17] = PKT_LEN - 14;
	f[20] = 0x40;  /* DF */
	f[22] = 64;
	f[23] = 6;
	memcpy(f + 26, &s, 4);
	memcpy(f + 30, &d, 4);
	for (int i = 14; i < 34; i += 2)
		sum += (uint32_t)f[i] << 8 | f[i + 1];
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	f[24] = (uint8_t)(~sum >> 8);
	f[25] = (uint8_t)~sum;
	memcpy(f + 34, &sp, 2);
	memcpy(f + 36, &dp, 2);
	f[38 + 3] = 1;          /* seq */
	f[46] = 0x50;           /* doff 5 */
	f[47] = tcp_flags;      /* 0x02 SYN, 0x10 ACK */
	f[48] = 0xff;
}

static struct fg_config g_cfg;
static struct fg_service_cfg g_svc;

static void fg_cfg_init(unsigned int nb)
{
	memset(&g_cfg, 0, sizeof(g_cfg));
	memset(&g_svc, 0, sizeof(g_svc));
	snprintf(g_svc.name, sizeof(g_svc.name), "bench");
	g_svc.vip.family = AF_INET;
	inet_pton(AF_INET, VIP, g_svc.vip.bytes);
	g_svc.port = 80;
	g_svc.proto = 6;
	g_svc.mode = FG_MODE_DSR_IPIP;
	g_svc.n_backends = nb;
	for (unsigned int i = 0; i < nb; i++) {
		struct fg_backend_cfg *b = &g_svc.backends[i];
		uint32_t a = htonl(0x0A010001u + i);

		b->addr.family = AF_INET;
		memcpy(b->addr.bytes, &a, 4);
		b->weight = 1;
		b->id = i;
	}
	g_cfg.n_services = 1;
	g_cfg.services = &g_svc;
	g_cfg.n_ports = 1;
	memcpy(g_cfg.ports[0].mac, g_lb_mac, 6);
	g_cfg.ports[0].n_local = 1;
	g_cfg.ports[0].local[0].family = AF_INET;
	inet_pton(AF_INET, "10.0.0.1", g_cfg.ports[0].local[0].bytes);
	g_cfg.ports[0].gateway.family = AF_INET;
	inet_pton(AF_INET, "10.0.0.254", g_cfg.ports[0].gateway.bytes);
	g_cfg.n_neigh = 1;
	g_cfg.neigh[0].ip = g_cfg.ports[0].gateway;
	memcpy(g_cfg.neigh[0].mac, g_nh_mac, 6);
}

static int fg_open(struct prog *p, uint32_t flows)
{
	/* one LRU for all CPUs: the same size as the one Katran LRU below
	 * that this CPU uses */
	uint64_t cap = (uint64_t)flows + flows / 4 + 1024;
	struct fgx_params par = { .ct_capacity = cap > UINT32_MAX ? UINT32_MAX : (uint32_t)cap };
	char err[256];
	int rc;

	p->name = "flowgate-xdp";
	rc = fgx_open(&par, &p->fgx, err, sizeof(err));
	if (rc)
		fprintf(stderr, "flowgate-bench xdp: %s\n", err);
	if (rc)
		return rc;
	rc = fgx_apply(p->fgx, &g_cfg, NULL, 1500, 0, err, sizeof(err));
	if (rc) {
		fprintf(stderr, "flowgate-bench xdp: %s\n", err);
		return rc;
	}
	p->fd = fgx_prog_fd(p->fgx);
	return 0;
}

/* Katran's map layouts (its balancer_structs.h), checked against the
 * object's own key/value sizes before use. */
struct k_vip_def { uint32_t vip[4]; uint16_t port; uint8_t proto; uint8_t pad; };
struct k_vip_meta { uint32_t flags; uint32_t vip_num; };
struct k_real_def { uint32_t dst[4]; uint8_t flags; uint8_t pad[3]; };
#define K_RING 65537u

static int kmap(struct bpf_object *o, const char *name, uint32_t ks, uint32_t vs)
{
	struct bpf_map *m = bpf_object__find_map_by_name(o, name);

	if (!m)
		return -ENOENT;
	if ((ks && bpf_map__key_size(m) != ks) || (vs && bpf_map__value_size(m) != vs)) {
		fprintf(stderr, "flowgate-bench xdp: Katran map %s has key %u / value %u "
			"bytes, expected %u / %u: another Katran version\n", name,
			bpf_map__key_size(m), bpf_map__value_size(m), ks, vs);
		return -EPROTO;
	}
	return bpf_map__fd(m);
}

static int katran_open(struct prog *p, const char *path, uint32_t flows, unsigned int nb)
{
	struct bpf_program *prog;
	struct bpf_map *fb;
	int vfd, rfd, cfd, ctl, lfd, ncpu = libbpf_num_possible_cpus();
	uint32_t *ring = NULL, *w = NULL;
	uint64_t *keys = NULL;
	int rc;

	p->name = "katran";
	p->obj = bpf_object__open_file(path, NULL);
	if (!p->obj)
		return -errno;
	rc = bpf_object__load(p->obj);
	if (rc)
		return rc;
	prog = bpf_object__find_program_by_name(p->obj, "balancer_ingress");
	if (!prog)
		return -ENOENT;
	p->fd = bpf_program__fd(prog);
	vfd = kmap(p->obj, "vip_map", sizeof(struct k_vip_def), sizeof(struct k_vip_meta));
	rfd = kmap(p->obj, "reals", 4, sizeof(struct k_real_def));
	cfd = kmap(p->obj, "ch_rings", 4, 4);
	ctl = kmap(p->obj, "ctl_array", 4, 8);
	lfd = kmap(p->obj, "lru_mapping", 4, 4);
	p->kstats_fd = kmap(p->obj, "stats", 4, 16);
	if (vfd < 0 || rfd < 0 || cfd < 0 || ctl < 0 || lfd < 0 || p->kstats_fd < 0)
		return -EPROTO;
	{
		struct k_vip_def k = { .port = htons(80), .proto = 6 };
		struct k_vip_meta v = { 0, 0 };
		uint64_t mac = 0;
		uint32_t zero = 0;

		inet_pton(AF_INET, VIP, &k.vip[0]);
		memcpy(&mac, g_nh_mac, 6);
		if (bpf_map_update_elem(vfd, &k, &v, 0) || bpf_map_update_elem(ctl, &zero, &mac, 0))
			return -errno;
	}
	for (unsigned int i = 0; i < nb; i++) {
		struct k_real_def r = { .flags = 0 };
		uint32_t idx = i + 1;

		memcpy(&r.dst[0], g_svc.backends[i].addr.bytes, 4);
		if (bpf_map_update_elem(rfd, &idx, &r, 0))
			return -errno;
	}
	/* the ring: pkt/'s Maglev over the same backends, real index = i + 1 */
	ring = malloc(sizeof(*ring) * K_RING);
	w = calloc(nb, sizeof(*w));
	keys = calloc(nb, sizeof(*keys));
	if (!ring || !w || !keys) {
		rc = -ENOMEM;
		goto out;
	}
	for (unsigned int i = 0; i < nb; i++) {
		w[i] = 1;
		keys[i] = fg_maglev_backend_key(g_svc.backends[i].addr.bytes, 80);
	}
	rc = fg_maglev_build(w, keys, nb, K_RING, ring);
	for (uint32_t i = 0; !rc && i < K_RING; i++) {
		uint32_t real = ring[i] + 1;

		if (bpf_map_update_elem(cfd, &i, &real, 0))
			rc = -errno;
	}
	/* per-CPU LRUs, as Katran's user space sets them up */
	fb = bpf_object__find_map_by_name(p->obj, "fallback_cache");
	for (int c = 0; !rc && fb && c < ncpu && c < 256; c++) {
		int fd = bpf_map_create(BPF_MAP_TYPE_LRU_HASH, "katran_lru",
					bpf_map__key_size(fb), bpf_map__value_size(fb),
					flows + flows / 4 + 1024, NULL);
		uint32_t key = (uint32_t)c;

		if (fd < 0 || bpf_map_update_elem(lfd, &key, &fd, 0))
			rc = -errno;
		p->lru_fds[p->n_lru++] = fd;
	}
out:
	free(ring);
	free(w);
	free(keys);
	return rc;
}

static void prog_close(struct prog *p)
{
	if (p->fgx)
		fgx_close(p->fgx);
	for (int i = 0; i < p->n_lru; i++)
		if (p->lru_fds[i] >= 0)
			close(p->lru_fds[i]);
	if (p->obj)
		bpf_object__close(p->obj);
	memset(p, 0, sizeof(*p));
}

/* Katran's new-connection rate window (stats[MAX_VIPS + NEW_CONN_RATE_CNTR],
 * v1 count, v2 window start): zeroed, the next new flow opens a new
 * window.  Between test runs, never inside the kernel's timer. */
static int katran_rate_reset(const struct prog *p)
{
	struct bpf_map *m = bpf_object__find_map_by_name(p->obj, "stats");
	int ncpu = libbpf_num_possible_cpus(), rc;
	uint64_t *v;
	uint32_t key;

	if (!m || ncpu <= 0)
		return -ENOENT;
	key = bpf_map__max_entries(m) / 2 + 2;
	v = calloc((size_t)ncpu, 16);
	if (!v)
		return -ENOMEM;
	rc = bpf_map_update_elem(p->kstats_fd, &key, v, BPF_ANY) ? -errno : 0;
	free(v);
	return rc;
}

/* Katran's TCP non-SYN LRU misses (stats[MAX_VIPS + LRU_MISS_CNTR].v2,
 * MAX_VIPS = half the map: STATS_MAP_SIZE is MAX_VIPS * 2), all CPUs;
 * (uint64_t)-1 when it cannot be read. */
static uint64_t katran_nonsyn_misses(const struct prog *p)
{
	struct bpf_map *m = bpf_object__find_map_by_name(p->obj, "stats");
	int ncpu = libbpf_num_possible_cpus();
	uint64_t *v, sum = 0;
	uint32_t key;

	if (!m || ncpu <= 0)
		return (uint64_t)-1;
	key = bpf_map__max_entries(m) / 2 + 1;
	v = calloc((size_t)ncpu, 16);
	if (!v)
		return (uint64_t)-1;
	if (bpf_map_lookup_elem(p->kstats_fd, &key, v)) {
		free(v);
		return (uint64_t)-1;
	}
	for (int c = 0; c < ncpu; c++)
		sum += v[2 * c + 1];
	free(v);
	return sum;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* Runs flow packets once each; returns the median ns per packet (the
 * kernel's timer around each run; the median, because on a shared
 * machine a run that was preempted counts its wait), or -1.
 * @p expect: the XDP verdict every packet must get. */
static double run_flows(const struct prog *p, const uint32_t *flows, uint32_t n,
			uint8_t tcp_flags, uint32_t expect)
{
	uint8_t in[PKT_LEN], out[256];
	uint32_t *d = malloc(sizeof(*d) * n);
	double med;

	if (!d)
		return -1;

	for (uint32_t i = 0; i < n; i++) {
		LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = in, .data_size_in = PKT_LEN,
			    .data_out = out, .data_size_out = sizeof(out), .repeat = 1);

		build_pkt(in, flows[i], tcp_flags);
		if (p->obj && i % 65536 == 0 && katran_rate_reset(p)) {
			fprintf(stderr, "flowgate-bench xdp: katran: cannot reset its new-"
				"connection rate window\n");
			free(d);
			return -1;
		}
		if (bpf_prog_test_run_opts(p->fd, &o)) {
			fprintf(stderr, "flowgate-bench xdp: %s: test run: %s\n", p->name,
				strerror(errno));
			free(d);
			return -1;
		}
		if (o.retval != expect) {
			fprintf(stderr, "flowgate-bench xdp: %s: verdict %u, want %u (flow %u)\n",
				p->name, o.retval, expect, flows[i]);
			free(d);
			return -1;
		}
		d[i] = o.duration;
	}
	qsort(d, n, sizeof(*d), cmp_u32);
	med = n % 2 ? d[n / 2] : (d[n / 2 - 1] + d[n / 2]) / 2.0;
	free(d);
	return med;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_d);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

struct res {
	double hit[2], newf[2];  /* [0] flowgate, [1] katran; < 0 = none */
};

/* Loads both programs for @p nflows, warms every flow, measures. */
static int measure(uint32_t nflows, uint32_t sample, int rounds, unsigned int nb,
		   const char *katran, struct res *r)
{
	struct prog pr[2];
	uint32_t *all = NULL, *smp = NULL, *fresh = NULL;
	double hit[2][32], nf[2][32];
	int np = katran ? 2 : 1, rc = 0;

	memset(pr, 0, sizeof(pr));
	r->hit[0] = r->hit[1] = r->newf[0] = r->newf[1] = -1;
	if (sample > nflows)
		sample = nflows;
	all = malloc(sizeof(*all) * nflows);
	smp = malloc(sizeof(*smp) * sample);
	fresh = malloc(sizeof(*fresh) * sample * (size_t)rounds);
	if (!all || !smp || !fresh) {
		rc = -ENOMEM;
		goto out;
	}
	for (uint32_t i = 0; i < nflows; i++)
		all[i] = i;
	srand(0x5eed);
	for (uint32_t i = 0; i < sample; i++)
		smp[i] = all[(uint32_t)rand() % nflows];
	for (uint32_t i = 0; i < sample * (uint32_t)rounds; i++)
		fresh[i] = nflows + i;
	rc = fg_open(&pr[0], nflows + sample * rounds);
	if (!rc && katran)
		rc = katran_open(&pr[1], katran, nflows + sample * rounds, nb);
	if (rc) {
		fprintf(stderr, "flowgate-bench xdp: cannot load %s: %s\n",
			rc && pr[1].name ? pr[1].name : "flowgate-xdp", strerror(-rc));
		goto out;
	}
	/* open every flow as a client does (SYN, then ACK): established.
	 * In chunks, so a flow's ACK follows its SYN closely (SYN_SENT's
	 * 30 s timeout is shorter than a 1M-flow pass on a busy machine) */
	for (int k = 0; k < np; k++)
		for (uint32_t at = 0; at < nflows; at += 1024) {
			uint32_t len = nflows - at < 1024 ? nflows - at : 1024;

			if (run_flows(&pr[k], all + at, len, 0x02, XDP_TX) < 0 ||
			    run_flows(&pr[k], all + at, len, 0x10, XDP_TX) < 0) {
				rc = -EIO;
				goto out;
			}
		}
	for (int rd = 0; rd < rounds; rd++) {
		for (int j = 0; j < np; j++) {
			int k = (rd + j) % np;   /* alternate who goes first */

			uint64_t c0[FGX_CNT_N], c1[FGX_CNT_N], km0 = 0, km1;

			if (k == 0)
				fgx_counters(pr[0].fgx, c0, NULL);
			else
				km0 = katran_nonsyn_misses(&pr[1]);
			hit[k][rd] = run_flows(&pr[k], smp, sample, 0x10, XDP_TX);
			if (k == 1) {
				km1 = katran_nonsyn_misses(&pr[1]);
				if (km0 == (uint64_t)-1 || km1 == (uint64_t)-1 || km1 != km0) {
					fprintf(stderr, "flowgate-bench xdp: katran: %lld of %u "
						"sampled packets were LRU misses (-1: its stats "
						"map unreadable)\n", km0 == (uint64_t)-1 ||
						km1 == (uint64_t)-1 ? -1LL : (long long)(km1 - km0),
						sample);
					rc = -EIO;
					goto out;
				}
			}
			if (k == 0) {
				fgx_counters(pr[0].fgx, c1, NULL);
				if (c1[FG_CC_ct_hits] - c0[FG_CC_ct_hits] != sample) {
					fprintf(stderr, "flowgate-bench xdp: %llu of %u sampled "
						"packets were conntrack hits: the table lost "
						"flows\n", (unsigned long long)(c1[FG_CC_ct_hits] -
						c0[FG_CC_ct_hits]), sample);
					rc = -EIO;
					goto out;
				}
			}
			nf[k][rd] = run_flows(&pr[k], fresh + (size_t)rd * sample, sample, 0x02,
					      XDP_TX);
			if (hit[k][rd] < 0 || nf[k][rd] < 0) {
				rc = -EIO;
				goto out;
			}
		}
	}
	for (int k = 0; k < np; k++) {
		r->hit[k] = median(hit[k], rounds);
		r->newf[k] = median(nf[k], rounds);
	}
out:
	prog_close(&pr[0]);
	prog_close(&pr[1]);
	free(all);
	free(smp);
	free(fresh);
	return rc;
}

static double dpdk_worker_ns(const char *self, uint32_t flows, char *why, size_t wl)
{
	char cmd[1024], line[4096];
	FILE *f;
	double mpps = -1;

	snprintf(cmd, sizeof(cmd), "%s dataplane --flows %u --mode dsr-ipip --no-testpmd "
		 "--seconds 3 --json 2>&1", self, flows);
	f = popen(cmd, "r");
	if (!f) {
		snprintf(why, wl, "popen: %s", strerror(errno));
		return -1;
	}
	while (fgets(line, sizeof(line), f)) {
		char *m = strstr(line, "\"mpps\":");

		if (m)
			mpps = strtod(m + 7, NULL);
		else if (mpps < 0)
			snprintf(why, wl, "%.*s", (int)strcspn(line, "\n"), line);
	}
	pclose(f);
	return mpps > 0 ? 1000.0 / mpps : -1;
}

static void jnum(const char *k, double v, int last)
{
	if (v < 0)
		printf("\"%s\":null%s", k, last ? "" : ",");
	else
		printf("\"%s\":%.1f%s", k, v, last ? "" : ",");
}

int bench_xdp_main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "flows", required_argument, NULL, 'f' },
		{ "katran-obj", required_argument, NULL, 'k' },
		{ "katran-src", required_argument, NULL, 'K' },
		{ "sample", required_argument, NULL, 's' },
		{ "rounds", required_argument, NULL, 'r' },
		{ "backends", required_argument, NULL, 'b' },
		{ "no-dpdk", no_argument, NULL, 'D' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	uint32_t flows = 1000000, sample = 100000;
	int rounds = 5, json = 0, no_dpdk = 0, o;
	unsigned int nb = 8;
	const char *kobj = NULL, *ksrc = NULL;
	char kbuilt[256] = "", kwhy[512] = "", dwhy[512] = "";
	struct res small, big;
	double dpdk = -1;
	cpu_set_t all_cpus;
	int pinned = 0;

	optind = 1;
	while ((o = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (o) {
		case 'f': flows = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'k': kobj = optarg; break;
		case 'K': ksrc = optarg; break;
		case 's': sample = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'r': rounds = atoi(optarg); break;
		case 'b': nb = (unsigned int)strtoul(optarg, NULL, 0); break;
		case 'D': no_dpdk = 1; break;
		case 'j': json = 1; break;
		default:
			fprintf(o == 'h' ? stdout : stderr,
				"usage: flowgate-bench xdp --flows N [--katran-obj FILE | "
				"--katran-src DIR] [--sample S] [--rounds R] [--backends B] "
				"[--no-dpdk] [--json]\n");
			return o == 'h' ? 0 : 2;
		}
	}
	if (flows < 1000 || flows > 16000000 || sample == 0 || rounds < 1 || rounds > 32 ||
	    nb == 0 || nb > 1024) {
		fprintf(stderr, "flowgate-bench xdp: --flows 1000..16M, --sample > 0, "
			"--rounds 1..32, --backends 1..1024\n");
		return 2;
	}
	if (ksrc && !kobj) {
		/* scripts/katran-bpf.sh builds under a temp dir; never in the tree */
		char cmd[1024];
		int rc;

		snprintf(kbuilt, sizeof(kbuilt), "/tmp/fgb-katran-%d.bpf.o", (int)getpid());
		snprintf(cmd, sizeof(cmd), "'%s/scripts/katran-bpf.sh' '%s' '%s' >&2",
			 FG_SOURCE_ROOT, ksrc, kbuilt);
		rc = system(cmd);
		if (rc == 0)
			kobj = kbuilt;
		else
			snprintf(kwhy, sizeof(kwhy), "scripts/katran-bpf.sh %s failed (exit %d)",
				 ksrc, WEXITSTATUS(rc));
	}
	if (!kobj && !kwhy[0])
		snprintf(kwhy, sizeof(kwhy), "no Katran object: give --katran-obj FILE or "
			 "--katran-src DIR (a facebookincubator/katran checkout)");
	if (kobj && access(kobj, R_OK)) {
		snprintf(kwhy, sizeof(kwhy), "%s: %s", kobj, strerror(errno));
		kobj = NULL;
	}
	fg_cfg_init(nb);
	/* one CPU for every test run (see the header); the DPDK child below
	 * gets the original mask back */
	{
		cpu_set_t one;
		int cpu = sched_getcpu();

		if (sched_getaffinity(0, sizeof(all_cpus), &all_cpus) == 0 && cpu >= 0) {
			CPU_ZERO(&one);
			CPU_SET(cpu, &one);
			pinned = sched_setaffinity(0, sizeof(one), &one) == 0;
		}
		if (!pinned)
			fprintf(stderr, "flowgate-bench xdp: cannot pin to one CPU (%s): "
				"Katran's per-CPU LRUs may miss\n", strerror(errno));
	}
	if (measure(1000, sample < 1000 ? sample : 1000, rounds, nb, kobj, &small) ||
	    measure(flows, sample, rounds, nb, kobj, &big)) {
		if (kobj)
			fprintf(stderr, "flowgate-bench xdp: measurement failed (above)\n");
		return 1;
	}
	if (pinned)
		sched_setaffinity(0, sizeof(all_cpus), &all_cpus);
	if (!no_dpdk) {
		char self[512];
		ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

		self[n > 0 ? n : 0] = 0;
		dpdk = dpdk_worker_ns(self, flows, dwhy, sizeof(dwhy));
	}
	else
		snprintf(dwhy, sizeof(dwhy), "--no-dpdk");
	if (kbuilt[0])
		unlink(kbuilt);
	if (json) {
		printf("{\"bench\":\"xdp\",\"flows\":%u,\"backends\":%u,\"sample\":%u,\"rounds\":%d,",
		       flows, nb, sample, rounds);
		jnum("flowgate_xdp_ns_per_pkt", big.hit[0], 0);
		jnum("flowgate_xdp_ns_per_pkt_1k", small.hit[0], 0);
		jnum("flowgate_xdp_new_flow_ns", big.newf[0], 0);
		jnum("katran_ns_per_pkt", big.hit[1], 0);
		jnum("katran_ns_per_pkt_1k", small.hit[1], 0);
		jnum("katran_new_flow_ns", big.newf[1], 0);
		if (big.hit[1] > 0)
			printf("\"hit_ratio_flowgate_to_katran\":%.3f,"
			       "\"hit_ratio_flowgate_to_katran_1k\":%.3f,",
			       big.hit[0] / big.hit[1], small.hit[0] / small.hit[1]);
		else
			printf("\"hit_ratio_flowgate_to_katran\":null,"
			       "\"hit_ratio_flowgate_to_katran_1k\":null,");
		jnum("dpdk_worker_ns_per_pkt", dpdk, 0);
		printf("\"katran_note\":\"%s\",\"dpdk_note\":\"%s\"}\n", kobj ? "" : kwhy,
		       dpdk > 0 ? "" : dwhy);
	} else {
		printf("flowgate-bench xdp: %u flows, %u backends, %u sampled x %d rounds "
		       "(BPF_PROG_TEST_RUN, 64 B TCP ACK, per-packet median, median of rounds)\n",
		       flows, nb, sample, rounds);
		printf("  %-14s hit %7.1f ns (1K flows: %6.1f)  new flow %7.1f ns\n",
		       "flowgate-xdp", big.hit[0], small.hit[0], big.newf[0]);
		if (kobj)
			printf("  %-14s hit %7.1f ns (1K flows: %6.1f)  new flow %7.1f ns  "
			       "(flowgate/katran hit ratio %.2f)\n", "katran", big.hit[1],
			       small.hit[1], big.newf[1], big.hit[0] / big.hit[1]);
		else
			printf("  katran: absent (%s)\n", kwhy);
		if (dpdk > 0)
			printf("  dpdk worker    %7.1f ns/pkt (flowgate-bench dataplane)\n", dpdk);
		else
			printf("  dpdk worker: not measured (%s)\n", dwhy);
	}
	return 0;
}
