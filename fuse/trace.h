/* SPDX-License-Identifier: BSD-2-Clause */
/* Read trace of the FUSE front-end (-o trace=FILE): the files whose data was read, each once, in
 * the order of their first read, written at unmount as one path a line relative to the image
 * root (the input `sqk mkimage --order` wants, to lay files out in the order they are used).
 * A read costs one atomic load of a bit per inode number once its file is known; the first read
 * of a file appends its inode number, and its path when the node table has it whole, to a list
 * under a lock. Files read without a known path (their name was evicted from the bounded node
 * table, or -o names=0) are named at unmount by one walk of the mounted tree. */
#ifndef SQK_FUSE_TRACE_H
#define SQK_FUSE_TRACE_H

#include <stddef.h>
#include <stdint.h>

#include "fuse/nodes.h"
#include "sqk/sqk.h"

struct trace;

/* Prepares the trace file path (borrowed; absolute, as the daemon changes to /): judges it as
 * sqk mkimage judges its IMAGE (common/outfile.h: a regular file is replaced, as by `>`; a
 * device, FIFO, socket, directory or dangling symlink is refused) and creates the temporary in
 * the directory of the file it names, so that a path that cannot be written fails now, before
 * anything is mounted. subdir (borrowed, NULL = none) is the mounted directory as given to
 * -o subdir, already looked up: traced paths start with its canonical form. 0, or SQK_EIO with
 * errno set (0 when refused) and why (whylen bytes, borrowed; "" when not filled) naming path
 * and the reason, or SQK_ENOMEM. Caller owns *out (trace_destroy). */
int trace_create(const char *path, const char *subdir, char *why, size_t whylen,
		     struct trace **out);

/* Sizes the first-read flags for inode numbers 1..inode_count (the image's). Call once, before
 * any trace_read. 0 or SQK_ENOMEM. */
int trace_size(struct trace *t, uint32_t inode_count);

/* Notes a read of the file with inode number ino, FUSE node id: its first read records it, with
 * its path from nodes (borrowed) when that table knows it whole. Later reads take no lock and
 * allocate nothing. Thread-safe. */
void trace_read(struct trace *t, uint32_t ino, uint64_t id, struct nodes *nodes);

/* Names the recorded files that have no path yet by walking the directories under root (the
 * mounted directory; borrowed, as is img), each by the first path found in directory order.
 * Call after the session has ended. Sets *unnamed to the files still without a name (a walk
 * error, an image that does not list them); 0 or the walk's SQK_E*. */
int trace_resolve(struct trace *t, struct sqk_image *img, const struct sqk_inode *root,
		      size_t *unnamed);

/* Writes the named files, one escaped path a line (bytes outside 0x20..0x7e and '\' as \xHH),
 * syncs the temporary and renames it over the trace path. 0, or SQK_EIO with errno set (the
 * temporary is removed), or SQK_ENOMEM. Call once. */
int trace_write(struct trace *t);

/* First reads not recorded for want of memory (for a message). */
size_t trace_lost(const struct trace *t);

/* Frees t and removes its temporary when it was not written; NULL-safe. */
void trace_destroy(struct trace *t);

#endif
