/* SPDX-License-Identifier: BSD-2-Clause */
/* What sqk sign reads of an image and how it writes the signed copy (sign.h): the image's end E
 * found from the signature block or the integrity trailer, every chunk of [0, E) checked against
 * its digest, then [0, S) copied into the new file in the kernel and the new block appended. */
#include "sign.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/format.h"
#include "sqk/error.h"
#include "sqk/io.h"

/* What the checks read at once (whole chunks of it). */
#define CHECK_BUF (4u << 20)
/* What one copy_file_range (or read and write) moves before a signal is looked at. */
#define COPY_STEP ((uint64_t)256 << 20)

static int fail(char *why, size_t whylen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Puts the message in why; returns -1. */
static int fail(char *why, size_t whylen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, whylen, fmt, ap);
	va_end(ap);
	return -1;
}

/* The file ends with neither a trailer nor a signature block: an image without integrity data
 * when it ends at its padded end, else bytes this sqk cannot account for. */
static int no_trailer(struct sign_image *im, struct sqk_io *io, char *why, size_t whylen)
{
	uint8_t raw[SQK_SUPER_SIZE];
	struct sqk_super sb;
	uint64_t padded;
	int err = sqk_io_read_at(io, 0, raw, sizeof(raw));

	if (err)
		return fail(why, whylen, "%s: cannot read the superblock: %s", im->name,
			    sqk_strerror(err));
	super_decode(raw, &sb);
	padded = sb.bytes_used > UINT64_MAX - SQK_PAD ? 0 : (sb.bytes_used + SQK_PAD - 1) /
							     SQK_PAD * SQK_PAD;
	if (im->size == padded || im->size == sb.bytes_used)
		return fail(why, whylen, "%s has no integrity data (build it with integrity: sqk "
			    "mkimage without --no-checksums)", im->name);
	return fail(why, whylen, "%s: the %llu bytes after the image's padded end (%llu) end "
		    "with neither an integrity trailer nor a signature block: damaged or cut "
		    "integrity data, or an area appended after it that this sqk cannot see past",
		    im->name, (unsigned long long)(im->size - padded), (unsigned long long)padded);
}

/* Reads the trailer that must end at im->image_end. */
static int read_trailer(struct sign_image *im, struct sqk_io *io, bool signed_,
			char *why, size_t whylen)
{
	uint8_t raw[SQK_INTEG_TRAILER_SIZE];
	struct sqk_integ_trailer t;
	uint64_t e = im->image_end;
	int err = e >= sizeof(raw) ? sqk_io_read_at(io, e - sizeof(raw), raw, sizeof(raw)) :
				     SQK_ENOENT;

	if (!err)
		err = integ_trailer_decode(raw, &t);
	if (err == SQK_ENOENT && !signed_)
		return no_trailer(im, io, why, whylen);
	if (err == SQK_ENOENT)
		return fail(why, whylen, "%s: its signature block says the image ends at %llu, "
			    "where there is no integrity trailer: damaged", im->name,
			    (unsigned long long)e);
	if (err == SQK_ECORRUPT || (!err && integ_end(&t) != e))
		return fail(why, whylen, "%s: its integrity data is damaged (the trailer at bytes "
			    "%llu..%llu)", im->name, (unsigned long long)(e - sizeof(raw)),
			    (unsigned long long)e);
	if (err)
		return fail(why, whylen, "%s: cannot read the integrity trailer: %s", im->name,
			    sqk_strerror(err));
	memcpy(im->root, t.root, sizeof(im->root));
	im->chunk_size = t.chunk_size;
	im->nchunks = t.nchunks;
	return 0;
}

/* An image without signatures: where its integrity data ends (integ_locate: before an
 * appended dm-verity area, which the new block will follow). */
static int unsigned_end(struct sign_image *im, struct sqk_io *io, char *why, size_t whylen)
{
	struct integ_where w;
	char lw[256];
	int err = integ_locate(io, im->size, &w, lw, sizeof(lw));

	if (err == SQK_ECORRUPT)
		return fail(why, whylen, "%s: %s", im->name, lw);
	if (err)
		return fail(why, whylen, "%s: cannot read its end: %s", im->name,
			    err == SQK_EIO ? strerror(errno) : sqk_strerror(err));
	im->image_end = w.end;
	return 0;
}

/* Borrows im->fd; fills im. */
int sign_image_locate(struct sign_image *im, char *why, size_t whylen)
{
	struct sqk_io *io;
	int err = sqk_io_fd_create(im->fd, 0, false, &io);

	memset(&im->blk, 0, sizeof(im->blk));
	if (err)
		return fail(why, whylen, "out of memory");
	err = sig_block_read(io, im->size, &im->blk, &im->start);
	if (err == SQK_ENOENT) { /* the trailer ends the file, or an appended dm-verity area */
		im->start = im->size;
		err = unsigned_end(im, io, why, whylen);
		if (!err)
			err = read_trailer(im, io, false, why, whylen);
	} else if (!err) {
		im->image_end = im->blk.image_end;
		err = read_trailer(im, io, true, why, whylen);
	} else if (err == SQK_ECORRUPT) {
		err = fail(why, whylen, "%s: the signature block at the end of the file is damaged",
			   im->name);
	} else {
		err = fail(why, whylen, "%s: cannot read its end: %s", im->name,
			   err == SQK_EIO ? strerror(errno) : sqk_strerror(err));
	}
	sqk_io_destroy(io);
	return err ? -1 : 0;
}

/* Checks the chunks of buf (len bytes read at chunk k0's start). */
static int check_buf(struct sign_image *im, const struct integ *ig, uint64_t k0,
		     const uint8_t *buf, size_t len, char *why, size_t whylen)
{
	for (size_t at = 0; at < len; k0++) {
		uint64_t a, b;

		integ_chunk_range(ig, k0, &a, &b);
		if (integ_check_chunk(ig, k0, buf + at, (size_t)(b - a)))
			return fail(why, whylen, "%s: chunk %llu (bytes %llu..%llu) does not match "
				    "its digest: the image is damaged", im->name,
				    (unsigned long long)k0, (unsigned long long)a,
				    (unsigned long long)b);
		at += (size_t)(b - a);
	}
	return 0;
}

/* Reads [0, covered) a buffer of whole chunks at a time and checks each chunk. */
static int check_chunks(struct sign_image *im, struct sqk_io *io, const struct integ *ig,
			atomic_int *cancel, char *why, size_t whylen)
{
	uint64_t cs = ig->t.chunk_size, per = CHECK_BUF / cs ? CHECK_BUF / cs : 1;
	uint8_t *buf = malloc((size_t)(per * cs));
	int r = 0;

	if (!buf)
		return fail(why, whylen, "out of memory");
	for (uint64_t k = 0; !r && k < ig->t.nchunks; k += per) {
		uint64_t a = k * cs, b = a + per * cs < ig->t.covered ? a + per * cs
									: ig->t.covered;
		int err = sqk_io_read_at(io, a, buf, (size_t)(b - a));

		if (cancel && atomic_load(cancel))
			r = fail(why, whylen, "interrupted");
		else if (err)
			r = fail(why, whylen, "%s: read at %llu failed: %s", im->name,
				 (unsigned long long)a,
				 err == SQK_EIO ? strerror(errno) : sqk_strerror(err));
		else
			r = check_buf(im, ig, k, buf, (size_t)(b - a), why, whylen);
	}
	free(buf);
	return r;
}

/* Borrows im. */
int sign_image_check(struct sign_image *im, atomic_int *cancel, char *why, size_t whylen)
{
	struct sqk_io *io;
	struct integ ig;
	int r, err = sqk_io_fd_create(im->fd, 0, false, &io);

	if (err)
		return fail(why, whylen, "out of memory");
	err = integ_load(io, im->image_end, &ig);
	if (err == SQK_ECORRUPT || err == SQK_ENOENT)
		r = fail(why, whylen, "%s: its integrity data is damaged (the digests do not "
			 "match the root digest of the trailer)", im->name);
	else if (err)
		r = fail(why, whylen, "%s: cannot load its integrity data: %s", im->name,
			 err == SQK_EIO ? strerror(errno) : sqk_strerror(err));
	else
		r = check_chunks(im, io, &ig, cancel, why, whylen);
	if (!err)
		integ_free(&ig);
	sqk_io_destroy(io);
	return r;
}

/* Copies [off, off + len) of in to out with pread and pwrite. n bytes, or -1 with errno. */
static ssize_t copy_plain(int in, int out, uint64_t off, uint64_t len)
{
	static const size_t cap = 1u << 20;
	uint8_t *buf = malloc(cap);
	uint64_t done = 0;

	if (!buf)
		return -1;
	while (done < len) {
		size_t want = len - done < cap ? (size_t)(len - done) : cap;
		ssize_t n = pread(in, buf, want, (off_t)(off + done));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		for (ssize_t w = 0; w < n;) {
			ssize_t m = pwrite(out, buf + w, (size_t)(n - w), (off_t)(off + done + w));

			if (m < 0 && errno == EINTR)
				continue;
			if (m <= 0) {
				free(buf);
				if (!m)
					errno = ENOSPC;
				return -1;
			}
			w += m;
		}
		done += (uint64_t)n;
	}
	free(buf);
	return (ssize_t)done;
}

/* Copies [0, len) of in to out: copy_file_range (a reflink or an in-kernel copy), or pread and
 * pwrite where the kernel or the file system cannot. 0, or -1 with errno. */
static int copy_prefix(int in, int out, uint64_t len, atomic_int *cancel)
{
	bool kernel = true;
	uint64_t done = 0;

	while (done < len) {
		size_t step = len - done < COPY_STEP ? (size_t)(len - done) : (size_t)COPY_STEP;
		loff_t a = (loff_t)done, b = (loff_t)done;
		ssize_t n = -1;

		if (cancel && atomic_load(cancel)) {
			errno = EINTR;
			return -1;
		}
		if (kernel)
			n = copy_file_range(in, &a, out, &b, step, 0);
		if (n < 0 && kernel && (errno == EXDEV || errno == ENOSYS || errno == EOPNOTSUPP ||
					errno == EINVAL || errno == EBADF)) {
			kernel = false;
			continue;
		}
		if (!kernel)
			n = copy_plain(in, out, done, step);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		if (n == 0) { /* shorter than it was a moment ago */
			errno = ESTALE;
			return -1;
		}
		done += (uint64_t)n;
	}
	return 0;
}

/* Borrows im and blk. */
int sign_image_write(struct sign_image *im, int out_fd, const uint8_t *blk, size_t len,
		     atomic_int *cancel, char *why, size_t whylen)
{
	if (copy_prefix(im->fd, out_fd, im->start, cancel)) {
		if (errno == EINTR)
			return fail(why, whylen, "interrupted");
		if (errno == ESTALE)
			return fail(why, whylen, "%s changed while it was copied", im->name);
		return fail(why, whylen, "cannot copy %s: %s", im->name, strerror(errno));
	}
	for (size_t at = 0; at < len;) {
		ssize_t n = pwrite(out_fd, blk + at, len - at, (off_t)(im->start + at));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return fail(why, whylen, "cannot write the signature block: %s",
				    n ? strerror(errno) : strerror(ENOSPC));
		at += (size_t)n;
	}
	if (fsync(out_fd))
		return fail(why, whylen, "cannot flush the signed copy of %s: %s", im->name,
			    strerror(errno));
	return 0;
}
