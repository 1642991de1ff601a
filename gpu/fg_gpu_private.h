/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Private layouts of the GPU batch path, shared by the CUDA sources and the
 * C sources of gpu/ (never included outside gpu/).
 */
#ifndef FLOWGATE_FG_GPU_PRIVATE_H
#define FLOWGATE_FG_GPU_PRIVATE_H

#include <stdint.h>

#include "fg_gpu.h"

#ifdef __CUDACC__
#define FG_HD __host__ __device__ __forceinline__
#else
#define FG_HD static inline
#endif

#ifdef __cplusplus
extern "C" {
#endif

/** Reflected CRC32C (Castagnoli) polynomial, as rte_hash_crc. */
#define FG_GPU_CRC_POLY 0x82F63B78u

/** Slots of the service hash (power of two, >= 4 x FG_GPU_SERVICES_MAX). */
#define FG_GPU_SVC_HASH_SIZE 1024u
#define FG_GPU_SVC_EMPTY 0xFFFFu

/** Bytes of each frame the kernel stages into shared memory. */
#define FG_GPU_WIN 128u
/** Shared-memory stride of one window (+4 B: no bank conflicts when all
 *  threads of a warp read the same offset of their own frame). */
#define FG_GPU_WIN_STRIDE (FG_GPU_WIN + 4u)
/** Threads per block of both kernels. */
#define FG_GPU_THREADS 256u

/** Work item status (persistent mode), as rte_gpu_comm_list's. */
enum fg_gpu_item_status {
	FG_GPU_ITEM_FREE = 0,
	FG_GPU_ITEM_READY = 1,
	FG_GPU_ITEM_DONE = 2,
};

/**
 * One work item of the persistent ring, in mapped pinned host memory.
 * The host writes frames/res/n, then status = READY, then adds the item
 * count to ctrl->doorbell; the owning block learns from the device-memory
 * copy of the doorbell that its item is published, reads the item (status
 * READY as a guard), writes results, fences at system scope, then status =
 * DONE (release).
 */
struct fg_gpu_item {
	uint32_t status;            /* enum fg_gpu_item_status (volatile) */
	uint32_t n;                 /* packets, 1..item_pkts */
	uint64_t frames;            /* = slot_desc + slot * item_pkts (informative) */
	uint64_t res;               /* device-visible address of n results */
	uint64_t seq;               /* burst sequence, for debugging */
	uint64_t t_wake;            /* GPU %globaltimer: block saw it published */
	uint64_t t_done;            /* GPU %globaltimer: just before DONE */
	uint8_t pad[16];
} __attribute__((aligned(64)));

/** Control block of the persistent kernel (mapped pinned host memory). */
struct fg_gpu_ctrl {
	uint32_t stop;              /* host sets 1; block 0 forwards it */
	uint32_t pad0[15];
	uint32_t doorbell;          /* items published so far (host adds k) */
	uint32_t pad1[15];
};

/** Kernel parameters (everything in device-visible memory). */
struct fg_gpu_kparams {
	const struct fg_gpu_frame *frames; /* graph mode: descriptors */
	struct fg_gpu_result *res;         /* graph mode: results */
	uint32_t n;                        /* graph mode: packets */
	uint32_t n_svcs;
	const uint32_t *crc_tab;           /* [4][256] slice-by-4 tables */
	const uint32_t *rss_tab;           /* [2][256] = fg_rss_table */
	const uint16_t *reta;              /* [128] */
	const uint16_t *svc_hash;          /* [FG_GPU_SVC_HASH_SIZE] */
	const struct fg_gpu_service *svcs; /* [n_svcs] */
	const uint32_t *tables;            /* Maglev tables */
	/* persistent mode */
	struct fg_gpu_item *items;         /* ring (mapped host memory) */
	struct fg_gpu_ctrl *ctrl;          /* mapped host memory */
	uint32_t *epoch;                   /* device memory: [0] doorbell copy, [1] stop */
	uint32_t ring_items;               /* multiple of gridDim.x */
	uint32_t zc;                       /* graph: frames/res are mapped host memory */
	uint32_t poll_flavor;              /* persistent: fg_gpu_config::poll_flavor */
	uint32_t done_fence;               /* persistent: fg_gpu_config::done_fence */
	/* persistent: slot s's descriptors at slot_desc + s * item_pkts */
	const struct fg_gpu_frame *slot_desc;
	uint32_t item_pkts;
};

/** Service-hash slot of (family, proto, port, vip); host and device. */
FG_HD uint32_t fg_gpu_svc_hash(uint8_t family, uint8_t proto, uint16_t port,
			       const uint32_t vip[4])
{
	uint32_t h = vip[0] * 0x9E3779B1u;
	h ^= (vip[1] + 0x7F4A7C15u) * 0x85EBCA77u;
	h ^= (vip[2] + 0x165667B1u) * 0xC2B2AE3Du;
	h ^= (vip[3] + 0x27D4EB2Fu) * 0x9E3779B1u;
	h ^= ((uint32_t)port << 16) | ((uint32_t)proto << 8) | family;
	h ^= h >> 15;
	h *= 0x2C1B3C6Du;
	h ^= h >> 12;
	return h & (FG_GPU_SVC_HASH_SIZE - 1);
}

/** Slice-by-4 CRC32C tables (reflected), 4 x 256 entries. */
void fg_gpu_crc_tables(uint32_t tab[4][256]);
/** Toeplitz byte tables of the symmetric key (what the kernel uses). */
void fg_gpu_rss_tables(uint32_t tab[2][256]);

/* Kernel launch helpers (fg_gpu_kernels.cu), C linkage. */
/** Graph-mode kernel entry (for cudaGraphAddKernelNode). */
void *fg_gpu_batch_kernel_fn(void);
/** Persistent kernel entry. */
void *fg_gpu_persistent_kernel_fn(void);
/** Signal ping-pong kernel (fg_gpu_signal_rtt). */
void *fg_gpu_pingpong_kernel_fn(void);
/** Blocks of FG_GPU_THREADS of the persistent kernel that fit per SM. */
int fg_gpu_persistent_occupancy(int *blocks_per_sm);

#ifdef __cplusplus
}
#endif
#endif /* FLOWGATE_FG_GPU_PRIVATE_H */
