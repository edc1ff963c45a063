/* SPDX-License-Identifier: BSD-2-Clause */
/* Everything after the data: inodes and directory listings (children before parents, so each
 * listing knows its entries' inode references; the tree backend's emit walks its tree and calls
 * mk_tables_inode and mk_tables_dir), then the fragment, export, id and xattr tables
 * in the order the kernel checks, then the superblock fields. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/endian.h"
#include "sqk/error.h"
#include "common/format.h"
#include "common/inode_codec.h"
#include "mk.h"
#include "attrs.h"
#include "spill.h"
#include "tables.h"

/* The inode table goes out once this much of it is encoded; the directory table to its store. */
#define DRAIN_AT (1u << 20)

static int drain(struct mk_tables *t)
{
	struct mk_ctx *c = t->c;
	int err = 0;
	if (t->inodes.out_len >= DRAIN_AT) {
		err = mk_write(c, t->inodes.out, t->inodes.out_len);
		meta_writer_drain(&t->inodes);
	}
	if (!err && t->dirs.out_len >= DRAIN_AT) {
		if ((err = mk_grow(c, &t->dir_pieces, &t->dir_pieces_cap,
				   t->ndir_pieces + 1, sizeof(*t->dir_pieces))))
			return err;
		struct mk_piece_ref *p = &t->dir_pieces[t->ndir_pieces++];
		p->len = t->dirs.out_len;
		err = mk_spill_put(c, t->dir_store, t->dirs.out, t->dirs.out_len, &p->ref);
		meta_writer_drain(&t->dirs);
	}
	return err;
}

/* Header and fixed body of a as type into b; returns their length. */
static size_t encode_inode(const struct mk_inode *a, uint16_t type,
			   const struct inode_body *body, uint8_t *b)
{
	struct inode_header h = {
		.type = type,
		.mode = (uint16_t)(a->mode & 07777),
		.uid_idx = a->uid_idx,
		.gid_idx = a->gid_idx,
		.mtime = a->mtime,
		.inode_number = a->ino,
	};
	inode_header_encode(&h, b);
	inode_body_encode(type, body, b + SQK_INODE_HEADER_SIZE);
	return SQK_INODE_HEADER_SIZE + inode_body_size(type);
}

/* Starts a's inode: records its reference for the export table. */
static int append_inode(struct mk_tables *t, const struct mk_inode *a, const uint8_t *b,
			size_t len, const void *tail, size_t tail_len, uint64_t *ref)
{
	*ref = meta_writer_ref(&t->inodes);
	if (a->ino && a->ino <= t->c->inode_count)
		t->exports[a->ino - 1] = *ref;
	int err = meta_writer_append(&t->inodes, b, len);
	if (!err && tail_len)
		err = meta_writer_append(&t->inodes, tail, tail_len);
	return err;
}

static int emit_file(struct mk_tables *t, const struct mk_inode *a, uint64_t *ref)
{
	const struct mk_file *f = mk_file_data(a->file);
	const struct mk_fblocks *bl = f->blk;
	uint64_t sparse = bl ? bl->sparse + bl->zero_bytes : 0;
	uint32_t nblocks = bl ? bl->n : 0;
	uint8_t b[56];
	uint8_t words[4096];
	bool ext = f->blocks_start > UINT32_MAX || f->size > UINT32_MAX || a->nlink > 1 ||
		   a->xattr_idx != SQK_NONE32 || sparse;
	struct inode_body body = {
		.blocks_start = f->blocks_start, .size = f->size, .sparse = sparse,
		.nlink = a->nlink, .frag_index = f->frag_index,
		.frag_offset = f->frag_index == SQK_NONE32 ? 0 : f->frag_offset,
		.xattr_idx = a->xattr_idx,
	};
	size_t len = encode_inode(a, ext ? SQK_T_LFILE : SQK_T_FILE, &body, b);
	int err = append_inode(t, a, b, len, NULL, 0, ref);
	/* Size words, in chunks (a 5 GiB file has 40960 of them). */
	for (uint32_t k = 0; k < nblocks && !err;) {
		uint32_t m = nblocks - k < 1024 ? nblocks - k : 1024;
		for (uint32_t i = 0; i < m; i++)
			put_le32(words + 4 * i, bl->words[k + i]);
		err = meta_writer_append(&t->inodes, words, 4 * (size_t)m);
		k += m;
	}
	return err;
}

static uint16_t other_type(mode_t mode)
{
	if (S_ISLNK(mode))
		return SQK_T_SYMLINK;
	if (S_ISBLK(mode))
		return SQK_T_BLKDEV;
	if (S_ISCHR(mode))
		return SQK_T_CHRDEV;
	return S_ISFIFO(mode) ? SQK_T_FIFO : SQK_T_SOCKET;
}

static int emit_other(struct mk_tables *t, const struct mk_inode *a, uint64_t *ref)
{
	uint8_t b[32];
	bool ext = a->xattr_idx != SQK_NONE32;
	uint16_t type = (uint16_t)(other_type(a->mode) + (ext ? 7 : 0));
	struct inode_body body = { .nlink = a->nlink, .size = a->target_len, .rdev = a->rdev,
				       .xattr_idx = a->xattr_idx };
	size_t len = encode_inode(a, type, &body, b);

	if (type != SQK_T_SYMLINK && type != SQK_T_LSYMLINK)
		return append_inode(t, a, b, len, NULL, 0, ref);
	int err = append_inode(t, a, b, len, a->target, a->target_len, ref);
	if (!err && ext) { /* an extended symlink's xattr index follows its target */
		put_le32(b, a->xattr_idx);
		err = meta_writer_append(&t->inodes, b, 4);
	}
	return err;
}

int mk_tables_inode(struct mk_tables *t, const struct mk_inode *a, uint64_t *ref)
{
	int err = S_ISREG(a->mode) ? emit_file(t, a, ref) : emit_other(t, a, ref);
	return err ? err : drain(t);
}

/* Directory index entries collected while writing one listing. */
struct dindex {
	struct sqk_dir_index e;
	const struct mk_dent *first;
};

struct listing {
	uint64_t start;        /* dir-table ref of the listing */
	uint32_t bytes;
	struct dindex *idx;
	size_t nidx, cap;
};

static int add_index(struct mk_ctx *c, struct listing *l, uint32_t at, uint64_t ref,
		     const struct mk_dent *first)
{
	int err = mk_grow(c, &l->idx, &l->cap, l->nidx + 1, sizeof(*l->idx));
	if (err)
		return err;
	l->idx[l->nidx++] = (struct dindex){
		.e = { .index = at, .start_block = (uint32_t)(ref >> 16),
		       .name_size = (uint32_t)(first->name_len - 1) },
		.first = first,
	};
	return 0;
}

/* How many entries from i fit one run: same inode block, s16 delta, at most 256, and not past
 * the 8 KiB mark after which a new indexed run starts. */
static size_t run_length(const struct mk_dent *v, size_t n, size_t i, uint32_t since_index,
			 bool *indexed)
{
	uint64_t blk = v[i].ref >> 16;
	uint32_t bytes = since_index + SQK_DIR_HEADER_SIZE;
	size_t j = i;
	*indexed = false;
	while (j < n && j - i < SQK_DIR_RUN_MAX) {
		int64_t delta = (int64_t)v[j].ino - (int64_t)v[i].ino;
		uint32_t esz = SQK_DIR_ENTRY_SIZE + v[j].name_len;
		if ((v[j].ref >> 16) != blk || delta < -32768 || delta > 32767)
			break;
		if (j > i && bytes + esz > SQK_META_SIZE) {
			*indexed = true;
			break;
		}
		bytes += esz;
		j++;
	}
	return j - i;
}

static uint16_t dent_type(mode_t m)
{
	return sqk_basic_type(S_ISDIR(m) ? SQK_T_DIR : S_ISREG(m) ? SQK_T_FILE : other_type(m));
}

static int write_run(struct mk_tables *t, const struct mk_dent *v, size_t i, size_t n)
{
	uint8_t b[SQK_DIR_HEADER_SIZE];
	struct dir_header h = { .count = (uint32_t)(n - 1),
				    .start_block = (uint32_t)(v[i].ref >> 16),
				    .inode_number = v[i].ino };
	dir_header_encode(&h, b);
	int err = meta_writer_append(&t->dirs, b, sizeof(b));
	for (size_t j = i; j < i + n && !err; j++) {
		struct dir_entry e = {
			.offset = (uint16_t)(v[j].ref & 0xFFFF),
			.inode_delta = (int16_t)((int64_t)v[j].ino - (int64_t)v[i].ino),
			.type = dent_type(v[j].mode),
			.name_size = (uint16_t)(v[j].name_len - 1),
		};
		uint8_t eb[SQK_DIR_ENTRY_SIZE];
		dir_entry_encode(&e, eb);
		err = meta_writer_append(&t->dirs, eb, sizeof(eb));
		if (!err)
			err = meta_writer_append(&t->dirs, v[j].name, v[j].name_len);
	}
	return err;
}

static int write_listing(struct mk_tables *t, const struct mk_dent *v, size_t n,
			 struct listing *l)
{
	uint32_t since_index = 0;
	bool next_indexed = false;
	l->start = meta_writer_ref(&t->dirs);
	for (size_t i = 0; i < n;) {
		uint64_t ref = meta_writer_ref(&t->dirs);
		if (next_indexed) {
			int err = add_index(t->c, l, l->bytes, ref, &v[i]);
			if (err)
				return err;
			since_index = 0;
		}
		size_t k = run_length(v, n, i, since_index, &next_indexed);
		int err = write_run(t, v, i, k);
		if (err)
			return err;
		uint32_t rb = SQK_DIR_HEADER_SIZE;
		for (size_t j = i; j < i + k; j++)
			rb += SQK_DIR_ENTRY_SIZE + v[j].name_len;
		if ((uint64_t)l->bytes + rb > UINT32_MAX - 3)
			return SQK_ETOOBIG;
		l->bytes += rb;
		since_index += rb;
		i += k;
	}
	return 0;
}

static int emit_dir_inode(struct mk_tables *t, const struct mk_inode *a, const struct listing *l,
			  size_t n, uint32_t nsubdirs, uint32_t parent, uint64_t *ref)
{
	uint8_t b[40];
	uint32_t size = l->bytes + 3;
	bool ext = size > 0xFFFF || l->nidx || a->xattr_idx != SQK_NONE32 || n > SQK_DIR_RUN_MAX;
	struct inode_body body = {
	    .dir_block = (uint32_t)(l->start >> 16),
	    .dir_offset = (uint16_t)(l->start & 0xFFFF),
	    .nlink = 2 + nsubdirs,
	    .size = size,
	    .parent = parent,
	    .index_count = (uint16_t)l->nidx,
	    .xattr_idx = a->xattr_idx,
	};
	size_t len = encode_inode(a, ext ? SQK_T_LDIR : SQK_T_DIR, &body, b);
	int err = append_inode(t, a, b, len, NULL, 0, ref);
	for (size_t i = 0; ext && i < l->nidx && !err; i++) {
		uint8_t ib[SQK_DIR_INDEX_SIZE];
		dir_index_encode(&l->idx[i].e, ib);
		err = meta_writer_append(&t->inodes, ib, sizeof(ib));
		if (!err)
			err = meta_writer_append(&t->inodes, l->idx[i].first->name,
						     l->idx[i].first->name_len);
	}
	return err;
}

int mk_tables_dir(struct mk_tables *t, const struct mk_inode *a, const struct mk_dent *v,
		  size_t n, uint32_t nsubdirs, uint32_t parent_ino, const char *path,
		  uint64_t *ref)
{
	if (n > 0xFFFF * 8u)
		return mk_fail(t->c, SQK_ETOOBIG, "directory '%s' has too many entries", path);
	struct listing l = { 0 };
	int err = write_listing(t, v, n, &l);
	if (err == SQK_ETOOBIG)
		err = mk_fail(t->c, err, "directory '%s' is too large", path);
	if (!err)
		err = emit_dir_inode(t, a, &l, n, nsubdirs, parent_ino, ref);
	free(l.idx);
	return err ? err : drain(t);
}

/* ---- the tree in memory ---- */

/* Appends a finished metadata stream at c->pos; fills pos[] with each block's position. */
static int write_stream(struct mk_ctx *c, const struct meta_writer *w, uint64_t *pos)
{
	size_t k = 0;
	for (size_t off = 0; pos && off < w->out_len; k++) {
		pos[k] = c->pos + off;
		off += 2 + (get_le16(w->out + off) & 0x7FFF);
	}
	return w->out_len ? mk_write(c, w->out, w->out_len) : 0;
}

static int write_index(struct mk_ctx *c, const uint64_t *pos, uint32_t n)
{
	uint8_t b[8];
	for (uint32_t i = 0; i < n; i++) {
		put_le64(b, pos[i]);
		int err = mk_write(c, b, 8);
		if (err)
			return err;
	}
	return 0;
}

/* A lookup table: entries as metadata blocks, then the u64 index; *start = index position. */
static int write_lookup(struct mk_ctx *c, const uint8_t *data, size_t len, uint64_t *start)
{
	struct meta_writer w;
	meta_writer_init(&w, c->comp);
	int err = meta_writer_append(&w, data, len);
	if (!err)
		err = meta_writer_finish(&w);
	uint64_t *pos = calloc(w.nblocks ? w.nblocks : 1, sizeof(*pos));
	if (!err && !pos)
		err = SQK_ENOMEM;
	if (!err)
		err = write_stream(c, &w, pos);
	*start = c->pos;
	if (!err)
		err = write_index(c, pos, w.nblocks);
	free(pos);
	meta_writer_free(&w);
	return err;
}

static int write_frag_table(struct mk_ctx *c, struct sqk_super *sb)
{
	uint8_t *buf = malloc((size_t)c->nfrags * SQK_FRAG_ENTRY_SIZE + 1);
	if (!buf)
		return SQK_ENOMEM;
	for (uint32_t i = 0; i < c->nfrags; i++)
		frag_entry_encode(&c->frags[i], buf + (size_t)i * SQK_FRAG_ENTRY_SIZE);
	int err = write_lookup(c, buf, (size_t)c->nfrags * SQK_FRAG_ENTRY_SIZE,
			       &sb->fragment_table_start);
	free(buf);
	sb->fragment_count = c->nfrags;
	return err;
}

/* The inode references by number, in place (little-endian). */
static int write_export_table(struct mk_ctx *c, struct sqk_super *sb, uint64_t *refs)
{
	if (c->opt->no_exports) {
		sb->export_table_start = SQK_NONE64;
		return 0;
	}
	for (uint32_t i = 0; i < c->inode_count; i++)
		put_le64((uint8_t *)&refs[i], refs[i]);
	return write_lookup(c, (const uint8_t *)refs, (size_t)c->inode_count * 8,
			    &sb->export_table_start);
}

static int write_id_table(struct mk_ctx *c, struct sqk_super *sb)
{
	uint32_t n = mk_ids_count(c->ids);
	const uint32_t *v = mk_ids_values(c->ids);
	uint8_t *buf = malloc((size_t)n * 4 + 1);
	if (!buf)
		return SQK_ENOMEM;
	for (uint32_t i = 0; i < n; i++)
		put_le32(buf + 4 * i, v[i]);
	int err = write_lookup(c, buf, (size_t)n * 4, &sb->id_table_start);
	free(buf);
	sb->id_count = (uint16_t)n;
	return err;
}

static int write_xattr_tables(struct mk_ctx *c, struct sqk_super *sb)
{
	uint32_t n = mk_xattrs_count(c->xattrs);
	sb->xattr_id_table_start = SQK_NONE64;
	if (!n)
		return 0;
	struct meta_writer kv, ids;
	meta_writer_init(&kv, c->comp);
	meta_writer_init(&ids, c->comp);
	int err = mk_xattrs_encode(c, &kv, &ids);
	uint64_t *pos = calloc(ids.nblocks ? ids.nblocks : 1, sizeof(*pos));
	struct xattr_header h = { .kv_start = c->pos, .count = n };
	if (!err && !pos)
		err = SQK_ENOMEM;
	if (!err)
		err = write_stream(c, &kv, NULL);
	if (!err)
		err = write_stream(c, &ids, pos);
	sb->xattr_id_table_start = c->pos;
	uint8_t hb[SQK_XATTR_HEADER_SIZE];
	xattr_header_encode(&h, hb);
	if (!err)
		err = mk_write(c, hb, sizeof(hb));
	if (!err)
		err = write_index(c, pos, ids.nblocks);
	free(pos);
	meta_writer_free(&kv);
	meta_writer_free(&ids);
	return err;
}

/* Copies the directory table (its store, then what the writer still holds) to the image. */
static int copy_dirs(struct mk_tables *t)
{
	struct mk_ctx *c = t->c;
	size_t cap = 0;
	for (size_t i = 0; i < t->ndir_pieces; i++)
		cap = t->dir_pieces[i].len > cap ? t->dir_pieces[i].len : cap;
	uint8_t *buf = cap ? malloc(cap) : NULL;
	int err = cap && !buf ? mk_fail(c, SQK_ENOMEM, "out of memory") : 0;
	for (size_t i = 0; i < t->ndir_pieces && !err; i++) {
		err =
		    mk_spill_get(c, t->dir_store, t->dir_pieces[i].ref, buf, t->dir_pieces[i].len);
		if (!err)
			err = mk_write(c, buf, t->dir_pieces[i].len);
	}
	free(buf);
	return err || !t->dirs.out_len ? err : mk_write(c, t->dirs.out, t->dirs.out_len);
}

static int write_inodes_dirs(struct mk_ctx *c, struct sqk_super *sb, struct mk_tables *t)
{
	uint64_t root_ref = 0;
	sb->inode_table_start = c->pos;
	int err = mk_spill_create(c, "the directory table", c->opt->entry_mem, &t->dir_store);
	if (!err && !(t->exports = calloc(c->inode_count ? c->inode_count : 1, 8)))
		err = mk_fail(c, SQK_ENOMEM, "out of memory");
	if (!err)
		err = c->tops->emit(c, t, &root_ref);
	sb->root_inode = root_ref;
	if (!err)
		err = meta_writer_finish(&t->inodes);
	if (!err)
		err = meta_writer_finish(&t->dirs);
	if (err && !c->first_err)
		err = mk_fail(c, err, "cannot build the inode table: %s", sqk_strerror(err));
	if (!err && t->inodes.out_len)
		err = mk_write(c, t->inodes.out, t->inodes.out_len);
	sb->directory_table_start = c->pos;
	err = err ? err : copy_dirs(t);
	c->dir_table_end = c->pos;
	return err;
}

int mk_tables_write(struct mk_ctx *c, struct sqk_super *sb)
{
	struct mk_tables t = { .c = c };
	meta_writer_init(&t.inodes, c->comp);
	meta_writer_init(&t.dirs, c->comp);
	int err = write_inodes_dirs(c, sb, &t);
	meta_writer_free(&t.inodes);
	meta_writer_free(&t.dirs);
	mk_spill_destroy(t.dir_store);
	free(t.dir_pieces);
	if (!err)
		err = write_frag_table(c, sb);
	if (!err)
		err = write_export_table(c, sb, t.exports);
	free(t.exports);
	if (!err)
		err = write_id_table(c, sb);
	if (!err)
		err = write_xattr_tables(c, sb);
	sb->bytes_used = c->pos;
	sb->inode_count = c->inode_count;
	if (err && !c->first_err)
		err = mk_fail(c, err, "cannot write the tables: %s", sqk_strerror(err));
	return err;
}
