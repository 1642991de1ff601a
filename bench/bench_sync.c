/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * flowgate-bench sync: what state sync between nodes (issue 35,
 * dataplane/fg_sync.c) costs a worker, and the bandwidth it sends:
 * new NAT flows a second through one worker (SYNs through
 * fg_worker_burst, housekeeping after each burst, as the worker loop
 * does), with sync on (a sync block, one peer: a UDP socket of this
 * process on 127.0.0.1) against the same dataplane without a sync block,
 * interleaved rounds in the same run (off, on, off, on, ...).  The sync
 * thread's own work (packing, HMAC, sendto) runs between the timed
 * bursts, as it would on another core; its bytes give the bandwidth per
 * million new flows (one peer; each more peer sends the same again).
 *
 *   flowgate-bench sync [--flows N] [--rounds R] [--json]
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>

#include <rte_cycles.h>
#include <rte_dev.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_mbuf.h>
#include <rte_rcu_qsbr.h>

#include "fg_dp.h"
#include "fg_sync.h"
#include "fg_worker_private.h"
#include "fgb_nulldp.h"

#define NB 8        /* backends */
#define FRAME 54    /* Ethernet + IPv4 + TCP, no options */

static struct fg_dp *
dp_make(const char *dev, uint32_t cap, bool sync, const char *key, uint16_t port)
{
	char text[4096];
	size_t n;

	n = (size_t)snprintf(text, sizeof(text),
			     "conntrack { capacity %u; nat_capacity %u; }\n"
			     "port %s { mac 02:00:00:00:00:01; local 10.0.0.2; local 10.0.0.3;"
			     " gateway 10.0.0.254; }\n"
			     "neighbour 10.0.0.254 02:00:00:00:00:fe port %s;\n"
			     "service nat 10.0.0.101:80/tcp {\n mode nat;\n", cap, cap, dev, dev);
	for (int b = 0; b < NB; b++)
		n += (size_t)snprintf(text + n, sizeof(text) - n, " backend 10.1.1.%d;\n", 10 + b);
	n += (size_t)snprintf(text + n, sizeof(text) - n, "}\n");
	if (sync)
		snprintf(text + n, sizeof(text) - n,
			 "sync {\n listen 127.0.0.1:%u node 1;\n peer sink 127.0.0.1:%u node 2;\n"
			 " key %s;\n rate 100000000;\n}\n", port, port + 1, key);
	return fgb_nulldp_make(text, 4095, NULL);
}

static uint16_t
csum16(const uint8_t *p, size_t n, uint32_t sum)
{
	for (size_t i = 0; i + 1 < n; i += 2)
		sum += (uint32_t)(p[i] << 8 | p[i + 1]);
	if (n & 1)
		sum += (uint32_t)p[n - 1] << 8;
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

/* The SYN of flow @p i: client 11.x.y.z:port -> 10.0.0.101:80. */
static void
syn_frame(uint8_t *f, uint32_t i)
{
	static const uint8_t eth[14] = {2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 0xaa, 8, 0};
	uint32_t src = htonl(0x0b000000u + i / 32), dst = htonl(0x0a000065u);
	uint16_t sport = htons((uint16_t)(1024 + i % 32 * 1000 + i / 32 % 1000));
	uint8_t *ip = f + 14, *tcp = f + 34, pseudo[12];
	uint16_t c;

	memset(f, 0, FRAME);
	memcpy(f, eth, 14);
	ip[0] = 0x45;
	ip[3] = 40;
	ip[6] = 0x40;
	ip[8] = 64;
	ip[9] = IPPROTO_TCP;
	memcpy(ip + 12, &src, 4);
	memcpy(ip + 16, &dst, 4);
	c = htons(csum16(ip, 20, 0));
	memcpy(ip + 10, &c, 2);
	memcpy(tcp, &sport, 2);
	tcp[3] = 80;
	tcp[4] = (uint8_t)(i >> 24);
	tcp[5] = (uint8_t)(i >> 16);
	tcp[12] = 5 << 4;
	tcp[13] = 0x02;
	tcp[14] = 0xff;
	memcpy(pseudo, ip + 12, 8);
	pseudo[8] = 0;
	pseudo[9] = IPPROTO_TCP;
	pseudo[10] = 0;
	pseudo[11] = 20;
	uint32_t s = 0;

	for (int k = 0; k < 12; k += 2)
		s += (uint32_t)(pseudo[k] << 8 | pseudo[k + 1]);
	c = htons(csum16(tcp, 20, s));
	memcpy(tcp + 16, &c, 2);
}

struct run {
	double secs;        /* the timed bursts and housekeeping */
	uint64_t flows;     /* new flows the worker counted */
	uint64_t bytes;     /* sync bytes sent (one peer) */
	uint64_t records, lost;
};

/* @p flows SYNs through worker 0 of @p dp, bursts of 32. */
static int
run_flows(struct fg_dp *dp, uint32_t flows, int sink, struct run *out)
{
	struct fg_worker *w = dp->workers[0];
	uint64_t nf0 = w->cc[FG_CC_new_flows];
	struct rte_mbuf *m[FG_BURST];
	struct fg_sync_stats st;
	double t = 0;

	rte_rcu_qsbr_thread_register(dp->qsbr, w->idx);
	rte_rcu_qsbr_thread_online(dp->qsbr, w->idx);
	for (uint32_t i = 0; i < flows; i += FG_BURST) {
		double t0;

		if (rte_pktmbuf_alloc_bulk(dp->pool[0], m, FG_BURST) != 0)
			return -ENOMEM;
		for (int k = 0; k < FG_BURST; k++) {
			syn_frame(rte_pktmbuf_mtod(m[k], uint8_t *), i + (uint32_t)k);
			m[k]->data_len = m[k]->pkt_len = FRAME;
			m[k]->port = 0;
			fg_mbuf_priv(m[k])->parsed = FG_PARSED_NO;
		}
		t0 = fgb_now_s();
		fg_worker_burst(w, m, FG_BURST, rte_rdtsc(), false);
		fg_worker_housekeeping(w, rte_rdtsc());
		t += fgb_now_s() - t0;
		/* the sync thread's share, off the worker's clock */
		if (dp->sync != NULL && (i / FG_BURST) % 64 == 63) {
			char junk[2048];

			fg_sync_tx(dp);
			while (recv(sink, junk, sizeof(junk), MSG_DONTWAIT) > 0)
				;
		}
	}
	fg_worker_housekeeping(w, rte_rdtsc());
	rte_rcu_qsbr_thread_offline(dp->qsbr, w->idx);
	rte_rcu_qsbr_thread_unregister(dp->qsbr, w->idx);
	memset(out, 0, sizeof(*out));
	if (dp->sync != NULL) {
		fg_sync_tx(dp);
		fg_sync_stats_get(dp, &st);
		out->bytes = st.nc[FG_SYNC_NC_sent_bytes];
		out->records = st.nc[FG_SYNC_NC_sent_records];
		out->lost = st.wc[FG_SYNC_WC_queue_full];
	}
	out->secs = t;
	out->flows = w->cc[FG_CC_new_flows] - nf0;
	return 0;
}

static int
usage(int rc)
{
	fprintf(rc ? stderr : stdout,
		"usage: flowgate-bench sync [--flows N] [--rounds R] [--json]\n"
		"  --flows N    new NAT flows a run, 1024..1000000 (default 500000)\n"
		"  --rounds R   sync off / on pairs, interleaved (default 3)\n");
	return rc;
}

static double
median(double *v, int n)
{
	for (int i = 1; i < n; i++)
		for (int j = i; j > 0 && v[j] < v[j - 1]; j--) {
			double x = v[j];

			v[j] = v[j - 1];
			v[j - 1] = x;
		}
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int bench_sync_main(int argc, char **argv);

int
bench_sync_main(int argc, char **argv)
{
	uint32_t flows = 500000;
	int rounds = 3, dev = 0, sink;
	bool json = false;
	double off[16], on[16], bpm = 0;
	char key[64], name[32];
	uint64_t lost = 0, records = 0, made = 0;
	uint16_t port = (uint16_t)(30000 + getpid() % 15000 * 2);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)(port + 1))};
	FILE *kf;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--flows") && i + 1 < argc)
			flows = (uint32_t)strtoul(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
			rounds = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--json"))
			json = true;
		else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
			return usage(0);
		else
			return usage(2);
	}
	if (flows < 1024 || flows > 1000000 || rounds < 1 || rounds > 16)
		return usage(2);
	flows -= flows % FG_BURST;
	if (fgb_nulldp_eal_init("4096", "fgbsync") != 0)
		return 1;
	snprintf(key, sizeof(key), "/dev/shm/flowgate-bench-sync-%d.key", (int)getpid());
	kf = fopen(key, "w");
	if (kf == NULL || fputs("flowgate-bench-sync-shared-key\n", kf) < 0 || fclose(kf))
		return 1;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sink = socket(AF_INET, SOCK_DGRAM, 0);
	if (sink < 0 || bind(sink, (struct sockaddr *)&a, sizeof(a)) != 0) {
		perror("flowgate-bench sync: the peer's socket");
		return 1;
	}
	for (int r = 0; r < 2 * rounds; r++) {
		bool s = r % 2;
		struct fg_dp *dp;
		struct run x;

		snprintf(name, sizeof(name), "net_null%d", dev);
		if (dev > 0 && rte_dev_probe(name) < 0)
			return 1;
		dev++;
		dp = dp_make(name, flows + flows / 4, s, key, port);
		if (dp == NULL || run_flows(dp, flows, sink, &x) < 0) {
			fprintf(stderr, "flowgate-bench sync: dataplane of %u flows failed\n", flows);
			return 1;
		}
		(s ? on : off)[r / 2] = (double)x.flows / x.secs;
		made += x.flows;
		if (s) {
			bpm = (double)x.bytes * 1e6 / (double)x.flows;
			lost += x.lost;
			records += x.records;
		}
		fg_dp_destroy(dp);
	}
	close(sink);
	unlink(key);
	double moff = median(off, rounds), mon = median(on, rounds);

	if (json)
		printf("{\"flows\":%u,\"rounds\":%d,\"new_flows_per_s_off\":%.0f,"
		       "\"new_flows_per_s_on\":%.0f,\"on_vs_off\":%.3f,\"bytes_per_1m_flows\":%.0f,"
		       "\"records\":%" PRIu64 ",\"queue_full\":%" PRIu64 "}\n", flows, rounds, moff,
		       mon, mon / moff, bpm, records, lost);
	else
		printf("sync: %u new NAT flows a run, %d rounds (median), one worker\n"
		       "  sync off: %.0f new flows/s\n  sync on:  %.0f new flows/s: x%.3f\n"
		       "  sent: %.1f MB per 1M new flows (one peer), %" PRIu64 " records, "
		       "%" PRIu64 " not queued\n", flows, rounds, moff, mon, mon / moff,
		       bpm / 1e6, records, lost);
	(void)made;
	rte_eal_cleanup();
	return 0;
}
