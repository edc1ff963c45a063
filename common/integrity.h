/* SPDX-License-Identifier: BSD-2-Clause */
/* squashkit integrity data: SHA-256 hashes of every chunk of the image file, appended after the
 * (padded) SquashFS image, found from the end of the file and protected by a root digest, and
 * a block of fast checksums (XXH3-64) of the same chunks inside the covered bytes, which
 * verified reads use when no root hash is pinned. The kernel, unsquashfs and squashfuse ignore
 * everything past bytes_used.
 *
 * File layout (all integers little-endian):
 *   [0, covered)                 the SquashFS image, padded to 4 KiB (covered = its length),
 *                                then, still inside `covered` (so the digests cover them):
 *                                  the prefetch hint block, if any (common/hint.h), and
 *                                  the fast checksum block, if any, ending at `covered`
 *   [covered, covered + 32*n)    n = ceil(covered / chunk_size) SHA-256 digests, chunk k covering
 *                                bytes [k*chunk_size, min((k+1)*chunk_size, covered))
 *   version 2 only (a digest tree):
 *   [groups_at, groups_at + 32*ngroups)  group digests: G[g] = SHA-256 of the 32-byte digests
 *                                of chunks [g*group_chunks, min((g+1)*group_chunks, n)), in order
 *   zero bytes                   so that the trailer ends on a 4 KiB boundary
 *   trailer, 128 bytes, last in the file:
 *     0   u8[8]  magic "SQKINTG1"
 *     8   u32    version (1: flat digests; 2: a digest tree)
 *     12  u32    chunk_size (power of two, 4 KiB .. 1 MiB)
 *     16  u64    covered
 *     24  u64    hashes_at (== covered)
 *     32  u64    nchunks
 *     40  u8[32] root digest (below)
 *     version 1:
 *     72  u8[48] zero
 *     version 2:
 *     72  u32    group_chunks (digests per group, power of two, 64 .. 65536)
 *     76  u32    zero
 *     80  u64    groups_at (== covered + 32*nchunks)
 *     88  u64    ngroups (== ceil(nchunks / group_chunks))
 *     96  u8[24] zero
 *     120 u8[8]  magic "SQKINTG1"
 * Root digest, version 1: SHA-256(trailer with the root zeroed || chunk digest array);
 * version 2: SHA-256(trailer with the root zeroed || group digest array).
 * The root digest authenticates the trailer and every chunk digest (in version 2 through the
 * group digests), hence every byte of the image: `sqk verify --root-hash HEX` compares it with
 * a digest published out of band. Version 2 exists for images whose digest array is large
 * (sqk mkimage writes it when the digests would exceed SQK_INTEG_FLAT_MAX, or always with
 * --digest-tree; version 1 otherwise): a reader trusts one group of chunk digests after
 * reading only the trailer, the group array and that group (a remote image fetches groups on
 * demand). An sqk older than version 2 refuses such a trailer as damaged; the kernel,
 * unsquashfs and squashfuse ignore it, as everything past bytes_used. The length of the whole
 * area follows from the trailer alone (integ_end).
 *
 * The fast checksum block, [at, covered) with at = covered - len (sqk mkimage writes it with
 * the integrity data; images from before it have none, and readers that do not know it see
 * bytes the digests cover, like the hint):
 *   at + 8*k          u64 XXH3-64 (seed 0) of chunk k, for k in [0, n), n = at / chunk_size:
 *                     every chunk that ends at or before `at` (the chunks from there on hold the
 *                     hint or this block, or straddle them, and are always checked by SHA-256)
 *   ...               zero
 *   covered - 32      footer: u64 n, u64 len (a multiple of 4096, exactly what n entries and the
 *                     footer round up to), u32 version (1), u32 algorithm (1 = XXH3-64),
 *                     u8[8] magic "SQKFAST1"
 * The hint, if any, then ends at `at` (instead of at `covered`). A block of another version or
 * algorithm (same footer positions of len and magic) is skipped: reads use SHA-256.
 * What each protects against: XXH3-64 is a checksum, it detects corruption (a flipped bit, a
 * torn or misplaced write) but not a deliberate change, which can keep it; the fast block's own
 * bytes are covered by the SHA-256 digests, checked when it is loaded. Only SHA-256 reads with
 * a pinned root digest (opts.root_hash, sqk verify --root-hash) detect tampering. */
#ifndef SQK_INTEGRITY_H
#define SQK_INTEGRITY_H

#include "sqk/types.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sqk/io.h"

#define SQK_INTEG_MAGIC "SQKINTG1"
#define SQK_INTEG_TRAILER_SIZE 128u
#define SQK_INTEG_CHUNK_DEFAULT 65536u
#define SQK_INTEG_CHUNK_MIN 4096u
#define SQK_INTEG_CHUNK_MAX 1048576u
/* The builder writes a digest tree when the chunk digests would take more than this. */
#define SQK_INTEG_FLAT_MAX ((uint64_t)4 << 20)
#define SQK_INTEG_GROUP_DEFAULT 4096u /* digests per group: 128 KiB of them */
#define SQK_INTEG_GROUP_MIN 64u
#define SQK_INTEG_GROUP_MAX 65536u

void integ_trailer_encode(const struct sqk_integ_trailer *t,
			      uint8_t out[SQK_INTEG_TRAILER_SIZE]);
/* Decodes and checks magics, version, chunk size, group size, the consistency of the counts
 * and offsets (without overflow) and the zero bytes. SQK_ENOENT without either magic. */
int integ_trailer_decode(const uint8_t in[SQK_INTEG_TRAILER_SIZE],
			     struct sqk_integ_trailer *t);

/* Where the integrity data of a decoded trailer ends (the file's size: the trailer ends on a
 * 4 KiB boundary after the digests, and the group digests in version 2); 0 when that would
 * overflow. The one computation of the area's length, for every version. */
uint64_t integ_end(const struct sqk_integ_trailer *t);

/* The extent of the image at the start of an object of dev bytes behind io (borrowed): the
 * padded image (bytes_used rounded up to 4 KiB) with its hint, fast checksums and integrity
 * data when a trailer for it follows (its first chunk's digest matching: not a trailer left
 * by another image); dev when there is no superblock or it claims more than dev. */
uint64_t integ_extent(struct sqk_io *io, uint64_t dev);

/* What follows an image's integrity data in its file (layout: docs/format.md): [0, end) the
 * image with its integrity data; [verity_at, verity_end) an appended dm-verity area (empty:
 * none); [sig_at, sig_at + sig_len) the signature block that ends the file (sig_len 0: none). */
struct integ_where {
	uint64_t end;
	uint64_t verity_at, verity_end;
	uint64_t sig_at, sig_len;
};

/* Finds them in the file of size bytes behind io (borrowed): a trailer's magic at the end
 * means nothing follows (end = size); else a signature block's footer there gives end and the
 * block (and the dm-verity area between them, checked); else an appended dm-verity area. 0
 * (also when none is there: end = size); SQK_ECORRUPT with why (len bytes) saying what is
 * damaged; an I/O error. */
int integ_locate(struct sqk_io *io, uint64_t size, struct integ_where *w, char *why,
		 size_t len);

/* Zero bytes at the end of a file without a trailer are padding (a file grown to a size of
 * its own); a cut anywhere in integrity data leaves a digest within this span of the end. */
#define SQK_INTEG_ZERO_SPAN 8192u

/* Whether the last bytes of [from, size) behind io (borrowed), at most SQK_INTEG_ZERO_SPAN of
 * them, are all zero (true when from == size). */
bool integ_tail_zero(struct sqk_io *io, uint64_t from, uint64_t size);

/* A file of size bytes that ends with zeros and has no trailer at its end may hold an image
 * whose integrity data was grown to a size of its own (a disk image): where that integrity
 * data ends (integ_extent), else size. Borrows io. */
uint64_t integ_grown_end(struct sqk_io *io, uint64_t size);

/* A file of size bytes without a trailer at its end, its image starting at start with
 * bytes_used: whether the bytes after the padded image (*padded, bytes_used rounded up to
 * 4 KiB) are integrity data cut or damaged. Not when the file ends at bytes_used or at the
 * padded end, or with zero bytes (integ_tail_zero). Borrows io. */
bool integ_cut(struct sqk_io *io, uint64_t size, uint64_t start, uint64_t bytes_used,
	       uint64_t *padded);

/* Where what integ_load_lazy reads starts: the chunk digests (version 1), the group
 * digests (version 2). */
uint64_t integ_lazy_start(const struct sqk_integ_trailer *t);

/* ---- writing (the builder) ---- */

struct integ_writer;

/* Creates a streaming hasher for chunk_size (0 = default). Caller owns *out. It writes a flat
 * digest array (version 1) unless the digests exceed SQK_INTEG_FLAT_MAX, then a digest tree of
 * SQK_INTEG_GROUP_DEFAULT digests a group (integ_writer_tree changes both). */
int integ_writer_create(uint32_t chunk_size, struct integ_writer **out);

/* Before finish: a digest tree of group_chunks digests a group (0 = SQK_INTEG_GROUP_DEFAULT;
 * else a power of two, SQK_INTEG_GROUP_MIN .. MAX) when the digests take more than flat_max
 * bytes (0: always). SQK_EINVAL for a bad group size. */
int integ_writer_tree(struct integ_writer *w, uint32_t group_chunks,
				  uint64_t flat_max);

/* Feeds the bytes written at off. Writes must be sequential, except that bytes inside the first
 * chunk may be rewritten (the superblock is written last): that chunk is hashed at finish. */
int integ_writer_update(struct integ_writer *w, uint64_t off, const void *data,
			    size_t len);

/* Ends at `covered` bytes (all fed). Returns in *blob (caller frees) the bytes to append at
 * `covered` (digests, padding, trailer) and the root digest. */
int integ_writer_finish(struct integ_writer *w, uint64_t covered, uint8_t **blob,
			    size_t *blob_len, uint8_t root[SQK_INTEG_DIGEST_SIZE]);

/* Destroys w; NULL-safe. */
void integ_writer_destroy(struct integ_writer *w);

/* ---- reading ---- */

struct integ_lazy;

struct integ {
	struct sqk_integ_trailer t;
	uint8_t *digests; /* version 1: nchunks * 32 bytes (owned); NULL in version 2 */
	uint8_t *groups;  /* version 2: ngroups * 32 group digests (owned); NULL in version 1 */
	struct integ_lazy *lazy; /* version 2: the groups of chunk digests accepted (owned) */
	uint64_t file_size;
};

/* Loads the integrity data of the file behind io (file_size bytes), all of it: every chunk
 * digest, checked (in version 2 each group against its group digest). SQK_ENOENT when there is
 * none (no trailer magic); SQK_ECORRUPT when the trailer, the padding, the digest array or a
 * group do not match the root digest. Fills out (free with integ_free). */
int integ_load(struct sqk_io *io, uint64_t file_size, struct integ *out);

/* Loads the trailer and what the root digest covers, from integ_lazy_start on, and checks
 * the root: in version 1 that is the whole digest array (the same as integ_load); in
 * version 2 the group digests only, and no chunk digest is known until its group is accepted
 * (integ_group_accept; integ_check_chunk says SQK_ENOENT before). Errors and out as
 * integ_load. */
int integ_load_lazy(struct sqk_io *io, uint64_t file_size, struct integ *out);

/* After integ_load_lazy: reads every group of chunk digests from io (borrowed) and accepts
 * those that match their group digest; *nbad counts the others (left unknown: their chunks
 * fail integ_check_chunk with SQK_ENOENT), each also passed to on_bad (NULL = none) with
 * ctx. 0, or an I/O error. No-op in version 1. */
int integ_accept_groups(struct sqk_io *io, struct integ *ig, uint64_t *nbad,
			    void (*on_bad)(void *ctx, const struct integ *ig, uint64_t g),
			    void *ctx);

/* The group of chunk k (0 in version 1, which has one "group": the whole array). */
uint64_t integ_group_of(const struct integ *ig, uint64_t k);

/* Group g (< ngroups): its chunks [*k0, *k1) and the file bytes [*start, *end) that hold their
 * digests. Borrows ig. */
void integ_group_range(const struct integ *ig, uint64_t g, uint64_t *k0,
				   uint64_t *k1, uint64_t *start, uint64_t *end);

/* Whether the digests of group g are known (always after a full load). Thread-safe. */
bool integ_group_loaded(const struct integ *ig, uint64_t g);

/* The chunk digests of group g (borrowed from ig: (k1 - k0) * 32 bytes, integ_group_range),
 * or NULL when they are not known. Thread-safe. */
const uint8_t *integ_group_digests(const struct integ *ig, uint64_t g);

/* Checks data (the whole of group g's digests, integ_group_range) against its group digest:
 * 0 or SQK_ECORRUPT. Thread-safe; keeps nothing. */
int integ_group_check(const struct integ *ig, uint64_t g, const void *data,
				  size_t len);

/* After integ_load_lazy: checks data as integ_group_check and keeps a copy (ig owns
 * it), so the chunks of group g can be checked from then on. 0 also when it was known already;
 * SQK_ECORRUPT (nothing kept), SQK_ENOMEM, SQK_EINVAL without a lazy load. Thread-safe, also
 * against integ_check_chunk. Borrows data. */
int integ_group_accept(struct integ *ig, uint64_t g, const void *data,
				   size_t len);

/* Frees what integ_load allocated; NULL-safe. */
void integ_free(struct integ *ig);

/* Byte range [*start, *end) of chunk k. */
void integ_chunk_range(const struct integ *ig, uint64_t k, uint64_t *start,
			   uint64_t *end);

/* Checks data (the whole of chunk k) against its digest: 0 or SQK_ECORRUPT; SQK_ENOENT when
 * the digests of its group are not loaded yet (lazy loads). Thread-safe. */
int integ_check_chunk(const struct integ *ig, uint64_t k, const void *data, size_t len);

/* SHA-256 of data into out. */
void hash_sha256(const void *data, size_t len, uint8_t out[SQK_INTEG_DIGEST_SIZE]);

/* Lower-case hex of a digest (65 bytes with the NUL). */
void integ_hex(const uint8_t d[SQK_INTEG_DIGEST_SIZE], char out[2 * SQK_INTEG_DIGEST_SIZE + 1]);

/* Parses 64 hex digits; SQK_EINVAL otherwise. */
int integ_parse_hex(const char *hex, uint8_t out[SQK_INTEG_DIGEST_SIZE]);

/* ---- fast checksums (XXH3-64 per chunk, inside `covered`) ---- */

#define SQK_FAST_MAGIC "SQKFAST1"
#define SQK_FAST_VERSION 1u
#define SQK_FAST_XXH3_64 1u
#define SQK_FAST_FOOTER_SIZE 32u
#define SQK_FAST_ALIGN 4096u

/* A decoded fast checksum block. */
struct integ_fast {
	uint64_t at;        /* offset of the block (its end is the trailer's covered) */
	uint64_t len;       /* its length */
	uint64_t n;         /* entries: chunks [0, n) */
	uint32_t algorithm; /* SQK_FAST_XXH3_64 */
	uint64_t *sums;     /* n checksums (owned; integ_fast_free) */
};

/* XXH3-64 (seed 0) of data. */
uint64_t hash_xxh3_64(const void *data, size_t len);

/* The length of a block of n entries (a multiple of 4096), 0 when it would overflow. */
uint64_t integ_fast_len(uint64_t n);

/* Reads the footer (the last 32 bytes of [0, t->covered)) of a block that must start at or
 * after min_start (the padded image, or the end of what precedes it). SQK_ENOENT without the
 * magic; SQK_ECORRUPT when len is not a multiple of 4096 or does not fit in
 * [min_start, covered); *at and *len are then set, and SQK_EUNSUPPORTED is returned for another
 * version or algorithm (a block to skip); SQK_ECORRUPT when n is not at / chunk_size or len not
 * the length n entries take. */
int integ_fast_footer(const uint8_t footer[SQK_FAST_FOOTER_SIZE],
				  const struct sqk_integ_trailer *t, uint64_t min_start,
				  uint64_t *at, uint64_t *len, uint64_t *n);

/* Decodes the whole block blk[0..len) (borrowed), distrusting every field: the footer as
 * above, the zero bytes between the entries and the footer. Fills out (integ_fast_free,
 * also after a failure); errors as integ_fast_footer, or SQK_ENOMEM. */
int integ_fast_decode(const uint8_t *blk, size_t len,
				  const struct sqk_integ_trailer *t, uint64_t min_start,
				  struct integ_fast *out);

/* Frees what f owns; NULL-safe. */
void integ_fast_free(struct integ_fast *f);

/* Checks data (the whole of chunk k < f->n) against its fast checksum: 0 or SQK_ECORRUPT.
 * Thread-safe. */
int integ_fast_check_chunk(const struct integ *ig,
				       const struct integ_fast *f, uint64_t k,
				       const void *data, size_t len);

/* The builder: the fast checksum block to write at `at` (everything before it fed, the
 * superblock included: chunk 0 may not change after this call; at a multiple of 4096), for
 * the chunks [0, at / chunk_size). Returns in *blk (caller frees) the block of *len bytes, to
 * feed through integ_writer_update at `at` like the image; *blk NULL and *len 0 when
 * there is no whole chunk before `at` (no block). Once per writer. */
int integ_writer_fast(struct integ_writer *w, uint64_t at, uint8_t **blk,
				  size_t *len);

#endif
