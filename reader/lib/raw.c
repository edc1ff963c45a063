/* SPDX-License-Identifier: BSD-2-Clause */
/* The stored form of an image's data, for tools that copy compressed blocks verbatim into a new
 * image (sqk mkimage --reuse): a file's block size words, a fragment table entry, raw bytes.
 * Every value comes from the validated tables; reads are bounds-checked and verified when the
 * image is. */
#include <string.h>

#include "sqk/error.h"
#include "internal.h"
#include "sqk/sqk.h"

int sqk_file_blocks(struct sqk_image *img, const struct sqk_inode *file, uint32_t *words,
		    uint32_t cap, uint32_t *count)
{
	struct findex *fi;
	int rc = findex_get(img, file, &fi);

	if (rc)
		return rc;
	*count = fi->nblocks;
	if (fi->nblocks <= cap) {
		if (fi->nblocks)
			memcpy(words, fi->words, (size_t)fi->nblocks * sizeof(*words));
	}
	else
		rc = SQK_ETOOBIG;
	findex_put(img, fi);
	return rc;
}

int sqk_fragment_entry(struct sqk_image *img, uint32_t idx, uint64_t *start, uint32_t *word)
{
	if (idx >= img->sb.fragment_count || !img->frags)
		return SQK_EBOUNDS;
	*start = img->frags[idx].start;
	*word = img->frags[idx].size;
	return 0;
}

int sqk_image_read_raw(struct sqk_image *img, uint64_t pos, void *buf, size_t len)
{
	return img_read(img, pos, buf, len);
}
