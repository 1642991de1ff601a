/* SPDX-License-Identifier: BSD-3-Clause */
/* config.check / config.apply as both daemons implement them (fg_config_gate.h). */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "fg_config_gate.h"

/* @p cfg in force, under the lock; with @p apply, a restart-only
 * difference refused and the config in force (what is then shown)
 * applied. */
static int gate_run(const struct fg_config_gate *g, const struct fg_config *cfg,
		    char *err, size_t errlen, bool apply)
{
	struct fg_config next;
	int rc;

	pthread_mutex_lock(g->lock);
	rc = g->in_force(g->ctx, cfg, &next, err, errlen);
	if (apply && rc > 0) {
		size_t n = strlen(err);

		snprintf(err + n, errlen - n, ": needs a restart");
		rc = -EOPNOTSUPP;
	}
	if (apply && rc == 0)
		rc = g->apply(g->ctx, &next, err, errlen);
	pthread_mutex_unlock(g->lock);
	return rc;
}

int fg_config_gate_check(const struct fg_config *cfg, char *err, size_t errlen, void *gate)
{
	return gate_run(gate, cfg, err, errlen, false);
}

int fg_config_gate_apply(const struct fg_config *cfg, char *err, size_t errlen, void *gate)
{
	/* checked again under the lock: the server asked config_check first */
	return gate_run(gate, cfg, err, errlen, true);
}
