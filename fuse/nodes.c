/* Names for log lines: a map from node id to (parent id, name, lookup count), split into shards
 * that lock independently, so concurrent lookups and readdirplus replies rarely meet on one
 * mutex. Paths are put together only when an error is logged, by walking the parent ids up to
 * the root. An entry lives while the kernel counts lookups of it or an entry below it names it as
 * parent (a hard link may keep a file known after the directory it was first seen in is gone). */
#include "fuse/nodes.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"

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
	uint16_t len;
	char name[]; /* len bytes, not NUL-terminated */
};

struct shard {
	_Alignas(64) pthread_mutex_t mu; /* one cache line per shard: no false sharing */
	struct node **buckets;
	size_t nbuckets, count;
};

struct sqk_nodes {
	struct shard shards[SHARDS];
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

static struct shard *shard_of(struct sqk_nodes *t, uint64_t h)
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

int sqk_nodes_create(struct sqk_nodes **out)
{
	struct sqk_nodes *t = aligned_alloc(_Alignof(struct sqk_nodes), sizeof(*t));
	if (!t)
		return SQK_ENOMEM;
	memset(t, 0, sizeof(*t));
	for (size_t i = 0; i < SHARDS; i++) {
		struct shard *s = &t->shards[i];
		s->nbuckets = MIN_BUCKETS;
		s->buckets = calloc(s->nbuckets, sizeof(*s->buckets));
		if (!s->buckets) {
			sqk_nodes_destroy(t);
			return SQK_ENOMEM;
		}
		pthread_mutex_init(&s->mu, NULL);
	}
	*out = t;
	return 0;
}

void sqk_nodes_destroy(struct sqk_nodes *t)
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

/* Adds one lookup (or one child) to id's entry; false when id has none. */
static bool count_one(struct sqk_nodes *t, uint64_t id, bool child)
{
	uint64_t h = hash(id);
	struct shard *s = shard_of(t, h);
	pthread_mutex_lock(&s->mu);
	struct node *n = *find(s, id, h);
	if (n && child)
		n->children++;
	else if (n)
		n->lookups++;
	pthread_mutex_unlock(&s->mu);
	return n != NULL;
}

/* Takes lookups lookups and children children off id's entry; an entry left with neither is
 * freed, and gives back its hold on its parent, which may go in turn. */
static void drop(struct sqk_nodes *t, uint64_t id, uint64_t lookups, uint32_t children)
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
		bool up = n->holds_parent;
		id = n->parent;
		free(n);
		if (!up)
			return;
		lookups = 0;
		children = 1;
	}
}

/* Publishes n with one lookup, or counts the lookup on the entry another thread published for
 * the same id first (then returns false and n is not used). */
static bool publish(struct sqk_nodes *t, struct node *n)
{
	uint64_t h = hash(n->id);
	struct shard *s = shard_of(t, h);
	pthread_mutex_lock(&s->mu);
	struct node **p = find(s, n->id, h);
	bool fresh = *p == NULL;
	if (fresh) {
		n->next = NULL;
		*p = n;
		if (++s->count > s->nbuckets)
			grow(s);
	} else {
		(*p)->lookups++;
	}
	pthread_mutex_unlock(&s->mu);
	return fresh;
}

/* Most adds are of nodes the table does not hold yet (a tree walk meets each entry once), so the
 * entry is made first and dropped again when the id turns out to be known. */
void sqk_nodes_add(struct sqk_nodes *t, uint64_t id, uint64_t parent, const char *name, size_t len)
{
	if (id == ROOT_ID)
		return;
	if (len > UINT16_MAX)
		len = UINT16_MAX;
	struct node *n = malloc(sizeof(*n) + len);
	if (!n) {
		count_one(t, id, false); /* a known entry still counts the lookup */
		return;
	}
	*n = (struct node){.id = id, .parent = parent, .lookups = 1, .len = (uint16_t)len};
	memcpy(n->name, name, len);
	/* The parent is known (the kernel holds it while it looks up in it) unless it is the root
	 * or memory ran out; held before n is visible, so a forget of n always finds the hold. */
	n->holds_parent = parent != ROOT_ID && parent != id && count_one(t, parent, true);
	if (publish(t, n))
		return;
	if (n->holds_parent)
		drop(t, parent, 0, 1);
	free(n);
}

void sqk_nodes_forget(struct sqk_nodes *t, uint64_t id, uint64_t nlookup)
{
	if (id != ROOT_ID)
		drop(t, id, nlookup, 0);
}

/* Puts "/name" of id in front of buf[*pos] and sets *parent; 0, or -1 when id has no entry, or 1
 * when it does not fit in front of the "..." a cut path starts with. */
static int prepend_name(struct sqk_nodes *t, uint64_t id, char *buf, size_t *pos, uint64_t *parent)
{
	uint64_t h = hash(id);
	struct shard *s = shard_of(t, h);
	int r = 0;
	pthread_mutex_lock(&s->mu);
	const struct node *n = *find(s, id, h);
	if (!n)
		r = -1;
	else if ((size_t)n->len + 1 + 3 > *pos)
		r = 1;
	else {
		*pos -= n->len + 1u;
		buf[*pos] = '/';
		memcpy(buf + *pos + 1, n->name, n->len);
		*parent = n->parent;
	}
	pthread_mutex_unlock(&s->mu);
	return r;
}

void sqk_nodes_path(struct sqk_nodes *t, uint64_t id, char *buf, size_t cap)
{
	if (cap < 5) { /* room for "?" or "/" only */
		if (cap)
			buf[0] = 0;
		return;
	}
	size_t pos = cap - 1; /* the path is built backwards from the end of buf */
	buf[pos] = 0;
	if (id == ROOT_ID)
		buf[--pos] = '/';
	/* Every step uses at least two bytes, so a loop of parents in a corrupt image ends too. */
	while (id != ROOT_ID) {
		int r = prepend_name(t, id, buf, &pos, &id);
		if (r) {
			size_t k = r < 0 ? 1 : 3;
			pos -= k;
			memcpy(buf + pos, r < 0 ? "?" : "...", k);
			break;
		}
	}
	memmove(buf, buf + pos, cap - pos);
}
