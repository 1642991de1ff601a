/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * flowgate JSON: strict RFC 8259 reader (arena documents) and a compact
 * writer.  See fg_json.h.
 */
#include "fg_json.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- arena ------------------------------------------------------------- */

/* Every value and string of a document lives in a few large blocks, so a
 * document is freed in one go and parsing does no per-node malloc. */
struct arena_blk {
	struct arena_blk *next;
	size_t used, size;
	_Alignas(16) unsigned char data[];
};

struct fg_json_doc {
	struct arena_blk *blk;
	struct fg_json *root;
};

static void *arena_alloc(struct fg_json_doc *d, size_t n)
{
	n = (n + 15) & ~(size_t)15;
	struct arena_blk *b = d->blk;
	if (!b || b->size - b->used < n) {
		size_t sz = n > 32768 ? n : 32768;
		b = malloc(sizeof(*b) + sz);
		if (!b)
			return NULL;
		b->size = sz;
		b->used = 0;
		b->next = d->blk;
		d->blk = b;
	}
	void *p = b->data + b->used;
	b->used += n;
	return p;
}

void fg_json_free(struct fg_json_doc *doc)
{
	if (!doc)
		return;
	struct arena_blk *b = doc->blk;
	while (b) {
		struct arena_blk *n = b->next;
		free(b);
		b = n;
	}
	free(doc);
}

const struct fg_json *fg_json_root(const struct fg_json_doc *doc)
{
	return doc ? doc->root : NULL;
}

/* ---- parser ------------------------------------------------------------ */

/* Most members one object may have: keeps the duplicate-key check bounded
 * (O(n^2) on at most 4096 keys) on hostile input. */
#define JSON_MAX_MEMBERS 4096

struct jp {
	const char *s;
	size_t pos, len;
	struct fg_json_doc *doc;
	char *err;
	size_t errlen;
	int failed; /* errno-like */
};

static int jp_fail(struct jp *p, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int jp_fail(struct jp *p, int code, const char *fmt, ...)
{
	if (p->failed)
		return -1;
	p->failed = code;
	if (p->err && p->errlen) {
		int n = snprintf(p->err, p->errlen, "offset %zu: ", p->pos);
		if (n >= 0 && (size_t)n < p->errlen) {
			va_list ap;
			va_start(ap, fmt);
			vsnprintf(p->err + n, p->errlen - n, fmt, ap);
			va_end(ap);
		}
	}
	return -1;
}

static void jp_ws(struct jp *p)
{
	while (p->pos < p->len) {
		char c = p->s[p->pos];
		if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
			break;
		p->pos++;
	}
}

static struct fg_json *jp_new(struct jp *p, enum fg_json_type t)
{
	struct fg_json *v = arena_alloc(p->doc, sizeof(*v));
	if (!v) {
		jp_fail(p, ENOMEM, "out of memory");
		return NULL;
	}
	memset(v, 0, sizeof(*v));
	v->type = t;
	return v;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static int jp_hex4(struct jp *p, uint32_t *out)
{
	if (p->len - p->pos < 4)
		return jp_fail(p, EINVAL, "truncated \\u escape");
	uint32_t v = 0;
	for (int i = 0; i < 4; i++) {
		int h = hexval(p->s[p->pos + i]);
		if (h < 0)
			return jp_fail(p, EINVAL, "bad hex digit in \\u escape");
		v = v << 4 | (uint32_t)h;
	}
	p->pos += 4;
	*out = v;
	return 0;
}

static size_t utf8_put(char *o, uint32_t cp)
{
	if (cp < 0x80) {
		o[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		o[0] = (char)(0xC0 | cp >> 6);
		o[1] = (char)(0x80 | (cp & 0x3F));
		return 2;
	}
	if (cp < 0x10000) {
		o[0] = (char)(0xE0 | cp >> 12);
		o[1] = (char)(0x80 | (cp >> 6 & 0x3F));
		o[2] = (char)(0x80 | (cp & 0x3F));
		return 3;
	}
	o[0] = (char)(0xF0 | cp >> 18);
	o[1] = (char)(0x80 | (cp >> 12 & 0x3F));
	o[2] = (char)(0x80 | (cp >> 6 & 0x3F));
	o[3] = (char)(0x80 | (cp & 0x3F));
	return 4;
}

/* Length of a valid UTF-8 sequence at s (n bytes available), 0 if invalid
 * (overlong, surrogate, > U+10FFFF, truncated). */
static size_t utf8_valid(const unsigned char *s, size_t n)
{
	unsigned char c = s[0];
	if (c < 0x80)
		return 1;
	size_t need;
	uint32_t cp, min;
	if ((c & 0xE0) == 0xC0) {
		need = 2; cp = c & 0x1F; min = 0x80;
	} else if ((c & 0xF0) == 0xE0) {
		need = 3; cp = c & 0x0F; min = 0x800;
	} else if ((c & 0xF8) == 0xF0) {
		need = 4; cp = c & 0x07; min = 0x10000;
	} else {
		return 0;
	}
	if (n < need)
		return 0;
	for (size_t i = 1; i < need; i++) {
		if ((s[i] & 0xC0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3F);
	}
	if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
		return 0;
	return need;
}

/* Parses a string at p->pos (on the opening quote) into the arena. */
static const char *jp_string(struct jp *p, uint32_t *outlen)
{
	p->pos++; /* '"' */
	size_t start = p->pos, end = start;
	bool esc = false;
	/* find the end first: the decoded string is never longer */
	while (end < p->len && p->s[end] != '"') {
		if (p->s[end] == '\\') {
			esc = true;
			end++;
		}
		end++;
	}
	if (end >= p->len) {
		p->pos = p->len;
		jp_fail(p, EINVAL, "unterminated string");
		return NULL;
	}
	if (end - start >= UINT32_MAX) {
		jp_fail(p, E2BIG, "string too long");
		return NULL;
	}
	char *o = arena_alloc(p->doc, end - start + 1);
	if (!o) {
		jp_fail(p, ENOMEM, "out of memory");
		return NULL;
	}
	size_t n = 0;
	while (p->pos < end) {
		unsigned char c = (unsigned char)p->s[p->pos];
		if (c < 0x20) {
			jp_fail(p, EINVAL, "control character in string (escape it)");
			return NULL;
		}
		if (c != '\\') {
			size_t k = utf8_valid((const unsigned char *)p->s + p->pos, end - p->pos);
			if (!k) {
				jp_fail(p, EINVAL, "invalid UTF-8 in string");
				return NULL;
			}
			memcpy(o + n, p->s + p->pos, k);
			n += k;
			p->pos += k;
			continue;
		}
		p->pos++;
		char e = p->s[p->pos++];
		switch (e) {
		case '"': o[n++] = '"'; break;
		case '\\': o[n++] = '\\'; break;
		case '/': o[n++] = '/'; break;
		case 'b': o[n++] = '\b'; break;
		case 'f': o[n++] = '\f'; break;
		case 'n': o[n++] = '\n'; break;
		case 'r': o[n++] = '\r'; break;
		case 't': o[n++] = '\t'; break;
		case 'u': {
			uint32_t cp, lo;
			if (jp_hex4(p, &cp))
				return NULL;
			if (cp >= 0xD800 && cp <= 0xDBFF) {
				if (p->pos + 6 > end || p->s[p->pos] != '\\' ||
				    p->s[p->pos + 1] != 'u') {
					jp_fail(p, EINVAL, "lone high surrogate");
					return NULL;
				}
				p->pos += 2;
				if (jp_hex4(p, &lo))
					return NULL;
				if (lo < 0xDC00 || lo > 0xDFFF) {
					jp_fail(p, EINVAL, "bad low surrogate");
					return NULL;
				}
				cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
			} else if (cp >= 0xDC00 && cp <= 0xDFFF) {
				jp_fail(p, EINVAL, "lone low surrogate");
				return NULL;
			} else if (cp == 0) {
				jp_fail(p, EINVAL, "\\u0000 is not allowed");
				return NULL;
			}
			/* 6 escape bytes always produce <= 4 output bytes */
			n += utf8_put(o + n, cp);
			break;
		}
		default:
			p->pos--;
			jp_fail(p, EINVAL, "bad escape '\\%c'", isprint((unsigned char)e) ? e : '?');
			return NULL;
		}
	}
	(void)esc;
	o[n] = 0;
	p->pos = end + 1;
	*outlen = (uint32_t)n;
	return o;
}

static struct fg_json *jp_number(struct jp *p)
{
	size_t st = p->pos;
	const char *s = p->s;
	bool frac = false;
	if (p->pos < p->len && s[p->pos] == '-')
		p->pos++;
	if (p->pos >= p->len || !isdigit((unsigned char)s[p->pos])) {
		jp_fail(p, EINVAL, "bad number");
		return NULL;
	}
	if (s[p->pos] == '0') {
		p->pos++;
		if (p->pos < p->len && isdigit((unsigned char)s[p->pos])) {
			jp_fail(p, EINVAL, "leading zero in number");
			return NULL;
		}
	} else {
		while (p->pos < p->len && isdigit((unsigned char)s[p->pos]))
			p->pos++;
	}
	if (p->pos < p->len && s[p->pos] == '.') {
		frac = true;
		p->pos++;
		if (p->pos >= p->len || !isdigit((unsigned char)s[p->pos])) {
			jp_fail(p, EINVAL, "digit expected after '.'");
			return NULL;
		}
		while (p->pos < p->len && isdigit((unsigned char)s[p->pos]))
			p->pos++;
	}
	if (p->pos < p->len && (s[p->pos] == 'e' || s[p->pos] == 'E')) {
		frac = true;
		p->pos++;
		if (p->pos < p->len && (s[p->pos] == '+' || s[p->pos] == '-'))
			p->pos++;
		if (p->pos >= p->len || !isdigit((unsigned char)s[p->pos])) {
			jp_fail(p, EINVAL, "digit expected in exponent");
			return NULL;
		}
		while (p->pos < p->len && isdigit((unsigned char)s[p->pos]))
			p->pos++;
	}
	char tmp[64];
	size_t n = p->pos - st;
	if (n >= sizeof(tmp)) {
		jp_fail(p, EINVAL, "number too long");
		return NULL;
	}
	memcpy(tmp, s + st, n);
	tmp[n] = 0;
	struct fg_json *v = jp_new(p, FG_JSON_NUM);
	if (!v)
		return NULL;
	v->d = strtod(tmp, NULL);
	if (!isfinite(v->d)) {
		jp_fail(p, EINVAL, "number out of range");
		return NULL;
	}
	/* Negative zero ("-0", "-0.0", "-0e1") is read as 0: it has no
	 * integer form, so keeping it would make "-0e1" write as "-0" and
	 * read back as the integer 0, a value that changes on a round trip. */
	if (v->d == 0)
		v->d = 0.0;
	if (!frac) {
		errno = 0;
		if (tmp[0] == '-') {
			long long x = strtoll(tmp, NULL, 10);
			if (!errno) {
				v->is_int = true;
				v->i = x;
			}
		} else {
			unsigned long long x = strtoull(tmp, NULL, 10);
			if (!errno) {
				v->is_uint = true;
				v->u = x;
				if (x <= INT64_MAX) {
					v->is_int = true;
					v->i = (int64_t)x;
				}
			}
		}
	}
	return v;
}

static bool jp_lit(struct jp *p, const char *lit)
{
	size_t n = strlen(lit);
	if (p->len - p->pos >= n && !memcmp(p->s + p->pos, lit, n)) {
		p->pos += n;
		return true;
	}
	return false;
}

static struct fg_json *jp_value(struct jp *p, unsigned int depth)
{
	jp_ws(p);
	if (p->pos >= p->len) {
		jp_fail(p, EINVAL, "unexpected end of input");
		return NULL;
	}
	char c = p->s[p->pos];
	struct fg_json *v;
	switch (c) {
	case '{':
	case '[': {
		bool obj = c == '{';
		if (depth >= FG_JSON_MAX_DEPTH) {
			jp_fail(p, E2BIG, "nesting deeper than %d", FG_JSON_MAX_DEPTH);
			return NULL;
		}
		v = jp_new(p, obj ? FG_JSON_OBJ : FG_JSON_ARR);
		if (!v)
			return NULL;
		p->pos++;
		jp_ws(p);
		if (p->pos < p->len && p->s[p->pos] == (obj ? '}' : ']')) {
			p->pos++;
			return v;
		}
		struct fg_json **tail = &v->child;
		for (;;) {
			const char *key = NULL;
			jp_ws(p);
			if (obj) {
				uint32_t kl;
				if (p->pos >= p->len || p->s[p->pos] != '"') {
					jp_fail(p, EINVAL, p->pos >= p->len ?
						"unexpected end of input" :
						"object key (a string) expected");
					return NULL;
				}
				key = jp_string(p, &kl);
				if (!key)
					return NULL;
				if (v->len >= JSON_MAX_MEMBERS) {
					jp_fail(p, E2BIG, "more than %d members in an object",
						JSON_MAX_MEMBERS);
					return NULL;
				}
				for (struct fg_json *m = v->child; m; m = m->next)
					if (!strcmp(m->key, key)) {
						jp_fail(p, EINVAL, "duplicate key \"%.40s\"", key);
						return NULL;
					}
				jp_ws(p);
				if (p->pos >= p->len || p->s[p->pos] != ':') {
					jp_fail(p, EINVAL, "':' expected after key");
					return NULL;
				}
				p->pos++;
			}
			struct fg_json *item = jp_value(p, depth + 1);
			if (!item)
				return NULL;
			item->key = key;
			*tail = item;
			tail = &item->next;
			v->len++;
			jp_ws(p);
			if (p->pos >= p->len) {
				jp_fail(p, EINVAL, "unexpected end of input");
				return NULL;
			}
			if (p->s[p->pos] == ',') {
				p->pos++;
				continue;
			}
			if (p->s[p->pos] == (obj ? '}' : ']')) {
				p->pos++;
				return v;
			}
			jp_fail(p, EINVAL, obj ? "',' or '}' expected" : "',' or ']' expected");
			return NULL;
		}
	}
	case '"': {
		uint32_t l;
		const char *s = jp_string(p, &l);
		if (!s)
			return NULL;
		v = jp_new(p, FG_JSON_STR);
		if (!v)
			return NULL;
		v->str = s;
		v->len = l;
		return v;
	}
	case 't':
	case 'f':
	case 'n':
		if (jp_lit(p, "true") || jp_lit(p, "false")) {
			v = jp_new(p, FG_JSON_BOOL);
			if (v)
				v->b = c == 't';
			return v;
		}
		if (jp_lit(p, "null"))
			return jp_new(p, FG_JSON_NULL);
		jp_fail(p, EINVAL, "unknown literal");
		return NULL;
	default:
		if (c == '-' || isdigit((unsigned char)c))
			return jp_number(p);
		jp_fail(p, EINVAL, "unexpected character '%c'",
			isprint((unsigned char)c) ? c : '?');
		return NULL;
	}
}

struct fg_json_doc *fg_json_parse(const char *text, size_t len, size_t max_len,
				  char *err, size_t errlen)
{
	if (err && errlen)
		err[0] = 0;
	if (!max_len)
		max_len = FG_JSON_DEFAULT_MAX_LEN;
	if (len > max_len) {
		if (err)
			snprintf(err, errlen, "message of %zu bytes exceeds the limit of %zu",
				 len, max_len);
		errno = E2BIG;
		return NULL;
	}
	struct fg_json_doc *d = calloc(1, sizeof(*d));
	if (!d) {
		errno = ENOMEM;
		return NULL;
	}
	struct jp p = { .s = text, .len = len, .doc = d, .err = err, .errlen = errlen };
	d->root = jp_value(&p, 0);
	if (d->root) {
		jp_ws(&p);
		if (p.pos != p.len)
			jp_fail(&p, EINVAL, "trailing data after the JSON value");
	}
	if (p.failed) {
		fg_json_free(d);
		errno = p.failed;
		return NULL;
	}
	return d;
}

const struct fg_json *fg_json_get(const struct fg_json *obj, const char *key)
{
	if (!obj || obj->type != FG_JSON_OBJ)
		return NULL;
	for (const struct fg_json *m = obj->child; m; m = m->next)
		if (!strcmp(m->key, key))
			return m;
	return NULL;
}

int fg_json_get_str(const struct fg_json *obj, const char *key, const char **out)
{
	const struct fg_json *v = fg_json_get(obj, key);
	if (!v || v->type == FG_JSON_NULL)
		return -ENOENT;
	if (v->type != FG_JSON_STR)
		return -EINVAL;
	*out = v->str;
	return 0;
}

int fg_json_get_i64(const struct fg_json *obj, const char *key, int64_t *out)
{
	const struct fg_json *v = fg_json_get(obj, key);
	if (!v || v->type == FG_JSON_NULL)
		return -ENOENT;
	if (v->type != FG_JSON_NUM || !v->is_int)
		return -EINVAL;
	*out = v->i;
	return 0;
}

int fg_json_get_u64(const struct fg_json *obj, const char *key, uint64_t *out)
{
	const struct fg_json *v = fg_json_get(obj, key);
	if (!v || v->type == FG_JSON_NULL)
		return -ENOENT;
	if (v->type != FG_JSON_NUM || !v->is_uint)
		return -EINVAL;
	*out = v->u;
	return 0;
}

int fg_json_get_bool(const struct fg_json *obj, const char *key, bool *out)
{
	const struct fg_json *v = fg_json_get(obj, key);
	if (!v || v->type == FG_JSON_NULL)
		return -ENOENT;
	if (v->type != FG_JSON_BOOL)
		return -EINVAL;
	*out = v->b;
	return 0;
}

/* ---- writer ------------------------------------------------------------ */

void fg_jw_init(struct fg_json_writer *w, size_t max)
{
	memset(w, 0, sizeof(*w));
	w->max = max;
	w->first[0] = 1;
}

void fg_jw_reset(struct fg_json_writer *w)
{
	w->len = 0;
	w->err = 0;
	w->depth = 0;
	w->first[0] = 1;
	w->is_obj[0] = 0;
	if (w->buf)
		w->buf[0] = 0;
}

void fg_jw_fini(struct fg_json_writer *w)
{
	free(w->buf);
	w->buf = NULL;
	w->len = w->cap = 0;
}

int fg_jw_error(const struct fg_json_writer *w)
{
	return w->err;
}

static bool jw_reserve(struct fg_json_writer *w, size_t n)
{
	if (w->err)
		return false;
	if (w->max && w->len + n > w->max) {
		w->err = -E2BIG;
		return false;
	}
	if (w->len + n + 1 > w->cap) {
		size_t nc = w->cap ? w->cap * 2 : 4096;
		while (nc < w->len + n + 1)
			nc *= 2;
		char *nb = realloc(w->buf, nc);
		if (!nb) {
			w->err = -ENOMEM;
			return false;
		}
		w->buf = nb;
		w->cap = nc;
	}
	return true;
}

static void jw_put(struct fg_json_writer *w, const char *s, size_t n)
{
	if (!jw_reserve(w, n))
		return;
	memcpy(w->buf + w->len, s, n);
	w->len += n;
	w->buf[w->len] = 0;
}

static void jw_putc(struct fg_json_writer *w, char c)
{
	jw_put(w, &c, 1);
}

static void jw_escape(struct fg_json_writer *w, const char *s, size_t n)
{
	jw_putc(w, '"');
	size_t i = 0;
	while (i < n && !w->err) {
		unsigned char c = (unsigned char)s[i];
		size_t run = i;
		/* copy runs of plain bytes in one go */
		while (run < n && (unsigned char)s[run] >= 0x20 && (unsigned char)s[run] < 0x80 &&
		       s[run] != '"' && s[run] != '\\')
			run++;
		if (run > i) {
			jw_put(w, s + i, run - i);
			i = run;
			continue;
		}
		char tmp[8];
		if (c == '"' || c == '\\') {
			tmp[0] = '\\';
			tmp[1] = (char)c;
			jw_put(w, tmp, 2);
			i++;
		} else if (c < 0x20) {
			const char *e = c == '\n' ? "\\n" : c == '\t' ? "\\t" : c == '\r' ? "\\r" : NULL;
			if (e) {
				jw_put(w, e, 2);
			} else {
				snprintf(tmp, sizeof(tmp), "\\u%04x", c);
				jw_put(w, tmp, 6);
			}
			i++;
		} else {
			size_t k = utf8_valid((const unsigned char *)s + i, n - i);
			if (k) {
				jw_put(w, s + i, k);
				i += k;
			} else {
				jw_put(w, "\\ufffd", 6); /* invalid byte: replacement char */
				i++;
			}
		}
	}
	jw_putc(w, '"');
}

/* Comma and key before a value; checks key use against the container. */
static void jw_pre(struct fg_json_writer *w, const char *key)
{
	if (w->err)
		return;
	bool in_obj = w->depth > 0 && w->is_obj[w->depth];
	if (in_obj != (key != NULL)) {
		w->err = -EINVAL;
		return;
	}
	if (w->depth > 0 || !w->first[0]) {
		if (!w->first[w->depth])
			jw_putc(w, ',');
	}
	w->first[w->depth] = 0;
	if (key) {
		jw_escape(w, key, strlen(key));
		jw_putc(w, ':');
	}
}

static void jw_open(struct fg_json_writer *w, const char *key, bool obj)
{
	jw_pre(w, key);
	if (w->err)
		return;
	if (w->depth >= FG_JSON_MAX_DEPTH) {
		w->err = -E2BIG;
		return;
	}
	jw_putc(w, obj ? '{' : '[');
	w->depth++;
	w->first[w->depth] = 1;
	w->is_obj[w->depth] = obj;
}

static void jw_close(struct fg_json_writer *w, bool obj)
{
	if (w->err)
		return;
	if (!w->depth || w->is_obj[w->depth] != obj) {
		w->err = -EINVAL;
		return;
	}
	w->depth--;
	jw_putc(w, obj ? '}' : ']');
}

void fg_jw_obj_open(struct fg_json_writer *w, const char *key) { jw_open(w, key, true); }
void fg_jw_obj_close(struct fg_json_writer *w) { jw_close(w, true); }
void fg_jw_arr_open(struct fg_json_writer *w, const char *key) { jw_open(w, key, false); }
void fg_jw_arr_close(struct fg_json_writer *w) { jw_close(w, false); }

void fg_jw_strn(struct fg_json_writer *w, const char *key, const char *s, size_t n)
{
	jw_pre(w, key);
	jw_escape(w, s, n);
}

void fg_jw_str(struct fg_json_writer *w, const char *key, const char *s)
{
	if (!s) {
		fg_jw_null(w, key);
		return;
	}
	fg_jw_strn(w, key, s, strlen(s));
}

/* Decimal digits of v, right-aligned ending at end; returns the start.
 * (snprintf costs ~70 ns a call; a flow listing writes ~15 numbers per flow) */
char *fg_json_u64_dec(uint64_t v, char *end)
{
	char *p = end;
	do {
		*--p = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	return p;
}

void fg_jw_i64(struct fg_json_writer *w, const char *key, int64_t v)
{
	char b[24];
	char *e = b + sizeof(b);
	char *p = fg_json_u64_dec(v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v, e);
	if (v < 0)
		*--p = '-';
	jw_pre(w, key);
	jw_put(w, p, (size_t)(e - p));
}

void fg_jw_u64(struct fg_json_writer *w, const char *key, uint64_t v)
{
	char b[24];
	char *e = b + sizeof(b);
	char *p = fg_json_u64_dec(v, e);
	jw_pre(w, key);
	jw_put(w, p, (size_t)(e - p));
}

void fg_jw_dbl(struct fg_json_writer *w, const char *key, double v)
{
	char b[40];
	if (!isfinite(v)) {
		fg_jw_null(w, key);
		return;
	}
	if (v == 0)
		v = 0.0;	/* never "-0": the reader reads it as 0 */
	jw_pre(w, key);
	/* the shortest of %.15g..%.17g that reads back as the same double:
	 * 43.956, not 43.956000000000003 (%.17g always round-trips) */
	int n = 0;
	for (int prec = 15; prec <= 17; prec++) {
		n = snprintf(b, sizeof(b), "%.*g", prec, v);
		if (strtod(b, NULL) == v)
			break;
	}
	/* keep it a JSON number: %g never prints "inf"/"nan" here */
	jw_put(w, b, (size_t)n);
}

void fg_jw_bool(struct fg_json_writer *w, const char *key, bool v)
{
	jw_pre(w, key);
	jw_put(w, v ? "true" : "false", v ? 4 : 5);
}

void fg_jw_null(struct fg_json_writer *w, const char *key)
{
	jw_pre(w, key);
	jw_put(w, "null", 4);
}

void fg_jw_value(struct fg_json_writer *w, const char *key, const struct fg_json *v)
{
	if (!v) {
		fg_jw_null(w, key);
		return;
	}
	switch (v->type) {
	case FG_JSON_NULL: fg_jw_null(w, key); break;
	case FG_JSON_BOOL: fg_jw_bool(w, key, v->b); break;
	case FG_JSON_NUM:
		if (v->is_int)
			fg_jw_i64(w, key, v->i);
		else if (v->is_uint)
			fg_jw_u64(w, key, v->u);
		else
			fg_jw_dbl(w, key, v->d);
		break;
	case FG_JSON_STR: fg_jw_strn(w, key, v->str, v->len); break;
	case FG_JSON_ARR:
	case FG_JSON_OBJ:
		jw_open(w, key, v->type == FG_JSON_OBJ);
		for (const struct fg_json *c = v->child; c; c = c->next)
			fg_jw_value(w, v->type == FG_JSON_OBJ ? c->key : NULL, c);
		jw_close(w, v->type == FG_JSON_OBJ);
		break;
	}
}

void fg_jw_json(struct fg_json_writer *w, const char *key, const char *json, size_t n)
{
	jw_pre(w, key);
	jw_put(w, json, n);
}

void fg_jw_member_begin(struct fg_json_writer *w, const char *key)
{
	jw_pre(w, key);
	/* the next value call is key-less although inside the object: mark
	 * this level as an array until fg_jw_member_end */
	if (!w->err) {
		w->is_obj[w->depth] = 0;
		w->first[w->depth] = 1;
	}
}

void fg_jw_member_end(struct fg_json_writer *w)
{
	if (w->err || w->depth == 0 || w->is_obj[w->depth])
		return;
	if (w->first[w->depth]) /* no value written */
		jw_put(w, "null", 4);
	w->is_obj[w->depth] = 1;
	w->first[w->depth] = 0;
}

void fg_jw_raw(struct fg_json_writer *w, const char *s, size_t n)
{
	if (w->err)
		return;
	if (w->depth) {
		w->err = -EINVAL;
		return;
	}
	jw_put(w, s, n);
	w->first[0] = 1; /* a new top-level value may follow */
}
