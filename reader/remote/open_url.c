/* SPDX-License-Identifier: BSD-2-Clause */
/* sqk_image_open_url: an image served over HTTP(S) or S3 opened through the remote backend
 * (io_http.c), its prefetch hint's ranges on their way and its metadata tables fetched in one
 * go when they are small, then opened by the reader like any other io (reader/lib/open_io.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/format.h"
#include "http_internal.h"
#include "reader/lib/open_io.h"
#include "url.h"

/* Metadata tables at most this large are fetched whole at open; larger ones (millions of
 * files) are fetched as they are read, chunk by chunk, cached and verified like data. */
#define META_WHOLE_MAX ((uint64_t)4 << 20)

/* The first fetches, before the image is opened: the prefetch hint's ranges when `hint`, on
 * their way first (a start's first reads come as soon as the mount is up, on connections that
 * have grown meanwhile), then the metadata tables (inode table to the end of the image) in one
 * go, waited for, when they are small. The superblock is read and sanity-checked here only to
 * find them; the reader validates it for real. */
static void prefetch_first(struct sqk_io *io, bool hint)
{
	uint8_t raw[SQK_SUPER_SIZE];
	struct sqk_integ_trailer t;
	struct sqk_super sb;
	uint64_t size;

	if (sqk_io_read_at(io, 0, raw, sizeof(raw)) || sqk_io_get_size(io, &size))
		return;
	super_decode(raw, &sb);
	if (sb.magic != SQK_MAGIC || sb.bytes_used > size)
		return;
	if (hint && http_integ_trailer(io, &t))
		img_prefetch_hint_io(io, &t, sb.bytes_used, size);
	if (sb.inode_table_start >= sb.bytes_used ||
	    sb.bytes_used - sb.inode_table_start > META_WHOLE_MAX)
		return;
	sqk_io_prefetch(io, sb.inode_table_start, sb.bytes_used - sb.inode_table_start, true);
}

/* The newest signed time recorded in path (0: none or unreadable). */
static uint64_t record_read(const char *path)
{
	unsigned long long t = 0;
	FILE *f = fopen(path, "re");

	if (f && fscanf(f, "%llu", &t) != 1)
		t = 0;
	if (f)
		fclose(f);
	return t;
}

/* Records t in path, atomically (a temporary file renamed); best effort. */
static void record_write(const char *path, uint64_t t)
{
	char dir[4200], tmp[4300];
	FILE *f;

	snprintf(dir, sizeof(dir), "%s", path);
	*strrchr(dir, '/') = '\0';
	if (mkdir(dir, 0700) && errno != EEXIST)
		return;
	snprintf(tmp, sizeof(tmp), "%s.%ld.tmp", path, (long)getpid());
	f = fopen(tmp, "we");
	if (!f)
		return;
	fprintf(f, "%llu\n", (unsigned long long)t);
	if (fclose(f) || rename(tmp, path))
		unlink(tmp);
}

/* Rollback protection (CVMFS's): a signed image older than one accepted before from the same
 * URL and key is refused, unless allowed; the newest time is kept in the disk cache's folder
 * (no cache folder: nothing to compare with). */
static int check_rollback(struct sqk_io *io, struct sqk_image *img, bool allow)
{
	char path[4200];
	uint8_t pub[32];
	uint64_t t, seen;

	if (!img_trusted(img, &t, pub) || http_trust_record(io, pub, path, sizeof(path)))
		return 0;
	seen = record_read(path);
	if (seen > t && !allow) {
		img_logf(img, "signed at %llu, older than the image signed at %llu by the same key "
			 "accepted before from this URL: refused as a rollback (--allow-rollback "
			 "accepts it; the record is %s)", (unsigned long long)t,
			 (unsigned long long)seen, path);
		return SQK_EROLLBACK;
	}
	if (t > seen)
		record_write(path, t);
	return 0;
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
	prefetch_first(io, !o.no_prefetch);
	o.no_verify = true; /* the backend checks every chunk it fetches, whatever opts say */
	o.http = NULL;
	o.root_hash = NULL;
	rc = img_open_remote(io, &o, sqk_io_http_name(io), http_prefetch_max(io), out);
	if (!rc && (rc = check_rollback(sqk_image_io(*out), *out, o.allow_rollback)) != 0) {
		sqk_image_close(*out);
		*out = NULL;
	}
	if (!rc)
		http_open_done(sqk_image_io(*out));
	return rc;
}
