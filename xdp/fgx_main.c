/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * flowgate-xdp: flowgate's DSR balancer as an XDP program on an interface
 * the kernel keeps (docs/XDP.md, flowgate-xdp(8)).  Same config file and
 * validator as the DPDK daemon, same control socket protocol, same health
 * checker, same /metrics names (fgx_view.c, fgx_metrics.c).
 *
 *   flowgate-xdp -c CONFIG -i IFACE [-s SOCKET] [--mode auto|native|generic]
 *                [--ct-capacity N] [--mtu N] [--strict] [--pin-dir DIR]
 *                [--metrics ADDR:PORT] [--log-syslog]
 *   flowgate-xdp detach IFACE [--pin-dir DIR]
 *
 * Restarts keep the flows: the maps and the bpf_link are pinned in DIR
 * (default /sys/fs/bpf/flowgate/IFACE), so the program forwards while no
 * flowgate-xdp runs, and the next start adopts them (fgx_load.h,
 * "Restarts").  SIGTERM/SIGINT stop the control plane and leave the
 * program running; `detach` removes it.  SIGHUP re-reads the -c file and
 * applies it as `fgctl config apply` does.  Under systemd (Type=notify):
 * READY=1, RELOADING=1, STOPPING=1, and WATCHDOG=1 while the program is
 * attached.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <bpf/libbpf.h>
#include <linux/if_link.h>

#include "fg_config_parse.h"
#include "fg_daemon.h"
#include "fg_counters.h"
#include "fg_logline.h"
#include "fg_opt.h"
#include "fg_promserve.h"
#include "fgx_daemon.h"
#include "fgx_maps.h"

#ifndef FG_VERSION
#define FG_VERSION "unknown"
#endif
#define PIN_ROOT "/sys/fs/bpf/flowgate"
/* single-buffer XDP: frame (MTU + 14 + 4) within one page less headroom */
#define FGX_MTU_MAX 3498

struct opts {
	const char *cfg_path, *iface, *sock, *metrics, *pin_dir;
	enum fgx_mode mode;
	uint32_t ct_cap;
	long mtu;
	bool strict, syslog, help, version;
	unsigned int bad;          /* values refused */
	char pin_buf[256];
};

#define FGX_STR_(x) #x
#define FGX_STR(x) FGX_STR_(x)

/*
 * The options, one table (control/fg_opt.h: getopt's tables, --help and
 * the refusals come from it, as flowgate's from FG_OPT_LIST):
 * X(id, long name, short, has_arg, kind, min, max, metavar/range, default,
 *   help, a value it refuses)
 */
#define FGX_OPT_LIST(X) \
	FG_OPT_COMMON_HEAD(X, "flowgate config file (the DPDK daemon's format; DSR ipip/gue " \
	  "services with the maglev scheduler)", \
	  "the config's, else " FG_CTL_DEFAULT_SOCKET, "control socket") \
	X(IFACE, "iface", 'i', required_argument, FG_OPT_STR, 0, 0, "IFACE", "", \
	  "interface to attach to (its MAC and MTU are used unless the config's port sets " \
	  "a MAC / --mtu)", "") \
	X(MODE, "mode", 0, required_argument, FG_OPT_ENUM, 0, 0, "auto|native|generic", "auto", \
	  "auto takes native where the driver and its XDP_TX path work, else generic, and " \
	  "says why; native is refused where XDP_TX cannot work (a veth whose peer has no " \
	  "XDP program)", "fast") \
	X(CT_CAPACITY, "ct-capacity", 0, required_argument, FG_OPT_UINT, 1024, 1u << 30, "N", \
	  "the config's ct_capacity, else " FGX_STR(FGX_CT_DEFAULT), \
	  "IPv4 conntrack entries (IPv6: N/4)", "10") \
	X(MTU, "mtu", 0, required_argument, FG_OPT_UINT, 68, FGX_MTU_MAX, "N", "the interface's", \
	  "egress L3 MTU for the encapsulation check", "9") \
	X(STRICT, "strict", 0, no_argument, FG_OPT_FLAG, 0, 0, "", "off", \
	  "drop packets to addresses that are no VIP (unknown_vip) instead of passing them " \
	  "to the kernel", "") \
	X(PIN_DIR, "pin-dir", 0, required_argument, FG_OPT_STR, 0, 0, "DIR", PIN_ROOT "/IFACE", \
	  "bpffs directory of the pinned maps and link, which keep the program forwarding " \
	  "across restarts", "") \
	FG_OPT_COMMON_METRICS(X, "Prometheus endpoint (GET /metrics), e.g. 127.0.0.1:9469") \
	FG_OPT_COMMON_TAIL(X)

enum opt_id { FGX_OPT_LIST(FG_OPT_ID) OPT_MAX };

static const struct fg_opt_def opt_defs[OPT_MAX] = { FGX_OPT_LIST(FG_OPT_ROW) };

static const struct fg_opt_table opt_table = {
	.prog = "flowgate-xdp", .defs = opt_defs, .n = OPT_MAX, .unknown_hint = "",
};

static void usage(FILE *f)
{
	fprintf(f, "usage: flowgate-xdp -c CONFIG -i IFACE [options]\n"
		"       flowgate-xdp detach IFACE [--pin-dir DIR]\n");
	fg_opt_usage(f, &opt_table, NULL);
	fprintf(f, "detach IFACE: removes the program (its pinned link), the pinned maps "
		"and DIR.\n");
}

static void version(void)
{
	printf("flowgate-xdp %s (libbpf %u.%u%s)\n", FG_VERSION, libbpf_major_version(),
	       libbpf_minor_version(),
#ifdef FGX_TEST_LAYOUT_NEXT
	       ", test build: next conntrack layout"
#else
	       ""
#endif
	       );
}

static int opt_apply(void *ctx, unsigned int id, const char *arg)
{
	struct opts *o = ctx;
	uint64_t v = 0;
	int m;

	switch ((enum opt_id)id) {
	case OPT_CONFIG: o->cfg_path = arg; break;
	case OPT_SOCKET: o->sock = arg; break;
	case OPT_IFACE: o->iface = arg; break;
	case OPT_MODE:
		m = fg_opt_enum(&opt_table, stderr, id, arg);
		o->bad += m < 0;
		o->mode = m < 0 ? o->mode : (enum fgx_mode)fgx_mode_parse(arg);
		break;
	case OPT_CT_CAPACITY:
	case OPT_MTU:
		o->bad += !fg_opt_uint(&opt_table, stderr, id, arg, &v);
		if (id == OPT_MTU)
			o->mtu = (long)v;
		else
			o->ct_cap = (uint32_t)v;
		break;
	case OPT_STRICT: o->strict = true; break;
	case OPT_PIN_DIR: o->pin_dir = arg; break;
	case OPT_METRICS: o->metrics = arg; break;
	case OPT_LOG_SYSLOG: o->syslog = true; break;
	case OPT_VERSION: o->version = true; break;
	case OPT_HELP: o->help = true; break;
	case OPT_MAX: break;
	}
	return 0;
}

/* 0 = go on, 1 = exit 0 (help / version), 2 = usage error. */
static int opts_parse(int argc, char **argv, struct opts *o)
{
	int rc;

	memset(o, 0, sizeof(*o));
	o->mtu = -1;
	rc = fg_opt_getopt(&opt_table, argc, argv, stderr, opt_apply, o);
	if (o->help || o->version) {
		o->help ? usage(stdout) : version();
		return 1;
	}
	if (rc != 0 || o->bad) {
		fprintf(stderr, "flowgate-xdp: 'flowgate-xdp --help' lists the options\n");
		return 2;
	}
	if (!o->pin_dir && o->iface) {
		snprintf(o->pin_buf, sizeof(o->pin_buf), "%s/%s", PIN_ROOT, o->iface);
		o->pin_dir = o->pin_buf;
	}
	return 0;
}

/* `flowgate-xdp detach IFACE [--pin-dir DIR]` */
static int cmd_detach(int argc, char **argv)
{
	struct opts o;
	char msg[512];
	int rc;

	if (argc < 3 || argv[2][0] == '-') {
		usage(stderr);
		return 2;
	}
	rc = opts_parse(argc - 2, argv + 2, &o);
	if (rc)
		return rc == 1 ? 0 : rc;
	o.iface = argv[2];
	if (!o.pin_dir) {
		snprintf(o.pin_buf, sizeof(o.pin_buf), "%s/%s", PIN_ROOT, o.iface);
		o.pin_dir = o.pin_buf;
	}
	rc = fgx_remove(o.pin_dir, (int)if_nametoindex(o.iface), msg, sizeof(msg));
	printf("flowgate-xdp detach %s: %s\n", o.iface, msg);
	return rc && rc != -ENOENT ? 1 : 0;
}

/* ---- start-up ---------------------------------------------------------- */

static int if_info(const char *name, uint8_t mac[6], uint16_t *mtu)
{
	struct ifreq ifr;
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), rc = 0;

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

static int config_load(struct xd *d, const struct opts *o)
{
	struct fg_cfg_err ev[16];
	struct fg_cfg_errs errs = { .v = ev, .max = 16, .n = 0 };
	int rc = fg_config_load(o->cfg_path, &d->cfg, &errs);

	if (rc == 0)
		rc = fg_config_validate(&d->cfg, o->cfg_path, &errs);
	if (rc) {
		for (unsigned int i = 0; i < errs.n && i < errs.max; i++)
			fg_logline(LOG_ERR, "%s:%u: %s", o->cfg_path, ev[i].line, ev[i].msg);
		fg_logline(LOG_ERR, "flowgate-xdp: config %s refused", o->cfg_path);
		return rc;
	}
	fg_config_assign_ids(&d->cfg, NULL);
	rc = if_info(o->iface, d->mac, &d->mtu);
	if (rc) {
		fg_logline(LOG_ERR, "flowgate-xdp: %s: cannot read MAC/MTU: %s", o->iface,
			   strerror(-rc));
		return rc;
	}
	if (d->cfg.n_ports && memcmp(d->cfg.ports[0].mac, "\0\0\0\0\0\0", 6))
		memcpy(d->mac, d->cfg.ports[0].mac, 6);
	if (o->mtu >= 0)
		d->mtu = (uint16_t)o->mtu;
	if (d->mtu > FGX_MTU_MAX) {
		/* drivers refuse to attach above that anyway */
		fg_logline(LOG_ERR, "flowgate-xdp: %s: MTU %u is above what single-buffer XDP "
			   "takes (%u): lower it (ip link set %s mtu %u)", o->iface, d->mtu,
			   FGX_MTU_MAX, o->iface, FGX_MTU_MAX);
		return -EINVAL;
	}
	return 0;
}

/* One flowgate-xdp per pin directory: the second would take the first's
 * link over under it.  The lock goes with the process. */
static int pin_lock(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0)
		return 0;   /* not there yet: fgx_open creates it */
	if (flock(fd, LOCK_EX | LOCK_NB) == 0)
		return fd;
	fg_logline(LOG_ERR, "flowgate-xdp: another flowgate-xdp runs on %s (its pin "
		   "directory is locked): stop it first", dir);
	close(fd);
	return -EBUSY;
}

/* Loader, maps from the config, health checker, control socket. */
static int start(struct xd *d, const struct opts *o)
{
	struct fgx_params par = { .pass_unknown = !o->strict, .pin_dir = o->pin_dir };
	struct fg_health_params hp = { .set_health = fgx_view_health_set, .ctx = d };
	struct fg_ctl_server_params sp;
	char err[768], rep[512];
	int rc;

	par.ct_capacity = o->ct_cap ? o->ct_cap : d->cfg.ct_capacity;
	if (!d->cfg.ct_capacity)
		d->cfg.ct_capacity = par.ct_capacity ? par.ct_capacity : FGX_CT_DEFAULT;
	rc = fgx_open(&par, &d->x, err, sizeof(err));
	if (rc) {
		fg_logline(LOG_ERR, "flowgate-xdp: %s", err);
		return rc;
	}
	fgx_open_report(d->x, rep, sizeof(rep));
	fg_logline(LOG_NOTICE, "flowgate-xdp: maps: %s", rep);
	rc = fgx_apply(d->x, &d->cfg, d->mac, d->mtu, 0, err, sizeof(err));
	if (rc) {
		fg_logline(LOG_ERR, "flowgate-xdp: %s", err[0] ? err : strerror(-rc));
		return rc;
	}
	rc = fg_health_create(&hp, &d->cfg, &d->health);
	if (rc == 0)
		rc = fg_health_start(d->health);
	if (rc) {
		fg_logline(LOG_ERR, "flowgate-xdp: health checker: %s", strerror(-rc));
		return rc;
	}
	memset(&sp, 0, sizeof(sp));
	sp.socket_path = o->sock ? o->sock : d->cfg.control_socket[0] ? d->cfg.control_socket :
		NULL;
	sp.ops = &fgx_view_ops;
	sp.ctx = d;
	sp.health = d->health;
	sp.audit = fgx_view_audit;
	sp.config_path = o->cfg_path;
	rc = fg_ctl_server_create(&sp, &d->srv);
	if (rc == 0)
		rc = fg_ctl_server_start(d->srv);
	if (rc)
		fg_logline(LOG_ERR, "flowgate-xdp: control socket %s: %s",
			   sp.socket_path ? sp.socket_path : FG_CTL_DEFAULT_SOCKET, strerror(-rc));
	return rc;
}

static void stop(struct xd *d)
{
	fg_ctl_server_destroy(d->srv);
	d->srv = NULL;
	if (d->health) {
		fg_health_stop(d->health);
		fg_health_destroy(d->health);
		d->health = NULL;
	}
}

static void final_counters(struct xd *d)
{
	uint64_t sum[FGX_CNT_N];

	if (fgx_counters(d->x, sum, NULL))
		return;
	printf("flowgate-xdp: counters (since the maps were created)\n");
	for (int i = 0; i < FG_CC_MAX; i++)
		printf("  %-22s %llu\n", fg_core_counter_names[i], (unsigned long long)sum[i]);
	for (int r = 1; r < FG_DROP_MAX; r++)
		if (sum[FGX_CNT_DROP(r)])
			printf("  drop %-17s %llu\n", fg_drop_names[r],
			       (unsigned long long)sum[FGX_CNT_DROP(r)]);
	fflush(stdout);
}

/* ---- serving ----------------------------------------------------------- */

/* One log line of the shared serving loop (fg_daemon.h). */
static void xdp_log(int prio, const char *line)
{
	fg_logline(prio, "flowgate-xdp: %s", line);
}

struct serve_arg {
	const struct opts *o;
	int ifindex;
};

/* The watchdog pings while the program is attached: someone who detached
 * it makes systemd restart the unit, which attaches again. */
static bool xdp_alive(void *arg, char *why, size_t whylen)
{
	const struct serve_arg *a = arg;
	uint32_t id = 0;

	if (bpf_xdp_query_id(a->ifindex, 0, &id) == 0 && id)
		return true;
	snprintf(why, whylen, "no XDP program on %s any more", a->o->iface);
	return false;
}

static unsigned int xdp_poll(void *arg)
{
	(void)arg;
	return 100000;
}

static void serve(struct xd *d, const struct opts *o, int ifindex)
{
	struct serve_arg a = { .o = o, .ifindex = ifindex };
	struct fg_daemon life = {
		.srv = d->srv, .config_file = o->cfg_path, .log = xdp_log,
		.alive = xdp_alive, .poll = xdp_poll, .arg = &a,
	};

	fg_daemon_serve(&life);
}

static int run(const struct opts *o)
{
	static struct xd d;
	struct fg_promserve *metrics = NULL;
	char err[768];
	int ifindex, lock = -1, rc;

	if (strlen(o->iface) >= IF_NAMESIZE || !(ifindex = (int)if_nametoindex(o->iface))) {
		fg_logline(LOG_ERR, "flowgate-xdp: no interface '%s'", o->iface);
		return 1;
	}
	snprintf(d.ifname, sizeof(d.ifname), "%s", o->iface);
	pthread_mutex_init(&d.cfg_lock, NULL);
	fgx_view_gate_init(&d);
	rc = config_load(&d, o);
	if (rc == 0)
		rc = lock = pin_lock(o->pin_dir);
	if (rc >= 0)
		rc = start(&d, o);
	if (rc == 0) {
		rc = fgx_attach(d.x, ifindex, o->mode, &d.att, err, sizeof(err));
		if (rc)
			fg_logline(LOG_ERR, "flowgate-xdp: cannot attach to %s: %s", o->iface,
				   err[0] ? err : strerror(-rc));
	}
	if (rc == 0 && o->metrics) {
		rc = fg_promserve_start(o->metrics, "fgx-metrics", fgx_view_metrics, &d, &metrics);
		if (rc)
			fg_logline(LOG_ERR, "flowgate-xdp: --metrics %s: %s", o->metrics,
				   strerror(-rc));
	}
	if (rc == 0) {
		fg_logline(LOG_NOTICE, "flowgate-xdp: running on %s (%s XDP), %u services, MTU %u, "
			   "%d CPUs", o->iface, fgx_mode_name(d.att.mode),
			   d.cfg.n_services, d.mtu, fgx_ncpus());
		fg_logline(LOG_NOTICE, "flowgate-xdp: attach: %s", d.att.why);
		serve(&d, o, ifindex);
		fg_daemon_notify(&(struct fg_daemon){ .log = xdp_log }, "STOPPING=1");
		fg_logline(LOG_NOTICE, "flowgate-xdp: signal %d: stopping the control plane; the "
			   "program keeps forwarding on %s (`flowgate-xdp detach %s` removes it)",
			   (int)fg_daemon_stop_sig, o->iface, o->iface);
	}
	fg_promserve_stop(metrics);
	stop(&d);
	if (rc == 0)
		final_counters(&d);
	fgx_view_free(&d);
	fgx_close(d.x);
	fg_config_free(&d.cfg);
	if (lock > 0)
		close(lock);
	if (rc == 0)
		fg_logline(LOG_NOTICE, "flowgate-xdp: stopped cleanly");
	return rc ? 1 : 0;
}

int main(int argc, char **argv)
{
	struct opts o;
	int rc;

	if (argc > 1 && !strcmp(argv[1], "detach"))
		return cmd_detach(argc, argv);
	rc = opts_parse(argc, argv, &o);
	if (rc)
		return rc == 1 ? 0 : rc;
	if (!o.cfg_path || !o.iface) {
		usage(stderr);
		return 2;
	}
	fg_logline_open(o.syslog ? FG_LOGLINE_SYSLOG : FG_LOGLINE_STDERR, "flowgate-xdp");
	fg_daemon_signals();
	rc = run(&o);
	fg_logline_close();
	return rc;
}
