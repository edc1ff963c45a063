/* SPDX-License-Identifier: BSD-2-Clause */
/* The inode body codec (common/inode_codec.c) against fixtures written by hand from the format
 * brief (SQUASHFS-FORMAT §7, little-endian field by field), for all 14 types with fields at
 * their limits: encode gives exactly these bytes, decode gives back exactly these fields, and the
 * fixed sizes match the brief's table. */
#include <check.h>
#include <string.h>

#include "common/format.h"
#include "common/inode_codec.h"
#include "testutil.h"

#define NONE32 0xFFFFFFFFu

struct fixture {
	uint16_t type;
	struct inode_body b;
	size_t len;
	uint8_t bytes[40];
	size_t full;    /* the brief's inode size without variable parts (§7.1 table) */
};

static const struct fixture fx[] = {
	{ SQK_T_DIR, { .dir_block = 0x11223344, .nlink = NONE32, .size = 0xFFFF, .dir_offset = 8191,
		       .parent = 0xA1B2C3D4 }, 16,
	  { 0x44, 0x33, 0x22, 0x11, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x1F, 0xD4, 0xC3,
	    0xB2, 0xA1 }, 32 },
	{ SQK_T_LDIR, { .nlink = NONE32, .size = NONE32, .dir_block = 0x11223344,
			.parent = 0xA1B2C3D4, .index_count = 0xFFFF, .dir_offset = 8191,
			.xattr_idx = 0xFFFFFFFE }, 24,
	  { 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x44, 0x33, 0x22, 0x11, 0xD4, 0xC3,
	    0xB2, 0xA1, 0xFF, 0xFF, 0xFF, 0x1F, 0xFE, 0xFF, 0xFF, 0xFF }, 40 },
	{ SQK_T_FILE, { .blocks_start = NONE32, .frag_index = NONE32, .frag_offset = 0x12345678,
			.size = NONE32, .nlink = 1 }, 16,
	  { 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x78, 0x56, 0x34, 0x12, 0xFF, 0xFF,
	    0xFF, 0xFF }, 32 },
	{ SQK_T_LFILE, { .blocks_start = 0x0102030405060708ull, .size = 0x7FFFFFFFFFFFFFFFull,
			 .sparse = 0x1122334455667788ull, .nlink = NONE32, .frag_index = 7,
			 .frag_offset = 0x1FFFF, .xattr_idx = 0 }, 40,
	  { 0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
	    0xFF, 0x7F, 0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11, 0xFF, 0xFF, 0xFF, 0xFF,
	    0x07, 0x00, 0x00, 0x00, 0xFF, 0xFF, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00 }, 56 },
	{ SQK_T_SYMLINK, { .nlink = 1, .size = 4096 }, 8,
	  { 0x01, 0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0x00 }, 24 },
	/* the xattr index of an extended symlink follows its target: not part of the body */
	{ SQK_T_LSYMLINK, { .nlink = 0x10000, .size = 1 }, 8,
	  { 0x00, 0x00, 0x01, 0x00, 0x01, 0x00, 0x00, 0x00 }, 24 },
	/* rdev of 300:70000 in the kernel's "new" encoding (§7.5) */
	{ SQK_T_BLKDEV, { .nlink = 2, .rdev = 0x11112C70 }, 8,
	  { 0x02, 0x00, 0x00, 0x00, 0x70, 0x2C, 0x11, 0x11 }, 24 },
	{ SQK_T_CHRDEV, { .nlink = 1, .rdev = NONE32 }, 8,
	  { 0x01, 0x00, 0x00, 0x00, 0xFF, 0xFF, 0xFF, 0xFF }, 24 },
	{ SQK_T_FIFO, { .nlink = NONE32 }, 4, { 0xFF, 0xFF, 0xFF, 0xFF }, 20 },
	{ SQK_T_SOCKET, { .nlink = 1 }, 4, { 0x01, 0x00, 0x00, 0x00 }, 20 },
	{ SQK_T_LBLKDEV, { .nlink = 3, .rdev = 0xFFFF, .xattr_idx = 5 }, 12,
	  { 0x03, 0x00, 0x00, 0x00, 0xFF, 0xFF, 0x00, 0x00, 0x05, 0x00, 0x00, 0x00 }, 28 },
	{ SQK_T_LCHRDEV, { .nlink = 1, .rdev = 0, .xattr_idx = 0xFFFFFFFE }, 12,
	  { 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xFE, 0xFF, 0xFF, 0xFF }, 28 },
	{ SQK_T_LFIFO, { .nlink = 2, .xattr_idx = 9 }, 8,
	  { 0x02, 0x00, 0x00, 0x00, 0x09, 0x00, 0x00, 0x00 }, 24 },
	{ SQK_T_LSOCKET, { .nlink = 0x01020304, .xattr_idx = 0xFFFFFFFE }, 8,
	  { 0x04, 0x03, 0x02, 0x01, 0xFE, 0xFF, 0xFF, 0xFF }, 24 },
};

#define NFX (sizeof(fx) / sizeof(fx[0]))

START_TEST(test_sizes)
{
	for (size_t i = 0; i < NFX; i++) {
		size_t extra = fx[i].type == SQK_T_LSYMLINK ? 4 : 0; /* xattr after the target */

		ck_assert_uint_eq(inode_body_size(fx[i].type), fx[i].len);
		ck_assert_uint_eq(SQK_INODE_HEADER_SIZE + fx[i].len + extra,
				  fx[i].full + (fx[i].type == SQK_T_LSYMLINK ? 4 : 0));
	}
	ck_assert_uint_eq(inode_body_size(0), 0);
	ck_assert_uint_eq(inode_body_size(15), 0);
}
END_TEST

START_TEST(test_encode)
{
	const struct fixture *f = &fx[_i];
	uint8_t out[48];

	memset(out, 0xAA, sizeof(out));
	inode_body_encode(f->type, &f->b, out);
	ck_assert_mem_eq(out, f->bytes, f->len);
	ck_assert_uint_eq(out[f->len], 0xAA); /* nothing written past the body */
}
END_TEST

START_TEST(test_decode)
{
	const struct fixture *f = &fx[_i];
	struct inode_body b;

	memset(&b, 0, sizeof(b));
	inode_body_decode(f->type, f->bytes, &b);
	ck_assert_uint_eq(b.nlink, f->b.nlink);
	ck_assert_uint_eq(b.size, f->b.size);
	ck_assert_uint_eq(b.blocks_start, f->b.blocks_start);
	ck_assert_uint_eq(b.frag_index, f->b.frag_index);
	ck_assert_uint_eq(b.frag_offset, f->b.frag_offset);
	ck_assert_uint_eq(b.sparse, f->b.sparse);
	ck_assert_uint_eq(b.dir_block, f->b.dir_block);
	ck_assert_uint_eq(b.dir_offset, f->b.dir_offset);
	ck_assert_uint_eq(b.parent, f->b.parent);
	ck_assert_uint_eq(b.index_count, f->b.index_count);
	ck_assert_uint_eq(b.rdev, f->b.rdev);
	ck_assert_uint_eq(b.xattr_idx, f->b.xattr_idx);
}
END_TEST

static Suite *codec_suite(void)
{
	Suite *s = suite_create("inode codec");
	TCase *tc = tcase_create("fixtures");

	tcase_add_test(tc, test_sizes);
	tcase_add_loop_test(tc, test_encode, 0, (int)NFX);
	tcase_add_loop_test(tc, test_decode, 0, (int)NFX);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return test_run_suite(codec_suite());
}
