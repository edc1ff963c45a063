/* SPDX-License-Identifier: BSD-2-Clause */
/* The image tree (tree.c) and the table of the two tree backends (tree.c in memory, walk.c
 * on disk), with the attributes of entries as the image stores them. */
#ifndef SQK_MK_TREE_H
#define SQK_MK_TREE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "mk.h"

struct mk_entry;

/* tree.c: the image tree grown entry by entry (for sources whose entries come in any order, and
 * pseudo definitions; ordered: the source gives each directory's entries sorted and once,
 * parents first, so no name index is kept): directories and the entries it must find again are
 * nodes in memory, the others records of an external sort (runs.h); mk_tree_finish merges both
 * into walk.c's tree on disk (walk.h). mk_tree_add places e (borrowed) and sets data->file to
 * the file whose content must be read now (regular files that are not links), else NULL. */
int mk_tree_start(struct mk_ctx *c, bool ordered);
/* Entries may come in any order from now on (pseudo definitions after an ordered source), and
 * each is a node (the definitions find them). */
int mk_tree_unorder(struct mk_ctx *c);
int mk_tree_add(struct mk_ctx *c, const struct mk_entry *e, struct mk_file_ref *data);
/* Sorts directories, sets the synthetic root's time, merges nodes and records into the walk
 * (which numbers the inodes), counts the kinds (st). */
int mk_tree_finish(struct mk_ctx *c);
void mk_tree_free(struct mk_ctx *c);
/* The node at path (relative, "" = root; the canonical node of a hard link), or NULL. */
struct mk_node *mk_tree_find(struct mk_ctx *c, const char *path);
/* Sets permission bits, owner and (mtime >= 0) mtime of n, as --pseudo's m does. */
int mk_tree_set_attrs(struct mk_ctx *c, struct mk_node *n, uint32_t perm, uint32_t uid,
		      uint32_t gid, int64_t mtime);

/* An entry's attributes as the image stores them (the options applied; checked). */
struct mk_attrs {
	mode_t mode;
	uint32_t mtime;
	uint16_t uid_idx, gid_idx;
	uint32_t xattr_idx;    /* SQK_NONE32 = none */
	uint32_t rdev;         /* devices, SquashFS encoding */
	uint32_t target_len;   /* symlinks: strlen(e->target) */
};
/* Fills a from e (interning its owner ids and xattrs; keeps c->newest_mtime). */
int mk_entry_attrs(struct mk_ctx *c, const struct mk_entry *e, struct mk_attrs *a);
/* The attributes of a directory no entry listed: the --default-* options. */
int mk_implied_attrs(struct mk_ctx *c, struct mk_attrs *a);
/* The mtime stored for t (--set-mtime, --clamp-time, 32 bits). */
uint32_t mk_clamp_time(const struct sqk_build_opts *o, int64_t t);
/* Refuses an entry deeper than SQK_DEPTH_MAX (common/depth.h), naming it and its depth. */
int mk_check_depth(struct mk_ctx *c, const struct mk_entry *e);
/* The count of clamped mtimes when more than the first (named when met) were clamped. */
void mk_report_clamped(struct mk_ctx *c);
/* The id-table indexes of uid and gid (after --force-uid/--force-gid). */
int mk_owner(struct mk_ctx *c, uint32_t uid, uint32_t gid, uint16_t *uid_idx, uint16_t *gid_idx);
/* One more inode of kind m (f: a regular file's content) in c->st. */
void mk_count_kind(struct mk_ctx *c, mode_t m, const struct mk_file *f);

/* (dev, ino) → a non-zero value: the files of a walked tree that have several names. */
struct mk_idmap_slot {
	uint64_t dev, ino, val;
};
struct mk_idmap {
	struct mk_idmap_slot *slots;
	size_t cap, used;
};
/* *found = the value of (dev, ino), or 0 after recording val (non-zero) for it. */
int mk_idmap_find_or_put(struct mk_idmap *m, uint64_t dev, uint64_t ino, uint64_t val,
			 uint64_t *found);
void mk_idmap_free(struct mk_idmap *m);

/* The two tree backends behind one table, chosen once per build (build.c): add places an
 * entry (as mk_tree_add), finish numbers the inodes, emit writes the inode and directory tables
 * through tables.c (*root_ref = the root's inode reference), free releases the tree (NULL-safe).
 * The backends call tables.c; tables.c knows only this table. */
struct mk_tables;
struct mk_tree_ops {
	int (*add)(struct mk_ctx *c, const struct mk_entry *e, struct mk_file_ref *data);
	int (*finish)(struct mk_ctx *c);
	int (*emit)(struct mk_ctx *c, struct mk_tables *t, uint64_t *root_ref);
	void (*free)(struct mk_ctx *c);
};
extern const struct mk_tree_ops mk_tree_mem_ops;  /* tree.c */
extern const struct mk_tree_ops mk_tree_disk_ops; /* walk.c */

/* Writes n's path in the image ("/a/b") into buf, shortened when it does not fit. */
void mk_node_path(const struct mk_node *n, char *buf, size_t cap);

#endif
