/* SPDX-License-Identifier: BSD-2-Clause */
/* sqk_image_info: what `sqk info` reports beyond the superblock, gathered through the reader's
 * own paths: every inode reachable from the root decoded once (kinds, file bytes, the stored
 * blocks of each distinct block list, from its size words), then the metadata blocks of the
 * inode and directory tables counted by their headers. The walk is libsqk's (walk.c), once per
 * inode. */
#include <stdlib.h>
#include <string.h>

#include "common/depth.h"
#include "common/endian.h"
#include "common/grow.h"
#include "common/meta.h"
#include "internal.h"
#include "common/abi.h"

#define WORDS_PER_READ 512u

/* A distinct regular file: where its data is, for the data blocks (a block list shared by
 * duplicates counts once) and for telling duplicates apart (same size and same data). */
struct info_file {
	uint64_t size, start;       /* start is 0 when no block is stored (the data is the tail) */
	uint32_t frag, off;
	uint64_t stored, raw;       /* size words that are not 0; of those, stored raw */
};

struct info_walk {
	struct sqk_image *img;
	struct sqk_image_info *out;
	struct info_file *files;
	size_t nfiles, capfiles;
	char *path;                 /* "/a/b" of the entry at hand, for messages; "/" is the root */
	size_t pcap;
};

static int add_file(struct info_walk *w, const struct info_file *f)
{
	int rc = mem_grow(&w->files, &w->capfiles, w->nfiles + 1, sizeof(*w->files), 0);

	if (rc)
		return rc;
	w->files[w->nfiles++] = *f;
	return 0;
}

/* The path for messages: "/" and the walk's path. */
static int path_set(struct info_walk *w, const struct sqk_walk_entry *e)
{
	int rc = mem_grow(&w->path, &w->pcap, e->path_len + 2, 1, 0);

	if (rc)
		return rc;
	w->path[0] = '/';
	memcpy(w->path + 1, e->path, e->path_len + 1);
	return 0;
}

static const char *shown(const struct info_walk *w)
{
	return w->path;
}

/* Adds a regular file's bytes and the number of its non-zero (stored) size words. */
static int file_stats(struct info_walk *w, const struct sqk_inode *f)
{
	uint64_t bs = w->img->sb.block_size;
	uint64_t n = f->size / bs + (f->frag_index == SQK_NONE32 && f->size % bs);
	struct info_file r = { f->size, f->blocks_start, f->frag_index, f->frag_offset, 0, 0 };
	uint32_t words[WORDS_PER_READ];
	struct mcur c;

	w->out->file_bytes += f->size;
	w->out->sparse_bytes += f->sparse;
	inode_cursor(w->img, f->body_ref, &c);
	for (uint64_t k = 0; k < n;) {
		size_t m = n - k < WORDS_PER_READ ? (size_t)(n - k) : WORDS_PER_READ;
		int rc = meta_read(w->img, &c, words, m * 4);

		if (rc) {
			img_logf(w->img, "%s: cannot read the block list: %s", shown(w),
				 sqk_strerror(rc));
			return rc;
		}
		for (size_t i = 0; i < m; i++, k++) {
			uint32_t word = get_le32(&words[i]);

			r.stored += word != 0;
			r.raw += (word & SQK_BLOCK_RAW) != 0;
		}
	}
	w->out->counts.sparse_blocks += n - r.stored;
	if (!r.stored)
		r.start = 0;
	return add_file(w, &r);
}

/* Counts an inode met for the first time; files add their blocks. */
static int visit(struct info_walk *w, const struct sqk_walk_entry *e)
{
	uint16_t basic = sqk_basic_type(e->inode.type);

	if (e->flags & SQK_WALK_SEEN) {
		w->out->counts.hard_links += basic != SQK_T_DIR; /* another name of a file */
		return 0;
	}
	w->out->inodes_found++;
	w->out->kinds[basic & 7]++;
	return basic == SQK_T_FILE ? file_stats(w, &e->inode) : 0;
}

/* The message of a failed step of the walk (its path in w->path). */
static void walk_failed(struct info_walk *w, const struct sqk_walk_entry *e, int rc)
{
	char b[2 * SQK_DEPTH_SHOWN + 4];

	if (e->event == SQK_WALK_ERR_DEPTH)
		img_logf(w->img, "%s: directories nested deeper than %u levels (the most sqk "
			 "walks)", depth_shown(shown(w), b), SQK_DEPTH_MAX);
	else if (e->event == SQK_WALK_ERR_INODE)
		img_logf(w->img, "%s: cannot read inode: %s", shown(w), sqk_strerror(rc));
	else if (e->event == SQK_WALK_ERR_LIST)
		img_logf(w->img, "%s: cannot list directory: %s", shown(w), sqk_strerror(rc));
}

/* Every entry below the root, depth first in listing order; each inode counted once. */
static int walk(struct info_walk *w, const struct sqk_inode *root)
{
	struct sqk_walk_entry e;
	struct sqk_walk *wk;
	int rc = sqk_walk_open(w->img, root, SQK_WALK_ONCE, SQK_WALK_MAX_DEPTH, &wk);

	while (rc == 0 && (rc = sqk_walk_next(wk, &e)) == 1) {
		rc = path_set(w, &e);
		if (rc == 0)
			rc = visit(w, &e);
	}
	if (rc < 0 && e.path && e.event != SQK_WALK_PRE && path_set(w, &e) == 0)
		walk_failed(w, &e, rc);
	sqk_walk_close(wk);
	return rc;
}

/* By blocks_start, the longest block list first. */
static int start_cmp(const void *a, const void *b)
{
	const struct info_file *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->stored < y->stored ? 1 : x->stored > y->stored;
}

/* By what the data is: size, blocks, fragment. */
static int data_cmp(const void *a, const void *b)
{
	const struct info_file *x = a, *y = b;

	if (x->size != y->size)
		return x->size < y->size ? -1 : 1;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	if (x->frag != y->frag)
		return x->frag < y->frag ? -1 : 1;
	return (x->off > y->off) - (x->off < y->off);
}

/* Data blocks: each distinct blocks_start counted once, with its longest block list. Then the
 * duplicates, as sqk mkimage counts them: a file whose data (stored blocks or a tail) is that
 * of an earlier file of the same size; its sparse blocks were counted twice. */
static void count_data(struct info_walk *w)
{
	struct sqk_counts *o = &w->out->counts;
	uint64_t bs = w->img->sb.block_size;

	if (w->nfiles)
		qsort(w->files, w->nfiles, sizeof(*w->files), start_cmp);
	for (size_t i = 0; i < w->nfiles; i++) {
		const struct info_file *f = &w->files[i];

		if (f->stored && (i == 0 || f->start != w->files[i - 1].start)) {
			o->data_blocks += f->stored;
			o->raw_blocks += f->raw;
		}
	}
	if (w->nfiles)
		qsort(w->files, w->nfiles, sizeof(*w->files), data_cmp);
	for (size_t i = 1; i < w->nfiles; i++) {
		const struct info_file *f = &w->files[i];

		if (!f->size || (!f->stored && f->frag == SQK_NONE32) ||
		    data_cmp(f, &w->files[i - 1]))
			continue;
		o->dup_files++;
		o->dup_bytes += f->size;
		o->sparse_blocks -= f->size / bs + (f->frag == SQK_NONE32 && f->size % bs) -
				    f->stored;
	}
}

/* The rest of out->counts, from the kinds and the superblock. */
static void fill_counts(const struct sqk_image *img, struct sqk_image_info *out)
{
	struct sqk_counts *c = &out->counts;

	out->data_blocks = c->data_blocks;
	c->inodes = img->sb.inode_count;
	c->files = out->kinds[SQK_T_FILE];
	c->dirs = out->kinds[SQK_T_DIR];
	c->symlinks = out->kinds[SQK_T_SYMLINK];
	c->devices = out->kinds[SQK_T_BLKDEV] + out->kinds[SQK_T_CHRDEV];
	c->fifos_sockets = out->kinds[SQK_T_FIFO] + out->kinds[SQK_T_SOCKET];
	c->fragment_blocks = img->sb.fragment_count;
}

/* Counts the metadata blocks of [start, end) by following their headers. */
static int count_meta(struct sqk_image *img, uint64_t start, uint64_t end, uint64_t *count)
{
	uint64_t pos = start;
	uint8_t h[2];

	*count = 0;
	while (pos < end) {
		uint16_t v, len;
		int rc = img_read(img, pos, h, 2);

		if (rc)
			return rc == SQK_EBOUNDS ? SQK_ECORRUPT : rc;
		v = get_le16(h);
		len = v & (uint16_t)~SQK_META_RAW;
		if (len == 0 || len > SQK_META_SIZE) {
			img_logf(img, "bad metadata block header 0x%04x (offset %llu): %s", v,
				 (unsigned long long)pos, sqk_strerror(SQK_ECORRUPT));
			return SQK_ECORRUPT;
		}
		pos += 2u + len;
		(*count)++;
	}
	if (pos != end) {
		img_logf(img,
			 "metadata blocks run past the next table at offset %llu (offset %llu): "
			 "%s",
			 (unsigned long long)end, (unsigned long long)pos,
			 sqk_strerror(SQK_ECORRUPT));
		return SQK_ECORRUPT;
	}
	return 0;
}

#define INFO_V1 SQK_ABI_SIZE_V1(struct sqk_image_info, counts)

/* Borrows img; fills the caller's *out (its size set), through a struct of this library's
 * version (whatever the walk found, also after a failure). */
int sqk_image_info(struct sqk_image *img, struct sqk_image_info *user)
{
	struct sqk_image_info mine = { .size = sizeof(mine) }, *out = &mine;
	const struct sqk_super *sb = &img->sb;
	struct info_walk w = { .img = img, .out = out };
	struct sqk_inode root;
	int rc;

	if (!user || user->size < INFO_V1)
		return SQK_EABI;
	out->inode_table_bytes = img->inode_end - sb->inode_table_start;
	out->directory_table_bytes = img->dir_end - sb->directory_table_start;
	rc = sqk_image_root(img, &root);
	if (rc)
		img_logf(img, "/: cannot read the root inode: %s", sqk_strerror(rc));
	if (rc == 0)
		rc = walk(&w, &root);
	if (rc == 0) {
		count_data(&w);
		fill_counts(img, out);
		rc = count_meta(img, sb->inode_table_start, img->inode_end,
				&out->inode_metadata_blocks);
	}
	if (rc == 0)
		rc = count_meta(img, sb->directory_table_start, img->dir_end,
				&out->directory_metadata_blocks);
	free(w.files);
	free(w.path);
	abi_copy_out(user, out, sizeof(*out), INFO_V1);
	return rc;
}
