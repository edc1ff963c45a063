/* zstd codec (SquashFS id 6): one zstd frame per block. The compression and decompression
 * contexts are created with the instance and reused for every block. */
#include <stdlib.h>
#include <zstd.h>
#include <zstd_errors.h>

#include "comp_internal.h"
#include "error.h"

struct sqk_zstd {
	struct sqk_compressor base;
	ZSTD_CCtx *cctx;
	ZSTD_DCtx *dctx;
	int level;
};

static ssize_t zstd_compress(struct sqk_compressor *c, const void *in, size_t in_len, void *out,
			     size_t out_cap)
{
	struct sqk_zstd *z = (struct sqk_zstd *)c;
	size_t limit = sqk_comp_limit(in_len, out_cap);
	size_t n;

	if (limit == 0)
		return 0;
	n = ZSTD_compressCCtx(z->cctx, out, limit, in, in_len, z->level);
	if (ZSTD_isError(n))
		return ZSTD_getErrorCode(n) == ZSTD_error_dstSize_tooSmall ? 0 : SQK_ECOMPRESS;
	return n < in_len ? (ssize_t)n : 0;
}

static ssize_t zstd_decompress(struct sqk_compressor *c, const void *in, size_t in_len, void *out,
			       size_t out_cap)
{
	struct sqk_zstd *z = (struct sqk_zstd *)c;
	size_t n;

	if (in_len == 0)
		return SQK_EDECOMPRESS;
	n = ZSTD_decompressDCtx(z->dctx, out, out_cap, in, in_len);
	if (ZSTD_isError(n)) {
		if (ZSTD_getErrorCode(n) == ZSTD_error_memory_allocation)
			return SQK_ENOMEM;
		return SQK_EDECOMPRESS;
	}
	return n <= out_cap ? (ssize_t)n : SQK_EDECOMPRESS;
}

static void zstd_destroy(struct sqk_compressor *c)
{
	struct sqk_zstd *z = (struct sqk_zstd *)c;

	ZSTD_freeCCtx(z->cctx);
	ZSTD_freeDCtx(z->dctx);
	free(z);
}

static const struct sqk_comp_ops zstd_ops = {
	.compress = zstd_compress,
	.decompress = zstd_decompress,
	.destroy = zstd_destroy,
};

/* Borrows cfg (copied); caller owns *out. */
int sqk_zstd_create(const struct sqk_comp_config *cfg, struct sqk_compressor **out)
{
	struct sqk_zstd *z = calloc(1, sizeof(*z));

	*out = NULL;
	if (!z)
		return SQK_ENOMEM;
	z->base.ops = &zstd_ops;
	z->base.cfg = *cfg;
	z->level = sqk_zstd_level(cfg);
	z->cctx = ZSTD_createCCtx();
	z->dctx = ZSTD_createDCtx();
	if (!z->cctx || !z->dctx) {
		zstd_destroy(&z->base);
		return SQK_ENOMEM;
	}
	*out = &z->base;
	return 0;
}
