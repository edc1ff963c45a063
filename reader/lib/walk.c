/* SPDX-License-Identifier: BSD-2-Clause */
/* The one tree walk of libsqk (sqk_walk_open/next/skip/close): depth first in listing order,
 * with an explicit stack of directory listings on the heap (one level per directory being read,
 * however deep the image nests), the one depth bound, loop detection, an optional
 * once-per-inode set and post-order events. sqk info's count, the checker, ls -R, tar, extract,
 * the progress totals and sqkfuse's trace all walk through it; what each does per entry stays
 * with it. */
#include <stdlib.h>
#include <string.h>

#include "common/depth.h"
#include "common/grow.h"
#include "internal.h"

_Static_assert(SQK_WALK_MAX_DEPTH == SQK_DEPTH_MAX, "the walk's bound is common/depth.h's");

/* A directory reported by the walk: its listing while it is read (open), its path's length. */
struct walk_level {
	struct sqk_dir_iter it;
	struct sqk_inode dir;
	size_t plen;
	bool open;
};

struct sqk_walk {
	struct sqk_image *img;
	unsigned flags, max_depth;
	struct sqk_inode start;
	bool started;
	bool dead;                  /* out of memory: the walk is over */
	bool enter;                 /* the directory on top was just reported: enter it next */
	struct walk_level *lv;      /* lv[d]: the directory at depth d of the current path */
	size_t n, cap;
	char *path;                 /* the current path, relative to the start */
	size_t plen, pcap;
	uint8_t *seen;              /* SQK_WALK_ONCE: a bit per inode number 1..count */
	uint32_t count;
};

/* Adds ino to the once-per-inode set: false when it was there (or cannot be an inode number). */
static bool walk_mark(struct sqk_walk *w, uint32_t ino)
{
	if (ino == 0 || ino > w->count || (w->seen[ino / 8] >> (ino % 8) & 1))
		return false;
	w->seen[ino / 8] |= (uint8_t)(1u << (ino % 8));
	return true;
}

/* Sets the current path to the first plen bytes of it, plus "/name" (just name at the top). */
static int walk_path(struct sqk_walk *w, size_t plen, const char *name, size_t len)
{
	size_t at = plen ? plen + 1 : 0;
	int rc = mem_grow(&w->path, &w->pcap, at + len + 1, 1, 0);

	if (rc)
		return rc;
	if (plen)
		w->path[plen] = '/';
	memcpy(w->path + at, name, len);
	w->plen = at + len;
	w->path[w->plen] = 0;
	return 0;
}

/* Cuts the current path back to the directory whose path is plen bytes long. */
static void walk_cut(struct sqk_walk *w, size_t plen)
{
	w->plen = plen;
	w->path[plen] = 0;
}

/* Fills what every report of the current path says. */
static void walk_fill(const struct sqk_walk *w, int ev, unsigned depth,
		      struct sqk_walk_entry *e)
{
	const char *slash = memrchr(w->path, '/', w->plen);

	e->event = ev;
	e->path = w->path;
	e->path_len = w->plen;
	e->name = slash ? slash + 1 : w->path;
	e->name_len = w->plen - (size_t)(e->name - w->path);
	e->depth = depth;
	e->parent = depth ? &w->lv[depth - 1].dir : NULL;
}

/* Pushes the directory just reported (not entered yet: sqk_walk_next enters it). */
static int walk_push(struct sqk_walk *w, const struct sqk_inode *dir)
{
	int rc = mem_grow(&w->lv, &w->cap, w->n + 1, sizeof(*w->lv), 0);

	if (rc)
		return rc;
	w->lv[w->n].dir = *dir;
	w->lv[w->n].plen = w->plen;
	w->lv[w->n].open = false;
	w->n++;
	return 0;
}

/* True when dir is one of the directories above the entry being reported (a loop). */
static bool walk_loops(const struct sqk_walk *w, const struct sqk_inode *dir)
{
	for (size_t i = 0; i < w->n; i++)
		if (w->lv[i].dir.ref == dir->ref)
			return true;
	return false;
}

/* Reports e (its path, inode and dirent set): flags, and a directory pushed to be entered. */
static int walk_report(struct sqk_walk *w, struct sqk_walk_entry *e)
{
	bool dir = sqk_basic_type(e->inode.type) == SQK_T_DIR;

	e->flags = 0;
	if (dir && walk_loops(w, &e->inode))
		e->flags |= SQK_WALK_LOOP;
	if ((w->flags & SQK_WALK_ONCE) && !walk_mark(w, e->inode.ino))
		e->flags |= SQK_WALK_SEEN;
	if (!dir)
		return 1;
	if (walk_push(w, &e->inode)) {
		e->event = SQK_WALK_ERR_FATAL;
		return SQK_ENOMEM;
	}
	e->parent = e->depth ? &w->lv[e->depth - 1].dir : NULL; /* lv may have moved */
	w->enter = !(e->flags & (SQK_WALK_SEEN | SQK_WALK_LOOP));
	return 1;
}

/* Starts listing the directory on top (just reported): the depth bound, then its listing. */
static int walk_enter(struct sqk_walk *w, struct sqk_walk_entry *e)
{
	struct walk_level *top = &w->lv[w->n - 1];
	unsigned depth = (unsigned)(w->n - 1);
	int rc;

	w->enter = false;
	if (depth >= w->max_depth && top->dir.size > 3) {
		walk_fill(w, SQK_WALK_ERR_DEPTH, depth, e);
		e->inode = top->dir;
		return SQK_ETOOBIG;
	}
	rc = dir_start(w->img, &top->dir, &top->it);
	if (rc) {
		walk_fill(w, SQK_WALK_ERR_LIST, depth, e);
		e->inode = top->dir;
		e->pos = top->dir.dir_block + sqk_image_super(w->img)->directory_table_start;
		return rc;
	}
	top->open = true;
	return 0;
}

/* Pops the directory on top, whose listing is over; 1 when that is reported (SQK_WALK_POST). */
static int walk_pop(struct sqk_walk *w, struct sqk_walk_entry *e)
{
	struct walk_level *top = &w->lv[w->n - 1];

	walk_cut(w, top->plen);
	if (!(w->flags & SQK_WALK_LEAVE)) {
		w->n--;
		return 0;
	}
	walk_fill(w, SQK_WALK_POST, (unsigned)(w->n - 1), e);
	e->flags = 0;
	e->inode = top->dir;
	e->dirent = (struct sqk_dirent){ 0 };
	w->n--; /* e->parent still points into lv: valid until the next call */
	return 1;
}

/* The next entry of the directory on top: 1 reported, 0 none there, < 0 an error. */
static int walk_step(struct sqk_walk *w, struct sqk_walk_entry *e)
{
	struct walk_level *top = &w->lv[w->n - 1];
	unsigned depth = (unsigned)w->n;
	int rc = sqk_dir_next(&top->it, &e->dirent);

	if (rc <= 0) {
		top->open = false;
		if (rc == 0)
			return 0;
		walk_cut(w, top->plen);
		walk_fill(w, SQK_WALK_ERR_LIST, depth - 1, e);
		e->inode = top->dir;
		e->pos = sqk_dir_pos(&top->it);
		return rc;
	}
	e->index = sqk_dir_index(&top->it) - 1;
	if (walk_path(w, top->plen, e->dirent.name, e->dirent.name_len)) {
		e->event = SQK_WALK_ERR_FATAL;
		return SQK_ENOMEM;
	}
	walk_fill(w, SQK_WALK_PRE, depth, e);
	e->dirent.name = e->name; /* the iterator's copy changes at its next call */
	rc = sqk_inode_get(w->img, e->dirent.ref, &e->inode);
	if (rc) {
		e->event = SQK_WALK_ERR_INODE;
		return rc;
	}
	return walk_report(w, e);
}

/* The start, reported first. */
static int walk_first(struct sqk_walk *w, struct sqk_walk_entry *e)
{
	w->started = true;
	walk_cut(w, 0);
	walk_fill(w, SQK_WALK_PRE, 0, e);
	e->index = 0;
	e->inode = w->start;
	e->dirent = (struct sqk_dirent){ .name = e->name, .name_len = 0, .ino = w->start.ino,
					 .type = sqk_basic_type(w->start.type),
					 .ref = w->start.ref };
	return walk_report(w, e);
}

/* Fills the caller's *e; borrows w. */
int sqk_walk_next(struct sqk_walk *w, struct sqk_walk_entry *e)
{
	int rc;

	memset(e, 0, sizeof(*e));
	if (w->dead)
		return 0;
	if (!w->started)
		rc = walk_first(w, e);
	else if (w->enter)
		rc = walk_enter(w, e);
	else
		rc = 0;
	while (rc == 0 && w->n)
		rc = w->lv[w->n - 1].open ? walk_step(w, e) : walk_pop(w, e);
	w->dead = e->event == SQK_WALK_ERR_FATAL;
	return rc;
}

/* Borrows w. */
void sqk_walk_skip(struct sqk_walk *w)
{
	w->enter = false;
}

/* Borrows img and start (copied); the caller owns *out. */
int sqk_walk_open(struct sqk_image *img, const struct sqk_inode *start, unsigned flags,
		  unsigned max_depth, struct sqk_walk **out)
{
	struct sqk_walk *w = calloc(1, sizeof(*w));
	int rc = w ? 0 : SQK_ENOMEM;

	*out = NULL;
	if (rc == 0 && start)
		w->start = *start;
	else if (rc == 0)
		rc = sqk_image_root(img, &w->start);
	if (rc == 0) {
		w->img = img;
		w->flags = flags;
		w->max_depth = max_depth < SQK_DEPTH_MAX ? max_depth : SQK_DEPTH_MAX;
		w->count = sqk_image_super(img)->inode_count;
		rc = mem_grow(&w->path, &w->pcap, 256, 1, 0);
	}
	if (rc == 0 && (flags & SQK_WALK_ONCE) && !(w->seen = calloc((size_t)w->count / 8 + 1, 1)))
		rc = SQK_ENOMEM;
	if (rc) {
		sqk_walk_close(w);
		return rc;
	}
	w->path[0] = 0;
	*out = w;
	return 0;
}

/* Borrows img and path; the caller owns *out. */
int sqk_walk_open_path(struct sqk_image *img, const char *path, unsigned flags,
		       unsigned max_depth, struct sqk_walk **out)
{
	struct sqk_inode start;
	int rc = sqk_lookup_path(img, path, &start);

	*out = NULL;
	return rc ? rc : sqk_walk_open(img, &start, flags, max_depth, out);
}

/* NULL-safe. */
void sqk_walk_close(struct sqk_walk *w)
{
	if (!w)
		return;
	free(w->lv);
	free(w->path);
	free(w->seen);
	free(w);
}
