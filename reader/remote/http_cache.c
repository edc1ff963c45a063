/* SPDX-License-Identifier: BSD-2-Clause */
/* On-disk chunk cache of remote images (see http_cache.h). Layout of ROOT/KEY:
 * - uU, U a unit number in hex: the chunks U * per .. U * per + per - 1. A file header ("SQKU",
 *   u32 chunk size, u32 per, u32 0), per slot headers ("SQKC", u32 length, u64 XXH3 of the
 *   data; zero: empty), padded to a multiple of 4096 (the header area), then slot i's data at
 *   area + i * chunk size. A slot's data is written before its header, so a header that matches
 *   its data was written whole. Files are counted and evicted whole, by the blocks they take.
 * - K, K a key in hex: one entry alone (keys with DCACHE_SOLO set, or every key without units),
 *   a slot header then the data, written to .tmp.PID.TID.K and renamed; temporaries of dead
 *   processes are removed when a cache is opened.
 * Usage is counted over every KEY folder of ROOT at open, and again each time the process has
 * written a RECOUNT_PART of the limit (other processes write and evict too); it is kept under
 * the limit by removing the oldest entries first (by their file's mtime). */
#define XXH_INLINE_ALL
#include "http_cache.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <xxhash.h>

#include "common/endian.h"
#include "sqk/error.h"
#include "common/grow.h"

#define HDR 16u
#define AREA_ALIGN 4096u
#define PER_MAX 1024u
#define TMP_PREFIX ".tmp."
#define UNITS ".units"
/* The byte of UNITS that every process with the folder open holds a shared lock on (the units'
 * locks are bytes 0 .. units - 1): an evicting process removes only folders nobody has open. */
#define INUSE_AT ((off_t)1 << 62)
#define INUSE_WAIT_MS 1000u
/* Processes sharing the folder each pass the limit unseen by at most this part of it, or
 * RECOUNT_MIN bytes if that is more: then they count it again. */
#define RECOUNT_PART 16u
#define RECOUNT_MIN ((uint64_t)1 << 20)

struct dentry {
	uint32_t dir;   /* index into dirs */
	bool unit;      /* unit file k, else the file of key k alone */
	bool dead;      /* replaced by a later entry of the same file */
	uint64_t k;
	uint64_t size;
	int64_t mtime;  /* ns */
};

/* The count of the folder: its entries and the folders they are in. */
struct dcount {
	char **dirs;
	uint32_t ndirs;
	size_t dcap;          /* slots allocated in dirs */
	uint32_t own;         /* index of KEY in dirs */
	struct dentry *ents;  /* oldest first from head */
	size_t head, n, cap;
	uint64_t used;
	size_t *uent;         /* own unit file u: its live entry + 1, or 0 */
	size_t ucap;
};

struct dcache {
	pthread_mutex_t mu;
	int rootfd;
	int dirfd;            /* ROOT/KEY */
	int lockfd;           /* KEY/.units, opened by lock_pid (a forked child opens its own:
			       * OFD locks of one open file never exclude each other) */
	pid_t lock_pid;
	struct dcount c;      /* what the folder holds, as last counted and written since */
	uint64_t limit;
	uint64_t since;       /* bytes written since the folder was last counted */
	uint32_t csize, per;  /* unit files of per chunks of csize bytes; per 0: none */
	uint64_t units;       /* the image's unit files are u0 .. u(units - 1) */
};

/* A unit file's geometry, from its header or the cache's own. */
struct ugeom {
	uint32_t csize, per;
};

/* The blocks len bytes take. */
static uint64_t blocks_of(uint64_t len)
{
	return (len + AREA_ALIGN - 1) / AREA_ALIGN * AREA_ALIGN;
}

static uint64_t area_of(struct ugeom g)
{
	return blocks_of((uint64_t)HDR * (g.per + 1u));
}

/* Where slot i's header and its data lie in a unit file. */
static off_t hdr_at(uint64_t i)
{
	return (off_t)(HDR * (1 + i));
}

static off_t data_at(struct ugeom g, uint64_t i)
{
	return (off_t)(area_of(g) + i * g.csize);
}

static int push(struct dcache *d, uint32_t dir, bool unit, uint64_t k, uint64_t size,
		int64_t mtime)
{
	if (d->c.n == SIZE_MAX ||
	    mem_grow(&d->c.ents, &d->c.cap, d->c.n + 1, sizeof(*d->c.ents), 0))
		return SQK_ENOMEM;
	d->c.ents[d->c.n++] = (struct dentry){ dir, unit, false, k, size, mtime };
	d->c.used += size;
	return 0;
}

/* Records that own unit file u is entry i of the queue (mu held). */
static int set_uent(struct dcache *d, uint64_t u, size_t i)
{
	if (u >= SIZE_MAX / sizeof(*d->c.uent) - 1 ||
	    mem_grow(&d->c.uent, &d->c.ucap, (size_t)u + 1, sizeof(*d->c.uent), 1))
		return SQK_ENOMEM;
	d->c.uent[u] = i + 1;
	return 0;
}

static int add_dir(struct dcache *d, const char *name, uint32_t *idx)
{
	if (d->c.ndirs == UINT32_MAX ||
	    mem_grow(&d->c.dirs, &d->c.dcap, (size_t)d->c.ndirs + 1, sizeof(*d->c.dirs), 0))
		return SQK_ENOMEM;
	d->c.dirs[d->c.ndirs] = strdup(name);
	if (!d->c.dirs[d->c.ndirs])
		return SQK_ENOMEM;
	*idx = d->c.ndirs++;
	return 0;
}

/* Reads (write: writes) len bytes at `at`: 0, or -1 when short or failed. */
static int full_at(int fd, uint8_t *p, size_t len, off_t at, bool write)
{
	while (len) {
		ssize_t n = write ? pwrite(fd, p, len, at) : pread(fd, p, len, at);

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

static int read_full(int fd, void *buf, size_t len, off_t at)
{
	return full_at(fd, buf, len, at, false);
}

static int write_full(int fd, const void *buf, size_t len, off_t at)
{
	return full_at(fd, (uint8_t *)(uintptr_t)buf, len, at, true); /* (only read from) */
}

/* An entry's header over its len bytes of data: "SQKC", the length, their XXH3. */
static void entry_header(uint8_t h[HDR], const uint8_t *buf, size_t len)
{
	memcpy(h, "SQKC", 4);
	put_le32(h + 4, (uint32_t)len);
	put_le64(h + 8, XXH3_64bits(buf, len));
}

/* Whether entry header h is one of len bytes (before its data is read). */
static bool header_of(const uint8_t h[HDR], size_t len)
{
	return !memcmp(h, "SQKC", 4) && get_le32(h + 4) == len;
}

static void unit_name(char *buf, size_t cap, uint64_t u)
{
	snprintf(buf, cap, "u%llx", (unsigned long long)u);
}

static void chunk_name(char *buf, size_t cap, uint64_t k)
{
	snprintf(buf, cap, "%llx", (unsigned long long)k);
}

/* Opens file `name` of folder dirfd (flags: O_RDONLY, or O_RDWR with or without O_CREAT); -1 if
 * it fails or is not a regular file: a symlink or a fifo (opened without blocking) is removed,
 * and with O_CREAT a regular file made in its place. */
static int open_reg(int dirfd, const char *name, int flags)
{
	for (int tries = 0; tries < 2; tries++) {
		int fd = openat(dirfd, name, flags | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0600);
		struct stat st;

		if (fd < 0 && errno != ELOOP)
			return -1;
		if (fd >= 0 && fstat(fd, &st)) {
			close(fd);
			return -1;
		}
		if (fd >= 0 && S_ISREG(st.st_mode))
			return fd;
		if (fd >= 0)
			close(fd);
		if (unlinkat(dirfd, name, 0) || !(flags & O_CREAT))
			break;
	}
	errno = EINVAL;
	return -1;
}

/* A unit file's geometry from its header: 0, or -1 when it has none (yet) or a wrong one. */
static int read_geom(int fd, struct ugeom *g)
{
	uint8_t h[HDR];

	if (read_full(fd, h, HDR, 0) || memcmp(h, "SQKU", 4))
		return -1;
	g->csize = get_le32(h + 4);
	g->per = get_le32(h + 8);
	return g->csize && g->per > 1 && g->per <= PER_MAX ? 0 : -1;
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

/* Whether name is the one this cache gives entry k (a unit file's, or a solo entry's): only
 * those are counted, as only those are evicted ("u01" or "u0x1" would stay on disk). */
static bool canonical(const char *name, bool unit, uint64_t k)
{
	char buf[24];

	if (unit)
		unit_name(buf, sizeof(buf), k);
	else
		chunk_name(buf, sizeof(buf), k);
	return !strcmp(buf, name);
}

/* A file's mtime in ns, clamped to what an int64_t holds (year 1678 to 2262). */
static int64_t mtime_ns(const struct stat *st)
{
	const int64_t max = INT64_MAX / 1000000000 - 1;
	int64_t s = st->st_mtim.tv_sec;

	s = s > max ? max : s < -max ? -max : s;
	return s * 1000000000 + st->st_mtim.tv_nsec;
}

/* Counts the entries of one KEY folder (own: the cache's own KEY); at open (tidy) it also
 * removes the temporaries of processes that are gone. */
static int scan_dir(struct dcache *d, const char *name, bool own, bool tidy)
{
	int fd = openat(d->rootfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
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
		bool unit;

		if (de->d_name[0] == '.') {
			if (tidy && stale_tmp(de->d_name))
				unlinkat(fd, de->d_name, 0);
			continue;
		}
		unit = de->d_name[0] == 'u';
		k = strtoull(de->d_name + unit, &end, 16);
		if (*end || end == de->d_name + unit || !canonical(de->d_name, unit, k) ||
		    fstatat(fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) || !S_ISREG(st.st_mode))
			continue;
		if (!unit && own && d->per && !(k & DCACHE_SOLO))
			unlinkat(fd, de->d_name, 0); /* a chunk in a file of its own: old layout */
		else if (unit && own && (!d->per || k >= d->units))
			unlinkat(fd, de->d_name, 0); /* not a unit of this image */
		else
			rc = push(d, idx, unit, k,
				  unit ? (uint64_t)st.st_blocks * 512 : (uint64_t)st.st_size,
				  mtime_ns(&st));
	}
	closedir(dh);
	return rc;
}

static int by_mtime(const void *a, const void *b)
{
	const struct dentry *x = a, *y = b;

	return (x->mtime > y->mtime) - (x->mtime < y->mtime);
}

static int scan_root(struct dcache *d, const char *key, bool tidy)
{
	/* a position of its own (a dup's is shared, with a forked child's too) */
	int fd = openat(d->rootfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *dh = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *de;
	int rc = 0;

	if (!dh) {
		if (fd >= 0)
			close(fd);
		return sqk_from_errno(errno);
	}
	while (!rc && (de = readdir(dh))) {
		struct stat st;

		if (de->d_name[0] == '.' || (de->d_type != DT_DIR && de->d_type != DT_UNKNOWN))
			continue;
		if (de->d_type == DT_DIR || (!fstatat(d->rootfd, de->d_name, &st,
						      AT_SYMLINK_NOFOLLOW) && S_ISDIR(st.st_mode)))
			rc = scan_dir(d, de->d_name, !strcmp(de->d_name, key), tidy);
	}
	closedir(dh);
	if (d->c.n)
		qsort(d->c.ents, d->c.n, sizeof(*d->c.ents), by_mtime);
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

	for (i = 0; i < d->c.ndirs; i++) {
		if (!strcmp(d->c.dirs[i], key)) {
			d->c.own = i;
			return 0;
		}
	}
	return add_dir(d, key, &d->c.own);
}

/* Indexes the own folder's unit files in the queue (sorted). */
static int index_own(struct dcache *d)
{
	int rc = 0;

	for (size_t i = 0; !rc && i < d->c.n; i++) {
		if (d->c.ents[i].dir == d->c.own && d->c.ents[i].unit)
			rc = set_uent(d, d->c.ents[i].k, i);
	}
	return rc;
}

/* The lock file's descriptor of this process, with the shared in-use lock held: opened at open
 * and anew in a forked child (mu held); -1 if none. */
static int unit_fd(struct dcache *d)
{
	struct flock fl = { .l_type = F_RDLCK, .l_whence = SEEK_SET, .l_start = INUSE_AT,
			    .l_len = 1 };

	if (d->lock_pid != getpid()) { /* (an inherited one: the parent's stays open) */
		int fd = open_reg(d->dirfd, UNITS, O_RDWR | O_CREAT);

		/* an evicting process holds the write lock a moment: not waited for longer than
		 * INUSE_WAIT_MS (a stopped one), as readers may wait on the caller */
		for (unsigned ms = 0; fd >= 0 && fcntl(fd, F_OFD_SETLK, &fl) &&
				      (errno == EAGAIN || errno == EACCES || errno == EINTR) &&
				      ms < INUSE_WAIT_MS; ms++)
			usleep(1000);
		if (d->lockfd >= 0) /* after: the folder stays marked in use throughout */
			close(d->lockfd);
		d->lockfd = fd;
		d->lock_pid = getpid();
	}
	return d->lockfd;
}

/* Opens the own folder and its lock file; again if an evicting process removed them meanwhile
 * (it takes the in-use lock first: once we hold it, what we opened stays). Without a lock file
 * (a read-only folder) the cache works unshared. */
static int open_own(struct dcache *d, const char *key)
{
	for (unsigned tries = 0; tries < 8; tries++) {
		struct stat st;
		int fd;

		if (mkdirat(d->rootfd, key, 0700) && errno != EEXIST)
			return sqk_from_errno(errno);
		d->dirfd = openat(d->rootfd, key, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
		if (d->dirfd < 0)
			return sqk_from_errno(errno);
		d->lock_pid = 0;
		fd = unit_fd(d) >= 0 ? d->lockfd : d->dirfd;
		if (!fstat(fd, &st) && st.st_nlink > 0)
			return 0;
		close(d->dirfd);
		d->dirfd = -1;
	}
	return SQK_EIO;
}

static void count_free(struct dcount *c)
{
	for (uint32_t i = 0; i < c->ndirs; i++)
		free(c->dirs[i]);
	free(c->dirs);
	free(c->ents);
	free(c->uent);
	*c = (struct dcount){ 0 };
}

/* Counts every folder of the root: the queue, oldest first, and the own folder's index (tidy:
 * at open, see scan_dir). */
static int count_all(struct dcache *d, const char *key, bool tidy)
{
	int rc = scan_root(d, key, tidy);

	if (!rc)
		rc = find_own(d, key);
	if (!rc)
		rc = index_own(d);
	d->since = 0;
	return rc;
}

/* Counts the folder again, with what other processes wrote and evicted since (mu held). The
 * count so far stays if this one cannot be made (tried again after as many bytes). */
static void recount(struct dcache *d)
{
	char *key = strdup(d->c.dirs[d->c.own]);
	struct dcount old = d->c;

	d->c = (struct dcount){ 0 };
	if (key && count_all(d, key, false) == 0) {
		count_free(&old);
	} else {
		count_free(&d->c);
		d->c = old;
		d->since = 0;
	}
	free(key);
}

/* Borrows root and key; caller owns *out. */
int dcache_open(const char *root, const char *key, uint64_t limit, uint32_t csize, uint32_t per,
		uint64_t units, struct dcache **out)
{
	struct dcache *d = calloc(1, sizeof(*d));
	int rc;

	*out = NULL;
	if (!d)
		return SQK_ENOMEM;
	pthread_mutex_init(&d->mu, NULL);
	d->limit = limit;
	if (csize && per > 1 && per <= PER_MAX) {
		d->csize = csize;
		d->per = per;
		d->units = units;
	}
	d->dirfd = -1;
	d->lockfd = -1;
	rc = mkdir_p(root);
	d->rootfd = rc ? -1 : open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (!rc && d->rootfd < 0)
		rc = sqk_from_errno(errno);
	if (!rc && mkdirat(d->rootfd, key, 0700) && errno != EEXIST)
		rc = sqk_from_errno(errno);
	if (!rc)
		rc = count_all(d, key, true);
	if (!rc)
		rc = open_own(d, key);
	if (rc) {
		dcache_close(d);
		return rc;
	}
	*out = d;
	return 0;
}

static bool in_units(const struct dcache *d, uint64_t k)
{
	return d->per && !(k & DCACHE_SOLO);
}

static struct ugeom own_geom(const struct dcache *d)
{
	return (struct ugeom){ d->csize, d->per };
}

/* Opens the unit file of chunk k (flags as open_reg's); -1 if it fails. */
static int unit_open(struct dcache *d, uint64_t k, int flags)
{
	char name[24];

	unit_name(name, sizeof(name), k / d->per);
	return open_reg(d->dirfd, name, flags);
}

/* Reads slot header of chunk k from unit file fd into h: 0 if it is filled, with the cache's
 * geometry. */
static int slot_header(const struct dcache *d, int fd, uint64_t k, uint8_t h[HDR])
{
	struct ugeom g;

	if (read_geom(fd, &g) || g.csize != d->csize || g.per != d->per)
		return -1;
	return read_full(fd, h, HDR, hdr_at(k % d->per)) || memcmp(h, "SQKC", 4) ? -1 : 0;
}

static int unit_get(struct dcache *d, uint64_t k, uint8_t *buf, size_t len)
{
	uint8_t h[HDR];
	int fd = unit_open(d, k, O_RDONLY);
	int found, ok;

	if (fd < 0)
		return SQK_ENOENT;
	found = !slot_header(d, fd, k, h);
	ok = found && header_of(h, len) &&
	     !read_full(fd, buf, len, data_at(own_geom(d), k % d->per)) &&
	     XXH3_64bits(buf, len) == get_le64(h + 8);
	if (ok)
		futimens(fd, NULL); /* recently used: evicted last */
	close(fd);
	if (found && !ok)
		dcache_drop(d, k);
	return ok ? 0 : SQK_ENOENT;
}

/* Borrows d; fills the caller's buf. */
/* Whether fd is an entry of its own whose len bytes of data check: they are in buf. */
static bool solo_read(int fd, uint8_t *buf, size_t len)
{
	uint8_t h[HDR];
	struct stat st;

	return !fstat(fd, &st) && S_ISREG(st.st_mode) &&
	       (uint64_t)st.st_size == HDR + (uint64_t)len && !read_full(fd, h, HDR, 0) &&
	       header_of(h, len) && !read_full(fd, buf, len, HDR) &&
	       XXH3_64bits(buf, len) == get_le64(h + 8);
}

int dcache_get(struct dcache *d, uint64_t k, uint8_t *buf, size_t len)
{
	char name[24];
	int fd;
	bool ok;

	if (in_units(d, k))
		return unit_get(d, k, buf, len);
	chunk_name(name, sizeof(name), k);
	fd = open_reg(d->dirfd, name, O_RDONLY);
	if (fd < 0)
		return SQK_ENOENT;
	ok = solo_read(fd, buf, len);
	if (ok)
		futimens(fd, NULL); /* recently used: evicted last */
	close(fd);
	if (!ok) {
		dcache_drop(d, k);
		return SQK_ENOENT;
	}
	return 0;
}

/* Borrows root and key. */
int dcache_peek(const char *root, const char *key, uint64_t k, uint8_t *buf, size_t len)
{
	char name[24];
	int rootfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int dfd = rootfd < 0 ? -1 : openat(rootfd, key, O_RDONLY | O_DIRECTORY | O_CLOEXEC |
					    O_NOFOLLOW);
	int fd = -1, rc = SQK_ENOENT;

	chunk_name(name, sizeof(name), k);
	if (dfd >= 0)
		fd = openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd >= 0 && (!dcache_own_only(dfd) || !dcache_own_only(fd)))
		rc = SQK_EACCESS;
	else if (fd >= 0)
		rc = (k & DCACHE_SOLO) && solo_read(fd, buf, len) ? 0 : SQK_ECORRUPT;
	if (fd >= 0)
		close(fd);
	if (dfd >= 0)
		close(dfd);
	if (rootfd >= 0)
		close(rootfd);
	return rc;
}

bool dcache_own_only(int fd)
{
	struct stat st;

	return !fstat(fd, &st) && st.st_uid == geteuid() && !(st.st_mode & (S_IWGRP | S_IWOTH));
}

/* Borrows d. */
int dcache_touch(struct dcache *d, uint64_t k)
{
	char name[24];
	struct stat st;

	if (in_units(d, k))
		return SQK_EINVAL;
	chunk_name(name, sizeof(name), k);
	if (fstatat(d->dirfd, name, &st, AT_SYMLINK_NOFOLLOW) || !S_ISREG(st.st_mode) ||
	    utimensat(d->dirfd, name, NULL, AT_SYMLINK_NOFOLLOW))
		return SQK_ENOENT;
	pthread_mutex_lock(&d->mu);
	for (size_t i = d->c.n; i-- > d->c.head;) {
		struct dentry *e = &d->c.ents[i];

		if (!e->dead && !e->unit && e->dir == d->c.own && e->k == k) {
			if (push(d, d->c.own, false, k, e->size, 0) == 0) {
				d->c.ents[i].dead = true; /* (push may have moved the queue) */
				d->c.used -= d->c.ents[i].size;
			}
			pthread_mutex_unlock(&d->mu);
			return 0;
		}
	}
	push(d, d->c.own, false, k, (uint64_t)st.st_size, 0); /* not counted yet */
	pthread_mutex_unlock(&d->mu);
	return 0;
}

static const uint8_t zero_hdr[HDR];

/* Frees the blocks of a slot's data (after a failed write). */
static void punch(int fd, struct ugeom g, uint32_t slot)
{
	fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, data_at(g, slot), (off_t)g.csize);
}

/* Whether folder fd holds nothing but its lock file. */
static bool only_lock_file(int fd)
{
	int dfd = dup(fd);
	DIR *dh = dfd >= 0 ? fdopendir(dfd) : NULL;
	struct dirent *de;
	bool only = dh != NULL;

	if (!dh && dfd >= 0)
		close(dfd);
	while (only && (de = readdir(dh)))
		only = !strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") ||
		       !strcmp(de->d_name, UNITS);
	if (dh)
		closedir(dh);
	return only;
}

/* Removes another image's folder fd (`name`) once it holds nothing but its lock file, unless a
 * process has it open: one that opens it meanwhile finds its lock file gone and makes it anew.
 * Without a lock file only an empty folder goes (one made meanwhile keeps it). */
static void drop_if_idle(struct dcache *d, int fd, const char *name)
{
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = INUSE_AT,
			    .l_len = 1 };
	int lfd = openat(fd, UNITS, O_RDWR | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);

	if (lfd < 0) {
		if (errno == ENOENT)
			unlinkat(d->rootfd, name, AT_REMOVEDIR);
		return;
	}
	if (!fcntl(lfd, F_OFD_SETLK, &fl) && only_lock_file(fd)) {
		unlinkat(fd, UNITS, 0);
		unlinkat(d->rootfd, name, AT_REMOVEDIR);
	}
	close(lfd); /* (drops the lock) */
}

/* Removes the oldest entries until `need` more bytes fit. Called with mu held. */
static void evict(struct dcache *d, uint64_t need)
{
	while (d->c.used + need > d->limit && d->c.head < d->c.n) {
		struct dentry *e = &d->c.ents[d->c.head++];
		char name[24];
		int fd;

		if (e->dead)
			continue;
		d->c.used -= e->size;
		if (e->unit && e->dir == d->c.own && e->k < d->c.ucap)
			d->c.uent[e->k] = 0;
		fd = openat(d->rootfd, d->c.dirs[e->dir],
			    O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
		if (fd < 0)
			continue;
		if (e->unit)
			unit_name(name, sizeof(name), e->k);
		else
			chunk_name(name, sizeof(name), e->k);
		unlinkat(fd, name, 0);
		if (e->dir != d->c.own)
			drop_if_idle(d, fd, d->c.dirs[e->dir]);
		close(fd);
	}
	if (d->c.head > 4096 && d->c.head * 2 > d->c.n) { /* compact the queue */
		memmove(d->c.ents, d->c.ents + d->c.head,
			(d->c.n - d->c.head) * sizeof(*d->c.ents));
		for (size_t u = 0; u < d->c.ucap; u++)
			d->c.uent[u] = d->c.uent[u] > d->c.head ? d->c.uent[u] - d->c.head : 0;
		d->c.n -= d->c.head;
		d->c.head = 0;
	}
}

static int write_tmp(struct dcache *d, const char *tmp, const uint8_t *buf, size_t len)
{
	uint8_t h[HDR];
	int fd = openat(d->dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	int rc = fd < 0 ? -1 : 0;

	if (rc)
		return rc;
	entry_header(h, buf, len);
	if (write_full(fd, h, HDR, 0) || write_full(fd, buf, len, HDR))
		rc = -1;
	if (close(fd))
		rc = -1;
	return rc;
}

/* Counts what a store added to own unit file u (mu held): its entry, now the newest, takes
 * over the bytes of the one before. */
static void count_unit(struct dcache *d, uint64_t u, uint64_t added)
{
	size_t i = u < d->c.ucap ? d->c.uent[u] : 0;

	if (set_uent(d, u, d->c.n) == 0 && push(d, d->c.own, true, u, added, 0) == 0) {
		if (i) {
			d->c.ents[d->c.n - 1].size += d->c.ents[i - 1].size;
			d->c.ents[i - 1].dead = true;
		}
		return;
	}
	if (u < d->c.ucap) /* no memory: the entry before grows */
		d->c.uent[u] = i;
	if (i) {
		d->c.ents[i - 1].size += added;
		d->c.used += added;
	}
}

/* Makes own unit file u the newest (mu held): last in the queue, and by its mtime for the
 * counts that come before it is written (this process's or another's). */
static void newest_unit(struct dcache *d, uint64_t u)
{
	char name[24];

	count_unit(d, u, 0);
	unit_name(name, sizeof(name), u);
	utimensat(d->dirfd, name, NULL, AT_SYMLINK_NOFOLLOW);
}

/* Makes room for `size` bytes of chunk k (evicting the oldest files when allowed, never the
 * unit file k goes to): 0, or SQK_ETOOBIG when they do not fit without evicting. */
static int make_room(struct dcache *d, uint64_t k, uint64_t size, bool may_evict)
{
	int rc = 0;

	pthread_mutex_lock(&d->mu);
	if (d->since >= d->limit / RECOUNT_PART && d->since >= RECOUNT_MIN)
		recount(d);
	if (may_evict && in_units(d, k) && d->c.used + size > d->limit && k / d->per < d->c.ucap &&
	    d->c.uent[k / d->per])
		newest_unit(d, k / d->per);
	if (may_evict)
		evict(d, size);
	else if (d->c.used + size > d->limit)
		rc = SQK_ETOOBIG;
	pthread_mutex_unlock(&d->mu);
	return rc;
}

/* Whether unit file fd has the cache's header (its geometry). */
static bool own_geom_in(const struct dcache *d, int fd)
{
	struct ugeom g;

	return !read_geom(fd, &g) && g.csize == d->csize && g.per == d->per;
}

/* Gives unit file fd the cache's header if it has none yet (*made: whether it did); a file with
 * another header or geometry (damaged) is emptied first. 0, or -1 when that fails. Under the
 * file's lock: a second writer of a new file (another thread or process) would see it still
 * empty, then empty it again with the first one's chunk in it. */
static int unit_init(const struct dcache *d, int fd, bool *made)
{
	uint8_t h[HDR] = { 0 }, any;
	int rc = 0;

	*made = false;
	if (own_geom_in(d, fd))
		return 0;
	if (flock(fd, LOCK_EX))
		return -1;
	if (!own_geom_in(d, fd)) {
		if (pread(fd, &any, 1, 0) == 1 && ftruncate(fd, 0))
			rc = -1;
		*made = !rc;
		memcpy(h, "SQKU", 4);
		put_le32(h + 4, d->csize);
		put_le32(h + 8, d->per);
		rc = rc ? rc : write_full(fd, h, HDR, 0);
		/* its whole size (holes): no write extends it, which XFS would preallocate
		 * for, uncounted, after every close */
		if (!rc && ftruncate(fd, data_at(own_geom(d), d->per)))
			rc = -1;
	}
	flock(fd, LOCK_UN);
	return rc;
}

/* Writes chunk k into its slot: the data, then the slot's header (*made: whether it made the
 * file). */
static int unit_put(struct dcache *d, uint64_t k, const uint8_t *buf, size_t len, bool *made)
{
	uint32_t slot = (uint32_t)(k % d->per);
	uint8_t h[HDR];
	int fd, rc = 0;

	*made = false;
	if (!len || len > d->csize)
		return SQK_EINVAL;
	fd = unit_open(d, k, O_RDWR | O_CREAT);
	if (fd < 0)
		return sqk_from_errno(errno);
	entry_header(h, buf, len);
	errno = 0;
	if (unit_init(d, fd, made) || write_full(fd, buf, len, data_at(own_geom(d), slot)) ||
	    write_full(fd, h, HDR, hdr_at(slot))) {
		rc = errno ? sqk_from_errno(errno) : SQK_EIO;
		punch(fd, own_geom(d), slot); /* no blocks left behind */
	}
	close(fd);
	return rc;
}

/* Writes key k's file of its own, under a temporary name renamed when whole. */
static int solo_put(struct dcache *d, uint64_t k, const uint8_t *buf, size_t len)
{
	char tmp[80], name[24];
	int rc;

	chunk_name(name, sizeof(name), k);
	snprintf(tmp, sizeof(tmp), TMP_PREFIX "%ld.%ld.%s", (long)getpid(),
		 (long)syscall(SYS_gettid), name);
	errno = 0;
	if (write_tmp(d, tmp, buf, len) || renameat(d->dirfd, tmp, d->dirfd, name)) {
		rc = errno ? sqk_from_errno(errno) : SQK_EIO;
		unlinkat(d->dirfd, tmp, 0); /* no partial entry is ever visible */
		return rc;
	}
	return 0;
}

static int put(struct dcache *d, uint64_t k, const uint8_t *buf, size_t len, bool may_evict)
{
	bool unit = in_units(d, k), made = false;
	uint64_t size = unit ? blocks_of(len) + area_of(own_geom(d)) : HDR + (uint64_t)len;
	int rc;

	if (size > d->limit)
		return SQK_ENOSPC;
	rc = make_room(d, k, size, may_evict);
	if (!rc)
		rc = unit ? unit_put(d, k, buf, len, &made) : solo_put(d, k, buf, len);
	if (rc)
		return rc;
	pthread_mutex_lock(&d->mu);
	if (unit)
		count_unit(d, k / d->per, blocks_of(len) + (made ? area_of(own_geom(d)) : 0));
	else
		push(d, d->c.own, false, k, size, 0);
	d->since += size;
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

	if (in_units(d, k)) {
		uint8_t h[HDR];
		int fd = unit_open(d, k, O_RDONLY);
		bool has = fd >= 0 && !slot_header(d, fd, k, h) && get_le32(h + 4) != 0;

		if (fd >= 0)
			close(fd);
		return has;
	}
	chunk_name(name, sizeof(name), k);
	return fstatat(d->dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
	       st.st_size > HDR;
}

/* Borrows d. */
uint64_t dcache_room(struct dcache *d)
{
	uint64_t room;

	pthread_mutex_lock(&d->mu);
	room = d->c.used < d->limit ? d->limit - d->c.used : 0;
	pthread_mutex_unlock(&d->mu);
	return room;
}

/* Borrows d. */
uint64_t dcache_entry_size(const struct dcache *d, uint64_t k, size_t len)
{
	if (!in_units(d, k))
		return HDR + (uint64_t)len;
	return blocks_of(len) + area_of(own_geom(d)) / d->per;
}

/* Borrows d. */
void dcache_drop(struct dcache *d, uint64_t k)
{
	char name[24];

	if (in_units(d, k)) {
		int fd = unit_open(d, k, O_RDWR);

		if (fd >= 0) {
			write_full(fd, zero_hdr, HDR, hdr_at(k % d->per));
			close(fd);
		}
		return;
	}
	chunk_name(name, sizeof(name), k);
	unlinkat(d->dirfd, name, 0);
}

/* Frees d; NULL-safe. */
void dcache_close(struct dcache *d)
{
	if (!d)
		return;
	if (d->dirfd >= 0)
		close(d->dirfd);
	if (d->lockfd >= 0)
		close(d->lockfd);
	if (d->rootfd >= 0)
		close(d->rootfd);
	count_free(&d->c);
	pthread_mutex_destroy(&d->mu);
	free(d);
}

static int unit_lock(struct dcache *d, uint64_t u, short type)
{
	struct flock fl = { .l_type = type, .l_whence = SEEK_SET, .l_start = (off_t)u,
			    .l_len = 1 };
	int fd, rc;

	pthread_mutex_lock(&d->mu);
	fd = unit_fd(d);
	pthread_mutex_unlock(&d->mu);
	if (fd < 0 || u >= (uint64_t)INUSE_AT)
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
