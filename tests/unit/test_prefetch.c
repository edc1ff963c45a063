/* SPDX-License-Identifier: BSD-2-Clause */
/* Check suite for the read-ahead scout of a cold directory walk (mkimage/prefetch.c): the walk's
 * path order, how far ahead the scout reads (the window, in files and bytes), that it skips what
 * the walk has passed, that the walk takes the descriptors it opened (only of the file the walk
 * stat'ed) and leaves it those to close, the directory listings it hands the walk (sorted, with
 * their xattrs, nested ones listed ahead by the openers), that the walk starts it at its first
 * page-cache miss and not on a warm tree, and that it leaves the walk's excludes unread. What the
 * scout read is seen in the page cache (mincore), so the tree is on a disk file system (/var/tmp),
 * its pages dropped first. */
#include <check.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "mkimage/mk.h"
#include "mkimage/prefetch.h"
#include "mkimage/source.h"
#include "testutil.h"

#define FILE_BYTES (64 << 10)
#define NFILES 60

static char tree[256];
static pid_t runner; /* the process that runs the suite: its trees are named after it */

static void put(const char *rel, size_t len)
{
	test_tree_put(tree, rel, len);
}

/* The file of index i of directory d/ (walk order: names sort as numbers do). */
static void file_name(char *buf, size_t cap, const char *d, int i)
{
	snprintf(buf, cap, "%s/f%03d", d, i);
}

static void make_tree(void)
{
	snprintf(tree, sizeof(tree), "/var/tmp/sqk-test-prefetch.%ld.XXXXXX", (long)runner);
	ck_assert_ptr_nonnull(mkdtemp(tree));
	char rel[64];
	test_tree_dir(tree, "d");
	test_tree_dir(tree, "skipme");
	for (int i = 0; i < NFILES; i++) {
		file_name(rel, sizeof(rel), "d", i);
		put(rel, FILE_BYTES);
	}
	for (int i = 0; i < 8; i++) {
		file_name(rel, sizeof(rel), "skipme", i);
		put(rel, FILE_BYTES);
	}
	put("z", FILE_BYTES);
}

/* Pages of tree/rel in the page cache: -1 none, 1 all, 0 some. */
static int resident(const char *rel)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/%s", tree, rel);
	int fd = open(path, O_RDONLY);
	ck_assert_int_ge(fd, 0);
	struct stat st;
	ck_assert_int_eq(fstat(fd, &st), 0);
	void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
	ck_assert_ptr_ne(m, MAP_FAILED);
	size_t pg = (size_t)sysconf(_SC_PAGESIZE), n = ((size_t)st.st_size + pg - 1) / pg, in = 0;
	unsigned char v[(FILE_BYTES >> 12) + 1];
	ck_assert_uint_le(n, sizeof(v));
	ck_assert_int_eq(mincore(m, (size_t)st.st_size, v), 0);
	for (size_t i = 0; i < n; i++)
		in += v[i] & 1;
	munmap(m, (size_t)st.st_size);
	close(fd);
	return in == n ? 1 : in ? 0 : -1;
}

/* Drops tree/rel from the page cache (written back first by the caller's sync). */
static void drop_file(const char *rel)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/%s", tree, rel);
	int fd = open(path, O_RDONLY);
	ck_assert_int_ge(fd, 0);
	posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	close(fd);
}

/* Drops every file of the tree from the page cache; false when the file system keeps them
 * (tmpfs), which leaves nothing to see. */
static bool drop_tree(void)
{
	char rel[64];
	sync();
	for (int i = 0; i < NFILES + 9; i++) {
		if (i < NFILES)
			file_name(rel, sizeof(rel), "d", i);
		else if (i < NFILES + 8)
			file_name(rel, sizeof(rel), "skipme", i - NFILES);
		else
			snprintf(rel, sizeof(rel), "z");
		drop_file(rel);
		if (resident(rel) != -1)
			return false;
	}
	return true;
}

/* Makes the tree and drops it from the page cache; false (the tree removed, a line on stderr
 * naming the test) when its file system keeps the pages, which leaves the test nothing to see. */
static bool cold_tree(const char *test)
{
	make_tree();
	if (drop_tree())
		return true;
	fprintf(stderr, "%s: %s keeps its pages, nothing to see\n", test, tree);
	test_tree_remove(tree);
	return false;
}

/* Reads every file the walk reads, so that its pages are in the page cache. */
static void warm_tree(void)
{
	char rel[64], path[512];
	static uint8_t buf[FILE_BYTES];
	for (int i = 0; i <= NFILES; i++) {
		if (i < NFILES)
			file_name(rel, sizeof(rel), "d", i);
		else
			snprintf(rel, sizeof(rel), "z");
		snprintf(path, sizeof(path), "%s/%s", tree, rel);
		int fd = open(path, O_RDONLY);
		ck_assert_int_ge(fd, 0);
		ck_assert_int_eq(pread(fd, buf, FILE_BYTES, 0), FILE_BYTES);
		close(fd);
	}
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	nanosleep(&ts, NULL);
}

/* Waits (up to 20 s) for the scout to have asked for `files` files, then a little longer to
 * see that it asks for no more; returns the count. */
static uint64_t settle(struct mk_prefetch *p, uint64_t files)
{
	uint64_t f = 0, b;
	for (int i = 0; i < 2000; i++) {
		mk_prefetch_counts(p, &f, &b, NULL);
		if (f >= files)
			break;
		sleep_ms(10);
	}
	sleep_ms(200);
	mk_prefetch_counts(p, &f, &b, NULL);
	return f;
}

/* Waits (up to 20 s) for the read-ahead of tree/rel to land in the page cache. */
static bool lands(const char *rel)
{
	for (int i = 0; i < 2000; i++) {
		if (resident(rel) == 1)
			return true;
		sleep_ms(10);
	}
	return false;
}

START_TEST(test_path_order)
{
	/* a directory before what it holds, what it holds before its next sibling, names by
	 * unsigned bytes: not strcmp's order of the whole paths ('-' sorts below '/') */
	const char *walk[] = { "", "a", "a/b", "a/b/c", "a/c", "a-b", "ab", "a\xff", "b" };
	size_t n = sizeof(walk) / sizeof(walk[0]);
	for (size_t i = 0; i < n; i++)
		for (size_t k = 0; k < n; k++) {
			int r = mk_walk_path_cmp(walk[i], walk[k]);
			ck_assert_msg(i < k ? r < 0 : i > k ? r > 0 : r == 0, "'%s' vs '%s': %d",
				      walk[i], walk[k], r);
		}
}
END_TEST

/* The walk starts the scout on a run of misses, not on one: a cold tree (every read a miss)
 * starts it at the MK_SCOUT_MISSES-th read; a warm tree with a miss now and then (one in
 * MK_SCOUT_MISS_WINDOW / 2 reads, 100,000 reads) never does, nor do MK_SCOUT_MISSES - 1 misses
 * in one window; MK_SCOUT_MISSES misses spread over one window do, at the last of them. */
START_TEST(test_miss_watch)
{
	struct mk_miss_watch w = { 0 };
	for (unsigned i = 1; i <= MK_SCOUT_MISSES; i++)
		ck_assert(mk_miss_watch_note(&w, true) == (i == MK_SCOUT_MISSES));
	w = (struct mk_miss_watch){ 0 };
	for (unsigned i = 0; i < 100000; i++)
		ck_assert(!mk_miss_watch_note(&w, i % (MK_SCOUT_MISS_WINDOW / 2) == 0));
	w = (struct mk_miss_watch){ 0 };
	for (unsigned i = 0; i < 10 * MK_SCOUT_MISS_WINDOW; i++) /* runs of misses, then hits */
		ck_assert(!mk_miss_watch_note(&w, i % MK_SCOUT_MISS_WINDOW < MK_SCOUT_MISSES - 1));
	w = (struct mk_miss_watch){ 0 };
	unsigned step = (MK_SCOUT_MISS_WINDOW - 1) / (MK_SCOUT_MISSES - 1), first = UINT_MAX;
	for (unsigned i = 0; i < MK_SCOUT_MISS_WINDOW && first == UINT_MAX; i++)
		if (mk_miss_watch_note(&w, i % step == 0 && i / step < MK_SCOUT_MISSES))
			first = i;
	ck_assert_uint_eq(first, (MK_SCOUT_MISSES - 1) * step);
}
END_TEST

START_TEST(test_window)
{
	if (!cold_tree("test_window"))
		return;
	char rel[64];
	/* a window of 16 files' bytes (each file asked for whole: 1/8 of it), bound first by
	 * its 3 files */
	struct mk_prefetch_root root = { tree, "" };
	struct mk_prefetch *p = mk_prefetch_create(&root, 1, NULL, 16 * FILE_BYTES, 3);
	ck_assert_ptr_nonnull(p);
	file_name(rel, sizeof(rel), "d", 0);
	mk_prefetch_at(p, rel, false);
	ck_assert(!mk_prefetch_started(p)); /* no miss, no scout */
	usleep(100000);
	ck_assert_int_eq(resident("d/f001"), -1);
	mk_prefetch_at(p, rel, true);
	ck_assert(mk_prefetch_started(p));
	ck_assert_uint_eq(settle(p, 3), 3);
	for (int i = 1; i <= 3; i++) {
		file_name(rel, sizeof(rel), "d", i);
		ck_assert_msg(lands(rel), "%s not read ahead", rel);
	}
	ck_assert_int_eq(resident("d/f000"), -1); /* the walk's own file: not the scout's */
	ck_assert_int_eq(resident("d/f004"), -1); /* beyond the window */
	/* the walk jumps to f030: f004..f029 are behind it, never read ahead; f031..f033 are */
	file_name(rel, sizeof(rel), "d", 30);
	mk_prefetch_at(p, rel, false);
	ck_assert_uint_eq(settle(p, 6), 6);
	ck_assert(lands("d/f033"));
	ck_assert_int_eq(resident("d/f004"), -1);
	ck_assert_int_eq(resident("d/f029"), -1);
	ck_assert_int_eq(resident("d/f034"), -1);
	/* the walk leaves d: the rest of d is behind it; skipme and z come next */
	mk_prefetch_at(p, "skipme/f000", false);
	ck_assert_uint_eq(settle(p, 9), 9);
	ck_assert_int_eq(resident("d/f040"), -1);
	ck_assert(lands("skipme/f003"));
	ck_assert_int_eq(resident("skipme/f004"), -1);
	mk_prefetch_destroy(p);
	test_tree_remove(tree);
}
END_TEST

/* Descriptors open in this process. */
static int open_fds(void)
{
	int n = 0;
	for (int fd = 0; fd < 4096; fd++)
		n += fcntl(fd, F_GETFD) != -1;
	return n;
}

START_TEST(test_handoff)
{
	if (!cold_tree("test_handoff"))
		return;
	int before = open_fds();
	char path[512];
	struct stat st;
	/* f001 has two xattrs, one of them empty (a file system without user. xattrs: none) */
	snprintf(path, sizeof(path), "%s/d/f001", tree);
	bool xa = setxattr(path, "user.sqk-a", "one", 3, 0) == 0 &&
		  setxattr(path, "user.sqk-b", "", 0, 0) == 0;
	struct mk_prefetch_root root = { tree, "" };
	struct mk_prefetch *p = mk_prefetch_create(&root, 1, NULL, 16 * FILE_BYTES, 3);
	ck_assert_ptr_nonnull(p);
	mk_prefetch_list_xattrs(p);
	mk_prefetch_at(p, "d/f000", true);
	ck_assert_uint_eq(settle(p, 3), 3);
	/* the walk takes the descriptor the scout opened for f001: that file, at offset 0 */
	snprintf(path, sizeof(path), "%s/d/f001", tree);
	ck_assert_int_eq(lstat(path, &st), 0);
	struct mk_prefetch_xattrs x;
	int fd = mk_prefetch_take(p, "d/f001", st.st_dev, st.st_ino, &x);
	ck_assert_int_ge(fd, 0);
	/* and its xattrs as the scout listed them: listxattr's names, then each value */
	char names[256];
	ssize_t nl = llistxattr(path, names, sizeof(names));
	ck_assert_int_ge(nl, 0);
	ck_assert_int_eq(x.len, nl);
	ck_assert_mem_eq(x.buf, names, (size_t)nl);
	size_t at = (size_t)nl;
	int seen = 0;
	for (ssize_t off = 0; off < nl; off += (ssize_t)strlen(names + off) + 1) {
		char val[64];
		ssize_t vl = lgetxattr(path, names + off, val, sizeof(val));
		uint32_t l32;
		ck_assert_uint_le(at + 4, x.size);
		memcpy(&l32, x.buf + at, 4);
		ck_assert_int_eq(l32, vl);
		ck_assert_uint_le(at + 4 + l32, x.size);
		ck_assert_mem_eq(x.buf + at + 4, val, (size_t)vl);
		at += 4 + l32;
		seen += !strcmp(names + off, "user.sqk-a") || !strcmp(names + off, "user.sqk-b");
	}
	ck_assert_uint_eq(at, x.size);
	ck_assert_int_eq(seen, xa ? 2 : 0);
	free(x.buf);
	struct stat fst;
	ck_assert_int_eq(fstat(fd, &fst), 0);
	ck_assert_uint_eq(fst.st_ino, st.st_ino);
	ck_assert_int_eq(lseek(fd, 0, SEEK_CUR), 0);
	ck_assert_int_eq(fcntl(fd, F_GETFL) & O_NONBLOCK, 0);
	static uint8_t a[FILE_BYTES], b[FILE_BYTES];
	ck_assert_int_eq(pread(fd, a, FILE_BYTES, 0), FILE_BYTES);
	int own = open(path, O_RDONLY);
	ck_assert_int_eq(pread(own, b, FILE_BYTES, 0), FILE_BYTES);
	close(own);
	ck_assert_mem_eq(a, b, FILE_BYTES);
	mk_prefetch_close(p, fd);
	/* f002 is not the file the walk stat'ed (another inode): no descriptor */
	ck_assert_int_eq(mk_prefetch_take(p, "d/f002", st.st_dev, st.st_ino, NULL), -1);
	/* a file the scout never reached: none either */
	ck_assert_int_eq(mk_prefetch_take(p, "d/f050", st.st_dev, st.st_ino, NULL), -1);
	uint64_t f, bytes, taken;
	mk_prefetch_counts(p, &f, &bytes, &taken);
	ck_assert_uint_eq(taken, 1);
	mk_prefetch_destroy(p);
	ck_assert_int_eq(open_fds(), before); /* every descriptor closed */
	test_tree_remove(tree);
}
END_TEST

/* The listing of tree/rel as readdir gives it, sorted as the walk sorts ([d_type][name]\0
 * each); *n its entries. */
static char *expected_listing(const char *rel, size_t *n, size_t *len)
{
	char path[512], *v[16];
	snprintf(path, sizeof(path), "%s/%s", tree, rel);
	DIR *dir = opendir(path);
	ck_assert_ptr_nonnull(dir);
	struct dirent *de;
	*n = 0;
	while ((de = readdir(dir)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) {
			ck_assert_uint_lt(*n, 16);
			v[*n] = malloc(strlen(de->d_name) + 2);
			v[*n][0] = (char)de->d_type;
			strcpy(v[*n] + 1, de->d_name);
			(*n)++;
		}
	closedir(dir);
	for (size_t i = 1; i < *n; i++) /* insertion sort by unsigned bytes */
		for (size_t k = i; k > 0 && strcmp(v[k - 1] + 1, v[k] + 1) > 0; k--) {
			char *t = v[k];
			v[k] = v[k - 1];
			v[k - 1] = t;
		}
	char *buf = malloc(512);
	*len = 0;
	for (size_t i = 0; i < *n; i++) {
		size_t l = strlen(v[i] + 1) + 2;
		ck_assert_uint_le(*len + l, 512);
		memcpy(buf + *len, v[i], l);
		*len += l;
		free(v[i]);
	}
	return buf;
}

START_TEST(test_dir_handoff)
{
	if (!cold_tree("test_dir_handoff"))
		return;
	/* e holds a directory A (first in walk order: 'A' < 'C' < 'a'), then C, a, b */
	test_tree_dir(tree, "e");
	test_tree_dir(tree, "e/A");
	put("e/A/x", 16);
	put("e/b", 16);
	put("e/a", 16);
	put("e/C", 16);
	char path[512];
	snprintf(path, sizeof(path), "%s/e", tree);
	bool xa = setxattr(path, "user.sqk-d", "dir", 3, 0) == 0;
	struct mk_prefetch_root root = { tree, "" };
	struct mk_prefetch *p = mk_prefetch_create(&root, 1, NULL, 16 * FILE_BYTES, 3);
	ck_assert_ptr_nonnull(p);
	mk_prefetch_list_xattrs(p);
	/* the walk is at d's last file: the scout lists e and e/A and queues e/A/x, e/C, e/a */
	file_name(path, sizeof(path), "d", NFILES - 1);
	mk_prefetch_at(p, path, true);
	ck_assert_uint_eq(settle(p, 3), 3);
	struct stat st, sa;
	snprintf(path, sizeof(path), "%s/e", tree);
	ck_assert_int_eq(lstat(path, &st), 0);
	snprintf(path, sizeof(path), "%s/e/A", tree);
	ck_assert_int_eq(lstat(path, &sa), 0);
	/* e/A with another inode than the walk stat'ed: refused, and the listing dropped */
	struct mk_prefetch_dir pd;
	ck_assert(!mk_prefetch_take_dir(p, "e/A", sa.st_dev, st.st_ino, &pd));
	ck_assert_ptr_null(pd.names);
	ck_assert(!mk_prefetch_take_dir(p, "e/A", sa.st_dev, sa.st_ino, &pd));
	/* e: its entries in walk order with their types, and its xattrs */
	ck_assert(mk_prefetch_take_dir(p, "e", st.st_dev, st.st_ino, &pd));
	size_t n, len;
	char *want = expected_listing("e", &n, &len);
	ck_assert_uint_eq(pd.n, 4);
	ck_assert_uint_eq(pd.n, n);
	ck_assert_mem_eq(pd.names, want, len);
	ck_assert_str_eq(pd.names + 1, "A");
	free(want);
	if (xa) {
		ck_assert_int_gt(pd.x.len, 0);
		ck_assert_ptr_nonnull(memmem(pd.x.buf, (size_t)pd.x.len, "user.sqk-d", 11));
		ck_assert_ptr_nonnull(memmem(pd.x.buf + pd.x.len, pd.x.size - (size_t)pd.x.len,
					     "dir", 3));
	}
	free(pd.names);
	free(pd.x.buf);
	/* taken once: the scout keeps it no longer */
	ck_assert(!mk_prefetch_take_dir(p, "e", st.st_dev, st.st_ino, &pd));
	mk_prefetch_destroy(p);
	test_tree_remove(tree);
}
END_TEST

START_TEST(test_nested_dirs)
{
	if (!cold_tree("test_nested_dirs"))
		return;
	/* e/A/B/C/D, a file at the bottom: directories the lister has not reached */
	const char *chain[] = { "e", "e/A", "e/A/B", "e/A/B/C", "e/A/B/C/D" };
	for (size_t i = 0; i < 5; i++)
		test_tree_dir(tree, chain[i]);
	put("e/A/B/C/D/x", 16);
	struct mk_prefetch_root root = { tree, "" };
	struct mk_prefetch *p = mk_prefetch_create(&root, 1, NULL, 16 * FILE_BYTES, 3);
	ck_assert_ptr_nonnull(p);
	/* the lister waits at d/f004 (3 files ahead of the walk); the openers list what the root's
	 * listing queued (d, e, skipme) and then, level by level, what e holds */
	mk_prefetch_at(p, "d/f000", true);
	ck_assert_uint_eq(settle(p, 3), 3);
	/* until the listings held ready stop growing for 100 ms (at most 10 s) */
	size_t ready = mk_prefetch_listed(p), was = 0;
	for (int i = 0; i < 100 && (ready < 5 || ready != was); i++) {
		was = ready;
		sleep_ms(100);
		ready = mk_prefetch_listed(p);
	}
	for (size_t i = 0; i < 5; i++) {
		char path[512];
		struct stat st;
		struct mk_prefetch_dir pd;
		snprintf(path, sizeof(path), "%s/%s", tree, chain[i]);
		ck_assert_int_eq(lstat(path, &st), 0);
		ck_assert_msg(mk_prefetch_take_dir(p, chain[i], st.st_dev, st.st_ino, &pd),
			      "%s not listed ahead", chain[i]);
		ck_assert_uint_eq(pd.n, 1);
		ck_assert_str_eq(pd.names + 1, i < 4 ? chain[i + 1] + strlen(chain[i]) + 1 : "x");
		free(pd.names);
		free(pd.x.buf);
	}
	mk_prefetch_destroy(p);
	test_tree_remove(tree);
}
END_TEST


/* The builder's options for a walk of tree (into an image never written), with the mksquashfs
 * excludes mks[0..nmks). */
static void dir_build_opts(struct sqk_build_opts *bo, struct sqk_build_source *so,
			   const char *const *mks, int nmks)
{
	static char *sources[1];

	sources[0] = tree;
	sqk_build_opts_init(bo);
	bo->image = "/var/tmp/sqk-test-prefetch.img";
	sqk_build_source_init(so, SQK_BUILD_DIRS);
	so->sources = sources;
	so->nsources = 1;
	so->mks_excludes = mks;
	so->nmks_excludes = nmks;
}
/* Walks tree with the directory source of "mkimage TREE IMG -e skipme", reading each file;
 * returns the scout's files read ahead (-1: none was started), *taken the descriptors the walk
 * took from it. */
static long walk_tree(uint64_t *taken)
{
	static const char *skip[] = { "skipme" };
	struct sqk_build_opts bo;
	struct sqk_build_source so;
	struct mk_ctx c;
	struct mk_source *src = NULL;
	struct mk_entry e;
	static uint8_t buf[FILE_BYTES];
	dir_build_opts(&bo, &so, skip, 1);
	ck_assert_int_eq(mk_ctx_init(&c, &bo, &so), 0);
	ck_assert_int_eq(mk_source_dir_create(&c, &src), 0);
	int r;
	while ((r = src->ops->next(src, &c, &e)) == 0) {
		ck_assert_msg(strncmp(e.path, "skipme", 6), "%s not excluded", e.path);
		if (!S_ISREG(e.mode))
			continue;
		ck_assert_uint_eq(e.size, FILE_BYTES);
		ck_assert_int_eq(src->ops->read(src, &c, 0, buf, FILE_BYTES), 0);
		sleep_ms(5); /* the builder's work on the file: the scout gets ahead */
	}
	ck_assert_int_eq(r, 1);
	long files = -1;
	struct mk_prefetch *p = mk_source_dir_prefetch(src);
	if (p) {
		uint64_t f, b;
		mk_prefetch_counts(p, &f, &b, taken);
		files = (long)f;
	}
	mk_source_destroy(src);
	mk_ctx_free(&c);
	return files;
}

START_TEST(test_walk_starts_scout)
{
	if (!cold_tree("test_walk_starts_scout"))
		return;
	/* cold: every read misses, and at the MK_SCOUT_MISSES-th the scout starts and reads
	 * ahead the files after it (it may lag at first, but the walk waits 5 ms a file); the
	 * excluded files stay unread */
	uint64_t taken = 0;
	long files = walk_tree(&taken);
	ck_assert_int_ge(files, (NFILES - MK_SCOUT_MISSES) / 2);
	ck_assert_uint_ge(taken, (NFILES - MK_SCOUT_MISSES) / 2); /* read through its descriptors */
	ck_assert_int_le(files, NFILES); /* d's 60 but the first, and z */
	for (int i = 0; i < 8; i++) {
		char rel[64];
		file_name(rel, sizeof(rel), "skipme", i);
		ck_assert_msg(resident(rel) == -1, "%s, excluded, was read ahead", rel);
	}
	/* warm: every read hits the page cache, no scout. Each try reads the tree first, right
	 * before the walk: a VM's DAMON pageout can evict pages read seconds ago, and then a
	 * "warm" walk rightly starts the scout; three tries that all start it are a failure. */
	long warm = 0;
	for (int try = 0; try < 3 && warm != -1; try++) {
		warm_tree();
		warm = walk_tree(&taken);
	}
	ck_assert_int_eq(warm, -1);
	/* warm but for MK_SCOUT_MISSES - 1 files in a row dropped from the page cache (a run of
	 * pages the kernel reclaimed): still no scout (mk_miss_watch_note) */
	warm = 0;
	for (int try = 0; try < 3 && warm != -1; try++) {
		warm_tree();
		for (unsigned i = 0; i < MK_SCOUT_MISSES - 1; i++) {
			char rel[64];
			file_name(rel, sizeof(rel), "d", (int)(5 + i));
			drop_file(rel);
			ck_assert_int_eq(resident(rel), -1);
		}
		warm = walk_tree(&taken);
	}
	ck_assert_int_eq(warm, -1);
	test_tree_remove(tree);
}
END_TEST

/* A scout that finds the tree ahead warm stands down (mk_prefetch_idle), and a cold part
 * after it starts a new one: a tree whose first 2 * MK_SCOUT_MISSES files are cold, the next
 * MK_SCOUT_IDLE_FILES + 512 warm and the last 2 * MK_SCOUT_MISSES cold again starts the scout
 * in the first cold part, has ended it by the end of the warm part, and started another in
 * the last. Without the stand-down the first would run to the end. */
START_TEST(test_scout_stands_down)
{
	const int cold = 2 * MK_SCOUT_MISSES, warm_end = cold + MK_SCOUT_IDLE_FILES + 512;
	const int n = warm_end + cold;
	char rel[64], path[512];
	snprintf(tree, sizeof(tree), "/var/tmp/sqk-test-prefetch.%ld.XXXXXX", (long)runner);
	ck_assert_ptr_nonnull(mkdtemp(tree));
	test_tree_dir(tree, "w");
	for (int i = 0; i < n; i++) {
		snprintf(rel, sizeof(rel), "w/f%04d", i);
		put(rel, 4096);
	}
	sync();
	for (int i = 0; i < n; i++) {
		snprintf(rel, sizeof(rel), "w/f%04d", i);
		if (i < cold || i >= warm_end) {
			drop_file(rel);
			continue;
		}
		snprintf(path, sizeof(path), "%s/%s", tree, rel);
		int fd = open(path, O_RDONLY);
		ck_assert_int_ge(fd, 0);
		static uint8_t b[4096];
		ck_assert_int_eq(pread(fd, b, sizeof(b), 0), 4096);
		close(fd);
	}
	snprintf(rel, sizeof(rel), "w/f%04d", 0);
	if (resident(rel) != -1) {
		fprintf(stderr, "test_scout_stands_down: %s keeps its pages, nothing to see\n",
			tree);
		test_tree_remove(tree);
		return;
	}
	struct sqk_build_opts bo;
	struct sqk_build_source so;
	struct mk_ctx c;
	struct mk_source *src = NULL;
	struct mk_entry e;
	static uint8_t buf[4096];
	dir_build_opts(&bo, &so, NULL, 0);
	ck_assert_int_eq(mk_ctx_init(&c, &bo, &so), 0);
	ck_assert_int_eq(mk_source_dir_create(&c, &src), 0);
	int r, files = 0;
	bool started = false, stood_down = false;
	while ((r = src->ops->next(src, &c, &e)) == 0) {
		if (!S_ISREG(e.mode))
			continue;
		ck_assert_int_eq(src->ops->read(src, &c, 0, buf, 4096), 0);
		if (++files == cold)
			started = mk_source_dir_prefetch(src) != NULL;
		if (files == warm_end)
			stood_down = !mk_source_dir_prefetch(src);
	}
	ck_assert_int_eq(r, 1);
	ck_assert_int_eq(files, n);
	ck_assert_msg(started, "the cold files started no scout");
	ck_assert_msg(stood_down, "the scout ran on over %u warm files", MK_SCOUT_IDLE_FILES + 512);
	ck_assert_msg(mk_source_dir_prefetch(src), "the last cold files started no new scout");
	mk_source_destroy(src);
	mk_ctx_free(&c);
	test_tree_remove(tree);
}
END_TEST

/* After the tests, in the runner: removes the trees a failed test (which stops at its
 * assertion, in its own process) left behind. */
static void remove_left_trees(void)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf /var/tmp/sqk-test-prefetch.%ld.*", (long)runner);
	if (system(cmd) != 0)
		fprintf(stderr, "test_prefetch: %s failed\n", cmd);
}

static Suite *prefetch_suite(void)
{
	Suite *s = suite_create("prefetch");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 120);
	tcase_add_unchecked_fixture(tc, NULL, remove_left_trees);
	tcase_add_test(tc, test_path_order);
	tcase_add_test(tc, test_miss_watch);
	tcase_add_test(tc, test_window);
	tcase_add_test(tc, test_handoff);
	tcase_add_test(tc, test_dir_handoff);
	tcase_add_test(tc, test_nested_dirs);
	tcase_add_test(tc, test_walk_starts_scout);
	tcase_add_test(tc, test_scout_stands_down);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	runner = getpid();
	return test_run_suite(prefetch_suite());
}
