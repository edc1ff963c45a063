/* SPDX-License-Identifier: BSD-2-Clause */
/* What sqkfuse's operations (ops.c) and its mounting (mount.c) share: the mounted image's
 * state, the operations table and the log. Internal to fuse/; FUSE_USE_VERSION is set by the
 * including file. */
#ifndef SQK_FUSE_FS_H
#define SQK_FUSE_FS_H

#include <fuse_lowlevel.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "sqk/sqk.h"

/* The largest file pushed whole into the page cache ahead of a tree walk (walk.h): bigger ones
 * are read through requests (1 MiB each) with the library's readahead. */
#define SQK_FUSE_PUSH_MAX ((uint64_t)1 << 20)

/* Listings kept between the readdir calls of zero-message opendirs (ops.c). */
#define SQK_FUSE_PARKED 16
struct dirh;

/* The session's userdata: one mounted image. */
struct fs {
	struct sqk_image *img;
	int ready_fd;            /* daemon_ready's pipe to the waiting parent; -1: none */
	struct sqk_inode root;
	struct nodes *nodes;
	struct store *store; /* page-cache fill after small reads; NULL = off */
	struct trace *trace; /* -o trace: files read, in first-read order; NULL = off */
	struct sqk_walk *walk;   /* tree-walk detection for pushes ahead (walk.h); NULL = off */
	unsigned fill;           /* blocks per fill group */
	uint64_t fills;          /* groups stored by the fill thread (for stats=) */
	uint64_t pushes;         /* files pushed whole ahead of a tree walk (for stats=) */
	atomic_uint_fast64_t reads; /* read requests answered */
	atomic_uint_fast64_t opendirs; /* opendir requests answered (with no_opendir: the first) */
	const char *image;
	bool foreground;
	bool noprefetch;       /* -o noprefetch: the hint is not fetched after the fork */
	bool background;       /* remote images: the background fetch asked of the library */
	uint64_t background_rate; /* and its cap (bytes a second, 0 = none), for stats= */
	bool no_open;          /* the kernel takes ENOSYS from open as "no open needed" */
	bool no_opendir;       /* and from opendir: readdir comes without a handle */
	pthread_mutex_t park_mu; /* no_opendir: listings between calls, by directory and offset */
	struct dirh *parked[SQK_FUSE_PARKED];
	unsigned park_next;    /* the slot the next parked listing replaces when all are taken */
	pthread_t opener;      /* the thread that opens the image; only it writes open_msg */
	char open_msg[512];    /* the library's last message on that thread (why an open failed) */
	pthread_key_t buf_key; /* per-thread read buffer */
};

/* The low-level operations on a struct fs (given as the session's userdata). */
extern const struct fuse_lowlevel_ops sqkfuse_ops;

/* Logs one line: to stderr in the foreground, to syslog once detached. */
void sqkfuse_log(const struct fs *fs, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
