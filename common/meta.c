/* SPDX-License-Identifier: BSD-2-Clause */
/* Metadata blocks: the writer side accumulates a stream (inodes, directories, lookup tables) as
 * encoded 8 KiB blocks in memory; the reader side decodes and validates one block at a time,
 * applying the kernel's checks. */
#include "meta.h"

#include <stdlib.h>
#include <string.h>

#include "endian.h"
#include "sqk/error.h"
#include "grow.h"

#define META_HEADER 2u
#define META_LEN_MASK 0x7FFFu

/* Borrows comp (may be NULL: every block stored raw). */
void meta_writer_init(struct meta_writer *w, struct compressor *comp)
{
	memset(w, 0, sizeof(*w));
	w->comp = comp;
}

/* Frees what w owns; w may be initialised again. */
void meta_writer_free(struct meta_writer *w)
{
	free(w->out);
	w->out = NULL;
	w->out_len = 0;
	w->out_cap = 0;
	w->drained = 0;
	w->pending_len = 0;
	w->nblocks = 0;
}

/* Makes room for one more encoded block (header + at most a full raw payload). */
static int writer_reserve(struct meta_writer *w)
{
	size_t need = w->out_len + META_HEADER + SQK_META_SIZE;
	size_t first = 4 * (META_HEADER + SQK_META_SIZE);

	if (need < w->out_len)
		return SQK_EOVERFLOW;
	return mem_grow(&w->out, &w->out_cap, need < first ? first : need, 1, 0);
}

/* Encodes the pending bytes as the next block. */
static int writer_flush(struct meta_writer *w)
{
	ssize_t n;
	int rc = writer_reserve(w);

	if (rc)
		return rc;
	n = meta_encode_block(w->comp, w->pending, w->pending_len, w->out + w->out_len);
	if (n < 0)
		return (int)n;
	w->out_len += (size_t)n;
	w->pending_len = 0;
	w->nblocks++;
	return 0;
}

/* Borrows data. */
int meta_writer_append(struct meta_writer *w, const void *data, size_t len)
{
	const uint8_t *p = data;

	if (w->error)
		return w->error;
	while (len > 0) {
		size_t n = SQK_META_SIZE - w->pending_len;

		if (n > len)
			n = len;
		memcpy(w->pending + w->pending_len, p, n);
		w->pending_len += n;
		p += n;
		len -= n;
		if (w->pending_len == SQK_META_SIZE) {
			w->error = writer_flush(w);
			if (w->error)
				return w->error;
		}
	}
	return 0;
}

/* Flushes the partial last block; w keeps owning the encoded stream. */
int meta_writer_finish(struct meta_writer *w)
{
	if (w->error)
		return w->error;
	if (w->pending_len > 0)
		w->error = writer_flush(w);
	return w->error;
}

/* Borrows comp, in and out; out holds at least 2 + len bytes. */
ssize_t meta_encode_block(struct compressor *comp, const void *in, size_t len,
			      uint8_t *out)
{
	ssize_t n = 0;

	if (len == 0 || len > SQK_META_SIZE)
		return SQK_EINVAL;
	if (comp) {
		n = comp_compress(comp, in, len, out + META_HEADER, len);
		if (n < 0)
			return n;
	}
	/* unsquashfs rejects a compressed block that is not smaller than its content */
	if (n > 0 && (size_t)n < len) {
		put_le16(out, (uint16_t)n);
		return (ssize_t)META_HEADER + n;
	}
	memcpy(out + META_HEADER, in, len);
	put_le16(out, (uint16_t)(SQK_META_RAW | len));
	return (ssize_t)(META_HEADER + len);
}

/* Payload length of the block at buf, after checking that it lies within avail. */
static int decode_header(const uint8_t *buf, size_t avail, size_t *len, int *raw)
{
	uint16_t hdr;

	if (avail < META_HEADER)
		return SQK_ECORRUPT;
	hdr = get_le16(buf);
	*len = hdr & META_LEN_MASK;
	*raw = (hdr & SQK_META_RAW) != 0;
	if (*len == 0 || *len > SQK_META_SIZE || *len > avail - META_HEADER)
		return SQK_ECORRUPT;
	return 0;
}

/* Borrows comp, buf and out; out holds at least 8192 bytes. */
ssize_t meta_decode_block(struct compressor *comp, const uint8_t *buf, size_t avail,
			      uint8_t *out, size_t expected, size_t *used)
{
	size_t len;
	ssize_t n;
	int raw, rc;

	if (expected > SQK_META_SIZE)
		return SQK_EINVAL;
	rc = decode_header(buf, avail, &len, &raw);
	if (rc)
		return rc;
	if (raw) {
		if (expected && len != expected)
			return SQK_ECORRUPT;
		memcpy(out, buf + META_HEADER, len);
		n = (ssize_t)len;
	} else {
		if (!comp)
			return SQK_EINVAL;
		n = comp_decompress(comp, buf + META_HEADER, len, out, SQK_META_SIZE);
		if (n < 0)
			return n;
		if (n == 0 || (expected && (size_t)n != expected))
			return SQK_EDECOMPRESS;
	}
	*used = META_HEADER + len;
	return n;
}
