/* SPDX-License-Identifier: BSD-2-Clause */
/* A thread that takes SIGINT, SIGTERM and SIGHUP for the whole process. They are blocked in the
 * thread that starts the watcher, and so in every thread that one starts afterwards, and handed
 * to a callback on the watcher's own thread, where (unlike in a signal handler) it may take
 * locks and wait. Used by the builder (cancel, remove the partial image) and by sqkfuse (finish
 * page-cache fills while requests are still answered, then end the session loop). */
#ifndef SQK_SIGWATCH_H
#define SQK_SIGWATCH_H

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>

struct sigwatch {
	pthread_t thread;
	atomic_int sig;       /* the first signal received; 0 = none yet */
	atomic_bool done;
	sigset_t set, old;
	void (*on_signal)(void *ctx, int sig); /* called once, for the first signal; may be NULL */
	void *ctx;
};

/* Blocks the signals in the calling thread and starts the watcher; w is the caller's and must
 * stay put until sigwatch_stop. on_signal (borrowed ctx) may be NULL. Returns 0 or -1. */
int sigwatch_start(struct sigwatch *w, void (*on_signal)(void *ctx, int sig), void *ctx);

/* Joins the watcher (within 100 ms, or once on_signal returns) and restores the signal mask. */
void sigwatch_stop(struct sigwatch *w);

#endif
