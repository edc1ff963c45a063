/* SPDX-License-Identifier: BSD-2-Clause */
/* dm-verity hash trees (layout in verity.h): the superblock codec, the tree's geometry, the
 * streaming builder (level 0 as the image is written, the upper levels at the end), the search
 * for an appended area, and the checker. */
#include "verity.h"

#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>

#include "bytes.h"
#include "endian.h"
#include "grow.h"
#include "integrity.h"
#include "sqk/error.h"

/* 128 digests a block: ten levels cover 2^70 blocks, more than any 64-bit size. */
#define MAX_LEVELS 10
/* Data blocks under one level-0 block: what verity_check reads at a time. */
#define BATCH VERITY_FANOUT

void verity_sb_encode(const struct verity_sb *sb, uint8_t out[VERITY_SB_SIZE])
{
	memset(out, 0, VERITY_SB_SIZE);
	memcpy(out, VERITY_MAGIC, 8);
	put_le32(out + 8, sb->version);
	put_le32(out + 12, sb->hash_type);
	memcpy(out + 16, sb->uuid, 16);
	memcpy(out + 32, sb->algorithm, strnlen(sb->algorithm, 32));
	put_le32(out + 64, sb->data_block_size);
	put_le32(out + 68, sb->hash_block_size);
	put_le64(out + 72, sb->data_blocks);
	put_le16(out + 80, sb->salt_size);
	memcpy(out + 88, sb->salt, sb->salt_size <= VERITY_SALT_MAX ? sb->salt_size : 0);
}

/* A block size veritysetup accepts: a power of two from 512 to 1 MiB. */
static bool block_size_valid(uint32_t s)
{
	return s >= 512 && s <= (1u << 20) && !(s & (s - 1));
}

int verity_sb_decode(const uint8_t in[VERITY_SB_SIZE], struct verity_sb *sb)
{
	if (memcmp(in, VERITY_MAGIC, 8))
		return SQK_ENOENT;
	memset(sb, 0, sizeof(*sb));
	sb->version = get_le32(in + 8);
	sb->hash_type = get_le32(in + 12);
	memcpy(sb->uuid, in + 16, 16);
	memcpy(sb->algorithm, in + 32, 32);
	sb->data_block_size = get_le32(in + 64);
	sb->hash_block_size = get_le32(in + 68);
	sb->data_blocks = get_le64(in + 72);
	sb->salt_size = get_le16(in + 80);
	if (sb->version != 1 || sb->hash_type > 1 || sb->salt_size > VERITY_SALT_MAX ||
	    !block_size_valid(sb->data_block_size) || !block_size_valid(sb->hash_block_size) ||
	    !sb->data_blocks || !bytes_all_zero(in + 82, 6) ||
	    !bytes_all_zero(in + 88 + sb->salt_size, VERITY_SB_SIZE - 88 - sb->salt_size))
		return SQK_ECORRUPT;
	memcpy(sb->salt, in + 88, sb->salt_size);
	if (sb->hash_type != 1 || strcmp(sb->algorithm, "sha256") ||
	    sb->data_block_size != VERITY_BLOCK || sb->hash_block_size != VERITY_BLOCK)
		return SQK_EUNSUPPORTED;
	return 0;
}

/* The levels of the tree over n data blocks: their count, and blocks[i] the blocks of level i
 * (level 0 holds the data blocks' digests). None for a single block. */
static int tree_levels(uint64_t n, uint64_t blocks[MAX_LEVELS])
{
	int nlev = 0;

	while (n > 1 && nlev < MAX_LEVELS) {
		n = n / VERITY_FANOUT + (n % VERITY_FANOUT != 0);
		blocks[nlev++] = n;
	}
	return nlev;
}

/* The offset, from the area's start, of level i's first block: the top level comes first, right
 * after the superblock's block. */
static uint64_t level_at(const uint64_t blocks[MAX_LEVELS], int nlev, int i)
{
	uint64_t b = 1;

	for (int j = nlev - 1; j > i; j--)
		b += blocks[j];
	return b * VERITY_BLOCK;
}

uint64_t verity_tree_blocks(uint64_t n)
{
	uint64_t blocks[MAX_LEVELS], sum = 0;
	int nlev = tree_levels(n, blocks);

	for (int i = 0; i < nlev; i++)
		sum += blocks[i];
	return sum;
}

uint64_t verity_area_len(uint64_t n)
{
	uint64_t b = verity_tree_blocks(n) + 1;

	return n && b <= UINT64_MAX / VERITY_BLOCK ? b * VERITY_BLOCK : 0;
}

/* SHA-256(salt || blk[0..4096)) into out, from the salted context. */
static int hash_block(EVP_MD_CTX *salted, EVP_MD_CTX *ctx, const uint8_t *blk, uint8_t *out)
{
	return EVP_MD_CTX_copy_ex(ctx, salted) && EVP_DigestUpdate(ctx, blk, VERITY_BLOCK) &&
		       EVP_DigestFinal_ex(ctx, out, NULL) ? 0 : SQK_ENOMEM;
}

/* A SHA-256 context with salt[0..len) absorbed, into *out (caller frees). */
static int salted_ctx(const uint8_t *salt, size_t len, EVP_MD_CTX **out)
{
	EVP_MD_CTX *c = EVP_MD_CTX_new();

	if (!c || !EVP_DigestInit_ex(c, EVP_sha256(), NULL) || !EVP_DigestUpdate(c, salt, len)) {
		EVP_MD_CTX_free(c);
		return SQK_ENOMEM;
	}
	*out = c;
	return 0;
}

/* ---- the builder ---- */

struct verity_builder {
	EVP_MD_CTX *salted;   /* SHA-256 with the salt absorbed: each block starts from a copy */
	EVP_MD_CTX *ctx;      /* the block stream_pos is in */
	uint8_t block0[VERITY_BLOCK]; /* hashed at finish */
	uint64_t stream_pos;  /* the next offset expected, from VERITY_BLOCK on */
	uint8_t *level0;      /* the data blocks' digests, slot 0 (block 0) filled at finish */
	size_t cap;           /* digest slots allocated in level0 (mem_grow) */
	uint64_t n;           /* slots in use, slot 0 included */
	int nlev;             /* after finish: the levels, */
	uint64_t blocks[MAX_LEVELS]; /* their blocks, */
	uint8_t *upper[MAX_LEVELS]; /* levels 1.. (owned; upper[0] unused: level0) */
	bool finished;
	struct verity_sb sb;  /* salt from create, the rest at finish */
};

/* Caller owns *out (verity_builder_destroy). */
int verity_builder_create(const uint8_t *salt, size_t salt_len, struct verity_builder **out)
{
	struct verity_builder *b;

	*out = NULL;
	if (salt_len > VERITY_SALT_MAX)
		return SQK_EINVAL;
	b = calloc(1, sizeof(*b));
	if (!b)
		return SQK_ENOMEM;
	b->stream_pos = VERITY_BLOCK;
	b->n = 1;
	b->sb.version = 1;
	b->sb.hash_type = 1;
	memcpy(b->sb.algorithm, "sha256", 7);
	b->sb.data_block_size = VERITY_BLOCK;
	b->sb.hash_block_size = VERITY_BLOCK;
	b->sb.salt_size = (uint16_t)salt_len;
	if (salt_len)
		memcpy(b->sb.salt, salt, salt_len);
	b->ctx = EVP_MD_CTX_new();
	if (!b->ctx || salted_ctx(b->sb.salt, salt_len, &b->salted) ||
	    mem_grow(&b->level0, &b->cap, 1024, VERITY_DIGEST, 0)) {
		verity_builder_destroy(b);
		return SQK_ENOMEM;
	}
	*out = b;
	return 0;
}

/* Destroys b; NULL-safe. */
void verity_builder_destroy(struct verity_builder *b)
{
	if (!b)
		return;
	EVP_MD_CTX_free(b->salted);
	EVP_MD_CTX_free(b->ctx);
	free(b->level0);
	for (int i = 1; i < MAX_LEVELS; i++)
		free(b->upper[i]);
	free(b);
}

/* Stores the digest of the block just completed in the next level-0 slot. */
static int close_block(struct verity_builder *b)
{
	int err = b->n < SIZE_MAX ? mem_grow(&b->level0, &b->cap, (size_t)b->n + 1,
					     VERITY_DIGEST, 0) : SQK_ENOMEM;

	if (err)
		return err;
	if (!EVP_DigestFinal_ex(b->ctx, b->level0 + b->n * VERITY_DIGEST, NULL))
		return SQK_ENOMEM;
	b->n++;
	return 0;
}

/* Borrows data for the call. */
int verity_builder_update(struct verity_builder *b, uint64_t off, const void *data, size_t len)
{
	const uint8_t *p = data;

	if (b->finished)
		return SQK_EINVAL;
	if (off < VERITY_BLOCK) {
		size_t k = VERITY_BLOCK - off < len ? (size_t)(VERITY_BLOCK - off) : len;

		memcpy(b->block0 + off, p, k);
		p += k;
		off += k;
		len -= k;
	}
	if (len && off != b->stream_pos)
		return SQK_EINVAL;
	while (len) {
		size_t at = (size_t)(b->stream_pos % VERITY_BLOCK);
		size_t k = VERITY_BLOCK - at < len ? VERITY_BLOCK - at : len;
		int err;

		if (at == 0 && !EVP_MD_CTX_copy_ex(b->ctx, b->salted))
			return SQK_ENOMEM;
		if (!EVP_DigestUpdate(b->ctx, p, k))
			return SQK_ENOMEM;
		p += k;
		len -= k;
		b->stream_pos += k;
		if (at + k == VERITY_BLOCK && (err = close_block(b)))
			return err;
	}
	return 0;
}

/* Level i (>= 1) from level i - 1: the digest of each of its blocks. */
static int build_level(struct verity_builder *b, int i)
{
	const uint8_t *below = i == 1 ? b->level0 : b->upper[i - 1];

	b->upper[i] = calloc((size_t)b->blocks[i], VERITY_BLOCK);
	if (!b->upper[i])
		return SQK_ENOMEM;
	for (uint64_t j = 0; j < b->blocks[i - 1]; j++) {
		int err = hash_block(b->salted, b->ctx, below + j * VERITY_BLOCK,
				     b->upper[i] + j * VERITY_DIGEST);
		if (err)
			return err;
	}
	return 0;
}

/* Level 0 as whole blocks: its slots up to the end of its last block, zero after the digests. */
static int pad_level0(struct verity_builder *b)
{
	uint64_t slots = b->blocks[0] * VERITY_FANOUT;
	int err = slots <= SIZE_MAX ? mem_grow(&b->level0, &b->cap, (size_t)slots, VERITY_DIGEST, 0)
				    : SQK_ENOMEM;

	if (!err)
		memset(b->level0 + b->n * VERITY_DIGEST, 0, (size_t)(slots - b->n) * VERITY_DIGEST);
	return err;
}

int verity_builder_finish(struct verity_builder *b, uint64_t end, uint8_t root[VERITY_DIGEST])
{
	int err = 0;

	if (b->finished || !end || end % VERITY_BLOCK || b->stream_pos != (end > VERITY_BLOCK ?
									  end : VERITY_BLOCK))
		return SQK_EINVAL;
	if (b->n != end / VERITY_BLOCK)
		return SQK_EINVAL;
	err = hash_block(b->salted, b->ctx, b->block0, b->level0);
	b->nlev = tree_levels(b->n, b->blocks);
	if (!err && b->nlev)
		err = pad_level0(b);
	for (int i = 1; !err && i < b->nlev; i++)
		err = build_level(b, i);
	if (err)
		return err;
	if (b->nlev) /* the top level's one block */
		err = hash_block(b->salted, b->ctx,
				 b->nlev == 1 ? b->level0 : b->upper[b->nlev - 1], root);
	else /* the one data block's digest */
		memcpy(root, b->level0, VERITY_DIGEST);
	if (err)
		return err;
	b->finished = true;
	b->sb.data_blocks = b->n;
	memcpy(b->sb.uuid, root + VERITY_DIGEST - 16, 16);
	return 0;
}

/* Fills the caller's *sb. */
void verity_builder_sb(const struct verity_builder *b, struct verity_sb *sb)
{
	*sb = b->sb;
}

/* Borrows io. */
int verity_builder_write(const struct verity_builder *b, struct sqk_io *io, uint64_t at)
{
	uint8_t head[VERITY_BLOCK] = { 0 };
	int err;

	if (!b->finished)
		return SQK_EINVAL;
	verity_sb_encode(&b->sb, head);
	err = sqk_io_write_at(io, at, head, sizeof(head));
	for (int i = b->nlev - 1; !err && i >= 0; i--)
		err = sqk_io_write_at(io, at + level_at(b->blocks, b->nlev, i),
				      i ? b->upper[i] : b->level0,
				      (size_t)(b->blocks[i] * VERITY_BLOCK));
	return err;
}

/* ---- finding an appended area ---- */

/* The n >= 1 whose area is exactly m blocks long after the data (n + 1 + tree blocks = m), or
 * 0 when none is: n + tree blocks grows strictly with n, so a binary search finds it. */
static uint64_t solve_blocks(uint64_t m)
{
	uint64_t lo = 1, hi = m;

	while (lo < hi) {
		uint64_t mid = lo + (hi - lo) / 2;

		if (mid + 1 + verity_tree_blocks(mid) < m)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo + 1 + verity_tree_blocks(lo) == m ? lo : 0;
}

/* Borrows io; fills the caller's *data_end. */
int verity_appended(struct sqk_io *io, uint64_t area_end, uint64_t *data_end)
{
	uint8_t raw[VERITY_SB_SIZE];
	struct verity_sb sb;
	uint64_t n;
	int err;

	if (area_end % VERITY_BLOCK || area_end < 2 * VERITY_BLOCK)
		return SQK_ENOENT;
	n = solve_blocks(area_end / VERITY_BLOCK);
	if (!n)
		return SQK_ENOENT;
	err = sqk_io_read_at(io, n * VERITY_BLOCK, raw, sizeof(raw));
	if (err)
		return err;
	err = verity_sb_decode(raw, &sb);
	if (err == SQK_ENOENT)
		return err;
	*data_end = n * VERITY_BLOCK;
	return err || sb.data_blocks != n ? SQK_ECORRUPT : 0;
}

/* ---- checking ---- */

/* What one verity_check run reads with. */
struct checker {
	struct verity_check *out;
	EVP_MD_CTX *salted, *ctx;
	uint8_t *src;             /* BATCH blocks of the level below */
	uint8_t dst[VERITY_BLOCK]; /* one block of the level checked */
};

/* A finding: a data block (data) or a hash block at offset `at` that does not match. */
static void found(struct verity_check *o, bool data, uint64_t at)
{
	uint64_t *count = data ? &o->bad_data : &o->bad_hash;
	uint64_t *first = data ? &o->first_bad_data : &o->first_bad_hash;

	(*count)++;
	if (at < *first)
		*first = at;
}

/* Checks count blocks at src_at in src (data blocks when data, else a level of the tree)
 * against their digests in the level at dst_at in dst, 128 to a block, and that level's zero
 * padding. */
static int check_level(struct checker *k, struct sqk_io *src, uint64_t src_at, uint64_t count,
		       struct sqk_io *dst, uint64_t dst_at, bool data)
{
	uint8_t d[VERITY_DIGEST];

	for (uint64_t j = 0; j * VERITY_FANOUT < count; j++) {
		uint64_t k0 = j * VERITY_FANOUT, nk = count - k0 < BATCH ? count - k0 : BATCH;
		int err = sqk_io_read_at(dst, dst_at + j * VERITY_BLOCK, k->dst, VERITY_BLOCK);

		if (!err)
			err = sqk_io_read_at(src, src_at + k0 * VERITY_BLOCK, k->src,
					     (size_t)nk * VERITY_BLOCK);
		for (uint64_t i = 0; !err && i < nk; i++) {
			uint64_t at = data ? k0 + i : src_at + (k0 + i) * VERITY_BLOCK;

			err = hash_block(k->salted, k->ctx, k->src + i * VERITY_BLOCK, d);
			if (!err && memcmp(d, k->dst + i * VERITY_DIGEST, VERITY_DIGEST))
				found(k->out, data, at);
		}
		if (err)
			return err;
		if (!bytes_all_zero(k->dst + nk * VERITY_DIGEST,
				    (size_t)(BATCH - nk) * VERITY_DIGEST))
			found(k->out, false, dst_at + j * VERITY_BLOCK);
	}
	return 0;
}

/* Reads and checks the superblock at hash_at, and that the data and the tree fit. */
static int check_geometry(struct sqk_io *hash, uint64_t hash_at, uint64_t data_size,
			  struct verity_check *o)
{
	uint8_t raw[VERITY_SB_SIZE];
	uint64_t hash_size, area;
	int err = sqk_io_get_size(hash, &hash_size);

	if (err)
		return err;
	if (hash_at > hash_size || hash_size - hash_at < sizeof(raw))
		return SQK_ENOENT;
	err = sqk_io_read_at(hash, hash_at, raw, sizeof(raw));
	if (!err)
		err = verity_sb_decode(raw, &o->sb);
	if (err)
		return err;
	area = verity_area_len(o->sb.data_blocks);
	if (o->sb.data_blocks > data_size / VERITY_BLOCK || !area || area > hash_size - hash_at)
		return SQK_ECORRUPT;
	o->data_end = o->sb.data_blocks * VERITY_BLOCK;
	return 0;
}

/* Every level against the one below it, then the root: the top level's digest as stored. */
static int check_tree(struct checker *k, struct sqk_io *data, struct sqk_io *hash,
		      uint64_t hash_at)
{
	uint64_t blocks[MAX_LEVELS], n = k->out->sb.data_blocks;
	int nlev = tree_levels(n, blocks), err = 0;

	if (nlev)
		err = check_level(k, data, 0, n, hash, hash_at + level_at(blocks, nlev, 0), true);
	for (int i = 1; !err && i < nlev; i++)
		err = check_level(k, hash, hash_at + level_at(blocks, nlev, i - 1), blocks[i - 1],
				  hash, hash_at + level_at(blocks, nlev, i), false);
	if (err)
		return err;
	if (nlev) /* the top level's one block */
		err = sqk_io_read_at(hash, hash_at + level_at(blocks, nlev, nlev - 1), k->dst,
				     VERITY_BLOCK);
	else /* the one data block */
		err = sqk_io_read_at(data, 0, k->dst, VERITY_BLOCK);
	return err ? err : hash_block(k->salted, k->ctx, k->dst, k->out->root);
}

/* Borrows data, hash and root_want; fills the caller's *out. */
int verity_check(struct sqk_io *data, uint64_t data_size, struct sqk_io *hash, uint64_t hash_at,
		 const uint8_t *root_want, struct verity_check *out)
{
	struct checker k = { .out = out };
	int err;

	memset(out, 0, sizeof(*out));
	out->first_bad_data = UINT64_MAX;
	out->first_bad_hash = UINT64_MAX;
	err = check_geometry(hash, hash_at, data_size, out);
	if (err)
		return err;
	k.src = malloc((size_t)BATCH * VERITY_BLOCK);
	k.ctx = EVP_MD_CTX_new();
	err = !k.src || !k.ctx ? SQK_ENOMEM : salted_ctx(out->sb.salt, out->sb.salt_size,
							   &k.salted);
	if (!err)
		err = check_tree(&k, data, hash, hash_at);
	if (!err)
		out->root_ok = root_want && !memcmp(root_want, out->root, VERITY_DIGEST);
	free(k.src);
	EVP_MD_CTX_free(k.ctx);
	EVP_MD_CTX_free(k.salted);
	return err;
}
