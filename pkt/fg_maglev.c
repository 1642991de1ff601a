/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fg_maglev.h"

/* splitmix64 finalizer: a fixed, portable 64-bit mixer. */
static inline uint64_t mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	x ^= x >> 31;
	return x;
}

#define SEED_OFFSET 0x6d61676c65763031ULL /* "maglev01" */
#define SEED_SKIP   0x736b697070657232ULL /* "skipper2" */

int fg_maglev_is_prime(uint32_t n)
{
	uint32_t d;

	if (n < 2)
		return 0;
	if (n < 4)
		return 1;
	if ((n & 1) == 0)
		return 0;
	for (d = 3; (uint64_t)d * d <= n; d += 2)
		if (n % d == 0)
			return 0;
	return 1;
}

uint32_t fg_maglev_size(uint32_t nbackends)
{
	uint64_t want = (uint64_t)nbackends * 100;
	uint32_t m;

	if (want < FG_MAGLEV_MIN_SIZE)
		want = FG_MAGLEV_MIN_SIZE;
	if (want > FG_MAGLEV_MAX_SIZE)
		return FG_MAGLEV_MAX_SIZE;
	for (m = (uint32_t)want; !fg_maglev_is_prime(m); m++)
		;
	return m;
}

uint64_t fg_maglev_backend_key(const uint8_t addr[16], uint16_t port)
{
	/* FNV-1a over an explicit byte serialisation: endian-independent. */
	uint64_t h = 0xcbf29ce484222325ULL;
	uint8_t b[18];
	unsigned int i;

	if (addr)
		memcpy(b, addr, 16);
	else
		memset(b, 0, 16);
	b[16] = (uint8_t)(port >> 8);
	b[17] = (uint8_t)port;
	for (i = 0; i < sizeof(b); i++) {
		h ^= b[i];
		h *= 0x100000001b3ULL;
	}
	return mix64(h);
}

/* One backend in round order (see fg_maglev_build). */
struct order_ent {
	uint64_t key;
	uint32_t weight;
	uint32_t idx;
};

/* Round order is by key, so the table does not depend on the order of the
 * caller's array.  Equal keys (which the header asks callers to avoid) fall
 * back to weight, then to array position. */
static int cmp_order(const void *a, const void *b)
{
	const struct order_ent *x = a, *y = b;

	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	if (x->weight != y->weight)
		return x->weight < y->weight ? -1 : 1;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

int fg_maglev_build(const uint32_t *weights, const uint64_t *backend_keys,
		    uint32_t n, uint32_t M, uint32_t *table)
{
	uint32_t *cur, *skip, r, i, maxw = 0, filled = 0;
	struct order_ent *order;
	uint64_t *credit;

	if (table == NULL || M < 3 || M > FG_MAGLEV_MAX_SIZE ||
	    !fg_maglev_is_prime(M))
		return -EINVAL;
	if (n > 0 && (weights == NULL || backend_keys == NULL))
		return -EINVAL;
	for (i = 0; i < M; i++)
		table[i] = FG_MAGLEV_NONE;
	for (i = 0; i < n; i++)
		if (weights[i] > maxw)
			maxw = weights[i];
	if (maxw == 0)
		return 0;

	cur = malloc(sizeof(*cur) * n);
	skip = malloc(sizeof(*skip) * n);
	order = malloc(sizeof(*order) * n);
	credit = calloc(n, sizeof(*credit));
	if (cur == NULL || skip == NULL || order == NULL || credit == NULL) {
		free(cur);
		free(skip);
		free(order);
		free(credit);
		return -ENOMEM;
	}
	for (i = 0; i < n; i++)
		order[i] = (struct order_ent){ backend_keys[i], weights[i], i };
	qsort(order, n, sizeof(*order), cmp_order);
	for (i = 0; i < n; i++) {
		cur[i] = (uint32_t)(mix64(backend_keys[i] ^ SEED_OFFSET) % M);
		skip[i] = (uint32_t)(mix64(backend_keys[i] ^ SEED_SKIP) %
				     (M - 1)) + 1;
	}
	/*
	 * Rounds over backends in key order (not array order: a restart or an
	 * apply that lists the same backends in another order, or under other
	 * ids, must give the same backend in every slot).  A backend earns its
	 * weight each round and spends maxw per slot, so the heaviest takes one slot
	 * per round and slot counts end up proportional to weights.  Each
	 * backend walks its own permutation (offset + j * skip mod M) past
	 * slots already taken; a free slot always exists until filled == M.
	 */
	for (;;) {
		for (r = 0; r < n; r++) {
			i = order[r].idx;
			if (weights[i] == 0)
				continue;
			credit[i] += weights[i];
			while (credit[i] >= maxw) {
				uint32_t c = cur[i];

				credit[i] -= maxw;
				while (table[c] != FG_MAGLEV_NONE) {
					c += skip[i];
					if (c >= M)
						c -= M;
				}
				table[c] = i;
				c += skip[i];
				cur[i] = c >= M ? c - M : c;
				if (++filled == M)
					goto done;
			}
		}
	}
done:
	free(cur);
	free(skip);
	free(order);
	free(credit);
	return 0;
}
