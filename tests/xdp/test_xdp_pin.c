/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What flowgate-xdp does with the maps a previous flowgate-xdp pinned
 * (xdp/fgx_pin.c): one case per outcome, each in a fresh bpffs directory,
 * with conntrack entries written straight into the pinned map and read
 * back through fgx_flows_walk():
 *
 *   adopt        same build, same size: every map adopted, entries kept
 *   capacity     --ct-capacity changed: conntrack converted into a map of
 *                the new size, every entry and member kept
 *   layout       an "older build" whose conntrack entry has its members in
 *                another order and lacks one (BTF made here): converted by
 *                member name, each kept member equal, the missing one 0
 *   lists        an "older build's" conntrack map with per-CPU LRU lists
 *                (BPF_F_NO_COMMON_LRU, before issue 38), same BTF:
 *                converted into one LRU for all CPUs, every entry kept
 *   meaning      a pinned conntrack map whose meaning hash differs (another
 *                FGX_SEMANTICS / state names): refused with -ESTALE and a
 *                sentence, nothing changed, and adopted again once back
 *
 * Exit 77 when BPF programs or a bpf filesystem are not available.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/mount.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "ct.h"
#include "fg_config_parse.h"
#include "fgx_load.h"
#include "fgx_maps.h"

#define N_FLOWS 64

static char g_root[64];
static struct fg_config g_cfg;

static const char cfg_text[] =
	"port lb0 {\n    mac 02:00:00:00:00:01;\n    local 10.0.0.1;\n}\n"
	"neighbour 10.0.0.11 02:00:00:00:00:11 port lb0;\n"
	"service s 10.0.0.100:80/tcp {\n    mode dsr-ipip;\n    backend 10.0.0.11 weight 1;\n}\n";

static uint64_t coarse_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The pinned file of map @p name in @p dir ("" when none). */
static void pinned(const char *dir, const char *name, char *out, size_t len)
{
	struct dirent *de;
	DIR *d = opendir(dir);
	size_t nl = strlen(name);

	out[0] = '\0';
	while (d && (de = readdir(d)))
		if (!strncmp(de->d_name, name, nl) && de->d_name[nl] == '-')
			snprintf(out, len, "%s/%.63s", dir, de->d_name);
	if (d)
		closedir(d);
}

static int open_apply(const char *dir, uint32_t cap, struct fgx **x, char *err, size_t len)
{
	struct fgx_params par = { .ct_capacity = cap, .pin_dir = dir };
	int rc = fgx_open(&par, x, err, len);

	if (rc == 0)
		rc = fgx_apply(*x, &g_cfg, NULL, 0, 0, err, len);
	return rc;
}

static void key_of(int i, struct ct_key4 *k)
{
	memset(k, 0, sizeof(*k));
	k->saddr = htonl(0xc0a80000u + (uint32_t)i);
	k->daddr = htonl(0x0a000064u);
	k->sport = htons((uint16_t)(1000 + i));
	k->dport = htons(80);
	k->proto = 6;
}

/* N_FLOWS established flows of backend slot 0 into the pinned fgx_ct4. */
static int fill(const char *dir)
{
	char path[256];
	int fd, ncpu = libbpf_num_possible_cpus();

	pinned(dir, "fgx_ct4", path, sizeof(path));
	fd = bpf_obj_get(path);
	if (fd < 0)
		return -errno;
	for (int i = 0; i < N_FLOWS; i++) {
		struct ct_key4 k;
		struct fgx_ct v;

		key_of(i, &k);
		memset(&v, 0, sizeof(v));
		v.last_seen = v.first_seen = coarse_ns();
		v.packets = 10 + (uint64_t)i;
		v.bytes = 1000 + (uint64_t)i;
		v.backend = g_cfg.services[0].backends[0].id;
		v.state = CT_ST_ESTABLISHED;
		v.cpu = (uint16_t)(i % ncpu);
		if (bpf_map_update_elem(fd, &k, &v, BPF_ANY)) {
			close(fd);
			return -errno;
		}
	}
	close(fd);
	return 0;
}

struct seen {
	int n, bad;
	bool bytes_zero;        /* the layout case: bytes was not carried */
};

static int check_flow(const struct fg_flow_info *fi, void *arg)
{
	struct seen *s = arg;
	int i = (int)fi->sport - 1000;

	s->n++;
	if (i < 0 || i >= N_FLOWS || fi->packets != 10 + (uint64_t)i ||
	    fi->bytes != (s->bytes_zero ? 0 : 1000 + (uint64_t)i) ||
	    strcmp(fi->state, "ESTABLISHED") || !fi->created_ms)
		s->bad++;
	return 0;
}

static int flows_ok(struct fgx *x, bool bytes_zero, const char *what)
{
	struct seen s = { .bytes_zero = bytes_zero };
	int64_t rc = fgx_flows_walk(x, &g_cfg, NULL, check_flow, &s, false);

	if (rc < 0 || s.n != N_FLOWS || s.bad) {
		printf("  %s: %d of %d flows read back, %d with other values (walk %lld)\n",
		       what, s.n, N_FLOWS, s.bad, (long long)rc);
		return 1;
	}
	return 0;
}

/* ---- cases -------------------------------------------------------------- */

static int case_adopt(const char *dir)
{
	struct fgx *x = NULL;
	char err[512], rep[512];
	int fail = 0;

	if (open_apply(dir, 4096, &x, err, sizeof(err)) || fill(dir))
		return printf("  setup: %s\n", err), 1;
	fgx_close(x);
	if (open_apply(dir, 4096, &x, err, sizeof(err)))
		return printf("  reopen: %s\n", err), 1;
	fgx_open_report(x, rep, sizeof(rep));
	if (!strstr(rep, "adopted 9 pinned maps")) {
		printf("  report: %s\n", rep);
		fail = 1;
	}
	fail |= flows_ok(x, false, "adopted");
	fgx_close(x);
	return fail;
}

static int case_capacity(const char *dir)
{
	struct fgx *x = NULL;
	char err[512], rep[512];
	int fail = 0;

	if (open_apply(dir, 4096, &x, err, sizeof(err)) || fill(dir))
		return printf("  setup: %s\n", err), 1;
	fgx_close(x);
	if (open_apply(dir, 8192, &x, err, sizeof(err)))
		return printf("  reopen: %s\n", err), 1;
	fgx_open_report(x, rep, sizeof(rep));
	if (!strstr(rep, "fgx_ct4 converted (capacity 4096 -> 8192): 64 entries")) {
		printf("  report: %s\n", rep);
		fail = 1;
	}
	fail |= flows_ok(x, false, "capacity");
	fgx_close(x);
	return fail;
}

/* Map @p nfd (id @p id) pinned in place of the file @p path: same name and
 * meaning hash, another map id.  0 or -1. */
static int repin(const char *path, int nfd, uint32_t id)
{
	char npath[300];
	const char *dash = strrchr(path, '-');

	snprintf(npath, sizeof(npath), "%.*s-%u", (int)(dash - path), path, id);
	return bpf_obj_pin(nfd, npath) || unlink(path) ? -1 : 0;
}

/* The pinned fgx_ct4 replaced by an "older build's": its value struct with
 * the members in reverse order and without "bytes", from BTF made here on
 * the kernel's copy of this build's types (so the key is the same). */
static int older_layout(const char *dir)
{
	char path[256];
	struct bpf_map_info in;
	uint32_t len = sizeof(in), off = 0, id;
	struct btf *kb = NULL, *nb = NULL;
	int fd = -1, nfd = -1, rc = -1;

	pinned(dir, "fgx_ct4", path, sizeof(path));
	fd = bpf_obj_get(path);
	memset(&in, 0, sizeof(in));
	if (fd < 0 || bpf_obj_get_info_by_fd(fd, &in, &len) ||
	    !(kb = btf__load_from_kernel_by_id(in.btf_id)) || !(nb = btf__new_empty()) ||
	    btf__add_btf(nb, kb) < 0)
		goto out;
	/* the members first: adding types may move nb's type data */
	const struct btf_type *vt = btf__type_by_id(nb, in.btf_value_type_id);
	int n = btf_vlen(vt), sid;
	uint32_t vsize = vt->size, mtype[32], moff[32], msz[32];
	char mname[32][32];

	for (int k = 0; k < n && k < 32; k++) {
		const struct btf_member *m = btf_members(vt) + k;

		snprintf(mname[k], sizeof(mname[k]), "%s", btf__name_by_offset(nb, m->name_off));
		mtype[k] = m->type;
		moff[k] = btf_member_bit_offset(vt, k) / 8;
		msz[k] = (uint32_t)btf__resolve_size(nb, m->type);
	}
	sid = btf__add_struct(nb, "fgx_ct_old", vsize);
	for (int k = n - 1; sid > 0 && k >= 0; k--) {
		if (!strcmp(mname[k], "bytes"))
			continue;
		if (btf__add_field(nb, mname[k], (int)mtype[k], off * 8, 0))
			goto out;
		off += msz[k];
	}
	if (sid < 0 || btf__load_into_kernel(nb))
		goto out;
	LIBBPF_OPTS(bpf_map_create_opts, o, .btf_fd = (uint32_t)btf__fd(nb),
		    .btf_key_type_id = in.btf_key_type_id, .btf_value_type_id = (uint32_t)sid,
		    .map_flags = in.map_flags);
	nfd = bpf_map_create(in.type, "fgx_ct4", in.key_size, vsize, in.max_entries, &o);
	if (nfd < 0)
		goto out;
	/* the old entries, rewritten member by member into the old layout */
	for (int i = 0; i < N_FLOWS; i++) {
		struct ct_key4 k;
		struct fgx_ct v;
		uint8_t ov[256] = { 0 };
		uint32_t o2 = 0;

		key_of(i, &k);
		if (bpf_map_lookup_elem(fd, &k, &v))
			goto out;
		for (int j = n - 1; j >= 0; j--) {
			if (strcmp(mname[j], "bytes")) {
				memcpy(ov + o2, (uint8_t *)&v + moff[j], msz[j]);
				o2 += msz[j];
			}
		}
		if (bpf_map_update_elem(nfd, &k, ov, BPF_ANY))
			goto out;
	}
	len = sizeof(in);
	if (bpf_obj_get_info_by_fd(nfd, &in, &len))
		goto out;
	id = in.id;
	rc = repin(path, nfd, id);
out:
	if (rc)
		printf("  making the older layout failed: %s\n", strerror(errno));
	if (fd >= 0)
		close(fd);
	if (nfd >= 0)
		close(nfd);
	btf__free(kb);
	btf__free(nb);
	return rc;
}

/* A pinned fgx_ct4 of 64 flows that @p older makes an older build's, then
 * opened again: converted as the report says (@p said), every flow kept
 * (its bytes 0 where @p bytes_zero: the older layout had none). */
static int converted(const char *dir, int (*older)(const char *dir), const char *said,
		     bool bytes_zero, const char *what)
{
	struct fgx *x = NULL;
	char err[512], rep[512];
	int fail = 0;

	if (open_apply(dir, 4096, &x, err, sizeof(err)) || fill(dir))
		return printf("  setup: %s\n", err), 1;
	fgx_close(x);
	if (older(dir))
		return 1;
	if (open_apply(dir, 4096, &x, err, sizeof(err)))
		return printf("  reopen: %s\n", err), 1;
	fgx_open_report(x, rep, sizeof(rep));
	if (!strstr(rep, said)) {
		printf("  report: %s\n", rep);
		fail = 1;
	}
	fail |= flows_ok(x, bytes_zero, what);
	fgx_close(x);
	return fail;
}

static int case_layout(const char *dir)
{
	return converted(dir, older_layout, "fgx_ct4 converted (another layout): 64 entries",
			 true, "layout");
}

/* The pinned fgx_ct4 replaced by one with per-CPU LRU lists, as builds
 * before issue 38 made it: same BTF, size and entries. */
static int older_lists(const char *dir)
{
	char path[256];
	struct bpf_map_info in;
	uint32_t len = sizeof(in);
	int fd, bfd = -1, nfd = -1, rc = -1;

	pinned(dir, "fgx_ct4", path, sizeof(path));
	fd = bpf_obj_get(path);
	memset(&in, 0, sizeof(in));
	if (fd < 0 || bpf_obj_get_info_by_fd(fd, &in, &len) ||
	    (bfd = bpf_btf_get_fd_by_id(in.btf_id)) < 0)
		goto out;
	if (in.map_flags & BPF_F_NO_COMMON_LRU) {
		printf("  this build's fgx_ct4 already has per-CPU LRU lists\n");
		goto out;
	}
	LIBBPF_OPTS(bpf_map_create_opts, o, .btf_fd = (uint32_t)bfd,
		    .btf_key_type_id = in.btf_key_type_id,
		    .btf_value_type_id = in.btf_value_type_id,
		    .map_flags = in.map_flags | BPF_F_NO_COMMON_LRU);
	nfd = bpf_map_create(in.type, "fgx_ct4", in.key_size, in.value_size, in.max_entries, &o);
	if (nfd < 0)
		goto out;
	for (int i = 0; i < N_FLOWS; i++) {
		struct ct_key4 k;
		struct fgx_ct v;

		key_of(i, &k);
		if (bpf_map_lookup_elem(fd, &k, &v) || bpf_map_update_elem(nfd, &k, &v, BPF_ANY))
			goto out;
	}
	len = sizeof(in);
	if (bpf_obj_get_info_by_fd(nfd, &in, &len))
		goto out;
	rc = repin(path, nfd, in.id);
out:
	if (rc)
		printf("  making the per-CPU LRU lists failed: %s\n", strerror(errno));
	if (fd >= 0)
		close(fd);
	if (bfd >= 0)
		close(bfd);
	if (nfd >= 0)
		close(nfd);
	return rc;
}

static int case_lists(const char *dir)
{
	return converted(dir, older_lists, "fgx_ct4 converted (map flags 0x2 -> 0): 64 entries",
			 false, "lists");
}

static int case_meaning(const char *dir)
{
	struct fgx *x = NULL;
	char err[512], path[256], other[300], *dash;
	int fail = 0, rc;

	if (open_apply(dir, 4096, &x, err, sizeof(err)) || fill(dir))
		return printf("  setup: %s\n", err), 1;
	fgx_close(x);
	pinned(dir, "fgx_ct4", path, sizeof(path));
	dash = strstr(path, "fgx_ct4-") + 7;
	snprintf(other, sizeof(other), "%.*s-deadbeef%s", (int)(dash - path), path, dash + 9);
	if (rename(path, other))
		return printf("  rename: %s\n", strerror(errno)), 1;
	rc = open_apply(dir, 4096, &x, err, sizeof(err));
	if (rc != -ESTALE || !strstr(err, "cannot read")) {
		printf("  a map of another meaning: rc %d (%s), want -ESTALE and a sentence\n", rc,
		       err);
		fail = 1;
	} else {
		printf("  refused: %s\n", err);
	}
	if (rc == 0)
		fgx_close(x);
	if (rename(other, path))
		return printf("  rename back: %s\n", strerror(errno)), 1;
	if (open_apply(dir, 4096, &x, err, sizeof(err)))
		return printf("  reopen after the refusal: %s\n", err), 1;
	fail |= flows_ok(x, false, "after the refusal");
	fgx_close(x);
	return fail;
}

static const struct {
	const char *name;
	int (*fn)(const char *dir);
} cases[] = {
	{ "adopt", case_adopt },
	{ "capacity", case_capacity },
	{ "layout", case_layout },
	{ "lists", case_lists },
	{ "meaning", case_meaning },
};

int main(void)
{
	struct fg_cfg_err ev[8];
	struct fg_cfg_errs errs = { .v = ev, .max = 8 };
	int fails = 0;

	if (geteuid() != 0) {
		printf("xdp-pin: needs root (BPF, a bpf filesystem): skipped\n");
		return 77;
	}
	snprintf(g_root, sizeof(g_root), "/tmp/fgxpin.XXXXXX");
	if (!mkdtemp(g_root) || mount("bpf", g_root, "bpf", 0, "mode=0700")) {
		printf("xdp-pin: no bpf filesystem (%s): skipped\n", strerror(errno));
		if (g_root[0])
			rmdir(g_root);
		return 77;
	}
	if (fg_config_parse(cfg_text, strlen(cfg_text), "pin-test", &g_cfg, &errs) ||
	    fg_config_assign_ids(&g_cfg, NULL)) {
		printf("xdp-pin: test config refused: %s\n", errs.n ? ev[0].msg : "?");
		fails = 1;
	}
	for (unsigned int i = 0; !fails && i < sizeof(cases) / sizeof(cases[0]); i++) {
		char dir[128], msg[512];
		int rc;

		snprintf(dir, sizeof(dir), "%s/%s", g_root, cases[i].name);
		rc = cases[i].fn(dir);
		fgx_remove(dir, 0, msg, sizeof(msg));
		printf("%s %s\n", rc ? "FAIL" : "ok  ", cases[i].name);
		fails += rc != 0;
	}
	fg_config_free(&g_cfg);
	umount(g_root);
	rmdir(g_root);
	printf("xdp-pin: %s\n", fails ? "FAIL" : "PASS");
	return fails ? 1 : 0;
}
