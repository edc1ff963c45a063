/* SPDX-License-Identifier: BSD-2-Clause */
/* Unit tests of image signatures (common/sign.h): signing and verifying, every signed field
 * tampered, the signature block's codec on good and hostile blocks, the key files (mode, type,
 * encryption, format), sig_keygen, the trust set and sig_check, and the builder's signing. */
#include <check.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/bytes.h"
#include "common/endian.h"
#include "common/integrity.h"
#include "common/sign.h"
#include "mkimage/build.h"
#include "sqk/error.h"
#include "sqk/io.h"
#include "testutil.h"

static const uint8_t root_a[32] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16,
				    17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31,
				    32 };

static EVP_PKEY *new_ed25519(void)
{
	EVP_PKEY *k = EVP_PKEY_Q_keygen(NULL, NULL, "ED25519");

	ck_assert_ptr_nonnull(k);
	return k;
}

/* A signed entry by a new key (freed here) over root_a and image end 8192. */
static void signed_entry(const char *comment, uint64_t time, struct sig_entry *e)
{
	EVP_PKEY *k = new_ed25519();

	ck_assert_int_eq(sig_sign(k, root_a, 8192, time, comment, e), 0);
	EVP_PKEY_free(k);
}

/* The id is the first 8 bytes of SHA-256(pub), in hex; ids parse back. */
START_TEST(test_key_id)
{
	uint8_t pub[32], id[8], d[32], back[8];
	char hex[17], dhex[65];

	test_fill_random(pub, sizeof(pub), 7);
	sig_key_id(pub, id);
	hash_sha256(pub, sizeof(pub), d);
	ck_assert_int_eq(memcmp(id, d, 8), 0);
	sig_key_id_hex(pub, hex);
	integ_hex(d, dhex);
	ck_assert_int_eq(strlen(hex), 16);
	ck_assert_int_eq(strncmp(hex, dhex, 16), 0);
	ck_assert_int_eq(sig_parse_key_id(hex, back), 0);
	ck_assert_int_eq(memcmp(back, id, 8), 0);
	ck_assert_int_eq(sig_parse_key_id("0123456789abcdeg", back), SQK_EINVAL);
	ck_assert_int_eq(sig_parse_key_id("0123456789abcde", back), SQK_EINVAL);
	ck_assert_int_eq(sig_parse_key_id(NULL, back), SQK_EINVAL);
}
END_TEST

/* A signature verifies over what it signed; each signed field changed makes it fail. */
START_TEST(test_sign_verify_tamper)
{
	struct sig_entry e, t;
	uint8_t root_b[32];

	signed_entry("version 1.2.3", 1700000000, &e);
	ck_assert_uint_eq(e.algorithm, SQK_SIG_ED25519);
	ck_assert_uint_eq(e.comment_len, 13);
	ck_assert_str_eq(e.comment, "version 1.2.3");
	ck_assert_int_eq(sig_verify(&e, root_a, 8192), 0);
	memcpy(root_b, root_a, 32);
	root_b[31] ^= 1;
	ck_assert_int_eq(sig_verify(&e, root_b, 8192), SQK_ECORRUPT);  /* root */
	ck_assert_int_eq(sig_verify(&e, root_a, 12288), SQK_ECORRUPT); /* image end */
	t = e;
	t.time++;
	ck_assert_int_eq(sig_verify(&t, root_a, 8192), SQK_ECORRUPT);
	char other[] = "version 1.2.4";
	t = e;
	t.comment = other;
	ck_assert_int_eq(sig_verify(&t, root_a, 8192), SQK_ECORRUPT);
	t.comment_len = 12; /* a shorter comment, same bytes */
	t.comment = e.comment;
	ck_assert_int_eq(sig_verify(&t, root_a, 8192), SQK_ECORRUPT);
	t = e;
	t.pub[5] ^= 0x10;
	ck_assert_int_eq(sig_verify(&t, root_a, 8192), SQK_ECORRUPT);
	t = e;
	t.sig[40] ^= 0x01;
	ck_assert_int_eq(sig_verify(&t, root_a, 8192), SQK_ECORRUPT);
	t = e;
	t.algorithm = 2;
	ck_assert_int_eq(sig_verify(&t, root_a, 8192), SQK_ECORRUPT);
	/* another key's signature under this key's pub */
	struct sig_entry o;
	signed_entry("version 1.2.3", 1700000000, &o);
	memcpy(o.pub, e.pub, 32);
	ck_assert_int_eq(sig_verify(&o, root_a, 8192), SQK_ECORRUPT);
	sig_entry_clear(&o);
	/* no comment */
	sig_entry_clear(&e);
	ck_assert_ptr_null(e.comment);
	signed_entry(NULL, 5, &e);
	ck_assert_uint_eq(e.comment_len, 0);
	ck_assert_ptr_null(e.comment);
	ck_assert_int_eq(sig_verify(&e, root_a, 8192), 0);
	sig_entry_clear(&e);
}
END_TEST

/* A known answer: the key of seed 00 01 .. 1f signs root_a, E 8192, time 1700000000, comment
 * "kat" into the signature Python's cryptography package computes over the message of
 * docs/format.md; the key id is the start of SHA-256 of the public key. */
START_TEST(test_known_answer)
{
	static const char want_pub[] =
		"03a107bff3ce10be1d70dd18e74bc09967e4d6309ba50d5f1ddc8664125531b8";
	static const char want_sig[] =
		"0cd18bf9b8a4b121ab0f1a10b685e949779b5fd80c759b30015a47af7fadbaec"
		"d33a7b0d6f6cdcb9289fd4341ec287a446dde7c8854dabbfda8d9edbd85e2e0a";
	uint8_t seed[32];
	char hex[129], id[17];
	struct sig_entry e;

	for (int i = 0; i < 32; i++)
		seed[i] = (uint8_t)i;
	EVP_PKEY *k = EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, NULL, seed, 32);
	ck_assert_ptr_nonnull(k);
	ck_assert_int_eq(sig_sign(k, root_a, 8192, 1700000000, "kat", &e), 0);
	bytes_hex(e.pub, 32, hex);
	hex[64] = '\0';
	ck_assert_str_eq(hex, want_pub);
	bytes_hex(e.sig, 64, hex);
	hex[128] = '\0';
	ck_assert_str_eq(hex, want_sig);
	sig_key_id_hex(e.pub, id);
	ck_assert_str_eq(id, "56475aa75463474c");
	sig_entry_clear(&e);
	EVP_PKEY_free(k);
}
END_TEST

/* Comments: UTF-8 up to 1024 bytes; control characters, bad UTF-8 and longer ones refused. */
START_TEST(test_comments)
{
	char big[1100];
	EVP_PKEY *k = new_ed25519();
	struct sig_entry e;

	ck_assert_int_eq(sig_comment_check("", 0), 0);
	const char *utf8 = "r\xc3\xa9sum\xc3\xa9 \xe2\x82\xac \xf0\x9f\x94\x91";
	ck_assert_int_eq(sig_comment_check(utf8, strlen(utf8)), 0);
	memset(big, 'a', sizeof(big));
	ck_assert_int_eq(sig_comment_check(big, 1024), 0);
	ck_assert_int_eq(sig_comment_check(big, 1025), SQK_EINVAL);
	ck_assert_int_eq(sig_comment_check("a\nb", 3), SQK_EINVAL);
	ck_assert_int_eq(sig_comment_check("a\tb", 3), SQK_EINVAL);
	ck_assert_int_eq(sig_comment_check("a\x1b[0m", 5), SQK_EINVAL);
	ck_assert_int_eq(sig_comment_check("a\x7f", 2), SQK_EINVAL);
	ck_assert_int_eq(sig_comment_check("a\0b", 3), SQK_EINVAL);
	ck_assert_int_eq(sig_comment_check("\xc2\x9b", 2), SQK_EINVAL);     /* C1 CSI */
	ck_assert_int_eq(sig_comment_check("\xc0\xaf", 2), SQK_EINVAL);     /* overlong */
	ck_assert_int_eq(sig_comment_check("\xed\xa0\x80", 3), SQK_EINVAL); /* surrogate */
	ck_assert_int_eq(sig_comment_check("\xf4\x90\x80\x80", 4), SQK_EINVAL); /* > U+10FFFF */
	ck_assert_int_eq(sig_comment_check("\xe2\x82", 2), SQK_EINVAL);     /* cut short */
	ck_assert_int_eq(sig_comment_check("\xff", 1), SQK_EINVAL);
	ck_assert_int_eq(sig_sign(k, root_a, 4096, 1, "two\nlines", &e), SQK_EINVAL);
	big[1025] = '\0';
	ck_assert_int_eq(sig_sign(k, root_a, 4096, 1, big, &e), SQK_EINVAL);
	big[1024] = '\0';
	ck_assert_int_eq(sig_sign(k, root_a, 4096, 1, big, &e), 0);
	ck_assert_uint_eq(e.comment_len, 1024);
	sig_entry_clear(&e);
	EVP_PKEY_free(k);
}
END_TEST

/* A block of n entries by new keys, comments of clen bytes ('c'), image end 1 MiB. */
static void make_block(struct sig_block *b, size_t n, size_t clen)
{
	char *c = malloc(clen + 1);

	ck_assert_ptr_nonnull(c);
	memset(c, 'c', clen);
	c[clen] = '\0';
	memset(b, 0, sizeof(*b));
	b->image_end = 1 << 20;
	for (size_t i = 0; i < n; i++) {
		struct sig_entry e;

		signed_entry(clen ? c : NULL, 1000 + i, &e);
		ck_assert_int_eq(sig_block_set(b, &e), 0);
		sig_entry_clear(&e);
	}
	ck_assert_uint_eq(b->n, n);
	free(c);
}

static void assert_same_block(const struct sig_block *a, const struct sig_block *b)
{
	ck_assert_uint_eq(a->n, b->n);
	ck_assert_uint_eq(a->image_end, b->image_end);
	for (size_t i = 0; i < a->n; i++) {
		ck_assert_uint_eq(a->e[i].algorithm, b->e[i].algorithm);
		ck_assert_int_eq(memcmp(a->e[i].pub, b->e[i].pub, 32), 0);
		ck_assert_uint_eq(a->e[i].time, b->e[i].time);
		ck_assert_uint_eq(a->e[i].comment_len, b->e[i].comment_len);
		ck_assert_int_eq(memcmp(a->e[i].sig, b->e[i].sig, 64), 0);
		if (a->e[i].comment_len)
			ck_assert_int_eq(memcmp(a->e[i].comment, b->e[i].comment,
						a->e[i].comment_len), 0);
	}
}

/* Encode then decode gives the same block, for 1, 2 and 64 entries (the longest block), at the
 * end of a file of any 4 KiB-multiple size; the bytes are the layout sign.h gives. */
START_TEST(test_block_round_trip)
{
	static const struct {
		size_t n, clen, len;
	} cases[] = { { 1, 0, 4096 }, { 1, 5, 4096 }, { 2, 13, 4096 }, { 64, 1024, 73728 },
		      { 34, 0, 8192 } };

	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		struct sig_block b, d;
		uint8_t *buf;
		size_t len;

		make_block(&b, cases[c].n, cases[c].clen);
		ck_assert_int_eq(sig_block_encode(&b, &buf, &len), 0);
		ck_assert_uint_eq(len, cases[c].len);
		ck_assert_uint_eq(sig_block_len(&b), len);
		ck_assert_int_eq(memcmp(buf + len - 64, "SQKSIGS1", 8), 0);
		ck_assert_int_eq(memcmp(buf + len - 8, "SQKSIGS1", 8), 0);
		ck_assert_uint_eq(get_le32(buf + len - 56), 1);
		ck_assert_uint_eq(get_le32(buf + len - 52), cases[c].n);
		ck_assert_uint_eq(get_le64(buf + len - 48), len);
		ck_assert_uint_eq(get_le64(buf + len - 40), 1 << 20);
		ck_assert_uint_eq(get_le32(buf), (120 + cases[c].clen + 7) / 8 * 8);
		ck_assert_uint_eq(get_le32(buf + 4), 1);
		ck_assert_int_eq(memcmp(buf + 8, b.e[0].pub, 32), 0);
		ck_assert_uint_eq(get_le64(buf + 40), 1000);
		ck_assert_uint_eq(get_le32(buf + 48), cases[c].clen);
		ck_assert_int_eq(memcmp(buf + 56, b.e[0].sig, 64), 0);
		ck_assert_int_eq(sig_block_decode(buf, len, 1 << 20, &d), 0);
		assert_same_block(&b, &d);
		for (size_t i = 0; i < d.n; i++)
			ck_assert_int_eq(sig_verify(&d.e[i], root_a, 8192), 0);
		sig_block_free(&d);
		ck_assert_int_eq(sig_block_decode(buf, len, (1 << 20) + 65536, &d), 0);
		sig_block_free(&d);
		free(buf);
		sig_block_free(&b);
	}
}
END_TEST

/* sig_block_set replaces the entry of the same key and appends others, up to 64;
 * sig_block_remove takes one out by key id. */
START_TEST(test_block_set_remove)
{
	struct sig_block b = { 0 };
	struct sig_entry e, f;
	EVP_PKEY *k = new_ed25519();
	uint8_t id[8];

	ck_assert_int_eq(sig_sign(k, root_a, 8192, 1, "first", &e), 0);
	ck_assert_int_eq(sig_block_set(&b, &e), 0);
	sig_entry_clear(&e);
	ck_assert_int_eq(sig_sign(k, root_a, 8192, 2, "second", &e), 0);
	ck_assert_int_eq(sig_block_set(&b, &e), 0);
	ck_assert_uint_eq(b.n, 1);
	ck_assert_uint_eq(b.e[0].time, 2);
	ck_assert_str_eq(b.e[0].comment, "second");
	ck_assert_ptr_ne(b.e[0].comment, e.comment); /* a copy */
	signed_entry("other", 3, &f);
	ck_assert_int_eq(sig_block_set(&b, &f), 0);
	ck_assert_uint_eq(b.n, 2);
	sig_key_id(e.pub, id);
	ck_assert(sig_block_remove(&b, id));
	ck_assert(!sig_block_remove(&b, id));
	ck_assert_uint_eq(b.n, 1);
	ck_assert_int_eq(memcmp(b.e[0].pub, f.pub, 32), 0);
	sig_entry_clear(&e);
	sig_entry_clear(&f);
	sig_block_free(&b);
	ck_assert_ptr_null(b.e);
	make_block(&b, 64, 0);
	signed_entry(NULL, 9, &e);
	ck_assert_int_eq(sig_block_set(&b, &e), SQK_ETOOBIG);
	ck_assert_uint_eq(b.n, 64);
	sig_entry_clear(&e);
	sig_block_free(&b);
	EVP_PKEY_free(k);
}
END_TEST

/* The encoder refuses what the decoder would: no entry, 65, a bad image end, a key twice, a
 * bad comment. */
START_TEST(test_encode_refuses)
{
	struct sig_block b;
	uint8_t *buf;
	size_t len;

	memset(&b, 0, sizeof(b));
	b.image_end = 8192;
	ck_assert_int_eq(sig_block_encode(&b, &buf, &len), SQK_EINVAL);
	make_block(&b, 2, 3);
	b.image_end = 4097;
	ck_assert_int_eq(sig_block_encode(&b, &buf, &len), SQK_EINVAL);
	b.image_end = 0;
	ck_assert_int_eq(sig_block_encode(&b, &buf, &len), SQK_EINVAL);
	b.image_end = 8192;
	memcpy(b.e[1].pub, b.e[0].pub, 32);
	ck_assert_int_eq(sig_block_encode(&b, &buf, &len), SQK_EINVAL);
	b.e[1].pub[0] ^= 1;
	b.e[1].comment[1] = '\n';
	ck_assert_int_eq(sig_block_encode(&b, &buf, &len), SQK_EINVAL);
	b.e[1].comment[1] = 'x';
	ck_assert_int_eq(sig_block_encode(&b, &buf, &len), 0);
	free(buf);
	sig_block_free(&b);
	make_block(&b, 64, 0);
	struct sig_entry *more = realloc(b.e, 65 * sizeof(*b.e));
	ck_assert_ptr_nonnull(more);
	b.e = more;
	signed_entry(NULL, 1, &b.e[64]);
	b.n = 65;
	ck_assert_int_eq(sig_block_encode(&b, &buf, &len), SQK_EINVAL);
	sig_block_free(&b);
}
END_TEST

/* A good two-entry block (comments of 5 and 13 bytes: entries of 128 and 136 bytes) at file
 * offset 1 MiB, in a fresh buffer (caller frees) of *len bytes. */
static uint8_t *good_block(size_t *len)
{
	struct sig_block b;
	uint8_t *buf;

	make_block(&b, 2, 5);
	free(b.e[1].comment);
	b.e[1].comment = strdup("ccccccccccccc");
	b.e[1].comment_len = 13;
	ck_assert_int_eq(sig_block_encode(&b, &buf, len), 0);
	sig_block_free(&b);
	return buf;
}

/* Decodes a copy of blk changed by fix at file offset 1 MiB: the result. */
static int decode_changed(const uint8_t *blk, size_t len, void (*fix)(uint8_t *, size_t))
{
	uint8_t *c = malloc(len);
	struct sig_block d;
	int r;

	memcpy(c, blk, len);
	fix(c, len);
	r = sig_block_decode(c, len, 1 << 20, &d);
	sig_block_free(&d);
	free(c);
	return r;
}

#define FOOT(b, len) ((b) + (len) - 64)
static void f_magic1(uint8_t *b, size_t l) { FOOT(b, l)[0] ^= 1; }
static void f_magic2(uint8_t *b, size_t l) { FOOT(b, l)[63] ^= 1; }
static void f_both(uint8_t *b, size_t l) { FOOT(b, l)[0] ^= 1; FOOT(b, l)[63] ^= 1; }
static void f_version(uint8_t *b, size_t l) { put_le32(FOOT(b, l) + 8, 2); }
static void f_count0(uint8_t *b, size_t l) { put_le32(FOOT(b, l) + 12, 0); }
static void f_count1(uint8_t *b, size_t l) { put_le32(FOOT(b, l) + 12, 1); }
static void f_count3(uint8_t *b, size_t l) { put_le32(FOOT(b, l) + 12, 3); }
static void f_count65(uint8_t *b, size_t l) { put_le32(FOOT(b, l) + 12, 65); }
static void f_len_odd(uint8_t *b, size_t l) { put_le64(FOOT(b, l) + 16, 4095); }
static void f_len_big(uint8_t *b, size_t l) { put_le64(FOOT(b, l) + 16, 8192); }
static void f_len_huge(uint8_t *b, size_t l) { put_le64(FOOT(b, l) + 16, UINT64_MAX - 4095); }
static void f_end_odd(uint8_t *b, size_t l) { put_le64(FOOT(b, l) + 24, 8193); }
static void f_end_zero(uint8_t *b, size_t l) { put_le64(FOOT(b, l) + 24, 0); }
static void f_end_past(uint8_t *b, size_t l) { put_le64(FOOT(b, l) + 24, (1 << 20) + 4096); }
static void f_end_max(uint8_t *b, size_t l) { put_le64(FOOT(b, l) + 24, UINT64_MAX - 4095); }
static void f_zero(uint8_t *b, size_t l) { FOOT(b, l)[40] = 1; }
static void f_elen_short(uint8_t *b, size_t l) { put_le32(b, 120); }
static void f_elen_long(uint8_t *b, size_t l) { put_le32(b, 136); }
static void f_elen_odd(uint8_t *b, size_t l) { put_le32(b, 129); }
static void f_elen_huge(uint8_t *b, size_t l) { put_le32(b, UINT32_MAX - 7); }
static void f_elen_overlap(uint8_t *b, size_t l) { put_le32(b + 128, 4096 - 128); }
static void f_clen_big(uint8_t *b, size_t l) { put_le32(b + 48, 1025); }
static void f_clen_past(uint8_t *b, size_t l) { put_le32(b + 48, 9); }
static void f_alg(uint8_t *b, size_t l) { put_le32(b + 4, 2); }
static void f_ezero(uint8_t *b, size_t l) { b[53] = 1; }
static void f_epad(uint8_t *b, size_t l) { b[126] = 'x'; }
static void f_gap(uint8_t *b, size_t l) { b[128 + 136 + 10] = 1; }
static void f_gap_end(uint8_t *b, size_t l) { FOOT(b, l)[-1] = 1; }
static void f_ctrl(uint8_t *b, size_t l) { b[122] = '\n'; }
static void f_esc(uint8_t *b, size_t l) { b[120] = 0x1b; }
static void f_nul(uint8_t *b, size_t l) { b[121] = 0; }
static void f_utf8(uint8_t *b, size_t l) { b[121] = 0xc3; }
static void f_dupkey(uint8_t *b, size_t l) { memcpy(b + 128 + 8, b + 8, 32); }

/* Hostile blocks: each footer field wrong, entries too short, too long, overlapping, of another
 * algorithm, non-zero bytes where zeros belong, control characters and bad UTF-8 in a comment,
 * a key twice: SQK_ECORRUPT, never a crash (the suite runs under ASan in make check-san). */
START_TEST(test_hostile_blocks)
{
	static const struct {
		const char *what;
		void (*fix)(uint8_t *, size_t);
		int want;
	} cases[] = {
		{ "first magic", f_magic1, SQK_ECORRUPT },
		{ "last magic", f_magic2, SQK_ECORRUPT },
		{ "both magics", f_both, SQK_ENOENT },
		{ "version", f_version, SQK_ECORRUPT },
		{ "count 0", f_count0, SQK_ECORRUPT },
		{ "count 1", f_count1, SQK_ECORRUPT },
		{ "count 3", f_count3, SQK_ECORRUPT },
		{ "count 65", f_count65, SQK_ECORRUPT },
		{ "len 4095", f_len_odd, SQK_ECORRUPT },
		{ "len 8192", f_len_big, SQK_ECORRUPT },
		{ "len huge", f_len_huge, SQK_ECORRUPT },
		{ "end odd", f_end_odd, SQK_ECORRUPT },
		{ "end 0", f_end_zero, SQK_ECORRUPT },
		{ "end past S", f_end_past, SQK_ECORRUPT },
		{ "end max", f_end_max, SQK_ECORRUPT },
		{ "footer zero", f_zero, SQK_ECORRUPT },
		{ "entry short", f_elen_short, SQK_ECORRUPT },
		{ "entry long", f_elen_long, SQK_ECORRUPT },
		{ "entry odd", f_elen_odd, SQK_ECORRUPT },
		{ "entry huge", f_elen_huge, SQK_ECORRUPT },
		{ "entry into the footer", f_elen_overlap, SQK_ECORRUPT },
		{ "comment 1025", f_clen_big, SQK_ECORRUPT },
		{ "comment past its entry", f_clen_past, SQK_ECORRUPT },
		{ "algorithm", f_alg, SQK_ECORRUPT },
		{ "entry zero", f_ezero, SQK_ECORRUPT },
		{ "entry padding", f_epad, SQK_ECORRUPT },
		{ "gap", f_gap, SQK_ECORRUPT },
		{ "gap end", f_gap_end, SQK_ECORRUPT },
		{ "newline", f_ctrl, SQK_ECORRUPT },
		{ "escape", f_esc, SQK_ECORRUPT },
		{ "NUL", f_nul, SQK_ECORRUPT },
		{ "bad UTF-8", f_utf8, SQK_ECORRUPT },
		{ "key twice", f_dupkey, SQK_ECORRUPT },
	};
	size_t len;
	uint8_t *blk = good_block(&len);
	struct sig_block d;

	ck_assert_uint_eq(len, 4096);
	ck_assert_int_eq(sig_block_decode(blk, len, 1 << 20, &d), 0);
	sig_block_free(&d);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		ck_assert_msg(decode_changed(blk, len, cases[i].fix) == cases[i].want,
			      "%s: %d", cases[i].what, decode_changed(blk, len, cases[i].fix));
	/* the footer alone: file sizes and offsets that do not fit */
	uint64_t s, l, e;
	uint32_t n;
	const uint8_t *f = blk + len - 64;
	ck_assert_int_eq(sig_block_footer(f, (1 << 20) + 4096, &s, &l, &e, &n), 0);
	ck_assert_uint_eq(s, 1 << 20);
	ck_assert_uint_eq(l, 4096);
	ck_assert_uint_eq(e, 1 << 20);
	ck_assert_uint_eq(n, 2);
	ck_assert_int_eq(sig_block_footer(f, (1 << 20) + 100, &s, &l, &e, &n), SQK_ECORRUPT);
	ck_assert_int_eq(sig_block_footer(f, 1 << 20, &s, &l, &e, &n), SQK_ECORRUPT); /* E > S */
	ck_assert_int_eq(sig_block_footer(f, 4096, &s, &l, &e, &n), SQK_ECORRUPT);
	ck_assert_int_eq(sig_block_footer(f, 2048, &s, &l, &e, &n), SQK_ECORRUPT);
	/* decoded at another offset than the footer implies, or truncated */
	ck_assert_int_eq(sig_block_decode(blk, len, 4096, &d), SQK_ECORRUPT);
	sig_block_free(&d);
	ck_assert_int_eq(sig_block_decode(blk + 64, len - 64, 1 << 20, &d), SQK_ECORRUPT);
	sig_block_free(&d);
	ck_assert_int_eq(sig_block_decode(blk, 10, 1 << 20, &d), SQK_ECORRUPT);
	sig_block_free(&d);
	ck_assert_int_eq(sig_block_decode(blk, len, UINT64_MAX - 100, &d), SQK_ECORRUPT);
	sig_block_free(&d);
	free(blk);
}
END_TEST

/* Every single byte of a block changed: the decoder answers (0, or an error) without a crash,
 * and a structural byte changed is never accepted. */
START_TEST(test_every_byte)
{
	size_t len;
	uint8_t *blk = good_block(&len), *c = malloc(len);
	struct sig_block d;

	for (size_t i = 0; i < len; i++) {
		memcpy(c, blk, len);
		c[i] ^= (uint8_t)(0x41 + i % 7);
		int r = sig_block_decode(c, len, 1 << 20, &d);
		sig_block_free(&d);
		/* the public keys, times and signatures (not checked here) decode; a comment
		 * byte may still be text; any other byte is structure */
		size_t o = i < 128 ? i : i - 128, clen = i < 128 ? 5 : 13;
		bool entry = i < 128 + 136;
		bool data = entry && ((o >= 8 && o < 48) || (o >= 56 && o < 120));
		bool text = entry && o >= 120 && o < 120 + clen;

		if (data)
			ck_assert_msg(r == 0, "byte %zu: %d", i, r);
		else if (text)
			ck_assert_msg(r == 0 || r == SQK_ECORRUPT, "byte %zu: %d", i, r);
		else
			ck_assert_msg(r == SQK_ECORRUPT || r == SQK_ENOENT, "byte %zu: %d", i, r);
	}
	free(c);
	free(blk);
}
END_TEST

/* sig_block_read finds the block at the end of a file (memory), says SQK_ENOENT without one. */
START_TEST(test_block_read)
{
	size_t len;
	uint8_t *blk = good_block(&len);
	uint8_t *file = calloc(1, (1 << 20) + len);
	struct sqk_io *io;
	struct sig_block d;
	uint64_t s = 0;

	memcpy(file + (1 << 20), blk, len);
	ck_assert_int_eq(sqk_io_mem_create(file, (1 << 20) + len, &io), 0);
	ck_assert_int_eq(sig_block_read(io, (1 << 20) + len, &d, &s), 0);
	ck_assert_uint_eq(s, 1 << 20);
	ck_assert_uint_eq(d.n, 2);
	ck_assert_uint_eq(d.image_end, 1 << 20);
	sig_block_free(&d);
	ck_assert_int_eq(sig_block_read(io, 1 << 20, &d, &s), SQK_ENOENT);
	ck_assert_int_eq(sig_block_read(io, 10, &d, &s), SQK_ENOENT);
	sqk_io_destroy(io);
	file[(1 << 20) + 1000] = 7; /* in the gap */
	ck_assert_int_eq(sqk_io_mem_create(file, (1 << 20) + len, &io), 0);
	ck_assert_int_eq(sig_block_read(io, (1 << 20) + len, &d, &s), SQK_ECORRUPT);
	sig_block_free(&d);
	sqk_io_destroy(io);
	free(file);
	free(blk);
}
END_TEST

/* ---- key files ---- */

static char kdir[64];

static void key_dir_setup(void)
{
	snprintf(kdir, sizeof(kdir), "/tmp/sqk-test-sign.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(kdir));
}

static void key_dir_teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", kdir);
	ck_assert_int_eq(system(cmd), 0);
}

enum pem_kind { PEM_PKCS8, PEM_PUB, PEM_ENCRYPTED, PEM_TRADITIONAL };

/* Writes key to kdir/name as kind, with mode; the path into path (256 bytes). */
static void write_key(const char *name, EVP_PKEY *key, enum pem_kind kind, mode_t mode,
		      char *path)
{
	BIO *bio;

	snprintf(path, 256, "%s/%s", kdir, name);
	bio = BIO_new_file(path, "w");
	ck_assert_ptr_nonnull(bio);
	switch (kind) {
	case PEM_PKCS8: /* what openssl genpkey writes */
		ck_assert(PEM_write_bio_PrivateKey(bio, key, NULL, NULL, 0, NULL, NULL));
		break;
	case PEM_PUB:
		ck_assert(PEM_write_bio_PUBKEY(bio, key));
		break;
	case PEM_ENCRYPTED:
		ck_assert(PEM_write_bio_PKCS8PrivateKey(bio, key, EVP_aes_256_cbc(), NULL, 0, NULL,
							"secret"));
		break;
	case PEM_TRADITIONAL:
		ck_assert(PEM_write_bio_PrivateKey_traditional(bio, key, NULL, NULL, 0, NULL,
							       NULL));
		break;
	}
	BIO_free(bio);
	ck_assert_int_eq(chmod(path, mode), 0);
}

static void write_text(const char *name, const char *text, mode_t mode, char *path)
{
	snprintf(path, 256, "%s/%s", kdir, name);
	FILE *f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	fclose(f);
	ck_assert_int_eq(chmod(path, mode), 0);
}

#define ck_assert_why(cond, why, needle)                                                     \
	do {                                                                                  \
		ck_assert_msg((cond) && strstr(why, needle), "why '%s' lacks '%s'", why,       \
			      needle);                                                        \
	} while (0)

/* A PKCS#8 Ed25519 key of mode 0600 (as openssl genpkey writes it) loads; its public key is the
 * one the .pub PEM gives. */
START_TEST(test_load_ed25519)
{
	EVP_PKEY *k = new_ed25519(), *got;
	char p[256], pp[256], why[256] = "";
	uint8_t a[32], b[32];

	write_key("k", k, PEM_PKCS8, 0600, p);
	write_key("k.pub", k, PEM_PUB, 0644, pp);
	ck_assert_msg(sig_load_private(p, &got, why, sizeof(why)) == 0, "%s", why);
	ck_assert_int_eq(sig_public_of(got, a), 0);
	ck_assert_msg(sig_load_public(pp, b, why, sizeof(why)) == 0, "%s", why);
	ck_assert_int_eq(memcmp(a, b, 32), 0);
	ck_assert_int_eq(sig_public_of(k, b), 0);
	ck_assert_int_eq(memcmp(a, b, 32), 0);
	EVP_PKEY_free(got);
	/* mode 0400 is fine too */
	ck_assert_int_eq(chmod(p, 0400), 0);
	ck_assert_int_eq(sig_load_private(p, &got, why, sizeof(why)), 0);
	EVP_PKEY_free(got);
	EVP_PKEY_free(k);
}
END_TEST

/* Private keys refused, each with its reason: modes open to group or others, a missing file,
 * a folder, RSA and EC keys (named), an encrypted key, a public key, a certificate-less PEM of
 * another label, text that is not PEM, an OpenSSH public key. */
START_TEST(test_private_refused)
{
	EVP_PKEY *ed = new_ed25519(), *got = (EVP_PKEY *)1;
	EVP_PKEY *rsa = EVP_PKEY_Q_keygen(NULL, NULL, "RSA", (size_t)2048);
	EVP_PKEY *ec = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
	char p[256], why[256];
	static const mode_t bad_modes[] = { 0644, 0640, 0604, 0620, 0602, 0660, 0666 };

	ck_assert_ptr_nonnull(rsa);
	ck_assert_ptr_nonnull(ec);
	for (size_t i = 0; i < sizeof(bad_modes) / sizeof(bad_modes[0]); i++) {
		char m[16];
		write_key("open", ed, PEM_PKCS8, bad_modes[i], p);
		snprintf(m, sizeof(m), "mode %04o", (unsigned)bad_modes[i]);
		ck_assert_why(sig_load_private(p, &got, why, sizeof(why)) == SQK_EINVAL, why, m);
		ck_assert_ptr_null(got);
		ck_assert_why(1, why, "chmod 600");
	}
	snprintf(p, sizeof(p), "%s/none", kdir);
	ck_assert_why(sig_load_private(p, &got, why, sizeof(why)) == SQK_ENOENT, why,
		      "No such file");
	ck_assert_why(sig_load_private(kdir, &got, why, sizeof(why)) == SQK_EINVAL, why,
		      "not a regular file");
	write_key("rsa", rsa, PEM_PKCS8, 0600, p);
	ck_assert_why(sig_load_private(p, &got, why, sizeof(why)) == SQK_EINVAL, why,
		      "RSA key, not Ed25519");
	write_key("rsa.trad", rsa, PEM_TRADITIONAL, 0600, p);
	ck_assert_why(sig_load_private(p, &got, why, sizeof(why)) == SQK_EINVAL, why,
		      "RSA key, not Ed25519");
	write_key("ec", ec, PEM_PKCS8, 0600, p);
	ck_assert_why(sig_load_private(p, &got, why, sizeof(why)) == SQK_EINVAL, why,
		      "EC key, not Ed25519");
	write_key("enc", ed, PEM_ENCRYPTED, 0600, p);
	ck_assert_why(sig_load_private(p, &got, why, sizeof(why)) == SQK_EINVAL, why,
		      "encrypted");
	write_key("rsa.enc", rsa, PEM_ENCRYPTED, 0600, p);
	ck_assert_why(sig_load_private(p, &got, why, sizeof(why)) == SQK_EINVAL, why,
		      "encrypted");
	write_key("pub", ed, PEM_PUB, 0644, p); /* named for what it is, not its mode */
	ck_assert_why(sig_load_private(p, &got, why, sizeof(why)) == SQK_EINVAL, why,
		      "a public key, not a private key");
	write_text("text", "hello\n", 0600, p);
	ck_assert_why(sig_load_private(p, &got, why, sizeof(why)) == SQK_EINVAL, why,
		      "not a PEM key file");
	write_text("empty", "", 0600, p);
	ck_assert_why(sig_load_private(p, &got, why, sizeof(why)) == SQK_EINVAL, why,
		      "not a PEM key file");
	write_text("ssh", "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIB x@y\n", 0600, p);
	ck_assert_why(sig_load_private(p, &got, why, sizeof(why)) == SQK_EINVAL, why, "OpenSSH");
	write_text("cut", "-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIA==\n"
			  "-----END PRIVATE KEY-----\n", 0600, p);
	ck_assert_why(sig_load_private(p, &got, why, sizeof(why)) == SQK_EINVAL, why,
		      "damaged");
	ck_assert_ptr_null(got);
	EVP_PKEY_free(ed);
	EVP_PKEY_free(rsa);
	EVP_PKEY_free(ec);
}
END_TEST

/* Public keys refused: RSA and EC (named), a private key given by mistake (said so), text. */
START_TEST(test_public_refused)
{
	EVP_PKEY *ed = new_ed25519();
	EVP_PKEY *rsa = EVP_PKEY_Q_keygen(NULL, NULL, "RSA", (size_t)2048);
	EVP_PKEY *ec = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
	EVP_PKEY *x = EVP_PKEY_Q_keygen(NULL, NULL, "X25519");
	char p[256], why[256];
	uint8_t pub[32];

	write_key("rsa.pub", rsa, PEM_PUB, 0644, p);
	ck_assert_why(sig_load_public(p, pub, why, sizeof(why)) == SQK_EINVAL, why,
		      "RSA key, not Ed25519");
	write_key("ec.pub", ec, PEM_PUB, 0644, p);
	ck_assert_why(sig_load_public(p, pub, why, sizeof(why)) == SQK_EINVAL, why,
		      "EC key, not Ed25519");
	write_key("x.pub", x, PEM_PUB, 0644, p);
	ck_assert_why(sig_load_public(p, pub, why, sizeof(why)) == SQK_EINVAL, why,
		      "X25519 key, not Ed25519");
	write_key("priv", ed, PEM_PKCS8, 0600, p);
	ck_assert_why(sig_load_public(p, pub, why, sizeof(why)) == SQK_EINVAL, why,
		      "a private key, not a public key");
	write_text("text", "not a key\n", 0644, p);
	ck_assert_why(sig_load_public(p, pub, why, sizeof(why)) == SQK_EINVAL, why,
		      "not a PEM key file");
	/* a public key may be readable by all */
	write_key("ed.pub", ed, PEM_PUB, 0644, p);
	ck_assert_int_eq(sig_load_public(p, pub, why, sizeof(why)), 0);
	EVP_PKEY_free(ed);
	EVP_PKEY_free(rsa);
	EVP_PKEY_free(ec);
	EVP_PKEY_free(x);
}
END_TEST

/* sig_keygen: KEY (0600, PKCS#8) and KEY.pub (0644, SPKI) of the same key, which sign and
 * verify; an existing KEY or KEY.pub refused without force and left alone, replaced with it. */
START_TEST(test_keygen)
{
	char p[256], pp[256], why[256] = "";
	uint8_t pub[32], pub2[32], back[32];
	EVP_PKEY *k;
	struct stat st;
	struct sig_entry e;

	snprintf(p, sizeof(p), "%s/new", kdir);
	snprintf(pp, sizeof(pp), "%s/new.pub", kdir);
	ck_assert_msg(sig_keygen(p, false, pub, why, sizeof(why)) == 0, "%s", why);
	ck_assert_int_eq(stat(p, &st), 0);
	ck_assert_uint_eq(st.st_mode & 07777, 0600);
	ck_assert_int_eq(stat(pp, &st), 0);
	ck_assert_uint_eq(st.st_mode & 07777, 0644);
	ck_assert_int_eq(sig_load_private(p, &k, why, sizeof(why)), 0);
	ck_assert_int_eq(sig_load_public(pp, back, why, sizeof(why)), 0);
	ck_assert_int_eq(memcmp(pub, back, 32), 0);
	ck_assert_int_eq(sig_sign(k, root_a, 4096, 1, NULL, &e), 0);
	ck_assert_int_eq(memcmp(e.pub, pub, 32), 0);
	ck_assert_int_eq(sig_verify(&e, root_a, 4096), 0);
	sig_entry_clear(&e);
	EVP_PKEY_free(k);
	/* no overwrite: both files stay as they were */
	ck_assert_why(sig_keygen(p, false, pub2, why, sizeof(why)) == SQK_EINVAL, why,
		      "exists: not replaced");
	ck_assert_int_eq(sig_load_public(pp, back, why, sizeof(why)), 0);
	ck_assert_int_eq(memcmp(pub, back, 32), 0);
	ck_assert_int_eq(unlink(p), 0);
	ck_assert_why(sig_keygen(p, false, pub2, why, sizeof(why)) == SQK_EINVAL, why,
		      "new.pub exists");
	ck_assert_int_eq(access(p, F_OK), -1);
	ck_assert_int_eq(sig_keygen(p, true, pub2, why, sizeof(why)), 0);
	ck_assert_int_ne(memcmp(pub, pub2, 32), 0);
	ck_assert_int_eq(sig_load_public(pp, back, why, sizeof(why)), 0);
	ck_assert_int_eq(memcmp(pub2, back, 32), 0);
	/* a folder that does not exist: nothing made */
	snprintf(p, sizeof(p), "%s/no/such", kdir);
	ck_assert_int_ne(sig_keygen(p, false, pub, why, sizeof(why)), 0);
	ck_assert_why(1, why, "no/such");
	/* only the two files are left in the folder (no temporary) */
	char cmd[200];
	snprintf(cmd, sizeof(cmd), "test $(ls -A '%s' | wc -l) = 2", kdir);
	ck_assert_int_eq(system(cmd), 0);
}
END_TEST

/* The trust set: files, a folder of *.pub files (in name order; other names skipped), an
 * empty folder and a bad key in a folder refused naming them; sig_check's verdicts. */
START_TEST(test_trust_and_check)
{
	EVP_PKEY *k1 = new_ed25519(), *k2 = new_ed25519(), *k3 = new_ed25519();
	char p[256], why[512], sub[256];
	struct sig_trust t = { 0 };
	uint8_t pub1[32], pub2[32], pub3[32];

	sig_public_of(k1, pub1);
	sig_public_of(k2, pub2);
	sig_public_of(k3, pub3);
	snprintf(sub, sizeof(sub), "%s/trust", kdir);
	ck_assert_int_eq(mkdir(sub, 0755), 0);
	ck_assert_why(sig_trust_add_dir(&t, sub, why, sizeof(why)) == SQK_ENOENT, why,
		      "no public key");
	ck_assert_why(1, why, sub);
	write_key("trust/b.pub", k2, PEM_PUB, 0644, p);
	write_key("trust/a.pub", k1, PEM_PUB, 0644, p);
	write_key("trust/k3", k3, PEM_PUB, 0644, p); /* not *.pub: not read */
	write_text("trust/notes.txt", "hello", 0644, p);
	ck_assert_msg(sig_trust_add_dir(&t, sub, why, sizeof(why)) == 0, "%s", why);
	ck_assert_uint_eq(t.n, 2);
	ck_assert_int_eq(memcmp(t.keys[0], pub1, 32), 0); /* a.pub first */
	ck_assert(sig_trust_has(&t, pub2));
	ck_assert(!sig_trust_has(&t, pub3));
	ck_assert(!sig_trust_has(NULL, pub1));
	ck_assert_int_eq(sig_trust_add(&t, pub1), 0); /* once */
	ck_assert_uint_eq(t.n, 2);
	write_text("trust/c.pub", "garbage", 0644, p);
	ck_assert_why(sig_trust_add_dir(&t, sub, why, sizeof(why)) == SQK_EINVAL, why, p);
	snprintf(p, sizeof(p), "%s/none", kdir);
	ck_assert_why(sig_trust_add_dir(&t, p, why, sizeof(why)) == SQK_ENOENT, why, p);

	/* a block signed by k1 (old), k3 (untrusted) and k2 (newest, over another root) */
	struct sig_block b = { 0 };
	struct sig_entry e;
	uint8_t root_b[32];
	memcpy(root_b, root_a, 32);
	root_b[0] ^= 1;
	ck_assert_int_eq(sig_sign(k1, root_a, 8192, 100, "old", &e), 0);
	sig_block_set(&b, &e);
	sig_entry_clear(&e);
	ck_assert_int_eq(sig_sign(k3, root_a, 8192, 300, NULL, &e), 0);
	sig_block_set(&b, &e);
	sig_entry_clear(&e);
	ck_assert_int_eq(sig_sign(k2, root_b, 8192, 200, NULL, &e), 0);
	sig_block_set(&b, &e);
	sig_entry_clear(&e);
	struct sig_status st[3];
	struct sig_summary sum;
	ck_assert_int_eq(sig_check(&b, &t, root_a, 8192, st, &sum), 0);
	ck_assert(st[0].trusted && st[0].valid);
	ck_assert(!st[1].trusted && st[1].valid);
	ck_assert(st[2].trusted && !st[2].valid);
	ck_assert(sum.ok);
	ck_assert_uint_eq(sum.valid, 2);
	ck_assert_uint_eq(sum.trusted_valid, 1);
	ck_assert_uint_eq(sum.newest, 100);
	ck_assert_uint_eq(sum.newest_index, 0);
	/* over root_b only k2's is valid: the newest trusted one */
	ck_assert_int_eq(sig_check(&b, &t, root_b, 8192, st, &sum), 0);
	ck_assert(sum.ok && sum.newest == 200 && sum.newest_index == 2 && sum.valid == 1);
	/* another image end: nothing valid */
	ck_assert_int_eq(sig_check(&b, &t, root_a, 4096, NULL, &sum), 0);
	ck_assert(!sum.ok && sum.valid == 0);
	/* no trust set: valid but nothing trusted */
	ck_assert_int_eq(sig_check(&b, NULL, root_a, 8192, st, &sum), 0);
	ck_assert(!sum.ok && sum.valid == 2 && !st[0].trusted);
	sig_block_free(&b);
	sig_trust_free(&t);
	ck_assert_ptr_null(t.keys);
	EVP_PKEY_free(k1);
	EVP_PKEY_free(k2);
	EVP_PKEY_free(k3);
}
END_TEST

/* Builds tree into memory with the keys given (n of them) and opts' other fields. */
static struct sqk_io *build_signed(const char *tree, EVP_PKEY *const *keys, size_t n,
				   int64_t sign_time, bool no_checksums, int *err,
				   struct sqk_build_result *r)
{
	char *sources[1] = { (char *)tree };
	struct sqk_build_opts o;
	struct sqk_build_source s;
	struct sqk_io *out;

	sqk_build_opts_init(&o);
	ck_assert_int_eq(o.sign_time, -1);
	o.quiet = true;
	o.block_size = 4096;
	o.clamp_time = 1700000000;
	o.no_checksums = no_checksums;
	o.sign_keys = keys;
	o.nsign_keys = n;
	o.sign_comment = n ? "release 7" : NULL;
	o.sign_time = sign_time;
	sqk_build_source_init(&s, SQK_BUILD_DIRS);
	s.sources = sources;
	s.nsources = 1;
	sqk_build_result_init(r);
	ck_assert_int_eq(sqk_io_mem_create(NULL, 0, &out), 0);
	*err = sqk_build(&o, &s, out, r);
	return out;
}

/* The builder signs as it writes: the block after the integrity data, one entry per key, each
 * valid over the root digest the build reports and the image's end; the bytes before it are
 * those of the same build unsigned; the time is clamp_time unless sign_time is set. A signed
 * build without integrity data is refused. */
START_TEST(test_build_signed)
{
	char tree[64];
	EVP_PKEY *keys[2] = { new_ed25519(), new_ed25519() };
	struct sqk_build_result r, ru;
	struct sqk_io *img, *plain;
	struct sig_block b;
	uint64_t start;
	size_t len, ulen;
	int err;

	test_tree_new(tree, sizeof(tree), "signbuild");
	test_tree_put(tree, "a", 20000);
	test_tree_put(tree, "b", 100);
	img = build_signed(tree, keys, 2, -1, false, &err, &r);
	ck_assert_msg(err == 0, "%s", r.msg);
	plain = build_signed(tree, keys, 0, -1, false, &err, &ru);
	ck_assert_int_eq(err, 0);
	const uint8_t *d = sqk_io_mem_data(img, &len), *u = sqk_io_mem_data(plain, &ulen);
	ck_assert_uint_eq(len, ulen + 4096);
	ck_assert_uint_eq(r.image_bytes, len);
	ck_assert_int_eq(memcmp(d, u, ulen), 0);
	ck_assert_int_eq(memcmp(r.root_hash, ru.root_hash, 32), 0);
	ck_assert_int_eq(sig_block_read(img, len, &b, &start), 0);
	ck_assert_uint_eq(start, ulen);
	ck_assert_uint_eq(b.image_end, ulen);
	ck_assert_uint_eq(b.n, 2);
	for (size_t i = 0; i < 2; i++) {
		uint8_t pub[32];

		sig_public_of(keys[i], pub);
		ck_assert_int_eq(memcmp(b.e[i].pub, pub, 32), 0);
		ck_assert_uint_eq(b.e[i].time, 1700000000);
		ck_assert_str_eq(b.e[i].comment, "release 7");
		ck_assert_int_eq(sig_verify(&b.e[i], r.root_hash, ulen), 0);
	}
	sig_block_free(&b);
	sqk_io_destroy(img);
	img = build_signed(tree, keys, 1, 42, false, &err, &r);
	ck_assert_int_eq(err, 0);
	ck_assert_int_eq(sig_block_read(img, r.image_bytes, &b, &start), 0);
	ck_assert_uint_eq(b.e[0].time, 42);
	sig_block_free(&b);
	sqk_io_destroy(img);
	img = build_signed(tree, keys, 1, -1, true, &err, &r);
	ck_assert_int_eq(err, SQK_EINVAL);
	ck_assert_msg(strstr(r.msg, "integrity data"), "%s", r.msg);
	sqk_io_destroy(img);
	sqk_io_destroy(plain);
	test_tree_remove(tree);
	EVP_PKEY_free(keys[0]);
	EVP_PKEY_free(keys[1]);
}
END_TEST

static Suite *sign_suite(void)
{
	Suite *s = suite_create("sign");
	TCase *tc = tcase_create("sign");
	TCase *keys = tcase_create("keys");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_key_id);
	tcase_add_test(tc, test_sign_verify_tamper);
	tcase_add_test(tc, test_known_answer);
	tcase_add_test(tc, test_comments);
	tcase_add_test(tc, test_block_round_trip);
	tcase_add_test(tc, test_block_set_remove);
	tcase_add_test(tc, test_encode_refuses);
	tcase_add_test(tc, test_hostile_blocks);
	tcase_add_test(tc, test_every_byte);
	tcase_add_test(tc, test_block_read);
	tcase_add_test(tc, test_build_signed);
	suite_add_tcase(s, tc);
	tcase_set_timeout(keys, 60);
	tcase_add_checked_fixture(keys, key_dir_setup, key_dir_teardown);
	tcase_add_test(keys, test_load_ed25519);
	tcase_add_test(keys, test_private_refused);
	tcase_add_test(keys, test_public_refused);
	tcase_add_test(keys, test_keygen);
	tcase_add_test(keys, test_trust_and_check);
	suite_add_tcase(s, keys);
	return s;
}

int main(void)
{
	return test_run_suite(sign_suite());
}
