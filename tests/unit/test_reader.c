/* SPDX-License-Identifier: BSD-2-Clause */
/* Check suite for libsqk: a tree built in memory by the builder read back and compared with the
 * source files (content, attributes, links, devices, xattrs, a 3000-entry indexed directory),
 * cache and readahead counters, concurrent readers, and crafted corrupt images (built by hand
 * with raw metadata so single fields can be changed) that must fail cleanly. */
#include <check.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "common/endian.h"
#include "common/meta.h"
#include "common/integrity.h"
#include "sqk/sqk.h"
#include "mkimage/build.h"
#include "testutil.h"

#define BS 4096u
#define BIGDIR 3000
#define MULTI_BLOCKS 40u
#define LARGE_SIZE (4u << 20)

static char tree[64];
static struct sqk_io *mem;
static uint8_t mem_root[SQK_INTEG_DIGEST_SIZE]; /* root digest of mem's integrity data */
static uint8_t *large; /* content of large.bin */

static void write_file(const char *rel, const void *data, size_t len)
{
	char p[256];
	snprintf(p, sizeof(p), "%s/%s", tree, rel);
	FILE *f = fopen(p, "wb");
	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fwrite(data, 1, len, f), len);
	fclose(f);
}

static void fill(uint8_t *b, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		b[i] = (uint8_t)('a' + ((i * 7 + i / 100 + seed) * (seed | 1)) % 26);
}

static void make_sized(const char *name, size_t n, unsigned seed)
{
	uint8_t *b = malloc(n ? n : 1);
	fill(b, n, seed);
	write_file(name, b, n);
	free(b);
}

static void make_tree(void)
{
	char p[256], q[256];
	strcpy(tree, "/tmp/sqk-reader-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tree));
	make_sized("empty", 0, 1);
	make_sized("one", 1, 2);
	make_sized("bm1", BS - 1, 3);
	make_sized("b", BS, 4);
	make_sized("bp1", BS + 1, 5);
	make_sized("multi", MULTI_BLOCKS * BS, 6);
	make_sized("several", 5 * BS + 77, 7);
	large = malloc(LARGE_SIZE);
	fill(large, LARGE_SIZE, 8);
	for (size_t i = 0; i < LARGE_SIZE; i += 4096)
		large[i] = (uint8_t)(i >> 12); /* no two blocks alike: no dedup */
	write_file("large.bin", large, LARGE_SIZE);
	/* sparse: 10 blocks, data only in block 3 and a partial tail */
	snprintf(p, sizeof(p), "%s/sparse", tree);
	int fd = open(p, O_CREAT | O_WRONLY, 0644);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pwrite(fd, "data", 4, 3 * BS + 5), 4);
	ck_assert_int_eq(ftruncate(fd, 10 * BS + 100), 0);
	close(fd);
	snprintf(p, sizeof(p), "%s/one", tree);
	snprintf(q, sizeof(q), "%s/hard", tree);
	ck_assert_int_eq(link(p, q), 0);
	snprintf(p, sizeof(p), "%s/sym", tree);
	ck_assert_int_eq(symlink("some/target/path", p), 0);
	snprintf(p, sizeof(p), "%s/cdev", tree);
	ck_assert_int_eq(mknod(p, S_IFCHR | 0640, makedev(300, 70000)), 0);
	snprintf(p, sizeof(p), "%s/bdev", tree);
	ck_assert_int_eq(mknod(p, S_IFBLK | 0600, makedev(8, 1)), 0);
	snprintf(p, sizeof(p), "%s/fifo", tree);
	ck_assert_int_eq(mkfifo(p, 0644), 0);
	snprintf(p, sizeof(p), "%s/one", tree);
	ck_assert_int_eq(setxattr(p, "user.small", "v1", 2, 0), 0);
	char big[300];
	memset(big, 'X', sizeof(big));
	big[0] = 'B';
	ck_assert_int_eq(setxattr(p, "user.big", big, sizeof(big), 0), 0);
	snprintf(p, sizeof(p), "%s/dir", tree);
	ck_assert_int_eq(mkdir(p, 0755), 0);
	for (int i = 0; i < BIGDIR; i++) {
		snprintf(p, sizeof(p), "%s/dir/entry_with_long_name_%05d", tree, i * 3);
		fd = open(p, O_CREAT | O_WRONLY, 0644);
		ck_assert_int_ge(fd, 0);
		if (i % 100 == 0)
			ck_assert_int_eq(write(fd, p, strlen(p)), (ssize_t)strlen(p));
		close(fd);
	}
}

static void remove_tree(void)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tree);
	ck_assert_int_eq(system(cmd), 0);
}

static void build_image(void)
{
	mem = test_build_dir(tree, false, mem_root);
}

static void setup_tree(void)
{
	make_tree();
	build_image();
}

static void teardown_tree(void)
{
	sqk_io_destroy(mem);
	mem = NULL;
	free(large);
	large = NULL;
	remove_tree();
}

static char logbuf[4096];

static void log_cb(void *ctx, const char *msg)
{
	(void)ctx;
	snprintf(logbuf, sizeof(logbuf), "%s", msg);
}

static struct sqk_image *open_mem(struct sqk_io *io, unsigned ra, unsigned threads)
{
	struct sqk_open_opts o = { .size = sizeof(o),
		.readahead_blocks = ra, .threads = threads, .log = log_cb,
				   .name = "test.sqsh" };
	struct sqk_image *img;
	int rc = sqk_image_open_io(io, &o, &img);
	ck_assert_msg(rc == 0, "open: %s (%s)", sqk_strerror(rc), logbuf);
	return img;
}

/* Compares a file's content with the source through reads of varying sizes. */
static void cmp_file(struct sqk_image *img, const struct sqk_inode *in, const char *src)
{
	struct stat st;
	ck_assert_int_eq(stat(src, &st), 0);
	size_t n = (size_t)st.st_size;
	uint8_t *want = malloc(n + 1), *got = malloc(n + 100);
	int fd = open(src, O_RDONLY);
	ck_assert_int_eq(read(fd, want, n), (ssize_t)n);
	close(fd);
	size_t done = 0, step = 1000;
	while (done < n) {
		ssize_t r = sqk_read(img, in, got + done, step, done);
		ck_assert_msg(r > 0, "%s at %zu: %zd", src, done, r);
		done += (size_t)r;
		step = step * 3 % 9001 + 1;
	}
	ck_assert_int_eq(sqk_read(img, in, got, 10, n), 0);
	ck_assert_int_eq(sqk_read(img, in, got, 10, n + 5000), 0);
	ck_assert_int_eq(memcmp(want, got, n), 0);
	memset(got, 0xEE, n + 100);
	ck_assert_int_eq(sqk_read(img, in, got, n + 100, 0), (ssize_t)n);
	ck_assert_int_eq(memcmp(want, got, n), 0);
	ck_assert_uint_eq(got[n], 0xEE);
	free(want);
	free(got);
}

static void cmp_xattrs(struct sqk_image *img, const struct sqk_inode *in, const char *src)
{
	char want[4096], got[4096];
	ssize_t wn = llistxattr(src, want, sizeof(want));
	size_t gn;
	ck_assert_int_ge(wn, 0);
	ck_assert_int_eq(sqk_xattr_list(img, in, NULL, 0, &gn), 0);
	int user = 0;
	for (ssize_t i = 0; i < wn; i += (ssize_t)strlen(want + i) + 1)
		user += strncmp(want + i, "user.", 5) == 0;
	if (user == 0) {
		ck_assert_uint_eq(gn, 0);
		return;
	}
	ck_assert_int_eq(sqk_xattr_list(img, in, got, sizeof(got), &gn), 0);
	for (size_t i = 0; i < gn; i += strlen(got + i) + 1) {
		char v1[1024], v2[1024];
		size_t vl;
		ssize_t l = lgetxattr(src, got + i, v1, sizeof(v1));
		ck_assert_int_ge(l, 0);
		ck_assert_int_eq(sqk_xattr_get(img, in, got + i, NULL, 0, &vl), 0);
		ck_assert_uint_eq(vl, (size_t)l);
		ck_assert_int_eq(sqk_xattr_get(img, in, got + i, v2, sizeof(v2), &vl), 0);
		ck_assert_int_eq(memcmp(v1, v2, vl), 0);
		if (vl > 1)
			ck_assert_int_eq(sqk_xattr_get(img, in, got + i, v2, 1, &vl), SQK_ETOOBIG);
	}
	ck_assert_int_eq(sqk_xattr_get(img, in, "user.absent", got, sizeof(got), &gn),
			 SQK_ENOENT);
	ck_assert_int_eq(sqk_xattr_list(img, in, got, 3, &gn), SQK_ETOOBIG);
}

static void cmp_attrs(struct sqk_image *img, const struct sqk_inode *in, const char *src)
{
	struct stat st;
	ck_assert_int_eq(lstat(src, &st), 0);
	ck_assert_uint_eq(in->mode, st.st_mode);
	ck_assert_uint_eq(in->uid, st.st_uid);
	ck_assert_uint_eq(in->gid, st.st_gid);
	ck_assert_uint_eq(in->mtime, (uint32_t)st.st_mtime);
	if (S_ISREG(st.st_mode)) {
		ck_assert_uint_eq(in->size, (uint64_t)st.st_size);
		ck_assert_uint_eq(in->nlink, st.st_nlink);
		cmp_file(img, in, src);
	} else if (S_ISLNK(st.st_mode)) {
		char t1[4097], t2[4097];
		size_t n;
		ssize_t l = readlink(src, t1, sizeof(t1));
		ck_assert_int_eq(sqk_readlink(img, in, t2, sizeof(t2), &n), 0);
		ck_assert_uint_eq(n, (size_t)l);
		ck_assert_int_eq(memcmp(t1, t2, n), 0);
		ck_assert_uint_eq(t2[n], 0);
	} else if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) {
		ck_assert_uint_eq(sqk_rdev_major(in->rdev), major(st.st_rdev));
		ck_assert_uint_eq(sqk_rdev_minor(in->rdev), minor(st.st_rdev));
	}
	cmp_xattrs(img, in, src);
}

/* Walks dir recursively, comparing every entry with src; returns the entry count. */
static size_t walk(struct sqk_image *img, const struct sqk_inode *dir, const char *src)
{
	struct sqk_dir_iter *it;
	struct sqk_dirent e;
	size_t count = 0;
	int rc;
	ck_assert_int_eq(sqk_dir_open(img, dir, &it), 0);
	while ((rc = sqk_dir_next(it, &e)) == 1) {
		char p[512];
		struct sqk_inode in, viaLookup;
		snprintf(p, sizeof(p), "%s/%.*s", src, (int)e.name_len, e.name);
		ck_assert_int_eq(sqk_inode_get(img, e.ref, &in), 0);
		ck_assert_uint_eq(in.ino, e.ino);
		ck_assert_uint_eq(sqk_basic_type(in.type), e.type);
		cmp_attrs(img, &in, p);
		if (S_ISDIR(in.mode)) {
			struct stat st;
			size_t n = walk(img, &in, p);
			ck_assert_int_eq(lstat(p, &st), 0);
			(void)n;
		}
		if (count % 50 == 0) {
			ck_assert_int_eq(sqk_lookup(img, dir, e.name, e.name_len, &viaLookup), 0);
			ck_assert_uint_eq(viaLookup.ref, in.ref);
		}
		count++;
	}
	ck_assert_int_eq(rc, 0);
	sqk_dir_close(it);
	return count;
}

START_TEST(test_round_trip)
{
	struct sqk_image *img = open_mem(mem, 0, 0);
	struct sqk_inode root, a, b, d;
	ck_assert_int_eq(sqk_image_root(img, &root), 0);
	ck_assert_uint_eq(sqk_image_super(img)->block_size, BS);
	ck_assert_uint_eq(walk(img, &root, tree), 15);
	ck_assert_int_eq(sqk_lookup_path(img, "/one", &a), 0);
	ck_assert_int_eq(sqk_lookup_path(img, "hard", &b), 0);
	ck_assert_uint_eq(a.ref, b.ref);
	ck_assert_uint_eq(a.nlink, 2);
	ck_assert_int_eq(sqk_lookup_path(img, "", &b), 0);
	ck_assert_uint_eq(b.ref, root.ref);
	ck_assert_int_eq(sqk_lookup_path(img, "one/x", &b), SQK_ENOENT);
	ck_assert_int_eq(sqk_lookup_path(img, "nothere", &b), SQK_ENOENT);
	ck_assert_int_eq(sqk_lookup_path(img, "//dir/./entry_with_long_name_00003/", &b), 0);
	/* "..": back up through the directories walked; the root's parent is the root */
	ck_assert_int_eq(sqk_lookup_path(img, "dir/../one", &b), 0);
	ck_assert_uint_eq(b.ref, a.ref);
	ck_assert_int_eq(sqk_lookup_path(img, "../../one", &b), 0);
	ck_assert_uint_eq(b.ref, a.ref);
	ck_assert_int_eq(sqk_lookup_path(img, "dir/..", &b), 0);
	ck_assert_uint_eq(b.ref, root.ref);
	ck_assert_int_eq(sqk_lookup_path(img, "one/..", &b), SQK_ENOENT); /* not a directory */
	ck_assert_int_eq(sqk_lookup_path(img, "dir/nothere/../entry_with_long_name_00003", &b),
			 SQK_ENOENT);
	/* the big directory: every name found through the index, absent names reported */
	ck_assert_int_eq(sqk_lookup_path(img, "dir", &d), 0);
	ck_assert_uint_eq(d.type, SQK_T_LDIR);
	ck_assert_uint_gt(d.index_count, 0);
	for (int i = 0; i < BIGDIR * 3 + 2; i++) {
		char n[64];
		int len = snprintf(n, sizeof(n), "entry_with_long_name_%05d", i);
		int rc = sqk_lookup(img, &d, n, (size_t)len, &b);
		ck_assert_msg(rc == (i % 3 == 0 && i < BIGDIR * 3 ? 0 : SQK_ENOENT), "%s: %d", n,
			      rc);
	}
	ck_assert_int_eq(sqk_lookup(img, &d, "a", 1, &b), SQK_ENOENT);
	ck_assert_int_eq(sqk_lookup(img, &d, "zzz", 3, &b), SQK_ENOENT);
	sqk_image_close(img);
}
END_TEST

/* Metadata blocks of [start, end) of image d, counted by their headers. */
static uint64_t count_meta_blocks(const uint8_t *d, uint64_t start, uint64_t end)
{
	uint64_t n = 0;
	while (start < end) {
		start += 2 + (get_le16(d + start) & (SQK_META_RAW - 1));
		n++;
	}
	ck_assert_uint_eq(start, end);
	return n;
}

/* sqk_image_info on the tree: every inode reached once (the hard link "hard" is "one") and
 * counted by kind; the bytes of the distinct files; their stored blocks (full blocks only: tails
 * and small files are in fragments, holes are sparse); the two metadata tables measured from the
 * image's own bytes (the directory table ends where the fragment table's first block starts). */
START_TEST(test_info)
{
	struct sqk_image *img = open_mem(mem, 0, 1);
	const struct sqk_super *sb = sqk_image_super(img);
	struct sqk_image_info inf = { .size = sizeof(inf) };
	struct sqk_inode sp;
	size_t len;
	const uint8_t *d = sqk_io_mem_data(mem, &len);
	uint64_t bytes = 0 + 1 + (BS - 1) + BS + (BS + 1) + MULTI_BLOCKS * BS + (5 * BS + 77) +
			 LARGE_SIZE + (10 * BS + 100);
	for (int i = 0; i < BIGDIR; i += 100) {
		char p[256];
		bytes += (uint64_t)snprintf(p, sizeof(p), "%s/dir/entry_with_long_name_%05d", tree,
					    i * 3);
	}
	ck_assert_int_eq(sqk_image_info(img, &inf), 0);
	ck_assert_uint_eq(inf.inodes_found, 2 + 9 + BIGDIR + 4);
	ck_assert_uint_eq(inf.inodes_found, sb->inode_count);
	ck_assert_uint_eq(inf.kinds[0], 0);
	ck_assert_uint_eq(inf.kinds[SQK_T_DIR], 2);
	ck_assert_uint_eq(inf.kinds[SQK_T_FILE], 9 + BIGDIR);
	ck_assert_uint_eq(inf.kinds[SQK_T_SYMLINK], 1);
	ck_assert_uint_eq(inf.kinds[SQK_T_BLKDEV], 1);
	ck_assert_uint_eq(inf.kinds[SQK_T_CHRDEV], 1);
	ck_assert_uint_eq(inf.kinds[SQK_T_FIFO], 1);
	ck_assert_uint_eq(inf.kinds[SQK_T_SOCKET], 0);
	ck_assert_uint_eq(inf.file_bytes, bytes);
	/* b, bp1, several, multi, large.bin: their full blocks; sparse: its one block of data */
	ck_assert_uint_eq(inf.data_blocks, 1 + 1 + 5 + MULTI_BLOCKS + LARGE_SIZE / BS + 1);
	/* sparse is the only file with holes: 9 of its 10 blocks */
	ck_assert_int_eq(sqk_lookup_path(img, "sparse", &sp), 0);
	ck_assert_uint_eq(sp.sparse, 9 * BS);
	ck_assert_uint_eq(inf.sparse_bytes, 9 * BS);
	/* the counts in sqk mkimage's words: the same kinds, "hard" an extra name, 9 sparse blocks
	 */
	ck_assert_uint_eq(inf.counts.inodes, sb->inode_count);
	ck_assert_uint_eq(inf.counts.files, 9 + BIGDIR);
	ck_assert_uint_eq(inf.counts.dirs, 2);
	ck_assert_uint_eq(inf.counts.devices, 2);
	ck_assert_uint_eq(inf.counts.fifos_sockets, 1);
	ck_assert_uint_eq(inf.counts.hard_links, 1);
	ck_assert_uint_eq(inf.counts.data_blocks, inf.data_blocks);
	ck_assert_uint_eq(inf.counts.sparse_blocks, 9);
	ck_assert_uint_eq(inf.counts.fragment_blocks, sb->fragment_count);
	ck_assert_uint_eq(inf.inode_table_bytes, sb->directory_table_start - sb->inode_table_start);
	ck_assert_uint_eq(inf.inode_metadata_blocks,
			  count_meta_blocks(d, sb->inode_table_start, sb->directory_table_start));
	ck_assert_uint_ne(sb->fragment_count, 0);
	uint64_t dir_end = get_le64(d + sb->fragment_table_start);
	ck_assert_uint_eq(inf.directory_table_bytes, dir_end - sb->directory_table_start);
	ck_assert_uint_eq(inf.directory_metadata_blocks,
			  count_meta_blocks(d, sb->directory_table_start, dir_end));
	ck_assert_uint_ge(inf.directory_metadata_blocks, 2); /* 3000 long names: several blocks */
	sqk_image_close(img);
}
END_TEST

/* An image of an empty directory has an empty directory table: no metadata block counted in it
 * (the export table's block right after it is not one of its blocks). */
START_TEST(test_info_empty)
{
	char dir[] = "/tmp/sqk-reader-empty-XXXXXX";
	ck_assert_ptr_nonnull(mkdtemp(dir));
	struct sqk_io *io = test_build_dir(dir, false, NULL);
	ck_assert_int_eq(rmdir(dir), 0);
	struct sqk_image *img = open_mem(io, 0, 1);
	const struct sqk_super *sb = sqk_image_super(img);
	struct sqk_image_info inf = { .size = sizeof(inf) };
	ck_assert_uint_ne(sb->export_table_start, SQK_NONE64);
	ck_assert_int_eq(sqk_image_info(img, &inf), 0);
	ck_assert_uint_eq(inf.inodes_found, 1);
	ck_assert_uint_eq(inf.kinds[SQK_T_DIR], 1);
	ck_assert_uint_eq(inf.file_bytes, 0);
	ck_assert_uint_eq(inf.data_blocks, 0);
	ck_assert_uint_eq(inf.inode_metadata_blocks, 1);
	ck_assert_uint_eq(inf.directory_table_bytes, 0);
	ck_assert_uint_eq(inf.directory_metadata_blocks, 0);
	sqk_image_close(img);
	sqk_io_destroy(io);
}
END_TEST

/* Opens io with reads verified or not and root digest pin (may be NULL); *img is NULL on error. */
static int open_pinned(struct sqk_io *io, uint64_t offset, bool verify, const uint8_t *pin,
		       struct sqk_image **img)
{
	struct sqk_open_opts o = { .size = sizeof(o),
		.offset = offset, .log = log_cb, .name = "test.sqsh",
				   .no_verify = !verify, .root_hash = pin };
	logbuf[0] = 0;
	return sqk_image_open_io(io, &o, img);
}

/* opts.root_hash is checked at open: the image's digest opens it, with reads verified or not; a
 * wrong one fails with SQK_ECORRUPT and a log line giving both digests, also with reads verified
 * (the sqkfuse -o verify path once skipped it); an image without integrity data, or one that
 * does not start at offset 0 of its file, cannot be pinned; a pin in opts.http is refused. */
START_TEST(test_root_hash)
{
	uint8_t bad[SQK_INTEG_DIGEST_SIZE];
	char want[2 * SQK_INTEG_DIGEST_SIZE + 1], got[2 * SQK_INTEG_DIGEST_SIZE + 1], msg[300];
	struct sqk_image *img;
	memcpy(bad, mem_root, sizeof(bad));
	bad[31] ^= 1;
	integ_hex(mem_root, got);
	integ_hex(bad, want);
	snprintf(msg, sizeof(msg), "test.sqsh: root digest %s does not match the pinned %s", got,
		 want);
	for (int verify = 0; verify < 2; verify++) {
		ck_assert_int_eq(open_pinned(mem, 0, verify, mem_root, &img), 0);
		ck_assert(sqk_image_verified(img) == verify);
		sqk_image_close(img);
		ck_assert_int_eq(open_pinned(mem, 0, verify, bad, &img), SQK_ECORRUPT);
		ck_assert_ptr_null(img);
		ck_assert_str_eq(logbuf, msg);
	}

	/* the same image 4096 bytes into its file: its integrity data does not describe it */
	size_t len;
	const uint8_t *data = sqk_io_mem_data(mem, &len);
	uint8_t *shifted = calloc(1, len + 4096);
	struct sqk_io *io;
	memcpy(shifted + 4096, data, len);
	ck_assert_int_eq(sqk_io_mem_create(shifted, len + 4096, &io), 0);
	ck_assert_int_eq(open_pinned(io, 4096, false, NULL, &img), 0);
	sqk_image_close(img);
	ck_assert_int_eq(open_pinned(io, 4096, false, mem_root, &img), SQK_ECORRUPT);
	ck_assert_ptr_null(img);
	ck_assert_str_eq(logbuf, "test.sqsh: the image has no integrity data: its root digest "
				 "cannot be checked");
	sqk_io_destroy(io);
	free(shifted);

	/* --no-checksums */
	char dir[] = "/tmp/sqk-reader-plain-XXXXXX", f[64];
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(f, sizeof(f), "%s/x", dir);
	FILE *fp = fopen(f, "w");
	ck_assert_ptr_nonnull(fp);
	fputs("x", fp);
	fclose(fp);
	io = test_build_dir(dir, true, NULL);
	ck_assert_int_eq(unlink(f), 0);
	ck_assert_int_eq(rmdir(dir), 0);
	ck_assert_int_eq(open_pinned(io, 0, false, mem_root, &img), SQK_ECORRUPT);
	ck_assert_ptr_null(img);
	ck_assert_str_eq(logbuf, "test.sqsh: the image has no integrity data: its root digest "
				 "cannot be checked");
	sqk_io_destroy(io);

	/* one pin field: opts.http carrying one is refused, not ignored */
	struct sqk_http_opts ho = { .size = sizeof(ho), .root_hash = mem_root };
	struct sqk_open_opts o = { .size = sizeof(o), .http = &ho };
	ck_assert_int_eq(sqk_image_open_io(mem, &o, &img), SQK_EINVAL);
	ck_assert_ptr_null(img);
}
END_TEST

START_TEST(test_counters)
{
	struct sqk_image *img = open_mem(mem, 16, 2);
	struct sqk_inode in;
	struct sqk_stats s0 = { .size = sizeof(s0) }, s1 = s0, s2 = s0;
	uint8_t buf[BS];
	ck_assert_int_eq(sqk_lookup_path(img, "multi", &in), 0);
	sqk_image_stats(img, &s0);
	for (uint64_t off = 0; off < in.size; off += sizeof(buf))
		ck_assert_int_eq(sqk_read(img, &in, buf, sizeof(buf), off), (ssize_t)sizeof(buf));
	sqk_image_stats(img, &s1);
	ck_assert_uint_eq(s1.data_blocks_decompressed - s0.data_blocks_decompressed, MULTI_BLOCKS);
	ck_assert_uint_ge(s1.readahead_batches, 2);
	for (uint64_t off = 0; off < in.size; off += sizeof(buf))
		ck_assert_int_eq(sqk_read(img, &in, buf, sizeof(buf), off), (ssize_t)sizeof(buf));
	for (int i = 0; i < 500; i++)
		ck_assert_int_eq(sqk_read(img, &in, buf, 10, (uint64_t)(i * 7919) % in.size), 10);
	sqk_image_stats(img, &s2);
	ck_assert_uint_eq(s2.data_blocks_decompressed, s1.data_blocks_decompressed);
	ck_assert_uint_ge(s2.cache_hits - s1.cache_hits, MULTI_BLOCKS);
	ck_assert_uint_gt(s2.bytes_read, 0);
	/* inodes come from the metadata cache: looking them up again decompresses nothing */
	ck_assert_int_eq(sqk_lookup_path(img, "multi", &in), 0);
	sqk_image_stats(img, &s1);
	ck_assert_uint_eq(s1.metadata_blocks_decompressed, s2.metadata_blocks_decompressed);
	/* sparse blocks: zeros without I/O */
	ck_assert_int_eq(sqk_lookup_path(img, "sparse", &in), 0);
	ck_assert_int_eq(sqk_read(img, &in, buf, 10, 0), 10);
	sqk_image_stats(img, &s1);
	ck_assert_int_eq(sqk_read(img, &in, buf, sizeof(buf), 6 * BS), (ssize_t)sizeof(buf));
	sqk_image_stats(img, &s2);
	ck_assert_uint_eq(s2.bytes_read, s1.bytes_read);
	for (size_t i = 0; i < sizeof(buf); i++)
		ck_assert_uint_eq(buf[i], 0);
	sqk_image_close(img);
}
END_TEST

/* A sequential read starts decoding the blocks after it on the workers: the next read finds
 * them decoded. */
START_TEST(test_prefetch)
{
	struct sqk_image *img = open_mem(mem, 8, 2);
	struct sqk_inode in;
	struct sqk_stats s = { .size = sizeof(s) };
	static uint8_t buf[8 * BS];
	ck_assert_int_eq(sqk_lookup_path(img, "multi", &in), 0);
	ck_assert_int_eq(sqk_read(img, &in, buf, sizeof(buf), 0), (ssize_t)sizeof(buf));
	for (int i = 0; i < 200; i++) { /* the workers finish within 2 s */
		sqk_image_stats(img, &s);
		if (s.data_blocks_decompressed >= 16)
			break;
		usleep(10000);
	}
	ck_assert_uint_eq(s.data_blocks_decompressed, 16);
	/* the second read finds its 8 blocks decoded (cache hits, not decompressions) ... */
	struct sqk_stats before = s;
	ck_assert_int_eq(sqk_read(img, &in, buf, sizeof(buf), sizeof(buf)), (ssize_t)sizeof(buf));
	sqk_image_stats(img, &s);
	ck_assert_uint_ge(s.cache_hits - before.cache_hits, 8);
	/* ... and starts decoding the 8 after it, each once */
	for (int i = 0; i < 200 && s.data_blocks_decompressed < 24; i++) {
		usleep(10000);
		sqk_image_stats(img, &s);
	}
	ck_assert_uint_eq(s.data_blocks_decompressed, 24);
	usleep(50000);
	sqk_image_stats(img, &s);
	ck_assert_uint_eq(s.data_blocks_decompressed, 24);
	sqk_image_close(img);
}
END_TEST

/* A read aside (SQK_READ_ASIDE) of the first block starts no readahead; a plain one does. */
START_TEST(test_read_aside)
{
	struct sqk_image *img = open_mem(mem, 8, 2);
	struct sqk_inode in;
	struct sqk_stats s = { .size = sizeof(s) };
	uint8_t buf[16];
	ck_assert_int_eq(sqk_lookup_path(img, "multi", &in), 0);
	ck_assert_int_eq(sqk_read_ex(img, &in, buf, sizeof(buf), 0, SQK_READ_ASIDE), 16);
	usleep(100000);
	sqk_image_stats(img, &s);
	ck_assert_uint_eq(s.data_blocks_decompressed, 1);
	ck_assert_int_eq(sqk_read(img, &in, buf, sizeof(buf), 16), 16);
	for (int i = 0; i < 200 && s.data_blocks_decompressed < 8; i++) {
		usleep(10000);
		sqk_image_stats(img, &s);
	}
	ck_assert_uint_ge(s.data_blocks_decompressed, 8);
	/* what counts as sequential: the first block, or where the last plain read ended */
	ck_assert(sqk_read_sequential(img, &in, 100));
	ck_assert(!sqk_read_sequential(img, &in, 5 * BS));
	ck_assert_int_eq(sqk_read(img, &in, buf, sizeof(buf), 5 * BS), 16);
	ck_assert(sqk_read_sequential(img, &in, 5 * BS + 16));
	ck_assert_int_eq(sqk_read_ex(img, &in, buf, sizeof(buf), 9 * BS, SQK_READ_ASIDE), 16);
	ck_assert(sqk_read_sequential(img, &in, 5 * BS + 16));
	sqk_image_close(img);
}
END_TEST

/* sqk_read_stream reads and says, in the same call, whether the read continued the stream. */
START_TEST(test_read_stream)
{
	struct sqk_image *img = open_mem(mem, 8, 2);
	struct sqk_inode in;
	uint8_t buf[16];
	bool seq = false;
	ck_assert_int_eq(sqk_lookup_path(img, "multi", &in), 0);
	ck_assert_int_eq(sqk_read_stream(img, &in, buf, sizeof(buf), 100, 0, &seq), 16);
	ck_assert(seq); /* the first block */
	ck_assert_int_eq(sqk_read_stream(img, &in, buf, sizeof(buf), 5 * BS, 0, &seq), 16);
	ck_assert(!seq); /* a jump */
	ck_assert_int_eq(sqk_read_stream(img, &in, buf, sizeof(buf), 5 * BS + 16, 0, &seq), 16);
	ck_assert(seq); /* where the last read ended */
	ck_assert_int_eq(sqk_read_stream(img, &in, buf, sizeof(buf), 7 * BS, SQK_READ_ASIDE, &seq),
			 16);
	ck_assert(!seq); /* aside: never part of the stream, and it moves nothing */
	ck_assert_int_eq(sqk_read_stream(img, &in, buf, sizeof(buf), 5 * BS + 32, 0, &seq), 16);
	ck_assert(seq);
	ck_assert_int_eq(sqk_read_stream(img, &in, buf, sizeof(buf), 5 * BS + 48, 0, NULL), 16);
	sqk_image_close(img);
}
END_TEST

/* An image embedded at an offset in a file, opened by path and by fd. */
START_TEST(test_open_offset)
{
	char path[] = "/tmp/sqk-reader-img-XXXXXX";
	int fd = mkstemp(path);
	size_t len;
	const uint8_t *data = sqk_io_mem_data(mem, &len);
	uint8_t pad[1000] = { 0 }, buf[16];
	ck_assert_int_eq(write(fd, pad, sizeof(pad)), (ssize_t)sizeof(pad));
	ck_assert_int_eq(write(fd, data, len), (ssize_t)len);
	struct sqk_open_opts o = { .size = sizeof(o),
		.offset = sizeof(pad), .cache_bytes = 100000 };
	struct sqk_image *img;
	struct sqk_inode in;
	ck_assert_int_eq(sqk_image_open(path, &o, &img), 0);
	ck_assert_int_eq(sqk_lookup_path(img, "several", &in), 0);
	ck_assert_int_eq(sqk_read(img, &in, buf, 5, 0), 5);
	sqk_image_close(img);
	ck_assert_int_eq(sqk_image_open_fd(fd, &o, &img), 0);
	ck_assert_int_eq(sqk_lookup_path(img, "large.bin", &in), 0);
	ck_assert_int_eq(sqk_read(img, &in, buf, 16, 4096 * 7), 16);
	ck_assert_int_eq(memcmp(buf, large + 4096 * 7, 16), 0);
	sqk_image_close(img);
	ck_assert_int_eq(sqk_image_open(path, NULL, &img), SQK_ENOTSQFS); /* the padding */
	ck_assert_ptr_null(img);
	ck_assert_int_eq(sqk_image_open("/nonexistent/img", NULL, &img), SQK_ENOENT);
	close(fd);
	unlink(path);
}
END_TEST

struct thr {
	struct sqk_image *img;
	struct sqk_inode in;
	unsigned seed;
	bool sequential;
	uint8_t touched[LARGE_SIZE / BS]; /* per thread: merged after join */
	int fail;
};

static void *reader_thread(void *arg)
{
	struct thr *t = arg;
	uint8_t *buf = malloc(70000);
	for (int i = 0; i < 300 && !t->fail; i++) {
		uint64_t off = t->sequential ? (uint64_t)i * 65536 % LARGE_SIZE
					     : (uint64_t)rand_r(&t->seed) % LARGE_SIZE;
		size_t len = t->sequential ? 65536 : (size_t)rand_r(&t->seed) % 70000;
		ssize_t r = sqk_read(t->img, &t->in, buf, len, off);
		size_t want = off + len > LARGE_SIZE ? LARGE_SIZE - off : len;
		if (r != (ssize_t)want || memcmp(buf, large + off, want) != 0)
			t->fail = 1;
		for (uint64_t k = off / BS; want && k <= (off + want - 1) / BS; k++)
			t->touched[k] = 1;
	}
	free(buf);
	return NULL;
}

static void run_threads(unsigned ra, bool sequential, size_t cache)
{
	struct sqk_open_opts o = { .size = sizeof(o),
		.readahead_blocks = ra, .threads = 4, .cache_bytes = cache };
	struct sqk_image *img;
	static struct thr t[8];
	pthread_t th[8];
	uint8_t touched[LARGE_SIZE / BS] = { 0 };
	struct sqk_stats s = { .size = sizeof(s) };
	struct sqk_inode in;
	ck_assert_int_eq(sqk_image_open_io(mem, &o, &img), 0);
	ck_assert_int_eq(sqk_lookup_path(img, "large.bin", &in), 0);
	for (int i = 0; i < 8; i++) {
		t[i] = (struct thr){ .img = img, .in = in, .seed = (unsigned)i * 31 + 7,
				     .sequential = sequential };
		ck_assert_int_eq(pthread_create(&th[i], NULL, reader_thread, &t[i]), 0);
	}
	for (int i = 0; i < 8; i++) {
		pthread_join(th[i], NULL);
		ck_assert_int_eq(t[i].fail, 0);
		for (unsigned k = 0; k < LARGE_SIZE / BS; k++)
			touched[k] |= t[i].touched[k];
	}
	unsigned distinct = 0;
	for (unsigned k = 0; k < LARGE_SIZE / BS; k++)
		distinct += touched[k];
	sqk_image_stats(img, &s);
	/* (a small cache re-decompresses evicted blocks: no bound then) */
	if (!cache && ra == 1)
		ck_assert_uint_le(s.data_blocks_decompressed, distinct);
	else if (!cache)
		ck_assert_uint_le(s.data_blocks_decompressed, LARGE_SIZE / BS);
	sqk_image_close(img);
}

START_TEST(test_concurrent)
{
	run_threads(1, false, 0);
	run_threads(16, false, 0);
	run_threads(16, true, 0);
	run_threads(16, true, 64 * 1024);
	run_threads(4, false, 100 * 1024);
}
END_TEST

/* ---- crafted images: raw metadata, so fields can be chosen freely ---- */

struct craft {
	uint32_t nent;      /* entries "e%04d" (one run) pointing at f */
	uint32_t fsize;     /* size of f (2 blocks by default) */
	bool short_block;   /* f's second block decompresses to BS - 1 */
	uint32_t t_frag;    /* fragment index of t */
	bool loop;          /* entry "loop" pointing back at the root */
	uint32_t frag_count, id_count, xattr_count;
	bool id_past_end;
};

struct buf {
	uint8_t *p;
	size_t len;
};

static void put(struct buf *b, const void *d, size_t n)
{
	b->p = realloc(b->p, b->len + n);
	memcpy(b->p + b->len, d, n);
	b->len += n;
}

static void put_meta_table(struct buf *img, const void *d, size_t n, uint64_t *index_pos)
{
	uint8_t blk[2 + SQK_META_SIZE], idx[8];
	uint64_t start = img->len;
	ck_assert_int_eq(meta_encode_block(NULL, d, n, blk), (ssize_t)(2 + n));
	put(img, blk, 2 + n);
	*index_pos = img->len;
	put_le64(idx, start);
	put(img, idx, 8);
}

static void put_inode_hdr(struct meta_writer *w, uint16_t type, uint16_t mode, uint32_t ino)
{
	uint8_t h[16];
	struct inode_header ih = { .type = type, .mode = mode, .mtime = 1000,
				       .inode_number = ino };
	inode_header_encode(&ih, h);
	meta_writer_append(w, h, 16);
}

static void put_entry(struct buf *d, uint16_t off, int16_t delta, uint16_t type, const char *n)
{
	uint8_t e[8];
	struct dir_entry de = { .offset = off, .inode_delta = delta, .type = type,
				    .name_size = (uint16_t)(strlen(n) - 1) };
	dir_entry_encode(&de, e);
	put(d, e, 8);
	put(d, n, strlen(n));
}

static void put_run(struct buf *d, uint32_t count, uint32_t ino)
{
	uint8_t h[12];
	struct dir_header dh = { .count = count - 1, .start_block = 0, .inode_number = ino };
	dir_header_encode(&dh, h);
	put(d, h, 12);
}

/* Inodes: f (1) at 0, t (2), root (3). Layout: super, f's blocks, fragment block, inode table,
 * directory table, fragment table, id table. */
static uint8_t *craft_image(const struct craft *c, size_t *len)
{
	struct buf img = { 0 }, dir = { 0 };
	struct sqk_super sb = { .magic = SQK_MAGIC, .inode_count = 3, .block_size = BS,
				.block_log = 12, .compressor = SQK_COMP_ZSTD, .version_major = 4,
				.xattr_id_table_start = SQK_NONE64,
				.export_table_start = SQK_NONE64 };
	struct sqk_comp_config cfg = { .id = SQK_COMP_ZSTD, .block_size = BS };
	struct compressor *z;
	uint8_t blk[BS], cz[BS], w[4];
	uint32_t fsize = c->fsize ? c->fsize : 2 * BS;
	ck_assert_int_eq(compressor_create(&cfg, &z), 0);
	put(&img, blk, SQK_SUPER_SIZE);
	/* f: block 0 raw, block 1 compressed (one byte short if asked) */
	fill(blk, BS, 9);
	uint64_t fstart = img.len;
	put(&img, blk, BS);
	ssize_t zn = comp_compress(z, blk, c->short_block ? BS - 1 : BS, cz, BS);
	ck_assert_int_gt(zn, 0);
	put(&img, cz, (size_t)zn);
	uint64_t fragpos = img.len;
	put(&img, "tailtail", 8);
	/* inode table */
	struct meta_writer iw;
	meta_writer_init(&iw, NULL);
	uint32_t nb = fsize / BS + (fsize % BS != 0);
	put_inode_hdr(&iw, SQK_T_FILE, 0644, 1);
	uint8_t fb[16];
	put_le32(fb, (uint32_t)fstart);
	put_le32(fb + 4, SQK_NONE32);
	put_le32(fb + 8, 0);
	put_le32(fb + 12, fsize);
	meta_writer_append(&iw, fb, 16);
	for (uint32_t i = 0; i < nb && i < 2; i++) {
		put_le32(w, i == 0 ? BS | SQK_BLOCK_RAW : (uint32_t)zn);
		meta_writer_append(&iw, w, 4);
	}
	uint64_t tref = meta_writer_ref(&iw);
	put_inode_hdr(&iw, SQK_T_FILE, 0600, 2);
	put_le32(fb, 0);
	put_le32(fb + 4, c->t_frag);
	put_le32(fb + 8, 4);
	put_le32(fb + 12, 4);
	meta_writer_append(&iw, fb, 16);
	uint64_t rref = meta_writer_ref(&iw);
	/* listing */
	if (c->nent) {
		put_run(&dir, c->nent, 1);
		for (uint32_t i = 0; i < c->nent; i++) {
			char n[16];
			snprintf(n, sizeof(n), "e%04u", i);
			put_entry(&dir, 0, 0, SQK_T_FILE, n);
		}
	}
	put_run(&dir, c->loop ? 3 : 2, 1);
	put_entry(&dir, 0, 0, SQK_T_FILE, "f");
	if (c->loop)
		put_entry(&dir, (uint16_t)rref, 2, SQK_T_DIR, "loop");
	put_entry(&dir, (uint16_t)tref, 1, SQK_T_FILE, "t");
	put_inode_hdr(&iw, SQK_T_DIR, 0755, 3);
	put_le32(fb, 0);
	put_le32(fb + 4, 2);
	put_le16(fb + 8, (uint16_t)(dir.len + 3));
	put_le16(fb + 10, 0);
	put_le32(fb + 12, 4);
	meta_writer_append(&iw, fb, 16);
	ck_assert_int_eq(meta_writer_finish(&iw), 0);
	sb.root_inode = rref;
	sb.inode_table_start = img.len;
	put(&img, iw.out, iw.out_len);
	meta_writer_free(&iw);
	sb.directory_table_start = img.len;
	struct meta_writer dw;
	meta_writer_init(&dw, NULL);
	meta_writer_append(&dw, dir.p, dir.len);
	ck_assert_int_eq(meta_writer_finish(&dw), 0);
	put(&img, dw.out, dw.out_len);
	meta_writer_free(&dw);
	free(dir.p);
	/* fragment table: one entry, id table: one id */
	uint8_t fe[16];
	struct frag_entry fent = { .start = fragpos, .size = 8 | SQK_BLOCK_RAW };
	frag_entry_encode(&fent, fe);
	put_meta_table(&img, fe, 16, &sb.fragment_table_start);
	sb.fragment_count = c->frag_count ? c->frag_count : 1;
	put_le32(w, 0);
	put_meta_table(&img, w, 4, &sb.id_table_start);
	sb.id_count = (uint16_t)(c->id_count ? c->id_count : 1);
	if (c->xattr_count) {
		uint8_t xh[16];
		struct xattr_header h = { .kv_start = sb.id_table_start,
					      .count = c->xattr_count };
		sb.xattr_id_table_start = img.len;
		xattr_header_encode(&h, xh);
		put(&img, xh, 16);
		put(&img, fe, 8);
	}
	sb.bytes_used = img.len;
	if (c->id_past_end)
		put_le64(img.p + sb.id_table_start, sb.bytes_used + 100);
	super_encode(&sb, img.p);
	size_t padded = (img.len + SQK_PAD - 1) / SQK_PAD * SQK_PAD;
	img.p = realloc(img.p, padded);
	memset(img.p + img.len, 0, padded - img.len);
	compressor_destroy(z);
	*len = padded;
	return img.p;
}

static int craft_open(const struct craft *c, struct sqk_io **io, struct sqk_image **img,
		      uint8_t **data)
{
	size_t len;
	struct sqk_open_opts o = { .size = sizeof(o), .log = log_cb, .name = "crafted" };
	*data = craft_image(c, &len);
	ck_assert_int_eq(sqk_io_mem_create(*data, len, io), 0);
	logbuf[0] = 0;
	return sqk_image_open_io(*io, &o, img);
}

static void craft_close(struct sqk_io *io, struct sqk_image *img, uint8_t *data)
{
	sqk_image_close(img);
	sqk_io_destroy(io);
	free(data);
}

START_TEST(test_crafted_ok)
{
	struct craft c = { .nent = 256, .loop = true };
	struct sqk_io *io;
	struct sqk_image *img;
	uint8_t *data, buf[2 * BS];
	struct sqk_inode f, t;
	ck_assert_int_eq(craft_open(&c, &io, &img, &data), 0);
	ck_assert_int_eq(sqk_lookup_path(img, "t", &t), 0);
	ck_assert_int_eq(sqk_read(img, &t, buf, 100, 0), 4);
	ck_assert_int_eq(memcmp(buf, "tail", 4), 0);
	ck_assert_int_eq(sqk_lookup_path(img, "e0255", &f), 0);
	ck_assert_int_eq(sqk_read(img, &f, buf, sizeof(buf), 0), (ssize_t)sizeof(buf));
	/* a path through a directory that contains itself terminates */
	char path[4096] = "";
	for (int i = 0; i < 500; i++)
		strcat(path, "loop/");
	strcat(path, "f");
	ck_assert_int_eq(sqk_lookup_path(img, path, &f), 0);
	craft_close(io, img, data);
}
END_TEST

START_TEST(test_crafted_corrupt)
{
	struct sqk_io *io;
	struct sqk_image *img;
	uint8_t *data, buf[2 * BS];
	struct sqk_inode in;
	struct craft c;

	/* a data block that decompresses one byte short */
	c = (struct craft){ .short_block = true };
	ck_assert_int_eq(craft_open(&c, &io, &img, &data), 0);
	ck_assert_int_eq(sqk_lookup_path(img, "f", &in), 0);
	ck_assert_int_eq(sqk_read(img, &in, buf, BS, 0), BS);
	ck_assert_int_eq(sqk_read(img, &in, buf, 10, BS), SQK_EDECOMPRESS);
	ck_assert_ptr_nonnull(strstr(logbuf, "crafted"));
	ck_assert_ptr_nonnull(strstr(logbuf, "offset"));
	ck_assert_int_eq(sqk_read(img, &in, buf, 2 * BS, 0), SQK_EDECOMPRESS);
	craft_close(io, img, data);

	/* out-of-range fragment index */
	c = (struct craft){ .t_frag = 5 };
	ck_assert_int_eq(craft_open(&c, &io, &img, &data), 0);
	ck_assert_int_eq(sqk_lookup_path(img, "t", &in), SQK_ECORRUPT);
	craft_close(io, img, data);

	/* a run of 257 entries */
	c = (struct craft){ .nent = 257 };
	ck_assert_int_eq(craft_open(&c, &io, &img, &data), 0);
	ck_assert_int_eq(sqk_lookup_path(img, "f", &in), SQK_ECORRUPT);
	craft_close(io, img, data);

	/* huge file size with a tiny inode table */
	c = (struct craft){ .fsize = 0xFFFFF000u };
	ck_assert_int_eq(craft_open(&c, &io, &img, &data), 0);
	ck_assert_int_eq(sqk_lookup_path(img, "f", &in), SQK_ECORRUPT);
	craft_close(io, img, data);

	/* counts needing far more bytes than the image has */
	c = (struct craft){ .frag_count = 0xFFFFFFFFu };
	ck_assert_int_eq(craft_open(&c, &io, &img, &data), SQK_ECORRUPT);
	free(data);
	sqk_io_destroy(io);
	c = (struct craft){ .id_count = 65535 };
	ck_assert_int_eq(craft_open(&c, &io, &img, &data), SQK_ECORRUPT);
	free(data);
	sqk_io_destroy(io);
	c = (struct craft){ .xattr_count = 0xFFFFFFFFu };
	ck_assert_int_eq(craft_open(&c, &io, &img, &data), SQK_ECORRUPT);
	free(data);
	sqk_io_destroy(io);
	c = (struct craft){ .xattr_count = 1 };
	ck_assert_int_eq(craft_open(&c, &io, &img, &data), SQK_ECORRUPT); /* kv_start too big */
	free(data);
	sqk_io_destroy(io);

	/* a table index entry past bytes_used */
	c = (struct craft){ .id_past_end = true };
	ck_assert_int_eq(craft_open(&c, &io, &img, &data), SQK_ECORRUPT);
	free(data);
	sqk_io_destroy(io);
}
END_TEST

/* Superblock fields the kernel rejects; every one fails cleanly. */
START_TEST(test_bad_super)
{
	struct craft c = { 0 };
	size_t len;
	uint8_t *orig = craft_image(&c, &len);
	struct {
		size_t off, size;
		uint64_t val;
		int err;
	} cases[] = {
		{ 0, 4, 0x12345678, SQK_ENOTSQFS },   { 28, 2, 3, SQK_EVERSION },
		{ 12, 4, 8192, SQK_ECORRUPT },        { 12, 4, 2048, SQK_ECORRUPT },
		{ 20, 2, 2, SQK_EUNSUPPORTED },       { 20, 2, 0, SQK_EUNSUPPORTED },
		{ 20, 2, 9, SQK_EUNSUPPORTED },       { 24, 2, 4, SQK_EUNSUPPORTED },
		{ 40, 8, 1u << 20, SQK_ETRUNCATED },  { 48, 8, 1u << 30, SQK_ECORRUPT },
		{ 64, 8, 1u << 30, SQK_ECORRUPT },    { 20, 2, 5, SQK_ECORRUPT },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint8_t *d = malloc(len);
		struct sqk_io *io;
		struct sqk_image *img = NULL;
		memcpy(d, orig, len);
		if (cases[i].size == 2)
			put_le16(d + cases[i].off, (uint16_t)cases[i].val);
		else if (cases[i].size == 4)
			put_le32(d + cases[i].off, (uint32_t)cases[i].val);
		else
			put_le64(d + cases[i].off, cases[i].val);
		ck_assert_int_eq(sqk_io_mem_create(d, len, &io), 0);
		int rc = sqk_image_open_io(io, NULL, &img);
		ck_assert_msg(rc == cases[i].err, "case %zu: %d", i, rc);
		ck_assert_ptr_null(img);
		sqk_io_destroy(io);
		free(d);
	}
	free(orig);
}
END_TEST

/* Every byte of a small crafted image flipped in turn: no crash, no hang. */
START_TEST(test_byte_flips)
{
	struct craft c = { .nent = 3, .loop = true };
	size_t len;
	uint8_t *orig = craft_image(&c, &len);
	uint8_t *d = malloc(len), buf[3 * BS];
	for (size_t i = 0; i < len; i++) {
		struct sqk_io *io;
		struct sqk_image *img;
		struct sqk_inode in;
		memcpy(d, orig, len);
		d[i] ^= 0x5A;
		ck_assert_int_eq(sqk_io_mem_create(d, len, &io), 0);
		if (sqk_image_open_io(io, NULL, &img) == 0) {
			const char *paths[] = { "f", "t", "e0001", "loop/loop/t" };
			for (int p = 0; p < 4; p++) {
				int rc = sqk_lookup_path(img, paths[p], &in);
				ssize_t n;

				/* a flipped byte gives a corruption error or a full read (the
				 * flip may be in data no check covers), never a crash or a short
				 * or overlong count */
				ck_assert(rc == 0 || rc == SQK_ECORRUPT || rc == SQK_ENOENT ||
					  rc == SQK_EBOUNDS || rc == SQK_EDECOMPRESS ||
					  rc == SQK_EUNSUPPORTED || rc == SQK_ETOOBIG);
				if (rc || sqk_basic_type(in.type) != SQK_T_FILE)
					continue;
				n = sqk_read(img, &in, buf, sizeof(buf), 0);
				ck_assert(n >= 0 || n == SQK_ECORRUPT || n == SQK_EDECOMPRESS ||
					  n == SQK_EBOUNDS || n == SQK_EUNSUPPORTED);
				ck_assert(n < 0 ||
					  (uint64_t)n ==
					      (in.size < sizeof(buf) ? in.size : sizeof(buf)));
			}
			sqk_image_close(img);
		}
		sqk_io_destroy(io);
	}
	free(d);
	free(orig);
}
END_TEST

static Suite *reader_suite(void)
{
	Suite *s = suite_create("reader");
	TCase *tc = tcase_create("tree");
	tcase_set_timeout(tc, 120);
	tcase_add_unchecked_fixture(tc, setup_tree, teardown_tree);
	tcase_add_test(tc, test_round_trip);
	tcase_add_test(tc, test_counters);
	tcase_add_test(tc, test_prefetch);
	tcase_add_test(tc, test_read_aside);
	tcase_add_test(tc, test_read_stream);
	tcase_add_test(tc, test_concurrent);
	tcase_add_test(tc, test_open_offset);
	tcase_add_test(tc, test_info);
	tcase_add_test(tc, test_root_hash);
	suite_add_tcase(s, tc);
	TCase *tk = tcase_create("crafted");
	tcase_set_timeout(tk, 120);
	tcase_add_test(tk, test_crafted_ok);
	tcase_add_test(tk, test_crafted_corrupt);
	tcase_add_test(tk, test_bad_super);
	tcase_add_test(tk, test_byte_flips);
	tcase_add_test(tk, test_info_empty);
	suite_add_tcase(s, tk);
	return s;
}

int main(void)
{
	return test_run_suite(reader_suite());
}
