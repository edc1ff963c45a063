/* SPDX-License-Identifier: BSD-2-Clause */
/* The output file (outfile.h): the judge of what a path names, the temporary-then-rename file,
 * the block device written in place. */
#include "outfile.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/format.h"

/* Symlinks followed from an output path before giving up (the kernel's limit). */
#define MAX_LINK_HOPS 40

bool outfile_is_squashfs(const uint8_t *head, size_t len)
{
	return len >= 4 && !memcmp(head, "hsqs", 4);
}

bool outfile_is_tar(const uint8_t *head, size_t len)
{
	static const uint8_t gz[] = { 0x1f, 0x8b }, xz[] = { 0xfd, '7', 'z', 'X', 'Z', 0 },
			     zst[] = { 0x28, 0xb5, 0x2f, 0xfd };
	if (len >= 262 && !memcmp(head + 257, "ustar", 5))
		return true;
	return (len >= sizeof(gz) && !memcmp(head, gz, sizeof(gz))) ||
	       (len >= sizeof(xz) && !memcmp(head, xz, sizeof(xz))) ||
	       (len >= sizeof(zst) && !memcmp(head, zst, sizeof(zst)));
}

/* The target of symlink path, relative to the link's directory when it is relative. Caller
 * owns the result; NULL with errno set. */
static char *link_target(const char *path)
{
	size_t cap = 256;
	for (;;) {
		char *buf = malloc(cap);
		if (!buf)
			return NULL;
		ssize_t n = readlink(path, buf, cap);
		if (n < 0) {
			free(buf);
			return NULL;
		}
		if ((size_t)n < cap) {
			buf[n] = 0;
			const char *slash = strrchr(path, '/');
			if (buf[0] == '/' || !slash)
				return buf;
			size_t dlen = (size_t)(slash - path) + 1, len = dlen + (size_t)n + 1;
			char *joined = malloc(len);
			if (joined) {
				memcpy(joined, path, dlen);
				memcpy(joined + dlen, buf, (size_t)n + 1);
			}
			free(buf);
			return joined;
		}
		free(buf);
		cap *= 2;
	}
}

/* Follows path's symlinks to the name they end at (*end, owned), with its lstat in *st, or
 * *lerr the lstat's errno (ENOENT: nothing there). 0, or -1 with errno set (ELOOP, ENOMEM, a
 * readlink error). */
static int follow_links(const char *path, char **end, struct stat *st, int *lerr)
{
	char *cur = strdup(path);
	for (int hops = 0; cur; hops++) {
		*lerr = lstat(cur, st) ? errno : 0;
		if (*lerr || !S_ISLNK(st->st_mode)) {
			*end = cur;
			return 0;
		}
		char *next = hops < MAX_LINK_HOPS ? link_target(cur) : NULL;
		if (hops >= MAX_LINK_HOPS)
			errno = ELOOP;
		free(cur);
		cur = next;
	}
	return -1;
}

/* Reads up to len bytes from the start of path, opened read-only without following a symlink
 * or blocking, which must still be what the lstat saw: a regular file, or (blk) the block
 * device rdev. The count, or -1 with errno (EAGAIN when it was replaced since). */
static ssize_t read_start(const char *path, bool blk, dev_t rdev, uint8_t *head, size_t len)
{
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	ssize_t got = 0;
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) || (blk ? !S_ISBLK(st.st_mode) || st.st_rdev != rdev
				    : !S_ISREG(st.st_mode))) {
		close(fd);
		errno = EAGAIN;
		return -1;
	}
	while ((size_t)got < len) {
		ssize_t n = pread(fd, head + got, len - (size_t)got, (off_t)got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (n < 0)
				got = -1;
			break;
		}
		got += n;
	}
	int e = errno;
	close(fd);
	errno = e;
	return got;
}

/* The judge's word for a file type other than a regular file (NULL for those it accepts). */
static const char *refused_type(mode_t mode, bool devices)
{
	if (S_ISDIR(mode))
		return "a directory";
	if (S_ISCHR(mode))
		return "a character device";
	if (S_ISBLK(mode))
		return devices ? NULL : "a block device";
	if (S_ISFIFO(mode))
		return "a FIFO";
	if (S_ISSOCK(mode))
		return "a socket";
	return S_ISREG(mode) ? NULL : "not a regular file";
}

/* Judges the block device t->path (named name in messages): zeros or the kind are written
 * over, anything else only when forced. */
static void judge_device(const struct stat *st, const struct outfile_kind *kind, bool force,
			 const char *name, struct outfile_target *t)
{
	static const uint8_t zeros[SQK_OUTFILE_DEV_WIPE];
	uint8_t head[SQK_OUTFILE_DEV_WIPE];
	ssize_t n = read_start(t->path, true, st->st_rdev, head, SQK_OUTFILE_DEV_WIPE);

	if (n >= 0 && (!memcmp(head, zeros, (size_t)n) ||
		       kind->ours(head, n < SQK_OUTFILE_HEAD ? (size_t)n : SQK_OUTFILE_HEAD))) {
		t->verdict = SQK_OUT_DEVICE;
		return;
	}
	t->verdict = force ? SQK_OUT_DEVICE : SQK_OUT_REFUSED;
	if (n < 0) {
		snprintf(t->why, sizeof(t->why),
			 "cannot read the block device %s to tell what it holds: %s: not replaced "
			 "(--force replaces it)", name, strerror(errno));
		return;
	}
	const char *what = magic_name(head, (size_t)n);
	if (outfile_is_squashfs(head, (size_t)n))
		what = "a SquashFS image";
	if (what)
		snprintf(t->why, sizeof(t->why),
			 "%s is a block device holding %s: not replaced (--force replaces it)",
			 name, what);
	else
		snprintf(t->why, sizeof(t->why),
			 "%s is a block device holding data that is neither zeros nor %s: not "
			 "replaced (--force replaces it)", name, kind->what);
}

/* Judges the existing regular file t->path (named name in messages). */
static void judge_file(const struct stat *st, const struct outfile_kind *kind, bool force,
		       const char *name, struct outfile_target *t)
{
	uint8_t head[SQK_OUTFILE_HEAD];
	char links[48] = "";
	ssize_t n = st->st_size > 0 ? read_start(t->path, false, 0, head, SQK_OUTFILE_HEAD) : 0;

	if (n == 0 || (n > 0 && kind->ours(head, (size_t)n))) {
		t->verdict = SQK_OUT_REPLACE;
		return;
	}
	t->verdict = force ? SQK_OUT_FORCED : SQK_OUT_REFUSED;
	if (n < 0) {
		snprintf(t->why, sizeof(t->why),
			 "cannot read %s to tell whether it is %s: %s: not replaced (--force "
			 "replaces it)", name, kind->what, strerror(errno));
		return;
	}
	if (st->st_nlink > 1)
		snprintf(links, sizeof(links), " (one of %lu hard links)",
			 (unsigned long)st->st_nlink);
	snprintf(t->why, sizeof(t->why),
		 "%s is a file%s that is not %s: not replaced (--force replaces it)", name, links,
		 kind->what);
}

int outfile_judge(const char *path, const struct outfile_kind *kind, bool force,
		      struct outfile_target *t)
{
	struct stat st;
	char name[320];
	int lerr;

	t->path = NULL;
	t->why[0] = 0;
	t->verdict = SQK_OUT_REFUSED;
	memset(&t->st, 0, sizeof(t->st));
	size_t plen = strlen(path);
	if (plen > 1 && path[plen - 1] == '/') { /* never made: rename would fail after the work */
		snprintf(t->why, sizeof(t->why), "'%s' names a directory: not written (name the "
			 "file without a trailing '/')", path);
		return (t->path = strdup(path)) ? 0 : -1;
	}
	if (follow_links(path, &t->path, &st, &lerr)) {
		if (errno == ENOMEM)
			return -1;
		snprintf(t->why, sizeof(t->why), "cannot follow the symlink '%s': %s", path,
			 strerror(errno));
		return 0;
	}
	if (strcmp(t->path, path))
		snprintf(name, sizeof(name), "'%s' (a symlink to '%s')", path, t->path);
	else
		snprintf(name, sizeof(name), "'%s'", path);
	if (lerr == ENOENT && strcmp(t->path, path)) {
		snprintf(t->why, sizeof(t->why), "'%s' is a dangling symbolic link (to '%s'): not "
			 "written through", path, t->path);
	} else if (lerr == ENOENT) {
		t->verdict = SQK_OUT_NEW;
	} else if (lerr) {
		snprintf(t->why, sizeof(t->why), "cannot look at %s: %s", name, strerror(lerr));
	} else if (refused_type(st.st_mode, kind->devices)) {
		snprintf(t->why, sizeof(t->why), "%s is %s: not replaced", name,
			 refused_type(st.st_mode, kind->devices));
	} else if (S_ISBLK(st.st_mode)) {
		judge_device(&st, kind, force, name, t);
	} else {
		judge_file(&st, kind, force, name, t);
	}
	if (!lerr)
		t->st = st;
	return 0;
}

void outfile_target_free(struct outfile_target *t)
{
	free(t->path);
	t->path = NULL;
}

/* Zeroes the first SQK_OUTFILE_DEV_WIPE bytes of the device open as fd (fewer when it is
 * smaller) and syncs them. 0, or -1 with errno. */
static int wipe_head(int fd, uint64_t size)
{
	static const uint8_t zeros[SQK_OUTFILE_DEV_WIPE];
	size_t len = size < sizeof(zeros) ? (size_t)size : sizeof(zeros), done = 0;
	while (done < len) {
		ssize_t n = pwrite(fd, zeros + done, len - done, (off_t)done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (n == 0)
				errno = ENOSPC;
			return -1;
		}
		done += (size_t)n;
	}
	return fsync(fd);
}

int outfile_open_device(struct outfile *o, const char *path, dev_t rdev)
{
	struct stat st;
	int fl;
	o->fd = open(path, O_WRONLY | O_EXCL | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (o->fd < 0)
		return -1;
	if (fstat(o->fd, &st))
		return -1;
	if (!S_ISBLK(st.st_mode) || (rdev && st.st_rdev != rdev)) { /* replaced since judged */
		close(o->fd);
		o->fd = -1;
		errno = ENOTBLK;
		return -1;
	}
	o->device = true; /* from here on, an abort zeroes its start */
	if ((fl = fcntl(o->fd, F_GETFL)) < 0 || fcntl(o->fd, F_SETFL, fl & ~O_NONBLOCK))
		return -1;
	if (ioctl(o->fd, BLKGETSIZE64, &o->dev_size))
		return -1;
	return wipe_head(o->fd, o->dev_size);
}

/* The message of a failed outfile_create (errno set by the open). */
static void create_msg(const struct outfile *o, const struct outfile_target *t,
		       const char *path, char *msg, size_t msglen)
{
	int e = errno;
	if (t->verdict == SQK_OUT_DEVICE && e == ENOTBLK)
		snprintf(msg, msglen, "'%s' changed since it was looked at (not the block device "
			 "judged): not written", path);
	else if (t->verdict == SQK_OUT_DEVICE && e == EBUSY)
		snprintf(msg, msglen, "'%s' is a block device in use (mounted, or open exclusively "
			 "elsewhere): not written", path);
	else if (t->verdict == SQK_OUT_DEVICE)
		snprintf(msg, msglen, "cannot write the block device '%s': %s", path, strerror(e));
	else
		snprintf(msg, msglen, "cannot create '%s' in '%s': %s", path,
			 o->dir ? o->dir : t->path, strerror(e));
	errno = e;
}

/* Gives the temporary o->fd the mode and owner of the file st it replaces: the owner first
 * (which clears set-id bits), as far as permitted (EPERM is not an error). 0, or -1 with errno. */
static int keep_mode(struct outfile *o, const struct stat *st)
{
	if (fchown(o->fd, st->st_uid, st->st_gid) && errno != EPERM)
		return -1;
	return fchmod(o->fd, st->st_mode & 07777);
}

int outfile_create_judged(struct outfile *o, const char *path,
			      struct outfile_target *t, const char *prefix, char *msg,
			      size_t msglen)
{
	int r;

	memset(o, 0, sizeof(*o));
	o->fd = -1;
	o->prefix = prefix;
	if (t->verdict == SQK_OUT_REFUSED) {
		snprintf(msg, msglen, "%s", t->why);
		outfile_target_free(t);
		errno = 0;
		return -1;
	}
	if (t->verdict == SQK_OUT_DEVICE) {
		r = outfile_open_device(o, t->path, t->st.st_rdev);
	} else {
		r = outfile_open(o, t->path, prefix);
		o->judged = true;
		o->was_new = t->verdict == SQK_OUT_NEW;
		o->old_dev = t->st.st_dev;
		o->old_ino = t->st.st_ino;
		o->old_ctime = t->st.st_ctim;
		if (!r && !o->was_new)
			r = keep_mode(o, &t->st);
	}
	if (r)
		create_msg(o, t, path, msg, msglen);
	o->path = t->path; /* freed by commit or abort */
	t->path = NULL;
	return r;
}

int outfile_create(struct outfile *o, const char *path, const struct outfile_kind *kind,
		       bool force, const char *prefix, char *msg, size_t msglen)
{
	struct outfile_target t;

	memset(o, 0, sizeof(*o));
	o->fd = -1;
	o->prefix = prefix;
	if (outfile_judge(path, kind, force, &t)) {
		snprintf(msg, msglen, "out of memory");
		return -1;
	}
	return outfile_create_judged(o, path, &t, prefix, msg, msglen);
}

int outfile_open(struct outfile *o, const char *path, const char *prefix)
{
	char *copy = strdup(path);
	o->fd = -1;
	o->tmpname = NULL;
	o->prefix = prefix;
	o->path = NULL;
	o->device = false;
	o->dev_size = 0;
	o->judged = false;
	o->dir = copy ? strdup(dirname(copy)) : NULL;
	free(copy);
	if (!o->dir)
		return -1;
	o->fd = open(o->dir, O_TMPFILE | O_WRONLY | O_CLOEXEC, 0666);
	if (o->fd >= 0)
		return 0;
	if (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL)
		return -1;
	size_t len = strlen(o->dir) + strlen(prefix) + 16;
	if (!(o->tmpname = malloc(len)))
		return -1;
	snprintf(o->tmpname, len, "%s/%s-XXXXXX", o->dir, prefix);
	o->fd = mkostemp(o->tmpname, O_CLOEXEC);
	if (o->fd < 0) {
		int e = errno;
		free(o->tmpname);
		o->tmpname = NULL;
		errno = e;
		return -1;
	}
	mode_t um = umask(0);
	umask(um);
	return fchmod(o->fd, 0666 & ~um);
}

/* Links the unnamed temporary under a fresh temporary name in its directory. */
static int give_name(struct outfile *o)
{
	char proc[64];
	size_t len = strlen(o->dir) + strlen(o->prefix) + 40;
	if (!(o->tmpname = malloc(len)))
		return -1;
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", o->fd);
	for (unsigned i = 0;; i++) {
		snprintf(o->tmpname, len, "%s/%s-%d-%u.tmp", o->dir, o->prefix, (int)getpid(), i);
		if (!linkat(AT_FDCWD, proc, AT_FDCWD, o->tmpname, AT_SYMLINK_FOLLOW))
			return 0;
		if (errno != EEXIST || i > 100) {
			int e = errno;
			free(o->tmpname);
			o->tmpname = NULL;
			errno = e;
			return -1;
		}
	}
}

/* Gives the temporary the name path where nothing was: linked (the unnamed temporary) or
 * renamed without replacing (the named one); EEXIST when something appeared there since. */
static int place_new(struct outfile *o, const char *path)
{
	char proc[64];
	if (o->tmpname) {
		if (!renameat2(AT_FDCWD, o->tmpname, AT_FDCWD, path, RENAME_NOREPLACE))
			return 0;
		/* EINVAL: the file system cannot; link never replaces either */
		if (errno != EINVAL)
			return -1;
		if (link(o->tmpname, path))
			return -1;
		unlink(o->tmpname);
		return 0;
	}
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", o->fd);
	return linkat(AT_FDCWD, proc, AT_FDCWD, path, AT_SYMLINK_FOLLOW);
}

/* Whether path is still the file the judge saw, unchanged (0: a file removed and made again may
 * get the same inode, not the same ctime), else -1 with errno EEXIST. */
static int still_there(const struct outfile *o, const char *path)
{
	struct stat st;
	if (!lstat(path, &st) && S_ISREG(st.st_mode) && st.st_dev == o->old_dev &&
	    st.st_ino == o->old_ino && st.st_ctim.tv_sec == o->old_ctime.tv_sec &&
	    st.st_ctim.tv_nsec == o->old_ctime.tv_nsec)
		return 0;
	errno = EEXIST;
	return -1;
}

int outfile_commit(struct outfile *o, const char *path)
{
	if (!path)
		path = o->path;
	if (o->device) {
		int r = close(o->fd);
		o->fd = -1;
		outfile_abort(o);
		return r;
	}
	if (o->judged && o->was_new) {
		if (place_new(o, path))
			return -1;
	} else {
		if (o->judged && still_there(o, path))
			return -1;
		if (!o->tmpname && give_name(o))
			return -1;
		if (rename(o->tmpname, path))
			return -1;
	}
	free(o->tmpname);
	o->tmpname = NULL;
	close(o->fd);
	o->fd = -1;
	outfile_abort(o);
	return 0;
}

void outfile_abort(struct outfile *o)
{
	if (o->fd >= 0 && o->device)
		(void)wipe_head(o->fd, o->dev_size); /* best effort: no partial output stays */
	if (o->fd >= 0)
		close(o->fd);
	if (o->tmpname)
		unlink(o->tmpname);
	free(o->tmpname);
	free(o->dir);
	free(o->path);
	o->fd = -1;
	o->tmpname = NULL;
	o->dir = NULL;
	o->path = NULL;
	o->device = false;
}
