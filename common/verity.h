/* SPDX-License-Identifier: BSD-2-Clause */
/* dm-verity hash trees, exactly as `veritysetup format` writes them with its defaults (format 1:
 * superblock version 1, hash type 1, SHA-256, 4096-byte data and hash blocks): the builder that
 * `sqk mkimage --verity` streams the image through, the search for a tree appended to an image
 * file, and the checker behind `sqk verify`. Not installed.
 *
 * The area (a sidecar file IMAGE.verity from offset 0, or appended to the image at E, which is
 * veritysetup's --hash-offset), all integers little-endian:
 *   0     the superblock, 512 bytes, then zero bytes to 4096:
 *           0   u8[8]   magic "verity\0\0"
 *           8   u32     version (1)
 *           12  u32     hash type (1: SHA-256(salt || block), digests padded to a power of two)
 *           16  u8[16]  uuid (sqk: the last 16 bytes of the root hash)
 *           32  u8[32]  algorithm, NUL-padded ("sha256")
 *           64  u32     data block size (4096)
 *           68  u32     hash block size (4096)
 *           72  u64     data blocks n (the data is [0, 4096 n): sqk's image end E = 4096 n)
 *           80  u16     salt size (0 .. 256)
 *           82  u8[6]   zero
 *           88  u8[256] salt, then zeros
 *           344 u8[168] zero
 *   4096  the tree, its top level first and level 0 last, each level a whole number of 4096-byte
 *         blocks: level 0 holds SHA-256(salt || data block k) for k in [0, n), 128 to a block;
 *         level i + 1 the digests of level i's blocks; the top level is one block. The bytes
 *         after the last digest of a level are zero. A single data block has no tree at all.
 * The root hash is SHA-256(salt || the top level's block), or of the one data block. */
#ifndef SQK_VERITY_H
#define SQK_VERITY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sqk/io.h"

#define VERITY_BLOCK 4096u
#define VERITY_DIGEST 32u
#define VERITY_SB_SIZE 512u
#define VERITY_SALT_MAX 256u
#define VERITY_MAGIC "verity\0\0"
/* Digests in one hash block. */
#define VERITY_FANOUT (VERITY_BLOCK / VERITY_DIGEST)

/* A decoded superblock. */
struct verity_sb {
	uint32_t version;
	uint32_t hash_type;
	uint8_t uuid[16];
	char algorithm[33];     /* NUL-terminated */
	uint32_t data_block_size;
	uint32_t hash_block_size;
	uint64_t data_blocks;
	uint16_t salt_size;
	uint8_t salt[VERITY_SALT_MAX];
};

/* Encodes sb (version, hash type and the rest as given; unused salt bytes zero) into out. */
void verity_sb_encode(const struct verity_sb *sb, uint8_t out[VERITY_SB_SIZE]);

/* Decodes and checks in, distrusting every field. SQK_ENOENT without the magic; SQK_ECORRUPT
 * for values no veritysetup writes (a version other than 1, a hash type above 1, a salt over 256
 * bytes, a block size that is not a power of two of 512 .. 1 MiB, no data block, non-zero
 * padding); SQK_EUNSUPPORTED for a valid superblock of other parameters than sqk's (hash type 0,
 * another algorithm, other block sizes). *sb is filled in every case but SQK_ENOENT. */
int verity_sb_decode(const uint8_t in[VERITY_SB_SIZE], struct verity_sb *sb);

/* Hash blocks of the tree over n data blocks (every level; not the superblock's block), 0 for
 * n <= 1. */
uint64_t verity_tree_blocks(uint64_t n);

/* Bytes of the whole area over n data blocks (the superblock's block and the tree); 0 when
 * n is 0 or the length would overflow. */
uint64_t verity_area_len(uint64_t n);

/* ---- building (sqk mkimage) ---- */

struct verity_builder;

/* A builder hashing with salt[0..salt_len) (borrowed; salt_len <= VERITY_SALT_MAX, else
 * SQK_EINVAL). Caller owns *out (verity_builder_destroy). */
int verity_builder_create(const uint8_t *salt, size_t salt_len, struct verity_builder **out);

/* Feeds the bytes written at off (borrowed for the call). Past the first block they must come
 * in order, each byte once (SQK_EINVAL otherwise); the first block may be written in any order
 * and rewritten until verity_builder_finish (the superblock of the image is written last), and
 * what of it is never written is zero. Each block is hashed as soon as it is whole. */
int verity_builder_update(struct verity_builder *b, uint64_t off, const void *data, size_t len);

/* Ends the data at `end` (a multiple of 4096, everything in [4096, end) fed): hashes the first
 * block, builds the levels above level 0 and gives the root hash. SQK_EINVAL when not all was
 * fed or end is not a whole number of blocks; SQK_ENOMEM. */
int verity_builder_finish(struct verity_builder *b, uint64_t end, uint8_t root[VERITY_DIGEST]);

/* After finish: the superblock the area starts with (its uuid: the last 16 bytes of the root),
 * copied into the caller's *sb. */
void verity_builder_sb(const struct verity_builder *b, struct verity_sb *sb);

/* After finish: writes the whole area (verity_area_len bytes) into io (borrowed) at `at`. */
int verity_builder_write(const struct verity_builder *b, struct sqk_io *io, uint64_t at);

/* Destroys b; NULL-safe. */
void verity_builder_destroy(struct verity_builder *b);

/* ---- reading ---- */

/* Finds a dm-verity area appended to an image whose area ends at area_end (the file's size, or
 * where a signature block starts): the E for which a superblock at E and the tree over E / 4096
 * data blocks end exactly at area_end, with a superblock there of sqk's parameters and
 * data_blocks == E / 4096. Borrows io. 0 with *data_end = E; SQK_ENOENT when there is no such
 * area (no E fits, or no magic at E); SQK_ECORRUPT when the superblock at E is damaged or of
 * other parameters (*data_end is set then too); an I/O error. */
int verity_appended(struct sqk_io *io, uint64_t area_end, uint64_t *data_end);


/* What verity_check found. */
struct verity_check {
	struct verity_sb sb;        /* the superblock read */
	uint64_t data_end;          /* 4096 * data blocks */
	uint64_t bad_data;          /* data blocks whose digest differs from level 0's */
	uint64_t first_bad_data;    /* the first of them, UINT64_MAX when none */
	uint64_t bad_hash;          /* hash blocks (levels above 0, and level 0's padding) that
				     * differ from what the level below gives */
	uint64_t first_bad_hash;    /* the first one's offset in the hash io, UINT64_MAX: none */
	uint8_t root[VERITY_DIGEST]; /* of the top level as stored (or of the one data block) */
	bool root_ok;               /* root equals root_want */
};

/* Checks the tree whose superblock is at hash_at in hash (a sidecar at 0, or the image's own io
 * at E) against the data in data (data_size bytes; both borrowed, possibly the same io): every
 * data block against level 0, every level against the one below, the zero padding, and the
 * root hash against root_want (32 bytes, NULL: not checked, root_ok false). Reads in bounded
 * pieces (never the whole tree). 0 when the check ran (findings in *out, which the caller owns);
 * SQK_ENOENT without a superblock; SQK_ECORRUPT / SQK_EUNSUPPORTED for a superblock as
 * verity_sb_decode says, or one whose data or tree does not fit in data_size or the hash io;
 * an I/O error; SQK_ENOMEM. */
int verity_check(struct sqk_io *data, uint64_t data_size, struct sqk_io *hash, uint64_t hash_at,
		 const uint8_t *root_want, struct verity_check *out);

#endif
