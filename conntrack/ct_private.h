/* SPDX-License-Identifier: BSD-3-Clause */
/* Layout of a conntrack shard.  Private to conntrack/. */
#ifndef FLOWGATE_CT_PRIVATE_H
#define FLOWGATE_CT_PRIVATE_H

#include <assert.h>

#include <rte_common.h>

#include "ct.h"

/*
 * One address family's table: open addressing with linear probing over
 * slots that hold a key and its entry side by side, so the slot line a
 * lookup reads answers it -- key, liveness, backend -- and is the line the
 * dataplane then updates (rte_hash reads three: bucket, key store, entry).
 *
 *   IPv4 slot:  [ct_key4 16 B][ct_entry 48 B]            = one 64 B line
 *   IPv6 slot:  [ct_key6 48 B][ct_entry 48 B][pad 32 B]  = 128 B: the
 *               key and the entry's first 16 bytes in the first line
 *
 * A slot never moves while its flow lives: its index is the flow's
 * position (NAT peer links, the early-drop list, the walk cursor).
 *
 * Two regions of one slot array, each its own linear-probing table that
 * wraps within itself:
 *   [0, fsize)      forward entries (one a flow: client -> VIP), `cap`
 *   [fsize, size)   NAT reply entries (backend -> local address), `rcap`
 * A lookup probes the forward region, and the reply region for the keys
 * it missed when the region holds any entry (keys the caller hints as
 * replies: the other way round; keys known to be no reply's: never,
 * ct_lookup_bulk_hint).  A flow's packets then read
 * metadata and slots of a table sized for the flows alone, as DSR's is
 * (with both directions in one table, NAT's lookups at 1M flows read a
 * table twice as large: bench/RESULTS.md, session 14), and the sweep and
 * the walk, which visit flows, cover the forward region only (a reply
 * entry leaves with its forward entry).  Positions stay one index space,
 * so peer links, the early-drop list and the walk cursor are unchanged.
 *
 * Beside the slots, a metadata array of 2 bytes per slot, 32 slots to a
 * line (F14's and Swiss tables' idea, per slot):
 *   tag  8 bits of the occupant's signature with the top bit set, 0 when
 *        the slot is free: a probe reads a slot's line only when its tag
 *        matches (1 in 128 for another key), so a miss (a new flow) reads
 *        no slot at all, and a hit reads its own slot only;
 *   ovf  how many live keys probe past the slot (their home is at or
 *        before it, their slot after it), saturating at 255 (then it
 *        stays: a probe just goes on further).  A probe stops at the
 *        first slot without its key that no key probes past: no
 *        tombstones, and a freed slot is free at once.
 * The occupant's displacement from home (12 bits, in the last pad bytes
 * of its key, the key's "meta" word) tells a removal which counts to
 * lower.  An insert that would land 4096 or more slots from home is
 * refused (CT_INSFAIL_HASH; with CRC32C at <= 4/7 load it does not
 * happen).
 */
#define CT_META_SHIFT 8                 /* disp = le32(key + key_len - 4) >> 8 */
#define CT_DISP_MAX 4095u
#define CT_OVF_SAT 255u
/* the key bytes a lookup compares in its last 8-byte word: all but the
 * meta bytes (the rest of the pad is zero in every key) */
#define CT_KEY_LAST_MASK 0x000000FFFFFFFFFFull

/* one slot's metadata: tag in the low byte, ovf in the high byte */
typedef uint16_t ct_meta_t;
#define CT_BORN_REPLY UINT32_MAX       /* ct_fam::born of a NAT reply entry */
#define CT_TAG(sig) ((uint8_t)(((sig) & 0x7f) | 0x80))

struct ct_slot4 {
	struct ct_key4 k;
	struct ct_entry e;
};
struct ct_slot6 {
	struct ct_key6 k;
	struct ct_entry e;
	uint8_t pad[32];
};
static_assert(sizeof(struct ct_slot4) == 64, "IPv4 slot is one cache line");
static_assert(sizeof(struct ct_slot6) == 128, "IPv6 slot is two cache lines");
static_assert(offsetof(struct ct_key4, pad) <= sizeof(struct ct_key4) - 3 &&
	      offsetof(struct ct_key6, pad) <= sizeof(struct ct_key6) - 3,
	      "the meta bytes are key padding");
static_assert(offsetof(struct ct_slot6, e) + 16 <= 64,
	      "IPv6 key and the entry's lookup fields share the first line");

struct ct_fam {
	uint8_t *slot;          /* size slots of 1 << slot_shift bytes */
	ct_meta_t *meta;        /* size (tag, ovf) pairs */
	uint32_t fsize;         /* forward region's slots: 1.75 x cap, a multiple of 16 */
	uint32_t size;          /* all slots: fsize + 1.75 x rcap, likewise */
	uint32_t slot_shift;    /* 6 (IPv4) or 7 (IPv6) */
	uint32_t key_len;       /* the entry follows the key */
	uint32_t cap;           /* live entries the forward region allows */
	uint32_t count;         /* live entries in the forward region */
	uint32_t rcap;          /* live entries the reply region allows */
	uint32_t rcount;        /* live entries in the reply region */
	/* creation time of each slot's flow, in coarse units (ticks >>
	 * tshift, 0.5-1 ms), wrapping: kept out of the slot (written on
	 * insert only, read by the walk and ct_entry_life()); a NAT reply
	 * entry's, whose flow's birth is its forward entry's, is
	 * CT_BORN_REPLY, so the sweep skips it without reading its slot */
	uint32_t *born;
	/* Early-drop lists (unassured forward entries, oldest first): [0]
	 * flows without a reply entry, [1] NAT flows (CT_F_NAT), so that a
	 * full reply region finds a flow whose eviction frees one at once */
	uint32_t ed_head[2], ed_tail[2];
	uint32_t sweep_pos;     /* incremental expiry cursor */
	uint64_t sweep_last;    /* the time the sweep has paced this family up to */
};

struct ct_shard {
	struct ct_fam fam[CT_FAMILIES];
	uint64_t to_ticks[CT_ST_MAX];   /* timeouts in caller ticks */
	unsigned int tshift;            /* coarse time = ticks >> tshift (~1 ms) */
	uint32_t pickup_units;          /* pickup_ms in ct_entry::pickup_t units */
	struct ct_config cfg;
	char name[32];

	/* incremental expiry pacing (and each family's sweep_last) */
	uint64_t sweep_period;          /* ticks for one pass over a family */
	uint32_t sweep_turn;

	/* flood mode: inserts per 1/16 s window */
	uint64_t flood_win_start;
	uint64_t flood_win_len;
	uint32_t flood_win_limit;       /* 0 = off */
	uint32_t flood_win_count;

	/* mailbox (control plane -> owner) */
	struct ct_mbox_req *mbox_req;   /* accessed with __atomic */
	uint64_t mbox_cursor;

	ct_destroy_fn destroy_fn;
	void *destroy_arg;
	ct_state_fn state_fn;
	void *state_arg;

	size_t mem_bytes;
	/* entries removed so far (expiry, eviction, delete): see
	 * ct_removal_seq() */
	uint64_t removals;
	struct ct_stats st;
} __rte_cache_aligned;

#endif
