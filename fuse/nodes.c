/* SPDX-License-Identifier: BSD-2-Clause */
/* Names for log lines: a map from node id to (parent id, name, lookup count), split into shards
 * that lock independently, so concurrent lookups and readdirplus replies rarely meet on one
 * mutex. Paths are put together only when an error is logged, by walking the parent ids up to
 * the root. An entry lives while the kernel counts lookups of it or an entry below it names it as
 * parent (a hard link may keep a file known after the directory it was first seen in is gone),
 * or until a full table evicts it. A global atomic count bounds the entries; a new entry in a
 * full table takes the place of a leaf (an entry no other entry names as parent) that a CLOCK
 * hand, sweeping the buckets of the new entry's shard, finds not used since it last passed; only
 * when that shard has no leaf is another shard swept, each locked on its own. Evicting only
 * leaves keeps every entry's chain of parents whole or cut at an entry that was never recorded,
 * and ids name inodes of an image that never changes (directories have one path), so a path
 * put together is always true, if partial. */
#include "fuse/nodes.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "sqk/error.h"

#define ROOT_ID 1 /* FUSE_ROOT_ID: never stored, its path is "/" */
#define SHARDS 64 /* a power of two, well above the number of FUSE threads */
#define SHARD_BITS 6
#define MIN_BUCKETS 64 /* per shard, a power of two */

struct node {
	struct node *next; /* bucket chain */
	uint64_t id, parent;
	uint64_t lookups;  /* the kernel's lookup count */
	uint32_t children; /* entries whose parent is this one (they hold it for their paths) */
	bool holds_parent; /* counted in the parent entry's children */
	bool used;         /* added, looked up or named since the CLOCK hand last passed it */
	uint16_t len;
	char name[]; /* len bytes, not NUL-terminated */
};

struct shard {
	_Alignas(64) pthread_mutex_t mu; /* one cache line per shard: no false sharing */
	struct node **buckets;
	size_t nbuckets, count;
	size_t hand; /* the bucket the next eviction sweep starts at */
};

struct nodes {
	struct shard shards[SHARDS];
	_Alignas(64) atomic_size_t total; /* entries in all shards, at most max */
	size_t max;
};

_Static_assert((SHARDS & (SHARDS - 1)) == 0 && SHARDS == 1 << SHARD_BITS, "shard count");

/* splitmix64's finalizer: inode references cluster in their low bits. */
static uint64_t hash(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static struct shard *shard_of(struct nodes *t, uint64_t h)
{
	return &t->shards[h >> (64 - SHARD_BITS)];
}

/* The link that points at id's entry, or at the NULL ending its chain. Caller holds s->mu. */
static struct node **find(struct shard *s, uint64_t id, uint64_t h)
{
	struct node **p = &s->buckets[h & (s->nbuckets - 1)];
	while (*p && (*p)->id != id)
		p = &(*p)->next;
	return p;
}

int nodes_create(size_t max, struct nodes **out)
{
	struct nodes *t = aligned_alloc(_Alignof(struct nodes), sizeof(*t));
	if (!t)
		return SQK_ENOMEM;
	memset(t, 0, sizeof(*t));
	atomic_init(&t->total, 0);
	t->max = max;
	for (size_t i = 0; i < SHARDS; i++) {
		struct shard *s = &t->shards[i];
		s->nbuckets = MIN_BUCKETS;
		s->buckets = calloc(s->nbuckets, sizeof(*s->buckets));
		if (!s->buckets) {
			nodes_destroy(t);
			return SQK_ENOMEM;
		}
		pthread_mutex_init(&s->mu, NULL);
	}
	*out = t;
	return 0;
}

void nodes_destroy(struct nodes *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < SHARDS; i++) {
		struct shard *s = &t->shards[i];
		if (!s->buckets)
			break; /* create failed here: later shards were never set up */
		for (size_t b = 0; b < s->nbuckets; b++)
			for (struct node *n = s->buckets[b], *next; n; n = next) {
				next = n->next;
				free(n);
			}
		free(s->buckets);
		pthread_mutex_destroy(&s->mu);
	}
	free(t);
}

/* Doubles s's buckets when its chains get long; without memory, they just stay long. Caller
 * holds s->mu. */
static void grow(struct shard *s)
{
	size_t nb = s->nbuckets * 2;
	struct node **b = calloc(nb, sizeof(*b));
	if (!b)
		return;
	for (size_t i = 0; i < s->nbuckets; i++)
		for (struct node *n = s->buckets[i], *next; n; n = next) {
			next = n->next;
			struct node **p = &b[hash(n->id) & (nb - 1)];
			n->next = *p;
			*p = n;
		}
	free(s->buckets);
	s->buckets = b;
	s->nbuckets = nb;
}

/* Takes a place for a new entry in the global count; false when the table is full. */
static bool reserve(struct nodes *t)
{
	size_t c = atomic_load_explicit(&t->total, memory_order_relaxed);
	do {
		if (c >= t->max)
			return false;
	} while (!atomic_compare_exchange_weak_explicit(&t->total, &c, c + 1, memory_order_relaxed,
							memory_order_relaxed));
	return true;
}

static void release(struct nodes *t)
{
	atomic_fetch_sub_explicit(&t->total, 1, memory_order_relaxed);
}

/* Adds one lookup (or one child) to id's entry; false when id has none. */
static bool count_one(struct nodes *t, uint64_t id, bool child)
{
	uint64_t h = hash(id);
	struct shard *s = shard_of(t, h);
	pthread_mutex_lock(&s->mu);
	struct node *n = *find(s, id, h);
	if (n && child) {
		n->children++;
	} else if (n) {
		n->lookups++;
		n->used = true;
	}
	pthread_mutex_unlock(&s->mu);
	return n != NULL;
}

/* Takes lookups lookups and children children off id's entry; an entry left with neither is
 * freed, and gives back its hold on its parent, which may go in turn. */
static void drop(struct nodes *t, uint64_t id, uint64_t lookups, uint32_t children)
{
	for (;;) {
		uint64_t h = hash(id);
		struct shard *s = shard_of(t, h);
		pthread_mutex_lock(&s->mu);
		struct node **p = find(s, id, h), *n = *p;
		if (n) {
			n->lookups -= lookups < n->lookups ? lookups : n->lookups;
			n->children -= children < n->children ? children : n->children;
		}
		if (!n || n->lookups || n->children) {
			pthread_mutex_unlock(&s->mu);
			return;
		}
		*p = n->next;
		s->count--;
		pthread_mutex_unlock(&s->mu);
		release(t);
		bool up = n->holds_parent;
		id = n->parent;
		free(n);
		if (!up)
			return;
		lookups = 0;
		children = 1;
	}
}

/* CLOCK: unlinks and returns the first leaf from s's hand on that was not used since the hand
 * last passed it, clearing the marks it passes; NULL when s has no leaf. Two turns at most: the
 * second finds every mark cleared. Caller holds s->mu. */
static struct node *evict(struct shard *s)
{
	for (size_t k = 0; s->count && k < 2 * s->nbuckets; k++) {
		for (struct node **p = &s->buckets[s->hand]; *p; p = &(*p)->next) {
			struct node *n = *p;
			if (n->children)
				continue;
			if (n->used) {
				n->used = false;
				continue;
			}
			*p = n->next;
			s->count--;
			return n;
		}
		s->hand = (s->hand + 1) & (s->nbuckets - 1);
	}
	return NULL;
}

/* Frees an evicted entry (already unlinked and uncounted), giving back its hold on its parent. */
static void let_go(struct nodes *t, struct node *v)
{
	if (v->holds_parent)
		drop(t, v->parent, 0, 1);
	free(v);
}

/* Publishes n with one lookup (1); or counts the lookup on the entry another thread published
 * for the same id first (0); or finds no room, not even by evicting a leaf of n's shard (-1).
 * Unless 1 is returned, n is not used. *victim is the entry evicted to make room, or NULL; the
 * caller lets it go. */
static int publish(struct nodes *t, struct node *n, struct node **victim)
{
	uint64_t h = hash(n->id);
	struct shard *s = shard_of(t, h);
	int r = 1;
	*victim = NULL;
	pthread_mutex_lock(&s->mu);
	struct node *known = *find(s, n->id, h);
	if (known) {
		known->lookups++;
		known->used = true;
		r = 0;
	} else if (reserve(t) || (*victim = evict(s)) != NULL) {
		/* at the head of its chain: an eviction may have changed the rest */
		struct node **b = &s->buckets[h & (s->nbuckets - 1)];
		n->next = *b;
		*b = n;
		if (++s->count > s->nbuckets)
			grow(s);
	} else {
		r = -1;
	}
	pthread_mutex_unlock(&s->mu);
	return r;
}

/* Makes room in a full table from the shards other than home, one locked at a time; false when
 * none has a leaf. */
static bool evict_elsewhere(struct nodes *t, const struct shard *home)
{
	size_t first = (size_t)(home - t->shards);
	for (size_t k = 1; k < SHARDS; k++) {
		struct shard *s = &t->shards[(first + k) & (SHARDS - 1)];
		pthread_mutex_lock(&s->mu);
		struct node *v = evict(s);
		pthread_mutex_unlock(&s->mu);
		if (v) {
			release(t);
			let_go(t, v);
			return true;
		}
	}
	return false;
}

/* Most adds are of nodes the table does not hold yet (a tree walk meets each entry once), so the
 * entry is made first and dropped again when the id turns out to be known or finds no room. */
void nodes_add(struct nodes *t, uint64_t id, uint64_t parent, const char *name, size_t len)
{
	if (id == ROOT_ID || !t->max)
		return;
	if (len > UINT16_MAX)
		len = UINT16_MAX;
	struct node *n = malloc(sizeof(*n) + len);
	if (!n) {
		count_one(t, id, false); /* a known entry still counts the lookup */
		return;
	}
	*n = (struct node){ .id = id, .parent = parent, .lookups = 1, .used = true,
			    .len = (uint16_t)len };
	memcpy(n->name, name, len);
	/* The parent is known (the kernel holds it while it looks up in it) unless it is the root
	 * or was evicted or never recorded; held before n is visible, so a forget or an eviction of
	 * n always finds the hold, and held, the parent is no leaf and stays. */
	n->holds_parent = parent != ROOT_ID && parent != id && count_one(t, parent, true);
	struct node *victim;
	int r = publish(t, n, &victim);
	if (r < 0 && evict_elsewhere(t, shard_of(t, hash(id))))
		r = publish(t, n, &victim);
	if (victim)
		let_go(t, victim);
	if (r > 0)
		return;
	if (n->holds_parent)
		drop(t, parent, 0, 1);
	free(n);
}

void nodes_forget(struct nodes *t, uint64_t id, uint64_t nlookup)
{
	if (id != ROOT_ID)
		drop(t, id, nlookup, 0);
}

size_t nodes_count(struct nodes *t)
{
	return atomic_load_explicit(&t->total, memory_order_relaxed);
}

/* Puts "/name" of id in front of buf[*pos] and sets *parent; 0, or -1 when id has no entry, or 1
 * when it does not fit in front of the "..." a cut path starts with. A node named in a message is
 * one in use: marked so. */
static int prepend_name(struct nodes *t, uint64_t id, char *buf, size_t *pos, uint64_t *parent)
{
	uint64_t h = hash(id);
	struct shard *s = shard_of(t, h);
	int r = 0;
	pthread_mutex_lock(&s->mu);
	struct node *n = *find(s, id, h);
	if (!n) {
		r = -1;
	} else if ((size_t)n->len + 1 + 3 > *pos) {
		r = 1;
	} else {
		*pos -= n->len + 1u;
		buf[*pos] = '/';
		memcpy(buf + *pos + 1, n->name, n->len);
		*parent = n->parent;
		n->used = true;
	}
	pthread_mutex_unlock(&s->mu);
	return r;
}

int nodes_path(struct nodes *t, uint64_t id, char *buf, size_t cap)
{
	if (cap < 5) { /* room for "/" or "..." only */
		if (cap)
			buf[0] = 0;
		return -1;
	}
	size_t pos = cap - 1; /* the path is built backwards from the end of buf */
	int ret = 0;
	buf[pos] = 0;
	if (id == ROOT_ID)
		buf[--pos] = '/';
	/* Every step uses at least one byte, so a loop of parents in a corrupt image ends too. */
	for (bool first = true; id != ROOT_ID; first = false) {
		int r = prepend_name(t, id, buf, &pos, &id);
		if (r < 0 && first) {
			buf[0] = 0;
			return -1;
		}
		if (r) {
			pos -= 3;
			memcpy(buf + pos, "...", 3);
			ret = 1;
			break;
		}
	}
	memmove(buf, buf + pos, cap - pos);
	return ret;
}
