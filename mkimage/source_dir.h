/* SPDX-License-Identifier: BSD-2-Clause */
/* The directory source's own state (not for the rest of the builder; source.h is its
 * interface): source_dir.c walks the tree, exclude.c matches the excludes on image paths,
 * by_path.c finds files by path for --order and -sort. */
#ifndef SQK_MK_SOURCE_DIR_H
#define SQK_MK_SOURCE_DIR_H

#include <regex.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "common/format.h"
#include "mk.h"
#include "prefetch.h"
#include "source.h"

/* One directory being walked: its sorted entry names and the next one to give. */
struct frame {
	char **names;
	size_t n, next;
	size_t path_len, rel_len; /* lengths of the walker's path and rel at this directory */
	dev_t dev;                /* the directory's file system (-one-file-system) */
};

/* One -e path, resolved to the image path it names. */
struct exact_excl {
	char *rel;
	int idx; /* in src->mks_excludes */
};

/* One -e pattern (-wildcards or -regex), split into its path components. */
struct wild_excl {
	char *buf;          /* the components, each NUL-terminated */
	const char **comp;
	regex_t *re;        /* -regex: each component compiled; NULL for shell patterns */
	size_t n;
	bool anchored;      /* from the root; else ("... " in front) ending at any depth */
	int idx;
};

/* Where an -e path was found when it was resolved. */
enum { EX_NOWHERE, EX_OUTSIDE, EX_INSIDE };

/* The excludes compiled for the walk. */
struct excludes {
	bool any;
	struct exact_excl *exact; /* sorted by rel */
	size_t nexact, exact_cap;
	struct wild_excl *wild;
	size_t nwild, wild_cap;
	bool *hit;                /* per exclude, globs first: matched an entry of the walk */
	unsigned char *found;     /* per -e path: EX_* */
	char *split;              /* a path being matched, cut into components */
	size_t split_cap;
	const char **parts;
	size_t parts_cap;
};

struct dir_source {
	struct mk_source base;
	struct excludes ex;
	struct frame *stack;
	size_t depth, cap;
	char *path, *rel;          /* of the current entry; grown as needed */
	size_t path_cap, rel_cap;
	int state;                 /* 0: root next, 1: walking, 2: done */
	bool synthetic;            /* several sources under a made-up root */
	int *src_order;            /* synthetic root: frame position -> index in src->sources */
	bool descend;
	char *root;                /* one directory source: its path (files by path) */
	/* the current entry's content */
	int fd;
	uint64_t size;
	dev_t dev;                 /* of the lstat */
	ino_t ino;
	/* read-ahead of a cold tree (prefetch.h): started by the walk's reads that miss the page
	 * cache (misses); pf_off: no more misses looked for (the scout runs or cannot) */
	struct mk_prefetch *pf;
	struct mk_miss_watch misses;
	bool pf_off;
	struct excludes pf_ex;     /* the scout's own view of ex (its buffers; the rest shared) */
	struct mk_prefetch_dir pf_dir; /* the current directory's listing from the scout */
	bool have_pf_dir;
	const struct sqk_build_source *pf_src;
	/* xattrs of the current entry */
	char *xnames;
	size_t xnames_cap;
	struct mk_xattr_kv *kv;
	uint8_t *xvals;
	size_t kv_cap, xvals_cap;
	char target[SQK_SYMLINK_MAX + 2];
	dev_t ent_dev;             /* the current entry's file system (-one-file-system) */
};

/* qsort order of entry names: dir_name_cmp (unsigned bytes). */
int sd_name_sort(const void *a, const void *b);
/* Writes add into *buf at at (grown as needed), after a '/' when slash and at does not
 * end one already. */
int sd_set_str(struct mk_ctx *c, char **buf, size_t *cap, size_t at, const char *add,
	       bool slash);
/* Whether the entry at image path rel is left out. With count (the walk), every exclude that
 * matches is remembered as having matched; else the first match answers (lookups by path).
 * top: rel is a source under a made-up root, which only mksquashfs's forms exclude. */
bool sd_excluded(struct excludes *x, const struct sqk_build_source *o, const char *rel,
		 bool count, bool top);
/* Compiles opt's excludes for d, once its sources are known. */
int sd_excludes_init(struct mk_ctx *c, struct dir_source *d);
/* Frees what x owns. */
void sd_excludes_free(struct excludes *x);
/* The line naming an -e path that excluded nothing, and why, unless what it names was left out
 * with a directory above it. */
void sd_warn_exact(struct dir_source *d, const struct sqk_build_source *o, int i);
/* Frees the names of frame f. */
void sd_frame_free(struct frame *f);
/* Reads the directory at d->path (relative name d->rel) into a new frame, sorted, without the
 * excluded entries. */
int sd_enter_dir(struct mk_ctx *c, struct dir_source *d);
/* Fills e from an lstat of d->path. Returns 1 for an entry to leave out (the image). */
int sd_stat_entry(struct mk_ctx *c, struct dir_source *d, struct mk_entry *e, bool root);
/* Closes the current file's descriptor, if one is open. */
void sd_close_file(struct dir_source *d);
/* The last component of path (trailing slashes ignored) in buf, cut to cap - 1 bytes. */
const char *sd_base_name(const char *path, char *buf, size_t cap);

#endif
