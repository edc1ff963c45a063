/* SPDX-License-Identifier: BSD-2-Clause */
/* The prefetch hint block (hint.h): encoded by the builder after the padded image, decoded by
 * libsqk (reader/lib/hint.c) and by the checker. Every field of a block read is distrusted. */
#include "hint.h"

#include <string.h>

#include "bytes.h"
#include "endian.h"
#include "sqk/error.h"

size_t hint_len(size_t n)
{
	if (n > SQK_HINT_MAX_RANGES)
		return 0;
	size_t need = n * 16 + SQK_HINT_FOOTER_SIZE;
	return (need + SQK_HINT_ALIGN - 1) / SQK_HINT_ALIGN * SQK_HINT_ALIGN;
}

int hint_check(const struct sqk_hint_range *r, size_t n, uint64_t bytes_used)
{
	uint64_t end = 0;
	for (size_t i = 0; i < n; i++) {
		if (r[i].length == 0 || r[i].start < end || r[i].start >= bytes_used ||
		    r[i].length > bytes_used - r[i].start)
			return SQK_ECORRUPT;
		end = r[i].start + r[i].length;
	}
	return 0;
}

int hint_encode(const struct sqk_hint_range *r, size_t n, uint64_t bytes_used, uint8_t *out,
		    size_t len)
{
	if (!len || len != hint_len(n) || hint_check(r, n, bytes_used))
		return SQK_EINVAL;
	memset(out, 0, len);
	for (size_t i = 0; i < n; i++) {
		put_le64(out + 16 * i, r[i].start);
		put_le64(out + 16 * i + 8, r[i].length);
	}
	uint8_t *f = out + len - SQK_HINT_FOOTER_SIZE;
	put_le32(f, (uint32_t)n);
	put_le32(f + 4, SQK_HINT_VERSION);
	put_le64(f + 8, len);
	memcpy(f + 24, SQK_HINT_MAGIC, 8);
	return 0;
}

int hint_footer(const uint8_t footer[SQK_HINT_FOOTER_SIZE], uint64_t avail, uint32_t *nranges,
		    size_t *len)
{
	if (memcmp(footer + 24, SQK_HINT_MAGIC, 8))
		return SQK_ENOENT;
	uint32_t n = get_le32(footer), version = get_le32(footer + 4);
	uint64_t l = get_le64(footer + 8), zero = get_le64(footer + 16);
	if (version != SQK_HINT_VERSION || zero || !l || l % SQK_HINT_ALIGN ||
	    l > SQK_HINT_MAX_LEN || l > avail || (uint64_t)n * 16 > l - SQK_HINT_FOOTER_SIZE)
		return SQK_ECORRUPT;
	*nranges = n;
	*len = (size_t)l;
	return 0;
}

int hint_decode(const uint8_t *in, size_t len, uint64_t bytes_used, struct sqk_hint_range *out,
		    size_t max, size_t *n)
{
	uint32_t nr;
	size_t l;
	*n = 0;
	if (len < SQK_HINT_FOOTER_SIZE)
		return SQK_ECORRUPT;
	int err = hint_footer(in + len - SQK_HINT_FOOTER_SIZE, len, &nr, &l);
	if (err)
		return err;
	if (l != len)
		return SQK_ECORRUPT;
	/* Everything between the ranges and the footer is zero: nothing else hides there. */
	if (!bytes_all_zero(in + (size_t)nr * 16, len - SQK_HINT_FOOTER_SIZE - (size_t)nr * 16))
		return SQK_ECORRUPT;
	uint64_t end = 0;
	for (uint32_t i = 0; i < nr; i++) {
		uint64_t s = get_le64(in + 16 * (size_t)i),
			 ln = get_le64(in + 16 * (size_t)i + 8);
		if (ln == 0 || s < end || s >= bytes_used || ln > bytes_used - s)
			return SQK_ECORRUPT;
		end = s + ln;
		if (i < max)
			out[i] = (struct sqk_hint_range){ .start = s, .length = ln };
	}
	*n = nr;
	return nr > max ? SQK_ETOOBIG : 0;
}
