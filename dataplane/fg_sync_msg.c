/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Sync messages' bytes (fg_sync.h): builder, parser, replay window.  What
 * is sent and what a received flow becomes is fg_sync.c's.
 *
 * The MAC is HMAC-SHA256 from OpenSSL's libcrypto: a reviewed, constant-
 * time implementation every Debian host has, rather than a keyed hash
 * written here (docs/DESIGN.md, "State sync between nodes").
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "fg_sync.h"

const char *const fg_sync_refuse_names[FG_SYNC_REFUSE_MAX] = {
	"ok",
	FG_SYNC_REFUSE_LIST(FG_XL_NAME)
};
const char *const fg_sync_refuse_help[FG_SYNC_REFUSE_MAX] = {
	"accepted",
	FG_SYNC_REFUSE_LIST(FG_XL_SECOND)
};

int
fg_sync_key_load(const char *path, struct fg_sync_key *key)
{
	uint8_t b[FG_SYNC_KEY_MAX + 2];
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	n = read(fd, b, sizeof(b));
	if (n < 0) {
		int rc = -errno;

		close(fd);
		return rc;
	}
	close(fd);
	if (n > 0 && b[n - 1] == '\n')
		n--;
	if (n < FG_SYNC_KEY_MIN || n > FG_SYNC_KEY_MAX)
		return -EINVAL;
	memset(key, 0, sizeof(*key));
	memcpy(key->k, b, (size_t)n);
	key->len = (uint32_t)n;
	return 0;
}

static void
mac_of(const struct fg_sync_key *key, const uint8_t *buf, size_t len,
       uint8_t out[FG_SYNC_MAC_LEN])
{
	unsigned int olen = FG_SYNC_MAC_LEN;

	if (HMAC(EVP_sha256(), key->k, (int)key->len, buf, len, out, &olen) == NULL)
		memset(out, 0, FG_SYNC_MAC_LEN);   /* never matches a real MAC's luck */
}

/* ---- builder ------------------------------------------------------------ */

void
fg_sync_msg_init(struct fg_sync_msg *m, uint8_t *buf, uint32_t node,
		 uint64_t epoch, uint64_t seq)
{
	memset(buf, 0, FG_SYNC_HDR_LEN);
	memcpy(buf, FG_SYNC_MAGIC, 4);
	buf[4] = FG_SYNC_VERSION;
	buf[5] = CT_REC_VERSION;
	fg_state_be32_put(buf + 8, node);
	fg_state_be64_put(buf + 16, epoch);
	fg_state_be64_put(buf + 24, seq);
	m->buf = buf;
	m->len = FG_SYNC_HDR_LEN;
	m->count = 0;
}

int
fg_sync_msg_add(struct fg_sync_msg *m, uint8_t op, const struct ct_rec *r)
{
	size_t room = FG_SYNC_MSG_MAX - FG_SYNC_MAC_LEN - m->len;
	int n;

	if (op != FG_SYNC_OP_FLOW && op != FG_SYNC_OP_CLOSE)
		return -EINVAL;
	if (room < 1 + CT_REC_LEN_MIN || m->count == UINT16_MAX)
		return -ENOSPC;
	n = ct_rec_encode(r, m->buf + m->len + 1, room - 1);
	if (n < 0)
		return n;
	m->buf[m->len] = op;
	m->len += 1 + (size_t)n;
	m->count++;
	return 0;
}

size_t
fg_sync_msg_finish(struct fg_sync_msg *m, const struct fg_sync_key *key)
{
	m->buf[6] = (uint8_t)(m->count >> 8);
	m->buf[7] = (uint8_t)m->count;
	mac_of(key, m->buf, m->len, m->buf + m->len);
	m->len += FG_SYNC_MAC_LEN;
	return m->len;
}

size_t
fg_sync_msg_status(uint8_t *buf, uint32_t node, uint64_t epoch, uint64_t seq,
		   uint8_t flags, uint32_t echo, const struct fg_sync_key *key)
{
	struct fg_sync_msg m;

	fg_sync_msg_init(&m, buf, node, epoch, seq);
	buf[4] = FG_SYNC_VERSION_STATUS;
	fg_state_be32_put(buf + 12, (uint32_t)flags << 24 |
			  (flags & FG_SYNC_ST_CAUGHT_UP ? echo & 0xffffff : 0));
	return fg_sync_msg_finish(&m, key);
}

/* ---- parser --------------------------------------------------------------- */

int
fg_sync_entry_next(const struct fg_sync_view *v, size_t *off, struct fg_sync_entry *e)
{
	int n;

	if (*off >= v->entries_len)
		return -EINVAL;
	e->op = v->entries[*off];
	if (e->op != FG_SYNC_OP_FLOW && e->op != FG_SYNC_OP_CLOSE)
		return -EINVAL;
	n = ct_rec_decode(v->entries + *off + 1, v->entries_len - *off - 1, &e->rec);
	if (n < 0)
		return -EINVAL;
	*off += 1 + (size_t)n;
	return 0;
}

enum fg_sync_refuse
fg_sync_parse(const uint8_t *buf, size_t len, const struct fg_sync_key *key,
	      struct fg_sync_view *out)
{
	uint8_t mac[FG_SYNC_MAC_LEN];
	struct fg_sync_view v;
	struct fg_sync_entry e;
	size_t off = 0;

	if (len < 4)
		return len == 0 || !memcmp(buf, FG_SYNC_MAGIC, len) ?
		       FG_SYNC_truncated : FG_SYNC_bad_magic;
	if (memcmp(buf, FG_SYNC_MAGIC, 4) != 0)
		return FG_SYNC_bad_magic;
	if (len < 6)
		return FG_SYNC_truncated;
	/* the versions first: a later format may lay out the rest otherwise */
	if ((buf[4] != FG_SYNC_VERSION && buf[4] != FG_SYNC_VERSION_STATUS) ||
	    buf[5] != CT_REC_VERSION)
		return FG_SYNC_bad_version;
	if (len < FG_SYNC_HDR_LEN + FG_SYNC_MAC_LEN)
		return FG_SYNC_truncated;
	mac_of(key, buf, len - FG_SYNC_MAC_LEN, mac);
	if (CRYPTO_memcmp(mac, buf + len - FG_SYNC_MAC_LEN, FG_SYNC_MAC_LEN) != 0)
		return FG_SYNC_bad_mac;
	v.count = (uint16_t)(buf[6] << 8 | buf[7]);
	v.node = fg_state_be32_get(buf + 8);
	v.epoch = fg_state_be64_get(buf + 16);
	v.seq = fg_state_be64_get(buf + 24);
	v.version = buf[4];
	v.status = buf[12];
	v.echo = fg_state_be32_get(buf + 12) & 0xffffff;
	v.entries = buf + FG_SYNC_HDR_LEN;
	v.entries_len = len - FG_SYNC_HDR_LEN - FG_SYNC_MAC_LEN;
	if (v.node == 0 || v.epoch == 0 || v.seq == 0)
		return FG_SYNC_bad_record;
	/* version 1: bytes 12-15 zero; a status: no entries, known flags, an
	 * echo only with FG_SYNC_ST_CAUGHT_UP */
	if (v.version == FG_SYNC_VERSION ? fg_state_be32_get(buf + 12) != 0 :
	    v.count != 0 || (v.status & ~(FG_SYNC_ST_READY | FG_SYNC_ST_CAUGHT_UP)) ||
	    (!(v.status & FG_SYNC_ST_CAUGHT_UP) && v.echo != 0))
		return FG_SYNC_bad_record;
	for (uint32_t i = 0; i < v.count; i++)
		if (fg_sync_entry_next(&v, &off, &e) < 0)
			return FG_SYNC_bad_record;
	if (off != v.entries_len)
		return FG_SYNC_bad_record;
	*out = v;
	return FG_SYNC_OK;
}

enum fg_sync_refuse
fg_sync_replay_check(struct fg_sync_replay *r, const struct fg_sync_view *v)
{
	if (v->epoch < r->epoch)
		return FG_SYNC_replay;
	if (v->epoch > r->epoch) {
		r->epoch = v->epoch;
		r->top = v->seq;
		r->seen = 1;
		return FG_SYNC_OK;
	}
	if (v->seq > r->top) {
		uint64_t d = v->seq - r->top;

		r->seen = d >= FG_SYNC_REPLAY_WIN ? 1 : (r->seen << d) | 1;
		r->top = v->seq;
		return FG_SYNC_OK;
	}
	uint64_t back = r->top - v->seq;

	if (back >= FG_SYNC_REPLAY_WIN || (r->seen >> back) & 1)
		return FG_SYNC_replay;
	r->seen |= 1ull << back;
	return FG_SYNC_OK;
}
