/* SPDX-License-Identifier: BSD-2-Clause */
/* The image tree, built from a source's entries as they come, for sources whose entries come in
 * any order (an archive) and pseudo definitions. Directories are nodes in memory: each entry is
 * placed under its parent (directories an archive implies but never lists are made with the
 * default attributes), a repeated path replaces the earlier entry. The other entries are records
 * of an external sort (runs.c), so memory does not grow with them; only those the tree must find
 * again stay nodes: hard links (and a stand-in for the name a link names), the paths pseudo
 * definitions name. At the end every directory's nodes are sorted by name and merged with its
 * sorted records (the last record of a path is its entry, a node beats the records of its path),
 * and the directories, in the order they were made, go to walk.c's tree on disk (walk.h), which
 * numbers the inodes and writes the tables as for a walked tree. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#define XXH_STATIC_LINKING_ONLY
#include <xxhash.h>

#include "common/depth.h"
#include "sqk/error.h"
#include "common/format.h"
#include "mk.h"
#include "attrs.h"
#include "pseudo.h"
#include "tree.h"
#include "source.h"
#include "runs.h"
#include "tables.h"
#include "walk.h"

/* Open-addressing maps: (parent, name) → node for lookups by path, and (dev, ino) → canonical
 * node for the hard links of a walked tree. */
struct name_map {
	struct mk_node **slots;
	size_t cap, used;
};

/* Nodes, names, file records and symlink targets live as long as the tree: they come from
 * chunks of this arena (no per-allocation header, no free list), freed together. */
#define ARENA_CHUNK (1u << 20)

struct arena_chunk {
	struct arena_chunk *next;
	size_t used, cap;
	max_align_t data[];
};

struct mk_tree {
	struct arena_chunk *arena;
	bool ordered;              /* the source gives sorted, unique entries: no name map needed */
	struct name_map names;
	struct mk_idmap ids;
	char *last_dir;            /* path of the parent looked up last, and its node */
	size_t last_dir_len;
	struct mk_node *last_node;
	struct mk_node **dead;     /* replaced nodes, kept for the data that points at them */
	size_t ndead, dead_cap;
	struct mk_runs *runs;      /* the entries that are not nodes */
	bool spill;                /* new entries may be records (not after the source) */
	uint64_t seq;              /* entries so far */
	uint32_t next_order;       /* tree order of the next inode */
	struct tproxy *proxies;    /* hard links to records: their inodes, found at the end */
	size_t nproxies, proxies_cap;
	struct mk_node **groups;   /* canonical node of each walk group */
	size_t ngroups, groups_cap;
	uint8_t *block;            /* a directory's records for the walk */
	size_t block_cap;
	char *held;                /* the last record of a path, copied (name, target) */
};

/* A hard link to a path that was a record: its inode is the node n, whose attributes are those
 * of the path's last record before the link (n->seq), found by the merge. */
struct tproxy {
	struct mk_node *n;
	char *origin, *link;       /* owned, for the message when there was no such record */
};

static size_t name_hash(const struct mk_node *parent, const char *name, size_t len)
{
	return (size_t)XXH3_64bits_withSeed(name, len, (uint64_t)(uintptr_t)parent);
}

static int names_grow(struct name_map *m)
{
	size_t ncap = m->cap ? m->cap * 2 : 1024;
	struct mk_node **ns = calloc(ncap, sizeof(*ns));
	if (!ns)
		return SQK_ENOMEM;
	for (size_t i = 0; i < m->cap; i++) {
		struct mk_node *n = m->slots[i];
		if (!n)
			continue;
		size_t j = name_hash(n->parent, n->name, n->name_len) & (ncap - 1);
		while (ns[j])
			j = (j + 1) & (ncap - 1);
		ns[j] = n;
	}
	free(m->slots);
	m->slots = ns;
	m->cap = ncap;
	return 0;
}

/* The slot of (parent, name): holding the node, or empty where it would go. */
static size_t names_slot(const struct name_map *m, const struct mk_node *parent, const char *name,
			 size_t len)
{
	size_t j = name_hash(parent, name, len) & (m->cap - 1);
	for (;; j = (j + 1) & (m->cap - 1)) {
		const struct mk_node *o = m->slots[j];
		if (!o ||
		    (o->parent == parent && o->name_len == len && !memcmp(o->name, name, len)))
			return j;
	}
}

static struct mk_node *names_find(const struct name_map *m, const struct mk_node *parent,
				  const char *name, size_t len)
{
	return m->cap ? m->slots[names_slot(m, parent, name, len)] : NULL;
}

/* Inserts n, or replaces the node of the same (parent, name). */
static int names_put(struct name_map *m, struct mk_node *n)
{
	if ((m->used + 1) * 2 > m->cap) {
		int err = names_grow(m);
		if (err)
			return err;
	}
	size_t j = names_slot(m, n->parent, n->name, n->name_len);
	if (!m->slots[j])
		m->used++;
	m->slots[j] = n;
	return 0;
}

/* Takes n out (a replaced entry whose path may now be a record's): the later slots of its run
 * move back so that every lookup still finds them. */
static void names_del(struct name_map *m, const struct mk_node *n)
{
	if (!m->cap)
		return;
	size_t mask = m->cap - 1, i = names_slot(m, n->parent, n->name, n->name_len);
	if (m->slots[i] != n)
		return;
	m->slots[i] = NULL;
	m->used--;
	for (size_t k = (i + 1) & mask; m->slots[k]; k = (k + 1) & mask) {
		const struct mk_node *o = m->slots[k];
		size_t h = name_hash(o->parent, o->name, o->name_len) & mask;
		bool stays = i <= k ? (i < h && h <= k) : (i < h || h <= k);
		if (stays)
			continue;
		m->slots[i] = m->slots[k];
		m->slots[k] = NULL;
		i = k;
	}
}

static size_t id_hash(uint64_t d, uint64_t i)
{
	uint64_t h = d * 0x9E3779B97F4A7C15ull ^ i * 0xC2B2AE3D27D4EB4Full;
	return (size_t)(h ^ (h >> 29));
}

static int ids_grow(struct mk_idmap *m)
{
	size_t ncap = m->cap ? m->cap * 2 : 256;
	struct mk_idmap_slot *ns = calloc(ncap, sizeof(*ns));
	if (!ns)
		return SQK_ENOMEM;
	for (size_t i = 0; i < m->cap; i++) {
		if (!m->slots[i].val)
			continue;
		size_t j = id_hash(m->slots[i].dev, m->slots[i].ino) & (ncap - 1);
		while (ns[j].val)
			j = (j + 1) & (ncap - 1);
		ns[j] = m->slots[i];
	}
	free(m->slots);
	m->slots = ns;
	m->cap = ncap;
	return 0;
}

int mk_idmap_find_or_put(struct mk_idmap *m, uint64_t dev, uint64_t ino, uint64_t val,
			 uint64_t *found)
{
	if ((m->used + 1) * 2 > m->cap) {
		int err = ids_grow(m);
		if (err)
			return err;
	}
	size_t j = id_hash(dev, ino) & (m->cap - 1);
	for (; m->slots[j].val; j = (j + 1) & (m->cap - 1))
		if (m->slots[j].dev == dev && m->slots[j].ino == ino) {
			*found = m->slots[j].val;
			return 0;
		}
	m->slots[j] = (struct mk_idmap_slot){ .dev = dev, .ino = ino, .val = val };
	m->used++;
	*found = 0;
	return 0;
}

void mk_idmap_free(struct mk_idmap *m)
{
	free(m->slots);
	m->slots = NULL;
	m->cap = m->used = 0;
}

static int push_node(struct mk_ctx *c, struct mk_node *n)
{
	int err = mk_grow(c, &c->nodes, &c->nodes_cap, c->nnodes + 1, sizeof(*c->nodes));
	if (err)
		return err;
	if (c->tree->next_order >= UINT32_MAX - 2)
		return mk_fail(c, SQK_ETOOBIG, "too many inodes");
	n->order = c->tree->next_order++;
	c->nodes[c->nnodes++] = n;
	return 0;
}

uint32_t mk_clamp_time(const struct sqk_build_opts *o, int64_t t)
{
	if (o->set_mtime >= 0)
		return (uint32_t)o->set_mtime;
	if (t < 0)
		t = 0;
	if (t > UINT32_MAX)
		t = UINT32_MAX;
	if (o->clamp_time >= 0 && t > o->clamp_time)
		t = o->clamp_time;
	return (uint32_t)t;
}

/* SquashFS keeps 32 unsigned bits of mtime: the first entry clamped is named, the others
 * counted (mk_report_clamped), so a big archive of odd times prints two lines, not thousands. */
static void note_clamped(struct mk_ctx *c, const struct mk_entry *e, uint32_t stored)
{
	const struct sqk_build_opts *o = c->opt;
	if (o->set_mtime >= 0 || e->mtime == MK_MTIME_NEWEST || (e->mtime >= 0 &&
								 e->mtime <= UINT32_MAX))
		return;
	if (!c->mtimes_clamped++)
		fprintf(stderr, "sqk mkimage: '%s': mtime %lld is outside what SquashFS stores "
			"(0..4294967295, 1970-01-01 to 2106-02-07): stored as %u\n", e->origin,
			(long long)e->mtime, stored);
}

void mk_report_clamped(struct mk_ctx *c)
{
	if (c->mtimes_clamped > 1)
		fprintf(stderr, "sqk mkimage: %llu entries had an mtime outside 0..4294967295, "
			"clamped (the first is named above)\n",
			(unsigned long long)c->mtimes_clamped);
}

int mk_check_depth(struct mk_ctx *c, const struct mk_entry *e)
{
	size_t len = strlen(e->path);
	uint64_t depth = path_depth(e->path, len);
	if (depth <= SQK_DEPTH_MAX)
		return 0;
	/* the origin names the path (an archive member, a source file) or where it was defined
	 * (a pseudo definition's FILE:LINE): then the path is named too */
	size_t ol = strlen(e->origin);
	bool named = ol >= len && !memcmp(e->origin + ol - len, e->path, len);
	char b[2 * SQK_DEPTH_SHOWN + 4], bp[2 * SQK_DEPTH_SHOWN + 4];
	return mk_fail(c, SQK_ETOOBIG, "'%s'%s%s%s is %llu levels deep; an image holds at most %u "
		       "levels (SQK_DEPTH_MAX), so that every reader can walk it back",
		       depth_shown(e->origin, b), named ? "" : " ('",
		       named ? "" : depth_shown(e->path, bp), named ? "" : "')",
		       (unsigned long long)depth, SQK_DEPTH_MAX);
}

int mk_owner(struct mk_ctx *c, uint32_t uid, uint32_t gid, uint16_t *uid_idx, uint16_t *gid_idx)
{
	const struct sqk_build_opts *o = c->opt;
	uid = o->force_uid >= 0 ? (uint32_t)o->force_uid : uid;
	gid = o->force_gid >= 0 ? (uint32_t)o->force_gid : gid;
	int err = mk_ids_index(c, uid, uid_idx);
	return err ? err : mk_ids_index(c, gid, gid_idx);
}

static int set_owner(struct mk_ctx *c, struct mk_node *n, uint32_t uid, uint32_t gid)
{
	return mk_owner(c, uid, gid, &n->uid_idx, &n->gid_idx);
}

/* len zeroed bytes from the tree's arena (aligned for any type when align), or NULL. */
static void *arena_alloc(struct mk_tree *t, size_t len, bool align)
{
	struct arena_chunk *ch = t->arena;
	size_t at = ch ? ch->used : 0;
	if (align)
		at = (at + _Alignof(max_align_t) - 1) & ~(size_t)(_Alignof(max_align_t) - 1);
	if (!ch || at + len > ch->cap) {
		size_t cap = len > ARENA_CHUNK / 4 ? len : ARENA_CHUNK;
		ch = calloc(1, sizeof(*ch) + cap);
		if (!ch)
			return NULL;
		ch->cap = cap;
		ch->next = t->arena;
		t->arena = ch;
		at = 0;
	}
	ch->used = at + len;
	return (uint8_t *)ch->data + at;
}

static struct mk_node *new_node(struct mk_tree *t, const char *name, size_t len)
{
	struct mk_node *n = arena_alloc(t, sizeof(*n), true);
	if (!n)
		return NULL;
	n->name = arena_alloc(t, len + 1, false);
	if (!n->name)
		return NULL;
	memcpy(n->name, name, len);
	n->name[len] = 0;
	n->name_len = (uint32_t)len;
	n->xattr_idx = SQK_NONE32;
	n->group = SQK_NONE32;
	n->nlink = 1;
	return n;
}

/* The child of dir called name: binary search while the source is ordered (children sorted as
 * they came), else the name map. */
static struct mk_node *child_find(const struct mk_tree *t, const struct mk_node *dir,
				  const char *name, size_t len)
{
	if (!t->ordered)
		return names_find(&t->names, dir, name, len);
	size_t lo = 0, hi = dir->nchildren;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct mk_node *ch = dir->children[mid];
		int r = dir_name_cmp(ch->name, ch->name_len, name, len);
		if (!r)
			return dir->children[mid];
		if (r < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

static int add_child(struct mk_ctx *c, struct mk_node *dir, struct mk_node *child)
{
	uint32_t n = dir->nchildren;
	if (n == UINT32_MAX)
		return mk_fail(c, SQK_ETOOBIG, "too many entries in one directory");
	/* Not mem_grow: the capacity is implied by nchildren (no capacity field in every node). */
	if (n == 0 || (n >= 8 && !(n & (n - 1)))) { /* full: 0, 8, 16, 32... */
		size_t ncap = n ? (size_t)n * 2 : 8;
		struct mk_node **nc = realloc(dir->children, ncap * sizeof(*nc));
		if (!nc)
			return mk_fail(c, SQK_ENOMEM, "out of memory");
		dir->children = nc;
	}
	child->parent = dir;
	dir->children[dir->nchildren++] = child;
	int err = c->tree->ordered ? 0 : names_put(&c->tree->names, child);
	return err ? mk_fail(c, err, "out of memory") : 0;
}

/* Attributes of a directory no entry has listed: the --default-* options. */
int mk_implied_attrs(struct mk_ctx *c, struct mk_attrs *a)
{
	const struct sqk_build_opts *o = c->opt;
	memset(a, 0, sizeof(*a));
	a->mode = S_IFDIR | (o->default_mode & 07777);
	a->mtime = mk_clamp_time(o, o->default_mtime);
	a->xattr_idx = SQK_NONE32;
	return mk_owner(c, o->default_uid, o->default_gid, &a->uid_idx, &a->gid_idx);
}

static int set_implied(struct mk_ctx *c, struct mk_node *n)
{
	struct mk_attrs a;
	int err = mk_implied_attrs(c, &a);
	n->mode = a.mode;
	n->mtime = a.mtime;
	n->uid_idx = a.uid_idx;
	n->gid_idx = a.gid_idx;
	n->implied = true;
	n->born_implied = true;
	n->seq = c->tree->seq;
	return err;
}

/* The directory at path[0..len), made (implied) with its ancestors when missing. */
static int find_dir(struct mk_ctx *c, const char *path, size_t len, const char *origin,
		    struct mk_node **out)
{
	struct mk_tree *t = c->tree;
	if (t->last_node && t->last_dir_len == len && !memcmp(t->last_dir, path, len)) {
		*out = t->last_node;
		return 0;
	}
	struct mk_node *d = c->root;
	for (size_t i = 0; i < len;) {
		size_t j = i;
		while (j < len && path[j] != '/')
			j++;
		struct mk_node *ch = child_find(t, d, path + i, j - i);
		if (!ch && j - i > SQK_NAME_MAX)
			return mk_fail(c, SQK_ETOOBIG,
				       "'%s': name '%.*s...' is longer than %u bytes", origin, 32,
				       path + i, SQK_NAME_MAX);
		if (!ch) {
			ch = new_node(t, path + i, j - i);
			int err =
			    !ch ? mk_fail(c, SQK_ENOMEM, "out of memory") : add_child(c, d, ch);
			if (!err)
				err = set_implied(c, ch);
			if (!err)
				err = push_node(c, ch);
			if (err)
				return err;
		} else if (!S_ISDIR(ch->mode)) {
			return mk_fail(c, SQK_EINVAL, "'%s': '%.*s' is not a directory", origin,
				       (int)j, path);
		}
		d = ch;
		i = j + 1;
	}
	char *nd = realloc(t->last_dir, len + 1); /* a string: exactly len + 1, not mem_grow */
	if (!nd)
		return mk_fail(c, SQK_ENOMEM, "out of memory");
	memcpy(nd, path, len);
	t->last_dir = nd;
	t->last_dir_len = len;
	t->last_node = d;
	*out = d;
	return 0;
}

/* The node at a full path, or NULL. */
static struct mk_node *find_path(struct mk_ctx *c, const char *path)
{
	struct mk_node *d = c->root;
	while (d && *path) {
		size_t j = strcspn(path, "/");
		d = child_find(c->tree, d, path, j);
		path += j + (path[j] == '/');
	}
	return d;
}

int mk_tree_unorder(struct mk_ctx *c)
{
	struct mk_tree *t = c->tree;
	t->spill = false;
	if (!t->ordered)
		return 0;
	t->ordered = false;
	for (size_t i = 0; i < c->nnodes; i++) {
		struct mk_node *d = c->nodes[i];
		for (size_t k = 0; S_ISDIR(d->mode) && k < d->nchildren; k++) {
			int err = names_put(&t->names, d->children[k]);
			if (err)
				return mk_fail(c, err, "out of memory");
		}
	}
	return 0;
}

struct mk_node *mk_tree_find(struct mk_ctx *c, const char *path)
{
	struct mk_node *n = find_path(c, path);
	return n && n->link ? n->link : n;
}

int mk_tree_set_attrs(struct mk_ctx *c, struct mk_node *n, uint32_t perm, uint32_t uid,
		      uint32_t gid, int64_t mtime)
{
	n->mode = (n->mode & S_IFMT) | (perm & 07777);
	n->implied = false;
	n->ov_attrs = true;
	if (mtime >= 0) {
		n->mtime = mk_clamp_time(c->opt, mtime);
		n->ov_mtime = true;
	}
	return set_owner(c, n, uid, gid);
}

int mk_entry_attrs(struct mk_ctx *c, const struct mk_entry *e, struct mk_attrs *a)
{
	memset(a, 0, sizeof(*a));
	a->mode = e->mode;
	a->mtime = mk_clamp_time(c->opt, e->mtime);
	note_clamped(c, e, a->mtime);
	a->xattr_idx = SQK_NONE32;
	if (a->mtime > c->newest_mtime)
		c->newest_mtime = a->mtime;
	int err = mk_owner(c, e->uid, e->gid, &a->uid_idx, &a->gid_idx);
	if (err)
		return err;
	if (S_ISCHR(e->mode) || S_ISBLK(e->mode)) {
		if (e->dev_major > 0xFFF || e->dev_minor > 0xFFFFF)
			return mk_fail(c, SQK_ETOOBIG, "device '%s': number %u:%u not storable",
				       e->origin, e->dev_major, e->dev_minor);
		a->rdev = sqk_rdev_encode(e->dev_major, e->dev_minor);
	} else if (S_ISLNK(e->mode)) {
		size_t len = e->target ? strlen(e->target) : 0;
		if (!len || len > SQK_SYMLINK_MAX)
			return mk_fail(c, len ? SQK_ETOOBIG : SQK_EINVAL,
				       "symlink '%s': target %s", e->origin,
				       len ? "too long" : "empty");
		a->target_len = (uint32_t)len;
	} else if (!S_ISREG(e->mode) && !S_ISDIR(e->mode) && !S_ISFIFO(e->mode) &&
		   !S_ISSOCK(e->mode)) {
		return mk_fail(c, SQK_EUNSUPPORTED, "'%s': unsupported file type", e->origin);
	}
	if (e->nxattrs && !c->opt->no_xattrs)
		err = mk_xattrs_intern(c, e->origin, e->xattrs, e->nxattrs, &a->xattr_idx);
	return err;
}

/* Fills n's attributes from e (the canonical node of its inode). */
static int fill_node(struct mk_ctx *c, struct mk_node *n, const struct mk_entry *e)
{
	struct mk_attrs a;
	int err = mk_entry_attrs(c, e, &a);
	if (err)
		return err;
	n->mode = a.mode;
	n->mtime = a.mtime;
	n->uid_idx = a.uid_idx;
	n->gid_idx = a.gid_idx;
	n->rdev = a.rdev;
	n->xattr_idx = a.xattr_idx;
	if (S_ISLNK(e->mode)) {
		n->target = arena_alloc(c->tree, a.target_len + 1, false);
		if (!n->target)
			return mk_fail(c, SQK_ENOMEM, "out of memory");
		memcpy(n->target, e->target, a.target_len + 1);
		n->target_len = a.target_len;
	} else if (S_ISREG(e->mode)) {
		int ferr = mk_walk_new_file(c, e->size, &n->file_no);
		if (ferr)
			return ferr;
		n->file = mk_walk_file(c, n->file_no);
	}
	return 0;
}

static int bury(struct mk_ctx *c, struct mk_node *old)
{
	struct mk_tree *t = c->tree;
	int err = mk_grow(c, &t->dead, &t->dead_cap, t->ndead + 1, sizeof(*t->dead));
	if (err)
		return err;
	old->dead = true;
	t->dead[t->ndead++] = old;
	return 0;
}

/* A path listed twice: a directory listed after it was implied (or listed) keeps its children
 * and takes the new attributes; anything else is replaced, as extracting the archive would. */
static int replace_entry(struct mk_ctx *c, struct mk_node *old, const struct mk_entry *e,
			 struct mk_node **out)
{
	struct mk_node *p = old->parent;
	if (S_ISDIR(old->mode) && S_ISDIR(e->mode) && !e->link) {
		old->implied = false;
		*out = old;
		return fill_node(c, old, e);
	}
	if (S_ISDIR(old->mode) && (old->nchildren || old->nspilled))
		return mk_fail(c, SQK_EINVAL, "'%s': replaces a directory that has entries",
			       e->origin);
	for (size_t i = 0; i < p->nchildren; i++)
		if (p->children[i] == old) {
			memmove(p->children + i, p->children + i + 1,
				(p->nchildren - i - 1) * sizeof(*p->children));
			p->nchildren--;
			break;
		}
	if (!c->tree->ordered)
		names_del(&c->tree->names, old);
	c->tree->last_node = NULL;
	*out = NULL;
	/* One name of a hard-link group: only that name goes (GNU tar and bsdtar unlink it and
	 * extract anew); the other names keep the inode, whose canonical node may now be in no
	 * directory: it is numbered and written through the names left. */
	struct mk_node *canon = old->link ? old->link : old;
	if (canon == old && canon->nlink <= 1)
		return bury(c, old);
	if (canon->nlink > 1)
		c->st.hardlinks--;
	return --canon->nlink ? 0 : bury(c, canon); /* the last name of a detached inode */
}

static int add_link(struct mk_ctx *c, struct mk_node *n, struct mk_node *canon)
{
	if (canon->link)
		canon = canon->link;
	n->link = canon;
	canon->nlink++;
	c->st.hardlinks++;
	return 0;
}

static int add_root(struct mk_ctx *c, const struct mk_entry *e)
{
	if (!S_ISDIR(e->mode))
		return mk_fail(c, SQK_EINVAL, "'%s': the root must be a directory", e->origin);
	c->root->implied = false;
	c->root->newest_mtime = e->mtime == MK_MTIME_NEWEST;
	return fill_node(c, c->root, e);
}

/* The position of the logical directory of an entry of p: p, or for a __pycache__ directory the
 * parent of that (so that foo.py and its .pyc files meet in the fragment order). */
static uint32_t logical_dir(const struct mk_node *p)
{
	if (p->parent && !strcmp(p->name, "__pycache__"))
		p = p->parent;
	return p->order;
}

/* An entry that need not be found again (not a directory, hard link or a path --pseudo names)
 * becomes a record of the external sort, in directory dir; its file record is the walk's. */
static bool to_record(const struct mk_ctx *c, const struct mk_entry *e)
{
	return c->tree->spill && !e->link && !e->has_id && !S_ISDIR(e->mode) &&
	       !(c->pseudo && mk_pseudo_names(c->pseudo, e->path));
}

static int put_record(struct mk_ctx *c, struct mk_node *dir, const char *name,
		      const struct mk_entry *e, struct mk_file_ref *data)
{
	struct mk_tree *t = c->tree;
	struct mk_attrs a;
	int err = mk_entry_attrs(c, e, &a);
	if (err)
		return err;
	if (t->next_order >= UINT32_MAX - 2 || dir->nspilled == UINT32_MAX)
		return mk_fail(c, SQK_ETOOBIG, "too many inodes");
	struct mk_srec r = { .dir = dir->order, .seq = t->seq, .name = name, .target = e->target,
			     .r = { .mode = a.mode, .mtime = a.mtime, .xattr_idx = a.xattr_idx,
				    .ref = a.rdev, .uid_idx = a.uid_idx, .gid_idx = a.gid_idx,
				    .name_len = (uint16_t)strlen(name),
				    .target_len = (uint16_t)a.target_len } };
	uint32_t order = t->next_order++;
	if (S_ISREG(e->mode)) {
		if ((err = mk_walk_new_file(c, e->size, &r.r.ref)))
			return err;
		*data = (struct mk_file_ref){ .file = mk_walk_file(c, r.r.ref), .order = order,
					      .ldir = logical_dir(dir) };
	}
	dir->nspilled++;
	return mk_runs_put(c, t->runs, &r);
}

/* A hard link to a path no node holds, in a directory that has records: the path's last record
 * so far is the entry linked to. A stand-in node takes the path (that entry's name) and a
 * pending node its inode, whose attributes the merge finds (tree_finish); *out = the stand-in,
 * or NULL when no record can be there. */
static int stand_in(struct mk_ctx *c, const struct mk_entry *e, struct mk_node **out)
{
	struct mk_tree *t = c->tree;
	const char *slash = strrchr(e->link, '/');
	const char *name = slash ? slash + 1 : e->link;
	struct mk_node *dir = c->root;
	*out = NULL;
	if (slash) {
		char *dpath = strndup(e->link, (size_t)(slash - e->link));
		if (!dpath)
			return mk_fail(c, SQK_ENOMEM, "out of memory");
		dir = find_path(c, dpath);
		free(dpath);
	}
	size_t len = strlen(name);
	if (!dir || !S_ISDIR(dir->mode) || dir->link || !dir->nspilled || !len ||
	    len > SQK_NAME_MAX)
		return 0;
	int err = mk_grow(c, &t->proxies, &t->proxies_cap, t->nproxies + 1, sizeof(*t->proxies));
	if (err)
		return err;
	struct mk_node *in = new_node(t, name, len), *x = new_node(t, name, len);
	struct tproxy *p = &t->proxies[t->nproxies];
	p->n = in;
	p->origin = strdup(e->origin);
	p->link = strdup(e->link);
	t->nproxies++;
	if (!in || !x || !p->origin || !p->link)
		return mk_fail(c, SQK_ENOMEM, "out of memory");
	in->parent = dir; /* not one of its children: where its record is */
	in->pending = true;
	in->mode = S_IFREG;
	in->seq = x->seq = t->seq;
	x->link = in;
	if ((err = add_child(c, dir, x)))
		return err;
	*out = x;
	return 0;
}

static int add_hard_link(struct mk_ctx *c, struct mk_node *n, const struct mk_entry *e)
{
	struct mk_node *t = find_path(c, e->link);
	int err = t ? 0 : stand_in(c, e, &t);
	if (err)
		return err;
	if (t == n)
		t = NULL; /* a link to itself names no earlier entry */
	if (!t || t->dead || S_ISDIR(t->mode))
		return mk_fail(c, SQK_EINVAL, "'%s': hard link to '%s', %s", e->origin, e->link,
			       !t || t->dead ? "which is not an earlier entry" : "a directory");
	return add_link(c, n, t);
}

int mk_tree_add(struct mk_ctx *c, const struct mk_entry *e, struct mk_file_ref *data)
{
	data->file = NULL;
	c->tree->seq++;
	if (!*e->path)
		return add_root(c, e);
	int err = mk_check_depth(c, e);
	if (err)
		return err;
	const char *slash = strrchr(e->path, '/');
	size_t dlen = slash ? (size_t)(slash - e->path) : 0;
	const char *name = slash ? slash + 1 : e->path;
	struct mk_node *dir = NULL, *n = NULL;
	if (strlen(name) > SQK_NAME_MAX)
		return mk_fail(c, SQK_ETOOBIG, "'%s': name '%.32s...' is longer than %u bytes",
			       e->origin, name, SQK_NAME_MAX);
	err = find_dir(c, e->path, dlen, e->origin, &dir);
	if (err)
		return err;
	struct mk_node *old =
	    c->tree->ordered ? NULL : child_find(c->tree, dir, name, strlen(name));
	if (old && (err = replace_entry(c, old, e, &n)))
		return err;
	if (n)
		return 0; /* a directory again */
	if (to_record(c, e))
		return put_record(c, dir, name, e, data);
	if (!(n = new_node(c->tree, name, strlen(name))))
		return mk_fail(c, SQK_ENOMEM, "out of memory");
	n->seq = c->tree->seq;
	if ((err = add_child(c, dir, n)))
		return err;
	if (e->link)
		return add_hard_link(c, n, e);
	if (e->has_id && !S_ISDIR(e->mode)) {
		uint64_t canon;
		if ((err = mk_idmap_find_or_put(&c->tree->ids, e->id_dev, e->id_ino,
						(uint64_t)(uintptr_t)n, &canon)))
			return mk_fail(c, err, "out of memory");
		if (canon)
			return add_link(c, n, (struct mk_node *)(uintptr_t)canon);
	}
	err = fill_node(c, n, e);
	if (!err)
		err = push_node(c, n);
	if (!err && n->file)
		*data = (struct mk_file_ref){ .file = n->file, .order = n->order,
					      .ldir = logical_dir(dir) };
	return err;
}

int mk_tree_start(struct mk_ctx *c, bool ordered)
{
	int err = mk_walk_create(c);
	if (err)
		return err;
	c->tree = calloc(1, sizeof(*c->tree));
	c->root = c->tree ? new_node(c->tree, "", 0) : NULL;
	if (!c->root)
		return mk_fail(c, SQK_ENOMEM, "out of memory");
	c->tree->ordered = ordered;
	c->tree->spill = true;
	err = mk_runs_create(c, c->opt->entry_mem, &c->tree->runs);
	if (!err)
		err = set_implied(c, c->root);
	return err ? err : push_node(c, c->root);
}

static void node_free(struct mk_node *n)
{
	if (!n)
		return;
	for (size_t i = 0; i < n->nchildren; i++)
		node_free(n->children[i]);
	free(n->children);
}

static void tree_state_free(struct mk_tree *t)
{
	if (!t)
		return;
	free(t->names.slots);
	mk_idmap_free(&t->ids);
	free(t->last_dir);
	t->names.slots = NULL;
	t->last_dir = NULL;
}

void mk_tree_free(struct mk_ctx *c)
{
	node_free(c->root);
	c->root = NULL;
	struct mk_tree *t = c->tree;
	if (t) {
		for (size_t i = 0; i < t->ndead; i++) {
			t->dead[i]->nchildren = 0;
			node_free(t->dead[i]);
		}
		free(t->dead);
		tree_state_free(t);
		for (struct arena_chunk *ch = t->arena, *nx; ch; ch = nx) {
			nx = ch->next;
			free(ch);
		}
		for (size_t i = 0; i < t->nproxies; i++) {
			free(t->proxies[i].origin);
			free(t->proxies[i].link);
		}
		free(t->proxies);
		free(t->groups);
		free(t->block);
		free(t->held);
		mk_runs_destroy(t->runs);
		free(t);
		c->tree = NULL;
	}
	free(c->nodes);
	c->nodes = NULL;
	c->nnodes = 0;
}

static int name_cmp(const void *a, const void *b)
{
	const struct mk_node *x = *(struct mk_node *const *)a, *y = *(struct mk_node *const *)b;
	return dir_name_cmp(x->name, x->name_len, y->name, y->name_len);
}

/* Drops replaced nodes from the tree order (their data stays referenced by duplicates). */
static void drop_dead(struct mk_ctx *c)
{
	size_t k = 0;
	for (size_t i = 0; i < c->nnodes; i++)
		if (!c->nodes[i]->dead)
			c->nodes[k++] = c->nodes[i];
	c->nnodes = k;
}

void mk_count_kind(struct mk_ctx *c, mode_t m, const struct mk_file *f)
{
	if (S_ISREG(m)) {
		c->st.files++;
		c->st.file_bytes += f->size;
	} else if (S_ISDIR(m)) {
		c->st.dirs++;
	} else if (S_ISLNK(m)) {
		c->st.symlinks++;
	} else if (S_ISCHR(m) || S_ISBLK(m)) {
		c->st.devices++;
	} else {
		c->st.ipc++;
	}
}

/* ---- the end: each directory's nodes and records merged into the walk ---- */

/* What a directory being merged has so far. */
struct tdir {
	struct mk_node *d;
	size_t len;                /* bytes of records in c->tree->block */
	uint32_t n, nsubdirs;
	uint64_t *inodes;          /* inodes of the image so far */
	size_t proxy;              /* the next of the sorted proxies to find */
};

static struct mk_wrec node_rec(const struct mk_node *n)
{
	struct mk_wrec r = { .mode = n->mode, .mtime = n->mtime, .xattr_idx = n->xattr_idx,
			     .ref = n->rdev, .uid_idx = n->uid_idx, .gid_idx = n->gid_idx,
			     .name_len = (uint16_t)n->name_len,
			     .target_len = (uint16_t)n->target_len };
	if (S_ISDIR(n->mode))
		r.ref = n->dir_no;
	else if (S_ISREG(n->mode))
		r.ref = n->file_no;
	return r;
}

static int put_rec(struct mk_ctx *c, struct tdir *m, const struct mk_wrec *r, const char *name,
		   const char *target)
{
	struct mk_tree *t = c->tree;
	if (m->n == UINT32_MAX)
		return mk_fail(c, SQK_ETOOBIG, "too many entries in one directory");
	m->n++;
	return mk_walk_encode(c, &t->block, &m->len, &t->block_cap, r, name, target);
}

/* A node of the directory: a sub-directory, a name of a file with several names (its group's
 * numbered when first met), or an inode of its own. */
static int put_node(struct mk_ctx *c, struct tdir *m, struct mk_node *k)
{
	struct mk_tree *t = c->tree;
	struct mk_node *tg = k->link ? k->link : k;
	struct mk_wrec r = node_rec(k);
	if (S_ISDIR(k->mode)) {
		m->nsubdirs++;
	} else if (k->link || k->nlink > 1) {
		int err = 0;
		if (tg->group == SQK_NONE32) {
			err = mk_grow(c, &t->groups, &t->groups_cap, t->ngroups + 1,
				      sizeof(*t->groups));
			if (!err)
				err = mk_walk_new_group(c, &tg->group);
			if (!err)
				t->groups[t->ngroups++] = tg;
		}
		if (!err)
			err = mk_walk_put_lname(c, m->d->dir_no, m->n, tg->group);
		if (err)
			return err;
		r = (struct mk_wrec){
		    .link = 1, .ref = tg->group, .name_len = (uint16_t)k->name_len};
	} else {
		mk_count_kind(c, k->mode, k->file);
		++*m->inodes;
	}
	return put_rec(c, m, &r, k->name, k->target);
}

static int put_srec(struct mk_ctx *c, struct tdir *m, const struct mk_srec *r)
{
	mk_count_kind(c, r->r.mode, S_ISREG(r->r.mode) ? mk_walk_file(c, r->r.ref) : NULL);
	++*m->inodes;
	return put_rec(c, m, &r->r, r->name, r->target);
}

/* Order of the key of proxy p against the record r's: dir, then name. */
static int proxy_cmp(const struct tproxy *p, const struct mk_srec *r)
{
	const struct mk_node *n = p->n;
	if (n->parent->order != r->dir)
		return n->parent->order < r->dir ? -1 : 1;
	return dir_name_cmp(n->name, n->name_len, r->name, r->r.name_len);
}

static int proxy_sort(const void *a, const void *b)
{
	const struct mk_node *x = ((const struct tproxy *)a)->n, *y = ((const struct tproxy *)b)->n;
	if (x->parent->order != y->parent->order)
		return x->parent->order < y->parent->order ? -1 : 1;
	int r = dir_name_cmp(x->name, x->name_len, y->name, y->name_len);
	return r ? r : (x->seq > y->seq) - (x->seq < y->seq);
}

/* The pending inode of p takes the attributes of r, its path's last record before the link
 * (NULL: there was none), but for what --pseudo set. */
static int resolve(struct mk_ctx *c, const struct tproxy *p, const struct mk_srec *r)
{
	struct mk_node *n = p->n;
	if (!r)
		return mk_fail(c, SQK_EINVAL, "'%s': hard link to '%s', which is not an earlier "
			       "entry", p->origin, p->link);
	n->pending = false;
	n->mode = n->ov_attrs ? (r->r.mode & S_IFMT) | (n->mode & 07777) : r->r.mode;
	if (!n->ov_attrs) {
		n->uid_idx = r->r.uid_idx;
		n->gid_idx = r->r.gid_idx;
	}
	if (!n->ov_mtime)
		n->mtime = r->r.mtime;
	n->xattr_idx = r->r.xattr_idx;
	if (S_ISREG(r->r.mode)) {
		n->file_no = r->r.ref;
		n->file = mk_walk_file(c, r->r.ref);
	} else if (S_ISCHR(r->r.mode) || S_ISBLK(r->r.mode)) {
		n->rdev = r->r.ref;
	} else if (S_ISLNK(r->r.mode)) {
		if (!(n->target = arena_alloc(c->tree, r->r.target_len + 1u, false)))
			return mk_fail(c, SQK_ENOMEM, "out of memory");
		memcpy(n->target, r->target, r->r.target_len);
		n->target_len = r->r.target_len;
	}
	return 0;
}

/* Resolves the proxies of r's key made before the entry `below` with last (NULL: none). */
static int resolve_before(struct mk_ctx *c, struct tdir *m, const struct mk_srec *key,
			  const struct mk_srec *last, uint64_t below)
{
	struct mk_tree *t = c->tree;
	int err = 0;
	while (!err && m->proxy < t->nproxies && !proxy_cmp(&t->proxies[m->proxy], key) &&
	       t->proxies[m->proxy].n->seq < below)
		err = resolve(c, &t->proxies[m->proxy++], last);
	return err;
}

/* Copies r into *h (name and target into c->tree->held). */
static void hold(struct mk_tree *t, const struct mk_srec *r, struct mk_srec *h)
{
	*h = *r;
	memcpy(t->held, r->name, r->r.name_len);
	memcpy(t->held + r->r.name_len, r->target, r->r.target_len);
	h->name = t->held;
	h->target = t->held + r->r.name_len;
}

/* Takes the records of the next key: *last = the last one (the path's entry, unless a node
 * holds the path); the proxies of the keys up to it are resolved. */
static int take_key(struct mk_ctx *c, struct tdir *m, struct mk_srec *last)
{
	struct mk_tree *t = c->tree;
	const struct mk_srec *r = mk_runs_peek(t->runs);
	int err = 0;
	while (m->proxy < t->nproxies && proxy_cmp(&t->proxies[m->proxy], r) < 0)
		err = resolve(c, &t->proxies[m->proxy++], NULL);
	for (bool have = false; !err && r; r = mk_runs_peek(t->runs)) {
		if (have && (r->dir != last->dir || dir_name_cmp(r->name, r->r.name_len, last->name,
								 last->r.name_len)))
			break;
		err = resolve_before(c, m, r, have ? last : NULL, r->seq);
		if (!err) {
			hold(t, r, last);
			have = true;
			err = mk_runs_pop(c, t->runs);
		}
	}
	return err ? err : resolve_before(c, m, last, last, UINT64_MAX);
}

/* Directory d's entries, its sorted nodes and its records in name order, into the walk. */
static int merge_dir(struct mk_ctx *c, struct tdir *m)
{
	struct mk_tree *t = c->tree;
	struct mk_node *d = m->d;
	size_t i = 0;
	int err = 0;
	m->len = 0;
	m->n = m->nsubdirs = 0;
	while (!err) {
		const struct mk_srec *r = mk_runs_peek(t->runs);
		if (r && r->dir < d->order)
			return mk_fail(c, SQK_ECORRUPT, "sorted entries of a directory that is not "
				       "in the image (internal error)");
		bool rec = r && r->dir == d->order;
		if (!rec && i == d->nchildren)
			break;
		struct mk_node *k = i < d->nchildren ? d->children[i] : NULL;
		int cmp = !rec ? -1 : !k ? 1 : dir_name_cmp(k->name, k->name_len, r->name,
							     r->r.name_len);
		if (cmp < 0) {
			err = put_node(c, m, k);
			i++;
			continue;
		}
		struct mk_srec last;
		if ((err = take_key(c, m, &last)))
			break;
		if (cmp > 0) {
			err = put_srec(c, m, &last);
			continue;
		}
		/* a node holds the path: it came after the records, unless it is a directory made
		 * for a later entry under it while a record held its path */
		if (S_ISDIR(k->mode) && k->born_implied) {
			char where[1024];
			mk_node_path(k, where, sizeof(where));
			return mk_fail(c, SQK_EINVAL, "'%s/...': '%s' is not a directory",
				       where + 1, where + 1);
		}
		err = put_node(c, m, k);
		i++;
	}
	return err ? err : mk_walk_put_dir(c, t->block, m->len, m->n, m->nsubdirs);
}

/* The inode of each hard-link group, from its canonical node. */
static int put_groups(struct mk_ctx *c, uint64_t *inodes)
{
	struct mk_tree *t = c->tree;
	int err = 0;
	for (size_t g = 0; g < t->ngroups && !err; g++) {
		const struct mk_node *n = t->groups[g];
		struct mk_wrec r = node_rec(n);
		mk_count_kind(c, n->mode, n->file);
		++*inodes;
		err = mk_walk_set_group(c, (uint32_t)g, &r, n->target, n->nlink);
	}
	return err;
}

/* Sorts directories, sets the synthetic root's time and merges everything into the walk, which
 * numbers the inodes: the directories in the order they were made (c->nodes), as before. */
int mk_tree_finish(struct mk_ctx *c)
{
	struct mk_tree *t = c->tree;
	mk_report_clamped(c);
	tree_state_free(t);
	if (t->ndead)
		drop_dead(c);
	uint32_t ndirs = 0;
	for (size_t i = 0; i < c->nnodes; i++) {
		struct mk_node *d = c->nodes[i];
		if (!S_ISDIR(d->mode))
			continue;
		d->dir_no = ndirs++;
		if (d->nchildren > 1)
			qsort(d->children, d->nchildren, sizeof(*d->children), name_cmp);
	}
	if (c->root->newest_mtime)
		c->root->mtime = c->opt->set_mtime >= 0 ? (uint32_t)c->opt->set_mtime :
							   c->newest_mtime;
	if (t->nproxies > 1)
		qsort(t->proxies, t->nproxies, sizeof(*t->proxies), proxy_sort);
	uint64_t inodes = 0;
	struct tdir m = { .inodes = &inodes };
	int err = mk_runs_merge(c, t->runs);
	if (!err && !(t->held = malloc(SQK_NAME_MAX + SQK_SYMLINK_MAX + 2)))
		err = mk_fail(c, SQK_ENOMEM, "out of memory");
	for (size_t i = 0; i < c->nnodes && !err; i++) {
		if (!S_ISDIR(c->nodes[i]->mode))
			continue;
		m.d = c->nodes[i];
		err = merge_dir(c, &m);
		mk_count_kind(c, S_IFDIR, NULL);
		inodes++;
	}
	if (!err && mk_runs_peek(t->runs))
		err = mk_fail(c, SQK_ECORRUPT, "sorted entries of a directory that is not in the "
			      "image (internal error)");
	if (!err && m.proxy < t->nproxies)
		err = resolve(c, &t->proxies[m.proxy], NULL);
	if (!err)
		err = put_groups(c, &inodes);
	struct mk_wrec root = node_rec(c->root);
	return err ? err : mk_walk_close(c, &root, inodes);
}

static int tree_emit(struct mk_ctx *c, struct mk_tables *t, uint64_t *root_ref)
{
	return mk_tree_disk_ops.emit(c, t, root_ref);
}

static void tree_free(struct mk_ctx *c)
{
	mk_tree_free(c);
	mk_tree_disk_ops.free(c);
}

const struct mk_tree_ops mk_tree_mem_ops = {
	.add = mk_tree_add, .finish = mk_tree_finish, .emit = tree_emit, .free = tree_free,
};

void mk_node_path(const struct mk_node *n, char *buf, size_t cap)
{
	size_t len = 0;
	for (const struct mk_node *p = n; p && p->parent; p = p->parent)
		len += p->name_len + 1;
	if (!len || len >= cap) {
		snprintf(buf, cap, len ? ".../%s" : "/", n->name);
		return;
	}
	buf[len] = 0;
	for (const struct mk_node *p = n; p && p->parent; p = p->parent) {
		len -= p->name_len;
		memcpy(buf + len, p->name, p->name_len);
		buf[--len] = '/';
	}
}
