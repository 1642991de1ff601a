/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The maps that outlive flowgate-xdp (fgx_load.h, "Restarts").
 *
 * Each map of FGX_PIN_LIST is pinned as DIR/<name>-<S>-<id> (bpffs takes
 * no '.' in a name): S is the
 * 32-bit hash of what the map's contents mean beyond their layout
 * (FGX_SEMANTICS, and for conntrack the state names, for the counters
 * their names, for the Maglev array its inner map), id the kernel's map
 * id (two generations of one map can be pinned at once during an
 * upgrade).  The layout itself is not trusted to a name: it is read from
 * the BTF the kernel keeps with the pinned map and compared, type by
 * type and member by member, with this build's.
 *
 * Which pinned map is the truth: the one the running program (DIR/link)
 * uses; with no program running, the one of this build's S if there is
 * one.  Every other file of that map is stale and goes once this build
 * runs.  A map equal in S, layout and size is adopted as it is
 * (bpf_map__reuse_fd: the program is loaded against it); otherwise its
 * policy decides (fgx_private.h).  Conversion copies member by member by
 * name, each conntrack entry from the CPU that created it (as its packets
 * would insert it: builds before issue 38 had per-CPU LRU lists), once before the program swap and once after it for what
 * the old program added meanwhile.
 */
#include <dirent.h>
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "ct.h"
#include "fg_counters.h"
#include "fgx_maps.h"
#include "fg_xlist.h"
#include "fgx_private.h"

#ifndef BPF_FS_MAGIC
#define BPF_FS_MAGIC 0xcafe4a11
#endif

const char *const fgx_pin_names[FGX_PIN_N] = { FGX_PIN_LIST(FG_XL_NAME) };
static const enum fgx_pin_policy policy[FGX_PIN_N] = { FGX_PIN_LIST(FG_XL_SECOND) };

struct bpf_map *fgx_pin_map(const struct fgx *x, unsigned int i)
{
	return bpf_object__find_map_by_name(x->skel->obj, fgx_pin_names[i]);
}

/* ---- hashes ------------------------------------------------------------ */

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;

	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ull;
	return h;
}

static uint64_t fnv_u(uint64_t h, uint64_t v)
{
	return fnv(h, &v, sizeof(v));
}

static uint64_t fnv_s(uint64_t h, const char *s)
{
	return fnv(h, s ? s : "", s ? strlen(s) + 1 : 1);
}

/* What a map's contents mean beyond their layout (see the top). */
static uint32_t sem_hash(const struct fgx *x, unsigned int i)
{
	uint64_t h = fnv_u(0xcbf29ce484222325ull, FGX_SEMANTICS);

	h = fnv_s(h, fgx_pin_names[i]);
	if (i == FGX_PIN_fgx_ct4 || i == FGX_PIN_fgx_ct6)
		for (int s = 0; s < CT_ST_MAX; s++)
			h = fnv_s(h, ct_state_names[s]);
	if (i == FGX_PIN_fgx_counters) {
		for (int c = 0; c < FG_CC_MAX; c++)
			h = fnv_s(h, fg_core_counter_names[c]);
		for (int r = 0; r < FG_DROP_MAX; r++)
			h = fnv_s(h, fg_drop_names[r]);
	}
	if (i == FGX_PIN_fgx_maglev) {
		const struct bpf_map *in = bpf_map__inner_map(fgx_pin_map(x, i));

		if (in) {
			h = fnv_u(h, bpf_map__type(in));
			h = fnv_u(h, bpf_map__key_size(in));
			h = fnv_u(h, bpf_map__value_size(in));
			h = fnv_u(h, bpf_map__map_flags(in));
		}
	}
	return (uint32_t)(h ^ (h >> 32));
}

static const struct btf_type *skip_mods(const struct btf *b, uint32_t *id)
{
	const struct btf_type *t = btf__type_by_id(b, *id);

	while (t && (btf_is_typedef(t) || btf_is_const(t) || btf_is_volatile(t) ||
		     btf_is_restrict(t) || btf_is_type_tag(t))) {
		*id = t->type;
		t = btf__type_by_id(b, *id);
	}
	return t;
}

/* A type's layout: kinds, sizes, member names and offsets, array
 * lengths, integer encodings, enum values; typedef names do not count. */
static uint64_t btf_hash(const struct btf *b, uint32_t id, uint64_t h, int depth)
{
	const struct btf_type *t = skip_mods(b, &id);

	if (!t || depth > 8)
		return fnv_u(h, 0xdead);
	h = fnv_u(h, btf_kind(t));
	if (btf_is_int(t)) {
		h = fnv_u(h, t->size);
		return fnv_u(h, btf_int_encoding(t) << 16 | btf_int_bits(t));
	}
	if (btf_is_array(t)) {
		const struct btf_array *a = btf_array(t);

		h = fnv_u(h, a->nelems);
		return btf_hash(b, a->type, h, depth + 1);
	}
	if (btf_is_composite(t)) {
		const struct btf_member *m = btf_members(t);

		h = fnv_u(h, t->size);
		for (unsigned int k = 0; k < btf_vlen(t); k++, m++) {
			h = fnv_s(h, btf__name_by_offset(b, m->name_off));
			h = fnv_u(h, btf_member_bit_offset(t, k) << 8 |
				  btf_member_bitfield_size(t, k));
			h = btf_hash(b, m->type, h, depth + 1);
		}
		return h;
	}
	if (btf_is_enum(t)) {
		const struct btf_enum *e = btf_enum(t);

		h = fnv_u(h, t->size);
		for (unsigned int k = 0; k < btf_vlen(t); k++, e++)
			h = fnv_u(fnv_s(h, btf__name_by_offset(b, e->name_off)), (uint32_t)e->val);
		return h;
	}
	return fnv_u(h, t->size);
}

struct layout {
	uint32_t type, key_size, value_size, flags, max_entries;
	uint64_t key, value;    /* btf_hash of the key and value types (0: no BTF) */
};

static void layout_of_map(const struct bpf_map *m, const struct btf *b, struct layout *l)
{
	uint32_t k = bpf_map__btf_key_type_id(m), v = bpf_map__btf_value_type_id(m);

	l->type = bpf_map__type(m);
	l->key_size = bpf_map__key_size(m);
	l->value_size = bpf_map__value_size(m);
	l->flags = bpf_map__map_flags(m);
	l->max_entries = bpf_map__max_entries(m);
	l->key = k && b ? btf_hash(b, k, 1, 0) : 0;
	l->value = v && b ? btf_hash(b, v, 1, 0) : 0;
}

/* The pinned map's layout, from its own BTF (kept by the kernel). */
static int layout_of_fd(int fd, struct layout *l, struct btf **btf, uint32_t *val_type)
{
	struct bpf_map_info in;
	uint32_t len = sizeof(in);

	memset(&in, 0, sizeof(in));
	if (bpf_obj_get_info_by_fd(fd, &in, &len))
		return -errno;
	l->type = in.type;
	l->key_size = in.key_size;
	l->value_size = in.value_size;
	l->flags = in.map_flags;
	l->max_entries = in.max_entries;
	l->key = l->value = 0;
	*btf = NULL;
	*val_type = in.btf_value_type_id;
	if (in.btf_id) {
		*btf = btf__load_from_kernel_by_id(in.btf_id);
		if (*btf) {
			l->key = in.btf_key_type_id ? btf_hash(*btf, in.btf_key_type_id, 1, 0) : 0;
			l->value = in.btf_value_type_id ?
				   btf_hash(*btf, in.btf_value_type_id, 1, 0) : 0;
		}
	}
	return 0;
}

/* ---- conversion -------------------------------------------------------- */

static const struct btf_member *member_named(const struct btf *b, const struct btf_type *t,
					     const char *name, uint32_t *bit_off)
{
	const struct btf_member *m = btf_members(t);

	for (unsigned int k = 0; k < btf_vlen(t); k++, m++) {
		if (btf_member_bitfield_size(t, k))
			continue;
		if (!strcmp(btf__name_by_offset(b, m->name_off), name)) {
			*bit_off = btf_member_bit_offset(t, k);
			return m;
		}
	}
	return NULL;
}

/* Copies @p nt (in @p nb, at @p nv) from @p ot (in @p ob, at @p ov):
 * integers of one size, arrays element by element (the shorter length),
 * structs member by member by name; anything else stays zero. */
static void convert(const struct btf *ob, uint32_t ot, const uint8_t *ov,
		    const struct btf *nb, uint32_t nt, uint8_t *nv, int depth)
{
	const struct btf_type *o = skip_mods(ob, &ot), *n = skip_mods(nb, &nt);

	if (!o || !n || depth > 8 || btf_kind(o) != btf_kind(n))
		return;
	if (btf_is_int(n) || btf_is_enum(n)) {
		if (o->size == n->size)
			memcpy(nv, ov, n->size);
		return;
	}
	if (btf_is_array(n)) {
		const struct btf_array *oa = btf_array(o), *na = btf_array(n);
		int64_t os = btf__resolve_size(ob, oa->type), ns = btf__resolve_size(nb, na->type);
		uint32_t cnt = oa->nelems < na->nelems ? oa->nelems : na->nelems;

		for (uint32_t i = 0; os > 0 && ns > 0 && i < cnt; i++)
			convert(ob, oa->type, ov + i * os, nb, na->type, nv + i * ns, depth + 1);
		return;
	}
	if (!btf_is_struct(n))
		return;
	const struct btf_member *m = btf_members(n);

	for (unsigned int k = 0; k < btf_vlen(n); k++, m++) {
		uint32_t obit;
		const struct btf_member *om;

		if (btf_member_bitfield_size(n, k))
			continue;
		om = member_named(ob, o, btf__name_by_offset(nb, m->name_off), &obit);
		if (om)
			convert(ob, om->type, ov + obit / 8, nb, m->type,
				nv + btf_member_bit_offset(n, k) / 8, depth + 1);
	}
}

static int cpu_of(unsigned int i, const void *nv)
{
	if (i == FGX_PIN_fgx_ct4 || i == FGX_PIN_fgx_ct6)
		return ((const struct fgx_ct *)nv)->cpu;
	return -1;
}

/* Every entry of map @p fd: *keys and *vals (caller frees), *n of them;
 * batches where the kernel has them, else key by key. */
static int read_all(int fd, uint32_t ks, uint32_t vs, uint8_t **keys, uint8_t **vals,
		    size_t *n)
{
	size_t cap = 4096, k = 0;
	uint64_t tok_in[8], tok_out[8], prev[8];   /* keys are at most 48 bytes */
	void *in = NULL, *pk = NULL;
	bool batch = true;

	*keys = malloc(cap * ks);
	*vals = malloc(cap * vs);
	while (*keys && *vals) {
		uint32_t cnt = 1024;
		int e = 0;

		if (k + cnt > cap) {
			uint8_t *nk = realloc(*keys, cap * 2 * ks), *nv = nk ? realloc(*vals, cap * 2 * vs) : NULL;

			if (nk)
				*keys = nk;
			if (!nk || !nv)
				return -ENOMEM;
			*vals = nv;
			cap *= 2;
		}
		if (batch) {
			e = bpf_map_lookup_batch(fd, in, tok_out, *keys + k * ks, *vals + k * vs, &cnt,
						 NULL) ? errno : 0;
			if (e && e != ENOENT && k == 0 && !in) {
				batch = false;  /* no batch lookups: key by key below */
				continue;
			}
			if (e && e != ENOENT)
				return -e;
			k += cnt;
			if (e == ENOENT)
				break;
			memcpy(tok_in, tok_out, sizeof(tok_in));
			in = tok_in;
			continue;
		}
		if (ks > sizeof(prev) || bpf_map_get_next_key(fd, pk, *keys + k * ks))
			break;
		memcpy(prev, *keys + k * ks, ks);
		pk = prev;
		if (bpf_map_lookup_elem(fd, *keys + k * ks, *vals + k * vs) == 0)
			k++;   /* else evicted meanwhile */
	}
	*n = k;
	return *keys && *vals ? 0 : -ENOMEM;
}

/* Copies every entry of the old map into the new one (@p flags
 * BPF_ANY or BPF_NOEXIST), converting values when the layouts differ,
 * each from the CPU recorded in it (conntrack: an insert takes its free
 * entry from that CPU's LRU cache, as the flow's own packets do).  @return entries copied, or -errno. */
static int64_t copy_entries(struct fgx *x, unsigned int i, uint64_t flags)
{
	struct fgx_pinned *pn = &x->pin[i];
	struct bpf_map *m = fgx_pin_map(x, i);
	const struct btf *nb = bpf_object__btf(x->skel->obj);
	uint32_t ks = bpf_map__key_size(m), nvs = bpf_map__value_size(m);
	uint32_t nvt = bpf_map__btf_value_type_id(m);
	int nfd = bpf_map__fd(m), ncpu = libbpf_num_possible_cpus();
	struct bpf_map_info in;
	uint32_t len = sizeof(in);
	uint8_t *keys = NULL, *ov = NULL, *nv = NULL;
	size_t n = 0;
	int64_t done = 0;
	cpu_set_t saved;
	int rc;

	memset(&in, 0, sizeof(in));
	if (bpf_obj_get_info_by_fd(pn->old_fd, &in, &len))
		return -errno;
	rc = read_all(pn->old_fd, ks, in.value_size, &keys, &ov, &n);
	nv = rc ? NULL : calloc(n ? n : 1, nvs);
	if (rc || !nv) {
		done = rc ? rc : -ENOMEM;
		goto out;
	}
	for (size_t k = 0; k < n; k++) {
		if (pn->old_btf && nvt && pn->old_val_type)
			convert(pn->old_btf, pn->old_val_type, ov + k * in.value_size, nb, nvt,
				nv + k * nvs, 0);
		else
			memcpy(nv + k * nvs, ov + k * in.value_size,
			       in.value_size < nvs ? in.value_size : nvs);
	}
	sched_getaffinity(0, sizeof(saved), &saved);
	/* pass -1: entries of no CPU, or of one this thread may not run on;
	 * pass c: CPU c's, inserted from it */
	for (int cpu = -1; cpu < ncpu; cpu++) {
		cpu_set_t one;
		bool moved = false;

		for (size_t k = 0; k < n; k++) {
			int c = cpu_of(i, nv + k * nvs);
			bool own = c >= 0 && c < ncpu && CPU_ISSET(c, &saved);

			if (cpu >= 0 ? c != cpu : own)
				continue;
			if (cpu >= 0 && !moved) {
				CPU_ZERO(&one);
				CPU_SET(cpu, &one);
				moved = true;
				sched_setaffinity(0, sizeof(one), &one);
			}
			done += bpf_map_update_elem(nfd, keys + k * ks, nv + k * nvs, flags) == 0;
		}
	}
	sched_setaffinity(0, sizeof(saved), &saved);
out:
	free(keys);
	free(ov);
	free(nv);
	return done;
}

/* ---- the pin directory ------------------------------------------------- */

/* @p dir on a bpf filesystem, created (0700) if missing.  /sys/fs/bpf is
 * mounted when nothing is (systemd mounts it; a minimal root may not). */
static int dir_ready(const char *dir, char *err, size_t errlen)
{
	char p[256];
	struct statfs sf;

	snprintf(p, sizeof(p), "%s", dir);
	while (statfs(p, &sf) != 0) {
		char *sl = strrchr(p, '/');

		if (errno != ENOENT || !sl || sl == p) {
			snprintf(err, errlen, "pin directory %s: %s", dir, strerror(errno));
			return -errno;
		}
		*sl = '\0';
	}
	if ((unsigned long)sf.f_type != BPF_FS_MAGIC && !strcmp(p, "/sys/fs/bpf") &&
	    mount("bpf", "/sys/fs/bpf", "bpf", 0, "mode=0700") == 0)
		sf.f_type = BPF_FS_MAGIC;
	if ((unsigned long)sf.f_type != BPF_FS_MAGIC) {
		snprintf(err, errlen, "pin directory %s: %s is not a bpf filesystem (mount -t bpf "
			 "bpf %s, or choose a directory under /sys/fs/bpf)", dir, p, p);
		return -ENOTDIR;
	}
	snprintf(p, sizeof(p), "%s", dir);
	for (char *q = p + 1;; q++) {
		char c = *q;

		if (c != '/' && c != '\0')
			continue;
		*q = '\0';
		if (mkdir(p, 0700) && errno != EEXIST) {
			snprintf(err, errlen, "pin directory %s: mkdir %s: %s", dir, p,
				 strerror(errno));
			return -errno;
		}
		*q = c;
		if (!c)
			break;
	}
	return 0;
}

/* The pinned link and the maps of the program it runs. */
static int live_maps(struct fgx *x, uint32_t *ids, uint32_t max)
{
	char path[320];
	struct bpf_link_info li;
	struct bpf_prog_info pi;
	uint32_t len = sizeof(li), n;
	int fd, pfd;

	snprintf(path, sizeof(path), "%s/link", x->pin_dir);
	fd = bpf_obj_get(path);
	if (fd < 0)
		return 0;
	memset(&li, 0, sizeof(li));
	if (bpf_obj_get_info_by_fd(fd, &li, &len) || li.type != BPF_LINK_TYPE_XDP) {
		close(fd);
		return 0;   /* not an XDP link: fgx_attach says so */
	}
	x->live_link_fd = fd;
	x->live_prog_id = li.prog_id;
	pfd = bpf_prog_get_fd_by_id(li.prog_id);
	if (pfd < 0)
		return 0;
	memset(&pi, 0, sizeof(pi));
	pi.nr_map_ids = max;
	pi.map_ids = (uint64_t)(uintptr_t)ids;
	len = sizeof(pi);
	n = bpf_obj_get_info_by_fd(pfd, &pi, &len) ? 0 : pi.nr_map_ids;
	close(pfd);
	return (int)(n < max ? n : max);
}

struct cand {
	char file[64];
	uint32_t sem, id;
};

/* The pinned files of map @p i: "<name>-<S 8 hex>-<id>". */
static unsigned int candidates(const struct fgx *x, unsigned int i, struct cand *c,
			       unsigned int max)
{
	size_t nl = strlen(fgx_pin_names[i]);
	unsigned int n = 0;
	struct dirent *de;
	DIR *d = opendir(x->pin_dir);

	while (d && (de = readdir(d)) && n < max) {
		unsigned int sem, id;
		char tail;

		if (strncmp(de->d_name, fgx_pin_names[i], nl) || de->d_name[nl] != '-' ||
		    sscanf(de->d_name + nl, "-%8x-%u%c", &sem, &id, &tail) != 2 ||
		    strlen(de->d_name) >= sizeof(c->file))
			continue;
		snprintf(c[n].file, sizeof(c[n].file), "%.63s", de->d_name);
		c[n].sem = sem;
		c[n].id = id;
		n++;
	}
	if (d)
		closedir(d);
	return n;
}

static void stale_add(struct fgx *x, const char *file)
{
	if (x->n_stale < sizeof(x->stale) / sizeof(x->stale[0]))
		snprintf(x->stale[x->n_stale++], sizeof(x->stale[0]), "%.63s", file);
}

/* Which pinned file of map @p i is the truth (see the top); the others
 * are stale.  @return its index in @p c, or -1. */
static int choose(struct fgx *x, unsigned int i, const struct cand *c, unsigned int n,
		  const uint32_t *live, int n_live, uint32_t sem)
{
	int best = -1;

	for (unsigned int k = 0; k < n; k++) {
		bool is_live = false;

		for (int j = 0; j < n_live; j++)
			is_live |= live[j] == c[k].id;
		if (n_live ? is_live : (best < 0 || (c[k].sem == sem && c[best].sem != sem) ||
					(c[k].sem == c[best].sem && c[k].id > c[best].id)))
			best = (int)k;
	}
	for (unsigned int k = 0; k < n; k++)
		if ((int)k != best)
			stale_add(x, c[k].file);
	(void)i;
	return best;
}

/* BTF hashes are compared where both maps have BTF (libbpf creates
 * map-in-map arrays without): sizes and S cover the others. */
static bool differ(uint64_t a, uint64_t b)
{
	return a && b && a != b;
}

static const char *what_changed(const struct layout *o, const struct layout *n,
				char *buf, size_t len)
{
	if (o->type != n->type || o->key_size != n->key_size || differ(o->key, n->key))
		snprintf(buf, len, "another map type or key");
	else if (o->value_size != n->value_size || differ(o->value, n->value))
		snprintf(buf, len, "another layout");
	else if (o->flags != n->flags)
		snprintf(buf, len, "map flags %#x -> %#x", o->flags, n->flags);
	else if (o->max_entries != n->max_entries)
		snprintf(buf, len, "capacity %u -> %u", o->max_entries, n->max_entries);
	else
		buf[0] = '\0';
	return buf;
}

/* Decides map @p i's fate from its pinned file @p c (fd @p fd). */
static int decide(struct fgx *x, unsigned int i, const struct cand *c, int fd,
		  uint32_t sem, char *err, size_t errlen)
{
	struct fgx_pinned *pn = &x->pin[i];
	struct bpf_map *m = fgx_pin_map(x, i);
	struct layout o = { 0 }, n;
	char chg[64];
	int rc = layout_of_fd(fd, &o, &pn->old_btf, &pn->old_val_type);

	if (rc) {
		close(fd);
		return rc;
	}
	layout_of_map(m, bpf_object__btf(x->skel->obj), &n);
	what_changed(&o, &n, chg, sizeof(chg));
	snprintf(pn->old_file, sizeof(pn->old_file), "%s", c->file);
	if (c->sem == sem && !chg[0]) {
		rc = bpf_map__reuse_fd(m, fd);
		close(fd);
		pn->fate = rc ? FGX_MAP_NEW : FGX_MAP_ADOPTED;
		return rc;
	}
	pn->old_fd = fd;
	if (c->sem != sem)
		snprintf(pn->why, sizeof(pn->why), "another meaning (FGX_SEMANTICS, names)");
	else
		snprintf(pn->why, sizeof(pn->why), "%s", chg);
	if (policy[i] == FGX_PIN_REBUILD) {
		pn->fate = FGX_MAP_REBUILT;
	} else if (policy[i] == FGX_PIN_RESET) {
		pn->fate = FGX_MAP_RESET;
	} else if (c->sem != sem || o.type != n.type || o.key_size != n.key_size ||
		   differ(o.key, n.key)) {
		snprintf(err, errlen, "pinned map %s/%s was left by a flowgate-xdp whose "
			 "entries this build cannot read (%s): start the flowgate-xdp that "
			 "pinned it, or remove everything with `flowgate-xdp detach` on its "
			 "interface (tracked flows are lost; DSR connections keep their backend "
			 "while the backends do not change) and start again", x->pin_dir,
			 c->file, c->sem != sem ? "what its entries mean differs: "
			 "FGX_SEMANTICS or the conntrack state names" : "another key");
		return -ESTALE;
	} else {
		pn->fate = FGX_MAP_CONVERTED;
	}
	return 0;
}

int fgx_pin_prepare(struct fgx *x, char *err, size_t errlen)
{
	uint32_t live[64];
	int n_live, rc;

	for (unsigned int i = 0; i < FGX_PIN_N; i++) {
		x->pin[i].old_fd = -1;
		x->pin[i].sem = sem_hash(x, i);
	}
	if (!x->pin_dir[0])
		return 0;
	rc = dir_ready(x->pin_dir, err, errlen);
	if (rc)
		return rc;
	n_live = live_maps(x, live, 64);
	for (unsigned int i = 0; i < FGX_PIN_N; i++) {
		struct cand c[8];
		char path[352];
		uint32_t sem = x->pin[i].sem;
		unsigned int n = candidates(x, i, c, 8);
		int k = choose(x, i, c, n, live, n_live, sem), fd;

		if (k < 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", x->pin_dir, c[k].file);
		fd = bpf_obj_get(path);
		if (fd < 0) {
			snprintf(err, errlen, "pinned map %s: %s", path, strerror(errno));
			return -errno;
		}
		rc = decide(x, i, &c[k], fd, sem, err, errlen);
		if (rc)
			return rc;
	}
	return 0;
}

int fgx_pin_commit(struct fgx *x, char *err, size_t errlen)
{
	for (unsigned int i = 0; x->pin_dir[0] && i < FGX_PIN_N; i++) {
		struct fgx_pinned *pn = &x->pin[i];
		struct bpf_map *m = fgx_pin_map(x, i);
		struct bpf_map_info in;
		uint32_t len = sizeof(in);
		char path[352];

		if (pn->fate == FGX_MAP_ADOPTED)
			continue;
		memset(&in, 0, sizeof(in));
		if (bpf_obj_get_info_by_fd(bpf_map__fd(m), &in, &len))
			return -errno;
		snprintf(path, sizeof(path), "%s/%s-%08x-%u", x->pin_dir, fgx_pin_names[i],
			 pn->sem, in.id);
		if (bpf_obj_pin(bpf_map__fd(m), path)) {
			snprintf(err, errlen, "cannot pin %s: %s", path, strerror(errno));
			return -errno;
		}
		if (pn->fate == FGX_MAP_CONVERTED) {
			int64_t n = copy_entries(x, i, BPF_ANY);

			if (n < 0) {
				snprintf(err, errlen, "converting %s/%s: %s", x->pin_dir,
					 pn->old_file, strerror((int)-n));
				return (int)n;
			}
			pn->converted = (uint64_t)n;
		}
	}
	return 0;
}

void fgx_pin_finish(struct fgx *x)
{
	char path[352];

	for (unsigned int i = 0; x->pin_dir[0] && i < FGX_PIN_N; i++) {
		struct fgx_pinned *pn = &x->pin[i];

		if (pn->fate == FGX_MAP_CONVERTED && x->live_prog_id) {
			int64_t n = copy_entries(x, i, BPF_NOEXIST);

			if (n > 0)
				pn->converted += (uint64_t)n;
		}
		if (pn->fate != FGX_MAP_ADOPTED && pn->old_file[0]) {
			snprintf(path, sizeof(path), "%s/%s", x->pin_dir, pn->old_file);
			unlink(path);
			pn->old_file[0] = '\0';
		}
	}
	for (unsigned int k = 0; k < x->n_stale; k++) {
		snprintf(path, sizeof(path), "%s/%s", x->pin_dir, x->stale[k]);
		unlink(path);
	}
	x->n_stale = 0;
	fgx_pin_release(x);
}

bool fgx_pin_all_adopted(const struct fgx *x)
{
	for (unsigned int i = 0; i < FGX_PIN_N; i++)
		if (x->pin[i].fate != FGX_MAP_ADOPTED)
			return false;
	return true;
}

void fgx_pin_release(struct fgx *x)
{
	for (unsigned int i = 0; i < FGX_PIN_N; i++) {
		if (x->pin[i].old_fd >= 0)
			close(x->pin[i].old_fd);
		x->pin[i].old_fd = -1;
		btf__free(x->pin[i].old_btf);
		x->pin[i].old_btf = NULL;
	}
}
