/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * The state file: what a stopping flowgate leaves for the next one
 * (restart and upgrade hand-over, issue 35; docs/DESIGN.md "Restart and
 * upgrade hand-over", docs/DEPLOY.md "Restart and upgrade").
 *
 * ## Format, version FG_STATE_VERSION (integers big-endian)
 *
 *   header, 64 bytes:
 *     0   8  magic "FGSTATE\n"
 *     8   2  format version (FG_STATE_VERSION)
 *     10  2  flow record version (CT_REC_VERSION, conntrack/ct_rec.h)
 *     12  4  number of sections
 *     16  8  when it was written: CLOCK_REALTIME, ns
 *     24  4  the writer's worker count
 *     28  4  0
 *     32  24 the writer's version string, NUL-padded
 *     56  4  0
 *     60  4  CRC32C of bytes 0..59
 *   sections, each:
 *     0   4  type: FG_STATE_SEC_FLOWS, FG_STATE_SEC_NEIGH
 *     4   4  number of entries
 *     8   8  body length in bytes
 *     16  .  body: the entries back to back
 *     .   4  CRC32C of the body
 *   FLOWS entries: flow records (ct_rec.h), any order.
 *   NEIGH entries, FG_STATE_NEIGH_LEN bytes: family (4 / 6), 0, port name
 *     (32, NUL-padded: the ethdev, matched by name as config ports are),
 *     address (16), MAC (6), ms since the neighbour was last confirmed (4).
 *
 * A reader takes its own format version only, and a record version it
 * reads (ct_rec_decode: CT_REC_VERSION); anything else is refused whole,
 * with a reason (FG_STATE_FILE_REFUSE_LIST), never read as its own.  A
 * later version that changes the format converts or refuses the versions
 * before it, by name.
 *
 * Threads: the parser is pure (any thread; the fuzz target's subject);
 * the writer is one thread's.
 */
#ifndef FLOWGATE_FG_STATE_H
#define FLOWGATE_FG_STATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "ct_rec.h"
#include "fg_xlist.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- byte order and clocks, shared with state sync (fg_sync.h) ---------- */

/** Big-endian (network order) fields of the state file and the sync
 *  messages, through bytes: their buffers have no alignment. */
static inline uint32_t
fg_state_be32_get(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static inline uint64_t
fg_state_be64_get(const uint8_t *p)
{
	return (uint64_t)fg_state_be32_get(p) << 32 | fg_state_be32_get(p + 4);
}

static inline void
fg_state_be32_put(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static inline void
fg_state_be64_put(uint8_t *p, uint64_t v)
{
	fg_state_be32_put(p, (uint32_t)(v >> 32));
	fg_state_be32_put(p + 4, (uint32_t)v);
}

/** Clock @p clk in ns: CLOCK_REALTIME stamps the file and a sync epoch,
 *  CLOCK_MONOTONIC times the work. */
static inline uint64_t
fg_state_clock_ns(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/** The format this build writes and reads. */
#define FG_STATE_VERSION 1
#define FG_STATE_MAGIC "FGSTATE\n"
#define FG_STATE_HDR_LEN 64
#define FG_STATE_SEC_HDR_LEN 16
#define FG_STATE_SEC_FLOWS 1
#define FG_STATE_SEC_NEIGH 2
#define FG_STATE_NEIGH_LEN 60
#define FG_STATE_PORT_NAME 32

/** Why a whole state file is not loaded: one counter each
 *  (state_file_refused{reason}) and the log line names it. */
#define FG_STATE_FILE_REFUSE_LIST(X) \
	X(unreadable, "could not be opened or read (a missing file is no refusal: nothing to load)") \
	X(not_state,  "not a flowgate state file (its first bytes are not FGSTATE)") \
	X(version,    "a format or flow record version this build does not read (it converts none yet)") \
	X(truncated,  "shorter than its header and sections say: a write cut short") \
	X(checksum,   "a header or section checksum does not match its bytes") \
	X(malformed,  "a section or entry that does not decode: unknown section, a record out of range, bytes left over") \
	X(stale,      "written longer ago than the longest conntrack timeout: every flow in it has expired")

#define FG_STATE_FILE_(n, d) FG_STATE_FILE_##n,
enum fg_state_file_refuse {
	FG_STATE_FILE_OK = 0,
	FG_STATE_FILE_REFUSE_LIST(FG_STATE_FILE_)
	FG_STATE_FILE_MAX
};
/** Names by reason (index 0 "ok"). */
FG_XL_TABLES(fg_state_file_refuse_names, fg_state_file_refuse_help, FG_STATE_FILE_MAX);

/** Why one flow of a loaded file is not restored (state_refused{reason}). */
#define FG_STATE_FLOW_REFUSE_LIST(X) \
	X(expired,        "idle longer than its state's timeout, the time since the file was written counted") \
	X(service_gone,   "its service (VIP, port, protocol) is not in the config") \
	X(mode_changed,   "its service changed between DSR and NAT") \
	X(backend_gone,   "its backend left the config and could not be kept as a tombstone (FG_TOMBSTONE_MAX, FG_MAX_BACKENDS)") \
	X(nat_local_gone, "NAT: its local address is no port's any more") \
	X(nat_split,      "NAT: with this worker count its two directions hash to different workers (keep the worker count across a restart)") \
	X(table_full,     "its worker's conntrack table (or NAT region) is full") \
	X(duplicate,      "its key, or its NAT reply key, is tracked already")

#define FG_STATE_FLOW_(n, d) FG_STATE_FLOW_##n,
enum fg_state_flow_refuse { FG_STATE_FLOW_REFUSE_LIST(FG_STATE_FLOW_) FG_STATE_FLOW_MAX };
FG_XL_TABLES(fg_state_flow_refuse_names, fg_state_flow_refuse_help, FG_STATE_FLOW_MAX);

/** What the last load and save did: `fgctl stats` ("state"), telemetry
 *  (/flowgate/state), /metrics (flowgate_state_*) and the log lines show
 *  it.  Written by the main lcore before the workers start (load) and
 *  after they stop (save); read by control-side threads. */
struct fg_state_stats {
	bool loaded;             /**< a file was read and its flows restored */
	uint64_t written_ns;     /**< its CLOCK_REALTIME stamp */
	char writer[25];         /**< the version that wrote it */
	uint32_t writer_workers;
	uint64_t gap_ms;         /**< written .. loaded */
	uint64_t load_us;        /**< reading, checking and restoring */
	uint64_t flows_in_file;
	uint64_t restored;       /**< flows restored (NAT ones included) */
	uint64_t restored_nat;
	uint64_t tombstones;     /**< removed backends kept for restored flows */
	uint64_t neigh_restored;
	uint64_t refused[FG_STATE_FLOW_MAX];
	uint64_t file_refused[FG_STATE_FILE_MAX]; /**< [0] unused */
	uint64_t saved, saved_nat, neigh_saved, saved_bytes, save_us;
};

/**
 * The start's restore figures of struct fg_state_stats *st, one list for
 * its three readers: `fgctl stats` "state" and telemetry /flowgate/state
 * (by key, after "loaded" and "writer"), /metrics (the entries with a
 * metric: counter flowgate_state_<metric>, help as given; the refusals by
 * reason and flowgate_state_gap_seconds follow).
 * X(key, value, metric or "", help)
 */
#define FG_STATE_LOAD_LIST(X, st) \
	X("gap_ms",        (st)->gap_ms,        "", "from the file's write to its load") \
	X("load_ms",       (st)->load_us / 1000, "", "reading, checking and restoring") \
	X("flows_in_file", (st)->flows_in_file, "", "flows the file holds") \
	X("restored",      (st)->restored,      "restored_flows_total", \
	  "flows restored from the state file at start (--state-file)") \
	X("restored_nat",  (st)->restored_nat,  "restored_nat_flows_total", \
	  "full-NAT flows among them") \
	X("tombstones",    (st)->tombstones,    "", "removed backends kept for restored flows") \
	X("neighbours_restored", (st)->neigh_restored, "", "learned neighbours restored")

/** A learned neighbour as the file keeps it. */
struct fg_state_neigh {
	uint8_t family;                    /**< AF_INET / AF_INET6 */
	char port[FG_STATE_PORT_NAME + 1]; /**< ethdev name */
	uint8_t addr[16];
	uint8_t mac[6];
	uint32_t age_ms;                   /**< since last confirmed */
};

/** A parsed file: pointers into the caller's buffer. */
struct fg_state_view {
	uint16_t version, rec_version;
	uint64_t written_ns;               /**< CLOCK_REALTIME */
	uint32_t workers;                  /**< the writer's */
	char writer[25];                   /**< the writer's version */
	const uint8_t *flows;              /**< n_flows records, flows_len bytes */
	size_t flows_len;
	uint32_t n_flows;
	const uint8_t *neigh;              /**< n_neigh entries */
	uint32_t n_neigh;
};

/**
 * Checks a whole file in @p buf: magic, versions, checksums, lengths,
 * every section and every entry (each flow record through
 * ct_rec_decode).  Nothing is read past @p len.  Pure.
 * @return FG_STATE_FILE_OK and *v, or the reason it is refused.
 */
enum fg_state_file_refuse fg_state_parse(const uint8_t *buf, size_t len,
					 struct fg_state_view *v);

/** Decodes neighbour entry @p i of a view fg_state_parse accepted. */
void fg_state_neigh_get(const struct fg_state_view *v, uint32_t i,
			struct fg_state_neigh *n);

/** CRC32C as the file uses it (seed CT_HASH_SEED), chained from @p crc
 *  (start with CT_HASH_SEED).  Pure. */
uint32_t fg_state_crc(uint32_t crc, const void *buf, size_t len);

/** Writing a file: header, sections, entries, then the header again. */
struct fg_state_writer {
	FILE *f;
	int err;              /**< first -errno; every call is a no-op after */
	uint32_t n_sections;
	long sec_off;         /**< the open section's header offset, or -1 */
	uint32_t sec_type, sec_count;
	uint64_t sec_len;
	uint32_t sec_crc;
	uint64_t bytes;       /**< written so far */
	uint32_t workers;
	char writer[25];
	uint64_t written_ns;
};

/**
 * Starts writing to @p f (opened for writing, positioned at 0).  @p
 * version: the writer's version string (24 bytes kept).
 */
void fg_state_writer_init(struct fg_state_writer *w, FILE *f, uint32_t workers,
			  const char *version, uint64_t written_ns);
/** Opens a section of @p type (the previous one is closed). */
void fg_state_section(struct fg_state_writer *w, uint32_t type);
/** Appends a flow record (FLOWS section). */
void fg_state_put_flow(struct fg_state_writer *w, const struct ct_rec *r);
/** Appends a neighbour (NEIGH section). */
void fg_state_put_neigh(struct fg_state_writer *w, const struct fg_state_neigh *n);
/**
 * Closes the last section, writes the header and flushes.  The caller
 * fsyncs, closes and renames.
 * @return 0 or the first -errno (-EINVAL for a record ct_rec_encode
 *   refused, -EIO, -ENOSPC of the file system...).
 */
int fg_state_writer_finish(struct fg_state_writer *w);

/* ---- a record into this daemon (the restart's load, sync's install) ---- */

struct fg_dp;
struct fg_worker;
struct fg_lb_table;
/** Every backend of a service table (tombstones too) by (service,
 *  address, port): how a record's backend is found again. */
struct fg_state_bemap;

/** Builds the backend map of @p lb.  @return it, or NULL (no memory). */
struct fg_state_bemap *fg_state_bemap_build(const struct fg_lb_table *lb);
void fg_state_bemap_free(struct fg_state_bemap *m);

/**
 * What record @p r is called here: its service (by VIP, port, protocol),
 * its backend (by address and port, through @p m, built from @p lb), for
 * NAT its local address (by address), and the worker that owns it (its
 * dispatch hash; a NAT flow's reply key must hash there too).  Reads
 * @p lb and @p dp's fixed fields: a thread that holds @p lb alive.
 * @return -1 and *ids, *worker, or the refusal (enum fg_state_flow_refuse).
 */
int fg_state_resolve(const struct fg_dp *dp, const struct fg_lb_table *lb,
		     const struct fg_state_bemap *m, const struct ct_rec *r,
		     struct ct_rec_ids *ids, unsigned int *worker);

/** The worker that owns the flow of key @p key (enum ct_family @p fam)
 *  now: its dispatch hash (a fragment-follow entry's by its addresses
 *  alone).  Any thread. */
unsigned int fg_state_owner(const struct fg_dp *dp, uint8_t fam, const void *key,
			    bool frag);

/** The refusal (enum fg_state_flow_refuse) of a ct_rec_restore error. */
int fg_state_restore_refusal(int rc);

/**
 * Counts a flow just restored into worker @p w's shard as fg_flow_new
 * and the hooks count a new one: opened (established) on its backend's
 * row of @p w, least-connections.  @p w's owner (or any one thread while
 * no worker runs).
 */
void fg_state_count_restored(struct fg_worker *w, struct fg_lb_table *lb,
			     const struct ct_rec *r, const struct ct_rec_ids *ids);

#ifdef __cplusplus
}
#endif
#endif /* FLOWGATE_FG_STATE_H */
