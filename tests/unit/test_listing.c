/* SPDX-License-Identifier: BSD-2-Clause */
/* Check suite for cli/listing.c, unsquashfs's listing habits: the options as unsquashfs spells
 * them (taken only by the commands that have them, not after "--"; long once any option asks
 * for it), the owner names (the passwd file's, a number without one, cached as the table
 * grows), the exact paths, the mode string, and xattr values as getfattr shows them (quoted
 * text with \\ and \" escaped, one trailing NUL dropped, base64 for the rest) on an image
 * built in memory. */
#include <check.h>
#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>

#include "cli/listing.h"
#include "sqk/sqk.h"
#include "testutil.h"

/* lst_strip takes ls's options and leaves -l (ls's long format) and what follows "--". */
START_TEST(test_strip_ls)
{
	struct listing l;
	char *argv[] = { "ls", "-lln", "-l", "img", "-UTC", "--", "-lls", NULL };
	int argc;

	lst_init(&l);
	argc = lst_strip(&l, 7, argv, LST_FOR_LS);
	ck_assert_int_eq(argc, 5);
	ck_assert_str_eq(argv[1], "-l");
	ck_assert_str_eq(argv[2], "img");
	ck_assert_str_eq(argv[3], "--");
	ck_assert_str_eq(argv[4], "-lls");
	ck_assert_ptr_null(argv[5]);
	ck_assert_int_eq(l.mode, LST_LONG);
	ck_assert(l.only && l.numeric && l.utc && !l.concise && !l.info);
	lst_free(&l);
}
END_TEST

/* Extract's -l is unsquashfs's -ls; -linfo extracts too; -lc after -lls stays long. */
START_TEST(test_take_extract)
{
	struct listing l;

	lst_init(&l);
	ck_assert(lst_take(&l, "-l", LST_FOR_EXTRACT));
	ck_assert_int_eq(l.mode, LST_SHORT);
	ck_assert(l.only);
	ck_assert(!lst_take(&l, "-linfo", LST_FOR_LS));
	ck_assert(!lst_take(&l, "-l", LST_FOR_LS));
	ck_assert(!lst_take(&l, "-lsx", LST_FOR_EXTRACT));
	lst_init(&l);
	ck_assert(lst_take(&l, "-linfo", LST_FOR_EXTRACT));
	ck_assert(l.info && !l.only);
	ck_assert_int_eq(l.mode, LST_LONG);
	lst_init(&l);
	ck_assert(lst_take(&l, "-lls", LST_FOR_EXTRACT));
	ck_assert(lst_take(&l, "-lc", LST_FOR_EXTRACT));
	ck_assert(lst_take(&l, "-full-precision", LST_FOR_EXTRACT));
	ck_assert_int_eq(l.mode, LST_LONG);
	ck_assert(l.concise && l.full_time);
}
END_TEST

/* An id that no passwd entry names (searched from the top of the range). */
static uint32_t unnamed_uid(void)
{
	for (uint32_t id = 4000000000u;; id++)
		if (!getpwuid((uid_t)id))
			return id;
}

/* Root's name; a number for an unnamed id; 300 ids (the table grows past 64 slots) answer
 * the same afterwards. */
START_TEST(test_names)
{
	struct listing l;
	char b[12], want[12];
	uint32_t none = unnamed_uid();
	const char *root;

	lst_init(&l);
	root = lst_name(&l.users, 0, b);
	ck_assert_str_eq(root, getpwuid(0)->pw_name);
	ck_assert(lst_has_name(&l.users, 0));
	snprintf(want, sizeof(want), "%u", none);
	ck_assert_str_eq(lst_name(&l.users, none, b), want);
	ck_assert(!lst_has_name(&l.users, none));
	for (uint32_t id = none; id < none + 300; id++)
		ck_assert(!lst_has_name(&l.users, id));
	ck_assert_str_eq(lst_name(&l.users, 0, b), getpwuid(0)->pw_name);
	ck_assert_uint_ge(l.users.cap, 512);
	lst_free(&l);
	ck_assert_ptr_null(l.users.slot);
}
END_TEST

/* Exact paths: no leading, trailing or repeated slashes. */
START_TEST(test_norm_paths)
{
	char a[] = "//d//e/", b[] = "/", c[] = "f", d[] = "a///b//c";
	char *p[] = { a, b, c, d };

	lst_norm_paths(p, 4);
	ck_assert_str_eq(p[0], "d/e");
	ck_assert_str_eq(p[1], "");
	ck_assert_str_eq(p[2], "f");
	ck_assert_str_eq(p[3], "a/b/c");
}
END_TEST

START_TEST(test_mode_string)
{
	char m[11];

	lst_mode_string(S_IFDIR | 01777, m);
	ck_assert_str_eq(m, "drwxrwxrwt");
	lst_mode_string(S_IFREG | 04644, m);
	ck_assert_str_eq(m, "-rwSr--r--");
	lst_mode_string(S_IFCHR | 02750, m);
	ck_assert_str_eq(m, "crwxr-s---");
	lst_mode_string(S_IFSOCK | 01000, m);
	ck_assert_str_eq(m, "s--------T");
}
END_TEST

/* getfattr -d's forms for each kind of value, after the indent. */
START_TEST(test_xattr_values)
{
	char tree[64], p[256], *text = NULL;
	size_t len = 0;
	struct sqk_image *img;
	struct sqk_inode ino;
	struct sqk_io *io;
	FILE *f;

	test_tree_new(tree, sizeof(tree), "listing");
	test_tree_put(tree, "x", 10);
	snprintf(p, sizeof(p), "%s/x", tree);
	if (setxattr(p, "user.q", "q\"uote\\", 7, 0) && errno == ENOTSUP) {
		test_tree_remove(tree);
		return; /* no user. xattrs in /tmp here: the integration test covers them */
	}
	ck_assert_int_eq(setxattr(p, "user.z", "abc", 4, 0), 0);  /* trailing NUL */
	ck_assert_int_eq(setxattr(p, "user.b", "\0\xff\n\"", 4, 0), 0);
	ck_assert_int_eq(setxattr(p, "user.e", "", 0, 0), 0);
	io = test_build_dir(tree, false, NULL);
	ck_assert_int_eq(sqk_image_open_io(io, NULL, &img), 0);
	ck_assert_int_eq(sqk_lookup_path(img, "x", &ino), 0);
	f = open_memstream(&text, &len);
	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(lst_xattrs(img, &ino, "> ", f), 0);
	fclose(f);
	ck_assert_ptr_nonnull(strstr(text, "> user.q=\"q\\\"uote\\\\\"\n"));
	ck_assert_ptr_nonnull(strstr(text, "> user.z=\"abc\"\n"));
	ck_assert_ptr_nonnull(strstr(text, "> user.b=0sAP8KIg==\n"));
	ck_assert_ptr_nonnull(strstr(text, "> user.e=\"\"\n"));
	free(text);
	sqk_image_close(img);
	sqk_io_destroy(io);
	test_tree_remove(tree);
}
END_TEST

static Suite *listing_suite(void)
{
	Suite *s = suite_create("listing");
	TCase *tc = tcase_create("listing");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_strip_ls);
	tcase_add_test(tc, test_take_extract);
	tcase_add_test(tc, test_names);
	tcase_add_test(tc, test_norm_paths);
	tcase_add_test(tc, test_mode_string);
	tcase_add_test(tc, test_xattr_values);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return test_run_suite(listing_suite());
}
