/* SPDX-License-Identifier: BSD-2-Clause */
/* Unit tests for common/compressor.c and the codecs: round trips of every codec (every LZO
 * algorithm too) at 4 KiB, 128 KiB and 1 MiB blocks, the raw-store rule, hostile input to the
 * decompressors (which must fail without writing past out_cap), the factory, names, and the
 * options block both ways. */
#include <check.h>
#include <lzo/lzo1x.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "common/comp_internal.h"
#include "common/compressor.h"
#include "common/endian.h"
#include "sqk/error.h"
#include "common/meta.h"
#include "testutil.h"

#define GUARD 64
#define GUARD_BYTE 0xA5

struct codec_case {
	const char *what;
	struct sqk_comp_config cfg;
};

static const struct codec_case codecs[] = {
	{ "gzip", { .id = SQK_COMP_GZIP } },
	{ "xz", { .id = SQK_COMP_XZ } },
	{ "lz4", { .id = SQK_COMP_LZ4 } },
	{ "lz4-hc", { .id = SQK_COMP_LZ4, .lz4_hc = true } },
	{ "zstd", { .id = SQK_COMP_ZSTD } },
	{ "lzo", { .id = SQK_COMP_LZO } }, /* lzo1x_999, level 8 */
	{ "lzo1x_999-l1", { .id = SQK_COMP_LZO, .lzo_algorithm = SQK_LZO1X_999, .level = 1 } },
	{ "lzo1x_1", { .id = SQK_COMP_LZO, .lzo_algorithm = SQK_LZO1X_1 } },
	{ "lzo1x_1_11", { .id = SQK_COMP_LZO, .lzo_algorithm = SQK_LZO1X_1_11 } },
	{ "lzo1x_1_12", { .id = SQK_COMP_LZO, .lzo_algorithm = SQK_LZO1X_1_12 } },
	{ "lzo1x_1_15", { .id = SQK_COMP_LZO, .lzo_algorithm = SQK_LZO1X_1_15 } },
};
#define NCODECS ((int)(sizeof(codecs) / sizeof(codecs[0])))

static const size_t block_sizes[] = { 4096, 131072, 1048576 };
#define NSIZES 3

/* Text-like data: words from a small vocabulary in a pseudo-random order. */
static void fill_text(uint8_t *p, size_t len, uint64_t seed)
{
	static const char *words[] = { "squash", "inode ", "block ", "fragment ", "\n",
				       "directory ", "xattr ", "0123 ", "lookup ", "table " };
	uint64_t s = seed + 7;
	size_t i = 0;

	while (i < len) {
		const char *w = words[test_xorshift(&s) % 10];
		size_t n = strlen(w);

		if (n > len - i)
			n = len - i;
		memcpy(p + i, w, n);
		i += n;
	}
}

/* Buffer of cap bytes followed by GUARD bytes that nothing may touch. */
static uint8_t *guarded(size_t cap)
{
	uint8_t *p = malloc(cap + GUARD);

	ck_assert_ptr_nonnull(p);
	memset(p, GUARD_BYTE, cap + GUARD);
	return p;
}

static void assert_guard(const uint8_t *p, size_t cap)
{
	size_t i;

	for (i = 0; i < GUARD; i++)
		ck_assert_uint_eq(p[cap + i], GUARD_BYTE);
}

static struct compressor *make(const struct sqk_comp_config *base, uint32_t block_size)
{
	struct sqk_comp_config cfg = *base;
	struct compressor *c = NULL;

	cfg.block_size = block_size;
	ck_assert_int_eq(compressor_create(&cfg, &c), 0);
	ck_assert_ptr_nonnull(c);
	ck_assert_uint_eq(c->cfg.id, cfg.id);
	return c;
}

/* Compresses then decompresses in; checks size, content and the guard. Returns the compressed
 * length. */
static size_t round_trip(struct compressor *c, const uint8_t *in, size_t len)
{
	uint8_t *z = guarded(len), *back = guarded(len);
	ssize_t n, m;

	n = comp_compress(c, in, len, z, len);
	ck_assert_int_gt(n, 0);
	ck_assert_int_lt(n, (ssize_t)len);
	assert_guard(z, len);
	m = comp_decompress(c, z, (size_t)n, back, len);
	ck_assert_int_eq(m, (ssize_t)len);
	ck_assert_mem_eq(back, in, len);
	assert_guard(back, len);
	free(z);
	free(back);
	return (size_t)n;
}

START_TEST(test_codec_round_trip)
{
	const struct codec_case *cc = &codecs[_i / NSIZES];
	size_t len = block_sizes[_i % NSIZES];
	struct compressor *c = make(&cc->cfg, (uint32_t)len);
	uint8_t *in = malloc(len);
	size_t n1, n2;

	ck_assert_ptr_nonnull(in);
	fill_text(in, len, len);
	n1 = round_trip(c, in, len);
	ck_assert_uint_lt(n1, len / 2);
	/* the same instance again, different data, then the first data once more */
	fill_text(in, len, len + 1);
	round_trip(c, in, len);
	fill_text(in, len, len);
	n2 = round_trip(c, in, len);
	ck_assert_uint_eq(n1, n2); /* no state leaks from block to block */
	free(in);
	compressor_destroy(c);
}
END_TEST

START_TEST(test_codec_incompressible)
{
	const struct codec_case *cc = &codecs[_i / NSIZES];
	size_t len = block_sizes[_i % NSIZES];
	struct compressor *c = make(&cc->cfg, (uint32_t)len);
	uint8_t *in = malloc(len), *out = guarded(len);

	ck_assert_ptr_nonnull(in);
	test_fill_random(in, len, _i);
	ck_assert_int_eq(comp_compress(c, in, len, out, len), 0);
	assert_guard(out, len);
	/* a larger out buffer changes nothing: the result must be smaller than the input */
	free(out);
	out = guarded(2 * len);
	ck_assert_int_eq(comp_compress(c, in, len, out, 2 * len), 0);
	assert_guard(out, 2 * len);
	free(in);
	free(out);
	compressor_destroy(c);
}
END_TEST

START_TEST(test_codec_tiny_inputs)
{
	enum { LEN = 256 };
	const struct codec_case *cc = &codecs[_i];
	struct compressor *c = make(&cc->cfg, 131072);
	uint8_t zeros[LEN], out[LEN + GUARD], back[LEN];
	ssize_t n;

	memset(zeros, 0, sizeof(zeros));
	memset(out, GUARD_BYTE, sizeof(out));
	ck_assert_int_eq(comp_compress(c, zeros, 0, out, LEN), 0);
	ck_assert_int_eq(comp_compress(c, zeros, 1, out, LEN), 0);
	ck_assert_int_eq(comp_compress(c, "ab", 2, out, LEN), 0);
	/* 256 zero bytes shrink with every codec (an xz stream alone costs about 60 bytes) */
	n = comp_compress(c, zeros, LEN, out, LEN);
	ck_assert_int_gt(n, 0);
	ck_assert_int_lt(n, LEN);
	assert_guard(out, LEN);
	memset(back, 1, sizeof(back));
	ck_assert_int_eq(comp_decompress(c, out, (size_t)n, back, sizeof(back)), LEN);
	ck_assert_mem_eq(back, zeros, LEN);
	/* an out_cap below what the data needs gives "store raw", not an error */
	ck_assert_int_eq(comp_compress(c, zeros, LEN, out, 2), 0);
	assert_guard(out, LEN);
	compressor_destroy(c);
}
END_TEST

/* Truncated, bit-flipped and garbage input fails without writing past out_cap. */
START_TEST(test_codec_hostile_input)
{
	const struct codec_case *cc = &codecs[_i];
	enum { LEN = 65536 };
	struct compressor *c = make(&cc->cfg, LEN);
	uint8_t *in = malloc(LEN), *z = malloc(LEN), *out = guarded(LEN);
	ssize_t n, m;
	size_t cut;

	ck_assert_ptr_nonnull(in);
	ck_assert_ptr_nonnull(z);
	fill_text(in, LEN, 3);
	n = comp_compress(c, in, LEN, z, LEN);
	ck_assert_int_gt(n, 16);
	for (cut = 1; cut < (size_t)n; cut += (size_t)n / 7 + 1) {
		m = comp_decompress(c, z, cut, out, LEN);
		ck_assert_msg(m < 0, "%s: truncated to %zu of %zd bytes decoded as %zd", cc->what,
			      cut, n, m);
		assert_guard(out, LEN);
	}
	ck_assert_int_lt(comp_decompress(c, z, 0, out, LEN), 0);
	test_fill_random(z, LEN, 99);
	ck_assert_int_lt(comp_decompress(c, z, LEN, out, LEN), 0);
	assert_guard(out, LEN);
	memset(z, 0, LEN);
	ck_assert_int_lt(comp_decompress(c, z, 100, out, LEN), 0);
	assert_guard(out, LEN);
	free(in);
	free(z);
	free(out);
	compressor_destroy(c);
}
END_TEST

/* Output that would exceed out_cap is an error, and nothing lands past out_cap. */
START_TEST(test_codec_output_too_big)
{
	const struct codec_case *cc = &codecs[_i];
	enum { LEN = 131072 };
	struct compressor *c = make(&cc->cfg, LEN);
	uint8_t *in = malloc(LEN), *z = malloc(LEN), *out = guarded(LEN);
	size_t caps[] = { LEN - 1, LEN / 2, 8192, 1 };
	ssize_t n;
	size_t i;

	ck_assert_ptr_nonnull(in);
	ck_assert_ptr_nonnull(z);
	fill_text(in, LEN, 11);
	n = comp_compress(c, in, LEN, z, LEN);
	ck_assert_int_gt(n, 0);
	for (i = 0; i < sizeof(caps) / sizeof(caps[0]); i++) {
		memset(out, GUARD_BYTE, LEN + GUARD);
		ck_assert_int_eq(comp_decompress(c, z, (size_t)n, out, caps[i]), SQK_EDECOMPRESS);
		assert_guard(out, caps[i]);
	}
	ck_assert_int_eq(comp_decompress(c, z, (size_t)n, out, LEN), LEN);
	ck_assert_mem_eq(out, in, LEN);
	free(in);
	free(z);
	free(out);
	compressor_destroy(c);
}
END_TEST

/* ZSTD_compressCCtx at `level`, with searchLog set when slog > 0, into out: the length. */
static size_t zstd_ref(const uint8_t *in, size_t len, int level, int slog, uint8_t *out,
		       size_t cap)
{
	ZSTD_CCtx *z = ZSTD_createCCtx();
	ck_assert_ptr_nonnull(z);
	ck_assert(!ZSTD_isError(ZSTD_CCtx_setParameter(z, ZSTD_c_compressionLevel, level)));
	if (slog)
		ck_assert(!ZSTD_isError(ZSTD_CCtx_setParameter(z, ZSTD_c_searchLog, slog)));
	size_t n = ZSTD_compress2(z, out, cap, in, len);
	ck_assert(!ZSTD_isError(n));
	ZSTD_freeCCtx(z);
	return n;
}

/* Compresses in with cfg and checks the bytes are exactly `want` (and decode back). */
static void zstd_expect(const struct sqk_comp_config *cfg, const uint8_t *in, size_t len,
			const uint8_t *want, size_t want_len)
{
	struct compressor *c = make(cfg, (uint32_t)len);
	uint8_t *out = guarded(len);
	ssize_t n = comp_compress(c, in, len, out, len);
	ck_assert_int_eq(n, (ssize_t)want_len);
	ck_assert_mem_eq(out, want, want_len);
	round_trip(c, in, len);
	compressor_destroy(c);
	free(out);
}

/* zstd's economies: the default level is level 15 with searchLog 4 (level 15's is 6 for a
 * 128 KiB block), an explicit level is that level exactly; a block of near-uniform bytes (a
 * random 32 KiB repeated: compressible, but every byte value equally common) is compressed at
 * level 9 whatever the level above it, a peaked block (mostly zeros) at level 9 at the default
 * level only, a text block at neither. */
START_TEST(test_zstd_effort)
{
	const size_t len = 128 * 1024;
	uint8_t *text = malloc(len), *flat = malloc(len);
	uint8_t *ref = malloc(2 * len), *other = malloc(2 * len);
	ck_assert(text && flat && ref && other);
	uint64_t s = 5;
	char words[256][10];
	for (size_t w = 0; w < 256; w++) { /* words, then text drawn from 24 of them */
		size_t wl = 3 + test_xorshift(&s) % 7;
		for (size_t k = 0; k < wl; k++)
			words[w][k] = (char)('a' + test_xorshift(&s) % 26);
		words[w][wl] = 0;
	}
	for (size_t i = 0; i < len;) {
		const char *w = words[(test_xorshift(&s) >> 20) % 24];
		for (size_t k = 0; w[k] && i < len; k++)
			text[i++] = (uint8_t)w[k];
		if (i < len)
			text[i++] = test_xorshift(&s) % 9 ? ' ' : '\n';
	}
	test_fill_random(flat, 32 * 1024, 9);
	for (size_t k = 1; k < 4; k++)
		memcpy(flat + k * 32 * 1024, flat, 32 * 1024);
	struct sqk_comp_config dflt = { .id = SQK_COMP_ZSTD }, l15 = dflt, l19 = dflt, l5 = dflt;
	l15.level = 15;
	l19.level = 19;
	l5.level = 5;

	size_t n = zstd_ref(text, len, 15, 4, ref, 2 * len);
	ck_assert(n != zstd_ref(text, len, 15, 0, other, 2 * len) || memcmp(ref, other, n));
	zstd_expect(&dflt, text, len, ref, n);
	n = zstd_ref(text, len, 15, 0, ref, 2 * len);
	zstd_expect(&l15, text, len, ref, n);

	n = zstd_ref(flat, len, 9, 0, ref, 2 * len);
	ck_assert(n != zstd_ref(flat, len, 19, 0, other, 2 * len) || memcmp(ref, other, n));
	zstd_expect(&dflt, flat, len, ref, n);
	zstd_expect(&l19, flat, len, ref, n);
	n = zstd_ref(flat, len, 5, 0, ref, 2 * len); /* at or below 9: the level itself */
	zstd_expect(&l5, flat, len, ref, n);

	/* a peaked block (zeros, every 16th byte random: a quarter of the sampled bytes) is
	 * compressed at level 9 at the default level, at an explicit level exactly as asked */
	memset(flat, 0, len);
	for (size_t i = 0; i < len; i += 16)
		flat[i] = (uint8_t)test_xorshift(&s);
	n = zstd_ref(flat, len, 9, 0, ref, 2 * len);
	ck_assert(n != zstd_ref(flat, len, 15, 4, other, 2 * len) || memcmp(ref, other, n));
	zstd_expect(&dflt, flat, len, ref, n);
	n = zstd_ref(flat, len, 15, 0, ref, 2 * len);
	zstd_expect(&l15, flat, len, ref, n);
	free(text);
	free(flat);
	free(ref);
	free(other);
}
END_TEST

/* x86-like machine code: E8 rel32 calls to a few fixed targets between short fillers. The x86
 * BCJ filter turns the relative addresses into repeating absolute ones. */
static void fill_x86_calls(uint8_t *p, size_t len, uint64_t seed)
{
	static const uint32_t targets[] = { 0x1000, 0x2340, 0x7777, 0x10020, 0x3000, 0x5a5a0 };
	uint64_t s = seed + 3;
	size_t i = 0;

	while (i + 5 <= len) {
		unsigned fill = (unsigned)(test_xorshift(&s) % 4), k;
		uint32_t rel;

		for (k = 0; k < fill && i < len; k++)
			p[i++] = (uint8_t)(0x40 + test_xorshift(&s) % 8);
		if (i + 5 > len)
			break;
		rel = targets[test_xorshift(&s) % 6] - (uint32_t)(i + 5);
		p[i] = 0xE8;
		put_le32(p + i + 1, rel);
		i += 5;
	}
	memset(p + i, 0x90, len - i);
}

START_TEST(test_xz_bcj)
{
	enum { LEN = 131072 };
	struct sqk_comp_config plain = { .id = SQK_COMP_XZ };
	struct sqk_comp_config x86 = { .id = SQK_COMP_XZ, .xz_bcj = SQK_BCJ_X86 };
	struct sqk_comp_config arm = { .id = SQK_COMP_XZ, .xz_bcj = SQK_BCJ_ARM };
	struct sqk_comp_config all = { .id = SQK_COMP_XZ, .xz_bcj = 0x3F };
	struct compressor *cp = make(&plain, LEN), *cx = make(&x86, LEN);
	struct compressor *cr = make(&arm, LEN), *ca = make(&all, LEN);
	uint8_t *in = malloc(LEN), *z = malloc(LEN), *back = malloc(LEN);
	size_t np, nx, na;
	ssize_t n;

	ck_assert_ptr_nonnull(in);
	ck_assert_ptr_nonnull(z);
	ck_assert_ptr_nonnull(back);
	fill_x86_calls(in, LEN, 1);
	np = round_trip(cp, in, LEN);
	nx = round_trip(cx, in, LEN);
	na = round_trip(ca, in, LEN);
	ck_assert_uint_lt(nx, np * 3 / 4); /* the x86 filter pays off on call-heavy code */
	ck_assert_uint_eq(na, nx);         /* of all filters and none, the smallest is kept */
	/* a filter that does not help loses to the plain stream */
	ck_assert_uint_le(round_trip(cr, in, LEN), np);
	/* the filter is recorded in the stream: an instance without BCJ decodes it */
	n = comp_compress(ca, in, LEN, z, LEN);
	ck_assert_int_eq(n, (ssize_t)nx);
	ck_assert_int_eq(comp_decompress(cp, z, (size_t)n, back, LEN), LEN);
	ck_assert_mem_eq(back, in, LEN);
	/* text with BCJ configured, then code again: state does not leak between variants */
	fill_text(in, LEN, 5);
	round_trip(cx, in, LEN);
	fill_x86_calls(in, LEN, 1);
	ck_assert_uint_eq(round_trip(cx, in, LEN), nx);
	free(in);
	free(z);
	free(back);
	compressor_destroy(cp);
	compressor_destroy(cx);
	compressor_destroy(cr);
	compressor_destroy(ca);
}
END_TEST

/* lz4 -Xhc (or a level) really selects the high-compression coder. */
START_TEST(test_lz4_hc)
{
	enum { LEN = 131072 };
	struct sqk_comp_config fast = { .id = SQK_COMP_LZ4 };
	struct sqk_comp_config hc = { .id = SQK_COMP_LZ4, .lz4_hc = true };
	struct sqk_comp_config hc12 = { .id = SQK_COMP_LZ4, .level = 12 };
	struct compressor *cf = make(&fast, LEN), *ch = make(&hc, LEN), *c12 = make(&hc12, LEN);
	uint8_t *in = malloc(LEN);
	size_t nf, nh, n12;

	ck_assert_ptr_nonnull(in);
	fill_text(in, LEN, 77);
	nf = round_trip(cf, in, LEN);
	nh = round_trip(ch, in, LEN);
	n12 = round_trip(c12, in, LEN);
	ck_assert_uint_lt(nh, nf * 3 / 4);
	ck_assert_uint_le(n12, nh);
	free(in);
	compressor_destroy(cf);
	compressor_destroy(ch);
	compressor_destroy(c12);
}
END_TEST

START_TEST(test_xz_dict_and_levels)
{
	enum { LEN = 131072 };
	struct sqk_comp_config small = { .id = SQK_COMP_XZ, .xz_dict = 8192, .level = 1 };
	struct sqk_comp_config odd = { .id = SQK_COMP_XZ, .xz_dict = 98304, .level = 9 };
	struct compressor *c1 = make(&small, LEN), *c2 = make(&odd, LEN);
	uint8_t *in = malloc(LEN);

	ck_assert_ptr_nonnull(in);
	fill_text(in, LEN, 8);
	round_trip(c1, in, LEN);
	round_trip(c2, in, LEN);
	round_trip(c1, in, 4096); /* blocks shorter than the dictionary */
	free(in);
	compressor_destroy(c1);
	compressor_destroy(c2);
}
END_TEST

/* Every codec's first bytes are the container SquashFS requires (format doc section 3). */
START_TEST(test_codec_stream_magic)
{
	enum { LEN = 8192 };
	uint8_t in[LEN], z[LEN];
	struct compressor *c;
	ssize_t n;

	fill_text(in, LEN, 1);
	c = make(&codecs[0].cfg, 131072);
	n = comp_compress(c, in, LEN, z, LEN);
	ck_assert_int_gt(n, 2);
	ck_assert_mem_eq(z, "\x78\xDA", 2); /* zlib, level 9 */
	compressor_destroy(c);
	c = make(&codecs[1].cfg, 131072);
	n = comp_compress(c, in, LEN, z, LEN);
	ck_assert_int_gt(n, 6);
	ck_assert_mem_eq(z, "\xFD\x37\x7A\x58\x5A\x00", 6);
	ck_assert_uint_eq(z[7], 0x01); /* stream flags: CRC32 */
	compressor_destroy(c);
	c = make(&codecs[4].cfg, 131072);
	n = comp_compress(c, in, LEN, z, LEN);
	ck_assert_int_gt(n, 4);
	ck_assert_mem_eq(z, "\x28\xB5\x2F\xFD", 4);
	compressor_destroy(c);
}
END_TEST

/* Compressed size of in with gzip level 6, window 10 and the given strategy bits. */
static size_t gzip_size(uint16_t strategies, const uint8_t *in, size_t len)
{
	struct sqk_comp_config cfg = { .id = SQK_COMP_GZIP, .level = 6, .gzip_window = 10,
				       .gzip_strategies = strategies };
	struct compressor *c = make(&cfg, (uint32_t)len);
	size_t n = round_trip(c, in, len);

	compressor_destroy(c);
	return n;
}

/* With several strategies the smallest result is kept, whichever strategy is tried first. */
START_TEST(test_gzip_strategies)
{
	enum { LEN = 131072 };
	static const uint16_t masks[] = { 0x1F, 0x14, 0x0C, 0x06, 0x11 };
	uint8_t *in = malloc(LEN);
	size_t single[5], i, bit;

	ck_assert_ptr_nonnull(in);
	fill_text(in, LEN, 21);
	for (bit = 0; bit < 5; bit++)
		single[bit] = gzip_size((uint16_t)(1u << bit), in, LEN);
	/* the strategies really differ on this data (huffman-only is far worse) */
	ck_assert_uint_gt(single[2], 2 * single[0]);
	for (i = 0; i < sizeof(masks) / sizeof(masks[0]); i++) {
		size_t best = SIZE_MAX;

		for (bit = 0; bit < 5; bit++) {
			if ((masks[i] & (1u << bit)) && single[bit] < best)
				best = single[bit];
		}
		ck_assert_msg(gzip_size(masks[i], in, LEN) == best, "mask %#x", masks[i]);
	}
	ck_assert_uint_eq(gzip_size(0, in, LEN), single[0]); /* no bits: default strategy */
	free(in);
}
END_TEST

START_TEST(test_factory)
{
	struct sqk_comp_config cfg = { .block_size = 131072 };
	struct compressor dummy, *c;
	static const struct {
		uint16_t id;
		int level;
		int rc;
	} cases[] = {
		{ SQK_COMP_LZMA, 0, SQK_EUNSUPPORTED }, { SQK_COMP_LZO, 10, SQK_EINVAL },
		{ SQK_COMP_LZO, -1, SQK_EINVAL },	{ SQK_COMP_LZO, 0, 0 },
		{ SQK_COMP_LZO, 1, 0 },			{ SQK_COMP_LZO, 9, 0 },
		{ 0, 0, SQK_EUNSUPPORTED },		{ 7, 0, SQK_EUNSUPPORTED },
		{ 0xFFFF, 0, SQK_EUNSUPPORTED },	{ SQK_COMP_ZSTD, 23, SQK_EINVAL },
		{ SQK_COMP_ZSTD, -1, SQK_EINVAL },	{ SQK_COMP_GZIP, 10, SQK_EINVAL },
		{ SQK_COMP_XZ, 10, SQK_EINVAL },	{ SQK_COMP_LZ4, 13, SQK_EINVAL },
		{ SQK_COMP_ZSTD, 22, 0 },		{ SQK_COMP_ZSTD, 1, 0 },
		{ SQK_COMP_GZIP, 1, 0 },		{ SQK_COMP_XZ, 9, 0 },
		{ SQK_COMP_LZ4, 12, 0 },
	};
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		cfg.id = cases[i].id;
		cfg.level = cases[i].level;
		c = &dummy; /* a failed create must clear *out */
		ck_assert_msg(compressor_create(&cfg, &c) == cases[i].rc, "case %zu", i);
		if (cases[i].rc) {
			ck_assert_ptr_null(c);
		} else {
			ck_assert_ptr_nonnull(c);
			ck_assert_int_eq(c->cfg.level, cases[i].level);
		}
		compressor_destroy(c);
	}
	cfg = (struct sqk_comp_config){ .id = SQK_COMP_XZ, .block_size = 131072 };
	cfg.xz_dict = 100000;
	ck_assert_int_eq(compressor_create(&cfg, &c), SQK_EINVAL);
	cfg.xz_dict = 0;
	cfg.xz_bcj = 0x40;
	ck_assert_int_eq(compressor_create(&cfg, &c), SQK_EINVAL);
	cfg = (struct sqk_comp_config){ .id = SQK_COMP_GZIP, .gzip_window = 16 };
	ck_assert_int_eq(compressor_create(&cfg, &c), SQK_EINVAL);
	cfg.gzip_window = 7;
	ck_assert_int_eq(compressor_create(&cfg, &c), SQK_EINVAL);
	cfg.gzip_window = 8;
	cfg.gzip_strategies = 0x20;
	ck_assert_int_eq(compressor_create(&cfg, &c), SQK_EINVAL);
	/* lzo: a level only with lzo1x_999, algorithms 1..5 */
	cfg = (struct sqk_comp_config){ .id = SQK_COMP_LZO, .lzo_algorithm = SQK_LZO1X_1 };
	cfg.level = 1;
	ck_assert_int_eq(compressor_create(&cfg, &c), SQK_EINVAL);
	cfg.level = 0;
	cfg.lzo_algorithm = SQK_LZO1X_999 + 1;
	ck_assert_int_eq(compressor_create(&cfg, &c), SQK_EINVAL);
	cfg.lzo_algorithm = -1;
	ck_assert_int_eq(compressor_create(&cfg, &c), SQK_EINVAL);
	cfg.lzo_algorithm = SQK_LZO1X_1_12;
	ck_assert_int_eq(compressor_create(&cfg, &c), 0);
	ck_assert_int_eq(c->cfg.lzo_algorithm, SQK_LZO1X_1_12);
	compressor_destroy(c);
	compressor_destroy(NULL);
}
END_TEST

/* The helpers every codec relies on: the output budget and the kernel's dictionary rule. */
START_TEST(test_internal_helpers)
{
	static const uint32_t good[] = { 4096, 8192, 12288, 98304, 131072, 196608, 1048576,
					 1u << 31, 3u << 30, 1, 3 };
	static const uint32_t bad[] = { 0, 5, 7, 100000, 5u << 12, 7u << 12, 131073, UINT32_MAX };
	size_t i;

	ck_assert_uint_eq(comp_limit(0, 100), 0);
	ck_assert_uint_eq(comp_limit(1, 100), 0);
	ck_assert_uint_eq(comp_limit(100, 1000), 99); /* strictly smaller than the input */
	ck_assert_uint_eq(comp_limit(100, 100), 99);
	ck_assert_uint_eq(comp_limit(100, 50), 50);
	ck_assert_uint_eq(comp_limit(100, 0), 0);
	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		ck_assert_msg(xz_dict_form_ok(good[i]), "%u", good[i]);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(!xz_dict_form_ok(bad[i]), "%u", bad[i]);
}
END_TEST

START_TEST(test_names)
{
	static const char *names[] = { NULL, "gzip", "lzma", "lzo", "xz", "lz4", "zstd" };
	uint16_t id;

	for (id = 1; id <= 6; id++) {
		ck_assert_str_eq(comp_name(id), names[id]);
		ck_assert_uint_eq(comp_id_from_name(names[id]), id);
	}
	ck_assert_ptr_null(comp_name(0));
	ck_assert_ptr_null(comp_name(7));
	ck_assert_uint_eq(comp_id_from_name("zlib"), 0);
	ck_assert_uint_eq(comp_id_from_name("ZSTD"), 0);
	ck_assert_uint_eq(comp_id_from_name(""), 0);
	ck_assert_uint_eq(comp_id_from_name(NULL), 0);
	ck_assert_uint_eq(xz_bcj_from_name("x86"), SQK_BCJ_X86);
	ck_assert_uint_eq(xz_bcj_from_name("powerpc"), SQK_BCJ_POWERPC);
	ck_assert_uint_eq(xz_bcj_from_name("ia64"), SQK_BCJ_IA64);
	ck_assert_uint_eq(xz_bcj_from_name("arm"), SQK_BCJ_ARM);
	ck_assert_uint_eq(xz_bcj_from_name("armthumb"), SQK_BCJ_ARMTHUMB);
	ck_assert_uint_eq(xz_bcj_from_name("sparc"), SQK_BCJ_SPARC);
	ck_assert_uint_eq(xz_bcj_from_name("arm64"), 0);
	ck_assert_uint_eq(xz_bcj_from_name(NULL), 0);
}
END_TEST

/* mksquashfs's -Xalgorithm names, both ways; SQK_LZO_DEFAULT names lzo1x_999. */
START_TEST(test_lzo_names)
{
	static const char *names[] = { NULL, "lzo1x_1", "lzo1x_1_11", "lzo1x_1_12", "lzo1x_1_15",
				       "lzo1x_999" };
	int a;

	for (a = SQK_LZO1X_1; a <= SQK_LZO1X_999; a++) {
		ck_assert_str_eq(lzo_algorithm_name(a), names[a]);
		ck_assert_int_eq(lzo_algorithm_from_name(names[a]), a);
	}
	ck_assert_str_eq(lzo_algorithm_name(SQK_LZO_DEFAULT), "lzo1x_999");
	ck_assert_ptr_null(lzo_algorithm_name(SQK_LZO1X_999 + 1));
	ck_assert_ptr_null(lzo_algorithm_name(-1));
	ck_assert_int_eq(lzo_algorithm_from_name("lzo1x_2"), SQK_LZO_DEFAULT);
	ck_assert_int_eq(lzo_algorithm_from_name("LZO1X_1"), SQK_LZO_DEFAULT);
	ck_assert_int_eq(lzo_algorithm_from_name(""), SQK_LZO_DEFAULT);
	ck_assert_int_eq(lzo_algorithm_from_name(NULL), SQK_LZO_DEFAULT);
}
END_TEST

/* The message an open of an image with an unreadable compressor reports names it. */
START_TEST(test_comp_supported)
{
	char buf[80], tiny[12];
	uint16_t id;

	for (id = 1; id <= 6; id++) {
		memset(buf, 'x', sizeof(buf));
		ck_assert_int_eq(comp_supported(id, buf, sizeof(buf)),
				 id == SQK_COMP_LZMA ? SQK_EUNSUPPORTED : 0);
		if (id != SQK_COMP_LZMA)
			ck_assert_str_eq(buf, "");
	}
	ck_assert_int_eq(comp_supported(SQK_COMP_LZMA, buf, sizeof(buf)), SQK_EUNSUPPORTED);
	ck_assert_str_eq(buf, "compressor lzma (legacy, id 2) is not supported");
	ck_assert_int_eq(comp_supported(7, buf, sizeof(buf)), SQK_EUNSUPPORTED);
	ck_assert_str_eq(buf, "unknown compressor id 7");
	ck_assert_int_eq(comp_supported(0, buf, sizeof(buf)), SQK_EUNSUPPORTED);
	ck_assert_str_eq(buf, "unknown compressor id 0");
	ck_assert_int_eq(comp_supported(0xFFFF, buf, sizeof(buf)), SQK_EUNSUPPORTED);
	ck_assert_str_eq(buf, "unknown compressor id 65535");
	/* cut to the buffer, always terminated; no buffer at all */
	ck_assert_int_eq(comp_supported(SQK_COMP_LZMA, tiny, sizeof(tiny)), SQK_EUNSUPPORTED);
	ck_assert_str_eq(tiny, "compressor ");
	ck_assert_int_eq(comp_supported(SQK_COMP_LZMA, NULL, 0), SQK_EUNSUPPORTED);
	ck_assert_int_eq(comp_supported(SQK_COMP_LZO, NULL, 0), 0);
}
END_TEST

/* Writes cfg's options and compares with the expected payload (len 0 = no block). */
static void expect_options(const struct sqk_comp_config *cfg, const char *bytes, size_t len)
{
	uint8_t buf[16];
	size_t got = 99;

	memset(buf, 0xEE, sizeof(buf));
	ck_assert_int_eq(comp_options_write(cfg, buf, &got), 0);
	ck_assert_uint_eq(got, len);
	if (len)
		ck_assert_mem_eq(buf, bytes, len);
	ck_assert_uint_eq(buf[8], 0xEE);
}

START_TEST(test_options_write)
{
	struct sqk_comp_config c = { .id = SQK_COMP_GZIP, .block_size = 131072 };

	expect_options(&c, NULL, 0);
	c.level = 9;
	c.gzip_window = 15;
	expect_options(&c, NULL, 0);
	/* the format document's example: -Xcompression-level 5 -Xwindow-size 12 -Xstrategy
	 * filtered,huffman_only */
	c.level = 5;
	c.gzip_window = 12;
	c.gzip_strategies = 0x02 | 0x04;
	expect_options(&c, "\x05\x00\x00\x00\x0c\x00\x06\x00", 8);
	c = (struct sqk_comp_config){ .id = SQK_COMP_GZIP, .gzip_strategies = 0x01 };
	expect_options(&c, "\x09\x00\x00\x00\x0f\x00\x01\x00", 8);

	c = (struct sqk_comp_config){ .id = SQK_COMP_LZ4, .block_size = 131072 };
	expect_options(&c, "\x01\x00\x00\x00\x00\x00\x00\x00", 8);
	c.lz4_hc = true;
	expect_options(&c, "\x01\x00\x00\x00\x01\x00\x00\x00", 8);
	c.lz4_hc = false;
	c.level = 4; /* a level selects HC */
	expect_options(&c, "\x01\x00\x00\x00\x01\x00\x00\x00", 8);

	c = (struct sqk_comp_config){ .id = SQK_COMP_ZSTD, .block_size = 131072 };
	expect_options(&c, NULL, 0);
	c.level = 15;
	expect_options(&c, NULL, 0);
	c.level = 3;
	expect_options(&c, "\x03\x00\x00\x00", 4);

	c = (struct sqk_comp_config){ .id = SQK_COMP_XZ, .block_size = 131072, .level = 9 };
	expect_options(&c, NULL, 0);
	c.xz_dict = 131072;
	expect_options(&c, NULL, 0);
	c.xz_dict = 32768;
	c.xz_bcj = SQK_BCJ_X86 | SQK_BCJ_ARM; /* as mksquashfs -Xbcj x86,arm -Xdict-size 32K */
	expect_options(&c, "\x00\x80\x00\x00\x09\x00\x00\x00", 8);
	c.xz_dict = 0;
	c.xz_bcj = SQK_BCJ_SPARC;
	expect_options(&c, "\x00\x00\x02\x00\x20\x00\x00\x00", 8);
	c.xz_bcj = 0;
	c.xz_dict = 98304; /* -Xdict-size 75% of 128K */
	expect_options(&c, "\x00\x80\x01\x00\x00\x00\x00\x00", 8);

	/* lzo: no block for lzo1x_999 at level 8 (the legacy LZO images), as mksquashfs */
	c = (struct sqk_comp_config){ .id = SQK_COMP_LZO, .block_size = 131072 };
	expect_options(&c, NULL, 0);
	c.level = 8;
	c.lzo_algorithm = SQK_LZO1X_999;
	expect_options(&c, NULL, 0);
	c.level = 3; /* -Xcompression-level 3 */
	expect_options(&c, "\x04\x00\x00\x00\x03\x00\x00\x00", 8);
	c.level = 0;
	c.lzo_algorithm = SQK_LZO1X_1; /* -Xalgorithm lzo1x_1: algorithm 0, level 0 */
	expect_options(&c, "\x00\x00\x00\x00\x00\x00\x00\x00", 8);
	c.lzo_algorithm = SQK_LZO1X_1_15;
	expect_options(&c, "\x03\x00\x00\x00\x00\x00\x00\x00", 8);
}
END_TEST

START_TEST(test_options_write_invalid)
{
	static const struct sqk_comp_config bad[] = {
		{ .id = SQK_COMP_GZIP, .level = 10 },
		{ .id = SQK_COMP_GZIP, .gzip_window = 16 },
		{ .id = SQK_COMP_GZIP, .gzip_strategies = 0x40 },
		{ .id = SQK_COMP_ZSTD, .level = 23 },
		{ .id = SQK_COMP_XZ, .block_size = 131072, .xz_dict = 100000 },
		{ .id = SQK_COMP_XZ, .block_size = 131072, .xz_bcj = 0x80 },
		{ .id = SQK_COMP_XZ }, /* default dictionary without a block size */
		{ .id = SQK_COMP_LZ4, .level = 13 },
		{ .id = SQK_COMP_LZO, .level = 10 },
		{ .id = SQK_COMP_LZO, .lzo_algorithm = SQK_LZO1X_1_11, .level = 1 },
		{ .id = SQK_COMP_LZO, .lzo_algorithm = SQK_LZO1X_999 + 1 },
	};
	uint8_t buf[8];
	size_t i, len;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(comp_options_write(&bad[i], buf, &len) == SQK_EINVAL, "case %zu",
			      i);
	for (i = 0; i < 3; i++) {
		struct sqk_comp_config c = { .id = (uint16_t)(i == 0 ? SQK_COMP_LZMA :
							      i == 1 ? 0 : 9) };

		ck_assert_int_eq(comp_options_write(&c, buf, &len), SQK_EUNSUPPORTED);
		ck_assert_uint_eq(len, 0);
	}
}
END_TEST

static void expect_read(uint16_t id, const char *bytes, size_t len, int rc)
{
	struct sqk_comp_config cfg;

	ck_assert_int_eq(comp_options_read(id, 131072, (const uint8_t *)bytes, len, &cfg), rc);
}

START_TEST(test_options_read)
{
	struct sqk_comp_config cfg;

	ck_assert_int_eq(comp_options_read(SQK_COMP_GZIP, 131072,
					       (const uint8_t *)"\x05\x00\x00\x00\x0c\x00\x06\x00",
					       8, &cfg), 0);
	ck_assert_uint_eq(cfg.id, SQK_COMP_GZIP);
	ck_assert_uint_eq(cfg.block_size, 131072);
	ck_assert_int_eq(cfg.level, 5);
	ck_assert_int_eq(cfg.gzip_window, 12);
	ck_assert_uint_eq(cfg.gzip_strategies, 6);

	ck_assert_int_eq(comp_options_read(SQK_COMP_GZIP, 131072, NULL, 0, &cfg), 0);
	ck_assert_int_eq(cfg.level, 9);
	ck_assert_int_eq(cfg.gzip_window, 15);
	ck_assert_uint_eq(cfg.gzip_strategies, 0);

	ck_assert_int_eq(comp_options_read(SQK_COMP_XZ, 65536, NULL, 0, &cfg), 0);
	ck_assert_uint_eq(cfg.xz_dict, 65536);
	ck_assert_uint_eq(cfg.xz_bcj, 0);
	ck_assert_int_eq(comp_options_read(SQK_COMP_XZ, 131072,
					       (const uint8_t *)"\x00\x80\x01\x00\x09\x00\x00\x00",
					       8, &cfg), 0);
	ck_assert_uint_eq(cfg.xz_dict, 98304);
	ck_assert_uint_eq(cfg.xz_bcj, SQK_BCJ_X86 | SQK_BCJ_ARM);

	ck_assert_int_eq(comp_options_read(SQK_COMP_LZ4, 131072,
					       (const uint8_t *)"\x01\x00\x00\x00\x01\x00\x00\x00",
					       8, &cfg), 0);
	ck_assert(cfg.lz4_hc);
	ck_assert_int_eq(comp_options_read(SQK_COMP_LZ4, 131072,
					       (const uint8_t *)"\x01\x00\x00\x00\x00\x00\x00\x00",
					       8, &cfg), 0);
	ck_assert(!cfg.lz4_hc);

	ck_assert_int_eq(comp_options_read(SQK_COMP_ZSTD, 131072, NULL, 0, &cfg), 0);
	ck_assert_int_eq(cfg.level, 15);
	ck_assert_int_eq(comp_options_read(SQK_COMP_ZSTD, 131072,
					       (const uint8_t *)"\x16\x00\x00\x00", 4, &cfg), 0);
	ck_assert_int_eq(cfg.level, 22);

	/* lzo: no block is lzo1x_999 at level 8 */
	ck_assert_int_eq(comp_options_read(SQK_COMP_LZO, 131072, NULL, 0, &cfg), 0);
	ck_assert_int_eq(cfg.lzo_algorithm, SQK_LZO1X_999);
	ck_assert_int_eq(cfg.level, 8);
	ck_assert_int_eq(comp_options_read(SQK_COMP_LZO, 131072,
					       (const uint8_t *)"\x04\x00\x00\x00\x09\x00\x00\x00",
					       8, &cfg), 0);
	ck_assert_int_eq(cfg.lzo_algorithm, SQK_LZO1X_999);
	ck_assert_int_eq(cfg.level, 9);
	ck_assert_int_eq(comp_options_read(SQK_COMP_LZO, 131072,
					       (const uint8_t *)"\x02\x00\x00\x00\x00\x00\x00\x00",
					       8, &cfg), 0);
	ck_assert_int_eq(cfg.lzo_algorithm, SQK_LZO1X_1_12);
	ck_assert_int_eq(cfg.level, 0);
}
END_TEST

START_TEST(test_options_read_invalid)
{
	/* lz4: the kernel requires the block, version 1 */
	expect_read(SQK_COMP_LZ4, NULL, 0, SQK_ECORRUPT);
	expect_read(SQK_COMP_LZ4, "\x01\x00\x00\x00", 4, SQK_ECORRUPT);
	expect_read(SQK_COMP_LZ4, "\x02\x00\x00\x00\x00\x00\x00\x00", 8, SQK_EUNSUPPORTED);
	expect_read(SQK_COMP_LZ4, "\x00\x00\x00\x00\x00\x00\x00\x00", 8, SQK_EUNSUPPORTED);
	/* xz: dictionary 2^n or 2^n + 2^(n+1) only (100000 fails the kernel mount) */
	expect_read(SQK_COMP_XZ, "\xa0\x86\x01\x00\x00\x00\x00\x00", 8, SQK_ECORRUPT);
	expect_read(SQK_COMP_XZ, "\x00\x00\x00\x00\x00\x00\x00\x00", 8, SQK_ECORRUPT);
	expect_read(SQK_COMP_XZ, "\x00\x00\x05\x00\x00\x00\x00\x00", 8, SQK_ECORRUPT);
	expect_read(SQK_COMP_XZ, "\x00\x00\x02\x00", 4, SQK_ECORRUPT);
	expect_read(SQK_COMP_XZ, "\x00\x04\x00\x00\x00\x00\x00\x00", 8, SQK_EUNSUPPORTED);
	/* gzip: level 1-9, window 8-15 */
	expect_read(SQK_COMP_GZIP, "\x00\x00\x00\x00\x0f\x00\x00\x00", 8, SQK_ECORRUPT);
	expect_read(SQK_COMP_GZIP, "\x0a\x00\x00\x00\x0f\x00\x00\x00", 8, SQK_ECORRUPT);
	expect_read(SQK_COMP_GZIP, "\x09\x00\x00\x00\x07\x00\x00\x00", 8, SQK_ECORRUPT);
	expect_read(SQK_COMP_GZIP, "\x09\x00\x00\x00\x10\x00\x00\x00", 8, SQK_ECORRUPT);
	expect_read(SQK_COMP_GZIP, "\x09\x00\x00\x00\x0f\x00", 6, SQK_ECORRUPT);
	/* zstd: level 1-22 */
	expect_read(SQK_COMP_ZSTD, "\x00\x00\x00\x00", 4, SQK_ECORRUPT);
	expect_read(SQK_COMP_ZSTD, "\x17\x00\x00\x00", 4, SQK_ECORRUPT);
	expect_read(SQK_COMP_ZSTD, "\x03\x00", 2, SQK_ECORRUPT);
	/* lzo: algorithm 0..4, level 1..9 for lzo1x_999 (4) and 0 for the others */
	expect_read(SQK_COMP_LZO, "\x05\x00\x00\x00\x00\x00\x00\x00", 8, SQK_ECORRUPT);
	expect_read(SQK_COMP_LZO, "\xff\xff\xff\xff\x00\x00\x00\x00", 8, SQK_ECORRUPT);
	expect_read(SQK_COMP_LZO, "\x00\x00\x00\x00\x01\x00\x00\x00", 8, SQK_ECORRUPT);
	expect_read(SQK_COMP_LZO, "\x04\x00\x00\x00\x00\x00\x00\x00", 8, SQK_ECORRUPT);
	expect_read(SQK_COMP_LZO, "\x04\x00\x00\x00\x0a\x00\x00\x00", 8, SQK_ECORRUPT);
	expect_read(SQK_COMP_LZO, "\x04\x00\x00\x00", 4, SQK_ECORRUPT);
	/* compressors squashkit cannot handle */
	expect_read(SQK_COMP_LZMA, NULL, 0, SQK_EUNSUPPORTED);
	expect_read(0, NULL, 0, SQK_EUNSUPPORTED);
	expect_read(7, NULL, 0, SQK_EUNSUPPORTED);
	expect_read(SQK_COMP_ZSTD, NULL, 4, SQK_EINVAL);
}
END_TEST

/* write -> read -> create -> write gives the same bytes for every kind of configuration. */
START_TEST(test_options_round_trip)
{
	static const struct sqk_comp_config cfgs[] = {
		{ .id = SQK_COMP_GZIP, .level = 1, .gzip_window = 8, .gzip_strategies = 0x1F },
		{ .id = SQK_COMP_GZIP, .level = 9, .gzip_window = 15, .gzip_strategies = 0x10 },
		{ .id = SQK_COMP_GZIP, .level = 3 },
		{ .id = SQK_COMP_XZ, .xz_dict = 4096 },
		{ .id = SQK_COMP_XZ, .xz_dict = 1048576, .xz_bcj = 0x3F },
		{ .id = SQK_COMP_XZ, .xz_dict = 12288, .xz_bcj = SQK_BCJ_POWERPC },
		{ .id = SQK_COMP_ZSTD, .level = 1 },
		{ .id = SQK_COMP_ZSTD, .level = 22 },
		{ .id = SQK_COMP_LZ4 },
		{ .id = SQK_COMP_LZ4, .lz4_hc = true },
		{ .id = SQK_COMP_LZO, .level = 1 },
		{ .id = SQK_COMP_LZO, .lzo_algorithm = SQK_LZO1X_999, .level = 9 },
		{ .id = SQK_COMP_LZO, .lzo_algorithm = SQK_LZO1X_1 },
		{ .id = SQK_COMP_LZO, .lzo_algorithm = SQK_LZO1X_1_11 },
		{ .id = SQK_COMP_LZO, .lzo_algorithm = SQK_LZO1X_1_12 },
		{ .id = SQK_COMP_LZO, .lzo_algorithm = SQK_LZO1X_1_15 },
	};
	size_t i;

	for (i = 0; i < sizeof(cfgs) / sizeof(cfgs[0]); i++) {
		struct sqk_comp_config in = cfgs[i], out;
		struct compressor *c;
		uint8_t b1[8], b2[8];
		size_t l1, l2;

		in.block_size = 131072;
		ck_assert_int_eq(comp_options_write(&in, b1, &l1), 0);
		ck_assert_msg(l1 > 0, "case %zu wrote no block", i);
		ck_assert_int_eq(comp_options_read(in.id, 131072, b1, l1, &out), 0);
		ck_assert_int_eq(compressor_create(&out, &c), 0);
		ck_assert_int_eq(comp_options_write(&c->cfg, b2, &l2), 0);
		ck_assert_uint_eq(l1, l2);
		ck_assert_mem_eq(b1, b2, l1);
		compressor_destroy(c);
	}
}
END_TEST

/* The options block exactly as mksquashfs 4.5.1 stores it at position 96 (raw, 0x8008). */
START_TEST(test_options_mksquashfs_block)
{
	static const uint8_t block[] = { 0x08, 0x80, 0x05, 0x00, 0x00, 0x00,
					 0x0c, 0x00, 0x06, 0x00 };
	uint8_t payload[SQK_META_SIZE], enc[16];
	struct sqk_comp_config cfg;
	size_t used = 0, len;
	ssize_t n;

	n = meta_decode_block(NULL, block, sizeof(block), payload, 0, &used);
	ck_assert_int_eq(n, 8);
	ck_assert_uint_eq(used, sizeof(block));
	ck_assert_int_eq(comp_options_read(SQK_COMP_GZIP, 131072, payload, 8, &cfg), 0);
	ck_assert_int_eq(cfg.level, 5);
	ck_assert_int_eq(cfg.gzip_window, 12);
	ck_assert_uint_eq(cfg.gzip_strategies, 6);
	ck_assert_int_eq(comp_options_write(&cfg, payload, &len), 0);
	ck_assert_int_eq(meta_encode_block(NULL, payload, len, enc), (ssize_t)sizeof(block));
	ck_assert_mem_eq(enc, block, sizeof(block));
}
END_TEST

/* Every algorithm writes the one LZO1X format: any instance decodes any other's blocks, and
 * lzo1x_999 (more so at level 9) gives smaller blocks than the fast lzo1x_1. */
START_TEST(test_lzo_algorithms)
{
	enum { LEN = 131072 };
	uint8_t *in = malloc(LEN), *z = malloc(LEN), *back = guarded(LEN);
	struct compressor *c[SQK_LZO1X_999 + 1], *l9, *l1;
	size_t size[SQK_LZO1X_999 + 1];
	int a, b;

	ck_assert_ptr_nonnull(in);
	ck_assert_ptr_nonnull(z);
	fill_text(in, LEN, 42);
	for (a = SQK_LZO1X_1; a <= SQK_LZO1X_999; a++) {
		struct sqk_comp_config cfg = { .id = SQK_COMP_LZO, .lzo_algorithm = a };

		c[a] = make(&cfg, LEN);
		size[a] = round_trip(c[a], in, LEN);
	}
	for (a = SQK_LZO1X_1; a <= SQK_LZO1X_999; a++) {
		ssize_t n = comp_compress(c[a], in, LEN, z, LEN);

		ck_assert_int_eq(n, (ssize_t)size[a]); /* the same bytes again */
		for (b = SQK_LZO1X_1; b <= SQK_LZO1X_999; b++) {
			memset(back, 0, LEN);
			ck_assert_int_eq(comp_decompress(c[b], z, (size_t)n, back, LEN), LEN);
			ck_assert_mem_eq(back, in, LEN);
			assert_guard(back, LEN);
		}
	}
	ck_assert_uint_lt(size[SQK_LZO1X_999], size[SQK_LZO1X_1] * 3 / 4);
	l9 = make(&(struct sqk_comp_config){ .id = SQK_COMP_LZO, .level = 9 }, LEN);
	l1 = make(&(struct sqk_comp_config){ .id = SQK_COMP_LZO, .level = 1 }, LEN);
	ck_assert_uint_le(round_trip(l9, in, LEN), size[SQK_LZO1X_999]);
	ck_assert_uint_ge(round_trip(l1, in, LEN), size[SQK_LZO1X_999]);
	for (a = SQK_LZO1X_1; a <= SQK_LZO1X_999; a++)
		compressor_destroy(c[a]);
	compressor_destroy(l9);
	compressor_destroy(l1);
	free(in);
	free(z);
	free(back);
}
END_TEST

/* lzo compresses into its own worst-case buffer: a result is copied out only when it is
 * strictly smaller than the input and fits out_cap, and nothing is written otherwise. */
START_TEST(test_lzo_budget)
{
	enum { LEN = 65536 };
	struct sqk_comp_config cfg = { .id = SQK_COMP_LZO, .lzo_algorithm = SQK_LZO1X_1 };
	struct compressor *c = make(&cfg, LEN);
	uint8_t *in = malloc(LEN), *out = guarded(LEN), *z = malloc(LEN);
	ssize_t n;
	size_t i;

	ck_assert_ptr_nonnull(in);
	ck_assert_ptr_nonnull(z);
	fill_text(in, LEN, 9);
	n = comp_compress(c, in, LEN, z, LEN);
	ck_assert_int_gt(n, 0);
	ck_assert_int_eq(comp_compress(c, in, LEN, out, (size_t)n - 1), 0);
	for (i = 0; i < LEN + GUARD; i++)
		ck_assert_uint_eq(out[i], GUARD_BYTE); /* "store raw" wrote nothing */
	ck_assert_int_eq(comp_compress(c, in, LEN, out, (size_t)n), n);
	ck_assert_mem_eq(out, z, (size_t)n);
	assert_guard(out, (size_t)n);
	/* incompressible: LZO would expand it (up to len + len/16 + 67), reported as 0 */
	test_fill_random(in, LEN, 5);
	memset(out, GUARD_BYTE, LEN + GUARD);
	ck_assert_int_eq(comp_compress(c, in, LEN, out, LEN), 0);
	for (i = 0; i < LEN + GUARD; i++)
		ck_assert_uint_eq(out[i], GUARD_BYTE);
	free(in);
	free(out);
	free(z);
	compressor_destroy(c);
}
END_TEST

/* Blocks made by liblzo2 itself (as mksquashfs does) decode; the stream must end exactly where
 * the block ends (the kernel's rule), and bytes after the end marker are an error. */
START_TEST(test_lzo_foreign_and_exact)
{
	enum { LEN = 32768 };
	uint8_t *in = malloc(LEN), *z = malloc(LEN + LEN / 16 + 64 + 3 + 1), *back = guarded(LEN);
	void *wrk = malloc(LZO1X_1_MEM_COMPRESS);
	struct sqk_comp_config cfg = { .id = SQK_COMP_LZO };
	struct compressor *c = make(&cfg, LEN);
	lzo_uint zlen = 0;

	ck_assert_ptr_nonnull(in);
	ck_assert_ptr_nonnull(z);
	ck_assert_ptr_nonnull(wrk);
	ck_assert_int_eq(lzo_init(), LZO_E_OK);
	fill_text(in, LEN, 17);
	ck_assert_int_eq(lzo1x_1_compress(in, LEN, z, &zlen, wrk), LZO_E_OK);
	ck_assert_uint_lt(zlen, LEN);
	ck_assert_int_eq(comp_decompress(c, z, zlen, back, LEN), LEN);
	ck_assert_mem_eq(back, in, LEN);
	/* a shorter expected size: the block holds more than the reader expects */
	ck_assert_int_eq(comp_decompress(c, z, zlen, back, LEN - 1), SQK_EDECOMPRESS);
	assert_guard(back, LEN);
	/* a trailing byte after the end marker */
	z[zlen] = 0x11;
	ck_assert_int_eq(comp_decompress(c, z, zlen + 1, back, LEN), SQK_EDECOMPRESS);
	/* the end marker cut off */
	ck_assert_int_eq(comp_decompress(c, z, zlen - 3, back, LEN), SQK_EDECOMPRESS);
	assert_guard(back, LEN);
	free(in);
	free(z);
	free(back);
	free(wrk);
	compressor_destroy(c);
}
END_TEST

static Suite *compressors_suite(void)
{
	Suite *s = suite_create("compressors");
	TCase *codec = tcase_create("codec");
	TCase *opts = tcase_create("options");

	tcase_set_timeout(codec, 300);
	tcase_add_loop_test(codec, test_codec_round_trip, 0, NCODECS * NSIZES);
	tcase_add_loop_test(codec, test_codec_incompressible, 0, NCODECS * NSIZES);
	tcase_add_loop_test(codec, test_codec_tiny_inputs, 0, NCODECS);
	tcase_add_test(codec, test_zstd_effort);
	tcase_add_loop_test(codec, test_codec_hostile_input, 0, NCODECS);
	tcase_add_loop_test(codec, test_codec_output_too_big, 0, NCODECS);
	tcase_add_test(codec, test_xz_bcj);
	tcase_add_test(codec, test_lz4_hc);
	tcase_add_test(codec, test_xz_dict_and_levels);
	tcase_add_test(codec, test_codec_stream_magic);
	tcase_add_test(codec, test_gzip_strategies);
	tcase_add_test(codec, test_lzo_algorithms);
	tcase_add_test(codec, test_lzo_budget);
	tcase_add_test(codec, test_lzo_foreign_and_exact);
	tcase_add_test(opts, test_factory);
	tcase_add_test(opts, test_internal_helpers);
	tcase_add_test(opts, test_names);
	tcase_add_test(opts, test_lzo_names);
	tcase_add_test(opts, test_comp_supported);
	tcase_add_test(opts, test_options_write);
	tcase_add_test(opts, test_options_write_invalid);
	tcase_add_test(opts, test_options_read);
	tcase_add_test(opts, test_options_read_invalid);
	tcase_add_test(opts, test_options_round_trip);
	tcase_add_test(opts, test_options_mksquashfs_block);
	suite_add_tcase(s, codec);
	suite_add_tcase(s, opts);
	return s;
}

int main(void)
{
	return test_run_suite(compressors_suite());
}
