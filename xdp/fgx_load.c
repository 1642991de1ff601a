/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <net/if.h>
#include <linux/if_link.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "ct.h"
#include "fg_config_ct.h"
#include "fg_config_parse.h"
#include "fg_maglev.h"
#include "fg_rss.h"
#include "fgx_maps.h"
#include "fgx_private.h"

/* The slot of (service, id): its own, else a free one; -ENOSPC. */
static int slot_of(struct fgx *x, uint32_t svc, uint32_t id)
{
	int free_slot = -1;

	for (uint32_t i = 0; i < FGX_MAX_BACKENDS; i++) {
		struct fgx_slot *s = &x->slots[i];

		if (s->used && s->service == svc && s->id == id)
			return (int)i;
		if (!s->used && free_slot < 0)
			free_slot = (int)i;
	}
	if (free_slot < 0)
		return -ENOSPC;
	x->slots[free_slot].used = 1;
	x->slots[free_slot].service = svc;
	x->slots[free_slot].id = id;
	return free_slot;
}

int fgx_backend_slot(const struct fgx *x, uint32_t service_id, uint32_t backend_id)
{
	for (uint32_t i = 0; i < FGX_MAX_BACKENDS; i++)
		if (x->slots[i].used && x->slots[i].service == service_id &&
		    x->slots[i].id == backend_id)
			return (int)i;
	return -ENOENT;
}

void fgx_slots_recover(struct fgx *x)
{
	int fd = bpf_map__fd(x->skel->maps.fgx_backends);

	for (uint32_t i = 0; i < FGX_MAX_BACKENDS; i++) {
		struct fgx_backend b;

		memset(&x->slots[i], 0, sizeof(x->slots[i]));
		if (bpf_map_lookup_elem(fd, &i, &b) || !(b.flags & FGX_BE_LIVE))
			continue;
		x->slots[i].used = 1;
		x->slots[i].service = b.service;
		x->slots[i].id = b.id;
	}
}

static void crc32c_table(uint32_t *t)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;

		for (int j = 0; j < 8; j++)
			c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1)));
		t[i] = c;
	}
}

int fgx_ncpus(void)
{
	return libbpf_num_possible_cpus();
}

unsigned int fgx_counter_count(void)
{
	return FGX_CNT_N;
}

int fgx_open(const struct fgx_params *p, struct fgx **out, char *err, size_t errlen)
{
	uint32_t cap = p && p->ct_capacity ? p->ct_capacity : FGX_CT_DEFAULT;
	struct fgx *x;
	int rc;

	err[0] = '\0';
	x = calloc(1, sizeof(*x));
	if (!x)
		return -ENOMEM;
	x->link_fd = x->live_link_fd = -1;
	for (unsigned int i = 0; i < FGX_PIN_N; i++)
		x->pin[i].old_fd = -1;
	if (p)
		x->par = *p;
	x->par.ct_capacity = cap;
	x->par.pin_dir = NULL;
	if (p && p->pin_dir && p->pin_dir[0]) {
		if (strlen(p->pin_dir) >= sizeof(x->pin_dir) - 64) {
			snprintf(err, errlen, "pin directory %s: path too long", p->pin_dir);
			free(x);
			return -ENAMETOOLONG;
		}
		snprintf(x->pin_dir, sizeof(x->pin_dir), "%s", p->pin_dir);
	}
	x->slots = calloc(FGX_MAX_BACKENDS, sizeof(*x->slots));
	x->skel = fg_xdp_bpf__open();
	if (!x->slots || !x->skel) {
		rc = x->slots ? -errno : -ENOMEM;
		snprintf(err, errlen, "cannot open the XDP program: %s", strerror(-rc));
		goto fail;
	}
	crc32c_table((uint32_t *)x->skel->rodata->fgx_crc_tab);
	memcpy((void *)x->skel->rodata->fgx_rss_tab, fg_rss_table, sizeof(fg_rss_table));
	rc = bpf_map__set_max_entries(x->skel->maps.fgx_ct4, cap);
	if (!rc)
		rc = bpf_map__set_max_entries(x->skel->maps.fgx_ct6, cap / 4 ? cap / 4 : 1);
	if (!rc)
		rc = fgx_pin_prepare(x, err, errlen);
	if (rc)
		goto fail;
	rc = fg_xdp_bpf__load(x->skel);
	if (rc) {
		snprintf(err, errlen, "cannot load the XDP program: %s%s", strerror(-rc),
			 rc == -EPERM ? " (needs root / CAP_BPF + CAP_NET_ADMIN)" : "");
		goto fail;
	}
	rc = fgx_pin_commit(x, err, errlen);
	if (rc)
		goto fail;
	fgx_slots_recover(x);
	*out = x;
	return 0;
fail:
	if (!err[0])
		snprintf(err, errlen, "%s", strerror(rc < 0 ? -rc : EINVAL));
	fgx_close(x);
	return rc < 0 ? rc : -EINVAL;
}

void fgx_open_report(const struct fgx *x, char *buf, size_t len)
{
	static const char *const fate[] = { "new", "adopted", "converted", "rebuilt", "reset" };
	unsigned int adopted = 0, fresh = 0;
	size_t o = 0;

	buf[0] = '\0';
	for (unsigned int i = 0; i < FGX_PIN_N; i++) {
		const struct fgx_pinned *pn = &x->pin[i];

		adopted += pn->fate == FGX_MAP_ADOPTED;
		fresh += pn->fate == FGX_MAP_NEW;
		if (pn->fate == FGX_MAP_ADOPTED || pn->fate == FGX_MAP_NEW || o >= len)
			continue;
		o += (size_t)snprintf(buf + o, len - o, "%s%s %s (%s)", o ? ", " : "",
				      fgx_pin_names[i], fate[pn->fate], pn->why);
		if (pn->fate == FGX_MAP_CONVERTED && o < len)
			o += (size_t)snprintf(buf + o, len - o, ": %llu entries",
					      (unsigned long long)pn->converted);
	}
	if (o >= len)
		return;
	if (!x->pin_dir[0])
		snprintf(buf + o, len - o, "%smaps not pinned", o ? "; " : "");
	else if (adopted)
		snprintf(buf + o, len - o, "%sadopted %u pinned maps from %s", o ? "; " : "",
			 adopted, x->pin_dir);
	else if (fresh == FGX_PIN_N)
		snprintf(buf + o, len - o, "new maps pinned in %s", x->pin_dir);
}

void fgx_close(struct fgx *x)
{
	if (!x)
		return;
	if (x->link_fd >= 0)
		close(x->link_fd);     /* unpinned: this detaches */
	if (x->live_link_fd >= 0)
		close(x->live_link_fd);
	fgx_pin_release(x);
	fg_xdp_bpf__destroy(x->skel);
	free(x->slots);
	free(x);
}

int fgx_prog_fd(const struct fgx *x)
{
	return bpf_program__fd(x->skel->progs.fg_xdp);
}

/* ---- config -> maps --------------------------------------------------- */

static int addr_match(const struct fg_addr *a, const struct fg_addr *b)
{
	if (a->family != b->family)
		return 0;
	return !memcmp(a->bytes, b->bytes, a->family == AF_INET ? 4 : 16);
}

static const uint8_t *neigh_mac(const struct fg_config *cfg, const struct fg_addr *a)
{
	for (uint32_t i = 0; i < cfg->n_neigh; i++)
		if (addr_match(&cfg->neigh[i].ip, a))
			return cfg->neigh[i].mac;
	return NULL;
}

/* Next hop MAC towards @p a: a static neighbour for the address itself,
 * else the family's gateway's. */
static const uint8_t *next_hop_mac(const struct fg_config *cfg, const struct fg_addr *a)
{
	const uint8_t *m = neigh_mac(cfg, a);
	const struct fg_addr *gw;

	if (m || cfg->n_ports == 0)
		return m;
	gw = a->family == AF_INET ? &cfg->ports[0].gateway : &cfg->ports[0].gateway6;
	return gw->family ? neigh_mac(cfg, gw) : NULL;
}

static const struct fg_addr *local_of(const struct fg_config *cfg, uint8_t af)
{
	if (cfg->n_ports == 0)
		return NULL;
	for (uint32_t i = 0; i < cfg->ports[0].n_local; i++)
		if (cfg->ports[0].local[i].family == af)
			return &cfg->ports[0].local[i];
	return NULL;
}

static void svc_key(struct fgx_svc_key *k, const struct fg_addr *vip,
		    uint16_t port, uint8_t proto)
{
	memset(k, 0, sizeof(*k));
	memcpy(k->addr, vip->bytes, vip->family == AF_INET ? 4 : 16);
	k->port = htons(port);
	k->proto = proto;
	k->family = vip->family == AF_INET ? CT_V4 : CT_V6;
}

static int be_usable(const struct fg_backend_cfg *b)
{
	return b->weight > 0 && !b->drained && !b->health_down;
}

/* Builds service @p s's Maglev table (backend ids) into a fresh inner
 * map and swaps it into the outer array. */
static int maglev_publish(struct fgx *x, const struct fg_service_cfg *s,
			  const uint32_t *slots, uint32_t M, char *err, size_t errlen)
{
	uint32_t n = s->n_backends, *tab = NULL, *w = NULL;
	uint64_t *keys = NULL;
	int fd = -1, rc;
	LIBBPF_OPTS(bpf_map_create_opts, o, .map_flags = BPF_F_INNER_MAP);

	tab = malloc(sizeof(*tab) * M);
	w = calloc(n ? n : 1, sizeof(*w));
	keys = calloc(n ? n : 1, sizeof(*keys));
	if (!tab || !w || !keys) {
		rc = -ENOMEM;
		goto out;
	}
	for (uint32_t i = 0; i < n; i++) {
		const struct fg_backend_cfg *b = &s->backends[i];

		w[i] = be_usable(b) ? b->weight : 0;
		keys[i] = fg_maglev_backend_key(b->addr.bytes, b->port ? b->port : s->port);
	}
	rc = fg_maglev_build(w, keys, n, M, tab);
	if (rc) {
		snprintf(err, errlen, "service %s: Maglev build failed (%s)", s->name,
			 strerror(-rc));
		goto out;
	}
	for (uint32_t i = 0; i < M; i++)
		if (tab[i] != FG_MAGLEV_NONE)
			tab[i] = slots[tab[i]];
	fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "fgx_maglev_in", 4, 4, M, &o);
	if (fd < 0) {
		rc = -errno;
		snprintf(err, errlen, "service %s: cannot create its Maglev map (%s)",
			 s->name, strerror(errno));
		goto out;
	}
	{
		/* one batch update of the whole table */
		uint32_t *idx = malloc(sizeof(*idx) * M), cnt = M;

		if (!idx) {
			rc = -ENOMEM;
			goto out;
		}
		for (uint32_t i = 0; i < M; i++)
			idx[i] = i;
		rc = bpf_map_update_batch(fd, idx, tab, &cnt, NULL);
		free(idx);
		if (rc) {
			rc = -errno;
			for (uint32_t i = 0; i < M && !rc; i++)
				rc = bpf_map_update_elem(fd, &i, &tab[i], 0) ? -errno : 0;
		}
		if (rc) {
			snprintf(err, errlen, "service %s: Maglev map fill failed", s->name);
			goto out;
		}
	}
	{
		uint32_t sid = s->id;

		if (bpf_map_update_elem(bpf_map__fd(x->skel->maps.fgx_maglev), &sid,
					&fd, 0)) {
			rc = -errno;
			snprintf(err, errlen, "service %s: Maglev swap failed (%s)",
				 s->name, strerror(errno));
		}
	}
out:
	if (fd >= 0)
		close(fd);   /* the outer map holds its own reference */
	free(tab);
	free(w);
	free(keys);
	return rc;
}

/* What the XDP dataplane cannot do is refused by service name. */
static int apply_check(const struct fg_config *cfg, unsigned int flags, char *err,
		       size_t errlen)
{
	if (cfg->n_ports == 0) {
		snprintf(err, errlen, "the config has no port (its MAC, VLAN and local addresses)");
		return -EINVAL;
	}
	for (uint32_t i = 0; i < cfg->n_services; i++) {
		const struct fg_service_cfg *s = &cfg->services[i];

		if (s->mode == FG_MODE_NAT && !(flags & FGX_APPLY_SKIP_NAT)) {
			snprintf(err, errlen, "service %s: mode nat is not supported by the XDP "
				 "dataplane (DSR ipip/gue only, docs/XDP.md)", s->name);
			return -ENOTSUP;
		}
		if (s->sched != FG_SCHED_MAGLEV && s->mode != FG_MODE_NAT) {
			snprintf(err, errlen, "service %s: scheduler %s is not supported by the "
				 "XDP dataplane (maglev only)", s->name, fg_sched_name(s->sched));
			return -ENOTSUP;
		}
		if (s->id >= FGX_MAX_SERVICES) {
			snprintf(err, errlen, "service %s: id %u >= %u services", s->name,
				 s->id, FGX_MAX_SERVICES);
			return -E2BIG;
		}
	}
	return 0;
}

/* The global settings, whole: the conntrack defaults, the config's
 * timeouts and port, the load parameters (one write: a restart that
 * adopted the map never shows the program a half-set value). */
static int apply_cfg(struct fgx *x, const struct fg_config *cfg, const uint8_t *lb_mac,
		     uint16_t mtu)
{
	struct ct_config cc;
	struct fgx_cfg c;
	uint32_t zero = 0;

	memset(&c, 0, sizeof(c));
	ct_config_defaults(&cc);
	fg_config_ct(cfg, &cc);     /* the file's conntrack block, as the DPDK shards take it */
	for (int i = 0; i < CT_ST_MAX && i < 16; i++)
		c.timeout_ns[i] = (uint64_t)cc.timeouts.ms[i] * 1000000ull;
	c.pickup_pkts = (uint16_t)cc.pickup_pkts;
	c.pickup_ns = (uint64_t)cc.pickup_ms * 1000000ull;
	c.pass_unknown = x->par.pass_unknown;
	memcpy(c.lb_mac, lb_mac ? lb_mac : cfg->ports[0].mac, 6);
	c.vlan = cfg->ports[0].vlan;
	c.mtu = mtu;
	return bpf_map_update_elem(bpf_map__fd(x->skel->maps.fgx_cfg), &zero, &c, 0) ? -errno : 0;
}

/* Backend @p b of service @p s into its slot; *usable counts it. */
static int apply_backend(struct fgx *x, const struct fg_config *cfg,
			 const struct fg_service_cfg *s, const struct fg_backend_cfg *b,
			 uint32_t *slot, uint32_t *usable, char *err, size_t errlen)
{
	int sl = slot_of(x, s->id, b->id);
	const struct fg_addr *src = b->src.family ? &b->src : local_of(cfg, b->addr.family);
	const uint8_t *mac = next_hop_mac(cfg, &b->addr);
	struct fgx_backend bv;

	if (sl < 0) {
		snprintf(err, errlen, "more than %u backends in all services", FGX_MAX_BACKENDS);
		return -E2BIG;
	}
	if (!src) {
		snprintf(err, errlen, "service %s: backend %u has no outer source address (no "
			 "local address of its family on the port)", s->name, b->id);
		return -EINVAL;
	}
	*slot = (uint32_t)sl;
	x->slots[sl].seen = 1;
	memset(&bv, 0, sizeof(bv));
	bv.flags = FGX_BE_LIVE;
	bv.service = s->id;
	bv.id = b->id;
	bv.family = b->addr.family == AF_INET ? CT_V4 : CT_V6;
	memcpy(bv.addr, b->addr.bytes, 16);
	memcpy(bv.src, src->bytes, 16);
	if (mac) {
		memcpy(bv.dmac, mac, 6);
		bv.flags |= FGX_BE_MAC;
	}
	if (be_usable(b)) {
		bv.flags |= FGX_BE_USABLE;
		(*usable)++;
	}
	if (bpf_map_update_elem(bpf_map__fd(x->skel->maps.fgx_backends), slot, &bv, 0)) {
		snprintf(err, errlen, "service %s: backend map update failed (%s)", s->name,
			 strerror(errno));
		return -errno;
	}
	return 0;
}

/* Service @p s: its backends, its Maglev table, then its entries. */
static int apply_service(struct fgx *x, const struct fg_config *cfg,
			 const struct fg_service_cfg *s, char *err, size_t errlen)
{
	uint32_t M = s->maglev_size ? s->maglev_size : fg_maglev_size(s->n_backends);
	uint32_t usable = 0, sid = s->id, *slots;
	struct fgx_svc v;
	struct fgx_svc_key k;
	int rc = 0;

	slots = calloc(s->n_backends ? s->n_backends : 1, sizeof(*slots));
	if (!slots)
		return -ENOMEM;
	for (uint32_t j = 0; j < s->n_backends && !rc; j++)
		rc = apply_backend(x, cfg, s, &s->backends[j], &slots[j], &usable, err, errlen);
	if (!rc)
		rc = maglev_publish(x, s, slots, M, err, errlen);
	free(slots);
	if (rc)
		return rc;
	memset(&v, 0, sizeof(v));
	v.id = s->id;
	v.mode = s->mode == FG_MODE_DSR_GUE ? FGX_MODE_GUE : FGX_MODE_IPIP;
	v.live = 1;
	v.gue_port = htons(s->gue_port ? s->gue_port : 6080);
	v.maglev_size = M;
	v.n_usable = usable;
	svc_key(&k, &s->vip, s->port, s->proto);
	if (bpf_map_update_elem(bpf_map__fd(x->skel->maps.fgx_services), &k, &v, 0) ||
	    bpf_map_update_elem(bpf_map__fd(x->skel->maps.fgx_svc_by_id), &sid, &v, 0)) {
		snprintf(err, errlen, "service %s: service map update failed (%s)", s->name,
			 strerror(errno));
		return -errno;
	}
	v.mode = FGX_SVC_ADDR;
	v.live = 0;
	svc_key(&k, &s->vip, 0, 0);
	return bpf_map_update_elem(bpf_map__fd(x->skel->maps.fgx_services), &k, &v, 0) ?
	       -errno : 0;
}

static bool svc_key_kept(const struct fg_config *cfg, const struct fgx_svc_key *nk)
{
	for (uint32_t i = 0; i < cfg->n_services; i++) {
		const struct fg_service_cfg *s = &cfg->services[i];
		struct fgx_svc_key a, b;

		if (s->mode == FG_MODE_NAT)
			continue;
		svc_key(&a, &s->vip, s->port, s->proto);
		svc_key(&b, &s->vip, 0, 0);
		if (!memcmp(&a, nk, sizeof(a)) || !memcmp(&b, nk, sizeof(b)))
			return true;
	}
	return false;
}

/* What the new config no longer has: service entries, service ids, and
 * backend slots (a flow still naming a freed slot finds it not live:
 * no_backend; the slot's counters restart for its next backend). */
static void apply_prune(struct fgx *x, const struct fg_config *cfg, const uint8_t *live)
{
	int svc_fd = bpf_map__fd(x->skel->maps.fgx_services);
	int byid_fd = bpf_map__fd(x->skel->maps.fgx_svc_by_id);
	int be_fd = bpf_map__fd(x->skel->maps.fgx_backends);
	int st_fd = bpf_map__fd(x->skel->maps.fgx_be_stats);
	struct fgx_svc_key k, nk, *prev = NULL;
	struct fgx_be_stats *zero_st;
	int ncpu = fgx_ncpus();

	while (!bpf_map_get_next_key(svc_fd, prev, &nk)) {
		if (!svc_key_kept(cfg, &nk) && !bpf_map_delete_elem(svc_fd, &nk))
			continue; /* restart from the same predecessor */
		k = nk;
		prev = &k;
	}
	for (uint32_t sid = 0; sid < FGX_MAX_SERVICES; sid++) {
		struct fgx_svc v;

		if (live[sid])
			continue;
		if (!bpf_map_lookup_elem(byid_fd, &sid, &v) && v.live) {
			memset(&v, 0, sizeof(v));
			bpf_map_update_elem(byid_fd, &sid, &v, 0);
			bpf_map_delete_elem(bpf_map__fd(x->skel->maps.fgx_maglev), &sid);
		}
	}
	zero_st = calloc(ncpu > 0 ? (size_t)ncpu : 1, sizeof(*zero_st));
	for (uint32_t i = 0; i < FGX_MAX_BACKENDS; i++) {
		struct fgx_backend none;

		if (!x->slots[i].used || x->slots[i].seen)
			continue;
		memset(&none, 0, sizeof(none));
		bpf_map_update_elem(be_fd, &i, &none, 0);
		if (zero_st)
			bpf_map_update_elem(st_fd, &i, zero_st, 0);
		x->slots[i].used = 0;
	}
	free(zero_st);
}

int fgx_apply(struct fgx *x, const struct fg_config *cfg, const uint8_t *lb_mac,
	      uint16_t mtu, unsigned int flags, char *err, size_t errlen)
{
	uint8_t live[FGX_MAX_SERVICES] = { 0 };
	int rc;

	err[0] = 0;
	rc = apply_check(cfg, flags, err, errlen);
	if (rc)
		return rc;
	rc = apply_cfg(x, cfg, lb_mac, mtu);
	if (rc)
		return rc;
	for (uint32_t i = 0; i < FGX_MAX_BACKENDS; i++)
		x->slots[i].seen = 0;
	for (uint32_t i = 0; i < cfg->n_services; i++) {
		const struct fg_service_cfg *s = &cfg->services[i];

		if (s->mode == FG_MODE_NAT)
			continue;
		rc = apply_service(x, cfg, s, err, errlen);
		if (rc)
			return rc;
		live[s->id] = 1;
	}
	apply_prune(x, cfg, live);
	return 0;
}

/* ---- counters and flows ------------------------------------------------ */

int fgx_counters(const struct fgx *x, uint64_t *sum, uint64_t *per_cpu)
{
	int fd = bpf_map__fd(x->skel->maps.fgx_counters);
	int ncpu = fgx_ncpus();
	struct fgx_counters *v;
	uint32_t zero = 0;

	if (ncpu <= 0)
		return -EINVAL;
	v = calloc((size_t)ncpu, sizeof(*v));
	if (!v)
		return -ENOMEM;
	if (bpf_map_lookup_elem(fd, &zero, v)) {
		free(v);
		return -errno;
	}
	for (uint32_t i = 0; i < FGX_CNT_N; i++) {
		sum[i] = 0;
		for (int c = 0; c < ncpu; c++) {
			sum[i] += v[c].c[i];
			if (per_cpu)
				per_cpu[(size_t)c * FGX_CNT_N + i] = v[c].c[i];
		}
	}
	free(v);
	return 0;
}

uint64_t fgx_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);  /* bpf_ktime_get_coarse_ns's clock */
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t fgx_wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000ull + (uint64_t)ts.tv_nsec / 1000000ull;
}

/* Whether entry @p e is a live flow at @p now: not expired (as a lookup
 * would find it) and not a fragment-follow helper.  The coarse clock of
 * user space may read a tick behind the program's. */
static bool ct_live(const struct fgx_cfg *c, const struct fgx_ct *e, uint64_t now)
{
	uint64_t idle = now > e->last_seen ? now - e->last_seen : 0;

	return idle <= c->timeout_ns[e->state & 15] && !(e->flags & CT_F_FRAG);
}

void fgx_flow_info(const struct fg_config *cfg, const struct fgx_ct_walk *w,
		   struct fg_flow_info *fi)
{
	const struct fgx_cfg *c = &w->cfg;
	const struct fgx_ct *e = &w->e;
	const void *key = w->key;
	uint64_t now = w->now, wall = w->wall;
	int v6 = w->v6;

	memset(fi, 0, sizeof(*fi));
	if (v6) {
		const struct ct_key6 *k = key;

		fi->src.family = fi->dst.family = AF_INET6;
		memcpy(fi->src.bytes, k->saddr, 16);
		memcpy(fi->dst.bytes, k->daddr, 16);
		fi->sport = ntohs(k->sport);
		fi->dport = ntohs(k->dport);
		fi->proto = k->proto;
	} else {
		const struct ct_key4 *k = key;

		fi->src.family = fi->dst.family = AF_INET;
		memcpy(fi->src.bytes, &k->saddr, 4);
		memcpy(fi->dst.bytes, &k->daddr, 4);
		fi->sport = ntohs(k->sport);
		fi->dport = ntohs(k->dport);
		fi->proto = k->proto;
	}
	fi->flags = e->flags;
	snprintf(fi->state, sizeof(fi->state), "%s",
		 e->state < CT_ST_MAX ? ct_state_names[e->state] : "?");
	fi->service_id = e->service;
	fi->backend_id = e->backend;
	fi->core = e->cpu;
	fi->packets = e->packets;
	fi->bytes = e->bytes;
	fi->idle_ms = now > e->last_seen ? (now - e->last_seen) / 1000000ull : 0;
	fi->lifetime_ms = now > e->first_seen ? (now - e->first_seen) / 1000000ull : 0;
	if (fi->idle_ms > fi->lifetime_ms)
		fi->idle_ms = fi->lifetime_ms;
	fi->created_ms = wall > fi->lifetime_ms ? wall - fi->lifetime_ms : 0;
	{
		uint64_t to = c->timeout_ns[e->state & 15] / 1000000ull;

		fi->expires_ms = to > fi->idle_ms ? to - fi->idle_ms : 0;
	}
	for (uint32_t i = 0; cfg && i < cfg->n_services; i++) {
		const struct fg_service_cfg *s = &cfg->services[i];

		if (s->id != e->service)
			continue;
		if (s->name[0])
			snprintf(fi->service, sizeof(fi->service), "%s", s->name);
		for (uint32_t j = 0; j < s->n_backends; j++) {
			if (s->backends[j].id != e->backend)
				continue;
			fi->backend = s->backends[j].addr;
			fi->backend_port = s->backends[j].port ? s->backends[j].port : s->port;
		}
	}
}

/* One live entry to the callback: 0 goes on, 1 stops, < 0 an error. */
static int walk_entry(struct fgx_ct_walk *w, fgx_ct_fn fn, void *arg, int64_t *n)
{
	int rc;

	if (!ct_live(&w->cfg, &w->e, w->now))
		return 0;   /* expired, a fragment-follow helper */
	(*n)++;
	rc = fn(w, arg);
	return rc < 0 ? rc : rc > 0;
}

/* Key by key: two syscalls an entry (kernels without batch lookups). */
static int walk_keys(struct fgx_ct_walk *w, fgx_ct_fn fn, void *arg, int64_t *n)
{
	union { struct ct_key4 k4; struct ct_key6 k6; } k, nk;
	void *prev = NULL;
	int rc = 0;

	w->key = &k;
	while (!rc && !bpf_map_get_next_key(w->fd, prev, &nk)) {
		k = nk;
		prev = &k;
		if (bpf_map_lookup_elem(w->fd, &k, &w->e) == 0)   /* else evicted meanwhile */
			rc = walk_entry(w, fn, arg, n);
	}
	return rc;
}

/* FGX_WALK_BATCH entries a syscall; -EINVAL / -ENOTSUP from the first
 * call when the kernel has no batch lookups for the map. */
#define FGX_WALK_BATCH 4096

static int walk_batches(struct fgx_ct_walk *w, fgx_ct_fn fn, void *arg, int64_t *n)
{
	uint32_t ks = w->v6 ? sizeof(struct ct_key6) : sizeof(struct ct_key4);
	uint8_t *keys = malloc((size_t)FGX_WALK_BATCH * ks);
	struct fgx_ct *vals = malloc(FGX_WALK_BATCH * sizeof(*vals));
	uint64_t tok_in[8], tok_out[8];   /* the map's batch position (a bucket) */
	void *in = NULL;
	int rc = 0, calls = 0;

	if (!keys || !vals) {
		rc = -ENOMEM;
		goto out;
	}
	while (rc == 0) {
		uint32_t cnt = FGX_WALK_BATCH;
		int e = bpf_map_lookup_batch(w->fd, in, tok_out, keys, vals, &cnt, NULL) ? errno : 0;

		if (e && e != ENOENT) {
			rc = calls == 0 && (e == EINVAL || e == ENOTSUP || e == EOPNOTSUPP) ?
			     -ENOTSUP : -e;
			break;
		}
		calls++;
		for (uint32_t i = 0; rc == 0 && i < cnt; i++) {
			w->key = keys + (size_t)i * ks;
			w->e = vals[i];
			rc = walk_entry(w, fn, arg, n);
		}
		if (e == ENOENT)
			break;  /* the last batch */
		memcpy(tok_in, tok_out, sizeof(tok_in));
		in = tok_in;
	}
out:
	free(keys);
	free(vals);
	return rc;
}

int64_t fgx_ct_each(struct fgx *x, fgx_ct_fn fn, void *arg)
{
	struct fgx_ct_walk w = { .now = fgx_now_ns(), .wall = fgx_wall_ms() };
	uint32_t zero = 0;
	int64_t n = 0;
	int rc = 0;

	if (bpf_map_lookup_elem(bpf_map__fd(x->skel->maps.fgx_cfg), &zero, &w.cfg))
		return -errno;
	for (w.v6 = 0; rc == 0 && w.v6 < 2; w.v6++) {
		w.fd = bpf_map__fd(w.v6 ? x->skel->maps.fgx_ct6 : x->skel->maps.fgx_ct4);
		rc = walk_batches(&w, fn, arg, &n);
		if (rc == -ENOTSUP)
			rc = walk_keys(&w, fn, arg, &n);
	}
	return rc < 0 ? rc : n;
}

struct walk_arg {
	const struct fg_config *cfg;
	const struct fg_flow_filter *f;
	fg_flow_emit_fn emit;
	void *arg;
	bool del;
	int64_t matched;
};

static int walk_one(const struct fgx_ct_walk *w, void *arg)
{
	struct walk_arg *a = arg;
	struct fg_flow_info fi;

	fgx_flow_info(a->cfg, w, &fi);
	if (a->f && !fg_flow_filter_match(a->f, &fi))
		return 0;
	a->matched++;
	if (a->emit) {
		int rc = a->emit(&fi, a->arg);

		if (rc < 0)
			return rc;
	}
	if (a->del)
		bpf_map_delete_elem(w->fd, w->key);
	return a->f && a->f->limit && (uint64_t)a->matched >= a->f->limit;
}

int64_t fgx_flows_walk(struct fgx *x, const struct fg_config *cfg,
		       const struct fg_flow_filter *f, fg_flow_emit_fn emit,
		       void *arg, bool del)
{
	struct walk_arg a = { cfg, f, emit, arg, del, 0 };
	int64_t rc = fgx_ct_each(x, walk_one, &a);

	return rc < 0 ? rc : a.matched;
}

int64_t fgx_ct_flush(struct fgx *x)
{
	int64_t n = 0;

	for (int v6 = 0; v6 < 2; v6++) {
		int fd = bpf_map__fd(v6 ? x->skel->maps.fgx_ct6 : x->skel->maps.fgx_ct4);
		union { struct ct_key4 k4; struct ct_key6 k6; } k;

		/* always delete the first key: the walk never skips one */
		while (!bpf_map_get_next_key(fd, NULL, &k)) {
			if (bpf_map_delete_elem(fd, &k))
				return -errno;
			n++;
		}
	}
	return n;
}

static int count_one(const struct fgx_ct_walk *w, void *arg)
{
	struct fg_flow_counts *out = arg;

	out->total++;
	if (w->e.cpu < FG_CTL_MAX_CORES)
		out->per_core[w->e.cpu]++;
	if (w->e.state < 16)
		out->per_state[w->e.state]++;
	return 0;
}

int fgx_flows_count(struct fgx *x, struct fg_flow_counts *out)
{
	int ncpu = fgx_ncpus();
	int64_t rc;

	memset(out, 0, sizeof(*out));
	out->n_cores = (uint32_t)(ncpu > FG_CTL_MAX_CORES ? FG_CTL_MAX_CORES : ncpu);
	rc = fgx_ct_each(x, count_one, out);
	return rc < 0 ? (int)rc : 0;
}

int fgx_backend_counters(const struct fgx *x, uint32_t slot, uint64_t *packets,
			 uint64_t *bytes, uint64_t *new_flows)
{
	int ncpu = fgx_ncpus();
	struct fgx_be_stats *v;

	*packets = *bytes = *new_flows = 0;
	if (ncpu <= 0 || slot >= FGX_MAX_BACKENDS)
		return -EINVAL;
	v = calloc((size_t)ncpu, sizeof(*v));
	if (!v)
		return -ENOMEM;
	if (bpf_map_lookup_elem(bpf_map__fd(x->skel->maps.fgx_be_stats), &slot, v)) {
		free(v);
		return -errno;
	}
	for (int c = 0; c < ncpu; c++) {
		*packets += v[c].packets;
		*bytes += v[c].bytes;
		*new_flows += v[c].new_flows;
	}
	free(v);
	return 0;
}

struct census_arg {
	struct fgx_census *c;
	const struct fgx *x;
};

static int census_one(const struct fgx_ct_walk *w, void *arg)
{
	struct fgx_census *c = ((struct census_arg *)arg)->c;
	const struct fgx *x = ((struct census_arg *)arg)->x;
	const struct fgx_slot *sl;

	c->total++;
	if (w->e.cpu < FG_CTL_MAX_CORES)
		c->by_cpu_state[w->e.cpu][w->e.state & 15]++;
	if (!c->active || w->e.slot >= FGX_MAX_BACKENDS)
		return 0;
	/* a flow of a removed backend whose slot went to another: not its */
	sl = &x->slots[w->e.slot];
	if (!sl->used || sl->service != w->e.service || sl->id != w->e.backend)
		return 0;
	if (w->e.state == CT_ST_ESTABLISHED)
		c->active[w->e.slot]++;
	else
		c->inactive[w->e.slot]++;
	return 0;
}

int fgx_census(struct fgx *x, struct fgx_census *out)
{
	struct census_arg a = { out, x };
	int64_t rc;

	out->total = 0;
	memset(out->by_cpu_state, 0, sizeof(out->by_cpu_state));
	if (out->active) {
		memset(out->active, 0, sizeof(*out->active) * FGX_MAX_BACKENDS);
		memset(out->inactive, 0, sizeof(*out->inactive) * FGX_MAX_BACKENDS);
	}
	rc = fgx_ct_each(x, census_one, &a);
	return rc < 0 ? (int)rc : 0;
}
