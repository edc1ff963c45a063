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

/* What the tree phase's callback returns to end the walk (its message printed): no SQK_E*. */
#define X_STOP (-10000)

/* The directories of the walk being extracted into, by depth: the entry and an fd on it
 * (owned; DEST's a dup of destfd). */
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

/* Closes the fds of the levels from depth n on. */
static void x_pop_to(struct x_levels *l, size_t n)
{
	while (l->n > n)
		close(l->lv[--l->n].fd);
}

/* The state of the tree phase: the extraction and its open directories. */
struct x_tree {
	struct extract *x;
	struct x_levels l;
};

/* -i: the entry's name in DEST, as unsquashfs -info prints it. */
static void x_info(const struct extract *x, size_t idx)
{
	const char *p = x->ents[idx].path;

	flockfile(stdout);
	progress_clear(&((struct extract *)x)->pr);
	printf("%s%s%s\n", x->dest, *p ? "/" : "", p);
	funlockfile(stdout);
}

/* Adds and makes selected entry e below the directory of level e->depth - 1; a directory made
 * becomes level e->depth. 0, 1 (not entered: a failure gone past under -ig) or -1. */
static int x_tree_entry(struct x_tree *t, const struct sel_entry *e)
{
	struct extract *x = t->x;
	const struct x_level up = t->l.lv[e->depth - 1];
	ssize_t idx;
	int fd;

	if (!x_name_ok(&e->walk->dirent)) {
		cmd_err(&x->c, x->ents[up.idx].path, SQK_ECORRUPT,
			"bad directory listing, extraction stopped");
		return X_STOP;
	}
	idx = x_add(x, (int32_t)up.idx, e->name, e->ino);
	if (idx < 0) {
		cmd_err(&x->c, x->ents[up.idx].path, SQK_ENOMEM, "out of memory");
		return X_STOP;
	}
	if (x->info)
		x_info(x, (size_t)idx);
	if (x_make(x, (size_t)idx, up.fd, &fd))
		return x_go_on(x) ? 1 : X_STOP;
	x->ents[idx].walked = fd >= 0;
	if (fd >= 0 && x_push(&t->l, (size_t)idx, fd)) {
		close(fd);
		cmd_err(&x->c, x->ents[idx].path, SQK_ENOMEM, "out of memory");
		return X_STOP;
	}
	return fd >= 0 ? 0 : 1;
}

/* The message of a failed step of the walk. */
static void x_walk_err(struct extract *x, const struct x_levels *l,
		       const struct sqk_walk_entry *e, int r)
{
	size_t at = e->depth < l->n ? e->depth : l->n - 1;
	const char *dir = x->ents[l->lv[at].idx].path;
	char b[2 * SQK_DEPTH_SHOWN + 4];

	if (e->event == SQK_WALK_ERR_DEPTH) /* one open directory per level: common/depth.h */
		cmd_err(&x->c, depth_shown(dir, b), SQK_ETOOBIG,
			"directories nested deeper than %u levels (the most sqk walks)",
			SQK_DEPTH_MAX);
	else if (e->event == SQK_WALK_ERR_LIST)
		cmd_err(&x->c, dir, r, "bad directory listing%s",
			x->ignore_errors ? "" : ", extraction stopped");
	else if (e->event == SQK_WALK_ERR_INODE)
		cmd_err(&x->c, x->ents[l->lv[e->depth ? e->depth - 1 : 0].idx].path, r,
			"cannot read the inode of '%s'", e->name);
	else
		cmd_err(&x->c, dir, r, "out of memory");
}

/* sel_walk's callback: each selected entry made, its directory left. */
static int x_tree_cb(void *ctx, const struct sel_entry *e)
{
	struct x_tree *t = ctx;
	struct extract *x = t->x;
	int fd;

	if (x_stopped(x))
		return X_STOP;
	if (e->err) {
		x_walk_err(x, &t->l, e->walk, e->err);
		return x_go_on(x) ? 0 : X_STOP;
	}
	if (e->post) {
		x_pop_to(&t->l, e->depth);
		return 0;
	}
	if (e->depth > 0)
		return x_tree_entry(t, e);
	if (x->info)
		x_info(x, 0);
	fd = dup(x->destfd);
	if (fd < 0 || x_push(&t->l, 0, fd)) {
		cmd_err(&x->c, NULL, 0, "cannot open %s: %s", x->dest, strerror(errno));
		if (fd >= 0)
			close(fd);
		return X_STOP;
	}
	x->ents[0].walked = true;
	return 0;
}

int x_extract_tree(struct extract *x)
{
	struct x_tree t = { .x = x };
	int r = sel_walk(&x->sel, x->c.img, x_tree_cb, &t);

	if (r && r != X_STOP) /* the walk's own failure (out of memory, the root unreadable) */
		cmd_err(&x->c, "", r, "cannot walk the image");
	x_pop_to(&t.l, 0);
	free(t.l.lv);
	return r ? -1 : 0;
}
