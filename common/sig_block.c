/* SPDX-License-Identifier: BSD-2-Clause */
/* The signature block codec (layout in sign.h): the footer and every entry decoded distrusting
 * each field, the encoder, and the block's entries kept one per public key. */
#include "sign.h"

#include <stdlib.h>
#include <string.h>

#include "bytes.h"
#include "endian.h"
#include "grow.h"
#include "sqk/error.h"

#define MAGIC_LEN 8u

/* An entry's length: its header and comment, padded to 8. */
static uint32_t entry_len(uint32_t comment_len)
{
	return (SQK_SIG_HEADER_SIZE + comment_len + 7u) & ~7u;
}

/* The block length for entries of `used` bytes in all: they and the footer, in 4 KiB. */
static uint64_t block_len_for(uint64_t used)
{
	return (used + SQK_SIG_FOOTER_SIZE + SQK_SIG_ALIGN - 1) / SQK_SIG_ALIGN * SQK_SIG_ALIGN;
}

/* Borrows tail; fills the caller's *start, *len, *image_end, *count. */
int sig_block_footer(const uint8_t tail[SQK_SIG_FOOTER_SIZE], uint64_t file_size,
		     uint64_t *start, uint64_t *len, uint64_t *image_end, uint32_t *count)
{
	bool head = !memcmp(tail, SQK_SIG_MAGIC, MAGIC_LEN);
	bool end = !memcmp(tail + SQK_SIG_FOOTER_SIZE - MAGIC_LEN, SQK_SIG_MAGIC, MAGIC_LEN);
	uint32_t n = get_le32(tail + 12);
	uint64_t l = get_le64(tail + 16), e = get_le64(tail + 24);

	if (!head && !end)
		return SQK_ENOENT;
	/* one magic in place: a damaged block, which must not pass for an unsigned image */
	if (!head || !end || get_le32(tail + 8) != SQK_SIG_VERSION ||
	    !bytes_all_zero(tail + 32, 24))
		return SQK_ECORRUPT;
	if (n < 1 || n > SQK_SIG_MAX_ENTRIES || l % SQK_SIG_ALIGN || l > SQK_SIG_BLOCK_MAX ||
	    l < block_len_for((uint64_t)n * SQK_SIG_HEADER_SIZE) ||
	    l > block_len_for((uint64_t)n * entry_len(SQK_SIG_COMMENT_MAX)))
		return SQK_ECORRUPT;
	if (file_size % SQK_SIG_ALIGN || l > file_size || e % SQK_SIG_ALIGN ||
	    e < SQK_SIG_ALIGN || e > file_size - l)
		return SQK_ECORRUPT;
	*start = file_size - l;
	*len = l;
	*image_end = e;
	*count = n;
	return 0;
}

/* UTF-8 sequence at s[0..len): its length, or 0 when it is not one (overlong, a surrogate,
 * past U+10FFFF, cut short). */
static size_t utf8_seq(const uint8_t *s, size_t len, uint32_t *cp)
{
	size_t n = s[0] < 0x80 ? 1 : s[0] >= 0xc2 && s[0] < 0xe0 ? 2 : s[0] >= 0xe0 && s[0] < 0xf0 ?
		   3 : s[0] >= 0xf0 && s[0] < 0xf5 ? 4 : 0;
	static const uint32_t least[5] = { 0, 0, 0x80, 0x800, 0x10000 };
	uint32_t c;

	if (!n || n > len)
		return 0;
	c = n == 1 ? s[0] : s[0] & (0x7f >> n);
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		c = c << 6 | (s[i] & 0x3f);
	}
	if (c < least[n] || c > 0x10ffff || (c >= 0xd800 && c < 0xe000))
		return 0;
	*cp = c;
	return n;
}

/* Borrows comment. */
int sig_comment_check(const char *comment, size_t len)
{
	const uint8_t *s = (const uint8_t *)comment;

	if (len > SQK_SIG_COMMENT_MAX)
		return SQK_EINVAL;
	for (size_t i = 0; i < len;) {
		uint32_t cp;
		size_t n = utf8_seq(s + i, len - i, &cp);

		/* C0 controls (NUL, newline, escape...), DEL and the C1 controls */
		if (!n || cp < 0x20 || (cp >= 0x7f && cp < 0xa0))
			return SQK_EINVAL;
		i += n;
	}
	return 0;
}

/* Decodes the entry at blk + at (room bytes left before the footer) into e; its length in *len. */
static int decode_entry(const uint8_t *blk, size_t at, size_t room, struct sig_entry *e,
			uint32_t *len)
{
	const uint8_t *p = blk + at;
	uint32_t l, clen;

	if (room < SQK_SIG_HEADER_SIZE)
		return SQK_ECORRUPT;
	l = get_le32(p);
	clen = get_le32(p + 48);
	if (get_le32(p + 4) != SQK_SIG_ED25519 || get_le32(p + 52) ||
	    clen > SQK_SIG_COMMENT_MAX || l != entry_len(clen) || l > room)
		return SQK_ECORRUPT;
	if (!bytes_all_zero(p + SQK_SIG_HEADER_SIZE + clen, l - SQK_SIG_HEADER_SIZE - clen) ||
	    sig_comment_check((const char *)p + SQK_SIG_HEADER_SIZE, clen))
		return SQK_ECORRUPT;
	memset(e, 0, sizeof(*e));
	e->algorithm = SQK_SIG_ED25519;
	memcpy(e->pub, p + 8, SQK_SIG_PUB_SIZE);
	e->time = get_le64(p + 40);
	memcpy(e->sig, p + 56, SQK_SIG_SIG_SIZE);
	e->comment_len = clen;
	if (clen) {
		if (!(e->comment = malloc(clen + 1)))
			return SQK_ENOMEM;
		memcpy(e->comment, p + SQK_SIG_HEADER_SIZE, clen);
		e->comment[clen] = '\0';
	}
	*len = l;
	return 0;
}

static bool has_key(const struct sig_block *b, const uint8_t pub[SQK_SIG_PUB_SIZE])
{
	for (size_t i = 0; i < b->n; i++)
		if (!memcmp(b->e[i].pub, pub, SQK_SIG_PUB_SIZE))
			return true;
	return false;
}

/* Borrows blk; fills the caller's out. */
int sig_block_decode(const uint8_t *blk, size_t len, uint64_t start, struct sig_block *out)
{
	uint64_t s, l, e;
	uint32_t count;
	size_t at = 0, room;
	int err;

	memset(out, 0, sizeof(*out));
	if (len < SQK_SIG_FOOTER_SIZE || start > UINT64_MAX - len)
		return SQK_ECORRUPT;
	err = sig_block_footer(blk + len - SQK_SIG_FOOTER_SIZE, start + len, &s, &l, &e, &count);
	if (err)
		return err;
	if (l != len || s != start)
		return SQK_ECORRUPT;
	if (!(out->e = calloc(count, sizeof(*out->e))))
		return SQK_ENOMEM;
	room = len - SQK_SIG_FOOTER_SIZE;
	for (uint32_t i = 0; i < count; i++) {
		struct sig_entry *x = &out->e[out->n];
		uint32_t el;

		if ((err = decode_entry(blk, at, room - at, x, &el)))
			return err;
		out->n++;
		if (has_key(&(struct sig_block){ .e = out->e, .n = out->n - 1 }, x->pub))
			return SQK_ECORRUPT; /* one entry per key */
		at += el;
	}
	/* nothing hides after the entries, and the block is no longer than they need */
	if (!bytes_all_zero(blk + at, room - at) || block_len_for(at) != len)
		return SQK_ECORRUPT;
	out->image_end = e;
	return 0;
}

uint64_t sig_block_len(const struct sig_block *b)
{
	uint64_t used = 0;

	for (size_t i = 0; i < b->n; i++)
		used += entry_len(b->e[i].comment_len);
	return block_len_for(used);
}

static void encode_entry(const struct sig_entry *e, uint8_t *p)
{
	put_le32(p, entry_len(e->comment_len));
	put_le32(p + 4, e->algorithm);
	memcpy(p + 8, e->pub, SQK_SIG_PUB_SIZE);
	put_le64(p + 40, e->time);
	put_le32(p + 48, e->comment_len);
	memcpy(p + 56, e->sig, SQK_SIG_SIG_SIZE);
	if (e->comment_len)
		memcpy(p + SQK_SIG_HEADER_SIZE, e->comment, e->comment_len);
}

/* Borrows b; the caller owns *out. */
int sig_block_encode(const struct sig_block *b, uint8_t **out, size_t *len)
{
	uint64_t l;
	uint8_t *buf, *f;
	size_t at = 0;

	*out = NULL;
	if (b->n < 1 || b->n > SQK_SIG_MAX_ENTRIES || b->image_end % SQK_SIG_ALIGN ||
	    b->image_end < SQK_SIG_ALIGN)
		return SQK_EINVAL;
	for (size_t i = 0; i < b->n; i++)
		if (b->e[i].algorithm != SQK_SIG_ED25519 ||
		    (b->e[i].comment_len && !b->e[i].comment) ||
		    sig_comment_check(b->e[i].comment, b->e[i].comment_len) ||
		    has_key(&(struct sig_block){ .e = b->e, .n = i }, b->e[i].pub))
			return SQK_EINVAL;
	l = sig_block_len(b);
	if (!(buf = calloc(1, (size_t)l)))
		return SQK_ENOMEM;
	for (size_t i = 0; i < b->n; i++) {
		encode_entry(&b->e[i], buf + at);
		at += entry_len(b->e[i].comment_len);
	}
	f = buf + l - SQK_SIG_FOOTER_SIZE;
	memcpy(f, SQK_SIG_MAGIC, MAGIC_LEN);
	put_le32(f + 8, SQK_SIG_VERSION);
	put_le32(f + 12, (uint32_t)b->n);
	put_le64(f + 16, l);
	put_le64(f + 24, b->image_end);
	memcpy(f + SQK_SIG_FOOTER_SIZE - MAGIC_LEN, SQK_SIG_MAGIC, MAGIC_LEN);
	*out = buf;
	*len = (size_t)l;
	return 0;
}

/* A deep copy of e into the caller's x. */
static int copy_entry(struct sig_entry *x, const struct sig_entry *e)
{
	char *c = NULL;

	if (e->comment_len) {
		if (!(c = malloc(e->comment_len + 1)))
			return SQK_ENOMEM;
		memcpy(c, e->comment, e->comment_len);
		c[e->comment_len] = '\0';
	}
	*x = *e;
	x->comment = c;
	return 0;
}

/* Borrows e. */
int sig_block_set(struct sig_block *b, const struct sig_entry *e)
{
	size_t i = 0, cap = b->n;
	struct sig_entry x;
	int err;

	while (i < b->n && memcmp(b->e[i].pub, e->pub, SQK_SIG_PUB_SIZE))
		i++;
	if (i == b->n && b->n >= SQK_SIG_MAX_ENTRIES)
		return SQK_ETOOBIG;
	if (i == b->n && mem_grow(&b->e, &cap, b->n + 1, sizeof(*b->e), 0))
		return SQK_ENOMEM;
	if ((err = copy_entry(&x, e)))
		return err;
	if (i < b->n)
		sig_entry_clear(&b->e[i]);
	else
		b->n++;
	b->e[i] = x;
	return 0;
}

bool sig_block_remove(struct sig_block *b, const uint8_t id[SQK_SIG_ID_SIZE])
{
	uint8_t k[SQK_SIG_ID_SIZE];

	for (size_t i = 0; i < b->n; i++) {
		sig_key_id(b->e[i].pub, k);
		if (memcmp(k, id, SQK_SIG_ID_SIZE))
			continue;
		sig_entry_clear(&b->e[i]);
		memmove(&b->e[i], &b->e[i + 1], (b->n - i - 1) * sizeof(*b->e));
		b->n--;
		return true;
	}
	return false;
}

void sig_entry_clear(struct sig_entry *e)
{
	if (!e)
		return;
	free(e->comment);
	memset(e, 0, sizeof(*e));
}

void sig_block_free(struct sig_block *b)
{
	if (!b)
		return;
	for (size_t i = 0; i < b->n; i++)
		sig_entry_clear(&b->e[i]);
	free(b->e);
	memset(b, 0, sizeof(*b));
}

/* Borrows io; fills the caller's out and *start. */
int sig_block_read(struct sqk_io *io, uint64_t file_size, struct sig_block *out,
		   uint64_t *start)
{
	uint8_t tail[SQK_SIG_FOOTER_SIZE], *blk;
	uint64_t s, l, e;
	uint32_t n;
	int err;

	memset(out, 0, sizeof(*out));
	if (file_size < SQK_SIG_FOOTER_SIZE)
		return SQK_ENOENT;
	err = sqk_io_read_at(io, file_size - SQK_SIG_FOOTER_SIZE, tail, sizeof(tail));
	if (!err)
		err = sig_block_footer(tail, file_size, &s, &l, &e, &n);
	if (err)
		return err;
	if (!(blk = malloc((size_t)l)))
		return SQK_ENOMEM;
	err = sqk_io_read_at(io, s, blk, (size_t)l);
	if (!err)
		err = sig_block_decode(blk, (size_t)l, s, out);
	free(blk);
	if (!err)
		*start = s;
	return err;
}
