/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * flowgate-bench dataplane: measured orders (fgb_dp.h) and the EAL lcore
 * list the bench and its baselines share.
 */
#include <errno.h>
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fgb_dp.h"

static const char *const order_names[FGB_ORDER_MAX] = {
#define FGB_X(n, d) #n,
	FGB_ORDER_LIST(FGB_X)
#undef FGB_X
};

const char *fgb_order_name(enum fgb_order_kind kind)
{
	return kind < FGB_ORDER_MAX ? order_names[kind] : "?";
}

int fgb_order_parse(const char *arg, struct fgb_order *o)
{
	for (int k = 0; k < FGB_ORDER_MAX; k++) {
		size_t n = strlen(order_names[k]);

		if (strncmp(arg, order_names[k], n) != 0)
			continue;
		o->kind = (enum fgb_order_kind)k;
		o->zipf_s = FGB_ZIPF_S_DEFAULT;
		if (arg[n] == '\0')
			return 0;
		if (k != FGB_ORDER_zipf || arg[n] != ':')
			return -EINVAL;
		char *end;

		o->zipf_s = strtod(arg + n + 1, &end);
		return *end == '\0' && end != arg + n + 1 && o->zipf_s > 0 &&
		       isfinite(o->zipf_s) ? 0 : -EINVAL;
	}
	return -EINVAL;
}

uint64_t fgb_order_len(const struct fgb_order *o, uint64_t flows,
		       unsigned int n_streams)
{
	uint64_t min = (FGB_ZIPF_MIN_PACKETS + n_streams - 1) / n_streams;

	return o->kind == FGB_ORDER_zipf && flows < min ? min : flows;
}

/* splitmix64: tiny, seedable with any value, good enough to shuffle */
static uint64_t rng_next(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* uniform in [0, n): multiply-shift (bias < n / 2^64, nil here) */
static uint64_t rng_below(uint64_t *s, uint64_t n)
{
	return (uint64_t)(((unsigned __int128)rng_next(s) * n) >> 64);
}

/* uniform in [0, 1) with 53 bits */
static double rng_unit(uint64_t *s)
{
	return (double)(rng_next(s) >> 11) * 0x1.0p-53;
}

static uint32_t *permutation(uint64_t n, uint64_t *rng)
{
	uint32_t *p = malloc(n * sizeof(*p));

	if (p == NULL)
		return NULL;
	for (uint64_t i = 0; i < n; i++)
		p[i] = (uint32_t)i;
	for (uint64_t i = n - 1; i > 0; i--) {	/* Fisher-Yates */
		uint64_t j = rng_below(rng, i + 1);
		uint32_t t = p[i];

		p[i] = p[j];
		p[j] = t;
	}
	return p;
}

/* @p len draws of rank r with probability (r + 1)^-s / H(n, s), by
 * inverting the cumulative weights (n doubles: exact, and 80 MB at 10M
 * flows is affordable next to the pcap itself), rank r -> flow perm[r]. */
static int zipf_seq(uint64_t n, uint64_t len, double s, uint64_t *rng, uint32_t *seq)
{
	double *cdf = malloc(n * sizeof(*cdf)), acc = 0;
	uint32_t *perm = permutation(n, rng);

	if (cdf == NULL || perm == NULL) {
		free(cdf);
		free(perm);
		return -ENOMEM;
	}
	for (uint64_t r = 0; r < n; r++)
		cdf[r] = acc += pow((double)(r + 1), -s);
	for (uint64_t k = 0; k < len; k++) {
		double u = rng_unit(rng) * acc;
		uint64_t lo = 0, hi = n - 1;

		while (lo < hi) {	/* first rank whose cumulative weight > u */
			uint64_t mid = lo + (hi - lo) / 2;

			if (cdf[mid] > u)
				hi = mid;
			else
				lo = mid + 1;
		}
		seq[k] = perm[lo];
	}
	free(cdf);
	free(perm);
	return 0;
}

int fgb_order_seq(const struct fgb_order *o, uint64_t flows, uint64_t len,
		  unsigned int stream, uint32_t **seq)
{
	/* one generator per stream: workers' pcaps are independent draws */
	uint64_t rng = o->seed ^ (0xd1b54a32d192ed03ull * (stream + 1));
	int rc = 0;

	*seq = NULL;
	if (o->kind == FGB_ORDER_creation)
		return 0;
	if (o->kind == FGB_ORDER_uniform) {
		*seq = permutation(flows, &rng);
		return *seq ? 0 : -ENOMEM;
	}
	*seq = malloc(len * sizeof(**seq));
	if (*seq == NULL)
		return -ENOMEM;
	rc = zipf_seq(flows, len, o->zipf_s, &rng, *seq);
	if (rc < 0) {
		free(*seq);
		*seq = NULL;
	}
	return rc;
}

long fgb_eal_lcores(char *buf, size_t len, unsigned int first, unsigned int n,
		    bool *oversub)
{
	/* the mask as the process started: once flowgate's EAL runs, this
	 * (main) thread is pinned to lcore 0's CPU, and the baselines after
	 * the run must still get lcore 1 on the CPU of flowgate's worker 0 */
	static unsigned int cpus[CPU_SETSIZE];
	static long nc;
	size_t o;

	if (nc == 0) {
		cpu_set_t set;

		if (sched_getaffinity(0, sizeof(set), &set) != 0)
			CPU_ZERO(&set);
		for (unsigned int c = 0; c < CPU_SETSIZE; c++)
			if (CPU_ISSET(c, &set))
				cpus[nc++] = c;
	}
	if (nc == 0) {	/* no mask: CPUs 0..online-1 */
		long on = sysconf(_SC_NPROCESSORS_ONLN);

		for (nc = 0; nc < on && nc < CPU_SETSIZE; nc++)
			cpus[nc] = (unsigned int)nc;
	}
	*oversub = (long)n > nc;
	o = (size_t)snprintf(buf, len, "--lcores=");
	if (*oversub) {
		o += n - first == 1 ? (size_t)snprintf(buf + o, len - o, "%u@(", first)
				    : (size_t)snprintf(buf + o, len - o, "(%u-%u)@(", first, n - 1);
		for (long k = 0; k < nc && o < len; k++)
			o += (size_t)snprintf(buf + o, len - o, "%s%u", k ? "," : "", cpus[k]);
		snprintf(buf + o, len > o ? len - o : 0, ")");
	} else {
		for (unsigned int k = first; k < n && o < len; k++)
			o += (size_t)snprintf(buf + o, len - o, "%s%u@%u", k > first ? "," : "",
					      k, cpus[k]);
	}
	return nc;
}
