/* SPDX-License-Identifier: BSD-2-Clause */
/* xz codec (SquashFS id 4): one complete .xz stream per block, CRC32 check, LZMA2 with the
 * image's dictionary size (the kernel pre-allocates it and refuses larger streams). With BCJ
 * filters configured, every block is compressed plainly and through each filter, and the
 * smallest result is kept, as mksquashfs does. The lzma_streams live as long as the instance, so
 * liblzma reuses its dictionary and match-finder buffers from block to block. */
#include <lzma.h>
#include <stdlib.h>
#include <string.h>

#include "comp_internal.h"
#include "sqk/error.h"

#define XZ_NBCJ 6
#define XZ_MEMLIMIT ((uint64_t)64 << 20)

/* liblzma filter id of BCJ option bit i (enum sqk_xz_bcj order). */
static const lzma_vli bcj_filter_ids[XZ_NBCJ] = {
	LZMA_FILTER_X86, LZMA_FILTER_POWERPC, LZMA_FILTER_IA64,
	LZMA_FILTER_ARM, LZMA_FILTER_ARMTHUMB, LZMA_FILTER_SPARC,
};

struct xz {
	struct compressor base;
	lzma_options_lzma lzma2;
	uint32_t bcj;
	/* enc[0]: plain LZMA2; enc[1 + i]: BCJ bit i, then LZMA2. Each keeps its own chain so that
	 * switching filters does not free and rebuild the LZMA2 encoder. */
	lzma_stream enc[1 + XZ_NBCJ];
	lzma_stream dec;
	struct comp_scratch scratch; /* candidate output while a smaller result sits in out */
};

static int xz_lzma_error(lzma_ret ret, int fallback)
{
	return ret == LZMA_MEM_ERROR ? SQK_ENOMEM : fallback;
}

/* Compresses in with chain variant v into out[0..limit); returns the length, or 0 if the
 * stream does not fit. */
static ssize_t xz_try(struct xz *x, unsigned v, const void *in, size_t in_len, uint8_t *out,
		      size_t limit)
{
	lzma_filter chain[3];
	lzma_stream *s = &x->enc[v];
	unsigned n = 0;
	lzma_ret ret;

	if (v > 0)
		chain[n++] = (lzma_filter){ .id = bcj_filter_ids[v - 1], .options = NULL };
	chain[n++] = (lzma_filter){ .id = LZMA_FILTER_LZMA2, .options = &x->lzma2 };
	chain[n] = (lzma_filter){ .id = LZMA_VLI_UNKNOWN, .options = NULL };
	ret = lzma_stream_encoder(s, chain, LZMA_CHECK_CRC32);
	if (ret != LZMA_OK)
		return xz_lzma_error(ret, SQK_ECOMPRESS);
	s->next_in = in;
	s->avail_in = in_len;
	s->next_out = out;
	s->avail_out = limit;
	do
		ret = lzma_code(s, LZMA_FINISH);
	while (ret == LZMA_OK && s->avail_out > 0);
	if (ret == LZMA_STREAM_END)
		return (ssize_t)(limit - s->avail_out);
	if ((ret == LZMA_OK || ret == LZMA_BUF_ERROR) && s->avail_out == 0)
		return 0;
	return xz_lzma_error(ret, SQK_ECOMPRESS);
}

/* Attempt with BCJ variant v (the comp_attempt_fn shape). */
static ssize_t xz_attempt(void *codec, unsigned v, const void *in, size_t in_len, uint8_t *out,
			  size_t cap)
{
	return xz_try(codec, v, in, in_len, out, cap);
}

static ssize_t xz_compress(struct compressor *c, const void *in, size_t in_len, void *out,
			   size_t out_cap)
{
	struct xz *x = (struct xz *)c;
	size_t limit = comp_limit(in_len, out_cap);
	ssize_t best;
	unsigned v;

	if (limit == 0)
		return 0;
	best = xz_try(x, 0, in, in_len, out, limit);
	for (v = 1; v <= XZ_NBCJ && best >= 0; v++) {
		if (x->bcj & (1u << (v - 1)))
			best = comp_try_smaller(&x->scratch, xz_attempt, x, v, in, in_len,
						    out, limit, best);
	}
	return best;
}

static ssize_t xz_decompress(struct compressor *c, const void *in, size_t in_len, void *out,
			     size_t out_cap)
{
	struct xz *x = (struct xz *)c;
	lzma_stream *s = &x->dec;
	lzma_ret ret;

	if (in_len == 0)
		return SQK_EDECOMPRESS;
	ret = lzma_stream_decoder(s, XZ_MEMLIMIT, 0);
	if (ret != LZMA_OK)
		return xz_lzma_error(ret, SQK_EDECOMPRESS);
	s->next_in = in;
	s->avail_in = in_len;
	s->next_out = out;
	s->avail_out = out_cap;
	/* Ends: each call progresses, or the second call without progress gives LZMA_BUF_ERROR. */
	do
		ret = lzma_code(s, LZMA_FINISH);
	while (ret == LZMA_OK);
	if (ret != LZMA_STREAM_END)
		return xz_lzma_error(ret, SQK_EDECOMPRESS);
	return (ssize_t)(out_cap - s->avail_out);
}

static void xz_destroy(struct compressor *c)
{
	struct xz *x = (struct xz *)c;
	unsigned v;

	for (v = 0; v <= XZ_NBCJ; v++)
		lzma_end(&x->enc[v]);
	lzma_end(&x->dec);
	free(x->scratch.buf);
	free(x);
}

static const struct comp_ops xz_ops = {
	.compress = xz_compress,
	.decompress = xz_decompress,
	.destroy = xz_destroy,
};

static int xz_filters_supported(uint32_t bcj)
{
	unsigned i;

	if (!lzma_filter_encoder_is_supported(LZMA_FILTER_LZMA2) ||
	    !lzma_filter_decoder_is_supported(LZMA_FILTER_LZMA2))
		return SQK_EUNSUPPORTED;
	for (i = 0; i < XZ_NBCJ; i++) {
		if ((bcj & (1u << i)) && !lzma_filter_encoder_is_supported(bcj_filter_ids[i]))
			return SQK_EUNSUPPORTED;
	}
	return 0;
}

/* Borrows cfg (copied); caller owns *out. Encoders are set up on first use, so an instance that
 * only decompresses never allocates their buffers. */
int xz_create(const struct sqk_comp_config *cfg, struct compressor **out)
{
	struct xz *x;
	unsigned v;
	int rc;

	*out = NULL;
	rc = xz_filters_supported(cfg->xz_bcj);
	if (rc)
		return rc;
	x = calloc(1, sizeof(*x));
	if (!x)
		return SQK_ENOMEM;
	x->base.ops = &xz_ops;
	x->base.cfg = *cfg;
	x->bcj = cfg->xz_bcj;
	for (v = 0; v <= XZ_NBCJ; v++)
		x->enc[v] = (lzma_stream)LZMA_STREAM_INIT;
	x->dec = (lzma_stream)LZMA_STREAM_INIT;
	if (lzma_lzma_preset(&x->lzma2, (uint32_t)xz_preset(cfg))) {
		xz_destroy(&x->base);
		return SQK_EINVAL;
	}
	x->lzma2.dict_size = xz_dict(cfg);
	*out = &x->base;
	return 0;
}
