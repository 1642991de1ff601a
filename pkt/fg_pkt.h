/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * flowgate packet parser: pure C on a byte buffer (no mbuf, no EAL).
 *
 * fg_pkt_parse() classifies one Ethernet frame and fills the conntrack key
 * (struct ct_key4 / ct_key6, padding zeroed) straight into its output, plus
 * the offsets the rewriters (fg_xlate.h) need.  It never reads past @p len.
 *
 * ## What it accepts
 * - Ethernet II with at most ONE 802.1Q/802.1ad tag.  QinQ (a second tag)
 *   is dropped with `vlan_qinq`: flowgate ports carry at most one VLAN.
 * - IPv4 with options (IHL 5..15).  total length must be >= IHL*4 and
 *   <= the bytes after L2; Ethernet padding after it is ignored (l3_len is
 *   the IP total length).  The header checksum is NOT verified unless
 *   FG_PARSE_CHECK_CSUM is passed to fg_pkt_parse_ex() (NICs verify it).
 * - IPv6 with an extension chain: hop-by-hop, routing, destination options,
 *   fragment; at most FG_PKT_V6_EXT_MAX headers (else
 *   `ipv6_ext_chain_too_long`).  AH/ESP -> `ipsec_unsupported`; other
 *   unknown next headers (mobility, HIP, shim6, 59 no-next-header) ->
 *   `ipv6_unsupported_ext`.
 * - TCP (data offset 5..15 and within the IP payload), UDP, ICMP, ICMPv6.
 * - TTL / hop limit <= 1 -> `ttl_expired` (flowgate forwards, so the next
 *   hop would expire it); neighbour discovery is exempt (hop limit 255).
 * - Routing headers: type 0 -> `ipv6_rh0` (RFC 5095) whatever its segments
 *   left; any other type with segments left > 0 -> `ipv6_rh_segments_left`
 *   (flowgate is no segment endpoint: it discards rather than forward past
 *   the route its sender asked for, RFC 8200 4.4); segments left 0 is
 *   skipped.  A hop-by-hop header anywhere but first -> `ipv6_hbh_not_first`
 *   (RFC 8200 4.1).  The same rules inside an ICMPv6 error's quote make it
 *   `icmp_unrelated`.
 * - Source addresses no sender may use -> `martian_src`: IPv4 0/8, 127/8,
 *   224/4 (multicast) and 240/4 (255.255.255.255 with it); IPv6 ::1,
 *   ff00::/8, ::ffff:0:0/96 (IPv4-mapped), and :: unless the packet stays on
 *   the link (FG_PK_ND: duplicate address detection; FG_PK_HOST: MLD,
 *   router solicitations).  Source == destination -> `land`.  ARP is not
 *   checked (0.0.0.0 probes, RFC 5227).  Whether a source is one of the
 *   balancer's own addresses needs the service table: the daemon's check
 *   (`src_own_addr`).
 *
 * ## Kinds (fg_pkt::kind, also the return value)
 * | kind              | key |
 * |-------------------|-----|
 * | FG_PK_FLOW        | the packet's 5-tuple. ICMP echo request: sport = id, dport = 0; echo reply: sport = 0, dport = id (so a reply's key is the request key reversed). |
 * | FG_PK_FRAG_LATER  | non-first fragment: addresses + proto (IPv6: the fragment header's next header) and its datagram's IP ID in the ports: IPv4 sport = the 16-bit identification, dport 0; IPv6 sport:dport = the fragment header's 32-bit identification, all as on the wire (the daemon follows the key its first fragment armed, fg_pkt_frag_key(), or counts `frag_later_untracked`). |
 * | FG_PK_ICMP_ERR    | ICMP dest-unreachable (incl. frag-needed) / time-exceeded / parameter-problem, ICMPv6 dest-unreachable / packet-too-big / time-exceeded / parameter-problem: the key of the EMBEDDED flow, REVERSED.  The embedded header is a packet we (or a DSR backend on our behalf) sent, e.g. VIP:80->client:p; reversing it gives the tracked key client:p->VIP:80 (or, for NAT, backend->local). key.proto is the embedded protocol; fg_pkt::proto is ICMP/ICMPv6. |
 * | FG_PK_ARP         | ARP request or reply (flags FG_PF_ARP_REPLY): k4.saddr = sender IP, k4.daddr = target IP. |
 * | FG_PK_ND          | IPv6 neighbour solicitation (or advertisement: FG_PF_ND_ADVERT): k6.saddr = IPv6 source, k6.daddr = the TARGET address from the ND body. |
 * | FG_PK_HOST        | valid IP for the host, not balanced: ICMP types other than echo/errors (RS/RA/redirect/MLD...). Key = addresses + proto, ports 0. |
 * | FG_PK_DROP        | malformed/truncated/unsupported: fg_pkt::drop says why (enum fg_drop). |
 *
 * ## Fragments
 * A first fragment (IPv4 MF=1 offset 0; IPv6 fragment header offset 0 and
 * M=1) is parsed like a whole packet (its L4 header is there) and flagged
 * FG_PF_FRAG.  Non-first fragments carry no ports: FG_PK_FRAG_LATER,
 * keyed like the kernel's reassembly queue (source, destination, protocol,
 * IP ID; the ID in the port fields, see the table).  A first fragment's
 * fg_pkt_frag_key() is the key its later fragments parse to: the daemon
 * arms a fragment-follow entry under it, so each datagram's later
 * fragments reach its first fragment's backend, and a first fragment with
 * another ID (another datagram, or a spoof from the client's address)
 * cannot re-point them.  Later fragments without such an entry count
 * `frag_later_untracked` and drop.
 */
#ifndef FLOWGATE_FG_PKT_H
#define FLOWGATE_FG_PKT_H

#include <stdint.h>

#include "ct.h"
#include "fg_counters.h"
#include "fg_pkt_defs.h"   /* kinds, flags, constants (shared with GPU / BPF) */

#ifdef __cplusplus
extern "C" {
#endif

/** Verdict of the daemon for one packet (used by fixtures too). */
enum fg_verdict {
	FG_V_FORWARD = 0, /**< rewritten/encapsulated and sent */
	FG_V_DROP,        /**< dropped, a drop counter incremented */
	FG_V_REPLY,       /**< answered in place (ARP / ND) */
	FG_V_HOST,        /**< handed to the host exception port */
};

/* What a parser writes into its result, written once for every parser
 * (C, CUDA, the XDP program): macros, so each compiles them as its own. */
/** The ports and protocol of @p o's key, in its family. */
#define FG_PKT_KEY_PORTS(o, v6, sp, dp, pr)				\
	((v6) ? (void)((o)->key.k6.sport = (sp), (o)->key.k6.dport = (dp),	\
		       (o)->key.k6.proto = (pr)) :				\
		(void)((o)->key.k4.sport = (sp), (o)->key.k4.dport = (dp),	\
		       (o)->key.k4.proto = (pr)))
/** Where L4 starts and its protocol. */
#define FG_PKT_L4_AT(o, l4, nh) ((o)->l4_off = (uint16_t)(l4), (o)->proto = (nh))
/** The ports and protocol, then kind @p k_: @return @p k_. */
#define FG_PKT_KEYED(o, v6, sp, dp, pr, k_) \
	(FG_PKT_KEY_PORTS(o, v6, sp, dp, pr), (o)->kind = (k_))
/** A neighbour solicitation / advertisement (type @p t) of protocol @p pr,
 *  its target already in key.k6.daddr: @return FG_PK_ND. */
#define FG_PKT_ND(o, t, pr)						\
	((o)->key.k6.proto = (pr),					\
	 (o)->flags |= (t) == FG_ICMP6_NA ? FG_PF_ND_ADVERT : 0, (o)->kind = FG_PK_ND)

/** Parse result: 64 bytes, one cache line. */
struct fg_pkt {
	uint16_t l2_len;    /**< bytes of Ethernet + VLAN tag (== l3_off). */
	uint16_t l3_off;    /**< offset of the IP (or ARP) header. */
	uint16_t l4_off;    /**< offset of TCP/UDP/ICMP (after v6 ext headers). */
	uint16_t l3_len;    /**< IP total length (v4) / 40 + payload length (v6). */
	uint16_t vlan;      /**< VLAN TCI (host order) when FG_PF_VLAN, else 0. */
	uint8_t family;     /**< CT_V4 / CT_V6 (ARP: CT_V4). */
	uint8_t proto;      /**< L4 protocol of the outer packet (6, 17, 1, 58...). */
	uint8_t tcp_flags;  /**< TCP flags byte (FIN 0x01 .. CWR 0x80), else 0. */
	uint8_t kind;       /**< enum fg_pkt_kind. */
	uint8_t drop;       /**< enum fg_drop when kind == FG_PK_DROP, else 0. */
	uint8_t flags;      /**< FG_PF_* */
	union {
		struct ct_key4 k4;
		struct ct_key6 k6;
	} key;              /**< see the kinds table; padding zeroed. */
};

/** fg_pkt_parse_ex() option bits. */
#define FG_PARSE_CHECK_CSUM 0x1 /**< verify the IPv4 header checksum */
#define FG_PARSE_GENERAL    0x2 /**< skip the one-step IPv4/TCP path (tests
				     compare the two) */

/**
 * Parses one Ethernet frame.
 * Thread safety: pure function of its inputs; any thread.
 * @param frame  first byte of the Ethernet header.
 * @param len    bytes available at @p frame (frame length); nothing past it
 *               is read.
 * @param out    filled completely (also on drop: kind FG_PK_DROP and drop).
 * @return out->kind (enum fg_pkt_kind).
 */
int fg_pkt_parse(const uint8_t *frame, uint32_t len, struct fg_pkt *out);

/** fg_pkt_parse() with option bits (FG_PARSE_*). */
int fg_pkt_parse_ex(const uint8_t *frame, uint32_t len, struct fg_pkt *out,
		    unsigned int opts);

/**
 * Finds the embedded (quoted) packet of an FG_PK_ICMP_ERR.
 * The embedded IP header starts at p->l4_off + 8.
 * Thread safety: pure; any thread.
 * @param inner_l4_off  receives the offset of the embedded L4 header.
 * @return 0, or -EINVAL when @p p is not an ICMP error of @p frame.
 */
int fg_pkt_icmp_inner(const uint8_t *frame, uint32_t len,
		      const struct fg_pkt *p, uint16_t *inner_l4_off);

/**
 * Fragment-follow key of a first fragment: a copy of @p p as its later
 * fragments parse (kind FG_PK_FRAG_LATER, key = addresses, the protocol
 * the fragment header names (IPv6) and the IP ID in the ports, see the
 * kinds table), so fg_pkt_sig(@p later) is their signature.  Reads the ID
 * from @p frame again (IPv6: walks the extension chain to the fragment
 * header): struct fg_pkt keeps no room for it, and first fragments are
 * rare.
 * Thread safety: pure; any thread.
 * @param p      fg_pkt_parse() of @p frame: FG_PK_FLOW with FG_PF_FRAG.
 * @param later  filled on success.
 * @return 0, or -EINVAL when @p p is not a first fragment of @p frame.
 */
int fg_pkt_frag_key(const uint8_t *frame, uint32_t len, const struct fg_pkt *p,
		    struct fg_pkt *later);

/** Length of the L4 part (l3_off + l3_len - l4_off). */
static inline uint32_t fg_pkt_l4_len(const struct fg_pkt *p)
{
	return (uint32_t)p->l3_off + p->l3_len - p->l4_off;
}

/**
 * Flow signature of a parsed packet: ct_hash_crc over the key of its
 * family (16 B for v4, 48 B for v6) — the conntrack signature and the
 * Maglev slot source.  Thread safety: pure.
 */
uint32_t fg_pkt_sig(const struct fg_pkt *p);

/**
 * Window scale option (RFC 7323) of the TCP header at @p th with @p hlen
 * bytes of header (data offset * 4, already checked against the packet):
 * 0..14 (larger values read as 14), or CT_SEG_NO_WSCALE when absent or
 * the options are malformed.  Thread safety: pure.
 */
uint8_t fg_pkt_tcp_wscale(const uint8_t *th, uint32_t hlen);

/**
 * The TCP segment of a parsed FG_PK_FLOW packet as conntrack needs it
 * (struct ct_seg: sequence and acknowledgement numbers, window, flags; a
 * SYN's window scale).  Other packets: flags 0 and no sequence numbers.
 * @p frame: the frame fg_pkt_parse() read.  Thread safety: pure.
 */
static inline void fg_pkt_tcp_seg(const uint8_t *frame, const struct fg_pkt *p,
				  struct ct_seg *g)
{
	const uint8_t *th = frame + p->l4_off;
	uint32_t v;
	uint16_t w;

	g->flags = p->tcp_flags;
	g->oow = 0;
	if (p->proto != 6 /* IPPROTO_TCP */ || p->kind != FG_PK_FLOW) {
		g->wscale = CT_SEG_NO_SEQ;
		return;
	}
	__builtin_memcpy(&v, th + 4, 4);
	g->seq = __builtin_bswap32(v);
	__builtin_memcpy(&v, th + 8, 4);
	g->ack = __builtin_bswap32(v);
	__builtin_memcpy(&w, th + 14, 2);
	g->win = __builtin_bswap16(w);
	g->wscale = CT_SEG_NO_WSCALE;
	if (__builtin_expect(p->tcp_flags & CT_TCP_SYN, 0))
		g->wscale = fg_pkt_tcp_wscale(th, (uint32_t)(th[12] >> 4) * 4);
}

/** Name of a kind ("flow", "frag_later", ...); "?" when out of range. */
const char *fg_pkt_kind_name(unsigned int kind);

#ifdef __cplusplus
}
#endif
#endif /* FLOWGATE_FG_PKT_H */
