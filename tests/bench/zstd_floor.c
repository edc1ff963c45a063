/* SPDX-License-Identifier: BSD-2-Clause */
/* zstd_floor: how far the zstd settings libzstd offers can take a tree's data, measured block
 * by block against sqk's own zstd default, and what a perfect per-block choice among them
 * would reach: the floor behind issue 19's build goals.
 *
 *   zstd_floor [-t EVERY] [-b EVERY] [-s PERCENT] DIR...
 *
 * The trees' regular files (each DIR walked in name order, symlinks not followed) are read once; a
 * file whose content (XXH3-128) was seen before is skipped, as the builder's dedup would. The rest
 * are cut as the builder cuts them: each file's whole 128 KiB blocks go to one stream, its tail
 * (the last partial block) to another, tails packed back to back as fragment blocks pack them.
 * Every EVERY-th 128 KiB chunk of each stream (-t: tails, default 10; -b: whole blocks, default 5)
 * is compressed with sqk's zstd compressor at its default level (the product's code: level 15 with
 * its lowered searchLog, the level-9 rule for near-uniform and peaked blocks) and with each raw
 * libzstd setting of the table below, timed in thread CPU time, the settings interleaved chunk
 * by chunk so that they share the machine's state. A chunk that does not shrink counts as
 * stored (its own length), as in an image.
 *
 * Reported, scaled back by the sampling strides: each setting's bytes and CPU against the
 * default; then what a perfect per-block choice (an oracle knowing every chunk's bytes and CPU
 * at every setting) could reach: for a price lambda (ns a byte) every chunk takes the setting
 * minimising ns + lambda * bytes, which traces the lower convex hull of all per-block choices;
 * between its points the hull is interpolated, so each figure is a lower bound on the CPU of
 * any per-block choice among these settings for that total of bytes. -s PERCENT (default 0.44)
 * names the size to report it at besides the default's.
 *
 * Output lines start with "floor:". Exit status 0, 1 on a read or compressor error, 2 on a
 * usage error. One thread per stream (2 threads). */
#define ZSTD_STATIC_LINKING_ONLY
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>
#include <zstd.h>

#include "common/compressor.h"

#define BLOCK 131072u

/* The raw libzstd settings measured beside sqk's default: level, and searchLog (0: the level's
 * own for a 128 KiB block). */
struct setting {
	const char *name;
	int level;
	int search_log;
};

static const struct setting settings[] = {
	{ "level 9", 9, 0 },       { "level 11", 11, 0 },     { "level 13", 13, 0 },
	{ "15, searchLog 3", 15, 3 }, { "15, searchLog 4", 15, 4 }, { "15, searchLog 5", 15, 5 },
	{ "level 15", 15, 0 },     { "level 16", 16, 0 },     { "level 17", 17, 0 },
	{ "level 19", 19, 0 },     { "level 22", 22, 0 },
};
#define NSET (sizeof(settings) / sizeof(settings[0]))
#define NCOL (NSET + 1) /* column 0: sqk's default */

/* One sampled chunk: bytes and CPU ns per column. */
struct sample {
	uint32_t bytes[NCOL];
	uint64_t ns[NCOL];
};

/* One stream of the tree's data (whole blocks or tails), spooled to an unnamed file. */
struct stream {
	FILE *spool;
	uint64_t len;
	unsigned every;
	struct sample *samples;     /* owned */
	size_t nsamples;
	int err;
};

/* Seen contents: an open-addressing set of XXH3-128 digests. */
struct seen {
	XXH128_hash_t *slot;
	size_t cap, used;
};

static bool is_zero(XXH128_hash_t h) { return h.low64 == 0 && h.high64 == 0; }

/* Adds h; false when it was there already. -1 on no memory. */
static int seen_add(struct seen *s, XXH128_hash_t h)
{
	if (is_zero(h))
		h.low64 = 1; /* 0 marks a free slot */
	if ((s->used + 1) * 2 > s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 4096;
		XXH128_hash_t *slot = calloc(cap, sizeof(*slot));
		if (!slot)
			return -1;
		for (size_t i = 0; i < s->cap; i++) {
			if (is_zero(s->slot[i]))
				continue;
			size_t j = s->slot[i].low64 & (cap - 1);
			while (!is_zero(slot[j]))
				j = (j + 1) & (cap - 1);
			slot[j] = s->slot[i];
		}
		free(s->slot);
		s->slot = slot;
		s->cap = cap;
	}
	size_t j = h.low64 & (s->cap - 1);
	while (!is_zero(s->slot[j])) {
		if (XXH128_isEqual(s->slot[j], h))
			return 0;
		j = (j + 1) & (s->cap - 1);
	}
	s->slot[j] = h;
	s->used++;
	return 1;
}

struct walk {
	struct stream *blocks, *tails;
	struct seen seen;
	uint8_t *buf; /* BLOCK bytes */
	uint64_t files, dups;
};

/* Spools one file's content: whole blocks to w->blocks, the tail to w->tails; takes it back
 * when the content was seen before. 0, or -1 with a message. */
static int take_file(struct walk *w, const char *path, off_t size)
{
	int fd = open(path, O_RDONLY | O_NOFOLLOW);
	if (fd < 0) {
		fprintf(stderr, "zstd_floor: %s: %s\n", path, strerror(errno));
		return -1;
	}
	uint64_t full = (uint64_t)size / BLOCK * BLOCK, at = 0;
	uint64_t b0 = w->blocks->len, t0 = w->tails->len;
	XXH3_state_t *st = XXH3_createState();
	int rc = st ? 0 : -1;
	if (st)
		XXH3_128bits_reset(st);
	while (!rc) {
		ssize_t n = read(fd, w->buf, BLOCK);
		if (n <= 0) {
			rc = n < 0 ? -1 : 0;
			break;
		}
		XXH3_128bits_update(st, w->buf, (size_t)n);
		for (ssize_t i = 0; i < n;) {
			bool whole = at < full;
			size_t k = whole && full - at < (uint64_t)(n - i) ? (size_t)(full - at)
									  : (size_t)(n - i);
			struct stream *s = whole ? w->blocks : w->tails;
			if (fwrite(w->buf + i, 1, k, s->spool) != k) {
				rc = -1;
				break;
			}
			s->len += k;
			at += k;
			i += (ssize_t)k;
		}
	}
	if (rc)
		fprintf(stderr, "zstd_floor: %s: %s\n", path, strerror(errno ? errno : EIO));
	close(fd);
	if (!rc) {
		int fresh = seen_add(&w->seen, XXH3_128bits_digest(st));
		w->files++;
		if (fresh < 0) {
			fprintf(stderr, "zstd_floor: out of memory\n");
			rc = -1;
		} else if (!fresh) {
			w->dups++;
			w->blocks->len = b0;
			w->tails->len = t0;
			if (fseeko(w->blocks->spool, (off_t)b0, SEEK_SET) ||
			    fseeko(w->tails->spool, (off_t)t0, SEEK_SET))
				rc = -1;
		}
	}
	XXH3_freeState(st);
	return rc;
}

/* Walks dir in name order. 0, or -1 with a message. */
static int walk_dir(struct walk *w, const char *dir)
{
	struct dirent **names;
	int n = scandir(dir, &names, NULL, alphasort), rc = 0;

	if (n < 0) {
		fprintf(stderr, "zstd_floor: %s: %s\n", dir, strerror(errno));
		return -1;
	}
	for (int i = 0; i < n; i++) {
		const char *nm = names[i]->d_name;
		char *path = NULL;
		struct stat st;
		if (rc || !strcmp(nm, ".") || !strcmp(nm, "..") ||
		    asprintf(&path, "%s/%s", dir, nm) < 0) {
			free(names[i]);
			continue;
		}
		if (lstat(path, &st)) {
			fprintf(stderr, "zstd_floor: %s: %s\n", path, strerror(errno));
			rc = -1;
		} else if (S_ISDIR(st.st_mode)) {
			rc = walk_dir(w, path);
		} else if (S_ISREG(st.st_mode)) {
			rc = take_file(w, path, st.st_size);
		}
		free(path);
		free(names[i]);
	}
	free(names);
	return rc;
}

static uint64_t thread_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* Creates the raw libzstd context of setting i. NULL on error. */
static ZSTD_CCtx *setting_ctx(size_t i)
{
	ZSTD_CCtx *c = ZSTD_createCCtx();
	if (c && (ZSTD_isError(ZSTD_CCtx_setParameter(c, ZSTD_c_compressionLevel,
						      settings[i].level)) ||
		  (settings[i].search_log &&
		   ZSTD_isError(ZSTD_CCtx_setParameter(c, ZSTD_c_searchLog,
						       settings[i].search_log))))) {
		ZSTD_freeCCtx(c);
		c = NULL;
	}
	return c;
}

/* Compresses one chunk with every column, starting with column `first` (rotated from chunk to
 * chunk, so that no column always comes first after the read); s may be NULL (a warm-up: the
 * contexts allocate their tables). -1 on a compressor error. */
static int measure(struct compressor *sqk, ZSTD_CCtx **raw, const uint8_t *in, size_t n,
		   uint8_t *out, size_t cap, size_t first, struct sample *s)
{
	for (size_t i = 0; i < NCOL; i++) {
		size_t c = (first + i) % NCOL;
		uint64_t t0 = thread_ns();
		size_t r;
		if (c == 0) {
			ssize_t k = comp_compress(sqk, in, n, out, cap);
			if (k < 0)
				return -1;
			r = k ? (size_t)k : n;
		} else {
			r = ZSTD_compress2(raw[c - 1], out, cap, in, n);
			if (ZSTD_isError(r))
				return -1;
		}
		if (s) {
			s->ns[c] = thread_ns() - t0;
			s->bytes[c] = (uint32_t)(r < n ? r : n);
		}
	}
	return 0;
}

/* Thread body: samples every s->every-th chunk of s's spool. Sets s->err. */
static void *run_stream(void *arg)
{
	struct stream *s = arg;
	struct sqk_comp_config cfg = { .id = SQK_COMP_ZSTD, .block_size = BLOCK };
	struct compressor *sqk = NULL;
	ZSTD_CCtx *raw[NSET] = { 0 };
	size_t cap = ZSTD_compressBound(BLOCK);
	uint8_t *in = malloc(BLOCK), *out = malloc(cap);
	size_t chunks = (size_t)((s->len + BLOCK - 1) / BLOCK);

	s->samples = calloc(chunks / s->every + 1, sizeof(*s->samples));
	s->err = !in || !out || !s->samples || compressor_create(&cfg, &sqk);
	for (size_t i = 0; i < NSET && !s->err; i++)
		s->err = !(raw[i] = setting_ctx(i));
	for (size_t k = 0; k < chunks && !s->err; k += s->every) {
		uint64_t at = (uint64_t)k * BLOCK;
		size_t n = s->len - at < BLOCK ? (size_t)(s->len - at) : BLOCK;
		s->err = fseeko(s->spool, (off_t)at, SEEK_SET) || fread(in, 1, n, s->spool) != n ||
			 (k == 0 && measure(sqk, raw, in, n, out, cap, 0, NULL)) ||
			 measure(sqk, raw, in, n, out, cap, s->nsamples % NCOL,
				 &s->samples[s->nsamples]);
		s->nsamples++;
	}
	for (size_t i = 0; i < NSET; i++)
		ZSTD_freeCCtx(raw[i]);
	compressor_destroy(sqk);
	free(in);
	free(out);
	return NULL;
}

/* Totals of one column over the given streams, scaled by their strides. */
static void column_total(struct stream *const *ss, size_t nss, size_t c, double *bytes, double *ns)
{
	*bytes = *ns = 0;
	for (size_t i = 0; i < nss; i++)
		for (size_t k = 0; k < ss[i]->nsamples; k++) {
			*bytes += (double)ss[i]->every * ss[i]->samples[k].bytes[c];
			*ns += (double)ss[i]->every * (double)ss[i]->samples[k].ns[c];
		}
}

/* The oracle at price lam (ns per byte): every chunk's cheapest column in ns + lam * bytes. */
static void oracle(struct stream *const *ss, size_t nss, double lam, double *bytes, double *ns)
{
	*bytes = *ns = 0;
	for (size_t i = 0; i < nss; i++)
		for (size_t k = 0; k < ss[i]->nsamples; k++) {
			const struct sample *s = &ss[i]->samples[k];
			size_t best = 0;
			for (size_t c = 1; c < NCOL; c++)
				if ((double)s->ns[c] + lam * s->bytes[c] <
				    (double)s->ns[best] + lam * s->bytes[best])
					best = c;
			*bytes += (double)ss[i]->every * s->bytes[best];
			*ns += (double)ss[i]->every * (double)s->ns[best];
		}
}

static double pct(double a, double b) { return b > 0 ? 100.0 * (a / b - 1.0) : 0.0; }

/* The oracle's (bytes, ns) for prices from 100 to 1e8 ns a byte, bytes falling as the price
 * rises: points of the lower convex hull of every per-block choice. */
#define NHULL 384
struct point {
	double bytes, ns;
};

static void hull(struct stream *const *ss, size_t nss, struct point *pts)
{
	double lam = 100;
	for (size_t i = 0; i < NHULL; i++, lam *= 1.05)
		oracle(ss, nss, lam, &pts[i].bytes, &pts[i].ns);
}

/* The least CPU any per-block choice could spend for at most `bytes`: interpolated on the hull
 * (a lower bound: no choice lies below it); a negative value when no choice is that small. */
static double least_ns(const struct point *pts, double bytes)
{
	if (bytes >= pts[0].bytes)
		return pts[0].ns;
	for (size_t i = 1; i < NHULL; i++) {
		if (pts[i].bytes > bytes)
			continue;
		double span = pts[i - 1].bytes - pts[i].bytes;
		double f = span > 0 ? (pts[i - 1].bytes - bytes) / span : 1.0;
		return pts[i - 1].ns + f * (pts[i].ns - pts[i - 1].ns);
	}
	return -1;
}

static void report(struct stream *const *ss, size_t nss, const char *what, double goal,
		   bool frontier)
{
	static const double steps[] = { 1.0, 0.5, 0.2, 0.1, 0.0, -0.1, -0.2, -0.3, -0.4, -0.5,
					-0.6, -0.7, -0.8 };
	struct point pts[NHULL];
	double b0, t0, b, t;

	column_total(ss, nss, 0, &b0, &t0);
	printf("floor: %s: sqk's default %.0f bytes, %.2f CPU s (scaled from the samples)\n", what,
	       b0, t0 / 1e9);
	for (size_t c = 1; c < NCOL; c++) {
		column_total(ss, nss, c, &b, &t);
		printf("floor: %s: %-16s %+7.3f%% bytes %+7.1f%% CPU\n", what, settings[c - 1].name,
		       pct(b, b0), pct(t, t0));
	}
	hull(ss, nss, pts);
	for (size_t i = 0; frontier && i < sizeof(steps) / sizeof(steps[0]); i++) {
		double ns = least_ns(pts, b0 * (1 + steps[i] / 100));
		if (ns >= 0)
			printf("floor: %s: a perfect per-block choice at %+.1f%% bytes: %+.1f%% "
			       "CPU at "
			       "least\n",
			       what, steps[i], pct(ns, t0));
	}
	double same = least_ns(pts, b0), at_goal = least_ns(pts, b0 * (1 - goal / 100));
	printf(
	    "floor: %s: a perfect per-block choice at the default's bytes: %+.1f%% CPU at least\n",
	    what, pct(same, t0));
	if (at_goal >= 0)
		printf(
		    "floor: %s: a perfect per-block choice at %.2f%% fewer bytes: %+.1f%% CPU at "
		    "least\n",
		    what, goal, pct(at_goal, t0));
	else
		printf("floor: %s: no per-block choice among these settings is %.2f%% smaller\n",
		       what, goal);
}

static int usage(void)
{
	fprintf(stderr, "usage: zstd_floor [-t EVERY] [-b EVERY] [-s PERCENT] DIR...\n");
	return 2;
}

int main(int argc, char **argv)
{
	struct stream blocks = { .every = 5 };
	struct stream tails = { .every = 10 };
	double goal = 0.44;
	int opt;

	while ((opt = getopt(argc, argv, "t:b:s:")) != -1) {
		char *end;
		long v = opt == 's' ? 1 : strtol(optarg, &end, 10);
		if (opt == 's')
			goal = strtod(optarg, &end);
		if (*end || v < 1 || goal < 0)
			return usage();
		if (opt == 't')
			tails.every = (unsigned)v;
		else if (opt == 'b')
			blocks.every = (unsigned)v;
	}
	if (optind >= argc)
		return usage();
	struct walk w = { .blocks = &blocks, .tails = &tails, .buf = malloc(BLOCK) };
	blocks.spool = tmpfile();
	tails.spool = tmpfile();
	if (!w.buf || !blocks.spool || !tails.spool) {
		fprintf(stderr, "zstd_floor: %s\n", strerror(errno));
		return 1;
	}
	int rc = 0;
	for (int i = optind; i < argc && !rc; i++)
		rc = walk_dir(&w, argv[i]);
	free(w.buf);
	free(w.seen.slot);
	if (rc || fflush(blocks.spool) || fflush(tails.spool))
		return 1;
	printf("floor: libzstd %s; %llu files, %llu of them duplicates; unique data %llu bytes in "
	       "whole "
	       "blocks (every %u-th chunk sampled), %llu in tails (every %u-th)\n",
	       ZSTD_versionString(), (unsigned long long)w.files, (unsigned long long)w.dups,
	       (unsigned long long)blocks.len, blocks.every, (unsigned long long)tails.len,
	       tails.every);
	pthread_t th;
	if (pthread_create(&th, NULL, run_stream, &tails)) {
		fprintf(stderr, "zstd_floor: cannot start a thread\n");
		return 1;
	}
	run_stream(&blocks);
	pthread_join(th, NULL);
	if (blocks.err || tails.err) {
		fprintf(stderr, "zstd_floor: a spool read or a compression failed\n");
		return 1;
	}
	struct stream *both[] = { &tails, &blocks };
	report(both, 1, "tails", goal, false);
	report(both + 1, 1, "whole blocks", goal, false);
	report(both, 2, "all data", goal, true);
	free(blocks.samples);
	free(tails.samples);
	fclose(blocks.spool);
	fclose(tails.spool);
	return 0;
}
