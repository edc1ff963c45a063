/* SPDX-License-Identifier: BSD-2-Clause */
/* The read-ahead scout of a cold directory walk (see prefetch.h), started by a run of the
 * walk's page-cache misses. Its lister thread walks the roots depth first in the walk's order,
 * skipping what the walk has passed, and queues each regular file ahead in a ring; a few opener
 * threads take the queued files in order and open each, stat it, ask the kernel for its first
 * bytes (POSIX_FADV_WILLNEED starts the reads and returns) and list its xattrs, so that on a file
 * system where each of those is a round trip (FUSE, network file systems) several are in flight
 * at once. The ring holds each file until the walk reaches it, which keeps the bytes and files
 * ahead of the walk within the window. */
#include "prefetch.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "common/format.h"

/* Deeper directories are left to the walk (each level holds a descriptor open). */
#define SCOUT_DEPTH 64

/* Opener threads: round trips of open, stat, xattr and directory listing in flight at once
 * (on a file system where each request waits for a round trip, 8 were faster than 4). */
#define SCOUT_OPENERS 8
/* Bytes counted for a queued file until an opener learns its size. */
#define SCOUT_GUESS (64u << 10)
/* Larger xattr listings (names and values) are left to the walk. */
#define SCOUT_XATTRS_MAX (64u << 10)

/* Directory listings queued or kept, at most, and bytes of their names and xattrs. */
#define SCOUT_DIRS 64
#define SCOUT_DIR_BYTES (8u << 20)

enum { DIR_FREE, DIR_QUEUED, DIR_RUNNING, DIR_READY };

/* A directory listed ahead (queued by the lister when it lists its parent, listed by an opener
 * or by the lister itself), kept until the walk enters it: its entries in walk order (each its
 * d_type byte, its name, a NUL), its identity and xattrs. */
struct listed_dir {
	int state;
	char *rel;
	char *disk;         /* DIR_QUEUED: its path on disk */
	dev_t dev;
	ino_t ino;
	char *names;
	size_t names_len, n;
	struct mk_prefetch_xattrs x;
};

/* One file queued and not yet reached by the walk. Until an opener took it, disk is its path
 * on disk; once it is ready, fd is kept open for the walk to take (-1: closed), so that a file
 * system with a round trip per open pays it here, ahead, and x holds its xattrs. */
struct issued {
	char *rel;
	char *disk;         /* owned until an opener takes it; NULL after */
	uint64_t bytes;
	bool ready;         /* the opener is done (fd may still be -1: nothing to keep) */
	bool cached;        /* the opener found its first byte in the page cache */
	int fd;
	dev_t dev;          /* of fd, by the opener's fstat */
	ino_t ino;
	struct mk_prefetch_xattrs x;
};

struct mk_prefetch {
	struct mk_prefetch_root *roots; /* owned copies */
	size_t nroots;
	struct mk_prefetch_skip skip;
	uint64_t window;
	size_t max_files;
	uint64_t per_file;           /* bytes asked for at most per file */
	bool xattrs;                 /* openers list xattrs for the walk */
	atomic_bool started;         /* set once, by the walk's thread */
	bool have_thread;            /* the lister runs */
	pthread_t thread;
	pthread_t openers[SCOUT_OPENERS];
	size_t nopeners;
	pthread_mutex_t skip_mu;     /* one call of skip.leave_out at a time (its buffers) */
	pthread_mutex_t mu;          /* guards what follows */
	pthread_cond_t cv;
	bool stop;
	bool done;                   /* every scout thread ended: nobody closes for the walk */
	size_t running;              /* scout threads that have not ended */
	bool waiting;                /* the scout waits for the walk to move on */
	char *cur;                   /* the file the walk reads */
	size_t cur_cap;
	pthread_cond_t work;         /* openers wait here for a queued file */
	bool listed;                 /* the lister queues no more */
	struct issued *ring;         /* max_files slots */
	size_t head, n;
	uint64_t seq_head;           /* the queue position of ring[head] */
	uint64_t dispatch;           /* the queue position of the next file for an opener */
	uint64_t ahead;              /* bytes of the ring */
	size_t open_fds, max_fds;    /* descriptors kept in the ring */
	int closing[MK_PREFETCH_FDS]; /* descriptors the walk is done with, closed by the scout */
	size_t nclosing;
	struct listed_dir dirs[SCOUT_DIRS];
	size_t nd;                   /* slots not DIR_FREE */
	size_t dir_bytes;            /* of the listings kept: listing_bytes() */
	uint64_t files, bytes;       /* asked for in all */
	uint32_t warm_run;           /* files in a row the walk took that the scout did not read
				      * ahead (found cached, or not reached) */
	atomic_bool idle;            /* warm_run reached MK_SCOUT_IDLE_FILES */
	uint64_t taken;              /* descriptors the walk took */
};

int mk_walk_path_cmp(const char *a, const char *b)
{
	for (;;) {
		const char *ea = strchrnul(a, '/'), *eb = strchrnul(b, '/');
		int r = dir_name_cmp(a, (size_t)(ea - a), b, (size_t)(eb - b));
		if (r)
			return r;
		if (!*ea || !*eb)
			return (*ea != 0) - (*eb != 0);
		a = ea + 1;
		b = eb + 1;
	}
}

/* Whether a is a directory above b ("" is above every other path). */
static bool is_above(const char *a, const char *b)
{
	size_t n = strlen(a);
	if (!n)
		return *b != 0;
	return !strncmp(a, b, n) && b[n] == '/';
}

static bool set_cur(struct mk_prefetch *p, const char *rel)
{
	size_t n = strlen(rel) + 1;
	if (n > p->cur_cap) {
		char *c = realloc(p->cur, n * 2);
		if (!c)
			return false;
		p->cur = c;
		p->cur_cap = n * 2;
	}
	memcpy(p->cur, rel, n);
	return true;
}

/* Leaves fd to the scout to close (under mu): a close can be a round trip too. */
static void close_later(struct mk_prefetch *p, int fd)
{
	if (p->nclosing < MK_PREFETCH_FDS && p->have_thread && !p->stop && !p->done)
		p->closing[p->nclosing++] = fd;
	else
		close(fd);
}

/* Closes what was left to the scout (on its thread; takes mu). */
static void close_pending(struct mk_prefetch *p)
{
	int fds[MK_PREFETCH_FDS];
	pthread_mutex_lock(&p->mu);
	size_t n = p->nclosing;
	memcpy(fds, p->closing, n * sizeof(*fds));
	p->nclosing = 0;
	pthread_mutex_unlock(&p->mu);
	for (size_t i = 0; i < n; i++)
		close(fds[i]);
}

/* The bytes a kept listing counts against SCOUT_DIR_BYTES: its names and xattrs. */
static size_t listing_bytes(const struct listed_dir *ld)
{
	return ld->names_len + (ld->x.len >= 0 ? ld->x.size : 0);
}

/* Frees the listing slot i (under mu). */
static void drop_dir(struct mk_prefetch *p, size_t i)
{
	struct listed_dir *ld = &p->dirs[i];
	p->dir_bytes -= listing_bytes(ld);
	free(ld->rel);
	free(ld->disk);
	free(ld->names);
	free(ld->x.buf);
	*ld = (struct listed_dir){ .state = DIR_FREE };
	p->nd--;
}

/* The slot of the listing of rel, or -1 (under mu). */
static int find_dir(struct mk_prefetch *p, const char *rel)
{
	for (int i = 0; p->nd && i < SCOUT_DIRS; i++)
		if (p->dirs[i].state != DIR_FREE && !strcmp(p->dirs[i].rel, rel))
			return i;
	return -1;
}

/* A free listing slot, or -1 (under mu). */
static int free_dir(struct mk_prefetch *p)
{
	for (int i = 0; p->nd < SCOUT_DIRS && i < SCOUT_DIRS; i++)
		if (p->dirs[i].state == DIR_FREE)
			return i;
	return -1;
}

/* Drops from the ring what the walk has reached (under mu). */
static void pop_reached(struct mk_prefetch *p)
{
	while (p->n && mk_walk_path_cmp(p->ring[p->head].rel, p->cur) <= 0) {
		struct issued *it = &p->ring[p->head];
		p->ahead -= it->bytes;
		if (it->fd >= 0) {
			close_later(p, it->fd);
			p->open_fds--;
		}
		free(it->rel);
		free(it->disk);
		free(it->x.buf);
		it->rel = it->disk = NULL;
		it->x.buf = NULL;
		p->head = (p->head + 1) % p->max_files;
		p->n--;
		p->seq_head++;
	}
	if (p->dispatch < p->seq_head)
		p->dispatch = p->seq_head;
	/* a directory before the file the walk reads was entered or passed (one an opener is
	 * listing is freed when it is done) */
	for (size_t i = 0; p->nd && i < SCOUT_DIRS; i++)
		if ((p->dirs[i].state == DIR_QUEUED || p->dirs[i].state == DIR_READY) &&
		    mk_walk_path_cmp(p->dirs[i].rel, p->cur) < 0)
			drop_dir(p, i);
}

/* Whether the entry at rel is behind the walk (for a directory: all it holds). */
static bool behind(struct mk_prefetch *p, const char *rel)
{
	pthread_mutex_lock(&p->mu);
	bool b = p->stop || (mk_walk_path_cmp(rel, p->cur) <= 0 && !is_above(rel, p->cur));
	pthread_mutex_unlock(&p->mu);
	return b;
}

/* Waits until bytes more fit in the window; false to stop or when the walk passed rel. */
static bool wait_room(struct mk_prefetch *p, const char *rel, uint64_t bytes)
{
	pthread_mutex_lock(&p->mu);
	for (;;) {
		pop_reached(p);
		if (p->stop || mk_walk_path_cmp(rel, p->cur) <= 0)
			break;
		if (!p->n || (p->ahead + bytes <= p->window && p->n < p->max_files)) {
			pthread_mutex_unlock(&p->mu);
			return true;
		}
		if (p->nclosing) {
			pthread_mutex_unlock(&p->mu);
			close_pending(p);
			pthread_mutex_lock(&p->mu);
			continue;
		}
		p->waiting = true;
		pthread_cond_wait(&p->cv, &p->mu);
		p->waiting = false;
	}
	pthread_mutex_unlock(&p->mu);
	return false;
}

static bool skipped(const struct mk_prefetch *p, const struct stat *st)
{
	for (size_t i = 0; i < p->skip.n; i++)
		if (st->st_dev == p->skip.dev[i] && st->st_ino == p->skip.ino[i])
			return true;
	return false;
}

/* Queues the regular file at image path rel (on disk: disk) for an opener, once it fits. */
static void queue_file(struct mk_prefetch *p, const char *rel, const char *disk)
{
	uint64_t guess = SCOUT_GUESS < p->per_file ? SCOUT_GUESS : p->per_file;
	if (!wait_room(p, rel, guess))
		return;
	char *r = strdup(rel), *dk = strdup(disk);
	if (!r || !dk) {
		free(r);
		free(dk);
		return;
	}
	pthread_mutex_lock(&p->mu);
	struct issued *it = &p->ring[(p->head + p->n) % p->max_files];
	*it = (struct issued){ .rel = r, .disk = dk, .bytes = guess, .fd = -1, .x.len = -1 };
	p->n++;
	p->ahead += guess;
	pthread_cond_signal(&p->work);
	pthread_mutex_unlock(&p->mu);
}

/* Lists fd's xattrs into x (names as flistxattr gives them, then each value as a 4-byte
 * length and its bytes); x->len stays -1 when they cannot be read whole (the walk then reads
 * them itself). */
static void list_xattrs(int fd, struct mk_prefetch_xattrs *x)
{
	char names[SCOUT_XATTRS_MAX], val[SCOUT_XATTRS_MAX];
	ssize_t len = flistxattr(fd, names, sizeof(names));
	if (len <= 0) {
		x->len = len < 0 ? -1 : 0;
		return;
	}
	size_t used = (size_t)len;
	char *b = malloc(used);
	if (!b)
		return;
	memcpy(b, names, used);
	for (ssize_t off = 0; off < len; off += (ssize_t)strlen(names + off) + 1) {
		ssize_t vl = fgetxattr(fd, names + off, val, sizeof(val));
		char *g = vl >= 0 && used + 4 + (size_t)vl <= SCOUT_XATTRS_MAX ?
				  realloc(b, used + 4 + (size_t)vl) : NULL;
		if (!g) {
			free(b);
			return;
		}
		b = g;
		uint32_t l32 = (uint32_t)vl;
		memcpy(b + used, &l32, 4);
		memcpy(b + used + 4, val, (size_t)vl);
		used += 4 + (size_t)vl;
	}
	x->buf = b;
	x->len = len;
	x->size = used;
}

/* An opener's work on one file: opens it (O_NONBLOCK|O_NOFOLLOW: what replaced it is not
 * waited on or followed; only a regular file is read ahead), asks for its first bytes (*want
 * of them) unless the page cache holds its first byte (*cached: 1; 0 when it does not or
 * cannot tell; -1 for an empty file) and lists its xattrs. -1 when there is nothing to keep;
 * else *st its stat. */
static int open_ahead(struct mk_prefetch *p, const char *disk, struct stat *st, uint64_t *want,
		      struct mk_prefetch_xattrs *x, int *cached)
{
	int fd = open(disk, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	if (fstat(fd, st) || !S_ISREG(st->st_mode) || skipped(p, st) ||
	    fcntl(fd, F_SETFL, 0)) { /* O_NONBLOCK off; the other flags stay */
		close(fd);
		return -1;
	}
	*want = (uint64_t)st->st_size < p->per_file ? (uint64_t)st->st_size : p->per_file;
	char b;
	struct iovec iov = { .iov_base = &b, .iov_len = 1 };
	*cached = !*want ? -1 : preadv2(fd, &iov, 1, 0, RWF_NOWAIT) == 1;
	if (*cached == 0)
		posix_fadvise(fd, 0, (off_t)*want, POSIX_FADV_WILLNEED);
	if (p->xattrs)
		list_xattrs(fd, x);
	return fd;
}

/* Hands an opener's result for the file at queue position seq to its slot (under mu); false
 * when the slot cannot keep fd (the walk passed the file, or enough descriptors are kept): the
 * caller closes it, and frees x when the walk passed the file. */
static bool deliver(struct mk_prefetch *p, uint64_t seq, int fd, const struct stat *st,
		    uint64_t want, struct mk_prefetch_xattrs *x, bool cached)
{
	if (seq < p->seq_head)
		return false;
	struct issued *it = &p->ring[(p->head + (size_t)(seq - p->seq_head)) % p->max_files];
	p->ahead = p->ahead - it->bytes + want;
	it->bytes = want;
	it->ready = true;
	it->cached = cached;
	if (fd < 0)
		return true;
	p->files++;
	p->bytes += want;
	it->dev = st->st_dev;
	it->ino = st->st_ino;
	it->x = *x;
	x->buf = NULL;
	if (p->open_fds >= p->max_fds)
		return false;
	it->fd = fd;
	p->open_fds++;
	return true;
}

/* Names of a directory: the d_type byte, then the name. */
static int name_cmp(const void *a, const void *b)
{
	const char *x = *(char *const *)a + 1, *y = *(char *const *)b + 1;
	return dir_name_cmp(x, strlen(x), y, strlen(y));
}

/* Reads the directory fd (closed here) into ld: its identity, its entries sorted as the walk
 * sorts them (each its d_type byte, its name, a NUL) and, when p lists them, its xattrs.
 * false when it cannot be read whole. */
static bool read_listing(struct mk_prefetch *p, int fd, struct listed_dir *ld)
{
	struct stat st;
	if (fstat(fd, &st)) {
		close(fd);
		return false;
	}
	ld->dev = st.st_dev;
	ld->ino = st.st_ino;
	if (p->xattrs)
		list_xattrs(fd, &ld->x);
	DIR *dir = fdopendir(fd);
	if (!dir) {
		close(fd);
		return false;
	}
	char **v = NULL;
	size_t n = 0, cap = 0, bytes = 0;
	struct dirent *de;
	bool ok = true;
	for (;;) {
		errno = 0;
		if (!ok || !(de = readdir(dir)))
			break;
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (n == cap) {
			size_t nc = cap ? cap * 2 : 64;
			char **g = realloc(v, nc * sizeof(*v));
			ok = g != NULL;
			v = g ? g : v;
			cap = g ? nc : cap;
		}
		size_t len = strlen(de->d_name);
		if (ok && (ok = (v[n] = malloc(len + 2)) != NULL)) {
			v[n][0] = (char)de->d_type;
			memcpy(v[n] + 1, de->d_name, len + 1);
			bytes += len + 2;
			n++;
		}
	}
	ok = ok && !errno;
	closedir(dir);
	if (n > 1)
		qsort(v, n, sizeof(*v), name_cmp);
	char *buf = ok ? malloc(bytes + 1) : NULL;
	for (size_t i = 0, at = 0; i < n; i++) {
		size_t l = strlen(v[i] + 1) + 2;
		if (buf)
			memcpy(buf + at, v[i], l);
		at += l;
		free(v[i]);
	}
	free(v);
	if (!buf)
		return false;
	ld->names = buf;
	ld->names_len = bytes;
	ld->n = n;
	return true;
}

/* Whether the walk excludes the entry at image path rel (a top: top); the openers ask too, so
 * the calls take turns. */
static bool left_out(struct mk_prefetch *p, const char *rel, bool top)
{
	if (!p->skip.leave_out)
		return false;
	pthread_mutex_lock(&p->skip_mu);
	bool r = p->skip.leave_out(p->skip.arg, rel, top);
	pthread_mutex_unlock(&p->skip_mu);
	return r;
}

/* A path: dir, "/" and name (name alone when dir is empty); NULL when out of memory. */
static char *join(const char *dir, const char *name)
{
	size_t a = strlen(dir), b = strlen(name);
	char *s = malloc(a + b + 2);
	if (s && a)
		memcpy(s, dir, a), s[a++] = '/';
	if (s)
		memcpy(s + a, name, b + 1);
	return s;
}

/* Queues for the openers the subdirectories of the directory at image path rel, on disk at
 * disk, of listing names (n entries), while slots and bytes are left (under mu). */
static void queue_children(struct mk_prefetch *p, const char *rel, const char *disk,
			   const char *names, size_t n)
{
	const char *e = names;
	for (size_t i = 0; i < n; i++, e += strlen(e + 1) + 2) {
		if ((unsigned char)e[0] != DT_DIR)
			continue;
		int k = free_dir(p);
		if (k < 0 || p->dir_bytes >= SCOUT_DIR_BYTES)
			return;
		char *r = join(rel, e + 1), *dk = join(disk, e + 1);
		if (r && dk && strlen(dk) < PATH_MAX && find_dir(p, r) < 0 &&
		    !left_out(p, r, false)) {
			p->dirs[k] = (struct listed_dir){ .state = DIR_QUEUED, .rel = r, .disk = dk,
							  .x.len = -1 };
			p->nd++;
			pthread_cond_signal(&p->work);
			r = dk = NULL;
		}
		free(r);
		free(dk);
	}
}

/* Lists the directory of slot i (DIR_RUNNING; disk is its path on disk, freed here) without
 * mu, then makes it DIR_READY, or frees it when it cannot be read (takes mu). */
static void list_slot(struct mk_prefetch *p, int i, char *disk)
{
	struct listed_dir ld = { .x.len = -1 };
	int fd = open(disk, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	bool ok = fd >= 0 && read_listing(p, fd, &ld);
	pthread_mutex_lock(&p->mu);
	struct listed_dir *sl = &p->dirs[i];
	if (ok && p->dir_bytes + ld.names_len <= SCOUT_DIR_BYTES) {
		ld.state = DIR_READY;
		ld.rel = sl->rel;
		*sl = ld;
		p->dir_bytes += listing_bytes(sl);
		/* its subdirectories next, while slots are free: a deep tree of small directories
		 * is listed several levels ahead of the lister, not one */
		queue_children(p, sl->rel, disk, sl->names, sl->n);
		ld.names = ld.x.buf = NULL;
	} else {
		drop_dir(p, (size_t)i);
	}
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
	free(disk);
	free(ld.names);
	free(ld.x.buf);
}

/* A queued directory for an opener: its slot, made DIR_RUNNING, and *disk its path (the
 * caller's); -1: none (under mu). */
static int next_dir_job(struct mk_prefetch *p, char **disk)
{
	int k = -1;
	for (int i = 0; p->nd && i < SCOUT_DIRS; i++)
		if (p->dirs[i].state == DIR_QUEUED &&
		    (k < 0 || mk_walk_path_cmp(p->dirs[i].rel, p->dirs[k].rel) < 0))
			k = i;
	if (k >= 0) {
		p->dirs[k].state = DIR_RUNNING;
		*disk = p->dirs[k].disk;
		p->dirs[k].disk = NULL;
	}
	return k;
}

/* The last scout thread to end: nobody closes for the walk any more. */
static void thread_ends(struct mk_prefetch *p)
{
	pthread_mutex_lock(&p->mu);
	bool last = --p->running == 0;
	if (last)
		p->done = true;
	pthread_mutex_unlock(&p->mu);
	if (last)
		close_pending(p); /* what came before */
}

static void *opener_main(void *arg)
{
	struct mk_prefetch *p = arg;
	pthread_mutex_lock(&p->mu);
	while (!p->stop) {
		char *dpath;
		int k = next_dir_job(p, &dpath);
		if (k >= 0) {
			pthread_mutex_unlock(&p->mu);
			list_slot(p, k, dpath);
			pthread_mutex_lock(&p->mu);
			continue;
		}
		if (p->dispatch >= p->seq_head + p->n) {
			if (p->listed)
				break;
			pthread_cond_wait(&p->work, &p->mu);
			continue;
		}
		uint64_t seq = p->dispatch++;
		struct issued *it =
		    &p->ring[(p->head + (size_t)(seq - p->seq_head)) % p->max_files];
		char *disk = it->disk;
		it->disk = NULL;
		pthread_mutex_unlock(&p->mu);
		close_pending(p);
		struct stat st;
		uint64_t want = 0;
		struct mk_prefetch_xattrs x = { .len = -1 };
		int cached = -1;
		int fd = disk ? open_ahead(p, disk, &st, &want, &x, &cached) : -1;
		free(disk);
		pthread_mutex_lock(&p->mu);
		bool kept = deliver(p, seq, fd, &st, want, &x, cached != 0);
		if (p->waiting)
			pthread_cond_signal(&p->cv);
		if (!kept && fd >= 0) {
			pthread_mutex_unlock(&p->mu);
			close(fd);
			free(x.buf);
			pthread_mutex_lock(&p->mu);
		}
	}
	pthread_mutex_unlock(&p->mu);
	thread_ends(p);
	return NULL;
}

/* The lister's place: the image path and the path on disk of the entry it is at, each in a
 * buffer of PATH_MAX + 1 bytes. */
struct spot {
	char *rel, *disk;
};

static void scout_entry(struct mk_prefetch *p, unsigned type, struct spot *at, size_t depth,
			bool top);

/* Appends /name to buf (of PATH_MAX + 1 bytes) at len; false when it does not fit. */
static bool append(char *buf, size_t len, const char *name)
{
	size_t n = strlen(name);
	if (len + 1 + n >= PATH_MAX)
		return false;
	if (len)
		buf[len++] = '/';
	memcpy(buf + len, name, n + 1);
	return true;
}

/* The listing of the directory at *at into *ld: the one an opener made (waited for while it
 * is being made), else read here and kept for the walk (a copy). false: none. */
static bool get_listing(struct mk_prefetch *p, struct spot *at, struct listed_dir *ld)
{
	pthread_mutex_lock(&p->mu);
	int k;
	while ((k = find_dir(p, at->rel)) >= 0 && p->dirs[k].state == DIR_RUNNING && !p->stop) {
		p->waiting = true;
		pthread_cond_wait(&p->cv, &p->mu);
		p->waiting = false;
	}
	if (k >= 0 && p->dirs[k].state == DIR_READY) {
		struct listed_dir *sl = &p->dirs[k];
		ld->names = malloc(sl->names_len + 1);
		if (ld->names)
			memcpy(ld->names, sl->names, sl->names_len);
		ld->names_len = sl->names_len;
		ld->n = sl->n;
		pthread_mutex_unlock(&p->mu);
		return ld->names != NULL;
	}
	if (k >= 0) /* queued, not yet taken by an opener: listed here */
		drop_dir(p, (size_t)k);
	pthread_mutex_unlock(&p->mu);
	int fd = open(at->disk, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || !read_listing(p, fd, ld))
		return false;
	pthread_mutex_lock(&p->mu);
	int i = free_dir(p);
	char *keep = i >= 0 && p->dir_bytes + ld->names_len <= SCOUT_DIR_BYTES ?
			     malloc(ld->names_len + 1) : NULL;
	char *rel = keep ? strdup(at->rel) : NULL;
	if (rel) {
		memcpy(keep, ld->names, ld->names_len);
		p->dirs[i] = (struct listed_dir){ .state = DIR_READY, .rel = rel, .dev = ld->dev,
						  .ino = ld->ino, .names = keep,
						  .names_len = ld->names_len, .n = ld->n,
						  .x = ld->x };
		p->dir_bytes += listing_bytes(&p->dirs[i]);
		p->nd++;
		ld->x.buf = NULL;
	} else {
		free(keep);
	}
	pthread_mutex_unlock(&p->mu);
	free(ld->x.buf);
	ld->x.buf = NULL;
	return true;
}

/* Queues the subdirectories of the directory at *at (its listing ld) for the openers to list,
 * while slots are free, so that the lister finds them listed when it gets there. */
static void queue_subdirs(struct mk_prefetch *p, struct spot *at, const struct listed_dir *ld)
{
	pthread_mutex_lock(&p->mu);
	queue_children(p, at->rel, at->disk, ld->names, ld->n);
	pthread_mutex_unlock(&p->mu);
}

/* Walks the directory at *at. */
static void scout_dir(struct mk_prefetch *p, struct spot *at, size_t depth)
{
	struct listed_dir ld = { .x.len = -1 };
	if (!get_listing(p, at, &ld))
		return;
	queue_subdirs(p, at, &ld);
	size_t len = strlen(at->rel), dlen = strlen(at->disk);
	const char *e = ld.names;
	for (size_t i = 0; i < ld.n; i++, e += strlen(e + 1) + 2) {
		/* the disk path always has a directory before the name: "/" joins them */
		if (append(at->rel, len, e + 1) && dlen && append(at->disk, dlen, e + 1))
			scout_entry(p, (unsigned char)e[0], at, depth, false);
		at->rel[len] = 0;
		at->disk[dlen] = 0;
	}
	free(ld.names);
}

/* The entry at *at (of d_type type): a directory is walked, a regular file queued for an
 * opener; others are left alone. */
static void scout_entry(struct mk_prefetch *p, unsigned type, struct spot *at, size_t depth,
			bool top)
{
	close_pending(p);
	if (behind(p, at->rel) || left_out(p, at->rel, top))
		return;
	/* the type readdir gave saves the lister a stat (a round trip on FUSE) of each entry */
	if (type == DT_UNKNOWN) {
		struct stat st;
		if (lstat(at->disk, &st))
			return;
		type = S_ISREG(st.st_mode) ? DT_REG : S_ISDIR(st.st_mode) ? DT_DIR : DT_UNKNOWN;
	}
	if (type == DT_REG)
		queue_file(p, at->rel, at->disk);
	else if (type == DT_DIR && depth < SCOUT_DEPTH)
		scout_dir(p, at, depth + 1);
}

static void *scout_main(void *arg)
{
	struct mk_prefetch *p = arg;
	struct spot at = { malloc(PATH_MAX + 1), malloc(PATH_MAX + 1) };
	for (size_t i = 0; at.rel && at.disk && i < p->nroots; i++) {
		const struct mk_prefetch_root *r = &p->roots[i];
		if (strlen(r->rel) >= PATH_MAX || strlen(r->disk) >= PATH_MAX)
			continue;
		strcpy(at.rel, r->rel);
		strcpy(at.disk, r->disk);
		if (!*r->rel) {
			/* the one directory source: followed, as the walk follows it ("/." opens
			 * the directory a symlink names) */
			if (strlen(at.disk) + 2 < PATH_MAX) {
				strcat(at.disk, "/.");
				scout_dir(p, &at, 0);
			}
		} else {
			scout_entry(p, DT_UNKNOWN, &at, 0, true);
		}
	}
	free(at.rel);
	free(at.disk);
	pthread_mutex_lock(&p->mu);
	p->listed = true;
	pthread_cond_broadcast(&p->work);
	pthread_mutex_unlock(&p->mu);
	thread_ends(p);
	return NULL;
}

struct mk_prefetch *mk_prefetch_create(const struct mk_prefetch_root *roots, size_t n,
				       const struct mk_prefetch_skip *skip, uint64_t window,
				       size_t files)
{
	struct mk_prefetch *p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->window = window ? window : MK_PREFETCH_WINDOW;
	p->max_files = files ? files : MK_PREFETCH_FILES;
	struct rlimit rl;
	p->max_fds = MK_PREFETCH_FDS;
	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur / 8 < p->max_fds)
		p->max_fds = (size_t)(rl.rlim_cur / 8);
	p->per_file = p->window / 8 ? p->window / 8 : 1;
	if (skip)
		p->skip = *skip;
	p->roots = calloc(n ? n : 1, sizeof(*p->roots));
	p->ring = calloc(p->max_files, sizeof(*p->ring));
	bool ok = p->roots && p->ring && set_cur(p, "");
	for (size_t i = 0; ok && i < n; i++) {
		p->roots[i].disk = strdup(roots[i].disk);
		p->roots[i].rel = strdup(roots[i].rel);
		p->nroots = i + 1;
		ok = p->roots[i].disk && p->roots[i].rel;
	}
	pthread_mutex_init(&p->skip_mu, NULL);
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->cv, NULL);
	pthread_cond_init(&p->work, NULL);
	if (!ok) {
		mk_prefetch_destroy(p);
		return NULL;
	}
	return p;
}

/* Starts the lister and the openers (on the walk's thread: nothing else runs yet). */
static void start_threads(struct mk_prefetch *p)
{
	p->running = 1;
	p->have_thread = pthread_create(&p->thread, NULL, scout_main, p) == 0;
	if (!p->have_thread)
		return;
	pthread_mutex_lock(&p->mu);
	for (size_t i = 0; i < SCOUT_OPENERS; i++) {
		if (pthread_create(&p->openers[p->nopeners], NULL, opener_main, p))
			break;
		p->nopeners++;
		p->running++;
	}
	if (!p->nopeners)
		p->stop = true; /* nobody would open what the lister queues */
	pthread_mutex_unlock(&p->mu);
}

void mk_prefetch_list_xattrs(struct mk_prefetch *p)
{
	p->xattrs = true;
}

void mk_prefetch_at(struct mk_prefetch *p, const char *rel, bool missed)
{
	if (!atomic_load_explicit(&p->started, memory_order_relaxed)) {
		if (!missed)
			return;
		atomic_store_explicit(&p->started, true, memory_order_relaxed);
		if (!set_cur(p, rel))
			return;
		start_threads(p);
		return;
	}
	if (!p->have_thread)
		return;
	pthread_mutex_lock(&p->mu);
	if (!set_cur(p, rel))
		p->stop = true; /* out of memory: the scout cannot follow */
	if (p->waiting)
		pthread_cond_signal(&p->cv);
	pthread_mutex_unlock(&p->mu);
}

int mk_prefetch_take(struct mk_prefetch *p, const char *rel, dev_t dev, ino_t ino,
		     struct mk_prefetch_xattrs *x)
{
	if (x)
		*x = (struct mk_prefetch_xattrs){ .len = -1 };
	if (!p->have_thread)
		return -1;
	int fd = -1;
	bool helped = false; /* the scout asked for this file's bytes before the walk came */
	pthread_mutex_lock(&p->mu);
	if (!set_cur(p, rel)) {
		p->stop = true;
	} else {
		for (size_t i = 0; i < p->n; i++) {
			struct issued *it = &p->ring[(p->head + i) % p->max_files];
			int r = mk_walk_path_cmp(it->rel, rel);
			if (r > 0)
				break;
			/* only the file the walk stat'ed; another one's descriptor is closed with
			 * the entry, and the walk opens its own */
			if (r || !it->ready || it->dev != dev || it->ino != ino)
				continue;
			helped = !it->cached;
			if (it->fd >= 0) {
				fd = it->fd;
				it->fd = -1;
				p->open_fds--;
			}
			if (x && it->x.len >= 0) {
				*x = it->x;
				it->x.buf = NULL;
			}
		}
	}
	pop_reached(p);
	p->taken += fd >= 0;
	p->warm_run = helped ? 0 : p->warm_run + 1;
	if (p->warm_run >= MK_SCOUT_IDLE_FILES)
		atomic_store_explicit(&p->idle, true, memory_order_relaxed);
	if (p->waiting)
		pthread_cond_signal(&p->cv);
	pthread_mutex_unlock(&p->mu);
	return fd;
}

bool mk_prefetch_take_dir(struct mk_prefetch *p, const char *rel, dev_t dev, ino_t ino,
			  struct mk_prefetch_dir *out)
{
	*out = (struct mk_prefetch_dir){ .x.len = -1 };
	if (!p->have_thread)
		return false;
	bool got = false;
	pthread_mutex_lock(&p->mu);
	int k = find_dir(p, rel);
	struct listed_dir *ld = k >= 0 ? &p->dirs[k] : NULL;
	if (ld && ld->state == DIR_READY && ld->dev == dev && ld->ino == ino) {
		*out = (struct mk_prefetch_dir){ .names = ld->names, .n = ld->n, .x = ld->x };
		/* the sizes stay for drop_dir's count of the bytes kept */
		ld->names = NULL;
		ld->x.buf = NULL;
		got = true;
	}
	/* one an opener is listing goes when it is done and the walk is past it */
	if (ld && ld->state != DIR_RUNNING)
		drop_dir(p, (size_t)k);
	pthread_mutex_unlock(&p->mu);
	return got;
}

size_t mk_prefetch_listed(struct mk_prefetch *p)
{
	size_t n = 0;
	pthread_mutex_lock(&p->mu);
	for (size_t i = 0; p->nd && i < SCOUT_DIRS; i++)
		n += p->dirs[i].state == DIR_READY;
	pthread_mutex_unlock(&p->mu);
	return n;
}

void mk_prefetch_close(struct mk_prefetch *p, int fd)
{
	pthread_mutex_lock(&p->mu);
	close_later(p, fd);
	if (p->waiting)
		pthread_cond_signal(&p->cv);
	pthread_mutex_unlock(&p->mu);
}

bool mk_miss_watch_note(struct mk_miss_watch *w, bool miss)
{
	if (!w->left) {
		if (!miss)
			return false;
		w->misses = 0;
		w->left = MK_SCOUT_MISS_WINDOW;
	}
	w->left--;
	w->misses += miss;
	return w->misses >= MK_SCOUT_MISSES;
}

bool mk_prefetch_idle(const struct mk_prefetch *p)
{
	return atomic_load_explicit(&p->idle, memory_order_relaxed);
}

bool mk_prefetch_started(const struct mk_prefetch *p)
{
	return atomic_load_explicit(&p->started, memory_order_relaxed);
}

void mk_prefetch_counts(struct mk_prefetch *p, uint64_t *files, uint64_t *bytes,
			uint64_t *taken)
{
	pthread_mutex_lock(&p->mu);
	*files = p->files;
	*bytes = p->bytes;
	if (taken)
		*taken = p->taken;
	pthread_mutex_unlock(&p->mu);
}

void mk_prefetch_destroy(struct mk_prefetch *p)
{
	if (!p)
		return;
	if (p->have_thread) {
		pthread_mutex_lock(&p->mu);
		p->stop = true;
		pthread_cond_signal(&p->cv);
		pthread_cond_broadcast(&p->work);
		pthread_mutex_unlock(&p->mu);
		pthread_join(p->thread, NULL);
		for (size_t i = 0; i < p->nopeners; i++)
			pthread_join(p->openers[i], NULL);
	}
	for (size_t i = 0; i < p->nclosing; i++)
		close(p->closing[i]);
	for (size_t i = 0; p->ring && i < p->n; i++) {
		struct issued *it = &p->ring[(p->head + i) % p->max_files];
		if (it->fd >= 0)
			close(it->fd);
		free(it->rel);
		free(it->disk);
		free(it->x.buf);
	}
	for (size_t i = 0; i < SCOUT_DIRS; i++) {
		free(p->dirs[i].rel);
		free(p->dirs[i].disk);
		free(p->dirs[i].names);
		free(p->dirs[i].x.buf);
	}
	for (size_t i = 0; i < p->nroots; i++) {
		free((char *)p->roots[i].disk);
		free((char *)p->roots[i].rel);
	}
	free(p->roots);
	free(p->ring);
	free(p->cur);
	pthread_mutex_destroy(&p->skip_mu);
	pthread_mutex_destroy(&p->mu);
	pthread_cond_destroy(&p->cv);
	pthread_cond_destroy(&p->work);
	free(p);
}
