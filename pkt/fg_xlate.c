/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <string.h>

#include <rte_branch_prediction.h>
#include <rte_byteorder.h>

#include "fg_csum.h"
#include "fg_rss.h"
#include "fg_xlate.h"

#define P_ICMP 1
#define P_IPIP 4
#define P_TCP 6
#define P_UDP 17
#define P_IPV6 41
#define P_ICMPV6 58

static inline void wr16(uint8_t *p, uint16_t host)
{
	p[0] = (uint8_t)(host >> 8);
	p[1] = (uint8_t)host;
}

static inline void st16(uint8_t *p, uint16_t v)
{
	memcpy(p, &v, 2);
}

static inline int is_ip_kind(const struct fg_pkt *p)
{
	return p->kind == FG_PK_FLOW || p->kind == FG_PK_FRAG_LATER ||
	       p->kind == FG_PK_ICMP_ERR;
}

/* Ethernet (+VLAN) header; returns its length. */
static inline uint32_t write_eth(uint8_t *d, const uint8_t dst[6],
				 const uint8_t src[6], uint16_t vlan,
				 uint16_t ethertype)
{
	memcpy(d, dst, 6);
	memcpy(d + 6, src, 6);
	if (vlan) {
		wr16(d + 12, 0x8100);
		wr16(d + 14, vlan & 0x0FFF);
		wr16(d + 16, ethertype);
		return 18;
	}
	wr16(d + 12, ethertype);
	return 14;
}

/* GUE header bytes after UDP: none (v1 direct IP), 4 (v0), or 4 + the
 * previous owner's address (second chance). */
static inline uint32_t gue_hdr_len(const struct fg_encap *e)
{
	if (e->flags & FG_ENCAP_GUE_PREV)
		return 4 + (e->family == CT_V6 ? 16 : 4);
	return (e->flags & FG_ENCAP_GUE_HDR) ? 4 : 0;
}

uint32_t fg_xlate_encap_hdr_len(const struct fg_encap *e, int gue)
{
	uint32_t h = (e->vlan ? 18 : 14) + (e->family == CT_V6 ? 40 : 20);

	if (gue)
		h += 8 + gue_hdr_len(e);
	return h;
}

/* Pseudo-header sum for an L4 checksum (memory-order words). */
static uint32_t pseudo_sum(const uint8_t *ip, int v6, uint8_t proto,
			   uint32_t l4len)
{
	uint32_t s;
	uint8_t tail[4];

	if (v6) {
		s = fg_csum_partial(ip + 8, 32, 0);
		tail[0] = (uint8_t)(l4len >> 24);
		tail[1] = (uint8_t)(l4len >> 16);
		tail[2] = (uint8_t)(l4len >> 8);
		tail[3] = (uint8_t)l4len;
		s = fg_csum_partial(tail, 4, s);
		tail[0] = tail[1] = tail[2] = 0;
		tail[3] = proto;
		return fg_csum_partial(tail, 4, s);
	}
	s = fg_csum_partial(ip + 12, 8, 0);
	tail[0] = 0;
	tail[1] = proto;
	tail[2] = (uint8_t)(l4len >> 8);
	tail[3] = (uint8_t)l4len;
	return fg_csum_partial(tail, 4, s);
}

/* fg_encap_tmpl::inner_max: the outer packet within the MTU (0: none)
 * and what its length field holds (IPv4's total length: 65535; IPv6's
 * payload length: 65535 after the 40-byte header). */
static uint16_t encap_inner_max(const struct fg_encap_tmpl *t)
{
	uint32_t over = (uint32_t)t->len - t->l2_len;
	uint32_t lim = t->family == CT_V4 ? 65535u : 65535u + 40;

	if (t->mtu && t->mtu < lim)
		lim = t->mtu;
	lim = lim > over ? lim - over : 0;
	return (uint16_t)(lim > 65535u ? 65535u : lim);
}

int fg_xlate_encap_build(struct fg_encap_tmpl *t, const struct fg_encap *e,
			 int gue)
{
	uint32_t o;
	uint8_t *ip;

	if (unlikely(t == NULL || e == NULL ||
		     (e->family != CT_V4 && e->family != CT_V6)))
		return -EINVAL;
	memset(t, 0, sizeof(*t));
	t->family = e->family;
	t->gue = gue ? 1 : 0;
	t->gue_hdr = (uint8_t)(gue ? gue_hdr_len(e) : 0);
	t->mtu = e->mtu;
	t->len = (uint8_t)fg_xlate_encap_hdr_len(e, gue);
	o = write_eth(t->hdr, e->dst_mac, e->src_mac, e->vlan,
		      e->family == CT_V4 ? 0x0800 : 0x86DD);
	t->l2_len = (uint8_t)o;
	t->inner_max = encap_inner_max(t);
	ip = t->hdr + o;
	if (e->family == CT_V4) {
		uint32_t src = rte_be_to_cpu_32(e->src.v4);
		uint32_t dst = rte_be_to_cpu_32(e->dst.v4);

		/* TOS, total length, DF and (IP-in-IP) the protocol are the
		 * packet's: apply adds them to this sum */
		ip[0] = 0x45;
		ip[8] = 64;
		ip[9] = gue ? P_UDP : 0;
		memcpy(ip + 12, &e->src.v4, 4);
		memcpy(ip + 16, &e->dst.v4, 4);
		t->sum = 0x4500u + ((64u << 8) | ip[9]) + (src >> 16) +
			 (src & 0xffff) + (dst >> 16) + (dst & 0xffff);
		o += 20;
	} else {
		ip[0] = 0x60;
		ip[6] = gue ? P_UDP : 0;
		ip[7] = 64;
		memcpy(ip + 8, e->src.v6, 16);
		memcpy(ip + 24, e->dst.v6, 16);
		o += 40;
	}
	if (gue) {
		uint8_t *u = t->hdr + o;

		st16(u + 2, e->gue_port);
		if (t->gue_hdr) {
			/* version 0, C 0, hlen in 32-bit words; the inner
			 * protocol (u[9]) is the packet's */
			u[8] = (uint8_t)((t->gue_hdr - 4) / 4);
			wr16(u + 10, t->gue_hdr > 4 ? FG_GUE_FLAG_PREV : 0);
			if (t->gue_hdr > 4)
				memcpy(u + 12, e->family == CT_V6 ? e->prev.v6 :
				       (const uint8_t *)&e->prev.v4, t->gue_hdr - 4);
		}
	}
	return 0;
}

/* The template's bytes in front of the inner packet: two overlapping
 * fixed-size copies instead of a memcpy call of a variable length (an
 * IPv6 outer header is 54..86 bytes). */
static inline void encap_copy6(uint8_t *d, const struct fg_encap_tmpl *t)
{
	uint32_t n = t->len;

	if (n <= 64) {
		memcpy(d, t->hdr, 32);
		memcpy(d + n - 32, t->hdr + n - 32, 32);
	} else {
		memcpy(d, t->hdr, 64);
		memcpy(d + n - 32, t->hdr + n - 32, 32);
	}
}

/* An IPv4 outer header: fg_xlate_encap4_apply() (fg_xlate.h), which the
 * dataplane inlines; an IPv6 one here. */
int fg_xlate_encap_apply(struct fg_frame *f, const struct fg_pkt *p,
			 const struct fg_encap_tmpl *t, uint32_t flow_hash)
{
	uint32_t inner_len, outer_l3, delta, tail_freed, l3_end;
	uint8_t *inner, *d, *ip, inner_proto, tos;

	if (unlikely(f == NULL || p == NULL || t == NULL || !is_ip_kind(p) ||
		     t->len == 0))
		return -EINVAL;
	inner_len = p->l3_len;
	l3_end = (uint32_t)p->l3_off + inner_len;
	if (unlikely(l3_end > f->len))
		return -EINVAL;
	if (t->family == CT_V4)
		return fg_xlate_encap4_apply(f, p, t, flow_hash);
	outer_l3 = t->len - t->l2_len + inner_len;
	if (unlikely(inner_len > t->inner_max))
		return -EMSGSIZE;
	delta = t->len - p->l3_off; /* len >= 54 > any l2_len parsed (<= 18) */
	if (unlikely(delta > f->headroom))
		return -ENOSPC;

	inner = f->data + p->l3_off;
	if (p->family == CT_V4) {
		inner_proto = P_IPIP;
		tos = inner[1];
	} else {
		inner_proto = P_IPV6;
		tos = (uint8_t)((inner[0] << 4) | (inner[1] >> 4));
	}
	d = f->data - delta;
	encap_copy6(d, t);
	ip = d + t->l2_len;
	ip[0] = (uint8_t)(0x60 | (tos >> 4));
	ip[1] = (uint8_t)(tos << 4);
	wr16(ip + 4, (uint16_t)(outer_l3 - 40));
	if (!t->gue)
		ip[6] = inner_proto;
	ip += 40;
	if (t->gue) {
		uint8_t *u = ip;
		uint32_t ulen = 8 + t->gue_hdr + inner_len;
		uint32_t s = pseudo_sum(u - 40, 1, P_UDP, ulen);
		uint16_t c;

		wr16(u, fg_rss_gue_sport(flow_hash));
		wr16(u + 4, (uint16_t)ulen);
		if (t->gue_hdr)
			u[9] = inner_proto;
		/* inner bytes are not moved: sum them where they are */
		s = fg_csum_partial(u, 8 + t->gue_hdr, s);
		s = fg_csum_partial(inner, inner_len, s);
		c = (uint16_t)~fg_csum_fold(s);
		st16(u + 6, c == 0 ? 0xFFFF : c);
	}
	tail_freed = f->len - l3_end;
	f->data = d;
	f->headroom -= delta;
	f->tailroom += tail_freed;
	f->len = t->len + inner_len;
	return (int)f->len;
}

int fg_xlate_ipip(struct fg_frame *f, const struct fg_pkt *p,
		  const struct fg_encap *e)
{
	struct fg_encap_tmpl t;
	int rc = fg_xlate_encap_build(&t, e, 0);

	return rc < 0 ? rc : fg_xlate_encap_apply(f, p, &t, 0);
}

int fg_xlate_gue(struct fg_frame *f, const struct fg_pkt *p,
		 const struct fg_encap *e, uint32_t flow_hash)
{
	struct fg_encap_tmpl t;
	int rc = fg_xlate_encap_build(&t, e, 1);

	return rc < 0 ? rc : fg_xlate_encap_apply(f, p, &t, flow_hash);
}

/*
 * An ICMP / ICMPv6 error about a FG_PK_FLOW packet, in place: from its
 * destination to its source, @p rest as the header's second word, quoting
 * the original up to FG_ICMP4_ERR_MAX / FG_ICMP6_ERR_MAX bytes in all.
 */
static int icmp_err(struct fg_frame *f, const struct fg_pkt *p, uint8_t type,
		    uint8_t code, uint32_t rest, const uint8_t mac[6])
{
	uint32_t l2, add, quote, l3, end_old;
	uint8_t *d, *ip, *ic;
	const uint8_t *orig;
	uint8_t smac[6];
	int v6;

	if (unlikely(f == NULL || p == NULL || mac == NULL || p->kind != FG_PK_FLOW))
		return -EINVAL;
	if (unlikely((uint32_t)p->l3_off + p->l3_len > f->len))
		return -EINVAL;
	v6 = p->family == CT_V6;
	l2 = p->l3_off;
	add = v6 ? 40 + 8 : 20 + 8;
	if (unlikely(add > f->headroom))
		return -ENOSPC;
	quote = RTE_MIN((uint32_t)p->l3_len,
			(v6 ? FG_ICMP6_ERR_MAX : FG_ICMP4_ERR_MAX) - add);
	l3 = add + quote;
	orig = f->data + l2;
	d = f->data - add;
	/* Ethernet (+VLAN) moves to the front: add >= 28 > l2, no overlap */
	memcpy(smac, f->data + 6, 6);
	memcpy(d + 12, f->data + 12, l2 - 12);
	memcpy(d, smac, 6);
	memcpy(d + 6, mac, 6);
	ip = d + l2;
	ic = ip + (v6 ? 40 : 20);
	ic[0] = type;
	ic[1] = code;
	st16(ic + 2, 0);
	wr16(ic + 4, (uint16_t)(rest >> 16));
	wr16(ic + 6, (uint16_t)rest);
	if (!v6) {
		ip[0] = 0x45;
		ip[1] = 0;
		wr16(ip + 2, (uint16_t)l3);
		wr16(ip + 4, 0);
		wr16(ip + 6, 0);
		ip[8] = 64;
		ip[9] = P_ICMP;
		st16(ip + 10, 0);
		memcpy(ip + 12, orig + 16, 4);  /* from the VIP */
		memcpy(ip + 16, orig + 12, 4);  /* to the client */
		st16(ip + 10, (uint16_t)~fg_csum_fold(fg_csum_partial(ip, 20, 0)));
		st16(ic + 2, (uint16_t)~fg_csum_fold(fg_csum_partial(ic, 8 + quote, 0)));
	} else {
		uint32_t sum;

		ip[0] = 0x60;
		ip[1] = ip[2] = ip[3] = 0;
		wr16(ip + 4, (uint16_t)(8 + quote));
		ip[6] = P_ICMPV6;
		ip[7] = 64;
		memcpy(ip + 8, orig + 24, 16);
		memcpy(ip + 24, orig + 8, 16);
		sum = pseudo_sum(ip, 1, P_ICMPV6, 8 + quote);
		sum = fg_csum_partial(ic, 8 + quote, sum);
		st16(ic + 2, (uint16_t)~fg_csum_fold(sum));
	}
	end_old = f->len;
	f->data = d;
	f->headroom -= add;
	f->len = l2 + l3;
	f->tailroom += end_old + add - f->len;
	return (int)f->len;
}

int fg_xlate_icmp_too_big(struct fg_frame *f, const struct fg_pkt *p,
			  uint32_t mtu, const uint8_t mac[6])
{
	if (p != NULL && p->family == CT_V6)
		return icmp_err(f, p, 2, 0, mtu < 1280 ? 1280 : mtu, mac);
	return icmp_err(f, p, 3, 4, RTE_MIN(mtu, 65535u), mac);
}

int fg_xlate_icmp_unreach(struct fg_frame *f, const struct fg_pkt *p,
			  const uint8_t mac[6])
{
	if (p != NULL && p->family == CT_V6)
		return icmp_err(f, p, 1, 4, 0, mac);
	return icmp_err(f, p, 3, 3, 0, mac);
}

int fg_xlate_tcp_rst(struct fg_frame *f, const struct fg_pkt *p,
		     const uint8_t mac[6])
{
	uint32_t l2, seq, ack, seg, l3, hl, len;
	uint8_t addr[32], ports[4], fl, *ip, *t;
	int v6;

	if (unlikely(f == NULL || p == NULL || mac == NULL || p->kind != FG_PK_FLOW ||
		     p->proto != P_TCP || (p->tcp_flags & 0x04)))
		return -EINVAL;
	if (unlikely((uint32_t)p->l3_off + p->l3_len > f->len ||
		     p->l4_off + 20u > (uint32_t)p->l3_off + p->l3_len))
		return -EINVAL;
	v6 = p->family == CT_V6;
	l2 = p->l3_off;
	hl = v6 ? 40 : 20;
	t = f->data + p->l4_off;
	memcpy(&seq, t + 4, 4);
	memcpy(&ack, t + 8, 4);
	memcpy(ports, t, 4);
	fl = t[13];
	seg = (uint32_t)p->l3_off + p->l3_len - p->l4_off - (uint32_t)(t[12] >> 4) * 4;
	seg += (fl & 0x02 ? 1 : 0) + (fl & 0x01 ? 1 : 0);
	ip = f->data + l2;
	if (v6) {
		memcpy(addr, ip + 8, 32);
	} else {
		memcpy(addr, ip + 12, 8);
	}
	l3 = hl + 20;
	len = RTE_MAX(l2 + l3, 60u);
	if (unlikely(len > f->len + f->tailroom))
		return -ENOSPC;
	/* Ethernet: back to where it came from, VLAN tag kept (written
	 * through ip - l2, which is f->data: GCC 12's -Warray-bounds misreads
	 * f->data here) */
	memcpy(ip - l2, ip - l2 + 6, 6);
	memcpy(ip - l2 + 6, mac, 6);
	memset(ip, 0, len - l2);
	if (!v6) {
		ip[0] = 0x45;
		wr16(ip + 2, (uint16_t)l3);
		ip[8] = 64;
		ip[9] = P_TCP;
		memcpy(ip + 12, addr + 4, 4);
		memcpy(ip + 16, addr, 4);
		st16(ip + 10, (uint16_t)~fg_csum_fold(fg_csum_partial(ip, 20, 0)));
	} else {
		ip[0] = 0x60;
		wr16(ip + 4, 20);
		ip[6] = P_TCP;
		ip[7] = 64;
		memcpy(ip + 8, addr + 16, 16);
		memcpy(ip + 24, addr, 16);
	}
	t = ip + hl;
	memcpy(t, ports + 2, 2);
	memcpy(t + 2, ports, 2);
	/* RFC 793 "Reset Generation": an ACK's RST takes its sequence from
	 * the ACK; otherwise sequence 0 and an ACK of everything received */
	if (fl & 0x10) {
		memcpy(t + 4, &ack, 4);
		t[13] = 0x04;
	} else {
		uint32_t a = rte_cpu_to_be_32(rte_be_to_cpu_32(seq) + seg);

		memcpy(t + 8, &a, 4);
		t[13] = 0x14;
	}
	t[12] = 5 << 4;
	st16(t + 16, (uint16_t)~fg_csum_fold(fg_csum_partial(t, 20,
						pseudo_sum(ip, v6, P_TCP, 20))));
	f->tailroom = f->len + f->tailroom - len;
	f->len = len;
	return (int)len;
}

/* RFC 1624 difference of a changed address of @p alen bytes (4 or 16). */
static inline uint32_t addr_diff(const uint8_t *old, const uint8_t *new_, uint32_t alen)
{
	uint32_t d = 0;

	for (uint32_t i = 0; i < alen; i += 4) {
		uint32_t o, n;

		memcpy(&o, old + i, 4);
		memcpy(&n, new_ + i, 4);
		d += fg_csum_diff32(o, n);
	}
	return d;
}

int fg_xlate_nat(struct fg_frame *f, const struct fg_pkt *p, const void *to)
{
	uint8_t *ip, *l4, *cp;
	uint32_t da, diff;
	uint16_t c, nsp, ndp;
	const uint8_t *ns, *nd;
	uint8_t proto, icmp;
	int v6;

	if (unlikely(f == NULL || p == NULL || to == NULL ||
		     (p->kind != FG_PK_FLOW && p->kind != FG_PK_FRAG_LATER)))
		return -EINVAL;
	if (unlikely((uint32_t)p->l3_off + p->l3_len > f->len))
		return -EINVAL;
	v6 = p->family == CT_V6;
	if (v6) {
		const struct ct_key6 *k = to;

		ns = k->saddr, nd = k->daddr, nsp = k->sport, ndp = k->dport;
		proto = k->proto;
		icmp = P_ICMPV6;
	} else {
		const struct ct_key4 *k = to;

		ns = (const uint8_t *)&k->saddr, nd = (const uint8_t *)&k->daddr;
		nsp = k->sport, ndp = k->dport;
		proto = k->proto;
		icmp = P_ICMP;
	}
	if (unlikely(proto != (v6 ? p->key.k6.proto : p->key.k4.proto)))
		return -EINVAL;
	if (fg_xlate_nat4_fits(p))
		return fg_xlate_nat4_apply(f, p, to, 0);
	ip = f->data + p->l3_off;
	l4 = f->data + p->l4_off;
	/* the addresses' change, once for every checksum that covers them
	 * (a constant length in each branch: unrolled, no memcpy call) */
	if (v6) {
		da = addr_diff(ip + 8, ns, 16) + addr_diff(ip + 24, nd, 16);
		memcpy(ip + 8, ns, 16);
		memcpy(ip + 24, nd, 16);
	} else {
		da = addr_diff(ip + 12, ns, 4) + addr_diff(ip + 16, nd, 4);
		memcpy(&c, ip + 10, 2);
		c = fg_csum_apply(c, da);
		memcpy(ip + 10, &c, 2);
		memcpy(ip + 12, ns, 4);
		memcpy(ip + 16, nd, 4);
	}
	if (p->kind == FG_PK_FRAG_LATER)
		return (int)f->len;
	if (p->proto == P_TCP)
		cp = l4 + 16;
	else if (p->proto == P_UDP)
		cp = l4 + 6;
	else if (p->proto == icmp)
		cp = l4 + 2;
	else
		return -EINVAL;
	memcpy(&c, cp, 2);
	if (p->proto == icmp) {
		/* echo: the identifier at +4; ICMPv4 has no pseudo-header */
		uint16_t nid = (p->flags & FG_PF_ECHO_REPLY) ? ndp : nsp;

		diff = (v6 ? da : 0) + fg_csum_diff16(FG_LD16(l4 + 4), nid);
		st16(l4 + 4, nid);
	} else {
		diff = da + fg_csum_diff16(FG_LD16(l4), nsp) + fg_csum_diff16(FG_LD16(l4 + 2), ndp);
		st16(l4, nsp);
		st16(l4 + 2, ndp);
		if (!v6 && p->proto == P_UDP && c == 0)
			return (int)f->len; /* IPv4 UDP without checksum */
	}
	c = fg_csum_apply(c, diff);
	if (p->proto == P_UDP && c == 0)
		c = 0xFFFF;
	memcpy(cp, &c, 2);
	return (int)f->len;
}

int fg_xlate_nat_icmp_err(struct fg_frame *f, const struct fg_pkt *p,
			  const void *outer, const void *inner)
{
	uint8_t *ip, *icmp, *in, *l4;
	uint32_t end, s, l4len;
	uint16_t il4, c;
	int v6;

	if (unlikely(f == NULL || p == NULL || outer == NULL || inner == NULL ||
		     p->kind != FG_PK_ICMP_ERR ||
		     (uint32_t)p->l3_off + p->l3_len > f->len ||
		     fg_pkt_icmp_inner(f->data, f->len, p, &il4) != 0))
		return -EINVAL;
	v6 = p->family == CT_V6;
	ip = f->data + p->l3_off;
	icmp = f->data + p->l4_off;
	in = icmp + 8;
	l4 = f->data + il4;
	end = (uint32_t)p->l3_off + p->l3_len;
	if (il4 + 8u > end)
		return -EINVAL;

	if (!v6) {
		const struct ct_key4 *o = outer, *k = inner;
		uint32_t os, od;
		uint16_t ipc, ic, l4c = 0;
		uint8_t proto = in[9];
		int has_l4c = 0;
		uint8_t *l4cp = NULL;

		memcpy(&os, in + 12, 4);
		memcpy(&od, in + 16, 4);
		/* embedded L4 first: its pseudo-header uses the old addresses */
		if (proto == P_TCP && il4 + 18u <= end) {
			l4cp = l4 + 16;
		} else if (proto == P_UDP) {
			l4cp = l4 + 6;
		} else if (proto == P_ICMP) {
			l4cp = l4 + 2;
		} else if (proto != P_TCP) {
			return -EINVAL;
		}
		if (l4cp) {
			memcpy(&l4c, l4cp, 2);
			has_l4c = !(proto == P_UDP && l4c == 0);
		}
		if (proto == P_ICMP) {
			uint16_t nid = l4[0] == 8 ? k->sport : k->dport;

			if (l4[0] != 8 && l4[0] != 0)
				return -EINVAL;
			l4c = fg_csum_update16(l4c, FG_LD16(l4 + 4), nid);
			st16(l4 + 4, nid);
		} else {
			if (has_l4c) {
				l4c = fg_csum_update32(l4c, os, k->saddr);
				l4c = fg_csum_update32(l4c, od, k->daddr);
				l4c = fg_csum_update16(l4c, FG_LD16(l4), k->sport);
				l4c = fg_csum_update16(l4c, FG_LD16(l4 + 2), k->dport);
				if (proto == P_UDP && l4c == 0)
					l4c = 0xFFFF;
			}
			st16(l4, k->sport);
			st16(l4 + 2, k->dport);
		}
		if (l4cp && (has_l4c || proto == P_ICMP))
			memcpy(l4cp, &l4c, 2);
		memcpy(&ic, in + 10, 2);
		ic = fg_csum_update32(ic, os, k->saddr);
		ic = fg_csum_update32(ic, od, k->daddr);
		memcpy(in + 10, &ic, 2);
		memcpy(in + 12, &k->saddr, 4);
		memcpy(in + 16, &k->daddr, 4);
		/* outer */
		memcpy(&os, ip + 12, 4);
		memcpy(&od, ip + 16, 4);
		memcpy(&ipc, ip + 10, 2);
		ipc = fg_csum_update32(ipc, os, o->saddr);
		ipc = fg_csum_update32(ipc, od, o->daddr);
		memcpy(ip + 10, &ipc, 2);
		memcpy(ip + 12, &o->saddr, 4);
		memcpy(ip + 16, &o->daddr, 4);
	} else {
		const struct ct_key6 *o = outer, *k = inner;
		uint8_t proto;
		uint16_t l4c = 0;
		uint8_t *l4cp = NULL;

		/* the parser keeps the embedded upper-layer protocol in the key */
		proto = p->key.k6.proto;
		if (proto == P_TCP && il4 + 18u <= end)
			l4cp = l4 + 16;
		else if (proto == P_UDP || proto == P_ICMPV6)
			l4cp = l4 + (proto == P_UDP ? 6 : 2);
		else if (proto != P_TCP)
			return -EINVAL;
		if (proto == P_ICMPV6 && l4[0] != 128 && l4[0] != 129)
			return -EINVAL;
		if (l4cp) {
			memcpy(&l4c, l4cp, 2);
			l4c = fg_csum_update128(l4c, in + 8, k->saddr);
			l4c = fg_csum_update128(l4c, in + 24, k->daddr);
		}
		if (proto == P_ICMPV6) {
			uint16_t nid = l4[0] == 128 ? k->sport : k->dport;

			l4c = fg_csum_update16(l4c, FG_LD16(l4 + 4), nid);
			st16(l4 + 4, nid);
		} else {
			if (l4cp) {
				l4c = fg_csum_update16(l4c, FG_LD16(l4), k->sport);
				l4c = fg_csum_update16(l4c, FG_LD16(l4 + 2), k->dport);
			}
			st16(l4, k->sport);
			st16(l4 + 2, k->dport);
		}
		if (l4cp)
			memcpy(l4cp, &l4c, 2);
		memcpy(in + 8, k->saddr, 16);
		memcpy(in + 24, k->daddr, 16);
		memcpy(ip + 8, o->saddr, 16);
		memcpy(ip + 24, o->daddr, 16);
	}
	/* ICMP checksum over the whole message (pseudo-header for v6) */
	l4len = end - p->l4_off;
	icmp[2] = icmp[3] = 0;
	s = v6 ? pseudo_sum(ip, 1, P_ICMPV6, l4len) : 0;
	s = fg_csum_partial(icmp, l4len, s);
	c = (uint16_t)~fg_csum_fold(s);
	memcpy(icmp + 2, &c, 2);
	return (int)f->len;
}

void fg_xlate_eth(uint8_t *frame, const uint8_t src[6], const uint8_t dst[6])
{
	memcpy(frame, dst, 6);
	memcpy(frame + 6, src, 6);
}

int fg_xlate_ttl_dec(uint8_t *frame, const struct fg_pkt *p)
{
	uint8_t *ip;

	if (unlikely(frame == NULL || p == NULL || !is_ip_kind(p)))
		return -EINVAL;
	ip = frame + p->l3_off;
	if (p->family == CT_V4) {
		uint64_t diff = 0;
		uint16_t c;

		if (fg_xlate_ttl4_step(ip, &diff) < 0)
			return -ETIME;
		memcpy(&c, ip + 10, 2);
		c = fg_csum_apply64(c, diff);
		memcpy(ip + 10, &c, 2);
		return 0;
	}
	if (unlikely(ip[7] <= 1))
		return -ETIME;
	ip[7]--;
	return 0;
}

int fg_xlate_arp_reply(struct fg_frame *f, const struct fg_pkt *p,
		       const uint8_t mac[6])
{
	uint8_t *a, sha[6], spa[4], tpa[4];

	if (unlikely(f == NULL || p == NULL || mac == NULL ||
		     p->kind != FG_PK_ARP || (p->flags & FG_PF_ARP_REPLY) ||
		     (uint32_t)p->l3_off + 28 > f->len))
		return -EINVAL;
	a = f->data + p->l3_off;
	memcpy(sha, a + 8, 6);
	memcpy(spa, a + 14, 4);
	memcpy(tpa, a + 24, 4);
	wr16(a + 6, 2);
	memcpy(a + 8, mac, 6);
	memcpy(a + 14, tpa, 4);
	memcpy(a + 18, sha, 6);
	memcpy(a + 24, spa, 4);
	fg_xlate_eth(f->data, mac, sha);
	return (int)f->len;
}

int fg_xlate_nd_advert(struct fg_frame *f, const struct fg_pkt *p,
		       const uint8_t mac[6])
{
	static const uint8_t all_nodes[16] = { 0xff, 0x02, [15] = 0x01 };
	static const uint8_t all_nodes_mac[6] = { 0x33, 0x33, 0, 0, 0, 1 };
	static const uint8_t unspec[16];
	uint8_t target[16], sol[16], sol_mac[6], *ip, *icmp;
	uint32_t new_len, s;
	uint16_t c;
	int dad;

	if (unlikely(f == NULL || p == NULL || mac == NULL ||
		     p->kind != FG_PK_ND || (p->flags & FG_PF_ND_ADVERT) ||
		     p->l3_off > f->len))
		return -EINVAL;
	new_len = (uint32_t)p->l3_off + 40 + 32;
	if (new_len > f->len && new_len - f->len > f->tailroom)
		return -ENOSPC;
	memcpy(target, p->key.k6.daddr, 16);
	memcpy(sol, p->key.k6.saddr, 16);
	memcpy(sol_mac, f->data + 6, 6);
	dad = memcmp(sol, unspec, 16) == 0;

	ip = f->data + p->l3_off;
	icmp = ip + 40;
	ip[0] = 0x60;
	ip[1] = ip[2] = ip[3] = 0;
	wr16(ip + 4, 32);
	ip[6] = P_ICMPV6;
	ip[7] = 255;
	memcpy(ip + 8, target, 16);
	memcpy(ip + 24, dad ? all_nodes : sol, 16);
	icmp[0] = 136;
	icmp[1] = 0;
	icmp[2] = icmp[3] = 0;
	icmp[4] = dad ? 0x20 : 0x60; /* (S) + O */
	icmp[5] = icmp[6] = icmp[7] = 0;
	memcpy(icmp + 8, target, 16);
	icmp[24] = 2; /* target link-layer address */
	icmp[25] = 1;
	memcpy(icmp + 26, mac, 6);
	s = pseudo_sum(ip, 1, P_ICMPV6, 32);
	s = fg_csum_partial(icmp, 32, s);
	c = (uint16_t)~fg_csum_fold(s);
	memcpy(icmp + 2, &c, 2);
	fg_xlate_eth(f->data, mac, dad ? all_nodes_mac : sol_mac);
	if (new_len > f->len)
		f->tailroom -= new_len - f->len;
	else
		f->tailroom += f->len - new_len;
	f->len = new_len;
	return (int)new_len;
}

int fg_xlate_arp_request(uint8_t *buf, uint32_t room, const uint8_t mac[6],
			 const uint8_t *sip, const uint8_t tip[4])
{
	uint8_t *a;

	if (unlikely(buf == NULL || mac == NULL || tip == NULL))
		return -EINVAL;
	if (room < FG_XLATE_ARP_REQUEST_LEN)
		return -ENOSPC;
	memset(buf, 0, FG_XLATE_ARP_REQUEST_LEN);
	memset(buf, 0xff, 6);
	memcpy(buf + 6, mac, 6);
	wr16(buf + 12, 0x0806);
	a = buf + 14;
	wr16(a, 1);          /* hardware: Ethernet */
	wr16(a + 2, 0x0800); /* protocol: IPv4 */
	a[4] = 6;
	a[5] = 4;
	wr16(a + 6, 1);      /* request */
	memcpy(a + 8, mac, 6);
	if (sip != NULL)
		memcpy(a + 14, sip, 4);
	memcpy(a + 24, tip, 4);
	return FG_XLATE_ARP_REQUEST_LEN;
}

int fg_xlate_nd_solicit(uint8_t *buf, uint32_t room, const uint8_t mac[6],
			const uint8_t sip[16], const uint8_t target[16])
{
	uint8_t *ip, *icmp;
	uint32_t s;
	uint16_t c;

	if (unlikely(buf == NULL || mac == NULL || sip == NULL || target == NULL))
		return -EINVAL;
	if (room < FG_XLATE_ND_SOLICIT_LEN)
		return -ENOSPC;
	ip = buf + 14;
	icmp = ip + 40;
	memset(buf, 0, FG_XLATE_ND_SOLICIT_LEN);
	/* solicited-node multicast: ff02::1:ff + the target's low 24 bits,
	 * its MAC 33:33 + the group's low 32 bits */
	buf[0] = 0x33;
	buf[1] = 0x33;
	buf[2] = 0xff;
	memcpy(buf + 3, target + 13, 3);
	memcpy(buf + 6, mac, 6);
	wr16(buf + 12, 0x86dd);
	ip[0] = 0x60;
	wr16(ip + 4, 32);
	ip[6] = P_ICMPV6;
	ip[7] = 255;
	memcpy(ip + 8, sip, 16);
	ip[24] = 0xff;
	ip[25] = 0x02;
	ip[35] = 0x01;
	ip[36] = 0xff;
	memcpy(ip + 37, target + 13, 3);
	icmp[0] = 135;
	memcpy(icmp + 8, target, 16);
	icmp[24] = 1; /* source link-layer address */
	icmp[25] = 1;
	memcpy(icmp + 26, mac, 6);
	s = pseudo_sum(ip, 1, P_ICMPV6, 32);
	s = fg_csum_partial(icmp, 32, s);
	c = (uint16_t)~fg_csum_fold(s);
	memcpy(icmp + 2, &c, 2);
	return FG_XLATE_ND_SOLICIT_LEN;
}

/* Offset of the L4 checksum field, or -1 when the packet has none we own. */
static int l4_csum_off(const struct fg_pkt *p)
{
	if (p->kind != FG_PK_FLOW && p->kind != FG_PK_ICMP_ERR &&
	    p->kind != FG_PK_ND && p->kind != FG_PK_HOST)
		return -1;
	if (p->flags & FG_PF_FRAG)
		return -1; /* L4 checksum covers bytes of other fragments */
	switch (p->proto) {
	case P_TCP:
		return 16;
	case P_UDP:
		return 6;
	case P_ICMP:
	case P_ICMPV6:
		return 2;
	default:
		return -1;
	}
}

static uint32_t l4_sum(const uint8_t *frame, const struct fg_pkt *p)
{
	const uint8_t *ip = frame + p->l3_off;
	uint32_t l4len = fg_pkt_l4_len(p);
	uint32_t s = 0;

	if (!(p->family == CT_V4 && p->proto == P_ICMP))
		s = pseudo_sum(ip, p->family == CT_V6, p->proto, l4len);
	return fg_csum_partial(frame + p->l4_off, l4len, s);
}

int fg_xlate_csum_full(uint8_t *frame, const struct fg_pkt *p)
{
	int co;

	if (frame == NULL || p == NULL || p->kind == FG_PK_DROP ||
	    p->kind == FG_PK_ARP)
		return -EINVAL;
	if (p->family == CT_V4) {
		uint8_t *ip = frame + p->l3_off;
		uint32_t ihl = (uint32_t)(ip[0] & 15) * 4;

		ip[10] = ip[11] = 0;
		st16(ip + 10, fg_csum(ip, ihl));
	}
	co = l4_csum_off(p);
	if (co >= 0) {
		uint8_t *c = frame + p->l4_off + co;
		uint16_t v;

		c[0] = c[1] = 0;
		v = (uint16_t)~fg_csum_fold(l4_sum(frame, p));
		if (p->proto == P_UDP && v == 0)
			v = 0xFFFF;
		st16(c, v);
	}
	return 0;
}

int fg_xlate_csum_verify(const uint8_t *frame, const struct fg_pkt *p)
{
	int co;

	if (frame == NULL || p == NULL || p->kind == FG_PK_DROP ||
	    p->kind == FG_PK_ARP)
		return -EINVAL;
	if (p->family == CT_V4) {
		const uint8_t *ip = frame + p->l3_off;
		uint32_t ihl = (uint32_t)(ip[0] & 15) * 4;

		if (fg_csum(ip, ihl) != 0)
			return -EBADMSG;
	}
	co = l4_csum_off(p);
	if (co >= 0) {
		if (p->family == CT_V4 && p->proto == P_UDP &&
		    FG_RD16(frame + p->l4_off + 6) == 0)
			return 0;
		if (fg_csum_fold(l4_sum(frame, p)) != 0xFFFF)
			return -EBADMSG;
	}
	return 0;
}
