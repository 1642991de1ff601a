/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Host side of the GPU batch path: contexts, CUDA Graph mode, persistent
 * mode (work ring in mapped pinned memory), service upload.
 *
 * Every CUDA call goes through CK(), which logs the failing call and makes
 * the function return -ENOMEM (allocation failures) or -EIO.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda_runtime.h>

#include "fg_gpu_private.h"

#define CKR(call, ret)                                                      \
	do {                                                                \
		cudaError_t e_ = (call);                                    \
		if (e_ != cudaSuccess) {                                    \
			fprintf(stderr, "fg_gpu: %s:%d: %s: %s\n", __FILE__,  \
				__LINE__, #call, cudaGetErrorString(e_));   \
			ret = e_ == cudaErrorMemoryAllocation ? -ENOMEM     \
							      : -EIO;       \
			goto fail;                                          \
		}                                                           \
	} while (0)

#define CK(call) CKR(call, rc)

struct fg_gpu {
	struct fg_gpu_config cfg;
	int sms;
	cudaStream_t stream; /* kernels, graphs */
	cudaStream_t copy;   /* persistent mode: staging uploads */
	struct fg_gpu_kparams kp;
	/* tables */
	uint32_t *d_crc, *d_rss, *d_tables;
	uint16_t *d_reta, *d_svc_hash;
	struct fg_gpu_service *d_svcs;
	uint32_t tables_cap; /* entries allocated at d_tables */
	/* bursts */
	struct fg_gpu_frame *h_desc, *d_desc; /* persistent: d_desc = mapped h_desc */
	struct fg_gpu_result *h_res, *d_res;  /* persistent: d_res = mapped h_res */
	struct fg_gpu_result *d_res_dev;      /* graph zero-copy: replay results */
	uint8_t *h_stage, *d_stage;
	/* graph mode */
	cudaGraph_t graph[2];          /* [FG_GPU_MEM_HOST], [FG_GPU_MEM_DEVICE] */
	cudaGraphExec_t exec[2];
	cudaGraphNode_t n_desc[2], n_stage, n_kern[2], n_res[2];
	cudaGraph_t kgraph;            /* kernel replay (bench) */
	cudaGraphExec_t kexec;
	uint32_t kexec_sets, kexec_n;
	/* persistent mode */
	struct fg_gpu_item *items;     /* mapped */
	struct fg_gpu_ctrl *ctrl;      /* mapped */
	struct fg_gpu_item *d_items;
	struct fg_gpu_ctrl *d_ctrl;
	/* descriptors of ring slot s at slot_desc + s * item_pkts (mapped):
	 * at a fixed address, a block reads them in the same PCIe round trip
	 * as the item words */
	struct fg_gpu_frame *slot_desc, *d_slot_desc;
	uint32_t *d_epoch;
	uint32_t blocks, ring_items, head;
	int running;
	int broken; /* persistent kernel lost (timeout): every call -EIO */
	uint64_t last_span_ns; /* GPU span of the last persistent burst */
	/* in flight */
	uint32_t in_n, in_first, in_items;
	int in_flight;
	uint64_t seq;
};

void fg_gpu_crc_tables(uint32_t tab[4][256])
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;

		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (FG_GPU_CRC_POLY & (0u - (c & 1)));
		tab[0][i] = c;
	}
	for (uint32_t i = 0; i < 256; i++)
		for (int t = 1; t < 4; t++)
			tab[t][i] = (tab[t - 1][i] >> 8) ^
				    tab[0][tab[t - 1][i] & 0xFF];
}

/* Toeplitz byte tables for the key 0x6d5a repeated (period 16 bits). */
void fg_gpu_rss_tables(uint32_t tab[2][256])
{
	for (int par = 0; par < 2; par++)
		for (uint32_t b = 0; b < 256; b++) {
			uint32_t h = 0;

			for (int j = 0; j < 8; j++) {
				unsigned int s = (unsigned int)(par * 8 + j);
				uint32_t win = (0x6d5a6d5au << s) |
					       (s ? 0x6d5a6d5au >> (32 - s) : 0);

				if (b & (0x80u >> j))
					h ^= win;
			}
			tab[par][b] = h;
		}
}

void fg_gpu_config_defaults(struct fg_gpu_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->device = 0;
	cfg->mode = FG_GPU_MODE_GRAPH;
	cfg->max_batch = 65536;
	cfg->stage_bytes = 0;
	cfg->item_pkts = 256;
	cfg->ring_items = 0;
	cfg->persistent_blocks = 0;
	cfg->wait_timeout_us = 1000000;
}

int fg_gpu_probe(char *name, size_t name_len)
{
	int n = 0;
	cudaDeviceProp prop;

	if (cudaGetDeviceCount(&n) != cudaSuccess || n < 1) {
		cudaGetLastError(); /* clear the sticky "no device" error */
		return -ENODEV;
	}
	if (name && name_len) {
		if (cudaGetDeviceProperties(&prop, 0) == cudaSuccess)
			snprintf(name, name_len, "%s (sm_%d%d, %d SMs)",
				 prop.name, prop.major, prop.minor,
				 prop.multiProcessorCount);
		else
			snprintf(name, name_len, "?");
	}
	return n;
}

const char *fg_gpu_mode_name(enum fg_gpu_mode m)
{
	return m == FG_GPU_MODE_PERSISTENT ? "persistent" : "graph";
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void kp_fill(struct fg_gpu *g)
{
	g->kp.crc_tab = g->d_crc;
	g->kp.rss_tab = g->d_rss;
	g->kp.reta = g->d_reta;
	g->kp.svc_hash = g->d_svc_hash;
	g->kp.svcs = g->d_svcs;
	g->kp.tables = g->d_tables;
	g->kp.frames = g->d_desc;
	g->kp.res = g->d_res;
	g->kp.items = g->d_items;
	g->kp.ctrl = g->d_ctrl;
	g->kp.epoch = g->d_epoch;
	g->kp.poll_flavor = g->cfg.poll_flavor;
	g->kp.done_fence = g->cfg.done_fence;
	g->kp.ring_items = g->ring_items;
	g->kp.slot_desc = g->d_slot_desc;
	g->kp.item_pkts = g->cfg.item_pkts;
}

/* ---- graph mode ------------------------------------------------------ */

static cudaKernelNodeParams kparams_for(struct fg_gpu *g, void **args,
					uint32_t n)
{
	cudaKernelNodeParams kn;

	memset(&kn, 0, sizeof(kn));
	kn.func = fg_gpu_batch_kernel_fn();
	kn.gridDim = dim3((n + FG_GPU_THREADS - 1) / FG_GPU_THREADS);
	kn.blockDim = dim3(FG_GPU_THREADS);
	kn.sharedMemBytes = 0;
	kn.kernelParams = args;
	return kn;
}

static int graphs_build(struct fg_gpu *g)
{
	int rc = 0;
	uint32_t mb = g->cfg.max_batch;

	for (int m = 0; m < 2; m++) {
		cudaGraphNode_t deps[2];
		int nd = 0;
		void *args[1] = { &g->kp };
		cudaKernelNodeParams kn;

		g->kp.n = mb;
		kn = kparams_for(g, args, mb);
		CK(cudaGraphCreate(&g->graph[m], 0));
		if (!g->cfg.graph_zero_copy) {
			CK(cudaGraphAddMemcpyNode1D(&g->n_desc[m], g->graph[m],
						    NULL, 0, g->d_desc, g->h_desc,
						    (size_t)mb * sizeof(*g->h_desc),
						    cudaMemcpyHostToDevice));
			deps[nd++] = g->n_desc[m];
		}
		if (m == FG_GPU_MEM_HOST) {
			CK(cudaGraphAddMemcpyNode1D(&g->n_stage, g->graph[m],
						    NULL, 0, g->d_stage,
						    g->h_stage,
						    g->cfg.stage_bytes,
						    cudaMemcpyHostToDevice));
			deps[nd++] = g->n_stage;
		}
		CK(cudaGraphAddKernelNode(&g->n_kern[m], g->graph[m],
					  nd ? deps : NULL, nd, &kn));
		if (!g->cfg.graph_zero_copy)
			CK(cudaGraphAddMemcpyNode1D(&g->n_res[m], g->graph[m],
						    &g->n_kern[m], 1, g->h_res,
						    g->d_res,
						    (size_t)mb * sizeof(*g->h_res),
						    cudaMemcpyDeviceToHost));
		CK(cudaGraphInstantiate(&g->exec[m], g->graph[m], 0));
	}
fail:
	return rc;
}

static int graph_launch(struct fg_gpu *g, uint32_t n, uint32_t stage_len,
			enum fg_gpu_mem mem)
{
	int rc = 0;
	int m = mem == FG_GPU_MEM_HOST ? 0 : 1;
	void *args[1] = { &g->kp };
	cudaKernelNodeParams kn;

	g->kp.n = n;
	kn = kparams_for(g, args, n);
	if (!g->cfg.graph_zero_copy)
		CK(cudaGraphExecMemcpyNodeSetParams1D(
			g->exec[m], g->n_desc[m], g->d_desc, g->h_desc,
			(size_t)n * sizeof(*g->h_desc), cudaMemcpyHostToDevice));
	if (m == 0)
		CK(cudaGraphExecMemcpyNodeSetParams1D(
			g->exec[m], g->n_stage, g->d_stage, g->h_stage,
			stage_len ? stage_len : 16, cudaMemcpyHostToDevice));
	CK(cudaGraphExecKernelNodeSetParams(g->exec[m], g->n_kern[m], &kn));
	if (!g->cfg.graph_zero_copy)
		CK(cudaGraphExecMemcpyNodeSetParams1D(
			g->exec[m], g->n_res[m], g->h_res, g->d_res,
			(size_t)n * sizeof(*g->h_res), cudaMemcpyDeviceToHost));
	CK(cudaGraphLaunch(g->exec[m], g->stream));
	CK(cudaGetLastError());
fail:
	return rc;
}

/* ---- persistent mode --------------------------------------------------- */

static int persistent_start(struct fg_gpu *g)
{
	int rc = 0;
	void *args[1] = { &g->kp };

	memset(g->items, 0, (size_t)g->ring_items * sizeof(*g->items));
	__atomic_store_n(&g->ctrl->stop, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&g->ctrl->doorbell, 0, __ATOMIC_RELEASE);
	g->head = 0;
	kp_fill(g);
	CK(cudaMemsetAsync(g->d_epoch, 0, 2 * sizeof(uint32_t), g->stream));
	CK(cudaLaunchKernel(fg_gpu_persistent_kernel_fn(), dim3(g->blocks),
			    dim3(FG_GPU_THREADS), args, 0, g->stream));
	CK(cudaGetLastError());
	g->running = 1;
fail:
	return rc;
}

static int persistent_stop(struct fg_gpu *g)
{
	int rc = 0;
	uint64_t deadline;
	cudaError_t e;

	if (!g->running)
		return 0;
	/* block 0 polls stop next to the doorbell (the doorbell counts
	 * published items: stop must not move it) */
	__atomic_store_n(&g->ctrl->stop, 1, __ATOMIC_SEQ_CST);
	/* at least 2 s; longer when the caller allows slow waits (tools) */
	deadline = now_ns() + 2000000000ull +
		   2000ull * (uint64_t)g->cfg.wait_timeout_us;
	while ((e = cudaStreamQuery(g->stream)) == cudaErrorNotReady) {
		struct timespec ts = { 0, 100000 };

		nanosleep(&ts, NULL);
		if (now_ns() > deadline) {
			fprintf(stderr, "fg_gpu: persistent kernel did not stop "
					"in time\n");
			g->broken = 1;
			return -ETIMEDOUT;
		}
	}
	CK(e);
	g->running = 0;
fail:
	return rc;
}

/* ---- create / destroy -------------------------------------------------- */

static int upload_static_tables(struct fg_gpu *g)
{
	int rc = 0;
	uint32_t crc[4][256], rss[2][256];
	uint16_t empty[FG_GPU_SVC_HASH_SIZE];

	fg_gpu_crc_tables(crc);
	fg_gpu_rss_tables(rss);
	for (uint32_t i = 0; i < FG_GPU_SVC_HASH_SIZE; i++)
		empty[i] = FG_GPU_SVC_EMPTY;
	/* copies from pageable memory may return before the DMA is done:
	 * order them on our stream and wait for it */
	CK(cudaMemcpyAsync(g->d_crc, crc, sizeof(crc), cudaMemcpyHostToDevice,
			   g->stream));
	CK(cudaMemcpyAsync(g->d_rss, rss, sizeof(rss), cudaMemcpyHostToDevice,
			   g->stream));
	CK(cudaMemcpyAsync(g->d_reta, g->cfg.reta, sizeof(g->cfg.reta),
			   cudaMemcpyHostToDevice, g->stream));
	CK(cudaMemcpyAsync(g->d_svc_hash, empty, sizeof(empty),
			   cudaMemcpyHostToDevice, g->stream));
	CK(cudaStreamSynchronize(g->stream));
fail:
	return rc;
}

int fg_gpu_create(const struct fg_gpu_config *cfg, struct fg_gpu **out)
{
	struct fg_gpu *g;
	cudaDeviceProp prop;
	int rc = 0, ndev = 0;

	if (cfg == NULL || out == NULL || cfg->max_batch == 0 ||
	    cfg->max_batch > FG_GPU_BATCH_LIMIT ||
	    (cfg->mode != FG_GPU_MODE_GRAPH &&
	     cfg->mode != FG_GPU_MODE_PERSISTENT) ||
	    (cfg->mode == FG_GPU_MODE_PERSISTENT &&
	     (cfg->item_pkts == 0 || cfg->item_pkts > FG_GPU_ITEM_MAX ||
	      cfg->poll_flavor > 1 || cfg->done_fence > 1)))
		return -EINVAL;
	if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev < 1) {
		cudaGetLastError();
		return -ENODEV;
	}
	if (cfg->device < 0 || cfg->device >= ndev)
		return -EINVAL;
	g = (struct fg_gpu *)calloc(1, sizeof(*g));
	if (g == NULL)
		return -ENOMEM;
	g->cfg = *cfg;
	if (g->cfg.stage_bytes == 0)
		g->cfg.stage_bytes = g->cfg.max_batch * 256u;
	if (g->cfg.wait_timeout_us == 0)
		g->cfg.wait_timeout_us = 1000000;
	CK(cudaSetDevice(cfg->device));
	/* spin-wait for low latency; fails harmlessly if the primary
	 * context already exists with other flags */
	if (cudaSetDeviceFlags(cudaDeviceScheduleSpin | cudaDeviceMapHost) !=
	    cudaSuccess)
		cudaGetLastError();
	CK(cudaGetDeviceProperties(&prop, cfg->device));
	g->sms = prop.multiProcessorCount;
	CK(cudaStreamCreateWithFlags(&g->stream, cudaStreamNonBlocking));
	CK(cudaStreamCreateWithFlags(&g->copy, cudaStreamNonBlocking));
	CK(cudaMalloc((void **)&g->d_crc, 4 * 256 * sizeof(uint32_t)));
	CK(cudaMalloc((void **)&g->d_rss, 2 * 256 * sizeof(uint32_t)));
	CK(cudaMalloc((void **)&g->d_reta, FG_GPU_RETA_SIZE * sizeof(uint16_t)));
	CK(cudaMalloc((void **)&g->d_svc_hash,
		      FG_GPU_SVC_HASH_SIZE * sizeof(uint16_t)));
	CK(cudaMalloc((void **)&g->d_svcs,
		      FG_GPU_SERVICES_MAX * sizeof(struct fg_gpu_service)));
	g->tables_cap = 1;
	CK(cudaMallocAsync((void **)&g->d_tables, sizeof(uint32_t), g->stream));
	CK(cudaStreamSynchronize(g->stream));
	rc = upload_static_tables(g);
	if (rc)
		goto fail;
	CK(cudaMalloc((void **)&g->d_stage, g->cfg.stage_bytes));
	CK(cudaHostAlloc((void **)&g->h_stage, g->cfg.stage_bytes,
			 cudaHostAllocDefault));
	if (cfg->mode == FG_GPU_MODE_GRAPH && cfg->graph_zero_copy) {
		size_t nd = (size_t)g->cfg.max_batch;

		CK(cudaHostAlloc((void **)&g->h_desc, nd * sizeof(*g->h_desc),
				 cudaHostAllocMapped));
		CK(cudaHostAlloc((void **)&g->h_res, nd * sizeof(*g->h_res),
				 cudaHostAllocMapped));
		CK(cudaHostGetDevicePointer((void **)&g->d_desc, g->h_desc, 0));
		CK(cudaHostGetDevicePointer((void **)&g->d_res, g->h_res, 0));
		/* kernel replay (bench) writes results to GPU memory */
		CK(cudaMalloc((void **)&g->d_res_dev, nd * sizeof(*g->d_res)));
		kp_fill(g);
		g->kp.zc = 1;
		rc = graphs_build(g);
		if (rc)
			goto fail;
	} else if (cfg->mode == FG_GPU_MODE_GRAPH) {
		size_t nd = (size_t)g->cfg.max_batch;

		CK(cudaHostAlloc((void **)&g->h_desc, nd * sizeof(*g->h_desc),
				 cudaHostAllocDefault));
		CK(cudaHostAlloc((void **)&g->h_res, nd * sizeof(*g->h_res),
				 cudaHostAllocDefault));
		CK(cudaMalloc((void **)&g->d_desc, nd * sizeof(*g->d_desc)));
		CK(cudaMalloc((void **)&g->d_res, nd * sizeof(*g->d_res)));
		kp_fill(g);
		rc = graphs_build(g);
		if (rc)
			goto fail;
	} else {
		size_t nd = (size_t)g->cfg.max_batch;
		uint32_t per_burst = (g->cfg.max_batch + g->cfg.item_pkts - 1) /
				     g->cfg.item_pkts;
		int occ = 0;

		if (fg_gpu_persistent_occupancy(&occ) != 0 || occ < 1) {
			rc = -EIO;
			goto fail;
		}
		g->blocks = g->cfg.persistent_blocks ? g->cfg.persistent_blocks
						     : (uint32_t)g->sms;
		if (g->blocks > (uint32_t)(occ * g->sms)) {
			/* more blocks than can be resident would deadlock */
			rc = -EINVAL;
			goto fail;
		}
		g->ring_items = g->cfg.ring_items ? g->cfg.ring_items : per_burst;
		if (g->ring_items < per_burst)
			g->ring_items = per_burst;
		g->ring_items = (g->ring_items + g->blocks - 1) / g->blocks *
				g->blocks;
		CK(cudaHostAlloc((void **)&g->h_desc, nd * sizeof(*g->h_desc),
				 cudaHostAllocMapped));
		CK(cudaHostAlloc((void **)&g->h_res, nd * sizeof(*g->h_res),
				 cudaHostAllocMapped));
		CK(cudaHostAlloc((void **)&g->items,
				 (size_t)g->ring_items * sizeof(*g->items),
				 cudaHostAllocMapped));
		CK(cudaHostAlloc((void **)&g->ctrl, sizeof(*g->ctrl),
				 cudaHostAllocMapped));
		CK(cudaHostAlloc((void **)&g->slot_desc,
				 (size_t)g->ring_items * g->cfg.item_pkts *
					 sizeof(*g->slot_desc),
				 cudaHostAllocMapped));
		CK(cudaHostGetDevicePointer((void **)&g->d_slot_desc,
					    g->slot_desc, 0));
		memset(g->ctrl, 0, sizeof(*g->ctrl));
		CK(cudaHostGetDevicePointer((void **)&g->d_desc, g->h_desc, 0));
		CK(cudaHostGetDevicePointer((void **)&g->d_res, g->h_res, 0));
		CK(cudaHostGetDevicePointer((void **)&g->d_items, g->items, 0));
		CK(cudaHostGetDevicePointer((void **)&g->d_ctrl, g->ctrl, 0));
		/* [0] published items (doorbell copy), [1] stop */
		CK(cudaMalloc((void **)&g->d_epoch, 2 * sizeof(uint32_t)));
		rc = persistent_start(g);
		if (rc)
			goto fail;
	}
	*out = g;
	return 0;
fail:
	fg_gpu_destroy(g);
	return rc ? rc : -EIO;
}

int fg_gpu_stop(struct fg_gpu *g)
{
	if (g == NULL)
		return -EINVAL;
	if (g->in_flight)
		return -EBUSY;
	return g->cfg.mode == FG_GPU_MODE_PERSISTENT ? persistent_stop(g) : 0;
}

void fg_gpu_destroy(struct fg_gpu *g)
{
	if (g == NULL)
		return;
	if (g->running && persistent_stop(g) == -ETIMEDOUT) {
		/* the kernel still reads items/ctrl: leak them rather than
		 * free memory a running kernel uses */
		return;
	}
	if (g->stream)
		cudaStreamSynchronize(g->stream);
	for (int m = 0; m < 2; m++) {
		if (g->exec[m])
			cudaGraphExecDestroy(g->exec[m]);
		if (g->graph[m])
			cudaGraphDestroy(g->graph[m]);
	}
	if (g->kexec)
		cudaGraphExecDestroy(g->kexec);
	if (g->kgraph)
		cudaGraphDestroy(g->kgraph);
	if (g->cfg.mode == FG_GPU_MODE_GRAPH && !g->cfg.graph_zero_copy) {
		cudaFree(g->d_desc);
		cudaFree(g->d_res);
	}
	if (g->d_res_dev)
		cudaFree(g->d_res_dev);
	cudaFreeHost(g->h_desc);
	cudaFreeHost(g->h_res);
	cudaFreeHost(g->items);
	cudaFreeHost(g->ctrl);
	cudaFreeHost(g->slot_desc);
	cudaFree(g->d_epoch);
	cudaFreeHost(g->h_stage);
	cudaFree(g->d_stage);
	cudaFree(g->d_crc);
	cudaFree(g->d_rss);
	cudaFree(g->d_reta);
	cudaFree(g->d_svc_hash);
	cudaFree(g->d_svcs);
	if (g->d_tables && g->stream) {
		cudaFreeAsync(g->d_tables, g->stream);
		cudaStreamSynchronize(g->stream);
	}
	if (g->copy)
		cudaStreamDestroy(g->copy);
	if (g->stream)
		cudaStreamDestroy(g->stream);
	cudaGetLastError();
	free(g);
}

/* ---- configuration ---------------------------------------------------- */

/* Runs fn(g, arg) with the persistent kernel stopped (it caches tables in
 * shared memory and took its parameters by value at launch). */
static int with_kernel_stopped(struct fg_gpu *g, int (*fn)(struct fg_gpu *,
							  const void *),
			       const void *arg)
{
	int rc, rc2 = 0;

	if (g->broken)
		return -EIO;
	if (g->in_flight)
		return -EBUSY;
	if (g->cfg.mode == FG_GPU_MODE_PERSISTENT) {
		rc = persistent_stop(g);
		if (rc)
			return rc;
	}
	rc = fn(g, arg);
	if (g->cfg.mode == FG_GPU_MODE_PERSISTENT)
		rc2 = persistent_start(g);
	return rc ? rc : rc2;
}

struct svc_args {
	const struct fg_gpu_service *svcs;
	uint32_t n;
	const uint32_t *tables;
	uint32_t n_entries;
};

static int do_services_set(struct fg_gpu *g, const void *varg)
{
	const struct svc_args *a = (const struct svc_args *)varg;
	uint16_t hash[FG_GPU_SVC_HASH_SIZE];
	int rc = 0;

	for (uint32_t i = 0; i < FG_GPU_SVC_HASH_SIZE; i++)
		hash[i] = FG_GPU_SVC_EMPTY;
	for (uint32_t i = 0; i < a->n; i++) {
		const struct fg_gpu_service *s = &a->svcs[i];
		uint32_t vip[4];
		uint32_t h;

		memcpy(vip, s->vip, 16);
		h = fg_gpu_svc_hash(s->family, s->proto, s->port, vip);
		for (;;) {
			uint16_t j = hash[h];

			if (j == FG_GPU_SVC_EMPTY) {
				hash[h] = (uint16_t)i;
				break;
			}
			if (a->svcs[j].family == s->family &&
			    a->svcs[j].proto == s->proto &&
			    a->svcs[j].port == s->port &&
			    !memcmp(a->svcs[j].vip, s->vip, 16))
				break; /* duplicate: the first one wins */
			h = (h + 1) & (FG_GPU_SVC_HASH_SIZE - 1);
		}
	}
	if (a->n_entries > g->tables_cap) {
		/* stream-ordered: cudaFree would synchronize the device and
		 * wait for other contexts' persistent kernels */
		CK(cudaFreeAsync(g->d_tables, g->stream));
		g->d_tables = NULL;
		CK(cudaMallocAsync((void **)&g->d_tables,
				   (size_t)a->n_entries * sizeof(uint32_t),
				   g->stream));
		CK(cudaStreamSynchronize(g->stream));
		g->tables_cap = a->n_entries;
	}
	if (a->n_entries)
		CK(cudaMemcpyAsync(g->d_tables, a->tables,
				   (size_t)a->n_entries * sizeof(uint32_t),
				   cudaMemcpyHostToDevice, g->stream));
	if (a->n)
		CK(cudaMemcpyAsync(g->d_svcs, a->svcs,
				   (size_t)a->n * sizeof(*a->svcs),
				   cudaMemcpyHostToDevice, g->stream));
	CK(cudaMemcpyAsync(g->d_svc_hash, hash, sizeof(hash),
			   cudaMemcpyHostToDevice, g->stream));
	CK(cudaStreamSynchronize(g->stream));
	g->kp.n_svcs = a->n;
	kp_fill(g);
fail:
	return rc;
}

int fg_gpu_services_set(struct fg_gpu *g, const struct fg_gpu_service *svcs,
			uint32_t n, const uint32_t *tables, uint32_t n_entries)
{
	struct svc_args a = { svcs, n, tables, n_entries };

	if (g == NULL || n > FG_GPU_SERVICES_MAX || (n && svcs == NULL) ||
	    (n_entries && tables == NULL))
		return -EINVAL;
	for (uint32_t i = 0; i < n; i++) {
		if (svcs[i].family != CT_V4 && svcs[i].family != CT_V6)
			return -EINVAL;
		if ((uint64_t)svcs[i].table_off + svcs[i].m > n_entries)
			return -EINVAL;
	}
	return with_kernel_stopped(g, do_services_set, &a);
}

/* ---- bursts ------------------------------------------------------------ */

/* Copies host frames into the staging area, descriptors into h_desc.
 * Frames start 16-byte aligned.  Returns frames accepted. */
static uint32_t stage_host(struct fg_gpu *g, const struct fg_gpu_frame *f,
			   uint32_t n, uint32_t *stage_len)
{
	uint32_t off = 0, i;

	for (i = 0; i < n; i++) {
		uint32_t need = (f[i].len + 15u) & ~15u;

		if ((uint64_t)off + need > g->cfg.stage_bytes)
			break;
		if (f[i].len)
			memcpy(g->h_stage + off, (const void *)f[i].addr,
			       f[i].len);
		g->h_desc[i].addr = (uint64_t)(uintptr_t)(g->d_stage + off);
		g->h_desc[i].len = f[i].len;
		g->h_desc[i].rsvd = 0;
		off += need;
	}
	*stage_len = off;
	return i;
}

int fg_gpu_burst_submit(struct fg_gpu *g, const struct fg_gpu_frame *frames,
			uint32_t n, enum fg_gpu_mem mem)
{
	uint32_t acc, stage_len = 0;
	int rc = 0;

	if (g == NULL || frames == NULL || n == 0 || n > g->cfg.max_batch ||
	    (mem != FG_GPU_MEM_HOST && mem != FG_GPU_MEM_DEVICE))
		return -EINVAL;
	if (g->broken)
		return -EIO;
	if (g->in_flight)
		return -EBUSY;
	for (uint32_t i = 0; i < n; i++)
		if (frames[i].rsvd != 0 || (frames[i].addr == 0 && frames[i].len))
			return -EINVAL;
	if (mem == FG_GPU_MEM_HOST) {
		acc = stage_host(g, frames, n, &stage_len);
		if (acc == 0)
			return -E2BIG; /* one frame larger than stage_bytes */
	} else {
		/* persistent mode copies them straight into the slots below */
		if (g->cfg.mode == FG_GPU_MODE_GRAPH)
			memcpy(g->h_desc, frames, (size_t)n * sizeof(*frames));
		acc = n;
	}
	g->seq++;
	if (g->cfg.mode == FG_GPU_MODE_GRAPH) {
		rc = graph_launch(g, acc, stage_len, mem);
		if (rc)
			return rc;
	} else {
		uint32_t ip = g->cfg.item_pkts;
		uint32_t k = (acc + ip - 1) / ip;

		if (!g->running)
			return -EIO;
		if (mem == FG_GPU_MEM_HOST && stage_len) {
			CK(cudaMemcpyAsync(g->d_stage, g->h_stage, stage_len,
					   cudaMemcpyHostToDevice, g->copy));
			CK(cudaStreamSynchronize(g->copy));
		}
		const struct fg_gpu_frame *src =
			mem == FG_GPU_MEM_HOST ? g->h_desc : frames;

		for (uint32_t j = 0; j < k; j++) {
			uint32_t sl = (g->head + j) % g->ring_items;
			struct fg_gpu_item *it = &g->items[sl];
			uint32_t first = j * ip;

			it->n = acc - first < ip ? acc - first : ip;
			memcpy(g->slot_desc + (size_t)sl * ip, src + first,
			       (size_t)it->n * sizeof(*src));
			it->frames = (uint64_t)(uintptr_t)(g->d_slot_desc +
							   (size_t)sl * ip);
			it->res = (uint64_t)(uintptr_t)(g->d_res + first);
			it->seq = g->seq;
			/* release: descriptors and item fields before status */
			__atomic_store_n(&it->status, FG_GPU_ITEM_READY,
					 __ATOMIC_RELEASE);
		}
		/* one doorbell per burst, the count of items published so
		 * far (lock add: a full barrier, so the item stores above are
		 * visible first and the doorbell leaves the store buffer at
		 * once); block 0 forwards it to the GPU */
		__atomic_add_fetch(&g->ctrl->doorbell, k, __ATOMIC_SEQ_CST);
		g->in_first = g->head;
		g->in_items = k;
		g->head = (g->head + k) % g->ring_items;
	}
	g->in_n = acc;
	g->in_flight = 1;
	return (int)acc;
fail:
	return rc;
}

int fg_gpu_burst_wait(struct fg_gpu *g, const struct fg_gpu_result **res)
{
	int rc = 0;

	if (g == NULL || res == NULL)
		return -EINVAL;
	if (!g->in_flight)
		return -EAGAIN;
	if (g->cfg.mode == FG_GPU_MODE_GRAPH) {
		CK(cudaStreamSynchronize(g->stream));
	} else {
		uint64_t t0 = 0, deadline = 0, next_query = 0;
		uint64_t wake = UINT64_MAX, done = 0;

		for (uint32_t j = 0; j < g->in_items; j++) {
			struct fg_gpu_item *it =
				&g->items[(g->in_first + j) % g->ring_items];
			uint32_t spins = 0;

			while (__atomic_load_n(&it->status, __ATOMIC_ACQUIRE) !=
			       FG_GPU_ITEM_DONE) {
				uint64_t t;

				if (++spins < 256)
					continue;
				spins = 0;
				t = now_ns();
				if (t0 == 0) {
					t0 = t;
					deadline = t + (uint64_t)g->cfg.wait_timeout_us *
							       1000u;
					next_query = t + 10000000u;
				}
				if (t > deadline) {
					fprintf(stderr, "fg_gpu: persistent "
							"kernel timed out\n");
					g->broken = 1;
					g->in_flight = 0;
					return -ETIMEDOUT;
				}
				/* a driver call is slow (and was the
				 * latency floor when made every few us):
				 * check that the kernel is alive every 10 ms */
				if (t < next_query)
					continue;
				next_query = t + 10000000u;
				if (cudaStreamQuery(g->stream) !=
				    cudaErrorNotReady) {
					/* the kernel died */
					fprintf(stderr, "fg_gpu: persistent "
							"kernel exited: %s\n",
						cudaGetErrorString(
							cudaGetLastError()));
					g->running = 0;
					return -EIO;
				}
			}
			/* written before DONE (release), read after it */
			if (it->t_wake < wake)
				wake = it->t_wake;
			if (it->t_done > done)
				done = it->t_done;
			__atomic_store_n(&it->status, FG_GPU_ITEM_FREE,
					 __ATOMIC_RELAXED);
		}
		g->last_span_ns = done > wake ? done - wake : 0;
	}
	g->in_flight = 0;
	*res = g->h_res;
	return (int)g->in_n;
fail:
	g->in_flight = 0;
	return rc;
}

uint64_t fg_gpu_last_gpu_span_ns(const struct fg_gpu *g)
{
	return g ? g->last_span_ns : 0;
}

int fg_gpu_burst_process(struct fg_gpu *g, const struct fg_gpu_frame *frames,
			 uint32_t n, enum fg_gpu_mem mem,
			 struct fg_gpu_result *out)
{
	uint32_t done = 0;

	if (g == NULL || out == NULL)
		return -EINVAL;
	while (done < n) {
		const struct fg_gpu_result *r;
		uint32_t chunk = n - done;
		int acc, got;

		if (chunk > g->cfg.max_batch)
			chunk = g->cfg.max_batch;
		acc = fg_gpu_burst_submit(g, frames + done, chunk, mem);
		if (acc < 0)
			return acc;
		got = fg_gpu_burst_wait(g, &r);
		if (got < 0)
			return got;
		memcpy(out + done, r, (size_t)got * sizeof(*r));
		done += (uint32_t)got;
	}
	return (int)n;
}

/* ---- helpers for C callers (tests, bench, mempool producer) ----------- */

int fg_gpu_dev_alloc(size_t bytes, void **dev)
{
	cudaError_t e;

	if (dev == NULL || bytes == 0)
		return -EINVAL;
	e = cudaMalloc(dev, bytes);
	if (e != cudaSuccess) {
		cudaGetLastError();
		return e == cudaErrorMemoryAllocation ? -ENOMEM : -EIO;
	}
	return 0;
}

void fg_gpu_dev_free(void *dev)
{
	if (dev)
		cudaFree(dev);
}

int fg_gpu_frames_upload(const struct fg_gpu_frame *host_frames, uint32_t n,
			 void *dev, size_t dev_bytes, uint32_t stride,
			 struct fg_gpu_frame *out)
{
	uint8_t *h;
	int rc = 0;

	if (host_frames == NULL || dev == NULL || out == NULL || stride == 0 ||
	    (uint64_t)n * stride > dev_bytes)
		return -EINVAL;
	for (uint32_t i = 0; i < n; i++)
		if (host_frames[i].len > stride)
			return -EINVAL;
	h = (uint8_t *)calloc(n ? n : 1, stride);
	if (h == NULL)
		return -ENOMEM;
	for (uint32_t i = 0; i < n; i++) {
		memcpy(h + (size_t)i * stride,
		       (const void *)host_frames[i].addr, host_frames[i].len);
		out[i].addr = (uint64_t)(uintptr_t)dev + (uint64_t)i * stride;
		out[i].len = host_frames[i].len;
		out[i].rsvd = 0;
	}
	{
		/* pageable source: cudaMemcpy may return before the DMA ends,
		 * and a persistent kernel would read at once */
		cudaStream_t st = NULL;

		CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
		if (cudaMemcpyAsync(dev, h, (size_t)n * stride,
				    cudaMemcpyHostToDevice, st) != cudaSuccess ||
		    cudaStreamSynchronize(st) != cudaSuccess)
			rc = -EIO;
		cudaStreamDestroy(st);
	}
fail:
	free(h);
	return rc;
}

int fg_gpu_kernel_replay(struct fg_gpu *g, const struct fg_gpu_frame *const *sets,
			 uint32_t n_sets, uint32_t n, uint32_t iters,
			 double *ns_per_batch)
{
	int rc = 0;
	cudaEvent_t e0 = NULL, e1 = NULL;
	float ms = 0;

	if (g == NULL || sets == NULL || n_sets == 0 || n == 0 ||
	    n > g->cfg.max_batch || iters == 0 || ns_per_batch == NULL)
		return -EINVAL;
	if (g->cfg.mode != FG_GPU_MODE_GRAPH)
		return -ENOTSUP;
	if (g->in_flight)
		return -EBUSY;
	if (g->kexec) {
		cudaGraphExecDestroy(g->kexec);
		cudaGraphDestroy(g->kgraph);
		g->kexec = NULL;
		g->kgraph = NULL;
	}
	CK(cudaGraphCreate(&g->kgraph, 0));
	{
		cudaGraphNode_t prev = NULL, node;

		for (uint32_t s = 0; s < n_sets; s++) {
			struct fg_gpu_kparams kp = g->kp;
			void *args[1] = { &kp };
			cudaKernelNodeParams kn;

			kp.frames = sets[s];
			kp.res = g->d_res_dev ? g->d_res_dev : g->d_res;
			kp.zc = 0; /* descriptors in GPU memory */
			kp.n = n;
			kn = kparams_for(g, args, n);
			CK(cudaGraphAddKernelNode(&node, g->kgraph,
						  prev ? &prev : NULL,
						  prev ? 1 : 0, &kn));
			prev = node;
		}
	}
	CK(cudaGraphInstantiate(&g->kexec, g->kgraph, 0));
	CK(cudaEventCreate(&e0));
	CK(cudaEventCreate(&e1));
	CK(cudaGraphLaunch(g->kexec, g->stream)); /* warm-up */
	CK(cudaStreamSynchronize(g->stream));
	CK(cudaEventRecord(e0, g->stream));
	for (uint32_t i = 0; i < iters; i++)
		CK(cudaGraphLaunch(g->kexec, g->stream));
	CK(cudaEventRecord(e1, g->stream));
	CK(cudaEventSynchronize(e1));
	CK(cudaGetLastError());
	CK(cudaEventElapsedTime(&ms, e0, e1));
	*ns_per_batch = (double)ms * 1e6 / ((double)iters * n_sets);
fail:
	if (e0)
		cudaEventDestroy(e0);
	if (e1)
		cudaEventDestroy(e1);
	return rc;
}

static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int fg_gpu_signal_rtt(uint32_t flavor, uint32_t iters, double *p50_us,
		      double *p99_us)
{
	uint32_t *h = NULL, *d = NULL;
	double *t = NULL;
	cudaStream_t st = NULL;
	int rc = 0;
	uint32_t done = 0;

	if (flavor > 1 || iters == 0 || p50_us == NULL || p99_us == NULL)
		return -EINVAL;
	t = (double *)malloc(iters * sizeof(double));
	if (t == NULL)
		return -ENOMEM;
	CK(cudaHostAlloc((void **)&h, 256, cudaHostAllocMapped));
	memset(h, 0, 256);
	CK(cudaHostGetDevicePointer((void **)&d, h, 0));
	CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
	{
		uint32_t *ping = d, *pong = d + 32; /* separate 128-B lines */
		void *args[4] = { &ping, &pong, &iters, &flavor };

		CK(cudaLaunchKernel(fg_gpu_pingpong_kernel_fn(), dim3(1),
				    dim3(1), args, 0, st));
		CK(cudaGetLastError());
	}
	for (uint32_t i = 1; i <= iters; i++) {
		uint64_t t0 = now_ns(), dl = t0 + 1000000000ull;

		__atomic_store_n(&h[0], i, __ATOMIC_RELEASE);
		while (__atomic_load_n(&h[32], __ATOMIC_ACQUIRE) != i) {
			if (now_ns() > dl) {
				rc = -ETIMEDOUT;
				break;
			}
		}
		if (rc)
			break;
		t[done++] = (double)(now_ns() - t0) / 1000.0;
	}
	if (rc)
		__atomic_store_n(&h[0], ~0u, __ATOMIC_RELEASE);
	CK(cudaStreamSynchronize(st));
	if (done) {
		qsort(t, done, sizeof(double), cmp_dbl);
		*p50_us = t[done / 2];
		*p99_us = t[(uint32_t)(done * 0.99)];
	}
fail:
	if (st)
		cudaStreamDestroy(st);
	if (h)
		cudaFreeHost(h);
	free(t);
	return rc;
}
