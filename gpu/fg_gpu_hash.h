/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Hash cores shared by the CUDA kernel and the host tests (compiled for
 * both): CRC32C slice-by-4 over 4-byte words with ct_hash_crc's seed, and
 * the symmetric Toeplitz byte-table hash.  tests/gpu/test_gpu_host checks
 * these exact functions and the tables fg_gpu_create uploads against
 * ct_hash_crc / fg_rss_hash on every `make test`, GPU or not.
 */
#ifndef FLOWGATE_FG_GPU_HASH_H
#define FLOWGATE_FG_GPU_HASH_H

#include <stdint.h>

#include "fg_gpu_private.h"

#ifdef __cplusplus
extern "C" {
#endif

/** rte_hash_crc(words, 4 * nw, CT_HASH_SEED) with slice-by-4 tables. */
FG_HD uint32_t fg_gpu_crc32c_words(const uint32_t *w, unsigned int nw,
				   const uint32_t (*crc)[256])
{
	uint32_t c = CT_HASH_SEED;

	for (unsigned int i = 0; i < nw; i++) {
		c ^= w[i];
		c = crc[3][c & 0xFF] ^ crc[2][(c >> 8) & 0xFF] ^
		    crc[1][(c >> 16) & 0xFF] ^ crc[0][c >> 24];
	}
	return c;
}

/** Toeplitz hash of the first 4 * nw bytes at w (memory order), through
 *  the byte tables (rss[i & 1][byte i]). */
FG_HD uint32_t fg_gpu_toeplitz_words(const uint32_t *w, unsigned int nw,
				     const uint32_t (*rss)[256])
{
	uint32_t h = 0;

	for (unsigned int i = 0; i < nw; i++) {
		uint32_t v = w[i];

		h ^= rss[0][v & 0xFF] ^ rss[1][(v >> 8) & 0xFF] ^
		     rss[0][(v >> 16) & 0xFF] ^ rss[1][v >> 24];
	}
	return h;
}

#ifdef __cplusplus
}
#endif
#endif /* FLOWGATE_FG_GPU_HASH_H */
