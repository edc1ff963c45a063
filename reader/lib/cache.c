/* SPDX-License-Identifier: BSD-2-Clause */
/* The shared cache of decompressed blocks (metadata, data, fragments), keyed by absolute
 * position and bounded in bytes. A block being loaded is visible to other threads, which wait on
 * the condition variable instead of decompressing it again; refcounts keep eviction away from
 * blocks in use. */
#include <stdlib.h>

#include "internal.h"

#define NBUCKETS 8192u
#define NWAITQ 64u
#define NSPARE 64u
#define SPARE_BYTES                                                                                \
	(8u << 20) /* condition variables, by block: a fill wakes only that block's waiters */

struct cache {
	pthread_mutex_t mu;
	pthread_cond_t cv[NWAITQ];
	struct cblock *buckets[NBUCKETS];
	struct cblock lru; /* sentinel: lru.next = most recently used */
	size_t bytes, limit;
	/* Buffers of evicted data/fragment blocks, reused by the next decode: fresh memory would
	 * be page-faulted in again for every block. */
	uint8_t *spare[NSPARE];
	unsigned nspare, keep;
	size_t block_size;
};

static size_t bucket_of(uint64_t pos, int kind)
{
	uint64_t h = (pos ^ (uint64_t)kind) * 0x9E3779B97F4A7C15ull;
	return (size_t)(h >> 40) % NBUCKETS;
}

/* Caller owns *out (cache_destroy). */
int cache_create(size_t limit, struct cache **out)
{
	struct cache *c = calloc(1, sizeof(*c));

	if (!c)
		return SQK_ENOMEM;
	pthread_mutex_init(&c->mu, NULL);
	for (unsigned i = 0; i < NWAITQ; i++)
		pthread_cond_init(&c->cv[i], NULL);
	c->lru.next = c->lru.prev = &c->lru;
	c->limit = limit;
	*out = c;
	return 0;
}

/* Frees c and every block (none may be in use any more); NULL-safe. */
void cache_destroy(struct cache *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < NBUCKETS; i++) {
		struct cblock *b = c->buckets[i], *n;

		for (; b; b = n) {
			n = b->hnext;
			free(b->data);
			free(b);
		}
	}
	for (unsigned i = 0; i < c->nspare; i++)
		free(c->spare[i]);
	for (unsigned i = 0; i < NWAITQ; i++)
		pthread_cond_destroy(&c->cv[i]);
	pthread_mutex_destroy(&c->mu);
	free(c);
}

static void lru_unlink(struct cblock *b)
{
	if (b->prev) {
		b->prev->next = b->next;
		b->next->prev = b->prev;
		b->prev = b->next = NULL;
	}
}

static void lru_front(struct cache *c, struct cblock *b)
{
	lru_unlink(b);
	b->next = c->lru.next;
	b->prev = &c->lru;
	c->lru.next->prev = b;
	c->lru.next = b;
}

static void unhash(struct cache *c, struct cblock *b)
{
	struct cblock **pp = &c->buckets[bucket_of(b->pos, b->kind)];

	while (*pp && *pp != b)
		pp = &(*pp)->hnext;
	if (*pp)
		*pp = b->hnext;
	b->hashed = false;
	lru_unlink(b);
}

/* Sets the size of data and fragment block buffers (cache_buf); call before any use. */
void cache_set_block_size(struct cache *c, size_t block_size)
{
	c->block_size = block_size;
	c->keep = block_size ? (unsigned)(SPARE_BYTES / block_size) : 0;
	if (c->keep > NSPARE)
		c->keep = NSPARE;
}

/* A buffer of block_size bytes for a data or fragment block (cache_fill takes it back);
 * a reused one when an evicted block left one. Contents are undefined. */
uint8_t *cache_buf(struct cache *c)
{
	uint8_t *p = NULL;

	pthread_mutex_lock(&c->mu);
	if (c->nspare)
		p = c->spare[--c->nspare];
	pthread_mutex_unlock(&c->mu);
	return p ? p : malloc(c->block_size);
}

/* Frees a block that nobody uses any more, keeping its buffer when there is room. Locked. */
static void drop_block(struct cache *c, struct cblock *b)
{
	if (b->kind != SQK_BK_META && b->data && c->nspare < c->keep)
		c->spare[c->nspare++] = b->data;
	else
		free(b->data);
	free(b);
}

/* Drops unused blocks from the cold end until the cache fits its limit. Called locked. */
static void evict(struct cache *c)
{
	struct cblock *b = c->lru.prev, *p;

	for (; b != &c->lru && c->bytes > c->limit; b = p) {
		p = b->prev;
		if (b->refs)
			continue;
		unhash(c, b);
		c->bytes -= b->cost;
		drop_block(c, b);
	}
}

static struct cblock *find(struct cache *c, uint64_t pos, int kind)
{
	struct cblock *b = c->buckets[bucket_of(pos, kind)];

	while (b && (b->pos != pos || b->kind != kind))
		b = b->hnext;
	return b;
}

/* Waits for b to finish loading; returns HIT or the loader's error (b's ref then dropped). */
static int wait_ready(struct cache *c, struct cblock *b)
{
	while (b->state == 1) {
		b->waiters++;
		pthread_cond_wait(&c->cv[bucket_of(b->pos, b->kind) % NWAITQ], &c->mu);
		b->waiters--;
	}
	if (b->state == 0)
		return SQK_CACHE_HIT;
	return b->state;
}

/* Looks up a block. HIT: *out is ready and pinned. CLAIMED: *out is a new loading entry, pinned,
 * that the caller must cache_fill. PRESENT (only with !wait): someone has it, nothing pinned.
 * Caller owns a reference on *out (cache_put). */
int cache_get(struct cache *c, uint64_t pos, int kind, bool wait, struct cblock **out)
{
	struct cblock *b;
	int rc = SQK_CACHE_CLAIMED;

	pthread_mutex_lock(&c->mu);
	b = find(c, pos, kind);
	if (b && !wait) {
		rc = SQK_CACHE_PRESENT;
	} else if (b) {
		b->refs++;
		if (b->state == 0)
			lru_front(c, b);
		rc = wait_ready(c, b);
		if (rc < 0 && --b->refs == 0 && !b->hashed) {
			free(b->data);
			free(b);
		}
	} else {
		b = calloc(1, sizeof(*b));
		if (!b) {
			rc = SQK_ENOMEM;
		} else {
			size_t h = bucket_of(pos, kind);

			b->pos = pos;
			b->kind = kind;
			b->state = 1;
			b->refs = 1;
			b->hashed = true;
			b->hnext = c->buckets[h];
			c->buckets[h] = b;
		}
	}
	pthread_mutex_unlock(&c->mu);
	*out = rc == SQK_CACHE_HIT || rc == SQK_CACHE_CLAIMED ? b : NULL;
	return rc;
}

/* Completes a claimed block: takes ownership of data (also on error) and wakes the waiters. */
void cache_fill(struct cache *c, struct cblock *b, uint8_t *data, size_t len,
		    size_t stored, int err)
{
	pthread_mutex_lock(&c->mu);
	if (err) {
		free(data);
		b->state = err < 0 ? err : SQK_ECORRUPT;
		unhash(c, b);
	} else {
		b->data = data;
		b->len = len;
		b->stored = stored;
		b->cost = len + sizeof(*b);
		b->state = 0;
		c->bytes += b->cost;
		lru_front(c, b);
		evict(c);
	}
	if (b->waiters)
		pthread_cond_broadcast(&c->cv[bucket_of(b->pos, b->kind) % NWAITQ]);
	pthread_mutex_unlock(&c->mu);
}

/* Drops a reference taken by cache_get; NULL-safe. */
void cache_put(struct cache *c, struct cblock *b)
{
	if (!b)
		return;
	pthread_mutex_lock(&c->mu);
	if (--b->refs == 0) {
		if (!b->hashed) {
			free(b->data);
			free(b);
		} else if (c->bytes > c->limit) {
			evict(c);
		}
	}
	pthread_mutex_unlock(&c->mu);
}
