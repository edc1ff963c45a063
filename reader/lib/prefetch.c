/* SPDX-License-Identifier: BSD-2-Clause */
/* Fetching the data of a set of files ahead of a caller that reads all of them in another order
 * than the image's (sqk tar or extract of a folder of a remote image): an access-ordered image
 * keeps the files of a start at its front, out of the tree's order, where a walk would meet
 * them one at a time, a round trip each. The files' ranges are fetched in image order, and the
 * walk's readahead (stream.c) takes files in them, as in the hint's once fetched, as fetched:
 * they neither extend nor end a walk, which then runs on through the files in the tree's order
 * between them and never past them. */
#include <stdlib.h>

#include "common/grow.h"
#include "sqk/error.h"
#include "internal.h"

/* Ranges closer than this are fetched as one run: the gap costs less than a part of its own. */
#define FETCH_GAP ((uint64_t)256 << 10)
/* What a range costs is counted in whole chunks of the integrity data (what the remote io
 * fetches and holds), of this size without integrity data. */
#define FETCH_GRAIN ((uint64_t)64 << 10)

struct pf_range {
	uint64_t start, length;
	size_t order; /* when it was added (a run: its first member's) */
	bool front;   /* in the prefetch hint's ranges: out of the tree's order (a run: any) */
};

struct sqk_prefetch {
	struct sqk_image *img;
	struct pf_range *r;
	size_t n, cap;
	uint64_t max, grain;
	uint64_t front, other; /* bytes of each kind so far: the least they cost */
	uint32_t last_frag;    /* the fragment block added last (files share them) */
	bool remote;
};

/* The range of r[0..n) (ascending, apart) that holds image position pos, or NULL. */
static const struct sqk_hint_range *range_at(const struct sqk_hint_range *r, size_t n,
					     uint64_t pos)
{
	size_t lo = 0, hi = n;

	while (lo < hi) { /* the first range ending after pos */
		size_t mid = lo + (hi - lo) / 2;
		if (r[mid].start + r[mid].length <= pos)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && r[lo].start <= pos ? &r[lo] : NULL;
}

const struct sqk_hint_range *hint_find(const struct sqk_image *img, uint64_t pos)
{
	return range_at(img->hint, img->nhint, pos);
}

/* Whether pos, in hint range h (NULL: in none), was asked for by the hint's fetch: the hint
 * fetched, and pos within what the io's prefetch takes of h. */
static bool hint_sent(const struct sqk_image *img, const struct sqk_hint_range *h, uint64_t pos)
{
	return h && atomic_load(&img->hint_fetched) && pos - h->start < img->prefetch_clip;
}

int sqk_prefetch_new(struct sqk_image *img, uint64_t max, struct sqk_prefetch **out)
{
	struct sqk_integ_trailer t;

	if (!img || !out)
		return SQK_EINVAL;
	*out = calloc(1, sizeof(**out));
	if (!*out)
		return SQK_ENOMEM;
	(*out)->img = img;
	/* no run longer than the io's prefetch takes of one: a run costs no more than the max */
	(*out)->max = max < img->prefetch_clip ? max : img->prefetch_clip;
	(*out)->last_frag = SQK_NONE32;
	(*out)->remote = sqk_io_is_remote(img->io);
	(*out)->grain = (*out)->remote && sqk_image_integrity(img, &t) == 0 && t.chunk_size
			? t.chunk_size : FETCH_GRAIN;
	return 0;
}

void sqk_prefetch_free(struct sqk_prefetch *p)
{
	if (p)
		free(p->r);
	free(p);
}

/* What fetching [start, start + len) costs: the chunks it touches. */
static uint64_t range_cost(const struct sqk_prefetch *p, uint64_t start, uint64_t len)
{
	uint64_t a = start / p->grain, b = (start + len + p->grain - 1) / p->grain;

	return (b - a) * p->grain;
}

/* Adds [start, start + len) (image positions, inside the image). */
static int range_add(struct sqk_prefetch *p, uint64_t start, uint64_t len, bool front)
{
	if (len == 0)
		return 0;
	if (mem_grow(&p->r, &p->cap, p->n + 1, sizeof(*p->r), 0))
		return SQK_ENOMEM;
	p->r[p->n] = (struct pf_range){ .start = start, .length = len, .order = p->n,
					 .front = front };
	p->n++;
	if (front)
		p->front += len;
	else
		p->other += len;
	return 0;
}

/* The fragment block of file into *start and *len: false when it has none, or its table
 * entry does not lie inside the image (its read says what is wrong). */
static bool frag_block(const struct sqk_prefetch *p, const struct sqk_inode *file,
		       uint64_t *start, uint32_t *len)
{
	const struct sqk_super *sb = &p->img->sb;
	uint32_t word;

	if (file->frag_index == SQK_NONE32 ||
	    sqk_fragment_entry(p->img, file->frag_index, start, &word))
		return false;
	*len = word & SQK_BLOCK_SIZE_MASK;
	return *start <= sb->bytes_used && *len <= sb->bytes_used - *start &&
	       *len <= sb->block_size;
}

int sqk_prefetch_add(struct sqk_prefetch *p, const struct sqk_inode *file)
{
	const struct sqk_hint_range *h;
	struct findex *fi;
	uint64_t pos, fstart = 0;
	uint32_t flen = 0;
	bool front, frag;
	int rc;

	if (!p || !file)
		return SQK_EINVAL;
	if (!p->remote || sqk_basic_type(file->type) != SQK_T_FILE || p->front >= p->max)
		return 0;
	frag = frag_block(p, file, &fstart, &flen);
	/* where its first byte is stored: the fragment block when it has no whole block */
	pos = frag && file->size < p->img->sb.block_size ? fstart : file->blocks_start;
	h = hint_find(p->img, pos);
	front = h != NULL;
	if (hint_sent(p->img, h, pos))
		return 0; /* on its way already (fetched_has) */
	if (!front && p->front + p->other >= p->max)
		return 0; /* the max is spent: by the front first, then in the order added */
	rc = findex_get(p->img, file, &fi);
	if (rc)
		return rc;
	rc = range_add(p, fi->blocks_start, fi->data_end - fi->blocks_start, front);
	findex_put(p->img, fi);
	if (rc || !frag || file->frag_index == p->last_frag)
		return rc;
	p->last_frag = file->frag_index; /* files share fragment blocks: added once in a row */
	return range_add(p, fstart, flen, front);
}

/* Cuts run r to what is *left of the max (in whole grains from its first), and takes its cost
 * from there. */
static void cap_take(const struct sqk_prefetch *p, struct pf_range *r, uint64_t *left)
{
	uint64_t cost = range_cost(p, r->start, r->length);

	if (cost > *left) {
		uint64_t end = r->start / p->grain * p->grain + *left / p->grain * p->grain;
		r->length = end > r->start ? end - r->start : 0;
		cost = range_cost(p, r->start, r->length);
	}
	*left -= r->length ? cost : 0;
}

static int start_cmp(const void *a, const void *b)
{
	const struct pf_range *x = a, *y = b;
	return x->start < y->start ? -1 : x->start > y->start;
}

/* The runs with a front file first, then in the order their first files were added. */
static int rank_cmp(const void *a, const void *b)
{
	const struct pf_range *x = a, *y = b;
	if (x->front != y->front)
		return x->front ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

/* Merges p's ranges into runs in image order (gaps under FETCH_GAP); returns how many. */
static size_t ranges_runs(struct sqk_prefetch *p)
{
	size_t i, m = 0;

	qsort(p->r, p->n, sizeof(*p->r), start_cmp);
	for (i = 0; i < p->n; i++) {
		struct pf_range *last = m ? &p->r[m - 1] : NULL;
		uint64_t lend = last ? last->start + last->length : 0;
		uint64_t end = p->r[i].start + p->r[i].length;

		if (last && p->r[i].start <= lend + FETCH_GAP) {
			if (end > lend)
				last->length = end - last->start;
			last->front |= p->r[i].front;
			if (p->r[i].order < last->order)
				last->order = p->r[i].order;
		} else {
			p->r[m++] = p->r[i];
		}
	}
	return m;
}

/* p's runs, as many as the max has room for, each costing the chunks it spans (the front's
 * first: a walk in the tree's order meets them out of order, and fetches the rest ahead by
 * itself; then in the order added, the last one cut), in image order as a struct fetched;
 * NULL when none is left. */
static struct fetched *ranges_merge(struct sqk_prefetch *p)
{
	size_t i, k = 0, m = ranges_runs(p);
	uint64_t left = p->max;
	struct fetched *f;

	qsort(p->r, m, sizeof(*p->r), rank_cmp);
	for (i = 0; i < m; i++) {
		cap_take(p, &p->r[i], &left);
		if (p->r[i].length)
			p->r[k++] = p->r[i];
	}
	qsort(p->r, k, sizeof(*p->r), start_cmp);
	f = k ? malloc(sizeof(*f) + k * sizeof(f->r[0])) : NULL;
	for (i = 0; f && i < k; i++)
		f->r[i] = (struct sqk_hint_range){ .start = p->r[i].start,
						   .length = p->r[i].length };
	if (f)
		f->n = k;
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
	sqk_prefetch_free(p);
}

/* Whether no file added to p can be kept any more: the max spent by front files, or by all
 * with no front file left to add (no hint, or the hint fetched). */
static bool set_full(const struct sqk_prefetch *p)
{
	return p->front >= p->max ||
	       (p->front + p->other >= p->max &&
		(!p->img->nhint || atomic_load(&p->img->hint_fetched)));
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
	while (!set_full(p) && (rc = sqk_walk_next(w, &e)) != 0) {
		if (rc < 0 && e.event == SQK_WALK_ERR_FATAL)
			break;
		rc = rc < 0 || (e.flags & SQK_WALK_SEEN) ? 0 : sqk_prefetch_add(p, &e.inode);
		if (rc == SQK_ENOMEM)
			break;
		rc = 0; /* an unreadable part: the walk that reads it says so */
	}
	sqk_walk_close(w);
	if (rc < 0) {
		sqk_prefetch_free(p);
		return rc;
	}
	sqk_prefetch_start(p);
	return 0;
}

/* Whether image position pos lies in a range asked for already: the prefetch hint's, once
 * fetched (as far as the io's prefetch took it), or one of sqk_prefetch_start's. */
bool fetched_has(const struct sqk_image *img, uint64_t pos)
{
	if (hint_sent(img, hint_find(img, pos), pos))
		return true;
	for (const struct fetched *f = atomic_load(&img->fetched); f; f = f->older)
		if (range_at(f->r, f->n, pos))
			return true;
	return false;
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
