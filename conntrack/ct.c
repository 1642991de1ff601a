/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Connection-table shard: two rte_hash tables (IPv4 16 B keys, IPv6 48 B
 * keys) whose positions index preallocated entry arrays.  Everything here
 * runs on the owning lcore only; see ct.h for the threading model.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <netinet/in.h>

#include <rte_branch_prediction.h>
#include <rte_errno.h>
#include <rte_hash_crc.h>
#include <rte_malloc.h>
#include <rte_prefetch.h>

#include "ct_private.h"


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

/*
 * rte_hash documents positions as offsets into a user array, and its key
 * store holds key i at a fixed stride.  Learn base and stride from two
 * probe keys through the public API instead of a second lookup per call.
 */
static int
ct_fam_learn_keystore(struct ct_shard *s, struct ct_fam *f)
{
	uint8_t k1[48] = {0}, k2[48] = {0};
	void *p1, *p2;
	int32_t a, b;
	int ret = -EIO;

	k1[0] = 1;
	k2[0] = 2;
	a = rte_hash_add_key_with_hash(f->h, k1, ct_hash(s, k1, f->key_len));
	b = rte_hash_add_key_with_hash(f->h, k2, ct_hash(s, k2, f->key_len));
	if (a < 0 || b < 0 || a == b)
		goto out;
	if (rte_hash_get_key_with_position(f->h, a, &p1) != 0 ||
	    rte_hash_get_key_with_position(f->h, b, &p2) != 0)
		goto out;
	if (((const uint8_t *)p2 - (const uint8_t *)p1) % (b - a) != 0)
		goto out;
	f->key_stride = ((const uint8_t *)p2 - (const uint8_t *)p1) / (b - a);
	f->key_base = (const uint8_t *)p1 - (size_t)a * f->key_stride;
	ret = f->key_stride >= f->key_len ? 0 : -EIO;
	/* The data word sits right before the key (struct rte_hash_key):
	 * check it with a value stored through the public API. */
	if (ret == 0 && rte_hash_add_key_with_hash_data(f->h, k1, ct_hash(s, k1, f->key_len),
							 (void *)(uintptr_t)0x5eed1e55c0ffee11ull) == 0) {
		uint64_t v;

		memcpy(&v, (const uint8_t *)p1 - sizeof(v), sizeof(v));
		f->pdata_ok = v == 0x5eed1e55c0ffee11ull;
	}
out:
	rte_hash_del_key_with_hash(f->h, k1, ct_hash(s, k1, f->key_len));
	rte_hash_del_key_with_hash(f->h, k2, ct_hash(s, k2, f->key_len));
	rte_hash_reset(f->h);
	return ret;
}

static int
ct_fam_init(struct ct_shard *s, struct ct_fam *f, enum ct_family fam,
	    uint32_t slots)
{
	char name[RTE_HASH_NAMESIZE];
	struct rte_hash_parameters p = {0};

	snprintf(name, sizeof(name), "%.24s_%s", s->name, fam == CT_V4 ? "4" : "6");
	f->key_len = fam == CT_V4 ? sizeof(struct ct_key4) : sizeof(struct ct_key6);
	/*
	 * rte_hash sizes its buckets to the power of two at or above the key
	 * slots.  A capacity just under a power of two would run the buckets
	 * near 100% load when full, where cuckoo inserts cost 7-10x more
	 * (HPSR'21: 148 -> 1,047 cycles at 95%).  So when the buckets would be
	 * more than 90% loaded at capacity, take the next power of two of key
	 * slots (at most 11% more) and get twice the buckets: full is then
	 * 50% bucket load.  Memory per slot stays ~120 B for IPv4.
	 */
	uint32_t p2 = rte_align32pow2(slots);
	if ((uint64_t)slots * 10 > (uint64_t)p2 * 9 && p2 < (1u << 31))
		slots = p2 + 1;
	f->slots = slots;
	p.name = name;
	p.entries = slots;
	p.key_len = f->key_len;
	p.hash_func = (rte_hash_function)(s->cfg.hash_fn ? s->cfg.hash_fn : rte_hash_crc);
	p.hash_func_init_val = CT_HASH_SEED;
	p.socket_id = s->cfg.socket_id;
	/* Extendable buckets: an insert never fails for want of a cuckoo
	 * path while key slots remain, so "full" means exactly capacity. */
	p.extra_flag = RTE_HASH_EXTRA_FLAGS_EXT_TABLE;
	f->h = rte_hash_create(&p);
	if (f->h == NULL)
		return -(rte_errno ? rte_errno : ENOMEM);
	f->e = rte_zmalloc_socket(name, (size_t)slots * sizeof(struct ct_entry),
				  RTE_CACHE_LINE_SIZE, s->cfg.socket_id);
	if (f->e == NULL)
		return -ENOMEM;
	f->born = rte_zmalloc_socket(name, (size_t)slots * sizeof(uint32_t),
				     RTE_CACHE_LINE_SIZE, s->cfg.socket_id);
	if (f->born == NULL)
		return -ENOMEM;
	f->ed_head = f->ed_tail = CT_NONE;
	return ct_fam_learn_keystore(s, f);
}

struct ct_shard *
ct_shard_create(const struct ct_config *cfg)
{
	struct ct_shard *s;
	size_t before;
	int ret;

	if (cfg == NULL || cfg->capacity < 8 || cfg->hz == 0 ||
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
	/* One pass of the sweep per second: every entry is looked at within
	 * 1 s of its expiry even on a table that is never hit again. */
	s->sweep_period = cfg->hz;

	ret = ct_fam_init(s, &s->fam[CT_V4], CT_V4, cfg->capacity);
	if (ret == 0)
		ret = ct_fam_init(s, &s->fam[CT_V6], CT_V6,
				  cfg->capacity_v6 ? cfg->capacity_v6
						   : RTE_MAX(cfg->capacity / 4, 8u));
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
		rte_hash_free(s->fam[i].h);
		rte_free(s->fam[i].e);
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

static inline const void *
ct_fam_key(const struct ct_fam *f, uint32_t pos)
{
	return f->key_base + (size_t)pos * f->key_stride;
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
	uint32_t units = (uint32_t)(now >> s->tshift) - f->born[pos];

	return (uint64_t)units << s->tshift;
}

/* (deadline, position) word of a slot: see ct_fam.pdata_ok. */
static inline void
ct_pdata_set(const struct ct_shard *s, struct ct_fam *f, uint32_t pos,
	     const struct ct_entry *head)
{
	uint64_t v;

	if (!f->pdata_ok)
		return;
	/* +1 coarse unit: the coarse clock truncates */
	v = ((uint64_t)(ct_coarse(s, head->last_seen + s->to_ticks[head->state]) + 1) << 32) | pos;
	memcpy((uint8_t *)(uintptr_t)ct_fam_key(f, pos) - sizeof(v), &v, sizeof(v));
}

const void *
ct_key_at(const struct ct_shard *s, enum ct_family fam, uint32_t pos)
{
	const struct ct_fam *f = &s->fam[fam];

	if (pos >= f->slots || f->e[pos].state == CT_ST_NONE)
		return NULL;
	return ct_fam_key(f, pos);
}

struct ct_entry *
ct_entry_at(struct ct_shard *s, enum ct_family fam, uint32_t pos)
{
	struct ct_fam *f = &s->fam[fam];

	if (pos >= f->slots || f->e[pos].state == CT_ST_NONE)
		return NULL;
	return &f->e[pos];
}

static inline void
ct_ed_unlink(struct ct_fam *f, uint32_t pos)
{
	struct ct_entry *e = &f->e[pos];

	if (e->ed_prev != CT_NONE)
		f->e[e->ed_prev].ed_next = e->ed_next;
	else if (f->ed_head == pos)
		f->ed_head = e->ed_next;
	else
		return; /* not on the list */
	if (e->ed_next != CT_NONE)
		f->e[e->ed_next].ed_prev = e->ed_prev;
	else
		f->ed_tail = e->ed_prev;
	e->ed_prev = e->ed_next = CT_NONE;
}

static inline void
ct_ed_push(struct ct_fam *f, uint32_t pos)
{
	struct ct_entry *e = &f->e[pos];

	e->ed_next = CT_NONE;
	e->ed_prev = f->ed_tail;
	if (f->ed_tail != CT_NONE)
		f->e[f->ed_tail].ed_next = pos;
	else
		f->ed_head = pos;
	f->ed_tail = pos;
}

static inline uint32_t
ct_pos_of(const struct ct_fam *f, const struct ct_entry *e)
{
	return (uint32_t)(e - f->e);
}

/* Bookkeeping of a slot whose key has left rte_hash. */
static void
ct_release_slot(struct ct_shard *s, struct ct_fam *f, uint32_t pos)
{
	struct ct_entry *e = &f->e[pos];

	if (!(e->flags & CT_F_REPLY)) {
		ct_ed_unlink(f, pos);
		s->st.live[e->state]--;
	}
	f->count--;
	s->removals++;
	e->state = CT_ST_NONE;
	e->flags = 0;
	e->peer = CT_NONE;
}

/* Removes one entry (not its peer).  Counts nothing but live/count. */
static void
ct_remove_one(struct ct_shard *s, struct ct_fam *f, uint32_t pos)
{
	const void *key = ct_fam_key(f, pos);

	rte_hash_del_key_with_hash(f->h, key, ct_hash(s, key, f->key_len));
	ct_release_slot(s, f, pos);
}

/* Removes an entry and its NAT peer; returns the forward entry's state. */
static enum ct_state
ct_remove_flow(struct ct_shard *s, struct ct_fam *f, uint32_t pos,
	       enum ct_destroy_reason why)
{
	struct ct_entry *e = &f->e[pos];
	uint32_t peer = e->peer;
	uint32_t head = (e->flags & CT_F_REPLY) && peer != CT_NONE ? peer : pos;
	enum ct_state st = f->e[head].state;

	if (unlikely(s->destroy_fn != NULL))
		s->destroy_fn(s->destroy_arg, (enum ct_family)(f - s->fam),
			      ct_fam_key(f, head), &f->e[head], why);
	ct_remove_one(s, f, pos);
	if (peer != CT_NONE && peer < f->slots && f->e[peer].state != CT_ST_NONE &&
	    f->e[peer].peer == pos)
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

	if (e < f->e || e >= f->e + f->slots)
		return 0;
	if (e->flags & CT_F_REPLY) {
		/* the flow's birth is its forward entry's */
		if (e->peer == CT_NONE || e->peer >= f->slots)
			return 0;
		return ct_born_age(s, f, e->peer, now);
	}
	return ct_born_age(s, f, (uint32_t)(e - f->e), now);
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
		return &f->e[e->peer];
	return e;
}

static inline bool
ct_expired(const struct ct_shard *s, const struct ct_entry *e, uint64_t now)
{
	return now - e->last_seen > s->to_ticks[e->state] &&
	       (int64_t)(now - e->last_seen) > 0;
}

/* ---- lookup --------------------------------------------------------- */

static inline uint64_t
ct_lookup_finish(struct ct_shard *s, struct ct_fam *f, const int32_t *pos,
		 unsigned int first, unsigned int n, uint64_t now,
		 struct ct_entry **entries, uint32_t *positions)
{
	uint64_t hits = 0;

	for (unsigned int i = first; i < first + n; i++) {
		struct ct_entry *e;

		if (pos[i] < 0) {
			entries[i] = NULL;
			positions[i] = CT_NONE;
			continue;
		}
		e = &f->e[pos[i]];
		if (unlikely(ct_expired(s, ct_flow_head(f, e), now))) {
			enum ct_state st = ct_remove_flow(s, f, (uint32_t)pos[i],
							  CT_DESTROY_EXPIRED);

			s->st.expired[st]++;
			s->st.expired_on_lookup++;
			entries[i] = NULL;
			positions[i] = CT_NONE;
			continue;
		}
		entries[i] = e;
		positions[i] = (uint32_t)pos[i];
		hits |= 1ull << i;
	}
	return hits;
}

/*
 * Lookup with the expiry deadline kept in rte_hash's data word: one
 * rte_hash bulk call returns (deadline, position) for every hit from the
 * key's own cache line, so a live flow is answered without touching its
 * entry; the entry is only prefetched for the caller.  A flow past its
 * coarse deadline gets the exact check against its entry (and a fresh
 * deadline when it turns out alive: the deadline is refreshed at most once
 * per timeout, never per packet).
 */
static uint64_t
ct_lookup_bulk_pdata(struct ct_shard *s, struct ct_fam *f,
		     const void *const *keys, const uint32_t *sigs, unsigned int n,
		     uint64_t now, struct ct_entry **entries, uint32_t *positions)
{
	void *data[CT_BURST_MAX];
	uint64_t found = 0, hits = 0;
	uint32_t now_c = ct_coarse(s, now);

	rte_hash_lookup_with_hash_bulk_data(f->h, (const void **)(uintptr_t)keys,
					    (hash_sig_t *)(uintptr_t)sigs, n, &found,
					    data);
	for (unsigned int i = 0; i < n; i++) {
		if (!(found & (1ull << i))) {
			entries[i] = NULL;
			positions[i] = CT_NONE;
			continue;
		}
		uint64_t v = (uint64_t)(uintptr_t)data[i];
		uint32_t p = (uint32_t)v;

		rte_prefetch0(&f->e[p]);
		entries[i] = &f->e[p];
		positions[i] = p;
		if (likely((int32_t)(now_c - (uint32_t)(v >> 32)) < 0)) {
			hits |= 1ull << i;
			continue;
		}
		struct ct_entry *h = ct_flow_head(f, &f->e[p]);

		if (ct_expired(s, h, now)) {
			enum ct_state st = ct_remove_flow(s, f, p, CT_DESTROY_EXPIRED);

			s->st.expired[st]++;
			s->st.expired_on_lookup++;
			entries[i] = NULL;
			positions[i] = CT_NONE;
			continue;
		}
		ct_pdata_set(s, f, p, h);
		hits |= 1ull << i;
	}
	return hits;
}

/*
 * Without the data word: the entry is one more dependent cache miss after
 * rte_hash's bucket and key.  Hide it: look up the burst in two halves and
 * prefetch the first half's entries before looking up the second.
 */
uint64_t
ct_lookup_bulk(struct ct_shard *s, enum ct_family fam,
	       const void *const *keys, const uint32_t *sigs, unsigned int n,
	       uint64_t now, struct ct_entry **entries, uint32_t *positions)
{
	struct ct_fam *f = &s->fam[fam];
	int32_t pos[CT_BURST_MAX];
	unsigned int half, i;
	uint64_t hits;

	if (unlikely(n == 0 || n > CT_BURST_MAX))
		return 0;
	if (likely(f->pdata_ok)) {
		hits = ct_lookup_bulk_pdata(s, f, keys, sigs, n, now, entries, positions);
		goto count;
	}
	half = n >= 16 ? n / 2 : n;
	rte_hash_lookup_with_hash_bulk(f->h, (const void **)(uintptr_t)keys,
				       (hash_sig_t *)(uintptr_t)sigs, half, pos);
	for (i = 0; i < half; i++)
		if (pos[i] >= 0)
			rte_prefetch0(&f->e[pos[i]]);
	if (half < n) {
		rte_hash_lookup_with_hash_bulk(f->h,
					       (const void **)(uintptr_t)(keys + half),
					       (hash_sig_t *)(uintptr_t)(sigs + half),
					       n - half, pos + half);
		for (i = half; i < n; i++)
			if (pos[i] >= 0)
				rte_prefetch0(&f->e[pos[i]]);
	}
	hits = ct_lookup_finish(s, f, pos, 0, n, now, entries, positions);
count:
	s->st.lookups += n;
	s->st.hits += (uint64_t)__builtin_popcountll(hits);
	s->st.misses += n - (uint64_t)__builtin_popcountll(hits);
	return hits;
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

static int
ct_early_drop(struct ct_shard *s, struct ct_fam *f)
{
	uint32_t victim = f->ed_head;

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

struct ct_entry *
ct_insert(struct ct_shard *s, enum ct_family fam, const void *key,
	  uint32_t sig, uint8_t proto, enum ct_state state, bool assured,
	  uint64_t now, uint32_t *pos_out, int *err)
{
	struct ct_fam *f = &s->fam[fam];
	struct ct_entry *e;
	int32_t pos;
	int ret;

	if (unlikely(state == CT_ST_NONE || state >= CT_ST_MAX)) {
		ret = -EINVAL;
		goto fail_nocount;
	}
	if (unlikely(s->flood_win_limit != 0)) {
		/* refusing a key that is already here would punish a live
		 * flow: look first (flood mode only) */
		pos = rte_hash_lookup_with_hash(f->h, key, sig);
		if (pos >= 0)
			goto exists;
		if (ct_flood_refuse(s, assured, now)) {
			s->st.insert_fail_by[CT_INSFAIL_FLOOD]++;
			ret = -EBUSY;
			goto fail;
		}
	}
	/* Full: evict the oldest unassured flow first.  No lookup before
	 * it (a SYN flood's steady state inserts into a full table, and a
	 * search costs the bucket misses of a second insert): a key that
	 * turns out present just cost the oldest unassured flow its entry
	 * a little early -- or was that flow, and is added afresh. */
	if (unlikely(f->count >= f->slots) && ct_early_drop(s, f) != 0) {
		s->st.insert_fail_by[CT_INSFAIL_FULL]++;
		ret = -ENOSPC;
		goto fail;
	}
	pos = rte_hash_add_key_with_hash(f->h, key, sig);
	if (unlikely(pos == -ENOSPC)) {
		/* key slots are f->slots exactly (buckets extend): slots our
		 * count does not see; evict once */
		if (ct_early_drop(s, f) == 0)
			pos = rte_hash_add_key_with_hash(f->h, key, sig);
	}
	if (unlikely(pos < 0)) {
		s->st.insert_fail_by[pos == -ENOSPC ? CT_INSFAIL_FULL
						     : CT_INSFAIL_HASH]++;
		ret = pos == -ENOSPC ? -ENOSPC : -EIO;
		goto fail;
	}
	e = &f->e[pos];
	if (unlikely(e->state != CT_ST_NONE)) {
		/* rte_hash_add_key on a present key returns its position but
		 * overwrites its data word (our deadline + position) with 0:
		 * put the live flow's word back before anyone looks it up */
		ct_pdata_set(s, f, (uint32_t)pos, ct_flow_head(f, e));
		goto exists;
	}
	memset(e, 0, sizeof(*e));
	e->state = (uint8_t)state;
	e->proto = proto;
	e->peer = CT_NONE;
	e->ed_prev = e->ed_next = CT_NONE;
	e->last_seen = now;
	f->born[pos] = (uint32_t)(now >> s->tshift);
	e->flags = (fam == CT_V6 ? CT_F_V6 : 0) |
		   (assured || ct_state_assured(state) ? CT_F_ASSURED : 0);
	if (unlikely(state == CT_ST_PICKUP))
		e->pickup_t = ct_pickup_clock(s, now);
	if (!(e->flags & CT_F_ASSURED))
		ct_ed_push(f, (uint32_t)pos);
	ct_pdata_set(s, f, (uint32_t)pos, e);
	f->count++;
	s->st.live[state]++;
	s->st.inserts++;
	if (pos_out)
		*pos_out = (uint32_t)pos;
	return e;
exists:
	s->st.insert_fail_by[CT_INSFAIL_EXISTS]++;
	s->st.insert_fail++;
	if (err)
		*err = -EEXIST;
	if (pos_out)
		*pos_out = (uint32_t)pos;   /* the live entry's position */
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

void
ct_link_peer(struct ct_shard *s, enum ct_family fam, uint32_t fwd_pos,
	     uint32_t reply_pos)
{
	struct ct_fam *f = &s->fam[fam];
	struct ct_entry *fe = &f->e[fwd_pos], *re = &f->e[reply_pos];

	fe->peer = reply_pos;
	re->peer = fwd_pos;
	fe->flags |= CT_F_NAT;
	/* The reply entry carries no state of its own: it leaves the
	 * early-drop list and the live-by-state counts to its forward entry. */
	if (!(re->flags & CT_F_REPLY)) {
		ct_ed_unlink(f, reply_pos);
		s->st.live[re->state]--;
	}
	re->flags |= CT_F_NAT | CT_F_REPLY | CT_F_ASSURED;
	re->backend = fe->backend;
	re->service = fe->service;
	re->nat_port = fe->nat_port;
	re->nat_addr = fe->nat_addr;
	re->state = fe->state;
	ct_pdata_set(s, f, reply_pos, fe);
}

int
ct_delete_pos(struct ct_shard *s, enum ct_family fam, uint32_t pos)
{
	struct ct_fam *f = &s->fam[fam];

	if (pos >= f->slots || f->e[pos].state == CT_ST_NONE)
		return -ENOENT;
	ct_remove_flow(s, f, pos, CT_DESTROY_DELETED);
	s->st.deletes++;
	return 0;
}

int
ct_delete(struct ct_shard *s, enum ct_family fam, const void *key, uint32_t sig)
{
	struct ct_fam *f = &s->fam[fam];
	int32_t pos;
	uint32_t peer;

	if (unlikely(s->destroy_fn != NULL)) {
		/* the hook wants the flow as it is: take the general path */
		pos = rte_hash_lookup_with_hash(f->h, key, sig);
		return pos < 0 ? -ENOENT : ct_delete_pos(s, fam, (uint32_t)pos);
	}
	pos = rte_hash_del_key_with_hash(f->h, key, sig);
	if (pos < 0)
		return -ENOENT;
	/* One hash operation: the key is already out; settle the slot and
	 * take the NAT peer with it. */
	peer = f->e[pos].peer;
	ct_release_slot(s, f, (uint32_t)pos);
	if (peer != CT_NONE && peer < f->slots && f->e[peer].state != CT_ST_NONE &&
	    f->e[peer].peer == (uint32_t)pos)
		ct_remove_one(s, f, peer);
	s->st.deletes++;
	return 0;
}

/* ---- state machine -------------------------------------------------- */

enum ct_state
ct_state_initial(uint8_t proto, uint8_t tcp_flags)
{
	if (proto == IPPROTO_TCP) {
		if (tcp_flags & CT_TCP_RST)
			return CT_ST_CLOSE;
		if ((tcp_flags & (CT_TCP_SYN | CT_TCP_ACK)) == CT_TCP_SYN)
			return CT_ST_SYN_SENT;
		/* Mid-stream pickup (flood mode skipped the SYN, the
		 * balancer restarted, or a spoofed ACK): on probation,
		 * unassured, until it proves itself (ct.h, "Assured"). */
		return CT_ST_PICKUP;
	}
	if (proto == IPPROTO_UDP)
		return CT_ST_UDP;
	return CT_ST_OTHER;
}

/*
 * TCP transitions from the flags the balancer sees.  @reply is true for
 * packets backend->client (NAT only).  In DSR only the client side is
 * seen, so SYN_SENT + client ACK means the server answered: ESTABLISHED;
 * and the close is tracked as far as the client's FIN (FIN_WAIT).
 */
enum ct_state
ct_tcp_next(enum ct_state cur, bool reply, uint8_t fl)
{
	bool syn = fl & CT_TCP_SYN, ack = fl & CT_TCP_ACK, fin = fl & CT_TCP_FIN;

	if (fl & CT_TCP_RST)
		return CT_ST_CLOSE;
	switch (cur) {
	case CT_ST_NONE:
	case CT_ST_CLOSE:
	case CT_ST_TIME_WAIT:
		if (syn && !ack && !reply)
			return CT_ST_SYN_SENT; /* new connection on the tuple */
		return cur;
	case CT_ST_SYN_SENT:
		if (reply && syn && ack)
			return CT_ST_SYN_RECV;
		if (!reply && ack && !syn)
			return fin ? CT_ST_FIN_WAIT : CT_ST_ESTABLISHED;
		return cur;
	case CT_ST_PICKUP:
		/* the other side answered (NAT): a real connection */
		if (reply)
			return CT_ST_ESTABLISHED;
		if (syn && !ack)
			return CT_ST_SYN_SENT; /* a new connection on the tuple */
		return cur; /* proven by persistence: ct_update */
	case CT_ST_SYN_RECV:
		if (!reply && ack && !syn)
			return fin ? CT_ST_FIN_WAIT : CT_ST_ESTABLISHED;
		return cur;
	case CT_ST_ESTABLISHED:
		if (fin)
			return reply ? CT_ST_CLOSE_WAIT : CT_ST_FIN_WAIT;
		return cur;
	case CT_ST_FIN_WAIT:
		/* client closed; the server's FIN completes both halves */
		if (fin && reply)
			return CT_ST_LAST_ACK;
		return cur;
	case CT_ST_CLOSE_WAIT:
		if (fin && !reply)
			return CT_ST_LAST_ACK;
		return cur;
	case CT_ST_LAST_ACK:
		if (ack && !fin)
			return CT_ST_TIME_WAIT;
		return cur;
	default:
		return cur;
	}
}

enum ct_state
ct_update(struct ct_shard *s, struct ct_entry *e, bool reply,
	  uint8_t tcp_flags, uint32_t bytes, uint64_t now)
{
	struct ct_fam *f = ct_fam_of(s, e);
	struct ct_entry *h = ct_flow_head(f, e);
	enum ct_state old = h->state, st = old;

	e->packets++;
	e->bytes += bytes;
	e->last_seen = now;
	h->last_seen = now;
	if (reply)
		h->flags |= CT_F_SEEN_REPLY;
	if (h->proto == IPPROTO_TCP) {
		st = ct_tcp_next(old, reply, tcp_flags);
		/* a pickup proves itself by persistence: enough packets over
		 * enough time (a spoofed ACK is one packet per tuple) */
		if (unlikely(st == CT_ST_PICKUP) &&
		    h->packets + (e != h ? e->packets : 0) >= s->cfg.pickup_pkts &&
		    (uint16_t)(ct_pickup_clock(s, now) - h->pickup_t) >= s->pickup_units)
			st = CT_ST_ESTABLISHED;
	} else if (h->proto == IPPROTO_UDP && old == CT_ST_UDP &&
		 (reply || h->packets + (e != h ? e->packets : 0) >= 2))
		st = CT_ST_UDP_STREAM;
	if (likely(st == old))
		return st;
	s->st.live[old]--;
	s->st.live[st]++;
	h->state = (uint8_t)st;
	if (h != e)
		e->state = (uint8_t)st;
	else if (h->peer != CT_NONE)
		f->e[h->peer].state = (uint8_t)st;
	/* a new state has a new timeout: the lookup deadlines follow */
	ct_pdata_set(s, f, ct_pos_of(f, h), h);
	if (h->peer != CT_NONE)
		ct_pdata_set(s, f, h->peer, h);
	if (!(h->flags & CT_F_ASSURED) && ct_state_assured(st)) {
		h->flags |= CT_F_ASSURED;
		ct_ed_unlink(f, ct_pos_of(f, h));
	}
	if (unlikely(s->state_fn != NULL))
		s->state_fn(s->state_arg, (enum ct_family)(f - s->fam),
			    ct_fam_key(f, ct_pos_of(f, h)), h, old, now);
	return st;
}

/* ---- expiry --------------------------------------------------------- */

static unsigned int
ct_sweep(struct ct_shard *s, struct ct_fam *f, uint32_t budget, uint64_t now)
{
	unsigned int expired = 0;
	uint32_t p = f->sweep_pos;

	for (uint32_t i = 0; i < budget; i++) {
		struct ct_entry *e = &f->e[p];

		if (e->state != CT_ST_NONE && !(e->flags & CT_F_REPLY) &&
		    ct_expired(s, e, now)) {
			enum ct_state st = ct_remove_flow(s, f, p, CT_DESTROY_EXPIRED);

			s->st.expired[st]++;
			expired++;
		}
		if (++p == f->slots)
			p = 0;
	}
	f->sweep_pos = p;
	return expired;
}

/*
 * Paced sweep: examine slots in proportion to elapsed time so one pass
 * over the table takes sweep_period, capped at expire_budget per call.
 * Work per call is bounded whatever the clock does.
 */
unsigned int
ct_expire(struct ct_shard *s, uint64_t now)
{
	struct ct_fam *f = &s->fam[s->sweep_turn++ & 1];
	uint64_t elapsed = now - s->sweep_last;
	uint64_t n;

	if ((int64_t)elapsed <= 0)
		return 0;
	/* elapsed / period of a pass, times the slots: both sides bounded,
	 * no overflow below ~2^32 slots x 2^32 ticks. */
	if (elapsed >= s->sweep_period)
		n = f->slots;
	else
		n = (elapsed * f->slots) / s->sweep_period;
	if (n == 0)
		return 0;
	s->sweep_last = now;
	if (n > s->cfg.expire_budget)
		n = s->cfg.expire_budget;
	return ct_sweep(s, f, (uint32_t)n, now);
}

/* ---- accessors ------------------------------------------------------ */

const struct ct_stats *
ct_stats_get(const struct ct_shard *s)
{
	return &s->st;
}

const uint64_t *
ct_removal_seq(const struct ct_shard *s)
{
	return &s->removals;
}

uint32_t
ct_count(const struct ct_shard *s)
{
	return s->fam[CT_V4].count + s->fam[CT_V6].count;
}

size_t
ct_memory(const struct ct_shard *s)
{
	return s->mem_bytes;
}

uint32_t
ct_slots(const struct ct_shard *s, enum ct_family fam)
{
	return s->fam[fam].slots;
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
		uint32_t p = (uint32_t)c;

		for (; p < f->slots && max > 0; p++, max--) {
			struct ct_entry *e = &f->e[p];
			struct ct_flow fl;

			if (e->state == CT_ST_NONE || (e->flags & CT_F_REPLY))
				continue;
			/* every field is written below (no memset: a listing
			 * walks millions of flows on the worker's time); the
			 * key union is valid for fl.family's length, the reply
			 * key only with has_reply */
			memcpy(&fl.k6, ct_fam_key(f, p), f->key_len);
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
			if (e->peer != CT_NONE && e->peer < f->slots &&
			    f->e[e->peer].state != CT_ST_NONE) {
				memcpy(&fl.reply.k6, ct_fam_key(f, e->peer), f->key_len);
				fl.reply_packets = f->e[e->peer].packets;
				fl.reply_bytes = f->e[e->peer].bytes;
				fl.has_reply = 1;
			}
			visited++;
			if (fn(&fl, arg)) {
				ct_remove_flow(s, f, p, CT_DESTROY_DELETED);
				s->st.evictions[CT_EVICT_FLUSH]++;
				s->st.deletes++;
			}
		}
		if (p >= f->slots)
			c = fam + 1 < CT_FAMILIES ? (uint64_t)(fam + 1) << 32
						  : CT_WALK_DONE;
		else
			c = ((uint64_t)fam << 32) | p;
	}
	*cursor = c;
	return visited;
}
