/* SPDX-License-Identifier: BSD-2-Clause */
/* The chunk table of a remote image: its memory cache, its disk cache, fetching and checking
 * chunks, and reads through them. The bytes below `covered` are cut into chunks (the integrity
 * chunks, else 64 KiB); each is taken from memory, else the disk cache, else fetched, coalesced
 * with its neighbours, and checked against its SHA-256 (groups.c: with a digest tree, against
 * its group's digests) before any caller sees it. */
#include <stdlib.h>
#include <string.h>

#include "sqk/error.h"
#include "http_internal.h"

/* ---- the chunk table (mu held) ---- */

size_t http_chunk_len(const struct http *h, uint64_t k)
{
	uint64_t s = k * h->csize, e = s + h->csize;

	return (size_t)((e < h->covered ? e : h->covered) - s);
}

struct http_chunk *http_chunk_find(struct http *h, uint64_t k)
{
	struct http_chunk *c = h->tab[k % h->tab_size];

	while (c && c->k != k)
		c = c->hnext;
	return c;
}

static void unlink_tab(struct http *h, struct http_chunk *c)
{
	struct http_chunk **p = &h->tab[c->k % h->tab_size];

	while (*p && *p != c)
		p = &(*p)->hnext;
	if (*p)
		*p = c->hnext;
	c->detached = true;
}

static void lru_remove(struct http *h, struct http_chunk *c)
{
	if (!c->in_lru)
		return;
	if (c->prev)
		c->prev->next = c->next;
	else
		h->lru_head = c->next;
	if (c->next)
		c->next->prev = c->prev;
	else
		h->lru_tail = c->prev;
	c->prev = c->next = NULL;
	c->in_lru = false;
}

/* Buffers of whole chunks are kept for the next chunks, up to a quarter of the memory cache:
 * chunks are made and freed on many threads, and malloc spread them over its arenas, page-faulted
 * in anew. A kept buffer starts with the link to the next one. */
static uint8_t *buf_get(struct http *h, size_t len)
{
	uint8_t *p = h->spare;

	if (len != h->csize || !p)
		return malloc(len);
	memcpy(&h->spare, p, sizeof(h->spare));
	h->spare_bytes -= len;
	return p;
}

static void buf_put(struct http *h, uint8_t *p, size_t len)
{
	if (!p || len != h->csize || len < sizeof(h->spare) ||
	    h->spare_bytes + len > h->mem_limit / 4) {
		free(p);
		return;
	}
	memcpy(p, &h->spare, sizeof(h->spare));
	h->spare = p;
	h->spare_bytes += len;
}

/* Frees the kept buffers (at close). */
void http_spares_free(struct http *h)
{
	while (h->spare)
		free(buf_get(h, h->csize));
}

void http_chunk_free(struct http *h, struct http_chunk *c)
{
	h->mem_used -= c->len;
	buf_put(h, c->data, c->len);
	free(c);
}

/* A new LOADING chunk, in the table, pinned once. Its buffer may be a kept one: no reader sees
 * it before all its bytes are in (FETCHED). */
struct http_chunk *http_chunk_new(struct http *h, uint64_t k)
{
	struct http_chunk *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->k = k;
	c->len = http_chunk_len(h, k);
	c->data = buf_get(h, c->len);
	if (!c->data) {
		free(c);
		return NULL;
	}
	c->state = CH_LOADING;
	c->pins = 1;
	c->hnext = h->tab[k % h->tab_size];
	h->tab[k % h->tab_size] = c;
	h->mem_used += c->len;
	return c;
}

static void evict(struct http *h)
{
	while (h->mem_used > h->mem_limit && h->lru_tail) {
		struct http_chunk *c = h->lru_tail;

		lru_remove(h, c);
		unlink_tab(h, c);
		http_chunk_free(h, c);
	}
}

/* mu held. */
struct http_chunk *http_chunk_pin(struct http *h, uint64_t k)
{
	struct http_chunk *c = http_chunk_find(h, k);

	if (c) {
		c->pins++;
		lru_remove(h, c);
	}
	return c;
}

void http_unpin(struct http *h, struct http_chunk *c)
{
	if (--c->pins)
		return;
	if (c->detached || c->state == CH_FAILED) {
		if (!c->detached)
			unlink_tab(h, c);
		http_chunk_free(h, c);
		return;
	}
	c->next = h->lru_head;
	c->prev = NULL;
	if (h->lru_head)
		h->lru_head->prev = c;
	h->lru_head = c;
	if (!h->lru_tail)
		h->lru_tail = c;
	c->in_lru = true;
	evict(h);
}

/* Wakes the reads waiting for c's state to change (mu held). */
static void chunk_wake(struct http *h, struct http_chunk *c)
{
	if (c->waiters)
		pthread_cond_broadcast(&h->ccv[c->k % HTTP_CCV]);
}

static void fail_chunk(struct http *h, struct http_chunk *c, int err)
{
	c->state = CH_FAILED;
	c->err = err;
	if (!c->detached)
		unlink_tab(h, c);
	chunk_wake(h, c);
}

/* Fails the caller's LOADING chunks own[0..n) with err and drops the loader's pin of each
 * (mu held). */
static void fail_owned(struct http *h, struct http_chunk **own, unsigned n, int err)
{
	for (unsigned i = 0; i < n; i++) {
		fail_chunk(h, own[i], err);
		http_unpin(h, own[i]);
	}
}

/* c holds bytes from the server, not yet checked (mu held). */
void http_fetched(struct http *h, struct http_chunk *c)
{
	c->state = CH_FETCHED;
	c->net = true;
	chunk_wake(h, c);
	atomic_fetch_add(&h->n_net, c->len);
}

/* Without mu: c's bytes are all in; the job's pin passes to whoever reads it. They go to the
 * disk cache now, unchecked (a read from disk checks them), so another process waiting on the
 * unit's lock finds them there; the background's only where there is room (a failed store is
 * tried again when the background keeps the chunk, and tells it why). */
void http_chunk_arrived(struct http *h, struct http_chunk *c, bool room_only)
{
	if (h->dc && !c->stored)
		c->stored = (room_only ? dcache_put_room(h->dc, c->k, c->data, c->len)
				       : dcache_put(h->dc, c->k, c->data, c->len)) == 0;
	pthread_mutex_lock(&h->mu);
	http_fetched(h, c); /* wakes its readers; h->cv's waiters wait for whole jobs */
	http_unpin(h, c);
	pthread_mutex_unlock(&h->mu);
}

/* Without mu: the first chunks of j that the disk cache holds become FETCHED (from disk). */
bool http_chunks_from_disk(struct http *h, struct http_job *j)
{
	unsigned i, e = j->ndone;

	while (h->dc && e < j->nch && !j->ch[e]->no_disk &&
	       !dcache_get(h->dc, j->ch[e]->k, j->ch[e]->data, j->ch[e]->len))
		e++;
	pthread_mutex_lock(&h->mu);
	for (i = j->ndone; i < e; i++) {
		struct http_chunk *c = j->ch[i];

		c->state = CH_FETCHED;
		c->disk = c->stored = true;
		atomic_fetch_add(&h->n_disk_hits, 1);
		chunk_wake(h, c);
		http_unpin(h, c);
	}
	j->ndone = e;
	pthread_cond_broadcast(&h->cv);
	pthread_mutex_unlock(&h->mu);
	if (e < j->nch)
		return false;
	http_job_free(j);
	return true;
}

/* mu held: the transfer of j ended; its chunks hold their bytes or failed. Frees j. */
void http_chunks_done(struct http *h, struct http_job *j, int rc)
{
	unsigned i;

	for (i = j->ndone; i < j->nch; i++) {
		struct http_chunk *c = j->ch[i];

		if (rc)
			fail_chunk(h, c, rc == SQK_EINTR ? SQK_EINTR : SQK_EIO);
		else
			http_fetched(h, c);
		http_unpin(h, c);
	}
	pthread_cond_broadcast(&h->cv);
	http_job_free(j);
}

/* ---- fetching chunks ---- */

/* Whether a reader waits for one of c[0..n). mu held. */
static bool waited_on(struct http_chunk *const *c, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		if (c[i]->waiters)
			return true;
	}
	return false;
}

/* Queues a request for the chunks c[0..n) (consecutive, LOADING, pinned once more for the job),
 * cut into parts of about `part` bytes that never cross a unit of the request grid. mu held.
 * Chunks that cannot be queued fail. */
static void submit_run(struct http *h, struct http_chunk **c, unsigned n, uint64_t part,
		       bool demand)
{
	while (n) {
		unsigned take = 0;
		uint64_t bytes = 0, u = c[0]->k * h->csize / h->unit;
		struct http_job *j;

		while (take < n && (take == 0 || (bytes + c[take]->len <= part &&
						  c[take]->k * h->csize / h->unit == u)))
			bytes += c[take++]->len;
		j = http_job_new(h, c[0]->k * h->csize, (size_t)bytes);
		if (j)
			j->ch = malloc(take * sizeof(*j->ch));
		if (j && j->ch) {
			memcpy(j->ch, c, take * sizeof(*c));
			j->nch = take;
			j->k0 = c[0]->k;
			j->demand = demand || waited_on(c, take);
			if (http_submit(h, j) == 0)
				goto next;
		}
		http_job_free(j);
		for (unsigned i = 0; i < take; i++) {
			fail_chunk(h, c[i], SQK_ENOMEM);
			http_unpin(h, c[i]);
		}
next:
		c += take;
		n -= take;
	}
	pthread_cond_broadcast(&h->cv);
}

/* Submits the LOADING chunks of list[0..n) (runs of consecutive ones) as coalesced runs, in
 * that order. mu held. */
static void submit_missing(struct http *h, struct http_chunk **list, unsigned n, uint64_t part,
			   bool demand)
{
	unsigned i = 0;

	while (i < n) {
		unsigned e = i + 1;

		while (e < n && list[e]->k == list[e - 1]->k + 1)
			e++;
		submit_run(h, list + i, e - i, part, demand);
		i = e;
	}
}

enum { DISK_MISS, DISK_HIT, DISK_LATER };

/* Takes chunk c (LOADING, owned by the caller) from the disk cache: DISK_HIT when found and
 * valid; DISK_LATER when found but its digest group is not in yet (checked when read). */
static int from_disk(struct http *h, struct http_chunk *c)
{
	if (!h->dc)
		return DISK_MISS;
	if (dcache_get(h->dc, c->k, c->data, c->len) == 0) {
		int rc = h->has_integ ? integ_check_chunk(&h->integ, c->k, c->data, c->len) : 0;

		if (rc == 0 || rc == SQK_ENOENT) {
			atomic_fetch_add(&h->n_disk_hits, 1);
			return rc ? DISK_LATER : DISK_HIT;
		}
		dcache_drop(h->dc, c->k); /* wrong bytes: its request must not take them again */
		c->no_disk = true;
	}
	atomic_fetch_add(&h->n_disk_misses, 1);
	return DISK_MISS;
}

/* Resolves the chunks the caller created (own[0..n), LOADING): disk cache, then requests.
 * Called without mu. */
void http_load_owned(struct http *h, struct http_chunk **own, unsigned n, uint64_t part,
			 bool demand)
{
	unsigned i, miss = 0;
	int hit[n ? n : 1];

	for (i = 0; i < n; i++)
		hit[i] = from_disk(h, own[i]);
	pthread_mutex_lock(&h->mu);
	for (i = 0; i < n; i++) {
		if (hit[i] != DISK_MISS) {
			own[i]->state = hit[i] == DISK_HIT ? CH_READY : CH_FETCHED;
			own[i]->disk = hit[i] == DISK_LATER;
			own[i]->stored = true;
			chunk_wake(h, own[i]);
			http_unpin(h, own[i]);
		} else {
			own[miss++] = own[i]; /* the caller's pin passes to the job */
		}
	}
	if (h->cancelled) {
		fail_owned(h, own, miss, SQK_EINTR);
		miss = 0;
	}
	submit_missing(h, own, miss, part, demand);
	pthread_cond_broadcast(&h->cv);
	pthread_mutex_unlock(&h->mu);
}

/* check_fetched: the bytes of a chunk taken from the disk cache are wrong; fetch it. */
#define REFETCH 1

/* Keeps checked chunk c on disk (once; evicting older entries unless room_only): 0 or SQK_E*. */
static int store(struct http *h, struct http_chunk *c, bool room_only)
{
	int rc;

	if (!h->dc || c->disk || c->stored)
		return 0;
	rc = room_only ? dcache_put_room(h->dc, c->k, c->data, c->len)
		       : dcache_put(h->dc, c->k, c->data, c->len);
	c->stored = rc == 0;
	return rc;
}

/* Checks a fetched chunk and keeps it on disk (*put_rc: how that went; NULL: not asked). With a
 * digest tree its group comes first: loaded (waited for) when wait_group, else SQK_ENOENT while
 * it is not in. */
static int check_fetched(struct http *h, struct http_chunk *c, bool wait_group, int *put_rc)
{
	int prc;

	if (http_uses_groups(h)) {
		uint64_t g = integ_group_of(&h->integ, c->k);
		int rc = integ_group_loaded(&h->integ, g) ? 0
			 : wait_group			      ? http_group_need(h, g)
							      : SQK_ENOENT;

		if (rc)
			return rc;
	}
	if (h->has_integ && !h->o.raw &&
	    integ_check_chunk(&h->integ, c->k, c->data, c->len) != 0) {
		uint64_t s = c->k * h->csize;

		if (h->dc && (c->disk || c->stored))
			dcache_drop(h->dc, c->k);
		c->stored = false;
		if (c->disk)
			return REFETCH;

		atomic_fetch_add(&h->n_corrupt, 1);
		http_logf(h,
			      "%s: bytes %llu-%llu (chunk %llu) do not match their SHA-256 digest",
			      h->name, (unsigned long long)s, (unsigned long long)(s + c->len - 1),
			      (unsigned long long)c->k);
		return SQK_ECORRUPT;
	}
	prc = store(h, c, put_rc != NULL);
	if (put_rc)
		*put_rc = prc;
	return 0;
}

/* The disk cache had c wrong (check_fetched's REFETCH): c is asked for from the server (a
 * job's pin is added; c LOADING). mu held. */
static void refetch(struct http *h, struct http_chunk *c, bool demand)
{
	c->disk = false;
	c->stored = false;
	c->no_disk = true;
	c->state = CH_LOADING;
	c->pins++; /* the job's */
	submit_run(h, &c, 1, RUN_MAX, demand);
}

/* mu held; c pinned by the caller, FETCHED or READY when the caller looked (a reader may have
 * taken it over since: then it checks and keeps it). */
int http_chunk_keep(struct http *h, struct http_chunk *c, int *put_rc)
{
	int rc;

	*put_rc = 0;
	if (c->state == CH_LOADING || c->state == CH_VERIFYING)
		return 0;
	if (c->state == CH_FAILED)
		return c->err;
	if (c->state == CH_READY) { /* checked: its bytes no longer change */
		pthread_mutex_unlock(&h->mu);
		*put_rc = store(h, c, true);
		pthread_mutex_lock(&h->mu);
		return 0;
	}
	c->state = CH_VERIFYING;
	pthread_mutex_unlock(&h->mu);
	rc = check_fetched(h, c, true, put_rc);
	pthread_mutex_lock(&h->mu);
	if (rc == REFETCH) { /* from disk, wrong: from the server (readers of it wait on) */
		refetch(h, c, c->waiters > 0);
		chunk_wake(h, c);
		return 0;
	}
	if (rc)
		fail_chunk(h, c, rc);
	else
		c->state = CH_READY;
	chunk_wake(h, c);
	pthread_cond_broadcast(&h->cv);
	return rc;
}

/* Waits until c is READY (verifying it when it arrived unchecked). mu held. A request for it
 * queued as readahead meanwhile (after the reader pinned it) goes ahead as demand. */
static int wait_chunk(struct http *h, struct http_chunk *c)
{
	bool promoted = false;

	for (;;) {
		int rc;

		if (c->state == CH_READY)
			return 0;
		if (c->state == CH_FAILED)
			return c->err;
		if (c->state == CH_FETCHED) {
			c->state = CH_VERIFYING;
			pthread_mutex_unlock(&h->mu);
			rc = check_fetched(h, c, true, NULL);
			pthread_mutex_lock(&h->mu);
			if (rc == REFETCH) { /* the disk cache had it wrong: from the server */
				refetch(h, c, true);
				continue;
			}
			if (rc)
				fail_chunk(h, c, rc);
			else
				c->state = CH_READY;
			chunk_wake(h, c);
			pthread_cond_broadcast(&h->cv);
			continue;
		}
		if (h->cancelled)
			return SQK_EINTR;
		if (!promoted && c->state == CH_LOADING)
			http_promote(h, c->k);
		promoted = true;
		c->waiters++;
		pthread_cond_wait(&h->ccv[c->k % HTTP_CCV], &h->mu);
		c->waiters--;
	}
}

/* ---- reads ---- */

/* Pins the chunks k0..k1 into pins[], creating the absent ones (listed in own[]). mu held. */
static int pin_range(struct http *h, uint64_t k0, unsigned n, struct http_chunk **pins,
		     struct http_chunk **own, unsigned *nown)
{
	unsigned i;

	*nown = 0;
	for (i = 0; i < n; i++) {
		struct http_chunk *c = http_chunk_find(h, k0 + i);

		if (c) {
			c->pins++;
			lru_remove(h, c);
			if (c->state == CH_LOADING)
				http_promote(h, c->k);
		} else {
			c = http_chunk_new(h, k0 + i);
			if (!c) {
				/* the ones made here fail (a reader of them would wait forever) */
				fail_owned(h, own, *nown, SQK_ENOMEM);
				*nown = 0;
				while (i--)
					http_unpin(h, pins[i]);
				return SQK_ENOMEM;
			}
			c->pins++; /* one for the reader, one passed to the loader */
			own[(*nown)++] = c;
		}
		pins[i] = c;
	}
	return 0;
}

static void copy_out(struct http *h, struct http_chunk **pins, unsigned n, uint64_t off,
		     uint8_t *buf, size_t len)
{
	unsigned i;

	for (i = 0; i < n && len; i++) {
		uint64_t cs = pins[i]->k * h->csize;
		size_t at = off > cs ? (size_t)(off - cs) : 0, take = pins[i]->len - at;

		if (take > len)
			take = len;
		if (pins[i]->net && !atomic_exchange(&pins[i]->used, true))
			atomic_fetch_add(&h->n_used, pins[i]->len);
		memcpy(buf, pins[i]->data + at, take);
		buf += take;
		len -= take;
		off += take;
	}
}

/* The chunks after k1 up to the end of its unit, not past `limit`. A read asks for them with its
 * own when it names its stream (a caching proxy filling the unit's slice for the first request
 * would make a second one for its rest wait) or while the background fetch sweeps (it would
 * fetch them anyway; a start's next read is often in the same unit; not while the prefetch
 * hint's ranges are on the wire: they go first). */
static uint64_t unit_rest(const struct http *h, uint64_t k1, uint64_t limit)
{
	uint64_t e = ((k1 + 1) * h->csize + h->unit - 1) / h->unit * h->unit;

	if (e > limit)
		e = limit;
	if (e > h->covered)
		e = h->covered;
	return e > (k1 + 1) * h->csize ? (e + h->csize - 1) / h->csize - (k1 + 1) : 0;
}

/* unit_rest for a read; sweep: http_bg_sweeping (mu held). */
static uint64_t read_rest(const struct http *h, uint64_t k1, const struct sqk_io_ahead *ahead,
			  bool sweep)
{
	if (sweep)
		return unit_rest(h, k1, UINT64_MAX);
	return ahead && ahead->stream ? unit_rest(h, k1, ahead->limit) : 0;
}

/* Adds the absent chunks k1+1 .. k1+rest to own[] (LOADING, their one pin the loader's). */
static void own_rest(struct http *h, uint64_t k1, uint64_t rest, struct http_chunk **own,
		     unsigned *nown)
{
	for (uint64_t k = k1 + 1; k <= k1 + rest; k++) {
		struct http_chunk *c = http_chunk_find(h, k) ? NULL : http_chunk_new(h, k);

		if (c)
			own[(*nown)++] = c;
		else if (!http_chunk_find(h, k))
			return;
	}
}

/* While the background fetch sweeps, a read that missed also asks for the absent chunks of its
 * unit before k0 (at most `lead`), in a request of their own after its own (its bytes come
 * first): they are added to own[]; returns the first of them (k0: none). */
static uint64_t own_lead(struct http *h, uint64_t k0, uint64_t lead, struct http_chunk **own,
			 unsigned *nown)
{
	uint64_t s = k0, k;

	while (s > k0 - lead && !http_chunk_find(h, s - 1))
		s--;
	for (k = s; k < k0; k++) {
		struct http_chunk *c = http_chunk_new(h, k);

		if (!c)
			break;
		own[(*nown)++] = c;
	}
	return s;
}

/* Reads [off, off + len) below `covered` through the chunks. */
int http_read_chunks(struct http *h, uint64_t off, uint8_t *buf, size_t len,
			 const struct sqk_io_ahead *ahead)
{
	uint64_t k0 = off / h->csize, k1 = (off + len - 1) / h->csize, ra0 = 0, ra1 = 0;
	uint64_t rest = unit_rest(h, k1, UINT64_MAX), lead = k0 % (h->unit / h->csize), kf = k0;
	unsigned n = (unsigned)(k1 - k0 + 1), nown = 0, i;
	struct http_chunk **pins = malloc((2 * (size_t)n + rest + lead) * sizeof(*pins));
	struct http_chunk **own = pins + n;
	bool sweep;
	int rc;

	if (!pins)
		return SQK_ENOMEM;
	pthread_mutex_lock(&h->mu);
	sweep = http_bg_sweeping(h);
	rest = read_rest(h, k1, ahead, sweep);
	rc = h->cancelled ? SQK_EINTR : pin_range(h, k0, n, pins, own, &nown);
	if (!rc && nown) {
		own_rest(h, k1, rest, own, &nown);
		kf = own_lead(h, k0, sweep ? lead : 0, own, &nown);
		http_bg_missed(h, k0 * h->csize / h->unit);
	}
	if (!rc)
		http_plan_ahead(h, off, off + len, ahead, &ra0, &ra1);
	pthread_mutex_unlock(&h->mu);
	if (rc) {
		free(pins);
		return rc;
	}
	/* their digests, if not in yet, come while the chunks do */
	http_kick_groups(h, kf, k1 + (nown ? rest : 0));
	http_load_owned(h, own, nown, len / h->conns > PART_MIN ? len / h->conns : RUN_MAX,
			    true);
	http_fetch_ahead(h, ra0, ra1, UINT64_MAX);
	pthread_mutex_lock(&h->mu);
	for (i = 0; i < n && !rc; i++)
		rc = wait_chunk(h, pins[i]);
	pthread_mutex_unlock(&h->mu);
	if (!rc)
		copy_out(h, pins, n, off, buf, len);
	pthread_mutex_lock(&h->mu);
	for (i = 0; i < n; i++)
		http_unpin(h, pins[i]);
	pthread_mutex_unlock(&h->mu);
	free(pins);
	return rc;
}

/* Chunks fetched ahead and never read are checked and kept on disk at close, so the next open
 * finds them (a failed check only drops the chunk). */
void http_store_unread(struct http *h)
{
	size_t i;

	if (!h->dc)
		return;
	for (i = 0; i < h->tab_size; i++) {
		struct http_chunk *c;

		for (c = h->tab[i]; c; c = c->hnext) {
			if (c->state == CH_FETCHED && check_fetched(h, c, false, NULL) == 0) {
				/* no new request now: not when the group is out */
				c->state = CH_READY;
				chunk_wake(h, c);
			}
		}
	}
}
