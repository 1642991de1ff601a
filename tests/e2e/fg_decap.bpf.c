// SPDX-License-Identifier: BSD-3-Clause
/*
 * Backend-side decapsulation for the namespace demo and e2e tests: a TC
 * ingress program that strips flowgate's DSR encapsulation, exactly what
 * Linux ipip / ip6tnl / fou-gue devices do.  Used because the test kernel
 * may be built without CONFIG_NET_IPIP / CONFIG_NET_FOU / CONFIG_IPV6_TUNNEL
 * (scripts/netns-setup.sh picks kernel tunnels when they exist).
 *
 * Handles: IPv4-in-IPv4 (proto 4), IPv6-in-IPv4 (41), IPv6-in-IPv6 (41),
 * IPv4-in-IPv6 (4), and GUE over UDP port GUE_PORT: v1 "direct IP" (both
 * outer families) and v0 with a header (IPv4 outer; its optional fields
 * are skipped).  Anything else passes untouched.
 *
 * Second chance (flowgate --second-chance, pkt/fg_xlate.h
 * FG_GUE_FLAG_PREV): a GUE v0 packet over IPv4 that names a previous owner
 * and carries a TCP segment without SYN for which this host holds no
 * socket (none, or only the listener) is sent on once to that owner: outer
 * destination rewritten, the flag cleared (so it cannot bounce again), MACs
 * from the kernel's FIB and neighbour table, out of the interface the FIB
 * names.  This is GLB's second chance (glb-redirect), one hop.  Section
 * "tc_nochance" is the same program without it (the e2e-ecmp test's
 * baseline).  Without a resolved neighbour the packet is delivered here.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/pkt_cls.h>
#include <linux/tcp.h>
#include <linux/udp.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#define GUE_PORT 6080
#define GUE_FLAG_PREV 0x0001   /* pkt/fg_xlate.h FG_GUE_FLAG_PREV */
#define AF_INET 2
#define TCP_LISTEN 10          /* BPF_TCP_LISTEN */

#ifndef BPF_F_ADJ_ROOM_DECAP_L3_IPV4
#define BPF_F_ADJ_ROOM_DECAP_L3_IPV4 (1ULL << 7)
#define BPF_F_ADJ_ROOM_DECAP_L3_IPV6 (1ULL << 8)
#endif

static __always_inline int decap(struct __sk_buff *skb, __u32 outer_len,
				 int outer_v6, int inner_v6)
{
	__u64 flags = 0;
	__be16 proto = bpf_htons(inner_v6 ? ETH_P_IPV6 : ETH_P_IP);

	if (outer_v6 != inner_v6)
		flags = inner_v6 ? BPF_F_ADJ_ROOM_DECAP_L3_IPV6
				 : BPF_F_ADJ_ROOM_DECAP_L3_IPV4;
	if (bpf_skb_adjust_room(skb, -(__s32)outer_len, BPF_ADJ_ROOM_MAC, flags))
		return TC_ACT_SHOT;
	if (outer_v6 != inner_v6)
		bpf_skb_store_bytes(skb, offsetof(struct ethhdr, h_proto), &proto,
				    sizeof(proto), 0);
	return TC_ACT_OK;
}

static __always_inline int inner_is_v6(void *p, void *end)
{
	__u8 *b = p;

	if ((void *)(b + 1) > end)
		return -1;
	if ((b[0] >> 4) == 4)
		return 0;
	if ((b[0] >> 4) == 6)
		return 1;
	return -1;
}

/* true: this host holds a socket (other than a listener) for the inner
 * IPv4 TCP segment at @p tcp. */
static __always_inline int owns(struct __sk_buff *skb, struct iphdr *in,
				struct tcphdr *tcp)
{
	struct bpf_sock_tuple t = {};
	struct bpf_sock *sk;
	int own;

	t.ipv4.saddr = in->saddr;
	t.ipv4.daddr = in->daddr;
	t.ipv4.sport = tcp->source;
	t.ipv4.dport = tcp->dest;
	sk = bpf_skc_lookup_tcp(skb, &t, sizeof(t.ipv4), BPF_F_CURRENT_NETNS, 0);
	if (!sk)
		return 0;
	own = sk->state != TCP_LISTEN;
	bpf_sk_release(sk);
	return own;
}

/* Sends the packet on to @p prev: see the file comment.  @return a TC
 * verdict, or -1 to deliver it here after all. */
static __always_inline int forward_prev(struct __sk_buff *skb, __u32 prev,
					__u32 flags_off)
{
	struct bpf_fib_lookup fib = {};
	__u32 old_dst;
	__be16 zero = 0;
	int rc;

	if (bpf_skb_load_bytes(skb, 14 + offsetof(struct iphdr, daddr), &old_dst, 4))
		return -1;
	fib.family = AF_INET;
	fib.ipv4_dst = prev;
	fib.ifindex = skb->ingress_ifindex;
	rc = bpf_fib_lookup(skb, &fib, sizeof(fib), 0);
	if (rc != BPF_FIB_LKUP_RET_SUCCESS)
		return -1;
	if (bpf_l3_csum_replace(skb, 14 + offsetof(struct iphdr, check), old_dst, prev, 4) ||
	    bpf_skb_store_bytes(skb, 14 + offsetof(struct iphdr, daddr), &prev, 4, 0) ||
	    bpf_skb_store_bytes(skb, flags_off, &zero, 2, 0) ||
	    /* the outer UDP checksum of IPv4 GUE is 0 (fg_xlate_gue) */
	    bpf_skb_store_bytes(skb, 14 + 20 + offsetof(struct udphdr, check), &zero, 2, 0) ||
	    bpf_skb_store_bytes(skb, 0, fib.dmac, 6, 0) ||
	    bpf_skb_store_bytes(skb, 6, fib.smac, 6, 0))
		return TC_ACT_SHOT;
	return bpf_redirect(fib.ifindex, 0);
}

/* GUE v0 over IPv4 (no IP options): header at 14 + 28. */
static __always_inline int gue0_v4(struct __sk_buff *skb, int chance)
{
	void *data = (void *)(long)skb->data;
	void *end = (void *)(long)skb->data_end;
	__u8 *g = data + 14 + 28;
	__u32 glen, prev;
	__u16 flags;
	struct iphdr *in;
	struct tcphdr *tcp;
	int rc;

	if ((void *)(g + 4) > end)
		return TC_ACT_OK;
	glen = 4 + (g[0] & 0x1f) * 4;
	flags = (__u16)(g[2] << 8 | g[3]);
	in = (void *)(g + glen);
	if ((void *)(in + 1) > end)
		return TC_ACT_OK;
	if (g[1] != IPPROTO_IPIP)
		return g[1] == IPPROTO_IPV6 ? decap(skb, 28 + glen, 0, 1) : TC_ACT_OK;
	if (chance && (flags & GUE_FLAG_PREV) && glen == 8 &&
	    in->protocol == IPPROTO_TCP && in->ihl == 5) {
		tcp = (void *)(in + 1);
		if ((void *)(tcp + 1) > end)
			return TC_ACT_OK;
		if ((void *)(g + 8) > end)
			return TC_ACT_OK;
		prev = *(__u32 *)(g + 4);
		if (!tcp->syn && !owns(skb, in, tcp)) {
			rc = forward_prev(skb, prev, 14 + 28 + 2);
			if (rc >= 0)
				return rc;
		}
	}
	return decap(skb, 28 + glen, 0, 0);
}

static __always_inline int fg_decap_any(struct __sk_buff *skb, int chance)
{
	void *data, *end;
	struct ethhdr *eth;
	int iv6;

	/* packets sent through AF_PACKET's TX ring arrive with a short
	 * linear head: make the outer headers + the inner version readable */
	bpf_skb_pull_data(skb, skb->len < 96 ? skb->len : 96);
	data = (void *)(long)skb->data;
	end = (void *)(long)skb->data_end;
	eth = data;

	if ((void *)(eth + 1) > end)
		return TC_ACT_OK;
	if (eth->h_proto == bpf_htons(ETH_P_IP)) {
		struct iphdr *ip = (void *)(eth + 1);
		__u32 hl;

		if ((void *)(ip + 1) > end || ip->ihl < 5)
			return TC_ACT_OK;
		hl = ip->ihl * 4;
		if (ip->protocol == IPPROTO_IPIP)
			return decap(skb, hl, 0, 0);
		if (ip->protocol == IPPROTO_IPV6)
			return decap(skb, hl, 0, 1);
		if (ip->protocol == IPPROTO_UDP && hl == 20) {
			struct udphdr *u = (void *)ip + 20;

			if ((void *)(u + 1) > end || u->dest != bpf_htons(GUE_PORT))
				return TC_ACT_OK;
			if ((void *)((__u8 *)(u + 1) + 1) <= end &&
			    (*(__u8 *)(u + 1) >> 6) == 0)
				return gue0_v4(skb, chance);
			iv6 = inner_is_v6(u + 1, end);
			if (iv6 < 0)
				return TC_ACT_OK;
			return decap(skb, 28, 0, iv6);
		}
		return TC_ACT_OK;
	}
	if (eth->h_proto == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip6 = (void *)(eth + 1);

		if ((void *)(ip6 + 1) > end)
			return TC_ACT_OK;
		if (ip6->nexthdr == IPPROTO_IPV6)
			return decap(skb, 40, 1, 1);
		if (ip6->nexthdr == IPPROTO_IPIP)
			return decap(skb, 40, 1, 0);
		if (ip6->nexthdr == IPPROTO_UDP) {
			struct udphdr *u = (void *)(ip6 + 1);

			if ((void *)(u + 1) > end || u->dest != bpf_htons(GUE_PORT))
				return TC_ACT_OK;
			iv6 = inner_is_v6(u + 1, end);
			if (iv6 < 0)
				return TC_ACT_OK;
			return decap(skb, 48, 1, iv6);
		}
	}
	return TC_ACT_OK;
}

char _license[] SEC("license") = "GPL";

SEC("tc")
int fg_decap(struct __sk_buff *skb)
{
	return fg_decap_any(skb, 1);
}

SEC("tc_nochance")
int fg_decap_nochance(struct __sk_buff *skb)
{
	return fg_decap_any(skb, 0);
}

