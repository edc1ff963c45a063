/* SPDX-License-Identifier: BSD-2-Clause */
/* The checker's integrity pass: loads the trailer and digest array, checks every chunk digest
 * on worker threads with large reads, merges adjacent bad chunks into ranges (mapped to regions
 * later), compares the root digest with the one the caller expects, checks that the chunks
 * cover the whole image, and notices a file that has bytes past its image but no trailer (a
 * truncated integrity area). The fast checksum block that ends the covered bytes, if any, is
 * decoded and each of its XXH3-64 entries compared with its chunk: a wrong one (of a chunk
 * that matches its SHA-256 digest) is a finding naming the chunk. A digest tree (version 2) is
 * loaded lazily: the root authenticates the group digests, then each group of chunk digests is
 * checked against its group digest; a group that does not match is a finding naming the group,
 * its chunks and the image bytes they cover (those chunks are then not checked). */
#include <stdlib.h>
#include <string.h>

#include "check_internal.h"
#include "common/bytes.h"
#include "common/endian.h"
#include "common/hint.h"
#include "common/integrity.h"
#include "common/verity.h"
#include "common/sign.h"
#include "common/format.h"
#include "common/grow.h"

#define READ_SPAN (8u << 20)

struct integ_work {
	struct chk *c;
	const struct integ *ig;
	atomic_uint_fast64_t next;
	uint64_t per;             /* chunks per claim */
	uint8_t *bad;             /* by chunk */
	const struct integ_fast *fast; /* the fast checksums (n 0 when none) */
	uint8_t *fbad;            /* by chunk: its fast checksum is wrong */
};

/* Checks chunks [k0, k1) read with one pread. */
static int check_span(struct integ_work *w, uint8_t *buf, uint64_t k0, uint64_t k1)
{
	uint64_t s0, e0, s, e;
	int rc;

	integ_chunk_range(w->ig, k0, &s0, &e0);
	integ_chunk_range(w->ig, k1 - 1, &s, &e);
	rc = sqk_io_read_at(w->c->io, s0, buf, (size_t)(e - s0));
	if (rc)
		return rc;
	for (uint64_t k = k0; k < k1; k++) {
		integ_chunk_range(w->ig, k, &s, &e);
		if (!integ_group_loaded(w->ig, integ_group_of(w->ig, k)))
			continue; /* its group's digests are wrong: reported (check_groups) */
		if (integ_check_chunk(w->ig, k, buf + (s - s0), (size_t)(e - s)))
			w->bad[k] = 1;
		else if (k < w->fast->n && integ_fast_check_chunk(
					       w->ig, w->fast, k, buf + (s - s0), (size_t)(e - s)))
			w->fbad[k] = 1;
	}
	return 0;
}

static int integ_worker(void *arg)
{
	struct integ_work *w = arg;
	uint64_t n = w->ig->t.nchunks;
	uint8_t *buf = malloc(w->per * w->ig->t.chunk_size);
	int rc = buf ? 0 : SQK_ENOMEM;

	while (rc == 0 && !atomic_load(&w->c->stop)) {
		uint64_t k0 = atomic_fetch_add(&w->next, w->per);

		if (k0 >= n)
			break;
		rc = check_span(w, buf, k0, k0 + w->per < n ? k0 + w->per : n);
	}
	free(buf);
	return rc;
}

/* Collects the bad chunks as merged ranges in c->bad. */
static int merge_bad(struct chk *c, const struct integ *ig, const uint8_t *bad)
{
	for (uint64_t k = 0; k < ig->t.nchunks; k++) {
		uint64_t s, e, s2, e2, j = k;

		if (!bad[k])
			continue;
		c->res->chunks_bad++;
		while (j + 1 < ig->t.nchunks && bad[j + 1]) {
			j++;
			c->res->chunks_bad++;
		}
		integ_chunk_range(ig, k, &s, &e);
		integ_chunk_range(ig, j, &s2, &e2);
		if (mem_grow(&c->bad, &c->capbad, c->nbad + 1, 2 * sizeof(*c->bad), 0))
			return SQK_ENOMEM;
		c->bad[2 * c->nbad] = s;
		c->bad[2 * c->nbad + 1] = e2;
		c->nbad++;
		k = j;
	}
	return 0;
}

/* One finding per chunk whose fast checksum is wrong, at its entry in the block; none when a
 * chunk of the block itself fails its digest (its entries are then not the builder's, and that
 * chunk is the finding). */
static void report_fast_bad(struct chk *c, const struct integ *ig,
			    const struct integ_fast *f, const uint8_t *bad, const uint8_t *fbad)
{
	for (uint64_t k = f->at / ig->t.chunk_size; f->n && k < ig->t.nchunks; k++)
		if (bad[k])
			return;
	for (uint64_t k = 0; k < f->n; k++) {
		uint64_t s, e;

		if (!fbad[k])
			continue;
		integ_chunk_range(ig, k, &s, &e);
		chk_report(c, false, f->at + 8 * k, f->at + 8 * k + 8, "fast checksums",
			   "fast checksum of chunk %llu (bytes %llu..%llu) does not match the "
			   "chunk, "
			   "which matches its SHA-256 digest", (unsigned long long)k,
			   (unsigned long long)s, (unsigned long long)e - 1);
	}
}

static int check_chunks(struct chk *c, const struct integ *ig, const struct integ_fast *f)
{
	struct integ_work w = { .c = c, .ig = ig, .fast = f };
	int rc;

	w.per = READ_SPAN / ig->t.chunk_size;
	if (w.per == 0)
		w.per = 1;
	atomic_init(&w.next, 0);
	w.bad = calloc(ig->t.nchunks ? ig->t.nchunks : 1, 1);
	w.fbad = calloc(ig->t.nchunks ? ig->t.nchunks : 1, 1);
	if (!w.bad || !w.fbad) {
		free(w.bad);
		free(w.fbad);
		return SQK_ENOMEM;
	}
	rc = chk_parallel(c->threads, integ_worker, &w);
	c->res->chunks = 0; /* checked: not those of a damaged digest group */
	for (uint64_t g = 0; g < (ig->lazy ? ig->t.ngroups : 1); g++) {
		uint64_t k0, k1, s, e;

		integ_group_range(ig, g, &k0, &k1, &s, &e);
		if (integ_group_loaded(ig, g))
			c->res->chunks += k1 - k0;
	}
	if (rc == 0)
		rc = merge_bad(c, ig, w.bad);
	if (rc == 0)
		report_fast_bad(c, ig, f, w.bad, w.fbad);
	free(w.bad);
	free(w.fbad);
	return rc;
}

/* The integrity area of a file whose digests do not verify: from the trailer if it decodes. */
static void report_corrupt_integ(struct chk *c)
{
	uint8_t raw[SQK_INTEG_TRAILER_SIZE];
	struct sqk_integ_trailer t;
	uint64_t s = c->file_size >= sizeof(raw) ? c->file_size - sizeof(raw) : 0;
	bool tree = false;

	if (c->file_size >= sizeof(raw) && sqk_io_read_at(c->io, s, raw, sizeof(raw)) == 0 &&
	    integ_trailer_decode(raw, &t) == 0 && integ_lazy_start(&t) < c->file_size) {
		s = integ_lazy_start(&t);
		tree = t.version == SQK_INTEG_VERSION_TREE;
	}
	chk_report(c, false, s, c->file_size, "integrity data",
		   "integrity trailer or %s does not match its root digest",
		   tree ? "group digest array" : "digest array");
}

/* Without a trailer: bytes after the padded image, unless zero, mean the integrity data was
 * cut off or damaged. */
static void check_no_trailer(struct chk *c)
{
	uint8_t raw[SQK_SUPER_SIZE];
	struct sqk_super sb;
	uint64_t end;

	if (c->o->root_hash)
		chk_report(c, false, 0, 0, "integrity data",
			   "--root-hash given but the image has no integrity data");
	if (c->offset > c->file_size || c->file_size - c->offset < sizeof(raw) ||
	    sqk_io_read_at(c->io, c->offset, raw, sizeof(raw)))
		return;
	super_decode(raw, &sb);
	if (sb.magic != SQK_MAGIC || sb.bytes_used > c->file_size - c->offset)
		return;
	if (!integ_cut(c->io, c->file_size, c->offset, sb.bytes_used, &end))
		return;
	c->res->integrity_truncated = true; /* cut or damaged, not absent */
	chk_report(c, false, end, c->file_size, "integrity data",
		   "integrity data truncated: %llu bytes follow the image but do not end with a "
		   "whole integrity trailer", (unsigned long long)(c->file_size - end));
}

/* The checksummed range must hold the whole image (up to bytes_used), else verified opens fail:
 * its last bytes would double as digests. */
static void check_covers(struct chk *c, const struct integ *ig)
{
	uint8_t raw[SQK_SUPER_SIZE];
	struct sqk_super sb;

	if (ig->t.covered < c->offset) {
		chk_report(c, false, 0, ig->t.covered, "integrity data",
			   "integrity data does not cover the image");
		return;
	}
	if (c->offset > c->file_size || c->file_size - c->offset < sizeof(raw) ||
	    sqk_io_read_at(c->io, c->offset, raw, sizeof(raw)))
		return;
	super_decode(raw, &sb);
	if (sb.magic == SQK_MAGIC && sb.bytes_used > ig->t.covered - c->offset)
		chk_report(c, false, ig->t.covered, c->offset + sb.bytes_used, "integrity data",
			   "integrity data covers %llu bytes, the image ends at %llu",
			   (unsigned long long)ig->t.covered,
			   (unsigned long long)(c->offset + sb.bytes_used));
}

/* Bytes between the padded image and the digests (inside `covered`) are a prefetch hint
 * (common/hint.h; sqk mkimage --order): labelled as such when they decode, else reported. */
/* The padded end of the image (file offset), 0 when there is no superblock to say. */
static uint64_t padded_end(struct chk *c)
{
	uint8_t raw[SQK_SUPER_SIZE];
	struct sqk_super sb;

	if (c->offset > c->file_size || c->file_size - c->offset < sizeof(raw) ||
	    sqk_io_read_at(c->io, c->offset, raw, sizeof(raw)))
		return 0;
	super_decode(raw, &sb);
	if (sb.magic != SQK_MAGIC)
		return 0;
	return (c->offset + sb.bytes_used + SQK_PAD - 1) / SQK_PAD * SQK_PAD;
}

/* The fast checksum block that ends the covered bytes (integrity.h), into *f (n 0 when there is
 * none or it is not valid: a finding). Labelled; sets *start to where it begins (covered
 * without one), so the hint check takes what lies before it. */
static int load_fast(struct chk *c, const struct integ *ig, struct integ_fast *f,
		     uint64_t *start)
{
	uint64_t end = padded_end(c), at, len, n;
	uint8_t foot[SQK_FAST_FOOTER_SIZE];
	uint8_t *blk;
	uint32_t l;
	int rc;

	memset(f, 0, sizeof(*f));
	*start = ig->t.covered;
	if (!end || ig->t.covered < end + SQK_FAST_ALIGN ||
	    sqk_io_read_at(c->io, ig->t.covered - sizeof(foot), foot, sizeof(foot)))
		return 0;
	rc = integ_fast_footer(foot, &ig->t, end, &at, &len, &n);
	if (rc == SQK_ENOENT) {
		/* a footer that is right but for its magic: the block, damaged */
		memcpy(foot + 24, SQK_FAST_MAGIC, 8);
		if (integ_fast_footer(foot, &ig->t, end, &at, &len, &n))
			return 0;
		*start = at;
		rc = SQK_ECORRUPT;
	}
	if (rc == 0 || rc == SQK_EUNSUPPORTED)
		*start = at;
	if (rc == 0) {
		blk = len <= SIZE_MAX ? malloc((size_t)len) : NULL;
		if (!blk)
			return SQK_ENOMEM;
		rc = sqk_io_read_at(c->io, at, blk, (size_t)len);
		if (!rc)
			rc = integ_fast_decode(blk, (size_t)len, &ig->t, end, f);
		free(blk);
		if (rc == SQK_ENOMEM)
			return rc;
	}
	if (rc && rc != SQK_EUNSUPPORTED) {
		integ_fast_free(f);
		chk_report(c, false, ig->t.covered - sizeof(foot), ig->t.covered, "fast checksums",
			   "the fast checksum block ending at %llu is not valid (%s)",
			   (unsigned long long)ig->t.covered, sqk_strerror(rc));
		if (*start == ig->t.covered)
			return 0;
	}
	rc = chk_label(c, "fast checksums", &l);
	return rc ? rc : chk_ival_add(c, *start - c->offset, ig->t.covered - c->offset, l);
}

static int check_hint(struct chk *c, const struct integ *ig, uint64_t hint_end)
{
	uint8_t raw[SQK_SUPER_SIZE];
	struct sqk_super sb;
	struct sqk_hint_range r[4];
	size_t n = 0;
	uint32_t l;

	if (c->offset > c->file_size || c->file_size - c->offset < sizeof(raw) ||
	    sqk_io_read_at(c->io, c->offset, raw, sizeof(raw)))
		return 0;
	super_decode(raw, &sb);
	uint64_t end = (c->offset + sb.bytes_used + SQK_PAD - 1) / SQK_PAD * SQK_PAD;
	if (sb.magic != SQK_MAGIC || hint_end <= end || hint_end - end > SQK_HINT_MAX_LEN)
		return 0;
	size_t len = (size_t)(hint_end - end);
	uint8_t *blk = malloc(len);
	if (!blk)
		return SQK_ENOMEM;
	int rc = sqk_io_read_at(c->io, end, blk, len);
	if (!rc)
		rc = hint_decode(blk, len, sb.bytes_used, r, 4, &n);
	free(blk);
	if (rc && rc != SQK_ETOOBIG) {
		chk_report(c, false, end, hint_end, "prefetch hint",
			   "%zu bytes between the image and the %s are not a valid prefetch hint "
			   "(%s)",
			   len, hint_end < ig->t.covered ? "fast checksums" : "integrity digests",
			   sqk_strerror(rc));
		return 0;
	}
	rc = chk_label(c, "prefetch hint", &l);
	return rc ? rc : chk_ival_add(c, end - c->offset, hint_end - c->offset, l);
}

/* A digest tree: each group of chunk digests against its group digest (which the root has
 * authenticated). A wrong group is a finding: the group, its chunks and the image bytes they
 * cover, which cannot be verified. */
static void report_group(void *ctx, const struct integ *ig, uint64_t g)
{
	uint64_t k0, k1, s, e, is, ie, x;

	integ_group_range(ig, g, &k0, &k1, &s, &e);
	integ_chunk_range(ig, k0, &is, &x);
	integ_chunk_range(ig, k1 - 1, &x, &ie);
	chk_report(ctx, false, s, e, "integrity data",
		   "digest group %llu (chunks %llu..%llu, image bytes %llu..%llu; its digests "
		   "at %llu..%llu) does not match its group digest: those bytes cannot be "
		   "verified", (unsigned long long)g, (unsigned long long)k0,
		   (unsigned long long)(k1 - 1), (unsigned long long)is,
		   (unsigned long long)(ie - 1), (unsigned long long)s,
		   (unsigned long long)(e - 1));
}

static int check_groups(struct chk *c, struct integ *ig)
{
	uint64_t nbad;

	return integ_accept_groups(c->io, ig, &nbad, report_group, c);
}

/* A signature block or an appended dm-verity area after the integrity data: the check reads
 * [0, their start) as the image's file; damage there is a finding. */
static int locate(struct chk *c)
{
	struct integ_where w;
	char why[256];
	int rc;

	if (c->offset)
		return 0;
	rc = integ_locate(c->io, c->file_size, &w, why, sizeof(why));
	if (rc == SQK_ECORRUPT) {
		c->res->has_integrity = true;
		chk_report(c, false, c->file_size > SQK_SIG_FOOTER_SIZE ?
			   c->file_size - SQK_SIG_FOOTER_SIZE : 0, c->file_size,
			   "signature block", "%s", why);
		return 0;
	}
	if (rc == 0)
		c->file_size = w.end;
	return rc;
}

int chk_integrity(struct chk *c, struct integ *ig, bool *loaded)
{
	int rc = locate(c);

	if (rc)
		return rc;
	rc = integ_load_lazy(c->io, c->file_size, ig);

	/* a file grown with zeros after its integrity data (as verified reads take it) */
	if (rc == SQK_ENOENT && c->offset == 0) {
		uint64_t end = integ_grown_end(c->io, c->file_size);

		if (end < c->file_size) {
			c->file_size = end;
			rc = integ_load_lazy(c->io, c->file_size, ig);
		}
	}
	if (rc == SQK_ENOENT) {
		check_no_trailer(c);
		return 0;
	}
	if (rc == SQK_ECORRUPT || rc == SQK_EBOUNDS) {
		c->res->has_integrity = true;
		report_corrupt_integ(c);
		return 0;
	}
	if (rc)
		return rc;
	*loaded = true;
	c->res->has_integrity = true;
	if (c->o->root_hash) {
		c->res->root_hash_ok =
		    memcmp(c->o->root_hash, ig->t.root, SQK_INTEG_DIGEST_SIZE) == 0;
		if (!c->res->root_hash_ok)
			chk_report(c, false, c->file_size - SQK_INTEG_TRAILER_SIZE, c->file_size,
				   "integrity data", "root digest differs from --root-hash");
	}
	struct integ_fast fast;
	uint64_t hint_end;

	rc = check_groups(c, ig);
	if (rc == 0)
		rc = load_fast(c, ig, &fast, &hint_end);
	else
		memset(&fast, 0, sizeof(fast));
	if (rc == 0)
		rc = check_chunks(c, ig, &fast);
	integ_fast_free(&fast);
	if (rc == 0)
		check_covers(c, ig);
	if (rc == 0)
		rc = check_hint(c, ig, hint_end);
	if (rc == 0 && ig->t.covered >= c->offset && ig->t.covered < c->file_size) {
		uint32_t l;

		rc = chk_label(c, "integrity data", &l);
		if (rc == 0)
			rc =
			    chk_ival_add(c, ig->t.covered - c->offset, c->file_size - c->offset, l);
	}
	return rc;
}
