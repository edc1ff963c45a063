/* SPDX-License-Identifier: BSD-2-Clause */
/* Tree-walk detection for sqkfuse: directories are listed (readdirplus) before their files are
 * read, so the daemon knows the order in which a walk such as `tar -c` or `cp -r` will read the
 * files. This module remembers the regular files of recent listings in listing order and, once
 * reads follow that order, names the next files of the listing, for the store thread to push
 * into the kernel's page cache (store.h) before the walker asks: a file read from the page cache
 * needs no request at all, and its blocks are decompressed on the other core meanwhile.
 *
 * A read is "in the walk" when the file before it in its listing is the one read last, or it was
 * pushed; while the walk is on, also when it opens a listing or the file before it was read or
 * pushed (back in a directory after a subdirectory). WALK_MIN reads in the walk in a row turn
 * the walk on; any other read of a listed file turns it off (a reader at random seldom reads
 * neighbours in a row, so it does not trigger pushes). While on, a new listing pushes its first
 * files at once. The memory is bounded: a ring of the last RING regular files listed and a
 * lossy index into it. */
#ifndef SQK_FUSE_WALK_H
#define SQK_FUSE_WALK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct sqk_walk;

/* A file to push: its FUSE node id and how many bytes from its start. */
struct walk_push {
	uint64_t id;
	uint64_t len;
};

/* The most pushes one call can name (the size of the caller's array). */
#define SQK_WALK_BATCH 64u

/* Creates an empty walk state; max_file: files above this size are never pushed (they are read
 * well through requests with readahead). Caller owns *out (walk_destroy). */
int walk_create(uint64_t max_file, struct sqk_walk **out);

/* Frees w; NULL-safe. */
void walk_destroy(struct sqk_walk *w);

/* Records regular file id (size bytes) as the next entry of directory dir's listing; first: it is
 * the listing's first regular file (the listing starts anew). Thread-safe. */
void walk_listed(struct sqk_walk *w, uint64_t dir, uint64_t id, uint64_t size, int first);

/* After a listing's batch has been answered: the pushes the walk wants now for dir (its first
 * files while the walk is on), at most cap (<= SQK_WALK_BATCH) into out; returns how many.
 * Thread-safe. */
size_t walk_after_listing(struct sqk_walk *w, uint64_t dir, struct walk_push *out,
			      size_t cap);

/* A read of id at off was answered: updates the walk and returns the pushes to queue now (at
 * most cap into out). Unlisted ids are ignored. Thread-safe. */
size_t walk_read(struct sqk_walk *w, uint64_t id, uint64_t off, struct walk_push *out,
		     size_t cap);

/* Gives back the n pushes of p that could not be queued: they may be named again. Thread-safe. */
void walk_unpush(struct sqk_walk *w, const struct walk_push *p, size_t n);

/* False when a read of id has been answered already (a push of it would come too late: the
 * walker was faster than the pushes); true otherwise, also for ids not remembered. Thread-safe. */
bool walk_unread(struct sqk_walk *w, uint64_t id);

#endif
