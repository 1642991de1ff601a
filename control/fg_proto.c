/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * flowgate control protocol: request and reply framing, address and flow
 * helpers.  The JSON reader/writer is fg_json.c.  See fg_proto.h.
 */
#include "fg_proto.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "conntrack/ct.h"

const char *const fg_cmd_names[FG_CMD_MAX] = {
#define FG_X(e, s, st) [FG_CMD_##e] = s,
	FG_CMD_LIST(FG_X)
#undef FG_X
};

int fg_cmd_lookup(const char *name)
{
	for (int i = 0; i < FG_CMD_MAX; i++)
		if (!strcmp(fg_cmd_names[i], name))
			return i;
	return -ENOENT;
}

/* ---- messages ---------------------------------------------------------- */

int fg_proto_req_parse(const char *line, size_t len, struct fg_proto_req *req,
		       char *err, size_t errlen)
{
	static const struct fg_json empty_obj = { .type = FG_JSON_OBJ };
	memset(req, 0, sizeof(*req));
	req->cmd = -1;
	if (len && line[len - 1] == '\n')
		len--;
	if (len && line[len - 1] == '\r')
		len--;
	char jerr[160];
	struct fg_json_doc *d = fg_json_parse(line, len, FG_PROTO_MAX_REQUEST, jerr, sizeof(jerr));
	if (!d) {
		int e = errno == E2BIG || errno == ENOMEM ? errno : EINVAL;
		snprintf(err, errlen, "malformed request: %s", jerr);
		return -e;
	}
	req->doc = d;
	const struct fg_json *r = fg_json_root(d);
	if (r->type != FG_JSON_OBJ) {
		snprintf(err, errlen, "malformed request: expected a JSON object");
		return -EINVAL;
	}
	uint64_t id = 0;
	int rc = fg_json_get_u64(r, "id", &id);
	if (rc == -EINVAL) {
		snprintf(err, errlen, "malformed request: \"id\" must be a non-negative integer");
		return -EINVAL;
	}
	req->id = id;
	int64_t v;
	rc = fg_json_get_i64(r, "v", &v);
	if (rc) {
		snprintf(err, errlen, "malformed request: \"v\" (protocol version) missing or not an integer");
		return -EINVAL;
	}
	if (v != FG_PROTO_VERSION) {
		snprintf(err, errlen, "unsupported protocol version %" PRId64 " (this daemon speaks %d)",
			 v, FG_PROTO_VERSION);
		return -EPROTO;
	}
	const char *cmd;
	if (fg_json_get_str(r, "cmd", &cmd)) {
		snprintf(err, errlen, "malformed request: \"cmd\" missing or not a string");
		return -EINVAL;
	}
	req->cmd_name = cmd;
	req->cmd = fg_cmd_lookup(cmd);
	if (req->cmd < 0) {
		snprintf(err, errlen, "unknown command \"%.60s\"", cmd);
		return -ENOENT;
	}
	const struct fg_json *a = fg_json_get(r, "args");
	if (!a || a->type == FG_JSON_NULL) {
		a = &empty_obj;
	} else if (a->type != FG_JSON_OBJ) {
		snprintf(err, errlen, "malformed request: \"args\" must be an object");
		return -EINVAL;
	}
	req->args = a;
	for (const struct fg_json *m = r->child; m; m = m->next)
		if (strcmp(m->key, "v") && strcmp(m->key, "id") && strcmp(m->key, "cmd") &&
		    strcmp(m->key, "args")) {
			snprintf(err, errlen, "malformed request: unknown member \"%.40s\"", m->key);
			return -EINVAL;
		}
	return 0;
}

void fg_proto_req_free(struct fg_proto_req *req)
{
	fg_json_free(req->doc);
	req->doc = NULL;
}

void fg_proto_req_begin(struct fg_json_writer *w, uint64_t id, const char *cmd)
{
	fg_jw_obj_open(w, NULL);
	fg_jw_i64(w, "v", FG_PROTO_VERSION);
	fg_jw_u64(w, "id", id);
	fg_jw_str(w, "cmd", cmd);
	fg_jw_obj_open(w, "args");
}

void fg_proto_req_end(struct fg_json_writer *w)
{
	fg_jw_obj_close(w);
	fg_jw_obj_close(w);
	fg_jw_raw(w, "\n", 1);
}

void fg_proto_reply_begin(struct fg_json_writer *w, uint64_t id)
{
	fg_jw_obj_open(w, NULL);
	fg_jw_i64(w, "v", FG_PROTO_VERSION);
	fg_jw_u64(w, "id", id);
	fg_jw_bool(w, "ok", true);
	/* the caller's value follows under "data", until fg_proto_reply_end */
	fg_jw_member_begin(w, "data");
}

void fg_proto_item_begin(struct fg_json_writer *w, uint64_t id, const char *event)
{
	fg_jw_obj_open(w, NULL);
	fg_jw_i64(w, "v", FG_PROTO_VERSION);
	fg_jw_u64(w, "id", id);
	fg_jw_bool(w, "more", true);
	if (event)
		fg_jw_str(w, "event", event);
	fg_jw_member_begin(w, "data");
}

void fg_proto_reply_end(struct fg_json_writer *w)
{
	if (w->depth == 1)
		fg_jw_member_end(w);
	fg_jw_obj_close(w);
	fg_jw_raw(w, "\n", 1);
}

void fg_proto_reply_error(struct fg_json_writer *w, uint64_t id,
			  const char *error, const char *hint)
{
	fg_jw_obj_open(w, NULL);
	fg_jw_i64(w, "v", FG_PROTO_VERSION);
	fg_jw_u64(w, "id", id);
	fg_jw_bool(w, "ok", false);
	fg_jw_str(w, "error", error);
	if (hint && *hint)
		fg_jw_str(w, "hint", hint);
	fg_jw_obj_close(w);
	fg_jw_raw(w, "\n", 1);
}

int fg_proto_resp_parse(const char *line, size_t len, struct fg_proto_resp *resp,
			char *err, size_t errlen)
{
	memset(resp, 0, sizeof(*resp));
	if (len && line[len - 1] == '\n')
		len--;
	char jerr[160];
	/* replies may be large (config.show, backend lists) */
	struct fg_json_doc *d = fg_json_parse(line, len, 256u << 20, jerr, sizeof(jerr));
	if (!d) {
		snprintf(err, errlen, "malformed reply from the daemon: %s", jerr);
		return -EINVAL;
	}
	resp->doc = d;
	const struct fg_json *r = fg_json_root(d);
	int64_t v;
	if (r->type != FG_JSON_OBJ || fg_json_get_i64(r, "v", &v)) {
		snprintf(err, errlen, "malformed reply from the daemon: no version");
		return -EINVAL;
	}
	if (v != FG_PROTO_VERSION) {
		snprintf(err, errlen, "daemon speaks protocol version %" PRId64 ", fgctl %d",
			 v, FG_PROTO_VERSION);
		return -EPROTO;
	}
	(void)fg_json_get_u64(r, "id", &resp->id);
	(void)fg_json_get_bool(r, "more", &resp->more);
	if (resp->more) {
		resp->ok = true;
	} else if (fg_json_get_bool(r, "ok", &resp->ok)) {
		snprintf(err, errlen, "malformed reply from the daemon: no \"ok\"");
		return -EINVAL;
	}
	(void)fg_json_get_str(r, "event", &resp->event);
	(void)fg_json_get_str(r, "error", &resp->error);
	(void)fg_json_get_str(r, "hint", &resp->hint);
	if (!resp->ok && !resp->error)
		resp->error = "unknown error";
	resp->data = fg_json_get(r, "data");
	return 0;
}

void fg_proto_resp_free(struct fg_proto_resp *resp)
{
	fg_json_free(resp->doc);
	resp->doc = NULL;
}

/* ---- addresses --------------------------------------------------------- */

int fg_addr_parse(const char *s, struct fg_addr *out)
{
	char tmp[INET6_ADDRSTRLEN + 4];
	size_t n = strlen(s);
	memset(out, 0, sizeof(*out));
	if (n >= 2 && s[0] == '[' && s[n - 1] == ']') {
		s++;
		n -= 2;
	}
	if (n == 0 || n >= sizeof(tmp))
		return -EINVAL;
	memcpy(tmp, s, n);
	tmp[n] = 0;
	if (inet_pton(AF_INET, tmp, &out->v4) == 1) {
		out->family = AF_INET;
		return 0;
	}
	if (inet_pton(AF_INET6, tmp, &out->v6) == 1) {
		out->family = AF_INET6;
		return 0;
	}
	return -EINVAL;
}

char *fg_addr_format(const struct fg_addr *a, char *buf, size_t len)
{
	if (a && a->family == AF_INET && len >= INET_ADDRSTRLEN) {
		/* inet_ntop formats IPv4 through sprintf: ~150 ns */
		char *o = buf;
		for (int i = 0; i < 4; i++) {
			char d[4];
			char *e = d + sizeof(d);
			char *p = fg_json_u64_dec(a->bytes[i], e);
			while (p < e)
				*o++ = *p++;
			*o++ = i < 3 ? '.' : 0;
		}
		return buf;
	}
	if (!a || (a->family != AF_INET && a->family != AF_INET6) ||
	    !inet_ntop(a->family, a->bytes, buf, (socklen_t)len))
		snprintf(buf, len, "-");
	return buf;
}

char *fg_endpoint_format(const struct fg_addr *a, uint16_t port, char *buf, size_t len)
{
	char ab[INET6_ADDRSTRLEN];
	fg_addr_format(a, ab, sizeof(ab));
	if (a && a->family == AF_INET6)
		snprintf(buf, len, "[%s]:%u", ab, port);
	else
		snprintf(buf, len, "%s:%u", ab, port);
	return buf;
}

static int parse_port(const char *s, uint16_t *port)
{
	if (!*s || strlen(s) > 5)
		return -EINVAL;
	unsigned v = 0;
	for (const char *p = s; *p; p++) {
		if (!isdigit((unsigned char)*p))
			return -EINVAL;
		v = v * 10 + (unsigned)(*p - '0');
	}
	if (v == 0 || v > 65535)
		return -EINVAL;
	*port = (uint16_t)v;
	return 0;
}

int fg_endpoint_parse(const char *s, bool port_required, struct fg_addr *out,
		      uint16_t *port)
{
	char tmp[80];
	*port = 0;
	if (strlen(s) >= sizeof(tmp))
		return -EINVAL;
	strcpy(tmp, s);
	if (tmp[0] == '[') {
		char *close = strchr(tmp, ']');
		if (!close)
			return -EINVAL;
		*close = 0;
		if (fg_addr_parse(tmp + 1, out) || out->family != AF_INET6)
			return -EINVAL;
		if (close[1] == 0)
			return port_required ? -ENOENT : 0;
		if (close[1] != ':')
			return -EINVAL;
		return parse_port(close + 2, port);
	}
	char *colon = strchr(tmp, ':');
	if (colon && strchr(colon + 1, ':')) {
		/* bare IPv6 address: no port possible */
		if (fg_addr_parse(tmp, out))
			return -EINVAL;
		return port_required ? -ENOENT : 0;
	}
	if (colon)
		*colon = 0;
	if (fg_addr_parse(tmp, out) || out->family != AF_INET)
		return -EINVAL;
	if (!colon)
		return port_required ? -ENOENT : 0;
	return parse_port(colon + 1, port);
}

bool fg_addr_equal(const struct fg_addr *a, const struct fg_addr *b)
{
	if (a->family != b->family)
		return false;
	if (a->family == AF_INET)
		return a->v4.s_addr == b->v4.s_addr;
	if (a->family == AF_INET6)
		return !memcmp(&a->v6, &b->v6, 16);
	return true;
}

int fg_service_spec_parse(const char *s, struct fg_addr *vip, uint16_t *port,
			  uint8_t *proto)
{
	char tmp[96];
	if (strlen(s) >= sizeof(tmp))
		return -EINVAL;
	strcpy(tmp, s);
	*proto = IPPROTO_TCP;
	char *slash = strrchr(tmp, '/');
	if (slash) {
		*slash = 0;
		if (!strcasecmp(slash + 1, "tcp"))
			*proto = IPPROTO_TCP;
		else if (!strcasecmp(slash + 1, "udp"))
			*proto = IPPROTO_UDP;
		else
			return -EINVAL;
	}
	int rc = fg_endpoint_parse(tmp, true, vip, port);
	return rc ? -EINVAL : 0;
}

char *fg_service_spec_format(const struct fg_addr *vip, uint16_t port,
			     uint8_t proto, char *buf, size_t len)
{
	char ep[80];
	fg_endpoint_format(vip, port, ep, sizeof(ep));
	snprintf(buf, len, "%s/%s", ep, proto == IPPROTO_UDP ? "udp" :
		 proto == IPPROTO_TCP ? "tcp" : "?");
	return buf;
}

/* ---- flows ------------------------------------------------------------- */

static const char *const state_names[] = {
#define FG_X(n) #n,
	CT_STATE_LIST(FG_X)
#undef FG_X
};

const char *fg_flow_state_name(int i)
{
	if (i < 0 || (size_t)i >= sizeof(state_names) / sizeof(state_names[0]))
		return NULL;
	return state_names[i];
}

int fg_flow_state_lookup(const char *name)
{
	for (size_t i = 0; i < sizeof(state_names) / sizeof(state_names[0]); i++)
		if (!strcasecmp(state_names[i], name))
			return (int)i;
	return -ENOENT;
}

void fg_flow_filter_init(struct fg_flow_filter *f)
{
	memset(f, 0, sizeof(*f));
	f->service_id = -1;
	f->state = -1;
	f->core = -1;
	f->idle_max_ms = UINT64_MAX;
	f->life_max_ms = UINT64_MAX;
}

int fg_flow_filter_client_parse(struct fg_flow_filter *f, const char *s)
{
	char buf[INET6_ADDRSTRLEN + 8];
	const char *slash = strchr(s, '/');
	size_t n = slash ? (size_t)(slash - s) : strlen(s);
	struct fg_addr a;
	uint64_t plen;

	if (n == 0 || n >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, s, n);
	buf[n] = 0;
	if (fg_addr_parse(buf, &a))
		return -EINVAL;
	unsigned int max = a.family == AF_INET6 ? 128 : 32;
	plen = max;
	if (slash) {
		char *end;
		if (!isdigit((unsigned char)slash[1]))
			return -EINVAL;
		errno = 0;
		plen = strtoull(slash + 1, &end, 10);
		if (errno || *end || plen > max)
			return -EINVAL;
	}
	f->has_client = true;
	f->client = a;
	f->client_plen = (uint8_t)plen;
	return 0;
}

int fg_duration_parse(const char *s, uint64_t *ms)
{
	static const struct { const char *unit; uint64_t mul; } units[] = {
		{ "", 1 }, { "ms", 1 }, { "s", 1000 }, { "m", 60000 }, { "h", 3600000 },
	};
	char *end;
	if (!s || !isdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno)
		return -EINVAL;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (strcmp(end, units[i].unit))
			continue;
		if (v > UINT64_MAX / units[i].mul)
			return -EINVAL;
		*ms = v * units[i].mul;
		return 0;
	}
	return -EINVAL;
}

/* The first @p plen bits of @p a and @p b are equal (same family). */
static bool addr_prefix_match(const struct fg_addr *a, const struct fg_addr *b,
			      unsigned int plen)
{
	const uint8_t *x, *y;
	if (a->family != b->family)
		return false;
	if (a->family == AF_INET) {
		x = (const uint8_t *)&a->v4.s_addr;
		y = (const uint8_t *)&b->v4.s_addr;
	} else {
		x = a->v6.s6_addr;
		y = b->v6.s6_addr;
	}
	unsigned int full = plen / 8, rest = plen % 8;
	if (memcmp(x, y, full))
		return false;
	if (rest) {
		uint8_t m = (uint8_t)(0xffu << (8 - rest));
		if ((x[full] ^ y[full]) & m)
			return false;
	}
	return true;
}

bool fg_flow_filter_match(const struct fg_flow_filter *f,
			  const struct fg_flow_info *i)
{
	if (f->service_id >= 0 && (uint64_t)f->service_id != i->service_id)
		return false;
	if (f->core >= 0 && f->core != i->core)
		return false;
	if (f->state >= 0) {
		const char *n = fg_flow_state_name(f->state);
		if (!n || strcasecmp(n, i->state))
			return false;
	} else if (f->state_name[0] && strcasecmp(f->state_name, i->state)) {
		return false;
	}
	if (f->has_backend) {
		if (!fg_addr_equal(&f->backend, &i->backend))
			return false;
		if (f->backend_port && f->backend_port != i->backend_port)
			return false;
	}
	if (f->has_client && !addr_prefix_match(&f->client, &i->src, f->client_plen))
		return false;
	if (f->has_client_port && f->client_port != i->sport)
		return false;
	if (f->has_nat_addr && (!i->nat_addr.family || !fg_addr_equal(&f->nat_addr, &i->nat_addr)))
		return false;
	if (f->has_nat_port && (!i->nat_addr.family || f->nat_port != i->nat_port))
		return false;
	if (i->idle_ms < f->idle_min_ms || i->idle_ms > f->idle_max_ms ||
	    i->lifetime_ms < f->life_min_ms || i->lifetime_ms > f->life_max_ms)
		return false;
	if (f->has_tuple) {
		/* either direction: the client's tuple, or for NAT the reply
		 * tuple a backend sees (backend:port -> balancer NAT addr:port) */
		bool fwd = f->sport == i->sport && f->dport == i->dport &&
			   fg_addr_equal(&f->src, &i->src) && fg_addr_equal(&f->dst, &i->dst);
		bool reply = i->nat_addr.family && i->backend.family &&
			     f->sport == i->backend_port && f->dport == i->nat_port &&
			     fg_addr_equal(&f->src, &i->backend) &&
			     fg_addr_equal(&f->dst, &i->nat_addr);
		if (f->proto != i->proto || (!fwd && !reply))
			return false;
	}
	return true;
}

static const char *proto_name(uint8_t p, char *b, size_t n)
{
	if (p == IPPROTO_TCP)
		return "tcp";
	if (p == IPPROTO_UDP)
		return "udp";
	if (p == IPPROTO_ICMP)
		return "icmp";
	if (p == IPPROTO_ICMPV6)
		return "icmpv6";
	snprintf(b, n, "%u", p);
	return b;
}

/* The general writer: used when a string field needs escaping. */
static void flow_info_to_json_slow(struct fg_json_writer *w, const char *key,
				   const struct fg_flow_info *f)
{
	char a[INET6_ADDRSTRLEN], pb[8];
	fg_jw_obj_open(w, key);
	fg_jw_str(w, "family", f->src.family == AF_INET6 ? "ipv6" : "ipv4");
	fg_jw_str(w, "proto", proto_name(f->proto, pb, sizeof(pb)));
	fg_jw_str(w, "src", fg_addr_format(&f->src, a, sizeof(a)));
	fg_jw_u64(w, "sport", f->sport);
	fg_jw_str(w, "dst", fg_addr_format(&f->dst, a, sizeof(a)));
	fg_jw_u64(w, "dport", f->dport);
	fg_jw_str(w, "state", f->state);
	fg_jw_u64(w, "service_id", f->service_id);
	fg_jw_str(w, "service", f->service);
	fg_jw_u64(w, "backend_id", f->backend_id);
	if (f->backend.family)
		fg_jw_str(w, "backend", fg_addr_format(&f->backend, a, sizeof(a)));
	else
		fg_jw_null(w, "backend");
	fg_jw_u64(w, "backend_port", f->backend_port);
	if (f->nat_addr.family) {
		fg_jw_str(w, "nat_addr", fg_addr_format(&f->nat_addr, a, sizeof(a)));
		fg_jw_u64(w, "nat_port", f->nat_port);
	}
	fg_jw_i64(w, "core", f->core);
	fg_jw_u64(w, "packets", f->packets);
	fg_jw_u64(w, "bytes", f->bytes);
	fg_jw_u64(w, "created_ms", f->created_ms);
	fg_jw_u64(w, "lifetime_ms", f->lifetime_ms);
	fg_jw_u64(w, "idle_ms", f->idle_ms);
	fg_jw_u64(w, "age_ms", f->idle_ms);	/* deprecated alias of idle_ms */
	fg_jw_u64(w, "expires_ms", f->expires_ms);
	fg_jw_u64(w, "flags", f->flags);
	if (f->end_reason[0])
		fg_jw_str(w, "reason", f->end_reason);
	if (f->prev_state[0])
		fg_jw_str(w, "prev_state", f->prev_state);
	if (f->ts_ms)
		fg_jw_u64(w, "ts_ms", f->ts_ms);
	fg_jw_obj_close(w);
}

/* A string that JSON carries verbatim (printable ASCII, no '"' or '\'). */
static bool json_plain(const char *s, size_t max)
{
	for (size_t i = 0; i < max && s[i]; i++)
		if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] >= 0x7f || s[i] == '"' ||
		    s[i] == '\\')
			return false;
	return memchr(s, 0, max) != NULL;
}

#define FI_LIT(o, lit) (memcpy((o), (lit), sizeof(lit) - 1), (o) + sizeof(lit) - 1)

static char *fi_u64(char *o, uint64_t v)
{
	char b[24];
	char *e = b + sizeof(b), *p = fg_json_u64_dec(v, e);
	memcpy(o, p, (size_t)(e - p));
	return o + (e - p);
}

static char *fi_str(char *o, const char *s)
{
	size_t n = strlen(s);
	*o++ = '"';
	memcpy(o, s, n);
	o += n;
	*o++ = '"';
	return o;
}

static char *fi_addr(char *o, const struct fg_addr *a)
{
	char b[INET6_ADDRSTRLEN];
	return fi_str(o, fg_addr_format(a, b, sizeof(b)));
}

void fg_flow_info_to_json(struct fg_json_writer *w, const char *key,
			  const struct fg_flow_info *f)
{
	/* A listing writes a million of these: build the object in one buffer
	 * with constant keys instead of ~25 writer calls (3-4x faster). */
	if (!json_plain(f->state, sizeof(f->state)) || !json_plain(f->service, sizeof(f->service)) ||
	    f->end_reason[0] || f->prev_state[0] || f->ts_ms) {
		flow_info_to_json_slow(w, key, f);
		return;
	}
	char buf[1024], pb[8];
	char *o = buf;
	o = FI_LIT(o, "{\"family\":");
	o = fi_str(o, f->src.family == AF_INET6 ? "ipv6" : "ipv4");
	o = FI_LIT(o, ",\"proto\":");
	o = fi_str(o, proto_name(f->proto, pb, sizeof(pb)));
	o = FI_LIT(o, ",\"src\":");
	o = fi_addr(o, &f->src);
	o = FI_LIT(o, ",\"sport\":");
	o = fi_u64(o, f->sport);
	o = FI_LIT(o, ",\"dst\":");
	o = fi_addr(o, &f->dst);
	o = FI_LIT(o, ",\"dport\":");
	o = fi_u64(o, f->dport);
	o = FI_LIT(o, ",\"state\":");
	o = fi_str(o, f->state);
	o = FI_LIT(o, ",\"service_id\":");
	o = fi_u64(o, f->service_id);
	o = FI_LIT(o, ",\"service\":");
	o = fi_str(o, f->service);
	o = FI_LIT(o, ",\"backend_id\":");
	o = fi_u64(o, f->backend_id);
	o = FI_LIT(o, ",\"backend\":");
	if (f->backend.family)
		o = fi_addr(o, &f->backend);
	else
		o = FI_LIT(o, "null");
	o = FI_LIT(o, ",\"backend_port\":");
	o = fi_u64(o, f->backend_port);
	if (f->nat_addr.family) {
		o = FI_LIT(o, ",\"nat_addr\":");
		o = fi_addr(o, &f->nat_addr);
		o = FI_LIT(o, ",\"nat_port\":");
		o = fi_u64(o, f->nat_port);
	}
	o = FI_LIT(o, ",\"core\":");
	if (f->core < 0) {
		*o++ = '-';
		o = fi_u64(o, (uint64_t)0 - (uint64_t)(int64_t)f->core);
	} else {
		o = fi_u64(o, (uint64_t)f->core);
	}
	o = FI_LIT(o, ",\"packets\":");
	o = fi_u64(o, f->packets);
	o = FI_LIT(o, ",\"bytes\":");
	o = fi_u64(o, f->bytes);
	o = FI_LIT(o, ",\"created_ms\":");
	o = fi_u64(o, f->created_ms);
	o = FI_LIT(o, ",\"lifetime_ms\":");
	o = fi_u64(o, f->lifetime_ms);
	o = FI_LIT(o, ",\"idle_ms\":");
	o = fi_u64(o, f->idle_ms);
	o = FI_LIT(o, ",\"age_ms\":");
	o = fi_u64(o, f->idle_ms);
	o = FI_LIT(o, ",\"expires_ms\":");
	o = fi_u64(o, f->expires_ms);
	o = FI_LIT(o, ",\"flags\":");
	o = fi_u64(o, f->flags);
	*o++ = '}';
	fg_jw_json(w, key, buf, (size_t)(o - buf));
}

static int get_addr(const struct fg_json *o, const char *k, struct fg_addr *a, bool opt)
{
	const char *s;
	int rc = fg_json_get_str(o, k, &s);
	if (rc == -ENOENT && opt) {
		memset(a, 0, sizeof(*a));
		return 0;
	}
	if (rc)
		return -EINVAL;
	return fg_addr_parse(s, a);
}

static int get_u(const struct fg_json *o, const char *k, uint64_t max, uint64_t *out)
{
	if (fg_json_get_u64(o, k, out) || *out > max)
		return -EINVAL;
	return 0;
}

int fg_flow_info_from_json(const struct fg_json *o, struct fg_flow_info *f)
{
	uint64_t u;
	int64_t i;
	const char *s;
	memset(f, 0, sizeof(*f));
	if (!o || o->type != FG_JSON_OBJ)
		return -EINVAL;
	if (get_addr(o, "src", &f->src, false) || get_addr(o, "dst", &f->dst, false) ||
	    get_addr(o, "backend", &f->backend, true) || get_addr(o, "nat_addr", &f->nat_addr, true))
		return -EINVAL;
	if (get_u(o, "sport", 65535, &u))
		return -EINVAL;
	f->sport = (uint16_t)u;
	if (get_u(o, "dport", 65535, &u))
		return -EINVAL;
	f->dport = (uint16_t)u;
	if (fg_json_get_str(o, "proto", &s))
		return -EINVAL;
	if (!strcmp(s, "tcp"))
		f->proto = IPPROTO_TCP;
	else if (!strcmp(s, "udp"))
		f->proto = IPPROTO_UDP;
	else if (!strcmp(s, "icmp"))
		f->proto = IPPROTO_ICMP;
	else if (!strcmp(s, "icmpv6"))
		f->proto = IPPROTO_ICMPV6;
	else
		f->proto = (uint8_t)atoi(s);
	if (fg_json_get_str(o, "state", &s))
		return -EINVAL;
	snprintf(f->state, sizeof(f->state), "%s", s);
	if (fg_json_get_str(o, "service", &s))
		return -EINVAL;
	snprintf(f->service, sizeof(f->service), "%s", s);
	if (get_u(o, "service_id", UINT32_MAX, &u))
		return -EINVAL;
	f->service_id = (uint32_t)u;
	if (get_u(o, "backend_id", UINT32_MAX, &u))
		return -EINVAL;
	f->backend_id = (uint32_t)u;
	if (get_u(o, "backend_port", 65535, &u))
		return -EINVAL;
	f->backend_port = (uint16_t)u;
	if (!fg_json_get_u64(o, "nat_port", &u) && u <= 65535)
		f->nat_port = (uint16_t)u;
	if (!fg_json_get_str(o, "reason", &s))
		snprintf(f->end_reason, sizeof(f->end_reason), "%s", s);
	if (!fg_json_get_str(o, "prev_state", &s))
		snprintf(f->prev_state, sizeof(f->prev_state), "%s", s);
	/* optional: written by newer daemons (age_ms is idle_ms's old name) */
	(void)fg_json_get_u64(o, "created_ms", &f->created_ms);
	(void)fg_json_get_u64(o, "lifetime_ms", &f->lifetime_ms);
	(void)fg_json_get_u64(o, "ts_ms", &f->ts_ms);
	if (fg_json_get_u64(o, "idle_ms", &f->idle_ms) &&
	    get_u(o, "age_ms", UINT64_MAX, &f->idle_ms))
		return -EINVAL;
	if (fg_json_get_i64(o, "core", &i) || i < -1 || i > INT32_MAX)
		return -EINVAL;
	f->core = (int32_t)i;
	if (get_u(o, "packets", UINT64_MAX, &f->packets) ||
	    get_u(o, "bytes", UINT64_MAX, &f->bytes) ||
	    get_u(o, "expires_ms", UINT64_MAX, &f->expires_ms))
		return -EINVAL;
	if (!get_u(o, "flags", 255, &u))
		f->flags = (uint8_t)u;
	return 0;
}
