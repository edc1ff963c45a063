/* SPDX-License-Identifier: BSD-2-Clause */
/* The signal-watching thread (see sigwatch.h): sigtimedwait with a short tick, so that stopping
 * it needs no signal of its own. */
#include "sigwatch.h"

#include <time.h>

static void *watch_main(void *arg)
{
	struct sigwatch *w = arg;
	const struct timespec tick = { 0, 100 * 1000 * 1000 };
	while (!atomic_load(&w->done)) {
		int sig = sigtimedwait(&w->set, NULL, &tick);
		int none = 0;
		if (sig > 0 && atomic_compare_exchange_strong(&w->sig, &none, sig) && w->on_signal)
			w->on_signal(w->ctx, sig);
	}
	return NULL;
}

int sigwatch_start(struct sigwatch *w, void (*on_signal)(void *ctx, int sig), void *ctx)
{
	sigemptyset(&w->set);
	sigaddset(&w->set, SIGINT);
	sigaddset(&w->set, SIGTERM);
	sigaddset(&w->set, SIGHUP);
	atomic_init(&w->sig, 0);
	atomic_init(&w->done, false);
	w->on_signal = on_signal;
	w->ctx = ctx;
	pthread_sigmask(SIG_BLOCK, &w->set, &w->old);
	if (pthread_create(&w->thread, NULL, watch_main, w)) {
		pthread_sigmask(SIG_SETMASK, &w->old, NULL);
		return -1;
	}
	return 0;
}

void sigwatch_stop(struct sigwatch *w)
{
	atomic_store(&w->done, true);
	pthread_join(w->thread, NULL);
	pthread_sigmask(SIG_SETMASK, &w->old, NULL);
}
