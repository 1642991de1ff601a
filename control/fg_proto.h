/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * flowgate control protocol: the one definition shared by the daemon
 * (control/fg_ctl_server.c) and the CLI (control/fgctl.c).
 *
 * ## Wire format: JSON lines over a Unix stream socket
 * Every message is one JSON object on one line ('\n' terminated, no raw
 * newline inside; JSON escapes them).  A request:
 *
 *     {"v":1,"id":7,"cmd":"backend.add","args":{"service":"10.0.0.1:80/tcp","addr":"10.1.0.5","weight":10}}
 *
 * and its reply, success or failure:
 *
 *     {"v":1,"id":7,"ok":true,"data":{...}}
 *     {"v":1,"id":7,"ok":false,"error":"backend 10.1.0.5 already in service","hint":"use 'backend weight' to change it"}
 *
 * Streaming commands (flows.list, flows.get, flows.watch) first send any
 * number of item lines, then the final reply above:
 *
 *     {"v":1,"id":7,"more":true,"data":{flow}}                 (flows.list/get)
 *     {"v":1,"id":7,"more":true,"event":"NEW","data":{flow}}   (flows.watch)
 *
 * flows.watch never sends a final reply: events flow until the client
 * disconnects.  A request whose "v" is not FG_PROTO_VERSION gets an
 * ok:false reply (with "v":1 so old and new clients can read it).
 *
 * ## Limits (enforced by the parser and the server)
 * A request line is at most FG_PROTO_MAX_REQUEST bytes; JSON nesting is at
 * most FG_JSON_MAX_DEPTH; strings must be valid UTF-8 without NUL; numbers
 * must be finite.  The parser is strict RFC 8259 (no trailing commas, no
 * comments, no leading zeros, duplicate object keys rejected).
 *
 * ## Commands
 * FG_CMD_LIST below is the command table; args of each command are
 * documented in docs/CONFIG.md ("Control protocol").
 *
 * Thread safety: every function here is reentrant; objects (documents,
 * writers) belong to one thread at a time.
 */
#ifndef FLOWGATE_FG_PROTO_H
#define FLOWGATE_FG_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fg_config.h"
#include "fg_json.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Protocol version carried in every message as "v". */
#define FG_PROTO_VERSION 1
/** Largest request line the server accepts (bytes, without '\n'). */
#define FG_PROTO_MAX_REQUEST FG_JSON_DEFAULT_MAX_LEN
/** Socket path used when neither -s nor FLOWGATE_SOCKET is given. */
#define FG_CTL_DEFAULT_SOCKET "/run/flowgate/flowgate.sock"
/** The read-only socket's conventional path (`control_socket_ro`): fgctl
 *  tries it when the default socket refuses it (not root) and neither -s
 *  nor FLOWGATE_SOCKET names one. */
#define FG_CTL_DEFAULT_RO_SOCKET "/run/flowgate/flowgate-ro.sock"
/** Environment variable that overrides the default socket path. */
#define FG_CTL_SOCKET_ENV "FLOWGATE_SOCKET"

/**
 * Command table: enum name, wire name, streaming reply.
 * Args (all optional unless marked *):
 * - service.add: service*, mode, sched, name | service.del: service*
 * - backend.add: service*, addr*, weight | backend.del: service*, addr*
 * - backend.list: service (all when absent) | backend.weight: service*, addr*, weight*
 * - backend.drain / backend.undrain: service*, addr*
 * - flows.list / flows.delete: service, backend, state, core, limit, client
 *   (ADDR or ADDR/PLEN), client_port, nat_addr, nat_port, idle_min_ms,
 *   idle_max_ms, lifetime_min_ms, lifetime_max_ms (ranges inclusive)
 * - flows.get: src*, dst*, proto* | flows.count: per_core
 * - flows.watch: the filters of flows.list but limit; events NEW, UPDATE
 *   (state change: flow.prev_state), DESTROY (flow.reason); flow.ts_ms
 * - stats: per_core, service (scopes the answer to it), zero (the answer
 *   becomes the baseline later answers subtract) | health: -
 * - config.apply: text*, name, allow_empty
 *   (bool: a config with no service is refused without it)
 * - config.show: - | config.check: text*, name | ping: -
 * - version: - (replies {protocol, version, dpdk, gpu, march, options,
 *   socket, read_only})
 * config.check replies {applied:false, services, backends, daemon_checked,
 * restart_needed (string, only when a restart-only field differs)}.
 */
#define FG_CMD_LIST(X)                              \
	X(PING, "ping", false)                      \
	X(SERVICE_ADD, "service.add", false)        \
	X(SERVICE_DEL, "service.del", false)        \
	X(SERVICE_LIST, "service.list", false)      \
	X(BACKEND_ADD, "backend.add", false)        \
	X(BACKEND_DEL, "backend.del", false)        \
	X(BACKEND_LIST, "backend.list", false)      \
	X(BACKEND_WEIGHT, "backend.weight", false)  \
	X(BACKEND_DRAIN, "backend.drain", false)    \
	X(BACKEND_UNDRAIN, "backend.undrain", false) \
	X(FLOWS_LIST, "flows.list", true)           \
	X(FLOWS_GET, "flows.get", true)             \
	X(FLOWS_DELETE, "flows.delete", false)      \
	X(FLOWS_COUNT, "flows.count", false)        \
	X(FLOWS_WATCH, "flows.watch", true)         \
	X(STATS, "stats", false)                    \
	X(HEALTH, "health", false)                  \
	X(CONFIG_APPLY, "config.apply", false)      \
	X(CONFIG_SHOW, "config.show", false)        \
	X(CONFIG_CHECK, "config.check", false)      \
	X(VERSION, "version", false)

enum fg_cmd {
#define FG_X(e, s, st) FG_CMD_##e,
	FG_CMD_LIST(FG_X)
#undef FG_X
	FG_CMD_MAX
};

/** Wire names, indexed by enum fg_cmd. */
extern const char *const fg_cmd_names[FG_CMD_MAX];

/**
 * Looks a wire name up.
 * @return the enum fg_cmd value, or -ENOENT for an unknown name.
 */
int fg_cmd_lookup(const char *name);

/* ---- Messages ---------------------------------------------------------- */

/** A parsed request. */
struct fg_proto_req {
	struct fg_json_doc *doc; /**< owns everything below */
	uint64_t id;
	int cmd;                 /**< enum fg_cmd */
	const char *cmd_name;
	const struct fg_json *args; /**< an object (empty object when absent) */
};

/**
 * Parses one request line.  On failure @p req->id is still set when the
 * line carried a readable id, so the error reply can echo it.
 * @return 0; -EINVAL (malformed: err/hint say why), -EPROTO (unknown
 *   version), -ENOENT (unknown command), -E2BIG (over the size limit),
 *   -ENOMEM.
 */
int fg_proto_req_parse(const char *line, size_t len, struct fg_proto_req *req,
		       char *err, size_t errlen);
/** Frees what fg_proto_req_parse allocated. */
void fg_proto_req_free(struct fg_proto_req *req);

/** Starts a request line: {"v":1,"id":N,"cmd":"...","args":{  (close with fg_proto_req_end). */
void fg_proto_req_begin(struct fg_json_writer *w, uint64_t id, const char *cmd);
/** Closes args and the request, appends '\n'. */
void fg_proto_req_end(struct fg_json_writer *w);

/** Starts a success reply: {"v":1,"id":N,"ok":true,"data":  then the caller
 *  writes exactly one value (key NULL) and calls fg_proto_reply_end. */
void fg_proto_reply_begin(struct fg_json_writer *w, uint64_t id);
/** Starts a stream item: {"v":1,"id":N,"more":true[,"event":E],"data": */
void fg_proto_item_begin(struct fg_json_writer *w, uint64_t id, const char *event);
/** Closes a reply or item and appends '\n'. */
void fg_proto_reply_end(struct fg_json_writer *w);
/** Writes a whole error reply line; @p hint may be NULL. */
void fg_proto_reply_error(struct fg_json_writer *w, uint64_t id,
			  const char *error, const char *hint);

/** A parsed reply or stream item (client side). */
struct fg_proto_resp {
	struct fg_json_doc *doc;
	uint64_t id;
	bool ok;
	bool more;                  /**< a stream item, not the final reply */
	const char *event;          /**< watch events, else NULL */
	const char *error, *hint;   /**< ok == false */
	const struct fg_json *data; /**< may be NULL */
};

/**
 * Parses one reply line.
 * @return 0, -EINVAL (not a reply: err says why), -EPROTO (other version).
 */
int fg_proto_resp_parse(const char *line, size_t len, struct fg_proto_resp *resp,
			char *err, size_t errlen);
void fg_proto_resp_free(struct fg_proto_resp *resp);

/* ---- Addresses --------------------------------------------------------- */

/** Parses "10.0.0.1" or "fd00::1" (brackets allowed).  @return 0 or -EINVAL. */
int fg_addr_parse(const char *s, struct fg_addr *out);
/** Formats an address ("-" for family 0).  @return @p buf. */
char *fg_addr_format(const struct fg_addr *a, char *buf, size_t len);
/** Formats "1.2.3.4:80" or "[fd00::1]:80" (port host order). */
char *fg_endpoint_format(const struct fg_addr *a, uint16_t port, char *buf, size_t len);
/**
 * Parses "ADDR", "ADDR:PORT", "[V6]" or "[V6]:PORT".  A bare IPv6 address
 * without brackets is accepted when @p port_required is false (no port).
 * @param port  receives the port or 0 when absent
 * @return 0, -EINVAL (bad address or port), -ENOENT (port required, absent).
 */
int fg_endpoint_parse(const char *s, bool port_required, struct fg_addr *out,
		      uint16_t *port);
/** Equal family and bytes. */
bool fg_addr_equal(const struct fg_addr *a, const struct fg_addr *b);

/**
 * Parses a service spec "VIP:PORT/PROTO" (PROTO tcp|udp, default tcp when
 * "/PROTO" is absent), e.g. "10.0.0.1:80/tcp", "[fd00::1]:443/udp".
 * @return 0 or -EINVAL.
 */
int fg_service_spec_parse(const char *s, struct fg_addr *vip, uint16_t *port,
			  uint8_t *proto);
/** Formats "VIP:PORT/PROTO". */
char *fg_service_spec_format(const struct fg_addr *vip, uint16_t port,
			     uint8_t proto, char *buf, size_t len);

/* ---- Flows ------------------------------------------------------------- */

/** One tracked flow as the control plane reports it (plain data). */
struct fg_flow_info {
	struct fg_addr src, dst;   /**< client -> VIP (request direction) */
	uint16_t sport, dport;     /**< host order */
	uint8_t proto;             /**< IPPROTO_* */
	uint8_t flags;             /**< conntrack CT_F_* */
	char state[16];            /**< "ESTABLISHED", ... (ct_state_names) */
	uint32_t service_id;
	char service[64];          /**< "VIP:PORT/PROTO" or the service's name */
	uint32_t backend_id;
	struct fg_addr backend;    /**< family 0 when the backend is gone */
	uint16_t backend_port;
	struct fg_addr nat_addr;   /**< NAT: local address used (family 0 = none) */
	uint16_t nat_port;         /**< NAT: local port, host order */
	int32_t core;              /**< worker index (shard) */
	uint64_t packets, bytes;   /**< both directions summed */
	uint64_t idle_ms;          /**< since the last packet (JSON idle_ms, and
				        age_ms: its deprecated alias) */
	uint64_t expires_ms;       /**< until expiry */
	uint64_t lifetime_ms;      /**< since the flow was created */
	uint64_t created_ms;       /**< creation, Unix time in ms (0 = unknown) */
	/** flows watch events: when it happened, Unix time in ms; 0 otherwise,
	 *  and then not written to JSON. */
	uint64_t ts_ms;
	/** flows watch UPDATE events: the state before ("" otherwise, and then
	 *  not written to JSON). */
	char prev_state[16];
	/** flows watch DESTROY events: why the flow ended ("expired", "closed":
	 *  expired after FIN/RST, "evicted", "deleted"); "" otherwise, and then
	 *  not written to JSON. */
	char end_reason[12];
};

/**
 * Which flows a list/delete/count request means.  A zero-initialized
 * filter (after fg_flow_filter_init) matches everything.
 */
struct fg_flow_filter {
	int64_t service_id;   /**< -1 = any; resolved by the server from the spec */
	bool has_backend;
	struct fg_addr backend; /**< matches fg_flow_info::backend */
	uint16_t backend_port;  /**< 0 = any port */
	int state;            /**< index into ct state names, -1 = any */
	char state_name[16];  /**< same, by name ("" = any) */
	int32_t core;         /**< -1 = any */
	uint64_t limit;       /**< 0 = no limit (list/delete stop after limit matches) */
	bool has_tuple;       /**< exact tuple (flows get): the client's, or a NAT
				   flow's reply tuple (backend:port -> nat addr:port) */
	struct fg_addr src, dst;
	uint16_t sport, dport;
	uint8_t proto;
	bool has_client;      /**< client address in client/client_plen */
	struct fg_addr client;
	uint8_t client_plen;  /**< prefix length (32 / 128 = one address) */
	bool has_client_port;
	uint16_t client_port;
	bool has_nat_addr;    /**< NAT local address (flows without NAT never match) */
	struct fg_addr nat_addr;
	bool has_nat_port;
	uint16_t nat_port;
	/** ranges, inclusive: idle = since the last packet, lifetime = since
	 *  creation (0 / UINT64_MAX = open) */
	uint64_t idle_min_ms, idle_max_ms;
	uint64_t life_min_ms, life_max_ms;
	/** Not a criterion: how long the daemon may wait on a worker for one
	 *  chunk of the walk (the request's args.timeout_ms, fgctl --timeout,
	 *  at most FG_PROTO_TIMEOUT_MS_MAX); 0 = the engine's own default. */
	uint64_t wait_ms;
};

/** The largest args.timeout_ms a request may carry (a day). */
#define FG_PROTO_TIMEOUT_MS_MAX (24ull * 3600 * 1000)

/**
 * Parses a client filter "ADDR" or "ADDR/PLEN" (IPv4 or IPv6, brackets
 * allowed) into @p f (has_client, client, client_plen).
 * @return 0 or -EINVAL (bad address, prefix length over the family's).
 */
int fg_flow_filter_client_parse(struct fg_flow_filter *f, const char *s);

/**
 * Parses a duration for the idle/lifetime filters: an integer with an
 * optional unit ms (default), s, m or h ("500", "10s", "5m").
 * @return 0 and *ms, or -EINVAL (also on overflow).
 */
int fg_duration_parse(const char *s, uint64_t *ms);

/** Sets the match-everything values (-1s, no limit, open ranges). */
void fg_flow_filter_init(struct fg_flow_filter *f);
/**
 * Whether @p info matches @p f (every set criterion; limit not applied).
 * The daemon calls it for each flow it walks.
 * Thread safety: pure function.
 */
bool fg_flow_filter_match(const struct fg_flow_filter *f,
			  const struct fg_flow_info *info);
/** Writes a flow as a JSON object (keys: see docs/CONFIG.md). */
void fg_flow_info_to_json(struct fg_json_writer *w, const char *key,
			  const struct fg_flow_info *info);
/** Reads the object fg_flow_info_to_json wrote.  @return 0 or -EINVAL. */
int fg_flow_info_from_json(const struct fg_json *obj, struct fg_flow_info *info);

/** Conntrack state name of index i (CT_STATE_LIST order), NULL past the end. */
const char *fg_flow_state_name(int i);
/** Index of a state name (case-insensitive), or -ENOENT. */
int fg_flow_state_lookup(const char *name);

#ifdef __cplusplus
}
#endif
#endif /* FLOWGATE_FG_PROTO_H */
