/* Remote images behind the sqk_io vtable (see io_http.h). Open: one request learns the size and
 * validators with the first 64 KiB, one more the tail (the integrity digests and trailer, loaded
 * and authenticated as for local files). Reads: the bytes below `covered` are cut into chunks
 * (the integrity chunks, else 64 KiB); each is taken from memory, else the disk cache, else
 * fetched, coalesced with its neighbours, and checked against its SHA-256 before any caller sees
 * it. An image with a digest tree has only its group digests read at open: each group of chunk
 * digests is fetched (or taken from the disk cache) when a chunk it covers is first checked,
 * started as soon as the chunk is asked for so both requests run at once, checked against its
 * group digest and kept. A read fetches what it reads; only a read whose caller names its
 * stream (sqk_io_ahead: a file read sequentially, or a walk through the image) fetches ahead, in
 * growing windows cut into parts that run on parallel connections, never past the limit the
 * caller gives. */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/crypto.h>

#include "error.h"
#include "http_internal.h"

#define PROBE_LEN 65536u
#define TAIL_LEN 65536u
#define NOINTEG_CHUNK 65536u
#define DEFAULT_CONNS 4u
#define DEFAULT_MEM ((size_t)256 << 20)
#define RA_MIN ((uint64_t)2 << 20)
#define RA_MAX ((uint64_t)64 << 20)
#define RA_START ((uint64_t)256 << 10) /* a stream this long is read ahead */
#define RA_SLACK ((uint64_t)8 << 20) /* a read this far past a stream still continues it */
#define PART_MIN ((uint64_t)1 << 20)  /* readahead parts: at least this, one per connection */
#define RUN_MAX ((uint64_t)8 << 20)   /* the largest single request */
/* Parts of a prefetch (the hint's ranges, in the order a start reads them): small enough that
 * the first bytes arrive first, `connections` parts at a time at full speed. */
#define PREFETCH_PART ((uint64_t)1 << 20)
#define TAB_SIZE 4096u

static const struct sqk_io_ops http_ops;

void sqk_http_logf(struct sqk_http *h, const char *fmt, ...)
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

/* Borrows s. */
bool sqk_is_url(const char *s)
{
	return s && (!strncasecmp(s, "http://", 7) || !strncasecmp(s, "https://", 8) ||
		     sqk_s3_is_url(s));
}

/* Borrows s. */
bool sqk_looks_like_url(const char *s)
{
	size_t i = 0;

	if (!s || !isalpha((unsigned char)s[0]))
		return false;
	while (isalnum((unsigned char)s[i]) || s[i] == '+' || s[i] == '-' || s[i] == '.')
		i++;
	return !strncmp(s + i, "://", 3);
}

/* Borrows io. */
bool sqk_io_is_http(const struct sqk_io *io)
{
	return io && io->ops == &http_ops;
}

/* Borrows line. */
int sqk_http_header_check(const char *line)
{
	const char *colon = line ? strchr(line, ':') : NULL;
	const char *p;

	if (!colon || colon == line || strpbrk(line, "\r\n"))
		return SQK_EINVAL;
	for (p = line; p < colon; p++) {
		if (*p <= ' ' || *p >= 127)
			return SQK_EINVAL;
	}
	return 0;
}

/* Borrows text (lines written into it); fills the caller's hdrs and *n. */
int sqk_http_header_lines(char *text, const char **hdrs, size_t max, size_t *n)
{
	char *line, *save = NULL;

	for (line = strtok_r(text, "\r\n", &save); line; line = strtok_r(NULL, "\r\n", &save)) {
		if (line[0] == '#' || line[strspn(line, " \t")] == '\0')
			continue;
		if (sqk_http_header_check(line))
			return SQK_EINVAL;
		if (*n == max)
			return SQK_ETOOBIG;
		hdrs[(*n)++] = line;
	}
	return 0;
}

/* Reads the header file at path into *text (caller frees, also on errors) and splits it with
 * sqk_http_header_lines. SQK_EIO (errno set) when it cannot be read. */
int sqk_http_header_file(const char *path, char **text, const char **hdrs, size_t max, size_t *n)
{
	FILE *f = fopen(path, "re");
	size_t cap = 0;
	ssize_t got;

	*text = NULL;
	if (!f)
		return SQK_EIO;
	got = getdelim(text, &cap, '\0', f);
	fclose(f);
	if (got < 0) {
		free(*text);
		*text = strdup(""); /* an empty file: no headers */
		if (!*text)
			return SQK_ENOMEM;
	}
	return sqk_http_header_lines(*text, hdrs, max, n);
}

/* scheme://host[:port]/path: no user info, no query, no fragment (presigned URLs keep their
 * secrets in the query). Caller frees. */
char *sqk_url_display(const char *url)
{
	const char *hs = strstr(url, "://"), *at, *end;
	size_t sl, len;
	char *out;

	hs = hs ? hs + 3 : url;
	end = hs + strcspn(hs, "?#");
	at = memchr(hs, '@', (size_t)(end - hs));
	if (at && at < hs + strcspn(hs, "/"))
		hs = at + 1;
	sl = (size_t)(strstr(url, "://") ? strstr(url, "://") + 3 - url : 0);
	len = sl + (size_t)(end - hs);
	out = malloc(len + 1);
	if (!out)
		return NULL;
	memcpy(out, url, sl);
	memcpy(out + sl, hs, (size_t)(end - hs));
	out[len] = '\0';
	return out;
}

/* ---- the chunk table (mu held) ---- */

static size_t chunk_len(const struct sqk_http *h, uint64_t k)
{
	uint64_t s = k * h->csize, e = s + h->csize;

	return (size_t)((e < h->covered ? e : h->covered) - s);
}

static struct http_chunk *find(struct sqk_http *h, uint64_t k)
{
	struct http_chunk *c = h->tab[k % h->tab_size];

	while (c && c->k != k)
		c = c->hnext;
	return c;
}

static void unlink_tab(struct sqk_http *h, struct http_chunk *c)
{
	struct http_chunk **p = &h->tab[c->k % h->tab_size];

	while (*p && *p != c)
		p = &(*p)->hnext;
	if (*p)
		*p = c->hnext;
	c->detached = true;
}

static void lru_remove(struct sqk_http *h, struct http_chunk *c)
{
	if (!c->in_lru)
		return;
	if (c->prev)
		c->prev->next = c->next;
	else
		h->lru_head = c->next;
	if (c->next)
		c->next->prev = c->prev;
	else
		h->lru_tail = c->prev;
	c->prev = c->next = NULL;
	c->in_lru = false;
}

static void chunk_free(struct sqk_http *h, struct http_chunk *c)
{
	h->mem_used -= c->len;
	free(c->data);
	free(c);
}

/* A new LOADING chunk, in the table, pinned once. */
static struct http_chunk *chunk_new(struct sqk_http *h, uint64_t k)
{
	struct http_chunk *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->k = k;
	c->len = chunk_len(h, k);
	c->data = malloc(c->len);
	if (!c->data) {
		free(c);
		return NULL;
	}
	c->state = CH_LOADING;
	c->pins = 1;
	c->hnext = h->tab[k % h->tab_size];
	h->tab[k % h->tab_size] = c;
	h->mem_used += c->len;
	return c;
}

static void evict(struct sqk_http *h)
{
	while (h->mem_used > h->mem_limit && h->lru_tail) {
		struct http_chunk *c = h->lru_tail;

		lru_remove(h, c);
		unlink_tab(h, c);
		chunk_free(h, c);
	}
}

static void unpin(struct sqk_http *h, struct http_chunk *c)
{
	if (--c->pins)
		return;
	if (c->detached || c->state == CH_FAILED) {
		if (!c->detached)
			unlink_tab(h, c);
		chunk_free(h, c);
		return;
	}
	c->next = h->lru_head;
	c->prev = NULL;
	if (h->lru_head)
		h->lru_head->prev = c;
	h->lru_head = c;
	if (!h->lru_tail)
		h->lru_tail = c;
	c->in_lru = true;
	evict(h);
}

static void fail_chunk(struct sqk_http *h, struct http_chunk *c, int err)
{
	c->state = CH_FAILED;
	c->err = err;
	if (!c->detached)
		unlink_tab(h, c);
}

/* c holds bytes from the server, not yet checked (mu held). */
static void fetched(struct sqk_http *h, struct http_chunk *c)
{
	c->state = CH_FETCHED;
	c->net = true;
	atomic_fetch_add(&h->n_net, c->len);
}

/* Without mu: c's bytes are all in; the job's pin passes to whoever reads it. */
void sqk_http_chunk_arrived(struct sqk_http *h, struct http_chunk *c)
{
	pthread_mutex_lock(&h->mu);
	fetched(h, c);
	unpin(h, c);
	pthread_cond_broadcast(&h->cv);
	pthread_mutex_unlock(&h->mu);
}

/* mu held: the transfer of j ended; its chunks hold their bytes or failed. Frees j. */
void sqk_http_chunks_done(struct sqk_http *h, struct http_job *j, int rc)
{
	unsigned i;

	for (i = j->ndone; i < j->nch; i++) {
		struct http_chunk *c = j->ch[i];

		if (rc)
			fail_chunk(h, c, rc == SQK_EINTR ? SQK_EINTR : SQK_EIO);
		else
			fetched(h, c);
		unpin(h, c);
	}
	pthread_cond_broadcast(&h->cv);
	sqk_http_job_free(j);
}

/* ---- groups of chunk digests (images with a digest tree) ---- */

/* Disk-cache keys of groups: above every chunk number (chunks number less than 2^52). */
#define GROUP_KEY ((uint64_t)1 << 63)

static int fetch(struct sqk_http *h, uint64_t off, size_t len, bool probe, uint8_t **out,
		 struct http_job **jout);

/* Whether chunk checks need the digest groups (a digest tree, checked reads). */
static bool uses_groups(const struct sqk_http *h)
{
	return h->groups && !h->o.raw;
}

/* Group g's digests from the disk cache, checked against its group digest (a wrong entry is
 * removed): 0 when accepted. Without mu. */
static int group_from_disk(struct sqk_http *h, uint64_t g)
{
	uint64_t k0, k1, s, e;
	uint8_t *buf;
	int rc = SQK_ENOENT;

	if (!h->dc)
		return SQK_ENOENT;
	sqk_integ_group_range(&h->integ, g, &k0, &k1, &s, &e);
	buf = malloc((size_t)(e - s));
	if (!buf)
		return SQK_ENOMEM;
	if (sqk_dcache_get(h->dc, GROUP_KEY + g, buf, (size_t)(e - s)) == 0) {
		rc = sqk_integ_group_accept(&h->integ, g, buf, (size_t)(e - s));
		if (rc == SQK_ECORRUPT)
			sqk_dcache_drop(h->dc, GROUP_KEY + g);
	}
	free(buf);
	return rc;
}

/* Queues the request for group g's digests (mu held): NULL when it cannot be queued. */
static struct http_job *group_submit(struct sqk_http *h, uint64_t g)
{
	uint64_t k0, k1, s, e;
	struct http_job *j;

	sqk_integ_group_range(&h->integ, g, &k0, &k1, &s, &e);
	j = sqk_http_job_new(h, s, (size_t)(e - s));
	if (j)
		j->flat = malloc(j->len);
	if (j && j->flat) {
		j->demand = true; /* a chunk check waits on it */
		if (sqk_http_submit(h, j) == 0)
			return j;
	}
	sqk_http_job_free(j);
	return NULL;
}

/* Starts loading group g unless it is known or on its way: from the disk cache, else a request
 * that runs while the caller's chunks are fetched. 0, or why it could not start. Without mu. */
static int group_kick(struct sqk_http *h, uint64_t g)
{
	struct http_group *gr = &h->groups[g];
	int rc;

	pthread_mutex_lock(&h->mu);
	if (gr->state != GR_ABSENT || h->cancelled) {
		pthread_mutex_unlock(&h->mu);
		return h->cancelled ? SQK_EINTR : 0;
	}
	gr->state = GR_BUSY;
	pthread_mutex_unlock(&h->mu);
	rc = group_from_disk(h, g);
	pthread_mutex_lock(&h->mu);
	if (rc == 0) {
		gr->state = GR_READY;
	} else if (h->cancelled) {
		gr->state = GR_ABSENT;
		rc = SQK_EINTR;
	} else if ((gr->job = group_submit(h, g)) != NULL) {
		gr->state = GR_NET;
		rc = 0;
	} else {
		gr->state = GR_ABSENT;
		rc = SQK_ENOMEM;
	}
	pthread_cond_broadcast(&h->cv);
	pthread_mutex_unlock(&h->mu);
	return rc;
}

/* Starts loading the groups of chunks k0..k1 (inclusive) that are not known. Without mu. */
static void kick_groups(struct sqk_http *h, uint64_t k0, uint64_t k1)
{
	if (!uses_groups(h))
		return;
	for (uint64_t g = sqk_integ_group_of(&h->integ, k0);
	     g <= sqk_integ_group_of(&h->integ, k1); g++)
		if (!sqk_integ_group_loaded(&h->integ, g))
			group_kick(h, g);
}

/* Checks what the server sent for group g (the finished request j, freed here) and keeps it,
 * in memory and on disk. Without mu. */
static int group_take(struct sqk_http *h, uint64_t g, struct http_job *j)
{
	int rc = j->rc;

	if (rc == 0) {
		atomic_fetch_add(&h->n_groups, 1);
		rc = sqk_integ_group_accept(&h->integ, g, j->flat, j->len);
		if (rc == SQK_ECORRUPT) {
			atomic_fetch_add(&h->n_corrupt, 1);
			sqk_http_logf(h, "%s: digest group %llu (bytes %llu-%llu) does not match its "
				      "group digest", h->name, (unsigned long long)g,
				      (unsigned long long)j->off,
				      (unsigned long long)(j->off + j->len - 1));
		} else if (rc == 0 && h->dc) {
			sqk_dcache_put(h->dc, GROUP_KEY + g, j->flat, j->len);
		}
	} else if (rc != SQK_EINTR) {
		rc = SQK_EIO; /* logged by the transfer */
	}
	sqk_http_job_free(j);
	return rc;
}

/* Waits until group g's digests are known, loading them when nobody does: 0, or the error of
 * the load this call waited for (SQK_ECORRUPT, logged; SQK_EIO; SQK_EINTR). A failed group is
 * ABSENT again: the next read tries again. Without mu. */
static int group_need(struct sqk_http *h, uint64_t g)
{
	struct http_group *gr = &h->groups[g];
	unsigned fails;
	int rc;

	pthread_mutex_lock(&h->mu);
	fails = gr->fails;
	for (;;) {
		if (gr->state == GR_READY) {
			rc = 0;
			break;
		}
		if (gr->fails != fails) { /* the load this call waited for failed */
			rc = gr->err;
			break;
		}
		if (h->cancelled) {
			rc = SQK_EINTR;
			break;
		}
		if (gr->state == GR_ABSENT) {
			pthread_mutex_unlock(&h->mu);
			rc = group_kick(h, g);
			pthread_mutex_lock(&h->mu);
			if (rc)
				break;
			continue;
		}
		if (gr->state == GR_NET && gr->job->done) {
			struct http_job *j = gr->job;

			gr->job = NULL;
			gr->state = GR_BUSY;
			pthread_mutex_unlock(&h->mu);
			rc = group_take(h, g, j);
			pthread_mutex_lock(&h->mu);
			gr->state = rc ? GR_ABSENT : GR_READY;
			if (rc == SQK_EINTR && !h->cancelled) {
				/* cut off by a quiesce (the transfer thread stopped before a fork),
				 * not by this reader: ask again */
				pthread_cond_broadcast(&h->cv);
				continue;
			}
			if (rc) {
				gr->err = rc;
				gr->fails++;
			}
			pthread_cond_broadcast(&h->cv);
			break;
		}
		pthread_cond_wait(&h->cv, &h->mu);
	}
	pthread_mutex_unlock(&h->mu);
	return rc;
}

/* Reads [off, off + len) of a tree's chunk digests (not fetched at open): through their groups
 * (fetched, checked and kept), or as the server sends them (raw: the caller checks them). */
static int read_digest_area(struct sqk_http *h, uint64_t off, uint8_t *buf, size_t len)
{
	if (h->o.raw || !h->groups) {
		uint8_t *tmp = NULL;
		int rc = fetch(h, off, len, false, &tmp, NULL);

		if (!rc)
			memcpy(buf, tmp, len);
		free(tmp);
		return rc;
	}
	while (len) {
		uint64_t g = (off - h->covered) / SQK_INTEG_DIGEST_SIZE / h->integ.t.group_chunks;
		uint64_t k0, k1, s, e;
		size_t take;
		int rc = group_need(h, g);

		if (rc)
			return rc;
		sqk_integ_group_range(&h->integ, g, &k0, &k1, &s, &e);
		take = e - off < len ? (size_t)(e - off) : len;
		memcpy(buf, sqk_integ_group_digests(&h->integ, g) + (off - s), take);
		buf += take;
		off += take;
		len -= take;
	}
	return 0;
}

/* ---- fetching chunks ---- */

/* Queues a request for the chunks c[0..n) (consecutive, LOADING, pinned once more for the job),
 * cut into parts of about `part` bytes. mu held. Chunks that cannot be queued fail. */
static void submit_run(struct sqk_http *h, struct http_chunk **c, unsigned n, uint64_t part,
		       bool demand)
{
	while (n) {
		unsigned take = 0;
		uint64_t bytes = 0;
		struct http_job *j;

		while (take < n && (take == 0 || bytes + c[take]->len <= part))
			bytes += c[take++]->len;
		j = sqk_http_job_new(h, c[0]->k * h->csize, (size_t)bytes);
		if (j)
			j->ch = malloc(take * sizeof(*j->ch));
		if (j && j->ch) {
			memcpy(j->ch, c, take * sizeof(*c));
			j->nch = take;
			j->k0 = c[0]->k;
			j->demand = demand;
			if (sqk_http_submit(h, j) == 0)
				goto next;
		}
		sqk_http_job_free(j);
		for (unsigned i = 0; i < take; i++) {
			fail_chunk(h, c[i], SQK_ENOMEM);
			unpin(h, c[i]);
		}
next:
		c += take;
		n -= take;
	}
	pthread_cond_broadcast(&h->cv);
}

/* Submits the LOADING chunks of list[0..n) (ascending) as coalesced runs. mu held. */
static void submit_missing(struct sqk_http *h, struct http_chunk **list, unsigned n, uint64_t part,
			   bool demand)
{
	unsigned i = 0;

	while (i < n) {
		unsigned e = i + 1;

		while (e < n && list[e]->k == list[e - 1]->k + 1)
			e++;
		submit_run(h, list + i, e - i, part, demand);
		i = e;
	}
}

enum { DISK_MISS, DISK_HIT, DISK_LATER };

/* Takes chunk c (LOADING, owned by the caller) from the disk cache: DISK_HIT when found and
 * valid; DISK_LATER when found but its digest group is not in yet (checked when read). */
static int from_disk(struct sqk_http *h, struct http_chunk *c)
{
	if (!h->dc)
		return DISK_MISS;
	if (sqk_dcache_get(h->dc, c->k, c->data, c->len) == 0) {
		int rc = h->has_integ ? sqk_integ_check_chunk(&h->integ, c->k, c->data, c->len) : 0;

		if (rc == 0 || rc == SQK_ENOENT) {
			atomic_fetch_add(&h->n_disk_hits, 1);
			return rc ? DISK_LATER : DISK_HIT;
		}
	}
	atomic_fetch_add(&h->n_disk_misses, 1);
	return DISK_MISS;
}

/* Resolves the chunks the caller created (own[0..n), LOADING): disk cache, then requests.
 * Called without mu. */
static void load_owned(struct sqk_http *h, struct http_chunk **own, unsigned n, uint64_t part,
		       bool demand)
{
	unsigned i, miss = 0;
	int hit[n ? n : 1];

	for (i = 0; i < n; i++)
		hit[i] = from_disk(h, own[i]);
	pthread_mutex_lock(&h->mu);
	for (i = 0; i < n; i++) {
		if (hit[i] != DISK_MISS) {
			own[i]->state = hit[i] == DISK_HIT ? CH_READY : CH_FETCHED;
			own[i]->disk = hit[i] == DISK_LATER;
			unpin(h, own[i]);
		} else {
			own[miss++] = own[i]; /* the caller's pin passes to the job */
		}
	}
	if (h->cancelled) {
		for (i = 0; i < miss; i++) {
			fail_chunk(h, own[i], SQK_EINTR);
			unpin(h, own[i]);
		}
		miss = 0;
	}
	submit_missing(h, own, miss, part, demand);
	pthread_cond_broadcast(&h->cv);
	pthread_mutex_unlock(&h->mu);
}

/* check_fetched: the bytes of a chunk taken from the disk cache are wrong; fetch it. */
#define REFETCH 1

/* Checks a fetched chunk and keeps it on disk. With a digest tree its group comes first: loaded
 * (waited for) when wait_group, else SQK_ENOENT while it is not in. */
static int check_fetched(struct sqk_http *h, struct http_chunk *c, bool wait_group)
{
	if (uses_groups(h)) {
		uint64_t g = sqk_integ_group_of(&h->integ, c->k);
		int rc = sqk_integ_group_loaded(&h->integ, g) ? 0
			 : wait_group			      ? group_need(h, g)
							      : SQK_ENOENT;

		if (rc)
			return rc;
	}
	if (h->has_integ && !h->o.raw &&
	    sqk_integ_check_chunk(&h->integ, c->k, c->data, c->len) != 0) {
		uint64_t s = c->k * h->csize;

		if (c->disk) {
			if (h->dc)
				sqk_dcache_drop(h->dc, c->k);
			return REFETCH;
		}

		atomic_fetch_add(&h->n_corrupt, 1);
		sqk_http_logf(h, "%s: bytes %llu-%llu (chunk %llu) do not match their SHA-256 digest",
			      h->name, (unsigned long long)s, (unsigned long long)(s + c->len - 1),
			      (unsigned long long)c->k);
		return SQK_ECORRUPT;
	}
	if (h->dc && !c->disk)
		sqk_dcache_put(h->dc, c->k, c->data, c->len);
	return 0;
}

/* Waits until c is READY (verifying it when it arrived unchecked). mu held. */
static int wait_chunk(struct sqk_http *h, struct http_chunk *c)
{
	for (;;) {
		int rc;

		if (c->state == CH_READY)
			return 0;
		if (c->state == CH_FAILED)
			return c->err;
		if (c->state == CH_FETCHED) {
			c->state = CH_VERIFYING;
			pthread_mutex_unlock(&h->mu);
			rc = check_fetched(h, c, true);
			pthread_mutex_lock(&h->mu);
			if (rc == REFETCH) { /* the disk cache had it wrong: from the server */
				c->disk = false;
				c->state = CH_LOADING;
				c->pins++; /* the job's */
				submit_run(h, &c, 1, RUN_MAX, true);
				continue;
			}
			if (rc)
				fail_chunk(h, c, rc);
			else
				c->state = CH_READY;
			pthread_cond_broadcast(&h->cv);
			continue;
		}
		if (h->cancelled)
			return SQK_EINTR;
		pthread_cond_wait(&h->cv, &h->mu);
	}
}

/* ---- readahead ---- */

/* The furthest a read may start and still continue stream t. */
static uint64_t stream_reach(const struct http_stream *t)
{
	return (t->ra_end > t->next ? t->ra_end : t->next) + RA_SLACK;
}

/* Whether [off, end) continues the stream the reader named; returns the byte range to fetch
 * ahead (mu held). Without a stream nothing is fetched ahead: what is read is what is fetched.
 * A stream's window grows from RA_MIN, doubling up to RA_MAX, and never passes its limit (the
 * end of the file, or of the image for a walk through it in its own order). The streams of a
 * walk are told apart by position: a read continues one that it follows within RA_SLACK (the
 * data blocks, and each group of fragment blocks, are read in order). */
static void plan_ahead(struct sqk_http *h, uint64_t off, uint64_t end,
		       const struct sqk_io_ahead *ra, uint64_t *ra0, uint64_t *ra1)
{
	struct http_stream *s = NULL, *old = &h->streams[0];
	uint64_t limit;
	unsigned i;

	*ra0 = *ra1 = 0;
	if (!ra || !ra->stream)
		return;
	limit = ra->limit < h->covered ? ra->limit : h->covered;
	for (i = 0; i < sizeof(h->streams) / sizeof(h->streams[0]); i++) {
		struct http_stream *t = &h->streams[i];
		if (t->stamp && t->id == ra->stream &&
		    (ra->stream != SQK_IO_AHEAD_WALK ||
		     (off + h->csize >= t->next && off <= stream_reach(t)))) {
			s = t;
			break;
		}
		if (t->stamp < old->stamp)
			old = t;
	}
	if (s && off > stream_reach(s))
		s->stamp = 0; /* jumped far ahead: a new stream with the same id */
	if (!s || !s->stamp) {
		s = s ? s : old;
		*s = (struct http_stream){ .id = ra->stream, .got = end - off, .next = end,
					   .ra_end = end, .window = 0, .stamp = ++h->stamp };
		return;
	}
	s->stamp = ++h->stamp;
	s->got += end - off;
	if (end > s->next)
		s->next = end;
	if (s->got < RA_START || s->got < 2 * (uint64_t)h->csize)
		return; /* not a stream yet */
	s->window = s->window ? (s->window * 2 > RA_MAX ? RA_MAX : s->window * 2)
			      : RA_MIN;
	if (s->ra_end < s->next)
		s->ra_end = s->next;
	if (s->ra_end - s->next >= s->window / 2 || s->ra_end >= limit)
		return;
	*ra0 = s->ra_end;
	*ra1 = s->next + s->window < limit ? s->next + s->window : limit;
	s->ra_end = *ra1;
}

/* Fetches the chunks of [ra0, ra1) not yet present, in parallel parts of at most part_max
 * bytes (queued in order, `connections` of them at once). Without mu. */
static void fetch_ahead(struct sqk_http *h, uint64_t ra0, uint64_t ra1, uint64_t part_max)
{
	uint64_t k0 = ra0 / h->csize, k1 = (ra1 + h->csize - 1) / h->csize, k;
	uint64_t part = (ra1 - ra0) / h->conns < part_max ? (ra1 - ra0) / h->conns : part_max;
	struct http_chunk **own;
	unsigned n = 0;

	if (ra1 <= ra0)
		return;
	own = malloc((size_t)(k1 - k0) * sizeof(*own));
	if (!own)
		return;
	pthread_mutex_lock(&h->mu);
	for (k = k0; k < k1 && !h->cancelled; k++) {
		if (find(h, k))
			continue;
		own[n] = chunk_new(h, k); /* its one pin is the loader's */
		if (!own[n])
			break;
		n++;
	}
	pthread_mutex_unlock(&h->mu);
	if (n)
		kick_groups(h, own[0]->k, own[n - 1]->k);
	load_owned(h, own, n, part < PART_MIN ? PART_MIN : part, false);
	free(own);
}

/* ---- reads ---- */

/* Pins the chunks k0..k1 into pins[], creating the absent ones (listed in own[]). mu held. */
static int pin_range(struct sqk_http *h, uint64_t k0, unsigned n, struct http_chunk **pins,
		     struct http_chunk **own, unsigned *nown)
{
	unsigned i;

	*nown = 0;
	for (i = 0; i < n; i++) {
		struct http_chunk *c = find(h, k0 + i);

		if (c) {
			c->pins++;
			lru_remove(h, c);
			if (c->state == CH_LOADING)
				sqk_http_promote(h, c->k);
		} else {
			c = chunk_new(h, k0 + i);
			if (!c) {
				while (i--)
					unpin(h, pins[i]);
				return SQK_ENOMEM;
			}
			c->pins++; /* one for the reader, one passed to the loader */
			own[(*nown)++] = c;
		}
		pins[i] = c;
	}
	return 0;
}

static void copy_out(struct sqk_http *h, struct http_chunk **pins, unsigned n, uint64_t off,
		     uint8_t *buf, size_t len)
{
	unsigned i;

	for (i = 0; i < n && len; i++) {
		uint64_t cs = pins[i]->k * h->csize;
		size_t at = off > cs ? (size_t)(off - cs) : 0, take = pins[i]->len - at;

		if (take > len)
			take = len;
		if (pins[i]->net && !atomic_exchange(&pins[i]->used, true))
			atomic_fetch_add(&h->n_used, pins[i]->len);
		memcpy(buf, pins[i]->data + at, take);
		buf += take;
		len -= take;
		off += take;
	}
}

/* Reads [off, off + len) below `covered` through the chunks. */
static int read_chunks(struct sqk_http *h, uint64_t off, uint8_t *buf, size_t len,
		       const struct sqk_io_ahead *ahead)
{
	uint64_t k0 = off / h->csize, k1 = (off + len - 1) / h->csize, ra0 = 0, ra1 = 0;
	unsigned n = (unsigned)(k1 - k0 + 1), nown = 0, i;
	struct http_chunk **pins = malloc(2 * (size_t)n * sizeof(*pins)), **own = pins + n;
	int rc;

	if (!pins)
		return SQK_ENOMEM;
	pthread_mutex_lock(&h->mu);
	rc = h->cancelled ? SQK_EINTR : pin_range(h, k0, n, pins, own, &nown);
	if (!rc)
		plan_ahead(h, off, off + len, ahead, &ra0, &ra1);
	pthread_mutex_unlock(&h->mu);
	if (rc) {
		free(pins);
		return rc;
	}
	kick_groups(h, k0, k1); /* their digests, if not in yet, come while the chunks do */
	load_owned(h, own, nown, len / h->conns > PART_MIN ? len / h->conns : RUN_MAX, true);
	fetch_ahead(h, ra0, ra1, UINT64_MAX);
	pthread_mutex_lock(&h->mu);
	for (i = 0; i < n && !rc; i++)
		rc = wait_chunk(h, pins[i]);
	pthread_mutex_unlock(&h->mu);
	if (!rc)
		copy_out(h, pins, n, off, buf, len);
	pthread_mutex_lock(&h->mu);
	for (i = 0; i < n; i++)
		unpin(h, pins[i]);
	pthread_mutex_unlock(&h->mu);
	free(pins);
	return rc;
}

static int http_read_ahead(struct sqk_io *io, uint64_t off, void *buf, size_t len,
			   const struct sqk_io_ahead *ahead)
{
	struct sqk_http *h = (struct sqk_http *)io;
	uint8_t *p = buf;

	if (off > h->size || len > h->size - off)
		return SQK_EBOUNDS;
	if (len == 0)
		return 0;
	if (off + len > h->tail_at) { /* the integrity data read at open */
		uint64_t s = off > h->tail_at ? off : h->tail_at;

		memcpy(p + (s - off), h->tail + (s - h->tail_at), (size_t)(off + len - s));
		len = (size_t)(s - off);
		if (!len)
			return 0;
	}
	if (off + len > h->covered) { /* a tree's chunk digests: by group */
		uint64_t s = off > h->covered ? off : h->covered;
		int rc = read_digest_area(h, s, p + (s - off), (size_t)(off + len - s));

		len = (size_t)(s - off);
		if (rc || !len)
			return rc;
	}
	return read_chunks(h, off, p, len, ahead);
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
	*size = ((struct sqk_http *)io)->size;
	return 0;
}

static int http_sync(struct sqk_io *io)
{
	return 0;
}

/* Chunks fetched ahead and never read are checked and kept on disk at close, so the next open
 * finds them (a failed check only drops the chunk). */
static void store_unread(struct sqk_http *h)
{
	size_t i;

	if (!h->dc)
		return;
	for (i = 0; i < h->tab_size; i++) {
		struct http_chunk *c;

		for (c = h->tab[i]; c; c = c->hnext) {
			if (c->state == CH_FETCHED && check_fetched(h, c, false) == 0)
				c->state = CH_READY; /* no new request now: not when the group is out */
		}
	}
}

static void http_destroy(struct sqk_io *io)
{
	struct sqk_http *h = (struct sqk_http *)io;
	size_t i;

	sqk_http_thread_stop(h);
	if (h->tab && !h->cancelled)
		store_unread(h);
	for (i = 0; h->tab && i < h->tab_size; i++) {
		while (h->tab[i]) {
			struct http_chunk *c = h->tab[i];

			h->tab[i] = c->hnext;
			chunk_free(h, c);
		}
	}
	free(h->tab);
	for (uint64_t g = 0; h->groups && g < h->integ.t.ngroups; g++)
		sqk_http_job_free(h->groups[g].job); /* done: the thread is stopped */
	free(h->groups);
	if (h->multi)
		curl_multi_cleanup(h->multi);
	curl_slist_free_all(h->hdrs);
	sqk_dcache_close(h->dc);
	sqk_integ_free(&h->integ);
	free(h->tail);
	free(h->url);
	free(h->name);
	free(h->ca_file);
	sqk_s3_free(h->s3);
	pthread_mutex_destroy(&h->mu);
	pthread_cond_destroy(&h->cv);
	free(h);
}

static const struct sqk_io_ops http_ops = {
	.read_at = http_read_at,
	.write_at = http_write_at,
	.get_size = http_get_size,
	.sync = http_sync,
	.destroy = http_destroy,
	.read_ahead = http_read_ahead,
};

/* The part of [off, off + len) that prefetching may take: inside the chunk grid and at most
 * half the memory cache. False when nothing is left. */
static bool prefetch_clip(const struct sqk_http *h, uint64_t off, uint64_t *len)
{
	if (off >= h->covered || *len == 0)
		return false;
	if (*len > h->covered - off)
		*len = h->covered - off;
	if (*len > h->mem_limit / 2)
		*len = h->mem_limit / 2;
	return true;
}

/* Borrows io. */
void sqk_io_http_prefetch(struct sqk_io *io, uint64_t off, uint64_t len)
{
	struct sqk_http *h = (struct sqk_http *)io;
	uint8_t *tmp;

	if (!sqk_io_is_http(io) || !prefetch_clip(h, off, &len))
		return;
	tmp = malloc((size_t)len);
	if (tmp)
		read_chunks(h, off, tmp, (size_t)len, NULL);
	free(tmp);
}

/* Borrows io. */
void sqk_io_http_prefetch_async(struct sqk_io *io, uint64_t off, uint64_t len)
{
	struct sqk_http *h = (struct sqk_http *)io;

	if (sqk_io_is_http(io) && prefetch_clip(h, off, &len))
		fetch_ahead(h, off, off + len, PREFETCH_PART);
}

/* Borrows io. */
void sqk_io_http_quiesce(struct sqk_io *io)
{
	struct sqk_http *h = (struct sqk_http *)io;

	if (!sqk_io_is_http(io))
		return;
	sqk_http_thread_stop(h);
	pthread_mutex_lock(&h->mu);
	h->stopping = false;
	pthread_mutex_unlock(&h->mu);
}

/* Borrows io. */
void sqk_io_http_cancel(struct sqk_io *io)
{
	struct sqk_http *h = (struct sqk_http *)io;

	if (!sqk_io_is_http(io))
		return;
	pthread_mutex_lock(&h->mu);
	h->cancelled = true;
	pthread_cond_broadcast(&h->cv);
	pthread_mutex_unlock(&h->mu);
	curl_multi_wakeup(h->multi);
}

/* Borrows io; fills the caller's *out. */
int sqk_io_http_stats(struct sqk_io *io, struct sqk_http_stats *out)
{
	struct sqk_http *h = (struct sqk_http *)io;

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
	return 0;
}

/* Borrows io. */
bool sqk_io_http_verified(const struct sqk_io *io)
{
	const struct sqk_http *h = (const struct sqk_http *)io;

	return sqk_io_is_http(io) && h->has_integ && !h->o.raw;
}

/* Borrowed from io. */
const char *sqk_io_http_name(const struct sqk_io *io)
{
	return sqk_io_is_http(io) ? ((const struct sqk_http *)io)->name : NULL;
}

/* ---- open ---- */

/* A read-only view of [at, at + len) of the remote file, for loading the integrity data. */
struct window_io {
	struct sqk_io base;
	const uint8_t *data;
	uint64_t at;
	size_t len;
};

static int win_read(struct sqk_io *io, uint64_t off, void *buf, size_t len)
{
	struct window_io *w = (struct window_io *)io;

	if (off < w->at || off - w->at > w->len || len > w->len - (off - w->at))
		return SQK_EBOUNDS;
	memcpy(buf, w->data + (off - w->at), len);
	return 0;
}

static int win_get_size(struct sqk_io *io, uint64_t *size)
{
	const struct window_io *w = (const struct window_io *)io;

	*size = w->at + w->len;
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
static int fetch(struct sqk_http *h, uint64_t off, size_t len, bool probe, uint8_t **out,
		 struct http_job **jout)
{
	struct http_job *j = sqk_http_job_new(h, off, len);
	int rc;

	if (!j)
		return SQK_ENOMEM;
	j->probe = probe;
	rc = sqk_http_fetch_flat(h, j);
	if (!rc) {
		*out = j->flat;
		j->flat = NULL;
	}
	if (!rc && jout)
		*jout = j;
	else
		sqk_http_job_free(j);
	return rc;
}

/* The first request: the image's size and validators, and its first bytes (*buf, *len). */
static int probe(struct sqk_http *h, uint8_t **buf, size_t *len)
{
	struct http_job *j = NULL;
	int rc = fetch(h, 0, PROBE_LEN, true, buf, &j);

	if (rc)
		return rc;
	h->size = j->cr_total;
	*len = j->len;
	memcpy(h->etag, j->etag, sizeof(h->etag));
	memcpy(h->lastmod, j->lastmod, sizeof(h->lastmod));
	sqk_http_job_free(j);
	return 0;
}

/* Keeps the whole chunks inside [at, at + len), fetched at open, whose bytes buf holds
 * (unchecked: verified on first use). */
static void seed(struct sqk_http *h, uint64_t at, const uint8_t *buf, size_t len)
{
	uint64_t k;

	pthread_mutex_lock(&h->mu);
	for (k = (at + h->csize - 1) / h->csize;
	     k * h->csize < h->covered && k * h->csize + chunk_len(h, k) <= at + len; k++) {
		struct http_chunk *c = find(h, k) ? NULL : chunk_new(h, k);

		if (!c)
			break;
		memcpy(c->data, buf + (k * h->csize - at), c->len);
		fetched(h, c);
		unpin(h, c);
	}
	pthread_mutex_unlock(&h->mu);
}

/* Where the integrity data read at open starts, from the trailer at the end of buf (the
 * file's last bytes): the digest array (flat), the group digests (a tree: the chunk digests
 * come by group); `at` when there is none, or it is not believable (sqk_integ_load_lazy then
 * says which), or buf holds it already. */
static uint64_t integ_start(const struct sqk_http *h, const uint8_t *buf, size_t len, uint64_t at)
{
	struct sqk_integ_trailer t;
	uint64_t from, per, most;

	if (len < SQK_INTEG_TRAILER_SIZE ||
	    sqk_integ_trailer_decode(buf + len - SQK_INTEG_TRAILER_SIZE, &t))
		return at;
	from = sqk_integ_lazy_start(&t);
	/* at most a digest for every smallest chunk (of a group of the smallest size) */
	per = SQK_INTEG_CHUNK_MIN * (t.version == SQK_INTEG_VERSION_TREE ? SQK_INTEG_GROUP_MIN : 1);
	most = SQK_INTEG_DIGEST_SIZE * (h->size / per + 1) + 8192 + SQK_INTEG_TRAILER_SIZE;
	if (from >= at || from >= h->size || h->size - from > most)
		return at;
	return from;
}

/* A tree: the groups of chunk digests wholly inside what the open fetched ([at, at + len) in
 * buf) are taken (checked against their group digests) without a request of their own. */
static void take_fetched_groups(struct sqk_http *h, const uint8_t *buf, uint64_t at, size_t len)
{
	for (uint64_t g = 0; g < h->integ.t.ngroups; g++) {
		uint64_t k0, k1, s, e;

		sqk_integ_group_range(&h->integ, g, &k0, &k1, &s, &e);
		if (s >= at && e <= at + len &&
		    sqk_integ_group_accept(&h->integ, g, buf + (s - at), (size_t)(e - s)) == 0)
			h->groups[g].state = GR_READY;
	}
}

/* Loads the integrity data from the tail of the file (absent: the grid is 64 KiB chunks). */
static int load_tail(struct sqk_http *h)
{
	/* from a chunk boundary (of the 64 KiB grid), so the chunks it holds can be kept */
	uint64_t at = h->size > TAIL_LEN ? (h->size - TAIL_LEN) / NOINTEG_CHUNK * NOINTEG_CHUNK : 0;
	uint64_t from;
	struct window_io w = { .base.ops = &win_ops };
	uint8_t *buf = NULL;
	int rc = fetch(h, at, (size_t)(h->size - at), false, &buf, NULL);

	from = rc ? at : integ_start(h, buf, (size_t)(h->size - at), at);
	if (from < at) { /* more digests than the first request brought */
		free(buf);
		buf = NULL;
		rc = fetch(h, from, (size_t)(h->size - from), false, &buf, NULL);
		at = from;
	}
	w.data = buf;
	w.at = at;
	w.len = (size_t)(h->size - at);
	if (!rc)
		rc = sqk_integ_load_lazy(&w.base, h->size, &h->integ);
	if (rc == 0) {
		h->has_integ = true;
		h->covered = h->integ.t.covered;
		h->csize = h->integ.t.chunk_size;
		h->tail_at = sqk_integ_lazy_start(&h->integ.t);
		h->tail = malloc((size_t)(h->size - h->tail_at));
		if (h->tail && h->tail_at >= w.at)
			memcpy(h->tail, buf + (h->tail_at - w.at), (size_t)(h->size - h->tail_at));
		else
			rc = h->tail ? SQK_ECORRUPT : SQK_ENOMEM;
		if (!rc && h->integ.lazy &&
		    !(h->groups = calloc((size_t)h->integ.t.ngroups, sizeof(*h->groups))))
			rc = SQK_ENOMEM;
		if (!rc && h->groups)
			take_fetched_groups(h, buf, w.at, w.len);
	} else if (rc == SQK_ENOENT) {
		rc = 0;
		h->covered = h->size;
		h->tail_at = h->size;
		h->csize = NOINTEG_CHUNK;
	} else if (rc == SQK_ECORRUPT || rc == SQK_EBOUNDS) {
		sqk_http_logf(h, "%s: the integrity data at the end of the image is not valid",
			      h->name);
		rc = SQK_ECORRUPT;
	}
	if (rc == 0 && w.at < h->covered) /* the last chunks: often the metadata tables */
		seed(h, w.at, buf,
		     (size_t)((h->covered < w.at + w.len ? h->covered : w.at + w.len) - w.at));
	free(buf);
	return rc;
}

static int check_root(struct sqk_http *h)
{
	char want[2 * SQK_INTEG_DIGEST_SIZE + 1], got[2 * SQK_INTEG_DIGEST_SIZE + 1];

	if (!h->o.root_hash)
		return 0;
	if (!h->has_integ) {
		sqk_http_logf(h, "%s: the image has no integrity data: its root digest cannot be "
			      "checked", h->name);
		return SQK_ECORRUPT;
	}
	if (!CRYPTO_memcmp(h->o.root_hash, h->integ.t.root, SQK_INTEG_DIGEST_SIZE))
		return 0;
	sqk_integ_hex(h->o.root_hash, want);
	sqk_integ_hex(h->integ.t.root, got);
	sqk_http_logf(h, "%s: root digest %s does not match the pinned %s", h->name, got, want);
	return SQK_ECORRUPT;
}

/* The disk cache of this version of the image: off when asked, when the default folder is
 * unknown, or when nothing tells versions apart (no validators, no root digest). */
static int open_cache(struct sqk_http *h)
{
	char dir[4096], hex[2 * SQK_INTEG_DIGEST_SIZE + 1] = "", key[33], *id;
	uint8_t d[SQK_INTEG_DIGEST_SIZE];
	int rc, n;

	if (h->o.raw || (h->o.cache_size_set && h->o.cache_size == 0))
		return 0;
	if (!h->etag[0] && !h->lastmod[0] && !h->has_integ) {
		sqk_http_logf(h, "%s: no ETag, Last-Modified or integrity data: not cached on disk",
			      h->name);
		return 0;
	}
	if (h->o.cache_dir)
		snprintf(dir, sizeof(dir), "%s", h->o.cache_dir);
	else if (sqk_dcache_default_dir(dir, sizeof(dir)))
		return 0;
	if (h->has_integ)
		sqk_integ_hex(h->integ.t.root, hex);
	/* s3: the resolved URL, so one key on two endpoints is two images */
	n = asprintf(&id, "%s\n%s\n%s\n%llu\n%s", h->s3 ? h->url : h->name, h->etag, h->lastmod,
		     (unsigned long long)h->size, hex);
	if (n < 0)
		return SQK_ENOMEM;
	sqk_sha256(id, (size_t)n, d);
	free(id);
	sqk_integ_hex(d, hex);
	memcpy(key, hex, 32);
	key[32] = '\0';
	rc = sqk_dcache_open(dir, key, h->o.cache_size_set ? h->o.cache_size
							   : SQK_HTTP_CACHE_SIZE_DEFAULT, &h->dc);
	if (rc)
		sqk_http_logf(h, "cannot use the cache folder %s: %s; not cached on disk", dir,
			      sqk_strerror(rc));
	return 0;
}

static void curl_init_once(void)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
}

static int setup(struct sqk_http *h, const char *url, const struct sqk_http_opts *o)
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
	h->mem_limit = h->o.mem_bytes ? h->o.mem_bytes : DEFAULT_MEM;
	h->ca_file = h->o.ca_file ? strdup(h->o.ca_file) : NULL;
	h->o.ca_file = NULL;
	if (o && o->ca_file && !h->ca_file)
		return SQK_ENOMEM;
	if (sqk_s3_is_url(url)) {
		int rc = sqk_http_s3_init(h, url);

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
		struct curl_slist *l;

		if (sqk_http_header_check(o->headers[i]))
			return SQK_EINVAL;
		l = curl_slist_append(h->hdrs, o->headers[i]);
		if (!l)
			return SQK_ENOMEM;
		h->hdrs = l;
	}
	return 0;
}

/* Borrows url and opts; caller owns *out. */
int sqk_io_http_create(const char *url, const struct sqk_http_opts *opts, struct sqk_io **out)
{
	struct sqk_http *h;
	uint8_t *head = NULL;
	size_t head_len = 0;
	int rc;

	*out = NULL;
	if (!sqk_is_url(url))
		return SQK_EINVAL;
	h = calloc(1, sizeof(*h));
	if (!h)
		return SQK_ENOMEM;
	h->base.ops = &http_ops;
	pthread_mutex_init(&h->mu, NULL);
	pthread_cond_init(&h->cv, NULL);
	rc = setup(h, url, opts);
	h->csize = PROBE_LEN;
	if (!rc)
		rc = probe(h, &head, &head_len);
	if (!rc && h->size == 0)
		rc = SQK_ECORRUPT;
	if (!rc)
		rc = load_tail(h);
	if (!rc)
		seed(h, 0, head, head_len);
	free(head);
	if (!rc) {
		h->o.root_hash = opts ? opts->root_hash : NULL;
		rc = check_root(h);
		h->o.root_hash = NULL;
	}
	if (!rc)
		rc = open_cache(h);
	if (rc) {
		http_destroy(&h->base);
		return rc;
	}
	*out = &h->base;
	return 0;
}
