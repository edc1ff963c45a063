/* SPDX-License-Identifier: BSD-2-Clause */
/* mksquashfs's options that change an entry as the source gives it (entry_opts.h): the root's
 * mode, owner and time, the xattr filters and additions, -no-hardlinks, and the -info line. */
#include <errno.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "sqk/error.h"
#include "common/grow.h"
#include "mk.h"
#include "entry_opts.h"
#include "xattr_value.h"
#include "action.h"
#include "source.h"

struct mk_eopts {
	regex_t exclude, include;
	bool have_exclude, have_include;
	struct mk_xattr_kv *add;    /* sorted by name; names and values owned */
	size_t nadd;
	struct mk_xattr_kv *kv;     /* an entry's xattrs after the filters and additions */
	size_t kv_cap;
};

static int compile(struct mk_ctx *c, regex_t *re, const char *pat, const char *what)
{
	int rc = regcomp(re, pat, REG_EXTENDED | REG_NOSUB);
	if (!rc)
		return 0;
	char why[256];
	regerror(rc, re, why, sizeof(why));
	return mk_fail(c, SQK_EINVAL, "-xattrs-%s '%s': invalid regular expression: %s", what,
		       pat, why);
}

static int kv_cmp(const void *a, const void *b)
{
	return strcmp(((const struct mk_xattr_kv *)a)->name,
		      ((const struct mk_xattr_kv *)b)->name);
}

int mk_eopts_check_add(const char *arg, char *why, size_t cap)
{
	const char *eq = strchr(arg, '='), *w = NULL;
	uint8_t *val = malloc(eq ? strlen(eq) : 1);
	size_t n = 0;
	int err = 0;
	if (!val)
		w = "out of memory";
	else if (!eq || eq == arg || !eq[1])
		w = "need NAME=VALUE, neither empty";
	else if (!mk_xattr_name_ok(arg, (size_t)(eq - arg)))
		w = "the name needs a user., trusted. or security. prefix";
	else if (mk_xattr_value(eq + 1, val, &n, &w))
		err = -1;
	else if (n > 65536)
		w = "the value is over 64 KiB";
	else
		w = NULL; /* decoded: a reason mk_xattr_value set beforehand does not apply */
	free(val);
	if (w)
		snprintf(why, cap, "%s", w);
	return w || err ? -1 : 0;
}

/* One -xattrs-add argument into x->add[x->nadd]. */
static int parse_add(struct mk_ctx *c, struct mk_eopts *x, const char *arg)
{
	const char *eq = strchr(arg, '='), *why = NULL;
	if (!eq || eq == arg || !eq[1])
		return mk_fail(c, SQK_EINVAL, "-xattrs-add '%s': need NAME=VALUE, neither empty",
			       arg);
	char *name = strndup(arg, (size_t)(eq - arg));
	uint8_t *val = malloc(strlen(eq));
	if (!name || !val) {
		free(name);
		free(val);
		return mk_fail(c, SQK_ENOMEM, "out of memory");
	}
	size_t n = 0;
	int err = 0;
	if (!mk_xattr_name_ok(name, strlen(name)))
		err = mk_fail(c, SQK_EINVAL, "-xattrs-add '%s': the name needs a user., trusted. "
			      "or security. prefix", arg);
	else if (mk_xattr_value(eq + 1, val, &n, &why))
		err = mk_fail(c, SQK_EINVAL, "-xattrs-add '%s': %s", arg, why);
	else if (n > 65536)
		err = mk_fail(c, SQK_ETOOBIG, "-xattrs-add '%s': the value is over 64 KiB", arg);
	if (err) {
		free(name);
		free(val);
		return err;
	}
	x->add[x->nadd++] = (struct mk_xattr_kv){ .name = name, .value = val, .size = n };
	return 0;
}

int mk_eopts_open(struct mk_ctx *c)
{
	const struct sqk_build_opts *o = c->opt;
	if (!o->xattrs_exclude && !o->xattrs_include && !o->nxattrs_add)
		return 0;
	struct mk_eopts *x = calloc(1, sizeof(*x));
	if (!x)
		return mk_fail(c, SQK_ENOMEM, "out of memory");
	c->eopts = x;
	int err = 0;
	if (o->xattrs_exclude && !(err = compile(c, &x->exclude, o->xattrs_exclude, "exclude")))
		x->have_exclude = true;
	if (!err && o->xattrs_include &&
	    !(err = compile(c, &x->include, o->xattrs_include, "include")))
		x->have_include = true;
	if (!err && o->nxattrs_add && !(x->add = calloc(o->nxattrs_add, sizeof(*x->add))))
		err = mk_fail(c, SQK_ENOMEM, "out of memory");
	for (size_t i = 0; !err && i < o->nxattrs_add; i++)
		err = parse_add(c, x, o->xattrs_add[i]);
	if (!err && x->nadd > 1)
		qsort(x->add, x->nadd, sizeof(*x->add), kv_cmp);
	return err;
}

void mk_eopts_free(struct mk_ctx *c)
{
	struct mk_eopts *x = c->eopts;
	if (!x)
		return;
	if (x->have_exclude)
		regfree(&x->exclude);
	if (x->have_include)
		regfree(&x->include);
	for (size_t i = 0; i < x->nadd; i++) {
		free((void *)x->add[i].name);
		free((void *)x->add[i].value);
	}
	free(x->add);
	free(x->kv);
	free(x);
	c->eopts = NULL;
}

/* The entry's xattrs, filtered, then the additions (an addition replaces a source xattr of the
 * same name); x->kv holds the new list, borrowing names and values. */
static int edit_xattrs(struct mk_ctx *c, struct mk_eopts *x, struct mk_entry *e)
{
	int err = mk_grow(c, &x->kv, &x->kv_cap, e->nxattrs + x->nadd + 1, sizeof(*x->kv));
	if (err)
		return err;
	size_t n = 0;
	bool user_ok = S_ISREG(e->mode) || S_ISDIR(e->mode);
	for (size_t i = 0; i < x->nadd; i++)
		if (user_ok || strncmp(x->add[i].name, "user.", 5))
			x->kv[n++] = x->add[i];
	size_t added = n;
	for (size_t i = 0; i < e->nxattrs; i++) {
		const char *nm = e->xattrs[i].name;
		if (x->have_exclude && !regexec(&x->exclude, nm, 0, NULL, 0))
			continue;
		if (x->have_include && regexec(&x->include, nm, 0, NULL, 0))
			continue;
		bool dup = false;
		for (size_t k = 0; k < added && !dup; k++)
			dup = !strcmp(x->kv[k].name, nm);
		if (!dup)
			x->kv[n++] = e->xattrs[i];
	}
	e->xattrs = x->kv;
	e->nxattrs = n;
	return 0;
}

int mk_eopts_entry(struct mk_ctx *c, struct mk_entry *e)
{
	const struct sqk_build_opts *o = c->opt;
	if (!*e->path) {
		if (o->root_mode >= 0)
			e->mode = (e->mode & S_IFMT) | (mode_t)o->root_mode;
		struct act_mode m;
		char why[256];
		if (o->root_symmode && !act_mode_parse(o->root_symmode, &m, why, sizeof(why)))
			e->mode = act_mode_apply(&m, e->mode);
		if (o->root_symmode)
			free(m.ops);
		if (o->root_uid >= 0)
			e->uid = (uint32_t)o->root_uid;
		if (o->root_gid >= 0)
			e->gid = (uint32_t)o->root_gid;
		if (o->root_time >= 0)
			e->mtime = o->root_time;
		else if (o->root_time == SQK_BUILD_TIME_NEWEST)
			e->mtime = MK_MTIME_NEWEST;
	}
	if (o->no_hardlinks)
		e->has_id = false;
	return c->eopts && !o->no_xattrs ? edit_xattrs(c, c->eopts, e) : 0;
}

void mk_eopts_info(struct mk_ctx *c, const struct mk_entry *e)
{
	if (!c->opt->info)
		return;
	const char *kind = S_ISDIR(e->mode) ? "directory" : S_ISLNK(e->mode) ? "symbolic link" :
			   S_ISCHR(e->mode) ? "character device" : S_ISBLK(e->mode) ? "block device"
			   : S_ISFIFO(e->mode) ? "fifo" : "unix domain socket";
	if (S_ISREG(e->mode))
		printf("file /%s, uncompressed size %llu bytes\n", e->path,
		       (unsigned long long)e->size);
	else
		printf("%s /%s\n", kind, e->path);
}
