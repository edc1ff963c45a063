/* SPDX-License-Identifier: BSD-2-Clause */
/* Detaching sqkfuse (daemon.h). As libfuse's fuse_daemonize: fork, setsid, chdir /, stdio to
 * /dev/null, the parent waiting on a pipe until the child is ready; here the child also starts
 * the image's prefetch before it says so, so that the hint's ranges are on their way when the
 * mount command returns. */
#include "fuse/daemon.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

/* Runs start with the signals of sqkfuse's signal thread blocked: threads inherit the mask. */
static void run_start(void (*start)(void *ctx), void *ctx)
{
	sigset_t set, old;

	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &set, &old);
	start(ctx);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/* The parent: waits for the child's byte (or the pipe's end when the child died) and exits. */
static void parent_wait(int fd, const char *prog)
{
	char c = 0;
	ssize_t n;

	do
		n = read(fd, &c, 1);
	while (n < 0 && errno == EINTR);
	if (n == 1)
		_exit(0);
	fprintf(stderr, "%s: the daemon ended before it was ready\n", prog);
	_exit(1);
}

static void stdio_null(void)
{
	int fd = open("/dev/null", O_RDWR);

	if (fd < 0)
		return;
	dup2(fd, STDIN_FILENO);
	dup2(fd, STDOUT_FILENO);
	dup2(fd, STDERR_FILENO);
	if (fd > STDERR_FILENO)
		close(fd);
}

/* Borrows ctx and prog. */
int daemon_detach(bool foreground, void (*start)(void *ctx), void *ctx, const char *prog)
{
	int ready[2] = { -1, -1 };
	char c = 1;

	if (foreground) {
		if (chdir("/"))
			fprintf(stderr, "%s: cannot change to /: %s\n", prog, strerror(errno));
		run_start(start, ctx);
		return 0;
	}
	if (pipe(ready)) {
		fprintf(stderr, "%s: cannot detach: pipe: %s\n", prog, strerror(errno));
		return -1;
	}
	fflush(NULL); /* nothing buffered is written twice */
	pid_t pid = fork();
	if (pid < 0) {
		fprintf(stderr, "%s: cannot detach: fork: %s\n", prog, strerror(errno));
		close(ready[0]);
		close(ready[1]);
		return -1;
	}
	if (pid > 0) {
		close(ready[1]);
		parent_wait(ready[0], prog);
	}
	close(ready[0]);
	setsid(); /* cannot fail: a child is never a process group leader */
	if (chdir("/"))
		fprintf(stderr, "%s: cannot change to /: %s\n", prog, strerror(errno));
	run_start(start, ctx);
	stdio_null();
	while (write(ready[1], &c, 1) < 0 && errno == EINTR)
		;
	close(ready[1]);
	return 0;
}
