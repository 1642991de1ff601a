/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * flowgate-bench latency: per-packet latency through a device under test.
 *
 * The generator builds a scenario's packets (bench/tools/fg_scen.h: the
 * same packets fg-pcapgen writes), stamps the low 48 bits of the TSC into
 * the last 6 bytes of each frame right before TX, and the sink reads the
 * stamp back on RX: latency = TSC(rx) - stamp, in a 10 ns histogram.  The
 * stamp is at the frame's tail, so it survives any encapsulation (IPIP,
 * GUE) or NAT rewrite without parsing.
 *
 * First the rig finds the maximum rate (unpaced, loss-free delivery
 * measured at the sink), then it offers 10/50/80/95% of it, paced per
 * packet from the TSC, and reports p50/p99/p99.9 at each load.
 *
 * Devices under test (--dut):
 *   ring   in process: generator -> rte_ring port -> forwarder lcore (io
 *          forwarding, no processing) -> rte_ring port -> sink.  The
 *          framework-only path: the baseline every DUT figure is read
 *          against (what the rig itself adds).
 *   vdev   out of process (EAL always gets --no-pci): TX on the first --vdev, RX on all, e.g.
 *          net_memif server ports that a flowgate (or dpdk-testpmd) process
 *          attaches to as memif clients.  Both processes share the host's
 *          invariant TSC.  The ring baseline is measured in the same run.
 *
 * Threads: main lcore = generator + sink (one loop, so the stamp and the
 * read use one TSC); one worker lcore = ring forwarder.  Nothing shared per
 * packet except the DPDK rings.
 */
#include <dlfcn.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>
#include <rte_ring.h>
#include <rte_bus_vdev.h>

#include "tools/fg_scen.h"

#define LAT_BURST 32
#define LAT_RING_SIZE 1024
#define LAT_NB_MBUF 16383
#define LAT_TEMPLATE_BYTES (64u << 20) /* at most 64 MiB of frame templates */
#define LAT_HIST_FINE 10000u          /* 10 ns buckets up to 100 us */
#define LAT_HIST_COARSE 9900u         /* 1 us buckets up to 10 ms */
#define LAT_HIST_N (LAT_HIST_FINE + LAT_HIST_COARSE + 1)
#define LAT_MAX_PORTS 4
#define LAT_STAMP_MASK ((1ull << 48) - 1)

/* Counters of one measurement, declared once. */
#define LAT_COUNTER_LIST(X)                                                  \
	X(tx_pkts, "packets handed to the DUT")                                \
	X(tx_full, "packets not accepted by the DUT port (TX ring full): freed") \
	X(alloc_fail, "mbuf allocations that failed (pool empty)")              \
	X(rx_pkts, "packets received by the sink")                              \
	X(rx_short, "received packets shorter than a stamp: not measured")     \
	X(rx_late, "latencies above 10 ms (histogram overflow bucket)")         \
	X(pace_behind, "bursts sent late because the generator fell behind")   \
	X(gen_stalls, "generator/sink loop gaps > 20 us (descheduled: noisy host)") \
	X(gen_stall_us, "total time of those gaps, us")                          \
	X(fwd_stalls, "forwarder loop gaps > 20 us (ring DUT only)")             \
	X(fwd_stall_us, "total time of those gaps, us")

enum lat_counter {
#define X(n, d) LAT_C_##n,
	LAT_COUNTER_LIST(X)
#undef X
	LAT_C_MAX
};

static const char *const lat_counter_names[LAT_C_MAX] = {
#define X(n, d) #n,
	LAT_COUNTER_LIST(X)
#undef X
};

struct lat_hist {
	uint64_t b[LAT_HIST_N];
	uint64_t n;
	double sum_ns;
	uint64_t max_ns;
};

struct lat_result {
	double load_pct;      /* offered, % of max; 0 = unpaced max-rate run */
	double offered_mpps;
	double tx_mpps, rx_mpps;
	double loss_pct;
	double p50_us, p90_us, p99_us, p999_us, max_us, mean_us;
	uint64_t c[LAT_C_MAX];
	/* CDF samples for plotting */
	double cdf_pct[16];
	double cdf_us[16];
	unsigned int cdf_n;
};

struct lat_ctx {
	struct fg_scen scen;
	uint8_t *tmpl;          /* frame templates, stride tmpl_stride */
	uint16_t *tmpl_len;
	uint64_t n_tmpl;
	uint32_t tmpl_stride;
	uint64_t next_tmpl;
	struct rte_mempool *pool;
	uint16_t gen_port;      /* TX */
	uint16_t rx_ports[LAT_MAX_PORTS];
	unsigned int n_rx_ports;
	uint16_t fwd_port;      /* ring DUT: the forwarder's port */
	volatile bool fwd_stop;
	uint64_t fwd_pkts, fwd_drop;
	/* written by the forwarder only, read by main for the run's delta */
	volatile uint64_t fwd_stalls, fwd_stall_ticks;
	uint64_t stall_ticks;
	uint64_t hz;
	double ns_per_tick;
};

static volatile bool lat_interrupted;

typedef int (*lat_from_rings_t)(const char *, struct rte_ring *const *, unsigned int,
				struct rte_ring *const *, unsigned int, unsigned int);

/*
 * rte_eth_from_rings() lives in the net_ring PMD, which Debian's libdpdk.pc
 * does not link (EAL loads PMDs as plugins).  Resolve it from the PMD's
 * shared object instead of adding a link dependency to bench/meson.build.
 */
static lat_from_rings_t lat_find_from_rings(void)
{
	static const char *const names[] = {"librte_net_ring.so.23", "librte_net_ring.so"};
	void *h = NULL;

	for (unsigned int k = 0; k < RTE_DIM(names) && h == NULL; k++)
		h = dlopen(names[k], RTLD_NOW | RTLD_GLOBAL);
	if (h == NULL) {
		fprintf(stderr, "latency: cannot load the net_ring PMD: %s\n", dlerror());
		return NULL;
	}
	return (lat_from_rings_t)dlsym(h, "rte_eth_from_rings");
}

static void lat_sigint(int sig)
{
	(void)sig;
	lat_interrupted = true;
}

static inline void hist_add(struct lat_hist *h, uint64_t ns, uint64_t *late)
{
	uint32_t idx;

	if (ns < 100000)
		idx = (uint32_t)(ns / 10);
	else if (ns < 10000000)
		idx = LAT_HIST_FINE + (uint32_t)((ns - 100000) / 1000);
	else {
		idx = LAT_HIST_N - 1;
		(*late)++;
	}
	h->b[idx]++;
	h->n++;
	h->sum_ns += (double)ns;
	if (ns > h->max_ns)
		h->max_ns = ns;
}

/* Upper edge of bucket idx, in microseconds. */
static double hist_edge_us(uint32_t idx)
{
	if (idx < LAT_HIST_FINE)
		return (idx + 1) * 0.01;
	if (idx < LAT_HIST_N - 1)
		return 100.0 + (idx - LAT_HIST_FINE + 1);
	return 10000.0;
}

static double hist_pct(const struct lat_hist *h, double pct)
{
	uint64_t want, acc = 0;

	if (h->n == 0)
		return NAN;
	want = (uint64_t)ceil(pct / 100.0 * (double)h->n);
	if (want == 0)
		want = 1;
	for (uint32_t i = 0; i < LAT_HIST_N; i++) {
		acc += h->b[i];
		if (acc >= want)
			return hist_edge_us(i);
	}
	return hist_edge_us(LAT_HIST_N - 1);
}

/* Ring DUT: plain io forwarding on the worker lcore. */
static int lat_fwd_main(void *arg)
{
	struct lat_ctx *c = arg;
	struct rte_mbuf *pkts[LAT_BURST];
	uint64_t fwd = 0, drop = 0, prev = rte_rdtsc();

	while (!c->fwd_stop) {
		uint16_t n = rte_eth_rx_burst(c->fwd_port, 0, pkts, LAT_BURST);
		uint64_t now = rte_rdtsc();
		uint16_t s;

		if (unlikely(now - prev > c->stall_ticks)) {
			c->fwd_stalls++;
			c->fwd_stall_ticks += now - prev;
		}
		prev = now;
		if (n == 0)
			continue;
		s = rte_eth_tx_burst(c->fwd_port, 0, pkts, n);
		fwd += s;
		if (unlikely(s < n)) {
			drop += n - s;
			rte_pktmbuf_free_bulk(pkts + s, n - s);
		}
	}
	c->fwd_pkts = fwd;
	c->fwd_drop = drop;
	return 0;
}

static inline void lat_sink_poll(struct lat_ctx *c, struct lat_hist *h,
				 uint64_t *cnt, bool measure)
{
	struct rte_mbuf *pkts[LAT_BURST];

	for (unsigned int p = 0; p < c->n_rx_ports; p++) {
		uint16_t n = rte_eth_rx_burst(c->rx_ports[p], 0, pkts, LAT_BURST);
		uint64_t now;

		if (n == 0)
			continue;
		now = rte_rdtsc() & LAT_STAMP_MASK;
		cnt[LAT_C_rx_pkts] += n;
		for (uint16_t i = 0; i < n; i++) {
			struct rte_mbuf *last = rte_pktmbuf_lastseg(pkts[i]);
			uint64_t st, d;

			if (unlikely(last->data_len < FG_SCEN_STAMP_LEN)) {
				cnt[LAT_C_rx_short]++;
				continue;
			}
			st = fg_scen_stamp_read(rte_pktmbuf_mtod(last, uint8_t *),
						last->data_len);
			d = (now - st) & LAT_STAMP_MASK;
			if (measure)
				hist_add(h, (uint64_t)((double)d * c->ns_per_tick),
					 &cnt[LAT_C_rx_late]);
		}
		rte_pktmbuf_free_bulk(pkts, n);
	}
}

/* Sends up to n packets from the template ring, stamped with now. */
static inline uint16_t lat_send(struct lat_ctx *c, uint16_t n, uint64_t *cnt)
{
	struct rte_mbuf *pkts[LAT_BURST];
	uint64_t now;
	uint16_t s;

	if (rte_pktmbuf_alloc_bulk(c->pool, pkts, n) != 0) {
		cnt[LAT_C_alloc_fail] += n;
		return 0;
	}
	now = rte_rdtsc();
	for (uint16_t i = 0; i < n; i++) {
		uint64_t t = c->next_tmpl;
		uint16_t len = c->tmpl_len[t];
		uint8_t *d = rte_pktmbuf_mtod(pkts[i], uint8_t *);

		rte_memcpy(d, c->tmpl + t * c->tmpl_stride, len);
		fg_scen_stamp(d, len, now);
		pkts[i]->data_len = len;
		pkts[i]->pkt_len = len;
		c->next_tmpl = t + 1 == c->n_tmpl ? 0 : t + 1;
	}
	s = rte_eth_tx_burst(c->gen_port, 0, pkts, n);
	cnt[LAT_C_tx_pkts] += s;
	if (unlikely(s < n)) {
		cnt[LAT_C_tx_full] += n - s;
		rte_pktmbuf_free_bulk(pkts + s, n - s);
	}
	return s;
}

/*
 * One measurement: offer `pps` (0 = as fast as possible) for warm+secs
 * seconds, histogram only after the warm-up, then drain.
 */
static void lat_run(struct lat_ctx *c, double pps, double warm_s, double secs,
		    struct lat_result *r)
{
	static struct lat_hist h;
	uint64_t cnt[LAT_C_MAX] = {0}, base[LAT_C_MAX] = {0};
	uint64_t t0 = rte_rdtsc(), t_meas = t0 + (uint64_t)(warm_s * c->hz);
	uint64_t t_end = t_meas + (uint64_t)(secs * c->hz), now;
	double ticks_per_pkt = pps > 0 ? (double)c->hz / pps : 0;
	double next = (double)t0;
	bool measuring = false;
	uint64_t prev = t0, f_st0 = 0, f_tk0 = 0, stall_ticks = 0;
	static const double cdf_pts[] = {1, 5, 10, 25, 50, 75, 90, 95, 99, 99.5,
					 99.9, 99.99, 100};

	memset(&h, 0, sizeof(h));
	while ((now = rte_rdtsc()) < t_end && !lat_interrupted) {
		if (unlikely(now - prev > c->stall_ticks)) {
			cnt[LAT_C_gen_stalls]++;
			stall_ticks += now - prev;
		}
		prev = now;
		if (!measuring && now >= t_meas) {
			measuring = true;
			memcpy(base, cnt, sizeof(cnt));
			stall_ticks = 0;
			f_st0 = c->fwd_stalls;
			f_tk0 = c->fwd_stall_ticks;
		}
		if (pps <= 0) {
			lat_send(c, LAT_BURST, cnt);
		} else if ((double)now >= next) {
			uint64_t due = (uint64_t)(((double)now - next) / ticks_per_pkt) + 1;

			if (due > LAT_BURST) {
				/* more than a burst late: send one burst, skip the
				 * debt so the offered load stays what was asked */
				cnt[LAT_C_pace_behind]++;
				due = LAT_BURST;
				next = (double)now;
			}
			lat_send(c, (uint16_t)due, cnt);
			next += (double)due * ticks_per_pkt;
		}
		lat_sink_poll(c, &h, cnt, measuring);
	}
	/* drain: whatever is in flight still counts (and is measured) */
	{
		uint64_t t_drain = rte_rdtsc() + c->hz / 20;

		while (rte_rdtsc() < t_drain)
			lat_sink_poll(c, &h, cnt, measuring);
	}
	for (int k = 0; k < LAT_C_MAX; k++)
		r->c[k] = cnt[k] - base[k];
	r->c[LAT_C_gen_stall_us] = (uint64_t)((double)stall_ticks * c->ns_per_tick / 1000);
	r->c[LAT_C_fwd_stalls] = c->fwd_stalls - f_st0;
	r->c[LAT_C_fwd_stall_us] =
		(uint64_t)((double)(c->fwd_stall_ticks - f_tk0) * c->ns_per_tick / 1000);
	r->offered_mpps = pps / 1e6;
	r->tx_mpps = (double)r->c[LAT_C_tx_pkts] / secs / 1e6;
	r->rx_mpps = (double)r->c[LAT_C_rx_pkts] / secs / 1e6;
	r->loss_pct = r->c[LAT_C_tx_pkts] ?
		100.0 * (1.0 - (double)r->c[LAT_C_rx_pkts] / (double)r->c[LAT_C_tx_pkts]) : 0;
	if (r->loss_pct < 0)
		r->loss_pct = 0; /* packets of the warm-up arriving after it */
	r->p50_us = hist_pct(&h, 50);
	r->p90_us = hist_pct(&h, 90);
	r->p99_us = hist_pct(&h, 99);
	r->p999_us = hist_pct(&h, 99.9);
	r->max_us = h.n ? (double)h.max_ns / 1000.0 : NAN;
	r->mean_us = h.n ? h.sum_ns / (double)h.n / 1000.0 : NAN;
	r->cdf_n = 0;
	for (unsigned int k = 0; k < RTE_DIM(cdf_pts); k++) {
		r->cdf_pct[r->cdf_n] = cdf_pts[k];
		r->cdf_us[r->cdf_n++] = hist_pct(&h, cdf_pts[k]);
	}
}

static int lat_port_start(uint16_t port, struct rte_mempool *pool)
{
	struct rte_eth_conf conf;
	int rc;

	memset(&conf, 0, sizeof(conf));
	rc = rte_eth_dev_configure(port, 1, 1, &conf);
	if (rc < 0)
		return rc;
	rc = rte_eth_rx_queue_setup(port, 0, 1024, rte_eth_dev_socket_id(port), NULL, pool);
	if (rc < 0)
		return rc;
	rc = rte_eth_tx_queue_setup(port, 0, 1024, rte_eth_dev_socket_id(port), NULL);
	if (rc < 0)
		return rc;
	return rte_eth_dev_start(port);
}

static void usage(FILE *o)
{
	fprintf(o,
		"usage: flowgate-bench latency [options]\n"
		"  --scenario NAME|FILE  scenario (default steady-1m; NAME is looked up in\n"
		"                        --scenario-dir, default bench/scenarios)\n"
		"  --scenario-dir DIR\n"
		"  --loads LIST          offered loads in %% of the measured max (default 10,50,80,95)\n"
		"  --seconds S           measured seconds per load (default 2; +0.5 s warm-up)\n"
		"  --dut ring|vdev       ring: in-process io forwarder (framework baseline);\n"
		"                        vdev: TX on the first --vdev (with --no-pci), RX on all (default ring)\n"
		"  --vdev SPEC           DUT port (EAL gets --no-pci), e.g. net_memif0,role=server,socket=/tmp/fg.sock\n"
		"  --wait-link S         vdev: wait up to S s for the links to come up (default 30)\n"
		"  --templates N         distinct frames to cycle (default: the scenario's pcap size,\n"
		"                        capped at 64 MiB of frames)\n"
		"  --eal 'ARGS'          EAL arguments (default: -l 0-1 --no-pci --in-memory)\n"
		"  --json                one JSON object on stdout\n");
}

static int lat_parse_loads(const char *s, double *loads, unsigned int *n)
{
	char buf[128], *save = NULL, *tok;

	if (strlen(s) >= sizeof(buf))
		return -EINVAL;
	snprintf(buf, sizeof(buf), "%s", s);
	*n = 0;
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *end;
		double v = strtod(tok, &end);

		if (*end || !(v > 0 && v <= 100) || *n == 8)
			return -EINVAL;
		loads[(*n)++] = v;
	}
	return *n ? 0 : -EINVAL;
}

static void json_result(const char *key, const struct lat_result *r, bool comma)
{
	printf("%s%s%s%s{\"load_pct\":%.1f,\"offered_mpps\":%.4f,\"tx_mpps\":%.4f,"
	       "\"rx_mpps\":%.4f,\"loss_pct\":%.4f,\"p50_us\":%.2f,\"p90_us\":%.2f,"
	       "\"p99_us\":%.2f,\"p999_us\":%.2f,\"max_us\":%.2f,\"mean_us\":%.3f,"
	       "\"counters\":{",
	       comma ? "," : "", key ? "\"" : "", key ? key : "", key ? "\":" : "",
	       r->load_pct, r->offered_mpps, r->tx_mpps,
	       r->rx_mpps, r->loss_pct, r->p50_us, r->p90_us, r->p99_us, r->p999_us,
	       r->max_us, r->mean_us);
	for (int k = 0; k < LAT_C_MAX; k++)
		printf("%s\"%s\":%" PRIu64, k ? "," : "", lat_counter_names[k], r->c[k]);
	printf("},\"cdf\":[");
	for (unsigned int k = 0; k < r->cdf_n; k++)
		printf("%s[%.2f,%.2f]", k ? "," : "", r->cdf_pct[k], r->cdf_us[k]);
	printf("]}");
}

static void text_result(const char *what, const struct lat_result *r)
{
	fprintf(stderr, "latency: %-10s load %5.1f%% offered %7.3f Mpps rx %7.3f Mpps "
		"loss %.3f%%  p50 %7.2f us  p99 %7.2f us  p99.9 %7.2f us  max %8.2f us"
		"  (tx_full %" PRIu64 ", stalls gen %" PRIu64 "/%" PRIu64 " us fwd %"
		PRIu64 "/%" PRIu64 " us)\n",
		what, r->load_pct, r->offered_mpps, r->rx_mpps, r->loss_pct, r->p50_us,
		r->p99_us, r->p999_us, r->max_us, r->c[LAT_C_tx_full],
		r->c[LAT_C_gen_stalls], r->c[LAT_C_gen_stall_us], r->c[LAT_C_fwd_stalls],
		r->c[LAT_C_fwd_stall_us]);
}

/* A full sweep (max rate, then each load) on the current ports. */
static void lat_sweep(struct lat_ctx *c, const double *loads, unsigned int n_loads,
		      double secs, struct lat_result *max, struct lat_result *res,
		      const char *what)
{
	lat_run(c, 0, 0.5, secs, max);
	max->load_pct = 100;
	text_result(what, max);
	for (unsigned int k = 0; k < n_loads && !lat_interrupted; k++) {
		double pps = max->rx_mpps * 1e6 * loads[k] / 100.0;

		lat_run(c, pps, 0.5, secs, &res[k]);
		res[k].load_pct = loads[k];
		text_result(what, &res[k]);
	}
}

int bench_latency_main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"scenario", required_argument, NULL, 's'},
		{"scenario-dir", required_argument, NULL, 'd'},
		{"loads", required_argument, NULL, 'l'},
		{"seconds", required_argument, NULL, 't'},
		{"dut", required_argument, NULL, 'u'},
		{"vdev", required_argument, NULL, 'v'},
		{"wait-link", required_argument, NULL, 'w'},
		{"templates", required_argument, NULL, 'n'},
		{"eal", required_argument, NULL, 'e'},
		{"json", no_argument, NULL, 'j'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	static struct lat_ctx ctx;
	struct lat_ctx *c = &ctx;
	const char *scen_arg = "steady-1m", *scen_dir = "bench/scenarios";
	const char *dut = "ring", *eal = "-l 0-1 --no-pci --in-memory";
	const char *vdevs[LAT_MAX_PORTS];
	unsigned int n_vdevs = 0, n_loads = 4;
	double loads[8] = {10, 50, 80, 95}, secs = 2, wait_link = 30;
	uint64_t want_tmpl = 0;
	bool json = false;
	char path[512], err[256], ealbuf[1024];
	char *eargv[64];
	int eargc = 0, opt, rc;
	unsigned int fwd_lcore;
	struct lat_result base_max, base_res[8], dut_max, dut_res[8];
	struct rte_ring *r_a = NULL, *r_b = NULL;
	int port_g, port_f;

	optind = 1;
	while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (opt) {
		case 's': scen_arg = optarg; break;
		case 'd': scen_dir = optarg; break;
		case 'l':
			if (lat_parse_loads(optarg, loads, &n_loads) < 0) {
				fprintf(stderr, "latency: bad --loads '%s' (e.g. 10,50,80,95)\n", optarg);
				return 2;
			}
			break;
		case 't':
			secs = atof(optarg);
			if (!(secs >= 0.1 && secs <= 600)) {
				fprintf(stderr, "latency: --seconds must be 0.1..600\n");
				return 2;
			}
			break;
		case 'u': dut = optarg; break;
		case 'v':
			if (n_vdevs == LAT_MAX_PORTS) {
				fprintf(stderr, "latency: at most %d --vdev (virtual devices only, --no-pci)\n", LAT_MAX_PORTS);
				return 2;
			}
			vdevs[n_vdevs++] = optarg;
			break;
		case 'w': wait_link = atof(optarg); break;
		case 'n':
			if (fg_scen__u64(optarg, 1, 1ull << 26, &want_tmpl) < 0) {
				fprintf(stderr, "latency: bad --templates '%s'\n", optarg);
				return 2;
			}
			break;
		case 'e': eal = optarg; break;
		case 'j': json = true; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (strcmp(dut, "ring") && strcmp(dut, "vdev")) {
		fprintf(stderr, "latency: --dut must be ring or vdev\n");
		return 2;
	}
	if (!strcmp(dut, "vdev") && n_vdevs == 0) {
		fprintf(stderr, "latency: --dut vdev needs at least one --vdev (run with --no-pci)\n");
		return 2;
	}

	/* scenario */
	if (strchr(scen_arg, '/') || strstr(scen_arg, ".scn"))
		snprintf(path, sizeof(path), "%s", scen_arg);
	else
		snprintf(path, sizeof(path), "%s/%s.scn", scen_dir, scen_arg);
	if (fg_scen_load(path, &c->scen, err, sizeof(err)) < 0) {
		fprintf(stderr, "latency: %s\n", err);
		return 1;
	}

	/* EAL */
	snprintf(ealbuf, sizeof(ealbuf), "%s", eal);
	eargv[eargc++] = (char *)"flowgate-bench-latency";
	for (char *save = NULL, *tok = strtok_r(ealbuf, " ", &save); tok && eargc < 60;
	     tok = strtok_r(NULL, " ", &save))
		eargv[eargc++] = tok;
	/* the bench drives virtual devices only: never probe a PCI NIC */
	if (strstr(eal, "--no-pci") == NULL && eargc < 60)
		eargv[eargc++] = (char *)"--no-pci";
	eargv[eargc] = NULL;
	rc = rte_eal_init(eargc, eargv);
	if (rc < 0) {
		fprintf(stderr, "latency: rte_eal_init: %s\n", rte_strerror(rte_errno));
		return 1;
	}
	signal(SIGINT, lat_sigint);
	signal(SIGTERM, lat_sigint);
	c->hz = rte_get_tsc_hz();
	c->ns_per_tick = 1e9 / (double)c->hz;
	c->stall_ticks = c->hz / 50000; /* 20 us */
	fwd_lcore = rte_get_next_lcore(-1, 1, 0); /* first worker lcore */
	if (fwd_lcore >= RTE_MAX_LCORE) {
		fprintf(stderr, "latency: needs 2 lcores (e.g. --eal '-l 0-1 ...')\n");
		rc = 1;
		goto out_eal;
	}

	/* templates: the scenario's packets, built once */
	{
		uint64_t n = want_tmpl ? want_tmpl : fg_scen_pcap_packets(&c->scen);
		uint32_t maxlen = 0;
		static uint8_t frame[FG_SCEN_FRAME_MAX];

		for (uint32_t k = 0; k < (c->scen.imix_seq_n ? c->scen.imix_seq_n : 1); k++) {
			uint32_t w = c->scen.imix_seq_n ? c->scen.imix_seq[k] : c->scen.pkt_size;

			maxlen = RTE_MAX(maxlen, w);
		}
		maxlen = RTE_MAX(maxlen, 78u); /* IPv6 minimum */
		c->tmpl_stride = RTE_ALIGN_CEIL(maxlen, 64);
		if (n * c->tmpl_stride > LAT_TEMPLATE_BYTES)
			n = LAT_TEMPLATE_BYTES / c->tmpl_stride;
		c->tmpl = malloc(n * c->tmpl_stride);
		c->tmpl_len = malloc(n * sizeof(uint16_t));
		if (c->tmpl == NULL || c->tmpl_len == NULL) {
			fprintf(stderr, "latency: out of memory for %" PRIu64 " templates\n", n);
			rc = 1;
			goto out_eal;
		}
		for (uint64_t i = 0; i < n; i++) {
			int len = fg_scen_packet(&c->scen, i, frame, sizeof(frame), NULL);

			if (len < 0 || (uint32_t)len > c->tmpl_stride) {
				fprintf(stderr, "latency: packet %" PRIu64 " does not fit\n", i);
				rc = 1;
				goto out_eal;
			}
			memcpy(c->tmpl + i * c->tmpl_stride, frame, (size_t)len);
			c->tmpl_len[i] = (uint16_t)len;
		}
		c->n_tmpl = n;
	}

	c->pool = rte_pktmbuf_pool_create("lat_pool", LAT_NB_MBUF, 256, 0,
					  RTE_PKTMBUF_HEADROOM + RTE_ALIGN_CEIL(c->tmpl_stride, 128),
					  rte_socket_id());
	if (c->pool == NULL) {
		fprintf(stderr, "latency: mbuf pool: %s\n", rte_strerror(rte_errno));
		rc = 1;
		goto out_eal;
	}

	/* ring DUT: two rings, two ports wired back to back through a forwarder */
	r_a = rte_ring_create("lat_a", LAT_RING_SIZE, rte_socket_id(), RING_F_SP_ENQ | RING_F_SC_DEQ);
	r_b = rte_ring_create("lat_b", LAT_RING_SIZE, rte_socket_id(), RING_F_SP_ENQ | RING_F_SC_DEQ);
	if (r_a == NULL || r_b == NULL) {
		fprintf(stderr, "latency: rings: %s\n", rte_strerror(rte_errno));
		rc = 1;
		goto out_eal;
	}
	{
		lat_from_rings_t from_rings = lat_find_from_rings();

		if (from_rings == NULL) {
			rc = 1;
			goto out_eal;
		}
		port_g = from_rings("lat_gen", &r_b, 1, &r_a, 1, rte_socket_id());
		port_f = from_rings("lat_fwd", &r_a, 1, &r_b, 1, rte_socket_id());
	}
	if (port_g < 0 || port_f < 0 || lat_port_start((uint16_t)port_g, c->pool) < 0 ||
	    lat_port_start((uint16_t)port_f, c->pool) < 0) {
		fprintf(stderr, "latency: ring ports: %s\n", rte_strerror(rte_errno));
		rc = 1;
		goto out_eal;
	}
	c->gen_port = (uint16_t)port_g;
	c->rx_ports[0] = (uint16_t)port_g;
	c->n_rx_ports = 1;
	c->fwd_port = (uint16_t)port_f;
	c->fwd_stop = false;
	rte_eal_remote_launch(lat_fwd_main, c, fwd_lcore);
	fprintf(stderr, "latency: scenario %s, %" PRIu64 " distinct frames, TSC %.3f GHz; "
		"baseline: ring -> io-fwd lcore %u -> ring\n",
		c->scen.name, c->n_tmpl, c->hz / 1e9, fwd_lcore);
	lat_sweep(c, loads, n_loads, secs, &base_max, base_res, "ring-base");
	c->fwd_stop = true;
	rte_eal_wait_lcore(fwd_lcore);

	if (!strcmp(dut, "vdev") && !lat_interrupted) {
		uint64_t deadline;

		for (unsigned int k = 0; k < n_vdevs; k++) {
			char name[64];
			const char *comma = strchr(vdevs[k], ',');
			size_t nl = comma ? (size_t)(comma - vdevs[k]) : strlen(vdevs[k]);
			uint16_t pid;

			if (nl >= sizeof(name)) {
				fprintf(stderr, "latency: vdev name too long\n");
				rc = 1;
				goto out_eal;
			}
			memcpy(name, vdevs[k], nl);
			name[nl] = '\0';
			rc = rte_dev_probe(vdevs[k]);
			if (rc < 0 || rte_eth_dev_get_port_by_name(name, &pid) != 0) {
				fprintf(stderr, "latency: probe '%s': %s\n", vdevs[k], rte_strerror(-rc));
				rc = 1;
				goto out_eal;
			}
			if ((rc = lat_port_start(pid, c->pool)) < 0) {
				fprintf(stderr, "latency: start '%s': %s\n", vdevs[k], rte_strerror(-rc));
				rc = 1;
				goto out_eal;
			}
			c->rx_ports[k] = pid;
		}
		c->gen_port = c->rx_ports[0];
		c->n_rx_ports = n_vdevs;
		fprintf(stderr, "latency: waiting up to %.0f s for the DUT to attach\n", wait_link);
		deadline = rte_rdtsc() + (uint64_t)(wait_link * c->hz);
		for (;;) {
			unsigned int up = 0;

			for (unsigned int k = 0; k < n_vdevs; k++) {
				struct rte_eth_link l;

				if (rte_eth_link_get_nowait(c->rx_ports[k], &l) == 0 && l.link_status)
					up++;
			}
			if (up == n_vdevs)
				break;
			if (rte_rdtsc() > deadline || lat_interrupted) {
				fprintf(stderr, "latency: DUT links not up after %.0f s\n", wait_link);
				rc = 1;
				goto out_eal;
			}
			rte_delay_ms(100);
		}
		rte_delay_ms(500);
		lat_sweep(c, loads, n_loads, secs, &dut_max, dut_res, "dut");
	}

	if (json) {
		printf("{\"bench\":\"latency\",\"scenario\":\"%s\",\"dut\":\"%s\","
		       "\"distinct_frames\":%" PRIu64 ",\"seconds\":%.2f,\"tsc_hz\":%" PRIu64
		       ",\"histogram\":\"10 ns buckets to 100 us, 1 us to 10 ms\"",
		       c->scen.name, dut, c->n_tmpl, secs, c->hz);
		printf(",\"baseline\":{\"path\":\"ring -> io-fwd lcore -> ring\",");
		json_result("max", &base_max, false);
		printf(",\"loads\":[");
		for (unsigned int k = 0; k < n_loads; k++) {
			json_result(NULL, &base_res[k], k > 0);
		}
		printf("]}");
		if (!strcmp(dut, "vdev")) {
			printf(",\"dut_result\":{\"vdevs\":[");
			for (unsigned int k = 0; k < n_vdevs; k++)
				printf("%s\"%s\"", k ? "," : "", vdevs[k]);
			printf("],");
			json_result("max", &dut_max, false);
			printf(",\"loads\":[");
			for (unsigned int k = 0; k < n_loads; k++)
				json_result(NULL, &dut_res[k], k > 0);
			printf("]}");
		}
		printf(",\"interrupted\":%s}\n", lat_interrupted ? "true" : "false");
	}
	rc = lat_interrupted ? 130 : 0;
out_eal:
	free(c->tmpl);
	free(c->tmpl_len);
	rte_eal_cleanup();
	return rc;
}
