/* SPDX-License-Identifier: BSD-2-Clause */
/* Signing and checking image signatures (sign.h): the signed message, Ed25519 (pure, through
 * EVP_DigestSign with no digest), and the verdict on a block against a set of trusted keys. */
#include "sign.h"

#include <openssl/err.h>
#include <openssl/evp.h>
#include <string.h>

#include "endian.h"
#include "sqk/error.h"

#define MSG_MAGIC "SQKSIG1" /* with its NUL: 8 bytes */
#define MSG_MAX (8 + SQK_SIG_PUB_SIZE + SQK_SIG_ROOT_SIZE + 8 + 8 + 4 + SQK_SIG_COMMENT_MAX)

/* The message an entry signs, into msg (MSG_MAX bytes); its length. */
static size_t message(const uint8_t pub[SQK_SIG_PUB_SIZE], const uint8_t root[SQK_SIG_ROOT_SIZE],
		      uint64_t image_end, uint64_t time, const char *comment, uint32_t clen,
		      uint8_t *msg)
{
	size_t at = 0;

	memcpy(msg, MSG_MAGIC, 8);
	at += 8;
	memcpy(msg + at, pub, SQK_SIG_PUB_SIZE);
	at += SQK_SIG_PUB_SIZE;
	memcpy(msg + at, root, SQK_SIG_ROOT_SIZE);
	at += SQK_SIG_ROOT_SIZE;
	put_le64(msg + at, image_end);
	put_le64(msg + at + 8, time);
	put_le32(msg + at + 16, clen);
	at += 20;
	if (clen)
		memcpy(msg + at, comment, clen);
	return at + clen;
}

/* Borrows key, root and comment; fills the caller's out. */
int sig_sign(EVP_PKEY *key, const uint8_t root[SQK_SIG_ROOT_SIZE], uint64_t image_end,
	     uint64_t time, const char *comment, struct sig_entry *out)
{
	size_t clen = comment ? strlen(comment) : 0, mlen, slen = SQK_SIG_SIG_SIZE;
	uint8_t msg[MSG_MAX];
	EVP_MD_CTX *ctx;
	int ok;

	memset(out, 0, sizeof(*out));
	if (sig_comment_check(comment, clen) || sig_public_of(key, out->pub))
		return SQK_EINVAL;
	out->algorithm = SQK_SIG_ED25519;
	out->time = time;
	out->comment_len = (uint32_t)clen;
	mlen = message(out->pub, root, image_end, time, comment, out->comment_len, msg);
	ctx = EVP_MD_CTX_new();
	ok = ctx && EVP_DigestSignInit(ctx, NULL, NULL, NULL, key) == 1 &&
	     EVP_DigestSign(ctx, out->sig, &slen, msg, mlen) == 1 && slen == SQK_SIG_SIG_SIZE;
	EVP_MD_CTX_free(ctx);
	ERR_clear_error();
	if (ok && clen && !(out->comment = strdup(comment)))
		ok = 0;
	if (!ok) {
		sig_entry_clear(out);
		return SQK_ENOMEM;
	}
	return 0;
}

/* Borrows e and root. */
int sig_verify(const struct sig_entry *e, const uint8_t root[SQK_SIG_ROOT_SIZE],
	       uint64_t image_end)
{
	uint8_t msg[MSG_MAX];
	size_t mlen;
	EVP_PKEY *pk;
	EVP_MD_CTX *ctx;
	int r;

	if (e->algorithm != SQK_SIG_ED25519 || e->comment_len > SQK_SIG_COMMENT_MAX ||
	    (e->comment_len && !e->comment))
		return SQK_ECORRUPT;
	mlen = message(e->pub, root, image_end, e->time, e->comment, e->comment_len, msg);
	pk = EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, NULL, e->pub, SQK_SIG_PUB_SIZE);
	if (!pk) { /* bytes OpenSSL refuses as a key */
		ERR_clear_error();
		return SQK_ECORRUPT;
	}
	ctx = EVP_MD_CTX_new();
	if (!ctx || EVP_DigestVerifyInit(ctx, NULL, NULL, NULL, pk) != 1)
		r = SQK_ENOMEM;
	else
		r = EVP_DigestVerify(ctx, e->sig, SQK_SIG_SIG_SIZE, msg, mlen) == 1 ? 0
										    : SQK_ECORRUPT;
	EVP_MD_CTX_free(ctx);
	EVP_PKEY_free(pk);
	ERR_clear_error();
	return r;
}

/* Borrows everything; fills the caller's st[0..b->n) (when not NULL) and *sum. */
int sig_check(const struct sig_block *b, const struct sig_trust *t,
	      const uint8_t root[SQK_SIG_ROOT_SIZE], uint64_t image_end, struct sig_status *st,
	      struct sig_summary *sum)
{
	memset(sum, 0, sizeof(*sum));
	for (size_t i = 0; i < b->n; i++) {
		const struct sig_entry *e = &b->e[i];
		bool trusted = sig_trust_has(t, e->pub);
		int r = sig_verify(e, root, image_end);

		if (r == SQK_ENOMEM) {
			memset(sum, 0, sizeof(*sum));
			return r;
		}
		if (st)
			st[i] = (struct sig_status){ .trusted = trusted, .valid = r == 0 };
		if (r)
			continue;
		sum->valid++;
		if (!trusted)
			continue;
		sum->trusted_valid++;
		if (!sum->ok || e->time > sum->newest) {
			sum->newest = e->time;
			sum->newest_index = i;
		}
		sum->ok = true;
	}
	return 0;
}
