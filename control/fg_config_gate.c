/* SPDX-License-Identifier: BSD-3-Clause */
/* config.check / config.apply as both daemons implement them (fg_config_gate.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "fg_config_gate.h"

int fg_config_gate_check(const struct fg_config *cfg, char *err, size_t errlen, void *gate)
{
	const struct fg_config_gate *g = gate;
	struct fg_config tmp;
	int rc;

	pthread_mutex_lock(g->lock);
	rc = g->in_force(g->ctx, cfg, &tmp, err, errlen);
	pthread_mutex_unlock(g->lock);
	return rc;
}

int fg_config_gate_apply(const struct fg_config *cfg, char *err, size_t errlen, void *gate)
{
	const struct fg_config_gate *g = gate;
	struct fg_config next;
	int rc;

	pthread_mutex_lock(g->lock);
	/* what is applied (and shown) is the config in force */
	rc = g->in_force(g->ctx, cfg, &next, err, errlen);
	if (rc > 0) {
		size_t n = strlen(err);

		snprintf(err + n, errlen - n, ": needs a restart");
		rc = -EOPNOTSUPP;
	}
	if (rc == 0)
		rc = g->apply(g->ctx, &next, err, errlen);
	pthread_mutex_unlock(g->lock);
	return rc;
}
