/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * GPU batch path vs CPU reference, bit for bit.
 *
 *   test_gpu [--random N] [--fixtures DIR] [--seed S] [--timeout-us T]
 *
 * 1. API cases (table): bad arguments, -EBUSY, -EAGAIN, services limits.
 * 2. Hand-made edge frames + every frame of DIR/ *.pcap (the packet
 *    fixtures), through both launch modes x {host, GPU} frame memory.
 * 3. N random frames (fuzz generator: random headers, truncations,
 *    mutations; plus valid flows), in chunks of 1M, through both modes x
 *    both memories, in bursts of random size (1..65536).
 * Every result (80 bytes: parse + sig + rss + worker + service + backend)
 * is compared with memcmp against fg_gpu_ref_one(), which is built from
 * the real dataplane library.  Exit 0 = no mismatch, 1 = mismatch or
 * error, 77 = no GPU (skipped).
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda_runtime_api.h>

#include "fg_gpu.h"
#include "fg_gpu_ref.h"
#include "fg_maglev.h"
#include "fg_rss.h"

#define CHUNK (1u << 20)
#define MAX_SVCS 16

static struct fg_gpu_service svcs[MAX_SVCS];
static uint32_t n_svcs;
static uint32_t *tables;
static uint32_t n_entries;
static uint16_t reta[FG_GPU_RETA_SIZE];
static unsigned long failures;
/* One device arena for GPU-memory frames, allocated before the contexts
 * and freed after them: cudaFree synchronizes the device, which would wait
 * forever for a running persistent kernel. */
#define DEV_ARENA (512u << 20)
static uint8_t *dbuf;
static cudaStream_t upload;

#define CHECK(cond, ...)                                                    \
	do {                                                                \
		if (!(cond)) {                                              \
			fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
			fprintf(stderr, __VA_ARGS__);                       \
			fprintf(stderr, "\n");                              \
			failures++;                                         \
		}                                                           \
	} while (0)

/* ---- frame sets --------------------------------------------------------- */

struct frameset {
	uint8_t *buf;
	size_t used, cap;
	uint32_t *off, *len;
	uint32_t n, ncap;
};

static int fs_add(struct frameset *fs, const uint8_t *f, uint32_t len,
		  uint32_t misalign)
{
	if (fs->n == fs->ncap) {
		uint32_t nc = fs->ncap ? fs->ncap * 2 : 1024;

		fs->off = realloc(fs->off, nc * sizeof(*fs->off));
		fs->len = realloc(fs->len, nc * sizeof(*fs->len));
		if (!fs->off || !fs->len)
			return -ENOMEM;
		fs->ncap = nc;
	}
	if (fs->used + len + 8 > fs->cap) {
		size_t nc = fs->cap ? fs->cap * 2 : 1 << 20;

		while (nc < fs->used + len + 8)
			nc *= 2;
		fs->buf = realloc(fs->buf, nc);
		if (!fs->buf)
			return -ENOMEM;
		fs->cap = nc;
	}
	fs->used += misalign & 7;
	memcpy(fs->buf + fs->used, f, len);
	fs->off[fs->n] = (uint32_t)fs->used;
	fs->len[fs->n] = len;
	fs->used += len;
	fs->n++;
	return 0;
}

static void fs_free(struct frameset *fs)
{
	free(fs->buf);
	free(fs->off);
	free(fs->len);
	memset(fs, 0, sizeof(*fs));
}

/* Reads every record of a classic pcap file (either byte order). */
static int fs_add_pcap(struct frameset *fs, const char *path)
{
	FILE *f = fopen(path, "rb");
	uint32_t gh[6], rh[4];
	int swap, n = 0;
	uint8_t *pkt = malloc(262144);

	if (!f || !pkt) {
		free(pkt);
		if (f)
			fclose(f);
		return -errno;
	}
	if (fread(gh, 4, 6, f) != 6)
		goto bad;
	swap = gh[0] == 0xd4c3b2a1 || gh[0] == 0x4d3cb2a1;
	if (!swap && gh[0] != 0xa1b2c3d4 && gh[0] != 0xa1b23c4d)
		goto bad;
	while (fread(rh, 4, 4, f) == 4) {
		uint32_t cl = swap ? __builtin_bswap32(rh[2]) : rh[2];

		if (cl > 262144 || fread(pkt, 1, cl, f) != cl)
			goto bad;
		fs_add(fs, pkt, cl, (uint32_t)n);
		n++;
	}
	fclose(f);
	free(pkt);
	return n;
bad:
	fclose(f);
	free(pkt);
	return -EINVAL;
}

/* ---- hand-made edge frames (the parser's boundaries) -------------------- */

static void add_edges(struct frameset *fs)
{
	uint8_t b[9100];
	uint64_t rng = 0x1234567;
	uint32_t len;

	/* every truncation of a few well-formed frames of each family */
	for (int t = 0; t < 64; t++) {
		len = fg_gpu_gen_frame(&rng, b, sizeof(b), svcs, n_svcs,
				       FG_GPU_GEN_VALID);
		for (uint32_t l = 0; l <= len; l++)
			fs_add(fs, b, l, l);
	}
	/* jumbo IPv4 TCP: 9000 bytes */
	memset(b, 0, sizeof(b));
	b[12] = 0x08;
	b[14] = 0x45;
	b[16] = (9000 - 14) >> 8;
	b[17] = (9000 - 14) & 0xFF;
	b[22] = 64;
	b[23] = 6;
	memcpy(b + 30, svcs[0].vip, 4);
	memcpy(b + 36, &svcs[0].port, 2);
	b[46] = 0x50;
	fs_add(fs, b, 9000, 0);
	/* IPv6 with a long hop-by-hop header pushing L4 beyond the window */
	memset(b, 0, 400);
	b[12] = 0x86;
	b[13] = 0xDD;
	b[14] = 0x60;
	b[18] = 0;
	b[19] = 200 + 20;
	b[20] = 0;     /* hop-by-hop */
	b[21] = 64;
	memcpy(b + 38, svcs[n_svcs - 1].vip, 16);
	b[54] = 6;     /* next: TCP */
	b[55] = 24;    /* (24 + 1) * 8 = 200 bytes */
	memcpy(b + 54 + 200 + 2, &svcs[n_svcs - 1].port, 2);
	b[54 + 200 + 12] = 0x50;
	fs_add(fs, b, 14 + 40 + 200 + 20, 0);
	fs_add(fs, b, 14 + 40 + 200 + 20, 3);
	fs_add(fs, b, 14 + 40 + 200 + 10, 0);
}

/* ---- services ------------------------------------------------------------ */

static void services_init(uint64_t seed)
{
	static const uint32_t sizes[] = { 65537, 251, 65537, 1009, 0, 65537,
					  13, 65537, 65537, 509, 65537, 65537 };
	uint32_t weights[64];
	uint64_t keys[64];
	uint64_t r = seed | 1;

	n_svcs = 12;
	n_entries = 0;
	for (uint32_t i = 0; i < n_svcs; i++)
		n_entries += sizes[i];
	tables = malloc(n_entries * sizeof(*tables));
	n_entries = 0;
	for (uint32_t i = 0; i < n_svcs; i++) {
		struct fg_gpu_service *s = &svcs[i];
		uint32_t nb = 1 + i * 3 % 17;

		memset(s, 0, sizeof(*s));
		s->family = i < 8 ? CT_V4 : CT_V6;
		s->proto = i % 3 == 2 ? 17 : 6;
		s->port = (uint16_t)__builtin_bswap16((uint16_t)(80 + i % 4));
		if (s->family == CT_V4) {
			s->vip[0] = 10;
			s->vip[3] = (uint8_t)(1 + i % 5); /* some VIPs shared */
		} else {
			s->vip[0] = 0xfd;
			s->vip[15] = (uint8_t)(1 + i);
		}
		s->table_off = n_entries;
		s->m = sizes[i];
		for (uint32_t b = 0; b < nb; b++) {
			r ^= r << 13, r ^= r >> 7, r ^= r << 17;
			weights[b] = i == 6 ? 0 : 1 + (uint32_t)(r % 100);
			keys[b] = r;
		}
		if (s->m && fg_maglev_build(weights, keys, nb, s->m,
					    tables + n_entries) != 0) {
			fprintf(stderr, "fg_maglev_build failed\n");
			exit(1);
		}
		n_entries += s->m;
	}
	/* a duplicate of service 1 at the end: the first must win */
	svcs[n_svcs] = svcs[1];
	svcs[n_svcs].m = 13;
	svcs[n_svcs].table_off = svcs[6].table_off;
	n_svcs++;
	fg_rss_reta_fill(reta, 6);
}

/* ---- comparison ------------------------------------------------------------ */

struct run_stats {
	unsigned long compared, mismatches;
	unsigned long kinds[FG_PK_MAX + 1];
	unsigned long with_backend;
};

static void dump_mismatch(const uint8_t *f, uint32_t len,
			  const struct fg_gpu_result *g,
			  const struct fg_gpu_result *c)
{
	const uint8_t *gb = (const uint8_t *)g, *cb = (const uint8_t *)c;

	fprintf(stderr, "  frame len %u:", len);
	for (uint32_t i = 0; i < len && i < 96; i++)
		fprintf(stderr, "%s%02x", i % 16 ? "" : "\n    ", f[i]);
	fprintf(stderr, "\n  cpu kind %u drop %u  gpu kind %u drop %u\n",
		c->pkt.kind, c->pkt.drop, g->pkt.kind, g->pkt.drop);
	fprintf(stderr, "  differing bytes:");
	for (uint32_t i = 0; i < sizeof(*g); i++)
		if (gb[i] != cb[i])
			fprintf(stderr, " [%u] cpu %02x gpu %02x", i, cb[i], gb[i]);
	fprintf(stderr, "\n");
}

static int run_set(struct fg_gpu *g, const struct frameset *fs,
		   const struct fg_gpu_result *ref, enum fg_gpu_mem mem,
		   uint64_t *rng, struct run_stats *st)
{
	struct fg_gpu_frame *fr = malloc((size_t)fs->n * sizeof(*fr));
	struct fg_gpu_result *out = malloc((size_t)fs->n * sizeof(*out));
	int rc = 0;

	if (!fr || !out) {
		rc = -ENOMEM;
		goto done;
	}
	if (mem == FG_GPU_MEM_DEVICE) {
		/* pageable source: cudaMemcpy may return before the DMA is
		 * done; a stream sync guarantees it */
		if (fs->used > DEV_ARENA ||
		    cudaMemcpyAsync(dbuf, fs->buf, fs->used,
				    cudaMemcpyHostToDevice, upload) != cudaSuccess ||
		    cudaStreamSynchronize(upload) != cudaSuccess) {
			fprintf(stderr, "device upload failed\n");
			rc = -EIO;
			goto done;
		}
	}
	for (uint32_t i = 0; i < fs->n; i++) {
		fr[i].addr = (uint64_t)(uintptr_t)
			((mem == FG_GPU_MEM_DEVICE ? dbuf : fs->buf) + fs->off[i]);
		fr[i].len = fs->len[i];
		fr[i].rsvd = 0;
	}
	for (uint32_t i = 0; i < fs->n;) {
		uint32_t b = 1 + (uint32_t)((*rng >> 33) % 65536);

		*rng ^= *rng << 13, *rng ^= *rng >> 7, *rng ^= *rng << 17;
		if ((*rng & 7) == 0)
			b = 1024;
		if (b > fs->n - i)
			b = fs->n - i;
		rc = fg_gpu_burst_process(g, fr + i, b, mem, out + i);
		if (rc != (int)b) {
			fprintf(stderr, "fg_gpu_burst_process: %d\n", rc);
			rc = rc < 0 ? rc : -EIO;
			goto done;
		}
		i += b;
	}
	rc = 0;
	for (uint32_t i = 0; i < fs->n; i++) {
		st->compared++;
		st->kinds[ref[i].pkt.kind < FG_PK_MAX ? ref[i].pkt.kind : FG_PK_MAX]++;
		if (ref[i].backend != FG_GPU_NO_BACKEND)
			st->with_backend++;
		if (memcmp(&out[i], &ref[i], sizeof(out[i])) != 0) {
			if (st->mismatches < 5)
				dump_mismatch(fs->buf + fs->off[i], fs->len[i],
					      &out[i], &ref[i]);
			st->mismatches++;
		}
	}
done:
	free(fr);
	free(out);
	return rc;
}

/* variants: 0 graph, 1 persistent, 2 graph with zero-copy descriptors and
 * results, 3 persistent with volatile polls, 4 persistent with one
 * DONE fence per block (fg_gpu_config::done_fence) */
#define NVAR 5
static const char *const var_name[NVAR] = { "graph", "persistent", "graph-zc",
					    "persistent-vol", "persistent-f1" };
static struct fg_gpu *ctx[NVAR];

static int check_mode(int m, const char *what, const struct frameset *fs,
		      uint64_t *rng, struct run_stats st[NVAR][2])
{
	struct fg_gpu_result *ref = malloc((size_t)fs->n * sizeof(*ref));

	if (!ref)
		return -ENOMEM;
	for (uint32_t i = 0; i < fs->n; i++)
		fg_gpu_ref_one(fs->buf + fs->off[i], fs->len[i], reta, svcs,
			       n_svcs, tables, &ref[i]);
	for (int mem = 0; mem < 2; mem++) {
		int rc = run_set(ctx[m], fs, ref, (enum fg_gpu_mem)mem, rng,
				 &st[m][mem]);

		CHECK(rc == 0, "%s: mode %s mem %d: error %d", what,
		      var_name[m], mem, rc);
	}
	free(ref);
	return 0;
}

static void print_stats(const char *what, struct run_stats st[NVAR][2], int m)
{
	for (int mem = 0; mem < 2; mem++) {
			struct run_stats *s = &st[m][mem];

			printf("%-9s %-10s frames-in-%-6s compared %10lu "
			       "mismatches %lu  (flow %lu icmp_err %lu "
			       "frag_later %lu arp %lu nd %lu host %lu drop "
			       "%lu; with backend %lu)\n",
			       what, var_name[m],
			       mem ? "gpu" : "host", s->compared, s->mismatches,
			       s->kinds[FG_PK_FLOW], s->kinds[FG_PK_ICMP_ERR],
			       s->kinds[FG_PK_FRAG_LATER], s->kinds[FG_PK_ARP],
			       s->kinds[FG_PK_ND], s->kinds[FG_PK_HOST],
			       s->kinds[FG_PK_DROP], s->with_backend);
			if (s->mismatches)
				failures++;
		}
}

/* ---- API cases ------------------------------------------------------------- */

static void case_bad_config(void)
{
	struct fg_gpu_config c;
	struct fg_gpu *g = NULL;

	fg_gpu_config_defaults(&c);
	c.max_batch = 0;
	CHECK(fg_gpu_create(&c, &g) == -EINVAL, "max_batch 0 accepted");
	fg_gpu_config_defaults(&c);
	c.max_batch = FG_GPU_BATCH_LIMIT + 1;
	CHECK(fg_gpu_create(&c, &g) == -EINVAL, "max_batch too big accepted");
	fg_gpu_config_defaults(&c);
	c.mode = FG_GPU_MODE_PERSISTENT;
	c.item_pkts = FG_GPU_ITEM_MAX + 1;
	CHECK(fg_gpu_create(&c, &g) == -EINVAL, "item_pkts > 1024 accepted");
	fg_gpu_config_defaults(&c);
	c.mode = FG_GPU_MODE_PERSISTENT;
	c.persistent_blocks = 1000000;
	CHECK(fg_gpu_create(&c, &g) == -EINVAL,
	      "non-resident persistent grid accepted");
	fg_gpu_config_defaults(&c);
	c.device = 99;
	CHECK(fg_gpu_create(&c, &g) == -EINVAL, "device 99 accepted");
	CHECK(fg_gpu_create(NULL, &g) == -EINVAL, "NULL config accepted");
}

static void case_bursts(struct fg_gpu *g)
{
	uint8_t f[64] = { 0 };
	struct fg_gpu_frame fr = { (uint64_t)(uintptr_t)f, 64, 0 };
	const struct fg_gpu_result *r;
	struct fg_gpu_service many[FG_GPU_SERVICES_MAX + 1];

	CHECK(fg_gpu_burst_wait(g, &r) == -EAGAIN, "wait with nothing in flight");
	CHECK(fg_gpu_burst_submit(g, &fr, 0, FG_GPU_MEM_HOST) == -EINVAL,
	      "n = 0 accepted");
	CHECK(fg_gpu_burst_submit(g, NULL, 1, FG_GPU_MEM_HOST) == -EINVAL,
	      "NULL frames accepted");
	fr.rsvd = 1;
	CHECK(fg_gpu_burst_submit(g, &fr, 1, FG_GPU_MEM_HOST) == -EINVAL,
	      "rsvd != 0 accepted");
	fr.rsvd = 0;
	CHECK(fg_gpu_burst_submit(g, &fr, 1, FG_GPU_MEM_HOST) == 1, "submit");
	CHECK(fg_gpu_burst_submit(g, &fr, 1, FG_GPU_MEM_HOST) == -EBUSY,
	      "second submit while in flight");
	CHECK(fg_gpu_services_set(g, svcs, n_svcs, tables, n_entries) == -EBUSY,
	      "services_set while in flight");
	CHECK(fg_gpu_burst_wait(g, &r) == 1, "wait");
	CHECK(r[0].pkt.kind == FG_PK_DROP &&
	      r[0].pkt.drop == FG_DROP_unknown_ethertype, "zero frame verdict");
	memset(many, 0, sizeof(many));
	CHECK(fg_gpu_services_set(g, many, FG_GPU_SERVICES_MAX + 1, tables,
				  n_entries) == -EINVAL, "257 services accepted");
	many[0].family = 7;
	CHECK(fg_gpu_services_set(g, many, 1, tables, n_entries) == -EINVAL,
	      "family 7 accepted");
	many[0].family = CT_V4;
	many[0].m = 13;
	many[0].table_off = n_entries;
	CHECK(fg_gpu_services_set(g, many, 1, tables, n_entries) == -EINVAL,
	      "table out of range accepted");
	CHECK(fg_gpu_services_set(g, svcs, n_svcs, tables, n_entries) == 0,
	      "services_set");
}

int main(int argc, char **argv)
{
	unsigned long nrand = 200000;
	const char *fixdir = NULL;
	uint64_t seed = 0x5eed;
	uint32_t timeout_us = 0; /* 0 = default; compute-sanitizer needs more */
	int modes = 31;          /* bit per variant (var_name) */
	uint32_t blocks = 0;     /* persistent blocks (0 = one per SM) */
	char name[128];
	struct fg_gpu_config c;
	struct frameset fs = { 0 };
	struct run_stats st_fix[NVAR][2], st_rand[NVAR][2];
	uint64_t rng;
	int n, rc;
	time_t t0 = time(NULL);

	setvbuf(stdout, NULL, _IOLBF, 0);

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--random") && i + 1 < argc)
			nrand = strtoul(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--fixtures") && i + 1 < argc)
			fixdir = argv[++i];
		else if (!strcmp(argv[i], "--seed") && i + 1 < argc)
			seed = strtoull(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--mode") && i + 1 < argc) {
			i++;
			modes = !strcmp(argv[i], "graph") ? 1 :
				!strcmp(argv[i], "persistent") ? 2 :
				!strcmp(argv[i], "graph-zc") ? 4 :
				!strcmp(argv[i], "persistent-vol") ? 8 :
				!strcmp(argv[i], "persistent-f1") ? 16 :
				!strcmp(argv[i], "all") ? 31 : 0;
			if (!modes) {
				fprintf(stderr, "--mode graph|persistent|graph-zc|persistent-vol|persistent-f1|all\n");
				return 2;
			}
		} else if (!strcmp(argv[i], "--blocks") && i + 1 < argc)
			blocks = (uint32_t)strtoul(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--timeout-us") && i + 1 < argc)
			timeout_us = (uint32_t)strtoul(argv[++i], NULL, 0);
		else {
			fprintf(stderr, "usage: %s [--random N] [--fixtures DIR] "
					"[--seed S] [--timeout-us T] [--mode graph|persistent|graph-zc|persistent-vol|persistent-f1|all] [--blocks N]\n", argv[0]);
			return 2;
		}
	}
	n = fg_gpu_probe(name, sizeof(name));
	if (n < 0) {
		printf("SKIP: no CUDA GPU or driver on this machine "
		       "(fg_gpu_probe: %d); the GPU tests run on the device "
		       "machine (scripts/device-gpu.sh)\n", n);
		return 77;
	}
	printf("GPU: %s; random frames %lu, seed 0x%llx\n", name, nrand,
	       (unsigned long long)seed);
	services_init(seed);

	if (cudaMalloc((void **)&dbuf, DEV_ARENA) != cudaSuccess ||
	    cudaStreamCreateWithFlags(&upload, cudaStreamNonBlocking) !=
		    cudaSuccess) {
		fprintf(stderr, "cudaMalloc of the frame arena failed\n");
		return 1;
	}
	case_bad_config();
	/* One mode at a time: a graph-mode context is never used beside a
	 * resident persistent kernel (and compute-sanitizer, which
	 * serializes kernels, can run either). */
	for (int m = 0; m < NVAR; m++) {
		if (!(modes & (1 << m)))
			continue;
		fg_gpu_config_defaults(&c);
		c.mode = (m == 1 || m == 3 || m == 4) ? FG_GPU_MODE_PERSISTENT
						      : FG_GPU_MODE_GRAPH;
		c.graph_zero_copy = m == 2;
		c.poll_flavor = m == 3;
		c.done_fence = m == 4;
		if (timeout_us)
			c.wait_timeout_us = timeout_us;
		c.persistent_blocks = blocks;
		memcpy(c.reta, reta, sizeof(reta));
		rc = fg_gpu_create(&c, &ctx[m]);
		if (rc) {
			fprintf(stderr, "fg_gpu_create(%s): %d\n",
				var_name[m], rc);
			return 1;
		}
		case_bursts(ctx[m]);

		/* fixtures + edge frames */
		memset(st_fix, 0, sizeof(st_fix));
		add_edges(&fs);
		if (fixdir) {
			DIR *d = opendir(fixdir);
			struct dirent *e;
			int files = 0, frames = 0;

			while (d && (e = readdir(d)) != NULL) {
				char p[4096];
				size_t l = strlen(e->d_name);

				if (l < 6 || strcmp(e->d_name + l - 5, ".pcap"))
					continue;
				snprintf(p, sizeof(p), "%s/%s", fixdir, e->d_name);
				rc = fs_add_pcap(&fs, p);
				CHECK(rc >= 0, "reading %s: %d", p, rc);
				if (rc > 0) {
					files++;
					frames += rc;
				}
			}
			if (d)
				closedir(d);
			printf("fixtures: %d frames from %d pcap files in %s\n",
			       frames, files, fixdir);
		}
		rng = seed;
		check_mode(m, "fixtures", &fs, &rng, st_fix);
		fs_free(&fs);
		print_stats("fixtures", st_fix, m);

		/* random frames, in chunks (same frames for both modes) */
		memset(st_rand, 0, sizeof(st_rand));
		rng = seed * 0x9E3779B97F4A7C15ull | 1;
		for (unsigned long done = 0; done < nrand;) {
			uint32_t chunk = nrand - done > CHUNK ? CHUNK
							      : (uint32_t)(nrand - done);
			uint8_t b[2048];

			for (uint32_t i = 0; i < chunk; i++) {
				unsigned int fl = (i & 7) == 0 ? FG_GPU_GEN_VALID
							       : FG_GPU_GEN_FUZZ;
				uint32_t len = fg_gpu_gen_frame(&rng, b, sizeof(b),
								svcs, n_svcs, fl);

				if (fs_add(&fs, b, len, (uint32_t)rng) != 0) {
					fprintf(stderr, "out of memory\n");
					return 1;
				}
			}
			check_mode(m, "random", &fs, &rng, st_rand);
			fs_free(&fs);
			done += chunk;
		}
		print_stats("random", st_rand, m);
		fg_gpu_destroy(ctx[m]);
		ctx[m] = NULL;
	}
	cudaFree(dbuf);
	printf("%s: %lu failures (%ld s)\n", failures ? "FAILED" : "PASSED",
	       failures, (long)(time(NULL) - t0));
	return failures ? 1 : 0;
}
