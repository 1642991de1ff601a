/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Mailbox: how a control thread reaches a shard.  One request slot per
 * shard, claimed with a CAS by the poster, executed in bounded chunks by
 * the owner between bursts, released by the owner with a store-release of
 * req->done.  The owner never blocks and never does more than one chunk
 * per poll, so a listing of millions of flows costs the dataplane a few
 * microseconds per loop.
 */
#include <errno.h>
#include <string.h>
#include <time.h>

#include <rte_cycles.h>
#include <rte_pause.h>

#include "ct_private.h"

int
ct_mbox_attach(struct ct_shard *s)
{
	__atomic_store_n(&s->mbox_req, NULL, __ATOMIC_RELEASE);
	s->mbox_cursor = 0;
	return 0;
}

int
ct_mbox_post(struct ct_shard *s, struct ct_mbox_req *req)
{
	struct ct_mbox_req *expect = NULL;

	if (s == NULL || req == NULL)
		return -EINVAL;
	req->done = 0;
	if (req->chunk == 0)
		req->chunk = 1024;
	/* Release: the owner must see the request's fields once it sees the
	 * pointer. */
	if (!__atomic_compare_exchange_n(&s->mbox_req, &expect, req, false,
					 __ATOMIC_RELEASE, __ATOMIC_RELAXED))
		return -ENOBUFS;
	return 0;
}

int
ct_shard_poll(struct ct_shard *s, uint64_t now)
{
	struct ct_mbox_req *req = __atomic_load_n(&s->mbox_req, __ATOMIC_ACQUIRE);

	if (req == NULL)
		return 0;
	if (req->fn != NULL && req->resume) {
		/* one chunk from the poster's cursor, then complete */
		if (req->cursor != CT_WALK_DONE)
			ct_walk(s, &req->cursor, req->chunk, now, req->fn, req->arg);
	} else if (req->fn != NULL) {
		ct_walk(s, &s->mbox_cursor, req->chunk, now, req->fn, req->arg);
		if (s->mbox_cursor != CT_WALK_DONE)
			return 1;
	}
	memcpy(&req->stats, ct_stats_get(s), sizeof(req->stats));
	s->mbox_cursor = 0;
	__atomic_store_n(&s->mbox_req, NULL, __ATOMIC_RELAXED);
	/* Release: the walk's writes through req->arg and the stats copy are
	 * visible before done; the slot is free before done too, so the poster
	 * may post again as soon as it sees done. */
	__atomic_store_n(&req->done, 1, __ATOMIC_RELEASE);
	return 1;
}

int
ct_mbox_wait(struct ct_mbox_req *req, uint64_t timeout_us)
{
	uint64_t start = rte_get_timer_cycles();
	uint64_t limit = timeout_us * (rte_get_timer_hz() / 1000000 + 1);
	unsigned int spins = 0;

	while (!__atomic_load_n(&req->done, __ATOMIC_ACQUIRE)) {
		if (timeout_us && rte_get_timer_cycles() - start > limit)
			return -ETIMEDOUT;
		if (++spins < 1024) {
			rte_pause();
		} else {
			struct timespec ts = { 0, 20000 };

			nanosleep(&ts, NULL);
		}
	}
	return 0;
}
