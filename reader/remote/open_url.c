/* SPDX-License-Identifier: BSD-2-Clause */
/* sqk_image_open_url: an image served over HTTP(S) or S3 opened through the remote backend
 * (io_http.c), its metadata tables fetched in one go when they are small, then opened by the
 * reader like any other io (reader/lib/open_io.h). */
#include "common/format.h"
#include "reader/lib/open_io.h"
#include "url.h"

/* Metadata tables at most this large are fetched whole at open; larger ones (millions of
 * files) are fetched as they are read, chunk by chunk, cached and verified like data. */
#define META_WHOLE_MAX ((uint64_t)4 << 20)

/* Fetches the metadata tables (inode table to the end of the image) in one go when they are
 * small: the superblock is read and sanity-checked here only to find them; the reader
 * validates it for real. */
static void prefetch_tables(struct sqk_io *io)
{
	uint8_t raw[SQK_SUPER_SIZE];
	struct sqk_super sb;
	uint64_t size;

	if (sqk_io_read_at(io, 0, raw, sizeof(raw)) || sqk_io_get_size(io, &size))
		return;
	super_decode(raw, &sb);
	if (sb.magic != SQK_MAGIC || sb.inode_table_start >= sb.bytes_used ||
	    sb.bytes_used > size || sb.bytes_used - sb.inode_table_start > META_WHOLE_MAX)
		return;
	sqk_io_prefetch(io, sb.inode_table_start, sb.bytes_used - sb.inode_table_start, true);
}

/* Borrows url and opts; caller owns *out. */
int sqk_image_open_url(const char *url, const struct sqk_open_opts *opts, struct sqk_image **out)
{
	struct sqk_http_opts ho;
	struct sqk_open_opts o;
	struct sqk_io *io;
	int rc;

	if (!url || !out)
		return SQK_EINVAL;
	*out = NULL;
	if (img_take_opts(opts, &o) || abi_copy_in(&ho, sizeof(ho), o.http, HTTP_OPTS_V1))
		return SQK_EABI;
	if (o.offset || ho.root_hash) /* the pin is o.root_hash */
		return SQK_EINVAL;
	if (!ho.log) {
		ho.log = o.log;
		ho.log_ctx = o.log_ctx;
	}
	ho.root_hash = o.root_hash; /* checked by the backend before anything else is fetched */
	rc = sqk_io_http_create(url, &ho, &io);
	if (rc)
		return rc;
	prefetch_tables(io);
	o.no_verify = true; /* the backend checks every chunk it fetches, whatever opts say */
	o.http = NULL;
	o.root_hash = NULL;
	return img_open_remote(io, &o, sqk_io_http_name(io), out);
}
