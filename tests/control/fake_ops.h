/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * In-memory implementation of struct fg_ctl_ops for tests: a config, a
 * flow table and an event queue, no DPDK.  Thread safety: one mutex (the
 * server thread and the test thread both touch it).
 */
#ifndef FLOWGATE_TESTS_FAKE_OPS_H
#define FLOWGATE_TESTS_FAKE_OPS_H

#include <pthread.h>

#include "fg_config_parse.h"
#include "fg_ctl_server.h"

struct fake_dp {
	pthread_mutex_t lock;
	struct fg_config cfg;
	struct fg_flow_info *flows;
	size_t n_flows;
	unsigned int n_cores;
	struct fg_flow_event ev[64];
	unsigned int n_ev;
	bool watching;
	unsigned int applies;     /* successful config_apply calls */
	int fail_apply;           /* next config_apply returns this (0 = ok) */
	/* health transitions seen (fg_health set_health) */
	unsigned int health_calls;
	bool last_up;
	uint64_t last_wait_ms;    /* the last flows walk's fg_flow_filter::wait_ms */
};

extern const struct fg_ctl_ops fake_ops;

void fake_dp_init(struct fake_dp *d, unsigned int n_cores);
void fake_dp_fini(struct fake_dp *d);
/** Adds @p n flows spread over services/backends/cores/states of d->cfg. */
void fake_dp_add_flows(struct fake_dp *d, size_t n);
/** Queues a watch event (copied). */
void fake_dp_push_event(struct fake_dp *d, const char *type, const struct fg_flow_info *f);
int fake_set_health(uint32_t sid, uint32_t bid, bool up, const char *reason, void *ctx);

#endif
