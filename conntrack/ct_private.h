/* SPDX-License-Identifier: BSD-3-Clause */
/* Layout of a conntrack shard.  Private to conntrack/. */
#ifndef FLOWGATE_CT_PRIVATE_H
#define FLOWGATE_CT_PRIVATE_H

#include <rte_common.h>
#include <rte_hash.h>

#include "ct.h"

/* One address family's table: rte_hash + the entry array it indexes. */
struct ct_fam {
	struct rte_hash *h;
	struct ct_entry *e;     /* slots entries, indexed by rte_hash position */
	/* creation time of each slot's flow, in coarse units (ticks >>
	 * tshift, 0.5-1 ms), wrapping: kept out of struct ct_entry so the
	 * 48-byte entry a lookup touches does not grow; written on insert
	 * only, read by the walk and ct_entry_life() */
	uint32_t *born;
	uint32_t slots;         /* key slots of h == entries of e */
	uint32_t count;         /* live entries (both directions) */
	uint32_t key_len;
	/* Key store addressing, derived once from rte_hash_get_key_with_position
	 * so ct_key_at is arithmetic rather than a second lookup. */
	const uint8_t *key_base;
	size_t key_stride;
	/* rte_hash keeps an 8-byte data word in front of each key, in the
	 * line a lookup already brings in.  We keep (expiry deadline, position)
	 * there, so a lookup knows a flow is alive without reading its entry
	 * (VPP's lb keeps timeouts in its buckets for the same reason).
	 * pdata_ok: the layout was verified at creation. */
	bool pdata_ok;
	/* Early-drop list (unassured forward entries, oldest first). */
	uint32_t ed_head, ed_tail;
	uint32_t sweep_pos;     /* incremental expiry cursor */
};

struct ct_shard {
	struct ct_fam fam[CT_FAMILIES];
	uint64_t to_ticks[CT_ST_MAX];   /* timeouts in caller ticks */
	unsigned int tshift;            /* coarse time = ticks >> tshift (~1 ms) */
	uint32_t pickup_units;          /* pickup_ms in ct_entry::pickup_t units */
	struct ct_config cfg;
	char name[32];

	/* incremental expiry pacing */
	uint64_t sweep_last;
	uint64_t sweep_period;          /* ticks for one pass over the table */
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
