/* The temporary-then-rename output file (outfile.h). */
#include "outfile.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int sqk_outfile_open(struct sqk_outfile *o, const char *path, const char *prefix)
{
	char *copy = strdup(path);
	o->fd = -1;
	o->tmpname = NULL;
	o->prefix = prefix;
	o->dir = copy ? strdup(dirname(copy)) : NULL;
	free(copy);
	if (!o->dir)
		return -1;
	o->fd = open(o->dir, O_TMPFILE | O_WRONLY | O_CLOEXEC, 0666);
	if (o->fd >= 0)
		return 0;
	if (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL)
		return -1;
	size_t len = strlen(o->dir) + strlen(prefix) + 16;
	if (!(o->tmpname = malloc(len)))
		return -1;
	snprintf(o->tmpname, len, "%s/%s-XXXXXX", o->dir, prefix);
	o->fd = mkostemp(o->tmpname, O_CLOEXEC);
	if (o->fd < 0) {
		int e = errno;
		free(o->tmpname);
		o->tmpname = NULL;
		errno = e;
		return -1;
	}
	mode_t um = umask(0);
	umask(um);
	return fchmod(o->fd, 0666 & ~um);
}

/* Links the unnamed temporary under a fresh temporary name in its directory. */
static int give_name(struct sqk_outfile *o)
{
	char proc[64];
	size_t len = strlen(o->dir) + strlen(o->prefix) + 40;
	if (!(o->tmpname = malloc(len)))
		return -1;
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", o->fd);
	for (unsigned i = 0;; i++) {
		snprintf(o->tmpname, len, "%s/%s-%d-%u.tmp", o->dir, o->prefix, (int)getpid(), i);
		if (!linkat(AT_FDCWD, proc, AT_FDCWD, o->tmpname, AT_SYMLINK_FOLLOW))
			return 0;
		if (errno != EEXIST || i > 100) {
			int e = errno;
			free(o->tmpname);
			o->tmpname = NULL;
			errno = e;
			return -1;
		}
	}
}

int sqk_outfile_commit(struct sqk_outfile *o, const char *path)
{
	if (!o->tmpname && give_name(o))
		return -1;
	if (rename(o->tmpname, path))
		return -1;
	free(o->tmpname);
	o->tmpname = NULL;
	close(o->fd);
	o->fd = -1;
	free(o->dir);
	o->dir = NULL;
	return 0;
}

void sqk_outfile_abort(struct sqk_outfile *o)
{
	if (o->fd >= 0)
		close(o->fd);
	if (o->tmpname)
		unlink(o->tmpname);
	free(o->tmpname);
	free(o->dir);
	o->fd = -1;
	o->tmpname = NULL;
	o->dir = NULL;
}
