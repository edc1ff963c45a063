/* SPDX-License-Identifier: BSD-2-Clause */
/* Check suite for append (mkimage/append.c) through the builder library: an image built from a
 * synthetic source is written to a file, then a second source is appended to it
 * (opts.append) into memory, read back through libsqk. Checks that the old files keep their
 * block positions (the old data copied at the same offsets) and contents, that a clashing
 * root-level name becomes name_1 (and name_2 when name_1 is taken), that a new file equal to an
 * old one shares its blocks (dedup across old and new), hard links and xattrs of the old tree,
 * root_becomes, the kept/added counts, a clean sqk_check, and the refusals (root_becomes
 * without append or with a '/', a missing old image) with their messages; the old image's
 * prefetch hint carried (its old-data ranges kept, the new tables named), none made for an
 * image without one, a corrupt one dropped. */
#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sqk/error.h"
#include "sqk/io.h"
#include "sqk/sqk.h"
#include "sqk/sqk_check.h"
#include "common/format.h"
#include "mkimage/build.h"
#include "mkimage/mk.h"
#include "mkimage/source.h"
#include "testutil.h"

#define BS 4096u

struct spec {
	const char *path;
	mode_t mode;
	uint64_t size;
	uint32_t seed;
	uint64_t id;           /* non-zero: a hard-link group */
	const char *xname, *xval;
};

struct synth {
	struct mk_source base;
	const struct spec *v;
	size_t n, next;
	struct mk_xattr_kv kv;
};

static uint8_t byte_of(uint32_t seed, uint64_t i)
{
	return (uint8_t)('a' + (seed * 7 + i / 13 + i % 5) % 26);
}

static int synth_next(struct mk_source *s, struct mk_ctx *c, struct mk_entry *e)
{
	struct synth *y = (struct synth *)s;
	(void)c;
	if (y->next == y->n)
		return 1;
	const struct spec *p = &y->v[y->next++];
	memset(e, 0, sizeof(*e));
	e->path = p->path;
	e->origin = p->path;
	e->mode = p->mode;
	e->mtime = 1000000;
	e->size = p->size;
	e->has_id = p->id != 0;
	e->id_dev = 1;
	e->id_ino = p->id;
	if (p->xname) {
		y->kv = (struct mk_xattr_kv){ .name = p->xname, .value = p->xval,
					      .size = strlen(p->xval) };
		e->xattrs = &y->kv;
		e->nxattrs = 1;
	}
	return 0;
}

static int synth_read(struct mk_source *s, struct mk_ctx *c, uint64_t off, void *buf, size_t len)
{
	struct synth *y = (struct synth *)s;
	(void)c;
	for (size_t i = 0; i < len; i++)
		((uint8_t *)buf)[i] = byte_of(y->v[y->next - 1].seed, off + i);
	return 0;
}

static void synth_destroy(struct mk_source *s)
{
	(void)s;
}

static const struct mk_source_ops synth_ops = {
	.next = synth_next, .read = synth_read, .destroy = synth_destroy,
};

#define F(p, size, seed) { p, S_IFREG | 0644, size, seed, 0, NULL, NULL }
#define D(p) { p, S_IFDIR | 0755, 0, 0, 0, NULL, NULL }

static const struct spec old_tree[] = {
	D(""),
	F("big", 3 * BS + 100, 1),
	F("small", 300, 2),
	D("d"),
	{ "d/x", S_IFREG | 0600, 5000, 3, 0, "user.k", "v1" },
	{ "hl1", S_IFREG | 0644, 700, 4, 9, NULL, NULL },
	{ "hl2", S_IFREG | 0644, 700, 4, 9, NULL, NULL },
	F("big_1", 10, 5),
};

static const struct spec new_tree[] = {
	D(""),
	F("big", 2 * BS, 6),     /* clashes: big_1 is taken too, so big_2 */
	D("d"),                  /* a clashing directory: d_1 */
	F("d/y", 20, 7),
	F("copy", 5000, 3),      /* the content of old d/x: a duplicate */
};

/* Builds v into *io (memory) with 4K blocks; append (NULL: none) and root_becomes. */
static int build(const struct spec *v, size_t n, const char *append, const char *rb,
		 struct sqk_io **io, struct sqk_build_result *r)
{
	struct sqk_build_opts o;
	struct sqk_build_source s;
	struct synth y = { .base.ops = &synth_ops, .v = v, .n = n };

	sqk_build_opts_init(&o);
	o.quiet = true;
	o.block_size = BS;
	o.image = "/nonexistent/img";
	o.append = append;
	o.root_becomes = rb;
	sqk_build_source_init(&s, SQK_BUILD_CUSTOM);
	s.custom = &y.base;
	sqk_build_result_init(r);
	ck_assert_int_eq(sqk_io_mem_create(NULL, 0, io), 0);
	return sqk_build(&o, &s, *io, r);
}

/* The old image, built and written to a file (path[cap]). */
static void old_image(char *path, size_t cap)
{
	struct sqk_io *io;
	struct sqk_build_result r;
	size_t len;

	ck_assert_int_eq(build(old_tree, sizeof(old_tree) / sizeof(old_tree[0]), NULL, NULL,
			       &io, &r), 0);
	const uint8_t *b = sqk_io_mem_data(io, &len);
	snprintf(path, cap, "/tmp/sqk-test-append.XXXXXX");
	int fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, b, len), (ssize_t)len);
	close(fd);
	sqk_io_destroy(io);
}

static void check_content(struct sqk_image *img, const char *path, uint64_t size,
			  uint32_t seed)
{
	struct sqk_inode ino;
	uint8_t *buf = malloc(size + 1);

	ck_assert_msg(!sqk_lookup_path(img, path, &ino), "%s missing", path);
	ck_assert_uint_eq(ino.size, size);
	ck_assert_int_eq(sqk_read(img, &ino, buf, size, 0), (ssize_t)size);
	for (uint64_t i = 0; i < size; i++)
		ck_assert_msg(buf[i] == byte_of(seed, i), "%s: byte %llu", path,
			      (unsigned long long)i);
	free(buf);
}

static struct sqk_inode inode_at(struct sqk_image *img, const char *path)
{
	struct sqk_inode ino;
	ck_assert_msg(!sqk_lookup_path(img, path, &ino), "%s missing", path);
	return ino;
}

START_TEST(test_append_tree)
{
	char path[64];
	struct sqk_io *io;
	struct sqk_build_result r;
	struct sqk_image *old, *img;

	old_image(path, sizeof(path));
	ck_assert_int_eq(sqk_image_open(path, NULL, &old), 0);
	ck_assert_int_eq(build(new_tree, sizeof(new_tree) / sizeof(new_tree[0]), path, NULL, &io,
			       &r), 0);
	ck_assert(r.appended);
	ck_assert_uint_eq(r.append_kept, 7);
	ck_assert_uint_eq(r.append_added, 4);
	ck_assert_uint_eq(r.counts.dup_files, 1);
	ck_assert_int_eq(sqk_image_open_io(io, NULL, &img), 0);
	/* the old files: same blocks at the same place, same content */
	ck_assert_uint_eq(inode_at(img, "big").blocks_start, inode_at(old, "big").blocks_start);
	check_content(img, "big", 3 * BS + 100, 1);
	check_content(img, "small", 300, 2);
	check_content(img, "d/x", 5000, 3);
	check_content(img, "big_1", 10, 5);
	/* the new ones, renamed where they clash */
	check_content(img, "big_2", 2 * BS, 6);
	check_content(img, "d_1/y", 20, 7);
	check_content(img, "copy", 5000, 3);
	/* the copy shares old d/x's data */
	ck_assert_uint_eq(inode_at(img, "copy").frag_index, inode_at(img, "d/x").frag_index);
	ck_assert_uint_eq(inode_at(img, "copy").blocks_start, inode_at(img, "d/x").blocks_start);
	/* hard links, xattrs and modes of the old tree */
	ck_assert_uint_eq(inode_at(img, "hl1").ino, inode_at(img, "hl2").ino);
	ck_assert_uint_eq(inode_at(img, "hl1").nlink, 2);
	struct sqk_inode x = inode_at(img, "d/x");
	char val[16];
	size_t vl = 0;
	ck_assert_int_eq(sqk_xattr_get(img, &x, "user.k", val, sizeof(val), &vl), 0);
	ck_assert(vl == 2 && !memcmp(val, "v1", 2));
	ck_assert_uint_eq(x.mode & 07777, 0600);
	struct sqk_check_result res = { .size = sizeof(res) };
	size_t len;
	sqk_io_mem_data(io, &len);
	ck_assert_int_eq(sqk_check_image(io, len, NULL, &res), 0);
	ck_assert_uint_eq(res.errors, 0);
	ck_assert(res.has_integrity);
	sqk_image_close(img);
	sqk_image_close(old);
	sqk_io_destroy(io);
	unlink(path);
}
END_TEST

START_TEST(test_root_becomes)
{
	char path[64];
	struct sqk_io *io;
	struct sqk_build_result r;
	struct sqk_image *img;

	old_image(path, sizeof(path));
	ck_assert_int_eq(build(new_tree, sizeof(new_tree) / sizeof(new_tree[0]), path, "v1", &io,
			       &r), 0);
	ck_assert_uint_eq(r.append_kept, 8); /* the old root is an entry now */
	ck_assert_int_eq(sqk_image_open_io(io, NULL, &img), 0);
	check_content(img, "v1/big", 3 * BS + 100, 1);
	check_content(img, "v1/d/x", 5000, 3);
	check_content(img, "big", 2 * BS, 6); /* nothing clashes at the new root */
	check_content(img, "d/y", 20, 7);
	sqk_image_close(img);
	sqk_io_destroy(io);
	unlink(path);
}
END_TEST

START_TEST(test_refusals)
{
	char path[64];
	struct sqk_io *io;
	struct sqk_build_result r;
	size_t n = sizeof(new_tree) / sizeof(new_tree[0]);

	ck_assert_int_eq(build(new_tree, n, NULL, "v1", &io, &r), SQK_EINVAL);
	ck_assert_ptr_nonnull(strstr(r.msg, "-root-becomes needs an image to append to"));
	sqk_io_destroy(io);
	old_image(path, sizeof(path));
	ck_assert_int_eq(build(new_tree, n, path, "a/b", &io, &r), SQK_EINVAL);
	ck_assert_ptr_nonnull(strstr(r.msg, "-root-becomes 'a/b'"));
	sqk_io_destroy(io);
	unlink(path);
	ck_assert_int_ne(build(new_tree, n, path, NULL, &io, &r), 0);
	ck_assert_msg(strstr(r.msg, "cannot append to") && strstr(r.msg, path), "%s", r.msg);
	sqk_io_destroy(io);
}
END_TEST

/* An old image built from a directory with --order (a prefetch hint: the ordered file's
 * blocks from 0, then its tables), written to path[cap] (the directory and order file removed).
 * Its hint in h[0..*nh). */
static void hinted_image(char *path, size_t cap, struct sqk_hint_range *h, size_t *nh)
{
	char dir[] = "/tmp/sqk-test-append-dir.XXXXXX", f[128], order[128], cmd[300];
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(f, sizeof(f), "%s/first", dir);
	FILE *fp = fopen(f, "w");
	for (uint64_t i = 0; i < 3 * BS + 7; i++)
		fputc(byte_of(11, i), fp);
	fclose(fp);
	snprintf(f, sizeof(f), "%s/second", dir);
	fp = fopen(f, "w");
	fputs("second", fp);
	fclose(fp);
	snprintf(order, sizeof(order), "%s.order", dir);
	fp = fopen(order, "w");
	fputs("first\n", fp);
	fclose(fp);
	char *sources[1] = { dir };
	struct sqk_build_opts o;
	struct sqk_build_source s;
	struct sqk_build_result r;
	struct sqk_io *io;
	sqk_build_opts_init(&o);
	o.quiet = true;
	o.block_size = BS;
	o.order_file = order;
	o.checksum_chunk = 4096; /* the hint block a chunk of its own */
	sqk_build_source_init(&s, SQK_BUILD_DIRS);
	s.sources = sources;
	s.nsources = 1;
	sqk_build_result_init(&r);
	ck_assert_int_eq(sqk_io_mem_create(NULL, 0, &io), 0);
	ck_assert_msg(sqk_build(&o, &s, io, &r) == 0, "%s", r.msg);
	size_t len;
	const uint8_t *b = sqk_io_mem_data(io, &len);
	snprintf(path, cap, "/tmp/sqk-test-append.XXXXXX");
	int fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, b, len), (ssize_t)len);
	close(fd);
	sqk_io_destroy(io);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s' '%s'", dir, order);
	ck_assert_int_eq(system(cmd), 0);
	struct sqk_image *img;
	ck_assert_int_eq(sqk_image_open(path, NULL, &img), 0);
	ck_assert_int_eq(sqk_image_hint(img, h, 8, nh), 0);
	sqk_image_close(img);
}

/* The old image's prefetch hint is carried: its range over the old data (same offsets) kept,
 * its range over the old tables replaced by the new tables'; the result passes sqk_check. */
START_TEST(test_hint_carried)
{
	char path[64];
	struct sqk_hint_range oh[8], nh[8];
	size_t on, nn;
	struct sqk_io *io;
	struct sqk_build_result r;
	struct sqk_image *img;

	hinted_image(path, sizeof(path), oh, &on);
	ck_assert_uint_eq(on, 2);
	ck_assert_uint_eq(oh[0].start, 0);
	ck_assert_uint_gt(oh[0].length, SQK_SUPER_SIZE); /* and the ordered file's blocks */
	ck_assert_int_eq(build(new_tree, sizeof(new_tree) / sizeof(new_tree[0]), path, NULL, &io,
			       &r), 0);
	ck_assert_uint_eq(r.hint_ranges, 2);
	ck_assert_int_eq(sqk_image_open_io(io, NULL, &img), 0);
	ck_assert_int_eq(sqk_image_hint(img, nh, 8, &nn), 0);
	const struct sqk_super *sb = sqk_image_super(img);
	ck_assert_uint_eq(nn, 2);
	ck_assert_uint_eq(nh[0].start, oh[0].start);
	ck_assert_uint_eq(nh[0].length, oh[0].length);
	ck_assert_uint_eq(nh[1].start, sb->inode_table_start);
	ck_assert_uint_eq(nh[1].length, sb->bytes_used - sb->inode_table_start);
	ck_assert_uint_gt(nh[1].start, oh[1].start); /* new data came between */
	check_content(img, "first", 3 * BS + 7, 11);
	struct sqk_check_result res = { .size = sizeof(res) };
	size_t len;
	sqk_io_mem_data(io, &len);
	ck_assert_int_eq(sqk_check_image(io, len, NULL, &res), 0);
	ck_assert_uint_eq(res.errors, 0);
	sqk_image_close(img);
	sqk_io_destroy(io);
	unlink(path);
}
END_TEST

/* An image without a hint gets none by an append; a corrupt old hint (one byte of its first
 * range changed: the digests no longer match) is dropped, never trusted: the append goes on. */
START_TEST(test_hint_none_or_corrupt)
{
	char path[64];
	struct sqk_hint_range h[8];
	size_t n;
	struct sqk_io *io;
	struct sqk_build_result r;
	struct sqk_image *img;
	size_t nt = sizeof(new_tree) / sizeof(new_tree[0]);

	old_image(path, sizeof(path));
	ck_assert_int_eq(build(new_tree, nt, path, NULL, &io, &r), 0);
	ck_assert_uint_eq(r.hint_ranges, 0);
	ck_assert_int_eq(sqk_image_open_io(io, NULL, &img), 0);
	ck_assert_int_eq(sqk_image_hint(img, h, 8, &n), SQK_ENOENT);
	sqk_image_close(img);
	sqk_io_destroy(io);
	unlink(path);

	hinted_image(path, sizeof(path), h, &n);
	ck_assert_int_eq(sqk_image_open(path, NULL, &img), 0);
	uint64_t used = sqk_image_super(img)->bytes_used;
	sqk_image_close(img);
	int fd = open(path, O_RDWR);
	uint8_t b = 0x40; /* the first range's start, at the hint block's first byte: now 64 */
	ck_assert_int_eq(pwrite(fd, &b, 1, (off_t)((used + 4095) / 4096 * 4096)), 1);
	close(fd);
	ck_assert_msg(build(new_tree, nt, path, NULL, &io, &r) == 0, "%s", r.msg);
	ck_assert_uint_eq(r.hint_ranges, 0);
	ck_assert_int_eq(sqk_image_open_io(io, NULL, &img), 0);
	ck_assert_int_eq(sqk_image_hint(img, h, 8, &n), SQK_ENOENT);
	check_content(img, "first", 3 * BS + 7, 11);
	sqk_image_close(img);
	sqk_io_destroy(io);
	unlink(path);
}
END_TEST

static Suite *append_suite(void)
{
	Suite *s = suite_create("append");
	TCase *tc = tcase_create("append");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_append_tree);
	tcase_add_test(tc, test_root_becomes);
	tcase_add_test(tc, test_refusals);
	tcase_add_test(tc, test_hint_carried);
	tcase_add_test(tc, test_hint_none_or_corrupt);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return test_run_suite(append_suite());
}
