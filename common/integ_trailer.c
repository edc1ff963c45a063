/* SPDX-License-Identifier: BSD-2-Clause */
/* The integrity trailer codec (layout in integrity.h): encoding and distrustful decoding of the
 * 128-byte trailer, where the integrity data ends, the root digest over the trailer and the
 * digests, and the digest helpers (SHA-256, hex) every side uses. */
#include "integrity.h"

#include <openssl/evp.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "bytes.h"
#include "endian.h"
#include "integ_internal.h"
#include "sqk/error.h"

/* SHA-256 of data into out (one shot; thread-safe). */
void hash_sha256(const void *data, size_t len, uint8_t out[SQK_INTEG_DIGEST_SIZE])
{
	unsigned int n = SQK_INTEG_DIGEST_SIZE;

	if (!EVP_Digest(data, len, out, &n, EVP_sha256(), NULL))
		memset(out, 0, SQK_INTEG_DIGEST_SIZE);
}

/* Writes the lower-case hex of d into the caller's out (65 bytes). */
void integ_hex(const uint8_t d[SQK_INTEG_DIGEST_SIZE],
		   char out[2 * SQK_INTEG_DIGEST_SIZE + 1])
{
	bytes_hex(d, SQK_INTEG_DIGEST_SIZE, out);
	out[2 * SQK_INTEG_DIGEST_SIZE] = '\0';
}

/* Borrows hex; fills the caller's out. */
int integ_parse_hex(const char *hex, uint8_t out[SQK_INTEG_DIGEST_SIZE])
{
	return bytes_from_hex(hex, out, SQK_INTEG_DIGEST_SIZE) ? SQK_EINVAL : 0;
}

/* Borrows t; fills the caller's out. */
void integ_trailer_encode(const struct sqk_integ_trailer *t,
			      uint8_t out[SQK_INTEG_TRAILER_SIZE])
{
	memset(out, 0, SQK_INTEG_TRAILER_SIZE);
	memcpy(out, SQK_INTEG_MAGIC, MAGIC_LEN);
	put_le32(out + 8, t->version);
	put_le32(out + 12, t->chunk_size);
	put_le64(out + 16, t->covered);
	put_le64(out + 24, t->hashes_at);
	put_le64(out + 32, t->nchunks);
	memcpy(out + ROOT_AT, t->root, SQK_INTEG_DIGEST_SIZE);
	if (t->version == SQK_INTEG_VERSION_TREE) {
		put_le32(out + TREE_AT, t->group_chunks);
		put_le64(out + TREE_AT + 8, t->groups_at);
		put_le64(out + TREE_AT + 16, t->ngroups);
	}
	memcpy(out + SQK_INTEG_TRAILER_SIZE - MAGIC_LEN, SQK_INTEG_MAGIC, MAGIC_LEN);
}

/* The fields of a digest tree, distrusted: group size, the group array right after the chunk
 * digests (no overflow), the group count, and the zero bytes around them. */
static int decode_tree(const uint8_t *in, struct sqk_integ_trailer *t)
{
	t->group_chunks = get_le32(in + TREE_AT);
	t->groups_at = get_le64(in + TREE_AT + 8);
	t->ngroups = get_le64(in + TREE_AT + 16);
	if (!group_size_ok(t->group_chunks) || get_le32(in + TREE_AT + 4) ||
	    !bytes_all_zero(in + TREE_END, SQK_INTEG_TRAILER_SIZE - MAGIC_LEN - TREE_END))
		return SQK_ECORRUPT;
	if (t->nchunks > (UINT64_MAX - t->covered) / SQK_INTEG_DIGEST_SIZE ||
	    t->groups_at != t->covered + t->nchunks * SQK_INTEG_DIGEST_SIZE ||
	    t->ngroups != t->nchunks / t->group_chunks + (t->nchunks % t->group_chunks != 0))
		return SQK_ECORRUPT;
	return integ_end(t) ? 0 : SQK_ECORRUPT;
}

/* Borrows in; fills the caller's t. */
int integ_trailer_decode(const uint8_t in[SQK_INTEG_TRAILER_SIZE],
			     struct sqk_integ_trailer *t)
{
	/* Either magic in place is a trailer: a damaged one must not pass for "no integrity
	 * data", which would turn verified reads off without a word. */
	bool head = memcmp(in, SQK_INTEG_MAGIC, MAGIC_LEN) == 0;
	bool tail =
	    memcmp(in + SQK_INTEG_TRAILER_SIZE - MAGIC_LEN, SQK_INTEG_MAGIC, MAGIC_LEN) == 0;

	if (!head && !tail)
		return SQK_ENOENT;
	if (!head || !tail)
		return SQK_ECORRUPT;
	memset(t, 0, sizeof(*t));
	t->version = get_le32(in + 8);
	t->chunk_size = get_le32(in + 12);
	t->covered = get_le64(in + 16);
	t->hashes_at = get_le64(in + 24);
	t->nchunks = get_le64(in + 32);
	memcpy(t->root, in + ROOT_AT, SQK_INTEG_DIGEST_SIZE);
	/* Another version is indistinguishable from a damaged one: the root cannot be checked. */
	if ((t->version != SQK_INTEG_VERSION && t->version != SQK_INTEG_VERSION_TREE) ||
	    !chunk_size_ok(t->chunk_size) || t->covered == 0 || t->covered % PAD ||
	    t->hashes_at != t->covered || t->nchunks != nchunks_for(t->covered, t->chunk_size))
		return SQK_ECORRUPT;
	if (t->version == SQK_INTEG_VERSION_TREE)
		return decode_tree(in, t);
	if (!bytes_all_zero(in + TREE_AT, SQK_INTEG_TRAILER_SIZE - MAGIC_LEN - TREE_AT))
		return SQK_ECORRUPT;
	return integ_end(t) ? 0 : SQK_ECORRUPT;
}

uint64_t integ_digests_end(const struct sqk_integ_trailer *t)
{
	uint64_t at = t->version == SQK_INTEG_VERSION_TREE ? t->groups_at : t->covered;
	uint64_t n = t->version == SQK_INTEG_VERSION_TREE ? t->ngroups : t->nchunks;

	if (n > (UINT64_MAX - at) / SQK_INTEG_DIGEST_SIZE)
		return 0;
	return at + n * SQK_INTEG_DIGEST_SIZE;
}

/* Borrows t. */
uint64_t integ_end(const struct sqk_integ_trailer *t)
{
	uint64_t e = integ_digests_end(t);

	if (!e || e > UINT64_MAX - SQK_INTEG_TRAILER_SIZE - PAD)
		return 0;
	return (e + SQK_INTEG_TRAILER_SIZE + PAD - 1) / PAD * PAD;
}

/* Borrows t. */
uint64_t integ_lazy_start(const struct sqk_integ_trailer *t)
{
	return t->version == SQK_INTEG_VERSION_TREE ? t->groups_at : t->hashes_at;
}

int integ_root_digest(const struct sqk_integ_trailer *t, const uint8_t *digests,
		      uint8_t out[SQK_INTEG_DIGEST_SIZE])
{
	uint64_t n = t->version == SQK_INTEG_VERSION_TREE ? t->ngroups : t->nchunks;
	struct sqk_integ_trailer z = *t;
	uint8_t raw[SQK_INTEG_TRAILER_SIZE];
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	int ok;

	memset(z.root, 0, sizeof(z.root));
	integ_trailer_encode(&z, raw);
	ok = ctx && EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) &&
	     EVP_DigestUpdate(ctx, raw, sizeof(raw)) &&
	     EVP_DigestUpdate(ctx, digests, n * SQK_INTEG_DIGEST_SIZE) &&
	     EVP_DigestFinal_ex(ctx, out, NULL);
	EVP_MD_CTX_free(ctx);
	return ok ? 0 : SQK_ENOMEM;
}
