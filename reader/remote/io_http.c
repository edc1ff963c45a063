/* SPDX-License-Identifier: BSD-2-Clause */
/* Remote images behind the sqk_io vtable (see sqk/remote.h): open, the vtable, the counters,
 * cancel and quiesce. Open: two requests at once, the first 64 KiB (the size and validators)
 * and the last 128 KiB (a suffix range: the integrity digests and trailer, loaded and
 * authenticated as for local files). Reads go through the chunks (chunks.c) and, with a digest
 * tree, the groups of chunk digests (groups.c); only named streams fetch ahead (ahead.c); the
 * transfers run in http_fetch.c. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "common/abi.h"
#include "sqk/error.h"
#include "http_internal.h"
#include "url.h"

#define PROBE_LEN 65536u
#define TAIL_LEN 65536u
#define TAIL_OPEN 131072u /* the open's suffix request: at least TAIL_LEN from a chunk */
#define NOINTEG_CHUNK 65536u
#define DEFAULT_CONNS 16u /* readahead units in flight: 1 MiB each keeps 110 MB/s at 20 ms */
#define TAB_SIZE 4096u
#define HTTP_STATS_V1 SQK_ABI_SIZE_V1(struct sqk_http_stats, digest_groups)

static const struct sqk_io_ops http_ops;

void http_logf(struct http *h, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	if (!h->o.log)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	h->o.log(h->o.log_ctx, msg);
}

/* Borrows io. */
bool sqk_io_is_http(const struct sqk_io *io)
{
	return io && io->ops == &http_ops;
}

static int read_after_end(struct http *h, uint64_t off, uint8_t *p, size_t len);

static int http_read_ahead(struct sqk_io *io, uint64_t off, void *buf, size_t len,
			   const struct sqk_io_ahead *ahead)
{
	struct http *h = (struct http *)io;
	uint8_t *p = buf;

	if (off > h->size || len > h->size - off)
		return SQK_EBOUNDS;
	if (len == 0)
		return 0;
	if (off + len > h->end) { /* a signature block, a dm-verity area */
		uint64_t s = off > h->end ? off : h->end;
		int rc = read_after_end(h, s, p + (s - off), (size_t)(off + len - s));

		len = (size_t)(s - off);
		if (rc || !len)
			return rc;
	}
	if (off + len > h->tail_at) { /* the integrity data read at open */
		uint64_t s = off > h->tail_at ? off : h->tail_at;

		memcpy(p + (s - off), h->tail + (s - h->tail_at), (size_t)(off + len - s));
		len = (size_t)(s - off);
		if (!len)
			return 0;
	}
	if (off + len > h->covered) { /* a tree's chunk digests: by group */
		uint64_t s = off > h->covered ? off : h->covered;
		int rc = http_read_digest_area(h, s, p + (s - off), (size_t)(off + len - s));

		len = (size_t)(s - off);
		if (rc || !len)
			return rc;
	}
	return http_read_chunks(h, off, p, len, ahead);
}

static int http_read_at(struct sqk_io *io, uint64_t off, void *buf, size_t len)
{
	return http_read_ahead(io, off, buf, len, NULL);
}

static int http_write_at(struct sqk_io *io, uint64_t off, const void *buf, size_t len)
{
	return SQK_EINVAL;
}

static int http_get_size(struct sqk_io *io, uint64_t *size)
{
	*size = ((struct http *)io)->size;
	return 0;
}

static int http_sync(struct sqk_io *io)
{
	return 0;
}

static void http_destroy(struct sqk_io *io)
{
	struct http *h = (struct http *)io;
	size_t i;

	http_bg_stop(h);
	http_thread_stop(h);
	http_bg_free(h); /* after the transfers: a background job's end reads it */
	if (h->tab && !h->cancelled)
		http_store_unread(h);
	for (i = 0; h->tab && i < h->tab_size; i++) {
		while (h->tab[i]) {
			struct http_chunk *c = h->tab[i];

			h->tab[i] = c->hnext;
			http_chunk_free(h, c);
		}
	}
	free(h->tab);
	http_spares_free(h);
	for (uint64_t g = 0; h->groups && g < h->integ.t.ngroups; g++)
		http_job_free(h->groups[g].job); /* done: the thread is stopped */
	free(h->groups);
	if (h->multi)
		curl_multi_cleanup(h->multi);
	curl_slist_free_all(h->hdrs);
	http_rec_close(h);
	dcache_close(h->dc);
	integ_free(&h->integ);
	free(h->tail);
	free(h->cache_folder);
	free(h->after);
	free(h->url);
	free(h->name);
	free(h->ca_file);
	s3_free(h->s3);
	pthread_mutex_destroy(&h->mu);
	pthread_cond_destroy(&h->cv);
	for (unsigned c = 0; c < HTTP_CCV; c++)
		pthread_cond_destroy(&h->ccv[c]);
	free(h);
}

/* Borrows io. The caller makes sure no read runs meanwhile (sqk/io.h): a job queued while the
 * thread is being joined (a digest group request asked again after a quiesce cut it off,
 * http_group_need) could land after the thread's final queue flush, with no thread to run
 * it (http_submit starts none while thread_pid still names the one being joined), and its
 * reader would wait forever. */
static void http_quiesce(struct sqk_io *io)
{
	struct http *h = (struct http *)io;

	if (!sqk_io_is_http(io))
		return;
	http_bg_stop(h); /* before the transfers it waits on (sqk_io_http_background again) */
	http_thread_stop(h);
	pthread_mutex_lock(&h->mu);
	h->stopping = false;
	pthread_mutex_unlock(&h->mu);
}

/* Borrows io. */
void sqk_io_http_cancel(struct sqk_io *io)
{
	struct http *h = (struct http *)io;

	if (!sqk_io_is_http(io))
		return;
	pthread_mutex_lock(&h->mu);
	h->cancelled = true;
	pthread_cond_broadcast(&h->cv);
	for (unsigned i = 0; i < HTTP_CCV; i++)
		pthread_cond_broadcast(&h->ccv[i]);
	pthread_mutex_unlock(&h->mu);
	curl_multi_wakeup(h->multi);
}

static const struct sqk_io_ops http_ops = {
	.read_at = http_read_at,
	.write_at = http_write_at,
	.get_size = http_get_size,
	.sync = http_sync,
	.destroy = http_destroy,
	.read_ahead = http_read_ahead,
	.prefetch = http_prefetch,
	.cancel = sqk_io_http_cancel,
	.quiesce = http_quiesce,
	.stats = sqk_io_http_stats,
	.verified = sqk_io_http_verified,
};

/* Borrows io; fills the caller's *out. */
int sqk_io_http_stats(struct sqk_io *io, struct sqk_http_stats *user)
{
	struct http *h = (struct http *)io;
	struct sqk_http_stats s = { .size = sizeof(s) }, *out = &s;

	if (!sqk_io_is_http(io))
		return SQK_EINVAL;
	out->requests = atomic_load(&h->n_requests);
	out->bytes = atomic_load(&h->n_bytes);
	out->bytes_unused = atomic_load(&h->n_used); /* first: n_net never lags it */
	out->bytes_unused = atomic_load(&h->n_net) - out->bytes_unused;
	out->retries = atomic_load(&h->n_retries);
	out->disk_hits = atomic_load(&h->n_disk_hits);
	out->disk_misses = atomic_load(&h->n_disk_misses);
	out->corrupt = atomic_load(&h->n_corrupt);
	out->digest_groups = atomic_load(&h->n_groups);
	out->bytes_background = atomic_load(&h->n_bg_bytes);
	out->background_left = atomic_load(&h->n_bg_left);
	out->offline = h->offline;
	return abi_copy_out(user, out, sizeof(*out), HTTP_STATS_V1);
}

/* Borrows io. */
bool sqk_io_http_verified(const struct sqk_io *io)
{
	const struct http *h = (const struct http *)io;

	return sqk_io_is_http(io) && h->has_integ && !h->o.raw;
}

/* Borrows io. */
bool http_integ_trailer(const struct sqk_io *io, struct sqk_integ_trailer *t)
{
	if (!sqk_io_http_verified(io))
		return false;
	*t = ((const struct http *)io)->integ.t;
	return true;
}

/* Borrowed from io. */
const char *sqk_io_http_name(const struct sqk_io *io)
{
	return sqk_io_is_http(io) ? ((const struct http *)io)->name : NULL;
}

/* ---- open ---- */

/* A read-only view of [at, at + len) of the remote file, for loading the integrity data. */
struct window_io {
	struct sqk_io base;
	const uint8_t *data;
	uint64_t at;
	size_t len;
	struct http *fetch; /* non-NULL: bytes outside the window are fetched (integ_locate) */
};

static int win_read(struct sqk_io *io, uint64_t off, void *buf, size_t len)
{
	struct window_io *w = (struct window_io *)io;
	uint8_t *got = NULL;
	int rc;

	if (off < w->at || off - w->at > w->len || len > w->len - (off - w->at)) {
		if (!w->fetch || off > w->fetch->size || len > w->fetch->size - off)
			return SQK_EBOUNDS;
		rc = http_fetch(w->fetch, off, len, false, &got, NULL);
		if (!rc)
			memcpy(buf, got, len);
		free(got);
		return rc;
	}
	memcpy(buf, w->data + (off - w->at), len);
	return 0;
}

static int win_get_size(struct sqk_io *io, uint64_t *size)
{
	const struct window_io *w = (const struct window_io *)io;

	*size = w->fetch ? w->fetch->size : w->at + w->len;
	return 0;
}

static void win_destroy(struct sqk_io *io)
{
}

static const struct sqk_io_ops win_ops = {
	.read_at = win_read,
	.write_at = http_write_at,
	.get_size = win_get_size,
	.sync = http_sync,
	.destroy = win_destroy,
};

/* Fetches [off, off + len) into a buffer the caller frees. */
int http_fetch(struct http *h, uint64_t off, size_t len, bool probe, uint8_t **out,
		   struct http_job **jout)
{
	struct http_job *j;
	int rc;

	if (h->replay && !jout)
		return http_rec_fetch(h, off, len, out);
	if (!(j = http_job_new(h, off, len)))
		return SQK_ENOMEM;
	j->probe = probe;
	rc = http_fetch_flat(h, j);
	if (!rc) {
		*out = j->flat;
		j->flat = NULL;
		http_rec_add(h, off, *out, len);
	}
	if (!rc && jout)
		*jout = j;
	else
		http_job_free(j);
	return rc;
}

/* The last bytes (into tail, as a suffix range would have brought them) from a server that
 * refuses or misreads a suffix range (some S3 emulations): asked by offset once the probe gave
 * the size. */
static int tail_by_offset(struct http *h, const struct http_job *probe, struct http_job *tail)
{
	uint64_t size = probe->cr_total, at = size > TAIL_OPEN ? size - TAIL_OPEN : 0;
	struct http_job *j = NULL;
	uint8_t *buf = NULL;
	int rc;

	memcpy(h->etag, probe->etag, sizeof(h->etag)); /* checked against the probe's */
	h->size = size;
	rc = http_fetch(h, at, (size_t)(size - at), false, &buf, &j);
	if (rc)
		return rc;
	free(tail->flat);
	tail->flat = buf;
	tail->off = at;
	tail->len = (size_t)(size - at);
	tail->cr_total = size;
	memcpy(tail->etag, j->etag, sizeof(tail->etag));
	memcpy(tail->lastmod, j->lastmod, sizeof(tail->lastmod));
	http_job_free(j);
	return 0;
}

/* Whether request j of the open failed (rc) without an answer from the server: no connection,
 * cut off, or the server's own failure (5xx). A TLS or configuration error, or any other
 * answer, is not one. */
static bool unanswered(const struct http_job *j, int rc)
{
	return rc && rc != SQK_EINTR && !j->permanent && (j->no_answer || j->status >= 500);
}

/* The open's two requests, at once: the first PROBE_LEN bytes (*head, *head_len) with the
 * size and validators, and the last TAIL_OPEN bytes (*tail from *tail_at to the end), where
 * the integrity data and the metadata tables are. The probe's failure is the one named. The
 * validators are the tail's (*probe's the probe's: another ETag is the same image only when
 * the first bytes check against the tail's digests, open_etags). */
static int open_requests(struct http *h, uint8_t **head, size_t *head_len, uint8_t **tail,
			 uint64_t *tail_at, struct validators *probe)
{
	struct http_job *j[2] = { http_job_new(h, 0, PROBE_LEN), http_job_new(h, 0, TAIL_OPEN) };
	int rcs[2] = { 0, 0 }, rc;

	if (!j[0] || !j[1]) {
		http_job_free(j[0]);
		http_job_free(j[1]);
		return SQK_ENOMEM;
	}
	j[0]->probe = true;
	j[1]->suffix = true;
	j[1]->suffix_len = TAIL_OPEN;
	http_fetch_flat_all(h, j, 2, rcs);
	if (!rcs[0] && rcs[1] && rcs[1] != SQK_EINTR) /* no suffix ranges: by offset */
		rcs[1] = tail_by_offset(h, j[0], j[1]);
	rc = rcs[0] ? rcs[0] : rcs[1];
	h->unreached = unanswered(j[0], rcs[0]) && unanswered(j[1], rcs[1]);
	if (!rc && j[1]->cr_total != j[0]->cr_total) {
		http_logf(h, "%s: the image changed on the server during the open (size %llu, "
			      "was %llu)", h->name, (unsigned long long)j[1]->cr_total,
			      (unsigned long long)j[0]->cr_total);
		rc = SQK_EIO;
	}
	if (!rc) {
		/* the version of the integrity data; the first bytes are checked against it */
		h->size = j[0]->cr_total;
		memcpy(h->etag, j[1]->etag, sizeof(h->etag));
		memcpy(h->lastmod, j[1]->lastmod, sizeof(h->lastmod));
		memcpy(probe->etag, j[0]->etag, sizeof(probe->etag));
		memcpy(probe->lastmod, j[0]->lastmod, sizeof(probe->lastmod));
		*head_len = j[0]->len;
		*head = j[0]->flat;
		j[0]->flat = NULL;
		*tail_at = j[1]->off;
		*tail = j[1]->flat;
		j[1]->flat = NULL;
	}
	http_job_free(j[0]);
	http_job_free(j[1]);
	return rc;
}

/* Keeps the whole chunks inside [at, at + len), fetched at open, whose bytes buf holds
 * (unchecked: verified on first use). */
static void seed(struct http *h, uint64_t at, const uint8_t *buf, size_t len)
{
	uint64_t k;

	pthread_mutex_lock(&h->mu);
	for (k = (at + h->csize - 1) / h->csize;
	     k * h->csize < h->covered && k * h->csize + http_chunk_len(h, k) <= at + len;
	     k++) {
		struct http_chunk *c = http_chunk_find(h, k) ? NULL : http_chunk_new(h, k);

		if (!c)
			break;
		memcpy(c->data, buf + (k * h->csize - at), c->len);
		http_fetched(h, c);
		http_unpin(h, c);
	}
	pthread_mutex_unlock(&h->mu);
}

/* Where the integrity data read at open starts, from the trailer at the end of buf (the
 * file's last bytes): the digest array (flat), the group digests (a tree: the chunk digests
 * come by group); `at` when there is none, or it is not believable (integ_load_lazy then
 * says which), or buf holds it already. */
static uint64_t integ_start(const struct http *h, const uint8_t *buf, size_t len, uint64_t at)
{
	struct sqk_integ_trailer t;
	uint64_t from, per, most;

	if (len < SQK_INTEG_TRAILER_SIZE ||
	    integ_trailer_decode(buf + len - SQK_INTEG_TRAILER_SIZE, &t))
		return at;
	from = integ_lazy_start(&t);
	/* at most a digest for every smallest chunk (of a group of the smallest size) */
	per = SQK_INTEG_CHUNK_MIN * (t.version == SQK_INTEG_VERSION_TREE ? SQK_INTEG_GROUP_MIN : 1);
	most = SQK_INTEG_DIGEST_SIZE * (h->end / per + 1) + 8192 + SQK_INTEG_TRAILER_SIZE;
	if (from >= at || from >= h->end || h->end - from > most)
		return at;
	return from;
}

/* What follows the integrity data (integ_locate: a signature block, an appended dm-verity
 * area), from the tail fetched at open ([at, size) in buf; more is fetched when needed):
 * h->end becomes the integrity data's end and h->after keeps the signature block. */
static int locate_end(struct http *h, const uint8_t *buf, uint64_t at)
{
	struct window_io w = { .base.ops = &win_ops, .data = buf, .at = at,
			       .len = (size_t)(h->size - at), .fetch = h };
	struct integ_where where;
	char why[256];
	int rc = integ_locate(&w.base, h->size, &where, why, sizeof(why));

	if (rc == SQK_ECORRUPT)
		http_logf(h, "%s: %s", h->name, why);
	if (rc)
		return rc;
	h->end = where.end;
	h->sig_at = where.sig_len ? where.sig_at : h->size;
	if (!where.sig_len)
		return 0;
	h->after = malloc((size_t)where.sig_len);
	if (!h->after)
		return SQK_ENOMEM;
	return win_read(&w.base, where.sig_at, h->after, (size_t)where.sig_len);
}

/* Bytes [off, off + len) past the integrity data's end: the signature block from h->after, a
 * dm-verity area fetched as it is. */
static int read_after_end(struct http *h, uint64_t off, uint8_t *p, size_t len)
{
	uint8_t *got = NULL;
	int rc = 0;

	if (off + len > h->sig_at) {
		uint64_t s = off > h->sig_at ? off : h->sig_at;

		memcpy(p + (s - off), h->after + (s - h->sig_at), (size_t)(off + len - s));
		len = (size_t)(s - off);
	}
	if (len && !(rc = http_fetch(h, off, len, false, &got, NULL)))
		memcpy(p, got, len);
	free(got);
	return rc;
}

/* A tree: the groups of chunk digests wholly inside what the open fetched ([at, at + len) in
 * buf) are taken (checked against their group digests) without a request of their own. */
static void take_fetched_groups(struct http *h, const uint8_t *buf, uint64_t at, size_t len)
{
	for (uint64_t g = 0; g < h->integ.t.ngroups; g++) {
		uint64_t k0, k1, s, e;

		integ_group_range(&h->integ, g, &k0, &k1, &s, &e);
		if (s >= at && e <= at + len &&
		    integ_group_accept(&h->integ, g, buf + (s - at), (size_t)(e - s)) == 0)
			h->groups[g].state = GR_READY;
	}
}

/* Loads the integrity data from the tail of the file ([at, size) in buf, fetched at open;
 * owned from here on); absent: the grid is 64 KiB chunks. */
static int load_tail(struct http *h, uint8_t *buf, uint64_t at)
{
	uint64_t from;
	struct window_io w = { .base.ops = &win_ops };
	int rc = locate_end(h, buf, at);

	if (!rc && h->end != h->size) { /* the tail of [0, end) */
		at = h->end > TAIL_LEN ? (h->end - TAIL_LEN) / NOINTEG_CHUNK * NOINTEG_CHUNK : 0;
		free(buf);
		buf = NULL;
		rc = http_fetch(h, at, (size_t)(h->end - at), false, &buf, NULL);
	}
	from = rc ? at : integ_start(h, buf, (size_t)(h->end - at), at);
	if (from < at) { /* more digests than the first request brought */
		free(buf);
		buf = NULL;
		rc = http_fetch(h, from, (size_t)(h->end - from), false, &buf, NULL);
		at = from;
	}
	w.data = buf;
	w.at = at;
	w.len = (size_t)(h->end - at);
	if (!rc)
		rc = integ_load_lazy(&w.base, h->end, &h->integ);
	if (rc == 0) {
		h->has_integ = true;
		h->covered = h->integ.t.covered;
		h->csize = h->integ.t.chunk_size;
		h->tail_at = integ_lazy_start(&h->integ.t);
		h->tail = malloc((size_t)(h->end - h->tail_at));
		if (h->tail && h->tail_at >= w.at)
			memcpy(h->tail, buf + (h->tail_at - w.at), (size_t)(h->end - h->tail_at));
		else
			rc = h->tail ? SQK_ECORRUPT : SQK_ENOMEM;
		if (!rc && h->integ.lazy &&
		    !(h->groups = calloc((size_t)h->integ.t.ngroups, sizeof(*h->groups))))
			rc = SQK_ENOMEM;
		if (!rc && h->groups)
			take_fetched_groups(h, buf, w.at, w.len);
	} else if (rc == SQK_ENOENT) {
		rc = 0;
		h->covered = h->end;
		h->tail_at = h->end;
		h->csize = NOINTEG_CHUNK;
	} else if (rc == SQK_ECORRUPT || rc == SQK_EBOUNDS) {
		http_logf(h, "%s: the integrity data at the end of the image is not valid",
			      h->name);
		rc = SQK_ECORRUPT;
	}
	if (rc == 0 && w.at < h->covered) /* the last chunks: often the metadata tables */
		seed(h, w.at, buf,
		     (size_t)((h->covered < w.at + w.len ? h->covered : w.at + w.len) - w.at));
	free(buf);
	return rc;
}

/* The open's two answers carried different ETags (two mirrors behind one name): with
 * integrity data the first bytes are checked against the tail's digests before use, and the
 * probe's ETag is checked like any other when it comes again; without, the image changed, as
 * when neither has an ETag and their Last-Modified dates differ. */
static int open_etags(struct http *h, const struct validators *probe)
{
	if (h->has_integ && !h->o.raw)
		return 0;
	if (strcmp(probe->etag, h->etag)) {
		http_logf(h, "%s: the image changed on the server during the open (ETag %s, was "
			      "%s)", h->name, h->etag, probe->etag);
		return SQK_EIO;
	}
	if (!h->etag[0] && http_dates_differ(probe->lastmod, h->lastmod)) {
		http_logf(h, "%s: the image changed on the server during the open (Last-Modified "
			      "%s, was %s)", h->name, h->lastmod, probe->lastmod);
		return SQK_EIO;
	}
	return 0;
}

static int check_root(struct http *h)
{
	char want[2 * SQK_INTEG_DIGEST_SIZE + 1], got[2 * SQK_INTEG_DIGEST_SIZE + 1];

	if (!h->o.root_hash)
		return 0;
	if (!h->has_integ) {
		http_logf(h, "%s: the image has no integrity data: its root digest cannot be "
			      "checked", h->name);
		return SQK_ECORRUPT;
	}
	if (!CRYPTO_memcmp(h->o.root_hash, h->integ.t.root, SQK_INTEG_DIGEST_SIZE))
		return 0;
	integ_hex(h->o.root_hash, want);
	integ_hex(h->integ.t.root, got);
	http_logf(h, "%s: root digest %s does not match the pinned %s", h->name, got, want);
	return SQK_ECORRUPT;
}

/* The disk cache's root folder into dir (cap bytes): false when there is none (asked off, or
 * no default). */
static bool cache_root(const struct http *h, char *dir, size_t cap)
{
	if (h->o.raw || (h->o.cache_size_set && h->o.cache_size == 0))
		return false;
	if (h->o.cache_dir)
		return (size_t)snprintf(dir, cap, "%s", h->o.cache_dir) < cap;
	return dcache_default_dir(dir, cap) == 0;
}

/* The disk cache of this version of the image: off when asked, when the default folder is
 * unknown, or when nothing tells versions apart (no validators, no root digest). */
static int open_cache(struct http *h)
{
	char dir[4096], hex[2 * SQK_INTEG_DIGEST_SIZE + 1] = "", key[33], *id;
	uint8_t d[SQK_INTEG_DIGEST_SIZE];
	int rc, n;

	if (!cache_root(h, dir, sizeof(dir)))
		return 0;
	if (!h->etag[0] && !h->lastmod[0] && !h->has_integ) {
		http_logf(h, "%s: no ETag, Last-Modified or integrity data: not cached on disk",
			      h->name);
		return 0;
	}
	/* with a root digest, the image itself: mirrors and copies of it share one cache */
	if (h->has_integ) {
		integ_hex(h->integ.t.root, hex);
		n = asprintf(&id, "root\n%s\n%llu", hex, (unsigned long long)h->size);
	} else { /* s3: the resolved URL, so one key on two endpoints is two images */
		n = asprintf(&id, "%s\n%s\n%s\n%llu\n", h->s3 ? h->url : h->name, h->etag,
			     h->lastmod, (unsigned long long)h->size);
	}
	if (n < 0)
		return SQK_ENOMEM;
	hash_sha256(id, (size_t)n, d);
	free(id);
	integ_hex(d, hex);
	memcpy(key, hex, 32);
	key[32] = '\0';
	if (h->offline && !http_rec_matches(h, key)) {
		http_logf(h, "%s: the cache folder %s kept an open of the image that names another "
			      "folder than its integrity data (%s)", h->name, dir, key);
		return SQK_ECORRUPT;
	}
	rc = dcache_open(dir, key,
			 h->o.cache_size_set ? h->o.cache_size : SQK_HTTP_CACHE_SIZE_DEFAULT,
			 (uint32_t)h->csize, (uint32_t)(h->unit / h->csize),
			 (h->covered + h->unit - 1) / h->unit, &h->dc);
	if (rc)
		http_logf(h, "cannot use the cache folder %s: %s; not cached on disk", dir,
			      sqk_strerror(rc));
	else
		h->cache_folder = strdup(dir); /* NULL: no rollback record, as without a cache */
	if (h->has_integ) /* (its folder, even when it could not be opened this time) */
		memcpy(h->rec_key, key, sizeof(h->rec_key));
	return 0;
}

/* The open without the server (offline.c), when its requests found none and the cache folder
 * kept an earlier open of the URL: rc stays the open's own error otherwise. */
static int open_offline(struct http *h, int rc, uint8_t **head, size_t *head_len,
			uint8_t **tail, uint64_t *tail_at, struct validators *probe)
{
	char dir[4096];

	if (!h->unreached || !cache_root(h, dir, sizeof(dir)) ||
	    http_rec_load(h, dir, head, head_len, tail, tail_at))
		return rc;
	memcpy(probe->etag, h->etag, sizeof(probe->etag));
	memcpy(probe->lastmod, h->lastmod, sizeof(probe->lastmod));
	return 0;
}

/* Borrows io. */
void http_open_done(struct sqk_io *io)
{
	struct http *h = (struct http *)io;
	char dir[4096];

	if (sqk_io_is_http(io) && !h->offline && cache_root(h, dir, sizeof(dir)))
		http_rec_commit(h, dir, h->rec_key);
}

/* Borrows io and pub; fills the caller's out (len bytes). */
int http_trust_record(const struct sqk_io *io, const uint8_t pub[32], char *out, size_t len)
{
	const struct http *h = (const struct http *)io;
	uint8_t d[SQK_INTEG_DIGEST_SIZE], kd[SQK_INTEG_DIGEST_SIZE];
	const char *id = h->s3 ? h->url : h->name;
	char hex[2 * SQK_INTEG_DIGEST_SIZE + 1], khex[2 * SQK_INTEG_DIGEST_SIZE + 1];
	int n;

	if (!sqk_io_is_http(io) || !h->cache_folder)
		return SQK_ENOENT;
	hash_sha256(id, strlen(id), d);
	integ_hex(d, hex);
	hash_sha256(pub, 32, kd); /* the key id: its first 8 bytes */
	integ_hex(kd, khex);
	n = snprintf(out, len, "%s/trusted/%.32s-%.16s", h->cache_folder, hex, khex);
	return n > 0 && (size_t)n < len ? 0 : SQK_ETOOBIG;
}

static void curl_init_once(void)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
}

static int setup(struct http *h, const char *url, const struct sqk_http_opts *o)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	size_t i;

	pthread_once(&once, curl_init_once);
	if (o)
		h->o = *o;
	h->o.headers = NULL;
	h->o.nheaders = 0;
	h->o.root_hash = NULL; /* checked in create, while opts is borrowed */
	h->retries = h->o.retries_set ? h->o.retries : SQK_HTTP_RETRIES_DEFAULT;
	h->timeout_s = h->o.timeout_s ? h->o.timeout_s : SQK_HTTP_TIMEOUT_DEFAULT;
	h->conns = h->o.connections ? h->o.connections : DEFAULT_CONNS;
	h->mem_limit = h->o.mem_bytes ? h->o.mem_bytes : SQK_HTTP_MEM_DEFAULT;
	h->ca_file = h->o.ca_file ? strdup(h->o.ca_file) : NULL;
	h->o.ca_file = NULL;
	if (o && o->ca_file && !h->ca_file)
		return SQK_ENOMEM;
	if (s3_is_url(url)) {
		int rc = http_s3_init(h, url);

		h->o.s3_endpoint = NULL; /* borrowed: resolved into h->s3 */
		if (rc)
			return rc;
	} else {
		h->url = strdup(url);
		h->name = sqk_url_display(url);
	}
	h->tab_size = TAB_SIZE;
	h->tab = calloc(h->tab_size, sizeof(*h->tab));
	h->multi = curl_multi_init();
	if (!h->url || !h->name || !h->tab || !h->multi)
		return SQK_ENOMEM;
	curl_multi_setopt(h->multi, CURLMOPT_PIPELINING, CURLPIPE_MULTIPLEX);
	curl_multi_setopt(h->multi, CURLMOPT_MAX_HOST_CONNECTIONS,
			  (long)(h->conns + SQK_HTTP_DEMAND_MAX));
	for (i = 0; o && i < o->nheaders; i++) {
		if (sqk_http_header_check(o->headers[i]))
			return SQK_EINVAL;
		if (!http_slist_add(&h->hdrs, o->headers[i]))
			return SQK_ENOMEM;
	}
	return 0;
}

/* Borrows url and opts; caller owns *out. */
int sqk_io_http_create(const char *url, const struct sqk_http_opts *user, struct sqk_io **out)
{
	struct sqk_http_opts mine, *opts = &mine; /* the caller's, as this library's version */
	struct http *h;
	uint8_t *head = NULL, *tail = NULL;
	size_t head_len = 0;
	uint64_t tail_at = 0;
	struct validators probe = { "", "" };
	char dir[4096];
	int rc;

	*out = NULL;
	if (!sqk_is_url(url))
		return SQK_EINVAL;
	if (abi_copy_in(&mine, sizeof(mine), user, HTTP_OPTS_V1))
		return SQK_EABI;
	h = calloc(1, sizeof(*h));
	if (!h)
		return SQK_ENOMEM;
	h->base.ops = &http_ops;
	pthread_mutex_init(&h->mu, NULL);
	pthread_cond_init(&h->cv, NULL);
	for (unsigned i = 0; i < HTTP_CCV; i++)
		pthread_cond_init(&h->ccv[i], NULL);
	rc = setup(h, url, opts);
	h->csize = PROBE_LEN;
	h->unit = UNIT_MIN;
	if (!rc) {
		rc = open_requests(h, &head, &head_len, &tail, &tail_at, &probe);
		if (rc) {
			rc = open_offline(h, rc, &head, &head_len, &tail, &tail_at, &probe);
		} else if (cache_root(h, dir, sizeof(dir))) {
			/* kept for an open without the server: the head and tail first */
			http_rec_start(h);
			http_rec_add(h, 0, head, head_len);
			http_rec_add(h, tail_at, tail, (size_t)(h->size - tail_at));
		}
	}
	if (!rc && h->size == 0)
		rc = SQK_ECORRUPT;
	if (!rc)
		rc = load_tail(h, tail, tail_at);
	else
		free(tail);
	if (!rc && h->replay && !h->has_integ) { /* never kept so */
		http_logf(h, "%s: the open the cache folder %s kept has no integrity data", h->name,
			  cache_root(h, dir, sizeof(dir)) ? dir : "?");
		rc = SQK_ECORRUPT;
	}
	if (!rc)
		rc = open_etags(h, &probe);
	if (!rc) {
		h->unit = h->csize >= UNIT_MIN ? h->csize : UNIT_MIN / h->csize * h->csize;
		seed(h, 0, head, head_len);
	}
	free(head);
	if (!rc) {
		h->o.root_hash = opts ? opts->root_hash : NULL;
		rc = check_root(h);
		h->o.root_hash = NULL;
	}
	h->offline = h->replay;
	h->replay = false;
	if (!rc)
		rc = open_cache(h);
	if (h->offline)
		http_rec_free(h); /* the open's alone */
	http_rec_seal(h); /* kept by http_open_done once the image passed every check */
	if (rc) {
		http_destroy(&h->base);
		return rc;
	}
	*out = &h->base;
	return 0;
}
