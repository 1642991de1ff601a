/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The interface side of flowgate-xdp (fgx_load.h): the bpf_link (created
 * and pinned, or taken over from a running flowgate-xdp and its program
 * swapped), the attach mode and why, removal, the interface's counters.
 *
 * Why a bpf_link: a program attached through netlink stays when its
 * process dies and blocks the next attach ("XDP program already
 * attached"); a link pinned in bpffs stays too, but as an object the next
 * start opens and updates (bpf_link_update: one atomic program swap),
 * and `flowgate-xdp detach` removes by name.
 *
 * Interface facts come from rtnetlink (they must be the namespace's own:
 * /sys/class/net is not, outside `ip netns exec`), the driver's XDP TX
 * errors from its ethtool statistics.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <linux/ethtool.h>
#include <linux/if_link.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sockios.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "fgx_private.h"
#include "fg_xlist.h"

const char *const fgx_port_counter_names[FGX_PC_MAX] = {
	FGX_PORT_COUNTER_LIST(FG_XL3_NAME)
};
const char *const fgx_port_counter_help[FGX_PC_MAX] = {
	FGX_PORT_COUNTER_LIST(FG_XL3_THIRD)
};

/* ---- rtnetlink ---------------------------------------------------------- */

struct link_q {
	char kind[16];          /* IFLA_INFO_KIND ("veth", ...; "" = none) */
	int peer;               /* IFLA_LINK (0 = none) */
	int peer_nsid;          /* IFLA_LINK_NETNSID (-1 = ours) */
	int xdp_attached;       /* IFLA_XDP_ATTACHED */
	struct rtnl_link_stats64 st;
	int has_st;
};

static void rta_walk(struct rtattr *a, int len, struct link_q *q, int depth)
{
	for (; RTA_OK(a, len); a = RTA_NEXT(a, len)) {
		void *d = RTA_DATA(a);
		int t = a->rta_type & ~NLA_F_NESTED;

		if (depth == 0 && t == IFLA_LINK && RTA_PAYLOAD(a) >= 4)
			q->peer = *(int *)d;
		else if (depth == 0 && t == IFLA_LINK_NETNSID && RTA_PAYLOAD(a) >= 4)
			q->peer_nsid = *(int *)d;
		else if (depth == 0 && t == IFLA_STATS64 && RTA_PAYLOAD(a) >= sizeof(q->st)) {
			memcpy(&q->st, d, sizeof(q->st));
			q->has_st = 1;
		} else if (depth == 0 && t == IFLA_XDP)
			rta_walk(d, (int)RTA_PAYLOAD(a), q, 'x');
		else if (depth == 'x' && t == IFLA_XDP_ATTACHED && RTA_PAYLOAD(a) >= 1)
			q->xdp_attached = *(uint8_t *)d;
		else if (depth == 0 && t == IFLA_LINKINFO)
			rta_walk(d, (int)RTA_PAYLOAD(a), q, 'l');
		else if (depth == 'l' && t == IFLA_INFO_KIND)
			snprintf(q->kind, sizeof(q->kind), "%.*s", (int)RTA_PAYLOAD(a),
				 (const char *)d);
	}
}

/* RTM_GETLINK of @p ifindex, in the namespace of id @p nsid (-1: ours). */
static int link_query(int ifindex, int nsid, struct link_q *q)
{
	struct {
		struct nlmsghdr nh;
		struct ifinfomsg ifi;
		char attrs[16];
	} req;
	char *buf;
	int fd, rc = -ENOENT;
	ssize_t n;

	memset(q, 0, sizeof(*q));
	q->peer_nsid = -1;
	memset(&req, 0, sizeof(req));
	req.nh.nlmsg_len = NLMSG_LENGTH(sizeof(req.ifi));
	req.nh.nlmsg_type = RTM_GETLINK;
	req.nh.nlmsg_flags = NLM_F_REQUEST;
	req.nh.nlmsg_seq = 1;
	req.ifi.ifi_family = AF_UNSPEC;
	req.ifi.ifi_index = ifindex;
	if (nsid >= 0) {
		struct rtattr *a = (struct rtattr *)((char *)&req + NLMSG_ALIGN(req.nh.nlmsg_len));

		a->rta_type = IFLA_TARGET_NETNSID;
		a->rta_len = RTA_LENGTH(sizeof(int));
		memcpy(RTA_DATA(a), &nsid, sizeof(int));
		req.nh.nlmsg_len = NLMSG_ALIGN(req.nh.nlmsg_len) + RTA_ALIGN(a->rta_len);
	}
	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	buf = malloc(65536);
	if (fd < 0 || !buf || send(fd, &req, req.nh.nlmsg_len, 0) < 0) {
		rc = fd < 0 || !buf ? -ENOMEM : -errno;
		goto out;
	}
	n = recv(fd, buf, 65536, 0);
	for (struct nlmsghdr *h = (struct nlmsghdr *)buf; n > 0 && NLMSG_OK(h, (size_t)n);
	     h = NLMSG_NEXT(h, n)) {
		if (h->nlmsg_type == NLMSG_ERROR) {
			rc = ((struct nlmsgerr *)NLMSG_DATA(h))->error;
			break;
		}
		if (h->nlmsg_type != RTM_NEWLINK)
			continue;
		rta_walk(IFLA_RTA(NLMSG_DATA(h)), (int)IFLA_PAYLOAD(h), q, 0);
		rc = 0;
		break;
	}
out:
	free(buf);
	if (fd >= 0)
		close(fd);
	return rc;
}

/* Whether native XDP_TX on @p ifindex reaches the wire, as far as the
 * kernel shows: a veth sends XDP_TX frames into its peer's XDP receive
 * queue, which exists only while the peer runs an XDP program (or has
 * GRO on, which rtnetlink does not show: counted as absent).  Other
 * drivers that take native XDP transmit XDP_TX themselves.  1 = works,
 * 0 = not (why says so). */
static int native_tx_ok(int ifindex, char *why, size_t len)
{
	char name[IF_NAMESIZE] = "?";
	struct link_q q, pq;

	if (link_query(ifindex, -1, &q) || strcmp(q.kind, "veth"))
		return 1;
	if_indextoname((unsigned int)ifindex, name);
	if (q.peer > 0 && link_query(q.peer, q.peer_nsid, &pq) == 0 && pq.xdp_attached)
		return 1;
	snprintf(why, len, "%s is a veth whose peer (ifindex %d%s) has no XDP program: native "
		 "XDP_TX would fail for every forwarded packet (xdp_tx_errors in `ethtool -S` and "
		 "fgctl stats) while "
		 "the program counts it as sent", name, q.peer,
		 q.peer_nsid >= 0 ? ", another namespace" : "");
	return 0;
}

static enum fgx_mode mode_of(uint8_t attach_mode)
{
	return attach_mode == XDP_ATTACHED_DRV || attach_mode == XDP_ATTACHED_HW ?
	       FGX_MODE_NATIVE : FGX_MODE_GENERIC;
}

static const char *const mode_names[] = { "auto", "native", "generic" };

const char *fgx_mode_name(enum fgx_mode m)
{
	return (unsigned int)m < 3 ? mode_names[m] : "auto";
}

int fgx_mode_parse(const char *s)
{
	for (int m = 0; m < 3; m++)
		if (!strcmp(s, mode_names[m]))
			return m;
	return -EINVAL;
}

static int prog_info(int fd, struct bpf_prog_info *pi)
{
	uint32_t len = sizeof(*pi);

	memset(pi, 0, sizeof(*pi));
	return bpf_obj_get_info_by_fd(fd, pi, &len) ? -errno : 0;
}

/* ---- attach ------------------------------------------------------------- */

/* Something attached without a link: say what and how to remove it. */
static int busy(int ifindex, const struct bpf_xdp_query_opts *q, char *err, size_t errlen)
{
	uint32_t id = q->prog_id ? q->prog_id : q->drv_prog_id ? q->drv_prog_id : q->skb_prog_id;
	struct bpf_prog_info pi;
	char name[IF_NAMESIZE] = "?";
	int fd = bpf_prog_get_fd_by_id(id);

	memset(&pi, 0, sizeof(pi));
	if (fd >= 0) {
		prog_info(fd, &pi);
		close(fd);
	}
	if_indextoname((unsigned int)ifindex, name);
	snprintf(err, errlen, "%s already runs XDP program %u (%s) attached without a "
		 "pinned flowgate link (a flowgate-xdp older than its bpf_link, or another "
		 "tool): %s", name, id, pi.name[0] ? pi.name : "?",
		 !strcmp(pi.name, "fg_xdp") ? "`flowgate-xdp detach IFACE` removes it" :
		 "remove it with `ip link set dev IFACE xdp off` if it is not needed");
	return -EBUSY;
}

static int link_new(struct fgx *x, int ifindex, enum fgx_mode mode, char *err, size_t errlen)
{
	LIBBPF_OPTS(bpf_link_create_opts, o,
		    .flags = mode == FGX_MODE_NATIVE ? XDP_FLAGS_DRV_MODE : XDP_FLAGS_SKB_MODE);
	char path[320];
	int fd = bpf_link_create(fgx_prog_fd(x), ifindex, BPF_XDP, &o);

	if (fd < 0)
		return -errno;
	if (x->pin_dir[0]) {
		snprintf(path, sizeof(path), "%s/link", x->pin_dir);
		if (bpf_obj_pin(fd, path)) {
			int rc = -errno;

			snprintf(err, errlen, "cannot pin the link at %s: %s", path, strerror(errno));
			close(fd);      /* the only reference: detaches */
			return rc;
		}
	}
	x->link_fd = fd;
	return 0;
}

static int attach_new(struct fgx *x, int ifindex, enum fgx_mode mode,
		      struct fgx_attach_info *info, char *err, size_t errlen)
{
	LIBBPF_OPTS(bpf_xdp_query_opts, q);
	char why[sizeof(info->why)] = "";
	int tx_ok, rc;

	if (bpf_xdp_query(ifindex, 0, &q) == 0 && q.attach_mode != XDP_ATTACHED_NONE)
		return busy(ifindex, &q, err, errlen);
	tx_ok = mode == FGX_MODE_GENERIC ? 1 : native_tx_ok(ifindex, why, sizeof(why));
	if (mode == FGX_MODE_NATIVE && !tx_ok) {
		snprintf(err, errlen, "--mode native refused: %s; attach an XDP program to the "
			 "peer (one that passes everything will do) or use --mode generic", why);
		return -EOPNOTSUPP;
	}
	if (mode != FGX_MODE_GENERIC && tx_ok) {
		rc = link_new(x, ifindex, FGX_MODE_NATIVE, err, errlen);
		if (rc == 0) {
			info->mode = FGX_MODE_NATIVE;
			snprintf(info->why, sizeof(info->why), "native: the driver takes it");
			return 0;
		}
		if (mode == FGX_MODE_NATIVE || err[0]) {
			if (!err[0])
				snprintf(err, errlen, "native XDP refused by the driver: %s",
					 strerror(-rc));
			return rc;
		}
		snprintf(why, sizeof(why), "the driver has no native XDP (%s)", strerror(-rc));
	}
	rc = link_new(x, ifindex, FGX_MODE_GENERIC, err, errlen);
	if (rc) {
		if (!err[0])
			snprintf(err, errlen, "generic XDP refused: %s", strerror(-rc));
		return rc;
	}
	info->mode = FGX_MODE_GENERIC;
	snprintf(info->why, sizeof(info->why), "generic: %s",
		 mode == FGX_MODE_GENERIC ? "--mode generic" : why);
	return 0;
}

/* A running flowgate-xdp's link: keep its mode, swap its program when
 * this build's differs or uses other maps. */
static int take_over(struct fgx *x, int ifindex, enum fgx_mode mode,
		     struct fgx_attach_info *info, char *err, size_t errlen)
{
	LIBBPF_OPTS(bpf_xdp_query_opts, q);
	struct bpf_prog_info ours, theirs;
	char warn[200] = "";
	int old = bpf_prog_get_fd_by_id(x->live_prog_id), rc = 0;

	bpf_xdp_query(ifindex, 0, &q);
	info->mode = mode_of(q.attach_mode);
	info->adopted = true;
	if (mode != FGX_MODE_AUTO && mode != info->mode)
		snprintf(warn, sizeof(warn), "; --mode %s takes effect after `flowgate-xdp "
			 "detach` (a mode change detaches: connections would break)",
			 fgx_mode_name(mode));
	else if (info->mode == FGX_MODE_NATIVE) {
		char w[160] = "";

		if (!native_tx_ok(ifindex, w, sizeof(w)))
			snprintf(warn, sizeof(warn), "; warning: %s", w);
	}
	if (old < 0 || prog_info(old, &theirs) || prog_info(fgx_prog_fd(x), &ours)) {
		rc = old < 0 ? -ENOENT : -errno;
		snprintf(err, errlen, "the running program %u: %s", x->live_prog_id,
			 strerror(-rc));
		goto out;
	}
	if (memcmp(ours.tag, theirs.tag, sizeof(ours.tag)) || !fgx_pin_all_adopted(x)) {
		LIBBPF_OPTS(bpf_link_update_opts, uo, .flags = BPF_F_REPLACE, .old_prog_fd = old);

		if (bpf_link_update(x->live_link_fd, fgx_prog_fd(x), &uo)) {
			rc = -errno;
			snprintf(err, errlen, "swapping program %u for this build's: %s",
				 x->live_prog_id, strerror(errno));
			goto out;
		}
		info->swapped = true;
	}
	snprintf(info->why, sizeof(info->why), "%s: the running program's link, %s%s",
		 fgx_mode_name(info->mode), info->swapped ? "program swapped for this build's" :
		 "same program kept", warn);
	x->link_fd = x->live_link_fd;
	x->live_link_fd = -1;
out:
	if (old >= 0)
		close(old);
	return rc;
}

int fgx_attach(struct fgx *x, int ifindex, enum fgx_mode mode,
	       struct fgx_attach_info *info, char *err, size_t errlen)
{
	struct fgx_attach_info dummy;
	int rc;

	err[0] = '\0';
	info = info ? info : &dummy;
	memset(info, 0, sizeof(*info));
	if (x->link_fd >= 0)
		return -EALREADY;
	if (x->live_link_fd >= 0) {
		struct bpf_link_info li;
		uint32_t len = sizeof(li);
		char path[320];

		memset(&li, 0, sizeof(li));
		bpf_obj_get_info_by_fd(x->live_link_fd, &li, &len);
		if (li.xdp.ifindex && (int)li.xdp.ifindex != ifindex) {
			snprintf(err, errlen, "the link pinned in %s runs on ifindex %u, not this "
				 "interface (%d): each interface needs its own --pin-dir",
				 x->pin_dir, li.xdp.ifindex, ifindex);
			return -EXDEV;
		}
		if (!li.xdp.ifindex) {
			/* its interface went away: the link is defunct */
			snprintf(path, sizeof(path), "%s/link", x->pin_dir);
			unlink(path);
			close(x->live_link_fd);
			x->live_link_fd = -1;
		}
	}
	rc = x->live_link_fd >= 0 ? take_over(x, ifindex, mode, info, err, errlen) :
				     attach_new(x, ifindex, mode, info, err, errlen);
	if (rc)
		return rc;
	x->ifindex = ifindex;
	x->att = *info;
	fgx_pin_finish(x);
	return 0;
}

/* ---- removal ------------------------------------------------------------ */

int fgx_remove(const char *pin_dir, int ifindex, char *msg, size_t len)
{
	char path[320];
	size_t o = 0;
	int fd, n = 0;

	msg[0] = '\0';
	snprintf(path, sizeof(path), "%s/link", pin_dir);
	fd = bpf_obj_get(path);
	if (fd >= 0) {
		struct bpf_link_info li;
		uint32_t l = sizeof(li);

		memset(&li, 0, sizeof(li));
		bpf_obj_get_info_by_fd(fd, &li, &l);
		bpf_link_detach(fd);
		close(fd);
		unlink(path);
		o += (size_t)snprintf(msg + o, len - o, "link (program %u) detached; ", li.prog_id);
	}
	if (ifindex > 0) {
		LIBBPF_OPTS(bpf_xdp_query_opts, q);
		struct bpf_prog_info pi;
		int pfd;

		if (bpf_xdp_query(ifindex, 0, &q) == 0 && q.attach_mode != XDP_ATTACHED_NONE &&
		    (pfd = bpf_prog_get_fd_by_id(q.prog_id ? q.prog_id : q.drv_prog_id ?
						 q.drv_prog_id : q.skb_prog_id)) >= 0) {
			if (prog_info(pfd, &pi) == 0 && !strcmp(pi.name, "fg_xdp") &&
			    bpf_xdp_detach(ifindex, q.attach_mode == XDP_ATTACHED_SKB ?
					   XDP_FLAGS_SKB_MODE : XDP_FLAGS_DRV_MODE, NULL) == 0)
				o += (size_t)snprintf(msg + o, o < len ? len - o : 0,
						      "program %u (attached without a link) "
						      "detached; ", pi.id);
			close(pfd);
		}
	}
	for (unsigned int i = 0; i < FGX_PIN_N; i++) {
		struct dirent *de;
		DIR *d = opendir(pin_dir);
		size_t nl = strlen(fgx_pin_names[i]);

		while (d && (de = readdir(d))) {
			if (strncmp(de->d_name, fgx_pin_names[i], nl) || de->d_name[nl] != '-')
				continue;
			snprintf(path, sizeof(path), "%s/%s", pin_dir, de->d_name);
			n += unlink(path) == 0;
		}
		if (d)
			closedir(d);
	}
	if (n)
		o += (size_t)snprintf(msg + o, o < len ? len - o : 0, "%d pinned maps removed; ", n);
	if (rmdir(pin_dir) == 0)
		o += (size_t)snprintf(msg + o, o < len ? len - o : 0, "%s removed", pin_dir);
	if (o == 0) {
		snprintf(msg, len, "nothing of flowgate-xdp found (%s, the interface)", pin_dir);
		return -ENOENT;
	}
	return 0;
}

/* ---- the interface's counters ------------------------------------------ */

/* Sum of the driver's statistics named *xdp_tx_err* (veth
 * rx_queue_N_xdp_tx_errors, mlx5 rx_xdp_tx_err, ...). */
static uint64_t ethtool_xdp_tx_errors(const char *ifname)
{
	struct ethtool_sset_info *si;
	struct ethtool_gstrings *gs = NULL;
	struct ethtool_stats *st = NULL;
	struct ifreq ifr;
	uint64_t sum = 0;
	uint32_t n;
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	si = calloc(1, sizeof(*si) + sizeof(uint32_t));
	if (fd < 0 || !si)
		goto out;
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	si->cmd = ETHTOOL_GSSET_INFO;
	si->sset_mask = 1ull << ETH_SS_STATS;
	ifr.ifr_data = (void *)si;
	if (ioctl(fd, SIOCETHTOOL, &ifr) || !si->sset_mask || !(n = si->data[0]) || n > 65536)
		goto out;
	gs = calloc(1, sizeof(*gs) + (size_t)n * ETH_GSTRING_LEN);
	st = calloc(1, sizeof(*st) + (size_t)n * sizeof(uint64_t));
	if (!gs || !st)
		goto out;
	gs->cmd = ETHTOOL_GSTRINGS;
	gs->string_set = ETH_SS_STATS;
	gs->len = n;
	ifr.ifr_data = (void *)gs;
	if (ioctl(fd, SIOCETHTOOL, &ifr))
		goto out;
	st->cmd = ETHTOOL_GSTATS;
	st->n_stats = n;
	ifr.ifr_data = (void *)st;
	if (ioctl(fd, SIOCETHTOOL, &ifr))
		goto out;
	for (uint32_t i = 0; i < n && i < gs->len; i++) {
		char name[ETH_GSTRING_LEN + 1];

		memcpy(name, gs->data + (size_t)i * ETH_GSTRING_LEN, ETH_GSTRING_LEN);
		name[ETH_GSTRING_LEN] = '\0';
		if (strstr(name, "xdp_tx_err"))
			sum += st->data[i];
	}
out:
	free(si);
	free(gs);
	free(st);
	if (fd >= 0)
		close(fd);
	return sum;
}

int fgx_port_counters(const char *ifname, uint64_t *out)
{
	struct link_q q;
	int ifindex = (int)if_nametoindex(ifname), rc;

	memset(out, 0, sizeof(*out) * FGX_PC_MAX);
	if (!ifindex)
		return -ENODEV;
	rc = link_query(ifindex, -1, &q);
	if (rc)
		return rc;
	if (q.has_st) {
		out[FGX_PC_rx_packets] = q.st.rx_packets;
		out[FGX_PC_tx_packets] = q.st.tx_packets;
		out[FGX_PC_rx_missed] = q.st.rx_missed_errors;
		out[FGX_PC_rx_errors] = q.st.rx_errors;
		out[FGX_PC_tx_errors] = q.st.tx_errors;
		out[FGX_PC_tx_dropped] = q.st.tx_dropped;
	}
	out[FGX_PC_xdp_tx_errors] = ethtool_xdp_tx_errors(ifname);
	return 0;
}
