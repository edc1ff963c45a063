/* SPDX-License-Identifier: BSD-2-Clause */
/* Regular file reads: block index → block cache (with batched readahead when the file is read
 * sequentially) → copy into the caller's buffer. Sparse blocks are zeros without I/O; the tail
 * comes from the fragment block; nothing past the end of the file is ever returned. */
#include <limits.h>
#include <string.h>

#include "internal.h"

static int read_block(struct sqk_image *img, struct findex *fi, uint32_t k, bool seq,
		      uint8_t *dst, size_t boff, size_t n)
{
	uint32_t w = fi->words[k];
	struct cblock *b = NULL;
	int rc = 0;

	if (w == 0) {
		memset(dst, 0, n);
		return 0;
	}
	if (seq && img->readahead > 1) {
		rc = img_readahead(img, fi, k, &b);
		if (rc == 0) /* in flight: decode it here if no worker has started it */
			ra_steal(img, findex_pos(fi, k));
	}
	if (rc < 0)
		return rc;
	if (!b)
		rc = data_block(img, findex_pos(fi, k), w, SQK_BK_DATA,
				    findex_expected(img, fi, k), fi->ino, &b);
	if (rc < 0)
		return rc;
	if (boff + n > b->len) {
		cache_put(img->cache, b);
		return SQK_ECORRUPT;
	}
	memcpy(dst, b->data + boff, n);
	cache_put(img->cache, b);
	return 0;
}

static int read_frag(struct sqk_image *img, struct findex *fi, uint8_t *dst, size_t boff,
		     size_t n)
{
	uint64_t tail = fi->size % img->sb.block_size;
	uint64_t need = (uint64_t)fi->frag_offset + tail;
	const struct frag_entry *e;
	struct cblock *b;
	int rc;

	if (fi->frag_index >= img->sb.fragment_count)
		return SQK_ECORRUPT;
	e = &img->frags[fi->frag_index];
	if (need > img->sb.block_size || e->size == 0) {
		img_logf(img, "fragment %u of inode %u is out of range", fi->frag_index, fi->ino);
		return SQK_ECORRUPT;
	}
	rc = data_block(img, e->start, e->size, SQK_BK_FRAG, (size_t)need, fi->ino, &b);
	if (rc)
		return rc;
	memcpy(dst, b->data + fi->frag_offset + boff, n);
	cache_put(img->cache, b);
	return 0;
}

/* A read at off continues fi's sequential stream: it starts in the first block, or where the
 * previous (not aside) read ended. */
static bool continues(const struct sqk_image *img, struct findex *fi, uint64_t off)
{
	return off < img->sb.block_size || off == atomic_load(&fi->next_off);
}

/* file is borrowed. */
bool sqk_read_sequential(struct sqk_image *img, const struct sqk_inode *file, uint64_t off)
{
	struct findex *fi;
	bool seq;

	if (sqk_basic_type(file->type) != SQK_T_FILE)
		return false;
	if (off < img->sb.block_size)
		return true; /* without building the block index */
	if (findex_get(img, file, &fi))
		return false;
	seq = continues(img, fi, off);
	findex_put(img, fi);
	return seq;
}

/* Copies into the caller's buf; file is borrowed. */
ssize_t sqk_read(struct sqk_image *img, const struct sqk_inode *file, void *buf, size_t len,
		 uint64_t off)
{
	return sqk_read_ex(img, file, buf, len, off, 0);
}

/* Copies into the caller's buf; file is borrowed. */
ssize_t sqk_read_ex(struct sqk_image *img, const struct sqk_inode *file, void *buf, size_t len,
		    uint64_t off, unsigned flags)
{
	return sqk_read_stream(img, file, buf, len, off, flags, NULL);
}

/* Copies into the caller's buf; file is borrowed; *sequential (may be NULL) is the caller's. */
ssize_t sqk_read_stream(struct sqk_image *img, const struct sqk_inode *file, void *buf, size_t len,
			uint64_t off, unsigned flags, bool *sequential)
{
	uint64_t bs = img->sb.block_size;
	struct findex *fi;
	size_t done = 0;
	bool seq;
	int rc;

	if (sequential)
		*sequential = true; /* nothing read: nothing to fill around */
	if (sqk_basic_type(file->type) != SQK_T_FILE)
		return SQK_EINVAL;
	if (off >= file->size)
		return 0;
	if (len > file->size - off)
		len = (size_t)(file->size - off);
	if (len > SSIZE_MAX)
		len = SSIZE_MAX;
	rc = findex_get(img, file, &fi);
	if (rc)
		return rc;
	seq = !(flags & SQK_READ_ASIDE) && continues(img, fi, off);
	if (sequential)
		*sequential = seq;
	if (!(flags & SQK_READ_ASIDE))
		stream_begin(img, fi, off, seq);
	/* Remote images: a file's first read within its first block fetches just that block (a
	 * 4 KiB read of a cold file costs one or two chunks); its next read starts readahead. */
	if (seq && img->lazy_first && off + len <= bs && atomic_load(&fi->next_off) == 0)
		seq = false;
	/* the blocks after this request, on the workers */
	if (seq && img->readahead > 1 && len > 0)
		img_prefetch(img, fi, (uint32_t)((off + len - 1) / bs + 1));
	while (done < len && rc == 0) {
		uint64_t cur = off + done, k = cur / bs;
		size_t boff = (size_t)(cur % bs);
		size_t n = bs - boff < len - done ? (size_t)(bs - boff) : len - done;

		if (k < fi->nblocks)
			rc = read_block(img, fi, (uint32_t)k, seq, (uint8_t *)buf + done, boff, n);
		else
			rc = read_frag(img, fi, (uint8_t *)buf + done, boff, n);
		done += n;
	}
	if (rc == 0 && !(flags & SQK_READ_ASIDE)) {
		atomic_store(&fi->next_off, off + done);
		stream_end(img, fi, off + done);
	}
	findex_put(img, fi);
	return rc ? rc : (ssize_t)done;
}
