/* SPDX-License-Identifier: BSD-2-Clause */
/* gensquashfs pack files (--pack FILE, -F), squashfs-tools-ng 1.2's syntax, read into pseudo
 * definitions (pseudo_int.h):
 *
 *   file PATH MODE UID GID [LOCATION]   content from LOCATION (default: PATH), relative to the
 *                                       pack directory (--pack-dir), else to the file's own
 *   dir PATH MODE UID GID
 *   nod PATH MODE UID GID c|b MAJOR MINOR
 *   slink PATH MODE UID GID TARGET
 *   link PATH DUMMY DUMMY DUMMY TARGET  a hard link to the image path TARGET
 *   pipe PATH MODE UID GID              (sock: a socket)
 *   glob PATH MODE|* UID|* GID|* [OPTIONS...] [LOCATION]   a directory scanned (pseudo_glob.c)
 *
 * PATH may be "quoted" (\" and \\ inside); MODE is octal, UID and GID decimal; the last field
 * is the rest of the line. Missing parent directories are made with the --default-*
 * attributes, and every entry takes the default mtime, as gensquashfs's defaults do. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sqk/error.h"
#include "common/parse.h"
#include "pseudo_int.h"

/* PATH: quoted (with \" and \\) or bare, then at least one space; canonical (no leading,
 * trailing or doubled '/'). NULL on a bad path. */
static char *pack_path(const char **s)
{
	const char *p = *s;
	char *w = malloc(strlen(p) + 1), *o = w;
	if (!w)
		return NULL;
	if (*p == '"') {
		for (p++; *p && *p != '"'; p++) {
			if (*p == '\\' && (p[1] == '"' || p[1] == '\\'))
				p++;
			*o++ = *p;
		}
		if (*p++ != '"')
			o = NULL;
	} else {
		while (*p && !isspace((unsigned char)*p))
			*o++ = *p++;
	}
	if (!o || !isspace((unsigned char)*p)) {
		free(w);
		return NULL;
	}
	*o = 0;
	*s = p;
	char *r = w, *q = w; /* canonical form, in place */
	for (const char *t = w; *t;) {
		t += strspn(t, "/");
		size_t n = strcspn(t, "/");
		if (n && q != r)
			*q++ = '/';
		memmove(q, t, n);
		q += n;
		t += n;
	}
	*q = 0;
	return r;
}

static const struct {
	const char *kw;
	char type;
	bool extra;  /* needs the last field */
} kws[] = {
	{ "file", 'P', false }, { "dir", 'd', false }, { "nod", 'c', true },
	{ "slink", 's', true },	{ "link", 'L', true }, { "pipe", 'i', false },
	{ "sock", 'i', false }, { "glob", 'g', false },
};

/* The numbers MODE UID GID; link's are dummies. */
static int pack_numbers(struct mk_ctx *c, struct pdef *d, const char **s)
{
	uint64_t v[3];
	const char *what[3] = { "MODE (octal, up to 07777)", "UID", "GID" };
	for (int i = 0; i < 3; i++) {
		*s += strspn(*s, " \t");
		size_t n = strcspn(*s, " \t\r\n");
		char w[32];
		if (!n || n >= sizeof(w))
			return pseudo_err(c, d, "need %s", what[i]);
		memcpy(w, *s, n);
		w[n] = 0;
		*s += n;
		uint32_t m = 0;
		if (d->type == 'g' && !strcmp(w, "*")) { /* glob: from the scanned file */
			d->glob |= (uint32_t)PGLOB_MODE_SRC << i;
			v[i] = 0;
			continue;
		}
		if (d->type != 'L' && (i ? parse_u64(w, UINT32_MAX, &v[i]) : parse_mode(w, &m)))
			return pseudo_err(c, d, "bad %s", what[i]);
		if (!i)
			v[0] = m;
	}
	d->mode = (uint32_t)v[0];
	d->uid = (uint32_t)v[1];
	d->gid = (uint32_t)v[2];
	return 0;
}

/* The last field: the rest of the line, trimmed (NULL: none). */
static char *pack_extra(const char *s)
{
	s += strspn(s, " \t");
	size_t n = strcspn(s, "\r\n");
	while (n && isspace((unsigned char)s[n - 1]))
		n--;
	return n ? strndup(s, n) : NULL;
}

/* file's LOCATION relative to dir. */
static int pack_location(struct mk_ctx *c, struct pdef *d, char *loc, const char *dir)
{
	const char *l = loc ? loc : d->path;
	if (l[0] != '/' && asprintf(&d->target, "%s/%s", dir, l) < 0)
		d->target = NULL;
	else if (l[0] == '/')
		d->target = strdup(l);
	free(loc);
	return d->target ? 0 : mk_fail(c, SQK_ENOMEM, "out of memory");
}

/* The type-specific field of nod, slink, link, pipe and sock. */
static int pack_tail(struct mk_ctx *c, struct pdef *d, const char *kw, char *extra)
{
	if (!strcmp(kw, "nod")) {
		char t;
		int n = 0;
		if (!extra || sscanf(extra, "%c %u %u%n", &t, &d->maj, &d->min, &n) != 3 ||
		    extra[n] || !strchr("cCbB", t) || d->maj > 0xFFF || d->min > 0xFFFFF) {
			free(extra);
			return pseudo_err(c, d, "nod needs c|b MAJOR (0..4095) MINOR (0..1048575)",
					  NULL);
		}
		d->type = (char)tolower((unsigned char)t);
		free(extra);
		return 0;
	}
	if (!strcmp(kw, "pipe") || !strcmp(kw, "sock")) {
		free(extra);
		d->target = strdup(kw[0] == 'p' ? "f" : "s");
		return d->target ? 0 : mk_fail(c, SQK_ENOMEM, "out of memory");
	}
	d->target = extra; /* slink's target, link's image path */
	return 0;
}

static int pack_line(struct mk_ctx *c, struct pdef *d, const char *s, const char *dir)
{
	size_t k = 0, nk = sizeof(kws) / sizeof(kws[0]);
	d->pack = true;
	while (k < nk && !(strncmp(s, kws[k].kw, strlen(kws[k].kw)) == 0 &&
			   isspace((unsigned char)s[strlen(kws[k].kw)])))
		k++;
	if (k == nk)
		return pseudo_err(c, d, "unknown entry type (file, dir, nod, slink, link, pipe, "
				  "sock or glob)", NULL);
	d->type = kws[k].type;
	d->parents = true;
	s += strlen(kws[k].kw) + strspn(s + strlen(kws[k].kw), " \t");
	if (!(d->path = pack_path(&s)))
		return pseudo_err(c, d, "bad PATH (quote it if it has spaces)", NULL);
	if (!*d->path && !strchr("dg", d->type))
		return pseudo_err(c, d, "cannot use / as the path of %s", kws[k].kw);
	int err = pack_numbers(c, d, &s);
	if (err)
		return err;
	char *extra = pack_extra(s);
	if (kws[k].extra && !extra)
		return pseudo_err(c, d, "missing the last field of %s", kws[k].kw);
	if (d->type == 'P')
		return pack_location(c, d, extra, dir);
	if (d->type == 'g') {
		err = pseudo_glob_parse(c, d, extra ? extra : "", dir);
		free(extra);
		return err;
	}
	if (d->type == 'd') {
		err = extra ? pseudo_err(c, d, "unexpected '%s' at the end", extra) : 0;
		free(extra);
		return err;
	}
	return pack_tail(c, d, kws[k].kw, extra);
}

/* The directory of file (for relative locations); caller frees. */
static char *file_dir(const char *file)
{
	const char *slash = strrchr(file, '/');
	return slash ? strndup(file, slash == file ? 1 : (size_t)(slash - file)) : strdup(".");
}

int pseudo_pack_load(struct mk_ctx *c, struct mk_pseudo *p, const char *file, const char *dir)
{
	bool std = !strcmp(file, "-");
	FILE *f = std ? stdin : fopen(file, "r");
	if (!f)
		return mk_fail(c, sqk_from_errno(errno), "cannot open pack file '%s': %s", file,
			       strerror(errno));
	char *base = dir ? strdup(dir) : file_dir(std ? "." : file), *line = NULL;
	size_t cap = 0;
	unsigned no = 0;
	int err = base ? 0 : mk_fail(c, SQK_ENOMEM, "out of memory");
	while (!err && getline(&line, &cap, f) >= 0) {
		const char *s = line + strspn(line, " \t");
		char where[160];
		no++;
		if (!*s || *s == '#' || *s == '\n' || *s == '\r')
			continue;
		snprintf(where, sizeof(where), "%.140s:%u", std ? "<stdin>" : file, no);
		struct pdef *d = pseudo_new(c, p, where);
		if (!d)
			err = SQK_ENOMEM;
		else if ((err = pack_line(c, d, s, base)))
			pseudo_pdef_free(d);
		else
			p->n++;
	}
	if (!err && ferror(f))
		err = mk_fail(c, SQK_EIO, "cannot read pack file '%s'", file);
	free(line);
	free(base);
	if (!std)
		fclose(f);
	return err;
}
