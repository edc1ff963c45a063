/* SPDX-License-Identifier: BSD-2-Clause */
/* sqk diff: one side of the comparison, an image (through libsqk: local, http(s) or s3) or a
 * directory on disk (lstat, readdir, readlink, l*xattr): its entries as diff_node, sorted by
 * name, and its files' contents read in order. */
#include "diff.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "common/grow.h"

/* "sqk diff: SIDE: /PATH: message[: strerror(e)]" for a directory side (e 0: no reason). */
static void ds_err(const struct diff_side *s, const char *path, int e, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void ds_err(const struct diff_side *s, const char *path, int e, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "sqk diff: %s: /%s: ", s->arg, path);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	if (e)
		fprintf(stderr, ": %s", strerror(e));
	fputc('\n', stderr);
}

/* The SQK_E* code of errno value e. */
static int ds_code(int e)
{
	switch (e) {
	case ENOMEM: return SQK_ENOMEM;
	case ENOENT: return SQK_ENOENT;
	case EACCES:
	case EPERM: return SQK_EACCESS;
	default: return SQK_EIO;
	}
}

/* SIDE/PATH of a directory side: a new string, or NULL (message printed). */
static char *ds_path(const struct diff_side *s, const char *path)
{
	size_t la = strlen(s->arg), lp = strlen(path);
	char *p = malloc(la + lp + 2);

	if (!p) {
		ds_err(s, path, ENOMEM, "cannot build its path");
		return NULL;
	}
	memcpy(p, s->arg, la);
	p[la] = '/';
	memcpy(p + la + 1, path, lp + 1);
	if (!lp)
		p[la] = '\0';
	return p;
}

int diff_side_open(struct diff_side *s)
{
	struct stat st;

	s->c.name = "diff";
	s->c.image = s->arg;
	s->c.cache_bytes = DIFF_CACHE;
	if (!sqk_is_url(s->arg)) {
		if (stat(s->arg, &st)) {
			fprintf(stderr, "sqk diff: %s: %s\n", s->arg, strerror(errno));
			return ds_code(errno);
		}
		s->is_dir = S_ISDIR(st.st_mode);
	}
	if (s->is_dir)
		return 0;
	return cmd_open(&s->c);
}

void diff_side_close(struct diff_side *s)
{
	if (!s->is_dir)
		cmd_close(&s->c);
	else
		cmd_remote_free(&s->c.remote);
}

static void ds_from_stat(struct diff_node *n, const struct stat *st)
{
	n->mode = st->st_mode;
	n->uid = st->st_uid;
	n->gid = st->st_gid;
	n->nlink = (uint32_t)st->st_nlink;
	n->mtime = st->st_mtime;
	n->size = S_ISREG(st->st_mode) || S_ISLNK(st->st_mode) ? (uint64_t)st->st_size : 0;
	n->ino = st->st_ino;
	n->major = major(st->st_rdev);
	n->minor = minor(st->st_rdev);
}

static void ds_from_inode(struct diff_node *n, const struct sqk_inode *i)
{
	n->mode = i->mode;
	n->uid = i->uid;
	n->gid = i->gid;
	n->nlink = i->nlink;
	n->mtime = i->mtime;
	n->size = S_ISREG(i->mode) || S_ISLNK(i->mode) ? i->size : 0;
	n->ino = i->ino;
	n->major = sqk_rdev_major(i->rdev);
	n->minor = sqk_rdev_minor(i->rdev);
	n->inode = *i;
}

int diff_side_root(struct diff_side *s, struct diff_node *out)
{
	struct sqk_inode root;
	struct stat st;
	int err;

	memset(out, 0, sizeof(*out));
	out->name = strdup("");
	if (!out->name)
		return SQK_ENOMEM;
	if (s->is_dir) {
		if (stat(s->arg, &st) == 0) { /* the root may be given as a symlink to it */
			ds_from_stat(out, &st);
			return 0;
		}
		ds_err(s, "", errno, "cannot read");
		return ds_code(errno);
	}
	err = sqk_image_root(s->c.img, &root);
	if (err)
		cmd_err(&s->c, "", err, "cannot read the root inode");
	else
		ds_from_inode(out, &root);
	return err;
}

void diff_nodes_free(struct diff_node *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i].name);
	free(v);
}

static int ds_cmp(const void *x, const void *y)
{
	return strcmp(((const struct diff_node *)x)->name, ((const struct diff_node *)y)->name);
}

/* Appends an entry named name (len bytes) to *v; its other fields are the caller's to fill. */
static struct diff_node *ds_add(struct diff_node **v, size_t *n, size_t *cap, const char *name,
				size_t len)
{
	struct diff_node *e;

	if (mem_grow(v, cap, *n + 1, sizeof(**v), 1))
		return NULL;
	e = &(*v)[*n];
	e->name = strndup(name, len);
	if (!e->name)
		return NULL;
	(*n)++;
	return e;
}

static int ds_list_image(struct diff_side *s, const struct diff_node *dir, const char *path,
			 struct diff_node **v, size_t *n)
{
	struct sqk_dir_iter *it;
	struct sqk_dirent de;
	struct sqk_inode ino;
	struct diff_node *e;
	size_t cap = 0;
	int r = sqk_dir_open(s->c.img, &dir->inode, &it);

	while (r == 0 && (r = sqk_dir_next(it, &de)) == 1) {
		r = sqk_inode_get(s->c.img, de.ref, &ino);
		if (r) {
			cmd_err(&s->c, path, r, "cannot read the inode of '%s'", de.name);
			sqk_dir_close(it);
			return r;
		}
		e = ds_add(v, n, &cap, de.name, de.name_len);
		if (!e) {
			r = SQK_ENOMEM;
			break;
		}
		ds_from_inode(e, &ino);
		r = 0;
	}
	sqk_dir_close(it);
	if (r < 0)
		cmd_err(&s->c, path, r, "cannot list directory");
	return r < 0 ? r : 0;
}

static int ds_list_dir(struct diff_side *s, const char *path, struct diff_node **v, size_t *n)
{
	char *full = ds_path(s, path);
	DIR *d = full ? opendir(full) : NULL;
	struct dirent *de;
	struct stat st;
	size_t cap = 0;
	int r = 0;

	if (!d) {
		if (full)
			ds_err(s, path, errno, "cannot list directory");
		free(full);
		return full ? ds_code(errno) : SQK_ENOMEM;
	}
	while (r == 0 && (errno = 0, de = readdir(d)) != NULL) {
		struct diff_node *e;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW)) {
			ds_err(s, path, errno, "cannot read entry '%s'", de->d_name);
			r = ds_code(errno);
		} else if (!(e = ds_add(v, n, &cap, de->d_name, strlen(de->d_name)))) {
			ds_err(s, path, ENOMEM, "cannot list directory");
			r = SQK_ENOMEM;
		} else {
			ds_from_stat(e, &st);
		}
	}
	if (r == 0 && errno) {
		ds_err(s, path, errno, "cannot list directory");
		r = ds_code(errno);
	}
	closedir(d);
	free(full);
	return r;
}

int diff_side_list(struct diff_side *s, const struct diff_node *dir, const char *path,
		   struct diff_node **out, size_t *n)
{
	int r;

	*out = NULL;
	*n = 0;
	r = s->is_dir ? ds_list_dir(s, path, out, n) : ds_list_image(s, dir, path, out, n);
	if (r) {
		diff_nodes_free(*out, *n);
		*out = NULL;
		*n = 0;
		return r;
	}
	if (*n > 1)
		qsort(*out, *n, sizeof(**out), ds_cmp);
	return 0;
}

int diff_side_readlink(struct diff_side *s, const struct diff_node *n, const char *path,
		       char **out)
{
	size_t cap = SQK_SYMLINK_MAX + 2, len;
	char *buf = malloc(cap), *full;
	ssize_t got;
	int r;

	*out = NULL;
	if (!buf)
		return SQK_ENOMEM;
	if (!s->is_dir) {
		r = sqk_readlink(s->c.img, &n->inode, buf, cap, &len);
		if (r) {
			cmd_err(&s->c, path, r, "cannot read symlink");
			free(buf);
			return r;
		}
		*out = buf;
		return 0;
	}
	full = ds_path(s, path);
	got = full ? readlink(full, buf, cap - 1) : -1;
	r = got < 0 ? ds_code(errno) : 0;
	if (got < 0 && full)
		ds_err(s, path, errno, "cannot read symlink");
	free(full);
	if (r) {
		free(buf);
		return r;
	}
	buf[got] = '\0';
	*out = buf;
	return 0;
}

/* l*xattr of a directory side into a new buffer: get(path, NULL, 0) for its size, then the
 * bytes (again when it grew between the two calls). */
static int ds_xattr_call(struct diff_side *s, const char *path, const char *name, char **out,
			 size_t *len)
{
	char *full = ds_path(s, path), *buf = NULL;
	ssize_t want, got = -1;

	*out = NULL;
	*len = 0;
	if (!full)
		return SQK_ENOMEM;
	for (int tries = 0; tries < 8; tries++) {
		want = name ? lgetxattr(full, name, NULL, 0) : llistxattr(full, NULL, 0);
		if (want < 0)
			break;
		free(buf);
		buf = malloc((size_t)want + 1);
		if (!buf) {
			errno = ENOMEM;
			break;
		}
		got = name ? lgetxattr(full, name, buf, (size_t)want)
			   : llistxattr(full, buf, (size_t)want);
		if (got >= 0 || errno != ERANGE)
			break;
	}
	free(full);
	if (got >= 0) {
		*out = buf;
		*len = (size_t)got;
		return 0;
	}
	free(buf);
	if (errno == ENODATA || (!name && (errno == ENOTSUP || errno == EOPNOTSUPP)))
		return name ? SQK_ENOENT : 0;
	ds_err(s, path, errno, name ? "cannot read xattr %s" : "cannot list xattrs%s",
	       name ? name : "");
	return ds_code(errno);
}

int diff_side_xattr_names(struct diff_side *s, const struct diff_node *n, const char *path,
			  char **out, size_t *len)
{
	int r;

	if (s->is_dir)
		return ds_xattr_call(s, path, NULL, out, len);
	*out = NULL;
	*len = 0;
	r = sqk_xattr_list(s->c.img, &n->inode, NULL, 0, len);
	if (!r && *len) {
		*out = malloc(*len);
		r = *out ? sqk_xattr_list(s->c.img, &n->inode, *out, *len, len) : SQK_ENOMEM;
	}
	if (r) {
		cmd_err(&s->c, path, r, "cannot list xattrs");
		free(*out);
		*out = NULL;
	}
	return r;
}

int diff_side_xattr_get(struct diff_side *s, const struct diff_node *n, const char *path,
			const char *name, char **out, size_t *len)
{
	int r;

	if (s->is_dir)
		return ds_xattr_call(s, path, name, out, len);
	*out = NULL;
	r = sqk_xattr_get(s->c.img, &n->inode, name, NULL, 0, len);
	if (!r) {
		*out = malloc(*len + 1);
		r = *out ? sqk_xattr_get(s->c.img, &n->inode, name, *out, *len + 1, len)
			 : SQK_ENOMEM;
	}
	if (r) {
		free(*out);
		*out = NULL;
		if (r != SQK_ENOENT)
			cmd_err(&s->c, path, r, "cannot read xattr %s", name);
	}
	return r;
}

int diff_file_open(struct diff_side *s, const struct diff_node *n, const char *path,
		   struct diff_file *f)
{
	char *full;

	f->s = s;
	f->n = n;
	f->fd = -1;
	f->off = 0;
	if (!s->is_dir)
		return 0;
	full = ds_path(s, path);
	if (!full)
		return SQK_ENOMEM;
	f->fd = open(full, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	free(full);
	if (f->fd < 0) {
		ds_err(s, path, errno, "cannot open");
		return ds_code(errno);
	}
	return 0;
}

ssize_t diff_file_read(struct diff_file *f, const char *path, void *buf, size_t len)
{
	size_t got = 0;
	ssize_t r;

	if (!f->s->is_dir) {
		r = sqk_read(f->s->c.img, &f->n->inode, buf, len, f->off);
		if (r < 0)
			cmd_read_err(&f->s->c, path, &f->n->inode, (int)r, "cannot read");
		else
			f->off += (uint64_t)r;
		return r;
	}
	while (got < len) {
		r = read(f->fd, (char *)buf + got, len - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			ds_err(f->s, path, errno, "cannot read");
			return ds_code(errno);
		}
		if (r == 0)
			break;
		got += (size_t)r;
	}
	f->off += got;
	return (ssize_t)got;
}

void diff_file_close(struct diff_file *f)
{
	if (f->fd >= 0)
		close(f->fd);
	f->fd = -1;
}
