/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * flowgate connection tracking: one table shard per worker core.
 *
 * ## Keys: one entry per direction, not a normalized key
 * A flow is looked up by the exact 5-tuple of the packet in hand
 * (struct ct_key4 / struct ct_key6).  Keys are *not* normalized (min/max
 * ordered), because the only mode that sees both directions is full NAT, and
 * there the reply tuple (backend -> balancer local address) shares no address
 * with the request tuple (client -> VIP), so a normalized key could never
 * match both.  NAT therefore inserts two entries, linked by ct_entry::peer;
 * DSR inserts one (the balancer never sees the backend's reply).  Keeping
 * the key exact also saves the compare-and-swap on every packet that
 * normalization costs.
 *
 * IPv4 and IPv6 have separate tables inside a shard, so an IPv4 key is 16
 * bytes and an IPv6 key 48.
 *
 * ## One cache line per lookup
 * Each table is open addressing with linear probing over slots that hold
 * a key and its entry side by side (IPv4: 16 + 48 B, one 64-byte line;
 * IPv6: a 128-byte slot whose first line holds the key and the entry's
 * lookup fields).  Beside them, a metadata array of 2 bytes a slot (a tag
 * of the signature and a count of keys probing past): a hit reads its
 * metadata line, usually cached, then its own slot's line, which answers
 * the lookup -- key, liveness, backend -- and is the line the dataplane
 * then updates; a miss reads no slot at all.  rte_hash reads bucket, key
 * store and entry (the shard used it until issue 17, and flowgate-bench
 * conntrack still times it on the same keys as the baseline).  A slot's
 * index is the flow's position, and a slot never moves while its flow
 * lives; a freed slot is free at once (no tombstones: ct_private.h).
 *
 * ## Flows and NAT reply entries: two regions
 * Forward entries (one a flow) and NAT reply entries live in two regions
 * of a family's table, each probed on its own: a lookup reads the forward
 * region, and the reply region only for the keys the forward one missed
 * and only while it holds any (keys hinted as replies the other way
 * round, keys the caller knows are no reply's not at all:
 * ct_lookup_bulk_hint, ct_insert_flow).  A flow's packets then touch a table sized
 * for the flows, NAT's as DSR's (with both directions in one table, NAT at
 * 1M flows ran 10-15% slower than DSR: bench/RESULTS.md, session 14).
 * ct_config::capacity counts flows in every mode; capacity_reply the NAT
 * reply entries (default: half as many).
 *
 * ## Memory per tracked flow (IPv4, measured by flowgate-bench conntrack)
 * 4/7 of a region's slots are live when it is full (linear probing then
 * reads 1.7 slots per hit on average, 1.5 at half load): 1.75 slots per
 * entry of capacity, each 64 B, 2 B of metadata and 4 B of creation time
 * (kept beside the slots, not in them) = 122.5 B per entry; no
 * power-of-two rounding.  With the default reply region, 183.75 B per
 * flow of capacity; 122.5 B plus a small reply region when capacity_reply
 * is set low (DSR only).  bytes_per_flow in bench/RESULTS.md.
 *
 * ## Expiry on lookup
 * The entry is in the line the lookup compares, so the exact check
 * (now - last_seen against the state's timeout) costs no extra read.  A
 * NAT reply entry mirrors its flow's state and is refreshed with it; only
 * one that looks expired reads its forward entry for the exact answer.
 *
 * ## Threads
 * A shard is owned by one lcore: every function below that changes or
 * reads the shard is called by that lcore only, without locks.  The control
 * plane reaches a shard only through the shard's mailbox (ct_mbox_*): it
 * posts a request and the owner executes it between bursts in bounded
 * chunks (ct_shard_poll).  This is DPVS's "callbacks run on the lcore that
 * owns the table" rule; it keeps the tables single-threaded (no RW-concurrency
 * flag, which would slow every lookup) and never lets a reader see a
 * half-written entry.
 *
 * ## Time
 * `now` is whatever monotonic tick the caller uses (the dataplane passes
 * rte_rdtsc() read once per burst; tests pass a fake clock).  Timeouts are
 * configured in milliseconds and converted with ct_config::hz.
 */
#ifndef FLOWGATE_CT_H
#define FLOWGATE_CT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#ifndef __bpf__
#include <string.h>
#include <sys/socket.h>
#endif

#ifdef __cplusplus
extern "C" {
#endif

/** Largest burst the bulk functions take (a 64-bit hit mask). */
#define CT_BURST_MAX 64
/** "No entry" value for positions and links. */
#define CT_NONE UINT32_MAX

/** IPv4 flow key, 16 bytes, network byte order, padding zeroed. */
struct ct_key4 {
	uint32_t saddr;
	uint32_t daddr;
	uint16_t sport; /**< TCP/UDP port; ICMP: echo id; other: 0. */
	uint16_t dport;
	uint8_t proto;
	uint8_t pad[3];
} __attribute__((aligned(4)));

/** IPv6 flow key, 48 bytes, network byte order, padding zeroed. */
struct ct_key6 {
	uint8_t saddr[16];
	uint8_t daddr[16];
	uint16_t sport;
	uint16_t dport;
	uint8_t proto;
	uint8_t pad[11];
} __attribute__((aligned(4)));

/** Address family selector of a shard's two tables. */
enum ct_family { CT_V4 = 0, CT_V6 = 1, CT_FAMILIES };

#ifndef __bpf__ /* the XDP program has its own (xdp/) */
/* ---- keys: fields of a key of either family, and the one place a key
 *      is assembled by hand (AF_INET / AF_INET6 <-> enum ct_family) */

/* A conntrack key of either family (NAT targets, reply keys). */
union ct_key {
	struct ct_key4 k4;
	struct ct_key6 k6;
};

static inline uint8_t ct_family_af(uint8_t ct_family)
{
	return ct_family == CT_V6 ? AF_INET6 : AF_INET;
}

static inline uint8_t ct_family_of_af(uint8_t af)
{
	return af == AF_INET6 ? CT_V6 : CT_V4;
}

/* Fields of a key (struct ct_key4 / ct_key6) of @p family: addresses as
 * 4 or 16 bytes in network order, ports in network order. */
static inline const uint8_t *ct_key_saddr(const void *key, uint8_t family)
{
	return family == CT_V4 ? (const uint8_t *)&((const struct ct_key4 *)key)->saddr :
				 ((const struct ct_key6 *)key)->saddr;
}

static inline const uint8_t *ct_key_daddr(const void *key, uint8_t family)
{
	return family == CT_V4 ? (const uint8_t *)&((const struct ct_key4 *)key)->daddr :
				 ((const struct ct_key6 *)key)->daddr;
}

static inline uint16_t ct_key_dport(const void *key, uint8_t family)
{
	return family == CT_V4 ? ((const struct ct_key4 *)key)->dport :
				 ((const struct ct_key6 *)key)->dport;
}

static inline uint8_t ct_key_proto(const void *key, uint8_t family)
{
	return family == CT_V4 ? ((const struct ct_key4 *)key)->proto :
				 ((const struct ct_key6 *)key)->proto;
}

/*
 * Writes a conntrack key of @p family (CT_V4 / CT_V6): addresses of 4 or
 * 16 bytes in network order, ports in network order; padding zeroed, so
 * the key hashes and compares as the parser's keys do.  The one place a
 * key is assembled by hand.
 */
static inline void ct_key_make(union ct_key *k, uint8_t family,
			       const void *saddr, const void *daddr,
			       uint16_t sport, uint16_t dport, uint8_t proto)
{
	memset(k, 0, sizeof(*k));
	if (family == CT_V4) {
		memcpy(&k->k4.saddr, saddr, 4);
		memcpy(&k->k4.daddr, daddr, 4);
		k->k4.sport = sport;
		k->k4.dport = dport;
		k->k4.proto = proto;
	} else {
		memcpy(k->k6.saddr, saddr, 16);
		memcpy(k->k6.daddr, daddr, 16);
		k->k6.sport = sport;
		k->k6.dport = dport;
		k->k6.proto = proto;
	}
}

/* @p out = the key @p in (struct ct_key4 / ct_key6 of @p family) seen from
 * the other end: addresses and ports swapped, same protocol. */
static inline void ct_key_reverse(union ct_key *out, uint8_t family,
				  const void *in)
{
	if (family == CT_V4) {
		const struct ct_key4 *k = (const struct ct_key4 *)in;

		ct_key_make(out, family, &k->daddr, &k->saddr, k->dport,
			    k->sport, k->proto);
	} else {
		const struct ct_key6 *k = (const struct ct_key6 *)in;

		ct_key_make(out, family, k->daddr, k->saddr, k->dport,
			    k->sport, k->proto);
	}
}
#endif /* __bpf__ */

/** TCP states (nf_conntrack's names), plus UDP/other pseudo-states. */
#define CT_STATE_LIST(X) \
	X(NONE)        \
	X(SYN_SENT)    \
	X(SYN_RECV)    \
	X(ESTABLISHED) \
	X(FIN_WAIT)    \
	X(CLOSE_WAIT)  \
	X(LAST_ACK)    \
	X(TIME_WAIT)   \
	X(CLOSE)       \
	X(UDP)         \
	X(UDP_STREAM)  \
	X(OTHER)       \
	X(PICKUP)

enum ct_state {
#define CT_X(n) CT_ST_##n,
	CT_STATE_LIST(CT_X)
#undef CT_X
	CT_ST_MAX
};

/** Entry flags. */
#define CT_F_REPLY    0x01 /**< this entry is the reply direction (NAT) */
#define CT_F_NAT      0x02 /**< flow is full-NAT (both directions tracked) */
#define CT_F_ASSURED  0x04 /**< assured: never early-dropped, admitted in
                                 flood mode (see "Assured" in ct.h) */
#define CT_F_SEEN_REPLY 0x08 /**< a packet of the reply direction was seen */
#define CT_F_V6       0x10 /**< entry lives in the IPv6 table */
#define CT_F_MIDSTREAM 0x20 /**< picked up without a SYN (after flood/restart) */
/** fragment-follow entry: addresses, protocol and the datagram's IP ID in
 *  the ports (the key its non-first fragments have: fg_pkt_frag_key()),
 *  created by a first fragment, so its later fragments reach the same
 *  backend; state OTHER, not assured */
#define CT_F_FRAG     0x40
/** on an early-drop list (evictable): ct_entry's ed_prev/ed_next are the
 *  list's links, not a TCP window */
#define CT_F_LISTED   0x80

/** ct_entry::td_flags */
#define CT_TD_VALID 0x01 /**< td_end / td_win / td_wscale hold a window */
/** With CT_TD_VALID: td_end may be stale (a flow installed from another
 *  node's record, ct_entry_relearn): this direction's next segment other
 *  than an RST sets it, whatever its distance, and clears the bit. */
#define CT_TD_RELEARN 0x04
#define CT_TD_HS    0x02 /**< NAT reply entry, handshake: td_end is the
			      client's ISN + 1 (the SYN-ACK must ack it) */

/**
 * One tracked direction of a flow: 48 bytes.  Written by the owning lcore
 * only.  The dataplane reads and updates it in place after a lookup.
 */
struct ct_entry {
	/* The first 16 bytes are all a lookup touches (expiry check, backend,
	 * direction): with 48-byte entries they never straddle a cache line. */
	uint64_t last_seen; /**< tick of the last packet (caller's clock). */
	uint32_t backend;   /**< backend id chosen for the flow. */
	uint8_t state;      /**< enum ct_state; CT_ST_NONE = free slot. */
	uint8_t flags;      /**< CT_F_*. */
	uint8_t proto;      /**< IP protocol. */
	uint8_t nat_addr;   /**< NAT: index of the local address used. */
	uint32_t peer;      /**< position of the other direction (NAT), else CT_NONE. */
	uint16_t service;   /**< service id. */
	union {
		uint16_t nat_port;  /**< NAT: chosen local port (network order). */
		/** PICKUP (DSR only, never NAT): when the probation began,
		 *  in units of 2^(tshift+6) ticks (~32-64 ms), wrapping. */
		uint16_t pickup_t;
	};
	/** Eight bytes with two uses, told apart by CT_F_LISTED: the
	 *  early-drop list's links while the entry is on it (unassured or
	 *  closing forward entries), else the TCP window of the direction
	 *  this entry tracks ("TCP windows" below). */
	union {
		struct {
			uint32_t ed_prev; /**< early-drop list links */
			uint32_t ed_next;
		};
		struct {
			/** the highest sequence number this direction sent
			 *  (host order); NAT reply entry in the handshake
			 *  (CT_TD_HS): the client's ISN + 1 */
			uint32_t td_end;
			/** the largest window this direction advertised,
			 *  as on the wire (scaled by td_wscale's low nibble) */
			uint16_t td_win;
			/** low nibble: this direction's window scale (RFC
			 *  7323, 0..14); high nibble: the client's, kept by a
			 *  NAT reply entry until the handshake completes */
			uint8_t td_wscale;
			uint8_t td_flags;  /**< CT_TD_* */
		};
	};
	uint64_t packets;   /**< packets seen in this direction. */
	uint64_t bytes;     /**< bytes seen in this direction (L3 length). */
};

/** Eviction reasons (table-full policy). */
#define CT_EVICT_LIST(X) \
	X(EARLY_DROP)  /* unassured entry evicted to make room */ \
	X(FLUSH)       /* removed by a control-plane delete/flush */

/** Insert failure reasons. */
#define CT_INSFAIL_LIST(X) \
	X(FULL)        /* table full and no unassured entry to evict */ \
	X(FLOOD)       /* flood mode: unassured new flow not inserted */ \
	X(EXISTS)      /* key already present */ \
	X(HASH)        /* no free slot found (cannot happen below capacity) */

/**
 * Per-shard counters, declared once.  Each name becomes a uint64_t field of
 * struct ct_stats and a string in ct_stats_names[].
 */
#define CT_COUNTER_LIST(X) \
	X(lookups) X(hits) X(misses) X(expired_on_lookup) \
	X(inserts) X(insert_fail) X(deletes) \
	X(flood_windows) \
	X(tcp_oow)        /* TCP segment outside its direction's window: \
			     no state change (ct.h, "TCP windows") */ \
	X(tcp_hs_bad)     /* SYN-ACK or handshake ACK that acks nothing \
			     sent: no state change */ \
	X(tcp_reopen)     /* a SYN on a closing flow: a new connection on \
			     the tuple (SYN_SENT, unassured) */

enum ct_evict {
#define CT_X(n, ...) CT_EVICT_##n,
	CT_EVICT_LIST(CT_X)
#undef CT_X
	CT_EVICT_MAX
};

enum ct_insfail {
#define CT_X(n, ...) CT_INSFAIL_##n,
	CT_INSFAIL_LIST(CT_X)
#undef CT_X
	CT_INSFAIL_MAX
};

/** Counters of one shard (plain per-core increments; sum on read). */
struct ct_stats {
#define CT_X(n) uint64_t n;
	CT_COUNTER_LIST(CT_X)
#undef CT_X
	uint64_t insert_fail_by[CT_INSFAIL_MAX]; /**< by enum ct_insfail. */
	uint64_t evictions[CT_EVICT_MAX];        /**< by enum ct_evict. */
	uint64_t expired[CT_ST_MAX];             /**< expirations by state. */
	uint64_t live[CT_ST_MAX];                /**< live entries by state. */
	/** Live NAT flows: entries of the reply regions (a gauge, as live[]:
	 *  against ct_reply_slots(), the NAT region's fill), taken from the
	 *  regions' counts when the counters are read (ct_stats_get). */
	uint64_t nat_flows;
};

/** Names of the counters, in struct order (for JSON / CLI / telemetry). */
extern const char *const ct_state_names[CT_ST_MAX];
extern const char *const ct_evict_names[CT_EVICT_MAX];
extern const char *const ct_insfail_names[CT_INSFAIL_MAX];

/**
 * ## Assured (nf_conntrack's IPS_ASSURED, and its mid-stream rule)
 * An assured entry is one the flow has earned: it is never early-dropped
 * and flood mode still admits it.  Everything else is on the shard's
 * early-drop list, oldest first, and is what a full table evicts.
 *
 * | how the flow started          | assured when                            |
 * |-------------------------------|-----------------------------------------|
 * | TCP SYN, full NAT             | the handshake completes, proven: the    |
 * |                               | SYN-ACK acked the SYN, the ACK acked    |
 * |                               | the SYN-ACK ("TCP windows")             |
 * | TCP SYN, DSR                  | ESTABLISHED and >= pickup_pkts packets  |
 * |                               | over >= pickup_ms (probation, as PICKUP)|
 * | TCP without SYN (PICKUP)      | it has sent >= pickup_pkts packets over |
 * |                               | >= pickup_ms (DSR), or a reply was seen |
 * | UDP                           | second packet or a reply (UDP_STREAM)   |
 * | NAT reply entry               | at once (its flow is what is evicted)   |
 * | other protocols, fragments    | never                                   |
 *
 * Evictable (on an early-drop list, CT_F_LISTED) are the unassured flows
 * and, assured or not, the closing ones (FIN_WAIT .. CLOSE), as
 * nf_conntrack's early drop takes them; a SYN from the client on a closing
 * flow makes it a new, unassured connection (SYN_SENT, tcp_reopen).
 *
 * nf_conntrack assures a TCP flow when it has seen traffic both ways and
 * the handshake completed; a flow picked up mid-stream (tcp_loose) stays
 * unassured with at most tcp_timeout_unacknowledged until the other side
 * answers.  A DSR balancer never sees the other side, so a pickup proves
 * itself by persistence instead: a spoofed ACK (one packet per random
 * tuple) never does, and costs one short-lived (PICKUP timeout, 10 s),
 * evictable, flood-refusable entry instead of a 15-minute ESTABLISHED one.
 * PICKUP entries are counted in live[PICKUP], not as ESTABLISHED.  Full
 * NAT never creates PICKUP entries: the dataplane drops a TCP packet other
 * than a SYN that has no entry (its tuple was never allocated).
 */

/** Timeouts in milliseconds, indexed by enum ct_state. */
struct ct_timeouts {
	uint32_t ms[CT_ST_MAX];
};

/**
 * Shard configuration.  Defaults (ct_config_defaults) next to nf_conntrack
 * and DPVS:
 *
 * | state       | flowgate | nf_conntrack | DPVS  |
 * |-------------|----------|--------------|-------|
 * | SYN_SENT    | 30 s     | 120 s        | 30 s  |
 * | SYN_RECV    | 30 s     | 60 s         | 30 s  |
 * | ESTABLISHED | 900 s    | 5 days       | 90 s  |
 * | FIN_WAIT    | 30 s     | 120 s        | 7 s   |
 * | CLOSE_WAIT  | 30 s     | 60 s         | 7 s   |
 * | LAST_ACK    | 30 s     | 30 s         | 7 s   |
 * | TIME_WAIT   | 30 s     | 120 s        | 7 s   |
 * | CLOSE       | 10 s     | 10 s         | 3 s   |
 * | UDP         | 30 s     | 30 s         | 300 s |
 * | UDP_STREAM  | 120 s    | 120 s        | 300 s |
 * | OTHER       | 30 s     | 600 s (generic) | -  |
 * | PICKUP      | 10 s     | 300 s (unacknowledged) | - |
 *
 * ESTABLISHED is 15 minutes: inference requests are long-lived (streaming
 * tokens) but a balancer that keeps dead flows for 5 days fills up; DPVS's
 * 90 s cuts idle keep-alive connections of GPU clients.  SYN states are
 * short (30 s) so spoofed SYNs leave quickly.
 */
/** Default ct_config::capacity (IPv4 entries per shard); the daemon's
 *  default --ct-capacity / `conntrack { capacity }` too. */
#define CT_DEFAULT_CAPACITY (1u << 20)

struct ct_config {
	const char *name;      /**< unique name prefix for the shard's memory. */
	/** Max tracked IPv4 flows (forward entries), exactly: 8 .. 2^29.
	 *  ct_slots() tells the capacity in effect. */
	uint32_t capacity;
	uint32_t capacity_v6;  /**< IPv6 flows (0 = capacity / 4), same rule. */
	/** Max NAT reply entries (NAT flows), IPv4, in a region of their
	 *  own: 8 .. 2^29, or 0 = capacity / 2 (as many NAT flows as when a
	 *  NAT flow took two entries of one table).  IPv6: a quarter of it
	 *  (0: half of IPv6's flows), at least 8.  The daemon's
	 *  `conntrack { nat_capacity }`. */
	uint32_t capacity_reply;
	int socket_id;         /**< NUMA socket for all allocations. */
	uint64_t hz;           /**< ticks per second of the caller's clock. */
	struct ct_timeouts timeouts;
	uint32_t expire_budget; /**< entries examined per ct_shard_expire call. */
	/** Flood mode: above this many inserts per second, unassured new flows
	 *  are not inserted (0 = off). Measured over 1/16 s windows. */
	uint32_t flood_rate;
	/** A PICKUP entry (TCP picked up without a SYN) is assured, and
	 *  becomes ESTABLISHED, once it has seen this many packets (default
	 *  4) spanning at least pickup_ms (default 2000); see "Assured". */
	uint32_t pickup_pkts;
	uint32_t pickup_ms;
	/** Test hook: replaces CRC32C as the hash function (NULL = default).
	 *  A colliding hash forces long probes, saturated probe counts and
	 *  eviction. */
	uint32_t (*hash_fn)(const void *key, uint32_t len, uint32_t init);
};

struct ct_shard;

/**
 * Fills @p cfg with the documented defaults.
 * @param cfg  configuration to fill; capacity CT_DEFAULT_CAPACITY, hz 1000.
 */
void ct_config_defaults(struct ct_config *cfg);

/**
 * Creates a shard: both tables, preallocated on cfg->socket_id.
 * Thread safety: call from any single thread at start-up.
 * @return the shard, or NULL with rte_errno set: EINVAL (bad config),
 *   ENOMEM (no memory on that socket), EEXIST (name in use).
 */
struct ct_shard *ct_shard_create(const struct ct_config *cfg);

/** Frees a shard and everything it holds.  NULL is a no-op. */
void ct_shard_free(struct ct_shard *s);

/**
 * Computes the signature of a key: CRC32C over the key bytes (or
 * cfg->hash_fn).  The dataplane uses the same value to pick the Maglev
 * slot, so the GPU path computes exactly this function.
 */
uint32_t ct_key4_hash(const struct ct_shard *s, const struct ct_key4 *k);
uint32_t ct_key6_hash(const struct ct_shard *s, const struct ct_key6 *k);
/** CRC32C of a key with flowgate's seed, independent of a shard. */
uint32_t ct_hash_crc(const void *key, uint32_t len);

/** Seed of the flow signature (CRC32C initial value). */
#define CT_HASH_SEED 0xF10A6A7Eu

#if defined(__SSE4_2__) && !defined(__CUDACC__)
#include <nmmintrin.h>
/**
 * ct_hash_crc inlined for keys whose length is a multiple of 8 (both key
 * types): the same value as rte_hash_crc(key, len, CT_HASH_SEED), whose
 * 8-byte step is an out-of-line call with a run-time dispatch in DPDK
 * 22.11 and cost ~5% of a packet's time.  Thread safe (pure).
 */
static inline uint32_t
ct_key_sig(const void *key, uint32_t len)
{
	const uint8_t *p = (const uint8_t *)key;
	uint64_t c = CT_HASH_SEED;

	for (uint32_t i = 0; i < len; i += 8) {
		uint64_t v;

		__builtin_memcpy(&v, p + i, 8);
		c = _mm_crc32_u64(c, v);
	}
	return (uint32_t)c;
}
#else
#define ct_key_sig(key, len) ct_hash_crc((key), (len))
#endif

/**
 * Looks up a burst of keys of one family with precomputed signatures.
 * Expired entries found are deleted (counted as expired_on_lookup, once
 * however often the burst holds the key) and reported as misses.  On a
 * hit, entries[i] points at the entry and positions[i] holds its
 * position; on a miss entries[i] is NULL.
 * Owner lcore only.
 * @param n  1..CT_BURST_MAX
 * @return bit mask of hits (bit i = keys[i] found).
 */
uint64_t ct_lookup_bulk(struct ct_shard *s, enum ct_family fam,
			const void *const *keys, const uint32_t *sigs,
			unsigned int n, uint64_t now,
			struct ct_entry **entries, uint32_t *positions);

/**
 * ct_lookup_bulk() with hints, one bit a key:
 * - @p reply_hint: probably NAT replies (the caller saw a local address
 *   as their destination): looked up in the reply region first, then, if
 *   missing there, in the flows' region.  Only an order: the answer is
 *   the same whatever this hint.  A reply then reads its own region's
 *   lines only.
 * - @p flow_only: no NAT reply's keys, the caller knows (their
 *   destination is none of the addresses reply entries carry): looked up
 *   in the flows' region only, so a new flow reads no reply region's line
 *   (with ct_insert_flow).  A reply's key set here is not found: a
 *   contract, not a hint.  A bit in both masks counts as a reply_hint.
 * The other keys: the flows' region first, then the reply region (while
 * it holds entries).  Owner lcore only.
 */
uint64_t ct_lookup_bulk_hint(struct ct_shard *s, enum ct_family fam,
			     const void *const *keys, const uint32_t *sigs,
			     unsigned int n, uint64_t reply_hint, uint64_t flow_only,
			     uint64_t now, struct ct_entry **entries,
			     uint32_t *positions);

/** NAT reply entries the shard holds (both families): 0 for a shard that
 *  has never seen a NAT flow, so a caller may skip computing hints. */
uint32_t ct_reply_count(const struct ct_shard *s);

/** Single-key lookup; returns the entry or NULL.  Owner lcore only. */
struct ct_entry *ct_lookup(struct ct_shard *s, enum ct_family fam,
			   const void *key, uint32_t sig, uint64_t now,
			   uint32_t *position);

/**
 * Inserts a key.  When the table is full, the oldest unassured entry is
 * evicted (early drop); if none exists the insert fails.  In flood mode an
 * unassured entry (@p assured false) is refused with -EBUSY.
 * The new entry is zeroed except state, proto, flags (CT_F_V6 set from fam,
 * CT_F_ASSURED from @p assured), last_seen = now, peer = CT_NONE.
 * Owner lcore only.
 * A key already present is never touched (its entry and
 * position stay as they are): the call fails with -EEXIST and @p pos_out
 * receives the live entry's position, so a caller that raced itself (two
 * packets of a new flow in one burst) continues with that entry.
 * @param pos_out  receives the position (may be NULL); CT_NONE on failure
 *   other than -EEXIST.
 * @return the new entry, or NULL with *err set: -ENOSPC (full), -EBUSY
 *   (flood), -EEXIST (present), -EINVAL.
 */
struct ct_entry *ct_insert(struct ct_shard *s, enum ct_family fam,
			   const void *key, uint32_t sig, uint8_t proto,
			   enum ct_state state, bool assured, uint64_t now,
			   uint32_t *pos_out, int *err);

/**
 * ct_insert() of a key the caller knows is no NAT reply entry's (as
 * ct_lookup_bulk_hint's @p flow_only): the key is looked for in the flows'
 * region only, so the insert reads no line of the reply region.  A key
 * that a reply entry holds would be inserted a second time: the caller's
 * contract.
 */
struct ct_entry *ct_insert_flow(struct ct_shard *s, enum ct_family fam,
				const void *key, uint32_t sig, uint8_t proto,
				enum ct_state state, bool assured, uint64_t now,
				uint32_t *pos_out, int *err);

/**
 * Links two entries of one NAT flow (sets peer both ways, CT_F_NAT, and
 * CT_F_REPLY on @p reply_pos).  Deleting or expiring one deletes both.
 * The reply entry takes the forward entry's service, backend, NAT address
 * and port, state and (if later) last_seen.
 */
void ct_link_peer(struct ct_shard *s, enum ct_family fam, uint32_t fwd_pos,
		  uint32_t reply_pos);

/**
 * Inserts the reply entry (@p key, @p sig) of the NAT flow whose forward
 * entry is at @p fwd_pos, and links the two (ct_link_peer).  A full table
 * evicts the oldest unassured flow other than that forward entry, never
 * the flow the entry is for; flood mode does not refuse it.  Owner only.
 * @return the reply entry, or NULL with *err set: -ENOSPC (full, nothing
 *   else to evict), -EEXIST (the key is live: *pos_out is its position),
 *   -EINVAL (no unlinked forward entry at @p fwd_pos), -EIO.
 */
struct ct_entry *ct_insert_reply(struct ct_shard *s, enum ct_family fam,
				 const void *key, uint32_t sig, uint32_t fwd_pos,
				 uint64_t now, uint32_t *pos_out, int *err);

/** Deletes the entry at a position (and its NAT peer).  Owner only.
 *  @return 0, or -ENOENT if the slot is free. */
int ct_delete_pos(struct ct_shard *s, enum ct_family fam, uint32_t pos);

/** Deletes by key.  Owner only.  @return 0 or -ENOENT. */
int ct_delete(struct ct_shard *s, enum ct_family fam, const void *key,
	      uint32_t sig);

/** Returns the entry at a position or NULL if free.  Owner only. */
struct ct_entry *ct_entry_at(struct ct_shard *s, enum ct_family fam,
			     uint32_t pos);
/** Returns the key stored at a position (pointer into the slot, valid
 *  until the entry is deleted).  Its tuple fields are the flow's; its pad
 *  bytes hold the table's bookkeeping (not zero, unlike a lookup key).
 *  Owner only. */
const void *ct_key_at(const struct ct_shard *s, enum ct_family fam,
		      uint32_t pos);

/** TCP flags as on the wire (FIN 0x01, SYN 0x02, RST 0x04, ACK 0x10). */
#define CT_TCP_FIN 0x01
#define CT_TCP_SYN 0x02
#define CT_TCP_RST 0x04
#define CT_TCP_ACK 0x10

/** IP protocol numbers conntrack's pure functions read. */
#define CT_PROTO_TCP 6
#define CT_PROTO_UDP 17

/* The pure functions below are written once for C and the XDP program
 * (xdp/fg_xdp.bpf.c, the DSR half: reply false). */
#ifdef __bpf__
#define CT_PURE static __always_inline
#else
#define CT_PURE static inline
#endif

/** Initial state for the first packet of a new flow of @p proto: TCP SYN
 *  -> SYN_SENT, RST -> CLOSE, any other TCP -> PICKUP (unassured); UDP ->
 *  UDP; else OTHER. */
CT_PURE enum ct_state ct_state_initial(uint8_t proto, uint8_t tcp_flags)
{
	if (proto == CT_PROTO_TCP) {
		if (tcp_flags & CT_TCP_RST)
			return CT_ST_CLOSE;
		if ((tcp_flags & (CT_TCP_SYN | CT_TCP_ACK)) == CT_TCP_SYN)
			return CT_ST_SYN_SENT;
		/* Mid-stream pickup (flood mode skipped the SYN, the
		 * balancer restarted, or a spoofed ACK): on probation,
		 * unassured, until it proves itself (ct.h, "Assured"). */
		return CT_ST_PICKUP;
	}
	if (proto == CT_PROTO_UDP)
		return CT_ST_UDP;
	return CT_ST_OTHER;
}

/*
 * The pure TCP transition function (no side effects), for the flow
 * tables, tests, the GPU reference and the XDP program.
 * TCP transitions from the flags the balancer sees.  @reply is true for
 * packets backend->client (NAT only).  In DSR only the client side is
 * seen, so SYN_SENT + client ACK means the server answered: ESTABLISHED;
 * and the close is tracked as far as the client's FIN (FIN_WAIT).
 */
CT_PURE enum ct_state ct_tcp_next(enum ct_state cur, bool reply, uint8_t fl)
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

/**
 * One TCP segment as conntrack needs it, in host order (pkt/fg_pkt.h's
 * fg_pkt_tcp_seg() fills it from a parsed packet).  For other protocols
 * only @c flags (0) is read.
 */
struct ct_seg {
	uint32_t seq;
	uint32_t ack;
	uint16_t win;     /**< window field as on the wire (unscaled) */
	uint8_t flags;    /**< TCP flags byte (CT_TCP_*) */
	/** window scale option of a SYN (0..14), CT_SEG_NO_WSCALE when the
	 *  segment has none (or is no SYN), CT_SEG_NO_SEQ when the caller
	 *  has no sequence numbers at all (tests: no window checks) */
	uint8_t wscale;
	/** out: set by ct_update_seg() / ct_touch() when the segment fell
	 *  outside its direction's window (or acked nothing sent) and so
	 *  changed nothing; CT_OOW_DROP when the caller should drop it (an
	 *  out-of-window RST of a NAT flow: both endpoints would) */
	uint8_t oow;
};
#define CT_SEG_NO_WSCALE 0x0F
#define CT_SEG_NO_SEQ    0xFF
#define CT_OOW_PASS 1
#define CT_OOW_DROP 2

/**
 * ## TCP windows: what each packet proves (nf_conntrack's tcp_in_window,
 * pf's state tracking, sized to the 8 bytes an entry has for it)
 * Each direction's entry keeps the highest sequence number it sent
 * (td_end) and the largest window it advertised (td_win, td_wscale).
 * A segment from direction S is in window when its sequence number lies
 * within W of S's td_end, W being the receiver's largest advertised
 * window (scaled; at least CT_TD_WIN_MIN); a segment can be neither
 * further ahead (the receiver would not accept it) nor further behind
 * (everything further back was acknowledged).  Full NAT sees the
 * receiver; DSR does not, and takes W = CT_TD_WIN_DSR.
 *
 * - Full NAT: ESTABLISHED only after the backend's SYN-ACK acked the
 *   client's SYN and the client's ACK acked the SYN-ACK (a blind attacker
 *   never sees the backend's ISN).  RST and FIN change the state only in
 *   window; an RST out of window is dropped (CT_OOW_DROP: both endpoints'
 *   TCP would reject it), other segments out of window pass unchanged.
 * - DSR (client side only): a handshake is evidence, not proof.  SYN_SENT
 *   + ACK gives ESTABLISHED on probation: unassured, evictable, assured
 *   only after pickup_pkts packets over pickup_ms (as a PICKUP).  An
 *   assured flow's data refreshes it within CT_TD_WIN_DSR of what the
 *   client sent; its RST/FIN change the state only within CT_TD_WIN_MIN
 *   (the client's own RST or FIN carries the next sequence number, at
 *   most one segment past the highest the balancer saw; RFC 5961 has the
 *   server accept an RST at exactly that number).  Out of window it
 *   passes unchanged (the server judges).
 * - Closing states (FIN_WAIT .. CLOSE) are evictable again, as in
 *   nf_conntrack's early drop; a SYN from the client on a closing flow
 *   opens a new connection on the tuple (SYN_SENT, unassured,
 *   tcp_reopen).
 * - A blind attacker must guess a sequence number within 2W of 2^32 per
 *   packet (1 in 32,768 for a 64 KB window, DSR's RST/FIN window) to
 *   reset or close a flow; spoofed handshakes cost it an evictable entry.
 */
#define CT_TD_WIN_MIN 65535u
#define CT_TD_WIN_DSR (1u << 20)

/**
 * ct_update() for a packet whose TCP sequence numbers the caller has
 * (@p g; see "TCP windows").  Sets g->oow when the segment changed nothing
 * for being out of window.  Owner only.
 * @return the new state.
 */
enum ct_state ct_update_seg(struct ct_shard *s, struct ct_entry *e, bool reply,
			    struct ct_seg *g, uint32_t bytes, uint64_t now);

/**
 * Whether @p seq, the sequence number of a segment sent by the direction
 * of entry @p e (quoted in an ICMP error, say), lies in that direction's
 * window.  True for a flow that is not TCP or whose window is not known
 * (handshake, probation).  Owner only.
 */
bool ct_tcp_seq_plausible(struct ct_shard *s, const struct ct_entry *e,
			  uint32_t seq);

/**
 * Advances an entry's state for one packet and refreshes last_seen and
 * counters, without sequence numbers (no window checks: tests and callers
 * that have none; the dataplane uses ct_update_seg).  @p reply says the packet travels backend->client (NAT only;
 * DSR passes false).  Promotes to assured when the flow is established
 * (TCP ESTABLISHED, UDP seen twice or both ways, a PICKUP that proved
 * itself: see "Assured"); keeps the live-by-state
 * counters right.  Owner only.
 * @return the new state.
 */
enum ct_state ct_update(struct ct_shard *s, struct ct_entry *e, bool reply,
			uint8_t tcp_flags, uint32_t bytes, uint64_t now);

/**
 * The common case of a forward-direction packet, inline: one that cannot
 * change the state (an assured TCP ESTABLISHED flow without SYN/FIN/RST
 * whose sequence number is within CT_TD_WIN_MIN of what this direction
 * sent, an assured UDP stream, other protocols) only refreshes last_seen,
 * the counters and the window.  @p th: the packet's TCP header as on the
 * wire (sequence number at 4, window at 14), read only for such a TCP
 * flow.  Owner only.
 * @return true when done; false: the packet needs ct_update_seg() (with
 *   its struct ct_seg), nothing was changed.
 */
static inline bool
ct_touch_fast(struct ct_entry *e, uint8_t tcp_flags, const uint8_t *th,
	      uint32_t bytes, uint64_t now)
{
	if (__builtin_expect(e->state == CT_ST_ESTABLISHED, 1)) {
		uint32_t v, seq;
		int32_t d;

		if (__builtin_expect((tcp_flags & (CT_TCP_SYN | CT_TCP_FIN | CT_TCP_RST)) ||
				     (e->flags & (CT_F_ASSURED | CT_F_LISTED | CT_F_REPLY)) !=
					     CT_F_ASSURED ||
				     e->td_flags != CT_TD_VALID, 0))
			return false;
		__builtin_memcpy(&v, th + 4, 4);
		seq = __builtin_bswap32(v);
		d = (int32_t)(seq - e->td_end);
		if (__builtin_expect((uint32_t)d + CT_TD_WIN_MIN > 2 * CT_TD_WIN_MIN, 0))
			return false;
		if (d > 0)
			e->td_end = seq;
		if (e->flags & CT_F_NAT) {
			uint16_t w;

			__builtin_memcpy(&w, th + 14, 2);
			w = __builtin_bswap16(w);
			if (w > e->td_win)
				e->td_win = w;
		}
	} else if ((e->state != CT_ST_UDP_STREAM && e->state != CT_ST_OTHER) ||
		   (e->flags & CT_F_REPLY)) {
		return false;
	}
	e->packets++;
	e->bytes += bytes;
	e->last_seen = now;
	return true;
}

/**
 * ct_update_seg with ct_touch_fast's common case first, for callers that
 * have the segment at hand (tests).  Owner only.
 */
static inline enum ct_state
ct_touch(struct ct_shard *s, struct ct_entry *e, bool reply, struct ct_seg *g,
	 uint32_t bytes, uint64_t now)
{
	if (!reply && g->wscale != CT_SEG_NO_SEQ) {
		uint8_t th[16];
		uint32_t v = __builtin_bswap32(g->seq);
		uint16_t w = __builtin_bswap16(g->win);

		__builtin_memcpy(th + 4, &v, 4);
		__builtin_memcpy(th + 14, &w, 2);
		if (ct_touch_fast(e, g->flags, th, bytes, now))
			return (enum ct_state)e->state;
	} else if (!reply && e->state != CT_ST_ESTABLISHED &&
		   ct_touch_fast(e, g->flags, NULL, bytes, now)) {
		return (enum ct_state)e->state;
	}
	return ct_update_seg(s, e, reply, g, bytes, now);
}


/**
 * Seconds of one pass of the expiry sweep over each family's slots, so an
 * entry that is never hit again leaves at most this long after it
 * expires (a lookup checks expiry itself).  Linux's conntrack GC takes up
 * to 60 s.  A 1 s pass doubled the sweep's cost at 1M NAT flows
 * (flowgate-bench dataplane --profile: housekeeping 10-14 -> 18-24 cycles
 * a packet), for expired entries that hold nothing but a slot.
 */
#define CT_SWEEP_PERIOD_S 2

/**
 * Incremental expiry: examines slots from a per-family cursor (wrapping)
 * in proportion to the time since that family's last sweep, so that a
 * pass takes CT_SWEEP_PERIOD_S; the calls alternate between the families,
 * and each examines at most cfg->expire_budget slots.  Deletes the expired
 * entries.  Call often (a worker calls every ~10 us).  Owner only.
 * @return number of entries expired.
 */
unsigned int ct_expire(struct ct_shard *s, uint64_t now);

/** Returns the shard's counters (live[] is exact).  Owner only, or via
 *  the mailbox for another thread (ct_mbox_stats). */
const struct ct_stats *ct_stats_get(struct ct_shard *s);

/** Number of live entries in the shard. */
uint32_t ct_count(const struct ct_shard *s);

/**
 * The shard's count of removed entries (expired, evicted, deleted), as a
 * pointer the owner reads as often as it likes.  An entry pointer from
 * ct_lookup_bulk() stays valid only while this count is unchanged: a
 * later insert may evict that entry and reuse its slot for another flow
 * (a burst that holds hits and new flows of a full table).  The owner
 * compares the count taken after the lookup with the current one before
 * it trusts a hit, and looks the key up again when they differ.
 * Owner lcore only.
 */
const uint64_t *ct_removal_seq(const struct ct_shard *s);

/** Bytes allocated for the shard (tables + entries + rings). */
size_t ct_memory(const struct ct_shard *s);

/** Entries a family holds when full: its capacity in effect (its table
 *  has 1.75x as many slots). */
uint32_t ct_slots(const struct ct_shard *s, enum ct_family fam);

/** NAT flows a family holds when full: its reply region's capacity in
 *  effect (ct_config::capacity_reply).  Fixed at creation: any thread. */
uint32_t ct_reply_slots(const struct ct_shard *s, enum ct_family fam);

/**
 * Verifies the shard's tables (tests and fuzzing; walks every slot):
 * each live key is found from its home slot, every slot's count of keys
 * probing past it is exact, the live count is right.  Owner only.
 * @return 0, -EILSEQ (inconsistent) or -ENOMEM.
 */
int ct_check(const struct ct_shard *s);

/** Why a flow left the table (ct_event_fn). */
enum ct_destroy_reason {
	CT_DESTROY_EXPIRED = 0, /**< timed out (lookup or sweep) */
	CT_DESTROY_EVICTED,     /**< early drop to make room */
	CT_DESTROY_DELETED,     /**< ct_delete / ct_delete_pos / walk flush */
	CT_DESTROY_MAX
};
extern const char *const ct_destroy_names[CT_DESTROY_MAX];

/**
 * Called on the owner lcore just before a flow leaves the table, once per
 * flow (NAT: for the forward entry, with the reply entry still in place),
 * so the dataplane can keep least-connection counts and feed `flows watch`.
 * @p key is the forward key (struct ct_key4 / ct_key6 by @p fam).  Must not
 * call back into the shard.
 */
typedef void (*ct_destroy_fn)(void *arg, enum ct_family fam, const void *key,
			      const struct ct_entry *e,
			      enum ct_destroy_reason why);

/** Installs (or with NULL removes) the destroy hook.  Owner only. */
void ct_set_destroy_cb(struct ct_shard *s, ct_destroy_fn fn, void *arg);

/**
 * Called on the owner lcore by ct_update() when a flow's state changed
 * (@p e is the flow's forward entry, already in its new state; @p old the
 * state before), so the dataplane can keep per-backend established counts
 * (ipvsadm's ActiveConn) and feed `flows watch` UPDATE events.  Only on a
 * change: a few calls per TCP flow, none per packet otherwise.  @p key is
 * the forward key.  Must not call back into the shard.
 */
typedef void (*ct_state_fn)(void *arg, enum ct_family fam, const void *key,
			    const struct ct_entry *e, enum ct_state old,
			    uint64_t now);

/** Installs (or with NULL removes) the state-change hook.  Owner only. */
void ct_set_state_cb(struct ct_shard *s, ct_state_fn fn, void *arg);

/**
 * Ticks since the flow of entry @p e (either direction) was inserted, at
 * the shard's coarse resolution (2^n ticks, 0.5-1 ms).  The creation time
 * is kept modulo 2^32 coarse units, so a flow older than ~24 days reads
 * younger by a multiple of that.  Owner only (the destroy and state hooks
 * may call it).  @return 0 for a pointer outside the shard.
 */
uint64_t ct_entry_life(const struct ct_shard *s, const struct ct_entry *e,
		       uint64_t now);

/** Replace timeouts / flood rate at run time.  Owner only. */
void ct_set_timeouts(struct ct_shard *s, const struct ct_timeouts *t);
void ct_set_flood_rate(struct ct_shard *s, uint32_t per_sec);

/** A flow as the control plane sees it (copied out by the owner).  Only
 *  the bytes that describe the flow are written: the key union for
 *  @c family's key length, @c reply only when @c has_reply (ct_walk does
 *  not clear the rest: listings copy millions of these on the worker). */
struct ct_flow {
	union {
		struct ct_key4 k4;
		struct ct_key6 k6;
	};
	/** NAT: the reply direction's key (backend -> local address). */
	union {
		struct ct_key4 k4;
		struct ct_key6 k6;
	} reply;
	struct ct_entry e;      /**< forward entry (state, backend, counters) */
	uint64_t reply_packets; /**< NAT: packets of the reply direction */
	uint64_t reply_bytes;
	uint32_t pos;
	uint8_t family; /**< enum ct_family */
	uint8_t has_reply; /**< reply key valid (NAT) */
	uint64_t age_ticks;   /**< now - last_seen at the time of the copy (idle) */
	uint64_t life_ticks;  /**< now - creation (see ct_entry_life) */
	uint64_t expires_ticks; /**< ticks left before expiry */
};

/**
 * Walks live flows from *cursor (resumable; start at 0; the walk is over
 * when *cursor == CT_WALK_DONE), examining at most @p max slots and calling
 * @p fn once per flow (a NAT flow's two entries are reported once, as the
 * forward entry with its reply key).  If @p fn returns non-zero the flow is
 * deleted (both directions), counted as a FLUSH eviction.  Owner only; the
 * mailbox runs it in bounded chunks.
 * @return number of flows passed to @p fn.
 */
#define CT_WALK_DONE UINT64_MAX
unsigned int ct_walk(struct ct_shard *s, uint64_t *cursor, unsigned int max,
		     uint64_t now,
		     int (*fn)(const struct ct_flow *f, void *arg), void *arg);

/* ---- Mailbox: the control plane's only way into a shard ------------- */

struct ct_mbox;

/** A walk request posted by a control thread. */
struct ct_mbox_req {
	/** Called on the owner lcore for each live entry; non-zero deletes it. */
	int (*fn)(const struct ct_flow *f, void *arg);
	void *arg;
	unsigned int chunk;   /**< entries per poll (0 = 1024). */
	volatile int done;    /**< set to 1 by the owner when finished. */
	struct ct_stats stats; /**< snapshot of counters at completion. */
	/**
	 * Resumable walk, one chunk per request: when set, the owner walks
	 * at most @p chunk slots from @p cursor, stores the new cursor in
	 * @p cursor and completes the request (CT_WALK_DONE when the table
	 * is exhausted).  The poster then posts again with the cursor, so
	 * what @p fn collects per request is bounded by @p chunk (streaming
	 * listings with bounded memory).  0: the whole walk in one request.
	 */
	uint8_t resume;
	uint64_t cursor;      /**< resume: where to start / where it stopped */
};

/**
 * Creates the mailbox of a shard (single producer: one control thread at a
 * time, serialize callers; single consumer: the owner).
 * @return 0 or -ENOMEM.
 */
int ct_mbox_attach(struct ct_shard *s);

/**
 * Posts a walk (or a stats snapshot when req->fn is NULL) to the owner.
 * Control thread only.  @return 0, -ENOBUFS if a request is in flight.
 */
int ct_mbox_post(struct ct_shard *s, struct ct_mbox_req *req);

/**
 * Owner side: executes at most one chunk of the pending request.  Call
 * between bursts.  @return 1 if work was done, 0 if idle.
 */
int ct_shard_poll(struct ct_shard *s, uint64_t now);

/** Waits (control thread) until req->done, spinning then sleeping 20 us.
 *  On -ETIMEDOUT the request is still owned by the shard: keep it (and
 *  its arg) alive until done is set.  @p
 *  timeout_us 0 = forever.  @return 0 or -ETIMEDOUT. */
int ct_mbox_wait(struct ct_mbox_req *req, uint64_t timeout_us);

#ifdef __cplusplus
}
#endif
#endif /* FLOWGATE_CT_H */
