/* The read-ahead scout of a cold directory walk (see prefetch.h). One thread, started by the
 * walk's first page-cache miss: it walks the roots depth first in the walk's order, skipping
 * what the walk has passed, and for each regular file ahead asks the kernel for its first bytes
 * (POSIX_FADV_WILLNEED starts the reads and returns: a single thread keeps many in flight).
 * What it asked for is remembered in a ring until the walk reaches it, so that the bytes and
 * files ahead of the walk stay within the window. */
#include "prefetch.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/format.h"

/* Deeper directories are left to the walk (each level holds a descriptor open). */
#define SCOUT_DEPTH 64

/* One file asked for and not yet reached by the walk; fd: kept open for the walk to take
 * (-1: closed), so that a file system with a round trip per open pays it here, ahead. */
struct issued {
	char *rel;
	uint64_t bytes;
	int fd;
	dev_t dev;   /* of fd, by the scout's fstat */
	ino_t ino;
};

struct mk_prefetch {
	struct mk_prefetch_root *roots; /* owned copies */
	size_t nroots;
	struct mk_prefetch_skip skip;
	uint64_t window;
	size_t max_files;
	uint64_t per_file;           /* bytes asked for at most per file */
	atomic_bool started;         /* set once, by the walk's thread */
	bool have_thread;
	pthread_t thread;
	pthread_mutex_t mu;          /* guards what follows */
	pthread_cond_t cv;
	bool stop;
	bool done;                   /* the scout's walk ended: nobody closes for the walk */
	bool waiting;                /* the scout waits for the walk to move on */
	char *cur;                   /* the file the walk reads */
	size_t cur_cap;
	struct issued *ring;         /* max_files slots */
	size_t head, n;
	uint64_t ahead;              /* bytes of the ring */
	size_t open_fds, max_fds;    /* descriptors kept in the ring */
	int closing[MK_PREFETCH_FDS]; /* descriptors the walk is done with, closed by the scout */
	size_t nclosing;
	uint64_t files, bytes;       /* asked for in all */
	uint64_t taken;              /* descriptors the walk took */
};

int mk_walk_path_cmp(const char *a, const char *b)
{
	for (;;) {
		const char *ea = strchrnul(a, '/'), *eb = strchrnul(b, '/');
		int r = sqk_name_cmp(a, (size_t)(ea - a), b, (size_t)(eb - b));
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
		it->rel = NULL;
		p->head = (p->head + 1) % p->max_files;
		p->n--;
	}
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

/* Remembers the file asked for; its descriptor is kept for the walk while few are. */
static void remember(struct mk_prefetch *p, char *rel, uint64_t bytes, int fd,
		     const struct stat *st)
{
	pthread_mutex_lock(&p->mu);
	struct issued *it = &p->ring[(p->head + p->n) % p->max_files];
	it->rel = rel;
	it->bytes = bytes;
	it->dev = st->st_dev;
	it->ino = st->st_ino;
	it->fd = -1;
	if (p->open_fds < p->max_fds) {
		it->fd = fd;
		p->open_fds++;
		fd = -1;
	}
	p->n++;
	p->ahead += bytes;
	p->files++;
	p->bytes += bytes;
	pthread_mutex_unlock(&p->mu);
	if (fd >= 0)
		close(fd);
}

static bool skipped(const struct mk_prefetch *p, const struct stat *st)
{
	for (size_t i = 0; i < p->skip.n; i++)
		if (st->st_dev == p->skip.dev[i] && st->st_ino == p->skip.ino[i])
			return true;
	return false;
}

/* Reads ahead the regular file name of dirfd (image path rel), of st_size bytes. */
static void scout_file(struct mk_prefetch *p, int dirfd, const char *name, const char *rel,
		       const struct stat *st)
{
	uint64_t want = (uint64_t)st->st_size < p->per_file ? (uint64_t)st->st_size : p->per_file;
	if (!want || skipped(p, st) || !wait_room(p, rel, want))
		return;
	char *copy = strdup(rel);
	if (!copy)
		return;
	/* O_NONBLOCK|O_NOFOLLOW: what replaced the file since its stat is not waited on or
	 * followed; only a regular file is read ahead. */
	int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	struct stat now;
	if (fd < 0 || fstat(fd, &now) || !S_ISREG(now.st_mode) ||
	    fcntl(fd, F_SETFL, 0) || /* O_NONBLOCK off; the other flags stay */
	    posix_fadvise(fd, 0, (off_t)want, POSIX_FADV_WILLNEED)) {
		if (fd >= 0)
			close(fd);
		free(copy);
		return;
	}
	remember(p, copy, want, fd, &now);
}

static int name_cmp(const void *a, const void *b)
{
	const char *x = *(char *const *)a, *y = *(char *const *)b;
	return sqk_name_cmp(x, strlen(x), y, strlen(y));
}

/* The names of the directory dir, sorted as the walk sorts them (*n of them; NULL: none). */
static char **sorted_names(DIR *dir, size_t *n)
{
	char **v = NULL;
	size_t cap = 0;
	struct dirent *de;
	*n = 0;
	while ((de = readdir(dir))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (*n == cap) {
			size_t nc = cap ? cap * 2 : 64;
			char **g = realloc(v, nc * sizeof(*v));
			if (!g)
				break;
			v = g;
			cap = nc;
		}
		if (!(v[*n] = strdup(de->d_name)))
			break;
		(*n)++;
	}
	if (*n > 1)
		qsort(v, *n, sizeof(*v), name_cmp);
	return v;
}

static void scout_entry(struct mk_prefetch *p, int dirfd, const char *name, char *rel,
			size_t depth, bool top);

/* Walks the directory fd (image path rel, in a buffer of PATH_MAX + 1 bytes); closes fd. */
static void scout_dir(struct mk_prefetch *p, int fd, char *rel, size_t depth)
{
	DIR *dir = fdopendir(fd);
	if (!dir) {
		close(fd);
		return;
	}
	size_t n, len = strlen(rel);
	char **names = sorted_names(dir, &n);
	for (size_t i = 0; i < n; i++) {
		if (len + 1 + strlen(names[i]) < PATH_MAX) {
			if (len)
				rel[len] = '/';
			strcpy(rel + len + (len != 0), names[i]);
			scout_entry(p, dirfd(dir), names[i], rel, depth, false);
			rel[len] = 0;
		}
		free(names[i]);
	}
	free(names);
	closedir(dir);
}

/* The entry name of dirfd at image path rel: a directory is walked, a file read ahead. */
static void scout_entry(struct mk_prefetch *p, int dirfd, const char *name, char *rel,
			size_t depth, bool top)
{
	struct stat st;
	close_pending(p);
	if (behind(p, rel) || (p->skip.leave_out && p->skip.leave_out(p->skip.arg, rel, top)) ||
	    fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW))
		return;
	if (S_ISREG(st.st_mode)) {
		scout_file(p, dirfd, name, rel, &st);
	} else if (S_ISDIR(st.st_mode) && depth < SCOUT_DEPTH) {
		int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd >= 0)
			scout_dir(p, fd, rel, depth + 1);
	}
}

static void *scout_main(void *arg)
{
	struct mk_prefetch *p = arg;
	char *rel = malloc(PATH_MAX + 1);
	for (size_t i = 0; rel && i < p->nroots; i++) {
		const struct mk_prefetch_root *r = &p->roots[i];
		if (!*r->rel) {
			/* the one directory source: followed, as the walk follows it */
			int fd = open(r->disk, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
			rel[0] = 0;
			if (fd >= 0)
				scout_dir(p, fd, rel, 0);
		} else if (strlen(r->rel) < PATH_MAX) {
			strcpy(rel, r->rel);
			scout_entry(p, AT_FDCWD, r->disk, rel, 0, true);
		}
	}
	free(rel);
	close_pending(p);
	pthread_mutex_lock(&p->mu);
	p->done = true;
	pthread_mutex_unlock(&p->mu);
	close_pending(p); /* what came between */
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
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->cv, NULL);
	if (!ok) {
		mk_prefetch_destroy(p);
		return NULL;
	}
	return p;
}

void mk_prefetch_at(struct mk_prefetch *p, const char *rel, bool missed)
{
	if (!atomic_load_explicit(&p->started, memory_order_relaxed)) {
		if (!missed)
			return;
		atomic_store_explicit(&p->started, true, memory_order_relaxed);
		if (!set_cur(p, rel))
			return;
		p->have_thread = pthread_create(&p->thread, NULL, scout_main, p) == 0;
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

int mk_prefetch_take(struct mk_prefetch *p, const char *rel, dev_t dev, ino_t ino)
{
	if (!p->have_thread)
		return -1;
	int fd = -1;
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
			if (!r && it->fd >= 0 && it->dev == dev && it->ino == ino) {
				fd = it->fd;
				it->fd = -1;
				p->open_fds--;
			}
		}
	}
	pop_reached(p);
	p->taken += fd >= 0;
	if (p->waiting)
		pthread_cond_signal(&p->cv);
	pthread_mutex_unlock(&p->mu);
	return fd;
}

void mk_prefetch_close(struct mk_prefetch *p, int fd)
{
	pthread_mutex_lock(&p->mu);
	close_later(p, fd);
	if (p->waiting)
		pthread_cond_signal(&p->cv);
	pthread_mutex_unlock(&p->mu);
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
		pthread_mutex_unlock(&p->mu);
		pthread_join(p->thread, NULL);
	}
	for (size_t i = 0; i < p->nclosing; i++)
		close(p->closing[i]);
	for (size_t i = 0; p->ring && i < p->n; i++) {
		struct issued *it = &p->ring[(p->head + i) % p->max_files];
		if (it->fd >= 0)
			close(it->fd);
		free(it->rel);
	}
	for (size_t i = 0; i < p->nroots; i++) {
		free((char *)p->roots[i].disk);
		free((char *)p->roots[i].rel);
	}
	free(p->roots);
	free(p->ring);
	free(p->cur);
	pthread_mutex_destroy(&p->mu);
	pthread_cond_destroy(&p->cv);
	free(p);
}
