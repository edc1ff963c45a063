/* SPDX-License-Identifier: BSD-2-Clause */
/* The directory walker as a source: depth first, each directory's entries in name order (unsigned
 * bytes), every entry stat'ed once when it is reached, excluded paths and the image being written
 * left out, xattrs listed with the entry, file content read with pread when the builder asks.
 * The excludes (--exclude globs, mksquashfs's -e exact paths and -wildcards patterns) are matched
 * here, on image paths, and the walk remembers which matched so that the others can be named. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "common/depth.h"
#include "sqk/error.h"
#include "common/format.h"
#include "common/grow.h"
#include "mk.h"
#include "prefetch.h"
#include "source.h"

/* One directory being walked: its sorted entry names and the next one to give. */
struct frame {
	char **names;
	size_t n, next;
	size_t path_len, rel_len; /* lengths of the walker's path and rel at this directory */
};

/* One -e path, resolved to the image path it names. */
struct exact_excl {
	char *rel;
	int idx; /* in src->mks_excludes */
};

/* One -e pattern (-wildcards or -regex), split into its path components. */
struct wild_excl {
	char *buf;          /* the components, each NUL-terminated */
	const char **comp;
	regex_t *re;        /* -regex: each component compiled; NULL for shell patterns */
	size_t n;
	bool anchored;      /* from the root; else ("... " in front) ending at any depth */
	int idx;
};

/* Where an -e path was found when it was resolved. */
enum { EX_NOWHERE, EX_OUTSIDE, EX_INSIDE };

/* The excludes compiled for the walk. */
struct excludes {
	bool any;
	struct exact_excl *exact; /* sorted by rel */
	size_t nexact, exact_cap;
	struct wild_excl *wild;
	size_t nwild, wild_cap;
	bool *hit;                /* per exclude, globs first: matched an entry of the walk */
	unsigned char *found;     /* per -e path: EX_* */
	char *split;              /* a path being matched, cut into components */
	size_t split_cap;
	const char **parts;
	size_t parts_cap;
};

struct dir_source {
	struct mk_source base;
	struct excludes ex;
	struct frame *stack;
	size_t depth, cap;
	char *path, *rel;          /* of the current entry; grown as needed */
	size_t path_cap, rel_cap;
	int state;                 /* 0: root next, 1: walking, 2: done */
	bool synthetic;            /* several sources under a made-up root */
	int *src_order;            /* synthetic root: frame position -> index in src->sources */
	bool descend;
	char *root;                /* one directory source: its path (files by path) */
	/* the current entry's content */
	int fd;
	uint64_t size;
	dev_t dev;                 /* of the lstat */
	ino_t ino;
	/* read-ahead of a cold tree (prefetch.h): started by the walk's reads that miss the page
	 * cache (misses); pf_off: no more misses looked for (the scout runs or cannot) */
	struct mk_prefetch *pf;
	struct mk_miss_watch misses;
	bool pf_off;
	struct excludes pf_ex;     /* the scout's own view of ex (its buffers; the rest shared) */
	struct mk_prefetch_dir pf_dir; /* the current directory's listing from the scout */
	bool have_pf_dir;
	const struct sqk_build_source *pf_src;
	/* xattrs of the current entry */
	char *xnames;
	size_t xnames_cap;
	struct mk_xattr_kv *kv;
	uint8_t *xvals;
	size_t kv_cap, xvals_cap;
	char target[SQK_SYMLINK_MAX + 2];
};

static int name_sort(const void *a, const void *b)
{
	const char *x = *(char *const *)a, *y = *(char *const *)b;
	return sqk_name_cmp(x, strlen(x), y, strlen(y));
}

static int set_str(struct mk_ctx *c, char **buf, size_t *cap, size_t at, const char *add,
		   bool slash)
{
	size_t la = strlen(add), need = at + la + 2;
	int err = mk_grow(c, buf, cap, need, 1);
	if (err)
		return err;
	if (slash && at && (*buf)[at - 1] != '/')
		(*buf)[at++] = '/';
	memcpy(*buf + at, add, la + 1);
	return 0;
}

/* ---- excludes ---- */

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
	if (len + 1 > x->split_cap) { /* a string: exactly len + 1, not sqk_grow */
		char *nb = realloc(x->split, len + 1);
		if (!nb)
			return -1;
		x->split = nb;
		x->split_cap = len + 1;
	}
	if (sqk_grow(&x->parts, &x->parts_cap, n, sizeof(*x->parts), 0))
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
static bool excluded(struct excludes *x, const struct sqk_build_source *o, const char *rel,
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
static int excludes_init(struct mk_ctx *c, struct dir_source *d)
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

static void excludes_free(struct excludes *x)
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
		ex = excluded(x, o, p, false, synthetic && !strchr(p, '/'));
		*s = '/';
	}
	free(p);
	return ex;
}

/* The line naming an -e path that excluded nothing, and why, unless what it names was left out
 * with a directory above it. */
static void warn_exact(struct dir_source *d, const struct sqk_build_source *o, int i)
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

static void frame_free(struct frame *f)
{
	for (size_t i = 0; i < f->n; i++)
		free(f->names[i]);
	free(f->names);
}

static int push_frame(struct mk_ctx *c, struct dir_source *d, struct frame *f)
{
	int err = mk_grow(c, &d->stack, &d->cap, d->depth + 1, sizeof(*d->stack));
	if (err) {
		frame_free(f);
		return err;
	}
	d->stack[d->depth++] = *f;
	return 0;
}

static int add_name(struct mk_ctx *c, struct frame *f, size_t *cap, const char *name)
{
	int err = mk_grow(c, &f->names, cap, f->n + 1, sizeof(*f->names));
	if (err)
		return err;
	if (!(f->names[f->n] = strdup(name)))
		return mk_fail(c, SQK_ENOMEM, "out of memory");
	f->n++;
	return 0;
}

/* Adds name to the frame f of the directory at d->rel unless it is excluded. */
static int add_kept(struct mk_ctx *c, struct dir_source *d, struct frame *f, size_t *cap,
		    const char *name)
{
	if (d->ex.any) {
		int err = set_str(c, &d->rel, &d->rel_cap, f->rel_len, name, true);
		if (err)
			return err;
		bool ex = excluded(&d->ex, c->src, d->rel, true, false);
		d->rel[f->rel_len] = 0;
		if (ex)
			return 0;
	}
	return add_name(c, f, cap, name);
}

static void drop_pf_dir(struct dir_source *d)
{
	if (d->have_pf_dir) {
		free(d->pf_dir.names);
		free(d->pf_dir.x.buf);
		d->have_pf_dir = false;
	}
}

/* The frame of the directory the scout listed (already in walk order). */
static int enter_listed(struct mk_ctx *c, struct dir_source *d)
{
	struct frame f = { .path_len = strlen(d->path), .rel_len = strlen(d->rel) };
	size_t cap = 0;
	int err = 0;
	const char *nm = d->pf_dir.names;
	for (size_t i = 0; i < d->pf_dir.n && !err; i++, nm += strlen(nm + 1) + 2)
		err = add_kept(c, d, &f, &cap, nm + 1);
	drop_pf_dir(d);
	if (err) {
		frame_free(&f);
		return err;
	}
	return push_frame(c, d, &f);
}

/* Reads the directory at d->path (relative name d->rel) into a new frame, sorted, without the
 * excluded entries. */
static int enter_dir(struct mk_ctx *c, struct dir_source *d)
{
	if (d->have_pf_dir)
		return enter_listed(c, d);
	struct frame f = { .path_len = strlen(d->path), .rel_len = strlen(d->rel) };
	size_t cap = 0;
	int err = 0;
	DIR *dir = opendir(d->path);
	if (!dir)
		return mk_fail(c, sqk_from_errno(errno), "cannot open directory '%s': %s", d->path,
			       strerror(errno));
	for (;;) {
		errno = 0;
		struct dirent *de = readdir(dir);
		if (!de) {
			if (errno)
				err = mk_fail(c, sqk_from_errno(errno), "cannot read directory '%s': %s",
					      d->path, strerror(errno));
			break;
		}
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if ((err = add_kept(c, d, &f, &cap, de->d_name)))
			break;
	}
	closedir(dir);
	if (err) {
		frame_free(&f);
		return err;
	}
	if (f.n > 1)
		qsort(f.names, f.n, sizeof(*f.names), name_sort);
	return push_frame(c, d, &f);
}

static int read_xattrs(struct mk_ctx *c, struct dir_source *d, struct mk_entry *e)
{
	e->nxattrs = 0;
	if (c->opt->no_xattrs)
		return 0;
	ssize_t len = llistxattr(d->path, NULL, 0);
	if (len < 0 && (errno == ENOTSUP || errno == ENOSYS))
		return 0;
	if (len < 0)
		return mk_fail(c, sqk_from_errno(errno), "cannot list xattrs of '%s': %s", d->path,
			       strerror(errno));
	if (len == 0)
		return 0;
	if ((size_t)len > d->xnames_cap) { /* exactly the list's bytes, not sqk_grow */
		char *nb = realloc(d->xnames, (size_t)len);
		if (!nb)
			return mk_fail(c, SQK_ENOMEM, "out of memory");
		d->xnames = nb;
		d->xnames_cap = (size_t)len;
	}
	if (llistxattr(d->path, d->xnames, (size_t)len) != len)
		return mk_fail(c, SQK_ECHANGED, "xattrs of '%s' changed while being read", d->path);
	size_t n = 0, vtotal = 0;
	for (ssize_t off = 0; off < len; off += (ssize_t)strlen(d->xnames + off) + 1)
		n++;
	int err = mk_grow(c, &d->kv, &d->kv_cap, n, sizeof(*d->kv));
	if (err)
		return err;
	/* Values go one after another in xvals; pointers are set once it stops moving. */
	size_t i = 0;
	for (ssize_t off = 0; off < len; off += (ssize_t)strlen(d->xnames + off) + 1, i++) {
		const char *nm = d->xnames + off;
		ssize_t vl = lgetxattr(d->path, nm, NULL, 0);
		if (vl < 0 || vl > 65536)
			return mk_fail(c, vl < 0 ? sqk_from_errno(errno) : SQK_ETOOBIG,
				       "cannot read xattr %s of '%s': %s", nm, d->path,
				       vl < 0 ? strerror(errno) : "too large");
		err = mk_grow(c, &d->xvals, &d->xvals_cap, vtotal + (size_t)vl + 1, 1);
		if (err)
			return err;
		ssize_t got = vl ? lgetxattr(d->path, nm, d->xvals + vtotal, (size_t)vl) : 0;
		if (got != vl)
			return mk_fail(c, SQK_ECHANGED, "xattr %s of '%s' changed while being read", nm,
				       d->path);
		d->kv[i] = (struct mk_xattr_kv){ .name = nm, .value = (void *)(uintptr_t)vtotal,
						 .size = (size_t)vl };
		vtotal += (size_t)vl;
	}
	for (size_t k = 0; k < n; k++)
		d->kv[k].value = d->xvals + (uintptr_t)d->kv[k].value;
	e->xattrs = d->kv;
	e->nxattrs = n;
	return 0;
}

/* The xattrs of e as the scout listed them (x, freed here): the same names and values
 * read_xattrs would have read, without the walk's round trips. */
static int scout_xattrs(struct mk_ctx *c, struct dir_source *d, struct mk_entry *e,
			struct mk_prefetch_xattrs *x)
{
	size_t len = (size_t)x->len, n = 0, at = len;
	int err = 0;
	e->nxattrs = 0;
	if (len > d->xnames_cap) {
		char *nb = realloc(d->xnames, len);
		err = nb ? 0 : mk_fail(c, SQK_ENOMEM, "out of memory");
		if (nb) {
			d->xnames = nb;
			d->xnames_cap = len;
		}
	}
	if (!err && len)
		memcpy(d->xnames, x->buf, len);
	for (size_t off = 0; off < len; off += strlen(d->xnames + off) + 1)
		n++;
	if (!err)
		err = mk_grow(c, &d->kv, &d->kv_cap, n, sizeof(*d->kv));
	if (!err)
		err = mk_grow(c, &d->xvals, &d->xvals_cap, x->size - len + 1, 1);
	size_t i = 0, vtotal = 0;
	for (size_t off = 0; !err && off < len; off += strlen(d->xnames + off) + 1, i++) {
		uint32_t vl;
		memcpy(&vl, x->buf + at, 4);
		memcpy(d->xvals + vtotal, x->buf + at + 4, vl);
		d->kv[i] = (struct mk_xattr_kv){ .name = d->xnames + off, .value = d->xvals + vtotal,
						 .size = vl };
		at += 4 + vl;
		vtotal += vl;
	}
	free(x->buf);
	x->buf = NULL;
	if (err)
		return err;
	e->xattrs = d->kv;
	e->nxattrs = n;
	return 0;
}

static int read_target(struct mk_ctx *c, struct dir_source *d, const struct stat *st,
		       struct mk_entry *e)
{
	if ((uint64_t)st->st_size > SQK_SYMLINK_MAX)
		return mk_fail(c, SQK_ETOOBIG, "symlink '%s': target longer than %u bytes", d->path,
			       SQK_SYMLINK_MAX);
	ssize_t len = readlink(d->path, d->target, sizeof(d->target) - 1);
	if (len < 0)
		return mk_fail(c, sqk_from_errno(errno), "cannot read symlink '%s': %s", d->path,
			       strerror(errno));
	if ((size_t)len > SQK_SYMLINK_MAX || (size_t)len > (size_t)st->st_size)
		return mk_fail(c, SQK_ECHANGED, "symlink '%s' changed while being read", d->path);
	d->target[len] = 0;
	e->target = d->target;
	return 0;
}

/* Ends the scout (when it found the tree ahead warm, mk_prefetch_idle, and at the end) and
 * frees its view of the excludes: the walk opens and reads on its own again and watches for
 * misses, which may start a new scout. */
static void stop_scout(struct dir_source *d)
{
	mk_prefetch_destroy(d->pf);
	d->pf = NULL;
	free(d->pf_ex.hit);
	free(d->pf_ex.split);
	free(d->pf_ex.parts);
	memset(&d->pf_ex, 0, sizeof(d->pf_ex));
	d->pf_off = false;
	d->misses = (struct mk_miss_watch){ 0 };
}

/* Fills e from an lstat of d->path. Returns 1 for an entry to leave out (the image). */
static int stat_entry(struct mk_ctx *c, struct dir_source *d, struct mk_entry *e, bool root)
{
	struct stat st;
	if (root ? stat(d->path, &st) : lstat(d->path, &st)) {
		char b[2 * SQK_DEPTH_SHOWN + 4]; /* a path too long for PATH_MAX: its two ends */
		return mk_fail(c, sqk_from_errno(errno), "cannot stat '%s': %s",
			       sqk_depth_shown(d->path, b), strerror(errno));
	}
	for (int i = 0; i < c->nskip; i++)
		if (S_ISREG(st.st_mode) && st.st_dev == c->skip_dev[i] && st.st_ino == c->skip_ino[i])
			return 1;
	memset(e, 0, sizeof(*e));
	e->path = d->rel;
	e->origin = d->path;
	e->mode = st.st_mode;
	e->uid = st.st_uid;
	e->gid = st.st_gid;
	e->mtime = st.st_mtim.tv_sec;
	if (!S_ISDIR(st.st_mode) && st.st_nlink > 1) {
		e->has_id = true;
		e->id_dev = st.st_dev;
		e->id_ino = st.st_ino;
	}
	int err = 0;
	if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) {
		e->dev_major = major(st.st_rdev);
		e->dev_minor = minor(st.st_rdev);
	} else if (S_ISLNK(st.st_mode)) {
		err = read_target(c, d, &st, e);
	} else if (S_ISREG(st.st_mode)) {
		e->size = (uint64_t)st.st_size;
		e->maybe_sparse = (uint64_t)st.st_blocks * 512 < e->size;
		d->size = e->size;
		d->dev = st.st_dev;
		d->ino = st.st_ino;
	} else if (!S_ISDIR(st.st_mode) && !S_ISFIFO(st.st_mode) && !S_ISSOCK(st.st_mode)) {
		return mk_fail(c, SQK_EUNSUPPORTED, "'%s': unsupported file type", d->path);
	}
	if (d->pf && mk_prefetch_idle(d->pf))
		stop_scout(d);
	/* a file the scout read ahead: its descriptor and xattrs are taken now, before the
	 * builder reads it, so that the walk makes no round trip of its own for it */
	struct mk_prefetch_xattrs x = { .len = -1 };
	if (!err && S_ISREG(st.st_mode) && d->pf)
		d->fd = mk_prefetch_take(d->pf, d->rel, d->dev, d->ino,
					 c->opt->no_xattrs ? NULL : &x);
	drop_pf_dir(d);
	if (!err && S_ISDIR(st.st_mode) && d->pf &&
	    (d->have_pf_dir = mk_prefetch_take_dir(d->pf, d->rel, st.st_dev, st.st_ino,
						    &d->pf_dir))) {
		x = d->pf_dir.x;
		d->pf_dir.x = (struct mk_prefetch_xattrs){ .len = -1 };
	}
	if (!err)
		err = x.len >= 0 ? scout_xattrs(c, d, e, &x) : read_xattrs(c, d, e);
	d->descend = !err && S_ISDIR(st.st_mode);
	return err;
}

static void close_file(struct dir_source *d)
{
	if (d->fd >= 0 && d->pf)
		mk_prefetch_close(d->pf, d->fd);
	else if (d->fd >= 0)
		close(d->fd);
	d->fd = -1;
}

/* The root entry: the one directory's own attributes, or a made-up directory. */
static int root_entry(struct mk_ctx *c, struct dir_source *d, struct mk_entry *e)
{
	d->state = 1;
	d->rel[0] = 0;
	if (d->synthetic) {
		memset(e, 0, sizeof(*e));
		e->path = d->rel;
		e->origin = "/";
		e->mode = S_IFDIR | 0755;
		e->uid = (uint32_t)getuid();
		e->gid = (uint32_t)getgid();
		e->mtime = MK_MTIME_NEWEST;
		return 0;
	}
	int r = stat_entry(c, d, e, true);
	if (r == 1)
		return mk_fail(c, SQK_EINVAL, "source '%s' is the image", c->src->sources[0]);
	return r;
}

static int dir_next(struct mk_source *s, struct mk_ctx *c, struct mk_entry *e)
{
	struct dir_source *d = (struct dir_source *)s;
	close_file(d);
	if (d->state == 0)
		return root_entry(c, d, e);
	for (;;) {
		if (mk_cancelled(c))
			return mk_fail(c, SQK_EINTR, "interrupted");
		int err = d->descend ? enter_dir(c, d) : 0;
		d->descend = false;
		if (err)
			return err;
		if (!d->depth)
			return 1;
		struct frame *f = &d->stack[d->depth - 1];
		if (f->next == f->n) {
			frame_free(f);
			d->depth--;
			continue;
		}
		const char *name = f->names[f->next++];
		if (d->synthetic && d->depth == 1) {
			/* a source given on the command line: its path as given, named by its base */
			const char *src = c->src->sources[d->src_order[f->next - 1]];
			err = set_str(c, &d->path, &d->path_cap, 0, src, false);
		} else {
			err = set_str(c, &d->path, &d->path_cap, f->path_len, name, true);
		}
		if (!err)
			err = set_str(c, &d->rel, &d->rel_cap, f->rel_len, name, true);
		if (!err)
			err = stat_entry(c, d, e, false);
		if (err == 1)
			continue;
		return err;
	}
}

/* The scout's exclude test: d->ex's patterns, its own scratch (excluded() writes hit and the
 * split path), on the scout's thread. */
static bool scout_excluded(void *arg, const char *rel, bool top)
{
	struct dir_source *d = arg;
	return excluded(&d->pf_ex, d->pf_src, rel, false, top);
}

/* The walk read a file the page cache did not hold: the tree is cold, the scout starts. */
static void start_scout(struct mk_ctx *c, struct dir_source *d)
{
	d->pf_off = true;
	struct mk_prefetch_skip skip = { .n = (size_t)c->nskip };
	for (int i = 0; i < c->nskip; i++) {
		skip.dev[i] = c->skip_dev[i];
		skip.ino[i] = c->skip_ino[i];
	}
	if (d->ex.any) {
		d->pf_ex = d->ex;
		d->pf_ex.split = NULL;
		d->pf_ex.parts = NULL;
		d->pf_ex.split_cap = d->pf_ex.parts_cap = 0;
		d->pf_ex.hit = calloc((size_t)(c->src->nexcludes + c->src->nmks_excludes) + 1, 1);
		if (!d->pf_ex.hit)
			return;
		d->pf_src = c->src;
		skip.leave_out = scout_excluded;
		skip.arg = d;
	}
	struct frame *top = d->synthetic && d->depth ? &d->stack[0] : NULL;
	size_t n = top ? top->n : 1;
	struct mk_prefetch_root *roots = calloc(n, sizeof(*roots));
	if (!roots)
		return;
	for (size_t i = 0; i < n; i++)
		roots[i] = top ? (struct mk_prefetch_root){ c->src->sources[d->src_order[i]],
							    top->names[i] } :
				 (struct mk_prefetch_root){ d->root, "" };
	if (top || d->root)
		d->pf = mk_prefetch_create(roots, n, &skip, 0, 0);
	if (d->pf && !c->opt->no_xattrs)
		mk_prefetch_list_xattrs(d->pf);
	free(roots);
	if (d->pf)
		mk_prefetch_at(d->pf, d->rel, true);
}

/* A read of the walked file that does not wait for the device: when the page cache does not
 * hold the bytes, the read is made again, waiting, and the scout starts once misses come
 * often enough (mk_miss_watch_note); at once when the file system cannot tell. */
static ssize_t read_watching(struct mk_ctx *c, struct dir_source *d, void *p, size_t len,
			     uint64_t off)
{
	if (d->state != 1) /* files by path (--order): not the walk's order */
		return pread(d->fd, p, len, (off_t)off);
	struct iovec iov = { .iov_base = p, .iov_len = len };
	ssize_t r = preadv2(d->fd, &iov, 1, (off_t)off, RWF_NOWAIT);
	if (r > 0) {
		mk_miss_watch_note(&d->misses, false);
		return r;
	}
	/* EAGAIN: a miss. A file system that cannot say (FUSE, most network file systems:
	 * EOPNOTSUPP) is one where each request may be a round trip: the scout starts at once. */
	if (r < 0 && (errno == EAGAIN ? mk_miss_watch_note(&d->misses, true) : errno != EINTR))
		start_scout(c, d);
	return pread(d->fd, p, len, (off_t)off);
}

static int dir_read(struct mk_source *s, struct mk_ctx *c, uint64_t off, void *buf, size_t len)
{
	struct dir_source *d = (struct dir_source *)s;
	if (d->fd < 0) {
		if (d->pf)
			d->fd = mk_prefetch_take(d->pf, d->rel, d->dev, d->ino, NULL);
		if (d->fd < 0)
			d->fd = open(d->path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY);
		if (d->fd < 0)
			return mk_fail(c, sqk_from_errno(errno), "cannot open '%s': %s", d->path,
				       strerror(errno));
		if (d->size > (1u << 20)) /* a syscall saved per small file */
			posix_fadvise(d->fd, 0, 0, POSIX_FADV_SEQUENTIAL);
	}
	uint8_t *p = buf;
	while (len) {
		ssize_t r = d->pf_off ? pread(d->fd, p, len, (off_t)off) :
					read_watching(c, d, p, len, off);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return mk_fail(c, sqk_from_errno(errno), "cannot read '%s' at offset %llu: %s",
				       d->path, (unsigned long long)off, strerror(errno));
		if (r == 0)
			return mk_fail(c, SQK_ECHANGED,
				       "'%s' changed size while being read (ends at %llu, expected "
				       "%llu bytes)", d->path, (unsigned long long)off,
				       (unsigned long long)d->size);
		p += r;
		off += (uint64_t)r;
		len -= (size_t)r;
	}
	return 0;
}

static int dir_data_at(struct mk_source *s, struct mk_ctx *c, uint64_t off, uint64_t *data)
{
	struct dir_source *d = (struct dir_source *)s;
	if (d->fd < 0) {
		int err = dir_read(s, c, 0, NULL, 0); /* opens it */
		if (err)
			return err;
	}
	off_t r = lseek(d->fd, (off_t)off, SEEK_DATA);
	if (r < 0)
		*data = errno == ENXIO ? UINT64_MAX : off;
	else
		*data = (uint64_t)r;
	return 0;
}

/* Checks, after reading, that the file still has the size it had when stat'ed. */
static int dir_end_file(struct mk_source *s, struct mk_ctx *c)
{
	struct dir_source *d = (struct dir_source *)s;
	struct stat st;
	if (d->fd < 0)
		return 0;
	if (fstat(d->fd, &st))
		return mk_fail(c, sqk_from_errno(errno), "cannot stat '%s': %s", d->path,
			       strerror(errno));
	if ((uint64_t)st.st_size != d->size)
		return mk_fail(c, SQK_ECHANGED,
			       "'%s' changed size while being read (%llu bytes, then %llu)", d->path,
			       (unsigned long long)d->size, (unsigned long long)st.st_size);
	close_file(d);
	return 0;
}

static void dir_destroy(struct mk_source *s)
{
	struct dir_source *d = (struct dir_source *)s;
	close_file(d);
	drop_pf_dir(d);
	stop_scout(d);
	for (size_t i = 0; i < d->depth; i++)
		frame_free(&d->stack[i]);
	free(d->stack);
	free(d->path);
	free(d->rel);
	free(d->src_order);
	free(d->root);
	free(d->xnames);
	free(d->kv);
	free(d->xvals);
	excludes_free(&d->ex);
	free(d);
}

struct mk_prefetch *mk_source_dir_prefetch(struct mk_source *s)
{
	return ((struct dir_source *)s)->pf;
}

static const struct mk_source_ops dir_ops = {
	.rereadable = true,
	.ordered = true,
	.next = dir_next,
	.read = dir_read,
	.data_at = dir_data_at,
	.end_file = dir_end_file,
	.destroy = dir_destroy,
};

static const char *base_name(const char *path, char *buf, size_t cap)
{
	size_t len = strlen(path);
	while (len > 1 && path[len - 1] == '/')
		len--;
	size_t start = len;
	while (start > 0 && path[start - 1] != '/')
		start--;
	size_t n = len - start;
	if (n >= cap)
		n = cap - 1;
	memcpy(buf, path + start, n);
	buf[n] = 0;
	return buf;
}

struct named_source {
	char name[256];
	int idx;
};

static int named_cmp(const void *a, const void *b)
{
	const struct named_source *x = a, *y = b;
	int r = sqk_name_cmp(x->name, strlen(x->name), y->name, strlen(y->name));
	return r ? r : (x->idx > y->idx) - (x->idx < y->idx);
}

/* Several sources (or one non-directory): the root's frame holds each by its base name, in name
 * order, but those mksquashfs's excludes leave out; d->src_order maps a position of that frame
 * to the source it names. */
static int multi_frame(struct mk_ctx *c, struct dir_source *d)
{
	const struct sqk_build_source *o = c->src;
	struct frame f = { 0 };
	size_t cap = 0;
	int err = 0;
	struct named_source *v = calloc((size_t)o->nsources, sizeof(*v));
	d->src_order = calloc((size_t)o->nsources, sizeof(*d->src_order));
	if (!v || !d->src_order) {
		free(v);
		return mk_fail(c, SQK_ENOMEM, "out of memory");
	}
	for (int i = 0; i < o->nsources && !err; i++) {
		const char *nm = base_name(o->sources[i], v[i].name, sizeof(v[i].name));
		v[i].idx = i;
		if (!*nm || !strcmp(nm, ".") || !strcmp(nm, "..") || !strcmp(nm, "/"))
			err = mk_fail(c, SQK_EINVAL, "source '%s': cannot name a root entry after it",
				      o->sources[i]);
	}
	if (!err)
		qsort(v, (size_t)o->nsources, sizeof(*v), named_cmp);
	for (int i = 1; i < o->nsources && !err; i++)
		if (!strcmp(v[i - 1].name, v[i].name))
			err = mk_fail(c, SQK_EINVAL, "sources '%s' and '%s' have the same name",
				      o->sources[v[i - 1].idx], o->sources[v[i].idx]);
	for (int i = 0; i < o->nsources && !err; i++) {
		if (excluded(&d->ex, o, v[i].name, true, true))
			continue;
		d->src_order[f.n] = v[i].idx;
		err = add_name(c, &f, &cap, v[i].name);
	}
	free(v);
	if (err) {
		frame_free(&f);
		return err;
	}
	return push_frame(c, d, &f);
}

int mk_source_dir_create(struct mk_ctx *c, struct mk_source **out)
{
	const struct sqk_build_source *o = c->src;
	struct stat st;
	*out = NULL;
	struct dir_source *d = calloc(1, sizeof(*d));
	if (!d)
		return mk_fail(c, SQK_ENOMEM, "out of memory");
	d->base.ops = &dir_ops;
	d->fd = -1;
	int err = set_str(c, &d->rel, &d->rel_cap, 0, "", false);
	if (!err && o->nsources == 1 && !o->keep_as_directory && stat(o->sources[0], &st) == 0 &&
	    S_ISDIR(st.st_mode)) {
		/* A symlink to a directory is followed, as its contents are what was asked for. */
		struct stat lst;
		bool via_link = lstat(o->sources[0], &lst) == 0 && S_ISLNK(lst.st_mode);
		err = set_str(c, &d->path, &d->path_cap, 0, o->sources[0], false);
		if (!err && via_link)
			err = set_str(c, &d->path, &d->path_cap, strlen(d->path), ".", true);
		if (!err && !(d->root = strdup(d->path)))
			err = mk_fail(c, SQK_ENOMEM, "out of memory");
		if (!err)
			err = excludes_init(c, d);
	} else {
		for (int i = 0; i < o->nsources && !err; i++)
			if (lstat(o->sources[i], &st))
				err = mk_fail(c, sqk_from_errno(errno), "cannot stat source '%s': %s",
					      o->sources[i], strerror(errno));
		d->synthetic = true;
		if (!err)
			err = set_str(c, &d->path, &d->path_cap, 0, "", false);
		if (!err)
			err = excludes_init(c, d);
		if (!err)
			err = multi_frame(c, d);
	}
	if (err) {
		dir_destroy(&d->base);
		return err;
	}
	*out = &d->base;
	return 0;
}


/* ---- files by path (--order, -sort): a second walker of the same sources, never walked ---- */

/* Sets d->path to the disk path of image path rel and d->rel to rel; *base_len = the length of
 * the source's own path in d->path. Returns 1 when rel names no source entry. */
static int disk_path(struct mk_ctx *c, struct dir_source *d, const char *rel, size_t *base_len)
{
	const char *rest = rel, *base = d->root;
	int err = set_str(c, &d->rel, &d->rel_cap, 0, rel, false);
	if (!err && d->synthetic) {
		const struct frame *f = &d->stack[0];
		size_t n = strcspn(rel, "/"), i = 0;
		while (i < f->n && (strlen(f->names[i]) != n || memcmp(f->names[i], rel, n)))
			i++;
		if (!n || i == f->n)
			return 1;
		base = c->src->sources[d->src_order[i]];
		rest = rel[n] ? rel + n + 1 : "";
	}
	if (!err)
		err = set_str(c, &d->path, &d->path_cap, 0, base, false);
	*base_len = d->path ? strlen(d->path) : 0;
	if (!err && *rest)
		err = set_str(c, &d->path, &d->path_cap, *base_len, rest, true);
	return err;
}

/* Whether the walk reaches the entry at d->path (its source's path is d->path[0..base_len)):
 * every directory on the way is a directory (not a symlink) and neither it nor a directory
 * above is excluded (a synthetic root's sources are checked when its frame is made). */
static bool reachable(struct mk_ctx *c, struct dir_source *d, size_t base_len)
{
	struct stat st;
	for (size_t i = base_len; d->path[i]; i++) {
		if (d->path[i] != '/' || (i == base_len && !d->synthetic))
			continue;
		d->path[i] = 0;
		bool dir = lstat(d->path, &st) == 0 && S_ISDIR(st.st_mode);
		d->path[i] = '/';
		if (!dir)
			return false;
	}
	if (!d->ex.any)
		return true;
	size_t j = 0;
	if (d->synthetic) {
		j = strcspn(d->rel, "/");
		if (!d->rel[j])
			return true;
		j++;
	}
	for (;; j++) {
		char ch = d->rel[j];
		if (ch == '/' || !ch) {
			d->rel[j] = 0;
			bool ex = excluded(&d->ex, c->src, d->rel, false, false);
			d->rel[j] = ch;
			if (ex)
				return false;
		}
		if (!ch)
			return true;
	}
}

int mk_source_dir_file(struct mk_source *s, struct mk_ctx *c, const char *rel, bool dirs_too,
		       struct mk_entry *e)
{
	struct dir_source *d = (struct dir_source *)s;
	size_t base_len = 0;
	struct stat st;
	close_file(d);
	int err = disk_path(c, d, rel, &base_len);
	if (err)
		return err;
	if (!*rel || !reachable(c, d, base_len) || lstat(d->path, &st))
		return !*rel && dirs_too ? 2 : 1;
	if (S_ISDIR(st.st_mode))
		return dirs_too ? 2 : 1;
	if (!S_ISREG(st.st_mode))
		return 1;
	return stat_entry(c, d, e, false);
}

const char *mk_source_dir_disk_path(const struct mk_source *s)
{
	return ((const struct dir_source *)s)->path;
}

/* One directory of a subtree listing: lists, sorts and visits d->path / d->rel. Its frame is
 * looked up again after every entry: a deeper listing may have moved the stack. */
static int list_dir(struct mk_ctx *c, struct dir_source *d, mk_source_dir_visit visit, void *arg)
{
	int err = enter_dir(c, d);
	if (err)
		return err;
	size_t depth = d->depth;
	for (size_t i = 0; !err && i < d->stack[depth - 1].n; i++) {
		struct stat st;
		const struct frame *f = &d->stack[depth - 1];
		err = set_str(c, &d->path, &d->path_cap, f->path_len, f->names[i], true);
		if (!err)
			err = set_str(c, &d->rel, &d->rel_cap, f->rel_len, f->names[i], true);
		if (err || lstat(d->path, &st))
			continue;
		bool image = false;
		for (int k = 0; k < c->nskip; k++)
			image |= st.st_dev == c->skip_dev[k] && st.st_ino == c->skip_ino[k];
		if (S_ISREG(st.st_mode) && !image)
			err = visit(arg, c, d->rel);
		else if (S_ISDIR(st.st_mode))
			err = list_dir(c, d, visit, arg);
	}
	frame_free(&d->stack[depth - 1]);
	d->depth = depth - 1;
	return err;
}

int mk_source_dir_list(struct mk_source *s, struct mk_ctx *c, const char *rel,
		       mk_source_dir_visit visit, void *arg)
{
	struct dir_source *d = (struct dir_source *)s;
	size_t base_len = 0;
	struct stat st;
	size_t keep = d->depth;
	if (!*rel && d->synthetic) {
		/* the made-up root: each source by its name */
		int err = 0;
		for (size_t i = 0; i < d->stack[0].n && !err; i++)
			err = mk_source_dir_list(s, c, d->stack[0].names[i], visit, arg);
		return err;
	}
	int err = disk_path(c, d, rel, &base_len);
	if (err)
		return err == 1 ? 0 : err;
	if ((*rel && !reachable(c, d, base_len)) || stat(d->path, &st) || !S_ISDIR(st.st_mode))
		return 0;
	err = list_dir(c, d, visit, arg);
	while (d->depth > keep)
		frame_free(&d->stack[--d->depth]);
	return err;
}

/* The real path of fs_path without following its last component (as lstat sees it). */
static char *real_entry(const char *fs_path)
{
	const char *slash = strrchr(fs_path, '/');
	const char *last = slash ? slash + 1 : fs_path;
	if (!*last || !strcmp(last, ".") || !strcmp(last, ".."))
		return realpath(fs_path, NULL);
	char *dir = slash ? strndup(fs_path, (size_t)(slash - fs_path) + (slash == fs_path)) :
			    strdup(".");
	char *rd = dir ? realpath(dir, NULL) : NULL;
	free(dir);
	if (!rd)
		return NULL;
	size_t len = strlen(rd) + strlen(last) + 2;
	char *out = malloc(len);
	if (out)
		snprintf(out, len, "%s%s%s", rd, strcmp(rd, "/") ? "/" : "", last);
	free(rd);
	return out;
}

int mk_source_dir_resolve(struct mk_source *s, struct mk_ctx *c, const char *fs_path,
			  char **out)
{
	struct dir_source *d = (struct dir_source *)s;
	const struct sqk_build_source *o = c->src;
	char *real = real_entry(fs_path);
	int r = 1;
	*out = NULL;
	for (int i = 0; real && i < (d->synthetic ? o->nsources : 1) && r == 1; i++) {
		char *src = d->synthetic ? real_entry(o->sources[i]) : realpath(d->root, NULL);
		size_t n = src ? strlen(src) : 0;
		if (n == 1)
			n = 0; /* the source is "/" */
		if (src && !strncmp(real, src, n) && (real[n] == '/' || !real[n])) {
			const char *rest = real + n + (real[n] == '/');
			char name[256] = "";
			if (d->synthetic)
				base_name(o->sources[i], name, sizeof(name));
			size_t len = strlen(name) + strlen(rest) + 2;
			if (!(*out = malloc(len)))
				r = mk_fail(c, SQK_ENOMEM, "out of memory");
			else
				snprintf(*out, len, "%s%s%s", name, *name && *rest ? "/" : "", rest);
			r = *out ? 0 : r;
		}
		free(src);
	}
	free(real);
	return r;
}

int mk_source_dir_in_sources(struct mk_source *s, struct mk_ctx *c, const char *rel,
			     char **out, int *count)
{
	struct dir_source *d = (struct dir_source *)s;
	const struct sqk_build_source *o = c->src;
	struct stat st;
	*out = NULL;
	*count = 0;
	if (!d->synthetic) {
		if (!(*out = strdup(rel)))
			return mk_fail(c, SQK_ENOMEM, "out of memory");
		*count = 1;
		return 0;
	}
	for (int i = 0; i < o->nsources; i++) {
		char name[256];
		base_name(o->sources[i], name, sizeof(name));
		size_t len = strlen(o->sources[i]) + strlen(rel) + 2;
		char *p = malloc(len), *img = malloc(strlen(name) + strlen(rel) + 2);
		if (!p || !img) {
			free(p);
			free(img);
			return mk_fail(c, SQK_ENOMEM, "out of memory");
		}
		snprintf(p, len, "%s/%s", o->sources[i], rel);
		snprintf(img, strlen(name) + strlen(rel) + 2, "%s/%s", name, rel);
		bool found = stat(o->sources[i], &st) == 0 && S_ISDIR(st.st_mode) && lstat(p, &st) == 0;
		free(p);
		if (found && !*out) {
			*out = img;
		} else {
			free(img);
		}
		*count += found;
	}
	return 0;
}

void mk_source_dir_warn_excludes(struct mk_source *s, struct mk_ctx *c)
{
	if (!s || s->ops != &dir_ops)
		return;
	struct dir_source *d = (struct dir_source *)s;
	const struct sqk_build_source *o = c->src;
	if (!d->ex.any)
		return;
	for (int i = 0; i < o->nexcludes; i++)
		if (!d->ex.hit[i])
			fprintf(stderr, "sqk mkimage: --exclude '%s' matched nothing\n",
				o->excludes[i]);
	for (int i = 0; i < o->nmks_excludes; i++) {
		if (d->ex.hit[o->nexcludes + i])
			continue;
		if (o->wildcards)
			fprintf(stderr, "sqk mkimage: -e '%s' (%s) matched nothing\n",
				o->mks_excludes[i], o->regex ? "-regex" : "-wildcards");
		else
			warn_exact(d, o, i);
	}
}
