/* SPDX-License-Identifier: BSD-2-Clause */
/* sqk extract, phases 2 and 3: regular files' contents and metadata written by N workers,
 * then the deferred hard links to them. */
#include "extract.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

/* Phase 2 worker: creates each file with O_EXCL|O_NOFOLLOW, writes it, sets its metadata. */
static void *x_worker(void *arg)
{
	struct extract *x = arg;
	void *buf = malloc(SQK_X_CHUNK);
	int32_t cur = -2;
	int dfd = -1, fd;
	size_t j, idx;
	bool ok;

	if (!buf)
		atomic_store(&x->failed, 1);
	while (buf && !atomic_load(&x->failed) &&
	       (j = atomic_fetch_add(&x->next_job, 1)) < x->njobs) {
		idx = x->jobs[j];
		if (x->ents[idx].parent != cur) {
			if (dfd >= 0)
				close(dfd);
			cur = x->ents[idx].parent;
			dfd = x_open_dir(x, (size_t)cur);
		}
		/* Created with its final permission bits (umask is 0 while extracting); setuid,
		 * setgid and sticky come after chown, which would clear them. */
		fd = dfd < 0 ? -1 : openat(dfd, x->ents[idx].name, O_WRONLY | O_CREAT | O_EXCL |
					   O_NOFOLLOW | O_CLOEXEC, x->ents[idx].ino.mode & 0777);
		if (fd < 0) {
			x_err(x, idx, errno, "cannot create file");
			atomic_store(&x->failed, 1);
			break;
		}
		ok = !x_write_file(x, idx, fd, buf) && !x_meta(x, idx, fd, dfd);
		if (close(fd)) {
			x_err(x, idx, errno, "close failed");
			ok = false;
		}
		if (!ok) {
			atomic_store(&x->failed, 1);
			break;
		}
		atomic_fetch_add(&x->files_done, 1);
		progress_add(&x->pr, 1, 0);
	}
	if (dfd >= 0)
		close(dfd);
	free(buf);
	return NULL;
}

int x_run_workers(struct extract *x)
{
	unsigned n = x->threads, i, started = 0;
	pthread_t *t;

	if (n > x->njobs)
		n = x->njobs ? (unsigned)x->njobs : 1;
	t = calloc(n, sizeof(*t));
	if (!t)
		return -1;
	for (i = 0; i < n; i++)
		if (pthread_create(&t[i], NULL, x_worker, x) == 0)
			started++;
	if (!started)
		x_worker(x);
	for (i = 0; i < started; i++)
		pthread_join(t[i], NULL);
	free(t);
	return atomic_load(&x->failed) ? -1 : 0;
}

/* Phase 3: the remaining names of hard-linked regular files. */
int x_link_files(struct extract *x)
{
	size_t i;
	int s, d, r;

	for (i = 0; i < x->nents; i++) {
		const struct xent *e = &x->ents[i];
		const struct xent *f;

		if (e->link_to < 0 || !cmd_is(&e->ino, SQK_T_FILE))
			continue;
		f = &x->ents[e->link_to];
		s = x_open_dir(x, (size_t)f->parent);
		d = s < 0 ? -1 : x_open_dir(x, (size_t)e->parent);
		r = d < 0 ? -1 : linkat(s, f->name, d, e->name, 0);
		if (r)
			x_err(x, i, errno, "cannot create hard link");
		else
			x->made_other++;
		if (s >= 0)
			close(s);
		if (d >= 0)
			close(d);
		if (r)
			return -1;
	}
	return 0;
}
