/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * The daemon side of the control socket: one control thread (a pthread,
 * not a DPDK lcore) serving FG_PROTO JSON lines (fg_proto.h) on a Unix
 * socket, dispatching every request to callbacks the daemon provides
 * (struct fg_ctl_ops).
 *
 * ## Isolation
 * - The socket is created mode 0600 (umask ignored) in an existing
 *   directory that must not be writable by group/other unless sticky; a
 *   stale socket file is replaced only if nobody answers on it.  There is
 *   no network listener.
 * - poll() loop, non-blocking clients, per-client input and output
 *   buffers.  A request line over FG_PROTO_MAX_REQUEST gets an error and
 *   the client is disconnected.
 * - Replies are bounded by back-pressure: while a client has
 *   FG_CTL_QUEUE_MAX bytes or more of unread replies, its further requests
 *   are not read (they wait in its socket).  Every byte queued must reach
 *   the client within about write_timeout_ms (each "window", the bytes
 *   queued when the previous window was sent, gets write_timeout_ms), else
 *   the client is dropped (write_timeouts); one reply or a watcher's event
 *   backlog over fg_ctl_server_params::max_outbuf drops it too
 *   (dropped_slow).  Memory per client is therefore bounded: input below
 *   2 * (max_request + 128 KiB), output below 2 * (FG_CTL_QUEUE_MAX + the
 *   largest single reply), and an emptied output buffer over 256 KiB is
 *   freed.  A client that never reads costs that much for at most
 *   write_timeout_ms (or 1 s at the cap, see below) and never blocks others.
 * - A client is idle from its last complete, well-formed request (or the
 *   moment its last reply was fully read): bytes of an unfinished line or
 *   a malformed line do not count, so drip-feeding a request one byte at a
 *   time does not keep a slot.  A client idle for idle_timeout_ms (default
 *   30 s) with nothing queued is closed (idle_closed).
 * - Slots: max_clients ordinary clients plus max_watchers flows.watch
 *   clients.  A connection starts ordinary; flows.watch moves it to the
 *   watcher slots, or, when those are full, answers an error
 *   (watch_rejected) and leaves it ordinary.  Watchers are exempt from the
 *   idle timeout (they wait for events by design), not from the write
 *   timeout.  When max_clients ordinary clients are connected, a new client
 *   evicts the ordinary one idle longest (a silent, drip-feeding or
 *   not-reading client), if it has been idle at least FG_CTL_EVICT_IDLE_MS
 *   (evicted_idle); only when every ordinary client sent a request within
 *   that time is the new one refused (rejected_full).  So silent,
 *   drip-feeding, never-reading clients and watchers cannot lock fgctl out.
 * - Streaming replies (flows.list) are flushed as they are produced; the
 *   control thread waits at most write_timeout_ms for the reader to take
 *   each 192 KiB window (a minimum rate, not a progress test: a reader
 *   taking one byte at a time is dropped, write_timeouts), then drops it.
 *   During a stream the control thread serves nobody else.  The dataplane
 *   never waits on a client: callbacks reach
 *   workers through conntrack mailboxes, which workers drain between
 *   bursts.
 *
 * ## Config changes
 * Every edit verb (service.*, backend.* except list, config.apply) is
 * "ops->config_get, edit the copy, fg_config_validate, fg_config_assign_ids
 * (stable backend ids), ops->config_apply".  Apply is all-or-nothing; on
 * success the health checker (if any) gets the new config.
 * config.apply replaces the whole config, so it first asks
 * ops->config_check: a file that changes a restart-only field (ports,
 * conntrack capacity / flood_rate / timeouts, control_socket) is refused
 * with the field named, never half-applied; a file with no service is
 * refused unless the request says allow_empty.
 *
 * ## Threads
 * Callbacks are called on the control thread only, one at a time.  The
 * health checker (fg_health.h) calls its own callback from its own thread,
 * so a daemon that shares state between config_apply and
 * backend_set_health must serialize them itself (a mutex in the control
 * plane, never on the packet path).
 */
#ifndef FLOWGATE_FG_CTL_SERVER_H
#define FLOWGATE_FG_CTL_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "fg_config.h"
#include "fg_proto.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Most worker cores a flow count reports. */
#define FG_CTL_MAX_CORES 128

/** Flow counts for flows.count. */
struct fg_flow_counts {
	uint32_t n_cores;                      /**< workers reported */
	uint64_t total;                        /**< live flows (all cores) */
	uint64_t per_core[FG_CTL_MAX_CORES];   /**< live flows per worker */
	uint64_t per_state[16];                /**< by conntrack state index */
	/** of total, the NAT flows (each holds a reply entry as well), as
	 *  flowgate_conntrack_nat_flows */
	uint64_t nat;
	/** the NAT flows the cores can hold, IPv4, as
	 *  flowgate_conntrack_nat_capacity summed; 0: no NAT region */
	uint64_t nat_capacity;
};

/** A conntrack event for flows.watch. */
struct fg_flow_event {
	char type[12];              /**< "NEW", "UPDATE" (state change) or "DESTROY"
				         (conntrack -E style) */
	struct fg_flow_info flow;
};

/**
 * Emit callback handed to flows_walk; called on the control thread.
 * @return 0 to continue, a negative errno to stop the walk (the walk
 *   then returns it).
 */
typedef int (*fg_flow_emit_fn)(const struct fg_flow_info *info, void *arg);

struct fg_ctl_server;
struct fg_health;

/**
 * What the daemon provides.  Every callback gets the ctx of
 * fg_ctl_server_params, runs on the control thread, and returns 0 (or a
 * count where noted) or a negative errno; the server turns errors into an
 * error reply.  A NULL callback makes its commands answer "not supported".
 */
struct fg_ctl_ops {
	/** Deep copy of the running config into @p out (caller frees with
	 *  fg_config_free). */
	int (*config_get)(struct fg_config *out, void *ctx);
	/**
	 * Applies a complete, validated config with ids assigned: rebuild the
	 * service tables, publish, wait for the grace period.  All-or-nothing:
	 * on error nothing changed and @p err says why.  Live flows stay on
	 * their backends.
	 */
	int (*config_apply)(const struct fg_config *cfg, char *err, size_t errlen,
			    void *ctx);
	/**
	 * Checks, without applying anything, whether @p cfg (validated, ids
	 * not assigned) could be applied by this daemon: its ports name
	 * devices the daemon has, and no restart-only field differs from the
	 * running config (fg_config_restart_diff, after the daemon's own
	 * command-line overrides).  config.check reports a restart-only
	 * difference as a note; config.apply refuses it.  NULL: not checked.
	 * @return 0; 1 with @p err naming the restart-only field that differs;
	 *   -EINVAL with @p err (e.g. a port that is not a device here).
	 */
	int (*config_check)(const struct fg_config *cfg, char *err, size_t errlen,
			    void *ctx);
	/**
	 * Walks the tracked flows matching @p f (fg_flow_filter_match, plus
	 * f->limit), calling @p emit for each (@p emit may be NULL).  With
	 * @p delete_matching the matching flows (both NAT directions) are
	 * deleted by their owning cores.  Flows must be copied out on the
	 * worker and emitted from the control thread; emit may block on the
	 * client socket.
	 * @return number of flows matched (deleted), or a negative errno
	 *   (including one returned by @p emit).
	 */
	int64_t (*flows_walk)(const struct fg_flow_filter *f, fg_flow_emit_fn emit,
			      void *emit_arg, bool delete_matching, void *ctx);
	/** Live flow counts, total / per core / per state. */
	int (*flows_count)(struct fg_flow_counts *out, void *ctx);
	/**
	 * Writes the stats as exactly one JSON value (an object; key NULL)
	 * into @p w: counters summed over cores, per core when @p per_core,
	 * only service @p service ("VIP:PORT/PROTO" or name) when non-NULL.
	 * Use the counter names of the X-macro lists.  With @p zero, the
	 * counters written become the baseline later calls subtract (fgctl
	 * stats --zero: a reader-side offset; the daemon's counters, and what
	 * /metrics and telemetry show, are never reset).
	 * -ENOENT: no such service.
	 */
	int (*stats)(struct fg_json_writer *w, const char *service, bool per_core,
		     bool zero, void *ctx);
	/**
	 * ipvsadm's ActiveConn / InActConn of one backend: its tracked flows
	 * in ESTABLISHED / in any other state.  NULL: not reported.
	 * @return 0, or -ENOENT (no such service or backend in the dataplane).
	 */
	int (*backend_conns)(uint32_t service_id, uint32_t backend_id, uint64_t *active,
			     uint64_t *inactive, void *ctx);
	/**
	 * New flows a backend received, and how many of them load placed
	 * (maglev-load's second candidate or saturated fallback) rather than
	 * its Maglev slot, summed over cores.  NULL: backend list omits them.
	 * @return 0, or -ENOENT (no such service / backend in the tables).
	 */
	int (*backend_placed)(uint32_t service_id, uint32_t backend_id, uint64_t *new_flows,
			      uint64_t *new_flows_load, void *ctx);
	/** Turns conntrack event reporting on (first watcher) / off (last gone). */
	int (*watch_set)(bool on, void *ctx);
	/** Takes up to @p max pending events.  @return count (>= 0). */
	int (*watch_poll)(struct fg_flow_event *ev, unsigned int max, void *ctx);
	/** Writes the daemon's version and build options as keys of the open
	 *  object @p w ("version", "dpdk", ...) for the version command.
	 *  NULL: version answers the protocol only. */
	void (*build_info)(struct fg_json_writer *w, void *ctx);
};

/** Server counters, declared once (JSON keys of the "control" stats). */
#define FG_CTL_COUNTER_LIST(X)                                              \
	X(accepted)      /* connections accepted */                         \
	X(rejected_full) /* refused: max_clients reached */                 \
	X(requests)      /* requests dispatched */                          \
	X(bad_requests)  /* malformed / unknown version / unknown command */ \
	X(oversized)     /* request line over the limit (client dropped) */ \
	X(dropped_slow)  /* client dropped: a reply or watch backlog over max_outbuf */ \
	X(write_timeouts) /* client dropped: queued reply not read in write_timeout_ms */ \
	X(idle_closed)   /* client closed: no request for idle_timeout_ms */ \
	X(evicted_idle)  /* idle client closed to admit a new one at the cap */ \
	X(errors)        /* requests answered ok:false */                   \
	X(watch_rejected) /* flows.watch refused: max_watchers reached */ \
	X(refused_read_only) /* a change request on the read-only socket */

struct fg_ctl_counters {
#define FG_X(n) uint64_t n;
	FG_CTL_COUNTER_LIST(FG_X)
#undef FG_X
};

/** One state-changing request, as the audit callback sees it. */
struct fg_ctl_audit {
	long uid, gid, pid;     /**< the client's SO_PEERCRED (-1: unknown) */
	const char *cmd;        /**< command name, e.g. "backend.drain" */
	const char *args;       /**< its arguments as compact JSON; a config
				     text is replaced by its size */
	bool ok;                /**< applied */
	const char *error;      /**< why not (ok false), else "" */
};

/** Called once per state-changing request (service.add / del, backend.add /
 *  del / weight / drain / undrain, config.apply, flows.delete, stats with
 *  zero: fg_ctl_request_writes) after it ran or was refused, on the
 *  control thread. */
typedef void (*fg_ctl_audit_fn)(const struct fg_ctl_audit *a, void *ctx);

struct fg_ctl_server_params {
	const char *socket_path;   /**< NULL = FG_CTL_DEFAULT_SOCKET */
	const struct fg_ctl_ops *ops;
	void *ctx;                 /**< passed to every op */
	struct fg_health *health;  /**< optional: answers "health", gets applied configs */
	unsigned int max_clients;  /**< ordinary clients; 0 = 64 */
	/** flows.watch clients, in slots of their own: 0 =
	 *  FG_CTL_DEFAULT_WATCHERS. */
	unsigned int max_watchers;
	size_t max_request;        /**< 0 = FG_PROTO_MAX_REQUEST */
	/** 0 = 16 MiB: the largest single reply, and a watcher's event
	 *  backlog; over it the client is dropped (dropped_slow). */
	size_t max_outbuf;
	/** 0 = 15000: queued output not read within this is a stuck reader
	 *  (write_timeouts); see "Isolation". */
	unsigned int write_timeout_ms;
	/** A client without a request this long is closed (watchers
	 *  excepted): 0 = FG_CTL_DEFAULT_IDLE_MS, negative = never. */
	int idle_timeout_ms;
	/** The daemon's config file (absolute), or NULL: config.show names it
	 *  as "path" so that `fgctl config save` can write there. */
	const char *config_path;
	/** Audit trail of changes (optional): one call per change request. */
	fg_ctl_audit_fn audit;
};

/** Default idle limit of a control client (fg_ctl_server_params). */
#define FG_CTL_DEFAULT_IDLE_MS 30000
/** At the client cap, a client idle at least this long may be evicted. */
#define FG_CTL_EVICT_IDLE_MS 1000
/** Default cap of flows.watch clients (fg_ctl_server_params). */
#define FG_CTL_DEFAULT_WATCHERS 16
/** Unread reply bytes at which a client's further requests wait unread. */
#define FG_CTL_QUEUE_MAX (64u << 10)

/**
 * Creates the listening socket (see "Isolation").  Does not start a thread.
 * @return 0 and *out, or -EINVAL (bad params / path too long), -ENOTDIR or
 *   -ENOENT (parent directory missing), -EPERM (parent writable by others,
 *   not sticky), -EADDRINUSE (another daemon answers on the path),
 *   -ENOMEM, or the errno of socket/bind/listen/chmod.
 * Thread safety: call once from the main thread.
 */
int fg_ctl_server_create(const struct fg_ctl_server_params *p,
			 struct fg_ctl_server **out);

/**
 * Adds the read-only socket at @p path: mode 0660, group @p gid, so that
 * the members of that group may connect (its directory must let them
 * reach it).  Requests that change state (fg_ctl_request_writes) are
 * refused on it with an error naming the read-write socket
 * (refused_read_only).  Call after fg_ctl_server_create, before start.
 * @return 0, or -EINVAL (bad path, the read-write path, already added),
 *   the errors of fg_ctl_server_create's socket, or chown's.
 */
int fg_ctl_server_listen_ro(struct fg_ctl_server *s, const char *path, gid_t gid);

/**
 * Whether request @p r changes the daemon's state: the edit verbs,
 * config.apply, flows.delete, and stats with zero (the baseline every
 * later stats answer subtracts).  Audited; refused on the read-only socket.
 */
bool fg_ctl_request_writes(const struct fg_proto_req *r);

/**
 * Starts the control thread (named "fg-ctl").
 * @return 0, -EALREADY, or the pthread_create error (negative).
 */
int fg_ctl_server_start(struct fg_ctl_server *s);

/**
 * Serves for at most @p timeout_ms (one poll round) on the calling thread;
 * for daemons that run their own control loop and for tests.  Must not be
 * mixed with fg_ctl_server_start.
 * @return 0 or a negative errno from poll.
 */
int fg_ctl_server_poll(struct fg_ctl_server *s, int timeout_ms);

/** Stops and joins the control thread (no-op if not started). */
void fg_ctl_server_stop(struct fg_ctl_server *s);

/** Stops, closes every client, unlinks the socket, frees.  NULL is a no-op. */
void fg_ctl_server_destroy(struct fg_ctl_server *s);

/**
 * Re-reads @p path and applies it exactly as `fgctl config apply PATH`
 * does (parse, validate, restart-only check, stable ids, apply, health
 * checker, audit call with "origin" @p origin and this process as the
 * client), on the control thread, and waits for the outcome: a daemon's
 * SIGHUP, without a socket client of its own.
 * Thread safety: any thread but the control thread (before
 * fg_ctl_server_start: the caller's thread runs it).
 * @return 0 (applied); -EINVAL (refused: @p err says why, in one line
 *   per problem, and the running config is unchanged); -errno (the file
 *   unreadable, -ETIMEDOUT after 120 s).
 */
int fg_ctl_server_reload(struct fg_ctl_server *s, const char *path, const char *origin,
			 char *err, size_t errlen);

/** Snapshot of the counters (racy read of plain counters; fine for stats). */
void fg_ctl_server_counters(const struct fg_ctl_server *s,
			    struct fg_ctl_counters *out);

/** Names of the counters in struct order. */
extern const char *const fg_ctl_counter_names[];

#ifdef __cplusplus
}
#endif
#endif /* FLOWGATE_FG_CTL_SERVER_H */
