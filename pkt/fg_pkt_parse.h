/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The packet parser, written once for the CPU and the GPU.
 *
 * pkt/fg_pkt.c compiles it with cc over a plain pointer (fg_pkt_parse);
 * gpu/fg_gpu_kernels.cu compiles the same text with nvcc over the kernel's
 * frame view (a shared-memory window, global memory past it).  The GPU's
 * results are compared byte for byte with the CPU's (tests/gpu: fixtures
 * and >= 10M random frames), which now checks the two builds of one
 * source rather than a hand-kept copy.
 *
 * Every read is preceded by a bounds check against an `end` offset that
 * never exceeds `len`: for L2/L3 headers `end` is the frame length, from L4
 * on it is the end of the IP packet (l3_off + l3_len), so Ethernet padding
 * is never parsed as payload.
 *
 * ## The byte reader
 * The includer may define, before including this file (the defaults are
 * the CPU's: a `const uint8_t *`):
 *   FG_PKT_FN         qualifiers of a parser function taking a reader
 *   FG_PKT_FN_INLINE  the same, for the small hot ones
 *   FG_PKT_HELPER     qualifiers of a helper without a reader
 *   FG_PKT_RD         the reader parameter's type
 *   FG_PKT_U8(r, o)   byte at offset o
 *   FG_PKT_LD16(r, o) 2 bytes at o as a uint16_t in memory order
 *   FG_PKT_LD32(r, o) 4 bytes at o as a uint32_t in memory order
 *   FG_PKT_CP(d, r, o, n)  copy n bytes at o to d
 *   FG_PKT_CSUM_BAD(r, o, n)  non-zero when the Internet checksum of n
 *                     bytes at o does not verify (FG_PARSE_CHECK_CSUM)
 *   FG_PKT_LIKELY / FG_PKT_UNLIKELY  branch hints
 * Constants and refusal reasons: fg_pkt_defs.h (a BPF build may share it).
 *
 * Not a public header: include fg_pkt.h for the parser's interface.
 */
#ifndef FLOWGATE_FG_PKT_PARSE_H
#define FLOWGATE_FG_PKT_PARSE_H

#include <stdint.h>

#include "fg_pkt.h"

#ifndef FG_PKT_RD
#include <string.h>

#include "fg_csum.h"

#define FG_PKT_FN static
#define FG_PKT_FN_INLINE static inline
#define FG_PKT_HELPER static inline
#define FG_PKT_RD const uint8_t *
#define FG_PKT_U8(r, o) ((r)[o])
#define FG_PKT_LD16(r, o) fg_pkt__ld16((r) + (o))
#define FG_PKT_LD32(r, o) fg_pkt__ld32((r) + (o))
#define FG_PKT_CP(d, r, o, n) memcpy((d), (r) + (o), (n))
#define FG_PKT_CSUM_BAD(r, o, n) (fg_csum((r) + (o), (n)) != 0)
#define FG_PKT_LIKELY(x) __builtin_expect(!!(x), 1)
#define FG_PKT_UNLIKELY(x) __builtin_expect(!!(x), 0)

static inline uint16_t fg_pkt__ld16(const uint8_t *p)
{
	return FG_LD16(p);
}

static inline uint32_t fg_pkt__ld32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
}
#endif /* CPU reader */

/* Big-endian 16-bit field at o. */
#define FG_PKT_BE16(r, o) \
	((uint16_t)((uint16_t)FG_PKT_U8(r, o) << 8 | FG_PKT_U8(r, (o) + 1)))

FG_PKT_HELPER int fg_pkt__drop(struct fg_pkt *out, enum fg_drop why)
{
	out->kind = FG_PK_DROP;
	out->drop = (uint8_t)why;
	return FG_PK_DROP;
}

/* A later fragment: FG_PK_FRAG_LATER, or dropped (FG_PKT_LATER_DROP). */
FG_PKT_HELPER int fg_pkt__later(struct fg_pkt *out, uint8_t hop, int unspec)
{
	int why = FG_PKT_LATER_DROP(hop, unspec);

	if (FG_PKT_UNLIKELY(why))
		return fg_pkt__drop(out, (enum fg_drop)why);
	return out->kind = FG_PK_FRAG_LATER;
}

/* 3-tuple key: addresses + proto, ports 0 (FRAG_LATER / HOST); @p ip is the
 * IP header's offset. */
FG_PKT_FN_INLINE void fg_pkt__key_addrs(struct fg_pkt *out, FG_PKT_RD r,
					uint32_t ip, int v6)
{
	if (v6) {
		FG_PKT_CP(out->key.k6.saddr, r, ip + FG_IP6_SADDR_OFF, 16);
		FG_PKT_CP(out->key.k6.daddr, r, ip + FG_IP6_DADDR_OFF, 16);
	} else {
		out->key.k4.saddr = FG_PKT_LD32(r, ip + FG_IP4_SADDR_OFF);
		out->key.k4.daddr = FG_PKT_LD32(r, ip + FG_IP4_DADDR_OFF);
	}
}

FG_PKT_HELPER void fg_pkt__key_ports(struct fg_pkt *out, int v6, uint16_t sport,
				     uint16_t dport, uint8_t proto)
{
	FG_PKT_KEY_PORTS(out, v6, sport, dport, proto);
}

/* A non-first fragment's key ports, and a first fragment's follow key's:
 * the identification of its datagram at @p id (IPv4: 16 bits in sport,
 * dport 0; IPv6: the fragment header's 32 bits across sport and dport),
 * as on the wire.  The kernel's reassembly tells datagrams apart the same
 * way (source, destination, protocol, ID: RFC 791, RFC 8200 4.5), so each
 * datagram follows its own first fragment. */
FG_PKT_FN_INLINE void fg_pkt__key_frag_id(struct fg_pkt *out, FG_PKT_RD r,
					  uint32_t id, int v6)
{
	if (v6) {
		out->key.k6.sport = FG_PKT_LD16(r, id);
		out->key.k6.dport = FG_PKT_LD16(r, id + 2);
	} else {
		out->key.k4.sport = FG_PKT_LD16(r, id);
	}
}

enum fg_pkt__v6walk {
	FG_PKT__V6W_OK = 0,
	FG_PKT__V6W_LATER,   /* non-first fragment: no L4 header here */
};

/*
 * Walks an IPv6 extension chain starting with next header *nh at *off,
 * bounded by end.  On success *off is the upper-layer header offset and
 * *nh its protocol; *frag the offset of the last fragment header walked
 * (left alone when there is none).  Returns FG_PKT__V6W_OK / _LATER, or
 * -(enum fg_drop).
 */
FG_PKT_FN int fg_pkt__v6_walk(FG_PKT_RD r, uint32_t *off, uint32_t end,
			      uint8_t *nh, uint8_t *flags, uint32_t *frag)
{
	uint32_t o = *off;
	uint8_t n = *nh;
	unsigned int i;

	for (i = 0;; i++) {
		switch (n) {
		case FG_IPPROTO_HOPOPTS:
		case FG_IPPROTO_ROUTING:
		case FG_IPPROTO_DSTOPTS: {
			uint32_t hlen;

			if (FG_PKT_UNLIKELY(i >= FG_PKT_V6_EXT_MAX))
				return -FG_DROP_ipv6_ext_chain_too_long;
			/* RFC 8200 4.1: hop-by-hop only right after the
			 * IPv6 header */
			if (FG_PKT_UNLIKELY(n == FG_IPPROTO_HOPOPTS && i != 0))
				return -FG_DROP_ipv6_hbh_not_first;
			if (FG_PKT_UNLIKELY(o + FG_IP6_EXT_MIN > end))
				return -FG_DROP_ipv6_ext_truncated;
			hlen = ((uint32_t)FG_PKT_U8(r, o + 1) + 1) * 8;
			if (FG_PKT_UNLIKELY(o + hlen > end))
				return -FG_DROP_ipv6_ext_truncated;
			/* Routing headers: type 0 is deprecated (RFC 5095)
			 * whatever its segments left; any other with
			 * segments left > 0 names a next segment, and
			 * flowgate is no segment endpoint, so forwarding
			 * it to a backend would bypass the route its
			 * sender asked for (RFC 8200 4.4 lets a node
			 * discard it; flowgate does).  Segments left 0:
			 * the header is ignored (RFC 8200 4.4). */
			if (n == FG_IPPROTO_ROUTING) {
				if (FG_PKT_UNLIKELY(FG_PKT_U8(r, o + FG_IP6_RH_TYPE_OFF) ==
						    FG_IP6_RH_TYPE0))
					return -FG_DROP_ipv6_rh0;
				if (FG_PKT_UNLIKELY(FG_PKT_U8(r, o + FG_IP6_RH_SEGLEFT_OFF)))
					return -FG_DROP_ipv6_rh_segments_left;
			}
			n = FG_PKT_U8(r, o);
			o += hlen;
			*flags |= FG_PF_IP_OPTS;
			break;
		}
		case FG_IPPROTO_FRAGMENT: {
			uint16_t fo;

			if (FG_PKT_UNLIKELY(i >= FG_PKT_V6_EXT_MAX))
				return -FG_DROP_ipv6_ext_chain_too_long;
			if (FG_PKT_UNLIKELY(o + FG_IP6_EXT_MIN > end))
				return -FG_DROP_ipv6_ext_truncated;
			fo = FG_PKT_BE16(r, o + 2);
			n = FG_PKT_U8(r, o);
			*frag = o;
			o += FG_IP6_EXT_MIN;
			*flags |= FG_PF_IP_OPTS;
			if (fo & FG_IP6_FRAG_OFFMASK) {
				*off = o;
				*nh = n;
				return FG_PKT__V6W_LATER;
			}
			if (fo & FG_IP6_FRAG_M)
				*flags |= FG_PF_FRAG;
			break;
		}
		case FG_IPPROTO_AH:
		case FG_IPPROTO_ESP:
			return -FG_DROP_ipsec_unsupported;
		case FG_IPPROTO_NONE:
		case FG_IPPROTO_MH:
		case FG_IPPROTO_HIP:
		case FG_IPPROTO_SHIM6:
		case FG_IPPROTO_EXP1:
		case FG_IPPROTO_EXP2:
			return -FG_DROP_ipv6_unsupported_ext;
		default:
			*off = o;
			*nh = n;
			return FG_PKT__V6W_OK;
		}
	}
}

/* Embedded packet of an ICMP error at offset @p in: fills the reversed
 * key. */
FG_PKT_FN int fg_pkt__icmp_err(FG_PKT_RD r, uint32_t in, uint32_t end,
			       struct fg_pkt *out, int v6)
{
	uint32_t l4;
	uint8_t proto;
	uint16_t sport, dport;

	if (!v6) {
		uint32_t ihl;

		if (FG_PKT_UNLIKELY(in + FG_IP4_MIN_HLEN > end ||
				    (FG_PKT_U8(r, in) >> 4) != 4))
			return fg_pkt__drop(out, FG_DROP_icmp_unrelated);
		ihl = (uint32_t)(FG_PKT_U8(r, in) & 15) * 4;
		if (FG_PKT_UNLIKELY(ihl < FG_IP4_MIN_HLEN || in + ihl > end))
			return fg_pkt__drop(out, FG_DROP_icmp_unrelated);
		if (FG_PKT_UNLIKELY(FG_PKT_BE16(r, in + FG_IP4_FRAG_OFF) &
				    FG_IP4_OFFMASK)) /* later fragment */
			return fg_pkt__drop(out, FG_DROP_icmp_unrelated);
		proto = FG_PKT_U8(r, in + FG_IP4_PROTO_OFF);
		l4 = in + ihl;
		/* reversed: embedded dst becomes our src */
		out->key.k4.saddr = FG_PKT_LD32(r, in + FG_IP4_DADDR_OFF);
		out->key.k4.daddr = FG_PKT_LD32(r, in + FG_IP4_SADDR_OFF);
	} else {
		uint8_t fl = 0;
		uint32_t frag = 0;
		int rc;

		if (FG_PKT_UNLIKELY(in + FG_IP6_HLEN > end ||
				    (FG_PKT_U8(r, in) >> 4) != 6))
			return fg_pkt__drop(out, FG_DROP_icmp_unrelated);
		l4 = in + FG_IP6_HLEN;
		proto = FG_PKT_U8(r, in + FG_IP6_NXT_OFF);
		rc = fg_pkt__v6_walk(r, &l4, end, &proto, &fl, &frag);
		if (FG_PKT_UNLIKELY(rc != FG_PKT__V6W_OK))
			return fg_pkt__drop(out, FG_DROP_icmp_unrelated);
		FG_PKT_CP(out->key.k6.saddr, r, in + FG_IP6_DADDR_OFF, 16);
		FG_PKT_CP(out->key.k6.daddr, r, in + FG_IP6_SADDR_OFF, 16);
	}
	/* RFC 792 / 4443 quote at least 8 bytes of the original L4 header. */
	if (FG_PKT_UNLIKELY(l4 + FG_ICMP_QUOTE_MIN > end))
		return fg_pkt__drop(out, FG_DROP_icmp_unrelated);
	switch (proto) {
	case FG_IPPROTO_TCP:
	case FG_IPPROTO_UDP:
		sport = FG_PKT_LD16(r, l4);
		dport = FG_PKT_LD16(r, l4 + 2);
		break;
	case FG_IPPROTO_ICMP:
	case FG_IPPROTO_ICMPV6: {
		uint8_t t = FG_PKT_U8(r, l4);

		if (proto != FG_ICMP_PROTO(v6))
			return fg_pkt__drop(out, FG_DROP_icmp_unrelated);
		/* echo request key {A,B,id,0}; echo reply {A,B,0,id} */
		if (FG_ICMP_ECHO_PORTS(t, v6, FG_PKT_LD16(r, l4 + FG_ICMP_ECHO_ID_OFF),
				       sport, dport) < 0)
			return fg_pkt__drop(out, FG_DROP_icmp_unrelated);
		break;
	}
	default:
		return fg_pkt__drop(out, FG_DROP_icmp_unrelated);
	}
	/* reversed ports */
	return FG_PKT_KEYED(out, v6, dport, sport, proto, FG_PK_ICMP_ERR);
}

/* ICMP / ICMPv6 of a whole packet or first fragment at @p l4 (@p avail
 * bytes to @p end): echo, errors, ND, else for the host. */
FG_PKT_FN_INLINE int fg_pkt__icmp(FG_PKT_RD r, uint32_t l4, uint32_t end,
				  uint32_t avail, struct fg_pkt *out, int v6,
				  uint8_t hop)
{
	uint8_t proto = out->proto;
	uint8_t t;

	if (FG_PKT_UNLIKELY(avail < FG_ICMP_HLEN))
		return fg_pkt__drop(out, FG_DROP_l4_truncated);
	t = FG_PKT_U8(r, l4);
	if (FG_ICMP_IS_ECHO(t, v6)) {
		fg_pkt__key_ports(out, v6, FG_PKT_LD16(r, l4 + FG_ICMP_ECHO_ID_OFF),
				  0, proto);
		out->kind = FG_PK_FLOW;
	} else if (FG_ICMP_IS_ECHO_REPLY(t, v6)) {
		fg_pkt__key_ports(out, v6, 0,
				  FG_PKT_LD16(r, l4 + FG_ICMP_ECHO_ID_OFF), proto);
		out->flags |= FG_PF_ECHO_REPLY;
		out->kind = FG_PK_FLOW;
	} else if (FG_ICMP_IS_ERROR(t, v6)) {
		if (FG_PKT_UNLIKELY(out->flags & FG_PF_FRAG))
			return fg_pkt__drop(out, FG_DROP_icmp_unrelated);
		if (fg_pkt__icmp_err(r, l4 + FG_ICMP_HLEN, end, out, v6) ==
		    FG_PK_DROP)
			return FG_PK_DROP;
	} else if (FG_ICMP_IS_ND(t, v6)) {
		if (FG_PKT_UNLIKELY(FG_ND_MALFORMED(hop, FG_PKT_U8(r, l4 + 1), avail)))
			return fg_pkt__drop(out, FG_DROP_nd_malformed);
		FG_PKT_CP(out->key.k6.daddr, r, l4 + FG_ND_TARGET_OFF, 16);
		return FG_PKT_ND(out, t, proto);
	} else {
		return FG_PKT_KEYED(out, v6, 0, 0, proto, FG_PK_HOST);
	}
	if (FG_PKT_UNLIKELY(hop <= 1))
		return fg_pkt__drop(out, FG_DROP_ttl_expired);
	return out->kind;
}

/* L4 of a whole packet or first fragment; end = end of the IP packet. */
FG_PKT_FN_INLINE int fg_pkt__l4(FG_PKT_RD r, uint32_t l4, uint32_t end,
				struct fg_pkt *out, int v6, uint8_t hop)
{
	uint32_t avail = end - l4;
	uint8_t proto = out->proto;

	if (FG_PKT_LIKELY(proto == FG_IPPROTO_TCP)) {
		uint32_t doff;

		if (FG_PKT_UNLIKELY(avail < FG_TCP_MIN_HLEN))
			return fg_pkt__drop(out, FG_DROP_l4_truncated);
		doff = (uint32_t)(FG_PKT_U8(r, l4 + 12) >> 4) * 4;
		if (FG_PKT_UNLIKELY(doff < FG_TCP_MIN_HLEN || doff > avail))
			return fg_pkt__drop(out, FG_DROP_tcp_bad_doff);
		out->tcp_flags = FG_PKT_U8(r, l4 + FG_TCP_FLAGS_OFF);
		fg_pkt__key_ports(out, v6, FG_PKT_LD16(r, l4), FG_PKT_LD16(r, l4 + 2),
				  proto);
		out->kind = FG_PK_FLOW;
	} else if (FG_PKT_LIKELY(proto == FG_IPPROTO_UDP)) {
		uint32_t ulen;

		if (FG_PKT_UNLIKELY(avail < FG_UDP_HLEN))
			return fg_pkt__drop(out, FG_DROP_l4_truncated);
		ulen = FG_PKT_BE16(r, l4 + FG_UDP_LEN_OFF);
		/* a first fragment holds only part of the datagram */
		if (FG_PKT_UNLIKELY(ulen < FG_UDP_HLEN ||
				    (ulen > avail && !(out->flags & FG_PF_FRAG))))
			return fg_pkt__drop(out, FG_DROP_udp_bad_len);
		fg_pkt__key_ports(out, v6, FG_PKT_LD16(r, l4), FG_PKT_LD16(r, l4 + 2),
				  proto);
		out->kind = FG_PK_FLOW;
	} else if (proto == (v6 ? FG_IPPROTO_ICMPV6 : FG_IPPROTO_ICMP)) {
		return fg_pkt__icmp(r, l4, end, avail, out, v6, hop);
	} else if (proto == FG_IPPROTO_AH || proto == FG_IPPROTO_ESP) {
		return fg_pkt__drop(out, FG_DROP_ipsec_unsupported);
	} else {
		return fg_pkt__drop(out, FG_DROP_l4_unsupported_proto);
	}
	if (FG_PKT_UNLIKELY(hop <= 1))
		return fg_pkt__drop(out, FG_DROP_ttl_expired);
	return out->kind;
}

/*
 * Martian sources: addresses no sender puts in a packet that reaches
 * another host (RFC 1122 3.2.1.3, RFC 6890, RFC 4291 2.5.2-2.7).  A
 * balancer that forwarded them would send its backends packets whose
 * replies go nowhere, or to the backend itself (127/8, ::1), or to a
 * whole group (multicast, broadcast).  Address bytes alone: the parser's
 * checks, the same in the CPU, GPU and XDP builds; "is it one of ours"
 * needs the service table and is the daemon's (src_own_addr).
 *
 * IPv4: 0/8 ("this network"), 127/8 (loopback), 224/4 (multicast), 240/4
 * (reserved, with 255.255.255.255): the first byte decides.  ARP is not
 * an IP packet and keeps 0.0.0.0 (RFC 5227 probes).
 */
FG_PKT_HELPER int fg_pkt__v4_martian(uint8_t b0)
{
	return b0 == 0 || b0 == 127 || b0 >= 224;
}

enum {
	FG_PKT__SRC_OK = 0,
	FG_PKT__SRC_MARTIAN,   /* ::1, ff00::/8, ::ffff:0:0/96 */
	FG_PKT__SRC_UNSPEC,    /* ::, legal for DAD / MLD / RS only */
};

/* IPv6 source of the header at @p ip: ::1 (loopback), ff00::/8
 * (multicast), ::ffff:0:0/96 (IPv4-mapped: never on the wire, RFC 4291
 * 2.5.5.2; a v4 martian in disguise or a way around IPv4 rules) are
 * martians; :: is the caller's to judge (FG_PKT__SRC_UNSPEC). */
FG_PKT_FN_INLINE int fg_pkt__v6_src(FG_PKT_RD r, uint32_t ip)
{
	uint32_t s = ip + FG_IP6_SADDR_OFF;
	uint16_t w5;

	if (FG_PKT_UNLIKELY(FG_PKT_U8(r, s) == 0xff))
		return FG_PKT__SRC_MARTIAN;
	if (FG_PKT_LIKELY((FG_PKT_LD32(r, s) | FG_PKT_LD32(r, s + 4) |
			   FG_PKT_LD16(r, s + 8)) != 0))
		return FG_PKT__SRC_OK;
	w5 = FG_PKT_BE16(r, s + 10);
	if (w5 == 0xffff)
		return FG_PKT__SRC_MARTIAN;
	if (w5 != 0 || FG_PKT_BE16(r, s + 12) != 0)
		return FG_PKT__SRC_OK;
	switch (FG_PKT_BE16(r, s + 14)) {
	case 0:
		return FG_PKT__SRC_UNSPEC;
	case 1:
		return FG_PKT__SRC_MARTIAN;
	default:
		return FG_PKT__SRC_OK;
	}
}

/* Source address == destination address (a land attack's packet). */
FG_PKT_FN_INLINE int fg_pkt__v6_land(FG_PKT_RD r, uint32_t ip)
{
	uint32_t s = ip + FG_IP6_SADDR_OFF, d = ip + FG_IP6_DADDR_OFF;

	return FG_PKT_LD32(r, s) == FG_PKT_LD32(r, d) &&
	       FG_PKT_LD32(r, s + 4) == FG_PKT_LD32(r, d + 4) &&
	       FG_PKT_LD32(r, s + 8) == FG_PKT_LD32(r, d + 8) &&
	       FG_PKT_LD32(r, s + 12) == FG_PKT_LD32(r, d + 12);
}

FG_PKT_FN_INLINE int fg_pkt__v4(FG_PKT_RD r, uint32_t len, uint32_t off,
				struct fg_pkt *out, unsigned int opts)
{
	uint32_t avail = len - off;
	uint32_t ihl, tot;
	uint16_t fo;

	out->family = CT_V4;
	if (FG_PKT_UNLIKELY(avail < FG_IP4_MIN_HLEN))
		return fg_pkt__drop(out, FG_DROP_ipv4_truncated);
	if (FG_PKT_UNLIKELY((FG_PKT_U8(r, off) >> 4) != 4))
		return fg_pkt__drop(out, FG_DROP_ipv4_bad_version);
	ihl = (uint32_t)(FG_PKT_U8(r, off) & 15) * 4;
	if (FG_PKT_UNLIKELY(ihl < FG_IP4_MIN_HLEN || ihl > avail))
		return fg_pkt__drop(out, FG_DROP_ipv4_bad_ihl);
	tot = FG_PKT_BE16(r, off + FG_IP4_TOTLEN_OFF);
	if (FG_PKT_UNLIKELY(tot < ihl || tot > avail))
		return fg_pkt__drop(out, FG_DROP_ipv4_bad_len);
	if (FG_PKT_UNLIKELY((opts & FG_PARSE_CHECK_CSUM) &&
			    FG_PKT_CSUM_BAD(r, off, ihl)))
		return fg_pkt__drop(out, FG_DROP_ipv4_bad_csum);
	out->l3_len = (uint16_t)tot;
	out->l4_off = (uint16_t)(off + ihl);
	out->proto = FG_PKT_U8(r, off + FG_IP4_PROTO_OFF);
	if (ihl > FG_IP4_MIN_HLEN)
		out->flags |= FG_PF_IP_OPTS;
	fg_pkt__key_addrs(out, r, off, 0);
	if (FG_PKT_UNLIKELY(fg_pkt__v4_martian(FG_PKT_U8(r, off + FG_IP4_SADDR_OFF))))
		return fg_pkt__drop(out, FG_DROP_martian_src);
	if (FG_PKT_UNLIKELY(out->key.k4.saddr == out->key.k4.daddr))
		return fg_pkt__drop(out, FG_DROP_land);
	fo = FG_PKT_BE16(r, off + FG_IP4_FRAG_OFF);
	if (fo & FG_IP4_DF)
		out->flags |= FG_PF_DF;
	if (FG_PKT_UNLIKELY(fo & (FG_IP4_MF | FG_IP4_OFFMASK))) {
		uint32_t foff = (uint32_t)(fo & FG_IP4_OFFMASK) * 8;

		if (foff) {
			if (FG_PKT_UNLIKELY(foff + tot - ihl > 65535))
				return fg_pkt__drop(out, FG_DROP_ipv4_bad_frag);
			out->key.k4.proto = FG_PKT_U8(r, off + FG_IP4_PROTO_OFF);
			fg_pkt__key_frag_id(out, r, off + FG_IP4_ID_OFF, 0);
			return fg_pkt__later(out, FG_PKT_U8(r, off + FG_IP4_TTL_OFF), 0);
		}
		out->flags |= FG_PF_FRAG; /* MF set, offset 0 */
	}
	return fg_pkt__l4(r, off + ihl, off + tot, out, 0,
			  FG_PKT_U8(r, off + FG_IP4_TTL_OFF));
}

FG_PKT_FN_INLINE int fg_pkt__v6(FG_PKT_RD r, uint32_t len, uint32_t off,
				struct fg_pkt *out)
{
	uint32_t avail = len - off;
	uint32_t end, l4, frag = 0;
	uint8_t nh, hop;
	int rc, src;

	out->family = CT_V6;
	if (FG_PKT_UNLIKELY(avail < FG_IP6_HLEN))
		return fg_pkt__drop(out, FG_DROP_ipv6_truncated);
	if (FG_PKT_UNLIKELY((FG_PKT_U8(r, off) >> 4) != 6))
		return fg_pkt__drop(out, FG_DROP_ipv6_bad_version);
	end = FG_IP6_HLEN + (uint32_t)FG_PKT_BE16(r, off + FG_IP6_PLEN_OFF);
	if (FG_PKT_UNLIKELY(end > avail))
		return fg_pkt__drop(out, FG_DROP_ipv6_bad_len);
	out->l3_len = (uint16_t)end;
	end += off;
	fg_pkt__key_addrs(out, r, off, 1);
	src = fg_pkt__v6_src(r, off);
	if (FG_PKT_UNLIKELY(src == FG_PKT__SRC_MARTIAN))
		return fg_pkt__drop(out, FG_DROP_martian_src);
	if (FG_PKT_UNLIKELY(fg_pkt__v6_land(r, off)))
		return fg_pkt__drop(out, FG_DROP_land);
	nh = FG_PKT_U8(r, off + FG_IP6_NXT_OFF);
	hop = FG_PKT_U8(r, off + FG_IP6_HOP_OFF);
	l4 = off + FG_IP6_HLEN;
	if (FG_PKT_UNLIKELY(nh != FG_IPPROTO_TCP && nh != FG_IPPROTO_UDP)) {
		rc = fg_pkt__v6_walk(r, &l4, end, &nh, &out->flags, &frag);
		if (FG_PKT_UNLIKELY(rc < 0)) {
			out->proto = nh;
			return fg_pkt__drop(out, (enum fg_drop)-rc);
		}
		if (rc == FG_PKT__V6W_LATER) {
			FG_PKT_L4_AT(out, l4, nh);
			out->key.k6.proto = nh;
			fg_pkt__key_frag_id(out, r, frag + FG_IP6_FRAG_ID_OFF, 1);
			return fg_pkt__later(out, hop, src == FG_PKT__SRC_UNSPEC);
		}
	}
	FG_PKT_L4_AT(out, l4, nh);
	rc = fg_pkt__l4(r, l4, end, out, 1, hop);
	if (FG_PKT_UNLIKELY(src == FG_PKT__SRC_UNSPEC) && FG_PKT_UNSPEC_REFUSED(rc))
		return fg_pkt__drop(out, FG_DROP_martian_src);
	return rc;
}

FG_PKT_FN_INLINE int fg_pkt__arp(FG_PKT_RD r, uint32_t len, uint32_t off,
				 struct fg_pkt *out)
{
	uint16_t op;

	out->family = CT_V4;
	out->l4_off = (uint16_t)off;
	if (FG_PKT_UNLIKELY(len - off < FG_ARP_LEN ||
			    FG_PKT_BE16(r, off) != 1 ||
			    FG_PKT_BE16(r, off + 2) != FG_ET_IPV4 ||
			    FG_PKT_U8(r, off + 4) != 6 || FG_PKT_U8(r, off + 5) != 4))
		return fg_pkt__drop(out, FG_DROP_arp_malformed);
	op = FG_PKT_BE16(r, off + FG_ARP_OP_OFF);
	if (op == FG_ARP_OP_REPLY)
		out->flags |= FG_PF_ARP_REPLY;
	else if (FG_PKT_UNLIKELY(op != FG_ARP_OP_REQUEST))
		return fg_pkt__drop(out, FG_DROP_arp_unsupported_op);
	out->l3_len = FG_ARP_LEN;
	out->key.k4.saddr = FG_PKT_LD32(r, off + FG_ARP_SPA_OFF);
	out->key.k4.daddr = FG_PKT_LD32(r, off + FG_ARP_TPA_OFF);
	out->kind = FG_PK_ARP;
	return FG_PK_ARP;
}

/*
 * The parser: one Ethernet frame of @p len bytes into @p out, which the
 * caller has zeroed.  Returns out->kind.
 */
FG_PKT_FN_INLINE int fg_pkt__parse(FG_PKT_RD r, uint32_t len, struct fg_pkt *out,
				   unsigned int opts)
{
	uint32_t off = FG_ETH_HLEN;
	uint16_t et;

	if (FG_PKT_UNLIKELY(len < FG_ETH_HLEN))
		return fg_pkt__drop(out, FG_DROP_l2_truncated);
	if (FG_PKT_UNLIKELY(len > 0xFFFFu))
		len = 0xFFFFu; /* offsets are 16-bit; IP cannot be longer */
	et = FG_PKT_BE16(r, FG_ETH_TYPE_OFF);
	/* Untagged IP first, with the L3 offset a constant: every header
	 * field is then read at a fixed address.  With one path for both
	 * offsets (14, or 18 behind a VLAN tag) the compiler keeps some
	 * twenty derived offsets live across the parse (callgrind: 26 more
	 * instructions per packet than the parser before it was shared with
	 * the GPU).  Same results: the general path below does the same for
	 * an untagged frame. */
	if (FG_PKT_LIKELY(et == FG_ET_IPV4)) {
		out->l2_len = FG_ETH_HLEN;
		out->l3_off = FG_ETH_HLEN;
		return fg_pkt__v4(r, len, FG_ETH_HLEN, out, opts);
	}
	if (FG_PKT_LIKELY(et == FG_ET_IPV6)) {
		out->l2_len = FG_ETH_HLEN;
		out->l3_off = FG_ETH_HLEN;
		return fg_pkt__v6(r, len, FG_ETH_HLEN, out);
	}
	if (FG_PKT_UNLIKELY(et == FG_ET_VLAN || et == FG_ET_QINQ)) {
		if (FG_PKT_UNLIKELY(len < FG_ETH_HLEN + FG_VLAN_HLEN))
			return fg_pkt__drop(out, FG_DROP_vlan_truncated);
		out->vlan = FG_PKT_BE16(r, FG_ETH_HLEN);
		out->flags |= FG_PF_VLAN;
		et = FG_PKT_BE16(r, FG_ETH_HLEN + 2);
		off += FG_VLAN_HLEN;
		if (FG_PKT_UNLIKELY(et == FG_ET_VLAN || et == FG_ET_QINQ))
			return fg_pkt__drop(out, FG_DROP_vlan_qinq);
	}
	out->l2_len = (uint16_t)off;
	out->l3_off = (uint16_t)off;
	if (FG_PKT_LIKELY(et == FG_ET_IPV4))
		return fg_pkt__v4(r, len, off, out, opts);
	if (FG_PKT_LIKELY(et == FG_ET_IPV6))
		return fg_pkt__v6(r, len, off, out);
	if (et == FG_ET_ARP)
		return fg_pkt__arp(r, len, off, out);
	return fg_pkt__drop(out, FG_DROP_unknown_ethertype);
}

#endif /* FLOWGATE_FG_PKT_PARSE_H */
