/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * State sync between nodes (issue 35; docs/DESIGN.md "State sync between
 * nodes"): the message one flowgate sends its peers, the parser that
 * checks a received one, and the counters of what was refused.
 *
 * A node streams the flows of its synced services (NAT always, DSR when
 * configured) to every peer: new flows, state changes and closes, in
 * batches of up to FG_SYNC_MSG_MAX bytes over UDP.  A flow is one flow
 * record (conntrack/ct_rec.h: the same bytes the state file holds), so
 * what a flow is on the wire is written once.
 *
 * ## Format, version FG_SYNC_VERSION (integers big-endian)
 *
 *   header, FG_SYNC_HDR_LEN (32) bytes:
 *     0   4  magic "FGSY"
 *     4   1  format version (FG_SYNC_VERSION)
 *     5   1  flow record version (CT_REC_VERSION)
 *     6   2  number of entries
 *     8   4  the sender's node id (`sync listen ... node ID`; never 0)
 *     12  4  0
 *     16  8  the sender's epoch: when it started, CLOCK_REALTIME ns
 *     24  8  sequence number, from 1 in each epoch
 *   entries, each: an op (FG_SYNC_OP_FLOW: install or refresh the flow;
 *     FG_SYNC_OP_CLOSE: forget it, only its family, protocol and forward
 *     key count), then one flow record (ct_rec.h)
 *   trailer: HMAC-SHA256 (FG_SYNC_MAC_LEN bytes) of everything before it,
 *     under the shared key (`sync key FILE`)
 *
 * ## Checks, in order (each refusal a counter, FG_SYNC_REFUSE_LIST)
 * length and magic, versions, the MAC (nothing behind the header is read
 * before it matched: constant-time compare), every entry (ops, records
 * through ct_rec_decode, exact fill), then the caller's: a node id that
 * is a configured peer's, from that peer's address (unknown_peer), and a
 * (epoch, sequence) that is new (fg_sync_replay_check: a window of
 * FG_SYNC_REPLAY_WIN sequences, an older epoch refused).  A refused
 * message changes nothing.
 *
 * Threads: everything here is pure or works on the caller's objects
 * (any one thread each); the daemon's sync thread (fg_sync.c) is its user.
 */
#ifndef FLOWGATE_FG_SYNC_H
#define FLOWGATE_FG_SYNC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ct_rec.h"

#ifdef __cplusplus
extern "C" {
#endif

/** The format this build writes and reads. */
#define FG_SYNC_VERSION 1
#define FG_SYNC_MAGIC "FGSY"
#define FG_SYNC_HDR_LEN 32
#define FG_SYNC_MAC_LEN 32
/** Largest message: one Ethernet frame's UDP payload (1500 - 20 - 8) */
#define FG_SYNC_MSG_MAX 1472
/** Smallest and largest shared key, bytes (a key file's content). */
#define FG_SYNC_KEY_MIN 16
#define FG_SYNC_KEY_MAX 64
/** Sequences behind the newest one still accepted once (reordering). */
#define FG_SYNC_REPLAY_WIN 64

/** An entry's op. */
#define FG_SYNC_OP_FLOW  1
#define FG_SYNC_OP_CLOSE 2

/** Why a received message is dropped whole: one counter each
 *  (sync_refused{reason}), as `fgctl sync`, telemetry and /metrics name it. */
#define FG_SYNC_REFUSE_LIST(X) \
	X(truncated,    "shorter than its header, entries and MAC say") \
	X(bad_magic,    "not a flowgate sync message (its first bytes are not FGSY)") \
	X(bad_version,  "a format or flow record version this build does not read") \
	X(bad_mac,      "its HMAC does not match: another key, or changed on the way") \
	X(bad_record,   "an entry that does not decode: unknown op, a record out of range, bytes left over") \
	X(unknown_peer, "its node id is no configured peer's, or it came from another address") \
	X(replay,       "an epoch older than the peer's, or a sequence seen already or too old")

enum fg_sync_refuse {
	FG_SYNC_OK = 0,
#define FG_X(n, d) FG_SYNC_##n,
	FG_SYNC_REFUSE_LIST(FG_X)
#undef FG_X
	FG_SYNC_REFUSE_MAX
};
/** Names and help by reason (index 0 "ok"). */
extern const char *const fg_sync_refuse_names[FG_SYNC_REFUSE_MAX];
extern const char *const fg_sync_refuse_help[FG_SYNC_REFUSE_MAX];

/** The shared key. */
struct fg_sync_key {
	uint8_t k[FG_SYNC_KEY_MAX];
	uint32_t len;
};

/** A message fg_sync_parse accepted: pointers into the caller's buffer. */
struct fg_sync_view {
	uint32_t node;
	uint64_t epoch, seq;
	uint16_t count;
	const uint8_t *entries;   /**< count entries, entries_len bytes */
	size_t entries_len;
};

/** An entry of a view. */
struct fg_sync_entry {
	uint8_t op;               /**< FG_SYNC_OP_* */
	struct ct_rec rec;
};

/** What a receiver knows of one peer's messages (fg_sync_replay_check). */
struct fg_sync_replay {
	uint64_t epoch;           /**< 0: none seen yet */
	uint64_t top;             /**< newest sequence accepted */
	uint64_t seen;            /**< bit i: top - i accepted */
};

/**
 * Reads a key file's bytes into @p key (a trailing newline is not part of
 * it).  @return 0, -errno of open/read, -EINVAL (shorter than
 * FG_SYNC_KEY_MIN or longer than FG_SYNC_KEY_MAX).
 */
int fg_sync_key_load(const char *path, struct fg_sync_key *key);

/**
 * Checks a whole message: length, magic, versions, MAC under @p key,
 * every entry.  Nothing is read past @p len.  Pure.
 * @return FG_SYNC_OK and *v, or the reason it is refused (never
 *   unknown_peer or replay: those are the caller's, with its peers).
 */
enum fg_sync_refuse fg_sync_parse(const uint8_t *buf, size_t len,
				  const struct fg_sync_key *key,
				  struct fg_sync_view *v);

/**
 * Decodes the entry at *@p off of a view fg_sync_parse accepted and
 * moves *@p off past it (start at 0; @p v->count entries).  Pure.
 * @return 0, or -EINVAL past the last entry.
 */
int fg_sync_entry_next(const struct fg_sync_view *v, size_t *off,
		       struct fg_sync_entry *e);

/**
 * Whether (epoch, seq) of @p v is new for peer state @p r, and if so
 * records it.  A newer epoch (the peer restarted) starts over; an older
 * one is refused.  @return FG_SYNC_OK or FG_SYNC_replay.
 */
enum fg_sync_refuse fg_sync_replay_check(struct fg_sync_replay *r,
					 const struct fg_sync_view *v);

/** A message being built in a buffer of FG_SYNC_MSG_MAX bytes. */
struct fg_sync_msg {
	uint8_t *buf;
	size_t len;               /**< bytes written (header included) */
	uint16_t count;
};

/** Starts a message in @p buf (FG_SYNC_MSG_MAX bytes). */
void fg_sync_msg_init(struct fg_sync_msg *m, uint8_t *buf, uint32_t node,
		      uint64_t epoch, uint64_t seq);

/**
 * Appends an entry.  @return 0, -ENOSPC (it does not fit: finish this
 * message, start another), -EINVAL (a record ct_rec_encode refuses, or
 * a bad op).
 */
int fg_sync_msg_add(struct fg_sync_msg *m, uint8_t op, const struct ct_rec *r);

/** Writes the entry count and the MAC.  @return the message's length. */
size_t fg_sync_msg_finish(struct fg_sync_msg *m, const struct fg_sync_key *key);

#ifdef __cplusplus
}
#endif
#endif /* FLOWGATE_FG_SYNC_H */
