/* Whole-file duplicate detection before anything is compressed: files are grouped by size, only
 * sizes shared by several files are hashed (XXH3-128), and equal hashes are confirmed byte by
 * byte. A duplicate later points at the first copy's blocks and fragment. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#define XXH_STATIC_LINKING_ONLY
#include <xxhash.h>

#include "common/error.h"
#include "mk.h"

#define DEDUP_CHUNK (1u << 20)

struct cand {
	struct mk_node *n;
	XXH128_hash_t h;
};

static int by_size(const void *a, const void *b)
{
	const struct cand *x = a, *y = b;
	if (x->n->size != y->n->size)
		return x->n->size < y->n->size ? -1 : 1;
	return (x->n->order > y->n->order) - (x->n->order < y->n->order);
}

static int by_hash(const void *a, const void *b)
{
	const struct cand *x = a, *y = b;
	int r = XXH128_cmp(&x->h, &y->h);
	if (r)
		return r;
	return (x->n->order > y->n->order) - (x->n->order < y->n->order);
}

static int hash_file(struct mk_ctx *c, struct cand *k, uint8_t *buf)
{
	int fd, err = mk_open_source(c, k->n, &fd);
	if (err)
		return err;
	XXH3_state_t st;
	XXH3_128bits_reset(&st);
	for (uint64_t off = 0; off < k->n->size && !err; off += DEDUP_CHUNK) {
		size_t len = k->n->size - off < DEDUP_CHUNK ? (size_t)(k->n->size - off) : DEDUP_CHUNK;
		err = mk_pread(c, k->n, fd, off, buf, len);
		if (!err)
			XXH3_128bits_update(&st, buf, len);
		if (!err && mk_cancelled(c))
			err = mk_fail(c, SQK_EINTR, "interrupted");
	}
	close(fd);
	k->h = XXH3_128bits_digest(&st);
	return err;
}

/* Byte comparison of two files of equal size. */
static int same_content(struct mk_ctx *c, struct mk_node *a, struct mk_node *b, uint8_t *ba,
			uint8_t *bb, bool *same)
{
	int fa, fb, err = mk_open_source(c, a, &fa);
	if (err)
		return err;
	err = mk_open_source(c, b, &fb);
	if (err) {
		close(fa);
		return err;
	}
	*same = true;
	for (uint64_t off = 0; off < a->size && !err && *same; off += DEDUP_CHUNK) {
		size_t len = a->size - off < DEDUP_CHUNK ? (size_t)(a->size - off) : DEDUP_CHUNK;
		err = mk_pread(c, a, fa, off, ba, len);
		if (!err)
			err = mk_pread(c, b, fb, off, bb, len);
		if (!err && memcmp(ba, bb, len))
			*same = false;
	}
	close(fa);
	close(fb);
	return err;
}

/* Within one size group: hash, sort by hash, confirm each against the first of its hash run. */
static int dedup_group(struct mk_ctx *c, struct cand *g, size_t n, uint8_t *ba, uint8_t *bb)
{
	int err = 0;
	for (size_t i = 0; i < n && !err; i++)
		err = hash_file(c, &g[i], ba);
	if (err)
		return err;
	qsort(g, n, sizeof(*g), by_hash);
	for (size_t i = 0, first = 0; i < n && !err; i++) {
		if (i == first || XXH128_cmp(&g[i].h, &g[first].h)) {
			first = i;
			continue;
		}
		bool same;
		err = same_content(c, g[first].n, g[i].n, ba, bb, &same);
		if (!err && same) {
			g[i].n->file->dup_of = g[first].n;
			c->st.dup_files++;
			c->st.dup_bytes += g[i].n->size;
		}
	}
	return err;
}

int mk_dedup(struct mk_ctx *c)
{
	struct cand *v = calloc(c->nnodes ? c->nnodes : 1, sizeof(*v));
	uint8_t *ba = malloc(DEDUP_CHUNK), *bb = malloc(DEDUP_CHUNK);
	size_t n = 0;
	int err = 0;
	if (!v || !ba || !bb)
		err = mk_fail(c, SQK_ENOMEM, "out of memory");
	for (size_t i = 0; i < c->nnodes && !err; i++) {
		struct mk_node *nd = c->nodes[i];
		/* Sparse files are left alone: hashing them would read every hole. */
		if (nd->file && nd->size > 0 && !nd->file->maybe_sparse)
			v[n++].n = nd;
	}
	if (!err)
		qsort(v, n, sizeof(*v), by_size);
	for (size_t i = 0; i < n && !err;) {
		size_t j = i + 1;
		while (j < n && v[j].n->size == v[i].n->size)
			j++;
		if (j - i > 1)
			err = dedup_group(c, v + i, j - i, ba, bb);
		i = j;
	}
	free(v);
	free(ba);
	free(bb);
	return err;
}
