/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Parser.  Every read is preceded by a bounds check against an `end`
 * offset that never exceeds `len`: for L2/L3 headers `end` is the frame
 * length, from L4 on it is the end of the IP packet (l3_off + l3_len), so
 * Ethernet padding is never parsed as payload.
 */
#include <errno.h>
#include <string.h>

#include <rte_branch_prediction.h>

#include "fg_csum.h"
#include "fg_pkt.h"

#define ETH_HLEN 14
#define ET_IPV4 0x0800
#define ET_IPV6 0x86DD
#define ET_ARP 0x0806
#define ET_VLAN 0x8100
#define ET_QINQ 0x88A8

#define P_ICMP 1
#define P_TCP 6
#define P_UDP 17
#define P_ESP 50
#define P_AH 51
#define P_ICMPV6 58

static inline uint16_t rd16(const uint8_t *p)
{
	return (uint16_t)((uint16_t)p[0] << 8 | p[1]);
}

static inline uint16_t ld16(const uint8_t *p)
{
	uint16_t v;

	memcpy(&v, p, 2);
	return v;
}

static inline int drop(struct fg_pkt *out, enum fg_drop why)
{
	out->kind = FG_PK_DROP;
	out->drop = (uint8_t)why;
	return FG_PK_DROP;
}

/* 3-tuple key: addresses + proto, ports 0 (FRAG_LATER / HOST). */
static inline void key_addrs(struct fg_pkt *out, const uint8_t *ip, int v6)
{
	if (v6) {
		memcpy(out->key.k6.saddr, ip + 8, 16);
		memcpy(out->key.k6.daddr, ip + 24, 16);
	} else {
		memcpy(&out->key.k4.saddr, ip + 12, 4);
		memcpy(&out->key.k4.daddr, ip + 16, 4);
	}
}

static inline void key_ports(struct fg_pkt *out, int v6, uint16_t sport,
			     uint16_t dport, uint8_t proto)
{
	if (v6) {
		out->key.k6.sport = sport;
		out->key.k6.dport = dport;
		out->key.k6.proto = proto;
	} else {
		out->key.k4.sport = sport;
		out->key.k4.dport = dport;
		out->key.k4.proto = proto;
	}
}

enum v6walk {
	V6W_OK = 0,
	V6W_LATER,   /* non-first fragment: no L4 header here */
};

/*
 * Walks an IPv6 extension chain starting with next header *nh at *off,
 * bounded by end.  On success *off is the upper-layer header offset and
 * *nh its protocol.  Returns V6W_OK / V6W_LATER, or -(enum fg_drop).
 */
static int v6_walk(const uint8_t *frame, uint32_t *off, uint32_t end,
		   uint8_t *nh, uint8_t *flags)
{
	uint32_t o = *off;
	uint8_t n = *nh;
	unsigned int i;

	for (i = 0;; i++) {
		switch (n) {
		case 0:   /* hop-by-hop */
		case 43:  /* routing */
		case 60: { /* destination options */
			uint32_t hlen;

			if (unlikely(i >= FG_PKT_V6_EXT_MAX))
				return -FG_DROP_ipv6_ext_chain_too_long;
			if (unlikely(o + 8 > end))
				return -FG_DROP_ipv6_ext_truncated;
			hlen = ((uint32_t)frame[o + 1] + 1) * 8;
			if (unlikely(o + hlen > end))
				return -FG_DROP_ipv6_ext_truncated;
			n = frame[o];
			o += hlen;
			*flags |= FG_PF_IP_OPTS;
			break;
		}
		case 44: { /* fragment */
			uint16_t fo;

			if (unlikely(i >= FG_PKT_V6_EXT_MAX))
				return -FG_DROP_ipv6_ext_chain_too_long;
			if (unlikely(o + 8 > end))
				return -FG_DROP_ipv6_ext_truncated;
			fo = rd16(frame + o + 2);
			n = frame[o];
			o += 8;
			*flags |= FG_PF_IP_OPTS;
			if (fo & 0xFFF8) {
				*off = o;
				*nh = n;
				return V6W_LATER;
			}
			if (fo & 1)
				*flags |= FG_PF_FRAG;
			break;
		}
		case P_AH:
		case P_ESP:
			return -FG_DROP_ipsec_unsupported;
		case 59:  /* no next header */
		case 135: /* mobility */
		case 139: /* HIP */
		case 140: /* shim6 */
		case 253:
		case 254: /* experimental */
			return -FG_DROP_ipv6_unsupported_ext;
		default:
			*off = o;
			*nh = n;
			return V6W_OK;
		}
	}
}

/* Embedded packet of an ICMP error: fills the reversed key. */
static int parse_icmp_err(const uint8_t *frame, uint32_t in, uint32_t end,
			  struct fg_pkt *out, int v6)
{
	uint32_t l4;
	uint8_t proto;
	uint16_t sport, dport;
	const uint8_t *ip = frame + in;

	if (!v6) {
		uint32_t ihl;

		if (unlikely(in + 20 > end || (ip[0] >> 4) != 4))
			return drop(out, FG_DROP_icmp_unrelated);
		ihl = (uint32_t)(ip[0] & 15) * 4;
		if (unlikely(ihl < 20 || in + ihl > end))
			return drop(out, FG_DROP_icmp_unrelated);
		if (unlikely(rd16(ip + 6) & 0x1FFF)) /* later fragment */
			return drop(out, FG_DROP_icmp_unrelated);
		proto = ip[9];
		l4 = in + ihl;
		/* reversed: embedded dst becomes our src */
		memcpy(&out->key.k4.saddr, ip + 16, 4);
		memcpy(&out->key.k4.daddr, ip + 12, 4);
	} else {
		uint8_t fl = 0;
		int r;

		if (unlikely(in + 40 > end || (ip[0] >> 4) != 6))
			return drop(out, FG_DROP_icmp_unrelated);
		l4 = in + 40;
		proto = ip[6];
		r = v6_walk(frame, &l4, end, &proto, &fl);
		if (unlikely(r != V6W_OK))
			return drop(out, FG_DROP_icmp_unrelated);
		memcpy(out->key.k6.saddr, ip + 24, 16);
		memcpy(out->key.k6.daddr, ip + 8, 16);
	}
	/* RFC 792 / 4443 quote at least 8 bytes of the original L4 header. */
	if (unlikely(l4 + 8 > end))
		return drop(out, FG_DROP_icmp_unrelated);
	switch (proto) {
	case P_TCP:
	case P_UDP:
		sport = ld16(frame + l4);
		dport = ld16(frame + l4 + 2);
		break;
	case P_ICMP:
	case P_ICMPV6: {
		uint8_t t = frame[l4];

		if ((v6 && proto != P_ICMPV6) || (!v6 && proto != P_ICMP))
			return drop(out, FG_DROP_icmp_unrelated);
		/* echo request key {A,B,id,0}; echo reply {A,B,0,id} */
		if (t == (v6 ? 128 : 8)) {
			sport = ld16(frame + l4 + 4);
			dport = 0;
		} else if (t == (v6 ? 129 : 0)) {
			sport = 0;
			dport = ld16(frame + l4 + 4);
		} else {
			return drop(out, FG_DROP_icmp_unrelated);
		}
		break;
	}
	default:
		return drop(out, FG_DROP_icmp_unrelated);
	}
	/* reversed ports */
	key_ports(out, v6, dport, sport, proto);
	out->kind = FG_PK_ICMP_ERR;
	return FG_PK_ICMP_ERR;
}

/* L4 of a whole packet or first fragment; end = end of the IP packet. */
static inline int parse_l4(const uint8_t *frame, uint32_t l4, uint32_t end,
			   struct fg_pkt *out, int v6, uint8_t hop)
{
	uint32_t avail = end - l4;
	const uint8_t *h = frame + l4;
	uint8_t proto = out->proto;

	if (likely(proto == P_TCP)) {
		uint32_t doff;

		if (unlikely(avail < 20))
			return drop(out, FG_DROP_l4_truncated);
		doff = (uint32_t)(h[12] >> 4) * 4;
		if (unlikely(doff < 20 || doff > avail))
			return drop(out, FG_DROP_tcp_bad_doff);
		out->tcp_flags = h[13];
		key_ports(out, v6, ld16(h), ld16(h + 2), proto);
		out->kind = FG_PK_FLOW;
	} else if (likely(proto == P_UDP)) {
		uint32_t ulen;

		if (unlikely(avail < 8))
			return drop(out, FG_DROP_l4_truncated);
		ulen = rd16(h + 4);
		/* a first fragment holds only part of the datagram */
		if (unlikely(ulen < 8 ||
			     (ulen > avail && !(out->flags & FG_PF_FRAG))))
			return drop(out, FG_DROP_udp_bad_len);
		key_ports(out, v6, ld16(h), ld16(h + 2), proto);
		out->kind = FG_PK_FLOW;
	} else if (proto == (v6 ? P_ICMPV6 : P_ICMP)) {
		uint8_t t;

		if (unlikely(avail < 8))
			return drop(out, FG_DROP_l4_truncated);
		t = h[0];
		if (t == (v6 ? 128 : 8)) {
			key_ports(out, v6, ld16(h + 4), 0, proto);
			out->kind = FG_PK_FLOW;
		} else if (t == (v6 ? 129 : 0)) {
			key_ports(out, v6, 0, ld16(h + 4), proto);
			out->flags |= FG_PF_ECHO_REPLY;
			out->kind = FG_PK_FLOW;
		} else if (!v6 && (t == 3 || t == 11 || t == 12)) {
			if (unlikely(out->flags & FG_PF_FRAG))
				return drop(out, FG_DROP_icmp_unrelated);
			if (parse_icmp_err(frame, l4 + 8, end, out, 0) ==
			    FG_PK_DROP)
				return FG_PK_DROP;
		} else if (v6 && t >= 1 && t <= 4) {
			if (unlikely(out->flags & FG_PF_FRAG))
				return drop(out, FG_DROP_icmp_unrelated);
			if (parse_icmp_err(frame, l4 + 8, end, out, 1) ==
			    FG_PK_DROP)
				return FG_PK_DROP;
		} else if (v6 && (t == 135 || t == 136)) {
			/* RFC 4861 7.1.1: hop limit 255, code 0, >= 24 B */
			if (unlikely(hop != 255 || h[1] != 0 || avail < 24))
				return drop(out, FG_DROP_nd_malformed);
			memcpy(out->key.k6.daddr, h + 8, 16);
			out->key.k6.proto = proto;
			if (t == 136)
				out->flags |= FG_PF_ND_ADVERT;
			out->kind = FG_PK_ND;
			return FG_PK_ND;
		} else {
			key_ports(out, v6, 0, 0, proto);
			out->kind = FG_PK_HOST;
			return FG_PK_HOST;
		}
	} else if (proto == P_AH || proto == P_ESP) {
		return drop(out, FG_DROP_ipsec_unsupported);
	} else {
		return drop(out, FG_DROP_l4_unsupported_proto);
	}
	if (unlikely(hop <= 1))
		return drop(out, FG_DROP_ttl_expired);
	return out->kind;
}

static inline int parse_v4(const uint8_t *frame, uint32_t len, uint32_t off,
			   struct fg_pkt *out, unsigned int opts)
{
	const uint8_t *ip = frame + off;
	uint32_t avail = len - off;
	uint32_t ihl, tot;
	uint16_t fo;

	out->family = CT_V4;
	if (unlikely(avail < 20))
		return drop(out, FG_DROP_ipv4_truncated);
	if (unlikely((ip[0] >> 4) != 4))
		return drop(out, FG_DROP_ipv4_bad_version);
	ihl = (uint32_t)(ip[0] & 15) * 4;
	if (unlikely(ihl < 20 || ihl > avail))
		return drop(out, FG_DROP_ipv4_bad_ihl);
	tot = rd16(ip + 2);
	if (unlikely(tot < ihl || tot > avail))
		return drop(out, FG_DROP_ipv4_bad_len);
	if (unlikely((opts & FG_PARSE_CHECK_CSUM) && fg_csum(ip, ihl) != 0))
		return drop(out, FG_DROP_ipv4_bad_csum);
	out->l3_len = (uint16_t)tot;
	out->l4_off = (uint16_t)(off + ihl);
	out->proto = ip[9];
	if (ihl > 20)
		out->flags |= FG_PF_IP_OPTS;
	key_addrs(out, ip, 0);
	fo = rd16(ip + 6);
	if (fo & 0x4000)
		out->flags |= FG_PF_DF;
	if (unlikely(fo & 0x3FFF)) {
		uint32_t foff = (uint32_t)(fo & 0x1FFF) * 8;

		if (foff) {
			if (unlikely(foff + tot - ihl > 65535))
				return drop(out, FG_DROP_ipv4_bad_frag);
			out->key.k4.proto = ip[9];
			if (unlikely(ip[8] <= 1))
				return drop(out, FG_DROP_ttl_expired);
			out->kind = FG_PK_FRAG_LATER;
			return FG_PK_FRAG_LATER;
		}
		out->flags |= FG_PF_FRAG; /* MF set, offset 0 */
	}
	return parse_l4(frame, off + ihl, off + tot, out, 0, ip[8]);
}

static inline int parse_v6(const uint8_t *frame, uint32_t len, uint32_t off,
			   struct fg_pkt *out)
{
	const uint8_t *ip = frame + off;
	uint32_t avail = len - off;
	uint32_t end, l4;
	uint8_t nh;
	int r;

	out->family = CT_V6;
	if (unlikely(avail < 40))
		return drop(out, FG_DROP_ipv6_truncated);
	if (unlikely((ip[0] >> 4) != 6))
		return drop(out, FG_DROP_ipv6_bad_version);
	end = 40 + (uint32_t)rd16(ip + 4);
	if (unlikely(end > avail))
		return drop(out, FG_DROP_ipv6_bad_len);
	out->l3_len = (uint16_t)end;
	end += off;
	key_addrs(out, ip, 1);
	nh = ip[6];
	l4 = off + 40;
	if (unlikely(nh != P_TCP && nh != P_UDP)) {
		r = v6_walk(frame, &l4, end, &nh, &out->flags);
		if (unlikely(r < 0)) {
			out->proto = nh;
			return drop(out, (enum fg_drop)-r);
		}
		if (r == V6W_LATER) {
			out->l4_off = (uint16_t)l4;
			out->proto = nh;
			out->key.k6.proto = nh;
			if (unlikely(ip[7] <= 1))
				return drop(out, FG_DROP_ttl_expired);
			out->kind = FG_PK_FRAG_LATER;
			return FG_PK_FRAG_LATER;
		}
	}
	out->l4_off = (uint16_t)l4;
	out->proto = nh;
	return parse_l4(frame, l4, end, out, 1, ip[7]);
}

static inline int parse_arp(const uint8_t *frame, uint32_t len, uint32_t off,
			    struct fg_pkt *out)
{
	const uint8_t *a = frame + off;
	uint16_t op;

	out->family = CT_V4;
	out->l4_off = (uint16_t)off;
	if (unlikely(len - off < 28 || rd16(a) != 1 || rd16(a + 2) != ET_IPV4 ||
		     a[4] != 6 || a[5] != 4))
		return drop(out, FG_DROP_arp_malformed);
	op = rd16(a + 6);
	if (op == 2)
		out->flags |= FG_PF_ARP_REPLY;
	else if (unlikely(op != 1))
		return drop(out, FG_DROP_arp_unsupported_op);
	out->l3_len = 28;
	memcpy(&out->key.k4.saddr, a + 14, 4);
	memcpy(&out->key.k4.daddr, a + 24, 4);
	out->kind = FG_PK_ARP;
	return FG_PK_ARP;
}

int fg_pkt_parse_ex(const uint8_t *frame, uint32_t len, struct fg_pkt *out,
		    unsigned int opts)
{
	uint32_t off = ETH_HLEN;
	uint16_t et;

	memset(out, 0, sizeof(*out));
	if (unlikely(frame == NULL || len < ETH_HLEN))
		return drop(out, FG_DROP_l2_truncated);
	if (unlikely(len > UINT16_MAX))
		len = UINT16_MAX; /* offsets are 16-bit; IP cannot be longer */
	et = rd16(frame + 12);
	if (unlikely(et == ET_VLAN || et == ET_QINQ)) {
		if (unlikely(len < ETH_HLEN + 4))
			return drop(out, FG_DROP_vlan_truncated);
		out->vlan = rd16(frame + 14);
		out->flags |= FG_PF_VLAN;
		et = rd16(frame + 16);
		off += 4;
		if (unlikely(et == ET_VLAN || et == ET_QINQ))
			return drop(out, FG_DROP_vlan_qinq);
	}
	out->l2_len = (uint16_t)off;
	out->l3_off = (uint16_t)off;
	if (likely(et == ET_IPV4))
		return parse_v4(frame, len, off, out, opts);
	if (likely(et == ET_IPV6))
		return parse_v6(frame, len, off, out);
	if (et == ET_ARP)
		return parse_arp(frame, len, off, out);
	return drop(out, FG_DROP_unknown_ethertype);
}

int fg_pkt_parse(const uint8_t *frame, uint32_t len, struct fg_pkt *out)
{
	return fg_pkt_parse_ex(frame, len, out, 0);
}

int fg_pkt_icmp_inner(const uint8_t *frame, uint32_t len,
		      const struct fg_pkt *p, uint16_t *inner_l4_off)
{
	uint32_t in, end;

	if (frame == NULL || p == NULL || inner_l4_off == NULL ||
	    p->kind != FG_PK_ICMP_ERR)
		return -EINVAL;
	in = (uint32_t)p->l4_off + 8;
	end = (uint32_t)p->l3_off + p->l3_len;
	if (end > len || in + 20 > end)
		return -EINVAL;
	if (p->family == CT_V4) {
		uint32_t ihl = (uint32_t)(frame[in] & 15) * 4;

		if (ihl < 20 || in + ihl > end)
			return -EINVAL;
		*inner_l4_off = (uint16_t)(in + ihl);
		return 0;
	} else {
		uint32_t l4 = in + 40;
		uint8_t nh, fl = 0;

		if (l4 > end)
			return -EINVAL;
		nh = frame[in + 6];
		if (v6_walk(frame, &l4, end, &nh, &fl) != V6W_OK)
			return -EINVAL;
		*inner_l4_off = (uint16_t)l4;
		return 0;
	}
}

uint32_t fg_pkt_sig(const struct fg_pkt *p)
{
	if (p->family == CT_V6)
		return ct_key_sig(&p->key.k6, sizeof(p->key.k6));
	return ct_key_sig(&p->key.k4, sizeof(p->key.k4));
}

const char *fg_pkt_kind_name(unsigned int kind)
{
	static const char *const names[FG_PK_MAX] = {
		"drop", "flow", "frag_later", "icmp_err", "arp", "nd", "host",
	};

	return kind < FG_PK_MAX ? names[kind] : "?";
}
