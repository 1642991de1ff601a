/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Parser cases: one function per case, collected in a table.  Frames come
 * from the test builder (fg_pktbuild.h).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <arpa/inet.h>

#include <cmocka.h>

#include "fg_pkt.h"
#include "fg_pktbuild.h"

static uint8_t F[PB_MAX_FRAME];
static const uint8_t MAC_C[6] = { 0x02, 0, 0, 0, 0, 0xaa };

#define CLIENT "192.0.2.10"
#define VIP "10.100.0.1"
#define CLIENT6 "2001:db8::10"
#define VIP6 "fd00:100::1"

static int build(const struct pb_spec *s)
{
	int n = pb_build(s, F, sizeof(F));

	assert_true(n > 0);
	return n;
}

static void tcp4(struct pb_spec *s)
{
	memset(s, 0, sizeof(*s));
	s->saddr = CLIENT;
	s->daddr = VIP;
	s->proto = 6;
	s->sport = 40000;
	s->dport = 80;
	s->payload = 10;
}

static void tcp6(struct pb_spec *s)
{
	tcp4(s);
	s->v6 = 1;
	s->saddr = CLIENT6;
	s->daddr = VIP6;
}

static void expect_drop(const uint8_t *f, uint32_t len, enum fg_drop why)
{
	struct fg_pkt p;
	int k = fg_pkt_parse(f, len, &p);

	if (k != FG_PK_DROP || p.drop != why)
		fprintf(stderr, "len %u: kind %s drop %s, want drop %s\n", len,
			fg_pkt_kind_name(k), fg_drop_names[p.drop],
			fg_drop_names[why]);
	assert_int_equal(k, FG_PK_DROP);
	assert_int_equal(p.kind, FG_PK_DROP);
	assert_string_equal(fg_drop_names[p.drop], fg_drop_names[why]);
}

static void check_key4(const struct fg_pkt *p, const char *s, const char *d,
		       uint16_t sp, uint16_t dp, uint8_t proto)
{
	uint8_t a[16], b[16];
	struct ct_key4 k;

	pb_addr(s, a);
	pb_addr(d, b);
	memset(&k, 0, sizeof(k));
	memcpy(&k.saddr, a, 4);
	memcpy(&k.daddr, b, 4);
	k.sport = htons(sp);
	k.dport = htons(dp);
	k.proto = proto;
	assert_memory_equal(&p->key.k4, &k, sizeof(k)); /* padding zero too */
}

static void check_key6(const struct fg_pkt *p, const char *s, const char *d,
		       uint16_t sp, uint16_t dp, uint8_t proto)
{
	struct ct_key6 k;

	memset(&k, 0, sizeof(k));
	pb_addr(s, k.saddr);
	pb_addr(d, k.daddr);
	k.sport = htons(sp);
	k.dport = htons(dp);
	k.proto = proto;
	assert_memory_equal(&p->key.k6, &k, sizeof(k));
}

/* ---- cases ------------------------------------------------------------ */

static void t_v4_tcp(void **st)
{
	struct pb_spec s;
	struct fg_pkt p;
	int n;

	tcp4(&s);
	s.tcp_flags = 0x12;
	n = build(&s);
	assert_int_equal(fg_pkt_parse(F, n, &p), FG_PK_FLOW);
	assert_int_equal(p.l2_len, 14);
	assert_int_equal(p.l3_off, 14);
	assert_int_equal(p.l4_off, 34);
	assert_int_equal(p.l3_len, 20 + 20 + 10);
	assert_int_equal(p.family, CT_V4);
	assert_int_equal(p.proto, 6);
	assert_int_equal(p.tcp_flags, 0x12);
	assert_int_equal(p.drop, 0);
	check_key4(&p, CLIENT, VIP, 40000, 80, 6);
	assert_int_equal(fg_pkt_sig(&p), ct_hash_crc(&p.key.k4, 16));
}

static void t_v4_udp(void **st)
{
	struct pb_spec s;
	struct fg_pkt p;
	int n;

	tcp4(&s);
	s.proto = 17;
	s.dport = 53;
	n = build(&s);
	assert_int_equal(fg_pkt_parse(F, n, &p), FG_PK_FLOW);
	check_key4(&p, CLIENT, VIP, 40000, 53, 17);
	assert_int_equal(p.tcp_flags, 0);
}

static void t_v4_padding(void **st)
{
	struct pb_spec s;
	struct fg_pkt p;
	int n;

	tcp4(&s);
	s.proto = 17;
	s.payload = 2; /* 14+20+8+2 = 44 -> padded to 60 */
	n = build(&s);
	assert_int_equal(n, 60);
	assert_int_equal(fg_pkt_parse(F, n, &p), FG_PK_FLOW);
	assert_int_equal(p.l3_len, 30);
	assert_int_equal(fg_pkt_l4_len(&p), 10);
}

static void t_vlan(void **st)
{
	struct pb_spec s;
	struct fg_pkt p;
	int n;

	tcp4(&s);
	s.vlan = 100;
	n = build(&s);
	assert_int_equal(fg_pkt_parse(F, n, &p), FG_PK_FLOW);
	assert_int_equal(p.l3_off, 18);
	assert_int_equal(p.l2_len, 18);
	assert_int_equal(p.l4_off, 38);
	assert_int_equal(p.vlan & 0xfff, 100);
	assert_true(p.flags & FG_PF_VLAN);
	check_key4(&p, CLIENT, VIP, 40000, 80, 6);
}

static void t_qinq(void **st)
{
	struct pb_spec s;
	int n;

	tcp4(&s);
	s.vlan = 100;
	s.vlan2 = 200;
	n = build(&s);
	expect_drop(F, n, FG_DROP_vlan_qinq);
}

static void t_v4_options(void **st)
{
	struct pb_spec s;
	struct fg_pkt p;
	int n;

	tcp4(&s);
	s.ip_opts = 8;
	n = build(&s);
	assert_int_equal(fg_pkt_parse(F, n, &p), FG_PK_FLOW);
	assert_int_equal(p.l4_off, 14 + 28);
	assert_true(p.flags & FG_PF_IP_OPTS);
	check_key4(&p, CLIENT, VIP, 40000, 80, 6);
	s.ip_opts = 40; /* IHL 15 */
	n = build(&s);
	assert_int_equal(fg_pkt_parse(F, n, &p), FG_PK_FLOW);
	assert_int_equal(p.l4_off, 14 + 60);
}

static void t_v4_bad_ihl(void **st)
{
	struct pb_spec s;
	int n;

	tcp4(&s);
	n = build(&s);
	F[14] = 0x44; /* IHL 4 */
	expect_drop(F, n, FG_DROP_ipv4_bad_ihl);
	F[14] = 0x4f; /* IHL 15 = 60 bytes, frame has 20 + 30 after L2 */
	s.payload = 0;
	n = build(&s);
	F[14] = 0x4f;
	expect_drop(F, 14 + 40, FG_DROP_ipv4_bad_ihl);
	F[14] = 0x45;
	F[14] = 0x55; /* version 5 */
	expect_drop(F, n, FG_DROP_ipv4_bad_version);
}

static void t_v4_bad_len(void **st)
{
	struct pb_spec s;
	int n;

	tcp4(&s);
	n = build(&s);
	F[16] = 0x7f; /* total length 0x7f.. > frame */
	expect_drop(F, n, FG_DROP_ipv4_bad_len);
	n = build(&s);
	F[16] = 0;
	F[17] = 19; /* < IHL */
	expect_drop(F, n, FG_DROP_ipv4_bad_len);
}

static void t_v4_bad_csum(void **st)
{
	struct pb_spec s;
	struct fg_pkt p;
	int n;

	tcp4(&s);
	n = build(&s);
	assert_int_equal(fg_pkt_parse_ex(F, n, &p, FG_PARSE_CHECK_CSUM),
			 FG_PK_FLOW);
	F[24] ^= 0x55;
	assert_int_equal(fg_pkt_parse(F, n, &p), FG_PK_FLOW); /* not checked */
	assert_int_equal(fg_pkt_parse_ex(F, n, &p, FG_PARSE_CHECK_CSUM),
			 FG_PK_DROP);
	assert_int_equal(p.drop, FG_DROP_ipv4_bad_csum);
}

static void t_tcp_bad_doff(void **st)
{
	struct pb_spec s;
	int n;

	tcp4(&s);
	s.payload = 0;
	n = build(&s);
	F[34 + 12] = 0x40; /* doff 4 */
	expect_drop(F, n, FG_DROP_tcp_bad_doff);
	F[34 + 12] = 0x60; /* doff 6 = 24 > 20 bytes of L4 */
	expect_drop(F, n, FG_DROP_tcp_bad_doff);
	s.tcp_opts = 4; /* doff 6 valid */
	n = build(&s);
	{
		struct fg_pkt p;

		assert_int_equal(fg_pkt_parse(F, n, &p), FG_PK_FLOW);
	}
}

static void t_tcp_opts_ok(void **st)
{
	struct pb_spec s;
	struct fg_pkt p;
	int n;

	tcp4(&s);
	s.tcp_opts = 40; /* doff 15 */
	s.payload = 0;
	n = build(&s);
	assert_int_equal(fg_pkt_parse(F, n, &p), FG_PK_FLOW);
}

static void t_udp_bad_len(void **st)
{
	struct pb_spec s;
	int n;

	tcp4(&s);
	s.proto = 17;
	n = build(&s);
	F[34 + 4] = 0;
	F[34 + 5] = 7;
	expect_drop(F, n, FG_DROP_udp_bad_len);
	F[34 + 5] = 200;
	expect_drop(F, n, FG_DROP_udp_bad_len);
}

static void t_v4_frag_first(void **st)
{
	struct pb_spec s;
	struct fg_pkt p;
	int n;

	tcp4(&s);
	s.proto = 17;
	s.mf = 1;
	n = build(&s);
	F[34 + 5] = 0xff; /* UDP length = whole datagram, longer than this */
	assert_int_equal(fg_pkt_parse(F, n, &p), FG_PK_FLOW);
	assert_true(p.flags & FG_PF_FRAG);
	check_key4(&p, CLIENT, VIP, 40000, 80, 17);
}

static void t_v4_frag_later(void **st)
{
	struct pb_spec s;
	struct fg_pkt p;
	int n;

	tcp4(&s);
	s.frag_off = 185; /* 1480 bytes */
	s.payload = 100;
	n = build(&s);
	assert_int_equal(fg_pkt_parse(F, n, &p), FG_PK_FRAG_LATER);
	/* the datagram's IP ID in sport (fg_pktbuild's default 0x1234) */
	check_key4(&p, CLIENT, VIP, 0x1234, 0, 6);
	assert_int_equal(p.l4_off, 34);
	s.frag_off = 0x1fff; /* offset + length > 65535 */
	n = build(&s);
	expect_drop(F, n, FG_DROP_ipv4_bad_frag);
}

static void t_ttl(void **st)
{
	struct pb_spec s;
	struct fg_pkt p;
	int n;

	tcp4(&s);
	s.ttl = 1;
	n = build(&s);
	expect_drop(F, n, FG_DROP_ttl_expired);
	s.ttl = 2;
	n = build(&s);
	assert_int_equal(fg_pkt_parse(F, n, &p), FG_PK_FLOW);
	tcp6(&s);
	s.ttl = 1;
	n = build(&s);
	expect_drop(F, n, FG_DROP_ttl_expired);
	tcp4(&s);
	s.ttl = 1;
	s.frag_off = 10;
	n = build(&s);
	expect_drop(F, n, FG_DROP_ttl_expired);
}

static void t_v6_tcp(void **st)
{
	struct pb_spec s;
	struct fg_pkt p;
	int n;

	tcp6(&s);
	n = build(&s);
	assert_int_equal(fg_pkt_parse(F, n, &p), FG_PK_FLOW);
	assert_int_equal(p.family, CT_V6);
	assert_int_equal(p.l4_off, 54);
	assert_int_equal(p.l3_len, 40 + 30);
	check_key6(&p, CLIENT6, VIP6, 40000, 80, 6);
	assert_int_equal(fg_pkt_sig(&p), ct_hash_crc(&p.key.k6, 48));
}

static void t_v6_ext_chain(void **st)
{
	struct pb_spec s;
	struct fg_pkt p;
	int n;

	tcp6(&s);
	s.proto = 17;
	s.n_ext = 3;
	s.ext[0] = 0;
	s.ext[1] = 60;
	s.ext[2] = 43;
	n = build(&s);
	assert_int_equal(fg_pkt_parse(F, n, &p), FG_PK_FLOW);
	assert_int_equal(p.l4_off, 54 + 24);
	assert_true(p.flags & FG_PF_IP_OPTS);
	check_key6(&p, CLIENT6, VIP6, 40000, 80, 17);
}

static void t_v6_ext_too_long(void **st)
{
	struct pb_spec s;
	struct fg_pkt p;
	int n, i;

	tcp6(&s);
	s.n_ext = FG_PKT_V6_EXT_MAX;
	for (i = 0; i < s.n_ext; i++)
		s.ext[i] = 60;
	n = build(&s);
	assert_int_equal(fg_pkt_parse(F, n, &p), FG_PK_FLOW);
	s.n_ext = FG_PKT_V6_EXT_MAX + 1;
	s.ext[FG_PKT_V6_EXT_MAX] = 60;
	n = build(&s);
	expect_drop(F, n, FG_DROP_ipv6_ext_chain_too_long);
}

static void t_v6_ah_esp(void **st)
{
	struct pb_spec s;
	int n;

	tcp6(&s);
	s.n_ext = 1;
	s.ext[0] = 51;
	n = build(&s);
	expect_drop(F, n, FG_DROP_ipsec_unsupported);
	tcp6(&s);
	s.proto = 50;
	n = build(&s);
	expect_drop(F, n, FG_DROP_ipsec_unsupported);
	tcp4(&s);
	s.proto = 51;
	n = build(&s);
	expect_drop(F, n, FG_DROP_ipsec_unsupported);
	tcp6(&s);
	s.n_ext = 1;
	s.ext[0] = 135; /* mobility */
	n = build(&s);
	expect_drop(F, n, FG_DROP_ipv6_unsupported_ext);
}

static void t_v6_frag(void **st)
{
	struct pb_spec s;
	struct fg_pkt p;
	int n;

	tcp6(&s);
	s.v6_frag = 1;
	s.mf = 1;
	n = build(&s);
	assert_int_equal(fg_pkt_parse(F, n, &p), FG_PK_FLOW);
	assert_true(p.flags & FG_PF_FRAG);
	assert_int_equal(p.l4_off, 54 + 8);
	check_key6(&p, CLIENT6, VIP6, 40000, 80, 6);
	s.frag_off = 100;
	n = build(&s);
	assert_int_equal(fg_pkt_parse(F, n, &p), FG_PK_FRAG_LATER);
	/* the fragment header's 32-bit ID (fg_pktbuild's 0xab000001) */
	check_key6(&p, CLIENT6, VIP6, 0xab00, 0x0001, 6);
}

/* A first fragment's follow key (fg_pkt_frag_key) is the key its own
 * later fragments parse to, and no other datagram's: IPv4 and IPv6 (the
 * fragment header behind a destination options header), IDs @p a and
 * @p b; both later fragments dispatch like their first one (addresses
 * only). */
static void frag_key_case(int v6, uint32_t a, uint32_t b)
{
	struct pb_spec s;
	struct fg_pkt first, follow, la, lb;
	int n;

	if (v6) {
		tcp6(&s);
		s.v6_frag = 1;
		s.n_ext = 1;
		s.ext[0] = 60;
	} else {
		tcp4(&s);
	}
	s.proto = 17;
	s.ip_id_set = 1;
	s.ip_id = a;
	s.mf = 1;
	n = build(&s);
	assert_int_equal(fg_pkt_parse(F, n, &first), FG_PK_FLOW);
	assert_true(first.flags & FG_PF_FRAG);
	assert_int_equal(fg_pkt_frag_key(F, n, &first, &follow), 0);
	assert_int_equal(follow.kind, FG_PK_FRAG_LATER);
	s.mf = 0;
	s.frag_off = 3;
	n = build(&s);
	assert_int_equal(fg_pkt_parse(F, n, &la), FG_PK_FRAG_LATER);
	s.ip_id = b;
	n = build(&s);
	assert_int_equal(fg_pkt_parse(F, n, &lb), FG_PK_FRAG_LATER);
	if (v6) {
		check_key6(&la, CLIENT6, VIP6, (uint16_t)(a >> 16), (uint16_t)a, 17);
		assert_memory_equal(&follow.key.k6, &la.key.k6, sizeof(la.key.k6));
		assert_memory_not_equal(&follow.key.k6, &lb.key.k6, sizeof(lb.key.k6));
	} else {
		check_key4(&la, CLIENT, VIP, (uint16_t)a, 0, 17);
		assert_memory_equal(&follow.key.k4, &la.key.k4, sizeof(la.key.k4));
		assert_memory_not_equal(&follow.key.k4, &lb.key.k4, sizeof(lb.key.k4));
	}
	assert_int_equal(fg_pkt_sig(&follow), fg_pkt_sig(&la));
	assert_int_not_equal(fg_pkt_sig(&la), fg_pkt_sig(&lb));
	/* not a first fragment: a later one, a whole packet */
	assert_int_equal(fg_pkt_frag_key(F, n, &lb, &follow), -EINVAL);
	s.frag_off = 0;
	n = build(&s);
	assert_int_equal(fg_pkt_parse(F, n, &first), FG_PK_FLOW);
	assert_int_equal(fg_pkt_frag_key(F, n, &first, &follow), -EINVAL);
}

static void t_frag_key(void **st)
{
	frag_key_case(0, 0x4242, 0x4243);
	frag_key_case(0, 0, 0xffff);
	frag_key_case(1, 0xdeadbeef, 0xdeadbeee);
	frag_key_case(1, 0x00010000, 0x00000001);
}

static void t_v6_bad(void **st)
{
	struct pb_spec s;
	int n;

	tcp6(&s);
	n = build(&s);
	F[14 + 4] = 0x10; /* payload length 4096+ */
	expect_drop(F, n, FG_DROP_ipv6_bad_len);
	n = build(&s);
	F[14] = 0x40;
	expect_drop(F, n, FG_DROP_ipv6_bad_version);
}

static void t_icmp_echo(void **st)
{
	struct pb_spec s;
	struct fg_pkt p;
	int n;

	tcp4(&s);
	s.proto = 1;
	s.icmp_type = 8;
	s.icmp_id = 0x4242;
	n = build(&s);
	assert_int_equal(fg_pkt_parse(F, n, &p), FG_PK_FLOW);
	check_key4(&p, CLIENT, VIP, 0x4242, 0, 1);
	s.icmp_type = 0;
	s.saddr = VIP;
	s.daddr = CLIENT;
	n = build(&s);
	assert_int_equal(fg_pkt_parse(F, n, &p), FG_PK_FLOW);
	assert_true(p.flags & FG_PF_ECHO_REPLY);
	check_key4(&p, VIP, CLIENT, 0, 0x4242, 1);
	tcp6(&s);
	s.proto = 58;
	s.icmp_type = 128;
	s.icmp_id = 7;
	n = build(&s);
	assert_int_equal(fg_pkt_parse(F, n, &p), FG_PK_FLOW);
	check_key6(&p, CLIENT6, VIP6, 7, 0, 58);
}

/* Embedded packet: what a DSR backend sent, VIP:80 -> client:40000. */
static int inner_reply(int v6, uint8_t proto, uint8_t *out)
{
	struct pb_spec s;

	memset(&s, 0, sizeof(s));
	s.v6 = v6;
	s.saddr = v6 ? VIP6 : VIP;
	s.daddr = v6 ? CLIENT6 : CLIENT;
	s.proto = proto;
	s.sport = 80;
	s.dport = 40000;
	s.df = 1;
	/* the quote: IP header + the first 8+ bytes of L4 */
	assert_true(pb_build(&s, F, sizeof(F)) > 0);
	memcpy(out, F + 14, (v6 ? 40 : 20) + (proto == 6 ? 20 : 8));
	return (v6 ? 40 : 20) + (proto == 6 ? 20 : 8);
}

static void t_icmp4_frag_needed(void **st)
{
	uint8_t in[128];
	struct pb_spec s;
	struct fg_pkt p;
	uint16_t il4;
	int n, il = inner_reply(0, 6, in);

	memset(&s, 0, sizeof(s));
	s.saddr = "192.0.2.254"; /* router */
	s.daddr = VIP;
	s.proto = 1;
	s.icmp_type = 3;
	s.icmp_code = 4;
	s.icmp_mtu = 1400;
	s.inner = in;
	s.inner_len = il;
	n = build(&s);
	assert_int_equal(fg_pkt_parse(F, n, &p), FG_PK_ICMP_ERR);
	assert_int_equal(p.proto, 1);
	/* tracked key: client:40000 -> VIP:80 */
	check_key4(&p, CLIENT, VIP, 40000, 80, 6);
	assert_int_equal(fg_pkt_icmp_inner(F, n, &p, &il4), 0);
	assert_int_equal(il4, 34 + 8 + 20);
	/* quote shorter than 8 L4 bytes */
	s.inner_len = 20 + 4;
	n = build(&s);
	expect_drop(F, n, FG_DROP_icmp_unrelated);
	/* time exceeded about UDP */
	il = inner_reply(0, 17, in);
	s.inner_len = il;
	s.icmp_type = 11;
	s.icmp_code = 0;
	n = build(&s);
	assert_int_equal(fg_pkt_parse(F, n, &p), FG_PK_ICMP_ERR);
	check_key4(&p, CLIENT, VIP, 40000, 80, 17);
	/* embedded GRE: unrelated */
	in[9] = 47;
	n = build(&s);
	expect_drop(F, n, FG_DROP_icmp_unrelated);
}

static void t_icmp6_ptb(void **st)
{
	uint8_t in[128];
	struct pb_spec s;
	struct fg_pkt p;
	uint16_t il4;
	int n, il = inner_reply(1, 6, in);

	memset(&s, 0, sizeof(s));
	s.v6 = 1;
	s.saddr = "2001:db8::fe";
	s.daddr = VIP6;
	s.proto = 58;
	s.icmp_type = 2;
	s.icmp_mtu = 1280;
	s.inner = in;
	s.inner_len = il;
	n = build(&s);
	assert_int_equal(fg_pkt_parse(F, n, &p), FG_PK_ICMP_ERR);
	assert_int_equal(p.proto, 58);
	check_key6(&p, CLIENT6, VIP6, 40000, 80, 6);
	assert_int_equal(fg_pkt_icmp_inner(F, n, &p, &il4), 0);
	assert_int_equal(il4, 54 + 8 + 40);
	s.icmp_type = 1; /* dest unreachable */
	s.icmp_code = 4;
	n = build(&s);
	assert_int_equal(fg_pkt_parse(F, n, &p), FG_PK_ICMP_ERR);
	s.inner_len = 30; /* inside the embedded IPv6 header */
	n = build(&s);
	expect_drop(F, n, FG_DROP_icmp_unrelated);
}

static void t_icmp_other(void **st)
{
	struct pb_spec s;
	struct fg_pkt p;
	int n;

	tcp6(&s);
	s.proto = 58;
	s.icmp_type = 134; /* router advertisement */
	s.ttl = 255;
	n = build(&s);
	assert_int_equal(fg_pkt_parse(F, n, &p), FG_PK_HOST);
	check_key6(&p, CLIENT6, VIP6, 0, 0, 58);
	tcp4(&s);
	s.proto = 1;
	s.icmp_type = 5; /* redirect */
	n = build(&s);
	assert_int_equal(fg_pkt_parse(F, n, &p), FG_PK_HOST);
	check_key4(&p, CLIENT, VIP, 0, 0, 1);
	tcp4(&s);
	s.proto = 47; /* GRE */
	n = build(&s);
	expect_drop(F, n, FG_DROP_l4_unsupported_proto);
}

static void t_arp(void **st)
{
	struct fg_pkt p;
	int n = pb_arp(1, MAC_C, "10.0.0.2", "10.0.0.1", 0, F, sizeof(F));

	assert_int_equal(fg_pkt_parse(F, n, &p), FG_PK_ARP);
	assert_false(p.flags & FG_PF_ARP_REPLY);
	check_key4(&p, "10.0.0.2", "10.0.0.1", 0, 0, 0);
	n = pb_arp(2, MAC_C, "10.0.0.2", "10.0.0.1", 7, F, sizeof(F));
	assert_int_equal(fg_pkt_parse(F, n, &p), FG_PK_ARP);
	assert_true(p.flags & FG_PF_ARP_REPLY);
	assert_int_equal(p.l3_off, 18);
	n = pb_arp(3, MAC_C, "10.0.0.2", "10.0.0.1", 0, F, sizeof(F));
	expect_drop(F, n, FG_DROP_arp_unsupported_op);
	n = pb_arp(1, MAC_C, "10.0.0.2", "10.0.0.1", 0, F, sizeof(F));
	F[14 + 5] = 16; /* plen */
	expect_drop(F, n, FG_DROP_arp_malformed);
	expect_drop(F, 14 + 27, FG_DROP_arp_malformed);
}

static void t_nd(void **st)
{
	struct fg_pkt p;
	int n = pb_ns(MAC_C, "fd00::2", "fd00::1", 255, 0, F, sizeof(F));

	assert_int_equal(fg_pkt_parse(F, n, &p), FG_PK_ND);
	check_key6(&p, "fd00::2", "fd00::1", 0, 0, 58);
	n = pb_ns(MAC_C, "fd00::2", "fd00::1", 64, 0, F, sizeof(F));
	expect_drop(F, n, FG_DROP_nd_malformed);
	n = pb_ns(MAC_C, "::", "fd00::1", 255, 0, F, sizeof(F));
	assert_int_equal(fg_pkt_parse(F, n, &p), FG_PK_ND);
}

/* Martian sources (martian_src) and src == dst (land), IPv4: every kind
 * of IP packet; ARP keeps its 0.0.0.0 probes. */
static void t_martian4(void **st)
{
	static const char *const bad[] = { "0.0.0.0", "0.1.2.3", "127.0.0.1",
					    "127.255.0.9", "224.0.0.5", "239.1.2.3",
					    "240.0.0.1", "255.255.255.255" };
	static const char *const good[] = { "1.0.0.1", "126.255.255.254",
					     "128.0.0.1", "223.255.255.254" };
	struct pb_spec s;
	struct fg_pkt p;
	unsigned int i;
	int n;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		tcp4(&s);
		s.saddr = bad[i];
		expect_drop(F, build(&s), FG_DROP_martian_src);
		s.proto = 17;
		expect_drop(F, build(&s), FG_DROP_martian_src);
		s.proto = 1;
		s.icmp_type = 8;
		expect_drop(F, build(&s), FG_DROP_martian_src);
		tcp4(&s);
		s.saddr = bad[i];
		s.frag_off = 100; /* a later fragment */
		expect_drop(F, build(&s), FG_DROP_martian_src);
		tcp4(&s);
		s.saddr = bad[i];
		s.vlan = 7;
		expect_drop(F, build(&s), FG_DROP_martian_src);
	}
	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		tcp4(&s);
		s.saddr = good[i];
		n = build(&s);
		assert_int_equal(fg_pkt_parse(F, n, &p), FG_PK_FLOW);
		check_key4(&p, good[i], VIP, 40000, 80, 6);
	}
	/* land: src == dst, whatever the ports */
	tcp4(&s);
	s.saddr = VIP;
	expect_drop(F, build(&s), FG_DROP_land);
	s.sport = 80;
	expect_drop(F, build(&s), FG_DROP_land);
	s.proto = 17;
	expect_drop(F, build(&s), FG_DROP_land);
	s.proto = 6;
	s.frag_off = 3;
	expect_drop(F, build(&s), FG_DROP_land);
	/* the martian test comes first */
	tcp4(&s);
	s.saddr = s.daddr = "127.0.0.1";
	expect_drop(F, build(&s), FG_DROP_martian_src);
	/* ARP probe (RFC 5227): sender 0.0.0.0 */
	n = pb_arp(1, MAC_C, "0.0.0.0", "10.0.0.1", 0, F, sizeof(F));
	assert_int_equal(fg_pkt_parse(F, n, &p), FG_PK_ARP);
}

/* IPv6: ::1, ff00::/8, ::ffff:0:0/96 always; :: only for what stays on
 * the link (DAD, MLD, router solicitations), never what is forwarded. */
static void t_martian6(void **st)
{
	static const char *const bad[] = { "::1", "ff02::1", "ff0e::1:2",
					    "::ffff:192.0.2.10", "::ffff:0.0.0.0" };
	static const char *const good[] = { "::2", "::1:0:0:1", "::fffe:0:1",
					     "fe80::1", "fe00::1", "2001:db8::ffff" };
	struct pb_spec s;
	struct fg_pkt p;
	unsigned int i;
	int n;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		tcp6(&s);
		s.saddr = bad[i];
		expect_drop(F, build(&s), FG_DROP_martian_src);
		s.proto = 58;
		s.icmp_type = 134; /* even to the host */
		s.ttl = 255;
		expect_drop(F, build(&s), FG_DROP_martian_src);
		n = pb_ns(MAC_C, bad[i], "fd00::1", 255, 0, F, sizeof(F));
		expect_drop(F, n, FG_DROP_martian_src);
	}
	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		tcp6(&s);
		s.saddr = good[i];
		n = build(&s);
		assert_int_equal(fg_pkt_parse(F, n, &p), FG_PK_FLOW);
		check_key6(&p, good[i], VIP6, 40000, 80, 6);
	}
	/* :: forwarded: TCP, UDP, echo, an ICMPv6 error, a later fragment */
	tcp6(&s);
	s.saddr = "::";
	expect_drop(F, build(&s), FG_DROP_martian_src);
	s.proto = 17;
	expect_drop(F, build(&s), FG_DROP_martian_src);
	s.proto = 58;
	s.icmp_type = 128;
	expect_drop(F, build(&s), FG_DROP_martian_src);
	tcp6(&s);
	s.saddr = "::";
	s.v6_frag = 1;
	s.frag_off = 100;
	expect_drop(F, build(&s), FG_DROP_martian_src);
	{
		uint8_t inner[128];

		tcp6(&s);
		s.saddr = VIP6;
		s.daddr = CLIENT6;
		s.payload = 0;
		n = pb_build(&s, inner, sizeof(inner));
		assert_true(n > 14);
		tcp6(&s);
		s.saddr = "::";
		s.proto = 58;
		s.icmp_type = 2; /* packet too big */
		s.icmp_mtu = 1280;
		s.inner = inner + 14;
		s.inner_len = (uint32_t)n - 14;
		expect_drop(F, build(&s), FG_DROP_martian_src);
		s.saddr = "2001:db8::fe";
		n = build(&s);
		assert_int_equal(fg_pkt_parse(F, n, &p), FG_PK_ICMP_ERR);
	}
	/* :: on the link: DAD, MLD report, router solicitation */
	n = pb_ns(MAC_C, "::", "fd00::1", 255, 1, F, sizeof(F));
	assert_int_equal(fg_pkt_parse(F, n, &p), FG_PK_ND);
	tcp6(&s);
	s.saddr = "::";
	s.daddr = "ff02::16";
	s.proto = 58;
	s.icmp_type = 143; /* MLDv2 report */
	s.ttl = 1;
	n = build(&s);
	assert_int_equal(fg_pkt_parse(F, n, &p), FG_PK_HOST);
	s.daddr = "ff02::2";
	s.icmp_type = 133; /* router solicitation */
	s.ttl = 255;
	n = build(&s);
	assert_int_equal(fg_pkt_parse(F, n, &p), FG_PK_HOST);
	/* land */
	tcp6(&s);
	s.saddr = VIP6;
	expect_drop(F, build(&s), FG_DROP_land);
	s.proto = 58;
	s.icmp_type = 128;
	expect_drop(F, build(&s), FG_DROP_land);
	tcp6(&s);
	s.saddr = s.daddr = "::";
	expect_drop(F, build(&s), FG_DROP_land);
	s.saddr = s.daddr = "::1";
	expect_drop(F, build(&s), FG_DROP_martian_src);
}

/* Routing headers (RFC 5095, RFC 8200 4.4) and the hop-by-hop header's
 * place (RFC 8200 4.1). */
static void rh_case(uint8_t type, uint8_t left, int want)
{
	struct pb_spec s;
	struct fg_pkt p;
	int n;

	tcp6(&s);
	s.n_ext = 2;
	s.ext[0] = 60;
	s.ext[1] = 43;
	n = build(&s);
	F[14 + 40 + 8 + 2] = type;
	F[14 + 40 + 8 + 3] = left;
	if (want >= 0) {
		expect_drop(F, n, (enum fg_drop)want);
		return;
	}
	assert_int_equal(fg_pkt_parse(F, n, &p), FG_PK_FLOW);
	assert_int_equal(p.l4_off, 14 + 40 + 16);
	check_key6(&p, CLIENT6, VIP6, 40000, 80, 6);
}

static void t_v6_routing(void **st)
{
	struct pb_spec s;
	struct fg_pkt p;
	int n;

	rh_case(0, 0, FG_DROP_ipv6_rh0);
	rh_case(0, 1, FG_DROP_ipv6_rh0);
	rh_case(0, 255, FG_DROP_ipv6_rh0);
	rh_case(4, 1, FG_DROP_ipv6_rh_segments_left); /* SRH */
	rh_case(4, 3, FG_DROP_ipv6_rh_segments_left);
	rh_case(2, 1, FG_DROP_ipv6_rh_segments_left); /* mobile IPv6 */
	rh_case(200, 1, FG_DROP_ipv6_rh_segments_left);
	rh_case(4, 0, -1); /* SRH at its last segment: ignored */
	rh_case(2, 0, -1);
	rh_case(253, 0, -1);
	/* hop-by-hop: only first */
	tcp6(&s);
	s.n_ext = 2;
	s.ext[0] = 60;
	s.ext[1] = 0;
	expect_drop(F, build(&s), FG_DROP_ipv6_hbh_not_first);
	s.ext[0] = 0;
	s.ext[1] = 0;
	expect_drop(F, build(&s), FG_DROP_ipv6_hbh_not_first);
	s.n_ext = 1;
	s.ext[0] = 0;
	s.v6_frag = 1;
	s.mf = 1;
	n = build(&s);
	assert_int_equal(fg_pkt_parse(F, n, &p), FG_PK_FLOW);
	/* the same bytes read as a fragment header (offset 0, M 0) then a
	 * hop-by-hop header (the old fragment header, next header TCP) */
	F[14 + 6] = 44;
	F[14 + 40] = 0;
	F[14 + 40 + 2] = F[14 + 40 + 3] = 0;
	assert_int_equal(F[14 + 40 + 8], 6);
	expect_drop(F, n, FG_DROP_ipv6_hbh_not_first);
	/* inside an ICMPv6 error's quote: not a flow's packet */
	{
		uint8_t inner[128];

		tcp6(&s);
		s.saddr = VIP6;
		s.daddr = CLIENT6;
		s.payload = 0;
		s.n_ext = 1;
		s.ext[0] = 43;
		n = pb_build(&s, inner, sizeof(inner));
		assert_true(n > 14);
		inner[14 + 40 + 3] = 1; /* segments left */
		tcp6(&s);
		s.saddr = "2001:db8::fe";
		s.proto = 58;
		s.icmp_type = 2;
		s.icmp_mtu = 1280;
		s.inner = inner + 14;
		s.inner_len = (uint32_t)n - 14;
		expect_drop(F, build(&s), FG_DROP_icmp_unrelated);
	}
}

static void t_unknown_ethertype(void **st)
{
	struct pb_spec s;
	int n;

	tcp4(&s);
	n = build(&s);
	F[12] = 0x88;
	F[13] = 0xcc; /* LLDP */
	expect_drop(F, n, FG_DROP_unknown_ethertype);
}

static void t_jumbo(void **st)
{
	struct pb_spec s;
	struct fg_pkt p;
	int n;

	tcp4(&s);
	s.payload = 9000 - 40;
	n = build(&s);
	assert_int_equal(n, 9014);
	assert_int_equal(fg_pkt_parse(F, n, &p), FG_PK_FLOW);
	assert_int_equal(p.l3_len, 9000);
}

/* Every frame length short of a full packet drops with the reason of the
 * header the cut falls into. */
static void sweep(const struct pb_spec *s, uint32_t l3)
{
	struct fg_pkt p;
	uint8_t copy[PB_MAX_FRAME];
	int n = pb_build(s, copy, sizeof(copy));
	uint32_t len;

	assert_true(n > 0);
	assert_int_not_equal(fg_pkt_parse(copy, n, &p), FG_PK_DROP);
	for (len = 0; len < (uint32_t)n; len++) {
		/* exactly len bytes on the heap so ASan sees any over-read */
		uint8_t *b = test_malloc(len ? len : 1);
		int k;

		memcpy(b, copy, len);
		k = fg_pkt_parse(b, len, &p);
		test_free(b);
		assert_int_equal(k, FG_PK_DROP);
		if (len < 14)
			assert_int_equal(p.drop, FG_DROP_l2_truncated);
		else if (len < l3)
			assert_int_equal(p.drop, FG_DROP_vlan_truncated);
		else if (len < l3 + (s->v6 ? 40 : 20))
			assert_int_equal(p.drop, s->v6 ? FG_DROP_ipv6_truncated :
						 FG_DROP_ipv4_truncated);
		else
			assert_int_equal(p.drop, s->v6 ? FG_DROP_ipv6_bad_len :
						 FG_DROP_ipv4_bad_len);
	}
}

static void t_trunc_sweep(void **st)
{
	struct pb_spec s;

	tcp4(&s);
	sweep(&s, 14);
	s.vlan = 5;
	sweep(&s, 18);
	tcp6(&s);
	sweep(&s, 14);
	s.n_ext = 2;
	s.ext[0] = 0;
	s.ext[1] = 43;
	sweep(&s, 14);
}

/* xorshift64*: the mutation test's seeded generator */
static uint64_t rng_next(uint64_t *x)
{
	*x ^= *x >> 12;
	*x ^= *x << 25;
	*x ^= *x >> 27;
	return *x * 0x2545F4914F6CDD1DULL;
}

/* fg_pkt_parse's one-step IPv4/TCP path against the general parser
 * (FG_PARSE_GENERAL): the same 64 bytes out, and the same kind, for frames
 * around the path's edge.  Each frame is a valid IPv4 TCP frame (DF or not,
 * TCP options, payload, padding) with a few of its header bytes set to a
 * random or an edge value (type, version/IHL, length, fragment field, TTL,
 * protocol, data offset, flags) and a length cut or kept; fails when the
 * one-step path accepts a frame the general parser refuses or reads
 * differently, or writes one byte the general parser does not. */
static void t_one_step_matches_general(void **st)
{
	static const uint8_t offs[] = { 12, 13, 14, 15, 16, 17, 20, 21, 22, 23,
					26, 33, 34, 37, 46, 47, 14, 20, 23, 46 };
	static const uint8_t edges[] = { 0, 1, 2, 5, 6, 0x08, 0x14, 0x1f, 0x20,
					 0x3f, 0x40, 0x45, 0x46, 0x50, 0x54,
					 0x80, 0xf0, 0xff };
	static uint8_t big[70000];
	uint64_t x = 0x9e3779b97f4a7c15ULL;
	unsigned int flows = 0;

	for (unsigned int i = 0; i < 200000; i++) {
		struct pb_spec s;
		struct fg_pkt a, b;
		uint32_t len;
		int n, ka, kb;

		tcp4(&s);
		s.df = rng_next(&x) & 1;
		s.tcp_opts = (uint8_t)((rng_next(&x) % 3) * 4);
		s.payload = (uint16_t)(rng_next(&x) % 4 == 0 ? 0 : rng_next(&x) % 64);
		s.tcp_flags = (uint8_t)rng_next(&x);
		n = build(&s);
		len = (uint32_t)n;
		if (rng_next(&x) % 4 == 0)
			len += (uint32_t)(rng_next(&x) % 8); /* Ethernet padding */
		/* sequence and acknowledgement numbers, window, checksum and
		 * urgent pointer: none of the parser's business, and none may
		 * leak into what it writes */
		for (unsigned int o = 38; o < 54; o++)
			if (o != 46 && o != 47)
				F[o] = (uint8_t)rng_next(&x);
		for (unsigned int k = rng_next(&x) % 3; k > 0; k--) {
			uint8_t o = offs[rng_next(&x) % sizeof(offs)];

			F[o] = rng_next(&x) % 2 ? (uint8_t)rng_next(&x) :
			       edges[rng_next(&x) % sizeof(edges)];
		}
		if (rng_next(&x) % 8 == 0)
			len = (uint32_t)(rng_next(&x) % (len + 1));
		memset(&a, 0xa5, sizeof(a));
		memset(&b, 0x5a, sizeof(b));
		ka = fg_pkt_parse(F, len, &a);
		kb = fg_pkt_parse_ex(F, len, &b, FG_PARSE_GENERAL);
		if (ka != kb || memcmp(&a, &b, sizeof(a)) != 0)
			fprintf(stderr, "frame %u, len %u: kind %s / %s\n", i, len,
				fg_pkt_kind_name(ka), fg_pkt_kind_name(kb));
		assert_int_equal(ka, kb);
		assert_memory_equal(&a, &b, sizeof(a));
		flows += ka == FG_PK_FLOW;
	}
	/* most frames stay valid: the one-step path ran */
	assert_true(flows > 50000);
	/* longer than 16-bit offsets: both clamp alike */
	{
		struct pb_spec s;
		struct fg_pkt a, b;
		int n;

		tcp4(&s);
		n = build(&s);
		memcpy(big, F, (size_t)n);
		for (uint32_t len = 65530; len < 65545; len++) {
			big[16] = (uint8_t)((len - 14) >> 8);
			big[17] = (uint8_t)(len - 14);
			assert_int_equal(fg_pkt_parse(big, len, &a),
					 fg_pkt_parse_ex(big, len, &b, FG_PARSE_GENERAL));
			assert_memory_equal(&a, &b, sizeof(a));
		}
	}
}

/* IP length consistent but ending inside L4 / ext headers. */
static void t_l4_truncated(void **st)
{
	struct pb_spec s;
	uint32_t cut;
	int n;

	for (cut = 0; cut < 20; cut++) {
		tcp4(&s);
		n = build(&s);
		F[16] = 0;
		F[17] = (uint8_t)(20 + cut);
		expect_drop(F, n, FG_DROP_l4_truncated);
	}
	for (cut = 0; cut < 8; cut++) {
		tcp4(&s);
		s.proto = 17;
		n = build(&s);
		F[16] = 0;
		F[17] = (uint8_t)(20 + cut);
		expect_drop(F, n, FG_DROP_l4_truncated);
		s.proto = 1;
		s.icmp_type = 8;
		n = build(&s);
		F[16] = 0;
		F[17] = (uint8_t)(20 + cut);
		expect_drop(F, n, FG_DROP_l4_truncated);
	}
	for (cut = 0; cut < 20; cut++) {
		tcp6(&s);
		n = build(&s);
		F[18] = 0;
		F[19] = (uint8_t)cut;
		expect_drop(F, n, FG_DROP_l4_truncated);
	}
	for (cut = 0; cut < 16; cut++) {
		tcp6(&s);
		s.n_ext = 2;
		s.ext[0] = 0;
		s.ext[1] = 60;
		n = build(&s);
		F[18] = 0;
		F[19] = (uint8_t)cut;
		expect_drop(F, n, FG_DROP_ipv6_ext_truncated);
	}
}

static void t_names(void **st)
{
	assert_string_equal(fg_drop_names[FG_DROP_ttl_expired], "ttl_expired");
	assert_int_equal(fg_drop_from_name("tcp_bad_doff"), FG_DROP_tcp_bad_doff);
	assert_true(fg_drop_from_name("nope") < 0);
	assert_string_equal(fg_pkt_kind_name(FG_PK_ICMP_ERR), "icmp_err");
	assert_string_equal(fg_pkt_kind_name(99), "?");
	assert_int_equal(sizeof(struct fg_pkt), 64);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(t_v4_tcp),
		cmocka_unit_test(t_v4_udp),
		cmocka_unit_test(t_v4_padding),
		cmocka_unit_test(t_vlan),
		cmocka_unit_test(t_qinq),
		cmocka_unit_test(t_v4_options),
		cmocka_unit_test(t_v4_bad_ihl),
		cmocka_unit_test(t_v4_bad_len),
		cmocka_unit_test(t_v4_bad_csum),
		cmocka_unit_test(t_tcp_bad_doff),
		cmocka_unit_test(t_tcp_opts_ok),
		cmocka_unit_test(t_udp_bad_len),
		cmocka_unit_test(t_v4_frag_first),
		cmocka_unit_test(t_v4_frag_later),
		cmocka_unit_test(t_ttl),
		cmocka_unit_test(t_v6_tcp),
		cmocka_unit_test(t_v6_ext_chain),
		cmocka_unit_test(t_v6_ext_too_long),
		cmocka_unit_test(t_v6_ah_esp),
		cmocka_unit_test(t_v6_frag),
		cmocka_unit_test(t_frag_key),
		cmocka_unit_test(t_v6_bad),
		cmocka_unit_test(t_icmp_echo),
		cmocka_unit_test(t_icmp4_frag_needed),
		cmocka_unit_test(t_icmp6_ptb),
		cmocka_unit_test(t_icmp_other),
		cmocka_unit_test(t_arp),
		cmocka_unit_test(t_nd),
		cmocka_unit_test(t_martian4),
		cmocka_unit_test(t_martian6),
		cmocka_unit_test(t_v6_routing),
		cmocka_unit_test(t_unknown_ethertype),
		cmocka_unit_test(t_jumbo),
		cmocka_unit_test(t_trunc_sweep),
		cmocka_unit_test(t_l4_truncated),
		cmocka_unit_test(t_one_step_matches_general),
		cmocka_unit_test(t_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
