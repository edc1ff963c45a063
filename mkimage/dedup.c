/* Duplicate files, found in the one read pass: an index from (size, SHA-256 of the content) to the
 * first file that had it, and the set of sizes seen so far (a file whose size no earlier file
 * has cannot be a duplicate, so the writer need not hold it back). */
#include <stdlib.h>
#include <string.h>

#include "common/endian.h"
#include "common/error.h"
#include "common/integrity.h"
#include "mk.h"

struct dd_slot {
	uint64_t size;
	uint8_t digest[SQK_INTEG_DIGEST_SIZE];
	struct mk_node *n;          /* NULL: empty */
};

struct mk_dedup {
	struct dd_slot *slots;
	size_t cap, used;
	uint64_t *sizes;            /* open addressing; 0 = empty (empty files are never indexed) */
	size_t sizes_cap, sizes_used;
};

static size_t size_hash(uint64_t s)
{
	uint64_t h = s * 0x9E3779B97F4A7C15ull;
	return (size_t)(h ^ (h >> 31));
}

int mk_dedup_create(struct mk_ctx *c, struct mk_dedup **out)
{
	struct mk_dedup *d = calloc(1, sizeof(*d));
	if (d) {
		d->cap = 1024;
		d->sizes_cap = 1024;
		d->slots = calloc(d->cap, sizeof(*d->slots));
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
	free(d->slots);
	free(d->sizes);
	free(d);
}

static size_t sizes_slot(const struct mk_dedup *d, uint64_t size)
{
	size_t j = size_hash(size) & (d->sizes_cap - 1);
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
		size_t ncap = d->sizes_cap * 2;
		uint64_t *ns = calloc(ncap, sizeof(*ns)), *old = d->sizes;
		if (!ns)
			return SQK_ENOMEM;
		size_t ocap = d->sizes_cap;
		d->sizes = ns;
		d->sizes_cap = ncap;
		for (size_t i = 0; i < ocap; i++)
			if (old[i])
				ns[sizes_slot(d, old[i])] = old[i];
		free(old);
	}
	size_t j = sizes_slot(d, size);
	if (!d->sizes[j]) {
		d->sizes[j] = size;
		d->sizes_used++;
	}
	return 0;
}

static size_t slot_of(const struct mk_dedup *d, uint64_t size, const uint8_t *digest)
{
	size_t j = (size_t)(sqk_get_le64(digest) ^ size_hash(size)) & (d->cap - 1);
	while (d->slots[j].n && (d->slots[j].size != size ||
				 memcmp(d->slots[j].digest, digest, SQK_INTEG_DIGEST_SIZE)))
		j = (j + 1) & (d->cap - 1);
	return j;
}

static int grow(struct mk_dedup *d)
{
	size_t ocap = d->cap;
	struct dd_slot *old = d->slots, *ns = calloc(ocap * 2, sizeof(*ns));
	if (!ns)
		return SQK_ENOMEM;
	d->slots = ns;
	d->cap = ocap * 2;
	for (size_t i = 0; i < ocap; i++)
		if (old[i].n)
			d->slots[slot_of(d, old[i].size, old[i].digest)] = old[i];
	free(old);
	return 0;
}

int mk_dedup_find(const struct mk_dedup *d, uint64_t size, const uint8_t *digest,
		  struct mk_node **orig)
{
	*orig = d->slots[slot_of(d, size, digest)].n;
	return 0;
}

int mk_dedup_find_or_add(struct mk_ctx *c, struct mk_dedup *d, struct mk_node *n,
			 const uint8_t *digest, struct mk_node **orig)
{
	uint64_t size = n->file->size;
	int err = 0;
	if ((d->used + 1) * 2 > d->cap)
		err = grow(d);
	if (!err)
		err = sizes_add(d, size);
	if (err)
		return mk_fail(c, err, "out of memory");
	size_t j = slot_of(d, size, digest);
	*orig = d->slots[j].n;
	if (!*orig) {
		d->slots[j].size = size;
		memcpy(d->slots[j].digest, digest, SQK_INTEG_DIGEST_SIZE);
		d->slots[j].n = n;
		d->used++;
	}
	return 0;
}
