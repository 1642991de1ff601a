/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Connection-table shard: two open-addressing tables (IPv4 16 B keys, IPv6
 * 48 B keys), each slot a key and its entry (layout: ct_private.h), the
 * slot's index the flow's position.  Everything here
 * runs on the owning lcore only; see ct.h for the threading model.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>

#include <rte_branch_prediction.h>
#include <rte_byteorder.h>
#include <rte_errno.h>
#include <rte_hash_crc.h>
#include <rte_malloc.h>
#include <rte_prefetch.h>

#include "ct_private.h"
#include "ct_rec.h"

const char *const ct_state_names[CT_ST_MAX] = {
#define CT_X(n) #n,
	CT_STATE_LIST(CT_X)
#undef CT_X
};
const char *const ct_evict_names[CT_EVICT_MAX] = {
#define CT_X(n, ...) #n,
	CT_EVICT_LIST(CT_X)
#undef CT_X
};
const char *const ct_insfail_names[CT_INSFAIL_MAX] = {
#define CT_X(n, ...) #n,
	CT_INSFAIL_LIST(CT_X)
#undef CT_X
};

const char *const ct_destroy_names[CT_DESTROY_MAX] = {
	"expired", "evicted", "deleted",
};

/* ct_entry::pickup_t: 16 bits of a clock 64 coarse units (~32-64 ms) per
 * step, so it wraps after more than half an hour, far beyond any probation. */
#define CT_PICKUP_SHIFT 6

static const uint32_t ct_default_timeouts_ms[CT_ST_MAX] = {
	[CT_ST_NONE] = 0,
	[CT_ST_SYN_SENT] = 30 * 1000,
	[CT_ST_SYN_RECV] = 30 * 1000,
	[CT_ST_ESTABLISHED] = 900 * 1000,
	[CT_ST_FIN_WAIT] = 30 * 1000,
	[CT_ST_CLOSE_WAIT] = 30 * 1000,
	[CT_ST_LAST_ACK] = 30 * 1000,
	[CT_ST_TIME_WAIT] = 30 * 1000,
	[CT_ST_CLOSE] = 10 * 1000,
	[CT_ST_UDP] = 30 * 1000,
	[CT_ST_UDP_STREAM] = 120 * 1000,
	[CT_ST_OTHER] = 30 * 1000,
	[CT_ST_PICKUP] = 10 * 1000,
};

void
ct_config_defaults(struct ct_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->name = "ct";
	cfg->capacity = CT_DEFAULT_CAPACITY;
	cfg->capacity_v6 = 0;
	cfg->socket_id = SOCKET_ID_ANY;
	cfg->hz = 1000;
	memcpy(cfg->timeouts.ms, ct_default_timeouts_ms, sizeof(cfg->timeouts.ms));
	cfg->expire_budget = 256;
	cfg->flood_rate = 0;
	cfg->pickup_pkts = 4;
	cfg->pickup_ms = 2000;
	cfg->hash_fn = NULL;
}

uint32_t
ct_hash_crc(const void *key, uint32_t len)
{
	if ((len & 7) == 0)
		return ct_key_sig(key, len);
	return rte_hash_crc(key, len, CT_HASH_SEED);
}

static inline uint32_t
ct_hash(const struct ct_shard *s, const void *key, uint32_t len)
{
	if (unlikely(s->cfg.hash_fn != NULL))
		return s->cfg.hash_fn(key, len, CT_HASH_SEED);
	return ct_key_sig(key, len);
}

uint32_t
ct_key4_hash(const struct ct_shard *s, const struct ct_key4 *k)
{
	return ct_hash(s, k, sizeof(*k));
}

uint32_t
ct_key6_hash(const struct ct_shard *s, const struct ct_key6 *k)
{
	return ct_hash(s, k, sizeof(*k));
}

static inline uint64_t
ct_ms_to_ticks(uint64_t hz, uint32_t ms)
{
	return (hz * (uint64_t)ms) / 1000;
}

void
ct_set_timeouts(struct ct_shard *s, const struct ct_timeouts *t)
{
	for (int i = 0; i < CT_ST_MAX; i++) {
		uint32_t ms = t->ms[i] ? t->ms[i] : ct_default_timeouts_ms[i];
		s->cfg.timeouts.ms[i] = ms;
		s->to_ticks[i] = ct_ms_to_ticks(s->cfg.hz, ms);
	}
}

void
ct_set_flood_rate(struct ct_shard *s, uint32_t per_sec)
{
	s->cfg.flood_rate = per_sec;
	s->flood_win_len = s->cfg.hz / 16 ? s->cfg.hz / 16 : 1;
	s->flood_win_limit = per_sec ? (per_sec + 15) / 16 : 0;
	s->flood_win_count = 0;
}

/* ---- creation ------------------------------------------------------- */

static size_t
ct_heap_bytes(int socket)
{
	struct rte_malloc_socket_stats st;
	size_t total = 0;

	if (socket == SOCKET_ID_ANY) {
		for (unsigned int i = 0; i < RTE_MAX_NUMA_NODES; i++)
			if (rte_malloc_get_socket_stats(i, &st) == 0)
				total += st.heap_allocsz_bytes;
		return total;
	}
	if (rte_malloc_get_socket_stats(socket, &st) == 0)
		total = st.heap_allocsz_bytes;
	return total;
}

/* Largest capacity of a family: its table (1.75x) stays below 2^31
 * slots, so a position is never CT_NONE. */
#define CT_CAP_MAX (1u << 29)

static int
ct_fam_init(struct ct_shard *s, struct ct_fam *f, enum ct_family fam,
	    uint32_t cap, uint32_t rcap)
{
	char name[32];
	uint32_t size;

	snprintf(name, sizeof(name), "%.24s_%s", s->name, fam == CT_V4 ? "4" : "6");
	f->key_len = fam == CT_V4 ? sizeof(struct ct_key4) : sizeof(struct ct_key6);
	f->slot_shift = fam == CT_V4 ? 6 : 7;
	/*
	 * 1.75 slots per flow of capacity, so at most 4/7 of the slots live
	 * when full: linear probing then reads 1.7 slots per hit and 3.2 per
	 * miss on average at worst, 1.5 and 2.5 at half load (Knuth), and the
	 * line after the home slot is the one the adjacent-line prefetcher
	 * brings anyway.  Capacity is exact: a full table is `cap` entries.
	 * The size is no power of two (homes come from a multiply, not a
	 * mask), so memory follows the capacity: a power of two took 1.5 to
	 * 3 slots per flow of capacity.  1.5 slots (105 B per IPv4 flow)
	 * made a 95%-full table's misses 30% slower (flowgate-bench
	 * conntrack, miss_mpps).
	 */
	f->fsize = RTE_ALIGN_CEIL(cap + cap / 4 * 3, 16u);
	size = f->fsize + RTE_ALIGN_CEIL(rcap + rcap / 4 * 3, 16u);
	f->cap = cap;
	f->rcap = rcap;
	f->size = size;
	f->slot = rte_zmalloc_socket(name, (size_t)size << f->slot_shift,
				     RTE_CACHE_LINE_SIZE, s->cfg.socket_id);
	if (f->slot == NULL)
		return -ENOMEM;
	f->meta = rte_zmalloc_socket(name, (size_t)size * sizeof(ct_meta_t),
				     RTE_CACHE_LINE_SIZE, s->cfg.socket_id);
	f->born = rte_zmalloc_socket(name, (size_t)size * sizeof(uint32_t),
				     RTE_CACHE_LINE_SIZE, s->cfg.socket_id);
	if (f->meta == NULL || f->born == NULL)
		return -ENOMEM;
	f->ed_head[0] = f->ed_tail[0] = f->ed_head[1] = f->ed_tail[1] = CT_NONE;
	return 0;
}

struct ct_shard *
ct_shard_create(const struct ct_config *cfg)
{
	struct ct_shard *s;
	size_t before;
	int ret;

	if (cfg == NULL || cfg->capacity < 8 || cfg->capacity > CT_CAP_MAX ||
	    cfg->capacity_v6 > CT_CAP_MAX || cfg->capacity_reply > CT_CAP_MAX ||
	    (cfg->capacity_reply != 0 && cfg->capacity_reply < 8) || cfg->hz == 0 ||
	    cfg->name == NULL || strlen(cfg->name) > 24) {
		rte_errno = EINVAL;
		return NULL;
	}
	before = ct_heap_bytes(cfg->socket_id);
	s = rte_zmalloc_socket("ct_shard", sizeof(*s), RTE_CACHE_LINE_SIZE,
			       cfg->socket_id);
	if (s == NULL) {
		rte_errno = ENOMEM;
		return NULL;
	}
	s->cfg = *cfg;
	snprintf(s->name, sizeof(s->name), "%s", cfg->name);
	s->cfg.name = s->name;
	if (s->cfg.expire_budget == 0)
		s->cfg.expire_budget = 256;
	while ((cfg->hz >> (s->tshift + 1)) >= 1000)
		s->tshift++;
	ct_set_timeouts(s, &cfg->timeouts);
	ct_set_flood_rate(s, cfg->flood_rate);
	s->pickup_units = (uint32_t)(ct_ms_to_ticks(cfg->hz, cfg->pickup_ms) >>
				     (s->tshift + CT_PICKUP_SHIFT));
	/* One pass of the sweep over each family every CT_SWEEP_PERIOD_S
	 * seconds: every entry is looked at within that time of its expiry,
	 * even on a table that is never hit again (a lookup checks expiry
	 * itself). */
	s->sweep_period = cfg->hz * CT_SWEEP_PERIOD_S;

	uint32_t cap6 = cfg->capacity_v6 ? cfg->capacity_v6
					 : RTE_MAX(cfg->capacity / 4, 8u);

	ret = ct_fam_init(s, &s->fam[CT_V4], CT_V4, cfg->capacity,
			  cfg->capacity_reply ? cfg->capacity_reply
					      : RTE_MAX(cfg->capacity / 2, 8u));
	if (ret == 0)
		ret = ct_fam_init(s, &s->fam[CT_V6], CT_V6, cap6,
				  RTE_MAX((cfg->capacity_reply ? cfg->capacity_reply / 4
							       : cap6 / 2), 8u));
	if (ret != 0) {
		ct_shard_free(s);
		rte_errno = -ret;
		return NULL;
	}
	s->mem_bytes = ct_heap_bytes(cfg->socket_id) - before;
	return s;
}

void
ct_shard_free(struct ct_shard *s)
{
	if (s == NULL)
		return;
	for (int i = 0; i < CT_FAMILIES; i++) {
		rte_free(s->fam[i].slot);
		rte_free(s->fam[i].meta);
		rte_free(s->fam[i].born);
	}
	rte_free(s);
}

/* ---- small helpers -------------------------------------------------- */

static inline struct ct_fam *
ct_fam_of(struct ct_shard *s, const struct ct_entry *e)
{
	return &s->fam[(e->flags & CT_F_V6) ? CT_V6 : CT_V4];
}

static inline uint8_t *
ct_slot(const struct ct_fam *f, uint32_t pos)
{
	return f->slot + ((size_t)pos << f->slot_shift);
}

/* ct_slot() where the key length is a constant (the lookup's): the shift
 * then is one too, not a load of slot_shift and a variable shift. */
static __rte_always_inline uint8_t *
ct_slot_k(const struct ct_fam *f, uint32_t pos, uint32_t klen)
{
	return f->slot + ((size_t)pos << (klen > sizeof(struct ct_key4) ? 7 : 6));
}

static inline const void *
ct_fam_key(const struct ct_fam *f, uint32_t pos)
{
	return ct_slot(f, pos);
}

static inline struct ct_entry *
ct_ent(const struct ct_fam *f, uint32_t pos)
{
	return (struct ct_entry *)(void *)(ct_slot(f, pos) + f->key_len);
}

static inline uint32_t
ct_pos_of(const struct ct_fam *f, const struct ct_entry *e)
{
	return (uint32_t)(((const uint8_t *)e - f->slot - f->key_len) >> f->slot_shift);
}

/* Home slot of a signature in the forward (@p reply false) or the reply
 * region: the signature mixed (Fibonacci), then scaled to the region by
 * its high bits (a multiply-shift, no division), so a worker whose flows
 * share low signature bits (software RSS on them) still spreads over the
 * whole region. */
static inline uint32_t
ct_home(const struct ct_fam *f, uint32_t sig, bool reply)
{
	uint32_t lo = reply ? f->fsize : 0, n = reply ? f->size - f->fsize : f->fsize;

	return lo + (uint32_t)(((uint64_t)(sig * 0x9E3779B1u) * n) >> 32);
}

/* The slot after @p p, wrapping within its region. */
static inline uint32_t
ct_next(const struct ct_fam *f, uint32_t p)
{
	p++;
	return p == f->fsize ? 0 : p == f->size ? f->fsize : p;
}

/* The slot @p d before @p p, wrapping within its region (d < its size). */
static inline uint32_t
ct_back(const struct ct_fam *f, uint32_t p, uint32_t d)
{
	uint32_t lo = p < f->fsize ? 0 : f->fsize;
	uint32_t hi = p < f->fsize ? f->fsize : f->size;

	return p - lo >= d ? p - d : p + (hi - lo) - d;
}

/* The occupant's displacement from home, kept in its key's last pad
 * bytes (ct_private.h). */
static inline uint32_t
ct_disp(const uint8_t *slot, uint32_t klen)
{
	uint32_t w;

	memcpy(&w, slot + klen - 4, 4);
	return w >> CT_META_SHIFT;
}

static inline void
ct_disp_set(uint8_t *slot, uint32_t klen, uint32_t disp)
{
	uint32_t w;

	memcpy(&w, slot + klen - 4, 4);
	w = (w & ((1u << CT_META_SHIFT) - 1)) | (disp << CT_META_SHIFT);
	memcpy(slot + klen - 4, &w, 4);
}

static inline uint32_t
ct_ovf(const struct ct_fam *f, uint32_t pos)
{
	return f->meta[pos] >> 8;
}

/* One more (@p up) or one fewer key probes past @p pos; a saturated
 * count stays. */
static inline void
ct_ovf_step(struct ct_fam *f, uint32_t pos, bool up)
{
	uint32_t o = ct_ovf(f, pos);

	if (o == CT_OVF_SAT)
		return;
	o = up ? o + 1 : o - 1;
	f->meta[pos] = (ct_meta_t)((f->meta[pos] & 0xff) | o << 8);
}

/* A stored key equals a lookup key: every byte but the meta bytes (len
 * a constant after inlining). */
static __rte_always_inline bool
ct_key_eq(const void *stored, const void *key, uint32_t len)
{
	uint64_t x = 0, u, v;
	uint32_t i;

	for (i = 0; i + 8 < len; i += 8) {
		memcpy(&u, (const uint8_t *)stored + i, 8);
		memcpy(&v, (const uint8_t *)key + i, 8);
		x |= u ^ v;
	}
	memcpy(&u, (const uint8_t *)stored + i, 8);
	memcpy(&v, (const uint8_t *)key + i, 8);
	x |= (u ^ v) & CT_KEY_LAST_MASK;
	return x == 0;
}

/* A copy of the stored key at @p pos as callers know keys: pad zeroed. */
static inline void
ct_key_copy(const struct ct_fam *f, uint32_t pos, void *out)
{
	memcpy(out, ct_slot(f, pos), f->key_len);
	ct_disp_set(out, f->key_len, 0);
}

/* Position of a live key, or CT_NONE: from its home slot on, while the
 * slot in hand does not hold the key but some key probes past it.  A
 * slot's line is read only when its tag matches. */
static __rte_always_inline uint32_t
ct_find(const struct ct_fam *f, const void *key, uint32_t home, uint8_t tag,
	uint32_t klen)
{
	uint32_t p = home;

	for (uint32_t d = 0; d < f->size; d++) {
		ct_meta_t m = f->meta[p];

		if ((uint8_t)m == tag && likely(ct_key_eq(ct_slot(f, p), key, klen)))
			return p;
		if ((m >> 8) == 0)
			return CT_NONE;
		p = ct_next(f, p);
	}
	return CT_NONE;
}

/* A key's position in either region (@p both; else the flows' region
 * only), or CT_NONE. */
static inline uint32_t
ct_find_key(const struct ct_fam *f, const void *key, uint32_t sig, bool both)
{
	uint32_t p = CT_NONE;

	for (int r = 0; r < 2 && p == CT_NONE; r++) {
		if (r == 1 && (!both || f->rcount == 0))
			break;
		p = f->key_len == sizeof(struct ct_key4)
			    ? ct_find(f, key, ct_home(f, sig, r), CT_TAG(sig),
				      sizeof(struct ct_key4))
			    : ct_find(f, key, ct_home(f, sig, r), CT_TAG(sig),
				      sizeof(struct ct_key6));
	}
	return p;
}

static inline uint32_t
ct_coarse(const struct ct_shard *s, uint64_t t)
{
	return (uint32_t)(t >> s->tshift);
}

static inline uint16_t
ct_pickup_clock(const struct ct_shard *s, uint64_t t)
{
	return (uint16_t)(t >> (s->tshift + CT_PICKUP_SHIFT));
}

/* Ticks since the flow at @p pos was inserted (coarse: 2^tshift ticks,
 * modulo 2^32 of those units: exact up to ~24 days, see ct_flow) */
static inline uint64_t
ct_born_age(const struct ct_shard *s, const struct ct_fam *f, uint32_t pos,
	    uint64_t now)
{
	uint32_t units = ct_coarse(s, now) - f->born[pos];

	return (uint64_t)units << s->tshift;
}

/* A flow's creation time as ct_fam::born keeps it: never CT_BORN_REPLY
 * (a flow born then reads as born one unit earlier). */
static inline uint32_t
ct_born_stamp(const struct ct_shard *s, uint64_t now)
{
	uint32_t b = ct_coarse(s, now);

	return b == CT_BORN_REPLY ? b - 1 : b;
}

/* Whether slot @p pos holds a flow: its tag (ct_check keeps the tag and
 * the entry's state in step), read without the slot's line. */
static inline bool
ct_is_live(const struct ct_fam *f, uint32_t pos)
{
	return (uint8_t)f->meta[pos] != 0;
}

/* The first live slot in [p, end), or end: four slots' tags at a time, so
 * that a table's random pattern of free and live slots costs a branch per
 * live slot, not a mispredicted one per slot (a walk over a quarter-full
 * table spent more on its free slots than on its flows). */
static inline uint32_t
ct_next_live(const struct ct_fam *f, uint32_t p, uint32_t end)
{
#if RTE_BYTE_ORDER == RTE_LITTLE_ENDIAN
	for (; p + 4 <= end; p += 4) {
		uint64_t w;

		memcpy(&w, &f->meta[p], sizeof(w));
		/* each slot's tag is the low byte of its 16-bit pair */
		w &= 0x00ff00ff00ff00ffull;
		if (w != 0)
			return p + (uint32_t)(__builtin_ctzll(w) >> 4);
	}
#endif
	for (; p < end; p++)
		if (ct_is_live(f, p))
			return p;
	return end;
}

/* The end of a scan of at most @p n slots from @p p that stops at the
 * forward region's end (the sweep and the walk, which visit flows, wrap
 * or move on there). */
static inline uint32_t
ct_span_end(const struct ct_fam *f, uint32_t p, uint32_t n)
{
	return f->fsize - p > n ? p + n : f->fsize;
}

/* The live entry at @p pos of a family, or NULL (free or out of range). */
static inline struct ct_entry *
ct_live_at(const struct ct_fam *f, uint32_t pos)
{
	if (pos >= f->size || !ct_is_live(f, pos))
		return NULL;
	return ct_ent(f, pos);
}

const void *
ct_key_at(const struct ct_shard *s, enum ct_family fam, uint32_t pos)
{
	const struct ct_fam *f = &s->fam[fam];

	return ct_live_at(f, pos) != NULL ? ct_fam_key(f, pos) : NULL;
}

struct ct_entry *
ct_entry_at(struct ct_shard *s, enum ct_family fam, uint32_t pos)
{
	return ct_live_at(&s->fam[fam], pos);
}

/* The early-drop list an entry is on, if on one: a NAT flow's (its
 * CT_F_NAT, set by ct_link_peer, which moves it) or the others'. */
static inline unsigned int
ct_ed_list(const struct ct_entry *e)
{
	return (e->flags & CT_F_NAT) ? 1 : 0;
}

/* An entry's eight td/ed bytes, cleared: no window known, no links. */
static inline void
ct_td_clear(struct ct_entry *e)
{
	e->ed_prev = 0;
	e->ed_next = 0;
}

/* Takes @p pos off its early-drop list; true if it was on it.  Its eight
 * bytes then hold no window (CT_TD_VALID clear) until one is set. */
static inline bool
ct_ed_unlink(struct ct_fam *f, uint32_t pos)
{
	struct ct_entry *e = ct_ent(f, pos);
	unsigned int l = ct_ed_list(e);

	if (!(e->flags & CT_F_LISTED))
		return false;
	if (e->ed_prev != CT_NONE)
		ct_ent(f, e->ed_prev)->ed_next = e->ed_next;
	else
		f->ed_head[l] = e->ed_next;
	if (e->ed_next != CT_NONE)
		ct_ent(f, e->ed_next)->ed_prev = e->ed_prev;
	else
		f->ed_tail[l] = e->ed_prev;
	e->flags &= (uint8_t)~CT_F_LISTED;
	ct_td_clear(e);
	return true;
}

/* Puts @p pos at the tail of its early-drop list (it must not be on one):
 * its window, if it had one, is gone. */
static inline void
ct_ed_push(struct ct_fam *f, uint32_t pos)
{
	struct ct_entry *e = ct_ent(f, pos);
	unsigned int l = ct_ed_list(e);

	e->flags |= CT_F_LISTED;
	e->ed_next = CT_NONE;
	e->ed_prev = f->ed_tail[l];
	if (f->ed_tail[l] != CT_NONE)
		ct_ent(f, f->ed_tail[l])->ed_next = pos;
	else
		f->ed_head[l] = pos;
	f->ed_tail[l] = pos;
}

/* Frees the slot at @p pos: its key no longer probes past the slots
 * from its home to it. */
static void
ct_slot_free(struct ct_fam *f, uint32_t pos)
{
	uint8_t *sl = ct_slot(f, pos);
	uint32_t disp = ct_disp(sl, f->key_len);

	ct_ent(f, pos)->state = CT_ST_NONE;
	ct_ent(f, pos)->flags = 0;
	ct_disp_set(sl, f->key_len, 0);
	f->meta[pos] &= 0xff00;
	for (uint32_t q = ct_back(f, pos, disp); q != pos; q = ct_next(f, q))
		ct_ovf_step(f, q, false);
}

/* Bookkeeping of a slot whose flow leaves, then the slot freed. */
static void
ct_remove_one(struct ct_shard *s, struct ct_fam *f, uint32_t pos)
{
	struct ct_entry *e = ct_ent(f, pos);

	if (!(e->flags & CT_F_REPLY)) {
		ct_ed_unlink(f, pos);
		s->st.live[e->state]--;
	}
	if (pos < f->fsize)
		f->count--;
	else
		f->rcount--;
	s->removals++;
	e->peer = CT_NONE;
	ct_slot_free(f, pos);
}

/* Removes an entry and its NAT peer; returns the forward entry's state. */
static enum ct_state
ct_remove_flow(struct ct_shard *s, struct ct_fam *f, uint32_t pos,
	       enum ct_destroy_reason why)
{
	struct ct_entry *e = ct_ent(f, pos);
	uint32_t peer = e->peer;
	uint32_t head = (e->flags & CT_F_REPLY) && peer != CT_NONE ? peer : pos;
	enum ct_state st = ct_ent(f, head)->state;

	if (unlikely(s->destroy_fn != NULL)) {
		struct ct_key6 k;

		ct_key_copy(f, head, &k);
		s->destroy_fn(s->destroy_arg, (enum ct_family)(f - s->fam), &k,
			      ct_ent(f, head), why);
	}
	ct_remove_one(s, f, pos);
	if (peer != CT_NONE && ct_live_at(f, peer) != NULL &&
	    ct_ent(f, peer)->peer == pos)
		ct_remove_one(s, f, peer);
	return st;
}

void
ct_set_state_cb(struct ct_shard *s, ct_state_fn fn, void *arg)
{
	s->state_fn = fn;
	s->state_arg = arg;
}

uint64_t
ct_entry_life(const struct ct_shard *s, const struct ct_entry *e, uint64_t now)
{
	const struct ct_fam *f = &s->fam[(e->flags & CT_F_V6) ? CT_V6 : CT_V4];
	const uint8_t *b = (const uint8_t *)e;
	size_t off;

	if (b < f->slot + f->key_len)
		return 0;
	off = (size_t)(b - f->slot - f->key_len);
	if (off >> f->slot_shift >= f->size || (off & ((1u << f->slot_shift) - 1)) != 0)
		return 0;
	if (e->flags & CT_F_REPLY) {
		/* the flow's birth is its forward entry's */
		if (e->peer == CT_NONE || e->peer >= f->size)
			return 0;
		return ct_born_age(s, f, e->peer, now);
	}
	return ct_born_age(s, f, ct_pos_of(f, e), now);
}

void
ct_set_destroy_cb(struct ct_shard *s, ct_destroy_fn fn, void *arg)
{
	s->destroy_fn = fn;
	s->destroy_arg = arg;
}

/* The entry that carries state and expiry for this flow. */
static inline struct ct_entry *
ct_flow_head(struct ct_fam *f, struct ct_entry *e)
{
	if (unlikely(e->flags & CT_F_REPLY) && e->peer != CT_NONE)
		return ct_ent(f, e->peer);
	return e;
}

static inline bool
ct_expired(const struct ct_shard *s, const struct ct_entry *e, uint64_t now)
{
	return now - e->last_seen > s->to_ticks[e->state] &&
	       (int64_t)(now - e->last_seen) > 0;
}

/* ---- lookup --------------------------------------------------------- */

/* A miss: a new flow's insert will write the first free slot from its
 * home in the flows' region and its creation time -- own their lines. */
static __rte_always_inline void
ct_prefetch_insert(const struct ct_fam *f, uint32_t home, uint32_t klen)
{
	uint32_t p = home;

	for (uint32_t d = 0; (uint8_t)f->meta[p] != 0 && d < 8; d++)
		p = ct_next(f, p);
	rte_prefetch0_write(ct_slot_k(f, p, klen));
	rte_prefetch0_write(&f->born[p]);
}

/*
 * A burst of one family in three passes over one region (metadata lines
 * requested, then the slot lines whose tags match, then the compares), so
 * the burst's misses overlap; a hit's entry is in the line just compared.
 * The forward region takes the whole burst (@p idx NULL: key i is the
 * i-th), the reply region the keys the forward region missed (@p idx
 * lists them).  Liveness from the line compared too: a reply entry (NAT)
 * mirrors its flow's state and is refreshed with it, so only one that
 * looks expired needs its forward entry for the exact answer.
 */
static __rte_always_inline uint64_t
ct_lookup_region(struct ct_shard *s, struct ct_fam *f, bool reply,
		 const uint8_t *idx, unsigned int n, uint64_t settled,
		 const void *const *keys,
		 const uint32_t *sigs, uint64_t now, struct ct_entry **entries,
		 uint32_t *positions, uint32_t klen)
{
	uint32_t cand[CT_BURST_MAX];
	uint64_t hits = 0;

#define CT_I(k) (idx != NULL ? idx[k] : (k))
	/* 1. every key's metadata line (cached, mostly: 2 bytes a slot), and
	 * its home slot's (first) line, where most keys live (about 1 -
	 * load/2 of them by linear probing's arithmetic: 3 in 4 at the
	 * bench's load of 0.46), requested with the metadata rather than a
	 * round trip after it (bench/RESULTS.md in git, session 17: at 1M flows NAT
	 * +3-8%, DSR 0-2%; neutral at 1K) */
	for (unsigned int k = 0; k < n; k++) {
		cand[k] = ct_home(f, sigs[CT_I(k)], reply);
		rte_prefetch0(&f->meta[cand[k]]);
		rte_prefetch0(ct_slot_k(f, cand[k], klen));
	}
	/* 2. the first slot whose tag matches, if any: its line requested
	 * for every key of the burst before any is compared */
	for (unsigned int k = 0; k < n; k++) {
		uint8_t tag = CT_TAG(sigs[CT_I(k)]);
		uint32_t home = cand[k], p = home, d, found = CT_NONE;

		for (d = 0; d < f->size; d++) {
			ct_meta_t m = f->meta[p];

			if ((uint8_t)m == tag) {
				found = p;
				/* requested again when p is home (pass 1):
				 * skipping it by a test measured 2% slower
				 * at 1K (session 17) */
				rte_prefetch0(ct_slot_k(f, p, klen));
				if (klen > sizeof(struct ct_key4))
					rte_prefetch0(ct_slot_k(f, p, klen) + RTE_CACHE_LINE_SIZE);
				break;
			}
			if ((m >> 8) == 0) {
				/* a miss: a new flow when it is in no other
				 * region (@p settled; the others are prepared
				 * once they miss there too) */
				if (!reply && (settled >> CT_I(k) & 1))
					ct_prefetch_insert(f, home, klen);
				break;
			}
			p = ct_next(f, p);
		}
		cand[k] = found;        /* one store a key */
	}
	/* 3. compare (search on when it is not there, rarely) */
	for (unsigned int k = 0; k < n; k++) {
		unsigned int i = CT_I(k);
		uint32_t p = cand[k];
		struct ct_entry *e;

		/* a miss's outputs written on the miss only: a hit's written
		 * once, not cleared first (two stores a packet fewer) */
		if (p == CT_NONE)
			goto miss;
		e = (struct ct_entry *)(void *)(ct_slot_k(f, p, klen) + klen);
		/* another key with the tag; or the slot freed since pass 2:
		 * an earlier key of this burst expired here (a flow's packets
		 * after the first), its key bytes left in the slot.  Liveness
		 * from the state byte in the line in hand, not the tag
		 * (ct_is_live: another line; ct_check keeps the two in step) */
		if (unlikely(!ct_key_eq(ct_slot_k(f, p, klen), keys[i], klen) ||
			     e->state == CT_ST_NONE)) {
			p = ct_find(f, keys[i], ct_home(f, sigs[i], reply),
				    CT_TAG(sigs[i]), klen);
			if (p == CT_NONE)
				goto miss;
			e = (struct ct_entry *)(void *)(ct_slot_k(f, p, klen) + klen);
		}
		if (unlikely(ct_expired(s, e, now)) &&
		    ct_expired(s, ct_flow_head(f, e), now)) {
			enum ct_state st = ct_remove_flow(s, f, p, CT_DESTROY_EXPIRED);

			s->st.expired[st]++;
			s->st.expired_on_lookup++;
			goto miss;
		}
		entries[i] = e;
		positions[i] = p;
		hits |= 1ull << i;
		continue;
miss:
		entries[i] = NULL;
		positions[i] = CT_NONE;
	}
#undef CT_I
	return hits;
}

/* The keys of @p mask (bits of a burst of @p n) as an index list. */
static inline unsigned int
ct_idx_of(uint64_t mask, uint8_t *idx)
{
	unsigned int m = 0;

	for (; mask; mask &= mask - 1)
		idx[m++] = (uint8_t)__builtin_ctzll(mask);
	return m;
}

/* The keys of @p mask in one region (@p reply), by index list; the keys
 * of @p settled (burst indices) in no other region. */
static __rte_noinline uint64_t
ct_lookup_some(struct ct_shard *s, struct ct_fam *f, bool reply, uint64_t mask,
	       uint64_t settled, const void *const *keys, const uint32_t *sigs,
	       uint64_t now, struct ct_entry **entries, uint32_t *positions,
	       uint32_t klen)
{
	uint8_t idx[CT_BURST_MAX];
	unsigned int m = ct_idx_of(mask, idx);

	if (m == 0)
		return 0;
	return klen == sizeof(struct ct_key4)
		? ct_lookup_region(s, f, reply, idx, m, settled, keys, sigs, now,
				   entries, positions, sizeof(struct ct_key4))
		: ct_lookup_region(s, f, reply, idx, m, settled, keys, sigs, now,
				   entries, positions, sizeof(struct ct_key6));
}

/* A shard with reply entries: each key in its first region (the reply
 * region for the keys of @p hint), then the misses in the other but those
 * of @p settled (no reply's: their flows' region answered); the keys
 * missing from both are new flows, whose insert lines are requested
 * (@p settled's were in the flows' pass). */
static __rte_noinline uint64_t
ct_lookup_nat(struct ct_shard *s, struct ct_fam *f, uint64_t all, uint64_t hint,
	      uint64_t settled, uint64_t hits, const void *const *keys,
	      const uint32_t *sigs, uint64_t now, struct ct_entry **entries,
	      uint32_t *positions, uint32_t klen)
{
	hits |= ct_lookup_some(s, f, true, hint, 0, keys, sigs, now, entries,
			       positions, klen);
	uint64_t miss = all & ~hits;

	if (miss & ~hint & ~settled)
		hits |= ct_lookup_some(s, f, true, miss & ~hint & ~settled, 0, keys,
				       sigs, now, entries, positions, klen);
	if (miss & hint)
		hits |= ct_lookup_some(s, f, false, miss & hint, 0, keys, sigs, now,
				       entries, positions, klen);
	for (miss = all & ~hits & ~settled; miss; miss &= miss - 1) {
		unsigned int i = (unsigned int)__builtin_ctzll(miss);

		ct_prefetch_insert(f, ct_home(f, sigs[i], false), klen);
	}
	return hits;
}

/* The flows' region for the keys not hinted as replies (all of them,
 * without hints: one pass in the burst's order), then, in a shard that
 * holds reply entries, the rest (ct_lookup_nat): the hinted keys, and
 * the misses that may be replies (not in @p flow_only). */
static __rte_always_inline uint64_t
ct_lookup_fam(struct ct_shard *s, struct ct_fam *f, const void *const *keys,
	      const uint32_t *sigs, unsigned int n, uint64_t hint,
	      uint64_t flow_only, uint64_t now, struct ct_entry **entries,
	      uint32_t *positions, uint32_t klen)
{
	uint64_t all = n == 64 ? UINT64_MAX : (1ull << n) - 1, hits;

	if (likely(f->rcount == 0 || hint == 0)) {
		uint64_t settled = f->rcount == 0 ? all : flow_only & all;

		hits = ct_lookup_region(s, f, false, NULL, n, settled, keys, sigs,
					now, entries, positions, klen);
		if (likely((all & ~hits & ~settled) == 0))
			return hits;
		return ct_lookup_nat(s, f, all, 0, settled, hits, keys, sigs, now,
				     entries, positions, klen);
	}
	hint &= all;
	flow_only &= all & ~hint;
	hits = ct_lookup_some(s, f, false, all & ~hint, flow_only, keys, sigs, now,
			      entries, positions, klen);
	return ct_lookup_nat(s, f, all, hint, flow_only, hits, keys, sigs, now,
			     entries, positions, klen);
}

uint64_t
ct_lookup_bulk_hint(struct ct_shard *s, enum ct_family fam,
		    const void *const *keys, const uint32_t *sigs, unsigned int n,
		    uint64_t reply_hint, uint64_t flow_only, uint64_t now,
		    struct ct_entry **entries, uint32_t *positions)
{
	struct ct_fam *f = &s->fam[fam];
	uint64_t hits;

	if (unlikely(n == 0 || n > CT_BURST_MAX))
		return 0;
	flow_only &= ~reply_hint;
	if (fam == CT_V4)
		hits = ct_lookup_fam(s, f, keys, sigs, n, reply_hint, flow_only, now,
				     entries, positions, sizeof(struct ct_key4));
	else
		hits = ct_lookup_fam(s, f, keys, sigs, n, reply_hint, flow_only, now,
				     entries, positions, sizeof(struct ct_key6));
	s->st.lookups += n;
	s->st.hits += (uint64_t)__builtin_popcountll(hits);
	s->st.misses += n - (uint64_t)__builtin_popcountll(hits);
	return hits;
}

uint64_t
ct_lookup_bulk(struct ct_shard *s, enum ct_family fam,
	       const void *const *keys, const uint32_t *sigs, unsigned int n,
	       uint64_t now, struct ct_entry **entries, uint32_t *positions)
{
	return ct_lookup_bulk_hint(s, fam, keys, sigs, n, 0, 0, now, entries,
				   positions);
}

struct ct_entry *
ct_lookup(struct ct_shard *s, enum ct_family fam, const void *key,
	  uint32_t sig, uint64_t now, uint32_t *position)
{
	struct ct_entry *e;
	uint32_t p;

	if (ct_lookup_bulk(s, fam, &key, &sig, 1, now, &e, &p) == 0)
		e = NULL;
	if (position)
		*position = p;
	return e;
}

/* ---- insert / delete ------------------------------------------------ */

/* The first of early-drop list @p l that is not @p keep and, for a full
 * reply region (@p reply), whose reply entry is in that region (one linked
 * by ct_link_peer from ct_insert() entries is not: tests only), looking
 * at no more than a few. */
static uint32_t
ct_ed_first(const struct ct_fam *f, unsigned int l, uint32_t keep, bool reply)
{
	uint32_t v = f->ed_head[l];

	for (unsigned int i = 0; v != CT_NONE && i < 64; i++) {
		const struct ct_entry *e = ct_ent(f, v);

		if (v != keep && (!reply || e->peer >= f->fsize))
			return v;
		v = e->ed_next;
	}
	return CT_NONE;
}

/* Evicts the oldest unassured flow but the one at @p keep (CT_NONE: any):
 * the forward entry a NAT reply entry is inserted for.  For a full reply
 * region (@p reply), the oldest unassured NAT flow, whose eviction frees a
 * slot there; else the older of the two lists' oldest (creation time). */
static int
ct_early_drop(struct ct_shard *s, struct ct_fam *f, uint32_t keep, bool reply)
{
	uint32_t victim = ct_ed_first(f, 1, keep, reply);

	if (!reply) {
		uint32_t other = ct_ed_first(f, 0, keep, false);

		if (victim == CT_NONE ||
		    (other != CT_NONE && (int32_t)(f->born[other] - f->born[victim]) <= 0))
			victim = other;
	}
	if (victim == CT_NONE)
		return -ENOSPC;
	ct_remove_flow(s, f, victim, CT_DESTROY_EVICTED);
	s->st.evictions[CT_EVICT_EARLY_DROP]++;
	return 0;
}

static inline bool
ct_flood_refuse(struct ct_shard *s, bool assured, uint64_t now)
{
	if (s->flood_win_limit == 0)
		return false;
	if (now - s->flood_win_start >= s->flood_win_len) {
		s->flood_win_start = now;
		s->flood_win_count = 0;
	}
	if (++s->flood_win_count == s->flood_win_limit + 1)
		s->st.flood_windows++;
	return !assured && s->flood_win_count > s->flood_win_limit;
}

static inline bool
ct_state_assured(enum ct_state st)
{
	return st >= CT_ST_ESTABLISHED && st <= CT_ST_TIME_WAIT ? true
	       : st == CT_ST_UDP_STREAM;
}

/* A TCP state after a FIN or RST: evictable again, whatever the flow
 * earned (nf_conntrack's tcp_can_early_drop). */
static inline bool
ct_state_closing(enum ct_state st)
{
	return st >= CT_ST_FIN_WAIT && st <= CT_ST_CLOSE;
}

/* ct_insert(), never evicting the flow at @p keep (CT_NONE: any), into
 * the reply region (@p reply) or the flows'; the key looked for in both
 * regions, or only in the flows' (@p flow_only: ct_insert_flow). */
static struct ct_entry *
ct_insert_keep(struct ct_shard *s, enum ct_family fam, const void *key,
	       uint32_t sig, uint8_t proto, enum ct_state state, bool assured,
	       uint64_t now, uint32_t keep, bool reply, bool flow_only,
	       uint32_t *pos_out, int *err)
{
	struct ct_fam *f = &s->fam[fam];
	struct ct_entry *e;
	uint32_t home, pos, d;
	int ret;

	if (unlikely(state == CT_ST_NONE || state >= CT_ST_MAX)) {
		ret = -EINVAL;
		goto fail_nocount;
	}
	/* a key already here stays as it is (the caller continues with it);
	 * refusing or evicting for it would punish a live flow */
	home = ct_home(f, sig, reply);
	/* the lines the insert writes, requested with the metadata lines the
	 * probes read (the key is looked for in both regions): an insert
	 * that no bulk lookup prepared (a NAT reply entry, a fragment-follow
	 * entry) overlaps its misses */
	rte_prefetch0_write(ct_slot(f, home));
	rte_prefetch0_write(&f->born[home]);
	rte_prefetch0(&f->meta[home]);
	if (reply || (f->rcount != 0 && !flow_only))
		rte_prefetch0(&f->meta[ct_home(f, sig, !reply)]);
	pos = ct_find_key(f, key, sig, !flow_only);
	if (unlikely(pos != CT_NONE))
		goto exists;
	if (unlikely(s->flood_win_limit != 0) && ct_flood_refuse(s, assured, now)) {
		s->st.insert_fail_by[CT_INSFAIL_FLOOD]++;
		ret = -EBUSY;
		goto fail;
	}
	/* Full: evict the oldest unassured flow first. */
	if (unlikely(reply ? f->rcount >= f->rcap : f->count >= f->cap) &&
	    ct_early_drop(s, f, keep, reply) != 0) {
		s->st.insert_fail_by[CT_INSFAIL_FULL]++;
		ret = -ENOSPC;
		goto fail;
	}
	/* The first free slot from home (one exists: a region's count is
	 * below its capacity, below its size);
	 * the slots before it count one more key probing past them. */
	for (d = 0, pos = home; (uint8_t)f->meta[pos] != 0 && d <= CT_DISP_MAX; d++)
		pos = ct_next(f, pos);
	if (unlikely(d > CT_DISP_MAX)) {
		s->st.insert_fail_by[CT_INSFAIL_HASH]++;
		ret = -EIO;
		goto fail;
	}
	for (uint32_t q = home; q != pos; q = ct_next(f, q))
		ct_ovf_step(f, q, true);
	f->meta[pos] = (ct_meta_t)((f->meta[pos] & 0xff00) | CT_TAG(sig));
	memcpy(ct_slot(f, pos), key, f->key_len);
	ct_disp_set(ct_slot(f, pos), f->key_len, d);
	e = ct_ent(f, pos);
	memset(e, 0, sizeof(*e));
	e->state = (uint8_t)state;
	e->proto = proto;
	e->peer = CT_NONE;
	e->last_seen = now;
	f->born[pos] = ct_born_stamp(s, now);
	e->flags = (fam == CT_V6 ? CT_F_V6 : 0) |
		   (assured || ct_state_assured(state) ? CT_F_ASSURED : 0);
	/* a DSR flow's probation starts now (NAT overwrites it: nat_port) */
	e->pickup_t = ct_pickup_clock(s, now);
	if (!(e->flags & CT_F_ASSURED) || ct_state_closing(state))
		ct_ed_push(f, pos);
	if (reply)
		f->rcount++;
	else
		f->count++;
	s->st.live[state]++;
	s->st.inserts++;
	if (pos_out)
		*pos_out = pos;
	return e;
exists:
	s->st.insert_fail_by[CT_INSFAIL_EXISTS]++;
	s->st.insert_fail++;
	if (err)
		*err = -EEXIST;
	if (pos_out)
		*pos_out = pos;   /* the live entry's position */
	return NULL;
fail:
	s->st.insert_fail++;
fail_nocount:
	if (err)
		*err = ret;
	if (pos_out)
		*pos_out = CT_NONE;
	return NULL;
}

struct ct_entry *
ct_insert(struct ct_shard *s, enum ct_family fam, const void *key,
	  uint32_t sig, uint8_t proto, enum ct_state state, bool assured,
	  uint64_t now, uint32_t *pos_out, int *err)
{
	return ct_insert_keep(s, fam, key, sig, proto, state, assured, now, CT_NONE,
			      false, false, pos_out, err);
}

struct ct_entry *
ct_insert_flow(struct ct_shard *s, enum ct_family fam, const void *key,
	       uint32_t sig, uint8_t proto, enum ct_state state, bool assured,
	       uint64_t now, uint32_t *pos_out, int *err)
{
	return ct_insert_keep(s, fam, key, sig, proto, state, assured, now, CT_NONE,
			      false, true, pos_out, err);
}

struct ct_entry *
ct_insert_reply(struct ct_shard *s, enum ct_family fam, const void *key,
		uint32_t sig, uint32_t fwd_pos, uint64_t now, uint32_t *pos_out,
		int *err)
{
	struct ct_fam *f = &s->fam[fam];
	const struct ct_entry *fe = ct_live_at(f, fwd_pos);
	struct ct_entry *re;
	uint32_t rpos;

	if (fe == NULL || (fe->flags & CT_F_REPLY) || fe->peer != CT_NONE) {
		if (err)
			*err = -EINVAL;
		if (pos_out)
			*pos_out = CT_NONE;
		return NULL;
	}
	/* assured: half of a flow just admitted (flood mode must not refuse
	 * it); ct_link_peer then takes it off the lists of its own */
	re = ct_insert_keep(s, fam, key, sig, fe->proto, (enum ct_state)fe->state,
			    true, now, fwd_pos, true, false, &rpos, err);
	if (pos_out)
		*pos_out = rpos;
	if (re != NULL)
		ct_link_peer(s, fam, fwd_pos, rpos);
	return re;
}

void
ct_link_peer(struct ct_shard *s, enum ct_family fam, uint32_t fwd_pos,
	     uint32_t reply_pos)
{
	struct ct_fam *f = &s->fam[fam];
	struct ct_entry *fe = ct_ent(f, fwd_pos), *re = ct_ent(f, reply_pos);
	/* an unassured flow moves to the NAT flows' early-drop list */
	bool listed = ct_ed_unlink(f, fwd_pos);

	/* The reply entry carries no state of its own: it leaves the
	 * early-drop list and the live-by-state counts to its forward entry,
	 * and mirrors its state and last_seen (the lookup's liveness test). */
	if (!(re->flags & CT_F_REPLY)) {
		ct_ed_unlink(f, reply_pos);
		s->st.live[re->state]--;
	}
	fe->peer = reply_pos;
	re->peer = fwd_pos;
	fe->flags |= CT_F_NAT;
	if (listed)
		ct_ed_push(f, fwd_pos);
	re->flags |= CT_F_NAT | CT_F_REPLY | CT_F_ASSURED;
	f->born[reply_pos] = CT_BORN_REPLY;
	re->backend = fe->backend;
	re->service = fe->service;
	re->nat_port = fe->nat_port;
	re->nat_addr = fe->nat_addr;
	re->state = fe->state;
	if ((int64_t)(fe->last_seen - re->last_seen) < 0)
		re->last_seen = fe->last_seen;
}

int
ct_delete_pos(struct ct_shard *s, enum ct_family fam, uint32_t pos)
{
	struct ct_fam *f = &s->fam[fam];

	if (ct_live_at(f, pos) == NULL)
		return -ENOENT;
	ct_remove_flow(s, f, pos, CT_DESTROY_DELETED);
	s->st.deletes++;
	return 0;
}

int
ct_delete(struct ct_shard *s, enum ct_family fam, const void *key, uint32_t sig)
{
	uint32_t pos = ct_find_key(&s->fam[fam], key, sig, true);

	return pos == CT_NONE ? -ENOENT : ct_delete_pos(s, fam, pos);
}
/* ---- state machine -------------------------------------------------- */

/* ---- TCP windows (ct.h, "TCP windows") ---------------------------- */

/* Whether entry @p e holds its direction's window (not on a list). */
static inline bool
ct_td_valid(const struct ct_entry *e)
{
	return !(e->flags & CT_F_LISTED) && (e->td_flags & CT_TD_VALID);
}

/* The window a segment of the direction of @p x may move in: the
 * receiver's (@p y: the other entry of a NAT flow) largest, or DSR's
 * bound; 0 when it cannot be told (the receiver's window unknown). */
static inline uint32_t
ct_td_span(const struct ct_entry *x, const struct ct_entry *y)
{
	uint32_t w;

	if (!(x->flags & CT_F_NAT))
		return CT_TD_WIN_DSR;
	if (y == NULL || !ct_td_valid(y))
		return 0;
	w = (uint32_t)y->td_win << (y->td_wscale & 0x0F);
	return w > CT_TD_WIN_MIN ? w : CT_TD_WIN_MIN;
}

static inline bool
ct_td_near(const struct ct_entry *x, uint32_t seq, uint32_t w)
{
	int64_t d = (int32_t)(seq - x->td_end);

	return d >= -(int64_t)w && d <= (int64_t)w;
}

/* The other entry of a NAT flow, NULL for DSR. */
static inline struct ct_entry *
ct_other(struct ct_fam *f, const struct ct_entry *e)
{
	return (e->flags & CT_F_NAT) && e->peer != CT_NONE ? ct_ent(f, e->peer) : NULL;
}

bool
ct_tcp_seq_plausible(struct ct_shard *s, const struct ct_entry *e, uint32_t seq)
{
	struct ct_fam *f = ct_fam_of(s, e);
	uint32_t w;

	if (e->proto != IPPROTO_TCP || !ct_td_valid(e) || (e->td_flags & CT_TD_RELEARN))
		return true;
	w = ct_td_span(e, ct_other(f, e));
	return w == 0 || ct_td_near(e, seq, w);
}

/* A segment against the window of the direction that sent it (@p x; @p
 * y: the other direction's entry, NULL for DSR), where known: the window
 * moves on, or the segment is out of it (false, g->oow set, counted). */
static bool
ct_td_step(struct ct_shard *s, struct ct_entry *x, const struct ct_entry *y,
	   struct ct_seg *g, uint8_t fl, bool nat)
{
	if (ct_td_valid(x) && (x->td_flags & CT_TD_RELEARN) &&
	    !(fl & (CT_TCP_SYN | CT_TCP_RST))) {
		/* a synced copy's first segment of this direction: the
		 * window is the stream's now, not the record's */
		x->td_flags &= (uint8_t)~CT_TD_RELEARN;
		x->td_end = g->seq;
		if (g->win > x->td_win)
			x->td_win = g->win;
	} else if (ct_td_valid(x) && !(fl & CT_TCP_SYN)) {
		uint32_t w = ct_td_span(x, y);

		/* DSR: an RST / FIN ends the flow only at the client's next
		 * sequence number, give or take one segment */
		if (!nat && (fl & (CT_TCP_RST | CT_TCP_FIN)))
			w = CT_TD_WIN_MIN;
		if (w != 0 && !ct_td_near(x, g->seq, w)) {
			s->st.tcp_oow++;
			g->oow = (nat && (fl & CT_TCP_RST)) ? CT_OOW_DROP : CT_OOW_PASS;
			return false;
		}
		if ((int32_t)(g->seq - x->td_end) > 0)
			x->td_end = g->seq;
		if (g->win > x->td_win)
			x->td_win = g->win;
	}
	return true;
}

/* What a TCP segment of direction @p e (@p h: the flow's forward entry)
 * does to the flow: the next state, or the current one when the segment
 * proves nothing (g->oow set).  *assure: the flow earned assurance with
 * this segment; *reopen: a new connection on a closing flow's tuple. */
static enum ct_state
ct_tcp_step(struct ct_shard *s, struct ct_fam *f, struct ct_entry *h,
	    struct ct_entry *e, bool reply, struct ct_seg *g, uint64_t now,
	    bool *assure, bool *reopen)
{
	enum ct_state cur = (enum ct_state)h->state, st;
	uint8_t fl = g->flags;
	bool seq = g->wscale != CT_SEG_NO_SEQ;
	bool nat = h->flags & CT_F_NAT;
	struct ct_entry *r = ct_other(f, h);

	/* a SYN from the client on a closing flow: the client opened a new
	 * connection on the tuple (it reused its port) */
	if (!reply && (fl & (CT_TCP_SYN | CT_TCP_ACK | CT_TCP_RST)) == CT_TCP_SYN &&
	    ct_state_closing(cur)) {
		*reopen = true;
		if (r != NULL && seq) {
			r->td_end = g->seq + 1;
			r->td_win = 0;
			r->td_wscale = (uint8_t)(g->wscale << 4 | CT_SEG_NO_WSCALE);
			r->td_flags = CT_TD_HS;
		}
		return CT_ST_SYN_SENT;
	}
	if (nat && r != NULL) {
		switch (cur) {
		case CT_ST_SYN_SENT:
			if (!reply && (fl & (CT_TCP_SYN | CT_TCP_ACK)) == CT_TCP_SYN) {
				/* the client's (first or retransmitted) SYN:
				 * the SYN-ACK must ack its ISN */
				if (seq) {
					r->td_end = g->seq + 1;
					r->td_win = 0;
					r->td_wscale = (uint8_t)(g->wscale << 4 | CT_SEG_NO_WSCALE);
					r->td_flags = CT_TD_HS;
				}
				return cur;
			}
			if (reply && (fl & (CT_TCP_SYN | CT_TCP_ACK)) == (CT_TCP_SYN | CT_TCP_ACK)) {
				if (seq && (r->td_flags & CT_TD_HS)) {
					uint8_t cs = r->td_wscale >> 4;
					bool both = cs != CT_SEG_NO_WSCALE &&
						    g->wscale != CT_SEG_NO_WSCALE;

					/* it acks the SYN (or, TCP Fast Open,
					 * data the SYN carried) */
					if ((uint32_t)(g->ack - r->td_end) > CT_TD_WIN_MIN)
						goto hs_bad;
					uint8_t bs = both ? g->wscale : 0;

					r->td_end = g->seq + 1;
					/* a SYN's window is never scaled */
					r->td_win = (uint16_t)((g->win + (1u << bs) - 1) >> bs);
					r->td_wscale = both ? (uint8_t)(bs | cs << 4) : 0;
					r->td_flags = CT_TD_VALID;
				}
				return CT_ST_SYN_RECV;
			}
			if (reply && (fl & CT_TCP_RST)) {
				/* RFC 793: an RST in SYN-SENT is acceptable
				 * when it acks the SYN */
				if (seq && (r->td_flags & CT_TD_HS) &&
				    (!(fl & CT_TCP_ACK) || g->ack != r->td_end))
					goto hs_bad;
				return CT_ST_CLOSE;
			}
			if (!reply && (fl & CT_TCP_ACK) && !(fl & (CT_TCP_SYN | CT_TCP_RST)))
				goto hs_bad; /* an ACK of a SYN-ACK never sent */
			break;
		case CT_ST_SYN_RECV:
			if (!reply && (fl & CT_TCP_ACK) && !(fl & (CT_TCP_SYN | CT_TCP_RST))) {
				/* the handshake's last ACK acks the backend's
				 * ISN (or data the backend sent since) */
				if (seq && ct_td_valid(r) &&
				    (uint32_t)(g->ack - r->td_end) > CT_TD_WIN_MIN)
					goto hs_bad;
				*assure = true;
				return (fl & CT_TCP_FIN) ? CT_ST_FIN_WAIT : CT_ST_ESTABLISHED;
			}
			break;
		default:
			/* the backend's SYN-ACK on an open or closing flow: it
			 * accepted a new connection on the tuple (the client's
			 * SYN came while the balancer still held the old one,
			 * as nf_conntrack's ignored-SYN rule has it) */
			if (reply && (fl & (CT_TCP_SYN | CT_TCP_ACK | CT_TCP_RST)) ==
				     (CT_TCP_SYN | CT_TCP_ACK) && cur >= CT_ST_ESTABLISHED &&
			    cur <= CT_ST_CLOSE && seq) {
				uint8_t bs = g->wscale != CT_SEG_NO_WSCALE ? g->wscale : 0;

				*reopen = true;
				r->td_end = g->seq + 1;
				r->td_win = (uint16_t)((g->win + (1u << bs) - 1) >> bs);
				r->td_wscale = (uint8_t)(bs | bs << 4);
				r->td_flags = CT_TD_VALID;
				return CT_ST_SYN_RECV;
			}
			break;
		}
	}
	/* the window of the direction that sent it, where known */
	if (seq && !ct_td_step(s, reply ? e : h, reply ? h : r, g, fl, nat))
		return cur;
	st = ct_tcp_next(cur, reply, fl);
	if (nat && cur == CT_ST_SYN_SENT && !reply && st != CT_ST_CLOSE)
		return cur; /* NAT: ESTABLISHED only after the SYN-ACK */
	if (st == CT_ST_PICKUP || (st == CT_ST_ESTABLISHED && !nat &&
				   !(h->flags & CT_F_ASSURED))) {
		/* DSR: a pickup, and a handshake the balancer saw one side
		 * of, prove themselves by persistence: enough packets over
		 * enough time (a spoofed SYN+ACK is two packets per tuple) */
		if (h->packets + (e != h ? e->packets : 0) + 1 >= s->cfg.pickup_pkts &&
		    (uint16_t)(ct_pickup_clock(s, now) - h->pickup_t) >= s->pickup_units) {
			*assure = true;
			return CT_ST_ESTABLISHED;
		}
		return st;
	}
	if (cur == CT_ST_PICKUP && st == CT_ST_ESTABLISHED)
		*assure = true; /* the other side answered (a reply) */
	return st;
hs_bad:
	s->st.tcp_hs_bad++;
	g->oow = CT_OOW_PASS;
	return cur;
}

enum ct_state
ct_update_seg(struct ct_shard *s, struct ct_entry *e, bool reply,
	      struct ct_seg *g, uint32_t bytes, uint64_t now)
{
	struct ct_fam *f = ct_fam_of(s, e);
	struct ct_entry *h = ct_flow_head(f, e);
	enum ct_state old = h->state, st = old;
	bool assure = false, reopen = false;
	uint32_t hpos;

	if (h->proto == IPPROTO_TCP) {
		st = ct_tcp_step(s, f, h, e, reply, g, now, &assure, &reopen);
		if (unlikely(g->oow != 0))
			return st; /* proved nothing: not even that the flow lives */
	} else if (h->proto == IPPROTO_UDP && old == CT_ST_UDP &&
		   (reply || h->packets + (e != h ? e->packets : 0) + 1 >= 2)) {
		st = CT_ST_UDP_STREAM;
		assure = true;
	}
	e->packets++;
	e->bytes += bytes;
	e->last_seen = now;
	h->last_seen = now;
	if (reply)
		h->flags |= CT_F_SEEN_REPLY;
	if (likely(st == old && !assure))
		return st;
	hpos = ct_pos_of(f, h);
	if (st != old) {
		s->st.live[old]--;
		s->st.live[st]++;
		h->state = (uint8_t)st;
		if (h != e)
			e->state = (uint8_t)st;
		else if (h->peer != CT_NONE)
			ct_ent(f, h->peer)->state = (uint8_t)st;
	}
	if (assure && !(h->flags & CT_F_ASSURED)) {
		struct ct_entry *r = ct_other(f, h);

		h->flags |= CT_F_ASSURED;
		if (!ct_state_closing(st)) {
			ct_ed_unlink(f, hpos);
			/* the flow's own direction's window starts here */
			if (h->proto == IPPROTO_TCP && g->wscale != CT_SEG_NO_SEQ && !reply) {
				h->td_end = g->seq;
				h->td_win = (h->flags & CT_F_NAT) ? g->win : 0;
				h->td_wscale = r != NULL && ct_td_valid(r) ? r->td_wscale >> 4 : 0;
				h->td_flags = CT_TD_VALID;
			}
		}
	}
	if (unlikely(reopen)) {
		/* a new connection: unassured, its window unknown (NAT: the
		 * SYN-ACK must ack the new ISN, kept by the reply entry) */
		s->st.tcp_reopen++;
		h->flags &= (uint8_t)~CT_F_ASSURED;
		if (!reply)
			h->flags &= (uint8_t)~CT_F_SEEN_REPLY;
		h->pickup_t = (h->flags & CT_F_NAT) ? h->pickup_t : ct_pickup_clock(s, now);
	}
	if ((ct_state_closing(st) || !(h->flags & CT_F_ASSURED)) &&
	    !(h->flags & CT_F_LISTED))
		ct_ed_push(f, hpos);
	if (unlikely(s->state_fn != NULL) && st != old) {
		struct ct_key6 k;

		ct_key_copy(f, hpos, &k);
		s->state_fn(s->state_arg, (enum ct_family)(f - s->fam), &k, h, old, now);
	}
	return st;
}

enum ct_state
ct_update(struct ct_shard *s, struct ct_entry *e, bool reply,
	  uint8_t tcp_flags, uint32_t bytes, uint64_t now)
{
	struct ct_seg g = {.flags = tcp_flags, .wscale = CT_SEG_NO_SEQ};

	return ct_update_seg(s, e, reply, &g, bytes, now);
}

/* ---- expiry --------------------------------------------------------- */

static unsigned int
ct_sweep(struct ct_shard *s, struct ct_fam *f, uint32_t budget, uint64_t now)
{
	unsigned int expired = 0;
	uint32_t p = f->sweep_pos;

	while (budget > 0) {
		uint32_t end = ct_span_end(f, p, budget);

		budget -= end - p;
		/* the line of a free slot (its metadata says so) or of a NAT
		 * reply entry (its creation time says so: it leaves with its
		 * forward entry) is not read */
		for (; (p = ct_next_live(f, p, end)) < end; p++) {
			struct ct_entry *e = ct_ent(f, p);

			if (f->born[p] != CT_BORN_REPLY && !(e->flags & CT_F_REPLY) &&
			    ct_expired(s, e, now)) {
				enum ct_state st = ct_remove_flow(s, f, p, CT_DESTROY_EXPIRED);

				s->st.expired[st]++;
				expired++;
			}
		}
		if (p == f->fsize)
			p = 0;
	}
	f->sweep_pos = p;
	return expired;
}

/*
 * Paced sweep: the calls alternate between the families, and each family
 * examines slots in proportion to the time since its own last sweep, so
 * one pass over each takes sweep_period, capped at expire_budget per call.
 * The time the examined slots stand for is what the family's clock
 * advances by, so the fraction of a slot each call rounds off carries
 * over.  Work per call is bounded whatever the clock does.
 */
unsigned int
ct_expire(struct ct_shard *s, uint64_t now)
{
	struct ct_fam *f = &s->fam[s->sweep_turn++ & 1];
	uint64_t elapsed = now - f->sweep_last;
	uint64_t n;

	if ((int64_t)elapsed <= 0)
		return 0;
	/* elapsed / period of a pass, times the slots: below 2^30 slots
	 * (CT_CAP_MAX x 1.75) and 2^33 ticks (2 s of a clock up to 4 GHz),
	 * no product overflows. */
	if (elapsed >= s->sweep_period) {
		n = f->fsize;
		f->sweep_last = now;
	} else {
		n = (elapsed * f->fsize) / s->sweep_period;
		if (n == 0)
			return 0;
		f->sweep_last += n * s->sweep_period / f->fsize;
	}
	if (n > s->cfg.expire_budget) {
		/* behind by more than a call may do: the pass stretches,
		 * nothing piles up */
		n = s->cfg.expire_budget;
		f->sweep_last = now;
	}
	return ct_sweep(s, f, (uint32_t)n, now);
}

/* ---- accessors ------------------------------------------------------ */

const struct ct_stats *
ct_stats_get(struct ct_shard *s)
{
	s->st.nat_flows = ct_reply_count(s);   /* a gauge, from the regions */
	return &s->st;
}

const uint64_t *
ct_removal_seq(const struct ct_shard *s)
{
	return &s->removals;
}

uint32_t
ct_reply_count(const struct ct_shard *s)
{
	return s->fam[CT_V4].rcount + s->fam[CT_V6].rcount;
}

uint32_t
ct_count(const struct ct_shard *s)
{
	return s->fam[CT_V4].count + s->fam[CT_V4].rcount +
	       s->fam[CT_V6].count + s->fam[CT_V6].rcount;
}

size_t
ct_memory(const struct ct_shard *s)
{
	return s->mem_bytes;
}

uint32_t
ct_slots(const struct ct_shard *s, enum ct_family fam)
{
	return s->fam[fam].cap;
}

uint32_t
ct_reply_slots(const struct ct_shard *s, enum ct_family fam)
{
	return s->fam[fam].rcap;
}

/* ---- self-check (tests, fuzzing) ------------------------------------ */

int
ct_check(const struct ct_shard *s)
{
	for (int fam = 0; fam < CT_FAMILIES; fam++) {
		const struct ct_fam *f = &s->fam[fam];
		uint32_t live = 0, rlive = 0, unassured = 0, listed = 0, size = f->size;
		uint32_t *ovf = calloc(size, sizeof(*ovf));

		if (ovf == NULL)
			return -ENOMEM;
		for (uint32_t p = 0; p < size; p++) {
			const uint8_t *sl = ct_slot(f, p);
			uint32_t disp = ct_disp(sl, f->key_len);
			uint8_t tag = (uint8_t)f->meta[p];

			if (ct_ent(f, p)->state == CT_ST_NONE) {
				if (disp != 0 || tag != 0)
					goto bad;
				continue;
			}
			/* every unassured or closing forward entry is
			 * evictable; a reply entry never is (its flow is) */
			if (ct_ent(f, p)->flags & CT_F_REPLY) {
				if (ct_ent(f, p)->flags & CT_F_LISTED)
					goto bad;
			} else if (!(ct_ent(f, p)->flags & CT_F_ASSURED) ||
				   ct_state_closing((enum ct_state)ct_ent(f, p)->state)) {
				if (!(ct_ent(f, p)->flags & CT_F_LISTED))
					goto bad;
			}
			unassured += !!(ct_ent(f, p)->flags & CT_F_LISTED);
			if (p < f->fsize)
				live++;
			else if (rlive++, !(ct_ent(f, p)->flags & CT_F_REPLY) ||
				 ct_ent(f, p)->peer >= f->fsize ||
				 ct_ent(f, ct_ent(f, p)->peer)->peer != p)
				goto bad;   /* reply entries only, each linked to its flow */
			/* a reply entry's creation time says so, and only its */
			if (!(ct_ent(f, p)->flags & CT_F_REPLY) != (f->born[p] != CT_BORN_REPLY))
				goto bad;
			/* found from its home, where the displacement says */
			if (!(tag & 0x80) ||
			    ct_find(f, sl, ct_back(f, p, disp), tag, f->key_len) != p)
				goto bad;
			for (uint32_t q = ct_back(f, p, disp); q != p; q = ct_next(f, q))
				ovf[q]++;
		}
		/* exact, or saturated (then it stays) */
		for (uint32_t p = 0; p < size; p++)
			if (ovf[p] != ct_ovf(f, p) && ct_ovf(f, p) != CT_OVF_SAT)
				goto bad;
		free(ovf);
		/* the early-drop lists: every live unassured forward entry, on
		 * the list of its kind, linked both ways */
		for (unsigned int l = 0; l < 2; l++) {
			uint32_t prev = CT_NONE, n = 0;

			for (uint32_t v = f->ed_head[l]; v != CT_NONE;
			     prev = v, v = ct_ent(f, v)->ed_next) {
				const struct ct_entry *e = ct_live_at(f, v);

				if (e == NULL || (e->flags & CT_F_REPLY) ||
				    !(e->flags & CT_F_LISTED) ||
				    ct_ed_list(e) != l || e->ed_prev != prev || ++n > f->count)
					return -EILSEQ;
			}
			if (f->ed_tail[l] != prev)
				return -EILSEQ;
			listed += n;
		}
		if (listed != unassured)
			return -EILSEQ;
		if (live != f->count || f->count > f->cap ||
		    rlive != f->rcount || f->rcount > f->rcap)
			return -EILSEQ;
		continue;
bad:
		free(ovf);
		return -EILSEQ;
	}
	return 0;
}

/* ---- walk ----------------------------------------------------------- */

unsigned int
ct_walk(struct ct_shard *s, uint64_t *cursor, unsigned int max, uint64_t now,
	int (*fn)(const struct ct_flow *f, void *arg), void *arg)
{
	unsigned int visited = 0;
	uint64_t c = *cursor;

	while (max > 0 && c != CT_WALK_DONE) {
		enum ct_family fam = (enum ct_family)(c >> 32);
		struct ct_fam *f = &s->fam[fam];
		uint32_t p = RTE_MIN((uint32_t)c, f->fsize);
		uint32_t end = ct_span_end(f, p, max);

		max -= end - p;
		for (; (p = ct_next_live(f, p, end)) < end; p++) {
			struct ct_entry *e = ct_ent(f, p);
			struct ct_flow fl;

			if (e->flags & CT_F_REPLY)
				continue;
			/* every field is written below (no memset: a listing
			 * walks millions of flows on the worker's time); the
			 * key union is valid for fl.family's length, the reply
			 * key only with has_reply */
			ct_key_copy(f, p, &fl.k6);
			fl.e = *e;
			fl.pos = p;
			fl.family = (uint8_t)fam;
			fl.has_reply = 0;
			fl.reply_packets = 0;
			fl.reply_bytes = 0;
			fl.age_ticks = now - e->last_seen;
			fl.life_ticks = ct_born_age(s, f, p, now);
			fl.expires_ticks = fl.age_ticks < s->to_ticks[e->state]
						   ? s->to_ticks[e->state] - fl.age_ticks
						   : 0;
			const struct ct_entry *r = e->peer != CT_NONE
							   ? ct_live_at(f, e->peer) : NULL;

			if (r != NULL) {
				ct_key_copy(f, e->peer, &fl.reply.k6);
				fl.reply_packets = r->packets;
				fl.reply_bytes = r->bytes;
				fl.has_reply = 1;
			}
			visited++;
			if (fn(&fl, arg)) {
				ct_remove_flow(s, f, p, CT_DESTROY_DELETED);
				s->st.evictions[CT_EVICT_FLUSH]++;
				s->st.deletes++;
			}
		}
		if (p >= f->fsize)
			c = fam + 1 < CT_FAMILIES ? (uint64_t)(fam + 1) << 32
						  : CT_WALK_DONE;
		else
			c = ((uint64_t)fam << 32) | p;
	}
	*cursor = c;
	return visited;
}

/* ---- flow records (ct_rec.h) ----------------------------------------- */

static inline uint32_t
ct_ms_of(const struct ct_shard *s, uint64_t ticks)
{
	unsigned __int128 ms = (unsigned __int128)ticks * 1000 / s->cfg.hz;

	return ms > UINT32_MAX ? UINT32_MAX : (uint32_t)ms;
}

static inline uint64_t
ct_ticks_of(const struct ct_shard *s, uint32_t ms)
{
	return (uint64_t)((unsigned __int128)ms * s->cfg.hz / 1000);
}

/* An entry's window as a record keeps it: none while the eight bytes are
 * early-drop links. */
static void
ct_rec_td_of(const struct ct_entry *e, struct ct_rec_td *t)
{
	if (e->flags & CT_F_LISTED)
		return;
	t->end = e->td_end;
	t->win = e->td_win;
	t->wscale = e->td_wscale;
	/* a stale window (CT_TD_RELEARN) travels as the window it is */
	t->flags = e->td_flags & (uint8_t)~CT_TD_RELEARN;
}

void
ct_entry_relearn(struct ct_shard *s, enum ct_family fam, uint32_t pos)
{
	struct ct_fam *f = &s->fam[fam];
	struct ct_entry *e = ct_live_at(f, pos), *r;

	if (e == NULL)
		return;
	r = e->peer != CT_NONE ? ct_live_at(f, e->peer) : NULL;
	if (ct_td_valid(e))
		e->td_flags |= CT_TD_RELEARN;
	if (r != NULL && ct_td_valid(r))
		r->td_flags |= CT_TD_RELEARN;
}

static void
ct_rec_td_set(struct ct_entry *e, const struct ct_rec_td *t)
{
	if (e->flags & CT_F_LISTED)
		return;
	e->td_end = t->end;
	e->td_win = t->win;
	e->td_wscale = t->wscale;
	e->td_flags = t->flags;
}

void
ct_rec_fill(struct ct_shard *s, const struct ct_flow *fl, uint64_t now,
	    struct ct_rec *r)
{
	const struct ct_entry *e = &fl->e;
	struct ct_fam *f = &s->fam[fl->family];

	memset(r, 0, sizeof(*r));
	r->family = fl->family;
	r->proto = e->proto;
	r->state = e->state;
	r->flags = CT_REC_F_COUNTERS |
		   (e->flags & CT_F_ASSURED ? CT_REC_F_ASSURED : 0) |
		   (e->flags & CT_F_SEEN_REPLY ? CT_REC_F_SEEN_REPLY : 0) |
		   (e->flags & CT_F_MIDSTREAM ? CT_REC_F_MIDSTREAM : 0) |
		   (e->flags & CT_F_FRAG ? CT_REC_F_FRAG : 0);
	memcpy(&r->key, &fl->k6, f->key_len);
	/* a worker's clock may run a little ahead of the caller's */
	r->idle_ms = (int64_t)fl->age_ticks > 0 ? ct_ms_of(s, fl->age_ticks) : 0;
	r->life_ms = (int64_t)fl->life_ticks > 0 ? ct_ms_of(s, fl->life_ticks) : 0;
	if (!(e->flags & (CT_F_NAT | CT_F_ASSURED))) {
		uint16_t u = (uint16_t)(ct_pickup_clock(s, now) - e->pickup_t);

		r->probation_ms = ct_ms_of(s, (uint64_t)u << (s->tshift + CT_PICKUP_SHIFT));
	}
	ct_rec_td_of(e, &r->td);
	r->packets = e->packets;
	r->bytes = e->bytes;
	if (fl->has_reply) {
		const struct ct_entry *re = ct_live_at(f, e->peer);

		r->flags |= CT_REC_F_NAT;
		memcpy(&r->reply, &fl->reply.k6, f->key_len);
		if (re != NULL)
			ct_rec_td_of(re, &r->reply_td);
		r->reply_packets = fl->reply_packets;
		r->reply_bytes = fl->reply_bytes;
	}
}

void
ct_rec_fill_entry(struct ct_shard *s, enum ct_family fam, const void *key,
		  const struct ct_entry *e, uint64_t now, struct ct_rec *r)
{
	struct ct_fam *f = &s->fam[fam];
	const struct ct_entry *re = e->peer != CT_NONE ? ct_live_at(f, e->peer) : NULL;
	struct ct_flow fl;

	memcpy(&fl.k6, key, f->key_len);
	fl.e = *e;
	fl.family = (uint8_t)fam;
	fl.age_ticks = now - e->last_seen;
	fl.life_ticks = ct_entry_life(s, e, now);
	fl.has_reply = re != NULL;
	fl.reply_packets = re ? re->packets : 0;
	fl.reply_bytes = re ? re->bytes : 0;
	if (re != NULL)
		ct_key_copy(f, e->peer, &fl.reply.k6);
	ct_rec_fill(s, &fl, now, r);
}

/* The forward entry just inserted for @p r, made as the record says:
 * assurance, flags, window, ids, times, counters. */
static void
ct_rec_shape(struct ct_shard *s, struct ct_fam *f, uint32_t pos,
	     const struct ct_rec *r, const struct ct_rec_ids *ids, uint64_t now)
{
	struct ct_entry *e = ct_ent(f, pos);

	if (!(r->flags & CT_REC_F_ASSURED) && (e->flags & CT_F_ASSURED)) {
		/* ct_insert assures the ESTABLISHED state: a DSR flow
		 * restored on probation stays on it */
		e->flags &= (uint8_t)~CT_F_ASSURED;
		if (!(e->flags & CT_F_LISTED))
			ct_ed_push(f, pos);
	}
	e->flags |= (r->flags & CT_REC_F_SEEN_REPLY ? CT_F_SEEN_REPLY : 0) |
		    (r->flags & CT_REC_F_MIDSTREAM ? CT_F_MIDSTREAM : 0) |
		    (r->flags & CT_REC_F_FRAG ? CT_F_FRAG : 0);
	ct_rec_td_set(e, &r->td);
	e->service = ids->service;
	e->backend = ids->backend;
	if (r->flags & CT_REC_F_NAT) {
		/* the reply entry takes them (ct_link_peer) */
		e->nat_port = r->family == CT_V4 ? r->reply.k4.dport : r->reply.k6.dport;
		e->nat_addr = ids->nat_addr;
	} else {
		e->pickup_t = ct_pickup_clock(s, now - ct_ticks_of(s, r->probation_ms));
	}
	f->born[pos] = ct_born_stamp(s, now - ct_ticks_of(s, r->life_ms));
	e->packets = r->packets;
	e->bytes = r->bytes;
}

int
ct_rec_restore(struct ct_shard *s, const struct ct_rec *r,
	       const struct ct_rec_ids *ids, uint64_t now, uint32_t *pos_out)
{
	bool nat = r->flags & CT_REC_F_NAT;
	uint32_t flood, sig, rsig = 0, pos, rpos;
	struct ct_entry *re;
	struct ct_fam *f;
	uint64_t seen;
	int err = 0;

	if (r->family >= CT_FAMILIES || r->state == CT_ST_NONE || r->state >= CT_ST_MAX)
		return -EINVAL;
	f = &s->fam[r->family];
	if (ct_ticks_of(s, r->idle_ms) > s->to_ticks[r->state])
		return -ETIME;
	if (f->count >= f->cap || (nat && f->rcount >= f->rcap))
		return -ENOSPC;
	sig = ct_hash(s, &r->key, f->key_len);
	if (ct_find_key(f, &r->key, sig, true) != CT_NONE)
		return -EEXIST;
	if (nat) {
		rsig = ct_hash(s, &r->reply, f->key_len);
		if (ct_find_key(f, &r->reply, rsig, true) != CT_NONE)
			return -EEXIST;
	}
	seen = now - ct_ticks_of(s, r->idle_ms);
	/* a restore is no burst of new flows: flood mode stays out of it */
	flood = s->flood_win_limit;
	s->flood_win_limit = 0;
	if (ct_insert_keep(s, (enum ct_family)r->family, &r->key, sig, r->proto,
			   (enum ct_state)r->state, r->flags & CT_REC_F_ASSURED, seen,
			   CT_NONE, false, false, &pos, &err) == NULL)
		goto out;
	ct_rec_shape(s, f, pos, r, ids, now);
	if (nat) {
		re = ct_insert_keep(s, (enum ct_family)r->family, &r->reply, rsig,
				    r->proto, (enum ct_state)r->state, true, seen, pos,
				    true, false, &rpos, &err);
		if (re == NULL) {
			/* no hook: the caller never counted this flow */
			ct_remove_one(s, f, pos);
			goto out;
		}
		ct_link_peer(s, (enum ct_family)r->family, pos, rpos);
		ct_rec_td_set(re, &r->reply_td);
		re->packets = r->reply_packets;
		re->bytes = r->reply_bytes;
	}
	if (pos_out)
		*pos_out = pos;
out:
	s->flood_win_limit = flood;
	return err;
}
