/* SPDX-License-Identifier: BSD-2-Clause */
/* Pins the public ABI of libsqk.so.2 (as squashfs-tools-ng's test/abi.c does): the size and
 * every member offset of each public struct, on this platform (x86-64 / LP64). A failure here
 * means the ABI changed: append fields only (and bump the minor version), or bump the SONAME
 * (see docs/library.md, "ABI and SONAME"). Also checks the size-field rules of common/abi.h and
 * sqk_version(). The pins cover libsqk's API (sqk.h, sqk_check.h, remote.h, the I/O vtable and
 * the plain data of sqk/types.h) and the builder library's (mkimage/build.h). */
#include <check.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "common/abi.h"
#include "sqk/error.h"
#include "sqk/sqk.h"
#include "sqk/sqk_check.h"
#include "mkimage/build.h"
#include "testutil.h"

struct pin {
	const char *what;
	size_t got, want;
};

#define SIZE(t, n) { "sizeof(struct " #t ")", sizeof(struct t), n }
#define OFF(t, m, n) { "offsetof(struct " #t ", " #m ")", offsetof(struct t, m), n }

static const struct pin pins[] = {
	SIZE(sqk_open_opts, 112),
	OFF(sqk_open_opts, size, 0),
	OFF(sqk_open_opts, offset, 8),
	OFF(sqk_open_opts, cache_bytes, 16),
	OFF(sqk_open_opts, readahead_blocks, 24),
	OFF(sqk_open_opts, threads, 28),
	OFF(sqk_open_opts, log, 32),
	OFF(sqk_open_opts, log_ctx, 40),
	OFF(sqk_open_opts, name, 48),
	OFF(sqk_open_opts, no_verify, 56),
	OFF(sqk_open_opts, quiet_mismatch, 57),
	OFF(sqk_open_opts, http, 64),
	OFF(sqk_open_opts, root_hash, 72),
	OFF(sqk_open_opts, no_prefetch, 80),
	OFF(sqk_open_opts, require_integrity, 81),
	OFF(sqk_open_opts, trust, 88),
	OFF(sqk_open_opts, trust_dir, 96),
	OFF(sqk_open_opts, allow_rollback, 104),
	SIZE(sqk_signature, 1096),
	OFF(sqk_signature, key_id, 0),
	OFF(sqk_signature, public_key, 17),
	OFF(sqk_signature, time, 56),
	OFF(sqk_signature, comment, 64),
	OFF(sqk_signature, valid, 1089),
	OFF(sqk_signature, trusted, 1090),
	SIZE(sqk_inode, 104),
	OFF(sqk_inode, ref, 0),
	OFF(sqk_inode, ino, 8),
	OFF(sqk_inode, type, 12),
	OFF(sqk_inode, mode, 16),
	OFF(sqk_inode, uid, 20),
	OFF(sqk_inode, gid, 24),
	OFF(sqk_inode, mtime, 28),
	OFF(sqk_inode, nlink, 32),
	OFF(sqk_inode, size, 40),
	OFF(sqk_inode, rdev, 48),
	OFF(sqk_inode, xattr_idx, 52),
	OFF(sqk_inode, blocks_start, 56),
	OFF(sqk_inode, frag_index, 64),
	OFF(sqk_inode, frag_offset, 68),
	OFF(sqk_inode, sparse, 72),
	OFF(sqk_inode, parent, 80),
	OFF(sqk_inode, dir_block, 84),
	OFF(sqk_inode, dir_offset, 88),
	OFF(sqk_inode, index_count, 90),
	OFF(sqk_inode, body_ref, 96),
	SIZE(sqk_dirent, 32),
	OFF(sqk_dirent, name, 0),
	OFF(sqk_dirent, name_len, 8),
	OFF(sqk_dirent, ino, 16),
	OFF(sqk_dirent, type, 20),
	OFF(sqk_dirent, ref, 24),
	SIZE(sqk_stats, 88),
	OFF(sqk_stats, size, 0),
	OFF(sqk_stats, data_blocks_decompressed, 8),
	OFF(sqk_stats, fragment_blocks_decompressed, 16),
	OFF(sqk_stats, metadata_blocks_decompressed, 24),
	OFF(sqk_stats, cache_hits, 32),
	OFF(sqk_stats, cache_misses, 40),
	OFF(sqk_stats, bytes_read, 48),
	OFF(sqk_stats, readahead_batches, 56),
	OFF(sqk_stats, chunks_hashed, 64),
	OFF(sqk_stats, chunks_xxh3, 72),
	OFF(sqk_stats, chunks_sha256, 80),
	SIZE(sqk_image_info, 240),
	OFF(sqk_image_info, size, 0),
	OFF(sqk_image_info, inodes_found, 8),
	OFF(sqk_image_info, kinds, 16),
	OFF(sqk_image_info, file_bytes, 80),
	OFF(sqk_image_info, sparse_bytes, 88),
	OFF(sqk_image_info, data_blocks, 96),
	OFF(sqk_image_info, inode_table_bytes, 104),
	OFF(sqk_image_info, directory_table_bytes, 112),
	OFF(sqk_image_info, inode_metadata_blocks, 120),
	OFF(sqk_image_info, directory_metadata_blocks, 128),
	OFF(sqk_image_info, counts, 136),
	SIZE(sqk_walk_entry, 208),
	OFF(sqk_walk_entry, event, 0),
	OFF(sqk_walk_entry, flags, 4),
	OFF(sqk_walk_entry, path, 8),
	OFF(sqk_walk_entry, path_len, 16),
	OFF(sqk_walk_entry, name, 24),
	OFF(sqk_walk_entry, name_len, 32),
	OFF(sqk_walk_entry, depth, 40),
	OFF(sqk_walk_entry, index, 48),
	OFF(sqk_walk_entry, dirent, 56),
	OFF(sqk_walk_entry, inode, 88),
	OFF(sqk_walk_entry, parent, 192),
	OFF(sqk_walk_entry, pos, 200),
	SIZE(sqk_mismatch, 32),
	OFF(sqk_mismatch, start, 0),
	OFF(sqk_mismatch, end, 8),
	OFF(sqk_mismatch, chunk, 16),
	OFF(sqk_mismatch, ino, 24),
	SIZE(sqk_http_opts, 136),
	OFF(sqk_http_opts, size, 0),
	OFF(sqk_http_opts, cache_dir, 8),
	OFF(sqk_http_opts, cache_size_set, 16),
	OFF(sqk_http_opts, cache_size, 24),
	OFF(sqk_http_opts, retries_set, 32),
	OFF(sqk_http_opts, retries, 36),
	OFF(sqk_http_opts, timeout_s, 40),
	OFF(sqk_http_opts, headers, 48),
	OFF(sqk_http_opts, nheaders, 56),
	OFF(sqk_http_opts, root_hash, 64),
	OFF(sqk_http_opts, ca_file, 72),
	OFF(sqk_http_opts, raw, 80),
	OFF(sqk_http_opts, connections, 84),
	OFF(sqk_http_opts, mem_bytes, 88),
	OFF(sqk_http_opts, log, 96),
	OFF(sqk_http_opts, log_ctx, 104),
	OFF(sqk_http_opts, s3_endpoint, 112),
	OFF(sqk_http_opts, no_sign_request, 120),
	OFF(sqk_http_opts, background, 121),
	OFF(sqk_http_opts, background_rate, 128),
	OFF(sqk_http_stats, size, 0),
	OFF(sqk_http_stats, requests, 8),
	OFF(sqk_http_stats, bytes, 16),
	OFF(sqk_http_stats, bytes_unused, 24),
	OFF(sqk_http_stats, retries, 32),
	OFF(sqk_http_stats, disk_hits, 40),
	OFF(sqk_http_stats, disk_misses, 48),
	OFF(sqk_http_stats, corrupt, 56),
	OFF(sqk_http_stats, digest_groups, 64),
	SIZE(sqk_http_stats, 96),
	OFF(sqk_http_stats, bytes_background, 72),
	OFF(sqk_http_stats, background_left, 80),
	OFF(sqk_http_stats, offline, 88),
	SIZE(sqk_check_report, 40),
	OFF(sqk_check_report, kind, 0),
	OFF(sqk_check_report, start, 8),
	OFF(sqk_check_report, end, 16),
	OFF(sqk_check_report, region, 24),
	OFF(sqk_check_report, msg, 32),
	SIZE(sqk_check_opts, 56),
	OFF(sqk_check_opts, size, 0),
	OFF(sqk_check_opts, threads, 8),
	OFF(sqk_check_opts, root_hash, 16),
	OFF(sqk_check_opts, offset, 24),
	OFF(sqk_check_opts, report, 32),
	OFF(sqk_check_opts, ctx, 40),
	OFF(sqk_check_opts, max_errors, 48),
	SIZE(sqk_check_result, 224),
	OFF(sqk_check_result, size, 0),
	OFF(sqk_check_result, errors, 8),
	OFF(sqk_check_result, corrupt_ranges, 16),
	OFF(sqk_check_result, structural, 24),
	OFF(sqk_check_result, has_integrity, 32),
	OFF(sqk_check_result, root_hash_ok, 33),
	OFF(sqk_check_result, chunks, 40),
	OFF(sqk_check_result, chunks_bad, 48),
	OFF(sqk_check_result, inodes, 56),
	OFF(sqk_check_result, dirs, 64),
	OFF(sqk_check_result, files, 72),
	OFF(sqk_check_result, data_blocks, 80),
	OFF(sqk_check_result, fragment_blocks, 88),
	OFF(sqk_check_result, metadata_blocks, 96),
	OFF(sqk_check_result, counts_ok, 104),
	OFF(sqk_check_result, counts, 112),
	OFF(sqk_check_result, integrity_truncated, 216),
	SIZE(sqk_super, 96),
	OFF(sqk_super, magic, 0),
	OFF(sqk_super, inode_count, 4),
	OFF(sqk_super, mkfs_time, 8),
	OFF(sqk_super, block_size, 12),
	OFF(sqk_super, fragment_count, 16),
	OFF(sqk_super, compressor, 20),
	OFF(sqk_super, block_log, 22),
	OFF(sqk_super, flags, 24),
	OFF(sqk_super, id_count, 26),
	OFF(sqk_super, version_major, 28),
	OFF(sqk_super, version_minor, 30),
	OFF(sqk_super, root_inode, 32),
	OFF(sqk_super, bytes_used, 40),
	OFF(sqk_super, id_table_start, 48),
	OFF(sqk_super, xattr_id_table_start, 56),
	OFF(sqk_super, inode_table_start, 64),
	OFF(sqk_super, directory_table_start, 72),
	OFF(sqk_super, fragment_table_start, 80),
	OFF(sqk_super, export_table_start, 88),
	SIZE(sqk_comp_config, 32),
	OFF(sqk_comp_config, id, 0),
	OFF(sqk_comp_config, level, 4),
	OFF(sqk_comp_config, block_size, 8),
	OFF(sqk_comp_config, xz_bcj, 12),
	OFF(sqk_comp_config, xz_dict, 16),
	OFF(sqk_comp_config, gzip_window, 20),
	OFF(sqk_comp_config, gzip_strategies, 24),
	OFF(sqk_comp_config, lz4_hc, 26),
	OFF(sqk_comp_config, lzo_algorithm, 28),
	SIZE(sqk_integ_trailer, 88),
	OFF(sqk_integ_trailer, version, 0),
	OFF(sqk_integ_trailer, chunk_size, 4),
	OFF(sqk_integ_trailer, covered, 8),
	OFF(sqk_integ_trailer, hashes_at, 16),
	OFF(sqk_integ_trailer, nchunks, 24),
	OFF(sqk_integ_trailer, root, 32),
	OFF(sqk_integ_trailer, group_chunks, 64),
	OFF(sqk_integ_trailer, groups_at, 72),
	OFF(sqk_integ_trailer, ngroups, 80),
	SIZE(sqk_hint_range, 16),
	OFF(sqk_hint_range, start, 0),
	OFF(sqk_hint_range, length, 8),
	SIZE(sqk_io_ahead, 16),
	OFF(sqk_io_ahead, stream, 0),
	OFF(sqk_io_ahead, limit, 8),
	SIZE(sqk_io_ops, 88),
	OFF(sqk_io_ops, read_at, 0),
	OFF(sqk_io_ops, write_at, 8),
	OFF(sqk_io_ops, get_size, 16),
	OFF(sqk_io_ops, sync, 24),
	OFF(sqk_io_ops, destroy, 32),
	OFF(sqk_io_ops, read_ahead, 40),
	OFF(sqk_io_ops, prefetch, 48),
	OFF(sqk_io_ops, cancel, 56),
	OFF(sqk_io_ops, quiesce, 64),
	OFF(sqk_io_ops, stats, 72),
	OFF(sqk_io_ops, verified, 80),
	SIZE(sqk_io, 8),
	OFF(sqk_io, ops, 0),
	SIZE(sqk_build_opts, 392),
	OFF(sqk_build_opts, size, 0),
	OFF(sqk_build_opts, image, 8),
	OFF(sqk_build_opts, block_size, 16),
	OFF(sqk_build_opts, comp, 20),
	OFF(sqk_build_opts, threads, 52),
	OFF(sqk_build_opts, no_fragments, 56),
	OFF(sqk_build_opts, no_tailends, 57),
	OFF(sqk_build_opts, no_dedup, 58),
	OFF(sqk_build_opts, no_xattrs, 59),
	OFF(sqk_build_opts, no_exports, 60),
	OFF(sqk_build_opts, no_checksums, 61),
	OFF(sqk_build_opts, checksum_chunk, 64),
	OFF(sqk_build_opts, digest_tree, 68),
	OFF(sqk_build_opts, progress, 69),
	OFF(sqk_build_opts, quiet, 70),
	OFF(sqk_build_opts, force_uid, 72),
	OFF(sqk_build_opts, force_gid, 80),
	OFF(sqk_build_opts, set_mtime, 88),
	OFF(sqk_build_opts, clamp_time, 96),
	OFF(sqk_build_opts, default_mode, 104),
	OFF(sqk_build_opts, default_uid, 108),
	OFF(sqk_build_opts, default_gid, 112),
	OFF(sqk_build_opts, default_mtime, 120),
	OFF(sqk_build_opts, mem, 128),
	OFF(sqk_build_opts, tail_mem, 136),
	OFF(sqk_build_opts, digest_mem, 144),
	OFF(sqk_build_opts, entry_mem, 152),
	OFF(sqk_build_opts, piece_batch, 160),
	OFF(sqk_build_opts, order_file, 168),
	OFF(sqk_build_opts, sort_file, 176),
	OFF(sqk_build_opts, reuse, 184),
	OFF(sqk_build_opts, cancel, 192),
	OFF(sqk_build_opts, open_output, 200),
	OFF(sqk_build_opts, open_arg, 208),
	OFF(sqk_build_opts, sign_keys, 216),
	OFF(sqk_build_opts, nsign_keys, 224),
	OFF(sqk_build_opts, sign_comment, 232),
	OFF(sqk_build_opts, sign_time, 240),
	OFF(sqk_build_opts, verity, 248),
	OFF(sqk_build_opts, verity_salt, 256),
	OFF(sqk_build_opts, verity_salt_len, 264),
	OFF(sqk_build_opts, open_verity, 272),
	OFF(sqk_build_opts, one_file_system, 280),
	OFF(sqk_build_opts, one_file_system_x, 281),
	OFF(sqk_build_opts, no_hardlinks, 282),
	OFF(sqk_build_opts, info, 283),
	OFF(sqk_build_opts, max_depth, 284),
	OFF(sqk_build_opts, root_mode, 288),
	OFF(sqk_build_opts, root_uid, 296),
	OFF(sqk_build_opts, root_gid, 304),
	OFF(sqk_build_opts, root_time, 312),
	OFF(sqk_build_opts, mkfs_time, 320),
	OFF(sqk_build_opts, xattrs_exclude, 328),
	OFF(sqk_build_opts, xattrs_include, 336),
	OFF(sqk_build_opts, xattrs_add, 344),
	OFF(sqk_build_opts, nxattrs_add, 352),
	OFF(sqk_build_opts, append, 360),
	OFF(sqk_build_opts, root_becomes, 368),
	OFF(sqk_build_opts, append_given, 376),
	OFF(sqk_build_opts, root_symmode, 384),
	SIZE(sqk_build_pseudo, 16),
	OFF(sqk_build_pseudo, file, 0),
	OFF(sqk_build_pseudo, arg, 8),
	SIZE(sqk_build_source, 144),
	OFF(sqk_build_source, size, 0),
	OFF(sqk_build_source, kind, 8),
	OFF(sqk_build_source, sources, 16),
	OFF(sqk_build_source, nsources, 24),
	OFF(sqk_build_source, keep_as_directory, 28),
	OFF(sqk_build_source, excludes, 32),
	OFF(sqk_build_source, nexcludes, 40),
	OFF(sqk_build_source, mks_excludes, 48),
	OFF(sqk_build_source, nmks_excludes, 56),
	OFF(sqk_build_source, wildcards, 60),
	OFF(sqk_build_source, regex, 61),
	OFF(sqk_build_source, tar_path, 64),
	OFF(sqk_build_source, custom, 72),
	OFF(sqk_build_source, pseudo, 80),
	OFF(sqk_build_source, npseudo, 88),
	OFF(sqk_build_source, tar_ignore_zeros, 92),
	OFF(sqk_build_source, pack_file, 96),
	OFF(sqk_build_source, pack_dir, 104),
	OFF(sqk_build_source, pseudo_dir, 112),
	OFF(sqk_build_source, pseudo_override, 120),
	OFF(sqk_build_source, actions, 128),
	OFF(sqk_build_source, nactions, 136),
	SIZE(sqk_build_action, 16),
	OFF(sqk_build_action, file, 0),
	OFF(sqk_build_action, arg, 8),
	SIZE(sqk_build_counts, 128),
	OFF(sqk_build_counts, files, 0),
	OFF(sqk_build_counts, dirs, 8),
	OFF(sqk_build_counts, symlinks, 16),
	OFF(sqk_build_counts, devices, 24),
	OFF(sqk_build_counts, ipc, 32),
	OFF(sqk_build_counts, hardlinks, 40),
	OFF(sqk_build_counts, file_bytes, 48),
	OFF(sqk_build_counts, dup_files, 56),
	OFF(sqk_build_counts, dup_bytes, 64),
	OFF(sqk_build_counts, bytes_in, 72),
	OFF(sqk_build_counts, data_blocks, 80),
	OFF(sqk_build_counts, raw_blocks, 88),
	OFF(sqk_build_counts, frag_blocks, 96),
	OFF(sqk_build_counts, sparse_blocks, 104),
	OFF(sqk_build_counts, xattr_sets, 112),
	OFF(sqk_build_counts, mtimes_clamped, 120),
	SIZE(sqk_build_result, 1720),
	OFF(sqk_build_result, size, 0),
	OFF(sqk_build_result, err, 8),
	OFF(sqk_build_result, msg, 12),
	OFF(sqk_build_result, super, 1040),
	OFF(sqk_build_result, image_bytes, 1136),
	OFF(sqk_build_result, have_root, 1144),
	OFF(sqk_build_result, root_hash, 1145),
	OFF(sqk_build_result, counts, 1184),
	OFF(sqk_build_result, reused_blocks, 1312),
	OFF(sqk_build_result, reused_bytes, 1320),
	OFF(sqk_build_result, reused_frag_blocks, 1328),
	OFF(sqk_build_result, ordered, 1336),
	OFF(sqk_build_result, order_files, 1344),
	OFF(sqk_build_result, order_bytes, 1352),
	OFF(sqk_build_result, hint_ranges, 1360),
	OFF(sqk_build_result, have_verity, 1368),
	OFF(sqk_build_result, verity_root, 1369),
	OFF(sqk_build_result, verity_data_end, 1408),
	OFF(sqk_build_result, verity_len, 1416),
	OFF(sqk_build_result, verity_salt_len, 1424),
	OFF(sqk_build_result, verity_salt, 1426),
	OFF(sqk_build_result, verity_uuid, 1682),
	OFF(sqk_build_result, appended, 1698),
	OFF(sqk_build_result, append_kept, 1704),
	OFF(sqk_build_result, append_added, 1712),
};

START_TEST(test_layouts)
{
	for (size_t i = 0; i < sizeof(pins) / sizeof(pins[0]); i++)
		ck_assert_msg(pins[i].got == pins[i].want, "%s is %zu, pinned at %zu", pins[i].what,
			      pins[i].got, pins[i].want);
}
END_TEST

START_TEST(test_version)
{
	const char *v = sqk_version();
	unsigned a, b, c;
	char end;

	ck_assert_ptr_nonnull(v);
	ck_assert_msg(sscanf(v, "%u.%u.%u%c", &a, &b, &c, &end) == 3, "sqk_version() = '%s'", v);
}
END_TEST

/* Options: a size below the first version's is refused before anything is opened; a larger
 * struct (a newer caller) is taken when its unknown bytes are zero. */
START_TEST(test_options_size)
{
	struct sqk_open_opts o;
	struct {
		struct sqk_open_opts o;
		uint64_t newer;
	} big;
	struct sqk_image *img = (struct sqk_image *)&o;
	const char *none = "/nonexistent/abi.sqsh";

	memset(&o, 0, sizeof(o));
	ck_assert_int_eq(sqk_image_open(none, &o, &img), SQK_EABI);
	ck_assert_ptr_null(img);
	sqk_open_opts_init(&o);
	ck_assert_uint_eq(o.size, sizeof(o));
	ck_assert_int_eq(sqk_image_open(none, &o, &img), SQK_ENOENT);
	ck_assert_int_eq(sqk_image_open(none, NULL, &img), SQK_ENOENT);
	o.size = offsetof(struct sqk_open_opts, no_prefetch);
	ck_assert_int_eq(sqk_image_open(none, &o, &img), SQK_EABI);
	memset(&big, 0, sizeof(big));
	big.o.size = sizeof(big);
	ck_assert_int_eq(sqk_image_open(none, &big.o, &img), SQK_ENOENT);
	big.newer = 1;
	ck_assert_int_eq(sqk_image_open(none, &big.o, &img), SQK_EABI);
}
END_TEST

struct v2 {
	size_t size;
	uint32_t a, b;
};

/* Results: filled up to the caller's size, the rest of the caller's struct zeroed. */
START_TEST(test_results_size)
{
	struct v2 lib = { sizeof(lib), 7, 9 };
	struct {
		struct v2 s;
		uint32_t newer;
	} big;
	struct v2 out;
	size_t v1 = SQK_ABI_SIZE_V1(struct v2, a);

	memset(&out, 0xAA, sizeof(out));
	out.size = v1;
	ck_assert_int_eq(abi_copy_out(&out, &lib, sizeof(lib), v1), 0);
	ck_assert_uint_eq(out.size, v1);
	ck_assert_uint_eq(out.a, 7);
	ck_assert_uint_eq(out.b, 0xAAAAAAAAu); /* past the caller's size: untouched */
	memset(&big, 0xAA, sizeof(big));
	big.s.size = sizeof(big);
	ck_assert_int_eq(abi_copy_out(&big, &lib, sizeof(lib), v1), 0);
	ck_assert_uint_eq(big.s.b, 9);
	ck_assert_uint_eq(big.newer, 0);
	ck_assert_uint_eq(big.s.size, sizeof(big));
	out.size = v1 - 1;
	ck_assert_int_eq(abi_copy_out(&out, &lib, sizeof(lib), v1), SQK_EABI);
}
END_TEST

START_TEST(test_check_sizes)
{
	struct sqk_check_result r = { .size = 0 };
	struct sqk_check_opts o;
	struct sqk_io *io = NULL;

	ck_assert_int_eq(sqk_io_mem_create(NULL, 0, &io), 0);
	ck_assert_int_eq(sqk_check_image(io, 0, NULL, &r), SQK_EABI);
	memset(&o, 0, sizeof(o));
	r.size = sizeof(r);
	ck_assert_int_eq(sqk_check_image(io, 0, &o, &r), SQK_EABI);
	sqk_check_opts_init(&o);
	ck_assert_int_eq(sqk_check_image(io, 0, &o, &r), 0);
	ck_assert_uint_eq(r.size, sizeof(r));
	ck_assert_uint_gt(r.errors, 0); /* an empty file is not an image */
	sqk_io_destroy(io);
}
END_TEST

static Suite *abi_suite(void)
{
	Suite *s = suite_create("abi");
	TCase *tc = tcase_create("abi");

	tcase_add_test(tc, test_layouts);
	tcase_add_test(tc, test_version);
	tcase_add_test(tc, test_options_size);
	tcase_add_test(tc, test_results_size);
	tcase_add_test(tc, test_check_sizes);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return test_run_suite(abi_suite());
}
