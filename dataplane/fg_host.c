/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The host exception path (`flowgate --host-tap[=PREFIX]`).
 *
 * A DPDK-owned port takes every packet away from the kernel, including
 * those for the balancer host itself: SSH or BGP to a local address, pings,
 * replies to the host's own connections.  With --host-tap each port gets a
 * kernel TAP interface (PREFIXn, the port's MAC), as DPVS's KNI ports do:
 *
 *   worker  --to_host (MP/SC)-->  main lcore  --rte_eth_tx_burst-->  TAP
 *   TAP  --rte_eth_rx_burst-->  main lcore  --to_wire (SP/SC)-->  worker 0
 *   worker 0 sends on its own TX queue of the port (no extra queue)
 *
 * Workers never touch the TAP, so the fast path keeps one queue per worker
 * and no lock.  The operator gives the TAP the addresses the kernel should
 * own (flowgate answers ARP/ND for its local addresses itself and hands
 * ARP/ND replies to the kernel, so the kernel's own neighbour resolution
 * works through the port).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <rte_dev.h>
#include <rte_ethdev.h>
#include <rte_ring.h>

#include "fg_dp_private.h"
#include "fg_log.h"

#define HOST_RING 2048
#define HOST_BURST 32

int fg_host_setup(struct fg_dp *dp, const char *prefix)
{
	static const struct rte_eth_conf conf;

	for (unsigned int p = 0; p < dp->n_ports; p++) {
		struct fg_host_port *h = &dp->host[p];
		const struct fg_port *pt = &dp->ports[p];
		char name[64], devargs[192], mac[RTE_ETHER_ADDR_FMT_SIZE];
		int socket = rte_eth_dev_socket_id(pt->port_id);
		struct rte_mempool *pool;
		int rc;

		if (socket < 0 || socket >= RTE_MAX_NUMA_NODES || dp->pool[socket] == NULL)
			socket = 0;
		pool = dp->pool[socket];
		for (int s = 0; pool == NULL && s < RTE_MAX_NUMA_NODES; s++)
			pool = dp->pool[s];
		rte_ether_format_addr(mac, sizeof(mac), &pt->mac);
		snprintf(name, sizeof(name), "net_tap_fghost%u", p);
		/* hotplug through EAL: the vdev bus takes "net_tap<id>,args" */
		snprintf(devargs, sizeof(devargs), "%s,iface=%s%u,mac=%s", name,
			 prefix, p, mac);
		rc = rte_dev_probe(devargs);
		if (rc < 0) {
			fprintf(stderr, "flowgate: --host-tap: cannot create TAP %s%u (%s; "
				"needs root and /dev/net/tun)\n", prefix, p, strerror(-rc));
			return rc;
		}
		if (rte_eth_dev_get_port_by_name(name, &h->tap) != 0)
			return -ENODEV;
		rc = rte_eth_dev_configure(h->tap, 1, 1, &conf);
		if (rc == 0)
			rc = rte_eth_rx_queue_setup(h->tap, 0, 512, (unsigned int)socket,
						    NULL, pool);
		if (rc == 0)
			rc = rte_eth_tx_queue_setup(h->tap, 0, 512, (unsigned int)socket,
						    NULL);
		if (rc == 0)
			rc = rte_eth_dev_start(h->tap);
		if (rc < 0) {
			fprintf(stderr, "flowgate: --host-tap: TAP %s%u: %s\n", prefix, p,
				strerror(-rc));
			return rc;
		}
		snprintf(name, sizeof(name), "fg_h2k_%u", p);
		h->to_host = rte_ring_create(name, HOST_RING, socket, RING_F_SC_DEQ);
		snprintf(name, sizeof(name), "fg_k2w_%u", p);
		h->to_wire = rte_ring_create(name, HOST_RING, socket,
					     RING_F_SP_ENQ | RING_F_SC_DEQ);
		if (h->to_host == NULL || h->to_wire == NULL) {
			fprintf(stderr, "flowgate: --host-tap: rings: %s\n",
				rte_strerror(rte_errno));
			return -ENOMEM;
		}
		/* the log, not stdout: a pipe's stdout is block-buffered, and
		 * scripts wait for this line (tests/e2e/host.sh, ecmp.py) */
		FG_LOG(INFO, "port %u: host exception path on TAP %s%u (mac %s)",
		       p, prefix, p, mac);
	}
	dp->host_tap = true;
	return 0;
}

unsigned int fg_host_poll(struct fg_dp *dp)
{
	struct rte_mbuf *m[HOST_BURST];
	unsigned int moved = 0;

	for (unsigned int p = 0; p < dp->n_ports; p++) {
		struct fg_host_port *h = &dp->host[p];
		unsigned int n, k;

		/* workers -> kernel */
		n = rte_ring_sc_dequeue_burst(h->to_host, (void **)m, HOST_BURST, NULL);
		moved += n;
		if (n) {
			k = rte_eth_tx_burst(h->tap, 0, m, (uint16_t)n);
			h->to_kernel += k;
			if (k < n) {
				h->tap_full += n - k;
				rte_pktmbuf_free_bulk(m + k, n - k);
			}
		}
		/* kernel -> worker 0 -> wire */
		n = rte_eth_rx_burst(h->tap, 0, m, HOST_BURST);
		moved += n;
		if (n) {
			k = rte_ring_sp_enqueue_burst(h->to_wire, (void **)m, n, NULL);
			if (k < n) {
				h->wire_full += n - k;
				rte_pktmbuf_free_bulk(m + k, n - k);
			}
		}
	}
	return moved;
}

void fg_host_free(struct fg_dp *dp)
{
	struct rte_mbuf *m;

	if (!dp->host_tap)
		return;
	for (unsigned int p = 0; p < dp->n_ports; p++) {
		struct fg_host_port *h = &dp->host[p];

		printf("flowgate: port %u host path: %lu to the kernel, %lu TAP full, "
		       "%lu ring to the wire full\n", p, (unsigned long)h->to_kernel,
		       (unsigned long)h->tap_full, (unsigned long)h->wire_full);
		while (h->to_host && rte_ring_dequeue(h->to_host, (void **)&m) == 0)
			rte_pktmbuf_free(m);
		while (h->to_wire && rte_ring_dequeue(h->to_wire, (void **)&m) == 0)
			rte_pktmbuf_free(m);
		rte_ring_free(h->to_host);
		rte_ring_free(h->to_wire);
		rte_eth_dev_stop(h->tap);
		rte_eth_dev_close(h->tap);
	}
	dp->host_tap = false;
}
