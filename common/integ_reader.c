/* SPDX-License-Identifier: BSD-2-Clause */
/* The integrity reader (layout in integrity.h): loads and authenticates the digests from the end
 * of the file and checks chunks against them. A lazy load of a digest tree authenticates the
 * group digests only and takes each group of chunk digests when its caller brings it (a remote
 * image). */
#include "integrity.h"

#include <openssl/crypto.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bytes.h"
#include "integ_internal.h"
#include "sqk/error.h"

/* A lazy load's groups of chunk digests, each set once when accepted (then never changed). */
struct integ_lazy {
	pthread_mutex_t mu; /* serialises acceptance */
	uint8_t *_Atomic *gd; /* ngroups: the group's chunk digests, or NULL */
};

/* Bytes of padding between the digests (or group digests) and the trailer. */
static uint64_t pad_len(const struct sqk_integ_trailer *t)
{
	return integ_end(t) - SQK_INTEG_TRAILER_SIZE - integ_digests_end(t);
}

static void lazy_free(struct integ_lazy *l, uint64_t ngroups)
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
void integ_free(struct integ *ig)
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
static int load_rooted(struct sqk_io *io, struct integ *out)
{
	const struct sqk_integ_trailer *t = &out->t;
	bool tree = t->version == SQK_INTEG_VERSION_TREE;
	uint8_t root[SQK_INTEG_DIGEST_SIZE];
	int err = tree ? read_digests(io, t->groups_at, t->ngroups, &out->groups)
		       : read_digests(io, t->hashes_at, t->nchunks, &out->digests);

	if (!err)
		err = check_padding(io, integ_digests_end(t), pad_len(t));
	if (!err)
		err = integ_root_digest(t, tree ? out->groups : out->digests, root);
	if (!err && CRYPTO_memcmp(root, t->root, sizeof(root)))
		err = SQK_ECORRUPT;
	return err;
}

/* Borrows io; ig from integ_load_lazy. */
int integ_accept_groups(struct sqk_io *io, struct integ *ig, uint64_t *nbad,
			    void (*on_bad)(void *ctx, const struct integ *ig, uint64_t g),
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

		integ_group_range(ig, g, &k0, &k1, &s, &e);
		err = sqk_io_read_at(io, s, buf, (size_t)(e - s));
		if (err == SQK_EBOUNDS)
			err = SQK_ECORRUPT;
		if (!err)
			err = integ_group_accept(ig, g, buf, (size_t)(e - s));
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
static int read_trailer(struct sqk_io *io, uint64_t file_size, struct integ *out)
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
	err = integ_trailer_decode(raw, &out->t);
	if (err)
		return err;
	if (file_size % PAD || out->t.covered >= file_size || integ_end(&out->t) != file_size)
		return SQK_ECORRUPT;
	return 0;
}

/* Borrows io; fills the caller's out (integ_free, also after a failure). */
int integ_load(struct sqk_io *io, uint64_t file_size, struct integ *out)
{
	uint64_t nbad = 0;
	int err = integ_load_lazy(io, file_size, out);

	if (!err)
		err = integ_accept_groups(io, out, &nbad, NULL, NULL);
	if (!err && nbad)
		err = SQK_ECORRUPT;
	if (err)
		integ_free(out);
	return err;
}

/* Borrows io; fills the caller's out (integ_free, also after a failure). */
int integ_load_lazy(struct sqk_io *io, uint64_t file_size, struct integ *out)
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
		integ_free(out);
	return err;
}

/* Borrows ig. */
uint64_t integ_group_of(const struct integ *ig, uint64_t k)
{
	return ig->t.version == SQK_INTEG_VERSION_TREE ? k / ig->t.group_chunks : 0;
}

/* Borrows ig; fills the caller's outputs. */
void integ_group_range(const struct integ *ig, uint64_t g, uint64_t *k0, uint64_t *k1,
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
bool integ_group_loaded(const struct integ *ig, uint64_t g)
{
	if (!ig->lazy)
		return ig->digests != NULL;
	return g < ig->t.ngroups && atomic_load_explicit(&ig->lazy->gd[g], memory_order_acquire);
}

/* Borrows ig and data. */
int integ_group_check(const struct integ *ig, uint64_t g, const void *data, size_t len)
{
	uint8_t d[SQK_INTEG_DIGEST_SIZE];
	uint64_t k0, k1, s, e;

	if (ig->t.version != SQK_INTEG_VERSION_TREE || !ig->groups || g >= ig->t.ngroups)
		return SQK_EINVAL;
	integ_group_range(ig, g, &k0, &k1, &s, &e);
	if (len != e - s)
		return SQK_ECORRUPT;
	hash_sha256(data, len, d);
	return CRYPTO_memcmp(d, ig->groups + g * SQK_INTEG_DIGEST_SIZE, sizeof(d)) ? SQK_ECORRUPT
										     : 0;
}

/* Borrows data; ig keeps its own copy. */
int integ_group_accept(struct integ *ig, uint64_t g, const void *data, size_t len)
{
	uint8_t *copy;
	int err;

	if (!ig->lazy)
		return ig->digests ? 0 : SQK_EINVAL;
	if (integ_group_loaded(ig, g))
		return 0;
	err = integ_group_check(ig, g, data, len);
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
const uint8_t *integ_group_digests(const struct integ *ig, uint64_t g)
{
	if (!ig->lazy) /* version 1: one group, the whole array */
		return ig->digests && g == 0 ? ig->digests : NULL;
	return g < ig->t.ngroups ? atomic_load_explicit(&ig->lazy->gd[g], memory_order_acquire)
				 : NULL;
}

/* The digest of chunk k, NULL when its group is not loaded. */
static const uint8_t *chunk_digest(const struct integ *ig, uint64_t k)
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
void integ_chunk_range(const struct integ *ig, uint64_t k, uint64_t *start, uint64_t *end)
{
	uint64_t s = k * ig->t.chunk_size, e = s + ig->t.chunk_size;

	*start = s < ig->t.covered ? s : ig->t.covered;
	*end = e < ig->t.covered ? e : ig->t.covered;
}

/* Borrows ig and data. */
int integ_check_chunk(const struct integ *ig, uint64_t k, const void *data, size_t len)
{
	uint8_t d[SQK_INTEG_DIGEST_SIZE];
	const uint8_t *want;
	uint64_t s, e;

	if (k >= ig->t.nchunks)
		return SQK_ECORRUPT;
	want = chunk_digest(ig, k);
	if (!want)
		return SQK_ENOENT;
	integ_chunk_range(ig, k, &s, &e);
	if (len != e - s)
		return SQK_ECORRUPT;
	hash_sha256(data, len, d);
	if (CRYPTO_memcmp(d, want, sizeof(d)))
		return SQK_ECORRUPT;
	return 0;
}
