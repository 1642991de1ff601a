/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * The config.check / config.apply callbacks (fg_ctl_server.h) as both
 * daemons implement them, written once: under the daemon's config lock,
 * the file as it would be in force (the daemon's own command-line
 * overrides and defaults) is compared with the running config's
 * restart-only fields; check reports the difference, apply refuses it
 * ("FIELD ...: needs a restart", -EOPNOTSUPP) or hands the config in
 * force to the daemon's apply.
 *
 * Threads: the control thread (as the callbacks); the lock serializes
 * with the health checker's callbacks.
 */
#ifndef FLOWGATE_FG_CONFIG_GATE_H
#define FLOWGATE_FG_CONFIG_GATE_H

#include <pthread.h>
#include <stddef.h>

#include "fg_config.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * What a daemon gives: its lock, two callbacks called under it, their
 * context.  The daemon's ops ctx (fg_ctl_server_params::ctx) starts with
 * it, so fg_config_gate_check / _apply are its ops->config_check /
 * config_apply as they are.
 */
struct fg_config_gate {
	pthread_mutex_t *lock;     /**< the daemon's config lock */
	/** @p cfg as it would be in force into *out, against the running
	 *  config: fg_config_restart_diff()'s answer (0; 1 with the field in
	 *  @p err; -errno with @p err) */
	int (*in_force)(void *ctx, const struct fg_config *cfg, struct fg_config *out,
			char *err, size_t errlen);
	/** applies @p next (in force, no restart-only difference) */
	int (*apply)(void *ctx, const struct fg_config *next, char *err, size_t errlen);
	void *ctx;
};

/** ops->config_check; @p gate: the ops ctx, a struct fg_config_gate first. */
int fg_config_gate_check(const struct fg_config *cfg, char *err, size_t errlen, void *gate);

/** ops->config_apply, likewise: checked again under the lock (the server
 *  asked config_check first), a restart-only difference refused. */
int fg_config_gate_apply(const struct fg_config *cfg, char *err, size_t errlen, void *gate);

#ifdef __cplusplus
}
#endif
#endif /* FLOWGATE_FG_CONFIG_GATE_H */
