/* SPDX-License-Identifier: BSD-2-Clause */
/* Worker threads compress blocks; a writer thread appends them strictly in submission order, so
 * the image is byte-identical whatever the thread count. Jobs live in a ring of slots. */
#include "pipeline.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "sqk/error.h"
#include "common/bytes.h"
#include "common/format.h"
#include "reuse.h"

enum { JOB_FREE, JOB_FILLING, JOB_READY, JOB_DONE };

/* Compressed blocks of one file kept back by the writer until the file's verdict. */
struct held_block {
	uint32_t block, word, len;
	size_t at;            /* offset in bytes */
};

struct held {
	struct held_block *v;
	size_t n, cap;
	uint8_t *bytes;
	size_t len, bytes_cap;
};

struct mk_pipeline {
	struct mk_ctx *c;
	struct mk_job *jobs;
	unsigned njobs;
	pthread_mutex_t mu;
	pthread_cond_t cv_work, cv_done, cv_free;
	uint64_t next_submit, next_take, next_write;
	bool finished, stop;
	int err;
	_Atomic uint64_t written;
	pthread_t *workers;
	int nworkers;
	pthread_t writer;
	bool writer_started;
	struct held held;     /* the writer's: blocks of the file awaiting its verdict */
};

struct worker_arg {
	struct mk_pipeline *p;
	struct compressor *comp;
};

static void fail_locked(struct mk_pipeline *p, int err)
{
	if (!p->err)
		p->err = err;
	p->stop = true;
	pthread_cond_broadcast(&p->cv_work);
	pthread_cond_broadcast(&p->cv_done);
	pthread_cond_broadcast(&p->cv_free);
}

static void fail(struct mk_pipeline *p, int err)
{
	pthread_mutex_lock(&p->mu);
	fail_locked(p, err);
	pthread_mutex_unlock(&p->mu);
}

/* --reuse: whether the old stored block holds exactly this block's bytes (decompressed and
 * compared); then out holds the old stored bytes. */
static bool same_as_old(struct mk_pipeline *p, struct compressor *comp, struct mk_job *j)
{
	uint32_t stored = j->reuse_word & SQK_BLOCK_SIZE_MASK;
	if (j->reuse_word & SQK_BLOCK_RAW)
		return stored == j->in_len && !memcmp(j->old, j->in, j->in_len);
	ssize_t r = comp_decompress(comp, j->old, stored, j->out, p->c->opt->block_size);
	if (r != (ssize_t)j->in_len || memcmp(j->out, j->in, j->in_len))
		return false;
	memcpy(j->out, j->old, stored);
	return true;
}

/* Compresses one job; data blocks of zeros become sparse, blocks that don't shrink stay raw. */
static int compress_job(struct mk_pipeline *p, struct compressor *comp, struct mk_job *j)
{
	j->reused = false;
	if (j->kind == MK_JOB_VERDICT || j->kind == MK_JOB_COPY)
		return 0;
	if (j->kind == MK_JOB_DATA && bytes_all_zero(j->in, j->in_len)) {
		j->word = 0;
		return 0;
	}
	if (j->kind == MK_JOB_DATA && j->raw) {
		j->word = (uint32_t)j->in_len | SQK_BLOCK_RAW;
		return 0;
	}
	if (j->kind == MK_JOB_DATA && j->reuse_word && same_as_old(p, comp, j)) {
		j->word = j->reuse_word;
		j->reused = true;
		return 0;
	}
	ssize_t r = comp_compress(comp, j->in, j->in_len, j->out, p->c->opt->block_size);
	if (r < 0)
		return mk_fail(p->c, (int)r, "compression failed: %s", sqk_strerror((int)r));
	j->word = r > 0 ? (uint32_t)r : ((uint32_t)j->in_len | SQK_BLOCK_RAW);
	return 0;
}

static void *worker_main(void *arg)
{
	struct worker_arg *wa = arg;
	struct mk_pipeline *p = wa->p;
	pthread_mutex_lock(&p->mu);
	for (;;) {
		while (!p->stop && p->next_take == p->next_submit && !p->finished)
			pthread_cond_wait(&p->cv_work, &p->mu);
		if (p->stop || (p->finished && p->next_take == p->next_submit))
			break;
		struct mk_job *j = &p->jobs[p->next_take++ % p->njobs];
		pthread_mutex_unlock(&p->mu);
		int err = compress_job(p, wa->comp, j);
		pthread_mutex_lock(&p->mu);
		if (err) {
			fail_locked(p, err);
			break;
		}
		j->state = JOB_DONE;
		pthread_cond_broadcast(&p->cv_done);
	}
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

/* Records where a file's block went (at: its position; stored: its bytes in the image). */
static void place_block(struct mk_ctx *c, struct mk_file *f, uint32_t block, uint32_t word,
			uint32_t len, uint64_t at)
{
	uint32_t stored = word & SQK_BLOCK_SIZE_MASK;
	f->blk->words[block] = word;
	if (stored && !f->blk->started) {
		f->blocks_start = at;
		f->blk->started = true;
	}
	if (!stored) {
		f->blk->zero_bytes += len;
		atomic_fetch_add(&c->st.sparse_blocks, 1);
		return;
	}
	c->st.data_blocks++;
	if (word & SQK_BLOCK_RAW)
		c->st.raw_blocks++;
}

static int write_bytes(struct mk_pipeline *p, const uint8_t *src, size_t len)
{
	int err = len ? mk_write(p->c, src, len) : 0;
	p->written = p->c->pos;
	return err;
}

/* Keeps a finished block of a held file (its position is not known until the verdict). */
static int hold_block(struct mk_pipeline *p, const struct mk_job *j, const uint8_t *src,
		      uint32_t stored)
{
	struct held *h = &p->held;
	int err = mk_grow(p->c, &h->v, &h->cap, h->n + 1, sizeof(*h->v));
	if (!err)
		err = mk_grow(p->c, &h->bytes, &h->bytes_cap, h->len + stored, 1);
	if (err)
		return err;
	memcpy(h->bytes + h->len, src, stored);
	h->v[h->n++] = (struct held_block){ .block = j->block, .word = j->word,
					    .len = (uint32_t)j->in_len, .at = h->len };
	h->len += stored;
	return 0;
}

/* The verdict on the held file: its blocks are written in order, or dropped (a duplicate). */
static int release(struct mk_pipeline *p, const struct mk_job *j)
{
	struct held *h = &p->held;
	int err = 0;
	for (size_t i = 0; i < h->n && j->keep && !err; i++) {
		uint32_t stored = h->v[i].word & SQK_BLOCK_SIZE_MASK;
		uint64_t at = p->c->pos;
		err = write_bytes(p, h->bytes + h->v[i].at, stored);
		if (!err)
			place_block(p->c, j->file, h->v[i].block, h->v[i].word, h->v[i].len, at);
	}
	h->n = 0;
	h->len = 0;
	if (h->bytes_cap > (8u << 20)) { /* a large file was held: give the memory back */
		free(h->bytes);
		h->bytes = NULL;
		h->bytes_cap = 0;
	}
	return err;
}

/* Appends a finished job and records where it went. */
static int write_job(struct mk_pipeline *p, struct mk_job *j)
{
	struct mk_ctx *c = p->c;
	if (j->kind == MK_JOB_VERDICT)
		return release(p, j);
	uint32_t stored = j->word & SQK_BLOCK_SIZE_MASK;
	const uint8_t *src = (j->word & SQK_BLOCK_RAW) || j->kind == MK_JOB_COPY ? j->in : j->out;
	if (j->reused) {
		c->reuse->blocks++;
		c->reuse->bytes += stored;
	}
	if (j->kind == MK_JOB_DATA && j->hold)
		return hold_block(p, j, src, stored);
	uint64_t at = c->pos;
	int err = write_bytes(p, src, stored);
	if (err)
		return err;
	if (j->kind == MK_JOB_FRAG || j->kind == MK_JOB_COPY) {
		/* grown here: the main thread reads them after the finish */
		if ((err = mk_grow(c, &c->frags, &c->frags_cap, (size_t)j->frag_idx + 1,
				   sizeof(*c->frags))))
			return err;
		c->frags[j->frag_idx] = (struct frag_entry){ .start = at, .size = j->word };
		c->st.frag_blocks++;
		return 0;
	}
	place_block(c, j->file, j->block, j->word, (uint32_t)j->in_len, at);
	return 0;
}

static void *writer_main(void *arg)
{
	struct mk_pipeline *p = arg;
	pthread_mutex_lock(&p->mu);
	for (;;) {
		struct mk_job *j = &p->jobs[p->next_write % p->njobs];
		while (!p->stop && !(p->next_write < p->next_submit && j->state == JOB_DONE) &&
		       !(p->finished && p->next_write == p->next_submit))
			pthread_cond_wait(&p->cv_done, &p->mu);
		if (p->stop || p->next_write == p->next_submit)
			break;
		pthread_mutex_unlock(&p->mu);
		int err = write_job(p, j);
		pthread_mutex_lock(&p->mu);
		if (err) {
			fail_locked(p, err);
			break;
		}
		j->state = JOB_FREE;
		p->next_write++;
		pthread_cond_broadcast(&p->cv_free);
	}
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

static int alloc_jobs(struct mk_pipeline *p, uint32_t bs)
{
	p->jobs = calloc(p->njobs, sizeof(*p->jobs));
	if (!p->jobs)
		return SQK_ENOMEM;
	for (unsigned i = 0; i < p->njobs; i++) {
		p->jobs[i].in = malloc(bs);
		p->jobs[i].out = malloc(bs);
		p->jobs[i].old = p->c->reuse ? malloc(bs) : NULL;
		if (!p->jobs[i].in || !p->jobs[i].out || (p->c->reuse && !p->jobs[i].old))
			return SQK_ENOMEM;
	}
	return 0;
}

static void free_pipeline(struct mk_pipeline *p)
{
	for (unsigned i = 0; p->jobs && i < p->njobs; i++) {
		free(p->jobs[i].in);
		free(p->jobs[i].out);
		free(p->jobs[i].old);
	}
	free(p->jobs);
	free(p->workers);
	free(p->held.v);
	free(p->held.bytes);
	pthread_mutex_destroy(&p->mu);
	pthread_cond_destroy(&p->cv_work);
	pthread_cond_destroy(&p->cv_done);
	pthread_cond_destroy(&p->cv_free);
	free(p);
}

static int start_threads(struct mk_pipeline *p, struct worker_arg *args)
{
	for (int i = 0; i < p->nworkers; i++) {
		int err = compressor_create(&p->c->opt->comp, &args[i].comp);
		if (err)
			return mk_fail(p->c, err, "cannot set up the %s compressor: %s",
				       comp_name(p->c->opt->comp.id), sqk_strerror(err));
		args[i].p = p;
	}
	for (int i = 0; i < p->nworkers; i++)
		if (pthread_create(&p->workers[i], NULL, worker_main, &args[i])) {
			p->nworkers = i;
			return mk_fail(p->c, SQK_ENOMEM, "cannot start threads");
		}
	if (pthread_create(&p->writer, NULL, writer_main, p))
		return mk_fail(p->c, SQK_ENOMEM, "cannot start threads");
	p->writer_started = true;
	return 0;
}

/* Worker args (and their compressors) are kept just past the pipeline's worker array. */
struct mk_pipeline_full {
	struct mk_pipeline p;
	struct worker_arg *args;
};

int mk_pipeline_start(struct mk_ctx *c, struct mk_pipeline **out)
{
	struct mk_pipeline_full *pf = calloc(1, sizeof(*pf));
	if (!pf)
		return mk_fail(c, SQK_ENOMEM, "out of memory");
	struct mk_pipeline *p = &pf->p;
	p->c = c;
	p->nworkers = c->opt->threads;
	p->njobs = (unsigned)p->nworkers * 4 + 8;
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->cv_work, NULL);
	pthread_cond_init(&p->cv_done, NULL);
	pthread_cond_init(&p->cv_free, NULL);
	p->written = c->pos;
	p->workers = calloc((size_t)p->nworkers, sizeof(*p->workers));
	pf->args = calloc((size_t)p->nworkers, sizeof(*pf->args));
	int err = (!p->workers || !pf->args) ? SQK_ENOMEM : alloc_jobs(p, c->opt->block_size);
	if (err) {
		mk_fail(c, err, "out of memory");
	} else {
		err = start_threads(p, pf->args);
	}
	*out = p;
	if (err) {
		fail(p, err);
		mk_pipeline_finish(p);
		*out = NULL;
	}
	return err;
}

struct mk_job *mk_pipeline_acquire(struct mk_pipeline *p)
{
	pthread_mutex_lock(&p->mu);
	struct mk_job *j = &p->jobs[p->next_submit % p->njobs];
	while (!p->stop && j->state != JOB_FREE)
		pthread_cond_wait(&p->cv_free, &p->mu);
	if (p->stop)
		j = NULL;
	else
		j->state = JOB_FILLING;
	pthread_mutex_unlock(&p->mu);
	return j;
}

void mk_pipeline_submit(struct mk_pipeline *p)
{
	pthread_mutex_lock(&p->mu);
	p->jobs[p->next_submit % p->njobs].state = JOB_READY;
	p->next_submit++;
	pthread_cond_signal(&p->cv_work);
	pthread_mutex_unlock(&p->mu);
}

uint64_t mk_pipeline_written(struct mk_pipeline *p)
{
	return p->written;
}

int mk_pipeline_finish(struct mk_pipeline *p)
{
	struct mk_pipeline_full *pf = (struct mk_pipeline_full *)p;
	pthread_mutex_lock(&p->mu);
	p->finished = true;
	pthread_cond_broadcast(&p->cv_work);
	pthread_cond_broadcast(&p->cv_done);
	pthread_mutex_unlock(&p->mu);
	for (int i = 0; i < p->nworkers; i++)
		if (p->workers[i])
			pthread_join(p->workers[i], NULL);
	if (p->writer_started)
		pthread_join(p->writer, NULL);
	int err = p->err;
	if (!err && p->next_write != p->next_submit)
		err = mk_fail(p->c, SQK_EIO, "internal error: blocks left unwritten");
	for (int i = 0; pf->args && i < p->c->opt->threads; i++)
		compressor_destroy(pf->args[i].comp);
	free(pf->args);
	free_pipeline(p);
	return err;
}
