/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * Test and benchmark companions of the GPU batch path (library
 * fg_gpu_ref, linked by tests/gpu and flowgate-bench only; the daemon does
 * not carry them): the CPU reference the kernel is compared with bit for
 * bit, and a synthetic frame producer.
 */
#ifndef FLOWGATE_FG_GPU_REF_H
#define FLOWGATE_FG_GPU_REF_H

#include "fg_gpu.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * The CPU reference of one frame: fg_pkt_parse + ct_hash_crc +
 * fg_rss_hash + RETA + service match + Maglev, with the same rules as the
 * kernel.  Used by the tests (bit-for-bit comparison) and by the CPU
 * baseline of flowgate-bench gpu.  Thread safety: any thread.
 */
void fg_gpu_ref_one(const uint8_t *frame, uint32_t len,
		    const uint16_t reta[FG_GPU_RETA_SIZE],
		    const struct fg_gpu_service *svcs, uint32_t n_svcs,
		    const uint32_t *tables, struct fg_gpu_result *out);

/* ---- synthetic producer (tests, bench; machines without GPUDirect) --- */

/** fg_gpu_gen_frame() flags. */
#define FG_GPU_GEN_VALID 0x1 /**< only well-formed 64-byte TCP/UDP frames */
#define FG_GPU_GEN_FUZZ  0x2 /**< random headers, truncations, mutations */

/**
 * Writes one synthetic Ethernet frame into @p buf.  FG_GPU_GEN_VALID: a
 * 64-byte IPv4 TCP/UDP frame (one in eight IPv6, 78 bytes), destination a
 * service VIP:port in 3 of 4 cases.  FG_GPU_GEN_FUZZ: every header the
 * parser knows (VLAN/QinQ, IPv4 options and fragments, IPv6 extension
 * chains, ICMP errors with embedded flows, ND, ARP, random ethertypes),
 * with random field values, random truncation and byte mutations; frames
 * up to @p room bytes (long IPv6 chains cross the kernel's 128-byte window).
 * Deterministic for a given *rng state.  Thread safety: any thread.
 * @param rng   xorshift state (non-zero), advanced.
 * @param room  bytes available at @p buf (>= 128).
 * @return frame length (0..room).
 */
uint32_t fg_gpu_gen_frame(uint64_t *rng, uint8_t *buf, uint32_t room,
			  const struct fg_gpu_service *svcs, uint32_t n_svcs,
			  unsigned int flags);

#ifdef __cplusplus
}
#endif
#endif /* FLOWGATE_FG_GPU_REF_H */
