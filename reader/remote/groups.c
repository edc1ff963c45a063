/* SPDX-License-Identifier: BSD-2-Clause */
/* Groups of chunk digests of an image with a digest tree: only the group digests are read at
 * open; each group of chunk digests is fetched (or taken from the disk cache) when a chunk it
 * covers is first checked, started as soon as the chunk is asked for so both requests run at
 * once, checked against its group digest and kept. */
#include <stdlib.h>
#include <string.h>

#include "sqk/error.h"
#include "http_internal.h"

/* Disk-cache keys of groups: above every chunk number (chunks number less than 2^52). */
#define GROUP_KEY DCACHE_SOLO

/* Whether chunk checks need the digest groups (a digest tree, checked reads). */
bool http_uses_groups(const struct http *h)
{
	return h->groups && !h->o.raw;
}

/* Group g's digests from the disk cache, checked against its group digest (a wrong entry is
 * removed): 0 when accepted. Without mu. */
static int group_from_disk(struct http *h, uint64_t g)
{
	uint64_t k0, k1, s, e;
	uint8_t *buf;
	int rc = SQK_ENOENT;

	if (!h->dc)
		return SQK_ENOENT;
	integ_group_range(&h->integ, g, &k0, &k1, &s, &e);
	buf = malloc((size_t)(e - s));
	if (!buf)
		return SQK_ENOMEM;
	if (dcache_get(h->dc, GROUP_KEY + g, buf, (size_t)(e - s)) == 0) {
		rc = integ_group_accept(&h->integ, g, buf, (size_t)(e - s));
		if (rc == SQK_ECORRUPT)
			dcache_drop(h->dc, GROUP_KEY + g);
	}
	free(buf);
	return rc;
}

/* Queues the request for group g's digests (mu held): NULL when it cannot be queued. */
static struct http_job *group_submit(struct http *h, uint64_t g)
{
	uint64_t k0, k1, s, e;
	struct http_job *j;

	integ_group_range(&h->integ, g, &k0, &k1, &s, &e);
	j = http_job_new(h, s, (size_t)(e - s));
	if (j)
		j->flat = malloc(j->len);
	if (j && j->flat) {
		j->demand = true; /* a chunk check waits on it */
		if (http_submit(h, j) == 0)
			return j;
	}
	http_job_free(j);
	return NULL;
}

/* Starts loading group g unless it is known or on its way: from the disk cache, else a request
 * that runs while the caller's chunks are fetched. 0, or why it could not start. Without mu. */
static int group_kick(struct http *h, uint64_t g)
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
void http_kick_groups(struct http *h, uint64_t k0, uint64_t k1)
{
	if (!http_uses_groups(h))
		return;
	for (uint64_t g = integ_group_of(&h->integ, k0);
	     g <= integ_group_of(&h->integ, k1); g++)
		if (!integ_group_loaded(&h->integ, g))
			group_kick(h, g);
}

/* Checks what the server sent for group g (the finished request j, freed here) and keeps it,
 * in memory and on disk. Without mu. */
static int group_take(struct http *h, uint64_t g, struct http_job *j)
{
	int rc = j->rc;

	if (rc == 0) {
		atomic_fetch_add(&h->n_groups, 1);
		rc = integ_group_accept(&h->integ, g, j->flat, j->len);
		if (rc == SQK_ECORRUPT) {
			atomic_fetch_add(&h->n_corrupt, 1);
			http_logf(h,
				      "%s: digest group %llu (bytes %llu-%llu) does not match its "
				      "group digest",
				      h->name, (unsigned long long)g, (unsigned long long)j->off,
				      (unsigned long long)(j->off + j->len - 1));
		} else if (rc == 0 && h->dc) {
			dcache_put(h->dc, GROUP_KEY + g, j->flat, j->len);
		}
	} else if (rc != SQK_EINTR) {
		/* the transfer logged why (its URL, bytes and HTTP status); this names the group */
		http_logf(h, "%s: digest group %llu (bytes %llu-%llu) could not be fetched: %s",
			      h->name, (unsigned long long)g, (unsigned long long)j->off,
			      (unsigned long long)(j->off + j->len - 1), sqk_strerror(rc));
		rc = SQK_EIO;
	}
	http_job_free(j);
	return rc;
}

/* Waits until group g's digests are known, loading them when nobody does: 0, or the error of
 * the load this call waited for (SQK_ECORRUPT, logged; SQK_EIO; SQK_EINTR). A failed group is
 * ABSENT again: the next read tries again. Without mu. */
int http_group_need(struct http *h, uint64_t g)
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
int http_read_digest_area(struct http *h, uint64_t off, uint8_t *buf, size_t len)
{
	if (h->o.raw || !h->groups) {
		uint8_t *tmp = NULL;
		int rc = http_fetch(h, off, len, false, &tmp, NULL);

		if (!rc)
			memcpy(buf, tmp, len);
		free(tmp);
		return rc;
	}
	while (len) {
		uint64_t g = (off - h->covered) / SQK_INTEG_DIGEST_SIZE / h->integ.t.group_chunks;
		uint64_t k0, k1, s, e;
		size_t take;
		int rc = http_group_need(h, g);

		if (rc)
			return rc;
		integ_group_range(&h->integ, g, &k0, &k1, &s, &e);
		take = e - off < len ? (size_t)(e - off) : len;
		memcpy(buf, integ_group_digests(&h->integ, g) + (off - s), take);
		buf += take;
		off += take;
		len -= take;
	}
	return 0;
}
