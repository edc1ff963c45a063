/* SPDX-License-Identifier: BSD-2-Clause */
/* The external sort of a tree's entries (runs.c) for a source whose entries come in any order:
 * records go to a buffer of a fixed budget, which is sorted and written to an unnamed temporary
 * file as a run whenever it is full; at the end the runs are merged, so the records come back
 * sorted by directory, name and sequence number with only a buffer per run in memory. */
#ifndef SQK_MK_RUNS_H
#define SQK_MK_RUNS_H

#include <stddef.h>
#include <stdint.h>

#include "mk.h"
#include "walk.h"

/* One entry record: in the directory numbered dir (its tree order), the seq-th entry of the
 * source, with its attributes r (name_len, target_len), name and target (borrowed). */
struct mk_srec {
	uint32_t dir;
	uint64_t seq;
	struct mk_wrec r;
	const char *name;
	const char *target;
};

struct mk_runs;
/* An empty sort of budget bytes of records in memory (at least 4 KiB). Caller owns *out. */
int mk_runs_create(struct mk_ctx *c, size_t budget, struct mk_runs **out);
void mk_runs_destroy(struct mk_runs *s);
/* Adds s (copied). Only before mk_runs_merge. */
int mk_runs_put(struct mk_ctx *c, struct mk_runs *s, const struct mk_srec *r);
/* Starts the merge: no more puts. */
int mk_runs_merge(struct mk_ctx *c, struct mk_runs *s);
/* The smallest record not taken yet, or NULL at the end; its pointers last until mk_runs_pop. */
const struct mk_srec *mk_runs_peek(const struct mk_runs *s);
/* Takes the record mk_runs_peek gave. */
int mk_runs_pop(struct mk_ctx *c, struct mk_runs *s);
/* Records put and runs written to the temporary file (the tests check the spill happened). */
uint64_t mk_runs_count(const struct mk_runs *s, size_t *nruns);

#endif
