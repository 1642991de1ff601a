/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Issue 35: state sync between nodes at the dataplane's own level
 * (dataplane/fg_sync.c), no root, real UDP on 127.0.0.1:
 *  - node A (2 workers, net_null0) opens N_NAT NAT flows and N_DSR DSR
 *    flows through its workers (SYNs through fg_worker_burst); its
 *    workers' batches go to the sync thread's code (fg_sync_tx), which
 *    sends them to B's address, where this test's socket catches them:
 *    N_NAT records (DSR is not synced without `dsr on`);
 *  - node B (2 workers, net_null1, the same NAT addresses) is sent the
 *    same records under another key, from an unknown node id, from the
 *    right node id but another address: each refused by its name, and B
 *    tracks nothing;
 *  - then A's real messages: every NAT flow is in the worker its tuple
 *    hashes to, with A's NAT port; the same messages again are refused
 *    as replay and change nothing; an older copy of a flow is kept out
 *    (stale), a fresher one replaces it (updated); a close deletes one;
 *  - a reply of a synced flow (backend -> local address:port) is
 *    forwarded by B to the client: a node that never saw the flow's SYN
 *    carries it on;
 *  - A, told by B's first status that B started, walks its shards and
 *    sends B every flow again, then a status with CAUGHT_UP naming B's
 *    epoch, never before the last of those flows (the catch-up);
 *  - B's own new NAT flows take its own address, never A's (`peer a ...
 *    nat 10.0.0.2`: held for the takeover);
 *  - a DSR flow's record (what a `dsr on` sender sends) is installed too;
 *    one under an older epoch is a replay;
 *  - B's start-up gate: not ready while A's catch-up is not said complete
 *    (or said for another start), ready once it is and installed; A,
 *    heard and then silent, is dead for B after FG_SYNC_DEAD_MS (polled
 *    for, not timed); back, its NAT address stays B's until A's status
 *    says it announces, and FG_SYNC_HANDBACK_MS more (polled for).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>

#include <cmocka.h>

#include <rte_cycles.h>
#include <rte_dev.h>
#include <rte_eal.h>
#include <rte_errno.h>

#include "ct_rec.h"
#include "fg_config_parse.h"
#include "fg_dp.h"
#include "fg_pktbuild.h"
#include "fg_rss.h"
#include "fg_sync.h"
#include "fg_worker_private.h"
#include "dp_fixture.h"

#define N_NAT 120
#define N_DSR 40
#define MAX_DGRAMS 256

static char g_key[128];
static uint16_t g_pa, g_pb;

static uint8_t g_dgram[MAX_DGRAMS][FG_SYNC_MSG_MAX];
static size_t g_dlen[MAX_DGRAMS];
static unsigned int g_ndgram;

/* NAT flows of A by client port: their reply key */
static struct ct_key4 g_reply[N_NAT];
/* B's own NAT flows (client ports 31000..) by their local address's last byte */
static unsigned int g_own[256];

static const char cfg_fmt[] =
	"conntrack { capacity 4096; }\n"
	"port %s { mac 02:00:00:00:00:01; local 10.0.0.2; local 10.0.0.3; gateway 192.0.2.1; }\n"
	"neighbour 10.1.0.10 02:00:00:00:01:10 port %s;\n"
	"neighbour 10.1.0.20 02:00:00:00:01:20 port %s;\n"
	"neighbour 10.1.0.21 02:00:00:00:01:21 port %s;\n"
	"neighbour 192.0.2.1 02:00:00:00:02:01 port %s;\n"
	"service dsr 10.0.0.100:80/tcp {\n mode dsr-ipip;\n backend 10.1.0.10;\n}\n"
	"service nat 10.0.0.101:80/tcp {\n mode nat;\n"
	" backend 10.1.0.20;\n backend 10.1.0.21;\n}\n"
	"sync {\n listen 127.0.0.1:%u node %u;\n peer %s 127.0.0.1:%u node %u nat %s;\n"
	" key %s;\n}\n";

static struct fg_dp *
dp_make(const char *port, unsigned int node)
{
	struct fg_dp *dp;
	char text[2048];

	snprintf(text, sizeof(text), cfg_fmt, port, port, port, port, port,
		 node == 1 ? g_pa : g_pb, node, node == 1 ? "b" : "a",
		 node == 1 ? g_pb : g_pa, node == 1 ? 2 : 1, node == 1 ? "10.0.0.3" : "10.0.0.2",
		 g_key);
	dp = dpf_make(text, "sync", 2, NULL);
	assert_non_null(dp->sync);
	return dp;
}

static struct fg_worker *
owner(struct fg_dp *dp, const struct ct_key4 *k)
{
	return dp->workers[dpf_owner(dp, k)];
}

/* One frame through the worker that owns @p k; @return frames it sent. */
static unsigned int
send_pkt(struct fg_dp *dp, const struct ct_key4 *k, const struct pb_spec *s)
{
	struct fg_worker *w = owner(dp, k);
	unsigned int n = dpf_burst_one(dp, w, s);

	for (unsigned int i = 0; i < n; i++)
		rte_pktmbuf_free(w->txb[0][i]);
	w->tx[0].n = 0;
	return n;
}

static void
syn(struct fg_dp *dp, unsigned int i, bool nat)
{
	char src[32];
	struct pb_spec s = {0};
	struct ct_key4 k;

	snprintf(src, sizeof(src), "192.0.2.%u", 10 + i % 200);
	s.saddr = src;
	s.daddr = nat ? "10.0.0.101" : "10.0.0.100";
	s.proto = IPPROTO_TCP;
	s.sport = (uint16_t)(30000 + i);
	s.dport = 80;
	s.tcp_flags = 0x02;
	k = (struct ct_key4){.saddr = dpf_ip4(src), .daddr = dpf_ip4(s.daddr),
			     .sport = htons(s.sport), .dport = htons(80), .proto = IPPROTO_TCP};
	assert_int_equal(send_pkt(dp, &k, &s), 1);
}

struct count_ctx {
	unsigned int n, nat;
	bool save;
};

static int
count_one(const struct ct_flow *f, void *arg)
{
	struct count_ctx *c = arg;

	c->n++;
	if (f->has_reply) {
		unsigned int i = ntohs(f->k4.sport) - 30000;

		c->nat++;
		if (i >= 1000)
			g_own[((const uint8_t *)&f->reply.k4.daddr)[3]]++;
		else if (c->save && i < N_NAT)
			g_reply[i] = f->reply.k4;
		else if (i < N_NAT)
			assert_memory_equal(&f->reply.k4, &g_reply[i], sizeof(g_reply[i]));
	}
	return 0;
}

/* Flows in every shard of @p dp (NAT ones: reply keys saved or checked). */
static struct count_ctx
count(struct fg_dp *dp, bool save)
{
	struct count_ctx c = {.save = save};

	for (unsigned int i = 0; i < dp->n_workers; i++)
		for (uint64_t cur = 0; cur != CT_WALK_DONE;)
			ct_walk(dp->workers[i]->ct, &cur, 1u << 16, rte_rdtsc(), count_one, &c);
	return c;
}

static void
poll_workers(struct fg_dp *dp)
{
	for (unsigned int i = 0; i < dp->n_workers; i++)
		fg_sync_worker_poll(dp->workers[i], rte_rdtsc());
}

static int
udp_bind(uint16_t port)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	return fd;
}

/* One round of node @p a's sync (workers, then the send pass); @return
 * whether a datagram waits at this test's socket @p fd (2 ms at most). */
static bool
pump(struct fg_dp *a, int fd)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};

	poll_workers(a);
	fg_sync_tx(a);
	return poll(&p, 1, 2) > 0;
}

/* A's flows go out; this test's socket at B's address catches them. */
static void
collect(struct fg_dp *a, int fd)
{
	unsigned int records = 0;

	for (int guard = 0; records < N_NAT && guard < 20000; guard++) {
		struct fg_sync_view v;
		ssize_t n;

		if (!pump(a, fd))
			continue;
		while (g_ndgram < MAX_DGRAMS &&
		       (n = recv(fd, g_dgram[g_ndgram], FG_SYNC_MSG_MAX, 0)) > 0) {
			struct fg_sync_key key;

			assert_int_equal(fg_sync_key_load(g_key, &key), 0);
			assert_int_equal(fg_sync_parse(g_dgram[g_ndgram], (size_t)n, &key, &v),
					 FG_SYNC_OK);
			assert_int_equal(v.node, 1);
			if (v.count == 0)
				continue;    /* a keepalive */
			records += v.count;
			g_dlen[g_ndgram++] = (size_t)n;
		}
	}
	assert_int_equal(records, N_NAT);
}

static struct sockaddr_in
from_port(uint16_t port)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	return a;
}

/* The records of A's first message, re-sent as node @p node under @p key. */
static size_t
reforge(uint8_t *out, const struct fg_sync_key *key, uint32_t node, uint64_t seq,
	uint32_t idle_ms, uint8_t op, unsigned int max)
{
	struct fg_sync_key real;
	struct fg_sync_view v;
	struct fg_sync_msg m;
	size_t off = 0;

	assert_int_equal(fg_sync_key_load(g_key, &real), 0);
	assert_int_equal(fg_sync_parse(g_dgram[0], g_dlen[0], &real, &v), FG_SYNC_OK);
	fg_sync_msg_init(&m, out, node, v.epoch, seq);
	for (unsigned int i = 0; i < v.count && i < max; i++) {
		struct fg_sync_entry e;

		assert_int_equal(fg_sync_entry_next(&v, &off, &e), 0);
		if (idle_ms != UINT32_MAX)
			e.rec.idle_ms = idle_ms;
		assert_int_equal(fg_sync_msg_add(&m, op, &e.rec), 0);
	}
	return fg_sync_msg_finish(&m, key);
}

static void
refusals(struct fg_dp *b)
{
	static const struct fg_sync_key other = {.k = "not-the-shared-key-at-all", .len = 25};
	struct sockaddr_in fa = from_port(g_pa), fx = from_port((uint16_t)(g_pa + 7));
	struct fg_sync_key real;
	struct fg_sync_stats st;
	uint8_t buf[FG_SYNC_MSG_MAX];
	size_t len;

	assert_int_equal(fg_sync_key_load(g_key, &real), 0);
	len = reforge(buf, &other, 1, 1000000, UINT32_MAX, FG_SYNC_OP_FLOW, 99);
	assert_int_equal(fg_sync_rx(b, buf, len, &fa), FG_SYNC_bad_mac);
	len = reforge(buf, &real, 9, 1000000, UINT32_MAX, FG_SYNC_OP_FLOW, 99);
	assert_int_equal(fg_sync_rx(b, buf, len, &fa), FG_SYNC_unknown_peer);
	len = reforge(buf, &real, 1, 1000000, UINT32_MAX, FG_SYNC_OP_FLOW, 99);
	assert_int_equal(fg_sync_rx(b, buf, len, &fx), FG_SYNC_unknown_peer);
	buf[0] = 'X';
	assert_int_equal(fg_sync_rx(b, buf, len, &fa), FG_SYNC_bad_magic);
	poll_workers(b);
	assert_int_equal(count(b, false).n, 0);
	fg_sync_stats_get(b, &st);
	assert_int_equal(st.refused[FG_SYNC_bad_mac], 1);
	assert_int_equal(st.refused[FG_SYNC_unknown_peer], 2);
	assert_int_equal(st.refused[FG_SYNC_bad_magic], 1);
	assert_int_equal(st.nc[FG_SYNC_NC_recv_records], 0);
	assert_int_equal(st.peers[0].refused, 3);   /* bad_mac, node 9, bad_magic: from A's address */
}

/* B's worker forwards a reply of synced NAT flow @p i to its client. */
static void
reply_forwarded(struct fg_dp *b, unsigned int i)
{
	const struct ct_key4 *r = &g_reply[i];
	struct pb_spec s = {0};
	char src[32], dst[32];
	uint64_t nn;
	struct fg_worker *w = owner(b, r);

	inet_ntop(AF_INET, &r->saddr, src, sizeof(src));
	inet_ntop(AF_INET, &r->daddr, dst, sizeof(dst));
	s.saddr = src;
	s.daddr = dst;
	s.proto = IPPROTO_TCP;
	s.sport = ntohs(r->sport);
	s.dport = ntohs(r->dport);
	s.tcp_flags = 0x12;    /* the backend's SYN-ACK */
	nn = w->drops[FG_DROP_nat_not_syn];
	assert_int_equal(send_pkt(b, r, &s), 1);
	assert_int_equal(w->drops[FG_DROP_nat_not_syn], nn);
}

/* A DSR flow's record (a sender with `dsr on`) is installed as well, in
 * the worker its tuple hashes to, on its backend found by address. */
static void
dsr_record(struct fg_dp *b)
{
	struct fg_sync_key real;
	struct sockaddr_in fa = from_port(g_pa);
	struct fg_sync_stats before, after;
	uint8_t buf[FG_SYNC_MSG_MAX];
	struct fg_sync_msg m;
	struct ct_rec r = {.family = CT_V4, .proto = IPPROTO_TCP, .state = CT_ST_ESTABLISHED,
			   .flags = CT_REC_F_ASSURED, .idle_ms = 10, .life_ms = 5000,
			   .td = {.end = 777, .win = 500, .wscale = 7, .flags = CT_TD_VALID}};
	uint32_t be = dpf_ip4("10.1.0.10");
	struct ct_entry *e;
	size_t len;

	r.key.k4 = (struct ct_key4){.saddr = dpf_ip4("192.0.2.250"), .daddr = dpf_ip4("10.0.0.100"),
				    .sport = htons(45000), .dport = htons(80),
				    .proto = IPPROTO_TCP};
	memcpy(r.backend, &be, 4);
	r.backend_port = htons(80);
	r.service_port = htons(80);
	assert_int_equal(fg_sync_key_load(g_key, &real), 0);
	fg_sync_stats_get(b, &before);
	fg_sync_msg_init(&m, buf, 1, 1, 6000000);
	assert_int_equal(fg_sync_msg_add(&m, FG_SYNC_OP_FLOW, &r), 0);
	len = fg_sync_msg_finish(&m, &real);
	/* epoch 1: older than A's, a replay */
	assert_int_equal(fg_sync_rx(b, buf, len, &fa), FG_SYNC_replay);
	{
		struct fg_sync_view v;

		assert_int_equal(fg_sync_parse(g_dgram[0], g_dlen[0], &real, &v), FG_SYNC_OK);
		fg_sync_msg_init(&m, buf, 1, v.epoch, 6000000);
	}
	assert_int_equal(fg_sync_msg_add(&m, FG_SYNC_OP_FLOW, &r), 0);
	len = fg_sync_msg_finish(&m, &real);
	assert_int_equal(fg_sync_rx(b, buf, len, &fa), FG_SYNC_OK);
	poll_workers(b);
	fg_sync_stats_get(b, &after);
	assert_int_equal(after.wc[FG_SYNC_WC_installed], before.wc[FG_SYNC_WC_installed] + 1);
	e = ct_lookup(owner(b, &r.key.k4)->ct, CT_V4, &r.key.k4,
		      ct_key4_hash(owner(b, &r.key.k4)->ct, &r.key.k4), rte_rdtsc(), NULL);
	assert_non_null(e);
	assert_int_equal(e->state, CT_ST_ESTABLISHED);
	assert_false(e->flags & CT_F_NAT);
}

/* A status message from peer @p node (epoch @p epoch, sequence @p seq). */
static size_t
status_msg(uint8_t *out, uint32_t node, uint64_t epoch, uint64_t seq, uint8_t flags,
	   uint64_t echo_epoch)
{
	struct fg_sync_key real;

	assert_int_equal(fg_sync_key_load(g_key, &real), 0);
	return fg_sync_msg_status(out, node, epoch, seq, flags, fg_sync_epoch_tag(echo_epoch),
				  &real);
}

/* B starts (its first message, a status): A walks its shards and sends B
 * every flow it holds, then a status that says so (CAUGHT_UP, naming B's
 * epoch), never before the last of those flows. */
static void
catchup_sender(struct fg_dp *a, int fd)
{
	const uint64_t epoch_b = 0x5eed0000abcdull;
	struct sockaddr_in fb = from_port(g_pb);
	uint8_t buf[FG_SYNC_MSG_MAX];
	unsigned int records = 0, caught_at = 0;
	struct fg_sync_key key;
	size_t len = status_msg(buf, 2, epoch_b, 1, 0, 0);

	assert_int_equal(fg_sync_key_load(g_key, &key), 0);
	assert_int_equal(fg_sync_rx(a, buf, len, &fb), FG_SYNC_OK);
	for (int guard = 0; caught_at == 0 && guard < 20000; guard++) {
		struct fg_sync_view v;
		ssize_t n;

		if (!pump(a, fd))
			continue;
		while (caught_at == 0 && (n = recv(fd, buf, sizeof(buf), 0)) > 0) {
			assert_int_equal(fg_sync_parse(buf, (size_t)n, &key, &v), FG_SYNC_OK);
			records += v.count;
			if (v.status & FG_SYNC_ST_CAUGHT_UP) {
				assert_int_equal(v.echo, fg_sync_epoch_tag(epoch_b));
				caught_at = records;
			}
		}
	}
	/* every flow A holds came before the status (the socket keeps order) */
	assert_true(caught_at >= N_NAT);
}

/* B's start-up gate: B announces nothing until A said it sent B its flows
 * (a status naming B's epoch) and B's workers installed them; then, A
 * dead and back, A's NAT address stays B's to announce until A says it
 * announces again (and FG_SYNC_HANDBACK_MS more: polled for). */
static void
gate(struct fg_dp *b)
{
	struct sockaddr_in fa = from_port(g_pa);
	struct fg_sync_stats st;
	struct fg_sync_view v;
	struct fg_sync_key real;
	uint8_t buf[FG_SYNC_MSG_MAX];
	size_t len;

	assert_int_equal(fg_sync_key_load(g_key, &real), 0);
	assert_int_equal(fg_sync_parse(g_dgram[0], g_dlen[0], &real, &v), FG_SYNC_OK);
	fg_sync_stats_get(b, &st);
	/* A's flows came, and a status without CAUGHT_UP: not ready */
	len = status_msg(buf, 1, v.epoch, 7000000, FG_SYNC_ST_READY, 0);
	assert_int_equal(fg_sync_rx(b, buf, len, &fa), FG_SYNC_OK);
	assert_false(fg_sync_ready(b));
	fg_sync_stats_get(b, &st);
	assert_false(st.ready);
	assert_string_equal(st.waiting, "peer a: its catch-up not complete");
	assert_false(st.peers[0].caught_up);
	assert_true(st.peers[0].announcing);
	/* CAUGHT_UP for another node's start: still not ready */
	len = status_msg(buf, 1, v.epoch, 7000001, FG_SYNC_ST_READY | FG_SYNC_ST_CAUGHT_UP,
			 st.epoch + 1);
	assert_int_equal(fg_sync_rx(b, buf, len, &fa), FG_SYNC_OK);
	assert_false(fg_sync_ready(b));
	/* for B's: ready once the workers took what came (and for good) */
	len = status_msg(buf, 1, v.epoch, 7000002, FG_SYNC_ST_READY | FG_SYNC_ST_CAUGHT_UP,
			 st.epoch);
	assert_int_equal(fg_sync_rx(b, buf, len, &fa), FG_SYNC_OK);
	poll_workers(b);
	assert_true(fg_sync_ready(b));
	fg_sync_stats_get(b, &st);
	assert_true(st.peers[0].caught_up);
	/* A heard, then silent: dead, its NAT address B's to announce */
	assert_false(fg_sync_peer_dead(b, 0));
	for (int guard = 0; guard < 6000 && !fg_sync_peer_dead(b, 0); guard++)
		usleep(10000);
	assert_true(fg_sync_peer_dead(b, 0));
	/* A back (a new epoch), not announcing yet: still B's, however long */
	len = status_msg(buf, 1, v.epoch + 1, 1, 0, 0);
	assert_int_equal(fg_sync_rx(b, buf, len, &fa), FG_SYNC_OK);
	assert_true(fg_sync_peer_dead(b, 0));
	fg_sync_stats_get(b, &st);
	assert_false(st.peers[0].announcing);
	/* A announces: handed back FG_SYNC_HANDBACK_MS later (A's status
	 * every 100 ms meanwhile keeps it alive) */
	for (int guard = 0; guard < 600 && fg_sync_peer_dead(b, 0); guard++) {
		len = status_msg(buf, 1, v.epoch + 1, 2 + (uint64_t)guard, FG_SYNC_ST_READY, 0);
		assert_int_equal(fg_sync_rx(b, buf, len, &fa), FG_SYNC_OK);
		usleep(100000);
	}
	assert_false(fg_sync_peer_dead(b, 0));
}

/* B's own new NAT flows take B's address only (10.0.0.3), never A's
 * (10.0.0.2: `peer a ... nat 10.0.0.2`, held for the takeover). */
static void
own_nat(struct fg_dp *b)
{
	struct count_ctx c;
	unsigned int before = count(b, false).nat;

	for (unsigned int i = 0; i < 40; i++)
		syn(b, 1000 + i, true);
	memset(g_own, 0, sizeof(g_own));
	c = count(b, false);
	assert_int_equal(c.nat, before + 40);
	assert_int_equal(g_own[2], 0);
	assert_int_equal(g_own[3], 40);
}

static void
t_sync(void **state)
{
	struct fg_sync_key real;
	struct fg_sync_stats st;
	struct sockaddr_in fa = from_port(g_pa);
	uint8_t buf[FG_SYNC_MSG_MAX];
	struct fg_dp *a, *b;
	struct count_ctx c;
	size_t len;
	int fd;

	(void)state;
	fd = udp_bind(g_pb);
	a = dp_make("net_null0", 1);
	for (unsigned int i = 0; i < N_NAT; i++)
		syn(a, i, true);
	for (unsigned int i = 0; i < N_DSR; i++)
		syn(a, N_NAT + i, false);
	c = count(a, true);
	assert_int_equal(c.nat, N_NAT);
	assert_int_equal(c.n, N_NAT + N_DSR);
	collect(a, fd);
	fg_sync_stats_get(a, &st);
	assert_int_equal(st.wc[FG_SYNC_WC_queued], N_NAT);
	assert_int_equal(st.wc[FG_SYNC_WC_queue_full], 0);
	assert_int_equal(st.nc[FG_SYNC_NC_sent_records], N_NAT);
	catchup_sender(a, fd);
	close(fd);
	fg_dp_destroy(a);

	/* closed with a: the next node's port (every ethdev is a port) */
	assert_int_equal(rte_dev_probe("net_null1"), 0);
	b = dp_make("net_null1", 2);
	refusals(b);
	for (unsigned int i = 0; i < g_ndgram; i++)
		assert_int_equal(fg_sync_rx(b, g_dgram[i], g_dlen[i], &fa), FG_SYNC_OK);
	poll_workers(b);
	poll_workers(b);
	c = count(b, false);           /* reply keys: A's */
	assert_int_equal(c.nat, N_NAT);
	assert_int_equal(c.n, N_NAT);
	fg_sync_stats_get(b, &st);
	assert_int_equal(st.wc[FG_SYNC_WC_installed], N_NAT);
	/* again: replays, nothing changes */
	for (unsigned int i = 0; i < g_ndgram; i++)
		assert_int_equal(fg_sync_rx(b, g_dgram[i], g_dlen[i], &fa), FG_SYNC_replay);
	poll_workers(b);
	assert_int_equal(count(b, false).n, N_NAT);
	/* freshest wins: an older copy is kept out, a fresher one replaces */
	assert_int_equal(fg_sync_key_load(g_key, &real), 0);
	len = reforge(buf, &real, 1, 5000000, 5000, FG_SYNC_OP_FLOW, 1);
	assert_int_equal(fg_sync_rx(b, buf, len, &fa), FG_SYNC_OK);
	len = reforge(buf, &real, 1, 5000001, 0, FG_SYNC_OP_FLOW, 1);
	assert_int_equal(fg_sync_rx(b, buf, len, &fa), FG_SYNC_OK);
	len = reforge(buf, &real, 1, 5000002, UINT32_MAX, FG_SYNC_OP_CLOSE, 2);
	assert_int_equal(fg_sync_rx(b, buf, len, &fa), FG_SYNC_OK);
	poll_workers(b);
	fg_sync_stats_get(b, &st);
	assert_int_equal(st.wc[FG_SYNC_WC_stale], 1);
	assert_int_equal(st.wc[FG_SYNC_WC_updated], 1);
	assert_int_equal(st.wc[FG_SYNC_WC_closed], 2);
	assert_int_equal(count(b, false).n, N_NAT - 2);
	/* the backend's answers reach the clients through B */
	for (unsigned int i = 60; i < N_NAT; i += 7)
		reply_forwarded(b, i);
	own_nat(b);
	dsr_record(b);
	gate(b);
	fg_dp_destroy(b);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(t_sync),
	};
	FILE *f;
	int rc;

	if (dpf_eal_init("test_sync", "0@0,1@0,2@0", "fgtsync") != 0)
		return 1;
	snprintf(g_key, sizeof(g_key), "/tmp/fgtsync%d.key", (int)getpid());
	f = fopen(g_key, "w");
	if (f == NULL || fputs("test-shared-key-of-flowgate-sync\n", f) < 0 || fclose(f))
		return 1;
	/* ports of this run: 20000 + pid spread, two in a row */
	g_pa = (uint16_t)(20000 + (getpid() % 20000) * 2);
	g_pb = (uint16_t)(g_pa + 1);
	rc = cmocka_run_group_tests_name("sync", tests, NULL, NULL);
	unlink(g_key);
	rte_eal_cleanup();
	return rc;
}
