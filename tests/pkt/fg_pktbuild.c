/* SPDX-License-Identifier: BSD-3-Clause */
#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

#include "fg_pktbuild.h"

static const uint8_t def_src_mac[6] = { 0x02, 0, 0, 0, 0, 0xaa };
static const uint8_t def_dst_mac[6] = { 0x02, 0, 0, 0, 0, 0x01 };
static const uint8_t zero_mac[6];

static void w16(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static uint32_t r16(const uint8_t *p)
{
	return (uint32_t)p[0] << 8 | p[1];
}

/* Plain RFC 1071 over big-endian words (independent of fg_csum.h). */
static uint32_t sum_be(const uint8_t *b, uint32_t len, uint32_t s)
{
	uint32_t i;

	for (i = 0; i + 1 < len; i += 2)
		s += r16(b + i);
	if (len & 1)
		s += (uint32_t)b[len - 1] << 8;
	return s;
}

static uint16_t fold(uint32_t s)
{
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)s;
}

static uint32_t pseudo(const uint8_t *ip, int v6, uint8_t proto, uint32_t l4len)
{
	uint32_t s;

	if (v6) {
		s = sum_be(ip + 8, 32, 0);
		s += l4len >> 16;
		s += l4len & 0xffff;
		s += proto;
	} else {
		s = sum_be(ip + 12, 8, 0);
		s += proto;
		s += l4len;
	}
	return s;
}

int pb_addr(const char *txt, uint8_t out[16])
{
	memset(out, 0, 16);
	if (txt == NULL)
		return -1;
	if (strchr(txt, ':'))
		return inet_pton(AF_INET6, txt, out) == 1 ? 0 : -1;
	return inet_pton(AF_INET, txt, out) == 1 ? 0 : -1;
}

static uint32_t l2(const struct pb_spec *s, uint8_t *o, uint16_t et)
{
	uint32_t n = 12;

	memcpy(o, memcmp(s->dst_mac, zero_mac, 6) ? s->dst_mac : def_dst_mac, 6);
	memcpy(o + 6, memcmp(s->src_mac, zero_mac, 6) ? s->src_mac : def_src_mac, 6);
	if (s->vlan) {
		w16(o + n, s->vlan2 ? 0x88a8 : 0x8100);
		w16(o + n + 2, s->vlan);
		n += 4;
		if (s->vlan2) {
			w16(o + n, 0x8100);
			w16(o + n + 2, s->vlan2);
			n += 4;
		}
	}
	w16(o + n, et);
	return n + 2;
}

int pb_build(const struct pb_spec *s, uint8_t *out, uint32_t cap)
{
	uint8_t buf[PB_MAX_FRAME + 256];
	uint8_t sa[16], da[16];
	uint32_t off, ip_off, l4_off, hlen = 0, i, l4len, ext_bytes = 0;
	uint8_t ttl = s->ttl ? s->ttl : 64;
	uint8_t proto = s->proto;
	int later = s->frag_off != 0;
	uint8_t *ip;

	memset(buf, 0, sizeof(buf));
	if (pb_addr(s->saddr, sa) || pb_addr(s->daddr, da))
		return -1;
	off = l2(s, buf, s->v6 ? 0x86dd : 0x0800);
	ip_off = off;
	ip = buf + ip_off;
	if (!s->v6) {
		hlen = 20 + s->ip_opts;
		ip[0] = (uint8_t)(0x40 | (hlen / 4));
		w16(ip + 4, s->ip_id_set ? s->ip_id & 0xffff : 0x1234);
		w16(ip + 6, (s->df ? 0x4000 : 0) | (s->mf ? 0x2000 : 0) |
			    (s->frag_off & 0x1fff));
		ip[8] = ttl;
		ip[9] = proto;
		memcpy(ip + 12, sa, 4);
		memcpy(ip + 16, da, 4);
		for (i = 20; i < hlen; i++)
			ip[i] = (i == hlen - 1) ? 0 : 1; /* NOPs, EOL */
		l4_off = ip_off + hlen;
	} else {
		uint8_t *e;
		uint8_t first;

		ip[0] = 0x60;
		ip[7] = ttl;
		memcpy(ip + 8, sa, 16);
		memcpy(ip + 24, da, 16);
		l4_off = ip_off + 40;
		/* chain: ext[0..n_ext-1], [fragment], proto */
		first = s->n_ext ? s->ext[0] : (s->v6_frag ? 44 : proto);
		ip[6] = first;
		for (i = 0; i < s->n_ext; i++) {
			e = buf + l4_off;
			e[0] = (i + 1 < s->n_ext) ? s->ext[i + 1] :
				(s->v6_frag ? 44 : proto);
			e[1] = 0;
			if (s->ext[i] == 0 || s->ext[i] == 60) {
				e[2] = 1; /* PadN, 4 bytes */
				e[3] = 4;
			} else if (s->ext[i] == 43) {
				/* a segment routing header at its last segment
				 * (type 4, segments left 0): the routing header
				 * a balancer passes (type 0 or segments left
				 * > 0 are refused) */
				e[2] = 4;
				e[3] = 0;
			}
			l4_off += 8;
			ext_bytes += 8;
		}
		if (s->v6_frag) {
			e = buf + l4_off;
			e[0] = proto;
			w16(e + 2, (uint32_t)(s->frag_off << 3) | (s->mf ? 1 : 0));
			if (s->ip_id_set) {
				w16(e + 4, s->ip_id >> 16);
				w16(e + 6, s->ip_id & 0xffff);
			} else {
				e[4] = 0xab;
				e[7] = 0x01;
			}
			l4_off += 8;
			ext_bytes += 8;
		}
	}
	off = l4_off;
	if (!later) {
		uint8_t *h = buf + off;

		switch (proto) {
		case 6:
			w16(h, s->sport);
			w16(h + 2, s->dport);
			h[7] = 1; /* seq */
			h[12] = (uint8_t)(((20 + s->tcp_opts) / 4) << 4);
			h[13] = s->tcp_flags ? s->tcp_flags : 0x02;
			w16(h + 14, 65535);
			for (i = 0; i < s->tcp_opts; i++)
				h[20 + i] = 1;
			off += 20 + s->tcp_opts;
			break;
		case 17:
			w16(h, s->sport);
			w16(h + 2, s->dport);
			off += 8;
			break;
		case 1:
		case 58:
			h[0] = s->icmp_type;
			h[1] = s->icmp_code;
			if ((proto == 1 && (s->icmp_type == 8 || s->icmp_type == 0)) ||
			    (proto == 58 && (s->icmp_type == 128 || s->icmp_type == 129))) {
				w16(h + 4, s->icmp_id);
				w16(h + 6, 1);
			} else if (proto == 1 && s->icmp_type == 3) {
				w16(h + 6, s->icmp_mtu);
			} else if (proto == 58 && s->icmp_type == 2) {
				w16(h + 4, s->icmp_mtu >> 16);
				w16(h + 6, s->icmp_mtu & 0xffff);
			}
			off += 8;
			if (s->inner_len) {
				memcpy(buf + off, s->inner, s->inner_len);
				off += s->inner_len;
			}
			break;
		default:
			break;
		}
	}
	for (i = 0; i < s->payload; i++)
		buf[off + i] = (uint8_t)i;
	off += s->payload;
	if (off > PB_MAX_FRAME || off > cap)
		return -1;

	if (!s->v6) {
		w16(ip + 2, off - ip_off);
		if (!s->no_csum)
			w16(ip + 10, (uint16_t)~fold(sum_be(ip, hlen, 0)));
	} else {
		w16(ip + 4, off - ip_off - 40);
	}
	l4len = off - l4_off;
	(void)ext_bytes;
	if (!later && !s->no_csum) {
		uint8_t *h = buf + l4_off;
		int co = proto == 6 ? 16 : proto == 17 ? 6 :
			 (proto == 1 || proto == 58) ? 2 : -1;

		if (proto == 17)
			w16(h + 4, l4len);
		if (co >= 0) {
			uint32_t sm = (proto == 1) ? 0 :
				pseudo(ip, s->v6, proto, l4len);
			uint16_t c = (uint16_t)~fold(sum_be(h, l4len, sm));

			if (proto == 17 && c == 0)
				c = 0xffff;
			w16(h + co, c);
		}
	} else if (!later && proto == 17) {
		w16(buf + l4_off + 4, l4len);
	}
	/* pad to the Ethernet minimum like a NIC would */
	if (off < 60) {
		if (cap < 60)
			return -1;
		off = 60;
	}
	memcpy(out, buf, off);
	return (int)off;
}

int pb_arp(uint16_t op, const uint8_t smac[6], const char *sip,
	   const char *tip, uint16_t vlan, uint8_t *out, uint32_t cap)
{
	struct pb_spec s;
	uint8_t a[16], b[16], *p;
	uint32_t n;

	if (cap < 60 || pb_addr(sip, a) || pb_addr(tip, b))
		return -1;
	memset(&s, 0, sizeof(s));
	memcpy(s.src_mac, smac, 6);
	memset(s.dst_mac, 0xff, 6);
	if (op == 2)
		memcpy(s.dst_mac, def_dst_mac, 6);
	s.vlan = vlan;
	memset(out, 0, 60);
	n = l2(&s, out, 0x0806);
	p = out + n;
	w16(p, 1);
	w16(p + 2, 0x0800);
	p[4] = 6;
	p[5] = 4;
	w16(p + 6, op);
	memcpy(p + 8, smac, 6);
	memcpy(p + 14, a, 4);
	if (op == 2)
		memcpy(p + 18, def_dst_mac, 6);
	memcpy(p + 24, b, 4);
	return 60;
}

int pb_ns(const uint8_t smac[6], const char *src, const char *target,
	  uint8_t hop, int no_opt, uint8_t *out, uint32_t cap)
{
	uint8_t sa[16], ta[16], dst[16] = { 0xff, 0x02, [11] = 1, [12] = 0xff };
	uint8_t *ip, *h;
	uint32_t n, l4len;
	struct pb_spec s;
	int dad;

	if (pb_addr(src, sa) || pb_addr(target, ta) || cap < 90)
		return -1;
	dad = memcmp(sa, (uint8_t[16]){ 0 }, 16) == 0;
	if (dad)
		no_opt = 1;
	memcpy(dst + 13, ta + 13, 3); /* solicited-node multicast */
	memset(&s, 0, sizeof(s));
	memcpy(s.src_mac, smac, 6);
	s.dst_mac[0] = 0x33;
	s.dst_mac[1] = 0x33;
	memcpy(s.dst_mac + 2, dst + 12, 4);
	memset(out, 0, 90);
	n = l2(&s, out, 0x86dd);
	ip = out + n;
	h = ip + 40;
	l4len = no_opt ? 24 : 32;
	ip[0] = 0x60;
	w16(ip + 4, l4len);
	ip[6] = 58;
	ip[7] = hop;
	memcpy(ip + 8, sa, 16);
	memcpy(ip + 24, dst, 16);
	h[0] = 135;
	memcpy(h + 8, ta, 16);
	if (!no_opt) {
		h[24] = 1;
		h[25] = 1;
		memcpy(h + 26, smac, 6);
	}
	w16(h + 2, (uint16_t)~fold(sum_be(h, l4len, pseudo(ip, 1, 58, l4len))));
	return (int)(n + 40 + l4len);
}

static int verify_l3(const uint8_t *ip, uint32_t avail, int v6, int depth)
{
	uint32_t l4, end, l4len;
	uint8_t proto;
	int later = 0;

	if (depth > 2)
		return 0;
	if (!v6) {
		uint32_t hl;

		if (avail < 20)
			return -1;
		hl = (uint32_t)(ip[0] & 15) * 4;
		if (hl < 20 || hl > avail || fold(sum_be(ip, hl, 0)) != 0xffff)
			return -1;
		end = r16(ip + 2);
		if (end > avail)
			return -1;
		proto = ip[9];
		l4 = hl;
		later = (r16(ip + 6) & 0x3fff) != 0;
	} else {
		if (avail < 40)
			return -1;
		end = 40 + r16(ip + 4);
		if (end > avail)
			return -1;
		proto = ip[6];
		l4 = 40;
		while (proto == 0 || proto == 43 || proto == 60 || proto == 44) {
			if (l4 + 8 > end)
				return -1;
			if (proto == 44)
				later = 1;
			proto = ip[l4];
			l4 += proto == 44 ? 8 : ((uint32_t)ip[l4 + 1] + 1) * 8;
		}
	}
	if (later)
		return 0;
	if (proto == 4)
		return verify_l3(ip + l4, end - l4, 0, depth + 1);
	if (proto == 41)
		return verify_l3(ip + l4, end - l4, 1, depth + 1);
	l4len = end - l4;
	if (proto == 6 || proto == 17 || proto == 58 || proto == 1) {
		uint32_t sm;

		if (proto == 17 && !v6 && l4len >= 8 && r16(ip + l4 + 6) == 0)
			return 0;
		sm = proto == 1 ? 0 : pseudo(ip, v6, proto, l4len);
		if (fold(sum_be(ip + l4, l4len, sm)) != 0xffff)
			return -1;
	}
	return 0;
}

int pb_verify_csums(const uint8_t *frame, uint32_t len)
{
	uint32_t off = 12;
	uint32_t et;

	if (len < 14)
		return -1;
	et = r16(frame + 12);
	while (et == 0x8100 || et == 0x88a8) {
		off += 4;
		if (off + 2 > len)
			return -1;
		et = r16(frame + off);
	}
	off += 2;
	if (et == 0x0800)
		return verify_l3(frame + off, len - off, 0, 0);
	if (et == 0x86dd)
		return verify_l3(frame + off, len - off, 1, 0);
	return 0;
}

void pb_hexdump(const char *title, const uint8_t *b, uint32_t len)
{
	uint32_t i;

	fprintf(stderr, "%s (%u bytes):", title, len);
	for (i = 0; i < len; i++)
		fprintf(stderr, "%s%02x", (i % 16) ? " " : "\n  ", b[i]);
	fprintf(stderr, "\n");
}
