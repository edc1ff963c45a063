/* SPDX-License-Identifier: BSD-2-Clause */
/* zstd codec (SquashFS id 6): one zstd frame per block. The compression and decompression
 * contexts are created with the instance and reused for every block. Three ways of not spending
 * work that cannot pay (all decode with any zstd decoder; none is stored in the image): the
 * default level is level 15 with a shallower match search (searchLog two below level 15's for
 * the block's size: much less CPU for hardly more bytes); a block whose sampled bytes are
 * near-uniform (already compressed data) is compressed at level 9 at most, which on such data
 * is about as small as level 15 for far less CPU; and at the default level, a block whose
 * sampled bytes are mostly one or two values (zero-filled tables, padding, bitmaps) is
 * compressed at level 9 too, which on such data is both smaller and faster than the default
 * level. The figures are in the commit messages that made each choice. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#define ZSTD_STATIC_LINKING_ONLY /* ZSTD_getCParams: exported by libzstd 1.4 and later */
#include <zstd.h>
#include <zstd_errors.h>

#include "comp_internal.h"
#include "sqk/error.h"

struct zstd {
	struct compressor base;
	ZSTD_CCtx *cctx;
	ZSTD_CCtx *flat; /* level 9: near-uniform and peaked blocks; NULL until one comes */
	ZSTD_DCtx *dctx;
	int level;
	bool tuned;                 /* the default level: searchLog lowered */
};

/* Near-uniform blocks (compressed data) are compressed at this level at most. */
#define ZSTD_FLAT_LEVEL 9
/* Shorter blocks are always compressed at the instance's level. */
#define ZSTD_FLAT_MIN 4096u

enum block_kind { BLOCK_PLAIN, BLOCK_FLAT, BLOCK_PEAKED };

/* What every 4th byte of in says of the block: FLAT when they spread so evenly over the 256
 * values that no bin holds more than 1.5 times its share (true of compressed or encrypted
 * data, false of text, code and most binaries); PEAKED when two bytes drawn at random are the
 * same value at least half the time (the sum of the squared shares is at least 1/2: a block of
 * mostly zeros or of one repeated value); else PLAIN. Integer arithmetic, so the choice is the
 * same on every machine. */
static enum block_kind classify(const uint8_t *in, size_t len)
{
	uint32_t hist[256] = { 0 }, most = 0;
	uint64_t n = 0, sq = 0;

	for (size_t i = 0; i < len; i += 4, n++)
		hist[in[i]]++;
	for (unsigned v = 0; v < 256; v++) {
		most = hist[v] > most ? hist[v] : most;
		sq += (uint64_t)hist[v] * hist[v];
	}
	if ((uint64_t)most * 256 * 2 <= n * 3)
		return BLOCK_FLAT;
	return sq * 2 >= n * n ? BLOCK_PEAKED : BLOCK_PLAIN;
}

/* The context for this block: the level-9 one (created on first use) for a near-uniform block
 * when the level is above ZSTD_FLAT_LEVEL, and for a peaked one at the default level; else the
 * instance's. NULL when out of memory. */
static ZSTD_CCtx *pick_ctx(struct zstd *z, const void *in, size_t in_len)
{
	if (z->level <= ZSTD_FLAT_LEVEL || in_len < ZSTD_FLAT_MIN)
		return z->cctx;
	enum block_kind k = classify(in, in_len);
	if (k == BLOCK_PLAIN || (k == BLOCK_PEAKED && !z->tuned))
		return z->cctx;
	if (!z->flat) {
		z->flat = ZSTD_createCCtx();
		if (z->flat && ZSTD_isError(ZSTD_CCtx_setParameter(z->flat, ZSTD_c_compressionLevel,
								   ZSTD_FLAT_LEVEL))) {
			ZSTD_freeCCtx(z->flat);
			z->flat = NULL;
		}
	}
	return z->flat;
}

/* For the default level, a block of in_len bytes: a searchLog two below the level's own for
 * that size (never below 1); the level itself is set once, at creation. */
static int set_search(struct zstd *z, size_t in_len)
{
	if (!z->tuned)
		return 0;
	ZSTD_compressionParameters cp = ZSTD_getCParams(z->level, in_len, 0);
	int slog = cp.searchLog > 3 ? (int)cp.searchLog - 2 : 1;
	return ZSTD_isError(ZSTD_CCtx_setParameter(z->cctx, ZSTD_c_searchLog, slog)) ?
		SQK_ECOMPRESS : 0;
}

static ssize_t zstd_compress(struct compressor *c, const void *in, size_t in_len, void *out,
			     size_t out_cap)
{
	struct zstd *z = (struct zstd *)c;
	size_t limit = comp_limit(in_len, out_cap);
	size_t n;

	if (limit == 0)
		return 0;
	ZSTD_CCtx *cc = pick_ctx(z, in, in_len);
	if (!cc)
		return SQK_ENOMEM;
	if (cc == z->cctx && set_search(z, in_len))
		return SQK_ECOMPRESS;
	n = ZSTD_compress2(cc, out, limit, in, in_len);
	if (ZSTD_isError(n))
		return ZSTD_getErrorCode(n) == ZSTD_error_dstSize_tooSmall ? 0 : SQK_ECOMPRESS;
	return n < in_len ? (ssize_t)n : 0;
}

static ssize_t zstd_decompress(struct compressor *c, const void *in, size_t in_len, void *out,
			       size_t out_cap)
{
	struct zstd *z = (struct zstd *)c;
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

static void zstd_destroy(struct compressor *c)
{
	struct zstd *z = (struct zstd *)c;

	ZSTD_freeCCtx(z->cctx);
	ZSTD_freeCCtx(z->flat);
	ZSTD_freeDCtx(z->dctx);
	free(z);
}

static const struct comp_ops zstd_ops = {
	.compress = zstd_compress,
	.decompress = zstd_decompress,
	.destroy = zstd_destroy,
};

/* Borrows cfg (copied); caller owns *out. */
int zstd_create(const struct sqk_comp_config *cfg, struct compressor **out)
{
	struct zstd *z = calloc(1, sizeof(*z));

	*out = NULL;
	if (!z)
		return SQK_ENOMEM;
	z->base.ops = &zstd_ops;
	z->base.cfg = *cfg;
	z->level = zstd_level(cfg);
	z->tuned = cfg->level == 0;
	z->cctx = ZSTD_createCCtx();
	z->dctx = ZSTD_createDCtx();
	if (!z->cctx || !z->dctx) {
		zstd_destroy(&z->base);
		return SQK_ENOMEM;
	}
	if (ZSTD_isError(ZSTD_CCtx_setParameter(z->cctx, ZSTD_c_compressionLevel, z->level))) {
		zstd_destroy(&z->base);
		return SQK_EINVAL; /* comp_config_check admits only levels zstd takes */
	}
	*out = &z->base;
	return 0;
}
