/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * Flow records: one tracked flow as bytes, and back into a shard.
 *
 * A record carries everything another process needs to go on forwarding
 * a flow exactly as this one did: its forward key, for full NAT its reply
 * key (which *is* the NAT port allocation: the local address and port the
 * backend answers to), its TCP state, the assured / mid-stream / reply
 * flags, both directions' TCP windows (ct_entry's td_* fields), its age
 * and idle time, and the identity of its backend and service -- by
 * address and port, never by an id or an index: another process (a
 * restarted daemon with an edited config, another node) numbers its
 * backends its own way.  The VIP of a flow is its forward key's
 * destination; the service is (VIP, service_port, proto).
 *
 * Users: the restart hand-over (dataplane/fg_state.c: the state file a
 * stopping daemon writes and a starting one loads) and node-to-node state
 * sync.  The container (file header, message header, authentication,
 * checksums) is theirs; a record has no framing of its own, and its
 * length follows from its first two bytes (ct_rec_len).
 *
 * ## Wire format, version CT_REC_VERSION (all integers big-endian;
 *    addresses and ports as on the wire; A = 4 (IPv4) or 16 (IPv6))
 *
 * | offset      | size   | field                                         |
 * |-------------|--------|-----------------------------------------------|
 * | 0           | 1      | family: 4 or 6                                |
 * | 1           | 1      | flags: CT_REC_F_*                             |
 * | 2           | 1      | IP protocol                                   |
 * | 3           | 1      | state: enum ct_state (values frozen below)    |
 * | 4           | 2      | service port                                  |
 * | 6           | 2      | backend port                                  |
 * | 8           | 4      | idle ms (since the last packet)               |
 * | 12          | 4      | life ms (since the flow was created)          |
 * | 16          | 4      | probation ms (DSR, unassured: since it began) |
 * | 20          | 8      | forward window: end u32, win u16, wscale u8,  |
 * |             |        | td flags u8 (CT_TD_*; all 0: none known)      |
 * | 28          | 2A + 4 | forward key: saddr, daddr, sport, dport       |
 * | 32 + 2A     | A      | backend address                               |
 * | NAT only    | 2A + 4 | reply key: backend, local, bport, local port  |
 * |             | 8      | reply window (as the forward one)             |
 * | COUNTERS    | 16     | packets u64, bytes u64 (forward)              |
 * | + NAT       | 16     | reply packets u64, reply bytes u64            |
 *
 * An IPv4 DSR record is 44 bytes (60 with counters), an IPv4 NAT record
 * 64 (96); IPv6: 80 (96), 124 (156).
 *
 * ## Versions
 * A container says which version its records are; ct_rec_decode reads
 * CT_REC_VERSION only.  Any change of this layout, of the flag bits or of
 * the state values (the static_asserts in ct_rec.c hold them) is a new
 * version, and a reader of the new one decodes the old ones or refuses
 * them: never reads them as its own.
 *
 * ## Threads
 * ct_rec_encode / ct_rec_decode / ct_rec_len are pure (any thread).
 * ct_rec_fill and ct_rec_restore work on a shard: its owner only (or any
 * single thread while nobody else runs it, as the restart does).
 */
#ifndef FLOWGATE_CT_REC_H
#define FLOWGATE_CT_REC_H

#include <stddef.h>
#include <stdint.h>

#include "ct.h"

#ifdef __cplusplus
extern "C" {
#endif

/** The record layout this build writes and reads. */
#define CT_REC_VERSION 1

/** ct_rec::flags, as on the wire. */
#define CT_REC_F_NAT        0x01 /**< full NAT: reply key and window present */
#define CT_REC_F_COUNTERS   0x02 /**< packet / byte counters present */
#define CT_REC_F_ASSURED    0x04 /**< CT_F_ASSURED */
#define CT_REC_F_SEEN_REPLY 0x08 /**< CT_F_SEEN_REPLY */
#define CT_REC_F_MIDSTREAM  0x10 /**< CT_F_MIDSTREAM */
#define CT_REC_F_FRAG       0x20 /**< CT_F_FRAG: a fragment-follow entry */
#define CT_REC_F_ALL        0x3f

/** Longest record (IPv6, NAT, counters). */
#define CT_REC_LEN_MAX 156
/** Shortest record (IPv4, DSR, no counters). */
#define CT_REC_LEN_MIN 44

/** One direction's TCP window (ct_entry's td_* fields, ct.h "TCP
 *  windows"); flags 0: none known. */
struct ct_rec_td {
	uint32_t end;
	uint16_t win;
	uint8_t wscale;
	uint8_t flags;   /**< CT_TD_VALID, CT_TD_HS */
};

/** A flow record, decoded.  Keys, addresses and ports in network order,
 *  as in struct ct_key4 / ct_key6 (padding zero). */
struct ct_rec {
	uint8_t family;   /**< enum ct_family */
	uint8_t flags;    /**< CT_REC_F_* */
	uint8_t proto;
	uint8_t state;    /**< enum ct_state, never CT_ST_NONE */
	union ct_key key;   /**< forward: client -> VIP */
	union ct_key reply; /**< CT_REC_F_NAT: backend -> local address:port */
	uint8_t backend[16];   /**< backend address (4 bytes for IPv4) */
	uint16_t backend_port; /**< network order */
	uint16_t service_port; /**< network order */
	uint32_t idle_ms;
	uint32_t life_ms;
	uint32_t probation_ms;
	struct ct_rec_td td;       /**< forward direction's window */
	struct ct_rec_td reply_td; /**< CT_REC_F_NAT: the reply direction's */
	uint64_t packets, bytes;   /**< CT_REC_F_COUNTERS */
	uint64_t reply_packets, reply_bytes; /**< COUNTERS and NAT */
};

/**
 * Length of the record that starts with bytes @p b0 (family) and @p b1
 * (flags), or 0 when those two bytes name no record of this version.
 * A reader with fewer bytes than this holds a truncated record.  Pure.
 */
size_t ct_rec_len(uint8_t b0, uint8_t b1);

/**
 * Writes @p r at @p buf.  Pure.
 * @return bytes written (ct_rec_len), or -EINVAL (a field ct_rec_decode
 *   would refuse: family, flags, state, window scale), -ENOSPC (@p len
 *   too short).
 */
int ct_rec_encode(const struct ct_rec *r, uint8_t *buf, size_t len);

/**
 * Reads the record at @p buf, checking every field: family, known flags,
 * a state that exists and fits the protocol (TCP states for TCP, UDP's
 * for UDP, OTHER else and for fragment-follow entries), NAT only for TCP
 * and UDP and never with FRAG, window scales 0..14 (a NAT reply window's
 * kept client scale may be 15: none), known window flags.  @p r is
 * written only on success.  Pure.
 * @return bytes read, or -EMSGSIZE (@p len shorter than the record),
 *   -EINVAL (a field out of range).
 */
int ct_rec_decode(const uint8_t *buf, size_t len, struct ct_rec *r);

/**
 * Fills @p r from a flow the shard @p s holds (a ct_walk() report, @p f),
 * at time @p now: keys, state, flags, times, both windows, counters.  The
 * backend's address and port and the service port are the caller's to
 * fill (the shard knows ids only).  Owner only.
 */
void ct_rec_fill(struct ct_shard *s, const struct ct_flow *f, uint64_t now,
		 struct ct_rec *r);

/**
 * ct_rec_fill for the flow whose forward entry @p e (key @p key, family
 * @p fam) the shard holds: what a destroy or state hook, or the code
 * that just inserted it, has in hand.  Owner only (hooks included: it
 * only reads the shard).
 */
void ct_rec_fill_entry(struct ct_shard *s, enum ct_family fam, const void *key,
		       const struct ct_entry *e, uint64_t now, struct ct_rec *r);

/**
 * Marks both directions' windows of the flow whose forward entry is at
 * @p pos as stale (CT_TD_RELEARN): each direction's next segment other
 * than an RST sets its window again.  For a flow installed from another
 * node's record (state sync), whose windows are those of the record: the
 * stream may have moved past them since.  Entries without a window
 * (unassured, closing: on an early-drop list) are left as they are.
 * Owner only.
 */
void ct_entry_relearn(struct ct_shard *s, enum ct_family fam, uint32_t pos);

/** What the restoring process calls things: its own ids. */
struct ct_rec_ids {
	uint16_t service;  /**< ct_entry::service */
	uint32_t backend;  /**< ct_entry::backend */
	uint8_t nat_addr;  /**< ct_entry::nat_addr (NAT: the reply key's
			        destination's index among the locals) */
};

/**
 * Puts the flow of record @p r into shard @p s as it was: forward entry
 * and, for NAT, its reply entry (the record's reply key: the same local
 * port), with the record's state, flags, windows, counters, and times
 * taken back from @p now (idle, life, probation), the ids in @p ids.
 * Nothing else is touched: no eviction (a full region refuses), no flood
 * refusal, no destroy or state hook.  Owner only.
 * @return 0 and *pos_out (the forward entry's position; may be NULL), or
 *   -ETIME (idle longer than its state's timeout here: expired),
 *   -EEXIST (a key, forward or reply, is tracked already), -ENOSPC (the
 *   region it needs is full), -EINVAL (family / state / flags that the
 *   shard cannot hold), -EIO (no slot near its home).
 */
int ct_rec_restore(struct ct_shard *s, const struct ct_rec *r,
		   const struct ct_rec_ids *ids, uint64_t now, uint32_t *pos_out);

#ifdef __cplusplus
}
#endif
#endif /* FLOWGATE_CT_REC_H */
