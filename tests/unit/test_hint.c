/* SPDX-License-Identifier: BSD-2-Clause */
/* Unit tests of the prefetch hint block (common/hint.c) and of the two lists sqk mkimage lays
 * files out by (mkimage/order.c): the trace of --order (\xHH escapes, blank lines) and the
 * mksquashfs sort file of -sort (priorities, their range, the line a malformed one is on); and
 * the layout of the files laid out first (their tails' fragment blocks among their blocks). */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/endian.h"
#include "sqk/error.h"
#include "common/hint.h"
#include "mkimage/mk.h"
#include "mkimage/order.h"
#include "mkimage/build.h"
#include "sqk/sqk.h"
#include "testutil.h"

static const struct sqk_hint_range three[] = {
	{ 0, 1000 }, { 4096, 50 }, { 9000, 1000 },
};

/* A block encodes and decodes to the same ranges; its footer says what hint.h says. */
START_TEST(test_round_trip)
{
	size_t len = hint_len(3), n = 9;
	uint8_t *blk = malloc(len);
	struct sqk_hint_range out[4];

	ck_assert_uint_eq(len, 4096);
	ck_assert_int_eq(hint_encode(three, 3, 10000, blk, len), 0);
	ck_assert_int_eq(memcmp(blk + len - 8, "SQKHINT1", 8), 0);
	ck_assert_uint_eq(get_le32(blk + len - 32), 3);
	ck_assert_uint_eq(get_le32(blk + len - 28), 1);
	ck_assert_uint_eq(get_le64(blk + len - 24), 4096);
	ck_assert_uint_eq(get_le64(blk + 16), 4096);
	ck_assert_int_eq(hint_decode(blk, len, 10000, out, 4, &n), 0);
	ck_assert_uint_eq(n, 3);
	ck_assert_int_eq(memcmp(out, three, sizeof(three)), 0);
	/* fewer slots than ranges: the count is still told */
	ck_assert_int_eq(hint_decode(blk, len, 10000, out, 2, &n), SQK_ETOOBIG);
	ck_assert_uint_eq(n, 3);
	/* zero ranges is a valid (empty) hint */
	ck_assert_int_eq(hint_encode(three, 0, 10000, blk, len), 0);
	ck_assert_int_eq(hint_decode(blk, len, 10000, out, 4, &n), 0);
	ck_assert_uint_eq(n, 0);
	free(blk);
}
END_TEST

/* Block lengths: a multiple of 4096, at most 64 KiB. */
START_TEST(test_len)
{
	ck_assert_uint_eq(hint_len(0), 4096);
	ck_assert_uint_eq(hint_len(254), 4096);
	ck_assert_uint_eq(hint_len(255), 8192);
	ck_assert_uint_eq(hint_len(SQK_HINT_MAX_RANGES), 65536);
	ck_assert_uint_eq(hint_len(SQK_HINT_MAX_RANGES + 1), 0);
}
END_TEST

/* Ranges the encoder refuses: out of order, overlapping, empty, past bytes_used; a wrong len. */
START_TEST(test_encode_refuses)
{
	uint8_t blk[4096];
	struct sqk_hint_range r[2] = { { 100, 10 }, { 50, 10 } };

	ck_assert_int_eq(hint_encode(r, 2, 1000, blk, sizeof(blk)), SQK_EINVAL);
	r[1] = (struct sqk_hint_range){ 105, 10 };
	ck_assert_int_eq(hint_encode(r, 2, 1000, blk, sizeof(blk)), SQK_EINVAL);
	r[1] = (struct sqk_hint_range){ 200, 0 };
	ck_assert_int_eq(hint_encode(r, 2, 1000, blk, sizeof(blk)), SQK_EINVAL);
	r[1] = (struct sqk_hint_range){ 200, 801 };
	ck_assert_int_eq(hint_encode(r, 2, 1000, blk, sizeof(blk)), SQK_EINVAL);
	r[1] = (struct sqk_hint_range){ 200, 800 };
	ck_assert_int_eq(hint_encode(r, 2, 1000, blk, sizeof(blk)), 0);
	ck_assert_int_eq(hint_encode(r, 2, 1000, blk, 2048), SQK_EINVAL);
}
END_TEST

static uint8_t *good_block(size_t *len)
{
	*len = hint_len(3);
	uint8_t *blk = malloc(*len);
	ck_assert_int_eq(hint_encode(three, 3, 10000, blk, *len), 0);
	return blk;
}

static int decode(const uint8_t *blk, size_t len, uint64_t bytes_used)
{
	struct sqk_hint_range out[8];
	size_t n;
	return hint_decode(blk, len, bytes_used, out, 8, &n);
}

/* Every field of a block read is distrusted. */
START_TEST(test_hostile)
{
	size_t len;
	uint8_t *b = good_block(&len), *f = b + len - 32;

	ck_assert_int_eq(decode(b, len, 10000), 0);
	/* ranges outside bytes_used */
	ck_assert_int_eq(decode(b, len, 9999), SQK_ECORRUPT);
	f[31] = 'X'; /* magic */
	ck_assert_int_eq(decode(b, len, 10000), SQK_ENOENT);
	f[31] = '1';
	put_le32(f + 4, 2); /* version */
	ck_assert_int_eq(decode(b, len, 10000), SQK_ECORRUPT);
	put_le32(f + 4, 1);
	put_le32(f, (4096 - 32) / 16 + 1); /* nranges too large for len */
	ck_assert_int_eq(decode(b, len, 10000), SQK_ECORRUPT);
	put_le32(f, 0xFFFFFFFFu);
	ck_assert_int_eq(decode(b, len, 10000), SQK_ECORRUPT);
	put_le32(f, 3);
	put_le64(f + 8, 4000); /* len not a multiple of 4096 */
	ck_assert_int_eq(decode(b, len, 10000), SQK_ECORRUPT);
	put_le64(f + 8, 8192); /* len not the block's */
	ck_assert_int_eq(decode(b, len, 10000), SQK_ECORRUPT);
	put_le64(f + 8, 4096);
	put_le64(f + 16, 1); /* the zero field */
	ck_assert_int_eq(decode(b, len, 10000), SQK_ECORRUPT);
	put_le64(f + 16, 0);
	b[100] = 1; /* a byte between ranges and footer */
	ck_assert_int_eq(decode(b, len, 10000), SQK_ECORRUPT);
	b[100] = 0;
	put_le64(b + 16, 500); /* second range starts inside the first: overlap */
	ck_assert_int_eq(decode(b, len, 10000), SQK_ECORRUPT);
	put_le64(b + 16, 4096);
	put_le64(b + 32, 100); /* third before the second: out of order */
	ck_assert_int_eq(decode(b, len, 10000), SQK_ECORRUPT);
	put_le64(b + 32, 9000);
	put_le64(b + 40, UINT64_MAX); /* start + length overflows */
	ck_assert_int_eq(decode(b, len, 10000), SQK_ECORRUPT);
	put_le64(b + 40, 1000);
	put_le64(b + 24, 0); /* an empty range */
	ck_assert_int_eq(decode(b, len, 10000), SQK_ECORRUPT);
	put_le64(b + 24, 50);
	ck_assert_int_eq(decode(b, len, 10000), 0);
	/* too short to hold a footer, or a footer asking for more than there is */
	ck_assert_int_eq(decode(b, 16, 10000), SQK_ECORRUPT);
	uint32_t nr;
	size_t l;
	ck_assert_int_eq(hint_footer(f, 2048, &nr, &l), SQK_ECORRUPT);
	ck_assert_int_eq(hint_footer(f, 4096, &nr, &l), 0);
	ck_assert_uint_eq(nr, 3);
	ck_assert_uint_eq(l, 4096);
	free(b);
}
END_TEST

static int trace(const char *in, char *out, size_t *len)
{
	const char *why = NULL;
	strcpy(out, in);
	*len = strlen(in);
	int r = mk_trace_line(out, len, &why);
	if (r < 0)
		ck_assert_ptr_nonnull(why);
	return r;
}

/* Trace lines: \xHH escapes (\x5c is a backslash), blank lines, a bad escape or a NUL. */
START_TEST(test_trace_lines)
{
	char b[256];
	size_t len;

	ck_assert_int_eq(trace("usr/lib/libc.so.6", b, &len), 0);
	ck_assert_str_eq(b, "usr/lib/libc.so.6");
	ck_assert_int_eq(trace("a\\x5cb", b, &len), 0);
	ck_assert_str_eq(b, "a\\b");
	ck_assert_int_eq(trace("new\\x0aline\\x20sp\\xC3\\xa9", b, &len), 0);
	ck_assert_uint_eq(len, 13);
	ck_assert_int_eq(memcmp(b, "new\nline sp\xc3\xa9", 13), 0);
	ck_assert_int_eq(trace("", b, &len), 1);
	ck_assert_int_eq(trace("\r", b, &len), 1);
	ck_assert_int_eq(trace("dos\r", b, &len), 0);
	ck_assert_str_eq(b, "dos");
	ck_assert_int_eq(trace("a\\x5", b, &len), SQK_EINVAL);
	ck_assert_int_eq(trace("a\\", b, &len), SQK_EINVAL);
	ck_assert_int_eq(trace("a\\n", b, &len), SQK_EINVAL);
	ck_assert_int_eq(trace("a\\xzz", b, &len), SQK_EINVAL);
	ck_assert_int_eq(trace("a\\x00b", b, &len), SQK_EINVAL);
	strcpy(b, "/a//./b/");
	ck_assert(mk_order_norm(b));
	ck_assert_str_eq(b, "a/b");
	strcpy(b, "a/../b");
	ck_assert(!mk_order_norm(b));
}
END_TEST

static int sort(const char *in, char *buf, char **path, int *prio)
{
	const char *why = NULL;
	strcpy(buf, in);
	int r = mk_sort_line(buf, path, prio, &why);
	if (r < 0)
		ck_assert_ptr_nonnull(why);
	return r;
}

/* Sort lines as mksquashfs reads them. */
START_TEST(test_sort_lines)
{
	char b[256], *p;
	int prio = 99;

	ck_assert_int_eq(sort("bin/ls 10", b, &p, &prio), 0);
	ck_assert_str_eq(p, "bin/ls");
	ck_assert_int_eq(prio, 10);
	ck_assert_int_eq(sort("  lib\\ dir  -32768  ", b, &p, &prio), 0);
	ck_assert_str_eq(p, "lib dir");
	ck_assert_int_eq(prio, -32768);
	ck_assert_int_eq(sort("x +32767", b, &p, &prio), 0);
	ck_assert_int_eq(prio, 32767);
	ck_assert_int_eq(sort("# a comment 5", b, &p, &prio), 1);
	ck_assert_int_eq(sort("   ", b, &p, &prio), 1);
	ck_assert_int_eq(sort("", b, &p, &prio), 1);
	ck_assert_int_eq(sort("x 32768", b, &p, &prio), SQK_EINVAL);
	ck_assert_int_eq(sort("x -32769", b, &p, &prio), SQK_EINVAL);
	ck_assert_int_eq(sort("x 99999999999999999999", b, &p, &prio), SQK_EINVAL);
	ck_assert_int_eq(sort("x", b, &p, &prio), SQK_EINVAL);
	ck_assert_int_eq(sort("x ten", b, &p, &prio), SQK_EINVAL);
	ck_assert_int_eq(sort("x 10 11", b, &p, &prio), SQK_EINVAL);
	ck_assert_int_eq(sort("x 10z", b, &p, &prio), SQK_EINVAL);
}
END_TEST

/* A malformed line in a sort file stops the build (sqk_build, nothing written) with the file
 * and its line number in the result's message; the same file without it builds, the listed
 * file laid out first, the missing path only warned about. */
START_TEST(test_sort_file_line)
{
	char dir[] = "/tmp/test_hint_XXXXXX", path[512], sortf[512];
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/a", dir);
	FILE *f = fopen(path, "w");
	fputs("x", f);
	fclose(f);
	snprintf(sortf, sizeof(sortf), "%s.sort", dir);
	f = fopen(sortf, "w");
	fputs("# comment\na 5\n\na nine\n", f);
	fclose(f);
	char *sources[1] = { dir };
	struct sqk_build_opts o;
	struct sqk_build_source s;
	struct sqk_build_result r;
	struct sqk_io *mem;
	sqk_build_opts_init(&o);
	o.quiet = true;
	o.sort_file = sortf;
	sqk_build_source_init(&s, SQK_BUILD_DIRS);
	s.sources = sources;
	s.nsources = 1;
	sqk_build_result_init(&r);
	ck_assert_int_eq(sqk_io_mem_create(NULL, 0, &mem), 0);
	ck_assert_int_eq(sqk_build(&o, &s, mem, &r), SQK_EINVAL);
	ck_assert_msg(strstr(r.msg, sortf) && strstr(r.msg, "line 4"), "%s", r.msg);
	size_t len;
	sqk_io_mem_data(mem, &len);
	ck_assert_uint_eq(len, 0);
	f = fopen(sortf, "w");
	fputs("# comment\na 5\n\nmissing -3\n", f);
	fclose(f);
	ck_assert_msg(sqk_build(&o, &s, mem, &r) == 0, "%s", r.msg);
	ck_assert(r.ordered);
	ck_assert_uint_eq(r.order_files, 1);
	ck_assert_uint_eq(r.order_bytes, 1);
	sqk_io_destroy(mem);
	unlink(sortf);
	unlink(path);
	rmdir(dir);
}
END_TEST

/* Builds the directory dir with --order order_file or -sort sort_file (NULL: not given) into a
 * memory image; fails the test on an error. Caller owns the result. */
static struct sqk_io *build_listed(char *dir, const char *order_file, const char *sort_file,
				   struct sqk_build_result *r)
{
	char *sources[1] = { dir };
	struct sqk_build_opts o;
	struct sqk_build_source s;
	struct sqk_io *mem;

	sqk_build_opts_init(&o);
	o.quiet = true;
	o.order_file = order_file;
	o.sort_file = sort_file;
	sqk_build_source_init(&s, SQK_BUILD_DIRS);
	s.sources = sources;
	s.nsources = 1;
	sqk_build_result_init(r);
	ck_assert_int_eq(sqk_io_mem_create(NULL, 0, &mem), 0);
	ck_assert_msg(sqk_build(&o, &s, mem, r) == 0, "%s", r->msg);
	return mem;
}

/* A -sort priority on a directory applies to the files under it however deep they are: the
 * listing of a subtree deeper than its first stack of frames (40 levels) lays the file at the
 * bottom out first (it read freed memory once the stack moved). Built through sqk_build. */
START_TEST(test_sort_deep_dir)
{
	char dir[] = "/tmp/test_hint_XXXXXX", path[1024], sortf[600];
	ck_assert_ptr_nonnull(mkdtemp(dir));
	size_t n = (size_t)snprintf(path, sizeof(path), "%s", dir);
	for (int i = 0; i < 40; i++) {
		n += (size_t)snprintf(path + n, sizeof(path) - n, "/d");
		ck_assert_int_eq(mkdir(path, 0755), 0);
	}
	snprintf(path + n, sizeof(path) - n, "/f");
	FILE *f = fopen(path, "w");
	fputs("deep", f);
	fclose(f);
	snprintf(sortf, sizeof(sortf), "%s.sort", dir);
	f = fopen(sortf, "w");
	fputs("d 5\n", f);
	fclose(f);
	struct sqk_build_result r;
	struct sqk_io *mem = build_listed(dir, NULL, sortf, &r);
	ck_assert(r.ordered);
	ck_assert_uint_eq(r.order_files, 1);
	ck_assert_uint_eq(r.order_bytes, 4);
	ck_assert_uint_eq(r.counts.dirs, 41);
	sqk_io_destroy(mem);
	char cmd[700];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s' '%s'", dir, sortf);
	ck_assert_int_eq(system(cmd), 0);
}
END_TEST

/* Where path's data starts in img: its first block, or its fragment block. */
static uint64_t data_at(struct sqk_image *img, const char *path, bool frag)
{
	struct sqk_inode in;
	uint64_t start;
	uint32_t word;

	ck_assert_int_eq(sqk_lookup_path(img, path, &in), 0);
	if (!frag)
		return in.blocks_start;
	ck_assert_uint_ne(in.frag_index, SQK_NONE32);
	ck_assert_int_eq(sqk_fragment_entry(img, in.frag_index, &start, &word), 0);
	return start;
}

/* The files of an --order trace are laid out in its order with their tails' fragment blocks
 * among their blocks, a few at a time: a start that reads small and large files from its
 * beginning finds both early in the image (the prefetch hint's range is fetched in order). */
START_TEST(test_order_front_fragments_among_blocks)
{
	char tree[256], rel[64], trace[300];
	test_tree_new(tree, sizeof(tree), "hintorder");
	snprintf(trace, sizeof(trace), "%s.trace", tree);
	FILE *t = fopen(trace, "w");
	ck_assert_ptr_nonnull(t);
	for (int i = 0; i < 800; i++) { /* 8 files of 1 MiB among 800 small ones, all listed */
		if (i % 100 == 0) {
			snprintf(rel, sizeof(rel), "big%d", i / 100);
			test_tree_put(tree, rel, ((size_t)1 << 20) + (size_t)i);
			fprintf(t, "%s\n", rel);
		}
		snprintf(rel, sizeof(rel), "small%03d", i);
		test_tree_put(tree, rel, 3000 + (size_t)i); /* lengths differ: no duplicates */
		fprintf(t, "%s\n", rel);
	}
	fclose(t);
	struct sqk_build_result res;
	struct sqk_io *mem = build_listed(tree, trace, NULL, &res);
	struct sqk_image *img;
	ck_assert_uint_eq(res.order_files, 808);
	ck_assert_int_eq(sqk_image_open_io(mem, NULL, &img), 0);
	/* in trace order, give or take the 512 KiB of tails packed at a time (300 KB between two
	 * big files): the first small file's tail before the blocks of the third big file, the
	 * last big file's blocks before the last small file's tail */
	ck_assert_uint_lt(data_at(img, "/small000", true), data_at(img, "/big2", false));
	ck_assert_uint_lt(data_at(img, "/small350", true), data_at(img, "/big7", false));
	ck_assert_uint_lt(data_at(img, "/big7", false), data_at(img, "/small799", true));
	ck_assert_uint_lt(data_at(img, "/big0", false), data_at(img, "/big7", false));
	sqk_image_close(img);
	sqk_io_destroy(mem);
	test_tree_remove(tree);
	unlink(trace);
}
END_TEST

static Suite *hint_suite(void)
{
	Suite *s = suite_create("hint");
	TCase *tc = tcase_create("hint");

	tcase_add_test(tc, test_round_trip);
	tcase_add_test(tc, test_len);
	tcase_add_test(tc, test_encode_refuses);
	tcase_add_test(tc, test_hostile);
	tcase_add_test(tc, test_trace_lines);
	tcase_add_test(tc, test_sort_lines);
	tcase_add_test(tc, test_sort_file_line);
	tcase_add_test(tc, test_sort_deep_dir);
	tcase_add_test(tc, test_order_front_fragments_among_blocks);
	tcase_set_timeout(tc, 60); /* a build under TSan takes over a second */
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return test_run_suite(hint_suite());
}
