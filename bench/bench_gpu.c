/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * flowgate-bench gpu [--json] [--min B] [--max B] [--seconds S] [--threads N]
 *                    [--item-pkts P]
 *
 * For batch sizes 32 .. 65536 (powers of two) and both launch modes:
 *  - kernel_pps: the kernel alone, frames and descriptors already in GPU
 *    memory (graph mode: graph of 16 kernel launches over 16 rotating
 *    frame sets = 64 MiB, more than L2, replayed; CUDA-event timed);
 *  - gpu_mem: one burst = descriptors host->GPU, kernel, results GPU->host
 *    (graph) or work items through the persistent ring; frames in GPU
 *    memory.  pps = batch / mean burst time; p50/p99 burst latency;
 *  - host_mem: as gpu_mem, but frames start in host memory (copied into
 *    pinned staging + host->GPU transfer included).
 * Next to them, in the same run: the CPU path (fg_gpu_ref_one: parse +
 * CRC32C signature + Toeplitz + RETA + service match + Maglev) on one core
 * and on all cores, over the same frames.
 *
 * Producer: there is no GPUDirect NIC on the device machine; frames are
 * generated on the host (64-byte IPv4 / 78-byte IPv6 TCP/UDP flows) and
 * copied into GPU memory with cudaMemcpy before timing ("host-copy
 * producer").  Every JSON object says so.
 */
/* Built only with the GPU path (fg_gpu_dep defines FG_HAVE_GPU); otherwise
 * this file is empty and flowgate-bench reports 'gpu' as not built. */
#ifdef FG_HAVE_GPU
#include <sched.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fg_gpu.h"
#include "fg_gpu_ref.h"
#include "fg_maglev.h"
#include "fg_rss.h"

#define SETS 16
#define SET_FRAMES 65536u
#define STRIDE 128u
#define TARGET_PPS 148.8e6

static struct fg_gpu_service svcs[8];
static uint32_t n_svcs, *tables, n_entries;
static uint16_t reta[FG_GPU_RETA_SIZE];
static uint32_t *lens; /* frame lengths (64 B IPv4, 78 B IPv6) */

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void services_init(void)
{
	uint32_t w[16];
	uint64_t k[16];
	uint32_t m = 65537;

	n_svcs = 4;
	tables = malloc((size_t)n_svcs * m * sizeof(*tables));
	for (uint32_t i = 0; i < n_svcs; i++) {
		struct fg_gpu_service *s = &svcs[i];

		memset(s, 0, sizeof(*s));
		s->family = i < 3 ? CT_V4 : CT_V6;
		s->proto = i == 2 ? 17 : 6;
		s->port = __builtin_bswap16((uint16_t)(i == 1 ? 443 : 80));
		s->vip[0] = s->family == CT_V4 ? 10 : 0xfd;
		s->vip[s->family == CT_V4 ? 3 : 15] = (uint8_t)(1 + i);
		s->table_off = i * m;
		s->m = m;
		for (uint32_t b = 0; b < 16; b++) {
			w[b] = 1 + b % 3;
			k[b] = 0x1000 * (i + 1) + b;
		}
		fg_maglev_build(w, k, 16, m, tables + i * m);
	}
	n_entries = n_svcs * m;
	fg_rss_reta_fill(reta, 8);
}

/* ---- CPU path ------------------------------------------------------------ */

struct cpu_arg {
	const uint8_t *frames;
	uint32_t first, n;
	double seconds;
	unsigned long done;
	uint32_t sink;
};

static void *cpu_worker(void *p)
{
	struct cpu_arg *a = p;
	struct fg_gpu_result r;
	double t_end = now_s() + a->seconds;

	a->done = 0;
	do {
		for (uint32_t i = 0; i < a->n; i++) {
			fg_gpu_ref_one(a->frames + (size_t)i * STRIDE,
				       lens[a->first + i], reta,
				       svcs, n_svcs, tables, &r);
			a->sink += r.backend ^ r.worker;
		}
		a->done += a->n;
	} while (now_s() < t_end);
	return NULL;
}

static double cpu_pps(const uint8_t *frames, uint32_t n, int threads,
		      double seconds)
{
	pthread_t th[256];
	struct cpu_arg args[256];
	double t0, t1;
	unsigned long total = 0;
	uint32_t per = n / (uint32_t)threads;

	if (threads > 256)
		threads = 256;
	t0 = now_s();
	for (int i = 0; i < threads; i++) {
		args[i].frames = frames + (size_t)i * per * STRIDE;
		args[i].first = (uint32_t)i * per;
		args[i].n = per;
		args[i].seconds = seconds;
		args[i].sink = 0;
		pthread_create(&th[i], NULL, cpu_worker, &args[i]);
	}
	for (int i = 0; i < threads; i++) {
		pthread_join(th[i], NULL);
		total += args[i].done;
	}
	t1 = now_s();
	return (double)total / (t1 - t0);
}

/* ---- GPU bursts ------------------------------------------------------------- */

struct lat {
	double pps, p50_us, p99_us;
	double span_p50_us, span_p99_us; /* persistent: GPU-side span */
	int err;
};

static struct lat burst_lat(struct fg_gpu *g, struct fg_gpu_frame *const sets[SETS],
			    uint32_t b, enum fg_gpu_mem mem, double seconds)
{
	struct lat L = { 0, 0, 0, 0, 0, 0 };
	uint32_t reps = 0, cap = 200000;
	double *t = malloc(cap * sizeof(double));
	double *sp = malloc(cap * sizeof(double));
	double total = 0, t_end;
	const struct fg_gpu_result *r;

	/* warm-up */
	for (int i = 0; i < 20; i++) {
		if (fg_gpu_burst_submit(g, sets[i % SETS], b, mem) != (int)b ||
		    fg_gpu_burst_wait(g, &r) != (int)b) {
			L.err = -EIO;
			free(t);
			free(sp);
			return L;
		}
	}
	t_end = now_s() + seconds;
	while ((reps < 200 || now_s() < t_end) && reps < cap) {
		double t0 = now_s();
		int a = fg_gpu_burst_submit(g, sets[reps % SETS], b, mem);
		int w = fg_gpu_burst_wait(g, &r);
		double dt = now_s() - t0;

		if (a != (int)b || w != (int)b) {
			L.err = a < 0 ? a : w < 0 ? w : -EIO;
			break;
		}
		sp[reps] = (double)fg_gpu_last_gpu_span_ns(g) * 1e-9;
		t[reps++] = dt;
		total += dt;
	}
	if (reps) {
		qsort(t, reps, sizeof(double), cmp_d);
		L.p50_us = t[reps / 2] * 1e6;
		L.p99_us = t[(uint32_t)(reps * 0.99)] * 1e6;
		L.pps = (double)b * reps / total;
		qsort(sp, reps, sizeof(double), cmp_d);
		L.span_p50_us = sp[reps / 2] * 1e6;
		L.span_p99_us = sp[(uint32_t)(reps * 0.99)] * 1e6;
	}
	free(t);
	free(sp);
	return L;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: flowgate-bench gpu [--json] [--min B] [--max B] "
		"[--seconds S] [--threads N] [--item-pkts P]\n"
		"  batch sizes: powers of two from --min (32) to --max (65536)\n"
		"  --seconds: time per measurement (0.2)\n"
		"  --threads: CPU baseline threads (default: all online cores)\n"
		"  --item-pkts: persistent mode packets per work item (default 256)\n");
}

int bench_gpu_main(int argc, char **argv)
{
	int json = 0, threads = (int)sysconf(_SC_NPROCESSORS_ONLN);
	uint32_t bmin = 32, bmax = 65536, item_pkts = 0; /* 0: default */
	double secs = 0.2;
	char name[128];
	uint8_t *host;
	void *dev = NULL;
	struct fg_gpu_frame *hsets[SETS], *dsets[SETS], *dsets_dev[SETS];
	uint64_t rng = 0xbe11c4;
	double cpu1, cpuN, max_kernel = 0, p99_1024 = -1;
	const char *p99_1024_mode = "none";
	uint32_t cross_gpu = 0, cross_host = 0, cross_kernel1 = 0, best_b = 0;
	int rc;
	FILE *o = stdout;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--json"))
			json = 1;
		else if (!strcmp(argv[i], "--min") && i + 1 < argc)
			bmin = (uint32_t)atoi(argv[++i]);
		else if (!strcmp(argv[i], "--max") && i + 1 < argc)
			bmax = (uint32_t)atoi(argv[++i]);
		else if (!strcmp(argv[i], "--seconds") && i + 1 < argc)
			secs = atof(argv[++i]);
		else if (!strcmp(argv[i], "--threads") && i + 1 < argc)
			threads = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--item-pkts") && i + 1 < argc)
			item_pkts = (uint32_t)atoi(argv[++i]);
		else {
			usage();
			return !strcmp(argv[i], "--help") ? 0 : 2;
		}
	}
	if (bmin < 1 || bmax > SET_FRAMES || bmin > bmax || threads < 1 ||
	    secs <= 0 || item_pkts > FG_GPU_ITEM_MAX) {
		usage();
		return 2;
	}
	if (fg_gpu_probe(name, sizeof(name)) < 0) {
		fprintf(stderr, "flowgate-bench gpu: no CUDA GPU or driver on "
				"this machine; run it on the device machine "
				"(scripts/device-gpu.sh)\n");
		if (json)
			printf("{\"bench\":\"gpu\",\"skipped\":\"no CUDA GPU\"}\n");
		return 77;
	}
	services_init();

	/* frames: SETS x 65536 valid flows (7/8 IPv4 64 B, 1/8 IPv6 78 B),
	 * 128 B apart: 128 MiB, far more than L2 */
	host = aligned_alloc(4096, (size_t)SETS * SET_FRAMES * STRIDE);
	lens = malloc((size_t)SETS * SET_FRAMES * sizeof(*lens));
	for (uint32_t i = 0; i < SETS * SET_FRAMES; i++) {
		uint8_t *f = host + (size_t)i * STRIDE;

		memset(f, 0, STRIDE);
		lens[i] = fg_gpu_gen_frame(&rng, f, STRIDE, svcs, n_svcs,
					   FG_GPU_GEN_VALID);
	}
	rc = fg_gpu_dev_alloc((size_t)SETS * SET_FRAMES * STRIDE, &dev);
	if (rc) {
		fprintf(stderr, "GPU allocation failed: %d\n", rc);
		return 1;
	}
	for (int s = 0; s < SETS; s++) {
		hsets[s] = malloc(SET_FRAMES * sizeof(struct fg_gpu_frame));
		dsets[s] = malloc(SET_FRAMES * sizeof(struct fg_gpu_frame));
		for (uint32_t i = 0; i < SET_FRAMES; i++) {
			hsets[s][i].addr = (uint64_t)(uintptr_t)
				(host + ((size_t)s * SET_FRAMES + i) * STRIDE);
			hsets[s][i].len = lens[(size_t)s * SET_FRAMES + i];
			hsets[s][i].rsvd = 0;
		}
		rc = fg_gpu_frames_upload(hsets[s], SET_FRAMES,
					  (uint8_t *)dev + (size_t)s * SET_FRAMES * STRIDE,
					  (size_t)SET_FRAMES * STRIDE, STRIDE, dsets[s]);
		if (rc) {
			fprintf(stderr, "upload failed: %d\n", rc);
			return 1;
		}
		void *dd = NULL;

		/* descriptors in GPU memory too, for the kernel-only replay */
		rc = fg_gpu_dev_alloc(SET_FRAMES * sizeof(struct fg_gpu_frame), &dd);
		if (rc)
			return 1;
		dsets_dev[s] = dd;
	}
	{
		/* the upload helper copies the descriptor array as one frame */
		for (int s = 0; s < SETS; s++) {
			struct fg_gpu_frame one = {
				(uint64_t)(uintptr_t)dsets[s],
				SET_FRAMES * (uint32_t)sizeof(struct fg_gpu_frame), 0 };
			struct fg_gpu_frame dummy;

			rc = fg_gpu_frames_upload(&one, 1, dsets_dev[s],
						  SET_FRAMES * sizeof(struct fg_gpu_frame),
						  SET_FRAMES * sizeof(struct fg_gpu_frame),
						  &dummy);
			if (rc) {
				fprintf(stderr, "descriptor upload: %d\n", rc);
				return 1;
			}
		}
	}

	/* host <-> GPU signalling floor (persistent mode's latency floor) */
	double rtt50[2] = { -1, -1 }, rtt99[2] = { -1, -1 };

	for (uint32_t f = 0; f < 2; f++)
		if (fg_gpu_signal_rtt(f, 2000, &rtt50[f], &rtt99[f]) != 0)
			fprintf(stderr, "signal rtt flavor %u failed\n", f);
	if (!json)
		fprintf(o, "host<->GPU signal round trip: acquire.sys p50 %.2f "
			   "p99 %.2f us; volatile p50 %.2f p99 %.2f us\n",
			rtt50[0], rtt99[0], rtt50[1], rtt99[1]);
	cpu1 = cpu_pps(host, SETS * SET_FRAMES, 1, secs * 2);
	cpuN = cpu_pps(host, SETS * SET_FRAMES, threads, secs * 2);
	/* the latency loops run on one pinned core (the last): no migration
	 * between submit and wait; the CPU threads above ran unpinned */
	{
		cpu_set_t cs;
		long last = sysconf(_SC_NPROCESSORS_ONLN) - 1;

		CPU_ZERO(&cs);
		CPU_SET(last > 0 ? (int)last : 0, &cs);
		if (pthread_setaffinity_np(pthread_self(), sizeof(cs), &cs) != 0)
			fprintf(stderr, "flowgate-bench gpu: cannot pin to cpu %ld; "
					"latency loops unpinned\n", last);
	}

	if (json)
		fprintf(o, "{\"bench\":\"gpu\",\"device\":\"%s\","
			   "\"producer\":\"host-copy (no GPUDirect NIC): frames "
			   "generated on the host and cudaMemcpy'd into GPU memory "
			   "before timing\",\"frames\":\"7/8 IPv4 64 B, 1/8 IPv6 78 B, "
			   "TCP/UDP, 3/4 to a VIP\","
			   "\"cpu_threads\":%d,\"cpu_pps_1core\":%.0f,"
			   "\"cpu_pps_all_cores\":%.0f,"
			   "\"signal_rtt_acquire_p50_us\":%.2f,"
			   "\"signal_rtt_acquire_p99_us\":%.2f,"
			   "\"signal_rtt_volatile_p50_us\":%.2f,"
			   "\"signal_rtt_volatile_p99_us\":%.2f,\"results\":[",
			name, threads, cpu1, cpuN, rtt50[0], rtt99[0], rtt50[1],
			rtt99[1]);
	else
		fprintf(o, "GPU %s; producer: host copy (no GPUDirect NIC)\n"
			   "CPU path: %.1f Mpps on 1 core, %.1f Mpps on %d "
			   "threads\n%-10s %6s %10s %10s %8s %8s %10s %8s %8s\n",
			name, cpu1 / 1e6, cpuN / 1e6, threads, "mode", "batch",
			"kern_Mpps", "gpu_Mpps", "p50_us", "p99_us",
			"host_Mpps", "p50_us", "p99_us");

	int first = 1;

	/* variants: graph, graph with zero-copy descriptors/results,
	 * persistent (acquire polls), persistent-vol (volatile polls),
	 * persistent-f1 (one DONE fence per block); one context at a time */
	static const char *const vname[5] = { "graph", "graph-zc", "persistent",
					      "persistent-vol", "persistent-f1" };

	for (int v = 0; v < 5; v++) {
		struct fg_gpu_config c;
		struct fg_gpu *g;
		int m = v >= 2 ? FG_GPU_MODE_PERSISTENT : FG_GPU_MODE_GRAPH;

		fg_gpu_config_defaults(&c);
		c.mode = (enum fg_gpu_mode)m;
		c.graph_zero_copy = v == 1;
		c.poll_flavor = v == 3;
		c.done_fence = v == 4;
		if (item_pkts)
			c.item_pkts = item_pkts;
		c.max_batch = SET_FRAMES;
		memcpy(c.reta, reta, sizeof(reta));
		rc = fg_gpu_create(&c, &g);
		if (rc == 0)
			rc = fg_gpu_services_set(g, svcs, n_svcs, tables,
						 n_entries);
		if (rc) {
			fprintf(stderr, "fg_gpu_create(%s): %d\n", vname[v], rc);
			return 1;
		}
		for (uint32_t b = bmin; b <= bmax; b *= 2) {
			double kns = 0, kpps = 0;
			struct lat gl, hl;

			if (m == FG_GPU_MODE_GRAPH) {
				uint32_t it = 3;

				/* calibrate iterations to ~secs */
				rc = fg_gpu_kernel_replay(g,
					(const struct fg_gpu_frame *const *)dsets_dev,
					SETS, b, it, &kns);
				if (rc == 0 && kns > 0) {
					it = (uint32_t)(secs * 1e9 / (kns * SETS));
					if (it < 3)
						it = 3;
					rc = fg_gpu_kernel_replay(g,
						(const struct fg_gpu_frame *const *)dsets_dev,
						SETS, b, it, &kns);
				}
				if (rc) {
					fprintf(stderr, "kernel replay: %d\n", rc);
					return 1;
				}
				kpps = b / (kns * 1e-9);
			}
			gl = burst_lat(g, dsets, b, FG_GPU_MEM_DEVICE, secs);
			hl = burst_lat(g, hsets, b, FG_GPU_MEM_HOST, secs);
			if (gl.err || hl.err) {
				fprintf(stderr, "burst error %d / %d\n", gl.err,
					hl.err);
				return 1;
			}
			if (m == FG_GPU_MODE_PERSISTENT)
				kpps = gl.pps; /* the mode's kernel is the ring */
			if (kpps > max_kernel) {
				max_kernel = kpps;
				best_b = b;
			}
			if (m == FG_GPU_MODE_PERSISTENT && b == 1024 &&
			    (p99_1024 < 0 || gl.p99_us < p99_1024)) {
				p99_1024 = gl.p99_us;
				p99_1024_mode = vname[v];
			}
			if (!cross_gpu && gl.pps > cpuN)
				cross_gpu = b;
			if (!cross_host && hl.pps > cpuN)
				cross_host = b;
			if (!cross_kernel1 && kpps > cpu1)
				cross_kernel1 = b;
			if (json)
				fprintf(o, "%s{\"mode\":\"%s\",\"batch\":%u,"
					   "\"kernel_pps\":%.0f,"
					   "\"gpu_mem_pps\":%.0f,\"gpu_mem_p50_us\":%.2f,"
					   "\"gpu_mem_p99_us\":%.2f,"
					   "\"host_mem_pps\":%.0f,\"host_mem_p50_us\":%.2f,"
					   "\"host_mem_p99_us\":%.2f,"
					   "\"gpu_span_p50_us\":%.2f,"
					   "\"gpu_span_p99_us\":%.2f}",
					first ? "" : ",", vname[v], b,
					kpps, gl.pps, gl.p50_us, gl.p99_us, hl.pps,
					hl.p50_us, hl.p99_us, gl.span_p50_us,
					gl.span_p99_us);
			else
				fprintf(o, "%-10s %6u %10.1f %10.1f %8.1f %8.1f "
					   "%10.1f %8.1f %8.1f\n",
					vname[v], b, kpps / 1e6,
					gl.pps / 1e6, gl.p50_us, gl.p99_us,
					hl.pps / 1e6, hl.p50_us, hl.p99_us);
			fflush(o);
			first = 0;
		}
		fg_gpu_destroy(g);
	}
	if (json)
		fprintf(o, "],\"max_kernel_pps\":%.0f,\"max_kernel_batch\":%u,"
			   "\"sustains_148_8_mpps\":%s,"
			   "\"crossover_batch_gpu_mem_vs_cpu_all\":%u,"
			   "\"crossover_batch_host_mem_vs_cpu_all\":%u,"
			   "\"crossover_batch_kernel_vs_cpu_1core\":%u,"
			   "\"persistent_p99_us_batch_1024\":%.2f,"
			   "\"persistent_p99_batch_1024_mode\":\"%s\"}\n",
			max_kernel, best_b,
			max_kernel >= TARGET_PPS ? "true" : "false", cross_gpu,
			cross_host, cross_kernel1, p99_1024, p99_1024_mode);
	else
		fprintf(o, "max kernel %.1f Mpps at batch %u (148.8 Mpps: %s); "
			   "crossover vs CPU all cores: gpu-mem batch %u, "
			   "host-mem batch %u (0 = never); persistent p99 at "
			   "1024: %.1f us\n",
			max_kernel / 1e6, best_b,
			max_kernel >= TARGET_PPS ? "yes" : "no", cross_gpu,
			cross_host, p99_1024);
	for (int s = 0; s < SETS; s++) {
		free(hsets[s]);
		free(dsets[s]);
		fg_gpu_dev_free(dsets_dev[s]);
	}
	fg_gpu_dev_free(dev);
	free(host);
	free(lens);
	free(tables);
	return 0;
}
#endif /* FG_HAVE_GPU */
