/* SPDX-License-Identifier: BSD-2-Clause */
/* The progress line of the long reading commands (sqk extract, verify, tar, cat): drawn on
 * stderr by a thread of its own a few times a second while stderr is a terminal and the process
 * is in its foreground, with what is done of the totals, the rate and the time left; erased
 * before any message (progress_clear under flockfile(stderr)) and at the end, after which
 * a one-line summary may follow. Off a terminal nothing at all is printed. */
#ifndef SQK_PROGRESS_H
#define SQK_PROGRESS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "sqk/sqk.h"
#include "sqk/sqk_check.h"

/* Seconds of history behind the rate (and so the time left), in samples of one tick. */
#define SQK_PROGRESS_TICK_MS 250
#define SQK_PROGRESS_WINDOW 20

struct progress {
	const char *name;           /* command name: the line starts "NAME: " (borrowed) */
	bool on;                    /* the line is drawn: enabled and stderr is a terminal */
	double delay;               /* seconds before the first line (a long cat: 1) */
	/* Totals: known once progress_totals is called; total_files 0 = not counted. */
	bool known;
	uint64_t total_files, total_bytes;
	atomic_uint_least64_t files, bytes;
	/* Before the totals: what is going on ("reading the tree"), how many items so far and
	 * what they are ("entries"). */
	const char *stage, *unit;
	atomic_uint_least64_t items;
	struct timespec start;
	/* The drawing thread. */
	pthread_t thread;
	bool running, stop;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	/* Changed under flockfile(stderr) (atomic for the race checkers, which do not see that
	 * lock): the width of the line on the screen (0 = none); whether one was ever drawn. */
	atomic_size_t shown;
	atomic_bool ever_shown;
	/* The drawing thread's samples of (time, bytes) for the rate. */
	double win_t[SQK_PROGRESS_WINDOW];
	uint64_t win_b[SQK_PROGRESS_WINDOW];
	unsigned nwin, wpos;
};

/* Sets p up for command name (borrowed for p's life). enable: the caller's consent (no
 * --no-progress; for cat, stdout not a terminal); the line is on only if stderr is also a
 * terminal. Nothing is drawn before progress_start. */
void progress_init(struct progress *p, const char *name, bool enable);

/* Sets the totals to do (files 0 = files are not counted). Call before or after start. */
void progress_totals(struct progress *p, uint64_t files, uint64_t bytes);

/* Before progress_start: what is done until the totals are known, shown as "NAME: STAGE:
 * N UNIT" (both borrowed for p's life) with the count of progress_item calls. */
void progress_stage(struct progress *p, const char *stage, const char *unit);

/* Starts drawing (when on) after delay seconds. Returns 0, or -1 when the thread could not start
 * (then nothing is drawn; not an error for the command). */
int progress_start(struct progress *p, double delay);

/* Counts work done, from any thread; p may be NULL. */
static inline void progress_add(struct progress *p, uint64_t files, uint64_t bytes)
{
	if (!p || !p->on)
		return;
	if (files)
		atomic_fetch_add_explicit(&p->files, files, memory_order_relaxed);
	if (bytes)
		atomic_fetch_add_explicit(&p->bytes, bytes, memory_order_relaxed);
}

/* Counts one item of the stage before the totals (progress_stage); p may be NULL. */
static inline void progress_item(struct progress *p)
{
	if (p && p->on)
		atomic_fetch_add_explicit(&p->items, 1, memory_order_relaxed);
}

/* Erases the line (drawn again at the next tick). The caller holds flockfile(stderr), so that
 * its message cannot be drawn over; p may be NULL. */
void progress_clear(struct progress *p);

/* Stops drawing and erases the line; p may be NULL, stopping twice is fine. Frees nothing the
 * caller owns; p may be initialised again afterwards. */
void progress_stop(struct progress *p);

/* After progress_stop: prints "sqk NAME: " and the message, one line on stderr, when the
 * line was on (and, with a delay, when it was ever drawn); else nothing. */
void progress_summary(const struct progress *p, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* "file" or "files" for a count of n (one, many: borrowed). */
static inline const char *plural(uint64_t n, const char *one, const char *many)
{
	return n == 1 ? one : many;
}

/* Seconds since progress_start (or init). */
double progress_elapsed(const struct progress *p);

/* Formats a byte count as "512 B", "1.5 KiB", "12.3 MiB", "4.0 GiB" into buf. */
void progress_size(char *buf, size_t cap, uint64_t bytes);

/* Formats "12.3 MiB/s" for bytes over secs (0 secs: the rate of bytes in no time, "-"). */
void progress_rate(char *buf, size_t cap, uint64_t bytes, double secs);

/* Counts the regular files (each inode once, hard links aside) and their bytes at and below
 * top (borrowed), without recursion; a directory met twice (a loop in a corrupt image) is not
 * entered again. Returns 0 or SQK_E* (the walk that follows reports the error itself). */
int progress_count(struct sqk_image *img, const struct sqk_inode *top, uint64_t *files,
		       uint64_t *bytes);

/* An I/O object forwarding to inner (borrowed; must outlive it) that counts the bytes read as
 * done in p (for sqk verify: the checker reads the image through it). Caller owns *out
 * (sqk_io_destroy frees the wrapper only). Returns 0 or SQK_ENOMEM. */
int progress_io(struct progress *p, struct sqk_io *inner, struct sqk_io **out);

/* sqk_check_image (arguments as there) with the progress line p (initialised, not started):
 * the checker's reads counted against what it reads, the image once and the part its integrity
 * data covers a second time. Stops p before returning the checker's result. */
int progress_check(struct progress *p, struct sqk_io *io, uint64_t size,
		       const struct sqk_check_opts *o, struct sqk_check_result *res);

#endif
