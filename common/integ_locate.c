/* SPDX-License-Identifier: BSD-2-Clause */
/* Where an image's integrity data ends in its file (integrity.h, "the image's end" E): at the
 * end of the file, or before the signature block that ends it (common/sign.h) and the
 * dm-verity area appended before that (common/verity.h). Everything after E is found from the
 * end of the file and distrusted: a damaged footer is damage, never "nothing there". */
#include <stdio.h>
#include <string.h>

#include "integrity.h"
#include "sign.h"
#include "sqk/error.h"
#include "verity.h"

/* Whether the last 128 bytes of [0, end) carry a trailer's magic (valid or not: a damaged
 * trailer is integ_load_lazy's to judge). */
static bool trailer_magic_at(struct sqk_io *io, uint64_t end)
{
	uint8_t raw[SQK_INTEG_TRAILER_SIZE];
	struct sqk_integ_trailer t;

	return end >= sizeof(raw) && sqk_io_read_at(io, end - sizeof(raw), raw, sizeof(raw)) == 0 &&
	       integ_trailer_decode(raw, &t) != SQK_ENOENT;
}

/* [E, area_end) must be an appended dm-verity area over [0, E). */
static int verity_between(struct sqk_io *io, uint64_t e, uint64_t area_end, char *why,
			  size_t len)
{
	uint64_t data_end = 0;
	int rc = verity_appended(io, area_end, &data_end);

	if (rc == 0 && data_end == e)
		return 0;
	snprintf(why, len, "the %llu bytes between the integrity data's end (%llu) and the "
		 "signature block are not a dm-verity area over the image",
		 (unsigned long long)(area_end - e), (unsigned long long)e);
	return rc == SQK_EIO || rc == SQK_ENOMEM ? rc : SQK_ECORRUPT;
}

/* The signature block ends the file: E from its footer. */
static int after_sig(struct sqk_io *io, uint64_t size, const uint8_t *tail,
		     struct integ_where *w, char *why, size_t len)
{
	uint64_t s, l, e;
	uint32_t count;
	int rc = sig_block_footer(tail, size, &s, &l, &e, &count);

	if (rc == SQK_ENOENT)
		return rc;
	if (rc) {
		snprintf(why, len, "the signature block at the end of the file (bytes %llu..%llu) "
			 "is damaged", (unsigned long long)(size - SQK_SIG_FOOTER_SIZE),
			 (unsigned long long)size - 1);
		return SQK_ECORRUPT;
	}
	w->sig_at = s;
	w->sig_len = l;
	w->end = e;
	if (e < s) {
		w->verity_at = e;
		w->verity_end = s;
		return verity_between(io, e, s, why, len);
	}
	return 0;
}

/* Borrows io; fills the caller's *w and why (len bytes). */
int integ_locate(struct sqk_io *io, uint64_t size, struct integ_where *w, char *why, size_t len)
{
	uint8_t tail[SQK_SIG_FOOTER_SIZE];
	uint64_t e;
	int rc;

	memset(w, 0, sizeof(*w));
	w->end = size;
	why[0] = '\0';
	if (trailer_magic_at(io, size) || size < sizeof(tail))
		return 0;
	rc = sqk_io_read_at(io, size - sizeof(tail), tail, sizeof(tail));
	if (rc)
		return rc;
	rc = after_sig(io, size, tail, w, why, len);
	if (rc != SQK_ENOENT)
		return rc;
	rc = verity_appended(io, size, &e);
	if (rc == SQK_ENOENT)
		return 0;
	if (rc) {
		snprintf(why, len, "the dm-verity area at the end of the file is damaged");
		return rc == SQK_EIO || rc == SQK_ENOMEM ? rc : SQK_ECORRUPT;
	}
	w->end = e;
	w->verity_at = e;
	w->verity_end = size;
	return 0;
}
