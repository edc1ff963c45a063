/* SPDX-License-Identifier: BSD-2-Clause */
/* sqk extract, filesystem side: every operation is relative to a directory fd and never follows
 * a symlink (O_NOFOLLOW, AT_SYMLINK_NOFOLLOW, /proc/self/fd/N/NAME for l*xattr). */
#include "extract.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "common/bytes.h"

void x_err(struct extract *x, size_t idx, int errnum, const char *what)
{
	if (errnum)
		cmd_err(&x->c, x->ents[idx].path, 0, "%s: %s (in %s)", what, strerror(errnum),
			    x->dest);
	else
		cmd_err(&x->c, x->ents[idx].path, 0, "%s (in %s)", what, x->dest);
}

/* One syscall for the whole path where the kernel has openat2: no symlink anywhere on the way
 * and nothing outside DEST, as the per-component walk below guarantees. -2 = unavailable. */
static int open_dir_at2(int destfd, const char *path)
{
	struct open_how how = { .flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC,
				.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_BENEATH |
					   RESOLVE_NO_MAGICLINKS };
	long fd = syscall(SYS_openat2, destfd, path, &how, sizeof(how));
	if (fd < 0 && (errno == ENOSYS || errno == EPERM || errno == E2BIG))
		return -2;
	return (int)fd;
}

int x_open_dir(struct extract *x, size_t idx)
{
	const char *p = x->ents[idx].path, *slash;
	char comp[SQK_NAME_MAX + 1];
	int fd, nfd;
	size_t len;

	if (*p && (fd = open_dir_at2(x->destfd, p)) != -2)
		return fd;
	fd = dup(x->destfd);

	while (fd >= 0 && *p) {
		slash = strchr(p, '/');
		len = slash ? (size_t)(slash - p) : strlen(p);
		if (len == 0 || len > SQK_NAME_MAX) {
			close(fd);
			errno = EINVAL;
			return -1;
		}
		memcpy(comp, p, len);
		comp[len] = '\0';
		nfd = openat(fd, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		close(fd);
		fd = nfd;
		p += len + (slash != NULL);
	}
	return fd;
}

/* Empties the directory open as fd (consumed). */
static int x_remove_children(int fd)
{
	DIR *d = fdopendir(fd);
	struct dirent *de;
	int r = 0;

	if (!d) {
		close(fd);
		return -1;
	}
	while ((de = readdir(d)) != NULL) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (x_remove_at(dirfd(d), de->d_name))
			r = -1;
	}
	closedir(d);
	return r;
}

int x_remove_at(int dfd, const char *name)
{
	struct stat st;
	int fd;

	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW))
		return errno == ENOENT ? 0 : -1;
	if (!S_ISDIR(st.st_mode))
		return unlinkat(dfd, name, 0);
	fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || x_remove_children(fd))
		return -1;
	return unlinkat(dfd, name, AT_REMOVEDIR);
}

/* Sets one xattr on fd, or on name in dfd without following it. */
static int x_setxattr(int fd, int dfd, const char *name, const char *key, const void *v,
		      size_t len)
{
	char proc[64 + SQK_NAME_MAX];

	if (fd >= 0)
		return fsetxattr(fd, key, v, len, 0);
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d/%s", dfd, name);
	return lsetxattr(proc, key, v, len, 0);
}

/* Whether an xattr failure is a property of the destination (warned once, not an error). */
static bool x_xattr_soft(struct extract *x, size_t idx, const char *key, int errnum)
{
	if (errnum != ENOTSUP && errnum != EPERM && errnum != EACCES)
		return false;
	if (!atomic_exchange(&x->xattr_warned, 1))
		cmd_err(&x->c, x->ents[idx].path, 0, "warning: cannot set xattr %s: %s (in %s; "
			    "further xattr warnings suppressed)", key, strerror(errnum), x->dest);
	return true;
}

/* Restores the xattrs of entry idx (trusted./security. only as root). */
static int x_xattrs(struct extract *x, size_t idx, int fd, int dfd)
{
	const struct xent *e = &x->ents[idx];
	char *names = NULL, *k, *val = NULL;
	size_t len = 0, vlen;
	int r;

	if (e->ino.xattr_idx == SQK_NONE32 || x->no_xattrs)
		return 0;
	r = sqk_xattr_list(x->c.img, &e->ino, NULL, 0, &len);
	if (!r && len) {
		names = malloc(len);
		r = names ? sqk_xattr_list(x->c.img, &e->ino, names, len, &len) : SQK_ENOMEM;
	}
	for (k = names; !r && k && k < names + len; k += strlen(k) + 1) {
		if (!x->root && (!strncmp(k, "trusted.", 8) || !strncmp(k, "security.", 9)))
			continue;
		if (!x_xattr_wanted(x, k))
			continue;
		r = sqk_xattr_get(x->c.img, &e->ino, k, NULL, 0, &vlen);
		free(val);
		val = r ? NULL : malloc(vlen ? vlen : 1);
		if (!r && !val)
			r = SQK_ENOMEM;
		if (!r)
			r = sqk_xattr_get(x->c.img, &e->ino, k, val, vlen, &vlen);
		if (r) {
			cmd_err(&x->c, e->path, r, "cannot read xattr %s", k);
			break;
		}
		if (x_setxattr(fd, dfd, e->name, k, val, vlen) && !x_xattr_soft(x, idx, k, errno)) {
			x_err(x, idx, errno, "cannot set xattr");
			r = -1;
		}
	}
	if (r && r != -1 && !names)
		cmd_err(&x->c, e->path, r, "cannot list xattrs");
	free(names);
	free(val);
	return r ? -1 : 0;
}

/* Owner and mode; the mode after chown, which clears setuid/setgid. */
static int x_owner_mode(struct extract *x, size_t idx, int fd, int dfd)
{
	const struct xent *e = &x->ents[idx];
	bool link = cmd_is(&e->ino, SQK_T_SYMLINK);
	mode_t mode = e->ino.mode & 07777;
	int r;

	if (x->root) {
		r = fd >= 0 ? fchown(fd, e->ino.uid, e->ino.gid) :
			      fchownat(dfd, e->name, e->ino.uid, e->ino.gid, AT_SYMLINK_NOFOLLOW);
		if (r) {
			x_err(x, idx, errno, "cannot set owner");
			return -1;
		}
	}
	if (link)
		return 0;
	/* Regular files were created with their permission bits; only the special bits remain. */
	if (fd >= 0 && cmd_is(&e->ino, SQK_T_FILE) && !(mode & 07000))
		return 0;
	if (fd >= 0)
		r = fchmod(fd, mode);
	else
		r = fchmodat(dfd, e->name, mode, AT_SYMLINK_NOFOLLOW);
	if (r) {
		x_err(x, idx, errno, "cannot set mode");
		return -1;
	}
	return 0;
}

int x_meta(struct extract *x, size_t idx, int fd, int dfd)
{
	const struct xent *e = &x->ents[idx];
	struct timespec ts[2];
	int r;

	if (x->root && x_owner_mode(x, idx, fd, dfd))
		return -1;
	if (x_xattrs(x, idx, fd, dfd))
		return -1;
	if (!x->root && x_owner_mode(x, idx, fd, dfd))
		return -1;
	ts[0].tv_sec = ts[1].tv_sec = (time_t)e->ino.mtime;
	ts[0].tv_nsec = ts[1].tv_nsec = 0;
	r = fd >= 0 ? futimens(fd, ts) : utimensat(dfd, e->name, ts, AT_SYMLINK_NOFOLLOW);
	if (r) {
		x_err(x, idx, errno, "cannot set mtime");
		return -1;
	}
	return 0;
}

/* Writes buf[0..n) at off, skipping all-zero pieces of piece bytes (holes). */
/* Writes buf (n bytes at file offset off) skipping all-zero pieces; *end is set to the end of
 * the last byte range actually written (unchanged when all of it was zeros). */
static int x_write_sparse(int fd, const unsigned char *buf, size_t n, uint64_t off, size_t piece,
			  uint64_t *end)
{
	size_t i = 0, start, len;
	ssize_t w;

	while (i < n) {
		len = n - i < piece ? n - i : piece;
		if (bytes_all_zero(buf + i, len)) {
			i += len;
			continue;
		}
		start = i;
		while (i < n && !bytes_all_zero(buf + i, n - i < piece ? n - i : piece))
			i += n - i < piece ? n - i : piece;
		while (start < i) {
			w = pwrite(fd, buf + start, i - start, (off_t)(off + start));
			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0)
				return -1;
			start += (size_t)w;
		}
		*end = off + i;
	}
	return 0;
}

int x_write_file(struct extract *x, size_t idx, int fd, void *buf, struct x_fail *f)
{
	const struct sqk_inode *ino = &x->ents[idx].ino;
	uint64_t off = 0, end = 0;
	ssize_t n;

	while (off < ino->size) {
		if (x_stopped(x)) {
			*f = (struct x_fail){ X_STOPPED, 0, 0, off };
			return -1;
		}
		n = sqk_read(x->c.img, ino, buf, SQK_X_CHUNK, off);
		if (n <= 0) {
			*f = (struct x_fail){ "read failed", n ? (int)n : SQK_ECORRUPT, 0, off };
			return -1;
		}
		if (x_write_sparse(fd, buf, (size_t)n, off, x->block_size, &end)) {
			*f = (struct x_fail){ "write failed", 0, errno, off };
			return -1;
		}
		off += (uint64_t)n;
		progress_add(&x->pr, 0, (uint64_t)n);
	}
	/* Only a file ending in a hole needs its size set. */
	if (end != ino->size && ftruncate(fd, (off_t)ino->size)) {
		*f = (struct x_fail){ "cannot set the file size", 0, errno, off };
		return -1;
	}
	return 0;
}

void x_mark_replace(struct extract *x, size_t idx, int dfd)
{
	struct stat st;

	if (x->force && !fstatat(dfd, x->ents[idx].name, &st, AT_SYMLINK_NOFOLLOW))
		x->ents[idx].replace = true;
}

void x_tmp_name(char *buf, size_t cap, size_t idx, unsigned attempt)
{
	if (attempt)
		snprintf(buf, cap, ".sqk-partial.%ld.%zu.%u", (long)getpid(), idx, attempt);
	else
		snprintf(buf, cap, ".sqk-partial.%ld.%zu", (long)getpid(), idx);
}

int x_replace_at(int dfd, const char *tmp, const char *name)
{
	struct stat st;
	int e;

	if (renameat(dfd, tmp, dfd, name) == 0)
		return 0;
	e = errno;
	if (e != EISDIR && e != ENOTEMPTY && e != EEXIST)
		return -1;
	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) || !S_ISDIR(st.st_mode)) {
		errno = e;
		return -1;
	}
	if (x_remove_at(dfd, name))
		return -1;
	return renameat(dfd, tmp, dfd, name);
}
