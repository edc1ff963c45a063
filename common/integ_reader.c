/* SPDX-License-Identifier: BSD-2-Clause */
/* Integrity data (layout in integrity.h): the builder streams every byte it writes through a
 * writer that hashes fixed-size chunks as they pass with SHA-256 and XXH3-64 (chunk 0 last: the
 * superblock is written at the end), writes the fast checksum block at the end of the covered
 * bytes, then appends the digest array (and, for a digest tree, the group digests), zero
 * padding and the trailer. Readers load and authenticate the digests from the end of the file
 * and check chunks against them, or against the fast checksums (which the digests authenticate)
 * when no root digest is pinned. A lazy load of a digest tree authenticates the group digests
 * only and takes each group of chunk digests when its caller brings it (a remote image). */
#include "integrity.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bytes.h"
#include "endian.h"
#include "sqk/error.h"
#include "grow.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

#define PAD 4096u
#define MAGIC_LEN 8u
#define ROOT_AT 40u
#define TREE_AT 72u   /* version 2: group_chunks, zero, groups_at, ngroups */
#define TREE_END 96u

struct sqk_integ_writer {
	uint32_t chunk_size;
	uint8_t *chunk0;      /* the first chunk, hashed at finish */
	uint64_t stream_pos;  /* next expected offset past chunk 0 */
	EVP_MD_CTX *ctx;      /* hashing the chunk that stream_pos is in */
	uint8_t *digests;     /* 32 bytes per chunk, slot 0 filled at finish */
	uint64_t ndigests;    /* slots in use (slot 0 is reserved for chunk 0) */
	size_t dcap, scap;    /* slots allocated in digests and in sums (sqk_grow) */
	XXH3_state_t *xs;     /* XXH3-64 of the chunk that stream_pos is in */
	uint64_t *sums;       /* XXH3-64 per chunk, like digests (slot 0 at sqk_integ_writer_fast) */
	bool chunk0_frozen;   /* the fast block has chunk 0's checksum: no more rewrites */
	bool fast_done;
	uint32_t group_chunks; /* of a digest tree */
	uint64_t flat_max;    /* a tree when the digests take more than this */
};

/* A lazy load's groups of chunk digests, each set once when accepted (then never changed). */
struct sqk_integ_lazy {
	pthread_mutex_t mu; /* serialises acceptance */
	uint8_t *_Atomic *gd; /* ngroups: the group's chunk digests, or NULL */
};

/* SHA-256 of data into out (one shot; thread-safe). */
void sqk_sha256(const void *data, size_t len, uint8_t out[SQK_INTEG_DIGEST_SIZE])
{
	unsigned int n = SQK_INTEG_DIGEST_SIZE;

	if (!EVP_Digest(data, len, out, &n, EVP_sha256(), NULL))
		memset(out, 0, SQK_INTEG_DIGEST_SIZE);
}

/* Writes the lower-case hex of d into the caller's out (65 bytes). */
void sqk_integ_hex(const uint8_t d[SQK_INTEG_DIGEST_SIZE],
		   char out[2 * SQK_INTEG_DIGEST_SIZE + 1])
{
	bytes_hex(d, SQK_INTEG_DIGEST_SIZE, out);
	out[2 * SQK_INTEG_DIGEST_SIZE] = '\0';
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Borrows hex; fills the caller's out. */
int sqk_integ_parse_hex(const char *hex, uint8_t out[SQK_INTEG_DIGEST_SIZE])
{
	if (!hex || strlen(hex) != 2 * SQK_INTEG_DIGEST_SIZE)
		return SQK_EINVAL;
	for (unsigned i = 0; i < SQK_INTEG_DIGEST_SIZE; i++) {
		int hi = hexval(hex[2 * i]), lo = hexval(hex[2 * i + 1]);

		if (hi < 0 || lo < 0)
			return SQK_EINVAL;
		out[i] = (uint8_t)(hi << 4 | lo);
	}
	return 0;
}

/* ---- trailer ---- */

static uint64_t nchunks_for(uint64_t covered, uint32_t chunk_size)
{
	return covered / chunk_size + (covered % chunk_size != 0);
}

static bool chunk_size_ok(uint32_t cs)
{
	return cs >= SQK_INTEG_CHUNK_MIN && cs <= SQK_INTEG_CHUNK_MAX && (cs & (cs - 1)) == 0;
}

static bool group_size_ok(uint32_t g)
{
	return g >= SQK_INTEG_GROUP_MIN && g <= SQK_INTEG_GROUP_MAX && (g & (g - 1)) == 0;
}

/* Borrows t; fills the caller's out. */
void sqk_integ_trailer_encode(const struct sqk_integ_trailer *t,
			      uint8_t out[SQK_INTEG_TRAILER_SIZE])
{
	memset(out, 0, SQK_INTEG_TRAILER_SIZE);
	memcpy(out, SQK_INTEG_MAGIC, MAGIC_LEN);
	sqk_put_le32(out + 8, t->version);
	sqk_put_le32(out + 12, t->chunk_size);
	sqk_put_le64(out + 16, t->covered);
	sqk_put_le64(out + 24, t->hashes_at);
	sqk_put_le64(out + 32, t->nchunks);
	memcpy(out + ROOT_AT, t->root, SQK_INTEG_DIGEST_SIZE);
	if (t->version == SQK_INTEG_VERSION_TREE) {
		sqk_put_le32(out + TREE_AT, t->group_chunks);
		sqk_put_le64(out + TREE_AT + 8, t->groups_at);
		sqk_put_le64(out + TREE_AT + 16, t->ngroups);
	}
	memcpy(out + SQK_INTEG_TRAILER_SIZE - MAGIC_LEN, SQK_INTEG_MAGIC, MAGIC_LEN);
}

/* The fields of a digest tree, distrusted: group size, the group array right after the chunk
 * digests (no overflow), the group count, and the zero bytes around them. */
static int decode_tree(const uint8_t *in, struct sqk_integ_trailer *t)
{
	t->group_chunks = sqk_get_le32(in + TREE_AT);
	t->groups_at = sqk_get_le64(in + TREE_AT + 8);
	t->ngroups = sqk_get_le64(in + TREE_AT + 16);
	if (!group_size_ok(t->group_chunks) || sqk_get_le32(in + TREE_AT + 4) ||
	    !bytes_all_zero(in + TREE_END, SQK_INTEG_TRAILER_SIZE - MAGIC_LEN - TREE_END))
		return SQK_ECORRUPT;
	if (t->nchunks > (UINT64_MAX - t->covered) / SQK_INTEG_DIGEST_SIZE ||
	    t->groups_at != t->covered + t->nchunks * SQK_INTEG_DIGEST_SIZE ||
	    t->ngroups != t->nchunks / t->group_chunks + (t->nchunks % t->group_chunks != 0))
		return SQK_ECORRUPT;
	return sqk_integ_end(t) ? 0 : SQK_ECORRUPT;
}

/* Borrows in; fills the caller's t. */
int sqk_integ_trailer_decode(const uint8_t in[SQK_INTEG_TRAILER_SIZE],
			     struct sqk_integ_trailer *t)
{
	/* Either magic in place is a trailer: a damaged one must not pass for "no integrity
	 * data", which would turn verified reads off without a word. */
	bool head = memcmp(in, SQK_INTEG_MAGIC, MAGIC_LEN) == 0;
	bool tail = memcmp(in + SQK_INTEG_TRAILER_SIZE - MAGIC_LEN, SQK_INTEG_MAGIC, MAGIC_LEN) == 0;

	if (!head && !tail)
		return SQK_ENOENT;
	if (!head || !tail)
		return SQK_ECORRUPT;
	memset(t, 0, sizeof(*t));
	t->version = sqk_get_le32(in + 8);
	t->chunk_size = sqk_get_le32(in + 12);
	t->covered = sqk_get_le64(in + 16);
	t->hashes_at = sqk_get_le64(in + 24);
	t->nchunks = sqk_get_le64(in + 32);
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
	return sqk_integ_end(t) ? 0 : SQK_ECORRUPT;
}

/* Where the digests that precede the padding end (the group digests' end in version 2), 0 on
 * overflow. */
static uint64_t digests_end(const struct sqk_integ_trailer *t)
{
	uint64_t at = t->version == SQK_INTEG_VERSION_TREE ? t->groups_at : t->covered;
	uint64_t n = t->version == SQK_INTEG_VERSION_TREE ? t->ngroups : t->nchunks;

	if (n > (UINT64_MAX - at) / SQK_INTEG_DIGEST_SIZE)
		return 0;
	return at + n * SQK_INTEG_DIGEST_SIZE;
}

/* Borrows t. */
uint64_t sqk_integ_end(const struct sqk_integ_trailer *t)
{
	uint64_t e = digests_end(t);

	if (!e || e > UINT64_MAX - SQK_INTEG_TRAILER_SIZE - PAD)
		return 0;
	return (e + SQK_INTEG_TRAILER_SIZE + PAD - 1) / PAD * PAD;
}

/* Borrows t. */
uint64_t sqk_integ_lazy_start(const struct sqk_integ_trailer *t)
{
	return t->version == SQK_INTEG_VERSION_TREE ? t->groups_at : t->hashes_at;
}

/* Bytes of padding between the digests (or group digests) and the trailer. */
static uint64_t pad_len(const struct sqk_integ_trailer *t)
{
	return sqk_integ_end(t) - SQK_INTEG_TRAILER_SIZE - digests_end(t);
}

/* Root digest: SHA-256(trailer with the root zeroed || what it covers: the chunk digests in
 * version 1, the group digests in version 2, passed as `digests`). */
static int root_digest(const struct sqk_integ_trailer *t, const uint8_t *digests,
		       uint8_t out[SQK_INTEG_DIGEST_SIZE])
{
	uint64_t n = t->version == SQK_INTEG_VERSION_TREE ? t->ngroups : t->nchunks;
	struct sqk_integ_trailer z = *t;
	uint8_t raw[SQK_INTEG_TRAILER_SIZE];
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	int ok;

	memset(z.root, 0, sizeof(z.root));
	sqk_integ_trailer_encode(&z, raw);
	ok = ctx && EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) &&
	     EVP_DigestUpdate(ctx, raw, sizeof(raw)) &&
	     EVP_DigestUpdate(ctx, digests, n * SQK_INTEG_DIGEST_SIZE) &&
	     EVP_DigestFinal_ex(ctx, out, NULL);
	EVP_MD_CTX_free(ctx);
	return ok ? 0 : SQK_ENOMEM;
}

/* ---- writer ---- */

/* Makes digests and sums hold at least n slots each (doubling); SQK_ENOMEM leaves both arrays
 * valid, with their own capacities. */
static int grow_slots(struct sqk_integ_writer *w, size_t n)
{
	int err = sqk_grow(&w->digests, &w->dcap, n, SQK_INTEG_DIGEST_SIZE, 0);

	return err ? err : sqk_grow(&w->sums, &w->scap, n, sizeof(*w->sums), 0);
}

/* Caller owns *out (sqk_integ_writer_destroy). */
int sqk_integ_writer_create(uint32_t chunk_size, struct sqk_integ_writer **out)
{
	struct sqk_integ_writer *w;

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
		sqk_integ_writer_destroy(w);
		return SQK_ENOMEM;
	}
	*out = w;
	return 0;
}

/* Borrows w. */
int sqk_integ_writer_tree(struct sqk_integ_writer *w, uint32_t group_chunks, uint64_t flat_max)
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
void sqk_integ_writer_destroy(struct sqk_integ_writer *w)
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
static int close_chunk(struct sqk_integ_writer *w)
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
int sqk_integ_writer_update(struct sqk_integ_writer *w, uint64_t off, const void *data, size_t len)
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
		sqk_sha256(digests + k0 * SQK_INTEG_DIGEST_SIZE,
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
	uint64_t total = sqk_integ_end(t) - t->covered;
	uint8_t *b;
	int err;

	if (!sqk_integ_end(t) || total > SIZE_MAX)
		return SQK_EOVERFLOW;
	b = calloc(1, (size_t)total);
	if (!b)
		return SQK_ENOMEM;
	memcpy(b, digests, (size_t)dlen);
	if (t->version == SQK_INTEG_VERSION_TREE)
		group_digests(t, digests, b + dlen);
	err = root_digest(t, t->version == SQK_INTEG_VERSION_TREE ? b + dlen : digests, t->root);
	if (err) {
		free(b);
		return err;
	}
	sqk_integ_trailer_encode(t, b + total - SQK_INTEG_TRAILER_SIZE);
	*blob = b;
	*blob_len = (size_t)total;
	return 0;
}

/* Caller owns *blob (free). */
int sqk_integ_writer_finish(struct sqk_integ_writer *w, uint64_t covered, uint8_t **blob,
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
	sqk_sha256(w->chunk0, covered < w->chunk_size ? (size_t)covered : w->chunk_size,
		   w->digests);
	err = make_blob(&t, w->digests, blob, blob_len);
	if (!err)
		memcpy(root, t.root, SQK_INTEG_DIGEST_SIZE);
	return err;
}

/* ---- reading ---- */

static void lazy_free(struct sqk_integ_lazy *l, uint64_t ngroups)
{
	if (!l)
		return;
	for (uint64_t g = 0; l->gd && g < ngroups; g++)
		free(atomic_load(&l->gd[g]));
	free((void *)l->gd);
	pthread_mutex_destroy(&l->mu);
	free(l);
}

/* Frees what ig owns; NULL-safe. */
void sqk_integ_free(struct sqk_integ *ig)
{
	if (!ig)
		return;
	free(ig->digests);
	ig->digests = NULL;
	free(ig->groups);
	ig->groups = NULL;
	lazy_free(ig->lazy, ig->t.ngroups);
	ig->lazy = NULL;
}

/* Checks that the padding between the digests and the trailer is zero. */
static int check_padding(struct sqk_io *io, uint64_t at, uint64_t len)
{
	uint8_t buf[PAD];
	int err;

	if (len > sizeof(buf))
		return SQK_ECORRUPT;
	if (!len)
		return 0;
	err = sqk_io_read_at(io, at, buf, (size_t)len);
	if (err)
		return err == SQK_EBOUNDS ? SQK_ECORRUPT : err;
	return bytes_all_zero(buf, (size_t)len) ? 0 : SQK_ECORRUPT;
}

/* Reads n digests at `at` into a new buffer (*out, caller frees). */
static int read_digests(struct sqk_io *io, uint64_t at, uint64_t n, uint8_t **out)
{
	uint64_t len = n * SQK_INTEG_DIGEST_SIZE;
	int err;

	if (n > SIZE_MAX / SQK_INTEG_DIGEST_SIZE)
		return SQK_EOVERFLOW;
	*out = malloc(len ? (size_t)len : 1);
	if (!*out)
		return SQK_ENOMEM;
	err = sqk_io_read_at(io, at, *out, (size_t)len);
	return err == SQK_EBOUNDS ? SQK_ECORRUPT : err;
}

/* Reads what the root covers (chunk digests in version 1, group digests in version 2) and
 * the padding, and checks the root. */
static int load_rooted(struct sqk_io *io, struct sqk_integ *out)
{
	const struct sqk_integ_trailer *t = &out->t;
	bool tree = t->version == SQK_INTEG_VERSION_TREE;
	uint8_t root[SQK_INTEG_DIGEST_SIZE];
	int err = tree ? read_digests(io, t->groups_at, t->ngroups, &out->groups)
		       : read_digests(io, t->hashes_at, t->nchunks, &out->digests);

	if (!err)
		err = check_padding(io, digests_end(t), pad_len(t));
	if (!err)
		err = root_digest(t, tree ? out->groups : out->digests, root);
	if (!err && CRYPTO_memcmp(root, t->root, sizeof(root)))
		err = SQK_ECORRUPT;
	return err;
}

/* Borrows io; ig from sqk_integ_load_lazy. */
int sqk_integ_accept_groups(struct sqk_io *io, struct sqk_integ *ig, uint64_t *nbad,
			    void (*on_bad)(void *ctx, const struct sqk_integ *ig, uint64_t g),
			    void *ctx)
{
	uint8_t *buf;
	int err = 0;

	*nbad = 0;
	if (!ig->lazy)
		return 0;
	buf = malloc((size_t)ig->t.group_chunks * SQK_INTEG_DIGEST_SIZE);
	if (!buf)
		return SQK_ENOMEM;
	for (uint64_t g = 0; !err && g < ig->t.ngroups; g++) {
		uint64_t k0, k1, s, e;

		sqk_integ_group_range(ig, g, &k0, &k1, &s, &e);
		err = sqk_io_read_at(io, s, buf, (size_t)(e - s));
		if (err == SQK_EBOUNDS)
			err = SQK_ECORRUPT;
		if (!err)
			err = sqk_integ_group_accept(ig, g, buf, (size_t)(e - s));
		if (err == SQK_ECORRUPT) {
			(*nbad)++;
			err = 0;
			if (on_bad)
				on_bad(ctx, ig, g);
		}
	}
	free(buf);
	return err;
}

/* Reads and decodes the trailer and checks that the area it describes ends the file. */
static int read_trailer(struct sqk_io *io, uint64_t file_size, struct sqk_integ *out)
{
	uint8_t raw[SQK_INTEG_TRAILER_SIZE];
	int err;

	memset(out, 0, sizeof(*out));
	out->file_size = file_size;
	if (file_size < SQK_INTEG_TRAILER_SIZE)
		return SQK_ENOENT;
	err = sqk_io_read_at(io, file_size - SQK_INTEG_TRAILER_SIZE, raw, sizeof(raw));
	if (err)
		return err;
	err = sqk_integ_trailer_decode(raw, &out->t);
	if (err)
		return err;
	if (file_size % PAD || out->t.covered >= file_size || sqk_integ_end(&out->t) != file_size)
		return SQK_ECORRUPT;
	return 0;
}

/* Borrows io; fills the caller's out (sqk_integ_free, also after a failure). */
int sqk_integ_load(struct sqk_io *io, uint64_t file_size, struct sqk_integ *out)
{
	uint64_t nbad = 0;
	int err = sqk_integ_load_lazy(io, file_size, out);

	if (!err)
		err = sqk_integ_accept_groups(io, out, &nbad, NULL, NULL);
	if (!err && nbad)
		err = SQK_ECORRUPT;
	if (err)
		sqk_integ_free(out);
	return err;
}

/* Borrows io; fills the caller's out (sqk_integ_free, also after a failure). */
int sqk_integ_load_lazy(struct sqk_io *io, uint64_t file_size, struct sqk_integ *out)
{
	int err = read_trailer(io, file_size, out);

	if (!err)
		err = load_rooted(io, out);
	if (!err && out->t.version == SQK_INTEG_VERSION_TREE) {
		out->lazy = calloc(1, sizeof(*out->lazy));
		if (out->lazy && !(out->lazy->gd = calloc((size_t)out->t.ngroups,
							 sizeof(*out->lazy->gd)))) {
			free(out->lazy);
			out->lazy = NULL;
		}
		if (out->lazy)
			pthread_mutex_init(&out->lazy->mu, NULL);
		else
			err = SQK_ENOMEM;
	}
	if (err)
		sqk_integ_free(out);
	return err;
}

/* Borrows ig. */
uint64_t sqk_integ_group_of(const struct sqk_integ *ig, uint64_t k)
{
	return ig->t.version == SQK_INTEG_VERSION_TREE ? k / ig->t.group_chunks : 0;
}

/* Borrows ig; fills the caller's outputs. */
void sqk_integ_group_range(const struct sqk_integ *ig, uint64_t g, uint64_t *k0, uint64_t *k1,
			   uint64_t *start, uint64_t *end)
{
	uint64_t per = ig->t.version == SQK_INTEG_VERSION_TREE ? ig->t.group_chunks
							       : ig->t.nchunks;

	*k0 = g * per < ig->t.nchunks ? g * per : ig->t.nchunks;
	*k1 = *k0 + per < ig->t.nchunks ? *k0 + per : ig->t.nchunks;
	*start = ig->t.hashes_at + *k0 * SQK_INTEG_DIGEST_SIZE;
	*end = ig->t.hashes_at + *k1 * SQK_INTEG_DIGEST_SIZE;
}

/* Borrows ig. */
bool sqk_integ_group_loaded(const struct sqk_integ *ig, uint64_t g)
{
	if (!ig->lazy)
		return ig->digests != NULL;
	return g < ig->t.ngroups && atomic_load_explicit(&ig->lazy->gd[g], memory_order_acquire);
}

/* Borrows ig and data. */
int sqk_integ_group_check(const struct sqk_integ *ig, uint64_t g, const void *data, size_t len)
{
	uint8_t d[SQK_INTEG_DIGEST_SIZE];
	uint64_t k0, k1, s, e;

	if (ig->t.version != SQK_INTEG_VERSION_TREE || !ig->groups || g >= ig->t.ngroups)
		return SQK_EINVAL;
	sqk_integ_group_range(ig, g, &k0, &k1, &s, &e);
	if (len != e - s)
		return SQK_ECORRUPT;
	sqk_sha256(data, len, d);
	return CRYPTO_memcmp(d, ig->groups + g * SQK_INTEG_DIGEST_SIZE, sizeof(d)) ? SQK_ECORRUPT
										     : 0;
}

/* Borrows data; ig keeps its own copy. */
int sqk_integ_group_accept(struct sqk_integ *ig, uint64_t g, const void *data, size_t len)
{
	uint8_t *copy;
	int err;

	if (!ig->lazy)
		return ig->digests ? 0 : SQK_EINVAL;
	if (sqk_integ_group_loaded(ig, g))
		return 0;
	err = sqk_integ_group_check(ig, g, data, len);
	if (err)
		return err;
	copy = malloc(len ? len : 1);
	if (!copy)
		return SQK_ENOMEM;
	memcpy(copy, data, len);
	pthread_mutex_lock(&ig->lazy->mu);
	if (atomic_load_explicit(&ig->lazy->gd[g], memory_order_relaxed)) {
		free(copy); /* another thread was first */
		copy = NULL;
	} else {
		atomic_store_explicit(&ig->lazy->gd[g], copy, memory_order_release);
	}
	pthread_mutex_unlock(&ig->lazy->mu);
	return 0;
}

/* Borrows ig. */
const uint8_t *sqk_integ_group_digests(const struct sqk_integ *ig, uint64_t g)
{
	if (!ig->lazy) /* version 1: one group, the whole array */
		return ig->digests && g == 0 ? ig->digests : NULL;
	return g < ig->t.ngroups ? atomic_load_explicit(&ig->lazy->gd[g], memory_order_acquire)
				 : NULL;
}

/* The digest of chunk k, NULL when its group is not loaded. */
static const uint8_t *chunk_digest(const struct sqk_integ *ig, uint64_t k)
{
	const uint8_t *gd;
	uint64_t g;

	if (!ig->lazy)
		return ig->digests ? ig->digests + k * SQK_INTEG_DIGEST_SIZE : NULL;
	g = k / ig->t.group_chunks;
	gd = atomic_load_explicit(&ig->lazy->gd[g], memory_order_acquire);
	return gd ? gd + (k - g * ig->t.group_chunks) * SQK_INTEG_DIGEST_SIZE : NULL;
}

/* Borrows ig; fills the caller's *start and *end. */
void sqk_integ_chunk_range(const struct sqk_integ *ig, uint64_t k, uint64_t *start, uint64_t *end)
{
	uint64_t s = k * ig->t.chunk_size, e = s + ig->t.chunk_size;

	*start = s < ig->t.covered ? s : ig->t.covered;
	*end = e < ig->t.covered ? e : ig->t.covered;
}

/* Borrows ig and data. */
int sqk_integ_check_chunk(const struct sqk_integ *ig, uint64_t k, const void *data, size_t len)
{
	uint8_t d[SQK_INTEG_DIGEST_SIZE];
	const uint8_t *want;
	uint64_t s, e;

	if (k >= ig->t.nchunks)
		return SQK_ECORRUPT;
	want = chunk_digest(ig, k);
	if (!want)
		return SQK_ENOENT;
	sqk_integ_chunk_range(ig, k, &s, &e);
	if (len != e - s)
		return SQK_ECORRUPT;
	sqk_sha256(data, len, d);
	if (CRYPTO_memcmp(d, want, sizeof(d)))
		return SQK_ECORRUPT;
	return 0;
}

/* ---- fast checksums ---- */

/* Borrows data. */
uint64_t sqk_xxh3_64(const void *data, size_t len)
{
	return XXH3_64bits(data, len);
}

uint64_t sqk_integ_fast_len(uint64_t n)
{
	if (n > (UINT64_MAX - SQK_FAST_FOOTER_SIZE - SQK_FAST_ALIGN) / 8)
		return 0;
	return (n * 8 + SQK_FAST_FOOTER_SIZE + SQK_FAST_ALIGN - 1) / SQK_FAST_ALIGN * SQK_FAST_ALIGN;
}

/* Encodes the block of n entries sums[0..n) into a new buffer of len bytes (caller frees). */
static int fast_encode(const uint64_t *sums, uint64_t n, uint8_t **blk, size_t *len)
{
	uint64_t l = sqk_integ_fast_len(n);
	uint8_t *b, *f;

	if (!l || l > SIZE_MAX)
		return SQK_EOVERFLOW;
	b = calloc(1, (size_t)l);
	if (!b)
		return SQK_ENOMEM;
	for (uint64_t k = 0; k < n; k++)
		sqk_put_le64(b + 8 * k, sums[k]);
	f = b + l - SQK_FAST_FOOTER_SIZE;
	sqk_put_le64(f, n);
	sqk_put_le64(f + 8, l);
	sqk_put_le32(f + 16, SQK_FAST_VERSION);
	sqk_put_le32(f + 20, SQK_FAST_XXH3_64);
	memcpy(f + 24, SQK_FAST_MAGIC, MAGIC_LEN);
	*blk = b;
	*len = (size_t)l;
	return 0;
}

/* Caller owns *blk (free). */
int sqk_integ_writer_fast(struct sqk_integ_writer *w, uint64_t at, uint8_t **blk, size_t *len)
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
	return fast_encode(w->sums, n, blk, len);
}

/* Borrows footer and t; fills the caller's *at, *len, *n. */
int sqk_integ_fast_footer(const uint8_t footer[SQK_FAST_FOOTER_SIZE],
			  const struct sqk_integ_trailer *t, uint64_t min_start, uint64_t *at,
			  uint64_t *len, uint64_t *n)
{
	uint64_t nn = sqk_get_le64(footer), l = sqk_get_le64(footer + 8);

	if (memcmp(footer + 24, SQK_FAST_MAGIC, MAGIC_LEN))
		return SQK_ENOENT;
	if (!l || l % SQK_FAST_ALIGN || min_start > t->covered || l > t->covered - min_start)
		return SQK_ECORRUPT;
	*at = t->covered - l;
	*len = l;
	*n = nn;
	if (sqk_get_le32(footer + 16) != SQK_FAST_VERSION ||
	    sqk_get_le32(footer + 20) != SQK_FAST_XXH3_64)
		return SQK_EUNSUPPORTED;
	/* exactly the chunks wholly before the block, in exactly the bytes they need */
	if (nn != *at / t->chunk_size || sqk_integ_fast_len(nn) != l)
		return SQK_ECORRUPT;
	return 0;
}

/* Frees what f owns; NULL-safe. */
void sqk_integ_fast_free(struct sqk_integ_fast *f)
{
	if (!f)
		return;
	free(f->sums);
	f->sums = NULL;
	f->n = 0;
}

/* Borrows blk and t; fills the caller's out. */
int sqk_integ_fast_decode(const uint8_t *blk, size_t len, const struct sqk_integ_trailer *t,
			  uint64_t min_start, struct sqk_integ_fast *out)
{
	uint64_t at, l, n;
	int rc;

	memset(out, 0, sizeof(*out));
	if (len < SQK_FAST_FOOTER_SIZE)
		return SQK_ECORRUPT;
	rc = sqk_integ_fast_footer(blk + len - SQK_FAST_FOOTER_SIZE, t, min_start, &at, &l, &n);
	if (rc)
		return rc;
	if (l != len)
		return SQK_ECORRUPT;
	/* nothing else hides between the entries and the footer */
	if (!bytes_all_zero(blk + (size_t)n * 8, len - SQK_FAST_FOOTER_SIZE - (size_t)n * 8))
		return SQK_ECORRUPT;
	out->sums = malloc(n ? (size_t)n * sizeof(*out->sums) : 1);
	if (!out->sums)
		return SQK_ENOMEM;
	for (uint64_t k = 0; k < n; k++)
		out->sums[k] = sqk_get_le64(blk + 8 * k);
	out->at = at;
	out->len = l;
	out->n = n;
	out->algorithm = SQK_FAST_XXH3_64;
	return 0;
}

/* Borrows ig, f and data. */
int sqk_integ_fast_check_chunk(const struct sqk_integ *ig, const struct sqk_integ_fast *f,
			       uint64_t k, const void *data, size_t len)
{
	if (k >= f->n || len != ig->t.chunk_size)
		return SQK_ECORRUPT;
	return XXH3_64bits(data, len) == f->sums[k] ? 0 : SQK_ECORRUPT;
}
