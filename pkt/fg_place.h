/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * Load-aware placement of new flows (`scheduler maglev-load`): Maglev with
 * a second Maglev candidate (power of two choices) chosen by the workers'
 * own load scores.  docs/INFERENCE.md explains the design; in short:
 *
 * - candidate A = maglev[sig % M] (what plain Maglev picks), candidate B =
 *   maglev[fg_place_sig2(sig) % M], an independent hash of the same tuple;
 * - B is taken only when A is saturated and B is not, or when B's score is
 *   lower than A's by more than the margin (hysteresis: near-equal scores
 *   keep Maglev's answer, so a retried SYN or another balancer with nearly
 *   the same signals picks the same worker);
 * - when A and B are both saturated: the least-loaded fresh usable worker
 *   (lowest score, lowest index on ties), else A;
 * - when either candidate's signal is stale or missing, or there is no
 *   load table at all: A, exactly plain Maglev.
 *
 * Deterministic: same table, same scores, same tuple, same answer, on any
 * core of any balancer.  Only new flows call it; conntrack keeps every
 * tracked flow on its backend, whatever the scores do afterwards.  Cost:
 * one more Maglev slot and two load slots read per new flow (the O(n) scan
 * only when both candidates are saturated).
 *
 * Thread safety: pure (reads its arguments).
 */
#ifndef FLOWGATE_FG_PLACE_H
#define FLOWGATE_FG_PLACE_H

#include <stdint.h>

#include "fg_maglev.h"

#ifdef __cplusplus
extern "C" {
#endif

/** fg_load_slot::flags */
#define FG_LOAD_F_FRESH  0x1u  /**< signal fresh (else stale / never scraped) */
#define FG_LOAD_F_SAT    0x2u  /**< score >= the saturation threshold */
#define FG_LOAD_F_USABLE 0x4u  /**< backend takes new flows (weight, drain, health) */

/** One backend's load as placement reads it (index = backend index). */
struct fg_load_slot {
	uint32_t score_milli;
	uint32_t flags;
};

/** How a new flow was placed (counted per service). */
enum fg_place_how {
	FG_PLACE_MAGLEV = 0,   /**< the Maglev candidate, signals fresh */
	FG_PLACE_LOAD,         /**< the second candidate: less loaded, or A saturated */
	FG_PLACE_STALE,        /**< a candidate's signal stale or missing: plain Maglev */
	FG_PLACE_SATURATED,    /**< both saturated: least-loaded worker (or A) */
	FG_PLACE_NONE,         /**< no usable backend */
};

/** The second candidate's hash: murmur3's 32-bit finaliser of @p sig (a
 *  bijection, so distinct tuples keep distinct values, and its low bits
 *  are independent of sig % M). */
static inline uint32_t fg_place_sig2(uint32_t sig)
{
	uint32_t h = sig ^ 0x9e3779b9u;

	h ^= h >> 16;
	h *= 0x85ebca6bu;
	h ^= h >> 13;
	h *= 0xc2b2ae35u;
	h ^= h >> 16;
	return h;
}

/** Least-loaded fresh usable backend of @p load[0..n), or FG_MAGLEV_NONE. */
static inline uint32_t fg_place_least(const struct fg_load_slot *load, uint32_t n)
{
	uint32_t best = FG_MAGLEV_NONE;
	uint32_t bs = 0;

	for (uint32_t i = 0; i < n; i++) {
		uint32_t f = load[i].flags;

		if ((f & (FG_LOAD_F_FRESH | FG_LOAD_F_USABLE)) !=
		    (FG_LOAD_F_FRESH | FG_LOAD_F_USABLE) || (f & FG_LOAD_F_SAT))
			continue;
		if (best == FG_MAGLEV_NONE || load[i].score_milli < bs) {
			best = i;
			bs = load[i].score_milli;
		}
	}
	if (best != FG_MAGLEV_NONE)
		return best;
	/* every fresh usable one is saturated: the least saturated */
	for (uint32_t i = 0; i < n; i++) {
		uint32_t f = load[i].flags;

		if ((f & (FG_LOAD_F_FRESH | FG_LOAD_F_USABLE)) !=
		    (FG_LOAD_F_FRESH | FG_LOAD_F_USABLE))
			continue;
		if (best == FG_MAGLEV_NONE || load[i].score_milli < bs) {
			best = i;
			bs = load[i].score_milli;
		}
	}
	return best;
}

/**
 * Picks the backend index of a new flow.
 * @param maglev  the service's Maglev table (M slots)
 * @param sig     the flow signature (the one plain Maglev uses)
 * @param load    n slots, or NULL when there are no signals (plain Maglev)
 * @param margin  hysteresis in score thousandths
 * @param how     out: which rule decided
 * @return a backend index, or FG_MAGLEV_NONE (no usable backend).
 */
static inline uint32_t fg_place_pick(const uint32_t *maglev, uint32_t M, uint32_t sig,
				     const struct fg_load_slot *load, uint32_t n,
				     uint32_t margin, enum fg_place_how *how)
{
	uint32_t a = maglev[sig % M];

	if (a == FG_MAGLEV_NONE) {
		*how = FG_PLACE_NONE;
		return a;
	}
	if (load == NULL || a >= n) {
		*how = FG_PLACE_STALE;
		return a;
	}
	uint32_t b = maglev[fg_place_sig2(sig) % M];

	if (b >= n || !(load[a].flags & FG_LOAD_F_FRESH) || !(load[b].flags & FG_LOAD_F_FRESH)) {
		*how = FG_PLACE_STALE;
		return a;
	}
	uint32_t sa = load[a].flags & FG_LOAD_F_SAT, sb = load[b].flags & FG_LOAD_F_SAT;

	if (!sa) {
		if (b != a && !sb &&
		    (uint64_t)load[b].score_milli + margin < load[a].score_milli) {
			*how = FG_PLACE_LOAD;
			return b;
		}
		*how = FG_PLACE_MAGLEV;
		return a;
	}
	if (!sb) {
		*how = FG_PLACE_LOAD;
		return b;
	}
	uint32_t l = fg_place_least(load, n);

	*how = FG_PLACE_SATURATED;
	return l == FG_MAGLEV_NONE ? a : l;
}

#ifdef __cplusplus
}
#endif
#endif /* FLOWGATE_FG_PLACE_H */
