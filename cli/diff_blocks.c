/* SPDX-License-Identifier: BSD-2-Clause */
/* sqk diff: the shortcut for a file of two images that store it alike. When both images use
 * one compressor and one block size, both are read verified (their integrity data vouches
 * for every stored byte) and the file's block lists (the size words) are equal,
 * its blocks are compared as stored, without decompressing them: equal stored bytes of one
 * compressor decompress to equal bytes. The first block whose stored bytes differ (another
 * compression level can store the same data otherwise) and the tail in a fragment are left
 * to the comparison of the contents. */
#include "diff.h"

#include <stdlib.h>
#include <string.h>

/* The size words of file n's blocks in a new array *w (caller frees) and their count *cnt. */
static int db_words(struct diff_side *s, const struct diff_node *n, const char *path,
		    uint32_t **w, uint32_t *cnt)
{
	int r = sqk_file_blocks(s->c.img, &n->inode, NULL, 0, cnt);

	*w = NULL;
	if (r == SQK_ETOOBIG && *cnt) {
		*w = malloc((size_t)*cnt * sizeof(**w));
		r = *w ? sqk_file_blocks(s->c.img, &n->inode, *w, *cnt, cnt) : SQK_ENOMEM;
	}
	if (r)
		cmd_err(&s->c, path, r, "cannot read the block list");
	return r;
}

/* Whether len stored bytes at pa in image a equal those at pb in image b: 1 yes, 0 no, or
 * SQK_E* (printed). */
static int db_same_raw(struct diff *d, const char *path, uint64_t pa, uint64_t pb,
		       uint32_t len)
{
	while (len) {
		uint32_t n = len < DIFF_WINDOW ? len : DIFF_WINDOW;
		int r = sqk_image_read_raw(d->a.c.img, pa, d->wa, n);

		if (r) {
			cmd_err(&d->a.c, path, r, "cannot read a data block at %llu",
				(unsigned long long)pa);
			return r;
		}
		r = sqk_image_read_raw(d->b.c.img, pb, d->wb, n);
		if (r) {
			cmd_err(&d->b.c, path, r, "cannot read a data block at %llu",
				(unsigned long long)pb);
			return r;
		}
		if (memcmp(d->wa, d->wb, n))
			return 0;
		pa += n;
		pb += n;
		len -= n;
	}
	return 1;
}

/* Both sides images of one compressor and block size, so that equal stored blocks mean
 * equal contents, and both read verified: a damaged block stored alike in two images must
 * fail as it would when decompressed, not pass as equal. */
static bool db_applies(const struct diff *d)
{
	const struct sqk_super *a, *b;

	if (d->a.is_dir || d->b.is_dir || !sqk_image_verified(d->a.c.img) ||
	    !sqk_image_verified(d->b.c.img))
		return false;
	a = sqk_image_super(d->a.c.img);
	b = sqk_image_super(d->b.c.img);
	return a->compressor == b->compressor && a->block_size == b->block_size;
}

int diff_same_blocks(struct diff *d, const struct diff_node *a, const struct diff_node *b,
		     const char *path, uint64_t *from)
{
	uint32_t *wa = NULL, *wb = NULL, na = 0, nb = 0, i, len;
	uint64_t pa = a->inode.blocks_start, pb = b->inode.blocks_start;
	int r = 0, same = 1;

	*from = 0;
	if (!db_applies(d))
		return 0;
	r = db_words(&d->a, a, path, &wa, &na);
	if (r == 0)
		r = db_words(&d->b, b, path, &wb, &nb);
	if (r == 0 && na == nb && (!na || !memcmp(wa, wb, (size_t)na * sizeof(*wa)))) {
		for (i = 0; i < na && same == 1; i++) {
			len = wa[i] & SQK_BLOCK_SIZE_MASK;
			same = len ? db_same_raw(d, path, pa, pb, len) : 1;
			pa += len;
			pb += len;
		}
		r = same < 0 ? same : 0;
		/* blocks [0, i - 1) are equal, and block i - 1 too when it was */
		if (r == 0)
			*from = (uint64_t)(same == 1 ? i : i - 1) *
				sqk_image_super(d->a.c.img)->block_size;
	}
	free(wa);
	free(wb);
	return r;
}
