/* SPDX-License-Identifier: BSD-2-Clause */
/* Where an image ends when its object is larger than it (a block device, a file grown with
 * zeros): found forward from the superblock's bytes_used through the hint, the fast checksum
 * block and the integrity data (integrity.h), since a trailer is only found from the end of
 * the object otherwise. */
#include <stdlib.h>
#include <string.h>

#include "bytes.h"
#include "endian.h"
#include "format.h"
#include "hint.h"
#include "integrity.h"
#include "sign.h"
#include "verity.h"
#include "sqk/io.h"

static uint64_t round_4k(uint64_t n)
{
	return (n + 4095) & ~(uint64_t)4095;
}

/* The length of the prefetch hint block that ends an image padded to `padded` bytes, 0 if
 * there is none (hint.h: its footer ends the block, which is 4 KiB .. 64 KiB). */
static uint64_t extent_hint_len(struct sqk_io *io, uint64_t padded, uint64_t dev)
{
	uint8_t footer[SQK_HINT_FOOTER_SIZE];
	uint32_t nranges;
	size_t len;

	for (uint64_t h = SQK_HINT_ALIGN; h <= SQK_HINT_MAX_LEN && padded + h <= dev;
	     h += SQK_HINT_ALIGN)
		if (!sqk_io_read_at(io, padded + h - sizeof(footer), footer, sizeof(footer)) &&
		    !hint_footer(footer, h, &nranges, &len) && len == h)
			return h;
	return 0;
}

/* The length of the fast checksum block that starts at `at` (after the image and its hint), 0
 * if there is none (integrity.h: n = at / chunk_size entries for one of the chunk sizes, its
 * footer ending the block). */
static uint64_t extent_fast_len(struct sqk_io *io, uint64_t at, uint64_t dev)
{
	uint8_t footer[SQK_FAST_FOOTER_SIZE];

	for (uint64_t c = SQK_INTEG_CHUNK_MIN; c <= SQK_INTEG_CHUNK_MAX; c *= 2) {
		uint64_t n = at / c, len = integ_fast_len(n);

		if (n && len && at + len <= dev &&
		    !sqk_io_read_at(io, at + len - sizeof(footer), footer, sizeof(footer)) &&
		    !memcmp(footer + 24, SQK_FAST_MAGIC, 8) && get_le64(footer) == n &&
		    get_le64(footer + 8) == len)
			return len;
	}
	return 0;
}

/* Whether the first digest after covered is that of the image's first chunk (of c bytes): a
 * trailer left by an older, different image on the device is not taken for this one's. */
static bool extent_chunk0_ok(struct sqk_io *io, uint64_t covered, uint64_t c)
{
	size_t len = covered < c ? (size_t)covered : (size_t)c;
	uint8_t want[SQK_INTEG_DIGEST_SIZE], got[SQK_INTEG_DIGEST_SIZE];
	uint8_t *chunk = malloc(len);
	bool ok = chunk && !sqk_io_read_at(io, covered, want, sizeof(want)) &&
		  !sqk_io_read_at(io, 0, chunk, len);

	if (ok)
		hash_sha256(chunk, len, got);
	free(chunk);
	return ok && !memcmp(want, got, sizeof(got));
}

/* Whether a trailer for an image covering `covered` bytes with chunks of c bytes ends at `end`
 * (the integrity data it describes ends there too: integ_end). */
static bool extent_trailer_at(struct sqk_io *io, uint64_t covered, uint64_t c, uint64_t end,
			      uint64_t dev)
{
	uint8_t raw[SQK_INTEG_TRAILER_SIZE];
	struct sqk_integ_trailer t;

	return end && end <= dev && !sqk_io_read_at(io, end - sizeof(raw), raw, sizeof(raw)) &&
	       !integ_trailer_decode(raw, &t) && t.chunk_size == c && t.covered == covered &&
	       integ_end(&t) == end && extent_chunk0_ok(io, covered, c);
}

/* Where the integrity data of an image covering `covered` bytes ends, if a trailer for it is
 * there (integrity.h: digests of one of the chunk sizes, in version 2 group digests of one of
 * the group sizes, zeros to 4 KiB, the trailer). */
static uint64_t extent_integ_end(struct sqk_io *io, uint64_t covered, uint64_t dev)
{
	for (uint64_t c = SQK_INTEG_CHUNK_MIN; c <= SQK_INTEG_CHUNK_MAX; c *= 2) {
		struct sqk_integ_trailer t = { .version = SQK_INTEG_VERSION,
					       .chunk_size = (uint32_t)c, .covered = covered,
					       .hashes_at = covered,
					       .nchunks = (covered + c - 1) / c };
		uint64_t end = integ_end(&t), last = 0;

		if (extent_trailer_at(io, covered, c, end, dev))
			return end;
		t.version = SQK_INTEG_VERSION_TREE;
		t.groups_at = covered + t.nchunks * SQK_INTEG_DIGEST_SIZE;
		for (uint32_t g = SQK_INTEG_GROUP_MIN; g <= SQK_INTEG_GROUP_MAX; g *= 2) {
			t.group_chunks = g;
			t.ngroups = (t.nchunks + g - 1) / g;
			end = integ_end(&t);
			if (end != last && extent_trailer_at(io, covered, c, end, dev))
				return end;
			last = end;
		}
	}
	return 0;
}

/* Whether chunk digests (of one of the chunk sizes) start at covered without a trailer for
 * them: integrity data cut short (a device over a truncated file). */
static bool extent_digests_follow(struct sqk_io *io, uint64_t covered, uint64_t dev)
{
	for (uint64_t c = SQK_INTEG_CHUNK_MIN; c <= SQK_INTEG_CHUNK_MAX; c *= 2)
		if (covered + SQK_INTEG_DIGEST_SIZE <= dev && extent_chunk0_ok(io, covered, c))
			return true;
	return false;
}

/* What follows the integrity data ending at end on the object: an appended dm-verity area
 * over [0, end), then a signature block over it (its entries from its start, then its footer
 * at the 4 KiB boundary they lead to). Their length, 0 for none. */
static uint64_t extent_after(struct sqk_io *io, uint64_t end, uint64_t dev)
{
	uint64_t at = end, area = verity_area_len(end / SQK_PAD), s, l, e, len, blk;
	uint8_t hdr[8], tail[SQK_SIG_FOOTER_SIZE];
	uint32_t count;

	if (area && area <= dev - end && verity_appended(io, end + area, &e) == 0 && e == end)
		at = end + area;
	for (len = 0; len < SQK_SIG_BLOCK_MAX && at + len + sizeof(hdr) <= dev; len += blk) {
		if (sqk_io_read_at(io, at + len, hdr, sizeof(hdr)))
			break;
		blk = get_le32(hdr);
		if (blk < SQK_SIG_HEADER_SIZE || blk % 8 || blk > SQK_SIG_BLOCK_MAX)
			break;
	}
	l = (len + SQK_SIG_FOOTER_SIZE + SQK_SIG_ALIGN - 1) / SQK_SIG_ALIGN * SQK_SIG_ALIGN;
	if (len && l <= dev - at &&
	    sqk_io_read_at(io, at + l - sizeof(tail), tail, sizeof(tail)) == 0 &&
	    sig_block_footer(tail, at + l, &s, &l, &e, &count) == 0 && s == at && e == end)
		return at + l - end;
	return at - end;
}

/* A block device holds an image at its start and whatever was there before after it, while
 * readers find the integrity trailer at the end of the object: the object is the image, from
 * its superblock's bytes_used, with the hint and integrity data that follow it, and its
 * dm-verity area and signature block; when chunk digests follow it without a trailer (cut),
 * the whole device, whose end readers refuse as damaged integrity data. Without a
 * superblock (or with one claiming more than the device) it is the whole device (dev bytes). */
uint64_t integ_extent(struct sqk_io *io, uint64_t dev)
{
	uint8_t raw[SQK_SUPER_SIZE];
	struct sqk_super sb;

	if (dev < SQK_SUPER_SIZE || sqk_io_read_at(io, 0, raw, sizeof(raw)))
		return dev;
	super_decode(raw, &sb);
	if (sb.magic != SQK_MAGIC || sb.bytes_used < SQK_SUPER_SIZE || sb.bytes_used > dev)
		return dev;
	uint64_t padded = round_4k(sb.bytes_used);
	if (padded > dev)
		return dev;
	uint64_t covered = padded + extent_hint_len(io, padded, dev);
	covered += extent_fast_len(io, covered, dev);
	uint64_t end = extent_integ_end(io, covered, dev);
	if (!end && covered != padded) /* a hint footer without a trailer: not a hint */
		end = extent_integ_end(io, padded, dev);
	if (!end && (covered != padded || extent_digests_follow(io, padded, dev)))
		return dev; /* integrity data cut short: the whole object, which readers refuse */
	return end ? end + extent_after(io, end, dev) : padded;
}


/* Borrows io. */
bool integ_tail_zero(struct sqk_io *io, uint64_t from, uint64_t size)
{
	uint8_t buf[SQK_INTEG_ZERO_SPAN];
	uint64_t n = size - from < sizeof(buf) ? size - from : sizeof(buf);

	return from <= size && sqk_io_read_at(io, size - n, buf, (size_t)n) == 0 &&
	       bytes_all_zero(buf, (size_t)n);
}

/* Borrows io. */
uint64_t integ_grown_end(struct sqk_io *io, uint64_t size)
{
	uint64_t ext;

	if (size < SQK_INTEG_ZERO_SPAN || !integ_tail_zero(io, size - SQK_INTEG_ZERO_SPAN, size))
		return size;
	ext = integ_extent(io, size);
	return ext < size ? ext : size;
}

/* Borrows io; fills the caller's *padded. */
bool integ_cut(struct sqk_io *io, uint64_t size, uint64_t start, uint64_t bytes_used,
	       uint64_t *padded)
{
	*padded = (start + bytes_used + SQK_PAD - 1) / SQK_PAD * SQK_PAD;
	return size > *padded && size != start + bytes_used &&
	       !integ_tail_zero(io, *padded, size);
}
