/* SPDX-License-Identifier: BSD-2-Clause */
/* Check suite for the dm-verity trees (common/verity.h): the builder's root hash and whole area
 * against what `veritysetup format` wrote for the same data and salt (1, 2, 128, 129 and 16385
 * blocks: no tree, one level, a full block, two and three levels), fed in odd pieces with the
 * first block last; the geometry against veritysetup's own formula; the builder's refusals; the
 * appended area found from the end and hostile superblocks refused; the checker naming a flipped
 * data block, a damaged hash block and padding; and through the builder: the area appended or
 * in a sidecar over exactly the image's bytes (unchanged), reproducible, with the salt chosen. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "common/bytes.h"
#include "common/endian.h"
#include "common/integrity.h"
#include "common/verity.h"
#include "mkimage/build.h"
#include "sqk/error.h"
#include "sqk/io.h"
#include "sqk/sqk.h"
#include "testutil.h"

/* The data veritysetup hashed (tests/unit: generated with the same formula in Python): byte
 * `off` of the input. */
static uint8_t data_byte(uint64_t off)
{
	return (uint8_t)(((uint32_t)(off * 2654435761u) >> 24) ^ (uint8_t)(off >> 12));
}

static uint8_t *make_data(uint64_t n)
{
	uint8_t *p = malloc((size_t)n * VERITY_BLOCK);

	ck_assert_ptr_nonnull(p);
	for (uint64_t i = 0; i < n * VERITY_BLOCK; i++)
		p[i] = data_byte(i);
	return p;
}

/* The salts of the cases: none, bytes 0..31, and 256 bytes of i * 3. */
static size_t make_salt(int kind, uint8_t salt[VERITY_SALT_MAX])
{
	size_t len = kind == 0 ? 0 : kind == 1 ? 32 : 256;

	for (size_t i = 0; i < len; i++)
		salt[i] = (uint8_t)(kind == 1 ? i : i * 3);
	return len;
}

/* What veritysetup 2.6.1 printed and wrote for these inputs (`veritysetup format DATA HASH
 * --salt=S --uuid=U`, U being the last 16 bytes of the root, as sqk sets it): the root hash and
 * the SHA-256 of the whole hash file. */
static const struct known {
	uint64_t n;
	int salt;
	const char *root, *area;
	uint64_t area_len;
} known[] = {
	{ 1, 0, "e8b3f20275f7b9cd35f2ddf0e1be6263c9a2982e5e6e44d7168c140398b7cc64",
	  "0b97252c90a312ff468c3540b374f9cac43005cb15956d086ed500e3147db9bf", 4096 },
	{ 1, 1, "704583c01a1f783528ce44aa308b1ae6155dc66821afac8a9fa81a4696155286",
	  "e974e7be4121336592108a3e86ba72d469351a56a2ec1db6da77883e587ae6b2", 4096 },
	{ 1, 2, "d767a7ca02b461e3f3efcbe3d3c209f6e256764b1cf8cc461735f596342ba1ec",
	  "cda904413f365dd09a362531807b9989fdf4d4719729f734b3e13e1fe16f3e8b", 4096 },
	{ 2, 0, "fa1175f3ef389df0bf67eff436915e5da48799dec20b1835281ddab857125f55",
	  "31d89f58fa811bd02230e68cc8ca2abccb89c8c5cd3929113c8d05c5b13071ab", 8192 },
	{ 2, 1, "bce796f660a414bf38d2c9415323b0c1c1bcc05da276285d213c75db66196daa",
	  "f78696e7c63576f7d02cd2806fdee4613f80c68cf0f11c566f52352d0ca64c7d", 8192 },
	{ 2, 2, "7418c223f7763110adb619be02a5fc42ea02eaa637e23dd478fb3b02117318e0",
	  "2656ad40c546335c86c9c4ed81f3ad8a7c626b9cca6396a6eb22ecaa58817991", 8192 },
	{ 128, 0, "650cbfad939940c226ab35f62e99207b4a60092d68aa8d07aa5061d5a93c93d0",
	  "38a85202199988a15fe1716aa24376804aed84672e934b12a5af55fc329f45cd", 8192 },
	{ 128, 1, "e6196cc27319fa1e10fe1dfc1c7204a28e442751004cd035ee0f3216a2e7ae50",
	  "424aa7f35d2c07df1a01a2b4231eb5dd460f79aa0d6f04f64285da22045070a6", 8192 },
	{ 128, 2, "36d17e76014034183f322b33d27f463e127352cbd5152ae1fb4041d5fb774edd",
	  "8567b9b7fdb7af39c74b91dfa62a9343e0b558fbdef7ef15b409ff7385d5211d", 8192 },
	{ 129, 0, "c291165e04e15ccebc871f2bd6ff1295772f97cf9f29ff04ef4666652ede0a0d",
	  "32ad8fd1eaf538811e6740a08c39cbd6281ba5c8275c1ccaf0bed71357821226", 16384 },
	{ 129, 1, "a02db09851bddb868afd995a76e02d87d784b9f75d7b9eff8996f08f5c021d68",
	  "8c83aa8146501016c8a1c185b35d2167c307ab93e9681b44c279db24e6b97c13", 16384 },
	{ 129, 2, "f53ce1781011c173296fa94c85470769fe0c8f4f026eb5d5026b1d237ccb2a6f",
	  "2433a1ca4c763fb56cb40ddadd7b193620706ed62a5ad3c282bd4d1593ed08f4", 16384 },
	{ 16385, 0, "21b38b9e92f1ec273043bb48fcfc68e63864600cd860d935573869d3902362aa",
	  "38601bcce7f6b6e06f443403a9cc5f9dbc113c74a3e02d5b36fbd89d6517bc95", 544768 },
	{ 16385, 1, "d06eabce7c9e95d85c2a534c6a24e058358c5f7143f70cc391885f9106d32c30",
	  "238e5541e617fa460661918842529f0c91d5f6c8334c6a4a4771d7b85598e7d9", 544768 },
	{ 16385, 2, "4d901cb337d54df1484311d368799d5c0daff61c1549e1f681da86c895c1f55b",
	  "71365b30623033628df5e963d3b2e5ea55b5dab6fe1f2f976fd687f0b6d663e7", 544768 },
};

/* Feeds data[0..len) as the image builder does: from 96 on in odd-sized sequential pieces, the
 * first 96 bytes (the superblock) last. */
static void feed(struct verity_builder *b, const uint8_t *data, size_t len)
{
	size_t off = len > 96 ? 96 : len;

	while (off < len) {
		size_t k = 1000 + off % 7777;

		if (k > len - off)
			k = len - off;
		ck_assert_int_eq(verity_builder_update(b, off, data + off, k), 0);
		off += k;
	}
	ck_assert_int_eq(verity_builder_update(b, 0, data, 96), 0);
}

/* Builds the tree of data (n blocks) with salt kind sk; the area written into a new memory io
 * at `at` (caller destroys it), the root in root. */
static struct sqk_io *build(const uint8_t *data, uint64_t n, int sk, uint64_t at,
			    uint8_t root[32])
{
	uint8_t salt[VERITY_SALT_MAX];
	size_t slen = make_salt(sk, salt);
	struct verity_builder *b;
	struct sqk_io *io;

	ck_assert_int_eq(verity_builder_create(salt, slen, &b), 0);
	feed(b, data, (size_t)n * VERITY_BLOCK);
	ck_assert_int_eq(verity_builder_finish(b, n * VERITY_BLOCK, root), 0);
	ck_assert_int_eq(sqk_io_mem_create(NULL, 0, &io), 0);
	ck_assert_int_eq(verity_builder_write(b, io, at), 0);
	verity_builder_destroy(b);
	return io;
}

/* Every case: the same root as veritysetup's, and the same hash file, byte for byte. */
START_TEST(test_known_trees)
{
	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++) {
		const struct known *k = &known[i];
		uint8_t *data = make_data(k->n), root[32], d[32];
		char hex[65];
		struct sqk_io *io = build(data, k->n, k->salt, 0, root);
		size_t len;
		const uint8_t *area = sqk_io_mem_data(io, &len);

		integ_hex(root, hex);
		ck_assert_msg(!strcmp(hex, k->root), "case %zu: root %s, veritysetup %s", i, hex,
			      k->root);
		ck_assert_uint_eq(len, k->area_len);
		ck_assert_uint_eq(verity_area_len(k->n), k->area_len);
		hash_sha256(area, len, d);
		integ_hex(d, hex);
		ck_assert_msg(!strcmp(hex, k->area), "case %zu: the hash file differs", i);
		sqk_io_destroy(io);
		free(data);
	}
}
END_TEST

/* veritysetup's hash_levels(): levels while (n - 1) >> (7 * levels), level i holding
 * ceil(n / 128^(i + 1)) blocks. */
static uint64_t reference_blocks(uint64_t n)
{
	uint64_t sum = 0;
	int levels = 0;

	while (7 * levels < 64 && ((n - 1) >> (7 * levels)))
		levels++;
	for (int i = levels - 1; i >= 0; i--) {
		unsigned shift = 7 * (unsigned)(i + 1);

		sum += shift >= 64 ? 1 : (n + ((uint64_t)1 << shift) - 1) >> shift;
	}
	return sum;
}

START_TEST(test_geometry)
{
	const uint64_t ns[] = { 1, 2, 127, 128, 129, 16383, 16384, 16385, 2097152, 2097153,
				(uint64_t)1 << 40, ((uint64_t)1 << 51) + 12345 };

	for (size_t i = 0; i < sizeof(ns) / sizeof(ns[0]); i++)
		ck_assert_uint_eq(verity_tree_blocks(ns[i]), reference_blocks(ns[i]));
	ck_assert_uint_eq(verity_area_len(0), 0);
	ck_assert_uint_eq(verity_area_len(UINT64_MAX), 0); /* would overflow */
	ck_assert_uint_eq(verity_area_len(300), 5 * 4096);   /* veritysetup: 20480 */
}
END_TEST

START_TEST(test_builder_rejects)
{
	uint8_t salt[300] = { 0 }, buf[8192] = { 0 }, root[32];
	struct verity_builder *b;

	ck_assert_int_eq(verity_builder_create(salt, 257, &b), SQK_EINVAL);
	ck_assert_ptr_null(b);
	ck_assert_int_eq(verity_builder_create(salt, 256, &b), 0);
	/* past the first block: in order only */
	ck_assert_int_eq(verity_builder_update(b, 8192, buf, 10), SQK_EINVAL);
	ck_assert_int_eq(verity_builder_update(b, 4096, buf, 100), 0);
	ck_assert_int_eq(verity_builder_update(b, 4096, buf, 100), SQK_EINVAL);
	/* a write straddling the first block: its head rewritten, its tail in order */
	ck_assert_int_eq(verity_builder_update(b, 4000, buf, 96 + 100), SQK_EINVAL);
	ck_assert_int_eq(verity_builder_update(b, 4196, buf, 3996 + 4096), 0);
	/* not all fed, or an end that is not a block boundary */
	ck_assert_int_eq(verity_builder_finish(b, 4 * 4096, root), SQK_EINVAL);
	ck_assert_int_eq(verity_builder_finish(b, 3 * 4096 - 1, root), SQK_EINVAL);
	ck_assert_int_eq(verity_builder_finish(b, 0, root), SQK_EINVAL);
	ck_assert_int_eq(verity_builder_finish(b, 3 * 4096, root), 0);
	ck_assert_int_eq(verity_builder_update(b, 0, buf, 1), SQK_EINVAL); /* finished */
	ck_assert_int_eq(verity_builder_finish(b, 3 * 4096, root), SQK_EINVAL);
	verity_builder_destroy(b);
	verity_builder_destroy(NULL);
}
END_TEST

/* data (n blocks) with its area appended at n * 4096, then `extra` bytes (a signature block).
 * Caller destroys the io. */
static struct sqk_io *appended_file(uint64_t n, uint64_t extra, uint8_t root[32])
{
	uint8_t *data = make_data(n), *pad = calloc(1, extra + 1);
	struct sqk_io *io = build(data, n, 1, n * VERITY_BLOCK, root);
	uint64_t size;

	ck_assert_int_eq(sqk_io_write_at(io, 0, data, (size_t)n * VERITY_BLOCK), 0);
	ck_assert_int_eq(sqk_io_get_size(io, &size), 0);
	ck_assert_int_eq(sqk_io_write_at(io, size, pad, (size_t)extra), 0);
	free(pad);
	free(data);
	return io;
}

START_TEST(test_appended_found)
{
	const uint64_t ns[] = { 1, 2, 128, 129, 3000 };
	uint8_t root[32];

	for (size_t i = 0; i < sizeof(ns) / sizeof(ns[0]); i++) {
		struct sqk_io *io = appended_file(ns[i], 8192, root);
		uint64_t size, e = 0;

		ck_assert_int_eq(sqk_io_get_size(io, &size), 0);
		/* a signature block of 8 KiB after the area: the caller gives the area's end */
		ck_assert_int_eq(verity_appended(io, size - 8192, &e), 0);
		ck_assert_uint_eq(e, ns[i] * VERITY_BLOCK);
		/* the file's end is not the area's: nothing there */
		ck_assert_int_eq(verity_appended(io, size, &e), SQK_ENOENT);
		sqk_io_destroy(io);
	}
}
END_TEST

/* The superblock of the appended file, mutated by mutate, then found or refused. */
static int appended_with(void (*mutate)(uint8_t *sb, int i), int i)
{
	uint8_t root[32], sb[VERITY_SB_SIZE];
	struct sqk_io *io = appended_file(200, 0, root);
	uint64_t size, e = 0;
	int rc;

	ck_assert_int_eq(sqk_io_get_size(io, &size), 0);
	ck_assert_int_eq(sqk_io_read_at(io, 200 * VERITY_BLOCK, sb, sizeof(sb)), 0);
	mutate(sb, i);
	ck_assert_int_eq(sqk_io_write_at(io, 200 * VERITY_BLOCK, sb, sizeof(sb)), 0);
	rc = verity_appended(io, size, &e);
	ck_assert(rc == SQK_ENOENT || e == 200 * VERITY_BLOCK);
	sqk_io_destroy(io);
	return rc;
}

static void hostile(uint8_t *sb, int i)
{
	switch (i) {
	case 0: put_le32(sb + 8, 2); break;                        /* version */
	case 1: put_le32(sb + 12, 0); break;                       /* Chrome OS hash type */
	case 2: put_le32(sb + 12, 7); break;
	case 3: memcpy(sb + 32, "sha512", 6); break;
	case 4: put_le32(sb + 64, 8192); break;                    /* data block size */
	case 5: put_le32(sb + 68, 1000); break;                    /* not a power of two */
	case 6: put_le64(sb + 72, 201); break;                     /* data blocks */
	case 7: put_le64(sb + 72, UINT64_MAX); break;
	case 8: put_le64(sb + 72, 0); break;
	case 9: put_le16(sb + 80, 257); break;                     /* salt size */
	case 10: put_le16(sb + 80, UINT16_MAX); break;
	case 11: sb[85] = 1; break;                                /* padding */
	case 12: sb[500] = 1; break;
	case 13: put_le16(sb + 80, 31); break;                     /* salt byte 31 in the padding */
	case 14: sb[0] ^= 1; break;                                /* no magic: no area */
	default: break;
	}
}

START_TEST(test_appended_hostile)
{
	uint8_t root[32];
	uint64_t e = 7;

	for (int i = 0; i <= 13; i++)
		ck_assert_msg(appended_with(hostile, i) == SQK_ECORRUPT, "mutation %d", i);
	ck_assert_int_eq(appended_with(hostile, 14), SQK_ENOENT);
	ck_assert_int_eq(appended_with(hostile, 99), 0); /* unchanged */
	struct sqk_io *io = appended_file(200, 0, root);

	/* ends that no area can have, and ends past what the data could be */
	ck_assert_int_eq(verity_appended(io, 0, &e), SQK_ENOENT);
	ck_assert_int_eq(verity_appended(io, 4096, &e), SQK_ENOENT);
	ck_assert_int_eq(verity_appended(io, 205 * VERITY_BLOCK + 1, &e), SQK_ENOENT);
	ck_assert_uint_eq(e, 7);
	sqk_io_destroy(io);
}
END_TEST

/* integ_locate's end of the image (E), as the readers find it. */
static int image_end(struct sqk_io *io, uint64_t size, uint64_t *end)
{
	struct integ_where w;
	char why[256];
	int rc = integ_locate(io, size, &w, why, sizeof(why));

	*end = w.end;
	return rc;
}

/* The image's end (integ_locate): the area's start, or the file's end after an integrity
 * trailer (whatever bytes a candidate superblock would be) or without an area. */
START_TEST(test_image_end)
{
	uint8_t root[32];
	struct sqk_io *io = appended_file(200, 0, root);
	uint64_t size, end = 0;

	ck_assert_int_eq(sqk_io_get_size(io, &size), 0);
	ck_assert_int_eq(image_end(io, size, &end), 0);
	ck_assert_uint_eq(end, 200 * VERITY_BLOCK);
	ck_assert_int_eq(image_end(io, size - 4096, &end), 0);
	ck_assert_uint_eq(end, size - 4096);
	ck_assert_int_eq(sqk_io_write_at(io, size - 8, "SQKINTG1", 8), 0);
	ck_assert_int_eq(verity_appended(io, size, &end), 0); /* the superblock is still there */
	ck_assert_int_eq(image_end(io, size, &end), 0);
	ck_assert_uint_eq(end, size);
	ck_assert_int_eq(sqk_io_write_at(io, size - 8, "xxxxxxxx", 8), 0);
	ck_assert_int_eq(sqk_io_write_at(io, 200 * VERITY_BLOCK + 8, "\2", 1), 0); /* version 2 */
	ck_assert_int_eq(image_end(io, size, &end), SQK_ECORRUPT);
	sqk_io_destroy(io);
}
END_TEST

/* A flipped data byte names its block; a damaged hash block, or non-zero padding, is a bad hash
 * block; the root is checked against the one given. */
START_TEST(test_check)
{
	const uint64_t n = 300; /* levels of 3 and 1 blocks */
	uint8_t root[32], other[32], b;
	struct sqk_io *io = appended_file(n, 0, root);
	struct verity_check c;
	uint64_t size, at = n * VERITY_BLOCK;

	ck_assert_int_eq(sqk_io_get_size(io, &size), 0);
	ck_assert_int_eq(verity_check(io, at, io, at, root, &c), 0);
	ck_assert(c.root_ok);
	ck_assert_uint_eq(c.bad_data + c.bad_hash, 0);
	ck_assert_uint_eq(c.first_bad_data, UINT64_MAX);
	ck_assert_uint_eq(c.data_end, at);
	ck_assert_uint_eq(c.sb.salt_size, 32);
	memcpy(other, root, 32);
	other[5] ^= 1;
	ck_assert_int_eq(verity_check(io, at, io, at, other, &c), 0);
	ck_assert(!c.root_ok);
	ck_assert_int_eq(verity_check(io, at, io, at, NULL, &c), 0);
	ck_assert(!c.root_ok);
	ck_assert_int_eq(memcmp(c.root, root, 32), 0);
	/* data block 257 */
	ck_assert_int_eq(sqk_io_read_at(io, 257 * VERITY_BLOCK + 11, &b, 1), 0);
	b ^= 0x40;
	ck_assert_int_eq(sqk_io_write_at(io, 257 * VERITY_BLOCK + 11, &b, 1), 0);
	ck_assert_int_eq(verity_check(io, at, io, at, root, &c), 0);
	ck_assert_uint_eq(c.bad_data, 1);
	ck_assert_uint_eq(c.first_bad_data, 257);
	ck_assert_uint_eq(c.bad_hash, 0);
	b ^= 0x40;
	ck_assert_int_eq(sqk_io_write_at(io, 257 * VERITY_BLOCK + 11, &b, 1), 0);
	/* level 0's second block (the area: superblock, level 1, then level 0 from block 2) */
	ck_assert_int_eq(sqk_io_write_at(io, at + 3 * VERITY_BLOCK + 100, "x", 1), 0);
	ck_assert_int_eq(verity_check(io, at, io, at, root, &c), 0);
	ck_assert_uint_eq(c.bad_hash, 1);
	ck_assert_uint_eq(c.first_bad_hash, at + 3 * VERITY_BLOCK);
	ck_assert_uint_eq(c.bad_data, 1); /* its digest of data block 131 no longer matches */
	ck_assert_uint_eq(c.first_bad_data, 131);
	sqk_io_destroy(io);
	/* level 0's padding, after the 300th digest */
	io = appended_file(n, 0, root);
	ck_assert_int_eq(sqk_io_write_at(io, size - 10, "x", 1), 0);
	ck_assert_int_eq(verity_check(io, at, io, at, root, &c), 0);
	ck_assert_uint_eq(c.bad_hash, 2); /* its padding, and its digest in level 1 */
	ck_assert_uint_eq(c.first_bad_hash, size - VERITY_BLOCK);
	ck_assert_uint_eq(c.bad_data, 0);
	ck_assert(c.root_ok);
	sqk_io_destroy(io);
}
END_TEST

/* The checker trusts no field: data or a tree beyond the files, a huge count, no superblock. */
START_TEST(test_check_hostile)
{
	const uint64_t n = 300, at = n * VERITY_BLOCK;
	uint8_t root[32], sb[VERITY_SB_SIZE];
	struct sqk_io *io = appended_file(n, 0, root);
	struct verity_check c;
	uint64_t size;

	ck_assert_int_eq(sqk_io_get_size(io, &size), 0);
	ck_assert_int_eq(verity_check(io, at - 1, io, at, root, &c), SQK_ECORRUPT);
	ck_assert_int_eq(verity_check(io, at, io, at + 4096, root, &c), SQK_ENOENT);
	ck_assert_int_eq(verity_check(io, at, io, size - 100, root, &c), SQK_ENOENT);
	ck_assert_int_eq(verity_check(io, at, io, size + 4096, root, &c), SQK_ENOENT);
	ck_assert_int_eq(sqk_io_read_at(io, at, sb, sizeof(sb)), 0);
	put_le64(sb + 72, (uint64_t)1 << 60);
	ck_assert_int_eq(sqk_io_write_at(io, at, sb, sizeof(sb)), 0);
	ck_assert_int_eq(verity_check(io, UINT64_MAX, io, at, root, &c), SQK_ECORRUPT);
	put_le64(sb + 72, n);
	memcpy(sb + 32, "sha1\0\0", 6);
	ck_assert_int_eq(sqk_io_write_at(io, at, sb, sizeof(sb)), 0);
	ck_assert_int_eq(verity_check(io, at, io, at, root, &c), SQK_EUNSUPPORTED);
	sqk_io_destroy(io);
}
END_TEST

/* ---- through the builder (sqk_build with opts.verity) ---- */

/* The sidecar's output: a memory io the test keeps, or a failure. */
struct sidecar {
	struct sqk_io *io;
	bool fail;
	int calls;
};

static int open_sidecar(void *arg, struct sqk_io **io, char *msg, size_t cap)
{
	struct sidecar *sc = arg;

	sc->calls++;
	if (sc->fail) {
		snprintf(msg, cap, "no room for the sidecar");
		return SQK_ENOSPC;
	}
	ck_assert_int_eq(sqk_io_mem_create(NULL, 0, &sc->io), 0);
	*io = sc->io;
	return 0;
}

/* Builds tree (4 KiB blocks) in memory with the verity mode, salt (NULL: derived) and sidecar;
 * returns the image (caller destroys it) and the result in *r. */
static struct sqk_io *build_dir(const char *tree, enum sqk_build_verity mode, const uint8_t *salt,
				size_t salt_len, struct sidecar *sc, struct sqk_build_result *r)
{
	char *sources[1] = { (char *)tree };
	struct sqk_build_opts o;
	struct sqk_build_source s;
	struct sqk_io *out;
	int err;

	sqk_build_opts_init(&o);
	o.quiet = true;
	o.block_size = 4096;
	o.clamp_time = 1700000000;
	o.verity = mode;
	o.verity_salt = salt;
	o.verity_salt_len = salt_len;
	o.open_verity = sc ? open_sidecar : NULL;
	o.open_arg = sc;
	sqk_build_source_init(&s, SQK_BUILD_DIRS);
	s.sources = sources;
	s.nsources = 1;
	sqk_build_result_init(r);
	ck_assert_int_eq(sqk_io_mem_create(NULL, 0, &out), 0);
	err = sqk_build(&o, &s, out, r);
	ck_assert_msg(err == 0 || (sc && sc->fail), "build: %d %s", err, r->msg);
	return out;
}

static void make_tree(char *tree, size_t cap)
{
	test_tree_new(tree, cap, "verity");
	test_tree_put(tree, "big", 3 << 20);
	test_tree_put(tree, "small", 1000);
	test_tree_dir(tree, "d");
	test_tree_put(tree, "d/mid", 200000);
}

/* Appended: the area follows the image's end E (its integrity data's end), the image before it
 * is byte for byte the one built without --verity, the tree checks against the result's root,
 * the library finds the area and reads the image verified. */
START_TEST(test_build_append)
{
	char tree[64];
	struct sqk_build_result r, plain;
	struct sqk_io *io, *ref;
	struct verity_check c;
	size_t len, rlen;
	uint64_t size, e = 0;

	make_tree(tree, sizeof(tree));
	ref = build_dir(tree, SQK_BUILD_VERITY_NONE, NULL, 0, NULL, &plain);
	io = build_dir(tree, SQK_BUILD_VERITY_APPEND, NULL, 0, NULL, &r);
	ck_assert(r.have_verity && !plain.have_verity);
	const uint8_t *a = sqk_io_mem_data(io, &len), *b = sqk_io_mem_data(ref, &rlen);
	ck_assert_uint_eq(r.verity_data_end, rlen);
	ck_assert_uint_eq(len, rlen + r.verity_len);
	ck_assert_uint_eq(r.image_bytes, len);
	ck_assert_int_eq(memcmp(a, b, rlen), 0);
	ck_assert_uint_eq(r.verity_salt_len, 32);
	ck_assert_int_eq(memcmp(r.verity_uuid, r.verity_root + 16, 16), 0);
	ck_assert_int_eq(sqk_io_get_size(io, &size), 0);
	ck_assert_int_eq(verity_appended(io, size, &e), 0);
	ck_assert_uint_eq(e, rlen);
	ck_assert_int_eq(verity_check(io, size, io, e, r.verity_root, &c), 0);
	ck_assert(c.root_ok);
	ck_assert_uint_eq(c.bad_data + c.bad_hash, 0);
	ck_assert_int_eq(memcmp(c.sb.salt, r.verity_salt, 32), 0);

	/* the library reads it, its integrity data found at E and every read verified */
	struct sqk_open_opts oo;
	struct sqk_image *img;

	sqk_open_opts_init(&oo);
	oo.root_hash = r.root_hash;
	ck_assert_int_eq(sqk_image_open_io(io, &oo, &img), 0);
	ck_assert(sqk_image_verified(img));
	sqk_image_close(img);
	sqk_io_destroy(io);
	sqk_io_destroy(ref);
	test_tree_remove(tree);
}
END_TEST

/* Sidecar: the image is the one built without --verity; the area goes to open_verity's
 * output once; the same build gives the same tree (the derived salt); a chosen salt (or none)
 * is the one used; a failing sidecar fails the build with its message. */
START_TEST(test_build_sidecar)
{
	char tree[64];
	struct sqk_build_result r, r2, plain;
	struct sidecar sc = { 0 }, sc2 = { 0 }, sc3 = { 0 };
	struct sqk_io *io, *io2, *ref;
	struct verity_check c;
	size_t len, rlen, tlen, tlen2;
	const uint8_t salt[3] = { 1, 2, 3 };

	make_tree(tree, sizeof(tree));
	ref = build_dir(tree, SQK_BUILD_VERITY_NONE, NULL, 0, NULL, &plain);
	io = build_dir(tree, SQK_BUILD_VERITY_SIDECAR, NULL, 0, &sc, &r);
	ck_assert_int_eq(sc.calls, 1);
	const uint8_t *a = sqk_io_mem_data(io, &len), *b = sqk_io_mem_data(ref, &rlen);
	ck_assert_uint_eq(len, rlen);
	ck_assert_int_eq(memcmp(a, b, len), 0);
	const uint8_t *t = sqk_io_mem_data(sc.io, &tlen);
	ck_assert_uint_eq(tlen, r.verity_len);
	ck_assert_uint_eq(r.verity_data_end, len);
	ck_assert_int_eq(verity_check(io, len, sc.io, 0, r.verity_root, &c), 0);
	ck_assert(c.root_ok);
	ck_assert_uint_eq(c.bad_data + c.bad_hash, 0);
	/* again: the same tree, byte for byte */
	io2 = build_dir(tree, SQK_BUILD_VERITY_SIDECAR, NULL, 0, &sc2, &r2);
	const uint8_t *t2 = sqk_io_mem_data(sc2.io, &tlen2);
	ck_assert_uint_eq(tlen, tlen2);
	ck_assert_int_eq(memcmp(t, t2, tlen), 0);
	ck_assert_int_eq(memcmp(r.verity_root, r2.verity_root, 32), 0);
	sqk_io_destroy(io2);
	sqk_io_destroy(sc2.io);
	/* a salt of the caller's, and none */
	memset(&sc2, 0, sizeof(sc2));
	io2 = build_dir(tree, SQK_BUILD_VERITY_SIDECAR, salt, 3, &sc2, &r2);
	ck_assert_uint_eq(r2.verity_salt_len, 3);
	ck_assert_int_eq(memcmp(r2.verity_salt, salt, 3), 0);
	ck_assert_int_ne(memcmp(r.verity_root, r2.verity_root, 32), 0);
	ck_assert_int_eq(verity_check(io2, len, sc2.io, 0, r2.verity_root, &c), 0);
	ck_assert(c.root_ok && c.sb.salt_size == 3);
	sqk_io_destroy(io2);
	sqk_io_destroy(sc2.io);
	memset(&sc2, 0, sizeof(sc2));
	io2 = build_dir(tree, SQK_BUILD_VERITY_SIDECAR, salt, 0, &sc2, &r2);
	ck_assert_uint_eq(r2.verity_salt_len, 0);
	ck_assert_int_eq(verity_check(io2, len, sc2.io, 0, r2.verity_root, &c), 0);
	ck_assert(c.root_ok && c.sb.salt_size == 0);
	sqk_io_destroy(io2);
	sqk_io_destroy(sc2.io);
	/* a sidecar that cannot be had */
	sc3.fail = true;
	io2 = build_dir(tree, SQK_BUILD_VERITY_SIDECAR, NULL, 0, &sc3, &r2);
	ck_assert_int_eq(r2.err, SQK_ENOSPC);
	ck_assert_ptr_nonnull(strstr(r2.msg, "no room for the sidecar"));
	sqk_io_destroy(io2);
	sqk_io_destroy(io);
	sqk_io_destroy(sc.io);
	sqk_io_destroy(ref);
	test_tree_remove(tree);
}
END_TEST

/* Options the builder refuses before anything is read. */
START_TEST(test_build_refuses)
{
	char *sources[1] = { (char *)"/nonexistent" };
	uint8_t salt[300] = { 0 };
	struct sqk_build_opts o;
	struct sqk_build_source s;
	struct sqk_build_result r;

	sqk_build_source_init(&s, SQK_BUILD_DIRS);
	s.sources = sources;
	s.nsources = 1;
	sqk_build_opts_init(&o);
	o.verity = SQK_BUILD_VERITY_SIDECAR; /* no open_verity */
	sqk_build_result_init(&r);
	ck_assert_int_eq(sqk_build(&o, &s, NULL, &r), SQK_EINVAL);
	ck_assert_ptr_nonnull(strstr(r.msg, "open_verity"));
	o.verity = SQK_BUILD_VERITY_APPEND;
	o.verity_salt = salt;
	o.verity_salt_len = 257;
	ck_assert_int_eq(sqk_build(&o, &s, NULL, &r), SQK_EINVAL);
	ck_assert_ptr_nonnull(strstr(r.msg, "256"));
}
END_TEST

static Suite *verity_suite(void)
{
	Suite *s = suite_create("verity");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_known_trees);
	tcase_add_test(tc, test_geometry);
	tcase_add_test(tc, test_builder_rejects);
	tcase_add_test(tc, test_appended_found);
	tcase_add_test(tc, test_appended_hostile);
	tcase_add_test(tc, test_image_end);
	tcase_add_test(tc, test_check);
	tcase_add_test(tc, test_check_hostile);
	tcase_add_test(tc, test_build_append);
	tcase_add_test(tc, test_build_sidecar);
	tcase_add_test(tc, test_build_refuses);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return test_run_suite(verity_suite());
}
