/* SPDX-License-Identifier: BSD-2-Clause */
/* Append, the mksquashfs way without its risks: the old image is only read. Its bytes after the
 * superblock, up to the end of its last data or fragment block, are copied first, byte for byte
 * and at the same offsets (so every old block pointer stays valid; nothing is decompressed), to
 * the new output, which the caller renames over the old image only once it is complete. Its
 * tree then comes into the build as a source of already-placed entries (each old file pointing
 * at its old blocks and fragment, whose index the new fragment table keeps), followed by the
 * new source's entries, a root-level name that clashes renamed name_1, name_2..., as mksquashfs
 * does. The metadata tables are all written anew. An old file is decompressed only when a new
 * file has its size (mksquashfs's lazy dedup), to offer it to the duplicate index. */
#include <search.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <openssl/evp.h>

#include "sqk/error.h"
#include "sqk/sqk.h"
#include "common/compressor.h"
#include "common/format.h"
#include "common/hint.h"
#include "mk.h"
#include "append.h"
#include "data.h"
#include "order.h"
#include "source.h"

/* Bytes read and written at a time while copying the old data, and read while hashing an old
 * file: a multiple of every integrity chunk size, so verified reads hash each chunk once. */
#define APPEND_PIECE (1u << 20)

/* An old regular file, for the lazy dedup: its size, inode and the new build's record. */
struct old_file {
	uint64_t size;
	uint64_t ref;
	struct mk_file *f;     /* NULL once offered to the duplicate index */
};

/* A root-level name of the source and the name it has in the image (to == from: kept). */
struct top {
	char *from, *to;
};

struct mk_append {
	struct mk_source src;      /* the append source (first: the source pointer is a's) */
	struct mk_source_ops ops;
	struct mk_source *inner;
	struct mk_ctx *c;
	const char *image;         /* borrowed: opt->append */
	struct sqk_image *img;
	uint64_t data_end;         /* the end of the last data or fragment block */
	struct sqk_walk *walk;
	bool old_done;
	bool cur_old;              /* the entry given last is an old one: */
	struct sqk_inode cur;      /* its inode */
	char *path, *target, *npath, *nlink, *xnames;
	size_t path_cap, target_cap, npath_cap, nlink_cap, xnames_cap;
	uint8_t *xvals;
	size_t xvals_cap;
	struct mk_xattr_kv *kv;
	size_t kv_cap;
	void *used;                /* tsearch tree of the root-level names taken (char *) */
	void *tops;                /* tsearch tree of struct top, by from */
	char **names;              /* every string the two trees point at (owned) */
	size_t nnames, names_cap;
	struct old_file *files;
	size_t nfiles, files_cap;
	uint8_t *buf;              /* APPEND_PIECE bytes */
	EVP_MD_CTX *sha;
	uint64_t kept, added;
	bool held;                 /* the options below are held back while old entries come */
	int64_t force_uid, force_gid, set_mtime, clamp_time;
	atomic_bool opened;        /* the open is over: the library's lines are printed */
	char why[256];             /* the library's first line while it opened the image */
	bool had_hint;             /* it has a valid prefetch hint: the new image gets one, */
	struct sqk_hint_range hint[MK_APPEND_HINT_MAX]; /* its ranges in the copied data */
	size_t nhint;
};

/* ---- opening the old image ---- */

static void append_log(void *ctx, const char *msg)
{
	struct mk_append *a = ctx;

	if (!atomic_load(&a->opened)) {
		if (!a->why[0])
			snprintf(a->why, sizeof(a->why), "%s", msg);
		return;
	}
	fprintf(stderr, "sqk mkimage: appending to '%s': %s\n", a->image, msg);
}

static int refuse(struct mk_ctx *c, struct mk_append *a, int err, const char *why)
{
	return mk_fail(c, err, "cannot append to '%s': %s (-noappend replaces it)", a->image,
		       why);
}

/* The tables must all follow the data (as mksquashfs and sqk write them): the data end is the
 * inode table's start, and every fragment block ends before it. */
static int check_layout(struct mk_ctx *c, struct mk_append *a)
{
	const struct sqk_super *sb = sqk_image_super(a->img);
	const uint64_t t[] = { sb->directory_table_start, sb->fragment_table_start,
			       sb->export_table_start, sb->id_table_start,
			       sb->xattr_id_table_start };
	char why[200];

	a->data_end = sb->inode_table_start;
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		if (t[i] != SQK_NONE64 && t[i] < a->data_end)
			return refuse(c, a, SQK_EUNSUPPORTED, "a table starts before its inode "
				      "table: its tables are not all after its data");
	if (a->data_end < SQK_SUPER_SIZE || a->data_end > sb->bytes_used)
		return refuse(c, a, SQK_ECORRUPT, "its inode table is not after its superblock");
	for (uint32_t i = 0; i < sb->fragment_count; i++) {
		uint64_t start;
		uint32_t word;
		int err = sqk_fragment_entry(a->img, i, &start, &word);
		if (!err && (start < SQK_SUPER_SIZE ||
			     start + (word & SQK_BLOCK_SIZE_MASK) > a->data_end))
			err = SQK_EUNSUPPORTED;
		if (err) {
			snprintf(why, sizeof(why),
				 "fragment block %u is not in the data before its tables (%s)", i,
				 sqk_strerror(err));
			return refuse(c, a, err, why);
		}
	}
	return 0;
}

static void note(const struct mk_ctx *c, const struct mk_append *a, const char *what,
		 const char *kept, const char *given)
{
	if (!c->opt->quiet)
		fprintf(stderr, "sqk mkimage: appending to '%s': its %s %s is kept (%s "
			"overridden)\n", a->image, what, kept, given);
}

/* The old image's compressor, options and block size become the build's. */
static int take_settings(struct mk_ctx *c, struct mk_append *a)
{
	struct sqk_build_opts *o = &c->optv;
	const struct sqk_super *sb = sqk_image_super(a->img);
	const struct sqk_comp_config *oc = sqk_image_comp(a->img);
	char k[32], g[32];
	int err = comp_supported(sb->compressor, a->why, sizeof(a->why));

	if (err)
		return refuse(c, a, err, a->why);
	if ((o->append_given & SQK_BUILD_GIVEN_COMP) && o->comp.id != oc->id)
		note(c, a, "compressor", comp_name(oc->id), comp_name(o->comp.id));
	if ((o->append_given & SQK_BUILD_GIVEN_BLOCK_SIZE) && o->block_size != sb->block_size) {
		snprintf(k, sizeof(k), "%u KiB", sb->block_size / 1024);
		snprintf(g, sizeof(g), "%u KiB", o->block_size / 1024);
		note(c, a, "block size", k, g);
	}
	if (o->append_given & SQK_BUILD_GIVEN_LEVEL)
		note(c, a, "compressor options", "(as stored)", "the level and options given");
	o->comp = *oc;
	o->block_size = sb->block_size;
	o->comp.block_size = sb->block_size;
	compressor_destroy(c->comp);
	c->comp = NULL;
	err = compressor_create(&o->comp, &c->comp);
	if (err)
		return refuse(c, a, err, sqk_strerror(err));
	return 0;
}

/* Its fragment table: the first entries of the new one, at the same indexes. */
static int take_fragments(struct mk_ctx *c, struct mk_append *a)
{
	uint32_t n = sqk_image_super(a->img)->fragment_count;
	int err = n ? mk_grow(c, &c->frags, &c->frags_cap, n, sizeof(*c->frags)) : 0;

	for (uint32_t i = 0; i < n && !err; i++) {
		uint64_t start;
		uint32_t word;
		if ((err = sqk_fragment_entry(a->img, i, &start, &word)))
			return refuse(c, a, err, "its fragment table cannot be read");
		c->frags[i] = (struct frag_entry){ .start = start, .size = word };
	}
	c->nfrags = n;
	return err;
}

static int check_root_becomes(struct mk_ctx *c, struct mk_append *a, const char *rb)
{
	if (!*rb || strchr(rb, '/') || !strcmp(rb, ".") || !strcmp(rb, "..") ||
	    strlen(rb) > SQK_NAME_MAX)
		return mk_fail(c, SQK_EINVAL, "-root-becomes '%s': need a name (no '/', not . "
			       "or ..)", rb);
	(void)a;
	return 0;
}

/* Warns that the old image's signatures do not carry over (the root digest changes): printed
 * even when quiet, as whoever checks them will miss them. */
static void note_signatures(const struct mk_ctx *c, struct mk_append *a)
{
	size_t n = 0;

	if (!sqk_image_signatures(a->img, NULL, 0, &n) && n && !c->opt->nsign_keys)
		fprintf(stderr, "sqk mkimage: appending to '%s': its %zu signature%s dropped "
			"(sign the new image with --sign)\n", a->image, n,
			n == 1 ? " is" : "s are");
}

/* Its prefetch hint (distrusted: decoded and checked by the reader), cut to the copied data,
 * which keeps its offsets; ranges over its old tables are dropped (new tables replace them).
 * A hint that cannot be read is dropped with a note: the append goes on without it. */
static void take_hint(const struct mk_ctx *c, struct mk_append *a)
{
	size_t n = 0, k = 0;
	int err = sqk_image_hint(a->img, a->hint, MK_APPEND_HINT_MAX, &n);

	if (err && err != SQK_ENOENT)
		fprintf(stderr, "sqk mkimage: appending to '%s': its prefetch hint is dropped "
			"(%s)\n", a->image, sqk_strerror(err));
	if (err)
		return;
	if (c->opt->no_checksums) {
		fprintf(stderr, "sqk mkimage: appending to '%s': its prefetch hint is dropped: "
			"no prefetch hint without integrity data (--no-checksums)\n", a->image);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		uint64_t start = a->hint[i].start, end = start + a->hint[i].length;
		if (start >= a->data_end)
			continue;
		a->hint[k].start = start;
		a->hint[k++].length = (end < a->data_end ? end : a->data_end) - start;
	}
	a->nhint = k;
	a->had_hint = true;
}

static int open_image(struct mk_ctx *c, struct mk_append *a)
{
	struct sqk_open_opts oo;

	sqk_open_opts_init(&oo);
	oo.log = append_log;
	oo.log_ctx = a;
	int err = sqk_image_open(a->image, &oo, &a->img);
	if (err)
		return refuse(c, a, err, a->why[0] ? a->why : sqk_strerror(err));
	atomic_store(&a->opened, true);
	return 0;
}

int mk_append_open(struct mk_ctx *c, struct mk_append **out)
{
	struct mk_append *a = calloc(1, sizeof(*a));

	*out = a;
	if (!a)
		return mk_fail(c, SQK_ENOMEM, "out of memory");
	a->c = c;
	a->image = c->opt->append;
	a->buf = malloc(APPEND_PIECE);
	a->sha = EVP_MD_CTX_new();
	if (!a->buf || !a->sha)
		return mk_fail(c, SQK_ENOMEM, "out of memory");
	int err = c->opt->root_becomes ? check_root_becomes(c, a, c->opt->root_becomes) : 0;
	if (!err)
		err = open_image(c, a);
	if (!err)
		err = check_layout(c, a);
	if (!err)
		err = take_settings(c, a);
	if (!err)
		err = take_fragments(c, a);
	if (!err && (err = sqk_walk_open(a->img, NULL, SQK_WALK_ONCE, SQK_WALK_MAX_DEPTH,
					  &a->walk)))
		err = refuse(c, a, err, "its root cannot be read");
	if (!err)
		note_signatures(c, a);
	if (!err)
		take_hint(c, a);
	return err;
}

static void no_free(void *p)
{
	(void)p;
}

void mk_append_close(struct mk_append *a)
{
	if (!a)
		return;
	sqk_walk_close(a->walk);
	if (a->img)
		sqk_image_close(a->img);
	tdestroy(a->used, no_free);
	tdestroy(a->tops, free);
	for (size_t i = 0; i < a->nnames; i++)
		free(a->names[i]);
	free(a->names);
	free(a->path);
	free(a->target);
	free(a->npath);
	free(a->nlink);
	free(a->xnames);
	free(a->xvals);
	free(a->kv);
	free(a->files);
	free(a->buf);
	EVP_MD_CTX_free(a->sha);
	free(a);
}

/* ---- the old data ---- */

int mk_append_copy(struct mk_ctx *c, struct mk_append *a, bool *comp_opts)
{
	uint64_t off = SQK_SUPER_SIZE;

	*comp_opts = (sqk_image_super(a->img)->flags & SQK_FLAG_COMP_OPTS) != 0;
	c->pos = SQK_SUPER_SIZE;
	while (off < a->data_end) {
		uint64_t next = (off / APPEND_PIECE + 1) * APPEND_PIECE;
		size_t len = (size_t)((next < a->data_end ? next : a->data_end) - off);
		int err = sqk_image_read_raw(a->img, off, a->buf, len);
		if (err)
			return mk_fail(c, err,
				       "cannot append to '%s': reading it at offset %llu: %s",
				       a->image, (unsigned long long)off, sqk_strerror(err));
		if ((err = mk_write(c, a->buf, len)))
			return err;
		if (mk_cancelled(c))
			return mk_fail(c, SQK_EINTR, "interrupted");
		off += len;
	}
	return 0;
}

/* ---- the old tree ---- */

/* The entry's path in the new tree: under root_becomes when set. */
static int old_path(struct mk_ctx *c, struct mk_append *a, const struct sqk_walk_entry *w)
{
	const char *rb = c->opt->root_becomes;
	size_t rl = rb ? strlen(rb) : 0, need = rl + 1 + w->path_len + 1;
	int err = mk_grow(c, &a->path, &a->path_cap, need, 1);
	if (err)
		return err;
	if (!rb)
		memcpy(a->path, w->path, w->path_len + 1);
	else if (!w->path_len)
		memcpy(a->path, rb, rl + 1);
	else
		snprintf(a->path, need, "%s/%s", rb, w->path);
	return 0;
}

/* A copy of s[0..len) that lives as long as a (*copy). */
static int keep_str(struct mk_ctx *c, struct mk_append *a, const char *s, size_t len,
		    char **copy)
{
	int err = mk_grow(c, &a->names, &a->names_cap, a->nnames + 1, sizeof(*a->names));
	char *d = err ? NULL : strndup(s, len);
	if (!err && !d)
		err = mk_fail(c, SQK_ENOMEM, "out of memory");
	if (err)
		return err;
	a->names[a->nnames++] = d;
	*copy = d;
	return 0;
}

static int name_cmp(const void *x, const void *y)
{
	return strcmp(x, y);
}

/* The root-level name d (kept by keep_str) is taken. */
static int use_name(struct mk_ctx *c, struct mk_append *a, char *d)
{
	return tsearch(d, &a->used, name_cmp) ? 0 : mk_fail(c, SQK_ENOMEM, "out of memory");
}

static int take_name(struct mk_ctx *c, struct mk_append *a, const char *s, size_t len)
{
	char *d;
	int err = keep_str(c, a, s, len, &d);
	return err ? err : use_name(c, a, d);
}

static int old_xattr_values(struct mk_ctx *c, struct mk_append *a, const struct sqk_inode *ino,
			    size_t n)
{
	size_t used = 0, i = 0;
	int err = 0;

	for (char *p = a->xnames; i < n && !err; p += strlen(p) + 1, i++) {
		size_t vl = 0;
		err = sqk_xattr_get(a->img, ino, p, NULL, 0, &vl);
		if (!err)
			err = mk_grow(c, &a->xvals, &a->xvals_cap, used + vl + 1, 1);
		if (!err)
			err = sqk_xattr_get(a->img, ino, p, a->xvals + used, vl, &vl);
		a->kv[i] = (struct mk_xattr_kv){ .name = p, .value = (void *)(uintptr_t)used,
						 .size = vl };
		used += vl;
	}
	for (i = 0; i < n; i++) /* the buffer moved as it grew: offsets become pointers */
		a->kv[i].value = a->xvals + (uintptr_t)a->kv[i].value;
	return err;
}

static int old_xattrs(struct mk_ctx *c, struct mk_append *a, const struct sqk_inode *ino,
		      struct mk_entry *e)
{
	size_t len = 0, n = 0;

	if (ino->xattr_idx == SQK_NONE32 || c->opt->no_xattrs)
		return 0;
	int err = sqk_xattr_list(a->img, ino, NULL, 0, &len);
	if (!err)
		err = mk_grow(c, &a->xnames, &a->xnames_cap, len + 1, 1);
	if (!err)
		err = sqk_xattr_list(a->img, ino, a->xnames, a->xnames_cap, &len);
	for (size_t i = 0; !err && i < len; i += strlen(a->xnames + i) + 1)
		n++;
	if (!err && n)
		err = mk_grow(c, &a->kv, &a->kv_cap, n, sizeof(*a->kv));
	if (!err && n)
		err = old_xattr_values(c, a, ino, n);
	if (err)
		return mk_fail(c, err, "cannot append to '%s': the xattrs of '/%s': %s", a->image,
			       e->path, sqk_strerror(err));
	e->xattrs = a->kv;
	e->nxattrs = n;
	return 0;
}

/* Fills e from the old inode w->inode. */
static int old_entry(struct mk_ctx *c, struct mk_append *a, const struct sqk_walk_entry *w,
		     struct mk_entry *e)
{
	const struct sqk_inode *ino = &w->inode;
	int err = old_path(c, a, w);

	memset(e, 0, sizeof(*e));
	e->path = a->path;
	e->origin = a->path;
	e->mode = ino->mode;
	e->uid = ino->uid;
	e->gid = ino->gid;
	e->mtime = ino->mtime;
	if (S_ISREG(ino->mode))
		e->size = ino->size;
	if (S_ISCHR(ino->mode) || S_ISBLK(ino->mode)) {
		e->dev_major = sqk_rdev_major(ino->rdev);
		e->dev_minor = sqk_rdev_minor(ino->rdev);
	}
	if (!S_ISDIR(ino->mode) && ino->nlink > 1) {
		e->has_id = true; /* hard links: one inode number, one inode */
		e->id_dev = UINT64_MAX;
		e->id_ino = ino->ino;
	}
	if (!err && S_ISLNK(ino->mode)) {
		size_t tl = 0;
		err = mk_grow(c, &a->target, &a->target_cap, (size_t)ino->size + 1, 1);
		if (!err && (err = sqk_readlink(a->img, ino, a->target, a->target_cap, &tl)))
			err = mk_fail(c, err, "cannot append to '%s': the symlink '/%s': %s",
				      a->image, w->path, sqk_strerror(err));
		e->target = a->target;
	}
	return err ? err : old_xattrs(c, a, ino, e);
}

static const char *walk_what(int event)
{
	switch (event) {
	case SQK_WALK_ERR_LIST: return "the listing";
	case SQK_WALK_ERR_INODE: return "the inode";
	case SQK_WALK_ERR_DEPTH: return "the depth";
	default: return "the tree";
	}
}

/* The next old entry: 0, 1 at the end of the old tree, or an error. */
static int old_next(struct mk_ctx *c, struct mk_append *a, struct mk_entry *e)
{
	struct sqk_walk_entry w;
	int r;

	do {
		r = sqk_walk_next(a->walk, &w);
		if (r < 0)
			return mk_fail(c, r, "cannot append to '%s': %s at '/%s': %s", a->image,
				       walk_what(w.event), w.path ? w.path : "", sqk_strerror(r));
		if (!r)
			return 1;
	} while (w.event != SQK_WALK_PRE ||
		 (S_ISDIR(w.inode.mode) && (w.flags & (SQK_WALK_SEEN | SQK_WALK_LOOP))));
	int err = old_entry(c, a, &w, e);
	const char *rb = c->opt->root_becomes;
	if (!err && w.depth == 1 && !rb)
		err = take_name(c, a, w.name, w.name_len);
	else if (!err && !w.depth && rb)
		err = take_name(c, a, rb, strlen(rb));
	if (err)
		return err;
	a->cur = w.inode;
	a->cur_old = true;
	if (w.depth || c->opt->root_becomes)
		a->kept++;
	return 0;
}

static int file_cmp(const void *x, const void *y)
{
	const struct old_file *p = x, *q = y;
	return (p->size > q->size) - (p->size < q->size);
}

/* ---- the new entries ---- */

static int top_cmp(const void *x, const void *y)
{
	return strcmp(((const struct top *)x)->from, ((const struct top *)y)->from);
}

/* Decides the image name of the root-level name s[0..len) of the source: itself, or the first
 * of s_1, s_2... no other root-level name has (mksquashfs's rule). */
static int decide_top(struct mk_ctx *c, struct mk_append *a, const char *s, size_t len,
		      struct top **out)
{
	struct top *t = calloc(1, sizeof(*t));
	int err = t ? keep_str(c, a, s, len, &t->from) : mk_fail(c, SQK_ENOMEM, "out of memory");

	*out = NULL;
	if (err) {
		free(t);
		return err;
	}
	t->to = t->from;
	if (tfind(t->from, &a->used, name_cmp)) {
		size_t cap = len + 16;
		char *cand = malloc(cap);
		for (unsigned i = 1; cand; i++) {
			snprintf(cand, cap, "%s_%u", t->from, i);
			if (!tfind(cand, &a->used, name_cmp))
				break;
		}
		err = cand ? keep_str(c, a, cand, strlen(cand), &t->to) :
			     mk_fail(c, SQK_ENOMEM, "out of memory");
		free(cand);
		if (!err && !c->opt->quiet)
			fprintf(stderr, "sqk mkimage: '%s' is in '%s' already: added as '%s'\n",
				t->from, a->image, t->to);
	}
	if (!err)
		err = use_name(c, a, t->to);
	if (!err && !tsearch(t, &a->tops, top_cmp))
		err = mk_fail(c, SQK_ENOMEM, "out of memory");
	if (err)
		free(t);
	else
		*out = t;
	return err;
}

/* *out = path with its root-level name as decided (p itself when kept), in *buf. */
static int rename_path(struct mk_ctx *c, struct mk_append *a, const char *p, char **buf,
		       size_t *cap, const char **out)
{
	size_t len = strcspn(p, "/");
	char key[SQK_NAME_MAX + 2];
	struct top k = { .from = key }, **found, *t;
	int err = 0;

	*out = p;
	if (len > SQK_NAME_MAX)
		return 0; /* the tree refuses the name */
	memcpy(key, p, len);
	key[len] = 0;
	found = tfind(&k, &a->tops, top_cmp);
	t = found ? *found : NULL;
	if (!t && (err = decide_top(c, a, p, len, &t)))
		return err;
	if (t->to == t->from)
		return 0;
	size_t tl = strlen(t->to), rest = strlen(p + len);
	if ((err = mk_grow(c, buf, cap, tl + rest + 1, 1)))
		return err;
	memcpy(*buf, t->to, tl);
	memcpy(*buf + tl, p + len, rest + 1);
	*out = *buf;
	return 0;
}

static int new_entry(struct mk_ctx *c, struct mk_append *a, struct mk_entry *e)
{
	if (!*e->path)
		return 0; /* the source's root: its attributes become the new root's (mksquashfs) */
	a->added++;
	int err = rename_path(c, a, e->path, &a->npath, &a->npath_cap, &e->path);
	if (!err && e->link)
		err = rename_path(c, a, e->link, &a->nlink, &a->nlink_cap, &e->link);
	return err;
}

/* ---- the source ---- */

/* Old entries keep their owners and times, as mksquashfs keeps them: the options that change
 * the new entries' (--force-uid, --force-gid, --mtime, SOURCE_DATE_EPOCH) are held back while
 * the old tree comes, and given back before the source's first entry. */
static void hold_options(struct mk_ctx *c, struct mk_append *a, bool hold)
{
	struct sqk_build_opts *o = &c->optv;

	if (hold) {
		a->force_uid = o->force_uid;
		a->force_gid = o->force_gid;
		a->set_mtime = o->set_mtime;
		a->clamp_time = o->clamp_time;
		o->force_uid = o->force_gid = o->set_mtime = o->clamp_time = -1;
	} else {
		o->force_uid = a->force_uid;
		o->force_gid = a->force_gid;
		o->set_mtime = a->set_mtime;
		o->clamp_time = a->clamp_time;
	}
	a->held = hold;
}

static int app_next(struct mk_source *s, struct mk_ctx *c, struct mk_entry *e)
{
	struct mk_append *a = (struct mk_append *)s;

	if (!a->old_done) {
		if (!a->held)
			hold_options(c, a, true);
		int r = old_next(c, a, e);
		if (r != 1)
			return r;
		hold_options(c, a, false);
		a->old_done = true;
		if (a->nfiles > 1)
			qsort(a->files, a->nfiles, sizeof(*a->files), file_cmp);
	}
	a->cur_old = false;
	int r = a->inner->ops->next(a->inner, c, e);
	return r ? r : new_entry(c, a, e);
}

static int app_read(struct mk_source *s, struct mk_ctx *c, uint64_t off, void *buf, size_t len)
{
	struct mk_append *a = (struct mk_append *)s;
	return a->inner->ops->read(a->inner, c, off, buf, len);
}

static int app_data_at(struct mk_source *s, struct mk_ctx *c, uint64_t off, uint64_t *data)
{
	struct mk_append *a = (struct mk_append *)s;
	return a->inner->ops->data_at(a->inner, c, off, data);
}

static int app_end_file(struct mk_source *s, struct mk_ctx *c)
{
	struct mk_append *a = (struct mk_append *)s;
	return a->inner->ops->end_file(a->inner, c);
}

static void app_destroy(struct mk_source *s)
{
	(void)s; /* a's: mk_append_close */
}

struct mk_source *mk_append_source(struct mk_append *a, struct mk_source *inner)
{
	const struct mk_source_ops *io = inner->ops;

	a->inner = inner;
	a->ops = (struct mk_source_ops){
		.rereadable = io->rereadable,
		.ordered = false,
		.next = app_next,
		.read = app_read,
		.data_at = io->data_at ? app_data_at : NULL,
		.end_file = io->end_file ? app_end_file : NULL,
		.destroy = app_destroy,
	};
	a->src.ops = &a->ops;
	return &a->src;
}

bool mk_append_is_old(const struct mk_append *a)
{
	return a->cur_old;
}

/* ---- old files ---- */

/* f takes the old blocks words[0..n), checked to lie in the copied data. */
static int place_blocks(struct mk_ctx *c, struct mk_append *a, struct mk_file *f,
			const uint32_t *words, uint32_t n)
{
	uint64_t end = a->cur.blocks_start;

	for (uint32_t k = 0; k < n; k++)
		end += words[k] & SQK_BLOCK_SIZE_MASK;
	if (end > a->cur.blocks_start && /* not all sparse */
	    (a->cur.blocks_start < SQK_SUPER_SIZE || end > a->data_end))
		return mk_fail(c, SQK_EUNSUPPORTED, "cannot append to '%s': the blocks of '/%s' "
			       "are not in the data before its tables (-noappend replaces it)",
			       a->image, a->path);
	f->blocks_start = a->cur.blocks_start;
	if (!n)
		return 0;
	f->blk = calloc(1, sizeof(*f->blk) + (size_t)n * sizeof(uint32_t));
	if (!f->blk)
		return mk_fail(c, SQK_ENOMEM, "out of memory");
	f->blk->n = n;
	f->blk->started = true;
	f->blk->sparse = a->cur.sparse;
	memcpy(f->blk->words, words, (size_t)n * sizeof(uint32_t));
	return 0;
}

static int remember_file(struct mk_ctx *c, struct mk_append *a, struct mk_file *f)
{
	if (c->opt->no_dedup || !f->size)
		return 0;
	int err = mk_grow(c, &a->files, &a->files_cap, a->nfiles + 1, sizeof(*a->files));
	if (!err)
		a->files[a->nfiles++] = (struct old_file){ .size = f->size, .ref = a->cur.ref,
							   .f = f };
	return err;
}

int mk_append_place(struct mk_ctx *c, struct mk_append *a, const struct mk_file_ref *fr)
{
	struct mk_file *f = fr->file;
	uint32_t n = 0, *words = NULL;
	int err = sqk_file_blocks(a->img, &a->cur, NULL, 0, &n);

	if (err == SQK_ETOOBIG || (!err && n)) {
		words = malloc((size_t)n * sizeof(*words) + 1);
		err = words ? sqk_file_blocks(a->img, &a->cur, words, n, &n) : SQK_ENOMEM;
	}
	if (err) {
		free(words);
		return mk_fail(c, err, "cannot append to '%s': the blocks of '/%s': %s", a->image,
			       a->path, sqk_strerror(err));
	}
	err = place_blocks(c, a, f, words, n);
	free(words);
	if (err)
		return err;
	if (a->cur.frag_index != SQK_NONE32) {
		if (a->cur.frag_index >= sqk_image_super(a->img)->fragment_count)
			return mk_fail(c, SQK_ECORRUPT, "cannot append to '%s': '/%s' names "
				       "fragment block %u, past its fragment table", a->image,
				       a->path, a->cur.frag_index);
		f->frag_index = a->cur.frag_index;
		f->frag_offset = a->cur.frag_offset;
	}
	return remember_file(c, a, f);
}

/* SHA-256 of an old file's content (decompressed), then offered to the duplicate index. */
static int hash_old(struct mk_ctx *c, struct mk_append *a, struct old_file *of)
{
	struct sqk_inode ino = { 0 };
	uint8_t digest[EVP_MAX_MD_SIZE];
	int err = sqk_inode_get(a->img, of->ref, &ino);

	if (!err && !EVP_DigestInit_ex(a->sha, EVP_sha256(), NULL))
		err = SQK_ENOMEM;
	for (uint64_t off = 0; !err && off < of->size;) {
		ssize_t n = sqk_read(a->img, &ino, a->buf, APPEND_PIECE, off);
		if (n <= 0)
			err = n < 0 ? (int)n : SQK_ECORRUPT;
		else if (!EVP_DigestUpdate(a->sha, a->buf, (size_t)n))
			err = SQK_ENOMEM;
		off += n > 0 ? (uint64_t)n : 0;
	}
	if (!err && !EVP_DigestFinal_ex(a->sha, digest, NULL))
		err = SQK_ENOMEM;
	if (err)
		return mk_fail(c, err, "cannot append to '%s': reading its inode %u: %s", a->image,
			       ino.ino, sqk_strerror(err));
	err = mk_data_known(c, of->f, digest);
	of->f = NULL;
	return err;
}

int mk_append_dedup(struct mk_ctx *c, struct mk_append *a, uint64_t size)
{
	size_t lo = 0, hi = a->nfiles;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (a->files[mid].size < size)
			lo = mid + 1;
		else
			hi = mid;
	}
	int err = 0;
	for (size_t i = lo; i < a->nfiles && a->files[i].size == size && !err; i++)
		if (a->files[i].f)
			err = hash_old(c, a, &a->files[i]);
	return err;
}

void mk_append_counts(const struct mk_append *a, uint64_t *kept, uint64_t *added)
{
	*kept = a->kept;
	*added = a->added;
}

size_t mk_append_hint(const struct mk_ctx *c, const struct mk_append *a,
		      const struct sqk_super *sb, struct sqk_hint_range *r)
{
	size_t n = a ? a->nhint : 0;

	if (!a || !a->had_hint)
		return 0;
	memcpy(r, a->hint, n * sizeof(*r));
	mk_hint_tables(c, sb, r, &n);
	if (hint_check(r, n, sb->bytes_used) == 0)
		return n;
	fprintf(stderr, "sqk mkimage: appending to '%s': its prefetch hint does not fit the new "
		"image: dropped\n", a->image);
	return 0;
}
