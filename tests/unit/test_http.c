/* SPDX-License-Identifier: BSD-2-Clause */
/* Unit tests of the remote-image pieces: URL names without secrets, header checks, the on-disk
 * chunk cache (round trip, damaged and torn entries, temporaries of dead processes, the byte
 * bound, keys kept apart), and the threads' scheduling against a small range server here. The
 * transfers are tested against a real nginx by tests/integration/t_82..t_95. */
#include <check.h>
#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#define XXH_INLINE_ALL
#include <xxhash.h>

#include "sqk/error.h"
#include "reader/remote/http_cache.h"
#include "sqk/remote.h"
#include "sqk/sqk.h"
#include "testutil.h"

START_TEST(test_url_display)
{
	static const char *const cases[][2] = {
		{ "http://h/a.sqsh", "http://h/a.sqsh" },
		{ "https://user:pw@h:8443/x/a.sqsh?X-Amz-Signature=SECRET&y=1",
		  "https://h:8443/x/a.sqsh" },
		{ "http://h/a.sqsh#frag", "http://h/a.sqsh" },
		{ "http://h/p@x/a.sqsh", "http://h/p@x/a.sqsh" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *d = sqk_url_display(cases[i][0]);

		ck_assert_ptr_nonnull(d);
		ck_assert_str_eq(d, cases[i][1]);
		free(d);
	}
	ck_assert(sqk_is_url("HTTP://x/y"));
	ck_assert(sqk_is_url("https://x/y"));
	ck_assert(!sqk_is_url("/tmp/http://x"));
	ck_assert(!sqk_is_url("ftp://x/y"));
}
END_TEST

START_TEST(test_header_check)
{
	ck_assert_int_eq(sqk_http_header_check("Authorization: Bearer abc"), 0);
	ck_assert_int_eq(sqk_http_header_check("X-A:b"), 0);
	ck_assert_int_eq(sqk_http_header_check("no colon"), SQK_EINVAL);
	ck_assert_int_eq(sqk_http_header_check(": empty name"), SQK_EINVAL);
	ck_assert_int_eq(sqk_http_header_check("Bad Name: x"), SQK_EINVAL);
	ck_assert_int_eq(sqk_http_header_check("X: a\r\nInjected: yes"), SQK_EINVAL);
	ck_assert_int_eq(sqk_http_header_check("X: a\nB: c"), SQK_EINVAL);
}
END_TEST

/* A new folder under $TMPDIR (else /tmp): t_95 runs these tests on other filesystems. */
static char *tmpdir(void)
{
	const char *t = getenv("TMPDIR");
	char *d = NULL;

	ck_assert_int_gt(asprintf(&d, "%s/sqk-dcache.XXXXXX", t && t[0] ? t : "/tmp"), 0);
	ck_assert_ptr_nonnull(mkdtemp(d));
	return d;
}

static void rm_rf(const char *path)
{
	char cmd[512];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", path);
	ck_assert_int_eq(system(cmd), 0);
}

static unsigned count_files(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	unsigned n = 0;

	if (!d)
		return 0;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

START_TEST(test_dcache_roundtrip)
{
	char *root = tmpdir(), path[600];
	uint8_t a[4096], b[4096];
	struct dcache *d;

	test_fill_random(a, sizeof(a), 7);
	ck_assert_int_eq(dcache_open(root, "k1", 1 << 20, 0, 0, 0, &d), 0);
	ck_assert_int_eq(dcache_get(d, 5, b, sizeof(b)), SQK_ENOENT);
	dcache_put(d, 5, a, sizeof(a));
	memset(b, 0, sizeof(b));
	ck_assert_int_eq(dcache_get(d, 5, b, sizeof(b)), 0);
	ck_assert_mem_eq(a, b, sizeof(a));
	/* the wrong length is a miss, not a short read */
	ck_assert_int_eq(dcache_get(d, 5, b, sizeof(b) - 1), SQK_ENOENT);
	dcache_close(d);
	/* no temporaries left behind */
	snprintf(path, sizeof(path), "%s/k1", root);
	ck_assert_uint_eq(count_files(path), 0); /* the length mismatch removed the entry */
	rm_rf(root);
	free(root);
}
END_TEST

/* A flipped byte or a truncated file (a torn write after a crash) is never served. */
START_TEST(test_dcache_damaged)
{
	char *root = tmpdir(), path[600];
	uint8_t a[8192], b[8192];
	struct dcache *d;
	int fd;

	test_fill_random(a, sizeof(a), 9);
	ck_assert_int_eq(dcache_open(root, "k", 1 << 20, 0, 0, 0, &d), 0);
	dcache_put(d, 0x1f, a, sizeof(a));
	snprintf(path, sizeof(path), "%s/k/1f", root);
	fd = open(path, O_RDWR);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pwrite(fd, "\xff", 1, 16 + 100), 1);
	close(fd);
	ck_assert_int_eq(dcache_get(d, 0x1f, b, sizeof(b)), SQK_ENOENT);
	ck_assert_int_eq(access(path, F_OK), -1); /* removed */

	dcache_put(d, 0x1f, a, sizeof(a));
	ck_assert_int_eq(truncate(path, 16 + 4096), 0);
	ck_assert_int_eq(dcache_get(d, 0x1f, b, sizeof(b)), SQK_ENOENT);
	dcache_close(d);
	rm_rf(root);
	free(root);
}
END_TEST

/* An entry looked at without opening the cache: missing, damaged and open to other users'
 * writes are told apart. A touched entry is evicted after every other. */
START_TEST(test_dcache_peek_touch)
{
	const uint64_t k = DCACHE_SOLO | 0x42;
	char *root = tmpdir(), path[600];
	uint8_t a[4096], b[4096];
	struct dcache *d;
	int fd;

	test_fill_random(a, sizeof(a), 21);
	ck_assert_int_eq(dcache_peek(root, "k", k, b, sizeof(b)), SQK_ENOENT);
	ck_assert_int_eq(dcache_open(root, "k", 4 * (16 + sizeof(a)), 0, 0, 0, &d), 0);
	ck_assert_int_eq(dcache_touch(d, k), SQK_ENOENT);
	ck_assert_int_eq(dcache_put(d, k, a, sizeof(a)), 0);
	ck_assert_int_eq(dcache_peek(root, "k", k, b, sizeof(b)), 0);
	ck_assert_mem_eq(a, b, sizeof(a));
	snprintf(path, sizeof(path), "%s/k/%llx", root, (unsigned long long)k);
	ck_assert_int_eq(chmod(path, 0620), 0);
	ck_assert_int_eq(dcache_peek(root, "k", k, b, sizeof(b)), SQK_EACCESS);
	ck_assert_int_eq(chmod(path, 0600), 0);
	fd = open(path, O_RDWR);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pwrite(fd, "\xff", 1, 16 + 100), 1);
	ck_assert_int_eq(dcache_peek(root, "k", k, b, sizeof(b)), SQK_ECORRUPT);
	ck_assert_int_eq(pwrite(fd, a + 100, 1, 16 + 100), 1);
	close(fd);
	/* k is the oldest of four; touched, three newer ones go first */
	for (uint64_t i = 1; i <= 3; i++)
		ck_assert_int_eq(dcache_put(d, i, a, sizeof(a)), 0);
	ck_assert_int_eq(dcache_touch(d, k), 0);
	for (uint64_t i = 4; i <= 6; i++)
		ck_assert_int_eq(dcache_put(d, i, a, sizeof(a)), 0);
	ck_assert_int_eq(dcache_get(d, k, b, sizeof(b)), 0);
	for (uint64_t i = 1; i <= 3; i++)
		ck_assert_int_eq(dcache_get(d, i, b, sizeof(b)), SQK_ENOENT);
	dcache_close(d);
	rm_rf(root);
	free(root);
}
END_TEST

/* A temporary of a process that is gone is removed at open; a live one is kept. */
START_TEST(test_dcache_stale_tmp)
{
	char *root = tmpdir(), dead[600], live[600];
	struct dcache *d;
	FILE *f;

	snprintf(dead, sizeof(dead), "%s/k", root);
	ck_assert_int_eq(mkdir(dead, 0700), 0);
	snprintf(dead, sizeof(dead), "%s/k/.tmp.999999999.1.3", root);
	snprintf(live, sizeof(live), "%s/k/.tmp.%ld.1.4", root, (long)getpid());
	f = fopen(dead, "w");
	fclose(f);
	f = fopen(live, "w");
	fclose(f);
	ck_assert_int_eq(dcache_open(root, "k", 1 << 20, 0, 0, 0, &d), 0);
	ck_assert_int_eq(access(dead, F_OK), -1);
	ck_assert_int_eq(access(live, F_OK), 0);
	dcache_close(d);
	rm_rf(root);
	free(root);
}
END_TEST

/* The byte bound holds over every key folder, oldest files first. */
START_TEST(test_dcache_bound)
{
	char *root = tmpdir(), path[600];
	uint8_t a[4096], b[4096];
	struct dcache *d1, *d2;
	unsigned i;

	test_fill_random(a, sizeof(a), 3);
	ck_assert_int_eq(dcache_open(root, "old", 10 * (4096 + 16), 0, 0, 0, &d1), 0);
	for (i = 0; i < 8; i++)
		dcache_put(d1, i, a, sizeof(a));
	dcache_close(d1);
	ck_assert_int_eq(dcache_open(root, "new", 10 * (4096 + 16), 0, 0, 0, &d2), 0);
	for (i = 0; i < 6; i++)
		dcache_put(d2, i, a, sizeof(a));
	snprintf(path, sizeof(path), "%s/old", root);
	ck_assert_uint_eq(count_files(path), 4);
	snprintf(path, sizeof(path), "%s/new", root);
	ck_assert_uint_eq(count_files(path), 6);
	for (i = 0; i < 6; i++)
		ck_assert_int_eq(dcache_get(d2, i, b, sizeof(b)), 0);
	/* keys never mix: the same chunk number of another version is absent */
	ck_assert_int_eq(dcache_get(d2, 7, b, sizeof(b)), SQK_ENOENT);
	dcache_close(d2);
	rm_rf(root);
	free(root);
}
END_TEST

START_TEST(test_dcache_default_dir)
{
	char buf[256];

	setenv("XDG_CACHE_HOME", "/x/cache", 1);
	ck_assert_int_eq(dcache_default_dir(buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "/x/cache/squashkit");
	unsetenv("XDG_CACHE_HOME");
	setenv("HOME", "/home/u", 1);
	ck_assert_int_eq(dcache_default_dir(buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "/home/u/.cache/squashkit");
	unsetenv("HOME");
	ck_assert_int_eq(dcache_default_dir(buf, sizeof(buf)), SQK_ENOENT);
}
END_TEST

/* Without a server nothing is opened: a clear error, no hang. */
START_TEST(test_http_refused)
{
	struct sqk_http_opts o = {
	    .size = sizeof(o), .retries_set = true, .retries = 1, .timeout_s = 2};
	struct sqk_io *io = (struct sqk_io *)1;

	ck_assert_int_eq(sqk_io_http_create("http://127.0.0.1:9/none.sqsh", &o, &io), SQK_EIO);
	ck_assert_ptr_null(io);
	ck_assert_int_eq(sqk_io_http_create("/local/path", &o, &io), SQK_EINVAL);
}
END_TEST

/* What the background fetch uses: the room left, whether a chunk is there, and a store that
 * never evicts (refused when the limit has no room, every older file kept). */
START_TEST(test_dcache_room)
{
	char *root = tmpdir(), path[600];
	uint8_t a[4096], b[4096];
	struct dcache *d1, *d2;
	uint64_t entry = 4096 + 16;
	unsigned i;

	test_fill_random(a, sizeof(a), 5);
	ck_assert_int_eq(dcache_open(root, "old", 4 * entry, 0, 0, 0, &d1), 0);
	ck_assert_uint_eq(dcache_entry_size(d1, 1, sizeof(a)), entry);
	ck_assert_uint_eq(dcache_room(d1), 4 * entry);
	ck_assert_int_eq(dcache_put(d1, 1, a, sizeof(a)), 0);
	ck_assert(dcache_has(d1, 1));
	ck_assert(!dcache_has(d1, 2));
	dcache_close(d1);
	ck_assert_int_eq(dcache_open(root, "new", 4 * entry, 0, 0, 0, &d2), 0);
	ck_assert_uint_eq(dcache_room(d2), 3 * entry); /* over every key folder */
	for (i = 0; i < 3; i++)
		ck_assert_int_eq(dcache_put_room(d2, i, a, sizeof(a)), 0);
	ck_assert_uint_eq(dcache_room(d2), 0);
	ck_assert_int_eq(dcache_put_room(d2, 3, a, sizeof(a)), SQK_ETOOBIG);
	ck_assert(!dcache_has(d2, 3));
	snprintf(path, sizeof(path), "%s/old", root);
	ck_assert_uint_eq(count_files(path), 1); /* nothing evicted */
	snprintf(path, sizeof(path), "%s/new", root);
	ck_assert_uint_eq(count_files(path), 3);
	/* dcache_put evicts the oldest instead; an entry above the limit is refused */
	ck_assert_int_eq(dcache_put(d2, 3, a, sizeof(a)), 0);
	ck_assert_int_eq(dcache_get(d2, 3, b, sizeof(b)), 0);
	snprintf(path, sizeof(path), "%s/old", root);
	ck_assert_uint_eq(count_files(path), 0);
	{
		size_t big = 5 * sizeof(a);
		uint8_t *p = calloc(1, big);

		ck_assert_int_eq(dcache_put(d2, 9, p, big), SQK_ENOSPC);
		free(p);
	}
	dcache_close(d2);
	rm_rf(root);
	free(root);
}
END_TEST

/* The bytes the files under dir take on disk (unit files have holes). */
static uint64_t disk_bytes(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	uint64_t n = 0;

	if (!d)
		return 0;
	while ((e = readdir(d))) {
		struct stat st;
		char path[800];

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		if (stat(path, &st) == 0)
			n += S_ISDIR(st.st_mode) ? disk_bytes(path) : (uint64_t)st.st_blocks * 512;
	}
	closedir(d);
	return n;
}

/* Unit files: chunks of 4096 bytes, four a file; the last chunk of the image shorter. */
#define UCS 4096u
#define UPER 4u
#define UNITS 64u /* unit files of the image: u0 .. u3f */
#define UENTRY (UCS + 4096 / UPER) /* a slot and its share of the header area */
#define UFILE(n) (4096 + (n) * UCS)    /* a unit file of n chunks on disk */

/* Chunks go to one file per unit, each slot read back whole; a reopened cache counts them. */
START_TEST(test_dcache_units)
{
	char *root = tmpdir(), path[600];
	uint8_t a[6][UCS], b[UCS];
	struct dcache *d;
	unsigned i;

	for (i = 0; i < 6; i++)
		test_fill_random(a[i], UCS, 20 + i);
	ck_assert_int_eq(dcache_open(root, "k", 1 << 20, UCS, UPER, UNITS, &d), 0);
	ck_assert_uint_eq(dcache_entry_size(d, 1, UCS), UENTRY);
	ck_assert_uint_eq(dcache_entry_size(d, DCACHE_SOLO + 1, 100), 100 + 16);
	for (i = 0; i < 6; i++)
		ck_assert_int_eq(dcache_put(d, i, a[i], i == 5 ? 1000 : UCS), 0);
	ck_assert_int_eq(dcache_put(d, DCACHE_SOLO + 3, a[0], 100), 0);
	snprintf(path, sizeof(path), "%s/k", root);
	ck_assert_uint_eq(count_files(path), 3); /* u0, u1 and the solo entry */
	snprintf(path, sizeof(path), "%s/k/u1", root);
	ck_assert_int_eq(access(path, F_OK), 0);
	for (i = 0; i < 6; i++) {
		size_t len = i == 5 ? 1000 : UCS;

		memset(b, 0, sizeof(b));
		ck_assert(dcache_has(d, i));
		ck_assert_int_eq(dcache_get(d, i, b, len), 0);
		ck_assert_mem_eq(a[i], b, len);
	}
	ck_assert(!dcache_has(d, 6));
	ck_assert_int_eq(dcache_get(d, 6, b, UCS), SQK_ENOENT);
	ck_assert_int_eq(dcache_get(d, DCACHE_SOLO + 3, b, 100), 0);
	ck_assert_mem_eq(a[0], b, 100);
	/* counted by the blocks they take: a header block and whole blocks of data */
	ck_assert_uint_eq(dcache_room(d), (1 << 20) - UFILE(4) - UFILE(2) - 116);
	ck_assert_uint_eq(disk_bytes(root), UFILE(4) + UFILE(2) + 4096);
	dcache_close(d);

	ck_assert_int_eq(dcache_open(root, "k", 1 << 20, UCS, UPER, UNITS, &d), 0);
	ck_assert_uint_eq(dcache_room(d), (1 << 20) - UFILE(4) - UFILE(2) - 116);
	ck_assert_int_eq(dcache_get(d, 3, b, UCS), 0);
	ck_assert_mem_eq(a[3], b, UCS);
	/* the wrong length is a miss, and the slot is emptied */
	ck_assert_int_eq(dcache_get(d, 3, b, UCS - 1), SQK_ENOENT);
	ck_assert(!dcache_has(d, 3));
	ck_assert_int_eq(dcache_get(d, 2, b, UCS), 0);
	dcache_close(d);
	rm_rf(root);
	free(root);
}
END_TEST

/* A flipped byte in a slot, or a unit file cut short (a torn write after a crash), is never
 * served; the unit's other slots are. */
START_TEST(test_dcache_units_damaged)
{
	char *root = tmpdir(), path[600];
	uint8_t a[UCS], b[UCS];
	struct dcache *d;
	unsigned i;
	int fd;

	test_fill_random(a, sizeof(a), 31);
	ck_assert_int_eq(dcache_open(root, "k", 1 << 20, UCS, UPER, UNITS, &d), 0);
	for (i = 0; i < UPER; i++)
		ck_assert_int_eq(dcache_put(d, i, a, UCS), 0);
	snprintf(path, sizeof(path), "%s/k/u0", root);
	fd = open(path, O_RDWR);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pwrite(fd, "\xff", 1, 4096 + 2 * UCS + 100), 1);
	close(fd);
	ck_assert(dcache_has(d, 2)); /* not read: has() is cheap */
	ck_assert_int_eq(dcache_get(d, 2, b, UCS), SQK_ENOENT);
	ck_assert(!dcache_has(d, 2));
	ck_assert_int_eq(dcache_get(d, 1, b, UCS), 0);
	ck_assert_mem_eq(a, b, UCS);

	ck_assert_int_eq(truncate(path, 4096 + 3 * UCS + 100), 0);
	ck_assert_int_eq(dcache_get(d, 3, b, UCS), SQK_ENOENT);
	ck_assert_int_eq(dcache_get(d, 0, b, UCS), 0);
	/* stored again, served again */
	ck_assert_int_eq(dcache_put(d, 2, a, UCS), 0);
	ck_assert_int_eq(dcache_get(d, 2, b, UCS), 0);
	ck_assert_mem_eq(a, b, UCS);
	/* a unit file of another geometry is a miss, and emptied by the next store */
	snprintf(path, sizeof(path), "%s/k/u1", root);
	fd = open(path, O_RDWR | O_CREAT, 0600);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pwrite(fd, "SQKU\x00\x20\0\0\x08\0\0\0\0\0\0\0", 16, 0), 16);
	ck_assert_int_eq(pwrite(fd, a, UCS, 9000), UCS);
	close(fd);
	ck_assert(!dcache_has(d, 5));
	ck_assert_int_eq(dcache_get(d, 5, b, UCS), SQK_ENOENT);
	ck_assert_int_eq(dcache_put(d, 5, a, UCS), 0);
	ck_assert_int_eq(dcache_get(d, 5, b, UCS), 0);
	ck_assert_mem_eq(a, b, UCS);
	ck_assert(!dcache_has(d, 4));
	dcache_close(d);
	rm_rf(root);
	free(root);
}
END_TEST

/* A unit file of the image's folder numbered past the image's units cannot be the image's: it
 * is removed at open, not indexed (u10000000 would take 2 GiB of index, and uffffffffffffffff
 * failed the open); the image's own units are served. */
START_TEST(test_dcache_units_foreign)
{
	static const char *const names[] = { "u10000000", "uffffffffffffffff", "u40" };
	char *root = tmpdir(), path[600];
	uint8_t a[UCS], b[UCS];
	struct dcache *d;
	FILE *f;

	test_fill_random(a, sizeof(a), 41);
	ck_assert_int_eq(dcache_open(root, "k", 1 << 20, UCS, UPER, UNITS, &d), 0);
	ck_assert_int_eq(dcache_put(d, 4 * UPER + 1, a, UCS), 0); /* u4 */
	dcache_close(d);
	for (unsigned i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		int fd;

		snprintf(path, sizeof(path), "%s/k/%s", root, names[i]);
		fd = open(path, O_WRONLY | O_CREAT, 0600);
		ck_assert_int_ge(fd, 0);
		ck_assert_int_eq(write(fd, "SQKU", 4), 4);
		close(fd);
	}
	ck_assert_int_eq(dcache_open(root, "k", 1 << 20, UCS, UPER, UNITS, &d), 0);
	for (unsigned i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(path, sizeof(path), "%s/k/%s", root, names[i]);
		ck_assert_msg(access(path, F_OK) != 0, "%s is still there", names[i]);
	}
	ck_assert_int_eq(dcache_get(d, 4 * UPER + 1, b, UCS), 0);
	ck_assert_mem_eq(a, b, UCS);
	ck_assert_uint_eq(dcache_room(d), (1 << 20) - UFILE(1)); /* u4 alone: one slot written */
	dcache_close(d);
	/* a name the cache would not give (u01 for u1) is neither counted nor evicted */
	snprintf(path, sizeof(path), "%s/k/u01", root);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fwrite(a, 1, UCS, f), UCS);
	fclose(f);
	ck_assert_int_eq(dcache_open(root, "k", 1 << 20, UCS, UPER, UNITS, &d), 0);
	ck_assert_uint_eq(dcache_room(d), (1 << 20) - UFILE(1));
	dcache_close(d);
	rm_rf(root);
	free(root);
}
END_TEST

/* Two writers of a new unit file at once (threads here; processes alike): each one's chunk is
 * kept (the second used to empty the file the first had just made, its chunk with it). */
struct race_arg {
	struct dcache *d;
	pthread_barrier_t *go;
	const uint8_t *data;
	unsigned slot, rounds;
};

/* Meets the other writer at every round, even after a failed store (leaving early would
 * leave it waiting for ever): p when a store failed, else NULL. */
static void *race_put(void *p)
{
	struct race_arg *a = p;
	void *rc = NULL;

	for (unsigned u = 0; u < a->rounds; u++) {
		pthread_barrier_wait(a->go);
		if (dcache_put(a->d, (uint64_t)u * UPER + a->slot, a->data, UCS))
			rc = p;
	}
	return rc;
}

START_TEST(test_dcache_units_race)
{
	enum { ROUNDS = UNITS };
	char *root = tmpdir();
	uint8_t a[2][UCS], b[UCS];
	struct race_arg args[2];
	pthread_barrier_t go;
	pthread_t th[2];
	struct dcache *d;
	unsigned lost = 0;

	test_fill_random(a[0], UCS, 51);
	test_fill_random(a[1], UCS, 52);
	for (unsigned pass = 0; pass < 30 && !lost; pass++) {
		ck_assert_int_eq(dcache_open(root, "k", 64 << 20, UCS, UPER, UNITS, &d), 0);
		pthread_barrier_init(&go, NULL, 2);
		for (unsigned i = 0; i < 2; i++) {
			args[i] = (struct race_arg){ d, &go, a[i], i, ROUNDS };
			ck_assert_int_eq(pthread_create(&th[i], NULL, race_put, &args[i]), 0);
		}
		for (unsigned i = 0; i < 2; i++) {
			void *rc;

			pthread_join(th[i], &rc);
			ck_assert_ptr_null(rc);
		}
		pthread_barrier_destroy(&go);
		for (unsigned u = 0; u < ROUNDS; u++) {
			for (unsigned i = 0; i < 2; i++) {
				if (dcache_get(d, (uint64_t)u * UPER + i, b, UCS) ||
				    memcmp(a[i], b, UCS))
					lost++;
			}
		}
		dcache_close(d);
		rm_rf(root);
		ck_assert_int_eq(mkdir(root, 0700), 0);
	}
	ck_assert_msg(lost == 0, "%u chunks lost to a second writer", lost);
	rm_rf(root);
	free(root);
}
END_TEST

/* The byte bound holds on disk over every key folder: unit files go whole, the one written
 * least recently first. A chunk file of the layout before unit files is removed at open. */
START_TEST(test_dcache_units_bound)
{
	char *root = tmpdir(), path[600], stale[600];
	static const unsigned order[] = { 0, 1, 2, 4, 3, 5 };
	uint8_t a[UCS], b[UCS];
	struct dcache *d1, *d2;
	uint64_t limit = 6 * UENTRY; /* 7.5 chunks: two unit files of 3 and 4 chunks */
	unsigned i;
	FILE *f;

	test_fill_random(a, sizeof(a), 33);
	snprintf(stale, sizeof(stale), "%s/new", root);
	ck_assert_int_eq(mkdir(stale, 0700), 0);
	snprintf(stale, sizeof(stale), "%s/new/1f", root);
	f = fopen(stale, "w");
	ck_assert_ptr_nonnull(f);
	fclose(f);
	ck_assert_int_eq(dcache_open(root, "old", limit, UCS, UPER, UNITS, &d1), 0);
	/* u0 written last by chunk 3: u1 (chunk 4) goes for chunk 5 */
	for (i = 0; i < 6; i++)
		ck_assert_int_eq(dcache_put(d1, order[i], a, UCS), 0);
	ck_assert_int_eq(dcache_get(d1, 4, b, UCS), SQK_ENOENT);
	for (i = 0; i < 4; i++)
		ck_assert_int_eq(dcache_get(d1, i, b, UCS), 0);
	ck_assert_int_eq(dcache_get(d1, 5, b, UCS), 0);
	ck_assert_uint_le(disk_bytes(root), limit);
	ck_assert_uint_eq(dcache_room(d1), limit - UFILE(4) - UFILE(1));
	dcache_close(d1);

	ck_assert_int_eq(dcache_open(root, "new", limit, UCS, UPER, UNITS, &d2), 0);
	ck_assert_int_eq(access(stale, F_OK), -1);
	ck_assert_uint_eq(dcache_room(d2), limit - UFILE(4) - UFILE(1));
	for (i = 0; i < 4; i++)
		ck_assert_int_eq(dcache_put(d2, i, a, UCS), 0);
	ck_assert_uint_le(disk_bytes(root), limit);
	for (i = 0; i < 4; i++)
		ck_assert_int_eq(dcache_get(d2, i, b, UCS), 0);
	snprintf(path, sizeof(path), "%s/old", root);
	ck_assert_uint_eq(count_files(path), 0);
	/* dcache_put_room never evicts: a new file of one chunk fits, a second does not */
	ck_assert_int_eq(dcache_put_room(d2, 4, a, UCS), 0);
	ck_assert_int_eq(dcache_put_room(d2, 8, a, UCS), SQK_ETOOBIG);
	ck_assert(!dcache_has(d2, 8));
	ck_assert_uint_le(disk_bytes(root), limit);
	dcache_close(d2);
	rm_rf(root);
	free(root);
}
END_TEST

/* A fifo or a symlink in the folder is never opened as an entry (a fifo would block the read
 * for ever): a miss, and the next store makes a regular file. */
START_TEST(test_dcache_not_regular)
{
	char *root = tmpdir(), path[600];
	uint8_t a[UCS], b[UCS];
	struct dcache *d, *d2;
	struct stat st;

	test_fill_random(a, sizeof(a), 51);
	snprintf(path, sizeof(path), "%s/k", root);
	ck_assert_int_eq(mkdir(path, 0700), 0);
	snprintf(path, sizeof(path), "%s/k/u0", root);
	ck_assert_int_eq(mkfifo(path, 0600), 0);
	snprintf(path, sizeof(path), "%s/k/%llx", root, (unsigned long long)(DCACHE_SOLO + 2));
	ck_assert_int_eq(mkfifo(path, 0600), 0);
	snprintf(path, sizeof(path), "%s/k/u1", root);
	ck_assert_int_eq(symlink("/etc/hostname", path), 0);
	snprintf(path, sizeof(path), "%s/k/.units", root);
	ck_assert_int_eq(mkfifo(path, 0600), 0);
	ck_assert_int_eq(dcache_open(root, "k", 1 << 20, UCS, UPER, UNITS, &d), 0);
	/* the lock file made anew in the fifo's place: a second opener's unit locks conflict */
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert(S_ISREG(st.st_mode));
	ck_assert_int_eq(dcache_open(root, "k", 1 << 20, UCS, UPER, UNITS, &d2), 0);
	ck_assert(dcache_unit_trylock(d, 3));
	ck_assert(!dcache_unit_trylock(d2, 3));
	dcache_close(d2);
	ck_assert(!dcache_has(d, 1));
	ck_assert_int_eq(dcache_get(d, 1, b, UCS), SQK_ENOENT);
	ck_assert(!dcache_has(d, UPER));
	ck_assert_int_eq(dcache_get(d, UPER, b, UCS), SQK_ENOENT);
	ck_assert_int_eq(dcache_get(d, DCACHE_SOLO + 2, b, 100), SQK_ENOENT);
	ck_assert_int_eq(dcache_put(d, 1, a, UCS), 0);
	ck_assert_int_eq(dcache_get(d, 1, b, UCS), 0);
	ck_assert_mem_eq(a, b, UCS);
	ck_assert_int_eq(dcache_put(d, UPER, a, UCS), 0);
	ck_assert_int_eq(dcache_get(d, UPER, b, UCS), 0);
	ck_assert_mem_eq(a, b, UCS);
	ck_assert_int_eq(dcache_put(d, DCACHE_SOLO + 2, a, 100), 0);
	ck_assert_int_eq(dcache_get(d, DCACHE_SOLO + 2, b, 100), 0);
	ck_assert_mem_eq(a, b, 100);
	dcache_close(d);
	rm_rf(root);
	free(root);
}
END_TEST

/* The image's folder as a symlink is refused, and nothing where it points is touched. */
START_TEST(test_dcache_folder_symlink)
{
	char *root = tmpdir(), *out = tmpdir(), path[600], link[600];
	struct dcache *d = NULL;
	char got[16] = "";
	FILE *f;

	snprintf(path, sizeof(path), "%s/u1", out);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs("precious", f);
	fclose(f);
	snprintf(link, sizeof(link), "%s/k", root);
	ck_assert_int_eq(symlink(out, link), 0);
	ck_assert_int_ne(dcache_open(root, "k", 1 << 20, UCS, UPER, UNITS, &d), 0);
	ck_assert_ptr_null(d);
	f = fopen(path, "r");
	ck_assert_ptr_nonnull(f);
	ck_assert_ptr_nonnull(fgets(got, sizeof(got), f));
	fclose(f);
	ck_assert_str_eq(got, "precious");
	snprintf(path, sizeof(path), "%s/.units", out);
	ck_assert_int_eq(access(path, F_OK), -1);
	rm_rf(root);
	rm_rf(out);
	free(root);
	free(out);
}
END_TEST

/* Evicting the files of an image another cache has open leaves its folder and lock file: its
 * stores go on, and its unit locks still exclude a second opener. Once nobody has it open,
 * its emptied folder goes. */
START_TEST(test_dcache_evict_in_use)
{
	char *root = tmpdir(), path[600];
	uint8_t a[UCS], b[UCS];
	struct dcache *busy, *other, *d;
	uint64_t limit = 3 * UFILE(1);

	test_fill_random(a, sizeof(a), 61);
	ck_assert_int_eq(dcache_open(root, "busy", limit, UCS, UPER, UNITS, &busy), 0);
	ck_assert_int_eq(dcache_put(busy, 0, a, UCS), 0);
	ck_assert_int_eq(dcache_put(busy, UPER, a, UCS), 0);
	ck_assert_int_eq(dcache_open(root, "new", limit, UCS, UPER, UNITS, &d), 0);
	for (unsigned u = 0; u < 3; u++)
		ck_assert_int_eq(dcache_put(d, u * UPER, a, UCS), 0);
	snprintf(path, sizeof(path), "%s/busy", root);
	ck_assert_uint_eq(count_files(path), 0); /* both its files evicted */
	snprintf(path, sizeof(path), "%s/busy/.units", root);
	ck_assert_int_eq(access(path, F_OK), 0);
	ck_assert(dcache_unit_trylock(busy, 5));
	ck_assert_int_eq(dcache_open(root, "busy", limit, UCS, UPER, UNITS, &other), 0);
	ck_assert(!dcache_unit_trylock(other, 5));
	dcache_unit_unlock(busy, 5);
	ck_assert_int_eq(dcache_put(busy, 2 * UPER, a, UCS), 0);
	ck_assert_int_eq(dcache_get(other, 2 * UPER, b, UCS), 0);
	ck_assert_mem_eq(a, b, UCS);
	dcache_close(busy);
	dcache_close(other);
	dcache_close(d);
	/* idle now: evicting its last file (the oldest) takes the folder */
	snprintf(path, sizeof(path), "%s/busy/u2", root);
	ck_assert_int_eq(utimensat(AT_FDCWD, path, (const struct timespec[2]){ { 1, 0 }, { 1, 0 } },
				   0), 0);
	ck_assert_int_eq(dcache_open(root, "new", limit, UCS, UPER, UNITS, &d), 0);
	ck_assert_int_eq(dcache_put(d, 3 * UPER, a, UCS), 0);
	snprintf(path, sizeof(path), "%s/busy", root);
	ck_assert_int_eq(access(path, F_OK), -1);
	for (unsigned u = 0; u < 4; u++)
		ck_assert_int_eq(dcache_get(d, u * UPER, b, UCS), u ? 0 : SQK_ENOENT);
	dcache_close(d);
	rm_rf(root);
	free(root);
}
END_TEST

/* Two processes (two caches here) writing into one folder at once: each counts the folder
 * again as it writes, so together they pass the limit by little, not twice over. */
START_TEST(test_dcache_shared_bound)
{
	enum { CS = 65536, PER = 4, N = 256 };
	char *root = tmpdir();
	uint64_t limit = (uint64_t)16 << 20, most = 0, ufile = 4096 + PER * CS;
	uint8_t *a = malloc(CS), *b = malloc(CS);
	struct dcache *d[2];

	ck_assert_ptr_nonnull(a);
	ck_assert_ptr_nonnull(b);
	test_fill_random(a, CS, 71);
	ck_assert_int_eq(dcache_open(root, "one", limit, CS, PER, N, &d[0]), 0);
	ck_assert_int_eq(dcache_open(root, "two", limit, CS, PER, N, &d[1]), 0);
	for (unsigned k = 0; k < N; k++) {
		for (unsigned i = 0; i < 2; i++)
			ck_assert_int_eq(dcache_put(d[i], k, a, CS), 0);
		if (k % 8 == 7) {
			uint64_t now = disk_bytes(root);

			most = now > most ? now : most;
		}
	}
	/* each passes it by at most a sixteenth (here 1 MiB) and the unit file it writes to */
	ck_assert_uint_le(most, limit + 2 * (limit / 16 + ufile));
	for (unsigned i = 0; i < 2; i++) {
		ck_assert_int_eq(dcache_get(d[i], N - 1, b, CS), 0);
		ck_assert_mem_eq(a, b, CS);
		dcache_close(d[i]);
	}
	rm_rf(root);
	free(root);
	free(a);
	free(b);
}
END_TEST

/* A count while the cache is in use leaves temporaries alone, even of a process it cannot see
 * (another PID namespace sharing the folder); the open removes those of gone processes. */
START_TEST(test_dcache_recount_tmp)
{
	enum { CS = 65536, PER = 4 };
	char *root = tmpdir(), tmp[600];
	uint8_t *a = malloc(CS);
	struct dcache *d;
	pid_t gone = fork();
	int fd;

	ck_assert_int_ge(gone, 0);
	if (gone == 0)
		_exit(0);
	ck_assert_int_eq(waitpid(gone, NULL, 0), gone);
	ck_assert_ptr_nonnull(a);
	test_fill_random(a, CS, 73);
	ck_assert_int_eq(dcache_open(root, "k", (uint64_t)16 << 20, CS, PER, 64, &d), 0);
	snprintf(tmp, sizeof(tmp), "%s/k/.tmp.%ld.1.7", root, (long)gone);
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL, 0600);
	ck_assert_int_ge(fd, 0);
	close(fd);
	for (unsigned k = 0; k < 48; k++) /* 3 MiB: counted again twice */
		ck_assert_int_eq(dcache_put(d, k, a, CS), 0);
	ck_assert_int_eq(access(tmp, F_OK), 0);
	dcache_close(d);
	ck_assert_int_eq(dcache_open(root, "k", (uint64_t)16 << 20, CS, PER, 64, &d), 0);
	ck_assert_int_eq(access(tmp, F_OK), -1);
	dcache_close(d);
	rm_rf(root);
	free(root);
	free(a);
}
END_TEST

/* A file dated past 2262 (the end of int64_t nanoseconds) counts as the newest, not the oldest. */
START_TEST(test_dcache_far_mtime)
{
	char *root = tmpdir(), path[600];
	const struct timespec far[2] = { { 10413792000, 0 }, { 10413792000, 0 } }; /* 2300 */
	uint64_t entry = 4096 + 16;
	uint8_t a[4096], b[4096];
	struct dcache *d;

	test_fill_random(a, sizeof(a), 75);
	ck_assert_int_eq(dcache_open(root, "old", 4 * entry, 0, 0, 0, &d), 0);
	ck_assert_int_eq(dcache_put(d, 1, a, sizeof(a)), 0);
	ck_assert_int_eq(dcache_put(d, 2, a, sizeof(a)), 0);
	dcache_close(d);
	snprintf(path, sizeof(path), "%s/old/1", root);
	ck_assert_int_eq(utimensat(AT_FDCWD, path, far, 0), 0);
	ck_assert_int_eq(dcache_open(root, "new", 4 * entry, 0, 0, 0, &d), 0);
	for (uint64_t k = 0; k < 3; k++) /* one entry of old goes: 2, the older */
		ck_assert_int_eq(dcache_put(d, k, a, sizeof(a)), 0);
	ck_assert_int_eq(access(path, F_OK), 0);
	snprintf(path, sizeof(path), "%s/old/2", root);
	ck_assert_int_eq(access(path, F_OK), -1);
	ck_assert_int_eq(dcache_get(d, 2, b, sizeof(b)), 0);
	dcache_close(d);
	rm_rf(root);
	free(root);
}
END_TEST

/* A range server on 127.0.0.1 for one image in memory: one GET a connection (Range: bytes=A-B
 * or bytes=-N), answered 206 with its ETag and closed, until stop; rserver_serve changes what it
 * serves (fail_from: a range reaching that byte is answered 503). */
#define RS_LOG 256

struct rserver {
	pthread_mutex_t mu;
	const uint8_t *img;
	size_t len;
	const char *etag;
	uint64_t fail_from; /* 0: none */
	int lfd;
	unsigned short port;
	atomic_bool stop;
	pthread_t th;
	uint64_t got[RS_LOG][2]; /* the ranges asked for, [a, b] */
	atomic_uint ngot;
};

/* A client that hung up (a cancelled background part) ends the answer: EPIPE, not SIGPIPE. */
static void write_all(int fd, const void *p, size_t n)
{
	const uint8_t *b = p;
	ssize_t w;

	while (n && (w = send(fd, b, n, MSG_NOSIGNAL)) > 0) {
		b += w;
		n -= (size_t)w;
	}
}

static void rserve_one(struct rserver *s, int fd)
{
	char req[4096], hdr[256];
	const char *rg;
	struct rserver now;
	uint64_t a, b;
	int n;

	test_read_head(fd, req, sizeof(req));
	pthread_mutex_lock(&s->mu);
	now = (struct rserver){ .img = s->img, .len = s->len, .etag = s->etag,
				.fail_from = s->fail_from };
	pthread_mutex_unlock(&s->mu);
	a = 0;
	b = now.len - 1;
	rg = strstr(req, "\nRange: bytes=");
	if (rg) {
		char *e;

		rg += strlen("\nRange: bytes=");
		if (*rg == '-') {
			uint64_t k = strtoull(rg + 1, NULL, 10);
			a = k < now.len ? now.len - k : 0;
		} else {
			a = strtoull(rg, &e, 10);
			if (*e == '-' && e[1] >= '0' && e[1] <= '9')
				b = strtoull(e + 1, NULL, 10);
		}
		b = b < now.len ? b : now.len - 1;
	}
	if (a > b)
		return;
	if (atomic_load(&s->ngot) < RS_LOG) {
		s->got[atomic_load(&s->ngot)][0] = a;
		s->got[atomic_load(&s->ngot)][1] = b;
		atomic_fetch_add(&s->ngot, 1); /* one server thread writes; readers wait on ngot */
	}
	if (now.fail_from && b >= now.fail_from) {
		static const char busy[] = "HTTP/1.1 503 Service Unavailable\r\n"
					   "Content-Length: 0\r\nConnection: close\r\n\r\n";

		write_all(fd, busy, sizeof(busy) - 1);
		return;
	}
	n = snprintf(hdr, sizeof(hdr), "HTTP/1.1 206 Partial Content\r\nContent-Length: %llu\r\n"
		     "Content-Range: bytes %llu-%llu/%zu\r\nETag: \"%s\"\r\n"
		     "Connection: close\r\n\r\n",
		     (unsigned long long)(b - a + 1), (unsigned long long)a,
		     (unsigned long long)b, now.len, now.etag);
	write_all(fd, hdr, (size_t)n);
	write_all(fd, now.img + a, (size_t)(b - a + 1));
}

static void *rserve(void *arg)
{
	struct rserver *s = arg;
	struct pollfd p = { .fd = s->lfd, .events = POLLIN };

	while (!atomic_load(&s->stop)) {
		int fd;

		if (poll(&p, 1, 100) != 1 || (fd = accept(s->lfd, NULL, NULL)) < 0)
			continue;
		rserve_one(s, fd);
		close(fd);
	}
	return NULL;
}

/* What s serves from now on (img borrowed). */
static void rserver_serve(struct rserver *s, const uint8_t *img, size_t len, const char *etag,
			  uint64_t fail_from)
{
	pthread_mutex_lock(&s->mu);
	s->img = img;
	s->len = len;
	s->etag = etag;
	s->fail_from = fail_from;
	pthread_mutex_unlock(&s->mu);
}

static void rserver_start(struct rserver *s, const uint8_t *img, size_t len, const char *etag)
{
	pthread_mutex_init(&s->mu, NULL);
	rserver_serve(s, img, len, etag, 0);
	atomic_init(&s->stop, false);
	atomic_init(&s->ngot, 0);
	s->lfd = test_listen_local(&s->port);
	ck_assert_int_eq(pthread_create(&s->th, NULL, rserve, s), 0);
}

static void rserver_stop(struct rserver *s)
{
	atomic_store(&s->stop, true);
	pthread_join(s->th, NULL);
	close(s->lfd);
	pthread_mutex_destroy(&s->mu);
}

/* The end of a test served by srv: the server stopped, the image (mem), its source tree and
 * the cache folder (freed) gone. */
static void served_end(struct rserver *srv, struct sqk_io *mem, const char *tree, char *cache)
{
	rserver_stop(srv);
	sqk_io_destroy(mem);
	test_tree_remove(tree);
	rm_rf(cache);
	free(cache);
}

/* Threads of this process running as SCHED_BATCH. */
static unsigned batch_threads(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	unsigned n = 0;

	ck_assert_ptr_nonnull(d);
	while ((e = readdir(d)))
		if (e->d_name[0] != '.' &&
		    sched_getscheduler((pid_t)atoi(e->d_name)) == SCHED_BATCH)
			n++;
	closedir(d);
	return n;
}

/* The background fetch's thread alone runs as SCHED_BATCH: when it starts again after a quiesce
 * (or in a forked child), the transfer thread it needs is started by the caller, not by it. */
START_TEST(test_http_bg_thread_policy)
{
	char tree[512], url[64], *cache = tmpdir();
	struct sqk_http_opts ho;
	struct sqk_open_opts oo;
	struct sqk_http_stats st = { .size = sizeof(st) };
	struct sqk_image *img = NULL;
	struct rserver srv;
	struct sqk_io *mem;
	const uint8_t *bytes;
	size_t len;
	uint64_t req0;

	test_tree_new(tree, sizeof(tree), "bgpolicy");
	for (unsigned i = 0; i < 6; i++) {
		char name[16];

		snprintf(name, sizeof(name), "f%u", i);
		test_tree_put(tree, name, ((size_t)1 << 20) + i);
	}
	mem = test_build_dir(tree, false, NULL);
	bytes = sqk_io_mem_data(mem, &len);
	ck_assert_ptr_nonnull(bytes);
	rserver_start(&srv, bytes, len, "t");
	snprintf(url, sizeof(url), "http://127.0.0.1:%u/i.sqsh", srv.port);
	sqk_http_opts_init(&ho);
	ho.cache_dir = cache;
	ho.background = true;
	ho.background_rate = 256 << 10; /* still fetching when looked at */
	sqk_open_opts_init(&oo);
	oo.http = &ho;
	ck_assert_int_eq(sqk_image_open_url(url, &oo, &img), 0);
	sqk_image_quiesce(img); /* the transfer and background threads stop */
	ck_assert_int_eq(sqk_io_http_stats(sqk_image_io(img), &st), 0);
	req0 = st.requests;
	sqk_io_http_background(sqk_image_io(img));
	for (int i = 0; i < 500 && st.requests == req0; i++) {
		usleep(10000);
		ck_assert_int_eq(sqk_io_http_stats(sqk_image_io(img), &st), 0);
	}
	ck_assert_uint_gt(st.requests, req0);
	ck_assert_uint_gt(st.background_left, 0);
	ck_assert_uint_eq(batch_threads(), 1);
	sqk_image_close(img);
	served_end(&srv, mem, tree, cache);
}
END_TEST

/* Opens url (cache folder cache, no retries: a refused connection fails at once), with the
 * keys of trust (NULL: none) trusted, the cache folder cache_size bytes (0: the default). */
static int offline_open_with(const char *url, const char *cache, struct test_log *lg,
			     struct sqk_image **img, const char *const *trust, uint64_t cache_size)
{
	struct sqk_http_opts ho;
	struct sqk_open_opts oo;

	sqk_http_opts_init(&ho);
	ho.cache_dir = cache;
	ho.retries_set = true;
	ho.retries = 0;
	ho.cache_size_set = cache_size != 0;
	ho.cache_size = cache_size;
	ho.log = test_log_add;
	ho.log_ctx = lg;
	sqk_open_opts_init(&oo);
	oo.http = &ho;
	oo.no_prefetch = true;
	oo.trust = trust;
	*lg = (struct test_log){ .lines = 0 };
	return sqk_image_open_url(url, &oo, img);
}

static int offline_open(const char *url, const char *cache, struct test_log *lg,
			struct sqk_image **img)
{
	return offline_open_with(url, cache, lg, img, NULL, 0);
}

/* Reads 4 KiB of file name at off from img and compares them with what test_tree_put wrote
 * (len bytes): 0 when equal, else the read's error (or -1 when the bytes differ). */
static int offline_read(struct sqk_image *img, const char *name, size_t len, uint64_t off)
{
	uint8_t *want = malloc(len), got[4096];
	struct sqk_inode in;
	ssize_t n;
	int rc;

	ck_assert_ptr_nonnull(want);
	test_fill_random(want, len, len + 1);
	ck_assert_int_eq(sqk_lookup_path(img, name, &in), 0);
	n = sqk_read(img, &in, got, sizeof(got), off);
	rc = n < 0 ? (int)n : n == sizeof(got) && !memcmp(got, want + off, sizeof(got)) ? 0 : -1;
	free(want);
	return rc;
}

/* The record the one map in cache/urls names (an entry of the image's cache folder), into
 * path; the map's path into map (NULL: not wanted; 1024 bytes). */
static size_t offline_record(const char *cache, char *path, size_t cap, char *mapped)
{
	char dir[600], map[1024], line[256], key[33];
	struct dirent *e;
	size_t len = 0;
	DIR *d;
	FILE *f;
	int n = 0;

	snprintf(dir, sizeof(dir), "%s/urls", cache);
	d = opendir(dir);
	ck_assert_ptr_nonnull(d);
	while ((e = readdir(d)))
		if (e->d_name[0] != '.') {
			snprintf(map, sizeof(map), "%s/%s", dir, e->d_name);
			n++;
		}
	closedir(d);
	ck_assert_int_eq(n, 1);
	f = fopen(map, "r");
	ck_assert_ptr_nonnull(f);
	ck_assert_ptr_nonnull(fgets(line, sizeof(line), f));
	fclose(f);
	ck_assert_int_eq(sscanf(line, "sqk-open 1 %32s %zu", key, &len), 2);
	/* its entry: c000 and the first 12 hex digits of the map's name */
	snprintf(path, cap, "%s/%s/c000%.12s", cache, key, strrchr(map, '/') + 1);
	if (mapped)
		memcpy(mapped, map, sizeof(map));
	return len;
}

/* With the server gone, an image opened before from the same URL opens from the cache folder:
 * bytes read before come from it (and are right), bytes never read fail, the stats say so. A
 * damaged record, another URL, or no cache folder: the open fails as it did without one. */
START_TEST(test_http_offline_open)
{
	char tree[512], url[64], other[64], rec[1024], *cache = tmpdir();
	struct sqk_http_stats st = { .size = sizeof(st) };
	const size_t big = (size_t)4 << 20, small = 65536;
	struct sqk_image *img = NULL;
	struct test_log lg;
	struct rserver srv;
	struct sqk_io *mem;
	const uint8_t *bytes;
	size_t len, rlen;
	uint8_t c, *junk;
	int fd;

	test_tree_new(tree, sizeof(tree), "offline");
	test_tree_put(tree, "a", small);
	test_tree_put(tree, "b", big);
	test_tree_put(tree, "c", small + 1);
	mem = test_build_dir(tree, false, NULL);
	bytes = sqk_io_mem_data(mem, &len);
	rserver_start(&srv, bytes, len, "t");
	snprintf(url, sizeof(url), "http://127.0.0.1:%u/i.sqsh", srv.port);
	snprintf(other, sizeof(other), "http://127.0.0.1:%u/j.sqsh", srv.port);
	ck_assert_int_eq(offline_open(url, cache, &lg, &img), 0);
	ck_assert_int_eq(offline_read(img, "a", small, 0), 0);
	ck_assert_int_eq(offline_read(img, "b", big, big / 4), 0);
	ck_assert_int_eq(offline_read(img, "c", small + 1, 0), 0);
	ck_assert_int_eq(sqk_image_http_stats(img, &st), 0);
	ck_assert(!st.offline);
	sqk_image_close(img);
	rserver_stop(&srv); /* nothing listens on the port any more */

	ck_assert_int_eq(offline_open(url, cache, &lg, &img), 0);
	ck_assert_ptr_nonnull(strstr(lg.text, "opening from the cache folder"));
	ck_assert_int_eq(sqk_image_http_stats(img, &st), 0);
	ck_assert(st.offline);
	ck_assert_int_eq(offline_read(img, "a", small, 0), 0);
	ck_assert_int_eq(offline_read(img, "b", big, big / 4), 0); /* from the cache folder */
	ck_assert_int_eq(offline_read(img, "c", small + 1, 0), 0);
	ck_assert_int_eq(sqk_image_http_stats(img, &st), 0);
	ck_assert_uint_gt(st.disk_hits, 0);
	ck_assert_int_eq(offline_read(img, "b", big, big - 4096), SQK_EIO); /* never read */
	sqk_image_close(img);

	ck_assert_int_eq(offline_open(other, cache, &lg, &img), SQK_EIO);
	ck_assert_ptr_null(strstr(lg.text, "opening from"));
	rlen = offline_record(cache, rec, sizeof(rec), NULL);
	fd = open(rec, O_RDWR);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pread(fd, &c, 1, 1000), 1); /* in the open's head */
	c ^= 0x20;
	ck_assert_int_eq(pwrite(fd, &c, 1, 1000), 1);
	close(fd);
	ck_assert_int_eq(offline_open(url, cache, &lg, &img), SQK_EIO);
	ck_assert_ptr_nonnull(strstr(lg.text, "record of the image's open"));
	ck_assert_ptr_nonnull(strstr(lg.text, rec)); /* named */
	ck_assert_ptr_nonnull(strstr(lg.text, "is damaged"));
	ck_assert_ptr_null(strstr(lg.text, "opening from"));
	ck_assert_int_eq(unlink(rec), 0); /* left as it was: only an online open replaces it */
	/* an entry that checks but is no record (as a cache folder of another version would
	 * hold): refused, named */
	junk = malloc(16 + rlen);
	ck_assert_ptr_nonnull(junk);
	memset(junk + 16, 0x5a, rlen);
	memcpy(junk, "SQKC", 4);
	for (unsigned i = 0; i < 4; i++)
		junk[4 + i] = (uint8_t)(rlen >> 8 * i);
	for (unsigned i = 0; i < 8; i++)
		junk[8 + i] = (uint8_t)(XXH3_64bits(junk + 16, rlen) >> 8 * i);
	fd = open(rec, O_WRONLY | O_CREAT | O_EXCL, 0600);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, junk, 16 + rlen), (ssize_t)(16 + rlen));
	close(fd);
	free(junk);
	ck_assert_int_eq(offline_open(url, cache, &lg, &img), SQK_EIO);
	ck_assert_ptr_nonnull(strstr(lg.text, "record of the image's open"));
	ck_assert_ptr_nonnull(strstr(lg.text, "is damaged"));
	ck_assert_ptr_null(strstr(lg.text, "opening from"));
	sqk_io_destroy(mem);
	test_tree_remove(tree);
	rm_rf(cache);
	free(cache);
}
END_TEST

/* An image of one 64 KiB file "a", built in a new tree (the caller removes it): its bytes in
 * *bytes (*len of them) until the caller destroys it. */
static struct sqk_io *image_of_a(char *tree, size_t cap, const char *tag, const uint8_t **bytes,
				 size_t *len)
{
	struct sqk_io *mem;

	test_tree_new(tree, cap, tag);
	test_tree_put(tree, "a", 65536);
	mem = test_build_dir(tree, false, NULL);
	*bytes = sqk_io_mem_data(mem, len);
	ck_assert_ptr_nonnull(*bytes);
	return mem;
}

/* Two mirrors of one image (other ETags, of other lengths) share its cache folder: each URL
 * keeps its own record there, so both open offline after both were opened online in turn. */
START_TEST(test_http_offline_mirrors)
{
	char tree[512], url[2][64], *cache = tmpdir();
	static const char *const etag[2] = { "m", "mirror-two" };
	struct sqk_image *img = NULL;
	struct rserver srv[2];
	struct test_log lg;
	const uint8_t *bytes;
	size_t len;
	struct sqk_io *mem = image_of_a(tree, sizeof(tree), "mirrors", &bytes, &len);

	for (int i = 0; i < 2; i++) {
		rserver_start(&srv[i], bytes, len, etag[i]);
		snprintf(url[i], sizeof(url[i]), "http://127.0.0.1:%u/i.sqsh", srv[i].port);
	}
	for (int i = 0; i < 2; i++) {
		ck_assert_int_eq(offline_open(url[i], cache, &lg, &img), 0);
		ck_assert_int_eq(offline_read(img, "a", 65536, 0), 0);
		sqk_image_close(img);
	}
	for (int i = 0; i < 2; i++)
		rserver_stop(&srv[i]);
	for (int i = 0; i < 2; i++) {
		ck_assert_msg(offline_open(url[i], cache, &lg, &img) == 0, "mirror %d: %s", i,
			      lg.text);
		ck_assert_ptr_nonnull(strstr(lg.text, "opening from the cache folder"));
		ck_assert_int_eq(offline_read(img, "a", 65536, 0), 0);
		sqk_image_close(img);
	}
	sqk_io_destroy(mem);
	test_tree_remove(tree);
	rm_rf(cache);
	free(cache);
}
END_TEST

/* A server that answers one of the open's two requests is there: the open fails with its
 * answer (the tail's 503) rather than opening from the cache folder; with every request
 * answered 503 it opens from there. */
START_TEST(test_http_offline_answered)
{
	char tree[512], url[64], *cache = tmpdir();
	struct sqk_image *img = NULL;
	struct test_log lg;
	struct rserver srv;
	const uint8_t *bytes;
	size_t len;
	struct sqk_io *mem = image_of_a(tree, sizeof(tree), "offans", &bytes, &len);

	rserver_start(&srv, bytes, len, "t");
	snprintf(url, sizeof(url), "http://127.0.0.1:%u/i.sqsh", srv.port);
	ck_assert_int_eq(offline_open(url, cache, &lg, &img), 0);
	sqk_image_close(img);
	rserver_serve(&srv, bytes, len, "t", len - 100);
	ck_assert_int_eq(offline_open(url, cache, &lg, &img), SQK_EIO);
	ck_assert_msg(!strstr(lg.text, "opening from"), "%s", lg.text);
	ck_assert_ptr_nonnull(strstr(lg.text, "503"));
	rserver_serve(&srv, bytes, len, "t", 1);
	ck_assert_int_eq(offline_open(url, cache, &lg, &img), 0);
	ck_assert_ptr_nonnull(strstr(lg.text, "opening from the cache folder"));
	ck_assert_int_eq(offline_read(img, "a", 65536, 0), 0);
	sqk_image_close(img);
	served_end(&srv, mem, tree, cache);
}
END_TEST

/* Puts the cache folder that holds the record at rec aside with a file in its place (away), or
 * back. */
static void folder_aside(const char *rec, bool away)
{
	char key[700], aside[720];
	int fd;

	snprintf(key, sizeof(key), "%.*s", (int)(strrchr(rec, '/') - rec), rec);
	snprintf(aside, sizeof(aside), "%s.aside", key);
	if (!away) {
		ck_assert_int_eq(unlink(key), 0);
		ck_assert_int_eq(rename(aside, key), 0);
		return;
	}
	ck_assert_int_eq(rename(key, aside), 0);
	fd = open(key, O_WRONLY | O_CREAT | O_EXCL, 0600);
	ck_assert_int_ge(fd, 0);
	close(fd);
}

/* The cache folder decides whether an open is made without the server: a later version kept
 * nowhere, or an open that failed its checks, never lead to an older copy; a map or a record
 * others may write to is not trusted; the record outlives a mount that read more than the
 * cache folder holds. */
START_TEST(test_http_offline_refused)
{
	char tree[512], url[64], map[1024], rec[1024], *cache = tmpdir();
	static const char *const nokey[] = { "/nonexistent/key.pub", NULL };
	const size_t big = (size_t)6 << 20;
	struct sqk_image *img = NULL;
	struct test_log lg;
	struct rserver srv;
	struct sqk_io *mem, *plain;
	const uint8_t *bytes, *pbytes;
	size_t len, plen;

	test_tree_new(tree, sizeof(tree), "offref");
	test_tree_put(tree, "a", 65536);
	test_tree_put(tree, "b", big);
	mem = test_build_dir(tree, false, NULL);
	plain = test_build_dir(tree, true, NULL);
	bytes = sqk_io_mem_data(mem, &len);
	pbytes = sqk_io_mem_data(plain, &plen);
	rserver_start(&srv, bytes, len, "t");
	snprintf(url, sizeof(url), "http://127.0.0.1:%u/i.sqsh", srv.port);

	/* an open refused by its checks (a trusted key that does not load) keeps nothing */
	ck_assert_int_ne(offline_open_with(url, cache, &lg, &img, nokey, 0), 0);
	rserver_serve(&srv, bytes, len, "t", 1); /* every request 503 */
	ck_assert_int_eq(offline_open(url, cache, &lg, &img), SQK_EIO);
	ck_assert_ptr_null(strstr(lg.text, "opening from"));

	/* kept; the server gone, the copy opens; a map others may write to is not trusted */
	rserver_serve(&srv, bytes, len, "t", 0);
	ck_assert_int_eq(offline_open(url, cache, &lg, &img), 0);
	sqk_image_close(img);
	offline_record(cache, rec, sizeof(rec), map);
	rserver_serve(&srv, bytes, len, "t", 1);
	ck_assert_int_eq(offline_open(url, cache, &lg, &img), 0);
	ck_assert_ptr_nonnull(strstr(lg.text, "opening from the cache folder"));
	sqk_image_close(img);
	ck_assert_int_eq(chmod(map, 0666), 0);
	ck_assert_int_eq(offline_open(url, cache, &lg, &img), SQK_EIO);
	ck_assert_ptr_nonnull(strstr(lg.text, map));
	ck_assert_ptr_nonnull(strstr(lg.text, "others may write to it"));
	ck_assert_int_eq(chmod(map, 0600), 0);
	ck_assert_int_eq(chmod(rec, 0622), 0);
	ck_assert_int_eq(offline_open(url, cache, &lg, &img), SQK_EIO);
	ck_assert_ptr_nonnull(strstr(lg.text, rec));
	ck_assert_int_eq(chmod(rec, 0600), 0);

	/* a mount reading more than its cache folder holds: the record is still there at close */
	rserver_serve(&srv, bytes, len, "t", 0);
	ck_assert_int_eq(offline_open_with(url, cache, &lg, &img, NULL, (uint64_t)3 << 20), 0);
	for (uint64_t off = 0; off < big; off += (uint64_t)1 << 20)
		ck_assert_int_eq(offline_read(img, "b", big, off), 0);
	sqk_image_close(img);
	rserver_serve(&srv, bytes, len, "t", 1);
	ck_assert_int_eq(offline_open_with(url, cache, &lg, &img, NULL, (uint64_t)3 << 20), 0);
	ck_assert_int_eq(offline_read(img, "b", big, big - ((uint64_t)1 << 20)), 0);
	sqk_image_close(img);

	/* the image's folder cannot be opened this time: its map stays (it names that folder) */
	folder_aside(rec, true);
	rserver_serve(&srv, bytes, len, "t", 0);
	ck_assert_int_eq(offline_open(url, cache, &lg, &img), 0);
	ck_assert_ptr_nonnull(strstr(lg.text, "cannot use the cache folder"));
	sqk_image_close(img);
	ck_assert_int_eq(access(map, F_OK), 0);
	folder_aside(rec, false);
	rserver_serve(&srv, bytes, len, "t", 1);
	ck_assert_int_eq(offline_open(url, cache, &lg, &img), 0);
	sqk_image_close(img);

	/* the URL now serves a version without integrity data: the map of the old one goes */
	rserver_serve(&srv, pbytes, plen, "p", 0);
	ck_assert_int_eq(offline_open(url, cache, &lg, &img), 0);
	sqk_image_close(img);
	ck_assert_int_ne(access(map, F_OK), 0);
	rserver_serve(&srv, pbytes, plen, "p", 1);
	ck_assert_int_eq(offline_open(url, cache, &lg, &img), SQK_EIO);
	ck_assert_ptr_null(strstr(lg.text, "opening from"));

	rserver_stop(&srv);
	sqk_io_destroy(mem);
	sqk_io_destroy(plain);
	test_tree_remove(tree);
	rm_rf(cache);
	free(cache);
}
END_TEST

/* Whether the server was asked for image position pos. */
static bool rserver_got(struct rserver *s, uint64_t pos)
{
	for (unsigned i = 0; i < atomic_load(&s->ngot); i++)
		if (pos >= s->got[i][0] && pos <= s->got[i][1])
			return true;
	return false;
}

/* An image of eight files f0..f7 of 1 MiB and a few bytes, f6 and f7 laid out first (with a
 * prefetch hint), served by a range server and opened from it. */
struct pf_env {
	char tree[512], order[600], *cache;
	struct rserver srv;
	struct sqk_io *mem;
	struct sqk_image *img;
	struct sqk_inode in[8];
};

static void pf_env_open(struct pf_env *e, bool hint_at_open, size_t mem_bytes)
{
	struct sqk_http_opts ho;
	struct sqk_open_opts oo;
	const uint8_t *bytes;
	char url[64];
	size_t len;
	FILE *f;

	e->cache = tmpdir();
	test_tree_new(e->tree, sizeof(e->tree), "pffront");
	for (unsigned i = 0; i < 8; i++) {
		char name[16];

		snprintf(name, sizeof(name), "f%u", i);
		test_tree_put(e->tree, name, ((size_t)1 << 20) + i);
	}
	snprintf(e->order, sizeof(e->order), "%s.order", e->tree);
	f = fopen(e->order, "w");
	ck_assert_ptr_nonnull(f);
	fputs("f6\nf7\n", f);
	fclose(f);
	e->mem = test_build_ordered(e->tree, e->order);
	bytes = sqk_io_mem_data(e->mem, &len);
	rserver_start(&e->srv, bytes, len, "t");
	snprintf(url, sizeof(url), "http://127.0.0.1:%u/i.sqsh", e->srv.port);
	sqk_http_opts_init(&ho);
	ho.cache_dir = e->cache;
	ho.mem_bytes = mem_bytes;
	sqk_open_opts_init(&oo);
	oo.http = &ho;
	oo.no_prefetch = !hint_at_open; /* as a command reading part of the image */
	ck_assert_int_eq(sqk_image_open_url(url, &oo, &e->img), 0);
	for (unsigned i = 0; i < 8; i++) {
		char name[16];

		snprintf(name, sizeof(name), "f%u", i);
		ck_assert_int_eq(sqk_lookup_path(e->img, name, &e->in[i]), 0);
	}
	ck_assert_uint_lt(e->in[6].blocks_start, e->in[0].blocks_start);
}

/* Starts a set of the files of list (indexes, -1 ended) with max, waits until the server was
 * asked for each position of want (-1 ended; or 5 s), then a little for what else may come,
 * and closes the image: nothing is asked for after that. */
static void pf_env_fetch(struct pf_env *e, uint64_t max, const int *list, const uint64_t *want)
{
	struct sqk_prefetch *p;

	ck_assert_int_eq(sqk_prefetch_new(e->img, max, &p), 0);
	for (; *list >= 0; list++)
		ck_assert_int_eq(sqk_prefetch_add(p, &e->in[*list]), 0);
	sqk_prefetch_start(p);
	for (int i = 0; i < 500; i++) {
		const uint64_t *w = want;

		while (*w != UINT64_MAX && rserver_got(&e->srv, *w))
			w++;
		if (*w == UINT64_MAX)
			break;
		usleep(10000);
	}
	usleep(200000);
	sqk_image_close(e->img);
}

/* Where file i's blocks start, plus at. */
static uint64_t pf_at(const struct pf_env *e, int i, uint64_t at)
{
	return e->in[i].blocks_start + at;
}

static void pf_env_free(struct pf_env *e)
{
	rserver_stop(&e->srv);
	sqk_io_destroy(e->mem);
	test_tree_remove(e->tree);
	remove(e->order);
	rm_rf(e->cache);
	free(e->cache);
}

/* A set of files larger than its max keeps those at the front of an access-ordered image first
 * (a walk in the tree's order meets them out of order; the rest it fetches ahead by itself),
 * then the others in the order added, the last one cut (_i 0). Once the hint is fetched (_i 1:
 * at the open), the front's files are on their way: the max goes to the others. */
START_TEST(test_prefetch_front_first)
{
	static const int all[] = { 0, 1, 2, 3, 4, 5, 6, 7, -1 };
	const int *got = _i ? (const int[]){ 0, 1 } : (const int[]){ 6, 7 };
	const int cut = _i ? 2 : 0, left = _i ? 3 : 1;
	const uint64_t end = (1 << 20) - 1;
	struct pf_env e;

	pf_env_open(&e, _i, 0);
	/* room for about three files: the two of got, then part of the file cut */
	pf_env_fetch(&e, (uint64_t)3 << 20, all,
		     (const uint64_t[]){ pf_at(&e, got[0], 0), pf_at(&e, got[1], end),
					 pf_at(&e, cut, 0), UINT64_MAX });
	ck_assert(rserver_got(&e.srv, pf_at(&e, got[0], 0)));
	ck_assert(rserver_got(&e.srv, pf_at(&e, got[1], end)));
	ck_assert(rserver_got(&e.srv, pf_at(&e, cut, 0)));
	ck_assert(!rserver_got(&e.srv, pf_at(&e, cut, end)));
	ck_assert(!rserver_got(&e.srv, pf_at(&e, left, 1 << 19)));
	pf_env_free(&e);
}
END_TEST

/* Runs of files apart (f4, f0, f2: 1 MiB between them) are kept in the order their files were
 * added, the max spent on f4 and f0 (35 chunks of 64 KiB: their blocks, f4's fragment block)
 * and one chunk more. */
START_TEST(test_prefetch_order)
{
	const uint64_t mid = 1 << 19;
	struct pf_env e;

	pf_env_open(&e, false, 0);
	pf_env_fetch(&e, (uint64_t)36 << 16, (const int[]){ 4, 0, 2, -1 },
		     (const uint64_t[]){ pf_at(&e, 4, mid), pf_at(&e, 0, mid), UINT64_MAX });
	ck_assert(rserver_got(&e.srv, pf_at(&e, 4, mid)));
	ck_assert(rserver_got(&e.srv, pf_at(&e, 0, mid)));
	ck_assert(!rserver_got(&e.srv, pf_at(&e, 2, mid)));
	pf_env_free(&e);
}
END_TEST

/* With a 2 MiB memory cache the io's prefetch takes 1 MiB of a range: a set takes no more in
 * all (its chunks would be evicted before they are read), here f0 cut, not f2 or f4 (_i 0).
 * The hint fetched at the open took 1 MiB of its range too: f6 is on its way, f7 is not and
 * goes into the set (_i 1). */
START_TEST(test_prefetch_clip)
{
	const uint64_t mid = 1 << 19;
	struct pf_env e;

	pf_env_open(&e, _i, (size_t)2 << 20);
	if (_i == 0) {
		pf_env_fetch(&e, UINT64_MAX, (const int[]){ 0, 2, 4, -1 },
			     (const uint64_t[]){ pf_at(&e, 0, mid), UINT64_MAX });
		ck_assert(rserver_got(&e.srv, pf_at(&e, 0, mid)));
		ck_assert(!rserver_got(&e.srv, pf_at(&e, 2, mid)));
		ck_assert(!rserver_got(&e.srv, pf_at(&e, 4, mid)));
	} else {
		pf_env_fetch(&e, UINT64_MAX, (const int[]){ 6, 7, -1 },
			     (const uint64_t[]){ pf_at(&e, 6, mid), pf_at(&e, 7, mid),
						 UINT64_MAX });
		ck_assert(rserver_got(&e.srv, pf_at(&e, 6, mid)));
		ck_assert(rserver_got(&e.srv, pf_at(&e, 7, mid)));
	}
	pf_env_free(&e);
}
END_TEST

static Suite *http_suite(void)
{
	Suite *s = suite_create("http");
	TCase *names = tcase_create("names");
	TCase *cache = tcase_create("disk cache");

	tcase_add_test(names, test_url_display);
	tcase_add_test(names, test_header_check);
	tcase_add_test(names, test_http_refused);
	tcase_add_test(names, test_http_bg_thread_policy);
	tcase_add_test(names, test_http_offline_open);
	tcase_add_test(names, test_http_offline_mirrors);
	tcase_add_test(names, test_http_offline_answered);
	tcase_add_test(names, test_http_offline_refused);
	tcase_add_loop_test(names, test_prefetch_front_first, 0, 2);
	tcase_add_loop_test(names, test_prefetch_clip, 0, 2);
	tcase_add_test(names, test_prefetch_order);
	tcase_set_timeout(names, 30);
	tcase_add_test(cache, test_dcache_roundtrip);
	tcase_add_test(cache, test_dcache_damaged);
	tcase_add_test(cache, test_dcache_peek_touch);
	tcase_add_test(cache, test_dcache_stale_tmp);
	tcase_add_test(cache, test_dcache_bound);
	tcase_add_test(cache, test_dcache_default_dir);
	tcase_add_test(cache, test_dcache_room);
	tcase_add_test(cache, test_dcache_units);
	tcase_add_test(cache, test_dcache_units_damaged);
	tcase_add_test(cache, test_dcache_units_bound);
	tcase_add_test(cache, test_dcache_units_foreign);
	tcase_add_test(cache, test_dcache_units_race);
	tcase_add_test(cache, test_dcache_not_regular);
	tcase_add_test(cache, test_dcache_folder_symlink);
	tcase_add_test(cache, test_dcache_evict_in_use);
	tcase_add_test(cache, test_dcache_shared_bound);
	tcase_add_test(cache, test_dcache_recount_tmp);
	tcase_add_test(cache, test_dcache_far_mtime);
	tcase_set_timeout(cache, 60); /* the race: up to 30 passes of 128 stores */
	suite_add_tcase(s, names);
	suite_add_tcase(s, cache);
	return s;
}

int main(void)
{
	return test_run_suite(http_suite());
}
