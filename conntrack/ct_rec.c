/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Flow records as bytes (ct_rec.h): encode and decode, pure code on byte
 * buffers.  ct_rec_fill / ct_rec_restore, which work on a shard's
 * entries, live in ct.c with the table they touch.
 */
#include <assert.h>
#include <errno.h>
#include <string.h>
#include <netinet/in.h>

#include "ct_rec.h"

/* The state values are part of the wire format: a reordered CT_STATE_LIST
 * is a new record version (ct_rec.h, "Versions"). */
static_assert(CT_ST_NONE == 0 && CT_ST_SYN_SENT == 1 && CT_ST_SYN_RECV == 2 &&
	      CT_ST_ESTABLISHED == 3 && CT_ST_FIN_WAIT == 4 &&
	      CT_ST_CLOSE_WAIT == 5 && CT_ST_LAST_ACK == 6 &&
	      CT_ST_TIME_WAIT == 7 && CT_ST_CLOSE == 8 && CT_ST_UDP == 9 &&
	      CT_ST_UDP_STREAM == 10 && CT_ST_OTHER == 11 && CT_ST_PICKUP == 12 &&
	      CT_ST_MAX == 13, "ct_rec v1 state values");
static_assert(CT_TD_VALID == 0x01 && CT_TD_HS == 0x02, "ct_rec v1 window flags");

#define REC_HDR 28u   /* the fixed part before the forward key */

static inline uint32_t
alen(uint8_t wire_family)
{
	return wire_family == 6 ? 16 : 4;
}

size_t
ct_rec_len(uint8_t b0, uint8_t b1)
{
	uint32_t a;
	size_t n;

	if ((b0 != 4 && b0 != 6) || (b1 & ~CT_REC_F_ALL))
		return 0;
	a = alen(b0);
	n = REC_HDR + 3 * a + 4;
	if (b1 & CT_REC_F_NAT)
		n += 2 * a + 4 + 8;
	if (b1 & CT_REC_F_COUNTERS)
		n += (b1 & CT_REC_F_NAT) ? 32 : 16;
	return n;
}

/* ---- byte writers / readers (big-endian) ---------------------------- */

static inline uint8_t *
put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
	return p + 2;
}

static inline uint8_t *
put32(uint8_t *p, uint32_t v)
{
	p = put16(p, (uint16_t)(v >> 16));
	return put16(p, (uint16_t)v);
}

static inline uint8_t *
put64(uint8_t *p, uint64_t v)
{
	p = put32(p, (uint32_t)(v >> 32));
	return put32(p, (uint32_t)v);
}

static inline uint8_t *
put_raw(uint8_t *p, const void *v, size_t n)
{
	memcpy(p, v, n);
	return p + n;
}

static inline uint16_t
get16(const uint8_t **p)
{
	uint16_t v = (uint16_t)((*p)[0] << 8 | (*p)[1]);

	*p += 2;
	return v;
}

static inline uint32_t
get32(const uint8_t **p)
{
	uint32_t hi = get16(p);

	return hi << 16 | get16(p);
}

static inline uint64_t
get64(const uint8_t **p)
{
	uint64_t hi = get32(p);

	return hi << 32 | get32(p);
}

static inline void
get_raw(const uint8_t **p, void *v, size_t n)
{
	memcpy(v, *p, n);
	*p += n;
}

static uint8_t *
put_td(uint8_t *p, const struct ct_rec_td *t)
{
	p = put32(p, t->end);
	p = put16(p, t->win);
	*p++ = t->wscale;
	*p++ = t->flags;
	return p;
}

static void
get_td(const uint8_t **p, struct ct_rec_td *t)
{
	t->end = get32(p);
	t->win = get16(p);
	t->wscale = *(*p)++;
	t->flags = *(*p)++;
}

/* A key's tuple: the ports stay in network order (the key's own bytes). */
static uint8_t *
put_key(uint8_t *p, uint8_t family, const void *key)
{
	if (family == CT_V4) {
		const struct ct_key4 *k = key;

		p = put_raw(p, &k->saddr, 4);
		p = put_raw(p, &k->daddr, 4);
		p = put_raw(p, &k->sport, 2);
		return put_raw(p, &k->dport, 2);
	}
	const struct ct_key6 *k = key;

	p = put_raw(p, k->saddr, 16);
	p = put_raw(p, k->daddr, 16);
	p = put_raw(p, &k->sport, 2);
	return put_raw(p, &k->dport, 2);
}

static void
get_key(const uint8_t **p, uint8_t family, uint8_t proto, void *key)
{
	if (family == CT_V4) {
		struct ct_key4 *k = key;

		memset(k, 0, sizeof(*k));
		get_raw(p, &k->saddr, 4);
		get_raw(p, &k->daddr, 4);
		get_raw(p, &k->sport, 2);
		get_raw(p, &k->dport, 2);
		k->proto = proto;
		return;
	}
	struct ct_key6 *k = key;

	memset(k, 0, sizeof(*k));
	get_raw(p, k->saddr, 16);
	get_raw(p, k->daddr, 16);
	get_raw(p, &k->sport, 2);
	get_raw(p, &k->dport, 2);
	k->proto = proto;
}

/* ---- validation ------------------------------------------------------ */

static bool
state_fits(uint8_t state, uint8_t proto, uint8_t flags)
{
	if (state == CT_ST_NONE || state >= CT_ST_MAX)
		return false;
	if (flags & CT_REC_F_FRAG)
		return state == CT_ST_OTHER;
	if (proto == IPPROTO_TCP)
		return (state >= CT_ST_SYN_SENT && state <= CT_ST_CLOSE) ||
		       state == CT_ST_PICKUP;
	if (proto == IPPROTO_UDP)
		return state == CT_ST_UDP || state == CT_ST_UDP_STREAM;
	return state == CT_ST_OTHER;
}

/* A window: known flags, at most one of them (a NAT reply entry holds
 * the client's ISN during the handshake, CT_TD_HS, a window after it,
 * CT_TD_VALID); a known window's scales (both nibbles) 0..14, as
 * fg_pkt_tcp_wscale() caps them.  A handshake's nibbles may be 15 (none). */
static bool
td_ok(const struct ct_rec_td *t)
{
	if (t->flags & ~(CT_TD_VALID | CT_TD_HS) ||
	    t->flags == (CT_TD_VALID | CT_TD_HS))
		return false;
	return !(t->flags & CT_TD_VALID) ||
	       ((t->wscale & 0x0F) <= 14 && (t->wscale >> 4) <= 14);
}

static bool
rec_ok(const struct ct_rec *r)
{
	if (r->family != CT_V4 && r->family != CT_V6)
		return false;
	if (r->flags & ~CT_REC_F_ALL)
		return false;
	if (!state_fits(r->state, r->proto, r->flags))
		return false;
	if ((r->flags & CT_REC_F_NAT) &&
	    ((r->flags & CT_REC_F_FRAG) ||
	     (r->proto != IPPROTO_TCP && r->proto != IPPROTO_UDP)))
		return false;
	if (!td_ok(&r->td))
		return false;
	return !(r->flags & CT_REC_F_NAT) || td_ok(&r->reply_td);
}

/* ---- encode / decode ------------------------------------------------- */

int
ct_rec_encode(const struct ct_rec *r, uint8_t *buf, size_t len)
{
	uint8_t wf = r->family == CT_V6 ? 6 : 4;
	size_t n = ct_rec_len(wf, r->flags);
	uint8_t *p = buf;

	if (!rec_ok(r) || n == 0)
		return -EINVAL;
	if (len < n)
		return -ENOSPC;
	*p++ = wf;
	*p++ = r->flags;
	*p++ = r->proto;
	*p++ = r->state;
	p = put_raw(p, &r->service_port, 2);
	p = put_raw(p, &r->backend_port, 2);
	p = put32(p, r->idle_ms);
	p = put32(p, r->life_ms);
	p = put32(p, r->probation_ms);
	p = put_td(p, &r->td);
	p = put_key(p, r->family, &r->key);
	p = put_raw(p, r->backend, alen(wf));
	if (r->flags & CT_REC_F_NAT) {
		p = put_key(p, r->family, &r->reply);
		p = put_td(p, &r->reply_td);
	}
	if (r->flags & CT_REC_F_COUNTERS) {
		p = put64(p, r->packets);
		p = put64(p, r->bytes);
		if (r->flags & CT_REC_F_NAT) {
			p = put64(p, r->reply_packets);
			p = put64(p, r->reply_bytes);
		}
	}
	return (int)(p - buf);
}

int
ct_rec_decode(const uint8_t *buf, size_t len, struct ct_rec *out)
{
	const uint8_t *p = buf;
	struct ct_rec r;
	size_t n;

	if (len < 2)
		return -EMSGSIZE;
	n = ct_rec_len(buf[0], buf[1]);
	if (n == 0)
		return -EINVAL;
	if (len < n)
		return -EMSGSIZE;
	memset(&r, 0, sizeof(r));
	r.family = *p++ == 6 ? CT_V6 : CT_V4;
	r.flags = *p++;
	r.proto = *p++;
	r.state = *p++;
	get_raw(&p, &r.service_port, 2);
	get_raw(&p, &r.backend_port, 2);
	r.idle_ms = get32(&p);
	r.life_ms = get32(&p);
	r.probation_ms = get32(&p);
	get_td(&p, &r.td);
	get_key(&p, r.family, r.proto, &r.key);
	get_raw(&p, r.backend, alen(buf[0]));
	if (r.flags & CT_REC_F_NAT) {
		get_key(&p, r.family, r.proto, &r.reply);
		get_td(&p, &r.reply_td);
	}
	if (r.flags & CT_REC_F_COUNTERS) {
		r.packets = get64(&p);
		r.bytes = get64(&p);
		if (r.flags & CT_REC_F_NAT) {
			r.reply_packets = get64(&p);
			r.reply_bytes = get64(&p);
		}
	}
	if (!rec_ok(&r))
		return -EINVAL;
	*out = r;
	return (int)(p - buf);
}
