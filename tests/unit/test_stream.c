/* SPDX-License-Identifier: BSD-2-Clause */
/* Check suite for what the reader tells the io about fetching ahead (reader/lib/stream.c): an
 * image read through a recording io (every read with the sqk_io_ahead it came with). A file read
 * on its own may be fetched ahead up to the end of its own data blocks and no further; eight
 * files read whole in image order make a walk, whose reads may be fetched ahead to the end of
 * the image; a file read out of that order ends the walk, a duplicate (its blocks an earlier
 * file's) does not; files read whole with other files' blocks between them never make one. */
#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "sqk/io.h"
#include "sqk/sqk.h"
#include "mkimage/build.h"
#include "testutil.h"

#define NFILES 14
#define FBLOCKS 5u
#define BS 4096u
#define MAXREC 4096

struct rec {
	uint64_t off, len, stream, limit;
};

#define MAXPRE 64

/* An io forwarding to inner (borrowed) that records every read and its hint. */
struct rec_io {
	struct sqk_io base;
	struct sqk_io *inner;
	pthread_mutex_t mu;
	struct rec r[MAXREC];
	size_t n;
	struct rec pre[MAXPRE]; /* prefetch calls (off, len) */
	size_t npre;
};

static char tree[64];
static struct sqk_io *mem;

static int rec_ahead(struct sqk_io *io, uint64_t off, void *buf, size_t len,
		     const struct sqk_io_ahead *a)
{
	struct rec_io *r = (struct rec_io *)io;

	pthread_mutex_lock(&r->mu);
	if (r->n < MAXREC)
		r->r[r->n++] = (struct rec){ off, len, a ? a->stream : 0, a ? a->limit : 0 };
	pthread_mutex_unlock(&r->mu);
	return sqk_io_read_at(r->inner, off, buf, len);
}

static int rec_read(struct sqk_io *io, uint64_t off, void *buf, size_t len)
{
	return rec_ahead(io, off, buf, len, NULL);
}

static int rec_write(struct sqk_io *io, uint64_t off, const void *buf, size_t len)
{
	return -1;
}

static int rec_size(struct sqk_io *io, uint64_t *size)
{
	return sqk_io_get_size(((struct rec_io *)io)->inner, size);
}

static int rec_sync(struct sqk_io *io)
{
	return 0;
}

static void rec_destroy(struct sqk_io *io)
{
}

static const struct sqk_io_ops rec_ops = {
	.read_at = rec_read,
	.write_at = rec_write,
	.get_size = rec_size,
	.sync = rec_sync,
	.destroy = rec_destroy,
	.read_ahead = rec_ahead,
};

static void rec_prefetch(struct sqk_io *io, uint64_t off, uint64_t len, bool wait)
{
	struct rec_io *r = (struct rec_io *)io;

	ck_assert(!wait);
	pthread_mutex_lock(&r->mu);
	if (r->npre < MAXPRE)
		r->pre[r->npre++] = (struct rec){ .off = off, .len = len };
	pthread_mutex_unlock(&r->mu);
}

/* The same with a prefetch operation: the image counts as remote. */
static const struct sqk_io_ops rec_remote_ops = {
	.read_at = rec_read,
	.write_at = rec_write,
	.get_size = rec_size,
	.sync = rec_sync,
	.destroy = rec_destroy,
	.read_ahead = rec_ahead,
	.prefetch = rec_prefetch,
};

/* f00..f13: FBLOCKS blocks of random bytes each (stored raw, so each file's data is exactly
 * FBLOCKS * BS bytes at its blocks_start), written in name order by the builder. */
static void setup(void)
{
	static char *sources[1] = { tree };
	struct sqk_build_opts o;
	struct sqk_build_source s;
	struct sqk_build_result r;
	uint8_t buf[FBLOCKS * BS];
	char p[128];

	snprintf(tree, sizeof(tree), "/tmp/sqk-stream-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tree));
	for (int i = 0; i < NFILES; i++) {
		FILE *f;

		snprintf(p, sizeof(p), "%s/f%02d", tree, i);
		f = fopen(p, "wb");
		ck_assert_ptr_nonnull(f);
		test_fill_random(buf, sizeof(buf), 1000u + (unsigned)i);
		ck_assert_uint_eq(fwrite(buf, 1, sizeof(buf), f), sizeof(buf));
		fclose(f);
	}
	/* f08x: f01's bytes, stored as a duplicate (its blocks are f01's), between f08 and f09 */
	snprintf(p, sizeof(p), "%s/f08x", tree);
	FILE *d = fopen(p, "wb");
	ck_assert_ptr_nonnull(d);
	test_fill_random(buf, sizeof(buf), 1001u);
	ck_assert_uint_eq(fwrite(buf, 1, sizeof(buf), d), sizeof(buf));
	fclose(d);
	sqk_build_opts_init(&o);
	o.quiet = true;
	o.block_size = BS;
	o.no_fragments = true;
	sqk_build_source_init(&s, SQK_BUILD_DIRS);
	s.sources = sources;
	s.nsources = 1;
	sqk_build_result_init(&r);
	ck_assert_int_eq(sqk_io_mem_create(NULL, 0, &mem), 0);
	ck_assert_msg(sqk_build(&o, &s, mem, &r) == 0, "build: %s", r.msg);
}

static void teardown(void)
{
	char cmd[128];

	sqk_io_destroy(mem);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tree);
	ck_assert_int_eq(system(cmd), 0);
}

static struct rec_io *rec_new(void)
{
	struct rec_io *r = calloc(1, sizeof(*r));

	ck_assert_ptr_nonnull(r);
	r->base.ops = &rec_ops;
	r->inner = mem;
	pthread_mutex_init(&r->mu, NULL);
	return r;
}

static struct sqk_image *open_rec(struct rec_io *r)
{
	struct sqk_open_opts o = { .size = sizeof(o), .readahead_blocks = 16, .threads = 1 };
	struct sqk_image *img;

	ck_assert_int_eq(sqk_image_open_io(&r->base, &o, &img), 0);
	return img;
}

/* Reads file i whole; *ino gets the inode. Returns the index of its first recorded read. */
static size_t read_whole(struct sqk_image *img, struct rec_io *r, int i, struct sqk_inode *ino)
{
	uint8_t buf[FBLOCKS * BS + 1], want[FBLOCKS * BS];
	char name[16];
	size_t first;

	snprintf(name, sizeof(name), "f%02d", i);
	ck_assert_int_eq(sqk_lookup_path(img, name, ino), 0);
	first = r->n;
	ck_assert_int_eq(sqk_read(img, ino, buf, sizeof(buf), 0), (ssize_t)sizeof(want));
	test_fill_random(want, sizeof(want), 1000u + (unsigned)i);
	ck_assert(memcmp(buf, want, sizeof(want)) == 0);
	return first;
}

/* The reads recorded from index first on that touch file ino's blocks: all with the hint
 * (stream, limit), and at least one of them. */
static void assert_hints(struct rec_io *r, size_t first, const struct sqk_inode *ino,
			 uint64_t stream, uint64_t limit)
{
	uint64_t s = ino->blocks_start, e = s + FBLOCKS * BS;
	unsigned seen = 0;

	for (size_t k = first; k < r->n; k++) {
		if (r->r[k].off + r->r[k].len <= s || r->r[k].off >= e)
			continue;
		ck_assert_msg(r->r[k].stream == stream && r->r[k].limit == limit,
			      "read at %llu: stream %llu limit %llu, want %llu %llu",
			      (unsigned long long)r->r[k].off, (unsigned long long)r->r[k].stream,
			      (unsigned long long)r->r[k].limit, (unsigned long long)stream,
			      (unsigned long long)limit);
		seen++;
	}
	ck_assert_uint_gt(seen, 0);
}

START_TEST(test_file_alone)
{
	struct rec_io *r = rec_new();
	struct sqk_image *img = open_rec(r);
	struct sqk_inode in;
	size_t at = read_whole(img, r, 4, &in);

	/* its own stream, fetched ahead no further than its last block */
	assert_hints(r, at, &in, in.ino, in.blocks_start + FBLOCKS * BS);
	sqk_image_close(img);
	free(r);
}
END_TEST

START_TEST(test_walk)
{
	struct rec_io *r = rec_new();
	struct sqk_image *img = open_rec(r);
	struct sqk_inode in;
	size_t at;

	for (int i = 0; i < 8; i++) {
		at = read_whole(img, r, i, &in);
		assert_hints(r, at, &in, in.ino, in.blocks_start + FBLOCKS * BS);
	}
	/* eight files whole in image order: the next ones are a walk, fetched ahead to the end */
	for (int i = 8; i < 11; i++) {
		at = read_whole(img, r, i, &in);
		assert_hints(r, at, &in, UINT64_MAX, UINT64_MAX);
	}
	/* a file out of order ends the walk */
	at = read_whole(img, r, 12, &in);
	assert_hints(r, at, &in, in.ino, in.blocks_start + FBLOCKS * BS);
	at = read_whole(img, r, 13, &in);
	assert_hints(r, at, &in, in.ino, in.blocks_start + FBLOCKS * BS);
	sqk_image_close(img);
	free(r);
}
END_TEST

START_TEST(test_duplicate_in_walk)
{
	struct rec_io *r = rec_new();
	struct sqk_image *img = open_rec(r);
	struct sqk_inode in, dup;
	uint8_t buf[FBLOCKS * BS + 1], want[FBLOCKS * BS];
	size_t at;

	for (int i = 0; i < 9; i++)
		read_whole(img, r, i, &in);
	/* the duplicate, read whole in its place: its blocks lie behind the walk (f01's) */
	ck_assert_int_eq(sqk_lookup_path(img, "f08x", &dup), 0);
	ck_assert_uint_lt(dup.blocks_start, in.blocks_start);
	ck_assert_int_eq(sqk_read(img, &dup, buf, sizeof(buf), 0), (ssize_t)sizeof(want));
	test_fill_random(want, sizeof(want), 1001u);
	ck_assert(memcmp(buf, want, sizeof(want)) == 0);
	/* ... neither ends the walk nor moves it back */
	at = read_whole(img, r, 9, &in);
	assert_hints(r, at, &in, UINT64_MAX, UINT64_MAX);
	sqk_image_close(img);
	free(r);
}
END_TEST

START_TEST(test_skips_are_no_walk)
{
	struct rec_io *r = rec_new();
	struct sqk_image *img = open_rec(r);
	struct sqk_inode in;

	/* every other file, whole, in image order: another file's 5 blocks lie between them */
	for (int i = 0; i < NFILES; i += 2) {
		size_t at = read_whole(img, r, i, &in);

		assert_hints(r, at, &in, in.ino, in.blocks_start + FBLOCKS * BS);
	}
	sqk_image_close(img);
	free(r);
}
END_TEST

START_TEST(test_partial_reads_are_no_walk)
{
	struct rec_io *r = rec_new();
	struct sqk_image *img = open_rec(r);
	struct sqk_inode in;
	uint8_t buf[BS];
	size_t at;

	/* the first block of each of eight files, not the whole: no walk */
	for (int i = 0; i < 8; i++) {
		char name[16];

		snprintf(name, sizeof(name), "f%02d", i);
		ck_assert_int_eq(sqk_lookup_path(img, name, &in), 0);
		ck_assert_int_eq(sqk_read(img, &in, buf, sizeof(buf), 0), (ssize_t)sizeof(buf));
	}
	at = read_whole(img, r, 8, &in);
	assert_hints(r, at, &in, in.ino, in.blocks_start + FBLOCKS * BS);
	sqk_image_close(img);
	free(r);
}
END_TEST

static struct sqk_inode inode_of(struct sqk_image *img, int i)
{
	struct sqk_inode in;
	char name[16];

	snprintf(name, sizeof(name), "f%02d", i);
	ck_assert_int_eq(sqk_lookup_path(img, name, &in), 0);
	return in;
}

/* The prefetch call k: [f(a)'s start, f(b)'s end). */
static void assert_pre(struct rec_io *r, size_t k, struct sqk_image *img, int a, int b)
{
	struct sqk_inode fa = inode_of(img, a), fb = inode_of(img, b);

	ck_assert_uint_gt(r->npre, k);
	ck_assert_uint_eq(r->pre[k].off, fa.blocks_start);
	ck_assert_uint_eq(r->pre[k].len, fb.blocks_start + FBLOCKS * BS - fa.blocks_start);
}

START_TEST(test_prefetch_set)
{
	struct rec_io *r = rec_new();
	struct sqk_image *img;
	struct sqk_prefetch *p;
	struct sqk_inode in, root;

	r->base.ops = &rec_remote_ops;
	img = open_rec(r);
	ck_assert_int_eq(sqk_image_root(img, &root), 0);
	/* out of order, a directory among them: sorted, the directory ignored, f03 and f04 one
	 * range, and f09 in it too (the 80 KiB between them: less than a part of its own) */
	ck_assert_int_eq(sqk_prefetch_new(img, UINT64_MAX, &p), 0);
	for (int i = 9; i >= 3; i -= 6) {
		in = inode_of(img, i);
		ck_assert_int_eq(sqk_prefetch_add(p, &in), 0);
	}
	ck_assert_int_eq(sqk_prefetch_add(p, &root), 0);
	in = inode_of(img, 4);
	ck_assert_int_eq(sqk_prefetch_add(p, &in), 0);
	ck_assert_uint_eq(r->npre, 0);
	sqk_prefetch_start(p);
	ck_assert_uint_eq(r->npre, 1);
	assert_pre(r, 0, img, 3, 9);
	/* the same three files apart (f13, f00, f06): one run still (gaps under 256 KiB), cut at
	 * the max, two 64 KiB chunks from its first */
	r->npre = 0;
	ck_assert_int_eq(sqk_prefetch_new(img, 2 * 65536, &p), 0);
	for (int k = 0; k < 3; k++) {
		in = inode_of(img, (int[]){ 13, 0, 6 }[k]);
		ck_assert_int_eq(sqk_prefetch_add(p, &in), 0);
	}
	sqk_prefetch_start(p);
	ck_assert_uint_eq(r->npre, 1);
	in = inode_of(img, 0);
	ck_assert_uint_eq(r->pre[0].off, in.blocks_start);
	ck_assert_uint_eq(r->pre[0].off + r->pre[0].len, (in.blocks_start / 65536 + 2) * 65536);
	sqk_prefetch_start(NULL);
	sqk_image_close(img);
	free(r);
}
END_TEST

START_TEST(test_prefetch_tree)
{
	struct rec_io *r = rec_new();
	struct sqk_image *img = open_rec(r);

	/* a local image: nothing */
	ck_assert_int_eq(sqk_image_prefetch_tree(img, NULL, UINT64_MAX), 0);
	ck_assert_uint_eq(r->npre, 0);
	sqk_image_close(img);
	/* every file of the tree (f08x's blocks are f01's): f00 to f13 in one range */
	r->base.ops = &rec_remote_ops;
	img = open_rec(r);
	ck_assert_int_eq(sqk_image_prefetch_tree(img, NULL, UINT64_MAX), 0);
	ck_assert_uint_eq(r->npre, 1);
	assert_pre(r, 0, img, 0, NFILES - 1);
	sqk_image_close(img);
	free(r);
}
END_TEST

START_TEST(test_prefetch_aside)
{
	static const int order[NFILES] = { 0, 5, 1, 6, 2, 7, 3, 8, 4, 9, 10, 11, 12, 13 };
	struct rec_io *r = rec_new();
	struct sqk_image *img;
	struct sqk_prefetch *p;
	struct sqk_inode in;
	size_t at;

	r->base.ops = &rec_remote_ops;
	img = open_rec(r);
	/* f00..f04 fetched, as an access-ordered image's front, by two sets: both count */
	for (int i = 0; i < 5; i++) {
		if (i == 0 || i == 3)
			ck_assert_int_eq(sqk_prefetch_new(img, UINT64_MAX, &p), 0);
		in = inode_of(img, i);
		ck_assert_int_eq(sqk_prefetch_add(p, &in), 0);
		if (i == 2 || i == 4)
			sqk_prefetch_start(p);
	}
	ck_assert_uint_eq(r->npre, 2);
	/* read between the others, they neither extend nor end the walk: f05..f12 make one, and
	 * f13 is read as part of it; a fetched file is fetched ahead to its own end only */
	for (int k = 0; k < NFILES; k++) {
		at = read_whole(img, r, order[k], &in);
		if (order[k] < 5)
			assert_hints(r, at, &in, in.ino, in.blocks_start + FBLOCKS * BS);
	}
	assert_hints(r, at, &in, UINT64_MAX, UINT64_MAX);
	sqk_image_close(img);
	free(r);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("stream");
	TCase *t = tcase_create("hints");

	tcase_add_checked_fixture(t, setup, teardown);
	tcase_add_test(t, test_file_alone);
	tcase_add_test(t, test_walk);
	tcase_add_test(t, test_duplicate_in_walk);
	tcase_add_test(t, test_skips_are_no_walk);
	tcase_add_test(t, test_partial_reads_are_no_walk);
	tcase_add_test(t, test_prefetch_set);
	tcase_add_test(t, test_prefetch_tree);
	tcase_add_test(t, test_prefetch_aside);
	tcase_set_timeout(t, 60);
	suite_add_tcase(s, t);
	return s;
}

int main(void)
{
	return test_run_suite(suite());
}
