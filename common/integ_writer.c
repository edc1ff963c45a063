/* SPDX-License-Identifier: BSD-2-Clause */
/* The integrity writer (layout in integrity.h): the builder streams every byte it writes
 * through it; it hashes fixed-size chunks as they pass with SHA-256 and XXH3-64 (chunk 0 last:
 * the superblock is written at the end), gives the fast checksum block to write at the end of
 * the covered bytes, then the digest array (and, for a digest tree, the group digests), zero
 * padding and the trailer to append. */
#include "integrity.h"

#include <openssl/evp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "integ_internal.h"
#include "sqk/error.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

struct integ_writer {
	uint32_t chunk_size;
	uint8_t *chunk0;      /* the first chunk, hashed at finish */
	uint64_t stream_pos;  /* next expected offset past chunk 0 */
	EVP_MD_CTX *ctx;      /* hashing the chunk that stream_pos is in */
	uint8_t *digests;     /* 32 bytes per chunk, slot 0 filled at finish */
	uint64_t ndigests;    /* slots in use (slot 0 is reserved for chunk 0) */
	size_t dcap, scap;    /* slots allocated in digests and in sums (mem_grow) */
	XXH3_state_t *xs;     /* XXH3-64 of the chunk that stream_pos is in */
	uint64_t *sums; /* XXH3-64 per chunk, like digests (slot 0 at integ_writer_fast) */
	bool chunk0_frozen;   /* the fast block has chunk 0's checksum: no more rewrites */
	bool fast_done;
	uint32_t group_chunks; /* of a digest tree */
	uint64_t flat_max;    /* a tree when the digests take more than this */
};

/* Makes digests and sums hold at least n slots each (doubling); SQK_ENOMEM leaves both arrays
 * valid, with their own capacities. */
static int grow_slots(struct integ_writer *w, size_t n)
{
	int err = mem_grow(&w->digests, &w->dcap, n, SQK_INTEG_DIGEST_SIZE, 0);

	return err ? err : mem_grow(&w->sums, &w->scap, n, sizeof(*w->sums), 0);
}

/* Caller owns *out (integ_writer_destroy). */
int integ_writer_create(uint32_t chunk_size, struct integ_writer **out)
{
	struct integ_writer *w;

	*out = NULL;
	if (!chunk_size)
		chunk_size = SQK_INTEG_CHUNK_DEFAULT;
	if (!chunk_size_ok(chunk_size))
		return SQK_EINVAL;
	w = calloc(1, sizeof(*w));
	if (!w)
		return SQK_ENOMEM;
	w->chunk_size = chunk_size;
	w->group_chunks = SQK_INTEG_GROUP_DEFAULT;
	w->flat_max = SQK_INTEG_FLAT_MAX;
	w->stream_pos = chunk_size;
	w->ndigests = 1;
	w->chunk0 = calloc(1, chunk_size);
	w->ctx = EVP_MD_CTX_new();
	w->xs = XXH3_createState();
	if (!w->chunk0 || !w->ctx || !w->xs || grow_slots(w, 64) ||
	    XXH3_64bits_reset(w->xs) != XXH_OK ||
	    !EVP_DigestInit_ex(w->ctx, EVP_sha256(), NULL)) {
		integ_writer_destroy(w);
		return SQK_ENOMEM;
	}
	*out = w;
	return 0;
}

/* Borrows w. */
int integ_writer_tree(struct integ_writer *w, uint32_t group_chunks, uint64_t flat_max)
{
	if (!group_chunks)
		group_chunks = SQK_INTEG_GROUP_DEFAULT;
	if (!group_size_ok(group_chunks))
		return SQK_EINVAL;
	w->group_chunks = group_chunks;
	w->flat_max = flat_max;
	return 0;
}

/* Destroys w; NULL-safe. */
void integ_writer_destroy(struct integ_writer *w)
{
	if (!w)
		return;
	EVP_MD_CTX_free(w->ctx);
	if (w->xs)
		XXH3_freeState(w->xs);
	free(w->chunk0);
	free(w->digests);
	free(w->sums);
	free(w);
}

/* Stores the finished digest of the current streamed chunk and starts the next one. */
static int close_chunk(struct integ_writer *w)
{
	int err;

	if (w->ndigests >= SIZE_MAX)
		return SQK_ENOMEM;
	if ((err = grow_slots(w, (size_t)w->ndigests + 1)))
		return err;
	if (!EVP_DigestFinal_ex(w->ctx, w->digests + w->ndigests * SQK_INTEG_DIGEST_SIZE, NULL) ||
	    !EVP_DigestInit_ex(w->ctx, EVP_sha256(), NULL))
		return SQK_ENOMEM;
	w->sums[w->ndigests] = XXH3_64bits_digest(w->xs);
	if (XXH3_64bits_reset(w->xs) != XXH_OK)
		return SQK_ENOMEM;
	w->ndigests++;
	return 0;
}

/* Borrows data for the call. */
int integ_writer_update(struct integ_writer *w, uint64_t off, const void *data, size_t len)
{
	const uint8_t *p = data;

	if (off < w->chunk_size && len && w->chunk0_frozen)
		return SQK_EINVAL; /* the fast block already holds chunk 0's checksum */
	if (off < w->chunk_size) {
		size_t n = w->chunk_size - off < len ? (size_t)(w->chunk_size - off) : len;

		memcpy(w->chunk0 + off, p, n);
		p += n;
		off += n;
		len -= n;
	}
	if (len && off != w->stream_pos)
		return SQK_EINVAL;
	while (len) {
		size_t room = w->chunk_size - (size_t)(w->stream_pos % w->chunk_size);
		size_t n = room < len ? room : len;
		int err;

		if (!EVP_DigestUpdate(w->ctx, p, n) || XXH3_64bits_update(w->xs, p, n) != XXH_OK)
			return SQK_ENOMEM;
		p += n;
		len -= n;
		w->stream_pos += n;
		if (n == room && (err = close_chunk(w)))
			return err;
	}
	return 0;
}

/* The group digests of a tree: G[g] over the digests of its chunks, into out (ngroups * 32). */
static void group_digests(const struct sqk_integ_trailer *t, const uint8_t *digests,
			  uint8_t *out)
{
	for (uint64_t g = 0; g < t->ngroups; g++) {
		uint64_t k0 = g * t->group_chunks, k1 = k0 + t->group_chunks;

		if (k1 > t->nchunks)
			k1 = t->nchunks;
		hash_sha256(digests + k0 * SQK_INTEG_DIGEST_SIZE,
			   (size_t)((k1 - k0) * SQK_INTEG_DIGEST_SIZE),
			   out + g * SQK_INTEG_DIGEST_SIZE);
	}
}

/* Builds digests || group digests (a tree) || zero padding || trailer (root set here) into a
 * new buffer the caller owns. */
static int make_blob(struct sqk_integ_trailer *t, const uint8_t *digests, uint8_t **blob,
		     size_t *blob_len)
{
	uint64_t dlen = t->nchunks * SQK_INTEG_DIGEST_SIZE;
	uint64_t total = integ_end(t) - t->covered;
	uint8_t *b;
	int err;

	if (!integ_end(t) || total > SIZE_MAX)
		return SQK_EOVERFLOW;
	b = calloc(1, (size_t)total);
	if (!b)
		return SQK_ENOMEM;
	memcpy(b, digests, (size_t)dlen);
	if (t->version == SQK_INTEG_VERSION_TREE)
		group_digests(t, digests, b + dlen);
	err = integ_root_digest(t, t->version == SQK_INTEG_VERSION_TREE ? b + dlen : digests,
				t->root);
	if (err) {
		free(b);
		return err;
	}
	integ_trailer_encode(t, b + total - SQK_INTEG_TRAILER_SIZE);
	*blob = b;
	*blob_len = (size_t)total;
	return 0;
}

/* Caller owns *blob (free). */
int integ_writer_finish(struct integ_writer *w, uint64_t covered, uint8_t **blob,
			    size_t *blob_len, uint8_t root[SQK_INTEG_DIGEST_SIZE])
{
	struct sqk_integ_trailer t = { .version = SQK_INTEG_VERSION, .chunk_size = w->chunk_size,
				       .covered = covered, .hashes_at = covered };
	int err;

	*blob = NULL;
	*blob_len = 0;
	if (covered == 0 || covered % PAD)
		return SQK_EINVAL;
	t.nchunks = nchunks_for(covered, w->chunk_size);
	if (covered > w->chunk_size ? w->stream_pos != covered : w->stream_pos != w->chunk_size)
		return SQK_EINVAL;
	if (w->stream_pos % w->chunk_size && (err = close_chunk(w)))
		return err;
	if (w->ndigests != t.nchunks)
		return SQK_EINVAL;
	if (t.nchunks > w->flat_max / SQK_INTEG_DIGEST_SIZE || !w->flat_max) {
		t.version = SQK_INTEG_VERSION_TREE;
		t.group_chunks = w->group_chunks;
		t.groups_at = covered + t.nchunks * SQK_INTEG_DIGEST_SIZE;
		t.ngroups = t.nchunks / t.group_chunks + (t.nchunks % t.group_chunks != 0);
	}
	hash_sha256(w->chunk0, covered < w->chunk_size ? (size_t)covered : w->chunk_size,
		   w->digests);
	err = make_blob(&t, w->digests, blob, blob_len);
	if (!err)
		memcpy(root, t.root, SQK_INTEG_DIGEST_SIZE);
	return err;
}

/* Caller owns *blk (free). */
int integ_writer_fast(struct integ_writer *w, uint64_t at, uint8_t **blk, size_t *len)
{
	uint64_t n = at / w->chunk_size;

	*blk = NULL;
	*len = 0;
	if (w->fast_done || at % SQK_FAST_ALIGN || (at > w->chunk_size && w->stream_pos != at))
		return SQK_EINVAL;
	w->fast_done = true;
	if (n == 0)
		return 0; /* no whole chunk before the block: every chunk is checked by SHA-256 */
	if (n > w->ndigests)
		return SQK_EINVAL; /* not all fed */
	w->chunk0_frozen = true;
	w->sums[0] = XXH3_64bits(w->chunk0, w->chunk_size);
	return integ_fast_encode(w->sums, n, blk, len);
}
