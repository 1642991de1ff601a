/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * The human-edited config file (syntax: docs/CONFIG.md) <-> struct
 * fg_config, semantic validation, stable backend ids, copy/free.
 *
 * The syntax is block-structured in the style of nginx / keepalived:
 * `keyword args... ;` statements and `keyword args... { ... }` blocks,
 * `#` comments, "double quoted" words.  Loading reports *every* invalid
 * field as "file:line: reason" (up to the caller's error array), not only
 * the first.
 *
 * Thread safety: all functions are reentrant; a struct fg_config belongs to
 * one thread at a time.
 */
#ifndef FLOWGATE_FG_CONFIG_PARSE_H
#define FLOWGATE_FG_CONFIG_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "fg_config.h"

#ifdef __cplusplus
extern "C" {
#endif

/** One reported problem. */
struct fg_cfg_err {
	char file[128];  /**< file name as given ("" for non-file configs) */
	unsigned int line; /**< 1-based; 0 = not tied to a line */
	char msg[200];   /**< what is wrong and what is expected */
};

/** A list of problems filled by load/validate (the caller owns the array). */
struct fg_cfg_errs {
	struct fg_cfg_err *v;
	unsigned int max;  /**< capacity of v */
	unsigned int n;    /**< problems found (may exceed max: only max kept) */
};

/** Sets the defaults of an empty config (no services, no ports). */
void fg_config_init(struct fg_config *cfg);

/** Reads a config file whole (a regular file, at most the parser's
 *  size limit) into a NUL-terminated *text (caller frees) of *len bytes.
 *  @return 0, or -errno with the reason in @p errs. */
int fg_config_read_file(const char *path, char **text, size_t *len,
			struct fg_cfg_errs *errs);

/**
 * Loads and validates a config file.
 * @param out   receives the config (fg_config_free it, also on error)
 * @param errs  receives every problem (may be NULL)
 * @return 0; -EINVAL (problems: see errs), -errno (file unreadable: also
 *   one entry in errs), -EFBIG (file over 16 MiB), -ENOMEM.
 */
int fg_config_load(const char *path, struct fg_config *out, struct fg_cfg_errs *errs);

/**
 * Same as fg_config_load on text in memory; @p name labels messages.
 */
int fg_config_parse(const char *text, size_t len, const char *name,
		    struct fg_config *out, struct fg_cfg_errs *errs);

/**
 * Semantic checks across fields: duplicate VIP:PORT/PROTO and names,
 * duplicate backends, weight range, maglev size prime and >= backends,
 * address families consistent with the mode and the ports' local
 * addresses, health parameters, neighbours' ports.  Messages carry the
 * source line when the config came from a file (src_line).
 * @return 0 or -EINVAL (errs filled).
 */
int fg_config_validate(const struct fg_config *cfg, const char *name,
		       struct fg_cfg_errs *errs);

/**
 * Assigns ids: a service that exists in @p prev (same VIP, port, proto)
 * keeps its id, a backend that exists there (same service, address, port)
 * keeps its id; new ones get ids never used by @p prev (@p prev may be
 * NULL), nor by any backend it had before (prev->backend_id_max: a removed
 * backend's id is never reused).  Backend ids are unique across the whole
 * config; cfg->backend_id_max is set.
 * @return 0 or -ENOSPC (no free service id).
 */
int fg_config_assign_ids(struct fg_config *cfg, const struct fg_config *prev);

/**
 * Writes @p cfg in file syntax (fg_config_parse reads it back to an equal
 * config, ids aside).  @return 0 or -errno of the stream.
 */
int fg_config_dump(const struct fg_config *cfg, FILE *f);
/** Same into a malloc'ed string (*out; free()).  @return 0 or -ENOMEM. */
int fg_config_dump_str(const struct fg_config *cfg, char **out);

/** Deep copy (dst is overwritten, not freed).  @return 0 or -ENOMEM. */
int fg_config_copy(struct fg_config *dst, const struct fg_config *src);
/** Frees what a config owns and zeroes it.  Safe on a zeroed config. */
void fg_config_free(struct fg_config *cfg);
/** Equal content (ids and src_line ignored). */
bool fg_config_equal(const struct fg_config *a, const struct fg_config *b);

/**
 * The settings a running daemon cannot change (restart-only): ports (names,
 * MACs, local addresses, gateways, VLANs), conntrack capacity, flood_rate
 * and timeouts (conntrack shards take them at creation), control_socket.
 * Everything else (services, backends, neighbours, gue_port) applies live.
 * @param msg  receives the first difference, naming the field
 * @return 0 (no restart-only field differs) or 1.
 */
int fg_config_restart_diff(const struct fg_config *running, const struct fg_config *next,
			   char *msg, size_t len);

/**
 * Finds a service by "VIP:PORT/PROTO" or name.  @return its index or -ENOENT.
 */
int fg_config_find_service(const struct fg_config *cfg, const char *spec);
/** Finds a backend of a service by address (and port, 0 = any). @return index or -ENOENT. */
int fg_config_find_backend(const struct fg_service_cfg *svc, const struct fg_addr *a,
			   uint16_t port);
/**
 * Adds a service (backends none).  @return its index, -EEXIST, -ENOSPC,
 * -ENOMEM.
 */
int fg_config_add_service(struct fg_config *cfg, const struct fg_service_cfg *svc);
/** Removes service @p idx. */
void fg_config_del_service(struct fg_config *cfg, unsigned int idx);

/** Mode / scheduler / policy / health-type names (file and CLI syntax). */
const char *fg_mode_name(enum fg_fwd_mode m);
const char *fg_sched_name(enum fg_sched s);
const char *fg_fail_name(enum fg_fail_policy p);
const char *fg_hc_name(enum fg_hc_type t);
int fg_mode_parse(const char *s);   /**< enum value or -EINVAL */
int fg_sched_parse(const char *s);
/** Fills the service defaults (mode dsr-ipip, maglev, keep, health none). */
void fg_service_init(struct fg_service_cfg *svc);
/** Fills the backend defaults (weight 1). */
void fg_backend_init(struct fg_backend_cfg *b);

#ifdef __cplusplus
}
#endif
#endif /* FLOWGATE_FG_CONFIG_PARSE_H */
