/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fgctl: operate a running flowgate through its control socket.
 * Verbs in the spirit of ipvsadm and conntrack; human tables by default,
 * --json on everything.  Exit codes: 0 ok, 1 error (daemon said no, daemon
 * unreachable, invalid config), 2 usage.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "fg_config_parse.h"
#include "fg_proto.h"

#define EXIT_OK 0
#define EXIT_ERR 1
#define EXIT_USAGE 2

static bool g_json;
static const char *g_socket;

static const char usage_text[] =
	"usage: fgctl [-s|--socket PATH] [--json] <command> [args]\n"
	"\n"
	"services and backends:\n"
	"  service add VIP:PORT/PROTO [--mode dsr-ipip|dsr-gue|nat] [--sched maglev|lc] [--name N]\n"
	"  service del VIP:PORT/PROTO\n"
	"  service list\n"
	"  backend add SERVICE ADDR[:PORT] [--weight W]\n"
	"  backend del SERVICE ADDR[:PORT]\n"
	"  backend list [SERVICE]\n"
	"  backend weight SERVICE ADDR[:PORT] W\n"
	"  backend drain|undrain SERVICE ADDR[:PORT]\n"
	"flows (connection tracking):\n"
	"  flows list   [--service S] [--backend B] [--state ST] [--core N] [--limit N]\n"
	"  flows get    SRC:PORT DST:PORT tcp|udp\n"
	"  flows delete [--service S] [--backend B] [--state ST] [--core N] [--limit N] [--all]\n"
	"  flows count  [--per-core]\n"
	"  flows watch  (NEW/DESTROY events until Ctrl-C)\n"
	"state:\n"
	"  stats [--per-core] [--service S]\n"
	"  health\n"
	"  ping\n"
	"configuration:\n"
	"  config apply FILE [--allow-empty]\n"
	"                      validate, then apply all-or-nothing; a change of a\n"
	"                      restart-only setting (ports, conntrack, control_socket)\n"
	"                      is refused; a file without services needs --allow-empty\n"
	"  config show         the running config in file syntax\n"
	"  config check FILE   validate; with a running flowgate, also check its port\n"
	"                      names against the devices and note restart-only changes\n"
	"\n"
	"SERVICE is VIP:PORT/PROTO (e.g. 10.0.0.100:80/tcp, [fd00::100]:443/tcp) or a service name.\n"
	"IPv6 addresses with a port are written [addr]:port.\n"
	"Socket: -s PATH, else $FLOWGATE_SOCKET, else " FG_CTL_DEFAULT_SOCKET ".\n"
	"Exit codes: 0 ok, 1 error, 2 usage.\n";

static int usage_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int usage_err(const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "fgctl: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nrun 'fgctl --help' for the commands\n");
	return EXIT_USAGE;
}

static int report_error(const char *error, const char *hint)
{
	if (g_json) {
		struct fg_json_writer w;
		fg_jw_init(&w, 0);
		fg_jw_obj_open(&w, NULL);
		fg_jw_bool(&w, "ok", false);
		fg_jw_str(&w, "error", error);
		if (hint && *hint)
			fg_jw_str(&w, "hint", hint);
		fg_jw_obj_close(&w);
		printf("%s\n", w.buf ? w.buf : "{}");
		fg_jw_fini(&w);
	}
	fprintf(stderr, "fgctl: %s\n", error);
	if (hint && *hint)
		fprintf(stderr, "hint: %s\n", hint);
	return EXIT_ERR;
}

/* ---- connection ----------------------------------------------------------- */

struct conn {
	int fd;
	char *buf;
	size_t len, off, cap;
};

/* run_probe()'s answer when no daemon listens (not an exit code) */
#define RUN_NO_DAEMON (-1)

/* @p probe: no daemon is not an error (RUN_NO_DAEMON, nothing printed). */
static int conn_open(struct conn *c, bool probe)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char msg[512];
	memset(c, 0, sizeof(*c));
	if (strlen(g_socket) >= sizeof(sa.sun_path)) {
		snprintf(msg, sizeof(msg), "socket path too long: %s", g_socket);
		return report_error(msg, NULL);
	}
	strcpy(sa.sun_path, g_socket);
	c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (c->fd < 0 || connect(c->fd, (struct sockaddr *)&sa, sizeof(sa))) {
		int e = errno;
		snprintf(msg, sizeof(msg), "cannot connect to flowgate at %s: %s", g_socket,
			 strerror(e));
		if (c->fd >= 0)
			close(c->fd);
		c->fd = -1;
		if (probe && (e == ENOENT || e == ECONNREFUSED || e == ENOTDIR))
			return RUN_NO_DAEMON;
		return report_error(msg, e == EACCES ?
				    "the socket is 0600: run fgctl as the daemon's user (root)" :
				    "is flowgate running? Point fgctl at its socket with -s PATH or "
				    "FLOWGATE_SOCKET");
	}
	c->cap = 1u << 20;
	c->buf = malloc(c->cap);
	if (!c->buf)
		return report_error("out of memory", NULL);
	return 0;
}

static void conn_close(struct conn *c)
{
	if (c->fd >= 0)
		close(c->fd);
	free(c->buf);
}

static int conn_send(struct conn *c, const char *s, size_t n)
{
	while (n) {
		ssize_t k = send(c->fd, s, n, MSG_NOSIGNAL);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -errno;
		s += k;
		n -= (size_t)k;
	}
	return 0;
}

/* Next line (without '\n'), valid until the next call.  NULL at EOF/error. */
static char *conn_line(struct conn *c, size_t *len)
{
	for (;;) {
		char *nl = memchr(c->buf + c->off, '\n', c->len - c->off);
		if (nl) {
			char *line = c->buf + c->off;
			*len = (size_t)(nl - line);
			*nl = 0;
			c->off += *len + 1;
			return line;
		}
		if (c->off) {
			memmove(c->buf, c->buf + c->off, c->len - c->off);
			c->len -= c->off;
			c->off = 0;
		}
		if (c->cap - c->len < 65536) {
			if (c->cap >= (512u << 20))
				return NULL;
			char *nb = realloc(c->buf, c->cap * 2);
			if (!nb)
				return NULL;
			c->buf = nb;
			c->cap *= 2;
		}
		ssize_t k = recv(c->fd, c->buf + c->len, c->cap - c->len - 1, 0);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return NULL;
		c->len += (size_t)k;
	}
}

/* ---- request helpers ------------------------------------------------------ */

/* The request under construction: command + args. */
struct req {
	struct fg_json_writer w;
};

static void req_begin(struct req *r, const char *cmd)
{
	fg_jw_init(&r->w, FG_PROTO_MAX_REQUEST);
	fg_proto_req_begin(&r->w, 1, cmd);
}

/* Stream item callback.  @p resp is NULL when the line was not parsed
 * (--json passthrough of an item line: see item_data_slice). */
typedef int (*item_fn)(const struct fg_proto_resp *resp, const char *line, size_t len,
		       void *arg);

static bool item_data_slice(const char *line, size_t len, const char **d, size_t *dl);

/*
 * Sends the request and reads replies: stream items go to @p item, the
 * final reply's data to @p final.  @return exit code.
 */
static int run_probe(struct req *r, bool probe, item_fn item, void *item_arg,
		     int (*final)(const struct fg_json *data, void *arg), void *final_arg)
{
	struct conn c;
	fg_proto_req_end(&r->w);
	if (fg_jw_error(&r->w)) {
		fg_jw_fini(&r->w);
		return report_error("request too large", "split it into smaller changes");
	}
	int rc = conn_open(&c, probe);
	if (rc) {
		fg_jw_fini(&r->w);
		return rc;
	}
	if (conn_send(&c, r->w.buf, r->w.len)) {
		fg_jw_fini(&r->w);
		conn_close(&c);
		return report_error("connection to flowgate lost while sending", NULL);
	}
	fg_jw_fini(&r->w);
	for (;;) {
		size_t len;
		char *line = conn_line(&c, &len);
		if (!line) {
			conn_close(&c);
			return report_error("flowgate closed the connection without a reply",
					    "check the daemon's log");
		}
		struct fg_proto_resp resp;
		char err[256];
		const char *ds;
		size_t dl;
		/* --json listings pass item lines through without a parse: a
		 * million flows would otherwise cost a second per million */
		if (item && g_json && item_data_slice(line, len, &ds, &dl)) {
			rc = item(NULL, line, len, item_arg);
			if (rc) {
				conn_close(&c);
				return rc;
			}
			continue;
		}
		if (fg_proto_resp_parse(line, len, &resp, err, sizeof(err))) {
			fg_proto_resp_free(&resp);
			conn_close(&c);
			return report_error(err, NULL);
		}
		if (resp.more) {
			rc = item ? item(&resp, line, len, item_arg) : 0;
			fg_proto_resp_free(&resp);
			if (rc) {
				conn_close(&c);
				return rc;
			}
			continue;
		}
		if (!resp.ok) {
			rc = report_error(resp.error, resp.hint);
		} else if (final) {
			rc = final(resp.data, final_arg);
		} else {
			rc = EXIT_OK;
		}
		fg_proto_resp_free(&resp);
		conn_close(&c);
		return rc;
	}
}

static int run(struct req *r, item_fn item, void *item_arg,
	       int (*final)(const struct fg_json *data, void *arg), void *final_arg)
{
	return run_probe(r, false, item, item_arg, final, final_arg);
}

static void print_json(const struct fg_json *v)
{
	struct fg_json_writer w;
	fg_jw_init(&w, 0);
	fg_jw_value(&w, NULL, v);
	printf("%s\n", w.buf ? w.buf : "null");
	fg_jw_fini(&w);
}

static int final_json(const struct fg_json *data, void *arg)
{
	(void)arg;
	print_json(data);
	return EXIT_OK;
}

/* ---- option parsing ------------------------------------------------------- */

struct opt {
	const char *name;  /* "--weight" */
	bool has_arg;
	const char *val;   /* NULL = absent; "" for a flag that was given */
};

/* Splits argv into positionals and known options.  @return 0 or exit code. */
static int parse_opts(int argc, char **argv, struct opt *opts, unsigned int nopts,
		      const char **pos, unsigned int *npos, unsigned int maxpos)
{
	*npos = 0;
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i];
		if (a[0] == '-' && a[1] == '-' && a[2]) {
			const char *eq = strchr(a, '=');
			size_t n = eq ? (size_t)(eq - a) : strlen(a);
			struct opt *o = NULL;
			for (unsigned k = 0; k < nopts; k++)
				if (strlen(opts[k].name) == n && !strncmp(opts[k].name, a, n))
					o = &opts[k];
			if (!o)
				return usage_err("unknown option '%s'", a);
			if (o->has_arg) {
				if (eq)
					o->val = eq + 1;
				else if (i + 1 < argc)
					o->val = argv[++i];
				else
					return usage_err("option %s needs a value", o->name);
			} else {
				if (eq)
					return usage_err("option %s takes no value", o->name);
				o->val = "";
			}
			continue;
		}
		if (*npos >= maxpos)
			return usage_err("unexpected argument '%s'", a);
		pos[(*npos)++] = a;
	}
	return 0;
}

static bool parse_u64(const char *s, uint64_t max, uint64_t *out)
{
	if (!s || !*s || !isdigit((unsigned char)*s))
		return false;
	errno = 0;
	char *end;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || *end || v > max)
		return false;
	*out = v;
	return true;
}

static int check_service(const char *s)
{
	struct fg_addr a;
	uint16_t p;
	uint8_t pr;
	if (strchr(s, ':') && fg_service_spec_parse(s, &a, &p, &pr))
		return usage_err("bad service '%s': write VIP:PORT/PROTO, e.g. 10.0.0.1:80/tcp "
				 "or [fd00::1]:443/tcp", s);
	return 0;
}

static int check_backend(const char *s)
{
	struct fg_addr a;
	uint16_t p;
	if (fg_endpoint_parse(s, false, &a, &p))
		return usage_err("bad backend address '%s': write ADDR, ADDR:PORT or "
				 "[IPv6]:PORT", s);
	return 0;
}

/* ---- human output --------------------------------------------------------- */

static const char *jstr(const struct fg_json *o, const char *k)
{
	const char *s;
	return fg_json_get_str(o, k, &s) ? "-" : s;
}

static uint64_t jnum(const struct fg_json *o, const char *k)
{
	uint64_t v = 0;
	(void)fg_json_get_u64(o, k, &v);
	return v;
}

static void print_backend_row(const struct fg_json *b)
{
	char ep[96];
	const char *addr = jstr(b, "addr");
	if (strchr(addr, ':'))
		snprintf(ep, sizeof(ep), "[%s]:%" PRIu64, addr, jnum(b, "port"));
	else
		snprintf(ep, sizeof(ep), "%s:%" PRIu64, addr, jnum(b, "port"));
	bool drained = false;
	(void)fg_json_get_bool(b, "drained", &drained);
	printf("  -> %-40s %6" PRIu64 " %8" PRIu64 "  %-8s %s\n", ep, jnum(b, "id"),
	       jnum(b, "weight"), drained ? "drained" : "active", jstr(b, "health"));
}

static void print_service_block(const struct fg_json *s)
{
	printf("%-44s %-10s %-7s %-8s %-7s %s\n", jstr(s, "service"), jstr(s, "mode"),
	       jstr(s, "sched"), jstr(s, "on_fail"), jstr(s, "health_check"),
	       *jstr(s, "name") ? jstr(s, "name") : "-");
	const struct fg_json *bs = fg_json_get(s, "backends");
	if (bs && bs->type == FG_JSON_ARR)
		for (const struct fg_json *b = bs->child; b; b = b->next)
			print_backend_row(b);
}

static void print_services_header(void)
{
	printf("%-44s %-10s %-7s %-8s %-7s %s\n", "SERVICE", "MODE", "SCHED", "ON_FAIL",
	       "HEALTH", "NAME");
	printf("  -> %-40s %6s %8s  %-8s %s\n", "BACKEND", "ID", "WEIGHT", "STATE", "HEALTH");
}

static int final_services(const struct fg_json *data, void *arg)
{
	(void)arg;
	if (g_json)
		return final_json(data, NULL);
	if (!data || data->type != FG_JSON_ARR)
		return report_error("unexpected reply (not a list)", NULL);
	print_services_header();
	for (const struct fg_json *s = data->child; s; s = s->next)
		print_service_block(s);
	return EXIT_OK;
}

static int final_one_service(const struct fg_json *data, void *arg)
{
	const char *verb = arg;
	if (g_json)
		return final_json(data, NULL);
	printf("%s service %s\n", verb, jstr(data, "service"));
	print_services_header();
	print_service_block(data);
	return EXIT_OK;
}

static int final_one_backend(const struct fg_json *data, void *arg)
{
	const char *verb = arg;
	if (g_json)
		return final_json(data, NULL);
	printf("%s backend\n", verb);
	printf("  -> %-40s %6s %8s  %-8s %s\n", "BACKEND", "ID", "WEIGHT", "STATE", "HEALTH");
	print_backend_row(data);
	return EXIT_OK;
}

static void fmt_ms(uint64_t ms, char *b, size_t n)
{
	if (ms < 10000)
		snprintf(b, n, "%" PRIu64 "ms", ms);
	else if (ms < 600000)
		snprintf(b, n, "%" PRIu64 "s", ms / 1000);
	else
		snprintf(b, n, "%" PRIu64 "m", ms / 60000);
}

struct flows_out {
	uint64_t n;
	bool header;
};

static void print_flow_row(const struct fg_json *f)
{
	char src[96], dst[96], be[112], age[24], exp[24];
	const char *fam = jstr(f, "family");
	bool v6 = !strcmp(fam, "ipv6");
	snprintf(src, sizeof(src), v6 ? "[%s]:%" PRIu64 : "%s:%" PRIu64, jstr(f, "src"),
		 jnum(f, "sport"));
	snprintf(dst, sizeof(dst), v6 ? "[%s]:%" PRIu64 : "%s:%" PRIu64, jstr(f, "dst"),
		 jnum(f, "dport"));
	const char *ba = jstr(f, "backend");
	if (!strcmp(ba, "-"))
		snprintf(be, sizeof(be), "(gone id %" PRIu64 ")", jnum(f, "backend_id"));
	else
		snprintf(be, sizeof(be), strchr(ba, ':') ? "[%s]:%" PRIu64 : "%s:%" PRIu64, ba,
			 jnum(f, "backend_port"));
	fmt_ms(jnum(f, "age_ms"), age, sizeof(age));
	fmt_ms(jnum(f, "expires_ms"), exp, sizeof(exp));
	int64_t core = 0;
	(void)fg_json_get_i64(f, "core", &core);
	printf("%-4s %-12s %-30s %-30s %-30s %4" PRId64 " %10" PRIu64 " %12" PRIu64 " %7s %7s\n",
	       jstr(f, "proto"), jstr(f, "state"), src, dst, be, core, jnum(f, "packets"),
	       jnum(f, "bytes"), age, exp);
}

static void print_flow_header(void)
{
	printf("%-4s %-12s %-30s %-30s %-30s %4s %10s %12s %7s %7s\n", "PROT", "STATE",
	       "SOURCE", "DESTINATION (VIP)", "BACKEND", "CORE", "PACKETS", "BYTES", "IDLE",
	       "EXPIRES");
}

/* "data" of an item line we wrote ourselves, without a re-parse: the
 * server writes {"v":1,"id":N,"more":true,"data":{...}} */
static bool item_data_slice(const char *line, size_t len, const char **d, size_t *dl)
{
	static const char key[] = "\"more\":true,\"data\":";
	static const char start[] = "{\"v\":1,\"id\":";
	if (len < sizeof(start) || memcmp(line, start, sizeof(start) - 1) || line[len - 1] != '}')
		return false;
	const char *p = memmem(line, len < 64 ? len : 64, key, sizeof(key) - 1);
	if (!p)
		return false;
	*d = p + sizeof(key) - 1;
	*dl = (size_t)(line + len - 1 - *d);
	return true;
}

static int item_flow(const struct fg_proto_resp *resp, const char *line, size_t len, void *arg)
{
	struct flows_out *o = arg;
	if (g_json) {
		const char *d;
		size_t dl;
		fputs(o->n ? ",\n" : "[\n", stdout);
		if (!resp || item_data_slice(line, len, &d, &dl)) {
			if (!resp && !item_data_slice(line, len, &d, &dl))
				return report_error("malformed stream item from the daemon", NULL);
			fwrite(d, 1, dl, stdout);
		} else {
			struct fg_json_writer w;
			fg_jw_init(&w, 0);
			fg_jw_value(&w, NULL, resp->data);
			fputs(w.buf ? w.buf : "null", stdout);
			fg_jw_fini(&w);
		}
	} else {
		if (!o->header) {
			print_flow_header();
			o->header = true;
		}
		print_flow_row(resp->data);
	}
	o->n++;
	return 0;
}

static int final_flows(const struct fg_json *data, void *arg)
{
	struct flows_out *o = arg;
	if (g_json) {
		fputs(o->n ? "\n]\n" : "[]\n", stdout);
	} else {
		if (!o->header && !o->n)
			print_flow_header();
		fprintf(stderr, "fgctl: %" PRIu64 " flow entr%s shown.\n", jnum(data, "count"),
			jnum(data, "count") == 1 ? "y" : "ies");
	}
	return EXIT_OK;
}

static int item_watch(const struct fg_proto_resp *resp, const char *line, size_t len, void *arg)
{
	struct flows_out *o = arg;
	(void)line;
	(void)len;
	if (!resp)
		return report_error("malformed event from the daemon", NULL);
	if (!g_json && !o->header) {
		printf("%-10s", "");
		print_flow_header();
		o->header = true;
	}
	if (g_json) {
		struct fg_json_writer w;
		fg_jw_init(&w, 0);
		fg_jw_obj_open(&w, NULL);
		fg_jw_str(&w, "event", resp->event ? resp->event : "?");
		fg_jw_value(&w, "flow", resp->data);
		fg_jw_obj_close(&w);
		printf("%s\n", w.buf ? w.buf : "{}");
		fg_jw_fini(&w);
	} else {
		const char *why = NULL;

		printf("[%-7s] ", resp->event ? resp->event : "?");
		print_flow_row(resp->data);
		if (!fg_json_get_str(resp->data, "reason", &why))
			printf("%-10s  reason: %s\n", "", why);
	}
	fflush(stdout);
	return 0;
}

static void print_tree(const struct fg_json *v, int indent)
{
	unsigned idx = 0;
	for (const struct fg_json *c = v->child; c; c = c->next, idx++) {
		char label[80];
		if (v->type == FG_JSON_OBJ)
			snprintf(label, sizeof(label), "%s", c->key);
		else
			snprintf(label, sizeof(label), "[%u]", idx);
		switch (c->type) {
		case FG_JSON_OBJ:
		case FG_JSON_ARR: {
			/* an array of numbers prints on one line */
			bool flat = c->type == FG_JSON_ARR;
			for (const struct fg_json *g = c->child; g && flat; g = g->next)
				flat = g->type == FG_JSON_NUM;
			if (flat) {
				printf("%*s%s:", indent, "", label);
				for (const struct fg_json *g = c->child; g; g = g->next)
					if (g->is_uint)
						printf(" %" PRIu64, g->u);
					else
						printf(" %g", g->d);
				printf("\n");
				break;
			}
			/* label objects in arrays by their "service"/"addr"/"name" */
			const char *tag = NULL;
			if (c->type == FG_JSON_OBJ && v->type == FG_JSON_ARR &&
			    fg_json_get_str(c, "service", &tag) && fg_json_get_str(c, "addr", &tag) &&
			    fg_json_get_str(c, "name", &tag))
				tag = NULL;
			printf("%*s%s%s%s:\n", indent, "", label, tag ? " " : "", tag ? tag : "");
			print_tree(c, indent + 2);
			break;
		}
		case FG_JSON_NUM:
			if (c->is_uint)
				printf("%*s%-32s %" PRIu64 "\n", indent, "", label, c->u);
			else if (c->is_int)
				printf("%*s%-32s %" PRId64 "\n", indent, "", label, c->i);
			else
				printf("%*s%-32s %.3f\n", indent, "", label, c->d);
			break;
		case FG_JSON_STR:
			printf("%*s%-32s %s\n", indent, "", label, c->str);
			break;
		case FG_JSON_BOOL:
			printf("%*s%-32s %s\n", indent, "", label, c->b ? "true" : "false");
			break;
		case FG_JSON_NULL:
			printf("%*s%-32s -\n", indent, "", label);
			break;
		}
	}
}

static int final_tree(const struct fg_json *data, void *arg)
{
	(void)arg;
	if (g_json)
		return final_json(data, NULL);
	if (data && (data->type == FG_JSON_OBJ || data->type == FG_JSON_ARR))
		print_tree(data, 0);
	else if (data)
		print_json(data);
	return EXIT_OK;
}

static int final_count(const struct fg_json *data, void *arg)
{
	(void)arg;
	if (g_json)
		return final_json(data, NULL);
	printf("total %" PRIu64 "\n", jnum(data, "total"));
	const struct fg_json *ps = fg_json_get(data, "per_state");
	if (ps && ps->type == FG_JSON_OBJ)
		for (const struct fg_json *c = ps->child; c; c = c->next)
			if (c->is_uint && c->u)
				printf("  %-12s %" PRIu64 "\n", c->key, c->u);
	const struct fg_json *pc = fg_json_get(data, "per_core");
	if (pc && pc->type == FG_JSON_ARR) {
		printf("%-6s %s\n", "CORE", "FLOWS");
		unsigned i = 0;
		for (const struct fg_json *c = pc->child; c; c = c->next, i++)
			printf("%-6u %" PRIu64 "\n", i, c->is_uint ? c->u : 0);
	}
	return EXIT_OK;
}

static int final_deleted(const struct fg_json *data, void *arg)
{
	(void)arg;
	if (g_json)
		return final_json(data, NULL);
	printf("%" PRIu64 " flow entr%s deleted\n", jnum(data, "deleted"),
	       jnum(data, "deleted") == 1 ? "y" : "ies");
	return EXIT_OK;
}

static int final_health(const struct fg_json *data, void *arg)
{
	(void)arg;
	if (g_json)
		return final_json(data, NULL);
	const struct fg_json *bs = fg_json_get(data, "backends");
	printf("%-36s %-28s %-5s %-5s %9s %8s %8s  %s\n", "SERVICE", "BACKEND", "CHECK", "STATE",
	       "SINCE", "OK", "FAILED", "LAST ERROR");
	if (!bs || bs->type != FG_JSON_ARR)
		return EXIT_OK;
	for (const struct fg_json *b = bs->child; b; b = b->next) {
		const struct fg_json *since = fg_json_get(b, "since_s");
		char sb[32];
		snprintf(sb, sizeof(sb), "%.1fs", since && since->type == FG_JSON_NUM ? since->d : 0);
		printf("%-36s %-28s %-5s %-5s %9s %8" PRIu64 " %8" PRIu64 "  %s\n",
		       jstr(b, "service"), jstr(b, "backend"), jstr(b, "check"), jstr(b, "state"), sb,
		       jnum(b, "successes"), jnum(b, "failures"),
		       *jstr(b, "last_error") ? jstr(b, "last_error") : "-");
		const struct fg_json *h = fg_json_get(b, "history");
		if (h && h->type == FG_JSON_ARR)
			for (const struct fg_json *e = h->child; e; e = e->next) {
				const struct fg_json *t = fg_json_get(e, "t");
				time_t tt = t && t->type == FG_JSON_NUM ? (time_t)t->d : 0;
				struct tm tm;
				char ts[32];
				localtime_r(&tt, &tm);
				strftime(ts, sizeof(ts), "%Y-%m-%d %H:%M:%S", &tm);
				printf("    %s  -> %-5s %s\n", ts, jstr(e, "state"), jstr(e, "reason"));
			}
	}
	return EXIT_OK;
}

static int final_config_show(const struct fg_json *data, void *arg)
{
	(void)arg;
	if (g_json)
		return final_json(data, NULL);
	fputs(jstr(data, "text"), stdout);
	return EXIT_OK;
}

static int final_config_check(const struct fg_json *data, void *arg)
{
	const char *file = arg;
	const char *restart = jstr(data, "restart_needed");
	if (g_json)
		return final_json(data, NULL);
	printf("%s: OK (%" PRIu64 " services, %" PRIu64 " backends; checked against the "
	       "running flowgate)\n", file, jnum(data, "services"), jnum(data, "backends"));
	if (restart && *restart)
		fprintf(stderr, "fgctl: note: %s: %s: takes effect only on a restart "
			"('config apply' refuses it)\n", file, restart);
	return EXIT_OK;
}

static int final_config_apply(const struct fg_json *data, void *arg)
{
	const char *file = arg;
	if (g_json)
		return final_json(data, NULL);
	printf("%s: applied (%" PRIu64 " services, %" PRIu64 " backends)\n", file,
	       jnum(data, "services"), jnum(data, "backends"));
	return EXIT_OK;
}

/* ---- verbs ---------------------------------------------------------------- */

static int cmd_service(int argc, char **argv)
{
	if (argc < 1)
		return usage_err("service: expected add, del or list");
	const char *sub = argv[0];
	struct opt o[] = { { "--mode", true, NULL }, { "--sched", true, NULL },
			   { "--name", true, NULL }, { "--on-fail", true, NULL } };
	const char *pos[2];
	unsigned np;
	int rc = parse_opts(argc - 1, argv + 1, o, 4, pos, &np, 2);
	if (rc)
		return rc;
	struct req r;
	if (!strcmp(sub, "list")) {
		if (np || o[0].val || o[1].val || o[2].val || o[3].val)
			return usage_err("service list takes no arguments");
		req_begin(&r, "service.list");
		return run(&r, NULL, NULL, final_services, NULL);
	}
	bool add = !strcmp(sub, "add");
	if (!add && strcmp(sub, "del"))
		return usage_err("service: unknown subcommand '%s' (add, del, list)", sub);
	if (np != 1)
		return usage_err("service %s: expected one VIP:PORT/PROTO", sub);
	if (add) {
		struct fg_addr a;
		uint16_t p;
		uint8_t pr;
		if (fg_service_spec_parse(pos[0], &a, &p, &pr))
			return usage_err("bad service '%s': write VIP:PORT/PROTO, e.g. "
					 "10.0.0.1:80/tcp or [fd00::1]:443/tcp", pos[0]);
	} else if ((rc = check_service(pos[0]))) {
		return rc;
	}
	if (!add && (o[0].val || o[1].val || o[2].val || o[3].val))
		return usage_err("service del takes no options");
	if (o[0].val && fg_mode_parse(o[0].val) < 0)
		return usage_err("--mode: '%s' is not dsr-ipip, dsr-gue or nat", o[0].val);
	if (o[1].val && fg_sched_parse(o[1].val) < 0)
		return usage_err("--sched: '%s' is not maglev or lc", o[1].val);
	if (o[3].val && strcmp(o[3].val, "keep") && strcmp(o[3].val, "reset"))
		return usage_err("--on-fail: '%s' is not keep or reset", o[3].val);
	req_begin(&r, add ? "service.add" : "service.del");
	fg_jw_str(&r.w, "service", pos[0]);
	if (o[0].val)
		fg_jw_str(&r.w, "mode", o[0].val);
	if (o[1].val)
		fg_jw_str(&r.w, "sched", o[1].val);
	if (o[2].val)
		fg_jw_str(&r.w, "name", o[2].val);
	if (o[3].val)
		fg_jw_str(&r.w, "on_fail", o[3].val);
	return run(&r, NULL, NULL, final_one_service, add ? "added" : "deleted");
}

static int cmd_backend(int argc, char **argv)
{
	if (argc < 1)
		return usage_err("backend: expected add, del, list, weight, drain or undrain");
	const char *sub = argv[0];
	struct opt o[] = { { "--weight", true, NULL } };
	const char *pos[3];
	unsigned np;
	int rc = parse_opts(argc - 1, argv + 1, o, 1, pos, &np, 3);
	if (rc)
		return rc;
	struct req r;
	uint64_t w = 1;
	if (!strcmp(sub, "list")) {
		if (np > 1 || o[0].val)
			return usage_err("backend list: expected at most one SERVICE");
		if (np && (rc = check_service(pos[0])))
			return rc;
		req_begin(&r, "backend.list");
		if (np)
			fg_jw_str(&r.w, "service", pos[0]);
		return run(&r, NULL, NULL, final_services, NULL);
	}
	static const char *const subs[] = { "add", "del", "weight", "drain", "undrain" };
	static const char *const cmds[] = { "backend.add", "backend.del", "backend.weight",
					    "backend.drain", "backend.undrain" };
	static const char *const verbs[] = { "added", "deleted", "re-weighted", "drained",
					     "undrained" };
	int k = -1;
	for (int i = 0; i < 5; i++)
		if (!strcmp(sub, subs[i]))
			k = i;
	if (k < 0)
		return usage_err("backend: unknown subcommand '%s' (add, del, list, weight, "
				 "drain, undrain)", sub);
	unsigned want = k == 2 ? 3 : 2;
	if (np != want)
		return usage_err("backend %s: expected SERVICE ADDR%s", sub, k == 2 ? " WEIGHT" : "");
	if (o[0].val && k != 0)
		return usage_err("--weight is for 'backend add' (use 'backend weight SERVICE ADDR W')");
	if ((rc = check_service(pos[0])) || (rc = check_backend(pos[1])))
		return rc;
	const char *ws = k == 2 ? pos[2] : o[0].val;
	if (ws && !parse_u64(ws, 65535, &w))
		return usage_err("weight '%s' is not an integer in 0..65535", ws);
	req_begin(&r, cmds[k]);
	fg_jw_str(&r.w, "service", pos[0]);
	fg_jw_str(&r.w, "addr", pos[1]);
	if (ws)
		fg_jw_u64(&r.w, "weight", w);
	return run(&r, NULL, NULL, final_one_backend, (void *)verbs[k]);
}

static int flow_filters(struct req *r, struct opt *o, bool *any)
{
	/* o: service, backend, state, core, limit */
	uint64_t v;
	int rc;
	*any = false;
	if (o[0].val) {
		if ((rc = check_service(o[0].val)))
			return rc;
		fg_jw_str(&r->w, "service", o[0].val);
		*any = true;
	}
	if (o[1].val) {
		if ((rc = check_backend(o[1].val)))
			return rc;
		fg_jw_str(&r->w, "backend", o[1].val);
		*any = true;
	}
	if (o[2].val) {
		if (fg_flow_state_lookup(o[2].val) <= 0)
			return usage_err("--state: '%s' is not a state (SYN_SENT SYN_RECV ESTABLISHED "
					 "FIN_WAIT CLOSE_WAIT LAST_ACK TIME_WAIT CLOSE UDP "
					 "UDP_STREAM OTHER)", o[2].val);
		fg_jw_str(&r->w, "state", o[2].val);
		*any = true;
	}
	if (o[3].val) {
		if (!parse_u64(o[3].val, 127, &v))
			return usage_err("--core: '%s' is not a worker index 0..127", o[3].val);
		fg_jw_u64(&r->w, "core", v);
		*any = true;
	}
	if (o[4].val) {
		if (!parse_u64(o[4].val, UINT64_MAX, &v) || !v)
			return usage_err("--limit: '%s' is not a positive integer", o[4].val);
		fg_jw_u64(&r->w, "limit", v);
	}
	return 0;
}

static int cmd_flows(int argc, char **argv)
{
	if (argc < 1)
		return usage_err("flows: expected list, get, delete, count or watch");
	const char *sub = argv[0];
	struct opt o[] = { { "--service", true, NULL }, { "--backend", true, NULL },
			   { "--state", true, NULL },   { "--core", true, NULL },
			   { "--limit", true, NULL },   { "--all", false, NULL },
			   { "--per-core", false, NULL } };
	const char *pos[3];
	unsigned np;
	int rc = parse_opts(argc - 1, argv + 1, o, 7, pos, &np, 3);
	if (rc)
		return rc;
	struct req r;
	bool any;
	struct flows_out fo = { 0 };
	bool filters_given = o[0].val || o[1].val || o[2].val || o[3].val || o[4].val;
	if (!strcmp(sub, "list") || !strcmp(sub, "delete")) {
		bool del = sub[0] == 'd';
		if (np)
			return usage_err("flows %s: unexpected argument '%s'", sub, pos[0]);
		if (o[6].val || (!del && o[5].val))
			return usage_err("flows %s: unknown option", sub);
		req_begin(&r, del ? "flows.delete" : "flows.list");
		if ((rc = flow_filters(&r, o, &any))) {
			fg_jw_fini(&r.w);
			return rc;
		}
		if (del && !any && !o[5].val) {
			fg_jw_fini(&r.w);
			return usage_err("flows delete: give a filter (--service, --backend, --state, "
					 "--core) or --all to delete every flow");
		}
		if (o[5].val)
			fg_jw_bool(&r.w, "all", true);
		if (del)
			return run(&r, NULL, NULL, final_deleted, NULL);
		return run(&r, item_flow, &fo, final_flows, &fo);
	}
	if (!strcmp(sub, "get")) {
		if (filters_given || o[5].val || o[6].val)
			return usage_err("flows get takes no options");
		if (np != 3)
			return usage_err("flows get: expected SRC:PORT DST:PORT tcp|udp");
		struct fg_addr a;
		uint16_t p;
		for (int i = 0; i < 2; i++)
			if (fg_endpoint_parse(pos[i], true, &a, &p))
				return usage_err("flows get: '%s' is not ADDR:PORT or [IPv6]:PORT",
						 pos[i]);
		if (strcasecmp(pos[2], "tcp") && strcasecmp(pos[2], "udp"))
			return usage_err("flows get: protocol '%s' is not tcp or udp", pos[2]);
		req_begin(&r, "flows.get");
		fg_jw_str(&r.w, "src", pos[0]);
		fg_jw_str(&r.w, "dst", pos[1]);
		fg_jw_str(&r.w, "proto", pos[2]);
		return run(&r, item_flow, &fo, final_flows, &fo);
	}
	if (!strcmp(sub, "count")) {
		if (np || filters_given || o[5].val)
			return usage_err("flows count takes only --per-core");
		req_begin(&r, "flows.count");
		if (o[6].val)
			fg_jw_bool(&r.w, "per_core", true);
		return run(&r, NULL, NULL, final_count, NULL);
	}
	if (!strcmp(sub, "watch")) {
		if (np || filters_given || o[5].val || o[6].val)
			return usage_err("flows watch takes no arguments");
		req_begin(&r, "flows.watch");
		return run(&r, item_watch, &fo, NULL, NULL);
	}
	return usage_err("flows: unknown subcommand '%s' (list, get, delete, count, watch)", sub);
}

static int cmd_stats(int argc, char **argv)
{
	struct opt o[] = { { "--per-core", false, NULL }, { "--service", true, NULL } };
	const char *pos[1];
	unsigned np;
	int rc = parse_opts(argc, argv, o, 2, pos, &np, 0);
	if (rc)
		return rc;
	if (o[1].val && (rc = check_service(o[1].val)))
		return rc;
	struct req r;
	req_begin(&r, "stats");
	if (o[0].val)
		fg_jw_bool(&r.w, "per_core", true);
	if (o[1].val)
		fg_jw_str(&r.w, "service", o[1].val);
	return run(&r, NULL, NULL, final_tree, NULL);
}

static char *read_file(const char *path, size_t *len, int *err)
{
	FILE *f = fopen(path, "r");
	if (!f) {
		*err = errno;
		return NULL;
	}
	size_t cap = 65536, n = 0;
	char *buf = malloc(cap);
	while (buf) {
		if (n + 1 >= cap) {
			if (cap >= FG_PROTO_MAX_REQUEST) {
				free(buf);
				fclose(f);
				*err = EFBIG;
				return NULL;
			}
			char *nb = realloc(buf, cap * 2);
			if (!nb)
				break;
			buf = nb;
			cap *= 2;
		}
		size_t k = fread(buf + n, 1, cap - n - 1, f);
		n += k;
		if (!k)
			break;
	}
	fclose(f);
	if (!buf) {
		*err = ENOMEM;
		return NULL;
	}
	buf[n] = 0;
	*len = n;
	return buf;
}

static int check_locally(const char *file, struct fg_config *cfg)
{
	struct fg_cfg_err ev[64];
	struct fg_cfg_errs e = { .v = ev, .max = 64 };
	int rc = fg_config_load(file, cfg, &e);
	if (!rc)
		return 0;
	if (g_json) {
		struct fg_json_writer w;
		fg_jw_init(&w, 0);
		fg_jw_obj_open(&w, NULL);
		fg_jw_bool(&w, "ok", false);
		fg_jw_str(&w, "file", file);
		fg_jw_arr_open(&w, "errors");
		for (unsigned i = 0; i < e.n && i < e.max; i++) {
			fg_jw_obj_open(&w, NULL);
			fg_jw_str(&w, "file", ev[i].file);
			fg_jw_u64(&w, "line", ev[i].line);
			fg_jw_str(&w, "error", ev[i].msg);
			fg_jw_obj_close(&w);
		}
		fg_jw_arr_close(&w);
		fg_jw_obj_close(&w);
		printf("%s\n", w.buf);
		fg_jw_fini(&w);
	}
	for (unsigned i = 0; i < e.n && i < e.max; i++) {
		if (ev[i].line)
			fprintf(stderr, "%s:%u: %s\n", ev[i].file, ev[i].line, ev[i].msg);
		else
			fprintf(stderr, "%s: %s\n", ev[i].file, ev[i].msg);
	}
	if (e.n > e.max)
		fprintf(stderr, "%s: ... and %u more problems\n", file, e.n - e.max);
	if (e.n)
		fprintf(stderr, "fgctl: %s: %u problem%s; nothing was applied\n", file, e.n,
			e.n == 1 ? "" : "s");
	else
		fprintf(stderr, "fgctl: %s: %s\n", file, strerror(-rc));
	return EXIT_ERR;
}

static int cmd_config(int argc, char **argv)
{
	if (argc < 1)
		return usage_err("config: expected apply, show or check");
	const char *sub = argv[0];
	struct req r;
	if (!strcmp(sub, "show")) {
		if (argc != 1)
			return usage_err("config show takes no arguments");
		req_begin(&r, "config.show");
		return run(&r, NULL, NULL, final_config_show, NULL);
	}
	bool apply = !strcmp(sub, "apply");
	if (!apply && strcmp(sub, "check"))
		return usage_err("config: unknown subcommand '%s' (apply, show, check)", sub);
	struct opt o[] = { { "--allow-empty", false, NULL } };
	const char *pos[1];
	unsigned np;
	int prc = parse_opts(argc - 1, argv + 1, o, apply ? 1 : 0, pos, &np, 1);
	if (prc)
		return prc;
	if (np != 1)
		return usage_err("config %s: expected one FILE", sub);
	const char *file = pos[0];
	bool allow_empty = o[0].val != NULL;
	struct fg_config cfg;
	int rc = check_locally(file, &cfg);
	uint32_t nb = 0;
	for (uint32_t i = 0; i < cfg.n_services; i++)
		nb += cfg.services[i].n_backends;
	uint32_t ns = cfg.n_services;
	fg_config_free(&cfg);
	if (rc)
		return rc;
	size_t len;
	int err;
	char *text = read_file(file, &len, &err);
	if (!text) {
		char msg[300];
		snprintf(msg, sizeof(msg), "%s: %s", file, strerror(err));
		return report_error(msg, NULL);
	}
	req_begin(&r, apply ? "config.apply" : "config.check");
	fg_jw_strn(&r.w, "text", text, len);
	fg_jw_str(&r.w, "name", file);
	if (allow_empty)
		fg_jw_bool(&r.w, "allow_empty", true);
	free(text);
	if (apply)
		return run(&r, NULL, NULL, final_config_apply, (void *)file);
	/* check: the running daemon knows its devices and its restart-only
	 * settings; without one, only the file itself can be checked */
	rc = run_probe(&r, true, NULL, NULL, final_config_check, (void *)file);
	if (rc != RUN_NO_DAEMON)
		return rc;
	if (g_json)
		printf("{\"ok\":true,\"services\":%u,\"backends\":%u,\"daemon_checked\":false}\n",
		       ns, nb);
	else
		printf("%s: OK (%u services, %u backends)\n", file, ns, nb);
	fprintf(stderr, "fgctl: note: no flowgate at %s: port names were not checked against "
		"devices, nor settings that need a restart\n", g_socket);
	return EXIT_OK;
}

static int cmd_simple(int argc, char **argv, const char *cmd,
		      int (*final)(const struct fg_json *, void *))
{
	if (argc)
		return usage_err("%s takes no arguments", cmd);
	struct req r;
	req_begin(&r, cmd);
	return run(&r, NULL, NULL, final, NULL);
}

int main(int argc, char **argv)
{
	signal(SIGPIPE, SIG_IGN);
	g_socket = getenv(FG_CTL_SOCKET_ENV);
	if (!g_socket || !*g_socket)
		g_socket = FG_CTL_DEFAULT_SOCKET;
	/* global options may appear anywhere; the rest is the command line */
	char **rest = calloc((size_t)argc + 1, sizeof(*rest));
	int nr = 0;
	if (!rest)
		return EXIT_ERR;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--json")) {
			g_json = true;
		} else if (!strcmp(a, "-s") || !strcmp(a, "--socket")) {
			if (i + 1 >= argc) {
				free(rest);
				return usage_err("%s needs a path", a);
			}
			g_socket = argv[++i];
		} else if (!strncmp(a, "--socket=", 9)) {
			g_socket = a + 9;
		} else if (!strcmp(a, "-h") || !strcmp(a, "--help") || !strcmp(a, "help")) {
			fputs(usage_text, stdout);
			free(rest);
			return EXIT_OK;
		} else {
			rest[nr++] = argv[i];
		}
	}
	int rc;
	if (!nr) {
		fputs(usage_text, stderr);
		rc = EXIT_USAGE;
	} else if (!strcmp(rest[0], "service")) {
		rc = cmd_service(nr - 1, rest + 1);
	} else if (!strcmp(rest[0], "backend")) {
		rc = cmd_backend(nr - 1, rest + 1);
	} else if (!strcmp(rest[0], "flows")) {
		rc = cmd_flows(nr - 1, rest + 1);
	} else if (!strcmp(rest[0], "stats")) {
		rc = cmd_stats(nr - 1, rest + 1);
	} else if (!strcmp(rest[0], "health")) {
		rc = cmd_simple(nr - 1, rest + 1, "health", final_health);
	} else if (!strcmp(rest[0], "ping")) {
		rc = cmd_simple(nr - 1, rest + 1, "ping", final_tree);
	} else if (!strcmp(rest[0], "config")) {
		rc = cmd_config(nr - 1, rest + 1);
	} else {
		rc = usage_err("unknown command '%s'", rest[0]);
	}
	free(rest);
	if (fflush(stdout) && rc == EXIT_OK)
		rc = EXIT_ERR;
	return rc;
}
