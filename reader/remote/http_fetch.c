/* SPDX-License-Identifier: BSD-2-Clause */
/* The transfer thread of remote images: one libcurl multi handle runs every range request
 * (keep-alive and HTTP/2 multiplexing come from its connection cache), up to `connections` at
 * once, requests for data a reader waits on ahead of readahead. Each response is checked before
 * its body is taken: 206 with a Content-Range naming exactly the bytes asked for and the image's
 * size, and the ETag seen at open. Timeouts, resets, 5xx and short bodies are retried with
 * exponential backoff and jitter; the rest fails at once. The first 4 KiB of a failed answer's
 * body are kept, so an S3 error document can be named. s3:// images: each request is signed
 * (AWS Signature V4, by libcurl) when it starts, so retries carry a fresh date. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "sqk/error.h"
#include "common/thread.h"
#include "http_internal.h"

/* Transfers fetching ahead at once until the link is measured, and on a bandwidth-bound link. */
#define AHEAD_FIRST 2u
#define AHEAD_BW_BOUND 2u
#define BACKOFF_MS 100u
#define BACKOFF_MAX_MS 5000u
#define ERRBODY_MAX 4096u /* bytes of a failed answer's body kept for its message */
/* A body that stalls after its headers (a caching proxy filling the whole file before it
 * serves a range) is asked again at once with twice the patience, up to timeout << STALLS_MAX,
 * without using a retry: a retry after the same wait would be a new miss and a new fill. */
#define STALLS_MAX 5u
/* A transfer slower than this (bytes a second) over the timeout fails: a server that trickles
 * must not hold a read for hours. */
#define LOW_SPEED_MIN 1024L
/* A chunk job whose unit another process is fetching (its lock in the cache folder) looks
 * again this often; the chunks are then on disk. */
#define UNIT_POLL_MS 10u
/* After this many other ETags found to carry the image's root digest, a server's ETags change
 * from answer to answer: they are not checked any more (the chunks' digests still are), else
 * every answer would wait for a check of its own for ever. */
#define ETAG_OK_MAX 8u

static int64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

uint64_t http_now_ms(void)
{
	return (uint64_t)now_us() / 1000u;
}

/* Caller owns the job (http_job_free). */
struct http_job *http_job_new(struct http *h, uint64_t off, size_t len)
{
	struct http_job *j = calloc(1, sizeof(*j));

	if (j) {
		j->h = h;
		j->off = off;
		j->len = len;
	}
	return j;
}

/* NULL-safe; does not touch the chunks. */
void http_job_free(struct http_job *j)
{
	if (!j)
		return;
	free(j->ch);
	free(j->flat);
	free(j->errbody);
	curl_slist_free_all(j->own_hdrs);
	free(j);
}

static void set_why(struct http_job *j, bool permanent, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void set_why(struct http_job *j, bool permanent, const char *fmt, ...)
{
	va_list ap;

	if (j->why[0])
		return;
	va_start(ap, fmt);
	vsnprintf(j->why, sizeof(j->why), fmt, ap);
	va_end(ap);
	j->permanent = permanent;
}

/* Copies a header's value (trimmed) into out. */
static void header_value(const char *p, size_t len, char *out, size_t cap)
{
	while (len && (*p == ' ' || *p == '\t')) {
		p++;
		len--;
	}
	while (len && (p[len - 1] == '\r' || p[len - 1] == '\n' || p[len - 1] == ' '))
		len--;
	if (len >= cap)
		len = cap - 1;
	memcpy(out, p, len);
	out[len] = '\0';
}

static bool header_is(const char *b, size_t len, const char *name, size_t *vlen)
{
	size_t n = strlen(name);

	if (len <= n || strncasecmp(b, name, n))
		return false;
	*vlen = len - n;
	return true;
}

static void parse_content_range(struct http_job *j, const char *v)
{
	unsigned long long a, b, t;

	j->have_cr = sscanf(v, "bytes %llu-%llu/%llu", &a, &b, &t) == 3 && a <= b && b < t;
	j->cr_first = a;
	j->cr_last = b;
	j->cr_total = t;
}

static size_t on_header(char *b, size_t sz, size_t n, void *ud)
{
	struct http_job *j = ud;
	size_t len = sz * n, vl;
	char v[160];

	if (len >= 5 && !strncmp(b, "HTTP/", 5)) { /* a new response (redirects) */
		j->have_cr = false;
		j->etag[0] = j->lastmod[0] = j->bucket_region[0] = '\0';
	} else if (header_is(b, len, "x-amz-bucket-region:", &vl)) {
		header_value(b + len - vl, vl, j->bucket_region, sizeof(j->bucket_region));
	} else if (header_is(b, len, "content-range:", &vl)) {
		header_value(b + len - vl, vl, v, sizeof(v));
		parse_content_range(j, v);
	} else if (header_is(b, len, "etag:", &vl)) {
		header_value(b + len - vl, vl, j->etag, sizeof(j->etag));
	} else if (header_is(b, len, "last-modified:", &vl)) {
		header_value(b + len - vl, vl, j->lastmod, sizeof(j->lastmod));
	}
	return len;
}

/* A failed status (not 200 or 206), once its body is in: why names it (for S3, with what the
 * error document says); 5xx, 408 and 429 are worth a retry, the rest is not. */
static void set_status_why(struct http_job *j)
{
	long st = j->status;
	/* a check of another ETag asks with If-Match: a mirror without it answers 412 */
	bool transient = st >= 500 || st == 408 || st == 429 || (j->reval && st == 412);
	char msg[sizeof(j->why)];

	if (!j->h->s3) {
		j->fail_rc = SQK_EIO;
		set_why(j, !transient, "HTTP status %ld", st);
		return;
	}
	j->fail_rc = s3_explain(j->h->s3, st, j->errbody, j->errbody_len, j->bucket_region,
				    msg, sizeof(msg));
	set_why(j, !transient, "%s", msg);
}

/* Keeps the first ERRBODY_MAX bytes of a failed answer's body; then stops the transfer. */
static size_t keep_errbody(struct http_job *j, const char *p, size_t len)
{
	size_t take = ERRBODY_MAX - j->errbody_len;

	if (!j->errbody)
		j->errbody = malloc(ERRBODY_MAX);
	if (!j->errbody)
		return 0;
	if (take > len)
		take = len;
	memcpy(j->errbody + j->errbody_len, p, take);
	j->errbody_len += take;
	return j->errbody_len < ERRBODY_MAX ? len : 0;
}

/* Whether etag is the one of the open or one found to have the same root digest (any, once
 * ETAG_OK_MAX were). */
static bool etag_known(const struct http *h, const char *etag)
{
	if (!strcmp(h->etag, etag) || (h->n_etag_ok >= ETAG_OK_MAX && strcmp(etag, h->etag_bad)))
		return true;
	for (unsigned i = 0; i < h->n_etag_ok && i < 4; i++) {
		if (!strcmp(h->etag_ok[i], etag))
			return true;
	}
	return false;
}

/* Whether two answers' Last-Modified dates (either may be absent) name other versions. */
bool http_dates_differ(const char *a, const char *b)
{
	return a[0] && b[0] && strcmp(a, b);
}

/* The ETag of a 206 for the right bytes: the open's or a known one; another one waits for a
 * check of its trailer (need_reval) when the image has integrity data, else the image changed.
 * Without integrity data, where the open's answer or this one has no ETag, their Last-Modified
 * dates tell. A check's own answer must carry the ETag it checks. */
static bool check_etag(struct http_job *j)
{
	struct http *h = j->h;

	if (j->reval) {
		if (!strcmp(j->etag, j->expect_etag))
			return true;
		set_why(j, false, "answered ETag %s, not %s", j->etag[0] ? j->etag : "(none)",
			j->expect_etag);
		return false;
	}
	if ((!h->has_integ || h->o.raw) && (!h->etag[0] || !j->etag[0]) &&
	    http_dates_differ(h->lastmod, j->lastmod)) {
		set_why(j, true, "the image changed on the server (Last-Modified %s, was %s)",
			j->lastmod, h->lastmod);
		return false;
	}
	if (!h->etag[0] || !j->etag[0] || etag_known(h, j->etag))
		return true;
	if (h->has_integ && !h->o.raw && strcmp(j->etag, h->etag_bad)) {
		j->need_reval = true;
		set_why(j, false, "another ETag %s: checking it", j->etag);
		return false;
	}
	set_why(j, true, "the image changed on the server (ETag %s, was %s)", j->etag, h->etag);
	return false;
}

/* The response before its body is used: a 206 for exactly the bytes asked for. A failed status
 * only marks the job (bad_status): outcome() names it once its body is in. */
static bool check_response(struct http_job *j)
{
	struct http *h = j->h;
	long st = 0;

	curl_easy_getinfo(j->easy, CURLINFO_RESPONSE_CODE, &st);
	j->status = st;
	if (st == 200) {
		curl_off_t body = -1;

		curl_easy_getinfo(j->easy, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &body);
		if (j->probe && body == 0) { /* the range of an empty file cannot be satisfied */
			j->fail_rc = SQK_EEMPTY;
			set_why(j, true, "the file is empty: not a SquashFS image");
			return false;
		}
		set_why(j, true, "the server ignored the Range request (200 with the whole body)");
		return false;
	}
	if (st != 206) {
		j->bad_status = true;
		return false;
	}
	if (!j->have_cr) {
		set_why(j, true, "206 response without a valid Content-Range");
		return false;
	}
	if (j->suffix) { /* the last bytes, the file's size unknown yet */
		if (j->cr_last != j->cr_total - 1 || j->cr_last - j->cr_first >= j->len) {
			set_why(j, true, "answered bytes %llu-%llu/%llu for the last %zu",
				(unsigned long long)j->cr_first, (unsigned long long)j->cr_last,
				(unsigned long long)j->cr_total, j->len);
			return false;
		}
		j->off = j->cr_first;
		j->len = (size_t)(j->cr_last - j->cr_first + 1);
		return true;
	}
	if (j->probe) {
		if (j->cr_first != 0 || j->cr_last >= j->len) {
			set_why(j, true, "answered bytes %llu-%llu for 0-%zu",
				(unsigned long long)j->cr_first, (unsigned long long)j->cr_last,
				j->len - 1);
			return false;
		}
		j->len = (size_t)j->cr_last + 1;
		return true;
	}
	if (j->cr_total != h->size) {
		set_why(j, true, "the server now answers a size of %llu bytes, the image had %llu",
			(unsigned long long)j->cr_total, (unsigned long long)h->size);
		return false;
	}
	if (j->cr_first != j->off || j->cr_last != j->off + j->len - 1) {
		set_why(j, true, "answered bytes %llu-%llu", (unsigned long long)j->cr_first,
			(unsigned long long)j->cr_last);
		return false;
	}
	return check_etag(j);
}

/* Scatters body bytes into the job's chunks (or its flat buffer), from j->got on; each chunk is
 * handed over as soon as its last byte is in, so readers need not wait for the whole range. */
static void sink(struct http_job *j, const char *p, size_t len)
{
	uint32_t cs = j->h->csize;
	uint64_t pos = j->off + j->got;

	if (j->flat) {
		memcpy(j->flat + j->got, p, len);
		return;
	}
	while (len) {
		/* ch[0] may be handed over and gone already: index from the job's own k0 */
		struct http_chunk *c = j->ch[pos / cs - j->k0];
		size_t at = (size_t)(pos - c->k * cs), take = c->len - at;

		if (take > len)
			take = len;
		memcpy(c->data + at, p, take);
		p += take;
		len -= take;
		pos += take;
		if (at + take == c->len) {
			j->ndone++;
			http_chunk_arrived(j->h, c, j->bg);
		}
	}
}

static size_t on_body(char *p, size_t sz, size_t n, void *ud)
{
	struct http_job *j = ud;
	size_t len = sz * n;

	if (j->status == 0 && !check_response(j) && !j->bad_status)
		return 0; /* aborts the transfer; why says what was wrong */
	if (j->bad_status)
		return keep_errbody(j, p, len);
	if (len > j->len - j->got) {
		set_why(j, true, "the server sent more than the %zu bytes asked for", j->len);
		return 0;
	}
	atomic_fetch_add(&j->h->n_bytes, len);
	if (j->ra_slot)
		j->h->ahead_bytes += len;
	if (j->bg)
		atomic_fetch_add(&j->h->n_bg_bytes, len);
	sink(j, p, len);
	j->got += len;
	return len;
}

/* An S3 request: the key's path as it is (no dot segments removed: they are part of the key),
 * no redirects followed (S3 answers a wrong region with one, named in the message), and signed
 * by libcurl with Signature V4: the date is taken when the request is sent, so every retry,
 * a new easy handle, is signed anew. The signed headers are Host, X-Amz-Date and every header of
 * the list (x-amz-content-sha256: UNSIGNED-PAYLOAD and x-amz-security-token among them); the
 * Range header is not in that list, which S3 allows. */
static void s3_options(const struct s3 *s, CURL *e)
{
	curl_easy_setopt(e, CURLOPT_PATH_AS_IS, 1L);
	curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
	if (!s->sign)
		return;
	curl_easy_setopt(e, CURLOPT_AWS_SIGV4, s->sigv4);
	curl_easy_setopt(e, CURLOPT_USERNAME, s->creds.access_key);
	curl_easy_setopt(e, CURLOPT_PASSWORD, s->creds.secret_key);
}

static int start(struct http *h, struct http_job *j)
{
	CURL *e = curl_easy_init();

	if (!e)
		return SQK_ENOMEM;
	j->easy = e;
	j->got = 0;
	j->status = 0;
	j->have_cr = false;
	j->why[0] = j->errbuf[0] = j->bucket_region[0] = '\0';
	j->permanent = false;
	j->no_answer = false;
	j->need_reval = false;
	j->bad_status = false;
	j->fail_rc = 0;
	j->errbody_len = 0;
	if (j->suffix) {
		j->len = j->suffix_len; /* the answer says which bytes */
		snprintf(j->range, sizeof(j->range), "-%zu", j->len);
	} else {
		snprintf(j->range, sizeof(j->range), "%llu-%llu", (unsigned long long)j->off,
			 (unsigned long long)(j->off + j->len - 1));
	}
	curl_easy_setopt(e, CURLOPT_URL, h->url);
	curl_easy_setopt(e, CURLOPT_PRIVATE, j);
	curl_easy_setopt(e, CURLOPT_RANGE, j->range);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, j);
	curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(e, CURLOPT_HEADERDATA, j);
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, j->own_hdrs ? j->own_hdrs : h->hdrs);
	curl_easy_setopt(e, CURLOPT_ERRORBUFFER, j->errbuf);
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 1L);
	curl_easy_setopt(e, CURLOPT_MAXREDIRS, 10L);
	curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(e, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT, (long)h->timeout_s);
	curl_easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT, LOW_SPEED_MIN);
	curl_easy_setopt(e, CURLOPT_LOW_SPEED_TIME, (long)h->timeout_s << j->stalls);
	curl_easy_setopt(e, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS);
	curl_easy_setopt(e, CURLOPT_PIPEWAIT, strncmp(h->url, "https:", 6) ? 0L : 1L);
	curl_easy_setopt(e, CURLOPT_USERAGENT, "squashkit");
	/* reads of 16 KiB (the default) keep Linux from growing the receive window past ~170 KB:
	 * 1 MiB units at 20 ms RTT then take 200 ms each */
	curl_easy_setopt(e, CURLOPT_BUFFERSIZE, 262144L);
	if (h->ca_file)
		curl_easy_setopt(e, CURLOPT_CAINFO, h->ca_file);
	if (h->s3)
		s3_options(h->s3, e);
	atomic_fetch_add(&h->n_requests, 1);
	if (curl_multi_add_handle(h->multi, e) != CURLM_OK) {
		curl_easy_cleanup(e);
		j->easy = NULL;
		return SQK_ENOMEM;
	}
	h->active++;
	j->ra_slot = !j->demand;
	if (j->ra_slot && !h->active_ra) { /* the goodput's window opens a round trip on */
		h->ahead_t0_us = now_us() + h->link_rtt_us;
		h->ahead_bytes = 0;
	}
	h->active_ra += j->ra_slot;
	j->anext = h->running;
	h->running = j;
	return 0;
}

/* Classifies a finished transfer: 0, or SQK_E* (SQK_EIO unless a failed status says more) with
 * why (and permanent) set. */
static int outcome(struct http_job *j, CURLcode res)
{
	if (j->why[0])
		return j->fail_rc ? j->fail_rc : SQK_EIO;
	if (res == CURLE_OK && j->status == 0 && !check_response(j) && !j->bad_status)
		return j->fail_rc ? j->fail_rc : SQK_EIO; /* an answer without a body */
	if (j->bad_status) {
		set_status_why(j);
		return j->fail_rc ? j->fail_rc : SQK_EIO;
	}
	if (res != CURLE_OK) {
		bool perm = res == CURLE_UNSUPPORTED_PROTOCOL || res == CURLE_URL_MALFORMAT ||
			    res == CURLE_PEER_FAILED_VERIFICATION ||
			    res == CURLE_TOO_MANY_REDIRECTS || res == CURLE_SSL_CACERT_BADFILE ||
			    res == CURLE_SSL_CERTPROBLEM;

		/* the server out of reach, not a TLS or configuration error to fix */
		j->no_answer = res == CURLE_COULDNT_RESOLVE_PROXY ||
			       res == CURLE_COULDNT_RESOLVE_HOST || res == CURLE_COULDNT_CONNECT ||
			       res == CURLE_OPERATION_TIMEDOUT || res == CURLE_GOT_NOTHING ||
			       res == CURLE_SEND_ERROR || res == CURLE_RECV_ERROR ||
			       res == CURLE_PARTIAL_FILE;

		set_why(j, perm, "%s", j->errbuf[0] ? j->errbuf : curl_easy_strerror(res));
		return SQK_EIO;
	}
	if (j->got != j->len) {
		set_why(j, false, "short body: %zu of %zu bytes", j->got, j->len);
		return SQK_EIO;
	}
	return 0;
}

/* Exponential backoff with jitter: half fixed, half random. */
static uint64_t backoff_ms(struct http *h, unsigned attempt)
{
	uint64_t base = (uint64_t)BACKOFF_MS << (attempt > 10 ? 10 : attempt - 1);
	unsigned r = (unsigned)(http_now_ms() * 2654435761u) ^ (unsigned)(uintptr_t)h;

	if (base > BACKOFF_MAX_MS)
		base = BACKOFF_MAX_MS;
	return base / 2 + (uint64_t)(r % (unsigned)(base / 2 + 1));
}

/* Inserts j into the queue by time, data a reader waits on before readahead, else FIFO. */
static void enqueue(struct http *h, struct http_job *j)
{
	struct http_job **p = &h->queue;

	while (*p && ((*p)->not_before < j->not_before ||
		      ((*p)->not_before == j->not_before && ((*p)->demand || !j->demand))))
		p = &(*p)->next;
	j->next = *p;
	*p = j;
}

static void etag_checked(struct http *h, struct http_job *j, int rc);

static void complete(struct http *h, struct http_job *j, int rc)
{
	if (j->reval) {
		etag_checked(h, j, rc);
		return;
	}
	if (rc && j->bg) /* the background logs once for all of its jobs */
		http_bg_job_failed(h, j, rc);
	/* a read waits on a promoted background job; a failed suffix range is asked again by
	 * offset, logged then */
	if (rc && rc != SQK_EINTR && (!j->bg || j->demand) && !j->suffix)
		http_logf(h, "%s: bytes %llu-%llu: %s%s", h->name, (unsigned long long)j->off,
			      (unsigned long long)(j->off + j->len - 1),
			      j->why[0] ? j->why : sqk_strerror(rc),
			      j->attempt ? " (retries exhausted)" : "");
	if (j->flat) {
		j->rc = rc;
		j->done = true;
		pthread_cond_broadcast(&h->cv);
		return;
	}
	http_chunks_done(h, j, rc);
}

/* A retry asks only for the chunks not handed over yet. Those may be freed by now: they are
 * whole chunks (only the image's last is short, and it is the last of its job). */
static void resume_after_done(struct http_job *j)
{
	size_t skip;

	if (j->flat || j->ndone == 0)
		return;
	skip = (size_t)j->ndone * j->h->csize;
	memmove(j->ch, j->ch + j->ndone, (j->nch - j->ndone) * sizeof(*j->ch));
	j->nch -= j->ndone;
	j->k0 += j->ndone;
	j->ndone = 0;
	j->off += skip;
	j->len -= skip;
}

/* Whether j timed out after its response's headers came and before any of its body (curl's
 * stall limit): a body that came too slowly is a failed attempt like any other. */
static bool body_stalled(struct http_job *j, CURLcode res)
{
	long st = 0;

	if (res != CURLE_OPERATION_TIMEDOUT || j->stalls >= STALLS_MAX || j->permanent || j->got)
		return false;
	curl_easy_getinfo(j->easy, CURLINFO_RESPONSE_CODE, &st);
	return st == 200 || st == 206;
}

/* Appends line to *list; false when out of memory (the list stays whole, never sent short). */
bool http_slist_add(struct curl_slist **list, const char *line)
{
	struct curl_slist *n = curl_slist_append(*list, line);

	if (n)
		*list = n;
	return n != NULL;
}

/* Starts the check of etag: its trailer, asked with If-Match (mu held). False when it cannot
 * be queued. */
static bool etag_check_start(struct http *h, const char *etag)
{
	struct http_job *j = http_job_new(h, h->end - SQK_INTEG_TRAILER_SIZE,
					  SQK_INTEG_TRAILER_SIZE);
	char im[160];
	const struct curl_slist *l;
	bool ok;

	if (!j)
		return false;
	j->reval = true;
	j->demand = true;
	snprintf(j->expect_etag, sizeof(j->expect_etag), "%s", etag);
	snprintf(im, sizeof(im), "If-Match: %s", etag);
	j->flat = malloc(j->len);
	ok = j->flat != NULL;
	for (l = h->hdrs; ok && l; l = l->next)
		ok = http_slist_add(&j->own_hdrs, l->data);
	if (!ok || !http_slist_add(&j->own_hdrs, im)) {
		http_job_free(j);
		return false;
	}
	snprintf(h->etag_checking, sizeof(h->etag_checking), "%s", etag);
	j->not_before = http_now_ms();
	enqueue(h, j);
	return true;
}

/* A job met an ETag not known yet: it waits for that ETag's check (mu held). */
static void etag_park(struct http *h, struct http_job *j)
{
	resume_after_done(j);
	if (etag_known(h, j->etag)) { /* checked meanwhile */
		j->not_before = http_now_ms();
		enqueue(h, j);
		return;
	}
	if (!h->etag_checking[0] && !etag_check_start(h, j->etag)) {
		complete(h, j, SQK_ENOMEM);
		return;
	}
	j->next = h->parked;
	h->parked = j;
}

/* The check of an ETag ended (mu held; frees j): accepted when its trailer has the image's root
 * digest (same size: checked with the Content-Range), else the image changed. The parked jobs
 * go on: again at once, failed for good, or (the check failed) as after a failed attempt. */
static void etag_checked(struct http *h, struct http_job *j, int rc)
{
	struct sqk_integ_trailer t;
	bool same = rc == 0 && integ_trailer_decode(j->flat, &t) == 0 &&
		    !CRYPTO_memcmp(t.root, h->integ.t.root, sizeof(t.root)) &&
		    t.covered == h->integ.t.covered && t.chunk_size == h->integ.t.chunk_size;
	struct http_job *p = h->parked;

	if (same) {
		snprintf(h->etag_ok[h->n_etag_ok++ % 4], sizeof(h->etag_ok[0]), "%s",
			 j->expect_etag);
		http_logf(h, "%s: ETag %s has the same root digest as %s: the same image",
			      h->name, j->expect_etag, h->etag);
		if (h->n_etag_ok == ETAG_OK_MAX)
			http_logf(h, "%s: the server's ETags change from answer to answer "
				      "(%u checked): they are not checked any more, the "
				      "chunks' digests are", h->name, ETAG_OK_MAX);
	} else if (rc == 0) {
		snprintf(h->etag_bad, sizeof(h->etag_bad), "%s", j->expect_etag);
	}
	h->etag_checking[0] = '\0';
	h->parked = NULL;
	while (p) {
		struct http_job *n = p->next;

		p->why[0] = '\0';
		if (h->cancelled || h->stopping) {
			complete(h, p, SQK_EINTR);
		} else if (!strcmp(p->etag, h->etag_bad)) {
			set_why(p, true, "the image changed on the server (ETag %s, was %s)",
				p->etag, h->etag);
			complete(h, p, SQK_EIO);
		} else if (etag_known(h, p->etag) || p->attempt < h->retries) {
			p->attempt += !etag_known(h, p->etag);
			p->not_before = http_now_ms();
			enqueue(h, p);
		} else {
			set_why(p, false, "ETag %s could not be checked", p->etag);
			complete(h, p, SQK_EIO);
		}
		p = n;
	}
	http_job_free(j);
}

/* A unit fetched ahead (len bytes) ended well, its first byte ttfb_us after it started. The
 * goodput of every transfer fetching ahead since the window opened (at least a round trip's
 * worth) gives a unit's time alone on the link: a unit's own body time would not, as transfers
 * sharing a link do not share it evenly. mu held, transfer thread. */
static void link_timed(struct http *h, size_t len, int64_t ttfb_us)
{
	int64_t now = now_us(), span, unit_us;

	if (len < h->unit / 2 || ttfb_us <= 0)
		return; /* whole units only */
	if (!h->link_rtt_us || ttfb_us < h->link_rtt_us) {
		if (!h->link_rtt_us)
			h->ahead_t0_us += ttfb_us; /* the first window: a round trip on */
		h->link_rtt_us = ttfb_us;
	}
	span = now - h->ahead_t0_us;
	if (span < h->link_rtt_us || !h->ahead_bytes)
		return; /* too short a window: it goes on */
	unit_us = (int64_t)((double)span * (double)h->unit / (double)h->ahead_bytes);
	h->link_body_us = h->link_body_us ? (h->link_body_us + unit_us) / 2 : unit_us;
	h->ahead_t0_us = now;
	h->ahead_bytes = 0;
}

/* Bandwidth-bound: a unit takes more than two round trips at the measured goodput (100 Mbit/s
 * at 20 ms RTT: 84 ms a MiB); on a fast link a unit takes about one while its connection's
 * window grows. */
bool http_link_bw_bound(const struct http *h)
{
	return h->link_rtt_us && h->link_body_us > 2 * h->link_rtt_us;
}

/* `connections` on a link that is not bandwidth-bound; AHEAD_BW_BOUND on a bandwidth-bound
 * one (more would share it: the unit a start waits on comes slower), and AHEAD_FIRST until the
 * link is measured. */
unsigned http_ahead_max(const struct http *h)
{
	unsigned n = h->conns;

	if (!h->link_rtt_us)
		n = AHEAD_FIRST;
	else if (http_link_bw_bound(h))
		n = AHEAD_BW_BOUND;
	return n < h->conns ? n : h->conns;
}

/* A transfer ended: retry it later, or hand its result over. */
static void finish(struct http *h, struct http_job *j, CURLcode res)
{
	int rc = outcome(j, res);
	curl_off_t ttfb = 0;
	bool stalled, stop;

	if (rc && !j->flat && j->nch && j->ndone == j->nch && !j->permanent)
		rc = 0; /* every chunk is in: nothing left to ask for */
	stalled = rc && body_stalled(j, res);

	if (j->ra_slot && !rc)
		curl_easy_getinfo(j->easy, CURLINFO_STARTTRANSFER_TIME_T, &ttfb);
	curl_multi_remove_handle(h->multi, j->easy);
	curl_easy_cleanup(j->easy);
	j->easy = NULL;
	pthread_mutex_lock(&h->mu);
	for (struct http_job **p = &h->running; *p; p = &(*p)->anext) {
		if (*p == j) {
			*p = j->anext;
			break;
		}
	}
	if (j->ra_slot && !rc)
		link_timed(h, j->len, (int64_t)ttfb);
	if (j->ra_slot && !j->bg)
		h->ahead_end_ms = http_now_ms();
	h->active--;
	h->active_ra -= j->ra_slot;
	if (j->unit_locked) /* its chunks are on disk (http_chunk_arrived) */
		dcache_unit_unlock(h->dc, j->off / h->unit);
	j->unit_locked = false;
	/* cancelled, or the thread stops (a quiesce before a fork, the close): nothing is asked
	 * again, and what was cut off is EINTR, not a failure (a digest group asks again) */
	stop = h->cancelled || h->stopping;
	if (rc && j->need_reval && !stop) {
		etag_park(h, j);
	} else if (stalled && !stop) {
		http_logf(h, "%s: bytes %llu-%llu: the body stalled %us after the headers; "
			      "asking again, waiting up to %us", h->name,
			      (unsigned long long)j->off, (unsigned long long)(j->off + j->len - 1),
			      h->timeout_s << j->stalls,
			      h->timeout_s << (j->stalls + 1));
		resume_after_done(j);
		j->stalls++;
		atomic_fetch_add(&h->n_retries, 1);
		j->not_before = http_now_ms();
		enqueue(h, j);
	} else if (rc && !j->permanent && j->attempt < h->retries && !stop) {
		resume_after_done(j);
		j->attempt++;
		atomic_fetch_add(&h->n_retries, 1);
		j->not_before = http_now_ms() + backoff_ms(h, j->attempt);
		enqueue(h, j);
	} else {
		complete(h, j, stop && rc ? SQK_EINTR : rc);
	}
	pthread_mutex_unlock(&h->mu);
}

/* Whether a chunk request of j's unit (requests never cross one) is running. mu held. */
static bool unit_busy(const struct http *h, const struct http_job *j)
{
	const struct http_job *r;

	for (r = h->running; r; r = r->anext) {
		if (!r->flat && r->off / h->unit == j->off / h->unit)
			return true;
	}
	return false;
}

/* Whether j may start now: one chunk request per unit at once; data a reader waits on gets a
 * connection of its own up to SQK_HTTP_DEMAND_MAX at once (concurrent cold reads go out in
 * parallel); readahead uses at most `connections`. mu held. */
static bool may_start(const struct http *h, const struct http_job *j)
{
	if (!j->flat && unit_busy(h, j))
		return false;
	if (j->demand)
		return h->active - h->active_ra < SQK_HTTP_DEMAND_MAX;
	return h->active_ra < http_ahead_max(h);
}

enum { UNIT_WAIT, UNIT_START, UNIT_START_AGAIN, UNIT_ON_DISK };

/* Takes the lock of chunk job j's unit in the disk cache's folder (mu held): UNIT_WAIT when
 * another process holds it (j waits UNIT_POLL_MS; after `timeout` seconds it goes on without
 * the lock: the holder may be stuck). Once taken, the chunks another process put
 * on disk are taken from there: UNIT_ON_DISK when all were (j is gone), else j starts for the
 * rest (UNIT_START_AGAIN: mu was let go meanwhile). */
static int unit_lock(struct http *h, struct http_job *j)
{
	uint64_t u = j->off / h->unit;
	bool ok, locked;

	if (j->flat || !h->dc || j->unit_locked)
		return UNIT_START;
	if (!dcache_unit_trylock(h->dc, u)) {
		uint64_t now = http_now_ms();

		if (!j->lock_wait)
			j->lock_wait = now;
		/* a holder stuck on its own request: not longer than a stall, then on our own */
		if (now - j->lock_wait < (uint64_t)h->timeout_s * 1000)
			return UNIT_WAIT;
	} else {
		j->unit_locked = true;
	}
	j->lock_wait = 0; /* another process may have fetched the chunks meanwhile */
	locked = j->unit_locked;
	pthread_mutex_unlock(&h->mu);
	ok = http_chunks_from_disk(h, j);
	pthread_mutex_lock(&h->mu);
	if (!ok) {
		resume_after_done(j); /* only what the disk did not have */
		return UNIT_START_AGAIN;
	}
	if (locked)
		dcache_unit_unlock(h->dc, u); /* (j is gone) */
	return UNIT_ON_DISK;
}

/* Starts the queued jobs that are due and have a connection; returns ms until the next one
 * is due (mu held). A readahead job that waits for a connection never holds back a demand
 * job behind it. */
static long start_due(struct http *h)
{
	uint64_t now = http_now_ms();
	struct http_job **p = &h->queue;

	while (*p && (*p)->not_before <= now) {
		struct http_job *j = *p;
		int u;

		if (!may_start(h, j)) {
			p = &j->next;
			continue;
		}
		*p = j->next;
		j->next = NULL;
		u = unit_lock(h, j);
		if (u == UNIT_WAIT) {
			j->not_before = now + UNIT_POLL_MS;
			enqueue(h, j);
			continue;
		}
		if (u != UNIT_START)
			p = &h->queue; /* the queue may have changed while mu was let go */
		if (u != UNIT_ON_DISK && start(h, j)) {
			if (j->unit_locked)
				dcache_unit_unlock(h->dc, j->off / h->unit);
			j->unit_locked = false;
			complete(h, j, SQK_ENOMEM);
		}
	}
	if (!*p)
		return 1000;
	return (long)((*p)->not_before - now) + 1;
}

/* mu held: a reader waits on chunk k; if a queued readahead job holds it, that job becomes
 * demand (it starts before readahead, on a demand connection). */
void http_promote(struct http *h, uint64_t k)
{
	struct http_job **p;

	for (p = &h->queue; *p; p = &(*p)->next) {
		struct http_job *j = *p;

		if (j->flat || j->demand || k < j->k0 + j->ndone || k >= j->k0 + j->nch)
			continue;
		*p = j->next;
		j->demand = true;
		enqueue(h, j);
		curl_multi_wakeup(h->multi);
		return;
	}
}

/* Fails what waits in the queue (cancel or stop; mu held). */
static void fail_queue(struct http *h)
{
	while (h->parked) {
		struct http_job *j = h->parked;

		h->parked = j->next;
		complete(h, j, SQK_EINTR);
	}
	while (h->queue) {
		struct http_job *j = h->queue;

		h->queue = j->next;
		complete(h, j, SQK_EINTR);
	}
}

/* Ends every running transfer as failed (cancel or stop); called without mu. */
static void abort_active(struct http *h)
{
	for (;;) {
		struct http_job *j;

		pthread_mutex_lock(&h->mu);
		j = h->running;
		pthread_mutex_unlock(&h->mu);
		if (!j)
			return;
		set_why(j, true, "cancelled");
		finish(h, j, CURLE_ABORTED_BY_CALLBACK);
	}
}

static void *thread_main(void *arg)
{
	struct http *h = arg;
	bool stop;

	pthread_mutex_lock(&h->mu);
	while (!h->stopping) {
		long wait;
		int running;
		CURLMsg *m;

		if (h->cancelled)
			fail_queue(h);
		wait = start_due(h);
		stop = h->cancelled;
		pthread_mutex_unlock(&h->mu);
		if (stop)
			abort_active(h);
		curl_multi_perform(h->multi, &running);
		while ((m = curl_multi_info_read(h->multi, &running))) {
			struct http_job *j = NULL;

			if (m->msg != CURLMSG_DONE)
				continue;
			curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&j);
			finish(h, j, m->data.result);
			wait = 0; /* a connection is free: start what waits for one */
		}
		if (wait)
			curl_multi_poll(h->multi, NULL, 0, (int)(wait > 1000 ? 1000 : wait), NULL);
		pthread_mutex_lock(&h->mu);
	}
	fail_queue(h);
	pthread_mutex_unlock(&h->mu);
	abort_active(h);
	return NULL;
}

/* mu held. */
int http_thread_ensure(struct http *h)
{
	if (h->thread_pid == getpid())
		return 0;
	if (thread_start(&h->thread, thread_main, h))
		return SQK_ENOMEM;
	h->thread_pid = getpid();
	return 0;
}

/* mu held; the thread owns job from here on. */
int http_submit(struct http *h, struct http_job *job)
{
	if (http_thread_ensure(h))
		return SQK_ENOMEM;
	enqueue(h, job);
	curl_multi_wakeup(h->multi);
	return 0;
}

/* Runs flat jobs at once. Called without mu; the caller still owns the jobs. */
void http_fetch_flat_all(struct http *h, struct http_job **jobs, unsigned n, int *rcs)
{
	unsigned i;

	pthread_mutex_lock(&h->mu);
	for (i = 0; i < n; i++) {
		struct http_job *job = jobs[i];

		job->flat = malloc(job->len ? job->len : 1);
		job->demand = true;
		rcs[i] = !job->flat ? SQK_ENOMEM : h->cancelled ? SQK_EINTR : http_submit(h, job);
	}
	for (i = 0; i < n; i++) {
		while (!rcs[i] && !jobs[i]->done)
			pthread_cond_wait(&h->cv, &h->mu);
		if (!rcs[i])
			rcs[i] = jobs[i]->rc;
	}
	pthread_mutex_unlock(&h->mu);
}

/* Runs a flat job to its end. Called without mu; the caller still owns job. */
int http_fetch_flat(struct http *h, struct http_job *job)
{
	int rc = 0;

	http_fetch_flat_all(h, &job, 1, &rc);
	return rc;
}

/* Stops and joins the thread (of this process); queued work fails. */
void http_thread_stop(struct http *h)
{
	if (h->thread_pid != getpid())
		return;
	pthread_mutex_lock(&h->mu);
	h->stopping = true;
	pthread_mutex_unlock(&h->mu);
	curl_multi_wakeup(h->multi);
	pthread_join(h->thread, NULL);
	h->thread_pid = 0;
}

/* The headers of every S3 request: the payload is not signed (GETs have none), and the session
 * token of temporary credentials. */
static int s3_headers(struct http *h)
{
	const struct s3 *s = h->s3;
	char *tok = NULL;
	bool ok;

	if (!s->sign)
		return 0;
	if (!http_slist_add(&h->hdrs, "x-amz-content-sha256: " SQK_S3_UNSIGNED_PAYLOAD))
		return SQK_ENOMEM;
	if (!s->creds.token)
		return 0;
	if (asprintf(&tok, "x-amz-security-token: %s", s->creds.token) < 0)
		return SQK_ENOMEM;
	ok = http_slist_add(&h->hdrs, tok);
	OPENSSL_cleanse(tok, strlen(tok));
	free(tok);
	return ok ? 0 : SQK_ENOMEM;
}

/* Borrows url; h owns what it sets. The name is the s3:// URL itself (it holds no secret). */
int http_s3_init(struct http *h, const char *url)
{
	char msg[512] = "";
	int rc;

	h->name = strdup(url);
	if (!h->name)
		return SQK_ENOMEM;
	rc = s3_resolve(url, h->o.s3_endpoint, h->o.no_sign_request, &h->s3, msg, sizeof(msg));
	if (rc) {
		if (rc != SQK_ENOMEM)
			http_logf(h, "%s: %s", h->name, msg);
		return rc;
	}
	h->url = strdup(h->s3->url);
	if (!h->url)
		return SQK_ENOMEM;
	return s3_headers(h);
}
