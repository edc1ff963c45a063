/* SPDX-License-Identifier: BSD-2-Clause */
/* Check suite for sqk diff's walk (cli/diff_tree.c, diff_side.c, diff_blocks.c): an image and
 * the tree it was built from read as the same entries and compare equal; a byte changed at the
 * edges of the 256 KiB comparison window (its first byte, the last before the next window,
 * the first of it, the file's last) is found at its offset, whether the sides are an image and
 * a directory or two images storing the file alike (compared as stored, block by block). */
#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/diff.h"
#include "testutil.h"

#define BIG_SIZE (2 * (size_t)DIFF_WINDOW + 5)

static char tree[64];

static void make_tree(void)
{
	char p[256];

	test_tree_new(tree, sizeof(tree), "diff");
	test_tree_dir(tree, "a");
	test_tree_put(tree, "a/big", BIG_SIZE);
	test_tree_put(tree, "small", 10);
	snprintf(p, sizeof(p), "%s/l", tree);
	ck_assert_int_eq(symlink("a/big", p), 0);
	snprintf(p, sizeof(p), "%s/p", tree);
	ck_assert_int_eq(mkfifo(p, 0644), 0);
}

/* A side for an image opened on io (the caller closes img and destroys io). */
static void image_side(struct diff_side *s, struct sqk_io *io, const char *sub)
{
	memset(s, 0, sizeof(*s));
	s->arg = sub;
	s->sub = sub;
	s->c.name = "diff";
	s->c.image = sub;
	ck_assert_int_eq(sqk_image_open_io(io, NULL, &s->c.img), 0);
	ck_assert(sqk_image_verified(s->c.img));
}

static void dir_side(struct diff_side *s, const char *dir)
{
	memset(s, 0, sizeof(*s));
	s->arg = dir;
	s->sub = "new";
	s->is_dir = true;
}

/* Runs the walk of d as --json with stdout in a file; returns what it printed (caller
 * frees). */
static char *run_json(struct diff *d)
{
	char path[] = "/tmp/sqk-test-diff-out.XXXXXX", *text = calloc(1, 65536);
	int fd = mkstemp(path), saved;
	ssize_t n;

	ck_assert(fd >= 0 && text);
	fflush(stdout);
	saved = dup(STDOUT_FILENO);
	ck_assert_int_eq(dup2(fd, STDOUT_FILENO), STDOUT_FILENO);
	d->flags |= DIFF_JSON;
	d->different = false;
	d->nreported = 0;
	ck_assert_int_eq(diff_trees(d), 0);
	fflush(stdout);
	ck_assert_int_eq(dup2(saved, STDOUT_FILENO), STDOUT_FILENO);
	close(saved);
	n = pread(fd, text, 65535, 0);
	ck_assert(n >= 0);
	close(fd);
	unlink(path);
	return text;
}

static void flip(const char *rel, size_t off)
{
	char p[256];
	unsigned char c;
	int fd;

	snprintf(p, sizeof(p), "%s/%s", tree, rel);
	fd = open(p, O_RDWR);
	ck_assert(fd >= 0);
	ck_assert_int_eq(pread(fd, &c, 1, (off_t)off), 1);
	c ^= 0x5a;
	ck_assert_int_eq(pwrite(fd, &c, 1, (off_t)off), 1);
	close(fd);
}

static void init(struct diff *d)
{
	d->wa = malloc(DIFF_WINDOW);
	d->wb = malloc(DIFF_WINDOW);
	ck_assert(d->wa && d->wb);
}

/* An image and its tree: the same entries (sorted alike, same fields), no difference. */
START_TEST(test_image_is_its_tree)
{
	struct diff_node ra, rb, *va, *vb;
	struct diff d = { 0 };
	struct sqk_io *io;
	size_t na, nb;

	make_tree();
	io = test_build_dir(tree, false, NULL);
	image_side(&d.a, io, "old");
	dir_side(&d.b, tree);
	init(&d);
	ck_assert_int_eq(diff_side_root(&d.a, &ra), 0);
	ck_assert_int_eq(diff_side_root(&d.b, &rb), 0);
	ck_assert_int_eq(diff_side_list(&d.a, &ra, "", &va, &na), 0);
	ck_assert_int_eq(diff_side_list(&d.b, &rb, "", &vb, &nb), 0);
	ck_assert_uint_eq(na, 4);
	ck_assert_uint_eq(nb, 4);
	for (size_t i = 0; i < na; i++) {
		ck_assert_str_eq(va[i].name, vb[i].name);
		ck_assert_uint_eq(va[i].mode, vb[i].mode);
		ck_assert_uint_eq(va[i].size, vb[i].size);
		ck_assert_int_eq(va[i].mtime, vb[i].mtime);
		ck_assert_uint_eq(va[i].uid, vb[i].uid);
	}
	ck_assert_str_eq(va[0].name, "a"); /* byte order: "a", "l", "p", "small" */
	ck_assert_str_eq(va[3].name, "small");
	diff_nodes_free(va, na);
	diff_nodes_free(vb, nb);
	free(ra.name);
	free(rb.name);
	d.flags = DIFF_QUIET | DIFF_TIME;
	ck_assert_int_eq(diff_trees(&d), 0);
	ck_assert(!d.different);
	free(d.wa);
	free(d.wb);
	sqk_image_close(d.a.c.img);
	sqk_io_destroy(io);
	test_tree_remove(tree);
}
END_TEST

/* A byte changed at each edge of the window: found at its offset, image against tree and
 * image against image (equal block lists: compared as stored, then decompressed). */
START_TEST(test_window_edges)
{
	static const size_t offs[] = { 0, DIFF_WINDOW - 1, DIFF_WINDOW, BIG_SIZE - 1 };
	struct diff d = { 0 };
	struct sqk_io *io, *io2;
	char want[128], *out;

	make_tree();
	io = test_build_dir(tree, false, NULL);
	image_side(&d.a, io, "old");
	init(&d);
	for (size_t k = 0; k < sizeof(offs) / sizeof(offs[0]); k++) {
		snprintf(want, sizeof(want), "{\"path\": \"/a/big\", \"field\": \"contents\", "
			 "\"old\": null, \"new\": null, \"offset\": %zu}", offs[k]);
		flip("a/big", offs[k]);
		dir_side(&d.b, tree);
		out = run_json(&d);
		ck_assert_msg(strstr(out, want) && d.different, "dir at %zu: %s", offs[k], out);
		free(out);
		io2 = test_build_dir(tree, false, NULL);
		image_side(&d.b, io2, "new");
		out = run_json(&d);
		ck_assert_msg(strstr(out, want) && d.different, "image at %zu: %s", offs[k], out);
		free(out);
		sqk_image_close(d.b.c.img);
		sqk_io_destroy(io2);
		flip("a/big", offs[k]); /* back */
	}
	free(d.wa);
	free(d.wb);
	sqk_image_close(d.a.c.img);
	sqk_io_destroy(io);
	test_tree_remove(tree);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("diff");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_image_is_its_tree);
	tcase_add_test(tc, test_window_edges);
	suite_add_tcase(s, tc);
	return test_run_suite(s);
}
