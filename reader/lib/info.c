/* sqk_image_info: what `sqk info` reports beyond the superblock, gathered through the reader's
 * own paths: every inode reachable from the root decoded once (kinds, file bytes, the stored
 * blocks of each distinct block list, from its size words), then the metadata blocks of the
 * inode and directory tables counted by their headers. The walk keeps its directory stack on the
 * heap: how deep directories nest is a field of the image. */
#include <stdlib.h>
#include <string.h>

#include "common/depth.h"
#include "common/endian.h"
#include "common/meta.h"
#include "internal.h"

#define WORDS_PER_READ 512u

/* One directory being listed, and the length of its path in the walk's path buffer. */
struct info_level {
	struct sqk_dir_iter it;
	size_t plen;
};

struct info_walk {
	struct sqk_image *img;
	struct sqk_image_info *out;
	uint8_t *seen;              /* by inode number */
	uint64_t *runs;             /* (blocks_start, stored blocks) pairs of distinct files */
	size_t nruns, caprun;
	struct info_level *stack;
	size_t depth, capdepth;
	char *path;                 /* "/a/b" of the entry at hand; "" is the root */
	size_t plen, pcap;
};

static int add_run(struct info_walk *w, uint64_t start, uint64_t count)
{
	if (w->nruns == w->caprun) {
		size_t cap = w->caprun ? w->caprun * 2 : 256;
		uint64_t *p = realloc(w->runs, cap * 2 * sizeof(*p));

		if (!p)
			return SQK_ENOMEM;
		w->runs = p;
		w->caprun = cap;
	}
	w->runs[2 * w->nruns] = start;
	w->runs[2 * w->nruns + 1] = count;
	w->nruns++;
	return 0;
}

/* The path for messages: the root is "/". */
static const char *shown(const struct info_walk *w)
{
	return w->plen ? w->path : "/";
}

/* Adds a regular file's bytes and the number of its non-zero (stored) size words. */
static int file_stats(struct info_walk *w, const struct sqk_inode *f)
{
	uint64_t bs = w->img->sb.block_size, stored = 0;
	uint64_t n = f->size / bs + (f->frag_index == SQK_NONE32 && f->size % bs);
	uint32_t words[WORDS_PER_READ];
	struct sqk_mcur c;

	w->out->file_bytes += f->size;
	w->out->sparse_bytes += f->sparse;
	sqk_inode_cursor(w->img, f->body_ref, &c);
	for (uint64_t k = 0; k < n;) {
		size_t m = n - k < WORDS_PER_READ ? (size_t)(n - k) : WORDS_PER_READ;
		int rc = sqk_meta_read(w->img, &c, words, m * 4);

		if (rc) {
			sqk_logf(w->img, "%s: cannot read the block list: %s", shown(w),
				 sqk_strerror(rc));
			return rc;
		}
		for (size_t i = 0; i < m; i++, k++)
			stored += sqk_get_le32(&words[i]) != 0;
	}
	return stored ? add_run(w, f->blocks_start, stored) : 0;
}

/* Starts listing dir (whose path is the current one) on top of the stack. */
static int push_dir(struct info_walk *w, const struct sqk_inode *dir)
{
	int rc;

	/* dir is at depth w->depth (the root at 0), its entries one more (common/depth.h) */
	if (w->depth >= SQK_DEPTH_MAX && dir->size > 3) {
		char b[2 * SQK_DEPTH_SHOWN + 4];
		sqk_logf(w->img, "%s: directories nested deeper than %u levels (the most sqk "
			 "walks)", sqk_depth_shown(shown(w), b), SQK_DEPTH_MAX);
		return SQK_ETOOBIG;
	}
	if (w->depth == w->capdepth) {
		size_t cap = w->capdepth ? w->capdepth * 2 : 16;
		struct info_level *s = realloc(w->stack, cap * sizeof(*s));

		if (!s)
			return SQK_ENOMEM;
		w->stack = s;
		w->capdepth = cap;
	}
	rc = sqk_dir_iter_init(w->img, dir, &w->stack[w->depth].it);
	if (rc) {
		sqk_logf(w->img, "%s: cannot list directory: %s", shown(w), sqk_strerror(rc));
		return rc;
	}
	w->stack[w->depth++].plen = w->plen;
	return 0;
}

/* Sets the current path to the one of the directory at the top of the stack plus name. */
static int path_set(struct info_walk *w, size_t base, const char *name, size_t len)
{
	size_t need = base + 1 + len + 1;

	if (need > w->pcap) {
		char *p = realloc(w->path, need * 2);

		if (!p)
			return SQK_ENOMEM;
		w->path = p;
		w->pcap = need * 2;
	}
	w->path[base] = '/';
	memcpy(w->path + base + 1, name, len);
	w->path[base + 1 + len] = 0;
	w->plen = base + 1 + len;
	return 0;
}

/* Counts an inode met for the first time; files add their blocks, directories are listed. */
static int visit(struct info_walk *w, const struct sqk_inode *in)
{
	uint16_t basic = sqk_basic_type(in->type);

	if (w->seen[in->ino])
		return 0;
	w->seen[in->ino] = 1;
	w->out->inodes_found++;
	w->out->kinds[basic & 7]++;
	if (basic == SQK_T_FILE)
		return file_stats(w, in);
	if (basic == SQK_T_DIR)
		return push_dir(w, in);
	return 0;
}

/* Every entry below the root, depth first in listing order; each inode counted once. */
static int walk(struct info_walk *w, const struct sqk_inode *root)
{
	struct sqk_dirent e;
	struct sqk_inode in;
	int rc;

	w->seen[root->ino] = 1;
	w->out->inodes_found = 1;
	w->out->kinds[SQK_T_DIR] = 1;
	rc = push_dir(w, root);
	while (rc == 0 && w->depth) {
		struct info_level *top = &w->stack[w->depth - 1];

		w->plen = top->plen;
		if (w->path)
			w->path[w->plen] = 0;
		rc = sqk_dir_iter_next(&top->it, &e);
		if (rc == 0) {
			w->depth--;
		} else if (rc < 0) {
			sqk_logf(w->img, "%s: cannot list directory: %s", shown(w),
				 sqk_strerror(rc));
		} else {
			rc = path_set(w, top->plen, e.name, e.name_len);
			if (rc == 0 && (rc = sqk_inode_get(w->img, e.ref, &in)) != 0)
				sqk_logf(w->img, "%s: cannot read inode: %s", shown(w),
					 sqk_strerror(rc));
			if (rc == 0)
				rc = visit(w, &in);
		}
	}
	return rc;
}

static int run_cmp(const void *a, const void *b)
{
	const uint64_t *x = a, *y = b;

	if (x[0] != y[0])
		return x[0] < y[0] ? -1 : 1;
	return x[1] < y[1] ? 1 : x[1] > y[1];
}

/* Data blocks: each distinct blocks_start counted once, with its longest block list. */
static uint64_t count_data(struct info_walk *w)
{
	uint64_t n = 0;

	if (w->nruns)
		qsort(w->runs, w->nruns, 2 * sizeof(uint64_t), run_cmp);
	for (size_t i = 0; i < w->nruns; i++)
		if (i == 0 || w->runs[2 * i] != w->runs[2 * (i - 1)])
			n += w->runs[2 * i + 1];
	return n;
}

/* Counts the metadata blocks of [start, end) by following their headers. */
static int count_meta(struct sqk_image *img, uint64_t start, uint64_t end, uint64_t *count)
{
	uint64_t pos = start;
	uint8_t h[2];

	*count = 0;
	while (pos < end) {
		uint16_t v, len;
		int rc = sqk_img_read(img, pos, h, 2);

		if (rc)
			return rc == SQK_EBOUNDS ? SQK_ECORRUPT : rc;
		v = sqk_get_le16(h);
		len = v & (uint16_t)~SQK_META_RAW;
		if (len == 0 || len > SQK_META_SIZE) {
			sqk_logf(img, "bad metadata block header 0x%04x (offset %llu): %s", v,
				 (unsigned long long)pos, sqk_strerror(SQK_ECORRUPT));
			return SQK_ECORRUPT;
		}
		pos += 2u + len;
		(*count)++;
	}
	if (pos != end) {
		sqk_logf(img, "metadata blocks run past the next table at offset %llu (offset %llu): "
			 "%s", (unsigned long long)end, (unsigned long long)pos,
			 sqk_strerror(SQK_ECORRUPT));
		return SQK_ECORRUPT;
	}
	return 0;
}

/* Borrows img; fills the caller's *out. */
int sqk_image_info(struct sqk_image *img, struct sqk_image_info *out)
{
	const struct sqk_super *sb = &img->sb;
	struct info_walk w = { .img = img, .out = out };
	struct sqk_inode root;
	int rc;

	memset(out, 0, sizeof(*out));
	out->inode_table_bytes = img->inode_end - sb->inode_table_start;
	out->directory_table_bytes = img->dir_end - sb->directory_table_start;
	w.seen = calloc((size_t)sb->inode_count + 1, 1);
	if (!w.seen)
		return SQK_ENOMEM;
	rc = sqk_image_root(img, &root);
	if (rc)
		sqk_logf(img, "/: cannot read the root inode: %s", sqk_strerror(rc));
	if (rc == 0)
		rc = walk(&w, &root);
	if (rc == 0) {
		out->data_blocks = count_data(&w);
		rc = count_meta(img, sb->inode_table_start, img->inode_end,
				&out->inode_metadata_blocks);
	}
	if (rc == 0)
		rc = count_meta(img, sb->directory_table_start, img->dir_end,
				&out->directory_metadata_blocks);
	free(w.seen);
	free(w.runs);
	free(w.stack);
	free(w.path);
	return rc;
}
