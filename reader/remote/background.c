/* SPDX-License-Identifier: BSD-2-Clause */
/* The background fetch of a remote image (sqk_http_opts.background): a thread of its own fetches
 * the rest of the image into the disk cache, in image order (after a read that missed, the units
 * around it first), in whole units of the request grid (1 MiB, or the chunk size when larger),
 * several units at a time (inflight_max). Reads go
 * first: it waits while the prefetch hint's ranges or readahead are on the wire, keeps one unit
 * in flight while reads are on a bandwidth-bound link, and a read waiting on a queued unit moves
 * it ahead (http_promote). Each
 * chunk is checked against its digest before it is kept. It never evicts from the cache folder:
 * it stops where the cache's limit leaves no room. A server that is gone pauses it (1 s, doubling
 * up to 30 s) and it resumes with what is missing; a full disk or a changed image stops it with
 * one log line. */
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "sqk/error.h"
#include "common/thread.h"
#include "http_internal.h"

/* Units in flight at most: BG_INFLIGHT on a link that is not bandwidth-bound (16 MiB keeps
 * 300 MB/s at 20 ms RTT busy), BG_FIRST until the link is measured, BG_BW_BOUND on a
 * bandwidth-bound link (a unit's body outlasts the round trip: two keep it busy, more would only
 * queue ahead of the reads). */
#define BG_INFLIGHT 16u
#define BG_FIRST 4u
#define BG_BW_BOUND 2u
#define BG_PAUSE_MIN_MS 1000u
#define BG_PAUSE_MAX_MS 30000u
/* After readahead or the hint's ranges: a stream reads on in windows with gaps between them. */
#define BG_HOLD_MS 200u
#define MIB (1024.0 * 1024.0)
/* Units either side of a read's miss fetched next: a start reads on where it missed. */
#define BG_NEAR 8u

/* A unit being fetched: the chunks it fetches or keeps (pinned by the background). */
struct bg_unit {
	uint64_t u;
	struct http_chunk **ch;
	unsigned n;
	uint64_t need; /* bytes they take in the disk cache */
	bool net;      /* some of them are requested from the server */
};

/* Why the thread ended. */
enum { BG_RUNNING, BG_DONE, BG_BUDGET, BG_DISK, BG_GONE };

struct http_bg {
	pthread_t thread;
	pid_t pid;              /* the process its thread runs in; 0: none */
	bool stop;              /* http_bg_stop asks it to end */
	bool ended;             /* finished or stopped for good: not started again */
	uint64_t cpu;           /* chunks per unit */
	uint64_t nunits;
	uint64_t next;          /* the next unit to look at */
	uint64_t near;          /* the unit of the last read that missed */
	unsigned near_step;     /* 1..2 BG_NEAR: the next of its neighbours (+1, -1, +2...) */
	struct bg_unit fl[BG_INFLIGHT];
	unsigned nfl;
	bool full;              /* the disk cache's room is taken: ends once the units are in */
	bool failed, permanent; /* a job failed (http_bg_job_failed; mu) */
	char why[256];
	uint64_t pause_ms;      /* the current pause after failures (0: none) */
	double tokens;          /* background_rate's bucket, in bytes */
	uint64_t tok_ms;
	uint64_t t0_ms;
	int disk_rc;            /* BG_DISK: what the disk cache said */
};

/* ---- waiting (mu held) ---- */

static void bg_wait(struct http *h, uint64_t ms)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += (time_t)(ms / 1000);
	ts.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	pthread_cond_timedwait(&h->cv, &h->mu, &ts);
}

static bool bg_quit(const struct http *h)
{
	return h->bg->stop || h->cancelled;
}

/* What else is on the wire: BUSY_FETCH while the prefetch hint's ranges or readahead are queued
 * or running, or ended less than BG_HOLD_MS ago (the background waits for them), BUSY_READ while
 * only reads and digest groups are (a promoted background job counts: a read waits on it),
 * BUSY_NONE. */
enum { BUSY_NONE, BUSY_READ, BUSY_FETCH };

static int others_busy(const struct http *h)
{
	const struct http_job *lists[2] = { h->queue, h->running };
	int busy = BUSY_NONE;

	if (h->ahead_end_ms && http_now_ms() - h->ahead_end_ms < BG_HOLD_MS)
		return BUSY_FETCH;

	for (int i = 0; i < 2; i++) {
		for (const struct http_job *j = lists[i]; j; j = i ? j->anext : j->next) {
			if (j->bg && !j->demand)
				continue;
			if (!j->demand)
				return BUSY_FETCH;
			busy = BUSY_READ;
		}
	}
	return busy;
}

/* Units the background may have in flight now: none while the prefetch hint or readahead is on
 * the wire; on a bandwidth-bound link (http_link_bw_bound) two, and one while reads are out;
 * else BG_INFLIGHT once the link is measured, even while reads are out, so that a start's chain
 * of reads never stops the background (its purpose: a start capped at a download's time). */
static unsigned inflight_max(const struct http *h)
{
	int busy = others_busy(h);

	if (busy == BUSY_FETCH)
		return 0;
	if (http_link_bw_bound(h))
		return busy == BUSY_READ ? 1 : BG_BW_BOUND;
	return h->link_rtt_us ? BG_INFLIGHT : BG_FIRST;
}

/* ms until background_rate allows `bytes` more (0: now). A bucket of at most a second's worth
 * (or one unit), charged when a unit starts. */
static uint64_t rate_wait(struct http *h, uint64_t bytes)
{
	struct http_bg *b = h->bg;
	uint64_t rate = h->o.background_rate, now = http_now_ms();
	double cap;

	if (!rate)
		return 0;
	cap = (double)(rate > bytes ? rate : bytes);
	b->tokens += (double)(now - b->tok_ms) * (double)rate / 1000.0;
	b->tok_ms = now;
	if (b->tokens > cap)
		b->tokens = cap;
	if (b->tokens >= (double)bytes)
		return 0;
	return (uint64_t)(((double)bytes - b->tokens) * 1000.0 / (double)rate) + 1;
}

/* ---- units ---- */

static uint64_t nchunks(const struct http *h)
{
	return (h->covered + h->csize - 1) / h->csize;
}

/* Chunks [*k0, *k1) of unit u. */
static void unit_chunks(const struct http *h, uint64_t u, uint64_t *k0, uint64_t *k1)
{
	uint64_t n = nchunks(h);

	*k0 = u * h->bg->cpu;
	*k1 = *k0 + h->bg->cpu < n ? *k0 + h->bg->cpu : n;
}

/* background_left: the units in flight and, at most as much as the disk cache has room for,
 * the image from the next unit on (its cached chunks are found and skipped as it gets there,
 * without a scan of the cache first). mu held. */
static void left_update(struct http *h)
{
	struct http_bg *b = h->bg;
	uint64_t inflight = 0, rest = 0, room = dcache_room(h->dc), k0, k1;

	for (unsigned i = 0; i < b->nfl; i++)
		inflight += b->fl[i].need;
	if (b->next < b->nunits && !b->full) {
		unit_chunks(h, b->next, &k0, &k1);
		rest = h->covered - k0 * h->csize;
	}
	room = room > inflight ? room - inflight : 0;
	atomic_store(&h->n_bg_left, inflight + (rest < room ? rest : room));
}

/* Queues j (its chunks new, LOADING, pinned once for it); NULL-safe, frees an empty j. mu held. */
static void submit_job(struct http *h, struct http_job *j)
{
	if (!j || !j->nch) {
		http_job_free(j);
		return;
	}
	j->off = j->k0 * h->csize;
	if (http_submit(h, j))
		http_chunks_done(h, j, SQK_ENOMEM); /* fails the chunks, frees j */
}

/* Which chunks of [k0, k1) to take (take[]): not kept already, not on disk, as many as fit in
 * `room` bytes of the disk cache (*full when one did not); the bytes they take there. mu held. */
static uint64_t unit_pick(struct http *h, uint64_t k0, uint64_t k1, const bool *on_disk,
			  uint64_t room, bool *take, bool *full)
{
	uint64_t k, need = 0;

	for (k = k0; k < k1; k++) {
		struct http_chunk *c = http_chunk_find(h, k);
		uint64_t size = dcache_entry_size(h->dc, k, http_chunk_len(h, k));

		/* a chunk being checked: its checker writes `stored`; known once it is READY */
		take[k - k0] = c ? c->state == CH_VERIFYING ||
				       (!c->stored && !c->disk && c->state != CH_FAILED)
				 : !on_disk[k - k0];
		if (take[k - k0] && need + size > room) {
			take[k - k0] = false;
			*full = true;
		}
		if (take[k - k0])
			need += size;
	}
	return need;
}

/* The disk cache bytes of the digest groups of chunks [k0, k1) not loaded yet (a digest tree):
 * checking the chunks loads and keeps them. mu held. */
static uint64_t group_need(struct http *h, uint64_t k0, uint64_t k1)
{
	uint64_t g, need = 0;

	if (!http_uses_groups(h))
		return 0;
	for (g = integ_group_of(&h->integ, k0); g <= integ_group_of(&h->integ, k1 - 1); g++) {
		uint64_t a, b, s, e;

		if (integ_group_loaded(&h->integ, g))
			continue;
		integ_group_range(&h->integ, g, &a, &b, &s, &e);
		need += dcache_entry_size(h->dc, DCACHE_SOLO, (size_t)(e - s));
	}
	return need;
}

/* Takes the picked chunks of [k0, k1) into un: those in the table pinned, the others created
 * and requested (runs of consecutive ones, one request each). mu held. */
static void unit_take(struct http *h, uint64_t k0, uint64_t k1, const bool *take,
		      struct bg_unit *un)
{
	struct http_job *j = NULL;
	uint64_t k;

	for (k = k0; k < k1; k++) {
		struct http_chunk *c = take[k - k0] ? http_chunk_pin(h, k) : NULL;

		if (c || !take[k - k0]) {
			submit_job(h, j); /* a run ends */
			j = NULL;
			if (c)
				un->ch[un->n++] = c;
			continue;
		}
		if (!j && (j = http_job_new(h, 0, 0)) != NULL) {
			j->ch = malloc((size_t)(k1 - k) * sizeof(*j->ch));
			j->k0 = k;
			j->bg = true;
		}
		c = j && j->ch ? http_chunk_new(h, k) : NULL; /* its pin: the job's */
		if (!c)
			break; /* no memory: the rest later */
		c->pins++; /* ours */
		un->net = true;
		j->ch[j->nch++] = c;
		j->len += c->len;
		un->ch[un->n++] = c;
	}
	submit_job(h, j);
}

/* Plans unit u into un and starts its requests: 0 or SQK_ENOMEM. Takes what fits in the disk
 * cache besides `inflight` bytes (*full when not all of it did). mu held; dropped to look in the
 * disk cache. */
static int unit_plan(struct http *h, uint64_t u, uint64_t inflight, struct bg_unit *un,
		     bool *full)
{
	uint64_t k0, k1, k, room;
	bool *on_disk, *take;

	unit_chunks(h, u, &k0, &k1);
	on_disk = calloc(2 * (size_t)(k1 - k0), sizeof(*on_disk));
	un->ch = malloc((size_t)(k1 - k0) * sizeof(*un->ch));
	if (!on_disk || !un->ch) {
		free(on_disk);
		free(un->ch);
		un->ch = NULL;
		return SQK_ENOMEM;
	}
	take = on_disk + (k1 - k0);
	pthread_mutex_unlock(&h->mu);
	for (k = k0; k < k1; k++)
		on_disk[k - k0] = dcache_has(h->dc, k);
	pthread_mutex_lock(&h->mu);
	un->u = u;
	un->n = 0;
	room = dcache_room(h->dc);
	room = room > inflight + group_need(h, k0, k1) ? room - inflight - group_need(h, k0, k1)
						       : 0;
	un->need = unit_pick(h, k0, k1, on_disk, room, take, full);
	if (un->need)
		unit_take(h, k0, k1, take, un);
	free(on_disk);
	if (!un->n) {
		free(un->ch);
		un->ch = NULL;
	}
	return 0;
}

/* The next neighbour of the last miss not passed by the image-order sweep yet, if any. */
static bool next_near(struct http_bg *b, uint64_t *u)
{
	while (b->near_step && b->near_step <= 2 * BG_NEAR) {
		uint64_t d = (b->near_step + 1) / 2;
		bool up = b->near_step++ & 1;

		if (up ? b->near + d < b->nunits && b->near + d >= b->next
		       : d <= b->near && b->near - d >= b->next) {
			*u = up ? b->near + d : b->near - d;
			return true;
		}
	}
	b->near_step = 0;
	return false;
}

/* Starts the next unit: a neighbour of the last miss, else the next in image order (skipping
 * one with nothing to fetch or keep); what does not fit in the disk cache's room sets b->full.
 * mu held. */
static void unit_start(struct http *h)
{
	struct http_bg *b = h->bg;
	struct bg_unit *un = &b->fl[b->nfl];
	uint64_t inflight = 0, k0, k1, u;
	bool near = next_near(b, &u);
	unsigned i;
	int rc;

	for (i = 0; i < b->nfl; i++)
		inflight += b->fl[i].need;
	rc = unit_plan(h, near ? u : b->next, inflight, un, &b->full);
	if (rc)
		return; /* no memory now: tried again later */
	b->next += !near;
	if (!un->n)
		return;
	b->nfl++;
	b->tokens -= (double)un->need;
	unit_chunks(h, un->u, &k0, &k1);
	pthread_mutex_unlock(&h->mu);
	http_kick_groups(h, k0, k1 - 1); /* their digests come while they do */
	pthread_mutex_lock(&h->mu);
}

/* Releases unit un's pins. mu held. */
static void unit_release(struct http *h, struct bg_unit *un)
{
	for (unsigned i = 0; i < un->n; i++)
		http_unpin(h, un->ch[i]);
	free(un->ch);
	*un = (struct bg_unit){ 0 };
}

/* Whether every chunk of un is in (or failed): none is on its way or being checked. */
static bool unit_in(const struct bg_unit *un)
{
	for (unsigned i = 0; i < un->n; i++)
		if (un->ch[i]->state == CH_LOADING || un->ch[i]->state == CH_VERIFYING)
			return false;
	return true;
}

/* Checks and keeps the chunks of the oldest unit once they are all in. Returns BG_RUNNING, or
 * why to stop (BG_BUDGET, BG_DISK). mu held (dropped while checking). */
static int unit_settle(struct http *h, bool *settled)
{
	struct http_bg *b = h->bg;
	struct bg_unit *un = &b->fl[0];
	int status = BG_RUNNING, err = 0;

	*settled = b->nfl && unit_in(un);
	if (!*settled)
		return BG_RUNNING;
	for (unsigned i = 0; i < un->n && status == BG_RUNNING && !bg_quit(h); i++) {
		struct http_chunk *c = un->ch[i];
		int prc = 0, rc = c->state == CH_FAILED ? c->err : http_chunk_keep(h, c, &prc);

		if (rc && rc != SQK_ECORRUPT) /* a wrong chunk is logged and dropped */
			err = rc;
		if (prc == SQK_ETOOBIG) {
			status = BG_BUDGET;
		} else if (prc) {
			status = BG_DISK;
			b->disk_rc = prc;
		}
	}
	if (err && err != SQK_EINTR && !b->failed) { /* e.g. its digest group: try again */
		b->failed = true;
		snprintf(b->why, sizeof(b->why), "%s", sqk_strerror(err));
	}
	if (err && b->next > un->u)
		b->next = un->u;
	if (!err && status == BG_RUNNING && un->net) { /* the server answers again */
		if (b->pause_ms)
			http_logf(h, "%s: the background fetch resumed", h->name);
		b->pause_ms = 0;
	}
	unit_release(h, un);
	memmove(b->fl, b->fl + 1, (size_t)(--b->nfl) * sizeof(*b->fl));
	b->fl[b->nfl] = (struct bg_unit){ 0 };
	return status;
}

/* After failures, once the units in flight are settled: a changed image ends the background;
 * else it pauses (1 s doubling up to 30 s) and goes on with what is missing. mu held. */
static int pause_after_failure(struct http *h)
{
	struct http_bg *b = h->bg;
	uint64_t until;

	if (b->permanent)
		return BG_GONE;
	b->failed = false;
	if (!b->pause_ms)
		http_logf(h, "%s: the background fetch pauses: %s; it tries again", h->name,
			  b->why);
	b->pause_ms = b->pause_ms ? b->pause_ms * 2 : BG_PAUSE_MIN_MS;
	if (b->pause_ms > BG_PAUSE_MAX_MS)
		b->pause_ms = BG_PAUSE_MAX_MS;
	until = http_now_ms() + b->pause_ms;
	while (!bg_quit(h) && http_now_ms() < until)
		bg_wait(h, until - http_now_ms());
	return BG_RUNNING;
}

/* One step of the loop: settles, starts a unit or waits. BG_RUNNING or why it ends. mu held. */
static int bg_step(struct http *h)
{
	struct http_bg *b = h->bg;
	bool settled = false;
	int status = unit_settle(h, &settled);
	uint64_t wait;

	left_update(h);
	if (status != BG_RUNNING || settled) /* the next may be in too: no wait */
		return status;
	if (b->failed && !b->nfl)
		return pause_after_failure(h);
	if ((b->full || b->next >= b->nunits) && !b->nfl)
		return b->full ? BG_BUDGET : BG_DONE;
	if (b->failed || b->full || b->nfl >= inflight_max(h) || b->next >= b->nunits) {
		/* woken when a transfer ends or chunks come from the disk; a hold ends by itself */
		bg_wait(h, b->nfl ? 1000 : BG_HOLD_MS);
		return BG_RUNNING;
	}
	wait = rate_wait(h, b->cpu * h->csize);
	if (wait) {
		bg_wait(h, wait);
		return BG_RUNNING;
	}
	unit_start(h);
	return BG_RUNNING;
}

/* The one line saying how it ended (nothing when told to stop: a quiesce, the close; nor when
 * the image was in the cache folder already). */
static void bg_report(struct http *h, int status)
{
	struct http_bg *b = h->bg;
	double mib = (double)atomic_load(&h->n_bg_bytes) / MIB;
	double s = (double)(http_now_ms() - b->t0_ms) / 1000.0;

	if (status == BG_DONE && mib > 0) /* nothing fetched: all there, nothing to say */
		http_logf(h, "%s: fetched %.1f MiB in the background in %.1f s; the image is in "
			  "the cache folder %s", h->name, mib, s, h->cache_folder);
	else if (status == BG_BUDGET)
		http_logf(h, "%s: fetched %.1f MiB in the background in %.1f s; stopped at the "
			  "cache size limit of the cache folder %s (the rest is fetched when read)",
			  h->name, mib, s, h->cache_folder);
	else if (status == BG_DISK)
		http_logf(h, "%s: the background fetch stopped: cannot write to the cache folder "
			  "%s: %s", h->name, h->cache_folder, sqk_strerror(b->disk_rc));
	else if (status == BG_GONE)
		http_logf(h, "%s: the background fetch stopped: %s", h->name, b->why);
}

static void *bg_main(void *arg)
{
	struct http *h = arg;
	struct http_bg *b = h->bg;
	struct sched_param sp = { 0 };
	int status = BG_RUNNING;
	bool cancelled;

	/* it wakes at every transfer that ends: without preempting the thread of a start it
	 * runs beside (SCHED_BATCH; the same share of the CPU, so a reader never waits long on
	 * a lock it holds, as it could behind SCHED_IDLE) */
	pthread_setschedparam(pthread_self(), SCHED_BATCH, &sp);
	pthread_mutex_lock(&h->mu);
	b->tok_ms = http_now_ms();
	b->tokens = (double)(b->cpu * h->csize);
	while (status == BG_RUNNING && !bg_quit(h))
		status = bg_step(h);
	while (b->nfl)
		unit_release(h, &b->fl[--b->nfl]);
	if (status != BG_RUNNING) {
		b->ended = true;
		atomic_store(&h->n_bg_left, 0);
	}
	cancelled = h->cancelled;
	pthread_mutex_unlock(&h->mu);
	if (!cancelled)
		bg_report(h, status);
	return NULL;
}

/* mu held. */
void http_bg_job_failed(struct http *h, const struct http_job *j, int rc)
{
	struct http_bg *b = h->bg;

	if (!b || rc == SQK_EINTR || (b->failed && (b->permanent || !j->permanent)))
		return;
	b->failed = true;
	b->permanent = j->permanent;
	snprintf(b->why, sizeof(b->why), "%s", j->why[0] ? j->why : sqk_strerror(rc));
	pthread_cond_broadcast(&h->cv);
}

/* Whether this process's background fetch runs and has room in the disk cache. mu held. */
static bool bg_running(const struct http *h)
{
	const struct http_bg *b = h->bg;

	return b && b->pid == getpid() && !b->ended && !b->full && !b->stop;
}

/* mu held. */
bool http_bg_sweeping(const struct http *h)
{
	return bg_running(h) && others_busy(h) != BUSY_FETCH;
}

/* mu held. */
void http_bg_missed(struct http *h, uint64_t u)
{
	struct http_bg *b = h->bg;

	if (!bg_running(h))
		return;
	b->near = u;
	b->near_step = 1;
}

/* Borrows io. */
void sqk_io_http_background(struct sqk_io *io)
{
	struct http *h = (struct http *)io;
	struct http_bg *b;

	if (!sqk_io_is_http(io) || !h->o.background || !h->dc || h->o.raw || !h->covered)
		return;
	pthread_mutex_lock(&h->mu);
	if (!h->bg)
		h->bg = calloc(1, sizeof(*h->bg));
	b = h->bg;
	if (b && b->pid != getpid() && !b->ended && !h->cancelled) {
		b->cpu = h->unit / h->csize; /* the request grid's units */
		b->nunits = (nchunks(h) + b->cpu - 1) / b->cpu;
		b->stop = b->failed = b->permanent = b->full = false;
		b->nfl = 0;
		b->pause_ms = 0;
		if (!b->t0_ms)
			b->t0_ms = http_now_ms();
		left_update(h); /* before the thread's first step: not 0 as if done */
		/* the transfer thread first: started by the background thread (its first use after
		 * a fork or a quiesce), it would take the background's SCHED_BATCH */
		if (http_thread_ensure(h) == 0 && thread_start(&b->thread, bg_main, h) == 0)
			b->pid = getpid();
	}
	pthread_mutex_unlock(&h->mu);
}

/* Stops and joins the background thread of this process. */
void http_bg_stop(struct http *h)
{
	struct http_bg *b = h->bg;

	if (!b || b->pid != getpid())
		return;
	pthread_mutex_lock(&h->mu);
	b->stop = true;
	pthread_cond_broadcast(&h->cv);
	pthread_mutex_unlock(&h->mu);
	pthread_join(b->thread, NULL);
	b->pid = 0;
	atomic_store(&h->n_bg_left, 0);
}

/* Frees the background state (its thread stopped). */
void http_bg_free(struct http *h)
{
	free(h->bg);
	h->bg = NULL;
}
