/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Route fate-sharing (`flowgate --announce`): see fg_announce.h.
 *
 * The routes are plain rtnetlink RTM_NEWROUTE / RTM_DELROUTE requests, each
 * acknowledged before the next, from a thread that does nothing else: a
 * slow kernel or a full socket never stalls the main lcore's host path.
 */
#include <errno.h>
#include <net/if.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <sys/socket.h>

#include <rte_ethdev.h>

#include "fg_announce.h"
#include "fg_dp_private.h"
#include "fg_log.h"
#include "fg_sync.h"
#include "fg_worker_private.h"

struct fg_announce {
	struct fg_dp *dp;
	pthread_t thread;
	int nl;                         /* NETLINK_ROUTE socket */
	uint32_t seq;
	uint32_t table;
	int ifindex;
	char ifname[IF_NAMESIZE];
	volatile bool stop;
	bool forwarding;                /* last verdict, for the log */
	/* installed routes; want[] is the scratch of one reconciliation */
	struct fg_addr have[FG_MAX_SERVICES];
	uint32_t n_have;
	struct fg_addr want[FG_MAX_SERVICES];
	uint32_t n_want;
	/* worker loop heartbeat: tx_flushes moves every ~100 us of loop */
	uint64_t beat[FG_MAX_WORKERS];
	uint64_t beat_ms[FG_MAX_WORKERS];
};

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static const char *addr_str(const struct fg_addr *a, char *buf, size_t len)
{
	return inet_ntop(a->family, a->bytes, buf, (socklen_t)len) ? buf : "?";
}

static bool addr_eq(const struct fg_addr *a, const struct fg_addr *b)
{
	return a->family == b->family &&
	       !memcmp(a->bytes, b->bytes, a->family == AF_INET ? 4 : 16);
}

static void nl_attr(struct nlmsghdr *n, size_t max, unsigned short type,
		    const void *data, size_t len)
{
	char *base = (char *)n;
	struct rtattr *rta = (struct rtattr *)(void *)(base + NLMSG_ALIGN(n->nlmsg_len));

	if (NLMSG_ALIGN(n->nlmsg_len) + RTA_SPACE(len) > max)
		return;         /* sized below so that it never happens */
	rta->rta_type = type;
	rta->rta_len = (unsigned short)RTA_LENGTH(len);
	memcpy(RTA_DATA(rta), data, len);
	n->nlmsg_len = NLMSG_ALIGN(n->nlmsg_len) + RTA_SPACE(len);
}

/* One route request, acknowledged.  @return 0 or -errno from the kernel. */
static int route_op(struct fg_announce *a, int cmd, const struct fg_addr *vip)
{
	/* one buffer: the attributes follow the rtmsg in it */
	union {
		struct nlmsghdr n;
		char b[NLMSG_SPACE(sizeof(struct rtmsg)) + 3 * RTA_SPACE(16)];
	} req;
	struct rtmsg *r;
	char buf[1024];
	uint32_t oif = (uint32_t)a->ifindex;
	struct sockaddr_nl to = { .nl_family = AF_NETLINK };
	ssize_t len;

	memset(&req, 0, sizeof(req));
	req.n.nlmsg_len = NLMSG_LENGTH(sizeof(struct rtmsg));
	req.n.nlmsg_type = (unsigned short)cmd;
	req.n.nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK |
			    (cmd == RTM_NEWROUTE ? NLM_F_CREATE | NLM_F_REPLACE : 0);
	req.n.nlmsg_seq = ++a->seq;
	r = NLMSG_DATA(&req.n);
	r->rtm_family = vip->family;
	r->rtm_dst_len = vip->family == AF_INET ? 32 : 128;
	r->rtm_table = a->table < 256 ? (unsigned char)a->table : RT_TABLE_UNSPEC;
	r->rtm_protocol = RTPROT_STATIC;
	r->rtm_scope = RT_SCOPE_LINK;
	r->rtm_type = RTN_UNICAST;
	nl_attr(&req.n, sizeof(req), RTA_TABLE, &a->table, sizeof(a->table));
	nl_attr(&req.n, sizeof(req), RTA_DST, vip->bytes,
		vip->family == AF_INET ? 4 : 16);
	nl_attr(&req.n, sizeof(req), RTA_OIF, &oif, sizeof(oif));
	if (sendto(a->nl, &req, req.n.nlmsg_len, 0, (struct sockaddr *)&to,
		   sizeof(to)) < 0)
		return -errno;
	for (;;) {
		struct pollfd pfd = { .fd = a->nl, .events = POLLIN };

		if (poll(&pfd, 1, 1000) <= 0)
			return -ETIMEDOUT;
		len = recv(a->nl, buf, sizeof(buf), 0);
		if (len < 0)
			return -errno;
		for (struct nlmsghdr *h = (struct nlmsghdr *)buf;
		     NLMSG_OK(h, (unsigned int)len); h = NLMSG_NEXT(h, len)) {
			if (h->nlmsg_seq != a->seq || h->nlmsg_type != NLMSG_ERROR)
				continue;
			return ((struct nlmsgerr *)NLMSG_DATA(h))->error;
		}
	}
}

/* Every worker looped within FG_ANNOUNCE_STALL_MS and port 0 has link. */
static bool forwarding(struct fg_announce *a, uint64_t ms)
{
	struct fg_dp *dp = a->dp;
	struct rte_eth_link link;
	bool ok = true;

	for (unsigned int i = 0; i < dp->n_workers; i++) {
		uint64_t b = __atomic_load_n(&dp->workers[i]->dc[FG_DC_tx_flushes],
					     __ATOMIC_RELAXED);

		if (b != a->beat[i] || a->beat_ms[i] == 0) {
			a->beat[i] = b;
			a->beat_ms[i] = ms;
		} else if (ms - a->beat_ms[i] >= FG_ANNOUNCE_STALL_MS) {
			ok = false;
		}
	}
	memset(&link, 0, sizeof(link));
	if (rte_eth_link_get_nowait(dp->ports[0].port_id, &link) == 0 &&
	    link.link_status == RTE_ETH_LINK_DOWN)
		ok = false;
	return ok;
}

/* want[] += this node's NAT addresses (`sync { nat }`) and those of its
 * dead sync peers (the takeover: fg_sync.h).  Only with a sync block:
 * without one, NAT addresses are routed as the operator set them up. */
static void wanted_nat(struct fg_announce *a)
{
	struct fg_dp *dp = a->dp;

	for (unsigned int i = 0; dp->sync != NULL && i < dp->n_locals; i++) {
		unsigned int p = dp->local_peer[i];

		if (a->n_want >= FG_MAX_SERVICES || p == 0 ||
		    (p != FG_LOCAL_OWN_NAT && !fg_sync_peer_dead(dp, p - 1)))
			continue;
		a->want[a->n_want++] = dp->locals[i];
	}
}

/* want[] = the VIPs with a usable backend (any service on the VIP);
 * nothing while a syncing node waits for its peers' flows. */
static void wanted(struct fg_announce *a)
{
	struct fg_dp *dp = a->dp;
	const struct fg_lb_table *lb;

	a->n_want = 0;
	if (dp->sync != NULL && !fg_sync_ready(dp))
		return;
	pthread_mutex_lock(&dp->cfg_lock);
	lb = __atomic_load_n(&dp->lb, __ATOMIC_ACQUIRE);
	for (uint32_t i = 0; lb != NULL && i < lb->n_services; i++) {
		const struct fg_lb_service *s = &lb->services[i];
		bool dup = false;

		if (s->n_usable == 0)
			continue;
		for (uint32_t j = 0; j < a->n_want && !dup; j++)
			dup = addr_eq(&a->want[j], &s->vip);
		if (!dup && a->n_want < FG_MAX_SERVICES)
			a->want[a->n_want++] = s->vip;
	}
	pthread_mutex_unlock(&dp->cfg_lock);
	wanted_nat(a);
}

/* @p stopping: the daemon stops (fwd is false then). */
static void reconcile(struct fg_announce *a, bool fwd, bool stopping)
{
	char b[INET6_ADDRSTRLEN];
	const char *why = stopping ? "flowgate stops" : fwd ? "no usable backend" :
			  "not forwarding";
	int rc;

	if (fwd)
		wanted(a);
	else
		a->n_want = 0;
	if (fwd != a->forwarding && !stopping)
		FG_LOG(WARNING, "announce: %s", fwd ? "forwarding again" :
		       "a worker stalled or the link is down: withdrawing every VIP");
	a->forwarding = fwd;
	for (uint32_t i = 0; i < a->n_have;) {
		bool keep = false;

		for (uint32_t j = 0; j < a->n_want && !keep; j++)
			keep = addr_eq(&a->have[i], &a->want[j]);
		if (keep) {
			i++;
			continue;
		}
		rc = route_op(a, RTM_DELROUTE, &a->have[i]);
		if (rc < 0 && rc != -ESRCH) {
			FG_LOG(ERR, "announce: withdraw %s: %s (retrying)",
				addr_str(&a->have[i], b, sizeof(b)), strerror(-rc));
			i++;
			continue;
		}
		FG_LOG(NOTICE, "announce: %s withdrawn (%s)",
		       addr_str(&a->have[i], b, sizeof(b)), why);
		a->have[i] = a->have[--a->n_have];
	}
	for (uint32_t j = 0; j < a->n_want; j++) {
		bool have = false;

		for (uint32_t i = 0; i < a->n_have && !have; i++)
			have = addr_eq(&a->have[i], &a->want[j]);
		if (have)
			continue;
		rc = route_op(a, RTM_NEWROUTE, &a->want[j]);
		if (rc < 0) {
			FG_LOG(ERR, "announce: route %s/%u dev %s table %u: "
				"%s (retrying)", addr_str(&a->want[j], b, sizeof(b)),
				a->want[j].family == AF_INET ? 32 : 128, a->ifname,
				a->table, strerror(-rc));
			continue;
		}
		a->have[a->n_have++] = a->want[j];
		FG_LOG(NOTICE, "announce: %s/%u up (dev %s table %u)",
		       addr_str(&a->want[j], b, sizeof(b)),
		       a->want[j].family == AF_INET ? 32 : 128, a->ifname, a->table);
	}
}

static void *announce_main(void *arg)
{
	struct fg_announce *a = arg;

	while (!a->stop) {
		reconcile(a, forwarding(a, now_ms()), false);
		usleep(FG_ANNOUNCE_PERIOD_MS * 1000);
	}
	return NULL;
}

int fg_announce_start(struct fg_dp *dp, const char *ifname, uint32_t table,
		      struct fg_announce **out)
{
	struct sockaddr_nl local = { .nl_family = AF_NETLINK };
	struct fg_announce *a;
	int rc;

	*out = NULL;
	if (table == 0 || (table >= RT_TABLE_DEFAULT && table <= RT_TABLE_LOCAL) ||
	    ifname == NULL || strlen(ifname) >= IF_NAMESIZE)
		return -EINVAL;
	a = calloc(1, sizeof(*a));
	if (a == NULL)
		return -ENOMEM;
	a->dp = dp;
	a->table = table;
	a->forwarding = true;
	snprintf(a->ifname, sizeof(a->ifname), "%s", ifname);
	a->ifindex = (int)if_nametoindex(ifname);
	if (a->ifindex == 0) {
		rc = -ENODEV;
		goto fail;
	}
	a->nl = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	if (a->nl < 0) {
		rc = -errno;
		goto fail;
	}
	if (bind(a->nl, (struct sockaddr *)&local, sizeof(local)) < 0) {
		rc = -errno;
		goto fail_sock;
	}
	rc = -pthread_create(&a->thread, NULL, announce_main, a);
	if (rc < 0)
		goto fail_sock;
	pthread_setname_np(a->thread, "fg-announce");
	*out = a;
	return 0;
fail_sock:
	close(a->nl);
fail:
	free(a);
	return rc;
}

void fg_announce_stop(struct fg_announce *a)
{
	if (a == NULL)
		return;
	a->stop = true;
	pthread_join(a->thread, NULL);
	reconcile(a, false, true);
	close(a->nl);
	free(a);
}

