/* SPDX-License-Identifier: BSD-2-Clause */
/* Fetching ahead of reads. A read fetches what it reads; only a read whose caller names its
 * stream (sqk_io_ahead: a file read sequentially, or a walk through the image) fetches ahead, in
 * growing windows cut into parts that run on parallel connections, never past the limit the
 * caller gives. Prefetching: given ranges (the metadata tables, the prefetch hint's ranges) in
 * parts, waited for or not. */
#include <stdlib.h>

#include "http_internal.h"

#define RA_MIN ((uint64_t)2 << 20)
#define RA_MAX ((uint64_t)64 << 20)
#define RA_START ((uint64_t)256 << 10) /* a stream this long is read ahead */
#define RA_SLACK ((uint64_t)8 << 20) /* a read this far past a stream still continues it */
/* Parts of a prefetch (the hint's ranges, in the order a start reads them): small enough that
 * the first bytes arrive first, `connections` parts at a time at full speed. */
#define PREFETCH_PART ((uint64_t)1 << 20)

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
void http_plan_ahead(struct http *h, uint64_t off, uint64_t end,
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
	/* to the end of its unit (the next window starts on the grid), not past the limit */
	*ra1 = (*ra1 + h->unit - 1) / h->unit * h->unit;
	if (*ra1 > limit)
		*ra1 = limit;
	s->ra_end = *ra1;
}

/* Fetches the chunks of [ra0, ra1) not yet present, in parallel parts of at most part_max
 * bytes that never cross a unit of the request grid (queued in order, `connections` of them at
 * once). Without mu. */
void http_fetch_ahead(struct http *h, uint64_t ra0, uint64_t ra1, uint64_t part_max)
{
	uint64_t k0, k1, k, part;
	struct http_chunk **own;
	unsigned n = 0;

	if (ra1 <= ra0)
		return;
	k0 = ra0 / h->csize;
	k1 = (ra1 + h->csize - 1) / h->csize;
	part = (ra1 - ra0) / h->conns < part_max ? (ra1 - ra0) / h->conns : part_max;
	own = malloc((size_t)(k1 - k0) * sizeof(*own));
	if (!own)
		return;
	pthread_mutex_lock(&h->mu);
	for (k = k0; k < k1 && !h->cancelled; k++) {
		if (http_chunk_find(h, k))
			continue;
		own[n] = http_chunk_new(h, k); /* its one pin is the loader's */
		if (!own[n])
			break;
		n++;
	}
	pthread_mutex_unlock(&h->mu);
	if (n)
		http_kick_groups(h, own[0]->k, own[n - 1]->k);
	http_load_owned(h, own, n, part < PART_MIN ? PART_MIN : part, false);
	free(own);
}

uint64_t http_prefetch_max(const struct sqk_io *io)
{
	return ((const struct http *)io)->mem_limit / 2;
}

/* The part of [off, off + len) that prefetching may take: inside the chunk grid and at most
 * http_prefetch_max. False when nothing is left. */
static bool prefetch_clip(const struct http *h, uint64_t off, uint64_t *len)
{
	if (off >= h->covered || *len == 0)
		return false;
	if (*len > h->covered - off)
		*len = h->covered - off;
	if (*len > http_prefetch_max(&h->base))
		*len = http_prefetch_max(&h->base);
	return true;
}

/* Borrows io: its prefetch operation (sqk/io.h). */
void http_prefetch(struct sqk_io *io, uint64_t off, uint64_t len, bool wait)
{
	struct http *h = (struct http *)io;
	uint8_t *tmp;

	if (!sqk_io_is_http(io) || !prefetch_clip(h, off, &len))
		return;
	if (!wait) {
		http_fetch_ahead(h, off, off + len, PREFETCH_PART);
		return;
	}
	tmp = malloc((size_t)len);
	if (tmp)
		http_read_chunks(h, off, tmp, (size_t)len, NULL);
	free(tmp);
}
