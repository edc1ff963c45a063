/* SPDX-License-Identifier: BSD-2-Clause */
/* Pseudo definitions (--pseudo FILE, --pseudo-def DEF, -pd), mksquashfs 4.7's: entries added to
 * the tree after the source, or attributes of existing ones changed, so a user without root can
 * build an image with root-owned files and device nodes.
 *
 *   PATH d MODE UID GID                 directory (or new attributes of an existing one)
 *   PATH m MODE UID GID                 new mode and owner of an existing entry
 *   PATH c MODE UID GID MAJOR MINOR     character device (b: block device)
 *   PATH s MODE UID GID TARGET          symlink
 *   PATH i MODE UID GID f|s             fifo or socket
 *   PATH f MODE UID GID COMMAND         regular file: the output of /bin/sh -c COMMAND
 *   PATH R TIME MODE UID GID LEN OFF SPARSE   regular file: bytes of the file's data part
 *   PATH L IMAGE_PATH                   hard link to an entry of the image
 *   PATH l PATH2                        hard link to the image entry PATH2, or else the file
 *                                       PATH2 of this machine (not followed)
 *   PATH h HOST_PATH                    the file HOST_PATH of this machine, symlinks followed
 *   PATH x NAME=VALUE                   an xattr (VALUE: text, 0t text with \ooo, 0x hex, 0s
 *                                       base64) of an entry
 *
 * An upper-case type (D M C B S I F) takes a TIME (seconds, or a date string for date -d) after
 * the type. PATH is relative to the image root (a leading '/' is allowed); words may be
 * "quoted" and use \ escapes; a line ending in \ goes on on the next. MODE is octal or symbolic
 * (u+rwx,go=rx as chmod); UID and GID are numbers or names of this machine. Lines starting with
 * '#' and empty lines are skipped; unsquashfs -pf's "# START OF DATA" line ends the definitions
 * and starts the data R definitions read. Definitions apply in order, after the whole source.
 * Content (f h l P R) is pseudo_data.c's, xattrs pseudo_xattr.c's, pack files pseudo_pack.c's. */
#include <ctype.h>
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sqk/error.h"
#include "common/format.h"
#include "common/parse.h"
#include "mk.h"
#include "pseudo.h"
#include "pseudo_int.h"
#include "symmode.h"
#include "tree.h"
#include "source.h"

#define DATA_MARK "# START OF DATA - DO NOT MODIFY"

void pseudo_pdef_free(struct pdef *d)
{
	free(d->path);
	free(d->target);
	free(d->symmode);
	free(d->pattern);
}

void mk_pseudo_free(struct mk_pseudo *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->n; i++)
		pseudo_pdef_free(&p->v[i]);
	for (size_t i = 0; i < p->ndata; i++) {
		free(p->data[i].path);
		if (p->data[i].fd >= 0)
			close(p->data[i].fd);
	}
	pseudo_pdef_free(&p->pd);
	for (size_t i = 0; i < p->nnames; i++)
		free(p->names[i]);
	free(p->names);
	free(p->data);
	free(p->v);
	free(p);
}

char *pseudo_word(const char **s, bool *bad)
{
	const char *p = *s;
	while (*p == ' ' || *p == '\t')
		p++;
	if (!*p || *p == '\n' || *p == '\r')
		return NULL;
	size_t o = 0;
	char *w = malloc(strlen(p) + 1);
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

const char *pseudo_what(const struct pdef *d)
{
	return d->pack ? "pack file entry" : "pseudo definition";
}

int pseudo_err(struct mk_ctx *c, const struct pdef *d, const char *fmt, const char *arg)
{
	char why[512];
	snprintf(why, sizeof(why), fmt, arg ? arg : "");
	char col[24] = "";
	if (d->line && d->col)
		snprintf(col, sizeof(col), " column %u", d->col);
	return mk_fail(c, SQK_EINVAL, "%s at %s%s: %s", pseudo_what(d), d->where, col, why);
}

int pseudo_id(const char *s, bool user, uint32_t *out)
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

struct pdef *pseudo_new(struct mk_ctx *c, struct mk_pseudo *p, const char *where)
{
	if (mk_grow(c, &p->v, &p->cap, p->n + 1, sizeof(*p->v)))
		return NULL;
	struct pdef *d = &p->v[p->n];
	memset(d, 0, sizeof(*d));
	d->mtime = -1;
	snprintf(d->where, sizeof(d->where), "%s", where);
	return d;
}

/* pseudo_word, the column of the word noted in d for messages. */
static char *word_at(struct pdef *d, const char **s, bool *bad)
{
	if (d->line)
		d->col = (unsigned)(*s + strspn(*s, " \t") - d->line) + 1;
	return pseudo_word(s, bad);
}

/* The rest of the line from *s, as it is after the spaces before it (a command, NAME=VALUE,
 * a symlink target: mksquashfs reads these to the end of the line, unquoted). */
static char *rest_of_line(struct pdef *d, const char **s)
{
	const char *p = *s + strspn(*s, " \t");
	if (d->line)
		d->col = (unsigned)(p - d->line) + 1;
	size_t n = strcspn(p, "\r\n");
	*s = p + strlen(p);
	return n ? strndup(p, n) : NULL;
}

/* TIME: seconds, or a date string as date -d reads it (mksquashfs runs date too). */
static int parse_time_word(struct mk_ctx *c, struct pdef *d, const char *t)
{
	uint64_t v;
	if (!parse_u64(t, UINT32_MAX, &v)) {
		d->mtime = (int64_t)v;
		return 0;
	}
	int64_t secs;
	if (pseudo_date(c, t, &secs) || secs < 0 || secs > (int64_t)UINT32_MAX)
		return pseudo_err(c, d, "bad time '%s' (seconds or a date string date -d reads)",
				  t);
	d->mtime = secs;
	return 0;
}

/* MODE (octal or symbolic), UID, GID. */
static int parse_owner_mode(struct mk_ctx *c, struct pdef *d, char **w, const unsigned *cols)
{
	size_t at;
	uint32_t m;
	if (!w[2])
		return pseudo_err(c, d, "need MODE UID GID", NULL);
	d->col = cols[0];
	if (mk_symmode_apply(w[0], 0, d->type == 'd', &m, &at))
		return pseudo_err(c, d, "bad mode '%s' (octal up to 07777, or symbolic as "
				  "u+rwx,go=rx)", w[0]);
	if (mk_symmode_is_symbolic(w[0]) && !(d->symmode = strdup(w[0])))
		return mk_fail(c, SQK_ENOMEM, "out of memory");
	d->mode = m;
	d->col = cols[1];
	if (pseudo_id(w[1], true, &d->uid))
		return pseudo_err(c, d, "unknown user '%s'", w[1]);
	d->col = cols[2];
	if (pseudo_id(w[2], false, &d->gid))
		return pseudo_err(c, d, "unknown group '%s'", w[2]);
	return 0;
}

static int parse_u64_field(struct mk_ctx *c, struct pdef *d, const char **s, uint64_t max,
			   const char *what, uint64_t *out)
{
	bool bad = false;
	char *w = word_at(d, s, &bad);
	int err = !w || parse_u64(w, max, out) ? pseudo_err(c, d, "need %s", what) : 0;
	free(w);
	return err;
}

/* The words after MODE UID GID. */
static int parse_tail(struct mk_ctx *c, struct pdef *d, const char **s)
{
	bool bad = false;
	uint64_t v;
	int err = 0;
	switch (d->type) {
	case 'c':
	case 'b':
		err = parse_u64_field(c, d, s, 0xFFF, "MAJOR (0..4095) and MINOR (0..1048575)", &v);
		d->maj = (uint32_t)v;
		if (!err)
			err = parse_u64_field(c, d, s, 0xFFFFF,
					      "MAJOR (0..4095) and MINOR (0..1048575)", &v);
		d->min = (uint32_t)v;
		return err;
	case 'r':
		err = parse_u64_field(c, d, s, INT64_MAX, "LENGTH OFFSET SPARSE", &d->len);
		if (!err)
			err = parse_u64_field(c, d, s, INT64_MAX, "LENGTH OFFSET SPARSE", &d->off);
		if (!err)
			err = parse_u64_field(c, d, s, INT64_MAX, "LENGTH OFFSET SPARSE", &v);
		return err;
	case 'f':
		d->target = rest_of_line(d, s);
		return d->target ? 0 : pseudo_err(c, d, "'f' needs a COMMAND", NULL);
	case 's':
		d->target = rest_of_line(d, s);
		return d->target ? 0 : pseudo_err(c, d, "'s' needs the symlink target", NULL);
	case 'i':
		d->target = word_at(d, s, &bad);
		if (d->target && !bad && (!strcmp(d->target, "f") || !strcmp(d->target, "s")))
			return 0;
		return pseudo_err(c, d, "'i' needs f (fifo) or s (socket)", NULL);
	default:
		return 0;
	}
}

/* Takes the words after PATH and the type. */
static int parse_fields(struct mk_ctx *c, struct pdef *d, const char **s, bool timed)
{
	bool bad = false;
	char *w[3] = { 0 };
	int err = 0;
	if (strchr("lLh", d->type)) {
		d->target = word_at(d, s, &bad);
		return d->target && !bad ? 0 :
		       pseudo_err(c, d, "'%s' needs the path to link to", (char[]){ d->type, 0 });
	}
	if (d->type == 'x') {
		d->target = rest_of_line(d, s);
		return d->target ? pseudo_xattr_check(c, d) :
				   pseudo_err(c, d, "'x' needs NAME=VALUE", NULL);
	}
	if (timed) {
		char *t = word_at(d, s, &bad);
		err = t ? parse_time_word(c, d, t) : pseudo_err(c, d, "missing TIME", NULL);
		free(t);
		if (err)
			return err;
	}
	unsigned cols[3];
	for (int i = 0; i < 3; i++) {
		w[i] = word_at(d, s, &bad);
		cols[i] = d->col;
	}
	err = parse_owner_mode(c, d, w, cols);
	for (int i = 0; i < 3; i++)
		free(w[i]);
	if (!err)
		err = parse_tail(c, d, s);
	if (!err && bad)
		err = pseudo_err(c, d, "unbalanced quotes", NULL);
	char *extra = err ? NULL : word_at(d, s, &bad);
	if (extra) {
		err = pseudo_err(c, d, "unexpected '%s' at the end", extra);
		free(extra);
	}
	return err;
}

/* The type letter: its internal form and whether a TIME follows; 0 when unknown. */
static char type_of(const char *t, bool *timed)
{
	*timed = false;
	if (!t || strlen(t) != 1)
		return 0;
	if (strchr("dmcbsifxlLh", t[0]))
		return t[0];
	if (strchr("DMCBSIFR", t[0])) {
		*timed = true;
		return (char)tolower((unsigned char)t[0]);
	}
	return 0;
}

static int parse_line(struct mk_ctx *c, struct pdef *d, const char *s, bool in_file)
{
	bool bad = false, timed;
	char *path = word_at(d, &s, &bad), *type = path ? word_at(d, &s, &bad) : NULL;
	char t = type_of(type, &timed);
	int err = 0;
	if (bad)
		err = pseudo_err(c, d, "unbalanced quotes", NULL);
	else if (!path || !t)
		err = pseudo_err(c, d, "need PATH TYPE ... with TYPE one of d m c b s i f l L h x "
				 "(upper case D M C B S I F R: with a TIME)", NULL);
	else if (type[0] == 'R' && !in_file)
		err = pseudo_err(c, d, "'R' is only read from a pseudo file (its data part)", NULL);
	char *rel = path;
	while (!err && *rel == '/')
		rel++;
	if (!err && !*rel && !strchr("mdx", t))
		err = pseudo_err(c, d, "the root can only take types d, m and x", NULL);
	if (!err) {
		d->path = strdup(rel);
		d->type = type[0] == 'L' ? 'L' : t;
		err = d->path ? parse_fields(c, d, &s, timed) :
				mk_fail(c, SQK_ENOMEM, "out of memory");
	}
	free(path);
	free(type);
	return err;
}

static int add_line(struct mk_ctx *c, struct mk_pseudo *p, const char *line, const char *where,
		    bool in_file)
{
	const char *s = line + strspn(line, " \t");
	if (!*s || *s == '#' || *s == '\n' || *s == '\r')
		return 0;
	struct pdef *d = pseudo_new(c, p, where);
	if (!d)
		return SQK_ENOMEM;
	d->data = (uint32_t)p->ndata; /* R: the data part of this file, found at its end */
	d->line = line;
	int err = parse_line(c, d, s, in_file);
	d->line = NULL;
	if (err) {
		pseudo_pdef_free(d);
		return err;
	}
	p->n++;
	return 0;
}

/* Reads one logical line (a trailing \ joins the next, as mksquashfs): 1 at the end. */
static int read_line(FILE *f, char **line, size_t *cap, unsigned *no)
{
	size_t len = 0;
	char *part = NULL;
	size_t pcap = 0;
	ssize_t n;
	int r = 1;
	while ((n = getline(&part, &pcap, f)) >= 0) {
		(*no)++;
		r = 0;
		while (n && (part[n - 1] == '\n' || part[n - 1] == '\r'))
			part[--n] = 0;
		bool more = n && part[n - 1] == '\\' && !(n >= 2 && part[n - 2] == '\\');
		if (more)
			part[--n] = 0;
		char *nl = realloc(*line, len + (size_t)n + 1);
		if (!nl) {
			free(part);
			return -1;
		}
		*line = nl;
		*cap = len + (size_t)n + 1;
		memcpy(*line + len, part, (size_t)n + 1);
		len += (size_t)n;
		if (!more)
			break;
	}
	free(part);
	return r;
}

/* After the data mark: where the data starts (its "#" line skipped). */
static int take_data(struct mk_ctx *c, struct mk_pseudo *p, FILE *f, const char *file)
{
	int err = mk_grow(c, &p->data, &p->data_cap, p->ndata + 1, sizeof(*p->data));
	if (err)
		return err;
	struct pdata *pd = &p->data[p->ndata];
	memset(pd, 0, sizeof(*pd));
	pd->fd = -1;
	if (fgetc(f) != '#' || fgetc(f) != '\n')
		return mk_fail(c, SQK_EINVAL, "pseudo file '%s': no '#' line after '%s'", file,
			       DATA_MARK);
	if (f == stdin)
		err = pseudo_spool(c, f, &pd->fd);
	else
		pd->start = (uint64_t)ftello(f);
	if (!err && !(pd->path = strdup(file)))
		err = mk_fail(c, SQK_ENOMEM, "out of memory");
	if (!err)
		p->ndata++;
	return err;
}

static int load_file(struct mk_ctx *c, struct mk_pseudo *p, const char *file)
{
	bool std = !strcmp(file, "-");
	FILE *f = std ? stdin : fopen(file, "r");
	if (!f)
		return mk_fail(c, sqk_from_errno(errno), "cannot open pseudo file '%s': %s", file,
			       strerror(errno));
	const char *name = std ? "<stdin>" : file;
	char *line = NULL;
	size_t cap = 0, first = p->n;
	unsigned no = 0;
	int err = 0, r;
	bool data = false;
	while (!err && (r = read_line(f, &line, &cap, &no)) == 0) {
		char where[160];
		if (!strcmp(line, DATA_MARK)) {
			err = take_data(c, p, f, name);
			data = true;
			break;
		}
		snprintf(where, sizeof(where), "%.140s:%u", name, no);
		err = add_line(c, p, line, where, true);
	}
	if (!err && r < 0)
		err = mk_fail(c, SQK_ENOMEM, "out of memory");
	if (!err && ferror(f))
		err = mk_fail(c, SQK_EIO, "cannot read pseudo file '%s'", name);
	for (size_t i = first; !err && !data && i < p->n; i++)
		if (p->v[i].type == 'r')
			err = pseudo_err(c, &p->v[i], "'R' without a '%s' line in the file",
					 DATA_MARK);
	free(line);
	if (!std)
		fclose(f);
	return err;
}

/* -pd "d MODE UID GID" or "D TIME MODE UID GID". */
static int load_pd(struct mk_ctx *c, struct mk_pseudo *p, const char *def)
{
	struct pdef *d = &p->pd;
	bool bad = false, timed;
	memset(d, 0, sizeof(*d));
	d->mtime = -1;
	snprintf(d->where, sizeof(d->where), "-pd");
	const char *s = def;
	char *type = pseudo_word(&s, &bad);
	int err = type_of(type, &timed) == 'd' ? 0 :
		  pseudo_err(c, d, "need \"d MODE UID GID\" or \"D TIME MODE UID GID\"", NULL);
	d->type = 'd';
	free(type);
	if (!err)
		err = parse_fields(c, d, &s, timed);
	p->have_pd = !err;
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

/* The paths apply_one looks up: each definition's path, its parents and a link's target. */
static int collect_names(struct mk_ctx *c, struct mk_pseudo *p)
{
	int err = 0;
	for (size_t i = 0; i < p->n && !err; i++) {
		const struct pdef *d = &p->v[i];
		for (const char *s = d->path; !err && s && *s; s = strchr(s + 1, '/'))
			err = add_name(c, p, d->path, (size_t)(s - d->path));
		if (!err)
			err = add_name(c, p, d->path, strlen(d->path));
		if (!err && strchr("lL", d->type)) {
			const char *t = d->target + strspn(d->target, "/");
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
	if (!o->npseudo && !o->pack_file && !o->pseudo_dir)
		return 0;
	struct mk_pseudo *p = calloc(1, sizeof(*p));
	if (!p)
		return mk_fail(c, SQK_ENOMEM, "out of memory");
	int err = o->pseudo_dir ? load_pd(c, p, o->pseudo_dir) : 0;
	if (!err && o->pack_file)
		err = pseudo_pack_load(c, p, o->pack_file, o->pack_dir);
	for (int i = 0; i < o->npseudo && !err; i++)
		err = o->pseudo[i].file ? load_file(c, p, o->pseudo[i].arg)
					: add_line(c, p, o->pseudo[i].arg, "--pseudo-def", false);
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

/* The permission bits d gives an entry whose bits were old. */
static uint32_t perm_of(const struct pdef *d, uint32_t old, bool dir)
{
	uint32_t m = d->mode;
	size_t at;
	if (d->symmode && mk_symmode_apply(d->symmode, old, dir, &m, &at))
		m = d->mode; /* checked at load */
	return m;
}

/* Makes the missing directories above d's path with the -pd attributes (p->pd). */
static int make_parents(struct mk_ctx *c, const struct mk_pseudo *p, const struct pdef *d)
{
	int err = 0;
	for (const char *s = strchr(d->path, '/'); s && !err; s = strchr(s + 1, '/')) {
		char *dir = strndup(d->path, (size_t)(s - d->path));
		if (!dir)
			return mk_fail(c, SQK_ENOMEM, "out of memory");
		struct mk_node *n = mk_tree_find(c, dir);
		if (!n) {
			struct mk_entry e = { .path = dir, .origin = "-pd", .uid = p->pd.uid,
					      .gid = p->pd.gid, .mode = S_IFDIR |
					      perm_of(&p->pd, 0, true) };
			struct mk_file_ref fr;
			e.mtime = p->pd.mtime >= 0 ? p->pd.mtime : c->opt->default_mtime;
			err = mk_tree_add(c, &e, &fr);
		}
		free(dir);
	}
	return err;
}

static int check_parent(struct mk_ctx *c, const struct mk_pseudo *p, const struct pdef *d)
{
	const char *slash = strrchr(d->path, '/');
	if (!slash || d->parents)
		return 0; /* pack files: made as gensquashfs makes them (--default-* attributes) */
	if (p->have_pd)
		return make_parents(c, p, d);
	char *parent = strndup(d->path, (size_t)(slash - d->path));
	struct mk_node *pn = parent ? mk_tree_find(c, parent) : NULL;
	free(parent);
	if (!pn || !S_ISDIR(pn->mode))
		return pseudo_err(c, d, "the parent directory of '%s' is not in the image (-pd "
				  "makes missing ones)", d->path);
	return 0;
}

static int apply_attrs(struct mk_ctx *c, const struct pdef *d, struct mk_node *n)
{
	if (!n)
		return pseudo_err(c, d, "'%s' is not in the image", d->path);
	if (d->type == 'd' && !S_ISDIR(n->mode))
		return pseudo_err(c, d, "'%s' exists and is not a directory", d->path);
	int64_t mtime = d->mtime >= 0 ? d->mtime : -1;
	return mk_tree_set_attrs(c, n, perm_of(d, n->mode, S_ISDIR(n->mode)), d->uid, d->gid,
				 mtime);
}

/* L (and l naming an image entry): a hard link. */
static int apply_link(struct mk_ctx *c, const struct pdef *d, struct mk_node *t)
{
	const char *target = d->target + strspn(d->target, "/");
	if (!t || S_ISDIR(t->mode))
		return pseudo_err(c, d, "'%s' is not a file in the image", d->target);
	struct mk_entry e = { .path = d->path, .origin = d->where, .link = target,
			      .mode = S_IFREG };
	struct mk_file_ref fr;
	return mk_tree_add(c, &e, &fr);
}

int pseudo_apply_one(struct mk_ctx *c, struct mk_pseudo *p, const struct pdef *d)
{
	struct mk_node *n = mk_tree_find(c, d->path);
	if (d->type == 'x')
		return pseudo_xattr_apply(c, d);
	if (d->type == 'g')
		return pseudo_glob_apply(c, p, d);
	if (d->type == 'm' || (d->type == 'd' && n))
		return apply_attrs(c, d, n);
	if (n)
		return pseudo_err(c, d, "'%s' already exists (use type m to change it)", d->path);
	int err = check_parent(c, p, d);
	if (err)
		return err;
	struct mk_node *t = strchr("lL", d->type) ?
			    mk_tree_find(c, d->target + strspn(d->target, "/")) : NULL;
	if (d->type == 'L' || (d->type == 'l' && t))
		return apply_link(c, d, t);
	bool done;
	if ((err = pseudo_apply_data(c, p, d, &done)) || done)
		return err;
	struct mk_entry e = { .path = d->path, .origin = d->where, .uid = d->uid, .gid = d->gid,
			      .dev_major = d->maj, .dev_minor = d->min };
	e.mtime = d->mtime >= 0 ? d->mtime : c->opt->default_mtime;
	e.mode = type_bits(d) | (d->type == 's' ? 0777 : perm_of(d, 0, d->type == 'd'));
	if (d->type == 's')
		e.target = d->target;
	struct mk_file_ref data; /* none of these types has content to read */
	return mk_tree_add(c, &e, &data);
}

int mk_pseudo_apply(struct mk_ctx *c, struct mk_pseudo *p)
{
	int err = 0;
	int64_t fuid = c->optv.force_uid, fgid = c->optv.force_gid;
	if (c->src->pseudo_override) /* mk_owner reads them as each entry is added */
		c->optv.force_uid = c->optv.force_gid = -1;
	for (size_t i = 0; p && i < p->n && !err; i++)
		err = pseudo_apply_one(c, p, &p->v[i]);
	c->optv.force_uid = fuid;
	c->optv.force_gid = fgid;
	return err;
}
