/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * flowgate-bench dataplane: the daemon's real worker loop (fg_worker_main:
 * rte_eth_rx_burst -> fg_worker_burst -> buffered TX, with expiry, mailbox
 * and RCU housekeeping) on one worker core per RX port.
 *
 *   flowgate-bench dataplane --flows N --mode dsr-ipip|dsr-gue|nat
 *                            [--workers W] [--new-flows] [--seconds S]
 *                            [--no-testpmd] [--scrape-ms MS]
 *                            [--sched maglev|maglev-load] [--idle-sleep US] [--json]
 *
 * --sched maglev-load: the service places new flows with maglev-load
 * (pkt/fg_place.h) over a published load table in which every backend's
 * signal is fresh, with scores spread so that both candidates are read
 * and a good share of new flows take the second one; there is no health
 * checker in the bench, so the table stays as published.  The hit path
 * does not read it: runs with and without give its cost (issue 12).
 *
 * --idle-sleep US: the workers run with flowgate's --idle-sleep=US (sleep
 * after a run of empty polls, bench/RESULTS.md "Issue 13"): interleave runs
 * with and without it to see what it costs under load (`idle_sleeps`
 * counts the sleeps; under a saturating replay it stays 0).
 *
 * --scrape-ms MS: a thread beside the workers renders the Prometheus
 * exposition (fg_metrics_render: the snapshot with every worker's conntrack
 * counters through its mailbox, what each GET /metrics costs) every MS
 * milliseconds during the measured window, so runs with and without it
 * give the scrape's cost to the dataplane (`scrapes` counts them).
 *
 * Traffic: the bench writes a pcap of N distinct 64-byte TCP ACK frames to
 * the mode's VIP (one packet per flow, flows in order; with W workers, W
 * pcaps of N/W flows each, one per worker as an RSS queue would give), and
 * net_pcap replays it from memory (rx_pcap=...,infinite_rx=1) into
 * flowgate, which sends to net_null.  Every flow is opened first by the
 * handshake's client packets (SYN, ACK) that each worker generates for its
 * own flows (pcap_worker_main); the window measured afterwards is all
 * conntrack hits on ESTABLISHED flows.
 *
 * Baseline, same vdevs and same pcap, same run: dpdk-testpmd io forwarding
 * net_pcap (infinite_rx) -> net_null on one core, measured before and after
 * flowgate; `testpmd_io_mpps` is their mean (the framework ceiling: RX from
 * the same replay, TX to the same sink, no packet work).
 *
 * --new-flows: every packet is a SYN of a never-seen tuple, generated in
 * process (a pcap cannot hold an endless supply of new tuples): a miss, a
 * Maglev pick and an insert per packet; `new_flows_mps` is the rate of
 * flows created.  Once the table is full, early drop evicts the oldest
 * unassured entry, which is the steady state of a SYN flood.
 */
#include <errno.h>
#include <getopt.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_malloc.h>

#include "fg_dp_private.h"
#include "fg_load.h"
#include "fg_loadsig.h"
#include "fg_worker_private.h"
#include "fg_metrics.h"

struct gen {
	struct fg_worker *w;
	struct rte_mempool *pool;
	uint64_t first;   /* flow index of this generator's flow 0 */
	uint64_t flows;
	uint64_t next;
	bool new_flows;
	volatile bool stop;
	volatile bool warm;
	uint64_t generated;
};

static const uint8_t tmpl[64] = {
	/* eth: dst = port MAC (filled), src 02:00:00:00:00:02, IPv4 */
	0x02, 0, 0, 0, 0, 0x01, 0x02, 0, 0, 0, 0, 0x02, 0x08, 0x00,
	/* IPv4: len 40, TTL 64, TCP, src (filled), dst 10.0.0.100 */
	0x45, 0, 0, 40, 0, 0, 0x40, 0, 64, 6, 0, 0, 10, 128, 0, 0, 10, 0, 0, 100,
	/* TCP: sport (filled), dport 80, seq, ack, doff 5, flags, win */
	0x04, 0x00, 0x00, 0x50, 0, 0, 0, 1, 0, 0, 0, 1, 0x50, 0x10, 0xff, 0xff,
	0, 0, 0, 0,
	/* padding to 64 */
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
};

static inline void fill(uint8_t *d, uint64_t i, uint8_t flags)
{
	uint32_t src = rte_cpu_to_be_32(0x0a800000u + (uint32_t)(i / 40000));
	uint16_t sport = rte_cpu_to_be_16((uint16_t)(1024 + i % 40000));

	rte_memcpy(d, tmpl, 64);
	memcpy(d + 26, &src, 4);
	memcpy(d + 34, &sport, 2);
	d[47] = flags;
}

static void gen_burst(struct gen *g, uint8_t flags)
{
	struct rte_mbuf *m[FG_BURST];

	if (rte_pktmbuf_alloc_bulk(g->pool, m, FG_BURST) != 0)
		return;
	for (int k = 0; k < FG_BURST; k++) {
		uint64_t i;

		if (g->new_flows) {
			i = g->next++;
		} else {
			i = g->next++;
			if (g->next == g->flows)
				g->next = 0;
		}
		fill(rte_pktmbuf_mtod(m[k], uint8_t *), g->first + i, flags);
		m[k]->data_len = m[k]->pkt_len = 64;
		m[k]->port = (uint16_t)g->w->idx;
		fg_mbuf_priv(m[k])->parsed = 0;
	}
	fg_worker_burst(g->w, m, FG_BURST, rte_rdtsc());
	g->generated += FG_BURST;
}

static int gen_main(void *arg)
{
	struct gen *g = arg;
	struct fg_worker *w = g->w;

	rte_rcu_qsbr_thread_register(w->dp->qsbr, w->idx);
	rte_rcu_qsbr_thread_online(w->dp->qsbr, w->idx);
	if (!g->new_flows) {
		/* warm-up: create every flow once (SYN), then ACKs */
		for (uint64_t n = 0; n < g->flows; n += FG_BURST) {
			gen_burst(g, 0x02);
			fg_worker_housekeeping(w, rte_rdtsc());
		}
		g->next = 0;
	}
	g->warm = true;
	while (!g->stop) {
		gen_burst(g, g->new_flows ? 0x02 : 0x10);
		fg_worker_housekeeping(w, rte_rdtsc());
	}
	rte_rcu_qsbr_thread_offline(w->dp->qsbr, w->idx);
	rte_rcu_qsbr_thread_unregister(w->dp->qsbr, w->idx);
	return 0;
}

/*
 * Hits: a worker first opens the flows of its pcap as clients do (SYN, then
 * the handshake's ACK), then replays the pcap's ACKs against ESTABLISHED
 * entries.  (A flow first seen by an ACK is an unassured pickup in DSR and
 * is refused in NAT: issue 9, defect 2.)
 */
struct warm {
	struct fg_worker *w;
	struct rte_mempool *pool;
	uint64_t first, n;
};

static int pcap_worker_main(void *arg)
{
	struct warm *a = arg;
	struct fg_worker *w = a->w;
	static const uint8_t flags[2] = {0x02, 0x10};

	rte_rcu_qsbr_thread_register(w->dp->qsbr, w->idx);
	rte_rcu_qsbr_thread_online(w->dp->qsbr, w->idx);
	for (int f = 0; f < 2; f++)
		for (uint64_t i = a->first; i < a->first + a->n; i += FG_BURST) {
			struct rte_mbuf *m[FG_BURST];
			uint16_t k = (uint16_t)RTE_MIN((uint64_t)FG_BURST,
						       a->first + a->n - i);

			if (rte_pktmbuf_alloc_bulk(a->pool, m, k) != 0) {
				i -= FG_BURST;   /* TX still holds them: retry */
				fg_worker_housekeeping(w, rte_rdtsc());
				continue;
			}
			for (uint16_t j = 0; j < k; j++) {
				fill(rte_pktmbuf_mtod(m[j], uint8_t *), i + j, flags[f]);
				m[j]->data_len = m[j]->pkt_len = 64;
				m[j]->port = 0;
				fg_mbuf_priv(m[j])->parsed = 0;
			}
			fg_worker_burst(w, m, k, rte_rdtsc());
			fg_worker_housekeeping(w, rte_rdtsc());
		}
	rte_rcu_qsbr_thread_offline(w->dp->qsbr, w->idx);
	rte_rcu_qsbr_thread_unregister(w->dp->qsbr, w->idx);
	return fg_worker_main(w);
}

static bool imix; /* --imix: IMIX frame sizes instead of 64 B */

static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* EAL lcore list for N lcores on the CPUs this process may run on:
 * "--lcores=0@C0,1@C1,..." with Ci the i-th CPU of the affinity mask, so
 * that `taskset -c 2-5 flowgate-bench ...` really runs on CPUs 2-5 (a plain
 * "-l 0-N" pins lcore i to CPU i whatever the mask says, which put every
 * earlier A/B sample on CPUs 0-1 beside the host's interrupts).  More
 * lcores than CPUs: all lcores float over the mask (*oversub set; only for
 * functional runs, the JSON says so).  Returns the number of CPUs usable. */
static long eal_lcores(char *buf, size_t len, unsigned int n, bool *oversub)
{
	cpu_set_t set;
	unsigned int cpus[CPU_SETSIZE];
	long nc = 0;
	size_t o;

	if (sched_getaffinity(0, sizeof(set), &set) != 0)
		CPU_ZERO(&set);
	for (unsigned int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &set))
			cpus[nc++] = c;
	if (nc == 0) {	/* no mask: CPUs 0..online-1 */
		long on = sysconf(_SC_NPROCESSORS_ONLN);

		for (nc = 0; nc < on && nc < CPU_SETSIZE; nc++)
			cpus[nc] = (unsigned int)nc;
	}
	*oversub = (long)n > nc;
	o = (size_t)snprintf(buf, len, "--lcores=");
	if (*oversub) {
		o += (size_t)snprintf(buf + o, len - o, "(0-%u)@(", n - 1);
		for (long k = 0; k < nc && o < len; k++)
			o += (size_t)snprintf(buf + o, len - o, "%s%u", k ? "," : "", cpus[k]);
		snprintf(buf + o, len > o ? len - o : 0, ")");
	} else {
		for (unsigned int k = 0; k < n && o < len; k++)
			o += (size_t)snprintf(buf + o, len - o, "%s%u@%u", k ? "," : "", k, cpus[k]);
	}
	return nc;
}

/*
 * dpdk-testpmd io forwarding on one core over @p vdevs (port 0 -> port 1).
 * Returns the median over its 1 s samples of port 0's Rx-pps, in Mpps.
 */
static double testpmd_io_mpps(const char *mem_args, const char *vdevs,
			      unsigned int mbufs, double seconds)
{
	char cmd[1024], lcores[96];
	double samples[64];
	bool oversub;
	int ns = 0;
	char line[512];
	FILE *f;

	/* FG_TESTPMD / FG_TESTPMD_EAL: where testpmd is not installed (the
	 * device machine carries it with its PMDs: "-d DIR") */
	const char *bin = getenv("FG_TESTPMD") ? getenv("FG_TESTPMD") : "dpdk-testpmd";
	const char *extra = getenv("FG_TESTPMD_EAL") ? getenv("FG_TESTPMD_EAL") : "";

	eal_lcores(lcores, sizeof(lcores), 2, &oversub);
	snprintf(cmd, sizeof(cmd),
		 "timeout -s INT %.0f %s '%s' %s %s --file-prefix "
		 "fgb-tpmd%d %s '--log-level=*:error' -- --forward-mode=io "
		 "--auto-start --stats-period 1 --nb-cores=1 --rxq=1 --txq=1 "
		 "--total-num-mbufs=%u %s </dev/null 2>&1",
		 seconds + 4, bin, lcores, extra, mem_args, (int)getpid(), vdevs, mbufs,
		 imix ? "" : "--mbuf-size=384");
	f = popen(cmd, "r");
	if (f == NULL)
		return -1;
	/* stats blocks list port 0 then port 1; take port 0's Rx-pps */
	int port = -1;
	bool verbose = getenv("FG_BENCH_VERBOSE") != NULL;

	while (fgets(line, sizeof(line), f)) {
		const char *p;

		if (verbose)
			fputs(line, stderr);
		if ((p = strstr(line, "NIC statistics for port ")) != NULL) {
			port = atoi(p + 24);
			continue;
		}
		p = strstr(line, "Rx-pps:");
		if (p == NULL || port != 0)
			continue;
		double v = strtod(p + 7, NULL);

		if (v > 0 && ns < 64)
			samples[ns++] = v;
	}
	pclose(f);
	if (ns <= 1)
		return -1;
	/* the first sample includes start-up */
	qsort(samples + 1, ns - 1, sizeof(samples[0]), cmp_dbl);
	return samples[1 + (ns - 1) / 2] / 1e6;
}

/* Writes flows [first, first + n) as one 60-byte frame each (64 on the
 * wire with the FCS) to a pcap. */
/* Simple IMIX (7:4:1 of 64, 570, 1518 bytes on the wire), frames without
 * the 4-byte FCS as pcaps hold them. */
static const uint16_t imix_sizes[12] = {60, 60, 60, 60, 60, 60, 60,
					 566, 566, 566, 566, 1514};
static int write_pcap(const char *path, uint64_t first, uint64_t n)
{
	struct {
		uint32_t magic;
		uint16_t major, minor;
		int32_t zone;
		uint32_t sigfigs, snaplen, linktype;
	} gh = {0xa1b2c3d4, 2, 4, 0, 0, 65535, 1};
	struct {
		uint32_t sec, usec, caplen, len;
	} rh = {0, 0, 60, 60};
	static uint8_t d[1514];
	FILE *f = fopen(path, "wb");

	if (f == NULL)
		return -errno;
	fwrite(&gh, sizeof(gh), 1, f);
	for (uint64_t i = first; i < first + n; i++) {
		uint16_t len = imix ? imix_sizes[i % 12] : 60;

		fill(d, i, 0x10);
		d[16] = (uint8_t)((len - 14) >> 8);
		d[17] = (uint8_t)(len - 14);
		/* IPv4 header checksum, so the frames are valid on any path */
		uint32_t sum = 0;

		d[24] = d[25] = 0;
		for (int k = 14; k < 34; k += 2)
			sum += (uint32_t)(d[k] << 8 | d[k + 1]);
		sum = (sum & 0xffff) + (sum >> 16);
		sum = (sum & 0xffff) + (sum >> 16);
		d[24] = (uint8_t)(~sum >> 8);
		d[25] = (uint8_t)~sum;
		rh.usec = (uint32_t)(i % 1000000);
		rh.caplen = rh.len = len;
		fwrite(&rh, sizeof(rh), 1, f);
		fwrite(d, len, 1, f);
	}
	if (fclose(f) != 0)
		return -EIO;
	return 0;
}

/* --sched maglev-load: every signal fresh, scores 0..15 x 1000 spread
 * over the backends (a deterministic shuffle of the ids), margin 1000 */
static int bench_load_get(uint32_t service_id, uint32_t backend_id,
			  struct fg_health_load *out)
{
	(void)service_id;
	memset(out, 0, sizeof(*out));
	out->fresh = true;
	out->ever = true;
	out->score_milli = (backend_id * 7u % 16u) * 1000u;
	out->margin_milli = FG_LOADSIG_MARGIN_DEFAULT;
	return 0;
}

/* One service of @p mode at 10.0.0.100:80/tcp, 16 backends (weights
 * 1,2,3,...) reachable through port @p tx_port; 16 NAT local addresses. */
static int build_cfg(struct fg_config *c, enum fg_fwd_mode mode,
		     unsigned int n_ports, unsigned int tx_port)
{
	struct fg_service_cfg *s = calloc(1, sizeof(*s));

	if (s == NULL)
		return -ENOMEM;
	memset(c, 0, sizeof(*c));
	c->services = s;
	c->n_services = 1;
	s->id = 1;
	snprintf(s->name, sizeof(s->name), "bench");
	s->vip.family = AF_INET;
	s->vip.v4.s_addr = rte_cpu_to_be_32(0x0a000064);
	s->port = 80;
	s->proto = IPPROTO_TCP;
	s->mode = mode;
	s->gue_port = 6080;
	s->n_backends = 16;
	c->n_ports = n_ports;
	/* 16 local addresses: NAT reply tuples = 16 x 16 backends x 64512 */
	c->ports[tx_port].n_local = 16;
	for (uint32_t i = 0; i < 16; i++) {
		c->ports[tx_port].local[i].family = AF_INET;
		c->ports[tx_port].local[i].v4.s_addr = rte_cpu_to_be_32(0x0a000001 + i);
	}
	for (uint32_t i = 0; i < 16; i++) {
		struct fg_backend_cfg *b = &s->backends[i];

		b->addr.family = AF_INET;
		b->addr.v4.s_addr = rte_cpu_to_be_32(0x0a010001 + i);
		b->weight = 1 + i % 3;
		b->id = i + 1;
		c->neigh[i].ip = b->addr;
		c->neigh[i].mac[0] = 0x02;
		c->neigh[i].mac[5] = (uint8_t)(0x10 + i);
		c->neigh[i].port = (uint16_t)tx_port;
	}
	c->n_neigh = 16;
	return 0;
}

struct scraper {
	struct fg_dp *dp;
	unsigned int ms;
	volatile bool stop;
	uint64_t scrapes;
	size_t bytes;
};

/* --scrape-ms: what the metrics thread does per GET, minus the socket */
static void *scrape_main(void *arg)
{
	struct scraper *sc = arg;

	while (!sc->stop) {
		char *buf = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&buf, &len);

		if (f != NULL && fg_metrics_render(sc->dp, f) == 0) {
			fclose(f);
			sc->scrapes++;
			sc->bytes = len;
		} else if (f != NULL) {
			fclose(f);
		}
		free(buf);
		usleep(sc->ms * 1000u);
	}
	return NULL;
}

static void usage(void)
{
	fprintf(stderr, "usage: flowgate-bench dataplane --flows N --mode dsr-ipip|"
		"dsr-gue|nat [--workers W] [--new-flows] [--imix] [--seconds S] "
		"[--no-testpmd] [--scrape-ms MS] [--sched maglev|maglev-load] [--idle-sleep US] [--json]\n");
}

static uint64_t sum_cc(struct fg_dp *dp, enum fg_core_counter c)
{
	uint64_t v = 0;

	for (unsigned int i = 0; i < dp->n_workers; i++)
		v += __atomic_load_n(&dp->workers[i]->cc[c], __ATOMIC_RELAXED);
	return v;
}

static uint64_t sum_dc(struct fg_dp *dp, enum fg_dp_counter c)
{
	uint64_t v = 0;

	for (unsigned int i = 0; i < dp->n_workers; i++)
		v += __atomic_load_n(&dp->workers[i]->dc[c], __ATOMIC_RELAXED);
	return v;
}

/* One run's settings and state (bench_dataplane_main's steps share it). */
struct bench {
	uint64_t flows, per_worker;
	enum fg_fwd_mode mode;
	const char *mode_name;
	bool new_flows, json, run_tpmd, huge, oversub, mload;
	double seconds, tpmd_before, tpmd_after;
	unsigned int n_workers, scrape_ms, idle_sleep_us, n_mbufs, tp_mbufs, n_ports, tx_port;
	long ncpu;
	char mem_args[128], tp_vdevs[256];
	const char *tp_mem;
	char pcaps[FG_MAX_WORKERS][96];
	struct fg_dp *dp;
};

/* What one measurement window saw. */
struct bench_result {
	double dt, mpps, rx_mpps, gen_mpps, nfps, tpmd;
	uint64_t drops, hits, scrapes, idle_sleeps;
	size_t scrape_bytes;
};

/* @return -1 to go on, else the exit status. */
static int bench_args(int argc, char **argv, struct bench *b)
{
	static const struct option opts[] = {
		{"flows", required_argument, NULL, 'f'},
		{"mode", required_argument, NULL, 'm'},
		{"workers", required_argument, NULL, 'w'},
		{"new-flows", no_argument, NULL, 'n'},
		{"seconds", required_argument, NULL, 's'},
		{"no-testpmd", no_argument, NULL, 'T'},
		{"imix", no_argument, NULL, 'I'},
		{"json", no_argument, NULL, 'j'},
		{"scrape-ms", required_argument, NULL, 'S'},
		{"sched", required_argument, NULL, 'D'},
		{"idle-sleep", required_argument, NULL, 'i'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	int opt;

	b->flows = 1000000;
	b->mode = FG_MODE_DSR_IPIP;
	b->mode_name = "dsr-ipip";
	b->run_tpmd = true;
	b->seconds = 3;
	b->tpmd_before = b->tpmd_after = -1;
	b->n_workers = 1;
	optind = 1;
	while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (opt) {
		case 'f': b->flows = strtoull(optarg, NULL, 0); break;
		case 'm':
			b->mode_name = optarg;
			if (!strcmp(optarg, "dsr-ipip")) b->mode = FG_MODE_DSR_IPIP;
			else if (!strcmp(optarg, "dsr-gue")) b->mode = FG_MODE_DSR_GUE;
			else if (!strcmp(optarg, "nat")) b->mode = FG_MODE_NAT;
			else { usage(); return 2; }
			break;
		case 'w': b->n_workers = (unsigned int)atoi(optarg); break;
		case 'n': b->new_flows = true; break;
		case 's': b->seconds = atof(optarg); break;
		case 'T': b->run_tpmd = false; break;
		case 'I': imix = true; break;
		case 'j': b->json = true; break;
		case 'S': b->scrape_ms = (unsigned int)atoi(optarg); break;
		case 'D':
			if (!strcmp(optarg, "maglev-load")) b->mload = true;
			else if (strcmp(optarg, "maglev")) { usage(); return 2; }
			break;
		case 'i': b->idle_sleep_us = (unsigned int)atoi(optarg); break;
		case 'h': usage(); return 0;
		default: usage(); return 2;
		}
	}
	if (b->flows == 0 || b->flows > 40000ull * 65536 || b->seconds <= 0 ||
	    b->n_workers == 0 || b->n_workers > FG_MAX_WORKERS - 1 ||
	    (b->new_flows && b->n_workers != 1) || b->flows < b->n_workers ||
	    b->n_workers + 1 > FG_MAX_PORTS) {
		fprintf(stderr, "flowgate-bench dataplane: --flows 1..2.6e9, --seconds > 0, "
			"--workers 1..%d (1 with --new-flows)\n", FG_MAX_WORKERS - 1);
		usage();
		return 2;
	}
	b->per_worker = b->flows / b->n_workers;
	b->n_ports = b->new_flows ? 1 : b->n_workers + 1;
	b->tx_port = b->n_ports - 1;
	return -1;
}

/* Memory (hugepages when there are enough free, else plain memory) and
 * traffic: one pcap per worker (not with --new-flows), the testpmd
 * baseline's devices. */
static int bench_traffic(struct bench *b)
{
	FILE *mi = fopen("/proc/meminfo", "r");
	unsigned long free_hp = 0, hp_kb = 2048;
	char line[256];

	snprintf(b->mem_args, sizeof(b->mem_args), "--no-huge -m 4096");
	while (mi && fgets(line, sizeof(line), mi)) {
		sscanf(line, "HugePages_Free: %lu", &free_hp);
		sscanf(line, "Hugepagesize: %lu", &hp_kb);
	}
	if (mi)
		fclose(mi);
	b->huge = free_hp * hp_kb >= 1536ul * 1024;
	if (b->huge)
		snprintf(b->mem_args, sizeof(b->mem_args), "--in-memory");
	if (getenv("FG_BENCH_MEM"))
		snprintf(b->mem_args, sizeof(b->mem_args), "%s", getenv("FG_BENCH_MEM"));
	b->n_mbufs = 32768;
	if (!b->new_flows) {
		for (unsigned int w = 0; w < b->n_workers; w++) {
			snprintf(b->pcaps[w], sizeof(b->pcaps[w]), "/tmp/fgb-dp-%d-%u.pcap",
				 (int)getpid(), w);
			if (write_pcap(b->pcaps[w], w * b->per_worker, b->per_worker) < 0) {
				fprintf(stderr, "flowgate-bench: cannot write %s\n", b->pcaps[w]);
				return -EIO;
			}
		}
		/* net_pcap infinite_rx holds the whole pcap in mbufs */
		b->n_mbufs = (unsigned int)(b->flows + b->n_workers * 8192 + 16384);
	}
	snprintf(b->tp_vdevs, sizeof(b->tp_vdevs),
		 b->new_flows ? "--no-pci --vdev net_null0 --vdev net_null1"
			      : "--no-pci --vdev net_pcap0,rx_pcap=%s,infinite_rx=1 --vdev net_null0,no-rx=1",
		 b->pcaps[0]);
	b->tp_mem = b->huge ? "--in-memory" : "--no-huge -m 4096";
	b->tp_mbufs = b->new_flows ? 65536 : (unsigned int)(b->per_worker + 65536);
	return 0;
}

/* EAL: main lcore 0 + one lcore per worker, on the CPUs of the affinity
 * mask (oversubscribed when there are fewer: the figure then says so). */
static int bench_eal(struct bench *b)
{
	static char prefix[64], lcores[FG_MAX_WORKERS * 12 + 32];
	static char vdev[FG_MAX_WORKERS + 1][160];
	char *eal[48], *memdup = strdup(b->mem_args), *tok, *save = NULL;
	/* virtual devices only: "--no-pci" precedes every "--vdev" below */
	char *no_pci = "--no-pci", *vdev_opt = "--vdev"; /* never probe a PCI NIC */
	int ea = 0;

	snprintf(prefix, sizeof(prefix), "--file-prefix=fgb-dp%d", (int)getpid());
	b->ncpu = eal_lcores(lcores, sizeof(lcores), b->n_workers + 1, &b->oversub);
	eal[ea++] = "flowgate-bench";
	eal[ea++] = lcores;
	eal[ea++] = no_pci;
	if (!b->new_flows)
		for (unsigned int w = 0; w < b->n_workers; w++) {
			snprintf(vdev[w], sizeof(vdev[w]),
				 "net_pcap%u,rx_pcap=%s,infinite_rx=1", w, b->pcaps[w]);
			eal[ea++] = vdev_opt;
			eal[ea++] = vdev[w];
		}
	eal[ea++] = vdev_opt;
	eal[ea++] = b->new_flows ? "net_null0" : "net_null0,no-rx=1";
	eal[ea++] = "--log-level=lib.eal:warning";
	eal[ea++] = "--log-level=pmd.net.pcap:warning";
	for (tok = strtok_r(memdup, " ", &save); tok && ea < 44;
	     tok = strtok_r(NULL, " ", &save))
		eal[ea++] = tok;
	if (strcmp(b->mem_args, "--in-memory") != 0)
		eal[ea++] = prefix;
	if (rte_eal_init(ea, eal) < 0) {
		fprintf(stderr, "flowgate-bench: EAL init failed: %s\n",
			rte_strerror(rte_errno));
		return -1;
	}
	return 0;
}

/* The daemon's assembly (fg_dp.h), with the bench's choices: one RX port
 * per worker, small buffers, no generated ICMP, no control socket. */
static int bench_build(struct bench *b)
{
	struct fg_dp_params prm;
	struct fg_config cfg;
	uint64_t need;
	int rc;

	if (build_cfg(&cfg, b->mode, b->n_ports, b->tx_port) < 0)
		return -ENOMEM;
	if (b->mload) {
		cfg.services[0].sched = FG_SCHED_MAGLEV_LOAD;
		cfg.services[0].health.type = FG_HC_METRICS;
		fg_loadsig_preset(FG_LOAD_PRESET_VLLM, &cfg.services[0].health.metrics);
	}
	fg_dp_params_init(&prm);
	prm.cfg = &cfg;
	prm.n_workers = b->n_workers;
	prm.sw_rss = 0;
	prm.n_mbufs = b->n_mbufs;
	prm.icmp_rate = 0;
	prm.rx_port_per_worker = !b->new_flows;
	prm.idle_sleep_us = b->idle_sleep_us;
	if (!b->new_flows)
		prm.rx_only_ports = ((1u << b->n_ports) - 1) & ~(1u << b->tx_port);
	/* 64-byte frames + outer headers fit in 256 bytes after the headroom:
	 * small buffers let net_pcap hold 10M packets in memory */
	if (!imix)
		prm.mbuf_data_room = RTE_PKTMBUF_HEADROOM + 256;
	need = b->new_flows ? (1u << 20) :
	       (b->mode == FG_MODE_NAT ? 2 * b->per_worker : b->per_worker) +
	       b->per_worker / 4 + 1024;
	cfg.ct_capacity = (uint32_t)RTE_MIN(need, (uint64_t)UINT32_MAX / 2);
	rc = fg_dp_create(&prm, &b->dp);
	free(cfg.services);
	if (rc < 0) {
		fprintf(stderr, "flowgate-bench: dataplane: %s\n", strerror(-rc));
		return rc;
	}
	/* jumbo-capable path to the backends, as DSR in a data centre needs
	 * (a 1500-byte packet plus its outer header) */
	fg_dp_port_mtu_set(b->dp, b->tx_port, 9000);
	if (b->mload) {
		struct fg_load_table *lt = NULL;

		if (fg_load_table_build(b->dp->lb, bench_load_get, &lt) < 0)
			return -ENOMEM;
		__atomic_store_n(&b->dp->load, lt, __ATOMIC_RELEASE);
	}
	return 0;
}

/* Starts the lcore loops; with a replay, waits until every worker opened
 * its flows and replayed its pcap once (then only conntrack hits count). */
static void bench_launch(struct bench *b, struct gen *g)
{
	static struct warm warm[FG_MAX_WORKERS];
	struct fg_dp *dp = b->dp;
	uint64_t deadline;

	if (b->new_flows) {
		rte_eal_remote_launch(gen_main, g, dp->workers[0]->lcore);
		while (!g->warm)
			rte_delay_us_sleep(1000);
		return;
	}
	for (unsigned int w = 0; w < b->n_workers; w++) {
		warm[w] = (struct warm){dp->workers[w], dp->pool[0],
					w * b->per_worker, b->per_worker};
		rte_eal_remote_launch(pcap_worker_main, &warm[w], dp->workers[w]->lcore);
	}
	deadline = rte_rdtsc() + 120 * dp->hz;
	for (unsigned int w = 0; w < b->n_workers; w++)
		while (__atomic_load_n(&dp->workers[w]->cc[FG_CC_rx_packets],
				       __ATOMIC_RELAXED) < 3 * b->per_worker + b->per_worker / 10 &&
		       rte_rdtsc() < deadline)
			rte_delay_us_sleep(10000);
}

/* The measurement window, then the lcores stopped.  @return 0 or -1. */
static int bench_measure(struct bench *b, struct gen *g, struct bench_result *res)
{
	struct scraper sc = {.dp = b->dp, .ms = b->scrape_ms};
	struct fg_dp *dp = b->dp;
	pthread_t scrape_thread;

	if (b->scrape_ms && pthread_create(&scrape_thread, NULL, scrape_main, &sc) != 0) {
		fprintf(stderr, "flowgate-bench: scrape thread\n");
		g->stop = true;
		fg_dp_stop(dp);
		return -1;
	}
	uint64_t t0 = rte_rdtsc(), tx0 = sum_cc(dp, FG_CC_tx_packets);
	uint64_t rx0 = sum_cc(dp, FG_CC_rx_packets);
	uint64_t nf0 = sum_cc(dp, FG_CC_new_flows), g0 = g->generated;

	rte_delay_us_sleep((unsigned int)(b->seconds * 1e6));
	uint64_t t1 = rte_rdtsc(), tx1 = sum_cc(dp, FG_CC_tx_packets);
	uint64_t rx1 = sum_cc(dp, FG_CC_rx_packets);
	uint64_t nf1 = sum_cc(dp, FG_CC_new_flows), g1 = g->generated;

	if (b->scrape_ms) {
		sc.stop = true;
		pthread_join(scrape_thread, NULL);
	}
	g->stop = true;
	fg_dp_stop(dp);
	res->dt = (double)(t1 - t0) / (double)dp->hz;
	res->mpps = (double)(tx1 - tx0) / res->dt / 1e6;
	res->rx_mpps = (double)(rx1 - rx0) / res->dt / 1e6;
	res->gen_mpps = (double)(g1 - g0) / res->dt / 1e6;
	res->nfps = (double)(nf1 - nf0) / res->dt;
	res->drops = sum_cc(dp, FG_CC_drops);
	res->hits = sum_cc(dp, FG_CC_ct_hits);
	res->idle_sleeps = sum_dc(dp, FG_DC_idle_sleeps);
	res->scrapes = sc.scrapes;
	res->scrape_bytes = sc.bytes;
	return 0;
}

/* The testpmd baseline after the run (same devices, same pcap). */
static void bench_baseline_after(struct bench *b)
{
	if (!b->new_flows)
		for (unsigned int w = 0; w < b->n_workers; w++)
			unlink(b->pcaps[w]);
	if (b->run_tpmd && !b->new_flows) {
		/* the replay needs its pcap again: rewrite worker 0's */
		write_pcap(b->pcaps[0], 0, b->per_worker);
		b->tpmd_after = testpmd_io_mpps(b->tp_mem, b->tp_vdevs, b->tp_mbufs, b->seconds);
		unlink(b->pcaps[0]);
	} else if (b->run_tpmd) {
		b->tpmd_after = testpmd_io_mpps(b->tp_mem, b->tp_vdevs, b->tp_mbufs, b->seconds);
	}
}

static void bench_report(const struct bench *b, struct bench_result *r)
{
	const struct fg_dp *dp = b->dp;

	r->tpmd = b->tpmd_before > 0 && b->tpmd_after > 0 ?
		  (b->tpmd_before + b->tpmd_after) / 2 :
		  b->tpmd_before > 0 ? b->tpmd_before : b->tpmd_after;
	if (b->json) {
		printf("{\"bench\":\"dataplane\",\"mode\":\"%s\",\"flows\":%" PRIu64
		       ",\"workers\":%u,\"new_flows\":%s,\"seconds\":%.2f,\"mpps\":%.3f,"
		       "\"rx_mpps\":%.3f,\"testpmd_io_mpps\":%.3f,"
		       "\"testpmd_io_mpps_before\":%.3f,\"testpmd_io_mpps_after\":%.3f,"
		       "\"ratio_to_testpmd\":%.3f",
		       b->mode_name, b->flows, b->n_workers, b->new_flows ? "true" : "false",
		       r->dt, r->mpps, b->new_flows ? r->gen_mpps : r->rx_mpps, r->tpmd,
		       b->tpmd_before, b->tpmd_after, r->tpmd > 0 ? r->mpps / r->tpmd : 0);
		if (b->new_flows)
			printf(",\"new_flows_mps\":%.0f", r->nfps);
		printf(",\"scrape_ms\":%u,\"scrapes\":%" PRIu64 ",\"scrape_bytes\":%zu",
		       b->scrape_ms, r->scrapes, r->scrape_bytes);
		printf(",\"sched\":\"%s\",\"placed_load\":%" PRIu64 ",\"placed_stale\":%" PRIu64,
		       b->mload ? "maglev-load" : "maglev",
		       fg_lb_svc_counter(dp->lb, b->n_workers, &dp->lb->services[0],
					 FG_SC_placed_load),
		       fg_lb_svc_counter(dp->lb, b->n_workers, &dp->lb->services[0],
					 FG_SC_placed_stale));
		printf(",\"idle_sleep_us\":%u,\"idle_sleeps\":%" PRIu64, b->idle_sleep_us,
		       r->idle_sleeps);
		printf(",\"pkt_size\":\"%s\",\"gbps\":%.2f", imix ? "imix" : "64",
		       r->mpps * (imix ? 353.83 + 20 : 64 + 20) * 8 / 1000);
		printf(",\"rx_total\":%" PRIu64, sum_cc(dp, FG_CC_rx_packets));
		printf(",\"ct_hits\":%" PRIu64 ",\"drops\":%" PRIu64 ",\"ct_capacity\":%u,"
		       "\"hugepages\":%s,\"cpus\":%ld,\"oversubscribed\":%s,"
		       "\"traffic\":\"%s\",\"baseline\":\"%s\"}\n",
		       r->hits, r->drops, dp->ct_capacity, b->huge ? "true" : "false", b->ncpu,
		       b->oversub ? "true" : "false",
		       b->new_flows ? "in-process SYN generator, 64 B, one new tuple per packet"
				    : imix ? "net_pcap infinite_rx replay, one TCP ACK per flow, IMIX 7:4:1 of 64/570/1518 B, flows in order"
				    : "net_pcap infinite_rx replay, one 64 B TCP ACK per flow, flows in order",
		       b->new_flows ? "dpdk-testpmd io net_null0->net_null1, 1 core, same run"
				    : "dpdk-testpmd io net_pcap(same pcap, infinite_rx)->net_null, 1 core, mean of before/after");
	} else {
		printf("dataplane %s flows=%" PRIu64 " workers=%u%s: %.3f Mpps (rx %.3f), "
		       "testpmd io %.3f Mpps (ratio %.2f)", b->mode_name, b->flows,
		       b->n_workers, b->new_flows ? " new-flows" : "", r->mpps, r->rx_mpps,
		       r->tpmd, r->tpmd > 0 ? r->mpps / r->tpmd : 0);
		if (b->new_flows)
			printf(", new flows %.0f /s", r->nfps);
		if (b->idle_sleep_us)
			printf(", idle-sleep %u us: %" PRIu64 " sleeps", b->idle_sleep_us,
			       r->idle_sleeps);
		printf(", drops %" PRIu64 "\n", r->drops);
	}
	for (int d = 1; d < FG_DROP_MAX; d++) {
		uint64_t v = 0;

		for (unsigned int w = 0; w < b->n_workers; w++)
			v += dp->workers[w]->drops[d];
		if (v)
			fprintf(stderr, "  drop %s: %" PRIu64 "\n", fg_drop_names[d], v);
	}
}

int bench_dataplane_main(int argc, char **argv)
{
	static struct bench b;
	struct bench_result res;
	struct gen g;
	int rc;

	memset(&b, 0, sizeof(b));
	rc = bench_args(argc, argv, &b);
	if (rc >= 0)
		return rc;
	if (bench_traffic(&b) < 0)
		return 1;
	if (b.run_tpmd)
		b.tpmd_before = testpmd_io_mpps(b.tp_mem, b.tp_vdevs, b.tp_mbufs, b.seconds);
	if (bench_eal(&b) < 0)
		return 1;
	if (bench_build(&b) < 0) {
		rte_eal_cleanup();
		return 1;
	}
	g = (struct gen){.w = b.dp->workers[0], .pool = b.dp->pool[0], .flows = b.flows,
			 .new_flows = b.new_flows};
	bench_launch(&b, &g);
	rc = bench_measure(&b, &g, &res);
	if (rc == 0) {
		bench_baseline_after(&b);
		bench_report(&b, &res);
	}
	fg_dp_destroy(b.dp);
	rte_eal_cleanup();
	return rc == 0 ? 0 : 1;
}
