/* SPDX-License-Identifier: BSD-2-Clause */
/* Check suite for cli/progress.c, the progress line of sqk extract, verify, tar and cat:
 * the totals walk on an image built in memory (each inode once: hard links and a directory
 * reached twice count once; a subtree; one file), the counting I/O object, the size and rate
 * formats, and that nothing is on (so nothing counts and nothing is drawn) off a terminal. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/progress.h"
#include "sqk/sqk.h"
#include "mkimage/build.h"
#include "testutil.h"

static char tree[64];

/* a/ 3 files of 1000, 20000, 0 bytes; a/b/ one of 70000 and a hard link to a/one;
 * c/ a symlink and one file of 5 bytes. Regular files: 5 inodes, 91005 bytes. */
static void make_tree(void)
{
	char p[256], q[256];

	test_tree_new(tree, sizeof(tree), "progress");
	test_tree_dir(tree, "a");
	test_tree_dir(tree, "a/b");
	test_tree_dir(tree, "c");
	test_tree_put(tree, "a/one", 1000);
	test_tree_put(tree, "a/two", 20000);
	test_tree_put(tree, "a/empty", 0);
	test_tree_put(tree, "a/b/big", 70000);
	test_tree_put(tree, "c/small", 5);
	snprintf(p, sizeof(p), "%s/a/one", tree);
	snprintf(q, sizeof(q), "%s/a/b/link", tree);
	ck_assert_int_eq(link(p, q), 0);
	snprintf(q, sizeof(q), "%s/c/sym", tree);
	ck_assert_int_eq(symlink("../a/one", q), 0);
}

static void count_at(struct sqk_image *img, const char *path, uint64_t files, uint64_t bytes)
{
	struct sqk_inode in;
	uint64_t f = 99, b = 99;

	ck_assert_int_eq(sqk_lookup_path(img, path, &in), 0);
	ck_assert_int_eq(progress_count(img, &in, &f, &b), 0);
	ck_assert_msg(f == files && b == bytes, "%s: %llu files, %llu bytes (want %llu, %llu)",
		      path, (unsigned long long)f, (unsigned long long)b,
		      (unsigned long long)files, (unsigned long long)bytes);
}

/* The totals of the root, of subtrees and of single entries: each inode once. */
START_TEST(test_count)
{
	struct sqk_io *io;
	struct sqk_image *img;

	make_tree();
	io = test_build_dir(tree, false, NULL);
	ck_assert_int_eq(sqk_image_open_io(io, NULL, &img), 0);
	count_at(img, "", 5, 91005);          /* a/b/link is a/one again */
	count_at(img, "a", 4, 91000);
	count_at(img, "a/b", 2, 71000);       /* the link's data is its own inside a/b */
	count_at(img, "c", 1, 5);             /* a symlink is no file */
	count_at(img, "a/b/big", 1, 70000);   /* a file: itself */
	count_at(img, "c/sym", 0, 0);
	sqk_image_close(img);
	sqk_io_destroy(io);
	test_tree_remove(tree);
}
END_TEST

/* Byte counts as the line and the summaries show them. */
START_TEST(test_formats)
{
	char b[32];

	progress_size(b, sizeof(b), 0);
	ck_assert_str_eq(b, "0 B");
	progress_size(b, sizeof(b), 1023);
	ck_assert_str_eq(b, "1023 B");
	progress_size(b, sizeof(b), 1536);
	ck_assert_str_eq(b, "1.5 KiB");
	progress_size(b, sizeof(b), 16u << 20);
	ck_assert_str_eq(b, "16.0 MiB");
	progress_size(b, sizeof(b), 5ull << 40);
	ck_assert_str_eq(b, "5.0 TiB");
	progress_rate(b, sizeof(b), 10u << 20, 2.0);
	ck_assert_str_eq(b, "5.0 MiB/s");
	progress_rate(b, sizeof(b), 10u << 20, 0);
	ck_assert_str_eq(b, "-");
	ck_assert_str_eq(plural(1, "file", "files"), "file");
	ck_assert_str_eq(plural(0, "file", "files"), "files");
}
END_TEST

/* The counting I/O object passes reads and sizes through and counts the bytes of the reads
 * that succeed, when the line is on. */
START_TEST(test_counting_io)
{
	static const char data[] = "0123456789abcdef";
	struct progress p;
	struct sqk_io *mem, *io;
	uint64_t size;
	char buf[8];

	progress_init(&p, "verify", true);
	p.on = true; /* as on a terminal, without drawing: never started */
	ck_assert_int_eq(sqk_io_mem_create(data, 16, &mem), 0);
	ck_assert_int_eq(progress_io(&p, mem, &io), 0);
	ck_assert_int_eq(sqk_io_get_size(io, &size), 0);
	ck_assert_uint_eq(size, 16);
	ck_assert_int_eq(sqk_io_read_at(io, 4, buf, 8), 0);
	ck_assert_int_eq(memcmp(buf, "456789ab", 8), 0);
	ck_assert_int_eq(sqk_io_read_ahead(io, 0, buf, 2, NULL), 0);
	ck_assert_int_ne(sqk_io_read_at(io, 12, buf, 8), 0); /* past the end: not counted */
	ck_assert_uint_eq(atomic_load(&p.bytes), 10);
	progress_add(&p, 2, 5);
	ck_assert_uint_eq(atomic_load(&p.files), 2);
	ck_assert_uint_eq(atomic_load(&p.bytes), 15);
	sqk_io_destroy(io);  /* the wrapper only */
	ck_assert_int_eq(sqk_io_read_at(mem, 0, buf, 2), 0);
	sqk_io_destroy(mem);
	progress_stop(&p); /* not started: nothing to stop */
}
END_TEST

/* Off a terminal (stderr is a file here) the line is off: nothing counts, start draws nothing,
 * no summary is printed. */
START_TEST(test_off_terminal)
{
	struct progress p;
	FILE *f = tmpfile();
	int saved = dup(STDERR_FILENO);
	struct stat st;

	ck_assert_ptr_nonnull(f);
	ck_assert_int_ge(saved, 0);
	ck_assert_int_ge(dup2(fileno(f), STDERR_FILENO), 0);
	progress_init(&p, "extract", true);
	ck_assert(!p.on);
	progress_totals(&p, 3, 300);
	ck_assert_int_eq(progress_start(&p, 0), 0);
	progress_add(&p, 1, 100);
	ck_assert_uint_eq(atomic_load(&p.bytes), 0);
	usleep(300 * 1000); /* a tick would have drawn by now */
	progress_stop(&p);
	progress_summary(&p, "%d files", 3);
	fflush(stderr);
	ck_assert_int_eq(fstat(fileno(f), &st), 0);
	dup2(saved, STDERR_FILENO);
	close(saved);
	fclose(f);
	ck_assert_int_eq(st.st_size, 0);
}
END_TEST

static Suite *progress_suite(void)
{
	Suite *s = suite_create("progress");
	TCase *tc = tcase_create("progress");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_count);
	tcase_add_test(tc, test_formats);
	tcase_add_test(tc, test_counting_io);
	tcase_add_test(tc, test_off_terminal);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return test_run_suite(progress_suite());
}
