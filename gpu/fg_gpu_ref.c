/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * CPU reference of the GPU batch path, built from the real dataplane
 * library: fg_pkt_parse, fg_pkt_sig (ct_hash_crc), fg_rss_hash, the RETA
 * and Maglev lookup.  The tests compare the kernel against this function
 * byte for byte; flowgate-bench gpu uses it as the CPU baseline.
 */
#include <string.h>

#include "fg_gpu_ref.h"
#include "fg_maglev.h"
#include "fg_rss.h"

void fg_gpu_ref_one(const uint8_t *frame, uint32_t len,
		    const uint16_t reta[FG_GPU_RETA_SIZE],
		    const struct fg_gpu_service *svcs, uint32_t n_svcs,
		    const uint32_t *tables, struct fg_gpu_result *out)
{
	int kind;

	memset(out, 0, sizeof(*out));
	kind = fg_pkt_parse(frame, len, &out->pkt);
	out->service = FG_GPU_NO_SERVICE;
	out->backend = FG_GPU_NO_BACKEND;
	if (kind == FG_PK_DROP)
		return;
	out->sig = fg_pkt_sig(&out->pkt);
	out->rss = fg_rss_hash(&out->pkt);
	out->worker = fg_rss_queue(out->rss, reta);
	if (kind != FG_PK_FLOW && kind != FG_PK_ICMP_ERR)
		return;
	for (uint32_t i = 0; i < n_svcs; i++) {
		const struct fg_gpu_service *s = &svcs[i];
		int match;

		if (s->family != out->pkt.family)
			continue;
		if (s->family == CT_V6) {
			const struct ct_key6 *k = &out->pkt.key.k6;

			match = s->proto == k->proto && s->port == k->dport &&
				!memcmp(s->vip, k->daddr, 16);
		} else {
			const struct ct_key4 *k = &out->pkt.key.k4;
			static const uint8_t zero[12];

			match = s->proto == k->proto && s->port == k->dport &&
				!memcmp(s->vip, &k->daddr, 4) &&
				!memcmp(s->vip + 4, zero, 12);
		}
		if (!match)
			continue;
		out->service = (uint16_t)i;
		if (s->m)
			out->backend = fg_maglev_lookup(tables + s->table_off,
							s->m, out->sig);
		return;
	}
}
