/* SPDX-License-Identifier: BSD-2-Clause */
/* Files by path, for --order and -sort: a second directory source over the same sources,
 * never walked, whose lookups find what the walk would find (source.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "sqk/error.h"
#include "mk.h"
#include "source.h"
#include "source_dir.h"

/* Sets d->path to the disk path of image path rel and d->rel to rel; *base_len = the length of
 * the source's own path in d->path. Returns 1 when rel names no source entry. */
static int disk_path(struct mk_ctx *c, struct dir_source *d, const char *rel, size_t *base_len)
{
	const char *rest = rel, *base = d->root;
	int err = sd_set_str(c, &d->rel, &d->rel_cap, 0, rel, false);
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
		err = sd_set_str(c, &d->path, &d->path_cap, 0, base, false);
	*base_len = d->path ? strlen(d->path) : 0;
	if (!err && *rest)
		err = sd_set_str(c, &d->path, &d->path_cap, *base_len, rest, true);
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
			bool ex = sd_excluded(&d->ex, c->src, d->rel, false, false);
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
	sd_close_file(d);
	int err = disk_path(c, d, rel, &base_len);
	if (err)
		return err;
	if (!*rel || !reachable(c, d, base_len) || lstat(d->path, &st))
		return !*rel && dirs_too ? 2 : 1;
	if (S_ISDIR(st.st_mode))
		return dirs_too ? 2 : 1;
	if (!S_ISREG(st.st_mode))
		return 1;
	return sd_stat_entry(c, d, e, false);
}

const char *mk_source_dir_disk_path(const struct mk_source *s)
{
	return ((const struct dir_source *)s)->path;
}

/* One directory of a subtree listing: lists, sorts and visits d->path / d->rel. Its frame is
 * looked up again after every entry: a deeper listing may have moved the stack. */
static int list_dir(struct mk_ctx *c, struct dir_source *d, mk_source_dir_visit visit, void *arg)
{
	int err = sd_enter_dir(c, d);
	if (err)
		return err;
	size_t depth = d->depth;
	for (size_t i = 0; !err && i < d->stack[depth - 1].n; i++) {
		struct stat st;
		const struct frame *f = &d->stack[depth - 1];
		err = sd_set_str(c, &d->path, &d->path_cap, f->path_len, f->names[i], true);
		if (!err)
			err = sd_set_str(c, &d->rel, &d->rel_cap, f->rel_len, f->names[i], true);
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
	sd_frame_free(&d->stack[depth - 1]);
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
		sd_frame_free(&d->stack[--d->depth]);
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
				sd_base_name(o->sources[i], name, sizeof(name));
			size_t len = strlen(name) + strlen(rest) + 2;
			if (!(*out = malloc(len)))
				r = mk_fail(c, SQK_ENOMEM, "out of memory");
			else
				snprintf(*out, len, "%s%s%s", name, *name && *rest ? "/" : "",
					 rest);
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
		sd_base_name(o->sources[i], name, sizeof(name));
		size_t len = strlen(o->sources[i]) + strlen(rel) + 2;
		char *p = malloc(len), *img = malloc(strlen(name) + strlen(rel) + 2);
		if (!p || !img) {
			free(p);
			free(img);
			return mk_fail(c, SQK_ENOMEM, "out of memory");
		}
		snprintf(p, len, "%s/%s", o->sources[i], rel);
		snprintf(img, strlen(name) + strlen(rel) + 2, "%s/%s", name, rel);
		bool found =
		    stat(o->sources[i], &st) == 0 && S_ISDIR(st.st_mode) && lstat(p, &st) == 0;
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
