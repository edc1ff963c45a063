/* SPDX-License-Identifier: BSD-2-Clause */
/* sqk diff: walks both trees at once, in sqfsdiff's order: for each directory, the entries
 * only one side has (with everything below them), then the entries both have, by name; for
 * each entry both have: type, permissions, owner, timestamp (-T), inode number (-I), link
 * count, xattrs, then what its type holds (device number, link target, a file's size and
 * contents read in windows from both sides, a directory's entries). Inode types compare by
 * kind: a basic and an extended inode of the same kind are the same. */
#include "diff.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/depth.h"
#include "common/grow.h"

/* The relative path of the entry at hand ("" = the root), grown and cut per level. */
struct dpath {
	char *s;
	size_t len, cap;
};

/* Appends "/name" (or "name" at the root) to p; *old gets the length to cut back to. */
static int dp_push(struct dpath *p, const char *name, size_t *old)
{
	size_t n = strlen(name), at = p->len ? p->len + 1 : 0;

	if (mem_grow(&p->s, &p->cap, at + n + 1, 1, 0))
		return SQK_ENOMEM;
	*old = p->len;
	if (at)
		p->s[p->len] = '/';
	memcpy(p->s + at, name, n + 1);
	p->len = at + n;
	return 0;
}

static void dp_pop(struct dpath *p, size_t old)
{
	p->len = old;
	p->s[old] = '\0';
}

/* Stops a walk after the first difference under -q: only the status is wanted (unless -e
 * has files to write). */
static bool dt_done(const struct diff *d)
{
	return (d->flags & DIFF_QUIET) && d->different && !d->extract;
}

/* SQK_ETOOBIG (printed) for the entries of a directory at depth SQK_DEPTH_MAX or more:
 * common/depth.h's bound of every walk. */
static int dt_deep(const struct dpath *p, unsigned depth)
{
	if (depth < SQK_DEPTH_MAX)
		return 0;
	fprintf(stderr, "sqk diff: /%s: directories nested deeper than %u levels (the most sqk "
		"walks)\n", p->s, SQK_DEPTH_MAX);
	return SQK_ETOOBIG;
}

/* The entry n of side s (old when a is true), only there, and everything below it. */
static int dt_only(struct diff *d, struct diff_side *s, bool a, const struct diff_node *n,
		   struct dpath *p, unsigned depth)
{
	struct diff_val t = { DV_STR, 0, diff_type_name(n->mode), 0 }, none = { DV_NULL, 0, 0, 0 };
	struct diff_node *v;
	size_t nv, old;
	int r = 0;

	diff_out(d, a ? DK_REMOVED : DK_ADDED, p->s, NULL, a ? &t : &none, a ? &none : &t, 0);
	if (d->extract && S_ISREG(n->mode))
		return diff_extract(d, s, n, p->s);
	if (!S_ISDIR(n->mode) || dt_done(d))
		return 0;
	r = diff_side_list(s, n, p->s, &v, &nv);
	if (r == 0 && nv)
		r = dt_deep(p, depth);
	for (size_t i = 0; r == 0 && i < nv && !dt_done(d); i++) {
		r = dp_push(p, v[i].name, &old);
		if (r == 0) {
			r = dt_only(d, s, a, &v[i], p, depth + 1);
			dp_pop(p, old);
		}
	}
	diff_nodes_free(v, nv);
	return r;
}

static int dt_node(struct diff *d, const struct diff_node *a, const struct diff_node *b,
		   struct dpath *p, unsigned depth);

/* The entries of two directories: first those one side has (sqfsdiff's < and > lines), then
 * the entries both have, compared in name order. */
static int dt_dir(struct diff *d, const struct diff_node *a, const struct diff_node *b,
		  struct dpath *p, unsigned depth)
{
	struct diff_node *va = NULL, *vb = NULL;
	size_t na = 0, nb = 0, i, j, old;
	int r, c;

	r = diff_side_list(&d->a, a, p->s, &va, &na);
	if (r == 0)
		r = diff_side_list(&d->b, b, p->s, &vb, &nb);
	if (r == 0 && (na || nb))
		r = dt_deep(p, depth);
	for (int pass = 0; pass < 2; pass++) {
		for (i = j = 0; r == 0 && (i < na || j < nb) && !dt_done(d);) {
			c = i == na ? 1 : j == nb ? -1 : strcmp(va[i].name, vb[j].name);
			/* pass 0: the entries of one side only; pass 1: those of both */
			bool now = pass == 0 ? c != 0 : c == 0;

			if (now && (r = dp_push(p, c > 0 ? vb[j].name : va[i].name, &old)) == 0) {
				if (c < 0)
					r = dt_only(d, &d->a, true, &va[i], p, depth + 1);
				else if (c > 0)
					r = dt_only(d, &d->b, false, &vb[j], p, depth + 1);
				else
					r = dt_node(d, &va[i], &vb[j], p, depth + 1);
				dp_pop(p, old);
			}
			i += c <= 0;
			j += c >= 0;
		}
	}
	diff_nodes_free(va, na);
	diff_nodes_free(vb, nb);
	return r;
}

/* Reads the next n bytes of f into buf: 0, or SQK_E* (printed) when they are not all there. */
static int dt_read(struct diff_file *f, const char *path, unsigned char *buf, size_t n)
{
	ssize_t got = diff_file_read(f, path, buf, n);

	if (got < 0)
		return (int)got;
	if ((size_t)got == n)
		return 0;
	fprintf(stderr, "sqk diff: %s: /%s: shorter than its size (%llu bytes) while read\n",
		f->s->arg, path, (unsigned long long)f->n->size);
	return SQK_ECHANGED;
}

/* The first differing byte of two regular files of one size, in *at (UINT64_MAX: none). */
static int dt_contents(struct diff *d, const struct diff_node *a, const struct diff_node *b,
		       const char *path, uint64_t *at)
{
	struct diff_file fa = { .fd = -1 }, fb = { .fd = -1 };
	uint64_t off = 0;
	size_t n, k;
	int r = diff_same_blocks(d, a, b, path, &off);

	*at = UINT64_MAX;
	if (r == 0)
		r = diff_file_open(&d->a, a, path, &fa);
	if (r == 0)
		r = diff_file_open(&d->b, b, path, &fb);
	fa.off = fb.off = off; /* the bytes before are equal (images only: 0 otherwise) */
	for (; r == 0 && off < a->size && *at == UINT64_MAX; off += n) {
		n = a->size - off < DIFF_WINDOW ? (size_t)(a->size - off) : DIFF_WINDOW;
		r = dt_read(&fa, path, d->wa, n);
		if (r == 0)
			r = dt_read(&fb, path, d->wb, n);
		if (r == 0 && memcmp(d->wa, d->wb, n)) {
			for (k = 0; d->wa[k] == d->wb[k]; k++)
				;
			*at = off + k;
		}
	}
	diff_file_close(&fa);
	diff_file_close(&fb);
	return r;
}

/* Two regular files: their sizes, then (unless -C) their contents; -e extracts both when
 * they differ. */
static int dt_file(struct diff *d, const struct diff_node *a, const struct diff_node *b,
		   const char *path)
{
	struct diff_val sa = { DV_NUM, a->size, NULL, 0 }, sb = { DV_NUM, b->size, NULL, 0 };
	struct diff_val none = { DV_NULL, 0, NULL, 0 };
	uint64_t at = UINT64_MAX;
	int r = 0;

	if (a->size != b->size)
		diff_out(d, DK_SIZE, path, NULL, &sa, &sb, 0);
	else if (!(d->flags & DIFF_NO_CONTENTS) && (r = dt_contents(d, a, b, path, &at)) == 0 &&
		 at != UINT64_MAX)
		diff_out(d, DK_CONTENTS, path, NULL, &none, &none, at);
	if (r || (a->size == b->size && at == UINT64_MAX) || !d->extract)
		return r;
	r = diff_extract(d, &d->a, a, path);
	return r ? r : diff_extract(d, &d->b, b, path);
}

static int dt_target(struct diff *d, const struct diff_node *a, const struct diff_node *b,
		     const char *path)
{
	char *ta = NULL, *tb = NULL;
	int r = diff_side_readlink(&d->a, a, path, &ta);

	if (r == 0)
		r = diff_side_readlink(&d->b, b, path, &tb);
	if (r == 0 && strcmp(ta, tb)) {
		struct diff_val va = { DV_STR, 0, ta, 0 }, vb = { DV_STR, 0, tb, 0 };

		diff_out(d, DK_TARGET, path, NULL, &va, &vb, 0);
	}
	free(ta);
	free(tb);
	return r;
}

static int dt_device(struct diff *d, const struct diff_node *a, const struct diff_node *b,
		     const char *path)
{
	char sa[32], sb[32];
	struct diff_val va = { DV_STR, 0, sa, 0 }, vb = { DV_STR, 0, sb, 0 };

	if (a->major == b->major && a->minor == b->minor)
		return 0;
	snprintf(sa, sizeof(sa), "%u:%u", a->major, a->minor);
	snprintf(sb, sizeof(sb), "%u:%u", b->major, b->minor);
	diff_out(d, DK_DEVICE, path, NULL, &va, &vb, 0);
	return 0;
}

/* What an entry's type holds. */
static int dt_kind(struct diff *d, const struct diff_node *a, const struct diff_node *b,
		   struct dpath *p, unsigned depth)
{
	switch (a->mode & S_IFMT) {
	case S_IFDIR: return dt_dir(d, a, b, p, depth);
	case S_IFREG: return dt_file(d, a, b, p->s);
	case S_IFLNK: return dt_target(d, a, b, p->s);
	case S_IFBLK:
	case S_IFCHR: return dt_device(d, a, b, p->s);
	default: return 0;
	}
}

/* A number that differs: a JSON item with both values. */
static void dt_num(struct diff *d, enum diff_kind k, const char *path, uint64_t a, uint64_t b,
		   int kind)
{
	struct diff_val va = { kind, a, NULL, 0 }, vb = { kind, b, NULL, 0 };

	diff_out(d, k, path, NULL, &va, &vb, 0);
}

/* One entry both sides have (the same path). */
static int dt_node(struct diff *d, const struct diff_node *a, const struct diff_node *b,
		   struct dpath *p, unsigned depth)
{
	const char *path = p->s;
	int r;

	if ((a->mode & S_IFMT) != (b->mode & S_IFMT)) {
		struct diff_val ta = { DV_STR, 0, diff_type_name(a->mode), 0 };
		struct diff_val tb = { DV_STR, 0, diff_type_name(b->mode), 0 };

		diff_out(d, DK_TYPE, path, NULL, &ta, &tb, 0);
		return 0;
	}
	if (!(d->flags & DIFF_NO_PERM) && (a->mode & 07777) != (b->mode & 07777))
		dt_num(d, DK_PERM, path, a->mode & 07777, b->mode & 07777, DV_MODE);
	if (!(d->flags & DIFF_NO_OWNER) && a->uid != b->uid)
		dt_num(d, DK_UID, path, a->uid, b->uid, DV_NUM);
	if (!(d->flags & DIFF_NO_OWNER) && a->gid != b->gid)
		dt_num(d, a->uid != b->uid ? DK_GID2 : DK_GID, path, a->gid, b->gid, DV_NUM);
	if ((d->flags & DIFF_TIME) && a->mtime != b->mtime)
		dt_num(d, DK_MTIME, path, (uint64_t)a->mtime, (uint64_t)b->mtime, DV_NUM);
	if ((d->flags & DIFF_INODE) && a->ino != b->ino)
		dt_num(d, DK_INODE, path, a->ino, b->ino, DV_NUM);
	if (!S_ISDIR(a->mode) && a->nlink != b->nlink)
		dt_num(d, DK_NLINK, path, a->nlink, b->nlink, DV_NUM);
	if (dt_done(d))
		return 0;
	r = d->flags & DIFF_NO_XATTRS ? 0 : diff_xattrs(d, a, b, path);
	return r || dt_done(d) ? r : dt_kind(d, a, b, p, depth);
}

int diff_trees(struct diff *d)
{
	struct diff_node ra = { 0 }, rb = { 0 };
	struct dpath p = { 0 };
	int r = mem_grow(&p.s, &p.cap, 64, 1, 1);

	if (r == 0)
		r = diff_side_root(&d->a, &ra);
	if (r == 0)
		r = diff_side_root(&d->b, &rb);
	if (r == 0)
		r = dt_node(d, &ra, &rb, &p, 0);
	free(ra.name);
	free(rb.name);
	free(p.s);
	return r;
}
