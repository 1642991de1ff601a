// SPDX-License-Identifier: BSD-3-Clause
/*
 * Backend-side decapsulation for the namespace demo and e2e tests: a TC
 * ingress program that strips flowgate's DSR encapsulation, exactly what
 * Linux ipip / ip6tnl / fou-gue devices do.  Used because the test kernel
 * may be built without CONFIG_NET_IPIP / CONFIG_NET_FOU / CONFIG_IPV6_TUNNEL
 * (scripts/netns-setup.sh picks kernel tunnels when they exist).
 *
 * Handles: IPv4-in-IPv4 (proto 4), IPv6-in-IPv4 (41), IPv6-in-IPv6 (41),
 * IPv4-in-IPv6 (4), and GUE v1 "direct IP" over UDP port GUE_PORT (both
 * outer families).  Anything else passes untouched.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/pkt_cls.h>
#include <linux/udp.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#define GUE_PORT 6080

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

SEC("tc")
int fg_decap(struct __sk_buff *skb)
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
