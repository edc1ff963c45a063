/* SPDX-License-Identifier: BSD-2-Clause */
/* The image checker's driver: integrity data first (chunk digests checked in parallel), then the
 * structural walk (library open, table regions, metadata blocks, the tree, every data and
 * fragment block), and last the mapping of each corrupt byte range to the regions it breaks,
 * using the interval list the walk built. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check_internal.h"
#include "common/abi.h"
#include "common/grow.h"
#include "common/integrity.h"
#include "common/thread.h"

#define MAX_NAMES 12
#define MAX_HITS 256

void chk_report(struct chk *c, bool structural, uint64_t start, uint64_t end, const char *region,
		const char *fmt, ...)
{
	struct sqk_check_report r = { structural ? "structure" : "integrity", start, end, region,
				      NULL };
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	r.msg = msg;
	pthread_mutex_lock(&c->mu);
	if (!atomic_load(&c->stop)) {
		c->res->errors++;
		if (structural)
			c->res->structural++;
		else
			c->res->corrupt_ranges++;
		if (c->o->report)
			c->o->report(c->o->ctx, &r);
		if (c->o->max_errors && c->res->errors >= c->o->max_errors)
			atomic_store(&c->stop, true);
	}
	pthread_mutex_unlock(&c->mu);
}

static void chk_log(void *ctx, const char *msg)
{
	struct chk *c = ctx;

	pthread_mutex_lock(&c->mu);
	snprintf(c->logmsg, sizeof(c->logmsg), "%s", msg);
	pthread_mutex_unlock(&c->mu);
}

void chk_last_log(struct chk *c, char *buf, size_t cap)
{
	pthread_mutex_lock(&c->mu);
	snprintf(buf, cap, "%s", c->logmsg[0] ? c->logmsg : "no detail");
	c->logmsg[0] = 0;
	pthread_mutex_unlock(&c->mu);
}

int chk_label(struct chk *c, const char *name, uint32_t *out)
{
	char *s;

	if (mem_grow(&c->labels, &c->caplabels, c->nlabels + 1, sizeof(*c->labels), 0))
		return SQK_ENOMEM;
	s = strdup(name);
	if (!s)
		return SQK_ENOMEM;
	c->labels[c->nlabels] = s;
	*out = (uint32_t)c->nlabels++;
	return 0;
}

int chk_ival_add(struct chk *c, uint64_t start, uint64_t end, uint32_t label)
{
	if (end <= start)
		return 0;
	if (mem_grow(&c->iv, &c->capiv, c->niv + 1, sizeof(*c->iv), 0))
		return SQK_ENOMEM;
	c->iv[c->niv++] = (struct chk_ival){ start + c->offset, end + c->offset, label };
	return 0;
}

int chk_job_add(struct chk *c, const struct chk_job *j)
{
	if (mem_grow(&c->jobs, &c->capjobs, c->njobs + 1, sizeof(*c->jobs), 0))
		return SQK_ENOMEM;
	c->jobs[c->njobs++] = *j;
	return 0;
}

struct par {
	int (*fn)(void *arg);
	void *arg;
	int rc;
};

static void *par_main(void *p)
{
	struct par *w = p;

	w->rc = w->fn(w->arg);
	return NULL;
}

int chk_parallel(unsigned n, int (*fn)(void *arg), void *arg)
{
	pthread_t *t = calloc(n, sizeof(*t));
	struct par *w = calloc(n, sizeof(*w));
	unsigned started = 1;
	int rc = 0;

	if (!t || !w) {
		free(t);
		free(w);
		return SQK_ENOMEM;
	}
	for (unsigned i = 0; i < n; i++)
		w[i] = (struct par){ fn, arg, 0 };
	for (; started < n; started++)
		if (thread_start(&t[started], par_main, &w[started]))
			break;
	par_main(&w[0]);
	for (unsigned i = 1; i < started; i++)
		pthread_join(t[i], NULL);
	for (unsigned i = 0; i < started && rc == 0; i++)
		rc = w[i].rc;
	free(t);
	free(w);
	return rc;
}

static int ival_cmp(const void *a, const void *b)
{
	const struct chk_ival *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

struct hit {
	uint64_t start;
	uint32_t label;
	bool data;
};

static int hit_cmp(const void *a, const void *b)
{
	const struct hit *x = a, *y = b;

	if (x->data != y->data)
		return x->data ? 1 : -1;
	return x->start < y->start ? -1 : x->start > y->start;
}

/* Collects the distinct labels of the intervals overlapping [s, e) into h (at most MAX_HITS). */
static size_t collect_hits(struct chk *c, const uint64_t *maxend, uint64_t s, uint64_t e,
			   struct hit *h, size_t *more)
{
	size_t lo = 0, hi = c->niv, n = 0;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (c->iv[mid].start < e)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo; i-- > 0 && maxend[i] > s;) {
		bool dup = false;

		if (c->iv[i].end <= s)
			continue;
		for (size_t k = 0; k < n && !dup; k++)
			dup = h[k].label == c->iv[i].label;
		if (dup)
			continue;
		if (n == MAX_HITS) {
			(*more)++;
			continue;
		}
		h[n++] = (struct hit){ c->iv[i].start, c->iv[i].label,
				       strncmp(c->labels[c->iv[i].label], "data of ", 8) == 0 };
	}
	return n;
}

/* Names the regions overlapping [s, e) into buf: tables and fragment blocks first, then files,
 * each group in position order. */
static void map_range(struct chk *c, const uint64_t *maxend, uint64_t s, uint64_t e, char *buf,
		      size_t cap)
{
	struct hit h[MAX_HITS];
	size_t more = 0, len = 0, n = collect_hits(c, maxend, s, e, h, &more);

	qsort(h, n, sizeof(*h), hit_cmp);
	buf[0] = 0;
	for (size_t i = 0; i < n; i++) {
		if (i == MAX_NAMES) {
			more += n - i;
			break;
		}
		len += (size_t)snprintf(buf + len, cap - len, "%s%s", i ? ", " : "",
					c->labels[h[i].label]);
		if (len >= cap)
			len = cap - 1;
	}
	if (more)
		snprintf(buf + len, cap - len, " and %zu more", more);
	if (!n)
		snprintf(buf, cap, "%s", c->img ? "unused bytes" : "image (structure unreadable)");
}

/* Reports every merged corrupt range with the regions it breaks. */
static int report_bad(struct chk *c)
{
	uint64_t *maxend;
	char names[1024];

	if (!c->nbad)
		return 0;
	qsort(c->iv, c->niv, sizeof(*c->iv), ival_cmp);
	maxend = malloc((c->niv + 1) * sizeof(*maxend));
	if (!maxend)
		return SQK_ENOMEM;
	for (size_t i = 0; i < c->niv; i++)
		maxend[i] = i && maxend[i - 1] > c->iv[i].end ? maxend[i - 1] : c->iv[i].end;
	for (size_t i = 0; i < c->nbad; i++) {
		uint64_t s = c->bad[2 * i], e = c->bad[2 * i + 1];

		map_range(c, maxend, s, e, names, sizeof(names));
		chk_report(c, false, s, e, names, "chunk digest mismatch in bytes %llu..%llu",
			   (unsigned long long)s, (unsigned long long)e);
	}
	free(maxend);
	return 0;
}

/* Opens the image through the library; a failure is a structural finding. */
static int open_image(struct chk *c)
{
	/* bad chunks are findings (chk_integrity) */
	struct sqk_open_opts oo = { .size = sizeof(oo), .offset = c->offset,
				    .cache_bytes = 256u << 20, .readahead_blocks = 1, .threads = 1,
				    .log = chk_log, .log_ctx = c, .name = "image",
				    .no_verify = true };
	char msg[512];
	int rc;

	rc = sqk_image_open_io(c->io, &oo, &c->img);
	if (rc == SQK_ENOMEM || rc == SQK_EIO)
		return rc;
	if (rc) {
		chk_last_log(c, msg, sizeof(msg));
		/* the line says what it is: "image: truncated image: ..." */
		if (sqk_err_not_image(rc))
			chk_report(c, true, c->offset, c->offset + SQK_SUPER_SIZE, "superblock",
				   "image does not open: %s", strncmp(msg, "image: ", 7) ? msg :
				   msg + 7);
		else
			chk_report(c, true, c->offset, c->offset + SQK_SUPER_SIZE, "superblock",
				   "image does not open: %s (%s)", sqk_strerror(rc), msg);
		c->img = NULL;
	}
	return 0;
}

/* The counts sqk info prints, through the same walk (sqk_image_info), so both say the same. */
static void chk_counts(struct chk *c)
{
	struct sqk_image_info in = { .size = sizeof(in) };

	if (sqk_image_info(c->img, &in) == 0) {
		c->res->counts = in.counts;
		c->res->counts_ok = true;
	}
}

static int run(struct chk *c)
{
	struct integ ig = { 0 };
	bool loaded = false;
	int rc = chk_integrity(c, &ig, &loaded);

	if (rc == 0)
		rc = open_image(c);
	if (rc == 0 && !c->img && c->nbad)
		rc = chk_fallback_regions(c);
	if (rc == 0 && c->img)
		rc = chk_tables(c);
	if (rc == 0 && c->img)
		rc = chk_walk(c);
	if (rc == 0 && c->img)
		rc = chk_blocks(c);
	if (rc == 0 && c->img)
		chk_counts(c);
	if (rc == 0)
		rc = report_bad(c);
	if (loaded)
		integ_free(&ig);
	return rc;
}

static void chk_free(struct chk *c)
{
	sqk_image_close(c->img);
	for (size_t i = 0; i < c->nlabels; i++)
		free(c->labels[i]);
	free(c->labels);
	free(c->iv);
	free(c->jobs);
	free(c->bad);
	free(c->ino_ref);
	free(c->frag_need);
	pthread_mutex_destroy(&c->mu);
}

/* Borrows io and o; fills the caller's *res. */
#define CHECK_OPTS_V1 SQK_ABI_SIZE_V1(struct sqk_check_opts, max_errors)
#define CHECK_RESULT_V1 SQK_ABI_SIZE_V1(struct sqk_check_result, counts)

/* Fills the caller's *o with the defaults. */
void sqk_check_opts_init(struct sqk_check_opts *o)
{
	abi_copy_in(o, sizeof(*o), NULL, CHECK_OPTS_V1);
}

/* The check runs on this library's versions of the options and the result, copied from and to
 * the caller's by their sizes. */
int sqk_check_image(struct sqk_io *io, uint64_t file_size, const struct sqk_check_opts *user,
		    struct sqk_check_result *res)
{
	struct sqk_check_opts o;
	struct sqk_check_result mine = { .size = sizeof(mine) };
	struct chk c = { .io = io, .file_size = file_size, .o = &o, .res = &mine };
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	int rc;

	if (!io || !res)
		return SQK_EINVAL;
	if (res->size < CHECK_RESULT_V1 || abi_copy_in(&o, sizeof(o), user, CHECK_OPTS_V1))
		return SQK_EABI;
	c.offset = c.o->offset;
	c.threads = c.o->threads ? c.o->threads : (cpus > 0 ? (unsigned)cpus : 1);
	if (c.threads > 256)
		c.threads = 256;
	pthread_mutex_init(&c.mu, NULL);
	atomic_init(&c.stop, false);
	rc = run(&c);
	chk_free(&c);
	abi_copy_out(res, &mine, sizeof(mine), CHECK_RESULT_V1);
	return rc;
}
