// SPDX-License-Identifier: BSD-3-Clause
/*
 * fg-decap: the worker side of flowgate's DSR.  A TC ingress program that
 * strips flowgate's encapsulation for the configured VIPs, as Linux's
 * ipip / ip6tnl / fou-gue devices would (some kernels are built without
 * them), so the worker answers the client from the VIP (configured on lo)
 * directly.
 *
 * Handles IPv4-in-IPv4 (proto 4), IPv6-in-IPv4 (41), IPv6-in-IPv6 (41),
 * IPv4-in-IPv6 (4), and GUE v1 "direct IP" over UDP to the configured
 * port (both outer families), and GUE v0 with a header over IPv4 (what
 * flowgate --second-chance sends when it names a previous owner).  Only
 * packets whose INNER destination is a configured VIP (fgd_vips) are
 * decapsulated; everything else passes untouched.  TC rather than XDP: the
 * decapsulated packet must go up the stack with its skb metadata (GRO,
 * checksum state), and TC works on every driver.  Counters: fg_decap.h.
 *
 * Second chance (fg-decap attach --second-chance; flowgate --second-chance,
 * pkt/fg_xlate.h FG_GUE_FLAG_PREV): a GUE v0 packet over IPv4 that names a
 * previous owner and carries a TCP segment without SYN for which this host
 * holds no socket (none, or only the listener) is sent on once to that
 * owner: outer destination rewritten, the flag cleared (so it cannot bounce
 * again), MACs from the kernel's FIB and neighbour table, out of the
 * interface the FIB names.  This is GLB's second chance (glb-redirect), one
 * hop.  Without a route or a resolved neighbour the packet is delivered
 * here (second_chance_kept).  The worker needs net.ipv4.conf.IFACE.forwarding=1
 * for the FIB lookup.
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

#include "fg_decap.h"
#include "fg_xlate.h"	/* FG_GUE_FLAG_PREV: the wire format, written once */

#define FGD_AF_INET 2
#define FGD_TCP_LISTEN 10	/* BPF_TCP_LISTEN */

#ifndef BPF_F_ADJ_ROOM_DECAP_L3_IPV4
#define BPF_F_ADJ_ROOM_DECAP_L3_IPV4 (1ULL << 7)
#define BPF_F_ADJ_ROOM_DECAP_L3_IPV6 (1ULL << 8)
#endif

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct fgd_cfg);
} fgd_cfg SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, FGD_MAX_VIPS);
	__type(key, struct fgd_vip);
	__type(value, __u8);
} fgd_vips SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, FGD_C_MAX);
	__type(key, __u32);
	__type(value, __u64);
} fgd_counters SEC(".maps");

static __always_inline int count(__u32 c, int verdict)
{
	__u64 *v = bpf_map_lookup_elem(&fgd_counters, &c);

	if (v)
		*v += 1;
	return verdict;
}

static __always_inline int decap(struct __sk_buff *skb, __u32 outer_len,
				 int outer_v6, int inner_v6, __u32 ctr)
{
	__u64 flags = 0;
	__be16 proto = bpf_htons(inner_v6 ? ETH_P_IPV6 : ETH_P_IP);

	if (outer_v6 != inner_v6)
		flags = inner_v6 ? BPF_F_ADJ_ROOM_DECAP_L3_IPV6
				 : BPF_F_ADJ_ROOM_DECAP_L3_IPV4;
	if (bpf_skb_adjust_room(skb, -(__s32)outer_len, BPF_ADJ_ROOM_MAC, flags))
		return count(FGD_C_decap_failed, TC_ACT_SHOT);
	if (outer_v6 != inner_v6)
		bpf_skb_store_bytes(skb, offsetof(struct ethhdr, h_proto), &proto,
				    sizeof(proto), 0);
	return count(ctr, TC_ACT_OK);
}

/* Inner family (0 = IPv4, 1 = IPv6) when the inner destination is a
 * configured VIP; -1 when it is not IP, -2 when it is no VIP. */
static __always_inline int inner_vip(void *p, void *end, int want)
{
	struct fgd_vip k = {};
	__u8 *b = p;

	if ((void *)(b + 1) > end)
		return -1;
	if ((b[0] >> 4) == 4 && (want < 0 || want == 0)) {
		struct iphdr *ip = p;

		if ((void *)(ip + 1) > end)
			return -1;
		k.family = 4;
		__builtin_memcpy(k.addr, &ip->daddr, 4);
		return bpf_map_lookup_elem(&fgd_vips, &k) ? 0 : -2;
	}
	if ((b[0] >> 4) == 6 && (want < 0 || want == 1)) {
		struct ipv6hdr *ip6 = p;

		if ((void *)(ip6 + 1) > end)
			return -1;
		k.family = 6;
		__builtin_memcpy(k.addr, &ip6->daddr, 16);
		return bpf_map_lookup_elem(&fgd_vips, &k) ? 1 : -2;
	}
	return -1;
}

static __always_inline int verdict_of(int iv)
{
	return iv == -2 ? count(FGD_C_not_vip, TC_ACT_OK) : count(FGD_C_passed, TC_ACT_OK);
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
	own = sk->state != FGD_TCP_LISTEN;
	bpf_sk_release(sk);
	return own;
}

/* Sends the packet on to @p prev (see the file comment).  @return a TC
 * verdict, or -1 to deliver it here after all. */
static __always_inline int forward_prev(struct __sk_buff *skb, __u32 prev,
					__u32 flags_off)
{
	struct bpf_fib_lookup fib = {};
	__u32 old_dst;
	__be16 zero = 0;

	if (bpf_skb_load_bytes(skb, 14 + offsetof(struct iphdr, daddr), &old_dst, 4))
		return -1;
	fib.family = FGD_AF_INET;
	fib.ipv4_dst = prev;
	fib.ifindex = skb->ingress_ifindex;
	if (bpf_fib_lookup(skb, &fib, sizeof(fib), 0) != BPF_FIB_LKUP_RET_SUCCESS)
		return -1;
	if (bpf_l3_csum_replace(skb, 14 + offsetof(struct iphdr, check), old_dst, prev, 4) ||
	    bpf_skb_store_bytes(skb, 14 + offsetof(struct iphdr, daddr), &prev, 4, 0) ||
	    bpf_skb_store_bytes(skb, flags_off, &zero, 2, 0) ||
	    /* the outer UDP checksum of IPv4 GUE is 0 (fg_xlate_gue) */
	    bpf_skb_store_bytes(skb, 14 + 20 + offsetof(struct udphdr, check), &zero, 2, 0) ||
	    bpf_skb_store_bytes(skb, 0, fib.dmac, 6, 0) ||
	    bpf_skb_store_bytes(skb, 6, fib.smac, 6, 0))
		return count(FGD_C_decap_failed, TC_ACT_SHOT);
	return count(FGD_C_second_chance_fwd, bpf_redirect(fib.ifindex, 0));
}

/* GUE v0 (with a header) over IPv4 without options: header at 14 + 28,
 * the inner packet after its hlen words. */
static __always_inline int gue0_v4(struct __sk_buff *skb, int chance)
{
	void *data = (void *)(long)skb->data;
	void *end = (void *)(long)skb->data_end;
	__u8 *g = data + 14 + 28;
	__u32 glen, prev;
	__u16 flags;
	struct iphdr *in;
	struct tcphdr *tcp;
	int iv, rc;

	if ((void *)(g + 4) > end)
		return count(FGD_C_passed, TC_ACT_OK);
	glen = 4 + (g[0] & 0x1f) * 4;
	flags = (__u16)(g[2] << 8 | g[3]);
	in = (void *)(g + glen);
	if ((void *)(in + 1) > end)
		return count(FGD_C_passed, TC_ACT_OK);
	if (g[1] != IPPROTO_IPIP && g[1] != IPPROTO_IPV6)
		return count(FGD_C_passed, TC_ACT_OK);
	iv = inner_vip(in, end, g[1] == IPPROTO_IPV6);
	if (iv < 0)
		return verdict_of(iv);
	if (iv == 0 && (flags & FG_GUE_FLAG_PREV) && glen == 8 &&
	    in->protocol == IPPROTO_TCP && in->ihl == 5) {
		tcp = (void *)(in + 1);
		if ((void *)(tcp + 1) > end || (void *)(g + 8) > end)
			return count(FGD_C_passed, TC_ACT_OK);
		prev = *(__u32 *)(g + 4);
		if (chance && !tcp->syn && !owns(skb, in, tcp)) {
			rc = forward_prev(skb, prev, 14 + 28 + 2);
			if (rc >= 0)
				return rc;
		}
		count(FGD_C_second_chance_kept, 0);
	}
	return decap(skb, 28 + glen, 0, iv, FGD_C_decap_gue);
}

SEC("tc")
int fg_decap(struct __sk_buff *skb)
{
	__u32 zero = 0;
	struct fgd_cfg *cfg = bpf_map_lookup_elem(&fgd_cfg, &zero);
	__u16 gue = cfg ? cfg->gue_port : 0;
	void *data, *end;
	struct ethhdr *eth;
	int iv;

	/* packets sent through AF_PACKET's TX ring arrive with a short
	 * linear head: make the outer headers + the inner header readable */
	bpf_skb_pull_data(skb, skb->len < 128 ? skb->len : 128);
	data = (void *)(long)skb->data;
	end = (void *)(long)skb->data_end;
	eth = data;

	if ((void *)(eth + 1) > end)
		return count(FGD_C_passed, TC_ACT_OK);
	if (eth->h_proto == bpf_htons(ETH_P_IP)) {
		struct iphdr *ip = (void *)(eth + 1);
		__u32 hl;

		if ((void *)(ip + 1) > end || ip->ihl < 5)
			return count(FGD_C_passed, TC_ACT_OK);
		hl = ip->ihl * 4;
		if (ip->protocol == IPPROTO_IPIP || ip->protocol == IPPROTO_IPV6) {
			if (hl != 20)
				return count(FGD_C_passed, TC_ACT_OK);
			iv = inner_vip((void *)ip + 20, end,
				       ip->protocol == IPPROTO_IPV6);
			if (iv < 0)
				return verdict_of(iv);
			return decap(skb, 20, 0, iv, FGD_C_decap_ipip);
		}
		if (ip->protocol == IPPROTO_UDP && hl == 20 && gue) {
			struct udphdr *u = (void *)ip + 20;

			if ((void *)(u + 1) > end || u->dest != gue)
				return count(FGD_C_passed, TC_ACT_OK);
			/* GUE v0 (version bits 00): a header, maybe a hint */
			if ((void *)((__u8 *)(u + 1) + 1) <= end &&
			    (*(__u8 *)(u + 1) >> 6) == 0)
				return gue0_v4(skb, cfg && cfg->second_chance);
			iv = inner_vip(u + 1, end, -1);
			if (iv < 0)
				return verdict_of(iv);
			return decap(skb, 28, 0, iv, FGD_C_decap_gue);
		}
		return count(FGD_C_passed, TC_ACT_OK);
	}
	if (eth->h_proto == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip6 = (void *)(eth + 1);

		if ((void *)(ip6 + 1) > end)
			return count(FGD_C_passed, TC_ACT_OK);
		if (ip6->nexthdr == IPPROTO_IPV6 || ip6->nexthdr == IPPROTO_IPIP) {
			iv = inner_vip(ip6 + 1, end, ip6->nexthdr == IPPROTO_IPV6);
			if (iv < 0)
				return verdict_of(iv);
			return decap(skb, 40, 1, iv, FGD_C_decap_ipip);
		}
		if (ip6->nexthdr == IPPROTO_UDP && gue) {
			struct udphdr *u = (void *)(ip6 + 1);

			if ((void *)(u + 1) > end || u->dest != gue)
				return count(FGD_C_passed, TC_ACT_OK);
			iv = inner_vip(u + 1, end, -1);
			if (iv < 0)
				return verdict_of(iv);
			return decap(skb, 48, 1, iv, FGD_C_decap_gue);
		}
	}
	return count(FGD_C_passed, TC_ACT_OK);
}

char _license[] SEC("license") = "GPL";
