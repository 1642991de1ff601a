/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fg-decap: attaches, inspects and detaches the worker-side DSR
 * decapsulation (fg_decap.bpf.c) on a GPU worker's interface.
 *
 *   fg-decap attach IFACE --vip ADDR [--vip ADDR ...] [--gue-port N] [--second-chance]
 *   fg-decap status IFACE [--json]
 *   fg-decap detach IFACE
 *
 * The program is a TC ingress filter (clsact, handle FGD_HANDLE,
 * priority FGD_PRIO).  Nothing is pinned: status finds the filter with a
 * TC query, then its maps by name through the program's map ids, so it
 * works inside `ip netns exec` (which has no bpffs).  attach on an
 * interface that has it replaces the program (new VIPs / port).
 * Exit status: 0, 1 on error (said on stderr), 2 on a usage error,
 * 3 from status when nothing is attached.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <net/if.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "fg_decap.h"
#include "fg_decap.skel.h"
#include "fg_xlist.h"

#define FGD_HANDLE 0xfd
#define FGD_PRIO 1

static const char *const counter_names[FGD_C_MAX] = { FGD_COUNTER_LIST(FG_XL_NAME) };

static int usage(FILE *f, int rc)
{
	fprintf(f, "usage: fg-decap attach IFACE --vip ADDR [--vip ADDR ...] [--gue-port N]"
		   " [--second-chance]\n"
		   "       fg-decap status IFACE [--json]\n"
		   "       fg-decap detach IFACE\n"
		   "       fg-decap --help | --version\n"
		   "Strips flowgate's DSR encapsulation (IPIP, IP6IP6, GUE) for the given VIPs\n"
		   "on IFACE's ingress (TC); everything else passes untouched.  GUE port\n"
		   "default 6080 (0 = GUE off).  --second-chance: a TCP segment without SYN\n"
		   "that names a previous owner (flowgate --second-chance) and has no socket\n"
		   "here is sent on once to that owner (needs IPv4 forwarding on IFACE).\n"
		   "Needs root (CAP_BPF + CAP_NET_ADMIN).\n");
	return rc;
}

static int parse_vip(const char *s, struct fgd_vip *v)
{
	memset(v, 0, sizeof(*v));
	if (inet_pton(AF_INET, s, v->addr) == 1) {
		v->family = 4;
		return 0;
	}
	if (inet_pton(AF_INET6, s, v->addr) == 1) {
		v->family = 6;
		return 0;
	}
	return -EINVAL;
}

static int cmd_attach(int ifindex, const char *ifname, int argc, char **argv)
{
	struct fgd_vip vips[64];
	unsigned int nv = 0;
	long port = 6080;
	struct fg_decap_bpf *sk;
	struct fgd_cfg cfg = { 0 };
	uint32_t zero = 0;
	uint8_t one = 1;
	int rc;

	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "--vip") && i + 1 < argc) {
			if (nv == 64) {
				fprintf(stderr, "fg-decap: at most 64 --vip per command\n");
				return 2;
			}
			if (parse_vip(argv[++i], &vips[nv])) {
				fprintf(stderr, "fg-decap: --vip %s: not an IPv4 or IPv6 address\n",
					argv[i]);
				return 2;
			}
			nv++;
		} else if (!strcmp(argv[i], "--second-chance")) {
			/* GLB's second chance: see fg_decap.bpf.c */
			cfg.second_chance = 1;
		} else if (!strcmp(argv[i], "--gue-port") && i + 1 < argc) {
			char *e;

			port = strtol(argv[++i], &e, 10);
			if (*e || port < 0 || port > 65535) {
				fprintf(stderr, "fg-decap: --gue-port %s: want 0..65535\n", argv[i]);
				return 2;
			}
		} else {
			fprintf(stderr, "fg-decap: attach: unknown argument '%s'\n", argv[i]);
			return usage(stderr, 2);
		}
	}
	if (nv == 0) {
		fprintf(stderr, "fg-decap: attach needs at least one --vip (the addresses "
			"this worker serves, also configured on lo)\n");
		return 2;
	}
	sk = fg_decap_bpf__open_and_load();
	if (!sk) {
		fprintf(stderr, "fg-decap: cannot load the TC program: %s\n", strerror(errno));
		return 1;
	}
	cfg.gue_port = htons((uint16_t)port);
	rc = bpf_map_update_elem(bpf_map__fd(sk->maps.fgd_cfg), &zero, &cfg, 0);
	for (unsigned int i = 0; !rc && i < nv; i++)
		rc = bpf_map_update_elem(bpf_map__fd(sk->maps.fgd_vips), &vips[i], &one, 0);
	if (rc) {
		fprintf(stderr, "fg-decap: map update failed: %s\n", strerror(errno));
		fg_decap_bpf__destroy(sk);
		return 1;
	}
	{
		LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifindex,
			    .attach_point = BPF_TC_INGRESS);
		LIBBPF_OPTS(bpf_tc_opts, o, .handle = FGD_HANDLE, .priority = FGD_PRIO,
			    .prog_fd = bpf_program__fd(sk->progs.fg_decap),
			    .flags = BPF_TC_F_REPLACE);

		rc = bpf_tc_hook_create(&hook);
		if (rc && rc != -EEXIST) {
			fprintf(stderr, "fg-decap: %s: cannot create the clsact qdisc: %s\n",
				ifname, strerror(-rc));
			fg_decap_bpf__destroy(sk);
			return 1;
		}
		rc = bpf_tc_attach(&hook, &o);
		if (rc) {
			fprintf(stderr, "fg-decap: %s: cannot attach: %s\n", ifname, strerror(-rc));
			fg_decap_bpf__destroy(sk);
			return 1;
		}
	}
	/* the filter holds the program, the program its maps */
	fg_decap_bpf__destroy(sk);
	printf("fg-decap: attached to %s ingress: %u VIPs, GUE port %ld\n", ifname, nv, port);
	return 0;
}

/* The attached program's map named @p name, or -ENOENT. */
static int map_by_name(int prog_fd, const char *name)
{
	struct bpf_prog_info pi;
	uint32_t ids[16], len = sizeof(pi);

	memset(&pi, 0, sizeof(pi));
	pi.nr_map_ids = 16;
	pi.map_ids = (uint64_t)(uintptr_t)ids;
	if (bpf_obj_get_info_by_fd(prog_fd, &pi, &len))
		return -errno;
	for (uint32_t i = 0; i < pi.nr_map_ids && i < 16; i++) {
		struct bpf_map_info mi;
		uint32_t ml = sizeof(mi);
		int fd = bpf_map_get_fd_by_id(ids[i]);

		if (fd < 0)
			continue;
		memset(&mi, 0, sizeof(mi));
		if (!bpf_obj_get_info_by_fd(fd, &mi, &ml) && !strcmp(mi.name, name))
			return fd;
		close(fd);
	}
	return -ENOENT;
}

static int cmd_status(int ifindex, const char *ifname, int json)
{
	LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifindex, .attach_point = BPF_TC_INGRESS);
	LIBBPF_OPTS(bpf_tc_opts, o, .handle = FGD_HANDLE, .priority = FGD_PRIO);
	int pfd, cfd, vfd, kfd, ncpu = libbpf_num_possible_cpus();
	uint64_t sum[FGD_C_MAX] = { 0 }, *pc;
	struct fgd_cfg cfg = { 0 };
	struct fgd_vip k, nk, *prev = NULL;
	uint32_t zero = 0;
	int first = 1;

	if (bpf_tc_query(&hook, &o)) {
		if (json)
			printf("{\"interface\": \"%s\", \"attached\": false}\n", ifname);
		else
			printf("fg-decap: not attached to %s\n", ifname);
		return 3;
	}
	pfd = bpf_prog_get_fd_by_id(o.prog_id);
	if (pfd < 0) {
		fprintf(stderr, "fg-decap: program %u: %s\n", o.prog_id, strerror(errno));
		return 1;
	}
	cfd = map_by_name(pfd, "fgd_cfg");
	vfd = map_by_name(pfd, "fgd_vips");
	kfd = map_by_name(pfd, "fgd_counters");
	close(pfd);
	if (cfd < 0 || vfd < 0 || kfd < 0 || ncpu <= 0) {
		fprintf(stderr, "fg-decap: %s: the TC filter is not fg-decap's program\n", ifname);
		return 1;
	}
	bpf_map_lookup_elem(cfd, &zero, &cfg);
	pc = calloc((size_t)ncpu, sizeof(*pc));
	for (uint32_t i = 0; pc && i < FGD_C_MAX; i++)
		if (!bpf_map_lookup_elem(kfd, &i, pc))
			for (int c = 0; c < ncpu; c++)
				sum[i] += pc[c];
	free(pc);
	if (json)
		printf("{\"interface\": \"%s\", \"attached\": true, \"prog_id\": %u, "
		       "\"gue_port\": %u, \"second_chance\": %s, \"vips\": [", ifname, o.prog_id,
		       ntohs(cfg.gue_port), cfg.second_chance ? "true" : "false");
	else
		printf("fg-decap: attached to %s ingress (prog %u), GUE port %u, second chance %s\n"
		       "  vips:", ifname, o.prog_id, ntohs(cfg.gue_port),
		       cfg.second_chance ? "on" : "off");
	while (!bpf_map_get_next_key(vfd, prev, &nk)) {
		char a[INET6_ADDRSTRLEN];

		inet_ntop(nk.family == 4 ? AF_INET : AF_INET6, nk.addr, a, sizeof(a));
		printf(json ? "%s\"%s\"" : "%s %s", json && !first ? ", " : "", a);
		first = 0;
		k = nk;
		prev = &k;
	}
	if (json) {
		printf("], \"counters\": {");
		for (int i = 0; i < FGD_C_MAX; i++)
			printf("%s\"%s\": %llu", i ? ", " : "", counter_names[i],
			       (unsigned long long)sum[i]);
		printf("}}\n");
	} else {
		printf("\n");
		for (int i = 0; i < FGD_C_MAX; i++)
			printf("  %-13s %llu\n", counter_names[i], (unsigned long long)sum[i]);
	}
	close(cfd);
	close(vfd);
	close(kfd);
	return 0;
}

static int cmd_detach(int ifindex, const char *ifname)
{
	LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifindex, .attach_point = BPF_TC_INGRESS);
	LIBBPF_OPTS(bpf_tc_opts, o, .handle = FGD_HANDLE, .priority = FGD_PRIO);
	int rc = bpf_tc_detach(&hook, &o);

	if (rc) {
		fprintf(stderr, "fg-decap: %s: nothing to detach (%s)\n", ifname, strerror(-rc));
		return 1;
	}
	printf("fg-decap: detached from %s\n", ifname);
	return 0;
}

int main(int argc, char **argv)
{
	int ifindex;

	if (argc >= 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")))
		return usage(stdout, 0);
	if (argc >= 2 && (!strcmp(argv[1], "-V") || !strcmp(argv[1], "--version"))) {
		printf("fg-decap %s (libbpf %u.%u)\n", FG_VERSION, libbpf_major_version(),
		       libbpf_minor_version());
		return 0;
	}
	if (argc < 3)
		return usage(stderr, 2);
	ifindex = (int)if_nametoindex(argv[2]);
	if (!ifindex) {
		fprintf(stderr, "fg-decap: no interface '%s'\n", argv[2]);
		return 1;
	}
	if (!strcmp(argv[1], "attach"))
		return cmd_attach(ifindex, argv[2], argc - 3, argv + 3);
	if (!strcmp(argv[1], "status"))
		return cmd_status(ifindex, argv[2], argc > 3 && !strcmp(argv[3], "--json"));
	if (!strcmp(argv[1], "detach"))
		return cmd_detach(ifindex, argv[2]);
	fprintf(stderr, "fg-decap: unknown command '%s'\n", argv[1]);
	return usage(stderr, 2);
}
