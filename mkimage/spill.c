/* SPDX-License-Identifier: BSD-2-Clause */
/* The spill store: byte strings that wait until the end of a build (file tails and whole small
 * files until they are packed into fragment blocks, file digests for dedup, the directory entries
 * of a walked tree, finished directory-table blocks). The first bytes stay in memory; past the
 * budget they go to an unnamed temporary file (O_TMPFILE in $TMPDIR, else /tmp), so memory stays
 * bounded whatever the number of files. Nothing is ever read from the source twice. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sqk/error.h"
#include "mk.h"
#include "spill.h"

#define SPILL_BUF (128u << 10)

struct mk_spill {
	uint8_t *mem;
	size_t used, cap, budget;
	int fd;               /* spill file, -1 until needed */
	uint64_t spilled;     /* bytes in it, the buffered ones included */
	uint8_t *wbuf;        /* spill bytes not written yet: the last wlen of them */
	size_t wlen;
	const char *what;     /* what it holds, for messages */
	char dir[4096];
};

int mk_spill_create(struct mk_ctx *c, const char *what, size_t budget, struct mk_spill **out)
{
	struct mk_spill *t = calloc(1, sizeof(*t));
	if (!t)
		return mk_fail(c, SQK_ENOMEM, "out of memory");
	t->fd = -1;
	t->budget = budget;
	t->what = what;
	const char *dir = getenv("TMPDIR");
	snprintf(t->dir, sizeof(t->dir), "%s", dir && *dir ? dir : "/tmp");
	*out = t;
	return 0;
}

void mk_spill_destroy(struct mk_spill *t)
{
	if (!t)
		return;
	if (t->fd >= 0)
		close(t->fd);
	free(t->mem);
	free(t->wbuf);
	free(t);
}

void mk_spill_reset(struct mk_spill *t)
{
	t->used = 0;
	t->spilled = 0;
	t->wlen = 0;
	if (t->fd >= 0 && ftruncate(t->fd, 0)) {
		/* not fatal: the file is only written again from offset 0 */
	}
}

static int open_spill(struct mk_ctx *c, struct mk_spill *t)
{
	t->fd = open(t->dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (t->fd < 0 && (errno == EOPNOTSUPP || errno == EISDIR || errno == EINVAL)) {
		char name[4200];
		snprintf(name, sizeof(name), "%s/.sqk-spill-XXXXXX", t->dir);
		t->fd = mkostemp(name, O_CLOEXEC);
		if (t->fd >= 0)
			unlink(name);
	}
	if (t->fd < 0)
		return mk_fail(c, sqk_from_errno(errno),
			       "cannot create a temporary file in '%s' for %s: %s", t->dir, t->what,
			       strerror(errno));
	return 0;
}

static int write_all(struct mk_ctx *c, struct mk_spill *t, const uint8_t *p, size_t len,
		     uint64_t off)
{
	while (len) {
		ssize_t w = pwrite(t->fd, p, len, (off_t)off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return mk_fail(c, w < 0 ? sqk_from_errno(errno) : SQK_EIO,
				       "cannot write %s to a temporary file in '%s': %s", t->what,
				       t->dir, w < 0 ? strerror(errno) : "no space");
		p += w;
		off += (uint64_t)w;
		len -= (size_t)w;
	}
	return 0;
}

static int flush(struct mk_ctx *c, struct mk_spill *t)
{
	int err = t->wlen ? write_all(c, t, t->wbuf, t->wlen, t->spilled - t->wlen) : 0;
	t->wlen = 0;
	return err;
}

/* Appends to the spill file through a buffer (tails are small: one write per 128 KiB). */
static int spill(struct mk_ctx *c, struct mk_spill *t, const void *data, size_t len)
{
	if (t->fd < 0) {
		int err = open_spill(c, t);
		if (!err && !(t->wbuf = malloc(SPILL_BUF)))
			err = mk_fail(c, SQK_ENOMEM, "out of memory");
		if (err)
			return err;
	}
	if (t->wlen + len > SPILL_BUF) {
		int err = flush(c, t);
		if (err)
			return err;
	}
	t->spilled += len;
	if (len > SPILL_BUF)
		return write_all(c, t, data, len, t->spilled - len);
	memcpy(t->wbuf + t->wlen, data, len);
	t->wlen += len;
	return 0;
}

int mk_spill_put(struct mk_ctx *c, struct mk_spill *t, const void *data, size_t len,
		 uint64_t *ref)
{
	if (!t->spilled && t->used + len <= t->budget) { /* memory until the first spill */
		if (t->used + len > t->cap) {
			size_t ncap = t->cap ? t->cap : 1u << 16;
			while (ncap < t->used + len)
				ncap *= 2;
			if (ncap > t->budget) /* not mem_grow: never past the memory budget */
				ncap = t->budget;
			uint8_t *nm = realloc(t->mem, ncap);
			if (!nm)
				return mk_fail(c, SQK_ENOMEM, "out of memory");
			t->mem = nm;
			t->cap = ncap;
		}
		memcpy(t->mem + t->used, data, len);
		*ref = t->used;
		t->used += len;
		return 0;
	}
	*ref = (uint64_t)t->budget + t->spilled;
	return spill(c, t, data, len);
}

int mk_spill_flush(struct mk_ctx *c, struct mk_spill *t)
{
	return t->fd >= 0 ? flush(c, t) : 0;
}

int mk_spill_get(struct mk_ctx *c, struct mk_spill *t, uint64_t ref, void *buf, size_t len)
{
	if (ref < t->budget) {
		memcpy(buf, t->mem + ref, len);
		return 0;
	}
	uint8_t *p = buf;
	uint64_t off = ref - t->budget;
	if (off >= t->spilled - t->wlen) { /* still in the write buffer */
		memcpy(buf, t->wbuf + (off - (t->spilled - t->wlen)), len);
		return 0;
	}
	while (len) {
		ssize_t r = pread(t->fd, p, len, (off_t)off);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return mk_fail(c, r < 0 ? sqk_from_errno(errno) : SQK_EIO,
				       "cannot read %s back from the temporary file: %s", t->what,
				       r < 0 ? strerror(errno) : "short file");
		p += r;
		off += (uint64_t)r;
		len -= (size_t)r;
	}
	return 0;
}
