/* SPDX-License-Identifier: BSD-2-Clause */
/* Page-cache fill for small reads. After a read smaller than a block (random access, mmap page
 * faults) has been answered, the rest of the block(s) around it is pushed into the kernel's page
 * cache with FUSE_NOTIFY_STORE, so later reads there never reach the daemon, the way the kernel's
 * own squashfs fills every page of a block it decompresses. Stores run on a thread of their own:
 * a store waits for page locks held by reads in flight, so it must never run inside a request
 * handler (the handler would wait for a read that only another handler can answer). */
#ifndef SQK_FUSE_STORE_H
#define SQK_FUSE_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fuse/walk.h"
#include "sqk/sqk.h"

struct fuse_session;
struct store;

/* Starts the store thread for img and se (both borrowed: they must outlive the store). Each
 * small read fills the aligned group of `blocks` blocks around it; 0 blocks = no fill. Files
 * of up to push_max bytes can be pushed whole (store_push) for the walk (borrowed, asked
 * before each push whether the file is still unread); walk NULL or push_max 0: none. Neither:
 * no thread (*out = NULL). Start it after detaching (a fork would lose the thread). Caller
 * owns *out (store_destroy). */
int store_start(struct sqk_image *img, struct fuse_session *se, unsigned blocks,
		    struct sqk_walk *walk, uint64_t push_max, struct store **out);

/* Queues the n files of p (copied; node ids of regular files, each with its whole size) to be
 * read and stored whole into the page cache, after the fills waiting. Never blocks: returns
 * how many of the first were taken (the rest did not fit: the caller gives them back to the
 * walk). s may be NULL (none taken). Thread-safe. */
size_t store_push(struct store *s, const struct walk_push *p, size_t n);

/* Files stored whole so far; valid once the thread has stopped (else 0). NULL-safe. */
uint64_t store_pushes(const struct store *s);

/* Queues the fill around the answered read [off, off+len) of file (copied) with FUSE node id.
 * Never blocks: with the queue full, or that group already queued, nothing is done. s may be
 * NULL (no fill). Thread-safe. */
void store_after_read(struct store *s, uint64_t id, const struct sqk_inode *file,
			  uint64_t off, size_t len);

/* Stops the thread after the fill in progress; queued fills are dropped. Idempotent and
 * NULL-safe; calls must not overlap (sqkfuse calls it on the signal thread, then, once that
 * thread is joined, from store_destroy). A fill waits for the pages of reads in flight, so
 * call this while the session loop still answers requests, or after the connection has ended. */
void store_stop(struct store *s);

/* Stops (if needed) and frees s; returns the number of groups stored. NULL-safe. */
uint64_t store_destroy(struct store *s);

#endif
