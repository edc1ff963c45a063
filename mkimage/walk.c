/* SPDX-License-Identifier: BSD-2-Clause */
/* The tree of an ordered source (the directory walker), held on disk rather than in memory.
 * Entries come depth first, each directory's in name order: the directories being listed form a
 * stack, each collecting its entries as compact records; once the walk has left a directory, its
 * records go to a store that spills to a temporary file (spill.c). Memory keeps what the tables
 * need from everywhere: the 32-byte file records (their data is placed while the walk goes on),
 * one record per directory, and the files with several names. At the end the inodes are
 * numbered as tree.c numbers them (root 1, then each directory's entries in turn, directories
 * in walk order), and the tables are written depth first, each directory's records read back
 * once: the image is byte for byte the one the tree in memory gives. A directory's own entries
 * are in memory while it is listed and while it is written, so memory grows with the largest
 * directory, not with the tree. tree.c fills the same tree for a source in any order (walk.h):
 * whole directories, in the order it made them, then its hard-link groups. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "sqk/error.h"
#include "common/format.h"
#include "mk.h"
#include "spill.h"
#include "tree.h"
#include "source.h"
#include "tables.h"
#include "walk.h"

#define FILES_SHIFT 16u /* file records come in chunks of 65,536 */

/* A directory, by its number (walk order; the root is 0). */
struct wdir {
	uint64_t ref;          /* its records in the store */
	uint64_t bytes;
	uint32_t n, nsubdirs;
	uint32_t base;         /* inode number of its first entry */
};

/* A directory being listed. */
struct wopen {
	uint32_t dir;
	size_t path_len;       /* its path is w->path[0..path_len) */
	uint8_t *buf;          /* its records so far (kept for reuse at this depth) */
	size_t len, cap;
	size_t last;           /* offset of the last record (names must grow) */
};

/* A file with several names in the walk: the inode they share. */
struct wgroup {
	struct mk_wrec r;      /* the first name's attributes (name unused) */
	char *target;          /* owned, symlinks */
	uint32_t nlink, ino;
	uint64_t inode_ref;
	bool emitted;
};

/* A name of a group, where it is: for the numbering. */
struct wlname {
	uint32_t dir, pos, group;
};

struct mk_walk {
	struct mk_spill *store;
	struct wdir *dirs;
	uint32_t ndirs, dirs_cap;
	struct wopen *open;
	uint32_t depth, open_cap, open_used; /* open_used: slots initialised */
	char *path;            /* the deepest open directory's path */
	size_t path_cap;
	struct mk_file **chunks;
	uint32_t nfiles, nchunks;
	size_t chunks_cap;
	struct mk_idmap ids;   /* (dev, ino) → group + 1 */
	struct wgroup *groups;
	uint32_t ngroups, groups_cap;
	struct wlname *lnames;
	size_t nlnames, lnames_cap;
	struct mk_wrec root;
	bool root_newest;
	uint32_t order;        /* entries so far */
	uint64_t inodes;       /* distinct inodes so far */
	char *epath;           /* the path being written (messages) */
	size_t epath_cap;
};

static int grow32(struct mk_ctx *c, void *v, uint32_t *cap, size_t need, size_t sz)
{
	size_t cz = *cap;
	if (need > UINT32_MAX / 2)
		return mk_fail(c, SQK_ETOOBIG, "too many entries");
	int err = mk_grow(c, v, &cz, need, sz);
	*cap = (uint32_t)cz;
	return err;
}

static struct mk_file *file_at(const struct mk_walk *w, uint32_t i)
{
	return &w->chunks[i >> FILES_SHIFT][i & ((1u << FILES_SHIFT) - 1)];
}

static int new_file(struct mk_ctx *c, struct mk_walk *w, uint64_t size, uint32_t *idx)
{
	if (w->nfiles == UINT32_MAX - 1)
		return mk_fail(c, SQK_ETOOBIG, "too many files");
	if (!(w->nfiles & ((1u << FILES_SHIFT) - 1))) {
		int err = mk_grow(c, &w->chunks, &w->chunks_cap, (size_t)w->nchunks + 1,
				  sizeof(*w->chunks));
		if (err)
			return err;
		if (!(w->chunks[w->nchunks] = calloc(1u << FILES_SHIFT, sizeof(**w->chunks))))
			return mk_fail(c, SQK_ENOMEM, "out of memory");
		w->nchunks++;
	}
	*idx = w->nfiles++;
	struct mk_file *f = file_at(w, *idx);
	f->size = size;
	f->frag_index = SQK_NONE32;
	return 0;
}

static struct mk_wrec rec_of(const struct mk_attrs *a)
{
	return (struct mk_wrec){ .mode = a->mode, .mtime = a->mtime, .xattr_idx = a->xattr_idx,
				 .ref = a->rdev, .uid_idx = a->uid_idx, .gid_idx = a->gid_idx,
				 .target_len = (uint16_t)a->target_len };
}

/* Opens directory number dir at path[0..len) one level deeper. */
static int push_dir(struct mk_ctx *c, struct mk_walk *w, uint32_t dir, const char *path,
		    size_t len)
{
	int err = grow32(c, &w->open, &w->open_cap, w->depth + 1, sizeof(*w->open));
	if (!err)
		err = mk_grow(c, &w->path, &w->path_cap, len + 1, 1);
	if (err)
		return err;
	struct wopen *o = &w->open[w->depth];
	if (w->depth == w->open_used) { /* a level not reached before */
		memset(o, 0, sizeof(*o));
		w->open_used++;
	}
	o->dir = dir;
	o->path_len = len;
	o->len = 0;
	memcpy(w->path, path, len);
	w->depth++;
	return 0;
}

static int new_dir(struct mk_ctx *c, struct mk_walk *w, uint32_t *dir)
{
	int err = grow32(c, &w->dirs, &w->dirs_cap, (size_t)w->ndirs + 1,
			 sizeof(*w->dirs));
	if (err)
		return err;
	*dir = w->ndirs++;
	memset(&w->dirs[*dir], 0, sizeof(w->dirs[*dir]));
	return 0;
}

/* The walk has left the deepest open directory: its records go to the store. */
static int close_dir(struct mk_ctx *c, struct mk_walk *w)
{
	struct wopen *o = &w->open[--w->depth];
	struct wdir *d = &w->dirs[o->dir];
	d->bytes = o->len;
	return o->len ? mk_spill_put(c, w->store, o->buf, o->len, &d->ref) : 0;
}

/* Closes open directories until the deepest is the one at path[0..len). */
static int walk_to(struct mk_ctx *c, struct mk_walk *w, const char *path, size_t len,
		   const char *origin)
{
	while (w->depth > 1) {
		const struct wopen *o = &w->open[w->depth - 1];
		if (o->path_len == len && !memcmp(w->path, path, len))
			return 0;
		int err = close_dir(c, w);
		if (err)
			return err;
	}
	if (len)
		return mk_fail(c, SQK_EINVAL,
			       "'%s': entry out of order in the walk (internal error)", origin);
	return 0;
}

/* Appends r, name and target to the deepest open directory. */
static int put_rec(struct mk_ctx *c, struct mk_walk *w, struct mk_wrec *r, const char *name,
		   const char *target)
{
	struct wopen *o = &w->open[w->depth - 1];
	if (o->len) { /* the source promised name order; the listing depends on it */
		struct mk_wrec p;
		memcpy(&p, o->buf + o->last, sizeof(p));
		if (dir_name_cmp((const char *)o->buf + o->last + sizeof(p), p.name_len, name,
				 r->name_len) >= 0)
			return mk_fail(c, SQK_EINVAL,
				       "'%.*s': entries out of name order in the walk "
				       "(internal error)",
				       (int)r->name_len, name);
	}
	o->last = o->len;
	int err = mk_walk_encode(c, &o->buf, &o->len, &o->cap, r, name, target);
	if (err)
		return err;
	w->dirs[o->dir].n++;
	return 0;
}

/* The logical directory of a file in the deepest open directory: that directory, or its parent
 * for a __pycache__ directory (see data.c). */
static uint32_t logical_dir(const struct mk_walk *w)
{
	const struct wopen *o = &w->open[w->depth - 1];
	static const char pyc[] = "/__pycache__";
	size_t l = sizeof(pyc) - 1;
	bool is_pyc = w->depth > 1 &&
		      ((o->path_len == l - 1 && !memcmp(w->path, pyc + 1, l - 1)) ||
		       (o->path_len > l && !memcmp(w->path + o->path_len - l, pyc, l)));
	return is_pyc ? w->open[w->depth - 2].dir : o->dir;
}

/* Appends a name of group (its inode is the group's) to the deepest open directory. */
static int put_link(struct mk_ctx *c, struct mk_walk *w, uint32_t group, const char *name,
		    size_t nlen)
{
	struct mk_wrec l = { .ref = group, .name_len = (uint16_t)nlen, .link = 1 };
	return put_rec(c, w, &l, name, NULL);
}

/* A name of a file with several names: the group's first name, or one more. Returns 1 when
 * the group existed (nothing more to do for this entry). */
static int add_group_name(struct mk_ctx *c, struct mk_walk *w, const struct mk_entry *e,
			  const char *name, size_t nlen, uint32_t *group)
{
	uint64_t found;
	int err = mk_idmap_find_or_put(&w->ids, e->id_dev, e->id_ino, (uint64_t)w->ngroups + 1,
				       &found);
	if (!err)
		err = mk_grow(c, &w->lnames, &w->lnames_cap, w->nlnames + 1,
			   sizeof(*w->lnames));
	if (err)
		return err == SQK_ENOMEM ? mk_fail(c, err, "out of memory") : err;
	const struct wopen *o = &w->open[w->depth - 1];
	*group = found ? (uint32_t)(found - 1) : w->ngroups;
	w->lnames[w->nlnames++] = (struct wlname){ .dir = o->dir, .pos = w->dirs[o->dir].n,
						   .group = *group };
	if (!found)
		return 0;
	w->groups[*group].nlink++;
	c->st.hardlinks++;
	err = put_link(c, w, *group, name, nlen);
	return err ? err : 1;
}

static int new_group(struct mk_ctx *c, struct mk_walk *w, const struct mk_wrec *r,
		     const char *target)
{
	int err = grow32(c, &w->groups, &w->groups_cap, (size_t)w->ngroups + 1,
			 sizeof(*w->groups));
	if (err)
		return err;
	struct wgroup *g = &w->groups[w->ngroups];
	memset(g, 0, sizeof(*g));
	g->r = *r;
	g->nlink = 1;
	if (S_ISLNK(r->mode) && !(g->target = strndup(target, r->target_len)))
		return mk_fail(c, SQK_ENOMEM, "out of memory");
	w->ngroups++;
	return 0;
}

static int walk_root(struct mk_ctx *c, struct mk_walk *w, const struct mk_entry *e)
{
	if (!S_ISDIR(e->mode))
		return mk_fail(c, SQK_EINVAL, "'%s': the root must be a directory", e->origin);
	struct mk_attrs a;
	int err = mk_entry_attrs(c, e, &a);
	w->root = rec_of(&a);
	w->root_newest = e->mtime == MK_MTIME_NEWEST;
	return err;
}

static int walk_add(struct mk_ctx *c, const struct mk_entry *e, struct mk_file_ref *data)
{
	struct mk_walk *w = c->walk;
	data->file = NULL;
	if (!*e->path)
		return walk_root(c, w, e);
	if (e->link)
		return mk_fail(c, SQK_EINVAL,
			       "'%s': a hard link by path in a walk (internal error)", e->origin);
	int err = mk_check_depth(c, e);
	if (err)
		return err;
	const char *slash = strrchr(e->path, '/');
	size_t dlen = slash ? (size_t)(slash - e->path) : 0;
	const char *name = slash ? slash + 1 : e->path;
	size_t nlen = strlen(name);
	if (nlen > SQK_NAME_MAX)
		return mk_fail(c, SQK_ETOOBIG, "'%s': name '%.32s...' is longer than %u bytes",
			       e->origin, name, SQK_NAME_MAX);
	struct mk_attrs a;
	uint32_t group = SQK_NONE32;
	err = walk_to(c, w, e->path, dlen, e->origin);
	if (!err && e->has_id && !S_ISDIR(e->mode))
		err = add_group_name(c, w, e, name, nlen, &group);
	if (err)
		return err < 0 ? err : 0; /* 1: one more name of an earlier file */
	if ((err = mk_entry_attrs(c, e, &a)))
		return err;
	struct mk_wrec r = rec_of(&a);
	r.name_len = (uint16_t)nlen;
	if (S_ISDIR(e->mode)) {
		err = new_dir(c, w, &r.ref);
		w->dirs[w->open[w->depth - 1].dir].nsubdirs++;
	} else if (S_ISREG(e->mode)) {
		err = new_file(c, w, e->size, &r.ref);
		if (!err)
			*data = (struct mk_file_ref){ .file = file_at(w, r.ref), .order = w->order,
						      .ldir = logical_dir(w) };
	}
	if (!err && group != SQK_NONE32)
		err = new_group(c, w, &r, e->target);
	if (err)
		return err;
	mk_count_kind(c, e->mode, data->file);
	w->inodes++;
	w->order++;
	err = group != SQK_NONE32 ? put_link(c, w, group, name, nlen) :
				    put_rec(c, w, &r, name, e->target);
	if (!err && S_ISDIR(e->mode))
		err = push_dir(c, w, r.ref, e->path, strlen(e->path));
	return err;
}

int mk_walk_create(struct mk_ctx *c)
{
	struct mk_walk *w = calloc(1, sizeof(*w));
	if (!w)
		return mk_fail(c, SQK_ENOMEM, "out of memory");
	c->walk = w;
	struct mk_attrs a;
	int err = mk_spill_create(c, "directory entries", c->opt->entry_mem, &w->store);
	if (!err)
		err = mk_implied_attrs(c, &a);
	w->root = rec_of(&a);
	w->inodes = 1;
	return err;
}

int mk_walk_start(struct mk_ctx *c)
{
	uint32_t root;
	int err = mk_walk_create(c);
	if (!err)
		err = new_dir(c, c->walk, &root);
	return err ? err : push_dir(c, c->walk, root, "", 0);
}

int mk_walk_new_file(struct mk_ctx *c, uint64_t size, uint32_t *idx)
{
	return new_file(c, c->walk, size, idx);
}

struct mk_file *mk_walk_file(struct mk_ctx *c, uint32_t idx)
{
	return file_at(c->walk, idx);
}

int mk_walk_encode(struct mk_ctx *c, uint8_t **buf, size_t *len, size_t *cap,
		   const struct mk_wrec *r, const char *name, const char *target)
{
	size_t tl = r->link ? 0 : r->target_len;
	size_t need = *len + sizeof(*r) + r->name_len + tl;
	int err = mk_grow(c, buf, cap, need, 1);
	if (err)
		return err;
	struct mk_wrec rc = *r;
	rc.target_len = (uint16_t)tl;
	memcpy(*buf + *len, &rc, sizeof(rc));
	memcpy(*buf + *len + sizeof(rc), name, r->name_len);
	if (tl)
		memcpy(*buf + *len + sizeof(rc) + r->name_len, target, tl);
	*len = need;
	return 0;
}

int mk_walk_put_dir(struct mk_ctx *c, const uint8_t *recs, size_t len, uint32_t n,
		    uint32_t nsubdirs)
{
	struct mk_walk *w = c->walk;
	uint32_t dir;
	int err = new_dir(c, w, &dir);
	if (err)
		return err;
	struct wdir *d = &w->dirs[dir];
	d->n = n;
	d->nsubdirs = nsubdirs;
	d->bytes = len;
	return len ? mk_spill_put(c, w->store, recs, len, &d->ref) : 0;
}

int mk_walk_new_group(struct mk_ctx *c, uint32_t *group)
{
	struct mk_walk *w = c->walk;
	struct mk_wrec none = { 0 };
	*group = w->ngroups;
	return new_group(c, w, &none, NULL);
}

int mk_walk_set_group(struct mk_ctx *c, uint32_t group, const struct mk_wrec *r,
		      const char *target, uint32_t nlink)
{
	struct wgroup *g = &c->walk->groups[group];
	g->r = *r;
	g->r.link = 0;
	g->nlink = nlink;
	if (S_ISLNK(r->mode) && !(g->target = strndup(target, r->target_len)))
		return mk_fail(c, SQK_ENOMEM, "out of memory");
	return 0;
}

int mk_walk_put_lname(struct mk_ctx *c, uint32_t dir, uint32_t pos, uint32_t group)
{
	struct mk_walk *w = c->walk;
	int err = mk_grow(c, &w->lnames, &w->lnames_cap, w->nlnames + 1, sizeof(*w->lnames));
	if (err)
		return err;
	w->lnames[w->nlnames++] = (struct wlname){ .dir = dir, .pos = pos, .group = group };
	return 0;
}

static int lname_cmp(const void *a, const void *b)
{
	const struct wlname *x = a, *y = b;
	if (x->dir != y->dir)
		return x->dir < y->dir ? -1 : 1;
	return (x->pos > y->pos) - (x->pos < y->pos);
}

/* Numbers the inodes as tree.c does: the root 1, then the entries of each directory in turn
 * (directories in walk order), a file with several names at its first name in that order. */
static int number_inodes(struct mk_ctx *c, struct mk_walk *w)
{
	if (w->nlnames > 1)
		qsort(w->lnames, w->nlnames, sizeof(*w->lnames), lname_cmp);
	uint64_t cursor = 2;
	size_t j = 0;
	for (uint32_t d = 0; d < w->ndirs; d++) {
		struct wdir *wd = &w->dirs[d];
		uint32_t skipped = 0;
		wd->base = (uint32_t)cursor;
		for (; j < w->nlnames && w->lnames[j].dir == d; j++) {
			struct wgroup *g = &w->groups[w->lnames[j].group];
			if (!g->ino)
				g->ino = (uint32_t)(cursor + w->lnames[j].pos - skipped);
			else
				skipped++;
		}
		cursor += wd->n - skipped;
		if (cursor > UINT32_MAX)
			return mk_fail(c, SQK_ETOOBIG, "too many inodes");
	}
	c->inode_count = (uint32_t)(cursor - 1);
	if (c->inode_count != w->inodes)
		return mk_fail(c, SQK_ECORRUPT, "internal error: %u inodes numbered, %llu expected",
			       c->inode_count, (unsigned long long)w->inodes);
	return 0;
}

static int walk_finish(struct mk_ctx *c)
{
	struct mk_walk *w = c->walk;
	int err = 0;
	mk_report_clamped(c);
	while (w->depth && !err)
		err = close_dir(c, w);
	if (err)
		return err;
	if (w->root_newest)
		w->root.mtime = c->opt->set_mtime >= 0 ? (uint32_t)c->opt->set_mtime :
							  c->newest_mtime;
	mk_count_kind(c, S_IFDIR, NULL);
	mk_idmap_free(&w->ids);
	return number_inodes(c, w);
}

int mk_walk_close(struct mk_ctx *c, const struct mk_wrec *root, uint64_t inodes)
{
	struct mk_walk *w = c->walk;
	w->root = *root;
	w->inodes = inodes;
	return number_inodes(c, w);
}

/* ---- the tables ---- */

static struct mk_inode inode_of(const struct mk_walk *w, const struct mk_wrec *r, uint32_t ino,
				uint32_t nlink, const char *target)
{
	struct mk_inode a = { .mode = r->mode, .uid_idx = r->uid_idx, .gid_idx = r->gid_idx,
			      .mtime = r->mtime, .ino = ino, .nlink = nlink,
			      .xattr_idx = r->xattr_idx, .target = target,
			      .target_len = r->target_len };
	if (S_ISCHR(r->mode) || S_ISBLK(r->mode))
		a.rdev = r->ref;
	if (S_ISREG(r->mode))
		a.file = file_at(w, r->ref);
	return a;
}

/* One entry of a directory being written. */
struct wkid {
	struct mk_wrec r;      /* copied out of the directory's records (unaligned there) */
	const char *name;
	const char *target;
};

/* Sets the path being written to its first plen bytes plus "/name" (messages). */
static int set_epath(struct mk_ctx *c, struct mk_walk *w, size_t plen, const char *name,
		     size_t nlen)
{
	int err = mk_grow(c, &w->epath, &w->epath_cap, plen + nlen + 2, 1);
	if (err)
		return err;
	w->epath[plen] = '/';
	memcpy(w->epath + plen + 1, name, nlen);
	w->epath[plen + 1 + nlen] = 0;
	return 0;
}

static int emit_wdir(struct mk_ctx *c, struct mk_tables *t, uint32_t dir,
		     const struct mk_inode *self, uint32_t parent_ino, size_t plen, uint64_t *ref);

/* Decodes the records of d (read back into buf) into k and v; numbers the entries. */
static int decode_dir(struct mk_ctx *c, struct mk_walk *w, const struct wdir *d,
		      const uint8_t *buf, struct wkid *k, struct mk_dent *v)
{
	uint64_t cursor = d->base;
	size_t off = 0;
	for (uint32_t i = 0; i < d->n; i++) {
		if (off + sizeof(struct mk_wrec) > d->bytes)
			return mk_fail(c, SQK_ECORRUPT, "directory entries damaged in the "
				       "temporary file");
		k[i].name = (const char *)buf + off + sizeof(struct mk_wrec);
		memcpy(&k[i].r, buf + off, sizeof(struct mk_wrec));
		const struct mk_wrec *r = &k[i].r;
		k[i].target = k[i].name + r->name_len;
		off += sizeof(*r) + r->name_len + r->target_len;
		if (off > d->bytes)
			break;
		v[i] = (struct mk_dent){ .name = k[i].name, .name_len = r->name_len,
					 .mode = r->mode };
		if (r->link) {
			const struct wgroup *g = &w->groups[r->ref];
			v[i].ino = g->ino;
			v[i].mode = g->r.mode;
			if (g->ino == cursor)
				cursor++;
		} else {
			v[i].ino = (uint32_t)cursor++;
		}
	}
	return off == d->bytes ? 0 : mk_fail(c, SQK_ECORRUPT, "directory entries damaged in the "
					     "temporary file");
}

/* Writes the inodes of d's entries (sub-directories first, depth first) and then d's listing
 * and inode, as tables.c does for a tree in memory. */
static int emit_entries(struct mk_ctx *c, struct mk_tables *t, const struct wdir *d,
			const struct wkid *k, struct mk_dent *v, const struct mk_inode *self,
			size_t plen)
{
	struct mk_walk *w = c->walk;
	int err = 0;
	for (uint32_t i = 0; i < d->n && !err; i++) {
		if (k[i].r.link || !S_ISDIR(k[i].r.mode))
			continue;
		struct mk_inode a = inode_of(w, &k[i].r, v[i].ino, 0, NULL);
		err = set_epath(c, w, plen, k[i].name, k[i].r.name_len);
		if (!err)
			err = emit_wdir(c, t, k[i].r.ref, &a, self->ino,
					plen + 1 + k[i].r.name_len, &v[i].ref);
	}
	for (uint32_t i = 0; i < d->n && !err; i++) {
		const struct mk_wrec *r = &k[i].r;
		if (r->link) {
			struct wgroup *g = &w->groups[r->ref];
			if (!g->emitted) {
				struct mk_inode a = inode_of(w, &g->r, g->ino, g->nlink, g->target);
				err = mk_tables_inode(t, &a, &g->inode_ref);
				g->emitted = true;
			}
			v[i].ref = g->inode_ref;
		} else if (!S_ISDIR(r->mode)) {
			struct mk_inode a = inode_of(w, r, v[i].ino, 1, k[i].target);
			err = mk_tables_inode(t, &a, &v[i].ref);
		}
	}
	return err;
}

static int emit_wdir(struct mk_ctx *c, struct mk_tables *t, uint32_t dir,
		     const struct mk_inode *self, uint32_t parent_ino, size_t plen, uint64_t *ref)
{
	struct mk_walk *w = c->walk;
	const struct wdir *d = &w->dirs[dir];
	uint8_t *buf = malloc(d->bytes + 1);
	struct wkid *k = malloc(((size_t)d->n + 1) * sizeof(*k));
	struct mk_dent *v = malloc(((size_t)d->n + 1) * sizeof(*v));
	int err = !buf || !k || !v ? mk_fail(c, SQK_ENOMEM, "out of memory") : 0;
	if (!err && d->bytes)
		err = mk_spill_get(c, w->store, d->ref, buf, d->bytes);
	if (!err)
		err = decode_dir(c, w, d, buf, k, v);
	if (!err)
		err = emit_entries(c, t, d, k, v, self, plen);
	if (!err) {
		w->epath[plen ? plen : 1] = 0; /* this directory's path again ("/" for the root) */
		err = mk_tables_dir(t, self, v, d->n, d->nsubdirs, parent_ino, w->epath, ref);
	}
	free(v);
	free(k);
	free(buf);
	return err;
}

static int walk_emit(struct mk_ctx *c, struct mk_tables *t, uint64_t *root_ref)
{
	struct mk_walk *w = c->walk;
	int err = mk_grow(c, &w->epath, &w->epath_cap, 2, 1);
	if (err)
		return err;
	strcpy(w->epath, "/");
	struct mk_inode a = inode_of(w, &w->root, 1, 0, NULL);
	return emit_wdir(c, t, 0, &a, c->inode_count + 1, 0, root_ref);
}

static void walk_free(struct mk_ctx *c)
{
	struct mk_walk *w = c->walk;
	if (!w)
		return;
	mk_spill_destroy(w->store);
	for (uint32_t i = 0; i < w->nfiles; i++) {
		struct mk_file *f = file_at(w, i);
		if (f->frag_index != MK_FRAG_DUP)
			free(f->blk);
	}
	for (uint32_t i = 0; i < w->nchunks; i++)
		free(w->chunks[i]);
	free(w->chunks);
	for (uint32_t i = 0; i < w->open_used; i++)
		free(w->open[i].buf);
	free(w->open);
	for (uint32_t i = 0; i < w->ngroups; i++)
		free(w->groups[i].target);
	free(w->groups);
	free(w->lnames);
	free(w->dirs);
	free(w->path);
	free(w->epath);
	mk_idmap_free(&w->ids);
	free(w);
	c->walk = NULL;
}

const struct mk_tree_ops mk_tree_disk_ops = {
	.add = walk_add, .finish = walk_finish, .emit = walk_emit, .free = walk_free,
};
