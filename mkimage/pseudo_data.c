/* SPDX-License-Identifier: BSD-2-Clause */
/* The content of pseudo definitions (pseudo.c): f (the output of /bin/sh -c COMMAND, spooled
 * to an unlinked temporary file; a command that fails fails the build), h and l (a file of
 * this machine), P (a pack file's `file`), R (a range of an unsquashfs -pf file's data part).
 * Each is read by the data stage through a small source over a file descriptor. Also: the date
 * strings of timed definitions (date -d, as mksquashfs), and the empty source of a build from
 * definitions alone. */
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sqk/error.h"
#include "data.h"
#include "pseudo_int.h"
#include "source.h"
#include "tree.h"

extern char **environ;

/* A source of one file: len bytes of fd from base. */
struct fd_src {
	struct mk_source s;
	int fd;
	uint64_t base;
	const char *origin;
};

static int fd_read(struct mk_source *s, struct mk_ctx *c, uint64_t off, void *buf, size_t len)
{
	struct fd_src *f = (struct fd_src *)s;
	size_t got = 0;
	while (got < len) {
		ssize_t n = pread(f->fd, (char *)buf + got, len - got,
				  (off_t)(f->base + off + got));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return mk_fail(c, SQK_EIO, "%s: cannot read: %s", f->origin,
				       strerror(errno));
		if (n == 0)
			return mk_fail(c, SQK_ECHANGED, "%s: the data ends early", f->origin);
		got += (size_t)n;
	}
	return 0;
}

static void fd_destroy(struct mk_source *s)
{
	(void)s;
}

static const struct mk_source_ops fd_ops = { .rereadable = true, .read = fd_read,
					     .destroy = fd_destroy };

/* Adds a regular file at d's path: size bytes of fd from base, with mode, owner and mtime. */
static int add_file(struct mk_ctx *c, const struct pdef *d, int fd, uint64_t base,
		    uint64_t size, const struct mk_entry *attrs)
{
	struct mk_entry e = *attrs;
	e.path = d->path;
	e.origin = d->where;
	e.size = size;
	struct fd_src src = { .s = { &fd_ops }, .fd = fd, .base = base, .origin = d->where };
	struct mk_file_ref fr;
	int err = mk_tree_add(c, &e, &fr);
	return err || !fr.file ? err : mk_data_file(c, &fr, &src.s, &e);
}

/* The attributes d gives (mode from d, the default mtime unless it has one). */
static struct mk_entry def_attrs(struct mk_ctx *c, const struct pdef *d)
{
	struct mk_entry e = { .uid = d->uid, .gid = d->gid, .mode = S_IFREG | d->mode };
	e.mtime = d->mtime >= 0 ? d->mtime : c->opt->default_mtime;
	return e;
}

int pseudo_spool(struct mk_ctx *c, FILE *f, int *fd)
{
	FILE *t = tmpfile();
	char buf[65536];
	size_t n;
	int err = t ? 0 : mk_fail(c, SQK_EIO, "cannot make a temporary file: %s", strerror(errno));
	while (!err && (n = fread(buf, 1, sizeof(buf), f)) > 0)
		if (fwrite(buf, 1, n, t) != n)
			err = mk_fail(c, SQK_EIO, "cannot write a temporary file: %s",
				      strerror(errno));
	if (!err && ferror(f))
		err = mk_fail(c, SQK_EIO, "cannot read standard input: %s", strerror(errno));
	if (!err && fflush(t))
		err = mk_fail(c, SQK_EIO, "cannot write a temporary file: %s", strerror(errno));
	if (!err && (*fd = dup(fileno(t))) < 0)
		err = mk_fail(c, SQK_EIO, "dup: %s", strerror(errno));
	if (t)
		fclose(t);
	return err;
}

/* Runs argv (a path, or a name found in PATH) with its standard output into a new unlinked
 * temporary file *fd and standard error kept (quiet: /dev/null); *status = its wait status. */
static int run_to_file(char *const argv[], bool quiet, int *fd, int *status)
{
	FILE *t = tmpfile();
	if (!t)
		return -1;
	*fd = dup(fileno(t));
	fclose(t);
	if (*fd < 0)
		return -1;
	posix_spawn_file_actions_t fa;
	pid_t pid;
	int r = posix_spawn_file_actions_init(&fa);
	if (!r)
		r = posix_spawn_file_actions_adddup2(&fa, *fd, STDOUT_FILENO);
	if (!r && quiet)
		r = posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
	if (!r)
		r = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	while (!r && waitpid(pid, status, 0) < 0)
		if (errno != EINTR)
			r = errno;
	if (r) {
		close(*fd);
		*fd = -1;
		errno = r;
		return -1;
	}
	return 0;
}

int pseudo_date(struct mk_ctx *c, const char *t, int64_t *secs)
{
	char *argv[] = { "date", "-d", (char *)t, "+%s", NULL };
	char buf[32];
	int fd, st;
	(void)c;
	if (run_to_file(argv, true, &fd, &st))
		return -1;
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
	close(fd);
	if (!WIFEXITED(st) || WEXITSTATUS(st) || n <= 0)
		return -1;
	buf[n] = 0;
	char *end;
	long long v = strtoll(buf, &end, 10);
	if (end == buf || (*end && *end != '\n'))
		return -1;
	*secs = v;
	return 0;
}

/* f: the output of /bin/sh -c COMMAND; a command that fails (exit status not 0, or a signal)
 * fails the build, naming the definition. */
static int apply_command(struct mk_ctx *c, const struct pdef *d)
{
	char *argv[] = { "/bin/sh", "-c", d->target, NULL };
	int fd, st;
	struct stat sb;
	if (fflush(NULL), run_to_file(argv, false, &fd, &st))
		return pseudo_err(c, d, "cannot run /bin/sh: %s", strerror(errno));
	int err = 0;
	char why[64];
	if (!WIFEXITED(st) || WEXITSTATUS(st)) {
		snprintf(why, sizeof(why), WIFEXITED(st) ? "exit status %d" : "signal %d",
			 WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
		err = mk_fail(c, SQK_EINVAL,
			      "pseudo definition at %s: command '%.200s' failed (%s)", d->where,
			      d->target, why);
	} else if (fstat(fd, &sb)) {
		err = pseudo_err(c, d, "cannot stat the command's output: %s", strerror(errno));
	} else {
		struct mk_entry a = def_attrs(c, d);
		err = add_file(c, d, fd, 0, (uint64_t)sb.st_size, &a);
	}
	close(fd);
	return err;
}

/* h, l (not in the image) and P: the file host of this machine. h and l take its attributes
 * (mksquashfs's "reference"), P the definition's. */
static int apply_host(struct mk_ctx *c, const struct pdef *d)
{
	const char *host = d->target;
	struct stat sb;
	bool follow = d->type != 'l';
	if ((follow ? stat(host, &sb) : lstat(host, &sb)))
		return mk_fail(c, sqk_from_errno(errno), "%s at %s: '%s': %s", pseudo_what(d),
			       d->where, host, strerror(errno));
	struct mk_entry e = { .path = d->path, .origin = d->where, .uid = (uint32_t)sb.st_uid,
			      .gid = (uint32_t)sb.st_gid, .mtime = sb.st_mtime, .mode = sb.st_mode,
			      .dev_major = major(sb.st_rdev), .dev_minor = minor(sb.st_rdev) };
	if (d->type == 'P')
		e = def_attrs(c, d);
	if (S_ISDIR(sb.st_mode) || (d->type == 'P' && !S_ISREG(sb.st_mode)))
		return pseudo_err(c, d, "'%s' is not a regular file", host);
	if (S_ISREG(sb.st_mode)) {
		int fd = open(host, O_RDONLY | O_CLOEXEC | (follow ? 0 : O_NOFOLLOW));
		if (fd < 0)
			return mk_fail(c, sqk_from_errno(errno), "%s at %s: cannot open '%s': %s",
				       pseudo_what(d), d->where, host, strerror(errno));
		int err = add_file(c, d, fd, 0, (uint64_t)sb.st_size, &e);
		close(fd);
		return err;
	}
	char target[SQK_SYMLINK_MAX + 1];
	if (S_ISLNK(sb.st_mode)) {
		ssize_t n = readlink(host, target, sizeof(target) - 1);
		if (n < 0)
			return pseudo_err(c, d, "cannot read the symlink '%s'", host);
		target[n] = 0;
		e.target = target;
	}
	struct mk_file_ref fr;
	return mk_tree_add(c, &e, &fr);
}

/* R: LEN bytes at OFF of the data part of the pseudo file the definition came from. */
static int apply_range(struct mk_ctx *c, struct mk_pseudo *p, const struct pdef *d)
{
	struct pdata *pd = &p->data[d->data];
	if (pd->fd < 0 && (pd->fd = open(pd->path, O_RDONLY | O_CLOEXEC)) < 0)
		return mk_fail(c, sqk_from_errno(errno), "cannot open pseudo file '%s': %s",
			       pd->path, strerror(errno));
	struct mk_entry a = def_attrs(c, d);
	return add_file(c, d, pd->fd, pd->start + d->off, d->len, &a);
}

int pseudo_apply_data(struct mk_ctx *c, struct mk_pseudo *p, const struct pdef *d, bool *done)
{
	*done = true;
	switch (d->type) {
	case 'f': return apply_command(c, d);
	case 'h':
	case 'l':
	case 'P': return apply_host(c, d);
	case 'r': return apply_range(c, p, d);
	default: *done = false; return 0;
	}
}

/* ---- the empty source: a build from definitions alone ---- */

static int none_next(struct mk_source *s, struct mk_ctx *c, struct mk_entry *e)
{
	(void)s;
	(void)c;
	(void)e;
	return 1;
}

static const struct mk_source_ops none_ops = { .rereadable = true, .ordered = true,
					       .next = none_next, .destroy = fd_destroy };
static const struct mk_source none_src = { &none_ops };

int mk_source_none_create(struct mk_ctx *c, struct mk_source **out)
{
	(void)c;
	*out = (struct mk_source *)&none_src; /* never written: destroy does nothing */
	return 0;
}
