/* SPDX-License-Identifier: BSD-2-Clause */
/* The page-cache fill thread (see store.h): a small bounded queue of groups to fill, one thread
 * that reads each group through libsqk (usually from the block cache: the read that queued it
 * has just decompressed it) and stores it, minus the pages of that read, with one notify; and a
 * queue of whole files a tree walk will read next (walk.h), read (decompressed here, on this
 * thread) and stored the same way. */
#define FUSE_USE_VERSION 312

#include "fuse/store.h"

#include <fuse_lowlevel.h>
#include <pthread.h>
#include <stdbool.h>
#include <errno.h>
#include <stdlib.h>
#include <time.h>

#define QCAP 64u     /* groups waiting; more are dropped (the reads still work, uncached) */
#define NPEND 256u   /* groups queued or being stored, by hash: one store per group at a time */
#define PAGE 4096u
#define PCAP 1024u   /* files waiting for a push; more are refused (read through requests) */
#define PUSH_TRIES 20 /* a file listed just now may not be known to the kernel yet: ENOENT */

struct fill {
	uint64_t id;
	struct sqk_inode file;
	uint64_t start, end;      /* the group, clipped to the file */
	uint64_t hole, hole_end;  /* the pages of the read that queued it: already cached */
	uint64_t key;
};

struct store {
	struct sqk_image *img;
	struct fuse_session *se;
	uint64_t group;           /* bytes per group: blocks * block size */
	uint64_t block;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct fill q[QCAP];
	unsigned head, count;
	uint64_t pending[NPEND];
	bool stop;
	bool joined;              /* the thread has been joined (only store_stop touches it) */
	uint8_t *buf;
	uint64_t fills;           /* groups stored */
	struct walk_push pq[PCAP]; /* files to push, with head and count as q's */
	unsigned phead, pcount;
	uint64_t push_max;        /* the largest push (bytes): pbuf's size */
	uint8_t *pbuf;            /* allocated at the first push */
	uint64_t pushes;          /* files stored whole */
	struct sqk_walk *walk;    /* which pushes are still ahead of the walker; borrowed */
	bool fill_on;             /* fills after small reads (-o fill=N, N > 0) */
	pthread_t th;
};

static int store_range(struct store *s, uint64_t id, uint64_t off, const uint8_t *p,
			uint64_t len)
{
	if (!len)
		return 0;
	struct fuse_bufvec bv = FUSE_BUFVEC_INIT((size_t)len);
	bv.buf[0].mem = (void *)(uintptr_t)p;
	/* -ENOENT (the kernel dropped the inode) and -ENODEV (unmounted) are fine: a fill is
	 * only an optimisation. */
	return fuse_lowlevel_notify_store(s->se, id, (off_t)off, &bv, 0);
}

/* Reads file id whole (verified, as every read) and stores it. A file the walk took from a
 * listing just answered may not be linked by the kernel yet (the reader parses the reply after
 * waking): ENOENT is retried for a moment. */
static void do_push(struct store *s, const struct walk_push *p)
{
	const struct timespec pause = { 0, 50 * 1000 };
	struct sqk_inode file;
	if (!s->pbuf && !(s->pbuf = malloc((size_t)s->push_max)))
		return;
	if (!walk_unread(s->walk, p->id))
		return; /* the walker got there first: the kernel has its pages */
	if (p->len > s->push_max || sqk_inode_get(s->img, p->id - 2, &file) ||
	    file.size != p->len)
		return;
	ssize_t n = sqk_read_ex(s->img, &file, s->pbuf, (size_t)p->len, 0, SQK_READ_ASIDE);
	if (n != (ssize_t)p->len)
		return; /* an error was logged; the reader's own request gets it */
	int rc = store_range(s, p->id, 0, s->pbuf, p->len);
	for (int i = 0; rc == -ENOENT && i < PUSH_TRIES; i++) {
		nanosleep(&pause, NULL);
		rc = store_range(s, p->id, 0, s->pbuf, p->len);
	}
	if (!rc)
		s->pushes++; /* only this thread writes it; read after the join */
}

static void do_fill(struct store *s, const struct fill *f)
{
	ssize_t n = sqk_read_ex(s->img, &f->file, s->buf, (size_t)(f->end - f->start), f->start,
				SQK_READ_ASIDE);
	if (n <= 0)
		return; /* the error was logged by the library; the read that needs it gets EIO */
	uint64_t end = f->start + (uint64_t)n;
	uint64_t hole = f->hole > f->start ? f->hole : f->start;
	uint64_t hole_end = f->hole_end < end ? f->hole_end : end;
	store_range(s, f->id, f->start, s->buf, hole - f->start);
	store_range(s, f->id, hole_end, s->buf + (hole_end - f->start), end - hole_end);
	s->fills++; /* only this thread writes it; read after the join */
}

static void *store_main(void *arg)
{
	struct store *s = arg;
	for (;;) {
		pthread_mutex_lock(&s->mu);
		while (!s->count && !s->pcount && !s->stop)
			pthread_cond_wait(&s->cv, &s->mu);
		if (s->stop) {
			pthread_mutex_unlock(&s->mu);
			return NULL;
		}
		if (!s->count) { /* fills first: a random reader waits on each of its reads */
			struct walk_push p = s->pq[s->phead];
			s->phead = (s->phead + 1) % PCAP;
			s->pcount--;
			pthread_mutex_unlock(&s->mu);
			do_push(s, &p);
			continue;
		}
		struct fill f = s->q[s->head];
		s->head = (s->head + 1) % QCAP;
		s->count--;
		pthread_mutex_unlock(&s->mu);
		do_fill(s, &f);
		pthread_mutex_lock(&s->mu);
		if (s->pending[f.key % NPEND] == f.key)
			s->pending[f.key % NPEND] = 0;
		pthread_mutex_unlock(&s->mu);
	}
}

int store_start(struct sqk_image *img, struct fuse_session *se, unsigned blocks,
		    struct sqk_walk *walk, uint64_t push_max, struct store **out)
{
	struct store *s;
	*out = NULL;
	if (!walk)
		push_max = 0;
	if (!blocks && !push_max)
		return 0;
	s = calloc(1, sizeof(*s));
	if (!s)
		return SQK_ENOMEM;
	s->img = img;
	s->se = se;
	s->block = sqk_image_super(img)->block_size;
	s->group = s->block * (blocks ? blocks : 1);
	s->fill_on = blocks != 0;
	s->push_max = push_max;
	s->walk = walk;
	s->buf = malloc((size_t)s->group);
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->cv, NULL);
	if (!s->buf || pthread_create(&s->th, NULL, store_main, s)) {
		pthread_cond_destroy(&s->cv);
		pthread_mutex_destroy(&s->mu);
		free(s->buf);
		free(s);
		return SQK_ENOMEM;
	}
	*out = s;
	return 0;
}

void store_after_read(struct store *s, uint64_t id, const struct sqk_inode *file,
			  uint64_t off, size_t len)
{
	if (!s || !s->fill_on || len >= s->block || off >= file->size)
		return;
	struct fill f = { .id = id, .file = *file };
	f.start = off / s->group * s->group;
	f.end = (off + len + s->group - 1) / s->group * s->group;
	if (f.end > file->size)
		f.end = file->size;
	if (f.end - f.start > s->group)
		f.end = f.start + s->group; /* a read across two groups fills the first */
	f.hole = off / PAGE * PAGE;
	f.hole_end = (off + len + PAGE - 1) / PAGE * PAGE;
	if (f.hole <= f.start && f.hole_end >= f.end)
		return; /* the read covered the whole group */
	f.key = ((id * 0x9E3779B97F4A7C15ull) ^ (f.start / s->group)) | 1;
	pthread_mutex_lock(&s->mu);
	if (!s->stop && s->count < QCAP && s->pending[f.key % NPEND] != f.key) {
		s->pending[f.key % NPEND] = f.key;
		s->q[(s->head + s->count) % QCAP] = f;
		s->count++;
		pthread_cond_signal(&s->cv);
	}
	pthread_mutex_unlock(&s->mu);
}

size_t store_push(struct store *s, const struct walk_push *p, size_t n)
{
	size_t i = 0;
	if (!s || !s->push_max || !n)
		return 0;
	pthread_mutex_lock(&s->mu);
	for (; i < n && !s->stop && s->pcount < PCAP && p[i].len <= s->push_max; i++)
		s->pq[(s->phead + s->pcount++) % PCAP] = p[i];
	pthread_cond_signal(&s->cv);
	pthread_mutex_unlock(&s->mu);
	return i;
}

uint64_t store_pushes(const struct store *s)
{
	return s && s->joined ? s->pushes : 0;
}

void store_stop(struct store *s)
{
	if (!s || s->joined)
		return;
	pthread_mutex_lock(&s->mu);
	s->stop = true;
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
	pthread_join(s->th, NULL);
	s->joined = true;
}

uint64_t store_destroy(struct store *s)
{
	uint64_t fills;
	if (!s)
		return 0;
	store_stop(s);
	fills = s->fills;
	pthread_cond_destroy(&s->cv);
	pthread_mutex_destroy(&s->mu);
	free(s->buf);
	free(s->pbuf);
	free(s);
	return fills;
}
