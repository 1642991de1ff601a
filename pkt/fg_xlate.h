/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * In-place packet rewrites on a byte buffer: DSR encapsulation (IP-in-IP,
 * GUE), full NAT both directions with incremental checksums, Ethernet and
 * TTL rewrites, ARP replies and neighbour advertisements.
 *
 * ## Buffers
 * A rewrite gets a struct fg_frame: the frame's first byte, its length, and
 * how many bytes may be used before it (headroom) and after it (tailroom).
 * With an mbuf: data = rte_pktmbuf_mtod(m), len = data_len, headroom =
 * rte_pktmbuf_headroom(m), tailroom = rte_pktmbuf_tailroom(m).  A rewrite
 * that grows the frame at the front moves fg_frame::data back and reduces
 * headroom; afterwards the caller applies the change to its mbuf:
 * `rte_pktmbuf_prepend(m, old_headroom - f.headroom)` (or adj for a
 * negative change) and sets data_len/pkt_len to the returned length.
 *
 * Every function returns the new frame length (> 0) or a negative errno:
 * -ENOSPC (not enough headroom/tailroom), -EMSGSIZE (the encapsulated
 * packet would exceed fg_encap::mtu: count `encap_too_big`), -EINVAL
 * (the packet kind/family does not fit the rewrite).  On error the frame
 * is unchanged.
 *
 * Thread safety: all functions are pure apart from writing the frame; any
 * thread, no shared state.
 */
#ifndef FLOWGATE_FG_XLATE_H
#define FLOWGATE_FG_XLATE_H

#include <stdint.h>

#include "fg_pkt.h"
#include "fg_rss.h"
#ifndef __bpf__   /* xdp/fg_decap.bpf.c reads the GUE flag only */
#include <errno.h>
#include <string.h>

#include "fg_csum.h"
#endif

#ifdef __cplusplus
extern "C" {
#endif

/** A frame inside a larger buffer. */
struct fg_frame {
	uint8_t *data;      /**< first byte of the Ethernet header. */
	uint32_t len;       /**< frame length. */
	uint32_t headroom;  /**< writable bytes before data. */
	uint32_t tailroom;  /**< writable bytes after data + len. */
};

/** fg_encap::flags */
#define FG_ENCAP_GUE_HDR 0x1 /**< GUE: 4-byte GUE v0 header (else v1 direct IP) */
/** GUE: a GUE v0 header carrying fg_encap::prev, the backend that the
 *  service's previous Maglev table chose for this flow (second chance,
 *  see FG_GUE_FLAG_PREV); implies FG_ENCAP_GUE_HDR. */
#define FG_ENCAP_GUE_PREV 0x2

/**
 * Second chance (GLB's idea, one hop): GUE v0 header flags bit 0 (Linux's
 * GUE_FLAG_PRIV position) set, hlen = 1 (IPv4) or 4 (IPv6) words holding
 * the previous owner's address in the outer family.  A backend that holds
 * no socket for a non-SYN TCP packet forwards it once to that address with
 * the flag cleared (xdp/fg_decap.bpf.c, fg-decap --second-chance); any other
 * receiver must strip hlen words.  Written once here for both sides.
 */
#define FG_GUE_FLAG_PREV 0x0001

/**
 * Everything an encapsulation needs about its egress, built once per
 * backend at configuration time.  Addresses in network byte order.
 */
struct fg_encap {
	uint8_t family;        /**< outer family: CT_V4 or CT_V6. */
	uint8_t flags;         /**< FG_ENCAP_* */
	uint16_t vlan;         /**< egress VLAN id (host order), 0 = untagged. */
	uint16_t gue_port;     /**< GUE destination port, network order. */
	uint16_t mtu;          /**< egress L3 MTU (e.g. 1500); 0 = no check. */
	uint8_t src_mac[6];    /**< balancer port MAC. */
	uint8_t dst_mac[6];    /**< next hop MAC. */
	union {
		uint32_t v4;
		uint8_t v6[16];
	} src;                 /**< outer source: the balancer's address. */
	union {
		uint32_t v4;
		uint8_t v6[16];
	} dst;                 /**< outer destination: the backend. */
	union {
		uint32_t v4;
		uint8_t v6[16];
	} prev;                /**< FG_ENCAP_GUE_PREV: previous owner. */
};

/**
 * DSR IP-in-IP: replaces the L2 header with Ethernet (encap MACs, optional
 * VLAN) + an outer IPv4 (protocol 4 for IPv4 inner, 41 for IPv6 inner) or
 * IPv6 (next header 4 / 41) header in front of the unchanged inner packet
 * (p->l3_len bytes from p->l3_off; Ethernet padding is dropped).
 * Outer IPv4: TTL 64, DF copied from the inner IPv4 (set for IPv6 inner),
 * id 0, correct header checksum.  Outer IPv6: hop limit 64, flow label 0,
 * traffic class copied.  Works for any parsed IP packet (FLOW, FRAG_LATER,
 * ICMP_ERR: an ICMP error is forwarded as-is to the flow's backend).
 * @return new length; -EINVAL (ARP/ND/DROP kinds), -EMSGSIZE, -ENOSPC.
 */
int fg_xlate_ipip(struct fg_frame *f, const struct fg_pkt *p,
		  const struct fg_encap *e);

/**
 * DSR GUE: like fg_xlate_ipip() plus a UDP header between the outer IP
 * header and the inner packet: source port fg_rss_gue_sport(@p flow_hash),
 * destination port e->gue_port.  By default GUE version 1 "direct IP"
 * (the inner IP header follows UDP directly; Linux's `ip fou add port N
 * gue` decapsulates it since 4.11, as Katran relies on); with
 * FG_ENCAP_GUE_HDR a 4-byte GUE v0 header (proto/ctype = 4 or 41, no
 * flags) is inserted, which `gue` mode accepts on every kernel version.
 * With FG_ENCAP_GUE_PREV the v0 header carries e->prev (FG_GUE_FLAG_PREV):
 * 4 (IPv4) or 16 (IPv6) more bytes.
 * The outer IPv4 UDP checksum is 0 (allowed); outer IPv6 UDP checksum is
 * computed (RFC 8200 requires it).
 * @return new length, or -EINVAL, -EMSGSIZE, -ENOSPC.
 */
int fg_xlate_gue(struct fg_frame *f, const struct fg_pkt *p,
		 const struct fg_encap *e, uint32_t flow_hash);

/** Outer header bytes (Ethernet + VLAN + IP [+ UDP [+ GUE]]) that
 *  fg_xlate_ipip (gue = 0) / fg_xlate_gue (gue = 1) put in front. */
uint32_t fg_xlate_encap_hdr_len(const struct fg_encap *e, int gue);

/** Largest outer header: Ethernet + VLAN + IPv6 + UDP + GUE v0 + an IPv6
 *  second-chance address (86 bytes), rounded up. */
#define FG_ENCAP_HDR_MAX 96

/**
 * An encapsulation's outer headers, prebuilt.  Every packet of a flow gets
 * the same Ethernet, outer addresses, TTL and UDP port; only the lengths,
 * TOS, DF, the inner protocol, the GUE source port and the checksums
 * depend on the packet.  fg_xlate_encap_build() writes the constant bytes
 * once (per backend and next hop: the dataplane keeps one per worker in
 * its forwarding cache); fg_xlate_encap_apply() copies them in front of a
 * packet and fills in the rest.  fg_xlate_ipip() and fg_xlate_gue() are
 * build + apply, so the two ways give the same bytes by construction.
 */
struct fg_encap_tmpl {
	/* 16 bytes of what apply needs besides the bytes, first: a holder
	 * that puts them at the end of a cache line starts hdr on the next */
	uint32_t sum;       /**< IPv4 outer: sum of the header's constant words. */
	uint16_t mtu;       /**< fg_encap::mtu */
	uint8_t len;        /**< bytes of hdr in use (fg_xlate_encap_hdr_len). */
	uint8_t l2_len;     /**< 14, or 18 with a VLAN tag. */
	uint8_t family;     /**< outer family: CT_V4 or CT_V6. */
	uint8_t gue;        /**< 1: UDP (+ gue_hdr bytes) after the outer IP. */
	uint8_t gue_hdr;    /**< GUE header bytes after UDP: 0, 4, 8 or 20. */
	uint8_t pad1;
	uint16_t inner_max; /**< the longest inner packet (l3_len) whose outer
			     *  packet fits the MTU (0: none) and its outer
			     *  length field */
	uint8_t pad2[2];
	uint8_t hdr[FG_ENCAP_HDR_MAX]; /**< Ethernet .. GUE, variable fields 0. */
};

/** Builds @p t for @p e (gue = 0: IP-in-IP, 1: GUE).  @return 0, or
 *  -EINVAL for a NULL argument or an outer family that is neither. */
int fg_xlate_encap_build(struct fg_encap_tmpl *t, const struct fg_encap *e,
			 int gue);

/** fg_xlate_ipip() / fg_xlate_gue() with a prebuilt @p t: same result,
 *  same errors (@p flow_hash is ignored without GUE). */
int fg_xlate_encap_apply(struct fg_frame *f, const struct fg_pkt *p,
			 const struct fg_encap_tmpl *t, uint32_t flow_hash);

/**
 * fg_xlate_encap_apply() for a template with an IPv4 outer header (IP-in-IP,
 * or GUE, whose IPv4 UDP checksum is 0), inline: the dataplane's per-packet
 * case, in its burst loop without a call.  Same bytes, same errors; it
 * trusts what fg_xlate_encap_apply() checks first: @p f, @p p and @p t
 * valid, @p p an IP kind (FLOW, FRAG_LATER, ICMP_ERR) parsed from @p f
 * (its IP packet within f->len, as fg_pkt_parse() guarantees), t->family
 * CT_V4 (fg_xlate_encap_apply() itself comes here for those).
 */
#ifndef __bpf__
/* Bytes of the commonest outer header: Ethernet without a VLAN tag and an
 * IPv4 header, IP-in-IP. */
#define FG_XLATE_IPIP4_LEN 34

/* fg_xlate_encap4_apply()'s body, with the template's lengths, GUE flag and
 * the inner family as arguments: the caller passes constants for the
 * commonest case, so that every offset is one (scripts/cg-ipp.sh: about
 * 13 fewer instructions a dsr-ipip packet than with the template's
 * fields). */
static inline __attribute__((always_inline)) int
fg_xlate__encap4(struct fg_frame *f, const struct fg_pkt *p,
		 const struct fg_encap_tmpl *t, uint32_t flow_hash, uint32_t len,
		 uint32_t l2_len, uint32_t gue, uint32_t v6)
{
	uint32_t inner_len = p->l3_len;
	uint32_t l3_end = (uint32_t)p->l3_off + inner_len;
	uint32_t outer_l3 = len - l2_len + inner_len;
	uint32_t delta = len - p->l3_off; /* len >= 34 > l2 */
	const uint8_t *inner = f->data + p->l3_off;
	uint8_t proto = v6 ? 41 : 4;    /* IPv6-in-IP (41), IP-in-IP (4) */
	uint8_t *d, *ip;
	uint16_t be;
	uint32_t sum, df, tos;

	/* the MTU and the length field in one compare (built once) */
	if (__builtin_expect(inner_len > t->inner_max, 0))
		return -EMSGSIZE;
	if (__builtin_expect(delta > f->headroom, 0))
		return -ENOSPC;
	tos = v6 ? (uint8_t)((inner[0] << 4) | (inner[1] >> 4)) : inner[1];
	_Static_assert(FG_PF_DF << 9 == 0x4000, "FG_PF_DF shifts to IPv4's DF");
	df = v6 ? 0x4000u : (uint32_t)(p->flags & FG_PF_DF) << 9;
	/* the sum from registers: summing bytes just stored would stall on
	 * store forwarding */
	sum = t->sum + tos + outer_l3 + df;
	/* the template's bytes: a length the caller fixed (the commonest
	 * header) in one copy, any other in two overlapping 32-byte copies
	 * (an IPv4 outer header is 34..54 bytes).  One 34-byte copy is two
	 * 16-byte stores and a 2-byte one, the two copies four 16-byte
	 * stores, two of them across the line the header starts in
	 * (bench/RESULTS.md, session 16: with that session's other store
	 * changes, 1-2% at 1K flows in balanced A/B rounds; session 17: three
	 * stores, none across the line, measured the same as this copy, so
	 * the shape of these stores matters little) */
	d = f->data - delta;
	if (__builtin_constant_p(len)) {
		memcpy(d, t->hdr, len);
	} else {
		memcpy(d, t->hdr, 32);
		memcpy(d + len - 32, t->hdr + len - 32, 32);
	}
	ip = d + l2_len;
	ip[1] = (uint8_t)tos;
	be = (uint16_t)__builtin_bswap16((uint16_t)outer_l3);
	memcpy(ip + 2, &be, 2);
	ip[6] = (uint8_t)(df >> 8);
	if (!gue) {
		ip[9] = proto;
		sum += proto;
	} else {
		uint8_t *u = ip + 20;

		be = __builtin_bswap16(fg_rss_gue_sport(flow_hash));
		memcpy(u, &be, 2);
		be = __builtin_bswap16((uint16_t)(8 + t->gue_hdr + inner_len));
		memcpy(u + 4, &be, 2);
		if (t->gue_hdr)
			u[9] = proto;
	}
	be = __builtin_bswap16((uint16_t)~fg_csum_fold(sum));
	memcpy(ip + 10, &be, 2);
	f->tailroom += f->len - l3_end;     /* Ethernet padding dropped */
	f->data = d;
	f->headroom -= delta;
	f->len = len + inner_len;
	return (int)f->len;
}

static inline __attribute__((always_inline)) int
fg_xlate_encap4_apply(struct fg_frame *f, const struct fg_pkt *p,
		      const struct fg_encap_tmpl *t, uint32_t flow_hash)
{
	/* 34 bytes: untagged IP-in-IP (GUE adds 8 or more, a tag 4) */
	if (__builtin_expect(t->len == FG_XLATE_IPIP4_LEN && p->family == CT_V4, 1))
		return fg_xlate__encap4(f, p, t, 0, FG_XLATE_IPIP4_LEN, FG_ETH_HLEN, 0, 0);
	return fg_xlate__encap4(f, p, t, flow_hash, t->len, t->l2_len, t->gue,
				p->family == CT_V6);
}
#endif

/**
 * Full NAT: rewrites source/destination addresses and ports of a FG_PK_FLOW
 * packet to the tuple in @p to (a struct ct_key4 for IPv4 packets, ct_key6
 * for IPv6; its proto must equal the packet's), updating the IPv4 header
 * checksum and the TCP/UDP checksum (pseudo-header + ports) incrementally
 * (RFC 1624).  Used both ways: request client:cp->VIP:vp becomes
 * local:np->backend:bp, reply backend:bp->local:np becomes VIP:vp->client:cp.
 * IPv4 UDP with checksum 0 stays 0.  ICMP/ICMPv6 echo: the identifier is
 * rewritten to to->sport (request) or to->dport (reply), checksum updated.
 * Does not touch L2 or TTL (see fg_xlate_eth, fg_xlate_ttl_dec).
 * Fragments: a first fragment (FG_PF_FRAG) is rewritten like a whole
 * packet (the incremental update only involves the pseudo-header and the
 * ports, both in the first fragment); a FG_PK_FRAG_LATER packet gets its
 * addresses rewritten only (its L4 checksum lives in the first fragment).
 * @return frame length (unchanged), or -EINVAL (kind not FLOW/FRAG_LATER,
 *   family or proto mismatch).
 */
int fg_xlate_nat(struct fg_frame *f, const struct fg_pkt *p, const void *to);

#ifndef __bpf__
/**
 * Decrements the TTL of the IPv4 header at @p ip and adds its change of
 * the header checksum to @p diff (for fg_csum_apply64()).  Old and new
 * word from registers: reading back the byte just stored would stall on
 * store forwarding.  @return 0, or -ETIME (nothing written) for a TTL of
 * 1 or less.  fg_xlate_ttl_dec() and fg_xlate_nat4_apply() share it.
 */
static inline __attribute__((always_inline)) int
fg_xlate_ttl4_step(uint8_t *ip, uint64_t *diff)
{
	uint8_t tp[2];     /* TTL and protocol: the header's word 4 */
	uint16_t ow, nw;

	memcpy(tp, ip + 8, 2);
	if (__builtin_expect(tp[0] <= 1, 0))
		return -ETIME;
	memcpy(&ow, tp, 2);
	tp[0]--;
	memcpy(&nw, tp, 2);
	ip[8] = tp[0];
	*diff += (uint16_t)~ow + (uint32_t)nw;
	return 0;
}

/** The packets fg_xlate_nat4_apply() rewrites: IPv4 TCP or UDP, whole
 *  (FG_PK_FLOW). */
static inline int fg_xlate_nat4_fits(const struct fg_pkt *p)
{
	return p->family == CT_V4 && p->kind == FG_PK_FLOW &&
	       (p->proto == FG_IPPROTO_TCP || p->proto == FG_IPPROTO_UDP);
}

/**
 * fg_xlate_nat() for a packet that fg_xlate_nat4_fits(), inline: the
 * dataplane's per-packet case, in its burst loop without a call.  Same
 * bytes; it trusts what fg_xlate_nat() checks first: @p f, @p p and @p to
 * valid, the IP packet inside the frame, to->proto the packet's
 * (fg_xlate_nat() itself comes here for those).  With @p ttl_dec (a
 * constant) it is also fg_xlate_ttl_dec(), in the same update of the
 * header checksum: -ETIME, nothing written, for a TTL of 1 or less.
 */
static inline __attribute__((always_inline)) int
fg_xlate_nat4_apply(struct fg_frame *f, const struct fg_pkt *p,
		    const struct ct_key4 *to, int ttl_dec)
{
	uint8_t *ip = f->data + p->l3_off, *l4 = f->data + p->l4_off;
	uint8_t *cp = l4 + (p->proto == FG_IPPROTO_TCP ? 16 : 6); /* checksum */
	uint32_t os, od, op, np;
	uint64_t da, dh;
	uint16_t c;

	_Static_assert(offsetof(struct ct_key4, dport) ==
		       offsetof(struct ct_key4, sport) + 2, "ports: one word");
	/* the addresses' change, once for both checksums that cover them */
	memcpy(&os, ip + 12, 4);
	memcpy(&od, ip + 16, 4);
	da = (uint64_t)(uint32_t)~os + (uint32_t)~od + to->saddr + to->daddr;
	dh = da;
	if (ttl_dec && fg_xlate_ttl4_step(ip, &dh) < 0)
		return -ETIME;
	memcpy(&c, ip + 10, 2);
	c = fg_csum_apply64(c, dh);
	memcpy(ip + 10, &c, 2);
	memcpy(ip + 12, &to->saddr, 4);
	memcpy(ip + 16, &to->daddr, 4);
	/* the ports, one word in the header and in @p to */
	memcpy(&op, l4, 4);
	memcpy(&np, (const uint8_t *)to + offsetof(struct ct_key4, sport), 4);
	memcpy(l4, &np, 4);
	memcpy(&c, cp, 2);
	if (p->proto == FG_IPPROTO_UDP && c == 0)
		return (int)f->len;     /* IPv4 UDP without checksum */
	c = fg_csum_apply64(c, da + (uint32_t)~op + np);
	if (p->proto == FG_IPPROTO_UDP && c == 0)
		c = 0xFFFF;
	memcpy(cp, &c, 2);
	return (int)f->len;
}
#endif

/**
 * Full NAT of an ICMP error (FG_PK_ICMP_ERR) so path-MTU discovery works
 * through a NAT service: rewrites the outer source/destination addresses
 * to @p outer (ports and proto of @p outer are ignored) and the embedded
 * packet's addresses and ports (ICMP echo: identifier) to @p inner, given
 * in the embedded packet's own direction (the reverse of a tracked key).
 * Example: frag-needed from a router to 10.0.0.1 quoting
 * 10.0.0.1:P -> backend:bp becomes, for the client, VIP -> client quoting
 * client:cp -> VIP:vp.  Fixes the embedded IPv4 header checksum and the
 * embedded TCP/UDP/ICMP checksum when the quote holds it (incremental),
 * the outer IPv4 header checksum (incremental) and the ICMP/ICMPv6
 * checksum (recomputed over the message: a slow path).  Does not touch L2
 * or TTL.  @p outer and @p inner are struct ct_key4 (IPv4) / ct_key6.
 * @return frame length, or -EINVAL (not an ICMP error of this frame /
 *   embedded protocol not TCP, UDP or ICMP echo).
 */
int fg_xlate_nat_icmp_err(struct fg_frame *f, const struct fg_pkt *p,
			  const void *outer, const void *inner);

/** Largest IPv4 ICMP error (RFC 1812 4.3.2.3: quote as much as fits in 576). */
#define FG_ICMP4_ERR_MAX 576
/** Largest ICMPv6 error (RFC 4443 2.4(c): as much as fits in the minimum MTU). */
#define FG_ICMP6_ERR_MAX 1280

/**
 * Turns a packet too big for its path, in place, into the ICMP error that
 * tells its sender the MTU, as Katran does for DSR: IPv4 "destination
 * unreachable / fragmentation needed" (type 3 code 4, next-hop MTU @p mtu
 * in bytes 6-7) or ICMPv6 "packet too big" (type 2 code 0, MTU @p mtu, at
 * least 1280: a smaller value is raised to 1280 as RFC 8201 requires).
 * The error goes from the packet's destination (the VIP, or the local
 * address of a NAT reply) to its source and quotes the start of the
 * original IP packet: IPv4 up to FG_ICMP4_ERR_MAX bytes in all (at least
 * the IP header + 8 bytes), IPv6 up to FG_ICMP6_ERR_MAX.  Outer IPv4: TTL
 * 64, id 0, no DF, header checksum; IPv6: hop limit 64.  ICMP checksum
 * over the message (ICMPv6: with the pseudo-header).  Ethernet: dst = the
 * packet's source MAC, src = @p mac, the VLAN tag kept (the error leaves
 * where the packet came in).  The new IP + ICMP headers (28 / 48 bytes)
 * are written into the headroom in front of the original IP header, which
 * stays where it is; the tail is cut.
 * Only for FG_PK_FLOW packets: never an error about an ICMP error or a
 * non-first fragment (RFC 1122 3.2.2); the caller checks DF for IPv4 and
 * the rate limit.
 * @return new length, or -EINVAL (kind, truncated frame), -ENOSPC
 *   (headroom < 28 / 48).
 */
int fg_xlate_icmp_too_big(struct fg_frame *f, const struct fg_pkt *p,
			  uint32_t mtu, const uint8_t mac[6]);

/**
 * Turns a packet for a service that cannot take it (no usable backend) into
 * ICMP "port unreachable" (IPv4 type 3 code 3, ICMPv6 type 1 code 4) in
 * place, like fg_xlate_icmp_too_big(): from the VIP to the sender, quoting
 * the original, Ethernet back to the sender, VLAN kept.  For UDP (TCP gets
 * fg_xlate_tcp_rst()).
 * @return new length, or -EINVAL, -ENOSPC.
 */
int fg_xlate_icmp_unreach(struct fg_frame *f, const struct fg_pkt *p,
			  const uint8_t mac[6]);

/**
 * Turns a TCP segment (FG_PK_FLOW, not itself a RST) into the RST that
 * refuses it, in place (RFC 793 "Reset Generation"): from the VIP:port to
 * the client:port; a segment with ACK gets seq = its ack number and flag
 * RST; otherwise seq 0, ack = its seq + length (SYN and FIN count 1) and
 * RST|ACK.  IPv4: TTL 64, id 0, no options; IPv6: hop limit 64, no
 * extension headers; window 0, checksums computed; padded to a 60-byte
 * frame.  Ethernet back to the sender, VLAN tag kept.
 * @return new length, or -EINVAL (not TCP, a RST, truncated), -ENOSPC.
 */
int fg_xlate_tcp_rst(struct fg_frame *f, const struct fg_pkt *p,
		     const uint8_t mac[6]);

/** Sets the Ethernet source and destination MAC (VLAN tag kept). */
void fg_xlate_eth(uint8_t *frame, const uint8_t src[6], const uint8_t dst[6]);

/**
 * Decrements the IPv4 TTL (incremental header checksum) or IPv6 hop limit.
 * @return 0, -ETIME when TTL/hop limit is <= 1 (must not be forwarded),
 *   -EINVAL for non-IP kinds.
 */
int fg_xlate_ttl_dec(uint8_t *frame, const struct fg_pkt *p);

/**
 * Turns an ARP request (FG_PK_ARP, not FG_PF_ARP_REPLY) into the reply in
 * place: Ethernet dst = requester, src = @p mac; opcode 2; sender = (@p
 * mac, requested IP); target = requester.  The caller checks that the
 * requested IP (p->key.k4.daddr) is one of ours.
 * @return frame length, or -EINVAL.
 */
int fg_xlate_arp_reply(struct fg_frame *f, const struct fg_pkt *p,
		       const uint8_t mac[6]);

/**
 * Turns an IPv6 neighbour solicitation (FG_PK_ND without FG_PF_ND_ADVERT)
 * into the neighbour advertisement in place: IPv6 src = the target, dst =
 * the solicitor (all-nodes ff02::1 when the solicitor was ::, DAD), hop
 * limit 255, flags S (unless DAD) + O, option target link-layer address =
 * @p mac; Ethernet dst = the solicitor's MAC (33:33:00:00:00:01 for DAD),
 * src = @p mac.  The result is 86 bytes (+4 with a VLAN tag); needs
 * tailroom when the NS was shorter.  The caller checks the target
 * (p->key.k6.daddr) is ours.
 * @return new length, or -EINVAL, -ENOSPC.
 */
int fg_xlate_nd_advert(struct fg_frame *f, const struct fg_pkt *p,
		       const uint8_t mac[6]);

/** Length of the frame fg_xlate_arp_request() writes (minimum Ethernet). */
#define FG_XLATE_ARP_REQUEST_LEN 60
/** Length of the frame fg_xlate_nd_solicit() writes (14 + 40 + 32). */
#define FG_XLATE_ND_SOLICIT_LEN 86

/**
 * Writes a broadcast ARP request for @p tip into @p buf (untagged, padded
 * to FG_XLATE_ARP_REQUEST_LEN bytes): sender (@p mac, @p sip, or 0.0.0.0
 * when @p sip is NULL, an ARP probe), target MAC zero.  The twin of
 * fg_xlate_arp_reply(): the frame it writes is the request that function
 * answers.  Addresses in network order.
 * @return FG_XLATE_ARP_REQUEST_LEN, or -EINVAL (NULL argument), -ENOSPC
 *   (@p room too small).
 */
int fg_xlate_arp_request(uint8_t *buf, uint32_t room, const uint8_t mac[6],
			 const uint8_t *sip, const uint8_t tip[4]);

/**
 * Writes an IPv6 neighbour solicitation for @p target into @p buf
 * (untagged, FG_XLATE_ND_SOLICIT_LEN bytes): from (@p mac, @p sip) to the
 * target's solicited-node multicast group ff02::1:ffXX:XXXX and its MAC
 * 33:33:ff:XX:XX:XX, hop limit 255, source link-layer address option =
 * @p mac, ICMPv6 checksum set.  The twin of fg_xlate_nd_advert().
 * @return FG_XLATE_ND_SOLICIT_LEN, or -EINVAL (NULL argument), -ENOSPC.
 */
int fg_xlate_nd_solicit(uint8_t *buf, uint32_t room, const uint8_t mac[6],
			const uint8_t sip[16], const uint8_t target[16]);

/**
 * Recomputes every checksum of a parsed IP packet from scratch (IPv4
 * header, TCP/UDP/ICMP/ICMPv6).  For tests and for the fixtures builder;
 * never on the fast path.  @return 0 or -EINVAL.
 */
int fg_xlate_csum_full(uint8_t *frame, const struct fg_pkt *p);

/**
 * Verifies every checksum of a parsed IP packet (IPv4 header, L4).
 * IPv4 UDP checksum 0 counts as valid.  @return 0 if all are right,
 * -EBADMSG otherwise, -EINVAL for non-IP kinds.
 */
int fg_xlate_csum_verify(const uint8_t *frame, const struct fg_pkt *p);

#ifdef __cplusplus
}
#endif
#endif /* FLOWGATE_FG_XLATE_H */
