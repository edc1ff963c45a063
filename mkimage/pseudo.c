/* SPDX-License-Identifier: BSD-2-Clause */
/* Pseudo definitions (--pseudo FILE, --pseudo-def DEF), in the spirit of mksquashfs's: entries
 * added to the tree after the source, or attributes of existing ones changed, so a user without
 * root can build an image with root-owned files and device nodes.
 *
 *   PATH d MODE UID GID                 directory (or new attributes of an existing one)
 *   PATH m MODE UID GID                 new mode and owner of an existing entry
 *   PATH c MODE UID GID MAJOR MINOR     character device (b: block device)
 *   PATH s MODE UID GID TARGET          symlink
 *   PATH i MODE UID GID f|s             fifo or socket
 *   PATH l TARGET_PATH                  hard link to an existing file
 *
 * An upper-case type (D M C B S I) takes a TIME (seconds) after the type. PATH is relative to the
 * image root (a leading '/' is allowed); PATH and TARGET may be "quoted" and use \ escapes. MODE
 * is octal; UID and GID are numbers or user and group names of this machine. Lines starting with
 * '#' and empty lines are skipped. Definitions apply in order, after the whole source. */
#include <ctype.h>
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "sqk/error.h"
#include "common/format.h"
#include "common/parse.h"
#include "mk.h"
#include "pseudo.h"
#include "tree.h"
#include "source.h"

struct pdef {
	char *path;
	char type;          /* lower case */
	int64_t mtime;      /* -1: the default */
	uint32_t mode, uid, gid, maj, min;
	char *target;       /* s: symlink target; l: the linked path; i: "f" or "s" */
	char where[160];    /* "FILE:LINE" or "--pseudo-def" for messages */
};

struct mk_pseudo {
	struct pdef *v;
	size_t n, cap;
	char **names;       /* the paths the definitions look up, sorted (mk_pseudo_names) */
	size_t nnames, names_cap;
};

static void pdef_free(struct pdef *d)
{
	free(d->path);
	free(d->target);
}

void mk_pseudo_free(struct mk_pseudo *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->n; i++)
		pdef_free(&p->v[i]);
	for (size_t i = 0; i < p->nnames; i++)
		free(p->names[i]);
	free(p->names);
	free(p->v);
	free(p);
}

/* Next word of *s: quoted or bare, with \ escapes; NULL at the end of the line. */
static char *next_word(const char **s, bool *bad)
{
	const char *p = *s;
	while (*p == ' ' || *p == '\t')
		p++;
	if (!*p || *p == '\n' || *p == '\r')
		return NULL;
	size_t cap = strlen(p) + 1, o = 0;
	char *w = malloc(cap);
	if (!w) {
		*bad = true;
		return NULL;
	}
	bool quoted = false;
	for (; *p && *p != '\n' && *p != '\r'; p++) {
		if (*p == '"') {
			quoted = !quoted;
			continue;
		}
		if (!quoted && (*p == ' ' || *p == '\t'))
			break;
		if (*p == '\\' && p[1])
			p++;
		w[o++] = *p;
	}
	if (quoted)
		*bad = true;
	w[o] = 0;
	*s = p;
	return w;
}

static int perr(struct mk_ctx *c, const struct pdef *d, const char *fmt, const char *arg)
{
	char why[512];
	snprintf(why, sizeof(why), fmt, arg ? arg : "");
	return mk_fail(c, SQK_EINVAL, "pseudo definition at %s: %s", d->where, why);
}

static int parse_id(const char *s, bool user, uint32_t *out)
{
	uint64_t v;
	if (!parse_u64(s, UINT32_MAX, &v)) {
		*out = (uint32_t)v;
		return 0;
	}
	if (user) {
		struct passwd *pw = getpwnam(s);
		if (!pw)
			return -1;
		*out = pw->pw_uid;
	} else {
		struct group *gr = getgrnam(s);
		if (!gr)
			return -1;
		*out = gr->gr_gid;
	}
	return 0;
}

/* Takes the words after PATH and the type. */
static int parse_fields(struct mk_ctx *c, struct pdef *d, const char **s, bool timed)
{
	bool bad = false;
	char *w[4] = { 0 };
	int err = 0;
	uint64_t v;
	if (d->type == 'l') {
		d->target = next_word(s, &bad);
		return d->target && !bad ? 0 : perr(c, d, "'l' needs the path to link to", NULL);
	}
	if (timed) {
		char *t = next_word(s, &bad);
		if (!t || parse_u64(t, UINT32_MAX, &v))
			err = perr(c, d, "bad or missing time '%s'", t);
		else
			d->mtime = (int64_t)v;
		free(t);
		if (err)
			return err;
	}
	for (int i = 0; i < 3; i++)
		w[i] = next_word(s, &bad);
	if (!w[2])
		err = perr(c, d, "need MODE UID GID", NULL);
	else if (parse_mode(w[0], &d->mode))
		err = perr(c, d, "bad mode '%s' (octal, up to 07777)", w[0]);
	else if (parse_id(w[1], true, &d->uid))
		err = perr(c, d, "unknown user '%s'", w[1]);
	else if (parse_id(w[2], false, &d->gid))
		err = perr(c, d, "unknown group '%s'", w[2]);
	for (int i = 0; i < 3; i++)
		free(w[i]);
	if (err)
		return err;
	if (d->type == 'c' || d->type == 'b') {
		char *a = next_word(s, &bad), *b = next_word(s, &bad);
		if (!a || !b || parse_u64(a, 0xFFF, &v))
			err = perr(c, d, "need MAJOR (0..4095) and MINOR (0..1048575)", NULL);
		else {
			d->maj = (uint32_t)v;
			if (parse_u64(b, 0xFFFFF, &v))
				err =
				    perr(c, d, "need MAJOR (0..4095) and MINOR (0..1048575)", NULL);
			d->min = (uint32_t)v;
		}
		free(a);
		free(b);
	} else if (d->type == 's' || d->type == 'i') {
		d->target = next_word(s, &bad);
		if (!d->target ||
		    (d->type == 'i' && strcmp(d->target, "f") && strcmp(d->target, "s")))
			err = perr(c, d, d->type == 's' ? "'s' needs the symlink target" :
							  "'i' needs f (fifo) or s (socket)", NULL);
	}
	if (!err && bad)
		err = perr(c, d, "unbalanced quotes", NULL);
	char *extra = err ? NULL : next_word(s, &bad);
	if (extra) {
		err = perr(c, d, "unexpected '%s' at the end", extra);
		free(extra);
	}
	return err;
}

static int add_line(struct mk_ctx *c, struct mk_pseudo *p, const char *line, const char *where)
{
	const char *s = line;
	while (*s == ' ' || *s == '\t')
		s++;
	if (!*s || *s == '#' || *s == '\n' || *s == '\r')
		return 0;
	int err = mk_grow(c, &p->v, &p->cap, p->n + 1, sizeof(*p->v));
	if (err)
		return err;
	struct pdef *d = &p->v[p->n];
	memset(d, 0, sizeof(*d));
	d->mtime = -1;
	snprintf(d->where, sizeof(d->where), "%s", where);
	bool bad = false;
	char *path = next_word(&s, &bad), *type = next_word(&s, &bad);
	if (bad)
		err = perr(c, d, "unbalanced quotes", NULL);
	else if (!path || !type || strlen(type) != 1 || !strchr("dmcbsilDMCBSI", type[0]))
		err = type && strchr("fFR", type[0])
			  ? perr(c, d, "type '%s' (content from a command) is not supported", type)
			  : perr(c, d, "need PATH TYPE ... with TYPE one of d m c b s i l", NULL);
	char *rel = path;
	while (!err && *rel == '/')
		rel++;
	if (!err && !*rel && !strchr("mMdD", type[0]))
		err = perr(c, d, "the root can only take types d and m", NULL);
	if (!err) {
		d->path = strdup(rel);
		d->type = (char)tolower((unsigned char)type[0]);
		err = d->path ? parse_fields(c, d, &s, isupper((unsigned char)type[0]))
			      : mk_fail(c, SQK_ENOMEM, "out of memory");
	}
	free(path);
	free(type);
	if (err) {
		pdef_free(d);
		return err;
	}
	p->n++;
	return 0;
}

static int load_file(struct mk_ctx *c, struct mk_pseudo *p, const char *file)
{
	FILE *f = fopen(file, "r");
	if (!f)
		return mk_fail(c, sqk_from_errno(errno), "cannot open pseudo file '%s': %s", file,
			       strerror(errno));
	char *line = NULL;
	size_t cap = 0;
	unsigned no = 0;
	int err = 0;
	while (!err && getline(&line, &cap, f) >= 0) {
		char where[160];
		snprintf(where, sizeof(where), "%.140s:%u", file, ++no);
		err = add_line(c, p, line, where);
	}
	if (!err && ferror(f))
		err = mk_fail(c, SQK_EIO, "cannot read pseudo file '%s'", file);
	free(line);
	fclose(f);
	return err;
}

/* Adds path[0..len), without trailing '/' (mk_tree_find ignores them), to the names. */
static int add_name(struct mk_ctx *c, struct mk_pseudo *p, const char *path, size_t len)
{
	while (len && path[len - 1] == '/')
		len--;
	int err = mk_grow(c, &p->names, &p->names_cap, p->nnames + 1, sizeof(*p->names));
	if (err)
		return err;
	if (!(p->names[p->nnames] = strndup(path, len)))
		return mk_fail(c, SQK_ENOMEM, "out of memory");
	p->nnames++;
	return 0;
}

static int str_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The paths apply_one looks up: each definition's path, its parent and a link's target. */
static int collect_names(struct mk_ctx *c, struct mk_pseudo *p)
{
	int err = 0;
	for (size_t i = 0; i < p->n && !err; i++) {
		const struct pdef *d = &p->v[i];
		const char *slash = strrchr(d->path, '/');
		err = add_name(c, p, d->path, strlen(d->path));
		if (!err && slash)
			err = add_name(c, p, d->path, (size_t)(slash - d->path));
		if (!err && d->type == 'l') {
			const char *t = d->target[0] == '/' ? d->target + 1 : d->target;
			err = add_name(c, p, t, strlen(t));
		}
	}
	if (!err && p->nnames > 1)
		qsort(p->names, p->nnames, sizeof(*p->names), str_cmp);
	return err;
}

bool mk_pseudo_names(const struct mk_pseudo *p, const char *path)
{
	return bsearch(&path, p->names, p->nnames, sizeof(*p->names), str_cmp) != NULL;
}

int mk_pseudo_load(struct mk_ctx *c, struct mk_pseudo **out)
{
	const struct sqk_build_source *o = c->src;
	*out = NULL;
	if (!o->npseudo)
		return 0;
	struct mk_pseudo *p = calloc(1, sizeof(*p));
	if (!p)
		return mk_fail(c, SQK_ENOMEM, "out of memory");
	int err = 0;
	for (int i = 0; i < o->npseudo && !err; i++)
		err = o->pseudo[i].file ? load_file(c, p, o->pseudo[i].arg)
					: add_line(c, p, o->pseudo[i].arg, "--pseudo-def");
	if (!err)
		err = collect_names(c, p);
	if (err) {
		mk_pseudo_free(p);
		return err;
	}
	*out = p;
	return 0;
}

static mode_t type_bits(const struct pdef *d)
{
	switch (d->type) {
	case 'd': return S_IFDIR;
	case 'c': return S_IFCHR;
	case 'b': return S_IFBLK;
	case 's': return S_IFLNK;
	case 'i': return d->target[0] == 's' ? S_IFSOCK : S_IFIFO;
	default: return S_IFREG;
	}
}

static int apply_one(struct mk_ctx *c, const struct pdef *d)
{
	struct mk_node *n = mk_tree_find(c, d->path);
	int64_t mtime = d->mtime >= 0 ? d->mtime : c->opt->default_mtime;
	if (d->type == 'm' || (d->type == 'd' && n)) {
		if (!n)
			return perr(c, d, "'%s' is not in the image", d->path);
		if (d->type == 'd' && !S_ISDIR(n->mode))
			return perr(c, d, "'%s' exists and is not a directory", d->path);
		return mk_tree_set_attrs(c, n, d->mode, d->uid, d->gid, d->mtime >= 0 ? mtime : -1);
	}
	if (n)
		return perr(c, d, "'%s' already exists (use type m to change it)", d->path);
	const char *slash = strrchr(d->path, '/');
	if (slash) {
		char *parent = strndup(d->path, (size_t)(slash - d->path));
		struct mk_node *pn = parent ? mk_tree_find(c, parent) : NULL;
		free(parent);
		if (!pn || !S_ISDIR(pn->mode))
			return perr(c, d, "the parent directory of '%s' is not in the image",
				    d->path);
	}
	struct mk_entry e = { .path = d->path, .origin = d->where, .uid = d->uid, .gid = d->gid,
			      .mtime = mtime, .dev_major = d->maj, .dev_minor = d->min };
	e.mode = type_bits(d) | d->mode;
	if (d->type == 's')
		e.target = d->target;
	if (d->type == 'l') {
		struct mk_node *t =
		    mk_tree_find(c, d->target[0] == '/' ? d->target + 1 : d->target);
		if (!t || S_ISDIR(t->mode))
			return perr(c, d, "'%s' is not a file in the image", d->target);
		e.link = d->target[0] == '/' ? d->target + 1 : d->target;
		e.mode = S_IFREG;
	}
	struct mk_file_ref data; /* no pseudo type has content to read */
	return mk_tree_add(c, &e, &data);
}

int mk_pseudo_apply(struct mk_ctx *c, const struct mk_pseudo *p)
{
	int err = 0;
	for (size_t i = 0; p && i < p->n && !err; i++)
		err = apply_one(c, &p->v[i]);
	return err;
}
