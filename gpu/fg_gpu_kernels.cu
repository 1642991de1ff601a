/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * CUDA kernels of the GPU batch path: parse, CRC32C flow signature,
 * symmetric Toeplitz, RETA, service match and Maglev index.
 *
 * The parser is the CPU's own source, pkt/fg_pkt_parse.h, compiled here
 * over a frame view instead of a pointer (the reader macros below), so the
 * 64-byte struct fg_pkt is the CPU's by construction; tests/gpu still
 * compares every byte of every result against the CPU on the fixtures and
 * on >= 10M random frames (scripts/device-gpu.sh).
 *
 * Memory access: each thread first copies the first FG_GPU_WIN bytes of its
 * frame into a shared-memory window (4-byte loads when the frame is
 * 4-aligned) and parses from there; bytes past the window (long IPv6
 * extension chains) are loaded from global memory one at a time.  In the
 * persistent kernel all loads of frame bytes use ld.global.cg (L2, coherent
 * with the copy engine), because that kernel never ends and L1 is not
 * coherent with memory rewritten by later copies; descriptors and work
 * items live in mapped host memory and are read with volatile (.cv) loads.
 */
#include <stdint.h>

#include <cuda_runtime.h>

#include "fg_gpu_hash.h"
#include "fg_gpu_private.h"

/* Shared tables of one block. */
struct fg_gpu_smem {
	uint32_t crc[4][256];
	uint32_t rss[2][256];
	uint16_t reta[FG_GPU_RETA_SIZE];
	uint16_t svc_hash[FG_GPU_SVC_HASH_SIZE];
	/* frame windows while parsing; the persistent kernel then stages the
	 * block's results here to write them to host memory coalesced */
	uint32_t win[FG_GPU_THREADS * (FG_GPU_WIN_STRIDE / 4)] __attribute__((aligned(16)));
};
static_assert(FG_GPU_THREADS * sizeof(struct fg_gpu_result) <=
		      FG_GPU_THREADS * FG_GPU_WIN_STRIDE,
	      "result staging must fit in the windows");
static_assert(sizeof(struct fg_gpu_result) == 80, "five 16-byte stores");

/* A frame as the parser sees it: window in shared memory, rest global. */
template <bool PERSIST> struct fview {
	const uint8_t *g;
	const uint8_t *w;
	uint32_t wlen;

	__device__ __forceinline__ uint8_t operator[](uint32_t off) const
	{
		if (off < wlen)
			return w[off];
		if (PERSIST)
			return __ldcg(g + off);
		return __ldg(g + off);
	}
};

/* The parser's byte reader (see pkt/fg_pkt_parse.h) over a frame view. */
template <bool P>
__device__ __forceinline__ uint16_t fv_ld16(const fview<P> &f, uint32_t o)
{
	return (uint16_t)(f[o] | (uint16_t)f[o + 1] << 8);
}

template <bool P>
__device__ __forceinline__ uint32_t fv_ld32(const fview<P> &f, uint32_t o)
{
	return (uint32_t)f[o] | (uint32_t)f[o + 1] << 8 |
	       (uint32_t)f[o + 2] << 16 | (uint32_t)f[o + 3] << 24;
}

template <bool P>
__device__ __forceinline__ void fv_cp(uint8_t *dst, const fview<P> &f,
				      uint32_t o, uint32_t n)
{
#pragma unroll
	for (uint32_t i = 0; i < 16; i++)
		if (i < n)
			dst[i] = f[o + i];
}

#define FG_PKT_FN template <typename FgRd> __device__
#define FG_PKT_FN_INLINE template <typename FgRd> __device__ __forceinline__
#define FG_PKT_HELPER __device__ __forceinline__
#define FG_PKT_RD const FgRd &
#define FG_PKT_U8(r, o) ((r)[o])
#define FG_PKT_LD16(r, o) fv_ld16((r), (o))
#define FG_PKT_LD32(r, o) fv_ld32((r), (o))
#define FG_PKT_CP(d, r, o, n) fv_cp((d), (r), (o), (n))
#define FG_PKT_CSUM_BAD(r, o, n) 0 /* FG_PARSE_CHECK_CSUM: CPU only */
#define FG_PKT_LIKELY(x) __builtin_expect(!!(x), 1)
#define FG_PKT_UNLIKELY(x) __builtin_expect(!!(x), 0)
#include "fg_pkt_parse.h"

__device__ __forceinline__ uint16_t svc_lookup(const struct fg_gpu_kparams &p,
					       const struct fg_gpu_smem *s,
					       uint8_t family, uint8_t proto,
					       uint16_t port,
					       const uint32_t vip[4])
{
	uint32_t h = fg_gpu_svc_hash(family, proto, port, vip);

	for (uint32_t probe = 0; probe < FG_GPU_SVC_HASH_SIZE; probe++) {
		uint16_t idx = s->svc_hash[h];

		if (idx == FG_GPU_SVC_EMPTY)
			return FG_GPU_NO_SERVICE;
		const struct fg_gpu_service *sv = &p.svcs[idx];
		uint32_t v0, v1, v2, v3;

		memcpy(&v0, sv->vip, 4);
		memcpy(&v1, sv->vip + 4, 4);
		memcpy(&v2, sv->vip + 8, 4);
		memcpy(&v3, sv->vip + 12, 4);
		if (sv->family == family && sv->proto == proto &&
		    sv->port == port && v0 == vip[0] && v1 == vip[1] &&
		    v2 == vip[2] && v3 == vip[3])
			return idx;
		h = (h + 1) & (FG_GPU_SVC_HASH_SIZE - 1);
	}
	return FG_GPU_NO_SERVICE;
}

/* One packet: window fill, parse, hashes, dispatch, service, Maglev.
 * The result is left in @p r (registers); the caller stores it. */
template <bool P>
__device__ __forceinline__ void fg_gpu_one(const struct fg_gpu_kparams &p,
					   struct fg_gpu_smem *s,
					   uint64_t addr, uint32_t len,
					   struct fg_gpu_result &r)
{
	uint32_t *win = &s->win[threadIdx.x * (FG_GPU_WIN_STRIDE / 4)];
	uint32_t wlen = len < FG_GPU_WIN ? len : FG_GPU_WIN;
	const uint8_t *g = (const uint8_t *)addr;

	if ((addr & 3) == 0) {
		const uint32_t *gw = (const uint32_t *)g;
		uint32_t nw = wlen / 4, i;

		for (i = 0; i < nw; i++)
			win[i] = P ? __ldcg(gw + i) : __ldg(gw + i);
		if (wlen & 3) {
			uint32_t t = 0;

			for (uint32_t b = nw * 4; b < wlen; b++)
				t |= (uint32_t)(P ? __ldcg(g + b) : __ldg(g + b))
				     << (8 * (b & 3));
			win[nw] = t;
		}
	} else {
		uint8_t *wb = (uint8_t *)win;

		for (uint32_t b = 0; b < wlen; b++)
			wb[b] = P ? __ldcg(g + b) : __ldg(g + b);
	}

	memset(&r, 0, sizeof(r));
	fview<P> f = { g, (const uint8_t *)win, wlen };
	int kind = fg_pkt__parse(f, len, &r.pkt, 0);

	r.service = FG_GPU_NO_SERVICE;
	r.backend = FG_GPU_NO_BACKEND;
	if (kind != FG_PK_DROP) {
		uint32_t kw[12];
		unsigned int nw = r.pkt.family == CT_V6 ? 12 : 4;

		memcpy(kw, &r.pkt.key, sizeof(kw));
		r.sig = fg_gpu_crc32c_words(kw, nw, s->crc);
		/* fg_rss_hash(): a later fragment's ports (its IP ID) left
		 * out, as its first fragment is dispatched */
		if (kind == FG_PK_FRAG_LATER)
			kw[nw == 12 ? 8 : 2] = 0;
		r.rss = fg_gpu_toeplitz_words(kw, nw == 12 ? 9 : 3, s->rss);
		r.worker = s->reta[r.rss & (FG_GPU_RETA_SIZE - 1)];
		if (kind == FG_PK_FLOW || kind == FG_PK_ICMP_ERR) {
			uint32_t vip[4] = { 0, 0, 0, 0 };
			uint16_t dport;
			uint8_t kproto;

			if (r.pkt.family == CT_V6) {
				vip[0] = kw[4];
				vip[1] = kw[5];
				vip[2] = kw[6];
				vip[3] = kw[7];
				dport = r.pkt.key.k6.dport;
				kproto = r.pkt.key.k6.proto;
			} else {
				vip[0] = kw[1];
				dport = r.pkt.key.k4.dport;
				kproto = r.pkt.key.k4.proto;
			}
			uint16_t sv = svc_lookup(p, s, r.pkt.family, kproto,
						 dport, vip);
			if (sv != FG_GPU_NO_SERVICE) {
				uint32_t m = p.svcs[sv].m;

				r.service = sv;
				if (m)
					r.backend = __ldg(p.tables +
							  p.svcs[sv].table_off +
							  r.sig % m);
			}
		}
	}

}

/* 80 bytes as five 16-byte stores */
__device__ __forceinline__ void result_store(struct fg_gpu_result *dst,
					     const struct fg_gpu_result &r)
{
	const uint4 *s4 = (const uint4 *)&r;
	uint4 *d4 = (uint4 *)dst;
#pragma unroll
	for (int i = 0; i < 5; i++)
		d4[i] = s4[i];
}

__device__ __forceinline__ void load_tables(const struct fg_gpu_kparams &p,
					    struct fg_gpu_smem *s)
{
	uint32_t *crc = &s->crc[0][0];
	uint32_t *rss = &s->rss[0][0];

	for (unsigned int i = threadIdx.x; i < 1024; i += blockDim.x)
		crc[i] = p.crc_tab[i];
	for (unsigned int i = threadIdx.x; i < 512; i += blockDim.x)
		rss[i] = p.rss_tab[i];
	for (unsigned int i = threadIdx.x; i < FG_GPU_RETA_SIZE; i += blockDim.x)
		s->reta[i] = p.reta[i];
	for (unsigned int i = threadIdx.x; i < FG_GPU_SVC_HASH_SIZE;
	     i += blockDim.x)
		s->svc_hash[i] = p.svc_hash[i];
}

__global__ void __launch_bounds__(FG_GPU_THREADS)
fg_gpu_batch_kernel(struct fg_gpu_kparams p)
{
	__shared__ struct fg_gpu_smem s;
	uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;

	load_tables(p, &s);
	__syncthreads();
	if (i < p.n) {
		uint4 d = p.zc ? __ldcv((const uint4 *)p.frames + i)
			       : *((const uint4 *)p.frames + i);
		uint64_t addr = (uint64_t)d.x | (uint64_t)d.y << 32;

		struct fg_gpu_result r;

		fg_gpu_one<false>(p, &s, addr, d.z, r);
		result_store(&p.res[i], r);
	}
}

__device__ __forceinline__ uint32_t ld_acquire_sys(const uint32_t *a)
{
	uint32_t v;

	asm volatile("ld.acquire.sys.global.u32 %0, [%1];"
		     : "=r"(v)
		     : "l"(a)
		     : "memory");
	return v;
}

/* Poll load of a host-written word: acquire (flavor 0) or volatile; the
 * caller fences with __threadfence_system() after a volatile load saw the
 * value it waited for (flavor 1). */
__device__ __forceinline__ uint32_t ld_poll(const uint32_t *a, uint32_t fl)
{
	if (fl == 0)
		return ld_acquire_sys(a);
	return *(const volatile uint32_t *)a;
}

__device__ __forceinline__ uint32_t ld_relaxed_sys(const uint32_t *a)
{
	uint32_t v;

	asm volatile("ld.relaxed.sys.global.u32 %0, [%1];"
		     : "=r"(v)
		     : "l"(a)
		     : "memory");
	return v;
}

__device__ __forceinline__ uint64_t ld_relaxed_sys64(const uint64_t *a)
{
	uint64_t v;

	asm volatile("ld.relaxed.sys.global.u64 %0, [%1];"
		     : "=l"(v)
		     : "l"(a)
		     : "memory");
	return v;
}

__device__ __forceinline__ void st_release_sys(uint32_t *a, uint32_t v)
{
	asm volatile("st.release.sys.global.u32 [%0], %1;"
		     :
		     : "l"(a), "r"(v)
		     : "memory");
}

__device__ __forceinline__ uint32_t ld_acquire_gpu(const uint32_t *a)
{
	uint32_t v;

	asm volatile("ld.acquire.gpu.global.u32 %0, [%1];"
		     : "=r"(v)
		     : "l"(a)
		     : "memory");
	return v;
}

__device__ __forceinline__ void st_release_gpu(uint32_t *a, uint32_t v)
{
	asm volatile("st.release.gpu.global.u32 [%0], %1;"
		     :
		     : "l"(a), "r"(v)
		     : "memory");
}

/*
 * Persistent kernel: block b owns ring slots b, b + gridDim.x, ... and
 * visits them in order.  Items are numbered in publication order (item N
 * sits in slot N % ring_items; ring_items is a multiple of gridDim.x), so
 * block b's k-th item is N = b + k * gridDim.x (mod 2^32).
 *
 * Wake-up: the host doorbell is the count of items published so far (the
 * host adds k after writing k items).  Only thread 0 of block 0 reads host
 * memory while idle: it polls the doorbell and the stop flag over PCIe and
 * forwards them to device memory (epoch[0] = published count, epoch[1] =
 * stop; release, gpu scope).  Every other block polls those two words (L2
 * hits) and touches host memory only once its own next item is published
 * (epoch - N > 0).  Idle blocks never read PCIe: with every idle block
 * re-reading its slot status and the stop flag over PCIe on each doorbell
 * (132 blocks: 264 reads per burst) the reads queued behind each other and
 * set a flat ~150 us floor under every burst (device run 7).
 * The count is a level, not an edge: a block that looks late still sees
 * that its item was published, so no wake-up can be missed.
 * Ordering: host writes item -> status READY -> doorbell (lock add, release)
 * ; block 0 acquires doorbell (sys), releases epoch (gpu); block b acquires
 * epoch (gpu) and then reads the item: causality order is transitive, so the
 * item is visible.  The status word is still checked (READY) as a guard.
 *
 * Completion (done_fence 0): threads that wrote results fence them at
 * system scope, the block synchronises, thread 0 publishes DONE with a
 * release store.  done_fence 1: the block synchronises, thread 0 fences once
 * at system scope (cumulative over the stores the barrier ordered before
 * it) and publishes DONE.
 */
__device__ __forceinline__ void forward_doorbell(const struct fg_gpu_kparams &p,
						 uint32_t *last_db,
						 uint32_t *stop_fwd)
{
	/* both loads in flight at once: one PCIe round trip per poll */
	uint32_t st = *stop_fwd ? 1u : ld_relaxed_sys(&p.ctrl->stop);
	uint32_t db = ld_poll(&p.ctrl->doorbell, p.poll_flavor);

	if (db != *last_db) {
		if (p.poll_flavor)
			__threadfence_system();
		*last_db = db;
		st_release_gpu(&p.epoch[0], db);
	}
	if (st && !*stop_fwd) {
		*stop_fwd = 1;
		st_release_gpu(&p.epoch[1], 1);
	}
}

__device__ __forceinline__ uint64_t globaltimer(void)
{
	uint64_t t;

	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
	return t;
}

/* Most descriptors one thread holds: FG_GPU_ITEM_MAX / FG_GPU_THREADS. */
#define FG_GPU_DESC_PER_THREAD ((FG_GPU_ITEM_MAX + FG_GPU_THREADS - 1) / FG_GPU_THREADS)

__global__ void __launch_bounds__(FG_GPU_THREADS)
fg_gpu_persistent_kernel(struct fg_gpu_kparams p)
{
	__shared__ struct fg_gpu_smem s;
	__shared__ uint32_t go, n, ready;
	__shared__ uint64_t res;
	uint64_t t_wake = 0; /* thread 0 */
	uint32_t slot = blockIdx.x;
	uint32_t next = blockIdx.x;          /* number of my next item */
	uint32_t last_db = 0, stop_fwd = 0;  /* block 0, thread 0 */

	load_tables(p, &s);
	__syncthreads();
	for (;;) {
		if (threadIdx.x == 0) {
			unsigned int ns = 16;

			go = 0;
			for (;;) {
				if (blockIdx.x == 0)
					forward_doorbell(p, &last_db, &stop_fwd);
				uint32_t e = ld_acquire_gpu(&p.epoch[0]);

				if ((int32_t)(e - next) > 0) {
					t_wake = globaltimer();
					go = 1;
					break;
				}
				if (ld_acquire_gpu(&p.epoch[1]))
					break; /* stop */
				if (blockIdx.x != 0) {
					__nanosleep(ns);
					if (ns < 64)
						ns *= 2;
				}
			}
		}
		/* the barrier orders every thread's reads below after thread
		 * 0's acquire of the epoch (causality is transitive) */
		__syncthreads();
		if (!go)
			break;
		/* one PCIe round trip for the item words (thread 0) and the
		 * slot's descriptors (every thread, fixed address) */
		const uint4 *sd = (const uint4 *)p.slot_desc +
				  (size_t)slot * p.item_pkts;
		uint4 d[FG_GPU_DESC_PER_THREAD];

#pragma unroll
		for (uint32_t k = 0; k < FG_GPU_DESC_PER_THREAD; k++) {
			uint32_t j = threadIdx.x + k * FG_GPU_THREADS;

			if (j < p.item_pkts)
				d[k] = __ldcv(sd + j);
		}
		if (threadIdx.x == 0) {
			struct fg_gpu_item *it = &p.items[slot];
			uint32_t stt = ld_relaxed_sys(&it->status);
			uint32_t nn = ld_relaxed_sys(&it->n);
			uint64_t rs = ld_relaxed_sys64(&it->res);

			ready = stt == FG_GPU_ITEM_READY;
			if (!ready) {
				/* never expected (the host sets READY before
				 * ringing): wait for READY, then everyone
				 * re-reads the descriptors */
				while (ld_poll(&it->status, p.poll_flavor) !=
				       FG_GPU_ITEM_READY)
					;
				if (p.poll_flavor)
					__threadfence_system();
				nn = ld_relaxed_sys(&it->n);
				rs = ld_relaxed_sys64(&it->res);
			}
			n = nn;
			res = rs;
		}
		__syncthreads();
		if (!ready) {
#pragma unroll
			for (uint32_t k = 0; k < FG_GPU_DESC_PER_THREAD; k++) {
				uint32_t j = threadIdx.x + k * FG_GPU_THREADS;

				if (j < n)
					d[k] = __ldcv(sd + j);
			}
		}
		struct fg_gpu_result *rr = (struct fg_gpu_result *)res;
		uint4 *stage = (uint4 *)s.win;
		bool wrote = false;

		/* rounds of FG_GPU_THREADS packets: parse into registers,
		 * stage in shared memory, then write the round's results to
		 * host memory with consecutive 16-byte stores (whole PCIe
		 * lines instead of five scattered pieces per thread) */
#pragma unroll
		for (uint32_t k = 0; k < FG_GPU_DESC_PER_THREAD; k++) {
			uint32_t base = k * FG_GPU_THREADS;
			uint32_t j = base + threadIdx.x;
			struct fg_gpu_result r;

			if (base >= n)
				break;
			if (j < n)
				fg_gpu_one<true>(p, &s,
						 (uint64_t)d[k].x | (uint64_t)d[k].y << 32,
						 d[k].z, r);
			__syncthreads(); /* windows free */
			if (j < n)
				result_store((struct fg_gpu_result *)stage +
						     threadIdx.x, r);
			__syncthreads();
			uint32_t cnt = n - base < FG_GPU_THREADS ? n - base
								 : FG_GPU_THREADS;
			uint4 *dst = (uint4 *)(rr + base);

			for (uint32_t i = threadIdx.x; i < cnt * 5; i += FG_GPU_THREADS) {
				dst[i] = stage[i];
				wrote = true;
			}
			__syncthreads(); /* stage free for the next round */
		}
		if (!p.done_fence && wrote)
			__threadfence_system(); /* my result stores */
		__syncthreads();
		if (threadIdx.x == 0) {
			struct fg_gpu_item *it = &p.items[slot];

			if (p.done_fence)
				__threadfence_system(); /* the block's stores */
			it->t_wake = t_wake;
			it->t_done = globaltimer();
			st_release_sys(&it->status, FG_GPU_ITEM_DONE);
		}
		slot += gridDim.x;
		if (slot >= p.ring_items)
			slot = blockIdx.x;
		next += gridDim.x;
	}
}

/* Ping-pong: wait for ping == i, answer pong = i; ping == ~0u stops. */
__global__ void fg_gpu_pingpong_kernel(uint32_t *ping, uint32_t *pong,
				       uint32_t iters, uint32_t flavor)
{
	for (uint32_t i = 1; i <= iters; i++) {
		uint32_t v;

		do {
			v = ld_poll(ping, flavor);
		} while (v != i && v != ~0u);
		if (v == ~0u)
			return;
		if (flavor)
			__threadfence_system();
		st_release_sys(pong, i);
	}
}

extern "C" void *fg_gpu_pingpong_kernel_fn(void)
{
	return (void *)fg_gpu_pingpong_kernel;
}

extern "C" void *fg_gpu_batch_kernel_fn(void)
{
	return (void *)fg_gpu_batch_kernel;
}

extern "C" void *fg_gpu_persistent_kernel_fn(void)
{
	return (void *)fg_gpu_persistent_kernel;
}

extern "C" int fg_gpu_persistent_occupancy(int *blocks_per_sm)
{
	cudaError_t e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(
		blocks_per_sm, fg_gpu_persistent_kernel, FG_GPU_THREADS, 0);

	return e == cudaSuccess ? 0 : -1;
}
