/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * Symmetric Toeplitz (RSS) hash, exactly as a NIC computes it, and the
 * full-NAT reply-steering port search.
 *
 * ## The hash
 * Key: 0x6d,0x5a repeated (52 bytes, FG_RSS_KEY).  Input as a NIC builds it
 * for TCP/UDP: source address, destination address, source port,
 * destination port, all in network byte order (12 bytes for IPv4, 36 for
 * IPv6).  Because the key repeats every 16 bits and every field starts at a
 * multiple of 16 bits, swapping source and destination (addresses and ports
 * together) gives the same hash: both directions of a flow reach the same
 * worker.  The result equals rte_softrss(input words, len, FG_RSS_KEY), and
 * the value a NIC programmed with this key writes into mbuf->hash.rss.
 *
 * ## The fast version (for CPU and GPU mirrors)
 * Toeplitz is linear over GF(2): hash(input) = XOR over input bytes of
 * T[i][byte_i], where T[i][b] is the hash contribution of byte value b at
 * input position i.  Because the key has period 2 bytes, T[i] depends only
 * on i mod 2 — two 256-entry uint32_t tables (2 KiB, fg_rss_table) cover
 * every input position.  One lookup + XOR per input byte (12 for IPv4, 36
 * for IPv6).  The GPU path can copy fg_rss_table into constant memory.
 *
 * ## Worker selection
 * queue = reta[hash & (FG_RSS_RETA_SIZE - 1)], a 128-entry redirection
 * table, round-robin over workers (fg_rss_reta_fill), as NIC RETAs default.
 */
#ifndef FLOWGATE_FG_RSS_H
#define FLOWGATE_FG_RSS_H

#include <stdint.h>

#include "fg_pkt.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Length of the symmetric key (enough for IPv6 4-tuples: 36 + 4 B). */
#define FG_RSS_KEY_LEN 52
/** Redirection table entries (power of two). */
#define FG_RSS_RETA_SIZE 128

/** The symmetric key: 0x6d, 0x5a repeated FG_RSS_KEY_LEN / 2 times. */
extern const uint8_t fg_rss_key[FG_RSS_KEY_LEN];

/**
 * Byte tables of the fast hash: fg_rss_table[i & 1][b] = Toeplitz
 * contribution of byte value b at input byte position i.
 */
extern const uint32_t fg_rss_table[2][256];

/**
 * Toeplitz hash of an IPv4 4-tuple (all arguments network byte order).
 * Thread safety: pure; any thread.
 */
uint32_t fg_rss_hash_v4(uint32_t saddr, uint32_t daddr, uint16_t sport,
			uint16_t dport);

/** Toeplitz hash of an IPv6 4-tuple (network byte order). Pure. */
uint32_t fg_rss_hash_v6(const uint8_t saddr[16], const uint8_t daddr[16],
			uint16_t sport, uint16_t dport);

/** Toeplitz hash of an arbitrary byte string (reference/tests). Pure. */
uint32_t fg_rss_hash_bytes(const uint8_t *in, uint32_t len);

/**
 * Dispatch hash of a parsed packet: the 4-tuple of its key (ARP / ND /
 * HOST: ports 0 as in the key; FRAG_LATER: ports 0, not the IP ID its key
 * holds there, so every fragment of a datagram reaches the worker of its
 * first fragment; ICMP errors: the embedded flow, i.e. the tracked key, so
 * the error reaches the flow's worker).  Pure.
 */
uint32_t fg_rss_hash(const struct fg_pkt *p);

/** Worker of a hash through a 128-entry RETA. */
static inline uint16_t fg_rss_queue(uint32_t hash, const uint16_t *reta)
{
	return reta[hash & (FG_RSS_RETA_SIZE - 1)];
}

/**
 * Fills a RETA round-robin over @p nworkers (entry i = i % nworkers).
 * @return 0, or -EINVAL if nworkers is 0 or > FG_RSS_RETA_SIZE.
 */
int fg_rss_reta_fill(uint16_t *reta, uint16_t nworkers);

/** GUE outer UDP source port for a flow hash (host order): 0xC000 | (hash & 0x3FFF). */
static inline uint16_t fg_rss_gue_sport(uint32_t hash)
{
	return (uint16_t)(0xC000u | (hash & 0x3FFFu));
}

/** Search window of fg_rss_nat_port_pick*(). Host byte order. */
struct fg_rss_port_range {
	uint16_t lo;     /**< first port of the range (e.g. 1024). */
	uint16_t hi;     /**< last port of the range, inclusive (>= lo). */
	uint16_t start;  /**< where the search begins (wraps from hi to lo);
	                  *   pass the last pick + 1 to walk the range. */
};

/**
 * Full-NAT reply steering: finds a local source port P such that the reply
 * tuple (backend_addr:backend_port -> local_addr:P) hashes, through @p reta,
 * to @p target (the worker that owns the flow).
 *
 * Search cost: the hash is linear, so hash(reply with port P) = base ^
 * fg_rss_table-lookups of the two port bytes; base is computed once (12
 * table lookups), then each candidate costs 2 lookups, 2 XORs and a RETA
 * read.  With a round-robin RETA over W workers a random port hits with
 * probability ~1/W: expected W candidates (geometric), e.g. ~8 for 8
 * workers; the whole range is walked at most once (worst case hi-lo+1
 * candidates, then -EADDRNOTAVAIL).  The caller must still check that the
 * reply key is not already tracked and, if it is, call again with
 * range.start = P + 1.
 *
 * Thread safety: pure; any thread.
 * @param backend_addr, local_addr  network byte order.
 * @param backend_port  network byte order.
 * @return P in host byte order (0..65535), or -EINVAL (bad range / target
 *   not in reta), -EADDRNOTAVAIL (no port of the range steers to target).
 */
int fg_rss_nat_port_pick4(uint32_t backend_addr, uint16_t backend_port,
			  uint32_t local_addr, const uint16_t *reta,
			  uint16_t target, const struct fg_rss_port_range *range);

/** IPv6 variant of fg_rss_nat_port_pick4() (same cost after base). */
int fg_rss_nat_port_pick6(const uint8_t backend_addr[16],
			  uint16_t backend_port, const uint8_t local_addr[16],
			  const uint16_t *reta, uint16_t target,
			  const struct fg_rss_port_range *range);

#ifdef __cplusplus
}
#endif
#endif /* FLOWGATE_FG_RSS_H */
