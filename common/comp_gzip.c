/* SPDX-License-Identifier: BSD-2-Clause */
/* gzip codec (SquashFS id 1): zlib format (RFC 1950), not raw deflate nor gzip. Each configured
 * strategy gets one deflate stream and all blocks are tried with each, keeping the smallest
 * (mksquashfs -Xstrategy). All z_streams are set up with the instance and reset per block. */
#define ZLIB_CONST
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "comp_internal.h"
#include "sqk/error.h"

#define GZIP_NSTRATEGIES 5
#define GZIP_MEM_LEVEL 8

/* zlib strategy for options-block strategy bit i. */
static const int gzip_strategy_of_bit[GZIP_NSTRATEGIES] = {
	Z_DEFAULT_STRATEGY, Z_FILTERED, Z_HUFFMAN_ONLY, Z_RLE, Z_FIXED,
};

struct gzip {
	struct compressor base;
	z_stream def[GZIP_NSTRATEGIES]; /* def[0..ndef) initialised */
	unsigned ndef;
	z_stream inf;
	bool inf_ready;
	struct comp_scratch scratch; /* candidate output while a smaller result sits in out */
};

static int zlib_error(int ret, int fallback)
{
	return ret == Z_MEM_ERROR ? SQK_ENOMEM : fallback;
}

/* Deflates in into out[0..limit) with s; returns the length, 0 if it does not fit. */
static ssize_t gzip_try(z_stream *s, const void *in, size_t in_len, uint8_t *out, size_t limit)
{
	int ret = deflateReset(s);

	if (ret != Z_OK)
		return zlib_error(ret, SQK_ECOMPRESS);
	s->next_in = in;
	s->avail_in = (uInt)in_len;
	s->next_out = out;
	s->avail_out = (uInt)limit;
	ret = deflate(s, Z_FINISH);
	if (ret == Z_STREAM_END)
		return (ssize_t)(limit - s->avail_out);
	if (ret == Z_OK || ret == Z_BUF_ERROR)
		return 0;
	return zlib_error(ret, SQK_ECOMPRESS);
}

/* Attempt with strategy stream i (the comp_attempt_fn shape). */
static ssize_t gzip_attempt(void *codec, unsigned i, const void *in, size_t in_len, uint8_t *out,
			    size_t cap)
{
	return gzip_try(&((struct gzip *)codec)->def[i], in, in_len, out, cap);
}

static ssize_t gzip_compress(struct compressor *c, const void *in, size_t in_len, void *out,
			     size_t out_cap)
{
	struct gzip *g = (struct gzip *)c;
	size_t limit = comp_limit(in_len, out_cap);
	ssize_t best;
	unsigned i;

	if (in_len > UINT_MAX)
		return SQK_EINVAL;
	if (limit == 0)
		return 0;
	best = gzip_try(&g->def[0], in, in_len, out, limit);
	for (i = 1; i < g->ndef && best >= 0; i++)
		best = comp_try_smaller(&g->scratch, gzip_attempt, g, i, in, in_len, out,
					    limit, best);
	return best;
}

static ssize_t gzip_decompress(struct compressor *c, const void *in, size_t in_len, void *out,
			       size_t out_cap)
{
	struct gzip *g = (struct gzip *)c;
	uInt cap = out_cap > UINT_MAX ? UINT_MAX : (uInt)out_cap;
	int ret;

	if (in_len == 0 || in_len > UINT_MAX)
		return SQK_EDECOMPRESS;
	ret = inflateReset(&g->inf);
	if (ret != Z_OK)
		return zlib_error(ret, SQK_EDECOMPRESS);
	g->inf.next_in = in;
	g->inf.avail_in = (uInt)in_len;
	g->inf.next_out = out;
	g->inf.avail_out = cap;
	/* With Z_FINISH, anything but Z_STREAM_END is an error: corrupt, truncated or too big. */
	ret = inflate(&g->inf, Z_FINISH);
	if (ret != Z_STREAM_END)
		return zlib_error(ret, SQK_EDECOMPRESS);
	return (ssize_t)(cap - g->inf.avail_out);
}

static void gzip_destroy(struct compressor *c)
{
	struct gzip *g = (struct gzip *)c;
	unsigned i;

	for (i = 0; i < g->ndef; i++)
		deflateEnd(&g->def[i]);
	if (g->inf_ready)
		inflateEnd(&g->inf);
	free(g->scratch.buf);
	free(g);
}

static const struct comp_ops gzip_ops = {
	.compress = gzip_compress,
	.decompress = gzip_decompress,
	.destroy = gzip_destroy,
};

/* Sets up one deflate stream per strategy bit (the default strategy when none is set). */
static int gzip_init_streams(struct gzip *g, const struct sqk_comp_config *cfg)
{
	int level = gzip_level(cfg), window = gzip_window(cfg);
	unsigned bits = cfg->gzip_strategies ? cfg->gzip_strategies : 1u;
	unsigned i;
	int ret;

	for (i = 0; i < GZIP_NSTRATEGIES; i++) {
		if (!(bits & (1u << i)))
			continue;
		ret = deflateInit2(&g->def[g->ndef], level, Z_DEFLATED, window, GZIP_MEM_LEVEL,
				   gzip_strategy_of_bit[i]);
		if (ret != Z_OK)
			return zlib_error(ret, SQK_EINVAL);
		g->ndef++;
	}
	ret = inflateInit2(&g->inf, 15); /* accepts every smaller window the header declares */
	if (ret != Z_OK)
		return zlib_error(ret, SQK_EINVAL);
	g->inf_ready = true;
	return 0;
}

/* Borrows cfg (copied); caller owns *out. */
int gzip_create(const struct sqk_comp_config *cfg, struct compressor **out)
{
	struct gzip *g = calloc(1, sizeof(*g));
	int rc;

	*out = NULL;
	if (!g)
		return SQK_ENOMEM;
	g->base.ops = &gzip_ops;
	g->base.cfg = *cfg;
	rc = gzip_init_streams(g, cfg);
	if (rc) {
		gzip_destroy(&g->base);
		return rc;
	}
	*out = &g->base;
	return 0;
}
