/* Worker threads compress blocks; a writer thread appends them strictly in submission order, so
 * the image is byte-identical whatever the thread count. Jobs live in a ring of slots. */
#include "pipeline.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "common/format.h"

enum { JOB_FREE, JOB_FILLING, JOB_READY, JOB_DONE };

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
};

struct worker_arg {
	struct mk_pipeline *p;
	struct sqk_compressor *comp;
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

static bool all_zero(const uint8_t *b, size_t len)
{
	static const uint8_t zero[256];
	while (len >= sizeof(zero)) {
		if (memcmp(b, zero, sizeof(zero)))
			return false;
		b += sizeof(zero);
		len -= sizeof(zero);
	}
	return memcmp(b, zero, len) == 0;
}

/* Compresses one job; data blocks of zeros become sparse, blocks that don't shrink stay raw. */
static int compress_job(struct mk_pipeline *p, struct sqk_compressor *comp, struct mk_job *j)
{
	if (j->kind == MK_JOB_DATA && all_zero(j->in, j->in_len)) {
		j->word = 0;
		return 0;
	}
	ssize_t r = sqk_compress(comp, j->in, j->in_len, j->out, p->c->opt->block_size);
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

/* Appends a finished job and records where it went. */
static int write_job(struct mk_pipeline *p, struct mk_job *j)
{
	struct mk_ctx *c = p->c;
	uint32_t stored = j->word & SQK_BLOCK_SIZE_MASK;
	const uint8_t *src = (j->word & SQK_BLOCK_RAW) ? j->in : j->out;
	uint64_t at = c->pos;
	if (stored) {
		int err = mk_write(c, src, stored);
		if (err)
			return err;
		p->written = c->pos;
		if ((j->word & SQK_BLOCK_RAW) && j->kind == MK_JOB_DATA)
			c->st.raw_blocks++;
	}
	if (j->kind == MK_JOB_FRAG) {
		c->frags[j->frag_idx] = (struct sqk_frag_entry){ .start = at, .size = j->word };
		c->st.frag_blocks++;
		return 0;
	}
	struct mk_file *f = j->file;
	f->words[j->block] = j->word;
	if (stored && !f->started) {
		f->blocks_start = at;
		f->started = true;
	}
	if (stored)
		c->st.data_blocks++;
	else
		atomic_fetch_add(&c->st.sparse_blocks, 1);
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
		if (!p->jobs[i].in || !p->jobs[i].out)
			return SQK_ENOMEM;
	}
	return 0;
}

static void free_pipeline(struct mk_pipeline *p)
{
	for (unsigned i = 0; p->jobs && i < p->njobs; i++) {
		free(p->jobs[i].in);
		free(p->jobs[i].out);
	}
	free(p->jobs);
	free(p->workers);
	pthread_mutex_destroy(&p->mu);
	pthread_cond_destroy(&p->cv_work);
	pthread_cond_destroy(&p->cv_done);
	pthread_cond_destroy(&p->cv_free);
	free(p);
}

static int start_threads(struct mk_pipeline *p, struct worker_arg *args)
{
	for (int i = 0; i < p->nworkers; i++) {
		int err = sqk_compressor_create(&p->c->opt->comp, &args[i].comp);
		if (err)
			return mk_fail(p->c, err, "cannot set up the %s compressor: %s",
				       sqk_comp_name(p->c->opt->comp.id), sqk_strerror(err));
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
		sqk_compressor_destroy(pf->args[i].comp);
	free(pf->args);
	free_pipeline(p);
	return err;
}
