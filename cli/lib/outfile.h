/* SPDX-License-Identifier: BSD-2-Clause */
/* An output file that never clobbers what it should not, and that appears under its name only
 * once it is complete. What the name holds is judged first (outfile_judge, no side
 * effects): a character device, FIFO, socket or directory is refused, and so is a non-empty
 * regular file of another kind than the output, or a block device holding something else than
 * zeros or that kind, unless forced; a symlink is followed and its target judged (a dangling one
 * refused). A file is written as an unnamed temporary in its destination directory (O_TMPFILE),
 * or as a named ".PREFIX-XXXXXX" temporary there where O_TMPFILE is unsupported, given the mode
 * and owner of the file it replaces, then linked and renamed into place, atomically replacing
 * the older file if it is still the one judged (never what appeared since); a failed or
 * interrupted write leaves the directory as it was. A block device (where the output allows it)
 * is written in place instead: opened O_EXCL, its first 4 KiB zeroed and synced before anything
 * else is written, and again if the write fails. Used by `sqk mkimage` (the image), `sqk tar
 * -o` (the archive) and the FUSE trace. */
#ifndef SQK_OUTFILE_H
#define SQK_OUTFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

/* Bytes of an existing file that a kind's recogniser sees (a tar header is 512). */
#define SQK_OUTFILE_HEAD 512

/* The bytes zeroed at the start of a block device before it is written. */
#define SQK_OUTFILE_DEV_WIPE 4096

/* What an output is, for the judge. */
struct outfile_kind {
	const char *what;   /* in messages: "a SquashFS image" */
	/* Whether the first len bytes (len <= SQK_OUTFILE_HEAD; fewer when the file is shorter)
	 * of an existing non-empty file are of this kind: such a file is replaced unforced. */
	bool (*ours)(const uint8_t *head, size_t len);
	bool devices;       /* block devices are written in place (else refused) */
};

/* The first four bytes are the SquashFS magic "hsqs". */
bool outfile_is_squashfs(const uint8_t *head, size_t len);

/* A tar archive (ustar magic at offset 257, POSIX or GNU), or a gzip, xz or zstd stream (what
 * `sqk tar -z`, `-J`, `--zstd` write). */
bool outfile_is_tar(const uint8_t *head, size_t len);

enum outfile_verdict {
	SQK_OUT_NEW,      /* nothing there: created (never through a dangling symlink) */
	SQK_OUT_REPLACE,  /* an empty regular file or one of the kind: replaced atomically */
	SQK_OUT_FORCED,   /* a regular file of another kind, replaced because forced */
	SQK_OUT_DEVICE,   /* a block device holding zeros, the kind or forced: written in place */
	SQK_OUT_REFUSED,  /* anything else; why says what and why */
};

struct outfile_target {
	enum outfile_verdict verdict;
	char *path;      /* where the output goes: path, or the end of its symlinks (owned) */
	char why[600];   /* SQK_OUT_REFUSED: "'X' is a character device: not replaced" */
	struct stat st;  /* the lstat of path when the verdict is not SQK_OUT_NEW */
};

/* Judges what path names as an output of kind (borrowed), reading nothing but the first
 * SQK_OUTFILE_HEAD bytes of an existing regular file or the first SQK_OUTFILE_DEV_WIPE bytes of
 * a block device (opened read-only); force lets a regular file of another kind, or a block
 * device holding something else than zeros or the kind, be replaced. A dangling symlink and a
 * path ending in '/' are refused. No side effects. Fills *t (free t->path with
 * outfile_target_free). 0, or -1 with errno set (out of memory) and nothing to free. */
int outfile_judge(const char *path, const struct outfile_kind *kind, bool force,
		      struct outfile_target *t);

void outfile_target_free(struct outfile_target *t);

struct outfile {
	int fd;          /* the temporary or the device, open for writing; -1 when closed */
	char *dir;       /* the destination directory (owned) */
	char *tmpname;   /* the named temporary, NULL while the file has no name (owned) */
	const char *prefix; /* of temporary names (borrowed) */
	char *path;      /* outfile_create: the path to commit to (owned), NULL otherwise */
	bool device;     /* fd is a block device, written in place: no temporary, no rename */
	uint64_t dev_size; /* a device's size in bytes */
	bool judged; /* created from a verdict: the commit checks path still holds what it saw */
	bool was_new;    /* judged: nothing was there (the commit never replaces what appears) */
	dev_t old_dev;   /* judged, not new: the file replaced (st_dev, st_ino, st_ctim) */
	ino_t old_ino;
	struct timespec old_ctime;
};

/* Creates the temporary for path, with mode 0666 & ~umask (outfile_create and
 * outfile_create_judged then give it the mode and owner of a file it replaces), temporary
 * names starting with prefix (borrowed, e.g. ".sqk"). Judges nothing: callers that take a
 * user's path use outfile_create. 0, or -1 with errno set; o must then be aborted. */
int outfile_open(struct outfile *o, const char *path, const char *prefix);

/* Judges path (outfile_judge) and opens o for it: a temporary in the directory of the path
 * its symlinks lead to, or a block device in place (outfile_open_device). On failure, -1
 * with errno set (0 when refused) and msg (msglen bytes, borrowed) saying why, naming path;
 * o must be aborted either way. */
int outfile_create(struct outfile *o, const char *path, const struct outfile_kind *kind,
		       bool force, const char *prefix, char *msg, size_t msglen);

/* Opens o for what t (judged by outfile_judge, not refused; t->path taken over, freed by
 * commit or abort) says: a temporary, given the mode and owner of the file it replaces (the
 * owner as far as permitted), or the block device in place, which must still be the device
 * judged (st_rdev). The same failure contract as outfile_create. */
int outfile_create_judged(struct outfile *o, const char *path,
			      struct outfile_target *t, const char *prefix, char *msg,
			      size_t msglen);

/* Opens the block device path for writing in place: O_WRONLY | O_EXCL | O_NOFOLLOW (a mounted
 * device gives EBUSY), opened O_NONBLOCK and then made blocking, its size taken (BLKGETSIZE64),
 * its first SQK_OUTFILE_DEV_WIPE bytes zeroed and synced, so that an older image there is gone
 * before anything new is written; rdev, when not 0, is the device it must be (else ENOTBLK).
 * 0, or -1 with errno set; o must then be aborted. */
int outfile_open_device(struct outfile *o, const char *path, dev_t rdev);

/* Gives the complete temporary the name path (NULL: the path outfile_create chose; the
 * caller synced the file) and closes it; a device is only closed. When o was judged, path must
 * still hold what the judge saw: nothing (the name is linked, never replacing what appeared
 * since) or the same file unchanged (st_dev, st_ino, st_ctim); else -1 with errno EEXIST
 * ("changed during the write"). 0, or -1 with errno set (the temporary is still there: abort
 * it). */
int outfile_commit(struct outfile *o, const char *path);

/* Closes and removes the temporary, frees what o owns; o may be aborted again. A device not
 * committed has its first SQK_OUTFILE_DEV_WIPE bytes zeroed again and synced (no partial output
 * at its start), then is closed. */
void outfile_abort(struct outfile *o);

#endif
