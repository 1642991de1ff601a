/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The one mapping from the config file's `conntrack { }` block (struct
 * fg_config) to a conntrack shard's configuration (struct ct_config):
 * the DPDK daemon's shards (dataplane/fg_worker_setup.c), its capacity as
 * the running config shows it (fg_dp.c), and the XDP twin's map sizes and
 * timeouts (xdp/) all read it from here.  Header-only: it uses conntrack's
 * types, not its code (fgctl links no conntrack).
 */
#ifndef FLOWGATE_FG_CONFIG_CT_H
#define FLOWGATE_FG_CONFIG_CT_H

#include "ct.h"
#include "fg_config.h"

_Static_assert(CT_ST_MAX <= sizeof(((struct fg_config *)0)->ct_timeouts_ms) /
				sizeof(uint32_t),
	       "fg_config::ct_timeouts_ms holds a timeout for every ct_state");

/** Flows per core the config asks for: its `capacity`, else conntrack's
 *  default (CT_DEFAULT_CAPACITY). */
static inline uint32_t fg_config_ct_capacity(const struct fg_config *c)
{
	return c != NULL && c->ct_capacity ? c->ct_capacity : CT_DEFAULT_CAPACITY;
}

/** Overlays what @p c sets (capacity, nat_capacity, the timeouts it names,
 *  flood rate) on @p cc, which holds ct_config_defaults() or the caller's
 *  values; what @p c leaves at 0 keeps @p cc's.  @p c NULL: no change. */
static inline void fg_config_ct(const struct fg_config *c, struct ct_config *cc)
{
	if (c == NULL)
		return;
	cc->capacity = fg_config_ct_capacity(c);
	if (c->ct_nat_capacity)
		cc->capacity_reply = c->ct_nat_capacity;
	for (unsigned int s = 0; s < CT_ST_MAX; s++)
		if (c->ct_timeouts_ms[s])
			cc->timeouts.ms[s] = c->ct_timeouts_ms[s];
	cc->flood_rate = c->flood_rate;
}

#endif /* FLOWGATE_FG_CONFIG_CT_H */
