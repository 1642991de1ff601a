/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the conntrack-record fuzz targets (fuzz_state.c, fuzz_sync.c)
 * share, written once: the invariant check, their EAL, a conntrack shard
 * to restore records into, and the addresses of a seed record.
 */
#ifndef FLOWGATE_FUZZ_FIXTURE_H
#define FLOWGATE_FUZZ_FIXTURE_H

#include <stdint.h>
#include <stdio.h>
#include <netinet/in.h>

#include <rte_common.h>
#include <rte_eal.h>

#include "ct.h"
#include "ct_rec.h"
#include "../fg_test_eal.h"

#define CHECK(c) do { if (!(c)) { fprintf(stderr, "invariant: %s (%s:%d)\n", \
	#c, __FILE__, __LINE__); __builtin_trap(); } } while (0)

/* EAL of fuzz target @p prog, one lcore, its own file prefix @p prefix<pid>.
 * @return 0 or -1. */
static inline int fuzz_eal_init(const char *prog, const char *prefix)
{
	static char pfx[64];	/* libFuzzer exits through exit(): atexit runs */
	char *eal[] = { (char *)prog, "--no-pci", "--no-huge", "--no-shconf",
			"-m", "128", "--log-level=lib.eal:error", "-l", "0",
			fg_test_eal_prefix(pfx, sizeof(pfx), prefix) };

	if (rte_eal_init(RTE_DIM(eal), eal) < 0)
		return -1;
	fg_test_eal_started();
	return 0;
}

/* A conntrack shard named @p name of @p cap IPv4 and @p cap6 IPv6 flows
 * on a 1 kHz clock; NULL if it cannot be made. */
static inline struct ct_shard *fuzz_shard_new(const char *name, uint32_t cap, uint32_t cap6)
{
	struct ct_config cfg;

	ct_config_defaults(&cfg);
	cfg.name = name;
	cfg.capacity = cap;
	cfg.capacity_v6 = cap6;
	cfg.socket_id = -1;
	cfg.hz = 1000;
	return ct_shard_create(&cfg);
}

/* Seed record @p k's tuple, reply tuple and backend, for its family and
 * protocol (set already): client 10.0.0.(2+k) or fd00::k, port 40000+k,
 * to 10.99.0.1:80 or fd00::1; backend 10.0.0.(11 + k % 3):80, reply to
 * port 1024+k. */
static inline void fuzz_seed_addrs(struct ct_rec *r, unsigned int k)
{
	if (r->family == CT_V4) {
		r->key.k4 = (struct ct_key4){.saddr = htonl(0x0a000002 + k),
			.daddr = htonl(0x0a630001), .sport = htons((uint16_t)(40000 + k)),
			.dport = htons(80), .proto = r->proto};
		r->reply.k4 = (struct ct_key4){.saddr = htonl(0x0a00000b),
			.daddr = htonl(0x0a000001), .sport = htons(80),
			.dport = htons((uint16_t)(1024 + k)), .proto = r->proto};
	} else {
		r->key.k6.saddr[0] = 0xfd;
		r->key.k6.saddr[15] = (uint8_t)k;
		r->key.k6.daddr[0] = 0xfd;
		r->key.k6.daddr[15] = 1;
		r->key.k6.sport = htons((uint16_t)(40000 + k));
		r->key.k6.dport = htons(80);
		r->key.k6.proto = r->proto;
		r->reply.k6 = r->key.k6;
		r->reply.k6.dport = htons((uint16_t)(1024 + k));
	}
	r->backend[0] = 10;
	r->backend[3] = (uint8_t)(11 + k % 3);
	r->backend_port = htons(80);
	r->service_port = htons(80);
}

#endif /* FLOWGATE_FUZZ_FIXTURE_H */
