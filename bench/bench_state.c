/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * flowgate-bench state: what the restart hand-over (issue 35,
 * dataplane/fg_state.c) costs per flow: the state file's size, the save
 * on a stop and the load on a start, each next to its baseline in the
 * same run:
 *   save  vs walk: a ct_walk over the same shard that only counts (the
 *                  least a save must do: visit every flow);
 *   load  vs fill: the same flows put into a shard with ct_rec_restore
 *                  from records already in memory (the least a load must
 *                  do: insert them), here also how the table is filled.
 * The dataplane is the daemon's (fg_dp_create on net_null, one worker),
 * the save and load its own functions; the file goes to --path (default
 * /dev/shm, as /run/flowgate is a tmpfs).
 *
 *   flowgate-bench state [--flows N] [--nat-pct P] [--path FILE] [--json]
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_dev.h>
#include <rte_eal.h>
#include <rte_errno.h>

#include "ct_rec.h"
#include "fg_dp.h"
#include "fg_rss.h"
#include "fg_lb.h"
#include "fg_state.h"
#include "fgb_nulldp.h"

#define NB 8   /* backends per service */

static struct fg_dp *
dp_make(const char *dev, uint32_t cap, const char *path)
{
	char text[4096];
	size_t n;

	n = (size_t)snprintf(text, sizeof(text),
			     "conntrack { capacity %u; nat_capacity %u; }\n"
			     "port %s { mac 02:00:00:00:00:01; local 10.0.0.2; local 10.0.0.3; }\n"
			     "service dsr 10.0.0.100:80/tcp {\n mode dsr-ipip;\n", cap, cap, dev);
	for (int b = 0; b < NB; b++)
		n += (size_t)snprintf(text + n, sizeof(text) - n, " backend 10.1.0.%d;\n", 10 + b);
	n += (size_t)snprintf(text + n, sizeof(text) - n,
			      "}\nservice nat 10.0.0.101:80/tcp {\n mode nat;\n");
	for (int b = 0; b < NB; b++)
		n += (size_t)snprintf(text + n, sizeof(text) - n, " backend 10.1.1.%d;\n", 10 + b);
	snprintf(text + n, sizeof(text) - n, "}\n");
	return fgb_nulldp_make(text, 2047, path);
}

/* Flow @p i: DSR, or NAT for the first @p nat_pct of every 100. */
static void
flow_rec(const struct fg_dp *dp, uint32_t i, unsigned int nat_pct, struct ct_rec *r,
	 struct ct_rec_ids *ids)
{
	bool nat = i % 100 < nat_pct;
	uint32_t vip = htonl(nat ? 0x0a000065u : 0x0a000064u);
	uint32_t be = htonl((nat ? 0x0a01010au : 0x0a01000au) + i % NB);
	const struct fg_lb_service *s = fg_lb_service_find(fg_dp_lb(dp), AF_INET, &vip, htons(80),
							   IPPROTO_TCP);

	memset(r, 0, sizeof(*r));
	r->family = CT_V4;
	r->proto = IPPROTO_TCP;
	r->state = CT_ST_ESTABLISHED;
	r->flags = CT_REC_F_ASSURED | CT_REC_F_COUNTERS;
	r->key.k4 = (struct ct_key4){.saddr = htonl(0x0b000000u + i), .daddr = vip,
				     .sport = htons((uint16_t)(1024 + i % 60000)),
				     .dport = htons(80), .proto = IPPROTO_TCP};
	memcpy(r->backend, &be, 4);
	r->backend_port = htons(80);
	r->service_port = htons(80);
	r->idle_ms = i % 1000;
	r->life_ms = 60000;
	r->td = (struct ct_rec_td){.end = i * 7, .win = 502, .wscale = 7, .flags = CT_TD_VALID};
	r->packets = 10;
	r->bytes = 4000;
	ids->service = (uint16_t)s->id;
	for (uint32_t j = 0; j < s->n_backends; j++)
		if (!memcmp(s->backends[j].addr.bytes, &be, 4))
			ids->backend = s->backends[j].id;
	if (nat) {
		/* unique reply tuples: (backend, local, port) */
		uint32_t q = i / NB;

		r->flags |= CT_REC_F_NAT;
		ids->nat_addr = (uint8_t)(q & 1);
		r->reply.k4 = (struct ct_key4){.saddr = be,
			.daddr = htonl(q & 1 ? 0x0a000003u : 0x0a000002u), .sport = htons(80),
			.dport = htons((uint16_t)(1024 + (q >> 1) % 64000)),
			.proto = IPPROTO_TCP};
		r->reply_td = (struct ct_rec_td){.end = i * 13, .win = 500, .wscale = 0x77,
						 .flags = CT_TD_VALID};
	}
}

static int
count_one(const struct ct_flow *f, void *arg)
{
	(*(uint64_t *)arg)++;
	return 0;
}

static int
usage(int rc)
{
	fprintf(rc ? stderr : stdout,
		"usage: flowgate-bench state [--flows N] [--nat-pct P] [--path FILE] [--json]\n"
		"  --flows N     tracked flows, 8..1024000 (default 1000000)\n"
		"  --nat-pct P   of them full NAT, in percent (default 50)\n"
		"  --path FILE   the state file (default /dev/shm/flowgate-bench-PID.state)\n");
	return rc;
}

int bench_state_main(int argc, char **argv);

int
bench_state_main(int argc, char **argv)
{
	uint32_t flows = 1000000;
	unsigned int nat_pct = 50;
	char path[256];
	bool json = false;
	struct fg_dp *a, *b;
	struct stat sb;
	double t0, fill, walk, save, load;
	uint64_t seen = 0, cur = 0, now;

	snprintf(path, sizeof(path), "/dev/shm/flowgate-bench-%d.state", (int)getpid());
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--flows") && i + 1 < argc)
			flows = (uint32_t)strtoul(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--nat-pct") && i + 1 < argc)
			nat_pct = (unsigned int)strtoul(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--path") && i + 1 < argc)
			snprintf(path, sizeof(path), "%s", argv[++i]);
		else if (!strcmp(argv[i], "--json"))
			json = true;
		else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
			return usage(0);
		else
			return usage(2);
	}
	if (flows < 8 || flows > 1024000 || nat_pct > 100)   /* unique NAT tuples */
		return usage(2);
	if (fgb_nulldp_eal_init("6144", "fgbstate") != 0)
		return 1;
	a = dp_make("net_null0", flows, path);
	if (a == NULL) {
		fprintf(stderr, "flowgate-bench state: dataplane of %u flows: no memory\n", flows);
		return 1;
	}
	now = rte_rdtsc();
	t0 = fgb_now_s();
	for (uint32_t i = 0; i < flows; i++) {
		struct ct_rec r;
		struct ct_rec_ids ids = {0};

		flow_rec(a, i, nat_pct, &r, &ids);
		if (ct_rec_restore(fg_dp_worker_ct(a, 0), &r, &ids, now, NULL) < 0) {
			fprintf(stderr, "flowgate-bench state: flow %u not tracked\n", i);
			return 1;
		}
	}
	fill = fgb_now_s() - t0;
	t0 = fgb_now_s();
	while (cur != CT_WALK_DONE)
		ct_walk(fg_dp_worker_ct(a, 0), &cur, 1u << 16, rte_rdtsc(), count_one, &seen);
	walk = fgb_now_s() - t0;
	t0 = fgb_now_s();
	if (fg_dp_state_save(a) < 0 || stat(path, &sb) < 0)
		return 1;
	save = fgb_now_s() - t0;
	fg_dp_destroy(a);
	if (rte_dev_probe("net_null1") < 0 || (b = dp_make("net_null1", flows, path)) == NULL)
		return 1;
	t0 = fgb_now_s();
	fg_dp_state_load(b);
	load = fgb_now_s() - t0;
	if (fg_dp_state_stats(b)->restored != flows) {
		fprintf(stderr, "flowgate-bench state: %" PRIu64 " of %u flows restored\n",
			fg_dp_state_stats(b)->restored, flows);
		return 1;
	}
	double per = 1e6 / flows;

	if (json)
		printf("{\"flows\":%u,\"nat_pct\":%u,\"bytes\":%lld,\"bytes_per_flow\":%.1f,"
		       "\"walk_ms\":%.1f,\"save_ms\":%.1f,\"save_vs_walk\":%.2f,"
		       "\"fill_ms\":%.1f,\"load_ms\":%.1f,\"load_vs_fill\":%.2f}\n", flows,
		       nat_pct, (long long)sb.st_size, (double)sb.st_size / flows, walk * 1e3,
		       save * 1e3, save / walk, fill * 1e3, load * 1e3, load / fill);
	else
		printf("state file: %u flows (%u%% NAT), %lld bytes (%.1f B/flow, %.1f MB per 1M)\n"
		       "save: %.1f ms (%.1f ms per 1M flows), walk baseline %.1f ms: x%.2f\n"
		       "load: %.1f ms (%.1f ms per 1M flows), fill baseline %.1f ms: x%.2f\n",
		       flows, nat_pct, (long long)sb.st_size, (double)sb.st_size / flows,
		       (double)sb.st_size * per / 1e6, save * 1e3, save * 1e3 * per, walk * 1e3,
		       save / walk, load * 1e3, load * 1e3 * per, fill * 1e3, load / fill);
	fg_dp_destroy(b);
	unlink(path);
	rte_eal_cleanup();
	return 0;
}
