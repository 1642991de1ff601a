/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * fg-decap (worker side of DSR): layouts shared by the TC program
 * (fg_decap.bpf.c) and its CLI (fg_decap.c).  Compiled by clang -target
 * bpf and by the host compiler: fixed-width types only.
 *
 * A packet is decapsulated when its outer header is IPv4/IPv6 carrying
 * IPv4-in-IP (4), IPv6-in-IP (41) or UDP to the configured GUE port with
 * GUE v1 "direct IP" (the first inner nibble is 4 or 6) or, over IPv4,
 * GUE v0 with a header (what flowgate --second-chance sends when it names
 * a previous owner), AND the inner destination is one of the configured
 * VIPs.  Everything else passes untouched (counted as passed / not_vip).
 */
#ifndef FLOWGATE_FG_DECAP_H
#define FLOWGATE_FG_DECAP_H

#include <stdint.h>

/** Counters, declared once: X(name, "description"). */
#define FGD_COUNTER_LIST(X) \
	X(decap_ipip,   "IPv4/IPv6-in-IP packets decapsulated") \
	X(decap_gue,    "GUE (UDP) packets decapsulated") \
	X(not_vip,      "encapsulated packets whose inner destination is no configured VIP: passed untouched") \
	X(passed,       "packets that are not flowgate encapsulation: passed untouched") \
	X(decap_failed, "decapsulation refused by the kernel (bpf_skb_adjust_room): dropped") \
	X(second_chance_fwd, "TCP segments without SYN for which this host holds no socket, sent on once to the previous owner their GUE header names (--second-chance)") \
	X(second_chance_kept, "segments naming a previous owner delivered here: a socket here, a SYN, or no route / neighbour to the owner")

#define FGD_C_(n, d) FGD_C_##n,
enum fgd_counter { FGD_COUNTER_LIST(FGD_C_) FGD_C_MAX };

/** Most VIPs one attachment decapsulates for. */
#define FGD_MAX_VIPS 1024

/** fgd_vips key: the inner destination. */
struct fgd_vip {
	uint8_t family;    /**< 4 or 6 */
	uint8_t pad[3];
	uint8_t addr[16];  /**< IPv4 in the first 4 bytes, rest 0 */
};

/** fgd_cfg (one entry). */
struct fgd_cfg {
	uint16_t gue_port;      /**< network order; 0 = GUE off */
	uint8_t second_chance;  /**< 1: forward to the previous owner (GLB's
				 *  second chance), see fg_decap.bpf.c */
	uint8_t pad;
};

#endif /* FLOWGATE_FG_DECAP_H */
