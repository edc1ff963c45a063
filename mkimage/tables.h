/* SPDX-License-Identifier: BSD-2-Clause */
/* Writing the inode and directory tables, for the two ways the builder takes in the tree (a
 * source in any order, tree.c; a walked directory tree, walk.c), both written from walk.c's
 * records on disk. Each backend's emit (struct mk_tree_ops, mk.h) walks its tree and calls the
 * two functions below; tables.c calls the backend only through that table. The
 * inode table goes to the image as it is made (it follows the data); the directory table waits
 * in a store that spills to a temporary file, then follows it. */
#ifndef SQK_MK_TABLES_H
#define SQK_MK_TABLES_H

#include "common/meta.h"
#include "mk.h"
#include "spill.h"
#include "tree.h"

struct mk_tables {
	struct mk_ctx *c;
	struct meta_writer inodes, dirs;
	struct mk_spill *dir_store;  /* finished directory-table blocks (owned) */
	struct mk_piece_ref { uint64_t ref; size_t len; } *dir_pieces; /* what went in (owned) */
	size_t ndir_pieces, dir_pieces_cap;
	uint64_t *exports;           /* inode reference by inode number - 1 (owned) */
};

/* One inode's attributes (pointers borrowed). */
struct mk_inode {
	mode_t mode;                 /* type and permission bits */
	uint16_t uid_idx, gid_idx;
	uint32_t mtime, ino, nlink, xattr_idx;
	uint32_t rdev;               /* devices, SquashFS encoding */
	const char *target;          /* symlinks */
	uint32_t target_len;
	const struct mk_file *file;  /* regular files */
};

/* One entry of a directory listing (name borrowed). */
struct mk_dent {
	const char *name;
	uint32_t name_len;
	uint32_t ino;
	mode_t mode;                 /* the type bits count */
	uint64_t ref;                /* its inode's reference */
};

/* Appends the inode of a non-directory; *ref = its reference. */
int mk_tables_inode(struct mk_tables *t, const struct mk_inode *a, uint64_t *ref);

/* Appends the listing v[0..n) (sorted by name) of directory a, then its inode; path names it in
 * messages. */
int mk_tables_dir(struct mk_tables *t, const struct mk_inode *a, const struct mk_dent *v,
		  size_t n, uint32_t nsubdirs, uint32_t parent_ino, const char *path,
		  uint64_t *ref);

/* tables.c: inode, directory, fragment, export, id and xattr tables, then the superblock. */
int mk_tables_write(struct mk_ctx *c, struct sqk_super *sb);

#endif
