/* SPDX-License-Identifier: BSD-2-Clause */
/* The prefetch hint of an image (common/hint.h): found from the integrity trailer's `covered`
 * (or from the start of the fast checksum block that ends the covered bytes, integrity.h),
 * read through the image's read path (verified when reads are), decoded distrusting every
 * field. Two small reads: the hint's last 32 bytes, then its block. A remote image's hint is
 * also read before the image is opened, from its backend (img_prefetch_hint_io). */
#include <stdlib.h>

#include "sqk/error.h"
#include "common/format.h"
#include "common/hint.h"
#include "internal.h"
#include "open_io.h"

/* Where the hint is read from: an opened image's read path, or a backend that checks what it
 * reads itself (before the image is opened). */
struct hint_src {
	struct sqk_image *img;
	struct sqk_io *io;
	uint64_t file_size;
};

static int src_read(const struct hint_src *s, uint64_t off, void *buf, size_t len)
{
	return s->img ? img_read(s->img, off, buf, len) : sqk_io_read_at(s->io, off, buf, len);
}

/* Where the hint's area ends: at the fast checksum block that ends the covered bytes, else
 * at t->covered. */
static uint64_t fast_start(const struct hint_src *s, const struct sqk_integ_trailer *t,
			   uint64_t min_start)
{
	uint8_t foot[SQK_FAST_FOOTER_SIZE];
	uint64_t at, len, n;
	int rc;

	if (s->img && s->img->fast_on)
		return s->img->fast.at;
	if (t->covered < min_start + SQK_FAST_ALIGN || t->covered > s->file_size ||
	    src_read(s, t->covered - sizeof(foot), foot, sizeof(foot)))
		return t->covered;
	rc = integ_fast_footer(foot, t, min_start, &at, &len, &n);
	return rc == 0 || rc == SQK_EUNSUPPORTED ? at : t->covered;
}

/* The hint's ranges (sqk_image_hint) of the image of bytes_used bytes whose trailer is t. */
static int hint_read(const struct hint_src *s, const struct sqk_integ_trailer *t,
		     uint64_t bytes_used, struct sqk_hint_range *out, size_t max, size_t *n)
{
	uint8_t foot[SQK_HINT_FOOTER_SIZE];
	uint64_t padded = (bytes_used + SQK_HINT_ALIGN - 1) / SQK_HINT_ALIGN * SQK_HINT_ALIGN;
	uint32_t nranges;
	size_t len;
	int rc;

	*n = 0;
	if (t->covered < padded || t->covered - padded < SQK_HINT_ALIGN ||
	    t->covered > s->file_size)
		return SQK_ENOENT;
	uint64_t end = fast_start(s, t, padded);
	if (end - padded < SQK_HINT_ALIGN)
		return SQK_ENOENT;
	rc = src_read(s, end - sizeof(foot), foot, sizeof(foot));
	if (!rc)
		rc = hint_footer(foot, end - padded, &nranges, &len);
	if (rc)
		return rc;
	if (end - len != padded)
		return SQK_ECORRUPT; /* a hint is the whole of what lies between image and digests
				      */
	uint8_t *blk = malloc(len);
	if (!blk)
		return SQK_ENOMEM;
	rc = src_read(s, padded, blk, len);
	if (!rc)
		rc = hint_decode(blk, len, bytes_used, out, max, n);
	free(blk);
	if (rc && s->img && rc != SQK_ETOOBIG && rc != SQK_ENOMEM && rc != SQK_EIO)
		img_logf(s->img, "prefetch hint at offset %llu is not valid: %s",
			 (unsigned long long)padded, sqk_strerror(rc));
	return rc;
}

int sqk_image_hint(struct sqk_image *img, struct sqk_hint_range *out, size_t max, size_t *n)
{
	struct hint_src s = { .img = img, .file_size = img->file_size };
	struct sqk_integ_trailer t;
	int rc = sqk_image_integrity(img, &t);

	*n = 0;
	if (rc)
		return rc == SQK_ENOENT ? SQK_ENOENT : rc;
	return hint_read(&s, &t, img->sb.bytes_used, out, max, n);
}

/* Borrows io and t. */
void img_prefetch_hint_io(struct sqk_io *io, const struct sqk_integ_trailer *t,
			  uint64_t bytes_used, uint64_t file_size)
{
	struct hint_src s = { .io = io, .file_size = file_size };
	struct sqk_hint_range *r = malloc(SQK_HINT_MAX_RANGES * sizeof(*r));
	size_t n = 0;

	if (r && hint_read(&s, t, bytes_used, r, SQK_HINT_MAX_RANGES, &n) == 0)
		for (size_t i = 0; i < n; i++)
			sqk_io_prefetch(io, r[i].start, r[i].length, false);
	free(r);
}
