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
 * Version FG_SYNC_VERSION_STATUS (2) is the *status* message, one peer's
 * news to one peer: no entries, and bytes 12-15 carry what the sender
 * knows (byte 12: FG_SYNC_ST_* flags; 13-15: with FG_SYNC_ST_CAUGHT_UP,
 * fg_sync_epoch_tag() of the receiver's epoch).  It is sent once a second
 * and at once when its news change; flow messages and the keepalive stay
 * version 1, so a node of the previous release keeps reading every flow
 * (it counts the status messages as bad_version).  A status tells the
 * receiver when its catch-up is complete (the start-up gate waits for
 * that, not for a time) and when a returning peer announces again (the
 * hand-back of its NAT addresses waits for that).
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
#include "fg_config.h"
#include "fg_state.h"
#include "fg_xlist.h"

#ifdef __cplusplus
extern "C" {
#endif

/** The format of flow messages (written and read) and of status
 *  messages (FG_SYNC_VERSION_STATUS: written and read). */
#define FG_SYNC_VERSION 1
#define FG_SYNC_VERSION_STATUS 2
/** A status message's flags (byte 12). */
#define FG_SYNC_ST_READY     0x01 /**< the sender announces (fg_sync_ready) */
#define FG_SYNC_ST_CAUGHT_UP 0x02 /**< it sent the receiver every flow it held
				       when it heard the receiver's epoch
				       (bytes 13-15 name that epoch) */
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

#define FG_SYNC_(n, d) FG_SYNC_##n,
enum fg_sync_refuse { FG_SYNC_OK = 0, FG_SYNC_REFUSE_LIST(FG_SYNC_) FG_SYNC_REFUSE_MAX };
/** Names and help by reason (index 0 "ok"). */
FG_XL_TABLES(fg_sync_refuse_names, fg_sync_refuse_help, FG_SYNC_REFUSE_MAX);

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
	uint8_t version;          /**< FG_SYNC_VERSION or FG_SYNC_VERSION_STATUS */
	uint8_t status;           /**< a status message's FG_SYNC_ST_* (else 0) */
	uint32_t echo;            /**< with FG_SYNC_ST_CAUGHT_UP: the receiver's
				       fg_sync_epoch_tag() */
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

/** 24 bits that name an epoch in a status message's echo. */
static inline uint32_t
fg_sync_epoch_tag(uint64_t epoch)
{
	return (uint32_t)((epoch ^ epoch >> 24 ^ epoch >> 48) & 0xffffff);
}

/**
 * Writes a whole status message into @p buf (FG_SYNC_MSG_MAX bytes):
 * @p flags (FG_SYNC_ST_*), @p echo (with FG_SYNC_ST_CAUGHT_UP: the
 * receiver's fg_sync_epoch_tag()), MAC'd.  @return its length.
 */
size_t fg_sync_msg_status(uint8_t *buf, uint32_t node, uint64_t epoch, uint64_t seq,
			  uint8_t flags, uint32_t echo, const struct fg_sync_key *key);

/* ---- the daemon's sync (fg_sync.c) -------------------------------------- */

struct fg_dp;
struct fg_worker;
struct fg_lb_service;
struct fg_lb_backend;
struct ct_entry;

/** A flow record between a worker and the sync thread (both rings). */
struct fg_sync_item {
	uint8_t op;               /**< FG_SYNC_OP_* */
	uint8_t pad[3];
	struct ct_rec_ids ids;    /**< to a worker: the record's ids here */
	uint64_t tsc;             /**< from a worker: when it was queued */
	struct ct_rec rec;
};

/** A worker's records waiting for its next housekeeping (per-core batch). */
#define FG_SYNC_BATCH 32
/** Ring sizes: worker -> sync thread, sync thread -> worker. */
#define FG_SYNC_OUT_RING 16384
#define FG_SYNC_IN_RING 8192
/** An idle node says it is alive this often (an empty message). */
#define FG_SYNC_KEEPALIVE_MS 1000
/** A peer heard before and silent this long is dead: its NAT addresses
 *  are taken over (announced with --announce) until it is back and says
 *  it announces them itself (its status's FG_SYNC_ST_READY), and
 *  FG_SYNC_HANDBACK_MS longer, for its routes to reach the routers (a
 *  peer that sends no status: FG_SYNC_HANDBACK_MS after its return). */
#define FG_SYNC_DEAD_MS 3000
#define FG_SYNC_HANDBACK_MS 10000
/** A starting node announces nothing (no VIP, no NAT address) until every
 *  peer has said that it sent this node every flow it held (a status with
 *  FG_SYNC_ST_CAUGHT_UP naming this node's epoch) and the workers have
 *  installed what came: an event, whatever the table size or the load.
 *  A peer not heard within FG_SYNC_ALONE_MS is taken as absent; a peer
 *  that sends no status (an older flowgate) counts once heard for
 *  FG_SYNC_V1_GRACE_MS; a catch-up still running after
 *  FG_SYNC_CATCHUP_MAX_MS is given up (logged). */
#define FG_SYNC_ALONE_MS 10000
#define FG_SYNC_V1_GRACE_MS 3000
#define FG_SYNC_CATCHUP_MAX_MS 120000

/** What a worker counts (w->sync[], summed by fgctl sync / metrics). */
#define FG_SYNC_WORKER_LIST(X) \
	X(queued,     "flow records queued for the peers (new flows, state changes, refreshes, deletes)") \
	X(queue_full, "flow records not sent: the worker's ring to the sync thread was full (sync rate bound, or the thread behind)") \
	X(installed,  "synced flows installed from peers") \
	X(updated,    "synced flows replaced by a fresher record from a peer") \
	X(stale,      "records from a peer older than the entry held here (kept the fresher)") \
	X(closed,     "flows deleted on a peer's word") \
	X(refresh_walks, "full walks of the shard that re-sent the live synced flows: every 5 minutes (the peers' copies do not expire) and at once when a peer starts (its catch-up)")

#define FG_SYNC_WC_(n, d) FG_SYNC_WC_##n,
enum fg_sync_wc { FG_SYNC_WORKER_LIST(FG_SYNC_WC_) FG_SYNC_WC_MAX };
FG_XL_TABLES(fg_sync_wc_names, fg_sync_wc_help, FG_SYNC_WC_MAX);

/** What the sync thread counts (fg_sync_stats). */
#define FG_SYNC_NODE_LIST(X) \
	X(sent_msgs,     "messages sent, each peer's copy counted") \
	X(sent_records,  "flow records sent (once, whatever the number of peers)") \
	X(sent_bytes,    "bytes of messages sent, each peer's copy counted") \
	X(send_failed,   "messages the kernel refused (sendto failed): their records did not reach that peer") \
	X(recv_msgs,     "messages accepted from peers") \
	X(recv_records,  "flow records accepted from peers") \
	X(install_queue_full, "records accepted but not installed: their worker's ring from the sync thread was full") \
	X(delay_us_sum,  "sum over the records sent of the us from the worker's queueing to the send (mean = delay_us_sum / sent_records): this node's share of the window of loss") \
	X(delay_us_max,  "the longest of those delays, us (a gauge: the largest since the start)")

#define FG_SYNC_NC_(n, d) FG_SYNC_NC_##n,
enum fg_sync_nc { FG_SYNC_NODE_LIST(FG_SYNC_NC_) FG_SYNC_NC_MAX };
FG_XL_TABLES(fg_sync_nc_names, fg_sync_nc_help, FG_SYNC_NC_MAX);

/** One peer as `fgctl sync` shows it. */
struct fg_sync_peer_stats {
	char name[32];
	char addr[64];            /**< ADDR:PORT */
	uint32_t node;
	uint64_t epoch;           /**< its current epoch (0: never heard) */
	uint64_t seq;             /**< newest sequence accepted */
	int64_t last_rx_ms;       /**< ms since its last accepted message, -1 never */
	uint64_t recv_msgs, recv_records, refused, sent_msgs, send_failed;
	bool dead;                /**< heard, then silent FG_SYNC_DEAD_MS */
	bool caught_up;           /**< it sent this node its flows (status) */
	bool announcing;          /**< its status says it announces */
};

/** The node's sync, summed (control side; a copy). */
struct fg_sync_stats {
	bool on;
	bool ready;               /**< fg_sync_ready: it may announce */
	char waiting[80];         /**< not ready: what for ("peer n2: its
				       catch-up not complete") */
	uint32_t node;
	char listen[64];
	bool dsr;
	uint32_t rate;
	uint64_t epoch, seq;
	uint64_t backlog;         /**< records waiting in the workers' rings */
	uint64_t nc[FG_SYNC_NC_MAX];
	uint64_t refused[FG_SYNC_REFUSE_MAX];         /**< [0] unused */
	uint64_t install_refused[FG_STATE_FLOW_MAX];  /**< fg_state.h's reasons */
	uint64_t wc[FG_SYNC_WC_MAX];
	uint32_t n_peers;
	struct fg_sync_peer_stats peers[FG_MAX_SYNC_PEERS];
};

/**
 * Creates the node's sync from @p cfg: the key, the UDP socket (bound to
 * the listen address), the rings of every worker.  Main lcore, after the
 * workers exist, before they run.  @return 0, -errno (key unreadable or
 * -EINVAL, socket, bind), -ENOMEM.
 */
int fg_sync_create(struct fg_dp *dp, const struct fg_sync_cfg *cfg);
/** Starts the sync thread.  @return 0 or -errno. */
int fg_sync_start(struct fg_dp *dp);
/** Stops the thread (workers may still run), then frees everything once
 *  the workers have stopped (fg_sync_free). */
void fg_sync_stop(struct fg_dp *dp);
void fg_sync_free(struct fg_dp *dp);

/**
 * Handles one received datagram from @p from (a struct sockaddr_in or
 * _in6): checks it (fg_sync_parse, the peer, its address, replay) and
 * hands every entry to the worker that owns its flow.  The sync thread's
 * (tests call it directly).  @return FG_SYNC_OK or the refusal (counted).
 */
enum fg_sync_refuse fg_sync_rx(struct fg_dp *dp, const uint8_t *buf, size_t len,
			       const void *from);

/**
 * Sends what the workers queued: messages of at most FG_SYNC_MSG_MAX
 * bytes to every peer, within the rate; a keepalive when idle.  The sync
 * thread's (tests call it directly).  @return records sent.
 */
unsigned int fg_sync_tx(struct fg_dp *dp);

/** Whether sync peer @p i was heard and has been silent for
 *  FG_SYNC_DEAD_MS (any thread): its NAT addresses are this node's to
 *  announce meanwhile. */
bool fg_sync_peer_dead(struct fg_dp *dp, unsigned int i);

/** Whether this node has its peers' flows, so that it may attract
 *  traffic (--announce): every peer's catch-up installed (see
 *  FG_SYNC_ALONE_MS for the exceptions); once true, true for good (any
 *  thread). */
bool fg_sync_ready(struct fg_dp *dp);

/** A copy of the counters (any thread). */
void fg_sync_stats_get(struct fg_dp *dp, struct fg_sync_stats *st);

/* worker side (owner lcore) */
/** Whether flows of @p s are synced (NAT always, DSR with `dsr on`). */
bool fg_sync_wants(const struct fg_worker *w, const struct fg_lb_service *s);
/** Queues the flow of forward entry @p e (key @p key) of service @p s,
 *  backend @p b, as op @p op into the worker's batch. */
void fg_sync_note(struct fg_worker *w, uint8_t op, uint8_t fam, const void *key,
		  const struct ct_entry *e, const struct fg_lb_service *s,
		  const struct fg_lb_backend *b, uint64_t now);
/** Housekeeping: flushes the batch, installs what peers sent, walks a
 *  bounded part of the shard for the refresh.  @return records installed. */
unsigned int fg_sync_worker_poll(struct fg_worker *w, uint64_t now);

#ifdef __cplusplus
}
#endif
#endif /* FLOWGATE_FG_SYNC_H */
