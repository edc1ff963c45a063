/* Everything after the data: inodes and directory listings (children before parents, so each
 * listing knows its entries' inode references), then the fragment, export, id and xattr tables
 * in the order the kernel checks, then the superblock fields. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/endian.h"
#include "common/error.h"
#include "common/format.h"
#include "common/inode_codec.h"
#include "mk.h"

struct tables {
	struct mk_ctx *c;
	struct sqk_meta_writer inodes, dirs;
};

static struct mk_node *target_of(struct mk_node *n)
{
	return n->link ? n->link : n;
}

static void put_header(const struct mk_ctx *c, const struct mk_node *n, uint16_t type, uint8_t *b)
{
	struct sqk_inode_header h = {
		.type = type,
		.mode = (uint16_t)(n->mode & 07777),
		.uid_idx = n->uid_idx,
		.gid_idx = n->gid_idx,
		.mtime = n->mtime,
		.inode_number = n->ino,
	};
	(void)c;
	sqk_inode_header_encode(&h, b);
}

/* Header and fixed body of n as type into b; returns their length. */
static size_t encode_inode(const struct mk_ctx *c, const struct mk_node *n, uint16_t type,
			   const struct sqk_inode_body *body, uint8_t *b)
{
	put_header(c, n, type, b);
	sqk_inode_body_encode(type, body, b + SQK_INODE_HEADER_SIZE);
	return SQK_INODE_HEADER_SIZE + sqk_inode_body_size(type);
}

static int append_inode(struct tables *t, struct mk_node *n, const uint8_t *b, size_t len,
			const void *tail, size_t tail_len)
{
	n->inode_ref = sqk_meta_writer_ref(&t->inodes);
	n->emitted = true;
	int err = sqk_meta_writer_append(&t->inodes, b, len);
	if (!err && tail_len)
		err = sqk_meta_writer_append(&t->inodes, tail, tail_len);
	return err;
}

static int emit_file(struct tables *t, struct mk_node *n)
{
	const struct mk_file *f = mk_file_data(n->file);
	const struct mk_fblocks *bl = f->blk;
	uint64_t sparse = bl ? bl->sparse + bl->zero_bytes : 0;
	uint32_t nblocks = bl ? bl->n : 0;
	uint8_t b[56];
	uint8_t words[4096];
	bool ext = f->blocks_start > UINT32_MAX || f->size > UINT32_MAX || n->nlink > 1 ||
		   n->xattr_idx != SQK_NONE32 || sparse;
	struct sqk_inode_body body = {
		.blocks_start = f->blocks_start, .size = f->size, .sparse = sparse,
		.nlink = n->nlink, .frag_index = f->frag_index,
		.frag_offset = f->frag_index == SQK_NONE32 ? 0 : f->frag_offset,
		.xattr_idx = n->xattr_idx,
	};
	size_t len = encode_inode(t->c, n, ext ? SQK_T_LFILE : SQK_T_FILE, &body, b);
	int err = append_inode(t, n, b, len, NULL, 0);
	/* Size words, in chunks (a 5 GiB file has 40960 of them). */
	for (uint32_t k = 0; k < nblocks && !err;) {
		uint32_t m = nblocks - k < 1024 ? nblocks - k : 1024;
		for (uint32_t i = 0; i < m; i++)
			sqk_put_le32(words + 4 * i, bl->words[k + i]);
		err = sqk_meta_writer_append(&t->inodes, words, 4 * (size_t)m);
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

static int emit_other(struct tables *t, struct mk_node *n)
{
	uint8_t b[32];
	bool ext = n->xattr_idx != SQK_NONE32;
	uint16_t type = (uint16_t)(other_type(n->mode) + (ext ? 7 : 0));
	struct sqk_inode_body body = { .nlink = n->nlink, .size = n->target_len, .rdev = n->rdev,
				       .xattr_idx = n->xattr_idx };
	size_t len = encode_inode(t->c, n, type, &body, b);

	if (type != SQK_T_SYMLINK && type != SQK_T_LSYMLINK)
		return append_inode(t, n, b, len, NULL, 0);
	int err = append_inode(t, n, b, len, n->target, n->target_len);
	if (!err && ext) { /* an extended symlink's xattr index follows its target */
		sqk_put_le32(b, n->xattr_idx);
		err = sqk_meta_writer_append(&t->inodes, b, 4);
	}
	return err;
}

/* Directory index entries collected while writing one listing. */
struct dindex {
	struct sqk_dir_index e;
	const struct mk_node *first;
};

struct listing {
	uint64_t start;        /* dir-table ref of the listing */
	uint32_t bytes;
	struct dindex *idx;
	size_t nidx, cap;
};

static int add_index(struct mk_ctx *c, struct listing *l, uint32_t at, uint64_t ref,
		     const struct mk_node *first)
{
	if (l->nidx == l->cap) {
		size_t ncap = l->cap ? l->cap * 2 : 8;
		struct dindex *ni = realloc(l->idx, ncap * sizeof(*ni));
		if (!ni)
			return mk_fail(c, SQK_ENOMEM, "out of memory");
		l->idx = ni;
		l->cap = ncap;
	}
	l->idx[l->nidx++] = (struct dindex){
		.e = { .index = at, .start_block = (uint32_t)(ref >> 16),
		       .name_size = (uint32_t)(first->name_len - 1) },
		.first = first,
	};
	return 0;
}

/* How many children from i fit one run: same inode block, s16 delta, at most 256, and not past
 * the 8 KiB mark after which a new indexed run starts. */
static size_t run_length(struct mk_node *d, size_t i, uint32_t since_index, bool *indexed)
{
	struct mk_node *t0 = target_of(d->children[i]);
	uint64_t blk = t0->inode_ref >> 16;
	uint32_t bytes = since_index + SQK_DIR_HEADER_SIZE;
	size_t j = i;
	*indexed = false;
	while (j < d->nchildren && j - i < SQK_DIR_RUN_MAX) {
		struct mk_node *ch = d->children[j], *t = target_of(ch);
		int64_t delta = (int64_t)t->ino - (int64_t)t0->ino;
		uint32_t esz = SQK_DIR_ENTRY_SIZE + (uint32_t)ch->name_len;
		if ((t->inode_ref >> 16) != blk || delta < -32768 || delta > 32767)
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

static int write_run(struct tables *t, struct mk_node *d, size_t i, size_t n)
{
	struct mk_node *t0 = target_of(d->children[i]);
	uint8_t b[SQK_DIR_HEADER_SIZE];
	struct sqk_dir_header h = { .count = (uint32_t)(n - 1),
				    .start_block = (uint32_t)(t0->inode_ref >> 16),
				    .inode_number = t0->ino };
	sqk_dir_header_encode(&h, b);
	int err = sqk_meta_writer_append(&t->dirs, b, sizeof(b));
	for (size_t j = i; j < i + n && !err; j++) {
		struct mk_node *ch = d->children[j], *tg = target_of(ch);
		struct sqk_dir_entry e = {
			.offset = (uint16_t)(tg->inode_ref & 0xFFFF),
			.inode_delta = (int16_t)((int64_t)tg->ino - (int64_t)t0->ino),
			.type = sqk_basic_type(S_ISDIR(tg->mode) ? SQK_T_DIR :
					       S_ISREG(tg->mode) ? SQK_T_FILE :
					       S_ISLNK(tg->mode) ? SQK_T_SYMLINK :
					       S_ISBLK(tg->mode) ? SQK_T_BLKDEV :
					       S_ISCHR(tg->mode) ? SQK_T_CHRDEV :
					       S_ISFIFO(tg->mode) ? SQK_T_FIFO : SQK_T_SOCKET),
			.name_size = (uint16_t)(ch->name_len - 1),
		};
		uint8_t eb[SQK_DIR_ENTRY_SIZE];
		sqk_dir_entry_encode(&e, eb);
		err = sqk_meta_writer_append(&t->dirs, eb, sizeof(eb));
		if (!err)
			err = sqk_meta_writer_append(&t->dirs, ch->name, ch->name_len);
	}
	return err;
}

static int write_listing(struct tables *t, struct mk_node *d, struct listing *l)
{
	uint32_t since_index = 0;
	bool next_indexed = false;
	l->start = sqk_meta_writer_ref(&t->dirs);
	for (size_t i = 0; i < d->nchildren;) {
		uint64_t ref = sqk_meta_writer_ref(&t->dirs);
		if (next_indexed) {
			int err = add_index(t->c, l, l->bytes, ref, d->children[i]);
			if (err)
				return err;
			since_index = 0;
		}
		size_t n = run_length(d, i, since_index, &next_indexed);
		int err = write_run(t, d, i, n);
		if (err)
			return err;
		uint32_t rb = SQK_DIR_HEADER_SIZE;
		for (size_t j = i; j < i + n; j++)
			rb += SQK_DIR_ENTRY_SIZE + (uint32_t)d->children[j]->name_len;
		l->bytes += rb;
		since_index += rb;
		i += n;
	}
	return 0;
}

static int emit_dir_inode(struct tables *t, struct mk_node *d, const struct listing *l)
{
	struct mk_ctx *c = t->c;
	uint8_t b[40];
	uint32_t size = l->bytes + 3;
	uint32_t parent = d->parent ? d->parent->ino : c->inode_count + 1;
	bool ext = size > 0xFFFF || l->nidx || d->xattr_idx != SQK_NONE32 ||
		   d->nchildren > SQK_DIR_RUN_MAX;
	struct sqk_inode_body body = {
		.dir_block = (uint32_t)(l->start >> 16), .dir_offset = (uint16_t)(l->start & 0xFFFF),
		.nlink = 2 + d->nsubdirs, .size = size, .parent = parent,
		.index_count = (uint16_t)l->nidx, .xattr_idx = d->xattr_idx,
	};
	size_t len = encode_inode(c, d, ext ? SQK_T_LDIR : SQK_T_DIR, &body, b);
	if (!ext)
		return append_inode(t, d, b, len, NULL, 0);
	int err = append_inode(t, d, b, len, NULL, 0);
	for (size_t i = 0; i < l->nidx && !err; i++) {
		uint8_t ib[SQK_DIR_INDEX_SIZE];
		sqk_dir_index_encode(&l->idx[i].e, ib);
		err = sqk_meta_writer_append(&t->inodes, ib, sizeof(ib));
		if (!err)
			err = sqk_meta_writer_append(&t->inodes, l->idx[i].first->name,
						     l->idx[i].first->name_len);
	}
	return err;
}

/* Post-order: sub-directories, then the other entries' inodes, then the listing and inode. */
static int emit_dir(struct tables *t, struct mk_node *d)
{
	int err = 0;
	for (size_t i = 0; i < d->nchildren && !err; i++) {
		struct mk_node *tg = target_of(d->children[i]);
		if (S_ISDIR(tg->mode))
			err = emit_dir(t, tg);
	}
	for (size_t i = 0; i < d->nchildren && !err; i++) {
		struct mk_node *tg = target_of(d->children[i]);
		if (!tg->emitted)
			err = S_ISREG(tg->mode) ? emit_file(t, tg) : emit_other(t, tg);
	}
	if (err)
		return err;
	char where[1024];
	if (d->nchildren > 0xFFFF * 8u) {
		mk_node_path(d, where, sizeof(where));
		return mk_fail(t->c, SQK_ETOOBIG, "directory '%s' has too many entries", where);
	}
	struct listing l = { 0 };
	err = write_listing(t, d, &l);
	if (!err && l.bytes > UINT32_MAX - 3) {
		mk_node_path(d, where, sizeof(where));
		err = mk_fail(t->c, SQK_ETOOBIG, "directory '%s' is too large", where);
	}
	if (!err)
		err = emit_dir_inode(t, d, &l);
	free(l.idx);
	return err;
}

/* Appends a finished metadata stream at c->pos; fills pos[] with each block's position. */
static int write_stream(struct mk_ctx *c, const struct sqk_meta_writer *w, uint64_t *pos)
{
	size_t k = 0;
	for (size_t off = 0; pos && off < w->out_len; k++) {
		pos[k] = c->pos + off;
		off += 2 + (sqk_get_le16(w->out + off) & 0x7FFF);
	}
	return w->out_len ? mk_write(c, w->out, w->out_len) : 0;
}

static int write_index(struct mk_ctx *c, const uint64_t *pos, uint32_t n)
{
	uint8_t b[8];
	for (uint32_t i = 0; i < n; i++) {
		sqk_put_le64(b, pos[i]);
		int err = mk_write(c, b, 8);
		if (err)
			return err;
	}
	return 0;
}

/* A lookup table: entries as metadata blocks, then the u64 index; *start = index position. */
static int write_lookup(struct mk_ctx *c, const uint8_t *data, size_t len, uint64_t *start)
{
	struct sqk_meta_writer w;
	sqk_meta_writer_init(&w, c->comp);
	int err = sqk_meta_writer_append(&w, data, len);
	if (!err)
		err = sqk_meta_writer_finish(&w);
	uint64_t *pos = calloc(w.nblocks ? w.nblocks : 1, sizeof(*pos));
	if (!err && !pos)
		err = SQK_ENOMEM;
	if (!err)
		err = write_stream(c, &w, pos);
	*start = c->pos;
	if (!err)
		err = write_index(c, pos, w.nblocks);
	free(pos);
	sqk_meta_writer_free(&w);
	return err;
}

static int write_frag_table(struct mk_ctx *c, struct sqk_super *sb)
{
	uint8_t *buf = malloc((size_t)c->nfrags * SQK_FRAG_ENTRY_SIZE + 1);
	if (!buf)
		return SQK_ENOMEM;
	for (uint32_t i = 0; i < c->nfrags; i++)
		sqk_frag_entry_encode(&c->frags[i], buf + (size_t)i * SQK_FRAG_ENTRY_SIZE);
	int err = write_lookup(c, buf, (size_t)c->nfrags * SQK_FRAG_ENTRY_SIZE,
			       &sb->fragment_table_start);
	free(buf);
	sb->fragment_count = c->nfrags;
	return err;
}

static int write_export_table(struct mk_ctx *c, struct sqk_super *sb)
{
	if (c->opt->no_exports) {
		sb->export_table_start = SQK_NONE64;
		return 0;
	}
	uint8_t *buf = malloc((size_t)c->inode_count * 8);
	if (!buf)
		return SQK_ENOMEM;
	for (size_t i = 0; i < c->nnodes; i++)
		sqk_put_le64(buf + (size_t)(c->nodes[i]->ino - 1) * 8, c->nodes[i]->inode_ref);
	int err = write_lookup(c, buf, (size_t)c->inode_count * 8, &sb->export_table_start);
	free(buf);
	return err;
}

static int write_id_table(struct mk_ctx *c, struct sqk_super *sb)
{
	uint32_t n = mk_ids_count(c->ids);
	const uint32_t *v = mk_ids_values(c->ids);
	uint8_t *buf = malloc((size_t)n * 4 + 1);
	if (!buf)
		return SQK_ENOMEM;
	for (uint32_t i = 0; i < n; i++)
		sqk_put_le32(buf + 4 * i, v[i]);
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
	struct sqk_meta_writer kv, ids;
	sqk_meta_writer_init(&kv, c->comp);
	sqk_meta_writer_init(&ids, c->comp);
	int err = mk_xattrs_encode(c, &kv, &ids);
	uint64_t *pos = calloc(ids.nblocks ? ids.nblocks : 1, sizeof(*pos));
	struct sqk_xattr_header h = { .kv_start = c->pos, .count = n };
	if (!err && !pos)
		err = SQK_ENOMEM;
	if (!err)
		err = write_stream(c, &kv, NULL);
	if (!err)
		err = write_stream(c, &ids, pos);
	sb->xattr_id_table_start = c->pos;
	uint8_t hb[SQK_XATTR_HEADER_SIZE];
	sqk_xattr_header_encode(&h, hb);
	if (!err)
		err = mk_write(c, hb, sizeof(hb));
	if (!err)
		err = write_index(c, pos, ids.nblocks);
	free(pos);
	sqk_meta_writer_free(&kv);
	sqk_meta_writer_free(&ids);
	return err;
}

static int write_inodes_dirs(struct mk_ctx *c, struct sqk_super *sb)
{
	struct tables t = { .c = c };
	sqk_meta_writer_init(&t.inodes, c->comp);
	sqk_meta_writer_init(&t.dirs, c->comp);
	int err = emit_dir(&t, c->root);
	sb->root_inode = c->root->inode_ref;
	if (!err)
		err = sqk_meta_writer_finish(&t.inodes);
	if (!err)
		err = sqk_meta_writer_finish(&t.dirs);
	if (err && !c->first_err)
		err = mk_fail(c, err, "cannot build the inode table: %s", sqk_strerror(err));
	sb->inode_table_start = c->pos;
	if (!err)
		err = write_stream(c, &t.inodes, NULL);
	sb->directory_table_start = c->pos;
	if (!err)
		err = write_stream(c, &t.dirs, NULL);
	sqk_meta_writer_free(&t.inodes);
	sqk_meta_writer_free(&t.dirs);
	return err;
}

int mk_tables_write(struct mk_ctx *c, struct sqk_super *sb)
{
	int err = write_inodes_dirs(c, sb);
	if (!err)
		err = write_frag_table(c, sb);
	if (!err)
		err = write_export_table(c, sb);
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
