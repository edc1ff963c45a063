/* SPDX-License-Identifier: BSD-2-Clause */
/* The build's orchestration, behind sqk_build (sqk_build.c): one pass over a source (entries
 * into the tree backend chosen here, file content into blocks and tails as it comes), then the
 * fragment blocks, the tables, padding, the prefetch hint and the fast checksums (inside the
 * covered bytes), the integrity data, a dm-verity tree over all of it when asked
 * (verity_area.c), the signatures and the superblock last (so a torn image has no valid magic).
 * Every byte written is hashed on its way out; nothing is read back. The output is an I/O
 * object: a file for `sqk mkimage` (cli/mkimage.c), memory in the tests. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sqk/error.h"
#include "common/format.h"
#include "common/hint.h"
#include "common/sign.h"
#include "mk.h"
#include "attrs.h"
#include "data.h"
#include "entry_opts.h"
#include "order.h"
#include "pseudo.h"
#include "action.h"
#include "tables.h"
#include "tree.h"
#include "walk.h"
#include "reuse.h"
#include "append.h"
#include "source.h"

static uint16_t image_flags(const struct sqk_build_opts *o, bool comp_opts, uint32_t nxattr_sets)
{
	uint16_t f = 0;
	if (!o->no_dedup)
		f |= SQK_FLAG_DUPLICATES;
	if (!o->no_exports)
		f |= SQK_FLAG_EXPORTABLE;
	if (o->no_fragments)
		f |= SQK_FLAG_NO_FRAGS;
	else if (!o->no_tailends)
		f |= SQK_FLAG_ALWAYS_FRAGS;
	if (o->no_xattrs)
		f |= SQK_FLAG_NO_XATTRS;
	if (comp_opts)
		f |= SQK_FLAG_COMP_OPTS;
	(void)nxattr_sets;
	return f;
}

/* Writes the compressor options block (if any) right after the superblock's space. */
static int write_head(struct mk_ctx *c, bool *comp_opts)
{
	uint8_t opts[16], blk[32];
	size_t len = 0;
	int err = comp_options_write(&c->opt->comp, opts, &len);
	if (err)
		return mk_fail(c, err, "compressor options: %s", sqk_strerror(err));
	c->pos = SQK_SUPER_SIZE;
	*comp_opts = len > 0;
	if (!len)
		return 0;
	/* Stored raw, as mksquashfs does. */
	blk[0] = (uint8_t)len;
	blk[1] = 0x80;
	memcpy(blk + 2, opts, len);
	return mk_write(c, blk, len + 2);
}

/* Writes the superblock raw (already hashed) at offset 0: the last write of a build, after the
 * integrity data, so a torn build has no valid magic (on a block device written in place too). */
static int write_super(struct mk_ctx *c, const uint8_t *raw)
{
	int err = sqk_io_write_at(c->out, 0, raw, SQK_SUPER_SIZE);
	if (err)
		return mk_fail(c, err, "cannot write the superblock of '%s': %s", c->opt->image,
			       sqk_strerror(err));
	return 0;
}

/* Hashes the superblock into the integrity data and the dm-verity tree, which cover it. */
static int hash_super(struct mk_ctx *c, const uint8_t *raw)
{
	int err = c->integ ? integ_writer_update(c->integ, 0, raw, SQK_SUPER_SIZE) : 0;
	if (err)
		return mk_fail(c, err, "cannot hash the superblock of '%s': %s", c->opt->image,
			       sqk_strerror(err));
	return mk_verity_feed(c, 0, raw, SQK_SUPER_SIZE);
}

/* Appends the digests, padding and trailer after the padded image (c->pos). */
static int write_integrity(struct mk_ctx *c)
{
	uint8_t *blob;
	size_t len;
	int err = integ_writer_finish(c->integ, c->pos, &blob, &len, c->root_hash);

	if (err)
		return mk_fail(c, err, "cannot finish the integrity data of '%s': %s",
			       c->opt->image, sqk_strerror(err));
	err = sqk_io_write_at(c->out, c->pos, blob, len);
	if (err)
		err = mk_fail(c, err, "cannot write image '%s' at offset %llu: %s", c->opt->image,
			      (unsigned long long)c->pos,
			      err == SQK_EIO ? strerror(errno) : sqk_strerror(err));
	else
		err = mk_verity_feed(c, c->pos, blob, len);
	free(blob);
	if (err)
		return err;
	c->pos += len;
	c->have_root = true;
	return 0;
}

/* The signatures of the image that ends at c->image_end (its integrity data; an appended
 * dm-verity area may follow): one entry per key into b (caller frees). */
static int sign_all(struct mk_ctx *c, struct sig_block *b)
{
	const struct sqk_build_opts *o = c->opt;
	uint64_t t = o->sign_time >= 0 ? (uint64_t)o->sign_time :
		     o->clamp_time >= 0 ? (uint64_t)o->clamp_time : (uint64_t)time(NULL);
	int err = 0;

	b->image_end = c->image_end;
	for (size_t i = 0; !err && i < o->nsign_keys; i++) {
		struct sig_entry e;

		err = sig_sign(o->sign_keys[i], c->root_hash, c->image_end, t, o->sign_comment, &e);
		if (!err)
			err = sig_block_set(b, &e);
		sig_entry_clear(&e);
	}
	return err;
}

/* Appends the signature block after the integrity data (common/sign.h): outside the bytes the
 * digests cover, like everything after them. */
static int write_signatures(struct mk_ctx *c)
{
	struct sig_block b = { 0 };
	uint8_t *blk = NULL;
	size_t len = 0;
	int err = sign_all(c, &b);

	if (!err)
		err = sig_block_encode(&b, &blk, &len);
	sig_block_free(&b);
	if (err)
		return mk_fail(c, err, "cannot sign '%s': %s", c->opt->image, sqk_strerror(err));
	err = sqk_io_write_at(c->out, c->pos, blk, len);
	free(blk);
	if (err)
		return mk_fail(c, err, "cannot write image '%s' at offset %llu: %s", c->opt->image,
			       (unsigned long long)c->pos,
			       err == SQK_EIO ? strerror(errno) : sqk_strerror(err));
	c->pos += len;
	return 0;
}

/* Appends the prefetch hint after the padded image (--order, -sort, or an appended-to image
 * that had one, with integrity data): it is then inside the bytes the digests cover. */
static int write_hint(struct mk_ctx *c, const struct sqk_super *sb)
{
	struct sqk_hint_range r[MK_APPEND_HINT_MAX + MK_HINT_RANGES];
	size_t n = c->order ? mk_order_hint(c, sb, r) : mk_append_hint(c, c->append, sb, r);
	size_t len = hint_len(n);
	uint8_t *blk = n && len ? malloc(len) : NULL;
	if (!n)
		return 0;
	if (!blk)
		return mk_fail(c, SQK_ENOMEM, "out of memory");
	int err = hint_encode(r, n, sb->bytes_used, blk, len);
	if (err)
		err = mk_fail(c, err, "cannot encode the prefetch hint: %s", sqk_strerror(err));
	else
		err = mk_write(c, blk, len);
	free(blk);
	if (!err)
		c->hint_ranges = n;
	return err;
}

/* Appends the fast checksum block (XXH3-64 of every chunk before it; integrity.h) at the end of
 * the covered bytes, after the hint: the superblock is hashed already, so chunk 0 is final. */
static int write_fast(struct mk_ctx *c)
{
	uint8_t *blk;
	size_t len;
	int err = integ_writer_fast(c->integ, c->pos, &blk, &len);

	if (err)
		return mk_fail(c, err, "cannot make the fast checksums of '%s': %s", c->opt->image,
			       sqk_strerror(err));
	err = len ? mk_write(c, blk, len) : 0;
	free(blk);
	return err;
}

static int write_tail(struct mk_ctx *c, struct sqk_super *sb, bool comp_opts)
{
	const struct sqk_build_opts *o = c->opt;
	static const uint8_t zeros[SQK_PAD];
	sb->magic = SQK_MAGIC;
	sb->mkfs_time = o->mkfs_time >= 0 ? (uint32_t)o->mkfs_time :
			o->clamp_time >= 0 ? (uint32_t)o->clamp_time :
			o->set_mtime >= 0 ? (uint32_t)o->set_mtime : c->newest_mtime;
	sb->block_size = o->block_size;
	sb->compressor = o->comp.id;
	sb->block_log = (uint16_t)__builtin_ctz(o->block_size);
	sb->flags = image_flags(o, comp_opts, mk_xattrs_count(c->xattrs));
	sb->version_major = 4;
	sb->version_minor = 0;
	size_t pad = (SQK_PAD - c->pos % SQK_PAD) % SQK_PAD;
	uint8_t raw[SQK_SUPER_SIZE];
	int err = pad ? mk_write(c, zeros, pad) : 0;
	if (!err && c->integ && (c->order || c->append))
		err = write_hint(c, sb);
	super_encode(sb, raw);
	if (!err)
		err = hash_super(c, raw);
	if (!err && c->integ)
		err = write_fast(c);
	if (!err && c->integ)
		err = write_integrity(c);
	c->image_end = c->pos; /* what dm-verity covers and signatures sign */
	if (!err)
		err = mk_verity_finish(c);
	if (!err && c->integ && o->nsign_keys)
		err = write_signatures(c);
	if (!err)
		err = write_super(c, raw);
	if (!err && (err = sqk_io_sync(c->out)))
		err = mk_fail(c, err, "cannot flush '%s' to disk: %s", o->image, sqk_strerror(err));
	return err;
}

/* The one choice of a tree backend: a walked tree (an ordered source) goes to disk as it is
 * walked (walk.c) unless pseudo definitions will change it; anything else is tree.c's
 * (directories in memory, the other entries sorted externally, then the same tree on disk). */
static int start_tree(struct mk_ctx *c, bool ordered, bool pseudo)
{
	if (ordered && !pseudo) {
		c->tops = &mk_tree_disk_ops;
		return mk_walk_start(c);
	}
	c->tops = &mk_tree_mem_ops;
	return mk_tree_start(c, ordered);
}

/* A file's content: read now, or (append) placed in the old image's data; a new file of the
 * size of old files first has those offered to the duplicate index. */
static int add_file(struct mk_ctx *c, struct mk_file_ref *fr, struct mk_source *src,
		    const struct mk_entry *e)
{
	if (c->append && mk_append_is_old(c->append))
		return mk_append_place(c, c->append, fr);
	int err = c->append ? mk_append_dedup(c, c->append, fr->file->size) : 0;
	return err ? err : mk_data_file(c, fr, src, e);
}

/* Reads every entry of src: each into the tree, each file's content right after its entry. */
static int take_source(struct mk_ctx *c, struct mk_source *src, struct mk_pseudo *ps)
{
	struct mk_entry e;
	int err = start_tree(c, src->ops->ordered, ps != NULL);
	if (!err)
		err = mk_data_start(c);
	if (!err)
		err = mk_order_front(c);
	while (!err) {
		struct mk_file_ref fr;
		int r = c->actions ? mk_actions_next(c, src, &e) : src->ops->next(src, c, &e);
		if (r == 1)
			break;
		err = r ? r : mk_eopts_entry(c, &e);
		if (!err)
			err = c->tops->add(c, &e, &fr);
		if (!err)
			mk_eopts_info(c, &e);
		int taken = !err && fr.file && c->order ? mk_order_take(c, &fr, &e) : 0;
		if (taken < 0)
			err = taken;
		if (!err && fr.file && !taken)
			err = add_file(c, &fr, src, &e);
		if (!err && mk_cancelled(c))
			err = mk_fail(c, SQK_EINTR, "interrupted");
	}
	if (!err)
		err = mk_order_deferred(c);
	if (!err && ps)
		err = mk_tree_unorder(c);
	if (!err)
		err = mk_pseudo_apply(c, ps);
	if (err) {
		/* A writer or worker failure (e.g. ENOSPC) is the cause of whatever the reading
		 * side saw afterwards, so it is the error reported. */
		int perr = mk_data_abort(c);
		return perr ? perr : err;
	}
	err = mk_data_finish(c);
	return err ? err : c->tops->finish(c);
}

int mk_build_inputs(struct mk_ctx *c)
{
	int err = 0;

	c->inputs_ready = true;
	/* first: the old image's settings are the build's */
	if (c->opt->append && !c->append && (err = mk_append_open(c, &c->append)))
		return err;
	if (!c->opt->no_checksums && !c->integ) {
		err = integ_writer_create(c->opt->checksum_chunk, &c->integ);
		if (!err && c->opt->digest_tree)
			err = integ_writer_tree(c->integ, 0, 0);
		if (err)
			return mk_fail(c, err, "cannot set up the integrity writer: %s",
				       sqk_strerror(err));
	}
	err = mk_verity_start(c);
	if (!err)
		err = mk_eopts_open(c);
	if (!err)
		err = mk_pseudo_load(c, &c->pseudo);
	if (!err)
		err = mk_actions_load(c);
	if (!err && c->opt->reuse && !c->reuse)
		err = mk_reuse_open(c, c->opt->reuse, &c->reuse);
	if (!err && !c->order)
		err = mk_order_load(c);
	return err;
}

int mk_build(struct mk_ctx *c, struct mk_source *src, struct sqk_super *sb)
{
	bool comp_opts = false;
	int err = c->inputs_ready ? 0 : mk_build_inputs(c);

	if (!err && c->append)
		err = mk_append_copy(c, c->append, &comp_opts);
	else if (!err)
		err = write_head(c, &comp_opts);
	if (!err && c->append)
		src = mk_append_source(c->append, src);
	if (!err)
		err = take_source(c, src, c->pseudo);
	if (!err && mk_cancelled(c))
		err = mk_fail(c, SQK_EINTR, "interrupted");
	if (!err)
		err = mk_tables_write(c, sb);
	if (!err)
		err = write_tail(c, sb, comp_opts);
	return err;
}
