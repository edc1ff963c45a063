/* SPDX-License-Identifier: BSD-2-Clause */
/* The directory walker as a source: depth first, each directory's entries in name order (unsigned
 * bytes), every entry stat'ed once when it is reached, excluded paths and the image being written
 * left out, xattrs listed with the entry, file content read with pread when the builder asks.
 * The excludes are matched in exclude.c; by_path.c finds files by path for --order and -sort. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "common/depth.h"
#include "sqk/error.h"
#include "common/format.h"
#include "common/grow.h"
#include "mk.h"
#include "prefetch.h"
#include "source.h"
#include "source_dir.h"

int sd_name_sort(const void *a, const void *b)
{
	const char *x = *(char *const *)a, *y = *(char *const *)b;
	return dir_name_cmp(x, strlen(x), y, strlen(y));
}

int sd_set_str(struct mk_ctx *c, char **buf, size_t *cap, size_t at, const char *add,
	       bool slash)
{
	size_t la = strlen(add), need = at + la + 2;
	int err = mk_grow(c, buf, cap, need, 1);
	if (err)
		return err;
	if (slash && at && (*buf)[at - 1] != '/')
		(*buf)[at++] = '/';
	memcpy(*buf + at, add, la + 1);
	return 0;
}

void sd_frame_free(struct frame *f)
{
	for (size_t i = 0; i < f->n; i++)
		free(f->names[i]);
	free(f->names);
}

static int push_frame(struct mk_ctx *c, struct dir_source *d, struct frame *f)
{
	int err = mk_grow(c, &d->stack, &d->cap, d->depth + 1, sizeof(*d->stack));
	if (err) {
		sd_frame_free(f);
		return err;
	}
	d->stack[d->depth++] = *f;
	return 0;
}

static int add_name(struct mk_ctx *c, struct frame *f, size_t *cap, const char *name)
{
	int err = mk_grow(c, &f->names, cap, f->n + 1, sizeof(*f->names));
	if (err)
		return err;
	if (!(f->names[f->n] = strdup(name)))
		return mk_fail(c, SQK_ENOMEM, "out of memory");
	f->n++;
	return 0;
}

/* Adds name to the frame f of the directory at d->rel unless it is excluded. */
static int add_kept(struct mk_ctx *c, struct dir_source *d, struct frame *f, size_t *cap,
		    const char *name)
{
	if (d->ex.any) {
		int err = sd_set_str(c, &d->rel, &d->rel_cap, f->rel_len, name, true);
		if (err)
			return err;
		bool ex = sd_excluded(&d->ex, c->src, d->rel, true, false);
		d->rel[f->rel_len] = 0;
		if (ex)
			return 0;
	}
	return add_name(c, f, cap, name);
}

static void drop_pf_dir(struct dir_source *d)
{
	if (d->have_pf_dir) {
		free(d->pf_dir.names);
		free(d->pf_dir.x.buf);
		d->have_pf_dir = false;
	}
}

/* The frame of the directory the scout listed (already in walk order). */
static int enter_listed(struct mk_ctx *c, struct dir_source *d)
{
	struct frame f = { .path_len = strlen(d->path), .rel_len = strlen(d->rel),
			   .dev = d->ent_dev };
	size_t cap = 0;
	int err = 0;
	const char *nm = d->pf_dir.names;
	for (size_t i = 0; i < d->pf_dir.n && !err; i++, nm += strlen(nm + 1) + 2)
		err = add_kept(c, d, &f, &cap, nm + 1);
	drop_pf_dir(d);
	if (err) {
		sd_frame_free(&f);
		return err;
	}
	return push_frame(c, d, &f);
}

/* Reads the directory at d->path (relative name d->rel) into a new frame, sorted, without the
 * excluded entries. */
int sd_enter_dir(struct mk_ctx *c, struct dir_source *d)
{
	if (d->have_pf_dir)
		return enter_listed(c, d);
	struct frame f = { .path_len = strlen(d->path), .rel_len = strlen(d->rel),
			   .dev = d->ent_dev };
	size_t cap = 0;
	int err = 0;
	DIR *dir = opendir(d->path);
	if (!dir)
		return mk_fail(c, sqk_from_errno(errno), "cannot open directory '%s': %s", d->path,
			       strerror(errno));
	for (;;) {
		errno = 0;
		struct dirent *de = readdir(dir);
		if (!de) {
			if (errno)
				err = mk_fail(c, sqk_from_errno(errno),
					      "cannot read directory '%s': %s", d->path,
					      strerror(errno));
			break;
		}
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if ((err = add_kept(c, d, &f, &cap, de->d_name)))
			break;
	}
	closedir(dir);
	if (err) {
		sd_frame_free(&f);
		return err;
	}
	if (f.n > 1)
		qsort(f.names, f.n, sizeof(*f.names), sd_name_sort);
	return push_frame(c, d, &f);
}

static int read_xattrs(struct mk_ctx *c, struct dir_source *d, struct mk_entry *e)
{
	e->nxattrs = 0;
	if (c->opt->no_xattrs)
		return 0;
	ssize_t len = llistxattr(d->path, NULL, 0);
	if (len < 0 && (errno == ENOTSUP || errno == ENOSYS))
		return 0;
	if (len < 0)
		return mk_fail(c, sqk_from_errno(errno), "cannot list xattrs of '%s': %s", d->path,
			       strerror(errno));
	if (len == 0)
		return 0;
	if ((size_t)len > d->xnames_cap) { /* exactly the list's bytes, not mem_grow */
		char *nb = realloc(d->xnames, (size_t)len);
		if (!nb)
			return mk_fail(c, SQK_ENOMEM, "out of memory");
		d->xnames = nb;
		d->xnames_cap = (size_t)len;
	}
	if (llistxattr(d->path, d->xnames, (size_t)len) != len)
		return mk_fail(c, SQK_ECHANGED, "xattrs of '%s' changed while being read", d->path);
	size_t n = 0, vtotal = 0;
	for (ssize_t off = 0; off < len; off += (ssize_t)strlen(d->xnames + off) + 1)
		n++;
	int err = mk_grow(c, &d->kv, &d->kv_cap, n, sizeof(*d->kv));
	if (err)
		return err;
	/* Values go one after another in xvals; pointers are set once it stops moving. */
	size_t i = 0;
	for (ssize_t off = 0; off < len; off += (ssize_t)strlen(d->xnames + off) + 1, i++) {
		const char *nm = d->xnames + off;
		ssize_t vl = lgetxattr(d->path, nm, NULL, 0);
		if (vl < 0 || vl > 65536)
			return mk_fail(c, vl < 0 ? sqk_from_errno(errno) : SQK_ETOOBIG,
				       "cannot read xattr %s of '%s': %s", nm, d->path,
				       vl < 0 ? strerror(errno) : "too large");
		err = mk_grow(c, &d->xvals, &d->xvals_cap, vtotal + (size_t)vl + 1, 1);
		if (err)
			return err;
		ssize_t got = vl ? lgetxattr(d->path, nm, d->xvals + vtotal, (size_t)vl) : 0;
		if (got != vl)
			return mk_fail(c, SQK_ECHANGED, "xattr %s of '%s' changed while being read",
				       nm, d->path);
		d->kv[i] = (struct mk_xattr_kv){ .name = nm, .value = (void *)(uintptr_t)vtotal,
						 .size = (size_t)vl };
		vtotal += (size_t)vl;
	}
	for (size_t k = 0; k < n; k++)
		d->kv[k].value = d->xvals + (uintptr_t)d->kv[k].value;
	e->xattrs = d->kv;
	e->nxattrs = n;
	return 0;
}

/* The xattrs of e as the scout listed them (x, freed here): the same names and values
 * read_xattrs would have read, without the walk's round trips. */
static int scout_xattrs(struct mk_ctx *c, struct dir_source *d, struct mk_entry *e,
			struct mk_prefetch_xattrs *x)
{
	size_t len = (size_t)x->len, n = 0, at = len;
	int err = 0;
	e->nxattrs = 0;
	if (len > d->xnames_cap) {
		char *nb = realloc(d->xnames, len);
		err = nb ? 0 : mk_fail(c, SQK_ENOMEM, "out of memory");
		if (nb) {
			d->xnames = nb;
			d->xnames_cap = len;
		}
	}
	if (!err && len)
		memcpy(d->xnames, x->buf, len);
	for (size_t off = 0; off < len; off += strlen(d->xnames + off) + 1)
		n++;
	if (!err)
		err = mk_grow(c, &d->kv, &d->kv_cap, n, sizeof(*d->kv));
	if (!err)
		err = mk_grow(c, &d->xvals, &d->xvals_cap, x->size - len + 1, 1);
	size_t i = 0, vtotal = 0;
	for (size_t off = 0; !err && off < len; off += strlen(d->xnames + off) + 1, i++) {
		uint32_t vl;
		memcpy(&vl, x->buf + at, 4);
		memcpy(d->xvals + vtotal, x->buf + at + 4, vl);
		d->kv[i] = (struct mk_xattr_kv){
		    .name = d->xnames + off, .value = d->xvals + vtotal, .size = vl};
		at += 4 + vl;
		vtotal += vl;
	}
	free(x->buf);
	x->buf = NULL;
	if (err)
		return err;
	e->xattrs = d->kv;
	e->nxattrs = n;
	return 0;
}

static int read_target(struct mk_ctx *c, struct dir_source *d, const struct stat *st,
		       struct mk_entry *e)
{
	if ((uint64_t)st->st_size > SQK_SYMLINK_MAX)
		return mk_fail(c, SQK_ETOOBIG, "symlink '%s': target longer than %u bytes", d->path,
			       SQK_SYMLINK_MAX);
	ssize_t len = readlink(d->path, d->target, sizeof(d->target) - 1);
	if (len < 0)
		return mk_fail(c, sqk_from_errno(errno), "cannot read symlink '%s': %s", d->path,
			       strerror(errno));
	if ((size_t)len > SQK_SYMLINK_MAX || (size_t)len > (size_t)st->st_size)
		return mk_fail(c, SQK_ECHANGED, "symlink '%s' changed while being read", d->path);
	d->target[len] = 0;
	e->target = d->target;
	return 0;
}

/* Ends the scout (when it found the tree ahead warm, mk_prefetch_idle, and at the end) and
 * frees its view of the excludes: the walk opens and reads on its own again and watches for
 * misses, which may start a new scout. */
static void stop_scout(struct dir_source *d)
{
	mk_prefetch_destroy(d->pf);
	d->pf = NULL;
	free(d->pf_ex.hit);
	free(d->pf_ex.split);
	free(d->pf_ex.parts);
	memset(&d->pf_ex, 0, sizeof(d->pf_ex));
	d->pf_off = false;
	d->misses = (struct mk_miss_watch){ 0 };
}

/* Fills e from an lstat of d->path. Returns 1 for an entry to leave out (the image). */
int sd_stat_entry(struct mk_ctx *c, struct dir_source *d, struct mk_entry *e, bool root)
{
	struct stat st;
	if (root ? stat(d->path, &st) : lstat(d->path, &st)) {
		char b[2 * SQK_DEPTH_SHOWN + 4]; /* a path too long for PATH_MAX: its two ends */
		return mk_fail(c, sqk_from_errno(errno), "cannot stat '%s': %s",
			       depth_shown(d->path, b), strerror(errno));
	}
	for (int i = 0; i < c->nskip; i++)
		if (S_ISREG(st.st_mode) && st.st_dev == c->skip_dev[i] &&
		    st.st_ino == c->skip_ino[i])
			return 1;
	memset(e, 0, sizeof(*e));
	d->ent_dev = st.st_dev;
	e->path = d->rel;
	e->origin = d->path;
	e->mode = st.st_mode;
	e->uid = st.st_uid;
	e->gid = st.st_gid;
	e->mtime = st.st_mtim.tv_sec;
	e->st_size = (uint64_t)st.st_size;
	e->st_ino = (uint64_t)st.st_ino;
	e->st_blocks = (uint64_t)st.st_blocks;
	e->st_nlink = (uint32_t)st.st_nlink;
	if (!S_ISDIR(st.st_mode) && st.st_nlink > 1) {
		e->has_id = true;
		e->id_dev = st.st_dev;
		e->id_ino = st.st_ino;
	}
	int err = 0;
	if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) {
		e->dev_major = major(st.st_rdev);
		e->dev_minor = minor(st.st_rdev);
	} else if (S_ISLNK(st.st_mode)) {
		err = read_target(c, d, &st, e);
	} else if (S_ISREG(st.st_mode)) {
		e->size = (uint64_t)st.st_size;
		e->maybe_sparse = (uint64_t)st.st_blocks * 512 < e->size;
		d->size = e->size;
		d->dev = st.st_dev;
		d->ino = st.st_ino;
	} else if (!S_ISDIR(st.st_mode) && !S_ISFIFO(st.st_mode) && !S_ISSOCK(st.st_mode)) {
		return mk_fail(c, SQK_EUNSUPPORTED, "'%s': unsupported file type", d->path);
	}
	if (d->pf && mk_prefetch_idle(d->pf))
		stop_scout(d);
	/* a file the scout read ahead: its descriptor and xattrs are taken now, before the
	 * builder reads it, so that the walk makes no round trip of its own for it */
	struct mk_prefetch_xattrs x = { .len = -1 };
	if (!err && S_ISREG(st.st_mode) && d->pf)
		d->fd = mk_prefetch_take(d->pf, d->rel, d->dev, d->ino,
					 c->opt->no_xattrs ? NULL : &x);
	drop_pf_dir(d);
	if (!err && S_ISDIR(st.st_mode) && d->pf &&
	    (d->have_pf_dir = mk_prefetch_take_dir(d->pf, d->rel, st.st_dev, st.st_ino,
						    &d->pf_dir))) {
		x = d->pf_dir.x;
		d->pf_dir.x = (struct mk_prefetch_xattrs){ .len = -1 };
	}
	if (!err)
		err = x.len >= 0 ? scout_xattrs(c, d, e, &x) : read_xattrs(c, d, e);
	d->descend = !err && S_ISDIR(st.st_mode);
	return err;
}

void sd_close_file(struct dir_source *d)
{
	if (d->fd >= 0 && d->pf)
		mk_prefetch_close(d->pf, d->fd);
	else if (d->fd >= 0)
		close(d->fd);
	d->fd = -1;
}

/* -max-depth, -one-file-system: whether the walk descends into the entry it just stat'ed (e),
 * or leaves it out (1). */
static int walk_limits(struct mk_ctx *c, struct dir_source *d, const struct mk_entry *e)
{
	const struct sqk_build_opts *o = c->opt;
	bool top = !d->depth || (d->synthetic && d->depth == 1);
	if ((o->one_file_system || o->one_file_system_x) && !top &&
	    d->ent_dev != d->stack[d->depth - 1].dev) {
		bool keep = S_ISDIR(e->mode) && !o->one_file_system_x;
		if (!o->quiet)
			fprintf(stderr, "sqk mkimage: '%s' is on another file system: %s "
				"(-one-file-system%s)\n", d->path,
				keep ? "stored as an empty directory" : "left out",
				o->one_file_system_x ? "-x" : "");
		d->descend = false;
		if (!keep) {
			sd_close_file(d);
			return 1;
		}
	}
	if (d->descend && o->max_depth >= 0 &&
	    path_depth(d->rel, strlen(d->rel)) >= (uint64_t)o->max_depth)
		d->descend = false;
	return 0;
}

/* The root entry: the one directory's own attributes, or a made-up directory. */
static int root_entry(struct mk_ctx *c, struct dir_source *d, struct mk_entry *e)
{
	d->state = 1;
	d->rel[0] = 0;
	if (d->synthetic) {
		memset(e, 0, sizeof(*e));
		e->path = d->rel;
		e->origin = "/";
		e->mode = S_IFDIR | 0755;
		e->uid = (uint32_t)getuid();
		e->gid = (uint32_t)getgid();
		e->mtime = MK_MTIME_NEWEST;
		return 0;
	}
	int r = sd_stat_entry(c, d, e, true);
	if (r == 1)
		return mk_fail(c, SQK_EINVAL, "source '%s' is the image", c->src->sources[0]);
	return r ? r : walk_limits(c, d, e);
}

static int dir_next(struct mk_source *s, struct mk_ctx *c, struct mk_entry *e)
{
	struct dir_source *d = (struct dir_source *)s;
	sd_close_file(d);
	if (d->state == 0)
		return root_entry(c, d, e);
	for (;;) {
		if (mk_cancelled(c))
			return mk_fail(c, SQK_EINTR, "interrupted");
		int err = d->descend ? sd_enter_dir(c, d) : 0;
		d->descend = false;
		if (err)
			return err;
		if (!d->depth)
			return 1;
		struct frame *f = &d->stack[d->depth - 1];
		if (f->next == f->n) {
			sd_frame_free(f);
			d->depth--;
			continue;
		}
		const char *name = f->names[f->next++];
		if (d->synthetic && d->depth == 1) {
			/* a source given on the command line: its path as given, named by its base
			 */
			const char *src = c->src->sources[d->src_order[f->next - 1]];
			err = sd_set_str(c, &d->path, &d->path_cap, 0, src, false);
		} else {
			err = sd_set_str(c, &d->path, &d->path_cap, f->path_len, name, true);
		}
		if (!err)
			err = sd_set_str(c, &d->rel, &d->rel_cap, f->rel_len, name, true);
		if (!err)
			err = sd_stat_entry(c, d, e, false);
		if (!err)
			err = walk_limits(c, d, e);
		if (err == 1)
			continue;
		return err;
	}
}

/* The scout's exclude test: d->ex's patterns, its own scratch (sd_excluded() writes hit and the
 * split path), on the scout's thread. */
static bool scout_excluded(void *arg, const char *rel, bool top)
{
	struct dir_source *d = arg;
	return sd_excluded(&d->pf_ex, d->pf_src, rel, false, top);
}

/* The walk read a file the page cache did not hold: the tree is cold, the scout starts. */
static void start_scout(struct mk_ctx *c, struct dir_source *d)
{
	d->pf_off = true;
	struct mk_prefetch_skip skip = { .n = (size_t)c->nskip };
	for (int i = 0; i < c->nskip; i++) {
		skip.dev[i] = c->skip_dev[i];
		skip.ino[i] = c->skip_ino[i];
	}
	if (d->ex.any) {
		d->pf_ex = d->ex;
		d->pf_ex.split = NULL;
		d->pf_ex.parts = NULL;
		d->pf_ex.split_cap = d->pf_ex.parts_cap = 0;
		d->pf_ex.hit = calloc((size_t)(c->src->nexcludes + c->src->nmks_excludes) + 1, 1);
		if (!d->pf_ex.hit)
			return;
		d->pf_src = c->src;
		skip.leave_out = scout_excluded;
		skip.arg = d;
	}
	struct frame *top = d->synthetic && d->depth ? &d->stack[0] : NULL;
	size_t n = top ? top->n : 1;
	struct mk_prefetch_root *roots = calloc(n, sizeof(*roots));
	if (!roots)
		return;
	for (size_t i = 0; i < n; i++)
		roots[i] = top ? (struct mk_prefetch_root){ c->src->sources[d->src_order[i]],
							    top->names[i] } :
				 (struct mk_prefetch_root){ d->root, "" };
	if (top || d->root)
		d->pf = mk_prefetch_create(roots, n, &skip, 0, 0);
	if (d->pf && !c->opt->no_xattrs)
		mk_prefetch_list_xattrs(d->pf);
	free(roots);
	if (d->pf)
		mk_prefetch_at(d->pf, d->rel, true);
}

/* A read of the walked file that does not wait for the device: when the page cache does not
 * hold the bytes, the read is made again, waiting, and the scout starts once misses come
 * often enough (mk_miss_watch_note); at once when the file system cannot tell. */
static ssize_t read_watching(struct mk_ctx *c, struct dir_source *d, void *p, size_t len,
			     uint64_t off)
{
	if (d->state != 1) /* files by path (--order): not the walk's order */
		return pread(d->fd, p, len, (off_t)off);
	struct iovec iov = { .iov_base = p, .iov_len = len };
	ssize_t r = preadv2(d->fd, &iov, 1, (off_t)off, RWF_NOWAIT);
	if (r > 0) {
		mk_miss_watch_note(&d->misses, false);
		return r;
	}
	/* EAGAIN: a miss. A file system that cannot say (FUSE, most network file systems:
	 * EOPNOTSUPP) is one where each request may be a round trip: the scout starts at once. */
	if (r < 0 && (errno == EAGAIN ? mk_miss_watch_note(&d->misses, true) : errno != EINTR))
		start_scout(c, d);
	return pread(d->fd, p, len, (off_t)off);
}

static int dir_read(struct mk_source *s, struct mk_ctx *c, uint64_t off, void *buf, size_t len)
{
	struct dir_source *d = (struct dir_source *)s;
	if (d->fd < 0) {
		if (d->pf)
			d->fd = mk_prefetch_take(d->pf, d->rel, d->dev, d->ino, NULL);
		if (d->fd < 0)
			d->fd = open(d->path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY);
		if (d->fd < 0)
			return mk_fail(c, sqk_from_errno(errno), "cannot open '%s': %s", d->path,
				       strerror(errno));
		if (d->size > (1u << 20)) /* a syscall saved per small file */
			posix_fadvise(d->fd, 0, 0, POSIX_FADV_SEQUENTIAL);
	}
	uint8_t *p = buf;
	while (len) {
		ssize_t r = d->pf_off ? pread(d->fd, p, len, (off_t)off) :
					read_watching(c, d, p, len, off);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return mk_fail(c, sqk_from_errno(errno),
				       "cannot read '%s' at offset %llu: %s", d->path,
				       (unsigned long long)off, strerror(errno));
		if (r == 0)
			return mk_fail(c, SQK_ECHANGED,
				       "'%s' changed size while being read (ends at %llu, expected "
				       "%llu bytes)", d->path, (unsigned long long)off,
				       (unsigned long long)d->size);
		p += r;
		off += (uint64_t)r;
		len -= (size_t)r;
	}
	return 0;
}

static int dir_data_at(struct mk_source *s, struct mk_ctx *c, uint64_t off, uint64_t *data)
{
	struct dir_source *d = (struct dir_source *)s;
	if (d->fd < 0) {
		int err = dir_read(s, c, 0, NULL, 0); /* opens it */
		if (err)
			return err;
	}
	off_t r = lseek(d->fd, (off_t)off, SEEK_DATA);
	if (r < 0)
		*data = errno == ENXIO ? UINT64_MAX : off;
	else
		*data = (uint64_t)r;
	return 0;
}

/* Checks, after reading, that the file still has the size it had when stat'ed. */
static int dir_end_file(struct mk_source *s, struct mk_ctx *c)
{
	struct dir_source *d = (struct dir_source *)s;
	struct stat st;
	if (d->fd < 0)
		return 0;
	if (fstat(d->fd, &st))
		return mk_fail(c, sqk_from_errno(errno), "cannot stat '%s': %s", d->path,
			       strerror(errno));
	if ((uint64_t)st.st_size != d->size)
		return mk_fail(
		    c, SQK_ECHANGED, "'%s' changed size while being read (%llu bytes, then %llu)",
		    d->path, (unsigned long long)d->size, (unsigned long long)st.st_size);
	sd_close_file(d);
	return 0;
}

static void dir_destroy(struct mk_source *s)
{
	struct dir_source *d = (struct dir_source *)s;
	sd_close_file(d);
	drop_pf_dir(d);
	stop_scout(d);
	for (size_t i = 0; i < d->depth; i++)
		sd_frame_free(&d->stack[i]);
	free(d->stack);
	free(d->path);
	free(d->rel);
	free(d->src_order);
	free(d->root);
	free(d->xnames);
	free(d->kv);
	free(d->xvals);
	sd_excludes_free(&d->ex);
	free(d);
}

static void dir_skip_dir(struct mk_source *s)
{
	((struct dir_source *)s)->descend = false;
}

struct mk_prefetch *mk_source_dir_prefetch(struct mk_source *s)
{
	return ((struct dir_source *)s)->pf;
}

static const struct mk_source_ops dir_ops = {
	.rereadable = true,
	.ordered = true,
	.next = dir_next,
	.read = dir_read,
	.data_at = dir_data_at,
	.end_file = dir_end_file,
	.destroy = dir_destroy,
	.skip_dir = dir_skip_dir,
};

const char *sd_base_name(const char *path, char *buf, size_t cap)
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

struct named_source {
	char name[256];
	int idx;
};

static int named_cmp(const void *a, const void *b)
{
	const struct named_source *x = a, *y = b;
	int r = dir_name_cmp(x->name, strlen(x->name), y->name, strlen(y->name));
	return r ? r : (x->idx > y->idx) - (x->idx < y->idx);
}

/* Several sources (or one non-directory): the root's frame holds each by its base name, in name
 * order, but those mksquashfs's excludes leave out; d->src_order maps a position of that frame
 * to the source it names. */
static int multi_frame(struct mk_ctx *c, struct dir_source *d)
{
	const struct sqk_build_source *o = c->src;
	struct frame f = { 0 };
	size_t cap = 0;
	int err = 0;
	struct named_source *v = calloc((size_t)o->nsources, sizeof(*v));
	d->src_order = calloc((size_t)o->nsources, sizeof(*d->src_order));
	if (!v || !d->src_order) {
		free(v);
		return mk_fail(c, SQK_ENOMEM, "out of memory");
	}
	for (int i = 0; i < o->nsources && !err; i++) {
		const char *nm = sd_base_name(o->sources[i], v[i].name, sizeof(v[i].name));
		v[i].idx = i;
		if (!*nm || !strcmp(nm, ".") || !strcmp(nm, "..") || !strcmp(nm, "/"))
			err =
			    mk_fail(c, SQK_EINVAL, "source '%s': cannot name a root entry after it",
				    o->sources[i]);
	}
	if (!err)
		qsort(v, (size_t)o->nsources, sizeof(*v), named_cmp);
	for (int i = 1; i < o->nsources && !err; i++)
		if (!strcmp(v[i - 1].name, v[i].name))
			err = mk_fail(c, SQK_EINVAL, "sources '%s' and '%s' have the same name",
				      o->sources[v[i - 1].idx], o->sources[v[i].idx]);
	for (int i = 0; i < o->nsources && !err; i++) {
		if (sd_excluded(&d->ex, o, v[i].name, true, true))
			continue;
		d->src_order[f.n] = v[i].idx;
		err = add_name(c, &f, &cap, v[i].name);
	}
	free(v);
	if (err) {
		sd_frame_free(&f);
		return err;
	}
	return push_frame(c, d, &f);
}

int mk_source_dir_create(struct mk_ctx *c, struct mk_source **out)
{
	const struct sqk_build_source *o = c->src;
	struct stat st;
	*out = NULL;
	struct dir_source *d = calloc(1, sizeof(*d));
	if (!d)
		return mk_fail(c, SQK_ENOMEM, "out of memory");
	d->base.ops = &dir_ops;
	d->fd = -1;
	int err = sd_set_str(c, &d->rel, &d->rel_cap, 0, "", false);
	if (!err && o->nsources == 1 && !o->keep_as_directory && stat(o->sources[0], &st) == 0 &&
	    S_ISDIR(st.st_mode)) {
		/* A symlink to a directory is followed, as its contents are what was asked for. */
		struct stat lst;
		bool via_link = lstat(o->sources[0], &lst) == 0 && S_ISLNK(lst.st_mode);
		err = sd_set_str(c, &d->path, &d->path_cap, 0, o->sources[0], false);
		if (!err && via_link)
			err = sd_set_str(c, &d->path, &d->path_cap, strlen(d->path), ".", true);
		if (!err && !(d->root = strdup(d->path)))
			err = mk_fail(c, SQK_ENOMEM, "out of memory");
		if (!err)
			err = sd_excludes_init(c, d);
	} else {
		for (int i = 0; i < o->nsources && !err; i++)
			if (lstat(o->sources[i], &st))
				err =
				    mk_fail(c, sqk_from_errno(errno), "cannot stat source '%s': %s",
					    o->sources[i], strerror(errno));
		d->synthetic = true;
		if (!err)
			err = sd_set_str(c, &d->path, &d->path_cap, 0, "", false);
		if (!err)
			err = sd_excludes_init(c, d);
		if (!err)
			err = multi_frame(c, d);
	}
	if (err) {
		dir_destroy(&d->base);
		return err;
	}
	*out = &d->base;
	return 0;
}

void mk_source_dir_warn_excludes(struct mk_source *s, struct mk_ctx *c)
{
	if (!s || s->ops != &dir_ops)
		return;
	struct dir_source *d = (struct dir_source *)s;
	const struct sqk_build_source *o = c->src;
	if (!d->ex.any)
		return;
	for (int i = 0; i < o->nexcludes; i++)
		if (!d->ex.hit[i])
			fprintf(stderr, "sqk mkimage: --exclude '%s' matched nothing\n",
				o->excludes[i]);
	for (int i = 0; i < o->nmks_excludes; i++) {
		if (d->ex.hit[o->nexcludes + i])
			continue;
		if (o->wildcards)
			fprintf(stderr, "sqk mkimage: -e '%s' (%s) matched nothing\n",
				o->mks_excludes[i], o->regex ? "-regex" : "-wildcards");
		else
			sd_warn_exact(d, o, i);
	}
}
