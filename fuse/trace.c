/* SPDX-License-Identifier: BSD-2-Clause */
/* The read trace (trace.h). First reads are told apart by a bitmap over inode numbers, so a file
 * read again costs one relaxed atomic load; a first read appends (inode number, path or none) to
 * a list under one mutex, the path bytes in one growing arena. At unmount the files without a
 * path are named by one walk of the mounted tree (libsqk's walk: no recursion, each directory
 * entered once, so a corrupt image with a directory loop ends), which needs a sorted array of
 * just those inode numbers: the bitmap, no longer needed for reads, marks them. The file is a
 * temporary created at mount time and renamed into place at the end. */
#include "fuse/trace.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sqk/error.h"
#include "common/bytes.h"
#include "common/grow.h"
#include "cli/lib/outfile.h"

#define NO_PATH UINT64_MAX
#define PATH_BUF 4096 /* a path from the node table; a longer one is named by the walk */

struct rec {
	uint32_t ino;
	uint32_t len;     /* path bytes */
	uint64_t off;     /* of the path in the arena; NO_PATH = not named yet */
};

struct trace {
	_Atomic uint64_t *bits; /* bit ino - 1: read already (during the walk: wanted, or walked) */
	uint32_t inode_count;
	pthread_mutex_t mu;     /* recs, names and lost while the session runs */
	struct rec *recs;       /* in first-read order */
	size_t nrecs, rcap;
	char *names;            /* path bytes, relative to the mounted directory, no leading '/' */
	size_t nlen, ncap;
	size_t lost;            /* first reads not recorded: out of memory */
	char *path;             /* the trace file */
	char *prefix;           /* the mounted directory's path in the image ("" = the root) */
	char *tmp_prefix;       /* of the temporary's name: "<name of path>.tmp" */
	struct outfile out;
};

/* Copies len bytes of name into the arena as r's path; false without memory (r unchanged). */
static bool put_name(struct trace *t, const char *name, size_t len, struct rec *r)
{
	if (len > UINT32_MAX || mem_grow(&t->names, &t->ncap, t->nlen + len, 1, 0))
		return false;
	memcpy(t->names + t->nlen, name, len);
	r->off = t->nlen;
	r->len = (uint32_t)len;
	t->nlen += len;
	return true;
}

/* subdir as sqk_lookup_path resolved it: "." dropped, ".." taking the last component off (each
 * component was a directory, and a directory has one path), no leading, trailing or double '/'. */
static char *canonical(const char *subdir)
{
	char *out = malloc(strlen(subdir) + 1);
	size_t len = 0;
	if (!out)
		return NULL;
	for (const char *p = subdir; *p;) {
		while (*p == '/')
			p++;
		size_t n = strcspn(p, "/");
		if (n == 2 && p[0] == '.' && p[1] == '.') {
			while (len && out[len - 1] != '/')
				len--;
			len -= len != 0;
		} else if (n && !(n == 1 && p[0] == '.')) {
			if (len)
				out[len++] = '/';
			memcpy(out + len, p, n);
			len += n;
		}
		p += n;
	}
	out[len] = 0;
	return out;
}

/* The name of the temporary: "<last component of path>.tmp" (then "-XXXXXX" from outfile). */
static char *tmp_prefix(const char *path)
{
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	size_t len = strlen(base) + 5;
	char *s = malloc(len);
	if (s)
		snprintf(s, len, "%s.tmp", base);
	return s;
}

/* Refuses a path naming a directory (a rename at unmount would fail) before any temporary. */
/* A trace replaces an earlier trace or any regular file, as `>` would; a device, FIFO,
 * socket, directory or dangling symlink is refused (common/outfile.h). */
static bool any_file(const uint8_t *head, size_t len)
{
	(void)head;
	(void)len;
	return true;
}

static const struct outfile_kind trace_kind = { "a trace", any_file, false };

int trace_create(const char *path, const char *subdir, char *why, size_t whylen,
		     struct trace **out)
{
	struct trace *t = calloc(1, sizeof(*t));
	if (why && whylen)
		why[0] = '\0';
	if (!t)
		return SQK_ENOMEM;
	t->out.fd = -1;
	pthread_mutex_init(&t->mu, NULL);
	t->path = strdup(path);
	t->prefix = canonical(subdir ? subdir : "");
	t->tmp_prefix = tmp_prefix(path);
	if (!t->path || !t->prefix || !t->tmp_prefix) {
		trace_destroy(t);
		return SQK_ENOMEM;
	}
	if (outfile_create(&t->out, path, &trace_kind, false, t->tmp_prefix, why, whylen)) {
		int e = errno;
		trace_destroy(t);
		errno = e;
		return e == ENOMEM ? SQK_ENOMEM : SQK_EIO;
	}
	*out = t;
	return 0;
}

int trace_size(struct trace *t, uint32_t inode_count)
{
	size_t words = ((size_t)inode_count + 63) / 64;
	/* calloc'ed zero pages: a large image costs memory only where inode numbers are read */
	t->bits = calloc(words ? words : 1, sizeof(*t->bits));
	if (!t->bits)
		return SQK_ENOMEM;
	t->inode_count = inode_count;
	return 0;
}

/* The first read of ino: appends it with its whole path from the node table, if it has one. */
static void record(struct trace *t, uint32_t ino, uint64_t id, struct nodes *nodes)
{
	char path[PATH_BUF];
	/* built before the lock: it takes the node table's own locks */
	int whole = nodes && nodes_path(nodes, id, path, sizeof(path)) == 0 && path[1];
	struct rec r = { .ino = ino, .off = NO_PATH };
	pthread_mutex_lock(&t->mu);
	if (whole)
		put_name(t, path + 1, strlen(path + 1), &r); /* no memory: the walk names it */
	if (!mem_grow(&t->recs, &t->rcap, t->nrecs + 1, sizeof(*t->recs), 0))
		t->recs[t->nrecs++] = r;
	else
		t->lost++;
	pthread_mutex_unlock(&t->mu);
}

void trace_read(struct trace *t, uint32_t ino, uint64_t id, struct nodes *nodes)
{
	if (!t || !ino || ino > t->inode_count)
		return;
	_Atomic uint64_t *w = &t->bits[(ino - 1) / 64];
	uint64_t m = (uint64_t)1 << ((ino - 1) % 64);
	/* the hot path: a file read before is one load, no write to a shared cache line */
	if (atomic_load_explicit(w, memory_order_relaxed) & m)
		return;
	if (atomic_fetch_or_explicit(w, m, memory_order_relaxed) & m)
		return; /* another thread's read was first */
	record(t, ino, id, nodes);
}

size_t trace_lost(const struct trace *t)
{
	return t->lost;
}

/* ---- naming the files read without a known path: one walk of the mounted tree ---- */

struct want {
	uint32_t ino;
	size_t rec; /* its index in recs */
};

struct walk {
	struct trace *t;
	struct sqk_image *img;
	struct want *want; /* sorted by inode number */
	size_t nwant, left;
	int err; /* the first error met; the walk goes on past it */
};

static int want_cmp(const void *a, const void *b)
{
	uint32_t x = ((const struct want *)a)->ino, y = ((const struct want *)b)->ino;
	return x < y ? -1 : x > y;
}

/* Sets ino's bit; returns whether it was set before (an ino outside the image counts as set). */
static bool test_and_set(struct trace *t, uint32_t ino)
{
	if (!ino || ino > t->inode_count)
		return true;
	_Atomic uint64_t *w = &t->bits[(ino - 1) / 64];
	uint64_t m = (uint64_t)1 << ((ino - 1) % 64);
	return atomic_fetch_or_explicit(w, m, memory_order_relaxed) & m;
}

static bool test_bit(struct trace *t, uint32_t ino)
{
	return ino && ino <= t->inode_count &&
	       (atomic_load_explicit(&t->bits[(ino - 1) / 64], memory_order_relaxed) >>
		((ino - 1) % 64) & 1);
}

/* Names the recorded file e (an entry of the walk) if it is still unnamed. */
static int name_file(struct walk *w, const struct sqk_walk_entry *e)
{
	uint32_t ino = e->dirent.ino;
	struct want key = { .ino = ino };
	struct want *f = bsearch(&key, w->want, w->nwant, sizeof(*w->want), want_cmp);
	if (!f)
		return 0; /* a corrupt image's bit */
	if (!put_name(w->t, e->path, e->path_len, &w->t->recs[f->rec]))
		return SQK_ENOMEM;
	atomic_fetch_and_explicit(&w->t->bits[(ino - 1) / 64], ~((uint64_t)1 << ((ino - 1) % 64)),
				  memory_order_relaxed);
	w->left--;
	return 0;
}

/* Walks the tree from root (libsqk's walk, each directory once) in directory order until every
 * wanted file has a name. */
static void walk_tree(struct walk *w, const struct sqk_inode *root)
{
	struct sqk_walk_entry e;
	struct sqk_walk *wk;
	int r = sqk_walk_open(w->img, root, SQK_WALK_ONCE, SQK_WALK_MAX_DEPTH, &wk);

	if (r) {
		w->err = r;
		return;
	}
	while (w->left && (r = sqk_walk_next(wk, &e)) != 0) {
		if (r > 0 && e.depth && e.dirent.type != SQK_T_DIR && test_bit(w->t, e.dirent.ino))
			r = name_file(w, &e);
		else if (r > 0)
			r = 0;
		w->err = w->err ? w->err : r; /* a part that fails is skipped */
		if (r == SQK_ENOMEM || e.event == SQK_WALK_ERR_FATAL)
			break;
	}
	sqk_walk_close(wk);
}

int trace_resolve(struct trace *t, struct sqk_image *img, const struct sqk_inode *root,
		      size_t *unnamed)
{
	struct walk w = { .t = t, .img = img };
	for (size_t i = 0; i < t->nrecs; i++)
		w.nwant += t->recs[i].off == NO_PATH;
	*unnamed = w.nwant;
	if (!w.nwant)
		return 0;
	if (!(w.want = malloc(w.nwant * sizeof(*w.want))))
		return SQK_ENOMEM;
	/* the read flags are done with: from here a bit is a file wanted */
	memset(t->bits, 0, ((size_t)t->inode_count + 63) / 64 * sizeof(*t->bits));
	for (size_t i = 0, k = 0; i < t->nrecs; i++)
		if (t->recs[i].off == NO_PATH) {
			w.want[k++] = (struct want){ .ino = t->recs[i].ino, .rec = i };
			test_and_set(t, t->recs[i].ino);
		}
	qsort(w.want, w.nwant, sizeof(*w.want), want_cmp);
	w.left = w.nwant;
	walk_tree(&w, root);
	*unnamed = w.left;
	free(w.want);
	return w.err;
}

/* ---- writing ---- */

struct wbuf {
	int fd;
	size_t len;
	bool failed; /* errno tells why */
	char buf[1 << 16];
};

static void flush(struct wbuf *b)
{
	for (size_t done = 0; !b->failed && done < b->len;) {
		ssize_t n = write(b->fd, b->buf + done, b->len - done);
		if (n < 0 && errno != EINTR)
			b->failed = true;
		else if (n > 0)
			done += (size_t)n;
	}
	b->len = 0;
}

/* Appends s (len bytes), printable ASCII but '\' as is, every other byte as \xHH. */
static void put_escaped(struct wbuf *b, const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		if (b->len + 4 > sizeof(b->buf))
			flush(b);
		if (c >= 0x20 && c <= 0x7e && c != '\\') {
			b->buf[b->len++] = (char)c;
		} else {
			memcpy(b->buf + b->len, "\\x", 2);
			bytes_hex(&c, 1, b->buf + b->len + 2);
			b->len += 4;
		}
	}
}

static void put_line(struct wbuf *b, const struct trace *t, const struct rec *r)
{
	if (t->prefix[0]) {
		put_escaped(b, t->prefix, strlen(t->prefix));
		put_escaped(b, "/", 1);
	}
	put_escaped(b, t->names + r->off, r->len);
	if (b->len + 1 > sizeof(b->buf))
		flush(b);
	b->buf[b->len++] = '\n';
}

int trace_write(struct trace *t)
{
	struct wbuf *b = malloc(sizeof(*b));
	if (!b)
		return SQK_ENOMEM;
	b->fd = t->out.fd;
	b->len = 0;
	b->failed = false;
	for (size_t i = 0; i < t->nrecs; i++)
		if (t->recs[i].off != NO_PATH)
			put_line(b, t, &t->recs[i]);
	flush(b);
	bool failed = b->failed || fsync(t->out.fd) || outfile_commit(&t->out, NULL);
	free(b);
	if (failed) {
		int e = errno;
		outfile_abort(&t->out);
		errno = e;
		return SQK_EIO;
	}
	return 0;
}

void trace_destroy(struct trace *t)
{
	if (!t)
		return;
	outfile_abort(&t->out); /* nothing left to do once committed */
	pthread_mutex_destroy(&t->mu);
	free(t->bits);
	free(t->recs);
	free(t->names);
	free(t->path);
	free(t->prefix);
	free(t->tmp_prefix);
	free(t);
}
