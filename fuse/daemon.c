/* SPDX-License-Identifier: BSD-2-Clause */
/* Detaching sqkfuse (daemon.h). As libfuse's fuse_daemonize: fork, setsid, chdir /, stdio to
 * /dev/null, the parent waiting on a pipe until the child is ready; here the fork comes before
 * the image is opened, so that the transfers the open starts (the prefetch hint's ranges) go on
 * in the daemon, which says why on the terminal when it fails before it is ready. */
#include "fuse/daemon.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

/* The parent: waits for the child's byte and exits 0, or, when the pipe ends first, exits as
 * the child did (it said why on stderr, still the terminal's). */
static void parent_wait(int fd, pid_t child, const char *prog)
{
	char c = 0;
	ssize_t n;
	int st = 0;

	do
		n = read(fd, &c, 1);
	while (n < 0 && errno == EINTR);
	if (n == 1)
		_exit(0);
	while (waitpid(child, &st, 0) < 0 && errno == EINTR)
		;
	if (WIFEXITED(st) && WEXITSTATUS(st))
		_exit(WEXITSTATUS(st));
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

/* Opens /dev/null on whichever of fds 0-2 is closed, so that the pipe's ends are never taken
 * for stdin, stdout or stderr (a write to stderr would tell the parent "ready"). */
static void stdio_fill(void)
{
	int fd;

	while ((fd = open("/dev/null", O_RDWR)) >= 0 && fd <= STDERR_FILENO)
		;
	if (fd > STDERR_FILENO)
		close(fd);
}

/* Borrows prog. */
int daemon_fork(bool foreground, int *ready_fd, const char *prog)
{
	int ready[2] = { -1, -1 };
	pid_t parent = getpid();

	*ready_fd = -1;
	if (foreground)
		return 0;
	stdio_fill();
	if (pipe2(ready, O_CLOEXEC)) {
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
		parent_wait(ready[0], pid, prog);
	}
	close(ready[0]);
	/* until it is ready, the daemon ends with the parent (killed by a timeout, say): it
	 * never mounts after the command has returned */
	prctl(PR_SET_PDEATHSIG, SIGTERM);
	if (getppid() != parent)
		_exit(1);
	*ready_fd = ready[1];
	return 0;
}

/* Borrows ctx and prog. */
void daemon_ready(int ready_fd, void (*start)(void *ctx), void *ctx, const char *prog)
{
	char c = 1;

	if (ready_fd >= 0)
		setsid(); /* cannot fail: a child is never a process group leader */
	if (chdir("/"))
		fprintf(stderr, "%s: cannot change to /: %s\n", prog, strerror(errno));
	start(ctx);
	if (ready_fd < 0)
		return;
	stdio_null();
	prctl(PR_SET_PDEATHSIG, 0); /* the parent exits once told */
	while (write(ready_fd, &c, 1) < 0 && errno == EINTR)
		;
	close(ready_fd);
}
