/* SPDX-License-Identifier: BSD-2-Clause */
/* Which reads may be fetched ahead, and how far: the decision a remote backend cannot make from
 * byte ranges alone.
 * - A file read sequentially is one stream, fetched ahead up to the end of its own data blocks.
 * - A file read at random is fetched whole from its second read out of sequence.
 * - Only a walk through the image in its own order fetches ahead across files: WALK_FILES files
 *   with data blocks in a row, each read whole from its start, each starting where the one
 *   before ended give or take WALK_GAP_BLOCKS blocks (fragment blocks written between them), as
 *   tar of the tree reads them. It runs to the end of the image, or of the prefetch hint's range
 *   it is in; the first file read further on ends it. Files without data blocks (all in
 *   fragment blocks), duplicates (their blocks behind the walk) and files whose bytes were
 *   asked for already (the hint's once fetched, sqk_prefetch_start's) neither extend nor end
 *   it: a walk in the tree's order of an access-ordered image meets the front's files between
 *   the others. */
#include "internal.h"

#define WALK_FILES 8u /* fewer: an import reading a few files of a package in order */
#define WALK_GAP_BLOCKS 4u
#define READ_SKIP ((uint64_t)1 << 20)
#define RANDOM_WHOLE_MAX ((uint64_t)64 << 20)

void seqwalk_init(struct seqwalk *w)
{
	pthread_mutex_init(&w->mu, NULL);
	w->start = w->end = 0;
	w->run = 0;
	atomic_init(&w->on, false);
}

void seqwalk_free(struct seqwalk *w)
{
	pthread_mutex_destroy(&w->mu);
}

/* fi's first read: does it continue the walk? A file starting further on ends it, and so does
 * one starting before the walk began; one whose blocks lie inside what the walk has passed (a
 * duplicate sharing the blocks of a file read earlier in the walk), or starting in a range
 * fetched already (an access-ordered image's front, which a walk in the tree's order meets
 * between the files of the rest; a file cut at a set's end too, its own readahead fetching
 * the rest), neither extends nor ends it. */
static void first_read(struct sqk_image *img, struct findex *fi)
{
	struct seqwalk *w = &img->walk;
	bool fetched = sqk_io_is_remote(img->io) && fetched_has(img, fi->blocks_start);

	pthread_mutex_lock(&w->mu);
	if (fetched || (w->run && fi->blocks_start >= w->start && fi->blocks_start < w->end)) {
		atomic_store(&fi->aside, true);
	} else if (w->run && fi->blocks_start >= w->end &&
		   fi->blocks_start - w->end <= (uint64_t)WALK_GAP_BLOCKS * img->sb.block_size) {
		atomic_store(&fi->in_walk, true);
	} else {
		w->run = 0;
		atomic_store(&w->on, false);
	}
	pthread_mutex_unlock(&w->mu);
}

/* fi was read whole, from its start to its end, each read continuing the one before. */
static void read_whole(struct sqk_image *img, struct findex *fi)
{
	struct seqwalk *w = &img->walk;

	if (atomic_load(&fi->aside))
		return;
	pthread_mutex_lock(&w->mu);
	w->run = atomic_load(&fi->in_walk) && w->run ? w->run + 1 : 1;
	if (w->run == 1)
		w->start = fi->blocks_start;
	w->end = fi->data_end;
	if (w->run >= WALK_FILES)
		atomic_store(&w->on, true);
	pthread_mutex_unlock(&w->mu);
}

/* A remote file read at random (a mapped library faulting its pages in, a database) is fetched
 * whole in the background at its second read out of sequence (one such read, a single 4 KiB
 * probe, fetches just its block), up to RANDOM_WHOLE_MAX bytes of blocks: one request instead
 * of a round trip for each cold region it touches; readers of regions not there yet wait for
 * theirs (moved ahead of readahead). Never beyond the file. */
static void read_random(struct sqk_image *img, struct findex *fi)
{
	uint64_t len = fi->data_end - fi->blocks_start;

	if (fi->nblocks < 2 || !sqk_io_is_remote(img->io) || atomic_load(&fi->random_reads) > 1 ||
	    atomic_fetch_add(&fi->random_reads, 1) != 1)
		return;
	sqk_io_prefetch(img->io, img->base + fi->blocks_start,
			len < RANDOM_WHOLE_MAX ? len : RANDOM_WHOLE_MAX, false);
}

/* A read of fi at off is about to start (seq: it continues the one before). A file counts as
 * read whole when its reads start at offset 0 and reach its end without skipping more than
 * READ_SKIP past the furthest byte read so far (the kernel's readahead through FUSE sends
 * several reads at once, which may arrive out of order). */
void stream_begin(struct sqk_image *img, struct findex *fi, uint64_t off, bool seq)
{
	if (fi->nblocks == 0)
		return;
	if (!seq)
		read_random(img, fi);
	if (off == 0) {
		if (!atomic_exchange(&fi->started, true))
			first_read(img, fi);
	} else if (off > atomic_load(&fi->hi) + READ_SKIP) {
		atomic_store(&fi->broken, true);
	}
}

/* A read of fi ended at end. */
void stream_end(struct sqk_image *img, struct findex *fi, uint64_t end)
{
	uint_fast64_t hi = atomic_load(&fi->hi);

	if (fi->nblocks == 0)
		return;
	while (end > hi && !atomic_compare_exchange_weak(&fi->hi, &hi, end))
		;
	if (end == fi->size && atomic_load(&fi->started) && !atomic_load(&fi->broken) &&
	    !atomic_exchange(&fi->whole, true))
		read_whole(img, fi);
}

/* Where a walk at image position pos may be fetched ahead to: the end of the prefetch hint's
 * range that holds pos (the image says its working set ends there; the range itself was
 * fetched at open), else the end of the image. */
static uint64_t walk_limit(const struct sqk_image *img, uint64_t pos)
{
	const struct sqk_hint_range *h = hint_find(img, pos);

	return h ? img->base + h->start + h->length : UINT64_MAX;
}

/* What the io may fetch ahead of a read at image position pos of fi's data (fi NULL: a data or
 * fragment block read on demand): fi's own blocks, or the rest of the image during a walk;
 * NULL = nothing. *tmp holds the answer. */
const struct sqk_io_ahead *stream_ahead(struct sqk_image *img, struct findex *fi,
					    uint64_t pos, struct sqk_io_ahead *tmp)
{
	bool walk = atomic_load(&img->walk.on);

	if (walk && (!fi || atomic_load(&fi->in_walk))) {
		*tmp = (struct sqk_io_ahead){ .stream = SQK_IO_AHEAD_WALK,
					      .limit = walk_limit(img, pos) };
		return tmp;
	}
	if (!fi)
		return NULL;
	*tmp = (struct sqk_io_ahead){ .stream = fi->ino, .limit = img->base + fi->data_end };
	return tmp;
}
