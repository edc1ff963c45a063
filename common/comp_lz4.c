/* SPDX-License-Identifier: BSD-2-Clause */
/* lz4 codec (SquashFS id 5): one raw LZ4 block (no frame) per SquashFS block, decoded with
 * LZ4_decompress_safe. The fast or HC compression state is allocated once per instance. */
#include <limits.h>
#include <lz4.h>
#include <lz4hc.h>
#include <stdlib.h>

#include "comp_internal.h"
#include "sqk/error.h"

struct lz4 {
	struct compressor base;
	void *state;  /* LZ4 or LZ4HC state, per hc_level */
	int hc_level; /* 0: fast mode */
};

static ssize_t lz4_compress(struct compressor *c, const void *in, size_t in_len, void *out,
			    size_t out_cap)
{
	struct lz4 *l = (struct lz4 *)c;
	size_t limit = comp_limit(in_len, out_cap);
	int cap, n;

	if (in_len > LZ4_MAX_INPUT_SIZE)
		return SQK_EINVAL;
	if (limit == 0)
		return 0;
	cap = limit > INT_MAX ? INT_MAX : (int)limit;
	if (l->hc_level)
		n = LZ4_compress_HC_extStateHC(l->state, in, out, (int)in_len, cap, l->hc_level);
	else
		n = LZ4_compress_fast_extState(l->state, in, out, (int)in_len, cap, 1);
	/* lz4 reports "does not fit in cap" as 0, which is exactly "store raw". */
	return n > 0 && (size_t)n < in_len ? n : 0;
}

static ssize_t lz4_decompress(struct compressor *c, const void *in, size_t in_len, void *out,
			      size_t out_cap)
{
	int cap = out_cap > INT_MAX ? INT_MAX : (int)out_cap;
	int n;

	(void)c;
	if (in_len == 0 || in_len > INT_MAX)
		return SQK_EDECOMPRESS;
	n = LZ4_decompress_safe(in, out, (int)in_len, cap);
	return n < 0 ? SQK_EDECOMPRESS : n;
}

static void lz4_destroy(struct compressor *c)
{
	struct lz4 *l = (struct lz4 *)c;

	free(l->state);
	free(l);
}

static const struct comp_ops lz4_ops = {
	.compress = lz4_compress,
	.decompress = lz4_decompress,
	.destroy = lz4_destroy,
};

/* Borrows cfg (copied); caller owns *out. level > 0 selects HC at that level. */
int lz4_create(const struct sqk_comp_config *cfg, struct compressor **out)
{
	struct lz4 *l = calloc(1, sizeof(*l));

	*out = NULL;
	if (!l)
		return SQK_ENOMEM;
	l->base.ops = &lz4_ops;
	l->base.cfg = *cfg;
	if (lz4_is_hc(cfg))
		l->hc_level = cfg->level > 0 ? cfg->level : LZ4HC_CLEVEL_DEFAULT;
	l->state = malloc((size_t)(l->hc_level ? LZ4_sizeofStateHC() : LZ4_sizeofState()));
	if (!l->state) {
		lz4_destroy(&l->base);
		return SQK_ENOMEM;
	}
	*out = &l->base;
	return 0;
}
