/* Walks the sources into an in-memory tree: stats every entry once, sorts each directory by
 * name (unsigned bytes), links hard-link groups, reads xattrs, then numbers the inodes. */
#include <dirent.h>
#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "common/error.h"
#include "common/format.h"
#include "mk.h"

/* Open-addressing map from (st_dev, st_ino) to the canonical node of a hard-link group. */
struct link_map {
	struct mk_node **slots;
	size_t cap, used;
};

static size_t link_hash(dev_t d, ino_t i)
{
	uint64_t h = ((uint64_t)d * 0x9E3779B97F4A7C15ull) ^ ((uint64_t)i * 0xC2B2AE3D27D4EB4Full);
	return (size_t)(h ^ (h >> 29));
}

static int link_grow(struct link_map *m)
{
	size_t ncap = m->cap ? m->cap * 2 : 256;
	struct mk_node **ns = calloc(ncap, sizeof(*ns));
	if (!ns)
		return SQK_ENOMEM;
	for (size_t i = 0; i < m->cap; i++) {
		struct mk_node *n = m->slots[i];
		if (!n)
			continue;
		size_t j = link_hash(n->st_dev, n->st_ino) & (ncap - 1);
		while (ns[j])
			j = (j + 1) & (ncap - 1);
		ns[j] = n;
	}
	free(m->slots);
	m->slots = ns;
	m->cap = ncap;
	return 0;
}

/* Returns the canonical node for n's (dev, ino), inserting n if it is the first name. */
static int link_find(struct link_map *m, struct mk_node *n, struct mk_node **canon)
{
	if ((m->used + 1) * 2 > m->cap) {
		int err = link_grow(m);
		if (err)
			return err;
	}
	size_t j = link_hash(n->st_dev, n->st_ino) & (m->cap - 1);
	while (m->slots[j]) {
		struct mk_node *o = m->slots[j];
		if (o->st_dev == n->st_dev && o->st_ino == n->st_ino) {
			*canon = o;
			return 0;
		}
		j = (j + 1) & (m->cap - 1);
	}
	m->slots[j] = n;
	m->used++;
	*canon = n;
	return 0;
}

struct walk {
	struct mk_ctx *c;
	struct link_map links;
};

static int push_node(struct mk_ctx *c, struct mk_node *n)
{
	if (c->nnodes == c->nodes_cap) {
		size_t ncap = c->nodes_cap ? c->nodes_cap * 2 : 1024;
		struct mk_node **nn = realloc(c->nodes, ncap * sizeof(*nn));
		if (!nn)
			return mk_fail(c, SQK_ENOMEM, "out of memory");
		c->nodes = nn;
		c->nodes_cap = ncap;
	}
	if (c->nnodes >= UINT32_MAX - 2)
		return mk_fail(c, SQK_ETOOBIG, "too many inodes");
	n->order = (uint32_t)c->nnodes;
	c->nodes[c->nnodes++] = n;
	return 0;
}

static bool excluded(const struct mk_options *o, const char *rel)
{
	for (int i = 0; i < o->nexcludes; i++)
		if (fnmatch(o->excludes[i], rel, 0) == 0)
			return true;
	return false;
}

static uint32_t clamp_time(const struct mk_options *o, int64_t t)
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

static int set_owner(struct mk_ctx *c, struct mk_node *n, uid_t uid, gid_t gid)
{
	const struct mk_options *o = c->opt;
	n->uid = o->force_uid >= 0 ? (uint32_t)o->force_uid : (uint32_t)uid;
	n->gid = o->force_gid >= 0 ? (uint32_t)o->force_gid : (uint32_t)gid;
	int err = mk_ids_index(c, n->uid, &n->uid_idx);
	return err ? err : mk_ids_index(c, n->gid, &n->gid_idx);
}

static int read_symlink(struct mk_ctx *c, struct mk_node *n, const struct stat *st)
{
	size_t cap = (size_t)st->st_size + 1;
	if (cap > SQK_SYMLINK_MAX + 1)
		return mk_fail(c, SQK_ETOOBIG, "symlink '%s': target longer than %u bytes", n->path,
			       SQK_SYMLINK_MAX);
	n->target = malloc(cap + 1);
	if (!n->target)
		return mk_fail(c, SQK_ENOMEM, "out of memory");
	ssize_t len = readlink(n->path, n->target, cap);
	if (len < 0)
		return mk_fail(c, sqk_from_errno(errno), "cannot read symlink '%s': %s", n->path,
			       strerror(errno));
	if ((size_t)len >= cap)
		return mk_fail(c, SQK_ECHANGED, "symlink '%s' changed while being read", n->path);
	n->target[len] = 0;
	n->target_len = (size_t)len;
	return 0;
}

/* Fills n from st: the attributes every canonical node carries. */
static int fill_node(struct walk *w, struct mk_node *n, const struct stat *st)
{
	struct mk_ctx *c = w->c;
	n->mode = st->st_mode;
	n->st_dev = st->st_dev;
	n->st_ino = st->st_ino;
	n->mtime = clamp_time(c->opt, st->st_mtim.tv_sec);
	if (n->mtime > c->newest_mtime)
		c->newest_mtime = n->mtime;
	n->nlink = 1;
	n->xattr_idx = SQK_NONE32;
	int err = set_owner(c, n, st->st_uid, st->st_gid);
	if (err)
		return err;
	if (S_ISCHR(st->st_mode) || S_ISBLK(st->st_mode)) {
		unsigned maj = major(st->st_rdev), min = minor(st->st_rdev);
		if (maj > 0xFFF || min > 0xFFFFF)
			return mk_fail(c, SQK_ETOOBIG, "device '%s': number %u:%u not storable",
				       n->path, maj, min);
		n->rdev = sqk_rdev_encode(maj, min);
	} else if (S_ISLNK(st->st_mode)) {
		err = read_symlink(c, n, st);
	} else if (S_ISREG(st->st_mode)) {
		n->size = (uint64_t)st->st_size;
		n->file = calloc(1, sizeof(*n->file));
		if (!n->file)
			return mk_fail(c, SQK_ENOMEM, "out of memory");
		n->file->size = n->size;
		n->file->frag_index = SQK_NONE32;
		n->file->maybe_sparse = (uint64_t)st->st_blocks * 512 < n->size;
	} else if (!S_ISDIR(st->st_mode) && !S_ISFIFO(st->st_mode) && !S_ISSOCK(st->st_mode)) {
		return mk_fail(c, SQK_EUNSUPPORTED, "'%s': unsupported file type", n->path);
	}
	if (!err && !c->opt->no_xattrs)
		err = mk_xattrs_read(c, n->path, &n->xattr_idx);
	return err;
}

static int walk_entry(struct walk *w, struct mk_node *n, const char *rel);

static int name_cmp(const void *a, const void *b)
{
	const struct mk_node *x = *(struct mk_node *const *)a, *y = *(struct mk_node *const *)b;
	return sqk_name_cmp(x->name, x->name_len, y->name, y->name_len);
}

static int add_child(struct mk_ctx *c, struct mk_node *dir, struct mk_node *child, size_t *cap)
{
	if (dir->nchildren == *cap) {
		size_t ncap = *cap ? *cap * 2 : 16;
		struct mk_node **nc = realloc(dir->children, ncap * sizeof(*nc));
		if (!nc)
			return mk_fail(c, SQK_ENOMEM, "out of memory");
		dir->children = nc;
		*cap = ncap;
	}
	child->parent = dir;
	dir->children[dir->nchildren++] = child;
	return 0;
}

static struct mk_node *new_node(const char *name, const char *path)
{
	struct mk_node *n = calloc(1, sizeof(*n));
	if (!n)
		return NULL;
	n->name = strdup(name);
	n->name_len = strlen(name);
	n->path = path ? strdup(path) : NULL;
	if (!n->name || (path && !n->path)) {
		free(n->name);
		free(n->path);
		free(n);
		return NULL;
	}
	return n;
}

static char *join(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	char *s = malloc(la + lb + 2);
	if (!s)
		return NULL;
	memcpy(s, a, la);
	size_t p = la;
	if (la && a[la - 1] != '/')
		s[p++] = '/';
	memcpy(s + p, b, lb + 1);
	return s;
}

/* Reads dir's entries (not . and ..), skipping excluded ones, into unsorted children. */
static int read_dir(struct walk *w, struct mk_node *dir, const char *rel)
{
	struct mk_ctx *c = w->c;
	DIR *d = opendir(dir->path);
	size_t cap = 0;
	int err = 0;
	if (!d)
		return mk_fail(c, sqk_from_errno(errno), "cannot open directory '%s': %s",
			       dir->path, strerror(errno));
	for (;;) {
		errno = 0;
		struct dirent *de = readdir(d);
		if (!de) {
			if (errno)
				err = mk_fail(c, sqk_from_errno(errno), "cannot read directory '%s': %s",
					      dir->path, strerror(errno));
			break;
		}
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		char *crel = *rel ? join(rel, de->d_name) : strdup(de->d_name);
		char *cpath = join(dir->path, de->d_name);
		struct mk_node *ch = NULL;
		if (crel && cpath && !excluded(c->opt, crel))
			ch = new_node(de->d_name, cpath);
		else if (!crel || !cpath)
			err = mk_fail(c, SQK_ENOMEM, "out of memory");
		free(crel);
		free(cpath);
		if (ch)
			err = add_child(c, dir, ch, &cap);
		if (err)
			break;
	}
	closedir(d);
	return err;
}

static void node_free(struct mk_node *n);

/* Walks dir's children in name order; a child that is the image itself is dropped. */
static int walk_dir(struct walk *w, struct mk_node *dir, const char *rel)
{
	int err = read_dir(w, dir, rel);
	if (err)
		return err;
	if (dir->nchildren)
		qsort(dir->children, dir->nchildren, sizeof(*dir->children), name_cmp);
	size_t k = 0;
	for (size_t i = 0; i < dir->nchildren; i++) {
		struct mk_node *ch = dir->children[i];
		char *crel = err ? NULL : *rel ? join(rel, ch->name) : strdup(ch->name);
		if (!err && !crel)
			err = mk_fail(w->c, SQK_ENOMEM, "out of memory");
		int r = err ? 0 : walk_entry(w, ch, crel);
		free(crel);
		if (r < 0)
			err = r;
		if (r == 1) {
			node_free(ch);
			continue;
		}
		dir->children[k++] = ch;
	}
	dir->nchildren = k;
	return err;
}

/* Stats n->path and fills n; for directories, recurses. Sets n->link for extra hard links.
 * Returns 1 when n is the image being written (the caller drops it). */
static int walk_entry(struct walk *w, struct mk_node *n, const char *rel)
{
	struct mk_ctx *c = w->c;
	struct stat st;
	if (mk_cancelled(c))
		return mk_fail(c, SQK_EINTR, "interrupted");
	if (lstat(n->path, &st))
		return mk_fail(c, sqk_from_errno(errno), "cannot stat '%s': %s", n->path,
			       strerror(errno));
	n->st_dev = st.st_dev;
	n->st_ino = st.st_ino;
	for (int i = 0; i < c->nskip; i++)
		if (S_ISREG(st.st_mode) && st.st_dev == c->skip_dev[i] && st.st_ino == c->skip_ino[i])
			return 1;
	if (!S_ISDIR(st.st_mode) && st.st_nlink > 1) {
		struct mk_node *canon;
		int err = link_find(&w->links, n, &canon);
		if (err)
			return mk_fail(c, err, "out of memory");
		if (canon != n) {
			n->link = canon;
			canon->nlink++;
			c->st.hardlinks++;
			return 0;
		}
	}
	int err = fill_node(w, n, &st);
	if (!err)
		err = push_node(c, n);
	if (!err && S_ISDIR(st.st_mode))
		err = walk_dir(w, n, rel);
	return err;
}


static void node_free(struct mk_node *n)
{
	if (!n)
		return;
	for (size_t i = 0; i < n->nchildren; i++)
		node_free(n->children[i]);
	free(n->children);
	free(n->name);
	free(n->path);
	free(n->target);
	if (n->file)
		free(n->file->words);
	free(n->file);
	free(n);
}

void mk_tree_free(struct mk_ctx *c)
{
	node_free(c->root);
	c->root = NULL;
	free(c->nodes);
	c->nodes = NULL;
	c->nnodes = 0;
}

static const char *base_name(const char *path, char *buf, size_t cap)
{
	size_t len = strlen(path);
	while (len > 1 && path[len - 1] == '/')
		len--;
	size_t start = len;
	while (start > 0 && path[start - 1] != '/')
		start--;
	size_t n = len - start;
	if (n >= cap)
		n = cap - 1;
	memcpy(buf, path + start, n);
	buf[n] = 0;
	return buf;
}

/* Several sources (or one non-directory): a synthetic root holding each as an entry. */
static int build_multi_root(struct walk *w)
{
	struct mk_ctx *c = w->c;
	const struct mk_options *o = c->opt;
	size_t cap = 0;
	char nm[4096];
	struct mk_node *root = new_node("", NULL);
	if (!root)
		return mk_fail(c, SQK_ENOMEM, "out of memory");
	c->root = root;
	root->mode = S_IFDIR | 0755;
	root->nlink = 1;
	root->xattr_idx = SQK_NONE32;
	int err = set_owner(c, root, getuid(), getgid());
	if (!err)
		err = push_node(c, root);
	for (int i = 0; i < o->nsources && !err; i++) {
		base_name(o->sources[i], nm, sizeof(nm));
		if (!*nm || !strcmp(nm, ".") || !strcmp(nm, "..") || !strcmp(nm, "/"))
			return mk_fail(c, SQK_EINVAL, "source '%s': cannot name a root entry after it",
				       o->sources[i]);
		struct mk_node *ch = new_node(nm, o->sources[i]);
		if (!ch)
			return mk_fail(c, SQK_ENOMEM, "out of memory");
		err = add_child(c, root, ch, &cap);
	}
	if (err)
		return err;
	qsort(root->children, root->nchildren, sizeof(*root->children), name_cmp);
	for (size_t i = 1; i < root->nchildren; i++)
		if (!name_cmp(&root->children[i - 1], &root->children[i]))
			return mk_fail(c, SQK_EINVAL, "sources '%s' and '%s' have the same name",
				       root->children[i - 1]->path, root->children[i]->path);
	size_t k = 0;
	for (size_t i = 0; i < root->nchildren; i++) {
		struct mk_node *ch = root->children[i];
		int r = err ? 0 : walk_entry(w, ch, ch->name);
		if (r < 0)
			err = r;
		if (r == 1) {
			node_free(ch);
			continue;
		}
		root->children[k++] = ch;
	}
	root->nchildren = k;
	root->mtime = o->set_mtime >= 0 ? (uint32_t)o->set_mtime : c->newest_mtime;
	return err;
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

int mk_tree_build(struct mk_ctx *c)
{
	struct walk w = { .c = c };
	const struct mk_options *o = c->opt;
	struct stat st;
	int err;
	if (o->nsources == 1 && stat(o->sources[0], &st) == 0 && S_ISDIR(st.st_mode)) {
		/* A symlink to a directory is followed, as its contents are what was asked for. */
		struct stat lst;
		bool via_link = lstat(o->sources[0], &lst) == 0 && S_ISLNK(lst.st_mode);
		char *path = via_link ? join(o->sources[0], ".") : NULL;
		c->root = new_node("", path ? path : o->sources[0]);
		free(path);
		if (!c->root)
			return mk_fail(c, SQK_ENOMEM, "out of memory");
		err = walk_entry(&w, c->root, "");
		if (err == 1)
			err = mk_fail(c, SQK_EINVAL, "source '%s' is the image", o->sources[0]);
	} else {
		for (int i = 0; i < o->nsources; i++)
			if (lstat(o->sources[i], &st))
				return mk_fail(c, sqk_from_errno(errno), "cannot stat source '%s': %s",
					       o->sources[i], strerror(errno));
		err = build_multi_root(&w);
	}
	free(w.links.slots);
	if (!err)
		err = number_inodes(c);
	return err;
}
