/* SPDX-License-Identifier: BSD-2-Clause */
/* sqk diff -e DIR: the regular files that differ (or that one side only has), written as
 * sqfsdiff does: the old side's under DIR/old, the new side's under DIR/new, at their paths. */
#include "diff.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* mkdir -p of the first len bytes of path (an existing folder is fine). */
static int dx_mkdirs(char *path, size_t len)
{
	char keep = path[len];
	int r = 0;

	path[len] = '\0';
	for (char *p = path + 1;; p++) {
		if (*p != '/' && *p != '\0')
			continue;
		char c = *p;

		*p = '\0';
		if (mkdir(path, 0755) && errno != EEXIST) {
			fprintf(stderr, "sqk diff: cannot create folder %s: %s\n", path,
				strerror(errno));
			r = SQK_EIO;
		}
		*p = c;
		if (r || c == '\0')
			break;
	}
	path[len] = keep;
	return r;
}

int diff_make_dir(const char *dir)
{
	char *p = strdup(dir);
	int r = p ? dx_mkdirs(p, strlen(p)) : SQK_ENOMEM;

	free(p);
	return r;
}

/* Copies file f (its size: f->n->size) to fd. */
static int dx_copy(struct diff *d, struct diff_file *f, const char *path, int fd,
		   const char *out)
{
	uint64_t left = f->n->size;
	ssize_t got;

	while (left) {
		size_t n = left < DIFF_WINDOW ? (size_t)left : DIFF_WINDOW;

		got = diff_file_read(f, path, d->wa, n);
		if (got < 0)
			return (int)got;
		if (got == 0) {
			fprintf(stderr, "sqk diff: %s: /%s: shorter than its size while read\n",
				f->s->arg, path);
			return SQK_ECHANGED;
		}
		if (cmd_write_all(fd, d->wa, (size_t)got)) {
			fprintf(stderr, "sqk diff: cannot write %s: %s\n", out, strerror(errno));
			return SQK_EIO;
		}
		left -= (uint64_t)got;
	}
	return 0;
}

int diff_extract(struct diff *d, struct diff_side *s, const struct diff_node *n,
		 const char *path)
{
	size_t ld = strlen(d->extract), ls = strlen(s->sub), lp = strlen(path);
	char *out = malloc(ld + ls + lp + 3), *slash;
	struct diff_file f = { .fd = -1 };
	int fd = -1, r;

	if (!out)
		return SQK_ENOMEM;
	snprintf(out, ld + ls + lp + 3, "%s/%s/%s", d->extract, s->sub, path);
	slash = strrchr(out, '/');
	r = dx_mkdirs(out, (size_t)(slash - out));
	if (r == 0) {
		fd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
		if (fd < 0) {
			fprintf(stderr, "sqk diff: cannot create %s: %s\n", out, strerror(errno));
			r = SQK_EIO;
		}
	}
	if (r == 0)
		r = diff_file_open(s, n, path, &f);
	if (r == 0)
		r = dx_copy(d, &f, path, fd, out);
	diff_file_close(&f);
	if (fd >= 0 && close(fd) && r == 0) {
		fprintf(stderr, "sqk diff: cannot write %s: %s\n", out, strerror(errno));
		r = SQK_EIO;
	}
	if (r && fd >= 0)
		unlink(out); /* no partial file left */
	free(out);
	return r;
}
