/* SPDX-License-Identifier: BSD-2-Clause */
/* Tree-walk detection (see walk.h): the regular files of recent listings in a ring, in listing
 * order, a lossy id -> ring position index, and the walk's state, all under one mutex (a listing
 * or a read touches a few entries). */
#include "fuse/walk.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

#include "sqk/sqk.h"

#define RING 8192u          /* regular files remembered, the most recently listed */
#define SLOTS (4u * RING)   /* index slots (a power of two): collisions only lose hints */
#define WALK_MIN 3u         /* reads in listing order in a row that turn the walk on */
#define AHEAD_FILES 48u     /* how far ahead of the reader the pushes go, in files */
#define AHEAD_BYTES (8u << 20) /* and in bytes, per call */

struct went {
	uint64_t seq; /* its position in listing order (the ring slot is seq % RING) */
	uint64_t id, dir, size;
	bool first;   /* the first regular file of its listing */
	bool read;    /* a read of it was answered */
	bool pushed;  /* queued for a push */
};

struct slot {
	uint64_t id, seq;
};

struct sqk_walk {
	pthread_mutex_t mu;
	uint64_t max_file;
	uint64_t next;      /* seq of the next entry listed; seqs start at 1 */
	uint64_t last;      /* seq of the file read last (0: none) */
	uint64_t lst_dir;   /* the listing being recorded, and the seq of its first file */
	uint64_t lst_start;
	unsigned streak;    /* reads in the walk in a row */
	bool on;
	struct went ring[RING];
	struct slot slots[SLOTS];
};

static size_t slot_of(uint64_t id)
{
	return (size_t)((id * 0x9E3779B97F4A7C15ull) >> 40) & (SLOTS - 1);
}

int walk_create(uint64_t max_file, struct sqk_walk **out)
{
	struct sqk_walk *w = calloc(1, sizeof(*w));
	*out = NULL;
	if (!w)
		return SQK_ENOMEM;
	pthread_mutex_init(&w->mu, NULL);
	w->max_file = max_file;
	w->next = 1;
	*out = w;
	return 0;
}

void walk_destroy(struct sqk_walk *w)
{
	if (!w)
		return;
	pthread_mutex_destroy(&w->mu);
	free(w);
}

/* The entry of seq while the ring still holds it, else NULL. Locked. */
static struct went *entry(struct sqk_walk *w, uint64_t seq)
{
	struct went *e = &w->ring[seq % RING];
	return seq && seq < w->next && e->seq == seq ? e : NULL;
}

void walk_listed(struct sqk_walk *w, uint64_t dir, uint64_t id, uint64_t size, int first)
{
	pthread_mutex_lock(&w->mu);
	uint64_t seq = w->next++;
	struct went *e = &w->ring[seq % RING];
	*e = (struct went){ .seq = seq, .id = id, .dir = dir, .size = size, .first = first != 0 };
	w->slots[slot_of(id)] = (struct slot){ .id = id, .seq = seq };
	if (first || w->lst_dir != dir) {
		w->lst_dir = dir;
		w->lst_start = seq;
	}
	pthread_mutex_unlock(&w->mu);
}

/* The files after seq in its listing not yet read or pushed, up to AHEAD_FILES entries after
 * it and AHEAD_BYTES: marked pushed and named in out. Locked. */
static size_t ahead(struct sqk_walk *w, uint64_t seq, bool from_here, struct walk_push *out,
		    size_t cap)
{
	const struct went *at = entry(w, seq);
	uint64_t bytes = 0;
	size_t n = 0;
	if (!at)
		return 0;
	uint64_t dir = at->dir;
	for (uint64_t j = from_here ? seq : seq + 1, k = 0; k < AHEAD_FILES && n < cap; j++, k++) {
		struct went *e = entry(w, j);
		if (!e || e->dir != dir || (e->first && j != seq) || bytes >= AHEAD_BYTES)
			break;
		if (e->read || e->pushed || e->size > w->max_file)
			continue;
		e->pushed = true;
		bytes += e->size;
		out[n++] = (struct walk_push){ .id = e->id, .len = e->size };
	}
	return n;
}

size_t walk_after_listing(struct sqk_walk *w, uint64_t dir, struct walk_push *out,
			      size_t cap)
{
	size_t n = 0;
	pthread_mutex_lock(&w->mu);
	if (w->on && w->lst_dir == dir)
		n = ahead(w, w->lst_start, true, out, cap);
	pthread_mutex_unlock(&w->mu);
	return n;
}

/* Is the read of e part of the walk? It was pushed (the push had not landed yet), or its listing
 * predecessor is the file read last; while the walk is on, also when it opens a listing or its
 * predecessor was read or pushed (the walker comes back to a directory after a subdirectory).
 * A reader at random rarely reads two neighbours in a row, so it does not turn the walk on.
 * Locked. */
static bool in_walk(struct sqk_walk *w, const struct went *e)
{
	const struct went *prev = e->first ? NULL : entry(w, e->seq - 1);
	if (prev && prev->dir != e->dir)
		prev = NULL;
	if (e->pushed || (prev && prev->seq == w->last))
		return true;
	return w->on && (e->first || (prev && (prev->read || prev->pushed)));
}

size_t walk_read(struct sqk_walk *w, uint64_t id, uint64_t off, struct walk_push *out,
		     size_t cap)
{
	size_t n = 0;
	(void)off;
	pthread_mutex_lock(&w->mu);
	const struct slot *s = &w->slots[slot_of(id)];
	struct went *e = s->id == id ? entry(w, s->seq) : NULL;
	if (e && e->id == id && e->seq != w->last) {
		if (in_walk(w, e)) {
			w->streak++;
		} else {
			w->streak = 1;
			w->on = false;
		}
		if (w->streak >= WALK_MIN)
			w->on = true;
		e->read = true;
		w->last = e->seq;
		if (w->on)
			n = ahead(w, e->seq, false, out, cap);
	}
	pthread_mutex_unlock(&w->mu);
	return n;
}

bool walk_unread(struct sqk_walk *w, uint64_t id)
{
	pthread_mutex_lock(&w->mu);
	const struct slot *s = &w->slots[slot_of(id)];
	const struct went *e = s->id == id ? entry(w, s->seq) : NULL;
	bool unread = !e || e->id != id || !e->read;
	pthread_mutex_unlock(&w->mu);
	return unread;
}

void walk_unpush(struct sqk_walk *w, const struct walk_push *p, size_t n)
{
	pthread_mutex_lock(&w->mu);
	for (size_t i = 0; i < n; i++) {
		const struct slot *s = &w->slots[slot_of(p[i].id)];
		struct went *e = s->id == p[i].id ? entry(w, s->seq) : NULL;
		if (e && e->id == p[i].id)
			e->pushed = false;
	}
	pthread_mutex_unlock(&w->mu);
}
