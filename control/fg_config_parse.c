/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Config file <-> struct fg_config.  Two passes: a tokenizer/block parser
 * builds a statement tree (syntax errors stop here, they make the rest
 * unreliable); then each statement is interpreted on its own, so every
 * invalid field is reported, not only the first.  Then fg_config_validate
 * checks relations between fields.
 */
#include "fg_config_parse.h"
#include "fg_loadsig.h"
#include "fg_promtext.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "conntrack/ct.h"
#include "fg_proto.h"

#define CFG_MAX_FILE (16u << 20)
#define CFG_MAX_WORDS 32

/* ---- errors ------------------------------------------------------------- */

static void err_add(struct fg_cfg_errs *e, const char *file, unsigned int line,
		    const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static void err_add(struct fg_cfg_errs *e, const char *file, unsigned int line,
		    const char *fmt, ...)
{
	if (!e)
		return;
	if (e->n < e->max && e->v) {
		struct fg_cfg_err *x = &e->v[e->n];
		snprintf(x->file, sizeof(x->file), "%s", file ? file : "");
		x->line = line;
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(x->msg, sizeof(x->msg), fmt, ap);
		va_end(ap);
	}
	e->n++;
}

/* ---- names -------------------------------------------------------------- */

static const char *const mode_names[] = { "dsr-ipip", "dsr-gue", "nat" };
static const char *const sched_names[] = { "maglev", "lc", "maglev-load" };
static const char *const fail_names[] = { "keep", "reset" };
static const char *const hc_names[] = { "none", "tcp", "http", "metrics" };

#define NAME_OF(tab, v) ((unsigned)(v) < sizeof(tab) / sizeof(tab[0]) ? tab[v] : "?")

const char *fg_mode_name(enum fg_fwd_mode m) { return NAME_OF(mode_names, m); }
const char *fg_sched_name(enum fg_sched s) { return NAME_OF(sched_names, s); }
const char *fg_fail_name(enum fg_fail_policy p) { return NAME_OF(fail_names, p); }
const char *fg_hc_name(enum fg_hc_type t) { return NAME_OF(hc_names, t); }

static int lookup_name(const char *const *tab, size_t n, const char *s)
{
	for (size_t i = 0; i < n; i++)
		if (!strcasecmp(tab[i], s))
			return (int)i;
	return -EINVAL;
}

int fg_mode_parse(const char *s) { return lookup_name(mode_names, 3, s); }
int fg_sched_parse(const char *s) { return lookup_name(sched_names, 3, s); }

/* ---- defaults ----------------------------------------------------------- */

void fg_config_init(struct fg_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	snprintf(cfg->control_socket, sizeof(cfg->control_socket), "%s",
		 FG_CTL_DEFAULT_SOCKET);
	cfg->gue_port = FG_GUE_DEFAULT_PORT;
}

static void health_defaults(struct fg_health_cfg *h)
{
	h->interval_ms = 1000;
	h->timeout_ms = 500;
	h->rise = 2;
	h->fall = 3;
	h->port = 0;
	snprintf(h->path, sizeof(h->path), "/health");
	h->expect_status = 200;
	memset(&h->metrics, 0, sizeof(h->metrics));
}

/* health metrics: a Prometheus scrape every 250 ms (vLLM preset) */
static void metrics_defaults(struct fg_health_cfg *h)
{
	health_defaults(h);
	h->interval_ms = 250;
	h->timeout_ms = 200;
	snprintf(h->path, sizeof(h->path), "/metrics");
	fg_loadsig_preset(FG_LOAD_PRESET_VLLM, &h->metrics);
}

/* "1", "0.25", "2.5" -> thousandths (at most 3 decimals, <= 4e6) */
static int parse_milli(const char *s, uint32_t *out)
{
	uint64_t v = 0, frac = 0;
	int nd = -1;

	if (!isdigit((unsigned char)*s))
		return -EINVAL;
	for (; *s; s++) {
		if (*s == '.' && nd < 0) {
			nd = 0;
			continue;
		}
		if (!isdigit((unsigned char)*s))
			return -EINVAL;
		if (nd < 0) {
			v = v * 10 + (uint64_t)(*s - '0');
			if (v > 4000000)
				return -ERANGE;
		} else if (nd < 3) {
			frac = frac * 10 + (uint64_t)(*s - '0');
			nd++;
		} else {
			return -EINVAL;
		}
	}
	for (; nd > 0 && nd < 3; nd++)
		frac *= 10;
	*out = (uint32_t)(v * 1000 + frac);
	return 0;
}

static void fmt_milli(uint32_t v, char *b, size_t n)
{
	if (v % 1000)
		snprintf(b, n, "%u.%03u", v / 1000, v % 1000);
	else
		snprintf(b, n, "%u", v / 1000);
}

void fg_service_init(struct fg_service_cfg *svc)
{
	memset(svc, 0, sizeof(*svc));
	svc->mode = FG_MODE_DSR_IPIP;
	svc->sched = FG_SCHED_MAGLEV;
	svc->on_fail = FG_FAIL_KEEP;
	svc->gue_port = 0;
	health_defaults(&svc->health);
	svc->health.type = FG_HC_NONE;
}

void fg_backend_init(struct fg_backend_cfg *b)
{
	memset(b, 0, sizeof(*b));
	b->weight = 1;
}

/* ---- memory ------------------------------------------------------------- */

void fg_config_free(struct fg_config *cfg)
{
	if (!cfg)
		return;
	free(cfg->services);
	memset(cfg, 0, sizeof(*cfg));
}

int fg_config_copy(struct fg_config *dst, const struct fg_config *src)
{
	struct fg_service_cfg *s = NULL;
	if (src->n_services) {
		s = malloc(sizeof(*s) * src->n_services);
		if (!s)
			return -ENOMEM;
		memcpy(s, src->services, sizeof(*s) * src->n_services);
	}
	memcpy(dst, src, sizeof(*dst));
	dst->services = s;
	return 0;
}

int fg_config_add_service(struct fg_config *cfg, const struct fg_service_cfg *svc)
{
	for (uint32_t i = 0; i < cfg->n_services; i++) {
		const struct fg_service_cfg *o = &cfg->services[i];
		if (o->port == svc->port && o->proto == svc->proto &&
		    fg_addr_equal(&o->vip, &svc->vip))
			return -EEXIST;
	}
	if (cfg->n_services >= FG_MAX_SERVICES)
		return -ENOSPC;
	struct fg_service_cfg *n = realloc(cfg->services,
					   sizeof(*n) * (cfg->n_services + 1));
	if (!n)
		return -ENOMEM;
	cfg->services = n;
	n[cfg->n_services] = *svc;
	return (int)cfg->n_services++;
}

void fg_config_del_service(struct fg_config *cfg, unsigned int idx)
{
	if (idx >= cfg->n_services)
		return;
	memmove(&cfg->services[idx], &cfg->services[idx + 1],
		sizeof(cfg->services[0]) * (cfg->n_services - idx - 1));
	cfg->n_services--;
}

int fg_config_find_service(const struct fg_config *cfg, const char *spec)
{
	struct fg_addr vip;
	uint16_t port;
	uint8_t proto;
	bool is_spec = fg_service_spec_parse(spec, &vip, &port, &proto) == 0;
	for (uint32_t i = 0; i < cfg->n_services; i++) {
		const struct fg_service_cfg *s = &cfg->services[i];
		if (is_spec && s->port == port && s->proto == proto &&
		    fg_addr_equal(&s->vip, &vip))
			return (int)i;
		if (!is_spec && s->name[0] && !strcmp(s->name, spec))
			return (int)i;
	}
	return -ENOENT;
}

int fg_config_find_backend(const struct fg_service_cfg *svc, const struct fg_addr *a,
			   uint16_t port)
{
	for (uint32_t i = 0; i < svc->n_backends; i++)
		if (fg_addr_equal(&svc->backends[i].addr, a) &&
		    (!port || svc->backends[i].port == port))
			return (int)i;
	return -ENOENT;
}

/* ---- tokenizer and statement tree -------------------------------------- */

struct stmt {
	char *w[CFG_MAX_WORDS];
	unsigned int nw;
	unsigned int line;
	bool block;
	struct stmt *child, *next; /* children of a block; next sibling */
};

struct lexer {
	const char *s;
	size_t pos, len;
	unsigned int line;
	const char *file;
	struct fg_cfg_errs *errs;
	bool failed;
};

enum tok { T_EOF, T_WORD, T_LBRACE, T_RBRACE, T_SEMI, T_ERR };

static enum tok lex(struct lexer *l, char **word, unsigned int *line)
{
	for (;;) {
		while (l->pos < l->len && isspace((unsigned char)l->s[l->pos])) {
			if (l->s[l->pos] == '\n')
				l->line++;
			l->pos++;
		}
		if (l->pos < l->len && l->s[l->pos] == '#') {
			while (l->pos < l->len && l->s[l->pos] != '\n')
				l->pos++;
			continue;
		}
		break;
	}
	*line = l->line;
	if (l->pos >= l->len)
		return T_EOF;
	char c = l->s[l->pos];
	if (c == '{' || c == '}' || c == ';') {
		l->pos++;
		return c == '{' ? T_LBRACE : c == '}' ? T_RBRACE : T_SEMI;
	}
	size_t cap = 64, n = 0;
	char *o = malloc(cap);
	if (!o)
		return T_ERR;
	if (c == '"') {
		l->pos++;
		for (;;) {
			if (l->pos >= l->len || l->s[l->pos] == '\n') {
				err_add(l->errs, l->file, *line, "unterminated quoted string");
				free(o);
				return T_ERR;
			}
			char ch = l->s[l->pos++];
			if (ch == '"')
				break;
			if (ch == '\\' && l->pos < l->len &&
			    (l->s[l->pos] == '"' || l->s[l->pos] == '\\'))
				ch = l->s[l->pos++];
			if (n + 2 > cap) {
				char *t = realloc(o, cap *= 2);
				if (!t) {
					free(o);
					return T_ERR;
				}
				o = t;
			}
			o[n++] = ch;
		}
	} else {
		while (l->pos < l->len) {
			char ch = l->s[l->pos];
			if (isspace((unsigned char)ch) || ch == '{' || ch == '}' || ch == ';' ||
			    ch == '#' || ch == '"')
				break;
			if ((unsigned char)ch < 0x20 || ch == 0x7f) {
				err_add(l->errs, l->file, *line, "control character 0x%02x in the file",
					(unsigned char)ch);
				free(o);
				return T_ERR;
			}
			if (n + 2 > cap) {
				char *t = realloc(o, cap *= 2);
				if (!t) {
					free(o);
					return T_ERR;
				}
				o = t;
			}
			o[n++] = ch;
			l->pos++;
		}
	}
	o[n] = 0;
	*word = o;
	return T_WORD;
}

static void stmt_free(struct stmt *s)
{
	while (s) {
		struct stmt *n = s->next;
		for (unsigned i = 0; i < s->nw; i++)
			free(s->w[i]);
		stmt_free(s->child);
		free(s);
		s = n;
	}
}

/* Parses statements until '}' (depth > 0) or EOF (depth 0). */
static struct stmt *parse_block(struct lexer *l, unsigned int depth)
{
	struct stmt *head = NULL, **tail = &head;
	struct stmt *cur = NULL;
	for (;;) {
		char *w = NULL;
		unsigned int line;
		enum tok t = lex(l, &w, &line);
		switch (t) {
		case T_ERR:
			goto fail;
		case T_WORD:
			if (!cur) {
				cur = calloc(1, sizeof(*cur));
				if (!cur) {
					free(w);
					goto fail;
				}
				cur->line = line;
			}
			if (cur->nw >= CFG_MAX_WORDS) {
				err_add(l->errs, l->file, line, "more than %d words in one statement "
					"(missing ';'?)", CFG_MAX_WORDS);
				free(w);
				goto fail;
			}
			cur->w[cur->nw++] = w;
			break;
		case T_SEMI:
			if (!cur) {
				err_add(l->errs, l->file, line, "empty statement (stray ';')");
				goto fail;
			}
			*tail = cur;
			tail = &cur->next;
			cur = NULL;
			break;
		case T_LBRACE:
			if (!cur) {
				err_add(l->errs, l->file, line, "'{' without a keyword before it");
				goto fail;
			}
			if (depth >= 4) {
				err_add(l->errs, l->file, line, "blocks nested too deeply");
				goto fail;
			}
			cur->block = true;
			*tail = cur;
			tail = &cur->next;
			{
				struct stmt *c = cur;
				cur = NULL;
				c->child = parse_block(l, depth + 1);
				if (l->failed)
					goto fail;
			}
			break;
		case T_RBRACE:
			if (cur) {
				err_add(l->errs, l->file, cur->line, "missing ';' after '%s'", cur->w[0]);
				goto fail;
			}
			if (!depth) {
				err_add(l->errs, l->file, line, "'}' without a matching '{'");
				goto fail;
			}
			return head;
		case T_EOF:
			if (cur) {
				err_add(l->errs, l->file, cur->line, "missing ';' after '%s'", cur->w[0]);
				goto fail;
			}
			if (depth) {
				err_add(l->errs, l->file, line, "unexpected end of file: missing '}'");
				goto fail;
			}
			return head;
		}
	}
fail:
	l->failed = true;
	if (cur && !cur->block)
		stmt_free(cur);
	stmt_free(head);
	return NULL;
}

/* ---- value parsers ------------------------------------------------------ */

struct ctx {
	const char *file;
	struct fg_cfg_errs *errs;
	struct fg_config *cfg;
	bool nomem;
};

#define E(c, line, ...) err_add((c)->errs, (c)->file, (line), __VA_ARGS__)

static int parse_uint(const char *s, uint64_t max, uint64_t *out)
{
	if (!*s || !isdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	char *end;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || *end || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

/* "500ms", "2s", "5m", "1h" -> milliseconds. */
static int parse_duration(const char *s, uint64_t *ms)
{
	char *end;
	if (!isdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno)
		return -EINVAL;
	uint64_t mul;
	if (!strcmp(end, "ms"))
		mul = 1;
	else if (!strcmp(end, "s"))
		mul = 1000;
	else if (!strcmp(end, "m"))
		mul = 60000;
	else if (!strcmp(end, "h"))
		mul = 3600000;
	else
		return -EINVAL;
	if (v > UINT32_MAX / mul)
		return -ERANGE;
	*ms = v * mul;
	return 0;
}

static int parse_mac(const char *s, uint8_t mac[6])
{
	unsigned int b[6];
	char tail;
	if (sscanf(s, "%2x:%2x:%2x:%2x:%2x:%2x%c", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5],
		   &tail) != 6 || strlen(s) != 17)
		return -EINVAL;
	for (int i = 0; i < 6; i++)
		mac[i] = (uint8_t)b[i];
	return 0;
}

static bool valid_name(const char *s)
{
	size_t n = strlen(s);
	if (!n || n >= FG_NAME_MAX)
		return false;
	for (const char *p = s; *p; p++)
		if (!isalnum((unsigned char)*p) && *p != '_' && *p != '-' && *p != '.')
			return false;
	return true;
}

static bool want_args(struct ctx *c, const struct stmt *s, unsigned int min, unsigned int max,
		      const char *usage)
{
	if (s->nw - 1 < min || s->nw - 1 > max) {
		E(c, s->line, "'%s' takes %s", s->w[0], usage);
		return false;
	}
	return true;
}

static bool no_block(struct ctx *c, const struct stmt *s)
{
	if (s->block) {
		E(c, s->line, "'%s' does not take a { } block", s->w[0]);
		return false;
	}
	return true;
}

static bool want_block(struct ctx *c, const struct stmt *s)
{
	if (!s->block) {
		E(c, s->line, "'%s' needs a { } block", s->w[0]);
		return false;
	}
	return true;
}

static bool get_u(struct ctx *c, const struct stmt *s, unsigned int i, uint64_t min, uint64_t max,
		  uint64_t *out)
{
	if (parse_uint(s->w[i], max, out) || *out < min) {
		E(c, s->line, "%s: '%s' is not an integer in %" PRIu64 "..%" PRIu64, s->w[0],
		  s->w[i], min, max);
		return false;
	}
	return true;
}

static bool get_dur(struct ctx *c, const struct stmt *s, unsigned int i, uint64_t min,
		    uint64_t max, uint32_t *out)
{
	uint64_t ms;
	if (parse_duration(s->w[i], &ms)) {
		E(c, s->line, "%s: '%s' is not a duration (a number with unit ms, s, m or h, "
		  "e.g. 500ms)", s->w[0], s->w[i]);
		return false;
	}
	if (ms < min || ms > max) {
		E(c, s->line, "%s: %s is out of range %" PRIu64 "ms..%" PRIu64 "ms", s->w[0],
		  s->w[i], min, max);
		return false;
	}
	*out = (uint32_t)ms;
	return true;
}

static bool get_addr(struct ctx *c, const struct stmt *s, unsigned int i, int family,
		     struct fg_addr *out)
{
	struct fg_addr a;
	if (fg_addr_parse(s->w[i], &a)) {
		E(c, s->line, "%s: '%s' is not an IPv4 or IPv6 address", s->w[0], s->w[i]);
		return false;
	}
	if (family && a.family != family) {
		E(c, s->line, "%s: '%s' must be an %s address", s->w[0], s->w[i],
		  family == AF_INET ? "IPv4" : "IPv6");
		return false;
	}
	*out = a;
	return true;
}

static void unknown(struct ctx *c, const struct stmt *s, const char *where, const char *known)
{
	E(c, s->line, "unknown keyword '%s' in %s (expected one of: %s)", s->w[0], where, known);
}

/* ---- sections ----------------------------------------------------------- */

/* health metrics: series NAME [WEIGHT] [or ALT] (the first one replaces
 * the preset's series) */
static void parse_metrics_series(struct ctx *c, const struct stmt *x, struct fg_metrics_cfg *m,
				 bool *custom_series)
{
	/* series NAME [WEIGHT] [or ALT] */
	if (!want_args(c, x, 1, 4, "a series name, a weight, 'or' another name"))
		return;
	if (!*custom_series) {
		m->n_series = 0;
		m->preset = FG_LOAD_PRESET_CUSTOM;
		*custom_series = true;
	}
	if (m->n_series == FG_LOAD_SERIES_MAX) {
		E(c, x->line, "series: at most %d series", FG_LOAD_SERIES_MAX);
		return;
	}
	struct fg_load_series_cfg *se = &m->series[m->n_series];
	unsigned int a = 2;

	memset(se, 0, sizeof(*se));
	se->weight_milli = 1000;
	if (strlen(x->w[1]) >= sizeof(se->name)) {
		E(c, x->line, "series: name longer than %zu bytes", sizeof(se->name) - 1);
		return;
	}
	bool ok_name = isalpha((unsigned char)x->w[1][0]) || x->w[1][0] == '_' ||
		       x->w[1][0] == ':';

	for (const char *q = x->w[1]; ok_name && *q; q++)
		ok_name = isalnum((unsigned char)*q) || *q == '_' || *q == ':';
	for (const char *q = a + 1 < x->nw ? x->w[x->nw - 1] : ""; ok_name && *q; q++)
		ok_name = isalnum((unsigned char)*q) || *q == '_' || *q == ':';
	if (!ok_name) {
		E(c, x->line, "series: '%s' is not a Prometheus metric name "
		  "([a-zA-Z_:][a-zA-Z0-9_:]*)", x->w[1]);
		return;
	}
	snprintf(se->name, sizeof(se->name), "%s", x->w[1]);
	if (a < x->nw && strcmp(x->w[a], "or")) {
		if (parse_milli(x->w[a], &se->weight_milli)) {
			E(c, x->line, "series: weight '%s' must be a number 0..4000000 "
			  "with at most 3 decimals", x->w[a]);
			return;
		}
		a++;
	}
	if (a < x->nw) {
		if (strcmp(x->w[a], "or") || a + 2 != x->nw ||
		    strlen(x->w[a + 1]) >= sizeof(se->alt)) {
			E(c, x->line, "series: expected 'series NAME [WEIGHT] "
			  "[or OTHER_NAME]'");
			return;
		}
		snprintf(se->alt, sizeof(se->alt), "%s", x->w[a + 1]);
	}
	m->n_series++;
}

/* health metrics: select LABEL "VALUE"; | select 'LABEL="VALUE",...'; */
static void parse_metrics_select(struct ctx *c, const struct stmt *x, struct fg_metrics_cfg *m)
{
	/* select LABEL "VALUE"; | select 'LABEL="VALUE",...'; */
	char sel[sizeof(m->select)];
	struct fg_prom_selector ps;
	struct fg_prom_err pe;

	if (!want_args(c, x, 1, 2, "a label and a value"))
		return;
	if (x->nw == 3) {
		size_t n = (size_t)snprintf(sel, sizeof(sel), "%s=\"", x->w[1]);

		for (const char *q = x->w[2]; *q && n + 4 < sizeof(sel); q++) {
			if (*q == '"' || *q == '\\')
				sel[n++] = '\\';
			sel[n++] = *q;
		}
		if (n + 2 >= sizeof(sel)) {
			E(c, x->line, "select: longer than %zu bytes", sizeof(sel) - 2);
			return;
		}
		sel[n++] = '"';
		sel[n] = 0;
	} else if (strlen(x->w[1]) < sizeof(sel)) {
		snprintf(sel, sizeof(sel), "%s", x->w[1]);
	} else {
		E(c, x->line, "select: longer than %zu bytes", sizeof(sel) - 1);
		return;
	}
	if (fg_prom_selector_parse(sel, &ps, &pe)) {
		E(c, x->line, "select: %s (e.g. select model_name \"llama\";)",
		  pe.msg);
		return;
	}
	snprintf(m->select, sizeof(m->select), "%s", sel);
}

static void parse_health(struct ctx *c, const struct stmt *s, struct fg_health_cfg *h)
{
	/* health none; | health tcp { ... } | health http { ... } */
	if (!want_args(c, s, 1, 1, "one type: none, tcp or http"))
		return;
	int t = lookup_name(hc_names, 4, s->w[1]);
	if (t < 0) {
		E(c, s->line, "health: unknown check type '%s' (expected none, tcp, http or "
		  "metrics)", s->w[1]);
		return;
	}
	if (t == FG_HC_METRICS)
		metrics_defaults(h);
	else
		health_defaults(h);
	h->type = (enum fg_hc_type)t;
	struct fg_metrics_cfg *m = &h->metrics;
	bool custom_series = false;
	if (t == FG_HC_NONE && s->block && s->child) {
		E(c, s->line, "health none takes no parameters");
		return;
	}
	for (const struct stmt *x = s->block ? s->child : NULL; x; x = x->next) {
		uint64_t v;
		if (!no_block(c, x))
			continue;
		const char *k = x->w[0];
		if (!strcmp(k, "interval")) {
			if (want_args(c, x, 1, 1, "a duration"))
				get_dur(c, x, 1, 10, 3600000, &h->interval_ms);
		} else if (!strcmp(k, "timeout")) {
			if (want_args(c, x, 1, 1, "a duration"))
				get_dur(c, x, 1, 1, 3600000, &h->timeout_ms);
		} else if (!strcmp(k, "rise")) {
			if (want_args(c, x, 1, 1, "a count") && get_u(c, x, 1, 1, 100, &v))
				h->rise = (uint8_t)v;
		} else if (!strcmp(k, "fall")) {
			if (want_args(c, x, 1, 1, "a count") && get_u(c, x, 1, 1, 100, &v))
				h->fall = (uint8_t)v;
		} else if (!strcmp(k, "port")) {
			if (want_args(c, x, 1, 1, "a port") && get_u(c, x, 1, 1, 65535, &v))
				h->port = (uint16_t)v;
		} else if (t == FG_HC_METRICS && !strcmp(k, "preset")) {
			int pr;

			if (!want_args(c, x, 1, 1, "vllm, sglang, triton or custom"))
				continue;
			pr = fg_load_preset_parse(x->w[1]);
			if (pr < 0) {
				E(c, x->line, "preset: unknown preset '%s' (expected vllm, sglang, "
				  "triton or custom)", x->w[1]);
				continue;
			}
			if (custom_series) {
				E(c, x->line, "preset: put it before the 'series' lines");
				continue;
			}
			struct fg_metrics_cfg keep = *m;

			fg_loadsig_preset((enum fg_load_preset)pr, m);
			memcpy(m->select, keep.select, sizeof(m->select));
			m->stale_ms = keep.stale_ms;
			m->saturate_milli = keep.saturate_milli;
			m->margin_milli = keep.margin_milli;
		} else if (t == FG_HC_METRICS && !strcmp(k, "series")) {
			parse_metrics_series(c, x, m, &custom_series);
		} else if (t == FG_HC_METRICS && !strcmp(k, "select")) {
			parse_metrics_select(c, x, m);
		} else if (t == FG_HC_METRICS && !strcmp(k, "stale")) {
			if (want_args(c, x, 1, 1, "a duration"))
				get_dur(c, x, 1, 10, 3600000, &m->stale_ms);
		} else if (t == FG_HC_METRICS && (!strcmp(k, "saturate") || !strcmp(k, "margin"))) {
			uint32_t sv;

			if (!want_args(c, x, 1, 1, "a score"))
				continue;
			if (parse_milli(x->w[1], &sv)) {
				E(c, x->line, "%s: '%s' must be a score 0..4000000 with at most 3 "
				  "decimals", k, x->w[1]);
				continue;
			}
			if (k[0] == 's')
				m->saturate_milli = sv;
			else
				m->margin_milli = sv;
		} else if (!strcmp(k, "path")) {
			if (t != FG_HC_HTTP && t != FG_HC_METRICS) {
				E(c, x->line, "path: only for 'health http' and 'health metrics'");
				continue;
			}
			if (!want_args(c, x, 1, 1, "a URL path"))
				continue;
			const char *p = x->w[1];
			bool ok = p[0] == '/' && strlen(p) < sizeof(h->path);
			for (const char *q = p; ok && *q; q++)
				if ((unsigned char)*q <= 0x20 || *q == 0x7f)
					ok = false;
			if (!ok) {
				E(c, x->line, "path: '%s' must start with '/', have no spaces and "
				  "be shorter than %zu bytes", p, sizeof(h->path));
				continue;
			}
			snprintf(h->path, sizeof(h->path), "%s", p);
		} else if (!strcmp(k, "expect")) {
			if (t != FG_HC_HTTP) {
				E(c, x->line, "expect: only for 'health http'");
				continue;
			}
			if (want_args(c, x, 1, 1, "an HTTP status") && get_u(c, x, 1, 100, 599, &v))
				h->expect_status = (uint16_t)v;
		} else {
			unknown(c, x, "health", t == FG_HC_METRICS ?
				"interval, timeout, port, path, preset, series, select, stale, "
				"saturate, margin" : "interval, timeout, rise, fall, port, path, expect");
		}
	}
}

/* backend ADDR[:PORT] [weight W] [drained] [src ADDR] ; */
static void parse_backend(struct ctx *c, const struct stmt *s, struct fg_service_cfg *svc)
{
	struct fg_backend_cfg b;
	fg_backend_init(&b);
	b.src_line = s->line;
	if (!no_block(c, s) || !want_args(c, s, 1, 6, "ADDR[:PORT] [weight W] [drained] [src ADDR]"))
		return;
	int rc = fg_endpoint_parse(s->w[1], false, &b.addr, &b.port);
	if (rc) {
		E(c, s->line, "backend: '%s' is not ADDR, ADDR:PORT or [IPv6]:PORT", s->w[1]);
		return;
	}
	bool ok = true;
	for (unsigned i = 2; i < s->nw; i++) {
		uint64_t v;
		if (!strcmp(s->w[i], "weight") && i + 1 < s->nw) {
			i++;
			if (parse_uint(s->w[i], 65535, &v)) {
				E(c, s->line, "backend weight: '%s' is not an integer in 0..65535",
				  s->w[i]);
				ok = false;
			} else {
				b.weight = (uint32_t)v;
			}
		} else if (!strcmp(s->w[i], "drained")) {
			b.drained = true;
		} else if (!strcmp(s->w[i], "src") && i + 1 < s->nw) {
			i++;
			if (fg_addr_parse(s->w[i], &b.src)) {
				E(c, s->line, "backend src: '%s' is not an address", s->w[i]);
				ok = false;
			}
		} else {
			E(c, s->line, "backend: unexpected '%s' (expected weight W, drained or "
			  "src ADDR)", s->w[i]);
			ok = false;
		}
	}
	if (!ok)
		return;
	if (svc->n_backends >= FG_MAX_BACKENDS) {
		E(c, s->line, "backend: more than %d backends in one service", FG_MAX_BACKENDS);
		return;
	}
	svc->backends[svc->n_backends++] = b;
}

/* service [NAME] VIP:PORT/PROTO { ... } */
static void parse_service(struct ctx *c, const struct stmt *s)
{
	if (!want_block(c, s) || !want_args(c, s, 1, 2, "[NAME] VIP:PORT/PROTO and a { } block"))
		return;
	struct fg_service_cfg *svc = malloc(sizeof(*svc));
	if (!svc) {
		c->nomem = true;
		return;
	}
	fg_service_init(svc);
	svc->src_line = s->line;
	bool ok = true;
	const char *spec = s->w[s->nw - 1];
	if (s->nw == 3) {
		if (!valid_name(s->w[1])) {
			E(c, s->line, "service: name '%s' must be 1..%d characters of "
			  "[A-Za-z0-9_.-]", s->w[1], FG_NAME_MAX - 1);
			ok = false;
		} else {
			snprintf(svc->name, sizeof(svc->name), "%s", s->w[1]);
		}
	}
	if (fg_service_spec_parse(spec, &svc->vip, &svc->port, &svc->proto)) {
		E(c, s->line, "service: '%s' is not VIP:PORT/PROTO (e.g. 10.0.0.1:80/tcp, "
		  "[fd00::1]:443/udp)", spec);
		ok = false;
	}
	for (const struct stmt *x = s->child; x; x = x->next) {
		const char *k = x->w[0];
		uint64_t v;
		int r;
		if (!strcmp(k, "backend")) {
			parse_backend(c, x, svc);
			continue;
		}
		if (!strcmp(k, "health")) {
			parse_health(c, x, &svc->health);
			continue;
		}
		if (!no_block(c, x))
			continue;
		if (!strcmp(k, "mode")) {
			if (!want_args(c, x, 1, 1, "dsr-ipip, dsr-gue or nat"))
				continue;
			if ((r = fg_mode_parse(x->w[1])) < 0)
				E(c, x->line, "mode: unknown mode '%s' (expected dsr-ipip, dsr-gue "
				  "or nat)", x->w[1]);
			else
				svc->mode = (enum fg_fwd_mode)r;
		} else if (!strcmp(k, "scheduler") || !strcmp(k, "sched")) {
			if (!want_args(c, x, 1, 1, "maglev or lc"))
				continue;
			if ((r = fg_sched_parse(x->w[1])) < 0)
				E(c, x->line, "scheduler: unknown scheduler '%s' (expected maglev "
				  "or lc)", x->w[1]);
			else
				svc->sched = (enum fg_sched)r;
		} else if (!strcmp(k, "on_fail")) {
			if (!want_args(c, x, 1, 1, "keep or reset"))
				continue;
			if ((r = lookup_name(fail_names, 2, x->w[1])) < 0)
				E(c, x->line, "on_fail: unknown policy '%s' (expected keep or reset)",
				  x->w[1]);
			else
				svc->on_fail = (enum fg_fail_policy)r;
		} else if (!strcmp(k, "maglev_size")) {
			if (want_args(c, x, 1, 1, "a prime number") &&
			    get_u(c, x, 1, 0, 16777259, &v))
				svc->maglev_size = (uint32_t)v;
		} else if (!strcmp(k, "gue_port")) {
			if (want_args(c, x, 1, 1, "a UDP port") && get_u(c, x, 1, 1, 65535, &v))
				svc->gue_port = (uint16_t)v;
		} else {
			unknown(c, x, "service", "mode, scheduler, on_fail, maglev_size, gue_port, "
				"health, backend");
		}
	}
	if (ok) {
		int r = fg_config_add_service(c->cfg, svc);
		if (r == -EEXIST)
			E(c, s->line, "service %s: defined twice (VIP:PORT/PROTO must be unique)",
			  spec);
		else if (r == -ENOSPC)
			E(c, s->line, "service: more than %d services", FG_MAX_SERVICES);
		else if (r < 0)
			c->nomem = true;
	}
	free(svc);
}

static void parse_port(struct ctx *c, const struct stmt *s)
{
	if (!want_block(c, s) || !want_args(c, s, 1, 1, "a device name and a { } block"))
		return;
	if (c->cfg->n_ports >= FG_MAX_PORTS) {
		E(c, s->line, "port: more than %d ports", FG_MAX_PORTS);
		return;
	}
	struct fg_port_cfg p;
	memset(&p, 0, sizeof(p));
	if (strlen(s->w[1]) >= sizeof(p.name) || !valid_name(s->w[1])) {
		E(c, s->line, "port: name '%s' must be 1..%d characters of [A-Za-z0-9_.-]",
		  s->w[1], FG_NAME_MAX - 1);
		return;
	}
	snprintf(p.name, sizeof(p.name), "%s", s->w[1]);
	for (const struct stmt *x = s->child; x; x = x->next) {
		uint64_t v;
		const char *k = x->w[0];
		if (!no_block(c, x))
			continue;
		if (!strcmp(k, "mac")) {
			if (want_args(c, x, 1, 1, "a MAC address") && parse_mac(x->w[1], p.mac))
				E(c, x->line, "mac: '%s' is not a MAC address (aa:bb:cc:dd:ee:ff)",
				  x->w[1]);
		} else if (!strcmp(k, "local")) {
			if (!want_args(c, x, 1, FG_MAX_LOCAL_ADDRS, "one or more addresses"))
				continue;
			for (unsigned i = 1; i < x->nw; i++) {
				struct fg_addr a;
				if (!get_addr(c, x, i, 0, &a))
					continue;
				if (p.n_local >= FG_MAX_LOCAL_ADDRS) {
					E(c, x->line, "local: more than %d local addresses",
					  FG_MAX_LOCAL_ADDRS);
					break;
				}
				p.local[p.n_local++] = a;
			}
		} else if (!strcmp(k, "gateway")) {
			if (want_args(c, x, 1, 1, "an IPv4 address"))
				get_addr(c, x, 1, AF_INET, &p.gateway);
		} else if (!strcmp(k, "gateway6")) {
			if (want_args(c, x, 1, 1, "an IPv6 address"))
				get_addr(c, x, 1, AF_INET6, &p.gateway6);
		} else if (!strcmp(k, "vlan")) {
			if (want_args(c, x, 1, 1, "a VLAN id") && get_u(c, x, 1, 0, 4094, &v))
				p.vlan = (uint16_t)v;
		} else {
			unknown(c, x, "port", "mac, local, gateway, gateway6, vlan");
		}
	}
	for (uint32_t i = 0; i < c->cfg->n_ports; i++)
		if (!strcmp(c->cfg->ports[i].name, p.name)) {
			E(c, s->line, "port %s: defined twice", p.name);
			return;
		}
	c->cfg->ports[c->cfg->n_ports++] = p;
}

/* neighbour IP MAC [port NAME|INDEX]; */
static void parse_neigh(struct ctx *c, const struct stmt *s)
{
	struct fg_neigh_cfg n;
	memset(&n, 0, sizeof(n));
	if (!no_block(c, s) || !want_args(c, s, 2, 4, "IP MAC [port NAME]"))
		return;
	bool ok = get_addr(c, s, 1, 0, &n.ip);
	if (parse_mac(s->w[2], n.mac)) {
		E(c, s->line, "neighbour: '%s' is not a MAC address (aa:bb:cc:dd:ee:ff)", s->w[2]);
		ok = false;
	}
	if (s->nw == 4 || (s->nw == 5 && strcmp(s->w[3], "port"))) {
		E(c, s->line, "neighbour: expected 'port NAME' after the MAC address");
		ok = false;
	} else if (s->nw == 5) {
		uint64_t v;
		int idx = -1;
		for (uint32_t i = 0; i < c->cfg->n_ports; i++)
			if (!strcmp(c->cfg->ports[i].name, s->w[4]))
				idx = (int)i;
		if (idx < 0 && !parse_uint(s->w[4], FG_MAX_PORTS - 1, &v))
			idx = (int)v;
		if (idx < 0) {
			E(c, s->line, "neighbour: port '%s' is not defined above (define the port "
			  "block first, or give its index)", s->w[4]);
			ok = false;
		} else {
			n.port = (uint16_t)idx;
		}
	}
	if (!ok)
		return;
	if (c->cfg->n_neigh >= FG_MAX_NEIGH) {
		E(c, s->line, "neighbour: more than %d static neighbours", FG_MAX_NEIGH);
		return;
	}
	c->cfg->neigh[c->cfg->n_neigh++] = n;
}

static int state_index(const char *name)
{
	int i = fg_flow_state_lookup(name);
	if (i <= 0 || i >= CT_ST_MAX) /* NONE is not a timeout */
		return -ENOENT;
	return i;
}

/* A state's name as the file writes it ("established"). */
static const char *state_lower(int st, char *buf, size_t len)
{
	const char *n = fg_flow_state_name(st);
	size_t k = 0;
	for (; n[k] && k + 1 < len; k++)
		buf[k] = (char)tolower((unsigned char)n[k]);
	buf[k] = 0;
	return buf;
}

static void parse_conntrack(struct ctx *c, const struct stmt *s)
{
	if (!want_block(c, s) || !want_args(c, s, 0, 0, "no arguments"))
		return;
	for (const struct stmt *x = s->child; x; x = x->next) {
		uint64_t v;
		const char *k = x->w[0];
		if (!no_block(c, x))
			continue;
		if (!strcmp(k, "capacity")) {
			if (want_args(c, x, 1, 1, "flows per core") &&
			    get_u(c, x, 1, 1024, 1u << 30, &v))
				c->cfg->ct_capacity = (uint32_t)v;
		} else if (!strcmp(k, "nat_capacity")) {
			if (want_args(c, x, 1, 1, "NAT flows per core") &&
			    get_u(c, x, 1, 1024, 1u << 30, &v))
				c->cfg->ct_nat_capacity = (uint32_t)v;
		} else if (!strcmp(k, "flood_rate")) {
			if (want_args(c, x, 1, 1, "new flows per second per core (0 = off)") &&
			    get_u(c, x, 1, 0, UINT32_MAX, &v))
				c->cfg->flood_rate = (uint32_t)v;
		} else if (!strcmp(k, "timeout")) {
			if (!want_args(c, x, 2, 2, "STATE DURATION"))
				continue;
			int st = state_index(x->w[1]);
			if (st < 0) {
				E(c, x->line, "timeout: unknown state '%s' (expected syn_sent, "
				  "syn_recv, established, fin_wait, close_wait, last_ack, "
				  "time_wait, close, udp, udp_stream, other)", x->w[1]);
				continue;
			}
			get_dur(c, x, 2, 1000, 30u * 86400000u, &c->cfg->ct_timeouts_ms[st]);
		} else {
			unknown(c, x, "conntrack", "capacity, nat_capacity, flood_rate, timeout");
		}
	}
}

/* control_socket_ro PATH group G; (a group name as useradd(8) takes it,
 * or a number) */
static void parse_socket_ro(struct ctx *c, const struct stmt *s)
{
	const char *g;
	bool ok;

	if (!no_block(c, s) || !want_args(c, s, 3, 3, "PATH group GROUP"))
		return;
	g = s->w[3];
	ok = strcmp(s->w[2], "group") == 0 && g[0] != '\0' && strlen(g) < FG_NAME_MAX &&
	     g[0] != '-';
	for (const char *p = g; ok && *p; p++)
		ok = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		     (*p >= '0' && *p <= '9') || *p == '_' || *p == '-' || *p == '.';
	if (s->w[1][0] != '/' || strlen(s->w[1]) >= FG_PATH_MAX)
		E(c, s->line, "control_socket_ro: '%s' must be an absolute path shorter than "
		  "%d bytes", s->w[1], FG_PATH_MAX);
	else if (!ok)
		E(c, s->line, "control_socket_ro: expected 'PATH group GROUP' with GROUP a "
		  "group name or number (letters, digits, _ - .; under %d bytes)", FG_NAME_MAX);
	else {
		snprintf(c->cfg->control_socket_ro, FG_PATH_MAX, "%s", s->w[1]);
		snprintf(c->cfg->control_socket_ro_group, FG_NAME_MAX, "%s", g);
	}
}

/* sync { listen ADDR:PORT node ID; peer NAME ADDR:PORT node ID; key FILE;
 *        dsr on|off; rate N; } */
static bool get_node(struct ctx *c, const struct stmt *x, unsigned int i, uint32_t *node)
{
	uint64_t v;

	if (strcmp(x->w[i], "node") != 0) {
		E(c, x->line, "%s: expected 'node ID' after the address", x->w[0]);
		return false;
	}
	if (!get_u(c, x, i + 1, 1, UINT32_MAX, &v))
		return false;
	*node = (uint32_t)v;
	return true;
}

static bool get_endpoint(struct ctx *c, const struct stmt *x, unsigned int i,
			 struct fg_addr *a, uint16_t *port)
{
	if (fg_endpoint_parse(x->w[i], true, a, port) != 0 || *port == 0) {
		E(c, x->line, "%s: '%s' is not ADDR:PORT (IPv6: [ADDR]:PORT)", x->w[0], x->w[i]);
		return false;
	}
	return true;
}

static void parse_sync_peer(struct ctx *c, const struct stmt *x, struct fg_sync_cfg *y)
{
	struct fg_sync_peer_cfg p = {0};

	if (!want_args(c, x, 4, 5 + FG_SYNC_PEER_NAT_MAX, "NAME ADDR:PORT node ID [nat ADDR...]"))
		return;
	if (!valid_name(x->w[1])) {
		E(c, x->line, "peer: '%s' is not a name (letters, digits, _ - ., under %d bytes)",
		  x->w[1], FG_NAME_MAX);
		return;
	}
	if (!get_endpoint(c, x, 2, &p.addr, &p.port) || !get_node(c, x, 3, &p.node))
		return;
	if (x->nw > 5 && strcmp(x->w[5], "nat") != 0) {
		E(c, x->line, "peer: expected 'nat ADDR...' after the node id, not '%s'", x->w[5]);
		return;
	}
	if (x->nw == 6) {
		E(c, x->line, "peer: 'nat' needs the peer's NAT source addresses");
		return;
	}
	for (unsigned int i = 6; i < x->nw; i++)
		if (!get_addr(c, x, i, 0, &p.nat[p.n_nat++]))
			return;
	if (y->n_peers >= FG_MAX_SYNC_PEERS) {
		E(c, x->line, "peer: more than %d peers", FG_MAX_SYNC_PEERS);
		return;
	}
	snprintf(p.name, sizeof(p.name), "%s", x->w[1]);
	y->peers[y->n_peers++] = p;
}

static void parse_sync(struct ctx *c, const struct stmt *s)
{
	struct fg_sync_cfg *y = &c->cfg->sync;

	if (!want_block(c, s) || !want_args(c, s, 0, 0, "no arguments"))
		return;
	y->on = true;
	for (const struct stmt *x = s->child; x; x = x->next) {
		const char *k = x->w[0];
		uint64_t v;

		if (!no_block(c, x))
			continue;
		if (!strcmp(k, "listen")) {
			if (want_args(c, x, 3, 3, "ADDR:PORT node ID") &&
			    get_endpoint(c, x, 1, &y->listen, &y->port))
				get_node(c, x, 2, &y->node);
		} else if (!strcmp(k, "peer")) {
			parse_sync_peer(c, x, y);
		} else if (!strcmp(k, "key")) {
			if (!want_args(c, x, 1, 1, "a file holding the shared key"))
				continue;
			if (x->w[1][0] != '/' || strlen(x->w[1]) >= FG_PATH_MAX)
				E(c, x->line, "key: '%s' must be an absolute path shorter than %d "
				  "bytes", x->w[1], FG_PATH_MAX);
			else
				snprintf(y->key_path, sizeof(y->key_path), "%s", x->w[1]);
		} else if (!strcmp(k, "nat")) {
			if (!want_args(c, x, 1, FG_SYNC_PEER_NAT_MAX, "this node's NAT source addresses"))
				continue;
			y->n_nat = 0;
			for (unsigned int i = 1; i < x->nw; i++)
				if (get_addr(c, x, i, 0, &y->nat[y->n_nat]))
					y->n_nat++;
		} else if (!strcmp(k, "dsr")) {
			if (!want_args(c, x, 1, 1, "on or off"))
				continue;
			if (strcmp(x->w[1], "on") && strcmp(x->w[1], "off"))
				E(c, x->line, "dsr: expected on or off, not '%s'", x->w[1]);
			y->dsr = !strcmp(x->w[1], "on");
		} else if (!strcmp(k, "rate")) {
			if (want_args(c, x, 1, 1, "flow records per second per peer") &&
			    get_u(c, x, 1, 1000, 100000000, &v))
				y->rate = (uint32_t)v;
		} else {
			unknown(c, x, "sync", "listen, peer, key, nat, dsr, rate");
		}
	}
}

static void parse_top(struct ctx *c, const struct stmt *root)
{
	for (const struct stmt *s = root; s; s = s->next) {
		const char *k = s->w[0];
		uint64_t v;
		if (!strcmp(k, "service")) {
			parse_service(c, s);
		} else if (!strcmp(k, "port")) {
			parse_port(c, s);
		} else if (!strcmp(k, "neighbour") || !strcmp(k, "neighbor")) {
			parse_neigh(c, s);
		} else if (!strcmp(k, "conntrack")) {
			parse_conntrack(c, s);
		} else if (!strcmp(k, "sync")) {
			parse_sync(c, s);
		} else if (!strcmp(k, "control_socket")) {
			if (!no_block(c, s) || !want_args(c, s, 1, 1, "a path"))
				continue;
			if (s->w[1][0] != '/' || strlen(s->w[1]) >= FG_PATH_MAX)
				E(c, s->line, "control_socket: '%s' must be an absolute path shorter "
				  "than %d bytes", s->w[1], FG_PATH_MAX);
			else
				snprintf(c->cfg->control_socket, FG_PATH_MAX, "%s", s->w[1]);
		} else if (!strcmp(k, "control_socket_ro")) {
			parse_socket_ro(c, s);
		} else if (!strcmp(k, "gue_port")) {
			if (no_block(c, s) && want_args(c, s, 1, 1, "a UDP port") &&
			    get_u(c, s, 1, 1, 65535, &v))
				c->cfg->gue_port = (uint32_t)v;
		} else {
			unknown(c, s, "the top level", "service, port, neighbour, conntrack, "
				"sync, control_socket, control_socket_ro, gue_port");
		}
	}
}

/* One service's health block (fg_config_validate).  @return errors added. */
static unsigned int validate_health(struct ctx *c, const struct fg_health_cfg *h,
				    const char *spec, unsigned int ln)
{
	unsigned int n_err = 0;
#undef E
#define E(c, line, ...) (n_err++, err_add((c)->errs, (c)->file, (line), __VA_ARGS__))
	if ((unsigned)h->type > FG_HC_METRICS)
		E(c, ln, "service %s: bad health check type", spec);
	if (h->type == FG_HC_METRICS) {
		const struct fg_metrics_cfg *m = &h->metrics;
		struct fg_prom_selector ps;

		if (!m->n_series || m->n_series > FG_LOAD_SERIES_MAX)
			E(c, ln, "service %s: health metrics needs 1..%d series "
			  "(a preset or 'series' lines)", spec, FG_LOAD_SERIES_MAX);
		for (uint32_t k = 0; k < m->n_series && k < FG_LOAD_SERIES_MAX; k++)
			if (!m->series[k].name[0] ||
			    memchr(m->series[k].name, 0, FG_LOAD_NAME_MAX) == NULL)
				E(c, ln, "service %s: health metrics: empty series name",
				  spec);
		if (memchr(m->select, 0, sizeof(m->select)) == NULL ||
		    fg_prom_selector_parse(m->select, &ps, NULL))
			E(c, ln, "service %s: health metrics: bad select", spec);
		if (m->stale_ms && m->stale_ms < h->interval_ms)
			E(c, ln, "service %s: health metrics: stale (%ums) must be >= "
			  "the interval (%ums)", spec, m->stale_ms, h->interval_ms);
	}
	if (h->interval_ms < 10)
		E(c, ln, "service %s: health interval must be >= 10ms", spec);
	if (!h->timeout_ms || h->timeout_ms > h->interval_ms)
		E(c, ln, "service %s: health timeout (%ums) must be > 0 and <= the "
		  "interval (%ums)", spec, h->timeout_ms, h->interval_ms);
	if (!h->rise || !h->fall)
		E(c, ln, "service %s: health rise and fall must be >= 1", spec);
	if ((h->type == FG_HC_HTTP || h->type == FG_HC_METRICS) && h->path[0] != '/')
		E(c, ln, "service %s: health path must start with '/'", spec);
	if (h->type == FG_HC_HTTP && (h->expect_status < 100 || h->expect_status > 599))
		E(c, ln, "service %s: health expect must be an HTTP status 100..599",
		  spec);
#undef E
#define E(c, line, ...) err_add((c)->errs, (c)->file, (line), __VA_ARGS__)
	return n_err;
}

/* ---- validation --------------------------------------------------------- */

static bool is_prime(uint32_t n)
{
	if (n < 2)
		return false;
	for (uint32_t d = 2; (uint64_t)d * d <= n; d++)
		if (n % d == 0)
			return false;
	return true;
}

/* The sync block: a listener with a node id, a key, peers with ids of
 * their own.  @return errors added. */
static bool addr_eq0(const struct fg_addr *a, const struct fg_addr *b);

static bool is_local(const struct fg_config *cfg, const struct fg_addr *x)
{
	for (uint32_t p = 0; p < cfg->n_ports; p++)
		for (uint32_t i = 0; i < cfg->ports[p].n_local; i++)
			if (addr_eq0(&cfg->ports[p].local[i], x))
				return true;
	return false;
}

static unsigned int validate_sync(struct ctx *c, const struct fg_config *cfg)
{
	const struct fg_sync_cfg *y = &cfg->sync;
	unsigned int n = 0;
	char a[64];

	if (!y->on)
		return 0;
	if (!y->listen.family || !y->node)
		E(c, 0, "sync: needs 'listen ADDR:PORT node ID;'"), n++;
	if (!y->key_path[0])
		E(c, 0, "sync: needs 'key FILE;' (the key all peers share)"), n++;
	for (uint32_t k = 0; k < y->n_nat; k++)
		if (!is_local(cfg, &y->nat[k]))
			E(c, 0, "sync: nat %s is no port's local address", fg_addr_format(&y->nat[k], a,
										   sizeof(a))), n++;
	for (uint32_t i = 0; i < y->n_peers; i++) {
		const struct fg_sync_peer_cfg *p = &y->peers[i];

		if (p->node == y->node)
			E(c, 0, "sync: peer %s has this node's id %u", p->name, p->node), n++;
		for (uint32_t k = 0; k < p->n_nat; k++)
			if (!is_local(cfg, &p->nat[k]))
				E(c, 0, "sync: peer %s: nat %s is no port's local address here (a node "
				  "takes over only addresses it answers for)", p->name,
				  fg_addr_format(&p->nat[k], a, sizeof(a))), n++;
		for (uint32_t j = 0; j < i; j++)
			if (p->node == y->peers[j].node || !strcmp(p->name, y->peers[j].name))
				E(c, 0, "sync: peers %s and %s share a name or node id",
				  y->peers[j].name, p->name), n++;
	}
	return n;
}

int fg_config_validate(const struct fg_config *cfg, const char *name,
		       struct fg_cfg_errs *errs)
{
	struct ctx cx = { .file = name ? name : "", .errs = errs };
	struct ctx *c = &cx;
	unsigned int before = errs ? errs->n : 0, n_err = 0;
#undef E
#define E(c, line, ...) (n_err++, err_add((c)->errs, (c)->file, (line), __VA_ARGS__))
	bool has_local[2] = { false, false };
	for (uint32_t p = 0; p < cfg->n_ports; p++)
		for (uint32_t i = 0; i < cfg->ports[p].n_local; i++)
			has_local[cfg->ports[p].local[i].family == AF_INET6] = true;

	if (cfg->n_services > FG_MAX_SERVICES || (cfg->n_services && !cfg->services)) {
		E(c, 0, "too many services (max %d)", FG_MAX_SERVICES);
		return -EINVAL;
	}
	for (uint32_t i = 0; i < cfg->n_services; i++) {
		const struct fg_service_cfg *s = &cfg->services[i];
		char spec[96];
		fg_service_spec_format(&s->vip, s->port, s->proto, spec, sizeof(spec));
		unsigned int ln = s->src_line;
		if (s->vip.family != AF_INET && s->vip.family != AF_INET6)
			E(c, ln, "service %s: VIP has no address family", spec);
		if (!s->port)
			E(c, ln, "service %s: port 0 is not allowed", spec);
		if (s->proto != IPPROTO_TCP && s->proto != IPPROTO_UDP)
			E(c, ln, "service %s: protocol must be tcp or udp", spec);
		if (s->name[0] && !valid_name(s->name))
			E(c, ln, "service %s: bad name", spec);
		if ((unsigned)s->mode > FG_MODE_NAT)
			E(c, ln, "service %s: bad mode", spec);
		if ((unsigned)s->sched > FG_SCHED_MAGLEV_LOAD)
			E(c, ln, "service %s: bad scheduler", spec);
		if (s->sched == FG_SCHED_MAGLEV_LOAD && s->health.type != FG_HC_METRICS)
			E(c, ln, "service %s: scheduler maglev-load needs 'health metrics { ... }' "
			  "(the workers' load signals)", spec);
		for (uint32_t j = 0; j < i; j++) {
			const struct fg_service_cfg *o = &cfg->services[j];
			if (o->port == s->port && o->proto == s->proto && fg_addr_equal(&o->vip, &s->vip))
				E(c, ln, "service %s: duplicate VIP:PORT/PROTO (also at line %u)",
				  spec, o->src_line);
			if (s->name[0] && !strcmp(s->name, o->name))
				E(c, ln, "service %s: duplicate name '%s' (also at line %u)", spec,
				  s->name, o->src_line);
		}
		if (s->n_backends > FG_MAX_BACKENDS) {
			E(c, ln, "service %s: more than %d backends", spec, FG_MAX_BACKENDS);
			continue;
		}
		if (s->maglev_size) {
			if (!is_prime(s->maglev_size))
				E(c, ln, "service %s: maglev_size %u is not prime (e.g. 65537, "
				  "131071, 655373)", spec, s->maglev_size);
			else if (s->maglev_size < s->n_backends)
				E(c, ln, "service %s: maglev_size %u is smaller than the %u "
				  "backends (use >= 100 x backends)", spec, s->maglev_size,
				  s->n_backends);
		}
		if (s->mode == FG_MODE_NAT && cfg->n_ports &&
		    !has_local[s->vip.family == AF_INET6])
			E(c, ln, "service %s: mode nat needs a local %s address on a port "
			  "('local ADDR;' in a port block)", spec,
			  s->vip.family == AF_INET6 ? "IPv6" : "IPv4");
		if (s->health.type != FG_HC_NONE)
			n_err += validate_health(c, &s->health, spec, ln);
		for (uint32_t b = 0; b < s->n_backends; b++) {
			const struct fg_backend_cfg *be = &s->backends[b];
			char ep[80];
			unsigned int bl = be->src_line ? be->src_line : ln;
			fg_endpoint_format(&be->addr, be->port ? be->port : s->port, ep, sizeof(ep));
			if (be->addr.family != AF_INET && be->addr.family != AF_INET6) {
				E(c, bl, "service %s: backend without an address", spec);
				continue;
			}
			if (be->weight > 65535)
				E(c, bl, "backend %s: weight %u out of range 0..65535", ep, be->weight);
			if (s->mode != FG_MODE_NAT && be->port && be->port != s->port)
				E(c, bl, "backend %s: %s cannot change the destination port (the "
				  "backend must listen on %u, or use mode nat)", ep,
				  fg_mode_name(s->mode), s->port);
			if (s->mode != FG_MODE_DSR_GUE && be->addr.family != s->vip.family)
				E(c, bl, "backend %s: address family differs from the VIP's; "
				  "%s needs the same family (dsr-gue can carry either)", ep,
				  fg_mode_name(s->mode));
			if (be->src.family && s->mode == FG_MODE_NAT)
				E(c, bl, "backend %s: 'src' applies to DSR modes only", ep);
			if (be->src.family && s->mode == FG_MODE_DSR_IPIP &&
			    be->src.family != be->addr.family)
				E(c, bl, "backend %s: src address family differs from the backend's",
				  ep);
			for (uint32_t o = 0; o < b; o++) {
				const struct fg_backend_cfg *ob = &s->backends[o];
				if (fg_addr_equal(&ob->addr, &be->addr) && ob->port == be->port)
					E(c, bl, "backend %s: listed twice in service %s", ep, spec);
			}
		}
	}
	for (uint32_t p = 0; p < cfg->n_ports; p++) {
		const struct fg_port_cfg *pc = &cfg->ports[p];
		if (pc->vlan > 4094)
			E(c, 0, "port %s: vlan %u out of range 0..4094", pc->name, pc->vlan);
		if (pc->gateway.family && pc->gateway.family != AF_INET)
			E(c, 0, "port %s: gateway must be IPv4 (use gateway6)", pc->name);
		if (pc->gateway6.family && pc->gateway6.family != AF_INET6)
			E(c, 0, "port %s: gateway6 must be IPv6", pc->name);
	}
	for (uint32_t i = 0; i < cfg->n_neigh; i++) {
		const struct fg_neigh_cfg *n = &cfg->neigh[i];
		char a[64];
		fg_addr_format(&n->ip, a, sizeof(a));
		if (cfg->n_ports && n->port >= cfg->n_ports)
			E(c, 0, "neighbour %s: port index %u but only %u ports", a, n->port,
			  cfg->n_ports);
		for (uint32_t j = 0; j < i; j++)
			if (fg_addr_equal(&cfg->neigh[j].ip, &n->ip) && cfg->neigh[j].port == n->port)
				E(c, 0, "neighbour %s: defined twice", a);
	}
	/* "" = the default path (configs built in code, not from a file) */
	if ((cfg->control_socket[0] && cfg->control_socket[0] != '/') ||
	    !memchr(cfg->control_socket, 0, FG_PATH_MAX))
		E(c, 0, "control_socket must be an absolute path");
	if (cfg->control_socket_ro[0] &&
	    (cfg->control_socket_ro[0] != '/' || !memchr(cfg->control_socket_ro, 0, FG_PATH_MAX) ||
	     !cfg->control_socket_ro_group[0] ||
	     !memchr(cfg->control_socket_ro_group, 0, FG_NAME_MAX)))
		E(c, 0, "control_socket_ro needs an absolute path and a group");
	else if (cfg->control_socket_ro[0] &&
		 !strcmp(cfg->control_socket_ro, cfg->control_socket[0] ? cfg->control_socket :
			 FG_CTL_DEFAULT_SOCKET))
		E(c, 0, "control_socket_ro %s: the read-write control_socket has that path: "
		  "give the read-only one a path of its own", cfg->control_socket_ro);
	if (!cfg->gue_port || cfg->gue_port > 65535)
		E(c, 0, "gue_port %u out of range 1..65535", cfg->gue_port);
	n_err += validate_sync(c, cfg);
#undef E
	(void)before;
	return n_err ? -EINVAL : 0;
}

/* ---- load --------------------------------------------------------------- */

int fg_config_parse(const char *text, size_t len, const char *name,
		    struct fg_config *out, struct fg_cfg_errs *errs)
{
	fg_config_init(out);
	unsigned int n0 = errs ? errs->n : 0;
	struct fg_cfg_errs local = { 0 };
	if (!errs)
		errs = &local;
	if (memchr(text, 0, len)) {
		err_add(errs, name, 0, "the file contains NUL bytes (not a text file?)");
		return -EINVAL;
	}
	struct lexer l = { .s = text, .len = len, .line = 1, .file = name, .errs = errs };
	struct stmt *root = parse_block(&l, 0);
	if (l.failed) {
		if (errs->n == n0)
			return -ENOMEM;
		return -EINVAL;
	}
	struct ctx c = { .file = name, .errs = errs, .cfg = out };
	parse_top(&c, root);
	stmt_free(root);
	if (c.nomem)
		return -ENOMEM;
	/* relations too, even after field errors: report everything at once
	 * (a field that failed kept its default, which validates) */
	int rc = fg_config_validate(out, name, errs);
	return errs->n != n0 ? -EINVAL : rc;
}

int fg_config_read_file(const char *path, char **text, size_t *len,
			struct fg_cfg_errs *errs)
{
	FILE *f = fopen(path, "r");
	if (!f) {
		int e = errno;
		err_add(errs, path, 0, "cannot open: %s", strerror(e));
		return -e;
	}
	struct stat st;
	if (fstat(fileno(f), &st) || !S_ISREG(st.st_mode)) {
		err_add(errs, path, 0, "not a regular file");
		fclose(f);
		return -EINVAL;
	}
	if ((uint64_t)st.st_size > CFG_MAX_FILE) {
		err_add(errs, path, 0, "file larger than %u bytes", CFG_MAX_FILE);
		fclose(f);
		return -EFBIG;
	}
	char *buf = malloc((size_t)st.st_size + 1);
	if (!buf) {
		fclose(f);
		return -ENOMEM;
	}
	size_t n = fread(buf, 1, (size_t)st.st_size, f);
	int rerr = ferror(f);
	fclose(f);
	if (rerr) {
		err_add(errs, path, 0, "read error");
		free(buf);
		return -EIO;
	}
	buf[n] = '\0';
	*text = buf;
	*len = n;
	return 0;
}

int fg_config_load(const char *path, struct fg_config *out, struct fg_cfg_errs *errs)
{
	char *buf;
	size_t n;

	fg_config_init(out);
	int rc = fg_config_read_file(path, &buf, &n, errs);
	if (rc)
		return rc;
	rc = fg_config_parse(buf, n, path, out, errs);
	free(buf);
	return rc;
}

/* ---- ids ---------------------------------------------------------------- */

int fg_config_assign_ids(struct fg_config *cfg, const struct fg_config *prev)
{
	uint32_t max_b = 0;
	/* ids handed out before stay reserved: a flow may still carry one */
	static const uint32_t SVC_ID_MAX = 65535; /* ct_entry::service is 16 bits */
	uint8_t *used = calloc(SVC_ID_MAX + 1, 1);
	if (!used)
		return -ENOMEM;
	/* removed backends' ids too: their flows may still carry them */
	max_b = prev ? prev->backend_id_max : 0;
	if (prev)
		for (uint32_t i = 0; i < prev->n_services; i++) {
			const struct fg_service_cfg *p = &prev->services[i];
			if (p->id <= SVC_ID_MAX)
				used[p->id] = 1;
			for (uint32_t b = 0; b < p->n_backends; b++)
				if (p->backends[b].id > max_b)
					max_b = p->backends[b].id;
		}
	for (uint32_t i = 0; i < cfg->n_services; i++) {
		struct fg_service_cfg *s = &cfg->services[i];
		const struct fg_service_cfg *p = NULL;
		if (prev)
			for (uint32_t j = 0; j < prev->n_services && !p; j++) {
				const struct fg_service_cfg *q = &prev->services[j];
				if (q->port == s->port && q->proto == s->proto &&
				    fg_addr_equal(&q->vip, &s->vip))
					p = q;
			}
		s->id = p ? p->id : 0;
		for (uint32_t b = 0; b < s->n_backends; b++) {
			struct fg_backend_cfg *be = &s->backends[b];
			be->id = 0;
			if (!p)
				continue;
			for (uint32_t k = 0; k < p->n_backends; k++)
				if (fg_addr_equal(&p->backends[k].addr, &be->addr) &&
				    p->backends[k].port == be->port) {
					be->id = p->backends[k].id;
					break;
				}
		}
	}
	/* new services: smallest id unused by prev and by kept services */
	for (uint32_t i = 0; i < cfg->n_services; i++)
		if (cfg->services[i].id && cfg->services[i].id <= SVC_ID_MAX)
			used[cfg->services[i].id] = 1;
	uint32_t next_s = 1;
	for (uint32_t i = 0; i < cfg->n_services; i++) {
		struct fg_service_cfg *s = &cfg->services[i];
		if (!s->id) {
			while (next_s <= SVC_ID_MAX && used[next_s])
				next_s++;
			if (next_s > SVC_ID_MAX) {
				free(used);
				return -ENOSPC;
			}
			s->id = next_s;
			used[next_s] = 1;
		}
		for (uint32_t b = 0; b < s->n_backends; b++)
			if (s->backends[b].id > max_b)
				max_b = s->backends[b].id;
	}
	free(used);
	for (uint32_t i = 0; i < cfg->n_services; i++)
		for (uint32_t b = 0; b < cfg->services[i].n_backends; b++)
			if (!cfg->services[i].backends[b].id) {
				if (max_b == UINT32_MAX - 1)
					return -ENOSPC;
				cfg->services[i].backends[b].id = ++max_b;
			}
	cfg->backend_id_max = max_b;
	return 0;
}

/* ---- dump --------------------------------------------------------------- */

static void fmt_dur(uint32_t ms, char *b, size_t n)
{
	if (ms && ms % 3600000 == 0)
		snprintf(b, n, "%uh", ms / 3600000);
	else if (ms && ms % 60000 == 0)
		snprintf(b, n, "%um", ms / 60000);
	else if (ms && ms % 1000 == 0)
		snprintf(b, n, "%us", ms / 1000);
	else
		snprintf(b, n, "%ums", ms);
}

static const char *mac_str(const uint8_t m[6], char *b, size_t n)
{
	snprintf(b, n, "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4], m[5]);
	return b;
}

static bool mac_zero(const uint8_t m[6])
{
	static const uint8_t z[6];
	return !memcmp(m, z, 6);
}

/* A value in double quotes, as the lexer reads it back: '"' and '\\'
 * escaped (a control socket path or a health path may hold either; an
 * unescaped one dumped a config that parsed to another value, or not at
 * all: found by tests/control/fuzz_ctl). */
static void dump_quoted(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fputc('\\', f);
		fputc(*s, f);
	}
	fputc('"', f);
}

/* The sync block (nothing without one). */
static void dump_sync(FILE *f, const struct fg_sync_cfg *y)
{
	char a[96];

	if (!y->on)
		return;
	fprintf(f, "sync {\n    listen %s node %u;\n",
		fg_endpoint_format(&y->listen, y->port, a, sizeof(a)), y->node);
	for (uint32_t i = 0; i < y->n_peers; i++) {
		fprintf(f, "    peer %s %s node %u", y->peers[i].name,
			fg_endpoint_format(&y->peers[i].addr, y->peers[i].port, a,
					   sizeof(a)), y->peers[i].node);
		for (uint32_t k = 0; k < y->peers[i].n_nat; k++)
			fprintf(f, "%s %s", k ? "" : " nat",
				fg_addr_format(&y->peers[i].nat[k], a, sizeof(a)));
		fprintf(f, ";\n");
	}
	for (uint32_t k = 0; k < y->n_nat; k++)
		fprintf(f, "%s %s%s", k ? "" : "    nat", fg_addr_format(&y->nat[k], a, sizeof(a)),
			k + 1 == y->n_nat ? ";\n" : "");
	fprintf(f, "    key ");
	dump_quoted(f, y->key_path);
	fprintf(f, ";\n    dsr %s;\n", y->dsr ? "on" : "off");
	if (y->rate)
		fprintf(f, "    rate %u;\n", y->rate);
	fprintf(f, "}\n\n");
}

int fg_config_dump(const struct fg_config *cfg, FILE *f)
{
	char a[96], b[96], d[32];
	fprintf(f, "# flowgate configuration\n");
	if (cfg->control_socket[0]) {
		fprintf(f, "control_socket ");
		dump_quoted(f, cfg->control_socket);
		fprintf(f, ";\n");
	}
	if (cfg->control_socket_ro[0]) {
		fprintf(f, "control_socket_ro ");
		dump_quoted(f, cfg->control_socket_ro);
		fprintf(f, " group ");
		dump_quoted(f, cfg->control_socket_ro_group);
		fprintf(f, ";\n");
	}
	fprintf(f, "gue_port %u;\n\n", cfg->gue_port);
	dump_sync(f, &cfg->sync);
	fprintf(f, "conntrack {\n");
	if (cfg->ct_capacity)
		fprintf(f, "    capacity %u;\n", cfg->ct_capacity);
	if (cfg->ct_nat_capacity)
		fprintf(f, "    nat_capacity %u;\n", cfg->ct_nat_capacity);
	fprintf(f, "    flood_rate %u;\n", cfg->flood_rate);
	for (int st = 1; st < CT_ST_MAX && st < 16; st++)
		if (cfg->ct_timeouts_ms[st]) {
			char lower[16];
			fmt_dur(cfg->ct_timeouts_ms[st], d, sizeof(d));
			fprintf(f, "    timeout %s %s;\n", state_lower(st, lower, sizeof(lower)), d);
		}
	fprintf(f, "}\n");
	for (uint32_t p = 0; p < cfg->n_ports; p++) {
		const struct fg_port_cfg *pc = &cfg->ports[p];
		fprintf(f, "\nport %s {\n", pc->name);
		if (!mac_zero(pc->mac))
			fprintf(f, "    mac %s;\n", mac_str(pc->mac, a, sizeof(a)));
		for (uint32_t i = 0; i < pc->n_local; i++)
			fprintf(f, "    local %s;\n", fg_addr_format(&pc->local[i], a, sizeof(a)));
		if (pc->gateway.family)
			fprintf(f, "    gateway %s;\n", fg_addr_format(&pc->gateway, a, sizeof(a)));
		if (pc->gateway6.family)
			fprintf(f, "    gateway6 %s;\n", fg_addr_format(&pc->gateway6, a, sizeof(a)));
		if (pc->vlan)
			fprintf(f, "    vlan %u;\n", pc->vlan);
		fprintf(f, "}\n");
	}
	if (cfg->n_neigh)
		fprintf(f, "\n");
	for (uint32_t i = 0; i < cfg->n_neigh; i++) {
		const struct fg_neigh_cfg *n = &cfg->neigh[i];
		/* by name where the port has one: a position depends on the
		 * order of the port blocks */
		if (n->port < cfg->n_ports && cfg->ports[n->port].name[0])
			fprintf(f, "neighbour %s %s port %s;\n", fg_addr_format(&n->ip, a, sizeof(a)),
				mac_str(n->mac, b, sizeof(b)), cfg->ports[n->port].name);
		else
			fprintf(f, "neighbour %s %s port %u;\n", fg_addr_format(&n->ip, a, sizeof(a)),
				mac_str(n->mac, b, sizeof(b)), n->port);
	}
	for (uint32_t i = 0; i < cfg->n_services; i++) {
		const struct fg_service_cfg *s = &cfg->services[i];
		fg_service_spec_format(&s->vip, s->port, s->proto, a, sizeof(a));
		fprintf(f, "\nservice %s%s%s {\n", s->name, s->name[0] ? " " : "", a);
		fprintf(f, "    mode %s;\n", fg_mode_name(s->mode));
		fprintf(f, "    scheduler %s;\n", fg_sched_name(s->sched));
		fprintf(f, "    on_fail %s;\n", fg_fail_name(s->on_fail));
		if (s->maglev_size)
			fprintf(f, "    maglev_size %u;\n", s->maglev_size);
		if (s->gue_port)
			fprintf(f, "    gue_port %u;\n", s->gue_port);
		const struct fg_health_cfg *h = &s->health;
		if (h->type == FG_HC_NONE) {
			fprintf(f, "    health none;\n");
		} else {
			fprintf(f, "    health %s {\n", fg_hc_name(h->type));
			fmt_dur(h->interval_ms, d, sizeof(d));
			fprintf(f, "        interval %s;\n", d);
			fmt_dur(h->timeout_ms, d, sizeof(d));
			fprintf(f, "        timeout %s;\n", d);
			fprintf(f, "        rise %u;\n        fall %u;\n", h->rise, h->fall);
			if (h->port)
				fprintf(f, "        port %u;\n", h->port);
			if (h->type == FG_HC_METRICS) {
				const struct fg_metrics_cfg *m = &h->metrics;
				char w[32];

				fprintf(f, "        path ");
				dump_quoted(f, h->path);
				fprintf(f, ";\n        preset %s;\n", fg_load_preset_name(m->preset));
				if (m->preset == FG_LOAD_PRESET_CUSTOM)
					for (uint32_t k = 0; k < m->n_series && k < FG_LOAD_SERIES_MAX; k++) {
						fmt_milli(m->series[k].weight_milli, w, sizeof(w));
						fprintf(f, "        series ");
						dump_quoted(f, m->series[k].name);
						fprintf(f, " %s", w);
						if (m->series[k].alt[0]) {
							fprintf(f, " or ");
							dump_quoted(f, m->series[k].alt);
						}
						fprintf(f, ";\n");
					}
				if (m->select[0]) {
					fprintf(f, "        select ");
					dump_quoted(f, m->select);
					fprintf(f, ";\n");
				}
				if (m->stale_ms) {
					fmt_dur(m->stale_ms, d, sizeof(d));
					fprintf(f, "        stale %s;\n", d);
				}
				fmt_milli(m->saturate_milli, w, sizeof(w));
				fprintf(f, "        saturate %s;\n", w);
				fmt_milli(m->margin_milli, w, sizeof(w));
				fprintf(f, "        margin %s;\n", w);
			}
			if (h->type == FG_HC_HTTP) {
				fprintf(f, "        path ");
				dump_quoted(f, h->path);
				fprintf(f, ";\n        expect %u;\n", h->expect_status);
			}
			fprintf(f, "    }\n");
		}
		for (uint32_t k = 0; k < s->n_backends; k++) {
			const struct fg_backend_cfg *be = &s->backends[k];
			if (be->port)
				fg_endpoint_format(&be->addr, be->port, b, sizeof(b));
			else if (be->addr.family == AF_INET6)
				snprintf(b, sizeof(b), "[%s]", fg_addr_format(&be->addr, a, sizeof(a)));
			else
				fg_addr_format(&be->addr, b, sizeof(b));
			fprintf(f, "    backend %s weight %u%s", b, be->weight,
				be->drained ? " drained" : "");
			if (be->src.family)
				fprintf(f, " src %s", fg_addr_format(&be->src, a, sizeof(a)));
			fprintf(f, ";   # id %u\n", be->id);
		}
		fprintf(f, "}\n");
	}
	return ferror(f) ? -EIO : 0;
}

int fg_config_dump_str(const struct fg_config *cfg, char **out)
{
	size_t len = 0;
	char *buf = NULL;
	FILE *f = open_memstream(&buf, &len);
	if (!f)
		return -ENOMEM;
	int rc = fg_config_dump(cfg, f);
	if (fclose(f) || rc) {
		free(buf);
		return rc ? rc : -ENOMEM;
	}
	*out = buf;
	return 0;
}

/* ---- compare ------------------------------------------------------------ */

static bool addr_eq0(const struct fg_addr *a, const struct fg_addr *b)
{
	return a->family == b->family && (!a->family || fg_addr_equal(a, b));
}

static bool metrics_equal(const struct fg_metrics_cfg *a, const struct fg_metrics_cfg *b)
{
	if (a->preset != b->preset || a->n_series != b->n_series || a->stale_ms != b->stale_ms ||
	    a->saturate_milli != b->saturate_milli || a->margin_milli != b->margin_milli ||
	    strcmp(a->select, b->select))
		return false;
	for (uint32_t k = 0; k < a->n_series && k < FG_LOAD_SERIES_MAX; k++)
		if (strcmp(a->series[k].name, b->series[k].name) ||
		    strcmp(a->series[k].alt, b->series[k].alt) ||
		    a->series[k].weight_milli != b->series[k].weight_milli)
			return false;
	return true;
}

static bool port_equal(const struct fg_port_cfg *a, const struct fg_port_cfg *b)
{
	if (strcmp(a->name, b->name) || memcmp(a->mac, b->mac, 6) ||
	    a->n_local != b->n_local || a->vlan != b->vlan ||
	    !addr_eq0(&a->gateway, &b->gateway) || !addr_eq0(&a->gateway6, &b->gateway6))
		return false;
	for (uint32_t i = 0; i < a->n_local; i++)
		if (!addr_eq0(&a->local[i], &b->local[i]))
			return false;
	return true;
}

static bool sync_equal(const struct fg_sync_cfg *a, const struct fg_sync_cfg *b)
{
	if (a->on != b->on || !addr_eq0(&a->listen, &b->listen) || a->port != b->port ||
	    a->node != b->node || strcmp(a->key_path, b->key_path) || a->dsr != b->dsr ||
	    a->rate != b->rate || a->n_peers != b->n_peers || a->n_nat != b->n_nat)
		return false;
	for (uint32_t k = 0; k < a->n_nat; k++)
		if (!addr_eq0(&a->nat[k], &b->nat[k]))
			return false;
	for (uint32_t i = 0; i < a->n_peers; i++)
		if (strcmp(a->peers[i].name, b->peers[i].name) ||
		    !addr_eq0(&a->peers[i].addr, &b->peers[i].addr) ||
		    a->peers[i].port != b->peers[i].port || a->peers[i].node != b->peers[i].node ||
		    a->peers[i].n_nat != b->peers[i].n_nat)
			return false;
		else
			for (uint32_t k = 0; k < a->peers[i].n_nat; k++)
				if (!addr_eq0(&a->peers[i].nat[k], &b->peers[i].nat[k]))
					return false;
	return true;
}

bool fg_config_equal(const struct fg_config *x, const struct fg_config *y)
{
	if (!sync_equal(&x->sync, &y->sync))
		return false;
	if (x->n_services != y->n_services || x->n_ports != y->n_ports ||
	    x->n_neigh != y->n_neigh || x->ct_capacity != y->ct_capacity ||
	    x->ct_nat_capacity != y->ct_nat_capacity ||
	    x->flood_rate != y->flood_rate || x->gue_port != y->gue_port ||
	    strcmp(x->control_socket, y->control_socket) ||
	    strcmp(x->control_socket_ro, y->control_socket_ro) ||
	    strcmp(x->control_socket_ro_group, y->control_socket_ro_group) ||
	    memcmp(x->ct_timeouts_ms, y->ct_timeouts_ms, sizeof(x->ct_timeouts_ms)))
		return false;
	for (uint32_t p = 0; p < x->n_ports; p++)
		if (!port_equal(&x->ports[p], &y->ports[p]))
			return false;
	for (uint32_t i = 0; i < x->n_neigh; i++)
		if (!addr_eq0(&x->neigh[i].ip, &y->neigh[i].ip) ||
		    memcmp(x->neigh[i].mac, y->neigh[i].mac, 6) || x->neigh[i].port != y->neigh[i].port)
			return false;
	for (uint32_t i = 0; i < x->n_services; i++) {
		const struct fg_service_cfg *a = &x->services[i], *b = &y->services[i];
		const struct fg_health_cfg *ha = &a->health, *hb = &b->health;
		if (strcmp(a->name, b->name) || !addr_eq0(&a->vip, &b->vip) || a->port != b->port ||
		    a->proto != b->proto || a->mode != b->mode || a->sched != b->sched ||
		    a->on_fail != b->on_fail || a->gue_port != b->gue_port ||
		    a->maglev_size != b->maglev_size || a->n_backends != b->n_backends ||
		    ha->type != hb->type)
			return false;
		if (ha->type != FG_HC_NONE &&
		    (ha->interval_ms != hb->interval_ms || ha->timeout_ms != hb->timeout_ms ||
		     ha->rise != hb->rise || ha->fall != hb->fall || ha->port != hb->port ||
		     (ha->type == FG_HC_HTTP && (strcmp(ha->path, hb->path) ||
						 ha->expect_status != hb->expect_status)) ||
		     (ha->type == FG_HC_METRICS && (strcmp(ha->path, hb->path) ||
						    !metrics_equal(&ha->metrics, &hb->metrics)))))
			return false;
		for (uint32_t k = 0; k < a->n_backends; k++) {
			const struct fg_backend_cfg *p = &a->backends[k], *q = &b->backends[k];
			if (!addr_eq0(&p->addr, &q->addr) || p->port != q->port ||
			    p->weight != q->weight || p->drained != q->drained ||
			    !addr_eq0(&p->src, &q->src))
				return false;
		}
	}
	return true;
}

int fg_config_restart_diff(const struct fg_config *running, const struct fg_config *next,
			   char *msg, size_t len)
{
	const struct fg_config *x = running, *y = next;

	if (x->n_ports != y->n_ports) {
		snprintf(msg, len, "ports: %u running, %u in the new config", x->n_ports,
			 y->n_ports);
		return 1;
	}
	for (uint32_t p = 0; p < x->n_ports; p++)
		if (!port_equal(&x->ports[p], &y->ports[p])) {
			if (strcmp(x->ports[p].name, y->ports[p].name))
				snprintf(msg, len, "port %u: name '%s' running, '%s' in the new "
					 "config", p, x->ports[p].name, y->ports[p].name);
			else
				snprintf(msg, len, "port %u ('%s'): its settings (mac, local, "
					 "gateway, vlan) differ", p, x->ports[p].name);
			return 1;
		}
	if (x->ct_capacity != y->ct_capacity) {
		snprintf(msg, len, "conntrack capacity: %u running, %u in the new config",
			 x->ct_capacity, y->ct_capacity);
		return 1;
	}
	if (x->ct_nat_capacity != y->ct_nat_capacity) {
		snprintf(msg, len, "conntrack nat_capacity: %u running, %u in the new config",
			 x->ct_nat_capacity, y->ct_nat_capacity);
		return 1;
	}
	if (x->flood_rate != y->flood_rate) {
		snprintf(msg, len, "conntrack flood_rate: %u running, %u in the new config",
			 x->flood_rate, y->flood_rate);
		return 1;
	}
	for (int st = 0; st < 16; st++)
		if (x->ct_timeouts_ms[st] != y->ct_timeouts_ms[st]) {
			char lower[16];
			snprintf(msg, len, "conntrack timeout %s: %ums running, %ums in the new "
				 "config", state_lower(st, lower, sizeof(lower)),
				 x->ct_timeouts_ms[st], y->ct_timeouts_ms[st]);
			return 1;
		}
	if (strcmp(x->control_socket, y->control_socket)) {
		snprintf(msg, len, "control_socket: '%s' running, '%s' in the new config",
			 x->control_socket, y->control_socket);
		return 1;
	}
	if (!sync_equal(&x->sync, &y->sync)) {
		snprintf(msg, len, "sync: the block differs from the running one");
		return 1;
	}
	if (strcmp(x->control_socket_ro, y->control_socket_ro) ||
	    strcmp(x->control_socket_ro_group, y->control_socket_ro_group)) {
		snprintf(msg, len, "control_socket_ro: '%s' group '%s' running, '%s' group '%s' "
			 "in the new config", x->control_socket_ro, x->control_socket_ro_group,
			 y->control_socket_ro, y->control_socket_ro_group);
		return 1;
	}
	return 0;
}
