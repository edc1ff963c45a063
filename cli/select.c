/* SPDX-License-Identifier: BSD-2-Clause */
/* The selection of entries (select.h): unsquashfs's matching of extract and exclude files,
 * on libsqk's iterative walk. Each depth keeps, for every pattern, the index of the component
 * its next level must match (SEL_DEAD once it cannot match below): the state of a directory's
 * entries is computed from their parent's alone. */
#include "select.h"

#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cmd.h"
#include "common/grow.h"

#define SEL_DEAD UINT32_MAX  /* the pattern cannot match below this entry */
#define SEL_WHOLE (UINT32_MAX - 1) /* an extract pattern matched: everything below */

/* unsquashfs's flags: a '/' is never matched, a leading '.' only explicitly; ksh's @(a|b). */
#define SEL_FNM (FNM_PATHNAME | FNM_PERIOD | FNM_EXTMATCH)

void sel_init(struct sel *s)
{
	memset(s, 0, sizeof(*s));
	s->max_depth = SEL_NO_MAX_DEPTH;
}

bool sel_is_glob(const char *pattern)
{
	return strpbrk(pattern, "*?[\\(") != NULL;
}

/* Splits pattern into p's components (empty ones, from "//" or a leading '/', dropped). */
static int sel_split(struct sel_pat *p, const char *pattern)
{
	const char *s = pattern;

	p->comps = calloc(strlen(pattern) / 2 + 1, sizeof(*p->comps));
	if (!p->comps)
		return SQK_ENOMEM;
	while (*s) {
		size_t len = strcspn(s, "/");

		if (len && !(p->comps[p->n++] = strndup(s, len)))
			return SQK_ENOMEM;
		s += len + (s[len] == '/');
	}
	return 0;
}

int sel_add(struct sel *s, const char *pattern, bool exclude)
{
	struct sel_pat *p;

	if (mem_grow(&s->pats, &s->cap, s->npats + 1, sizeof(*s->pats), 0))
		return SQK_ENOMEM;
	p = &s->pats[s->npats++];
	memset(p, 0, sizeof(*p));
	p->exclude = exclude;
	p->text = pattern;
	s->nextract += !exclude;
	return sel_split(p, pattern);
}

int sel_make_literal(struct sel *s, size_t i)
{
	struct sel_pat *p = &s->pats[i];

	for (uint32_t k = 0; k < p->n; k++) {
		size_t len = strlen(p->comps[k]);
		char *e = malloc(2 * len + 1), *o = e;

		if (!e)
			return SQK_ENOMEM;
		for (size_t j = 0; j < len; j++) {
			*o++ = '\\'; /* fnmatch takes any escaped character as itself */
			*o++ = p->comps[k][j];
		}
		*o = '\0';
		free(p->comps[k]);
		p->comps[k] = e;
	}
	return 0;
}

bool sel_path_ok(const char *pattern)
{
	const char *s = pattern;

	for (;;) {
		size_t len = strcspn(s, "/");

		if ((len == 1 && s[0] == '.') || (len == 2 && s[0] == '.' && s[1] == '.'))
			return false;
		if (!s[len])
			return true;
		s += len + 1;
	}
}

int sel_check_paths(struct sel *s, struct cmd *c, const char *what)
{
	struct sqk_inode ino;
	int r, bad = 0;

	for (size_t i = 0; i < s->npats; i++) {
		const char *p = s->pats[i].text;

		if (s->pats[i].exclude)
			continue;
		r = sqk_lookup_path(c->img, p, &ino);
		if (sel_is_glob(p)) { /* the entry it names as written, else a pattern */
			if (r == 0 && sel_make_literal(s, i))
				return -1;
			continue;
		}
		if (r == SQK_ENOENT)
			cmd_err(c, p, 0, "not in the image; nothing %s", what);
		else if (r)
			cmd_err(c, p, r, "cannot look up; nothing %s", what);
		bad |= r != 0;
	}
	return bad ? -1 : 0;
}

void sel_warn_unmatched(const struct sel *s, struct cmd *c)
{
	for (size_t i = 0; i < s->npats; i++)
		if (!s->pats[i].exclude && !s->pats[i].hit)
			cmd_err(c, NULL, 0, "warning: '%s' matched nothing in the image",
				s->pats[i].text);
}

void sel_free(struct sel *s)
{
	for (size_t i = 0; i < s->npats; i++) {
		for (uint32_t k = 0; k < s->pats[i].n; k++)
			free(s->pats[i].comps[k]);
		free(s->pats[i].comps);
	}
	free(s->pats);
	free(s->lv);
	sel_init(s);
}

/* The state row of depth d (room made). NULL when out of memory. */
static unsigned *sel_row(struct sel *s, uint32_t d)
{
	size_t need = ((size_t)d + 1) * (s->npats + 1);

	if (mem_grow(&s->lv, &s->lvcap, need, sizeof(*s->lv), 0))
		return NULL;
	return s->lv + (size_t)d * (s->npats + 1);
}

/* The root's row: every pattern at its first component; one with none matches the root. The
 * last slot says whether the root is selected whole. */
static void sel_root(struct sel *s, unsigned *row)
{
	row[s->npats] = s->nextract == 0;
	for (size_t i = 0; i < s->npats; i++) {
		row[i] = s->pats[i].n ? 0 : s->pats[i].exclude ? SEL_DEAD : SEL_WHOLE;
		if (row[i] == SEL_WHOLE) {
			row[s->npats] = 1;
			s->pats[i].hit = true;
		}
	}
}

/* The row of entry name below a directory whose row is up. Returns 1 when the entry is
 * selected (whole or on the way, when dir), 0 when not (or excluded). */
static int sel_step(struct sel *s, const unsigned *up, unsigned *row, const char *name, bool dir)
{
	bool whole = up[s->npats], way = false;

	for (size_t i = 0; i < s->npats; i++) {
		const struct sel_pat *p = &s->pats[i];

		row[i] = SEL_DEAD;
		if (up[i] >= p->n || fnmatch(p->comps[up[i]], name, SEL_FNM))
			continue;
		if (up[i] + 1 < p->n) {
			row[i] = up[i] + 1;
			way |= !p->exclude;
		} else if (p->exclude) {
			return 0;
		} else {
			s->pats[i].hit = true;
			whole = true;
		}
	}
	row[s->npats] = whole;
	return whole || (way && dir);
}

/* Reports walk step w (a selected entry or a directory left) to fn. */
static int sel_report(const struct sqk_walk_entry *w, const unsigned *row, size_t npats,
		      sel_fn fn, void *ctx)
{
	struct sel_entry e = {
		.path = w->path, .name = w->name, .depth = w->depth, .ino = &w->inode,
		.post = w->event == SQK_WALK_POST, .whole = row[npats], .walk = w,
	};

	return fn(ctx, &e);
}

/* Handles the PRE step w: selects it and calls fn, skipping what is not entered. */
static int sel_pre(struct sel *s, struct sqk_walk *wk, const struct sqk_walk_entry *w,
		   sel_fn fn, void *ctx)
{
	bool dir = sqk_basic_type(w->inode.type) == SQK_T_DIR, take = true;
	unsigned *row = sel_row(s, w->depth);
	int r;

	if (!row)
		return SQK_ENOMEM;
	if (w->depth == 0)
		sel_root(s, row);
	else
		take = sel_step(s, row - (s->npats + 1), row, w->name, dir) &&
		       w->depth <= s->max_depth;
	if (!take) {
		if (dir)
			sqk_walk_skip(wk);
		return dir ? 2 : 0; /* 2: its POST is not reported either */
	}
	r = sel_report(w, row, s->npats, fn, ctx);
	if (r < 0)
		return r;
	if (dir && (r == 1 || w->depth >= s->max_depth))
		sqk_walk_skip(wk);
	return 0;
}

int sel_walk(struct sel *s, struct sqk_image *img, sel_fn fn, void *ctx)
{
	struct sqk_walk_entry w;
	struct sqk_walk *wk;
	/* the depths of directories skipped unseen: their POST steps are not reported */
	uint32_t hidden = UINT32_MAX;
	int r = sqk_walk_open(img, NULL, SQK_WALK_LEAVE, SQK_WALK_MAX_DEPTH, &wk);

	for (; r == 0 && (r = sqk_walk_next(wk, &w)) != 0;) {
		if (r < 0) {
			struct sel_entry e = { .path = w.path ? w.path : "", .err = r, .walk = &w };

			r = w.event == SQK_WALK_ERR_FATAL ? r : fn(ctx, &e);
			r = r < 0 ? r : 0;
		} else if (w.event == SQK_WALK_POST) {
			if (w.depth == hidden) {
				hidden = UINT32_MAX;
				r = 0;
				continue;
			}
			r = sel_report(&w, sel_row(s, w.depth), s->npats, fn, ctx);
			r = r < 0 ? r : 0;
		} else {
			r = sel_pre(s, wk, &w, fn, ctx);
			if (r == 2)
				hidden = w.depth;
			r = r < 0 ? r : 0;
		}
	}
	sqk_walk_close(wk);
	return r;
}
