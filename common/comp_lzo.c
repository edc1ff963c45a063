/* SPDX-License-Identifier: BSD-2-Clause */
/* lzo codec (SquashFS id 3): one raw LZO1X stream per block (no header), made by one of
 * mksquashfs's algorithms (lzo1x_1, lzo1x_1_11, lzo1x_1_12, lzo1x_1_15, lzo1x_999 at a level)
 * and decoded with lzo1x_decompress_safe, as the kernel does. liblzo2 takes no output bound
 * when compressing, so a block is compressed into a worst-case buffer owned by the instance and
 * copied out only when it is smaller than the input. The compression work memory is allocated
 * at the first compression: reader instances never need it. */
#include <lzo/lzo1x.h>
#include <lzo/lzoconf.h>
#include <stdlib.h>
#include <string.h>

#include "comp_internal.h"
#include "sqk/error.h"

struct lzo {
	struct compressor base;
	int algorithm; /* enum sqk_lzo_algorithm, never SQK_LZO_DEFAULT */
	int level;     /* lzo1x_999 only */
	void *wrkmem;
	struct comp_scratch out;   /* worst-case compressor output */
	struct comp_scratch plain; /* lzo1x_optimize's decoded copy of the block */
};

/* LZO's documented worst case for incompressible input. */
static size_t lzo_bound(size_t len)
{
	return len + len / 16 + 64 + 3;
}

static size_t lzo_wrkmem_size(int algorithm)
{
	switch (algorithm) {
	case SQK_LZO1X_1: return LZO1X_1_MEM_COMPRESS;
	case SQK_LZO1X_1_11: return LZO1X_1_11_MEM_COMPRESS;
	case SQK_LZO1X_1_12: return LZO1X_1_12_MEM_COMPRESS;
	case SQK_LZO1X_1_15: return LZO1X_1_15_MEM_COMPRESS;
	default: return LZO1X_999_MEM_COMPRESS;
	}
}

static int scratch_reserve(struct comp_scratch *s, size_t len)
{
	uint8_t *p;

	if (len <= s->cap)
		return 0;
	p = realloc(s->buf, len); /* exactly len (a byte size), not mem_grow */
	if (!p)
		return SQK_ENOMEM;
	s->buf = p;
	s->cap = len;
	return 0;
}

/* Work memory and the worst-case output buffer for blocks of in_len bytes. */
static int lzo_reserve(struct lzo *l, size_t in_len)
{
	if (!l->wrkmem) {
		l->wrkmem = malloc(lzo_wrkmem_size(l->algorithm));
		if (!l->wrkmem)
			return SQK_ENOMEM;
	}
	if (scratch_reserve(&l->out, lzo_bound(in_len)))
		return SQK_ENOMEM;
	return scratch_reserve(&l->plain, in_len);
}

/* liblzo2 declares its sources as `const lzo_bytep` (a const pointer to non-const bytes):
 * the casts below drop a const that liblzo2 does honour, it only reads the source. */
static int lzo_run(struct lzo *l, const void *src, size_t in_len, lzo_uint *n)
{
	lzo_bytep in = (lzo_bytep)src; /* lzo_bytep is a macro: one declarator each */
	lzo_bytep out = l->out.buf;

	switch (l->algorithm) {
	case SQK_LZO1X_1: return lzo1x_1_compress(in, in_len, out, n, l->wrkmem);
	case SQK_LZO1X_1_11: return lzo1x_1_11_compress(in, in_len, out, n, l->wrkmem);
	case SQK_LZO1X_1_12: return lzo1x_1_12_compress(in, in_len, out, n, l->wrkmem);
	case SQK_LZO1X_1_15: return lzo1x_1_15_compress(in, in_len, out, n, l->wrkmem);
	default:
		return lzo1x_999_compress_level(in, in_len, out, n, l->wrkmem, NULL, 0, 0,
						l->level);
	}
}

/* As mksquashfs: the stream is then rewritten by lzo1x_optimize (same length, faster to
 * decode), which decodes it again into a copy of the block: a check of the result too. */
static ssize_t lzo_compress(struct compressor *c, const void *in, size_t in_len, void *out,
			    size_t out_cap)
{
	struct lzo *l = (struct lzo *)c;
	size_t limit = comp_limit(in_len, out_cap);
	lzo_uint n = 0, back = in_len;
	int rc;

	if (limit == 0)
		return 0;
	rc = lzo_reserve(l, in_len);
	if (rc)
		return rc;
	if (lzo_run(l, in, in_len, &n) != LZO_E_OK)
		return SQK_ECOMPRESS;
	if (n > limit)
		return 0;
	rc = lzo1x_optimize(l->out.buf, n, l->plain.buf, &back, NULL);
	if (rc != LZO_E_OK || back != in_len || memcmp(l->plain.buf, in, in_len) != 0)
		return SQK_ECOMPRESS;
	memcpy(out, l->out.buf, n);
	return (ssize_t)n;
}

static ssize_t lzo_decompress(struct compressor *c, const void *in, size_t in_len, void *out,
			      size_t out_cap)
{
	lzo_uint n = out_cap; /* the output bound lzo1x_decompress_safe enforces */
	int rc;

	(void)c;
	if (in_len == 0)
		return SQK_EDECOMPRESS;
	/* Anything but LZO_E_OK (overruns, trailing input, no end marker) is an error, as in the
	 * kernel. */
	rc = lzo1x_decompress_safe((lzo_bytep)in, in_len, out, &n, NULL);
	if (rc != LZO_E_OK || n > out_cap)
		return SQK_EDECOMPRESS;
	return (ssize_t)n;
}

static void lzo_destroy(struct compressor *c)
{
	struct lzo *l = (struct lzo *)c;

	free(l->wrkmem);
	free(l->out.buf);
	free(l->plain.buf);
	free(l);
}

static const struct comp_ops lzo_ops = {
	.compress = lzo_compress,
	.decompress = lzo_decompress,
	.destroy = lzo_destroy,
};

/* Borrows cfg (copied); caller owns *out. */
int lzo_create(const struct sqk_comp_config *cfg, struct compressor **out)
{
	struct lzo *l;

	*out = NULL;
	if (lzo_init() != LZO_E_OK) /* liblzo2 built for another ABI */
		return SQK_EUNSUPPORTED;
	l = calloc(1, sizeof(*l));
	if (!l)
		return SQK_ENOMEM;
	l->base.ops = &lzo_ops;
	l->base.cfg = *cfg;
	l->algorithm = sqk_lzo_algorithm(cfg);
	l->level = lzo_level(cfg);
	*out = &l->base;
	return 0;
}
