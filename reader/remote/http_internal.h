/* SPDX-License-Identifier: BSD-2-Clause */
/* Internals of the remote-image backend shared by its files: io_http.c (open, the vtable),
 * chunks.c (the chunk table, its caches, checks and reads), groups.c (groups of chunk digests),
 * ahead.c (fetching ahead, prefetching) and http_fetch.c (the transfer thread: libcurl multi,
 * range checks, retries). */
#ifndef SQK_HTTP_INTERNAL_H
#define SQK_HTTP_INTERNAL_H

#include <curl/curl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "http_cache.h"
#include "common/integrity.h"
#include "sqk/io.h"
#include "sqk/remote.h"
#include "s3.h"

/* Transfers at once for data readers wait on (readahead has `connections` of its own). */
#define SQK_HTTP_DEMAND_MAX 32u
#define PART_MIN ((uint64_t)1 << 20)  /* readahead parts: at least this, one per connection */
#define RUN_MAX ((uint64_t)8 << 20)   /* the largest single request */
/* The request grid: units of this size (or the chunk size if larger), fixed for the image, so
 * caching proxies see the same ranges from every client: no request crosses a unit, readahead
 * and prefetch ask for whole units, and one request per unit runs at once. */
#define UNIT_MIN ((uint64_t)1 << 20)

/* A chunk's life: LOADING (a reader looks it up on disk, or a transfer is fetching it) ->
 * FETCHED (bytes in, not yet checked) -> VERIFYING (one reader hashes it) -> READY; or FAILED
 * (err set; detached from the table so a later read tries again). */
enum { CH_LOADING, CH_FETCHED, CH_VERIFYING, CH_READY, CH_FAILED };

#define HTTP_CCV 16

struct http_chunk {
	uint64_t k;
	int state;
	int err;
	unsigned pins;
	unsigned waiters;        /* reads waiting on ccv for its state to change */
	bool detached;           /* out of the table (failed): freed at the last unpin */
	bool in_lru;
	bool net;                /* its bytes came from the server (counted in n_net) */
	bool disk;               /* FETCHED from the disk cache, checked once its digest group
				  * is in (a failed check fetches it from the server) */
	bool stored;             /* its bytes are in the disk cache (whoever stores sets it;
				  * nobody stores twice; a failed check drops them) */
	bool no_disk;            /* the disk cache had it wrong: asked again from the server,
				  * never taken from disk again (the entry may not be removable) */
	atomic_bool used;        /* a read has copied from it (net bytes counted in n_used) */
	uint8_t *data;
	size_t len;
	struct http_chunk *hnext;
	struct http_chunk *prev, *next; /* LRU of unpinned chunks with data */
};

/* A group of chunk digests of an image with a digest tree (integrity.h): ABSENT (not known;
 * also after a failed load, so a later read tries again) -> BUSY (one thread looks it up on
 * disk or checks what the server sent; others wait) or NET (a request in flight: the first
 * reader to find it done checks it) -> READY (accepted into h->integ). */
enum { GR_ABSENT, GR_BUSY, GR_NET, GR_READY };

struct http_group {
	int state;
	struct http_job *job;    /* NET: the flat request (owned here, not by the thread) */
	unsigned fails;          /* loads that failed: waiters of a failed load get its error */
	int err;                 /* the last failure */
};

/* An answer's validators: what tells versions of the image apart. */
struct validators {
	char etag[128], lastmod[64];
};

/* One range request: [off, off + len), either into chunks (pinned by the job) or into flat. */
struct http_job {
	uint64_t off;
	size_t len;
	struct http_chunk **ch;
	unsigned nch;
	unsigned ndone;          /* ch[0..ndone) complete and handed over (maybe freed since) */
	uint64_t k0;             /* chunk number of ch[0] */
	uint8_t *flat;
	size_t got;
	unsigned attempt;
	unsigned stalls;         /* bodies that stalled after their headers: the stall limit is
				  * `timeout` << stalls */
	uint64_t not_before;     /* ms, CLOCK_MONOTONIC */
	bool probe;              /* the first request: learns size and validators */
	bool reval;              /* the trailer under another ETag (expect_etag): is it the same
				  * image? (asked with If-Match) */
	bool need_reval;         /* answered with an ETag not known yet: waits for its check */
	char expect_etag[128];
	struct curl_slist *own_hdrs; /* the backend's headers and more (owned), else NULL */
	bool suffix;             /* the open's tail: the last len bytes (`Range: bytes=-len`),
				  * off and len set from the answer's Content-Range; a failure is
				  * not logged (the open asks again by offset) */
	size_t suffix_len;
	bool demand;             /* a reader waits for it: started before readahead */
	bool ra_slot;            /* running on one of the `connections` readahead slots */
	bool bg;                 /* the background fetch's (background.c) */
	bool unit_locked;        /* holds its unit's lock of the disk cache's folder */
	uint64_t lock_wait;      /* ms: since when it waits for another process's unit lock */
	bool done;               /* flat jobs: finished (rc set) */
	int rc;
	bool permanent;          /* the failure is not worth a retry */
	bool no_answer;          /* it failed without an answer: no connection, or cut off */
	char why[256];
	long status;
	bool bad_status;         /* not 200/206: the body is an error document, kept in errbody */
	int fail_rc;             /* the SQK_E* code the status means (0: SQK_EIO) */
	char *errbody;           /* the first bytes (<= 4 KiB) of a failed answer's body */
	size_t errbody_len;
	char bucket_region[64];  /* x-amz-bucket-region of the answer (S3) */
	uint64_t cr_first, cr_last, cr_total; /* Content-Range of the response */
	bool have_cr;
	char etag[128], lastmod[64];
	CURL *easy;
	struct curl_slist *hdrs; /* borrowed from the backend */
	char range[64];
	char errbuf[CURL_ERROR_SIZE];
	struct http *h;
	struct http_job *next;   /* in the queue */
	struct http_job *anext;  /* in the running list */
};

struct http {
	struct sqk_io base;
	char *url;               /* as given (may hold a presigned query: never printed); for
				  * s3:// the object URL it resolves to */
	char *name;              /* scheme://host/path without credentials or query */
	char *ca_file;
	struct s3 *s3;       /* s3:// URLs: the object, region and credentials (s3.h) */
	struct sqk_http_opts o;
	struct curl_slist *hdrs;
	unsigned retries, timeout_s, conns;

	uint64_t size;           /* of the remote file */
	char etag[128], lastmod[64];
	/* With integrity data, another ETag (a mirror, a copy) is checked, not fatal: its trailer
	 * is fetched (one check at a time, the jobs that met it parked meanwhile) and the ETag
	 * accepted when the root digest is the same, else named as a changed image. Only the
	 * transfer thread uses these. */
	char etag_ok[4][128];
	unsigned n_etag_ok;
	char etag_bad[128], etag_checking[128];
	struct http_job *parked;

	/* Chunk grid over [0, covered): chunk k is [k*csize, min((k+1)*csize, covered)). */
	uint64_t covered;
	uint32_t csize;
	uint64_t unit;           /* the request grid (UNIT_MIN): a multiple of csize */
	bool has_integ;
	struct integ integ;  /* a digest tree: lazily loaded (groups accepted as fetched) */
	uint64_t tail_at;        /* where the integrity data read at open starts: covered (flat
				  * digests), the group digests (a tree) */
	uint8_t *tail;           /* [tail_at, size): digests (or group digests) and trailer */
	struct http_group *groups; /* a digest tree: its ngroups groups of chunk digests */
	struct dcache *dc;
	char *cache_folder;      /* the disk cache's folder when dc is open (owned) */
	/* [0, end): the image and its integrity data; [sig_at, size): the signature block, its
	 * bytes in `after` (owned); between them an appended dm-verity area, if any */
	uint64_t end, sig_at;
	uint8_t *after;
	/* The open's fetches, kept in the cache folder for an open without the server (offline.c);
	 * rec_key: the image's cache folder ("": no integrity data); replay: such an open, its
	 * fetches served from them; offline: the image was opened so; unreached: every request
	 * of the open failed without an answer, or with a server error. */
	struct http_rec *rec;
	char rec_key[33];
	bool replay, offline, unreached;

	pthread_mutex_t mu;
	pthread_cond_t cv;
	pthread_cond_t ccv[HTTP_CCV]; /* reads waiting for chunk k wait on ccv[k % HTTP_CCV]: a
				       * chunk's arrival wakes its readers, not every waiter */
	struct http_chunk **tab;
	size_t tab_size;
	struct http_chunk *lru_head, *lru_tail; /* head = most recent */
	size_t mem_used, mem_limit;
	uint8_t *spare;          /* kept chunk buffers (chunks.c), spare_bytes in all */
	size_t spare_bytes;
	bool cancelled;

	/* Sequential streams, for fetching ahead. */
	struct http_stream {
		uint64_t id;           /* the reader's stream id (sqk_io_ahead) */
		/* bytes read in the stream, where it goes on, fetched to */
		uint64_t got, next, ra_end;
		uint64_t window;       /* bytes */
		uint64_t stamp;
	} streams[16];
	uint64_t stamp;

	/* The transfer thread (started on first use, again after a fork). */
	CURLM *multi;
	pthread_t thread;
	pid_t thread_pid;
	bool stopping;
	struct http_job *queue;  /* waiting to start (by not_before) */
	struct http_job *running;
	unsigned active, active_ra; /* running transfers; of them, readahead */
	/* The link, measured from the transfers fetching ahead (link_timed): the shortest time to
	 * a unit's first byte, and a unit's time alone on it at their goodput (a moving average);
	 * the goodput's window: since ahead_t0_us, ahead_bytes (transfer thread only). */
	int64_t link_rtt_us, link_body_us;
	int64_t ahead_t0_us;
	uint64_t ahead_bytes;
	uint64_t ahead_end_ms; /* when the last readahead or prefetch transfer ended */

	atomic_uint_fast64_t n_requests, n_bytes, n_retries, n_disk_hits, n_disk_misses, n_corrupt;
	atomic_uint_fast64_t n_net, n_used; /* chunk bytes from the server; of them, read */
	atomic_uint_fast64_t n_groups; /* digest groups fetched from the server */
	/* The background fetch (background.c; NULL until started) and its counters. */
	struct http_bg *bg;
	atomic_uint_fast64_t n_bg_bytes, n_bg_left;
};

void http_logf(struct http *h, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
uint64_t http_now_ms(void);

/* mu held: whether the link is bandwidth-bound (a unit's body takes two round trips or more),
 * as measured so far; and how many transfers may fetch ahead at once on it. */
bool http_link_bw_bound(const struct http *h);
unsigned http_ahead_max(const struct http *h);

/* http_fetch.c. Called with h->mu held: queues job (the thread takes ownership). */
int http_submit(struct http *h, struct http_job *job);
/* Starts the transfer thread in this process unless it runs there (first use, a forked child,
 * after a quiesce), from the caller's thread: every signal blocked, the caller's scheduling
 * policy. mu held. 0 or SQK_ENOMEM. */
int http_thread_ensure(struct http *h);
/* Runs a flat job to its end (with retries): 0 or SQK_E*. Called without mu; the caller still
 * owns job. */
int http_fetch_flat(struct http *h, struct http_job *job);
/* Runs the flat jobs jobs[0..n) at once and waits for all of them: rcs[i] is job i's result.
 * Called without mu; the caller still owns the jobs. */
void http_fetch_flat_all(struct http *h, struct http_job **jobs, unsigned n, int *rcs);
void http_thread_stop(struct http *h);
/* mu held: a reader waits on chunk k; a queued readahead job holding it becomes demand. */
void http_promote(struct http *h, uint64_t k);
bool http_dates_differ(const char *a, const char *b);
/* Appends line to *list: false when out of memory (the list stays as it was). */
bool http_slist_add(struct curl_slist **list, const char *line);
struct http_job *http_job_new(struct http *h, uint64_t off, size_t len);
void http_job_free(struct http_job *j);
/* For an s3:// url: resolves it (h->s3, h->url, h->name) and adds the headers every request
 * sends; SQK_E* after logging why. Called from setup, before the other headers. */
int http_s3_init(struct http *h, const char *url);

/* The file where the newest signed time accepted from io's URL for the key pub is kept
 * (rollback protection), in the disk cache's folder: into out (len bytes). SQK_ENOENT when
 * io has no disk cache. Borrows io and pub. */
int http_trust_record(const struct sqk_io *io, const uint8_t pub[32], char *out, size_t len);

/* The image on io passed every check of its open (signatures, rollback): what the open fetched
 * is kept for an open without the server (offline.c). Called once, by the opener. */
void http_open_done(struct sqk_io *io);

/* The integrity trailer io's open found, into *t: false when it found none (or io is not a
 * remote one, or reads it as raw bytes). Borrows io. */
bool http_integ_trailer(const struct sqk_io *io, struct sqk_integ_trailer *t);

/* io_http.c. Fetches [off, off + len) into *out (caller frees; with jout, the finished job
 * too, caller frees it with http_job_free): 0 or SQK_E*. Without mu. */
int http_fetch(struct http *h, uint64_t off, size_t len, bool probe, uint8_t **out,
		   struct http_job **jout);

/* offline.c. Keeping the open's fetches: start, then add each; seal at the end of the open;
 * commit once the open passed every check (with the cache folder KEY open as h->dc: the
 * record and the URL's map written where they changed, else the map of an earlier version
 * removed; KEY "": no folder); close at the end (a record evicted meanwhile is written
 * again). Opening from them: load (the record of h's URL under ROOT; the open's head and tail
 * into buffers the caller frees, later fetches of the open served by rec_fetch; SQK_ENOENT
 * when there is none), matches (the folder the open works out from the integrity data is the
 * record's). Without mu: during the open, commit and close. */
void http_rec_start(struct http *h);
void http_rec_add(struct http *h, uint64_t off, const uint8_t *p, size_t len);
void http_rec_seal(struct http *h);
void http_rec_commit(struct http *h, const char *root, const char *key);
void http_rec_close(struct http *h);
int http_rec_load(struct http *h, const char *root, uint8_t **head, size_t *head_len,
		  uint8_t **tail, uint64_t *tail_at);
bool http_rec_matches(const struct http *h, const char *key);
int http_rec_fetch(struct http *h, uint64_t off, size_t len, uint8_t **out);
void http_rec_free(struct http *h);

/* chunks.c: a chunk transfer ended (mu held): its remaining chunks become FETCHED or FAILED. */
void http_chunks_done(struct http *h, struct http_job *j, int rc);
/* chunks.c, without mu: takes the chunks of j (a chunk job not started) that another process
 * put in the disk cache, from the first on (FETCHED, checked when read; j->ndone counts them):
 * true when all were there (j is freed). */
bool http_chunks_from_disk(struct http *h, struct http_job *j);
/* chunks.c: all bytes of chunk c are in (called by the transfer thread, without mu). */
void http_chunk_arrived(struct http *h, struct http_chunk *c, bool room_only);
/* chunks.c, mu held: the length of chunk k; the chunk k in the table (borrowed) or NULL; a new
 * LOADING chunk k in the table, pinned once (NULL on ENOMEM); frees c (out of the table). */
size_t http_chunk_len(const struct http *h, uint64_t k);
struct http_chunk *http_chunk_find(struct http *h, uint64_t k);
struct http_chunk *http_chunk_new(struct http *h, uint64_t k);
void http_chunk_free(struct http *h, struct http_chunk *c);
void http_spares_free(struct http *h);
/* chunks.c, mu held: drops a pin of c (the last one puts it in the LRU, or frees a failed c);
 * marks c FETCHED with bytes from the server. */
void http_unpin(struct http *h, struct http_chunk *c);
/* chunks.c, mu held: chunk k in the table pinned once more for the caller (http_unpin), or
 * NULL. */
struct http_chunk *http_chunk_pin(struct http *h, uint64_t k);
void http_fetched(struct http *h, struct http_chunk *c);
/* chunks.c, without mu: resolves the caller's LOADING chunks own[0..n) (their pins pass on)
 * from the disk cache, else by requests in parts of about `part` bytes. */
void http_load_owned(struct http *h, struct http_chunk **own, unsigned n, uint64_t part,
			 bool demand);
/* chunks.c, without mu: reads [off, off + len) below `covered` into the caller's buf through
 * the chunks (ahead borrowed, may be NULL): 0 or SQK_E*. */
int http_read_chunks(struct http *h, uint64_t off, uint8_t *buf, size_t len,
			 const struct sqk_io_ahead *ahead);
/* chunks.c, mu held: checks chunk c (FETCHED from the server, or READY; pinned by the caller;
 * mu dropped meanwhile) and keeps it on disk without evicting anything: 0 (c READY) or SQK_E*
 * (c FAILED). *put_rc: the disk cache's answer (0 when stored or there already; SQK_ETOOBIG
 * when the cache's limit leaves no room; SQK_ENOSPC and others: the disk failed). */
int http_chunk_keep(struct http *h, struct http_chunk *c, int *put_rc);
/* chunks.c, at close (the thread stopped): checks the chunks fetched and never read and keeps
 * them on disk. */
void http_store_unread(struct http *h);

/* groups.c. Whether chunk checks need the digest groups (a digest tree, checked reads). */
bool http_uses_groups(const struct http *h);
/* groups.c, without mu: starts loading the groups of chunks k0..k1 that are not known. */
void http_kick_groups(struct http *h, uint64_t k0, uint64_t k1);
/* groups.c, without mu: waits until group g's digests are known, loading them when nobody
 * does: 0 or the error of the load waited for (SQK_ECORRUPT, SQK_EIO, SQK_EINTR). */
int http_group_need(struct http *h, uint64_t g);
/* groups.c, without mu: reads [off, off + len) of a tree's chunk digests into the caller's
 * buf: 0 or SQK_E*. */
int http_read_digest_area(struct http *h, uint64_t off, uint8_t *buf, size_t len);

/* ahead.c, mu held: whether [off, end) continues the stream the reader named (ra borrowed, may
 * be NULL); sets [*ra0, *ra1) to the bytes to fetch ahead (empty: none). */
void http_plan_ahead(struct http *h, uint64_t off, uint64_t end,
			 const struct sqk_io_ahead *ra, uint64_t *ra0, uint64_t *ra1);
/* ahead.c, without mu: fetches the chunks of [ra0, ra1) not yet present, in parallel parts of
 * at most part_max bytes that never cross a unit. A stream's readahead ends on the grid (or at
 * its limit: a file's end), so its next windows are whole units; prefetches are not rounded
 * out (a file read at random is fetched whole, never beyond the file). */
void http_fetch_ahead(struct http *h, uint64_t ra0, uint64_t ra1, uint64_t part_max);
/* ahead.c, the prefetch operation of the vtable (sqk/io.h): with wait, fetches [off, off +
 * len) coalesced, in parallel parts, and waits for it (the metadata tables at open); else
 * starts fetching it in parts of 1 MiB, in order, `connections` at a time, and returns at once
 * (the prefetch hint's ranges; a file read at random): a read of those bytes waits for them
 * (its request is then moved ahead of readahead). Clipped to the chunk grid and half the memory
 * cache. Best effort: errors surface when the bytes are read. */
void http_prefetch(struct sqk_io *io, uint64_t off, uint64_t len, bool wait);

/* The most of one range http_prefetch takes (half the memory cache). Borrows io (remote). */
uint64_t http_prefetch_max(const struct sqk_io *io);

/* background.c (sqk_io_http_background starts it). Stops and joins the background thread of
 * this process (quiesce, destroy; called without mu, before http_thread_stop). */
void http_bg_stop(struct http *h);
/* Frees the background state (destroy, after http_bg_stop and http_thread_stop). */
void http_bg_free(struct http *h);
/* mu held: whether this process's background fetch runs, has room in the disk cache and fetches
 * now (the prefetch hint's ranges and readahead are not on the wire): a read that misses then
 * asks for its whole unit. */
bool http_bg_sweeping(const struct http *h);
/* mu held: a read missed in unit u; the background fetches its neighbours next. */
void http_bg_missed(struct http *h, uint64_t u);
/* mu held: background job j failed for good (rc, j->why): the background thread decides. */
void http_bg_job_failed(struct http *h, const struct http_job *j, int rc);

#endif
