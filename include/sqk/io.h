/* SPDX-License-Identifier: BSD-2-Clause */
/* The I/O vtable: positional reads and writes on an fd at a base offset, on memory, or through
 * a fault-injecting test double. Everything that touches image bytes goes through it. */
#ifndef SQK_IO_H
#define SQK_IO_H

#include "api.h"
#include "error.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct sqk_io;
struct sqk_http_stats;

/* What a reader knows about a read that a backend fetching from far away (io_http.c) may use
 * to fetch ahead: reads with the same nonzero `stream` id are one sequential stream (a file, or
 * a walk through the image in its own order), and fetching ahead never goes past `limit` (an io
 * offset: the end of that file's data, or of the image for a walk). */
struct sqk_io_ahead {
	uint64_t stream;
	uint64_t limit;
};

/* The stream id of a walk through the image: the backend may then fetch ahead across files,
 * and tells its streams apart by position (the walk reads data blocks and several groups of
 * fragment blocks, each in order). */
#define SQK_IO_AHEAD_WALK UINT64_MAX

struct sqk_io_ops {
	/* Reads exactly len bytes at off; past the end: SQK_EBOUNDS, nothing partial. */
	int (*read_at)(struct sqk_io *io, uint64_t off, void *buf, size_t len);
	/* Writes exactly len bytes at off (extending the object). */
	int (*write_at)(struct sqk_io *io, uint64_t off, const void *buf, size_t len);
	/* Current size in bytes (excluding the base offset for fd I/O). */
	int (*get_size)(struct sqk_io *io, uint64_t *size);
	/* Makes written data durable (fsync for fds, no-op for memory). */
	int (*sync)(struct sqk_io *io);
	/* Frees the object (closing the fd if it was handed over). */
	void (*destroy)(struct sqk_io *io);
	/* Optional: read_at, with what the reader knows of the stream (ahead borrowed, may be
	 * NULL: nothing may be fetched ahead of this read). NULL = read_at. */
	int (*read_ahead)(struct sqk_io *io, uint64_t off, void *buf, size_t len,
			  const struct sqk_io_ahead *ahead);
	/* The optional operations of a backend that fetches from far away (remote.h); NULL = not
	 * supported (the wrappers below then do nothing). A backend with prefetch counts as
	 * remote (sqk_io_is_remote). Appended in libsqk.so.2: a table is never shorter. */
	/* Fetches [off, off + len) ahead of use; wait: returns once it is in, else at once (in
	 * the background, a read of those bytes waiting for them). Best effort: errors surface
	 * when the bytes are read. */
	void (*prefetch)(struct sqk_io *io, uint64_t off, uint64_t len, bool wait);
	/* Fails every pending and later read at once (SQK_EINTR): for shutdown while requests
	 * hang. Safe from any thread, also during reads. */
	void (*cancel)(struct sqk_io *io);
	/* Stops the backend's threads (they start again on the next read): before fork(). No
	 * read of io may run meanwhile, from any thread. */
	void (*quiesce)(struct sqk_io *io);
	/* Copies the transfer counters into *out, whose size field the caller set (the shape of
	 * struct sqk_http_stats in remote.h serves any backend that fetches). */
	int (*stats)(struct sqk_io *io, struct sqk_http_stats *out);
	/* True when the backend checks every byte it returns against the image's integrity data
	 * itself (libsqk then need not). */
	bool (*verified)(const struct sqk_io *io);
};

struct sqk_io {
	const struct sqk_io_ops *ops;
};

static inline int sqk_io_read_at(struct sqk_io *io, uint64_t off, void *buf, size_t len)
{
	return io->ops->read_at(io, off, buf, len);
}

/* read_at for backends that fetch ahead: ahead (borrowed, NULL = none) says how far. */
static inline int sqk_io_read_ahead(struct sqk_io *io, uint64_t off, void *buf, size_t len,
				    const struct sqk_io_ahead *ahead)
{
	if (io->ops->read_ahead)
		return io->ops->read_ahead(io, off, buf, len, ahead);
	return io->ops->read_at(io, off, buf, len);
}

/* True when io fetches from far away (it has the prefetch operation): readers then tell it
 * what to fetch ahead and avoid reading what they do not need. */
static inline bool sqk_io_is_remote(const struct sqk_io *io)
{
	return io->ops->prefetch != NULL;
}

/* The prefetch operation (see struct sqk_io_ops); nothing when io has none. */
static inline void sqk_io_prefetch(struct sqk_io *io, uint64_t off, uint64_t len, bool wait)
{
	if (io->ops->prefetch)
		io->ops->prefetch(io, off, len, wait);
}

/* The cancel operation; nothing when io has none. NULL-safe. */
static inline void sqk_io_cancel(struct sqk_io *io)
{
	if (io && io->ops->cancel)
		io->ops->cancel(io);
}

/* The quiesce operation; nothing when io has none. NULL-safe. */
static inline void sqk_io_quiesce(struct sqk_io *io)
{
	if (io && io->ops->quiesce)
		io->ops->quiesce(io);
}

/* The stats operation: fills the caller's *out (its size set). SQK_EUNSUPPORTED when io has
 * none (a local backend). */
static inline int sqk_io_stats(struct sqk_io *io, struct sqk_http_stats *out)
{
	return io->ops->stats ? io->ops->stats(io, out) : SQK_EUNSUPPORTED;
}

/* The verified operation; false when io has none. */
static inline bool sqk_io_verified(const struct sqk_io *io)
{
	return io->ops->verified && io->ops->verified(io);
}

static inline int sqk_io_write_at(struct sqk_io *io, uint64_t off, const void *buf, size_t len)
{
	return io->ops->write_at(io, off, buf, len);
}

static inline int sqk_io_get_size(struct sqk_io *io, uint64_t *size)
{
	return io->ops->get_size(io, size);
}

static inline int sqk_io_sync(struct sqk_io *io)
{
	return io->ops->sync(io);
}

/* Destroys io; NULL-safe. */
static inline void sqk_io_destroy(struct sqk_io *io)
{
	if (io)
		io->ops->destroy(io);
}

/* I/O on fd with every offset shifted by base. Borrows fd unless own_fd (then destroy closes it).
 * On a block device, get_size is the extent of the SquashFS image at base (its bytes_used
 * padded, the prefetch hint and integrity data after it) rather than of the device, so that the
 * integrity trailer is found; the device's size when no image is there. Caller owns *out. */
SQK_API int sqk_io_fd_create(int fd, uint64_t base, bool own_fd, struct sqk_io **out);

/* I/O on memory. With data != NULL, borrows data[0..len) read-only (writes fail with SQK_EINVAL);
 * with data == NULL, creates an empty growable buffer that writes extend. Caller owns *out. */
SQK_API int sqk_io_mem_create(const void *data, size_t len, struct sqk_io **out);

/* Borrowed view of a growable memory object's bytes (valid until the next write or destroy). */
SQK_API const uint8_t *sqk_io_mem_data(struct sqk_io *io, size_t *len);

enum sqk_io_fault_op { SQK_FAULT_READ, SQK_FAULT_WRITE, SQK_FAULT_SYNC, SQK_FAULT_SIZE };

/* Test double forwarding to inner (borrowed, must outlive it). Caller owns *out. */
SQK_API int sqk_io_fault_create(struct sqk_io *inner, struct sqk_io **out);

/* After `countdown` successful calls of kind op, every further call of that kind fails with err
 * (countdown 0: the very next call fails). Also: a read may be told to flip one byte instead.
 * (err 0 with SQK_FAULT_READ: such reads succeed with byte len/2 inverted.) */
SQK_API void sqk_io_fault_arm(struct sqk_io *io, enum sqk_io_fault_op op, unsigned countdown,
			      int err);

/* Number of calls of kind op the double has seen (successful or failed). */
SQK_API unsigned sqk_io_fault_calls(struct sqk_io *io, enum sqk_io_fault_op op);

/* A sink of capacity bytes in front of inner (taken over: destroy destroys it), for a block
 * device: writes go through while they fit; from the first write that ends past capacity on,
 * every write is dropped but reported done, so that a build runs on to learn its full size and
 * nothing after the overflow (the superblock, written last) reaches the device. Reads, size and
 * sync go to inner. Caller owns *out. */
SQK_API int sqk_io_capped_create(struct sqk_io *inner, uint64_t capacity, struct sqk_io **out);

/* 0 while every write of a capped sink fitted (and for other backends), else the furthest end
 * offset any write reached. */
SQK_API uint64_t sqk_io_capped_overflow(struct sqk_io *io);

#ifdef __cplusplus
}
#endif

#endif
