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
#include "fg_config_parse.h"
#include "fg_maglev.h"
#include "fg_rss.h"
#include "fgx_load.h"
#include "fgx_maps.h"
#include "fg_xdp.skel.h"

/* Backend slots: a backend (service id, backend id) keeps its slot in
 * fgx_backends for as long as it is configured, so Maglev tables and
 * tracked flows can name it by slot. */
struct fgx_slot {
	uint32_t service;
	uint32_t id;
	uint8_t used;
	uint8_t seen;           /**< in the config being applied */
};

struct fgx {
	struct fg_xdp_bpf *skel;
	int ifindex;            /**< attached to (0 = not attached) */
	__u32 attach_flags;
	struct fgx_slot *slots; /**< FGX_MAX_BACKENDS */
};

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

int fgx_open(const struct fgx_params *p, struct fgx **out)
{
	uint32_t cap = p && p->ct_capacity ? p->ct_capacity : FGX_CT_DEFAULT;
	struct fgx *x;
	int rc;

	x = calloc(1, sizeof(*x));
	if (!x)
		return -ENOMEM;
	x->slots = calloc(FGX_MAX_BACKENDS, sizeof(*x->slots));
	if (!x->slots) {
		free(x);
		return -ENOMEM;
	}
	x->skel = fg_xdp_bpf__open();
	if (!x->skel) {
		rc = -errno;
		goto fail;
	}
	crc32c_table((uint32_t *)x->skel->rodata->fgx_crc_tab);
	memcpy((void *)x->skel->rodata->fgx_rss_tab, fg_rss_table, sizeof(fg_rss_table));
	rc = bpf_map__set_max_entries(x->skel->maps.fgx_ct4, cap);
	if (!rc)
		rc = bpf_map__set_max_entries(x->skel->maps.fgx_ct6, cap / 4 ? cap / 4 : 1);
	if (rc)
		goto fail;
	rc = fg_xdp_bpf__load(x->skel);
	if (rc)
		goto fail;
	{
		struct fgx_cfg c;
		struct ct_config cc;
		uint32_t zero = 0;

		memset(&c, 0, sizeof(c));
		ct_config_defaults(&cc);
		for (int i = 0; i < CT_ST_MAX && i < 16; i++)
			c.timeout_ns[i] = (uint64_t)cc.timeouts.ms[i] * 1000000ull;
		c.pickup_pkts = (uint16_t)cc.pickup_pkts;
		c.pickup_ns = (uint64_t)cc.pickup_ms * 1000000ull;
		c.pass_unknown = p ? p->pass_unknown : 0;
		rc = bpf_map_update_elem(bpf_map__fd(x->skel->maps.fgx_cfg), &zero, &c, 0);
		if (rc) {
			rc = -errno;
			goto fail;
		}
	}
	*out = x;
	return 0;
fail:
	fgx_close(x);
	return rc < 0 ? rc : -EINVAL;
}

void fgx_close(struct fgx *x)
{
	if (!x)
		return;
	fgx_detach(x);
	fg_xdp_bpf__destroy(x->skel);
	free(x->slots);
	free(x);
}

int fgx_prog_fd(const struct fgx *x)
{
	return bpf_program__fd(x->skel->progs.fg_xdp);
}

int fgx_attach(struct fgx *x, int ifindex, enum fgx_mode mode, enum fgx_mode *used)
{
	int fd = fgx_prog_fd(x), rc = -EINVAL;

	if (x->ifindex)
		return -EALREADY;
	if (mode == FGX_MODE_AUTO || mode == FGX_MODE_NATIVE) {
		rc = bpf_xdp_attach(ifindex, fd, XDP_FLAGS_DRV_MODE |
				    XDP_FLAGS_UPDATE_IF_NOEXIST, NULL);
		if (!rc) {
			x->ifindex = ifindex;
			x->attach_flags = XDP_FLAGS_DRV_MODE;
			if (used)
				*used = FGX_MODE_NATIVE;
			return 0;
		}
		if (mode == FGX_MODE_NATIVE)
			return rc;
	}
	rc = bpf_xdp_attach(ifindex, fd, XDP_FLAGS_SKB_MODE |
			    XDP_FLAGS_UPDATE_IF_NOEXIST, NULL);
	if (rc)
		return rc;
	x->ifindex = ifindex;
	x->attach_flags = XDP_FLAGS_SKB_MODE;
	if (used)
		*used = FGX_MODE_GENERIC;
	return 0;
}

int fgx_detach(struct fgx *x)
{
	int rc;

	if (!x || !x->ifindex)
		return 0;
	rc = bpf_xdp_detach(x->ifindex, x->attach_flags, NULL);
	x->ifindex = 0;
	return rc;
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

int fgx_apply(struct fgx *x, const struct fg_config *cfg, const uint8_t *lb_mac,
	      uint16_t mtu, unsigned int flags, char *err, size_t errlen)
{
	int svc_fd = bpf_map__fd(x->skel->maps.fgx_services);
	int byid_fd = bpf_map__fd(x->skel->maps.fgx_svc_by_id);
	int be_fd = bpf_map__fd(x->skel->maps.fgx_backends);
	int cfg_fd = bpf_map__fd(x->skel->maps.fgx_cfg);
	uint8_t live[FGX_MAX_SERVICES] = { 0 };
	struct fgx_cfg c;
	uint32_t zero = 0;
	int rc;

	err[0] = 0;
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
	if (bpf_map_lookup_elem(cfg_fd, &zero, &c))
		return -errno;
	memcpy(c.lb_mac, lb_mac ? lb_mac : cfg->ports[0].mac, 6);
	c.vlan = cfg->ports[0].vlan;
	c.mtu = mtu;
	for (int i = 1; i < CT_ST_MAX && i < 16; i++)
		if (cfg->ct_timeouts_ms[i])
			c.timeout_ns[i] = (uint64_t)cfg->ct_timeouts_ms[i] * 1000000ull;
	if (bpf_map_update_elem(cfg_fd, &zero, &c, 0))
		return -errno;

	for (uint32_t i = 0; i < FGX_MAX_BACKENDS; i++)
		x->slots[i].seen = 0;
	for (uint32_t i = 0; i < cfg->n_services; i++) {
		const struct fg_service_cfg *s = &cfg->services[i];
		uint32_t M = s->maglev_size ? s->maglev_size : fg_maglev_size(s->n_backends);
		struct fgx_svc v;
		struct fgx_svc_key k;
		uint32_t usable = 0, sid = s->id;
		uint32_t *slots;

		if (s->mode == FG_MODE_NAT)
			continue;
		slots = calloc(s->n_backends ? s->n_backends : 1, sizeof(*slots));
		if (!slots)
			return -ENOMEM;
		for (uint32_t j = 0; j < s->n_backends; j++) {
			const struct fg_backend_cfg *b = &s->backends[j];
			int sl = slot_of(x, s->id, b->id);
			uint32_t bk;
			struct fgx_backend bv;

			if (sl < 0) {
				free(slots);
				snprintf(err, errlen, "more than %u backends in all services",
					 FGX_MAX_BACKENDS);
				return -E2BIG;
			}
			bk = (uint32_t)sl;
			slots[j] = bk;
			x->slots[sl].seen = 1;
			const struct fg_addr *src = b->src.family ? &b->src :
						    local_of(cfg, b->addr.family);
			const uint8_t *mac = next_hop_mac(cfg, &b->addr);

			memset(&bv, 0, sizeof(bv));
			bv.flags = FGX_BE_LIVE;
			bv.service = s->id;
			bv.id = b->id;
			bv.family = b->addr.family == AF_INET ? CT_V4 : CT_V6;
			memcpy(bv.addr, b->addr.bytes, 16);
			if (!src) {
				free(slots);
				snprintf(err, errlen, "service %s: backend %u has no outer source "
					 "address (no local address of its family on the port)",
					 s->name, b->id);
				return -EINVAL;
			}
			memcpy(bv.src, src->bytes, 16);
			if (mac) {
				memcpy(bv.dmac, mac, 6);
				bv.flags |= FGX_BE_MAC;
			}
			if (be_usable(b)) {
				bv.flags |= FGX_BE_USABLE;
				usable++;
			}
			if (bpf_map_update_elem(be_fd, &bk, &bv, 0)) {
				rc = -errno;
				free(slots);
				snprintf(err, errlen, "service %s: backend map update failed (%s)",
					 s->name, strerror(errno));
				return rc;
			}
		}
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
		if (bpf_map_update_elem(svc_fd, &k, &v, 0) ||
		    bpf_map_update_elem(byid_fd, &sid, &v, 0)) {
			rc = -errno;
			snprintf(err, errlen, "service %s: service map update failed (%s)",
				 s->name, strerror(errno));
			return rc;
		}
		v.mode = FGX_SVC_ADDR;
		v.live = 0;
		svc_key(&k, &s->vip, 0, 0);
		if (bpf_map_update_elem(svc_fd, &k, &v, 0))
			return -errno;
		live[s->id] = 1;
	}
	/* what the new config no longer has */
	{
		struct fgx_svc_key k, nk, *prev = NULL;
		struct fgx_svc v;

		while (!bpf_map_get_next_key(svc_fd, prev, &nk)) {
			int keep = 0;

			for (uint32_t i = 0; i < cfg->n_services && !keep; i++) {
				const struct fg_service_cfg *s = &cfg->services[i];
				struct fgx_svc_key a, b;

				if (s->mode == FG_MODE_NAT)
					continue;
				svc_key(&a, &s->vip, s->port, s->proto);
				svc_key(&b, &s->vip, 0, 0);
				keep = !memcmp(&a, &nk, sizeof(a)) || !memcmp(&b, &nk, sizeof(b));
			}
			if (!keep && !bpf_map_lookup_elem(svc_fd, &nk, &v)) {
				bpf_map_delete_elem(svc_fd, &nk);
				continue; /* restart from the same predecessor */
			}
			k = nk;
			prev = &k;
		}
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
	/* backends the new config no longer has: their slots become free
	 * (a flow still naming one finds it not live: no_backend) */
	for (uint32_t i = 0; i < FGX_MAX_BACKENDS; i++) {
		struct fgx_backend none;

		if (!x->slots[i].used || x->slots[i].seen)
			continue;
		memset(&none, 0, sizeof(none));
		bpf_map_update_elem(be_fd, &i, &none, 0);
		x->slots[i].used = 0;
	}
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

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);  /* bpf_ktime_get_coarse_ns's clock */
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void flow_info(const struct fg_config *cfg, const struct fgx_cfg *c,
		      int v6, const void *key, const struct fgx_ct *e,
		      uint64_t now, struct fg_flow_info *fi)
{
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

int64_t fgx_flows_walk(struct fgx *x, const struct fg_config *cfg,
		       const struct fg_flow_filter *f, fg_flow_emit_fn emit,
		       void *arg, bool del)
{
	uint64_t now = now_ns();
	int64_t matched = 0;
	struct fgx_cfg c;
	uint32_t zero = 0;

	if (bpf_map_lookup_elem(bpf_map__fd(x->skel->maps.fgx_cfg), &zero, &c))
		return -errno;
	for (int v6 = 0; v6 < 2; v6++) {
		int fd = bpf_map__fd(v6 ? x->skel->maps.fgx_ct6 : x->skel->maps.fgx_ct4);
		union { struct ct_key4 k4; struct ct_key6 k6; } k, nk;
		void *prev = NULL;
		struct fgx_ct e;

		while (!bpf_map_get_next_key(fd, prev, &nk)) {
			struct fg_flow_info fi;
			int gone = 0;

			k = nk;
			prev = &k;
			if (bpf_map_lookup_elem(fd, &k, &e))
				continue;   /* evicted meanwhile */
			if (now - e.last_seen > c.timeout_ns[e.state & 15])
				continue;   /* expired: a lookup would not find it */
			if (e.flags & CT_F_FRAG)
				continue;   /* fragment-follow helper, not a flow */
			flow_info(cfg, &c, v6, &k, &e, now, &fi);
			if (f && !fg_flow_filter_match(f, &fi))
				continue;
			matched++;
			if (emit) {
				int rc = emit(&fi, arg);

				if (rc < 0)
					return rc;
			}
			if (del)
				gone = !bpf_map_delete_elem(fd, &k);
			(void)gone;
			if (f && f->limit && (uint64_t)matched >= f->limit)
				return matched;
		}
	}
	return matched;
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

int fgx_flows_count(struct fgx *x, struct fg_flow_counts *out)
{
	uint64_t now = now_ns();
	struct fgx_cfg c;
	uint32_t zero = 0;
	int ncpu = fgx_ncpus();

	memset(out, 0, sizeof(*out));
	out->n_cores = (uint32_t)(ncpu > FG_CTL_MAX_CORES ? FG_CTL_MAX_CORES : ncpu);
	if (bpf_map_lookup_elem(bpf_map__fd(x->skel->maps.fgx_cfg), &zero, &c))
		return -errno;
	for (int v6 = 0; v6 < 2; v6++) {
		int fd = bpf_map__fd(v6 ? x->skel->maps.fgx_ct6 : x->skel->maps.fgx_ct4);
		union { struct ct_key4 k4; struct ct_key6 k6; } k, nk;
		void *prev = NULL;
		struct fgx_ct e;

		while (!bpf_map_get_next_key(fd, prev, &nk)) {
			k = nk;
			prev = &k;
			if (bpf_map_lookup_elem(fd, &k, &e) ||
			    now - e.last_seen > c.timeout_ns[e.state & 15] ||
			    (e.flags & CT_F_FRAG))
				continue;
			out->total++;
			if (e.cpu < FG_CTL_MAX_CORES)
				out->per_core[e.cpu]++;
			if (e.state < 16)
				out->per_state[e.state]++;
		}
	}
	return 0;
}
