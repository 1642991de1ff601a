/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * Publishing a read-mostly table to the workers (STYLE 11), written once.
 *
 * The control thread builds a new copy off the fast path, then
 * fg_rcu_publish() swaps the one pointer the workers load and waits for an
 * RCU QSBR grace period: every worker reports a quiescent state between
 * bursts (fg_worker_main), so once the wait returns no worker can still
 * hold the old copy and the caller frees it.  Used for the service tables
 * (fg_lb.c) and the neighbour table (fg_neigh.c, fg_control.c).
 *
 * Thread safety: one publisher per slot at a time (callers hold
 * fg_dp::cfg_lock); workers only load the slot with acquire semantics.
 */
#ifndef FLOWGATE_FG_RCU_H
#define FLOWGATE_FG_RCU_H

#include <rte_rcu_qsbr.h>

/** Waits until every online worker has passed a quiescent state.  A NULL
 *  @p qsbr (no worker started yet) needs no wait. */
static inline void
fg_rcu_wait(struct rte_rcu_qsbr *qsbr)
{
	if (qsbr != NULL)
		rte_rcu_qsbr_synchronize(qsbr, RTE_QSBR_THRID_INVALID);
}

/**
 * Stores @p next in @p *slot with release ordering (a worker that loads the
 * pointer with acquire sees the table fully built), waits for a grace
 * period and evaluates to the previous value, which no worker holds any
 * more: the caller frees it.  Typed: @p slot is a pointer to the published
 * pointer, @p next has the same type.
 */
#define fg_rcu_publish(qsbr, slot, next) __extension__({               \
	__typeof__(*(slot)) fg_rcu_old_ = *(slot);                      \
	__atomic_store_n((slot), (next), __ATOMIC_RELEASE);             \
	fg_rcu_wait(qsbr);                                              \
	fg_rcu_old_;                                                    \
})

#endif /* FLOWGATE_FG_RCU_H */
