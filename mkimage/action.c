/* SPDX-License-Identifier: BSD-2-Clause */
/* The actions applied to each entry between the source and the tree, in mksquashfs's stages:
 * exclude on the entry as the source gives it, then chmod/uid/gid/guid and the data actions in
 * the order given (each test sees what the earlier actions changed), then prune on the changed
 * entry. Tests see the path from the image root with "/" in front ("/" for the root), the base
 * name ("" for the root), the depth (1 for the root's entries) and the source's attributes. */
#include <fnmatch.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "sqk/error.h"
#include "common/grow.h"
#include "mk.h"
#include "action.h"
#include "source.h"

/* What the tests look at. */
struct subject {
	const char *name;         /* base name */
	const char *path;         /* "/" and the image path */
	mode_t mode;
	uint32_t uid, gid;
	uint64_t size;            /* the source's st_size (a symlink: its target's length) */
	uint64_t ino, blocks, nlink; /* the source's st_ino, st_blocks, st_nlink */
	uint32_t depth;
	uint32_t block_size;
	int64_t mtime;
};

static bool cmp_num(const struct act_expr *e, int64_t v)
{
	switch (e->cmp) {
	case ACT_LT: return v < e->num;
	case ACT_LE: return v <= e->num;
	case ACT_EQ: return v == e->num;
	case ACT_GE: return v >= e->num;
	case ACT_GT: return v > e->num;
	default: return e->num <= v && v <= e->num2;
	}
}

/* subpathname: the pattern's number of components of the path, matched. */
static bool match_sub(const struct act_expr *e, const char *path)
{
	const char *p = path;
	for (int k = 0; *p && k < e->pat_parts; k++) {
		while (*p == '/')
			p++;
		while (*p && *p != '/')
			p++;
	}
	size_t n = (size_t)(p - path);
	char *cut = malloc(n + 1);
	if (!cut)
		return false;
	memcpy(cut, path, n);
	cut[n] = 0;
	bool r = fnmatch(e->pat, cut, FNM_PATHNAME | FNM_EXTMATCH) == 0;
	free(cut);
	return r;
}

static bool perm_match(const struct act_expr *e, mode_t mode)
{
	mode_t bits = mode & 07777;
	if (e->perm_op == '=')
		return bits == e->perm;
	if (e->perm_op == '-')
		return (bits & e->perm) == e->perm;
	return !e->perm || (bits & e->perm);
}

static bool test_atom(const struct act_expr *e, const struct subject *s)
{
	bool reg = S_ISREG(s->mode), dir = S_ISDIR(s->mode);
	int64_t size = (int64_t)s->size;
	switch (e->test) {
	case ACT_T_NAME: return fnmatch(e->pat, s->name, FNM_PATHNAME | FNM_EXTMATCH) == 0;
	case ACT_T_PATHNAME: return fnmatch(e->pat, s->path, FNM_PATHNAME | FNM_EXTMATCH) == 0;
	case ACT_T_SUBPATHNAME: return match_sub(e, s->path);
	case ACT_T_FILESIZE: return reg && cmp_num(e, size);
	case ACT_T_TAILSIZE: return reg && cmp_num(e, size & (int64_t)(s->block_size - 1));
	case ACT_T_DIRSIZE: return dir && cmp_num(e, size);
	case ACT_T_SIZE: return cmp_num(e, size);
	case ACT_T_UID:
	case ACT_T_USER: return cmp_num(e, s->uid);
	case ACT_T_GID:
	case ACT_T_GROUP: return cmp_num(e, s->gid);
	case ACT_T_DEPTH: return cmp_num(e, s->depth);
	case ACT_T_INODE: return cmp_num(e, (int64_t)s->ino);
	case ACT_T_NLINK: return cmp_num(e, (int64_t)s->nlink);
	case ACT_T_FILEBLOCKS: return reg && cmp_num(e, (int64_t)s->blocks);
	case ACT_T_DIRBLOCKS: return dir && cmp_num(e, (int64_t)s->blocks);
	case ACT_T_BLOCKS: return cmp_num(e, (int64_t)s->blocks);
	case ACT_T_TYPE: return (s->mode & S_IFMT) == e->type;
	case ACT_T_PERM: return perm_match(e, s->mode);
	case ACT_T_MTIME: return cmp_num(e, s->mtime);
	case ACT_T_TRUE: return true;
	default: return false;
	}
}

static bool eval(const struct act_expr *e, const struct subject *s)
{
	switch (e->kind) {
	case ACT_ATOM: return test_atom(e, s);
	case ACT_NOT: return !eval(e->l, s);
	case ACT_AND: return eval(e->l, s) && eval(e->r, s);
	default: return eval(e->l, s) || eval(e->r, s);
	}
}

/* Whether an action of kind k applies to an entry of mode m (mksquashfs: chmod leaves
 * symlinks alone, the data actions apply to regular files). */
static bool kind_applies(enum act_kind k, mode_t m)
{
	if (k == ACT_MODE)
		return !S_ISLNK(m);
	if (k >= ACT_COMPRESSED && k <= ACT_NO_ALWAYS_FRAGS)
		return S_ISREG(m);
	return true;
}

static void run_rule(const struct act_rule *r, struct subject *s, struct mk_entry *e)
{
	switch (r->kind) {
	case ACT_MODE: s->mode = act_mode_apply(&r->mode, s->mode); break;
	case ACT_UID: s->uid = r->uid; break;
	case ACT_GID: s->gid = r->gid; break;
	case ACT_GUID: s->uid = r->uid; s->gid = r->gid; break;
	case ACT_COMPRESSED: e->act_raw = MK_ACT_OFF; break;
	case ACT_UNCOMPRESSED: e->act_raw = MK_ACT_ON; break;
	case ACT_FRAGMENTS: e->act_frag = MK_ACT_ON; break;
	case ACT_NO_FRAGMENTS: e->act_frag = MK_ACT_OFF; break;
	case ACT_ALWAYS_FRAGS: e->act_tail = MK_ACT_ON; break;
	case ACT_NO_ALWAYS_FRAGS: e->act_tail = MK_ACT_OFF; break;
	default: break;
	}
}

/* The first rule of kind k whose expression holds. */
static bool any_rule(const struct mk_actions *a, enum act_kind k, const struct subject *s)
{
	for (size_t i = 0; i < a->n; i++)
		if (a->rules[i].kind == k && eval(a->rules[i].expr, s))
			return true;
	return false;
}

/* Whether the xattr name stays: no xattrs-exclude rule that holds matches it, and when some
 * xattrs-include rules hold, one of them matches it (mksquashfs's order). */
static bool xattr_kept(const struct mk_actions *a, const bool *holds, const char *name)
{
	bool any_inc = false, inc = false;
	for (size_t i = 0; i < a->n; i++) {
		const struct act_rule *r = &a->rules[i];
		if (!holds[i] || !r->re)
			continue;
		bool m = regexec(r->re, name, 0, NULL, 0) == 0;
		if (r->kind == ACT_XATTRS_EXCLUDE && m)
			return false;
		if (r->kind == ACT_XATTRS_INCLUDE) {
			any_inc = true;
			inc |= m;
		}
	}
	return !any_inc || inc;
}

/* The xattrs-add rules that hold, after the others (user. ones only on files and directories,
 * as mksquashfs); a name twice is refused when the set is stored. */
static size_t add_xattrs(struct mk_actions *a, const bool *holds, mode_t mode, size_t n)
{
	for (size_t i = 0; i < a->n && !a->no_xattrs; i++) {
		const struct act_rule *r = &a->rules[i];
		if (r->kind != ACT_XATTRS_ADD || !holds[i] ||
		    (!strncmp(r->xname, "user.", 5) && !S_ISREG(mode) && !S_ISDIR(mode)))
			continue;
		a->xkv[n++] = (struct mk_xattr_kv){ .name = r->xname, .value = r->xval,
						    .size = r->xlen };
	}
	return n;
}

/* xattrs-exclude, xattrs-include and xattrs-add on the entry as the other actions left it. */
static int filter_xattrs(struct mk_actions *a, struct mk_entry *e, const struct subject *s)
{
	bool small[64], *holds = a->n <= 64 ? small : calloc(a->n, sizeof(bool));
	int err = holds && !mem_grow(&a->xkv, &a->xkv_cap, e->nxattrs + a->nadd + 1,
				     sizeof(*a->xkv), 0) ? 0 : SQK_ENOMEM;
	for (size_t i = 0; !err && i < a->n; i++)
		holds[i] = a->rules[i].kind >= ACT_XATTRS_EXCLUDE && eval(a->rules[i].expr, s);
	size_t n = 0;
	for (size_t i = 0; !err && i < e->nxattrs; i++)
		if (xattr_kept(a, holds, e->xattrs[i].name))
			a->xkv[n++] = e->xattrs[i];
	if (!err)
		n = add_xattrs(a, holds, s->mode, n);
	for (size_t i = 0; !err && i < a->n; i++)
		if (a->rules[i].kind == ACT_NO_XATTRS && holds[i])
			n = 0;
	if (!err) {
		e->xattrs = a->xkv;
		e->nxattrs = n;
	}
	if (holds != small)
		free(holds);
	return err;
}

static int apply_to(struct mk_actions *a, struct mk_entry *e, struct subject *s)
{
	bool top = s->depth == 0;
	if (!top && any_rule(a, ACT_EXCLUDE, s))
		return 0;
	for (size_t i = 0; i < a->n; i++) {
		const struct act_rule *r = &a->rules[i];
		bool stage2 = r->kind != ACT_EXCLUDE && r->kind != ACT_PRUNE &&
			      r->kind < ACT_XATTRS_EXCLUDE;
		if (stage2 && kind_applies(r->kind, s->mode) && eval(r->expr, s))
			run_rule(r, s, e);
	}
	if (!top && any_rule(a, ACT_PRUNE, s))
		return 0;
	e->mode = s->mode;
	e->uid = s->uid;
	e->gid = s->gid;
	int err = a->any_xattr && (e->nxattrs || a->nadd) ? filter_xattrs(a, e, s) : 0;
	return err ? err : 1;
}

int mk_actions_apply(struct mk_actions *a, struct mk_entry *e, uint32_t depth,
		     uint32_t block_size)
{
	size_t n = strlen(e->path);
	char small[256], *path = n + 2 <= sizeof(small) ? small : malloc(n + 2);
	if (!path)
		return SQK_ENOMEM;
	path[0] = '/';
	memcpy(path + 1, e->path, n + 1);
	const char *slash = strrchr(e->path, '/');
	struct subject s = {
		.name = slash ? slash + 1 : e->path, .path = path, .mode = e->mode, .uid = e->uid,
		.gid = e->gid, .depth = depth, .block_size = block_size,
		.size = S_ISREG(e->mode) ? e->size :
			S_ISLNK(e->mode) && e->target ? strlen(e->target) : e->st_size,
		.ino = e->st_ino, .blocks = e->st_blocks, .nlink = e->st_nlink, .mtime = e->mtime,
	};
	int keep = apply_to(a, e, &s);
	if (path != small)
		free(path);
	return keep;
}

/* ---- between the source and the tree ---- */

static int gone_cmp(const void *k, const void *v)
{
	return strcmp(k, *(char *const *)v);
}

/* Whether path is under a directory left out (sources that give entries in any order). */
static bool under_gone(const struct mk_actions *a, const char *path)
{
	if (!a->ngone)
		return false;
	char *p = strdup(path);
	bool hit = false;
	for (char *sl = p ? strrchr(p, '/') : NULL; sl && !hit; sl = strrchr(p, '/')) {
		*sl = 0;
		hit = bsearch(p, a->gone, a->ngone, sizeof(*a->gone), gone_cmp) != NULL;
	}
	free(p);
	return hit;
}

static int remember_gone(struct mk_ctx *c, struct mk_actions *a, const char *path)
{
	size_t at = 0;
	while (at < a->ngone && strcmp(a->gone[at], path) < 0)
		at++;
	if (at < a->ngone && !strcmp(a->gone[at], path))
		return 0;
	int err = mk_grow(c, &a->gone, &a->gone_cap, a->ngone + 1, sizeof(*a->gone));
	char *dup = err ? NULL : strdup(path);
	if (!err && !dup)
		err = mk_fail(c, SQK_ENOMEM, "out of memory");
	if (err)
		return err;
	memmove(a->gone + at + 1, a->gone + at, (a->ngone - at) * sizeof(*a->gone));
	a->gone[at] = dup;
	a->ngone++;
	return 0;
}

static uint32_t depth_of(const char *path)
{
	uint32_t d = *path ? 1 : 0;
	for (; *path; path++)
		d += *path == '/';
	return d;
}

/* Whether a directory above the image path rel (not the root) is left out by an action: 1,
 * else 0, or an error. */
static int above_gone(struct mk_ctx *c, struct mk_source *src, char *rel)
{
	int r = 0;
	for (char *sl = strchr(rel, '/'); !r && sl; sl = strchr(sl + 1, '/')) {
		struct mk_entry d;
		struct stat st;
		*sl = 0;
		r = mk_source_dir_file(src, c, rel, true, &d);
		if (r == 2 && lstat(mk_source_dir_disk_path(src), &st) == 0) {
			d = (struct mk_entry){ .path = rel, .origin = rel, .mode = st.st_mode,
					       .uid = st.st_uid, .gid = st.st_gid,
					       .st_size = (uint64_t)st.st_size,
					       .st_ino = (uint64_t)st.st_ino,
					       .st_blocks = (uint64_t)st.st_blocks,
					       .st_nlink = (uint32_t)st.st_nlink };
			r = mk_actions_apply(c->actions, &d, depth_of(rel), c->opt->block_size);
			r = r < 0 ? mk_fail(c, r, "out of memory") : !r;
		} else if (r >= 0) {
			r = 1;
		}
		*sl = '/';
	}
	return r;
}

int mk_actions_file(struct mk_ctx *c, struct mk_source *src, const char *rel,
		    struct mk_entry *e)
{
	if (!c->actions)
		return mk_source_dir_file(src, c, rel, false, e);
	char *p = strdup(rel);
	int r = p ? above_gone(c, src, p) : mk_fail(c, SQK_ENOMEM, "out of memory");
	free(p);
	if (!r)
		r = mk_source_dir_file(src, c, rel, false, e);
	if (r)
		return r;
	r = mk_actions_apply(c->actions, e, depth_of(rel), c->opt->block_size);
	return r < 0 ? mk_fail(c, r, "'%s': out of memory", e->origin) : !r;
}

int mk_actions_next(struct mk_ctx *c, struct mk_source *src, struct mk_entry *e)
{
	struct mk_actions *a = c->actions;
	for (;;) {
		int r = src->ops->next(src, c, e);
		if (r)
			return r;
		if (under_gone(a, e->path))
			continue;
		r = mk_actions_apply(a, e, depth_of(e->path), c->opt->block_size);
		if (r < 0)
			return mk_fail(c, r, "'%s': out of memory", e->origin);
		if (r)
			return 0;
		if (!S_ISDIR(e->mode))
			continue;
		if (src->ops->ordered && src->ops->skip_dir)
			src->ops->skip_dir(src);
		else if ((r = remember_gone(c, a, e->path)))
			return r;
	}
}

void mk_actions_free(struct mk_actions *a)
{
	if (a)
		mk_actions_clear(a);
	free(a);
}

int mk_actions_load(struct mk_ctx *c)
{
	const struct sqk_build_source *s = c->src;
	char msg[512];
	if (!s->nactions || c->actions)
		return 0;
	if (!(c->actions = calloc(1, sizeof(*c->actions))))
		return mk_fail(c, SQK_ENOMEM, "out of memory");
	c->actions->no_xattrs = c->opt->no_xattrs;
	for (int i = 0; i < s->nactions; i++) {
		const struct sqk_build_action *ac = &s->actions[i];
		int err = ac->file ? mk_actions_parse_file(c->actions, ac->arg, msg, sizeof(msg)) :
				     mk_actions_parse(c->actions, ac->arg, msg, sizeof(msg));
		if (err)
			return mk_fail(c, err, "%s '%s': %s", ac->file ? "-action-file" : "-action",
				       ac->arg, msg);
	}
	return 0;
}
