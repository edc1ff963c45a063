/* SPDX-License-Identifier: BSD-2-Clause */
/* Access-ordered images: --order FILE (a trace of first reads) and -sort FILE (mksquashfs
 * priorities). Before the walk, the files to lay out first (the trace's, in its order, then
 * those of priority > 0 by descending priority, ties in walk order) are read by path and their
 * blocks written at the start of the data area, their tails packed in that order into fragment
 * blocks written among them a few at a time (a start reads both from its beginning). When the
 * walk reaches such a file it points it at the data already written (a link like a
 * duplicate's, not counted as one) and reads nothing. Files of
 * priority < 0 are put aside when the walk reaches them (their path in a store that spills to a
 * temporary file) and read after it, by descending priority. build.c then writes the prefetch
 * hint (common/hint.h) after the padded image when there is integrity data. */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sqk/error.h"
#include "common/bytes.h"
#include "common/format.h"
#include "common/hint.h"
#include "mk.h"
#include "data.h"
#include "order.h"
#include "spill.h"
#include "tree.h"
#include "source.h"
#include "action.h"

/* Fragment blocks of the front files' tails written at a time, between their files' blocks. */
#define FRONT_FRAG_RUN 4u
/* Metadata the hint names when it is this small: inode and directory tables, lookup tables. */
#define MK_HINT_TABLES_MAX (4u << 20)
#define MK_HINT_LOOKUP_MAX (1u << 20)
/* Memory for the paths of negative-priority files before they spill to a temporary file. */
#define MK_DEFER_MEM (1u << 20)

/* ---- a set of paths (owned strings) with an int each ---- */

struct pathmap {
	char **keys;
	int64_t *vals;
	size_t cap, used;
};

static uint64_t path_hash(const char *s)
{
	uint64_t h = 1469598103934665603ull;
	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 1099511628211ull;
	return h;
}

static int64_t *pm_find(const struct pathmap *m, const char *key)
{
	if (!m->cap)
		return NULL;
	for (size_t j = path_hash(key) & (m->cap - 1); m->keys[j]; j = (j + 1) & (m->cap - 1))
		if (!strcmp(m->keys[j], key))
			return &m->vals[j];
	return NULL;
}

static int pm_grow(struct mk_ctx *c, struct pathmap *m)
{
	size_t ncap = m->cap ? m->cap * 2 : 64;
	char **nk = calloc(ncap, sizeof(*nk));
	int64_t *nv = calloc(ncap, sizeof(*nv));
	if (!nk || !nv) {
		free(nk);
		free(nv);
		return mk_fail(c, SQK_ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < m->cap; i++) {
		if (!m->keys[i])
			continue;
		size_t j = path_hash(m->keys[i]) & (ncap - 1);
		while (nk[j])
			j = (j + 1) & (ncap - 1);
		nk[j] = m->keys[i];
		nv[j] = m->vals[i];
	}
	free(m->keys);
	free(m->vals);
	m->keys = nk;
	m->vals = nv;
	m->cap = ncap;
	return 0;
}

/* Sets key's value (a copy of key is kept); *added says whether it was new. */
static int pm_put(struct mk_ctx *c, struct pathmap *m, const char *key, int64_t val, bool *added)
{
	int64_t *v = pm_find(m, key);
	if (added)
		*added = !v;
	if (v) {
		*v = val;
		return 0;
	}
	int err = (m->used + 1) * 2 > m->cap ? pm_grow(c, m) : 0;
	if (err)
		return err;
	size_t j = path_hash(key) & (m->cap - 1);
	while (m->keys[j])
		j = (j + 1) & (m->cap - 1);
	if (!(m->keys[j] = strdup(key)))
		return mk_fail(c, SQK_ENOMEM, "out of memory");
	m->vals[j] = val;
	m->used++;
	return 0;
}

static void pm_free(struct pathmap *m)
{
	for (size_t i = 0; i < m->cap; i++)
		free(m->keys[i]);
	free(m->keys);
	free(m->vals);
	memset(m, 0, sizeof(*m));
}

/* ---- state ---- */

struct front {
	char *path;             /* image path (owned) */
	struct mk_file file;    /* its content, written before the walk */
	int prio;
	bool found;             /* read in the first phase */
};

struct deferred {
	struct mk_file *file;   /* the walk's record (borrowed) */
	uint64_t ref;           /* its path in the store */
	uint32_t len, order, ldir;
	int32_t prio;
};

struct mk_order {
	struct mk_source *src;  /* files by path (a second directory source) */
	struct front *front;
	size_t nfront, front_cap;
	struct pathmap front_idx;  /* image path -> index in front */
	struct mk_idmap front_ids; /* (dev, ino) of a front file with several names -> index + 1 */
	struct pathmap listed;     /* --order: the paths of the trace */
	struct pathmap sort;       /* -sort: image path -> priority */
	struct deferred *def;
	size_t ndef, def_cap;
	struct mk_spill *def_paths;
	char *scratch;
	size_t scratch_cap;
	uint32_t front_frags; /* fragment blocks [0, front_frags) hold the front files' tails */
	uint64_t front_bytes;
};

/* ---- the two file formats ---- */

int mk_trace_line(char *line, size_t *len, const char **why)
{
	size_t n = *len, o = 0;
	if (n && line[n - 1] == '\r')
		n--; /* a trace edited on another system */
	if (!n)
		return 1;
	for (size_t i = 0; i < n; i++) {
		uint8_t ch = (uint8_t)line[i];
		if (ch == '\\') {
			bool x = i + 3 < n + 1 && line[i + 1] == 'x';
			int hi = x ? bytes_hex_digit(line[i + 2]) : -1;
			int lo = hi >= 0 ? bytes_hex_digit(line[i + 3]) : -1;
			if (lo < 0) {
				*why = "a backslash not followed by xHH";
				return SQK_EINVAL;
			}
			ch = (uint8_t)(hi * 16 + lo);
			i += 3;
		}
		if (!ch) {
			*why = "a NUL byte in a path";
			return SQK_EINVAL;
		}
		line[o++] = (char)ch;
	}
	line[o] = 0;
	*len = o;
	return 0;
}

int mk_sort_line(char *line, char **path, int *prio, const char **why)
{
	char *p = line, *o = line;
	while (isspace((unsigned char)*p))
		p++;
	if (*p == '#' || !*p)
		return 1;
	/* the name: up to white space, a backslash taking the next byte as it is (as mksquashfs) */
	char *name = o = p;
	while (*p && !isspace((unsigned char)*p)) {
		if (*p == '\\' && !*++p)
			break;
		*o++ = *p++;
	}
	char *rest = p;
	if (o == name)
		return 1;
	while (isspace((unsigned char)*rest))
		rest++;
	*o = 0;
	char *end;
	errno = 0;
	long v = strtol(rest, &end, 10);
	if (end == rest) {
		*why = "no priority after the path";
		return SQK_EINVAL;
	}
	if (errno == ERANGE || v < -32768 || v > 32767) {
		*why = "priority outside -32768..32767";
		return SQK_EINVAL;
	}
	while (isspace((unsigned char)*end))
		end++;
	if (*end) {
		*why = "trailing characters after the priority";
		return SQK_EINVAL;
	}
	*path = name;
	*prio = (int)v;
	return 0;
}

bool mk_order_norm(char *p)
{
	char *o = p, *s = p;
	while (*s) {
		size_t n = strcspn(s, "/");
		if (n == 2 && s[0] == '.' && s[1] == '.')
			return false;
		if (n && !(n == 1 && s[0] == '.')) {
			if (o != p)
				*o++ = '/';
			memmove(o, s, n);
			o += n;
		}
		s += n;
		while (*s == '/')
			s++;
	}
	*o = 0;
	return true;
}

/* ---- loading the lists ---- */

struct missing {
	uint64_t n;
	char first[256];
};

static void miss(struct missing *m, const char *path)
{
	if (!m->n++)
		snprintf(m->first, sizeof(m->first), "%s", path);
}

static int add_front(struct mk_ctx *c, struct mk_order *o, const char *path, int prio)
{
	bool added;
	int err = pm_put(c, &o->front_idx, path, (int64_t)o->nfront, &added);
	if (err || !added)
		return err;
	if ((err = mk_grow(c, &o->front, &o->front_cap, o->nfront + 1, sizeof(*o->front))))
		return err;
	struct front *f = &o->front[o->nfront];
	memset(f, 0, sizeof(*f));
	f->prio = prio;
	f->file.frag_index = SQK_NONE32;
	if (!(f->path = strdup(path)))
		return mk_fail(c, SQK_ENOMEM, "out of memory");
	o->nfront++;
	return 0;
}

typedef int (*line_fn)(struct mk_ctx *c, struct mk_order *o, char *line, size_t len,
		       const char *file, unsigned long lineno, struct missing *m);

/* Calls fn for every line of file (without its '\n'). */
static int read_lines(struct mk_ctx *c, struct mk_order *o, const char *file, line_fn fn,
		      struct missing *m)
{
	FILE *f = fopen(file, "r");
	if (!f)
		return mk_fail(c, sqk_from_errno(errno), "cannot open '%s': %s", file,
			       strerror(errno));
	char *line = NULL;
	size_t cap = 0;
	unsigned long lineno = 0;
	ssize_t len;
	int err = 0;
	while (!err && (len = getline(&line, &cap, f)) >= 0) {
		lineno++;
		if (len && line[len - 1] == '\n')
			line[--len] = 0;
		err = fn(c, o, line, (size_t)len, file, lineno, m);
	}
	if (!err && ferror(f))
		err = mk_fail(c, SQK_EIO, "cannot read '%s': %s", file, strerror(errno));
	free(line);
	fclose(f);
	return err;
}

static int trace_line(struct mk_ctx *c, struct mk_order *o, char *line, size_t len,
		      const char *file, unsigned long lineno, struct missing *m)
{
	const char *why = "";
	struct mk_entry e;
	int r = mk_trace_line(line, &len, &why);
	if (r == 1)
		return 0;
	if (r)
		return mk_fail(c, r, "--order '%s' line %lu: %s", file, lineno, why);
	bool ok = mk_order_norm(line) && *line, added = true;
	if (ok && (r = pm_put(c, &o->listed, line, 0, &added)))
		return r;
	if (!added)
		return 0; /* listed twice: the first place counts */
	r = ok ? mk_source_dir_file(o->src, c, line, false, &e) : 1;
	if (r < 0)
		return r;
	if (r) {
		miss(m, line);
		return 0;
	}
	return add_front(c, o, line, 0);
}

/* The image path of a sort-file entry as mksquashfs resolves it: absolute or ./ ../ against
 * the working directory, else inside one of the source directories. */
static int sort_path(struct mk_ctx *c, struct mk_order *o, char *name, const char *file,
		     unsigned long lineno, char **img)
{
	size_t n = strlen(name);
	if (n > 1 && !strcmp(name + n - 2, "/*"))
		name[n - 2] = 0;
	*img = NULL;
	if (name[0] == '/' || !strncmp(name, "./", 2) || !strncmp(name, "../", 3) ||
	    !strcmp(name, ".") || !strcmp(name, ".."))
		return mk_source_dir_resolve(o->src, c, name, img);
	int count = 0;
	int err = mk_source_dir_in_sources(o->src, c, name, img, &count);
	if (!err && count > 1)
		err = mk_fail(c, SQK_EINVAL,
			      "-sort '%s' line %lu: '%s' is in more than one source (give a path "
			      "from / or ./)", file, lineno, name);
	return err ? err : count ? 0 : 1;
}

static int sort_line(struct mk_ctx *c, struct mk_order *o, char *line, size_t len,
		     const char *file, unsigned long lineno, struct missing *m)
{
	const char *why = "";
	char *name, *img = NULL;
	int prio;
	struct mk_entry e;
	int r = mk_sort_line(line, &name, &prio, &why);
	if (r == 1)
		return 0;
	if (r)
		return mk_fail(c, r, "-sort '%s' line %lu: %s", file, lineno, why);
	r = sort_path(c, o, name, file, lineno, &img);
	if (!r && !mk_order_norm(img))
		r = 1;
	if (!r)
		r = mk_source_dir_file(o->src, c, img, true, &e);
	if (r == 1)
		miss(m, name);
	if (r == 0 || r == 2)
		r = pm_put(c, &o->sort, img, prio, NULL);
	free(img);
	return r > 0 ? 0 : r;
}

/* The priority of the file at image path p: that of its own entry, else of the nearest
 * directory above it with one, else 0. */
static int priority(struct mk_ctx *c, struct mk_order *o, const char *p, int *prio)
{
	size_t n = strlen(p);
	*prio = 0;
	if (!o->sort.used)
		return 0;
	int err = mk_grow(c, &o->scratch, &o->scratch_cap, n + 1, 1);
	if (err)
		return err;
	memcpy(o->scratch, p, n + 1);
	for (;;) {
		const int64_t *v = pm_find(&o->sort, o->scratch);
		if (v) {
			*prio = (int)*v;
			return 0;
		}
		if (!n)
			return 0;
		while (n && o->scratch[n - 1] != '/')
			n--;
		o->scratch[n ? n - 1 : 0] = 0;
		n = n ? n - 1 : 0;
	}
}

/* Walk order of two image paths: component by component, each directory's names sorted. */
static int walk_cmp(const char *a, const char *b)
{
	for (;;) {
		size_t la = strcspn(a, "/"), lb = strcspn(b, "/");
		int r = dir_name_cmp(a, la, b, lb);
		if (r || (!a[la] && !b[lb]))
			return r;
		if (!a[la] || !b[lb]) /* cannot happen for two files */
			return !a[la] ? -1 : 1;
		a += la + 1;
		b += lb + 1;
	}
}

struct cand {
	char *path;
	int prio;
};

struct cands {
	struct cand *v;
	size_t n, cap;
	struct pathmap seen;
	struct mk_order *o;
};

static int cand_visit(void *arg, struct mk_ctx *c, const char *rel)
{
	struct cands *cs = arg;
	int prio;
	bool added;
	int err = pm_find(&cs->o->front_idx, rel) ? 1 : priority(c, cs->o, rel, &prio);
	if (err)
		return err < 0 ? err : 0;
	if (prio <= 0 || (err = pm_put(c, &cs->seen, rel, 0, &added)) || !added)
		return err;
	if ((err = mk_grow(c, &cs->v, &cs->cap, cs->n + 1, sizeof(*cs->v))))
		return err;
	if (!(cs->v[cs->n].path = strdup(rel)))
		return mk_fail(c, SQK_ENOMEM, "out of memory");
	cs->v[cs->n++].prio = prio;
	return 0;
}

static int cand_cmp(const void *x, const void *y)
{
	const struct cand *a = x, *b = y;
	if (a->prio != b->prio)
		return a->prio > b->prio ? -1 : 1;
	return walk_cmp(a->path, b->path);
}

/* The files of priority > 0: listed (a file) or under a listed directory, by descending
 * priority, ties in walk order; appended to the front files. */
static int sort_front(struct mk_ctx *c, struct mk_order *o)
{
	struct cands cs = { .o = o };
	struct mk_entry e;
	int err = 0;
	for (size_t i = 0; i < o->sort.cap && !err; i++) {
		if (!o->sort.keys[i] || o->sort.vals[i] <= 0)
			continue;
		const char *p = o->sort.keys[i];
		int r = *p ? mk_source_dir_file(o->src, c, p, true, &e) : 2;
		if (r == 0)
			err = cand_visit(&cs, c, p);
		else if (r == 2)
			err = mk_source_dir_list(o->src, c, p, cand_visit, &cs);
		else if (r < 0)
			err = r;
	}
	if (!err && cs.n > 1)
		qsort(cs.v, cs.n, sizeof(*cs.v), cand_cmp);
	for (size_t i = 0; i < cs.n; i++) {
		if (!err)
			err = add_front(c, o, cs.v[i].path, cs.v[i].prio);
		free(cs.v[i].path);
	}
	free(cs.v);
	pm_free(&cs.seen);
	return err;
}

static void warn_missing(const char *opt, const struct missing *m)
{
	if (m->n)
		fprintf(stderr,
			"sqk mkimage: %s: %llu listed path%s not %s of the source (first: "
			"'%s'); left out of the order\n",
			opt, (unsigned long long)m->n, m->n == 1 ? " is" : "s are",
			strcmp(opt, "--order") ? "a file or directory" : "a regular file",
			m->first);
}

int mk_order_load(struct mk_ctx *c)
{
	const struct sqk_build_opts *opt = c->opt;
	if (!opt->order_file && !opt->sort_file)
		return 0;
	struct mk_order *o = calloc(1, sizeof(*o));
	if (!o)
		return mk_fail(c, SQK_ENOMEM, "out of memory");
	c->order = o;
	struct missing mo = { 0 }, ms = { 0 };
	int err = mk_source_dir_create(c, &o->src);
	if (!err && opt->order_file)
		err = read_lines(c, o, opt->order_file, trace_line, &mo);
	if (!err && opt->sort_file)
		err = read_lines(c, o, opt->sort_file, sort_line, &ms);
	if (!err && opt->sort_file)
		err = sort_front(c, o);
	if (!err)
		err = mk_spill_create(c, "the paths of negative-priority files", MK_DEFER_MEM,
				      &o->def_paths);
	if (err)
		return err;
	warn_missing("--order", &mo);
	warn_missing("-sort", &ms);
	if (opt->order_file && opt->no_checksums)
		fprintf(stderr, "sqk mkimage: --order: no prefetch hint without integrity data "
			"(--no-checksums); the files are laid out in order all the same\n");
	return 0;
}

/* ---- the first phase: the front files ---- */

static int read_front(struct mk_ctx *c, struct mk_order *o, size_t i)
{
	struct front *f = &o->front[i];
	struct mk_entry e;
	int r = mk_actions_file(c, o->src, f->path, &e);
	if (r)
		return r < 0 ? r : 0; /* gone since it was listed: the walk will not meet it */
	f->found = true;
	f->file.size = e.size;
	if (e.has_id) {
		uint64_t other;
		if (mk_idmap_find_or_put(&o->front_ids, e.id_dev, e.id_ino, i + 1, &other))
			return mk_fail(c, SQK_ENOMEM, "out of memory");
		if (other && other != UINT64_MAX) {
			/* another name of a front file: its data */
			f->file.dup_of = mk_file_data(&o->front[other - 1].file);
			f->file.frag_index = MK_FRAG_DUP;
			return 0;
		}
	}
	struct mk_file_ref fr = { .file = &f->file, .order = (uint32_t)i, .ldir = 0 };
	int err = mk_data_file(c, &fr, o->src, &e);
	if (!err)
		o->front_bytes += e.size;
	return err;
}

int mk_order_front(struct mk_ctx *c)
{
	struct mk_order *o = c->order;
	int err = 0;
	if (!o)
		return 0;
	for (size_t i = 0; i < o->nfront && !err; i++) {
		err = read_front(c, o, i);
		/* the tails' blocks among the files' in read order: a start reads both */
		if (!err && mk_data_tails_waiting(c) >= FRONT_FRAG_RUN * c->opt->block_size)
			err = mk_data_flush_front(c);
	}
	if (!err)
		err = mk_data_flush_front(c);
	o->front_frags = c->nfrags;
	return err;
}

/* ---- the walk ---- */

static int defer(struct mk_ctx *c, struct mk_order *o, const struct mk_file_ref *fr,
		 const struct mk_entry *e, int prio)
{
	int err = mk_grow(c, &o->def, &o->def_cap, o->ndef + 1, sizeof(*o->def));
	if (err)
		return err;
	struct deferred *d = &o->def[o->ndef];
	size_t len = strlen(e->path);
	if (len > UINT32_MAX)
		return mk_fail(c, SQK_ETOOBIG, "'%s': path too long", e->origin);
	*d = (struct deferred){ .file = fr->file, .len = (uint32_t)len, .order = fr->order,
				.ldir = fr->ldir, .prio = prio };
	err = mk_spill_put(c, o->def_paths, e->path, len, &d->ref);
	if (!err)
		o->ndef++;
	return err;
}

int mk_order_take(struct mk_ctx *c, const struct mk_file_ref *fr, const struct mk_entry *e)
{
	struct mk_order *o = c->order;
	const int64_t *idx = pm_find(&o->front_idx, e->path);
	uint64_t other = 0;
	if (!idx && e->has_id &&
	    mk_idmap_find_or_put(&o->front_ids, e->id_dev, e->id_ino, UINT64_MAX, &other))
		return mk_fail(c, SQK_ENOMEM, "out of memory");
	const struct front *f = idx ? &o->front[*idx] : other && other != UINT64_MAX ?
		&o->front[other - 1] : NULL;
	if (f && f->found) {
		if (f->file.size != e->size)
			return mk_fail(c, SQK_ECHANGED,
				       "'%s' changed size while the image was built "
				       "(%llu bytes, then %llu)",
				       e->origin, (unsigned long long)f->file.size,
				       (unsigned long long)e->size);
		fr->file->dup_of = mk_file_data(&f->file);
		fr->file->frag_index = MK_FRAG_DUP;
		return 1;
	}
	int prio;
	int err = priority(c, o, e->path, &prio);
	if (err)
		return err;
	return prio < 0 ? (err = defer(c, o, fr, e, prio)) ? err : 1 : 0;
}

static int def_cmp(const void *x, const void *y)
{
	const struct deferred *a = x, *b = y;
	if (a->prio != b->prio)
		return a->prio > b->prio ? -1 : 1;
	return (a->order > b->order) - (a->order < b->order);
}

int mk_order_deferred(struct mk_ctx *c)
{
	struct mk_order *o = c->order;
	int err = 0;
	if (!o || !o->ndef)
		return 0;
	qsort(o->def, o->ndef, sizeof(*o->def), def_cmp);
	for (size_t i = 0; i < o->ndef && !err; i++) {
		struct deferred *d = &o->def[i];
		struct mk_entry e;
		if ((err = mk_grow(c, &o->scratch, &o->scratch_cap, d->len + 1, 1)) ||
		    (err = mk_spill_get(c, o->def_paths, d->ref, o->scratch, d->len)))
			break;
		o->scratch[d->len] = 0;
		int r = mk_actions_file(c, o->src, o->scratch, &e);
		if (r == 0 && e.size != d->file->size)
			r = 1;
		if (r > 0)
			err = mk_fail(c, SQK_ECHANGED, "'%s' changed while the image was built",
				      mk_source_dir_disk_path(o->src));
		struct mk_file_ref fr = { .file = d->file, .order = d->order, .ldir = d->ldir };
		if (!err)
			err = r ? r : mk_data_file(c, &fr, o->src, &e);
		if (!err && mk_cancelled(c))
			err = mk_fail(c, SQK_EINTR, "interrupted");
	}
	return err;
}

/* ---- the hint ---- */

static void add_range(struct sqk_hint_range *r, size_t *n, uint64_t start, uint64_t end)
{
	if (end <= start)
		return;
	if (*n && r[*n - 1].start + r[*n - 1].length >= start) {
		uint64_t e = r[*n - 1].start + r[*n - 1].length;
		r[*n - 1].length = (end > e ? end : e) - r[*n - 1].start;
		return;
	}
	r[(*n)++] = (struct sqk_hint_range){ .start = start, .length = end - start };
}

/* End of the front files' data and fragment blocks. */
static uint64_t front_end(const struct mk_ctx *c, const struct mk_order *o)
{
	uint64_t end = 0;
	for (size_t i = 0; i < o->nfront; i++) {
		const struct mk_file *f = &o->front[i].file;
		if (f->frag_index == MK_FRAG_DUP || !f->blk || !f->blk->started)
			continue;
		uint64_t e = f->blocks_start;
		for (uint32_t k = 0; k < f->blk->n; k++)
			e += f->blk->words[k] & SQK_BLOCK_SIZE_MASK;
		end = e > end ? e : end;
	}
	for (uint32_t i = 0; i < o->front_frags && i < c->nfrags; i++) {
		uint64_t e = c->frags[i].start + (c->frags[i].size & SQK_BLOCK_SIZE_MASK);
		end = e > end ? e : end;
	}
	return end;
}

size_t mk_order_hint(const struct mk_ctx *c, const struct sqk_super *sb,
		     struct sqk_hint_range *r)
{
	const struct mk_order *o = c->order;
	size_t n = 0;
	if (!o)
		return 0;
	/* the superblock, then the front files' blocks (they follow it) */
	uint64_t fe = front_end(c, o);
	add_range(r, &n, 0, fe > SQK_SUPER_SIZE ? fe : SQK_SUPER_SIZE);
	mk_hint_tables(c, sb, r, &n);
	return n;
}

void mk_hint_tables(const struct mk_ctx *c, const struct sqk_super *sb,
		    struct sqk_hint_range *r, size_t *n)
{
	uint64_t it = sb->inode_table_start, de = c->dir_table_end, bu = sb->bytes_used;
	if (bu - it <= MK_HINT_TABLES_MAX) {
		add_range(r, n, it, bu);
	} else {
		if (de - it <= MK_HINT_TABLES_MAX)
			add_range(r, n, it, de);
		if (bu - de <= MK_HINT_LOOKUP_MAX)
			add_range(r, n, de, bu);
	}
}

size_t mk_order_count(const struct mk_ctx *c, uint64_t *bytes)
{
	const struct mk_order *o = c->order;
	size_t n = 0;
	for (size_t i = 0; o && i < o->nfront; i++)
		n += o->front[i].found;
	*bytes = o ? o->front_bytes : 0;
	return n;
}

void mk_order_free(struct mk_ctx *c)
{
	struct mk_order *o = c->order;
	if (!o)
		return;
	for (size_t i = 0; i < o->nfront; i++) {
		free(o->front[i].path);
		if (o->front[i].file.frag_index != MK_FRAG_DUP)
			free(o->front[i].file.blk);
	}
	free(o->front);
	pm_free(&o->front_idx);
	pm_free(&o->sort);
	pm_free(&o->listed);
	mk_idmap_free(&o->front_ids);
	free(o->def);
	mk_spill_destroy(o->def_paths);
	free(o->scratch);
	mk_source_destroy(o->src);
	free(o);
	c->order = NULL;
}
