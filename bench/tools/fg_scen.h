/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * Benchmark scenarios: one flat "key = value" file per scenario
 * (bench/scenarios/<name>.scn, format in bench/scenarios/README.md) and a
 * deterministic packet model: packet number i of a scenario is a pure
 * function of (scenario, i).  fg-pcapgen writes packets 0..N-1 to a pcap,
 * flowgate-bench latency builds the same packets in process, and the
 * Pktgen/TRex scripts read the same files, so a scenario is written once.
 *
 * Header-only (all functions static): flowgate-bench's meson.build compiles
 * only bench_<name>.c files, and this keeps one definition shared by the C
 * tools without a library of its own.  No DPDK, no allocation, no exit().
 *
 * ## Packet model
 * - Packets are either flood packets (share syn_flood_share: SYNs from
 *   random spoofed sources, never completed) or legitimate packets.  The
 *   split is exact and evenly spread (flood iff floor((i+1)s) > floor(i s)).
 * - Legitimate packet j belongs to flow slot j % flows; round r = j / flows.
 *   flow_packets = 0: the slot's connection is established forever (ACKs).
 *   flow_packets = 1: every packet is the SYN of a new connection.
 *   flow_packets = n >= 2: a connection is SYN, n-2 ACKs, FIN|ACK; then the
 *   slot opens its next connection (new source port / address): churn.
 *   So `flows` connections are always concurrently open.
 * - Connection c is IPv6 with share ipv6_share (exact, evenly spread), its
 *   client address is client_net + 1 + c % 65536, source port
 *   1024 + (c / 65536) % 64512: distinct for 4.2 billion connections.
 * - Sizes: pkt_size is the wire frame size including the 4-byte FCS (64 B
 *   = 148.8 Mpps at 100 GbE); frames written are pkt_size - 4 bytes.  IPv6
 *   frames are at least 78 B.  IMIX cycles a smooth weighted round robin.
 * - The last 6 bytes of each frame are L4 payload reserved for a 48-bit TSC
 *   stamp (zero here); they stay the last bytes after any encapsulation or
 *   NAT rewrite, so a sink finds them without parsing.
 */
#ifndef FLOWGATE_BENCH_FG_SCEN_H
#define FLOWGATE_BENCH_FG_SCEN_H

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>

#define FG_SCEN_IMIX_MAX 8
#define FG_SCEN_IMIX_SEQ_MAX 256
#define FG_SCEN_PPM 1000000ull
#define FG_SCEN_STAMP_LEN 6
#define FG_SCEN_FRAME_MAX 9018 /* jumbo frame without FCS */

#define FG_TCP_FIN 0x01
#define FG_TCP_SYN 0x02
#define FG_TCP_ACK 0x10

/** A parsed scenario. */
struct fg_scen {
	char name[64];
	char description[256];
	char mode[16];           /**< dsr-ipip | dsr-gue | nat */
	uint32_t vip4;           /**< network order */
	uint8_t vip6[16];
	uint16_t vport;          /**< host order */
	uint8_t proto;           /**< 6 or 17 */
	uint32_t pkt_size;       /**< wire size incl. FCS; 0 = IMIX */
	uint32_t imix_n;
	uint16_t imix_size[FG_SCEN_IMIX_MAX];
	uint32_t imix_weight[FG_SCEN_IMIX_MAX];
	uint64_t flows;          /**< concurrent connections */
	uint32_t flow_packets;   /**< 0 endless, 1 SYN only, n: SYN..FIN */
	uint64_t flood_ppm;      /**< spoofed-SYN share, parts per million */
	uint64_t v6_ppm;         /**< IPv6 share, parts per million */
	double duration_s;
	double rate_pct;
	uint32_t client4, client4_len;   /**< network order, prefix length */
	uint8_t client6[16]; uint32_t client6_len;
	uint32_t spoof4, spoof4_len;
	uint8_t spoof6[16]; uint32_t spoof6_len;
	uint8_t src_mac[6], dst_mac[6];
	uint64_t seed;
	uint64_t pcap_packets;   /**< 0 = derived, see fg_scen_pcap_packets() */
	/* derived by fg_scen_finish() */
	uint32_t imix_seq_n;
	uint16_t imix_seq[FG_SCEN_IMIX_SEQ_MAX];
};

/** What fg_scen_packet() built. */
struct fg_scen_pkt_info {
	uint64_t conn;      /**< connection number (legit) or flood index */
	uint16_t len;       /**< frame length without FCS */
	uint8_t v6;         /**< 1 = IPv6 */
	uint8_t flood;      /**< 1 = spoofed SYN */
	uint8_t tcp_flags;
};

static inline void fg_scen_err(char *err, size_t n, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static inline void fg_scen_err(char *err, size_t n, const char *fmt, ...)
{
	va_list ap;

	if (err == NULL || n == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(err, n, fmt, ap);
	va_end(ap);
}

/**
 * Fill @p s with the defaults documented in bench/scenarios/README.md.
 * Thread safety: touches only @p s.
 */
static inline void fg_scen_defaults(struct fg_scen *s)
{
	static const uint8_t v6[16] = {0xfd, 0, 0x01, 0, [15] = 1};
	static const uint8_t c6[16] = {0xfd, 0, 0, 0x01};
	static const uint8_t sp6[16] = {0x20, 0x01, 0, 0x02};

	memset(s, 0, sizeof(*s));
	snprintf(s->name, sizeof(s->name), "unnamed");
	snprintf(s->mode, sizeof(s->mode), "dsr-ipip");
	s->vip4 = htonl(0x0a640001); /* 10.100.0.1 */
	memcpy(s->vip6, v6, 16);     /* fd00:100::1 */
	s->vport = 80;
	s->proto = 6;
	s->pkt_size = 64;
	s->flows = 1000;
	s->duration_s = 10;
	s->rate_pct = 100;
	s->client4 = htonl(0xac100000); s->client4_len = 12; /* 172.16/12 */
	memcpy(s->client6, c6, 16); s->client6_len = 64;     /* fd00:1::/64 */
	s->spoof4 = htonl(0xc6120000); s->spoof4_len = 15;   /* 198.18/15 */
	memcpy(s->spoof6, sp6, 16); s->spoof6_len = 48;      /* 2001:2::/48 */
	memcpy(s->src_mac, "\x02\x00\x00\x00\x00\x01", 6);
	memcpy(s->dst_mac, "\x02\x00\x00\x00\x00\x02", 6);
	s->seed = 1;
}

static inline int fg_scen__u64(const char *v, uint64_t min, uint64_t max,
			       uint64_t *out)
{
	char *end;
	unsigned long long x;
	uint64_t mult = 1;

	if (*v == '-' || *v == '\0')
		return -EINVAL;
	errno = 0;
	x = strtoull(v, &end, 0);
	if (errno)
		return -ERANGE;
	if (*end == 'K' || *end == 'k')
		mult = 1000, end++;
	else if (*end == 'M' || *end == 'm')
		mult = 1000000, end++;
	if (*end != '\0')
		return -EINVAL;
	if (x > max / mult || x * mult < min)
		return -ERANGE;
	*out = x * mult;
	return 0;
}

static inline int fg_scen__share(const char *v, uint64_t *ppm)
{
	char *end;
	double d;

	errno = 0;
	d = strtod(v, &end);
	if (errno || end == v)
		return -EINVAL;
	if (*end == '%')
		d /= 100.0, end++;
	if (*end != '\0' || !(d >= 0.0 && d <= 1.0))
		return -ERANGE;
	*ppm = (uint64_t)(d * (double)FG_SCEN_PPM + 0.5);
	return 0;
}

static inline int fg_scen__dbl(const char *v, double min, double max, double *out)
{
	char *end;
	double d;

	errno = 0;
	d = strtod(v, &end);
	if (errno || end == v || *end != '\0')
		return -EINVAL;
	if (!(d >= min && d <= max))
		return -ERANGE;
	*out = d;
	return 0;
}

static inline int fg_scen__mac(const char *v, uint8_t mac[6])
{
	unsigned int b[6];
	char tail;

	if (sscanf(v, "%x:%x:%x:%x:%x:%x%c", &b[0], &b[1], &b[2], &b[3], &b[4],
		   &b[5], &tail) != 6)
		return -EINVAL;
	for (int k = 0; k < 6; k++) {
		if (b[k] > 0xff)
			return -EINVAL;
		mac[k] = (uint8_t)b[k];
	}
	return 0;
}

/* "a.b.c.d/len" or "x::y/len" into addr (4 or 16 bytes) + len. */
static inline int fg_scen__net(const char *v, int af, void *addr, uint32_t *len)
{
	char buf[80];
	char *slash;
	uint64_t l;
	uint32_t maxl = af == AF_INET ? 32 : 128;

	if (strlen(v) >= sizeof(buf))
		return -EINVAL;
	snprintf(buf, sizeof(buf), "%s", v);
	slash = strchr(buf, '/');
	if (slash == NULL)
		return -EINVAL;
	*slash = '\0';
	if (inet_pton(af, buf, addr) != 1)
		return -EINVAL;
	if (fg_scen__u64(slash + 1, 1, maxl, &l) < 0)
		return -ERANGE;
	/* 65536 client hosts (+1) must fit the host part. */
	if (maxl - l < 17)
		return -ERANGE;
	*len = (uint32_t)l;
	return 0;
}

static inline int fg_scen__imix(struct fg_scen *s, const char *v)
{
	char buf[256];
	char *save = NULL, *tok;
	uint32_t n = 0;

	if (strlen(v) >= sizeof(buf))
		return -EINVAL;
	snprintf(buf, sizeof(buf), "%s", v);
	for (tok = strtok_r(buf, ", \t", &save); tok;
	     tok = strtok_r(NULL, ", \t", &save)) {
		unsigned int size, w;
		char tail;

		if (n == FG_SCEN_IMIX_MAX)
			return -E2BIG;
		if (sscanf(tok, "%u:%u%c", &size, &w, &tail) != 2)
			return -EINVAL;
		if (size < 64 || size > FG_SCEN_FRAME_MAX + 4 || w == 0 || w > 64)
			return -ERANGE;
		s->imix_size[n] = (uint16_t)size;
		s->imix_weight[n] = w;
		n++;
	}
	if (n == 0)
		return -EINVAL;
	s->imix_n = n;
	return 0;
}

/**
 * Set one key from its string value (what a scenario line or a
 * `--set key=value` override says).
 *
 * @return 0, or -EINVAL (unknown key / malformed value) or -ERANGE (out of
 *   range); @p err then says which.  Thread safety: touches only @p s.
 */
static inline int fg_scen_set(struct fg_scen *s, const char *key,
			      const char *val, char *err, size_t errlen)
{
	uint64_t u = 0;
	int rc = 0;

#define FG_SCEN_STR(field)                                              \
	do {                                                            \
		if (strlen(val) >= sizeof(s->field))                    \
			rc = -ERANGE;                                   \
		else                                                    \
			snprintf(s->field, sizeof(s->field), "%s", val); \
	} while (0)
	if (!strcmp(key, "name"))
		FG_SCEN_STR(name);
	else if (!strcmp(key, "description"))
		FG_SCEN_STR(description);
	else if (!strcmp(key, "mode")) {
		if (strcmp(val, "dsr-ipip") && strcmp(val, "dsr-gue") &&
		    strcmp(val, "nat"))
			rc = -EINVAL;
		else
			FG_SCEN_STR(mode);
	} else if (!strcmp(key, "vip4"))
		rc = inet_pton(AF_INET, val, &s->vip4) == 1 ? 0 : -EINVAL;
	else if (!strcmp(key, "vip6"))
		rc = inet_pton(AF_INET6, val, s->vip6) == 1 ? 0 : -EINVAL;
	else if (!strcmp(key, "vport")) {
		rc = fg_scen__u64(val, 1, 65535, &u);
		s->vport = (uint16_t)u;
	} else if (!strcmp(key, "proto")) {
		if (!strcmp(val, "tcp"))
			s->proto = 6;
		else if (!strcmp(val, "udp"))
			s->proto = 17;
		else
			rc = -EINVAL;
	} else if (!strcmp(key, "pkt_size")) {
		if (!strcmp(val, "imix")) {
			s->pkt_size = 0;
		} else {
			rc = fg_scen__u64(val, 64, FG_SCEN_FRAME_MAX + 4, &u);
			s->pkt_size = (uint32_t)u;
		}
	} else if (!strcmp(key, "imix"))
		rc = fg_scen__imix(s, val);
	else if (!strcmp(key, "flows"))
		rc = fg_scen__u64(val, 1, 1ull << 32, &s->flows);
	else if (!strcmp(key, "flow_packets")) {
		rc = fg_scen__u64(val, 0, 1000000, &u);
		s->flow_packets = (uint32_t)u;
	} else if (!strcmp(key, "syn_flood_share")) {
		rc = fg_scen__share(val, &s->flood_ppm);
		if (rc == 0 && s->flood_ppm == FG_SCEN_PPM)
			rc = -ERANGE; /* no legitimate packet left */
	} else if (!strcmp(key, "ipv6_share"))
		rc = fg_scen__share(val, &s->v6_ppm);
	else if (!strcmp(key, "duration_s"))
		rc = fg_scen__dbl(val, 0.1, 86400, &s->duration_s);
	else if (!strcmp(key, "rate_pct"))
		rc = fg_scen__dbl(val, 0.001, 100, &s->rate_pct);
	else if (!strcmp(key, "client_net4"))
		rc = fg_scen__net(val, AF_INET, &s->client4, &s->client4_len);
	else if (!strcmp(key, "client_net6"))
		rc = fg_scen__net(val, AF_INET6, s->client6, &s->client6_len);
	else if (!strcmp(key, "spoof_net4"))
		rc = fg_scen__net(val, AF_INET, &s->spoof4, &s->spoof4_len);
	else if (!strcmp(key, "spoof_net6"))
		rc = fg_scen__net(val, AF_INET6, s->spoof6, &s->spoof6_len);
	else if (!strcmp(key, "src_mac"))
		rc = fg_scen__mac(val, s->src_mac);
	else if (!strcmp(key, "dst_mac"))
		rc = fg_scen__mac(val, s->dst_mac);
	else if (!strcmp(key, "seed"))
		rc = fg_scen__u64(val, 0, UINT64_MAX, &s->seed);
	else if (!strcmp(key, "pcap_packets"))
		rc = fg_scen__u64(val, 0, 1ull << 32, &s->pcap_packets);
	else {
		fg_scen_err(err, errlen, "unknown key '%s'", key);
		return -EINVAL;
	}
#undef FG_SCEN_STR
	if (rc < 0)
		fg_scen_err(err, errlen, "bad value '%s' for '%s'%s", val, key,
			    rc == -ERANGE ? " (out of range)" : "");
	return rc;
}

/**
 * Check cross-key constraints and derive the IMIX sequence.  Called by
 * fg_scen_load(); call it again after fg_scen_set() overrides.
 * @return 0 or -EINVAL with @p err set.
 */
static inline int fg_scen_finish(struct fg_scen *s, char *err, size_t errlen)
{
	uint32_t total = 0;
	int64_t cur[FG_SCEN_IMIX_MAX] = {0};

	if (s->pkt_size == 0) {
		if (s->imix_n == 0) {
			fg_scen_err(err, errlen, "pkt_size = imix needs an 'imix' list");
			return -EINVAL;
		}
		for (uint32_t k = 0; k < s->imix_n; k++)
			total += s->imix_weight[k];
		if (total > FG_SCEN_IMIX_SEQ_MAX) {
			fg_scen_err(err, errlen, "imix weights sum to %u > %u", total,
				    FG_SCEN_IMIX_SEQ_MAX);
			return -EINVAL;
		}
		/* smooth weighted round robin: sizes spread evenly */
		for (uint32_t n = 0; n < total; n++) {
			uint32_t best = 0;

			for (uint32_t k = 0; k < s->imix_n; k++) {
				cur[k] += s->imix_weight[k];
				if (cur[k] > cur[best])
					best = k;
			}
			cur[best] -= total;
			s->imix_seq[n] = s->imix_size[best];
		}
		s->imix_seq_n = total;
	}
	if (s->flow_packets == 1 && s->proto != 6) {
		fg_scen_err(err, errlen, "flow_packets = 1 (new connections) needs proto = tcp");
		return -EINVAL;
	}
	return 0;
}

/**
 * Load a scenario file: '#' starts a comment, blank lines are skipped,
 * every other line is `key = value` (value may be quoted with "...").
 *
 * @return 0; -errno from fopen; -EINVAL for a syntax error, unknown key or
 *   bad value, with "file:line: reason" in @p err.
 * Thread safety: touches only @p s.
 */
static inline int fg_scen_load(const char *path, struct fg_scen *s, char *err,
			       size_t errlen)
{
	char line[512], why[160];
	FILE *f;
	int lineno = 0, rc = 0;

	fg_scen_defaults(s);
	f = fopen(path, "r");
	if (f == NULL) {
		rc = -errno;
		fg_scen_err(err, errlen, "%s: %s", path, strerror(errno));
		return rc;
	}
	while (fgets(line, sizeof(line), f)) {
		char *p = line, *eq, *k, *v, *end;

		lineno++;
		if (strchr(line, '\n') == NULL && !feof(f)) {
			fg_scen_err(err, errlen, "%s:%d: line too long", path, lineno);
			rc = -EINVAL;
			break;
		}
		while (isspace((unsigned char)*p))
			p++;
		if (*p == '\0' || *p == '#')
			continue;
		eq = strchr(p, '=');
		if (eq == NULL) {
			fg_scen_err(err, errlen, "%s:%d: expected 'key = value'", path, lineno);
			rc = -EINVAL;
			break;
		}
		*eq = '\0';
		k = p;
		for (end = eq; end > k && isspace((unsigned char)end[-1]); end--)
			;
		*end = '\0';
		v = eq + 1;
		while (isspace((unsigned char)*v))
			v++;
		for (end = v + strlen(v); end > v && isspace((unsigned char)end[-1]); end--)
			;
		*end = '\0';
		if (*v == '"') {
			char *q = strrchr(v + 1, '"');

			if (q == NULL || q[1] != '\0') {
				fg_scen_err(err, errlen, "%s:%d: unterminated quote", path, lineno);
				rc = -EINVAL;
				break;
			}
			*q = '\0';
			v++;
		} else if ((end = strchr(v, '#')) != NULL) {
			*end = '\0';
			for (end = v + strlen(v); end > v && isspace((unsigned char)end[-1]); end--)
				;
			*end = '\0';
		}
		if (fg_scen_set(s, k, v, why, sizeof(why)) < 0) {
			fg_scen_err(err, errlen, "%s:%d: %s", path, lineno, why);
			rc = -EINVAL;
			break;
		}
	}
	fclose(f);
	if (rc == 0 && fg_scen_finish(s, why, sizeof(why)) < 0) {
		fg_scen_err(err, errlen, "%s: %s", path, why);
		rc = -EINVAL;
	}
	return rc;
}

/** floor(i * ppm / 1e6) without overflow for i < 2^44. */
static inline uint64_t fg_scen__part(uint64_t i, uint64_t ppm)
{
	return (uint64_t)(((unsigned __int128)i * ppm) / FG_SCEN_PPM);
}

/**
 * Number of packets a pcap of this scenario holds: pcap_packets when set,
 * else enough for every slot to go through one full connection (or once,
 * for endless flows), plus the flood packets interleaved with them.
 */
static inline uint64_t fg_scen_pcap_packets(const struct fg_scen *s)
{
	uint64_t legit;

	if (s->pcap_packets)
		return s->pcap_packets;
	legit = s->flows * (s->flow_packets ? s->flow_packets : 1);
	/* legit = n - floor(n * f)  =>  n ~= legit / (1 - f) */
	return (uint64_t)((double)legit * (double)FG_SCEN_PPM /
			  (double)(FG_SCEN_PPM - s->flood_ppm) + 0.5);
}

static inline uint64_t fg_scen__mix(uint64_t x)
{
	/* splitmix64 finalizer: flood addresses look random but replay exactly */
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static inline uint32_t fg_scen__csum_add(uint32_t sum, const uint8_t *p, uint32_t n)
{
	for (; n > 1; n -= 2, p += 2)
		sum += (uint32_t)p[0] << 8 | p[1];
	if (n)
		sum += (uint32_t)p[0] << 8;
	return sum;
}

static inline uint16_t fg_scen__csum_fold(uint32_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

/* base/len + host index (host < 2^17 guaranteed by fg_scen__net). */
static inline void fg_scen__addr6(const uint8_t base[16], uint32_t len,
				  uint64_t host, uint8_t out[16])
{
	memcpy(out, base, 16);
	/* host bits live in the low 64 bits; len <= 111 leaves >= 17 */
	for (int b = 15; b >= 8 && host; b--, host >>= 8)
		out[b] = (uint8_t)(out[b] | (host & 0xff));
	(void)len;
}

/* The IPv4 or IPv6 header of packet @p i at @p ip (@p l3len bytes of IP
 * packet, @p plen of them after the header): client or spoofed source
 * (@p flood, random @p r), the scenario's VIP. */
static inline void fg_scen__ip_hdr(const struct fg_scen *s, uint8_t *ip,
				   uint32_t l3len, uint32_t plen, uint64_t i,
				   uint8_t v6, bool flood, uint64_t r, uint64_t conn)
{
	if (!v6) {
		uint32_t src;

		if (flood)
			src = ntohl(s->spoof4) |
			      ((uint32_t)(r & 0xffffffffu) & ((1u << (32 - s->spoof4_len)) - 1));
		else
			src = ntohl(s->client4) + 1 + (uint32_t)(conn & 0xffff);
		ip[0] = 0x45;
		ip[1] = 0;
		ip[2] = (uint8_t)(l3len >> 8);
		ip[3] = (uint8_t)l3len;
		ip[4] = (uint8_t)(i >> 8);
		ip[5] = (uint8_t)i;
		ip[6] = 0x40; /* DF */
		ip[7] = 0;
		ip[8] = 64;
		ip[9] = s->proto;
		ip[10] = ip[11] = 0;
		src = htonl(src);
		memcpy(ip + 12, &src, 4);
		memcpy(ip + 16, &s->vip4, 4);
		{
			uint16_t c = fg_scen__csum_fold(fg_scen__csum_add(0, ip, 20));

			ip[10] = (uint8_t)(c >> 8);
			ip[11] = (uint8_t)c;
		}
	} else {
		ip[0] = 0x60;
		ip[1] = ip[2] = ip[3] = 0;
		ip[4] = (uint8_t)(plen >> 8);
		ip[5] = (uint8_t)plen;
		ip[6] = s->proto;
		ip[7] = 64;
		if (flood)
			fg_scen__addr6(s->spoof6, s->spoof6_len, r & 0xffffffffffull, ip + 8);
		else
			fg_scen__addr6(s->client6, s->client6_len, 1 + (conn & 0xffff), ip + 8);
		memcpy(ip + 24, s->vip6, 16);
	}
}

/**
 * Build packet number @p i of the scenario into @p buf.
 *
 * @return the frame length (without FCS), or -ENOSPC if @p room is too
 *   small for it.  Thread safety: reads @p s only; safe from many threads.
 */
static inline int fg_scen_packet(const struct fg_scen *s, uint64_t i,
				 uint8_t *buf, uint32_t room,
				 struct fg_scen_pkt_info *info)
{
	uint64_t conn, flood_idx = 0, r;
	uint32_t wire, len, l3 = 14, l4, l4len, plen;
	uint8_t flags = FG_TCP_ACK, v6;
	uint16_t sport;
	bool flood = s->flood_ppm &&
		     fg_scen__part(i + 1, s->flood_ppm) > fg_scen__part(i, s->flood_ppm);
	uint32_t seq;

	if (flood) {
		flood_idx = fg_scen__part(i, s->flood_ppm);
		r = fg_scen__mix(flood_idx ^ (s->seed << 40));
		conn = flood_idx;
		v6 = s->v6_ppm && (r % FG_SCEN_PPM) < s->v6_ppm;
		flags = FG_TCP_SYN;
		sport = (uint16_t)(1024 + (r >> 20) % 64512);
		seq = (uint32_t)(r >> 32);
	} else {
		uint64_t j = i - fg_scen__part(i, s->flood_ppm);
		uint64_t slot = j % s->flows, round = j / s->flows, pos = 0;

		if (s->flow_packets == 0) {
			conn = slot;
		} else {
			conn = slot + (round / s->flow_packets) * s->flows;
			pos = round % s->flow_packets;
			if (s->flow_packets == 1 || pos == 0)
				flags = FG_TCP_SYN;
			else if (pos == s->flow_packets - 1)
				flags = FG_TCP_FIN | FG_TCP_ACK;
		}
		v6 = s->v6_ppm && fg_scen__part(conn + 1, s->v6_ppm) >
					  fg_scen__part(conn, s->v6_ppm);
		sport = (uint16_t)(1024 + (conn >> 16) % 64512);
		seq = (uint32_t)fg_scen__mix(conn ^ s->seed) + (uint32_t)pos;
		r = 0;
	}

	wire = s->pkt_size ? s->pkt_size : s->imix_seq[i % s->imix_seq_n];
	l4len = s->proto == 6 ? 20 : 8;
	len = wire - 4;
	{
		uint32_t min = 14 + (v6 ? 40 : 20) + l4len + FG_SCEN_STAMP_LEN;

		if (len < min)
			len = min;
	}
	if (len > room)
		return -ENOSPC;
	l4 = l3 + (v6 ? 40 : 20);
	plen = len - l4; /* L4 header + payload */

	memcpy(buf, s->dst_mac, 6);
	memcpy(buf + 6, s->src_mac, 6);
	buf[12] = v6 ? 0x86 : 0x08;
	buf[13] = v6 ? 0xdd : 0x00;

	fg_scen__ip_hdr(s, buf + l3, len - l3, plen, i, v6, flood, r, conn);

	{
		uint8_t *t = buf + l4;
		uint32_t sum;

		t[0] = (uint8_t)(sport >> 8);
		t[1] = (uint8_t)sport;
		t[2] = (uint8_t)(s->vport >> 8);
		t[3] = (uint8_t)s->vport;
		if (s->proto == 6) {
			uint32_t ack = flags & FG_TCP_SYN ? 0 : ~seq;

			t[4] = (uint8_t)(seq >> 24); t[5] = (uint8_t)(seq >> 16);
			t[6] = (uint8_t)(seq >> 8);  t[7] = (uint8_t)seq;
			t[8] = (uint8_t)(ack >> 24); t[9] = (uint8_t)(ack >> 16);
			t[10] = (uint8_t)(ack >> 8); t[11] = (uint8_t)ack;
			t[12] = 0x50;
			t[13] = flags;
			t[14] = 0xff; t[15] = 0xff; /* window */
			t[16] = t[17] = 0;          /* checksum */
			t[18] = t[19] = 0;
		} else {
			t[4] = (uint8_t)(plen >> 8);
			t[5] = (uint8_t)plen;
			t[6] = t[7] = 0;
		}
		/* payload pattern, stamp area zero */
		for (uint32_t k = l4 + l4len; k < len - FG_SCEN_STAMP_LEN; k++)
			buf[k] = (uint8_t)(k ^ conn);
		memset(buf + len - FG_SCEN_STAMP_LEN, 0, FG_SCEN_STAMP_LEN);

		/* pseudo header + segment */
		if (!v6)
			sum = fg_scen__csum_add(0, buf + l3 + 12, 8);
		else
			sum = fg_scen__csum_add(0, buf + l3 + 8, 32);
		sum += s->proto + plen;
		sum = fg_scen__csum_add(sum, t, plen);
		{
			uint16_t c = fg_scen__csum_fold(sum);

			if (s->proto == 17 && c == 0)
				c = 0xffff;
			t[s->proto == 6 ? 16 : 6] = (uint8_t)(c >> 8);
			t[s->proto == 6 ? 17 : 7] = (uint8_t)c;
		}
	}

	if (info) {
		info->conn = conn;
		info->len = (uint16_t)len;
		info->v6 = v6;
		info->flood = flood;
		info->tcp_flags = s->proto == 6 ? flags : 0;
	}
	return (int)len;
}

/**
 * Stamp the low 48 bits of @p tsc into the last 6 bytes of a frame.  The
 * checksum is not updated (sinks do not verify it; DUTs do not either on
 * the fast path).  Thread safety: touches only the frame.
 */
static inline void fg_scen_stamp(uint8_t *frame, uint32_t len, uint64_t tsc)
{
	uint8_t *p = frame + len - FG_SCEN_STAMP_LEN;

	for (int k = 0; k < FG_SCEN_STAMP_LEN; k++)
		p[k] = (uint8_t)(tsc >> (8 * (FG_SCEN_STAMP_LEN - 1 - k)));
}

/** Read back the 48-bit stamp written by fg_scen_stamp(). */
static inline uint64_t fg_scen_stamp_read(const uint8_t *frame, uint32_t len)
{
	const uint8_t *p = frame + len - FG_SCEN_STAMP_LEN;
	uint64_t v = 0;

	for (int k = 0; k < FG_SCEN_STAMP_LEN; k++)
		v = v << 8 | p[k];
	return v;
}

#endif /* FLOWGATE_BENCH_FG_SCEN_H */
