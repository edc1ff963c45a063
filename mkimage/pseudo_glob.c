/* SPDX-License-Identifier: BSD-2-Clause */
/* A pack file's glob line, squashfs-tools-ng 1.2's:
 *
 *   glob PATH MODE|* UID|* GID|* [OPTIONS...] [LOCATION]
 *
 * scans the directory LOCATION of this machine (relative to the pack directory; default: the
 * pack directory itself) into the image directory PATH: every entry below it, symlinks not
 * followed, with MODE, UID and GID (or, for *, the scanned file's), and the default mtime (or,
 * with -keeptime, the file's). OPTIONS: -type b|c|d|p|f|l|s (repeatable: the types taken; a
 * directory of another type is still entered when the image has it), -xdev / -mount (entries
 * on other file systems left out), -keeptime, -nonrecursive, -name PATTERN (the entry's name)
 * or -path PATTERN (its path in the image, '/' matched only by '/'), both fnmatch(3) patterns
 * that may be quoted; -- ends the options. The scan is fts(3)'s, on the heap, however deep. */
#include <ctype.h>
#include <errno.h>
#include <fnmatch.h>
#include <fts.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "sqk/error.h"
#include "pseudo_int.h"
#include "tree.h"

static const struct {
	const char *name;
	uint32_t flag;
} glob_opts[] = {
	{ "-type b", PGLOB_BLK },   { "-type c", PGLOB_CHR },	{ "-type d", PGLOB_DIR },
	{ "-type p", PGLOB_FIFO },  { "-type f", PGLOB_FILE },	{ "-type l", PGLOB_LNK },
	{ "-type s", PGLOB_SOCK },  { "-xdev", PGLOB_XDEV },	{ "-mount", PGLOB_XDEV },
	{ "-keeptime", PGLOB_KEEPTIME }, { "-nonrecursive", PGLOB_NORECURSE },
};

/* -name / -path's PATTERN at *s: quoted ('...' or "...") or up to a space. */
static char *take_pattern(const char **s)
{
	const char *p = *s;
	size_t n;
	if (*p == '"' || *p == '\'') {
		const char *end = strchr(p + 1, *p);
		n = end ? (size_t)(end - p - 1) : strlen(p + 1);
		*s = end ? end + 1 : p + 1 + n;
		p++;
	} else {
		n = strcspn(p, " \t");
		*s = p + n;
	}
	return strndup(p, n);
}

/* One option at *s: 1 taken, 0 not an option (the LOCATION), -1 bad. */
static int take_option(struct pdef *d, const char **s)
{
	for (size_t i = 0; i < sizeof(glob_opts) / sizeof(glob_opts[0]); i++) {
		size_t n = strlen(glob_opts[i].name);
		if (strncmp(*s, glob_opts[i].name, n) || !isspace((unsigned char)(*s)[n]))
			continue;
		d->glob |= glob_opts[i].flag;
		*s += n;
		return 1;
	}
	bool name = !strncmp(*s, "-name", 5), path = !strncmp(*s, "-path", 5);
	if ((name || path) && isspace((unsigned char)(*s)[5])) {
		*s += 5 + strspn(*s + 5, " \t");
		free(d->pattern);
		if (!(d->pattern = take_pattern(s)))
			return -1;
		d->glob = path ? d->glob | PGLOB_PATH : d->glob & ~(uint32_t)PGLOB_PATH;
		return 1;
	}
	if (!strncmp(*s, "--", 2) && (isspace((unsigned char)(*s)[2]) || !(*s)[2])) {
		*s += 2 + strspn(*s + 2, " \t");
		return 0;
	}
	return **s == '-' ? -1 : 0;
}

int pseudo_glob_parse(struct mk_ctx *c, struct pdef *d, const char *rest, const char *dir)
{
	const char *s = rest;
	int r;
	while (*(s += strspn(s, " \t")) && (r = take_option(d, &s)) != 0)
		if (r < 0)
			return pseudo_err(c, d, "unknown glob option at '%.40s' (-type X, -xdev, "
					  "-mount, -keeptime, -nonrecursive, -name P, -path P)", s);
	if (!*s)
		d->target = strdup(dir);
	else if (*s == '/')
		d->target = strdup(s);
	else if (asprintf(&d->target, "%s/%s", dir, s) < 0)
		d->target = NULL;
	return d->target ? 0 : mk_fail(c, SQK_ENOMEM, "out of memory");
}

/* The type bit of a scanned file. */
static uint32_t type_flag(mode_t m)
{
	switch (m & S_IFMT) {
	case S_IFBLK: return PGLOB_BLK;
	case S_IFCHR: return PGLOB_CHR;
	case S_IFDIR: return PGLOB_DIR;
	case S_IFIFO: return PGLOB_FIFO;
	case S_IFLNK: return PGLOB_LNK;
	case S_IFSOCK: return PGLOB_SOCK;
	default: return PGLOB_FILE;
	}
}

/* Whether the -name / -path pattern takes the entry at image path ipath (name: its last part). */
static bool pattern_takes(const struct pdef *g, const char *ipath, const char *name)
{
	if (!g->pattern)
		return true;
	return (g->glob & PGLOB_PATH) ? !fnmatch(g->pattern, ipath, FNM_PATHNAME) :
					!fnmatch(g->pattern, name, 0);
}

/* The definition of one scanned file at ipath (e->path: on this machine), applied. */
static int add_scanned(struct mk_ctx *c, struct mk_pseudo *p, const struct pdef *g,
		       const FTSENT *e, char *ipath)
{
	const struct stat *sb = e->fts_statp;
	char target[SQK_SYMLINK_MAX + 1];
	struct pdef d = { .path = ipath, .parents = true, .pack = true, .mtime = -1,
			  .mode = (g->glob & PGLOB_MODE_SRC) ? sb->st_mode & 07777 : g->mode,
			  .uid = (g->glob & PGLOB_UID_SRC) ? (uint32_t)sb->st_uid : g->uid,
			  .gid = (g->glob & PGLOB_GID_SRC) ? (uint32_t)sb->st_gid : g->gid,
			  .maj = major(sb->st_rdev), .min = minor(sb->st_rdev) };
	memcpy(d.where, g->where, sizeof(d.where));
	if (g->glob & PGLOB_KEEPTIME)
		d.mtime = sb->st_mtime;
	switch (sb->st_mode & S_IFMT) {
	case S_IFDIR: d.type = 'd'; break;
	case S_IFBLK: d.type = 'b'; break;
	case S_IFCHR: d.type = 'c'; break;
	case S_IFIFO: d.type = 'i'; d.target = "f"; break;
	case S_IFSOCK: d.type = 'i'; d.target = "s"; break;
	case S_IFLNK: {
		ssize_t n = readlink(e->fts_accpath, target, sizeof(target) - 1);
		if (n < 0)
			return mk_fail(c, sqk_from_errno(errno), "%s at %s: cannot read '%s': %s",
				       pseudo_what(g), g->where, e->fts_path, strerror(errno));
		target[n] = 0;
		d.type = 's';
		d.target = target;
		break;
	}
	default: d.type = 'P'; d.target = e->fts_path; break;
	}
	return pseudo_apply_one(c, p, &d);
}

/* What the scan does with entry e (a directory: whether to enter it). 1: skip its subtree. */
static int scan_one(struct mk_ctx *c, struct mk_pseudo *p, const struct pdef *g,
		    const FTSENT *e, dev_t dev, size_t rootlen, int *err)
{
	const char *rel = e->fts_path + rootlen + (e->fts_path[rootlen] == '/');
	char *ipath = NULL;
	bool dir = S_ISDIR(e->fts_statp->st_mode);
	uint32_t types = (g->glob & PGLOB_TYPES) ? g->glob & PGLOB_TYPES : PGLOB_TYPES;
	if ((g->glob & PGLOB_XDEV) && e->fts_statp->st_dev != dev)
		return 1;
	if (asprintf(&ipath, "%s%s%s", g->path, *g->path ? "/" : "", rel) < 0) {
		*err = mk_fail(c, SQK_ENOMEM, "out of memory");
		return 1;
	}
	int skip = 0;
	if (!(types & type_flag(e->fts_statp->st_mode))) {
		struct mk_node *n = dir ? mk_tree_find(c, ipath) : NULL;
		skip = !n || !S_ISDIR(n->mode); /* enter only a directory the image has */
	} else if (!pattern_takes(g, ipath, e->fts_name)) {
		skip = 1;
	} else {
		*err = add_scanned(c, p, g, e, ipath);
	}
	free(ipath);
	return skip || (dir && (g->glob & PGLOB_NORECURSE));
}

int pseudo_glob_apply(struct mk_ctx *c, struct mk_pseudo *p, const struct pdef *g)
{
	char *const roots[] = { g->target, NULL };
	struct mk_node *n = mk_tree_find(c, g->path);
	struct stat sb;
	if (n && !S_ISDIR(n->mode))
		return pseudo_err(c, g, "'%s' is not a directory", g->path);
	if (stat(g->target, &sb))
		return mk_fail(c, sqk_from_errno(errno), "%s at %s: '%s': %s", pseudo_what(g),
			       g->where, g->target, strerror(errno));
	if (!S_ISDIR(sb.st_mode))
		return pseudo_err(c, g, "'%s' is not a directory", g->target);
	FTS *fts = fts_open(roots, FTS_PHYSICAL | FTS_NOCHDIR, NULL);
	if (!fts)
		return mk_fail(c, sqk_from_errno(errno), "%s at %s: cannot scan '%s': %s",
			       pseudo_what(g), g->where, g->target, strerror(errno));
	size_t rootlen = strlen(g->target);
	int err = 0;
	FTSENT *e;
	while (!err && (errno = 0, e = fts_read(fts))) {
		if (e->fts_info == FTS_DP || e->fts_level == 0)
			continue;
		if (e->fts_info == FTS_DNR || e->fts_info == FTS_ERR || e->fts_info == FTS_NS) {
			err = mk_fail(c, sqk_from_errno(e->fts_errno), "%s at %s: '%s': %s",
				      pseudo_what(g), g->where, e->fts_path,
				      strerror(e->fts_errno));
			break;
		}
		if (scan_one(c, p, g, e, sb.st_dev, rootlen, &err) && e->fts_info == FTS_D)
			fts_set(fts, e, FTS_SKIP);
	}
	if (!err && errno && !e)
		err = mk_fail(c, sqk_from_errno(errno), "%s at %s: cannot scan '%s': %s",
			      pseudo_what(g), g->where, g->target, strerror(errno));
	fts_close(fts);
	return err;
}
