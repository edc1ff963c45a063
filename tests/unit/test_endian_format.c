/* SPDX-License-Identifier: BSD-2-Clause */
/* Unit tests for common/endian.h and common/format.c: little-endian helpers, every on-disk
 * structure's encode/decode, a superblock made by mksquashfs 4.5.1, and device numbers. */
#include <check.h>
#include <errno.h>
#include <error.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "common/endian.h"
#include "sqk/error.h"
#include "common/format.h"
#include "common/integrity.h"
#include "testutil.h"

/* The project's headers are included by their repo-relative paths with -I. only: the system's
 * <endian.h> (through <sys/types.h>) and <error.h> are not shadowed by common/endian.h and
 * sqk/error.h. */
#if !defined(BYTE_ORDER) || !defined(LITTLE_ENDIAN)
#error "<sys/types.h> lost BYTE_ORDER: common/endian.h shadows <endian.h>"
#endif
START_TEST(test_system_headers)
{
	ck_assert_ptr_nonnull(&error_message_count); /* glibc's <error.h> */
	ck_assert(BYTE_ORDER == LITTLE_ENDIAN || BYTE_ORDER == BIG_ENDIAN);
}
END_TEST

/* `mksquashfs sbsrc sb.sqfs -comp gzip -mkfs-time 1700000000 -all-time 1700000000 -all-root`
 * on a tree of a file and a directory holding one file (squashfs-tools 4.5.1). */
static const uint8_t mksquashfs_super[SQK_SUPER_SIZE] = {
	0x68, 0x73, 0x71, 0x73, 0x04, 0x00, 0x00, 0x00, 0x00, 0xf1, 0x53, 0x65,
	0x00, 0x00, 0x02, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x00, 0x11, 0x00,
	0xc0, 0x00, 0x01, 0x00, 0x04, 0x00, 0x00, 0x00, 0x60, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x0f, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x07, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xff, 0xff, 0xff, 0xff,
	0xff, 0xff, 0xff, 0xff, 0x6c, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0xa7, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xdc, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0xf9, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
};

START_TEST(test_le_byte_order)
{
	uint8_t b[16];

	memset(b, 0xEE, sizeof(b));
	put_le16(b + 1, 0x0102);
	ck_assert_uint_eq(b[0], 0xEE);
	ck_assert_uint_eq(b[1], 0x02);
	ck_assert_uint_eq(b[2], 0x01);
	ck_assert_uint_eq(b[3], 0xEE);
	put_le32(b + 3, 0x0A0B0C0Du);
	ck_assert_mem_eq(b + 3, "\x0D\x0C\x0B\x0A", 4);
	ck_assert_uint_eq(b[7], 0xEE);
	put_le64(b + 5, 0x0102030405060708ull);
	ck_assert_mem_eq(b + 5, "\x08\x07\x06\x05\x04\x03\x02\x01", 8);
	ck_assert_uint_eq(b[13], 0xEE);
	ck_assert_uint_eq(get_le16("\x34\x12"), 0x1234);
	ck_assert_uint_eq(get_le32("\x78\x56\x34\x12"), 0x12345678u);
	ck_assert_uint_eq(get_le64("\xEF\xCD\xAB\x89\x67\x45\x23\x01"), 0x0123456789ABCDEFull);
}
END_TEST

START_TEST(test_le_round_trip_unaligned)
{
	static const uint64_t v64[] = { 0, 1, 0x80, 0xFF00FF00FF00FF00ull, UINT64_MAX,
					0x8000000000000000ull };
	uint8_t b[24];
	size_t i, off;

	for (i = 0; i < sizeof(v64) / sizeof(v64[0]); i++) {
		for (off = 0; off < 8; off++) {
			put_le16(b + off, (uint16_t)v64[i]);
			ck_assert_uint_eq(get_le16(b + off), (uint16_t)v64[i]);
			put_le32(b + off, (uint32_t)v64[i]);
			ck_assert_uint_eq(get_le32(b + off), (uint32_t)v64[i]);
			put_le64(b + off, v64[i]);
			ck_assert_uint_eq(get_le64(b + off), v64[i]);
		}
	}
}
END_TEST

START_TEST(test_super_known_bytes)
{
	struct sqk_super s;
	uint8_t again[SQK_SUPER_SIZE];

	super_decode(mksquashfs_super, &s);
	ck_assert_uint_eq(s.magic, SQK_MAGIC);
	ck_assert_uint_eq(s.inode_count, 4);
	ck_assert_uint_eq(s.mkfs_time, 1700000000u);
	ck_assert_uint_eq(s.block_size, 131072);
	ck_assert_uint_eq(s.fragment_count, 1);
	ck_assert_uint_eq(s.compressor, 1);
	ck_assert_uint_eq(s.block_log, 17);
	ck_assert_uint_eq(s.flags, SQK_FLAG_DUPLICATES | SQK_FLAG_EXPORTABLE);
	ck_assert_uint_eq(s.id_count, 1);
	ck_assert_uint_eq(s.version_major, 4);
	ck_assert_uint_eq(s.version_minor, 0);
	ck_assert_uint_eq(s.root_inode, 0x60);
	ck_assert_uint_eq(s.bytes_used, 271);
	ck_assert_uint_eq(s.id_table_start, 0x107);
	ck_assert_uint_eq(s.xattr_id_table_start, SQK_NONE64);
	ck_assert_uint_eq(s.inode_table_start, 0x6c);
	ck_assert_uint_eq(s.directory_table_start, 0xa7);
	ck_assert_uint_eq(s.fragment_table_start, 0xdc);
	ck_assert_uint_eq(s.export_table_start, 0xf9);
	memset(again, 0, sizeof(again));
	super_encode(&s, again);
	ck_assert_mem_eq(again, mksquashfs_super, SQK_SUPER_SIZE);
}
END_TEST

START_TEST(test_super_round_trip)
{
	struct sqk_super s = {
		.magic = SQK_MAGIC, .inode_count = 0x01020304, .mkfs_time = 0xFFFFFFFEu,
		.block_size = 1048576, .fragment_count = 0x0A0B0C0D, .compressor = 6,
		.block_log = 20, .flags = 0x0FFF, .id_count = 0xFFFF, .version_major = 4,
		.version_minor = 0, .root_inode = 0x0000123456781FFFull,
		.bytes_used = 0x1122334455667788ull, .id_table_start = 0x2000000000000001ull,
		.xattr_id_table_start = SQK_NONE64, .inode_table_start = 96,
		.directory_table_start = 0x100000000ull, .fragment_table_start = 0xFFFFFFFFFull,
		.export_table_start = 0x7FFFFFFFFFFFFFFFull,
	};
	struct sqk_super d;
	uint8_t b[SQK_SUPER_SIZE];

	super_encode(&s, b);
	ck_assert_mem_eq(b, "hsqs", 4);
	ck_assert_uint_eq(get_le16(b + 20), 6);
	ck_assert_uint_eq(get_le64(b + 88), 0x7FFFFFFFFFFFFFFFull);
	memset(&d, 0xAB, sizeof(d));
	super_decode(b, &d);
	ck_assert_mem_eq(&d, &s, sizeof(s));
}
END_TEST

START_TEST(test_inode_header_round_trip)
{
	struct inode_header h = { .type = SQK_T_LFILE, .mode = 07755, .uid_idx = 0x1234,
				       .gid_idx = 0xFFFF, .mtime = 0x89ABCDEFu,
				       .inode_number = 0x00ABCDEFu };
	struct inode_header d;
	uint8_t b[SQK_INODE_HEADER_SIZE];

	inode_header_encode(&h, b);
	ck_assert_mem_eq(b, "\x09\x00\xED\x0F\x34\x12\xFF\xFF\xEF\xCD\xAB\x89\xEF\xCD\xAB\x00",
			 SQK_INODE_HEADER_SIZE);
	memset(&d, 0, sizeof(d));
	inode_header_decode(b, &d);
	ck_assert_mem_eq(&d, &h, sizeof(h));
}
END_TEST

START_TEST(test_dir_structs_round_trip)
{
	struct dir_header h = { .count = 255, .start_block = 0x00012345, .inode_number = 77 };
	struct dir_entry e = { .offset = 8191, .inode_delta = -32768, .type = SQK_T_SYMLINK,
				   .name_size = 255 };
	struct sqk_dir_index x = { .index = 8146, .start_block = 0xDEADBEEFu, .name_size = 10 };
	struct dir_header hd;
	struct dir_entry ed;
	struct sqk_dir_index xd;
	uint8_t b[SQK_DIR_INDEX_SIZE];

	dir_header_encode(&h, b);
	ck_assert_mem_eq(b, "\xFF\x00\x00\x00\x45\x23\x01\x00\x4D\x00\x00\x00", 12);
	dir_header_decode(b, &hd);
	ck_assert_mem_eq(&hd, &h, sizeof(h));

	dir_entry_encode(&e, b);
	ck_assert_mem_eq(b, "\xFF\x1F\x00\x80\x03\x00\xFF\x00", SQK_DIR_ENTRY_SIZE);
	dir_entry_decode(b, &ed);
	ck_assert_int_eq(ed.inode_delta, -32768);
	ck_assert_mem_eq(&ed, &e, sizeof(e));
	e.inode_delta = -1;
	dir_entry_encode(&e, b);
	ck_assert_uint_eq(get_le16(b + 2), 0xFFFF);
	dir_entry_decode(b, &ed);
	ck_assert_int_eq(ed.inode_delta, -1);

	dir_index_encode(&x, b);
	ck_assert_mem_eq(b, "\xD2\x1F\x00\x00\xEF\xBE\xAD\xDE\x0A\x00\x00\x00", 12);
	dir_index_decode(b, &xd);
	ck_assert_mem_eq(&xd, &x, sizeof(x));
}
END_TEST

START_TEST(test_table_structs_round_trip)
{
	struct frag_entry f = { .start = 0x0000010203040506ull,
				    .size = SQK_BLOCK_RAW | 0x1234, .unused = 0 };
	struct xattr_id i = { .ref = 0x0000ABCD00001FFFull, .count = 3, .size = 0x10000 };
	struct xattr_header h = { .kv_start = 0x123456789ull, .count = 700, .unused = 0 };
	struct frag_entry fd;
	struct xattr_id id;
	struct xattr_header hd;
	uint8_t b[16];

	frag_entry_encode(&f, b);
	ck_assert_mem_eq(b, "\x06\x05\x04\x03\x02\x01\x00\x00\x34\x12\x00\x01\x00\x00\x00\x00",
			 16);
	frag_entry_decode(b, &fd);
	ck_assert_mem_eq(&fd, &f, sizeof(f));

	xattr_id_encode(&i, b);
	ck_assert_uint_eq(get_le64(b), i.ref);
	ck_assert_uint_eq(get_le32(b + 8), 3);
	ck_assert_uint_eq(get_le32(b + 12), 0x10000);
	xattr_id_decode(b, &id);
	ck_assert_mem_eq(&id, &i, sizeof(i));

	xattr_header_encode(&h, b);
	ck_assert_mem_eq(b, "\x89\x67\x45\x23\x01\x00\x00\x00\xBC\x02\x00\x00\x00\x00\x00\x00",
			 16);
	xattr_header_decode(b, &hd);
	ck_assert_uint_eq(hd.kv_start, h.kv_start);
	ck_assert_uint_eq(hd.count, 700);
	ck_assert_uint_eq(hd.unused, 0);
}
END_TEST

START_TEST(test_rdev)
{
	uint32_t r = sqk_rdev_encode(300, 70000);

	ck_assert_uint_eq(r, 0x11112C70u);
	/* what `unsquashfs -lls` 4.5.1 prints for it: rdev >> 8, rdev & 0xFF */
	ck_assert_uint_eq(r >> 8, 1118508);
	ck_assert_uint_eq(r & 0xFF, 112);
	ck_assert_uint_eq(sqk_rdev_major(r), 300);
	ck_assert_uint_eq(sqk_rdev_minor(r), 70000);
	/* distinct bits in every field catch a shift in either direction */
	r = sqk_rdev_encode(0xABC, 0x12345);
	ck_assert_uint_eq(r, 0x123ABC45u);
	ck_assert_uint_eq(sqk_rdev_major(r), 0xABC);
	ck_assert_uint_eq(sqk_rdev_minor(r), 0x12345);
	r = sqk_rdev_encode(8, 1);
	ck_assert_uint_eq(r, 0x0801);
	ck_assert_uint_eq(sqk_rdev_major(r), 8);
	ck_assert_uint_eq(sqk_rdev_minor(r), 1);
	r = sqk_rdev_encode(4095, 0xFFFFF);
	ck_assert_uint_eq(sqk_rdev_major(r), 4095);
	ck_assert_uint_eq(sqk_rdev_minor(r), 0xFFFFF);
}
END_TEST

/* The diagnosis of a file that does not open: each kind gets its own code and its own words. */
static int diag(const uint8_t *head, size_t n, uint64_t size, char *why)
{
	return super_diagnose("f", 0, head, n, NULL, 0, size, why, 512);
}

START_TEST(test_super_diagnose)
{
	uint8_t b[SQK_PROBE_SIZE] = { 0 };
	struct sqk_super sb = { .magic = SQK_MAGIC, .version_major = 4, .bytes_used = 5000,
				.block_size = 131072, .block_log = 17 };
	char why[512];

	ck_assert_int_eq(diag(b, 0, 0, why), SQK_EEMPTY);
	ck_assert_str_eq(why, "'f' is empty: not a SquashFS image");
	ck_assert_int_eq(super_diagnose("f", 7, b, 0, NULL, 0, 0, why, sizeof(why)),
			 SQK_EEMPTY);
	ck_assert_str_eq(why, "'f' at offset 7 is empty: not a SquashFS image");
	ck_assert_int_eq(diag(b, 100, 100, why), SQK_ENOTSQFS);
	ck_assert_str_eq(why, "'f' is not a SquashFS image: its first 100 bytes are zero");
	memcpy(b, "\x1f\x8b\x08", 3);
	ck_assert_int_eq(diag(b, 100, 100, why), SQK_ENOTSQFS);
	ck_assert_str_eq(why, "'f' is not a SquashFS image: it is gzip data");
	memset(b, 0, sizeof(b));
	memcpy(b + 1024, "\xe2\xe1\xf5\xe0", 4);
	ck_assert_int_eq(diag(b, sizeof(b), 1 << 20, why), SQK_ENOTSQFS);
	ck_assert_str_eq(why, "'f' is not a SquashFS image: it is an EROFS image");
	memset(b, 0, sizeof(b));
	memcpy(b, "sqsh", 4); /* big-endian 3.1: major and minor at 28 and 30, as in 4.0 */
	b[29] = 3;
	b[31] = 1;
	ck_assert_int_eq(diag(b, 96, 96, why), SQK_EVERSION);
	ck_assert_str_eq(why, "f: SquashFS 3.1 image, big-endian: only 4.0 is supported");
	memcpy(b, "hsqs", 4);
	b[28] = 2;
	b[29] = 0;
	b[30] = 0;
	b[31] = 0;
	ck_assert_int_eq(diag(b, 96, 96, why), SQK_EVERSION);
	ck_assert_str_eq(why, "f: SquashFS 2.0 image: only 4.0 is supported");
	super_encode(&sb, b);
	ck_assert_int_eq(diag(b, sizeof(b), 5000, why), 0);
	ck_assert_int_eq(diag(b, sizeof(b), 4999, why), SQK_ETRUNCATED);
	ck_assert_str_eq(why, "f: truncated image: file is 4999 bytes, the superblock says 5000");
	ck_assert_int_eq(diag(b, 50, 50, why), SQK_ETRUNCATED);
	ck_assert(sqk_err_not_image(SQK_ETRUNCATED) && !sqk_err_not_image(SQK_ECORRUPT));
	/* a URL a build without the remote backend cannot read: the line names the feature */
	ck_assert(sqk_err_not_image(SQK_ENOREMOTE) && !sqk_err_not_image(SQK_EABI));
	ck_assert_ptr_nonnull(strstr(sqk_strerror(SQK_ENOREMOTE), "HAVE_REMOTE=0"));
	ck_assert_int_eq(sqk_to_errno(SQK_ENOREMOTE), EPROTONOSUPPORT);
}
END_TEST

/* No superblock at the start, but sqk's integrity trailer at the end: the image it covers starts
 * at 0 (a damaged superblock: 0, the callers say more) or further on (named for --offset). */
START_TEST(test_super_diagnose_trailer)
{
	struct sqk_integ_trailer t = { .version = SQK_INTEG_VERSION, .chunk_size = 65536,
				       .covered = 8192, .hashes_at = 8192, .nchunks = 1 };
	uint8_t head[SQK_PROBE_SIZE] = { 0 }, tail[SQK_INTEG_TRAILER_SIZE];
	char why[512];

	integ_trailer_encode(&t, tail);
	/* 8192 bytes of image, 32 of digest, padding, the trailer: 12288 bytes in all */
	ck_assert_int_eq(super_diagnose("f", 0, head, sizeof(head), tail, sizeof(tail), 12288,
					    why, sizeof(why)), 0);
	ck_assert_int_eq(super_diagnose("f", 0, head, sizeof(head), tail, sizeof(tail), 16384,
					    why, sizeof(why)), SQK_ENOTSQFS);
	ck_assert_str_eq(why, "'f' is not a SquashFS image at offset 0: its integrity data covers "
			      "an image at offset 4096 (--offset 4096)");
	tail[0] ^= 1; /* no trailer: the head alone */
	ck_assert_int_eq(super_diagnose("f", 0, head, sizeof(head), tail, sizeof(tail), 12288,
					    why, sizeof(why)), SQK_ENOTSQFS);
	ck_assert_str_eq(why, "'f' is not a SquashFS image: its first 4096 bytes are zero");
}
END_TEST

START_TEST(test_basic_type)
{
	ck_assert_uint_eq(sqk_basic_type(SQK_T_LDIR), SQK_T_DIR);
	ck_assert_uint_eq(sqk_basic_type(SQK_T_LFILE), SQK_T_FILE);
	ck_assert_uint_eq(sqk_basic_type(SQK_T_LSOCKET), SQK_T_SOCKET);
	ck_assert_uint_eq(sqk_basic_type(SQK_T_SYMLINK), SQK_T_SYMLINK);
	ck_assert_uint_eq(sqk_basic_type(SQK_T_SOCKET), SQK_T_SOCKET);
}
END_TEST

static Suite *endian_format_suite(void)
{
	Suite *s = suite_create("endian_format");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_system_headers);
	tcase_add_test(tc, test_le_byte_order);
	tcase_add_test(tc, test_le_round_trip_unaligned);
	tcase_add_test(tc, test_super_known_bytes);
	tcase_add_test(tc, test_super_round_trip);
	tcase_add_test(tc, test_inode_header_round_trip);
	tcase_add_test(tc, test_dir_structs_round_trip);
	tcase_add_test(tc, test_table_structs_round_trip);
	tcase_add_test(tc, test_rdev);
	tcase_add_test(tc, test_basic_type);
	tcase_add_test(tc, test_super_diagnose);
	tcase_add_test(tc, test_super_diagnose_trailer);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return test_run_suite(endian_format_suite());
}
