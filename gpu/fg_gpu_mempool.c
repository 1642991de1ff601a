/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mbuf pool with data buffers in GPU memory (see fg_gpu_mempool.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>
#include <rte_dev.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_memory.h>

#include "fg_gpu_mempool.h"

struct fg_gpu_mempool {
	struct rte_mempool *mp;
	void *raw;      /* cudaMalloc result */
	void *area;     /* FG_GPU_PAGE_SIZE-aligned start */
	size_t len;
	int registered;
	uint16_t mapped[RTE_MAX_ETHPORTS];
	unsigned int n_mapped;
};

static void unmap_all(struct fg_gpu_mempool *p)
{
	for (unsigned int i = 0; i < p->n_mapped; i++) {
		struct rte_eth_dev_info info;

		if (rte_eth_dev_info_get(p->mapped[i], &info) == 0)
			rte_dev_dma_unmap(info.device, p->area, RTE_BAD_IOVA,
					  p->len);
	}
	p->n_mapped = 0;
}

int fg_gpu_mempool_create(const char *name, unsigned int n,
			  uint16_t data_room, int socket_id,
			  struct fg_gpu_mempool **out, unsigned int *dma_mapped)
{
	struct fg_gpu_mempool *p;
	struct rte_pktmbuf_extmem ext;
	uint16_t elt = (uint16_t)RTE_ALIGN_CEIL(data_room, 64);
	uint16_t port;
	int rc;

	if (name == NULL || out == NULL || n == 0 ||
	    data_room <= RTE_PKTMBUF_HEADROOM || elt < data_room)
		return -EINVAL;
	if (fg_gpu_probe(NULL, 0) < 0)
		return -ENODEV;
	p = calloc(1, sizeof(*p));
	if (p == NULL)
		return -ENOMEM;
	p->len = RTE_ALIGN_CEIL((size_t)n * elt, FG_GPU_PAGE_SIZE);
	if (cudaMalloc(&p->raw, p->len + FG_GPU_PAGE_SIZE) != cudaSuccess) {
		cudaGetLastError();
		free(p);
		return -ENOMEM;
	}
	p->area = (void *)RTE_ALIGN_CEIL((uintptr_t)p->raw, FG_GPU_PAGE_SIZE);
	/* no IOVA known for GPU memory without a GPUDirect-capable driver:
	 * RTE_BAD_IOVA, as DPDK gpudev's examples do */
	if (rte_extmem_register(p->area, p->len, NULL, 0,
				FG_GPU_PAGE_SIZE) != 0) {
		rc = -rte_errno;
		goto fail;
	}
	p->registered = 1;
	RTE_ETH_FOREACH_DEV(port) {
		struct rte_eth_dev_info info;

		if (rte_eth_dev_info_get(port, &info) != 0)
			continue;
		/* vdevs and PMDs without DMA mapping return ENOTSUP */
		if (rte_dev_dma_map(info.device, p->area, RTE_BAD_IOVA,
				    p->len) == 0)
			p->mapped[p->n_mapped++] = port;
	}
	memset(&ext, 0, sizeof(ext));
	ext.buf_ptr = p->area;
	ext.buf_iova = RTE_BAD_IOVA;
	ext.buf_len = p->len;
	ext.elt_size = elt;
	p->mp = rte_pktmbuf_pool_create_extbuf(name, n, 0, 0, elt, socket_id,
					       &ext, 1);
	if (p->mp == NULL) {
		rc = -rte_errno;
		goto fail;
	}
	if (dma_mapped)
		*dma_mapped = p->n_mapped;
	*out = p;
	return 0;
fail:
	unmap_all(p);
	if (p->registered)
		rte_extmem_unregister(p->area, p->len);
	cudaFree(p->raw);
	free(p);
	return rc ? rc : -EIO;
}

struct rte_mempool *fg_gpu_mempool_get(const struct fg_gpu_mempool *p)
{
	return p ? p->mp : NULL;
}

int fg_gpu_mempool_owns(const struct fg_gpu_mempool *p, const void *addr)
{
	return p && (const uint8_t *)addr >= (const uint8_t *)p->area &&
	       (const uint8_t *)addr < (const uint8_t *)p->area + p->len;
}

int fg_gpu_mempool_fill(struct rte_mbuf **m, const struct fg_gpu_frame *host,
			unsigned int n)
{
	cudaStream_t st;
	int rc = 0;

	for (unsigned int i = 0; i < n; i++)
		if (host[i].len > rte_pktmbuf_tailroom(m[i]) + m[i]->data_len)
			return -EINVAL;
	if (cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking) != cudaSuccess)
		return -EIO;
	for (unsigned int i = 0; i < n && rc == 0; i++) {
		if (host[i].len &&
		    cudaMemcpyAsync(rte_pktmbuf_mtod(m[i], void *),
				    (const void *)(uintptr_t)host[i].addr,
				    host[i].len, cudaMemcpyHostToDevice,
				    st) != cudaSuccess)
			rc = -EIO;
		m[i]->data_len = (uint16_t)host[i].len;
		m[i]->pkt_len = host[i].len;
	}
	/* pageable sources: wait for every DMA before the GPU reads */
	if (cudaStreamSynchronize(st) != cudaSuccess)
		rc = -EIO;
	cudaStreamDestroy(st);
	return rc;
}

void fg_gpu_mempool_free(struct fg_gpu_mempool *p)
{
	if (p == NULL)
		return;
	rte_mempool_free(p->mp);
	unmap_all(p);
	if (p->registered)
		rte_extmem_unregister(p->area, p->len);
	cudaFree(p->raw);
	free(p);
}

int fg_gpu_mbuf_burst(struct fg_gpu *g, struct rte_mbuf *const *m,
		      uint16_t n, enum fg_gpu_mem mem,
		      struct fg_gpu_result *out)
{
	struct fg_gpu_frame f[256];
	uint16_t done = 0;

	if (g == NULL || (n && (m == NULL || out == NULL)))
		return -EINVAL;
	while (done < n) {
		uint16_t k = n - done > 256 ? 256 : n - done;
		int rc;

		for (uint16_t i = 0; i < k; i++) {
			const struct rte_mbuf *b = m[done + i];

			f[i].addr = (uint64_t)(uintptr_t)rte_pktmbuf_mtod(b,
									  const void *);
			f[i].len = b->data_len;
			f[i].rsvd = 0;
		}
		rc = fg_gpu_burst_process(g, f, k, mem, out + done);
		if (rc < 0)
			return rc;
		done += k;
	}
	return n;
}
