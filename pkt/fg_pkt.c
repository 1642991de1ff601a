/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Parser entry points.  The parser itself is fg_pkt_parse.h, compiled here
 * over a plain pointer and by gpu/fg_gpu_kernels.cu over the kernel's frame
 * view: one source for both.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include <rte_branch_prediction.h>
#if defined(__SSE4_1__)
#include <smmintrin.h>
#endif

#include "fg_pkt.h"
#include "fg_pkt_parse.h"

/*
 * The dataplane's common frame in one step: untagged IPv4 without options
 * or fragmentation, TTL above 1, TCP with a data offset that fits.  Writes
 * what fg_pkt__parse() writes for it: one vector test of the fixed header
 * bytes and the lengths, then four 16-byte stores, instead of the general
 * parser's field-by-field walk and the zeroing before it
 * (scripts/cg-ipp.sh: 40 fewer instructions a packet, dsr-ipip and nat).
 * Returns false, having written nothing, for any other frame, and on a
 * build without SSE4.1: the general parser decides those.  The GPU and XDP
 * builds of the parser have no such path.  tests/pkt/test_parse.c
 * (t_one_step_matches_general) and tests/fuzz/fuzz_pkt.c hold the two to
 * the same 64 bytes on every frame, valid or mutated.
 */
static inline bool parse_v4_tcp(const uint8_t *r, uint32_t len, struct fg_pkt *out)
{
#if defined(__SSE4_1__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	/* bytes 12..27 that must hold these values: type 0x0800, version 4
	 * and IHL 5, no MF and offset 0 (DF free), protocol TCP */
	const __m128i fixed = _mm_setr_epi8(-1, -1, -1, 0, 0, 0, 0, 0,
					    0x3f, -1, 0, -1, 0, 0, 0, 0);
	const __m128i want = _mm_setr_epi8(0x08, 0x00, 0x45, 0, 0, 0, 0, 0,
					   0, 0, 0, FG_IPPROTO_TCP, 0, 0, 0, 0);
	/* struct fg_pkt's first 16 bytes: l2_len 14, l3_off 14, l4_off 34,
	 * (l3_len), vlan 0, family CT_V4, proto TCP, (tcp_flags), kind
	 * FG_PK_FLOW, drop 0, (flags) */
	const __m128i head = _mm_setr_epi16(14, 14, 34, 0, 0, FG_IPPROTO_TCP << 8,
					    FG_PK_FLOW << 8, 0);
	/* the key: saddr, daddr, ports as on the wire, proto TCP, pad 0 */
	const __m128i tuple = _mm_setr_epi32(-1, -1, -1, 0);
	const __m128i proto = _mm_setr_epi32(0, 0, 0, FG_IPPROTO_TCP);
	enum { IP = FG_ETH_HLEN, L4 = FG_ETH_HLEN + FG_IP4_MIN_HLEN };
	__m128i h, k, v;
	uint32_t tot, doff;
	uint8_t flags;

	_Static_assert(offsetof(struct fg_pkt, l3_len) == 6 &&
		       offsetof(struct fg_pkt, vlan) == 8 &&
		       offsetof(struct fg_pkt, family) == 10 &&
		       offsetof(struct fg_pkt, tcp_flags) == 12 &&
		       offsetof(struct fg_pkt, kind) == 13 &&
		       offsetof(struct fg_pkt, flags) == 15 &&
		       offsetof(struct fg_pkt, key) == 16 && sizeof(struct fg_pkt) == 64 &&
		       offsetof(struct ct_key4, proto) == 12 && CT_V4 == 0,
		       "parse_v4_tcp writes struct fg_pkt as two vectors and zeros");
	/* 14 + 20 + 20 bytes at least; 16-bit offsets (the general parser
	 * clamps a longer frame) */
	if (unlikely(len - (L4 + FG_TCP_MIN_HLEN) > 0xffffu - (L4 + FG_TCP_MIN_HLEN)))
		return false;
	h = _mm_loadu_si128((const __m128i *)(r + FG_ETH_TYPE_OFF));
	if (!_mm_testz_si128(_mm_xor_si128(_mm_and_si128(h, fixed), want),
			     _mm_set1_epi8(-1)))
		return false;
	tot = (uint32_t)r[IP + FG_IP4_TOTLEN_OFF] << 8 | r[IP + FG_IP4_TOTLEN_OFF + 1];
	doff = (uint32_t)(r[L4 + 12] >> 4) * 4;
	if (r[IP + FG_IP4_TTL_OFF] <= 1 || tot > len - IP ||
	    doff < FG_TCP_MIN_HLEN || doff + FG_IP4_MIN_HLEN > tot)
		return false;               /* TTL, lengths */
	if (fg_pkt__v4_martian(r[IP + FG_IP4_SADDR_OFF]) ||
	    fg_pkt__ld32(r + IP + FG_IP4_SADDR_OFF) == fg_pkt__ld32(r + IP + FG_IP4_DADDR_OFF))
		return false;               /* martian_src, land */
	flags = r[IP + FG_IP4_FRAG_OFF] & (FG_IP4_DF >> 8) ? FG_PF_DF : 0;
	v = _mm_insert_epi16(head, (int)tot, 3);
	v = _mm_insert_epi8(v, r[L4 + FG_TCP_FLAGS_OFF], 12);
	v = _mm_insert_epi8(v, flags, 15);
	k = _mm_loadu_si128((const __m128i *)(r + IP + FG_IP4_SADDR_OFF));
	k = _mm_or_si128(_mm_and_si128(k, tuple), proto);
	_mm_storeu_si128((__m128i *)out, v);
	_mm_storeu_si128((__m128i *)&out->key, k);
	_mm_storeu_si128((__m128i *)&out->key + 1, _mm_setzero_si128());
	_mm_storeu_si128((__m128i *)&out->key + 2, _mm_setzero_si128());
	return true;
#else
	return false;
#endif
}

int fg_pkt_parse_ex(const uint8_t *frame, uint32_t len, struct fg_pkt *out,
		    unsigned int opts)
{
	if (likely(opts == 0 && frame != NULL) && parse_v4_tcp(frame, len, out))
		return FG_PK_FLOW;
	memset(out, 0, sizeof(*out));
	if (unlikely(frame == NULL))
		return fg_pkt__drop(out, FG_DROP_l2_truncated);
	return fg_pkt__parse(frame, len, out, opts);
}

int fg_pkt_parse(const uint8_t *frame, uint32_t len, struct fg_pkt *out)
{
	return fg_pkt_parse_ex(frame, len, out, 0);
}

int fg_pkt_icmp_inner(const uint8_t *frame, uint32_t len,
		      const struct fg_pkt *p, uint16_t *inner_l4_off)
{
	uint32_t in, end;

	if (frame == NULL || p == NULL || inner_l4_off == NULL ||
	    p->kind != FG_PK_ICMP_ERR)
		return -EINVAL;
	in = (uint32_t)p->l4_off + 8;
	end = (uint32_t)p->l3_off + p->l3_len;
	if (end > len || in + 20 > end)
		return -EINVAL;
	if (p->family == CT_V4) {
		uint32_t ihl = (uint32_t)(frame[in] & 15) * 4;

		if (ihl < 20 || in + ihl > end)
			return -EINVAL;
		*inner_l4_off = (uint16_t)(in + ihl);
		return 0;
	} else {
		uint32_t l4 = in + 40;
		uint8_t nh, fl = 0;
		uint32_t frag = 0;

		if (l4 > end)
			return -EINVAL;
		nh = frame[in + 6];
		if (fg_pkt__v6_walk(frame, &l4, end, &nh, &fl, &frag) != FG_PKT__V6W_OK)
			return -EINVAL;
		*inner_l4_off = (uint16_t)l4;
		return 0;
	}
}

int fg_pkt_frag_key(const uint8_t *frame, uint32_t len, const struct fg_pkt *p,
		    struct fg_pkt *later)
{
	uint32_t ip, end, l4, frag = 0;
	uint8_t nh, fl = 0;

	if (frame == NULL || p == NULL || later == NULL ||
	    p->kind != FG_PK_FLOW || !(p->flags & FG_PF_FRAG))
		return -EINVAL;
	ip = p->l3_off;
	end = ip + (uint32_t)p->l3_len;
	if (end > len)
		return -EINVAL;
	*later = *p;
	later->kind = FG_PK_FRAG_LATER;
	later->flags &= (uint8_t)~(FG_PF_FRAG | FG_PF_ECHO_REPLY);
	later->tcp_flags = 0;
	if (p->family == CT_V4) {
		later->key.k4.sport = later->key.k4.dport = 0;
		fg_pkt__key_frag_id(later, frame, ip + FG_IP4_ID_OFF, 0);
		return 0;
	}
	/* the fragment header may sit anywhere in the chain: walk it again
	 * (first fragments are rare, and struct fg_pkt has no room for it) */
	l4 = ip + FG_IP6_HLEN;
	nh = frame[ip + FG_IP6_NXT_OFF];
	if (l4 > end ||
	    fg_pkt__v6_walk(frame, &l4, end, &nh, &fl, &frag) != FG_PKT__V6W_OK ||
	    frag == 0)
		return -EINVAL;
	/* a later fragment's protocol is its fragment header's next header
	 * (a destination options header may follow it in the first one) */
	later->key.k6.proto = frame[frag];
	fg_pkt__key_frag_id(later, frame, frag + FG_IP6_FRAG_ID_OFF, 1);
	return 0;
}

uint32_t fg_pkt_sig(const struct fg_pkt *p)
{
	if (p->family == CT_V6)
		return ct_key_sig(&p->key.k6, sizeof(p->key.k6));
	return ct_key_sig(&p->key.k4, sizeof(p->key.k4));
}

const char *fg_pkt_kind_name(unsigned int kind)
{
	static const char *const names[FG_PK_MAX] = {
		"drop", "flow", "frag_later", "icmp_err", "arp", "nd", "host",
	};

	return kind < FG_PK_MAX ? names[kind] : "?";
}

uint8_t fg_pkt_tcp_wscale(const uint8_t *th, uint32_t hlen)
{
	uint32_t o = FG_TCP_MIN_HLEN;

	while (o < hlen) {
		uint8_t kind = th[o];

		if (kind == 0) /* end of options */
			break;
		if (kind == 1) { /* no-op */
			o++;
			continue;
		}
		if (o + 1 >= hlen || th[o + 1] < 2 || o + th[o + 1] > hlen)
			break; /* malformed: no scale read from it */
		if (kind == 3 && th[o + 1] == 3)
			return th[o + 2] > 14 ? 14 : th[o + 2];
		o += th[o + 1];
	}
	return CT_SEG_NO_WSCALE;
}
