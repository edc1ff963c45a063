/* SPDX-License-Identifier: BSD-2-Clause */
/* Block loading: the compressor pool (instances are not thread-safe, so each caller borrows one),
 * positional reads of the image (verified when asked, see verified_reads.c), and the
 * decode-and-validate step of data, fragment and metadata blocks on their way into the shared
 * cache. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/grow.h"
#include "internal.h"
#include "common/meta.h"

/* Formats a message prefixed with the image name and hands it to the log callback. */
void img_logf(struct sqk_image *img, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	int n;

	if (!img->log)
		return;
	n = snprintf(msg, sizeof(msg), "%s: ", img->name ? img->name : "image");
	va_start(ap, fmt);
	vsnprintf(msg + n, sizeof(msg) - (size_t)n, fmt, ap);
	va_end(ap);
	img->log(img->log_ctx, msg);
}

/* Reads len bytes at image position pos (superblock-relative); buf is borrowed. */
int img_read(struct sqk_image *img, uint64_t pos, void *buf, size_t len)
{
	return img_read_ino(img, pos, buf, len, 0);
}

/* Like img_read, for bytes of inode ino (named when verification fails; 0 = none). */
int img_read_ino(struct sqk_image *img, uint64_t pos, void *buf, size_t len, uint32_t ino)
{
	int rc = img_read_raw(img, pos, buf, len);

	return rc ? rc : verify_range(img, pos, buf, len, ino);
}

/* Reads without verification (the caller verifies: readahead spreads it over its workers). */
int img_read_raw(struct sqk_image *img, uint64_t pos, void *buf, size_t len)
{
	return img_read_raw_ahead(img, pos, buf, len, NULL);
}

/* img_read_raw telling the io how far it may fetch ahead (ahead borrowed, NULL = not). */
int img_read_raw_ahead(struct sqk_image *img, uint64_t pos, void *buf, size_t len,
			   const struct sqk_io_ahead *ahead)
{
	int rc;

	if (pos > img->file_size || len > img->file_size - pos)
		return SQK_EBOUNDS;
	rc = sqk_io_read_ahead(img->io, img->base + pos, buf, len, ahead);
	if (rc) {
		img_logf(img, "read of %zu bytes at offset %llu failed: %s", len,
			 (unsigned long long)pos, sqk_strerror(rc));
		return rc;
	}
	atomic_fetch_add(&img->st.bytes, len);
	return 0;
}

/* Borrows a compressor instance (created on first need); give it back with pool_put. */
int pool_get(struct sqk_image *img, struct compressor **out)
{
	struct comp_pool *p = &img->pool;

	pthread_mutex_lock(&p->mu);
	*out = p->nfree ? p->free[--p->nfree] : NULL;
	pthread_mutex_unlock(&p->mu);
	if (*out)
		return 0;
	return compressor_create(&img->comp, out);
}

/* Returns c to the pool (the pool then owns it). */
void pool_put(struct sqk_image *img, struct compressor *c)
{
	struct comp_pool *p = &img->pool;

	pthread_mutex_lock(&p->mu);
	if (mem_grow(&p->free, &p->cap, p->nfree + 1, sizeof(*p->free), 0)) {
		pthread_mutex_unlock(&p->mu);
		compressor_destroy(c);
		return;
	}
	p->free[p->nfree++] = c;
	pthread_mutex_unlock(&p->mu);
}

/* Destroys every pooled instance. */
void pool_free(struct comp_pool *p)
{
	for (size_t i = 0; i < p->nfree; i++)
		compressor_destroy(p->free[i]);
	free(p->free);
	p->free = NULL;
	p->nfree = p->cap = 0;
}

static const char *kind_name(int kind)
{
	return kind == SQK_BK_FRAG ? "fragment block" : "data block";
}

/* Checks a data/fragment size word: reserved bits clear, length <= block_size, inside the image. */
int check_word(struct sqk_image *img, uint64_t pos, uint32_t word, uint32_t ino)
{
	uint32_t len = word & SQK_BLOCK_SIZE_MASK;

	if ((word & ~(SQK_BLOCK_SIZE_MASK | SQK_BLOCK_RAW)) || len > img->sb.block_size ||
	    pos > img->sb.bytes_used || len > img->sb.bytes_used - pos) {
		img_logf(img, "bad block size word 0x%08x at offset %llu (inode %u)", word,
			 (unsigned long long)pos, ino);
		return SQK_ECORRUPT;
	}
	return 0;
}

/* Validates a cached block's length against what this reader expects of it. Data blocks must
 * have exactly `expected` bytes; fragment blocks at least `expected`. */
int check_len(struct sqk_image *img, struct cblock *b, int kind, size_t expected,
		  uint32_t ino)
{
	if (kind == SQK_BK_DATA ? b->len == expected : b->len >= expected)
		return 0;
	img_logf(img, "%s at offset %llu decompressed to %zu bytes, expected %s%zu (inode %u)",
		 kind_name(kind), (unsigned long long)b->pos, b->len,
		 kind == SQK_BK_DATA ? "" : "at least ", expected, ino);
	return SQK_EDECOMPRESS;
}

/* Decodes the stored block src (size word `word`) and fills the claimed cache entry b. */
int decode_data(struct sqk_image *img, const uint8_t *src, uint32_t word, int kind,
		    size_t expected, uint64_t pos, uint32_t ino, struct cblock *b)
{
	size_t len = word & SQK_BLOCK_SIZE_MASK, cap = img->sb.block_size;
	uint8_t *out = cache_buf(img->cache);
	struct compressor *c;
	ssize_t n = SQK_ENOMEM;
	int rc;

	if (out && (word & SQK_BLOCK_RAW)) {
		memcpy(out, src, len);
		n = (ssize_t)len;
	} else if (out && (n = pool_get(img, &c)) == 0) {
		n = comp_decompress(c, src, len, out, cap);
		pool_put(img, c);
	}
	if (n < 0) {
		img_logf(img, "%s at offset %llu (inode %u) does not decompress: %s",
			 kind_name(kind), (unsigned long long)pos, ino, sqk_strerror((int)n));
		cache_fill(img->cache, b, out, 0, 0, (int)n);
		return (int)n;
	}
	atomic_fetch_add(kind == SQK_BK_DATA ? &img->st.data : &img->st.frag, 1);
	b->len = (size_t)n;
	rc = check_len(img, b, kind, expected, ino);
	cache_fill(img->cache, b, out, (size_t)n, len, rc);
	return rc;
}

/* Reads and verifies a data or fragment block's stored bytes; during a walk through the image
 * the io may fetch ahead of it. */
static int read_block_bytes(struct sqk_image *img, uint64_t pos, void *buf, size_t len,
			    uint32_t ino)
{
	struct sqk_io_ahead tmp;
	int rc = img_read_raw_ahead(img, pos, buf, len,
					stream_ahead(img, NULL, pos, &tmp));

	return rc ? rc : verify_range(img, pos, buf, len, ino);
}

/* Gets the data or fragment block at pos, decoded and length-checked. Caller owns a reference
 * on *out (cache_put). */
int data_block(struct sqk_image *img, uint64_t pos, uint32_t word, int kind, size_t expected,
		   uint32_t ino, struct cblock **out)
{
	size_t len = word & SQK_BLOCK_SIZE_MASK;
	struct cblock *b;
	uint8_t *src;
	int rc = check_word(img, pos, word, ino);

	if (rc)
		return rc;
	rc = cache_get(img->cache, pos, kind, true, &b);
	if (rc == SQK_CACHE_HIT) {
		atomic_fetch_add(&img->st.hits, 1);
		rc = check_len(img, b, kind, expected, ino);
		goto done;
	}
	if (rc < 0)
		return rc;
	atomic_fetch_add(&img->st.misses, 1);
	src = malloc(len ? len : 1);
	rc = src ? read_block_bytes(img, pos, src, len, ino) : SQK_ENOMEM;
	if (rc)
		cache_fill(img->cache, b, NULL, 0, 0, rc);
	else
		rc = decode_data(img, src, word, kind, expected, pos, ino, b);
	free(src);
done:
	if (rc) {
		cache_put(img->cache, b);
		return rc;
	}
	*out = b;
	return 0;
}

static int load_meta(struct sqk_image *img, uint64_t pos, uint64_t end, struct cblock *b)
{
	size_t avail = (size_t)(end - pos < 2 + SQK_META_SIZE ? end - pos : 2 + SQK_META_SIZE);
	uint8_t *src = malloc(avail), *out = malloc(SQK_META_SIZE);
	struct compressor *c = NULL;
	size_t used = 0;
	ssize_t n = src && out ? 0 : SQK_ENOMEM;

	if (n == 0)
		n = img_read(img, pos, src, avail);
	if (n == 0)
		n = pool_get(img, &c);
	if (n == 0) {
		n = meta_decode_block(c, src, avail, out, 0, &used);
		pool_put(img, c);
		if (n < 0)
			img_logf(img, "bad metadata block at offset %llu: %s",
				 (unsigned long long)pos, sqk_strerror((int)n));
	}
	free(src);
	if (n > 0)
		atomic_fetch_add(&img->st.meta, 1);
	cache_fill(img->cache, b, out, n > 0 ? (size_t)n : 0, used, n < 0 ? (int)n : 0);
	return n < 0 ? (int)n : 0;
}

/* Gets the metadata block whose header is at pos (the table ends at end). Caller owns a
 * reference on *out. */
int meta_block(struct sqk_image *img, uint64_t pos, uint64_t end, struct cblock **out)
{
	struct cblock *b;
	int rc;

	if (end > img->sb.bytes_used || pos >= end || end - pos < 3) {
		img_logf(img, "metadata block at offset %llu is outside its table",
			 (unsigned long long)pos);
		return SQK_ECORRUPT;
	}
	rc = cache_get(img->cache, pos, SQK_BK_META, true, &b);
	if (rc == SQK_CACHE_HIT) {
		atomic_fetch_add(&img->st.hits, 1);
		if (pos + b->stored > end) {
			cache_put(img->cache, b);
			return SQK_ECORRUPT;
		}
		*out = b;
		return 0;
	}
	if (rc < 0)
		return rc;
	atomic_fetch_add(&img->st.misses, 1);
	rc = load_meta(img, pos, end, b);
	if (rc) {
		cache_put(img->cache, b);
		return rc;
	}
	*out = b;
	return 0;
}

/* Reads len bytes of a metadata stream at cursor c (buf NULL = skip), advancing it across
 * blocks. A block that ends before the stream does must hold exactly 8192 bytes. */
int meta_read(struct sqk_image *img, struct mcur *c, void *buf, size_t len)
{
	uint8_t *dst = buf;

	while (len > 0) {
		struct cblock *b;
		size_t n;
		int rc = meta_block(img, c->pos, c->end, &b);

		if (rc)
			return rc;
		if (c->off >= b->len) {
			bool full = b->len == SQK_META_SIZE && c->off == b->len;

			c->pos += b->stored;
			c->off = 0;
			cache_put(img->cache, b);
			if (!full) {
				img_logf(img, "metadata read past the end of block at offset %llu",
					 (unsigned long long)(c->pos));
				return SQK_ECORRUPT;
			}
			continue;
		}
		n = b->len - c->off < len ? b->len - c->off : len;
		if (dst) {
			memcpy(dst, b->data + c->off, n);
			dst += n;
		}
		c->off += (uint32_t)n;
		len -= n;
		cache_put(img->cache, b);
	}
	return 0;
}
