/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The state file's bytes (fg_state.h): parser and writer.  What goes in
 * and what is done with it on a start is fg_state.c's.
 */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>

#include <rte_hash_crc.h>

#include "fg_state.h"

const char *const fg_state_file_refuse_names[FG_STATE_FILE_MAX] = {
	"ok",
	FG_STATE_FILE_REFUSE_LIST(FG_XL_NAME)
};
const char *const fg_state_file_refuse_help[FG_STATE_FILE_MAX] = {
	"loaded",
	FG_STATE_FILE_REFUSE_LIST(FG_XL_SECOND)
};
const char *const fg_state_flow_refuse_names[FG_STATE_FLOW_MAX] = {
	FG_STATE_FLOW_REFUSE_LIST(FG_XL_NAME)
};
const char *const fg_state_flow_refuse_help[FG_STATE_FLOW_MAX] = {
	FG_STATE_FLOW_REFUSE_LIST(FG_XL_SECOND)
};

uint32_t
fg_state_crc(uint32_t crc, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	/* 8 bytes at a time through a copy: the buffer has no alignment
	 * (rte_hash_crc loads unaligned words, which UBSan refuses) */
	for (; len >= 8; p += 8, len -= 8) {
		uint64_t v;

		memcpy(&v, p, 8);
		crc = rte_hash_crc_8byte(v, crc);
	}
	for (; len > 0; len--)
		crc = rte_hash_crc_1byte(*p++, crc);
	return crc;
}

/* ---- parser ------------------------------------------------------------ */

/* Every record of a FLOWS body decodes and together they fill it. */
static enum fg_state_file_refuse
flows_check(const uint8_t *b, uint64_t len, uint32_t count)
{
	uint64_t off = 0;

	for (uint32_t i = 0; i < count; i++) {
		struct ct_rec r;
		int n = ct_rec_decode(b + off, (size_t)(len - off), &r);

		if (n < 0)
			return FG_STATE_FILE_malformed;
		off += (uint64_t)n;
	}
	return off == len ? FG_STATE_FILE_OK : FG_STATE_FILE_malformed;
}

static enum fg_state_file_refuse
neigh_check(const uint8_t *b, uint64_t len, uint32_t count)
{
	if (len != (uint64_t)count * FG_STATE_NEIGH_LEN)
		return FG_STATE_FILE_malformed;
	for (uint32_t i = 0; i < count; i++, b += FG_STATE_NEIGH_LEN)
		if ((b[0] != 4 && b[0] != 6) || b[1] != 0)
			return FG_STATE_FILE_malformed;
	return FG_STATE_FILE_OK;
}

static enum fg_state_file_refuse
header_check(const uint8_t *buf, size_t len, struct fg_state_view *v)
{
	if (len < sizeof(FG_STATE_MAGIC) - 1)
		return len == 0 || !memcmp(buf, FG_STATE_MAGIC, len) ?
		       FG_STATE_FILE_truncated : FG_STATE_FILE_not_state;
	if (memcmp(buf, FG_STATE_MAGIC, sizeof(FG_STATE_MAGIC) - 1) != 0)
		return FG_STATE_FILE_not_state;
	if (len < 12)
		return FG_STATE_FILE_truncated;
	/* the versions first: a later format may lay out the rest otherwise */
	v->version = (uint16_t)(buf[8] << 8 | buf[9]);
	v->rec_version = (uint16_t)(buf[10] << 8 | buf[11]);
	if (v->version != FG_STATE_VERSION || v->rec_version != CT_REC_VERSION)
		return FG_STATE_FILE_version;
	if (len < FG_STATE_HDR_LEN)
		return FG_STATE_FILE_truncated;
	if (fg_state_crc(CT_HASH_SEED, buf, 60) != fg_state_be32_get(buf + 60))
		return FG_STATE_FILE_checksum;
	v->written_ns = fg_state_be64_get(buf + 16);
	v->workers = fg_state_be32_get(buf + 24);
	memcpy(v->writer, buf + 32, 24);
	v->writer[24] = '\0';
	return FG_STATE_FILE_OK;
}

enum fg_state_file_refuse
fg_state_parse(const uint8_t *buf, size_t len, struct fg_state_view *out)
{
	struct fg_state_view v;
	enum fg_state_file_refuse rc;
	uint32_t n_sec;
	size_t off = FG_STATE_HDR_LEN;

	memset(&v, 0, sizeof(v));
	rc = header_check(buf, len, &v);
	if (rc != FG_STATE_FILE_OK)
		return rc;
	n_sec = fg_state_be32_get(buf + 12);
	for (uint32_t s = 0; s < n_sec; s++) {
		const uint8_t *h = buf + off, *body;
		uint32_t type, count;
		uint64_t blen;

		if (len - off < FG_STATE_SEC_HDR_LEN)
			return FG_STATE_FILE_truncated;
		type = fg_state_be32_get(h);
		count = fg_state_be32_get(h + 4);
		blen = fg_state_be64_get(h + 8);
		off += FG_STATE_SEC_HDR_LEN;
		if (blen > len - off || len - off - blen < 4)
			return FG_STATE_FILE_truncated;
		body = buf + off;
		if (fg_state_crc(CT_HASH_SEED, body, blen) != fg_state_be32_get(body + blen))
			return FG_STATE_FILE_checksum;
		if (type == FG_STATE_SEC_FLOWS && v.flows == NULL) {
			rc = flows_check(body, blen, count);
			v.flows = body;
			v.flows_len = blen;
			v.n_flows = count;
		} else if (type == FG_STATE_SEC_NEIGH && v.neigh == NULL) {
			rc = neigh_check(body, blen, count);
			v.neigh = body;
			v.n_neigh = count;
		} else {
			rc = FG_STATE_FILE_malformed;   /* unknown, or twice */
		}
		if (rc != FG_STATE_FILE_OK)
			return rc;
		off += blen + 4;
	}
	if (off != len)
		return FG_STATE_FILE_malformed;  /* bytes after the last section */
	*out = v;
	return FG_STATE_FILE_OK;
}

void
fg_state_neigh_get(const struct fg_state_view *v, uint32_t i, struct fg_state_neigh *n)
{
	const uint8_t *b = v->neigh + (size_t)i * FG_STATE_NEIGH_LEN;

	memset(n, 0, sizeof(*n));
	n->family = b[0] == 6 ? AF_INET6 : AF_INET;
	memcpy(n->port, b + 2, FG_STATE_PORT_NAME);
	n->port[FG_STATE_PORT_NAME] = '\0';
	memcpy(n->addr, b + 2 + FG_STATE_PORT_NAME, 16);
	memcpy(n->mac, b + 18 + FG_STATE_PORT_NAME, 6);
	n->age_ms = fg_state_be32_get(b + 24 + FG_STATE_PORT_NAME);
}

/* ---- writer ------------------------------------------------------------ */

static void
put(struct fg_state_writer *w, const void *p, size_t n)
{
	if (w->err)
		return;
	if (fwrite(p, 1, n, w->f) != n) {
		w->err = errno ? -errno : -EIO;
		return;
	}
	w->bytes += n;
}

static void
body(struct fg_state_writer *w, const void *p, size_t n)
{
	put(w, p, n);
	w->sec_crc = fg_state_crc(w->sec_crc, p, n);
	w->sec_len += n;
	w->sec_count++;
}

static void
header_write(struct fg_state_writer *w)
{
	uint8_t h[FG_STATE_HDR_LEN];

	memset(h, 0, sizeof(h));
	memcpy(h, FG_STATE_MAGIC, 8);
	h[8] = FG_STATE_VERSION >> 8;
	h[9] = FG_STATE_VERSION & 0xff;
	h[10] = CT_REC_VERSION >> 8;
	h[11] = CT_REC_VERSION & 0xff;
	fg_state_be32_put(h + 12, w->n_sections);
	fg_state_be64_put(h + 16, w->written_ns);
	fg_state_be32_put(h + 24, w->workers);
	memcpy(h + 32, w->writer, strnlen(w->writer, 24));
	fg_state_be32_put(h + 60, fg_state_crc(CT_HASH_SEED, h, 60));
	put(w, h, sizeof(h));
}

void
fg_state_writer_init(struct fg_state_writer *w, FILE *f, uint32_t workers,
		     const char *version, uint64_t written_ns)
{
	memset(w, 0, sizeof(*w));
	w->f = f;
	w->sec_off = -1;
	w->workers = workers;
	w->written_ns = written_ns;
	snprintf(w->writer, sizeof(w->writer), "%s", version ? version : "");
	header_write(w);   /* again at the end, with the section count */
}

static void
section_close(struct fg_state_writer *w)
{
	uint8_t h[FG_STATE_SEC_HDR_LEN], c[4];
	long end;

	if (w->sec_off < 0 || w->err)
		return;
	fg_state_be32_put(c, w->sec_crc);
	put(w, c, sizeof(c));
	fg_state_be32_put(h, w->sec_type);
	fg_state_be32_put(h + 4, w->sec_count);
	fg_state_be64_put(h + 8, w->sec_len);
	end = ftell(w->f);
	if (end < 0 || fseek(w->f, w->sec_off, SEEK_SET) != 0 ||
	    fwrite(h, 1, sizeof(h), w->f) != sizeof(h) || fseek(w->f, end, SEEK_SET) != 0)
		w->err = errno ? -errno : -EIO;
	w->sec_off = -1;
}

void
fg_state_section(struct fg_state_writer *w, uint32_t type)
{
	uint8_t h[FG_STATE_SEC_HDR_LEN] = {0};

	section_close(w);
	if (w->err)
		return;
	w->sec_off = ftell(w->f);
	if (w->sec_off < 0) {
		w->err = -errno;
		return;
	}
	put(w, h, sizeof(h));   /* written again when the section closes */
	w->sec_type = type;
	w->sec_count = 0;
	w->sec_len = 0;
	w->sec_crc = CT_HASH_SEED;
	w->n_sections++;
}

void
fg_state_put_flow(struct fg_state_writer *w, const struct ct_rec *r)
{
	uint8_t b[CT_REC_LEN_MAX];
	int n = ct_rec_encode(r, b, sizeof(b));

	if (n < 0) {
		if (!w->err)
			w->err = n;
		return;
	}
	body(w, b, (size_t)n);
}

void
fg_state_put_neigh(struct fg_state_writer *w, const struct fg_state_neigh *n)
{
	uint8_t b[FG_STATE_NEIGH_LEN];

	memset(b, 0, sizeof(b));
	b[0] = n->family == AF_INET6 ? 6 : 4;
	memcpy(b + 2, n->port, strnlen(n->port, FG_STATE_PORT_NAME));
	memcpy(b + 2 + FG_STATE_PORT_NAME, n->addr, 16);
	memcpy(b + 18 + FG_STATE_PORT_NAME, n->mac, 6);
	fg_state_be32_put(b + 24 + FG_STATE_PORT_NAME, n->age_ms);
	body(w, b, sizeof(b));
}

int
fg_state_writer_finish(struct fg_state_writer *w)
{
	section_close(w);
	if (!w->err && fseek(w->f, 0, SEEK_SET) != 0)
		w->err = -errno;
	if (!w->err) {
		uint64_t bytes = w->bytes;

		header_write(w);
		w->bytes = bytes;
	}
	if (!w->err && fflush(w->f) != 0)
		w->err = -errno;
	return w->err;
}
