/* SPDX-License-Identifier: BSD-2-Clause */
/* sqk extract: restores an image (or some subtrees) into DEST in four phases: the tree
 * structure (directories, symlinks, devices, fifos, sockets) by one thread, through libsqk's
 * walk; regular files'
 * contents and metadata by N workers; deferred hard links to regular files; directory metadata,
 * deepest first. Everything is created relative to directory fds without following symlinks. */
#include "extract.h"
#include "common/depth.h"
#include "common/grow.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

static void x_usage(FILE *f)
{
	fprintf(f,
		"usage: sqk extract [-j N] [--force] [--no-verify] [--offset N] [OPTIONS] IMAGE|URL DEST [PATH...]\n"
		"\n"
		"Extracts a SquashFS image into the directory DEST (created if missing), or only the\n"
		"subtrees PATH... (with their parent directories). Restores contents, permission bits\n"
		"(incl. setuid, setgid, sticky), owners (when run as root), mtimes, xattrs (trusted.\n"
		"and security. only as root), hard links, symlinks, devices, fifos and sockets; all-zero\n"
		"blocks are written as holes. The image root's attributes are applied to DEST.\n"
		"\n"
		"Safety: names that are empty, '.', '..', contain '/', or are duplicated or unsorted in\n"
		"a directory are rejected as corruption; nothing is written through a symlink or outside\n"
		"DEST. A DEST that exists and is not empty is refused unless --force.\n"
		"A PATH that is not in the image is an error before anything is made (DEST too).\n"
		"After a failure, the directories made still get their modes and mtimes, and a\n"
		"message says how many of the files were extracted.\n"
		"\n"
		"  -j, --threads N   threads writing file contents (default: online CPUs)\n"
		"  -f, --force       extract into a non-empty DEST, replacing entries in the way\n"
		"                    (a symlink in DEST is replaced, never followed)\n"
		"      --offset N    the image starts N bytes into the file (mksquashfs -offset)\n"
		"      --no-progress no progress line (on a terminal's stderr: files and bytes done,\n"
		"                    the rate, the time left; a summary line at the end)\n"
		SQK_CMD_REMOTE_HELP
		"  -h, --help        this text\n"
		"\n"
		"Exit status: 0 ok, 1 error (corrupt image, I/O, DEST not empty, cannot create or set\n"
		"attributes), 2 usage.\n");
}

/* Appends an entry named name under parent; returns its index or -1. */
static ssize_t x_add(struct sqk_extract *x, int32_t parent, const char *name,
		     const struct sqk_inode *ino)
{
	const char *pp = parent >= 0 ? x->ents[parent].path : "";
	size_t lp = strlen(pp), ln = strlen(name);
	struct sqk_xent *e;
	char *path;

	if (sqk_grow(&x->ents, &x->capents, x->nents + 1, sizeof(*x->ents), 0))
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
	sqk_progress_item(&x->pr);
	return (ssize_t)x->nents++;
}

static int x_add_job(struct sqk_extract *x, size_t idx)
{
	if (sqk_grow(&x->jobs, &x->capjobs, x->njobs + 1, sizeof(*x->jobs), 0))
		return -1;
	x->jobs[x->njobs++] = idx;
	return 0;
}

/* Makes room for name in dfd under --force (a directory is kept when keep_dir). */
static int x_clear(struct sqk_extract *x, size_t idx, int dfd, bool keep_dir)
{
	struct stat st;

	if (!x->force)
		return 0;
	if (fstatat(dfd, x->ents[idx].name, &st, AT_SYMLINK_NOFOLLOW))
		return 0;
	if (keep_dir && S_ISDIR(st.st_mode))
		return 0;
	if (sqk_x_remove_at(dfd, x->ents[idx].name)) {
		sqk_x_err(x, idx, errno, "cannot replace the existing entry");
		return -1;
	}
	return 0;
}

/* Creates directory entry idx in dfd and returns an fd on it (or -1, message printed). It is
 * 0700 until phase 4 gives it its mode (also after a failure): a mode without write permission
 * would stop its entries being made. A directory kept under --force is made 0700 as well. */
static int x_mkdir(struct sqk_extract *x, size_t idx, int dfd)
{
	const char *name = x->ents[idx].name;
	bool reused = false;
	int fd;

	if (x_clear(x, idx, dfd, true))
		return -1;
	if (mkdirat(dfd, name, 0700)) {
		if (errno != EEXIST || !x->force) {
			sqk_x_err(x, idx, errno, "cannot create directory");
			return -1;
		}
		reused = true;
	}
	fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		sqk_x_err(x, idx, errno, "cannot open the new directory");
		return -1;
	}
	if (reused && fchmod(fd, 0700)) {
		sqk_x_err(x, idx, errno, "cannot make the existing directory writable");
		close(fd);
		return -1;
	}
	x->ents[idx].made = true;
	x->made_dirs++;
	return fd;
}

/* Symlinks, devices, fifos, sockets: created and given their metadata now. */
static int x_special(struct sqk_extract *x, size_t idx, int dfd)
{
	const struct sqk_xent *e = &x->ents[idx];
	char target[SQK_SYMLINK_MAX + 1];
	dev_t dev = 0;
	size_t len;
	int r;

	if (x_clear(x, idx, dfd, false))
		return -1;
	if (sqk_cmd_is(&e->ino, SQK_T_SYMLINK)) {
		r = sqk_readlink(x->c.img, &e->ino, target, sizeof(target), &len);
		if (!r && len >= sizeof(target))
			r = SQK_ETOOBIG;
		if (r) {
			sqk_cmd_err(&x->c, e->path, r, "cannot read symlink");
			return -1;
		}
		r = symlinkat(target, dfd, e->name);
	} else {
		if (sqk_cmd_is(&e->ino, SQK_T_BLKDEV) || sqk_cmd_is(&e->ino, SQK_T_CHRDEV))
			dev = makedev(sqk_rdev_major(e->ino.rdev), sqk_rdev_minor(e->ino.rdev));
		r = mknodat(dfd, e->name, (e->ino.mode & S_IFMT) | 0600, dev);
		if (r && errno == EPERM && !x->root && dev) {
			sqk_x_err(x, idx, 0, "warning: device skipped (not root)");
			return 0;
		}
	}
	if (r) {
		sqk_x_err(x, idx, errno, "cannot create");
		return -1;
	}
	x->made_other++;
	return sqk_x_meta(x, idx, -1, dfd);
}

/* A second name of an inode: linked now, or after the workers for regular files. */
static int x_hardlink(struct sqk_extract *x, size_t idx, int dfd)
{
	struct sqk_xent *e = &x->ents[idx];
	size_t first = (size_t)x->first[e->ino.ino];
	int sfd, r;

	if (sqk_cmd_is(&e->ino, SQK_T_DIR)) {
		sqk_cmd_err(&x->c, e->path, SQK_ECORRUPT, "directory inode %u has a second name "
			    "(first: /%s)", e->ino.ino, x->ents[first].path);
		return -1;
	}
	e->link_to = (int32_t)first;
	if (x_clear(x, idx, dfd, false))
		return -1;
	if (sqk_cmd_is(&e->ino, SQK_T_FILE))
		return 0;
	sfd = sqk_x_open_dir(x, (size_t)x->ents[first].parent);
	r = sfd < 0 ? -1 : linkat(sfd, x->ents[first].name, dfd, e->name, 0);
	if (r)
		sqk_x_err(x, idx, errno, "cannot create hard link");
	else
		x->made_other++;
	if (sfd >= 0)
		close(sfd);
	return r;
}

/* Makes entry idx (just added) in directory dfd; for a directory made, *fd is an fd on it
 * (else -1). */
static int x_make(struct sqk_extract *x, size_t idx, int dfd, int *fd)
{
	const struct sqk_inode *ino = &x->ents[idx].ino;
	uint32_t n = ino->ino;

	*fd = -1;
	if (n == 0 || n > sqk_image_super(x->c.img)->inode_count) {
		sqk_cmd_err(&x->c, x->ents[idx].path, SQK_ECORRUPT, "inode number %u out of range", n);
		return -1;
	}
	if (x->first[n] >= 0)
		return x_hardlink(x, idx, dfd);
	x->first[n] = (int32_t)idx;
	if (sqk_cmd_is(ino, SQK_T_FILE)) {
		if (x_clear(x, idx, dfd, false) || x_add_job(x, idx))
			return -1;
		return 0;
	}
	if (!sqk_cmd_is(ino, SQK_T_DIR))
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
	if (sqk_grow(&l->lv, &l->cap, l->n + 1, sizeof(*l->lv), 0))
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
static int x_walk_entry(struct sqk_extract *x, struct x_levels *l, const struct sqk_walk_entry *e)
{
	const struct x_level up = l->lv[e->depth - 1];
	ssize_t idx;
	int fd;

	if (!x_name_ok(&e->dirent)) {
		sqk_cmd_err(&x->c, x->ents[up.idx].path, SQK_ECORRUPT,
			    "bad directory listing, extraction stopped");
		return -1;
	}
	idx = x_add(x, (int32_t)up.idx, e->name, &e->inode);
	if (idx < 0) {
		sqk_cmd_err(&x->c, x->ents[up.idx].path, SQK_ENOMEM, "out of memory");
		return -1;
	}
	if (x_make(x, (size_t)idx, up.fd, &fd))
		return -1;
	x->ents[idx].walked = fd >= 0;
	if (fd >= 0 && x_push(l, (size_t)idx, fd)) {
		close(fd);
		sqk_cmd_err(&x->c, x->ents[idx].path, SQK_ENOMEM, "out of memory");
		return -1;
	}
	return 0;
}

/* The message of a failed step of the walk. */
static void x_walk_err(struct sqk_extract *x, const struct x_levels *l,
		       const struct sqk_walk_entry *e, int r)
{
	const char *dir = x->ents[l->lv[e->depth < l->n ? e->depth : l->n - 1].idx].path;
	char b[2 * SQK_DEPTH_SHOWN + 4];

	if (e->event == SQK_WALK_ERR_DEPTH) /* one open directory per level: common/depth.h */
		sqk_cmd_err(&x->c, sqk_depth_shown(dir, b), SQK_ETOOBIG,
			    "directories nested deeper than %u levels (the most sqk walks)",
			    SQK_DEPTH_MAX);
	else if (e->event == SQK_WALK_ERR_LIST)
		sqk_cmd_err(&x->c, dir, r, "bad directory listing, extraction stopped");
	else if (e->event == SQK_WALK_ERR_INODE)
		sqk_cmd_err(&x->c, x->ents[l->lv[e->depth - 1].idx].path, r,
			    "cannot read the inode of '%s'", e->name);
	else
		sqk_cmd_err(&x->c, dir, r, "out of memory");
}

/* Extracts the contents of directory entry didx, open as dfd (borrowed). */
static int x_walk(struct sqk_extract *x, size_t didx, int dfd)
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
		sqk_cmd_err(&x->c, x->ents[didx].path, r, "out of memory");
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
static int x_create(struct sqk_extract *x, size_t idx, int dfd)
{
	int fd, r = x_make(x, idx, dfd, &fd);

	if (r || fd < 0)
		return r;
	r = x_walk(x, idx, fd);
	close(fd);
	return r;
}

/* Phase 2 worker: creates each file with O_EXCL|O_NOFOLLOW, writes it, sets its metadata. */
static void *x_worker(void *arg)
{
	struct sqk_extract *x = arg;
	void *buf = malloc(SQK_X_CHUNK);
	int32_t cur = -2;
	int dfd = -1, fd;
	size_t j, idx;
	bool ok;

	if (!buf)
		atomic_store(&x->failed, 1);
	while (buf && !atomic_load(&x->failed) && (j = atomic_fetch_add(&x->next_job, 1)) < x->njobs) {
		idx = x->jobs[j];
		if (x->ents[idx].parent != cur) {
			if (dfd >= 0)
				close(dfd);
			cur = x->ents[idx].parent;
			dfd = sqk_x_open_dir(x, (size_t)cur);
		}
		/* Created with its final permission bits (umask is 0 while extracting); setuid,
		 * setgid and sticky come after chown, which would clear them. */
		fd = dfd < 0 ? -1 : openat(dfd, x->ents[idx].name, O_WRONLY | O_CREAT | O_EXCL |
					   O_NOFOLLOW | O_CLOEXEC, x->ents[idx].ino.mode & 0777);
		if (fd < 0) {
			sqk_x_err(x, idx, errno, "cannot create file");
			atomic_store(&x->failed, 1);
			break;
		}
		ok = !sqk_x_write_file(x, idx, fd, buf) && !sqk_x_meta(x, idx, fd, dfd);
		if (close(fd)) {
			sqk_x_err(x, idx, errno, "close failed");
			ok = false;
		}
		if (!ok) {
			atomic_store(&x->failed, 1);
			break;
		}
		atomic_fetch_add(&x->files_done, 1);
		sqk_progress_add(&x->pr, 1, 0);
	}
	if (dfd >= 0)
		close(dfd);
	free(buf);
	return NULL;
}

static int x_run_workers(struct sqk_extract *x)
{
	unsigned n = x->threads, i, started = 0;
	pthread_t *t;

	if (n > x->njobs)
		n = x->njobs ? (unsigned)x->njobs : 1;
	t = calloc(n, sizeof(*t));
	if (!t)
		return -1;
	for (i = 0; i < n; i++)
		if (pthread_create(&t[i], NULL, x_worker, x) == 0)
			started++;
	if (!started)
		x_worker(x);
	for (i = 0; i < started; i++)
		pthread_join(t[i], NULL);
	free(t);
	return atomic_load(&x->failed) ? -1 : 0;
}

/* Phase 3: the remaining names of hard-linked regular files. */
static int x_link_files(struct sqk_extract *x)
{
	size_t i;
	int s, d, r;

	for (i = 0; i < x->nents; i++) {
		const struct sqk_xent *e = &x->ents[i];
		const struct sqk_xent *f;

		if (e->link_to < 0 || !sqk_cmd_is(&e->ino, SQK_T_FILE))
			continue;
		f = &x->ents[e->link_to];
		s = sqk_x_open_dir(x, (size_t)f->parent);
		d = s < 0 ? -1 : sqk_x_open_dir(x, (size_t)e->parent);
		r = d < 0 ? -1 : linkat(s, f->name, d, e->name, 0);
		if (r)
			sqk_x_err(x, i, errno, "cannot create hard link");
		else
			x->made_other++;
		if (s >= 0)
			close(s);
		if (d >= 0)
			close(d);
		if (r)
			return -1;
	}
	return 0;
}

static int x_cmp_depth(const void *a, const void *b, void *arg)
{
	const struct sqk_extract *x = arg;
	uint32_t da = x->ents[*(const size_t *)a].depth, db = x->ents[*(const size_t *)b].depth;

	return da < db ? 1 : da > db ? -1 : 0;
}

/* Phase 4: directory owners, xattrs, modes and mtimes, deepest first; also after a failure,
 * for the directories made so far, so that none is left 0700. Every directory is tried: one
 * that fails does not leave the others unfinished. */
static int x_dir_meta(struct sqk_extract *x)
{
	size_t *d = malloc((x->nents ? x->nents : 1) * sizeof(*d)), n = 0, i;
	int fd, r = 0;

	if (!d) {
		sqk_cmd_err(&x->c, NULL, SQK_ENOMEM, "cannot set the directories' attributes");
		return -1;
	}
	for (i = 0; i < x->nents; i++)
		if (x->ents[i].made && sqk_cmd_is(&x->ents[i].ino, SQK_T_DIR) &&
		    x->first[x->ents[i].ino.ino] == (int32_t)i)
			d[n++] = i;
	qsort_r(d, n, sizeof(*d), x_cmp_depth, x);
	for (i = 0; i < n; i++) {
		fd = sqk_x_open_dir(x, d[i]);
		if (fd < 0) {
			sqk_x_err(x, d[i], errno, "cannot open directory");
			r = -1;
			continue;
		}
		if (sqk_x_meta(x, d[i], fd, -1))
			r = -1;
		close(fd);
	}
	free(d);
	return r;
}

/* Index of the entry called name under parent, or -1. */
static ssize_t x_find(const struct sqk_extract *x, size_t parent, const char *name)
{
	size_t i;

	for (i = parent + 1; i < x->nents; i++)
		if (x->ents[i].parent == (int32_t)parent && !strcmp(x->ents[i].name, name))
			return (ssize_t)i;
	return -1;
}

/* Creates the PATH component name of an image directory under entry cur; returns its index. */
static ssize_t x_component(struct sqk_extract *x, size_t cur, const char *name, bool last)
{
	const struct sqk_xent *p = &x->ents[cur];
	struct sqk_inode ino;
	ssize_t idx;
	int dfd, fd = -1, r;

	r = sqk_lookup(x->c.img, &p->ino, name, strlen(name), &ino);
	if (r || (!last && !sqk_cmd_is(&ino, SQK_T_DIR))) {
		char *where = malloc(strlen(p->path) + strlen(name) + 2);

		if (where)
			sprintf(where, "%s%s%s", p->path, *p->path ? "/" : "", name);
		sqk_cmd_err(&x->c, where ? where : name, r, "%s",
			    r ? "cannot look up" : "not a directory");
		free(where);
		return -1;
	}
	idx = x_add(x, (int32_t)cur, name, &ino);
	dfd = idx < 0 ? -1 : sqk_x_open_dir(x, cur);
	if (dfd < 0) {
		sqk_x_err(x, cur, idx < 0 ? ENOMEM : errno, "cannot open directory");
		return -1;
	}
	if (last) {
		r = x_create(x, (size_t)idx, dfd);
	} else if (ino.ino == 0 || ino.ino > sqk_image_super(x->c.img)->inode_count) {
		sqk_cmd_err(&x->c, x->ents[idx].path, SQK_ECORRUPT, "inode number %u out of range",
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
static int x_extract_path(struct sqk_extract *x, const char *path)
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

/* Depth of a PATH argument (number of components), to extract parents before children. */
static size_t x_path_depth(const char *p)
{
	size_t n = 0;

	for (; *p; p++)
		if (*p != '/' && (p[1] == '/' || p[1] == '\0'))
			n++;
	return n;
}

static int x_cmp_paths(const void *a, const void *b)
{
	size_t da = x_path_depth(*(char *const *)a), db = x_path_depth(*(char *const *)b);

	return da < db ? -1 : da > db;
}

/* A PATH may not contain . or .. components. */
static bool x_path_ok(const char *p)
{
	const char *s = p;

	for (;;) {
		size_t len = strcspn(s, "/");

		if ((len == 1 && s[0] == '.') || (len == 2 && s[0] == '.' && s[1] == '.'))
			return false;
		if (!s[len])
			return true;
		s += len + 1;
	}
}

/* Creates DEST, or checks that it is empty (unless --force); opens it. */
static int x_open_dest(struct sqk_extract *x)
{
	bool existed = mkdir(x->dest, 0700) != 0;
	struct dirent *de;
	DIR *d;
	int fd;

	if (existed && errno != EEXIST) {
		sqk_cmd_err(&x->c, NULL, 0, "cannot create %s: %s", x->dest, strerror(errno));
		return -1;
	}
	x->destfd = open(x->dest, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (x->destfd < 0) {
		sqk_cmd_err(&x->c, NULL, 0, "cannot open %s: %s", x->dest, strerror(errno));
		return -1;
	}
	if (!existed || x->force)
		return 0;
	fd = dup(x->destfd);
	d = fd < 0 ? NULL : fdopendir(fd);
	if (!d) {
		sqk_cmd_err(&x->c, NULL, 0, "cannot read %s: %s", x->dest, strerror(errno));
		return -1;
	}
	while ((de = readdir(d)) && (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")))
		;
	closedir(d);
	if (de) {
		sqk_cmd_err(&x->c, NULL, 0, "%s exists and is not empty (use --force to extract "
			    "into it)", x->dest);
		return -1;
	}
	return 0;
}

enum { X_OPT_NO_PROGRESS = 0x2100 };

static int x_parse(struct sqk_extract *x, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "threads", required_argument, NULL, 'j' },
		{ "force", no_argument, NULL, 'f' },
		{ "offset", required_argument, NULL, 'o' },
		{ "no-progress", no_argument, NULL, X_OPT_NO_PROGRESS },
		{ "help", no_argument, NULL, 'h' },
		SQK_CMD_REMOTE_LONGOPTS,
		{ NULL, 0, NULL, 0 },
	};
	uint64_t v;
	int ch, i;

	while ((ch = getopt_long(argc, argv, "j:fh", opts, NULL)) != -1) {
		switch (ch) {
		case 'j':
			if (sqk_parse_u64(optarg, 1024, &v) || v == 0) {
				sqk_cmd_usage_err("extract", "bad thread count '%s' (1-1024)", optarg);
				return 2;
			}
			x->threads = (unsigned)v;
			break;
		case 'f': x->force = true; break;
		case X_OPT_NO_PROGRESS: x->progress = false; break;
		case 'o':
			if (sqk_parse_u64(optarg, UINT64_MAX, &x->c.offset)) {
				sqk_cmd_usage_err("extract", "bad --offset '%s'", optarg);
				return 2;
			}
			break;
		case 'h': x_usage(stdout); return 0;
		default:
			ch = sqk_cmd_remote_opt("extract", &x->c.remote, ch, optarg);
			if (ch == 0)
				break;
			if (ch == 1)
				x_usage(stderr);
			return 2;
		}
	}
	if (argc - optind < 2) {
		sqk_cmd_usage_err("extract", "expected IMAGE DEST [PATH...]");
		return 2;
	}
	for (i = optind + 2; i < argc; i++) {
		if (!x_path_ok(argv[i])) {
			sqk_cmd_usage_err("extract", "PATH '%s' has a . or .. component", argv[i]);
			return 2;
		}
	}
	x->c.image = argv[optind];
	x->dest = argv[optind + 1];
	return -1;
}

/* Every PATH must be in the image before anything is made (not even DEST). */
static int x_check_paths(struct sqk_extract *x, char **paths, int npaths)
{
	struct sqk_inode ino;
	int i, r, bad = 0;

	for (i = 0; i < npaths; i++) {
		r = sqk_lookup_path(x->c.img, paths[i], &ino);
		if (r == SQK_ENOENT)
			sqk_cmd_err(&x->c, paths[i], 0, "not in the image; nothing extracted");
		else if (r)
			sqk_cmd_err(&x->c, paths[i], r, "cannot look up; nothing extracted");
		bad |= r != 0;
	}
	return bad ? -1 : 0;
}

/* Phase 2's totals for the progress line: the files its workers write. */
static void x_totals(struct sqk_extract *x)
{
	uint64_t bytes = 0;
	size_t j;

	for (j = 0; j < x->njobs; j++)
		bytes += x->ents[x->jobs[j]].ino.size;
	sqk_progress_totals(&x->pr, x->njobs, bytes);
}

/* After a failure: the directories made get their attributes all the same, and the message
 * says what DEST holds. */
static void x_left(struct sqk_extract *x, bool files_started)
{
	sqk_progress_stop(&x->pr); /* no line drawn under the last messages */
	x_dir_meta(x);
	if (files_started)
		sqk_cmd_err(&x->c, NULL, 0, "extracted %zu of %zu %s into %s before the error; "
			    "%s is incomplete", atomic_load(&x->files_done), x->njobs,
			    sqk_plural(x->njobs, "file", "files"), x->dest, x->dest);
	else
		sqk_cmd_err(&x->c, NULL, 0, "extracted no file into %s before the error (%zu %s, "
			    "%zu other %s made); %s is incomplete", x->dest, x->made_dirs,
			    sqk_plural(x->made_dirs, "directory", "directories"), x->made_other,
			    sqk_plural(x->made_other, "entry", "entries"), x->dest);
}

/* Phases 1 (every PATH, or the whole image) to 4. Returns 0 or -1 (messages printed). */
static int x_phases(struct sqk_extract *x, char **paths, int npaths)
{
	int i;

	qsort(paths, (size_t)npaths, sizeof(*paths), x_cmp_paths);
	for (i = 0; i < (npaths ? npaths : 1); i++) {
		if (x_extract_path(x, npaths ? paths[i] : "")) {
			x_left(x, false);
			return -1;
		}
	}
	x_totals(x);
	if (x_run_workers(x) || x_link_files(x)) {
		x_left(x, true);
		return -1;
	}
	if (x_dir_meta(x)) {
		sqk_cmd_err(&x->c, NULL, 0, "extracted all %zu %s into %s, but not all the "
			    "directories' attributes", x->njobs,
			    sqk_plural(x->njobs, "file", "files"), x->dest);
		return -1;
	}
	return 0;
}

/* The terminal's summary line after a complete extraction. */
static void x_summary(struct sqk_extract *x)
{
	char size[32], rate[32];
	uint64_t bytes = 0;
	double secs = sqk_progress_elapsed(&x->pr);
	size_t j;

	for (j = 0; j < x->njobs; j++)
		bytes += x->ents[x->jobs[j]].ino.size;
	sqk_progress_size(size, sizeof(size), bytes);
	sqk_progress_rate(rate, sizeof(rate), bytes, secs);
	sqk_progress_summary(&x->pr, "%zu %s (%s), %zu %s, %zu other %s extracted into %s in "
			     "%.1f s, %s", x->njobs, sqk_plural(x->njobs, "file", "files"), size,
			     x->made_dirs, sqk_plural(x->made_dirs, "directory", "directories"),
			     x->made_other, sqk_plural(x->made_other, "entry", "entries"), x->dest,
			     secs, rate);
}

/* The tree phase keeps one directory open per level, SQK_DEPTH_MAX of them for an image at the
 * limit of common/depth.h: more than the usual soft limit of 1024 descriptors, so the soft
 * limit is raised (up to the hard one) to twice that. */
static void x_raise_fd_limit(void)
{
	struct rlimit rl;
	rlim_t want = 2 * (rlim_t)SQK_DEPTH_MAX;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
	    rl.rlim_cur < want && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > want ? want : rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

/* Checks the PATHs, opens DEST, runs the phases with the progress line. */
static int x_run(struct sqk_extract *x, char **paths, int npaths)
{
	const struct sqk_super *s = sqk_image_super(x->c.img);
	struct sqk_inode root;
	int r;

	x->block_size = s->block_size;
	x->first = malloc(((size_t)s->inode_count + 1) * sizeof(*x->first));
	if (!x->first)
		return -1;
	memset(x->first, 0xFF, ((size_t)s->inode_count + 1) * sizeof(*x->first));
	r = sqk_image_root(x->c.img, &root);
	if (r) {
		sqk_cmd_err(&x->c, "", r, "cannot read the root inode");
		return -1;
	}
	if (root.ino == 0 || root.ino > s->inode_count || x_add(x, -1, "", &root) != 0)
		return -1;
	x->first[root.ino] = 0;
	x_raise_fd_limit();
	if (x_check_paths(x, paths, npaths) || x_open_dest(x))
		return -1;
	x->ents[0].made = true;
	sqk_progress_stage(&x->pr, "reading the tree", "entries");
	sqk_progress_start(&x->pr, 0);
	r = x_phases(x, paths, npaths);
	sqk_progress_stop(&x->pr);
	if (r == 0)
		x_summary(x);
	return r;
}

int sqk_extract_main(int argc, char **argv)
{
	struct sqk_extract x;
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	size_t i;
	int r;

	memset(&x, 0, sizeof(x));
	x.c.name = "extract";
	x.destfd = -1;
	x.threads = ncpu > 0 ? (unsigned)ncpu : 1;
	x.root = geteuid() == 0;
	x.progress = true;
	/* Modes are restored exactly as stored, not filtered by the caller's umask. */
	umask(0);
	r = x_parse(&x, argc, argv);
	if (r >= 0)
		return r;
	r = 1;
	sqk_progress_init(&x.pr, "extract", x.progress);
	x.c.progress = &x.pr;
	if (!sqk_cmd_open(&x.c))
		r = x_run(&x, argv + optind + 2, argc - optind - 2) ? 1 : 0;
	if (x.destfd >= 0)
		close(x.destfd);
	sqk_cmd_close(&x.c);
	for (i = 0; i < x.nents; i++)
		free(x.ents[i].path);
	free(x.ents);
	free(x.jobs);
	free(x.first);
	return r;
}
