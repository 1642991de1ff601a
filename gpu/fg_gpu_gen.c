/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Synthetic producer of Ethernet frames for the GPU path's tests and
 * benchmark: valid 64-byte flows, and a fuzz mode that walks every branch
 * of the parser (valid-ish headers with random fields, then truncation and
 * byte mutations).
 */
#include <string.h>

#include "fg_gpu_ref.h"

static inline uint64_t rnd(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	*s = x;
	return x * 0x2545F4914F6CDD1Dull;
}

static inline uint32_t rndn(uint64_t *s, uint32_t n)
{
	return n ? (uint32_t)((rnd(s) >> 32) % n) : 0;
}

static inline void w16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static void rbytes(uint64_t *s, uint8_t *p, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		p[i] = (uint8_t)rnd(s);
}

static const struct fg_gpu_service *pick_svc(uint64_t *s,
					     const struct fg_gpu_service *v,
					     uint32_t n, int family)
{
	for (int tries = 0; n && tries < 4; tries++) {
		const struct fg_gpu_service *c = &v[rndn(s, n)];

		if (c->family == family)
			return c;
	}
	return NULL;
}

static const uint8_t ttls[] = { 0, 1, 2, 64, 255 };

/* L4 header for proto at p (room bytes); returns its length. */
static uint32_t gen_l4(uint64_t *s, uint8_t *p, uint32_t room, uint8_t proto,
		       int v6, const struct fg_gpu_service *svc, int fuzz)
{
	uint32_t n;

	switch (proto) {
	case 6:
		n = 20;
		if (room < 40)
			return 0;
		rbytes(s, p, 20);
		if (svc && rndn(s, 4))
			memcpy(p + 2, &svc->port, 2);
		p[12] = (uint8_t)((fuzz && !rndn(s, 8) ? rndn(s, 16) : 5 +
				   (rndn(s, 4) == 0 ? rndn(s, 3) : 0)) << 4);
		n = (p[12] >> 4) * 4u;
		if (n < 20)
			n = 20;
		return n;
	case 17:
		rbytes(s, p, 8);
		if (svc && rndn(s, 4))
			memcpy(p + 2, &svc->port, 2);
		w16(p + 4, fuzz && !rndn(s, 8) ? (uint16_t)rndn(s, 64) : 8 + 18);
		return 26;
	case 1:
	case 58: {
		static const uint8_t t4[] = { 8, 0, 3, 11, 12, 5, 13 };
		static const uint8_t t6[] = { 128, 129, 1, 2, 3, 4, 135, 136, 133 };
		uint8_t t = v6 ? t6[rndn(s, sizeof(t6))] : t4[rndn(s, sizeof(t4))];

		if (room < 120)
			return 0;
		rbytes(s, p, 8);
		p[0] = t;
		if (t == 135 || t == 136) {
			p[1] = rndn(s, 8) ? 0 : 1;
			rbytes(s, p + 8, 16);
			if (svc && rndn(s, 2))
				memcpy(p + 8, svc->vip, 16);
			return 24 + (rndn(s, 2) ? 8 : 0);
		}
		if ((!v6 && (t == 3 || t == 11 || t == 12)) ||
		    (v6 && t >= 1 && t <= 4)) {
			/* embedded packet: a reply we sent, VIP -> client */
			uint8_t *in = p + 8;
			uint8_t ip = rndn(s, 5) ? (rndn(s, 2) ? 6 : 17)
						: (v6 ? 58 : 1);
			uint32_t hl;

			if (!v6) {
				rbytes(s, in, 20);
				in[0] = 0x45;
				if (fuzz && !rndn(s, 10))
					in[0] = (uint8_t)rnd(s);
				in[6] = rndn(s, 8) ? 0 : (uint8_t)rnd(s);
				in[9] = ip;
				if (svc)
					memcpy(in + 12, svc->vip, 4);
				hl = 20;
			} else {
				rbytes(s, in, 40);
				in[0] = 0x60;
				in[6] = rndn(s, 8) ? ip : 60;
				if (in[6] == 60) { /* one dest-options header */
					in[40] = ip;
					in[41] = 0;
					hl = 48;
				} else {
					hl = 40;
				}
				if (svc)
					memcpy(in + 8, svc->vip, 16);
			}
			rbytes(s, in + hl, 8);
			if (svc && (ip == 6 || ip == 17))
				memcpy(in + hl, &svc->port, 2);
			if (ip == 1 || ip == 58)
				in[hl] = v6 ? (rndn(s, 2) ? 128 : 129)
					    : (rndn(s, 2) ? 8 : 0);
			return 8 + hl + 8 + rndn(s, 3) * 4;
		}
		return 8 + rndn(s, 3) * 8;
	}
	default:
		n = rndn(s, 24);
		rbytes(s, p, n);
		return n;
	}
}

/* 64-byte IPv4 (78-byte IPv6) TCP/UDP frame: L4 header + payload = 30 B
 * (v4) / 24 B (v6). */
static uint32_t gen_valid(uint64_t *s, uint8_t *b,
			  const struct fg_gpu_service *svcs, uint32_t n_svcs)
{
	int v6 = rndn(s, 8) == 0;
	const struct fg_gpu_service *svc =
		rndn(s, 4) ? pick_svc(s, svcs, n_svcs, v6 ? CT_V6 : CT_V4) : NULL;
	uint8_t proto = svc ? svc->proto : (rndn(s, 4) ? 6 : 17);
	uint32_t l4len = v6 ? 24 : 30, iphl = v6 ? 40 : 20;
	uint8_t *ip = b + 14, *l4 = ip + iphl;

	rbytes(s, b, 12);
	memset(ip, 0, iphl + l4len);
	if (v6) {
		w16(b + 12, 0x86DD);
		ip[0] = 0x60;
		w16(ip + 4, (uint16_t)l4len);
		ip[6] = proto;
		ip[7] = 64;
		rbytes(s, ip + 8, 32);
		if (svc)
			memcpy(ip + 24, svc->vip, 16);
	} else {
		w16(b + 12, 0x0800);
		ip[0] = 0x45;
		w16(ip + 2, (uint16_t)(20 + l4len));
		ip[8] = 64;
		ip[9] = proto;
		rbytes(s, ip + 12, 8);
		if (svc)
			memcpy(ip + 16, svc->vip, 4);
	}
	rbytes(s, l4, 4);
	if (svc)
		memcpy(l4 + 2, &svc->port, 2);
	if (proto == 6) {
		l4[12] = 0x50;
		l4[13] = 0x10;
	} else {
		w16(l4 + 4, (uint16_t)l4len);
	}
	return 14 + iphl + l4len;
}

uint32_t fg_gpu_gen_frame(uint64_t *s, uint8_t *b, uint32_t room,
			  const struct fg_gpu_service *svcs, uint32_t n_svcs,
			  unsigned int flags)
{
	uint32_t off = 12, len, r;
	int v6;
	const struct fg_gpu_service *svc;

	if (room < 128)
		return 0;
	if (flags & FG_GPU_GEN_VALID)
		return gen_valid(s, b, svcs, n_svcs);
	r = rndn(s, 100);
	if (r < 3) { /* pure noise */
		len = rndn(s, 200);
		rbytes(s, b, len);
		return len;
	}
	rbytes(s, b, 12);
	if (rndn(s, 5) == 0) { /* VLAN, sometimes QinQ */
		w16(b + off, rndn(s, 8) ? 0x8100 : 0x88A8);
		w16(b + off + 2, (uint16_t)rnd(s));
		off += 4;
		if (rndn(s, 10) == 0) {
			w16(b + off, 0x8100);
			w16(b + off + 2, (uint16_t)rnd(s));
			off += 4;
		}
	}
	r = rndn(s, 100);
	if (r < 5) { /* ARP */
		uint8_t *a = b + off + 2;

		w16(b + off, 0x0806);
		rbytes(s, a, 28);
		w16(a, rndn(s, 10) ? 1 : 6);
		w16(a + 2, rndn(s, 10) ? 0x0800 : 0x86DD);
		a[4] = rndn(s, 10) ? 6 : 8;
		a[5] = rndn(s, 10) ? 4 : 16;
		w16(a + 6, (uint16_t)(rndn(s, 10) ? 1 + rndn(s, 2) : rndn(s, 5)));
		len = off + 2 + 28 + rndn(s, 20);
		goto mutate;
	}
	if (r < 8) { /* random ethertype */
		w16(b + off, (uint16_t)rnd(s));
		len = off + 2 + rndn(s, 64);
		rbytes(s, b + off + 2, len - off - 2);
		goto mutate;
	}
	v6 = r >= 55;
	svc = rndn(s, 3) ? pick_svc(s, svcs, n_svcs, v6 ? CT_V6 : CT_V4) : NULL;
	off += 2;
	if (!v6) {
		uint8_t *ip = b + off;
		uint32_t ihl = rndn(s, 4) ? 5 : 5 + rndn(s, 11);
		uint8_t proto;
		static const uint8_t protos[] = { 6, 6, 6, 17, 17, 1, 1, 50, 51, 47 };
		uint32_t l4len;

		w16(b + off - 2, 0x0800);
		rbytes(s, ip, ihl * 4);
		ip[0] = (uint8_t)(0x40 | ihl);
		if (!rndn(s, 40))
			ip[0] = (uint8_t)rnd(s);
		proto = protos[rndn(s, sizeof(protos))];
		ip[9] = proto;
		ip[8] = ttls[rndn(s, sizeof(ttls))];
		if (rndn(s, 4))
			ip[8] = 64;
		w16(ip + 6, rndn(s, 6) ? (rndn(s, 2) ? 0x4000 : 0) :
			   (uint16_t)(rndn(s, 2) ? 0x2000 : rnd(s)));
		if (svc)
			memcpy(ip + 16, svc->vip, 4);
		l4len = gen_l4(s, ip + ihl * 4, room - off - ihl * 4 - 64,
			       proto, 0, svc, 1);
		len = off + ihl * 4 + l4len;
		w16(ip + 2, (uint16_t)(ihl * 4 + l4len));
		if (!rndn(s, 10))
			w16(ip + 2, (uint16_t)rndn(s, 200));
	} else {
		uint8_t *ip = b + off;
		uint32_t o = 40, nx = 0;
		static const uint8_t protos[] = { 6, 6, 6, 17, 17, 58, 58, 58, 50, 47 };
		uint8_t proto = protos[rndn(s, sizeof(protos))];
		uint8_t *nhp = ip + 6;
		uint32_t l4len;

		w16(b + off - 2, 0x86DD);
		rbytes(s, ip, 40);
		ip[0] = (uint8_t)(0x60 | (ip[0] & 15));
		if (!rndn(s, 40))
			ip[0] = (uint8_t)rnd(s);
		ip[7] = ttls[rndn(s, sizeof(ttls))];
		if (rndn(s, 3))
			ip[7] = proto == 58 && rndn(s, 2) ? 255 : 64;
		if (svc)
			memcpy(ip + 24, svc->vip, 16);
		/* extension chain: 0..10 headers, some long */
		if (rndn(s, 3) == 0) {
			static const uint8_t ext[] = { 0, 43, 60, 44, 60, 51, 135, 59 };

			nx = rndn(s, 11);
			for (uint32_t i = 0; i < nx && o + 80 < room - off - 160; i++) {
				uint8_t e = ext[rndn(s, rndn(s, 4) ? 5 : sizeof(ext))];
				uint32_t hl = e == 44 ? 8 : 8 * (1 + rndn(s, 3));

				*nhp = e;
				rbytes(s, ip + o, hl);
				if (e == 44)
					w16(ip + o + 2, (uint16_t)(rndn(s, 3) ? rndn(s, 2) : rnd(s)));
				else
					ip[o + 1] = (uint8_t)(hl / 8 - 1);
				nhp = ip + o;
				o += hl;
			}
		}
		*nhp = proto;
		l4len = gen_l4(s, ip + o, room - off - o - 64, proto, 1, svc, 1);
		len = off + o + l4len;
		w16(ip + 4, (uint16_t)(o - 40 + l4len));
		if (!rndn(s, 10))
			w16(ip + 4, (uint16_t)rndn(s, 300));
	}
	if (rndn(s, 8) == 0) { /* Ethernet padding */
		uint32_t pad = rndn(s, 32);

		if (len + pad <= room) {
			rbytes(s, b + len, pad);
			len += pad;
		}
	}
mutate:
	if (len > room)
		len = room;
	if (rndn(s, 4) == 0) { /* flip bytes in the headers */
		uint32_t k = 1 + rndn(s, 4);

		for (uint32_t i = 0; i < k && len; i++)
			b[rndn(s, len < 100 ? len : 100)] ^= (uint8_t)(1 + rndn(s, 255));
	}
	if (rndn(s, 4) == 0) /* truncate anywhere */
		len = rndn(s, len + 1);
	return len;
}
