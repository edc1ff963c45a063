/* SPDX-License-Identifier: BSD-2-Clause */
/* Check suite for the builder: options parsing, a build into memory through sqk_build and the
 * I/O vtable (superblock, root inode and root listing decoded back), byte-identical output for
 * any thread count, and write/sync failures injected with the fault double at many points of
 * the build; the spill store and the external sort of entry records (runs.c). */
#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/endian.h"
#include "sqk/error.h"
#include "common/format.h"
#include "sqk/io.h"
#include "common/meta.h"
#include "mkimage/mk.h"
#include "mkimage/spill.h"
#include "mkimage/runs.h"
#include "mkimage/source.h"
#include "mkimage/build.h"
#include "testutil.h"

static char tree[64];

static void write_file(const char *rel, const void *data, size_t len)
{
	char p[256];
	snprintf(p, sizeof(p), "%s/%s", tree, rel);
	FILE *f = fopen(p, "wb");
	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fwrite(data, 1, len, f), len);
	fclose(f);
}

/* a.txt, big.bin (300 KiB text), dup.bin (same), sub/c.txt, link -> a.txt, hard = a.txt */
static void make_tree(void)
{
	char p[256];
	strcpy(tree, "/tmp/sqk-unit-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tree));
	write_file("a.txt", "hello\n", 6);
	size_t n = 300 * 1024;
	char *big = malloc(n);
	for (size_t i = 0; i < n; i++)
		big[i] = (char)('a' + (i * 7 + i / 100) % 26);
	write_file("big.bin", big, n);
	write_file("dup.bin", big, n);
	free(big);
	snprintf(p, sizeof(p), "%s/sub", tree);
	ck_assert_int_eq(mkdir(p, 0755), 0);
	write_file("sub/c.txt", "third file\n", 11);
	snprintf(p, sizeof(p), "%s/link", tree);
	ck_assert_int_eq(symlink("a.txt", p), 0);
	char q[256];
	snprintf(q, sizeof(q), "%s/a.txt", tree);
	snprintf(p, sizeof(p), "%s/hard", tree);
	ck_assert_int_eq(link(q, p), 0);
}

static void remove_tree(void)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tree);
	ck_assert_int_eq(system(cmd), 0);
}

/* The options of these builds: quiet, threads as given, the tree as the one source. */
static void setup(struct sqk_build_opts *o, struct sqk_build_source *s, const char *threads)
{
	static char *sources[1];
	sqk_build_opts_init(o);
	o->quiet = true;
	o->threads = atoi(threads);
	o->image = "/nonexistent/x.sqsh";
	sources[0] = tree;
	sqk_build_source_init(s, SQK_BUILD_DIRS);
	s->sources = sources;
	s->nsources = 1;
}

/* Builds the tree through sqk_build into *mem (wrapped in a fault double when fault != NULL). */
static int build(const char *threads, struct sqk_io **mem, struct sqk_io **fault,
		 enum sqk_io_fault_op op, unsigned countdown, struct sqk_super *sb, char *msg)
{
	struct sqk_build_opts o;
	struct sqk_build_source s;
	struct sqk_build_result r;
	setup(&o, &s, threads);
	sqk_build_result_init(&r);
	ck_assert_int_eq(sqk_io_mem_create(NULL, 0, mem), 0);
	if (fault) {
		ck_assert_int_eq(sqk_io_fault_create(*mem, fault), 0);
		if (countdown != ~0u)
			sqk_io_fault_arm(*fault, op, countdown, SQK_ENOSPC);
	}
	int err = sqk_build(&o, &s, fault ? *fault : *mem, &r);
	if (msg)
		snprintf(msg, 1024, "%s", r.msg);
	if (sb)
		*sb = r.super;
	return err;
}

/* Reads the metadata block at absolute pos of img and returns its decoded bytes. */
static size_t meta_at(const uint8_t *img, size_t len, uint64_t pos, uint8_t *out)
{
	struct sqk_comp_config cfg = { .id = SQK_COMP_ZSTD, .block_size = 131072 };
	struct compressor *z;
	size_t used;
	ck_assert_int_eq(compressor_create(&cfg, &z), 0);
	ck_assert_uint_lt(pos, len);
	ssize_t n = meta_decode_block(z, img + pos, len - pos, out, 0, &used);
	compressor_destroy(z);
	ck_assert_int_gt(n, 0);
	return (size_t)n;
}

START_TEST(test_build_in_memory)
{
	struct sqk_io *mem;
	struct sqk_super sb, disk;
	make_tree();
	char msg[1024];
	int berr = build("2", &mem, NULL, 0, 0, &sb, msg);
	ck_assert_msg(berr == 0, "build: %d %s", berr, msg);
	size_t len;
	const uint8_t *img = sqk_io_mem_data(mem, &len);
	ck_assert_uint_eq(len % SQK_PAD, 0);
	super_decode(img, &disk);
	ck_assert_uint_eq(disk.magic, SQK_MAGIC);
	ck_assert_uint_eq(disk.version_major, 4);
	ck_assert_uint_eq(disk.block_size, 131072);
	ck_assert_uint_eq(disk.block_log, 17);
	ck_assert_uint_eq(disk.compressor, SQK_COMP_ZSTD);
	ck_assert_uint_eq(disk.bytes_used, sb.bytes_used);
	ck_assert_uint_le(disk.bytes_used, len);
	/* the padded image, then the integrity data (checked in test_integrity.c) */
	ck_assert_uint_gt(len, (disk.bytes_used + SQK_PAD - 1) / SQK_PAD * SQK_PAD);
	ck_assert_int_eq(memcmp(img + len - 8, SQK_INTEG_MAGIC, 8), 0);
	/* root, a.txt(=hard), big.bin, dup.bin, link, sub, sub/c.txt */
	ck_assert_uint_eq(disk.inode_count, 7);
	ck_assert_uint_eq(disk.flags & SQK_FLAG_DUPLICATES, SQK_FLAG_DUPLICATES);

	uint8_t blk[SQK_META_SIZE];
	size_t n = meta_at(img, len, disk.inode_table_start + (disk.root_inode >> 16), blk);
	size_t off = disk.root_inode & 0xFFFF;
	ck_assert_uint_le(off + 32, n);
	struct inode_header h;
	inode_header_decode(blk + off, &h);
	ck_assert_uint_eq(h.type, SQK_T_DIR);
	ck_assert_uint_eq(h.inode_number, 1);
	uint32_t start = get_le32(blk + off + 16);
	uint16_t size = get_le16(blk + off + 24), doff = get_le16(blk + off + 26);

	/* The root listing: one run, names sorted, a.txt and hard share an inode number. */
	uint8_t dir[SQK_META_SIZE];
	size_t dn = meta_at(img, len, disk.directory_table_start + start, dir);
	ck_assert_uint_le(doff + size - 3, dn);
	struct dir_header dh;
	dir_header_decode(dir + doff, &dh);
	ck_assert_uint_eq(dh.count + 1, 6);
	const char *want[] = { "a.txt", "big.bin", "dup.bin", "hard", "link", "sub" };
	size_t p = doff + SQK_DIR_HEADER_SIZE;
	uint32_t ino[6];
	for (int i = 0; i < 6; i++) {
		struct dir_entry e;
		dir_entry_decode(dir + p, &e);
		ck_assert_uint_eq(e.name_size + 1, strlen(want[i]));
		ck_assert_int_eq(memcmp(dir + p + 8, want[i], strlen(want[i])), 0);
		ino[i] = (uint32_t)((int64_t)dh.inode_number + e.inode_delta);
		p += 8 + e.name_size + 1u;
	}
	ck_assert_uint_eq(p - doff, (size_t)size - 3);
	ck_assert_uint_eq(ino[0], ino[3]);
	ck_assert_uint_ne(ino[1], ino[2]);
	sqk_io_destroy(mem);
	remove_tree();
}
END_TEST

START_TEST(test_same_bytes_any_threads)
{
	struct sqk_io *m1, *m2;
	struct sqk_super s1, s2;
	make_tree();
	ck_assert_int_eq(build("1", &m1, NULL, 0, 0, &s1, NULL), 0);
	ck_assert_int_eq(build("5", &m2, NULL, 0, 0, &s2, NULL), 0);
	size_t l1, l2;
	const uint8_t *a = sqk_io_mem_data(m1, &l1), *b = sqk_io_mem_data(m2, &l2);
	ck_assert_uint_eq(l1, l2);
	ck_assert_int_eq(memcmp(a, b, l1), 0);
	sqk_io_destroy(m1);
	sqk_io_destroy(m2);
	remove_tree();
}
END_TEST

/* Every write of the build, failed in turn (sampled), fails the build with the offset named. */
START_TEST(test_write_faults)
{
	struct sqk_io *mem, *fault;
	struct sqk_super sb;
	char msg[1024];
	make_tree();
	ck_assert_int_eq(build("2", &mem, &fault, SQK_FAULT_WRITE, ~0u, &sb, NULL), 0);
	unsigned writes = sqk_io_fault_calls(fault, SQK_FAULT_WRITE);
	ck_assert_uint_gt(writes, 5);
	sqk_io_destroy(fault);
	sqk_io_destroy(mem);
	unsigned step = writes / 40 ? writes / 40 : 1;
	for (unsigned k = 0; k < writes; k += step) {
		int err = build("2", &mem, &fault, SQK_FAULT_WRITE, k, &sb, msg);
		ck_assert_msg(err == SQK_ENOSPC, "write %u of %u: got %d", k, writes, err);
		ck_assert_msg(strstr(msg, "offset") || strstr(msg, "superblock"), "message: %s",
			      msg);
		ck_assert_ptr_nonnull(strstr(msg, "no space left"));
		sqk_io_destroy(fault);
		sqk_io_destroy(mem);
	}
	ck_assert_int_eq(build("2", &mem, &fault, SQK_FAULT_SYNC, 0, &sb, msg), SQK_ENOSPC);
	ck_assert_ptr_nonnull(strstr(msg, "flush"));
	sqk_io_destroy(fault);
	sqk_io_destroy(mem);
	remove_tree();
}
END_TEST

/* The store behind tails, digests and directory entries: memory up to its budget, then the
 * temporary file; every ref reads back its bytes; after a reset, memory again. */
START_TEST(test_store_spill_reset)
{
	struct sqk_build_opts o;
	struct sqk_build_source src;
	struct mk_ctx c;
	struct mk_spill *t;
	uint8_t a[40], b[40], back[40];
	uint64_t ra, rb, rc;
	memset(a, 'a', sizeof(a));
	memset(b, 'b', sizeof(b));
	setup(&o, &src, "1");
	ck_assert_int_eq(mk_ctx_init(&c, &o, &src), 0);
	ck_assert_int_eq(mk_spill_create(&c, "test bytes", 64, &t), 0);
	ck_assert_int_eq(mk_spill_put(&c, t, a, sizeof(a), &ra), 0);
	ck_assert_int_eq(mk_spill_put(&c, t, b, sizeof(b), &rb), 0); /* over 64: the file */
	ck_assert_int_eq(mk_spill_put(&c, t, a, 8, &rc), 0);          /* fits, but after a spill */
	ck_assert_uint_lt(ra, 64);
	ck_assert_uint_ge(rb, 64);
	ck_assert_uint_ge(rc, 64);
	ck_assert_int_eq(mk_spill_get(&c, t, rb, back, sizeof(b)), 0);
	ck_assert_mem_eq(back, b, sizeof(b));
	ck_assert_int_eq(mk_spill_get(&c, t, ra, back, sizeof(a)), 0);
	ck_assert_mem_eq(back, a, sizeof(a));
	mk_spill_reset(t);
	ck_assert_int_eq(mk_spill_put(&c, t, b, sizeof(b), &ra), 0);
	ck_assert_uint_lt(ra, 64); /* memory again */
	for (int i = 0; i < 4000; i++) /* then past the write buffer: read back from the file */
		ck_assert_int_eq(mk_spill_put(&c, t, a, sizeof(a), &rb), 0);
	ck_assert_int_eq(mk_spill_get(&c, t, ra, back, sizeof(b)), 0);
	ck_assert_mem_eq(back, b, sizeof(b));
	ck_assert_int_eq(mk_spill_get(&c, t, rb, back, sizeof(a)), 0);
	ck_assert_mem_eq(back, a, sizeof(a));
	mk_spill_destroy(t);
	mk_ctx_free(&c);
}
END_TEST

/* The external sort of entry records: 20,000 records in random order (names repeated, in 50
 * directories, symlink targets up to the longest) with a 4 KiB budget go out as many runs and
 * come back every one, once, sorted by directory, name (unsigned bytes, shorter first) and
 * sequence, with their bytes intact; with a budget that holds them all, the same without a
 * run written. */
static void runs_round(size_t budget, bool expect_runs)
{
	struct sqk_build_opts o;
	struct sqk_build_source src;
	struct mk_ctx c;
	struct mk_runs *s;
	uint64_t rng = 19, sum = 0, back = 0;
	static char target[SQK_SYMLINK_MAX];
	memset(target, 't', sizeof(target));
	setup(&o, &src, "1");
	ck_assert_int_eq(mk_ctx_init(&c, &o, &src), 0);
	ck_assert_int_eq(mk_runs_create(&c, budget, &s), 0);
	for (uint64_t i = 0; i < 20000; i++) {
		char name[32];
		uint64_t x = test_xorshift(&rng);
		int nl = snprintf(name, sizeof(name), "%c%llu", 'a' + (int)(x % 3),
				  (unsigned long long)(x >> 8) % 3000);
		struct mk_srec r = { .dir = (uint32_t)((x >> 20) % 50), .seq = i, .name = name,
				     .target = target };
		r.r.name_len = (uint16_t)nl;
		r.r.mode = S_IFLNK | 0777;
		r.r.ref = (uint32_t)i; /* identifies it when it comes back */
		r.r.target_len = (uint16_t)(i % 97 ? i % 300 : SQK_SYMLINK_MAX);
		sum += i * 7 + r.r.target_len;
		ck_assert_int_eq(mk_runs_put(&c, s, &r), 0);
	}
	ck_assert_int_eq(mk_runs_merge(&c, s), 0);
	size_t nruns;
	ck_assert_uint_eq(mk_runs_count(s, &nruns), 20000);
	if (expect_runs)
		ck_assert_uint_gt(nruns, 100);
	else
		ck_assert_uint_eq(nruns, 0);
	struct mk_srec prev = { 0 };
	char pname[32];
	size_t n = 0;
	for (const struct mk_srec *r; (r = mk_runs_peek(s)); n++) {
		ck_assert_uint_eq(r->seq, r->r.ref);
		ck_assert_uint_eq(r->r.target_len, r->seq % 97 ? r->seq % 300 : SQK_SYMLINK_MAX);
		ck_assert_mem_eq(r->target, target, r->r.target_len);
		if (n) {
			int cmp = prev.dir != r->dir ? (prev.dir < r->dir ? -1 : 1) :
				  dir_name_cmp(pname, prev.r.name_len, r->name, r->r.name_len);
			ck_assert_msg(cmp < 0 || (cmp == 0 && prev.seq < r->seq),
				      "record %zu out of order", n);
		}
		prev = *r;
		memcpy(pname, r->name, r->r.name_len);
		back += r->seq * 7 + r->r.target_len;
		ck_assert_int_eq(mk_runs_pop(&c, s), 0);
	}
	ck_assert_uint_eq(n, 20000);
	ck_assert_uint_eq(back, sum);
	mk_runs_destroy(s);
	mk_ctx_free(&c);
}

START_TEST(test_runs_merge)
{
	runs_round(4096, true);
	runs_round(64u << 20, false);
}
END_TEST

static Suite *mkimage_suite(void)
{
	Suite *s = suite_create("mkimage");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_build_in_memory);
	tcase_add_test(tc, test_same_bytes_any_threads);
	tcase_add_test(tc, test_write_faults);
	tcase_add_test(tc, test_store_spill_reset);
	tcase_add_test(tc, test_runs_merge);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return test_run_suite(mkimage_suite());
}
