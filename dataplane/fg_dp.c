/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The dataplane's lifecycle (fg_dp.h): the assembly steps the daemon and
 * the dataplane bench share, in order, each undone by fg_dp_destroy().
 * fg_dp_destroy() works on a half-built dataplane, so every failure in
 * fg_dp_create() ends in it: no mempool, ring or started port outlives a
 * failed start (and the caller's rte_eal_cleanup() then leaves nothing).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_pdump.h>

#include "ct.h"
#include "fg_announce.h"
#include "fg_config_ct.h"
#include "fg_config_parse.h"
#include "fg_dp_private.h"
#include "fg_load.h"
#include "fg_log.h"
#include "fg_metrics.h"
#include "fg_stats.h"
#include "fg_sync.h"
#include "fg_worker_private.h"

/* --mtu range (the option table and fg_dp_port_mtu_set agree on it) */
#define FG_MTU_MIN 68
#define FG_MTU_MAX 16000

void fg_dp_params_init(struct fg_dp_params *p)
{
	memset(p, 0, sizeof(*p));
	p->sw_rss = -1;
	p->n_mbufs = FG_DP_MBUFS_DEFAULT;
	p->icmp_rate = FG_ICMP_RATE_DEFAULT;
}

/* Jumbo MTUs: the ports' mbufs must hold a whole frame in one segment (the
 * parser and rewriters work on one segment).  fg_port_setup() uses a pool
 * that already exists for a socket, so create them here, sized for the
 * largest MTU, before it runs. */
static int jumbo_pools_create(struct fg_dp *dp)
{
	const struct fg_dp_params *p = &dp->params;
	uint32_t max_mtu = 0, room;

	if (p->mbuf_data_room)
		return 0;       /* the caller chose the buffer size */
	for (unsigned int i = 0; i < dp->n_ports; i++)
		max_mtu = RTE_MAX(max_mtu, (uint32_t)p->mtu[i]);
	/* frame = MTU + Ethernet + two VLAN tags + CRC */
	room = RTE_ALIGN_CEIL(max_mtu + RTE_ETHER_HDR_LEN + 8 + RTE_ETHER_CRC_LEN, 64);
	if (room + RTE_PKTMBUF_HEADROOM <= RTE_MBUF_DEFAULT_BUF_SIZE)
		return 0;
	for (unsigned int i = 0; i < dp->n_workers; i++) {
		int socket = (int)rte_lcore_to_socket_id(dp->workers[i]->lcore);
		char name[RTE_MEMPOOL_NAMESIZE];

		if (socket < 0 || socket >= RTE_MAX_NUMA_NODES)
			socket = 0;
		if (dp->pool[socket] != NULL)
			continue;
		snprintf(name, sizeof(name), "fg_jumbo_s%d", socket);
		dp->pool[socket] = rte_pktmbuf_pool_create(name, p->n_mbufs, 256,
				RTE_ALIGN(sizeof(struct fg_mbuf_priv), RTE_CACHE_LINE_SIZE),
				(uint16_t)(room + RTE_PKTMBUF_HEADROOM), socket);
		if (dp->pool[socket] == NULL) {
			FG_LOG(ERR, "cannot create %u mbufs of %u bytes on socket %d: "
			       "%s (lower --mbufs or --mtu)", p->n_mbufs,
			       room + RTE_PKTMBUF_HEADROOM, socket,
			       rte_strerror(rte_errno));
			return -ENOMEM;
		}
	}
	return 0;
}

int fg_dp_port_mtu_set(struct fg_dp *dp, unsigned int port, uint16_t mtu)
{
	struct fg_port *pt;
	int rc;

	if (port >= dp->n_ports || mtu < FG_MTU_MIN || mtu > FG_MTU_MAX)
		return -EINVAL;
	pt = &dp->ports[port];
	/* a device that cannot take the MTU (net_pcap, net_null) keeps its
	 * own; flowgate still enforces it on what it encapsulates, which is
	 * what the option is for */
	rc = rte_eth_dev_set_mtu(pt->port_id, mtu);
	if (rc < 0 && rc != -ENOTSUP)
		FG_LOG(WARNING, "port %u: device refused MTU %u (%s); flowgate "
		       "enforces it on encapsulation anyway", port, mtu, strerror(-rc));
	pt->mtu = mtu;
	return 0;
}

/* Every probed ethdev is a port; config port blocks are matched to them
 * by name (fg_port_cfg_resolve), never by their order in the file. */
static int ports_attach(struct fg_dp *dp, struct fg_config *cfg)
{
	char err[256];
	uint16_t pid;
	int rc;

	RTE_ETH_FOREACH_DEV(pid) {
		if (dp->n_ports >= FG_MAX_PORTS)
			break;
		dp->ports[dp->n_ports].port_id = pid;
		dp->ports[dp->n_ports].rx_only =
			(dp->params.rx_only_ports >> dp->n_ports) & 1;
		dp->n_ports++;
	}
	if (dp->n_ports == 0) {
		FG_LOG(ERR, "no ports (give e.g. --no-pci --vdev=net_af_packet0,"
		       "iface=veth0)");
		return -EINVAL;
	}
	rc = fg_port_cfg_resolve(dp, cfg, err, sizeof(err));
	if (rc < 0) {
		FG_LOG(ERR, "config: %s", err);
		return rc;
	}
	for (unsigned int p = 0; p < dp->n_ports; p++)
		dp->ports[p].cfg = cfg->ports[p];
	dp->cfg = fg_dp_config_dup(cfg);
	if (dp->cfg == NULL)
		return -ENOMEM;
	for (unsigned int p = 0; p < dp->n_ports; p++)
		for (uint32_t i = 0; i < dp->ports[p].cfg.n_local; i++)
			dp->locals[dp->n_locals++] = dp->ports[p].cfg.local[i];
	return 0;
}

/* Worker lcores in order, then what the workers share (RCU, learn ring). */
static int workers_create(struct fg_dp *dp)
{
	unsigned int lcore, want = dp->params.n_workers;
	int rc;

	RTE_LCORE_FOREACH_WORKER(lcore) {
		if (dp->n_workers >= FG_MAX_WORKERS || (want && dp->n_workers >= want))
			break;
		rc = fg_worker_create(dp, dp->n_workers, lcore,
				      &dp->workers[dp->n_workers]);
		if (rc < 0) {
			FG_LOG(ERR, "worker %u: %s (conntrack capacity %u per worker; "
			       "lower --ct-capacity or add memory)", dp->n_workers,
			       strerror(-rc), dp->ct_capacity);
			return rc;
		}
		dp->n_workers++;
	}
	if (dp->n_workers == 0 || (want && dp->n_workers < want)) {
		FG_LOG(ERR, "%u worker lcores for --workers %u (give EAL e.g. -l 0,1: "
		       "lcore 0 is the main lcore, the others are workers)",
		       dp->n_workers, want ? want : 1);
		return -EINVAL;
	}
	dp->qsbr = rte_zmalloc("fg_qsbr", rte_rcu_qsbr_get_memsize(dp->n_workers),
			       RTE_CACHE_LINE_SIZE);
	if (dp->qsbr == NULL || rte_rcu_qsbr_init(dp->qsbr, dp->n_workers) != 0) {
		FG_LOG(ERR, "RCU init failed");
		return -ENOMEM;
	}
	dp->learn_ring = rte_ring_create_elem("fg_learn", sizeof(struct fg_neigh_learn),
					      1024, (int)rte_socket_id(), RING_F_SC_DEQ);
	if (dp->learn_ring == NULL) {
		FG_LOG(ERR, "learn ring: %s", rte_strerror(rte_errno));
		return -rte_errno;
	}
	return 0;
}

static bool pools_exist(const struct fg_dp *dp)
{
	for (unsigned int s = 0; s < RTE_MAX_NUMA_NODES; s++)
		if (dp->pool[s] != NULL)
			return true;
	return false;
}

/* Mempools and ports; a failure names the option that sizes them. */
static int ports_start(struct fg_dp *dp)
{
	const struct fg_dp_params *p = &dp->params;
	int rc;

	rc = jumbo_pools_create(dp);
	if (rc < 0)
		return rc;
	rc = fg_port_setup(dp, p->sw_rss, p->n_mbufs);
	if (rc < 0 && !pools_exist(dp)) {
		FG_LOG(ERR, "ports: no memory for %u mbufs: lower --mbufs or give "
		       "EAL more memory (hugepages, -m)", p->n_mbufs);
	} else if (rc < 0) {
		/* the usual cause: the pool cannot fill every RX ring (1024
		 * descriptors per queue) plus the per-core caches */
		FG_LOG(ERR, "ports: setup failed (%s) with --mbufs %u for %u "
		       "ports x %u workers; if the mbufs ran out, raise --mbufs "
		       "(at least %u here)", strerror(-rc), p->n_mbufs, dp->n_ports,
		       dp->n_workers, dp->n_ports * dp->n_workers * 2048u +
		       dp->n_workers * 512u + 1024u);
	}
	if (rc == 0 && dp->sw_rss)
		rc = fg_worker_rings_create(dp); /* software dispatch */
	if (rc < 0)
		return rc;
	for (unsigned int i = 0; i < dp->n_ports; i++)
		if (p->mtu[i])
			fg_dp_port_mtu_set(dp, i, p->mtu[i]);
	return 0;
}

/* Tables published before the workers run, and the optional paths. */
static int tables_and_paths(struct fg_dp *dp, const struct fg_config *cfg)
{
	const struct fg_dp_params *p = &dp->params;
	char err[256];
	int rc;

	dp->neigh_age = (uint64_t)FG_NEIGH_AGE_S * rte_get_tsc_hz();
	dp->icmp_rate = p->icmp_rate;
	dp->second_chance = p->second_chance;
	dp->idle_sleep_us = p->idle_sleep_us;
	dp->neigh = fg_neigh_table_build(dp->cfg, NULL, NULL, 0);
	if (dp->neigh == NULL) {
		FG_LOG(ERR, "out of memory (neighbours)");
		return -ENOMEM;
	}
	rc = fg_dp_apply_config(dp, cfg, err, sizeof(err));
	if (rc < 0) {
		FG_LOG(ERR, "config rejected: %s", err);
		return rc;
	}
	if (p->gpu_mode != NULL) {
		rc = fg_gpupath_create(dp, p->gpu_mode);
		if (rc < 0)
			return rc;
	}
	if (p->host_tap != NULL) {
		rc = fg_host_setup(dp, p->host_tap);
		if (rc < 0)
			return rc;
	}
	/* dpdk-dumpcap / dpdk-pdump: secondary processes that need the shared
	 * config, so not under --in-memory / --no-shconf (then this fails) */
	if (p->pdump) {
		if (rte_pdump_init() < 0) {
			FG_LOG(ERR, "--pdump: %s (a capture needs shared hugepage "
			       "memory: a --file-prefix, no --in-memory, --no-shconf "
			       "or --no-huge)", rte_strerror(rte_errno));
			return -ENOTSUP;
		}
		dp->pdump_on = true;
	}
	return 0;
}

/* The params keep pointers into dp's own copies of the strings. */
static void params_copy(struct fg_dp *dp, const struct fg_dp_params *p)
{
	dp->params = *p;
	dp->params.cfg = NULL;
#define COPY_STR(field, buf)                                            \
	do {                                                            \
		if (p->field != NULL) {                                 \
			snprintf(dp->buf, sizeof(dp->buf), "%s", p->field); \
			dp->params.field = dp->buf;                     \
		}                                                       \
	} while (0)
	COPY_STR(socket_path, socket_path);
	COPY_STR(metrics_addr, metrics_addr);
	COPY_STR(gpu_mode, gpu_mode);
	COPY_STR(host_tap, host_tap_prefix);
	COPY_STR(state_path, state_path);
#undef COPY_STR
	if (dp->params.n_mbufs == 0)
		dp->params.n_mbufs = FG_DP_MBUFS_DEFAULT;
}

int fg_dp_create(const struct fg_dp_params *p, struct fg_dp **out)
{
	struct fg_config cfg;
	struct fg_dp *dp;
	int rc;

	*out = NULL;
	if (p == NULL || p->cfg == NULL)
		return -EINVAL;
	dp = rte_zmalloc("fg_dp", sizeof(*dp), RTE_CACHE_LINE_SIZE);
	if (dp == NULL) {
		FG_LOG(ERR, "out of memory");
		return -ENOMEM;
	}
	params_copy(dp, p);
	pthread_mutex_init(&dp->cfg_lock, NULL);
	pthread_mutex_init(&dp->mbox_lock, NULL);
	dp->hz = rte_get_tsc_hz();
	dp->flush_ticks = dp->hz / 10000;   /* 100 us */
	dp->ct_capacity = fg_config_ct_capacity(p->cfg);
	dp->cli_socket = p->cli_socket;
	dp->cli_ct_capacity = p->cli_ct_capacity;
	dp->rx_port_per_worker = p->rx_port_per_worker;
	dp->mbuf_data_room = p->mbuf_data_room;
	/* resolved in a shallow copy: the services array stays the caller's */
	cfg = *p->cfg;
	cfg.ct_capacity = dp->ct_capacity;
	rc = ports_attach(dp, &cfg);
	if (rc == 0)
		rc = workers_create(dp);
	if (rc == 0)
		rc = ports_start(dp);
	if (rc == 0)
		rc = tables_and_paths(dp, &cfg);
	if (rc == 0)
		rc = fg_sync_create(dp, &dp->cfg->sync);
	if (rc < 0) {
		if (rc == -ENOMEM && dp->cfg == NULL)
			FG_LOG(ERR, "out of memory");
		fg_dp_destroy(dp);
		return rc;
	}
	*out = dp;
	return 0;
}

static void running_log(const struct fg_dp *dp)
{
	FG_LOG(NOTICE, "running: %u ports, %u workers (%s), %u services",
	       dp->n_ports, dp->n_workers,
	       dp->sw_rss ? "software RSS" : dp->n_workers > 1 ?
	       "hardware RSS" : "single worker", dp->cfg->n_services);
	for (unsigned int p = 0; p < dp->n_ports; p++) {
		char mac[RTE_ETHER_ADDR_FMT_SIZE];

		rte_ether_format_addr(mac, sizeof(mac), &dp->ports[p].mac);
		FG_LOG(INFO, "port %u ethdev %u mac %s mtu %u rxq %u txq %u%s",
		       p, dp->ports[p].port_id, mac, dp->ports[p].mtu,
		       dp->ports[p].n_rxq, dp->ports[p].n_txq,
		       dp->ports[p].hw_rss ? " symmetric-rss" : "");
	}
}

int fg_dp_start(struct fg_dp *dp)
{
	const struct fg_dp_params *p = &dp->params;
	int rc;

	for (unsigned int i = 0; i < dp->n_workers; i++) {
		rc = rte_eal_remote_launch(fg_worker_main, dp->workers[i],
					   dp->workers[i]->lcore);
		if (rc < 0) {
			FG_LOG(ERR, "worker %u: lcore %u busy", i, dp->workers[i]->lcore);
			return rc;
		}
		dp->launched = true;
	}
	rc = fg_sync_start(dp);
	if (rc < 0) {
		FG_LOG(ERR, "sync: thread: %s", strerror(-rc));
		return rc;
	}
	if (p->socket_path != NULL) {
		if (fg_stats_telemetry_register(dp) < 0)
			FG_LOG(WARNING, "some /flowgate/ telemetry commands were not "
			       "registered");
		if (p->metrics_addr != NULL) {
			rc = fg_metrics_start(dp, p->metrics_addr, &dp->metrics);
			if (rc < 0) {
				FG_LOG(ERR, "--metrics %s: %s", p->metrics_addr,
				       strerror(-rc));
				return rc;
			}
		}
		rc = fg_control_start(dp, p->socket_path, p->config_path, p->ctl_idle_ms);
		if (rc < 0)
			return rc;
		dp->control_on = true;
	}
	if (p->announce_table) {
		char tap[24];

		if (!dp->host_tap) {
			FG_LOG(ERR, "--announce needs --host-tap");
			return -EINVAL;
		}
		snprintf(tap, sizeof(tap), "%s0", dp->host_tap_prefix);
		rc = fg_announce_start(dp, tap, p->announce_table, &dp->announce);
		if (rc < 0) {
			FG_LOG(ERR, "--announce: %s: %s", tap, strerror(-rc));
			return rc;
		}
	}
	running_log(dp);
	return 0;
}

unsigned int fg_dp_poll(struct fg_dp *dp)
{
	unsigned int host;

	fg_dp_neigh_poll(dp);
	fg_dp_load_poll(dp);
	host = dp->host_tap ? fg_host_poll(dp) : 0;
	/* the host path is polled every ~20 us: interactive latency for SSH /
	 * BGP, a few % of the main lcore's CPU; with --idle-sleep, every
	 * idle_sleep_us while it is quiet */
	if (!dp->host_tap)
		return 1000;
	return host || !dp->idle_sleep_us ? 20 : dp->idle_sleep_us;
}

struct ct_shard *fg_dp_worker_ct(struct fg_dp *dp, unsigned int i)
{
	return i < dp->n_workers ? dp->workers[i]->ct : NULL;
}

const struct fg_lb_table *fg_dp_lb(const struct fg_dp *dp)
{
	return __atomic_load_n(&dp->lb, __ATOMIC_ACQUIRE);
}

const struct fg_state_stats *fg_dp_state_stats(const struct fg_dp *dp)
{
	return &dp->state;
}

bool fg_dp_workers_alive(struct fg_dp *dp)
{
	bool alive = true;

	/* tx_flushes: the 100 us flush timer of every loop iteration,
	 * written by the worker only; it stands still only if the loop does */
	for (unsigned int i = 0; i < dp->n_workers && dp->launched; i++) {
		uint64_t v = __atomic_load_n(&dp->workers[i]->dc[FG_DC_tx_flushes],
					     __ATOMIC_RELAXED);

		if (v == dp->alive_seen[i])
			alive = false;
		dp->alive_seen[i] = v;
	}
	return alive;
}

/* ---------------------------------------------------------------- reload */

struct fg_ctl_server *fg_dp_ctl_server(struct fg_dp *dp)
{
	return dp->control_on ? dp->ctl : NULL;
}

/* ---------------------------------------------------------- stop, destroy */

void fg_dp_stop(struct fg_dp *dp)
{
	if (dp == NULL)
		return;
	if (dp->announce != NULL) {
		/* withdraw first and keep forwarding (the host path too: BIRD's
		 * withdrawal leaves through the TAP) while the router moves the
		 * traffic to the other nodes */
		uint64_t until = rte_get_timer_cycles() + rte_get_timer_hz();

		fg_announce_stop(dp->announce);
		dp->announce = NULL;
		while (dp->host_tap && rte_get_timer_cycles() < until) {
			fg_host_poll(dp);
			usleep(20);
		}
	}
	/* control side first, while the workers still answer their
	 * mailboxes: the health checker applies configs and may walk shards
	 * (on_fail reset), the control thread may be in a flows walk */
	fg_metrics_stop(dp->metrics);
	dp->metrics = NULL;
	if (dp->control_on)
		fg_control_stop(dp);
	dp->control_on = false;
	fg_sync_stop(dp);
	for (unsigned int i = 0; i < dp->n_workers; i++)
		__atomic_store_n(&dp->workers[i]->stop, true, __ATOMIC_RELAXED);
	rte_eal_mp_wait_lcore();
	dp->launched = false;
}

void fg_dp_summary_print(struct fg_dp *dp, FILE *f)
{
	fg_stats_print(dp, f);
	fflush(f);
}

void fg_dp_destroy(struct fg_dp *dp)
{
	if (dp == NULL)
		return;
	if (dp->launched || dp->control_on)
		fg_dp_stop(dp);
	if (dp->pdump_on)
		rte_pdump_uninit();
	for (unsigned int p = 0; p < dp->n_ports; p++) {
		rte_eth_dev_stop(dp->ports[p].port_id);
		rte_eth_dev_close(dp->ports[p].port_id);
	}
	fg_gpupath_free(dp);
	fg_host_free(dp);
	fg_sync_free(dp);
	for (unsigned int i = 0; i < dp->n_workers; i++)
		fg_worker_free(dp->workers[i]);
	fg_dp_load_free(dp);
	fg_lb_table_free(dp->lb);
	fg_neigh_table_free(dp->neigh);
	fg_dp_config_free(dp->cfg);
	rte_ring_free(dp->learn_ring);
	rte_free(dp->qsbr);
	for (unsigned int s = 0; s < RTE_MAX_NUMA_NODES; s++)
		rte_mempool_free(dp->pool[s]);
	rte_free(dp);
}
