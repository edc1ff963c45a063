/* The image tree, built from a source's entries as they come: each entry is placed under its
 * parent (directories an archive implies but never lists are made with the default attributes),
 * hard links join their canonical node, a repeated path replaces the earlier entry. At the end
 * every directory is sorted by name (unsigned bytes) and the inodes are numbered. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#define XXH_STATIC_LINKING_ONLY
#include <xxhash.h>

#include "common/depth.h"
#include "common/error.h"
#include "common/format.h"
#include "mk.h"
#include "source.h"
#include "tables.h"

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
		if (!o || (o->parent == parent && o->name_len == len && !memcmp(o->name, name, len)))
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
	if (c->nnodes >= UINT32_MAX - 2)
		return mk_fail(c, SQK_ETOOBIG, "too many inodes");
	n->order = (uint32_t)c->nnodes;
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
	uint64_t depth = sqk_path_depth(e->path, len);
	if (depth <= SQK_DEPTH_MAX)
		return 0;
	/* the origin names the path (an archive member, a source file) or where it was defined
	 * (a pseudo definition's FILE:LINE): then the path is named too */
	size_t ol = strlen(e->origin);
	bool named = ol >= len && !memcmp(e->origin + ol - len, e->path, len);
	char b[2 * SQK_DEPTH_SHOWN + 4], bp[2 * SQK_DEPTH_SHOWN + 4];
	return mk_fail(c, SQK_ETOOBIG, "'%s'%s%s%s is %llu levels deep; an image holds at most %u "
		       "levels (SQK_DEPTH_MAX), so that every reader can walk it back",
		       sqk_depth_shown(e->origin, b), named ? "" : " ('",
		       named ? "" : sqk_depth_shown(e->path, bp), named ? "" : "')",
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
		int r = sqk_name_cmp(ch->name, ch->name_len, name, len);
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
	/* Not sqk_grow: the capacity is implied by nchildren (no capacity field in every node). */
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
			return mk_fail(c, SQK_ETOOBIG, "'%s': name '%.*s...' is longer than %u bytes",
				       origin, 32, path + i, SQK_NAME_MAX);
		if (!ch) {
			ch = new_node(t, path + i, j - i);
			int err = !ch ? mk_fail(c, SQK_ENOMEM, "out of memory") : add_child(c, d, ch);
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
	char *nd = realloc(t->last_dir, len + 1); /* a string: exactly len + 1, not sqk_grow */
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
	if (mtime >= 0)
		n->mtime = mk_clamp_time(c->opt, mtime);
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
		n->file = arena_alloc(c->tree, sizeof(*n->file), true);
		if (!n->file)
			return mk_fail(c, SQK_ENOMEM, "out of memory");
		n->file->size = e->size;
		n->file->frag_index = SQK_NONE32;
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
	if (S_ISDIR(old->mode) && old->nchildren)
		return mk_fail(c, SQK_EINVAL, "'%s': replaces a directory that has entries",
			       e->origin);
	for (size_t i = 0; i < p->nchildren; i++)
		if (p->children[i] == old) {
			memmove(p->children + i, p->children + i + 1,
				(p->nchildren - i - 1) * sizeof(*p->children));
			p->nchildren--;
			break;
		}
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

/* The position of n's logical directory: its parent, or for a __pycache__ directory the parent
 * of that (so that foo.py and its .pyc files meet in the fragment order). */
static uint32_t logical_dir(const struct mk_node *n)
{
	const struct mk_node *p = n->parent;
	if (p->parent && !strcmp(p->name, "__pycache__"))
		p = p->parent;
	return p->order;
}

int mk_tree_add(struct mk_ctx *c, const struct mk_entry *e, struct mk_file_ref *data)
{
	data->file = NULL;
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
	struct mk_node *old = c->tree->ordered ? NULL : child_find(c->tree, dir, name, strlen(name));
	if (old && (err = replace_entry(c, old, e, &n)))
		return err;
	if (n)
		return 0; /* a directory again */
	if (!(n = new_node(c->tree, name, strlen(name))))
		return mk_fail(c, SQK_ENOMEM, "out of memory");
	if ((err = add_child(c, dir, n)))
		return err;
	if (e->link) {
		struct mk_node *t = find_path(c, e->link);
		if (t == n)
			t = NULL; /* a link to itself names no earlier entry */
		if (!t || t->dead || S_ISDIR(t->mode))
			return mk_fail(c, SQK_EINVAL, "'%s': hard link to '%s', %s", e->origin, e->link,
				       !t || t->dead ? "which is not an earlier entry" :
						       "a directory");
		return add_link(c, n, t);
	}
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
					      .ldir = logical_dir(n) };
	return err;
}

int mk_tree_start(struct mk_ctx *c, bool ordered)
{
	c->tree = calloc(1, sizeof(*c->tree));
	c->root = c->tree ? new_node(c->tree, "", 0) : NULL;
	if (!c->root)
		return mk_fail(c, SQK_ENOMEM, "out of memory");
	c->tree->ordered = ordered;
	int err = set_implied(c, c->root);
	return err ? err : push_node(c, c->root);
}

static void node_free(struct mk_node *n)
{
	if (!n)
		return;
	for (size_t i = 0; i < n->nchildren; i++)
		node_free(n->children[i]);
	free(n->children);
	if (n->file && n->file->frag_index != MK_FRAG_DUP)
		free(n->file->blk);
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
	if (c->tree) {
		for (size_t i = 0; i < c->tree->ndead; i++) {
			c->tree->dead[i]->nchildren = 0;
			node_free(c->tree->dead[i]);
		}
		free(c->tree->dead);
		tree_state_free(c->tree);
		for (struct arena_chunk *ch = c->tree->arena, *nx; ch; ch = nx) {
			nx = ch->next;
			free(ch);
		}
		free(c->tree);
		c->tree = NULL;
	}
	free(c->nodes);
	c->nodes = NULL;
	c->nnodes = 0;
}

static int name_cmp(const void *a, const void *b)
{
	const struct mk_node *x = *(struct mk_node *const *)a, *y = *(struct mk_node *const *)b;
	return sqk_name_cmp(x->name, x->name_len, y->name, y->name_len);
}

/* Numbers inodes: root 1, then each directory's entries consecutively (small run deltas). */
static int number_inodes(struct mk_ctx *c)
{
	uint32_t next = 1;
	c->root->ino = next++;
	for (size_t i = 0; i < c->nnodes; i++) {
		struct mk_node *d = c->nodes[i];
		if (!S_ISDIR(d->mode))
			continue;
		for (size_t j = 0; j < d->nchildren; j++) {
			struct mk_node *ch = d->children[j];
			struct mk_node *t = ch->link ? ch->link : ch;
			if (S_ISDIR(t->mode))
				d->nsubdirs++;
			if (!t->ino)
				t->ino = next++;
		}
	}
	c->inode_count = next - 1;
	if (c->inode_count != c->nnodes)
		return mk_fail(c, SQK_ECORRUPT, "internal error: %u inodes numbered, %zu expected",
			       c->inode_count, c->nnodes);
	return 0;
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

int mk_tree_finish(struct mk_ctx *c)
{
	mk_report_clamped(c);
	tree_state_free(c->tree);
	if (c->tree->ndead)
		drop_dead(c);
	for (size_t i = 0; i < c->nnodes; i++) {
		struct mk_node *d = c->nodes[i];
		if (S_ISDIR(d->mode) && d->nchildren > 1)
			qsort(d->children, d->nchildren, sizeof(*d->children), name_cmp);
	}
	if (c->root->newest_mtime)
		c->root->mtime = c->opt->set_mtime >= 0 ? (uint32_t)c->opt->set_mtime :
							   c->newest_mtime;
	for (size_t i = 0; i < c->nnodes; i++)
		mk_count_kind(c, c->nodes[i]->mode, c->nodes[i]->file);
	return number_inodes(c);
}

/* ---- the tables of the tree in memory ---- */

static struct mk_node *target_of(struct mk_node *n)
{
	return n->link ? n->link : n;
}

static void node_inode(const struct mk_node *n, struct mk_inode *a)
{
	*a = (struct mk_inode){ .mode = n->mode, .uid_idx = n->uid_idx, .gid_idx = n->gid_idx,
				.mtime = n->mtime, .ino = n->ino, .nlink = n->nlink,
				.xattr_idx = n->xattr_idx, .rdev = n->rdev, .target = n->target,
				.target_len = n->target_len, .file = n->file };
}

/* d's listing and inode, once its entries' inodes are written. Not inlined: its buffers stay
 * out of the frames of the recursion. */
static __attribute__((noinline)) int emit_listing(struct mk_tables *t, struct mk_node *d)
{
	struct mk_inode a;
	struct mk_dent *v = malloc((d->nchildren + 1) * sizeof(*v));
	if (!v)
		return mk_fail(t->c, SQK_ENOMEM, "out of memory");
	for (size_t i = 0; i < d->nchildren; i++) {
		const struct mk_node *ch = d->children[i], *tg = target_of(d->children[i]);
		v[i] = (struct mk_dent){ .name = ch->name, .name_len = ch->name_len, .ino = tg->ino,
					 .mode = tg->mode, .ref = tg->inode_ref };
	}
	char where[1024];
	mk_node_path(d, where, sizeof(where));
	node_inode(d, &a);
	int err = mk_tables_dir(t, &a, v, d->nchildren, d->nsubdirs,
				d->parent ? d->parent->ino : t->c->inode_count + 1, where,
				&d->inode_ref);
	d->emitted = true;
	free(v);
	return err;
}

static __attribute__((noinline)) int emit_leaf(struct mk_tables *t, struct mk_node *tg)
{
	struct mk_inode a;
	node_inode(tg, &a);
	tg->emitted = true;
	return mk_tables_inode(t, &a, &tg->inode_ref);
}

/* Post-order: sub-directories, then the other entries' inodes, then the listing and inode.
 * The recursion is as deep as the tree, which the builder bounds by SQK_DEPTH_MAX
 * (common/depth.h: mk_check_depth refuses a deeper entry); a frame holds a few words. */
static int emit_dir(struct mk_tables *t, struct mk_node *d)
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
			err = emit_leaf(t, tg);
	}
	return err ? err : emit_listing(t, d);
}

static int tree_emit(struct mk_ctx *c, struct mk_tables *t, uint64_t *root_ref)
{
	int err = emit_dir(t, c->root);
	*root_ref = c->root->inode_ref;
	return err;
}

const struct mk_tree_ops mk_tree_mem_ops = {
	.add = mk_tree_add, .finish = mk_tree_finish, .emit = tree_emit, .free = mk_tree_free,
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
