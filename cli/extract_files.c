/* SPDX-License-Identifier: BSD-2-Clause */
/* sqk extract, phases 2 and 3: regular files' contents and metadata written by N workers,
 * then the deferred hard links to them. A file whose contents fail half way (a read of the
 * image or a write into DEST) is removed, never left with short or wrong bytes; under --force
 * a file that replaces an entry of DEST is written under a temporary name and renamed over it
 * once whole, so that a failure leaves that entry as it was. */
#include "extract.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define X_TMP_NAME 64       /* room for x_tmp_name's names */
#define X_TMP_ATTEMPTS 100  /* temporary names tried before giving up (EEXIST) */

/* DEST/DIR/name for messages, where DIR is the directory of entry idx; caller frees it. */
static char *x_shown(const struct extract *x, size_t idx, const char *name)
{
	const char *dir = x->ents[x->ents[idx].parent].path;
	size_t ld = strlen(x->dest);
	size_t len = ld + strlen(dir) + strlen(name) + 3;
	char *s = malloc(len);

	if (s)
		snprintf(s, len, "%s%s%s%s%s", x->dest, ld && x->dest[ld - 1] == '/' ? "" : "/",
			 dir, *dir ? "/" : "", name);
	return s;
}

/* Creates the file of job idx in dfd: at its name, or under a temporary name (written to tmp)
 * when it replaces an entry. Returns an fd, or -1 (message printed). */
static int x_open_out(struct extract *x, size_t idx, int dfd, char *tmp)
{
	const struct xent *e = &x->ents[idx];
	/* Created with its final permission bits (umask is 0 while extracting); setuid, setgid
	 * and sticky come after chown, which would clear them. */
	const int flags = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC;
	mode_t mode = e->ino.mode & 0777;
	unsigned attempt = 0;
	int fd;

	if (!e->replace) {
		fd = openat(dfd, e->name, flags, mode);
	} else {
		do {
			x_tmp_name(tmp, X_TMP_NAME, idx, attempt);
			fd = openat(dfd, tmp, flags, mode);
		} while (fd < 0 && errno == EEXIST && ++attempt < X_TMP_ATTEMPTS);
	}
	if (fd < 0)
		x_err(x, idx, errno, "cannot create file");
	return fd;
}

/* After the contents of job idx failed (f): removes its partial file, name in dfd, and prints
 * one line: why, then what became of the file. */
static void x_drop(struct extract *x, size_t idx, int dfd, const char *name,
		   const struct x_fail *f)
{
	struct xent *e = &x->ents[idx];
	char *shown = x_shown(x, idx, e->name), *partial = NULL, *tail = NULL;
	int r = unlinkat(dfd, name, 0), en = errno, n;

	e->not_made = true;
	atomic_fetch_add(r ? &x->files_partial : &x->files_removed, 1);
	if (r) {
		partial = x_shown(x, idx, name);
		n = asprintf(&tail, "could not remove the partial file %s: %s",
			     partial ? partial : name, strerror(en));
	} else if (e->replace) {
		n = asprintf(&tail, "removed the partial file; %s is kept as it was",
			     shown ? shown : name);
	} else {
		n = asprintf(&tail, "removed the partial file %s", shown ? shown : name);
	}
	if (n < 0)
		tail = NULL;
	if (!strcmp(f->what, X_STOPPED))
		cmd_read_err_tail(&x->c, e->path, NULL, 0, tail, "stopped by a signal");
	else if (f->err)
		cmd_read_err_tail(&x->c, e->path, &e->ino, f->err, tail, "%s at file offset %llu",
				  f->what, (unsigned long long)f->off);
	else
		cmd_read_err_tail(&x->c, e->path, NULL, 0, tail, "%s: %s (in %s)", f->what,
				  strerror(f->errnum), x->dest);
	free(tail);
	free(partial);
	free(shown);
}

/* Writes job idx into dfd: contents, metadata, then (replacing an entry) the rename. Returns
 * true when the file is whole with its metadata. */
static bool x_job(struct extract *x, size_t idx, int dfd, void *buf)
{
	struct xent *e = &x->ents[idx];
	char tmp[X_TMP_NAME];
	struct x_fail f;
	bool ok;
	int fd = x_open_out(x, idx, dfd, tmp), en;

	if (fd < 0) {
		e->not_made = true;
		return false;
	}
	if (x_write_file(x, idx, fd, buf, &f)) {
		close(fd);
		x_drop(x, idx, dfd, e->replace ? tmp : e->name, &f);
		return false;
	}
	ok = !x_meta(x, idx, fd, dfd); /* a failure here leaves the contents whole: kept */
	if (close(fd)) {
		f = (struct x_fail){ "close failed", 0, errno, e->ino.size };
		x_drop(x, idx, dfd, e->replace ? tmp : e->name, &f);
		return false;
	}
	if (e->replace && x_replace_at(dfd, tmp, e->name)) {
		en = errno;
		unlinkat(dfd, tmp, 0);
		e->not_made = true;
		x_err(x, idx, en, "cannot replace the existing entry (the new file removed)");
		return false;
	}
	return ok;
}

/* Phase 2 worker: creates each file with O_EXCL|O_NOFOLLOW, writes it, sets its metadata. */
static void *x_worker(void *arg)
{
	struct extract *x = arg;
	void *buf = malloc(SQK_X_CHUNK);
	int32_t cur = -2;
	int dfd = -1;
	size_t j, idx;

	if (!buf)
		atomic_store(&x->failed, 1);
	while (buf && !atomic_load(&x->failed) && !x_stopped(x) &&
	       (j = atomic_fetch_add(&x->next_job, 1)) < x->njobs) {
		idx = x->jobs[j];
		if (x->ents[idx].parent != cur) {
			if (dfd >= 0)
				close(dfd);
			cur = x->ents[idx].parent;
			dfd = x_open_dir(x, (size_t)cur);
		}
		if (dfd < 0) {
			x_err(x, idx, errno, "cannot create file");
			x->ents[idx].not_made = true;
			if (x_go_on(x))
				continue;
			atomic_store(&x->failed, 1);
			break;
		}
		if (!x_job(x, idx, dfd, buf)) {
			if (x_go_on(x))
				continue;
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

/* Links from (in s) as name in d: under a temporary name renamed over the entry at name when
 * entry idx replaces one. Returns 0 or -1 with errno. */
static int x_link_one(const struct xent *e, size_t idx, int s, const char *from, int d)
{
	char tmp[X_TMP_NAME];
	unsigned attempt = 0;
	int r, en;

	if (!e->replace)
		return linkat(s, from, d, e->name, 0);
	do {
		x_tmp_name(tmp, sizeof(tmp), idx, attempt);
		r = linkat(s, from, d, tmp, 0);
	} while (r && errno == EEXIST && ++attempt < X_TMP_ATTEMPTS);
	if (r)
		return -1;
	r = x_replace_at(d, tmp, e->name);
	en = errno;
	/* also after a rename that did nothing: the entry at name was this very file */
	unlinkat(d, tmp, 0);
	errno = en;
	return r;
}

/* Phase 3: the remaining names of hard-linked regular files; none to a file not made whole
 * (today phase 3 runs only when every file was). */
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
		if (f->not_made)
			continue;
		s = x_open_dir(x, (size_t)f->parent);
		d = s < 0 ? -1 : x_open_dir(x, (size_t)e->parent);
		r = d < 0 ? -1 : x_link_one(e, i, s, f->name, d);
		if (r)
			x_err(x, i, errno, "cannot create hard link");
		else
			x->made_other++;
		if (s >= 0)
			close(s);
		if (d >= 0)
			close(d);
		if (r && !x_go_on(x))
			return -1;
	}
	return 0;
}
