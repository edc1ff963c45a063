/* SPDX-License-Identifier: BSD-2-Clause */
/* --reuse OLD: compressed blocks of an earlier image copied verbatim instead of compressed again.
 * A new file is matched with the old file at the same path; each of its full blocks is compared,
 * by a worker, with the old block decompressed (a reused block is never trusted from sizes or
 * times, only from the old image's data), and a tail with the old file's tail. Old fragment
 * blocks whose pieces mostly live on are copied whole; the other tails are packed anew. The old
 * image must use the same compressor and block size; otherwise nothing is reused (with a note). */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "sqk/error.h"
#include "common/format.h"
#include "mk.h"
#include "sqk/sqk.h"
#include "reuse.h"

/* The library's lines about OLD: while it opens, the first one is kept as the reason an open
 * failed (it names what OLD is: empty, another format, SquashFS 3.0...); afterwards (a corrupt
 * block met by a worker, from any thread) each is printed. */
static void reuse_log(void *ctx, const char *msg)
{
	struct mk_reuse *r = ctx;

	if (!atomic_load(&r->opened)) {
		if (!r->why[0])
			snprintf(r->why, sizeof(r->why), "%s", msg);
		return;
	}
	fprintf(stderr, "sqk mkimage: --reuse: %s\n", msg);
}

int mk_reuse_open(struct mk_ctx *c, const char *path, struct mk_reuse **out)
{
	*out = NULL;
	struct mk_reuse *r = calloc(1, sizeof(*r));
	if (!r)
		return mk_fail(c, SQK_ENOMEM, "out of memory");
	/* verified reads (the default) */
	struct sqk_open_opts oo = { .size = sizeof(oo), .log = reuse_log, .log_ctx = r };
	int err = sqk_image_open(path, &oo, &r->img);
	if (err) {
		char why[sizeof(r->why)];

		snprintf(why, sizeof(why), "%s", r->why[0] ? r->why : sqk_strerror(err));
		free(r);
		return mk_fail(c, err, "--reuse: cannot open '%s': %s", path, why);
	}
	atomic_store(&r->opened, true);
	const struct sqk_super *sb = sqk_image_super(r->img);
	const struct sqk_comp_config *oc = sqk_image_comp(r->img);
	if (sb->block_size != c->opt->block_size || sb->compressor != c->opt->comp.id) {
		if (!c->opt->quiet)
			fprintf(stderr,
				"sqk mkimage: --reuse: '%s' has %s with %u KiB blocks, this build "
				"%s with %u KiB: nothing reused\n",
				path, comp_name(sb->compressor), sb->block_size / 1024,
				comp_name(c->opt->comp.id), c->opt->block_size / 1024);
		sqk_image_close(r->img);
		free(r);
		return 0;
	}
	(void)oc;
	r->nfrags = sb->fragment_count;
	r->frags = calloc(r->nfrags ? r->nfrags : 1, sizeof(*r->frags));
	r->tail = malloc(c->opt->block_size);
	if (!r->frags || !r->tail) {
		mk_reuse_close(r);
		return mk_fail(c, SQK_ENOMEM, "out of memory");
	}
	for (uint32_t i = 0; i < r->nfrags; i++)
		r->frags[i].new_idx = SQK_NONE32;
	*out = r;
	return 0;
}

void mk_reuse_close(struct mk_reuse *r)
{
	if (!r)
		return;
	if (r->img)
		sqk_image_close(r->img);
	free(r->frags);
	free(r->tail);
	free(r->file.words);
	free(r->dir_path);
	free(r);
}

/* The old directory at path[0..len), from the last lookup when it is the same. */
static int old_dir(struct mk_ctx *c, struct mk_reuse *r, const char *path, size_t len)
{
	if (r->dir_path && r->dir_len == len && !memcmp(r->dir_path, path, len))
		return 0;
	if (len + 1 > r->dir_cap) { /* a string: exactly len + 1, not mem_grow */
		char *np = realloc(r->dir_path, len + 1);
		if (!np)
			return mk_fail(c, SQK_ENOMEM, "out of memory");
		r->dir_path = np;
		r->dir_cap = len + 1;
	}
	memcpy(r->dir_path, path, len);
	r->dir_path[len] = 0;
	r->dir_len = len;
	r->dir_ok = !sqk_lookup_path(r->img, r->dir_path, &r->dir) && S_ISDIR(r->dir.mode);
	return 0;
}

/* f->words' capacity as sqk_file_blocks takes it. */
static uint32_t words_cap(const struct mk_reuse_file *f)
{
	return f->cap < UINT32_MAX ? (uint32_t)f->cap : UINT32_MAX;
}

int mk_reuse_lookup(struct mk_ctx *c, struct mk_reuse *r, const char *path)
{
	struct mk_reuse_file *f = &r->file;
	struct sqk_inode ino;
	const char *slash = strrchr(path, '/'), *name = slash ? slash + 1 : path;
	f->have = false;
	int err = old_dir(c, r, path, slash ? (size_t)(slash - path) : 0);
	if (err)
		return err;
	if (!r->dir_ok || sqk_lookup(r->img, &r->dir, name, strlen(name), &ino) ||
	    !S_ISREG(ino.mode))
		return 0;
	uint32_t n = 0;
	err = sqk_file_blocks(r->img, &ino, f->words, words_cap(f), &n);
	if (err == SQK_ETOOBIG) {
		if ((err = mk_grow(c, &f->words, &f->cap, n, sizeof(*f->words))))
			return err;
		err = sqk_file_blocks(r->img, &ino, f->words, words_cap(f), &n);
	}
	if (err)
		return 0; /* an old file we cannot read is simply not reused */
	f->have = true;
	f->ino = ino;
	f->nblocks = n;
	f->next_k = 0;
	f->next_pos = ino.blocks_start;
	return 0;
}

bool mk_reuse_block(struct mk_ctx *c, struct mk_reuse *r, uint32_t k, size_t len,
		    uint64_t *pos, uint32_t *word)
{
	struct mk_reuse_file *f = &r->file;
	uint32_t bs = c->opt->block_size;
	if (!f->have || k >= f->nblocks)
		return false;
	while (f->next_k < k)
		f->next_pos += f->words[f->next_k++] & SQK_BLOCK_SIZE_MASK;
	uint64_t off = (uint64_t)k * bs;
	size_t olen = f->ino.size - off < bs ? (size_t)(f->ino.size - off) : bs;
	uint32_t w = f->words[k];
	if (olen != len || !(w & SQK_BLOCK_SIZE_MASK))
		return false;
	*pos = f->next_pos;
	*word = w;
	return true;
}

bool mk_reuse_tail(struct mk_ctx *c, struct mk_reuse *r, const uint8_t *tail, uint32_t len,
		   uint64_t size, uint32_t *old_idx, uint32_t *old_off)
{
	struct mk_reuse_file *f = &r->file;
	if (!f->have || f->ino.frag_index == SQK_NONE32 ||
	    f->ino.size % c->opt->block_size != len || f->ino.frag_index >= r->nfrags)
		return false;
	uint64_t off = f->ino.size - len;
	if (sqk_read(r->img, &f->ino, r->tail, len, off) != (ssize_t)len ||
	    memcmp(r->tail, tail, len))
		return false;
	(void)size;
	*old_idx = f->ino.frag_index;
	*old_off = f->ino.frag_offset;
	struct mk_reuse_frag *fr = &r->frags[*old_idx];
	fr->live += len;
	if (*old_off + len > fr->end)
		fr->end = *old_off + len;
	return true;
}
