/* SPDX-License-Identifier: BSD-2-Clause */
/* Remote images: an sqk_io backend that reads an image served over HTTP(S) with range requests
 * (libcurl), fetching only what is read. Requests are aligned to the image's integrity chunks
 * (64 KiB chunks for images without integrity data); adjacent misses are coalesced into one
 * request; reads whose caller names their stream (sqk_io_read_ahead) are fetched ahead in larger
 * ranges on parallel connections, never past the caller's limit. Every
 * chunk of an image with integrity data is checked against its SHA-256 before use; fetched chunks
 * are kept in a bounded on-disk cache keyed by the URL, the server's validators and the root
 * digest. Transient faults (timeouts, resets, 5xx, short bodies) are retried with exponential
 * backoff and jitter; a server that ignores Range or answers another size is an error. */
#ifndef SQK_REMOTE_H
#define SQK_REMOTE_H

#include "api.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "io.h"

#ifdef __cplusplus
extern "C" {
#endif

#define SQK_HTTP_RETRIES_DEFAULT 4
#define SQK_HTTP_TIMEOUT_DEFAULT 30u                    /* seconds */
#define SQK_HTTP_CACHE_SIZE_DEFAULT ((uint64_t)1 << 30) /* bytes of on-disk cache */
/* Bytes of in-memory chunk cache; a prefetch takes at most half of it per range. */
#define SQK_HTTP_MEM_DEFAULT ((size_t)256 << 20)

struct sqk_http_opts {
	size_t size;             /* sizeof(struct sqk_http_opts): sqk_http_opts_init sets it */
	/* On-disk cache folder; NULL = $XDG_CACHE_HOME/squashkit (or ~/.cache/squashkit). */
	const char *cache_dir;
	bool cache_size_set;     /* cache_size given (0 then turns the disk cache off) */
	uint64_t cache_size;     /* bytes; default SQK_HTTP_CACHE_SIZE_DEFAULT */
	bool retries_set;
	unsigned retries;        /* retries after the first try; default SQK_HTTP_RETRIES_DEFAULT */
	unsigned timeout_s;      /* a request under 1 KiB/s for this long fails; 0 = default */
	const char *const *headers; /* "Name: value" lines sent with every request (borrowed) */
	size_t nheaders;
	/* 32 bytes: the image's root digest must equal it; NULL = any. For sqk_io_http_create:
	 * sqk_image_open* refuse it here and pin with sqk_open_opts.root_hash. */
	const uint8_t *root_hash;
	const char *ca_file;        /* PEM bundle of CAs trusted for https (copied); NULL: system */
	/* Fetch raw bytes: no chunk verification and no disk cache (for `sqk verify`, which checks
	 * every chunk itself and reports what is wrong). */
	bool raw;
	unsigned connections;    /* parallel readahead transfers; 0 = 16 */
	size_t mem_bytes;        /* in-memory chunk cache; 0 = SQK_HTTP_MEM_DEFAULT */
	/* One-line messages (from any thread): errors, retries given up. Never holds secrets. */
	void (*log)(void *log_ctx, const char *msg);
	void *log_ctx;
	/* s3:// URLs: the endpoint (copied; NULL = $AWS_ENDPOINT_URL_S3, $AWS_ENDPOINT_URL, else
	 * AWS itself) and whether to send unsigned requests (public buckets). */
	const char *s3_endpoint;
	bool no_sign_request;
	/* Fetch the rest of the image into the disk cache in the background (mounts): after the
	 * prefetch hint's ranges, in image order, in whole units of the request grid, up to
	 * cache_size; reads a caller waits on always go first. Nothing without a disk cache. */
	bool background;
	uint64_t background_rate; /* bytes per second the background may take; 0 = no cap */
};

struct sqk_http_stats {
	size_t size;             /* the caller's sizeof(struct sqk_http_stats), set before */
	uint64_t requests;       /* HTTP requests sent (retries included) */
	uint64_t bytes;          /* body bytes received */
	uint64_t bytes_unused;   /* of those, chunk bytes no read has used (yet) */
	uint64_t retries;        /* requests retried after a transient fault */
	uint64_t disk_hits;      /* chunks served from the on-disk cache */
	uint64_t disk_misses;    /* chunks looked up there and not found (then fetched) */
	uint64_t corrupt;        /* chunks that failed their SHA-256 check */
	uint64_t digest_groups;  /* groups of chunk digests fetched (images with a digest tree) */
	uint64_t bytes_background; /* of `bytes`, those the background fetch received */
	/* The background fetch: bytes it still means to fetch (0 when done, stopped or off). */
	uint64_t background_left;
	/* Opened from the disk cache: the server could not be reached at the open (reads of bytes
	 * the cache does not hold go to the server, and fail while it stays away). */
	bool offline;
};

/* Sets *o to the defaults (zero) with o->size set; NULL opts mean the same. */
SQK_API void sqk_http_opts_init(struct sqk_http_opts *o);

/* True when s starts with http://, https:// or s3:// (case-insensitive). Borrows s. */
SQK_API bool sqk_is_url(const char *s);

/* True when s starts like a URL ("scheme://", RFC 3986 scheme characters) whatever its scheme:
 * a path that does not exist and looks like this is named an unsupported URL scheme. */
SQK_API bool sqk_looks_like_url(const char *s);

/* url (borrowed) without its user info, query string or fragment, where credentials and
 * presigned secrets live: the name to show in messages. Caller frees; NULL on ENOMEM. */
SQK_API char *sqk_url_display(const char *url);

/* Checks one "Name: value" request header line (no CR/LF, a token before ':'), as
 * sqk_http_opts.headers takes them. 0 or SQK_EINVAL. Borrows line. */
SQK_API int sqk_http_header_check(const char *line);

/* Reads the header file at path (borrowed): one "Name: value" line each, empty lines and '#'
 * comments skipped. Its text goes to *text (caller frees, also after an error), each line
 * NUL-terminated in place and appended to hdrs[*n..max) (pointers into *text, *n advanced).
 * SQK_EIO (errno set) when the file cannot be read, SQK_EINVAL for a bad line, SQK_ETOOBIG past
 * max headers. */
SQK_API int sqk_http_header_file(const char *path, char **text, const char **hdrs, size_t max,
				 size_t *n);

/* Opens the image at url (borrowed; opts borrowed, NULL = defaults): probes its size and
 * validators, loads and authenticates its integrity data, pins the root digest when asked.
 * With the server unreachable, opens from what an earlier sqk_image_open_url of url kept in
 * the disk cache (an io made here keeps nothing for that). Caller owns *out (sqk_io_destroy).
 * Read-only: writes fail with SQK_EINVAL. A libsqk built without the backend (HAVE_REMOTE=0)
 * fails with SQK_ENOREMOTE, logging a line naming url. */
SQK_API int sqk_io_http_create(const char *url, const struct sqk_http_opts *opts,
			       struct sqk_io **out);

/* True when io is a remote image. */
SQK_API bool sqk_io_is_http(const struct sqk_io *io);

/* Fails every pending and later fetch at once (SQK_EINTR): for shutdown while requests hang. */
SQK_API void sqk_io_http_cancel(struct sqk_io *io);

/* Starts the background fetch of an image opened with opts.background (after the ranges
 * prefetched so far; again after a quiesce): returns at once. No-op otherwise. Borrows io. */
SQK_API void sqk_io_http_background(struct sqk_io *io);

/* Copies the counters into *out. SQK_EINVAL when io is not a remote image. */
SQK_API int sqk_io_http_stats(struct sqk_io *io, struct sqk_http_stats *out);

/* True when every byte read from io was checked against the image's integrity data. */
SQK_API bool sqk_io_http_verified(const struct sqk_io *io);

/* The URL without its query string or credentials, for messages (borrowed from io). */
SQK_API const char *sqk_io_http_name(const struct sqk_io *io);

#ifdef __cplusplus
}
#endif

#endif
