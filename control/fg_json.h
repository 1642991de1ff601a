/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * flowgate JSON: a strict RFC 8259 reader and a compact writer, used by the
 * control protocol (fg_proto.h), the config checker, the health checker and
 * the daemon's stats/metrics emitters.  No dependency beyond libc.
 *
 * Reader: one document is parsed into an arena (a few large blocks; freed in
 * one call, no per-value malloc).  Strict: no trailing commas, no comments,
 * no leading zeros, duplicate object keys rejected, strings valid UTF-8
 * without NUL, numbers finite, nesting at most FG_JSON_MAX_DEPTH.
 *
 * Writer: appends compact JSON to a growable buffer and inserts the commas
 * itself; errors are sticky.
 *
 * Thread safety: every function is reentrant; a document or a writer
 * belongs to one thread at a time.
 */
#ifndef FLOWGATE_FG_JSON_H
#define FLOWGATE_FG_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Largest nesting depth of any JSON document (reader and writer). */
#define FG_JSON_MAX_DEPTH 32
/** Size limit fg_json_parse() applies when its max_len is 0; it is also the
 *  largest control request (FG_PROTO_MAX_REQUEST). */
#define FG_JSON_DEFAULT_MAX_LEN (1u << 20)

/* ---- JSON documents (reader) ------------------------------------------ */

enum fg_json_type {
	FG_JSON_NULL = 0,
	FG_JSON_BOOL,
	FG_JSON_NUM,
	FG_JSON_STR,
	FG_JSON_ARR,
	FG_JSON_OBJ,
};

/**
 * One JSON value.  Arrays and objects hold their children as a list
 * (child, then next); members of an object carry their name in key.
 * Strings are NUL-terminated (a \u0000 escape is rejected).
 */
struct fg_json {
	enum fg_json_type type;
	bool b;               /**< FG_JSON_BOOL */
	bool is_int;          /**< FG_JSON_NUM: integral and fits int64 (i) */
	bool is_uint;         /**< FG_JSON_NUM: integral and fits uint64 (u) */
	double d;             /**< FG_JSON_NUM, always set */
	int64_t i;
	uint64_t u;
	const char *str;      /**< FG_JSON_STR */
	uint32_t len;         /**< string bytes, or number of children */
	const char *key;      /**< member name when inside an object, else NULL */
	struct fg_json *child; /**< first child (array/object) */
	struct fg_json *next; /**< next sibling */
};

struct fg_json_doc;

/**
 * Parses one JSON text (strict RFC 8259, see the limits above).
 * @param text     input, need not be NUL-terminated
 * @param len      bytes of input; more than @p max_len is rejected
 * @param max_len  size limit (0 = FG_JSON_DEFAULT_MAX_LEN)
 * @param err      receives "offset N: reason" on failure (may be NULL)
 * @return the document (free with fg_json_free), or NULL on a syntax
 *   error, a limit or out of memory (err says which).
 * Thread safety: reentrant.
 */
struct fg_json_doc *fg_json_parse(const char *text, size_t len, size_t max_len,
				  char *err, size_t errlen);

/** The root value of a parsed document. */
const struct fg_json *fg_json_root(const struct fg_json_doc *doc);

/** Frees a document and every value in it.  NULL is a no-op. */
void fg_json_free(struct fg_json_doc *doc);

/** Member @p key of object @p obj, or NULL (also when obj is not an object). */
const struct fg_json *fg_json_get(const struct fg_json *obj, const char *key);

/** Typed member getters: return 0, -ENOENT (absent or null), -EINVAL (wrong type/range). */
int fg_json_get_str(const struct fg_json *obj, const char *key, const char **out);
int fg_json_get_i64(const struct fg_json *obj, const char *key, int64_t *out);
int fg_json_get_u64(const struct fg_json *obj, const char *key, uint64_t *out);
int fg_json_get_bool(const struct fg_json *obj, const char *key, bool *out);

/* ---- JSON writer ------------------------------------------------------ */

/**
 * Appends compact JSON to a growable buffer, inserting commas itself.
 * In an object every value call takes a key; in an array or at the top
 * level the key must be NULL.  Errors are sticky: after the first one
 * (out of memory, over max, misuse) every call is a no-op and
 * fg_jw_error() returns it.
 */
struct fg_json_writer {
	char *buf;
	size_t len, cap, max;
	int err;                          /**< 0 or -ENOMEM / -E2BIG / -EINVAL */
	uint32_t depth;
	uint8_t first[FG_JSON_MAX_DEPTH + 1]; /**< 1 = no member yet at this depth */
	uint8_t is_obj[FG_JSON_MAX_DEPTH + 1];
};

/** Initializes an empty writer; @p max bytes at most (0 = unlimited). */
void fg_jw_init(struct fg_json_writer *w, size_t max);
/** Empties the buffer (keeps the allocation) and clears the error. */
void fg_jw_reset(struct fg_json_writer *w);
/** Frees the buffer. */
void fg_jw_fini(struct fg_json_writer *w);
/** The sticky error, 0 if none. */
int fg_jw_error(const struct fg_json_writer *w);

void fg_jw_obj_open(struct fg_json_writer *w, const char *key);
void fg_jw_obj_close(struct fg_json_writer *w);
void fg_jw_arr_open(struct fg_json_writer *w, const char *key);
void fg_jw_arr_close(struct fg_json_writer *w);
void fg_jw_str(struct fg_json_writer *w, const char *key, const char *s);
void fg_jw_strn(struct fg_json_writer *w, const char *key, const char *s, size_t n);
void fg_jw_i64(struct fg_json_writer *w, const char *key, int64_t v);
void fg_jw_u64(struct fg_json_writer *w, const char *key, uint64_t v);
void fg_jw_dbl(struct fg_json_writer *w, const char *key, double v);
void fg_jw_bool(struct fg_json_writer *w, const char *key, bool v);
void fg_jw_null(struct fg_json_writer *w, const char *key);
/** Copies a parsed value (deep) into the writer. */
void fg_jw_value(struct fg_json_writer *w, const char *key, const struct fg_json *v);
/** Appends one value that is already serialized JSON (@p json, @p n bytes,
 *  trusted: not re-validated), with comma and key as any other value. */
void fg_jw_json(struct fg_json_writer *w, const char *key, const char *json, size_t n);
/**
 * Writes the key of an object member whose value the next value call writes
 * with key NULL (a framing layer names the member, its caller writes the
 * value).  Close with fg_jw_member_end() before any other member.
 */
void fg_jw_member_begin(struct fg_json_writer *w, const char *key);
/** Ends the member fg_jw_member_begin() opened; writes null when no value
 *  was written. */
void fg_jw_member_end(struct fg_json_writer *w);
/** Appends raw bytes (a '\n' between messages); only at depth 0. */
void fg_jw_raw(struct fg_json_writer *w, const char *s, size_t n);

/**
 * Writes the decimal digits of @p v so that they end just before @p end
 * (at most 20 bytes, no NUL) and returns the first digit.  The writer's own
 * integer formatter, for callers that build text by hand on a hot path.
 */
char *fg_json_u64_dec(uint64_t v, char *end);

#ifdef __cplusplus
}
#endif

#endif /* FLOWGATE_FG_JSON_H */
