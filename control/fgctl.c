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
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
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
static bool g_socket_given;   /* -s or FLOWGATE_SOCKET: no read-only fallback */
static int g_probe_errno;     /* why a probe found no daemon (config check) */
/* --timeout: the longest fgctl waits for the next line of an answer, and
 * what the daemon may wait on a worker for one step of this request
 * (args.timeout_ms).  5 minutes: a 1M-flow listing streams within seconds
 * on a quiet machine; the default leaves room for a box whose cores are
 * oversubscribed many times over.  0 = wait for ever; flows watch always
 * does. */
#define FGCTL_TIMEOUT_MS_DEFAULT (5ull * 60 * 1000)
static uint64_t g_timeout_ms = FGCTL_TIMEOUT_MS_DEFAULT;
static bool g_timed_out;

static const char usage_text[] =
	"usage: fgctl [-s|--socket PATH] [--json] [--timeout D] <command> [args]\n"
	"       fgctl --help | --version\n"
	"\n"
	"services and backends:\n"
	"  service add VIP:PORT/PROTO [--mode dsr-ipip|dsr-gue|nat] [--sched maglev|lc|maglev-load] [--name N]\n"
	"              [--on-fail keep|reset]\n"
	"  service del VIP:PORT/PROTO\n"
	"  service list\n"
	"  backend add SERVICE ADDR[:PORT] [--weight W]\n"
	"  backend del SERVICE ADDR[:PORT]\n"
	"  backend list [SERVICE]\n"
	"  backend weight SERVICE ADDR[:PORT] W\n"
	"  backend drain|undrain SERVICE ADDR[:PORT]\n"
	"flows (connection tracking):\n"
	"  flows list   [FILTER...] [--limit N]\n"
	"  flows get    SRC:PORT DST:PORT tcp|udp   either direction: the client's tuple,\n"
	"                      or a NAT flow's reply tuple (BACKEND:PORT NATADDR:NATPORT)\n"
	"  flows delete FILTER... [--limit N] | --all\n"
	"  flows count  [--per-core]\n"
	"  flows watch  [FILTER...]   timestamped NEW / UPDATE (state change) /\n"
	"                      DESTROY (with reason: expired, closed, evicted, deleted)\n"
	"                      events until Ctrl-C\n"
	"  FILTER: --service S  --backend ADDR[:PORT]  --state ST  --core N\n"
	"          --client ADDR[/PREFIX]  --client-port P  --nat ADDR[:PORT]  --nat-port P\n"
	"          --min-idle D  --max-idle D  --min-age D  --max-age D\n"
	"          (D: 500, 500ms, 10s, 5m, 1h; idle = since the last packet, age = since\n"
	"          the flow was created; ranges are inclusive)\n"
	"state:\n"
	"  stats [--per-core] [--service S] [--all]\n"
	"                      non-zero counters, drops summarised (--all: every counter);\n"
	"                      --service S: that service only\n"
	"  stats --rate [--interval D] [--per-core] [--service S] [--all]\n"
	"                      per-second changes over D (default 1s)\n"
	"  stats --zero [--service S]  print, then count from zero for 'fgctl stats'\n"
	"                      (the daemon's counters, /metrics and telemetry are not reset)\n"
	"  backends [--service S] [--interval D] | --stats\n"
	"                      one line per backend, as ipvsadm -Ln --rate: ActiveConn,\n"
	"                      InActConn, CPS, InPPS, OutPPS, InBPS, OutBPS over D (1s);\n"
	"                      --stats: totals (Conns, InPkts, OutPkts, InBytes, OutBytes)\n"
	"                      as ipvsadm -Ln --stats, since 'stats --zero'\n"
	"  health\n"
	"  sync                state sync between nodes: this node, each peer (address,\n"
	"                      node id, ms since its last message: the lag), records\n"
	"                      sent / received / installed, refusals by reason\n"
	"  ping\n"
	"  version             fgctl's version, and the daemon's with its build options\n"
	"configuration:\n"
	"  config apply FILE [--allow-empty]\n"
	"                      validate, then apply all-or-nothing; a change of a\n"
	"                      restart-only setting (ports, conntrack, control_socket)\n"
	"                      is refused; a file without services needs --allow-empty\n"
	"  config show         the running config in file syntax\n"
	"  config save [FILE]  write the running config to FILE, by default the daemon's\n"
	"                      -c file, atomically (a temp file renamed over it), so that\n"
	"                      fgctl changes survive a restart\n"
	"  config check FILE   validate; with a running flowgate, also check its port\n"
	"                      names against the devices and note restart-only changes\n"
	"\n"
	"SERVICE is VIP:PORT/PROTO (e.g. 10.0.0.100:80/tcp, [fd00::100]:443/tcp) or a service name.\n"
	"IPv6 addresses with a port are written [addr]:port.\n"
	"Socket: -s PATH, else $FLOWGATE_SOCKET, else " FG_CTL_DEFAULT_SOCKET ",\n"
	"and for a user it refuses, the read-only " FG_CTL_DEFAULT_RO_SOCKET "\n"
	"(control_socket_ro: stats, flows, backends, lists; changes are refused).\n"
	"--json: JSON on stdout for every answer, errors included ({\"ok\":false,\"error\":...}).\n"
	"--timeout D: wait at most D for each line of the daemon's answer (default 5m; 0: for\n"
	"ever; flows watch always waits); the daemon waits as long on its workers.\n"
	"Exit codes: 0 ok, 1 error, 2 usage.\n";

static int usage_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* A usage error: the message on stderr, and under --json one object on
 * stdout too ({"ok":false,"error":...,"usage":true}), exit 2. */
static int usage_err(const char *fmt, ...)
{
	va_list ap;
	char msg[512];
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (g_json) {
		struct fg_json_writer w;
		fg_jw_init(&w, 0);
		fg_jw_obj_open(&w, NULL);
		fg_jw_bool(&w, "ok", false);
		fg_jw_str(&w, "error", msg);
		fg_jw_bool(&w, "usage", true);
		fg_jw_str(&w, "hint", "run 'fgctl --help' for the commands");
		fg_jw_obj_close(&w);
		printf("%s\n", w.buf ? w.buf : "{}");
		fg_jw_fini(&w);
	}
	fprintf(stderr, "fgctl: %s\nrun 'fgctl --help' for the commands\n", msg);
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
	int cr = c->fd < 0 ? -1 : connect(c->fd, (struct sockaddr *)&sa, sizeof(sa));
	if (cr && c->fd >= 0 && errno == EACCES && !g_socket_given &&
	    !access(FG_CTL_DEFAULT_RO_SOCKET, F_OK)) {
		/* not root: the monitoring users' socket, if this user may use it */
		close(c->fd);
		strcpy(sa.sun_path, FG_CTL_DEFAULT_RO_SOCKET);
		g_socket = FG_CTL_DEFAULT_RO_SOCKET;
		c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		cr = c->fd < 0 ? -1 : connect(c->fd, (struct sockaddr *)&sa, sizeof(sa));
	}
	if (cr) {
		int e = errno;
		snprintf(msg, sizeof(msg), "cannot connect to flowgate at %s: %s", g_socket,
			 strerror(e));
		if (c->fd >= 0)
			close(c->fd);
		c->fd = -1;
		g_probe_errno = e;
		if (probe && (e == ENOENT || e == ECONNREFUSED || e == ENOTDIR || e == EACCES))
			return RUN_NO_DAEMON;
		return report_error(msg, e == EACCES ?
				    "the socket is 0600: run fgctl as root, or as a member of the "
				    "group of the read-only socket (control_socket_ro) with -s PATH" :
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
		if (g_timeout_ms) {
			struct pollfd pfd = { .fd = c->fd, .events = POLLIN };
			int r = poll(&pfd, 1, g_timeout_ms > INT32_MAX ? INT32_MAX : (int)g_timeout_ms);
			if (r < 0 && errno == EINTR)
				continue;
			if (r == 0)
				g_timed_out = true;
			if (r <= 0)
				return NULL;
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
	if (g_timeout_ms)
		fg_jw_u64(&r->w, "timeout_ms", g_timeout_ms < FG_PROTO_TIMEOUT_MS_MAX ?
			  g_timeout_ms : FG_PROTO_TIMEOUT_MS_MAX);
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
			if (g_timed_out)
				return report_error("no answer from flowgate within --timeout",
						    "raise --timeout (0 waits for ever), or check "
						    "the daemon's log");
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
	char act[24] = "-", inact[24] = "-";
	if (fg_json_get(b, "active_conns")) {
		snprintf(act, sizeof(act), "%" PRIu64, jnum(b, "active_conns"));
		snprintf(inact, sizeof(inact), "%" PRIu64, jnum(b, "inactive_conns"));
	}
	printf("  -> %-40s %6" PRIu64 " %8" PRIu64 "  %-8s %-9s %10s %10s", ep, jnum(b, "id"),
	       jnum(b, "weight"), drained ? "drained" : "active", jstr(b, "health"), act, inact);
	const struct fg_json *l = fg_json_get(b, "load");

	if (l && l->type == FG_JSON_OBJ) {
		/* health metrics: the worker's own load, and how old it is */
		const struct fg_json *sc = fg_json_get(l, "score");
		const struct fg_json *age = fg_json_get(l, "age_ms");
		const struct fg_json *se = fg_json_get(l, "series");

		printf("  load %s score %.3f", jstr(l, "state"),
		       sc && sc->type == FG_JSON_NUM ? sc->d : 0.0);
		if (fg_json_get(b, "new_flows_load"))
			printf(" placed maglev %" PRIu64 " load %" PRIu64, jnum(b, "new_flows_maglev"),
			       jnum(b, "new_flows_load"));
		if (age && age->type == FG_JSON_NUM)
			printf(" age %.0fms", age->d);
		else
			printf(" age -");
		for (const struct fg_json *v = se && se->type == FG_JSON_OBJ ? se->child : NULL; v;
		     v = v->next)
			if (v->type == FG_JSON_NUM)
				printf(" %s=%g", v->key, v->d);
	}
	printf("\n");
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
	printf("  -> %-40s %6s %8s  %-8s %-9s %10s %10s\n", "BACKEND", "ID", "WEIGHT", "STATE",
	       "HEALTH", "ACTIVECONN", "INACTCONN");
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
	printf("  -> %-40s %6s %8s  %-8s %-9s %10s %10s\n", "BACKEND", "ID", "WEIGHT", "STATE",
	       "HEALTH", "ACTIVECONN", "INACTCONN");
	print_backend_row(data);
	return EXIT_OK;
}

/* "2026-11-23T18:50:01.123Z" (UTC, ms); "-" for 0 */
static void fmt_time_ms(uint64_t ms, char *b, size_t n)
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;
	char d[32];
	if (!ms || !gmtime_r(&t, &tm)) {
		snprintf(b, n, "-");
		return;
	}
	strftime(d, sizeof(d), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(b, n, "%s.%03uZ", d, (unsigned)(ms % 1000));
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
	char src[96], dst[96], be[112], nat[96], age[24], life[24], exp[24];
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
	uint64_t idle;
	if (fg_json_get_u64(f, "idle_ms", &idle))
		idle = jnum(f, "age_ms");   /* an older daemon: age_ms was the idle time */
	fmt_ms(idle, age, sizeof(age));
	fmt_ms(jnum(f, "lifetime_ms"), life, sizeof(life));
	fmt_ms(jnum(f, "expires_ms"), exp, sizeof(exp));
	int64_t core = 0;
	(void)fg_json_get_i64(f, "core", &core);
	const char *na = jstr(f, "nat_addr");
	if (strcmp(na, "-"))
		snprintf(nat, sizeof(nat), strchr(na, ':') ? "[%s]:%" PRIu64 : "%s:%" PRIu64, na,
			 jnum(f, "nat_port"));
	else
		snprintf(nat, sizeof(nat), "-");
	printf("%-4s %-12s %-30s %-30s %-30s %-22s %4" PRId64 " %10" PRIu64 " %12" PRIu64
	       " %7s %7s %7s\n", jstr(f, "proto"), jstr(f, "state"), src, dst, be, nat, core,
	       jnum(f, "packets"), jnum(f, "bytes"), life, age, exp);
}

static void print_flow_header(void)
{
	printf("%-4s %-12s %-30s %-30s %-30s %-22s %4s %10s %12s %7s %7s %7s\n", "PROT", "STATE",
	       "SOURCE", "DESTINATION (VIP)", "BACKEND", "NAT", "CORE", "PACKETS", "BYTES", "AGE",
	       "IDLE", "EXPIRES");
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
	uint64_t ts = 0;
	char tb[40];
	(void)fg_json_get_u64(resp->data, "ts_ms", &ts);
	fmt_time_ms(ts, tb, sizeof(tb));
	if (!g_json && !o->header) {
		printf("%-23s %-10s", "TIME (UTC)", "EVENT");
		print_flow_header();
		o->header = true;
	}
	if (g_json) {
		struct fg_json_writer w;
		fg_jw_init(&w, 0);
		fg_jw_obj_open(&w, NULL);
		fg_jw_str(&w, "event", resp->event ? resp->event : "?");
		fg_jw_u64(&w, "ts_ms", ts);
		fg_jw_str(&w, "time", tb);
		fg_jw_value(&w, "flow", resp->data);
		fg_jw_obj_close(&w);
		printf("%s\n", w.buf ? w.buf : "{}");
		fg_jw_fini(&w);
	} else {
		const char *why = NULL, *prev = NULL;

		printf("%-23s [%-7s] ", tb, resp->event ? resp->event : "?");
		print_flow_row(resp->data);
		if (!fg_json_get_str(resp->data, "reason", &why))
			printf("%-34s  reason: %s\n", "", why);
		if (!fg_json_get_str(resp->data, "prev_state", &prev))
			printf("%-34s  state: %s -> %s\n", "", prev, jstr(resp->data, "state"));
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
	/* NAT's reply region fills on its own (conntrack { nat_capacity }) */
	if (jnum(data, "nat_capacity"))
		printf("nat %" PRIu64 " of %" PRIu64 " (%.1f%%)\n", jnum(data, "nat"),
		       jnum(data, "nat_capacity"),
		       100.0 * (double)jnum(data, "nat") / (double)jnum(data, "nat_capacity"));
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
		const struct fg_json *ld = fg_json_get(b, "load");

		if (ld && ld->type == FG_JSON_OBJ) {
			/* health metrics: the signal and how each scrape ended */
			const struct fg_json *sc = fg_json_get(ld, "score");
			const struct fg_json *age = fg_json_get(ld, "age_ms");
			const struct fg_json *se = fg_json_get(ld, "series");
			const struct fg_json *sr = fg_json_get(ld, "scrapes");
			bool fresh = false, sat = false;

			(void)fg_json_get_bool(ld, "fresh", &fresh);
			(void)fg_json_get_bool(ld, "saturated", &sat);
			printf("    load %s score %.3f", !fresh ? "stale" : sat ? "saturated" : "fresh",
			       sc && sc->type == FG_JSON_NUM ? sc->d : 0.0);
			if (age && age->type == FG_JSON_NUM)
				printf(" age %.0fms", age->d);
			else
				printf(" age - (never scraped)");
			for (const struct fg_json *v = se && se->type == FG_JSON_OBJ ? se->child : NULL;
			     v; v = v->next)
				if (v->type == FG_JSON_NUM)
					printf(" %s=%g", v->key, v->d);
			printf("\n    scrapes");
			for (const struct fg_json *v = sr && sr->type == FG_JSON_OBJ ? sr->child : NULL;
			     v; v = v->next)
				if (v->type == FG_JSON_NUM && v->u)
					printf(" %s=%" PRIu64, v->key, v->u);
			printf("\n");
		}
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
		return usage_err("--sched: '%s' is not maglev, lc or maglev-load", o[1].val);
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

/* flows options, in this order in cmd_flows' table */
enum {
	FO_SERVICE, FO_BACKEND, FO_STATE, FO_CORE, FO_LIMIT, FO_ALL, FO_PER_CORE,
	FO_CLIENT, FO_CLIENT_PORT, FO_NAT, FO_NAT_PORT, FO_MIN_IDLE, FO_MAX_IDLE,
	FO_MIN_AGE, FO_MAX_AGE, FO_MAX
};

static bool any_filter(const struct opt *o)
{
	for (int k = 0; k < FO_MAX; k++)
		if (k != FO_ALL && k != FO_PER_CORE && o[k].val)
			return true;
	return false;
}

/* The filter options into the request (flows list, delete, watch). */
static int flow_filters(struct req *r, struct opt *o, bool *any)
{
	uint64_t v;
	int rc;
	*any = false;
	if (o[FO_SERVICE].val) {
		if ((rc = check_service(o[FO_SERVICE].val)))
			return rc;
		fg_jw_str(&r->w, "service", o[FO_SERVICE].val);
		*any = true;
	}
	if (o[FO_BACKEND].val) {
		if ((rc = check_backend(o[FO_BACKEND].val)))
			return rc;
		fg_jw_str(&r->w, "backend", o[FO_BACKEND].val);
		*any = true;
	}
	if (o[FO_STATE].val) {
		if (fg_flow_state_lookup(o[FO_STATE].val) <= 0)
			return usage_err("--state: '%s' is not a state (SYN_SENT SYN_RECV ESTABLISHED "
					 "FIN_WAIT CLOSE_WAIT LAST_ACK TIME_WAIT CLOSE UDP "
					 "UDP_STREAM OTHER PICKUP)", o[FO_STATE].val);
		fg_jw_str(&r->w, "state", o[FO_STATE].val);
		*any = true;
	}
	if (o[FO_CORE].val) {
		if (!parse_u64(o[FO_CORE].val, 127, &v))
			return usage_err("--core: '%s' is not a worker index 0..127", o[FO_CORE].val);
		fg_jw_u64(&r->w, "core", v);
		*any = true;
	}
	if (o[FO_LIMIT].val) {
		if (!parse_u64(o[FO_LIMIT].val, UINT64_MAX, &v) || !v)
			return usage_err("--limit: '%s' is not a positive integer", o[FO_LIMIT].val);
		fg_jw_u64(&r->w, "limit", v);
	}
	if (o[FO_CLIENT].val) {
		struct fg_flow_filter f;
		if (fg_flow_filter_client_parse(&f, o[FO_CLIENT].val))
			return usage_err("--client: '%s' is not ADDR or ADDR/PREFIX (e.g. "
					 "172.16.0.0/12, fd00::/64)", o[FO_CLIENT].val);
		fg_jw_str(&r->w, "client", o[FO_CLIENT].val);
		*any = true;
	}
	if (o[FO_CLIENT_PORT].val) {
		if (!parse_u64(o[FO_CLIENT_PORT].val, 65535, &v))
			return usage_err("--client-port: '%s' is not a port 0..65535",
					 o[FO_CLIENT_PORT].val);
		fg_jw_u64(&r->w, "client_port", v);
		*any = true;
	}
	if (o[FO_NAT].val) {
		/* ADDR or ADDR:PORT ([V6]:PORT): the balancer's NAT side */
		struct fg_addr a;
		uint16_t port;
		char ab[64];
		if (fg_endpoint_parse(o[FO_NAT].val, false, &a, &port))
			return usage_err("--nat: '%s' is not ADDR, ADDR:PORT or [IPv6]:PORT",
					 o[FO_NAT].val);
		fg_jw_str(&r->w, "nat_addr", fg_addr_format(&a, ab, sizeof(ab)));
		if (port) {
			if (o[FO_NAT_PORT].val)
				return usage_err("--nat with a port and --nat-port: give the port once");
			fg_jw_u64(&r->w, "nat_port", port);
		}
		*any = true;
	}
	if (o[FO_NAT_PORT].val) {
		if (!parse_u64(o[FO_NAT_PORT].val, 65535, &v))
			return usage_err("--nat-port: '%s' is not a port 0..65535", o[FO_NAT_PORT].val);
		fg_jw_u64(&r->w, "nat_port", v);
		*any = true;
	}
	static const struct { int opt; const char *key; } ranges[] = {
		{ FO_MIN_IDLE, "idle_min_ms" }, { FO_MAX_IDLE, "idle_max_ms" },
		{ FO_MIN_AGE, "lifetime_min_ms" }, { FO_MAX_AGE, "lifetime_max_ms" },
	};
	for (size_t k = 0; k < sizeof(ranges) / sizeof(ranges[0]); k++) {
		const struct opt *op = &o[ranges[k].opt];
		if (!op->val)
			continue;
		if (fg_duration_parse(op->val, &v))
			return usage_err("%s: '%s' is not a duration (e.g. 500, 500ms, 10s, 5m, 1h)",
					 op->name, op->val);
		fg_jw_u64(&r->w, ranges[k].key, v);
		*any = true;
	}
	return 0;
}

static int cmd_flows(int argc, char **argv)
{
	if (argc < 1)
		return usage_err("flows: expected list, get, delete, count or watch");
	const char *sub = argv[0];
	struct opt o[FO_MAX] = {
		[FO_SERVICE] = { "--service", true, NULL }, [FO_BACKEND] = { "--backend", true, NULL },
		[FO_STATE] = { "--state", true, NULL },     [FO_CORE] = { "--core", true, NULL },
		[FO_LIMIT] = { "--limit", true, NULL },     [FO_ALL] = { "--all", false, NULL },
		[FO_PER_CORE] = { "--per-core", false, NULL },
		[FO_CLIENT] = { "--client", true, NULL },
		[FO_CLIENT_PORT] = { "--client-port", true, NULL },
		[FO_NAT] = { "--nat", true, NULL },         [FO_NAT_PORT] = { "--nat-port", true, NULL },
		[FO_MIN_IDLE] = { "--min-idle", true, NULL }, [FO_MAX_IDLE] = { "--max-idle", true, NULL },
		[FO_MIN_AGE] = { "--min-age", true, NULL },   [FO_MAX_AGE] = { "--max-age", true, NULL },
	};
	const char *pos[3];
	unsigned np;
	int rc = parse_opts(argc - 1, argv + 1, o, FO_MAX, pos, &np, 3);
	if (rc)
		return rc;
	struct req r;
	bool any;
	struct flows_out fo = { 0 };
	bool filters_given = any_filter(o);
	if (!strcmp(sub, "list") || !strcmp(sub, "delete") || !strcmp(sub, "watch")) {
		bool del = sub[0] == 'd', watch = sub[0] == 'w';
		if (np)
			return usage_err("flows %s: unexpected argument '%s'", sub, pos[0]);
		if (o[FO_PER_CORE].val || (!del && o[FO_ALL].val))
			return usage_err("flows %s: %s is not an option of it", sub,
					 o[FO_PER_CORE].val ? "--per-core" : "--all");
		if (watch && o[FO_LIMIT].val)
			return usage_err("flows watch: --limit is for listings");
		req_begin(&r, del ? "flows.delete" : watch ? "flows.watch" : "flows.list");
		if ((rc = flow_filters(&r, o, &any))) {
			fg_jw_fini(&r.w);
			return rc;
		}
		if (del && !any && !o[FO_ALL].val) {
			fg_jw_fini(&r.w);
			return usage_err("flows delete: give a filter (--service, --backend, --state, "
					 "--core, --client, ...) or --all to delete every flow");
		}
		if (o[FO_ALL].val)
			fg_jw_bool(&r.w, "all", true);
		if (del)
			return run(&r, NULL, NULL, final_deleted, NULL);
		if (watch) {
			g_timeout_ms = 0;  /* events come when they come */
			return run(&r, item_watch, &fo, NULL, NULL);
		}
		return run(&r, item_flow, &fo, final_flows, &fo);
	}
	if (!strcmp(sub, "get")) {
		if (filters_given || o[FO_ALL].val || o[FO_PER_CORE].val)
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
		if (np || filters_given || o[FO_ALL].val)
			return usage_err("flows count takes only --per-core");
		req_begin(&r, "flows.count");
		if (o[FO_PER_CORE].val)
			fg_jw_bool(&r.w, "per_core", true);
		return run(&r, NULL, NULL, final_count, NULL);
	}
	return usage_err("flows: unknown subcommand '%s' (list, get, delete, count, watch)", sub);
}

/* ---- stats: compact view, rates, zero ----------------------------------- */

static bool json_is_zero(const struct fg_json *v)
{
	switch (v->type) {
	case FG_JSON_NUM:
		return v->d == 0;
	case FG_JSON_STR:
		return !*v->str;
	case FG_JSON_NULL:
		return true;
	case FG_JSON_BOOL:
		return false;
	default:
		break;
	}
	for (const struct fg_json *c = v->child; c; c = c->next)
		if (!json_is_zero(c))
			return false;
	return true;
}

/* Numbers that are not counters: copied as they are into a rate view,
 * never differenced. */
static bool is_gauge_key(const char *k)
{
	static const char *const g[] = { "workers", "id", "port", "weight", "active_conns",
					 "inactive_conns", "zeroed_at_ms" };
	for (size_t i = 0; k && i < sizeof(g) / sizeof(g[0]); i++)
		if (!strcmp(k, g[i]))
			return true;
	return false;
}

static void print_num(const struct fg_json *c, int indent, const char *label, const char *unit)
{
	if (c->is_uint)
		printf("%*s%-32s %" PRIu64 "%s\n", indent, "", label, c->u, unit);
	else if (c->is_int)
		printf("%*s%-32s %" PRId64 "%s\n", indent, "", label, c->i, unit);
	else    /* rates: 3 decimals where they matter, 1 on large values */
		printf("%*s%-32s %.*f%s\n", indent, "", label, c->d >= 1000 ? 1 : 3, c->d, unit);
}

/*
 * The default `stats` view: what print_tree prints, less every zero
 * counter and empty block, with each drops_by_reason object summarised on
 * one line (total, then the non-zero reasons, largest first).  @p unit
 * follows every counter ("/s" for --rate).
 */
static void print_tree_compact(const struct fg_json *v, int indent, const char *unit)
{
	unsigned idx = 0;
	for (const struct fg_json *c = v->child; c; c = c->next, idx++) {
		char label[80];
		if (v->type == FG_JSON_OBJ)
			snprintf(label, sizeof(label), "%s", c->key);
		else
			snprintf(label, sizeof(label), "[%u]", idx);
		const char *tag = NULL;
		if (c->type == FG_JSON_OBJ && v->type == FG_JSON_ARR &&
		    fg_json_get_str(c, "service", &tag) && fg_json_get_str(c, "addr", &tag) &&
		    fg_json_get_str(c, "name", &tag))
			tag = NULL;
		/* services and backends are listed even when idle */
		if (json_is_zero(c) && !tag)
			continue;
		if (c->type == FG_JSON_OBJ && c->key && !strcmp(c->key, "drops_by_reason")) {
			unsigned n = 0;
			for (const struct fg_json *r = c->child; r; r = r->next)
				n += r->type == FG_JSON_NUM && r->d > 0;
			printf("%*s%-32s", indent, "", "drops by reason");
			/* largest first; few reasons are non-zero at once */
			const struct fg_json *done[64];
			unsigned nd = 0;
			for (unsigned k = 0; k < n && nd < 64; k++) {
				const struct fg_json *best = NULL;
				for (const struct fg_json *r = c->child; r; r = r->next) {
					bool seen = false;
					for (unsigned q = 0; q < nd; q++)
						seen |= done[q] == r;
					if (!seen && r->type == FG_JSON_NUM && r->d > 0 &&
					    (!best || r->d > best->d))
						best = r;
				}
				if (!best)
					break;
				if (best->is_uint)
					printf("%s %s %" PRIu64 "%s", nd ? "," : "", best->key, best->u,
					       unit);
				else
					printf("%s %s %.3f%s", nd ? "," : "", best->key, best->d, unit);
				done[nd++] = best;
			}
			printf("\n");
			continue;
		}
		switch (c->type) {
		case FG_JSON_OBJ:
		case FG_JSON_ARR:
			printf("%*s%s%s%s:\n", indent, "", label, tag ? " " : "", tag ? tag : "");
			print_tree_compact(c, indent + 2, unit);
			break;
		case FG_JSON_NUM:
			print_num(c, indent, label, is_gauge_key(c->key) ? "" : unit);
			break;
		case FG_JSON_STR:
			if (!tag || strcmp(c->str, tag))
				printf("%*s%-32s %s\n", indent, "", label, c->str);
			break;
		case FG_JSON_BOOL:
			printf("%*s%-32s %s\n", indent, "", label, c->b ? "true" : "false");
			break;
		case FG_JSON_NULL:
			break;
		}
	}
}

struct stats_view {
	bool all;       /* --all: every counter */
	bool zero;      /* --zero: say what happened */
};

static int final_stats(const struct fg_json *data, void *arg)
{
	const struct stats_view *sv = arg;
	if (g_json)
		return final_json(data, NULL);
	if (!data || data->type != FG_JSON_OBJ)
		return final_tree(data, NULL);
	uint64_t z = 0;
	if (!fg_json_get_u64(data, "zeroed_at_ms", &z) && z) {
		char tb[40];
		fmt_time_ms(z, tb, sizeof(tb));
		printf("(counters since %s, the last 'fgctl stats --zero')\n", tb);
	}
	if (sv->all)
		print_tree(data, 0);
	else
		print_tree_compact(data, 0, "");
	if (sv->zero)
		fprintf(stderr, "fgctl: counters zeroed for 'fgctl stats' (the daemon's own "
			"counters, /metrics and telemetry keep counting)\n");
	return EXIT_OK;
}

/* --rate: keeps a copy of each answer's data */
static int final_keep(const struct fg_json *data, void *arg)
{
	struct fg_json_writer *w = arg;
	fg_jw_value(w, NULL, data);
	return fg_jw_error(w) ? report_error("out of memory", NULL) : EXIT_OK;
}

/* @p v >= 0 to 3 decimals (rates: "1234.568", never "1234.5678901234") */
static double round3(double v)
{
	return (double)(uint64_t)(v * 1000 + 0.5) / 1000;
}

/* Writes @p b's shape with every counter as its per-second change since
 * @p a (gauges, strings as in @p b).  Array elements pair by index while
 * their "id" agrees (a service added or removed between the two reads has
 * no rate, and is left out). */
static void rate_tree(struct fg_json_writer *w, const char *key, const struct fg_json *a,
		      const struct fg_json *b, double dt)
{
	switch (b->type) {
	case FG_JSON_NUM:
		if (is_gauge_key(key) || !a || a->type != FG_JSON_NUM) {
			fg_jw_value(w, key, b);
		} else {
			double d = b->d >= a->d ? (b->d - a->d) / dt : 0;
			fg_jw_dbl(w, key, round3(d));
		}
		return;
	case FG_JSON_OBJ:
		fg_jw_obj_open(w, key);
		for (const struct fg_json *c = b->child; c; c = c->next)
			rate_tree(w, c->key, a && a->type == FG_JSON_OBJ ? fg_json_get(a, c->key) : NULL,
				  c, dt);
		fg_jw_obj_close(w);
		return;
	case FG_JSON_ARR: {
		fg_jw_arr_open(w, key);
		const struct fg_json *ac = a && a->type == FG_JSON_ARR ? a->child : NULL;
		for (const struct fg_json *c = b->child; c; c = c->next, ac = ac ? ac->next : NULL) {
			uint64_t ia, ib;
			if (ac && c->type == FG_JSON_OBJ && !fg_json_get_u64(c, "id", &ib) &&
			    (fg_json_get_u64(ac, "id", &ia) || ia != ib))
				continue;
			rate_tree(w, NULL, ac, c, dt);
		}
		fg_jw_arr_close(w);
		return;
	}
	default:
		fg_jw_value(w, key, b);
	}
}

static double mono_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* stats --rate: two answers @p interval_ms apart; per-second changes. */
static int stats_rate(const char *service, bool per_core, uint64_t interval_ms, bool all)
{
	struct fg_json_writer a, b, out;
	struct fg_json_doc *da = NULL, *db = NULL;
	struct req r;
	int rc;
	double t0 = 0, t1 = 0;
	fg_jw_init(&a, 0);
	fg_jw_init(&b, 0);
	fg_jw_init(&out, 0);
	for (int k = 0; k < 2; k++) {
		req_begin(&r, "stats");
		if (per_core)
			fg_jw_bool(&r.w, "per_core", true);
		if (service)
			fg_jw_str(&r.w, "service", service);
		if (k == 1) {
			struct timespec ts = { (time_t)(interval_ms / 1000),
					       (long)(interval_ms % 1000) * 1000000L };
			while (nanosleep(&ts, &ts) && errno == EINTR)
				;
		}
		double t = mono_s();
		rc = run(&r, NULL, NULL, final_keep, k ? &b : &a);
		/* the middle of the request: the daemon read its counters then */
		*(k ? &t1 : &t0) = (t + mono_s()) / 2;
		if (rc)
			goto out;
	}
	char err[128];
	da = fg_json_parse(a.buf, a.len, a.len + 1, err, sizeof(err));
	db = fg_json_parse(b.buf, b.len, b.len + 1, err, sizeof(err));
	if (!da || !db) {
		rc = report_error("unreadable stats answer from the daemon", NULL);
		goto out;
	}
	double dt = t1 - t0 > 0.001 ? t1 - t0 : 0.001;
	fg_jw_obj_open(&out, NULL);
	fg_jw_dbl(&out, "interval_s", round3(dt));
	rate_tree(&out, "rates", fg_json_root(da), fg_json_root(db), dt);
	fg_jw_obj_close(&out);
	if (fg_jw_error(&out)) {
		rc = report_error("out of memory", NULL);
		goto out;
	}
	if (g_json) {
		printf("%s\n", out.buf);
	} else {
		struct fg_json_doc *d = fg_json_parse(out.buf, out.len, out.len + 1, err, sizeof(err));
		if (!d) {
			rc = report_error("internal error rendering rates", NULL);
			goto out;
		}
		const struct fg_json *rates = fg_json_get(fg_json_root(d), "rates");
		printf("per-second rates over %.3f s\n", dt);
		if (all)
			print_tree(rates, 0);
		else
			print_tree_compact(rates, 0, "/s");
		fg_json_free(d);
	}
	rc = EXIT_OK;
out:
	fg_json_free(da);
	fg_json_free(db);
	fg_jw_fini(&a);
	fg_jw_fini(&b);
	fg_jw_fini(&out);
	return rc;
}

static int cmd_stats(int argc, char **argv)
{
	enum { SO_PER_CORE, SO_SERVICE, SO_ALL, SO_RATE, SO_INTERVAL, SO_ZERO, SO_MAX };
	struct opt o[SO_MAX] = {
		[SO_PER_CORE] = { "--per-core", false, NULL }, [SO_SERVICE] = { "--service", true, NULL },
		[SO_ALL] = { "--all", false, NULL },           [SO_RATE] = { "--rate", false, NULL },
		[SO_INTERVAL] = { "--interval", true, NULL },  [SO_ZERO] = { "--zero", false, NULL },
	};
	const char *pos[1];
	unsigned np;
	int rc = parse_opts(argc, argv, o, SO_MAX, pos, &np, 0);
	if (rc)
		return rc;
	if (o[SO_SERVICE].val && (rc = check_service(o[SO_SERVICE].val)))
		return rc;
	uint64_t interval = 1000;
	if (o[SO_INTERVAL].val && !o[SO_RATE].val)
		return usage_err("stats: --interval goes with --rate");
	if (o[SO_INTERVAL].val && (fg_duration_parse(o[SO_INTERVAL].val, &interval) ||
				   interval < 10 || interval > 3600000))
		return usage_err("--interval: '%s' is not a duration from 10ms to 1h (e.g. 1s, "
				 "500ms)", o[SO_INTERVAL].val);
	if (o[SO_RATE].val && o[SO_ZERO].val)
		return usage_err("stats: --rate and --zero do not go together");
	if (o[SO_RATE].val)
		return stats_rate(o[SO_SERVICE].val, o[SO_PER_CORE].val != NULL, interval,
				  o[SO_ALL].val != NULL);
	struct req r;
	struct stats_view sv = { o[SO_ALL].val != NULL, o[SO_ZERO].val != NULL };
	req_begin(&r, "stats");
	if (o[SO_PER_CORE].val)
		fg_jw_bool(&r.w, "per_core", true);
	if (o[SO_SERVICE].val)
		fg_jw_str(&r.w, "service", o[SO_SERVICE].val);
	if (o[SO_ZERO].val)
		fg_jw_bool(&r.w, "zero", true);
	return run(&r, NULL, NULL, final_stats, &sv);
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

/* config save: the running config (config.show) written by fgctl itself,
 * with the invoking user's rights, to FILE or the daemon's -c file: a temp
 * file in the same directory, fsync'd, given the old file's mode, renamed
 * over it.  The daemon never writes files on a socket client's behalf. */
struct save_ctx {
	const char *file;   /* FILE, or NULL: the daemon's "path" */
};

static int final_config_save(const struct fg_json *data, void *arg)
{
	struct save_ctx *sc = arg;
	const char *text = jstr(data, "text"), *path = sc->file;
	char tmp[4096], msg[4400];
	struct stat st;
	mode_t mode = 0644;
	size_t len = strlen(text);
	int fd, err = 0;

	if (path == NULL || *path == '\0')
		path = jstr(data, "path");
	if (*path == '\0')
		return report_error("config save: flowgate runs without -c; name a FILE",
				    "fgctl config save /etc/flowgate/flowgate.conf");
	if (stat(path, &st) == 0)
		mode = st.st_mode & 07777;
	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.fgctl-XXXXXX", path) >= sizeof(tmp))
		return report_error("config save: path too long", NULL);
	fd = mkstemp(tmp);
	if (fd < 0) {
		snprintf(msg, sizeof(msg), "config save: %s: %s", tmp, strerror(errno));
		return report_error(msg, NULL);
	}
	for (size_t off = 0; off < len && !err;) {
		ssize_t n = write(fd, text + off, len - off);

		if (n < 0 && errno != EINTR)
			err = errno;
		else if (n > 0)
			off += (size_t)n;
	}
	if (!err && (fchmod(fd, mode) != 0 || fsync(fd) != 0))
		err = errno;
	if (close(fd) != 0 && !err)
		err = errno;
	if (!err && rename(tmp, path) != 0)
		err = errno;
	if (err) {
		unlink(tmp);
		snprintf(msg, sizeof(msg), "config save: %s: %s (left unchanged)", path,
			 strerror(err));
		return report_error(msg, NULL);
	}
	if (g_json) {
		struct fg_json_writer w;

		fg_jw_init(&w, 0);
		fg_jw_obj_open(&w, NULL);
		fg_jw_str(&w, "saved", path);
		fg_jw_u64(&w, "bytes", len);
		fg_jw_obj_close(&w);
		printf("%s\n", w.buf ? w.buf : "{}");
		fg_jw_fini(&w);
	} else {
		printf("saved the running config to %s (%zu bytes)\n", path, len);
	}
	return EXIT_OK;
}

static int cmd_config(int argc, char **argv)
{
	if (argc < 1)
		return usage_err("config: expected apply, show, save or check");
	const char *sub = argv[0];
	struct req r;
	if (!strcmp(sub, "show")) {
		if (argc != 1)
			return usage_err("config show takes no arguments");
		req_begin(&r, "config.show");
		return run(&r, NULL, NULL, final_config_show, NULL);
	}
	if (!strcmp(sub, "save")) {
		static struct save_ctx sc;

		if (argc > 2)
			return usage_err("config save takes at most one FILE");
		sc.file = argc == 2 ? argv[1] : NULL;
		req_begin(&r, "config.show");
		return run(&r, NULL, NULL, final_config_save, &sc);
	}
	bool apply = !strcmp(sub, "apply");
	if (!apply && strcmp(sub, "check"))
		return usage_err("config: unknown subcommand '%s' (apply, show, save, check)", sub);
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
	fprintf(stderr, "fgctl: note: %s at %s: the file alone was checked, not its port names "
		"against devices nor settings that need a restart\n",
		g_probe_errno == EACCES ? "no access to flowgate's socket" : "no flowgate",
		g_socket);
	return EXIT_OK;
}

/* ---- backends: ipvsadm -Ln --rate / --stats, one line per backend -------- */

/* One stats answer (counters since 'stats --zero'), and when the daemon
 * read them: the middle of the request. */
static int stats_sample(const char *service, struct fg_json_writer *w,
			struct fg_json_doc **doc, double *t)
{
	struct req r;
	char err[128];
	double t0;
	int rc;

	req_begin(&r, "stats");
	if (service)
		fg_jw_str(&r.w, "service", service);
	t0 = mono_s();
	rc = run(&r, NULL, NULL, final_keep, w);
	*t = (t0 + mono_s()) / 2;
	if (rc)
		return rc;
	*doc = fg_json_parse(w->buf, w->len, w->len + 1, err, sizeof(err));
	return *doc ? EXIT_OK : report_error("unreadable stats answer from the daemon", NULL);
}

/* The element of array @p arr whose "id" is @p id (NULL: none). */
static const struct fg_json *by_id(const struct fg_json *arr, uint64_t id)
{
	uint64_t v;

	for (const struct fg_json *e = arr && arr->type == FG_JSON_ARR ? arr->child : NULL; e;
	     e = e->next)
		if (!fg_json_get_u64(e, "id", &v) && v == id)
			return e;
	return NULL;
}

/* ipvsadm's counters of a backend: Conns, InPkts, OutPkts, InBytes, OutBytes
 * (Out: a NAT backend's replies; DSR replies never pass the balancer). */
static const char *const be_keys[5] = { "new_flows", "packets", "reply_packets", "bytes",
					"reply_bytes" };
static const char *const be_total_json[5] = { "conns", "in_packets", "out_packets",
					      "in_bytes", "out_bytes" };
static const char *const be_rate_json[5] = { "cps", "in_pps", "out_pps", "in_bps",
					     "out_bps" };

/* "10.0.0.1:80/tcp" -> "TCP", "10.0.0.1:80", and its port */
static void spec_split(const char *spec, char *prot, size_t pl, char *local, size_t ll,
		       uint64_t *port)
{
	const char *slash = strrchr(spec, '/'), *colon;
	size_t n = slash ? (size_t)(slash - spec) : strlen(spec);

	snprintf(local, ll, "%.*s", (int)n, spec);
	snprintf(prot, pl, "%s", slash ? slash + 1 : "?");
	for (char *p = prot; *p; p++)
		*p = (char)toupper((unsigned char)*p);
	colon = strrchr(local, ':');
	*port = colon ? strtoull(colon + 1, NULL, 10) : 0;
}

/* One backend: a JSON object, or a table line.  @p a: the same backend in
 * the first sample (NULL: totals only). */
static void backend_line(struct fg_json_writer *w, const struct fg_json *s,
			 const struct fg_json *b, const struct fg_json *a, double dt)
{
	char prot[8], local[80], remote[96];
	const char *addr = jstr(b, "addr");
	uint64_t sport, port = jnum(b, "port"), v[5];
	double r[5] = { 0 };

	spec_split(jstr(s, "service"), prot, sizeof(prot), local, sizeof(local), &sport);
	snprintf(remote, sizeof(remote), strchr(addr, ':') ? "[%s]:%" PRIu64 : "%s:%" PRIu64,
		 addr, port ? port : sport);
	for (int k = 0; k < 5; k++) {
		uint64_t va = a ? jnum(a, be_keys[k]) : 0;

		v[k] = jnum(b, be_keys[k]);
		r[k] = a && v[k] >= va ? round3((double)(v[k] - va) / dt) : 0;
	}
	if (w == NULL) {
		printf("%-4s %-24s %-26s %-8s %6" PRIu64 " %10" PRIu64 " %9" PRIu64, prot, local,
		       remote, jstr(b, "state"), jnum(b, "weight"), jnum(b, "active_conns"),
		       jnum(b, "inactive_conns"));
		for (int k = 0; k < 5; k++)
			if (a)
				printf(" %*.0f", k < 3 ? 8 : 10, r[k]);
			else
				printf(" %*" PRIu64, k < 3 ? 8 : 10, v[k]);
		printf("\n");
		return;
	}
	fg_jw_obj_open(w, NULL);
	fg_jw_str(w, "service", jstr(s, "service"));
	fg_jw_str(w, "name", jstr(s, "name"));
	fg_jw_str(w, "backend", remote);
	fg_jw_u64(w, "id", jnum(b, "id"));
	fg_jw_str(w, "state", jstr(b, "state"));
	fg_jw_u64(w, "weight", jnum(b, "weight"));
	fg_jw_u64(w, "active_conns", jnum(b, "active_conns"));
	fg_jw_u64(w, "inactive_conns", jnum(b, "inactive_conns"));
	for (int k = 0; k < 5; k++)
		fg_jw_u64(w, be_total_json[k], v[k]);
	for (int k = 0; a && k < 5; k++)
		fg_jw_dbl(w, be_rate_json[k], r[k]);
	fg_jw_obj_close(w);
}

/* The table (or JSON) of every backend of sample @p db; rates against
 * @p da when given. */
static int backends_render(const struct fg_json *da, const struct fg_json *db, double dt)
{
	const struct fg_json *svcs = fg_json_get(db, "services");
	struct fg_json_writer w;
	int rc = EXIT_OK;

	fg_jw_init(&w, 0);
	if (g_json) {
		fg_jw_obj_open(&w, NULL);
		if (da)
			fg_jw_dbl(&w, "interval_s", round3(dt));
		fg_jw_arr_open(&w, "backends");
	} else {
		printf("%-4s %-24s %-26s %-8s %6s %10s %9s", "Prot", "LocalAddress:Port",
		       "RemoteAddress:Port", "State", "Weight", "ActiveConn", "InActConn");
		if (da)
			printf(" %8s %8s %8s %10s %10s\n", "CPS", "InPPS", "OutPPS", "InBPS",
			       "OutBPS");
		else
			printf(" %8s %8s %8s %10s %10s\n", "Conns", "InPkts", "OutPkts", "InBytes",
			       "OutBytes");
	}
	for (const struct fg_json *s = svcs && svcs->type == FG_JSON_ARR ? svcs->child : NULL;
	     s; s = s->next) {
		const struct fg_json *sa = da ? by_id(fg_json_get(da, "services"),
						      jnum(s, "id")) : NULL;
		const struct fg_json *bs = fg_json_get(s, "backends");

		for (const struct fg_json *b = bs && bs->type == FG_JSON_ARR ? bs->child : NULL;
		     b; b = b->next) {
			const struct fg_json *ba = sa ? by_id(fg_json_get(sa, "backends"),
							      jnum(b, "id")) : NULL;

			/* a backend new since the first sample has no rate yet: 0 */
			backend_line(g_json ? &w : NULL, s, b, da && !ba ? b : ba, dt);
		}
	}
	if (g_json) {
		fg_jw_arr_close(&w);
		fg_jw_obj_close(&w);
		if (fg_jw_error(&w))
			rc = report_error("out of memory", NULL);
		else
			printf("%s\n", w.buf);
	}
	fg_jw_fini(&w);
	return rc;
}

static int cmd_backends(int argc, char **argv)
{
	enum { BO_SERVICE, BO_INTERVAL, BO_STATS, BO_MAX };
	struct opt o[BO_MAX] = {
		[BO_SERVICE] = { "--service", true, NULL },
		[BO_INTERVAL] = { "--interval", true, NULL },
		[BO_STATS] = { "--stats", false, NULL },
	};
	struct fg_json_writer wa, wb;
	struct fg_json_doc *da = NULL, *db = NULL;
	uint64_t interval = 1000;
	double ta = 0, tb = 0;
	const char *pos[1];
	unsigned np;
	int rc = parse_opts(argc, argv, o, BO_MAX, pos, &np, 0);

	if (rc)
		return rc;
	if (o[BO_SERVICE].val && (rc = check_service(o[BO_SERVICE].val)))
		return rc;
	if (o[BO_INTERVAL].val && o[BO_STATS].val)
		return usage_err("backends: --interval goes with rates, not --stats");
	if (o[BO_INTERVAL].val && (fg_duration_parse(o[BO_INTERVAL].val, &interval) ||
				   interval < 10 || interval > 3600000))
		return usage_err("--interval: '%s' is not a duration from 10ms to 1h (e.g. 1s, "
				 "500ms)", o[BO_INTERVAL].val);
	fg_jw_init(&wa, 0);
	fg_jw_init(&wb, 0);
	if (!o[BO_STATS].val) {
		struct timespec ts = { (time_t)(interval / 1000), (long)(interval % 1000) * 1000000L };

		rc = stats_sample(o[BO_SERVICE].val, &wa, &da, &ta);
		while (!rc && nanosleep(&ts, &ts) && errno == EINTR)
			;
	}
	if (!rc)
		rc = stats_sample(o[BO_SERVICE].val, &wb, &db, &tb);
	if (!rc)
		rc = backends_render(da ? fg_json_root(da) : NULL, fg_json_root(db),
				     tb - ta > 0.001 ? tb - ta : 0.001);
	fg_json_free(da);
	fg_json_free(db);
	fg_jw_fini(&wa);
	fg_jw_fini(&wb);
	return rc;
}

/* ---- version --------------------------------------------------------------- */

static int final_version(const struct fg_json *data, void *arg)
{
	(void)arg;
	if (g_json) {
		struct fg_json_writer w;

		fg_jw_init(&w, 0);
		fg_jw_obj_open(&w, NULL);
		fg_jw_obj_open(&w, "fgctl");
		fg_jw_str(&w, "version", FG_VERSION);
		fg_jw_i64(&w, "protocol", FG_PROTO_VERSION);
		fg_jw_obj_close(&w);
		fg_jw_value(&w, "daemon", data);
		fg_jw_obj_close(&w);
		printf("%s\n", w.buf ? w.buf : "{}");
		fg_jw_fini(&w);
		return EXIT_OK;
	}
	printf("flowgate %s (%s, CUDA batch path %s, -march=%s, %s)\n", jstr(data, "version"),
	       jstr(data, "dpdk"), jstr(data, "gpu"), jstr(data, "march"), jstr(data, "options"));
	bool ro = false;

	(void)fg_json_get_bool(data, "read_only", &ro);
	printf("  at %s%s, protocol %" PRIu64 "\n", jstr(data, "socket"), ro ? " (read-only)" : "",
	       jnum(data, "protocol"));
	return EXIT_OK;
}

static int cmd_version(int argc, char **argv)
{
	struct req r;

	(void)argv;
	if (argc)
		return usage_err("version takes no arguments");
	if (!g_json)
		printf("fgctl %s (protocol %d)\n", FG_VERSION, FG_PROTO_VERSION);
	fflush(stdout);
	req_begin(&r, "version");
	return run(&r, NULL, NULL, final_version, NULL);
}

/* Non-zero counters of object @p o, "name n, name n" (nothing: "-"). */
static void print_nonzero(const struct fg_json *o)
{
	bool any = false;

	for (const struct fg_json *c = o ? o->child : NULL; c; c = c->next)
		if (c->type == FG_JSON_NUM && c->d != 0) {
			printf("%s%s %.0f", any ? ", " : "", c->key, c->d);
			any = true;
		}
	printf("%s\n", any ? "" : "-");
}

/* fgctl sync: the "sync" object of the daemon's stats (fg_sync.h). */
static int final_sync(const struct fg_json *data, void *arg)
{
	const struct fg_json *y = fg_json_get(data, "sync"), *ps;
	bool on = false, dsr = false, ready = true;

	(void)arg;
	if (y == NULL || y->type != FG_JSON_OBJ)
		return EXIT_ERR;
	if (g_json)
		return final_json(y, NULL);
	(void)fg_json_get_bool(y, "on", &on);
	if (!on) {
		printf("sync: off (the config has no sync block)\n");
		return EXIT_OK;
	}
	(void)fg_json_get_bool(y, "dsr", &dsr);
	(void)fg_json_get_bool(y, "ready", &ready);
	printf("sync: node %" PRIu64 " on %s, NAT%s services, at most %" PRIu64
	       " records/s, seq %" PRIu64 "%s\n", jnum(y, "node"), jstr(y, "listen"),
	       dsr ? " and DSR" : "", jnum(y, "rate"), jnum(y, "seq"),
	       ready ? "" : "; not ready (announces nothing)");
	if (!ready)
		printf("  waiting   %s\n", jstr(y, "waiting"));
	printf("  sent      %" PRIu64 " records, %" PRIu64 " messages, %" PRIu64
	       " bytes; send_failed %" PRIu64 "; backlog %" PRIu64 ", queue_full %"
	       PRIu64 "\n", jnum(y, "sent_records"), jnum(y, "sent_msgs"),
	       jnum(y, "sent_bytes"), jnum(y, "send_failed"), jnum(y, "backlog"),
	       jnum(y, "queue_full"));
	printf("  delay     queued to sent: mean %" PRIu64 " us, max %" PRIu64 " us (this node's "
	       "share of the window of loss)\n", jnum(y, "sent_records") ?
	       jnum(y, "delay_us_sum") / jnum(y, "sent_records") : 0, jnum(y, "delay_us_max"));
	printf("  received  %" PRIu64 " records, %" PRIu64 " messages; installed %"
	       PRIu64 ", updated %" PRIu64 ", stale %" PRIu64 ", closed %" PRIu64
	       ", install_queue_full %" PRIu64 "\n", jnum(y, "recv_records"),
	       jnum(y, "recv_msgs"), jnum(y, "installed"), jnum(y, "updated"),
	       jnum(y, "stale"), jnum(y, "closed"), jnum(y, "install_queue_full"));
	printf("  refused   ");
	print_nonzero(fg_json_get(y, "refused"));
	printf("  not installed ");
	print_nonzero(fg_json_get(y, "install_refused"));
	printf("%-16s %-28s %6s %-6s %10s %-10s %12s %8s %10s %8s\n", "PEER", "ADDR", "NODE",
	       "STATE", "LAST_RX", "CATCH_UP", "RECORDS", "REFUSED", "SENT", "FAILED");
	ps = fg_json_get(y, "peers");
	for (const struct fg_json *p = ps ? ps->child : NULL; p; p = p->next) {
		int64_t lag = -1;
		bool dead = false, caught = false;
		char lb[32];

		(void)fg_json_get_i64(p, "last_rx_ms", &lag);
		(void)fg_json_get_bool(p, "dead", &dead);
		(void)fg_json_get_bool(p, "caught_up", &caught);
		if (lag < 0)
			snprintf(lb, sizeof(lb), "never");
		else
			snprintf(lb, sizeof(lb), "%" PRId64 "ms", lag);
		printf("%-16s %-28s %6" PRIu64 " %-6s %10s %-10s %12" PRIu64 " %8" PRIu64
		       " %10" PRIu64 " %8" PRIu64 "\n", jstr(p, "name"), jstr(p, "addr"),
		       jnum(p, "node"), lag < 0 ? "never" : dead ? "dead" : "alive", lb,
		       caught ? "received" : "-", jnum(p, "recv_records"), jnum(p, "refused"),
		       jnum(p, "sent_msgs"), jnum(p, "send_failed"));
	}
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
	g_socket_given = g_socket && *g_socket;
	if (!g_socket_given)
		g_socket = FG_CTL_DEFAULT_SOCKET;
	/* global options may appear anywhere; the rest is the command line */
	/* --json first: every error, usage ones included, answers in JSON */
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-s") || !strcmp(argv[i], "--socket") ||
		    !strcmp(argv[i], "--timeout"))
			i++;
		else if (!strcmp(argv[i], "--json"))
			g_json = true;
	}
	char **rest = calloc((size_t)argc + 1, sizeof(*rest));
	int nr = 0;
	if (!rest)
		return report_error("out of memory", NULL);
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
			g_socket_given = true;
		} else if (!strncmp(a, "--socket=", 9)) {
			g_socket = a + 9;
			g_socket_given = true;
		} else if (!strcmp(a, "--timeout")) {
			if (i + 1 >= argc || fg_duration_parse(argv[i + 1], &g_timeout_ms)) {
				free(rest);
				return usage_err("--timeout needs a duration (500ms, 30s, 5m; 0 = "
						 "for ever)");
			}
			i++;
		} else if (!strcmp(a, "-V") || !strcmp(a, "--version")) {
			printf("fgctl %s\n", FG_VERSION);
			free(rest);
			return EXIT_OK;
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
		if (g_json)
			rc = usage_err("no command given");
		else
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
	} else if (!strcmp(rest[0], "sync")) {
		rc = nr > 1 ? usage_err("sync takes no arguments") :
		     cmd_simple(0, rest + 1, "stats", final_sync);
	} else if (!strcmp(rest[0], "ping")) {
		rc = cmd_simple(nr - 1, rest + 1, "ping", final_tree);
	} else if (!strcmp(rest[0], "backends")) {
		rc = cmd_backends(nr - 1, rest + 1);
	} else if (!strcmp(rest[0], "version")) {
		rc = cmd_version(nr - 1, rest + 1);
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
