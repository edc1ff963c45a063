/* SPDX-License-Identifier: BSD-2-Clause */
/* sqkfuse's FUSE 3 low-level operations on libsqk. The image is immutable, so node ids are
 * inode references (no lookup table to keep), replies carry long timeouts, file pages are kept
 * cached, and directories are read with readdirplus so a tree walk needs no separate lookups.
 * Block caching, readahead and validation are the library's. The command line and the mounting
 * are mount.c. */
#define FUSE_USE_VERSION 312

#include "fuse/fs.h"

#include <errno.h>
#include <fcntl.h>
#include <fuse_lowlevel.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <syslog.h>

#include "fuse/nodes.h"
#include "fuse/store.h"
#include "fuse/trace.h"
#include "fuse/walk.h"
#include "sqk/sqk.h"

#define TIMEOUT 86400.0 /* the image never changes */
#define MAX_IO (1u << 20)

/* An open directory: its listing (owned), and the entry read but not sent (a full reply),
 * which the next readdir sends first. */
struct dirh {
	pthread_mutex_t mu;
	fuse_ino_t id;
	struct sqk_inode dir;
	struct sqk_dir_iter *it;
	off_t pos; /* offset of the next entry: the pending one, else the iterator's next */
	bool pending;
	bool listed_file;  /* a regular file of this listing was given to the walk (walk.h) */
	struct sqk_dirent pend;
	char pend_name[SQK_NAME_MAX + 1];
};

void sqkfuse_log(const struct fs *fs, const char *fmt, ...)
{
	char line[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (fs->foreground)
		fprintf(stderr, "sqkfuse: %s\n", line);
	else
		syslog(LOG_ERR, "%s", line);
}

static fuse_ino_t to_id(const struct fs *fs, const struct sqk_inode *i)
{
	return i->ref == fs->root.ref ? FUSE_ROOT_ID : (fuse_ino_t)i->ref + 2;
}

static int from_id(struct fs *fs, fuse_ino_t id, struct sqk_inode *out)
{
	if (id == FUSE_ROOT_ID) {
		*out = fs->root;
		return 0;
	}
	return sqk_inode_get(fs->img, (uint64_t)id - 2, out);
}

static void fill_stat(const struct fs *fs, const struct sqk_inode *i, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = i->ino;
	st->st_mode = i->mode;
	st->st_nlink = i->nlink;
	st->st_uid = i->uid;
	st->st_gid = i->gid;
	st->st_size = (off_t)i->size;
	st->st_rdev = makedev(sqk_rdev_major(i->rdev), sqk_rdev_minor(i->rdev));
	st->st_blksize = (blksize_t)sqk_image_super(fs->img)->block_size;
	st->st_blocks =
	    (blkcnt_t)((i->size - (i->sparse < i->size ? i->sparse : i->size) + 511) / 512);
	st->st_mtim.tv_sec = i->mtime;
	st->st_atim = st->st_mtim;
	st->st_ctim = st->st_mtim;
}

/* Names a node the node table does not hold (it was evicted, or -o names=0): by its inode
 * number, or by its inode reference when even the inode does not decode. */
static void name_unrecorded(struct fs *fs, fuse_ino_t id, char *buf, size_t cap)
{
	struct sqk_inode i;
	if (!from_id(fs, id, &i))
		snprintf(buf, cap, "inode %llu", (unsigned long long)i.ino);
	else
		snprintf(buf, cap, "inode reference %llu", (unsigned long long)id - 2);
}

/* Replies with an error after logging what failed where (corruption stays local to one file). */
static void reply_fail(fuse_req_t req, struct fs *fs, fuse_ino_t id, const char *what, int err)
{
	char path[1024];
	if (err != SQK_ENOENT) {
		if (nodes_path(fs->nodes, id, path, sizeof(path)) < 0)
			name_unrecorded(fs, id, path, sizeof(path));
		sqkfuse_log(fs, "%s: %s: %s: %s", fs->image, path, what, sqk_strerror(err));
	}
	fuse_reply_err(req, err == SQK_ENOENT ? ENOENT : err == SQK_ETOOBIG ? ERANGE :
			    sqk_to_errno(err) == EIO || err == SQK_ECORRUPT ? EIO :
			    sqk_to_errno(err));
}

static void fill_entry(struct fs *fs, const struct sqk_inode *i, struct fuse_entry_param *e)
{
	memset(e, 0, sizeof(*e));
	e->ino = to_id(fs, i);
	e->generation = 1;
	e->attr_timeout = TIMEOUT;
	e->entry_timeout = TIMEOUT;
	fill_stat(fs, i, &e->attr);
}

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fs *fs = fuse_req_userdata(req);
	struct sqk_inode dir, child;
	struct fuse_entry_param e;
	int err = from_id(fs, parent, &dir);
	if (!err)
		err = sqk_lookup(fs->img, &dir, name, strlen(name), &child);
	if (err == SQK_ENOENT) {
		/* A negative entry, cached as long as positive ones: the image never changes. */
		memset(&e, 0, sizeof(e));
		e.entry_timeout = TIMEOUT;
		fuse_reply_entry(req, &e);
		return;
	}
	if (err) {
		reply_fail(req, fs, parent, "lookup", err);
		return;
	}
	fill_entry(fs, &child, &e);
	/* Counted before the reply (a forget may follow it at once); a reply the kernel did not
	 * take (an interrupted request) counted no lookup there. */
	nodes_add(fs->nodes, e.ino, parent, name, strlen(name));
	if (fuse_reply_entry(req, &e))
		nodes_forget(fs->nodes, e.ino, 1);
}

static void op_forget(fuse_req_t req, fuse_ino_t id, uint64_t nlookup)
{
	struct fs *fs = fuse_req_userdata(req);
	nodes_forget(fs->nodes, id, nlookup);
	fuse_reply_none(req);
}

static void op_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets)
{
	struct fs *fs = fuse_req_userdata(req);
	for (size_t i = 0; i < count; i++)
		nodes_forget(fs->nodes, forgets[i].ino, forgets[i].nlookup);
	fuse_reply_none(req);
}

static void op_getattr(fuse_req_t req, fuse_ino_t id, struct fuse_file_info *fi)
{
	struct fs *fs = fuse_req_userdata(req);
	struct sqk_inode i;
	struct stat st;
	int err = from_id(fs, id, &i);
	if (err) {
		reply_fail(req, fs, id, "getattr", err);
		return;
	}
	fill_stat(fs, &i, &st);
	fuse_reply_attr(req, &st, TIMEOUT);
}

static void op_readlink(fuse_req_t req, fuse_ino_t id)
{
	struct fs *fs = fuse_req_userdata(req);
	struct sqk_inode i;
	char target[SQK_SYMLINK_MAX + 1];
	size_t len;
	int err = from_id(fs, id, &i);
	if (!err && !S_ISLNK(i.mode))
		err = SQK_EINVAL;
	if (!err)
		err = sqk_readlink(fs->img, &i, target, sizeof(target), &len);
	if (err) {
		reply_fail(req, fs, id, "readlink", err);
		return;
	}
	fuse_reply_readlink(req, target);
}

static void op_open(fuse_req_t req, fuse_ino_t id, struct fuse_file_info *fi)
{
	struct fs *fs = fuse_req_userdata(req);
	if ((fi->flags & O_ACCMODE) != O_RDONLY) {
		fuse_reply_err(req, EROFS);
		return;
	}
	/* Zero-message opens: the kernel stops sending open/release (two round trips per file
	 * of a tree walk) and keeps file pages cached; reads then decode the inode by id. */
	if (fs->no_open) {
		fuse_reply_err(req, ENOSYS);
		return;
	}
	struct sqk_inode *i = malloc(sizeof(*i));
	int err = i ? from_id(fs, id, i) : SQK_ENOMEM;
	if (err) {
		free(i);
		reply_fail(req, fs, id, "open", err);
		return;
	}
	fi->fh = (uint64_t)(uintptr_t)i;
	fi->keep_cache = 1;
	fuse_reply_open(req, fi);
}

static uint8_t *thread_buf(struct fs *fs)
{
	uint8_t *b = pthread_getspecific(fs->buf_key);
	if (!b) {
		b = malloc(MAX_IO);
		if (b)
			pthread_setspecific(fs->buf_key, b);
	}
	return b;
}

/* Queues the walk's n pushes; those the store cannot take go back to the walk. */
static void walk_push(struct fs *fs, const struct walk_push *p, size_t n)
{
	size_t taken = store_push(fs->store, p, n);
	if (taken < n)
		walk_unpush(fs->walk, p + taken, n - taken);
}

static void op_read(fuse_req_t req, fuse_ino_t id, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	struct fs *fs = fuse_req_userdata(req);
	const struct sqk_inode *i = (const struct sqk_inode *)(uintptr_t)fi->fh;
	struct sqk_inode tmp;
	uint8_t *buf = thread_buf(fs);
	if (!i) {
		int err = from_id(fs, id, &tmp);
		if (err) {
			reply_fail(req, fs, id, "read", err);
			return;
		}
		i = &tmp;
	}
	/* before the read: a reader that goes on to the next file once answered sees its order */
	trace_read(fs->trace, i->ino, id, fs->nodes);
	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	if (size > MAX_IO)
		size = MAX_IO;
	/* Random small reads get the rest of their block put into the page cache afterwards;
	 * sequential ones are followed by the kernel's readahead anyway. */
	bool seq = true;
	ssize_t n = sqk_read_stream(fs->img, i, buf, size, (uint64_t)off, 0, &seq);
	bool fill = fs->store && size < sqk_image_super(fs->img)->block_size && !seq;
	if (n < 0) {
		char what[64];
		snprintf(what, sizeof(what), "read at offset %lld", (long long)off);
		reply_fail(req, fs, id, what, (int)n);
		return;
	}
	fuse_reply_buf(req, (const char *)buf, (size_t)n);
	atomic_fetch_add_explicit(&fs->reads, 1, memory_order_relaxed);
	if (fill)
		store_after_read(fs->store, id, i, (uint64_t)off, (size_t)n);
	if (fs->walk) { /* the next files of a tree walk, into the page cache before it asks */
		struct walk_push p[SQK_WALK_BATCH];
		walk_push(fs, p, walk_read(fs->walk, id, (uint64_t)off, p, SQK_WALK_BATCH));
	}
}

static void op_release(fuse_req_t req, fuse_ino_t id, struct fuse_file_info *fi)
{
	free((void *)(uintptr_t)fi->fh);
	fuse_reply_err(req, 0);
}

/* A new handle on directory id's listing, at its start; caller owns *out (dirh_free). */
static int dirh_new(struct fs *fs, fuse_ino_t id, struct dirh **out)
{
	struct dirh *h = calloc(1, sizeof(*h));
	int err = h ? from_id(fs, id, &h->dir) : SQK_ENOMEM;
	if (!err && !S_ISDIR(h->dir.mode))
		err = SQK_EINVAL;
	if (!err)
		err = sqk_dir_open(fs->img, &h->dir, &h->it);
	if (err) {
		free(h);
		return err;
	}
	pthread_mutex_init(&h->mu, NULL);
	h->id = id;
	h->pos = 2; /* the iterator is at the first entry, after "." and ".." */
	*out = h;
	return 0;
}

static void dirh_free(struct dirh *h)
{
	if (!h)
		return;
	pthread_mutex_destroy(&h->mu);
	sqk_dir_close(h->it);
	free(h);
}

/* no_opendir: the parked listing of id whose next entry is at off (taken out of the table),
 * else a new one; NULL when the directory cannot be opened (*err). */
static struct dirh *dirh_take(struct fs *fs, fuse_ino_t id, off_t off, int *err)
{
	struct dirh *h = NULL;
	pthread_mutex_lock(&fs->park_mu);
	for (unsigned i = 0; i < SQK_FUSE_PARKED && !h; i++) {
		struct dirh *p = fs->parked[i];
		if (p && p->id == id && p->pos == off) {
			h = p;
			fs->parked[i] = NULL;
		}
	}
	pthread_mutex_unlock(&fs->park_mu);
	*err = h ? 0 : dirh_new(fs, id, &h);
	return h;
}

/* no_opendir: keeps h for the next call (a free slot, else the oldest parked is freed). */
static void dirh_park(struct fs *fs, struct dirh *h)
{
	struct dirh *old = NULL;
	pthread_mutex_lock(&fs->park_mu);
	unsigned slot = fs->park_next;
	for (unsigned i = 0; i < SQK_FUSE_PARKED; i++) {
		if (!fs->parked[i]) {
			slot = i;
			break;
		}
	}
	old = fs->parked[slot];
	fs->parked[slot] = h;
	fs->park_next = (slot + 1) % SQK_FUSE_PARKED;
	pthread_mutex_unlock(&fs->park_mu);
	dirh_free(old);
}

static void op_opendir(fuse_req_t req, fuse_ino_t id, struct fuse_file_info *fi)
{
	struct fs *fs = fuse_req_userdata(req);
	struct dirh *h;
	atomic_fetch_add_explicit(&fs->opendirs, 1, memory_order_relaxed);
	/* Zero-message opendirs: no opendir/releasedir round trips per directory of a walk; each
	 * readdir then finds its listing by directory and offset (dirh_take). */
	if (fs->no_opendir) {
		fuse_reply_err(req, ENOSYS);
		return;
	}
	int err = dirh_new(fs, id, &h);
	if (err) {
		reply_fail(req, fs, id, "opendir", err);
		return;
	}
	fi->fh = (uint64_t)(uintptr_t)h;
	fi->keep_cache = 1;
	fi->cache_readdir = 1;
	fuse_reply_open(req, fi);
}

/* Adds "." and ".." (offsets 1 and 2); returns the bytes used or 0 when full. */
static size_t add_dot(fuse_req_t req, struct fs *fs, struct dirh *h, bool plus, int which,
		      char *buf, size_t cap)
{
	struct stat st = { 0 };
	const char *name = which ? ".." : ".";
	st.st_ino = which ? (h->dir.parent ? h->dir.parent : h->dir.ino) : h->dir.ino;
	st.st_mode = S_IFDIR;
	if (!plus)
		return fuse_add_direntry(req, buf, cap, name, &st, which + 1);
	struct fuse_entry_param e = { .attr = st };
	return fuse_add_direntry_plus(req, buf, cap, name, &e, which + 1);
}

/* The next entry: the pending one, else the iterator's (as sqk_dir_next: 1, 0 or SQK_E*). */
static int dir_take(struct dirh *h, struct sqk_dirent *de)
{
	if (!h->pending)
		return sqk_dir_next(h->it, de);
	h->pending = false;
	*de = h->pend;
	return 1;
}

/* Keeps de (not sent) for the next call: its name is copied, the iterator's is not kept. */
static void dir_unget(struct dirh *h, const struct sqk_dirent *de)
{
	memmove(h->pend_name, de->name, de->name_len);
	h->pend_name[de->name_len] = 0;
	h->pend = *de;
	h->pend.name = h->pend_name;
	h->pending = true;
}

/* Positions the handle so that the next entry is the one at offset off. */
static int dir_seek(struct fs *fs, struct dirh *h, off_t off)
{
	struct sqk_dirent de;
	if (off < h->pos || h->pos < 2) {
		struct sqk_dir_iter *it;
		int err = sqk_dir_open(fs->img, &h->dir, &it);
		if (err)
			return err;
		sqk_dir_close(h->it);
		h->it = it;
		h->pending = false;
		h->listed_file = false;
		h->pos = 2;
	}
	while (h->pos < off) {
		int r = dir_take(h, &de);
		if (r <= 0)
			return r;
		h->pos++;
	}
	return 0;
}

static size_t add_entry(fuse_req_t req, struct fs *fs, struct dirh *h, fuse_ino_t dir_id,
			bool plus, const struct sqk_dirent *de, off_t next, char *buf, size_t cap,
			int *err)
{
	char name[SQK_NAME_MAX + 1];
	memcpy(name, de->name, de->name_len);
	name[de->name_len] = 0;
	if (!plus) {
		struct stat st = { .st_ino = de->ino,
				   .st_mode = (mode_t)sqk_type_ifmt(de->type) };
		return fuse_add_direntry(req, buf, cap, name, &st, next);
	}
	struct sqk_inode child;
	struct fuse_entry_param e;
	*err = sqk_inode_get(fs->img, de->ref, &child);
	if (*err)
		return 0;
	fill_entry(fs, &child, &e);
	size_t n = fuse_add_direntry_plus(req, buf, cap, name, &e, next);
	if (n <= cap) /* the kernel counts a lookup of every entry but . and .. */
		nodes_add(fs->nodes, e.ino, dir_id, name, de->name_len);
	if (n <= cap && fs->walk && S_ISREG(child.mode) && child.size) {
		walk_listed(fs->walk, dir_id, e.ino, child.size, !h->listed_file);
		h->listed_file = true;
	}
	return n;
}

static void do_readdir(fuse_req_t req, fuse_ino_t id, size_t size, off_t off,
		       struct fuse_file_info *fi, bool plus)
{
	struct fs *fs = fuse_req_userdata(req);
	struct dirh *h = (struct dirh *)(uintptr_t)fi->fh;
	bool parked = !h, eof = false;
	int err = 0;
	if (parked && !(h = dirh_take(fs, id, off, &err))) {
		reply_fail(req, fs, id, "readdir", err);
		return;
	}
	char *buf = malloc(size);
	size_t used = 0;
	err = buf ? 0 : SQK_ENOMEM;
	pthread_mutex_lock(&h->mu);
	for (; !err && off < 2; off++) {
		size_t n = add_dot(req, fs, h, plus, (int)off, buf + used, size - used);
		if (n > size - used)
			goto full;
		used += n;
	}
	if (!err)
		err = dir_seek(fs, h, off);
	while (!err) {
		struct sqk_dirent de;
		int r = dir_take(h, &de);
		if (r <= 0) {
			err = r;
			eof = r == 0;
			break;
		}
		size_t n = add_entry(req, fs, h, id, plus, &de, h->pos + 1, buf + used,
				     size - used, &err);
		if (err || n > size - used) {
			dir_unget(h, &de); /* not sent: the next call starts with it */
			break;
		}
		used += n;
		h->pos++;
	}
full:
	pthread_mutex_unlock(&h->mu);
	if (err && !used)
		reply_fail(req, fs, id, "readdir", err);
	else
		fuse_reply_buf(req, buf, used);
	free(buf);
	/* parked for the next call; at the end too, for the kernel's last call (which gets nothing
	 * and tells it the listing is over) */
	if (parked && ((eof && !used) || err))
		dirh_free(h);
	else if (parked)
		dirh_park(fs, h);
	if (fs->walk && plus) { /* a walk lists a directory, then reads its files */
		struct walk_push p[SQK_WALK_BATCH];
		walk_push(fs, p, walk_after_listing(fs->walk, id, p, SQK_WALK_BATCH));
	}
}

static void op_readdir(fuse_req_t req, fuse_ino_t id, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	do_readdir(req, id, size, off, fi, false);
}

static void op_readdirplus(fuse_req_t req, fuse_ino_t id, size_t size, off_t off,
			   struct fuse_file_info *fi)
{
	do_readdir(req, id, size, off, fi, true);
}

static void op_releasedir(fuse_req_t req, fuse_ino_t id, struct fuse_file_info *fi)
{
	dirh_free((struct dirh *)(uintptr_t)fi->fh);
	fuse_reply_err(req, 0);
}

static void op_statfs(fuse_req_t req, fuse_ino_t id)
{
	struct fs *fs = fuse_req_userdata(req);
	const struct sqk_super *sb = sqk_image_super(fs->img);
	struct statvfs st = { 0 };
	st.f_bsize = sb->block_size;
	st.f_frsize = sb->block_size;
	st.f_blocks = (sb->bytes_used + sb->block_size - 1) / sb->block_size;
	st.f_files = sb->inode_count;
	st.f_namemax = SQK_NAME_MAX;
	st.f_flag = ST_RDONLY;
	fuse_reply_statfs(req, &st);
}

static void reply_xattr_buf(fuse_req_t req, size_t size, const void *buf, size_t len)
{
	if (size == 0)
		fuse_reply_xattr(req, len);
	else
		fuse_reply_buf(req, buf, len);
}

static void op_getxattr(fuse_req_t req, fuse_ino_t id, const char *name, size_t size)
{
	struct fs *fs = fuse_req_userdata(req);
	struct sqk_inode i;
	size_t len = 0;
	void *buf = size ? malloc(size) : NULL;
	int err = size && !buf ? SQK_ENOMEM : from_id(fs, id, &i);
	if (!err)
		err = sqk_xattr_get(fs->img, &i, name, buf, size, &len);
	if (err == SQK_ENOENT)
		fuse_reply_err(req, ENODATA);
	else if (err == SQK_ETOOBIG) /* a buffer too small: the caller asks again, bigger */
		fuse_reply_err(req, ERANGE);
	else if (err)
		reply_fail(req, fs, id, "getxattr", err);
	else
		reply_xattr_buf(req, size, buf, len);
	free(buf);
}

static void op_listxattr(fuse_req_t req, fuse_ino_t id, size_t size)
{
	struct fs *fs = fuse_req_userdata(req);
	struct sqk_inode i;
	size_t len = 0;
	char *buf = size ? malloc(size) : NULL;
	int err = size && !buf ? SQK_ENOMEM : from_id(fs, id, &i);
	if (!err)
		err = sqk_xattr_list(fs->img, &i, buf, size, &len);
	if (err == SQK_ETOOBIG) /* as getxattr: a normal probe, not logged */
		fuse_reply_err(req, ERANGE);
	else if (err)
		reply_fail(req, fs, id, "listxattr", err);
	else
		reply_xattr_buf(req, size, buf, len);
	free(buf);
}

static void op_init(void *userdata, struct fuse_conn_info *conn)
{
	/* Large requests: max_write sets max_pages, which also bounds reads. */
	conn->max_write = MAX_IO;
	conn->max_readahead = MAX_IO;
	conn->want &= ~FUSE_CAP_READDIRPLUS_AUTO;
	/* The image never changes: cached pages need no revalidation against attributes. */
	conn->want &= ~FUSE_CAP_AUTO_INVAL_DATA;
	if (conn->capable & FUSE_CAP_READDIRPLUS)
		conn->want |= FUSE_CAP_READDIRPLUS;
	if (conn->capable & FUSE_CAP_CACHE_SYMLINKS)
		conn->want |= FUSE_CAP_CACHE_SYMLINKS;
	if (conn->capable & FUSE_CAP_NO_OPEN_SUPPORT) {
		conn->want |= FUSE_CAP_NO_OPEN_SUPPORT;
		((struct fs *)userdata)->no_open = true;
	}
	pthread_mutex_init(&((struct fs *)userdata)->park_mu, NULL);
	/* the kernel then caches listings (FOPEN_CACHE_DIR) as with opendir's cache_readdir */
	if (conn->capable & FUSE_CAP_NO_OPENDIR_SUPPORT) {
		conn->want |= FUSE_CAP_NO_OPENDIR_SUPPORT;
		((struct fs *)userdata)->no_opendir = true;
	}
}

/* The session ends: the listings parked between readdir calls go. */
static void op_destroy(void *userdata)
{
	struct fs *fs = userdata;
	for (unsigned i = 0; i < SQK_FUSE_PARKED; i++) {
		dirh_free(fs->parked[i]);
		fs->parked[i] = NULL;
	}
	pthread_mutex_destroy(&fs->park_mu);
}

const struct fuse_lowlevel_ops sqkfuse_ops = {
	.init = op_init,
	.destroy = op_destroy,
	.lookup = op_lookup,
	.forget = op_forget,
	.forget_multi = op_forget_multi,
	.getattr = op_getattr,
	.readlink = op_readlink,
	.open = op_open,
	.read = op_read,
	.release = op_release,
	.opendir = op_opendir,
	.readdir = op_readdir,
	.readdirplus = op_readdirplus,
	.releasedir = op_releasedir,
	.statfs = op_statfs,
	.getxattr = op_getxattr,
	.listxattr = op_listxattr,
};
