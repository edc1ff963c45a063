/* SPDX-License-Identifier: BSD-2-Clause */
/* Duplicate files, found in the one read pass: an index from (size, SHA-256 of the content) to the
 * first file that had it, and the set of sizes seen so far (a file whose size no earlier file
 * has cannot be a duplicate, so the writer need not hold it back). An entry in memory is the
 * digest's first 8 bytes and the file (16 bytes; the hash table holds 32-bit entry numbers, so
 * about 24 bytes a file); the whole digests wait in a store that spills to a temporary file
 * (spill.c), read back only when size and first bytes match. */
#include <stdlib.h>
#include <string.h>

#include "common/endian.h"
#include "sqk/error.h"
#include "common/grow.h"
#include "common/integrity.h"
#include "mk.h"
#include "dedup.h"
#include "spill.h"

struct dd_entry {
	uint64_t prefix;            /* the digest's first 8 bytes */
	const struct mk_file *f;
};

struct mk_dedup {
	struct mk_spill *digests;   /* entry i's digest at ref 32 * i */
	struct dd_entry *v;         /* entries in the order files came */
	uint32_t n;
	size_t cap;
	uint32_t *slots;            /* entry number + 1; 0 = empty */
	uint32_t nslots;
	uint64_t *sizes;            /* open addressing; 0 = empty (empty files are never indexed) */
	uint32_t sizes_cap, sizes_used;
};

static uint32_t size_hash(uint64_t s)
{
	uint64_t h = s * 0x9E3779B97F4A7C15ull;
	return (uint32_t)(h ^ (h >> 32));
}

int mk_dedup_create(struct mk_ctx *c, struct mk_dedup **out)
{
	struct mk_dedup *d = calloc(1, sizeof(*d));
	if (d) {
		d->nslots = 1024;
		d->sizes_cap = 1024;
		d->slots = calloc(d->nslots, sizeof(*d->slots));
		d->sizes = calloc(d->sizes_cap, sizeof(*d->sizes));
	}
	/* a budget of whole digests, so that entry i's digest is at ref 32 * i */
	int err = !d || !d->slots || !d->sizes ? mk_fail(c, SQK_ENOMEM, "out of memory") :
		  mk_spill_create(c, "file digests",
				  c->opt->digest_mem & ~(size_t)(SQK_INTEG_DIGEST_SIZE - 1),
				  &d->digests);
	if (err) {
		mk_dedup_destroy(d);
		d = NULL;
	}
	*out = d;
	return err;
}

void mk_dedup_destroy(struct mk_dedup *d)
{
	if (!d)
		return;
	mk_spill_destroy(d->digests);
	free(d->v);
	free(d->slots);
	free(d->sizes);
	free(d);
}

static uint32_t sizes_slot(const struct mk_dedup *d, uint64_t size)
{
	uint32_t j = size_hash(size) & (d->sizes_cap - 1);
	while (d->sizes[j] && d->sizes[j] != size)
		j = (j + 1) & (d->sizes_cap - 1);
	return j;
}

bool mk_dedup_size_seen(const struct mk_dedup *d, uint64_t size)
{
	return size && d->sizes[sizes_slot(d, size)] == size;
}

static int sizes_add(struct mk_dedup *d, uint64_t size)
{
	if ((d->sizes_used + 1) * 2 > d->sizes_cap) {
		uint32_t ocap = d->sizes_cap;
		uint64_t *ns = calloc((size_t)ocap * 2, sizeof(*ns)), *old = d->sizes;
		if (!ns)
			return SQK_ENOMEM;
		d->sizes = ns;
		d->sizes_cap = ocap * 2;
		for (uint32_t i = 0; i < ocap; i++)
			if (old[i])
				ns[sizes_slot(d, old[i])] = old[i];
		free(old);
	}
	uint32_t j = sizes_slot(d, size);
	if (!d->sizes[j]) {
		d->sizes[j] = size;
		d->sizes_used++;
	}
	return 0;
}

static uint32_t key_hash(uint64_t size, uint64_t prefix)
{
	return (uint32_t)(prefix ^ size_hash(size));
}

/* The slot holding (size, digest), or the empty slot where it would go; a slot whose size and
 * first bytes match has its whole digest read back. */
static int slot_of(struct mk_ctx *c, const struct mk_dedup *d, uint64_t size,
		   const uint8_t *digest, uint32_t *slot)
{
	uint64_t prefix = get_le64(digest);
	uint32_t j = key_hash(size, prefix) & (d->nslots - 1);
	for (;; j = (j + 1) & (d->nslots - 1)) {
		uint32_t e = d->slots[j];
		*slot = j;
		if (!e)
			return 0;
		const struct dd_entry *x = &d->v[e - 1];
		if (x->f->size != size || x->prefix != prefix)
			continue;
		uint8_t whole[SQK_INTEG_DIGEST_SIZE];
		int err = mk_spill_get(c, d->digests, (uint64_t)(e - 1) * sizeof(whole), whole,
				       sizeof(whole));
		if (err)
			return err;
		if (!memcmp(whole, digest, sizeof(whole)))
			return 0;
	}
}

static int grow(struct mk_dedup *d)
{
	uint32_t *ns = calloc((size_t)d->nslots * 2, sizeof(*ns));
	if (!ns)
		return SQK_ENOMEM;
	free(d->slots);
	d->slots = ns;
	d->nslots *= 2;
	for (uint32_t i = 0; i < d->n; i++) { /* entries are distinct: the first empty slot */
		uint32_t j = key_hash(d->v[i].f->size, d->v[i].prefix) & (d->nslots - 1);
		while (d->slots[j])
			j = (j + 1) & (d->nslots - 1);
		d->slots[j] = i + 1;
	}
	return 0;
}

int mk_dedup_find(struct mk_ctx *c, const struct mk_dedup *d, uint64_t size,
		  const uint8_t *digest, const struct mk_file **orig)
{
	uint32_t j;
	int err = slot_of(c, d, size, digest, &j);
	*orig = !err && d->slots[j] ? d->v[d->slots[j] - 1].f : NULL;
	return err;
}

int mk_dedup_find_or_add(struct mk_ctx *c, struct mk_dedup *d, const struct mk_file *f,
			 const uint8_t *digest, const struct mk_file **orig)
{
	uint64_t size = f->size;
	int err = 0;
	if ((d->n + 1) * 2 > d->nslots)
		err = grow(d);
	if (!err)
		err = mem_grow(&d->v, &d->cap, (size_t)d->n + 1, sizeof(*d->v), 0);
	if (!err)
		err = sizes_add(d, size);
	if (!err && d->n == UINT32_MAX - 1)
		err = SQK_ETOOBIG;
	if (err)
		return mk_fail(c, err, "out of memory");
	uint32_t j;
	uint64_t ref;
	if ((err = slot_of(c, d, size, digest, &j)))
		return err;
	if (d->slots[j]) {
		*orig = d->v[d->slots[j] - 1].f;
		return 0;
	}
	*orig = NULL;
	if ((err = mk_spill_put(c, d->digests, digest, SQK_INTEG_DIGEST_SIZE, &ref)))
		return err;
	d->v[d->n] = (struct dd_entry){ .prefix = get_le64(digest), .f = f };
	d->slots[j] = ++d->n;
	return 0;
}
