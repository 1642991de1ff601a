/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * `flowgate --gpu[=graph|persistent]`: the GPU batch path in the daemon.
 *
 * Each worker owns one GPU context (gpu/fg_gpu.h).  A received burst goes
 * to the GPU before fg_worker_burst(): the kernel parses every frame and
 * computes the flow signature, the symmetric dispatch hash and owner, the
 * service and its Maglev answer, exactly as the CPU path does (gpu/ tests
 * compare them bit for bit).  The results land in each mbuf's private
 * area (FG_PARSED_GPU) and the worker goes straight to dispatch and the
 * conntrack bulk lookup; for a new flow it takes the GPU's service and
 * backend when they were computed from the service table it is using
 * (same fg_lb_table generation), else it recomputes them (gpu_stale).
 *
 * The GPU holds a copy of the service / Maglev tables.  A worker uploads
 * them itself, between bursts, when it sees a table generation it has not
 * uploaded yet: no lock, no cross-thread CUDA call, and the GPU's indexes
 * always refer to a table the worker can name.
 *
 * Frames are in host memory here (virtual devices, ordinary NICs): the
 * context stages and uploads them (FG_GPU_MEM_HOST).  A GPUDirect NIC
 * filling fg_gpu_mempool buffers would pass FG_GPU_MEM_DEVICE instead.
 * When anything fails, the burst runs on the CPU (gpu_errors,
 * gpu_fallback); after a CUDA error or a timeout the worker stops using
 * the GPU for good (one message on stderr).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fg_dp_private.h"
#include "fg_worker_private.h"

#ifdef FG_HAVE_GPU
#include "fg_gpu.h"
#include "fg_gpu_mempool.h"

_Static_assert(FG_GPU_RETA_SIZE == FG_RSS_RETA_SIZE, "RETA sizes differ");
_Static_assert(FG_GPU_NO_SERVICE == FG_GPUPATH_NO_SERVICE, "no-service differs");
_Static_assert(FG_GPU_NO_BACKEND == UINT32_MAX, "no-backend differs");
_Static_assert(FG_GPU_SERVICES_MAX >= FG_MAX_SERVICES, "GPU service limit");

/* host frames of one burst: jumbo frames fit (resubmitted when not) */
#define GPUPATH_STAGE_BYTES (FG_BURST * 10240u)

struct fg_gpupath {
	struct fg_gpu *ctx;
	uint64_t gen;           /* table generation on the GPU, 0 = none */
	bool broken;            /* stopped using the GPU after a hard error */
	struct rte_mbuf *m[FG_BURST];
	struct fg_gpu_result res[FG_BURST];
};

/* Builds the GPU's copy of @p lb: services in lb->services order (so the
 * GPU's service index is the table's), Maglev tables concatenated. */
static int tables_upload(struct fg_gpupath *gp, const struct fg_lb_table *lb)
{
	struct fg_gpu_service *svcs;
	uint32_t *tables = NULL;
	uint32_t n_entries = 0, off = 0;
	int rc;

	svcs = calloc(lb->n_services ? lb->n_services : 1, sizeof(*svcs));
	if (svcs == NULL)
		return -ENOMEM;
	for (uint32_t i = 0; i < lb->n_services; i++) {
		const struct fg_lb_service *s = &lb->services[i];

		if (s->n_usable && s->maglev)
			n_entries += s->maglev_size;
	}
	if (n_entries) {
		tables = malloc((size_t)n_entries * sizeof(*tables));
		if (tables == NULL) {
			free(svcs);
			return -ENOMEM;
		}
	}
	for (uint32_t i = 0; i < lb->n_services; i++) {
		const struct fg_lb_service *s = &lb->services[i];
		struct fg_gpu_service *g = &svcs[i];

		g->family = s->vip.family == AF_INET ? CT_V4 : CT_V6;
		g->proto = s->proto;
		g->port = s->port_be;
		memcpy(g->vip, s->vip.bytes, s->vip.family == AF_INET ? 4 : 16);
		g->table_off = off;
		/* no usable backend: m = 0, the GPU answers "no backend" as
		 * flow_new() does */
		g->m = s->n_usable && s->maglev ? s->maglev_size : 0;
		if (g->m)
			memcpy(tables + off, s->maglev, (size_t)g->m * sizeof(*tables));
		off += g->m;
	}
	rc = fg_gpu_services_set(gp->ctx, svcs, lb->n_services, tables, n_entries);
	free(tables);
	free(svcs);
	return rc;
}

static void gpupath_stop(struct fg_worker *w, struct fg_gpupath *gp, int rc)
{
	gp->broken = true;
	fprintf(stderr, "flowgate: worker %u: GPU path failed (%s); this worker "
		"goes on on the CPU\n", w->idx, strerror(-rc));
}

void fg_gpupath_classify(struct fg_worker *w, struct rte_mbuf **pkts,
			 uint16_t n)
{
	struct fg_gpupath *gp = w->gpu;
	const struct fg_lb_table *lb = __atomic_load_n(&w->dp->lb, __ATOMIC_ACQUIRE);
	uint16_t k = 0;
	int rc;

	if (unlikely(gp->broken)) {
		w->dc[FG_DC_gpu_fallback] += n;
		return;
	}
	if (unlikely(lb->generation != gp->gen)) {
		rc = tables_upload(gp, lb);
		if (rc < 0) {
			w->dc[FG_DC_gpu_errors]++;
			w->dc[FG_DC_gpu_fallback] += n;
			if (rc != -ENOMEM)
				gpupath_stop(w, gp, rc);
			return;
		}
		gp->gen = lb->generation;
		w->dc[FG_DC_gpu_table_uploads]++;
	}
	for (uint16_t i = 0; i < n; i++) {
		/* the GPU reads one segment; the CPU linearizes the rest */
		if (likely(pkts[i]->nb_segs == 1))
			gp->m[k++] = pkts[i];
		else
			w->dc[FG_DC_gpu_fallback]++;
	}
	if (k == 0)
		return;
	rc = fg_gpu_mbuf_burst(gp->ctx, gp->m, k, FG_GPU_MEM_HOST, gp->res);
	if (unlikely(rc < 0)) {
		w->dc[FG_DC_gpu_errors]++;
		w->dc[FG_DC_gpu_fallback] += k;
		if (rc == -EIO || rc == -ETIMEDOUT)
			gpupath_stop(w, gp, rc);
		return;
	}
	for (uint16_t j = 0; j < k; j++) {
		struct rte_mbuf *m = gp->m[j];
		struct fg_mbuf_priv *pr = fg_mbuf_priv(m);
		const struct fg_gpu_result *r = &gp->res[j];

		pr->pkt = r->pkt;
		pr->gpu_owner = r->worker;
		pr->gpu_service = r->service;
		pr->gpu_sig = r->sig;
		pr->gpu_rss = r->rss;
		pr->gpu_backend = r->backend;
		pr->gpu_gen = gp->gen;
		pr->parsed = FG_PARSED_GPU;
		w->cc[FG_CC_rx_packets]++;
		w->cc[FG_CC_rx_bytes] += m->pkt_len;
	}
	w->dc[FG_DC_gpu_packets] += k;
}

void fg_gpupath_free(struct fg_dp *dp)
{
	/* every resident kernel stops before any context frees memory: a
	 * cudaFree waits for all kernels on the device (gpu/fg_gpu.h) */
	for (unsigned int i = 0; i < dp->n_workers; i++)
		if (dp->workers[i] && dp->workers[i]->gpu)
			fg_gpu_stop(dp->workers[i]->gpu->ctx);
	for (unsigned int i = 0; i < dp->n_workers; i++) {
		struct fg_worker *w = dp->workers[i];

		if (w == NULL || w->gpu == NULL)
			continue;
		fg_gpu_destroy(w->gpu->ctx);
		free(w->gpu);
		w->gpu = NULL;
	}
}

int fg_gpupath_create(struct fg_dp *dp, const char *mode)
{
	struct fg_gpu_config cfg;
	char name[128] = "";
	int rc;

	fg_gpu_config_defaults(&cfg);
	if (mode == NULL || strcmp(mode, "graph") == 0)
		cfg.mode = FG_GPU_MODE_GRAPH;
	else if (strcmp(mode, "persistent") == 0)
		cfg.mode = FG_GPU_MODE_PERSISTENT;
	else {
		fprintf(stderr, "flowgate: --gpu=%s: the launch mode is graph or "
			"persistent\n", mode);
		return -EINVAL;
	}
	rc = fg_gpu_probe(name, sizeof(name));
	if (rc < 0) {
		fprintf(stderr, "flowgate: --gpu: no usable CUDA device (%s); run "
			"without --gpu\n", strerror(-rc));
		return rc;
	}
	cfg.max_batch = FG_BURST;
	cfg.stage_bytes = GPUPATH_STAGE_BYTES;
	/* a burst is one work item; two resident blocks per worker leave the
	 * GPU to the other workers' contexts */
	cfg.item_pkts = FG_BURST;
	cfg.persistent_blocks = 2;
	memcpy(cfg.reta, dp->reta, sizeof(cfg.reta));
	for (unsigned int i = 0; i < dp->n_workers; i++) {
		struct fg_gpupath *gp = calloc(1, sizeof(*gp));

		if (gp == NULL) {
			fg_gpupath_free(dp);
			return -ENOMEM;
		}
		rc = fg_gpu_create(&cfg, &gp->ctx);
		if (rc < 0) {
			free(gp);
			fg_gpupath_free(dp);
			fprintf(stderr, "flowgate: --gpu: GPU context for worker %u: "
				"%s\n", i, strerror(-rc));
			return rc;
		}
		dp->workers[i]->gpu = gp;
	}
	printf("flowgate: GPU batch path on %s, %s mode, one context per worker "
	       "(%u)\n", name, fg_gpu_mode_name(cfg.mode), dp->n_workers);
	return 0;
}

#else /* !FG_HAVE_GPU */

int fg_gpupath_create(struct fg_dp *dp, const char *mode)
{
	RTE_SET_USED(dp);
	RTE_SET_USED(mode);
	fprintf(stderr, "flowgate: --gpu: this binary was built without CUDA "
		"(meson -Dgpu=enabled with nvcc installed builds the GPU path)\n");
	return -ENOTSUP;
}

void fg_gpupath_free(struct fg_dp *dp)
{
	RTE_SET_USED(dp);
}

void fg_gpupath_classify(struct fg_worker *w, struct rte_mbuf **pkts,
			 uint16_t n)
{
	/* never called: w->gpu stays NULL without CUDA */
	w->dc[FG_DC_gpu_fallback] += n;
	RTE_SET_USED(pkts);
}

#endif /* FG_HAVE_GPU */
