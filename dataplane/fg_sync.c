/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * State sync between nodes (issue 35; fg_sync.h has the message, docs/
 * DESIGN.md "State sync between nodes" the reasons).
 *
 * Who does what:
 *  - a worker (owner lcore) puts a record of each new flow, state change
 *    and operator delete of a synced service into its batch (sync_buf, no
 *    lock, no atomic), and hands the batch to its ring to the sync thread
 *    (sync_out, single producer) once per housekeeping; a full ring is
 *    counted (queue_full), never waited for.  A bounded walk of its shard
 *    re-sends the live synced flows once per refresh period, so a peer's
 *    copy of a long quiet flow does not expire;
 *  - the sync thread (one pthread, a kernel UDP socket) drains the rings
 *    within the rate (`sync rate`), packs messages, MACs them and sends
 *    each to every peer; it checks what it receives and hands each entry
 *    to the worker that owns its flow (sync_in, single producer);
 *  - the owner installs it with ct_rec_restore, as the restart does: a
 *    fresher record replaces the entry held, an older one is dropped
 *    (freshest wins, so a copy sent back by a peer never overwrites the
 *    live flow).
 * Expiry and eviction send nothing: each node's copy expires by its own
 * timers, and a peer's copy of a flow that expired here may not be sent
 * back as a close (it may be live there after a takeover).
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <rte_cycles.h>
#include <rte_malloc.h>
#include <rte_ring.h>

#include "fg_config.h"
#include "fg_dp_private.h"
#include "fg_lb.h"
#include "fg_log.h"
#include "fg_proto.h"
#include "fg_state.h"
#include "fg_sync.h"
#include "fg_worker_private.h"

const char *const fg_sync_wc_names[FG_SYNC_WC_MAX] = {
	FG_SYNC_WORKER_LIST(FG_XL_NAME)
};
const char *const fg_sync_wc_help[FG_SYNC_WC_MAX] = {
	FG_SYNC_WORKER_LIST(FG_XL_SECOND)
};
const char *const fg_sync_nc_names[FG_SYNC_NC_MAX] = {
	FG_SYNC_NODE_LIST(FG_XL_NAME)
};
const char *const fg_sync_nc_help[FG_SYNC_NC_MAX] = {
	FG_SYNC_NODE_LIST(FG_XL_SECOND)
};

/* A full walk of a shard every this many ms: a third of the established
 * timeout's default (900 s), so a peer's copy lives on through two lost
 * walks. */
#define REFRESH_MS (300u * 1000u)
/* entries a worker installs per housekeeping: bounded work per loop */
#define INSTALL_BURST 64

struct sync_peer {
	struct fg_sync_peer_cfg cfg;
	struct sockaddr_storage sa;
	socklen_t salen;
	struct fg_sync_replay replay;
	uint64_t last_rx_ns;
	/* the first message of its current epoch, and the silence before it
	 * (a return after a death: its NAT addresses are handed back late) */
	uint64_t first_rx_ns, gap_ns;
	/* its status messages (this epoch): that it sends them, since when
	 * it announces, since when it has sent this node its flows */
	bool v2;
	uint64_t ready_ns, caught_ns;
	/* the catch-up generation that its start began (0: none yet) */
	uint32_t need_gen;
	uint64_t recv_msgs, recv_records, refused, sent_msgs, send_failed;
};

struct fg_sync {
	struct fg_dp *dp;
	struct fg_sync_cfg cfg;
	struct fg_sync_key key;
	int fd;
	pthread_t thr;
	bool thr_on;
	volatile bool stop;
	uint64_t epoch, seq;
	struct sync_peer peers[FG_MAX_SYNC_PEERS];
	/* the counters: written by the sync thread (and a test's thread),
	 * read racily by the control side (64-bit loads) */
	uint64_t nc[FG_SYNC_NC_MAX];
	uint64_t refused[FG_SYNC_REFUSE_MAX];
	uint64_t install_refused[FG_STATE_FLOW_MAX];
	/* the rate: credit in records, refilled by the monotonic clock */
	double credit;
	uint64_t credit_ns, last_tx_ns;
	uint64_t start_ns;          /* CLOCK_MONOTONIC at create */
	/* bumped when a peer starts (a new epoch): every worker walks its
	 * shard at once and sends the peer what it holds (catch-up) */
	uint32_t catchup_gen;
	/* the catch-up generation whose records are all sent (sent_gen), and
	 * the one being counted down: what each ring held when every worker
	 * had walked it (track_left) */
	uint32_t sent_gen, track_gen;
	bool tracking;
	uint32_t track_left[FG_MAX_WORKERS];
	/* status messages: when the last went out, one due now, the READY
	 * they said; fg_sync_ready's answer once true */
	uint64_t status_ns;
	bool status_due, ready_said, ready;
	uint8_t st_out[FG_SYNC_HDR_LEN + FG_SYNC_MAC_LEN];
	/* backends by address, for the table of generation map_gen */
	struct fg_state_bemap *map;
	uint64_t map_gen;
	uint8_t out[FG_SYNC_MSG_MAX];
	struct fg_sync_msg msg;
};

static inline uint64_t
mono_ns(void)
{
	return fg_state_clock_ns(CLOCK_MONOTONIC);
}

static socklen_t
sockaddr_of(const struct fg_addr *a, uint16_t port, struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	if (a->family == AF_INET) {
		struct sockaddr_in *s4 = (struct sockaddr_in *)ss;

		s4->sin_family = AF_INET;
		s4->sin_port = htons(port);
		s4->sin_addr = a->v4;
		return sizeof(*s4);
	}
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;

	s6->sin6_family = AF_INET6;
	s6->sin6_port = htons(port);
	s6->sin6_addr = a->v6;
	return sizeof(*s6);
}

/* Same address and port (a v4-mapped v6 source matches a v4 peer). */
static bool
same_sender(const struct sockaddr_storage *p, const void *from)
{
	const struct sockaddr *f = from;

	if (p->ss_family == AF_INET && f->sa_family == AF_INET) {
		const struct sockaddr_in *a = (const void *)p, *b = from;

		return a->sin_addr.s_addr == b->sin_addr.s_addr && a->sin_port == b->sin_port;
	}
	if (p->ss_family == AF_INET6 && f->sa_family == AF_INET6) {
		const struct sockaddr_in6 *a = (const void *)p, *b = from;

		return !memcmp(&a->sin6_addr, &b->sin6_addr, 16) && a->sin6_port == b->sin6_port;
	}
	if (p->ss_family == AF_INET && f->sa_family == AF_INET6) {
		const struct sockaddr_in *a = (const void *)p;
		const struct sockaddr_in6 *b = from;

		return IN6_IS_ADDR_V4MAPPED(&b->sin6_addr) && a->sin_port == b->sin6_port &&
		       !memcmp(&b->sin6_addr.s6_addr[12], &a->sin_addr, 4);
	}
	return false;
}

/* ---- lifecycle ------------------------------------------------------------ */

static int
rings_create(struct fg_dp *dp, bool dsr)
{
	char name[RTE_RING_NAMESIZE];

	for (unsigned int i = 0; i < dp->n_workers; i++) {
		struct fg_worker *w = dp->workers[i];
		int socket = (int)rte_lcore_to_socket_id(w->lcore);

		snprintf(name, sizeof(name), "fgsyo%u", i);
		w->sync_out = rte_ring_create_elem(name, sizeof(struct fg_sync_item),
						   FG_SYNC_OUT_RING, socket,
						   RING_F_SP_ENQ | RING_F_SC_DEQ);
		snprintf(name, sizeof(name), "fgsyi%u", i);
		w->sync_in = rte_ring_create_elem(name, sizeof(struct fg_sync_item),
						  FG_SYNC_IN_RING, socket,
						  RING_F_SP_ENQ | RING_F_SC_DEQ);
		if (w->sync_out == NULL || w->sync_in == NULL)
			return -ENOMEM;
		w->sync_dsr = dsr;
		/* slots of the shard (both families): a whole walk per REFRESH_MS */
		w->sync_walk_slots = 2ull * dp->ct_capacity;
	}
	return 0;
}

static int
socket_open(struct fg_sync *sy)
{
	struct sockaddr_storage ss;
	socklen_t len = sockaddr_of(&sy->cfg.listen, sy->cfg.port, &ss);
	int one = 1, rc;

	sy->fd = socket(ss.ss_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (sy->fd < 0)
		return -errno;
	setsockopt(sy->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	/* the address may come later: with --host-tap it is the TAP's, set
	 * up once the daemon runs (sends fail until then: send_failed) */
	if (ss.ss_family == AF_INET)
		setsockopt(sy->fd, IPPROTO_IP, IP_FREEBIND, &one, sizeof(one));
	else
		setsockopt(sy->fd, IPPROTO_IPV6, IPV6_FREEBIND, &one, sizeof(one));
	if (bind(sy->fd, (struct sockaddr *)&ss, len) != 0) {
		rc = -errno;
		close(sy->fd);
		sy->fd = -1;
		return rc;
	}
	return 0;
}

static void
local_mark(struct fg_dp *dp, const struct fg_addr *a, uint8_t v)
{
	for (unsigned int l = 0; l < dp->n_locals; l++)
		if (dp->locals[l].family == a->family &&
		    !memcmp(dp->locals[l].bytes, a->bytes, a->family == AF_INET ? 4 : 16))
			dp->local_peer[l] = v;
}

/* Whose NAT address each local address is (fg_dp::local_peer). */
static void
locals_mark(struct fg_dp *dp, const struct fg_sync_cfg *cfg)
{
	for (uint32_t i = 0; i < cfg->n_peers; i++)
		for (uint32_t k = 0; k < cfg->peers[i].n_nat; k++)
			local_mark(dp, &cfg->peers[i].nat[k], (uint8_t)(i + 1));
	for (uint32_t k = 0; k < cfg->n_nat; k++)
		local_mark(dp, &cfg->nat[k], FG_LOCAL_OWN_NAT);
	dp->nat_own_only = cfg->n_nat > 0;
}

int
fg_sync_create(struct fg_dp *dp, const struct fg_sync_cfg *cfg)
{
	struct fg_sync *sy;
	char ep[64];
	int rc;

	if (cfg == NULL || !cfg->on)
		return 0;
	sy = calloc(1, sizeof(*sy));
	if (sy == NULL)
		return -ENOMEM;
	sy->dp = dp;
	sy->cfg = *cfg;
	sy->fd = -1;
	if (sy->cfg.rate == 0)
		sy->cfg.rate = FG_SYNC_RATE_DEFAULT;
	rc = fg_sync_key_load(cfg->key_path, &sy->key);
	if (rc < 0) {
		FG_LOG(ERR, "sync: key %s: %s", cfg->key_path, rc == -EINVAL ?
		       "must hold 16 to 64 bytes" : strerror(-rc));
		goto fail;
	}
	for (uint32_t i = 0; i < cfg->n_peers; i++) {
		sy->peers[i].cfg = cfg->peers[i];
		sy->peers[i].salen = sockaddr_of(&cfg->peers[i].addr, cfg->peers[i].port,
						 &sy->peers[i].sa);
	}
	locals_mark(dp, cfg);
	rc = rings_create(dp, cfg->dsr);
	if (rc == 0)
		rc = socket_open(sy);
	if (rc < 0) {
		FG_LOG(ERR, "sync: listen %s: %s",
		       fg_endpoint_format(&cfg->listen, cfg->port, ep, sizeof(ep)),
		       strerror(-rc));
		goto fail;
	}
	sy->epoch = fg_state_clock_ns(CLOCK_REALTIME);
	sy->credit_ns = sy->start_ns = mono_ns();
	dp->sync = sy;
	FG_LOG(NOTICE, "sync: node %u on %s, %u peers, NAT%s services, %u records/s",
	       cfg->node, fg_endpoint_format(&cfg->listen, cfg->port, ep, sizeof(ep)),
	       cfg->n_peers, cfg->dsr ? " and DSR" : "", sy->cfg.rate);
	return 0;
fail:
	dp->sync = sy;
	fg_sync_free(dp);
	return rc;
}

void
fg_sync_free(struct fg_dp *dp)
{
	struct fg_sync *sy = dp->sync;

	if (sy == NULL)
		return;
	fg_sync_stop(dp);
	for (unsigned int i = 0; i < dp->n_workers; i++) {
		rte_ring_free(dp->workers[i]->sync_out);
		rte_ring_free(dp->workers[i]->sync_in);
		dp->workers[i]->sync_out = dp->workers[i]->sync_in = NULL;
	}
	if (sy->fd >= 0)
		close(sy->fd);
	fg_state_bemap_free(sy->map);
	free(sy);
	dp->sync = NULL;
	memset(dp->local_peer, 0, sizeof(dp->local_peer));
	dp->nat_own_only = false;
}

/* ---- receive ------------------------------------------------------------- */

static struct sync_peer *
peer_of(struct fg_sync *sy, uint32_t node)
{
	for (uint32_t i = 0; i < sy->cfg.n_peers; i++)
		if (sy->peers[i].cfg.node == node)
			return &sy->peers[i];
	return NULL;
}

static struct sync_peer *
peer_at(struct fg_sync *sy, const void *from)
{
	for (uint32_t i = 0; i < sy->cfg.n_peers; i++)
		if (same_sender(&sy->peers[i].sa, from))
			return &sy->peers[i];
	return NULL;
}

/* One entry to the worker that owns its flow. cfg_lock held. */
static void
entry_route(struct fg_sync *sy, const struct fg_lb_table *lb, const struct fg_sync_entry *e)
{
	struct fg_dp *dp = sy->dp;
	struct fg_sync_item it = {.op = e->op, .rec = e->rec};
	unsigned int wi;

	if (e->op == FG_SYNC_OP_FLOW) {
		int why = fg_state_resolve(dp, lb, sy->map, &e->rec, &it.ids, &wi);

		if (why >= 0) {
			sy->install_refused[why]++;
			return;
		}
	} else {
		wi = fg_state_owner(dp, e->rec.family, &e->rec.key,
				    e->rec.flags & CT_REC_F_FRAG);
	}
	if (rte_ring_sp_enqueue_elem(dp->workers[wi]->sync_in, &it, sizeof(it)) != 0)
		sy->nc[FG_SYNC_NC_install_queue_full]++;
}

/* A peer's new epoch (a start): its catch-up begins (every worker walks
 * its shard), what its previous epoch said is forgotten. */
static void
peer_started(struct fg_sync *sy, struct sync_peer *p)
{
	uint64_t now = mono_ns(), last = p->last_rx_ns;

	__atomic_store_n(&p->gap_ns, last ? now - last : 0, __ATOMIC_RELAXED);
	__atomic_store_n(&p->first_rx_ns, now, __ATOMIC_RELAXED);
	__atomic_store_n(&p->v2, false, __ATOMIC_RELAXED);
	__atomic_store_n(&p->ready_ns, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&p->caught_ns, 0, __ATOMIC_RELAXED);
	p->need_gen = __atomic_add_fetch(&sy->catchup_gen, 1, __ATOMIC_RELAXED);
	if (p->need_gen == 0)   /* 0 is "none" */
		p->need_gen = __atomic_add_fetch(&sy->catchup_gen, 1, __ATOMIC_RELAXED);
}

/* A peer's status: it announces; it sent this node (this epoch) its flows. */
static void
status_rx(struct fg_sync *sy, struct sync_peer *p, const struct fg_sync_view *v)
{
	uint64_t now = mono_ns();

	__atomic_store_n(&p->v2, true, __ATOMIC_RELAXED);
	if ((v->status & FG_SYNC_ST_READY) && p->ready_ns == 0)
		__atomic_store_n(&p->ready_ns, now, __ATOMIC_RELAXED);
	if ((v->status & FG_SYNC_ST_CAUGHT_UP) && p->caught_ns == 0 &&
	    v->echo == fg_sync_epoch_tag(sy->epoch))
		__atomic_store_n(&p->caught_ns, now, __ATOMIC_RELAXED);
}

enum fg_sync_refuse
fg_sync_rx(struct fg_dp *dp, const uint8_t *buf, size_t len, const void *from)
{
	struct fg_sync *sy = dp->sync;
	struct fg_sync_view v;
	struct sync_peer *p = NULL;
	const struct fg_lb_table *lb;
	enum fg_sync_refuse why;
	size_t off = 0;

	if (sy == NULL)
		return FG_SYNC_unknown_peer;
	why = fg_sync_parse(buf, len, &sy->key, &v);
	if (why == FG_SYNC_OK) {
		p = peer_of(sy, v.node);
		if (p == NULL || !same_sender(&p->sa, from)) {
			why = FG_SYNC_unknown_peer;
		} else {
			uint64_t epoch = p->replay.epoch;

			why = fg_sync_replay_check(&p->replay, &v);
			if (why == FG_SYNC_OK && p->replay.epoch != epoch)
				peer_started(sy, p);
		}
	}
	if (why != FG_SYNC_OK) {
		sy->refused[why]++;
		if ((p = peer_at(sy, from)) != NULL)
			p->refused++;
		return why;
	}
	p->recv_msgs++;
	p->recv_records += v.count;
	__atomic_store_n(&p->last_rx_ns, mono_ns(), __ATOMIC_RELAXED);
	if (v.version == FG_SYNC_VERSION_STATUS)
		status_rx(sy, p, &v);
	sy->nc[FG_SYNC_NC_recv_msgs]++;
	sy->nc[FG_SYNC_NC_recv_records] += v.count;
	if (v.count == 0)
		return FG_SYNC_OK;
	/* cfg_lock: the table (and the map built from it) stays meanwhile */
	pthread_mutex_lock(&dp->cfg_lock);
	lb = __atomic_load_n(&dp->lb, __ATOMIC_ACQUIRE);
	if (lb != NULL && (sy->map == NULL || sy->map_gen != lb->generation)) {
		fg_state_bemap_free(sy->map);
		sy->map = fg_state_bemap_build(lb);
		sy->map_gen = lb->generation;
	}
	for (uint16_t i = 0; i < v.count; i++) {
		struct fg_sync_entry e;

		fg_sync_entry_next(&v, &off, &e);
		if (lb == NULL || sy->map == NULL)
			sy->install_refused[FG_STATE_FLOW_service_gone]++;
		else
			entry_route(sy, lb, &e);
	}
	pthread_mutex_unlock(&dp->cfg_lock);
	return FG_SYNC_OK;
}

/* ---- send --------------------------------------------------------------- */

/* @return whether peer @p p's kernel took the message */
static bool
peer_send(struct fg_sync *sy, struct sync_peer *p, const uint8_t *buf, size_t len)
{
	if (sendto(sy->fd, buf, len, 0, (struct sockaddr *)&p->sa, p->salen) != (ssize_t)len) {
		p->send_failed++;
		sy->nc[FG_SYNC_NC_send_failed]++;
		return false;
	}
	p->sent_msgs++;
	sy->nc[FG_SYNC_NC_sent_msgs]++;
	sy->nc[FG_SYNC_NC_sent_bytes] += len;
	return true;
}

/* @return the peers that took it */
static unsigned int
msg_send(struct fg_sync *sy)
{
	size_t len = fg_sync_msg_finish(&sy->msg, &sy->key);
	unsigned int ok = 0;

	for (uint32_t i = 0; i < sy->cfg.n_peers; i++)
		ok += peer_send(sy, &sy->peers[i], sy->out, len);
	sy->nc[FG_SYNC_NC_sent_records] += sy->msg.count;
	sy->msg.count = 0;
	sy->msg.len = 0;
	return ok;
}

static void
msg_add(struct fg_sync *sy, const struct fg_sync_item *it)
{
	uint64_t us = (rte_rdtsc() - it->tsc) * 1000000 / sy->dp->hz;

	/* measured at packing: the send follows within this fg_sync_tx */
	sy->nc[FG_SYNC_NC_delay_us_sum] += us;
	if (us > sy->nc[FG_SYNC_NC_delay_us_max])
		sy->nc[FG_SYNC_NC_delay_us_max] = us;
	if (sy->msg.len == 0)
		fg_sync_msg_init(&sy->msg, sy->out, sy->cfg.node, sy->epoch, ++sy->seq);
	if (fg_sync_msg_add(&sy->msg, it->op, &it->rec) == -ENOSPC) {
		msg_send(sy);
		fg_sync_msg_init(&sy->msg, sy->out, sy->cfg.node, sy->epoch, ++sy->seq);
		fg_sync_msg_add(&sy->msg, it->op, &it->rec);
	}
}

/* Whether catch-up generation @p a is @p b or later (they wrap). */
static inline bool
gen_reached(uint32_t a, uint32_t b)
{
	return (int32_t)(a - b) >= 0;
}

/* The catch-up generation every worker has walked whole, its records in
 * its ring (the oldest of theirs). */
static uint32_t
workers_walked(const struct fg_dp *dp)
{
	uint32_t g = __atomic_load_n(&dp->workers[0]->sync_catchup_done, __ATOMIC_ACQUIRE);

	for (unsigned int i = 1; i < dp->n_workers; i++) {
		uint32_t d = __atomic_load_n(&dp->workers[i]->sync_catchup_done,
					     __ATOMIC_ACQUIRE);

		if (!gen_reached(d, g))
			g = d;
	}
	return g;
}

/* Before a send pass: a generation newly walked by every worker is
 * counted down from what the rings hold now (at most that is older). */
static void
catchup_track(struct fg_dp *dp, struct fg_sync *sy)
{
	uint32_t g = workers_walked(dp);

	if (g == sy->sent_gen || (sy->tracking && g == sy->track_gen))
		return;
	sy->track_gen = g;
	sy->tracking = true;
	for (unsigned int i = 0; i < dp->n_workers; i++)
		sy->track_left[i] = rte_ring_count(dp->workers[i]->sync_out);
}

/* After a send pass: the tracked generation is sent once its records
 * have left the rings (and the last message went out). */
static void
catchup_sent(struct fg_dp *dp, struct fg_sync *sy)
{
	if (!sy->tracking)
		return;
	for (unsigned int i = 0; i < dp->n_workers; i++)
		if (sy->track_left[i])
			return;
	sy->sent_gen = sy->track_gen;
	sy->tracking = false;
	sy->status_due = true;
}

/* One status to each peer: READY when this node announces, CAUGHT_UP to a
 * peer whose start's catch-up is all sent.  Once a second, and at once
 * when that news changes (a send that fails is tried again in 50 ms). */
static void
status_tx(struct fg_dp *dp, struct fg_sync *sy, uint64_t now)
{
	bool ready = fg_sync_ready(dp), failed = false;

	if (ready != sy->ready_said) {
		sy->ready_said = ready;
		sy->status_due = true;
	}
	if (!sy->status_due && now - sy->status_ns < FG_SYNC_KEEPALIVE_MS * 1000000ull)
		return;
	for (uint32_t i = 0; i < sy->cfg.n_peers; i++) {
		struct sync_peer *p = &sy->peers[i];
		uint8_t flags = ready ? FG_SYNC_ST_READY : 0;
		size_t len;

		if (p->need_gen != 0 && gen_reached(sy->sent_gen, p->need_gen))
			flags |= FG_SYNC_ST_CAUGHT_UP;
		len = fg_sync_msg_status(sy->st_out, sy->cfg.node, sy->epoch, ++sy->seq, flags,
					 fg_sync_epoch_tag(p->replay.epoch), &sy->key);
		failed |= !peer_send(sy, p, sy->st_out, len);
	}
	sy->status_due = false;
	sy->status_ns = failed ? now - (FG_SYNC_KEEPALIVE_MS - 50) * 1000000ull : now;
}

unsigned int
fg_sync_tx(struct fg_dp *dp)
{
	struct fg_sync *sy = dp->sync;
	uint64_t now = mono_ns();
	unsigned int sent = 0;
	double cap;

	if (sy == NULL)
		return 0;
	/* credit for the time since the last call, at most 10 ms' worth */
	cap = sy->cfg.rate / 100.0 + FG_SYNC_BATCH;
	sy->credit += (double)(now - sy->credit_ns) * sy->cfg.rate / 1e9;
	if (sy->credit > cap)
		sy->credit = cap;
	sy->credit_ns = now;
	catchup_track(dp, sy);
	for (unsigned int i = 0; i < dp->n_workers; i++) {
		struct fg_sync_item it[FG_SYNC_BATCH];
		unsigned int n;

		do {
			unsigned int want = sy->credit < FG_SYNC_BATCH ? (unsigned int)sy->credit
								       : FG_SYNC_BATCH;

			n = want ? rte_ring_sc_dequeue_burst_elem(dp->workers[i]->sync_out, it,
								  sizeof(it[0]), want, NULL) : 0;
			for (unsigned int k = 0; k < n; k++)
				msg_add(sy, &it[k]);
			sy->credit -= n;
			sent += n;
			if (sy->tracking)
				sy->track_left[i] -= RTE_MIN(n, sy->track_left[i]);
		} while (n > 0);
	}
	if (sy->msg.len == 0 && now - sy->last_tx_ns >= FG_SYNC_KEEPALIVE_MS * 1000000ull)
		fg_sync_msg_init(&sy->msg, sy->out, sy->cfg.node, sy->epoch, ++sy->seq);
	if (sy->msg.len != 0) {
		/* nobody took it (the address not up yet, no route): tried
		 * again in 50 ms, so the peers hear a start at once */
		if (msg_send(sy) > 0 || sy->cfg.n_peers == 0)
			sy->last_tx_ns = now;
		else
			sy->last_tx_ns = now - (FG_SYNC_KEEPALIVE_MS - 50) * 1000000ull;
	}
	catchup_sent(dp, sy);
	status_tx(dp, sy, now);
	return sent;
}

static void *
sync_main(void *arg)
{
	struct fg_dp *dp = arg;
	struct fg_sync *sy = dp->sync;
	uint8_t buf[FG_SYNC_MSG_MAX + 64];

	while (!__atomic_load_n(&sy->stop, __ATOMIC_RELAXED)) {
		struct pollfd pfd = {.fd = sy->fd, .events = POLLIN};

		/* 1 ms: the batching delay of a record, the window of loss's
		 * share that the sender adds */
		poll(&pfd, 1, 1);
		for (int k = 0; k < 256; k++) {
			struct sockaddr_storage from;
			socklen_t fl = sizeof(from);
			ssize_t n = recvfrom(sy->fd, buf, sizeof(buf), 0,
					     (struct sockaddr *)&from, &fl);

			if (n < 0)
				break;
			fg_sync_rx(dp, buf, (size_t)n, &from);
		}
		fg_sync_tx(dp);
	}
	return NULL;
}

int
fg_sync_start(struct fg_dp *dp)
{
	struct fg_sync *sy = dp->sync;
	int rc;

	if (sy == NULL)
		return 0;
	rc = pthread_create(&sy->thr, NULL, sync_main, dp);
	if (rc != 0)
		return -rc;
	pthread_setname_np(sy->thr, "fg-sync");
	sy->thr_on = true;
	return 0;
}

void
fg_sync_stop(struct fg_dp *dp)
{
	struct fg_sync *sy = dp->sync;

	if (sy == NULL || !sy->thr_on)
		return;
	__atomic_store_n(&sy->stop, true, __ATOMIC_RELAXED);
	pthread_join(sy->thr, NULL);
	sy->thr_on = false;
}

bool
fg_sync_peer_dead(struct fg_dp *dp, unsigned int i)
{
	const struct fg_sync *sy = dp->sync;
	const struct sync_peer *p;
	uint64_t last, first, gap, ready, now = mono_ns();

	if (sy == NULL || i >= sy->cfg.n_peers)
		return false;
	p = &sy->peers[i];
	last = __atomic_load_n(&p->last_rx_ns, __ATOMIC_RELAXED);
	first = __atomic_load_n(&p->first_rx_ns, __ATOMIC_RELAXED);
	gap = __atomic_load_n(&p->gap_ns, __ATOMIC_RELAXED);
	if (last == 0)
		return false;
	if (now - last >= FG_SYNC_DEAD_MS * 1000000ull)
		return true;
	if (gap < FG_SYNC_DEAD_MS * 1000000ull)
		return false;
	/* back from the dead: its addresses stay here until it announces
	 * them itself (its status says so), and FG_SYNC_HANDBACK_MS more for
	 * its routes to reach the routers; from its start when it sends no
	 * status (an older flowgate) */
	if (!__atomic_load_n(&p->v2, __ATOMIC_RELAXED))
		return now - first < FG_SYNC_HANDBACK_MS * 1000000ull;
	ready = __atomic_load_n(&p->ready_ns, __ATOMIC_RELAXED);
	return ready == 0 || now - ready < FG_SYNC_HANDBACK_MS * 1000000ull;
}

/* Why this node may not announce yet (NULL: it may); peer @p *who. */
static const char *
ready_wait(const struct fg_dp *dp, const struct fg_sync *sy, uint64_t now, uint32_t *who)
{
	uint64_t up = now - sy->start_ns;

	for (uint32_t i = 0; i < sy->cfg.n_peers; i++) {
		const struct sync_peer *p = &sy->peers[i];
		uint64_t first = __atomic_load_n(&p->first_rx_ns, __ATOMIC_RELAXED);

		*who = i;
		if (first == 0) {
			if (up < FG_SYNC_ALONE_MS * 1000000ull)
				return "not heard yet";
			continue;   /* absent */
		}
		if (__atomic_load_n(&p->caught_ns, __ATOMIC_RELAXED) != 0)
			continue;
		if (!__atomic_load_n(&p->v2, __ATOMIC_RELAXED) &&
		    now - first >= FG_SYNC_V1_GRACE_MS * 1000000ull)
			continue;   /* sends no status: an older flowgate */
		if (up < FG_SYNC_CATCHUP_MAX_MS * 1000000ull)
			return "its catch-up not complete";
	}
	/* what came is installed first */
	for (unsigned int i = 0; i < dp->n_workers; i++)
		if (rte_ring_count(dp->workers[i]->sync_in) != 0)
			return "installing";
	return NULL;
}

bool
fg_sync_ready(struct fg_dp *dp)
{
	struct fg_sync *sy = dp->sync;
	uint32_t who = 0;

	if (sy == NULL || sy->cfg.n_peers == 0 || __atomic_load_n(&sy->ready, __ATOMIC_ACQUIRE))
		return true;
	if (ready_wait(dp, sy, mono_ns(), &who) != NULL)
		return false;
	if (!__atomic_exchange_n(&sy->ready, true, __ATOMIC_ACQ_REL)) {
		unsigned int caught = 0;

		for (uint32_t i = 0; i < sy->cfg.n_peers; i++)
			caught += sy->peers[i].caught_ns != 0;
		FG_LOG(NOTICE, "sync: ready to announce %.1f s after the start: catch-up "
		       "from %u of %u peers installed%s", (double)(mono_ns() - sy->start_ns) / 1e9,
		       caught, sy->cfg.n_peers, caught == sy->cfg.n_peers ? "" :
		       " (the others absent, older, or past the catch-up limit)");
	}
	return true;
}

void
fg_sync_stats_get(struct fg_dp *dp, struct fg_sync_stats *st)
{
	struct fg_sync *sy = dp->sync;
	uint64_t now = mono_ns();

	memset(st, 0, sizeof(*st));
	if (sy == NULL)
		return;
	st->on = true;
	st->ready = fg_sync_ready(dp);
	if (!st->ready) {
		uint32_t who = 0;
		const char *why = ready_wait(dp, sy, now, &who);

		if (why != NULL && strcmp(why, "installing") == 0)
			snprintf(st->waiting, sizeof(st->waiting), "installing its peers' flows");
		else if (why != NULL)
			snprintf(st->waiting, sizeof(st->waiting), "peer %s: %s",
				 sy->peers[who].cfg.name, why);
	}
	st->node = sy->cfg.node;
	fg_endpoint_format(&sy->cfg.listen, sy->cfg.port, st->listen, sizeof(st->listen));
	st->dsr = sy->cfg.dsr;
	st->rate = sy->cfg.rate;
	st->epoch = sy->epoch;
	st->seq = sy->seq;
	memcpy(st->nc, sy->nc, sizeof(st->nc));
	memcpy(st->refused, sy->refused, sizeof(st->refused));
	memcpy(st->install_refused, sy->install_refused, sizeof(st->install_refused));
	for (unsigned int i = 0; i < dp->n_workers; i++) {
		const struct fg_worker *w = dp->workers[i];

		for (int c = 0; c < FG_SYNC_WC_MAX; c++)
			st->wc[c] += w->sync[c];
		for (int r = 0; r < FG_STATE_FLOW_MAX; r++)
			st->install_refused[r] += w->sync_refused[r];
		st->backlog += rte_ring_count(w->sync_out) + w->sync_n;
	}
	st->n_peers = RTE_MIN(sy->cfg.n_peers, RTE_DIM(st->peers));
	for (uint32_t i = 0; i < st->n_peers; i++) {
		const struct sync_peer *p = &sy->peers[i];
		struct fg_sync_peer_stats *o = &st->peers[i];

		snprintf(o->name, sizeof(o->name), "%s", p->cfg.name);
		fg_endpoint_format(&p->cfg.addr, p->cfg.port, o->addr, sizeof(o->addr));
		o->node = p->cfg.node;
		o->epoch = p->replay.epoch;
		o->seq = p->replay.top;
		o->last_rx_ms = p->last_rx_ns ? (int64_t)((now - p->last_rx_ns) / 1000000) : -1;
		o->recv_msgs = p->recv_msgs;
		o->recv_records = p->recv_records;
		o->refused = p->refused;
		o->sent_msgs = p->sent_msgs;
		o->send_failed = p->send_failed;
		o->dead = fg_sync_peer_dead(dp, i);
		o->caught_up = p->caught_ns != 0;
		o->announcing = p->ready_ns != 0;
	}
}

/* ---- worker side ------------------------------------------------------------ */

bool
fg_sync_wants(const struct fg_worker *w, const struct fg_lb_service *s)
{
	return w->sync_out != NULL && s != NULL &&
	       (s->mode == FG_MODE_NAT || w->sync_dsr);
}

static void
batch_flush(struct fg_worker *w)
{
	unsigned int n = w->sync_n;
	unsigned int k = rte_ring_sp_enqueue_burst_elem(w->sync_out, w->sync_buf,
							sizeof(w->sync_buf[0]), n, NULL);

	w->sync[FG_SYNC_WC_queued] += k;
	w->sync[FG_SYNC_WC_queue_full] += n - k;
	w->sync_n = 0;
}

void
fg_sync_note(struct fg_worker *w, uint8_t op, uint8_t fam, const void *key,
	     const struct ct_entry *e, const struct fg_lb_service *s,
	     const struct fg_lb_backend *b, uint64_t now)
{
	struct fg_sync_item *it;

	if (w->sync_applying || !fg_sync_wants(w, s) || b == NULL)
		return;
	if (w->sync_n == FG_SYNC_BATCH)
		batch_flush(w);
	it = &w->sync_buf[w->sync_n++];
	it->op = op;
	it->tsc = now;
	ct_rec_fill_entry(w->ct, (enum ct_family)fam, key, e, now, &it->rec);
	/* a peer's copy needs no counters: 32 bytes less a NAT record */
	it->rec.flags &= (uint8_t)~CT_REC_F_COUNTERS;
	memcpy(it->rec.backend, b->addr.bytes, fam == CT_V6 ? 16 : 4);
	it->rec.backend_port = b->port_be;
	it->rec.service_port = s->port_be;
}

static inline uint32_t
key_sig(struct ct_shard *s, uint8_t fam, const union ct_key *k)
{
	return fam == CT_V4 ? ct_key4_hash(s, &k->k4) : ct_key6_hash(s, &k->k6);
}

/* A peer's record into this shard; freshest wins against what is held. */
static void
install(struct fg_worker *w, const struct fg_lb_table *lb, struct fg_sync_item *it,
	uint64_t now)
{
	struct ct_rec *r = &it->rec;
	uint32_t sig = key_sig(w->ct, r->family, &r->key), pos;
	struct ct_entry *e;
	int rc;

	if (it->op == FG_SYNC_OP_CLOSE) {
		if (ct_delete(w->ct, (enum ct_family)r->family, &r->key, sig) == 0)
			w->sync[FG_SYNC_WC_closed]++;
		return;
	}
	rc = ct_rec_restore(w->ct, r, &it->ids, now, &pos);
	if (rc == -EEXIST &&
	    (e = ct_lookup(w->ct, (enum ct_family)r->family, &r->key, sig, now, NULL)) != NULL) {
		uint64_t held_idle = now - e->last_seen;

		if (held_idle <= (uint64_t)r->idle_ms * (w->dp->hz / 1000)) {
			w->sync[FG_SYNC_WC_stale]++;
			return;
		}
		ct_delete(w->ct, (enum ct_family)r->family, &r->key, sig);
		rc = ct_rec_restore(w->ct, r, &it->ids, now, &pos);
		if (rc == 0) {
			ct_entry_relearn(w->ct, (enum ct_family)r->family, pos);
			w->sync[FG_SYNC_WC_updated]++;
			fg_state_count_restored(w, (struct fg_lb_table *)lb, r, &it->ids);
			return;
		}
	}
	if (rc < 0) {
		w->sync_refused[fg_state_restore_refusal(rc)]++;
		return;
	}
	/* the stream may have moved past the record's windows */
	ct_entry_relearn(w->ct, (enum ct_family)r->family, pos);
	w->sync[FG_SYNC_WC_installed]++;
	fg_state_count_restored(w, (struct fg_lb_table *)lb, r, &it->ids);
}

/* The refresh walk: every live flow of a synced service, once a period. */
struct refresh_ctx {
	struct fg_worker *w;
	const struct fg_lb_table *lb;
	uint64_t now;
};

static int
refresh_one(const struct ct_flow *f, void *arg)
{
	struct refresh_ctx *c = arg;
	struct fg_worker *w = c->w;
	uint16_t sid = c->lb->svc_by_id[f->e.service];
	const struct fg_lb_service *s = sid ? &c->lb->services[sid - 1] : NULL;

	if (f->expires_ticks == 0 || (f->e.flags & CT_F_FRAG) || !fg_sync_wants(w, s))
		return 0;
	fg_sync_note(w, FG_SYNC_OP_FLOW, f->family, &f->k6, &f->e, s,
		     fg_lb_backend_get(s, f->e.backend), c->now);
	return 0;
}

/* One step of the refresh walk (every ms).  Paced to a whole walk per
 * REFRESH_MS; after a peer started (catch-up), as fast as the ring to the
 * sync thread takes it. */
static void
refresh_step(struct fg_worker *w, const struct fg_lb_table *lb, uint64_t now)
{
	struct refresh_ctx c = {.w = w, .lb = lb, .now = now};
	uint32_t gen = __atomic_load_n(&w->dp->sync->catchup_gen, __ATOMIC_RELAXED);
	uint64_t ms = (now - w->sync_walk_last) / (w->dp->hz / 1000);
	unsigned int slots;

	if (gen != w->sync_catchup_seen) {
		w->sync_catchup_seen = gen;
		w->sync_cursor = 0;
		w->sync_fast = true;
	}
	if (w->sync_fast) {
		/* at most what the ring has room for, a record a slot at worst */
		slots = rte_ring_free_count(w->sync_out) > 2048 ? 2048 : 0;
	} else {
		/* slots owed for the ms since the last step (the remainder
		 * carried), so a whole walk takes REFRESH_MS at any table size */
		w->sync_walk_acc += w->sync_walk_last ? RTE_MIN(ms, 1000u) * w->sync_walk_slots : 0;
		slots = (unsigned int)RTE_MIN(w->sync_walk_acc / REFRESH_MS, 1u << 20);
		w->sync_walk_acc -= (uint64_t)slots * REFRESH_MS;
	}
	if (slots)
		ct_walk(w->ct, &w->sync_cursor, slots, now, refresh_one, &c);
	if (w->sync_cursor == CT_WALK_DONE) {
		if (w->sync_fast)
			w->sync_walked = w->sync_catchup_seen;
		w->sync_cursor = 0;
		w->sync_fast = false;
		w->sync[FG_SYNC_WC_refresh_walks]++;
	}
	w->sync_walk_last = now;
}

unsigned int
fg_sync_worker_poll(struct fg_worker *w, uint64_t now)
{
	const struct fg_lb_table *lb = __atomic_load_n(&w->dp->lb, __ATOMIC_ACQUIRE);
	struct fg_sync_item it[8];
	unsigned int got = 0, n;

	if (w->sync_out == NULL)
		return 0;
	w->sync_applying = true;
	while (lb != NULL && got < INSTALL_BURST &&
	       (n = rte_ring_sc_dequeue_burst_elem(w->sync_in, it, sizeof(it[0]),
						   RTE_DIM(it), NULL)) > 0) {
		for (unsigned int k = 0; k < n; k++)
			install(w, lb, &it[k], now);
		got += n;
	}
	w->sync_applying = false;
	if (lb != NULL && now - w->sync_walk_last >= w->dp->hz / 1000)
		refresh_step(w, lb, now);
	if (w->sync_n)
		batch_flush(w);
	/* a catch-up walked whole, its records in the ring: the sync thread
	 * counts them down to say the peer has them all */
	if (w->sync_walked != w->sync_catchup_done)
		__atomic_store_n(&w->sync_catchup_done, w->sync_walked, __ATOMIC_RELEASE);
	return got;
}
