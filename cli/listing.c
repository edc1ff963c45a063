/* SPDX-License-Identifier: BSD-2-Clause */
/* unsquashfs's listings for sqk extract and sqk ls: the options as unsquashfs spells them, one
 * line per entry as its print_filename() does (paths under a prefix, "squashfs-root" or DEST;
 * long lines with owner/group names padded to 25 columns, devices as (rdev >> 8, rdev & 0xff)),
 * the walk that prints the directories on the way to each PATH and everything below it; owner
 * names cached per id; xattr values as getfattr shows them. */
#include "listing.h"
#include "select.h"

#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <openssl/evp.h>

struct lst_name {
	uint32_t id;
	bool used;
	char *name;  /* NULL: no entry in the passwd (group) file (owned) */
};

/* What an option sets (unsquashfs: -l* list only, -i/-linfo list while extracting). */
enum {
	LO_ONLY = 0x1, LO_INFO = 0x2, LO_LONG = 0x4, LO_NUMERIC = 0x8, LO_CONCISE = 0x10,
	LO_UTC = 0x20, LO_FULL = 0x40,
};

#define X_ LST_FOR_EXTRACT
#define L_ LST_FOR_LS
static const struct lst_opt {
	const char *name;
	unsigned who;
	unsigned sets;
} lst_opts[] = {
	{ "-l", X_, LO_ONLY }, { "-ls", X_ | L_, LO_ONLY },
	{ "-ll", X_ | L_, LO_ONLY | LO_LONG }, { "-lls", X_ | L_, LO_ONLY | LO_LONG },
	{ "-lln", X_ | L_, LO_ONLY | LO_LONG | LO_NUMERIC },
	{ "-llnumeric", X_ | L_, LO_ONLY | LO_LONG | LO_NUMERIC },
	{ "-lc", X_ | L_, LO_ONLY | LO_CONCISE },
	{ "-llc", X_ | L_, LO_ONLY | LO_LONG | LO_CONCISE },
	{ "-li", X_, LO_INFO | LO_LONG }, { "-linfo", X_, LO_INFO | LO_LONG },
	{ "-UTC", X_ | L_, LO_UTC }, { "--utc", X_ | L_, LO_UTC },
	{ "-full", X_ | L_, LO_FULL }, { "-full-precision", X_ | L_, LO_FULL },
	{ "--full-time", X_ | L_, LO_FULL },
};
#undef X_
#undef L_

void lst_init(struct listing *l)
{
	memset(l, 0, sizeof(*l));
	l->groups.group = true;
}

bool lst_take(struct listing *l, const char *arg, unsigned who)
{
	for (size_t i = 0; i < sizeof(lst_opts) / sizeof(lst_opts[0]); i++) {
		const struct lst_opt *o = &lst_opts[i];

		if (!(o->who & who) || strcmp(o->name, arg))
			continue;
		if (o->sets & (LO_ONLY | LO_INFO) && l->mode == LST_NONE)
			l->mode = LST_SHORT;
		if (o->sets & LO_LONG)
			l->mode = LST_LONG; /* as unsquashfs: long once any option asks for it */
		l->only |= (o->sets & LO_ONLY) != 0;
		l->info |= (o->sets & LO_INFO) != 0;
		l->numeric |= (o->sets & LO_NUMERIC) != 0;
		l->concise |= (o->sets & LO_CONCISE) != 0;
		l->utc |= (o->sets & LO_UTC) != 0;
		l->full_time |= (o->sets & LO_FULL) != 0;
		return true;
	}
	return false;
}

int lst_strip(struct listing *l, int argc, char **argv, unsigned who)
{
	int i, n = 1;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--"))
			break;
		if (!lst_take(l, argv[i], who))
			argv[n++] = argv[i];
	}
	while (i < argc)
		argv[n++] = argv[i++];
	argv[n] = NULL;
	return n;
}

/* The name of id from the system's files, or NULL (none, or the lookup failed). */
static char *lst_lookup(bool group, uint32_t id)
{
	size_t cap = 4096;
	char *buf = NULL, *out = NULL;
	int r;

	for (;;) {
		char *nb = realloc(buf, cap);
		struct passwd pw, *pr = NULL;
		struct group gr, *grp = NULL;

		if (!nb)
			break;
		buf = nb;
		if (group)
			r = getgrgid_r((gid_t)id, &gr, buf, cap, &grp);
		else
			r = getpwuid_r((uid_t)id, &pw, buf, cap, &pr);
		if (r == ERANGE && cap < (1u << 20)) {
			cap *= 2;
			continue;
		}
		if (!r && (group ? grp != NULL : pr != NULL))
			out = strdup(group ? gr.gr_name : pw.pw_name);
		break;
	}
	free(buf);
	return out;
}

/* Doubles the table (or makes its first 64 slots). Returns 0 or SQK_ENOMEM. */
static int lst_grow(struct lst_names *n)
{
	size_t cap = n->cap ? 2 * n->cap : 64, i;
	struct lst_name *s = calloc(cap, sizeof(*s));

	if (!s)
		return SQK_ENOMEM;
	for (i = 0; i < n->cap; i++) {
		size_t h;

		if (!n->slot[i].used)
			continue;
		h = (n->slot[i].id * 2654435761u) & (cap - 1);
		while (s[h].used)
			h = (h + 1) & (cap - 1);
		s[h] = n->slot[i];
	}
	free(n->slot);
	n->slot = s;
	n->cap = cap;
	return 0;
}

/* The slot of id, looked up on first use; NULL when out of memory. */
static struct lst_name *lst_slot(struct lst_names *n, uint32_t id)
{
	size_t h;

	if ((n->used + 1) * 2 > n->cap && lst_grow(n))
		return NULL;
	for (h = (id * 2654435761u) & (n->cap - 1); n->slot[h].used; h = (h + 1) & (n->cap - 1))
		if (n->slot[h].id == id)
			return &n->slot[h];
	n->slot[h].used = true;
	n->slot[h].id = id;
	n->slot[h].name = lst_lookup(n->group, id);
	n->used++;
	return &n->slot[h];
}

const char *lst_name(struct lst_names *n, uint32_t id, char buf[12])
{
	struct lst_name *s = lst_slot(n, id);

	if (s && s->name)
		return s->name;
	snprintf(buf, 12, "%u", id);
	return buf;
}

bool lst_has_name(struct lst_names *n, uint32_t id)
{
	struct lst_name *s = lst_slot(n, id);

	return s && s->name;
}

static void lst_names_free(struct lst_names *n)
{
	for (size_t i = 0; i < n->cap; i++)
		free(n->slot[i].name);
	free(n->slot);
	n->slot = NULL;
	n->cap = n->used = 0;
}

void lst_free(struct listing *l)
{
	lst_names_free(&l->users);
	lst_names_free(&l->groups);
}

void lst_mode_string(uint32_t mode, char out[11])
{
	static const char rwx[] = "rwxrwxrwx";
	int i;

	switch (mode & S_IFMT) {
	case S_IFDIR: out[0] = 'd'; break;
	case S_IFLNK: out[0] = 'l'; break;
	case S_IFBLK: out[0] = 'b'; break;
	case S_IFCHR: out[0] = 'c'; break;
	case S_IFIFO: out[0] = 'p'; break;
	case S_IFSOCK: out[0] = 's'; break;
	default: out[0] = '-'; break;
	}
	for (i = 0; i < 9; i++)
		out[1 + i] = (mode & (0400u >> i)) ? rwx[i] : '-';
	if (mode & S_ISUID)
		out[3] = (mode & S_IXUSR) ? 's' : 'S';
	if (mode & S_ISGID)
		out[6] = (mode & S_IXGRP) ? 's' : 'S';
	if (mode & S_ISVTX)
		out[9] = (mode & S_IXOTH) ? 't' : 'T';
	out[10] = '\0';
}

void lst_put(bool escape, const char *s, FILE *f)
{
	if (!escape) {
		fputs(s, f);
		return;
	}
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '\\')
			fputs("\\\\", f);
		else if (*p == '\n')
			fputs("\\n", f);
		else if (*p == '\t')
			fputs("\\t", f);
		else if (*p < 0x20 || *p == 0x7f)
			fprintf(f, "\\%03o", *p);
		else
			putc(*p, f);
	}
}

/* unsquashfs's "YYYY-MM-DD HH:MM[:SS]" of t, in UTC or the local time zone. */
static void lst_time(const struct listing *l, uint32_t mtime, char *out, size_t cap)
{
	time_t t = mtime;
	struct tm tm;

	if (!(l->utc ? gmtime_r(&t, &tm) : localtime_r(&t, &tm))) {
		snprintf(out, cap, "%u", mtime);
		return;
	}
	if (l->full_time)
		snprintf(out, cap, "%d-%02d-%02d %02d:%02d:%02d", tm.tm_year + 1900, tm.tm_mon + 1,
			 tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
	else
		snprintf(out, cap, "%d-%02d-%02d %02d:%02d", tm.tm_year + 1900, tm.tm_mon + 1,
			 tm.tm_mday, tm.tm_hour, tm.tm_min);
}

/* The owner/group and size columns: 25 columns for the two names and the size (or the device
 * numbers, which unsquashfs prints as rdev >> 8 and rdev & 0xff of the stored number). */
static void lst_owner_size(struct listing *l, const struct sqk_inode *ino)
{
	char ub[12], gb[12];
	const char *u, *g;
	int pad;

	if (l->numeric) {
		snprintf(ub, sizeof(ub), "%u", ino->uid);
		snprintf(gb, sizeof(gb), "%u", ino->gid);
		u = ub;
		g = gb;
	} else {
		u = lst_name(&l->users, ino->uid, ub);
		g = lst_name(&l->groups, ino->gid, gb);
	}
	printf("%s/%s ", u, g);
	pad = 25 - (int)strlen(u) - (int)strlen(g);
	if (cmd_is(ino, SQK_T_BLKDEV) || cmd_is(ino, SQK_T_CHRDEV)) {
		int32_t rdev = (int32_t)ino->rdev;

		printf("%*s%3d,%3d ", pad - 7 > 0 ? pad - 7 : 0, " ", (int)(rdev >> 8),
		       (int)(rdev & 0xff));
	} else {
		bool ipc = cmd_is(ino, SQK_T_FIFO) || cmd_is(ino, SQK_T_SOCKET);

		printf("%*llu ", pad > 0 ? pad : 0, ipc ? 0ULL : (unsigned long long)ino->size);
	}
}

int lst_line(struct listing *l, struct sqk_image *img, const char *path,
	     const struct sqk_inode *ino)
{
	char mode[11], when[48], target[SQK_SYMLINK_MAX + 1];
	size_t tlen;
	bool link = cmd_is(ino, SQK_T_SYMLINK);
	int err;

	if (l->mode != LST_LONG) {
		lst_put(l->escape, path, stdout);
		putchar('\n');
		return 0;
	}
	if (link && (err = sqk_readlink(img, ino, target, sizeof(target), &tlen)))
		return err;
	lst_mode_string(ino->mode, mode);
	printf("%s ", mode);
	lst_owner_size(l, ino);
	lst_time(l, ino->mtime, when, sizeof(when));
	printf("%s ", when);
	lst_put(l->escape, path, stdout);
	if (link) {
		fputs(" -> ", stdout);
		lst_put(l->escape, target, stdout);
	}
	putchar('\n');
	return 0;
}

void lst_norm_paths(char **paths, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		char *r = paths[i], *w = paths[i];

		for (; *r; r++)
			if (*r != '/' || (w > paths[i] && w[-1] != '/'))
				*w++ = *r;
		while (w > paths[i] && w[-1] == '/')
			w--;
		*w = '\0';
	}
}

/* Prints the entry path (from the root, no leading '/'; "" for the root) under prefix (buf: the
 * joined path, grown as needed). */
static int lst_print(struct listing *l, struct cmd *c, const char *prefix, const char *path,
		     const struct sqk_inode *ino, char **buf, size_t *cap)
{
	size_t a = strlen(prefix), n = strlen(path), need = a + 1 + n + 1;
	int r;

	if (need > *cap) {
		char *nb = realloc(*buf, need);

		if (!nb)
			return SQK_ENOMEM;
		*buf = nb;
		*cap = need;
	}
	memcpy(*buf, prefix, a);
	if (n)
		(*buf)[a++] = '/';
	memcpy(*buf + a, path, n + 1);
	r = lst_line(l, c->img, *buf, ino);
	if (r)
		cmd_err(c, path, r, "cannot read symlink");
	else if (l->xattrs)
		r = lst_xattrs(c->img, ino, "  ", stdout);
	if (r && l->xattrs)
		cmd_err(c, path, r, "cannot read xattrs");
	return r;
}

struct lst_sel_walk {
	struct listing *l;
	struct cmd *c;
	const char *prefix;
	char *buf;
	size_t cap;
};

/* One entry of sel_walk: printed (a loop refused, -lc: only empty directories). */
static int lst_sel_step(void *ctx, const struct sel_entry *e)
{
	struct lst_sel_walk *w = ctx;
	bool dir = e->ino && sqk_basic_type(e->ino->type) == SQK_T_DIR;

	if (e->err) {
		cmd_err(w->c, e->path, e->err, "cannot read");
		return e->err;
	}
	if (e->post)
		return 0;
	if (dir && e->walk && e->walk->flags & (SQK_WALK_LOOP | SQK_WALK_SEEN)) {
		cmd_err(w->c, e->path, SQK_ECORRUPT,
			"directory inode %u reached twice (a directory loop)", e->ino->ino);
		return SQK_ECORRUPT;
	}
	if (w->l->concise && dir && e->ino->size > 3)
		return 0; /* -lc: only empty directories */
	return lst_print(w->l, w->c, w->prefix, e->path, e->ino, &w->buf, &w->cap);
}

int lst_tree_sel(struct listing *l, struct cmd *c, const char *prefix, struct sel *s)
{
	struct lst_sel_walk w = { .l = l, .c = c, .prefix = prefix };
	int r = sel_walk(s, c->img, lst_sel_step, &w);

	free(w.buf);
	return r < 0 ? r : 0;
}

/* One value as getfattr -d shows it. */
static int lst_value(const unsigned char *v, size_t n, FILE *f)
{
	size_t text = n && v[n - 1] == 0 ? n - 1 : n, i;
	unsigned char *b64;

	for (i = 0; i < text && v[i] >= 0x20 && v[i] < 0x7f; i++)
		;
	if (i == text) {
		putc('"', f);
		for (i = 0; i < text; i++) {
			if (v[i] == '\\' || v[i] == '"')
				putc('\\', f);
			putc(v[i], f);
		}
		putc('"', f);
		return 0;
	}
	b64 = malloc(4 * ((n + 2) / 3) + 1);
	if (!b64)
		return SQK_ENOMEM;
	EVP_EncodeBlock(b64, v, (int)n);
	fprintf(f, "0s%s", b64);
	free(b64);
	return 0;
}

/* Prints the xattr name (borrowed) of ino and its value. */
static int lst_xattr(struct sqk_image *img, const struct sqk_inode *ino, const char *name,
		     const char *indent, FILE *f)
{
	size_t len = 0;
	unsigned char *v;
	int r = sqk_xattr_get(img, ino, name, NULL, 0, &len);

	if (r)
		return r;
	v = malloc(len ? len : 1);
	if (!v)
		return SQK_ENOMEM;
	r = sqk_xattr_get(img, ino, name, v, len, &len);
	if (!r) {
		fprintf(f, "%s%s=", indent, name);
		r = lst_value(v, len, f);
		putc('\n', f);
	}
	free(v);
	return r;
}

int lst_xattrs(struct sqk_image *img, const struct sqk_inode *ino, const char *indent, FILE *f)
{
	size_t len = 0, at;
	char *names;
	int r;

	if (ino->xattr_idx == SQK_NONE32)
		return 0;
	r = sqk_xattr_list(img, ino, NULL, 0, &len);
	if (r || len == 0)
		return r;
	names = malloc(len);
	if (!names)
		return SQK_ENOMEM;
	r = sqk_xattr_list(img, ino, names, len, &len);
	for (at = 0; r == 0 && at < len; at += strlen(names + at) + 1)
		r = lst_xattr(img, ino, names + at, indent, f);
	free(names);
	return r;
}
