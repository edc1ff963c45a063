/* SPDX-License-Identifier: BSD-2-Clause */
/* Unit tests for common/meta.c: the metadata stream writer (records straddling blocks, refs,
 * raw fallback, sticky errors) and the block decoder's validation of hostile blocks. */
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "common/compressor.h"
#include "common/endian.h"
#include "sqk/error.h"
#include "common/meta.h"
#include "testutil.h"

#define GUARD 64
#define GUARD_BYTE 0xA5

static const uint16_t comp_ids[] = { 0, SQK_COMP_GZIP, SQK_COMP_XZ, SQK_COMP_LZ4,
				     SQK_COMP_ZSTD };
#define NCOMPS ((int)(sizeof(comp_ids) / sizeof(comp_ids[0])))

/* NULL for id 0 (a writer storing everything raw). */
static struct compressor *make(uint16_t id)
{
	struct sqk_comp_config cfg = { .id = id, .block_size = 131072 };
	struct compressor *c = NULL;

	if (id == 0)
		return NULL;
	ck_assert_int_eq(compressor_create(&cfg, &c), 0);
	return c;
}

/* An inode-like record: its number, then bytes derived from it; lengths vary from 19 to 75. */
static size_t make_record(uint32_t i, uint8_t *rec)
{
	size_t len = 19 + (i * 7) % 57, k;

	put_le32(rec, i);
	for (k = 4; k < len; k++)
		rec[k] = (uint8_t)(i + k * 3);
	return len;
}

/* Decodes a whole encoded stream into its bytes (each block's start recorded in starts[]). */
static uint8_t *decode_stream(struct compressor *c, const struct meta_writer *w,
			      size_t *total, size_t *starts)
{
	uint8_t *all = malloc((size_t)w->nblocks * SQK_META_SIZE + 1);
	size_t pos = 0, used, n = 0;
	uint32_t b;

	ck_assert_ptr_nonnull(all);
	for (b = 0; b < w->nblocks; b++) {
		ssize_t got = meta_decode_block(c, w->out + pos, w->out_len - pos, all + n,
						    b + 1 < w->nblocks ? SQK_META_SIZE : 0, &used);

		ck_assert_int_gt(got, 0);
		if (starts)
			starts[b] = pos;
		pos += used;
		n += (size_t)got;
	}
	ck_assert_uint_eq(pos, w->out_len);
	*total = n;
	return all;
}

/* Reads len bytes at ref from a decoded stream, mapping the block position through starts[]. */
static const uint8_t *at_ref(const uint8_t *all, const size_t *starts, uint32_t nblocks,
			     uint64_t ref)
{
	uint64_t block_pos = ref >> 16;
	uint32_t b;

	ck_assert_uint_lt(ref & 0xFFFF, SQK_META_SIZE);
	for (b = 0; b < nblocks; b++) {
		if (starts[b] == block_pos)
			return all + (size_t)b * SQK_META_SIZE + (ref & 0xFFFF);
	}
	ck_abort_msg("ref %llx names no block start", (unsigned long long)ref);
	return NULL;
}

/* 20000+ bytes of records straddling blocks; every ref leads back to its record. */
START_TEST(test_writer_records_across_blocks)
{
	enum { NREC = 450 };
	struct compressor *c = make(comp_ids[_i]);
	struct meta_writer w;
	uint64_t refs[NREC];
	size_t starts[8], total = 0, expect = 0;
	uint8_t rec[80], *all;
	uint32_t i;

	meta_writer_init(&w, c);
	ck_assert_uint_eq(meta_writer_ref(&w), 0);
	for (i = 0; i < NREC; i++) {
		size_t len = make_record(i, rec);

		refs[i] = meta_writer_ref(&w);
		ck_assert_int_eq(meta_writer_append(&w, rec, len), 0);
		expect += len;
	}
	ck_assert_uint_gt(expect, 20000);
	ck_assert_uint_eq(w.nblocks, expect / SQK_META_SIZE);
	ck_assert_int_eq(meta_writer_finish(&w), 0);
	ck_assert_uint_eq(w.nblocks, (expect + SQK_META_SIZE - 1) / SQK_META_SIZE);
	ck_assert_int_eq(meta_writer_finish(&w), 0); /* idempotent */
	ck_assert_uint_eq(w.nblocks, 3);

	all = decode_stream(c, &w, &total, starts);
	ck_assert_uint_eq(total, expect);
	for (i = 0; i < NREC; i++) {
		size_t len = make_record(i, rec);

		ck_assert_mem_eq(at_ref(all, starts, w.nblocks, refs[i]), rec, len);
	}
	if (c) /* compressible records: every block is stored compressed */
		ck_assert_uint_lt(w.out_len, expect / 2);
	else
		ck_assert_uint_eq(w.out_len, expect + 2 * w.nblocks);
	free(all);
	meta_writer_free(&w);
	compressor_destroy(c);
}
END_TEST

/* Raw streams make refs easy to predict: block k starts at k * 8194. */
START_TEST(test_writer_refs_raw)
{
	struct meta_writer w;
	uint8_t buf[SQK_META_SIZE + 10];

	memset(buf, 'r', sizeof(buf));
	meta_writer_init(&w, NULL);
	ck_assert_int_eq(meta_writer_append(&w, buf, 100), 0);
	ck_assert_uint_eq(meta_writer_ref(&w), 100);
	ck_assert_int_eq(meta_writer_append(&w, buf, SQK_META_SIZE - 100), 0);
	/* exactly one full block: flushed at once, the next byte starts block 1 */
	ck_assert_uint_eq(w.nblocks, 1);
	ck_assert_uint_eq(w.pending_len, 0);
	ck_assert_uint_eq(meta_writer_ref(&w), (uint64_t)8194 << 16);
	ck_assert_uint_eq(get_le16(w.out), 0xA000);
	ck_assert_int_eq(meta_writer_append(&w, buf, sizeof(buf)), 0);
	ck_assert_uint_eq(meta_writer_ref(&w), ((uint64_t)2 * 8194 << 16) | 10);
	ck_assert_int_eq(meta_writer_append(&w, buf, 0), 0);
	ck_assert_int_eq(meta_writer_finish(&w), 0);
	ck_assert_uint_eq(w.out_len, 2 * 8194 + 12);
	ck_assert_uint_eq(get_le16(w.out + 2 * 8194), 0x8000 | 10);
	meta_writer_free(&w);
	ck_assert_ptr_null(w.out);
	ck_assert_uint_eq(w.out_len, 0);
}
END_TEST

/* A full block of random bytes does not compress: stored raw with header 0xA000. */
START_TEST(test_writer_raw_fallback)
{
	struct compressor *c = make(comp_ids[_i]);
	struct meta_writer w;
	uint8_t data[SQK_META_SIZE + 300], *all;
	size_t total;

	test_fill_random(data, sizeof(data), 42 + (uint64_t)_i);
	meta_writer_init(&w, c);
	ck_assert_int_eq(meta_writer_append(&w, data, sizeof(data)), 0);
	ck_assert_int_eq(meta_writer_finish(&w), 0);
	ck_assert_uint_eq(w.nblocks, 2);
	ck_assert_uint_eq(w.out[0], 0x00);
	ck_assert_uint_eq(w.out[1], 0xA0);
	ck_assert_mem_eq(w.out + 2, data, SQK_META_SIZE);
	ck_assert_uint_eq(get_le16(w.out + 8194), 0x8000 | 300);
	ck_assert_mem_eq(w.out + 8196, data + SQK_META_SIZE, 300);
	ck_assert_uint_eq(w.out_len, 8194 + 302);
	all = decode_stream(c, &w, &total, NULL);
	ck_assert_uint_eq(total, sizeof(data));
	ck_assert_mem_eq(all, data, sizeof(data));
	free(all);
	meta_writer_free(&w);
	compressor_destroy(c);
}
END_TEST

START_TEST(test_encode_block)
{
	struct compressor *c = make(SQK_COMP_ZSTD);
	uint8_t in[SQK_META_SIZE + 1], enc[SQK_META_SIZE + 2 + GUARD], out[SQK_META_SIZE];
	size_t used = 0;
	ssize_t n;

	memset(in, 'z', sizeof(in));
	memset(enc, GUARD_BYTE, sizeof(enc));
	n = meta_encode_block(c, in, SQK_META_SIZE, enc);
	ck_assert_int_gt(n, 2);
	ck_assert_int_lt(n, 100);
	ck_assert_uint_eq(get_le16(enc), (uint16_t)(n - 2)); /* compressed: bit 15 clear */
	ck_assert_uint_eq(enc[SQK_META_SIZE + 2], GUARD_BYTE);
	ck_assert_int_eq(meta_decode_block(c, enc, (size_t)n, out, SQK_META_SIZE, &used),
			 SQK_META_SIZE);
	ck_assert_uint_eq(used, (size_t)n);
	ck_assert_mem_eq(out, in, SQK_META_SIZE);

	n = meta_encode_block(NULL, in, 5, enc);
	ck_assert_int_eq(n, 7);
	ck_assert_mem_eq(enc, "\x05\x80zzzzz", 7);
	ck_assert_int_eq(meta_encode_block(c, in, 0, enc), SQK_EINVAL);
	ck_assert_int_eq(meta_encode_block(c, in, SQK_META_SIZE + 1, enc), SQK_EINVAL);
	compressor_destroy(c);
}
END_TEST

/* Header, length and size checks of the decoder; out is never written past 8192 bytes. */
START_TEST(test_decode_validation)
{
	uint8_t blk[SQK_META_SIZE + 16], *out = malloc(SQK_META_SIZE + GUARD);
	size_t used = 12345, i;

	ck_assert_ptr_nonnull(out);
	memset(out, GUARD_BYTE, SQK_META_SIZE + GUARD);
	memset(blk, 'q', sizeof(blk));
	put_le16(blk, 0x8000 | 10);
	ck_assert_int_eq(meta_decode_block(NULL, blk, 0, out, 0, &used), SQK_ECORRUPT);
	ck_assert_int_eq(meta_decode_block(NULL, blk, 1, out, 0, &used), SQK_ECORRUPT);
	ck_assert_int_eq(meta_decode_block(NULL, blk, 11, out, 0, &used), SQK_ECORRUPT);
	ck_assert_uint_eq(used, 12345); /* untouched on failure */
	ck_assert_int_eq(meta_decode_block(NULL, blk, 12, out, 0, &used), 10);
	ck_assert_uint_eq(used, 12);
	ck_assert_int_eq(meta_decode_block(NULL, blk, 12, out, 10, &used), 10);
	/* a raw block's length is its decompressed length: a different expectation fails */
	ck_assert_int_eq(meta_decode_block(NULL, blk, 12, out, 9, &used), SQK_ECORRUPT);
	ck_assert_int_eq(meta_decode_block(NULL, blk, 12, out, 8192, &used), SQK_ECORRUPT);
	ck_assert_int_eq(meta_decode_block(NULL, blk, 12, out, 8193, &used), SQK_EINVAL);
	put_le16(blk, 0x8000); /* zero length */
	ck_assert_int_eq(meta_decode_block(NULL, blk, sizeof(blk), out, 0, &used),
			 SQK_ECORRUPT);
	put_le16(blk, 0x8000 | 8193); /* longer than a metadata block */
	ck_assert_int_eq(meta_decode_block(NULL, blk, sizeof(blk), out, 0, &used),
			 SQK_ECORRUPT);
	put_le16(blk, 0xFFFF);
	ck_assert_int_eq(meta_decode_block(NULL, blk, sizeof(blk), out, 0, &used),
			 SQK_ECORRUPT);
	put_le16(blk, 0xA000); /* a full raw block is fine */
	ck_assert_int_eq(meta_decode_block(NULL, blk, 8194, out, 0, &used), 8192);
	put_le16(blk, 20); /* compressed, but no compressor to decode it */
	ck_assert_int_eq(meta_decode_block(NULL, blk, sizeof(blk), out, 0, &used),
			 SQK_EINVAL);
	for (i = 0; i < GUARD; i++)
		ck_assert_uint_eq(out[SQK_META_SIZE + i], GUARD_BYTE);
	free(out);
}
END_TEST

/* A compressed block must decompress to the expected size, and to at most 8192 bytes. */
START_TEST(test_decode_size_checks)
{
	struct compressor *c = make(comp_ids[_i]);
	uint8_t in[3 * SQK_META_SIZE], z[3 * SQK_META_SIZE], blk[SQK_META_SIZE + 2];
	uint8_t *out = malloc(SQK_META_SIZE + GUARD);
	size_t used = 0, i;
	ssize_t n;

	ck_assert_ptr_nonnull(out);
	memset(out, GUARD_BYTE, SQK_META_SIZE + GUARD);
	memset(in, 'm', sizeof(in));
	n = meta_encode_block(c, in, 100, blk);
	ck_assert_int_gt(n, 2);
	ck_assert_uint_eq(get_le16(blk) & 0x8000, 0);
	ck_assert_int_eq(meta_decode_block(c, blk, (size_t)n, out, 100, &used), 100);
	ck_assert_int_eq(meta_decode_block(c, blk, (size_t)n, out, 0, &used), 100);
	ck_assert_int_eq(meta_decode_block(c, blk, (size_t)n, out, 99, &used),
			 SQK_EDECOMPRESS);
	ck_assert_int_eq(meta_decode_block(c, blk, (size_t)n, out, 101, &used),
			 SQK_EDECOMPRESS);
	ck_assert_int_eq(meta_decode_block(c, blk, (size_t)n - 1, out, 0, &used),
			 SQK_ECORRUPT);

	/* 24 KiB compressed into one "block": decoding must stop at 8192 bytes */
	n = comp_compress(c, in, sizeof(in), z, SQK_META_SIZE);
	ck_assert_int_gt(n, 0);
	put_le16(blk, (uint16_t)n);
	memcpy(blk + 2, z, (size_t)n);
	ck_assert_int_eq(meta_decode_block(c, blk, (size_t)n + 2, out, 0, &used),
			 SQK_EDECOMPRESS);
	for (i = 0; i < GUARD; i++)
		ck_assert_uint_eq(out[SQK_META_SIZE + i], GUARD_BYTE);

	/* garbage marked as compressed */
	test_fill_random(blk + 2, 500, 7);
	put_le16(blk, 500);
	ck_assert_int_lt(meta_decode_block(c, blk, 502, out, 0, &used), 0);
	free(out);
	compressor_destroy(c);
}
END_TEST

/* Readers accept a compressed block that is not smaller than its content; only writers avoid
 * producing one. */
START_TEST(test_decode_accepts_expanded_block)
{
	struct compressor *c = make(SQK_COMP_ZSTD);
	uint8_t blk[64], out[SQK_META_SIZE];
	size_t n, used = 0;

	n = ZSTD_compress(blk + 2, sizeof(blk) - 2, "abcde", 5, 3);
	ck_assert(!ZSTD_isError(n));
	ck_assert_uint_gt(n, 5);
	put_le16(blk, (uint16_t)n);
	ck_assert_int_eq(meta_decode_block(c, blk, n + 2, out, 5, &used), 5);
	ck_assert_mem_eq(out, "abcde", 5);
	ck_assert_uint_eq(used, n + 2);
	compressor_destroy(c);
}
END_TEST

/* A stand-in compressor: fails or claims no gain, counting its calls. */
struct fake_comp {
	struct compressor base;
	ssize_t result; /* < 0: error; otherwise bytes "produced" (filled with 'F') */
	unsigned calls;
};

static ssize_t fake_compress(struct compressor *c, const void *in, size_t in_len, void *out,
			     size_t out_cap)
{
	struct fake_comp *f = (struct fake_comp *)c;

	(void)in;
	(void)in_len;
	f->calls++;
	if (f->result > 0)
		memset(out, 'F', (size_t)f->result < out_cap ? (size_t)f->result : out_cap);
	return f->result;
}

static ssize_t fake_decompress(struct compressor *c, const void *in, size_t in_len,
			       void *out, size_t out_cap)
{
	(void)c;
	(void)in;
	(void)in_len;
	(void)out;
	(void)out_cap;
	return SQK_EDECOMPRESS;
}

static void fake_destroy(struct compressor *c)
{
	(void)c;
}

static const struct comp_ops fake_ops = {
	.compress = fake_compress,
	.decompress = fake_decompress,
	.destroy = fake_destroy,
};

START_TEST(test_writer_sticky_error)
{
	struct fake_comp f = { .base = { .ops = &fake_ops }, .result = SQK_ECOMPRESS };
	struct meta_writer w;
	uint8_t data[SQK_META_SIZE];

	memset(data, 'd', sizeof(data));
	meta_writer_init(&w, &f.base);
	ck_assert_int_eq(meta_writer_append(&w, data, 100), 0);
	ck_assert_uint_eq(f.calls, 0);
	ck_assert_int_eq(meta_writer_append(&w, data, sizeof(data)), SQK_ECOMPRESS);
	ck_assert_uint_eq(f.calls, 1);
	ck_assert_uint_eq(w.nblocks, 0);
	ck_assert_int_eq(meta_writer_append(&w, data, 1), SQK_ECOMPRESS);
	ck_assert_int_eq(meta_writer_finish(&w), SQK_ECOMPRESS);
	ck_assert_uint_eq(f.calls, 1); /* sticky: nothing more was attempted */
	meta_writer_free(&w);

	/* a failing last block surfaces from finish */
	f.calls = 0;
	meta_writer_init(&w, &f.base);
	ck_assert_int_eq(meta_writer_append(&w, data, 10), 0);
	ck_assert_int_eq(meta_writer_finish(&w), SQK_ECOMPRESS);
	ck_assert_int_eq(w.error, SQK_ECOMPRESS);
	meta_writer_free(&w);
}
END_TEST

/* A compressor that breaks its contract (result not smaller) still yields a raw block. */
START_TEST(test_encode_guards_not_smaller)
{
	struct fake_comp f = { .base = { .ops = &fake_ops }, .result = 10 };
	uint8_t in[10], enc[12];

	memset(in, 'i', sizeof(in));
	ck_assert_int_eq(meta_encode_block(&f.base, in, sizeof(in), enc), 12);
	ck_assert_uint_eq(get_le16(enc), 0x8000 | 10);
	ck_assert_mem_eq(enc + 2, in, 10);
	f.result = 4;
	ck_assert_int_eq(meta_encode_block(&f.base, in, sizeof(in), enc), 6);
	ck_assert_mem_eq(enc, "\x04\x00" "FFFF", 6);
}
END_TEST

static Suite *meta_suite(void)
{
	Suite *s = suite_create("meta");
	TCase *wr = tcase_create("writer");
	TCase *dec = tcase_create("decode");

	tcase_set_timeout(wr, 60);
	tcase_add_loop_test(wr, test_writer_records_across_blocks, 0, NCOMPS);
	tcase_add_test(wr, test_writer_refs_raw);
	tcase_add_loop_test(wr, test_writer_raw_fallback, 0, NCOMPS);
	tcase_add_test(wr, test_writer_sticky_error);
	tcase_add_test(dec, test_encode_block);
	tcase_add_test(dec, test_encode_guards_not_smaller);
	tcase_add_test(dec, test_decode_validation);
	tcase_add_loop_test(dec, test_decode_size_checks, 1, NCOMPS);
	tcase_add_test(dec, test_decode_accepts_expanded_block);
	suite_add_tcase(s, wr);
	suite_add_tcase(s, dec);
	return s;
}

int main(void)
{
	return test_run_suite(meta_suite());
}
