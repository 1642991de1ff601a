/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * flowgate-bench dataplane: the daemon's real worker pipeline
 * (fg_worker_burst + fg_worker_housekeeping, fg_dp library) on one worker
 * core, fed by an in-process generator of 64-byte TCP frames, sending to
 * net_null.  The baseline, measured in the same run on the same vdev kind:
 * dpdk-testpmd io forwarding between two net_null ports on one core.
 *
 *   flowgate-bench dataplane --flows N --mode dsr-ipip|dsr-gue|nat
 *                            [--new-flows] [--seconds S] [--no-testpmd] [--json]
 *
 * The generator's cost (mbuf alloc + writing 64 bytes per packet) is part
 * of the measured time, so `mpps` is a lower bound of the pipeline's rate;
 * testpmd's net_null RX does the same mbuf allocation without the writes.
 *
 * Flows: flow i (0..N-1) has client 10.128.0.0 + i / 40000, source port
 * 1024 + i % 40000 -> VIP 10.0.0.100:80.  A warm-up pass creates every
 * flow, then packets cycle over the flows (ACK, conntrack hits).  With
 * --new-flows every packet is a SYN of a never-seen tuple (a miss, a
 * Maglev pick and an insert; once the table is full, early drop evicts
 * the oldest unassured entry, which is the steady state of a SYN flood).
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_malloc.h>

#include "fg_dp.h"

struct gen {
	struct fg_worker *w;
	struct rte_mempool *pool;
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
		fill(rte_pktmbuf_mtod(m[k], uint8_t *), i, flags);
		m[k]->data_len = m[k]->pkt_len = 64;
		m[k]->port = 0;
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

static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* testpmd io forwarding net_null0 <-> net_null1 on one forwarding core:
 * returns the median over its 1 s samples of both ports' Tx-pps summed
 * (= packets the core forwards per second), in Mpps. */
static double testpmd_io_mpps(const char *mem_args, double seconds)
{
	char cmd[512];
	double samples[64], cur = 0;
	int ns = 0;
	int ports_seen = 0;
	char line[512];
	FILE *f;

	snprintf(cmd, sizeof(cmd),
		 "timeout -s INT %.0f dpdk-testpmd -l 0,1 --no-pci %s --file-prefix "
		 "fgb-tpmd%d --vdev net_null0 --vdev net_null1 -- --forward-mode=io "
		 "--auto-start --stats-period 1 --nb-cores=1 --rxq=1 --txq=1 "
		 "</dev/null 2>&1", seconds + 3, mem_args, (int)getpid());
	f = popen(cmd, "r");
	if (f == NULL)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		const char *p = strstr(line, "Tx-pps:");

		if (p == NULL)
			continue;
		cur += strtod(p + 7, NULL);
		if (++ports_seen == 2) {
			if (cur > 0 && ns < 64)
				samples[ns++] = cur;
			cur = 0;
			ports_seen = 0;
		}
	}
	pclose(f);
	if (ns == 0)
		return -1;
	qsort(samples, ns, sizeof(samples[0]), cmp_dbl);
	return samples[ns / 2] / 1e6;
}

static int build_cfg(struct fg_config *c, enum fg_fwd_mode mode)
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
	c->n_ports = 1;
	/* 16 local addresses: NAT reply tuples = 16 x 16 backends x 64512 */
	c->ports[0].n_local = 16;
	for (uint32_t i = 0; i < 16; i++) {
		c->ports[0].local[i].family = AF_INET;
		c->ports[0].local[i].v4.s_addr = rte_cpu_to_be_32(0x0a000001 + i);
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
	}
	c->n_neigh = 16;
	return 0;
}

static void usage(void)
{
	fprintf(stderr, "usage: flowgate-bench dataplane --flows N --mode dsr-ipip|"
		"dsr-gue|nat [--new-flows] [--seconds S] [--no-testpmd] [--json]\n");
}

int bench_dataplane_main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"flows", required_argument, NULL, 'f'},
		{"mode", required_argument, NULL, 'm'},
		{"new-flows", no_argument, NULL, 'n'},
		{"seconds", required_argument, NULL, 's'},
		{"no-testpmd", no_argument, NULL, 'T'},
		{"json", no_argument, NULL, 'j'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	uint64_t flows = 1000000;
	enum fg_fwd_mode mode = FG_MODE_DSR_IPIP;
	const char *mode_name = "dsr-ipip";
	bool new_flows = false, json = false, run_tpmd = true;
	double seconds = 3, tpmd = -1;
	int opt;

	optind = 1;
	while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (opt) {
		case 'f': flows = strtoull(optarg, NULL, 0); break;
		case 'm':
			mode_name = optarg;
			if (!strcmp(optarg, "dsr-ipip")) mode = FG_MODE_DSR_IPIP;
			else if (!strcmp(optarg, "dsr-gue")) mode = FG_MODE_DSR_GUE;
			else if (!strcmp(optarg, "nat")) mode = FG_MODE_NAT;
			else { usage(); return 2; }
			break;
		case 'n': new_flows = true; break;
		case 's': seconds = atof(optarg); break;
		case 'T': run_tpmd = false; break;
		case 'j': json = true; break;
		case 'h': usage(); return 0;
		default: usage(); return 2;
		}
	}
	if (flows == 0 || flows > 40000ull * 65536 || seconds <= 0) {
		usage();
		return 2;
	}

	/* hugepages when there are enough free, else plain memory */
	char mem_args[128] = "--no-huge -m 4096";
	FILE *mi = fopen("/proc/meminfo", "r");
	char line[256];
	unsigned long free_hp = 0, hp_kb = 2048;

	while (mi && fgets(line, sizeof(line), mi)) {
		sscanf(line, "HugePages_Free: %lu", &free_hp);
		sscanf(line, "Hugepagesize: %lu", &hp_kb);
	}
	if (mi)
		fclose(mi);
	if (free_hp * hp_kb >= 1536ul * 1024)
		snprintf(mem_args, sizeof(mem_args), "--in-memory");
	if (getenv("FG_BENCH_MEM"))
		snprintf(mem_args, sizeof(mem_args), "%s", getenv("FG_BENCH_MEM"));

	if (run_tpmd)
		tpmd = testpmd_io_mpps(!strcmp(mem_args, "--in-memory") ?
				       "" : "--no-huge -m 1024", seconds);

	char prefix[64], *eal[16];
	int ea = 0;
	char *memdup = strdup(mem_args), *tok, *save = NULL;

	snprintf(prefix, sizeof(prefix), "--file-prefix=fgb-dp%d", (int)getpid());
	eal[ea++] = "flowgate-bench";
	eal[ea++] = "-l";
	eal[ea++] = "0,1";
	eal[ea++] = "--no-pci";
	eal[ea++] = "--vdev=net_null0";
	eal[ea++] = "--log-level=lib.eal:warning";
	for (tok = strtok_r(memdup, " ", &save); tok && ea < 14;
	     tok = strtok_r(NULL, " ", &save))
		eal[ea++] = tok;
	if (strcmp(mem_args, "--in-memory") != 0)
		eal[ea++] = prefix;
	if (rte_eal_init(ea, eal) < 0) {
		fprintf(stderr, "flowgate-bench: EAL init failed: %s\n",
			rte_strerror(rte_errno));
		return 1;
	}

	struct fg_dp *dp = rte_zmalloc("fg_dp", sizeof(*dp), RTE_CACHE_LINE_SIZE);
	struct fg_config cfg;
	char err[256];
	int rc;

	if (dp == NULL || build_cfg(&cfg, mode) < 0)
		return 1;
	pthread_mutex_init(&dp->cfg_lock, NULL);
	pthread_mutex_init(&dp->mbox_lock, NULL);
	dp->hz = rte_get_tsc_hz();
	dp->flush_ticks = dp->hz / 10000;
	uint64_t need = new_flows ? (1u << 20) :
			(mode == FG_MODE_NAT ? 2 * flows : flows) + flows / 4 + 1024;
	dp->ct_capacity = (uint32_t)RTE_MIN(need, (uint64_t)UINT32_MAX / 2);
	dp->cfg = fg_dp_config_dup(&cfg);
	dp->n_ports = 1;
	dp->ports[0].port_id = 0;
	dp->ports[0].cfg = cfg.ports[0];
	for (uint32_t i = 0; i < cfg.ports[0].n_local; i++)
		dp->locals[dp->n_locals++] = cfg.ports[0].local[i];

	unsigned int lcore = rte_get_next_lcore(-1, 1, 0);

	if (lcore >= RTE_MAX_LCORE) {
		fprintf(stderr, "flowgate-bench: needs 2 lcores\n");
		return 1;
	}
	rc = fg_worker_create(dp, 0, lcore, &dp->workers[0]);
	if (rc < 0) {
		fprintf(stderr, "flowgate-bench: worker: %s (conntrack %u entries)\n",
			strerror(-rc), dp->ct_capacity);
		return 1;
	}
	dp->n_workers = 1;
	dp->qsbr = rte_zmalloc("fg_qsbr", rte_rcu_qsbr_get_memsize(1),
			       RTE_CACHE_LINE_SIZE);
	rte_rcu_qsbr_init(dp->qsbr, 1);
	dp->learn_ring = rte_ring_create_elem("fg_learn", sizeof(struct fg_neigh_learn),
					      1024, 0, RING_F_SC_DEQ);
	if (fg_port_setup(dp, 0, 16383) < 0)
		return 1;
	dp->neigh = fg_neigh_table_build(dp->cfg, NULL, NULL, 0);
	rc = fg_dp_apply_config(dp, &cfg, err, sizeof(err));
	if (rc < 0) {
		fprintf(stderr, "flowgate-bench: config: %s\n", err);
		return 1;
	}

	struct gen g = {.w = dp->workers[0], .pool = dp->pool[0], .flows = flows,
			.new_flows = new_flows};
	struct fg_worker *w = dp->workers[0];

	rte_eal_remote_launch(gen_main, &g, lcore);
	while (!g.warm)
		rte_delay_us_sleep(1000);

	uint64_t t0 = rte_rdtsc(), tx0 = w->cc[FG_CC_tx_packets];
	uint64_t nf0 = w->cc[FG_CC_new_flows], g0 = g.generated;

	rte_delay_us_sleep((unsigned int)(seconds * 1e6));
	uint64_t t1 = rte_rdtsc(), tx1 = w->cc[FG_CC_tx_packets];
	uint64_t nf1 = w->cc[FG_CC_new_flows], g1 = g.generated;

	g.stop = true;
	rte_eal_mp_wait_lcore();
	double dt = (double)(t1 - t0) / (double)dp->hz;
	double mpps = (double)(tx1 - tx0) / dt / 1e6;
	double gen_mpps = (double)(g1 - g0) / dt / 1e6;
	double nfps = (double)(nf1 - nf0) / dt;
	uint64_t drops = w->cc[FG_CC_drops];

	if (json) {
		printf("{\"bench\":\"dataplane\",\"mode\":\"%s\",\"flows\":%" PRIu64
		       ",\"new_flows\":%s,\"seconds\":%.2f,\"mpps\":%.3f,"
		       "\"offered_mpps\":%.3f,\"testpmd_io_mpps\":%.3f,"
		       "\"testpmd_io_mpps_per_port\":%.3f,\"ratio_to_testpmd\":%.3f",
		       mode_name, flows, new_flows ? "true" : "false", dt, mpps,
		       gen_mpps, tpmd, tpmd / 2, tpmd > 0 ? mpps / tpmd : 0);
		if (new_flows)
			printf(",\"new_flows_mps\":%.0f", nfps);
		printf(",\"drops\":%" PRIu64 ",\"ct_capacity\":%u,\"workers\":1,"
		       "\"generator\":\"in-process, 64 B TCP, cost included\","
		       "\"baseline\":\"dpdk-testpmd io net_null0<->net_null1, 1 core\"}\n",
		       drops, dp->ct_capacity);
	} else {
		printf("dataplane %s flows=%" PRIu64 "%s: %.3f Mpps (offered %.3f), "
		       "testpmd io %.3f Mpps (ratio %.2f)", mode_name, flows,
		       new_flows ? " new-flows" : "", mpps, gen_mpps, tpmd,
		       tpmd > 0 ? mpps / tpmd : 0);
		if (new_flows)
			printf(", new flows %.0f /s", nfps);
		printf(", drops %" PRIu64 "\n", drops);
	}
	for (int r = 1; r < FG_DROP_MAX; r++)
		if (w->drops[r])
			fprintf(stderr, "  drop %s: %" PRIu64 "\n", fg_drop_names[r],
				w->drops[r]);
	rte_eth_dev_stop(0);
	rte_eal_cleanup();
	return 0;
}
