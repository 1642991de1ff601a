/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * Internet checksum helpers (RFC 1071 sums, RFC 1624 incremental updates).
 * All values are 16-bit one's complement quantities in NETWORK byte order as
 * they sit in the packet (the one's complement sum is byte-order
 * independent as long as every operand uses the same order).
 */
#ifndef FLOWGATE_FG_CSUM_H
#define FLOWGATE_FG_CSUM_H

#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Folds a 32-bit partial sum to 16 bits (not complemented): the high
 *  half of sum + sum rotated by 16 is the halves' one's complement sum,
 *  the carry out of the low half already in it (one add where two folds
 *  take four; the same value for every sum). */
static inline uint16_t fg_csum_fold(uint32_t sum)
{
	return (uint16_t)((sum + (sum >> 16 | sum << 16)) >> 16);
}

/**
 * Adds @p len bytes at @p buf to a partial sum (memory order, i.e. the
 * 16-bit words are read as stored).  Odd trailing byte padded with zero.
 */
static inline uint32_t fg_csum_partial(const void *buf, uint32_t len,
				       uint32_t sum)
{
	const uint8_t *p = (const uint8_t *)buf;
	uint64_t s = sum;

	while (len >= 4) {
		uint32_t w;

		memcpy(&w, p, 4);
		s += w;
		p += 4;
		len -= 4;
	}
	if (len >= 2) {
		uint16_t w;

		memcpy(&w, p, 2);
		s += w;
		p += 2;
		len -= 2;
	}
	if (len) {
		uint16_t w = 0;

		memcpy(&w, p, 1);
		s += w;
	}
	s = (s & 0xffffffffu) + (s >> 32);
	s = (s & 0xffffffffu) + (s >> 32);
	return (uint32_t)s;
}

/** Full checksum of a buffer: ~fold(sum). */
static inline uint16_t fg_csum(const void *buf, uint32_t len)
{
	return (uint16_t)~fg_csum_fold(fg_csum_partial(buf, len, 0));
}

/**
 * RFC 1624 eqn. 3: new checksum HC' = ~(~HC + ~m + m') for one changed
 * 16-bit word m -> m'.
 */
static inline uint16_t fg_csum_update16(uint16_t csum, uint16_t old16,
					uint16_t new16)
{
	uint32_t s = (uint16_t)~csum;

	s += (uint16_t)~old16;
	s += new16;
	return (uint16_t)~fg_csum_fold(s);
}

/** RFC 1624 update for a changed 32-bit field (two words). */
static inline uint16_t fg_csum_update32(uint16_t csum, uint32_t old32,
					uint32_t new32)
{
	uint32_t s = (uint16_t)~csum;

	s += (uint16_t)~(old32 & 0xffff);
	s += (uint16_t)~(old32 >> 16);
	s += new32 & 0xffff;
	s += new32 >> 16;
	return (uint16_t)~fg_csum_fold(s);
}

/**
 * RFC 1624 for many changed words at once: the caller sums
 * fg_csum_diff32() / fg_csum_diff16() terms for every change (up to
 * 65535 of them) and applies the total once with fg_csum_apply(): the
 * same checksum as a chain of fg_csum_update*() calls, in one fold.
 */
static inline uint32_t fg_csum_diff32(uint32_t old32, uint32_t new32)
{
	return (~old32 & 0xffff) + (~old32 >> 16) + (new32 & 0xffff) + (new32 >> 16);
}

static inline uint32_t fg_csum_diff16(uint16_t old16, uint16_t new16)
{
	return (uint16_t)~old16 + (uint32_t)new16;
}

static inline uint16_t fg_csum_apply(uint16_t csum, uint32_t diff)
{
	return (uint16_t)~fg_csum_fold((uint16_t)~csum + diff);
}

/**
 * fg_csum_apply() for a difference summed in 64 bits from whole 32-bit
 * words: ~old + new of each changed word (a 16-bit one zero-extended;
 * 2^32 and 2^16 are both 1 modulo 0xffff), folded once here.  Fewer
 * instructions than a fg_csum_diff32() per word.
 */
static inline uint16_t fg_csum_apply64(uint16_t csum, uint64_t diff)
{
	diff += (uint16_t)~csum;
	/* 64 to 32 bits as fg_csum_fold does 32 to 16: in the high half */
	diff += diff >> 32 | diff << 32;
	return (uint16_t)~fg_csum_fold((uint32_t)(diff >> 32));
}

/** RFC 1624 update for a changed 16-byte field (IPv6 address). */
static inline uint16_t fg_csum_update128(uint16_t csum, const uint8_t old[16],
					 const uint8_t new_[16])
{
	uint32_t s = (uint16_t)~csum;
	int i;

	for (i = 0; i < 16; i += 2) {
		uint16_t o, n;

		memcpy(&o, old + i, 2);
		memcpy(&n, new_ + i, 2);
		s += (uint16_t)~o;
		s += n;
	}
	return (uint16_t)~fg_csum_fold(s);
}

#ifdef __cplusplus
}
#endif
#endif /* FLOWGATE_FG_CSUM_H */
