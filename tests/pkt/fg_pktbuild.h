/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * Test-only packet builder: Ethernet [+VLAN [+VLAN]] + IPv4 (options,
 * fragments) / IPv6 (extension headers) + TCP / UDP / ICMP / ICMPv6, ARP
 * and neighbour solicitation, with correct checksums computed by its own
 * (independent) RFC 1071 code.  Used by the unit tests, the fixtures and
 * the fuzz seed corpus.  Not for the dataplane.
 */
#ifndef FLOWGATE_TESTS_PKTBUILD_H
#define FLOWGATE_TESTS_PKTBUILD_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PB_MAX_FRAME 10000 /**< jumbo frames included */

/** What to build.  Zero means "default" for most fields. */
struct pb_spec {
	int v6;                 /**< 0 IPv4, 1 IPv6 */
	uint8_t src_mac[6];     /**< default 02:00:00:00:00:aa */
	uint8_t dst_mac[6];     /**< default 02:00:00:00:00:01 (balancer) */
	uint16_t vlan;          /**< VLAN id, 0 = untagged */
	uint16_t vlan2;         /**< second (inner) VLAN id: QinQ */
	const char *saddr;      /**< text address (inet_pton) */
	const char *daddr;
	uint8_t proto;          /**< 6, 17, 1, 58, other */
	uint16_t sport, dport;  /**< host order */
	uint8_t tcp_flags;      /**< default SYN when proto TCP and 0 */
	uint8_t tcp_opts;       /**< bytes of TCP options (multiple of 4) */
	uint8_t ttl;            /**< default 64 */
	uint8_t ip_opts;        /**< IPv4 options bytes (multiple of 4; NOPs + EOL) */
	uint16_t frag_off;      /**< fragment offset in 8-byte units */
	uint8_t mf, df;         /**< IPv4 flags / IPv6 M bit */
	uint8_t v6_frag;        /**< IPv6: add a fragment header (with frag_off/mf) */
	uint8_t n_ext;          /**< IPv6 extension headers before the fragment header */
	uint8_t ext[12];        /**< their types: 0, 43 (SRH, segments left 0), 60, 51 (AH), ... */
	uint16_t payload;       /**< L4 payload bytes (pattern i & 0xff) */
	uint8_t icmp_type, icmp_code;
	uint16_t icmp_id;       /**< echo id (host order) */
	uint32_t icmp_mtu;      /**< frag-needed next-hop MTU / PTB MTU */
	const uint8_t *inner;   /**< ICMP error: embedded L3 bytes */
	uint32_t inner_len;
	uint8_t no_csum;        /**< leave checksums zero */
	uint8_t ip_id_set;      /**< use @c ip_id (else 0x1234 / 0xab000001) */
	uint32_t ip_id;         /**< IPv4 identification (16 bits) / IPv6
	                         *   fragment header identification */
};

/** Builds a frame; @return its length, or -1 if it does not fit @p cap. */
int pb_build(const struct pb_spec *s, uint8_t *out, uint32_t cap);

/** ARP request (op 1) / reply (op 2) over Ethernet. @return length. */
int pb_arp(uint16_t op, const uint8_t smac[6], const char *sip,
	   const char *tip, uint16_t vlan, uint8_t *out, uint32_t cap);

/** Neighbour solicitation from @p src (:: for DAD) for @p target, with a
 *  source link-layer option unless DAD or @p no_opt. */
int pb_ns(const uint8_t smac[6], const char *src, const char *target,
	  uint8_t hop, int no_opt, uint8_t *out, uint32_t cap);

/** Independent checksum verification (IPv4 header + L4, v4/v6), parsing
 *  the frame with its own minimal walker.  @return 0 if all correct. */
int pb_verify_csums(const uint8_t *frame, uint32_t len);

/** Parses a text address into 16 bytes (v4 in the first 4). @return 0/-1 */
int pb_addr(const char *txt, uint8_t out[16]);

/** Hex dump to stderr (for failing byte comparisons). */
void pb_hexdump(const char *title, const uint8_t *b, uint32_t len);

#ifdef __cplusplus
}
#endif
#endif
