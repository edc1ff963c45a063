/* sqkfuse: the FUSE 3 low-level front-end on libsqk. The image is immutable, so node ids are
 * inode references (no lookup table to keep), replies carry long timeouts, file pages are kept
 * cached, and directories are read with readdirplus so a tree walk needs no separate lookups.
 * Block caching, readahead and validation are the library's. */
#define FUSE_USE_VERSION 312

#include "fuse/sqkfuse.h"

#include <errno.h>
#include <fcntl.h>
#include <fuse_lowlevel.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "fuse/nodes.h"
#include "fuse/store.h"
#include "fuse/trace.h"
#include "common/parse.h"
#include "common/sigwatch.h"
#include "sqk/sqk.h"

#ifndef SQK_VERSION
#define SQK_VERSION "unknown" /* the Makefile's VERSION, given to this file */
#endif
#define TIMEOUT 86400.0 /* the image never changes */
#define MAX_IO (1u << 20)

struct fs {
	struct sqk_image *img;
	struct sqk_inode root;
	struct sqk_nodes *nodes;
	struct sqk_store *store; /* page-cache fill after small reads; NULL = off */
	struct sqk_trace *trace; /* -o trace: files read, in first-read order; NULL = off */
	unsigned fill;           /* blocks per fill group */
	uint64_t fills;          /* groups stored by the fill thread (for stats=) */
	atomic_uint_fast64_t reads; /* read requests answered */
	const char *image;
	bool foreground;
	bool noprefetch;       /* -o noprefetch: the hint is not fetched after the fork */
	bool no_open;          /* the kernel takes ENOSYS from open as "no open needed" */
	pthread_t opener;      /* the thread that opens the image; only it writes open_msg */
	char open_msg[512];    /* the library's last message on that thread (why an open failed) */
	pthread_key_t buf_key; /* per-thread read buffer */
};

struct dirh {
	pthread_mutex_t mu;
	struct sqk_inode dir;
	struct sqk_dir_iter it;
	off_t pos; /* offset of the next entry the iterator returns */
};

static void logmsg(const struct fs *fs, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void logmsg(const struct fs *fs, const char *fmt, ...)
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

static void lib_log(void *ctx, const char *msg)
{
	struct fs *fs = ctx;

	if (pthread_equal(pthread_self(), fs->opener))
		snprintf(fs->open_msg, sizeof(fs->open_msg), "%s", msg);
	logmsg(fs, "%s", msg);
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
	st->st_blocks = (blkcnt_t)((i->size - (i->sparse < i->size ? i->sparse : i->size) + 511) / 512);
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
		if (sqk_nodes_path(fs->nodes, id, path, sizeof(path)) < 0)
			name_unrecorded(fs, id, path, sizeof(path));
		logmsg(fs, "%s: %s: %s: %s", fs->image, path, what, sqk_strerror(err));
	}
	fuse_reply_err(req, err == SQK_ENOENT ? ENOENT : err == SQK_ETOOBIG ? ERANGE :
			    sqk_to_errno(err) == EIO || err == SQK_ECORRUPT ? EIO : sqk_to_errno(err));
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
	sqk_nodes_add(fs->nodes, e.ino, parent, name, strlen(name));
	if (fuse_reply_entry(req, &e))
		sqk_nodes_forget(fs->nodes, e.ino, 1);
}

static void op_forget(fuse_req_t req, fuse_ino_t id, uint64_t nlookup)
{
	struct fs *fs = fuse_req_userdata(req);
	sqk_nodes_forget(fs->nodes, id, nlookup);
	fuse_reply_none(req);
}

static void op_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets)
{
	struct fs *fs = fuse_req_userdata(req);
	for (size_t i = 0; i < count; i++)
		sqk_nodes_forget(fs->nodes, forgets[i].ino, forgets[i].nlookup);
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
	sqk_trace_read(fs->trace, i->ino, id, fs->nodes);
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
		sqk_store_after_read(fs->store, id, i, (uint64_t)off, (size_t)n);
}

static void op_release(fuse_req_t req, fuse_ino_t id, struct fuse_file_info *fi)
{
	free((void *)(uintptr_t)fi->fh);
	fuse_reply_err(req, 0);
}

static void op_opendir(fuse_req_t req, fuse_ino_t id, struct fuse_file_info *fi)
{
	struct fs *fs = fuse_req_userdata(req);
	struct dirh *h = calloc(1, sizeof(*h));
	int err = h ? from_id(fs, id, &h->dir) : SQK_ENOMEM;
	if (!err && !S_ISDIR(h->dir.mode))
		err = SQK_EINVAL;
	if (!err)
		err = sqk_dir_iter_init(fs->img, &h->dir, &h->it);
	if (err) {
		free(h);
		reply_fail(req, fs, id, "opendir", err);
		return;
	}
	pthread_mutex_init(&h->mu, NULL);
	h->pos = 0;
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

/* Positions the iterator so that the next entry is the one at offset off. */
static int dir_seek(struct fs *fs, struct dirh *h, off_t off)
{
	struct sqk_dirent de;
	if (off < h->pos || h->pos < 2) {
		int err = sqk_dir_iter_init(fs->img, &h->dir, &h->it);
		if (err)
			return err;
		h->pos = 2;
	}
	while (h->pos < off) {
		int r = sqk_dir_iter_next(&h->it, &de);
		if (r <= 0)
			return r;
		h->pos++;
	}
	return 0;
}

static size_t add_entry(fuse_req_t req, struct fs *fs, fuse_ino_t dir_id, bool plus,
			const struct sqk_dirent *de, off_t next, char *buf, size_t cap, int *err)
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
		sqk_nodes_add(fs->nodes, e.ino, dir_id, name, de->name_len);
	return n;
}

static void do_readdir(fuse_req_t req, fuse_ino_t id, size_t size, off_t off,
		       struct fuse_file_info *fi, bool plus)
{
	struct fs *fs = fuse_req_userdata(req);
	struct dirh *h = (struct dirh *)(uintptr_t)fi->fh;
	char *buf = malloc(size);
	size_t used = 0;
	int err = buf ? 0 : SQK_ENOMEM;
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
		struct sqk_dir_iter save = h->it;
		struct sqk_dirent de;
		int r = sqk_dir_iter_next(&h->it, &de);
		if (r <= 0) {
			err = r;
			break;
		}
		size_t n = add_entry(req, fs, id, plus, &de, h->pos + 1, buf + used, size - used,
				     &err);
		if (err || n > size - used) {
			h->it = save; /* not sent: the next call starts with it */
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
	struct dirh *h = (struct dirh *)(uintptr_t)fi->fh;
	pthread_mutex_destroy(&h->mu);
	free(h);
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
}

static const struct fuse_lowlevel_ops ops = {
	.init = op_init,
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

/* ---- command line ---- */

struct opts {
	char *image;
	char *mountpoint; /* as given; mnt_abs is it resolved (the daemon changes to /) */
	char *mnt_abs;
	char *extra;      /* a third argument: a usage error */
	char *subdir;
	char *cache;
	char *stats;
	char *trace;
	int verify, noverify; /* -o verify: the default; -o noverify turns it off */
	int nonopts;
	/* numbers as given, parsed by num_opts() with the project's one number rule */
	char *offset_s, *readahead_s, *threads_s, *fill_s, *retries_s, *timeout_s, *names_s;
	uint64_t offset, readahead, threads, fill, retries, timeout, names;
	/* remote images */
	char *cache_dir, *cache_size, *root_hash, *header_file, *header, *cacert, *s3_endpoint;
	int no_sign_request, noprefetch;
	char *shown;      /* the URL without query or credentials, for messages */
	char *hdr_buf;    /* header_file contents */
	const char *hdrs[64];
	uint8_t root[SQK_INTEG_DIGEST_SIZE];
};

#define OPT(t, p) { t, offsetof(struct opts, p), 1 }
static const struct fuse_opt opt_spec[] = {
	OPT("offset=%s", offset_s),
	OPT("subdir=%s", subdir),
	OPT("cache=%s", cache),
	OPT("readahead=%s", readahead_s),
	OPT("threads=%s", threads_s),
	OPT("fill=%s", fill_s),
	OPT("names=%s", names_s),
	OPT("stats=%s", stats),
	OPT("trace=%s", trace),
	OPT("verify", verify),
	OPT("noverify", noverify),
	OPT("cache_dir=%s", cache_dir),
	OPT("cache_size=%s", cache_size),
	OPT("root_hash=%s", root_hash),
	OPT("retries=%s", retries_s),
	OPT("timeout=%s", timeout_s),
	OPT("header_file=%s", header_file),
	OPT("header=%s", header),
	OPT("cacert=%s", cacert),
	OPT("s3_endpoint=%s", s3_endpoint),
	OPT("no_sign_request", no_sign_request),
	OPT("noprefetch", noprefetch),
	FUSE_OPT_END,
};

/* IMAGE and MOUNTPOINT are taken here, not by libfuse: its check of the mount point fails as a
 * usage error, and a missing mount point is an error (exit 1) like a missing image. */
static int opt_proc(void *data, const char *arg, int key, struct fuse_args *outargs)
{
	struct opts *o = data;
	char **slot = !o->image ? &o->image : !o->mountpoint ? &o->mountpoint : &o->extra;

	if (key != FUSE_OPT_KEY_NONOPT)
		return 1;
	if (!*slot)
		*slot = strdup(arg);
	return 0;
}

static void usage(const char *prog)
{
	printf("usage: %s IMAGE MOUNTPOINT [-f] [-d] [-s] [-o OPTION[,OPTION...]]\n"
	       "\n"
	       "Mounts a SquashFS image read-only.\n"
	       "\n"
	       "  -f                  stay in the foreground\n"
	       "  -d                  debug output (implies -f)\n"
	       "  -s                  single-threaded\n"
	       "  -h, --help          this text\n"
	       "  -V, --version       print the version of sqkfuse and of libfuse\n"
	       "  -o offset=N         the image starts N bytes into IMAGE\n"
	       "  -o subdir=PATH      mount only PATH of the image\n"
	       "  -o cache=SIZE       decompressed block cache (default 64M; K, M, G suffixes;\n"
	       "                      above 0)\n"
	       "  -o readahead=N      sequential readahead, in blocks (default 16; 1 to 4096)\n"
	       "  -o threads=N        decompression threads (default: online CPUs; 1 to 256)\n"
	       "  -o fill=N           after a read smaller than a block, put the rest of the\n"
	       "                      aligned group of N blocks around it into the page cache\n"
	       "                      (default 1, as the kernel does; 0 = off)\n"
	       "  -o names=N          remember the names of at most N nodes, for the paths in\n"
	       "                      log lines (default 65536, a few MiB; 0 = none): a node\n"
	       "                      forgotten is logged as '.../known/part' or 'inode N'\n"
	       "  -o stats=FILE       write block/cache counters as JSON to FILE at unmount\n"
	       "  -o trace=FILE       write the files read to FILE at unmount, in the order of\n"
	       "                      their first read, one path a line relative to the image\n"
	       "                      root (also with subdir=), bytes other than printable ASCII\n"
	       "                      and '\\' as \\xHH: input for sqk mkimage --order\n"
	       "  -o noverify         do not check reads against the image's integrity data (by\n"
	       "                      default every byte read is, when the image has it: a\n"
	       "                      mismatch gives EIO and one log line; remote images are\n"
	       "                      always checked); -o verify: the default\n"
	       "  -o root_hash=HEX    refuse an image whose integrity root digest is not HEX\n"
	       "Remote images (IMAGE is an http://, https:// or s3:// URL, fetched lazily with\n"
	       "range requests, every chunk checked against its SHA-256 when the image has integrity\n"
	       "data):\n"
	       "  -o cache_dir=DIR    on-disk chunk cache (default $XDG_CACHE_HOME/squashkit)\n"
	       "  -o cache_size=SIZE  bound of the on-disk cache (default 1G; 0 = none)\n"
	       "  -o retries=N        retries of a failed request (default 4)\n"
	       "  -o timeout=SEC      a request without progress for SEC seconds fails (30)\n"
	       "  -o header_file=F    send the 'Name: value' headers of F (one per line) with\n"
	       "                      every request; -o header=H for one without commas. Secrets\n"
	       "                      belong in a file: command lines are visible to all users\n"
	       "  -o cacert=FILE      trust the CAs in FILE (PEM) for https\n"
	       "  -o noprefetch       do not fetch the image's prefetch hint ranges at open\n"
	       "  -o s3_endpoint=URL  the endpoint of s3:// images (default $AWS_ENDPOINT_URL_S3,\n"
	       "                      $AWS_ENDPOINT_URL, else AWS)\n"
	       "  -o no_sign_request  s3:// images: unsigned requests (public buckets)\n"
	       "  -o max_threads=N    at most N threads answering requests (libfuse; default 10)\n"
	       "  -o allow_other, default_permissions, ... : standard FUSE mount options\n"
	       "\n"
	       "Unmount with `sqk umount MOUNTPOINT`, `fusermount3 -u MOUNTPOINT` or `umount\n"
	       "MOUNTPOINT`; SIGINT and SIGTERM unmount too. In /etc/fstab (through mount.fuse3):\n"
	       "  /path/image.sqsh /mnt/point fuse.sqkfuse ro,allow_other 0 0\n"
	       "Exit status: 0 after unmount; 1 on errors reported before detaching (the image\n"
	       "cannot be opened, the mount point is missing or not a directory, the mount\n"
	       "fails); 2 usage (a missing argument, an unknown option, a value out of range).\n",
	       prog);
}

static void version(const char *prog)
{
	printf("%s %s\nFUSE library version %s\n",
	       strcmp(prog, "sqk mount") ? "sqkfuse" : "sqk mount", SQK_VERSION, fuse_pkgversion());
}

/* Options naming a file, a path or an endpoint: an empty value means nothing. */
static int empty_opts(const struct opts *o, const char *prog)
{
	const struct {
		const char *name, *val;
	} v[] = {
		{ "subdir", o->subdir },	   { "stats", o->stats },
		{ "trace", o->trace },		   { "cache_dir", o->cache_dir },
		{ "header_file", o->header_file }, { "cacert", o->cacert },
		{ "s3_endpoint", o->s3_endpoint },
	};
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		if (v[i].val && !v[i].val[0]) {
			fprintf(stderr, "%s: invalid %s= (needs a value)\n", prog, v[i].name);
			return -1;
		}
	}
	return 0;
}

/* The numeric options, each checked against its range; prints what is wrong. */
static int num_opts(struct opts *o, const char *prog)
{
	const struct {
		const char *name, *val;
		uint64_t *out, def, min, max;
	} n[] = {
		{ "offset", o->offset_s, &o->offset, 0, 0, INT64_MAX },
		{ "readahead", o->readahead_s, &o->readahead, 0, 1, 4096 },
		{ "threads", o->threads_s, &o->threads, 0, 1, 256 },
		{ "fill", o->fill_s, &o->fill, 1, 0, 64 },
		{ "names", o->names_s, &o->names, SQK_NODES_DEFAULT_MAX, 0, UINT32_MAX },
		{ "retries", o->retries_s, &o->retries, SQK_HTTP_RETRIES_DEFAULT, 0, 100 },
		{ "timeout", o->timeout_s, &o->timeout, SQK_HTTP_TIMEOUT_DEFAULT, 1, 3600 },
	};
	for (size_t i = 0; i < sizeof(n) / sizeof(n[0]); i++) {
		*n[i].out = n[i].def;
		if (!n[i].val)
			continue;
		if (sqk_parse_u64(n[i].val, n[i].max, n[i].out) || *n[i].out < n[i].min) {
			fprintf(stderr, "%s: invalid %s=%s (a decimal number, %llu to %llu)\n", prog,
				n[i].name, n[i].val, (unsigned long long)n[i].min,
				(unsigned long long)n[i].max);
			return -1;
		}
	}
	return 0;
}

static int parse_size(const char *s, size_t *out)
{
	uint64_t v;
	if (sqk_parse_size(s, SIZE_MAX, &v))
		return -1;
	*out = (size_t)v;
	return 0;
}

/* Ends the stats object: the transfer and disk-cache counters of a remote image. */
static void write_http_stats(struct fs *fs, FILE *f)
{
	struct sqk_http_stats h;

	if (!sqk_image_http_stats(fs->img, &h))
		fprintf(f, ", \"http_requests\": %llu, \"http_bytes\": %llu, "
			   "\"http_bytes_unused\": %llu, \"http_retries\": %llu, "
			   "\"disk_cache_hits\": %llu, \"disk_cache_misses\": %llu, "
			   "\"corrupt_chunks\": %llu",
			(unsigned long long)h.requests, (unsigned long long)h.bytes,
			(unsigned long long)h.bytes_unused, (unsigned long long)h.retries,
			(unsigned long long)h.disk_hits, (unsigned long long)h.disk_misses,
			(unsigned long long)h.corrupt);
	fputs("}\n", f);
}

static int write_stats(struct fs *fs, const char *path)
{
	struct sqk_stats s;
	sqk_image_stats(fs->img, &s);
	FILE *f = fopen(path, "w");
	if (!f)
		return -1;
	fprintf(f, "{\"data_blocks_decompressed\": %llu, \"fragment_blocks_decompressed\": %llu, "
		   "\"metadata_blocks_decompressed\": %llu, \"cache_hits\": %llu, "
		   "\"cache_misses\": %llu, \"bytes_read_from_image\": %llu, "
		   "\"readahead_batches\": %llu, \"read_requests\": %llu, "
		   "\"page_cache_fills\": %llu, \"node_names\": %llu",
		(unsigned long long)s.data_blocks_decompressed,
		(unsigned long long)s.fragment_blocks_decompressed,
		(unsigned long long)s.metadata_blocks_decompressed,
		(unsigned long long)s.cache_hits, (unsigned long long)s.cache_misses,
		(unsigned long long)s.bytes_read, (unsigned long long)s.readahead_batches,
		(unsigned long long)atomic_load(&fs->reads), (unsigned long long)fs->fills,
		(unsigned long long)sqk_nodes_count(fs->nodes));
	write_http_stats(fs, f);
	return fclose(f) ? -1 : 0;
}

/* Reads the header file: one "Name: value" per line (empty lines and '#' comments skipped). */
static int read_headers(struct opts *o, struct sqk_http_opts *ho, const char *prog)
{
	size_t n = ho->nheaders;
	int rc = sqk_http_header_file(o->header_file, &o->hdr_buf, o->hdrs,
				      sizeof(o->hdrs) / sizeof(o->hdrs[0]), &n);

	if (rc == 0 && !o->hdr_buf[0]) /* the text of an empty file: nothing to send */
		rc = SQK_EIO, errno = ENODATA;
	if (rc == SQK_EIO)
		fprintf(stderr, "%s: cannot read header_file '%s': %s\n", prog, o->header_file,
			errno == ENODATA ? "empty or unreadable" : strerror(errno));
	else if (rc)
		fprintf(stderr, "%s: header_file '%s': bad or too many headers (need 'Name: value' "
			"lines)\n", prog, o->header_file);
	if (rc)
		return -1;
	ho->nheaders = n;
	return 0;
}

/* The remote-image options into *ho; prints what is wrong. */
static int remote_opts(struct opts *o, struct sqk_http_opts *ho, const char *prog)
{
	size_t size;

	ho->cache_dir = o->cache_dir;
	ho->ca_file = o->cacert;
	ho->s3_endpoint = o->s3_endpoint;
	ho->no_sign_request = o->no_sign_request != 0;
	if (o->cache_size && parse_size(o->cache_size, &size)) {
		fprintf(stderr, "%s: invalid cache_size '%s'\n", prog, o->cache_size);
		return -1;
	}
	ho->cache_size_set = o->cache_size != NULL;
	ho->cache_size = o->cache_size ? size : 0;
	ho->retries_set = true;
	ho->retries = (unsigned)o->retries;
	ho->timeout_s = (unsigned)o->timeout;
	if (o->root_hash && sqk_integ_parse_hex(o->root_hash, o->root)) {
		fprintf(stderr, "%s: invalid root_hash (64 hex digits)\n", prog);
		return -1;
	}
	ho->headers = o->hdrs;
	if (o->header) {
		if (sqk_http_header_check(o->header)) {
			fprintf(stderr, "%s: bad header option: need 'Name: value'\n", prog);
			return -1;
		}
		o->hdrs[ho->nheaders++] = o->header;
	}
	return o->header_file ? read_headers(o, ho, prog) : 0;
}

/* Opens the image and the mounted root; errors are printed (we have not detached yet). */
static int open_image(struct fs *fs, struct opts *o, const char *prog)
{
	struct sqk_open_opts so = { .offset = o->offset, .readahead_blocks = (unsigned)o->readahead,
				    .threads = (unsigned)o->threads, .log = lib_log, .log_ctx = fs,
				    .no_verify = o->noverify != 0, .no_prefetch = true };
	if (o->cache && (parse_size(o->cache, &so.cache_bytes) || !so.cache_bytes)) {
		/* 0 would silently be the default: refused */
		fprintf(stderr, "%s: invalid cache=%s (a size above 0, K, M, G suffixes)\n", prog,
			o->cache);
		return 2;
	}
	struct sqk_http_opts ho = { 0 };
	if (remote_opts(o, &ho, prog))
		return 2;
	so.http = &ho;
	fs->noprefetch = o->noprefetch != 0; /* the prefetch starts after the fork (serve) */
	so.root_hash = o->root_hash ? o->root : NULL; /* parsed by remote_opts */
	fs->opener = pthread_self();
	int err = sqk_image_open(o->image, &so, &fs->img);
	bool open_failed = err != 0;
	if (!err)
		err = o->subdir ? sqk_lookup_path(fs->img, o->subdir, &fs->root)
				: sqk_image_root(fs->img, &fs->root);
	if (!err && !S_ISDIR(fs->root.mode))
		err = SQK_EINVAL;
	if (err) {
		/* in the background the library's reason went to syslog only */
		if (open_failed && !fs->foreground && fs->open_msg[0])
			fprintf(stderr, "%s: %s\n", prog, fs->open_msg);
		if (!open_failed || !sqk_err_not_image(err)) /* those: the library's line is all */
			fprintf(stderr, "%s: %s%s%s: %s\n", prog, o->shown ? o->shown : o->image,
				o->subdir ? ": " : "", o->subdir ? o->subdir : "",
				sqk_strerror(err));
		return 1;
	}
	if (o->verify && !o->noverify && !sqk_image_verified(fs->img))
		fprintf(stderr, "%s: %s: no integrity data; reads are not verified\n", prog,
			o->shown ? o->shown : o->image);
	return 0;
}

/* Prepares -o trace=FILE: a path that cannot be written fails the mount now, naming it. */
static int open_trace(struct fs *fs, const struct opts *o, const char *prog)
{
	char why[640];
	int err = sqk_trace_create(o->trace, o->subdir, why, sizeof(why), &fs->trace);
	if (err && why[0])
		fprintf(stderr, "%s: -o trace: %s\n", prog, why);
	else if (err)
		fprintf(stderr, "%s: cannot write the trace to '%s': %s\n", prog, o->trace,
			err == SQK_EIO ? strerror(errno) : sqk_strerror(err));
	return err ? 1 : 0;
}

/* At unmount: names the files read whose names the node table had lost, writes the trace. */
static int finish_trace(struct fs *fs, const char *path)
{
	size_t unnamed;
	int err = sqk_trace_resolve(fs->trace, fs->img, &fs->root, &unnamed);
	if (err || unnamed)
		logmsg(fs, "trace '%s': %zu of the files read left out: no name found in %s%s%s",
		       path, unnamed, fs->image, err ? ": " : "", err ? sqk_strerror(err) : "");
	if (sqk_trace_lost(fs->trace))
		logmsg(fs, "trace '%s': %zu of the files read left out: out of memory", path,
		       sqk_trace_lost(fs->trace));
	err = sqk_trace_write(fs->trace);
	if (err) {
		logmsg(fs, "cannot write the trace to '%s': %s", path,
		       err == SQK_EIO ? strerror(errno) : sqk_strerror(err));
		return 1;
	}
	return 0;
}

/* Checks MOUNTPOINT, a directory, and resolves it into o->mnt_abs (the daemon changes to /);
 * /dev/fd/N, a /dev/fuse descriptor a privileged parent opened, is left to libfuse. Returns 0,
 * 1 (missing or not a directory, as a missing image) or 2 (none given). */
static int check_mountpoint(struct opts *o, const char *prog)
{
	const char *mp = o->mountpoint;
	struct stat st;
	unsigned fd;
	char c;

	if (!mp) {
		fprintf(stderr, "%s: no mount point given (try --help)\n", prog);
		return 2;
	}
	if (sscanf(mp, "/dev/fd/%u%c", &fd, &c) == 1) {
		o->mnt_abs = strdup(mp);
		return o->mnt_abs ? 0 : 1;
	}
	errno = 0;
	if (stat(mp, &st) || !S_ISDIR(st.st_mode) || !(o->mnt_abs = realpath(mp, NULL))) {
		fprintf(stderr, "%s: bad mount point '%s': %s\n", prog, mp,
			errno ? strerror(errno) : "not a directory");
		return 1;
	}
	return 0;
}

static int absolutize(char **path)
{
	char cwd[4096];
	if (!getcwd(cwd, sizeof(cwd)))
		return -1;
	size_t len = strlen(cwd) + strlen(*path) + 2;
	char *abs = malloc(len);
	if (!abs)
		return -1;
	snprintf(abs, len, "%s/%s", cwd, *path);
	free(*path);
	*path = abs;
	return 0;
}

static void buf_free(void *p)
{
	free(p);
}

static int run_loop(struct fuse_session *se, const struct fuse_cmdline_opts *cmd)
{
	if (cmd->singlethread)
		return fuse_session_loop(se);
	struct fuse_loop_config *cfg = fuse_loop_cfg_create();
	if (!cfg)
		return -1;
	fuse_loop_cfg_set_clone_fd(cfg, (unsigned)cmd->clone_fd);
	if (cmd->max_idle_threads != UINT_MAX) /* UINT_MAX: not given, libfuse's default */
		fuse_loop_cfg_set_idle_threads(cfg, cmd->max_idle_threads);
	fuse_loop_cfg_set_max_threads(cfg, cmd->max_threads);
	int ret = fuse_session_loop_mt(se, cfg);
	fuse_loop_cfg_destroy(cfg);
	return ret;
}

/* Shutdown on SIGINT/SIGTERM/SIGHUP, on the signal thread: page-cache fills are finished first,
 * while the loop still answers the reads whose pages they may wait for; then the loop is ended
 * and its main thread woken (SIGUSR1, a no-op handler) until it has returned. */
struct shutdown {
	struct fs *fs;
	struct fuse_session *se;
	pthread_t main;
	atomic_bool loop_done;
};

static void wake(int sig)
{
	(void)sig;
}

static void on_signal(void *ctx, int sig)
{
	struct shutdown *sd = ctx;
	const struct timespec pause = { 0, 20 * 1000 * 1000 };
	sqk_image_cancel(sd->fs->img); /* reads waiting on a hung server fail now */
	sqk_store_stop(__atomic_load_n(&sd->fs->store, __ATOMIC_ACQUIRE));
	fuse_session_exit(sd->se);
	while (!atomic_load(&sd->loop_done)) {
		pthread_kill(sd->main, SIGUSR1);
		nanosleep(&pause, NULL);
	}
}

/* Runs the session loop with the signal thread and the page-cache fill thread around it. */
static int serve_loop(struct fs *fs, struct fuse_session *se, const struct fuse_cmdline_opts *cmd)
{
	struct shutdown sd = { .fs = fs, .se = se, .main = pthread_self() };
	struct sigaction sa = { .sa_handler = wake }; /* no SA_RESTART: interrupts the loop's wait */
	struct sqk_sigwatch sw;
	int ret;
	atomic_init(&sd.loop_done, false);
	sigaction(SIGUSR1, &sa, NULL);
	if (sqk_sigwatch_start(&sw, on_signal, &sd)) {
		logmsg(fs, "cannot start the signal thread");
		return 1;
	}
	/* the signal thread first (every later thread inherits its blocked signals); it reads
	 * fs->store, published atomically */
	struct sqk_store *st = NULL;
	if (sqk_store_start(fs->img, se, fs->fill, &st))
		logmsg(fs, "page-cache fill off: out of memory");
	__atomic_store_n(&fs->store, st, __ATOMIC_RELEASE);
	/* A signal ends the loop with 0 (or its number): a clean unmount. */
	ret = run_loop(se, cmd) < 0 ? 1 : 0;
	atomic_store(&sd.loop_done, true);
	sqk_sigwatch_stop(&sw);
	fs->fills = sqk_store_destroy(fs->store); /* the connection is gone or the fills stopped */
	fs->store = NULL;
	return ret;
}

/* Mounts se (made before the image was opened) on mnt and serves until unmounted or
 * signalled; the caller destroys se. */
static int serve(struct fs *fs, struct fuse_session *se, const struct fuse_cmdline_opts *cmd,
		 const char *mnt, const char *prog)
{
	int ret = 1;
	if (fuse_set_signal_handlers(se)) /* until the signal thread runs */
		return 1;
	if (fuse_session_mount(se, mnt)) {
		fprintf(stderr, "%s: cannot mount on '%s'\n", prog, mnt);
		goto out_handlers;
	}
	fs->foreground = cmd->foreground;
	if (!cmd->foreground)
		openlog("sqkfuse", LOG_PID, LOG_DAEMON);
	sqk_image_quiesce(fs->img);
	fuse_daemonize(cmd->foreground); /* threads start after the fork */
	if (!fs->noprefetch)
		sqk_image_prefetch(fs->img); /* after the fork: not cut off by the quiesce */
	ret = serve_loop(fs, se, cmd);
	fuse_session_unmount(se);
out_handlers:
	fuse_remove_signal_handlers(se);
	return ret;
}

int sqk_fuse_main(int argc, char **argv)
{
	struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
	struct fuse_cmdline_opts cmd = { 0 };
	struct opts o = { 0 };
	struct fs fs = { 0 };
	struct fuse_session *se = NULL;
	const char *prog = argv[0];
	int ret = 2;
	if (fuse_opt_parse(&args, &o, opt_spec, opt_proc) || fuse_parse_cmdline(&args, &cmd))
		goto out;
	if (cmd.show_help || cmd.show_version) {
		if (cmd.show_help)
			usage(prog);
		else
			version(prog);
		ret = 0;
		goto out;
	}
	if (!o.image) {
		fprintf(stderr, "%s: no image given (try --help)\n", prog);
		goto out;
	}
	if (o.extra) {
		fprintf(stderr, "%s: unexpected argument '%s' (IMAGE MOUNTPOINT, then options; "
			"try --help)\n", prog, o.extra);
		goto out;
	}
	if (!cmd.singlethread && cmd.max_threads == 0) { /* libfuse would take it as its default */
		fprintf(stderr, "%s: invalid max_threads=0 (at least 1; -s for one thread)\n", prog);
		goto out;
	}
	if (empty_opts(&o, prog))
		goto out;
	/* The daemon changes to /, so relative paths are resolved now. */
	if (sqk_is_url(o.image))
		o.shown = sqk_url_display(o.image);
	if ((o.stats && o.stats[0] != '/' && absolutize(&o.stats)) ||
	    (o.trace && o.trace[0] != '/' && absolutize(&o.trace)) ||
	    (o.cache_dir && o.cache_dir[0] != '/' && absolutize(&o.cache_dir)) ||
	    (o.cacert && o.cacert[0] != '/' && absolutize(&o.cacert))) {
		ret = 1;
		goto out;
	}
	if (num_opts(&o, prog))
		goto out;
	/* Read-only always; permissions checked by the kernel against the image's modes. The
	 * session is made now, so that an option libfuse rejects is a usage error found before
	 * the image (perhaps remote) is opened; libfuse prints which. */
	if (fuse_opt_add_arg(&args, "-oro,default_permissions,subtype=sqkfuse")) {
		ret = 1;
		goto out;
	}
	se = fuse_session_new(&args, &ops, sizeof(ops), &fs);
	if (!se)
		goto out;
	fs.fill = (unsigned)o.fill;
	ret = check_mountpoint(&o, prog);
	fs.foreground = cmd.foreground; /* messages at open (e.g. no integrity data) */
	if (!ret && o.trace)
		ret = open_trace(&fs, &o, prog);
	if (!ret)
		ret = open_image(&fs, &o, prog);
	if (!ret && fs.trace && sqk_trace_size(fs.trace, sqk_image_super(fs.img)->inode_count)) {
		fprintf(stderr, "%s: trace '%s': %s\n", prog, o.trace, sqk_strerror(SQK_ENOMEM));
		ret = 1;
	}
	if (!ret && (sqk_nodes_create((size_t)o.names, &fs.nodes) || pthread_key_create(&fs.buf_key, buf_free)))
		ret = 1;
	fs.image = o.shown ? o.shown : o.image;
	if (!ret)
		ret = serve(&fs, se, &cmd, o.mnt_abs, prog);
	if (!ret && o.stats && write_stats(&fs, o.stats))
		fprintf(stderr, "%s: cannot write stats to '%s': %s\n", prog, o.stats,
			strerror(errno));
	if (!ret && fs.trace)
		ret = finish_trace(&fs, o.trace);
	sqk_trace_destroy(fs.trace);
	sqk_nodes_destroy(fs.nodes);
	sqk_image_close(fs.img);
out:
	if (se)
		fuse_session_destroy(se);
	free(cmd.mountpoint);
	free(o.image);
	free(o.mountpoint);
	free(o.mnt_abs);
	free(o.extra);
	free(o.subdir);
	free(o.cache);
	free(o.stats);
	free(o.cache_dir);
	free(o.cache_size);
	free(o.root_hash);
	free(o.header_file);
	free(o.header);
	free(o.cacert);
	free(o.s3_endpoint);
	free(o.trace);
	free(o.offset_s);
	free(o.readahead_s);
	free(o.threads_s);
	free(o.fill_s);
	free(o.names_s);
	free(o.retries_s);
	free(o.timeout_s);
	free(o.shown);
	free(o.hdr_buf);
	fuse_opt_free_args(&args);
	return ret;
}
