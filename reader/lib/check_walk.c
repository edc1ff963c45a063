/* SPDX-License-Identifier: BSD-2-Clause */
/* The checker's tree walk (libsqk's walk, walk.c): every inode reachable from the root is
 * decoded once (inode numbers unique per inode, in range, all reached; no directory reached
 * twice), every directory listing iterated (sorted, unique, valid names), every file's size
 * words checked and its blocks queued for decompression and named in the interval map, then
 * the export table compared with what the walk found. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_internal.h"
#include "common/depth.h"
#include "common/endian.h"
#include "common/grow.h"

#define WORDS_PER_READ 512u

/* The path of the walk's entry in messages: "/a/b", the root "" (its listing: "/"); and per
 * depth whether the directory listed there had its index reported already (once each). */
struct path {
	char *p;
	size_t cap;
	bool *index_bad;
	size_t capbad;
};

/* A library failure: operational ones are returned, the rest reported as structural. */
static int lib_fail(struct chk *c, int rc, uint64_t pos, const char *region, const char *what,
		    const char *path)
{
	char msg[512];

	if (rc == SQK_ENOMEM || rc == SQK_EIO)
		return rc;
	chk_last_log(c, msg, sizeof(msg));
	chk_report(c, true, c->offset + pos, c->offset + pos + 1, region, "%s of %s: %s (%s)", what,
		   path, sqk_strerror(rc), msg);
	return 0;
}

static uint64_t inode_pos(struct chk *c, uint64_t ref)
{
	return sqk_image_super(c->img)->inode_table_start + (ref >> 16);
}

/* Checks one size word and queues its block: 0, 1 when the file must be abandoned, or SQK_E*. */
static int file_word(struct chk *c, const struct sqk_inode *in, const char *path, uint32_t label,
		      uint64_t k, uint64_t n, uint32_t word, uint64_t *pos)
{
	const struct sqk_super *sb = sqk_image_super(c->img);
	uint32_t len = word & SQK_BLOCK_SIZE_MASK;
	uint64_t exp = sb->block_size, at = c->offset + inode_pos(c, in->body_ref);
	struct chk_job j = { *pos, word, 0, label, 0 };

	if ((word & ~(SQK_BLOCK_SIZE_MASK | SQK_BLOCK_RAW)) || len > sb->block_size) {
		chk_report(c, true, at, at + 1, "inode table",
			   "%s: size word %llu (0x%08x) has reserved bits set or exceeds the block "
			   "size", path, (unsigned long long)k, word);
		return 1;
	}
	if (word && (*pos < c->data_start || *pos > c->data_end || len > c->data_end - *pos)) {
		chk_report(c, true, c->offset + *pos, c->offset + *pos + len, path,
			   "block %llu at offset %llu (%u bytes) lies outside the data area",
			   (unsigned long long)k, (unsigned long long)(c->offset + *pos), len);
		return 1;
	}
	if (k + 1 == n && in->frag_index == SQK_NONE32 && in->size % sb->block_size)
		exp = in->size % sb->block_size;
	j.expected = (uint32_t)exp;
	if (word && chk_job_add(c, &j))
		return SQK_ENOMEM;
	c->res->data_blocks += word != 0;
	*pos += len;
	return 0;
}

/* Reads the size words of a file and queues its blocks. */
static int file_blocks(struct chk *c, const struct sqk_inode *in, const char *path, uint32_t label)
{
	const struct sqk_super *sb = sqk_image_super(c->img);
	uint64_t bs = sb->block_size, pos = in->blocks_start;
	uint64_t n = in->frag_index == SQK_NONE32 ? (in->size + bs - 1) / bs : in->size / bs;
	uint32_t w[WORDS_PER_READ];
	struct mcur cur;

	inode_cursor(c->img, in->body_ref, &cur);
	for (uint64_t k = 0; k < n && !atomic_load(&c->stop);) {
		size_t m = n - k < WORDS_PER_READ ? (size_t)(n - k) : WORDS_PER_READ;
		int rc = meta_read(c->img, &cur, w, m * 4);

		if (rc)
			return lib_fail(c, rc, inode_pos(c, in->body_ref), "inode table",
					"size words", path);
		for (size_t i = 0; i < m; i++, k++) {
			rc = file_word(c, in, path, label, k, n, get_le32(&w[i]), &pos);
			if (rc)
				return rc < 0 ? rc : 0;
		}
	}
	return chk_ival_add(c, in->blocks_start, pos, label);
}

static int file_fragment(struct chk *c, const struct sqk_inode *in, const char *path,
			 uint32_t label)
{
	const struct sqk_super *sb = sqk_image_super(c->img);
	const struct frag_entry *f;
	uint64_t tail = in->size % sb->block_size, at = c->offset + inode_pos(c, in->ref);

	if (in->frag_index == SQK_NONE32)
		return 0;
	if (in->frag_index >= sb->fragment_count || tail == 0 ||
	    in->frag_offset > sb->block_size || tail > sb->block_size - in->frag_offset) {
		chk_report(c, true, at, at + 1, "inode table",
			   "%s: bad fragment reference (index %u, offset %u, tail %llu)", path,
			   in->frag_index, in->frag_offset, (unsigned long long)tail);
		return 0;
	}
	if (c->frag_need[in->frag_index] < in->frag_offset + tail)
		c->frag_need[in->frag_index] = (uint32_t)(in->frag_offset + tail);
	f = &c->img->frags[in->frag_index];
	return chk_ival_add(c, f->start, f->start + (f->size & SQK_BLOCK_SIZE_MASK), label);
}

static int check_file(struct chk *c, const struct sqk_inode *in, const char *path)
{
	char name[64 + SQK_NAME_MAX];
	uint32_t label = 0;
	int rc = 0;

	c->res->files++;
	/* Every file with bytes has a block or a tail (label 0 is the superblock's). */
	if (in->size) {
		snprintf(name, sizeof(name), "data of %.*s", SQK_NAME_MAX + 32, path);
		rc = chk_label(c, strlen(path) > SQK_NAME_MAX + 32 ? "data of (long path)" : name,
			       &label);
	}
	if (rc == 0)
		rc = file_blocks(c, in, path, label);
	if (rc == 0)
		rc = file_fragment(c, in, path, label);
	return rc;
}

/* Reads every xattr of in, names and values (out-of-line values followed): what extracting or
 * mounting will read. A value size is checked against the key/value area before the value is
 * allocated: it is a field of the image, up to 4 GiB. */
static int check_xattrs(struct chk *c, const struct sqk_inode *in, const char *path)
{
	size_t len, vlen;
	char *names;
	int rc = sqk_xattr_list(c->img, in, NULL, 0, &len);

	if (rc || len == 0)
		return rc;
	names = malloc(len);
	if (!names)
		return SQK_ENOMEM;
	rc = sqk_xattr_list(c->img, in, names, len, &len);
	for (size_t o = 0; rc == 0 && o < len; o += strlen(names + o) + 1) {
		uint64_t at = c->offset + inode_pos(c, in->ref);
		void *v;

		rc = sqk_xattr_get(c->img, in, names + o, NULL, 0, &vlen);
		if (rc == 0 && vlen > c->xattr_bytes) {
			chk_report(c, true, at, at + 1, "xattr table",
				   "%s: xattr %s has a value of %zu bytes, the xattr table holds "
				   "%llu", path, names + o, vlen,
				   (unsigned long long)c->xattr_bytes);
			break;
		}
		v = rc || !vlen ? NULL : malloc(vlen);
		if (rc == 0 && vlen && !v)
			rc = SQK_ENOMEM;
		if (v)
			rc = sqk_xattr_get(c->img, in, names + o, v, vlen, &vlen);
		free(v);
	}
	free(names);
	return rc;
}

/* Checks the parts every inode kind has (xattrs, symlink target). A target no file system can
 * hold (empty, or with a NUL byte) is reported: extraction and mounts would make another one. */
static int check_misc(struct chk *c, const struct sqk_inode *in, const char *path)
{
	uint64_t at = c->offset + inode_pos(c, in->ref);
	char target[SQK_SYMLINK_MAX + 1];
	size_t len = 1;
	int rc = 0;

	if (sqk_basic_type(in->type) == SQK_T_SYMLINK)
		rc = sqk_readlink(c->img, in, target, sizeof(target), &len);
	if (rc)
		return lib_fail(c, rc, inode_pos(c, in->ref), "inode table", "symlink target",
				path);
	if (sqk_basic_type(in->type) == SQK_T_SYMLINK && (len == 0 || memchr(target, 0, len)))
		chk_report(c, true, at, at + 1, "inode table", "%s: symlink target is %s", path,
			   len ? "cut by a NUL byte" : "empty");
	if (in->xattr_idx != SQK_NONE32)
		rc = check_xattrs(c, in, path);
	if (rc)
		return lib_fail(c, rc, inode_pos(c, in->ref), "xattr table", "xattrs", path);
	return 0;
}

/* First meeting of an inode: numbering and reachability bookkeeping. Returns 1 to descend. */
static int first_visit(struct chk *c, const struct sqk_inode *in, const char *path)
{
	uint64_t at = c->offset + inode_pos(c, in->ref);
	uint64_t *slot = &c->ino_ref[in->ino];

	if (*slot == in->ref && sqk_basic_type(in->type) != SQK_T_DIR)
		return 0; /* a hard link to a file already checked */
	if (*slot == in->ref) {
		chk_report(c, true, at, at + 1, "directory table",
			   "%s: directory reached twice (loop or directory hard link)", path);
		return 0;
	}
	if (*slot != SQK_NONE64) {
		chk_report(c, true, at, at + 1, "inode table",
			   "%s: inode number %u is also used by the inode at table offset %llu",
			   path, in->ino, (unsigned long long)(*slot >> 16));
		return 0;
	}
	*slot = in->ref;
	c->found++;
	c->res->inodes++;
	return 1;
}

/* Checks an inode; 1 when it is a directory to enter, 0 when not, or SQK_E*. */
static int visit(struct chk *c, const struct sqk_inode *in, const char *path)
{
	int rc = first_visit(c, in, path);

	if (rc <= 0)
		return rc;
	rc = check_misc(c, in, path);
	if (rc == 0 && sqk_basic_type(in->type) == SQK_T_FILE)
		rc = check_file(c, in, path);
	if (rc == 0 && sqk_basic_type(in->type) == SQK_T_DIR) {
		c->res->dirs++;
		return 1;
	}
	return rc;
}

/* Sets pa->p to the path of e in messages. */
static int path_set(struct path *pa, const struct sqk_walk_entry *e)
{
	int rc = mem_grow(&pa->p, &pa->cap, e->path_len + 2, 1, 0);

	if (rc)
		return rc;
	pa->p[0] = e->depth ? '/' : 0;
	memcpy(pa->p + (e->depth ? 1 : 0), e->path, e->path_len + 1);
	return 0;
}

/* Checks the inode of entry e (below the root) against its listing, then visits it: 1 to
 * enter it, 0 not, or SQK_E*. */
static int visit_entry(struct chk *c, const char *path, const struct sqk_walk_entry *e)
{
	const struct sqk_inode *in = &e->inode, *dir = e->parent;
	uint64_t at = c->offset + inode_pos(c, e->dirent.ref);

	if (in->ino != e->dirent.ino || sqk_basic_type(in->type) != e->dirent.type) {
		chk_report(c, true, at, at + 1, "directory table",
			   "%s: entry says inode %u type %u, the inode is %u type %u", path,
			   e->dirent.ino, e->dirent.type, in->ino, in->type);
		return 0;
	}
	if (sqk_basic_type(in->type) == SQK_T_DIR && in->parent != dir->ino)
		chk_report(c, true, at, at + 1, "inode table",
			   "%s: parent inode number %u, expected %u", path, in->parent, dir->ino);
	return visit(c, in, path);
}

/* A directory with an index: looking entry e up by name (which goes through the index, as every
 * path lookup does) must find e itself. Returns true when it reported a problem. */
static bool check_index(struct chk *c, const struct sqk_inode *dir, const struct sqk_dirent *e,
			const char *path)
{
	struct sqk_inode found;
	uint64_t at = c->offset + inode_pos(c, dir->ref);
	int rc;

	if (!dir->index_count)
		return false;
	rc = sqk_lookup(c->img, dir, e->name, e->name_len, &found);
	if (rc == 0 && found.ref == e->ref)
		return false;
	chk_report(c, true, at, at + 1, "inode table",
		   "%s: the directory index does not lead to this entry (%s)", path,
		   rc ? sqk_strerror(rc) : "another inode found");
	return true;
}

/* Whether the index of the directory listing e was reported already (the directories listed
 * at each depth, in turn: a new one starts at index 0). */
static int index_reported(struct path *pa, const struct sqk_walk_entry *e, bool **flag)
{
	int rc = mem_grow(&pa->index_bad, &pa->capbad, e->depth + 1, sizeof(bool), 1);

	if (rc)
		return rc;
	if (e->index == 0)
		pa->index_bad[e->depth] = false;
	*flag = &pa->index_bad[e->depth];
	return 0;
}

/* One step of the walk (pa->p its path; rc what sqk_walk_next returned): 0 to go on, or SQK_E*
 * to stop. */
static int walk_step(struct chk *c, struct sqk_walk *w, struct path *pa,
		     const struct sqk_walk_entry *e, int rc)
{
	char b[2 * SQK_DEPTH_SHOWN + 4];
	bool *bad;

	if (e->depth && (e->event == SQK_WALK_PRE || e->event == SQK_WALK_ERR_INODE)) {
		int r = index_reported(pa, e, &bad);

		if (r)
			return r;
		if (!*bad)
			*bad = check_index(c, e->parent, &e->dirent, pa->p);
	}
	switch (e->event) {
	case SQK_WALK_PRE:
		rc = e->depth ? visit_entry(c, pa->p, e) : visit(c, &e->inode, pa->p);
		if (rc <= 0)
			sqk_walk_skip(w);
		return rc < 0 ? rc : 0;
	case SQK_WALK_ERR_INODE:
		return lib_fail(c, rc, inode_pos(c, e->dirent.ref), "inode table", "inode", pa->p);
	case SQK_WALK_ERR_LIST:
		return lib_fail(c, rc, e->pos, "directory table", "listing",
				pa->p[0] ? pa->p : "/");
	case SQK_WALK_ERR_DEPTH:
		/* the bound of common/depth.h: its entries are not walked */
		chk_report(c, true, 0, 0, "directory table", "%s: directories nested deeper than "
			   "%u levels (the most sqk builds and walks)",
			   depth_shown(pa->p[0] ? pa->p : "/", b), SQK_DEPTH_MAX);
		return 0;
	default:
		return rc;
	}
}

/* Walks the tree from root, checking each inode once. */
static int walk_tree(struct chk *c, const struct sqk_inode *root)
{
	struct path pa = { 0 };
	struct sqk_walk_entry e;
	struct sqk_walk *w;
	int rc = sqk_walk_open(c->img, root, 0, SQK_WALK_MAX_DEPTH, &w), more;

	while (rc == 0 && !atomic_load(&c->stop) && (more = sqk_walk_next(w, &e)) != 0) {
		if (e.event == SQK_WALK_ERR_FATAL)
			rc = more;
		else
			rc = path_set(&pa, &e);
		if (rc == 0)
			rc = walk_step(c, w, &pa, &e, more);
	}
	sqk_walk_close(w);
	free(pa.p);
	free(pa.index_bad);
	return rc;
}

/* Compares the export table with the refs the walk found. */
static int check_export(struct chk *c)
{
	const struct sqk_super *sb = sqk_image_super(c->img);
	uint8_t raw[8];
	struct mcur cur = { .off = 0, .end = sb->export_table_start };
	int rc;

	if (sb->export_table_start == SQK_NONE64)
		return 0;
	rc = sqk_io_read_at(c->io, c->offset + sb->export_table_start, raw, 8);
	if (rc)
		return rc;
	cur.pos = get_le64(raw);
	for (uint32_t i = 1; i <= sb->inode_count && !atomic_load(&c->stop); i++) {
		rc = meta_read(c->img, &cur, raw, 8);
		if (rc)
			return lib_fail(c, rc, cur.pos, "export table", "entry", "export table");
		if (c->ino_ref[i] != SQK_NONE64 && get_le64(raw) != c->ino_ref[i]) {
			chk_report(c, true, c->offset + cur.pos, c->offset + cur.pos + 1,
				   "export table",
				   "entry for inode %u is %llu, the walk found %llu", i,
				   (unsigned long long)get_le64(raw),
				   (unsigned long long)c->ino_ref[i]);
			break;
		}
	}
	return 0;
}

int chk_walk(struct chk *c)
{
	const struct sqk_super *sb = sqk_image_super(c->img);
	struct sqk_inode root;
	int rc;

	c->ino_ref = malloc(((size_t)sb->inode_count + 1) * sizeof(*c->ino_ref));
	c->frag_need = calloc((size_t)sb->fragment_count + 1, sizeof(*c->frag_need));
	if (!c->ino_ref || !c->frag_need)
		return SQK_ENOMEM;
	memset(c->ino_ref, 0xFF, ((size_t)sb->inode_count + 1) * sizeof(*c->ino_ref));
	rc = sqk_image_root(c->img, &root);
	if (rc)
		rc =
		    lib_fail(c, rc, inode_pos(c, sb->root_inode), "inode table", "root inode", "/");
	else
		rc = walk_tree(c, &root);
	if (rc == 0 && !atomic_load(&c->stop) && c->found != sb->inode_count)
		chk_report(c, true, c->offset + sb->inode_table_start,
			   c->offset + sb->directory_table_start, "inode table",
			   "%llu of %u inodes are not reachable from the root",
			   (unsigned long long)(sb->inode_count - c->found), sb->inode_count);
	if (rc == 0 && c->found == sb->inode_count)
		rc = check_export(c);
	return rc;
}
