/* Verified reads: with opts.verify, the integrity data at the end of the file is loaded and
 * authenticated at open, and every byte range read from the image (superblock, tables,
 * metadata, data and fragment blocks) is checked chunk by chunk before anything decodes it.
 * A bitmap remembers verified chunks, so each chunk is hashed once per open. */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static bool bit_get(atomic_uint_fast64_t *bits, uint64_t k)
{
	return atomic_load_explicit(&bits[k / 64], memory_order_acquire) >> (k % 64) & 1;
}

/* Sets bit k; returns its previous value. */
static bool bit_set(atomic_uint_fast64_t *bits, uint64_t k)
{
	uint_fast64_t m = (uint_fast64_t)1 << (k % 64);

	return atomic_fetch_or_explicit(&bits[k / 64], m, memory_order_acq_rel) & m;
}

static void bit_clear(atomic_uint_fast64_t *bits, uint64_t k)
{
	atomic_fetch_and_explicit(&bits[k / 64], ~((uint_fast64_t)1 << (k % 64)),
				  memory_order_acq_rel);
}

/* Claims chunk k for hashing: true when the caller must hash it, false once another thread
 * has verified it (a thread hashing it now is waited for, so no chunk is hashed twice). */
static bool chunk_claim(struct sqk_image *img, uint64_t k)
{
	for (;;) {
		if (bit_get(img->vbits, k))
			return false;
		if (!bit_set(img->vclaim, k))
			return true;
		while (bit_get(img->vclaim, k) && !bit_get(img->vbits, k))
			sched_yield();
	}
}

/* Loads and authenticates the integrity data when opts.verify asked for it. Absent data is not
 * an error (reads stay unverified, said once in the log); corrupt data fails the open. */
int sqk_verify_init(struct sqk_image *img)
{
	int rc;

	if (!img->verify_req)
		return 0;
	rc = img->at_zero ? sqk_integ_load(img->io, img->file_size, &img->integ) : SQK_ENOENT;
	if (rc == SQK_ENOENT) {
		sqk_logf(img, "no integrity data; reads are not verified");
		return 0;
	}
	if (rc) {
		sqk_logf(img, "integrity data at the end of the file is not valid: %s",
			 sqk_strerror(rc));
		return rc == SQK_EIO || rc == SQK_ENOMEM ? rc : SQK_ECORRUPT;
	}
	img->vbits = calloc((size_t)(img->integ.t.nchunks + 63) / 64, sizeof(*img->vbits));
	img->vclaim = calloc((size_t)(img->integ.t.nchunks + 63) / 64, sizeof(*img->vclaim));
	if (!img->vbits || !img->vclaim)
		return SQK_ENOMEM;
	img->integ_on = true;
	return 0;
}

/* After the superblock: the checksummed range must hold the whole image. */
int sqk_verify_covers(struct sqk_image *img)
{
	if (!img->integ_on || img->sb.bytes_used <= img->integ.t.covered)
		return 0;
	sqk_logf(img, "integrity data covers %llu bytes, the image has %llu",
		 (unsigned long long)img->integ.t.covered, (unsigned long long)img->sb.bytes_used);
	return SQK_ECORRUPT;
}

/* opts.root_hash: the authenticated integrity trailer must carry that root digest. Remote
 * images are pinned by their backend (io_http.c) with the same messages. */
int sqk_verify_pin(struct sqk_image *img, const uint8_t *root_hash)
{
	char got[2 * SQK_INTEG_DIGEST_SIZE + 1], want[2 * SQK_INTEG_DIGEST_SIZE + 1];
	struct sqk_integ_trailer t;
	int rc;

	if (!root_hash)
		return 0;
	rc = sqk_image_integrity(img, &t);
	if (rc == SQK_ENOENT) {
		sqk_logf(img, "the image has no integrity data: its root digest cannot be checked");
		return SQK_ECORRUPT;
	}
	if (rc) {
		sqk_logf(img, "the integrity data at the end of the image is not valid");
		return rc == SQK_EIO || rc == SQK_ENOMEM ? rc : SQK_ECORRUPT;
	}
	if (memcmp(root_hash, t.root, SQK_INTEG_DIGEST_SIZE) == 0)
		return 0;
	sqk_integ_hex(t.root, got);
	sqk_integ_hex(root_hash, want);
	sqk_logf(img, "root digest %s does not match the pinned %s", got, want);
	return SQK_ECORRUPT;
}

/* Frees the integrity state of img. */
void sqk_verify_free(struct sqk_image *img)
{
	sqk_integ_free(&img->integ);
	free(img->vbits);
	free(img->vclaim);
	img->vbits = NULL;
	img->vclaim = NULL;
}

static void log_mismatch(struct sqk_image *img, uint64_t k, uint64_t s, uint64_t e, uint32_t ino,
			 int rc)
{
	char what[48] = "";

	if (ino)
		snprintf(what, sizeof(what), " (inode %u)", ino);
	if (rc == SQK_ECORRUPT)
		sqk_logf(img, "integrity check failed: chunk %llu, bytes %llu..%llu, does not "
			 "match its digest%s", (unsigned long long)k, (unsigned long long)s,
			 (unsigned long long)e, what);
	else
		sqk_logf(img, "integrity check of chunk %llu, bytes %llu..%llu, failed: %s%s",
			 (unsigned long long)k, (unsigned long long)s, (unsigned long long)e,
			 sqk_strerror(rc), what);
}

/* Checks chunk k, [s, e), of which buf holds [bpos, bpos + blen): the rest is read. */
static int check_partial(struct sqk_image *img, uint64_t k, uint64_t s, uint64_t e, uint64_t bpos,
			 const uint8_t *buf, size_t blen)
{
	uint64_t lo = s > bpos ? s : bpos, hi = e < bpos + blen ? e : bpos + blen;
	uint8_t *tmp = malloc((size_t)(e - s));
	int rc = tmp ? 0 : SQK_ENOMEM;

	if (lo > hi)
		lo = hi = s; /* no overlap: read it all */
	if (!rc && s < lo)
		rc = sqk_io_read_at(img->io, s, tmp, (size_t)(lo - s));
	if (!rc && hi < e)
		rc = sqk_io_read_at(img->io, hi, tmp + (hi - s), (size_t)(e - hi));
	if (!rc) {
		memcpy(tmp + (lo - s), buf + (lo - bpos), (size_t)(hi - lo));
		rc = sqk_integ_check_chunk(&img->integ, k, tmp, (size_t)(e - s));
	}
	free(tmp);
	return rc;
}

/* Hashes chunk k (claimed by the caller) and records the verdict. */
static int check_one(struct sqk_image *img, uint64_t k, uint64_t bpos, const uint8_t *buf,
		     size_t blen, uint32_t ino)
{
	uint64_t s, e;
	int rc;

	sqk_integ_chunk_range(&img->integ, k, &s, &e);
	if (s >= bpos && e <= bpos + blen)
		rc = sqk_integ_check_chunk(&img->integ, k, buf + (s - bpos), (size_t)(e - s));
	else
		rc = check_partial(img, k, s, e, bpos, buf, blen);
	if (rc) {
		bit_clear(img->vclaim, k);
		log_mismatch(img, k, s, e, ino, rc);
		return rc;
	}
	bit_set(img->vbits, k);
	return 0;
}

/* Verifies every chunk overlapping [pos, pos + len); buf holds the bytes [bpos, bpos + blen)
 * (a superset or not: missing parts of a chunk are read). ino names the inode in messages
 * (0 = none). Returns 0 or SQK_ECORRUPT (logged). */
int sqk_verify_span(struct sqk_image *img, uint64_t pos, size_t len, uint64_t bpos,
		    const void *buf, size_t blen, uint32_t ino)
{
	uint64_t cs = img->integ.t.chunk_size, k, last;

	if (!img->integ_on || len == 0)
		return 0;
	if (pos + len > img->integ.t.covered) {
		sqk_logf(img, "read of %zu bytes at offset %llu is outside the checksummed range",
			 len, (unsigned long long)pos);
		return SQK_ECORRUPT;
	}
	last = (pos + len - 1) / cs;
	for (k = pos / cs; k <= last; k++) {
		int rc;

		if (!chunk_claim(img, k))
			continue;
		rc = check_one(img, k, bpos, buf, blen, ino);
		if (rc)
			return rc;
	}
	return 0;
}

/* Verifies [pos, pos + len), whose bytes buf holds. */
int sqk_verify_range(struct sqk_image *img, uint64_t pos, const void *buf, size_t len,
		     uint32_t ino)
{
	return sqk_verify_span(img, pos, len, pos, buf, len, ino);
}

/* Borrows img. */
bool sqk_image_verified(const struct sqk_image *img)
{
	return img && (img->integ_on || img->remote_verified);
}

/* Fills the caller's *out; loads the integrity data for the call when reads are not verified. */
int sqk_image_integrity(struct sqk_image *img, struct sqk_integ_trailer *out)
{
	struct sqk_integ ig;
	int rc;

	if (img->integ_on) {
		*out = img->integ.t;
		return 0;
	}
	if (!img->at_zero)
		return SQK_ENOENT;
	rc = sqk_integ_load(img->io, img->file_size, &ig);
	if (!rc)
		*out = ig.t;
	sqk_integ_free(&ig);
	return rc;
}
