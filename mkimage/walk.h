/* SPDX-License-Identifier: BSD-2-Clause */
/* walk.c's tree on disk as a second front fills it (tree.c, for a source whose entries come in
 * any order): directories are given whole, in the order the inodes are numbered, each as its
 * sorted records; hard-link groups and where their names are; then mk_walk_close numbers the
 * inodes, and mk_tree_disk_ops' emit and free do the rest, as for a walked tree. */
#ifndef SQK_MK_WALK_H
#define SQK_MK_WALK_H

#include <stddef.h>
#include <stdint.h>

#include "mk.h"
#include "tree.h"

/* The fixed part of an encoded entry; its name follows, then a symlink's target. */
struct mk_wrec {
	uint32_t mode;
	uint32_t mtime;
	uint32_t xattr_idx;
	uint32_t ref;          /* directory: its number; file: its file number; device: rdev;
				* link: the group */
	uint16_t uid_idx, gid_idx;
	uint16_t name_len, target_len;
	uint32_t link;         /* 1: a name of a file with several names (the group holds it) */
};

/* c->walk, empty: no directory, the root's attributes the implied ones. */
int mk_walk_create(struct mk_ctx *c);
/* A new 32-byte file record of size bytes (owned by the walk): *idx its number. */
int mk_walk_new_file(struct mk_ctx *c, uint64_t size, uint32_t *idx);
/* File record number idx (borrowed; it never moves). */
struct mk_file *mk_walk_file(struct mk_ctx *c, uint32_t idx);
/* Appends r (a link record's target is not stored), name and target (borrowed) to the growing
 * buffer *buf of *len bytes (*cap allocated; the caller frees it). */
int mk_walk_encode(struct mk_ctx *c, uint8_t **buf, size_t *len, size_t *cap,
		   const struct mk_wrec *r, const char *name, const char *target);
/* The next directory (numbers from 0, the root): its n records recs[0..len) (copied), sorted by
 * name, nsubdirs of them directories. */
int mk_walk_put_dir(struct mk_ctx *c, const uint8_t *recs, size_t len, uint32_t n,
		    uint32_t nsubdirs);
/* A new hard-link group, its attributes set later (mk_walk_set_group): *group its number. */
int mk_walk_new_group(struct mk_ctx *c, uint32_t *group);
/* The inode of group: attributes r, target (copied; symlinks), nlink names. */
int mk_walk_set_group(struct mk_ctx *c, uint32_t group, const struct mk_wrec *r,
		      const char *target, uint32_t nlink);
/* A name of group: record pos of directory dir. */
int mk_walk_put_lname(struct mk_ctx *c, uint32_t dir, uint32_t pos, uint32_t group);
/* All directories given: the root's attributes r, inodes in all; numbers the inodes. */
int mk_walk_close(struct mk_ctx *c, const struct mk_wrec *root, uint64_t inodes);

/* walk.c: the tree of an ordered source (the directory walker) held on disk: each directory's
 * entries go to a store that spills to a temporary file once it is complete; memory keeps the
 * 32-byte file records, the directories and the hard links. mk_walk_start, then
 * mk_tree_disk_ops; the image is byte for byte the one the tree in memory gives. */
int mk_walk_start(struct mk_ctx *c);

#endif
