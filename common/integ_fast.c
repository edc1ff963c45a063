/* SPDX-License-Identifier: BSD-2-Clause */
/* The fast checksums (layout in integrity.h): a block of XXH3-64 sums of the chunks inside the
 * covered bytes, which the digests authenticate; verified reads check chunks against them when
 * no root digest is pinned. */
#include "integrity.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bytes.h"
#include "endian.h"
#include "integ_internal.h"
#include "sqk/error.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

/* Borrows data. */
uint64_t hash_xxh3_64(const void *data, size_t len)
{
	return XXH3_64bits(data, len);
}

uint64_t integ_fast_len(uint64_t n)
{
	if (n > (UINT64_MAX - SQK_FAST_FOOTER_SIZE - SQK_FAST_ALIGN) / 8)
		return 0;
	return (n * 8 + SQK_FAST_FOOTER_SIZE + SQK_FAST_ALIGN - 1) / SQK_FAST_ALIGN *
	       SQK_FAST_ALIGN;
}

int integ_fast_encode(const uint64_t *sums, uint64_t n, uint8_t **blk, size_t *len)
{
	uint64_t l = integ_fast_len(n);
	uint8_t *b, *f;

	if (!l || l > SIZE_MAX)
		return SQK_EOVERFLOW;
	b = calloc(1, (size_t)l);
	if (!b)
		return SQK_ENOMEM;
	for (uint64_t k = 0; k < n; k++)
		put_le64(b + 8 * k, sums[k]);
	f = b + l - SQK_FAST_FOOTER_SIZE;
	put_le64(f, n);
	put_le64(f + 8, l);
	put_le32(f + 16, SQK_FAST_VERSION);
	put_le32(f + 20, SQK_FAST_XXH3_64);
	memcpy(f + 24, SQK_FAST_MAGIC, MAGIC_LEN);
	*blk = b;
	*len = (size_t)l;
	return 0;
}

/* Borrows footer and t; fills the caller's *at, *len, *n. */
int integ_fast_footer(const uint8_t footer[SQK_FAST_FOOTER_SIZE],
			  const struct sqk_integ_trailer *t, uint64_t min_start, uint64_t *at,
			  uint64_t *len, uint64_t *n)
{
	uint64_t nn = get_le64(footer), l = get_le64(footer + 8);

	if (memcmp(footer + 24, SQK_FAST_MAGIC, MAGIC_LEN))
		return SQK_ENOENT;
	if (!l || l % SQK_FAST_ALIGN || min_start > t->covered || l > t->covered - min_start)
		return SQK_ECORRUPT;
	*at = t->covered - l;
	*len = l;
	*n = nn;
	if (get_le32(footer + 16) != SQK_FAST_VERSION ||
	    get_le32(footer + 20) != SQK_FAST_XXH3_64)
		return SQK_EUNSUPPORTED;
	/* exactly the chunks wholly before the block, in exactly the bytes they need */
	if (nn != *at / t->chunk_size || integ_fast_len(nn) != l)
		return SQK_ECORRUPT;
	return 0;
}

/* Frees what f owns; NULL-safe. */
void integ_fast_free(struct integ_fast *f)
{
	if (!f)
		return;
	free(f->sums);
	f->sums = NULL;
	f->n = 0;
}

/* Borrows blk and t; fills the caller's out. */
int integ_fast_decode(const uint8_t *blk, size_t len, const struct sqk_integ_trailer *t,
			  uint64_t min_start, struct integ_fast *out)
{
	uint64_t at, l, n;
	int rc;

	memset(out, 0, sizeof(*out));
	if (len < SQK_FAST_FOOTER_SIZE)
		return SQK_ECORRUPT;
	rc = integ_fast_footer(blk + len - SQK_FAST_FOOTER_SIZE, t, min_start, &at, &l, &n);
	if (rc)
		return rc;
	if (l != len)
		return SQK_ECORRUPT;
	/* nothing else hides between the entries and the footer */
	if (!bytes_all_zero(blk + (size_t)n * 8, len - SQK_FAST_FOOTER_SIZE - (size_t)n * 8))
		return SQK_ECORRUPT;
	out->sums = malloc(n ? (size_t)n * sizeof(*out->sums) : 1);
	if (!out->sums)
		return SQK_ENOMEM;
	for (uint64_t k = 0; k < n; k++)
		out->sums[k] = get_le64(blk + 8 * k);
	out->at = at;
	out->len = l;
	out->n = n;
	out->algorithm = SQK_FAST_XXH3_64;
	return 0;
}

/* Borrows ig, f and data. */
int integ_fast_check_chunk(const struct integ *ig, const struct integ_fast *f,
			       uint64_t k, const void *data, size_t len)
{
	if (k >= f->n || len != ig->t.chunk_size)
		return SQK_ECORRUPT;
	return XXH3_64bits(data, len) == f->sums[k] ? 0 : SQK_ECORRUPT;
}
