/* SPDX-License-Identifier: BSD-2-Clause */
/* sqkfuse's detach from the terminal: fuse_daemonize's steps, the fork before the image is
 * opened, so that the image's first fetches run in the daemon. */
#ifndef SQK_FUSE_DAEMON_H
#define SQK_FUSE_DAEMON_H

#include <stdbool.h>

/* Unless foreground, forks: the parent waits until the child calls daemon_ready, then exits 0;
 * when the child ends first, the parent exits with its status (1 when it was 0 or a signal);
 * when the parent dies first, the child gets SIGTERM; fds 0-2 that are closed are opened on
 * /dev/null first.
 * In the child (or the foreground process) returns 0 with *ready_fd set for daemon_ready (-1 in
 * the foreground), or -1 with a message on stderr naming prog when no child could be made. No
 * thread may run at the call. Borrows prog. */
int daemon_fork(bool foreground, int *ready_fd, const char *prog);

/* Changes to /, and in the daemon (ready_fd >= 0) starts a new session; calls start(ctx) (the
 * library's threads it starts block every signal themselves, common/thread.h); then in the
 * daemon points stdin, stdout and stderr at /dev/null, stops the parent's death from ending it
 * and tells the parent (closing ready_fd).
 * Borrows ctx and prog. */
void daemon_ready(int ready_fd, void (*start)(void *ctx), void *ctx, const char *prog);

#endif
