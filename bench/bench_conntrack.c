/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * flowgate-bench conntrack: one core, hugepages, one JSON object.
 *
 * Every figure of the conntrack shard is measured next to plain rte_hash
 * on the same keys, the same signatures, the same table size (key slots =
 * capacity, extendable buckets) and the same burst size, in the same run.
 *
 *   capacity = ceil(flows / fill)
 *   insert_mpps          all `flows` inserts into the empty shard
 *   insert_tail_mpps     the last 2% of those inserts (the marginal rate at
 *                        the target fill, where cuckoo tables slow down)
 *   lookup_mpps          bulk lookups (burst 32) of established flows, random
 *                        order: found and checked alive (the shard's expiry
 *                        check), position returned, as rte_hash returns one
 *   lookup_entry_mpps    the same, then each hit's entry read (backend), as
 *                        the dataplane's update step does
 *   rte_hash_lookup_entry_mpps  the baseline of lookup_entry_mpps: rte_hash
 *                        bulk lookups of the same keys in the same order,
 *                        then each hit's 48-byte entry read from an array
 *                        indexed by the position (the shard's layout before
 *                        issue 17: bucket, key store, entry); lookup_entry_
 *                        ratio: its cycles / the shard's lookup+entry cycles
 *   miss_mpps            bulk lookups of absent keys
 *   delete_mpps          ct_delete of every flow
 *   expire_ns_per_entry  ct_expire reclaiming a table of expired flows,
 *                        per entry reclaimed
 *   walk_ns_per_flow     ct_walk in 4096-slot chunks copying every flow to a
 *                        buffer (what `fgctl flows list` costs the worker);
 *                        baseline rte_hash_iterate_ns_per_flow: the plain
 *                        table iterated, each key copied
 *   bytes_per_flow       heap bytes of the shard / capacity (IPv4)
 *   nat_{fwd,reply}_lookup_entry_mpps  a second shard of `flows` NAT flows
 *                        (forward entries, and reply entries in their own
 *                        region): lookup+entry of the forward keys, and of
 *                        the reply keys (hinted as the dataplane hints
 *                        packets to a local address), each against rte_hash holding both
 *                        directions' keys in one table (as the shard did
 *                        before session 14, and as DPVS's and IPVS's
 *                        connection tables do) on the same keys:
 *                        rte_hash_nat_{fwd,reply}_lookup_entry_mpps,
 *                        nat_{fwd,reply}_ratio
 *   *_ratio              median over repetitions of the paired ratio
 *                        (baseline cycles / shard cycles on the same keys)
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>

#include <rte_common.h>
#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_hash.h>
#include <rte_hash_crc.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_prefetch.h>

#include "conntrack/ct.h"

#ifndef BURST
#define BURST 32
#endif
#define MAX_REPS 15
#define CHUNK 65536

struct ctb_opts {
	uint64_t flows;
	double fill;
	int json;
	int reps;
	int no_huge;
};

static void
ctb_usage(void)
{
	fprintf(stderr,
		"usage: flowgate-bench conntrack [--flows N] [--fill F] [--reps R] [--no-huge] [--json]\n"
		"  --flows N   tracked IPv4 flows (default 1000000)\n"
		"  --fill F    flows / table capacity, 0 < F <= 1 (default 0.95)\n"
		"  --reps R    repetitions; each rate is the median (default 5)\n");
}

/* Distinct, well-spread keys: i -> (saddr, sport) through an odd
 * multiplier (a bijection on 32 bits), fixed VIP as destination. */
static void
ctb_make_key(struct ct_key4 *k, uint64_t i, uint32_t salt)
{
	uint32_t x = (uint32_t)i * 2654435761u + salt;

	memset(k, 0, sizeof(*k));
	k->saddr = x;
	k->daddr = 0x0164640a; /* 10.100.100.1 */
	k->sport = (uint16_t)(1024 + ((i >> 32) & 0x3fff));
	k->dport = 0x5000;
	k->proto = IPPROTO_TCP;
}

static double
ctb_mpps(uint64_t n, uint64_t cycles)
{
	return cycles ? (double)n * (double)rte_get_tsc_hz() / (double)cycles / 1e6 : 0;
}

static int
ctb_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double
ctb_median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), ctb_cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static uint32_t *
ctb_shuffle(uint64_t n)
{
	uint32_t *p = malloc(n * sizeof(*p));
	uint64_t r = 88172645463325252ull;

	if (p == NULL)
		return NULL;
	for (uint64_t i = 0; i < n; i++)
		p[i] = (uint32_t)i;
	for (uint64_t i = n - 1; i > 0; i--) {
		r ^= r << 13, r ^= r >> 7, r ^= r << 17;
		uint64_t j = r % (i + 1);
		uint32_t t = p[i];
		p[i] = p[j];
		p[j] = t;
	}
	return p;
}

/*
 * What one miss costs on this machine at the table's size: dependent loads
 * around a random cycle of the lines of a buffer as large as the shard
 * (the same hugepages), in ns per load.  A lookup of a table beyond the
 * caches waits for two of these (metadata, then slot line) unless other
 * work overlaps them.  -1 when the buffer cannot be had.
 */
static double
ctb_chase_ns(size_t bytes)
{
	uint64_t nl = bytes / RTE_CACHE_LINE_SIZE, steps = 1u << 21;
	uint8_t *b = nl > 1 && nl <= UINT32_MAX ?
		     rte_malloc(NULL, nl * RTE_CACHE_LINE_SIZE, RTE_CACHE_LINE_SIZE) : NULL;
	uint32_t *perm = b != NULL ? ctb_shuffle(nl) : NULL;
	void **p;
	uint64_t t0;

	if (perm == NULL) {
		rte_free(b);
		return -1;
	}
	for (uint64_t i = 0; i < nl; i++)
		*(void **)(b + (uint64_t)perm[i] * RTE_CACHE_LINE_SIZE) =
			b + (uint64_t)perm[(i + 1) % nl] * RTE_CACHE_LINE_SIZE;
	p = (void **)(b + (uint64_t)perm[0] * RTE_CACHE_LINE_SIZE);
	for (uint64_t i = 0; i < steps / 8; i++)    /* warm the TLBs' walk */
		p = *p;
	t0 = rte_rdtsc_precise();
	for (uint64_t i = 0; i < steps; i++)
		p = *p;
	t0 = rte_rdtsc_precise() - t0;
	free(perm);
	rte_free(b);
	/* p is live: the loop cannot be dropped (*p read at the end) */
	return p != NULL ? (double)t0 * 1e9 / (double)rte_get_tsc_hz() / (double)steps : -1;
}

/* One burst's keys and signatures, in the measured order. */
static inline void
ctb_gather(const void **kp, uint32_t *sp, const struct ct_key4 *keys,
	   const uint32_t *sigs, const uint32_t *order)
{
	for (int j = 0; j < BURST; j++) {
		kp[j] = &keys[order[j]];
		sp[j] = sigs[order[j]];
	}
}

/* The lookup+entry baseline over keys [c0, c1) of @p order: rte_hash bulk
 * lookups, then each hit's 48-byte entry read from the array its position
 * indexes (the shard's layout before issue 17).  The entries' sum. */
static uint64_t
ctb_rte_hash_entries(const struct rte_hash *h, const struct ct_entry *rents,
		     const struct ct_key4 *keys, const uint32_t *sigs,
		     const uint32_t *order, uint64_t c0, uint64_t c1)
{
	const void *kp[BURST];
	uint32_t sp[BURST];
	int32_t posv[BURST];
	uint64_t sum = 0;

	for (uint64_t i = c0; i + BURST <= c1; i += BURST) {
		ctb_gather(kp, sp, keys, sigs, order + i);
		rte_hash_lookup_with_hash_bulk(h, kp, sp, BURST, posv);
		for (int j = 0; j < BURST; j++)
			rte_prefetch0(&rents[posv[j]]);
		for (int j = 0; j < BURST; j++)
			sum += rents[posv[j]].backend;
	}
	return sum;
}

/* NAT figures (see the top of this file). */
struct ctb_nat {
	double fwd[MAX_REPS], reply[MAX_REPS], rfwd[MAX_REPS], rreply[MAX_REPS];
	double qfwd[MAX_REPS], qreply[MAX_REPS];
};

/* One pass over the @p n keys of one direction (@p reply) in @p order,
 * the shard and the baseline alternating every CHUNK keys; each hit's
 * entry read.  Adds the cycles of each; -1 when the shard misses a present
 * key.  The keys hinted as the dataplane hints them: replies (to a local
 * address) as replies, forward keys as no replies. */
static int
ctb_nat_pass(struct ct_shard *s, struct rte_hash *h, const struct ct_entry *rents,
	     const struct ct_key4 *keys, const uint32_t *sigs, const uint32_t *order,
	     uint64_t n, bool reply, uint64_t now, uint64_t *cyc_c, uint64_t *cyc_r,
	     uint64_t *sink)
{
	const uint64_t all = UINT64_MAX >> (64 - BURST);
	const uint64_t hint = reply ? all : 0, flow_only = reply ? 0 : all;
	const void *kp[BURST];
	uint32_t sp[BURST], cpos[BURST];
	struct ct_entry *ents[BURST];

	for (uint64_t c0 = 0; c0 + BURST <= n; c0 += CHUNK) {
		uint64_t c1 = RTE_MIN(c0 + CHUNK, n), t0, t1;

		t0 = rte_rdtsc_precise();
		for (uint64_t i = c0; i + BURST <= c1; i += BURST) {
			ctb_gather(kp, sp, keys, sigs, order + i);
			if (ct_lookup_bulk_hint(s, CT_V4, kp, sp, BURST, hint, flow_only, now,
						ents, cpos) != all)
				return -1;
			for (int j = 0; j < BURST; j++)
				*sink += ents[j]->backend;
		}
		t1 = rte_rdtsc_precise();
		*sink += ctb_rte_hash_entries(h, rents, keys, sigs, order, c0, c1);
		*cyc_c += t1 - t0;
		*cyc_r += rte_rdtsc_precise() - t1;
	}
	return 0;
}

/* The NAT shard and its baseline, filled with @p n flows (forward key i,
 * reply key i), then @p reps measured passes of each direction. */
static int
ctb_nat_run(const struct ct_config *base, const struct ct_key4 *keys,
	    const uint32_t *sigs, const struct ct_key4 *rkeys, const uint32_t *rsigs,
	    const uint32_t *order, uint64_t n, int reps, uint64_t now,
	    struct ctb_nat *out, uint64_t *sink)
{
	struct ct_config cfg = *base;
	struct ct_shard *s;
	struct rte_hash *h = NULL;
	struct ct_entry *rents = NULL;
	int rc = -1;

	cfg.name = "bench_nat";
	cfg.capacity_reply = cfg.capacity;
	s = ct_shard_create(&cfg);
	if (s != NULL) {
		struct rte_hash_parameters hp = {
			.name = "bench_nat_plain", .entries = 2 * ct_slots(s, CT_V4),
			.key_len = sizeof(struct ct_key4), .hash_func = rte_hash_crc,
			.hash_func_init_val = 0xF10A6A7E, .socket_id = (int)rte_socket_id(),
			.extra_flag = RTE_HASH_EXTRA_FLAGS_EXT_TABLE,
		};
		h = rte_hash_create(&hp);
		rents = rte_zmalloc(NULL, (2 * (size_t)ct_slots(s, CT_V4) + 1) *
				    sizeof(*rents), 64);
	}
	if (s == NULL || h == NULL || rents == NULL) {
		fprintf(stderr, "conntrack: NAT tables: %s\n", rte_strerror(rte_errno));
		goto out;
	}
	for (uint64_t i = 0; i < n; i++) {
		uint32_t pos;
		struct ct_entry *e = ct_insert(s, CT_V4, &keys[i], sigs[i], IPPROTO_TCP,
					       CT_ST_ESTABLISHED, true, now, &pos, NULL);
		int32_t a = rte_hash_add_key_with_hash(h, &keys[i], sigs[i]);
		int32_t b = rte_hash_add_key_with_hash(h, &rkeys[i], rsigs[i]);

		if (e == NULL || a < 0 || b < 0) {
			fprintf(stderr, "conntrack: NAT insert %" PRIu64 " failed\n", i);
			goto out;
		}
		e->backend = (uint32_t)i;
		if (ct_insert_reply(s, CT_V4, &rkeys[i], rsigs[i], pos, now, NULL,
				    NULL) == NULL) {
			fprintf(stderr, "conntrack: NAT reply insert %" PRIu64 " failed\n", i);
			goto out;
		}
		rents[a].backend = rents[b].backend = (uint32_t)i;
	}
	for (int rep = 0; rep < reps; rep++) {
		uint64_t cf = 0, rf = 0, cr = 0, rr = 0;

		if (ctb_nat_pass(s, h, rents, keys, sigs, order, n, false, now, &cf, &rf,
				 sink) < 0 ||
		    ctb_nat_pass(s, h, rents, rkeys, rsigs, order, n, true, now, &cr, &rr,
				 sink) < 0) {
			fprintf(stderr, "conntrack: NAT lookup missed present keys\n");
			goto out;
		}
		out->fwd[rep] = ctb_mpps(n / BURST * BURST, cf);
		out->rfwd[rep] = ctb_mpps(n / BURST * BURST, rf);
		out->reply[rep] = ctb_mpps(n / BURST * BURST, cr);
		out->rreply[rep] = ctb_mpps(n / BURST * BURST, rr);
		out->qfwd[rep] = (double)rf / (double)cf;
		out->qreply[rep] = (double)rr / (double)cr;
	}
	rc = 0;
out:
	ct_shard_free(s);
	rte_hash_free(h);
	rte_free(rents);
	return rc;
}

int bench_conntrack_main(int argc, char **argv);

struct walk_sink {
	struct ct_flow *buf;
	size_t n;
};

static int walk_copy(const struct ct_flow *f, void *arg)
{
	struct walk_sink *ws = arg;

	ws->buf[ws->n++] = *f;
	return 0;
}

int
bench_conntrack_main(int argc, char **argv)
{
	struct ctb_opts o = { .flows = 1000000, .fill = 0.95, .reps = 5 };
	static const struct option lo[] = {
		{"flows", required_argument, NULL, 'f'},
		{"fill", required_argument, NULL, 'F'},
		{"reps", required_argument, NULL, 'r'},
		{"json", no_argument, NULL, 'j'},
		{"no-huge", no_argument, NULL, 'n'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	int c;

	while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (c) {
		case 'f': o.flows = strtoull(optarg, NULL, 0); break;
		case 'F': o.fill = strtod(optarg, NULL); break;
		case 'r': o.reps = atoi(optarg); break;
		case 'j': o.json = 1; break;
		case 'n': o.no_huge = 1; break;
		case 'h': ctb_usage(); return 0;
		default: ctb_usage(); return 2;
		}
	}
	if (o.flows < 64 || o.flows > 200000000 || !(o.fill > 0 && o.fill <= 1) ||
	    o.reps < 1 || o.reps > MAX_REPS) {
		fprintf(stderr, "conntrack: --flows must be 64..2e8, --fill in (0,1], --reps 1..%d\n",
			MAX_REPS);
		return 2;
	}

	char mem[32];
	uint64_t capacity = (uint64_t)ceil((double)o.flows / o.fill);
	/* shard + baseline, the NAT phase's two, slack, in MiB */
	snprintf(mem, sizeof(mem), "%" PRIu64, capacity * 900 / (1 << 20) + 256);
	char *eal_huge[] = {"flowgate-bench", "--no-pci", "--in-memory", "-l", "0",
			    "--log-level=lib.eal:error", "--no-telemetry"};
	char *eal_nohuge[] = {"flowgate-bench", "--no-pci", "--no-huge", "--no-shconf",
			      "-m", mem, "-l", "0", "--log-level=lib.eal:error",
			      "--no-telemetry"};
	int huge = !o.no_huge;
	if (huge && rte_eal_init(RTE_DIM(eal_huge), eal_huge) < 0) {
		fprintf(stderr, "conntrack: EAL with hugepages failed (%s); run scripts/hugepages.sh or pass --no-huge\n",
			rte_strerror(rte_errno));
		return 1;
	}
	if (!huge && rte_eal_init(RTE_DIM(eal_nohuge), eal_nohuge) < 0) {
		fprintf(stderr, "conntrack: EAL init failed: %s\n", rte_strerror(rte_errno));
		return 1;
	}

	uint64_t n = o.flows;
	struct ct_key4 *keys = rte_malloc(NULL, n * sizeof(*keys), 64);
	struct ct_key4 *absent = rte_malloc(NULL, n * sizeof(*keys), 64);
	uint32_t *sigs = rte_malloc(NULL, n * sizeof(*sigs), 64);
	uint32_t *asigs = rte_malloc(NULL, n * sizeof(*sigs), 64);
	uint32_t *order = ctb_shuffle(n);
	if (!keys || !absent || !sigs || !asigs || !order) {
		fprintf(stderr, "conntrack: out of memory for %" PRIu64 " keys\n", n);
		return 1;
	}
	for (uint64_t i = 0; i < n; i++) {
		ctb_make_key(&keys[i], i, 0x9e3779b9);
		ctb_make_key(&absent[i], i, 0x7f4a7c15);
		absent[i].dport = 0x5100; /* never equal to a present key */
		sigs[i] = ct_hash_crc(&keys[i], sizeof(keys[i]));
		asigs[i] = ct_hash_crc(&absent[i], sizeof(absent[i]));
	}

	/*
	 * The machine is shared and noisy: every rate is the median of
	 * `reps` repetitions, and baseline and shard alternate within each
	 * repetition so a noisy second hits both alike.
	 */
	struct ct_config cfg;
	ct_config_defaults(&cfg);
	cfg.name = "bench";
	cfg.capacity = (uint32_t)capacity;
	cfg.capacity_v6 = 64; /* IPv4 figure: keep the v6 table out of it */
	/* and the NAT reply region (the keys are one direction's, as
	 * rte_hash's): bytes_per_flow is the flows' table */
	cfg.capacity_reply = 8;
	cfg.socket_id = (int)rte_socket_id();
	cfg.hz = rte_get_tsc_hz();
	cfg.expire_budget = 1024;

	uint64_t now = rte_rdtsc();
	uint64_t tail_from = n - RTE_MAX(n / 50, 1ull);
	double r_ins[MAX_REPS], r_rins[MAX_REPS], r_tail[MAX_REPS];
	double r_look[MAX_REPS], r_rlook[MAX_REPS], q_look[MAX_REPS], q_ins[MAX_REPS];
	double r_touch[MAX_REPS], r_rtouch[MAX_REPS], q_touch[MAX_REPS];
	struct rte_hash *h = NULL;
	/* the baseline's entries, indexed by rte_hash position */
	struct ct_entry *rents = rte_zmalloc(NULL, (capacity + 1) * sizeof(*rents), 64);

	if (rents == NULL) {
		fprintf(stderr, "conntrack: no memory for the baseline's entries\n");
		return 1;
	}
	struct ct_shard *s = NULL;
	uint64_t sink = 0;
	const void *kp[BURST];
	uint32_t sp[BURST];
	int32_t posv[BURST];
	struct ct_entry *ents[BURST];
	uint32_t cpos[BURST];

	for (int rep = 0; rep < o.reps; rep++) {
		rte_hash_free(h);
		ct_shard_free(s);
		s = ct_shard_create(&cfg);
		/* the baseline gets the same key slots as the shard (which may
		 * have rounded the capacity up): same table size */
		struct rte_hash_parameters hp = {
			.name = "bench_plain", .entries = s ? ct_slots(s, CT_V4) : 1,
			.key_len = sizeof(struct ct_key4), .hash_func = rte_hash_crc,
			.hash_func_init_val = 0xF10A6A7E, .socket_id = (int)rte_socket_id(),
			.extra_flag = RTE_HASH_EXTRA_FLAGS_EXT_TABLE,
		};
		h = rte_hash_create(&hp);
		if (h == NULL || s == NULL) {
			fprintf(stderr, "conntrack: table create: %s\n", rte_strerror(rte_errno));
			return 1;
		}
		/* inserts, alternating every CHUNK keys; the tail is the last 2%
		 * of the shard's inserts (its marginal rate at the target fill) */
		uint64_t t0, cyc_ri = 0, cyc_ci = 0, cyc_tail = 0;
		for (uint64_t c0 = 0; c0 < n; c0 += CHUNK) {
			uint64_t c1 = RTE_MIN(c0 + CHUNK, n);

			t0 = rte_rdtsc_precise();
			for (uint64_t i = c0; i < c1; i++)
				if (rte_hash_add_key_with_hash(h, &keys[i], sigs[i]) < 0) {
					fprintf(stderr, "conntrack: baseline insert %" PRIu64 " failed\n", i);
					return 1;
				}
			uint64_t t1 = rte_rdtsc_precise(), tt = 0;
			for (uint64_t i = c0; i < c1; i++) {
				int err;
				if (i == tail_from)
					tt = rte_rdtsc_precise();
				struct ct_entry *e = ct_insert(s, CT_V4, &keys[i], sigs[i], IPPROTO_TCP,
							       CT_ST_ESTABLISHED, true, now, NULL, &err);
				if (e == NULL) {
					fprintf(stderr, "conntrack: insert %" PRIu64 " failed: %s\n", i,
						strerror(-err));
					return 1;
				}
				e->backend = (uint32_t)i;
			}
			uint64_t t2 = rte_rdtsc_precise();
			cyc_ri += t1 - t0;
			cyc_ci += t2 - t1;
			if (c1 > tail_from)
				cyc_tail += t2 - (tt ? tt : t1);
		}
		r_rins[rep] = ctb_mpps(n, cyc_ri);
		r_ins[rep] = ctb_mpps(n, cyc_ci);
		r_tail[rep] = ctb_mpps(n - tail_from, cyc_tail);

		/* lookups: baseline and shard alternate every CHUNK keys over the
		 * same random order, so slow phases of a noisy machine hit both */
		uint64_t looked = 0, cyc_r = 0, cyc_c = 0, cyc_t = 0, cyc_o = 0;
		(void)t0;
		for (uint64_t c0 = 0; c0 + BURST <= n; c0 += CHUNK) {
			uint64_t c1 = RTE_MIN(c0 + CHUNK, n);

			t0 = rte_rdtsc_precise();
			for (uint64_t i = c0; i + BURST <= c1; i += BURST) {
				ctb_gather(kp, sp, keys, sigs, order + i);
				rte_hash_lookup_with_hash_bulk(h, kp, sp, BURST, posv);
				for (int j = 0; j < BURST; j++)
					sink += (uint32_t)posv[j];
			}
			uint64_t t1 = rte_rdtsc_precise();
			for (uint64_t i = c0; i + BURST <= c1; i += BURST) {
				ctb_gather(kp, sp, keys, sigs, order + i);
				uint64_t hit = ct_lookup_bulk(s, CT_V4, kp, sp, BURST, now, ents, cpos);
				if (unlikely(hit != (BURST == 64 ? UINT64_MAX : (1ull << BURST) - 1))) {
					fprintf(stderr, "conntrack: lookup missed present keys\n");
					return 1;
				}
				for (int j = 0; j < BURST; j++)
					sink += cpos[j];
				looked += BURST;
			}
			uint64_t t2 = rte_rdtsc_precise();
			/* the same again, reading each hit's entry (backend), as
			 * the dataplane's update step does */
			for (uint64_t i = c0; i + BURST <= c1; i += BURST) {
				ctb_gather(kp, sp, keys, sigs, order + i);
				ct_lookup_bulk(s, CT_V4, kp, sp, BURST, now, ents, cpos);
				for (int j = 0; j < BURST; j++)
					sink += ents[j]->backend;
			}
			uint64_t t3 = rte_rdtsc_precise();
			/* the baseline: rte_hash, then the entry at its position */
			sink += ctb_rte_hash_entries(h, rents, keys, sigs, order, c0, c1);
			cyc_r += t1 - t0;
			cyc_c += t2 - t1;
			cyc_t += t3 - t2;
			cyc_o += rte_rdtsc_precise() - t3;
		}
		r_rtouch[rep] = ctb_mpps(looked, cyc_o);
		q_touch[rep] = (double)cyc_o / (double)cyc_t;
		r_rlook[rep] = ctb_mpps(looked, cyc_r);
		r_look[rep] = ctb_mpps(looked, cyc_c);
		r_touch[rep] = ctb_mpps(looked, cyc_t);
		q_look[rep] = (double)cyc_r / (double)cyc_c;
		q_ins[rep] = (double)cyc_ri / (double)cyc_ci;
	}
	/* baseline of the walk below: rte_hash_iterate over the plain table
	 * of the same keys, copying each key (best of 3) */
	double iter_ms = 0;
	{
		struct ct_key4 *kb = malloc(4096 * sizeof(*kb));

		if (kb == NULL) {
			fprintf(stderr, "conntrack: out of memory\n");
			return 1;
		}
		for (int r = 0; r < 3; r++) {
			uint32_t next = 0, nk = 0;
			const void *k;
			void *d;
			uint64_t tw = rte_rdtsc_precise();

			while (rte_hash_iterate(h, &k, &d, &next) >= 0)
				kb[nk++ & 4095] = *(const struct ct_key4 *)k;
			double ms = (double)(rte_rdtsc_precise() - tw) * 1e3 /
				    (double)rte_get_tsc_hz();
			sink += kb[0].saddr;
			if (r == 0 || ms < iter_ms)
				iter_ms = ms;
		}
		free(kb);
	}
	rte_hash_free(h);

	uint64_t looked = 0;
	uint64_t t0 = rte_rdtsc_precise();
	for (uint64_t i = 0; i + BURST <= n; i += BURST) {
		for (int j = 0; j < BURST; j++) {
			kp[j] = &absent[order[i + j]];
			sp[j] = asigs[order[i + j]];
		}
		sink += ct_lookup_bulk(s, CT_V4, kp, sp, BURST, now, ents, cpos);
		looked += BURST;
	}
	uint64_t ct_miss = rte_rdtsc_precise() - t0;
	uint64_t ct_missed = looked;

	/* walk: what a flow listing costs the owning worker, chunks of 4096
	 * slots copied into a buffer as fgctl flows list does (best of 3) */
	double walk_ms = 0;
	{
		struct ct_flow *wbuf = malloc(4096 * sizeof(*wbuf));

		if (wbuf == NULL) {
			fprintf(stderr, "conntrack: out of memory\n");
			return 1;
		}
		for (int r = 0; r < 3; r++) {
			uint64_t cur = 0, seen = 0, tw = rte_rdtsc_precise();
			struct walk_sink ws = { wbuf, 0 };

			while (cur != CT_WALK_DONE) {
				ws.n = 0;
				seen += ct_walk(s, &cur, 4096, now, walk_copy, &ws);
			}
			double ms = (double)(rte_rdtsc_precise() - tw) * 1e3 /
				    (double)rte_get_tsc_hz();
			if (seen != n) {
				fprintf(stderr, "conntrack: walk saw %" PRIu64 " of %" PRIu64
					" flows\n", seen, n);
				return 1;
			}
			if (r == 0 || ms < walk_ms)
				walk_ms = ms;
		}
		free(wbuf);
	}

	t0 = rte_rdtsc_precise();
	for (uint64_t i = 0; i < n; i++)
		if (ct_delete(s, CT_V4, &keys[order[i]], sigs[order[i]]) != 0) {
			fprintf(stderr, "conntrack: delete failed\n");
			return 1;
		}
	uint64_t ct_del = rte_rdtsc_precise() - t0;

	/* expiry: refill with flows last seen at `now`, then sweep far in
	 * the future; every call is bounded by expire_budget slots */
	for (uint64_t i = 0; i < n; i++)
		ct_insert(s, CT_V4, &keys[i], sigs[i], IPPROTO_TCP,
			  CT_ST_ESTABLISHED, true, now, NULL, NULL);
	/* Advance the clock so each call is owed a full budget of slots
	 * (one pass per second = slots per hz ticks). */
	uint64_t slots = ct_slots(s, CT_V4);
	uint64_t step = rte_get_tsc_hz() * cfg.expire_budget / slots + 1;
	uint64_t future = now + 3600ull * 24 * rte_get_tsc_hz(), expired = 0, calls = 0;
	t0 = rte_rdtsc_precise();
	while (ct_count(s) > 0 && calls < 100000000ull) {
		expired += ct_expire(s, future + calls * step);
		calls++;
	}
	uint64_t ct_exp = rte_rdtsc_precise() - t0;

	double lookup = ctb_median(r_look, o.reps), rlookup = ctb_median(r_rlook, o.reps);
	double ins = ctb_median(r_ins, o.reps), rins = ctb_median(r_rins, o.reps);
	double tail = ctb_median(r_tail, o.reps);
	/* bucket_load: the rte_hash baseline's, as rte_hash sizes its buckets */
	uint64_t p2 = rte_align32pow2((uint32_t)slots);
	double bucket_load = (double)n / (double)(p2 < slots ? 2 * p2 : p2);
	double bytes_per_flow = (double)ct_memory(s) / (double)slots;
	double bytes_per_live = (double)ct_memory(s) / (double)n;
	double chase = ctb_chase_ns(ct_memory(s));
	/* the NAT shard: reply keys are the absent keys (never equal to a
	 * forward key) */
	struct ctb_nat *nat = calloc(1, sizeof(*nat));

	if (nat == NULL || ctb_nat_run(&cfg, keys, sigs, absent, asigs, order, n,
				       o.reps, now, nat, &sink) < 0)
		return 1;

	if (o.json) {
		printf("{\"bench\":\"conntrack\",\"flows\":%" PRIu64 ",\"fill\":%.3f,"
		       "\"capacity\":%" PRIu64 ",\"requested_capacity\":%" PRIu64 ","
		       "\"bucket_load\":%.3f,\"reps\":%d,\"hugepages\":%s,\"burst\":%d,"
		       "\"lookup_mpps\":%.3f,\"lookup_entry_mpps\":%.3f,"
		       "\"miss_mpps\":%.3f,\"insert_mpps\":%.3f,"
		       "\"insert_tail_mpps\":%.3f,\"delete_mpps\":%.3f,"
		       "\"expire_ns_per_entry\":%.2f,\"bytes_per_flow\":%.1f,"
		       "\"bytes_per_live_flow\":%.1f,\"walk_ns_per_flow\":%.2f,"
		       "\"rte_hash_iterate_ns_per_flow\":%.2f,"
		       "\"rte_hash_lookup_mpps\":%.3f,\"rte_hash_insert_mpps\":%.3f,"
		       "\"lookup_ratio\":%.3f,\"insert_ratio\":%.3f,"
		       "\"rte_hash_lookup_entry_mpps\":%.3f,\"lookup_entry_ratio\":%.3f,"
		       "\"miss_latency_ns\":%.1f,"
		       "\"nat_fwd_lookup_entry_mpps\":%.3f,\"nat_reply_lookup_entry_mpps\":%.3f,"
		       "\"rte_hash_nat_fwd_lookup_entry_mpps\":%.3f,"
		       "\"rte_hash_nat_reply_lookup_entry_mpps\":%.3f,"
		       "\"nat_fwd_ratio\":%.3f,\"nat_reply_ratio\":%.3f,"
		       "\"tsc_hz\":%" PRIu64 ",\"sink\":%" PRIu64 "}\n",
		       n, o.fill, slots, capacity, bucket_load, o.reps,
		       huge ? "true" : "false", BURST,
		       lookup, ctb_median(r_touch, o.reps), ctb_mpps(ct_missed, ct_miss), ins,
		       tail, ctb_mpps(n, ct_del),
		       expired ? (double)ct_exp * 1e9 / (double)rte_get_tsc_hz() / (double)expired : 0,
		       bytes_per_flow, bytes_per_live, walk_ms * 1e6 / (double)n,
		       iter_ms * 1e6 / (double)n, rlookup, rins,
		       ctb_median(q_look, o.reps), ctb_median(q_ins, o.reps),
		       ctb_median(r_rtouch, o.reps), ctb_median(q_touch, o.reps),
		       chase, ctb_median(nat->fwd, o.reps), ctb_median(nat->reply, o.reps),
		       ctb_median(nat->rfwd, o.reps), ctb_median(nat->rreply, o.reps),
		       ctb_median(nat->qfwd, o.reps), ctb_median(nat->qreply, o.reps),
		       rte_get_tsc_hz(), sink & 1);
	} else {
		printf("conntrack: %" PRIu64 " flows, capacity %" PRIu64 " (fill %.2f), %s\n",
		       n, capacity, o.fill, huge ? "hugepages" : "no hugepages");
		printf("  lookup  %8.2f Mpps  (rte_hash %8.2f, ratio %.2f)\n", lookup, rlookup,
		       ctb_median(q_look, o.reps));
		printf("  insert  %8.2f Mpps  (rte_hash %8.2f, ratio %.2f); last 2%%: %.2f Mpps\n",
		       ins, rins, ctb_median(q_ins, o.reps), tail);
		printf("  lookup+entry read %8.2f Mpps  (rte_hash + entry array %8.2f, ratio %.2f)\n",
		       ctb_median(r_touch, o.reps), ctb_median(r_rtouch, o.reps),
		       ctb_median(q_touch, o.reps));
		printf("  miss    %8.2f Mpps\n", ctb_mpps(ct_missed, ct_miss));
		printf("  delete  %8.2f Mpps\n", ctb_mpps(n, ct_del));
		printf("  expire  %8.2f ns/entry\n",
		       expired ? (double)ct_exp * 1e9 / (double)rte_get_tsc_hz() / (double)expired : 0);
		printf("  walk    %8.2f ns/flow (flow listing on the owner; "
		       "rte_hash_iterate copying keys %.2f ns/flow)\n",
		       walk_ms * 1e6 / (double)n, iter_ms * 1e6 / (double)n);
		printf("  memory  %8.1f B/flow of capacity, %.1f B/live flow\n",
		       bytes_per_flow, bytes_per_live);
		printf("  a miss  %8.1f ns (dependent loads over a buffer of the table's size)\n",
		       chase);
		printf("  NAT lookup+entry read: forward %8.2f Mpps (rte_hash of both "
		       "directions %8.2f, ratio %.2f), reply %8.2f (%8.2f, ratio %.2f)\n",
		       ctb_median(nat->fwd, o.reps), ctb_median(nat->rfwd, o.reps),
		       ctb_median(nat->qfwd, o.reps), ctb_median(nat->reply, o.reps),
		       ctb_median(nat->rreply, o.reps), ctb_median(nat->qreply, o.reps));
	}
	free(nat);
	ct_shard_free(s);
	rte_free(rents);
	rte_free(keys);
	rte_free(absent);
	rte_free(sigs);
	rte_free(asigs);
	free(order);
	rte_eal_cleanup();
	return 0;
}
