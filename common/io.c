/* SPDX-License-Identifier: BSD-2-Clause */
/* I/O backends behind the sqk_io vtable: a file descriptor at a base offset (images on disk or
 * on block devices, possibly embedded at an offset), memory (in-memory images and tests), a
 * fault-injecting double that wraps another backend so tests can make single calls fail or
 * return bad bytes, and a capped sink in front of a block device. */
#include "sqk/io.h"

#include <errno.h>
#include <linux/fs.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "sqk/error.h"
#include "grow.h"
#include "format.h"
#include "endian.h"
#include "integrity.h"

/* Largest transfer handed to one pread/pwrite (POSIX leaves > SSIZE_MAX unspecified). */
#define FD_CHUNK ((size_t)1 << 30)

struct io_fd {
	struct sqk_io base;
	int fd;
	uint64_t base_off;
	bool own_fd;
};

/* File position of off, checking that [off, off + len) stays inside off_t. */
static int fd_pos(const struct io_fd *f, uint64_t off, size_t len, off_t *pos)
{
	uint64_t p = f->base_off + off;

	if (p < off || p > (uint64_t)INT64_MAX || (uint64_t)len > (uint64_t)INT64_MAX - p)
		return SQK_EOVERFLOW;
	*pos = (off_t)p;
	return 0;
}

static int fd_read_at(struct sqk_io *io, uint64_t off, void *buf, size_t len)
{
	struct io_fd *f = (struct io_fd *)io;
	uint8_t *p = buf;
	off_t pos;

	if (fd_pos(f, off, len, &pos))
		return SQK_EBOUNDS;
	while (len > 0) {
		ssize_t n = pread(f->fd, p, len < FD_CHUNK ? len : FD_CHUNK, pos);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return sqk_from_errno(errno);
		if (n == 0)
			return SQK_EBOUNDS;
		p += n;
		pos += n;
		len -= (size_t)n;
	}
	return 0;
}

static int fd_write_at(struct sqk_io *io, uint64_t off, const void *buf, size_t len)
{
	struct io_fd *f = (struct io_fd *)io;
	const uint8_t *p = buf;
	off_t pos;
	int rc = fd_pos(f, off, len, &pos);

	if (rc)
		return rc;
	while (len > 0) {
		ssize_t n = pwrite(f->fd, p, len < FD_CHUNK ? len : FD_CHUNK, pos);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return sqk_from_errno(errno);
		if (n == 0)
			return SQK_EIO; /* no progress and no errno: do not spin */
		p += n;
		pos += n;
		len -= (size_t)n;
	}
	return 0;
}

/* The size of a regular file; of a block device, the image on it (integ_extent), since its
 * size is the device's (BLKGETSIZE64; st_size is 0). */
static int fd_get_size(struct sqk_io *io, uint64_t *size)
{
	struct io_fd *f = (struct io_fd *)io;
	struct stat st;
	uint64_t bytes;

	if (fstat(f->fd, &st) != 0)
		return sqk_from_errno(errno);
	if (S_ISBLK(st.st_mode)) {
		if (ioctl(f->fd, BLKGETSIZE64, &bytes) != 0)
			return sqk_from_errno(errno);
	} else {
		bytes = st.st_size < 0 ? 0 : (uint64_t)st.st_size;
	}
	*size = bytes <= f->base_off ? 0 : bytes - f->base_off;
	if (S_ISBLK(st.st_mode))
		*size = integ_extent(io, *size);
	return 0;
}

static int fd_sync(struct sqk_io *io)
{
	struct io_fd *f = (struct io_fd *)io;

	while (fsync(f->fd) != 0) {
		if (errno == EINTR)
			continue;
		/* EINVAL/EROFS: a special file that cannot be synced; nothing to make durable */
		if (errno == EINVAL || errno == EROFS)
			return 0;
		return sqk_from_errno(errno);
	}
	return 0;
}

static void fd_destroy(struct sqk_io *io)
{
	struct io_fd *f = (struct io_fd *)io;

	if (f->own_fd)
		close(f->fd);
	free(f);
}

static const struct sqk_io_ops fd_ops = {
	.read_at = fd_read_at,
	.write_at = fd_write_at,
	.get_size = fd_get_size,
	.sync = fd_sync,
	.destroy = fd_destroy,
};

/* Borrows fd (or takes it over when own_fd); caller owns *out. */
int sqk_io_fd_create(int fd, uint64_t base, bool own_fd, struct sqk_io **out)
{
	struct io_fd *f;

	*out = NULL;
	if (fd < 0 || base > (uint64_t)INT64_MAX)
		return SQK_EINVAL;
	f = calloc(1, sizeof(*f));
	if (!f)
		return SQK_ENOMEM;
	f->base.ops = &fd_ops;
	f->fd = fd;
	f->base_off = base;
	f->own_fd = own_fd;
	*out = &f->base;
	return 0;
}

struct io_mem {
	struct sqk_io base;
	const uint8_t *view; /* borrowed read-only bytes; NULL for a growable buffer */
	uint8_t *buf;        /* owned growable buffer */
	size_t len;
	size_t cap;
};

static const uint8_t *mem_bytes(const struct io_mem *m)
{
	return m->view ? m->view : m->buf;
}

static int mem_read_at(struct sqk_io *io, uint64_t off, void *buf, size_t len)
{
	struct io_mem *m = (struct io_mem *)io;

	if (len == 0)
		return 0;
	if (off > m->len || len > m->len - off)
		return SQK_EBOUNDS;
	memcpy(buf, mem_bytes(m) + off, len);
	return 0;
}

/* Grows the owned buffer to hold at least need bytes (4 KiB at first), doubling to keep
 * appends linear. */
static int mem_reserve(struct io_mem *m, size_t need)
{
	return mem_grow(&m->buf, &m->cap, need < 4096 ? 4096 : need, 1, 0);
}

static int mem_write_at(struct sqk_io *io, uint64_t off, const void *buf, size_t len)
{
	struct io_mem *m = (struct io_mem *)io;
	size_t end;
	int rc;

	if (m->view)
		return SQK_EINVAL;
	if (len == 0)
		return 0;
	if (off > SIZE_MAX || len > SIZE_MAX - (size_t)off)
		return SQK_EOVERFLOW;
	end = (size_t)off + len;
	rc = mem_reserve(m, end);
	if (rc)
		return rc;
	if (off > m->len) /* a hole reads as zeros, like a sparse file */
		memset(m->buf + m->len, 0, (size_t)off - m->len);
	memcpy(m->buf + off, buf, len);
	if (end > m->len)
		m->len = end;
	return 0;
}

static int mem_get_size(struct sqk_io *io, uint64_t *size)
{
	*size = ((struct io_mem *)io)->len;
	return 0;
}

static int mem_sync(struct sqk_io *io)
{
	(void)io;
	return 0;
}

static void mem_destroy(struct sqk_io *io)
{
	struct io_mem *m = (struct io_mem *)io;

	free(m->buf);
	free(m);
}

static const struct sqk_io_ops mem_ops = {
	.read_at = mem_read_at,
	.write_at = mem_write_at,
	.get_size = mem_get_size,
	.sync = mem_sync,
	.destroy = mem_destroy,
};

/* Borrows data (read-only) or, with data == NULL, owns a growable buffer (len = capacity hint).
 * Caller owns *out. */
int sqk_io_mem_create(const void *data, size_t len, struct sqk_io **out)
{
	struct io_mem *m = calloc(1, sizeof(*m));
	int rc;

	*out = NULL;
	if (!m)
		return SQK_ENOMEM;
	m->base.ops = &mem_ops;
	if (data) {
		m->view = data;
		m->len = len;
	} else if (len > 0) {
		rc = mem_reserve(m, len);
		if (rc) {
			free(m);
			return rc;
		}
	}
	*out = &m->base;
	return 0;
}

/* Borrowed bytes of a memory object (NULL with *len 0 for any other backend). */
const uint8_t *sqk_io_mem_data(struct sqk_io *io, size_t *len)
{
	struct io_mem *m = (struct io_mem *)io;

	if (!io || io->ops != &mem_ops) {
		*len = 0;
		return NULL;
	}
	*len = m->len;
	return mem_bytes(m);
}

#define FAULT_NOPS 4

struct fault_arm {
	bool armed;
	unsigned countdown; /* calls still to let through */
	int err;            /* 0: corrupt a read instead of failing it (other ops: pass through) */
};

struct io_fault {
	struct sqk_io base;
	struct sqk_io *inner;
	unsigned calls[FAULT_NOPS];
	struct fault_arm arm[FAULT_NOPS];
};

/* Counts a call of kind op and says what to do: 0 forward it, 1 forward and corrupt, < 0 fail. */
static int fault_step(struct io_fault *f, enum sqk_io_fault_op op)
{
	struct fault_arm *a = &f->arm[op];

	f->calls[op]++;
	if (!a->armed)
		return 0;
	if (a->countdown > 0) {
		a->countdown--;
		return 0;
	}
	return a->err ? a->err : 1;
}

static int fault_read_at(struct sqk_io *io, uint64_t off, void *buf, size_t len)
{
	struct io_fault *f = (struct io_fault *)io;
	int step = fault_step(f, SQK_FAULT_READ);
	int rc;

	if (step < 0)
		return step;
	rc = sqk_io_read_at(f->inner, off, buf, len);
	if (rc == 0 && step == 1 && len > 0)
		((uint8_t *)buf)[len / 2] ^= 0xFF;
	return rc;
}

static int fault_write_at(struct sqk_io *io, uint64_t off, const void *buf, size_t len)
{
	struct io_fault *f = (struct io_fault *)io;
	int step = fault_step(f, SQK_FAULT_WRITE);

	return step < 0 ? step : sqk_io_write_at(f->inner, off, buf, len);
}

static int fault_get_size(struct sqk_io *io, uint64_t *size)
{
	struct io_fault *f = (struct io_fault *)io;
	int step = fault_step(f, SQK_FAULT_SIZE);

	return step < 0 ? step : sqk_io_get_size(f->inner, size);
}

static int fault_sync(struct sqk_io *io)
{
	struct io_fault *f = (struct io_fault *)io;
	int step = fault_step(f, SQK_FAULT_SYNC);

	return step < 0 ? step : sqk_io_sync(f->inner);
}

static void fault_destroy(struct sqk_io *io)
{
	free(io);
}

static const struct sqk_io_ops fault_ops = {
	.read_at = fault_read_at,
	.write_at = fault_write_at,
	.get_size = fault_get_size,
	.sync = fault_sync,
	.destroy = fault_destroy,
};

/* Borrows inner; caller owns *out. */
int sqk_io_fault_create(struct sqk_io *inner, struct sqk_io **out)
{
	struct io_fault *f;

	*out = NULL;
	if (!inner)
		return SQK_EINVAL;
	f = calloc(1, sizeof(*f));
	if (!f)
		return SQK_ENOMEM;
	f->base.ops = &fault_ops;
	f->inner = inner;
	*out = &f->base;
	return 0;
}

static struct io_fault *as_fault(struct sqk_io *io, enum sqk_io_fault_op op)
{
	if (!io || io->ops != &fault_ops || (unsigned)op >= FAULT_NOPS)
		return NULL;
	return (struct io_fault *)io;
}

/* Arms op on a fault double (ignored for other backends). err 0 on SQK_FAULT_READ: the reads
 * succeed but byte len/2 of each is inverted; err 0 on other ops: calls pass through. */
void sqk_io_fault_arm(struct sqk_io *io, enum sqk_io_fault_op op, unsigned countdown, int err)
{
	struct io_fault *f = as_fault(io, op);

	if (!f)
		return;
	f->arm[op].armed = true;
	f->arm[op].countdown = countdown;
	f->arm[op].err = err;
}

/* Calls of kind op seen by a fault double (0 for other backends). */
unsigned sqk_io_fault_calls(struct sqk_io *io, enum sqk_io_fault_op op)
{
	struct io_fault *f = as_fault(io, op);

	return f ? f->calls[op] : 0;
}

struct io_capped {
	struct sqk_io base;
	struct sqk_io *inner; /* owned */
	uint64_t capacity;
	uint64_t overflow;    /* 0, or the furthest end a write reached once one did not fit */
};

static int capped_read_at(struct sqk_io *io, uint64_t off, void *buf, size_t len)
{
	return sqk_io_read_at(((struct io_capped *)io)->inner, off, buf, len);
}

/* Forwards writes until one does not fit; drops that one and every later one. */
static int capped_write_at(struct sqk_io *io, uint64_t off, const void *buf, size_t len)
{
	struct io_capped *c = (struct io_capped *)io;
	uint64_t end = off + len;

	if (end < off)
		return SQK_EOVERFLOW;
	if (!c->overflow && end <= c->capacity)
		return sqk_io_write_at(c->inner, off, buf, len);
	if (end > c->overflow)
		c->overflow = end;
	return 0;
}

static int capped_get_size(struct sqk_io *io, uint64_t *size)
{
	return sqk_io_get_size(((struct io_capped *)io)->inner, size);
}

static int capped_sync(struct sqk_io *io)
{
	return sqk_io_sync(((struct io_capped *)io)->inner);
}

static void capped_destroy(struct sqk_io *io)
{
	sqk_io_destroy(((struct io_capped *)io)->inner);
	free(io);
}

static const struct sqk_io_ops capped_ops = {
	.read_at = capped_read_at,
	.write_at = capped_write_at,
	.get_size = capped_get_size,
	.sync = capped_sync,
	.destroy = capped_destroy,
};

/* Takes inner over; caller owns *out. */
int sqk_io_capped_create(struct sqk_io *inner, uint64_t capacity, struct sqk_io **out)
{
	struct io_capped *c;

	*out = NULL;
	if (!inner)
		return SQK_EINVAL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return SQK_ENOMEM;
	c->base.ops = &capped_ops;
	c->inner = inner;
	c->capacity = capacity;
	*out = &c->base;
	return 0;
}

/* The furthest end reached by writes of a capped sink that did not fit, 0 if all did (and for
 * other backends). */
uint64_t sqk_io_capped_overflow(struct sqk_io *io)
{
	if (!io || io->ops != &capped_ops)
		return 0;
	return ((struct io_capped *)io)->overflow;
}
