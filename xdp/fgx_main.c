/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * flowgate-xdp: flowgate's DSR balancer as an XDP program on an interface
 * the kernel keeps (docs/XDP.md).  Same config file and validator as the
 * DPDK daemon, same control socket protocol (fgctl service / backend /
 * config / flows / stats / health), same health checker.
 *
 *   flowgate-xdp -c CONFIG -i IFACE [-s SOCKET] [--mode auto|native|generic]
 *                [--ct-capacity N] [--mtu N] [--strict]
 *
 * Threads: main (signals, then teardown), the control server thread, the
 * health checker thread.  The running config and the loader are shared by
 * the last two and guarded by cfg_lock (control plane only; the packet
 * path is the BPF program).
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include "ct.h"
#include "fg_config_parse.h"
#include "fg_counters.h"
#include "fg_ctl_server.h"
#include "fg_health.h"
#include "fgx_load.h"
#include "fgx_maps.h"

struct xd {
	pthread_mutex_t cfg_lock;
	struct fg_config cfg;       /**< running config (ids assigned) */
	struct fgx *x;
	struct fg_health *health;
	uint8_t mac[6];
	uint16_t mtu;
	char ifname[IF_NAMESIZE];
};

static volatile sig_atomic_t g_stop;

static void on_signal(int sig)
{
	(void)sig;
	g_stop = 1;
}

static int apply_locked(struct xd *d, const struct fg_config *next, char *err,
			size_t errlen)
{
	struct fg_config copy;
	int rc;

	memset(&copy, 0, sizeof(copy));
	rc = fg_config_copy(&copy, next);
	if (rc)
		return rc;
	if (d->health)
		fg_health_mark(d->health, &copy);
	rc = fgx_apply(d->x, &copy, d->mac, d->mtu, 0, err, errlen);
	if (rc) {
		fg_config_free(&copy);
		return rc;
	}
	fg_config_free(&d->cfg);
	d->cfg = copy;
	return 0;
}

/* ---- control ops ------------------------------------------------------ */

static int op_config_get(struct fg_config *out, void *ctx)
{
	struct xd *d = ctx;
	int rc;

	pthread_mutex_lock(&d->cfg_lock);
	rc = fg_config_copy(out, &d->cfg);
	pthread_mutex_unlock(&d->cfg_lock);
	return rc;
}

static int op_config_check(const struct fg_config *cfg, char *err, size_t errlen,
			   void *ctx)
{
	struct xd *d = ctx;
	struct fg_config tmp = *cfg;
	int rc;

	pthread_mutex_lock(&d->cfg_lock);
	if (tmp.ct_capacity == 0)
		tmp.ct_capacity = d->cfg.ct_capacity;
	rc = fg_config_restart_diff(&d->cfg, &tmp, err, errlen);
	pthread_mutex_unlock(&d->cfg_lock);
	return rc;
}

static int op_config_apply(const struct fg_config *cfg, char *err, size_t errlen,
			   void *ctx)
{
	struct xd *d = ctx;
	struct fg_config tmp = *cfg;
	int rc;

	pthread_mutex_lock(&d->cfg_lock);
	if (tmp.ct_capacity == 0)
		tmp.ct_capacity = d->cfg.ct_capacity;
	rc = fg_config_restart_diff(&d->cfg, &tmp, err, errlen);
	if (rc > 0) {
		size_t n = strlen(err);

		snprintf(err + n, errlen - n, ": needs a restart");
		rc = -EOPNOTSUPP;
	}
	if (rc == 0)
		rc = apply_locked(d, &tmp, err, errlen);
	pthread_mutex_unlock(&d->cfg_lock);
	return rc;
}

static int64_t op_flows_walk(const struct fg_flow_filter *f, fg_flow_emit_fn emit,
			     void *emit_arg, bool del, void *ctx)
{
	struct xd *d = ctx;
	int64_t rc;

	/* the emit callback may block on the client: walk under the lock
	 * anyway, the config is only read to name services and backends */
	pthread_mutex_lock(&d->cfg_lock);
	rc = fgx_flows_walk(d->x, &d->cfg, f, emit, emit_arg, del);
	pthread_mutex_unlock(&d->cfg_lock);
	return rc;
}

static int op_flows_count(struct fg_flow_counts *out, void *ctx)
{
	struct xd *d = ctx;

	return fgx_flows_count(d->x, out);
}

static void write_core(struct fg_json_writer *w, const char *key, const uint64_t *c)
{
	fg_jw_obj_open(w, key);
	for (int i = 0; i < FG_CC_MAX; i++)
		fg_jw_u64(w, fg_core_counter_names[i], c[i]);
	fg_jw_obj_open(w, "drops_by_reason");
	for (int r = 1; r < FG_DROP_MAX; r++)
		fg_jw_u64(w, fg_drop_names[r], c[FGX_CNT_DROP(r)]);
	fg_jw_obj_close(w);
	fg_jw_obj_close(w);
}

static int op_stats(struct fg_json_writer *w, const char *service, bool per_core,
		    bool zero, void *ctx)
{
	struct xd *d = ctx;
	int ncpu = fgx_ncpus(), rc;
	uint64_t sum[FGX_CNT_N], *pc;

	if (zero)
		return -ENOTSUP; /* stats --zero: a baseline the DPDK daemon keeps; not here */
	if (service)
		return -ENOTSUP; /* per-service counters: not kept by XDP (docs/XDP.md) */
	pc = calloc((size_t)ncpu * FGX_CNT_N, sizeof(*pc));
	if (!pc)
		return -ENOMEM;
	rc = fgx_counters(d->x, sum, pc);
	if (rc) {
		free(pc);
		return rc;
	}
	fg_jw_obj_open(w, NULL);
	fg_jw_str(w, "dataplane", "xdp");
	fg_jw_str(w, "interface", d->ifname);
	fg_jw_u64(w, "workers", (uint64_t)ncpu);
	fg_jw_bool(w, "sw_rss", false);
	write_core(w, "total", sum);
	if (per_core) {
		fg_jw_arr_open(w, "per_core");
		for (int c = 0; c < ncpu; c++)
			write_core(w, NULL, pc + (size_t)c * FGX_CNT_N);
		fg_jw_arr_close(w);
	}
	fg_jw_arr_open(w, "ports");
	fg_jw_arr_close(w);
	fg_jw_arr_open(w, "services");
	pthread_mutex_lock(&d->cfg_lock);
	for (uint32_t i = 0; i < d->cfg.n_services; i++) {
		const struct fg_service_cfg *s = &d->cfg.services[i];
		char spec[96];

		fg_service_spec_format(&s->vip, s->port, s->proto, spec, sizeof(spec));
		fg_jw_obj_open(w, NULL);
		fg_jw_u64(w, "id", s->id);
		fg_jw_str(w, "name", s->name);
		fg_jw_str(w, "service", spec);
		fg_jw_str(w, "mode", fg_mode_name(s->mode));
		fg_jw_arr_open(w, "backends");
		for (uint32_t j = 0; j < s->n_backends; j++) {
			const struct fg_backend_cfg *b = &s->backends[j];
			char a[64];

			fg_addr_format(&b->addr, a, sizeof(a));
			fg_jw_obj_open(w, NULL);
			fg_jw_u64(w, "id", b->id);
			fg_jw_str(w, "addr", a);
			fg_jw_u64(w, "port", b->port ? b->port : s->port);
			fg_jw_u64(w, "weight", b->weight);
			fg_jw_str(w, "state", b->health_down ? "down" :
				  b->drained ? "drained" : "up");
			fg_jw_obj_close(w);
		}
		fg_jw_arr_close(w);
		fg_jw_obj_close(w);
	}
	pthread_mutex_unlock(&d->cfg_lock);
	fg_jw_arr_close(w);
	fg_jw_obj_close(w);
	free(pc);
	return fg_jw_error(w);
}

/* The checker's verdict reaches the program through the config, as in
 * the DPDK daemon: copy, fg_health_mark, apply.  on_fail reset deletes
 * the backend's flows from the conntrack maps. */
static int health_set(uint32_t service_id, uint32_t backend_id, bool up,
		      const char *reason, void *ctx)
{
	struct xd *d = ctx;
	struct fg_flow_filter f;
	char err[256] = "";
	int rc, reset = 0;

	fg_flow_filter_init(&f);
	pthread_mutex_lock(&d->cfg_lock);
	rc = apply_locked(d, &d->cfg, err, sizeof(err));
	for (uint32_t i = 0; rc == 0 && !up && i < d->cfg.n_services; i++) {
		const struct fg_service_cfg *s = &d->cfg.services[i];

		if (s->id != service_id || s->on_fail != FG_FAIL_RESET)
			continue;
		for (uint32_t j = 0; j < s->n_backends; j++)
			if (s->backends[j].id == backend_id) {
				f.service_id = service_id;
				f.has_backend = true;
				f.backend = s->backends[j].addr;
				reset = 1;
			}
	}
	if (reset)
		fgx_flows_walk(d->x, &d->cfg, &f, NULL, NULL, true);
	pthread_mutex_unlock(&d->cfg_lock);
	fprintf(stderr, "flowgate-xdp: service %u backend %u %s (%s)%s%s\n", service_id,
		backend_id, up ? "up" : "down", reason, rc ? ": apply failed: " : "", err);
	return rc;
}

/* ---- start-up ---------------------------------------------------------- */

static int if_info(const char *name, uint8_t mac[6], uint16_t *mtu)
{
	struct ifreq ifr;
	int fd = socket(AF_INET, SOCK_DGRAM, 0), rc = 0;

	if (fd < 0)
		return -errno;
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", name);
	if (ioctl(fd, SIOCGIFHWADDR, &ifr) == 0)
		memcpy(mac, ifr.ifr_hwaddr.sa_data, 6);
	else
		rc = -errno;
	if (!rc && ioctl(fd, SIOCGIFMTU, &ifr) == 0)
		*mtu = (uint16_t)ifr.ifr_mtu;
	else if (!rc)
		rc = -errno;
	close(fd);
	return rc;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: flowgate-xdp -c CONFIG -i IFACE [options]\n"
		"  -c, --config FILE       flowgate config file (the DPDK daemon's format;\n"
		"                          DSR ipip/gue services with the maglev scheduler)\n"
		"  -i, --iface IFACE       interface to attach to (its MAC and MTU are used\n"
		"                          unless the config's port sets a MAC / --mtu)\n"
		"  -s, --socket PATH       control socket (default: the config's, else %s)\n"
		"      --mode MODE         auto (native, else generic) | native | generic\n"
		"      --ct-capacity N     IPv4 conntrack entries (IPv6: N/4); default the\n"
		"                          config's ct_capacity, else %u\n"
		"      --mtu N             egress L3 MTU for the encapsulation check\n"
		"      --strict            drop packets to addresses that are no VIP\n"
		"                          (unknown_vip) instead of passing them to the kernel\n"
		"  -h, --help\n", FG_CTL_DEFAULT_SOCKET, FGX_CT_DEFAULT);
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "iface", required_argument, NULL, 'i' },
		{ "socket", required_argument, NULL, 's' },
		{ "mode", required_argument, NULL, 'm' },
		{ "ct-capacity", required_argument, NULL, 'C' },
		{ "mtu", required_argument, NULL, 'M' },
		{ "strict", no_argument, NULL, 'S' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *cfg_path = NULL, *iface = NULL, *sock = NULL;
	enum fgx_mode mode = FGX_MODE_AUTO, used;
	uint32_t ct_cap = 0;
	long mtu_opt = -1;
	bool strict = false;
	static struct xd d;
	struct fg_cfg_err ev[16];
	struct fg_cfg_errs errs = { .v = ev, .max = 16, .n = 0 };
	struct fgx_params par;
	struct fg_ctl_server *srv = NULL;
	char err[512];
	int ifindex, rc, o;

	while ((o = getopt_long(argc, argv, "c:i:s:h", lo, NULL)) != -1) {
		switch (o) {
		case 'c': cfg_path = optarg; break;
		case 'i': iface = optarg; break;
		case 's': sock = optarg; break;
		case 'm':
			if (!strcmp(optarg, "auto"))
				mode = FGX_MODE_AUTO;
			else if (!strcmp(optarg, "native"))
				mode = FGX_MODE_NATIVE;
			else if (!strcmp(optarg, "generic"))
				mode = FGX_MODE_GENERIC;
			else {
				fprintf(stderr, "flowgate-xdp: --mode %s: use auto, native or generic\n", optarg);
				return 2;
			}
			break;
		case 'C': ct_cap = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'M': mtu_opt = strtol(optarg, NULL, 0); break;
		case 'S': strict = true; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (!cfg_path || !iface) {
		usage(stderr);
		return 2;
	}
	if (strlen(iface) >= IF_NAMESIZE || !(ifindex = (int)if_nametoindex(iface))) {
		fprintf(stderr, "flowgate-xdp: no interface '%s'\n", iface);
		return 1;
	}
	snprintf(d.ifname, sizeof(d.ifname), "%s", iface);
	pthread_mutex_init(&d.cfg_lock, NULL);
	rc = fg_config_load(cfg_path, &d.cfg, &errs);
	if (rc == 0)
		rc = fg_config_validate(&d.cfg, cfg_path, &errs);
	if (rc) {
		for (unsigned int i = 0; i < errs.n && i < errs.max; i++)
			fprintf(stderr, "%s:%u: %s\n", cfg_path, ev[i].line, ev[i].msg);
		fprintf(stderr, "flowgate-xdp: config %s refused\n", cfg_path);
		return 1;
	}
	fg_config_assign_ids(&d.cfg, NULL);
	rc = if_info(iface, d.mac, &d.mtu);
	if (rc) {
		fprintf(stderr, "flowgate-xdp: %s: cannot read MAC/MTU: %s\n", iface, strerror(-rc));
		return 1;
	}
	if (d.cfg.n_ports && memcmp(d.cfg.ports[0].mac, "\0\0\0\0\0\0", 6))
		memcpy(d.mac, d.cfg.ports[0].mac, 6);
	if (mtu_opt >= 0)
		d.mtu = (uint16_t)mtu_opt;
	if (d.mtu > 3498) {
		/* single-buffer XDP: frame (MTU + 14 + 4) within one page less
		 * headroom; drivers refuse to attach above that anyway */
		fprintf(stderr, "flowgate-xdp: %s: MTU %u is above what single-buffer XDP "
			"takes (3498): lower it (ip link set %s mtu 3498)\n", iface, d.mtu, iface);
		return 1;
	}
	memset(&par, 0, sizeof(par));
	par.ct_capacity = ct_cap ? ct_cap : d.cfg.ct_capacity;
	par.pass_unknown = !strict;
	if (!d.cfg.ct_capacity)
		d.cfg.ct_capacity = par.ct_capacity ? par.ct_capacity : FGX_CT_DEFAULT;
	rc = fgx_open(&par, &d.x);
	if (rc) {
		fprintf(stderr, "flowgate-xdp: cannot load the XDP program: %s%s\n", strerror(-rc),
			rc == -EPERM ? " (needs root / CAP_BPF + CAP_NET_ADMIN)" : "");
		return 1;
	}
	rc = fgx_apply(d.x, &d.cfg, d.mac, d.mtu, 0, err, sizeof(err));
	if (rc) {
		fprintf(stderr, "flowgate-xdp: %s\n", err[0] ? err : strerror(-rc));
		fgx_close(d.x);
		return 1;
	}
	if (d.cfg.services && d.cfg.n_services) {
		struct fg_health_params hp = { .set_health = health_set, .ctx = &d };

		rc = fg_health_create(&hp, &d.cfg, &d.health);
		if (rc == 0)
			rc = fg_health_start(d.health);
		if (rc) {
			fprintf(stderr, "flowgate-xdp: health checker: %s\n", strerror(-rc));
			fgx_close(d.x);
			return 1;
		}
	}
	{
		struct fg_ctl_ops ops = {
			.config_get = op_config_get,
			.config_apply = op_config_apply,
			.config_check = op_config_check,
			.flows_walk = op_flows_walk,
			.flows_count = op_flows_count,
			.stats = op_stats,
		};
		static struct fg_ctl_ops ops_s;
		struct fg_ctl_server_params sp;

		ops_s = ops;
		memset(&sp, 0, sizeof(sp));
		sp.socket_path = sock ? sock : d.cfg.control_socket[0] ? d.cfg.control_socket : NULL;
		sp.ops = &ops_s;
		sp.ctx = &d;
		sp.health = d.health;
		rc = fg_ctl_server_create(&sp, &srv);
		if (rc == 0)
			rc = fg_ctl_server_start(srv);
		if (rc) {
			fprintf(stderr, "flowgate-xdp: control socket: %s\n", strerror(-rc));
			fg_health_destroy(d.health);
			fgx_close(d.x);
			return 1;
		}
	}
	rc = fgx_attach(d.x, ifindex, mode, &used);
	if (rc) {
		fprintf(stderr, "flowgate-xdp: cannot attach to %s: %s\n", iface, strerror(-rc));
		fg_ctl_server_destroy(srv);
		fg_health_destroy(d.health);
		fgx_close(d.x);
		return 1;
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	printf("flowgate-xdp: running on %s (%s XDP), %u services, MTU %u, %d CPUs\n",
	       iface, used == FGX_MODE_NATIVE ? "native" : "generic", d.cfg.n_services,
	       d.mtu, fgx_ncpus());
	fflush(stdout);
	while (!g_stop)
		pause();

	fgx_detach(d.x);
	fg_ctl_server_destroy(srv);
	if (d.health) {
		fg_health_stop(d.health);
		fg_health_destroy(d.health);
	}
	{
		uint64_t sum[FGX_CNT_N];

		if (fgx_counters(d.x, sum, NULL) == 0) {
			printf("flowgate-xdp: final counters\n");
			for (int i = 0; i < FG_CC_MAX; i++)
				printf("  %-22s %llu\n", fg_core_counter_names[i],
				       (unsigned long long)sum[i]);
			for (int r = 1; r < FG_DROP_MAX; r++)
				if (sum[FGX_CNT_DROP(r)])
					printf("  drop %-17s %llu\n", fg_drop_names[r],
					       (unsigned long long)sum[FGX_CNT_DROP(r)]);
		}
	}
	fgx_close(d.x);
	fg_config_free(&d.cfg);
	printf("flowgate-xdp: stopped cleanly\n");
	return 0;
}
