/* SPDX-License-Identifier: BSD-2-Clause */
/* Read-ahead for a cold directory walk: a scout thread walks the same tree in the same order as
 * the walk (source_dir.c), ahead of it, and asks the kernel to read each regular file it meets
 * (posix_fadvise WILLNEED) so that the walk's own reads find the page cache filled. The walk
 * reads on one thread, one file after the other; on a cold disk each small file then costs a
 * wait for the device, which the scout overlaps: with it many reads are in flight at once.
 *
 * It costs nothing on a warm tree: it starts when the walk's reads miss the page cache
 * (mk_miss_watch_note: a run of misses, not a page reclaimed here and there), and goes idle
 * when the files ahead are warm again (mk_prefetch_idle), which ends it. It never runs more
 * than a window of bytes (and of files) ahead of the file the walk reads, skips whatever the
 * walk has passed, and is best-effort: it reports no error and changes nothing the walk sees;
 * an entry it cannot stat or open is simply not read ahead. */
#ifndef SQK_MK_PREFETCH_H
#define SQK_MK_PREFETCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct mk_prefetch;

/* What the scout leaves alone: files by device and inode (the image being written), and paths
 * the walk excludes: leave_out (optional) is called on the scout's thread with an image path
 * and whether it is a top under a made-up root, and must not touch what the walk uses. */
struct mk_prefetch_skip {
	dev_t dev[2];
	ino_t ino[2];
	size_t n;
	bool (*leave_out)(void *arg, const char *rel, bool top);
	void *arg;
};

/* One top of the walk: its path on disk and its image path ("" for the root of a one-directory
 * source, whose contents are the image's root; else the name it has under the made-up root). */
struct mk_prefetch_root {
	const char *disk;
	const char *rel;
};

/* How far ahead the scout reads: bytes of file content and files. */
#define MK_PREFETCH_WINDOW (32u << 20)
#define MK_PREFETCH_FILES 256u
/* Descriptors of files read ahead kept open for the walk to take, at most (and at most an
 * eighth of the process's limit), and as many of files it is done with, left to the scout to
 * close. */
#define MK_PREFETCH_FDS 256

/* Creates a scout over the n roots (copied), in walk order, not yet started; skip (copied; its
 * arg borrowed until mk_prefetch_destroy) may be NULL. window and files bound how far ahead it
 * reads (0: the defaults above); each file is asked for up to window / 8 bytes (the kernel's
 * own read-ahead follows a sequential read of the rest). Returns NULL when it cannot be made
 * (out of memory): the walk then goes without. Caller owns the result. */
struct mk_prefetch *mk_prefetch_create(const struct mk_prefetch_root *roots, size_t n,
				       const struct mk_prefetch_skip *skip, uint64_t window,
				       size_t files);

/* The walk is about to read the regular file at image path rel (in walk order, each file once).
 * missed: its read found the page cache empty; the first such call starts the scout, from rel.
 * Cheap before the scout starts. */
void mk_prefetch_at(struct mk_prefetch *p, const char *rel, bool missed);

/* The xattrs of a file as the scout read them: buf holds the names as listxattr(2) gives them
 * (len bytes, each NUL-terminated), then for each name in that order its value as a 4-byte
 * length in host order and its bytes; size bytes in all. len -1: not read (buf NULL). */
struct mk_prefetch_xattrs {
	char *buf;
	ssize_t len;
	size_t size;
};
/* Asks the scout to list the xattrs of the files it reads ahead, for mk_prefetch_take (before
 * the scout starts). */
void mk_prefetch_list_xattrs(struct mk_prefetch *p);
/* Like mk_prefetch_at(p, rel, false), and returns the descriptor the scout opened for rel, when
 * it kept one and it is the file dev/ino (the walk's stat): the caller owns it (and may give it
 * back with mk_prefetch_close). -1: none, the caller opens the file itself. x (may be NULL)
 * gets the file's xattrs when the scout listed them for that same file (the caller then owns
 * x->buf), else x->len is -1 and the caller lists them itself. */
int mk_prefetch_take(struct mk_prefetch *p, const char *rel, dev_t dev, ino_t ino,
		     struct mk_prefetch_xattrs *x);

/* A directory's listing as the scout read it: n entries, each its d_type byte, its name and a
 * NUL, in the walk's order (dir_name_cmp), without "." and ".."; and its xattrs (x.len -1: not
 * read). */
struct mk_prefetch_dir {
	char *names;
	size_t n;
	struct mk_prefetch_xattrs x;
};
/* The listing of the directory at image path rel, when the scout kept one of that same
 * directory dev/ino (the walk's stat): true, and the caller owns out->names and out->x.buf.
 * false: the caller reads the directory itself. Either way the scout keeps it no longer. */
bool mk_prefetch_take_dir(struct mk_prefetch *p, const char *rel, dev_t dev, ino_t ino,
			  struct mk_prefetch_dir *out);
/* Directory listings the scout holds ready for the walk now (for tests and statistics). */
size_t mk_prefetch_listed(struct mk_prefetch *p);
/* Leaves the descriptor fd of a file the walk is done with to the scout to close (on a file
 * system where a close waits for a round trip, the walk then does not); p owns fd. */
void mk_prefetch_close(struct mk_prefetch *p, int fd);

/* Whether the scout was started. */
bool mk_prefetch_started(const struct mk_prefetch *p);

/* When the walk starts the scout: MK_SCOUT_MISSES reads that missed the page cache within
 * MK_SCOUT_MISS_WINDOW reads from the first of them. A cold tree misses on every file, so the
 * scout starts at its 32nd; a warm tree whose pages the kernel partly reclaimed misses in
 * short runs, and there the scout's threads cost more than their read-ahead saves. */
#define MK_SCOUT_MISSES 32u
#define MK_SCOUT_MISS_WINDOW 64u
struct mk_miss_watch {
	unsigned misses;            /* in the current window */
	unsigned left;              /* reads left in it; 0: no window open */
};
/* Notes one read of the walk (miss: it missed the page cache); true when the scout should
 * start. w starts zeroed. */
bool mk_miss_watch_note(struct mk_miss_watch *w, bool miss);

/* The scout is idle once MK_SCOUT_IDLE_FILES files in a row that the walk took were not read
 * ahead by it: its openers found their first byte in the page cache (and asked the kernel for
 * nothing), or the walk came before them. The tree ahead is warm or the scout cannot keep up;
 * the walk then ends the scout (mk_prefetch_destroy) and watches for misses again. On a file
 * system that cannot tell (FUSE) the openers never find a file cached. */
#define MK_SCOUT_IDLE_FILES 1024u
bool mk_prefetch_idle(const struct mk_prefetch *p);

/* Files and bytes the scout asked the kernel to read so far, and descriptors the walk took
 * (taken may be NULL). */
void mk_prefetch_counts(struct mk_prefetch *p, uint64_t *files, uint64_t *bytes,
			uint64_t *taken);

/* Stops the scout (waiting for the read-ahead it is issuing) and frees p. NULL is a no-op. */
void mk_prefetch_destroy(struct mk_prefetch *p);

/* The walk's order on image paths: depth first, each directory's entries by dir_name_cmp, a
 * directory before what it holds. <0, 0 or >0 like strcmp. */
int mk_walk_path_cmp(const char *a, const char *b);

#endif
