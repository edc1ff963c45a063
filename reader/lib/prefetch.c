/* SPDX-License-Identifier: BSD-2-Clause */
/* Fetching the data of a set of files ahead of a caller that reads all of them in another order
 * than the image's (sqk tar or extract of a folder of a remote image): an access-ordered image
 * keeps the files of a start at its front, out of the tree's order, where a walk would meet
 * them one at a time, a round trip each. The files' ranges are fetched in image order, and the
 * walk's readahead (stream.c) takes files in them, as in the hint's once fetched, as fetched:
 * they neither extend nor end a walk, which then runs on through the files in the tree's order
 * between them and never past them. */
#include <stdlib.h>
#include <sys/stat.h>

#include "sqk/error.h"
#include "internal.h"

/* Ranges closer than this are fetched as one (the gap costs less than a part of its own), while
 * the gaps come to at most a quarter of the set's max. */
#define FETCH_GAP ((uint64_t)256 << 10)

struct pf_range {
	uint64_t start, length;
	bool front; /* in the prefetch hint's ranges: out of the tree's order */
};

struct sqk_prefetch {
	struct sqk_image *img;
	struct pf_range *r;
	size_t n, cap;
	uint64_t max;
	uint32_t last_frag; /* the fragment block added last (files share them) */
	bool remote;
};

int sqk_prefetch_new(struct sqk_image *img, uint64_t max, struct sqk_prefetch **out)
{
	if (!img || !out)
		return SQK_EINVAL;
	*out = calloc(1, sizeof(**out));
	if (!*out)
		return SQK_ENOMEM;
	(*out)->img = img;
	(*out)->max = max;
	(*out)->last_frag = SQK_NONE32;
	(*out)->remote = sqk_io_is_remote(img->io);
	return 0;
}

static bool in_hint(const struct sqk_image *img, uint64_t pos)
{
	for (size_t i = 0; i < img->nhint; i++)
		if (pos >= img->hint[i].start && pos - img->hint[i].start < img->hint[i].length)
			return true;
	return false;
}

/* Adds [start, start + len) (image positions). */
static int range_add(struct sqk_prefetch *p, uint64_t start, uint64_t len)
{
	if (len == 0)
		return 0;
	if (p->n == p->cap) {
		size_t cap = p->cap ? p->cap * 2 : 256;
		struct pf_range *r = realloc(p->r, cap * sizeof(*r));
		if (!r)
			return SQK_ENOMEM;
		p->r = r;
		p->cap = cap;
	}
	p->r[p->n++] = (struct pf_range){ start, len, in_hint(p->img, start) };
	return 0;
}

int sqk_prefetch_add(struct sqk_prefetch *p, const struct sqk_inode *file)
{
	struct findex *fi;
	uint64_t fstart;
	uint32_t word;
	int rc;

	if (!p || !file)
		return SQK_EINVAL;
	if (!p->remote || !S_ISREG(file->mode))
		return 0;
	rc = findex_get(p->img, file, &fi);
	if (rc)
		return rc;
	rc = range_add(p, fi->blocks_start, fi->data_end - fi->blocks_start);
	findex_put(p->img, fi);
	if (rc == 0 && file->frag_index != SQK_NONE32 && file->frag_index != p->last_frag &&
	    sqk_fragment_entry(p->img, file->frag_index, &fstart, &word) == 0) {
		rc = range_add(p, fstart, word & SQK_BLOCK_SIZE_MASK);
		p->last_frag = file->frag_index;
	}
	return rc;
}

/* Cuts *len to what is *left of the max, and takes it from there. */
static void cap_take(uint64_t *len, uint64_t *left)
{
	if (*len > *left)
		*len = *left;
	*left -= *len;
}

/* Keeps at most p->max bytes of p's ranges: those in the prefetch hint's ranges first (a walk
 * in the tree's order meets them out of order, and fetches the rest ahead by itself), then the
 * others in the order they were added. */
static void ranges_cap(struct sqk_prefetch *p)
{
	uint64_t left = p->max;
	size_t i;

	for (i = 0; i < p->n; i++)
		if (p->r[i].front)
			cap_take(&p->r[i].length, &left);
	for (i = 0; i < p->n; i++)
		if (!p->r[i].front)
			cap_take(&p->r[i].length, &left);
}

static int range_cmp(const void *a, const void *b)
{
	const struct pf_range *x = a, *y = b;
	return x->start < y->start ? -1 : x->start > y->start;
}

/* Caps, sorts and merges p's ranges; returns them as a struct fetched. */
static struct fetched *ranges_merge(struct sqk_prefetch *p)
{
	uint64_t gaps = 0;
	struct fetched *f;
	size_t i, m = 0;

	ranges_cap(p);
	qsort(p->r, p->n, sizeof(*p->r), range_cmp);
	for (i = 0; i < p->n; i++) {
		struct pf_range *last = m ? &p->r[m - 1] : NULL;
		uint64_t lend = last ? last->start + last->length : 0;
		uint64_t end = p->r[i].start + p->r[i].length;
		uint64_t gap = last && p->r[i].start > lend ? p->r[i].start - lend : 0;

		if (p->r[i].length == 0)
			continue;
		if (last && p->r[i].start <= lend + FETCH_GAP && gaps + gap <= p->max / 4) {
			gaps += gap;
			if (end > lend)
				last->length = end - last->start;
		} else {
			p->r[m++] = p->r[i];
		}
	}
	f = malloc(sizeof(*f) + m * sizeof(f->r[0]));
	if (f) {
		f->n = m;
		for (i = 0; i < m; i++)
			f->r[i] = (struct sqk_hint_range){ .start = p->r[i].start,
							   .length = p->r[i].length };
	}
	return f;
}

void sqk_prefetch_start(struct sqk_prefetch *p)
{
	struct sqk_image *img = p ? p->img : NULL;
	struct fetched *f = p && p->n ? ranges_merge(p) : NULL;

	if (f) {
		f->older = atomic_load(&img->fetched);
		while (!atomic_compare_exchange_weak(&img->fetched, &f->older, f))
			;
		for (size_t i = 0; i < f->n; i++)
			sqk_io_prefetch(img->io, img->base + f->r[i].start, f->r[i].length, false);
	}
	if (p)
		free(p->r);
	free(p);
}

int sqk_image_prefetch_tree(struct sqk_image *img, const struct sqk_inode *top, uint64_t max)
{
	struct sqk_prefetch *p;
	struct sqk_walk_entry e;
	struct sqk_walk *w;
	int rc;

	if (!img || !sqk_io_is_remote(img->io))
		return 0;
	rc = sqk_walk_open(img, top, SQK_WALK_ONCE, SQK_WALK_MAX_DEPTH, &w);
	if (rc == 0 && (rc = sqk_prefetch_new(img, max, &p)) != 0)
		sqk_walk_close(w);
	if (rc)
		return rc;
	while ((rc = sqk_walk_next(w, &e)) != 0) {
		if (rc < 0 && e.event == SQK_WALK_ERR_FATAL)
			break;
		rc = rc < 0 || (e.flags & SQK_WALK_SEEN) ? 0 : sqk_prefetch_add(p, &e.inode);
		if (rc == SQK_ENOMEM)
			break;
		rc = 0; /* an unreadable part: the walk that reads it says so */
	}
	sqk_walk_close(w);
	if (rc < 0) {
		p->n = 0;
		sqk_prefetch_start(p); /* frees it, fetches nothing */
		return rc;
	}
	sqk_prefetch_start(p);
	return 0;
}

/* Whether image position pos lies in a range asked for already: the prefetch hint's, once
 * fetched, or one of sqk_prefetch_start's. */
bool fetched_has(const struct sqk_image *img, uint64_t pos)
{
	const struct fetched *f = atomic_load(&img->fetched);
	size_t lo = 0, hi = f ? f->n : 0;

	if (atomic_load(&img->hint_fetched) && in_hint(img, pos))
		return true;
	while (lo < hi) { /* the first range ending after pos */
		size_t mid = lo + (hi - lo) / 2;
		if (f->r[mid].start + f->r[mid].length <= pos)
			lo = mid + 1;
		else
			hi = mid;
	}
	return f && lo < f->n && f->r[lo].start <= pos;
}

void fetched_free(struct sqk_image *img)
{
	struct fetched *f = atomic_load(&img->fetched);

	while (f) {
		struct fetched *older = f->older;
		free(f);
		f = older;
	}
}
