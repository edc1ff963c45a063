/* Duplicate files, found in the one read pass: an index from (size, SHA-256 of the content) to the
 * first file that had it, and the set of sizes seen so far (a file whose size no earlier file
 * has cannot be a duplicate, so the writer need not hold it back). Entries are dense (digest and
 * node); the hash tables hold 32-bit entry numbers, so a file costs about 60 bytes here. */
#include <stdlib.h>
#include <string.h>

#include "common/endian.h"
#include "common/error.h"
#include "common/integrity.h"
#include "mk.h"

struct dd_entry {
	uint8_t digest[SQK_INTEG_DIGEST_SIZE];
	struct mk_node *n;
};

struct mk_dedup {
	struct dd_entry *v;         /* entries in the order files came */
	uint32_t n, cap;
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
	if (!d || !d->slots || !d->sizes) {
		mk_dedup_destroy(d);
		*out = NULL;
		return mk_fail(c, SQK_ENOMEM, "out of memory");
	}
	*out = d;
	return 0;
}

void mk_dedup_destroy(struct mk_dedup *d)
{
	if (!d)
		return;
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

static uint32_t key_hash(uint64_t size, const uint8_t *digest)
{
	return (uint32_t)(sqk_get_le64(digest) ^ size_hash(size));
}

/* The slot holding (size, digest), or the empty slot where it would go. */
static uint32_t slot_of(const struct mk_dedup *d, uint64_t size, const uint8_t *digest)
{
	uint32_t j = key_hash(size, digest) & (d->nslots - 1);
	for (;; j = (j + 1) & (d->nslots - 1)) {
		uint32_t e = d->slots[j];
		if (!e)
			return j;
		const struct dd_entry *x = &d->v[e - 1];
		if (x->n->file->size == size && !memcmp(x->digest, digest, SQK_INTEG_DIGEST_SIZE))
			return j;
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
	for (uint32_t i = 0; i < d->n; i++)
		d->slots[slot_of(d, d->v[i].n->file->size, d->v[i].digest)] = i + 1;
	return 0;
}

int mk_dedup_find(const struct mk_dedup *d, uint64_t size, const uint8_t *digest,
		  struct mk_node **orig)
{
	uint32_t e = d->slots[slot_of(d, size, digest)];
	*orig = e ? d->v[e - 1].n : NULL;
	return 0;
}

int mk_dedup_find_or_add(struct mk_ctx *c, struct mk_dedup *d, struct mk_node *n,
			 const uint8_t *digest, struct mk_node **orig)
{
	uint64_t size = n->file->size;
	int err = 0;
	if ((d->n + 1) * 2 > d->nslots)
		err = grow(d);
	if (!err && d->n == d->cap) {
		uint32_t ncap = d->cap ? d->cap + d->cap / 2 : 1024;
		struct dd_entry *nv = realloc(d->v, (size_t)ncap * sizeof(*nv));
		if (!nv)
			err = SQK_ENOMEM;
		else {
			d->v = nv;
			d->cap = ncap;
		}
	}
	if (!err)
		err = sizes_add(d, size);
	if (!err && d->n == UINT32_MAX - 1)
		err = SQK_ETOOBIG;
	if (err)
		return mk_fail(c, err, "out of memory");
	uint32_t j = slot_of(d, size, digest);
	if (d->slots[j]) {
		*orig = d->v[d->slots[j] - 1].n;
		return 0;
	}
	*orig = NULL;
	memcpy(d->v[d->n].digest, digest, SQK_INTEG_DIGEST_SIZE);
	d->v[d->n].n = n;
	d->slots[j] = ++d->n;
	return 0;
}
