/* SPDX-License-Identifier: BSD-2-Clause */
/* sqk extract, phase 1: the tree structure (directories, symlinks, devices, fifos, sockets)
 * made by one thread through libsqk's walk, and the PATH arguments' subtrees with their
 * parents. */
#include "extract.h"
#include "common/depth.h"
#include "common/grow.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

/* Appends an entry named name under parent; returns its index or -1. */
ssize_t x_add(struct extract *x, int32_t parent, const char *name,
	      const struct sqk_inode *ino)
{
	const char *pp = parent >= 0 ? x->ents[parent].path : "";
	size_t lp = strlen(pp), ln = strlen(name);
	struct xent *e;
	char *path;

	if (mem_grow(&x->ents, &x->capents, x->nents + 1, sizeof(*x->ents), 0))
		return -1;
	path = malloc(lp + ln + 2);
	if (!path)
		return -1;
	if (lp) {
		memcpy(path, pp, lp);
		path[lp++] = '/';
	}
	memcpy(path + lp, name, ln + 1);
	e = &x->ents[x->nents];
	memset(e, 0, sizeof(*e));
	e->path = path;
	e->name = path + lp;
	e->parent = parent;
	e->link_to = -1;
	e->depth = parent >= 0 ? x->ents[parent].depth + 1 : 0;
	e->ino = *ino;
	progress_item(&x->pr);
	return (ssize_t)x->nents++;
}

static int x_add_job(struct extract *x, size_t idx)
{
	if (mem_grow(&x->jobs, &x->capjobs, x->njobs + 1, sizeof(*x->jobs), 0))
		return -1;
	x->jobs[x->njobs++] = idx;
	return 0;
}

/* Makes room for name in dfd under --force (a directory is kept when keep_dir). */
static int x_clear(struct extract *x, size_t idx, int dfd, bool keep_dir)
{
	struct stat st;

	if (!x->force)
		return 0;
	if (fstatat(dfd, x->ents[idx].name, &st, AT_SYMLINK_NOFOLLOW))
		return 0;
	if (keep_dir && S_ISDIR(st.st_mode))
		return 0;
	if (x_remove_at(dfd, x->ents[idx].name)) {
		x_err(x, idx, errno, "cannot replace the existing entry");
		return -1;
	}
	return 0;
}

/* Creates directory entry idx in dfd and returns an fd on it (or -1, message printed). It is
 * 0700 until phase 4 gives it its mode (also after a failure): a mode without write permission
 * would stop its entries being made. A directory kept under --force is made 0700 as well. */
static int x_mkdir(struct extract *x, size_t idx, int dfd)
{
	const char *name = x->ents[idx].name;
	bool reused = false;
	int fd;

	if (x_clear(x, idx, dfd, true))
		return -1;
	if (mkdirat(dfd, name, 0700)) {
		if (errno != EEXIST || !x->force) {
			x_err(x, idx, errno, "cannot create directory");
			return -1;
		}
		reused = true;
	}
	fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		x_err(x, idx, errno, "cannot open the new directory");
		return -1;
	}
	if (reused && fchmod(fd, 0700)) {
		x_err(x, idx, errno, "cannot make the existing directory writable");
		close(fd);
		return -1;
	}
	x->ents[idx].made = true;
	x->made_dirs++;
	return fd;
}

/* Symlinks, devices, fifos, sockets: created and given their metadata now. */
static int x_special(struct extract *x, size_t idx, int dfd)
{
	const struct xent *e = &x->ents[idx];
	char target[SQK_SYMLINK_MAX + 1];
	dev_t dev = 0;
	size_t len;
	int r;

	if (x_clear(x, idx, dfd, false))
		return -1;
	if (cmd_is(&e->ino, SQK_T_SYMLINK)) {
		r = sqk_readlink(x->c.img, &e->ino, target, sizeof(target), &len);
		if (!r && len >= sizeof(target))
			r = SQK_ETOOBIG;
		if (r) {
			cmd_err(&x->c, e->path, r, "cannot read symlink");
			return -1;
		}
		r = symlinkat(target, dfd, e->name);
	} else {
		if (cmd_is(&e->ino, SQK_T_BLKDEV) || cmd_is(&e->ino, SQK_T_CHRDEV))
			dev = makedev(sqk_rdev_major(e->ino.rdev), sqk_rdev_minor(e->ino.rdev));
		r = mknodat(dfd, e->name, (e->ino.mode & S_IFMT) | 0600, dev);
		if (r && errno == EPERM && !x->root && dev) {
			x_err(x, idx, 0, "warning: device skipped (not root)");
			return 0;
		}
	}
	if (r) {
		x_err(x, idx, errno, "cannot create");
		return -1;
	}
	x->made_other++;
	return x_meta(x, idx, -1, dfd);
}

/* A second name of an inode: linked now, or after the workers for regular files. */
static int x_hardlink(struct extract *x, size_t idx, int dfd)
{
	struct xent *e = &x->ents[idx];
	size_t first = (size_t)x->first[e->ino.ino];
	int sfd, r;

	if (cmd_is(&e->ino, SQK_T_DIR)) {
		cmd_err(&x->c, e->path, SQK_ECORRUPT, "directory inode %u has a second name "
			    "(first: /%s)", e->ino.ino, x->ents[first].path);
		return -1;
	}
	e->link_to = (int32_t)first;
	if (cmd_is(&e->ino, SQK_T_FILE)) { /* linked in phase 3, once the file is whole */
		x_mark_replace(x, idx, dfd);
		return 0;
	}
	if (x_clear(x, idx, dfd, false))
		return -1;
	sfd = x_open_dir(x, (size_t)x->ents[first].parent);
	r = sfd < 0 ? -1 : linkat(sfd, x->ents[first].name, dfd, e->name, 0);
	if (r)
		x_err(x, idx, errno, "cannot create hard link");
	else
		x->made_other++;
	if (sfd >= 0)
		close(sfd);
	return r;
}

/* Makes entry idx (just added) in directory dfd; for a directory made, *fd is an fd on it
 * (else -1). */
static int x_make(struct extract *x, size_t idx, int dfd, int *fd)
{
	const struct sqk_inode *ino = &x->ents[idx].ino;
	uint32_t n = ino->ino;

	*fd = -1;
	if (n == 0 || n > sqk_image_super(x->c.img)->inode_count) {
		cmd_err(&x->c, x->ents[idx].path, SQK_ECORRUPT, "inode number %u out of range",
			    n);
		return -1;
	}
	if (x->first[n] >= 0)
		return x_hardlink(x, idx, dfd);
	x->first[n] = (int32_t)idx;
	if (cmd_is(ino, SQK_T_FILE)) {
		/* an entry in the way stays until the file replacing it is whole */
		x_mark_replace(x, idx, dfd);
		return x_add_job(x, idx);
	}
	if (!cmd_is(ino, SQK_T_DIR))
		return x_special(x, idx, dfd);
	*fd = x_mkdir(x, idx, dfd);
	return *fd < 0 ? -1 : 0;
}

/* The iterator validates names; this repeats the checks that keep writes inside DEST. */
static bool x_name_ok(const struct sqk_dirent *e)
{
	return e->name_len && e->name_len == strlen(e->name) && !strchr(e->name, '/') &&
	       strcmp(e->name, ".") && strcmp(e->name, "..");
}

/* The directories of the walk being extracted into, by depth below its start: the entry and an
 * fd on it (the start's borrowed, the others owned). */
struct x_levels {
	struct x_level {
		size_t idx;
		int fd;
	} *lv;
	size_t n, cap;
};

static int x_push(struct x_levels *l, size_t idx, int fd)
{
	if (mem_grow(&l->lv, &l->cap, l->n + 1, sizeof(*l->lv), 0))
		return -1;
	l->lv[l->n++] = (struct x_level){ idx, fd };
	return 0;
}

/* Closes the fds of the levels from depth n on (the start's is the caller's). */
static void x_pop_to(struct x_levels *l, size_t n)
{
	while (l->n > n) {
		l->n--;
		if (l->n > 0)
			close(l->lv[l->n].fd);
	}
}

/* Adds and makes entry e of the walk, below the directory of level e->depth - 1; a directory
 * made becomes level e->depth. */
static int x_walk_entry(struct extract *x, struct x_levels *l, const struct sqk_walk_entry *e)
{
	const struct x_level up = l->lv[e->depth - 1];
	ssize_t idx;
	int fd;

	if (!x_name_ok(&e->dirent)) {
		cmd_err(&x->c, x->ents[up.idx].path, SQK_ECORRUPT,
			    "bad directory listing, extraction stopped");
		return -1;
	}
	idx = x_add(x, (int32_t)up.idx, e->name, &e->inode);
	if (idx < 0) {
		cmd_err(&x->c, x->ents[up.idx].path, SQK_ENOMEM, "out of memory");
		return -1;
	}
	if (x_make(x, (size_t)idx, up.fd, &fd))
		return -1;
	x->ents[idx].walked = fd >= 0;
	if (fd >= 0 && x_push(l, (size_t)idx, fd)) {
		close(fd);
		cmd_err(&x->c, x->ents[idx].path, SQK_ENOMEM, "out of memory");
		return -1;
	}
	return 0;
}

/* The message of a failed step of the walk. */
static void x_walk_err(struct extract *x, const struct x_levels *l,
		       const struct sqk_walk_entry *e, int r)
{
	const char *dir = x->ents[l->lv[e->depth < l->n ? e->depth : l->n - 1].idx].path;
	char b[2 * SQK_DEPTH_SHOWN + 4];

	if (e->event == SQK_WALK_ERR_DEPTH) /* one open directory per level: common/depth.h */
		cmd_err(&x->c, depth_shown(dir, b), SQK_ETOOBIG,
			    "directories nested deeper than %u levels (the most sqk walks)",
			    SQK_DEPTH_MAX);
	else if (e->event == SQK_WALK_ERR_LIST)
		cmd_err(&x->c, dir, r, "bad directory listing, extraction stopped");
	else if (e->event == SQK_WALK_ERR_INODE)
		cmd_err(&x->c, x->ents[l->lv[e->depth - 1].idx].path, r,
			    "cannot read the inode of '%s'", e->name);
	else
		cmd_err(&x->c, dir, r, "out of memory");
}

/* Extracts the contents of directory entry didx, open as dfd (borrowed). */
static int x_walk(struct extract *x, size_t didx, int dfd)
{
	uint32_t depth = x->ents[didx].depth;
	struct x_levels l = { 0 };
	struct sqk_walk_entry e;
	struct sqk_walk *w;
	int r;

	x->ents[didx].walked = true;
	r = sqk_walk_open(x->c.img, &x->ents[didx].ino, SQK_WALK_LEAVE,
			  depth < SQK_DEPTH_MAX ? SQK_DEPTH_MAX - depth : 0, &w);
	if (r == 0)
		r = x_push(&l, didx, dfd) ? SQK_ENOMEM : 0;
	if (r) {
		cmd_err(&x->c, x->ents[didx].path, r, "out of memory");
		sqk_walk_close(w);
		free(l.lv);
		return -1;
	}
	while ((r = sqk_walk_next(w, &e)) == 1) {
		if (e.event == SQK_WALK_POST)
			x_pop_to(&l, e.depth);
		else if (e.depth > 0 && x_walk_entry(x, &l, &e))
			break;
	}
	if (r < 0)
		x_walk_err(x, &l, &e, r);
	x_pop_to(&l, 0);
	free(l.lv);
	sqk_walk_close(w);
	return r ? -1 : 0;
}

/* Creates entry idx (just added) in directory dfd, and the contents of a directory. */
static int x_create(struct extract *x, size_t idx, int dfd)
{
	int fd, r = x_make(x, idx, dfd, &fd);

	if (r || fd < 0)
		return r;
	r = x_walk(x, idx, fd);
	close(fd);
	return r;
}

/* Index of the entry called name under parent, or -1. */
static ssize_t x_find(const struct extract *x, size_t parent, const char *name)
{
	size_t i;

	for (i = parent + 1; i < x->nents; i++)
		if (x->ents[i].parent == (int32_t)parent && !strcmp(x->ents[i].name, name))
			return (ssize_t)i;
	return -1;
}

/* Creates the PATH component name of an image directory under entry cur; returns its index. */
static ssize_t x_component(struct extract *x, size_t cur, const char *name, bool last)
{
	const struct xent *p = &x->ents[cur];
	struct sqk_inode ino;
	ssize_t idx;
	int dfd, fd = -1, r;

	r = sqk_lookup(x->c.img, &p->ino, name, strlen(name), &ino);
	if (r || (!last && !cmd_is(&ino, SQK_T_DIR))) {
		char *where = malloc(strlen(p->path) + strlen(name) + 2);

		if (where)
			sprintf(where, "%s%s%s", p->path, *p->path ? "/" : "", name);
		cmd_err(&x->c, where ? where : name, r, "%s",
			    r ? "cannot look up" : "not a directory");
		free(where);
		return -1;
	}
	idx = x_add(x, (int32_t)cur, name, &ino);
	dfd = idx < 0 ? -1 : x_open_dir(x, cur);
	if (dfd < 0) {
		x_err(x, cur, idx < 0 ? ENOMEM : errno, "cannot open directory");
		return -1;
	}
	if (last) {
		r = x_create(x, (size_t)idx, dfd);
	} else if (ino.ino == 0 || ino.ino > sqk_image_super(x->c.img)->inode_count) {
		cmd_err(&x->c, x->ents[idx].path, SQK_ECORRUPT, "inode number %u out of range",
			    ino.ino);
		r = -1;
	} else {
		x->first[ino.ino] = (int32_t)idx;
		fd = x_mkdir(x, (size_t)idx, dfd);
		r = fd < 0 ? -1 : 0;
	}
	if (fd >= 0)
		close(fd);
	close(dfd);
	return r ? -1 : idx;
}

/* Extracts the subtree PATH (with its parents); a subtree already extracted is skipped. */
int x_extract_path(struct extract *x, const char *path)
{
	char *copy = strdup(path), *save = NULL, *comp, *next;
	ssize_t cur = 0, found;
	int r = 0, fd;

	if (!copy)
		return -1;
	comp = strtok_r(copy, "/", &save);
	if (!comp && !x->ents[0].walked) {
		fd = dup(x->destfd);
		r = fd < 0 ? -1 : x_walk(x, 0, fd);
		if (fd >= 0)
			close(fd);
	}
	while (comp && !r) {
		next = strtok_r(NULL, "/", &save);
		found = x_find(x, (size_t)cur, comp);
		if (found >= 0 && (!next || x->ents[cur].walked))
			break;  /* extracted already, by this PATH's parent or an equal PATH */
		cur = found >= 0 ? found : x_component(x, (size_t)cur, comp, !next);
		r = cur < 0 ? -1 : 0;
		comp = next;
	}
	free(copy);
	return r;
}
