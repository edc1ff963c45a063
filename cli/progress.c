/* SPDX-License-Identifier: BSD-2-Clause */
/* The progress line of sqk extract, verify, tar and cat (progress.h): a thread wakes every
 * SQK_PROGRESS_TICK_MS, reads the atomic counters the workers add to and redraws one line on
 * stderr with "\r", padding over what the last line left (no terminal escapes: dumb terminals
 * and script(1) logs read it as well). Also the totals walk and a counting I/O object. */
#include "progress.h"
#include "cmd.h"
#include "common/integrity.h"
#include "common/datestr.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

static double ts_diff(const struct timespec *a, const struct timespec *b)
{
	return (double)(b->tv_sec - a->tv_sec) + (double)(b->tv_nsec - a->tv_nsec) / 1e9;
}

void progress_init(struct progress *p, const char *name, bool enable)
{
	memset(p, 0, sizeof(*p));
	p->name = name;
	p->on = enable && isatty(STDERR_FILENO);
	atomic_init(&p->files, 0);
	atomic_init(&p->bytes, 0);
	atomic_init(&p->items, 0);
	pthread_mutex_init(&p->mu, NULL);
	clock_gettime(CLOCK_MONOTONIC, &p->start);
}

void progress_totals(struct progress *p, uint64_t files, uint64_t bytes)
{
	pthread_mutex_lock(&p->mu);
	p->total_files = files;
	p->total_bytes = bytes;
	p->known = true;
	pthread_mutex_unlock(&p->mu);
}

void progress_stage(struct progress *p, const char *stage, const char *unit)
{
	p->stage = stage;
	p->unit = unit;
}

double progress_elapsed(const struct progress *p)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return ts_diff(&p->start, &now);
}

void progress_size(char *buf, size_t cap, uint64_t bytes)
{
	static const char *const unit[] = { "KiB", "MiB", "GiB", "TiB", "PiB" };
	double v = (double)bytes;
	unsigned u = 0;

	if (bytes < 1024) {
		snprintf(buf, cap, "%llu B", (unsigned long long)bytes);
		return;
	}
	for (v /= 1024; v >= 1024 && u < 4; u++)
		v /= 1024;
	snprintf(buf, cap, "%.1f %s", v, unit[u]);
}

void progress_rate(char *buf, size_t cap, uint64_t bytes, double secs)
{
	size_t n;

	if (secs <= 0) {
		snprintf(buf, cap, "-");
		return;
	}
	progress_size(buf, cap, (uint64_t)((double)bytes / secs));
	n = strlen(buf);
	snprintf(buf + n, cap > n ? cap - n : 0, "/s");
}

/* Bytes per second over the window of recent samples (the whole run while it is short). */
static double window_rate(struct progress *p, double now, uint64_t bytes)
{
	unsigned oldest;
	double span;

	p->win_t[p->wpos] = now;
	p->win_b[p->wpos] = bytes;
	p->wpos = (p->wpos + 1) % SQK_PROGRESS_WINDOW;
	if (p->nwin < SQK_PROGRESS_WINDOW)
		p->nwin++;
	oldest = p->nwin < SQK_PROGRESS_WINDOW ? 0 : p->wpos;
	span = now - p->win_t[oldest];
	if (span < 1.0)
		return now > 0 ? (double)bytes / now : 0;
	return (double)(bytes - p->win_b[oldest]) / span;
}

/* The text of the line: "extract: 12/40 files, 3.1 MiB/9.0 MiB (34%), 2.0 MiB/s, 0:03 left". */
static void format_line(struct progress *p, char *buf, size_t cap)
{
	uint64_t files = atomic_load(&p->files), bytes = atomic_load(&p->bytes);
	char done[32], total[32], rate[32], eta[32];
	double now = progress_elapsed(p), r = window_rate(p, now, bytes);
	size_t n = 0;

	pthread_mutex_lock(&p->mu);
	if (!p->known) {
		pthread_mutex_unlock(&p->mu);
		snprintf(buf, cap, "%s: %s: %llu %s", p->name, p->stage ? p->stage : "starting",
			 (unsigned long long)atomic_load(&p->items), p->unit ? p->unit : "");
		return;
	}
	n += (size_t)snprintf(buf + n, cap - n, "%s: ", p->name);
	if (p->total_files && n < cap)
		n +=
		    (size_t)snprintf(buf + n, cap - n, "%llu/%llu files, ",
				     (unsigned long long)files, (unsigned long long)p->total_files);
	if (n >= cap)
		n = cap - 1;
	progress_size(done, sizeof(done), bytes);
	progress_size(total, sizeof(total), p->total_bytes);
	progress_rate(rate, sizeof(rate), (uint64_t)r, 1.0);
	if (bytes > p->total_bytes)
		bytes = p->total_bytes;
	if (r > 0 && now >= 1.0) /* the first reads say little of the rate to come */
		date_duration(eta, sizeof(eta), (double)(p->total_bytes - bytes) / r);
	else
		snprintf(eta, sizeof(eta), "-:--");
	snprintf(buf + n, cap - n, "%s/%s (%u%%), %s, %s left", done, total,
		 p->total_bytes ? (unsigned)(100.0 * (double)bytes / (double)p->total_bytes) : 100u,
		 rate, eta);
	pthread_mutex_unlock(&p->mu);
}

/* Terminal columns, less one so the line never wraps (a wrapped line cannot be redrawn). */
static size_t term_width(void)
{
	struct winsize ws;

	if (ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 1)
		return (size_t)ws.ws_col - 1;
	return 79;
}

/* Writes "\r", len spaces and "\r": the line is gone, the cursor at its start. Under the lock. */
static void erase(size_t len)
{
	char pad[256];

	memset(pad, ' ', sizeof(pad));
	fputc('\r', stderr);
	while (len) {
		size_t n = len < sizeof(pad) ? len : sizeof(pad);

		fwrite(pad, 1, n, stderr);
		len -= n;
	}
	fputc('\r', stderr);
}

/* Draws the line once: in one write, padded over the previous one. A process in the background
 * of its terminal draws nothing (its line would land in the middle of the shell's). */
static void draw(struct progress *p)
{
	char line[512];
	size_t len, width = term_width(), pad;
	pid_t fg = tcgetpgrp(STDERR_FILENO);

	format_line(p, line, sizeof(line));
	if (fg != -1 && fg != getpgrp())
		return;
	len = strlen(line);
	if (len > width)
		len = width;
	flockfile(stderr);
	pad = atomic_load(&p->shown) > len ? atomic_load(&p->shown) - len : 0;
	fprintf(stderr, "\r%.*s%*s", (int)len, line, (int)pad, "");
	if (pad)
		fprintf(stderr, "\r%.*s", (int)len, line);
	atomic_store(&p->shown, len);
	atomic_store(&p->ever_shown, true);
	funlockfile(stderr);
}

void progress_clear(struct progress *p)
{
	if (!p || !atomic_load(&p->shown))
		return;
	erase(atomic_load(&p->shown));
	atomic_store(&p->shown, 0);
}

static void *progress_thread(void *arg)
{
	struct progress *p = arg;
	struct timespec at = p->start;
	long first_ms = (long)(p->delay * 1000);
	long step = first_ms > SQK_PROGRESS_TICK_MS ? first_ms : SQK_PROGRESS_TICK_MS;

	pthread_mutex_lock(&p->mu);
	while (!p->stop) {
		at.tv_nsec += step % 1000 * 1000000L;
		at.tv_sec += step / 1000 + at.tv_nsec / 1000000000L;
		at.tv_nsec %= 1000000000L;
		step = SQK_PROGRESS_TICK_MS;
		while (!p->stop && pthread_cond_timedwait(&p->cv, &p->mu, &at) != ETIMEDOUT)
			;
		if (p->stop)
			break;
		pthread_mutex_unlock(&p->mu);
		draw(p);
		pthread_mutex_lock(&p->mu);
	}
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

int progress_start(struct progress *p, double delay)
{
	pthread_condattr_t ca;

	p->delay = delay;
	clock_gettime(CLOCK_MONOTONIC, &p->start);
	if (!p->on)
		return 0;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&p->cv, &ca);
	pthread_condattr_destroy(&ca);
	p->stop = false;
	if (pthread_create(&p->thread, NULL, progress_thread, p)) {
		pthread_cond_destroy(&p->cv);
		p->on = false;
		return -1;
	}
	p->running = true;
	return 0;
}

void progress_stop(struct progress *p)
{
	if (!p || !p->running)
		return;
	pthread_mutex_lock(&p->mu);
	p->stop = true;
	pthread_cond_signal(&p->cv);
	pthread_mutex_unlock(&p->mu);
	pthread_join(p->thread, NULL);
	pthread_cond_destroy(&p->cv);
	p->running = false;
	flockfile(stderr);
	progress_clear(p);
	funlockfile(stderr);
}

void progress_summary(const struct progress *p, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	if (!p->on || (p->delay > 0 && !atomic_load(&p->ever_shown)))
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fprintf(stderr, "sqk %s: %s\n", p->name, msg);
}

/* ---- the totals of a subtree ---- */

/* Regular files are counted once each (hard links aside); a directory met twice (a loop in a
 * corrupt image) is not entered again: libsqk's walk, once per inode. */
int progress_count(struct sqk_image *img, const struct sqk_inode *top, uint64_t *files,
		       uint64_t *bytes)
{
	struct sqk_walk_entry e;
	struct sqk_walk *w;
	int r = sqk_walk_open(img, top, SQK_WALK_ONCE, SQK_WALK_MAX_DEPTH, &w);

	*files = *bytes = 0;
	while (r == 0 && (r = sqk_walk_next(w, &e)) == 1) {
		r = 0;
		/* an inode seen already is not counted (the real walk reports what is wrong) */
		if (sqk_basic_type(e.inode.type) == SQK_T_FILE && !(e.flags & SQK_WALK_SEEN)) {
			(*files)++;
			*bytes += e.inode.size;
		}
	}
	sqk_walk_close(w);
	return r;
}

/* ---- counting I/O ---- */

struct count_io {
	struct sqk_io io;
	struct sqk_io *inner;
	struct progress *p;
};

static int cio_read(struct sqk_io *io, uint64_t off, void *buf, size_t len)
{
	struct count_io *c = (struct count_io *)io;
	int r = sqk_io_read_at(c->inner, off, buf, len);

	if (r == 0)
		progress_add(c->p, 0, len);
	return r;
}

static int cio_read_ahead(struct sqk_io *io, uint64_t off, void *buf, size_t len,
			  const struct sqk_io_ahead *ahead)
{
	struct count_io *c = (struct count_io *)io;
	int r = sqk_io_read_ahead(c->inner, off, buf, len, ahead);

	if (r == 0)
		progress_add(c->p, 0, len);
	return r;
}

static int cio_write(struct sqk_io *io, uint64_t off, const void *buf, size_t len)
{
	return sqk_io_write_at(((struct count_io *)io)->inner, off, buf, len);
}

static int cio_size(struct sqk_io *io, uint64_t *size)
{
	return sqk_io_get_size(((struct count_io *)io)->inner, size);
}

static int cio_sync(struct sqk_io *io)
{
	return sqk_io_sync(((struct count_io *)io)->inner);
}

static void cio_destroy(struct sqk_io *io)
{
	free(io);
}

static const struct sqk_io_ops count_ops = {
	.read_at = cio_read,
	.write_at = cio_write,
	.get_size = cio_size,
	.sync = cio_sync,
	.destroy = cio_destroy,
	.read_ahead = cio_read_ahead,
};

int progress_io(struct progress *p, struct sqk_io *inner, struct sqk_io **out)
{
	struct count_io *c = calloc(1, sizeof(*c));

	if (!c)
		return SQK_ENOMEM;
	c->io.ops = &count_ops;
	c->inner = inner;
	c->p = p;
	*out = &c->io;
	return 0;
}

/* The bytes the integrity data covers (read once more for the chunk digests), 0 without. */
static uint64_t integ_covered(struct sqk_io *io, uint64_t size)
{
	uint8_t raw[SQK_INTEG_TRAILER_SIZE];
	struct sqk_integ_trailer t;

	if (size < sizeof(raw) || sqk_io_read_at(io, size - sizeof(raw), raw, sizeof(raw)) ||
	    integ_trailer_decode(raw, &t))
		return 0;
	return t.covered;
}

int progress_check(struct progress *p, struct sqk_io *io, uint64_t size,
		       const struct sqk_check_opts *o, struct sqk_check_result *res)
{
	struct sqk_io *counted = NULL;
	int rc;

	if (p->on && progress_io(p, io, &counted) == 0) {
		progress_totals(p, 0, size + integ_covered(io, size));
		progress_start(p, 0);
	}
	rc = sqk_check_image(counted ? counted : io, size, o, res);
	progress_stop(p);
	sqk_io_destroy(counted);
	return rc;
}
