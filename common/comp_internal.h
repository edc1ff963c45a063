/* SPDX-License-Identifier: BSD-2-Clause */
/* Private to common/: the codec constructors the compressor factory table points at, the
 * SquashFS defaults each codec resolves a zero config field to, and helpers shared by codecs. */
#ifndef SQK_COMP_INTERNAL_H
#define SQK_COMP_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "compressor.h"

#define SQK_GZIP_DEFAULT_LEVEL 9
#define SQK_GZIP_DEFAULT_WINDOW 15
#define SQK_GZIP_STRATEGY_MASK 0x1Fu
#define SQK_XZ_DEFAULT_PRESET 6
#define SQK_XZ_BCJ_MASK 0x3Fu
#define SQK_XZ_DICT_MIN 4096u     /* LZMA2's smallest dictionary */
#define SQK_XZ_DICT_FALLBACK 8192u /* no block size known: the kernel allows at least this */
#define SQK_ZSTD_DEFAULT_LEVEL 15
#define SQK_ZSTD_MAX_LEVEL 22
#define SQK_LZ4_VERSION 1u
#define SQK_LZ4_FLAG_HC 0x1u
#define SQK_LZ4_MAX_LEVEL 12
#define SQK_LZO_DEFAULT_LEVEL 8 /* lzo1x_999's level when none is given */
#define SQK_LZO_MAX_LEVEL 9

/* Candidate output of codecs that try several variants (gzip strategies, xz BCJ filters) and
 * keep the smallest: grows on demand, owned by the codec instance. */
struct comp_scratch {
	uint8_t *buf;
	size_t cap;
};

/* One compression attempt of `variant` into out[0..cap): the length, 0 if it does not fit, or
 * SQK_E*. */
typedef ssize_t (*comp_attempt_fn)(void *codec, unsigned variant, const void *in,
				       size_t in_len, uint8_t *out, size_t cap);

/* Runs one attempt with a budget one byte under `best` (the result already in out; <= 0 means
 * none yet, budget `limit`) and moves a smaller result into out. Returns the new best. */
ssize_t comp_try_smaller(struct comp_scratch *s, comp_attempt_fn fn, void *codec,
			     unsigned variant, const void *in, size_t in_len, uint8_t *out,
			     size_t limit, ssize_t best);

/* Codec constructors: cfg was validated by comp_config_check and is copied; caller owns
 * *out. */
int gzip_create(const struct sqk_comp_config *cfg, struct compressor **out);
int xz_create(const struct sqk_comp_config *cfg, struct compressor **out);
int lz4_create(const struct sqk_comp_config *cfg, struct compressor **out);
int zstd_create(const struct sqk_comp_config *cfg, struct compressor **out);
int lzo_create(const struct sqk_comp_config *cfg, struct compressor **out);

/* Rejects (SQK_EINVAL) a configuration the codec, the options block or the kernel cannot
 * represent; SQK_EUNSUPPORTED for lzma and unknown ids. Borrows cfg. */
int comp_config_check(const struct sqk_comp_config *cfg);

/* The dictionary size form the kernel accepts in an xz options block: 2^n or 2^n + 2^(n+1). */
static inline bool xz_dict_form_ok(uint32_t dict)
{
	uint32_t low;

	if (dict == 0)
		return false;
	low = dict & -dict; /* 2^n, n = ffs(dict) - 1 */
	return dict == low || (low <= UINT32_MAX / 3 && dict == low * 3);
}

static inline int gzip_level(const struct sqk_comp_config *cfg)
{
	return cfg->level ? cfg->level : SQK_GZIP_DEFAULT_LEVEL;
}

static inline int gzip_window(const struct sqk_comp_config *cfg)
{
	return cfg->gzip_window ? cfg->gzip_window : SQK_GZIP_DEFAULT_WINDOW;
}

static inline int zstd_level(const struct sqk_comp_config *cfg)
{
	return cfg->level ? cfg->level : SQK_ZSTD_DEFAULT_LEVEL;
}

static inline int xz_preset(const struct sqk_comp_config *cfg)
{
	return cfg->level ? cfg->level : SQK_XZ_DEFAULT_PRESET;
}

/* The LZMA2 dictionary: as configured, else the block size as mksquashfs does. */
static inline uint32_t xz_dict(const struct sqk_comp_config *cfg)
{
	if (cfg->xz_dict)
		return cfg->xz_dict;
	return cfg->block_size ? cfg->block_size : SQK_XZ_DICT_FALLBACK;
}

static inline bool lz4_is_hc(const struct sqk_comp_config *cfg)
{
	return cfg->lz4_hc || cfg->level > 0;
}

static inline int sqk_lzo_algorithm(const struct sqk_comp_config *cfg)
{
	return cfg->lzo_algorithm ? cfg->lzo_algorithm : SQK_LZO1X_999;
}

/* lzo1x_999's level (as configured, else 8); 0 for the algorithms that take none. */
static inline int lzo_level(const struct sqk_comp_config *cfg)
{
	if (sqk_lzo_algorithm(cfg) != SQK_LZO1X_999)
		return 0;
	return cfg->level ? cfg->level : SQK_LZO_DEFAULT_LEVEL;
}

/* Output budget of one compression attempt: the result must be strictly smaller than the input
 * and fit out_cap. 0 means no attempt can succeed (the block is stored raw). */
static inline size_t comp_limit(size_t in_len, size_t out_cap)
{
	if (in_len == 0)
		return 0;
	return out_cap < in_len - 1 ? out_cap : in_len - 1;
}

#endif
