/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * flows watch on XDP (fgx_load.h): conntrack events from user space.
 *
 * The program reports nothing (no ring buffer: its instruction budget is
 * nearly spent, and a watcher would cost every packet a branch); instead
 * each poll walks both conntrack maps, at most every FGX_WATCH_MIN_MS,
 * and compares the live flows with the previous walk's, both sorted by
 * key: a key that appears (or comes back with another creation time) is
 * NEW, a state that differs is UPDATE, a flow no longer live is DESTROY
 * ("expired", or "closed" when it expired in CLOSE / TIME_WAIT, or
 * "evicted" when it left before its timeout: the LRU, or `flows delete`).
 * A flow that comes and goes between two walks is not seen, and a state
 * passed through between them is reported as the last one: the walk's
 * grain.  The first walk after the first watcher is the baseline (no
 * events), as on DPDK.  Costs while nobody watches: nothing.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fg_grow.h"
#include "fgx_private.h"

#define FGX_WATCH_MIN_MS 200

struct snap_ent {
	uint8_t v6;
	uint8_t key[sizeof(struct ct_key6)];
	struct fgx_ct e;
};

struct snap {
	struct snap_ent *v;
	size_t n, cap;
	struct fgx_cfg cfg;
	uint64_t now, wall;
};

struct fgx_watch {
	struct snap prev;
	bool have_prev;
	uint64_t last_ms;
	struct fg_flow_event *q;   /* events not handed out yet */
	size_t qn, qoff, qcap;
};

static uint64_t mono_ms(void)
{
	return fgx_now_ns() / 1000000ull;
}

int fgx_watch_create(struct fgx_watch **out)
{
	*out = calloc(1, sizeof(**out));
	return *out ? 0 : -ENOMEM;
}

void fgx_watch_destroy(struct fgx_watch *w)
{
	if (!w)
		return;
	free(w->prev.v);
	free(w->q);
	free(w);
}

static int snap_add(const struct fgx_ct_walk *cw, void *arg)
{
	struct snap *s = arg;
	struct snap_ent *v = fg_grow(s->v, &s->cap, s->n, sizeof(*v), 1024);
	struct snap_ent *e;

	if (!v)
		return -ENOMEM;
	s->v = v;
	e = &s->v[s->n++];
	memset(e, 0, sizeof(*e));
	e->v6 = (uint8_t)cw->v6;
	memcpy(e->key, cw->key, cw->v6 ? sizeof(struct ct_key6) : sizeof(struct ct_key4));
	e->e = cw->e;
	s->cfg = cw->cfg;
	s->now = cw->now;
	s->wall = cw->wall;
	return 0;
}

static int ent_cmp(const void *a, const void *b)
{
	const struct snap_ent *x = a, *y = b;

	return memcmp(x, y, offsetof(struct snap_ent, e));
}

static int q_push(struct fgx_watch *w, const struct fg_config *cfg, const struct snap *s,
		  const struct snap_ent *se, const char *type, const char *prev,
		  const char *why)
{
	struct fgx_ct_walk cw = { .v6 = se->v6, .key = se->key, .e = se->e, .cfg = s->cfg,
				  .now = s->now, .wall = s->wall };
	struct fg_flow_event *q = fg_grow(w->q, &w->qcap, w->qn, sizeof(*q), 256);
	struct fg_flow_event *ev;

	if (!q)
		return -ENOMEM;
	w->q = q;
	ev = &w->q[w->qn++];
	memset(ev, 0, sizeof(*ev));
	snprintf(ev->type, sizeof(ev->type), "%s", type);
	fgx_flow_info(cfg, &cw, &ev->flow);
	ev->flow.ts_ms = s->wall;
	if (prev)
		snprintf(ev->flow.prev_state, sizeof(ev->flow.prev_state), "%s", prev);
	if (why)
		snprintf(ev->flow.end_reason, sizeof(ev->flow.end_reason), "%s", why);
	return 0;
}

/* Why a flow of the previous walk is gone from this one. */
static const char *gone_why(const struct snap *now, const struct snap_ent *old)
{
	uint64_t idle = now->now > old->e.last_seen ? now->now - old->e.last_seen : 0;

	if (idle <= now->cfg.timeout_ns[old->e.state & 15])
		return "evicted";
	return old->e.state == CT_ST_TIME_WAIT || old->e.state == CT_ST_CLOSE ?
	       "closed" : "expired";
}

static const char *st_name(uint8_t st)
{
	return st < CT_ST_MAX ? ct_state_names[st] : "?";
}

/* Merge of two sorted walks into events. */
static int diff(struct fgx_watch *w, const struct fg_config *cfg, const struct snap *o,
		const struct snap *n)
{
	size_t i = 0, j = 0;
	int rc = 0;

	while (!rc && (i < o->n || j < n->n)) {
		int c = i == o->n ? 1 : j == n->n ? -1 : ent_cmp(&o->v[i], &n->v[j]);

		if (c < 0) {
			rc = q_push(w, cfg, n, &o->v[i], "DESTROY", NULL, gone_why(n, &o->v[i]));
			i++;
		} else if (c > 0) {
			rc = q_push(w, cfg, n, &n->v[j], "NEW", NULL, NULL);
			j++;
		} else {
			const struct fgx_ct *a = &o->v[i].e, *b = &n->v[j].e;

			if (a->first_seen != b->first_seen) {
				/* the tuple's flow ended and another began */
				rc = q_push(w, cfg, n, &o->v[i], "DESTROY", NULL, "expired");
				if (!rc)
					rc = q_push(w, cfg, n, &n->v[j], "NEW", NULL, NULL);
			} else if (a->state != b->state) {
				rc = q_push(w, cfg, n, &n->v[j], "UPDATE", st_name(a->state), NULL);
			}
			i++;
			j++;
		}
	}
	return rc;
}

int fgx_watch_poll(struct fgx_watch *w, struct fgx *x, const struct fg_config *cfg,
		   struct fg_flow_event *ev, unsigned int max)
{
	unsigned int k = 0;

	if (w->qoff == w->qn && mono_ms() - w->last_ms >= FGX_WATCH_MIN_MS) {
		struct snap cur = { 0 };
		int64_t rc;

		w->qn = w->qoff = 0;
		w->last_ms = mono_ms();
		rc = fgx_ct_each(x, snap_add, &cur);
		if (rc < 0) {
			free(cur.v);
			return (int)rc;
		}
		if (cur.n)
			qsort(cur.v, cur.n, sizeof(*cur.v), ent_cmp);
		if (!cur.n) {   /* no entry told the walk's time */
			cur.now = fgx_now_ns();
			cur.wall = fgx_wall_ms();
			cur.cfg = w->prev.cfg;
		}
		if (w->have_prev)
			rc = diff(w, cfg, &w->prev, &cur);
		free(w->prev.v);
		w->prev = cur;
		w->have_prev = true;
		if (rc < 0)
			return (int)rc;
	}
	while (k < max && w->qoff < w->qn)
		ev[k++] = w->q[w->qoff++];
	return (int)k;
}
