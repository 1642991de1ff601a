// SPDX-License-Identifier: BSD-3-Clause
/*
 * flowgate's XDP balancer: the DSR half of the DPDK worker on a NIC the
 * kernel keeps.  Per packet: parse (the rules of pkt/fg_pkt.c, filling
 * the same struct fg_pkt), conntrack in LRU hash maps keyed by the same
 * struct ct_key4 / ct_key6, a weighted Maglev table built in user space
 * by pkt/fg_maglev.c (slot = CRC32C(key) % M, the DPDK signature), DSR
 * IP-in-IP or GUE with the outer headers of pkt/fg_xlate.c, XDP_TX.
 * Counters: per-CPU, indexed by fg_counters.h's enums (fgx_maps.h).
 *
 * What differs from the DPDK worker is written down in docs/XDP.md; the
 * parts that are re-expressed here rather than shared (BPF cannot call
 * pkt/ or conntrack/ code) are the parser body, the DSR half of
 * ct_tcp_next, and the encapsulation writes; the fixture test
 * (tests/xdp/test_xdp_fixtures.c) holds them to the DPDK bytes.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "fgx_maps.h"

#define ETH_HLEN_ 14
#define P_ICMP 1
#define P_IPIP 4
#define P_TCP 6
#define P_UDP 17
#define P_IPV6 41
#define P_ESP 50
#define P_AH 51
#define P_ICMPV6 58

/* Tables the loader writes before load: CRC32C (Castagnoli, reflected)
 * for the flow signature, and pkt/'s Toeplitz byte tables
 * (fg_rss_table) for the GUE source port. */
const volatile __u32 fgx_crc_tab[256];
const volatile __u32 fgx_rss_tab[2][256];

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct fgx_cfg);
} fgx_cfg SEC(".maps");

/* one per-CPU block of every counter: one lookup per packet */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct fgx_counters);
} fgx_counters SEC(".maps");

/* per-backend counters, by slot, per CPU (fgx_be_count) */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, FGX_MAX_BACKENDS);
	__type(key, __u32);
	__type(value, struct fgx_be_stats);
} fgx_be_stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 2 * FGX_MAX_SERVICES);
	__type(key, struct fgx_svc_key);
	__type(value, struct fgx_svc);
} fgx_services SEC(".maps");

/* the same services by id, for packets of tracked flows */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, FGX_MAX_SERVICES);
	__type(key, __u32);
	__type(value, struct fgx_svc);
} fgx_svc_by_id SEC(".maps");

/* backends by slot (the loader keeps a backend in its slot while it
 * exists); Maglev tables and conntrack entries hold slots */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, FGX_MAX_BACKENDS);
	__type(key, __u32);
	__type(value, struct fgx_backend);
} fgx_backends SEC(".maps");

/* Maglev: one inner array of backend ids per service id; the loader
 * builds a new inner map and swaps it in with one update (atomic for
 * the readers: a packet sees the old or the new table, whole). */
struct fgx_maglev_inner {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_INNER_MAP);
	__uint(max_entries, FG_MAGLEV_MIN_SIZE);
	__type(key, __u32);
	__type(value, __u32);
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, FGX_MAX_SERVICES);
	__type(key, __u32);
	__array(values, struct fgx_maglev_inner);
} fgx_maglev SEC(".maps");

/* Conntrack: LRU hashes, max_entries set by the loader from ct_capacity.
 * One LRU for all CPUs (no BPF_F_NO_COMMON_LRU): per-CPU lists split the
 * free entries among the CPUs, so a table had to be sized for the busiest
 * CPU times the CPUs, and the hash's bucket array (max_entries rounded up
 * to a power of two, 16 bytes each) grew with it: at 1M flows on 16 CPUs
 * 512 MiB of buckets, a cache miss on every hit.  A hit costs the same in
 * both kinds (a lookup sets the node's ref bit); an insert takes its free
 * entry from a per-CPU cache refilled 128 at a time. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, FGX_CT_DEFAULT);
	__type(key, struct ct_key4);
	__type(value, struct fgx_ct);
} fgx_ct4 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, FGX_CT_DEFAULT / 4);
	__type(key, struct ct_key6);
	__type(value, struct fgx_ct);
} fgx_ct6 SEC(".maps");

/* ------------------------------------------------------------ counters */

static __always_inline void cnt(struct fgx_counters *C, __u32 i, __u64 v)
{
	if (i < FGX_CNT_N)
		C->c[i] += v;
}

static __always_inline int drop(struct fgx_counters *C, __u32 why)
{
	if (why >= FG_DROP_MAX)
		why = FG_DROP_l4_unsupported_proto;
	C->c[FGX_CNT_DROP(why)]++;
	C->c[FG_CC_drops]++;
	return XDP_DROP;
}

static __always_inline int to_host(struct fgx_counters *C)
{
	C->c[FG_CC_host_packets]++;
	return XDP_PASS;
}

/* --------------------------------------------------------------- parser */

/* Packet access: every read checks against data_end; offsets are masked
 * to 14 bits so the verifier knows their range (it marks no packet range
 * for an offset that may reach 0xffff; frames are at most 9216 bytes). */
struct pk {
	__u8 *d;
	__u8 *end;
	__u32 len;
};

#define OFF(o) ((o) & 0x3fff)

static __always_inline __u8 *at(const struct pk *k, __u32 off, __u32 n)
{
	__u8 *p = k->d + OFF(off);

	if (p + n > k->end)
		return 0;
	return p;
}

static __always_inline int pdrop(struct fg_pkt *o, __u32 why)
{
	o->kind = FG_PK_DROP;
	o->drop = (__u8)why;
	return FG_PK_DROP;
}

/* fg_pkt__later(): FG_PK_FRAG_LATER, or dropped (FG_PKT_LATER_DROP) */
static __always_inline int later(struct fg_pkt *o, __u8 hop, int unspec)
{
	int why = FG_PKT_LATER_DROP(hop, unspec);

	return why ? pdrop(o, (__u32)why) : (o->kind = FG_PK_FRAG_LATER);
}

static __always_inline void key_ports(struct fg_pkt *o, int v6, __u16 sp,
				      __u16 dp, __u8 proto)
{
	FG_PKT_KEY_PORTS(o, v6, sp, dp, proto);
}

#define V6W_OK 0
#define V6W_LATER 1

/* fg_pkt.c's v6_walk: returns V6W_OK / V6W_LATER or -(enum fg_drop);
 * *frag: the offset of the last fragment header walked. */
static __always_inline int v6_walk(const struct pk *k, __u32 *off, __u32 end,
				   __u8 *nh, __u8 *flags, __u32 *frag)
{
	__u32 o = *off;
	__u8 n = *nh;
	int i;

#pragma unroll
	for (i = 0; i <= FG_PKT_V6_EXT_MAX; i++) {
		__u8 *h;

		switch (n) {
		case 0:
		case 43:
		case 60: {
			__u32 hlen;

			if (i >= FG_PKT_V6_EXT_MAX)
				return -FG_DROP_ipv6_ext_chain_too_long;
			if (n == 0 && i != 0)
				return -FG_DROP_ipv6_hbh_not_first;
			if (o + 8 > end || !(h = at(k, o, 8)))
				return -FG_DROP_ipv6_ext_truncated;
			hlen = ((__u32)h[1] + 1) * 8;
			if (o + hlen > end)
				return -FG_DROP_ipv6_ext_truncated;
			if (n == 43) {
				if (h[FG_IP6_RH_TYPE_OFF] == FG_IP6_RH_TYPE0)
					return -FG_DROP_ipv6_rh0;
				if (h[FG_IP6_RH_SEGLEFT_OFF])
					return -FG_DROP_ipv6_rh_segments_left;
			}
			n = h[0];
			o = OFF(o + hlen);
			*flags |= FG_PF_IP_OPTS;
			break;
		}
		case 44: {
			__u16 fo;

			if (i >= FG_PKT_V6_EXT_MAX)
				return -FG_DROP_ipv6_ext_chain_too_long;
			if (o + 8 > end || !(h = at(k, o, 8)))
				return -FG_DROP_ipv6_ext_truncated;
			fo = FG_RD16(h + 2);
			n = h[0];
			*frag = o;
			o = OFF(o + 8);
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
		case 59:
		case FG_ICMP6_NS:
		case 139:
		case 140:
		case 253:
		case 254:
			return -FG_DROP_ipv6_unsupported_ext;
		default:
			*off = o;
			*nh = n;
			return V6W_OK;
		}
	}
	return -FG_DROP_ipv6_ext_chain_too_long;
}

static __attribute__((noinline)) int parse_icmp_err(const struct pk *k, __u32 in,
						    __u32 end, struct fg_pkt *o,
						    int v6)
{
	__u32 l4;
	__u8 proto, *ip, *h;
	__u16 sport, dport;

	if (!v6) {
		__u32 ihl;

		if (in + 20 > end || !(ip = at(k, in, 20)) || (ip[0] >> 4) != 4)
			return pdrop(o, FG_DROP_icmp_unrelated);
		ihl = (__u32)(ip[0] & 15) * 4;
		if (ihl < 20 || in + ihl > end)
			return pdrop(o, FG_DROP_icmp_unrelated);
		if (FG_RD16(ip + 6) & 0x1FFF)
			return pdrop(o, FG_DROP_icmp_unrelated);
		proto = ip[9];
		l4 = in + ihl;
		__builtin_memcpy(&o->key.k4.saddr, ip + 16, 4);
		__builtin_memcpy(&o->key.k4.daddr, ip + 12, 4);
	} else {
		__u32 frag;
		__u8 fl = 0;
		int r;

		if (in + 40 > end || !(ip = at(k, in, 40)) || (ip[0] >> 4) != 6)
			return pdrop(o, FG_DROP_icmp_unrelated);
		l4 = in + 40;
		proto = ip[6];
		__builtin_memcpy(o->key.k6.saddr, ip + 24, 16);
		__builtin_memcpy(o->key.k6.daddr, ip + 8, 16);
		r = v6_walk(k, &l4, end, &proto, &fl, &frag);
		if (r != V6W_OK)
			return pdrop(o, FG_DROP_icmp_unrelated);
	}
	if (l4 + 8 > end || !(h = at(k, l4, 8)))
		return pdrop(o, FG_DROP_icmp_unrelated);
	switch (proto) {
	case P_TCP:
	case P_UDP:
		sport = FG_LD16(h);
		dport = FG_LD16(h + 2);
		break;
	case P_ICMP:
	case P_ICMPV6:
		if (proto != FG_ICMP_PROTO(v6))
			return pdrop(o, FG_DROP_icmp_unrelated);
		if (FG_ICMP_ECHO_PORTS(h[0], v6, FG_LD16(h + FG_ICMP_ECHO_ID_OFF), sport,
				       dport) < 0)
			return pdrop(o, FG_DROP_icmp_unrelated);
		break;
	default:
		return pdrop(o, FG_DROP_icmp_unrelated);
	}
	/* reversed ports */
	return FG_PKT_KEYED(o, v6, dport, sport, proto, FG_PK_ICMP_ERR);
}

static __always_inline int parse_l4(const struct pk *k, __u32 l4, __u32 end,
				    struct fg_pkt *o, int v6, __u8 hop)
{
	__u32 avail = end - l4;
	__u8 proto = o->proto, *h;

	if (proto == P_TCP) {
		__u32 doff;

		if (avail < 20 || !(h = at(k, l4, 20)))
			return pdrop(o, FG_DROP_l4_truncated);
		doff = (__u32)(h[12] >> 4) * 4;
		if (doff < 20 || doff > avail)
			return pdrop(o, FG_DROP_tcp_bad_doff);
		o->tcp_flags = h[13];
		key_ports(o, v6, FG_LD16(h), FG_LD16(h + 2), proto);
		o->kind = FG_PK_FLOW;
	} else if (proto == P_UDP) {
		__u32 ulen;

		if (avail < 8 || !(h = at(k, l4, 8)))
			return pdrop(o, FG_DROP_l4_truncated);
		ulen = FG_RD16(h + 4);
		if (ulen < 8 || (ulen > avail && !(o->flags & FG_PF_FRAG)))
			return pdrop(o, FG_DROP_udp_bad_len);
		key_ports(o, v6, FG_LD16(h), FG_LD16(h + 2), proto);
		o->kind = FG_PK_FLOW;
	} else if (proto == (v6 ? P_ICMPV6 : P_ICMP)) {
		__u8 t;

		if (avail < 8 || !(h = at(k, l4, 8)))
			return pdrop(o, FG_DROP_l4_truncated);
		t = h[0];
		if (FG_ICMP_IS_ECHO(t, v6)) {
			key_ports(o, v6, FG_LD16(h + FG_ICMP_ECHO_ID_OFF), 0, proto);
			o->kind = FG_PK_FLOW;
		} else if (FG_ICMP_IS_ECHO_REPLY(t, v6)) {
			key_ports(o, v6, 0, FG_LD16(h + FG_ICMP_ECHO_ID_OFF), proto);
			o->flags |= FG_PF_ECHO_REPLY;
			o->kind = FG_PK_FLOW;
		} else if (FG_ICMP_IS_ERROR(t, v6)) {
			if (o->flags & FG_PF_FRAG)
				return pdrop(o, FG_DROP_icmp_unrelated);
			if (parse_icmp_err(k, l4 + FG_ICMP_HLEN, end, o, v6) == FG_PK_DROP)
				return FG_PK_DROP;
		} else if (FG_ICMP_IS_ND(t, v6)) {
			if (FG_ND_MALFORMED(hop, h[1], avail))
				return pdrop(o, FG_DROP_nd_malformed);
			return FG_PKT_ND(o, t, proto);
		} else {
			return FG_PKT_KEYED(o, v6, 0, 0, proto, FG_PK_HOST);
		}
	} else if (proto == P_AH || proto == P_ESP) {
		return pdrop(o, FG_DROP_ipsec_unsupported);
	} else {
		return pdrop(o, FG_DROP_l4_unsupported_proto);
	}
	if (hop <= 1)
		return pdrop(o, FG_DROP_ttl_expired);
	return o->kind;
}

/* fg_pkt_parse.h's fg_pkt__v6_src: ::1, ff00::/8, ::ffff:0:0/96 are
 * martians; :: only for what stays on the link (ND, ICMPv6 for the host) */
#define SRC_OK 0
#define SRC_MARTIAN 1
#define SRC_UNSPEC 2

static __always_inline int v6_src(const __u8 *a)
{
	__u32 w;

	if (a[0] == 0xff)
		return SRC_MARTIAN;
	if (a[0] | a[1] | a[2] | a[3] | a[4] | a[5] | a[6] | a[7] | a[8] | a[9])
		return SRC_OK;
	w = FG_RD16(a + 10);
	if (w == 0xffff)
		return SRC_MARTIAN;
	if (w != 0 || FG_RD16(a + 12) != 0)
		return SRC_OK;
	w = FG_RD16(a + 14);
	return w == 0 ? SRC_UNSPEC : w == 1 ? SRC_MARTIAN : SRC_OK;
}

static __always_inline int v6_land(const __u8 *s, const __u8 *d)
{
	__u32 x = 0;
	int i;

#pragma unroll
	for (i = 0; i < 16; i++)
		x |= s[i] ^ d[i];
	return x == 0;
}

static __always_inline int parse_v4(const struct pk *k, __u32 off,
				    struct fg_pkt *o)
{
	__u32 avail = k->len - off, ihl, tot, foff;
	__u8 *ip;
	__u16 fo;

	o->family = CT_V4;
	if (avail < 20 || !(ip = at(k, off, 20)))
		return pdrop(o, FG_DROP_ipv4_truncated);
	if ((ip[0] >> 4) != 4)
		return pdrop(o, FG_DROP_ipv4_bad_version);
	ihl = (__u32)(ip[0] & 15) * 4;
	if (ihl < 20 || ihl > avail)
		return pdrop(o, FG_DROP_ipv4_bad_ihl);
	tot = FG_RD16(ip + 2);
	if (tot < ihl || tot > avail)
		return pdrop(o, FG_DROP_ipv4_bad_len);
	o->l3_len = (__u16)tot;
	o->l4_off = (__u16)(off + ihl);
	o->proto = ip[9];
	if (ihl > 20)
		o->flags |= FG_PF_IP_OPTS;
	__builtin_memcpy(&o->key.k4.saddr, ip + 12, 4);
	__builtin_memcpy(&o->key.k4.daddr, ip + 16, 4);
	if (ip[12] == 0 || ip[12] == 127 || ip[12] >= 224)
		return pdrop(o, FG_DROP_martian_src);
	if (o->key.k4.saddr == o->key.k4.daddr)
		return pdrop(o, FG_DROP_land);
	fo = FG_RD16(ip + 6);
	if (fo & FG_IP4_DF)
		o->flags |= FG_PF_DF;
	if (fo & (FG_IP4_MF | FG_IP4_OFFMASK)) {
		foff = (__u32)(fo & FG_IP4_OFFMASK) * 8;
		if (foff) {
			if (foff + tot - ihl > 65535)
				return pdrop(o, FG_DROP_ipv4_bad_frag);
			o->key.k4.proto = ip[9];
			/* fg_pkt__key_frag_id(): the datagram's ID */
			__builtin_memcpy(&o->key.k4.sport, ip + 4, 2);
			return later(o, ip[8], 0);
		}
		o->flags |= FG_PF_FRAG;
	}
	return parse_l4(k, off + ihl, off + tot, o, 0, ip[8]);
}

static __always_inline int parse_v6(const struct pk *k, __u32 off,
				    struct fg_pkt *o)
{
	__u32 avail = k->len - off, end, l4, frag = 0;
	__u8 nh, *ip, hop;
	int r, src;

	o->family = CT_V6;
	if (avail < 40 || !(ip = at(k, off, 40)))
		return pdrop(o, FG_DROP_ipv6_truncated);
	if ((ip[0] >> 4) != 6)
		return pdrop(o, FG_DROP_ipv6_bad_version);
	end = FG_IP6_HLEN + (__u32)FG_RD16(ip + 4);
	if (end > avail)
		return pdrop(o, FG_DROP_ipv6_bad_len);
	o->l3_len = (__u16)end;
	end += off;
	__builtin_memcpy(o->key.k6.saddr, ip + 8, 16);
	__builtin_memcpy(o->key.k6.daddr, ip + 24, 16);
	src = v6_src(ip + 8);
	if (src == SRC_MARTIAN)
		return pdrop(o, FG_DROP_martian_src);
	if (v6_land(ip + 8, ip + 24))
		return pdrop(o, FG_DROP_land);
	nh = ip[6];
	hop = ip[7];
	l4 = off + FG_IP6_HLEN;
	if (nh != P_TCP && nh != P_UDP) {
		r = v6_walk(k, &l4, end, &nh, &o->flags, &frag);
		if (r < 0) {
			o->proto = nh;
			return pdrop(o, (__u32)-r);
		}
		if (r == V6W_LATER) {
			FG_PKT_L4_AT(o, l4, nh);
			o->key.k6.proto = nh;
			__u8 *fh = at(k, frag, 8);

			/* fg_pkt__key_frag_id(): the 32-bit ID (the walk
			 * checked the header; the verifier wants its own) */
			if (!fh)
				return pdrop(o, FG_DROP_ipv6_ext_truncated);
			__builtin_memcpy(&o->key.k6.sport, fh + 4, 4);
			return later(o, hop, src == SRC_UNSPEC);
		}
	}
	FG_PKT_L4_AT(o, l4, nh);
	r = parse_l4(k, l4, end, o, 1, hop);
	if (src == SRC_UNSPEC && FG_PKT_UNSPEC_REFUSED(r))
		return pdrop(o, FG_DROP_martian_src);
	return r;
}

static __always_inline int parse_arp(const struct pk *k, __u32 off,
				     struct fg_pkt *o)
{
	__u8 *a;
	__u16 op;

	o->family = CT_V4;
	o->l4_off = (__u16)off;
	if (k->len - off < 28 || !(a = at(k, off, 28)) || FG_RD16(a) != 1 ||
	    FG_RD16(a + 2) != 0x0800 || a[4] != 6 || a[5] != 4)
		return pdrop(o, FG_DROP_arp_malformed);
	op = FG_RD16(a + 6);
	if (op == 2)
		o->flags |= FG_PF_ARP_REPLY;
	else if (op != 1)
		return pdrop(o, FG_DROP_arp_unsupported_op);
	o->l3_len = 28;
	o->kind = FG_PK_ARP;
	return FG_PK_ARP;
}

/* fg_pkt_parse() on an XDP buffer (o zeroed by the caller). */
static __attribute__((noinline)) int fgx_parse(const struct pk *k, struct fg_pkt *o)
{
	__u32 off = ETH_HLEN_;
	__u8 *e;
	__u16 et;

	if (k->len < ETH_HLEN_ || !(e = at(k, 0, ETH_HLEN_)))
		return pdrop(o, FG_DROP_l2_truncated);
	et = FG_RD16(e + 12);
	if (et == 0x8100 || et == 0x88A8) {
		__u8 *t;

		if (k->len < ETH_HLEN_ + 4 || !(t = at(k, 14, 4)))
			return pdrop(o, FG_DROP_vlan_truncated);
		o->vlan = FG_RD16(t);
		o->flags |= FG_PF_VLAN;
		et = FG_RD16(t + 2);
		off += 4;
		if (et == 0x8100 || et == 0x88A8)
			return pdrop(o, FG_DROP_vlan_qinq);
	}
	o->l2_len = (__u16)off;
	o->l3_off = (__u16)off;
	if (et == 0x0800)
		return parse_v4(k, off, o);
	if (et == 0x86DD)
		return parse_v6(k, off, o);
	if (et == 0x0806)
		return parse_arp(k, off, o);
	return pdrop(o, FG_DROP_unknown_ethertype);
}

/* --------------------------------------------------------------- hashes */

/* CRC32C with CT_HASH_SEED over the key bytes: ct_hash_crc / fg_pkt_sig. */
static __always_inline __u32 crc32c(const __u8 *b, __u32 n)
{
	__u32 c = CT_HASH_SEED;

	for (__u32 i = 0; i < n; i++)
		c = fgx_crc_tab[(c ^ b[i]) & 0xff] ^ (c >> 8);
	return c;
}

static __always_inline __u32 pkt_sig(const struct fg_pkt *p)
{
	if (p->family == CT_V6)
		return crc32c((const __u8 *)&p->key.k6, sizeof(struct ct_key6));
	return crc32c((const __u8 *)&p->key.k4, sizeof(struct ct_key4));
}

/* fg_rss_hash(): Toeplitz of saddr, daddr, sport, dport via the byte
 * tables (position parity picks the table). */
static __always_inline __u32 rss_bytes(const __u8 *b, __u32 n, __u32 h, __u32 pos)
{
	for (__u32 i = 0; i < n; i++)
		h ^= fgx_rss_tab[(pos + i) & 1][b[i]];
	return h;
}

static __always_inline __u32 pkt_rss(const struct fg_pkt *p)
{
	/* a later fragment's ports hold its IP ID: left out (byte 0 adds
	 * nothing to a Toeplitz hash) */
	int later = p->kind == FG_PK_FRAG_LATER;

	if (p->family == CT_V6) {
		__u32 h = rss_bytes(p->key.k6.saddr, 32, 0, 0);

		return later ? h : rss_bytes((const __u8 *)&p->key.k6.sport, 4, h, 0);
	}
	return rss_bytes((const __u8 *)&p->key.k4, later ? 8 : 12, 0, 0);
}

static __always_inline __u16 gue_sport(__u32 h)
{
	return (__u16)(0xC000u | (h & 0x3FFFu));
}

/* ------------------------------------------------------------ conntrack */

static __always_inline void fgx_ct_touch(struct fgx_ct *e, const struct fg_pkt *p,
				     const struct fgx_cfg *cfg, __u64 now)
{
	__u8 st = e->state;

	e->packets++;
	e->bytes += p->l3_len;
	e->last_seen = now;
	if (p->proto == P_TCP && p->kind == FG_PK_FLOW) {
		st = ct_tcp_next((enum ct_state)st, false, p->tcp_flags); /* DSR: forward only */
		if (st == CT_ST_PICKUP && e->packets >= cfg->pickup_pkts &&
		    now - e->first_seen >= cfg->pickup_ns)
			st = CT_ST_ESTABLISHED;
	} else if (st == CT_ST_UDP && e->packets >= 2) {
		st = CT_ST_UDP_STREAM;
	}
	if (st != e->state) {
		e->state = st;
		if ((st >= CT_ST_ESTABLISHED && st <= CT_ST_TIME_WAIT) ||
		    st == CT_ST_UDP_STREAM)
			e->flags |= CT_F_ASSURED;
	}
}

static __always_inline struct fgx_ct *fgx_ct_lookup(const struct fg_pkt *p,
						const struct fgx_cfg *cfg, __u64 now)
{
	struct fgx_ct *e;

	if (p->family == CT_V6)
		e = bpf_map_lookup_elem(&fgx_ct6, &p->key.k6);
	else
		e = bpf_map_lookup_elem(&fgx_ct4, &p->key.k4);
	if (e && now - e->last_seen > cfg->timeout_ns[e->state & 15]) {
		/* expired: as ct_lookup_bulk, the slot is free for this packet */
		if (p->family == CT_V6)
			bpf_map_delete_elem(&fgx_ct6, &p->key.k6);
		else
			bpf_map_delete_elem(&fgx_ct4, &p->key.k4);
		return 0;
	}
	return e;
}

static __always_inline long fgx_ct_insert(const void *key, int v6,
					  const struct fgx_ct *v)
{
	return bpf_map_update_elem(v6 ? (void *)&fgx_ct6 : (void *)&fgx_ct4, key, v,
				   BPF_ANY);
}

/* ------------------------------------------------------- encapsulation */

static __always_inline void wr16(__u8 *p, __u16 host)
{
	p[0] = (__u8)(host >> 8);
	p[1] = (__u8)host;
}

static __always_inline __u16 fold(__u64 s)
{
	s = (s & 0xffffffff) + (s >> 32);
	s = (s & 0xffff) + (s >> 16);
	s = (s & 0xffff) + (s >> 16);
	s = (s & 0xffff) + (s >> 16);
	return (__u16)s;
}

/* One's complement sum of the packet bytes [off, off + n) in memory
 * order: 512-byte bpf_csum_diff chunks, then 4-byte and byte steps
 * (IPv6 GUE: RFC 8200 wants the UDP checksum).  A global function: the
 * verifier checks it once, not once per caller state. */
__attribute__((noinline)) __u32 fgx_sum_pkt(struct xdp_md *ctx, __u32 off, __u32 n)
{
	__u8 *d = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	__u64 s = 0;
	__u32 i;

	for (i = 0; i < 20 && n >= 512; i++) {
		__u8 *p = d + OFF(off);

		if (p + 512 > end)
			return 0;
		s += (__u32)bpf_csum_diff(0, 0, (void *)p, 512, 0);
		off += 512;
		n -= 512;
	}
	for (i = 0; i < 128 && n >= 4; i++) {
		__u8 *p = d + OFF(off);
		__u32 w;

		if (p + 4 > end)
			return 0;
		__builtin_memcpy(&w, p, 4);
		s += w;
		off += 4;
		n -= 4;
	}
	for (i = 0; i < 3 && n; i++) {
		__u8 *p = d + OFF(off);
		__u16 w = 0;

		if (p + 1 > end)
			return 0;
		/* memory order: an odd trailing byte is the high byte of a
		 * big-endian word, i.e. the first byte in memory */
		if (n >= 2) {
			if (p + 2 > end)
				return 0;
			__builtin_memcpy(&w, p, 2);
			off += 2;
			n -= 2;
		} else {
			*(__u8 *)&w = p[0];
			n = 0;
		}
		s += w;
	}
	return fold(s);
}

/*
 * DSR encapsulation (fg_xlate.c encap()): trims Ethernet padding, grows
 * the head by hdr - l3_off, writes Ethernet (+VLAN) + outer IP [+ UDP].
 * Returns 0 or -(enum fg_drop).
 */
static __always_inline int encap(struct xdp_md *ctx, const struct fg_pkt *p,
				 const struct fgx_cfg *cfg,
				 const struct fgx_backend *b, int gue,
				 __u16 gue_port_be, __u16 sport)
{
	__u32 v6o = b->family == CT_V6;
	__u32 l2 = cfg->vlan ? 18 : 14;
	__u32 hdr = l2 + (v6o ? 40 : 20) + (gue ? 8 : 0);
	__u32 inner_len = p->l3_len;
	__u32 outer_l3 = hdr - l2 + inner_len;
	__u32 flen = (__u32)(ctx->data_end - ctx->data);
	__u32 tail = flen - ((__u32)p->l3_off + p->l3_len);
	__u8 *d, *end, *ip, tos, inner_proto;
	__u8 inner0, inner1;
	int delta;

	if (!(b->flags & FGX_BE_MAC))
		return -FG_DROP_no_neighbor;
	if ((cfg->mtu && outer_l3 > cfg->mtu) || (!v6o && outer_l3 > 65535) ||
	    (v6o && outer_l3 - 40 > 65535))
		return -FG_DROP_encap_too_big;
	d = (void *)(long)ctx->data;
	end = (void *)(long)ctx->data_end;
	ip = d + OFF(p->l3_off);
	if (ip + 2 > end)
		return -FG_DROP_no_headroom;
	inner0 = ip[0];
	inner1 = ip[1];
	if (p->family == CT_V4) {
		inner_proto = P_IPIP;
		tos = inner1;
	} else {
		inner_proto = P_IPV6;
		tos = (__u8)((inner0 << 4) | (inner1 >> 4));
	}
	if (tail && bpf_xdp_adjust_tail(ctx, -(int)tail))
		return -FG_DROP_no_headroom;
	delta = (int)hdr - (int)p->l3_off;
	if (bpf_xdp_adjust_head(ctx, -delta))
		return -FG_DROP_no_headroom;
	d = (void *)(long)ctx->data;
	end = (void *)(long)ctx->data_end;
	if (d + 18 + 40 + 8 > end)
		return -FG_DROP_no_headroom;
	__builtin_memcpy(d, b->dmac, 6);
	__builtin_memcpy(d + 6, cfg->lb_mac, 6);
	if (cfg->vlan) {
		wr16(d + 12, 0x8100);
		wr16(d + 14, cfg->vlan & 0x0fff);
		wr16(d + 16, v6o ? 0x86DD : 0x0800);
		ip = d + 18;
	} else {
		wr16(d + 12, v6o ? 0x86DD : 0x0800);
		ip = d + 14;
	}
	if (!v6o) {
		int df = p->family == CT_V6 || (p->flags & FG_PF_DF);
		__u8 proto = gue ? P_UDP : inner_proto;
		__u32 src, dst, sum;

		__builtin_memcpy(&src, b->src, 4);
		__builtin_memcpy(&dst, b->addr, 4);
		ip[0] = 0x45;
		ip[1] = tos;
		wr16(ip + 2, (__u16)outer_l3);
		wr16(ip + 4, 0);
		wr16(ip + 6, df ? 0x4000 : 0);
		ip[8] = 64;
		ip[9] = proto;
		__builtin_memcpy(ip + 12, &src, 4);
		__builtin_memcpy(ip + 16, &dst, 4);
		src = bpf_ntohl(src);
		dst = bpf_ntohl(dst);
		sum = (0x4500u | tos) + outer_l3 + (df ? 0x4000u : 0) +
		      ((64u << 8) | proto) + (src >> 16) + (src & 0xffff) +
		      (dst >> 16) + (dst & 0xffff);
		sum = (sum & 0xffff) + (sum >> 16);
		sum = (sum & 0xffff) + (sum >> 16);
		wr16(ip + 10, (__u16)~sum);
		if (gue) {
			__u8 *u = ip + 20;

			wr16(u, sport);
			__builtin_memcpy(u + 2, &gue_port_be, 2);
			wr16(u + 4, (__u16)(8 + inner_len));
			wr16(u + 6, 0);
		}
		return 0;
	}
	ip[0] = (__u8)(0x60 | (tos >> 4));
	ip[1] = (__u8)(tos << 4);
	ip[2] = 0;
	ip[3] = 0;
	wr16(ip + 4, (__u16)(outer_l3 - 40));
	ip[6] = gue ? P_UDP : inner_proto;
	ip[7] = 64;
	__builtin_memcpy(ip + 8, b->src, 16);
	__builtin_memcpy(ip + 24, b->addr, 16);
	if (gue) {
		__u8 *u = ip + 40;
		__u32 ulen = 8 + inner_len, uoff = hdr - 8;
		__u64 s;
		__u16 c;

		wr16(u, sport);
		__builtin_memcpy(u + 2, &gue_port_be, 2);
		wr16(u + 4, (__u16)ulen);
		wr16(u + 6, 0);
		/* pseudo-header (addresses, length, next header) + UDP + inner */
		s = (__u32)bpf_csum_diff(0, 0, (void *)(ip + 8), 32, 0);
		s += bpf_htonl(ulen);
		s += bpf_htonl(P_UDP);
		s += fgx_sum_pkt(ctx, uoff, ulen);
		c = (__u16)~fold(s);
		d = (void *)(long)ctx->data;
		end = (void *)(long)ctx->data_end;
		u = d + OFF(uoff);
		if (u + 8 > end)
			return -FG_DROP_no_headroom;
		__builtin_memcpy(u + 6, &c, 2);
		if (c == 0)
			u[6] = u[7] = 0xff;
	}
	return 0;
}

/* ------------------------------------------------------------- pipeline */

static __always_inline const struct fgx_svc *svc_find(const struct fg_pkt *p,
						      int addr_only)
{
	struct fgx_svc_key k;

	__builtin_memset(&k, 0, sizeof(k));
	if (p->family == CT_V6) {
		__builtin_memcpy(k.addr, p->key.k6.daddr, 16);
		if (!addr_only) {
			k.port = p->key.k6.dport;
			k.proto = p->key.k6.proto;
		}
	} else {
		__builtin_memcpy(k.addr, &p->key.k4.daddr, 4);
		if (!addr_only) {
			k.port = p->key.k4.dport;
			k.proto = p->key.k4.proto;
		}
	}
	k.family = p->family;
	return bpf_map_lookup_elem(&fgx_services, &k);
}

/* Whether @p p's source address is a VIP (its address marker exists). */
static __always_inline int src_is_vip(const struct fg_pkt *p)
{
	struct fgx_svc_key k;

	__builtin_memset(&k, 0, sizeof(k));
	if (p->family == CT_V6)
		__builtin_memcpy(k.addr, p->key.k6.saddr, 16);
	else
		__builtin_memcpy(k.addr, &p->key.k4.saddr, 4);
	k.family = p->family;
	return bpf_map_lookup_elem(&fgx_services, &k) != 0;
}

/* The backend in @p slot if it still is backend @p id of service @p svc. */
static __always_inline const struct fgx_backend *backend_get(__u32 slot, __u32 svc,
							     __u32 id)
{
	const struct fgx_backend *b = bpf_map_lookup_elem(&fgx_backends, &slot);

	if (!b || !(b->flags & FGX_BE_LIVE) || b->service != svc || b->id != id)
		return 0;
	return b;
}

static __always_inline const struct fgx_backend *backend_at(__u32 slot)
{
	const struct fgx_backend *b = bpf_map_lookup_elem(&fgx_backends, &slot);

	return b && (b->flags & FGX_BE_LIVE) ? b : 0;
}

/* One backend's counters (fgx_be_stats).  A global function: the
 * verifier checks it once, not at each of send()'s call sites (the
 * program is near its budget of a million instructions). */
__attribute__((noinline)) int fgx_be_count(__u32 slot, __u32 bytes, __u32 new_flow)
{
	struct fgx_be_stats *st = bpf_map_lookup_elem(&fgx_be_stats, &slot);

	if (!st)
		return 0;
	st->packets++;
	st->bytes += bytes;
	st->new_flows += new_flow;
	return 0;
}

/* Encapsulates towards @p b (backend slot @p slot) and counts what was
 * sent; @p new_flow: this packet scheduled a new flow. */
static __always_inline int send(struct xdp_md *ctx, struct fgx_counters *C,
				const struct fg_pkt *p,
				const struct fgx_cfg *cfg, const struct fgx_svc *s,
				const struct fgx_backend *b, __u32 slot, __u16 sport,
				__u32 new_flow)
{
	int gue = s->mode == FGX_MODE_GUE;
	__u32 l3 = p->l3_len;
	int r = encap(ctx, p, cfg, b, gue, s->gue_port, sport);

	if (r < 0)
		return drop(C, (__u32)-r);
	fgx_be_count(slot, l3, new_flow);
	cnt(C, FG_CC_tx_packets, 1);
	cnt(C, FG_CC_tx_bytes, ctx->data_end - ctx->data);
	return XDP_TX;
}

/* fg_pkt_frag_key(): @p f (a copy of a first fragment's parse) gets the
 * key its later fragments parse to, (source, destination, protocol, IP
 * ID), the ID read from the packet again (IPv6: the chain walked to the
 * fragment header).  Returns 0, or -1 when it cannot be read.  A global
 * function: the verifier checks it once, not at each caller state (the
 * program is near its budget of a million instructions). */
__attribute__((noinline)) int fgx_frag_key(struct xdp_md *ctx, struct fg_pkt *f)
{
	struct pk kk = {
		.d = (void *)(long)ctx->data,
		.end = (void *)(long)ctx->data_end,
	}, *k = &kk;
	__u32 l3, end, l4, frag = 0;
	__u8 *ip, *h, nh, fl = 0;

	if (!f)
		return -1;
	kk.len = (__u32)(kk.end - kk.d);
	l3 = f->l3_off;
	end = l3 + f->l3_len;
	if (f->family != CT_V6) {
		if (!(ip = at(k, l3, 20)))
			return -1;
		__builtin_memcpy(&f->key.k4.sport, ip + 4, 2);
		f->key.k4.dport = 0;
		return 0;
	}
	if (!(ip = at(k, l3, 40)))
		return -1;
	l4 = l3 + 40;
	nh = ip[6];
	if (v6_walk(k, &l4, end, &nh, &fl, &frag) != V6W_OK || !frag ||
	    !(h = at(k, frag, 8)))
		return -1;
	f->key.k6.proto = h[0];
	__builtin_memcpy(&f->key.k6.sport, h + 4, 4);
	return 0;
}

/* A first fragment's flow: its datagram's later fragments look up the
 * key fgx_frag_key() makes (the worker's frag_follow). */
static __always_inline void frag_follow(struct xdp_md *ctx, const struct fg_pkt *p,
					__u32 svc, __u32 bid, __u32 slot, __u64 now)
{
	struct fgx_ct v = {}, *e;
	struct fg_pkt f = *p;
	int v6 = p->family == CT_V6;

	if (fgx_frag_key(ctx, &f))
		return;
	e = v6 ? bpf_map_lookup_elem(&fgx_ct6, &f.key.k6) :
		 bpf_map_lookup_elem(&fgx_ct4, &f.key.k4);
	if (e && !(e->flags & CT_F_FRAG))
		return;
	v.state = CT_ST_OTHER;
	v.flags = CT_F_FRAG | (v6 ? CT_F_V6 : 0);
	v.service = (__u16)svc;
	v.backend = bid;
	v.slot = slot;
	v.last_seen = v.first_seen = now;
	v.cpu = (__u16)bpf_get_smp_processor_id();
	fgx_ct_insert(v6 ? (void *)&f.key.k6 : (void *)&f.key.k4, v6, &v);
}

/* Maglev: backend slot of table entry sig % M of service s, or
 * FG_MAGLEV_NONE. */
static __always_inline __u32 maglev_pick(const struct fgx_svc *s, __u32 sig)
{
	__u32 sid = s->id, i, *slot;
	void *tab;

	if (!s->n_usable || !s->maglev_size)
		return FG_MAGLEV_NONE;
	tab = bpf_map_lookup_elem(&fgx_maglev, &sid);
	if (!tab)
		return FG_MAGLEV_NONE;
	i = sig % s->maglev_size;
	slot = bpf_map_lookup_elem(tab, &i);
	return slot ? *slot : FG_MAGLEV_NONE;
}

SEC("xdp")
int fg_xdp(struct xdp_md *ctx)
{
	struct pk k = {
		.d = (void *)(long)ctx->data,
		.end = (void *)(long)ctx->data_end,
	};
	__u32 zero = 0, slot, sig, sid;
	struct fgx_counters *C;
	const struct fgx_cfg *cfg;
	const struct fgx_svc *s;
	const struct fgx_backend *b;
	struct fgx_ct *e;
	struct fg_pkt p;
	__u64 now;

	C = bpf_map_lookup_elem(&fgx_counters, &zero);
	cfg = bpf_map_lookup_elem(&fgx_cfg, &zero);
	if (!C || !cfg)
		return XDP_PASS;
	k.len = (__u32)(k.end - k.d);
	C->c[FG_CC_rx_packets]++;
	C->c[FG_CC_rx_bytes] += k.len;
	__builtin_memset(&p, 0, sizeof(p));
	fgx_parse(&k, &p);
	if ((p.vlan & 0x0fff) != cfg->vlan && p.kind != FG_PK_DROP)
		return drop(C, FG_DROP_vlan_foreign);
	switch (p.kind) {
	case FG_PK_FLOW:
	case FG_PK_ICMP_ERR:
	case FG_PK_FRAG_LATER:
		break;
	case FG_PK_ARP:
	case FG_PK_ND:
	case FG_PK_HOST:
		/* the kernel owns the interface: its neighbour tables answer */
		return to_host(C);
	default:
		return drop(C, p.drop ? p.drop : FG_DROP_l4_unsupported_proto);
	}
	/* the coarse clock (one tick, 1-4 ms): timeouts are seconds, and the
	 * precise one is a paravirtual clock read on VMs, tens of ns */
	now = bpf_ktime_get_coarse_ns();
	e = fgx_ct_lookup(&p, cfg, now);
	if (e) {
		if ((e->flags & CT_F_FRAG) && p.kind != FG_PK_FRAG_LATER)
			goto miss; /* a fragment-follow entry, not this flow's */
		b = backend_get(e->slot, e->service, e->backend);
		if (!b)
			return drop(C, FG_DROP_no_backend); /* backend removed */
		if (p.kind == FG_PK_FLOW && !(b->flags & FGX_BE_USABLE) &&
		    (p.tcp_flags & (CT_TCP_SYN | CT_TCP_ACK)) == CT_TCP_SYN) {
			/* a new connection on the tuple of a flow whose
			 * backend takes no new flows: schedule it afresh */
			C->c[FG_CC_ct_reopened]++;
			goto miss;
		}
		sid = e->service;
		s = bpf_map_lookup_elem(&fgx_svc_by_id, &sid);
		if (!s || !s->live)
			return drop(C, FG_DROP_unknown_vip); /* service gone */
		C->c[FG_CC_ct_hits]++;
		if (p.kind == FG_PK_FLOW) {
			fgx_ct_touch(e, &p, cfg, now);
			if (p.flags & FG_PF_FRAG)
				frag_follow(ctx, &p, e->service, e->backend, e->slot, now);
			return send(ctx, C, &p, cfg, s, b, e->slot, e->gue_sport, 0);
		}
		if (p.kind == FG_PK_ICMP_ERR)
			C->c[FG_CC_icmp_err_fwd]++;
		else
			C->c[FG_CC_frag_later]++;
		return send(ctx, C, &p, cfg, s, b, e->slot,
			    s->mode == FGX_MODE_GUE ? gue_sport(pkt_rss(&p)) : 0, 0);
	}
miss:
	if (p.kind == FG_PK_FRAG_LATER)
		return drop(C, FG_DROP_frag_later_untracked);
	s = svc_find(&p, 0);
	if (p.kind == FG_PK_ICMP_ERR) {
		/* untracked flow of a DSR service: Maglev still answers */
		if (!s || !s->n_usable) {
			if (!s && cfg->pass_unknown && !svc_find(&p, 1))
				return to_host(C);
			return drop(C, FG_DROP_icmp_unrelated);
		}
		slot = maglev_pick(s, pkt_sig(&p));
		b = backend_at(slot);
		if (!b)
			return drop(C, FG_DROP_icmp_unrelated);
		C->c[FG_CC_icmp_err_fwd]++;
		return send(ctx, C, &p, cfg, s, b, slot,
			    s->mode == FGX_MODE_GUE ? gue_sport(pkt_rss(&p)) : 0, 0);
	}
	if (!s) {
		if (cfg->pass_unknown && !svc_find(&p, 1))
			return to_host(C);
		return drop(C, FG_DROP_unknown_vip);
	}
	/* a new flow from one of our VIPs (the worker's src_own_addr; the
	 * port's own addresses are the kernel's, not known here: docs/XDP.md) */
	if (src_is_vip(&p))
		return drop(C, FG_DROP_src_own_addr);
	sig = pkt_sig(&p);
	slot = maglev_pick(s, sig);
	b = backend_at(slot);
	if (!b)
		return drop(C, FG_DROP_no_backend);
	{
		struct fgx_ct v = {};
		int v6 = p.family == CT_V6;

		v.state = ct_state_initial(p.proto, p.tcp_flags);
		v.flags = (v6 ? CT_F_V6 : 0) |
			  (p.tcp_flags && !(p.tcp_flags & CT_TCP_SYN) ? CT_F_MIDSTREAM : 0);
		v.service = (__u16)s->id;
		v.backend = b->id;
		v.slot = slot;
		v.packets = 1;
		v.bytes = p.l3_len;
		v.last_seen = v.first_seen = now;
		/* the GUE source port, kept for the flow's later packets */
		v.gue_sport = s->mode == FGX_MODE_GUE ? gue_sport(pkt_rss(&p)) : 0;
		v.cpu = (__u16)bpf_get_smp_processor_id();
		if (fgx_ct_insert(v6 ? (void *)&p.key.k6 : (void *)&p.key.k4, v6, &v) == 0)
			C->c[FG_CC_new_flows]++;
		else
			C->c[FG_CC_ct_untracked]++; /* Maglev alone */
		if (p.flags & FG_PF_FRAG)
			frag_follow(ctx, &p, s->id, b->id, slot, now);
		return send(ctx, C, &p, cfg, s, b, slot, v.gue_sport, 1);
	}
}

char _license[] SEC("license") = "GPL";
