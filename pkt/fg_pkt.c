/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Parser entry points.  The parser itself is fg_pkt_parse.h, compiled here
 * over a plain pointer and by gpu/fg_gpu_kernels.cu over the kernel's frame
 * view: one source for both.
 */
#include <errno.h>
#include <string.h>

#include <rte_branch_prediction.h>

#include "fg_pkt.h"
#include "fg_pkt_parse.h"

int fg_pkt_parse_ex(const uint8_t *frame, uint32_t len, struct fg_pkt *out,
		    unsigned int opts)
{
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
