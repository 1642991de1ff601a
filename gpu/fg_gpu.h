/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * flowgate GPU batch path: parse + flow signature + dispatch hash + Maglev
 * index for a batch of packets, computed by CUDA kernels.
 *
 * For each frame the kernel produces exactly what the CPU path computes:
 *  - `pkt`     = fg_pkt_parse(frame, len) (same kind, drop reason, offsets,
 *                key with zeroed padding; see pkt/fg_pkt.h);
 *  - `sig`     = ct_hash_crc(&pkt.key, 16 or 48) (CRC32C, seed CT_HASH_SEED);
 *  - `rss`     = fg_rss_hash(&pkt) (symmetric Toeplitz, key 0x6d5a...);
 *  - `worker`  = reta[rss % 128];
 *  - `service` = index of the first service whose (family, proto, VIP,
 *                port) equals the key's destination, else FG_GPU_NO_SERVICE;
 *  - `backend` = maglev[service][sig % M], else FG_GPU_NO_BACKEND.
 * `sig`, `rss` and `worker` are computed for every kind but FG_PK_DROP
 * (ARP / ND / HOST / FRAG_LATER keys hash like the daemon dispatches them);
 * `service` and `backend` only for FG_PK_FLOW and FG_PK_ICMP_ERR (the
 * key's destination is the VIP).  Otherwise sig = rss = worker = 0,
 * service = FG_GPU_NO_SERVICE, backend = FG_GPU_NO_BACKEND, exactly as
 * fg_gpu_ref_one() (the CPU reference, fg_gpu_ref.h) defines.
 *
 * Two launch modes (enum fg_gpu_mode):
 *  - FG_GPU_MODE_GRAPH: each burst is one CUDA Graph replay (descriptor /
 *    frame upload, kernel, result download) on the context's stream; the
 *    graph is captured once and its node parameters updated per burst.
 *  - FG_GPU_MODE_PERSISTENT: one kernel stays resident and polls a ring of
 *    work items in pinned host memory (status FREE -> READY -> DONE, at most
 *    FG_GPU_ITEM_MAX packets per item, in the spirit of rte_gpu_comm_list);
 *    descriptors are read and results written through mapped host memory.
 *
 * Frames live either in host memory (copied into a pinned staging area
 * and uploaded: "host->GPU transfer included") or in GPU memory (a
 * GPUDirect NIC or fg_gpu_mempool's buffers; only descriptors travel).
 *
 * Thread safety: a context is used by one thread at a time (one per worker
 * lcore); distinct contexts are independent.  At most one burst is in
 * flight per context (submit, then wait).
 *
 * Caveat of persistent mode: its kernel never ends while the context
 * lives, so any device-synchronizing CUDA call in the process (cudaFree,
 * cudaFreeHost, cudaDeviceSynchronize, ...) blocks until the context is
 * destroyed.  The library itself uses stream-ordered frees while contexts
 * run; callers allocate GPU memory for frames up front and free it after
 * destroying persistent contexts (destroy those first: fg_gpu_destroy of a
 * graph-mode context frees with cudaFree).
 */
#ifndef FLOWGATE_FG_GPU_H
#define FLOWGATE_FG_GPU_H

#include <stddef.h>
#include <stdint.h>

#include "fg_pkt.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Entries of the dispatch redirection table (worker = reta[rss % 128]). */
#define FG_GPU_RETA_SIZE 128
/** Most packets one persistent-mode work item carries. */
#define FG_GPU_ITEM_MAX 1024
/** Most services the GPU matches against (fg_config's FG_MAX_SERVICES). */
#define FG_GPU_SERVICES_MAX 256
/** Largest max_batch a context accepts. */
#define FG_GPU_BATCH_LIMIT (1u << 20)
/** `service` of a packet that matches no service. */
#define FG_GPU_NO_SERVICE 0xFFFFu
/** `backend` of a packet without a backend. */
#define FG_GPU_NO_BACKEND 0xFFFFFFFFu

/** Launch mode of a context. */
enum fg_gpu_mode {
	FG_GPU_MODE_GRAPH = 0,      /**< one CUDA Graph replay per burst */
	FG_GPU_MODE_PERSISTENT = 1, /**< resident kernel polling a work ring */
};

/** Where the frames of a burst are. */
enum fg_gpu_mem {
	FG_GPU_MEM_HOST = 0,   /**< host virtual addresses: staged and uploaded */
	FG_GPU_MEM_DEVICE = 1, /**< device addresses (GPU memory) */
};

/** One frame of a burst. */
struct fg_gpu_frame {
	uint64_t addr; /**< host or device address of the first byte */
	uint32_t len;  /**< frame length in bytes */
	uint32_t rsvd; /**< must be 0 */
};

/** Per-packet result, 80 bytes, written by the GPU. */
struct fg_gpu_result {
	struct fg_pkt pkt; /**< exactly fg_pkt_parse()'s output */
	uint32_t sig;      /**< ct_hash_crc over the key (16 / 48 bytes) */
	uint32_t rss;      /**< fg_rss_hash() */
	uint32_t backend;  /**< Maglev backend index or FG_GPU_NO_BACKEND */
	uint16_t worker;   /**< reta[rss % 128] */
	uint16_t service;  /**< service index or FG_GPU_NO_SERVICE */
};

/** A service as the GPU matches it. */
struct fg_gpu_service {
	uint8_t family;     /**< CT_V4 / CT_V6 */
	uint8_t proto;      /**< IPPROTO_TCP / IPPROTO_UDP / ... */
	uint16_t port;      /**< destination port, network byte order */
	uint8_t vip[16];    /**< network order; IPv4 in the first 4 bytes */
	uint32_t table_off; /**< first entry of its Maglev table in `tables` */
	uint32_t m;         /**< Maglev table size (prime); 0 = no backend */
};

/** Context configuration; fg_gpu_config_defaults() fills it. */
struct fg_gpu_config {
	int device;              /**< CUDA device ordinal (default 0) */
	enum fg_gpu_mode mode;   /**< default FG_GPU_MODE_GRAPH */
	uint32_t max_batch;      /**< most frames per burst (default 65536) */
	uint32_t stage_bytes;    /**< host-frame staging area (default max_batch * 256) */
	uint32_t item_pkts;      /**< persistent: packets per work item (default 256, <= FG_GPU_ITEM_MAX) */
	uint32_t ring_items;     /**< persistent: work items in the ring (default: enough for max_batch) */
	uint32_t persistent_blocks; /**< persistent: resident blocks (0 = as many as fit) */
	uint32_t wait_timeout_us; /**< fg_gpu_burst_wait timeout (default 1 s) */
	/** graph mode: descriptors and results in mapped pinned host memory,
	 *  read/written by the kernel over PCIe (the graph is one kernel node,
	 *  no memcpy nodes; default 0). */
	uint32_t graph_zero_copy;
	/** persistent: how block 0 polls the host doorbell and blocks poll
	 *  their item status: 0 = ld.acquire.sys (default), 1 = volatile load
	 *  + __threadfence_system() once the value changed. */
	uint32_t poll_flavor;
	/** persistent: how a block publishes its results before DONE:
	 *  0 = every thread that wrote results runs a system-scope fence
	 *  (fence.sc.sys) before the block barrier (default); 1 = the barrier,
	 *  then one system-scope fence + release store by thread 0 (the PTX
	 *  memory model makes the fence cumulative over the stores the barrier
	 *  ordered before it, as cooperative groups' grid sync relies on). */
	uint32_t done_fence;
	uint16_t reta[FG_GPU_RETA_SIZE]; /**< worker per RSS bucket (default round-robin over 1) */
};

struct fg_gpu;

/**
 * Fills @p cfg with the defaults documented in struct fg_gpu_config.
 * Thread safety: any thread.
 */
void fg_gpu_config_defaults(struct fg_gpu_config *cfg);

/**
 * Probes for a usable CUDA device.
 * @param name     receives the device name (may be NULL)
 * @param name_len size of @p name
 * @return number of CUDA devices (>= 1), or -ENODEV when there is no GPU or
 *   no driver (the caller then runs the CPU path; tests exit 77).
 * Thread safety: any thread.
 */
int fg_gpu_probe(char *name, size_t name_len);

/**
 * Creates a context: device buffers, pinned staging/result memory, the
 * stream and the CUDA Graph (graph mode) or the resident kernel and its work
 * ring (persistent mode).
 * @return 0 and *out, or -EINVAL (bad config), -ENODEV (no GPU), -ENOMEM
 *   (host or device allocation failed), -EIO (other CUDA error; logged).
 * Thread safety: any thread; the context then belongs to its caller.
 */
int fg_gpu_create(const struct fg_gpu_config *cfg, struct fg_gpu **out);

/**
 * Stops the resident kernel of a persistent-mode context and waits for it
 * to end (graph mode: nothing to do); later bursts return -EIO.  With
 * several persistent contexts in a process, stop them all before
 * destroying any: destroy frees memory, which waits for every kernel on
 * the device.  @return 0, -EINVAL, -EBUSY (a burst in flight), -ETIMEDOUT.
 * Thread safety: the context's owner.
 */
int fg_gpu_stop(struct fg_gpu *g);

/**
 * Stops the resident kernel (persistent mode: sets the stop flag and waits
 * for it), frees everything.  NULL is a no-op.  No burst may be in flight.
 */
void fg_gpu_destroy(struct fg_gpu *g);

/**
 * Uploads the service table and the concatenated Maglev tables (built with
 * fg_maglev_build).  Services are matched in array order.  Call between
 * bursts (not while one is in flight).
 * @param tables   n_entries backend indexes; service i owns
 *                 tables[svcs[i].table_off .. + svcs[i].m)
 * @return 0, -EINVAL (n > FG_GPU_SERVICES_MAX, a table out of range,
 *   family not CT_V4/CT_V6), -ENOMEM, -EIO.
 */
int fg_gpu_services_set(struct fg_gpu *g, const struct fg_gpu_service *svcs,
			uint32_t n, const uint32_t *tables, uint32_t n_entries);

/**
 * Starts processing a burst.  Host frames are copied into the pinned
 * staging area before this returns (the caller may reuse its buffers);
 * device frames must stay valid until fg_gpu_burst_wait returns.
 * @param n  1..max_batch
 * @return number of frames accepted (== n, or fewer when host frames do not
 *   fit into stage_bytes: the rest must be resubmitted), -EINVAL (n out of
 *   range, NULL frames, rsvd != 0), -EBUSY (a burst is already in flight),
 *   -E2BIG (the first host frame alone exceeds stage_bytes), -EIO (CUDA
 *   error, or a persistent kernel that timed out earlier: destroy the
 *   context and fall back to the CPU path).
 */
int fg_gpu_burst_submit(struct fg_gpu *g, const struct fg_gpu_frame *frames,
			uint32_t n, enum fg_gpu_mem mem);

/**
 * Waits for the burst in flight and returns its results, one per accepted
 * frame in submit order, in pinned host memory owned by the context (valid
 * until the next submit).
 * @return number of results, -EAGAIN (nothing in flight), -ETIMEDOUT
 *   (persistent kernel did not answer within wait_timeout_us: the context
 *   must be destroyed), -EIO (CUDA error).
 */
int fg_gpu_burst_wait(struct fg_gpu *g, const struct fg_gpu_result **res);

/**
 * submit + wait for a whole burst (resubmits what did not fit), copying the
 * results to @p out (n entries).  @return n or a negative errno as above.
 * This is the dataplane entry point: a worker started with `--gpu` calls it
 * on each RX burst and uses out[i].pkt / sig / worker / backend in place of
 * fg_pkt_parse + ct hash + software RSS + Maglev pick.
 */
int fg_gpu_burst_process(struct fg_gpu *g, const struct fg_gpu_frame *frames,
			 uint32_t n, enum fg_gpu_mem mem,
			 struct fg_gpu_result *out);

/** Name of a launch mode ("graph", "persistent"). */
const char *fg_gpu_mode_name(enum fg_gpu_mode m);

/**
 * Copies @p n host frames into GPU memory at @p dev (a producer for
 * machines without a GPUDirect NIC), writing device descriptors to
 * @p out (host array).  Frames are placed @p stride bytes apart.
 * @return 0, -EINVAL (a frame longer than stride), -EIO.
 */
int fg_gpu_frames_upload(const struct fg_gpu_frame *host_frames, uint32_t n,
			 void *dev, size_t dev_bytes, uint32_t stride,
			 struct fg_gpu_frame *out);

/**
 * Measurement hook (flowgate-bench gpu): replays the graph-mode kernel
 * alone, @p iters times over @p n_sets descriptor arrays that are already
 * in GPU memory (@p sets: device pointers, @p n frames each, frames in GPU
 * memory), results to the context's device buffer; timed with CUDA events.
 * Rotating over several sets keeps the packets from sitting in L2.
 * @return 0 and *ns_per_batch, -EINVAL, -ENOTSUP (persistent mode),
 *   -EBUSY (a burst in flight), -EIO.
 */
int fg_gpu_kernel_replay(struct fg_gpu *g,
			 const struct fg_gpu_frame *const *sets,
			 uint32_t n_sets, uint32_t n, uint32_t iters,
			 double *ns_per_batch);

/**
 * Measurement hook: host <-> GPU signalling round trip through mapped
 * pinned memory, the floor of persistent-mode latency.  One GPU thread
 * spins on a host-written word (flavor as fg_gpu_config::poll_flavor) and
 * answers in another; the host times @p iters round trips.
 * No persistent context may run meanwhile.
 * @return 0 and the p50/p99 round trip in microseconds, -EINVAL, -EIO,
 *   -ETIMEDOUT.
 */
int fg_gpu_signal_rtt(uint32_t flavor, uint32_t iters, double *p50_us,
		      double *p99_us);

/**
 * Measurement hook: GPU-side span of the last completed persistent-mode
 * burst, from the first block that saw one of its items published to the
 * last DONE (device %globaltimer), i.e. the burst latency minus the
 * host -> GPU doorbell and GPU -> host DONE legs and the host's own work.
 * @return span in nanoseconds, or 0 (graph mode, nothing completed yet).
 * Thread safety: the context's owner.
 */
uint64_t fg_gpu_last_gpu_span_ns(const struct fg_gpu *g);

/** cudaMalloc / cudaFree wrappers for C callers.  @return 0, -ENOMEM, -EIO. */
int fg_gpu_dev_alloc(size_t bytes, void **dev);
void fg_gpu_dev_free(void *dev);

#ifdef __cplusplus
}
#endif
#endif /* FLOWGATE_FG_GPU_H */
