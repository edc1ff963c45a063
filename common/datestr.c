/* SPDX-License-Identifier: BSD-2-Clause */
/* Date strings read by date(1), as mksquashfs reads -all-time and -mkfs-time (datestr.h). */
#include "datestr.h"

#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "parse.h"

extern char **environ;

/* `date -d WHEN +%s`, as mksquashfs reads a time that is not a number: 0 with *out, or -1. */
int date_seconds(const char *when, uint64_t *out)
{
	int fd[2];
	pid_t pid;
	char *argv[] = { "date", "-d", (char *)when, "+%s", NULL };
	posix_spawn_file_actions_t fa;

	if (pipe(fd))
		return -1;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, fd[1], STDOUT_FILENO);
	posix_spawn_file_actions_addclose(&fa, fd[0]);
	posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
	int rc = posix_spawnp(&pid, "date", &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	close(fd[1]);
	char buf[64];
	size_t n = 0;
	ssize_t r;
	while (!rc && n < sizeof(buf) - 1 &&
	       ((r = read(fd[0], buf + n, sizeof(buf) - 1 - n)) > 0 || (r < 0 && errno == EINTR)))
		n += r > 0 ? (size_t)r : 0;
	close(fd[0]);
	int st = 0;
	if (rc || waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st))
		return -1;
	buf[n] = 0;
	if (n && buf[n - 1] == '\n')
		buf[--n] = 0;
	return parse_u64(buf, UINT32_MAX, out) ? -1 : 0;
}

void date_duration(char *buf, size_t cap, double secs)
{
	unsigned long s = secs > 0 ? (unsigned long)(secs + 0.5) : 0;

	if (s >= 3600)
		snprintf(buf, cap, "%lu:%02lu:%02lu", s / 3600, s / 60 % 60, s % 60);
	else
		snprintf(buf, cap, "%lu:%02lu", s / 60, s % 60);
}
