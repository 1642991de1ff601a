/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * flowgate-bench dataplane's traffic orders and baselines (issue 17).
 *
 * ## Orders: created in one permutation, measured in another
 * A replay that visits flows in the order they were created walks the
 * conntrack entries (allocated in creation order) front to back, which the
 * hardware prefetcher turns into a stream: a figure no real client mix
 * gives.  The bench therefore creates every flow in index order and
 * measures a pcap whose order is chosen here: `creation` (index order, the
 * old behaviour), `uniform` (every flow once, in a seeded uniformly random
 * permutation) or `zipf[:S]` (packets drawn from a Zipf popularity of
 * exponent S over the flows, the popularity ranks given to the flows in a
 * seeded random permutation).  A stream is one worker's pcap: each worker
 * draws from its own flows with its own generator, seeded from --seed and
 * the stream number, so a run is reproducible.
 *
 * ## Baselines: the same pcap, vdevs and core
 * dpdk-testpmd io (the framework ceiling: RX from the replay, TX to the
 * sink, no packet work) and DPDK's l3fwd in exact-match mode (a stateless
 * 5-tuple hash forwarder: RX, software ptype, bulk rte_hash lookup, MAC
 * rewrite, TX) replay the pcap from net_pcap (infinite_rx) into net_null on
 * the CPU flowgate's worker 0 uses.  A baseline that does not run is an
 * error, never a placeholder figure.
 *
 * ## Threads
 * Main thread only; the baselines run as child processes, one at a time,
 * before flowgate's EAL starts or after it stopped its workers.
 */
#ifndef FLOWGATE_BENCH_FGB_DP_H
#define FLOWGATE_BENCH_FGB_DP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/** Zipf exponent `zipf` without `:S` means. */
#define FGB_ZIPF_S_DEFAULT 1.1
/** Seed of the orders when --seed is not given. */
#define FGB_SEED_DEFAULT 17
/** A zipf replay holds at least this many packets in all (2^20), so that
 *  a few thousand flows still get a popularity curve, not a handful of
 *  draws per flow. */
#define FGB_ZIPF_MIN_PACKETS (1u << 20)

#define FGB_ORDER_LIST(X)                                                   \
	X(creation, "flows in creation order (index order)")                \
	X(uniform, "every flow once, in a seeded uniformly random permutation") \
	X(zipf, "packets drawn from a Zipf popularity, ranks in a random permutation")

enum fgb_order_kind {
#define FGB_X(n, d) FGB_ORDER_##n,
	FGB_ORDER_LIST(FGB_X)
#undef FGB_X
	FGB_ORDER_MAX
};

/** How the measured pcap visits the flows. */
struct fgb_order {
	enum fgb_order_kind kind;
	double zipf_s;		/**< exponent, > 0 (zipf only) */
	uint64_t seed;
};

/**
 * Parses "creation", "uniform", "zipf" or "zipf:S" into @p o (seed left as
 * it is).  @return 0, or -EINVAL (unknown name, S not a number > 0).
 */
int fgb_order_parse(const char *arg, struct fgb_order *o);

/** The order's name ("uniform"), as --order and the JSON spell it. */
const char *fgb_order_name(enum fgb_order_kind kind);

/**
 * Packets in one of @p n_streams pcaps of @p flows flows each: @p flows
 * for creation and uniform; max(flows, ceil(FGB_ZIPF_MIN_PACKETS /
 * n_streams)) for zipf.
 */
uint64_t fgb_order_len(const struct fgb_order *o, uint64_t flows,
		       unsigned int n_streams);

/**
 * The measured sequence of stream @p stream: @p len flow offsets in
 * [0, @p flows), in a malloc'ed array the caller frees.  *@p seq is NULL
 * for creation (offset k is packet k).  @p flows < 2^32.
 * @return 0, or -ENOMEM.
 */
int fgb_order_seq(const struct fgb_order *o, uint64_t flows, uint64_t len,
		  unsigned int stream, uint32_t **seq);

/**
 * EAL lcore list "--lcores=..." in @p buf for lcores @p first .. @p n - 1,
 * lcore i pinned to the i-th CPU of this process's affinity mask (so that
 * `taskset -c 2-5 flowgate-bench ...` runs on CPUs 2-5).  More lcores than
 * CPUs: they all float over the mask and *@p oversub is set.  The mask is
 * read at the first call, which must come before rte_eal_init (EAL pins
 * the calling thread to lcore 0's CPU).
 * @return the number of CPUs usable.
 */
long fgb_eal_lcores(char *buf, size_t len, unsigned int first, unsigned int n,
		    bool *oversub);

/** What a baseline replays and with which resources. */
struct fgb_base_cfg {
	const char *mem_args;	/**< EAL memory words ("--in-memory") */
	const char *vdevs;	/**< EAL words of port 0 (RX) and port 1 (sink) */
	const char *pcap;	/**< port 0's pcap; NULL: net_null -> net_null */
	uint64_t pcap_packets;	/**< packets in @p pcap */
	unsigned int n_mbufs;	/**< the pcap, held in mbufs, and working set */
	unsigned int mbuf_size;	/**< data room with headroom; 0: DPDK's default */
	double seconds;		/**< measured window */
};

/**
 * dpdk-testpmd io forwarding port 0 -> port 1 on lcore 1 (FG_TESTPMD and
 * FG_TESTPMD_EAL name another binary / add EAL words).  *@p mpps: median
 * of port 0's 1 s Rx-pps samples after the first.
 * @return 0, or -1 with the reason and testpmd's last lines on stderr.
 */
int fgb_testpmd_run(const struct fgb_base_cfg *c, double *mpps);

struct fgb_l3fwd;

/** What the l3fwd run counted (its port counters through telemetry). */
struct fgb_l3fwd_result {
	double mpps;		 /**< packets out of port 1 per second, window */
	uint64_t rules;		 /**< exact-match rules loaded (pcap's flows) */
	uint64_t rx, fwd, missed; /**< whole run: port 0 in, port 1 out,
				   *   port 0 out (l3fwd sends a miss back out
				   *   of the port it came in on) */
};

/**
 * Builds DPDK's l3fwd example (dpdk-doc's /usr/share/dpdk/examples, or
 * $FG_L3FWD_EXAMPLES) in a new directory under $TMPDIR, patched for the
 * bench's vdevs and pcap size, and writes one exact-match rule per distinct
 * 5-tuple of @p c's pcap.  Prints the commands it runs when
 * FG_BENCH_VERBOSE is set.
 * @return 0 and *@p out, or -1 with the reason on stderr.
 */
int fgb_l3fwd_build(const struct fgb_base_cfg *c, struct fgb_l3fwd **out);

/**
 * Runs the built l3fwd (-E, one lcore on the CPU of flowgate's worker 0)
 * on @p c's pcap and vdevs, measures a window of c->seconds after one
 * full pass of the pcap, and stops it.  Fails when a packet missed the
 * exact-match table or did not come out of port 1.
 * @return 0 and *@p r, or -1 with the reason and l3fwd's last lines on
 *   stderr.
 */
int fgb_l3fwd_run(struct fgb_l3fwd *l, const struct fgb_base_cfg *c,
		  struct fgb_l3fwd_result *r);

/** Removes the build directory and frees @p l (NULL is fine). */
void fgb_l3fwd_destroy(struct fgb_l3fwd *l);

#endif /* FLOWGATE_BENCH_FGB_DP_H */
