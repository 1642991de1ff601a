/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Rewrites: byte-exact expected outputs (built independently: literal
 * headers, or the builder's packet of the translated tuple) and checksums
 * verified by full recomputation in the builder's own code.
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

#include "fg_csum.h"
#include "fg_pktbuild.h"
#include "fg_rss.h"
#include "fg_xlate.h"

#define HEAD 128
static uint8_t BUF[HEAD + PB_MAX_FRAME + 128];
static uint8_t EXP[PB_MAX_FRAME + 256];

static const uint8_t LB_MAC[6] = { 0x02, 0, 0, 0, 0, 0x01 };
static const uint8_t NH_MAC[6] = { 0x02, 0, 0, 0, 0, 0xfe };
static const uint8_t CL_MAC[6] = { 0x02, 0, 0, 0, 0, 0xaa };

/* Loads a frame at BUF + HEAD; returns the frame descriptor. */
static struct fg_frame load(const struct pb_spec *s, struct fg_pkt *p)
{
	struct fg_frame f;
	int n = pb_build(s, BUF + HEAD, PB_MAX_FRAME);

	assert_true(n > 0);
	f.data = BUF + HEAD;
	f.len = (uint32_t)n;
	f.headroom = HEAD;
	f.tailroom = sizeof(BUF) - HEAD - n;
	assert_int_not_equal(fg_pkt_parse(f.data, f.len, p), FG_PK_DROP);
	return f;
}

static void spec_tcp4(struct pb_spec *s)
{
	memset(s, 0, sizeof(*s));
	s->saddr = "192.0.2.10";
	s->daddr = "10.100.0.1";
	s->proto = 6;
	s->sport = 40000;
	s->dport = 80;
	s->df = 1;
	s->payload = 20;
}

static void spec_tcp6(struct pb_spec *s)
{
	spec_tcp4(s);
	s->v6 = 1;
	s->saddr = "2001:db8::10";
	s->daddr = "fd00:100::1";
}

static void encap4(struct fg_encap *e)
{
	memset(e, 0, sizeof(*e));
	e->family = CT_V4;
	memcpy(e->src_mac, LB_MAC, 6);
	memcpy(e->dst_mac, NH_MAC, 6);
	inet_pton(AF_INET, "10.0.0.1", &e->src.v4);
	inet_pton(AF_INET, "10.1.0.1", &e->dst.v4);
	e->gue_port = htons(6080);
	e->mtu = 1500;
}

static void encap6(struct fg_encap *e)
{
	encap4(e);
	e->family = CT_V6;
	inet_pton(AF_INET6, "fd00::1", e->src.v6);
	inet_pton(AF_INET6, "fd00:1::1", e->dst.v6);
}

static uint16_t csum_be(const uint8_t *b, uint32_t n)
{
	uint32_t s = 0, i;

	for (i = 0; i + 1 < n; i += 2)
		s += (uint32_t)b[i] << 8 | b[i + 1];
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)~s;
}

static void expect_bytes(const uint8_t *got, uint32_t glen,
			 const uint8_t *want, uint32_t wlen)
{
	if (glen != wlen || memcmp(got, want, wlen)) {
		pb_hexdump("got", got, glen);
		pb_hexdump("want", want, wlen);
	}
	assert_int_equal(glen, wlen);
	assert_memory_equal(got, want, wlen);
}

/* fg_csum_fold (one add of the sum rotated) and fg_csum_apply64 against
 * the two-step folds of RFC 1071, on edge and seeded random sums: the
 * same 16 bits for every one, 0x0000 and 0xffff kept apart. */
static uint16_t fold_ref(uint32_t s)
{
	s = (s & 0xffff) + (s >> 16);
	s = (s & 0xffff) + (s >> 16);
	return (uint16_t)s;
}

static void t_csum_fold(void **st)
{
	static const uint32_t edge[] = { 0, 1, 0xffff, 0x10000, 0xfffe0001, 0xffff0000,
					 0xffff0001, 0xfffffffe, 0xffffffff, 0x8000ffff };
	uint64_t x = 0x243f6a8885a308d3ULL;

	(void)st;
	for (unsigned int i = 0; i < sizeof(edge) / sizeof(edge[0]); i++)
		assert_int_equal(fg_csum_fold(edge[i]), fold_ref(edge[i]));
	for (unsigned int i = 0; i < 4000000; i++) {
		uint32_t s;
		uint64_t d, r;
		uint16_t c;

		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		s = (uint32_t)x;
		assert_int_equal(fg_csum_fold(s), fold_ref(s));
		/* a diff of up to a few dozen words, as the rewrites sum */
		d = (x >> 20) * (1 + (x & 31));
		c = (uint16_t)(x >> 7);
		r = d + (uint16_t)~c;
		r = (r & 0xffffffffu) + (r >> 32);
		r = (r & 0xffffffffu) + (r >> 32);
		assert_int_equal(fg_csum_apply64(c, d), (uint16_t)~fold_ref((uint32_t)r));
	}
}

static void t_ipip4(void **st)
{
	struct pb_spec s;
	struct fg_pkt p;
	struct fg_encap e;
	struct fg_frame f;
	uint8_t inner[256];
	uint32_t il;
	uint16_t c;
	int r;

	spec_tcp4(&s);
	f = load(&s, &p);
	il = p.l3_len;
	memcpy(inner, f.data + 14, il);
	encap4(&e);
	r = fg_xlate_ipip(&f, &p, &e);
	assert_int_equal(r, 14 + 20 + il);
	assert_ptr_equal(f.data, BUF + HEAD - 20);
	assert_int_equal(f.headroom, HEAD - 20);
	{
		uint8_t hdr[34] = {
			0x02, 0, 0, 0, 0, 0xfe, 0x02, 0, 0, 0, 0, 0x01, 0x08, 0x00,
			0x45, 0x00, 0, (uint8_t)(20 + il), 0, 0, 0x40, 0x00,
			64, 4, 0, 0, 10, 0, 0, 1, 10, 1, 0, 1,
		};

		c = csum_be(hdr + 14, 20);
		hdr[24] = (uint8_t)(c >> 8);
		hdr[25] = (uint8_t)c;
		memcpy(EXP, hdr, 34);
		memcpy(EXP + 34, inner, il);
	}
	expect_bytes(f.data, f.len, EXP, 34 + il);
	assert_int_equal(pb_verify_csums(f.data, f.len), 0);
}

static void t_ipip6(void **st)
{
	struct pb_spec s;
	struct fg_pkt p;
	struct fg_encap e;
	struct fg_frame f;
	uint8_t inner[256];
	uint32_t il;
	int r;

	spec_tcp6(&s);
	f = load(&s, &p);
	il = p.l3_len;
	memcpy(inner, f.data + 14, il);
	encap6(&e);
	r = fg_xlate_ipip(&f, &p, &e);
	assert_int_equal(r, 14 + 40 + il);
	{
		uint8_t hdr[54] = {
			0x02, 0, 0, 0, 0, 0xfe, 0x02, 0, 0, 0, 0, 0x01, 0x86, 0xdd,
			0x60, 0, 0, 0, 0, (uint8_t)il, 41, 64,
			0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1,
			0xfd, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1,
		};

		memcpy(EXP, hdr, 54);
		memcpy(EXP + 54, inner, il);
	}
	expect_bytes(f.data, f.len, EXP, 54 + il);
	assert_int_equal(pb_verify_csums(f.data, f.len), 0);
}

/* IPv4 inner over IPv6 outer (next header 4), VLAN egress, padded input. */
static void t_ipip_mixed_vlan_padding(void **st)
{
	struct pb_spec s;
	struct fg_pkt p;
	struct fg_encap e;
	struct fg_frame f;
	uint32_t tail;
	int r;

	spec_tcp4(&s);
	s.proto = 17;
	s.payload = 0; /* 42 bytes -> padded to 60 */
	s.vlan = 9;
	f = load(&s, &p);
	assert_int_equal(f.len, 60);
	assert_int_equal(p.l3_len, 28);
	tail = f.tailroom;
	encap6(&e);
	e.vlan = 33;
	r = fg_xlate_ipip(&f, &p, &e);
	assert_int_equal(r, 18 + 40 + 28);
	assert_int_equal(f.tailroom, tail + (60 - 18 - 28));
	assert_int_equal(f.data[12], 0x81);
	assert_int_equal(f.data[15], 33);
	assert_int_equal(f.data[16], 0x86);
	assert_int_equal(f.data[18 + 6], 4);
	assert_int_equal(pb_verify_csums(f.data, f.len), 0);
	/* flowgate does not decapsulate: outer protocol 4 is unsupported */
	assert_int_equal(fg_pkt_parse(f.data, f.len, &p), FG_PK_DROP);
	assert_int_equal(p.drop, FG_DROP_l4_unsupported_proto);
}

static void t_gue4(void **st)
{
	struct pb_spec s;
	struct fg_pkt p;
	struct fg_encap e;
	struct fg_frame f;
	uint8_t inner[256];
	uint32_t il, h;
	int r;

	spec_tcp4(&s);
	f = load(&s, &p);
	il = p.l3_len;
	memcpy(inner, f.data + 14, il);
	h = fg_rss_hash(&p);
	encap4(&e);
	r = fg_xlate_gue(&f, &p, &e, h);
	assert_int_equal(r, 14 + 28 + il);
	assert_int_equal(f.data[14 + 9], 17);
	assert_int_equal(f.data[14 + 20] << 8 | f.data[14 + 21],
			 0xC000 | (h & 0x3FFF));
	assert_int_equal(f.data[14 + 22] << 8 | f.data[14 + 23], 6080);
	assert_int_equal(f.data[14 + 24] << 8 | f.data[14 + 25], 8 + il);
	assert_int_equal(f.data[14 + 26] | f.data[14 + 27], 0);
	assert_memory_equal(f.data + 42, inner, il);
	assert_int_equal(f.data[42] >> 6, 1); /* GUE v1: IPv4 version nibble */
	assert_int_equal(pb_verify_csums(f.data, f.len), 0);
}

static void t_gue6_hdr(void **st)
{
	struct pb_spec s;
	struct fg_pkt p;
	struct fg_encap e;
	struct fg_frame f;
	uint8_t inner[256];
	uint32_t il;
	int r;

	spec_tcp6(&s);
	f = load(&s, &p);
	il = p.l3_len;
	memcpy(inner, f.data + 14, il);
	encap6(&e);
	e.flags = FG_ENCAP_GUE_HDR;
	r = fg_xlate_gue(&f, &p, &e, 0x1234);
	assert_int_equal(r, 14 + 40 + 8 + 4 + il);
	assert_int_equal(f.data[14 + 6], 17);
	assert_int_equal(f.data[54] << 8 | f.data[55], 0xC000 | 0x1234);
	assert_int_equal(f.data[58] << 8 | f.data[59], 12 + il);
	assert_int_not_equal(f.data[60] << 8 | f.data[61], 0);
	assert_int_equal(f.data[62], 0);
	assert_int_equal(f.data[63], 41);
	assert_memory_equal(f.data + 66, inner, il);
	/* UDP checksum over pseudo header + GUE + inner, checked by builder */
	assert_int_equal(pb_verify_csums(f.data, f.len), 0);
	f.data[70] ^= 1;
	assert_int_not_equal(pb_verify_csums(f.data, f.len), 0);
}

/* Second chance: the previous owner rides in a GUE v0 header (flag
 * FG_GUE_FLAG_PREV, hlen 1 word for IPv4 / 4 for IPv6), the inner packet
 * untouched behind it; the MTU check counts the longer header. */
static void t_gue_prev(void **st)
{
	struct pb_spec s;
	struct fg_pkt p;
	struct fg_encap e;
	struct fg_frame f;
	uint8_t inner[256], prev6[16];
	uint32_t il;
	int r;

	spec_tcp4(&s);
	f = load(&s, &p);
	il = p.l3_len;
	memcpy(inner, f.data + 14, il);
	encap4(&e);
	e.flags = FG_ENCAP_GUE_PREV;
	inet_pton(AF_INET, "10.1.0.7", &e.prev.v4);
	assert_int_equal(fg_xlate_encap_hdr_len(&e, 1), 14 + 20 + 8 + 8);
	r = fg_xlate_gue(&f, &p, &e, 0x1234);
	assert_int_equal(r, 14 + 20 + 8 + 8 + il);
	assert_int_equal(f.data[14 + 9], 17);
	assert_int_equal(f.data[38] << 8 | f.data[39], 8 + 8 + il);
	assert_int_equal(f.data[42], 1);          /* v0, C 0, hlen 1 */
	assert_int_equal(f.data[43], 4);          /* IPv4 inside */
	assert_int_equal(f.data[44] << 8 | f.data[45], FG_GUE_FLAG_PREV);
	assert_memory_equal(f.data + 46, &e.prev.v4, 4);
	assert_memory_equal(f.data + 50, inner, il);
	assert_int_equal(pb_verify_csums(f.data, f.len), 0);

	spec_tcp6(&s);
	f = load(&s, &p);
	il = p.l3_len;
	memcpy(inner, f.data + 14, il);
	encap6(&e);
	e.flags = FG_ENCAP_GUE_PREV;
	inet_pton(AF_INET6, "fd00:1::7", prev6);
	memcpy(e.prev.v6, prev6, 16);
	r = fg_xlate_gue(&f, &p, &e, 0x1234);
	assert_int_equal(r, 14 + 40 + 8 + 20 + il);
	assert_int_equal(f.data[62], 4);          /* hlen 4 words */
	assert_int_equal(f.data[63], 41);
	assert_int_equal(f.data[64] << 8 | f.data[65], FG_GUE_FLAG_PREV);
	assert_memory_equal(f.data + 66, prev6, 16);
	assert_memory_equal(f.data + 82, inner, il);
	assert_int_equal(pb_verify_csums(f.data, f.len), 0);

	/* 1500-byte MTU: 8 more header bytes than plain GUE */
	spec_tcp4(&s);
	s.payload = 1500 - 40 - 35;
	f = load(&s, &p);
	encap4(&e);
	e.flags = FG_ENCAP_GUE_PREV;
	assert_int_equal(fg_xlate_gue(&f, &p, &e, 1), -EMSGSIZE);
	s.payload = 1500 - 40 - 36;
	f = load(&s, &p);
	assert_int_equal(fg_xlate_gue(&f, &p, &e, 1), 1514);
}

static void t_encap_errors(void **st)
{
	struct pb_spec s;
	struct fg_pkt p;
	struct fg_encap e;
	struct fg_frame f, f0;

	spec_tcp4(&s);
	f = load(&s, &p);
	encap4(&e);
	f.headroom = 19;
	f0 = f;
	assert_int_equal(fg_xlate_ipip(&f, &p, &e), -ENOSPC);
	assert_memory_equal(&f, &f0, sizeof(f));
	s.payload = 1500 - 40 - 19;
	f = load(&s, &p);
	assert_int_equal(fg_xlate_ipip(&f, &p, &e), -EMSGSIZE);
	s.payload = 1500 - 40 - 20;
	f = load(&s, &p);
	assert_int_equal(fg_xlate_ipip(&f, &p, &e), 1514);
	f = load(&s, &p);
	assert_int_equal(fg_xlate_gue(&f, &p, &e, 1), -EMSGSIZE);
	e.mtu = 0;
	f = load(&s, &p);
	assert_int_equal(fg_xlate_gue(&f, &p, &e, 1), 1514 + 8);
	e.family = 7;
	f = load(&s, &p);
	assert_int_equal(fg_xlate_ipip(&f, &p, &e), -EINVAL);
	/* ARP cannot be encapsulated */
	encap4(&e);
	f.len = (uint32_t)pb_arp(1, CL_MAC, "10.0.0.2", "10.0.0.1", 0, f.data, 100);
	assert_int_equal(fg_pkt_parse(f.data, f.len, &p), FG_PK_ARP);
	assert_int_equal(fg_xlate_ipip(&f, &p, &e), -EINVAL);
}

/* Without an MTU, the outer length field is the limit: an IPv4 outer
 * header's total length (65535), an IPv6 one's payload length (65535
 * after its 40 bytes).  The template keeps the longest inner packet that
 * fits (fg_encap_tmpl::inner_max: the inline path compares once); with an
 * IPv4 outer header it is encapsulated and one byte more refused. */
static void t_encap_len_field(void **st)
{
	static uint8_t big[128 + 14 + 65535 + 64];
	static const struct { int v6, gue; uint32_t max; } c[] = {
		{ 0, 0, 65535 - 20 },      /* IP-in-IP */
		{ 0, 1, 65535 - 28 },      /* GUE: + UDP */
		{ 1, 0, 65535 },           /* IPv6 outer: payload length */
		{ 1, 1, 65535 - 8 },
	};

	(void)st;
	for (unsigned int i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		struct fg_encap e;
		struct fg_encap_tmpl t;

		c[i].v6 ? encap6(&e) : encap4(&e);
		e.mtu = 0;
		assert_int_equal(fg_xlate_encap_build(&t, &e, c[i].gue), 0);
		assert_int_equal(t.inner_max, c[i].max);
		/* a frame is at most 65535 bytes (the parser's offsets are
		 * 16-bit): the IPv6 outer limits are out of a packet's reach */
		for (uint32_t l3 = c[i].max - 1; l3 <= c[i].max + 1 && 14 + l3 <= 65535;
		     l3++) {
			uint8_t *d = big + 128, *ip = d + 14;
			struct fg_frame f = { d, 14 + l3, 128, 64 };
			struct fg_pkt p;

			memset(big, 0, sizeof(big));
			d[12] = 0x08;
			ip[0] = 0x45;
			ip[2] = (uint8_t)(l3 >> 8);
			ip[3] = (uint8_t)l3;
			ip[8] = 64;
			ip[9] = 6;
			ip[12] = 10, ip[15] = 2;
			ip[16] = 10, ip[19] = 1;
			ip[20 + 12] = 0x50;     /* TCP, 20-byte header */
			assert_int_equal(fg_pkt_parse(f.data, f.len, &p), FG_PK_FLOW);
			assert_int_equal(p.l3_len, l3);
			int r = fg_xlate_encap_apply(&f, &p, &t, 1);

			if (l3 <= c[i].max)
				assert_int_equal(r, t.len + l3);
			else
				assert_int_equal(r, -EMSGSIZE);
		}
	}
}

/* ICMP frag-needed for a DSR flow: forwarded as-is inside IPIP. */
/* A prebuilt template applied to many packets gives, for every one, the
 * bytes of a fresh fg_xlate_ipip / fg_xlate_gue: nothing of one packet
 * stays in the template for the next (the dataplane keeps one per backend
 * and worker).  Seeded random inner packets: both families, TCP / UDP,
 * TOS, DF, VLAN-tagged input, lengths up to the MTU; every outer
 * configuration: IPv4 / IPv6, IP-in-IP / GUE (direct, v0, second chance),
 * tagged or not. */
static void t_encap_tmpl_reuse(void **st)
{
	static uint8_t buf2[sizeof(BUF)];
	static const char *const v4[] = { "192.0.2.10", "198.51.100.7" };
	static const char *const v6[] = { "2001:db8::10", "2001:db8:5::99" };
	uint32_t seed = 0x5eed;

	(void)st;
	for (unsigned int cfg = 0; cfg < 16; cfg++) {
		struct fg_encap e;
		struct fg_encap_tmpl t;
		int gue = (cfg & 1) != 0;

		(cfg & 2) ? encap6(&e) : encap4(&e);
		e.vlan = (cfg & 4) ? 77 : 0;
		if (gue && (cfg & 8)) {
			e.flags = FG_ENCAP_GUE_PREV;
			memset(&e.prev, 0x5a, sizeof(e.prev));
		} else if (cfg & 8)
			e.mtu = 0;
		assert_int_equal(fg_xlate_encap_build(&t, &e, gue), 0);
		for (unsigned int i = 0; i < 400; i++) {
			struct pb_spec s;
			struct fg_pkt p, p2;
			struct fg_frame f, f2;
			int r, r2;

			seed = seed * 1103515245u + 12345u;
			spec_tcp4(&s);
			s.v6 = (seed >> 8) & 1;
			s.saddr = s.v6 ? v6[(seed >> 9) & 1] : v4[(seed >> 9) & 1];
			s.daddr = s.v6 ? "fd00:100::1" : "10.100.0.1";
			s.proto = (seed >> 10) & 1 ? 17 : 6;
			s.df = (seed >> 11) & 1;
			s.vlan = (seed >> 12) & 1 ? 9 : 0;
			s.payload = (uint16_t)((seed >> 13) % 1500);
			f = load(&s, &p);
			if (!s.v6) {
				/* a TOS (the header checksum follows) */
				uint8_t *ip = f.data + p.l3_off;
				uint16_t c;

				ip[1] = (uint8_t)(seed >> 3);
				ip[10] = ip[11] = 0;
				c = fg_csum(ip, 20);
				memcpy(ip + 10, &c, 2);
			}
			memcpy(buf2, BUF, sizeof(BUF));
			f2 = f;
			f2.data = buf2 + (f.data - BUF);
			p2 = p;
			r = fg_xlate_encap_apply(&f, &p, &t, seed);
			r2 = gue ? fg_xlate_gue(&f2, &p2, &e, seed) : fg_xlate_ipip(&f2, &p2, &e);
			assert_int_equal(r, r2);
			if (r < 0) {
				assert_int_equal(r, -EMSGSIZE);
				continue;
			}
			assert_int_equal(f.headroom, f2.headroom);
			assert_int_equal(f.tailroom, f2.tailroom);
			assert_memory_equal(f.data, f2.data, (size_t)r);
			assert_int_equal(pb_verify_csums(f.data, f.len), 0);
			/* the packet's own fields, not the previous packet's */
			const uint8_t *o = f.data + t.l2_len, *in = f.data + t.len;
			uint8_t tos = s.v6 ? (uint8_t)(in[0] << 4 | in[1] >> 4) : in[1];

			if (e.family == CT_V4) {
				assert_int_equal(o[1], tos);
				assert_int_equal(o[2] << 8 | o[3], r - t.l2_len);
				assert_int_equal(o[6], s.v6 || s.df ? 0x40 : 0);
				assert_int_equal(o[9], gue ? 17 : s.v6 ? 41 : 4);
			} else {
				assert_int_equal((o[0] & 0xf) << 4 | o[1] >> 4, tos);
				assert_int_equal(o[4] << 8 | o[5], r - t.l2_len - 40);
				assert_int_equal(o[6], gue ? 17 : s.v6 ? 41 : 4);
			}
		}
	}
}

static void t_icmp_err_forward(void **st)
{
	struct pb_spec s, in;
	struct fg_pkt p;
	struct fg_encap e;
	struct fg_frame f;
	uint8_t quote[64], inner[256];
	uint32_t il;
	int n;

	spec_tcp4(&in);
	in.saddr = "10.100.0.1";
	in.daddr = "192.0.2.10";
	in.sport = 80;
	in.dport = 40000;
	in.payload = 0;
	n = pb_build(&in, inner, sizeof(inner));
	assert_true(n > 0);
	memcpy(quote, inner + 14, 28);
	memset(&s, 0, sizeof(s));
	s.saddr = "192.0.2.254";
	s.daddr = "10.100.0.1";
	s.proto = 1;
	s.icmp_type = 3;
	s.icmp_code = 4;
	s.icmp_mtu = 1400;
	s.inner = quote;
	s.inner_len = 28;
	f = load(&s, &p);
	assert_int_equal(p.kind, FG_PK_ICMP_ERR);
	il = p.l3_len;
	memcpy(inner, f.data + 14, il);
	encap4(&e);
	assert_int_equal(fg_xlate_ipip(&f, &p, &e), 34 + il);
	assert_memory_equal(f.data + 34, inner, il);
	assert_int_equal(pb_verify_csums(f.data, f.len), 0);
}

/* NAT: the result must equal the builder's packet of the new tuple. */
static void nat_case(struct pb_spec *s, const char *ns, const char *nd,
		     uint16_t nsp, uint16_t ndp, int zero_udp_csum)
{
	struct fg_pkt p;
	struct fg_frame f;
	union {
		struct ct_key4 k4;
		struct ct_key6 k6;
	} to;
	uint8_t a[16], b[16];
	int n, ucs;

	f = load(s, &p);
	ucs = (int)p.l4_off + 6;
	if (zero_udp_csum) {
		f.data[ucs] = 0;
		f.data[ucs + 1] = 0;
	}
	memset(&to, 0, sizeof(to));
	pb_addr(ns, a);
	pb_addr(nd, b);
	if (s->v6) {
		memcpy(to.k6.saddr, a, 16);
		memcpy(to.k6.daddr, b, 16);
		to.k6.sport = htons(nsp);
		to.k6.dport = htons(ndp);
		to.k6.proto = s->proto;
	} else {
		memcpy(&to.k4.saddr, a, 4);
		memcpy(&to.k4.daddr, b, 4);
		to.k4.sport = htons(nsp);
		to.k4.dport = htons(ndp);
		to.k4.proto = s->proto;
	}
	assert_int_equal(fg_xlate_nat(&f, &p, &to), (int)f.len);
	s->saddr = ns;
	s->daddr = nd;
	if (s->proto == 1 || s->proto == 58)
		s->icmp_id = (p.flags & FG_PF_ECHO_REPLY) ? ndp : nsp;
	s->sport = nsp;
	s->dport = ndp;
	n = pb_build(s, EXP, sizeof(EXP));
	assert_true(n > 0);
	if (zero_udp_csum) {
		EXP[ucs] = 0;
		EXP[ucs + 1] = 0;
	}
	expect_bytes(f.data, f.len, EXP, (uint32_t)n);
	assert_int_equal(pb_verify_csums(f.data, f.len), 0);
	assert_int_equal(fg_xlate_csum_verify(f.data, &p), 0);
}

static void t_nat4_tcp_both_ways(void **st)
{
	struct pb_spec s;

	spec_tcp4(&s);
	/* request: client:40000->VIP:80  =>  local:31337->backend:8080 */
	nat_case(&s, "10.0.0.1", "10.1.0.3", 31337, 8080, 0);
	/* reply: backend:8080->local:31337  =>  VIP:80->client:40000 */
	spec_tcp4(&s);
	s.saddr = "10.1.0.3";
	s.daddr = "10.0.0.1";
	s.sport = 8080;
	s.dport = 31337;
	s.tcp_flags = 0x12;
	nat_case(&s, "10.100.0.3", "192.0.2.10", 80, 40000, 0);
}

static void t_nat4_udp(void **st)
{
	struct pb_spec s;

	spec_tcp4(&s);
	s.proto = 17;
	nat_case(&s, "10.0.0.1", "10.1.0.3", 1025, 53, 0);
	spec_tcp4(&s);
	s.proto = 17;
	nat_case(&s, "10.0.0.1", "10.1.0.3", 1025, 53, 1); /* csum 0 stays 0 */
}

static void t_nat4_icmp_echo(void **st)
{
	struct pb_spec s;

	spec_tcp4(&s);
	s.proto = 1;
	s.icmp_type = 8;
	s.icmp_id = 777;
	nat_case(&s, "10.0.0.1", "10.1.0.3", 5000, 0, 0);
	spec_tcp4(&s);
	s.proto = 1;
	s.icmp_type = 0;
	s.icmp_id = 5000;
	s.saddr = "10.1.0.3";
	s.daddr = "10.0.0.1";
	nat_case(&s, "10.100.0.3", "192.0.2.10", 0, 777, 0);
}

static void t_nat6(void **st)
{
	struct pb_spec s;

	spec_tcp6(&s);
	nat_case(&s, "fd00::1", "fd00:1::2", 20000, 8080, 0);
	spec_tcp6(&s);
	s.proto = 17;
	nat_case(&s, "fd00::1", "fd00:1::2", 20000, 8080, 0);
	spec_tcp6(&s);
	s.proto = 58;
	s.icmp_type = 128;
	s.icmp_id = 9;
	nat_case(&s, "fd00::1", "fd00:1::2", 4242, 0, 0);
	spec_tcp6(&s);
	s.n_ext = 1;
	s.ext[0] = 60;
	nat_case(&s, "fd00::1", "fd00:1::2", 20000, 8080, 0);
}

static void t_nat_frag_later_and_errors(void **st)
{
	struct pb_spec s;
	struct fg_pkt p;
	struct fg_frame f;
	struct ct_key4 to;

	spec_tcp4(&s);
	s.frag_off = 100;
	f = load(&s, &p);
	assert_int_equal(p.kind, FG_PK_FRAG_LATER);
	memset(&to, 0, sizeof(to));
	to.saddr = htonl(0x0a000001);
	to.daddr = htonl(0x0a010003);
	to.proto = 6;
	assert_int_equal(fg_xlate_nat(&f, &p, &to), (int)f.len);
	assert_memory_equal(f.data + 26, &to.saddr, 4);
	assert_memory_equal(f.data + 30, &to.daddr, 4);
	assert_int_equal(csum_be(f.data + 14, 20), 0);
	to.proto = 17;
	assert_int_equal(fg_xlate_nat(&f, &p, &to), -EINVAL);
	f.len = (uint32_t)pb_arp(1, CL_MAC, "10.0.0.2", "10.0.0.1", 0, f.data, 100);
	fg_pkt_parse(f.data, f.len, &p);
	assert_int_equal(fg_xlate_nat(&f, &p, &to), -EINVAL);
}

/* Quote of a packet: IP header + @p l4bytes of L4 (from the builder). */
static uint32_t quote_of(struct pb_spec *q, uint8_t *out, uint32_t l4bytes)
{
	uint8_t fr[512];
	int n = pb_build(q, fr, sizeof(fr));
	uint32_t ih = q->v6 ? 40 : 20;

	assert_true(n > 0);
	memcpy(out, fr + 14, ih + l4bytes);
	return ih + l4bytes;
}

static void icmp_nat_case(int v6, uint8_t inner_proto, uint32_t l4bytes)
{
	struct pb_spec s, q;
	struct fg_pkt p;
	struct fg_frame f;
	uint8_t quote[128];
	union {
		struct ct_key4 k4;
		struct ct_key6 k6;
	} outer, inner;
	int n;

	/* what the balancer sent: local:1024 -> backend:8080 */
	spec_tcp4(&q);
	q.v6 = v6;
	q.proto = inner_proto;
	q.saddr = v6 ? "fd00::1" : "10.0.0.1";
	q.daddr = v6 ? "fd00:1::2" : "10.1.0.2";
	q.sport = 1024;
	q.dport = 8080;
	q.icmp_type = v6 ? 128 : 8;
	q.icmp_id = 1024;
	q.ttl = 60;
	memset(&s, 0, sizeof(s));
	s.v6 = v6;
	s.saddr = v6 ? "fd00::fe" : "10.0.0.254";
	s.daddr = v6 ? "fd00::1" : "10.0.0.1";
	s.proto = v6 ? 58 : 1;
	s.icmp_type = v6 ? 2 : 3;
	s.icmp_code = v6 ? 0 : 4;
	s.icmp_mtu = 1280;
	s.inner = quote;
	s.inner_len = quote_of(&q, quote, l4bytes);
	f = load(&s, &p);
	assert_int_equal(p.kind, FG_PK_ICMP_ERR);
	/* to the client: VIP -> client, quoting client:40000 -> VIP:80 */
	memset(&outer, 0, sizeof(outer));
	memset(&inner, 0, sizeof(inner));
	if (v6) {
		pb_addr("fd00:100::1", outer.k6.saddr);
		pb_addr("2001:db8::10", outer.k6.daddr);
		pb_addr("2001:db8::10", inner.k6.saddr);
		pb_addr("fd00:100::1", inner.k6.daddr);
		inner.k6.sport = htons(40000);
		inner.k6.dport = htons(80);
		inner.k6.proto = inner_proto;
	} else {
		outer.k4.saddr = htonl(0x0a640003); /* 10.100.0.3 */
		outer.k4.daddr = htonl(0xc000020a); /* 192.0.2.10 */
		inner.k4.saddr = htonl(0xc000020a);
		inner.k4.daddr = htonl(0x0a640003);
		inner.k4.sport = htons(40000);
		inner.k4.dport = htons(80);
		inner.k4.proto = inner_proto;
	}
	assert_int_equal(fg_xlate_nat_icmp_err(&f, &p, &outer, &inner), (int)f.len);
	/* expected: the builder's error from VIP to client quoting the
	 * client's original packet */
	q.saddr = v6 ? "2001:db8::10" : "192.0.2.10";
	q.daddr = v6 ? "fd00:100::1" : "10.100.0.3";
	q.sport = 40000;
	q.dport = 80;
	q.icmp_id = 40000;
	s.saddr = v6 ? "fd00:100::1" : "10.100.0.3";
	s.daddr = v6 ? "2001:db8::10" : "192.0.2.10";
	s.inner_len = quote_of(&q, quote, l4bytes);
	n = pb_build(&s, EXP, sizeof(EXP));
	expect_bytes(f.data, f.len, EXP, (uint32_t)n);
	assert_int_equal(pb_verify_csums(f.data, f.len), 0);
}

static void t_nat_icmp_err(void **st)
{
	icmp_nat_case(0, 6, 20);  /* quote with the TCP checksum */
	icmp_nat_case(0, 6, 8);   /* minimal quote: ports only */
	icmp_nat_case(0, 17, 8);
	icmp_nat_case(0, 1, 8);   /* embedded echo request */
	icmp_nat_case(1, 6, 20);
	icmp_nat_case(1, 17, 8);
	icmp_nat_case(1, 58, 8);
}

static void t_ttl_dec(void **st)
{
	struct pb_spec s;
	struct fg_pkt p;
	struct fg_frame f;
	int n;

	spec_tcp4(&s);
	s.ip_opts = 4;
	f = load(&s, &p);
	assert_int_equal(fg_xlate_ttl_dec(f.data, &p), 0);
	s.ttl = 63;
	n = pb_build(&s, EXP, sizeof(EXP));
	expect_bytes(f.data, f.len, EXP, (uint32_t)n);
	spec_tcp6(&s);
	f = load(&s, &p);
	assert_int_equal(fg_xlate_ttl_dec(f.data, &p), 0);
	s.ttl = 63;
	n = pb_build(&s, EXP, sizeof(EXP));
	expect_bytes(f.data, f.len, EXP, (uint32_t)n);
	/* a parsed packet has TTL >= 2, but the helper still refuses 1 */
	f.data[14 + 7] = 1;
	assert_int_equal(fg_xlate_ttl_dec(f.data, &p), -ETIME);
}

/*
 * fg_xlate_nat4_apply() with the TTL (the dataplane's NAT hit) equals
 * fg_xlate_ttl_dec() then fg_xlate_nat(), byte for byte, with valid
 * checksums, over seeded random IPv4 TCP / UDP packets (TTLs 2..255,
 * options, DF, VLAN, UDP without checksum); a TTL of 1 is refused with
 * nothing written.
 */
static void t_nat4_ttl_merged(void **st)
{
	static uint8_t ref[HEAD + PB_MAX_FRAME + 128];
	uint32_t seed = 0x7711;
	char sa[16], da[16];
	struct ct_key4 to;

	for (int i = 0; i < 2000; i++) {
		struct pb_spec s;
		struct fg_pkt p;
		struct fg_frame f, g;

		seed = seed * 1103515245u + 12345u;
		spec_tcp4(&s);
		snprintf(sa, sizeof(sa), "192.0.%u.%u", seed >> 24, (seed >> 16) & 255);
		snprintf(da, sizeof(da), "10.100.0.%u", (seed >> 8) & 255);
		s.saddr = sa;
		s.daddr = da;
		s.proto = (seed >> 3) & 1 ? 17 : 6;
		s.ttl = (uint8_t)(2 + (seed >> 4) % 254);
		s.ip_opts = (seed >> 12) & 1 ? 8 : 0;
		s.df = (seed >> 13) & 1;
		s.vlan = (seed >> 14) & 1 ? 7 : 0;
		s.no_csum = s.proto == 17 && ((seed >> 15) & 3) == 0;
		s.sport = (uint16_t)(seed >> 7);
		s.payload = (uint16_t)((seed >> 17) % 300);
		f = load(&s, &p);
		assert_true(fg_xlate_nat4_fits(&p));
		memset(&to, 0, sizeof(to));
		to.saddr = htonl(0x0a000001 + (seed & 7));
		to.daddr = htonl(0x0a010000 + ((seed >> 5) & 0xffff));
		to.sport = htons((uint16_t)(1024 + (seed >> 9) % 64000));
		to.dport = htons(8080);
		to.proto = p.proto;
		memcpy(ref, BUF, sizeof(ref));
		g = f;
		g.data = ref + (f.data - BUF);
		assert_int_equal(fg_xlate_ttl_dec(g.data, &p), 0);
		assert_int_equal(fg_xlate_nat(&g, &p, &to), (int)g.len);
		assert_int_equal(fg_xlate_nat4_apply(&f, &p, &to, 1), (int)f.len);
		expect_bytes(f.data, f.len, g.data, g.len);
		if (!s.no_csum)   /* the verifier wants a UDP checksum */
			assert_int_equal(pb_verify_csums(f.data, f.len), 0);
	}
	/* TTL 1: refused, the frame as it was */
	{
		struct pb_spec s;
		struct fg_pkt p;
		struct fg_frame f;

		spec_tcp4(&s);
		f = load(&s, &p);
		f.data[p.l3_off + 8] = 1;
		memcpy(EXP, f.data, f.len);
		memset(&to, 0, sizeof(to));
		to.proto = p.proto;
		assert_int_equal(fg_xlate_nat4_apply(&f, &p, &to, 1), -ETIME);
		assert_memory_equal(f.data, EXP, f.len);
	}
}

static void t_eth(void **st)
{
	struct pb_spec s;
	struct fg_pkt p;
	struct fg_frame f;

	spec_tcp4(&s);
	s.vlan = 12;
	f = load(&s, &p);
	fg_xlate_eth(f.data, LB_MAC, NH_MAC);
	assert_memory_equal(f.data, NH_MAC, 6);
	assert_memory_equal(f.data + 6, LB_MAC, 6);
	assert_int_equal(f.data[12], 0x81);
	assert_int_equal(f.data[15], 12);
}

static void t_arp_reply(void **st)
{
	struct fg_pkt p;
	struct fg_frame f;
	uint8_t *a;

	f.data = BUF + HEAD;
	f.headroom = HEAD;
	f.len = (uint32_t)pb_arp(1, CL_MAC, "10.0.0.2", "10.100.0.1", 0, f.data, 100);
	f.tailroom = 100;
	assert_int_equal(fg_pkt_parse(f.data, f.len, &p), FG_PK_ARP);
	assert_int_equal(fg_xlate_arp_reply(&f, &p, LB_MAC), 60);
	a = f.data + 14;
	assert_memory_equal(f.data, CL_MAC, 6);
	assert_memory_equal(f.data + 6, LB_MAC, 6);
	assert_int_equal(a[7], 2);
	assert_memory_equal(a + 8, LB_MAC, 6);
	assert_memory_equal(a + 14, ((uint8_t[]){ 10, 100, 0, 1 }), 4);
	assert_memory_equal(a + 18, CL_MAC, 6);
	assert_memory_equal(a + 24, ((uint8_t[]){ 10, 0, 0, 2 }), 4);
	/* a reply is not answered */
	assert_int_equal(fg_pkt_parse(f.data, f.len, &p), FG_PK_ARP);
	assert_int_equal(fg_xlate_arp_reply(&f, &p, LB_MAC), -EINVAL);
}

static void t_nd_advert(void **st)
{
	struct fg_pkt p;
	struct fg_frame f;
	uint8_t tgt[16], sol[16];
	uint8_t *ip;

	pb_addr("fd00:100::1", tgt);
	pb_addr("fd00::2", sol);
	f.data = BUF + HEAD;
	f.headroom = HEAD;
	f.tailroom = 100;
	f.len = (uint32_t)pb_ns(CL_MAC, "fd00::2", "fd00:100::1", 255, 0, f.data, 200);
	assert_int_equal(fg_pkt_parse(f.data, f.len, &p), FG_PK_ND);
	assert_int_equal(fg_xlate_nd_advert(&f, &p, LB_MAC), 86);
	ip = f.data + 14;
	assert_memory_equal(f.data, CL_MAC, 6);
	assert_memory_equal(f.data + 6, LB_MAC, 6);
	assert_int_equal(ip[7], 255);
	assert_memory_equal(ip + 8, tgt, 16);
	assert_memory_equal(ip + 24, sol, 16);
	assert_int_equal(ip[40], 136);
	assert_int_equal(ip[44], 0x60);
	assert_memory_equal(ip + 48, tgt, 16);
	assert_int_equal(ip[64], 2);
	assert_memory_equal(ip + 66, LB_MAC, 6);
	assert_int_equal(pb_verify_csums(f.data, f.len), 0);
	assert_int_equal(fg_pkt_parse(f.data, f.len, &p), FG_PK_ND);
	assert_true(p.flags & FG_PF_ND_ADVERT);
	/* DAD NS (no option, 78 bytes): grows by 8, to all-nodes */
	f.len = (uint32_t)pb_ns(CL_MAC, "::", "fd00:100::1", 255, 1, f.data, 200);
	assert_int_equal(f.len, 78);
	f.tailroom = 7;
	fg_pkt_parse(f.data, f.len, &p);
	assert_int_equal(fg_xlate_nd_advert(&f, &p, LB_MAC), -ENOSPC);
	f.tailroom = 8;
	assert_int_equal(fg_xlate_nd_advert(&f, &p, LB_MAC), 86);
	assert_int_equal(f.tailroom, 0);
	assert_memory_equal(f.data, ((uint8_t[]){ 0x33, 0x33, 0, 0, 0, 1 }), 6);
	assert_int_equal(f.data[14 + 24], 0xff);
	assert_int_equal(f.data[14 + 44], 0x20);
	assert_int_equal(pb_verify_csums(f.data, f.len), 0);
}

/* xorshift64: seeded, so a failure replays */
static uint64_t rng_next(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

/* ARP requests the worker sends (fg_xlate_arp_request) against the test
 * builder's independent request, over seeded random addresses: byte for
 * byte, parsed as a request of the right tuple, and answered by its twin
 * fg_xlate_arp_reply() with the target as sender. */
static void t_arp_request(void **st)
{
	uint64_t x = 0x9e3779b97f4a7c15ull;
	uint8_t got[64], mac[6], sip[4], tip[4];
	char ssip[16], stip[16];

	for (int i = 0; i < 2000; i++) {
		uint64_t r = rng_next(&x), q = rng_next(&x);

		memcpy(mac, &r, 6);
		mac[0] &= 0xfe;
		memcpy(sip, &q, 4);
		memcpy(tip, (uint8_t *)&q + 4, 4);
		if (i == 0)
			memset(sip, 0, 4);
		snprintf(ssip, sizeof(ssip), "%u.%u.%u.%u", sip[0], sip[1], sip[2], sip[3]);
		snprintf(stip, sizeof(stip), "%u.%u.%u.%u", tip[0], tip[1], tip[2], tip[3]);
		assert_int_equal(fg_xlate_arp_request(got, sizeof(got), mac,
						      i == 0 ? NULL : sip, tip),
				 FG_XLATE_ARP_REQUEST_LEN);
		assert_int_equal(pb_arp(1, mac, ssip, stip, 0, EXP, sizeof(EXP)), 60);
		assert_memory_equal(got, EXP, 60);

		struct fg_pkt p;
		struct fg_frame f = { BUF + HEAD, 60, HEAD, 64 };

		memcpy(f.data, got, 60);
		assert_int_equal(fg_pkt_parse(f.data, f.len, &p), FG_PK_ARP);
		assert_false(p.flags & FG_PF_ARP_REPLY);
		assert_memory_equal(&p.key.k4.saddr, sip, 4);
		assert_memory_equal(&p.key.k4.daddr, tip, 4);
		assert_int_equal(fg_xlate_arp_reply(&f, &p, LB_MAC), 60);
		assert_int_equal(fg_pkt_parse(f.data, f.len, &p), FG_PK_ARP);
		assert_true(p.flags & FG_PF_ARP_REPLY);
		assert_memory_equal(f.data, mac, 6);
		assert_memory_equal(f.data + 14 + 14, tip, 4);
	}
	assert_int_equal(fg_xlate_arp_request(got, 59, LB_MAC, NULL, tip), -ENOSPC);
	assert_int_equal(fg_xlate_arp_request(NULL, 64, LB_MAC, NULL, tip), -EINVAL);
	assert_int_equal(fg_xlate_arp_request(got, 64, LB_MAC, NULL, NULL), -EINVAL);
}

/* Neighbour solicitations (fg_xlate_nd_solicit) against the builder's, over
 * seeded random addresses: byte for byte, checksums valid, parsed as an NS
 * for the target, and answered by its twin fg_xlate_nd_advert(). */
static void t_nd_solicit(void **st)
{
	uint64_t x = 0x2545f4914f6cdd1dull;
	uint8_t got[96], mac[6], sip[16], tgt[16];
	char ssip[48], stgt[48];

	for (int i = 0; i < 2000; i++) {
		uint64_t r = rng_next(&x);

		memcpy(mac, &r, 6);
		mac[0] &= 0xfe;
		for (int k = 0; k < 16; k += 8) {
			r = rng_next(&x);
			memcpy(sip + k, &r, 8);
			r = rng_next(&x);
			memcpy(tgt + k, &r, 8);
		}
		sip[0] = 0xfd; /* not :: (DAD) nor multicast */
		tgt[0] = 0xfd;
		assert_non_null(inet_ntop(AF_INET6, sip, ssip, sizeof(ssip)));
		assert_non_null(inet_ntop(AF_INET6, tgt, stgt, sizeof(stgt)));
		assert_int_equal(fg_xlate_nd_solicit(got, sizeof(got), mac, sip, tgt),
				 FG_XLATE_ND_SOLICIT_LEN);
		assert_int_equal(pb_ns(mac, ssip, stgt, 255, 0, EXP, sizeof(EXP)), 86);
		assert_memory_equal(got, EXP, 86);
		assert_int_equal(pb_verify_csums(got, 86), 0);

		struct fg_pkt p;
		struct fg_frame f = { BUF + HEAD, 86, HEAD, 64 };

		memcpy(f.data, got, 86);
		assert_int_equal(fg_pkt_parse(f.data, f.len, &p), FG_PK_ND);
		assert_false(p.flags & FG_PF_ND_ADVERT);
		assert_memory_equal(p.key.k6.saddr, sip, 16);
		assert_memory_equal(p.key.k6.daddr, tgt, 16);
		assert_int_equal(fg_xlate_nd_advert(&f, &p, LB_MAC), 86);
		assert_int_equal(fg_pkt_parse(f.data, f.len, &p), FG_PK_ND);
		assert_true(p.flags & FG_PF_ND_ADVERT);
		assert_memory_equal(f.data, mac, 6);
		assert_int_equal(pb_verify_csums(f.data, f.len), 0);
	}
	assert_int_equal(fg_xlate_nd_solicit(got, 85, LB_MAC, sip, tgt), -ENOSPC);
	assert_int_equal(fg_xlate_nd_solicit(got, 96, LB_MAC, NULL, tgt), -EINVAL);
}

static void t_csum_full_verify(void **st)
{
	struct pb_spec s;
	struct fg_pkt p;
	struct fg_frame f;
	int n;

	spec_tcp6(&s);
	s.proto = 17;
	f = load(&s, &p);
	n = (int)f.len;
	memcpy(EXP, f.data, n);
	assert_int_equal(fg_xlate_csum_verify(f.data, &p), 0);
	f.data[n - 1] ^= 0xff;
	assert_int_equal(fg_xlate_csum_verify(f.data, &p), -EBADMSG);
	assert_int_equal(fg_xlate_csum_full(f.data, &p), 0);
	assert_int_equal(fg_xlate_csum_verify(f.data, &p), 0);
	assert_int_equal(pb_verify_csums(f.data, f.len), 0);
	spec_tcp4(&s);
	s.ip_opts = 12;
	f = load(&s, &p);
	memcpy(EXP, f.data, f.len);
	f.data[24] = f.data[25] = 0;
	f.data[p.l4_off + 16] = 0x55;
	assert_int_equal(fg_xlate_csum_verify(f.data, &p), -EBADMSG);
	assert_int_equal(fg_xlate_csum_full(f.data, &p), 0);
	expect_bytes(f.data, f.len, EXP, f.len);
}

/* ---- ICMP frag-needed / packet-too-big for oversize packets (issue 9, defect 3) */

struct too_big_case {
	const char *name;
	int v6;
	uint16_t vlan;
	uint16_t payload;    /* TCP payload of the oversize packet */
	uint32_t mtu;        /* MTU argument */
	uint32_t want_mtu;   /* MTU in the message */
	uint32_t want_quote; /* bytes of the original IP packet quoted */
	int unreach;         /* UDP, fg_xlate_icmp_unreach (port unreachable) */
};

static const struct too_big_case too_big_cases[] = {
	{"v4 1500 B through IPIP: MTU 1480, 548 B quoted", 0, 0, 1460, 1480, 1480, 548},
	{"v4 through GUE, VLAN kept", 0, 42, 1460, 1472, 1472, 548},
	{"v4 short packet quoted whole", 0, 0, 20, 1000, 1000, 60},
	{"v6 1500 B: PTB 1460, 1232 B quoted", 1, 0, 1440, 1460, 1460, 1232},
	{"v6 MTU below 1280 raised to 1280", 1, 7, 1440, 1200, 1280, 1232},
	{"v6 jumbo, VLAN", 1, 7, 8900, 8960, 8960, 1232},
	{"v4 UDP, no backend: port unreachable", 0, 0, 100, 0, 0, 128, 1},
	{"v6 UDP, no backend: port unreachable, VLAN", 1, 9, 2000, 0, 0, 1232, 1},
};

static void t_icmp_too_big(void **st)
{
	const struct too_big_case *c = *st;
	struct pb_spec s, e;
	struct fg_pkt p, q;
	struct fg_frame f;
	static uint8_t orig[PB_MAX_FRAME];
	int n;

	if (c->v6)
		spec_tcp6(&s);
	else
		spec_tcp4(&s);
	s.vlan = c->vlan;
	s.tcp_flags = 0x18;
	s.payload = c->payload;
	if (c->unreach)
		s.proto = 17;
	f = load(&s, &p);
	memcpy(orig, f.data + p.l3_off, p.l3_len);
	uint8_t *end = f.data + f.len;

	n = c->unreach ? fg_xlate_icmp_unreach(&f, &p, LB_MAC) :
			 fg_xlate_icmp_too_big(&f, &p, c->mtu, LB_MAC);
	assert_true(n > 0);
	assert_int_equal(n, (int)f.len);
	/* headroom and tailroom still describe the same buffer */
	assert_ptr_equal(f.data + f.len + f.tailroom, BUF + sizeof(BUF));
	assert_ptr_equal(f.data - f.headroom, BUF);
	assert_true(f.data + f.len <= end);
	/* expected: built by the test builder, from the VIP to the client */
	memset(&e, 0, sizeof(e));
	e.v6 = c->v6;
	memcpy(e.src_mac, LB_MAC, 6);
	memcpy(e.dst_mac, CL_MAC, 6);
	e.vlan = c->vlan;
	e.saddr = s.daddr;
	e.daddr = s.saddr;
	e.proto = c->v6 ? 58 : 1;
	e.icmp_type = c->unreach ? (c->v6 ? 1 : 3) : (c->v6 ? 2 : 3);
	e.icmp_code = c->unreach ? (c->v6 ? 4 : 3) : (c->v6 ? 0 : 4);
	e.icmp_mtu = c->want_mtu;
	e.inner = orig;
	e.inner_len = c->want_quote;
	int m = pb_build(&e, EXP, sizeof(EXP));
	assert_true(m > 0);
	if (!c->v6) {
		/* the builder's IPv4 id is 0x1234; the error's is 0 */
		uint32_t l2 = c->vlan ? 18 : 14;

		EXP[l2 + 4] = EXP[l2 + 5] = 0;
		EXP[l2 + 10] = EXP[l2 + 11] = 0;
		uint16_t k = csum_be(EXP + l2, 20);

		EXP[l2 + 10] = (uint8_t)(k >> 8);
		EXP[l2 + 11] = (uint8_t)k;
	}
	expect_bytes(f.data, f.len, EXP, (uint32_t)m);
	assert_int_equal(pb_verify_csums(f.data, f.len), 0);
	assert_int_equal(fg_pkt_parse(f.data, f.len, &q), FG_PK_ICMP_ERR);
	assert_true(f.len - (c->vlan ? 18 : 14) <= (c->v6 ? 1280u : 576u));
}

static void t_icmp_too_big_errors(void **st)
{
	struct pb_spec s;
	struct fg_pkt p;
	struct fg_frame f, f0;

	spec_tcp4(&s);
	s.payload = 1460;
	f = load(&s, &p);
	f.headroom = 27;
	f0 = f;
	assert_int_equal(fg_xlate_icmp_too_big(&f, &p, 1480, LB_MAC), -ENOSPC);
	assert_memory_equal(&f, &f0, sizeof(f));
	spec_tcp6(&s);
	f = load(&s, &p);
	f.headroom = 47;
	assert_int_equal(fg_xlate_icmp_too_big(&f, &p, 1480, LB_MAC), -ENOSPC);
	/* never an error about an ICMP error */
	spec_tcp4(&s);
	s.proto = 1;
	s.icmp_type = 3;
	s.icmp_code = 4;
	s.icmp_mtu = 1400;
	{
		static uint8_t inner[28] = {0x45, 0, 0, 28, 0, 0, 0, 0, 64, 6};

		memcpy(inner + 12, "\x0a\x64\x00\x01\xc0\x00\x02\x0a", 8);
		s.inner = inner;
		s.inner_len = 28;
	}
	s.payload = 0;
	f = load(&s, &p);
	assert_int_equal(p.kind, FG_PK_ICMP_ERR);
	assert_int_equal(fg_xlate_icmp_too_big(&f, &p, 1480, LB_MAC), -EINVAL);
	assert_int_equal(fg_xlate_icmp_too_big(NULL, &p, 1480, LB_MAC), -EINVAL);
}

/* ---- TCP RST for a service without a usable backend (issue 9, defect 8) */

struct rst_case {
	const char *name;
	int v6;
	uint16_t vlan;
	uint8_t flags;
	uint16_t payload;
	uint8_t ip_opts, tcp_opts;
	uint32_t in_ack;     /* the segment's ack number */
	uint8_t want_flags;
	uint32_t want_seq, want_ack;
};

static const struct rst_case rst_cases[] = {
	{"v4 SYN: RST|ACK acking the SYN", 0, 0, 0x02, 0, 0, 0, 0, 0x14, 0, 2},
	{"v4 SYN with data and FIN", 0, 0, 0x03, 10, 0, 0, 0, 0x14, 0, 13},
	{"v4 ACK with data, IP options: RST seq = ack", 0, 0, 0x18, 20, 8, 0, 0x11223344, 0x04, 0x11223344, 0},
	{"v6 SYN with options, VLAN kept", 1, 7, 0x02, 0, 0, 8, 0, 0x14, 0, 2},
	{"v6 FIN|ACK", 1, 0, 0x11, 0, 0, 0, 77, 0x04, 77, 0},
};

static void t_tcp_rst(void **st)
{
	const struct rst_case *c = *st;
	struct pb_spec s;
	struct fg_pkt p, q;
	struct fg_frame f;
	uint32_t v, l2 = c->vlan ? 18 : 14;

	if (c->v6)
		spec_tcp6(&s);
	else
		spec_tcp4(&s);
	s.vlan = c->vlan;
	s.tcp_flags = c->flags;
	s.payload = c->payload;
	s.ip_opts = c->ip_opts;
	s.tcp_opts = c->tcp_opts;
	f = load(&s, &p);
	v = htonl(c->in_ack);
	memcpy(f.data + p.l4_off + 8, &v, 4);
	assert_int_equal(fg_xlate_tcp_rst(&f, &p, LB_MAC),
			 (int)(c->v6 ? l2 + 60 : (l2 + 40 > 60u ? l2 + 40 : 60u)));
	assert_memory_equal(f.data, CL_MAC, 6);
	assert_memory_equal(f.data + 6, LB_MAC, 6);
	assert_int_equal(pb_verify_csums(f.data, f.len), 0);
	assert_int_equal(fg_pkt_parse(f.data, f.len, &q), FG_PK_FLOW);
	assert_int_equal(q.vlan & 0xfff, c->vlan);
	assert_int_equal(q.tcp_flags, c->want_flags);
	if (c->v6) {
		assert_memory_equal(q.key.k6.saddr, p.key.k6.daddr, 16);
		assert_memory_equal(q.key.k6.daddr, p.key.k6.saddr, 16);
		assert_int_equal(q.key.k6.sport, p.key.k6.dport);
		assert_int_equal(q.key.k6.dport, p.key.k6.sport);
	} else {
		assert_int_equal(q.key.k4.saddr, p.key.k4.daddr);
		assert_int_equal(q.key.k4.daddr, p.key.k4.saddr);
		assert_int_equal(q.key.k4.sport, p.key.k4.dport);
		assert_int_equal(q.key.k4.dport, p.key.k4.sport);
		assert_int_equal(f.data[l2 + 8], 64);
	}
	memcpy(&v, f.data + q.l4_off + 4, 4);
	assert_int_equal(ntohl(v), c->want_seq);
	memcpy(&v, f.data + q.l4_off + 8, 4);
	assert_int_equal(ntohl(v), c->want_ack);
}

static void t_tcp_rst_errors(void **st)
{
	struct pb_spec s;
	struct fg_pkt p;
	struct fg_frame f;

	spec_tcp4(&s);
	s.tcp_flags = 0x04;   /* never a RST for a RST */
	f = load(&s, &p);
	assert_int_equal(fg_xlate_tcp_rst(&f, &p, LB_MAC), -EINVAL);
	s.tcp_flags = 0x02;
	s.proto = 17;
	f = load(&s, &p);
	assert_int_equal(fg_xlate_tcp_rst(&f, &p, LB_MAC), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(t_csum_fold),
		cmocka_unit_test(t_ipip4),
		cmocka_unit_test(t_ipip6),
		cmocka_unit_test(t_ipip_mixed_vlan_padding),
		cmocka_unit_test(t_gue4),
		cmocka_unit_test(t_gue6_hdr),
		cmocka_unit_test(t_gue_prev),
		cmocka_unit_test(t_encap_errors),
		cmocka_unit_test(t_encap_len_field),
		cmocka_unit_test(t_encap_tmpl_reuse),
		cmocka_unit_test(t_icmp_err_forward),
		cmocka_unit_test(t_nat4_tcp_both_ways),
		cmocka_unit_test(t_nat4_udp),
		cmocka_unit_test(t_nat4_icmp_echo),
		cmocka_unit_test(t_nat6),
		cmocka_unit_test(t_nat_frag_later_and_errors),
		cmocka_unit_test(t_nat_icmp_err),
		cmocka_unit_test(t_ttl_dec),
		cmocka_unit_test(t_nat4_ttl_merged),
		cmocka_unit_test(t_eth),
		cmocka_unit_test(t_arp_reply),
		cmocka_unit_test(t_nd_advert),
		cmocka_unit_test(t_arp_request),
		cmocka_unit_test(t_nd_solicit),
		cmocka_unit_test(t_csum_full_verify),
		cmocka_unit_test(t_icmp_too_big_errors),
		cmocka_unit_test(t_tcp_rst_errors),
	};
	struct CMUnitTest rst[sizeof(rst_cases) / sizeof(rst_cases[0])];
	struct CMUnitTest tb[(sizeof(too_big_cases) / sizeof(too_big_cases[0]))];
	int rc = cmocka_run_group_tests(tests, NULL, NULL);

	for (size_t i = 0; i < (sizeof(too_big_cases) / sizeof(too_big_cases[0])); i++) {
		tb[i] = (struct CMUnitTest)cmocka_unit_test_prestate(t_icmp_too_big,
								(void *)&too_big_cases[i]);
		tb[i].name = too_big_cases[i].name;
	}
	rc |= _cmocka_run_group_tests("icmp_too_big", tb, (sizeof(tb) / sizeof(tb[0])), NULL, NULL);
	for (size_t i = 0; i < sizeof(rst) / sizeof(rst[0]); i++) {
		rst[i] = (struct CMUnitTest)cmocka_unit_test_prestate(t_tcp_rst,
								(void *)&rst_cases[i]);
		rst[i].name = rst_cases[i].name;
	}
	return rc | _cmocka_run_group_tests("tcp_rst", rst, sizeof(rst) / sizeof(rst[0]),
					    NULL, NULL);
}
