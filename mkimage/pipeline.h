/* SPDX-License-Identifier: BSD-2-Clause */
/* The block pipeline: the main thread fills jobs in order, worker threads compress them (each
 * with its own compressor), one writer thread appends them in submission order. */
#ifndef SQK_MK_PIPELINE_H
#define SQK_MK_PIPELINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mk.h"

/* DATA: one block of a file; FRAG: one fragment block; VERDICT: the writer writes (keep) or drops
 * the blocks of `file` it held back. */
/* COPY: an old fragment block (--reuse) written as it is from in. */
enum mk_job_kind { MK_JOB_DATA, MK_JOB_FRAG, MK_JOB_VERDICT, MK_JOB_COPY };

struct mk_job {
	uint8_t *in;          /* block_size bytes, filled by the main thread */
	uint8_t *out;         /* block_size bytes, compressed output */
	size_t in_len;
	uint32_t word;        /* size word after compression; 0 = sparse */
	enum mk_job_kind kind;
	struct mk_file *file; /* MK_JOB_DATA */
	uint32_t block;       /* MK_JOB_DATA: block index in the file */
	uint32_t frag_idx;    /* MK_JOB_FRAG */
	bool hold;            /* MK_JOB_DATA: kept by the writer until the file's verdict */
	bool keep;            /* MK_JOB_VERDICT */
	uint8_t *old;         /* --reuse: the old stored block (block_size bytes; NULL without) */
	uint32_t reuse_word;  /* MK_JOB_DATA: its size word; 0 = no old block to compare with */
	bool reused;          /* set by the worker: the old block is this block, copied */
	int state;
	bool raw;             /* MK_JOB_DATA: stored uncompressed (the uncompressed action) */
};

/* Creates the pipeline with opt->threads workers. Caller owns *out. */
int mk_pipeline_start(struct mk_ctx *c, struct mk_pipeline **out);

/* Waits for a free job slot (the next in order) and returns it, or NULL on error/cancel. */
struct mk_job *mk_pipeline_acquire(struct mk_pipeline *p);

/* Hands the job acquired last to the workers. */
void mk_pipeline_submit(struct mk_pipeline *p);

/* Waits until everything submitted is written, stops the threads and frees p. Returns the first
 * error of any thread (its message is in c->errmsg). */
int mk_pipeline_finish(struct mk_pipeline *p);

/* Bytes written so far (for progress). */
uint64_t mk_pipeline_written(struct mk_pipeline *p);

#endif
