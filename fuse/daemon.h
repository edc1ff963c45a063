/* SPDX-License-Identifier: BSD-2-Clause */
/* sqkfuse's detach from the terminal: fuse_daemonize's steps, with the image's first fetches
 * started in the daemon before the command that mounted returns. */
#ifndef SQK_FUSE_DAEMON_H
#define SQK_FUSE_DAEMON_H

#include <stdbool.h>

/* Changes to / and, unless foreground, forks: the child starts a new session, calls start(ctx),
 * points stdin, stdout and stderr at /dev/null and tells the parent, which exits 0 (1 when the
 * child died first). start runs with SIGINT, SIGTERM and SIGHUP blocked, so that the threads it
 * starts leave them to sqkfuse's signal thread. No thread may run at the call. Returns 0 (in
 * the daemon, or in the foreground after start), or -1 with a message on stderr naming prog
 * when no daemon could be made (start not called). Borrows ctx and prog. */
int daemon_detach(bool foreground, void (*start)(void *ctx), void *ctx, const char *prog);

#endif
