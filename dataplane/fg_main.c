/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * flowgate daemon: EAL, ports, workers, config, control socket, telemetry,
 * signals.  The packet path is in fg_worker.c.
 *
 *   flowgate [EAL args] -- [options]
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_pdump.h>

#include "fg_config_parse.h"
#include "fg_dp.h"
#include "fg_metrics.h"
#include "fg_proto.h"
#include "fg_stats.h"

static volatile sig_atomic_t g_stop;

static void on_signal(int sig)
{
	g_stop = sig;
}

static void usage(const char *prog)
{
	fprintf(stderr,
		"usage: %s [EAL args] -- [options]\n"
		"  -c, --config FILE        config file (control/fg_config_parse.h syntax)\n"
		"  -s, --socket PATH        control socket (default " FG_CTL_DEFAULT_SOCKET ")\n"
		"      --workers N          worker lcores to use (default: all but the main)\n"
		"      --sw-rss auto|on|off software RSS dispatch between workers (default auto)\n"
		"      --ct-capacity N      conntrack entries per worker (default 1048576)\n"
		"      --mbufs N            mbufs per socket (default 65535)\n"
		"      --host-tap[=PREFIX]  host exception path: a kernel TAP per port (PREFIXn,\n"
		"                           default fg0, fg1...) gets the packets for the host\n"
		"                           itself (SSH, BGP, ping to a local address)\n"
		"      --ctl-idle-timeout SEC  close control clients silent this long (default 30,\n"
		"                           0 = never; flows watch clients are exempt)\n"
		"      --metrics ADDR:PORT  serve Prometheus GET /metrics there (off by default;\n"
		"                           bind a management address: no authentication)\n"
		"      --pdump              let dpdk-dumpcap / dpdk-pdump capture (needs shared\n"
		"                           hugepage memory; see docs/OBSERVABILITY.md: ending a\n"
		"                           capture under traffic can crash DPDK 22.11)\n"
		"      --gpu[=graph|persistent]  parse and hash bursts on the GPU (CUDA builds;\n"
		"                           default launch mode graph; see gpu/fg_gpu.h)\n"
		"      --icmp-rate N        ICMP errors (frag-needed, packet-too-big,\n"
		"                           unreachable) and RSTs generated per second per\n"
		"                           worker (default " RTE_STR(FG_ICMP_RATE_DEFAULT) ", 0 = none)\n"
		"  config built from options (when no -c is given):\n"
		"      --service VIP:PORT[/tcp|udp][,mode=dsr-ipip|dsr-gue|nat][,sched=maglev|lc][,name=N][,gue-port=P][,on-fail=keep|reset]\n"
		"      --backend ADDR[:PORT][,weight=W][,drained][,id=N]   (adds to the last --service)\n"
		"      --local ADDR[,port=N]    balancer address (ARP/ND answered; NAT source; DSR outer source)\n"
		"      --gateway ADDR[,port=N]  default next hop of a port\n"
		"      --neigh ADDR,MAC[,port=N] static neighbour\n"
		"      --port-mac N,MAC         source MAC of port N\n"
		"      --flood-rate N           conntrack flood threshold (new flows/s per core)\n"
		"      --mtu N[,port=P]         egress L3 MTU of port P (default: every port);\n"
		"                               encapsulations above it drop as encap_too_big;\n"
		"                               mbufs grow to hold frames of the largest MTU\n",
		prog);
}

/* ---------------------------------------------- config from options */

static int parse_addr(const char *s, struct fg_addr *a)
{
	char buf[64];
	size_t n = strlen(s);

	memset(a, 0, sizeof(*a));
	if (n >= sizeof(buf))
		return -EINVAL;
	if (s[0] == '[' && n > 2 && s[n - 1] == ']') {
		memcpy(buf, s + 1, n - 2);
		buf[n - 2] = '\0';
	} else {
		memcpy(buf, s, n + 1);
	}
	if (inet_pton(AF_INET, buf, &a->v4) == 1) {
		a->family = AF_INET;
		return 0;
	}
	if (inet_pton(AF_INET6, buf, &a->v6) == 1) {
		a->family = AF_INET6;
		return 0;
	}
	return -EINVAL;
}

/* "ADDR:PORT", "[V6]:PORT", "ADDR" or a bare IPv6 address. */
static int parse_endpoint(const char *s, struct fg_addr *a, uint16_t *port)
{
	char buf[80];
	const char *colon;

	*port = 0;
	if (strlen(s) >= sizeof(buf))
		return -EINVAL;
	if (s[0] == '[') {
		const char *end = strchr(s, ']');

		if (end == NULL)
			return -EINVAL;
		memcpy(buf, s, end - s + 1);
		buf[end - s + 1] = '\0';
		if (end[1] == ':')
			*port = (uint16_t)atoi(end + 2);
		else if (end[1] != '\0')
			return -EINVAL;
		return parse_addr(buf, a);
	}
	colon = strchr(s, ':');
	if (colon && strchr(colon + 1, ':') == NULL) {
		memcpy(buf, s, colon - s);
		buf[colon - s] = '\0';
		*port = (uint16_t)atoi(colon + 1);
		return parse_addr(buf, a);
	}
	return parse_addr(s, a);
}

static int parse_mac(const char *s, uint8_t mac[6])
{
	unsigned int v[6];

	if (sscanf(s, "%x:%x:%x:%x:%x:%x", &v[0], &v[1], &v[2], &v[3], &v[4],
		   &v[5]) != 6)
		return -EINVAL;
	for (int i = 0; i < 6; i++)
		mac[i] = (uint8_t)v[i];
	return 0;
}

/* Splits "head,k=v,k=v" in place; returns the head. */
static char *kv_next(char **rest, char **key, char **val)
{
	char *tok = strsep(rest, ",");

	if (tok == NULL)
		return NULL;
	*key = tok;
	*val = strchr(tok, '=');
	if (*val)
		*(*val)++ = '\0';
	return tok;
}

struct opt_cfg {
	struct fg_config cfg;
	uint32_t next_backend_id;
};

static int opt_service(struct opt_cfg *oc, const char *arg)
{
	char *dup = strdup(arg), *rest = dup, *head, *k, *v;
	struct fg_service_cfg *s;
	int rc = -EINVAL;

	if (dup == NULL)
		return -ENOMEM;
	head = strsep(&rest, ",");
	if (oc->cfg.n_services >= FG_MAX_SERVICES)
		goto out;
	s = realloc(oc->cfg.services, (oc->cfg.n_services + 1) * sizeof(*s));
	if (s == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	oc->cfg.services = s;
	s = &s[oc->cfg.n_services];
	memset(s, 0, sizeof(*s));
	s->proto = IPPROTO_TCP;
	s->mode = FG_MODE_DSR_IPIP;
	s->sched = FG_SCHED_MAGLEV;
	s->gue_port = 6080;
	s->id = oc->cfg.n_services + 1;
	char *slash = strchr(head, '/');

	if (slash) {
		*slash++ = '\0';
		if (strcmp(slash, "udp") == 0)
			s->proto = IPPROTO_UDP;
		else if (strcmp(slash, "tcp") != 0)
			goto out;
	}
	if (parse_endpoint(head, &s->vip, &s->port) < 0 || s->port == 0)
		goto out;
	while (kv_next(&rest, &k, &v)) {
		if (v == NULL)
			goto out;
		if (!strcmp(k, "mode")) {
			if (!strcmp(v, "dsr-ipip"))
				s->mode = FG_MODE_DSR_IPIP;
			else if (!strcmp(v, "dsr-gue"))
				s->mode = FG_MODE_DSR_GUE;
			else if (!strcmp(v, "nat"))
				s->mode = FG_MODE_NAT;
			else
				goto out;
		} else if (!strcmp(k, "sched")) {
			if (!strcmp(v, "maglev"))
				s->sched = FG_SCHED_MAGLEV;
			else if (!strcmp(v, "lc"))
				s->sched = FG_SCHED_LC;
			else
				goto out;
		} else if (!strcmp(k, "name")) {
			snprintf(s->name, sizeof(s->name), "%s", v);
		} else if (!strcmp(k, "gue-port")) {
			s->gue_port = (uint16_t)atoi(v);
		} else if (!strcmp(k, "on-fail")) {
			s->on_fail = !strcmp(v, "reset") ? FG_FAIL_RESET : FG_FAIL_KEEP;
		} else {
			goto out;
		}
	}
	oc->cfg.n_services++;
	rc = 0;
out:
	if (rc == -EINVAL)
		fprintf(stderr, "flowgate: bad --service '%s' (expected VIP:PORT[/tcp|udp]"
			"[,mode=dsr-ipip|dsr-gue|nat][,sched=maglev|lc][,name=N])\n", arg);
	free(dup);
	return rc;
}

static int opt_backend(struct opt_cfg *oc, const char *arg)
{
	char *dup = strdup(arg), *rest = dup, *head, *k, *v;
	struct fg_service_cfg *s;
	struct fg_backend_cfg *b;
	int rc = -EINVAL;

	if (dup == NULL)
		return -ENOMEM;
	head = strsep(&rest, ",");
	if (oc->cfg.n_services == 0) {
		fprintf(stderr, "flowgate: --backend before any --service\n");
		goto out;
	}
	s = &oc->cfg.services[oc->cfg.n_services - 1];
	if (s->n_backends >= FG_MAX_BACKENDS)
		goto out;
	b = &s->backends[s->n_backends];
	memset(b, 0, sizeof(*b));
	b->weight = 1;
	b->id = ++oc->next_backend_id;
	if (parse_endpoint(head, &b->addr, &b->port) < 0)
		goto out;
	while (kv_next(&rest, &k, &v)) {
		if (!strcmp(k, "drained") && v == NULL)
			b->drained = true;
		else if (!strcmp(k, "weight") && v)
			b->weight = (uint32_t)strtoul(v, NULL, 10);
		else if (!strcmp(k, "id") && v)
			b->id = (uint32_t)strtoul(v, NULL, 10);
		else if (!strcmp(k, "src") && v) {
			if (parse_addr(v, &b->src) < 0)
				goto out;
		} else
			goto out;
	}
	if (b->weight > 65535)
		goto out;
	s->n_backends++;
	rc = 0;
out:
	if (rc == -EINVAL)
		fprintf(stderr, "flowgate: bad --backend '%s' (expected ADDR[:PORT]"
			"[,weight=W][,drained][,id=N][,src=ADDR])\n", arg);
	free(dup);
	return rc;
}

/* --local / --gateway / --neigh / --port-mac */
static int opt_port_thing(struct opt_cfg *oc, const char *what, const char *arg)
{
	char *dup = strdup(arg), *rest = dup, *head, *k, *v;
	struct fg_addr a;
	uint8_t mac[6] = {0};
	unsigned int port = 0;
	bool have_mac = false;
	int rc = -EINVAL;

	if (dup == NULL)
		return -ENOMEM;
	head = strsep(&rest, ",");
	if (!strcmp(what, "port-mac")) {
		port = (unsigned int)atoi(head);
		if (rest == NULL || parse_mac(rest, mac) < 0 || port >= FG_MAX_PORTS)
			goto out;
		memcpy(oc->cfg.ports[port].mac, mac, 6);
		if (oc->cfg.n_ports <= port)
			oc->cfg.n_ports = port + 1;
		rc = 0;
		goto out;
	}
	if (parse_addr(head, &a) < 0)
		goto out;
	while (kv_next(&rest, &k, &v)) {
		if (!strcmp(k, "port") && v)
			port = (unsigned int)atoi(v);
		else if (v == NULL && parse_mac(k, mac) == 0)
			have_mac = true;
		else
			goto out;
	}
	if (port >= FG_MAX_PORTS)
		goto out;
	if (oc->cfg.n_ports <= port)
		oc->cfg.n_ports = port + 1;
	struct fg_port_cfg *pc = &oc->cfg.ports[port];

	if (!strcmp(what, "local")) {
		if (pc->n_local >= FG_MAX_LOCAL_ADDRS)
			goto out;
		pc->local[pc->n_local++] = a;
	} else if (!strcmp(what, "gateway")) {
		if (a.family == AF_INET6)
			pc->gateway6 = a;
		else
			pc->gateway = a;
	} else {
		if (!have_mac || oc->cfg.n_neigh >= FG_MAX_NEIGH)
			goto out;
		struct fg_neigh_cfg *n = &oc->cfg.neigh[oc->cfg.n_neigh++];

		n->ip = a;
		memcpy(n->mac, mac, 6);
		n->port = (uint16_t)port;
	}
	rc = 0;
out:
	if (rc == -EINVAL)
		fprintf(stderr, "flowgate: bad --%s '%s'\n", what, arg);
	free(dup);
	return rc;
}

/* --mtu N[,port=P]: 0 in mtu[] = leave the device's MTU. */
#define FG_MTU_MIN 68
#define FG_MTU_MAX 16000

static int opt_mtu(uint16_t mtu[FG_MAX_PORTS], const char *arg)
{
	char *dup = strdup(arg), *rest = dup, *head, *k, *v, *end;
	long port = -1, n;
	int rc = -EINVAL;

	if (dup == NULL)
		return -ENOMEM;
	head = strsep(&rest, ",");
	n = strtol(head, &end, 10);
	if (*head == '\0' || *end != '\0' || n < FG_MTU_MIN || n > FG_MTU_MAX)
		goto out;
	while (kv_next(&rest, &k, &v)) {
		if (strcmp(k, "port") != 0 || v == NULL)
			goto out;
		port = strtol(v, &end, 10);
		if (*v == '\0' || *end != '\0' || port < 0 || port >= FG_MAX_PORTS)
			goto out;
	}
	for (long p = 0; p < FG_MAX_PORTS; p++)
		if (port < 0 || p == port)
			mtu[p] = (uint16_t)n;
	rc = 0;
out:
	if (rc == -EINVAL)
		fprintf(stderr, "flowgate: bad --mtu '%s' (expected N[,port=P], N in "
			"%d..%d)\n", arg, FG_MTU_MIN, FG_MTU_MAX);
	free(dup);
	return rc;
}

/* Jumbo MTUs: the ports' mbufs must hold a whole frame in one segment (the
 * parser and rewriters work on one segment).  fg_port_setup() uses a pool
 * that already exists for a socket, so create them here, sized for the
 * largest MTU, before it runs. */
static int jumbo_pools_create(struct fg_dp *dp, const uint16_t mtu[FG_MAX_PORTS],
			      unsigned int n_mbufs)
{
	uint32_t max_mtu = 0, room;

	for (unsigned int p = 0; p < dp->n_ports; p++)
		max_mtu = RTE_MAX(max_mtu, (uint32_t)mtu[p]);
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
		dp->pool[socket] = rte_pktmbuf_pool_create(name, n_mbufs, 256,
				RTE_ALIGN(sizeof(struct fg_mbuf_priv), RTE_CACHE_LINE_SIZE),
				(uint16_t)(room + RTE_PKTMBUF_HEADROOM), socket);
		if (dp->pool[socket] == NULL) {
			fprintf(stderr, "flowgate: cannot create %u mbufs of %u bytes on "
				"socket %d: %s (lower --mbufs or --mtu)\n", n_mbufs,
				room + RTE_PKTMBUF_HEADROOM, socket,
				rte_strerror(rte_errno));
			return -ENOMEM;
		}
	}
	return 0;
}

/* Applies --mtu after the ports started.  A device that cannot take the MTU
 * (net_pcap, net_null) keeps its own; flowgate still enforces the
 * configured one on what it encapsulates, which is what the option is for. */
static void port_mtus_apply(struct fg_dp *dp, const uint16_t mtu[FG_MAX_PORTS])
{
	for (unsigned int p = 0; p < dp->n_ports; p++) {
		struct fg_port *pt = &dp->ports[p];
		int rc;

		if (mtu[p] == 0)
			continue;
		rc = rte_eth_dev_set_mtu(pt->port_id, mtu[p]);
		if (rc < 0 && rc != -ENOTSUP)
			fprintf(stderr, "flowgate: port %u: device refused MTU %u (%s); "
				"flowgate enforces it on encapsulation anyway\n", p,
				mtu[p], strerror(-rc));
		pt->mtu = mtu[p];
	}
}

/* ------------------------------------------------------------- main */

enum {
	OPT_WORKERS = 256, OPT_SW_RSS, OPT_CT_CAP, OPT_MBUFS, OPT_GPU,
	OPT_SERVICE, OPT_BACKEND, OPT_LOCAL, OPT_GATEWAY, OPT_NEIGH,
	OPT_PORT_MAC, OPT_FLOOD, OPT_MTU, OPT_HOST_TAP, OPT_ICMP_RATE,
	OPT_CTL_IDLE, OPT_METRICS, OPT_PDUMP,
};

static const struct option long_opts[] = {
	{"config", required_argument, NULL, 'c'},
	{"socket", required_argument, NULL, 's'},
	{"help", no_argument, NULL, 'h'},
	{"workers", required_argument, NULL, OPT_WORKERS},
	{"sw-rss", required_argument, NULL, OPT_SW_RSS},
	{"ct-capacity", required_argument, NULL, OPT_CT_CAP},
	{"mbufs", required_argument, NULL, OPT_MBUFS},
	{"gpu", optional_argument, NULL, OPT_GPU},
	{"host-tap", optional_argument, NULL, OPT_HOST_TAP},
	{"metrics", required_argument, NULL, OPT_METRICS},
	{"pdump", no_argument, NULL, OPT_PDUMP},
	{"service", required_argument, NULL, OPT_SERVICE},
	{"backend", required_argument, NULL, OPT_BACKEND},
	{"local", required_argument, NULL, OPT_LOCAL},
	{"gateway", required_argument, NULL, OPT_GATEWAY},
	{"neigh", required_argument, NULL, OPT_NEIGH},
	{"port-mac", required_argument, NULL, OPT_PORT_MAC},
	{"flood-rate", required_argument, NULL, OPT_FLOOD},
	{"mtu", required_argument, NULL, OPT_MTU},
	{"icmp-rate", required_argument, NULL, OPT_ICMP_RATE},
	{"ctl-idle-timeout", required_argument, NULL, OPT_CTL_IDLE},
	{NULL, 0, NULL, 0},
};

int main(int argc, char **argv)
{
	struct fg_dp *dp;
	struct opt_cfg oc;
	const char *config_file = NULL, *socket_path = NULL, *gpu_mode = NULL;
	const char *host_tap = NULL, *metrics_addr = NULL;
	struct fg_metrics *metrics = NULL;
	bool pdump = false;
	unsigned int want_workers = 0, n_mbufs = 65535;
	uint16_t port_mtu[FG_MAX_PORTS] = {0};
	int sw_rss = -1, rc, opt;
	uint32_t ct_capacity_opt = 0;   /* --ct-capacity: overrides the file */
	long icmp_rate = FG_ICMP_RATE_DEFAULT;
	int ctl_idle_ms = 0;            /* 0: the server's default */
	char err[256];

	rc = rte_eal_init(argc, argv);
	if (rc < 0) {
		fprintf(stderr, "flowgate: EAL init failed: %s\n", rte_strerror(rte_errno));
		return 1;
	}
	argc -= rc;
	argv += rc;

	/* options-built config: the same defaults as a file (control socket,
	 * GUE port), so it validates like one */
	memset(&oc, 0, sizeof(oc));
	fg_config_init(&oc.cfg);
	oc.cfg.ct_capacity = 1u << 20;
	optind = 1;
	while ((opt = getopt_long(argc, argv, "c:s:h", long_opts, NULL)) != -1) {
		rc = 0;
		switch (opt) {
		case 'c': config_file = optarg; break;
		case 's': socket_path = optarg; break;
		case 'h': usage(argv[0]); return 0;
		case OPT_WORKERS: want_workers = (unsigned int)atoi(optarg); break;
		case OPT_SW_RSS:
			if (!strcmp(optarg, "auto")) sw_rss = -1;
			else if (!strcmp(optarg, "on")) sw_rss = 1;
			else if (!strcmp(optarg, "off")) sw_rss = 0;
			else rc = -EINVAL;
			break;
		case OPT_CT_CAP: {
			char *end;
			unsigned long v = strtoul(optarg, &end, 0);

			if (*optarg == '\0' || *end != '\0' || v == 0 || v > UINT32_MAX) {
				fprintf(stderr, "flowgate: bad --ct-capacity '%s' (expected "
					"entries per worker, 1..%u)\n", optarg, UINT32_MAX);
				rc = -EINVAL;
			} else {
				ct_capacity_opt = (uint32_t)v;
			}
			break;
		}
		case OPT_CTL_IDLE: {
			char *end;
			unsigned long v = strtoul(optarg, &end, 0);

			if (*optarg == '\0' || *end != '\0' || v > INT32_MAX / 1000) {
				fprintf(stderr, "flowgate: bad --ctl-idle-timeout '%s' "
					"(expected seconds, 0 = never)\n", optarg);
				rc = -EINVAL;
			} else {
				ctl_idle_ms = v ? (int)v * 1000 : -1;
			}
			break;
		}
		case OPT_METRICS: {
			struct sockaddr_storage ss;
			socklen_t sl;

			metrics_addr = optarg;
			if (fg_metrics_listen_parse(optarg, &ss, &sl) < 0) {
				fprintf(stderr, "flowgate: --metrics %s: expected ADDR:PORT "
					"or [V6ADDR]:PORT, numeric\n", optarg);
				rc = -EINVAL;
			}
			break;
		}
		case OPT_PDUMP: pdump = true; break;
		case OPT_MBUFS: n_mbufs = (unsigned int)strtoul(optarg, NULL, 0); break;
		case OPT_ICMP_RATE: {
			char *end;

			icmp_rate = strtol(optarg, &end, 0);
			if (*optarg == '\0' || *end != '\0' || icmp_rate < 0 ||
			    icmp_rate > 1000000) {
				fprintf(stderr, "flowgate: bad --icmp-rate '%s' (expected "
					"0..1000000 per second per worker)\n", optarg);
				rc = -EINVAL;
			}
			break;
		}
		case OPT_HOST_TAP:
			host_tap = optarg ? optarg : "fg";
			if (strlen(host_tap) == 0 || strlen(host_tap) > 10) {
				fprintf(stderr, "flowgate: --host-tap=%s: the interface prefix "
					"takes 1 to 10 characters\n", host_tap);
				rc = -EINVAL;
			}
			break;
		case OPT_GPU:
			gpu_mode = optarg ? optarg : "graph";
			if (strcmp(gpu_mode, "graph") && strcmp(gpu_mode, "persistent")) {
				fprintf(stderr, "flowgate: --gpu=%s: the launch mode is "
					"graph or persistent\n", gpu_mode);
				rc = -EINVAL;
			}
			break;
		case OPT_SERVICE: rc = opt_service(&oc, optarg); break;
		case OPT_BACKEND: rc = opt_backend(&oc, optarg); break;
		case OPT_LOCAL: rc = opt_port_thing(&oc, "local", optarg); break;
		case OPT_GATEWAY: rc = opt_port_thing(&oc, "gateway", optarg); break;
		case OPT_NEIGH: rc = opt_port_thing(&oc, "neigh", optarg); break;
		case OPT_PORT_MAC: rc = opt_port_thing(&oc, "port-mac", optarg); break;
		case OPT_FLOOD: oc.cfg.flood_rate = (uint32_t)strtoul(optarg, NULL, 0); break;
		case OPT_MTU: rc = opt_mtu(port_mtu, optarg); break;
		default: rc = -EINVAL; break;
		}
		if (rc < 0) {
			usage(argv[0]);
			free(oc.cfg.services);
			rte_eal_cleanup();
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "flowgate: unexpected argument '%s'\n", argv[optind]);
		usage(argv[0]);
		rte_eal_cleanup();
		return 2;
	}
	if (config_file != NULL) {
		rc = fg_dp_config_load(config_file, &oc.cfg);
		if (rc < 0) {
			rte_eal_cleanup();
			return 1;
		}
	}
	if (config_file == NULL) {
		/* the options-built config gets the file's semantic checks, so
		 * a later fgctl edit (which validates) does not fail on it */
		struct fg_cfg_err ev[16];
		struct fg_cfg_errs errs = {ev, RTE_DIM(ev), 0};

		if (fg_config_validate(&oc.cfg, "command line", &errs) < 0) {
			for (unsigned int i = 0; i < errs.n && i < errs.max; i++)
				fprintf(stderr, "flowgate: options: %s\n", ev[i].msg);
			rte_eal_cleanup();
			return 2;
		}
	}
	/* the command line wins over the file; the running config then says
	 * what is actually in effect (fgctl config show) */
	if (ct_capacity_opt)
		oc.cfg.ct_capacity = ct_capacity_opt;
	if (oc.cfg.ct_capacity == 0)
		oc.cfg.ct_capacity = 1u << 20;
	/* socket: -s, then $FLOWGATE_SOCKET, then the file's control_socket
	 * (default FG_CTL_DEFAULT_SOCKET) */
	if (socket_path == NULL && getenv(FG_CTL_SOCKET_ENV) && *getenv(FG_CTL_SOCKET_ENV))
		socket_path = getenv(FG_CTL_SOCKET_ENV);
	bool socket_from_cli = socket_path != NULL;
	if (socket_path == NULL)
		socket_path = oc.cfg.control_socket[0] ? oc.cfg.control_socket :
			      FG_CTL_DEFAULT_SOCKET;
	if (socket_path != oc.cfg.control_socket) {
		char cwd[FG_PATH_MAX] = "";
		char abs_path[2 * FG_PATH_MAX];

		/* the config keeps absolute paths (fg_config_validate) */
		if (socket_path[0] != '/' && getcwd(cwd, sizeof(cwd)) != NULL) {
			snprintf(abs_path, sizeof(abs_path), "%s/%s", cwd, socket_path);
			socket_path = abs_path;
		}
		if (strlen(socket_path) >= sizeof(oc.cfg.control_socket)) {
			fprintf(stderr, "flowgate: control socket path too long: %s\n",
				socket_path);
			rte_eal_cleanup();
			return 2;
		}
		snprintf(oc.cfg.control_socket, sizeof(oc.cfg.control_socket), "%s",
			 socket_path);
		socket_path = oc.cfg.control_socket;
	}
	if (!strcmp(socket_path, FG_CTL_DEFAULT_SOCKET))
		mkdir("/run/flowgate", 0755);

	dp = rte_zmalloc("fg_dp", sizeof(*dp), RTE_CACHE_LINE_SIZE);
	if (dp == NULL) {
		fprintf(stderr, "flowgate: out of memory\n");
		return 1;
	}
	pthread_mutex_init(&dp->cfg_lock, NULL);
	pthread_mutex_init(&dp->mbox_lock, NULL);
	dp->hz = rte_get_tsc_hz();
	dp->flush_ticks = dp->hz / 10000;   /* 100 us */
	dp->ct_capacity = oc.cfg.ct_capacity ? oc.cfg.ct_capacity : (1u << 20);
	dp->cli_socket = socket_from_cli;
	dp->cli_ct_capacity = ct_capacity_opt != 0;

	/* ports: every probed ethdev; config port blocks are matched to them
	 * by name (fg_port_cfg_resolve), never by their order in the file */
	uint16_t pid;

	RTE_ETH_FOREACH_DEV(pid) {
		if (dp->n_ports >= FG_MAX_PORTS)
			break;
		dp->ports[dp->n_ports].port_id = pid;
		dp->n_ports++;
	}
	if (dp->n_ports == 0) {
		fprintf(stderr, "flowgate: no ports (give e.g. --no-pci --vdev=net_af_packet0,"
			"iface=veth0)\n");
		return 1;
	}
	rc = fg_port_cfg_resolve(dp, &oc.cfg, err, sizeof(err));
	if (rc < 0) {
		fprintf(stderr, "flowgate: config: %s\n", err);
		return 1;
	}
	for (unsigned int p = 0; p < dp->n_ports; p++)
		dp->ports[p].cfg = oc.cfg.ports[p];
	dp->cfg = fg_dp_config_dup(&oc.cfg);
	if (dp->cfg == NULL) {
		fprintf(stderr, "flowgate: out of memory\n");
		return 1;
	}
	for (unsigned int p = 0; p < dp->n_ports; p++)
		for (uint32_t i = 0; i < dp->ports[p].cfg.n_local; i++)
			dp->locals[dp->n_locals++] = dp->ports[p].cfg.local[i];

	/* workers: worker lcores in order */
	unsigned int lcore;

	RTE_LCORE_FOREACH_WORKER(lcore) {
		if (dp->n_workers >= FG_MAX_WORKERS ||
		    (want_workers && dp->n_workers >= want_workers))
			break;
		rc = fg_worker_create(dp, dp->n_workers, lcore,
				      &dp->workers[dp->n_workers]);
		if (rc < 0) {
			fprintf(stderr, "flowgate: worker %u: %s (conntrack capacity "
				"%u per worker; lower --ct-capacity or add memory)\n",
				dp->n_workers, strerror(-rc), dp->ct_capacity);
			return 1;
		}
		dp->n_workers++;
	}
	if (dp->n_workers == 0) {
		fprintf(stderr, "flowgate: no worker lcore (use e.g. -l 0,1: lcore 0 "
			"is the main lcore, the others are workers)\n");
		return 1;
	}
	size_t qsz = rte_rcu_qsbr_get_memsize(dp->n_workers);

	dp->qsbr = rte_zmalloc("fg_qsbr", qsz, RTE_CACHE_LINE_SIZE);
	if (dp->qsbr == NULL || rte_rcu_qsbr_init(dp->qsbr, dp->n_workers) != 0) {
		fprintf(stderr, "flowgate: RCU init failed\n");
		return 1;
	}
	dp->learn_ring = rte_ring_create_elem("fg_learn", sizeof(struct fg_neigh_learn),
					      1024, (int)rte_socket_id(), RING_F_SC_DEQ);
	if (dp->learn_ring == NULL) {
		fprintf(stderr, "flowgate: learn ring: %s\n", rte_strerror(rte_errno));
		return 1;
	}
	if (jumbo_pools_create(dp, port_mtu, n_mbufs) < 0)
		return 1;
	rc = fg_port_setup(dp, sw_rss, n_mbufs);
	if (rc < 0)
		return 1;
	port_mtus_apply(dp, port_mtu);
	dp->neigh_age = (uint64_t)FG_NEIGH_AGE_S * rte_get_tsc_hz();
	dp->icmp_rate = (uint32_t)icmp_rate;
	dp->neigh = fg_neigh_table_build(dp->cfg, NULL, NULL, 0);
	if (dp->neigh == NULL) {
		fprintf(stderr, "flowgate: out of memory (neighbours)\n");
		return 1;
	}
	rc = fg_dp_apply_config(dp, &oc.cfg, err, sizeof(err));
	if (rc < 0) {
		fprintf(stderr, "flowgate: config rejected: %s\n", err);
		return 1;
	}
	if (gpu_mode != NULL && fg_gpupath_create(dp, gpu_mode) < 0)
		return 1;
	if (host_tap != NULL && fg_host_setup(dp, host_tap) < 0)
		return 1;
	/* dpdk-dumpcap / dpdk-pdump: secondary processes that need the shared
	 * config, so not under --in-memory / --no-shconf (then this fails) */
	if (pdump && rte_pdump_init() < 0) {
		fprintf(stderr, "flowgate: --pdump: %s (a capture needs shared "
			"hugepage memory: a --file-prefix, no --in-memory, --no-shconf "
			"or --no-huge)\n", rte_strerror(rte_errno));
		return 1;
	}
	if (fg_stats_telemetry_register(dp) < 0)
		fprintf(stderr, "flowgate: warning: some /flowgate/ telemetry commands "
			"were not registered\n");
	rc = metrics_addr ? fg_metrics_start(dp, metrics_addr, &metrics) : 0;
	if (rc < 0) {
		fprintf(stderr, "flowgate: --metrics %s: %s\n", metrics_addr, strerror(-rc));
		return 1;
	}
	rc = fg_control_start(dp, socket_path, ctl_idle_ms);
	if (rc < 0)
		return 1;

	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	for (unsigned int i = 0; i < dp->n_workers; i++)
		rte_eal_remote_launch(fg_worker_main, dp->workers[i],
				      dp->workers[i]->lcore);
	printf("flowgate: running: %u ports, %u workers (%s), %u services\n",
	       dp->n_ports, dp->n_workers,
	       dp->sw_rss ? "software RSS" : dp->n_workers > 1 ?
	       "hardware RSS" : "single worker", oc.cfg.n_services);
	for (unsigned int p = 0; p < dp->n_ports; p++) {
		char mac[RTE_ETHER_ADDR_FMT_SIZE];

		rte_ether_format_addr(mac, sizeof(mac), &dp->ports[p].mac);
		printf("flowgate: port %u ethdev %u mac %s mtu %u rxq %u txq %u%s\n",
		       p, dp->ports[p].port_id, mac, dp->ports[p].mtu,
		       dp->ports[p].n_rxq, dp->ports[p].n_txq,
		       dp->ports[p].hw_rss ? " symmetric-rss" : "");
	}
	fflush(stdout);

	while (!g_stop) {
		fg_dp_neigh_poll(dp);
		if (dp->host_tap)
			fg_host_poll(dp);
		/* the host path is polled every ~20 us: interactive latency
		 * for SSH / BGP, a few % of the main lcore's CPU */
		usleep(dp->host_tap ? 20 : 1000);
	}
	printf("flowgate: signal %d, stopping health checks, control, workers\n",
	       (int)g_stop);
	/* control side first, while the workers still answer their mailboxes:
	 * the health checker applies configs and may walk shards (on_fail
	 * reset), the control thread may be in a flows walk */
	fg_metrics_stop(metrics);
	fg_control_stop(dp);
	for (unsigned int i = 0; i < dp->n_workers; i++)
		__atomic_store_n(&dp->workers[i]->stop, true, __ATOMIC_RELAXED);
	rte_eal_mp_wait_lcore();
	fg_stats_print(dp, stdout);
	fflush(stdout);
	if (pdump)
		rte_pdump_uninit();
	for (unsigned int p = 0; p < dp->n_ports; p++) {
		rte_eth_dev_stop(dp->ports[p].port_id);
		rte_eth_dev_close(dp->ports[p].port_id);
	}
	fg_gpupath_free(dp);
	fg_host_free(dp);
	for (unsigned int i = 0; i < dp->n_workers; i++)
		fg_worker_free(dp->workers[i]);
	fg_lb_table_free(dp->lb);
	fg_neigh_table_free(dp->neigh);
	fg_dp_config_free(dp->cfg);
	free(oc.cfg.services);
	rte_ring_free(dp->learn_ring);
	rte_free(dp->qsbr);
	rte_free(dp);
	rte_eal_cleanup();
	printf("flowgate: stopped cleanly\n");
	return 0;
}
