/* SPDX-License-Identifier: BSD-2-Clause */
/* The excludes of the directory walk (--exclude globs, mksquashfs's -e exact paths, -wildcards
 * and -regex patterns), matched on image paths; the walk remembers which matched so that the
 * others can be named. */
#include <fnmatch.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "sqk/error.h"
#include "common/grow.h"
#include "mk.h"
#include "source_dir.h"

static int exact_cmp(const void *a, const void *b)
{
	return strcmp(((const struct exact_excl *)a)->rel, ((const struct exact_excl *)b)->rel);
}

/* Cuts rel into its components in x->parts; the count, or -1 out of memory. */
static ssize_t split_path(struct excludes *x, const char *rel)
{
	size_t len = strlen(rel), n = 1;
	for (size_t i = 0; i < len; i++)
		n += rel[i] == '/';
	if (len + 1 > x->split_cap) { /* a string: exactly len + 1, not mem_grow */
		char *nb = realloc(x->split, len + 1);
		if (!nb)
			return -1;
		x->split = nb;
		x->split_cap = len + 1;
	}
	if (mem_grow(&x->parts, &x->parts_cap, n, sizeof(*x->parts), 0))
		return -1;
	memcpy(x->split, rel, len + 1);
	x->parts[0] = x->split;
	for (size_t i = 0, k = 1; i < len; i++)
		if (x->split[i] == '/') {
			x->split[i] = 0;
			x->parts[k++] = x->split + i + 1;
		}
	return (ssize_t)n;
}

/* Whether pattern w matches the path in x->parts (n components), as mksquashfs matches its
 * wildcard excludes: one component against one, leading dots only explicitly (a regex: found
 * anywhere in the component, unless anchored with ^ and $). */
static bool wild_match(const struct wild_excl *w, const struct excludes *x, size_t n)
{
	if (w->anchored ? n != w->n : n < w->n)
		return false;
	const char *const *parts = x->parts + (n - w->n);
	for (size_t i = 0; i < w->n; i++)
		if (w->re ? regexec(&w->re[i], parts[i], 0, NULL, 0) != 0 :
			    fnmatch(w->comp[i], parts[i], FNM_PATHNAME | FNM_PERIOD | FNM_EXTMATCH))
			return false;
	return true;
}

/* Marks every -e path that names rel; whether there is one. */
static bool exact_match(struct excludes *x, int nglobs, const char *rel, bool count)
{
	size_t lo = 0, hi = x->nexact;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (strcmp(x->exact[mid].rel, rel) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	bool any = false;
	for (; lo < x->nexact && !strcmp(x->exact[lo].rel, rel); lo++) {
		any = true;
		if (!count)
			break;
		x->hit[nglobs + x->exact[lo].idx] = true;
	}
	return any;
}

/* Whether the entry at image path rel is left out. With count (the walk), every exclude that
 * matches is remembered as having matched; else the first match answers (lookups by path).
 * top: rel is a source under a made-up root, which only mksquashfs's forms exclude. */
bool sd_excluded(struct excludes *x, const struct sqk_build_source *o, const char *rel,
		 bool count, bool top)
{
	bool ex = false;
	for (int i = 0; !top && i < o->nexcludes && (count || !ex); i++)
		if (fnmatch(o->excludes[i], rel, 0) == 0)
			ex = x->hit[i] = true;
	if ((count || !ex) && x->nexact)
		ex |= exact_match(x, o->nexcludes, rel, count);
	if ((count || !ex) && x->nwild) {
		ssize_t n = split_path(x, rel);
		for (size_t i = 0; n > 0 && i < x->nwild && (count || !ex); i++)
			if (wild_match(&x->wild[i], x, (size_t)n))
				ex = x->hit[o->nexcludes + x->wild[i].idx] = true;
	}
	return ex;
}

/* Adds the -e path idx at file-system path fs (not followed at its end), when it exists. */
static int add_exact(struct mk_ctx *c, struct dir_source *d, const char *fs, int idx)
{
	struct excludes *x = &d->ex;
	struct stat st;
	char *rel = NULL;
	if (lstat(fs, &st))
		return 0;
	int r = mk_source_dir_resolve(&d->base, c, fs, &rel);
	if (r < 0)
		return r;
	if (r == 1) {
		if (x->found[idx] < EX_OUTSIDE)
			x->found[idx] = EX_OUTSIDE;
		return 0;
	}
	x->found[idx] = EX_INSIDE;
	int err = mk_grow(c, &x->exact, &x->exact_cap, x->nexact + 1, sizeof(*x->exact));
	if (err) {
		free(rel);
		return err;
	}
	x->exact[x->nexact++] = (struct exact_excl){ .rel = rel, .idx = idx };
	return 0;
}

/* An -e path as mksquashfs reads it: absolute (/, ./, ../ in front: from the working
 * directory), else relative to each source in turn. */
static int resolve_exact(struct mk_ctx *c, struct dir_source *d, int idx)
{
	const struct sqk_build_source *o = c->src;
	const char *p = o->mks_excludes[idx];
	if (p[0] == '/' || !strncmp(p, "./", 2) || !strncmp(p, "../", 3))
		return add_exact(c, d, p, idx);
	int err = 0;
	for (int i = 0; i < o->nsources && !err; i++) {
		size_t len = strlen(o->sources[i]) + strlen(p) + 2;
		char *fs = malloc(len);
		if (!fs)
			return mk_fail(c, SQK_ENOMEM, "out of memory");
		snprintf(fs, len, "%s/%s", o->sources[i], p);
		err = add_exact(c, d, fs, idx);
		free(fs);
	}
	return err;
}

/* -regex: compiles w's components (cli/mkimage_options.c checked that they compile). */
static int compile_regex(struct mk_ctx *c, struct wild_excl *w, const char *pat)
{
	if (!(w->re = calloc(w->n, sizeof(*w->re))))
		return mk_fail(c, SQK_ENOMEM, "out of memory");
	for (size_t i = 0; i < w->n; i++)
		if (regcomp(&w->re[i], w->comp[i], REG_EXTENDED | REG_NOSUB)) {
			int err = mk_fail(c, SQK_EINVAL, "-e '%s': cannot compile '%s'", pat,
					  w->comp[i]);
			while (i--)
				regfree(&w->re[i]);
			free(w->re);
			w->re = NULL;
			return err;
		}
	return 0;
}

/* An -e pattern of -wildcards or -regex: "... " in front matches at any depth; empty
 * components (a doubled or trailing '/') are dropped, as mksquashfs does. */
static int add_wild(struct mk_ctx *c, struct excludes *x, const char *pat, int idx)
{
	struct wild_excl w = { .anchored = strncmp(pat, "... ", 4) != 0, .idx = idx };
	if (!w.anchored)
		pat += 4;
	size_t len = strlen(pat);
	w.buf = malloc(len + 1);
	w.comp = malloc((len / 2 + 1) * sizeof(*w.comp));
	if (!w.buf || !w.comp ||
	    mk_grow(c, &x->wild, &x->wild_cap, x->nwild + 1, sizeof(*x->wild))) {
		free(w.buf);
		free(w.comp);
		return mk_fail(c, SQK_ENOMEM, "out of memory");
	}
	memcpy(w.buf, pat, len + 1);
	for (char *tok = strtok(w.buf, "/"); tok; tok = strtok(NULL, "/"))
		w.comp[w.n++] = tok;
	x->wild[x->nwild++] = w;
	return c->src->regex ? compile_regex(c, &x->wild[x->nwild - 1], pat) : 0;
}

/* Compiles opt's excludes for d, once its sources are known. */
int sd_excludes_init(struct mk_ctx *c, struct dir_source *d)
{
	const struct sqk_build_source *o = c->src;
	struct excludes *x = &d->ex;
	int err = 0;
	x->any = o->nexcludes || o->nmks_excludes;
	if (!x->any)
		return 0;
	x->hit = calloc((size_t)(o->nexcludes + o->nmks_excludes), sizeof(*x->hit));
	x->found = calloc((size_t)o->nmks_excludes + 1, sizeof(*x->found));
	if (!x->hit || !x->found)
		return mk_fail(c, SQK_ENOMEM, "out of memory");
	for (int i = 0; i < o->nmks_excludes && !err; i++)
		err = o->wildcards ? add_wild(c, x, o->mks_excludes[i], i) : resolve_exact(c, d, i);
	if (!err && x->nexact > 1)
		qsort(x->exact, x->nexact, sizeof(*x->exact), exact_cmp);
	return err;
}

void sd_excludes_free(struct excludes *x)
{
	for (size_t i = 0; i < x->nexact; i++)
		free(x->exact[i].rel);
	free(x->exact);
	for (size_t i = 0; i < x->nwild; i++) {
		for (size_t k = 0; x->wild[i].re && k < x->wild[i].n; k++)
			regfree(&x->wild[i].re[k]);
		free(x->wild[i].re);
		free(x->wild[i].buf);
		free(x->wild[i].comp);
	}
	free(x->wild);
	free(x->hit);
	free(x->found);
	free(x->split);
	free(x->parts);
}

/* Whether a directory above image path rel is excluded (what is below it then never is). */
static bool under_excluded(struct excludes *x, const struct sqk_build_source *o, bool synthetic,
			   const char *rel)
{
	char *p = strdup(rel);
	bool ex = false;
	for (char *s = p ? strchr(p, '/') : NULL; s && !ex; s = strchr(s + 1, '/')) {
		*s = 0;
		ex = sd_excluded(x, o, p, false, synthetic && !strchr(p, '/'));
		*s = '/';
	}
	free(p);
	return ex;
}

/* The line naming an -e path that excluded nothing, and why, unless what it names was left out
 * with a directory above it. */
void sd_warn_exact(struct dir_source *d, const struct sqk_build_source *o, int i)
{
	const char *p = o->mks_excludes[i], *why = NULL;
	bool abs = p[0] == '/' || !strncmp(p, "./", 2) || !strncmp(p, "../", 3);
	for (size_t k = 0; k < d->ex.nexact; k++) {
		const struct exact_excl *e = &d->ex.exact[k];
		if (e->idx != i)
			continue;
		if (!*e->rel)
			why = "it is the root of the image, which is never excluded";
		else if (under_excluded(&d->ex, o, d->synthetic, e->rel))
			return;
	}
	if (d->ex.found[i] == EX_NOWHERE)
		why = abs ? "no such file" : o->nsources > 1 ? "no such path in any source" :
							       "no such path in the source";
	else if (d->ex.found[i] == EX_OUTSIDE)
		why = "it is not inside a source";
	fprintf(stderr, "sqk mkimage: -e '%s' matched nothing%s%s%s\n", p, why ? ": " : "",
		why ? why : "", d->ex.found[i] == EX_NOWHERE && strpbrk(p, "*?[") ?
		" (-e takes exact paths; a pattern wants -wildcards before -e, or --exclude)" : "");
}
