/* SPDX-License-Identifier: BSD-2-Clause */
/* The checker's block pass: every data block the walk queued and every fragment block of the
 * fragment table, sorted by position and deduplicated, decompressed once each on worker threads
 * (one compressor per thread, neighbouring blocks read together with one large pread), each
 * required to decompress to exactly its expected length (fragments: to at least what the tails
 * in it need, at most block_size). A position stored with two size words is a finding: readers
 * cache a block by its position and kind, so one of the two would read the other's bytes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_internal.h"

#define READ_SPAN (4u << 20)

struct blk_work {
	struct chk *c;
	atomic_size_t next;
	size_t nblocks;
};

static int job_cmp(const void *a, const void *b)
{
	const struct chk_job *x = a, *y = b;

	if (x->pos != y->pos)
		return x->pos < y->pos ? -1 : 1;
	if (x->frag != y->frag)
		return x->frag < y->frag ? -1 : 1;
	if (x->word != y->word)
		return x->word < y->word ? -1 : 1;
	return x->expected < y->expected ? -1 : x->expected > y->expected;
}

/* Queues every fragment block (checked against the tails the walk found in it). */
static int queue_fragments(struct chk *c)
{
	const struct sqk_super *sb = sqk_image_super(c->img);
	char name[48];
	uint32_t l;

	for (uint32_t i = 0; i < sb->fragment_count; i++) {
		const struct frag_entry *f = &c->img->frags[i];
		uint32_t len = f->size & SQK_BLOCK_SIZE_MASK;
		struct chk_job j = { f->start, f->size, c->frag_need[i], 0, 1 };
		int rc;

		snprintf(name, sizeof(name), "fragment block %u", i);
		rc = chk_label(c, name, &l);
		if (rc)
			return rc;
		j.label = l;
		if ((f->size & ~(SQK_BLOCK_SIZE_MASK | SQK_BLOCK_RAW)) || len == 0 ||
		    len > sb->block_size || f->start < c->data_start || f->start > c->data_end ||
		    len > c->data_end - f->start) {
			chk_report(c, true, c->offset + f->start, c->offset + f->start + len, name,
				   "fragment table entry %u (start %llu, size word 0x%08x) is "
				   "invalid",
				   i, (unsigned long long)f->start, f->size);
			continue;
		}
		c->res->fragment_blocks++;
		rc = chk_ival_add(c, f->start, f->start + len, l);
		if (rc == 0)
			rc = chk_job_add(c, &j);
		if (rc)
			return rc;
	}
	return 0;
}

static void check_one(struct chk *c, struct compressor *comp, const struct chk_job *j,
		      const uint8_t *src, uint8_t *out)
{
	size_t len = j->word & SQK_BLOCK_SIZE_MASK, bs = sqk_image_super(c->img)->block_size;
	const char *what = j->frag ? "fragment block" : "data block";
	uint64_t at = c->offset + j->pos;
	ssize_t n = (ssize_t)len;

	if (!(j->word & SQK_BLOCK_RAW))
		n = comp_decompress(comp, src, len, out, bs);
	if (n < 0)
		chk_report(c, true, at, at + len, c->labels[j->label],
			   "%s at offset %llu (%zu bytes) does not decompress: %s", what,
			   (unsigned long long)at, len, sqk_strerror((int)n));
	else if (j->frag ? (size_t)n < j->expected : (size_t)n != j->expected)
		chk_report(c, true, at, at + len, c->labels[j->label],
			   "%s at offset %llu decompresses to %zd bytes, expected %s%u", what,
			   (unsigned long long)at, n, j->frag ? "at least " : "", j->expected);
}

/* Claims the next run of blocks that fits one read; returns its [*i, *e) or false at the end. */
static bool claim(struct blk_work *w, size_t *i, size_t *e)
{
	size_t k = atomic_fetch_add(&w->next, 16);

	if (k >= w->nblocks)
		return false;
	*i = k;
	*e = k + 16 < w->nblocks ? k + 16 : w->nblocks;
	return true;
}

/* Reads jobs [i, e) with as few preads as READ_SPAN allows and checks each. */
static int run_span(struct blk_work *w, struct compressor *comp, uint8_t *buf, uint8_t *out,
		    size_t i, size_t e)
{
	struct chk *c = w->c;

	while (i < e) {
		uint64_t s = c->jobs[i].pos, end = s;
		size_t k = i;
		int rc;

		while (k < e && c->jobs[k].pos >= s &&
		       c->jobs[k].pos + (c->jobs[k].word & SQK_BLOCK_SIZE_MASK) - s <= READ_SPAN) {
			uint64_t je = c->jobs[k].pos + (c->jobs[k].word & SQK_BLOCK_SIZE_MASK);

			end = je > end ? je : end;
			k++;
		}
		rc = sqk_io_read_at(c->io, c->offset + s, buf, (size_t)(end - s));
		if (rc)
			return rc;
		for (; i < k && !atomic_load(&c->stop); i++)
			check_one(c, comp, &c->jobs[i], buf + (c->jobs[i].pos - s), out);
		i = k;
	}
	return 0;
}

static int blk_worker(void *arg)
{
	struct blk_work *w = arg;
	struct chk *c = w->c;
	uint8_t *buf = malloc(READ_SPAN), *out = malloc(sqk_image_super(c->img)->block_size);
	struct compressor *comp = NULL;
	size_t i, e;
	int rc = buf && out ? compressor_create(sqk_image_comp(c->img), &comp) : SQK_ENOMEM;

	while (rc == 0 && !atomic_load(&c->stop) && claim(w, &i, &e))
		rc = run_span(w, comp, buf, out, i, e);
	compressor_destroy(comp);
	free(buf);
	free(out);
	return rc;
}

/* Reports the blocks of one kind stored at one position with different size words (jobs
 * sorted). */
static void check_words(struct chk *c)
{
	for (size_t i = 1; i < c->njobs; i++) {
		const struct chk_job *p = &c->jobs[i - 1], *j = &c->jobs[i];
		uint64_t at = c->offset + j->pos;

		if (p->pos != j->pos || p->frag != j->frag || p->word == j->word)
			continue;
		chk_report(c, true, at, at + (j->word & SQK_BLOCK_SIZE_MASK), c->labels[j->label],
			   "%s at offset %llu is stored with size words 0x%08x and 0x%08x",
			   j->frag ? "fragment block" : "data block", (unsigned long long)at,
			   p->word, j->word);
		while (i + 1 < c->njobs && c->jobs[i + 1].pos == j->pos &&
		       c->jobs[i + 1].frag == j->frag)
			i++; /* once per position */
	}
}

int chk_blocks(struct chk *c)
{
	struct blk_work w = { .c = c };
	size_t n = 0;
	int rc = queue_fragments(c);

	if (rc)
		return rc;
	if (c->njobs) /* qsort(NULL, 0) is undefined: an image may have no data blocks */
		qsort(c->jobs, c->njobs, sizeof(*c->jobs), job_cmp);
	for (size_t i = 0; i < c->njobs; i++)
		if (n == 0 || job_cmp(&c->jobs[n - 1], &c->jobs[i]) != 0)
			c->jobs[n++] = c->jobs[i];
	c->njobs = n;
	check_words(c);
	w.nblocks = n;
	atomic_init(&w.next, 0);
	return chk_parallel(c->threads, blk_worker, &w);
}
