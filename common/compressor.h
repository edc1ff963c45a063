/* SPDX-License-Identifier: BSD-2-Clause */
/* The compressor vtable: one implementation file per codec (zstd, xz, gzip, lz4, lzo), a factory
 * indexed by SquashFS compressor id, and the options block both directions. An instance holds
 * reusable contexts; it is not thread-safe, so each thread creates its own. */
#ifndef SQK_COMPRESSOR_H
#define SQK_COMPRESSOR_H

#include "sqk/types.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>


struct compressor;

struct comp_ops {
	/* Compresses in[0..in_len) into out[0..out_cap). Returns the compressed length when it is
	 * strictly smaller than in_len, 0 when the data did not shrink (store raw), or SQK_E*. */
	ssize_t (*compress)(struct compressor *c, const void *in, size_t in_len, void *out,
			    size_t out_cap);
	/* Decompresses one block. Returns the decompressed length (never more than out_cap; data
	 * that would exceed out_cap is SQK_EDECOMPRESS) or SQK_E*. */
	ssize_t (*decompress)(struct compressor *c, const void *in, size_t in_len, void *out,
			      size_t out_cap);
	void (*destroy)(struct compressor *c);
};

struct compressor {
	const struct comp_ops *ops;
	struct sqk_comp_config cfg;
};

/* Creates an instance for cfg (copied). Caller owns *out. SQK_EUNSUPPORTED for lzma and
 * unknown ids. */
int compressor_create(const struct sqk_comp_config *cfg, struct compressor **out);

/* Destroys c; NULL-safe. */
void compressor_destroy(struct compressor *c);

static inline ssize_t comp_compress(struct compressor *c, const void *in, size_t in_len,
				   void *out, size_t out_cap)
{
	return c->ops->compress(c, in, in_len, out, out_cap);
}

static inline ssize_t comp_decompress(struct compressor *c, const void *in, size_t in_len,
				     void *out, size_t out_cap)
{
	return c->ops->decompress(c, in, in_len, out, out_cap);
}

/* Serialises the options block payload for cfg into buf (at least 8 bytes) as mksquashfs would:
 * sets *len to 0 when the defaults need no block (always writes one for lz4). */
int comp_options_write(const struct sqk_comp_config *cfg, uint8_t *buf, size_t *len);

/* Fills cfg from a compressor id, the image block size and an options payload (opts may be NULL
 * with len 0). Validates the payload as the kernel does. */
int comp_options_read(uint16_t id, uint32_t block_size, const uint8_t *opts, size_t len,
			  struct sqk_comp_config *cfg);

/* "zstd", "xz", "gzip", "lz4", "lzma", "lzo"; NULL for an unknown id. */
const char *comp_name(uint16_t id);

/* Id for a name above, or 0 if unknown. */
uint16_t comp_id_from_name(const char *name);

/* Whether images with compressor id can be read and written: 0, or SQK_EUNSUPPORTED with a
 * message naming the compressor in buf ("compressor lzma (legacy, id 2) is not supported",
 * "unknown compressor id 9"); buf (cap bytes; may be NULL when cap is 0) is NUL-terminated. */
int comp_supported(uint16_t id, char *buf, size_t cap);

/* LZO algorithm for a name ("lzo1x_1", "lzo1x_1_11", "lzo1x_1_12", "lzo1x_1_15",
 * "lzo1x_999"), or SQK_LZO_DEFAULT if unknown. */
int lzo_algorithm_from_name(const char *name);

/* Name of an LZO algorithm (SQK_LZO_DEFAULT is "lzo1x_999"); NULL when out of range. */
const char *lzo_algorithm_name(int algorithm);

/* Parses a BCJ filter name ("x86", "powerpc", "ia64", "arm", "armthumb", "sparc"); 0 if unknown. */
uint32_t xz_bcj_from_name(const char *name);
/* The name of one filter bit (SQK_BCJ_X86...), NULL for another value. */
const char *xz_bcj_name(uint32_t bit);

#endif
