/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * flowgate-xdp's own state, shared by its main (fgx_main.c: options,
 * start-up, signals) and its operator view (fgx_view.c: the control
 * socket's callbacks, stats, /metrics, flows watch, health verdicts).
 *
 * Threads: main (signals, SIGHUP reload, the systemd watchdog, teardown),
 * the control server thread, the health checker thread, the metrics
 * thread.  The running config and the loader are shared and guarded by
 * cfg_lock (control plane only; the packet path is the BPF program).
 */
#ifndef FLOWGATE_FGX_DAEMON_H
#define FLOWGATE_FGX_DAEMON_H

#include <net/if.h>
#include <pthread.h>
#include <stdio.h>

#include "fg_config.h"
#include "fg_config_gate.h"
#include "fg_ctl_server.h"
#include "fg_health.h"
#include "fgx_load.h"

struct xd {
	/** first: the ops ctx is the gate (config.check / apply) */
	struct fg_config_gate gate;
	pthread_mutex_t cfg_lock;
	struct fg_config cfg;       /**< running config (ids assigned) */
	struct fgx *x;
	struct fg_health *health;
	struct fg_ctl_server *srv;
	struct fgx_watch *watch;    /**< flows watch: created with the first watcher */
	uint8_t mac[6];
	uint16_t mtu;
	char ifname[IF_NAMESIZE];
	struct fgx_attach_info att;
	uint64_t *active, *inactive; /**< per slot, the last conntrack census */
	uint64_t census_ms;          /**< when it was taken (monotonic; 0 never) */
};

/** The control socket's callbacks of flowgate-xdp (ctx: struct xd). */
extern const struct fg_ctl_ops fgx_view_ops;

/** The health checker's verdicts into the program (fg_health_params). */
int fgx_view_health_set(uint32_t service_id, uint32_t backend_id, bool up,
			const char *reason, void *ctx);

/** /metrics of flowgate-xdp (fg_promserve_render_fn; ctx: struct xd). */
int fgx_view_metrics(FILE *f, void *ctx);

/** The audit trail: one NOTICE line per change request (fg_ctl_server.h). */
void fgx_view_audit(const struct fg_ctl_audit *a, void *ctx);

/** Applies @p next (validated, ids assigned) with the health verdicts;
 *  cfg_lock held.  @return 0 or -errno with @p err. */
/** d->gate, set once before the control server starts. */
void fgx_view_gate_init(struct xd *d);
int fgx_view_apply_locked(struct xd *d, const struct fg_config *next, char *err,
			  size_t errlen);

/** The conntrack census (fgx_census), at most a second old, shared by
 *  stats, backend list and /metrics; cfg_lock held.  NULL on failure. */
const struct fgx_census *fgx_view_census(struct xd *d);

/** Frees what the view allocated (census arrays, watch state). */
void fgx_view_free(struct xd *d);

#endif /* FLOWGATE_FGX_DAEMON_H */
