/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * flowgate's counter names, declared once.
 *
 * Every drop reason, per-core, per-service and per-backend counter is one
 * entry of an X-macro list below.  The dataplane keeps plain per-core
 * uint64_t arrays indexed by the generated enums; stats, fgctl and the
 * telemetry commands print the generated name strings, so every consumer
 * shows the same names.
 *
 * Each list entry is X(name, "one-line description").
 *
 * ## Accounting
 * Every received packet (rx_packets) ends as exactly one of: an output
 * (forwarded, or answered in place: ARP / ND replies), a packet handed to
 * the host (host_packets), one drop reason (drops = their sum), or,
 * for an ARP reply / neighbour advertisement that the workers learn from
 * (or ignore) and the host does not take, arp_replies_consumed:
 *   rx_packets = forwarded + answered + host_packets + drops
 *                + arp_replies_consumed.
 * Packets the workers *generate* in addition are counted in tx_packets
 * and, each kind, in a core counter of their own, so a checker can
 * subtract them:
 *   - icmp_too_big_sent: ICMP frag-needed / packet-too-big to the sender
 *     of an oversize packet; that packet itself counts as its drop
 *     (encap_too_big, mtu_exceeded) even though its mbuf carries the error;
 *   - no_backend_rst / no_backend_unreach: TCP RST / ICMP unreachable to a
 *     client whose service has no usable backend; the packet counts as
 *     no_backend;
 *   - nat_rst_sent (daemon counter): TCP RST to a client whose NAT flow
 *     the balancer does not know; the packet counts as nat_not_syn;
 *   - arp_requests (daemon counter): ARP / NS the workers solicit.
 * Errors not generated because of the per-worker rate limit are counted
 * in icmp_ratelimited (the packet still counts as its drop).
 */
#ifndef FLOWGATE_FG_COUNTERS_H
#define FLOWGATE_FG_COUNTERS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Drop reasons.  The parser (fg_pkt_parse) sets fg_pkt::drop to one of the
 * first group; the rest are set by the daemon.  Entry 0 ("none") means "not
 * dropped" so a zeroed fg_pkt has no reason.
 */
#define FG_DROP_LIST(X) \
	X(none,                   "not dropped (placeholder, never counted)") \
	/* --- parser: L2 --- */ \
	X(l2_truncated,           "frame shorter than an Ethernet header") \
	X(vlan_truncated,         "frame ends inside an 802.1Q tag") \
	X(vlan_qinq,              "stacked VLAN tags (QinQ) are not supported") \
	X(unknown_ethertype,      "ethertype is not IPv4, IPv6, ARP or 802.1Q") \
	X(arp_malformed,          "ARP that is not Ethernet/IPv4 or is truncated") \
	X(arp_unsupported_op,     "ARP opcode other than request or reply") \
	/* --- parser: IPv4 --- */ \
	X(ipv4_truncated,         "frame ends inside the IPv4 header") \
	X(ipv4_bad_version,       "IPv4 ethertype but version field is not 4") \
	X(ipv4_bad_ihl,           "IPv4 IHL < 5 or header longer than the frame") \
	X(ipv4_bad_len,           "IPv4 total length < IHL or > frame length") \
	X(ipv4_bad_csum,          "IPv4 header checksum wrong (checked only on request)") \
	X(ipv4_bad_frag,          "IPv4 fragment that cannot be valid (offset overflow)") \
	X(ttl_expired,            "TTL / hop limit <= 1: forwarding would expire it") \
	/* --- parser: addresses (IPv4 and IPv6) --- */ \
	X(martian_src,            "source no sender may use: 0/8, 127/8, 224/4, 240/4 (255.255.255.255); ::1, ff00::/8, ::ffff:0:0/96; :: except ND / ICMPv6 for the host") \
	X(land,                   "source address equals destination address (land attack)") \
	/* --- parser: IPv6 --- */ \
	X(ipv6_truncated,         "frame ends inside the IPv6 header") \
	X(ipv6_bad_version,       "IPv6 ethertype but version field is not 6") \
	X(ipv6_bad_len,           "IPv6 payload length > frame length") \
	X(ipv6_ext_truncated,     "frame ends inside an IPv6 extension header") \
	X(ipv6_ext_chain_too_long, "more IPv6 extension headers than the parser walks") \
	X(ipv6_unsupported_ext,   "IPv6 next header the parser cannot skip (ESP, mobility, ...)") \
	X(ipv6_bad_frag,          "IPv6 fragment header that cannot be valid") \
	X(ipv6_rh0,               "IPv6 type 0 routing header (deprecated, RFC 5095), whatever its segments left") \
	X(ipv6_rh_segments_left,  "IPv6 routing header (SRH, ...) with segments left > 0: flowgate is no segment endpoint") \
	X(ipv6_hbh_not_first,     "IPv6 hop-by-hop options header other than right after the IPv6 header (RFC 8200 4.1)") \
	X(ipsec_unsupported,      "AH or ESP (IPv4 or IPv6): not balanced") \
	/* --- parser: L4 --- */ \
	X(l4_truncated,           "frame/IP length ends inside the TCP/UDP/ICMP header") \
	X(tcp_bad_doff,           "TCP data offset < 5 or beyond the IP payload") \
	X(udp_bad_len,            "UDP length < 8 or larger than the IP payload") \
	X(l4_unsupported_proto,   "IP protocol other than TCP/UDP/ICMP/ICMPv6") \
	X(icmp_unsupported_type,  "ICMP type that is neither echo nor a flow error") \
	X(icmp_unrelated,         "ICMP error whose embedded packet is not TCP/UDP/ICMP echo or is truncated") \
	X(nd_malformed,           "neighbour discovery with hop limit != 255 or truncated") \
	/* --- daemon --- */ \
	X(frag_later_untracked,   "non-first fragment of a flow the core does not track") \
	X(unknown_vip,            "destination is not a configured VIP:port/proto") \
	X(src_own_addr,           "new flow whose source is one of the balancer's own addresses (a VIP or a port's local address)") \
	X(icmp_err_foreign,       "NAT: ICMP error about a flow from neither the endpoint its quoted packet went to nor a router's path-MTU message quoting an in-window sequence number") \
	X(no_backend,             "service has no usable backend (all drained/weight 0/down); a new flow's client gets a RST / ICMP unreachable") \
	X(ct_full,                "conntrack full and nothing evictable") \
	X(ct_flood,               "flood mode: new unassured flow not tracked and not routable") \
	X(nat_no_port,            "NAT: no local port steers the reply to this core") \
	X(nat_not_syn,            "NAT: TCP packet other than a SYN with no tracked flow (creates none)") \
	X(tcp_rst_oow,            "NAT: TCP RST outside its direction's window (both endpoints would reject it; the flow's state is unchanged)") \
	X(encap_too_big,          "encapsulated packet exceeds the egress MTU (sender gets ICMP frag-needed / packet-too-big: icmp_too_big_sent)") \
	X(mtu_exceeded,           "NAT: packet exceeds the egress port MTU (sender gets ICMP frag-needed / packet-too-big: icmp_too_big_sent)") \
	X(no_headroom,            "mbuf has no headroom/tailroom for the rewrite") \
	X(frame_too_long,         "frame longer than one mbuf, i.e. than the port's MTU (jumbo on a 1500 port): not reassembled") \
	X(vlan_foreign,           "802.1Q tag that is not the port's configured VLAN (an untagged port takes no tags)") \
	X(no_neighbor,            "next hop MAC unknown") \
	X(tx_full,                "TX ring/queue full") \
	X(port_rx_only,           "packet for a replay-only port (flowgate-bench's net_pcap sources: no TX queue per worker)") \
	X(dispatch_full,          "software-RSS ring to the owning worker full") \
	X(host_unhandled,         "packet for the host and no exception port") \
	X(arp_not_ours,           "ARP/ND request for an address that is not ours") \
	X(reply_untracked,        "NAT reply direction packet without a tracked flow")

/** Drop reasons (index into per-core drop arrays). */
enum fg_drop {
#define FG_X(n, d) FG_DROP_##n,
	FG_DROP_LIST(FG_X)
#undef FG_X
	FG_DROP_MAX
};

/** Per-core dataplane counters (besides drops by reason). */
#define FG_CORE_COUNTER_LIST(X) \
	X(rx_packets,   "packets received by this core") \
	X(rx_bytes,     "bytes received by this core") \
	X(tx_packets,   "packets sent by this core") \
	X(tx_bytes,     "bytes sent by this core") \
	X(new_flows,    "flows inserted into this core's conntrack shard") \
	X(ct_hits,      "packets that found their flow") \
	X(ct_untracked, "packets forwarded by Maglev alone (flood mode / table full / a TCP RST of no tracked flow: an RST opens nothing)") \
	X(ct_reopened,  "client SYNs on a tracked tuple whose backend takes no new flows, scheduled afresh") \
	X(frag_later,   "non-first fragments forwarded along a tracked flow") \
	X(icmp_err_fwd, "ICMP errors forwarded to the flow's backend") \
	X(icmp_too_big_sent, "generated: ICMP frag-needed / packet-too-big to senders of oversize packets (in tx_packets)") \
	X(icmp_ratelimited, "ICMP errors / RSTs not generated: the worker's rate limit (--icmp-rate)") \
	X(no_backend_rst, "generated: TCP RSTs to clients of a service without a usable backend (in tx_packets)") \
	X(no_backend_unreach, "generated: ICMP port unreachable to UDP clients of a service without a usable backend (in tx_packets)") \
	X(arp_replies,  "ARP replies sent") \
	X(nd_adverts,   "neighbour advertisements sent") \
	X(host_packets, "packets handed to the host exception port") \
	X(arp_replies_consumed, "ARP replies / neighbour advertisements received, learned from (or ignored) and freed: no output, no drop") \
	X(dispatched,   "packets handed to another core by software RSS") \
	X(drops,        "packets dropped (sum of drop reasons)")

enum fg_core_counter {
#define FG_X(n, d) FG_CC_##n,
	FG_CORE_COUNTER_LIST(FG_X)
#undef FG_X
	FG_CC_MAX
};

/**
 * A network device's own counters, as both engines report them under the
 * same names (flowgate_port_<name>_total, `fgctl stats` "ports"):
 * X(name, rte_eth_stats field, description).  The DPDK daemon reads the
 * field (dataplane/fg_port.h); flowgate-xdp reads the kernel's link
 * statistics and adds its own (xdp/fgx_load.h).
 */
#define FG_DEV_COUNTER_LIST(X)                                               \
	X(rx_packets, ipackets, "packets the device received")              \
	X(tx_packets, opackets, "packets the device sent")                  \
	X(rx_missed, imissed, "packets the device dropped: RX queue full")  \
	X(rx_errors, ierrors, "erroneous packets the device received")      \
	X(tx_errors, oerrors, "packets the device failed to send (its own TX drops)")

/** Per-service counters (kept per core, summed on read). */
#define FG_SERVICE_COUNTER_LIST(X) \
	X(packets,   "packets to the VIP") \
	X(bytes,     "bytes to the VIP (L3 length)") \
	X(new_flows, "new flows scheduled") \
	X(drops,     "packets to the VIP that were dropped") \
	X(no_backend, "new flows refused: no usable backend") \
	X(placed_maglev,    "maglev-load: new flows on the Maglev candidate (signals fresh)") \
	X(placed_load,      "maglev-load: new flows on the second candidate (less loaded, or the Maglev one saturated)") \
	X(placed_stale,     "maglev-load: new flows placed by plain Maglev because a candidate's load signal was stale or missing") \
	X(placed_saturated, "maglev-load: new flows whose two candidates were saturated, sent to the least-loaded worker")

enum fg_service_counter {
#define FG_X(n, d) FG_SC_##n,
	FG_SERVICE_COUNTER_LIST(FG_X)
#undef FG_X
	FG_SC_MAX
};

/** Per-backend counters (kept per core, summed on read). */
#define FG_BACKEND_COUNTER_LIST(X) \
	X(packets,   "packets sent to the backend") \
	X(bytes,     "bytes sent to the backend (L3 length before encapsulation)") \
	X(new_flows, "new flows assigned to the backend") \
	X(new_flows_load, "maglev-load: new flows placed on the backend by load (not its Maglev slot)") \
	X(reply_packets, "NAT: reply packets from the backend") \
	X(reply_bytes,   "NAT: reply bytes from the backend") \
	X(conns_opened,  "flows of the backend entered in conntrack") \
	X(conns_closed,  "flows of the backend that left conntrack (closed, expired, evicted, deleted)") \
	X(conns_established, "flows of the backend that reached ESTABLISHED") \
	X(conns_unestablished, "flows of the backend that left ESTABLISHED (closing, or removed)")

enum fg_backend_counter {
#define FG_X(n, d) FG_BC_##n,
	FG_BACKEND_COUNTER_LIST(FG_X)
#undef FG_X
	FG_BC_MAX
};

/** Counter names and descriptions, indexed by the enums above. */
extern const char *const fg_drop_names[FG_DROP_MAX];
extern const char *const fg_drop_help[FG_DROP_MAX];
extern const char *const fg_core_counter_names[FG_CC_MAX];
extern const char *const fg_core_counter_help[FG_CC_MAX];
extern const char *const fg_service_counter_names[FG_SC_MAX];
extern const char *const fg_service_counter_help[FG_SC_MAX];
extern const char *const fg_backend_counter_names[FG_BC_MAX];
extern const char *const fg_backend_counter_help[FG_BC_MAX];

/**
 * Looks a drop reason up by name.
 * Thread safety: pure, any thread.
 * @return the enum value, or -ENOENT if @p name is not a drop reason.
 */
int fg_drop_from_name(const char *name);

#ifdef __cplusplus
}
#endif
#endif /* FLOWGATE_FG_COUNTERS_H */
