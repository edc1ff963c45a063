/* SPDX-License-Identifier: BSD-2-Clause */
/* On-disk chunk cache of remote images (see http_cache.h). Layout: ROOT/KEY/K, K the chunk
 * number in hex; each file is a 16-byte header ("SQKC", u32 length, u64 XXH3 of the data) then
 * the data. Writers use ROOT/KEY/.tmp.PID.TID.K and rename(2); temporaries of dead processes
 * are removed when a cache is opened. Usage is counted over every KEY folder of ROOT at open and
 * kept under the limit by removing the oldest files first. */
#define XXH_INLINE_ALL
#include "http_cache.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <xxhash.h>

#include "common/endian.h"
#include "sqk/error.h"
#include "common/grow.h"

#define HDR 16u
#define TMP_PREFIX ".tmp."
#define UNITS ".units"

struct dentry {
	uint32_t dir;   /* index into dirs */
	uint64_t k;
	uint64_t size;
	int64_t mtime;
};

struct dcache {
	pthread_mutex_t mu;
	int rootfd;
	int dirfd;            /* ROOT/KEY */
	uint32_t own;         /* index of KEY in dirs */
	char **dirs;
	uint32_t ndirs;
	size_t dcap;          /* slots allocated in dirs */
	int lockfd;           /* KEY/.units, opened by lock_pid (a forked child opens its own:
			       * OFD locks of one open file never exclude each other) */
	pid_t lock_pid;
	struct dentry *ents;  /* oldest first from head */
	size_t head, n, cap;
	uint64_t used, limit;
};

static int push(struct dcache *d, uint32_t dir, uint64_t k, uint64_t size, int64_t mtime)
{
	if (d->n == SIZE_MAX || mem_grow(&d->ents, &d->cap, d->n + 1, sizeof(*d->ents), 0))
		return SQK_ENOMEM;
	d->ents[d->n++] = (struct dentry){ dir, k, size, mtime };
	d->used += size;
	return 0;
}

static int add_dir(struct dcache *d, const char *name, uint32_t *idx)
{
	if (d->ndirs == UINT32_MAX ||
	    mem_grow(&d->dirs, &d->dcap, (size_t)d->ndirs + 1, sizeof(*d->dirs), 0))
		return SQK_ENOMEM;
	d->dirs[d->ndirs] = strdup(name);
	if (!d->dirs[d->ndirs])
		return SQK_ENOMEM;
	*idx = d->ndirs++;
	return 0;
}

/* A temporary left by a process that is gone. */
static bool stale_tmp(const char *name)
{
	long pid;

	if (strncmp(name, TMP_PREFIX, strlen(TMP_PREFIX)))
		return false;
	pid = strtol(name + strlen(TMP_PREFIX), NULL, 10);
	return pid <= 0 || (kill((pid_t)pid, 0) && errno == ESRCH);
}

/* Counts the chunk files of one KEY folder. */
static int scan_dir(struct dcache *d, const char *name)
{
	int fd = openat(d->rootfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *dh = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *de;
	uint32_t idx;
	int rc = 0;

	if (!dh) {
		if (fd >= 0)
			close(fd);
		return 0;
	}
	rc = add_dir(d, name, &idx);
	while (!rc && (de = readdir(dh))) {
		struct stat st;
		char *end;
		uint64_t k;

		if (de->d_name[0] == '.') {
			if (stale_tmp(de->d_name))
				unlinkat(fd, de->d_name, 0);
			continue;
		}
		k = strtoull(de->d_name, &end, 16);
		if (*end || fstatat(fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) ||
		    !S_ISREG(st.st_mode))
			continue;
		rc = push(d, idx, k, (uint64_t)st.st_size, (int64_t)st.st_mtime);
	}
	closedir(dh);
	return rc;
}

static int by_mtime(const void *a, const void *b)
{
	const struct dentry *x = a, *y = b;

	return (x->mtime > y->mtime) - (x->mtime < y->mtime);
}

static int scan_root(struct dcache *d)
{
	int fd = dup(d->rootfd);
	DIR *dh = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *de;
	int rc = 0;

	if (!dh) {
		if (fd >= 0)
			close(fd);
		return sqk_from_errno(errno);
	}
	while (!rc && (de = readdir(dh))) {
		if (de->d_name[0] != '.' && de->d_type == DT_DIR)
			rc = scan_dir(d, de->d_name);
	}
	closedir(dh);
	if (d->n)
		qsort(d->ents, d->n, sizeof(*d->ents), by_mtime);
	return rc;
}

static int mkdir_p(const char *path)
{
	char buf[4096];
	size_t i, len = strlen(path);

	if (len == 0 || len >= sizeof(buf))
		return SQK_EINVAL;
	memcpy(buf, path, len + 1);
	for (i = 1; i <= len; i++) {
		if (buf[i] != '/' && buf[i] != '\0')
			continue;
		buf[i] = '\0';
		if (mkdir(buf, 0700) && errno != EEXIST)
			return sqk_from_errno(errno);
		buf[i] = path[i];
	}
	return 0;
}

static int find_own(struct dcache *d, const char *key)
{
	uint32_t i;

	for (i = 0; i < d->ndirs; i++) {
		if (!strcmp(d->dirs[i], key)) {
			d->own = i;
			return 0;
		}
	}
	return add_dir(d, key, &d->own);
}

/* Borrows root and key; caller owns *out. */
int dcache_open(const char *root, const char *key, uint64_t limit, struct dcache **out)
{
	struct dcache *d = calloc(1, sizeof(*d));
	int rc;

	*out = NULL;
	if (!d)
		return SQK_ENOMEM;
	pthread_mutex_init(&d->mu, NULL);
	d->limit = limit;
	d->dirfd = -1;
	d->lockfd = -1;
	rc = mkdir_p(root);
	d->rootfd = rc ? -1 : open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (!rc && d->rootfd < 0)
		rc = sqk_from_errno(errno);
	if (!rc && mkdirat(d->rootfd, key, 0700) && errno != EEXIST)
		rc = sqk_from_errno(errno);
	if (!rc)
		rc = scan_root(d);
	if (!rc)
		rc = find_own(d, key);
	if (!rc) {
		d->dirfd = openat(d->rootfd, key, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (d->dirfd < 0)
			rc = sqk_from_errno(errno);
	}
	if (rc) {
		dcache_close(d);
		return rc;
	}
	*out = d;
	return 0;
}

static void chunk_name(char *buf, size_t cap, uint64_t k)
{
	snprintf(buf, cap, "%llx", (unsigned long long)k);
}

static int read_full(int fd, void *buf, size_t len, off_t at)
{
	uint8_t *p = buf;

	while (len) {
		ssize_t n = pread(fd, p, len, at);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		at += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Borrows d; fills the caller's buf. */
int dcache_get(struct dcache *d, uint64_t k, uint8_t *buf, size_t len)
{
	char name[24];
	uint8_t h[HDR];
	struct stat st;
	int fd, ok;

	chunk_name(name, sizeof(name), k);
	fd = openat(d->dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return SQK_ENOENT;
	ok = !fstat(fd, &st) && (uint64_t)st.st_size == HDR + (uint64_t)len &&
	     !read_full(fd, h, HDR, 0) && !memcmp(h, "SQKC", 4) && get_le32(h + 4) == len &&
	     !read_full(fd, buf, len, HDR) && XXH3_64bits(buf, len) == get_le64(h + 8);
	if (ok)
		futimens(fd, NULL); /* recently used: evicted last */
	close(fd);
	if (!ok) {
		dcache_drop(d, k);
		return SQK_ENOENT;
	}
	return 0;
}

/* Removes the oldest files until `need` more bytes fit. Called with mu held. */
static void evict(struct dcache *d, uint64_t need)
{
	while (d->used + need > d->limit && d->head < d->n) {
		struct dentry *e = &d->ents[d->head++];
		char name[24];
		int fd = openat(d->rootfd, d->dirs[e->dir], O_RDONLY | O_DIRECTORY | O_CLOEXEC);

		d->used -= e->size;
		if (fd < 0)
			continue;
		chunk_name(name, sizeof(name), e->k);
		unlinkat(fd, name, 0);
		if (e->dir != d->own) { /* once empty (its lock file left: nothing then shared) */
			unlinkat(fd, UNITS, 0);
			unlinkat(d->rootfd, d->dirs[e->dir], AT_REMOVEDIR);
		}
		close(fd);
	}
	if (d->head > 4096 && d->head * 2 > d->n) { /* compact the queue */
		memmove(d->ents, d->ents + d->head, (d->n - d->head) * sizeof(*d->ents));
		d->n -= d->head;
		d->head = 0;
	}
}

static int write_tmp(struct dcache *d, const char *tmp, const uint8_t *buf, size_t len)
{
	uint8_t h[HDR];
	int fd = openat(d->dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	int rc = fd < 0 ? -1 : 0;

	if (rc)
		return rc;
	memcpy(h, "SQKC", 4);
	put_le32(h + 4, (uint32_t)len);
	put_le64(h + 8, XXH3_64bits(buf, len));
	if (pwrite(fd, h, HDR, 0) != HDR || pwrite(fd, buf, len, HDR) != (ssize_t)len)
		rc = -1;
	if (close(fd))
		rc = -1;
	return rc;
}

/* Makes room for `size` bytes (evicting the oldest files when allowed): 0, or SQK_ENOSPC when
 * they do not fit (SQK_ETOOBIG: not without evicting). */
static int make_room(struct dcache *d, uint64_t size, bool may_evict)
{
	int rc = 0;

	pthread_mutex_lock(&d->mu);
	if (may_evict)
		evict(d, size);
	else if (d->used + size > d->limit)
		rc = SQK_ETOOBIG;
	pthread_mutex_unlock(&d->mu);
	return rc;
}

static int put(struct dcache *d, uint64_t k, const uint8_t *buf, size_t len, bool may_evict)
{
	char tmp[80], name[24];
	uint64_t size = HDR + (uint64_t)len;
	int rc;

	if (size > d->limit)
		return SQK_ENOSPC;
	rc = make_room(d, size, may_evict);
	if (rc)
		return rc;
	chunk_name(name, sizeof(name), k);
	snprintf(tmp, sizeof(tmp), TMP_PREFIX "%ld.%ld.%s", (long)getpid(),
		 (long)syscall(SYS_gettid), name);
	errno = 0;
	if (write_tmp(d, tmp, buf, len) || renameat(d->dirfd, tmp, d->dirfd, name)) {
		rc = errno ? sqk_from_errno(errno) : SQK_EIO;
		unlinkat(d->dirfd, tmp, 0); /* no partial entry is ever visible */
		return rc;
	}
	pthread_mutex_lock(&d->mu);
	push(d, d->own, k, size, 0);
	pthread_mutex_unlock(&d->mu);
	return 0;
}

/* Borrows d and buf. */
int dcache_put(struct dcache *d, uint64_t k, const uint8_t *buf, size_t len)
{
	return put(d, k, buf, len, true);
}

/* Borrows d and buf. */
int dcache_put_room(struct dcache *d, uint64_t k, const uint8_t *buf, size_t len)
{
	return put(d, k, buf, len, false);
}

/* Borrows d. */
bool dcache_has(struct dcache *d, uint64_t k)
{
	char name[24];
	struct stat st;

	chunk_name(name, sizeof(name), k);
	return fstatat(d->dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
	       st.st_size > HDR;
}

/* Borrows d. */
uint64_t dcache_room(struct dcache *d)
{
	uint64_t room;

	pthread_mutex_lock(&d->mu);
	room = d->used < d->limit ? d->limit - d->used : 0;
	pthread_mutex_unlock(&d->mu);
	return room;
}

/* No ownership. */
uint64_t dcache_entry_size(size_t len)
{
	return HDR + (uint64_t)len;
}

/* Borrows d. */
void dcache_drop(struct dcache *d, uint64_t k)
{
	char name[24];

	chunk_name(name, sizeof(name), k);
	unlinkat(d->dirfd, name, 0);
}

/* Frees d; NULL-safe. */
void dcache_close(struct dcache *d)
{
	uint32_t i;

	if (!d)
		return;
	if (d->dirfd >= 0)
		close(d->dirfd);
	if (d->lockfd >= 0)
		close(d->lockfd);
	if (d->rootfd >= 0)
		close(d->rootfd);
	for (i = 0; i < d->ndirs; i++)
		free(d->dirs[i]);
	free(d->dirs);
	free(d->ents);
	pthread_mutex_destroy(&d->mu);
	free(d);
}

/* The lock file's descriptor of this process, opened on first use (mu held); -1 if none. */
static int unit_fd(struct dcache *d)
{
	if (d->lock_pid != getpid()) { /* (an inherited one: the parent's stays open) */
		if (d->lockfd >= 0)
			close(d->lockfd);
		d->lockfd = openat(d->dirfd, UNITS, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
		d->lock_pid = getpid();
	}
	return d->lockfd;
}

static int unit_lock(struct dcache *d, uint64_t u, short type)
{
	struct flock fl = { .l_type = type, .l_whence = SEEK_SET, .l_start = (off_t)u,
			    .l_len = 1 };
	int fd, rc;

	pthread_mutex_lock(&d->mu);
	fd = unit_fd(d);
	pthread_mutex_unlock(&d->mu);
	if (fd < 0 || u > INT64_MAX)
		return 0;
	rc = fcntl(fd, F_OFD_SETLK, &fl);
	return rc && (errno == EAGAIN || errno == EACCES) ? -1 : 0;
}

/* Borrows d. */
bool dcache_unit_trylock(struct dcache *d, uint64_t u)
{
	return unit_lock(d, u, F_WRLCK) == 0;
}

/* Borrows d. */
void dcache_unit_unlock(struct dcache *d, uint64_t u)
{
	unit_lock(d, u, F_UNLCK);
}

/* Fills the caller's buf. */
int dcache_default_dir(char *buf, size_t cap)
{
	const char *x = getenv("XDG_CACHE_HOME"), *h = getenv("HOME");
	int n;

	if (x && x[0] == '/')
		n = snprintf(buf, cap, "%s/squashkit", x);
	else if (h && h[0])
		n = snprintf(buf, cap, "%s/.cache/squashkit", h);
	else
		return SQK_ENOENT;
	return n < 0 || (size_t)n >= cap ? SQK_ETOOBIG : 0;
}
