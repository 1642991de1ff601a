/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * A growing array, written once: room for one more element of @p size
 * at index @p n, doubling (first @p first elements).  Plain C, no
 * dependency: any module may include it.
 *
 *     struct ev *v = fg_grow(h->v, &h->cap, h->n, sizeof(*v), 1024);
 *     if (v == NULL)
 *             return -ENOMEM;     (h->v is still valid)
 *     h->v = v;
 */
#ifndef FLOWGATE_FG_GROW_H
#define FLOWGATE_FG_GROW_H

#include <stddef.h>
#include <stdlib.h>

/** @return @p v or its reallocation (then *cap updated), NULL when out
 *  of memory (@p v untouched). */
static inline void *fg_grow(void *v, size_t *cap, size_t n, size_t size, size_t first)
{
	size_t c;
	void *p;

	if (n < *cap)
		return v;
	c = *cap ? *cap * 2 : first;
	p = realloc(v, c * size);
	if (p != NULL)
		*cap = c;
	return p;
}

#endif /* FLOWGATE_FG_GROW_H */
