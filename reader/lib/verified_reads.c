/* SPDX-License-Identifier: BSD-2-Clause */
/* Verified reads (the default; opts.no_verify turns them off): the integrity data at the end
 * of the file is loaded and authenticated at open, and every byte range read from the image
 * (superblock, tables, metadata, data and fragment blocks) is checked chunk by chunk before
 * anything decodes it. A bitmap remembers verified chunks, so each chunk is hashed once per
 * open whatever the number of readers; a chunk that fails is logged once, hashed again when
 * read again (its bytes may read right the next time), and each failed read's chunk is kept
 * for sqk_image_mismatch so the caller can name it with the path it knows.
 * A chunk is checked with its XXH3-64 checksum from the image's fast checksum block when it has
 * one and no root digest is pinned (the block is loaded at open through SHA-256-checked reads:
 * the digests authenticate it), else with its SHA-256 digest (common/integrity.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/bytes.h"
#include "common/format.h"
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
 * has verified it (a thread hashing it now is waited for, asleep: a spin would burn the CPU
 * the hashing thread needs on a loaded machine; so no chunk is hashed twice). */
static bool chunk_claim(struct sqk_image *img, uint64_t k)
{
	for (;;) {
		if (bit_get(img->vbits, k))
			return false;
		if (!bit_set(img->vclaim, k))
			return true;
		pthread_mutex_lock(&img->vmu);
		while (bit_get(img->vclaim, k) && !bit_get(img->vbits, k))
			pthread_cond_wait(&img->vcv, &img->vmu);
		pthread_mutex_unlock(&img->vmu);
	}
}

/* After a verdict on a claimed chunk (its bits set): wakes the threads waiting for one. The
 * waiters test the bits under vmu, so taking it here loses no wakeup. */
static void chunk_done(struct sqk_image *img)
{
	pthread_mutex_lock(&img->vmu);
	pthread_cond_broadcast(&img->vcv);
	pthread_mutex_unlock(&img->vmu);
}

/* Checks chunk k, whose bytes data holds, with XXH3-64 when the fast block has it, else with
 * SHA-256; counts which. */
static int chunk_check(struct sqk_image *img, uint64_t k, const void *data, size_t len)
{
	/* a digest tree's group that failed its group digest (logged at open): its chunks are
	 * refused, whatever their fast checksums say, as remote reads refuse them */
	if (!integ_group_loaded(&img->integ, integ_group_of(&img->integ, k)))
		return SQK_ECORRUPT;
	if (img->fast_on && k < img->fast.n) {
		atomic_fetch_add_explicit(&img->st.xxh3, 1, memory_order_relaxed);
		return integ_fast_check_chunk(&img->integ, &img->fast, k, data, len);
	}
	atomic_fetch_add_explicit(&img->st.sha256, 1, memory_order_relaxed);
	return integ_check_chunk(&img->integ, k, data, len);
}

/* A digest tree: every group of chunk digests checked against its group digest. A wrong group
 * is logged, naming the image bytes it covers, and counted (sqk_image_damaged_groups); reads
 * there fail (chunk_check); the rest of the image reads. */
static int accept_groups(struct sqk_image *img)
{
	uint64_t nbad, k0, k1, s, e, is, ie, x;
	int rc = integ_accept_groups(img->io, &img->integ, &nbad, NULL, NULL);

	img->groups_damaged = rc ? 0 : nbad;

	for (uint64_t g = 0; !rc && nbad && g < img->integ.t.ngroups; g++) {
		if (integ_group_loaded(&img->integ, g))
			continue;
		integ_group_range(&img->integ, g, &k0, &k1, &s, &e);
		integ_chunk_range(&img->integ, k0, &is, &x);
		integ_chunk_range(&img->integ, k1 - 1, &x, &ie);
		img_logf(img, "integrity digest group %llu (bytes %llu..%llu, covering image bytes "
			 "%llu..%llu) does not match its group digest: reads there fail",
			 (unsigned long long)g, (unsigned long long)s, (unsigned long long)e - 1,
			 (unsigned long long)is, (unsigned long long)ie - 1);
	}
	return rc;
}

/* A file that ends with zero bytes may be an image with its integrity data grown to a size
 * of its own (a disk image, a partition-sized file): it is then read as long as that. */
static bool grown_with_zeros(struct sqk_image *img)
{
	uint64_t end = integ_grown_end(img->io, img->file_size);

	if (end == img->file_size)
		return false;
	img->file_size = end;
	return true;
}

static int no_trailer_rule(struct sqk_image *img, bool log);

/* An image without a trailer at the end of its file: only a file that ends at the image's
 * padded end (bytes_used, or rounded up to 4 KiB), or after zero bytes, has no integrity
 * data; other bytes there are integrity data cut or damaged, which must not pass for "no
 * checksums" (that would turn verification off). Block devices have the image's extent as
 * their size (common/io.c), so the rule holds for them too. SQK_ECORRUPT, logged. */
int verify_no_trailer(struct sqk_image *img)
{
	return no_trailer_rule(img, true);
}

/* verify_no_trailer's rule; logs when log. */
static int no_trailer_rule(struct sqk_image *img, bool log)
{
	uint8_t raw[SQK_SUPER_SIZE];
	struct sqk_super sb;
	uint64_t padded, after;

	if (!img->at_zero || img->file_size < sizeof(raw) ||
	    sqk_io_read_at(img->io, img->base, raw, sizeof(raw)))
		return 0; /* no superblock to say: the open refuses it for that */
	super_decode(raw, &sb);
	if (sb.magic != SQK_MAGIC || sb.bytes_used > img->file_size)
		return 0;
	if (!integ_cut(img->io, img->file_size, 0, sb.bytes_used, &padded))
		return 0; /* none, or zero padding (verify_init looked for a trailer before it) */
	after = img->file_size - padded;
	if (log)
		img_logf(img, "integrity data truncated or damaged: the file has %llu bytes, the "
			 "image ends at %llu (bytes_used %llu padded to 4 KiB), and the %llu bytes "
			 "after it do not end with a whole integrity trailer (--no-verify reads it "
			 "unchecked)", (unsigned long long)img->file_size,
			 (unsigned long long)padded, (unsigned long long)sb.bytes_used,
			 (unsigned long long)after);
	return SQK_ECORRUPT;
}

/* Loads and authenticates the integrity data unless opts.no_verify. Absent data is not an
 * error (reads stay unverified, which sqk_image_verified tells; not logged, as it is the rule
 * for images from other tools) when the file ends at the image's padded end
 * (verify_no_trailer). A trailer that does not end the file or does not match its root digest
 * (or whose digest array or group digests do not) fails the open; a digest tree's group that
 * does not match its group digest does not: it is logged and counted by accept_groups, and
 * only the reads of the bytes it covers fail. */
int verify_init(struct sqk_image *img)
{
	int rc;

	if (!img->verify_req)
		return 0;
	rc = img->at_zero ? integ_load_lazy(img->io, img->file_size, &img->integ) : SQK_ENOENT;
	if (rc == SQK_ENOENT && img->at_zero && grown_with_zeros(img))
		rc = integ_load_lazy(img->io, img->file_size, &img->integ);
	if (rc == SQK_ENOENT)
		return verify_no_trailer(img);
	if (rc == 0)
		rc = accept_groups(img);
	if (rc) {
		img_logf(img, "integrity data at the end of the file is not valid: %s",
			 sqk_strerror(rc));
		return rc == SQK_EIO || rc == SQK_ENOMEM ? rc : SQK_ECORRUPT;
	}
	img->vbits = calloc((size_t)(img->integ.t.nchunks + 63) / 64, sizeof(*img->vbits));
	img->vclaim = calloc((size_t)(img->integ.t.nchunks + 63) / 64, sizeof(*img->vclaim));
	img->vbad = calloc((size_t)(img->integ.t.nchunks + 63) / 64, sizeof(*img->vbad));
	if (!img->vbits || !img->vclaim || !img->vbad)
		return SQK_ENOMEM;
	img->integ_on = true;
	return 0;
}

/* After the superblock: the checksummed range must hold the whole image. */
int verify_covers(struct sqk_image *img)
{
	if (!img->integ_on || img->sb.bytes_used <= img->integ.t.covered)
		return 0;
	img_logf(img, "integrity data covers %llu bytes, the image has %llu",
		 (unsigned long long)img->integ.t.covered, (unsigned long long)img->sb.bytes_used);
	return SQK_ECORRUPT;
}

/* opts.root_hash: the authenticated integrity trailer must carry that root digest. Remote
 * images are pinned by their backend as it opens them, with the same messages. */
int verify_pin(struct sqk_image *img, const uint8_t *root_hash)
{
	char got[2 * SQK_INTEG_DIGEST_SIZE + 1], want[2 * SQK_INTEG_DIGEST_SIZE + 1];
	struct sqk_integ_trailer t;
	int rc;

	if (!root_hash)
		return 0;
	rc = sqk_image_integrity(img, &t);
	if (rc == SQK_ENOENT) {
		img_logf(img, "the image has no integrity data: its root digest cannot be checked");
		return SQK_ECORRUPT;
	}
	if (rc) {
		img_logf(img, "the integrity data at the end of the image is not valid");
		return rc == SQK_EIO || rc == SQK_ENOMEM ? rc : SQK_ECORRUPT;
	}
	if (memcmp(root_hash, t.root, SQK_INTEG_DIGEST_SIZE) == 0)
		return 0;
	integ_hex(t.root, got);
	integ_hex(root_hash, want);
	img_logf(img, "root digest %s does not match the pinned %s", got, want);
	return SQK_ECORRUPT;
}

/* What follows the integrity data in the file (a signature block, an appended dm-verity area):
 * file_size becomes the integrity data's end. Damage there fails a verified open; with
 * no_verify the whole file is the image's, as with no integrity data. */
int verify_locate(struct sqk_image *img)
{
	char why[256];
	int rc;

	img->raw_size = img->file_size;
	if (!img->at_zero)
		return 0;
	rc = integ_locate(img->io, img->file_size, &img->where, why, sizeof(why));
	if (rc == 0) {
		img->file_size = img->where.end;
		return 0;
	}
	memset(&img->where, 0, sizeof(img->where));
	img->where.end = img->file_size;
	if (!img->verify_req && rc == SQK_ECORRUPT)
		return 0;
	if (rc == SQK_ECORRUPT)
		img_logf(img, "%s", why);
	return rc;
}

/* opts.require_integrity, or trusted keys: an image without integrity data is refused (with
 * no_verify, its trailer must still be there and authentic). */
int verify_require(struct sqk_image *img)
{
	struct sqk_integ_trailer t;

	if (img->integ_on || img->remote_verified || sqk_image_integrity(img, &t) == 0)
		return 0;
	img_logf(img, "the image has no integrity data, and it is required (--require-integrity"
		 " or a trusted key)");
	return SQK_ENOINTEG;
}

/* Reads [pos, pos + len) into buf (caller's) at open, every chunk it touches checked with
 * SHA-256 (and remembered as verified) without the mismatch log: a failure is the caller's to
 * word. Bounded by the covered bytes. */
static int read_sha_checked(struct sqk_image *img, uint64_t pos, void *buf, size_t len,
			    uint64_t *bad)
{
	uint64_t cs = img->integ.t.chunk_size, k0 = pos / cs, k1 = (pos + len - 1) / cs, s, e, x;
	uint8_t *span;
	int rc;

	integ_chunk_range(&img->integ, k0, &s, &x); /* from the first chunk's start */
	integ_chunk_range(&img->integ, k1, &x, &e); /* to the last one's end */
	span = malloc((size_t)(e - s));
	if (!span)
		return SQK_ENOMEM;
	rc = img_read_raw(img, s, span, (size_t)(e - s));
	for (uint64_t k = k0; !rc && k <= k1; k++) {
		uint64_t cs0, ce0;

		if (bit_get(img->vbits, k))
			continue; /* the footer's chunk, or the superblock's */
		integ_chunk_range(&img->integ, k, &cs0, &ce0);
		atomic_fetch_add_explicit(&img->st.hashed, 1, memory_order_relaxed);
		atomic_fetch_add_explicit(&img->st.sha256, 1, memory_order_relaxed);
		rc = integ_check_chunk(&img->integ, k, span + (cs0 - s), (size_t)(ce0 - cs0));
		if (rc == SQK_ENOENT)
			rc = SQK_ECORRUPT; /* its digest group is wrong */
		if (rc) {
			*bad = k;
			break;
		}
		bit_set(img->vclaim, k);
		bit_set(img->vbits, k);
	}
	if (!rc)
		memcpy(buf, span + (pos - s), len);
	free(span);
	return rc;
}

/* The fast block ending the covered bytes is not used: says why (reads stay fully verified,
 * with SHA-256); why NULL: chunk failed its digest, or its digest group failed its group digest
 * (named, as log_mismatch does). */
static void fast_skip(struct sqk_image *img, const char *why, uint64_t chunk)
{
	unsigned long long end = (unsigned long long)img->integ.t.covered, k = chunk;
	unsigned long long g = integ_group_of(&img->integ, chunk);
	char what[112];

	if (!why && !integ_group_loaded(&img->integ, g))
		snprintf(what, sizeof(what),
			 "chunk %llu cannot be verified: its digest group %llu is "
			 "damaged",
			 k, g);
	else if (!why)
		snprintf(what, sizeof(what), "chunk %llu does not match its digest", k);
	img_logf(img, "fast checksum block ending at image offset %llu not used (%s): reads are "
		 "checked with SHA-256", end, why ? why : what);
}

/* Reads and decodes the block whose footer said [at, at + len). */
static int fast_load_block(struct sqk_image *img, uint64_t at, uint64_t len, uint64_t min_start)
{
	uint64_t bad = 0;
	uint8_t *blk = len <= SIZE_MAX ? malloc((size_t)len) : NULL;
	int rc = blk ? read_sha_checked(img, at, blk, (size_t)len, &bad) : SQK_ENOMEM;

	if (rc == SQK_ECORRUPT)
		fast_skip(img, NULL, bad);
	if (!rc) {
		rc = integ_fast_decode(blk, (size_t)len, &img->integ.t, min_start, &img->fast);
		if (rc == SQK_ECORRUPT)
			fast_skip(img, "it is not valid", 0);
	}
	free(blk);
	if (rc) {
		integ_fast_free(&img->fast);
		return rc == SQK_EIO || rc == SQK_ENOMEM ? rc : 0;
	}
	img->fast_on = true;
	return 0;
}

/* After the superblock, unless a root digest is pinned (then every read is checked with
 * SHA-256: XXH3-64 is no defence against a deliberate change): loads the fast checksum block
 * that ends the covered bytes, if any. The block is read through SHA-256 checks; a block that
 * fails them or does not decode is not used (logged: reads stay verified, with SHA-256, as for
 * an image without one); a block of another version or algorithm is skipped silently. Fails
 * only for an I/O error or no memory. */
int verify_fast(struct sqk_image *img, bool pinned)
{
	const struct sqk_integ_trailer *t = &img->integ.t;
	uint64_t padded =
	    (img->sb.bytes_used + SQK_FAST_ALIGN - 1) / SQK_FAST_ALIGN * SQK_FAST_ALIGN;
	uint8_t foot[SQK_FAST_FOOTER_SIZE];
	uint64_t at, len, n, bad = 0;
	int rc;

	if (!img->integ_on || pinned || t->covered < padded + SQK_FAST_ALIGN)
		return 0;
	rc = read_sha_checked(img, t->covered - sizeof(foot), foot, sizeof(foot), &bad);
	if (rc) {
		if (rc == SQK_ECORRUPT)
			fast_skip(img, NULL, bad);
		return rc == SQK_EIO || rc == SQK_ENOMEM ? rc : 0;
	}
	rc = integ_fast_footer(foot, t, padded, &at, &len, &n);
	if (rc == SQK_ECORRUPT)
		fast_skip(img, "its footer is not valid", 0);
	if (rc)
		return 0;
	return fast_load_block(img, at, len, padded);
}

/* Borrows img; fills the caller's *nchunks and *used. */
int sqk_image_fast_checksums(struct sqk_image *img, uint64_t *nchunks, bool *used)
{
	struct sqk_integ_trailer t;
	struct integ_fast f = { 0 };
	uint8_t foot[SQK_FAST_FOOTER_SIZE];
	uint64_t padded, at, len, n;
	uint8_t *blk;
	int rc;

	*nchunks = 0;
	*used = img->fast_on;
	if (img->fast_on) {
		*nchunks = img->fast.n;
		return 0;
	}
	rc = sqk_image_integrity(img, &t);
	if (rc)
		return rc;
	padded = (img->sb.bytes_used + SQK_FAST_ALIGN - 1) / SQK_FAST_ALIGN * SQK_FAST_ALIGN;
	if (t.covered < padded + SQK_FAST_ALIGN || t.covered > img->file_size)
		return SQK_ENOENT;
	rc = img_read(img, t.covered - sizeof(foot), foot, sizeof(foot));
	if (!rc)
		rc = integ_fast_footer(foot, &t, padded, &at, &len, &n);
	if (rc)
		return rc;
	blk = len <= SIZE_MAX ? malloc((size_t)len) : NULL;
	rc = blk ? img_read(img, at, blk, (size_t)len) : SQK_ENOMEM;
	if (!rc)
		rc = integ_fast_decode(blk, (size_t)len, &t, padded, &f);
	if (!rc)
		*nchunks = f.n;
	integ_fast_free(&f);
	free(blk);
	return rc;
}

/* Frees the integrity state of img. */
void verify_free(struct sqk_image *img)
{
	integ_fast_free(&img->fast);
	img->fast_on = false;
	integ_free(&img->integ);
	free(img->vbits);
	free(img->vclaim);
	free(img->vbad);
	img->vbits = NULL;
	img->vclaim = NULL;
	img->vbad = NULL;
}

/* Keeps chunk k, [s, e), as the latest mismatch (the oldest kept is dropped when full). */
static void keep_mismatch(struct sqk_image *img, uint64_t k, uint64_t s, uint64_t e, uint32_t ino)
{
	struct sqk_mismatch m = { .start = s, .end = e, .chunk = k, .ino = ino };

	pthread_mutex_lock(&img->bad_mu);
	if (img->nbad == SQK_BAD_KEPT) {
		memmove(img->bad, img->bad + 1, (SQK_BAD_KEPT - 1) * sizeof(img->bad[0]));
		img->nbad--;
	}
	img->bad[img->nbad++] = m;
	pthread_mutex_unlock(&img->bad_mu);
}

/* A failed check of chunk k, [s, e): logged the first time (unless the caller reports it),
 * kept for sqk_image_mismatch when its bytes did not match. */
static void log_mismatch(struct sqk_image *img, uint64_t k, uint64_t s, uint64_t e, uint32_t ino,
			 int rc)
{
	char what[48] = "";

	if (rc != SQK_ECORRUPT) { /* an I/O error reading the rest of the chunk: not a verdict */
		img_logf(img, "integrity check of image bytes %llu..%llu (chunk %llu) failed: %s",
			 (unsigned long long)s, (unsigned long long)e - 1, (unsigned long long)k,
			 sqk_strerror(rc));
		return;
	}
	keep_mismatch(img, k, s, e, ino);
	if (bit_set(img->vbad, k) || img->quiet_mismatch)
		return;
	if (ino)
		snprintf(what, sizeof(what), " (read of inode %u)", ino);
	if (!integ_group_loaded(&img->integ, integ_group_of(&img->integ, k))) {
		img_logf(img,
			 "integrity check failed at image offset %llu: bytes %llu..%llu (chunk "
			 "%llu) cannot be verified: their digest group %llu is damaged%s",
			 (unsigned long long)s, (unsigned long long)s, (unsigned long long)e - 1,
			 (unsigned long long)k,
			 (unsigned long long)integ_group_of(&img->integ, k), what);
		return;
	}
	img_logf(img, "integrity check failed at image offset %llu: bytes %llu..%llu (chunk %llu) "
		 "do not match their digest%s", (unsigned long long)s, (unsigned long long)s,
		 (unsigned long long)e - 1, (unsigned long long)k, what);
}

/* Checks chunk k, [s, e), of which buf holds [bpos, bpos + blen): the rest is read. */
static int check_partial(struct sqk_image *img, uint64_t k, uint64_t s, uint64_t e, uint64_t bpos,
			 const uint8_t *buf, size_t blen)
{
	uint64_t lo = s > bpos ? s : bpos, hi = e < bpos + blen ? e : bpos + blen;
	size_t cap;
	uint8_t *tmp = rabufs_get(&img->rabufs, (size_t)(e - s), &cap);
	int rc = tmp ? 0 : SQK_ENOMEM;

	if (lo > hi)
		lo = hi = s; /* no overlap: read it all */
	if (!rc && s < lo)
		rc = sqk_io_read_at(img->io, s, tmp, (size_t)(lo - s));
	if (!rc && hi < e)
		rc = sqk_io_read_at(img->io, hi, tmp + (hi - s), (size_t)(e - hi));
	if (!rc) {
		memcpy(tmp + (lo - s), buf + (lo - bpos), (size_t)(hi - lo));
		rc = chunk_check(img, k, tmp, (size_t)(e - s));
	}
	rabufs_put(&img->rabufs, tmp, cap);
	return rc;
}

/* Hashes chunk k (claimed by the caller) and records the verdict. */
static int check_one(struct sqk_image *img, uint64_t k, uint64_t bpos, const uint8_t *buf,
		     size_t blen, uint32_t ino)
{
	uint64_t s, e;
	int rc;

	integ_chunk_range(&img->integ, k, &s, &e);
	atomic_fetch_add_explicit(&img->st.hashed, 1, memory_order_relaxed);
	if (s >= bpos && e <= bpos + blen)
		rc = chunk_check(img, k, buf + (s - bpos), (size_t)(e - s));
	else
		rc = check_partial(img, k, s, e, bpos, buf, blen);
	if (rc) {
		bit_clear(img->vclaim, k);
		chunk_done(img);
		log_mismatch(img, k, s, e, ino, rc);
		return rc;
	}
	bit_set(img->vbits, k);
	chunk_done(img);
	return 0;
}

/* Verifies every chunk overlapping [pos, pos + len); buf holds the bytes [bpos, bpos + blen)
 * (a superset or not: missing parts of a chunk are read). ino names the inode in messages
 * (0 = none). Returns 0 or SQK_ECORRUPT (logged). */
int verify_span(struct sqk_image *img, uint64_t pos, size_t len, uint64_t bpos,
		    const void *buf, size_t blen, uint32_t ino)
{
	uint64_t cs = img->integ.t.chunk_size, k, last;

	if (!img->integ_on || len == 0)
		return 0;
	if (len > img->integ.t.covered || pos > img->integ.t.covered - len) { /* no wrap */
		img_logf(img, "read of %zu bytes at offset %llu is outside the checksummed range",
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
int verify_range(struct sqk_image *img, uint64_t pos, const void *buf, size_t len,
		     uint32_t ino)
{
	return verify_span(img, pos, len, pos, buf, len, ino);
}

/* Borrows img. */
bool sqk_image_verified(const struct sqk_image *img)
{
	return img && (img->integ_on || img->remote_verified);
}

/* Fills the caller's *out; loads and authenticates the trailer for the call when reads are not
 * verified (lazily: a digest tree's groups of chunk digests are not read, which a remote image
 * would fetch). */
int sqk_image_integrity(struct sqk_image *img, struct sqk_integ_trailer *out)
{
	struct integ ig;
	int rc;

	if (img->integ_on) {
		*out = img->integ.t;
		return 0;
	}
	if (!img->at_zero)
		return SQK_ENOENT;
	rc = integ_load_lazy(img->io, img->file_size, &ig);
	if (!rc)
		*out = ig.t;
	integ_free(&ig);
	if (rc == SQK_ENOENT && no_trailer_rule(img, false))
		rc = SQK_ECORRUPT; /* cut, not absent */
	return rc;
}

/* Borrows img; fills the caller's *count. */
int sqk_image_damaged_groups(struct sqk_image *img, uint64_t *count)
{
	struct integ ig;
	int rc;

	if (!img || !count)
		return SQK_EINVAL;
	*count = 0;
	if (img->integ_on) {
		*count = img->groups_damaged;
		return 0;
	}
	/* opts.no_verify: checked now, unless the image is remote (its groups are fetched when a
	 * read needs them, not all at once here) */
	if (!img->at_zero || sqk_io_is_remote(img->io))
		return SQK_ENOENT;
	rc = integ_load_lazy(img->io, img->file_size, &ig);
	if (!rc)
		rc = integ_accept_groups(img->io, &ig, count, NULL, NULL);
	integ_free(&ig);
	return rc;
}

/* Borrows img; fills the caller's *out. */
int sqk_image_mismatch(struct sqk_image *img, uint32_t ino, struct sqk_mismatch *out)
{
	unsigned i, n = 0;
	int rc = SQK_ENOENT;

	if (!img || !out)
		return SQK_EINVAL;
	pthread_mutex_lock(&img->bad_mu);
	for (i = img->nbad; i-- > 0;) {
		if (!ino || img->bad[i].ino == ino || img->bad[i].ino == 0) {
			*out = img->bad[i];
			rc = 0;
			break;
		}
	}
	/* forget every record of it: a readahead worker and the read it served both kept one */
	for (i = 0; rc == 0 && i < img->nbad; i++)
		if (img->bad[i].chunk != out->chunk || img->bad[i].ino != out->ino)
			img->bad[n++] = img->bad[i];
	if (rc == 0)
		img->nbad = n;
	pthread_mutex_unlock(&img->bad_mu);
	return rc;
}
