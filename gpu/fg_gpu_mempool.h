/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * mbuf pool whose data buffers live in GPU memory: the layout a
 * GPUDirect-capable NIC DMAs received packets into (DPDK gpudev /
 * l2fwd-nv style).  The mbuf headers stay in host memory (DPDK heap);
 * buf_addr points into one cudaMalloc'd area that is registered with DPDK
 * as external memory (rte_extmem_register) and DMA-mapped for every ethdev
 * that supports it (rte_dev_dma_map; virtual devices do not, and are
 * counted as unmapped).  The CPU never dereferences the data: parse and
 * hash happen on the GPU (fg_gpu_burst_submit with FG_GPU_MEM_DEVICE and
 * descriptors {rte_pktmbuf_mtod(m), m->data_len}).  Without such a NIC, a
 * producer fills the buffers (fg_gpu_mempool_fill: host copy).
 */
#ifndef FLOWGATE_FG_GPU_MEMPOOL_H
#define FLOWGATE_FG_GPU_MEMPOOL_H

#include <stdint.h>

#include <rte_mbuf.h>

#include "fg_gpu.h"

#ifdef __cplusplus
extern "C" {
#endif

/** GPU page size used for the registration (64 KiB, as gpudev). */
#define FG_GPU_PAGE_SIZE (64u * 1024u)

struct fg_gpu_mempool;

/**
 * Creates the pool: cudaMalloc of n x elt bytes (elt = data_room rounded
 * up to 64, the area rounded to FG_GPU_PAGE_SIZE), rte_extmem_register,
 * rte_dev_dma_map on every ethdev, rte_pktmbuf_pool_create_extbuf.
 * Call after rte_eal_init, from one thread (DPDK memory hotplug lock).
 * @param dma_mapped  receives the number of ethdevs mapped (may be NULL).
 * @return 0 and *out, or -EINVAL, -ENODEV (no GPU), -ENOMEM, or the
 *   negative rte_errno of the failing DPDK call.
 */
int fg_gpu_mempool_create(const char *name, unsigned int n,
			  uint16_t data_room, int socket_id,
			  struct fg_gpu_mempool **out, unsigned int *dma_mapped);

/** The mbuf pool (rte_pktmbuf_alloc_bulk etc.). */
struct rte_mempool *fg_gpu_mempool_get(const struct fg_gpu_mempool *p);

/** True if @p addr lies in the pool's GPU area. */
int fg_gpu_mempool_owns(const struct fg_gpu_mempool *p, const void *addr);

/**
 * Producer for machines without a GPUDirect NIC: copies host frames into
 * the data buffers of @p m (GPU memory) and sets data_len / pkt_len.
 * @return 0, -EINVAL (frame longer than the tailroom), -EIO (CUDA).
 */
int fg_gpu_mempool_fill(struct rte_mbuf **m, const struct fg_gpu_frame *host,
			unsigned int n);

/**
 * Dataplane entry point (`flowgate --gpu`): runs a burst of received mbufs
 * through the GPU path and writes one result per mbuf (parse result, flow
 * signature, dispatch hash, worker, service, Maglev backend), so the
 * worker skips fg_pkt_parse, ct_*_hash, software RSS and the Maglev pick
 * and goes straight to ct_lookup_bulk / dispatch / rewrite.  The frame of
 * an mbuf is its first segment (rte_pktmbuf_mtod, data_len): headers are
 * always there.  @p mem says where the data is: FG_GPU_MEM_DEVICE for
 * mbufs of a fg_gpu_mempool (GPUDirect NIC), FG_GPU_MEM_HOST for ordinary
 * host mbufs (copied to the GPU).  Results are bit-identical to the CPU
 * path (tests/gpu).
 * Thread safety: as fg_gpu_burst_process (one context per worker).
 * @return n, or a negative errno of fg_gpu_burst_process.
 */
int fg_gpu_mbuf_burst(struct fg_gpu *g, struct rte_mbuf *const *m,
		      uint16_t n, enum fg_gpu_mem mem,
		      struct fg_gpu_result *out);

/** Frees the pool (all mbufs must be back), unmaps, unregisters, frees
 *  the GPU memory.  NULL is a no-op.  No persistent-mode context may be
 *  running (cudaFree synchronizes the device). */
void fg_gpu_mempool_free(struct fg_gpu_mempool *p);

#ifdef __cplusplus
}
#endif
#endif /* FLOWGATE_FG_GPU_MEMPOOL_H */
