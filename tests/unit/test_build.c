/* SPDX-License-Identifier: BSD-2-Clause */
/* Check suite for the builder as a library: sqk_build() over a synthetic source (entries and
 * content made up in memory, no filesystem tree, no root) into a memory I/O object, read back
 * through libsqk. Covers implied and re-listed directories, owners and devices without root,
 * hard links by path, a replaced entry, xattrs, duplicates found in the single read pass (every
 * byte of every file read exactly once, in order), write and sync faults on the output, and a
 * source failing mid-file. An ordered source (as the directory walker) gives the tree held on
 * disk (walk.c): the same image byte for byte as the tree in memory, with every store spilled
 * to its temporary file (--mem 1M) and the fragments packed in small batches. The depth policy
 * (common/depth.h): a tree exactly SQK_DEPTH_MAX deep builds both ways and checks clean, one
 * level more is refused naming the entry. A name of a hard-link group listed again replaces
 * that name only; mtimes outside 32 bits are clamped. An unordered source's entries are records
 * of the external sort (runs.c): a 4 KiB budget (runs merged from the temporary file) gives the
 * same bytes as one run in memory. */
#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/depth.h"
#include "sqk/error.h"
#include "common/format.h"
#include "sqk/io.h"
#include "mkimage/mk.h"
#include "mkimage/source.h"
#include "mkimage/build.h"
#include "sqk/sqk.h"
#include "sqk/sqk_check.h"
#include "testutil.h"

#define BS 4096u

/* One entry of the synthetic source; content byte i of a file is a function of (seed, i). */
struct spec {
	const char *path;
	mode_t mode;
	uint64_t size;
	uint32_t seed;
	const char *target;  /* symlinks */
	const char *link;    /* hard links */
	uint32_t uid, gid, maj, min;
	const char *xname, *xval;
	uint64_t id;         /* non-zero: (dev 1, ino id) identifies the file (hard links) */
	bool has_mtime;      /* mtime below, else one made up */
	int64_t mtime;
};

struct synth {
	struct mk_source base;
	const struct spec *v;
	size_t n, next;
	uint64_t *read_bytes;    /* per entry: bytes handed to the builder */
	uint64_t *read_end;      /* per entry: end of the last read (offsets must grow) */
	bool backwards;          /* a read went back */
	size_t fail_at;          /* entry whose read fails (SIZE_MAX: none) */
	struct mk_xattr_kv kv;
};

static uint8_t content_byte(uint32_t seed, uint64_t i)
{
	uint64_t x = (i / 64) * 0x9E3779B97F4A7C15ull + seed * 0xC2B2AE3D27D4EB4Full;
	x ^= x >> 29;
	/* compressible but not trivially: text-like bytes that change every 64 */
	return (uint8_t)('a' + (x + i % 7) % 26);
}

static int synth_next(struct mk_source *s, struct mk_ctx *c, struct mk_entry *e)
{
	struct synth *y = (struct synth *)s;
	if (y->next == y->n)
		return 1;
	const struct spec *p = &y->v[y->next++];
	memset(e, 0, sizeof(*e));
	e->path = p->path;
	e->origin = p->path;
	e->mode = p->mode;
	e->uid = p->uid;
	e->gid = p->gid;
	e->mtime = p->has_mtime ? p->mtime : 1000000 + (int64_t)y->next;
	e->size = p->size;
	e->target = p->target;
	e->link = p->link;
	e->dev_major = p->maj;
	e->dev_minor = p->min;
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
	size_t k = y->next - 1;
	const struct spec *p = &y->v[k];
	if (k == y->fail_at && off > 0)
		return mk_fail(c, SQK_EIO, "cannot read '%s' at offset %llu: injected", p->path,
			       (unsigned long long)off);
	if (off < y->read_end[k])
		y->backwards = true;
	ck_assert_uint_le(off + len, p->size);
	uint8_t *b = buf;
	for (size_t i = 0; i < len; i++)
		b[i] = content_byte(p->seed, off + i);
	y->read_bytes[k] += len;
	y->read_end[k] = off + len;
	return 0;
}

static void synth_destroy(struct mk_source *s)
{
	struct synth *y = (struct synth *)s;
	free(y->read_bytes);
	free(y->read_end);
}

static const struct mk_source_ops synth_ops = {
	.next = synth_next, .read = synth_read, .destroy = synth_destroy,
};

/* The same source promising the walker's order (depth first, names sorted): the tree on disk. */
static const struct mk_source_ops synth_ordered_ops = {
	.ordered = true, .next = synth_next, .read = synth_read, .destroy = synth_destroy,
};

static void synth_init(struct synth *y, const struct spec *v, size_t n)
{
	memset(y, 0, sizeof(*y));
	y->base.ops = &synth_ops;
	y->v = v;
	y->n = n;
	y->fail_at = SIZE_MAX;
	y->read_bytes = calloc(n, sizeof(*y->read_bytes));
	y->read_end = calloc(n, sizeof(*y->read_end));
}

static uint32_t piece_batch; /* options.piece_batch for the next builds (0: default) */

/* Frees what synth_init allocated. */
static void synth_free(struct synth *y)
{
	y->base.ops->destroy(&y->base);
}

/* Changes the options of one build beyond the ones every build here has. */
typedef void (*opts_tweak)(struct sqk_build_opts *o);

static void tweak_nodedup(struct sqk_build_opts *o)
{
	o->no_dedup = true;
}

static void tweak_mem1m(struct sqk_build_opts *o)
{
	o->mem = 1u << 20;
}

/* Builds y through sqk_build into *mem (created here) or fault_over, with 4K blocks and
 * tweak's changes (NULL: none); returns the error, message in msg, counts in *st. */
static int build(struct synth *y, opts_tweak tweak, struct sqk_io **mem,
		 struct sqk_io *fault_over, struct sqk_build_counts *st, char *msg)
{
	struct sqk_build_opts o;
	struct sqk_build_source s;
	struct sqk_build_result r;
	sqk_build_opts_init(&o);
	o.quiet = true;
	o.block_size = BS;
	o.image = "/nonexistent/img";
	o.piece_batch = piece_batch;
	if (tweak)
		tweak(&o);
	sqk_build_source_init(&s, SQK_BUILD_CUSTOM);
	s.custom = &y->base;
	sqk_build_result_init(&r);
	if (!fault_over)
		ck_assert_int_eq(sqk_io_mem_create(NULL, 0, mem), 0);
	int err = sqk_build(&o, &s, fault_over ? fault_over : *mem, &r);
	ck_assert_int_eq(r.err, err);
	ck_assert(err || !*r.msg);
	if (msg)
		snprintf(msg, 1024, "%s", r.msg);
	if (st)
		*st = r.counts;
	return err;
}

static struct sqk_image *open_mem(struct sqk_io *mem)
{
	struct sqk_image *img;
	ck_assert_int_eq(sqk_image_open_io(mem, NULL, &img), 0);
	return img;
}

static void assert_content(struct sqk_image *img, const char *path, uint64_t size, uint32_t seed)
{
	struct sqk_inode ino;
	ck_assert_msg(sqk_lookup_path(img, path, &ino) == 0, "%s missing", path);
	ck_assert_uint_eq(ino.size, size);
	uint8_t *buf = malloc(size + 1);
	ck_assert_int_eq(sqk_read(img, &ino, buf, size + 1, 0), (ssize_t)size);
	for (uint64_t i = 0; i < size; i++)
		if (buf[i] != content_byte(seed, i))
			ck_abort_msg("%s: byte %llu differs", path, (unsigned long long)i);
	free(buf);
}

#define REG (S_IFREG | 0644)
#define DIR_ (S_IFDIR | 0755)

/* A tree an archive could give: parents implied, a directory listed after its children, owners
 * that need root to create, devices, a hard link by path, a replaced file, and duplicates. */
static const struct spec tree_spec[] = {
	{ .path = "", .mode = S_IFDIR | 0711, .uid = 7, .gid = 8 },
	{ .path = "a/b/deep.txt", .mode = REG, .size = 100, .seed = 1, .uid = 1234, .gid = 99 },
	{ .path = "a", .mode = S_IFDIR | 0700, .uid = 5, .gid = 6 },
	{ .path = "big1", .mode = REG, .size = 3 * BS + 100, .seed = 2 },
	{ .path = "big2", .mode = REG, .size = 3 * BS + 100, .seed = 2 },        /* dup of big1 */
	{ .path = "big3", .mode = REG, .size = 3 * BS + 100, .seed = 3 }, /* same size, new */
	{ .path = "small1", .mode = REG, .size = 50, .seed = 4 },
	{ .path = "small2", .mode = REG, .size = 50, .seed = 4 },                /* dup of small1 */
	{ .path = "exact", .mode = REG, .size = 2 * BS, .seed = 5 },
	{ .path = "empty", .mode = REG, .size = 0 },
	{ .path = "hard", .mode = REG, .link = "small1" },
	{ .path = "dev/null", .mode = S_IFCHR | 0666, .maj = 1, .min = 3 },
	{ .path = "dev/sda", .mode = S_IFBLK | 0660, .maj = 8, .min = 0, .gid = 6 },
	{ .path = "fifo", .mode = S_IFIFO | 0600 },
	{ .path = "ln", .mode = S_IFLNK | 0777, .target = "big1" },
	{ .path = "x", .mode = REG, .size = 10, .seed = 6, .xname = "user.k", .xval = "v1" },
	{ .path = "replaced", .mode = REG, .size = 5000, .seed = 7 },
	{ .path = "replaced", .mode = REG, .size = 6000, .seed = 8 },
};
#define NSPEC (sizeof(tree_spec) / sizeof(tree_spec[0]))

START_TEST(test_synthetic_tree)
{
	struct synth y;
	struct sqk_io *mem;
	struct sqk_build_counts st;
	char msg[1024];
	synth_init(&y, tree_spec, NSPEC);
	int err = build(&y, NULL, &mem, NULL, &st, msg);
	ck_assert_msg(err == 0, "%s", msg);
	struct sqk_image *img = open_mem(mem);
	struct sqk_inode ino, ino2;

	ck_assert_int_eq(sqk_image_root(img, &ino), 0);
	ck_assert_uint_eq(ino.mode, S_IFDIR | 0711);
	ck_assert_uint_eq(ino.uid, 7);
	ck_assert_int_eq(sqk_lookup_path(img, "a", &ino), 0);          /* listed after its child */
	ck_assert_uint_eq(ino.mode, S_IFDIR | 0700);
	ck_assert_uint_eq(ino.uid, 5);
	ck_assert_int_eq(sqk_lookup_path(img, "a/b", &ino), 0);        /* never listed */
	ck_assert_uint_eq(ino.mode, S_IFDIR | 0755);
	ck_assert_uint_eq(ino.uid, 0);
	ck_assert_int_eq(ino.mtime, 0);
	assert_content(img, "a/b/deep.txt", 100, 1);
	ck_assert_int_eq(sqk_lookup_path(img, "a/b/deep.txt", &ino), 0);
	ck_assert_uint_eq(ino.uid, 1234);
	ck_assert_uint_eq(ino.gid, 99);
	assert_content(img, "big1", 3 * BS + 100, 2);
	assert_content(img, "big2", 3 * BS + 100, 2);
	assert_content(img, "big3", 3 * BS + 100, 3);
	assert_content(img, "small2", 50, 4);
	assert_content(img, "exact", 2 * BS, 5);
	assert_content(img, "empty", 0, 0);
	assert_content(img, "replaced", 6000, 8);
	ck_assert_int_eq(sqk_lookup_path(img, "big1", &ino), 0);
	ck_assert_int_eq(sqk_lookup_path(img, "big2", &ino2), 0);
	ck_assert_uint_eq(ino.blocks_start, ino2.blocks_start);          /* one copy */
	ck_assert_int_eq(sqk_lookup_path(img, "big3", &ino2), 0);
	ck_assert_uint_ne(ino.blocks_start, ino2.blocks_start);
	ck_assert_int_eq(sqk_lookup_path(img, "small1", &ino), 0);
	ck_assert_int_eq(sqk_lookup_path(img, "small2", &ino2), 0);
	ck_assert_uint_eq(ino.frag_index, ino2.frag_index);
	ck_assert_uint_eq(ino.frag_offset, ino2.frag_offset);
	ck_assert_int_eq(sqk_lookup_path(img, "hard", &ino2), 0);
	ck_assert_uint_eq(ino.ino, ino2.ino);
	ck_assert_uint_eq(ino.nlink, 2);
	ck_assert_int_eq(sqk_lookup_path(img, "dev/null", &ino), 0);
	ck_assert_uint_eq(ino.mode, S_IFCHR | 0666);
	ck_assert_uint_eq(ino.rdev, sqk_rdev_encode(1, 3));
	ck_assert_int_eq(sqk_lookup_path(img, "dev/sda", &ino), 0);
	ck_assert_uint_eq(ino.mode, S_IFBLK | 0660);
	ck_assert_int_eq(sqk_lookup_path(img, "fifo", &ino), 0);
	ck_assert_uint_eq(ino.mode, S_IFIFO | 0600);
	char tgt[64];
	size_t tl;
	ck_assert_int_eq(sqk_lookup_path(img, "ln", &ino), 0);
	ck_assert_int_eq(sqk_readlink(img, &ino, tgt, sizeof(tgt), &tl), 0);
	ck_assert_mem_eq(tgt, "big1", 4);
	ck_assert_int_eq(sqk_lookup_path(img, "x", &ino), 0);
	char val[16];
	size_t vl;
	ck_assert_int_eq(sqk_xattr_get(img, &ino, "user.k", val, sizeof(val), &vl), 0);
	ck_assert_uint_eq(vl, 2);
	ck_assert_mem_eq(val, "v1", 2);
	ck_assert_uint_eq(st.dup_files, 2);

	/* The single pass: every byte of every file read exactly once, offsets only growing. */
	ck_assert(!y.backwards);
	for (size_t i = 0; i < NSPEC; i++)
		if (S_ISREG(tree_spec[i].mode) && !tree_spec[i].link)
			ck_assert_msg(y.read_bytes[i] == tree_spec[i].size, "%s read %llu of %llu",
				      tree_spec[i].path, (unsigned long long)y.read_bytes[i],
				      (unsigned long long)tree_spec[i].size);
	sqk_image_close(img);
	sqk_io_destroy(mem);
	synth_free(&y);
}
END_TEST

/* Same content twice, dedup on and off: the duplicate costs nothing with it. */
START_TEST(test_dedup_saves)
{
	static const struct spec v[] = {
		{ .path = "", .mode = DIR_ },
		{ .path = "one", .mode = REG, .size = 40 * BS + 7, .seed = 9 },
		{ .path = "two", .mode = REG, .size = 40 * BS + 7, .seed = 9 },
	};
	struct synth y;
	struct sqk_io *m1, *m2;
	size_t l1, l2;
	synth_init(&y, v, 3);
	ck_assert_int_eq(build(&y, NULL, &m1, NULL, NULL, NULL), 0);
	ck_assert_uint_eq(y.read_bytes[2], v[2].size); /* read once even though it was held */
	synth_free(&y);
	synth_init(&y, v, 3);
	ck_assert_int_eq(build(&y, tweak_nodedup, &m2, NULL, NULL, NULL), 0);
	synth_free(&y);
	sqk_io_mem_data(m1, &l1);
	sqk_io_mem_data(m2, &l2);
	ck_assert_uint_lt(l1 + 20 * BS / 10, l2); /* the second copy's blocks are not stored */
	struct sqk_image *img = open_mem(m1);
	assert_content(img, "two", 40 * BS + 7, 9);
	sqk_image_close(img);
	sqk_io_destroy(m1);
	sqk_io_destroy(m2);
}
END_TEST

/* The output fails at each write in turn (and at the sync): always an error naming the offset,
 * never a crash or a hang. */
START_TEST(test_output_faults)
{
	struct synth y;
	struct sqk_io *mem, *fault;
	char msg[1024];
	unsigned calls;
	synth_init(&y, tree_spec, NSPEC);
	ck_assert_int_eq(sqk_io_mem_create(NULL, 0, &mem), 0);
	ck_assert_int_eq(sqk_io_fault_create(mem, &fault), 0);
	ck_assert_int_eq(build(&y, NULL, &mem, fault, NULL, msg), 0);
	calls = sqk_io_fault_calls(fault, SQK_FAULT_WRITE);
	sqk_io_destroy(fault);
	sqk_io_destroy(mem); /* the fault double borrows it */
	synth_free(&y);
	ck_assert_uint_gt(calls, 10);
	for (unsigned k = 0; k <= calls; k++) {
		enum sqk_io_fault_op op = k == calls ? SQK_FAULT_SYNC : SQK_FAULT_WRITE;
		synth_init(&y, tree_spec, NSPEC);
		ck_assert_int_eq(sqk_io_mem_create(NULL, 0, &mem), 0);
		ck_assert_int_eq(sqk_io_fault_create(mem, &fault), 0);
		sqk_io_fault_arm(fault, op, k == calls ? 0 : k, SQK_ENOSPC);
		int err = build(&y, NULL, &mem, fault, NULL, msg);
		ck_assert_msg(err == SQK_ENOSPC, "write %u: got %d (%s)", k, err, msg);
		if (op == SQK_FAULT_WRITE)
			ck_assert_msg(strstr(msg, "offset") || strstr(msg, "superblock"),
				      "write %u: '%s'", k, msg);
		sqk_io_destroy(fault);
		sqk_io_destroy(mem);
		synth_free(&y);
	}
}
END_TEST

/* A source that fails in the middle of a file: the build stops with its message. */
START_TEST(test_source_failure)
{
	struct synth y;
	struct sqk_io *mem;
	char msg[1024];
	synth_init(&y, tree_spec, NSPEC);
	y.fail_at = 5; /* big3, after its first block */
	ck_assert_int_ne(build(&y, NULL, &mem, NULL, NULL, msg), 0);
	ck_assert_msg(strstr(msg, "big3") && strstr(msg, "injected"), "%s", msg);
	sqk_io_destroy(mem);
	synth_free(&y);
}
END_TEST

/* Checks that two in-memory images hold the same bytes, naming the first that differs. */
static void assert_same_image(struct sqk_io *a, struct sqk_io *b)
{
	size_t la, lb;
	const uint8_t *da = sqk_io_mem_data(a, &la), *db = sqk_io_mem_data(b, &lb);
	ck_assert_uint_eq(la, lb);
	for (size_t i = 0; i < la; i++)
		if (da[i] != db[i])
			ck_abort_msg("images differ at byte %zu of %zu", i, la);
}

/* Bad entries are refused with the entry named. */
START_TEST(test_bad_entries)
{
	static const struct spec under_file[] = {
		{ .path = "f", .mode = REG, .size = 1, .seed = 1 },
		{ .path = "f/g", .mode = REG, .size = 1, .seed = 1 },
	};
	static const struct spec bad_link[] = {
		{ .path = "h", .mode = REG, .link = "nosuch" },
	};
	static const struct spec self_link[] = {
		{ .path = "h", .mode = REG, .link = "h" },
	};
	static const struct spec long_name[] = {
		{ .path = "d/xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
				  "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
				  "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
				  "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
				  "xxxxxx",
		  .mode = REG, .size = 1, .seed = 1 },
	};
	static const struct spec long_dir[] = {
		{ .path = "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
				  "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
				  "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
				  "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
				  "xxxxx/f",
		  .mode = REG, .size = 1, .seed = 1 },
	};
	static const struct spec big_dev[] = {
		{ .path = "d", .mode = S_IFCHR | 0600, .maj = 5000, .min = 1 },
	};
	const struct { const struct spec *v; size_t n; const char *want; } cases[] = {
		{ under_file, 2, "not a directory" },
		{ bad_link, 1, "nosuch" },
		{ big_dev, 1, "not storable" },
		{ self_link, 1, "not an earlier entry" },
		{ long_name, 1, "longer than 256" },
		{ long_dir, 1, "longer than 256" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct synth y;
		struct sqk_io *mem;
		char msg[1024];
		synth_init(&y, cases[i].v, cases[i].n);
		ck_assert_int_ne(build(&y, NULL, &mem, NULL, NULL, msg), 0);
		ck_assert_msg(strstr(msg, cases[i].want), "case %zu: '%s'", i, msg);
		sqk_io_destroy(mem);
		synth_free(&y);
	}
}
END_TEST

/* Builds v both ways, the tree in memory and the tree on disk, with extra options; asserts
 * both succeed with the same bytes; returns the image (the caller destroys it). */
static struct sqk_io *build_both(const struct spec *v, size_t n, opts_tweak extra,
				 struct sqk_build_counts *st)
{
	struct synth a, b;
	struct sqk_io *ma, *mb;
	char msg[1024];
	synth_init(&a, v, n);
	synth_init(&b, v, n);
	b.base.ops = &synth_ordered_ops;
	int err = build(&a, extra, &ma, NULL, NULL, msg);
	ck_assert_msg(err == 0, "tree in memory: %s", msg);
	err = build(&b, extra, &mb, NULL, st, msg);
	ck_assert_msg(err == 0, "tree on disk: %s", msg);
	assert_same_image(ma, mb);
	/* every byte of every file read once, in order, by the walk too */
	ck_assert(!b.backwards);
	for (size_t i = 0; i < n; i++)
		ck_assert_uint_eq(b.read_bytes[i], a.read_bytes[i]);
	synth_free(&a);
	synth_free(&b);
	sqk_io_destroy(ma);
	return mb;
}

static void assert_checks(struct sqk_io *mem)
{
	size_t len;
	struct sqk_check_result r = { .size = sizeof(r) };
	sqk_io_mem_data(mem, &len);
	ck_assert_int_eq(sqk_check_image(mem, len, NULL, &r), 0);
	ck_assert_uint_eq(r.errors, 0);
}

/* A walked tree in the walker's order: directories left and entered again between a
 * directory's entries, files with several names (regular and symlink) across directories, a
 * __pycache__ directory, duplicates, devices, xattrs, an empty directory. */
static const struct spec walk_spec[] = {
	{ .path = "", .mode = S_IFDIR | 0711, .uid = 7, .gid = 8 },
	{ .path = "a", .mode = DIR_, .uid = 5 },
	{ .path = "a/__pycache__", .mode = DIR_ },
	{ .path = "a/__pycache__/m.cpython-311.pyc", .mode = REG, .size = 300, .seed = 11 },
	{ .path = "a/b", .mode = DIR_ },
	{ .path = "a/b/x", .mode = REG, .size = 70, .seed = 12 },
	{ .path = "a/b/y", .mode = REG, .size = 2 * BS + 9, .seed = 13, .id = 40 },
	{ .path = "a/c.py", .mode = REG, .size = 120, .seed = 14 },
	{ .path = "a/m.py", .mode = REG, .size = 280, .seed = 15 },
	{ .path = "a/z", .mode = REG, .size = 33, .seed = 16, .id = 5 },
	{ .path = "b", .mode = DIR_ },
	{ .path = "b/dev", .mode = S_IFCHR | 0600, .maj = 4, .min = 1 },
	{ .path = "b/dup", .mode = REG, .size = 70, .seed = 12 },
	{ .path = "b/e", .mode = DIR_ },
	{ .path = "b/hl", .mode = REG, .size = 33, .seed = 16, .id = 5 },
	{ .path = "b/link", .mode = S_IFLNK | 0777, .target = "../a/z" },
	{ .path = "b/sym2", .mode = S_IFLNK | 0777, .target = "far/away", .id = 6 },
	{ .path = "b/y2", .mode = REG, .size = 2 * BS + 9, .seed = 13, .id = 40 },
	{ .path = "c", .mode = DIR_ },
	{ .path = "c/sym3", .mode = S_IFLNK | 0777, .target = "far/away", .id = 6 },
	{ .path = "c/xa", .mode = REG, .size = 10, .seed = 17, .xname = "user.k", .xval = "v2" },
	{ .path = "c/zz", .mode = REG, .size = 33, .seed = 16, .id = 5 },
	{ .path = "fifo", .mode = S_IFIFO | 0644 },
	{ .path = "z", .mode = REG, .size = 3 * BS + 5, .seed = 18 },
};

START_TEST(test_walk_same_image)
{
	struct sqk_build_counts st;
	struct sqk_io *mem = build_both(walk_spec, sizeof(walk_spec) / sizeof(walk_spec[0]), NULL,
					&st);
	struct sqk_image *img = open_mem(mem);
	struct sqk_inode a, b, c;
	assert_content(img, "a/b/y", 2 * BS + 9, 13);
	assert_content(img, "b/y2", 2 * BS + 9, 13);
	assert_content(img, "c/zz", 33, 16);
	assert_content(img, "b/dup", 70, 12);
	ck_assert_int_eq(sqk_lookup_path(img, "a/z", &a), 0);
	ck_assert_int_eq(sqk_lookup_path(img, "b/hl", &b), 0);
	ck_assert_int_eq(sqk_lookup_path(img, "c/zz", &c), 0);
	ck_assert_uint_eq(a.ino, b.ino);
	ck_assert_uint_eq(a.ino, c.ino);
	ck_assert_uint_eq(a.nlink, 3);
	ck_assert_int_eq(sqk_lookup_path(img, "b/sym2", &a), 0);
	ck_assert_int_eq(sqk_lookup_path(img, "c/sym3", &b), 0);
	ck_assert_uint_eq(a.ino, b.ino);
	ck_assert_uint_eq(a.nlink, 2);
	ck_assert_int_eq(sqk_lookup_path(img, "b/e", &a), 0);
	ck_assert(S_ISDIR(a.mode));
	ck_assert_uint_eq(st.hardlinks, 4);
	ck_assert_uint_eq(st.dup_files, 1);
	ck_assert_uint_eq(st.files, 9);
	ck_assert_uint_eq(st.dirs, 7);
	ck_assert_uint_eq(st.symlinks, 2);
	sqk_image_close(img);
	assert_checks(mem);
	sqk_io_destroy(mem);
}
END_TEST

/* 30,000 files with long names in three directories, half of them duplicates: with --mem 1M
 * the directory entries, the digests and the directory table all spill to their temporary
 * files, and with batches of 1,000 the fragments are packed as the walk goes. Same image both
 * ways; it checks clean and reads back. */
START_TEST(test_walk_spills)
{
	enum { N = 30000, PER = N / 3 };
	struct spec *v = calloc(N + 4, sizeof(*v));
	char **paths = calloc(N + 4, sizeof(*paths));
	size_t k = 0;
	v[k++] = (struct spec){ .path = "", .mode = DIR_ };
	for (int d = 0; d < 3; d++) {
		ck_assert_int_gt(asprintf(&paths[k], "d%d", d), 0);
		v[k] = (struct spec){ .path = paths[k], .mode = DIR_ };
		k++;
		for (int i = 0; i < PER; i++) {
			int f = d * PER + i;
			uint64_t h = (uint64_t)f * 0x9E3779B97F4A7C15ull, g = h ^ (h >> 31);
			/* names in order, of hard-to-compress bytes: the directory table
			 * spills too */
			ck_assert_int_gt(asprintf(&paths[k],
						  "d%d/%06d-%016llx%016llx%016llx%016llx.f%d", d,
						  f, (unsigned long long)h, (unsigned long long)g,
						  (unsigned long long)(g * 31),
						  (unsigned long long)(h * 7), f % 7),
					 0);
			v[k] = (struct spec){ .path = paths[k], .mode = REG, .size = 20 + f % 90,
					      .seed = (uint32_t)(f % (N / 2)) };
			k++;
		}
	}
	struct sqk_build_counts st;
	piece_batch = 1000;
	struct sqk_io *mem = build_both(v, k, tweak_mem1m, &st);
	piece_batch = 0;
	ck_assert_uint_eq(st.files, N);
	ck_assert_uint_ge(st.dup_files, N / 2 - 100);
	assert_checks(mem);
	struct sqk_image *img = open_mem(mem);
	for (size_t i = 1; i < k; i += 997)
		if (S_ISREG(v[i].mode))
			assert_content(img, v[i].path, v[i].size, v[i].seed);
	sqk_image_close(img);
	sqk_io_destroy(mem);
	for (size_t i = 0; i < k; i++)
		free(paths[i]);
	free(paths);
	free(v);
}
END_TEST

/* A chain of directories "d/d/..." whose deepest entry, a file, is depth levels deep, in the
 * walker's order. The caller frees each path and the array. */
static struct spec *chain_spec(unsigned depth, size_t *n)
{
	struct spec *v = calloc(depth + 1, sizeof(*v));
	ck_assert_ptr_nonnull(v);
	for (unsigned k = 0; k < depth; k++) {
		char *p = malloc(2 * (size_t)depth + 2);
		ck_assert_ptr_nonnull(p);
		for (unsigned i = 0; i < k; i++)
			memcpy(p + 2 * i, "d/", 2);
		if (k + 1 < depth) {
			p[2 * k] = 'd';
			p[2 * k + 1] = 0;
			v[k] = (struct spec){ .path = p, .mode = DIR_ };
		} else {
			p[2 * k] = 'f';
			p[2 * k + 1] = 0;
			v[k] = (struct spec){ .path = p, .mode = REG, .size = 100, .seed = 3 };
		}
	}
	*n = depth;
	return v;
}

static void chain_free(struct spec *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free((char *)v[i].path);
	free(v);
}

/* At the limit: both backends build the same image, the checker walks it clean and the file
 * at depth SQK_DEPTH_MAX reads back. One more level: refused by both, the entry and its
 * depth named. */
START_TEST(test_depth_limit)
{
	size_t n;
	struct spec *v = chain_spec(SQK_DEPTH_MAX, &n);
	struct sqk_io *mem = build_both(v, n, NULL, NULL);
	struct sqk_image *img = open_mem(mem);
	assert_content(img, v[n - 1].path, 100, 3);
	sqk_image_close(img);
	assert_checks(mem);
	sqk_io_destroy(mem);
	chain_free(v, n);

	v = chain_spec(SQK_DEPTH_MAX + 1, &n);
	for (int ordered = 0; ordered < 2; ordered++) {
		struct synth y;
		char msg[1024];
		synth_init(&y, v, n);
		if (ordered)
			y.base.ops = &synth_ordered_ops;
		ck_assert_int_eq(build(&y, NULL, &mem, NULL, NULL, msg), SQK_ETOOBIG);
		ck_assert_msg(strstr(msg, "is 2049 levels deep") && strstr(msg, "at most 2048") &&
			      strstr(msg, "d/d/d/...") && strstr(msg, "/d/d/f'"), "%s", msg);
		ck_assert_uint_lt(strlen(msg), 400);
		sqk_io_destroy(mem);
		synth_free(&y);
	}
	chain_free(v, n);
}
END_TEST

static void tweak_entry4k(struct sqk_build_opts *o)
{
	o->entry_mem = 4096;
}

/* An archive-like source of 3,000 entries in no order (30 directories interleaved, listed
 * halfway, parents implied two levels up, every tenth file listed again with new content, hard
 * links by path to files in other directories): a 4 KiB budget for entry records (the sort's
 * runs merged from the temporary file) gives the same image bytes as the default (one run),
 * and the image holds what the archive says. */
#define SORTED_N 3000
START_TEST(test_sorted_runs_same_image)
{
	static struct spec v[SORTED_N];
	static char paths[SORTED_N][40], links[SORTED_N][40];
	size_t n = 0;
	for (uint32_t i = 0; n < SORTED_N; i++) {
		struct spec *p = &v[n];
		memset(p, 0, sizeof(*p));
		p->path = paths[n];
		if (i == SORTED_N / 2) {
			for (uint32_t k = 0; k < 30 && n < SORTED_N; k++, p = &v[n]) {
				memset(p, 0, sizeof(*p));
				p->path = paths[n];
				snprintf(paths[n++], sizeof(paths[0]), "d%u", k);
				p->mode = S_IFDIR | 0700;
				p->uid = k;
			}
			continue;
		}
		/* a link to file j (j % 10 == 5: never listed again) */
		if (i % 17 == 9 && i > 40) {
			uint32_t j = (i - 40) / 10 * 10 + 5;
			snprintf(paths[n], sizeof(paths[0]), "d%u/h%u", i % 30, i);
			snprintf(links[n], sizeof(links[0]), "d%u/x/f%u", j % 30, j);
			p->mode = REG;
			p->link = links[n++];
			continue;
		}
		uint32_t f = i % 10 == 7 ? i - 4 : i; /* f % 10 == 3: listed again at i */
		snprintf(paths[n++], sizeof(paths[0]), "d%u/x/f%u", f % 30, f);
		p->mode = REG;
		p->size = i % 5 == 1 ? 0 : 100 + i % 300;
		p->seed = i;
	}
	struct sqk_io *ma, *mb;
	char msg[1024];
	struct synth a, b;
	synth_init(&a, v, SORTED_N);
	synth_init(&b, v, SORTED_N);
	ck_assert_msg(build(&a, tweak_entry4k, &ma, NULL, NULL, msg) == 0, "%s", msg);
	ck_assert_msg(build(&b, NULL, &mb, NULL, NULL, msg) == 0, "%s", msg);
	assert_same_image(ma, mb);
	struct sqk_image *img = open_mem(ma);
	struct sqk_inode ino, t;
	ck_assert_int_eq(sqk_lookup_path(img, "d13/x/f13", &ino), 0); /* listed again at 17 */
	ck_assert_uint_eq(ino.size, 100 + 17 % 300);
	assert_content(img, "d13/x/f13", 100 + 17 % 300, 17);
	assert_content(img, "d4/x/f1234", 100 + 1234 % 300, 1234);
	ck_assert_int_eq(sqk_lookup_path(img, "d3", &ino), 0);      /* listed halfway */
	ck_assert_uint_eq(ino.mode, S_IFDIR | 0700);
	ck_assert_uint_eq(ino.uid, 3);
	ck_assert_int_eq(sqk_lookup_path(img, "d3/x", &ino), 0);    /* never listed */
	ck_assert_uint_eq(ino.mode, S_IFDIR | 0755);
	ck_assert_int_eq(sqk_lookup_path(img, "d4/h94", &ino), 0); /* 94 % 17 == 9 */
	ck_assert_int_eq(sqk_lookup_path(img, "d25/x/f55", &t), 0);  /* (94 - 40) / 10 * 10 + 5 */
	ck_assert_uint_eq(ino.ino, t.ino);
	ck_assert_uint_ge(t.nlink, 2);
	assert_content(img, "d4/h94", 100 + 55 % 300, 55);
	sqk_image_close(img);
	synth_free(&a);
	synth_free(&b);
	sqk_io_destroy(ma);
	sqk_io_destroy(mb);
}
END_TEST

/* A path that repeats a name of a hard-link group replaces that name only, as GNU tar and
 * bsdtar extract it: the other names keep the old content and the link count drops. */
START_TEST(test_hardlink_replaced)
{
	static const struct spec v[] = {
		{ .path = "a", .mode = REG, .size = 3000, .seed = 1 },
		{ .path = "b", .mode = REG, .link = "a" },
		{ .path = "c", .mode = REG, .link = "a" },
		{ .path = "a", .mode = REG, .size = 4000, .seed = 2 }, /* canonical name replaced */
		{ .path = "c", .mode = REG, .size = 10, .seed = 3 },   /* a link name replaced */
		{ .path = "d", .mode = REG, .size = 50, .seed = 4 },
		{ .path = "e", .mode = REG, .link = "d" },
		{ .path = "e", .mode = REG, .size = 60, .seed = 5 },
		{ .path = "d", .mode = REG, .size = 70, .seed = 6 },   /* the group is gone */
		{ .path = "f", .mode = REG, .link = "b" },             /* to the detached inode */
	};
	struct synth y;
	struct sqk_io *mem;
	struct sqk_build_counts st;
	char msg[1024];
	synth_init(&y, v, sizeof(v) / sizeof(v[0]));
	ck_assert_msg(build(&y, NULL, &mem, NULL, &st, msg) == 0, "%s", msg);
	struct sqk_image *img = open_mem(mem);
	assert_content(img, "a", 4000, 2);
	assert_content(img, "b", 3000, 1);
	assert_content(img, "c", 10, 3);
	assert_content(img, "d", 70, 6);
	assert_content(img, "e", 60, 5);
	assert_content(img, "f", 3000, 1);
	struct sqk_inode b, f, a;
	ck_assert_int_eq(sqk_lookup_path(img, "b", &b), 0);
	ck_assert_int_eq(sqk_lookup_path(img, "f", &f), 0);
	ck_assert_int_eq(sqk_lookup_path(img, "a", &a), 0);
	ck_assert_uint_eq(b.ino, f.ino);
	ck_assert_uint_eq(b.nlink, 2);
	ck_assert_uint_eq(a.nlink, 1);
	ck_assert_uint_ne(a.ino, b.ino);
	ck_assert_uint_eq(st.hardlinks, 1);
	ck_assert_uint_eq(st.files, 5); /* inodes: a, b (f), c, d, e */
	sqk_image_close(img);
	assert_checks(mem);
	sqk_io_destroy(mem);
	synth_free(&y);
}
END_TEST

/* mtimes before 1970 and after 2106 are stored clamped to 0 and 2^32-1. */
START_TEST(test_mtime_clamped)
{
	static const struct spec v[] = {
		{ .path = "old", .mode = REG, .size = 1, .seed = 1, .has_mtime = true,
		  .mtime = -1 },
		{ .path = "new", .mode = REG, .size = 1, .seed = 1, .has_mtime = true,
		  .mtime = 1ll << 33 },
		{ .path = "max", .mode = REG, .size = 1, .seed = 1, .has_mtime = true,
		  .mtime = UINT32_MAX },
	};
	struct synth y;
	struct sqk_io *mem;
	char msg[1024];
	synth_init(&y, v, sizeof(v) / sizeof(v[0]));
	ck_assert_msg(build(&y, NULL, &mem, NULL, NULL, msg) == 0, "%s", msg);
	struct sqk_image *img = open_mem(mem);
	struct sqk_inode ino;
	ck_assert_int_eq(sqk_lookup_path(img, "old", &ino), 0);
	ck_assert_uint_eq(ino.mtime, 0);
	ck_assert_int_eq(sqk_lookup_path(img, "new", &ino), 0);
	ck_assert_uint_eq(ino.mtime, UINT32_MAX);
	ck_assert_int_eq(sqk_lookup_path(img, "max", &ino), 0);
	ck_assert_uint_eq(ino.mtime, UINT32_MAX);
	sqk_image_close(img);
	sqk_io_destroy(mem);
	synth_free(&y);
}
END_TEST

/* The API's checks: a struct whose size the library does not know is refused with SQK_EABI
 * (a result of the wrong size is left alone, the others get a message naming the struct); a
 * value outside what sqk_build_opts documents is SQK_EINVAL naming it; a failed build's result
 * carries the code and the message, nothing else; a good one carries the superblock written,
 * the image's length and the root digest the trailer holds. */
START_TEST(test_api_checks)
{
	static const struct spec v[] = {
		{ .path = "", .mode = DIR_ },
		{ .path = "f", .mode = REG, .size = 3 * BS + 5, .seed = 3 },
	};
	struct sqk_build_opts o;
	struct sqk_build_source s;
	struct sqk_build_result r;
	struct sqk_io *mem;
	struct synth y;
	synth_init(&y, v, 2);
	ck_assert_int_eq(sqk_io_mem_create(NULL, 0, &mem), 0);
	sqk_build_opts_init(&o);
	ck_assert_uint_eq(o.size, sizeof(o));
	ck_assert_uint_eq(o.block_size, 131072);
	ck_assert_int_eq(o.force_uid, -1);
	ck_assert_int_eq(o.set_mtime, -1);
	o.quiet = true;
	sqk_build_source_init(&s, SQK_BUILD_CUSTOM);
	s.custom = &y.base;

	sqk_build_result_init(&r);
	r.size = sizeof(r) - 8;
	r.err = 12345;
	ck_assert_int_eq(sqk_build(&o, &s, mem, &r), SQK_EABI);
	ck_assert_int_eq(r.err, 12345); /* not written */
	ck_assert_int_eq(sqk_build(&o, &s, mem, NULL), SQK_EABI);

	sqk_build_result_init(&r);
	o.size = sizeof(o) + 8;
	ck_assert_int_eq(sqk_build(&o, &s, mem, &r), SQK_EABI);
	ck_assert_int_eq(r.err, SQK_EABI);
	ck_assert_msg(strstr(r.msg, "sqk_build_opts") && strstr(r.msg, "bytes"), "%s", r.msg);
	o.size = sizeof(o);
	s.size = 4;
	ck_assert_int_eq(sqk_build(&o, &s, mem, &r), SQK_EABI);
	ck_assert_msg(strstr(r.msg, "sqk_build_source of 4 bytes"), "%s", r.msg);
	s.size = sizeof(s);

	o.block_size = 3000;
	ck_assert_int_eq(sqk_build(&o, &s, mem, &r), SQK_EINVAL);
	ck_assert_msg(strstr(r.msg, "block size 3000"), "%s", r.msg);
	ck_assert_uint_eq(r.image_bytes, 0);
	ck_assert(!r.have_root);
	o.block_size = BS;
	size_t len;
	sqk_io_mem_data(mem, &len);
	ck_assert_uint_eq(len, 0); /* nothing written by the refused builds */

	ck_assert_int_eq(sqk_build(&o, &s, mem, &r), 0);
	ck_assert_int_eq(r.err, 0);
	ck_assert_str_eq(r.msg, "");
	sqk_io_mem_data(mem, &len);
	ck_assert_uint_eq(r.image_bytes, len);
	ck_assert_uint_eq(r.super.block_size, BS);
	ck_assert_uint_eq(r.super.inode_count, 2);
	ck_assert_uint_eq(r.counts.files, 1);
	ck_assert_uint_eq(r.counts.file_bytes, 3 * BS + 5);
	ck_assert(r.have_root);
	struct sqk_image *img = open_mem(mem);
	assert_content(img, "f", 3 * BS + 5, 3);
	sqk_image_close(img);
	sqk_io_destroy(mem);
	synth_free(&y);
}
END_TEST

static Suite *build_suite(void)
{
	Suite *s = suite_create("build");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_synthetic_tree);
	tcase_add_test(tc, test_dedup_saves);
	tcase_add_test(tc, test_output_faults);
	tcase_add_test(tc, test_source_failure);
	tcase_add_test(tc, test_bad_entries);
	tcase_add_test(tc, test_walk_same_image);
	tcase_add_test(tc, test_walk_spills);
	tcase_add_test(tc, test_depth_limit);
	tcase_add_test(tc, test_hardlink_replaced);
	tcase_add_test(tc, test_sorted_runs_same_image);
	tcase_add_test(tc, test_mtime_clamped);
	tcase_add_test(tc, test_api_checks);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return test_run_suite(build_suite());
}
