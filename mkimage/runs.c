/* SPDX-License-Identifier: BSD-2-Clause */
/* The external sort of a tree's entry records (runs.h): a buffer of the memory budget collects
 * them, is sorted and appended to an unnamed temporary file (a spill store of no memory of its
 * own) as one run whenever the next record would not fit; the merge reads every run through a
 * buffer of its own and keeps the runs in a heap by their next record. A source that fits in
 * one run never touches the file: its one buffer is sorted and read in place. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "sqk/error.h"
#include "common/format.h"
#include "runs.h"
#include "spill.h"

/* An encoded record: dir (4 bytes), seq (8), the mk_wrec, the name, the target. */
#define REC_HDR (4 + 8 + sizeof(struct mk_wrec))
#define REC_MAX (REC_HDR + SQK_NAME_MAX + SQK_SYMLINK_MAX)
#define READ_MIN (64u << 10)  /* a run's read buffer at least (holds REC_MAX) */
#define READ_MAX (1u << 20)
#define BUDGET_MIN 4096u

/* A run being merged. */
struct run {
	uint64_t ref, left;    /* where its unread bytes start in the store, how many */
	uint8_t *buf;          /* read bytes: buf[off..len) not taken yet */
	size_t off, len, cap;
	struct mk_srec cur;    /* its next record, decoded from buf */
};

struct mk_runs {
	size_t budget;
	uint8_t *mem;          /* the run being filled: mem[0..used) */
	size_t used, cap;
	size_t *recs;          /* offsets of its records in mem */
	size_t nrecs, recs_cap;
	size_t pos;            /* merging one run in memory: the next of recs */
	struct mk_spill *store; /* the runs written */
	struct run *runs;
	size_t nruns, runs_cap;
	size_t *heap;          /* runs by their next record; heap[0] the smallest */
	size_t nheap;
	uint64_t count;
	bool merging, in_mem;
	struct mk_srec cur;    /* in_mem: the current record */
};

static size_t rec_size(const struct mk_srec *r)
{
	return REC_HDR + r->r.name_len + r->r.target_len;
}

static void decode(const uint8_t *p, struct mk_srec *r)
{
	memcpy(&r->dir, p, 4);
	memcpy(&r->seq, p + 4, 8);
	memcpy(&r->r, p + 12, sizeof(r->r));
	r->name = (const char *)p + REC_HDR;
	r->target = r->name + r->r.name_len;
}

static int srec_cmp(const struct mk_srec *a, const struct mk_srec *b)
{
	if (a->dir != b->dir)
		return a->dir < b->dir ? -1 : 1;
	int r = dir_name_cmp(a->name, a->r.name_len, b->name, b->r.name_len);
	if (r)
		return r;
	return (a->seq > b->seq) - (a->seq < b->seq);
}

static int off_cmp(const void *x, const void *y, void *base)
{
	struct mk_srec a, b;
	decode((const uint8_t *)base + *(const size_t *)x, &a);
	decode((const uint8_t *)base + *(const size_t *)y, &b);
	return srec_cmp(&a, &b);
}

int mk_runs_create(struct mk_ctx *c, size_t budget, struct mk_runs **out)
{
	struct mk_runs *s = calloc(1, sizeof(*s));
	if (!s)
		return mk_fail(c, SQK_ENOMEM, "out of memory");
	s->budget = budget < BUDGET_MIN ? BUDGET_MIN : budget;
	int err = mk_spill_create(c, "sorted entries", 0, &s->store);
	if (err) {
		free(s);
		return err;
	}
	*out = s;
	return 0;
}

void mk_runs_destroy(struct mk_runs *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->nruns; i++)
		free(s->runs[i].buf);
	free(s->runs);
	free(s->heap);
	free(s->mem);
	free(s->recs);
	mk_spill_destroy(s->store);
	free(s);
}

static void sort_run(struct mk_runs *s)
{
	if (s->nrecs > 1) /* none: recs may be NULL, which qsort_r must not get */
		qsort_r(s->recs, s->nrecs, sizeof(*s->recs), off_cmp, s->mem);
}

/* Sorts the records in memory and appends them to the store as one run. */
static int write_run(struct mk_ctx *c, struct mk_runs *s)
{
	int err = mk_grow(c, &s->runs, &s->runs_cap, s->nruns + 1, sizeof(*s->runs));
	if (err)
		return err;
	sort_run(s);
	struct run *r = &s->runs[s->nruns];
	memset(r, 0, sizeof(*r));
	for (size_t i = 0; i < s->nrecs && !err; i++) {
		struct mk_srec x;
		uint64_t ref;
		decode(s->mem + s->recs[i], &x);
		err = mk_spill_put(c, s->store, s->mem + s->recs[i], rec_size(&x), &ref);
		if (!i)
			r->ref = ref;
		r->left += rec_size(&x);
	}
	s->nruns++;
	s->used = s->nrecs = 0;
	return err;
}

int mk_runs_put(struct mk_ctx *c, struct mk_runs *s, const struct mk_srec *r)
{
	size_t len = rec_size(r);
	int err = 0;
	if (s->merging)
		return mk_fail(c, SQK_EINVAL,
			       "entry records added after the merge (internal error)");
	if (s->nrecs && s->used + len > s->budget)
		err = write_run(c, s);
	if (!err)
		err = mk_grow(c, &s->mem, &s->cap, s->used + len, 1);
	if (!err)
		err = mk_grow(c, &s->recs, &s->recs_cap, s->nrecs + 1, sizeof(*s->recs));
	if (err)
		return err;
	uint8_t *p = s->mem + s->used;
	memcpy(p, &r->dir, 4);
	memcpy(p + 4, &r->seq, 8);
	memcpy(p + 12, &r->r, sizeof(r->r));
	memcpy(p + REC_HDR, r->name, r->r.name_len);
	if (r->r.target_len)
		memcpy(p + REC_HDR + r->r.name_len, r->target, r->r.target_len);
	s->recs[s->nrecs++] = s->used;
	s->used += len;
	s->count++;
	return 0;
}

/* Decodes run r's next record into r->cur, reading more of it first when needed; 1 at its end. */
static int run_next(struct mk_ctx *c, struct mk_runs *s, struct run *r)
{
	for (int pass = 0;; pass++) {
		size_t have = r->len - r->off;
		if (have >= REC_HDR) {
			decode(r->buf + r->off, &r->cur);
			if (have >= rec_size(&r->cur))
				return 0;
		}
		if (!r->left)
			return have ? mk_fail(c, SQK_ECORRUPT, "sorted entries damaged in the "
					      "temporary file") : 1;
		if (pass)
			return mk_fail(c, SQK_ECORRUPT,
				       "sorted entries damaged in the temporary file");
		memmove(r->buf, r->buf + r->off, have);
		size_t n = r->cap - have < r->left ? r->cap - have : (size_t)r->left;
		int err = mk_spill_get(c, s->store, r->ref, r->buf + have, n);
		if (err)
			return err;
		r->ref += n;
		r->left -= n;
		r->off = 0;
		r->len = have + n;
	}
}

static bool heap_less(const struct mk_runs *s, size_t i, size_t j)
{
	return srec_cmp(&s->runs[s->heap[i]].cur, &s->runs[s->heap[j]].cur) < 0;
}

static void sift_down(struct mk_runs *s, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, m = i;
		if (l < s->nheap && heap_less(s, l, m))
			m = l;
		if (l + 1 < s->nheap && heap_less(s, l + 1, m))
			m = l + 1;
		if (m == i)
			return;
		size_t t = s->heap[i];
		s->heap[i] = s->heap[m];
		s->heap[m] = t;
		i = m;
	}
}

static int start_runs(struct mk_ctx *c, struct mk_runs *s)
{
	int err = s->nrecs ? write_run(c, s) : 0;
	if (!err)
		err = mk_spill_flush(c, s->store);
	if (err)
		return err;
	free(s->mem);
	free(s->recs);
	s->mem = NULL;
	s->recs = NULL;
	size_t cap = s->budget / s->nruns;
	cap = cap < READ_MIN ? READ_MIN : cap > READ_MAX ? READ_MAX : cap;
	if (!(s->heap = calloc(s->nruns, sizeof(*s->heap))))
		return mk_fail(c, SQK_ENOMEM, "out of memory");
	for (size_t i = 0; i < s->nruns; i++) {
		struct run *r = &s->runs[i];
		if (!(r->buf = malloc(cap)))
			return mk_fail(c, SQK_ENOMEM, "out of memory");
		r->cap = cap;
		int rc = run_next(c, s, r);
		if (rc < 0)
			return rc;
		if (!rc)
			s->heap[s->nheap++] = i;
	}
	for (size_t i = s->nheap / 2; i-- > 0;)
		sift_down(s, i);
	return 0;
}

int mk_runs_merge(struct mk_ctx *c, struct mk_runs *s)
{
	s->merging = true;
	if (s->nruns)
		return start_runs(c, s);
	s->in_mem = true;
	sort_run(s);
	if (s->nrecs)
		decode(s->mem + s->recs[0], &s->cur);
	return 0;
}

const struct mk_srec *mk_runs_peek(const struct mk_runs *s)
{
	if (s->in_mem)
		return s->pos < s->nrecs ? &s->cur : NULL;
	return s->nheap ? &s->runs[s->heap[0]].cur : NULL;
}

int mk_runs_pop(struct mk_ctx *c, struct mk_runs *s)
{
	if (s->in_mem) {
		if (++s->pos < s->nrecs)
			decode(s->mem + s->recs[s->pos], &s->cur);
		return 0;
	}
	if (!s->nheap)
		return 0;
	struct run *r = &s->runs[s->heap[0]];
	r->off += rec_size(&r->cur);
	int rc = run_next(c, s, r);
	if (rc < 0)
		return rc;
	if (rc) {
		s->heap[0] = s->heap[--s->nheap];
		free(r->buf);
		r->buf = NULL;
	}
	sift_down(s, 0);
	return 0;
}

uint64_t mk_runs_count(const struct mk_runs *s, size_t *nruns)
{
	*nruns = s->nruns;
	return s->count;
}
