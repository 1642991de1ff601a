/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * The parsing rules' constants, written once for every parser build: the
 * CPU (pkt/fg_pkt.c), the CUDA kernel (gpu/fg_gpu_kernels.cu) and a BPF
 * program may all include this header.  It holds only macros and enums:
 * no function, no libc beyond <stdint.h> (through fg_counters.h, whose
 * enum fg_drop names every refusal reason).
 *
 * Offsets are from the start of the header they belong to; multi-byte
 * fields are big-endian on the wire.
 */
#ifndef FLOWGATE_FG_PKT_DEFS_H
#define FLOWGATE_FG_PKT_DEFS_H

#include "fg_counters.h"   /* enum fg_drop: the refusal reasons */

/* ---- byte readers: written once for C, CUDA and BPF (macros, so each
 *      compiles them as its own; GNU statement expressions) ---------------- */
/** The big-endian 16 bits at @p p, in host order. */
#define FG_RD16(p) ((uint16_t)((uint16_t)(p)[0] << 8 | (p)[1]))
/** The 16 bits at @p p as they are (network order), unaligned. */
#define FG_LD16(p) ({ uint16_t v_; __builtin_memcpy(&v_, (p), 2); v_; })

/* ---- Ethernet ---------------------------------------------------------- */
#define FG_ETH_HLEN 14          /**< dst, src, ethertype */
#define FG_ETH_TYPE_OFF 12
#define FG_VLAN_HLEN 4          /**< one 802.1Q / 802.1ad tag */
#define FG_ET_IPV4 0x0800
#define FG_ET_IPV6 0x86DD
#define FG_ET_ARP 0x0806
#define FG_ET_VLAN 0x8100
#define FG_ET_QINQ 0x88A8

/* ---- IP protocols / IPv6 next headers ---------------------------------- */
#define FG_IPPROTO_HOPOPTS 0
#define FG_IPPROTO_ICMP 1
#define FG_IPPROTO_TCP 6
#define FG_IPPROTO_UDP 17
#define FG_IPPROTO_ROUTING 43
#define FG_IPPROTO_FRAGMENT 44
#define FG_IPPROTO_ESP 50
#define FG_IPPROTO_AH 51
#define FG_IPPROTO_ICMPV6 58
#define FG_IPPROTO_NONE 59
#define FG_IPPROTO_DSTOPTS 60
#define FG_IPPROTO_MH 135       /**< mobility */
#define FG_IPPROTO_HIP 139
#define FG_IPPROTO_SHIM6 140
#define FG_IPPROTO_EXP1 253
#define FG_IPPROTO_EXP2 254

/* ---- IPv4 -------------------------------------------------------------- */
#define FG_IP4_MIN_HLEN 20
#define FG_IP4_TOTLEN_OFF 2
#define FG_IP4_ID_OFF 4         /**< identification (fragment-follow key) */
#define FG_IP4_FRAG_OFF 6       /**< flags + fragment offset */
#define FG_IP4_TTL_OFF 8
#define FG_IP4_PROTO_OFF 9
#define FG_IP4_SADDR_OFF 12
#define FG_IP4_DADDR_OFF 16
#define FG_IP4_DF 0x4000
#define FG_IP4_MF 0x2000
#define FG_IP4_OFFMASK 0x1FFF   /**< in 8-byte units */

/* ---- IPv6 -------------------------------------------------------------- */
#define FG_IP6_HLEN 40
#define FG_IP6_PLEN_OFF 4
#define FG_IP6_NXT_OFF 6
#define FG_IP6_HOP_OFF 7
#define FG_IP6_SADDR_OFF 8
#define FG_IP6_DADDR_OFF 24
#define FG_IP6_EXT_MIN 8        /**< every extension header is >= 8 bytes */
#define FG_IP6_FRAG_OFFMASK 0xFFF8
#define FG_IP6_FRAG_M 0x0001
#define FG_IP6_RH_TYPE_OFF 2    /**< routing header: routing type */
#define FG_IP6_RH_SEGLEFT_OFF 3 /**< routing header: segments left */
#define FG_IP6_RH_TYPE0 0       /**< deprecated source route (RFC 5095) */
#define FG_IP6_FRAG_ID_OFF 4    /**< fragment header: 32-bit identification */
/** Largest number of IPv6 extension headers walked (more: refused as
 *  ipv6_ext_chain_too_long). */
#define FG_PKT_V6_EXT_MAX 8

/* ---- L4 ---------------------------------------------------------------- */
#define FG_TCP_MIN_HLEN 20
#define FG_TCP_FLAGS_OFF 13
#define FG_UDP_HLEN 8
#define FG_UDP_LEN_OFF 4
#define FG_ICMP_HLEN 8          /**< type, code, csum, 4 bytes; errors quote after it */
#define FG_ICMP_ECHO_ID_OFF 4
#define FG_ICMP_QUOTE_MIN 8     /**< RFC 792 / 4443: quoted L4 bytes at least */
#define FG_ICMP_ECHO_REPLY 0
#define FG_ICMP_UNREACH 3
#define FG_ICMP_ECHO 8
#define FG_ICMP_TIME_EXCEEDED 11
#define FG_ICMP_PARAMPROB 12
#define FG_ICMP6_UNREACH 1      /**< 1..4: dest-unreach, too-big, time-exceeded, param-problem */
#define FG_ICMP6_PARAMPROB 4
#define FG_ICMP6_ECHO 128
#define FG_ICMP6_ECHO_REPLY 129
#define FG_ICMP6_NS 135
#define FG_ICMP6_NA 136
#define FG_ND_MIN_LEN 24        /**< ICMPv6 header + reserved/flags + target */
#define FG_ND_TARGET_OFF 8
#define FG_ND_HOP_LIMIT 255     /**< RFC 4861 7.1.1 */

/* ICMP / ICMPv6 types by what the balancer does with them, written once
 * for the C, CUDA and XDP parsers. */
/** The ICMP of a family: what an ICMP error quoting an echo must carry. */
#define FG_ICMP_PROTO(v6) ((v6) ? FG_IPPROTO_ICMPV6 : FG_IPPROTO_ICMP)
#define FG_ICMP_IS_ECHO(t, v6) ((t) == ((v6) ? FG_ICMP6_ECHO : FG_ICMP_ECHO))
#define FG_ICMP_IS_ECHO_REPLY(t, v6) \
	((t) == ((v6) ? FG_ICMP6_ECHO_REPLY : FG_ICMP_ECHO_REPLY))
/** an error that quotes the packet it answers (unreach, too big, time
 *  exceeded, parameter problem) */
#define FG_ICMP_IS_ERROR(t, v6) \
	((!(v6) && ((t) == FG_ICMP_UNREACH || (t) == FG_ICMP_TIME_EXCEEDED || \
		    (t) == FG_ICMP_PARAMPROB)) || \
	 ((v6) && (t) >= FG_ICMP6_UNREACH && (t) <= FG_ICMP6_PARAMPROB))
#define FG_ICMP_IS_ND(t, v6) ((v6) && ((t) == FG_ICMP6_NS || (t) == FG_ICMP6_NA))
/** RFC 4861 7.1.1: a solicitation / advertisement needs hop limit 255,
 *  code 0, at least FG_ND_MIN_LEN bytes */
#define FG_ND_MALFORMED(hop, code, avail) \
	((hop) != FG_ND_HOP_LIMIT || (code) != 0 || (avail) < FG_ND_MIN_LEN)
/** A later fragment (no L4 header to key on) is dropped when its TTL /
 *  hop limit would expire or (IPv6, @p unspec) it comes from ::: the
 *  reason, or 0: kept as FG_PK_FRAG_LATER. */
#define FG_PKT_LATER_DROP(hop, unspec) \
	((hop) <= 1 ? FG_DROP_ttl_expired : (unspec) ? FG_DROP_martian_src : 0)
/** From :: only what stays on the link: neighbour discovery (DAD) and
 *  ICMPv6 for the host (MLD, RS); a flow or an ICMP error of kind @p k,
 *  which would be forwarded, is refused (RFC 4291 2.5.2). */
#define FG_PKT_UNSPEC_REFUSED(k) ((k) == FG_PK_FLOW || (k) == FG_PK_ICMP_ERR)
/** The key ports of an echo (request {id, 0}, reply {0, id}) into
 *  @p sport / @p dport: 0, or -1 when @p t is no echo. */
#define FG_ICMP_ECHO_PORTS(t, v6, id, sport, dport) \
	(FG_ICMP_IS_ECHO(t, v6) ? ((sport) = (id), (dport) = 0, 0) : \
	 FG_ICMP_IS_ECHO_REPLY(t, v6) ? ((sport) = 0, (dport) = (id), 0) : -1)

/* ---- ARP --------------------------------------------------------------- */
#define FG_ARP_LEN 28           /**< Ethernet / IPv4 ARP body */
#define FG_ARP_OP_OFF 6
#define FG_ARP_SHA_OFF 8
#define FG_ARP_SPA_OFF 14
#define FG_ARP_THA_OFF 18
#define FG_ARP_TPA_OFF 24
#define FG_ARP_OP_REQUEST 1
#define FG_ARP_OP_REPLY 2

/* ---- parse results ----------------------------------------------------- */

/** Packet kinds (fg_pkt::kind, fg_pkt_parse's return value). */
enum fg_pkt_kind {
	FG_PK_DROP = 0,
	FG_PK_FLOW,
	FG_PK_FRAG_LATER,
	FG_PK_ICMP_ERR,
	FG_PK_ARP,
	FG_PK_ND,
	FG_PK_HOST,
	FG_PK_MAX
};

/** fg_pkt::flags bits. */
#define FG_PF_VLAN       0x01 /**< one 802.1Q tag present (fg_pkt::vlan) */
#define FG_PF_FRAG       0x02 /**< first fragment (MF set, offset 0) */
#define FG_PF_IP_OPTS    0x04 /**< IPv4 options / IPv6 extension headers present */
#define FG_PF_ARP_REPLY  0x08 /**< FG_PK_ARP: opcode 2 */
#define FG_PF_ND_ADVERT  0x08 /**< FG_PK_ND: neighbour advertisement (136) */
#define FG_PF_ECHO_REPLY 0x10 /**< ICMP echo reply (key ports reversed) */
#define FG_PF_DF         0x20 /**< IPv4 don't-fragment bit set */

#endif /* FLOWGATE_FG_PKT_DEFS_H */
