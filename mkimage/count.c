/* SPDX-License-Identifier: BSD-2-Clause */
/* The totals of the progress line (count.h): fts(3) over the sources on a thread of its own,
 * lstat only, no file opened. A file with several names counts 1/nlink for each name, so that
 * the names in the tree add up to the one file the build reads. */
#include <fts.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "sqk/error.h"
#include "count.h"

struct mk_count {
	pthread_t thread;
	atomic_bool stop, known;
	atomic_uint_least64_t files, bytes;
	char *const *paths;      /* the sources (borrowed from the caller's source description) */
	int npaths;
	bool one_fs, no_hardlinks;
	int32_t max_depth;
	atomic_int *cancel;
	double nfiles, nbytes;   /* the walking thread's sums */
};

/* One source: files and bytes into n's sums. false when the walk was stopped. */
static bool count_one(struct mk_count *n, char *const path)
{
	char *argv[] = { path, NULL };
	FTS *fts = fts_open(argv, FTS_PHYSICAL | FTS_NOCHDIR | (n->one_fs ? FTS_XDEV : 0), NULL);
	FTSENT *e;
	if (!fts)
		return true; /* the build says what is wrong with it */
	while ((e = fts_read(fts))) {
		if (atomic_load(&n->stop) || (n->cancel && atomic_load(n->cancel))) {
			fts_close(fts);
			return false;
		}
		if (e->fts_info == FTS_D && n->max_depth >= 0 && e->fts_level >= n->max_depth)
			fts_set(fts, e, FTS_SKIP);
		if (e->fts_info == FTS_F && S_ISREG(e->fts_statp->st_mode)) {
			const struct stat *st = e->fts_statp;
			double w = !n->no_hardlinks && st->st_nlink > 1 ? 1.0 / (double)st->st_nlink
									 : 1.0;
			n->nfiles += w;
			n->nbytes += w * (double)st->st_size;
		}
	}
	fts_close(fts);
	return true;
}

static void *count_main(void *arg)
{
	struct mk_count *n = arg;
	for (int i = 0; i < n->npaths; i++)
		if (!count_one(n, n->paths[i]))
			return NULL;
	atomic_store(&n->files, (uint64_t)(n->nfiles + 0.5));
	atomic_store(&n->bytes, (uint64_t)(n->nbytes + 0.5));
	atomic_store(&n->known, true);
	return NULL;
}

int mk_count_start(struct mk_ctx *c, struct mk_count **out)
{
	const struct sqk_build_opts *o = c->opt;
	*out = NULL;
	if (c->src->kind != SQK_BUILD_DIRS || c->src->nsources < 1)
		return 0;
	struct mk_count *n = calloc(1, sizeof(*n));
	if (!n)
		return SQK_ENOMEM;
	n->paths = c->src->sources;
	n->npaths = c->src->nsources;
	n->one_fs = o->one_file_system || o->one_file_system_x;
	n->no_hardlinks = o->no_hardlinks;
	/* a source directory that is the root is level 0, as the walk's root; several sources
	 * are level 1 below a made-up root, one level less deep in fts's count */
	bool synthetic = c->src->nsources > 1 || c->src->keep_as_directory;
	n->max_depth = o->max_depth < 0 ? -1 : o->max_depth - (synthetic && o->max_depth > 0);
	n->cancel = c->cancel;
	if (pthread_create(&n->thread, NULL, count_main, n)) {
		free(n); /* no totals: the line goes on without them */
		return 0;
	}
	*out = n;
	return 0;
}

bool mk_count_totals(struct mk_count *n, uint64_t *files, uint64_t *bytes)
{
	if (!n || !atomic_load(&n->known))
		return false;
	*files = atomic_load(&n->files);
	*bytes = atomic_load(&n->bytes);
	return true;
}

void mk_count_stop(struct mk_count *n)
{
	if (!n)
		return;
	atomic_store(&n->stop, true);
	pthread_join(n->thread, NULL);
	free(n);
}
