/* SPDX-License-Identifier: BSD-2-Clause */
/* The library's threads: started with every signal blocked, so that a program's signals (its
 * SIGINT, SIGTERM, a signal-waiting thread of its own) never land in a thread of ours, whenever
 * we start it (at open, or on a read). */
#ifndef SQK_THREAD_H
#define SQK_THREAD_H

#include <pthread.h>

/* pthread_create(t, NULL, fn, arg) with every signal blocked in the new thread; the caller's
 * signal mask is left as it was. 0 or pthread_create's error. */
int thread_start(pthread_t *t, void *(*fn)(void *), void *arg);

#endif
