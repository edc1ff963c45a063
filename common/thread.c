/* SPDX-License-Identifier: BSD-2-Clause */
/* thread_start (thread.h): a new thread inherits its creator's signal mask. */
#include "common/thread.h"

#include <signal.h>

int thread_start(pthread_t *t, void *(*fn)(void *), void *arg)
{
	sigset_t all, old;
	int rc;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_create(t, NULL, fn, arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return rc;
}
