/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Ports: mempools per socket, one RX + one TX queue per worker where the
 * device allows, the symmetric Toeplitz key on devices with RSS, and the
 * choice between hardware RSS and software dispatch.
 *
 * Software RSS is needed when there is more than one worker and a port
 * cannot spread by the symmetric hash itself (most vdevs: net_af_packet,
 * net_pcap, net_null, net_ring).  Then each worker still polls the RX
 * queues it owns, computes fg_rss_hash() for each packet and hands packets
 * owned by another worker to it over an SP/SC ring (fg_worker.c).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_lcore.h>

#include "fg_dp_private.h"
#include "fg_worker_private.h"

static int pool_for_socket(struct fg_dp *dp, int socket, unsigned int n_mbufs)
{
	char name[RTE_MEMPOOL_NAMESIZE];

	if (socket < 0 || socket >= RTE_MAX_NUMA_NODES)
		socket = 0;
	if (dp->pool[socket] != NULL)
		return socket;
	snprintf(name, sizeof(name), "fg_mbuf_s%d", socket);
	/* private area rounded to a cache line so the frame (after the
	 * headroom) starts on a line: a 64-byte packet is one line, not two */
	dp->pool[socket] = rte_pktmbuf_pool_create(name, n_mbufs, 256,
			RTE_ALIGN(sizeof(struct fg_mbuf_priv), RTE_CACHE_LINE_SIZE),
			dp->mbuf_data_room ? dp->mbuf_data_room : RTE_MBUF_DEFAULT_BUF_SIZE,
			socket);
	if (dp->pool[socket] == NULL) {
		fprintf(stderr, "flowgate: cannot create mbuf pool on socket %d: %s\n",
			socket, rte_strerror(rte_errno));
		return -rte_errno;
	}
	return socket;
}

static int port_setup_one(struct fg_dp *dp, struct fg_port *pt, bool sw_rss,
			  unsigned int n_mbufs)
{
	struct rte_eth_dev_info info;
	struct rte_eth_conf conf;
	uint16_t pid = pt->port_id;
	uint8_t key[128];
	int socket, rc;

	rc = rte_eth_dev_info_get(pid, &info);
	if (rc < 0)
		return rc;
	memset(&conf, 0, sizeof(conf));
	pt->hw_rss = !sw_rss && dp->n_workers > 1 &&
		     info.flow_type_rss_offloads != 0 &&
		     info.max_rx_queues >= dp->n_workers;
	if (pt->hw_rss) {
		uint32_t klen = info.hash_key_size ? info.hash_key_size : 40;

		if (klen > sizeof(key))
			klen = sizeof(key);
		for (uint32_t i = 0; i < klen; i++)
			key[i] = (i & 1) ? 0x5a : 0x6d;
		conf.rxmode.mq_mode = RTE_ETH_MQ_RX_RSS;
		conf.rx_adv_conf.rss_conf.rss_key = key;
		conf.rx_adv_conf.rss_conf.rss_key_len = (uint8_t)klen;
		conf.rx_adv_conf.rss_conf.rss_hf =
			(RTE_ETH_RSS_IP | RTE_ETH_RSS_TCP | RTE_ETH_RSS_UDP) &
			info.flow_type_rss_offloads;
		pt->n_rxq = (uint16_t)dp->n_workers;
	} else {
		pt->n_rxq = dp->rx_port_per_worker ? 1 :
			(uint16_t)RTE_MIN(dp->n_workers, info.max_rx_queues);
	}
	if (pt->rx_only) {
		pt->n_txq = 1;
	} else if (info.max_tx_queues < dp->n_workers) {
		fprintf(stderr, "flowgate: port %u (%s) has %u TX queues, %u workers "
			"need one each (net_af_packet: add qpairs=%u)\n", pid,
			info.driver_name, info.max_tx_queues, dp->n_workers,
			dp->n_workers);
		return -EINVAL;
	} else {
		pt->n_txq = (uint16_t)dp->n_workers;
	}
	rc = rte_eth_dev_configure(pid, pt->n_rxq, pt->n_txq, &conf);
	if (rc < 0) {
		fprintf(stderr, "flowgate: port %u configure: %s\n", pid, strerror(-rc));
		return rc;
	}
	uint16_t nrxd = 1024, ntxd = 1024;

	rte_eth_dev_adjust_nb_rx_tx_desc(pid, &nrxd, &ntxd);
	for (uint16_t q = 0; q < pt->n_rxq; q++) {
		unsigned int wi = dp->rx_port_per_worker ?
			(unsigned int)(pt - dp->ports) % dp->n_workers : q % dp->n_workers;
		unsigned int lcore = dp->workers[wi]->lcore;

		socket = pool_for_socket(dp, (int)rte_lcore_to_socket_id(lcore), n_mbufs);
		if (socket < 0)
			return socket;
		rc = rte_eth_rx_queue_setup(pid, q, nrxd, rte_eth_dev_socket_id(pid),
					    NULL, dp->pool[socket]);
		if (rc < 0) {
			fprintf(stderr, "flowgate: port %u rxq %u: %s\n", pid, q,
				strerror(-rc));
			return rc;
		}
	}
	for (uint16_t q = 0; q < pt->n_txq; q++) {
		rc = rte_eth_tx_queue_setup(pid, q, ntxd, rte_eth_dev_socket_id(pid),
					    NULL);
		if (rc < 0) {
			fprintf(stderr, "flowgate: port %u txq %u: %s\n", pid, q,
				strerror(-rc));
			return rc;
		}
	}
	if (!rte_is_zero_ether_addr((struct rte_ether_addr *)pt->cfg.mac)) {
		memcpy(pt->mac.addr_bytes, pt->cfg.mac, 6);
		/* best effort: some vdevs cannot change their address, the
		 * configured one is still used as our source MAC */
		rte_eth_dev_default_mac_addr_set(pid, &pt->mac);
	} else {
		rte_eth_macaddr_get(pid, &pt->mac);
	}
	rc = rte_eth_dev_start(pid);
	if (rc < 0) {
		fprintf(stderr, "flowgate: port %u start: %s\n", pid, strerror(-rc));
		return rc;
	}
	rte_eth_promiscuous_enable(pid);
	if (rte_eth_dev_get_mtu(pid, &pt->mtu) < 0 || pt->mtu == 0)
		pt->mtu = RTE_ETHER_MTU;
	if (pt->hw_rss) {
		struct rte_eth_rss_reta_entry64 reta[8];
		uint16_t size = info.reta_size;

		if (size > 0 && size <= 512) {
			memset(reta, 0, sizeof(reta));
			for (uint16_t i = 0; i < size; i++) {
				reta[i / 64].mask |= 1ULL << (i % 64);
				reta[i / 64].reta[i % 64] = i % dp->n_workers;
			}
			rte_eth_dev_rss_reta_update(pid, reta, size);
		}
	}
	return 0;
}

int fg_port_setup(struct fg_dp *dp, int sw_rss, unsigned int n_mbufs)
{
	bool any_no_rss = false;
	int rc;

	fg_rss_reta_fill(dp->reta, (uint16_t)dp->n_workers);
	for (unsigned int p = 0; p < dp->n_ports; p++) {
		struct rte_eth_dev_info info;

		if (rte_eth_dev_info_get(dp->ports[p].port_id, &info) == 0 &&
		    (info.flow_type_rss_offloads == 0 ||
		     info.max_rx_queues < dp->n_workers))
			any_no_rss = true;
	}
	/* auto: software dispatch only when a port cannot do it and there
	 * is someone to dispatch to */
	if (sw_rss < 0)
		dp->sw_rss = dp->n_workers > 1 && any_no_rss;
	else
		dp->sw_rss = sw_rss > 0 && dp->n_workers > 1;
	for (unsigned int p = 0; p < dp->n_ports; p++) {
		rc = port_setup_one(dp, &dp->ports[p], dp->sw_rss, n_mbufs);
		if (rc < 0)
			return rc;
	}
	return 0;
}

const char *const fg_port_counter_names[FG_PC_MAX] = {
#define FG_X(n, field, d) #n,
	FG_PORT_COUNTER_LIST(FG_X)
#undef FG_X
};

/* Names of the probed devices, for messages. */
static void device_names(const struct fg_dp *dp, char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = '\0';
	for (unsigned int p = 0; p < dp->n_ports && off < len; p++) {
		char name[RTE_ETH_NAME_MAX_LEN];

		if (rte_eth_dev_get_name_by_port(dp->ports[p].port_id, name) != 0)
			snprintf(name, sizeof(name), "ethdev%u", dp->ports[p].port_id);
		off += (size_t)snprintf(buf + off, len - off, "%s%s", p ? ", " : "", name);
	}
}

int fg_port_cfg_resolve(const struct fg_dp *dp, struct fg_config *cfg,
			char *err, size_t err_len)
{
	struct fg_port_cfg ports[FG_MAX_PORTS];
	uint8_t idx_of_cfg[FG_MAX_PORTS];
	int cfg_of_idx[FG_MAX_PORTS];
	char devs[256];

	err[0] = '\0';
	if (cfg->n_ports > FG_MAX_PORTS)
		return -EINVAL;
	for (unsigned int p = 0; p < FG_MAX_PORTS; p++)
		cfg_of_idx[p] = -1;
	for (uint32_t i = 0; i < cfg->n_ports; i++) {
		const struct fg_port_cfg *pc = &cfg->ports[i];
		unsigned int idx = i;

		if (pc->name[0]) {
			uint16_t id;

			idx = dp->n_ports;
			if (rte_eth_dev_get_port_by_name(pc->name, &id) == 0)
				for (idx = 0; idx < dp->n_ports; idx++)
					if (dp->ports[idx].port_id == id)
						break;
			if (idx >= dp->n_ports) {
				device_names(dp, devs, sizeof(devs));
				snprintf(err, err_len, "port '%s' is not a device of this "
					 "flowgate (devices: %s)", pc->name, devs);
				return -ENODEV;
			}
		} else if (idx >= dp->n_ports) {
			snprintf(err, err_len, "port %u has no name and there is no "
				 "device %u (%u devices)", i, i, dp->n_ports);
			return -ENODEV;
		}
		if (cfg_of_idx[idx] >= 0) {
			device_names(dp, devs, sizeof(devs));
			snprintf(err, err_len, "ports %d and %u are the same device (devices: "
				 "%s)", cfg_of_idx[idx], i, devs);
			return -EINVAL;
		}
		cfg_of_idx[idx] = (int)i;
		idx_of_cfg[i] = (uint8_t)idx;
	}
	for (uint32_t i = 0; i < cfg->n_neigh; i++) {
		struct fg_neigh_cfg *n = &cfg->neigh[i];

		/* no port block at all: neighbour port N is device N */
		if (cfg->n_ports == 0 && n->port < dp->n_ports)
			continue;
		if (n->port >= cfg->n_ports) {
			snprintf(err, err_len, "a neighbour names port %u, which is not "
				 "defined (%u ports)", n->port, cfg->n_ports);
			return -EINVAL;
		}
		n->port = idx_of_cfg[n->port];
	}
	/* one entry per device, in device order, named after the device: what
	 * the dataplane indexes, and what 'config show' prints */
	for (unsigned int p = 0; p < dp->n_ports; p++) {
		if (cfg_of_idx[p] >= 0)
			ports[p] = cfg->ports[cfg_of_idx[p]];
		else
			memset(&ports[p], 0, sizeof(ports[p]));
		char name[RTE_ETH_NAME_MAX_LEN];

		if (rte_eth_dev_get_name_by_port(dp->ports[p].port_id, name) != 0 ||
		    strlen(name) >= sizeof(ports[p].name))
			snprintf(name, sizeof(name), "ethdev%u", dp->ports[p].port_id);
		snprintf(ports[p].name, sizeof(ports[p].name), "%s", name);
	}
	memcpy(cfg->ports, ports, dp->n_ports * sizeof(ports[0]));
	cfg->n_ports = dp->n_ports;
	return 0;
}

int fg_port_counters(const struct fg_dp *dp, unsigned int p,
		     uint64_t out[FG_PC_MAX])
{
	struct rte_eth_stats st;
	int rc;

	memset(out, 0, FG_PC_MAX * sizeof(out[0]));
	if (p >= dp->n_ports)
		return -EINVAL;
	rc = rte_eth_stats_get(dp->ports[p].port_id, &st);
	if (rc < 0)
		return rc;
#define FG_X(n, field, d) out[FG_PC_##n] = st.field;
	FG_PORT_COUNTER_LIST(FG_X)
#undef FG_X
	return 0;
}
