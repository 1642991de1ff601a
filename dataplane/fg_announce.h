/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * Route fate-sharing for BGP/ECMP scale-out (`flowgate --announce`).
 *
 * Several flowgate nodes behind a router share a VIP by ECMP; each node's
 * routing daemon (BIRD, docs/DEPLOY.md) announces the VIP only while a
 * kernel route for it exists in a dedicated routing table (default
 * FG_ANNOUNCE_TABLE_DEFAULT), which BIRD's `kernel` protocol learns
 * (`learn;`, netlink notifications: no scan delay).  This module owns those
 * routes: VIP/32 or VIP/128 `dev <host TAP> proto static` in that table,
 * present exactly while
 *   - the node forwards: every worker completed a loop within
 *     FG_ANNOUNCE_STALL_MS (a wedged worker withdraws), and the port of
 *     the TAP has link;
 *   - the service has a usable backend (n_usable > 0: not every backend
 *     drained, weight 0 or health-checked down).
 * Withdrawal needs no agent: fg_announce_stop() (daemon stop) deletes the
 * routes, and after a crash or SIGKILL the kernel deletes them with the
 * TAP, which disappears with the process.  BIRD then withdraws the VIP
 * from the router; BGP/BFD on the same TAP also go down with the process,
 * so the router drops the node within its BFD (or hold) time either way.
 *
 * Threads: one thread of its own reconciles every FG_ANNOUNCE_PERIOD_MS
 * (the service table is read under fg_dp::cfg_lock, like the stats code);
 * it never touches a worker's state, only reads its loop counter.
 */
#ifndef FLOWGATE_FG_ANNOUNCE_H
#define FLOWGATE_FG_ANNOUNCE_H

#include <stdint.h>

struct fg_dp;
struct fg_announce;

/** Kernel routing table of the announced VIP routes (`--announce`). */
#define FG_ANNOUNCE_TABLE_DEFAULT 4242u
/** Reconciliation period. */
#define FG_ANNOUNCE_PERIOD_MS 100u
/** A worker whose loop counter did not move this long is not forwarding. */
#define FG_ANNOUNCE_STALL_MS 1000u

/**
 * Starts announcing: opens a netlink socket and starts the reconciling
 * thread, which installs the routes of the VIPs that qualify within one
 * period.  A VIP qualifies when any service on it has a usable backend.
 * @param dp      the daemon, its workers launched (fg_dp_start()).
 * @param ifname  the kernel interface of the routes: port 0's host TAP
 *                (--host-tap), which dies with the process.
 * @param table   kernel routing table: 1..0xFFFFFFFF except 253-255
 *                (default, main, local: refused, they would route).
 * @param out     the handle.
 * @return 0; -EINVAL (bad table or name), -ENODEV (no such interface),
 *   -errno of socket()/bind()/pthread_create(), -ENOMEM.
 * Thread safety: main lcore, once (fg_dp_start() with --announce).
 */
int fg_announce_start(struct fg_dp *dp, const char *ifname, uint32_t table,
		      struct fg_announce **out);

/**
 * Stops the thread and withdraws every route it installed (fg_dp_stop()
 * calls it first and forwards 1 s more, so the router moves the traffic
 * while this node still forwards).  NULL is a no-op.
 * Thread safety: main lcore.
 */
void fg_announce_stop(struct fg_announce *a);

#endif
