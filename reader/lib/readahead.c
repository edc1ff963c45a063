/* SPDX-License-Identifier: BSD-2-Clause */
/* Batched readahead for sequential file reads: claim a run of contiguous blocks not yet cached,
 * fetch them with one read, verify and decode the one the reader needs on its own thread and
 * hand the others to the worker threads (which verify theirs: hashing runs in parallel too).
 * Each claimed block is decompressed exactly once. */
#include <stdlib.h>

#include "common/thread.h"
#include "internal.h"

#define RA_MAX 256u

struct ra_batch;

struct ra_job {
	struct ra_job *next;
	struct ra_batch *batch;
	const uint8_t *src;
	uint32_t word;
	size_t expected;
	uint64_t pos;
	uint32_t ino;
	struct cblock *b;
};

struct ra_batch {
	atomic_uint refs;
	struct sqk_image *img;
	uint64_t pos;    /* image position of buf */
	size_t len;
	size_t cap;
	uint8_t *buf;
	struct ra_job jobs[];
};

struct workers {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct ra_job *head, *tail;
	bool stop;
	unsigned n;
	struct sqk_image *img;
	pthread_t th[];
};

#define RABUF_ROUND (256u << 10)
#define RABUF_KEEP_BYTES (32u << 20)

/* A read buffer of at least len bytes (*cap = its size), reused when one is free. */
static uint8_t *rabuf_get(struct rabufs *r, size_t len, size_t *cap)
{
	uint8_t *p = NULL;

	pthread_mutex_lock(&r->mu);
	for (unsigned i = 0; i < r->n; i++) {
		if (r->cap[i] >= len) {
			p = r->buf[i];
			*cap = r->cap[i];
			r->n--;
			r->buf[i] = r->buf[r->n];
			r->cap[i] = r->cap[r->n];
			break;
		}
	}
	pthread_mutex_unlock(&r->mu);
	if (!p) {
		*cap = (len + RABUF_ROUND - 1) / RABUF_ROUND * RABUF_ROUND;
		p = malloc(*cap);
	}
	return p;
}

/* Keeps buf for reuse (up to SQK_RABUF_KEEP buffers and RABUF_KEEP_BYTES), else frees it. */
static void rabuf_put(struct rabufs *r, uint8_t *buf, size_t cap)
{
	size_t kept = cap;

	pthread_mutex_lock(&r->mu);
	for (unsigned i = 0; i < r->n; i++)
		kept += r->cap[i];
	if (buf && r->n < SQK_RABUF_KEEP && kept <= RABUF_KEEP_BYTES) {
		r->buf[r->n] = buf;
		r->cap[r->n++] = cap;
		buf = NULL;
	}
	pthread_mutex_unlock(&r->mu);
	free(buf);
}

/* The pool for the other reads into a temporary buffer: the rest of a chunk being verified
 * (verified_reads.c), whose fresh 64 KiB from malloc were page-faulted in on every read. */
uint8_t *rabufs_get(struct rabufs *r, size_t len, size_t *cap)
{
	return rabuf_get(r, len, cap);
}

void rabufs_put(struct rabufs *r, uint8_t *buf, size_t cap)
{
	rabuf_put(r, buf, cap);
}

/* Frees the kept buffers (no batch may be in flight). */
void rabufs_free(struct rabufs *r)
{
	for (unsigned i = 0; i < r->n; i++)
		free(r->buf[i]);
	r->n = 0;
	pthread_mutex_destroy(&r->mu);
}

static void batch_unref(struct ra_batch *bt)
{
	if (atomic_fetch_sub(&bt->refs, 1) == 1) {
		rabuf_put(&bt->img->rabufs, bt->buf, bt->cap);
		free(bt);
	}
}

/* Verifies the job's bytes (hashing the chunks it overlaps, from the batch where they lie
 * inside it) and decodes them into its claimed cache entry. */
static int verify_decode(struct sqk_image *img, struct ra_job *j)
{
	const struct ra_batch *bt = j->batch;
	int rc = verify_span(img, j->pos, j->word & SQK_BLOCK_SIZE_MASK, bt->pos, bt->buf,
				 bt->len, j->ino);

	if (rc) {
		cache_fill(img->cache, j->b, NULL, 0, 0, rc);
		return rc;
	}
	return decode_data(img, j->src, j->word, SQK_BK_DATA, j->expected, j->pos, j->ino,
			       j->b);
}

static void run_job(struct sqk_image *img, struct ra_job *j)
{
	verify_decode(img, j);
	cache_put(img->cache, j->b);
	batch_unref(j->batch);
}

static void *worker_main(void *arg)
{
	struct workers *w = arg;

	for (;;) {
		struct ra_job *j;

		pthread_mutex_lock(&w->mu);
		while (!w->head && !w->stop)
			pthread_cond_wait(&w->cv, &w->mu);
		j = w->head;
		if (j) {
			w->head = j->next;
			if (!w->head)
				w->tail = NULL;
		}
		pthread_mutex_unlock(&w->mu);
		if (!j)
			return NULL;
		run_job(w->img, j);
	}
}

/* Starts n workers owned by img (stopped by workers_stop). */
int workers_start(struct sqk_image *img, unsigned n)
{
	struct workers *w = calloc(1, sizeof(*w) + n * sizeof(pthread_t));

	if (!w)
		return SQK_ENOMEM;
	pthread_mutex_init(&w->mu, NULL);
	pthread_cond_init(&w->cv, NULL);
	w->img = img;
	for (; w->n < n; w->n++) {
		if (thread_start(&w->th[w->n], worker_main, w))
			break;
	}
	__atomic_store_n(&img->workers, w, __ATOMIC_RELEASE); /* read unlocked by ra_steal */
	return 0;
}

/* Lets the workers drain the queue, then joins them; NULL-safe. */
void workers_stop(struct sqk_image *img)
{
	struct workers *w = img->workers;

	if (!w)
		return;
	pthread_mutex_lock(&w->mu);
	w->stop = true;
	pthread_cond_broadcast(&w->cv);
	pthread_mutex_unlock(&w->mu);
	for (unsigned i = 0; i < w->n; i++)
		pthread_join(w->th[i], NULL);
	pthread_cond_destroy(&w->cv);
	pthread_mutex_destroy(&w->mu);
	free(w);
	img->workers = NULL;
}

/* The workers, started by the first caller that needs them (once per image). */
static struct workers *workers_get(struct sqk_image *img)
{
	struct workers *w;

	pthread_mutex_lock(&img->workers_mu);
	if (!img->workers_tried) {
		img->workers_tried = true;
		if (workers_start(img, img->nthreads))
			img->workers = NULL; /* blocks then decode on the reading thread */
	}
	w = img->workers;
	pthread_mutex_unlock(&img->workers_mu);
	return w;
}

static void enqueue(struct sqk_image *img, struct ra_job *j)
{
	struct workers *w = workers_get(img);

	if (!w || w->n == 0) {
		run_job(img, j);
		return;
	}
	j->next = NULL;
	pthread_mutex_lock(&w->mu);
	if (w->tail)
		w->tail->next = j;
	else
		w->head = j;
	w->tail = j;
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->mu);
}

/* Claims blocks k, k+1, ... while they are stored (not sparse) and nobody has them. */
static unsigned claim_run(struct sqk_image *img, struct findex *fi, uint32_t k,
			  struct ra_batch *bt, uint64_t *total)
{
	unsigned n = 0, max = img->readahead < RA_MAX ? img->readahead : RA_MAX;
	uint64_t pos = findex_pos(fi, k);

	*total = 0;
	for (uint32_t j = k; j < fi->nblocks && n < max; j++) {
		uint32_t w = fi->words[j];
		struct ra_job *job = &bt->jobs[n];

		if (!w || cache_get(img->cache, pos, SQK_BK_DATA, false, &job->b) !=
				  SQK_CACHE_CLAIMED)
			break;
		job->batch = bt;
		job->word = w;
		job->pos = pos;
		job->ino = fi->ino;
		job->expected = findex_expected(img, fi, j);
		job->src = (const uint8_t *)(uintptr_t)*total; /* offset until the buffer exists */
		*total += w & SQK_BLOCK_SIZE_MASK;
		pos += w & SQK_BLOCK_SIZE_MASK;
		n++;
	}
	atomic_fetch_add(&img->st.misses, n);
	return n;
}

/* Claims and fetches a run starting at block k with one read; the jobs after the first (all
 * of them when !pin_first) go to the workers. Returns the run's length (0: block k is already
 * cached or in flight, nothing done) with block k pinned in *out when pin_first, or SQK_E*. */
static int fetch_run(struct sqk_image *img, struct findex *fi, uint32_t k, bool pin_first,
		     struct cblock **out)
{
	unsigned max = img->readahead < RA_MAX ? img->readahead : RA_MAX, n;
	struct ra_batch *bt = calloc(1, sizeof(*bt) + max * sizeof(struct ra_job));
	struct sqk_io_ahead ahead;
	uint64_t total;
	int rc;

	if (!bt)
		return SQK_ENOMEM;
	n = claim_run(img, fi, k, bt, &total);
	if (n == 0) {
		free(bt);
		return 0;
	}
	bt->img = img;
	bt->buf = rabuf_get(&img->rabufs, total ? (size_t)total : 1, &bt->cap);
	rc = bt->buf ? img_read_raw_ahead(img, bt->jobs[0].pos, bt->buf, total,
					      stream_ahead(img, fi, bt->jobs[0].pos, &ahead))
		     : SQK_ENOMEM;
	if (rc) {
		for (unsigned i = 0; i < n; i++) {
			cache_fill(img->cache, bt->jobs[i].b, NULL, 0, 0, rc);
			cache_put(img->cache, bt->jobs[i].b);
		}
		rabuf_put(&img->rabufs, bt->buf, bt->cap);
		free(bt);
		return rc;
	}
	if (n > 1)
		atomic_fetch_add(&img->st.batches, 1);
	atomic_init(&bt->refs, n);
	bt->pos = bt->jobs[0].pos;
	bt->len = (size_t)total;
	for (unsigned i = 0; i < n; i++)
		bt->jobs[i].src = bt->buf + (uintptr_t)bt->jobs[i].src;
	for (unsigned i = pin_first ? 1 : 0; i < n; i++)
		enqueue(img, &bt->jobs[i]);
	if (!pin_first)
		return (int)n;
	*out = bt->jobs[0].b;
	rc = verify_decode(img, &bt->jobs[0]);
	batch_unref(bt);
	if (rc) {
		cache_put(img->cache, *out);
		*out = NULL;
		return rc;
	}
	return (int)n;
}

/* Fetches a run starting at block k, decoding block k on this thread. Returns 1 with block k
 * pinned in *out, 0 when block k is already cached or in flight (nothing done), or SQK_E*. */
int img_readahead(struct sqk_image *img, struct findex *fi, uint32_t k,
		  struct cblock **out)
{
	int rc = fetch_run(img, fi, k, true, out);
	return rc > 0 ? 1 : rc;
}

/* Starts fetching the run from block k on the workers, without waiting (a sequential reader
 * asks for the blocks after its request, so they are ready when it gets there). */
void img_prefetch(struct sqk_image *img, struct findex *fi, uint32_t k)
{
	if (k < fi->nblocks && fi->words[k])
		fetch_run(img, fi, k, false, NULL);
}

/* Runs the queued job of the block at pos on this thread, if no worker has started it yet:
 * a reader that needs the block works instead of sleeping. Returns true if it ran. */
bool ra_steal(struct sqk_image *img, uint64_t pos)
{
	struct workers *w = __atomic_load_n(&img->workers, __ATOMIC_ACQUIRE);
	struct ra_job *j = NULL, *prev = NULL;

	if (!w)
		return false;
	pthread_mutex_lock(&w->mu);
	for (j = w->head; j && j->pos != pos; j = j->next)
		prev = j;
	if (j) {
		if (prev)
			prev->next = j->next;
		else
			w->head = j->next;
		if (w->tail == j)
			w->tail = prev;
	}
	pthread_mutex_unlock(&w->mu);
	if (j)
		run_job(img, j);
	return j != NULL;
}
