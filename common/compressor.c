/* SPDX-License-Identifier: BSD-2-Clause */
/* The compressor factory (a table indexed by SquashFS compressor id, one file per codec), the
 * names of compressors, BCJ filters and LZO algorithms, and the compressor options block written
 * after the superblock: serialised as mksquashfs does, parsed and validated as the kernel does. */
#include "compressor.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comp_internal.h"
#include "endian.h"
#include "sqk/error.h"

struct comp_entry {
	const char *name;
	/* NULL: a known id squashkit cannot (de)compress */
	int (*create)(const struct sqk_comp_config *cfg, struct compressor **out);
	/* Non-NULL for a codec this build left out: the build switch and the library it needs. */
	const char *left_out;
};

#if SQK_HAVE_LZO
#define LZO_ENTRY { "lzo", lzo_create, NULL }
#else
#define LZO_ENTRY { "lzo", NULL, "HAVE_LZO=0; it needs liblzo2" }
#endif
#if SQK_HAVE_LZ4
#define LZ4_ENTRY { "lz4", lz4_create, NULL }
#else
#define LZ4_ENTRY { "lz4", NULL, "HAVE_LZ4=0; it needs liblz4" }
#endif

static const struct comp_entry comp_table[] = {
	[SQK_COMP_GZIP] = { "gzip", gzip_create, NULL },
	[SQK_COMP_LZMA] = { "lzma", NULL, NULL },
	[SQK_COMP_LZO] = LZO_ENTRY,
	[SQK_COMP_XZ] = { "xz", xz_create, NULL },
	[SQK_COMP_LZ4] = LZ4_ENTRY,
	[SQK_COMP_ZSTD] = { "zstd", zstd_create, NULL },
};

#define COMP_TABLE_LEN (sizeof(comp_table) / sizeof(comp_table[0]))

static const struct {
	const char *name;
	uint32_t bit;
} bcj_names[] = {
	{ "x86", SQK_BCJ_X86 },	    { "powerpc", SQK_BCJ_POWERPC },   { "ia64", SQK_BCJ_IA64 },
	{ "arm", SQK_BCJ_ARM },	    { "armthumb", SQK_BCJ_ARMTHUMB }, { "sparc", SQK_BCJ_SPARC },
};

/* Indexed by enum sqk_lzo_algorithm; the options block stores the index minus one. */
static const char *const lzo_names[] = {
	[SQK_LZO1X_1] = "lzo1x_1",
	[SQK_LZO1X_1_11] = "lzo1x_1_11",
	[SQK_LZO1X_1_12] = "lzo1x_1_12",
	[SQK_LZO1X_1_15] = "lzo1x_1_15",
	[SQK_LZO1X_999] = "lzo1x_999",
};

#define LZO_NAMES_LEN ((int)(sizeof(lzo_names) / sizeof(lzo_names[0])))

static const struct comp_entry *comp_entry(uint16_t id)
{
	if (id >= COMP_TABLE_LEN || !comp_table[id].name)
		return NULL;
	return &comp_table[id];
}

/* Static name of id (not owned by the caller); NULL when unknown. */
const char *comp_name(uint16_t id)
{
	const struct comp_entry *e = comp_entry(id);

	return e ? e->name : NULL;
}

/* Borrows name; 0 when unknown. */
uint16_t comp_id_from_name(const char *name)
{
	uint16_t id;

	if (!name)
		return 0;
	for (id = 1; id < COMP_TABLE_LEN; id++) {
		if (comp_table[id].name && strcmp(comp_table[id].name, name) == 0)
			return id;
	}
	return 0;
}

/* Borrows buf (cap bytes, may be 0). */
int comp_supported(uint16_t id, char *buf, size_t cap)
{
	const struct comp_entry *e = comp_entry(id);

	if (e && e->create) {
		if (cap)
			buf[0] = '\0';
		return 0;
	}
	if (e && e->left_out) {
		if (cap)
			snprintf(buf, cap,
				 "compressor %s (id %u) is not in this build of squashkit "
				 "(built with %s)",
				 e->name, id, e->left_out);
		return SQK_ENOTBUILT;
	}
	if (cap && id == SQK_COMP_LZMA)
		snprintf(buf, cap, "compressor lzma (legacy, id %u) is not supported", id);
	else if (cap && e)
		snprintf(buf, cap, "compressor %s (id %u) is not supported", e->name, id);
	else if (cap)
		snprintf(buf, cap, "unknown compressor id %u", id);
	return SQK_EUNSUPPORTED;
}

/* Borrows name; SQK_LZO_DEFAULT when unknown. */
int lzo_algorithm_from_name(const char *name)
{
	int a;

	for (a = SQK_LZO1X_1; name && a < LZO_NAMES_LEN; a++) {
		if (strcmp(lzo_names[a], name) == 0)
			return a;
	}
	return SQK_LZO_DEFAULT;
}

/* Static name (not owned by the caller); NULL when out of range. */
const char *lzo_algorithm_name(int algorithm)
{
	if (algorithm == SQK_LZO_DEFAULT)
		algorithm = SQK_LZO1X_999;
	return algorithm > 0 && algorithm < LZO_NAMES_LEN ? lzo_names[algorithm] : NULL;
}

/* Borrows name; 0 when unknown. */
const char *xz_bcj_name(uint32_t bit)
{
	for (size_t i = 0; i < sizeof(bcj_names) / sizeof(bcj_names[0]); i++)
		if (bcj_names[i].bit == bit)
			return bcj_names[i].name;
	return NULL;
}

uint32_t xz_bcj_from_name(const char *name)
{
	size_t i;

	if (!name)
		return 0;
	for (i = 0; i < sizeof(bcj_names) / sizeof(bcj_names[0]); i++) {
		if (strcmp(bcj_names[i].name, name) == 0)
			return bcj_names[i].bit;
	}
	return 0;
}

static int gzip_check(const struct sqk_comp_config *cfg)
{
	int level = gzip_level(cfg), window = gzip_window(cfg);

	if (level < 1 || level > 9 || window < 8 || window > 15)
		return SQK_EINVAL;
	return (cfg->gzip_strategies & ~SQK_GZIP_STRATEGY_MASK) ? SQK_EINVAL : 0;
}

static int xz_check(const struct sqk_comp_config *cfg)
{
	uint32_t dict = xz_dict(cfg);

	if (cfg->level < 0 || cfg->level > 9 || (cfg->xz_bcj & ~SQK_XZ_BCJ_MASK))
		return SQK_EINVAL;
	return xz_dict_form_ok(dict) && dict >= SQK_XZ_DICT_MIN ? 0 : SQK_EINVAL;
}

/* A level only for lzo1x_999 (1..9), as mksquashfs -Xcompression-level. */
static int lzo_check(const struct sqk_comp_config *cfg)
{
	if (cfg->lzo_algorithm < 0 || cfg->lzo_algorithm >= LZO_NAMES_LEN)
		return SQK_EINVAL;
	if (sqk_lzo_algorithm(cfg) != SQK_LZO1X_999)
		return cfg->level == 0 ? 0 : SQK_EINVAL;
	return cfg->level >= 0 && cfg->level <= SQK_LZO_MAX_LEVEL ? 0 : SQK_EINVAL;
}

/* Borrows cfg. */
int comp_config_check(const struct sqk_comp_config *cfg)
{
	const struct comp_entry *e = comp_entry(cfg->id);

	if (!e || !e->create)
		return SQK_EUNSUPPORTED;
	switch (cfg->id) {
	case SQK_COMP_GZIP:
		return gzip_check(cfg);
	case SQK_COMP_XZ:
		return xz_check(cfg);
	case SQK_COMP_ZSTD:
		return cfg->level >= 0 && cfg->level <= SQK_ZSTD_MAX_LEVEL ? 0 : SQK_EINVAL;
	case SQK_COMP_LZ4:
		return cfg->level >= 0 && cfg->level <= SQK_LZ4_MAX_LEVEL ? 0 : SQK_EINVAL;
	case SQK_COMP_LZO:
		return lzo_check(cfg);
	default:
		return SQK_EUNSUPPORTED;
	}
}

/* Borrows cfg (copied into the instance); caller owns *out. */
int compressor_create(const struct sqk_comp_config *cfg, struct compressor **out)
{
	int rc;

	*out = NULL;
	if (!cfg)
		return SQK_EINVAL;
	rc = comp_config_check(cfg);
	if (rc)
		return rc;
	return comp_entry(cfg->id)->create(cfg, out);
}

/* Takes c; NULL-safe. */
void compressor_destroy(struct compressor *c)
{
	if (c)
		c->ops->destroy(c);
}

static size_t gzip_opts_write(const struct sqk_comp_config *cfg, uint8_t *buf)
{
	int level = gzip_level(cfg), window = gzip_window(cfg);

	if (level == SQK_GZIP_DEFAULT_LEVEL && window == SQK_GZIP_DEFAULT_WINDOW &&
	    cfg->gzip_strategies == 0)
		return 0;
	put_le32(buf, (uint32_t)level);
	put_le16(buf + 4, (uint16_t)window);
	put_le16(buf + 6, cfg->gzip_strategies);
	return 8;
}

static size_t xz_opts_write(const struct sqk_comp_config *cfg, uint8_t *buf)
{
	uint32_t dict = xz_dict(cfg);

	if (dict == cfg->block_size && cfg->xz_bcj == 0)
		return 0;
	put_le32(buf, dict);
	put_le32(buf + 4, cfg->xz_bcj);
	return 8;
}

static size_t zstd_opts_write(const struct sqk_comp_config *cfg, uint8_t *buf)
{
	int level = zstd_level(cfg);

	if (level == SQK_ZSTD_DEFAULT_LEVEL)
		return 0;
	put_le32(buf, (uint32_t)level);
	return 4;
}

static size_t lz4_opts_write(const struct sqk_comp_config *cfg, uint8_t *buf)
{
	put_le32(buf, SQK_LZ4_VERSION);
	put_le32(buf + 4, lz4_is_hc(cfg) ? SQK_LZ4_FLAG_HC : 0);
	return 8;
}

/* No block for lzo1x_999 at level 8, the legacy LZO images (mksquashfs does the same). */
static size_t lzo_opts_write(const struct sqk_comp_config *cfg, uint8_t *buf)
{
	int algorithm = sqk_lzo_algorithm(cfg), level = lzo_level(cfg);

	if (algorithm == SQK_LZO1X_999 && level == SQK_LZO_DEFAULT_LEVEL)
		return 0;
	put_le32(buf, (uint32_t)(algorithm - 1));
	put_le32(buf + 4, (uint32_t)level);
	return 8;
}

/* Borrows cfg; writes at most 8 bytes to buf. */
int comp_options_write(const struct sqk_comp_config *cfg, uint8_t *buf, size_t *len)
{
	int rc;

	*len = 0;
	rc = comp_config_check(cfg);
	if (rc)
		return rc;
	switch (cfg->id) {
	case SQK_COMP_GZIP:
		*len = gzip_opts_write(cfg, buf);
		break;
	case SQK_COMP_XZ:
		if (cfg->block_size == 0) /* the default dictionary needs it */
			return SQK_EINVAL;
		*len = xz_opts_write(cfg, buf);
		break;
	case SQK_COMP_ZSTD:
		*len = zstd_opts_write(cfg, buf);
		break;
	case SQK_COMP_LZ4:
		*len = lz4_opts_write(cfg, buf);
		break;
	case SQK_COMP_LZO:
		*len = lzo_opts_write(cfg, buf);
		break;
	default:
		return SQK_EUNSUPPORTED;
	}
	return 0;
}

static int gzip_opts_read(const uint8_t *opts, size_t len, struct sqk_comp_config *cfg)
{
	uint32_t level;
	uint16_t window;

	cfg->level = SQK_GZIP_DEFAULT_LEVEL;
	cfg->gzip_window = SQK_GZIP_DEFAULT_WINDOW;
	if (len == 0)
		return 0;
	if (len < 8)
		return SQK_ECORRUPT;
	level = get_le32(opts);
	window = get_le16(opts + 4);
	if (level < 1 || level > 9 || window < 8 || window > 15)
		return SQK_ECORRUPT;
	cfg->level = (int)level;
	cfg->gzip_window = window;
	cfg->gzip_strategies = get_le16(opts + 6) & SQK_GZIP_STRATEGY_MASK;
	return 0;
}

/* Unknown BCJ bits are dropped: the kernel ignores the field, and decoding never needs it. */
static int xz_opts_read(const uint8_t *opts, size_t len, struct sqk_comp_config *cfg)
{
	uint32_t dict;

	cfg->xz_dict = cfg->block_size;
	if (len == 0)
		return 0;
	if (len < 8)
		return SQK_ECORRUPT;
	dict = get_le32(opts);
	if (!xz_dict_form_ok(dict))
		return SQK_ECORRUPT;
	if (dict < SQK_XZ_DICT_MIN) /* no xz stream can declare a dictionary this small */
		return SQK_EUNSUPPORTED;
	cfg->xz_dict = dict;
	cfg->xz_bcj = get_le32(opts + 4) & SQK_XZ_BCJ_MASK;
	return 0;
}

static int zstd_opts_read(const uint8_t *opts, size_t len, struct sqk_comp_config *cfg)
{
	uint32_t level;

	cfg->level = SQK_ZSTD_DEFAULT_LEVEL;
	if (len == 0)
		return 0;
	if (len < 4)
		return SQK_ECORRUPT;
	level = get_le32(opts);
	if (level < 1 || level > SQK_ZSTD_MAX_LEVEL)
		return SQK_ECORRUPT;
	cfg->level = (int)level;
	return 0;
}

/* The kernel requires the lz4 block: an image without one does not mount. */
static int lz4_opts_read(const uint8_t *opts, size_t len, struct sqk_comp_config *cfg)
{
	if (len < 8)
		return SQK_ECORRUPT;
	if (get_le32(opts) != SQK_LZ4_VERSION)
		return SQK_EUNSUPPORTED;
	cfg->lz4_hc = (get_le32(opts + 4) & SQK_LZ4_FLAG_HC) != 0;
	return 0;
}

/* The kernel ignores the lzo block (decoding needs none); it is checked as unsquashfs does:
 * a known algorithm, level 1..9 for lzo1x_999 and 0 for the others. */
static int lzo_opts_read(const uint8_t *opts, size_t len, struct sqk_comp_config *cfg)
{
	uint32_t algorithm, level;

	cfg->lzo_algorithm = SQK_LZO1X_999;
	cfg->level = SQK_LZO_DEFAULT_LEVEL;
	if (len == 0)
		return 0;
	if (len < 8)
		return SQK_ECORRUPT;
	algorithm = get_le32(opts) + 1u; /* enum sqk_lzo_algorithm */
	level = get_le32(opts + 4);
	if (algorithm == 0 || algorithm >= (uint32_t)LZO_NAMES_LEN)
		return SQK_ECORRUPT;
	if (algorithm == SQK_LZO1X_999 ? level < 1 || level > SQK_LZO_MAX_LEVEL : level != 0)
		return SQK_ECORRUPT;
	cfg->lzo_algorithm = (int)algorithm;
	cfg->level = (int)level;
	return 0;
}

/* Borrows opts; fills *cfg (reset first). */
int comp_options_read(uint16_t id, uint32_t block_size, const uint8_t *opts, size_t len,
			  struct sqk_comp_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->id = id;
	cfg->block_size = block_size;
	if (!opts && len > 0)
		return SQK_EINVAL;
	switch (id) {
	case SQK_COMP_GZIP:
		return gzip_opts_read(opts, len, cfg);
	case SQK_COMP_XZ:
		return xz_opts_read(opts, len, cfg);
	case SQK_COMP_ZSTD:
		return zstd_opts_read(opts, len, cfg);
	case SQK_COMP_LZ4:
		return lz4_opts_read(opts, len, cfg);
	case SQK_COMP_LZO:
		return lzo_opts_read(opts, len, cfg);
	default:
		return SQK_EUNSUPPORTED;
	}
}

ssize_t comp_try_smaller(struct comp_scratch *s, comp_attempt_fn fn, void *codec,
			     unsigned variant, const void *in, size_t in_len, uint8_t *out,
			     size_t limit, ssize_t best)
{
	size_t budget = best > 0 ? (size_t)best - 1 : limit;
	ssize_t n;

	if (budget == 0)
		return best;
	if (budget > s->cap) { /* exactly one attempt's budget (a byte size), not mem_grow */
		uint8_t *p = realloc(s->buf, budget);
		if (!p)
			return SQK_ENOMEM;
		s->buf = p;
		s->cap = budget;
	}
	n = fn(codec, variant, in, in_len, s->buf, budget);
	if (n <= 0)
		return n < 0 ? n : best;
	memcpy(out, s->buf, (size_t)n);
	return n;
}
