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

#include "fg_pkt.h"
#include "fg_pkt_parse.h"

/*
 * The dataplane's common frame in one step: untagged IPv4 without options
 * or fragmentation, TTL above 1, TCP with a data offset that fits.  Writes
 * what fg_pkt__parse() writes for it, as whole words: one test of the
 * fixed header bytes instead of the general parser's field-by-field walk
 * and the zeroing before it (scripts/cg-ipp.sh: 24 fewer instructions a
 * packet, dsr-ipip and nat).  Returns false, having written nothing, for
 * any other frame: the general parser decides those.  The GPU and XDP
 * builds of the parser have no such path.  tests/pkt/test_parse.c
 * (t_one_step_matches_general) and tests/fuzz/fuzz_pkt.c hold the two to
 * the same 64 bytes on every frame, valid or mutated.
 */
static inline bool parse_v4_tcp(const uint8_t *r, uint32_t len, struct fg_pkt *out)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	uint64_t a, b, addrs, w;
	uint32_t ports, tot, doff;

	_Static_assert(offsetof(struct fg_pkt, l3_len) == 6 &&
		       offsetof(struct fg_pkt, vlan) == 8 &&
		       offsetof(struct fg_pkt, flags) == 15 &&
		       offsetof(struct fg_pkt, key) == 16 && sizeof(struct fg_pkt) == 64 &&
		       offsetof(struct ct_key4, proto) == 12 && CT_V4 == 0,
		       "parse_v4_tcp writes struct fg_pkt as words");
	/* 14 + 20 + 20 bytes at least; 16-bit offsets (the general parser
	 * clamps a longer frame) */
	if (unlikely(len - 54 > 0xffffu - 54))
		return false;
	memcpy(&a, r + 12, 8);          /* type, version/IHL, TOS, length, id */
	memcpy(&b, r + 20, 8);          /* fragment, TTL, protocol, checksum.. */
	tot = __builtin_bswap16((uint16_t)(a >> 32));
	doff = (uint32_t)(r[46] >> 4) * 4;
	if ((a & 0xffffff) != 0x450008 ||            /* IPv4, IHL 5 */
	    (b & 0xff00ff3f) != (uint64_t)FG_IPPROTO_TCP << 24 || /* whole, TCP */
	    (uint8_t)(b >> 16) <= 1 ||               /* TTL */
	    tot > len - 14 || doff < 20 || doff + 20 > tot)
		return false;
	memcpy(&ports, r + 34, 4);
	memcpy(&addrs, r + 26, 8);      /* saddr, daddr */
	/* each word straight to its place: one store each, none read back */
	w = 14 | 14u << 16 | (uint64_t)34 << 32 | (uint64_t)tot << 48;
	memcpy(out, &w, 8);             /* l2_len, l3_off, l4_off, l3_len */
	w = (uint64_t)FG_IPPROTO_TCP << 24 | (uint64_t)r[47] << 32 |
	    (uint64_t)FG_PK_FLOW << 40 | (uint64_t)(b & 0x40 ? FG_PF_DF : 0) << 56;
	memcpy((uint8_t *)out + 8, &w, 8); /* vlan .. flags */
	memcpy(&out->key.k4, &addrs, 8);
	w = ports | (uint64_t)FG_IPPROTO_TCP << 32;
	memcpy((uint8_t *)&out->key.k4 + 8, &w, 8);
	memset((uint8_t *)out + 32, 0, 32);
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

		if (l4 > end)
			return -EINVAL;
		nh = frame[in + 6];
		if (fg_pkt__v6_walk(frame, &l4, end, &nh, &fl) != FG_PKT__V6W_OK)
			return -EINVAL;
		*inner_l4_off = (uint16_t)l4;
		return 0;
	}
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
