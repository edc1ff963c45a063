/* SPDX-License-Identifier: BSD-2-Clause */
/* sqk ls's operands as patterns (ls_glob.h): one sel_walk per pattern, which stops at each
 * entry the pattern matches whole (its contents are the listing's business). */
#include "ls_glob.h"
#include "select.h"
#include "common/grow.h"

#include <stdlib.h>
#include <string.h>

struct ls_glob {
	char **paths;
	size_t n, cap;
	int err;       /* a failed step of the walk (the message printed) */
	struct cmd *c;
};

/* Appends a copy of path. 0 or SQK_ENOMEM. */
static int ls_glob_add(struct ls_glob *g, const char *path)
{
	while (*path == '/')
		path++;
	if (mem_grow(&g->paths, &g->cap, g->n + 1, sizeof(*g->paths), 0))
		return SQK_ENOMEM;
	g->paths[g->n] = strdup(path);
	return g->paths[g->n] ? (g->n++, 0) : SQK_ENOMEM;
}

/* sel_walk's step: a match is taken and not entered; a directory on the way is entered. */
static int ls_glob_step(void *ctx, const struct sel_entry *e)
{
	struct ls_glob *g = ctx;

	if (e->err) {
		cmd_err(g->c, e->path, e->err, "cannot read");
		g->err = e->err;
		return 0;
	}
	if (e->post || !e->whole)
		return 0;
	return ls_glob_add(g, e->path) ? SQK_ENOMEM : 1;
}

/* Expands the pattern pat into g. 0 or 1 (message printed). */
static int ls_glob_one(struct ls_glob *g, const char *pat)
{
	struct sel s;
	int r;

	sel_init(&s);
	r = sel_add(&s, pat, false);
	if (r == 0) {
		r = sel_walk(&s, g->c->img, ls_glob_step, g);
		if (r)
			cmd_err(g->c, pat, r, "cannot list");
		else
			sel_warn_unmatched(&s, g->c);
	}
	sel_free(&s);
	return r || g->err ? 1 : 0;
}

int ls_glob(struct cmd *c, char *const *pats, size_t n, char ***out, size_t *nout)
{
	struct ls_glob g = { .c = c };
	struct sqk_inode ino;
	int r = 0;

	for (size_t i = 0; i < n && r == 0; i++) {
		if (!sel_is_glob(pats[i]) || sqk_lookup_path(c->img, pats[i], &ino) == 0) {
			r = ls_glob_add(&g, pats[i]) ? 1 : 0;
		} else if (!sel_path_ok(pats[i])) {
			cmd_err(c, pats[i], 0, "a pattern with a . or .. component; nothing "
				"listed");
			r = 1;
		} else {
			r = ls_glob_one(&g, pats[i]);
		}
	}
	if (r) {
		ls_glob_free(g.paths, g.n);
		return r;
	}
	*out = g.paths;
	*nout = g.n;
	return 0;
}

void ls_glob_free(char **paths, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(paths[i]);
	free(paths);
}
