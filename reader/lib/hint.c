/* SPDX-License-Identifier: BSD-2-Clause */
/* The prefetch hint of an image (common/hint.h): found from the integrity trailer's `covered`
 * (or from the start of the fast checksum block that ends the covered bytes, integrity.h),
 * read through the image's read path (verified when reads are), decoded distrusting every
 * field. Two small reads: the hint's last 32 bytes, then its block. */
#include <stdlib.h>

#include "sqk/error.h"
#include "common/format.h"
#include "common/hint.h"
#include "internal.h"

int sqk_image_hint(struct sqk_image *img, struct sqk_hint_range *out, size_t max, size_t *n)
{
	struct sqk_integ_trailer t;
	uint8_t foot[SQK_HINT_FOOTER_SIZE];
	uint32_t nranges;
	size_t len;
	*n = 0;
	int rc = sqk_image_integrity(img, &t);
	if (rc)
		return rc == SQK_ENOENT ? SQK_ENOENT : rc;
	uint64_t padded =
	    (img->sb.bytes_used + SQK_HINT_ALIGN - 1) / SQK_HINT_ALIGN * SQK_HINT_ALIGN;
	if (t.covered < padded || t.covered - padded < SQK_HINT_ALIGN || t.covered > img->file_size)
		return SQK_ENOENT;
	uint64_t end = verify_fast_start(img, &t, padded);
	if (end - padded < SQK_HINT_ALIGN)
		return SQK_ENOENT;
	rc = img_read(img, end - sizeof(foot), foot, sizeof(foot));
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
	rc = img_read(img, padded, blk, len);
	if (!rc)
		rc = hint_decode(blk, len, img->sb.bytes_used, out, max, n);
	free(blk);
	if (rc && rc != SQK_ETOOBIG && rc != SQK_ENOMEM && rc != SQK_EIO)
		img_logf(img, "prefetch hint at offset %llu is not valid: %s",
			 (unsigned long long)padded, sqk_strerror(rc));
	return rc;
}
