/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The daemon's options (fg_opts.h).  FG_OPT_LIST is the one table: getopt's
 * long options, the usage text, the range checks and docs/CONFIG.md's
 * option table (tests/daemon/test_service.py compares them) come from it,
 * through the machinery flowgate-xdp's table uses too (control/fg_opt.h).
 *
 * Config-describing options become config-file statements in one text
 * (struct cfgtext), a line per statement, each line remembering the option
 * that wrote it, so the file parser's "line N: reason" becomes
 * "--service 10.0.0.1:80,mode=x: mode: unknown mode 'x' (...)".
 */
#include "fg_opts.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <rte_string_fns.h>
#include <rte_version.h>

#include "ct.h"
#include "fg_announce.h"
#include "fg_config_parse.h"
#include "fg_log.h"
#include "fg_metrics.h"
#include "fg_opt.h"
#include "fg_proto.h"

#ifndef FG_VERSION
#define FG_VERSION "unknown"
#endif
#ifndef FG_MARCH
#define FG_MARCH "default"
#endif

/* Kinds of argument checks (fg_opt.h). */
#define K_FLAG FG_OPT_FLAG
#define K_UINT FG_OPT_UINT
#define K_ENUM FG_OPT_ENUM
#define K_STR FG_OPT_STR
#define K_CFG FG_OPT_CFG

/*
 * X(id, long name, short, has_arg, kind, min, max, metavar/range, default,
 *   help, a value it refuses); the rows flowgate-xdp has too come from
 *   fg_opt.h (FG_OPT_COMMON_*)
 */
#define FG_OPT_LIST(X) \
	FG_OPT_COMMON_HEAD(X, "config file (docs/CONFIG.md, flowgate.conf(5)); SIGHUP re-reads it", \
	  FG_CTL_DEFAULT_SOCKET, "control socket (also $FLOWGATE_SOCKET, the file's control_socket)") \
	X(WORKERS, "workers", 0, required_argument, K_UINT, 1, FG_MAX_WORKERS, "N", "all but the main lcore", \
	  "worker lcores to use", "abc") \
	X(SW_RSS, "sw-rss", 0, required_argument, K_ENUM, 0, 0, "auto|on|off", "auto", \
	  "software RSS dispatch between workers", "maybe") \
	X(CT_CAPACITY, "ct-capacity", 0, required_argument, K_CFG, 0, 0, "N", "1048576", \
	  "conntrack entries per worker, 1024..2^30", "10") \
	X(MBUFS, "mbufs", 0, required_argument, K_UINT, 1024, 1u << 28, "N", "65535", \
	  "mbufs per NUMA socket (raise it when a port cannot fill its rings)", "xyz") \
	X(HOST_TAP, "host-tap", 0, optional_argument, K_STR, 1, 10, "[=PREFIX]", "off", \
	  "host exception path: a kernel TAP per port (PREFIXn, default fg0, fg1...) gets " \
	  "the packets for the host itself (SSH, BGP, ping to a local address)", "=waytoolongprefix") \
	X(ANNOUNCE, "announce", 0, optional_argument, K_STR, 1, UINT32_MAX, "[=TABLE]", "off", \
	  "route fate-sharing for BGP/ECMP: keep VIP/32 (/128) dev <port 0's TAP> in kernel " \
	  "routing table TABLE (default 4242; not 253-255) while forwarding with a usable " \
	  "backend; needs --host-tap (docs/DEPLOY.md)", "=254") \
	X(SECOND_CHANCE, "second-chance", 0, no_argument, K_FLAG, 0, 0, "", "off", \
	  "dsr-gue: a packet picked up without its SYN names the previous Maglev owner in " \
	  "the GUE header; a backend without a socket for it forwards it there once", "") \
	X(IDLE_SLEEP, "idle-sleep", 0, optional_argument, K_STR, 0, 100000, "[=US]", "off", \
	  "workers sleep when their polls come back empty, up to US microseconds " \
	  "(default 200; 0 = busy polling)", "=100001") \
	X(CTL_IDLE, "ctl-idle-timeout", 0, required_argument, K_UINT, 0, INT32_MAX / 1000, "SEC", "30", \
	  "close control clients without a complete request this long (0 = never; flows watch " \
	  "clients are exempt)", "-1") \
	X(STATE_FILE, "state-file", 0, required_argument, K_STR, 0, 0, "PATH|none", \
	  "the control socket's path, .sock -> .state: /run/flowgate/flowgate.state", \
	  "restart hand-over: on SIGTERM/SIGINT the tracked flows and learned neighbours " \
	  "are written here, and the next start restores them (and removes the file); " \
	  "none = off (docs/DEPLOY.md)", "") \
	FG_OPT_COMMON_METRICS(X, "serve Prometheus GET /metrics there (bind a management " \
	  "address: no authentication)") \
	X(PDUMP, "pdump", 0, no_argument, K_FLAG, 0, 0, "", "off", \
	  "let dpdk-dumpcap / dpdk-pdump capture (needs shared hugepage memory: an EAL " \
	  "--file-prefix; see docs/OBSERVABILITY.md)", "") \
	X(GPU, "gpu", 0, optional_argument, K_ENUM, 0, 0, "[=graph|persistent]", "off", \
	  "parse and hash bursts on the GPU (CUDA builds; default launch mode graph)", "=fast") \
	X(ICMP_RATE, "icmp-rate", 0, required_argument, K_UINT, 0, 1000000, "N", "100", \
	  "ICMP errors and RSTs generated per second per worker (0 = none)", "lots") \
	X(LOG_LEVEL, "log-level", 0, required_argument, K_ENUM, 0, 0, \
	  "emerg|alert|crit|err|warning|notice|info|debug", "info", \
	  "flowgate's log level (EAL's --log-level=flowgate:LEVEL works too)", "loud") \
	FG_OPT_COMMON_TAIL(X) \
	X(SERVICE, "service", 0, required_argument, K_CFG, 0, 0, \
	  "VIP:PORT[/tcp|udp][,mode=dsr-ipip|dsr-gue|nat][,sched=maglev|lc][,name=N][,gue-port=P][,on-fail=keep|reset]", "", \
	  "a service", "10.0.0.1:80,on-fail=never") \
	X(BACKEND, "backend", 0, required_argument, K_CFG, 0, 0, \
	  "ADDR[:PORT][,weight=W][,drained][,id=N][,src=ADDR]", "", \
	  "a backend of the last --service (weight 0..65535)", "10.0.1.1,weight=70000") \
	X(LOCAL, "local", 0, required_argument, K_CFG, 0, 0, "ADDR[,port=N]", "", \
	  "balancer address of port N (ARP/ND answered; NAT source; DSR outer source)", "10.0.0.300") \
	X(GATEWAY, "gateway", 0, required_argument, K_CFG, 0, 0, "ADDR[,port=N]", "", \
	  "default next hop of port N", "gw") \
	X(NEIGH, "neigh", 0, required_argument, K_CFG, 0, 0, "ADDR,MAC[,port=N]", "", \
	  "static neighbour", "10.0.0.2,zz:00:00:00:00:01") \
	X(PORT_MAC, "port-mac", 0, required_argument, K_CFG, 0, 0, "N,MAC", "", \
	  "source MAC of port N", "0,nomac") \
	X(FLOOD_RATE, "flood-rate", 0, required_argument, K_CFG, 0, 0, "N", "0 (off)", \
	  "conntrack flood threshold, new flows/s per worker", "-5") \
	X(MTU, "mtu", 0, required_argument, K_STR, 68, 16000, "N[,port=P]", "the device's", \
	  "egress L3 MTU of port P (default every port), 68..16000; encapsulations above it " \
	  "drop as encap_too_big; mbufs grow to hold frames of the largest MTU", "9")

enum opt_id { FG_OPT_LIST(FG_OPT_ID) OPT_MAX };

static const struct fg_opt_def opt_defs[OPT_MAX] = { FG_OPT_LIST(FG_OPT_ROW) };

static const struct fg_opt_table opt_table = {
	.prog = "flowgate", .defs = opt_defs, .n = OPT_MAX,
	.unknown_hint = "; EAL options go before '--'",
};

unsigned int fg_opts_count(void) { return OPT_MAX; }
const char *fg_opts_name(unsigned int i) { return i < OPT_MAX ? opt_defs[i].name : NULL; }
const char *fg_opts_bad_example(unsigned int i)
{
	return i < OPT_MAX && opt_defs[i].has_arg != no_argument ? opt_defs[i].bad : NULL;
}

/* How a config-describing option (K_CFG) goes with -c FILE, as --help,
 * docs/CONFIG.md and the parser all say it (tests/daemon/test_service.py
 * holds them together): --ct-capacity overrides the file's capacity; the
 * others build a config only when there is no file, and the refusal names
 * the statement to write instead. */
enum file_rule { RULE_NONE, RULE_OVERRIDE, RULE_NOT_WITH_C };
static const char *const rule_text[] = {
	[RULE_NONE] = "", [RULE_OVERRIDE] = "overrides the file's",
	[RULE_NOT_WITH_C] = "not with -c: write it in the file",
};

static enum file_rule opt_file_rule(unsigned int id)
{
	if (opt_defs[id].kind != K_CFG)
		return RULE_NONE;
	return id == OPT_CT_CAPACITY ? RULE_OVERRIDE : RULE_NOT_WITH_C;
}

/* The file statement a K_CFG option stands for. */
static const char *opt_file_stmt(unsigned int id)
{
	switch (id) {
	case OPT_SERVICE: return "service [NAME] VIP:PORT/PROTO { ... }";
	case OPT_BACKEND: return "backend ADDR[:PORT] [weight W]; in its service block";
	case OPT_LOCAL: return "port NAME { local ADDR; }";
	case OPT_GATEWAY: return "port NAME { gateway ADDR; }";
	case OPT_NEIGH: return "neighbour ADDR MAC port NAME;";
	case OPT_PORT_MAC: return "port NAME { mac MAC; }";
	case OPT_FLOOD_RATE: return "conntrack { flood_rate N; }";
	case OPT_CT_CAPACITY: return "conntrack { capacity N; }";
	default: return "";
	}
}

/* ------------------------------------------------------------ messages */

struct state {
	struct fg_opts *o;
	FILE *err;
	struct cfgtext *ct;
	int bad;               /* problems reported */
	bool has_c;            /* -c / --config anywhere on the command line */
};

static void opt_err(struct state *st, enum opt_id id, const char *arg,
		    const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static void opt_err(struct state *st, enum opt_id id, const char *arg,
		    const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fg_opt_verr(&opt_table, st->err, id, arg, fmt, ap);
	va_end(ap);
	st->bad++;
}

/* ------------------------------------------------- config text builder */

/* Statements of the options-built config, in file syntax.  Ports are
 * gathered per port index (one block each), services in option order. */
#define CT_MAX_LINES 8192
struct cfgtext {
	char *svc, *port[FG_MAX_PORTS], *rest;
	size_t svc_len, port_len[FG_MAX_PORTS], rest_len;
	unsigned int svc_lines, port_lines[FG_MAX_PORTS], rest_lines;
	/* line -> (option, argument), per section */
	struct ct_src { uint8_t id; const char *arg; } svc_src[CT_MAX_LINES],
		port_src[FG_MAX_PORTS][64], rest_src[64];
	bool svc_open;
	unsigned int n_backends_total;
	uint32_t backend_id[FG_MAX_SERVICES * 4]; /* id=N + 1 per --backend, 0 none */
	unsigned int n_backend_ids;
	bool has_ct_cap, has_flood;
	/* the first option of FG_OPT_RULE_NOT_WITH_C given, for the refusal */
	int not_with_c;        /* enum opt_id + 1, 0 = none */
	const char *not_with_c_arg;
};

/* Appends one line (printf) to a section, remembering its source. */
static int ct_line(char **buf, size_t *len, unsigned int *lines,
		   struct ct_src *src, unsigned int max_lines, enum opt_id id,
		   const char *arg, const char *fmt, ...)
	__attribute__((format(printf, 8, 9)));

static int ct_line(char **buf, size_t *len, unsigned int *lines,
		   struct ct_src *src, unsigned int max_lines, enum opt_id id,
		   const char *arg, const char *fmt, ...)
{
	va_list ap;
	char line[512];
	int n;
	char *nb;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(line) - 1 || *lines >= max_lines)
		return -E2BIG;
	nb = realloc(*buf, *len + (size_t)n + 2);
	if (nb == NULL)
		return -ENOMEM;
	memcpy(nb + *len, line, (size_t)n);
	nb[*len + (size_t)n] = '\n';
	*len += (size_t)n + 1;
	nb[*len] = '\0';
	*buf = nb;
	src[*lines] = (struct ct_src){ (uint8_t)id, arg };
	(*lines)++;
	return 0;
}

#define SVC_LINE(st, id, arg, ...) \
	ct_line(&(st)->ct->svc, &(st)->ct->svc_len, &(st)->ct->svc_lines, \
		(st)->ct->svc_src, CT_MAX_LINES, id, arg, __VA_ARGS__)
#define PORT_LINE(st, p, id, arg, ...) \
	ct_line(&(st)->ct->port[p], &(st)->ct->port_len[p], &(st)->ct->port_lines[p], \
		(st)->ct->port_src[p], 64, id, arg, __VA_ARGS__)
#define REST_LINE(st, id, arg, ...) \
	ct_line(&(st)->ct->rest, &(st)->ct->rest_len, &(st)->ct->rest_lines, \
		(st)->ct->rest_src, 64, id, arg, __VA_ARGS__)

/* A word as the file lexer reads it back: quoted, \" and \\ escaped, so
 * no value can end a statement or open a block. */
static const char *q(char *buf, size_t len, const char *s)
{
	size_t o = 0;

	buf[o++] = '"';
	for (; *s && o + 3 < len; s++) {
		if (*s == '"' || *s == '\\')
			buf[o++] = '\\';
		buf[o++] = *s;
	}
	buf[o++] = '"';
	buf[o] = '\0';
	return buf;
}

/* Splits "head,k=v,k" in place: the next key (and value, or NULL). */
static bool kv_next(char **rest, char **key, char **val)
{
	char *tok = strsep(rest, ",");

	if (tok == NULL)
		return false;
	*key = tok;
	*val = strchr(tok, '=');
	if (*val)
		*(*val)++ = '\0';
	return true;
}

static int opt_service(struct state *st, const char *arg)
{
	static const char *const keys[][2] = {
		{"mode", "mode"}, {"sched", "scheduler"}, {"gue-port", "gue_port"},
		{"on-fail", "on_fail"},
	};
	char *dup = strdup(arg), *rest = dup, *head, *k, *v, *name = NULL;
	char *pk[8], *pv[8], b1[160], b2[160];
	unsigned int np = 0;
	int rc = 0;

	if (dup == NULL)
		return -ENOMEM;
	head = strsep(&rest, ",");
	while (kv_next(&rest, &k, &v)) {
		unsigned int i;

		for (i = 0; i < RTE_DIM(keys) && strcmp(k, keys[i][0]); i++)
			;
		if (!strcmp(k, "name") && v) {
			name = v;
		} else if (i == RTE_DIM(keys) || v == NULL || np == RTE_DIM(pk)) {
			opt_err(st, OPT_SERVICE, arg, "'%s' is not KEY=VALUE with KEY one "
				"of mode, sched, name, gue-port, on-fail", k);
		} else {
			pk[np] = (char *)(uintptr_t)keys[i][1];
			pv[np++] = v;
		}
	}
	if (st->ct->svc_open)
		rc = SVC_LINE(st, OPT_SERVICE, arg, "}");
	if (rc == 0)
		rc = SVC_LINE(st, OPT_SERVICE, arg, "service %s %s {",
			      name ? q(b1, sizeof(b1), name) : "", q(b2, sizeof(b2), head));
	st->ct->svc_open = true;
	for (unsigned int i = 0; i < np && rc == 0; i++)
		rc = SVC_LINE(st, OPT_SERVICE, arg, "%s %s;", pk[i], q(b1, sizeof(b1), pv[i]));
	free(dup);
	return rc;
}

static int opt_backend(struct state *st, const char *arg)
{
	char *dup = strdup(arg), *rest = dup, *head, *k, *v, *end;
	char line[400], b[160];
	size_t n;
	uint32_t id = 0;

	if (dup == NULL)
		return -ENOMEM;
	if (!st->ct->svc_open) {
		opt_err(st, OPT_BACKEND, arg, "comes before any --service (a backend "
			"belongs to the --service before it)");
		free(dup);
		return 0;
	}
	head = strsep(&rest, ",");
	n = (size_t)snprintf(line, sizeof(line), "backend %s", q(b, sizeof(b), head));
	while (kv_next(&rest, &k, &v) && n < sizeof(line)) {
		if (!strcmp(k, "drained") && v == NULL) {
			n += (size_t)snprintf(line + n, sizeof(line) - n, " drained");
		} else if ((!strcmp(k, "weight") || !strcmp(k, "src")) && v) {
			n += (size_t)snprintf(line + n, sizeof(line) - n, " %s %s", k,
					      q(b, sizeof(b), v));
		} else if (!strcmp(k, "id") && v) {
			unsigned long x = strtoul(v, &end, 10);

			if (*v < '0' || *v > '9' || *end || x > UINT32_MAX - 2)
				opt_err(st, OPT_BACKEND, arg, "id: '%s' is not an integer in "
					"0..%u", v, UINT32_MAX - 2);
			id = (uint32_t)x + 1;   /* 0: no id given */
		} else {
			opt_err(st, OPT_BACKEND, arg, "'%s' is not one of weight=W, drained, "
				"id=N, src=ADDR", k);
		}
	}
	free(dup);
	if (st->ct->n_backend_ids < RTE_DIM(st->ct->backend_id))
		st->ct->backend_id[st->ct->n_backend_ids++] = id;
	if (n >= sizeof(line) - 1) {
		opt_err(st, OPT_BACKEND, arg, "too long");
		return 0;
	}
	return SVC_LINE(st, OPT_BACKEND, arg, "%s;", line);
}

/* "N" of port=N / --port-mac N,...: a port index 0..FG_MAX_PORTS-1. */
static int port_index(struct state *st, enum opt_id id, const char *arg,
		      const char *s)
{
	char *end;
	unsigned long p = strtoul(s, &end, 10);

	if (*s < '0' || *s > '9' || *end || p >= FG_MAX_PORTS) {
		opt_err(st, id, arg, "port '%s' is not a port index 0..%d", s,
			FG_MAX_PORTS - 1);
		return -1;
	}
	return (int)p;
}

/* --local / --gateway / --neigh / --port-mac */
static int opt_port_stmt(struct state *st, enum opt_id id, const char *arg)
{
	char *dup = strdup(arg), *rest = dup, *head, *k, *v, *mac = NULL;
	char b1[160], b2[64];
	int port = 0, rc = 0;
	struct fg_addr a;

	if (dup == NULL)
		return -ENOMEM;
	head = strsep(&rest, ",");
	if (id == OPT_PORT_MAC) {
		port = port_index(st, id, arg, head);
		if (port >= 0 && rest == NULL)
			opt_err(st, id, arg, "expected N,MAC");
		else if (port >= 0)
			rc = PORT_LINE(st, port, id, arg, "mac %s;", q(b1, sizeof(b1), rest));
		goto out;
	}
	if (id == OPT_NEIGH)
		mac = strsep(&rest, ",");
	while (kv_next(&rest, &k, &v))
		if (!strcmp(k, "port") && v)
			port = port_index(st, id, arg, v);
		else
			opt_err(st, id, arg, "'%s' is not port=N", k);
	if (port < 0)
		goto out;
	if (id == OPT_NEIGH) {
		rc = mac == NULL ? (opt_err(st, id, arg, "expected ADDR,MAC"), 0) :
		     REST_LINE(st, id, arg, "neighbour %s %s port %d;", q(b1, sizeof(b1), head),
			       q(b2, sizeof(b2), mac), port);
	} else if (id == OPT_LOCAL) {
		rc = PORT_LINE(st, port, id, arg, "local %s;", q(b1, sizeof(b1), head));
	} else {
		/* the file has gateway (IPv4) and gateway6 */
		bool v6 = fg_addr_parse(head, &a) == 0 && a.family == AF_INET6;

		rc = PORT_LINE(st, port, id, arg, "gateway%s %s;", v6 ? "6" : "",
			       q(b1, sizeof(b1), head));
	}
out:
	free(dup);
	return rc;
}

static int opt_conntrack(struct state *st, enum opt_id id, const char *arg)
{
	char b[160];

	if (id == OPT_CT_CAPACITY)
		st->ct->has_ct_cap = true;
	else
		st->ct->has_flood = true;
	return REST_LINE(st, id, arg, "conntrack { %s %s; }",
			 id == OPT_CT_CAPACITY ? "capacity" : "flood_rate",
			 q(b, sizeof(b), arg));
}

/* Joins the sections into one file text; src[i] is the option that wrote
 * line i + 1 (service blocks closed, one block per port index). */
static int cfgtext_build(struct state *st, char **text, struct ct_src **src,
			 unsigned int *n_lines)
{
	struct cfgtext *ct = st->ct;
	unsigned int cap = ct->svc_lines + ct->rest_lines + 2 + FG_MAX_PORTS * 66, n = 0;
	struct ct_src *m = calloc(cap, sizeof(*m));
	size_t len = 0;
	char *t = NULL;
	int rc = 0;

	if (m == NULL)
		return -ENOMEM;
	if (ct->svc_open)
		rc = SVC_LINE(st, (enum opt_id)ct->svc_src[ct->svc_lines - 1].id,
			      ct->svc_src[ct->svc_lines - 1].arg, "}");
	ct->svc_open = false;
	for (unsigned int i = 0; i < ct->svc_lines; i++)
		m[n++] = ct->svc_src[i];
	if (rc == 0 && ct->svc) {
		t = strdup(ct->svc);
		len = ct->svc_len;
	}
	for (unsigned int p = 0; p < FG_MAX_PORTS && rc == 0; p++) {
		size_t need;
		char *nt;

		if (ct->port_lines[p] == 0)
			continue;
		need = len + ct->port_len[p] + 32;
		nt = realloc(t, need);
		if (nt == NULL) {
			rc = -ENOMEM;
			break;
		}
		t = nt;
		len += (size_t)sprintf(t + len, "port \"%u\" {\n%s}\n", p, ct->port[p]);
		m[n++] = ct->port_src[p][0];
		for (unsigned int i = 0; i < ct->port_lines[p]; i++)
			m[n++] = ct->port_src[p][i];
		m[n++] = ct->port_src[p][ct->port_lines[p] - 1];
	}
	if (rc == 0 && ct->rest) {
		char *nt = realloc(t, len + ct->rest_len + 1);

		if (nt == NULL) {
			rc = -ENOMEM;
		} else {
			t = nt;
			memcpy(t + len, ct->rest, ct->rest_len + 1);
			len += ct->rest_len;
			for (unsigned int i = 0; i < ct->rest_lines; i++)
				m[n++] = ct->rest_src[i];
		}
	}
	if (rc == 0 && t == NULL)
		t = strdup("");
	if (rc < 0 || t == NULL) {
		free(t);
		free(m);
		return rc < 0 ? rc : -ENOMEM;
	}
	*text = t;
	*src = m;
	*n_lines = n;
	return 0;
}

/* ------------------------------------------------------------ options */

static void opt_mtu(struct state *st, const char *arg)
{
	char *dup = strdup(arg), *rest = dup, *head, *k, *v;
	const struct fg_opt_def *d = &opt_defs[OPT_MTU];
	uint64_t n = 0;
	int port = -1;

	if (dup == NULL)
		return;
	head = strsep(&rest, ",");
	if (!fg_opt_u64(head, &n) || n < d->min || n > d->max)
		opt_err(st, OPT_MTU, arg, "expected N[,port=P], N in %" PRIu64 "..%" PRIu64,
			d->min, d->max);
	else
		while (kv_next(&rest, &k, &v))
			if (strcmp(k, "port") != 0 || v == NULL)
				opt_err(st, OPT_MTU, arg, "'%s' is not port=P", k);
			else
				port = port_index(st, OPT_MTU, arg, v);
	if (st->bad == 0)
		for (int p = 0; p < FG_MAX_PORTS; p++)
			if (port < 0 || p == port)
				st->o->dp.mtu[p] = (uint16_t)n;
	free(dup);
}

static void opt_str(struct state *st, enum opt_id id, const char *arg)
{
	struct fg_opts *o = st->o;
	struct sockaddr_storage ss;
	socklen_t sl;

	switch (id) {
	case OPT_CONFIG:
		o->config_file = arg;
		break;
	case OPT_SOCKET:
		if (*arg == '\0' || strlen(arg) >= FG_PATH_MAX - 1)
			opt_err(st, id, arg, "a path of 1..%d bytes", FG_PATH_MAX - 2);
		else
			snprintf(o->socket_path, sizeof(o->socket_path), "%s", arg);
		break;
	case OPT_HOST_TAP:
		if (arg == NULL)
			arg = "fg";
		if (strlen(arg) < 1 || strlen(arg) > 10)
			opt_err(st, id, arg, "the interface prefix takes 1 to 10 characters");
		o->dp.host_tap = arg;
		break;
	case OPT_ANNOUNCE: {
		uint64_t v = FG_ANNOUNCE_TABLE_DEFAULT;

		if (arg != NULL && (!fg_opt_u64(arg, &v) || v < 1 || v > UINT32_MAX ||
				    (v >= 253 && v <= 255)))
			opt_err(st, id, arg, "a kernel routing table 1..%u other than 253-255 "
				"(default, main and local would route the VIPs on this host)",
				UINT32_MAX);
		o->dp.announce_table = (uint32_t)v;
		break;
	}
	case OPT_IDLE_SLEEP: {
		uint64_t v = FG_IDLE_SLEEP_DEFAULT_US;

		if (arg != NULL && (!fg_opt_u64(arg, &v) || v > opt_defs[id].max))
			opt_err(st, id, arg, "the longest sleep in microseconds, 0..%" PRIu64
				" (0 = busy polling)", opt_defs[id].max);
		o->dp.idle_sleep_us = (uint32_t)v;
		break;
	}
	case OPT_STATE_FILE:
		if (*arg == '\0' || strlen(arg) >= sizeof(o->state_buf))
			opt_err(st, id, arg, "a path of 1..%zu bytes, or none",
				sizeof(o->state_buf) - 1);
		else
			snprintf(o->state_buf, sizeof(o->state_buf), "%s", arg);
		o->state_set = true;
		break;
	case OPT_METRICS:
		if (strlen(arg) >= sizeof(o->metrics_buf) ||
		    fg_metrics_listen_parse(arg, &ss, &sl) < 0)
			opt_err(st, id, arg, "expected ADDR:PORT or [V6ADDR]:PORT, numeric");
		snprintf(o->metrics_buf, sizeof(o->metrics_buf), "%s", arg);
		o->dp.metrics_addr = o->metrics_buf;
		break;
	case OPT_MTU:
		opt_mtu(st, arg);
		break;
	default:
		break;
	}
}

static void opt_enum(struct state *st, enum opt_id id, const char *arg)
{
	struct fg_opts *o = st->o;
	int v;

	switch (id) {
	case OPT_SW_RSS:
		/* auto|on|off: -1, 1, 0 */
		v = fg_opt_enum(&opt_table, st->err, id, arg);
		o->dp.sw_rss = v == 0 ? -1 : v == 1 ? 1 : 0;
		st->bad += v < 0;
		break;
	case OPT_GPU:
		o->dp.gpu_mode = arg ? arg : "graph";
		if (strcmp(o->dp.gpu_mode, "graph") && strcmp(o->dp.gpu_mode, "persistent"))
			opt_err(st, id, arg, "the launch mode is graph or persistent");
		break;
	case OPT_LOG_LEVEL:
		v = fg_log_level_parse(arg);
		if (v < 0)
			opt_err(st, id, arg, "expected %s", opt_defs[id].meta);
		o->log_level = v;
		break;
	default:
		break;
	}
}

static void opt_uint(struct state *st, enum opt_id id, const char *arg)
{
	struct fg_opts *o = st->o;
	uint64_t v;

	if (!fg_opt_uint(&opt_table, st->err, id, arg, &v)) {
		st->bad++;
		return;
	}
	switch (id) {
	case OPT_WORKERS: o->dp.n_workers = (unsigned int)v; break;
	case OPT_MBUFS: o->dp.n_mbufs = (unsigned int)v; break;
	case OPT_ICMP_RATE: o->dp.icmp_rate = (uint32_t)v; break;
	case OPT_CTL_IDLE: o->dp.ctl_idle_ms = v ? (int)v * 1000 : -1; break;
	default: break;
	}
}

static int opt_apply(void *ctx, unsigned int opt, const char *arg)
{
	struct state *st = ctx;
	enum opt_id id = (enum opt_id)opt;

	switch (opt_defs[id].kind) {
	case K_FLAG:
		if (id == OPT_PDUMP)
			st->o->dp.pdump = true;
		else if (id == OPT_SECOND_CHANCE)
			st->o->dp.second_chance = true;
		else if (id == OPT_LOG_SYSLOG)
			st->o->log_syslog = true;
		else if (id == OPT_VERSION)
			st->o->version = true;
		else if (id == OPT_HELP)
			st->o->help = true;
		return 0;
	case K_UINT:
		opt_uint(st, id, arg);
		return 0;
	case K_ENUM:
		opt_enum(st, id, arg);
		return 0;
	case K_STR:
		opt_str(st, id, arg);
		return 0;
	case K_CFG:
		break;
	}
	if (opt_file_rule(id) == RULE_NOT_WITH_C && st->has_c) {
		/* refused as a whole in config_finish, whatever its value */
		if (!st->ct->not_with_c) {
			st->ct->not_with_c = (int)id + 1;
			st->ct->not_with_c_arg = arg;
		}
		return 0;
	}
	if (id == OPT_CT_CAPACITY || id == OPT_FLOOD_RATE)
		return opt_conntrack(st, id, arg);
	if (id == OPT_SERVICE)
		return opt_service(st, arg);
	if (id == OPT_BACKEND)
		return opt_backend(st, arg);
	return opt_port_stmt(st, id, arg);
}

/* ------------------------------------------------------- the config */

/* Parses the options' config text with the file parser; messages name the
 * option of the line.  Unnamed ports ("port "N"") become port index N. */
static int options_config(struct state *st, struct fg_config *out)
{
	struct fg_cfg_err ev[32];
	struct fg_cfg_errs errs = {ev, RTE_DIM(ev), 0};
	struct fg_port_cfg ports[FG_MAX_PORTS];
	struct ct_src *src = NULL;
	unsigned int n_lines, b = 0;
	char *text = NULL;
	int rc;

	rc = cfgtext_build(st, &text, &src, &n_lines);
	if (rc < 0)
		return rc;
	rc = fg_config_parse(text, strlen(text), "command line", out, &errs);
	for (unsigned int i = 0; rc < 0 && i < errs.n && i < errs.max; i++) {
		unsigned int l = ev[i].line;

		if (l >= 1 && l <= n_lines && src[l - 1].arg)
			opt_err(st, (enum opt_id)src[l - 1].id, src[l - 1].arg, "%s", ev[i].msg);
		else
			fprintf(st->err, "flowgate: options: %s\n", ev[i].msg), st->bad++;
	}
	free(text);
	free(src);
	if (rc < 0)
		return errs.n ? -EINVAL : rc;
	rc = fg_config_assign_ids(out, NULL);
	/* --backend ...,id=N: the id the operator chose */
	for (uint32_t s = 0; rc == 0 && s < out->n_services; s++)
		for (uint32_t i = 0; i < out->services[s].n_backends; i++, b++)
			if (b < st->ct->n_backend_ids && st->ct->backend_id[b])
				out->services[s].backends[i].id = st->ct->backend_id[b] - 1;
	memset(ports, 0, sizeof(ports));
	for (uint32_t i = 0; i < out->n_ports; i++) {
		unsigned int p = (unsigned int)strtoul(out->ports[i].name, NULL, 10);

		ports[p] = out->ports[i];
		ports[p].name[0] = '\0';
	}
	out->n_ports = 0;
	for (unsigned int p = 0; p < FG_MAX_PORTS; p++)
		if (st->ct->port_lines[p])
			out->n_ports = p + 1;
	memcpy(out->ports, ports, sizeof(ports));
	return rc;
}

static int file_config(struct state *st, struct fg_config *out)
{
	struct fg_cfg_err ev[32];
	struct fg_cfg_errs errs = {ev, RTE_DIM(ev), 0};
	int rc = fg_config_load(st->o->config_file, out, &errs);

	if (rc == 0)
		rc = fg_config_assign_ids(out, NULL);
	for (unsigned int i = 0; rc < 0 && i < errs.n && i < errs.max; i++) {
		if (ev[i].line)
			fprintf(st->err, "%s:%u: %s\n", ev[i].file, ev[i].line, ev[i].msg);
		else
			fprintf(st->err, "flowgate: --config %s: %s\n",
				st->o->config_file, ev[i].msg);
	}
	if (rc < 0 && errs.n == 0)
		fprintf(st->err, "flowgate: --config %s: %s\n", st->o->config_file,
			strerror(-rc));
	if (errs.n > errs.max)
		fprintf(st->err, "flowgate: --config %s: %u more problems\n",
			st->o->config_file, errs.n - errs.max);
	/* a bad file is no usage error (exit 1, not 2) */
	return rc == -EINVAL ? -EBADMSG : rc;
}

/* --state-file: as given ("none": off), else the control socket's path
 * with .sock replaced by .state (appended when it has no .sock): one
 * daemon's socket names its state too, so two daemons on a host never
 * share a file, and systemd's /run/flowgate (RuntimeDirectory) holds it. */
static void state_resolve(struct fg_opts *o)
{
	size_t n = strlen(o->socket_path);

	if (o->state_set) {
		o->dp.state_path = strcmp(o->state_buf, "none") ? o->state_buf : NULL;
		return;
	}
	if (n >= 5 && !strcmp(o->socket_path + n - 5, ".sock"))
		n -= 5;
	snprintf(o->state_buf, sizeof(o->state_buf), "%.*s.state", (int)n, o->socket_path);
	o->dp.state_path = o->state_buf;
}

/* socket: -s, then $FLOWGATE_SOCKET, then the file's control_socket
 * (default FG_CTL_DEFAULT_SOCKET); kept absolute (fg_config_validate) */
static int socket_resolve(struct state *st)
{
	struct fg_opts *o = st->o;
	const char *env = getenv(FG_CTL_SOCKET_ENV);
	char cwd[FG_PATH_MAX] = "", abs_path[2 * FG_PATH_MAX + 2];

	if (o->socket_path[0] == '\0' && env && *env)
		snprintf(o->socket_path, sizeof(o->socket_path), "%s", env);
	o->dp.cli_socket = o->socket_path[0] != '\0';
	if (!o->dp.cli_socket)
		snprintf(o->socket_path, sizeof(o->socket_path), "%s",
			 o->cfg.control_socket[0] ? o->cfg.control_socket :
			 FG_CTL_DEFAULT_SOCKET);
	if (o->socket_path[0] != '/' && getcwd(cwd, sizeof(cwd)) != NULL) {
		snprintf(abs_path, sizeof(abs_path), "%s/%s", cwd, o->socket_path);
		if (strlen(abs_path) >= sizeof(o->socket_path)) {
			fprintf(st->err, "flowgate: --socket %s: path too long (%zu bytes, "
				"at most %zu)\n", o->socket_path, strlen(abs_path),
				sizeof(o->socket_path) - 1);
			return -EINVAL;
		}
		memcpy(o->socket_path, abs_path, strlen(abs_path) + 1);
	}
	memcpy(o->cfg.control_socket, o->socket_path, sizeof(o->cfg.control_socket));
	o->dp.socket_path = o->socket_path;
	state_resolve(o);
	return 0;
}

/* The config in force: the file (with the command line's conntrack
 * capacity) or the options-built one. */
static int config_finish(struct state *st)
{
	struct fg_opts *o = st->o;
	struct fg_config oc;
	int rc;

	memset(&oc, 0, sizeof(oc));
	if (o->config_file && st->ct->not_with_c) {
		unsigned int id = (unsigned int)st->ct->not_with_c - 1;

		fprintf(st->err, "flowgate: --%s %s: not with -c %s (it builds a config only "
			"when there is no file): write %s in %s instead\n", opt_defs[id].name,
			st->ct->not_with_c_arg, o->config_file, opt_file_stmt(id),
			o->config_file);
		return -EINVAL;
	}
	rc = options_config(st, &oc);
	if (rc == 0 && o->config_file) {
		rc = file_config(st, &o->cfg);
		if (rc == 0 && realpath(o->config_file, o->config_abs) != NULL)
			o->dp.config_path = o->config_abs;
		if (rc == 0 && st->ct->has_ct_cap) {
			o->cfg.ct_capacity = oc.ct_capacity;
			o->dp.cli_ct_capacity = true;
		}
		fg_config_free(&oc);
	} else if (rc == 0) {
		o->cfg = oc;
	} else {
		fg_config_free(&oc);
	}
	if (rc < 0)
		return rc;
	if (o->cfg.ct_capacity == 0)
		o->cfg.ct_capacity = CT_DEFAULT_CAPACITY;
	rc = socket_resolve(st);
	o->dp.cfg = &o->cfg;
	return rc;
}

int fg_opts_parse(int argc, char **argv, struct fg_opts *o, FILE *err)
{
	struct state st = { .o = o, .err = err };
	int rc;

	memset(o, 0, sizeof(*o));
	fg_dp_params_init(&o->dp);
	fg_config_init(&o->cfg);
	o->log_level = -1;
	st.ct = calloc(1, sizeof(*st.ct));
	if (st.ct == NULL)
		return -ENOMEM;
	for (int i = 1; i < argc; i++)
		st.has_c |= !strncmp(argv[i], "-c", 2) || !strcmp(argv[i], "--config") ||
			    !strncmp(argv[i], "--config=", 9);
	rc = fg_opt_getopt(&opt_table, argc, argv, err, opt_apply, &st);
	st.bad += rc > 0 ? rc : 0;
	rc = rc < 0 ? rc : 0;
	if (rc == 0 && o->dp.announce_table && o->dp.host_tap == NULL) {
		fprintf(err, "flowgate: --announce needs --host-tap (the VIP routes go "
			"through port 0's TAP, which dies with the process)\n");
		st.bad++;
	}
	if (rc == 0 && st.bad == 0 && !o->help && !o->version)
		rc = config_finish(&st);
	for (unsigned int p = 0; p < FG_MAX_PORTS; p++)
		free(st.ct->port[p]);
	free(st.ct->svc);
	free(st.ct->rest);
	free(st.ct);
	if (rc == 0 && st.bad)
		rc = -EINVAL;
	return rc;
}

void fg_opts_free(struct fg_opts *o)
{
	fg_config_free(&o->cfg);
}

/* ------------------------------------------------------- help, version */

/* The config file rule of a K_CFG option, after its help. */
static void usage_note(unsigned int id, char *buf, size_t len)
{
	if (opt_file_rule(id) == RULE_OVERRIDE)
		snprintf(buf, len, " (%s %s)", rule_text[RULE_OVERRIDE], opt_file_stmt(id));
	else if (opt_file_rule(id) == RULE_NOT_WITH_C)
		snprintf(buf, len, " (%s)", rule_text[RULE_NOT_WITH_C]);
}

void fg_opts_usage(FILE *f, const char *prog)
{
	fprintf(f, "usage: %s [EAL options] -- [options]\n"
		"       %s --help | --version\n\n"
		"flowgate options (after '--'; docs/CONFIG.md, flowgate(8)):\n",
		prog, prog);
	fg_opt_usage(f, &opt_table, usage_note);
	fprintf(f, "\nEAL options: see the DPDK documentation (e.g. -l 0-2\n"
		"--no-pci --vdev=net_af_packet0,iface=eth1).  Unless an EAL memory option is given\n"
		"(--in-memory, --no-shconf, --proc-type, --huge-unlink) nor --pdump, "
		"flowgate adds --in-memory\n(--no-shconf with --no-huge): no hugepage or "
		"runtime file outlives it.\n");
}

#ifndef FG_BUILD_OPTS
#define FG_BUILD_OPTS ""
#endif

void fg_opts_build_get(struct fg_opts_build *out)
{
	out->version = FG_VERSION;
	out->dpdk = rte_version();
#ifdef FG_HAVE_GPU
	out->gpu = "on";
#else
	out->gpu = "off";
#endif
	out->march = FG_MARCH;
	out->options = FG_BUILD_OPTS;
}

void fg_opts_version(FILE *f, const char *prog)
{
	struct fg_opts_build b;

	fg_opts_build_get(&b);
	fprintf(f, "%s %s (%s, CUDA batch path %s, -march=%s, %s)\n", prog, b.version,
		b.dpdk, b.gpu, b.march, b.options);
}
