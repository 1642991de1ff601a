/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * GPU-memory mbuf pool end to end: EAL (--no-huge --no-pci --in-memory),
 * fg_gpu_mempool_create (cudaMalloc + rte_extmem_register + extbuf pool),
 * mbufs filled by the host-copy producer, their GPU data addresses handed
 * to both launch modes, results compared with the CPU reference over the
 * host copies.  Exit 77 without a GPU.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_mbuf.h>
#include <rte_memory.h>

#include "fg_gpu.h"
#include "fg_gpu_ref.h"
#include "fg_gpu_mempool.h"
#include "fg_rss.h"

#define N 8192u
#define ROOM 2048u

static int fails;

#define CHECK(c, ...)                                                       \
	do {                                                                \
		if (!(c)) {                                                 \
			fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
			fprintf(stderr, __VA_ARGS__);                       \
			fprintf(stderr, "\n");                              \
			fails++;                                            \
		}                                                           \
	} while (0)

int main(int argc, char **argv)
{
	char prefix[64];
	/* --no-huge implies legacy memory, which --in-memory refuses: use a
	 * unique file prefix instead */
	char *eal[] = { argv[0], "--no-huge", "--no-pci", "--file-prefix",
			prefix, "-m", "256", "--log-level", "lib.eal:error",
			NULL };
	struct fg_gpu_mempool *gp = NULL;
	struct rte_mbuf *m[N];
	static uint8_t host[N][256];
	static struct fg_gpu_frame hf[N];
	static struct fg_gpu_result ref[N], out[N];
	uint16_t reta[FG_GPU_RETA_SIZE];
	uint64_t rng = 42;
	unsigned int mapped = 0;
	int rc;

	(void)argc;
	snprintf(prefix, sizeof(prefix), "fg_gpu_mbuf_%d", (int)getpid());
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (fg_gpu_probe(NULL, 0) < 0) {
		printf("SKIP: no CUDA GPU or driver on this machine\n");
		return 77;
	}
	if (rte_eal_init(9, eal) < 0) {
		fprintf(stderr, "rte_eal_init failed\n");
		return 1;
	}
	rc = fg_gpu_mempool_create("fg_gpu_mbuf", N + 512, ROOM, SOCKET_ID_ANY,
				   &gp, &mapped);
	if (rc) {
		fprintf(stderr, "fg_gpu_mempool_create: %d (%s)\n", rc,
			rte_strerror(-rc));
		return 1;
	}
	printf("pool: %u mbufs, data in GPU memory, %u ethdevs DMA-mapped "
	       "(no NIC here: producer = host copy)\n",
	       rte_mempool_avail_count(fg_gpu_mempool_get(gp)), mapped);
	CHECK(rte_pktmbuf_alloc_bulk(fg_gpu_mempool_get(gp), m, N) == 0,
	      "alloc_bulk");
	fg_rss_reta_fill(reta, 4);
	for (unsigned int i = 0; i < N; i++) {
		hf[i].addr = (uint64_t)(uintptr_t)host[i];
		hf[i].len = fg_gpu_gen_frame(&rng, host[i], sizeof(host[i]), NULL,
					     0, (i & 3) ? FG_GPU_GEN_FUZZ
							: FG_GPU_GEN_VALID);
		hf[i].rsvd = 0;
		fg_gpu_ref_one(host[i], hf[i].len, reta, NULL, 0, NULL, &ref[i]);
	}
	CHECK(fg_gpu_mempool_fill(m, hf, N) == 0, "fill");
	for (unsigned int i = 0; i < N; i++) {
		void *d = rte_pktmbuf_mtod(m[i], void *);

		CHECK(fg_gpu_mempool_owns(gp, d), "mbuf %u data outside GPU area", i);
		CHECK(RTE_MBUF_HAS_EXTBUF(m[i]), "mbuf %u not extbuf", i);
		CHECK(m[i]->data_len == hf[i].len, "mbuf %u data_len", i);
		if (fails > 3)
			break;
	}
	CHECK(rte_mem_virt2memseg_list(rte_pktmbuf_mtod(m[0], void *)) != NULL,
	      "GPU area not registered as DPDK external memory");
	for (int mode = 0; mode < 2; mode++) {
		struct fg_gpu_config c;
		struct fg_gpu *g;
		unsigned long mism = 0;

		fg_gpu_config_defaults(&c);
		c.mode = (enum fg_gpu_mode)mode;
		c.max_batch = 1024;
		memcpy(c.reta, reta, sizeof(reta));
		rc = fg_gpu_create(&c, &g);
		CHECK(rc == 0, "create %d", rc);
		if (rc)
			continue;
		/* the dataplane entry point, 32 mbufs at a time like an RX
		 * burst */
		rc = 0;
		for (unsigned int i = 0; i < N && rc >= 0; i += 32)
			rc = fg_gpu_mbuf_burst(g, m + i, 32, FG_GPU_MEM_DEVICE,
					       out + i);
		CHECK(rc == 32, "fg_gpu_mbuf_burst %d", rc);
		for (unsigned int i = 0; i < N; i++)
			mism += memcmp(&out[i], &ref[i], sizeof(out[i])) != 0;
		CHECK(mism == 0, "%s: %lu mismatches", fg_gpu_mode_name(c.mode),
		      mism);
		printf("%-10s mbufs in GPU memory: %u compared, %lu mismatches\n",
		       fg_gpu_mode_name(c.mode), N, mism);
		fg_gpu_destroy(g);
	}
	rte_pktmbuf_free_bulk(m, N);
	fg_gpu_mempool_free(gp);
	rte_eal_cleanup();
	printf("%s\n", fails ? "FAILED" : "PASSED");
	return fails ? 1 : 0;
}
