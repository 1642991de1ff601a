/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * flowgate-bench: dispatcher.  Each module contributes bench_<name>.c with
 * `int bench_<name>_main(int argc, char **argv)`; a module not built here
 * (e.g. gpu without nvcc) is reported, not faked.
 */
#include <stdio.h>
#include <string.h>

#include <rte_version.h>

#ifndef FG_VERSION
#define FG_VERSION "unknown"
#endif

#define FG_BENCH_LIST(X) X(conntrack) X(dataplane) X(control) X(gpu) X(latency) X(inference) X(state) \
	X(sync) X(xdp) X(l3fwd)

#define X(n) int bench_##n##_main(int argc, char **argv) __attribute__((weak));
FG_BENCH_LIST(X)
#undef X

static void usage(void)
{
	fprintf(stderr, "usage: flowgate-bench <benchmark> [options] [--json]\n"
			"       flowgate-bench --help | --version\n"
			"benchmarks:");
#define X(n) fprintf(stderr, " %s%s", #n, bench_##n##_main ? "" : "(not built)");
	FG_BENCH_LIST(X)
#undef X
	fprintf(stderr, "\nrun 'flowgate-bench <benchmark> --help' for its options\n");
}

int main(int argc, char **argv)
{
	if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		usage();
		return argc < 2 ? 2 : 0;
	}
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V")) {
		printf("flowgate-bench %s (DPDK %d.%d.%d)\n", FG_VERSION, RTE_VER_YEAR,
		       RTE_VER_MONTH, RTE_VER_MINOR);
		return 0;
	}
#define X(n)                                                                 \
	if (!strcmp(argv[1], #n)) {                                          \
		if (!bench_##n##_main) {                                     \
			fprintf(stderr, "flowgate-bench: '%s' is not built " \
					"in this build\n", #n);              \
			return 2;                                            \
		}                                                            \
		return bench_##n##_main(argc - 1, argv + 1);                 \
	}
	FG_BENCH_LIST(X)
#undef X
	fprintf(stderr, "flowgate-bench: unknown benchmark '%s'\n", argv[1]);
	usage();
	return 2;
}
