/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * flowgate-bench dataplane: the daemon's real worker loop (fg_worker_main:
 * rte_eth_rx_burst -> fg_worker_burst -> buffered TX, with expiry, mailbox
 * and RCU housekeeping) on one worker core per RX port.
 *
 *   flowgate-bench dataplane --flows N --mode dsr-ipip|dsr-gue|nat
 *                            [--workers W] [--new-flows] [--seconds S]
 *                            [--order creation|uniform|zipf[:S]] [--seed N]
 *                            [--no-testpmd] [--no-l3fwd] [--no-baselines]
 *                            [--scrape-ms MS] [--imix]
 *                            [--sched maglev|maglev-load] [--idle-sleep US] [--profile]
 *                            [--json]
 *
 * --profile: every worker times its poll loop's stages with rte_rdtsc
 * (fg_worker_prof: rx, parse, sign, lookup, forward, housekeeping, tx:
 * the driver's TX burst, out of the stage that flushed it) and the
 * JSON gives `profile_cycles_per_pkt`, each stage's cycles over the
 * window's packets (with W workers, their sum over all of them: one
 * worker's cycles per packet), and its `total`.  The marks themselves
 * cost a few cycles a stage of a burst (about 1-2 a packet): interleave
 * runs with and without for the rate, read this for the split.
 *
 * --sched maglev-load: the service places new flows with maglev-load
 * (pkt/fg_place.h) over a published load table in which every backend's
 * signal is fresh, with scores spread so that both candidates are read
 * and a good share of new flows take the second one; there is no health
 * checker in the bench, so the table stays as published.  The hit path
 * does not read it: runs with and without give its cost (issue 12).
 *
 * --idle-sleep US: the workers run with flowgate's --idle-sleep=US (sleep
 * after a run of empty polls, bench/RESULTS.md section 10): interleave runs
 * with and without it to see what it costs under load (`idle_sleeps`
 * counts the sleeps; under a saturating replay it stays 0).
 *
 * --scrape-ms MS: a thread beside the workers renders the Prometheus
 * exposition (fg_metrics_render: the snapshot with every worker's conntrack
 * counters through its mailbox, what each GET /metrics costs) every MS
 * milliseconds during the measured window, so runs with and without it
 * give the scrape's cost to the dataplane (`scrapes` counts them).
 *
 * Traffic (issue 17: created in one order, measured in another): every
 * flow is opened first, in creation (index) order, by the handshake's client
 * packets (SYN, ACK) that each worker generates for its own flows
 * (pcap_worker_main); then net_pcap replays a pcap of 64-byte TCP ACK frames
 * to the mode's VIP from memory (rx_pcap=...,infinite_rx=1) into flowgate,
 * which sends to net_null.  With W workers there are W pcaps of N/W flows
 * each, one per worker as an RSS queue would give.  --order says how a pcap
 * visits its flows (fgb_dp.h):
 *   uniform (default)  every flow once, in a uniformly random permutation
 *                      of its own, independent of creation order;
 *   zipf[:S]           packets drawn from a Zipf popularity of exponent S
 *                      (default 1.1) over the flows, the ranks given to the
 *                      flows in a random permutation; the pcaps hold
 *                      max(N, 2^20) packets in all (max(N/W, 2^20/W) each),
 *                      so a small flow count still gets a popularity curve;
 *   creation           every flow once, in creation order (the order before
 *                      issue 17, whose stream the prefetcher follows).
 * --seed N (default 17) seeds the permutations and draws; worker w's pcap
 * uses its own stream of it.  The window measured afterwards is all
 * conntrack hits on ESTABLISHED flows: a new flow or a drop in it fails the
 * run.  The JSON says `order` (and `zipf_s`, `seed`, `pcap_packets`).
 *
 * Baselines, same vdevs, same pcap (worker 0's), same core (the CPU of
 * flowgate's worker 0), same run; one that does not run fails the bench
 * (exit 1, reason on stderr), --no-testpmd / --no-l3fwd / --no-baselines
 * leave them out (JSON null):
 *   dpdk-testpmd io forwarding net_pcap -> net_null, before and after
 *     flowgate; `testpmd_io_mpps` is their mean (the framework ceiling: RX
 *     from the same replay, TX to the same sink, no packet work);
 *   DPDK 22.11's l3fwd in exact-match mode (-E), built at run time from
 *     dpdk-doc's /usr/share/dpdk/examples in a temp dir, with one rule per
 *     flow of the pcap, before flowgate: `l3fwd_em_mpps`, `ratio_to_l3fwd`
 *     (a stateless 5-tuple forwarder on the same replay; fgb_baseline.c says
 *     how it is patched, built and checked: a miss or a packet not
 *     forwarded fails the run).
 *
 * --new-flows: every packet is a SYN of a never-seen tuple, generated in
 * process (a pcap cannot hold an endless supply of new tuples): a miss, a
 * Maglev pick and an insert per packet; `new_flows_mps` is the rate of
 * flows created.  Once the table is full, early drop evicts the oldest
 * unassured entry, which is the steady state of a SYN flood.  There is no
 * pcap: testpmd's baseline is net_null -> net_null, l3fwd does not run
 * (nothing to replay or match) and `order` is null.
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
#include "fgb_dp.h"

#ifdef FGB_HAVE_CALLGRIND
#include <valgrind/callgrind.h>
/* scripts/cg-profile.sh: callgrind dumps (and restarts) its counters when
 * the window opens and again when it closes: the second part is the window */
#define WINDOW_OPEN() CALLGRIND_DUMP_STATS_AT("warm-up")
#define WINDOW_CLOSE() CALLGRIND_DUMP_STATS_AT("window")
#else
#define WINDOW_OPEN() do {} while (0)
#define WINDOW_CLOSE() do {} while (0)
#endif

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
	}
	fg_worker_burst(g->w, m, FG_BURST, rte_rdtsc(), true);
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
 * Hits: a worker first opens the flows of its pcap as clients do, then
 * replays the pcap's ACKs against ESTABLISHED, assured entries.  Opening a
 * flow takes what conntrack asks of a real one (conntrack/ct.h, "TCP
 * windows"): the client's SYN; for NAT, the backend's SYN-ACK (handed to
 * the reply entries directly: the bench has no backend); the client's ACK;
 * and, since a DSR handshake is only probation, the packets over
 * pickup_ms that assure it (two more ACKs, then one after pickup_ms).
 * (A flow first seen by an ACK is an unassured pickup in DSR and is
 * refused in NAT: issue 9, defect 2.)
 */
#define WARM_ROUNDS 4

struct warm {
	struct fg_worker *w;
	struct rte_mempool *pool;
	uint64_t first, n;
};

/* One packet of each of the worker's flows, in creation order. */
static void warm_round(struct warm *a, uint8_t flags)
{
	struct fg_worker *w = a->w;

	for (uint64_t i = a->first; i < a->first + a->n; i += FG_BURST) {
		struct rte_mbuf *m[FG_BURST];
		uint16_t k = (uint16_t)RTE_MIN((uint64_t)FG_BURST, a->first + a->n - i);

		if (rte_pktmbuf_alloc_bulk(a->pool, m, k) != 0) {
			i -= FG_BURST;   /* TX still holds them: retry */
			fg_worker_housekeeping(w, rte_rdtsc());
			continue;
		}
		for (uint16_t j = 0; j < k; j++) {
			fill(rte_pktmbuf_mtod(m[j], uint8_t *), i + j, flags);
			m[j]->data_len = m[j]->pkt_len = 64;
			m[j]->port = 0;
		}
		fg_worker_burst(w, m, k, rte_rdtsc(), true);
		fg_worker_housekeeping(w, rte_rdtsc());
	}
}

struct warm_nat {
	uint32_t *pos;
	uint8_t *fam;
	uint64_t n, cap;
};

static int warm_nat_collect(const struct ct_flow *f, void *arg)
{
	struct warm_nat *v = arg;

	if (f->has_reply && v->n < v->cap) {
		v->pos[v->n] = f->pos;
		v->fam[v->n++] = f->family;
	}
	return 0;
}

/* The backends' SYN-ACKs of the worker's NAT flows: ISN 0 (the template's
 * ACK acks 1), acking the client's ISN (the template's seq, 1) + 1. */
static void warm_nat_synack(struct warm *a)
{
	struct fg_worker *w = a->w;
	struct warm_nat v = {.cap = a->n};
	uint64_t cursor = 0, now = rte_rdtsc();

	v.pos = malloc(a->n * sizeof(*v.pos));
	v.fam = malloc(a->n);
	if (v.pos == NULL || v.fam == NULL)
		goto out;
	while (cursor != CT_WALK_DONE)
		ct_walk(w->ct, &cursor, 1u << 16, now, warm_nat_collect, &v);
	for (uint64_t i = 0; i < v.n; i++) {
		struct ct_entry *e = ct_entry_at(w->ct, (enum ct_family)v.fam[i], v.pos[i]);
		struct ct_seg g = {.seq = 0, .ack = 2, .win = 0xffff,
				   .flags = CT_TCP_SYN | CT_TCP_ACK,
				   .wscale = CT_SEG_NO_WSCALE};

		if (e != NULL && e->peer != CT_NONE)
			ct_update_seg(w->ct, ct_entry_at(w->ct, (enum ct_family)v.fam[i], e->peer),
				      true, &g, 60, now);
	}
out:
	free(v.pos);
	free(v.fam);
}

static int pcap_worker_main(void *arg)
{
	struct warm *a = arg;
	struct fg_worker *w = a->w;
	struct ct_config cc;
	uint64_t t0;

	ct_config_defaults(&cc);
	rte_rcu_qsbr_thread_register(w->dp->qsbr, w->idx);
	rte_rcu_qsbr_thread_online(w->dp->qsbr, w->idx);
	t0 = rte_rdtsc();
	warm_round(a, CT_TCP_SYN);
	warm_nat_synack(a);
	warm_round(a, CT_TCP_ACK);
	warm_round(a, CT_TCP_ACK);
	while (rte_rdtsc() - t0 < (uint64_t)(cc.pickup_ms + 100) * w->dp->hz / 1000) {
		fg_worker_housekeeping(w, rte_rdtsc());
		rte_delay_us_block(1000);
	}
	warm_round(a, CT_TCP_ACK);
	rte_rcu_qsbr_thread_offline(w->dp->qsbr, w->idx);
	rte_rcu_qsbr_thread_unregister(w->dp->qsbr, w->idx);
	return fg_worker_main(w);
}

static bool imix; /* --imix: IMIX frame sizes instead of 64 B */

/* Simple IMIX (7:4:1 of 64, 570, 1518 bytes on the wire), frames without
 * the 4-byte FCS as pcaps hold them. */
static const uint16_t imix_sizes[12] = {60, 60, 60, 60, 60, 60, 60,
					 566, 566, 566, 566, 1514};
/* Writes @p len frames to a pcap, frame k of flow first + seq[k] (first + k
 * when @p seq is NULL): 60 bytes (64 on the wire with the FCS), or the
 * flow's IMIX size. */
static int write_pcap(const char *path, uint64_t first, const uint32_t *seq, uint64_t n)
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
	for (uint64_t k = 0; k < n; k++) {
		uint64_t i = first + (seq ? seq[k] : k);
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
		rh.usec = (uint32_t)(k % 1000000);
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
static int bench_load_get(void *ctx, uint32_t service_id, uint32_t backend_id,
			  struct fg_health_load *out)
{
	(void)ctx;
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
		"[--order creation|uniform|zipf[:S]] [--seed N] "
		"[--no-testpmd] [--no-l3fwd] [--no-baselines] [--scrape-ms MS] "
		"[--sched maglev|maglev-load] [--idle-sleep US] [--profile] [--json]\n");
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

static void sum_prof(struct fg_dp *dp, uint64_t cyc[FG_ST_MAX])
{
	for (unsigned int st = 0; st < FG_ST_MAX; st++) {
		cyc[st] = 0;
		for (unsigned int i = 0; i < dp->n_workers; i++)
			cyc[st] += __atomic_load_n(&dp->workers[i]->prof_cyc[st],
						   __ATOMIC_RELAXED);
	}
}

static const char *const stage_names[FG_ST_MAX] = {
#define STAGE_NAME(n) #n,
	FG_STAGE_LIST(STAGE_NAME)
#undef STAGE_NAME
};

/* One run's settings and state (bench_dataplane_main's steps share it). */
struct bench {
	uint64_t flows, per_worker, pcap_len;
	enum fg_fwd_mode mode;
	const char *mode_name;
	bool new_flows, json, run_tpmd, run_l3fwd, order_set, huge, oversub, mload;
	bool profile;
	double seconds, tpmd_before, tpmd_after;
	unsigned int n_workers, scrape_ms, idle_sleep_us, n_mbufs, n_ports, tx_port;
	long ncpu;
	struct fgb_order order;
	char mem_args[128], tp_vdevs[256];
	struct fgb_base_cfg base;	/* what the baselines replay */
	struct fgb_l3fwd_result l3fwd;
	char pcaps[FG_MAX_WORKERS][96];
	struct fg_dp *dp;
};

/* What one measurement window saw. */
struct bench_result {
	double dt, mpps, rx_mpps, gen_mpps, nfps, tpmd;
	double prof[FG_ST_MAX];         /* --profile: cycles per packet */
	uint64_t drops, hits, rx_total, scrapes, idle_sleeps, win_new, win_drops;
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
		{"order", required_argument, NULL, 'o'},
		{"seed", required_argument, NULL, 'r'},
		{"no-testpmd", no_argument, NULL, 'T'},
		{"no-l3fwd", no_argument, NULL, 'L'},
		{"no-baselines", no_argument, NULL, 'B'},
		{"imix", no_argument, NULL, 'I'},
		{"json", no_argument, NULL, 'j'},
		{"scrape-ms", required_argument, NULL, 'S'},
		{"sched", required_argument, NULL, 'D'},
		{"idle-sleep", required_argument, NULL, 'i'},
		{"profile", no_argument, NULL, 'P'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	int opt;

	b->flows = 1000000;
	b->mode = FG_MODE_DSR_IPIP;
	b->mode_name = "dsr-ipip";
	b->run_tpmd = b->run_l3fwd = true;
	b->seconds = 3;
	b->n_workers = 1;
	b->order = (struct fgb_order){FGB_ORDER_uniform, FGB_ZIPF_S_DEFAULT, FGB_SEED_DEFAULT};
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
		case 'o':
			b->order_set = true;
			if (fgb_order_parse(optarg, &b->order) < 0) {
				fprintf(stderr, "flowgate-bench dataplane: --order creation, "
					"uniform, zipf or zipf:S (S > 0), not '%s'\n", optarg);
				return 2;
			}
			break;
		case 'r': b->order.seed = strtoull(optarg, NULL, 0); break;
		case 'T': b->run_tpmd = false; break;
		case 'L': b->run_l3fwd = false; break;
		case 'B': b->run_tpmd = b->run_l3fwd = false; break;
		case 'I': imix = true; break;
		case 'j': b->json = true; break;
		case 'S': b->scrape_ms = (unsigned int)atoi(optarg); break;
		case 'D':
			if (!strcmp(optarg, "maglev-load")) b->mload = true;
			else if (strcmp(optarg, "maglev")) { usage(); return 2; }
			break;
		case 'i': b->idle_sleep_us = (unsigned int)atoi(optarg); break;
		case 'P': b->profile = true; break;
		case 'h': usage(); return 0;
		default: usage(); return 2;
		}
	}
	if (b->flows == 0 || b->flows > 40000ull * 65536 || b->seconds <= 0 ||
	    b->n_workers == 0 || b->n_workers > FG_MAX_WORKERS - 1 ||
	    (b->new_flows && b->n_workers != 1) || b->flows < b->n_workers ||
	    b->n_workers + 1 > FG_MAX_PORTS || (b->new_flows && b->order_set)) {
		fprintf(stderr, "flowgate-bench dataplane: --flows 1..2.6e9, --seconds > 0, "
			"--workers 1..%d (1 with --new-flows), no --order with --new-flows\n",
			FG_MAX_WORKERS - 1);
		usage();
		return 2;
	}
	b->per_worker = b->flows / b->n_workers;
	b->n_ports = b->new_flows ? 1 : b->n_workers + 1;
	b->tx_port = b->n_ports - 1;
	/* a generator, not a pcap: nothing for l3fwd to replay or match */
	if (b->new_flows)
		b->run_l3fwd = false;
	return -1;
}

/* Worker @p w's pcap: its flows opened in index order, measured in the
 * order --order asks for. */
static int bench_pcap(struct bench *b, unsigned int w)
{
	uint32_t *seq;
	int rc;

	snprintf(b->pcaps[w], sizeof(b->pcaps[w]), "/tmp/fgb-dp-%d-%u.pcap", (int)getpid(), w);
	rc = fgb_order_seq(&b->order, b->per_worker, b->pcap_len, w, &seq);
	if (rc == 0)
		rc = write_pcap(b->pcaps[w], w * b->per_worker, seq, b->pcap_len);
	free(seq);
	if (rc < 0)
		fprintf(stderr, "flowgate-bench: cannot write %s: %s\n", b->pcaps[w],
			strerror(-rc));
	return rc;
}

static void bench_unlink_pcaps(struct bench *b)
{
	for (unsigned int w = 0; w < b->n_workers; w++)
		if (b->pcaps[w][0])
			unlink(b->pcaps[w]);
}

/* Memory (hugepages when there are enough free, else plain memory) and
 * traffic: one pcap per worker (not with --new-flows), the baselines'
 * devices. */
static int bench_traffic(struct bench *b)
{
	FILE *mi = fopen("/proc/meminfo", "r");
	unsigned long free_hp = 0, hp_kb = 2048;
	char line[256];

	snprintf(b->mem_args, sizeof(b->mem_args), "--no-huge -m 4096 --no-shconf");
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
		b->pcap_len = fgb_order_len(&b->order, b->per_worker, b->n_workers);
		for (unsigned int w = 0; w < b->n_workers; w++)
			if (bench_pcap(b, w) < 0)
				return -EIO;
		/* net_pcap infinite_rx holds the whole pcap in mbufs */
		b->n_mbufs = (unsigned int)(b->n_workers * (b->pcap_len + 8192) + 16384);
	}
	snprintf(b->tp_vdevs, sizeof(b->tp_vdevs),
		 b->new_flows ? "--no-pci --vdev net_null0 --vdev net_null1"
			      : "--no-pci --vdev net_pcap0,rx_pcap=%s,infinite_rx=1 --vdev net_null0,no-rx=1",
		 b->pcaps[0]);
	b->base = (struct fgb_base_cfg){
		.mem_args = b->huge ? "--in-memory" : "--no-huge -m 4096",
		.vdevs = b->tp_vdevs,
		.pcap = b->new_flows ? NULL : b->pcaps[0],
		.pcap_packets = b->pcap_len,
		.n_mbufs = b->new_flows ? 65536 : (unsigned int)(b->pcap_len + 65536),
		/* flowgate's pool: 256 B after the headroom (bench_build) */
		.mbuf_size = imix ? 0 : RTE_PKTMBUF_HEADROOM + 256,
		.seconds = b->seconds,
	};
	return 0;
}

/* l3fwd built (first: a missing dpdk-doc stops the run before anything is
 * measured), testpmd, then l3fwd, before flowgate's EAL starts.
 * @return 0 or -1 (reason printed). */
static int bench_baselines_before(struct bench *b)
{
	struct fgb_l3fwd *l = NULL;
	int rc;

	if (b->run_l3fwd && fgb_l3fwd_build(&b->base, &l) < 0)
		return -1;
	if (b->run_tpmd && fgb_testpmd_run(&b->base, &b->tpmd_before) < 0) {
		fgb_l3fwd_destroy(l);
		return -1;
	}
	rc = b->run_l3fwd ? fgb_l3fwd_run(l, &b->base, &b->l3fwd) : 0;
	fgb_l3fwd_destroy(l);
	return rc;
}

/* EAL leaves its runtime directory (/run/dpdk/fgb-dpPID) behind, and its
 * telemetry socket goes only in an atexit handler: this one, registered
 * before EAL's, runs after it and removes the directory once empty (as the
 * daemon does).  --no-shconf with --no-huge: no memory-backing file in it. */
static char g_rundir[PATH_MAX];

static void bench_rundir_remove(void)
{
	if (g_rundir[0])
		rmdir(g_rundir);
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
	b->ncpu = fgb_eal_lcores(lcores, sizeof(lcores), 0, b->n_workers + 1, &b->oversub);
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
	eal[ea++] = prefix;
	atexit(bench_rundir_remove);
	if (rte_eal_init(ea, eal) < 0) {
		fprintf(stderr, "flowgate-bench: EAL init failed: %s\n",
			rte_strerror(rte_errno));
		return -1;
	}
	snprintf(g_rundir, sizeof(g_rundir), "%s", rte_eal_get_runtime_dir());
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
	/* flows (a NAT flow's reply entry has a region of its own, as large) */
	need = b->new_flows ? (1u << 20) : b->per_worker + b->per_worker / 4 + 1024;
	cfg.ct_capacity = (uint32_t)RTE_MIN(need, (uint64_t)UINT32_MAX / 2);
	if (b->mode == FG_MODE_NAT)
		cfg.ct_nat_capacity = cfg.ct_capacity;   /* every flow NAT */
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

		if (fg_load_table_build(b->dp->lb, bench_load_get, NULL, &lt) < 0)
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

	for (unsigned int w = 0; b->profile && w < b->n_workers; w++) {
		dp->workers[w]->prof_t = rte_rdtsc();
		dp->workers[w]->prof = true;
	}
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
				       __ATOMIC_RELAXED) < WARM_ROUNDS * b->per_worker + b->pcap_len +
							    b->pcap_len / 10 &&
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
	uint64_t rx0 = sum_cc(dp, FG_CC_rx_packets), d0 = sum_cc(dp, FG_CC_drops);
	uint64_t nf0 = sum_cc(dp, FG_CC_new_flows), g0 = g->generated;
	uint64_t p0[FG_ST_MAX], p1[FG_ST_MAX];

	sum_prof(dp, p0);
	WINDOW_OPEN();
	rte_delay_us_sleep((unsigned int)(b->seconds * 1e6));
	WINDOW_CLOSE();
	uint64_t t1 = rte_rdtsc(), tx1 = sum_cc(dp, FG_CC_tx_packets);
	uint64_t rx1 = sum_cc(dp, FG_CC_rx_packets), d1 = sum_cc(dp, FG_CC_drops);
	uint64_t nf1 = sum_cc(dp, FG_CC_new_flows), g1 = g->generated;

	sum_prof(dp, p1);
	for (unsigned int st = 0; st < FG_ST_MAX; st++)
		res->prof[st] = rx1 > rx0 ? (double)(p1[st] - p0[st]) / (double)(rx1 - rx0) : 0;

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
	res->win_new = nf1 - nf0;
	res->win_drops = d1 - d0;
	res->drops = sum_cc(dp, FG_CC_drops);
	res->hits = sum_cc(dp, FG_CC_ct_hits);
	res->rx_total = sum_cc(dp, FG_CC_rx_packets);
	res->idle_sleeps = sum_dc(dp, FG_DC_idle_sleeps);
	res->scrapes = sc.scrapes;
	res->scrape_bytes = sc.bytes;
	/* a replay's window is all hits on established flows: a packet that
	 * opened a flow or was dropped means the figure is not that */
	if (!b->new_flows && (res->win_new || res->win_drops)) {
		fprintf(stderr, "flowgate-bench: the measured window was not all conntrack "
			"hits: %" PRIu64 " new flows, %" PRIu64 " drops\n", res->win_new,
			res->win_drops);
		return -1;
	}
	return 0;
}

/* testpmd again after the run (same devices, same pcap): the mean of both
 * brackets flowgate's window.  @return 0 or -1. */
static int bench_baseline_after(struct bench *b)
{
	for (unsigned int w = 1; w < b->n_workers; w++)
		unlink(b->pcaps[w]);
	return b->run_tpmd ? fgb_testpmd_run(&b->base, &b->tpmd_after) : 0;
}

/* ,"key":v or ,"key":null for a figure that was not measured */
static void json_num(const char *key, bool have, double v)
{
	if (have)
		printf(",\"%s\":%.3f", key, v);
	else
		printf(",\"%s\":null", key);
}

static void bench_report_json(const struct bench *b, const struct bench_result *r)
{
	const struct fg_dp *dp = b->dp;
	const char *order = fgb_order_name(b->order.kind);

	printf("{\"bench\":\"dataplane\",\"mode\":\"%s\",\"flows\":%" PRIu64
	       ",\"workers\":%u,\"new_flows\":%s,\"seconds\":%.2f,\"mpps\":%.3f,"
	       "\"rx_mpps\":%.3f", b->mode_name, b->flows, b->n_workers,
	       b->new_flows ? "true" : "false", r->dt, r->mpps,
	       b->new_flows ? r->gen_mpps : r->rx_mpps);
	json_num("testpmd_io_mpps", b->run_tpmd, r->tpmd);
	json_num("testpmd_io_mpps_before", b->run_tpmd, b->tpmd_before);
	json_num("testpmd_io_mpps_after", b->run_tpmd, b->tpmd_after);
	json_num("ratio_to_testpmd", b->run_tpmd, r->mpps / r->tpmd);
	json_num("l3fwd_em_mpps", b->run_l3fwd, b->l3fwd.mpps);
	json_num("ratio_to_l3fwd", b->run_l3fwd, r->mpps / b->l3fwd.mpps);
	if (b->run_l3fwd)
		printf(",\"l3fwd_em_rules\":%" PRIu64 ",\"l3fwd_em_rx\":%" PRIu64
		       ",\"l3fwd_em_fwd\":%" PRIu64 ",\"l3fwd_em_missed\":%" PRIu64,
		       b->l3fwd.rules, b->l3fwd.rx, b->l3fwd.fwd, b->l3fwd.missed);
	if (b->new_flows) {
		printf(",\"order\":null,\"new_flows_mps\":%.0f", r->nfps);
	} else {
		printf(",\"order\":\"%s\"", order);
		if (b->order.kind == FGB_ORDER_zipf)
			printf(",\"zipf_s\":%.3f", b->order.zipf_s);
		if (b->order.kind != FGB_ORDER_creation)
			printf(",\"seed\":%" PRIu64, b->order.seed);
		printf(",\"pcap_packets\":%" PRIu64 ",\"window_new_flows\":%" PRIu64
		       ",\"window_drops\":%" PRIu64, b->pcap_len, r->win_new, r->win_drops);
	}
	printf(",\"scrape_ms\":%u,\"scrapes\":%" PRIu64 ",\"scrape_bytes\":%zu",
	       b->scrape_ms, r->scrapes, r->scrape_bytes);
	printf(",\"sched\":\"%s\",\"placed_load\":%" PRIu64 ",\"placed_stale\":%" PRIu64,
	       b->mload ? "maglev-load" : "maglev",
	       fg_lb_svc_counter(dp->lb, b->n_workers, &dp->lb->services[0], FG_SC_placed_load),
	       fg_lb_svc_counter(dp->lb, b->n_workers, &dp->lb->services[0], FG_SC_placed_stale));
	printf(",\"idle_sleep_us\":%u,\"idle_sleeps\":%" PRIu64, b->idle_sleep_us,
	       r->idle_sleeps);
	printf(",\"pkt_size\":\"%s\",\"gbps\":%.2f", imix ? "imix" : "64",
	       r->mpps * (imix ? 353.83 + 20 : 64 + 20) * 8 / 1000);
	printf(",\"rx_total\":%" PRIu64, r->rx_total);
	if (b->profile) {
		double tot = 0;

		printf(",\"profile_cycles_per_pkt\":{");
		for (unsigned int st = 0; st < FG_ST_MAX; st++) {
			printf("\"%s\":%.1f,", stage_names[st], r->prof[st]);
			tot += r->prof[st];
		}
		printf("\"total\":%.1f}", tot);
	}
	printf(",\"ct_hits\":%" PRIu64 ",\"drops\":%" PRIu64 ",\"ct_capacity\":%u,"
	       "\"hugepages\":%s,\"cpus\":%ld,\"oversubscribed\":%s,",
	       r->hits, r->drops, dp->ct_capacity, b->huge ? "true" : "false", b->ncpu,
	       b->oversub ? "true" : "false");
	if (b->new_flows)
		printf("\"traffic\":\"in-process SYN generator, 64 B, one new tuple per packet\"");
	else
		printf("\"traffic\":\"net_pcap infinite_rx replay of %" PRIu64 " TCP ACKs%s, %s, "
		       "flows opened in creation order, measured %s\"", b->pcap_len,
		       b->n_workers > 1 ? " per worker" : "", imix ? "IMIX 7:4:1 of 64/570/1518 B" : "64 B",
		       b->order.kind == FGB_ORDER_zipf ? "in Zipf draws" :
		       b->order.kind == FGB_ORDER_uniform ? "each once in a random permutation" :
		       "each once in creation order");
	printf(",\"baseline\":\"%s\"",
	       b->new_flows ? "dpdk-testpmd io net_null0->net_null1, 1 core, same run"
			    : "dpdk-testpmd io net_pcap(same pcap, infinite_rx)->net_null, 1 core, mean of before/after");
	if (b->run_l3fwd)
		printf(",\"l3fwd_baseline\":\"DPDK 22.11 examples/l3fwd -E, one exact-match "
		       "rule per flow of the pcap, net_pcap(same pcap, infinite_rx)->net_null, "
		       "1 core, before flowgate\"");
	printf("}\n");
}

static void bench_report(const struct bench *b, struct bench_result *r)
{
	const struct fg_dp *dp = b->dp;

	r->tpmd = (b->tpmd_before + b->tpmd_after) / 2;
	if (b->json) {
		bench_report_json(b, r);
	} else {
		printf("dataplane %s flows=%" PRIu64 " workers=%u%s%s%s: %.3f Mpps (rx %.3f)",
		       b->mode_name, b->flows, b->n_workers, b->new_flows ? " new-flows" : "",
		       b->new_flows ? "" : " order=", b->new_flows ? "" :
		       fgb_order_name(b->order.kind), r->mpps, r->rx_mpps);
		if (b->run_tpmd)
			printf(", testpmd io %.3f Mpps (ratio %.2f)", r->tpmd, r->mpps / r->tpmd);
		if (b->run_l3fwd)
			printf(", l3fwd em %.3f Mpps (ratio %.2f)", b->l3fwd.mpps,
			       r->mpps / b->l3fwd.mpps);
		if (b->new_flows)
			printf(", new flows %.0f /s", r->nfps);
		if (b->idle_sleep_us)
			printf(", idle-sleep %u us: %" PRIu64 " sleeps", b->idle_sleep_us,
			       r->idle_sleeps);
		printf(", drops %" PRIu64 "\n", r->drops);
		if (b->profile) {
			printf("  cycles per packet:");
			for (unsigned int st = 0; st < FG_ST_MAX; st++)
				printf(" %s %.1f", stage_names[st], r->prof[st]);
			printf("\n");
		}
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
	rc = 1;
	if (bench_traffic(&b) < 0 || bench_baselines_before(&b) < 0 || bench_eal(&b) < 0)
		goto out;
	if (bench_build(&b) < 0) {
		rte_eal_cleanup();
		goto out;
	}
	g = (struct gen){.w = b.dp->workers[0], .pool = b.dp->pool[0], .flows = b.flows,
			 .new_flows = b.new_flows};
	bench_launch(&b, &g);
	if (bench_measure(&b, &g, &res) == 0 && bench_baseline_after(&b) == 0) {
		bench_report(&b, &res);
		rc = 0;
	}
	fg_dp_destroy(b.dp);
	rte_eal_cleanup();
out:
	bench_unlink_pcaps(&b);
	return rc;
}
