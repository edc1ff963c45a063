/* SPDX-License-Identifier: BSD-2-Clause */
/* Check suite for the integrity data: trailer round trip and rejections, the streaming writer
 * against one-shot hashes (with the first chunk rewritten last, as the builder does), loading a
 * blob and detecting every single-byte flip in it, chunk checks, and verified reads (the default)
 * through the library on an image built in memory by the builder, with one data byte flipped,
 * and with eight readers at once. The digest tree (version 2): its layout and root, full and
 * lazy loads, groups accepted or refused, hostile trailers, and the writer's choice of layout. */
#include <check.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/endian.h"
#include "sqk/error.h"
#include "common/integrity.h"
#include "sqk/io.h"
#include "sqk/sqk.h"
#include "sqk/sqk_check.h"
#include "mkimage/build.h"
#include "testutil.h"

static struct sqk_integ_trailer good_trailer(void)
{
	struct sqk_integ_trailer t = { .version = 1, .chunk_size = 65536,
				       .covered = 3 * 65536 + 4096, .hashes_at = 3 * 65536 + 4096,
				       .nchunks = 4 };
	for (unsigned i = 0; i < 32; i++)
		t.root[i] = (uint8_t)(i * 7);
	return t;
}

START_TEST(test_trailer_round_trip)
{
	struct sqk_integ_trailer t = good_trailer(), u;
	uint8_t raw[SQK_INTEG_TRAILER_SIZE];

	integ_trailer_encode(&t, raw);
	ck_assert_int_eq(memcmp(raw, "SQKINTG1", 8), 0);
	ck_assert_int_eq(memcmp(raw + 120, "SQKINTG1", 8), 0);
	ck_assert_uint_eq(get_le32(raw + 12), 65536);
	ck_assert_int_eq(integ_trailer_decode(raw, &u), 0);
	ck_assert_int_eq(memcmp(&t, &u, sizeof(t)), 0);
}
END_TEST

/* Each mutation of a good trailer must be rejected. */
START_TEST(test_trailer_rejects)
{
	struct sqk_integ_trailer t;
	uint8_t raw[SQK_INTEG_TRAILER_SIZE];

	for (int i = 0; i < 11; i++) {
		t = good_trailer();
		switch (i) {
		case 0: t.version = 2; break;
		case 1: t.chunk_size = 65535; break;
		case 2: t.chunk_size = 2048; break;
		case 3: t.chunk_size = 2u << 20; break;
		case 4: t.covered += 1; t.hashes_at += 1; break;
		case 5: t.hashes_at += 4096; break;
		case 6: t.nchunks = 5; break;
		case 7: t.nchunks = 3; break;
		case 8: t.covered = 0; t.hashes_at = 0; t.nchunks = 0; break;
		default: break;
		}
		integ_trailer_encode(&t, raw);
		if (i == 9)
			raw[0] ^= 1;
		if (i == 10)
			raw[100] = 1; /* reserved */
		ck_assert_msg(integ_trailer_decode(raw, &t) < 0, "mutation %d accepted", i);
	}
	t = good_trailer();
	integ_trailer_encode(&t, raw);
	raw[127] ^= 1; /* one magic damaged: a damaged trailer, not none */
	ck_assert_int_eq(integ_trailer_decode(raw, &t), SQK_ECORRUPT);
	raw[0] ^= 1; /* neither magic: no trailer */
	ck_assert_int_eq(integ_trailer_decode(raw, &t), SQK_ENOENT);
}
END_TEST

static uint8_t *pattern(size_t len, unsigned seed)
{
	uint8_t *p = malloc(len);
	uint32_t x = seed * 2654435761u + 1;

	ck_assert_ptr_nonnull(p);
	for (size_t i = 0; i < len; i++) {
		x = x * 1103515245u + 12345u;
		p[i] = (uint8_t)(x >> 16);
	}
	return p;
}

/* Feeds data as the builder does: 96..end in odd-sized sequential pieces, then 0..96 last. */
static void feed(struct integ_writer *w, const uint8_t *data, size_t len)
{
	size_t off = 96;

	while (off < len) {
		size_t n = 1000 + off % 7777;
		if (n > len - off)
			n = len - off;
		ck_assert_int_eq(integ_writer_update(w, off, data + off, n), 0);
		off += n;
	}
	ck_assert_int_eq(integ_writer_update(w, 0, data, 96), 0);
}

/* Builds data || blob into *file (caller frees); returns the file length. */
static size_t make_file(const uint8_t *data, size_t len, uint32_t cs, uint8_t **file,
			uint8_t root[32])
{
	struct integ_writer *w;
	uint8_t *blob;
	size_t blen;

	ck_assert_int_eq(integ_writer_create(cs, &w), 0);
	feed(w, data, len);
	ck_assert_int_eq(integ_writer_finish(w, len, &blob, &blen, root), 0);
	integ_writer_destroy(w);
	*file = malloc(len + blen);
	memcpy(*file, data, len);
	memcpy(*file + len, blob, blen);
	free(blob);
	ck_assert_uint_eq((len + blen) % 4096, 0);
	return len + blen;
}

START_TEST(test_writer_matches_one_shot)
{
	const size_t sizes[] = { 4096, 65536, 65536 + 4096, 5 * 65536, 300 * 1024 };

	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		size_t len = sizes[i];
		uint8_t *data = pattern(len, (unsigned)i), *file, root[32], d[32];
		size_t flen = make_file(data, len, 0, &file, root);
		uint64_t n = (len + 65535) / 65536;
		struct sqk_integ_trailer t;

		for (uint64_t k = 0; k < n; k++) {
			size_t e = (k + 1) * 65536 < len ? (k + 1) * 65536 : len;
			hash_sha256(data + k * 65536, e - k * 65536, d);
			ck_assert_int_eq(memcmp(d, file + len + 32 * k, 32), 0);
		}
		ck_assert_int_eq(integ_trailer_decode(file + flen - 128, &t), 0);
		ck_assert_uint_eq(t.covered, len);
		ck_assert_uint_eq(t.nchunks, n);
		ck_assert_int_eq(memcmp(t.root, root, 32), 0);
		/* root = SHA-256(trailer with root zeroed || digests) */
		uint8_t *buf = malloc(128 + 32 * n);
		memcpy(buf, file + flen - 128, 128);
		memset(buf + 40, 0, 32);
		memcpy(buf + 128, file + len, 32 * n);
		hash_sha256(buf, 128 + 32 * n, d);
		ck_assert_int_eq(memcmp(d, root, 32), 0);
		free(buf);
		free(file);
		free(data);
	}
}
END_TEST

START_TEST(test_writer_rejects)
{
	struct integ_writer *w;
	uint8_t buf[8192] = { 0 }, *blob, root[32];
	size_t blen;

	ck_assert_int_eq(integ_writer_create(3000, &w), SQK_EINVAL);
	ck_assert_int_eq(integ_writer_create(4096, &w), 0);
	ck_assert_int_eq(integ_writer_update(w, 0, buf, 8192), 0);
	/* a gap past chunk 0 */
	ck_assert_int_eq(integ_writer_update(w, 8193, buf, 10), SQK_EINVAL);
	/* covered not what was fed / not 4K-aligned */
	ck_assert_int_eq(integ_writer_finish(w, 12288, &blob, &blen, root), SQK_EINVAL);
	ck_assert_int_eq(integ_writer_finish(w, 8000, &blob, &blen, root), SQK_EINVAL);
	ck_assert_int_eq(integ_writer_finish(w, 8192, &blob, &blen, root), 0);
	free(blob);
	integ_writer_destroy(w);
	integ_writer_destroy(NULL);
}
END_TEST

static int load_mem(const uint8_t *file, size_t len, struct integ *ig)
{
	struct sqk_io *io;
	int rc;

	ck_assert_int_eq(sqk_io_mem_create(file, len, &io), 0);
	rc = integ_load(io, len, ig);
	sqk_io_destroy(io);
	return rc;
}

START_TEST(test_load_and_check)
{
	size_t len = 3 * 65536 + 8192;
	uint8_t *data = pattern(len, 9), *file, root[32];
	size_t flen = make_file(data, len, 0, &file, root);
	struct integ ig;
	uint64_t s, e;

	ck_assert_int_eq(load_mem(file, flen, &ig), 0);
	ck_assert_uint_eq(ig.t.nchunks, 4);
	ck_assert_int_eq(memcmp(ig.t.root, root, 32), 0);
	integ_chunk_range(&ig, 3, &s, &e);
	ck_assert_uint_eq(s, 3 * 65536);
	ck_assert_uint_eq(e, len);
	for (uint64_t k = 0; k < 4; k++) {
		integ_chunk_range(&ig, k, &s, &e);
		ck_assert_int_eq(integ_check_chunk(&ig, k, file + s, e - s), 0);
		file[s + (e - s) / 3] ^= 0x20;
		ck_assert_int_eq(integ_check_chunk(&ig, k, file + s, e - s), SQK_ECORRUPT);
		file[s + (e - s) / 3] ^= 0x20;
	}
	ck_assert_int_eq(integ_check_chunk(&ig, 4, file, 10), SQK_ECORRUPT);
	integ_free(&ig);
	integ_free(NULL);
	/* no trailer at all */
	ck_assert_int_eq(load_mem(data, len, &ig), SQK_ENOENT);
	integ_free(&ig);
	/* truncated by 4K: the trailer is gone */
	ck_assert_int_lt(load_mem(file, flen - 4096, &ig), 0);
	integ_free(&ig);
	free(file);
	free(data);
}
END_TEST

/* Every byte of a small blob (digests, padding, trailer) flipped in turn is detected. */
START_TEST(test_every_flip_detected)
{
	size_t len = 5 * 4096;
	uint8_t *data = pattern(len, 3), *file, root[32];
	size_t flen = make_file(data, len, 4096, &file, root);
	struct integ ig;

	ck_assert_int_eq(load_mem(file, flen, &ig), 0);
	integ_free(&ig);
	for (size_t i = len; i < flen; i++) {
		file[i] ^= 0x01;
		int rc = load_mem(file, flen, &ig);
		ck_assert_msg(rc == SQK_ECORRUPT || (rc == SQK_ENOENT && i >= flen - 8),
			      "flip at %zu (blob offset %zu) gave %d", i, i - len, rc);
		integ_free(&ig);
		file[i] ^= 0x01;
	}
	free(file);
	free(data);
}
END_TEST

START_TEST(test_hex)
{
	uint8_t d[32], e[32];
	char hex[65];

	for (int i = 0; i < 32; i++)
		d[i] = (uint8_t)(i * 37 + 5);
	integ_hex(d, hex);
	ck_assert_uint_eq(strlen(hex), 64);
	ck_assert_int_eq(integ_parse_hex(hex, e), 0);
	ck_assert_int_eq(memcmp(d, e, 32), 0);
	hex[10] = 'g';
	ck_assert_int_eq(integ_parse_hex(hex, e), SQK_EINVAL);
	ck_assert_int_eq(integ_parse_hex("abcd", e), SQK_EINVAL);
	hash_sha256("abc", 3, d);
	integ_hex(d, hex);
	ck_assert_str_eq(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}
END_TEST

/* ---- verified reads on an image built in memory ---- */

static char tree[64];

static void write_file(const char *rel, const void *data, size_t len)
{
	char p[256];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s", tree, rel);
	f = fopen(p, "wb");
	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fwrite(data, 1, len, f), len);
	fclose(f);
}

/* Builds a tree of two incompressible files (stored raw) into memory through sqk_build, with
 * or without integrity data. */
static struct sqk_io *build_image(uint8_t **a, uint8_t **b, bool no_checksums)
{
	static char *sources[1] = { tree };
	struct sqk_build_opts o;
	struct sqk_build_source s;
	struct sqk_build_result r;
	struct sqk_io *mem;

	strcpy(tree, "/tmp/sqk-integ-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tree));
	*a = pattern(400 * 1024, 11);
	*b = pattern(300 * 1024, 12);
	write_file("a.bin", *a, 400 * 1024);
	write_file("b.bin", *b, 300 * 1024);
	sqk_build_opts_init(&o);
	o.quiet = true;
	o.no_checksums = no_checksums;
	sqk_build_source_init(&s, SQK_BUILD_DIRS);
	s.sources = sources;
	s.nsources = 1;
	sqk_build_result_init(&r);
	ck_assert_int_eq(sqk_io_mem_create(NULL, 0, &mem), 0);
	ck_assert_msg(sqk_build(&o, &s, mem, &r) == 0, "build: %s", r.msg);
	ck_assert(r.have_root == !no_checksums);
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tree);
	ck_assert_int_eq(system(cmd), 0);
	return mem;
}

static int read_whole(struct sqk_image *img, const char *path, const uint8_t *want, size_t len)
{
	struct sqk_inode ino;
	uint8_t *buf = malloc(len);
	ssize_t n;
	int rc = sqk_lookup_path(img, path, &ino);

	ck_assert_int_eq(rc, 0);
	n = sqk_read(img, &ino, buf, len, 0);
	if (n >= 0) {
		ck_assert_int_eq(n, (ssize_t)len);
		ck_assert_int_eq(memcmp(buf, want, len), 0);
	}
	free(buf);
	return n < 0 ? (int)n : 0;
}

/* How open_copy opens: opts zeroed but for the log (the default), no_verify, quiet_mismatch, or
 * NULL opts. */
enum open_how { OPEN_DEFAULT, OPEN_NO_VERIFY, OPEN_QUIET, OPEN_NULL };

static struct sqk_image *open_copy(const uint8_t *data, size_t len, enum open_how how,
				   struct test_log *log, struct sqk_io **io, int *rc)
{
	struct sqk_open_opts o = { .size = sizeof(o),
		.log = test_log_add, .log_ctx = log, .name = "mem.sqsh",
				   .no_verify = how == OPEN_NO_VERIFY,
				   .quiet_mismatch = how == OPEN_QUIET };
	struct sqk_image *img = NULL;

	ck_assert_int_eq(sqk_io_mem_create(data, len, io), 0);
	*rc = sqk_image_open_io(*io, how == OPEN_NULL ? NULL : &o, &img);
	return img;
}

/* The chunk holding image byte `at` is the one sqk_image_mismatch gives for inode `ino`, once. */
static void assert_mismatch(struct sqk_image *img, uint32_t ino, uint64_t at)
{
	struct sqk_mismatch m;

	ck_assert_int_eq(sqk_image_mismatch(img, ino, &m), 0);
	ck_assert_uint_eq(m.ino, ino);
	ck_assert_uint_le(m.start, at);
	ck_assert_uint_gt(m.end, at);
	ck_assert_uint_eq(m.start, m.chunk * SQK_INTEG_CHUNK_DEFAULT);
	ck_assert_int_eq(sqk_image_mismatch(img, ino, &m), SQK_ENOENT); /* forgotten */
}

/* Reads are verified by default (zeroed opts and NULL opts alike), each chunk hashed once; a
 * flipped byte in a raw data block fails that file's read with SQK_ECORRUPT (the other file
 * reads), logged once however often it is read, naming the chunk's image offset, and
 * sqk_image_mismatch gives that chunk for that inode; quiet_mismatch logs nothing but still
 * keeps it; no_verify serves the wrong bytes; a flipped root digest fails the open. */
START_TEST(test_verified_reads)
{
	uint8_t *a, *b;
	struct sqk_io *mem = build_image(&a, &b, false), *io;
	size_t len;
	const uint8_t *img_bytes = sqk_io_mem_data(mem, &len);
	uint8_t *copy = malloc(len);
	struct test_log log = { "", 0 };
	struct sqk_image *img;
	struct sqk_integ_trailer t;
	struct sqk_stats st = { .size = sizeof(st) };
	struct sqk_inode ino;
	char want[256];
	int rc;

	memcpy(copy, img_bytes, len);
	img = open_copy(copy, len, OPEN_DEFAULT, &log, &io, &rc);
	ck_assert_int_eq(rc, 0);
	ck_assert(sqk_image_verified(img));
	ck_assert_int_eq(sqk_image_integrity(img, &t), 0);
	ck_assert_uint_eq(t.chunk_size, SQK_INTEG_CHUNK_DEFAULT);
	ck_assert_int_eq(read_whole(img, "a.bin", a, 400 * 1024), 0);
	ck_assert_int_eq(read_whole(img, "b.bin", b, 300 * 1024), 0);
	sqk_image_stats(img, &st);
	ck_assert_uint_gt(st.chunks_hashed, 0);
	ck_assert_uint_le(st.chunks_hashed, t.nchunks);
	/* read again: nothing hashed again */
	ck_assert_int_eq(read_whole(img, "a.bin", a, 400 * 1024), 0);
	uint64_t hashed = st.chunks_hashed;
	sqk_image_stats(img, &st);
	ck_assert_uint_eq(st.chunks_hashed, hashed);
	ck_assert_int_eq(log.lines, 0);
	sqk_image_close(img);
	sqk_io_destroy(io);

	img = open_copy(copy, len, OPEN_NULL, &log, &io, &rc);
	ck_assert_int_eq(rc, 0);
	ck_assert(sqk_image_verified(img));
	sqk_image_close(img);
	sqk_io_destroy(io);

	/* one byte of a.bin's data flipped (raw block: find it by content) */
	uint8_t *hit = memmem(copy, len, a + 200 * 1024, 64);
	ck_assert_ptr_nonnull(hit);
	hit[10] ^= 0x40;
	uint64_t at = (uint64_t)(hit + 10 - copy), cs = SQK_INTEG_CHUNK_DEFAULT;
	snprintf(want, sizeof(want), "mem.sqsh: integrity check failed at image offset %llu: "
		 "bytes %llu..%llu (chunk %llu) do not match their digest (read of inode ",
		 (unsigned long long)(at / cs * cs), (unsigned long long)(at / cs * cs),
		 (unsigned long long)(at / cs * cs + cs - 1), (unsigned long long)(at / cs));
	img = open_copy(copy, len, OPEN_DEFAULT, &log, &io, &rc);
	ck_assert_int_eq(rc, 0);
	ck_assert_int_eq(sqk_lookup_path(img, "a.bin", &ino), 0);
	ck_assert_int_eq(read_whole(img, "a.bin", a, 400 * 1024), SQK_ECORRUPT);
	ck_assert_int_eq(read_whole(img, "b.bin", b, 300 * 1024), 0);
	ck_assert_msg(strstr(log.text, want), "%s", log.text);
	ck_assert_int_eq(log.lines, 1);
	assert_mismatch(img, ino.ino, at);
	/* and again: the failure is not cached as verified, nor logged twice */
	ck_assert_int_eq(read_whole(img, "a.bin", a, 400 * 1024), SQK_ECORRUPT);
	ck_assert_int_eq(log.lines, 1);
	{
		struct sqk_mismatch m;
		ck_assert_int_eq(sqk_image_mismatch(img, ino.ino + 1, &m), SQK_ENOENT);
		ck_assert_int_eq(sqk_image_mismatch(img, 0, &m), 0); /* 0: any */
		ck_assert_uint_eq(m.ino, ino.ino);
		ck_assert_int_eq(sqk_image_mismatch(img, 0, &m), SQK_ENOENT);
	}
	sqk_image_close(img);
	sqk_io_destroy(io);

	/* quiet_mismatch: not logged, still kept */
	log.text[0] = 0;
	log.lines = 0;
	img = open_copy(copy, len, OPEN_QUIET, &log, &io, &rc);
	ck_assert_int_eq(rc, 0);
	ck_assert_int_eq(read_whole(img, "a.bin", a, 400 * 1024), SQK_ECORRUPT);
	ck_assert_int_eq(log.lines, 0);
	assert_mismatch(img, ino.ino, at);
	sqk_image_close(img);
	sqk_io_destroy(io);

	/* no_verify: the same read "succeeds" with wrong data */
	img = open_copy(copy, len, OPEN_NO_VERIFY, &log, &io, &rc);
	ck_assert_int_eq(rc, 0);
	ck_assert(!sqk_image_verified(img));
	{
		uint8_t *buf = malloc(400 * 1024);
		ck_assert_int_eq(sqk_read(img, &ino, buf, 400 * 1024, 0), 400 * 1024);
		ck_assert_int_ne(memcmp(buf, a, 400 * 1024), 0);
		free(buf);
	}
	sqk_image_stats(img, &st);
	ck_assert_uint_eq(st.chunks_hashed, 0);
	sqk_image_close(img);
	sqk_io_destroy(io);

	/* a flipped root digest in the trailer: the open fails (by default) */
	hit[10] ^= 0x40;
	copy[len - SQK_INTEG_TRAILER_SIZE + 40] ^= 1;
	img = open_copy(copy, len, OPEN_NULL, &log, &io, &rc);
	ck_assert_int_eq(rc, SQK_ECORRUPT);
	ck_assert_ptr_null(img);
	sqk_io_destroy(io);
	free(copy);
	free(a);
	free(b);
	sqk_io_destroy(mem);
}
END_TEST

struct reader_arg {
	struct sqk_image *img;
	const uint8_t *want;
	int rc;
};

static void *read_a(void *p)
{
	struct reader_arg *r = p;
	struct sqk_inode ino;
	uint8_t *buf = malloc(64 * 1024);

	r->rc = sqk_lookup_path(r->img, "a.bin", &ino);
	for (uint64_t off = 0; !r->rc && off < 400 * 1024; off += 64 * 1024) {
		size_t want = 400 * 1024 - off < 64 * 1024 ? 400 * 1024 - off : 64 * 1024;
		ssize_t n = sqk_read(r->img, &ino, buf, 64 * 1024, off);
		if (n != (ssize_t)want || memcmp(buf, r->want + off, want))
			r->rc = n < 0 ? (int)n : -1;
	}
	free(buf);
	return NULL;
}

/* Eight threads reading one file at once through a verified image: right bytes, and no chunk
 * hashed twice (a chunk being hashed is waited for; the bitmap remembers it). */
START_TEST(test_verified_concurrent)
{
	uint8_t *a, *b;
	struct sqk_io *mem = build_image(&a, &b, false);
	struct sqk_open_opts o = { .size = sizeof(o), .threads = 4, .cache_bytes = 1 << 20 };
	struct sqk_integ_trailer t;
	struct reader_arg r[8];
	pthread_t th[8];
	struct sqk_image *img;
	struct sqk_stats st = { .size = sizeof(st) };

	ck_assert_int_eq(sqk_image_open_io(mem, &o, &img), 0);
	ck_assert(sqk_image_verified(img));
	ck_assert_int_eq(sqk_image_integrity(img, &t), 0);
	for (int i = 0; i < 8; i++) {
		r[i] = (struct reader_arg){ img, a, 0 };
		ck_assert_int_eq(pthread_create(&th[i], NULL, read_a, &r[i]), 0);
	}
	for (int i = 0; i < 8; i++) {
		pthread_join(th[i], NULL);
		ck_assert_int_eq(r[i].rc, 0);
	}
	sqk_image_stats(img, &st);
	ck_assert_uint_gt(st.chunks_hashed, 400 * 1024 / SQK_INTEG_CHUNK_DEFAULT);
	ck_assert_uint_le(st.chunks_hashed, t.nchunks);
	sqk_image_close(img);
	free(a);
	free(b);
	sqk_io_destroy(mem);
}
END_TEST

START_TEST(test_no_integrity_data)
{
	uint8_t *a, *b;
	struct sqk_io *mem = build_image(&a, &b, true), *io;
	size_t len;
	const uint8_t *bytes = sqk_io_mem_data(mem, &len);
	struct test_log log = { "", 0 };
	struct sqk_integ_trailer t;
	int rc;
	struct sqk_image *img = open_copy(bytes, len, OPEN_DEFAULT, &log, &io, &rc);

	ck_assert_int_eq(rc, 0);
	ck_assert(!sqk_image_verified(img));
	ck_assert_int_eq(sqk_image_integrity(img, &t), SQK_ENOENT);
	ck_assert_int_eq(log.lines, 0); /* the rule for other tools' images: not logged */
	ck_assert_int_eq(read_whole(img, "a.bin", a, 400 * 1024), 0);
	ck_assert_uint_eq(len % 4096, 0);
	sqk_image_close(img);
	sqk_io_destroy(io);
	free(a);
	free(b);
	sqk_io_destroy(mem);
}
END_TEST

/* ---- fast checksums ---- */

/* Builds data || fast block || digests, padding, trailer into *file (caller frees), as the
 * builder does: everything fed, then the block (computed with chunk 0 final) fed at len. The
 * block's offset is len; returns the file length, its block length in *blen. */
static size_t make_fast_file(const uint8_t *data, size_t len, uint32_t cs, uint8_t **file,
			     size_t *blen)
{
	struct integ_writer *w;
	uint8_t *blk, *blob, root[32];
	size_t bl, tl;

	ck_assert_int_eq(integ_writer_create(cs, &w), 0);
	feed(w, data, len);
	ck_assert_int_eq(integ_writer_fast(w, len, &blk, &bl), 0);
	ck_assert_ptr_nonnull(blk);
	/* chunk 0 is final now, and there is one block per writer */
	ck_assert_int_eq(integ_writer_update(w, 0, data, 96), SQK_EINVAL);
	{
		uint8_t *b2;
		size_t l2;
		ck_assert_int_eq(integ_writer_fast(w, len, &b2, &l2), SQK_EINVAL);
	}
	ck_assert_int_eq(integ_writer_update(w, len, blk, bl), 0);
	ck_assert_int_eq(integ_writer_finish(w, len + bl, &blob, &tl, root), 0);
	integ_writer_destroy(w);
	*file = malloc(len + bl + tl);
	memcpy(*file, data, len);
	memcpy(*file + len, blk, bl);
	memcpy(*file + len + bl, blob, tl);
	free(blk);
	free(blob);
	*blen = bl;
	return len + bl + tl;
}

/* The writer's block: one XXH3-64 per chunk wholly before it (chunk 0 as rewritten last), zero
 * padding, the footer; it decodes, it is covered by the SHA-256 digests, and each entry checks
 * its chunk (a flipped byte fails). No whole chunk before `at`: no block. */
START_TEST(test_fast_writer)
{
	size_t len = 5 * 65536 + 8192, bl;
	uint8_t *data = pattern(len, 21), *file;
	size_t flen = make_fast_file(data, len, 0, &file, &bl);
	struct integ ig;
	struct integ_fast f;

	ck_assert_uint_eq(bl, 4096);
	ck_assert_int_eq(load_mem(file, flen, &ig), 0);
	ck_assert_uint_eq(ig.t.covered, len + bl);
	ck_assert_int_eq(memcmp(file + bl + len - 8, SQK_FAST_MAGIC, 8), 0);
	ck_assert_uint_eq(get_le64(file + len + bl - 32), 5);         /* n = at / cs */
	ck_assert_uint_eq(get_le64(file + len + bl - 24), 4096);      /* len */
	ck_assert_uint_eq(get_le32(file + len + bl - 16), 1);         /* version */
	ck_assert_uint_eq(get_le32(file + len + bl - 12), SQK_FAST_XXH3_64);
	for (uint64_t k = 0; k < 5; k++)
		ck_assert_uint_eq(get_le64(file + len + 8 * k),
				  hash_xxh3_64(data + k * 65536, 65536));
	for (size_t i = len + 40; i < len + bl - 32; i++)
		ck_assert_uint_eq(file[i], 0);
	ck_assert_int_eq(integ_fast_decode(file + len, bl, &ig.t, len, &f), 0);
	ck_assert_uint_eq(f.at, len);
	ck_assert_uint_eq(f.n, 5);
	for (uint64_t k = 0; k < 5; k++) {
		ck_assert_int_eq(integ_fast_check_chunk(&ig, &f, k, file + k * 65536, 65536),
				 0);
		file[k * 65536 + 1000 + k] ^= 0x08;
		ck_assert_int_eq(integ_fast_check_chunk(&ig, &f, k, file + k * 65536, 65536),
				 SQK_ECORRUPT);
		file[k * 65536 + 1000 + k] ^= 0x08;
	}
	/* the chunk holding the block has no entry */
	ck_assert_int_eq(integ_fast_check_chunk(&ig, &f, 5, file + 5 * 65536, 65536),
			 SQK_ECORRUPT);
	/* the block's bytes are covered by the digests: a flipped entry fails chunk 5's digest */
	file[len + 3] ^= 1;
	ck_assert_int_eq(integ_check_chunk(&ig, 5, file + 5 * 65536, len + bl - 5 * 65536),
			 SQK_ECORRUPT);
	file[len + 3] ^= 1;
	integ_fast_free(&f);
	integ_fast_free(NULL);
	integ_free(&ig);
	free(file);

	/* no whole chunk before the block: none; an unaligned or early offset is refused */
	struct integ_writer *w;
	uint8_t *blk;
	ck_assert_int_eq(integ_writer_create(0, &w), 0);
	feed(w, data, 8192);
	ck_assert_int_eq(integ_writer_fast(w, 8192, &blk, &bl), 0);
	ck_assert_ptr_null(blk);
	ck_assert_uint_eq(bl, 0);
	integ_writer_destroy(w);
	ck_assert_int_eq(integ_writer_create(4096, &w), 0);
	feed(w, data, 5 * 4096);
	ck_assert_int_eq(integ_writer_fast(w, 5 * 4096 + 100, &blk, &bl), SQK_EINVAL);
	integ_writer_destroy(w);
	ck_assert_int_eq(integ_writer_create(4096, &w), 0);
	feed(w, data, 5 * 4096);
	/* not all fed */
	ck_assert_int_eq(integ_writer_fast(w, 4 * 4096, &blk, &bl), SQK_EINVAL);
	integ_writer_destroy(w);
	ck_assert_uint_eq(integ_fast_len(0), 4096);
	ck_assert_uint_eq(integ_fast_len(508), 4096);
	ck_assert_uint_eq(integ_fast_len(509), 8192);
	ck_assert_uint_eq(integ_fast_len(UINT64_MAX / 4), 0);
	free(data);
}
END_TEST

/* Hostile footers and blocks: every field distrusted, no allocation beyond the block. */
START_TEST(test_fast_hostile)
{
	size_t len = 3 * 65536, bl;
	uint8_t *data = pattern(len, 22), *file;
	size_t flen = make_fast_file(data, len, 0, &file, &bl);
	struct integ ig;
	struct integ_fast f;
	uint8_t *blk = malloc(bl), *foot;
	uint64_t at, l, n;

	ck_assert_int_eq(load_mem(file, flen, &ig), 0);
	memcpy(blk, file + len, bl);
	foot = blk + bl - SQK_FAST_FOOTER_SIZE;
	ck_assert_int_eq(integ_fast_decode(blk, bl, &ig.t, len, &f), 0);
	integ_fast_free(&f);
#define HOSTILE(edit, undo, want)                                                           \
	do {                                                                                \
		edit;                                                                       \
		ck_assert_int_eq(integ_fast_decode(blk, bl, &ig.t, len, &f), want);     \
		ck_assert_ptr_null(f.sums);                                                 \
		undo;                                                                       \
	} while (0)
	HOSTILE(foot[24] ^= 1, foot[24] ^= 1, SQK_ENOENT);                   /* bad magic */
	HOSTILE(put_le64(foot, 4), put_le64(foot, 3), SQK_ECORRUPT); /* n too many */
	HOSTILE(put_le64(foot, 2), put_le64(foot, 3), SQK_ECORRUPT); /* n too few */
	HOSTILE(put_le64(foot, UINT64_MAX / 8), put_le64(foot, 3), SQK_ECORRUPT);
	HOSTILE(put_le64(foot + 8, 4000), put_le64(foot + 8, 4096), SQK_ECORRUPT);
	HOSTILE(put_le64(foot + 8, 0), put_le64(foot + 8, 4096), SQK_ECORRUPT);
	/* a block longer than its entries need (it would reach into the image or the hint) */
	HOSTILE(put_le64(foot + 8, 8192), put_le64(foot + 8, 4096), SQK_ECORRUPT);
	/* len beyond covered */
	HOSTILE(put_le64(foot + 8, ig.t.covered + 4096), put_le64(foot + 8, 4096),
		SQK_ECORRUPT);
	HOSTILE(put_le64(foot + 8, UINT64_MAX - 4095), put_le64(foot + 8, 4096),
		SQK_ECORRUPT);
	HOSTILE(blk[100] = 1, blk[100] = 0, SQK_ECORRUPT); /* non-zero padding */
	HOSTILE(foot[16] = 2, foot[16] = 1, SQK_EUNSUPPORTED); /* another version: skipped */
	HOSTILE(foot[20] = 2, foot[20] = 1, SQK_EUNSUPPORTED); /* another algorithm */
	/* overlapping what must precede it (the hint, the image): min_start past its start */
	ck_assert_int_eq(integ_fast_decode(blk, bl, &ig.t, len + 4096, &f), SQK_ECORRUPT);
	ck_assert_int_eq(integ_fast_footer(foot, &ig.t, len + 4096, &at, &l, &n), SQK_ECORRUPT);
	ck_assert_int_eq(integ_fast_footer(foot, &ig.t, len, &at, &l, &n), 0);
	ck_assert_uint_eq(at, len);
	ck_assert_uint_eq(l, 4096);
	ck_assert_uint_eq(n, 3);
	/* a block shorter than its footer */
	ck_assert_int_eq(integ_fast_decode(blk, 16, &ig.t, len, &f), SQK_ECORRUPT);
#undef HOSTILE
	integ_free(&ig);
	free(blk);
	free(file);
	free(data);
}
END_TEST

/* Rewrites the SHA-256 digest of chunk k of an image (bytes changed) and the root digest, as a
 * builder would have: the integrity data stays valid (a test of what only XXH3 catches). */
static void resign_chunk(uint8_t *file, size_t flen, uint64_t k)
{
	struct sqk_integ_trailer t;
	uint8_t *tr = file + flen - SQK_INTEG_TRAILER_SIZE;

	ck_assert_int_eq(integ_trailer_decode(tr, &t), 0);
	uint64_t s = k * t.chunk_size,
		 e = s + t.chunk_size < t.covered ? s + t.chunk_size : t.covered;
	hash_sha256(file + s, e - s, file + t.covered + 32 * k);
	uint8_t *buf = malloc(128 + 32 * t.nchunks);
	memcpy(buf, tr, 128);
	memset(buf + 40, 0, 32);
	memcpy(buf + 128, file + t.covered, 32 * t.nchunks);
	hash_sha256(buf, 128 + 32 * t.nchunks, tr + 40);
	free(buf);
}

/* The image's fast block as libsqk sees it: where it is and its entries' count. */
static void fast_of(const uint8_t *file, size_t flen, uint64_t *at, uint64_t *n)
{
	struct sqk_integ_trailer t;

	ck_assert_int_eq(integ_trailer_decode(file + flen - SQK_INTEG_TRAILER_SIZE, &t), 0);
	const uint8_t *foot = file + t.covered - SQK_FAST_FOOTER_SIZE;
	ck_assert_int_eq(memcmp(foot + 24, SQK_FAST_MAGIC, 8), 0);
	*n = get_le64(foot);
	*at = t.covered - get_le64(foot + 8);
}

/* Verified reads use XXH3-64 when the image has fast checksums: counted, and a wrong entry (the
 * SHA-256 digests re-signed to match) fails the read of its chunk, while a pinned root digest
 * reads with SHA-256 only and gets the right bytes; a flipped raw byte is caught by XXH3. */
START_TEST(test_fast_reads)
{
	uint8_t *a, *b;
	struct sqk_io *mem = build_image(&a, &b, false), *io;
	size_t len;
	const uint8_t *bytes = sqk_io_mem_data(mem, &len);
	uint8_t *copy = malloc(len);
	struct test_log log = { "", 0 };
	struct sqk_integ_trailer t;
	struct sqk_image *img;
	struct sqk_stats st = { .size = sizeof(st) };
	uint64_t at, n, nchunks;
	bool used;
	int rc;

	memcpy(copy, bytes, len);
	fast_of(copy, len, &at, &n);
	ck_assert_uint_gt(n, 5);
	img = open_copy(copy, len, OPEN_DEFAULT, &log, &io, &rc);
	ck_assert_int_eq(rc, 0);
	ck_assert_int_eq(sqk_image_fast_checksums(img, &nchunks, &used), 0);
	ck_assert_uint_eq(nchunks, n);
	ck_assert(used);
	ck_assert_int_eq(sqk_image_integrity(img, &t), 0);
	ck_assert_int_eq(read_whole(img, "a.bin", a, 400 * 1024), 0);
	ck_assert_int_eq(read_whole(img, "b.bin", b, 300 * 1024), 0);
	sqk_image_stats(img, &st);
	ck_assert_uint_gt(st.chunks_xxh3, 400 * 1024 / 65536);
	ck_assert_uint_ge(st.chunks_sha256, 1); /* the superblock's chunk, before the block */
	ck_assert_uint_eq(st.chunks_xxh3 + st.chunks_sha256, st.chunks_hashed);
	ck_assert_uint_le(st.chunks_hashed, t.nchunks);
	ck_assert_int_eq(log.lines, 0);
	sqk_image_close(img);
	sqk_io_destroy(io);

	/* a pinned root digest: SHA-256 for every chunk */
	{
		struct sqk_open_opts o = { .size = sizeof(o),
			.log = test_log_add, .log_ctx = &log, .root_hash = t.root };
		ck_assert_int_eq(sqk_io_mem_create(copy, len, &io), 0);
		ck_assert_int_eq(sqk_image_open_io(io, &o, &img), 0);
		ck_assert_int_eq(sqk_image_fast_checksums(img, &nchunks, &used), 0);
		ck_assert(!used);
		ck_assert_int_eq(read_whole(img, "a.bin", a, 400 * 1024), 0);
		sqk_image_stats(img, &st);
		ck_assert_uint_eq(st.chunks_xxh3, 0);
		ck_assert_uint_gt(st.chunks_sha256, 400 * 1024 / 65536);
		sqk_image_close(img);
		sqk_io_destroy(io);
	}

	/* a wrong fast entry for the chunk holding a.bin's byte 200 KiB, digests re-signed */
	const uint8_t *hit = memmem(copy, len, a + 200 * 1024, 64);
	ck_assert_ptr_nonnull(hit);
	uint64_t k = (uint64_t)(hit - copy) / t.chunk_size;
	ck_assert_uint_lt(k, n);
	copy[at + 8 * k] ^= 0x10;
	resign_chunk(copy, len, at / t.chunk_size);
	ck_assert_int_eq(integ_trailer_decode(copy + len - 128, &t), 0);
	img = open_copy(copy, len, OPEN_DEFAULT, &log, &io, &rc);
	ck_assert_int_eq(rc, 0);
	ck_assert_int_eq(read_whole(img, "a.bin", a, 400 * 1024), SQK_ECORRUPT);
	ck_assert_int_eq(read_whole(img, "b.bin", b, 300 * 1024), 0);
	sqk_image_close(img);
	sqk_io_destroy(io);
	{
		struct sqk_open_opts o = { .size = sizeof(o),
			.log = test_log_add, .log_ctx = &log, .root_hash = t.root };
		ck_assert_int_eq(sqk_io_mem_create(copy, len, &io), 0);
		ck_assert_int_eq(sqk_image_open_io(io, &o, &img), 0);
		ck_assert_int_eq(read_whole(img, "a.bin", a, 400 * 1024), 0);
		sqk_image_close(img);
		sqk_io_destroy(io);
	}
	memcpy(copy, bytes, len);

	/* a flipped raw byte of a.bin: caught by its XXH3-64 */
	uint8_t *flip = memmem(copy, len, a + 100 * 1024, 64);
	flip[7] ^= 0x01;
	log.text[0] = 0;
	log.lines = 0;
	img = open_copy(copy, len, OPEN_DEFAULT, &log, &io, &rc);
	ck_assert_int_eq(rc, 0);
	ck_assert_int_eq(read_whole(img, "a.bin", a, 400 * 1024), SQK_ECORRUPT);
	sqk_image_stats(img, &st);
	ck_assert_uint_gt(st.chunks_xxh3, 0);
	ck_assert_int_eq(log.lines, 1);
	sqk_image_close(img);
	sqk_io_destroy(io);
	flip[7] ^= 0x01;

	/* a flipped byte inside the fast block: the open falls back to SHA-256, saying so once,
	 * and every read is still checked (right bytes) */
	copy[at + 5] ^= 0x80;
	log.text[0] = 0;
	log.lines = 0;
	img = open_copy(copy, len, OPEN_DEFAULT, &log, &io, &rc);
	ck_assert_int_eq(rc, 0);
	ck_assert_int_eq(sqk_image_fast_checksums(img, &nchunks, &used), SQK_ECORRUPT);
	ck_assert_int_eq(read_whole(img, "a.bin", a, 400 * 1024), 0);
	ck_assert_int_eq(read_whole(img, "b.bin", b, 300 * 1024), 0);
	sqk_image_stats(img, &st);
	ck_assert_uint_eq(st.chunks_xxh3, 0);
	ck_assert_msg(strstr(log.text, "fast checksum block ending at image offset") &&
		      strstr(log.text, "not used (chunk") &&
		      strstr(log.text, "reads are checked with SHA-256"), "%s", log.text);
	sqk_image_close(img);
	sqk_io_destroy(io);
	free(copy);
	free(a);
	free(b);
	sqk_io_destroy(mem);
}
END_TEST

/* An image from before the fast checksums (the writer without integ_writer_fast: its
 * integrity data rebuilt over the image alone): no block, every chunk checked with SHA-256,
 * a flipped raw byte caught. */
START_TEST(test_fast_absent)
{
	uint8_t *a, *b;
	struct sqk_io *mem = build_image(&a, &b, false), *io;
	size_t len;
	const uint8_t *bytes = sqk_io_mem_data(mem, &len);
	struct test_log log = { "", 0 };
	struct integ_writer *w;
	struct sqk_image *img;
	struct sqk_stats st = { .size = sizeof(st) };
	uint64_t at, n, nchunks;
	uint8_t *blob, root[32];
	size_t blen;
	bool used;
	int rc;

	fast_of(bytes, len, &at, &n);
	ck_assert_int_eq(integ_writer_create(0, &w), 0);
	feed(w, bytes, at);
	ck_assert_int_eq(integ_writer_finish(w, at, &blob, &blen, root), 0);
	integ_writer_destroy(w);
	uint8_t *old = malloc(at + blen);
	memcpy(old, bytes, at);
	memcpy(old + at, blob, blen);
	free(blob);
	img = open_copy(old, at + blen, OPEN_DEFAULT, &log, &io, &rc);
	ck_assert_int_eq(rc, 0);
	ck_assert(sqk_image_verified(img));
	ck_assert_int_eq(sqk_image_fast_checksums(img, &nchunks, &used), SQK_ENOENT);
	ck_assert(!used);
	ck_assert_int_eq(read_whole(img, "a.bin", a, 400 * 1024), 0);
	sqk_image_stats(img, &st);
	ck_assert_uint_eq(st.chunks_xxh3, 0);
	ck_assert_uint_eq(st.chunks_sha256, st.chunks_hashed);
	ck_assert_uint_gt(st.chunks_sha256, 400 * 1024 / 65536);
	sqk_image_close(img);
	sqk_io_destroy(io);
	uint8_t *flip = memmem(old, at, a + 100 * 1024, 64);
	flip[7] ^= 0x01;
	img = open_copy(old, at + blen, OPEN_DEFAULT, &log, &io, &rc);
	ck_assert_int_eq(rc, 0);
	ck_assert_int_eq(read_whole(img, "a.bin", a, 400 * 1024), SQK_ECORRUPT);
	sqk_image_close(img);
	sqk_io_destroy(io);
	free(old);
	free(a);
	free(b);
	sqk_io_destroy(mem);
}
END_TEST


/* ---- the digest tree (version 2) ---- */

/* Builds data || blob with a digest tree of `group` digests a group when the digests take more
 * than flat_max bytes (0: always) into *file (caller frees); returns the file length. */
static size_t make_tree_file(const uint8_t *data, size_t len, uint32_t cs, uint32_t group,
			     uint64_t flat_max, uint8_t **file, uint8_t root[32])
{
	struct integ_writer *w;
	uint8_t *blob;
	size_t blen;

	ck_assert_int_eq(integ_writer_create(cs, &w), 0);
	ck_assert_int_eq(integ_writer_tree(w, group, flat_max), 0);
	feed(w, data, len);
	ck_assert_int_eq(integ_writer_finish(w, len, &blob, &blen, root), 0);
	integ_writer_destroy(w);
	*file = malloc(len + blen);
	memcpy(*file, data, len);
	memcpy(*file + len, blob, blen);
	free(blob);
	ck_assert_uint_eq((len + blen) % 4096, 0);
	return len + blen;
}

static int load_mem_lazy(const uint8_t *file, size_t len, struct integ *ig)
{
	struct sqk_io *io;
	int rc;

	ck_assert_int_eq(sqk_io_mem_create(file, len, &io), 0);
	rc = integ_load_lazy(io, len, ig);
	sqk_io_destroy(io);
	return rc;
}

/* 200 chunks of 4 KiB in groups of 64: groups 0..2 full, group 3 of 8. */
#define TREE_CHUNKS 200u
#define TREE_LEN (TREE_CHUNKS * 4096u)

/* The layout: chunk digests as in version 1, then G[g] = SHA-256 of group g's digests, zeros,
 * the trailer with its version 2 fields; root = SHA-256(trailer, root zeroed || groups). */
START_TEST(test_tree_layout)
{
	uint8_t *data = pattern(TREE_LEN, 21), *file, root[32], d[32];
	size_t flen = make_tree_file(data, TREE_LEN, 4096, 64, 0, &file, root);
	struct sqk_integ_trailer t;
	uint64_t ga = TREE_LEN + 32 * TREE_CHUNKS;

	ck_assert_int_eq(integ_trailer_decode(file + flen - 128, &t), 0);
	ck_assert_uint_eq(t.version, 2);
	ck_assert_uint_eq(get_le32(file + flen - 128 + 8), 2);
	ck_assert_uint_eq(t.group_chunks, 64);
	ck_assert_uint_eq(t.groups_at, ga);
	ck_assert_uint_eq(t.ngroups, 4);
	ck_assert_uint_eq(integ_end(&t), flen);
	ck_assert_uint_eq(integ_lazy_start(&t), ga);
	ck_assert_uint_eq(flen, (ga + 4 * 32 + 128 + 4095) / 4096 * 4096);
	for (uint64_t k = 0; k < TREE_CHUNKS; k++) {
		hash_sha256(data + k * 4096, 4096, d);
		ck_assert_int_eq(memcmp(d, file + TREE_LEN + 32 * k, 32), 0);
	}
	for (uint64_t g = 0; g < 4; g++) {
		uint64_t n = g < 3 ? 64 : TREE_CHUNKS - 192;

		hash_sha256(file + TREE_LEN + 32 * 64 * g, 32 * n, d);
		ck_assert_int_eq(memcmp(d, file + ga + 32 * g, 32), 0);
	}
	for (size_t i = ga + 4 * 32; i < flen - 128; i++)
		ck_assert_uint_eq(file[i], 0);
	uint8_t buf[128 + 4 * 32];
	memcpy(buf, file + flen - 128, 128);
	memset(buf + 40, 0, 32);
	memcpy(buf + 128, file + ga, 4 * 32);
	hash_sha256(buf, sizeof(buf), d);
	ck_assert_int_eq(memcmp(d, root, 32), 0);
	ck_assert_int_eq(memcmp(t.root, root, 32), 0);
	free(file);
	free(data);
}
END_TEST

/* A full load knows every chunk digest; a lazy one only the accepted groups'. */
START_TEST(test_tree_loads)
{
	uint8_t *data = pattern(TREE_LEN, 22), *file, root[32];
	size_t flen = make_tree_file(data, TREE_LEN, 4096, 64, 0, &file, root);
	struct integ ig;
	uint64_t k0, k1, s, e;

	ck_assert_int_eq(load_mem(file, flen, &ig), 0);
	ck_assert_int_eq(memcmp(ig.t.root, root, 32), 0);
	for (uint64_t k = 0; k < TREE_CHUNKS; k++) {
		ck_assert_int_eq(integ_check_chunk(&ig, k, data + k * 4096, 4096), 0);
		data[k * 4096 + 7] ^= 4;
		ck_assert_int_eq(integ_check_chunk(&ig, k, data + k * 4096, 4096),
				 SQK_ECORRUPT);
		data[k * 4096 + 7] ^= 4;
	}
	integ_free(&ig);

	ck_assert_int_eq(load_mem_lazy(file, flen, &ig), 0);
	ck_assert_uint_eq(integ_group_of(&ig, 127), 1);
	ck_assert_uint_eq(integ_group_of(&ig, 199), 3);
	integ_group_range(&ig, 3, &k0, &k1, &s, &e);
	ck_assert_uint_eq(k0, 192);
	ck_assert_uint_eq(k1, 200);
	ck_assert_uint_eq(s, TREE_LEN + 192 * 32);
	ck_assert_uint_eq(e, TREE_LEN + 200 * 32);
	for (uint64_t g = 0; g < 4; g++)
		ck_assert(!integ_group_loaded(&ig, g));
	ck_assert_int_eq(integ_check_chunk(&ig, 70, data + 70 * 4096, 4096), SQK_ENOENT);
	integ_group_range(&ig, 1, &k0, &k1, &s, &e);
	ck_assert_int_eq(integ_group_accept(&ig, 1, file + s, e - s), 0);
	ck_assert_int_eq(integ_group_accept(&ig, 1, file + s, e - s), 0); /* again: no-op */
	ck_assert(integ_group_loaded(&ig, 1));
	ck_assert(!integ_group_loaded(&ig, 0));
	for (uint64_t k = k0; k < k1; k++)
		ck_assert_int_eq(integ_check_chunk(&ig, k, data + k * 4096, 4096), 0);
	data[70 * 4096] ^= 1;
	ck_assert_int_eq(integ_check_chunk(&ig, 70, data + 70 * 4096, 4096), SQK_ECORRUPT);
	data[70 * 4096] ^= 1;
	ck_assert_int_eq(integ_check_chunk(&ig, 5, data + 5 * 4096, 4096), SQK_ENOENT);
	/* the short last group */
	integ_group_range(&ig, 3, &k0, &k1, &s, &e);
	ck_assert_int_eq(integ_group_accept(&ig, 3, file + s, e - s - 32), SQK_ECORRUPT);
	ck_assert_int_eq(integ_group_accept(&ig, 3, file + s, e - s), 0);
	ck_assert_int_eq(integ_check_chunk(&ig, 199, data + 199 * 4096, 4096), 0);
	integ_free(&ig);
	free(file);
	free(data);
}
END_TEST

/* A flipped byte in group 2's chunk digests: the lazy load passes (the root does not cover
 * them), the group is refused and stays unknown, the other groups are accepted; a full load
 * fails; integ_accept_groups counts the one bad group. */
START_TEST(test_tree_bad_group)
{
	uint8_t *data = pattern(TREE_LEN, 23), *file, root[32];
	size_t flen = make_tree_file(data, TREE_LEN, 4096, 64, 0, &file, root);
	struct integ ig;
	struct sqk_io *io;
	uint64_t k0, k1, s, e, nbad;

	file[TREE_LEN + 32 * (2 * 64 + 5) + 9] ^= 0x10;
	ck_assert_int_eq(load_mem(file, flen, &ig), SQK_ECORRUPT);
	integ_free(&ig);
	ck_assert_int_eq(load_mem_lazy(file, flen, &ig), 0);
	integ_group_range(&ig, 2, &k0, &k1, &s, &e);
	ck_assert_int_eq(integ_group_check(&ig, 2, file + s, e - s), SQK_ECORRUPT);
	ck_assert_int_eq(integ_group_accept(&ig, 2, file + s, e - s), SQK_ECORRUPT);
	ck_assert(!integ_group_loaded(&ig, 2));
	ck_assert_int_eq(integ_check_chunk(&ig, 130, data + 130 * 4096, 4096), SQK_ENOENT);
	integ_free(&ig);

	ck_assert_int_eq(sqk_io_mem_create(file, flen, &io), 0);
	ck_assert_int_eq(integ_load_lazy(io, flen, &ig), 0);
	ck_assert_int_eq(integ_accept_groups(io, &ig, &nbad, NULL, NULL), 0);
	ck_assert_uint_eq(nbad, 1);
	ck_assert(integ_group_loaded(&ig, 0) && integ_group_loaded(&ig, 1));
	ck_assert(!integ_group_loaded(&ig, 2) && integ_group_loaded(&ig, 3));
	ck_assert_int_eq(integ_check_chunk(&ig, 10, data + 10 * 4096, 4096), 0);
	ck_assert_int_eq(integ_check_chunk(&ig, 130, data + 130 * 4096, 4096), SQK_ENOENT);
	integ_free(&ig);
	sqk_io_destroy(io);
	free(file);
	free(data);
}
END_TEST

/* Every byte from the group digests to the end flipped in turn fails both loads (the root
 * covers trailer and groups; the padding is checked); a chunk digest flipped fails the full
 * load only. */
START_TEST(test_tree_every_flip)
{
	size_t len = 130 * 4096;
	uint8_t *data = pattern(len, 24), *file, root[32];
	size_t flen = make_tree_file(data, len, 4096, 64, 0, &file, root);
	uint64_t ga = len + 130 * 32;
	struct integ ig;

	for (size_t i = len; i < flen; i++) {
		int full, lazy;

		file[i] ^= 0x01;
		full = load_mem(file, flen, &ig);
		integ_free(&ig);
		lazy = load_mem_lazy(file, flen, &ig);
		integ_free(&ig);
		file[i] ^= 0x01;
		ck_assert_msg(full == SQK_ECORRUPT || (full == SQK_ENOENT && i >= flen - 8),
			      "full load: flip at %zu gave %d", i, full);
		if (i < ga)
			ck_assert_msg(lazy == 0, "lazy load: chunk digest flip at %zu gave %d", i,
				      lazy);
		else
			ck_assert_msg(lazy == SQK_ECORRUPT || (lazy == SQK_ENOENT && i >= flen - 8),
				      "lazy load: flip at %zu gave %d", i, lazy);
	}
	free(file);
	free(data);
}
END_TEST

/* A good version 2 trailer (200 chunks of 4 KiB in groups of 64), to mutate. */
static struct sqk_integ_trailer good_tree(void)
{
	struct sqk_integ_trailer t = { .version = 2, .chunk_size = 4096, .covered = TREE_LEN,
				       .hashes_at = TREE_LEN, .nchunks = TREE_CHUNKS,
				       .group_chunks = 64, .groups_at = TREE_LEN + 32 * TREE_CHUNKS,
				       .ngroups = 4 };
	return t;
}

/* Each inconsistent version 2 field, and each reserved byte set, is rejected. */
START_TEST(test_tree_trailer_rejects)
{
	struct sqk_integ_trailer t = good_tree(), u;
	uint8_t raw[SQK_INTEG_TRAILER_SIZE];

	integ_trailer_encode(&t, raw);
	ck_assert_int_eq(integ_trailer_decode(raw, &u), 0);
	ck_assert_uint_eq(u.group_chunks, 64);
	ck_assert_uint_eq(u.groups_at, t.groups_at);
	ck_assert_uint_eq(u.ngroups, 4);
	for (int i = 0; i < 16; i++) {
		t = good_tree();
		switch (i) {
		case 0: t.group_chunks = 0; break;
		case 1: t.group_chunks = 32; break;
		case 2: t.group_chunks = 96; break;
		case 3: t.group_chunks = 131072; t.ngroups = 1; break;
		case 4: t.groups_at += 32; break;
		case 5: t.groups_at -= 4096; break;
		case 6: t.ngroups = 5; break;
		case 7: t.ngroups = 3; break;
		case 8: t.ngroups = 0; break;
		case 9: t.version = 3; break;
		default: break;
		}
		integ_trailer_encode(&t, raw);
		if (i == 10)
			raw[76] = 1; /* the u32 after group_chunks */
		if (i == 11)
			raw[96] = 1;
		if (i == 12)
			raw[119] = 0x80;
		if (i == 13) { /* version 1 with tree fields: not zero where v1 needs zeros */
			put_le32(raw + 8, 1);
		}
		if (i == 14) { /* groups_at + 32*ngroups overflowing */
			put_le64(raw + 16, UINT64_MAX - 4095);
			put_le64(raw + 24, UINT64_MAX - 4095);
			put_le64(raw + 32, (UINT64_MAX - 4095) / 4096 + 1);
		}
		if (i == 15) /* a group size that is no power of two but divides evenly */
			put_le32(raw + 72, 100);
		ck_assert_msg(integ_trailer_decode(raw, &u) == SQK_ECORRUPT,
			      "mutation %d accepted", i);
	}
}
END_TEST

/* The writer's choice: flat while the digests fit in flat_max, a tree past it; with the
 * defaults (SQK_INTEG_FLAT_MAX, 4096 a group) at exactly 4 MiB of digests and one chunk more. */
START_TEST(test_tree_auto)
{
	uint8_t *data = pattern(TREE_LEN, 25), *file, root[32];
	struct sqk_integ_trailer t;
	size_t flen;

	/* 200 digests take 6400 bytes */
	flen = make_tree_file(data, TREE_LEN, 4096, 64, 6400, &file, root);
	ck_assert_int_eq(integ_trailer_decode(file + flen - 128, &t), 0);
	ck_assert_uint_eq(t.version, 1);
	free(file);
	flen = make_tree_file(data, TREE_LEN, 4096, 64, 6399, &file, root);
	ck_assert_int_eq(integ_trailer_decode(file + flen - 128, &t), 0);
	ck_assert_uint_eq(t.version, 2);
	ck_assert_uint_eq(t.ngroups, 4);
	free(file);
	free(data);

	struct integ_writer *w;
	ck_assert_int_eq(integ_writer_create(4096, &w), 0);
	ck_assert_int_eq(integ_writer_tree(w, 100, 0), SQK_EINVAL);
	ck_assert_int_eq(integ_writer_tree(w, 32, 0), SQK_EINVAL);
	ck_assert_int_eq(integ_writer_tree(w, 131072, 0), SQK_EINVAL);
	integ_writer_destroy(w);

	/* the defaults: SQK_INTEG_FLAT_MAX / 32 chunks of 4 KiB stay flat, one more is a tree */
	size_t piece = 1u << 20;
	uint8_t *zeros = calloc(1, piece), *blob;
	size_t blen;
	for (int more = 0; more < 2; more++) {
		uint64_t n = SQK_INTEG_FLAT_MAX / 32 + (uint64_t)more, covered = n * 4096;

		ck_assert_int_eq(integ_writer_create(4096, &w), 0);
		for (uint64_t off = 0; off < covered; off += piece) {
			size_t len = covered - off < piece ? (size_t)(covered - off) : piece;
			ck_assert_int_eq(integ_writer_update(w, off, zeros, len), 0);
		}
		ck_assert_int_eq(integ_writer_finish(w, covered, &blob, &blen, root), 0);
		integ_writer_destroy(w);
		ck_assert_int_eq(integ_trailer_decode(blob + blen - 128, &t), 0);
		ck_assert_uint_eq(t.nchunks, n);
		ck_assert_uint_eq(t.version, more ? 2 : 1);
		if (more) {
			ck_assert_uint_eq(t.group_chunks, SQK_INTEG_GROUP_DEFAULT);
			ck_assert_uint_eq(t.ngroups, n / 4096 + 1);
		}
		ck_assert_uint_eq(covered + blen, integ_end(&t));
		free(blob);
	}
	free(zeros);
}
END_TEST

/* An io that forwards to another and notes the reads made on threads other than `caller`, and
 * those of them made with SIGTERM not blocked. */
struct spy_io {
	struct sqk_io io;
	struct sqk_io *inner;
	pthread_t caller;
	atomic_uint others, unblocked;
};

static int spy_read(struct sqk_io *io, uint64_t off, void *buf, size_t len)
{
	struct spy_io *s = (struct spy_io *)io;
	sigset_t cur;

	if (!pthread_equal(pthread_self(), s->caller)) {
		atomic_fetch_add(&s->others, 1);
		pthread_sigmask(SIG_BLOCK, NULL, &cur);
		if (!sigismember(&cur, SIGTERM))
			atomic_fetch_add(&s->unblocked, 1);
	}
	return sqk_io_read_at(s->inner, off, buf, len);
}

static int spy_size(struct sqk_io *io, uint64_t *size)
{
	return sqk_io_get_size(((struct spy_io *)io)->inner, size);
}

/* sqk_check_image's threads leave the caller's signals to it (thread.h), as every thread the
 * library starts: each read they make has SIGTERM blocked, which the caller's thread has not. */
START_TEST(test_check_threads_block_signals)
{
	static const struct sqk_io_ops ops = { .read_at = spy_read, .get_size = spy_size };
	struct spy_io spy = { .io = { &ops }, .caller = pthread_self() };
	struct sqk_check_result res = { .size = sizeof(res) };
	struct sqk_check_opts o;
	char dir[512];
	unsigned others, unblocked;
	uint64_t size;
	sigset_t none;

	sigemptyset(&none);
	pthread_sigmask(SIG_SETMASK, &none, NULL);
	atomic_init(&spy.others, 0);
	atomic_init(&spy.unblocked, 0);
	test_tree_new(dir, sizeof(dir), "checkthreads");
	for (unsigned i = 0; i < 8; i++) {
		char name[16];

		snprintf(name, sizeof(name), "f%u", i);
		test_tree_put(dir, name, ((size_t)4 << 20) + i);
	}
	spy.inner = test_build_dir(dir, false, NULL);
	ck_assert_int_eq(sqk_io_get_size(spy.inner, &size), 0);
	sqk_check_opts_init(&o);
	o.threads = 4;
	ck_assert_int_eq(sqk_check_image(&spy.io, size, &o, &res), 0);
	others = atomic_load(&spy.others);
	unblocked = atomic_load(&spy.unblocked);
	ck_assert_uint_eq(res.errors, 0);
	ck_assert_uint_gt(others, 0);
	ck_assert_uint_eq(unblocked, 0);
	sqk_io_destroy(spy.inner);
	test_tree_remove(dir);
}
END_TEST

static Suite *integrity_suite(void)
{
	Suite *s = suite_create("integrity");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_trailer_round_trip);
	tcase_add_test(tc, test_trailer_rejects);
	tcase_add_test(tc, test_writer_matches_one_shot);
	tcase_add_test(tc, test_writer_rejects);
	tcase_add_test(tc, test_load_and_check);
	tcase_add_test(tc, test_every_flip_detected);
	tcase_add_test(tc, test_hex);
	tcase_add_test(tc, test_verified_reads);
	tcase_add_test(tc, test_verified_concurrent);
	tcase_add_test(tc, test_no_integrity_data);
	tcase_add_test(tc, test_fast_writer);
	tcase_add_test(tc, test_fast_hostile);
	tcase_add_test(tc, test_fast_reads);
	tcase_add_test(tc, test_fast_absent);
	tcase_add_test(tc, test_tree_layout);
	tcase_add_test(tc, test_tree_loads);
	tcase_add_test(tc, test_tree_bad_group);
	tcase_add_test(tc, test_tree_every_flip);
	tcase_add_test(tc, test_tree_trailer_rejects);
	tcase_add_test(tc, test_tree_auto);
	tcase_add_test(tc, test_check_threads_block_signals);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return test_run_suite(integrity_suite());
}
