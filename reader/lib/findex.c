/* SPDX-License-Identifier: BSD-2-Clause */
/* Per-file block indexes: a file's size words read once, validated, with the position of every
 * 64th block checkpointed, so a read anywhere in a big file finds its block in a few additions.
 * Indexes live in a small LRU keyed by inode reference and are refcounted while in use. */
#include <stdlib.h>
#include <string.h>

#include "common/endian.h"
#include "internal.h"

#define FI_SLOTS 32u
#define FI_CHUNK 8192u /* size words read per step: the allocation follows real data */

struct findex_cache {
	pthread_mutex_t mu;
	struct findex *slot[FI_SLOTS];
	uint64_t clock;
};

/* Caller owns *out. */
int findex_cache_create(struct findex_cache **out)
{
	struct findex_cache *fc = calloc(1, sizeof(*fc));

	if (!fc)
		return SQK_ENOMEM;
	pthread_mutex_init(&fc->mu, NULL);
	*out = fc;
	return 0;
}

static void fi_free(struct findex *fi)
{
	if (fi) {
		free(fi->words);
		free(fi->ckpt);
		free(fi);
	}
}

/* Frees fc and its indexes; NULL-safe. */
void findex_cache_destroy(struct findex_cache *fc)
{
	if (!fc)
		return;
	for (unsigned i = 0; i < FI_SLOTS; i++)
		fi_free(fc->slot[i]);
	pthread_mutex_destroy(&fc->mu);
	free(fc);
}

/* Reads the size words incrementally, growing the array only as data actually decodes. */
static int read_words(struct sqk_image *img, const struct sqk_inode *in, struct findex *fi)
{
	struct mcur c;
	uint32_t done = 0, cap = 0;

	inode_cursor(img, in->body_ref, &c);
	while (done < fi->nblocks) {
		uint32_t n = fi->nblocks - done < FI_CHUNK ? fi->nblocks - done : FI_CHUNK;
		uint32_t *w = fi->words;
		int rc;

		/* Doubling (up to nblocks): growing by a chunk per step copies quadratically. Not
		 * mem_grow, which would double past nblocks: the array ends exactly nblocks long.
		 */
		if (done + n > cap) {
			cap = done + n > fi->nblocks / 2 ? fi->nblocks : 2 * (done + n);
			w = realloc(fi->words, (size_t)cap * 4);
			if (!w)
				return SQK_ENOMEM;
			fi->words = w;
		}
		rc = meta_read(img, &c, w + done, (size_t)n * 4);
		if (rc)
			return rc;
		for (uint32_t i = done; i < done + n; i++)
			w[i] = get_le32(&w[i]);
		done += n;
	}
	return 0;
}

/* Checks every size word and records checkpoints; the blocks must end within bytes_used. */
static int index_words(struct sqk_image *img, struct findex *fi)
{
	uint64_t pos = fi->blocks_start;

	fi->ckpt = malloc(((size_t)fi->nblocks / SQK_FI_STEP + 1) * sizeof(uint64_t));
	if (!fi->ckpt)
		return SQK_ENOMEM;
	fi->ckpt[0] = pos;
	for (uint32_t k = 0; k < fi->nblocks; k++) {
		uint32_t w = fi->words[k];
		int rc;

		if (k % SQK_FI_STEP == 0)
			fi->ckpt[k / SQK_FI_STEP] = pos;
		rc = w ? check_word(img, pos, w, fi->ino) : 0;
		if (rc)
			return rc;
		pos += w & SQK_BLOCK_SIZE_MASK;
	}
	fi->data_end = pos;
	return 0;
}

static int fi_build(struct sqk_image *img, const struct sqk_inode *in, struct findex **out)
{
	struct findex *fi = calloc(1, sizeof(*fi));
	uint32_t bs = img->sb.block_size;
	uint64_t nblocks;
	int rc;

	if (!fi)
		return SQK_ENOMEM;
	fi->ref = in->ref;
	fi->ino = in->ino;
	fi->size = in->size;
	fi->frag_index = in->frag_index;
	fi->frag_offset = in->frag_offset;
	fi->blocks_start = in->blocks_start;
	nblocks = in->size / bs + (in->frag_index == SQK_NONE32 && in->size % bs);
	fi->nblocks = (uint32_t)nblocks;
	rc = nblocks > UINT32_MAX ? SQK_ECORRUPT : read_words(img, in, fi);
	if (rc == 0)
		rc = index_words(img, fi);
	if (rc) {
		fi_free(fi);
		return rc;
	}
	*out = fi;
	return 0;
}

/* Position of block k: the checkpoint before it plus at most 63 size words. */
uint64_t findex_pos(const struct findex *fi, uint32_t k)
{
	uint64_t pos = fi->ckpt[k / SQK_FI_STEP];

	for (uint32_t j = k - k % SQK_FI_STEP; j < k; j++)
		pos += fi->words[j] & SQK_BLOCK_SIZE_MASK;
	return pos;
}

/* Decompressed size block k must have. */
size_t findex_expected(const struct sqk_image *img, const struct findex *fi, uint32_t k)
{
	uint64_t bs = img->sb.block_size;

	if (k + 1 == fi->nblocks && fi->frag_index == SQK_NONE32)
		return (size_t)(fi->size - (uint64_t)k * bs);
	return (size_t)bs;
}

static struct findex *find_slot(struct findex_cache *fc, uint64_t ref)
{
	for (unsigned i = 0; i < FI_SLOTS; i++) {
		struct findex *fi = fc->slot[i];

		if (fi && fi->ref == ref) {
			fi->refs++;
			fi->stamp = ++fc->clock;
			return fi;
		}
	}
	return NULL;
}

/* Puts fi into the least recently used slot; the evicted index is freed once unused. */
static void insert_slot(struct findex_cache *fc, struct findex *fi)
{
	unsigned victim = 0;

	for (unsigned i = 0; i < FI_SLOTS; i++) {
		if (!fc->slot[i]) {
			victim = i;
			break;
		}
		if (fc->slot[i]->stamp < fc->slot[victim]->stamp)
			victim = i;
	}
	if (fc->slot[victim]) {
		if (fc->slot[victim]->refs)
			fc->slot[victim]->detached = true;
		else
			fi_free(fc->slot[victim]);
	}
	fi->refs = 1;
	fi->stamp = ++fc->clock;
	fc->slot[victim] = fi;
}

/* The block index of file in (built on first use). Caller owns a reference (findex_put). */
int findex_get(struct sqk_image *img, const struct sqk_inode *in, struct findex **out)
{
	struct findex_cache *fc = img->findex;
	struct findex *fi, *other;
	int rc;

	pthread_mutex_lock(&fc->mu);
	fi = find_slot(fc, in->ref);
	pthread_mutex_unlock(&fc->mu);
	if (fi) {
		*out = fi;
		return 0;
	}
	rc = fi_build(img, in, &fi);
	if (rc)
		return rc;
	pthread_mutex_lock(&fc->mu);
	other = find_slot(fc, in->ref);
	if (other) {
		fi_free(fi);
		fi = other;
	} else {
		insert_slot(fc, fi);
	}
	pthread_mutex_unlock(&fc->mu);
	*out = fi;
	return 0;
}

/* Drops a reference from findex_get; NULL-safe. */
void findex_put(struct sqk_image *img, struct findex *fi)
{
	if (!fi)
		return;
	pthread_mutex_lock(&img->findex->mu);
	if (--fi->refs == 0 && fi->detached)
		fi_free(fi);
	pthread_mutex_unlock(&img->findex->mu);
}
