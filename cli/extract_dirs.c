/* SPDX-License-Identifier: BSD-2-Clause */
/* sqk extract, phase 4: directory metadata, deepest first. */
#include "extract.h"

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

static int x_cmp_depth(const void *a, const void *b, void *arg)
{
	const struct extract *x = arg;
	uint32_t da = x->ents[*(const size_t *)a].depth, db = x->ents[*(const size_t *)b].depth;

	return da < db ? 1 : da > db ? -1 : 0;
}

/* Phase 4: directory owners, xattrs, modes and mtimes, deepest first; also after a failure,
 * for the directories made so far, so that none is left 0700. Every directory is tried: one
 * that fails does not leave the others unfinished. */
int x_dir_meta(struct extract *x)
{
	size_t *d = malloc((x->nents ? x->nents : 1) * sizeof(*d)), n = 0, i;
	int fd, r = 0;

	if (!d) {
		cmd_err(&x->c, NULL, SQK_ENOMEM, "cannot set the directories' attributes");
		return -1;
	}
	for (i = 0; i < x->nents; i++)
		if (x->ents[i].made && cmd_is(&x->ents[i].ino, SQK_T_DIR) &&
		    x->first[x->ents[i].ino.ino] == (int32_t)i)
			d[n++] = i;
	qsort_r(d, n, sizeof(*d), x_cmp_depth, x);
	for (i = 0; i < n; i++) {
		fd = x_open_dir(x, d[i]);
		if (fd < 0) {
			x_err(x, d[i], errno, "cannot open directory");
			r = -1;
			continue;
		}
		if (x_meta(x, d[i], fd, -1))
			r = -1;
		close(fd);
	}
	free(d);
	return r;
}
