/* SPDX-License-Identifier: BSD-2-Clause */
/* Check suite for libsqk's tree walk and directory iterator (reader/lib/walk.c, dir.c): on an
 * image built in memory by the builder, the walk's order, paths, depths, parents and post-order
 * events, skipping a directory, the once-per-inode flag on a hard link, the depth bound with its
 * error, a walk from a path or a file; the iterator's entries; and, on an image whose directory
 * block is stored raw and then patched, a listing cut short, a bad run, entries whose inodes do
 * not decode and a directory loop giving errors or flags, never a crash or an endless walk. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/endian.h"
#include "common/meta.h"
#include "mkimage/build.h"
#include "sqk/sqk.h"
#include "testutil.h"

static char tree[64];

/* a/b/deep, a/f1, a/hl (a hard link to c/one), c/one, c/sym, e/ (empty), z. */
static void make_tree(void)
{
	char p[256], q[256];

	test_tree_new(tree, sizeof(tree), "walk");
	test_tree_dir(tree, "a");
	test_tree_dir(tree, "a/b");
	test_tree_dir(tree, "c");
	test_tree_dir(tree, "e");
	test_tree_put(tree, "a/b/deep", 10);
	test_tree_put(tree, "a/f1", 1000);
	test_tree_put(tree, "c/one", 5);
	test_tree_put(tree, "z", 7);
	snprintf(p, sizeof(p), "%s/c/one", tree);
	snprintf(q, sizeof(q), "%s/a/hl", tree);
	ck_assert_int_eq(link(p, q), 0);
	snprintf(q, sizeof(q), "%s/c/sym", tree);
	ck_assert_int_eq(symlink("one", q), 0);
}

static struct sqk_io *io;
static struct sqk_image *img;

static void setup(void)
{
	make_tree();
	io = test_build_dir(tree, false, NULL);
	ck_assert_int_eq(sqk_image_open_io(io, NULL, &img), 0);
}

static void teardown(void)
{
	sqk_image_close(img);
	sqk_io_destroy(io);
	test_tree_remove(tree);
}

/* What one step of a walk is expected to report. */
struct step {
	int event;
	const char *path;
	unsigned depth;
};

/* Walks from path with flags and max_depth, checking each step against want[0..n); returns
 * the number of entries that had SQK_WALK_SEEN, and the path of the last of them in seen. */
static unsigned expect_walk(const char *path, unsigned flags, unsigned max_depth,
			    const struct step *want, size_t n, char *seen)
{
	struct sqk_walk_entry e;
	struct sqk_walk *w;
	unsigned nseen = 0;
	size_t i = 0;
	int rc;

	ck_assert_int_eq(sqk_walk_open_path(img, path, flags, max_depth, &w), 0);
	while ((rc = sqk_walk_next(w, &e)) != 0) {
		ck_assert_msg(i < n, "step %zu: %s (event %d) past the %zu expected", i, e.path,
			      e.event, n);
		ck_assert_msg(e.event == want[i].event && !strcmp(e.path, want[i].path) &&
			      e.depth == want[i].depth,
			      "step %zu: event %d '%s' depth %u, want %d '%s' depth %u", i, e.event,
			      e.path, e.depth, want[i].event, want[i].path, want[i].depth);
		ck_assert_int_eq(rc, e.event == SQK_WALK_ERR_DEPTH ? SQK_ETOOBIG : 1);
		ck_assert_uint_eq(e.path_len, strlen(e.path));
		ck_assert_uint_eq(e.name_len, strlen(e.name));
		ck_assert(e.name + e.name_len == e.path + e.path_len); /* its last component */
		ck_assert((e.depth == 0) == (e.parent == NULL));
		if (e.event == SQK_WALK_PRE && e.depth) {
			ck_assert_uint_eq(e.dirent.ino, e.inode.ino);
			ck_assert_uint_eq(e.dirent.ref, e.inode.ref);
			ck_assert_uint_eq(sqk_basic_type(e.parent->type), SQK_T_DIR);
		}
		if (e.flags & SQK_WALK_SEEN) {
			nseen++;
			snprintf(seen, 64, "%s", e.path);
		}
		i++;
	}
	ck_assert_uint_eq(i, n);
	ck_assert_int_eq(sqk_walk_next(w, &e), 0); /* the end stays the end */
	sqk_walk_close(w);
	return nseen;
}

#define PRE SQK_WALK_PRE
#define POST SQK_WALK_POST

/* Depth first, in stored (sorted) order, a directory before its entries and, with
 * SQK_WALK_LEAVE, reported again after them; paths relative to the start. */
START_TEST(test_order)
{
	static const struct step all[] = {
		{ PRE, "", 0 },        { PRE, "a", 1 },     { PRE, "a/b", 2 },
		{ PRE, "a/b/deep", 3 }, { POST, "a/b", 2 }, { PRE, "a/f1", 2 },
		{ PRE, "a/hl", 2 },    { POST, "a", 1 },    { PRE, "c", 1 },
		{ PRE, "c/one", 2 },   { PRE, "c/sym", 2 }, { POST, "c", 1 },
		{ PRE, "e", 1 },       { POST, "e", 1 },    { PRE, "z", 1 },
		{ POST, "", 0 },
	};
	static const struct step pre[] = {
		{ PRE, "", 0 },      { PRE, "a", 1 },     { PRE, "a/b", 2 }, { PRE, "a/b/deep", 3 },
		{ PRE, "a/f1", 2 },  { PRE, "a/hl", 2 },  { PRE, "c", 1 },   { PRE, "c/one", 2 },
		{ PRE, "c/sym", 2 }, { PRE, "e", 1 },     { PRE, "z", 1 },
	};
	static const struct step sub[] = {
		{ PRE, "", 0 }, { PRE, "b", 1 }, { PRE, "b/deep", 2 }, { PRE, "f1", 1 },
		{ PRE, "hl", 1 },
	};
	static const struct step file[] = { { PRE, "", 0 } };
	char seen[64] = "";

	ck_assert_uint_eq(expect_walk("", SQK_WALK_LEAVE, SQK_WALK_MAX_DEPTH, all, 16, seen), 0);
	ck_assert_uint_eq(expect_walk("/", 0, SQK_WALK_MAX_DEPTH, pre, 11, seen), 0);
	ck_assert_uint_eq(expect_walk("a", 0, 1000, sub, 5, seen), 0);
	/* a file: itself only, no SQK_WALK_POST (not a directory) */
	ck_assert_uint_eq(expect_walk("z", SQK_WALK_LEAVE, SQK_WALK_MAX_DEPTH, file, 1, seen), 0);
}
END_TEST

/* The start is the inode given, or the root; its entries' parent is it. */
START_TEST(test_start_and_parent)
{
	struct sqk_walk_entry e;
	struct sqk_inode a, b;
	struct sqk_walk *w = (struct sqk_walk *)&w;

	ck_assert_int_eq(sqk_walk_open_path(img, "nope", 0, SQK_WALK_MAX_DEPTH, &w), SQK_ENOENT);
	ck_assert_ptr_null(w);
	ck_assert_int_eq(sqk_lookup_path(img, "a", &a), 0);
	ck_assert_int_eq(sqk_lookup_path(img, "a/b", &b), 0);
	ck_assert_int_eq(sqk_walk_open(img, &a, 0, SQK_WALK_MAX_DEPTH, &w), 0);
	ck_assert_int_eq(sqk_walk_next(w, &e), 1);
	ck_assert_uint_eq(e.inode.ref, a.ref);
	ck_assert_uint_eq(e.dirent.ino, a.ino);
	ck_assert_int_eq(sqk_walk_next(w, &e), 1);
	ck_assert_str_eq(e.path, "b");
	ck_assert_str_eq(e.name, "b");
	ck_assert_uint_eq(e.index, 0);
	ck_assert_uint_eq(e.parent->ref, a.ref);
	ck_assert_int_eq(sqk_walk_next(w, &e), 1);
	ck_assert_str_eq(e.path, "b/deep");
	ck_assert_str_eq(e.name, "deep");
	ck_assert_uint_eq(e.parent->ref, b.ref);
	ck_assert_uint_eq(e.inode.size, 10);
	ck_assert_int_eq(sqk_walk_next(w, &e), 1);
	ck_assert_str_eq(e.path, "f1");
	ck_assert_uint_eq(e.index, 1);
	ck_assert_uint_eq(e.parent->ref, a.ref);
	sqk_walk_close(w);
	sqk_walk_close(NULL);
	/* NULL start: the root */
	ck_assert_int_eq(sqk_walk_open(img, NULL, 0, SQK_WALK_MAX_DEPTH, &w), 0);
	ck_assert_int_eq(sqk_walk_next(w, &e), 1);
	ck_assert_uint_eq(e.inode.ref, sqk_image_super(img)->root_inode);
	sqk_walk_close(w);
}
END_TEST

/* sqk_walk_skip: the directory's entries are not reported, its SQK_WALK_POST comes at once. */
START_TEST(test_skip)
{
	struct sqk_walk_entry e;
	struct sqk_walk *w;
	char got[512] = "";
	int rc;

	ck_assert_int_eq(sqk_walk_open(img, NULL, SQK_WALK_LEAVE, SQK_WALK_MAX_DEPTH, &w), 0);
	while ((rc = sqk_walk_next(w, &e)) == 1) {
		if (e.event == SQK_WALK_PRE && (!strcmp(e.path, "a") || !strcmp(e.path, "c/one")))
			sqk_walk_skip(w); /* a directory, and a file (no effect) */
		strcat(got, e.event == SQK_WALK_POST ? "-" : "+");
		strcat(got, e.path);
		strcat(got, " ");
	}
	ck_assert_int_eq(rc, 0);
	ck_assert_str_eq(got, "+ +a -a +c +c/one +c/sym -c +e -e +z - ");
	sqk_walk_close(w);
}
END_TEST

/* SQK_WALK_ONCE: the second name of the hard-linked inode (a/hl comes first, c/one second)
 * has SQK_WALK_SEEN; without it, nothing does. */
START_TEST(test_once)
{
	static const struct step pre[] = {
		{ PRE, "", 0 },      { PRE, "a", 1 },     { PRE, "a/b", 2 }, { PRE, "a/b/deep", 3 },
		{ PRE, "a/f1", 2 },  { PRE, "a/hl", 2 },  { PRE, "c", 1 },   { PRE, "c/one", 2 },
		{ PRE, "c/sym", 2 }, { PRE, "e", 1 },     { PRE, "z", 1 },
	};
	struct sqk_inode one, hl;
	char seen[64] = "";

	ck_assert_int_eq(sqk_lookup_path(img, "c/one", &one), 0);
	ck_assert_int_eq(sqk_lookup_path(img, "a/hl", &hl), 0);
	ck_assert_uint_eq(one.ino, hl.ino);
	ck_assert_uint_eq(expect_walk("", SQK_WALK_ONCE, SQK_WALK_MAX_DEPTH, pre, 11, seen), 1);
	ck_assert_str_eq(seen, "c/one");
	ck_assert_uint_eq(expect_walk("", 0, SQK_WALK_MAX_DEPTH, pre, 11, seen), 0);
	/* from c, c/one is the first name met */
	seen[0] = 0;
	ck_assert_uint_eq(expect_walk("c", SQK_WALK_ONCE, SQK_WALK_MAX_DEPTH,
				      (const struct step[]){ { PRE, "", 0 }, { PRE, "one", 1 },
							     { PRE, "sym", 1 } },
				      3, seen), 0);
}
END_TEST

/* max_depth bounds the entries' depth: a directory at that depth with entries gives
 * SQK_WALK_ERR_DEPTH (SQK_ETOOBIG) naming it, is not entered, and the walk goes on; an empty
 * one is no error. A larger bound is the policy's. */
START_TEST(test_depth_bound)
{
	static const struct step one[] = {
		{ PRE, "", 0 },  { PRE, "a", 1 }, { SQK_WALK_ERR_DEPTH, "a", 1 }, { PRE, "c", 1 },
		{ SQK_WALK_ERR_DEPTH, "c", 1 },  { PRE, "e", 1 }, { PRE, "z", 1 },
	};
	static const struct step two[] = {
	    {PRE, "", 0},      {PRE, "a", 1},	 {PRE, "a/b", 2}, {SQK_WALK_ERR_DEPTH, "a/b", 2},
	    {PRE, "a/f1", 2},  {PRE, "a/hl", 2}, {PRE, "c", 1},	  {PRE, "c/one", 2},
	    {PRE, "c/sym", 2}, {PRE, "e", 1},	 {PRE, "z", 1},
	};
	static const struct step none[] = { { PRE, "", 0 }, { SQK_WALK_ERR_DEPTH, "", 0 } };
	static const struct step sub[] = {
		{ PRE, "", 0 }, { PRE, "deep", 1 }, /* a/b's entries: depth 1 below a/b */
	};
	char seen[64];

	expect_walk("", 0, 1, one, 7, seen);
	expect_walk("", 0, 2, two, 11, seen);
	expect_walk("", 0, 0, none, 2, seen);
	expect_walk("a/b", 0, 1, sub, 2, seen);
	expect_walk("e", 0, 0, (const struct step[]){ { PRE, "", 0 } }, 1, seen);
}
END_TEST

/* The iterator: the root's entries in order with their inode numbers, types and refs; its
 * index counts them; a file cannot be listed. */
START_TEST(test_dir_iter)
{
	static const char *const names[] = { "a", "c", "e", "z" };
	static const uint16_t types[] = { SQK_T_DIR, SQK_T_DIR, SQK_T_DIR, SQK_T_FILE };
	struct sqk_dir_iter *it = (struct sqk_dir_iter *)&it;
	struct sqk_inode root, in, z;
	struct sqk_dirent d;
	int i = 0, rc;

	ck_assert_int_eq(sqk_image_root(img, &root), 0);
	ck_assert_int_eq(sqk_dir_open(img, &root, &it), 0);
	ck_assert_uint_eq(sqk_dir_index(it), 0);
	ck_assert_uint_ge(sqk_dir_pos(it), sqk_image_super(img)->directory_table_start);
	while ((rc = sqk_dir_next(it, &d)) == 1) {
		ck_assert_int_lt(i, 4);
		ck_assert_uint_eq(d.name_len, strlen(names[i]));
		ck_assert_int_eq(memcmp(d.name, names[i], d.name_len), 0);
		ck_assert_int_eq(d.name[d.name_len], 0);
		ck_assert_uint_eq(d.type, types[i]);
		ck_assert_int_eq(sqk_inode_get(img, d.ref, &in), 0);
		ck_assert_uint_eq(in.ino, d.ino);
		ck_assert_int_eq(sqk_lookup(img, &root, d.name, d.name_len, &in), 0);
		ck_assert_uint_eq(in.ref, d.ref);
		ck_assert_uint_eq(sqk_dir_index(it), (uint64_t)++i);
	}
	ck_assert_int_eq(rc, 0);
	ck_assert_int_eq(i, 4);
	ck_assert_int_eq(sqk_dir_next(it, &d), 0);
	sqk_dir_close(it);
	sqk_dir_close(NULL);
	ck_assert_int_eq(sqk_lookup_path(img, "z", &z), 0);
	ck_assert_int_eq(sqk_dir_open(img, &z, &it), SQK_EINVAL);
	ck_assert_ptr_null(it);
}
END_TEST

/* ---- a directory block stored raw, patched ---- */

#define NRAND 3

/* The root holds NRAND empty files with 255-byte names of random bytes (incompressible: the
 * directory table's one block is stored raw). Returns a copy of the image; *dir the offset of
 * the root's listing in it. */
static uint8_t *raw_dir_image(size_t *len, size_t *dir)
{
	struct sqk_io *mio;
	struct sqk_image *im;
	struct sqk_inode root;
	const uint8_t *data;
	uint64_t s = 12345;
	uint8_t *copy;
	uint16_t hdr;

	test_tree_new(tree, sizeof(tree), "walk");
	for (int i = 0; i < NRAND; i++) {
		char name[256];

		for (int k = 0; k < 255; k++) {
			uint8_t c = (uint8_t)(test_xorshift(&s) % 254 + 1);
			name[k] = (char)(c == '/' ? 'x' : c);
		}
		name[255] = 0;
		test_tree_put(tree, name, 0);
	}
	mio = test_build_dir(tree, false, NULL);
	data = sqk_io_mem_data(mio, len);
	copy = malloc(*len);
	ck_assert_ptr_nonnull(copy);
	memcpy(copy, data, *len);
	ck_assert_int_eq(sqk_image_open_io(mio, NULL, &im), 0);
	ck_assert_int_eq(sqk_image_root(im, &root), 0);
	hdr = get_le16(copy + sqk_image_super(im)->directory_table_start);
	ck_assert_msg(hdr & SQK_META_RAW, "the directory block is compressed: 0x%04x", hdr);
	ck_assert_uint_eq(root.dir_block, 0);
	*dir = sqk_image_super(im)->directory_table_start + 2 + root.dir_offset;
	sqk_image_close(im);
	sqk_io_destroy(mio);
	test_tree_remove(tree);
	return copy;
}

static struct sqk_image *open_bytes(const uint8_t *data, size_t len, struct sqk_io **mio)
{
	struct sqk_open_opts o = { .size = sizeof(o), .no_verify = true, .log = NULL };
	struct sqk_image *im;

	ck_assert_int_eq(sqk_io_mem_create(data, len, mio), 0);
	ck_assert_int_eq(sqk_image_open_io(*mio, &o, &im), 0);
	return im;
}

/* Counts the root's entries through the iterator; *err = the error that ended it (0 = none). */
static int list_root(struct sqk_image *im, int *err)
{
	struct sqk_dir_iter *it;
	struct sqk_inode root;
	struct sqk_dirent d;
	int n = 0, rc;

	ck_assert_int_eq(sqk_image_root(im, &root), 0);
	ck_assert_int_eq(sqk_dir_open(im, &root, &it), 0);
	while ((rc = sqk_dir_next(it, &d)) == 1)
		n++;
	*err = rc;
	ck_assert_int_eq(sqk_dir_next(it, &d), 0); /* after an error, the end */
	sqk_dir_close(it);
	return n;
}

/* Walks the root; returns the entries reported and the error steps in *errs (the last one's
 * event and path in *ev, path). */
static int walk_root(struct sqk_image *im, unsigned flags, int *errs, int *ev, char *path,
		     unsigned *flagged)
{
	struct sqk_walk_entry e;
	struct sqk_walk *w;
	int n = 0, rc, steps = 0;

	*errs = 0;
	*flagged = 0;
	ck_assert_int_eq(sqk_walk_open(im, NULL, flags, SQK_WALK_MAX_DEPTH, &w), 0);
	while ((rc = sqk_walk_next(w, &e)) != 0) {
		ck_assert_int_lt(++steps, 1000); /* no endless walk */
		if (rc < 0) {
			(*errs)++;
			*ev = e.event;
			snprintf(path, 64, "%s", e.path);
			ck_assert_int_ne(e.event, SQK_WALK_ERR_FATAL);
			continue;
		}
		n++;
		*flagged |= e.flags;
	}
	sqk_walk_close(w);
	return n;
}

/* The image as built lists and walks whole. */
START_TEST(test_raw_intact)
{
	size_t len, dir;
	uint8_t *data = raw_dir_image(&len, &dir);
	struct sqk_io *mio;
	struct sqk_image *im = open_bytes(data, len, &mio);
	int err, errs, ev;
	unsigned fl;
	char path[64];

	ck_assert_int_eq(list_root(im, &err), NRAND);
	ck_assert_int_eq(err, 0);
	ck_assert_int_eq(walk_root(im, SQK_WALK_ONCE, &errs, &ev, path, &fl), NRAND + 1);
	ck_assert_int_eq(errs, 0);
	ck_assert_uint_eq(fl, 0);
	sqk_image_close(im);
	sqk_io_destroy(mio);
	free(data);
}
END_TEST

/* A run header counting more entries than the listing holds (a listing cut short): every
 * entry there is reported, then SQK_ECORRUPT; the walk reports SQK_WALK_ERR_LIST on the root
 * and ends. A run of more than 256 entries: an error before any entry. */
START_TEST(test_raw_truncated)
{
	size_t len, dir;
	uint8_t *data = raw_dir_image(&len, &dir);
	struct sqk_io *mio;
	struct sqk_image *im;
	int err, errs, ev;
	unsigned fl;
	char path[64] = "x";

	ck_assert_uint_eq(get_le32(data + dir), NRAND - 1); /* one run of NRAND */
	put_le32(data + dir, NRAND + 4);
	im = open_bytes(data, len, &mio);
	ck_assert_int_eq(list_root(im, &err), NRAND);
	ck_assert_int_eq(err, SQK_ECORRUPT);
	ck_assert_int_eq(walk_root(im, 0, &errs, &ev, path, &fl), NRAND + 1);
	ck_assert_int_eq(errs, 1);
	ck_assert_int_eq(ev, SQK_WALK_ERR_LIST);
	ck_assert_str_eq(path, "");
	sqk_image_close(im);
	sqk_io_destroy(mio);

	put_le32(data + dir, 300);
	im = open_bytes(data, len, &mio);
	ck_assert_int_eq(list_root(im, &err), 0);
	ck_assert_int_eq(err, SQK_ECORRUPT);
	ck_assert_int_eq(walk_root(im, SQK_WALK_LEAVE, &errs, &ev, path, &fl), 2); /* root, POST */
	ck_assert_int_eq(errs, 1);
	ck_assert_int_eq(ev, SQK_WALK_ERR_LIST);
	sqk_image_close(im);
	sqk_io_destroy(mio);
	free(data);
}
END_TEST

/* The first entry made to name the root itself, as a directory (a crafted loop): reported with
 * SQK_WALK_LOOP (and SQK_WALK_SEEN under SQK_WALK_ONCE), never entered: the walk ends. */
START_TEST(test_raw_loop)
{
	size_t len, dir;
	uint8_t *data = raw_dir_image(&len, &dir);
	struct sqk_io *mio;
	struct sqk_image *im;
	struct sqk_inode root;
	uint32_t first_ino;
	int errs, ev;
	unsigned fl;
	char path[64];

	im = open_bytes(data, len, &mio);
	ck_assert_int_eq(sqk_image_root(im, &root), 0);
	sqk_image_close(im);
	sqk_io_destroy(mio);
	ck_assert_uint_eq(get_le32(data + dir + 4), root.ref >> 16); /* the run's block */
	first_ino = get_le32(data + dir + 8);
	put_le16(data + dir + 12, (uint16_t)(root.ref & 0xffff));
	put_le16(data + dir + 14, (uint16_t)(int16_t)(root.ino - first_ino));
	put_le16(data + dir + 16, SQK_T_DIR);
	im = open_bytes(data, len, &mio);
	ck_assert_int_eq(walk_root(im, 0, &errs, &ev, path, &fl), NRAND + 1);
	ck_assert_int_eq(errs, 0);
	ck_assert_uint_eq(fl, SQK_WALK_LOOP);
	ck_assert_int_eq(walk_root(im, SQK_WALK_ONCE | SQK_WALK_LEAVE, &errs, &ev, path, &fl),
			 NRAND + 3); /* the loop's POST at once, the root's */
	ck_assert_uint_eq(fl, SQK_WALK_LOOP | SQK_WALK_SEEN);
	sqk_image_close(im);
	sqk_io_destroy(mio);
	free(data);
}
END_TEST

/* The run's inode block moved far past the inode table: no entry's inode decodes. Each is
 * SQK_WALK_ERR_INODE, naming its path and what the listing says, and the walk goes on to the
 * next; the listing itself is fine. */
START_TEST(test_raw_bad_inodes)
{
	size_t len, dir;
	uint8_t *data = raw_dir_image(&len, &dir);
	struct sqk_walk_entry e;
	struct sqk_io *mio;
	struct sqk_image *im;
	struct sqk_walk *w;
	int rc, errs = 0, ok = 0;
	char last[256] = "";

	put_le32(data + dir + 4, 0x7fff0000u);
	im = open_bytes(data, len, &mio);
	ck_assert_int_eq(list_root(im, &rc), NRAND);
	ck_assert_int_eq(rc, 0);
	ck_assert_int_eq(sqk_walk_open(im, NULL, 0, SQK_WALK_MAX_DEPTH, &w), 0);
	while ((rc = sqk_walk_next(w, &e)) != 0) {
		if (rc == 1) {
			ok++;
			continue;
		}
		errs++;
		ck_assert_int_eq(e.event, SQK_WALK_ERR_INODE);
		ck_assert_uint_eq(e.depth, 1);
		ck_assert_uint_eq(e.path_len, 255);
		ck_assert_uint_eq(e.dirent.name_len, 255);
		ck_assert_int_eq(memcmp(e.dirent.name, e.path, 255), 0);
		ck_assert_uint_eq(e.dirent.ref >> 16, 0x7fff0000u);
		ck_assert_ptr_nonnull(e.parent);
		ck_assert_int_gt(strcmp(e.path, last), 0); /* in order, each once */
		memcpy(last, e.path, 256);
	}
	ck_assert_int_eq(ok, 1); /* the root */
	ck_assert_int_eq(errs, NRAND);
	sqk_walk_close(w);
	sqk_image_close(im);
	sqk_io_destroy(mio);
	free(data);
}
END_TEST

static Suite *walk_suite(void)
{
	Suite *s = suite_create("walk");
	TCase *t = tcase_create("built");
	TCase *r = tcase_create("raw");

	tcase_add_checked_fixture(t, setup, teardown);
	tcase_add_test(t, test_order);
	tcase_add_test(t, test_start_and_parent);
	tcase_add_test(t, test_skip);
	tcase_add_test(t, test_once);
	tcase_add_test(t, test_depth_bound);
	tcase_add_test(t, test_dir_iter);
	tcase_add_test(r, test_raw_intact);
	tcase_add_test(r, test_raw_truncated);
	tcase_add_test(r, test_raw_loop);
	tcase_add_test(r, test_raw_bad_inodes);
	suite_add_tcase(s, t);
	suite_add_tcase(s, r);
	return s;
}

int main(void)
{
	return test_run_suite(walk_suite());
}
