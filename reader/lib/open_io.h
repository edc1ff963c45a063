/* SPDX-License-Identifier: BSD-2-Clause */
/* What a backend built beside libsqk's reader (the remote one's sqk_image_open_url) calls to
 * open an image on an io of its own. Not installed, not exported. */
#ifndef SQK_READER_OPEN_IO_H
#define SQK_READER_OPEN_IO_H

#include "sqk/sqk.h"

/* The caller's opts (borrowed; NULL = defaults) as this library's struct, in the caller's *o:
 * 0 or SQK_EABI. */
int img_take_opts(const struct sqk_open_opts *opts, struct sqk_open_opts *o);

/* Opens the image on io, a backend that fetches from far away, named name (borrowed) in
 * messages: io is taken over (destroyed with the image, or here when the open fails); o
 * (borrowed) is this library's struct, with o->http NULL. A file's first one-block read then
 * fetches nothing ahead, and the image's prefetch hint is loaded, its ranges fetched unless
 * o->no_prefetch. clip: the most of one range io's prefetch takes. Caller owns *out. */
int img_open_remote(struct sqk_io *io, const struct sqk_open_opts *o, const char *name,
		    uint64_t clip, struct sqk_image **out);

/* Starts fetching the prefetch hint's ranges of the image on io before it is opened (io: a
 * backend that checks what it reads; t: the image's integrity trailer; bytes_used: from its
 * superblock, not validated yet; file_size: io's size), so that they come while the metadata
 * tables do. Nothing when there is no hint or it does not decode: the open says why. Borrows
 * io and t. */
void img_prefetch_hint_io(struct sqk_io *io, const struct sqk_integ_trailer *t,
			  uint64_t bytes_used, uint64_t file_size);

/* Whether img was found signed by a trusted key at open (opts.trust): then fills the caller's
 * *time and pub with the newest such signature's. Borrows img. */
bool img_trusted(const struct sqk_image *img, uint64_t *time, uint8_t pub[32]);

/* Logs a line through img's log callback, prefixed with its name. */
void img_logf(struct sqk_image *img, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
