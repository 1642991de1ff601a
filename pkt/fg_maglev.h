/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * Weighted Maglev consistent hashing (Eisenbud et al., NSDI'16).
 *
 * Each backend has a stable 64-bit key: its identity, address and port
 * (fg_maglev_backend_key()), never its id or its position, so a restart or
 * an apply that lists the same backends in another order or under other
 * ids gives the same backend in every slot.  From two hashes of that key
 * come offset = h1 % M and skip = h2 % (M - 1) + 1; the backend's
 * preference list is offset, offset + skip, ... (mod M, M prime, so it is a
 * permutation).  Population goes in rounds over backends in key order;
 * weights are honoured with proportional turns: each round a backend earns
 * its weight as credit and takes one slot per max-weight of credit, so
 * slot counts are proportional to weights (within one slot per backend).
 * Weight-0 backends (drained, down) earn nothing and get no slots.
 *
 * Changing one backend of n moves about 1/n of the slots (plus Maglev's
 * small extra churn); tests check it.  The build is deterministic: same
 * inputs, same table bytes (the GPU test relies on this).
 *
 * Lookups: table[sig % M] with sig = the flow signature (ct_hash_crc of
 * the key).
 */
#ifndef FLOWGATE_FG_MAGLEV_H
#define FLOWGATE_FG_MAGLEV_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Table value when no backend has a positive weight. */
#define FG_MAGLEV_NONE UINT32_MAX
/** Smallest table size used (Katran's default ring). */
#define FG_MAGLEV_MIN_SIZE 65537u
/** Largest supported table size. */
#define FG_MAGLEV_MAX_SIZE 16777259u

/**
 * Table size for @p nbackends: the smallest prime >= max(65537, 100 x n).
 * Thread safety: pure.
 */
uint32_t fg_maglev_size(uint32_t nbackends);

/** true if @p n is prime (trial division; configuration-time helper). */
int fg_maglev_is_prime(uint32_t n);

/**
 * Stable key of a backend from its address bytes (16 bytes; IPv4 in the
 * first 4, rest zero) and port (host order).  Ids are deliberately left
 * out: they are reassigned on start.  Pure.
 */
uint64_t fg_maglev_backend_key(const uint8_t addr[16], uint16_t port);

/**
 * Builds a weighted Maglev table.
 * Thread safety: pure apart from writing @p table; runs off the fast path
 * (O(M log M)-ish: M slot fills plus probing), allocates a scratch array of
 * 2 x n x 4 bytes with malloc.
 * @param weights       n weights (0 = no slots).
 * @param backend_keys  n stable keys (duplicates give identical
 *                      permutations: avoid them).
 * @param n             number of backends (0 allowed: table all NONE).
 * @param M             table size: prime, FG_MAGLEV_MIN_SIZE..MAX.
 *                      (Any prime >= 3 is accepted, for tests.)
 * @param table         M entries: backend index 0..n-1, or FG_MAGLEV_NONE
 *                      everywhere when every weight is 0.  Permuting the
 *                      input arrays permutes the indexes only: the key in
 *                      every slot stays the same.
 * @return 0, -EINVAL (M not prime or < 3, NULL arguments with n > 0,
 *   M > FG_MAGLEV_MAX_SIZE), -ENOMEM.
 */
int fg_maglev_build(const uint32_t *weights, const uint64_t *backend_keys,
		    uint32_t n, uint32_t M, uint32_t *table);

/** Backend index for a flow signature. */
static inline uint32_t fg_maglev_lookup(const uint32_t *table, uint32_t M,
					uint32_t sig)
{
	return table[sig % M];
}

#ifdef __cplusplus
}
#endif
#endif /* FLOWGATE_FG_MAGLEV_H */
