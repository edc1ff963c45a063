/* SPDX-License-Identifier: BSD-2-Clause */
/* sqk diff: compares two trees, each a SquashFS image (local or remote, through libsqk) or a
 * directory on disk, as squashfs-tools-ng's sqfsdiff does, plus xattrs. diff_side.c reads
 * either kind of side, diff_tree.c walks both at once and compares, diff_out.c prints what
 * differs (sqfsdiff's lines, or JSON), diff.c parses the options. */
#ifndef SQK_DIFF_H
#define SQK_DIFF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "cmd.h"

/* One entry of a side, either kind. */
struct diff_node {
	char *name;             /* owned; "" for the root */
	uint32_t mode;          /* full st_mode */
	uint32_t uid, gid, nlink;
	int64_t mtime;
	uint64_t size;          /* regular files and symlinks */
	uint64_t ino;           /* the image's inode number, or st_ino */
	uint32_t major, minor;  /* devices */
	struct sqk_inode inode; /* image sides */
};

/* One of the two trees compared. */
struct diff_side {
	const char *arg;        /* as given (borrowed from argv) */
	const char *sub;        /* "old" or "new": its folder under --extract DIR */
	bool is_dir;            /* a directory on disk, else an image */
	struct cmd c;           /* image sides: the open image */
};

/* An open regular file of a side, read from its start in order. */
struct diff_file {
	struct diff_side *s;
	const struct diff_node *n;
	int fd;                 /* directory sides */
	uint64_t off;
};

/* sqk diff; argv[0] is the command name. Returns the exit status. */
int diff_main(int argc, char **argv);

/* Comparison switches (diff.flags). */
enum {
	DIFF_NO_CONTENTS = 1u << 0, /* -C */
	DIFF_NO_OWNER = 1u << 1,    /* -O */
	DIFF_NO_PERM = 1u << 2,     /* -P */
	DIFF_TIME = 1u << 3,        /* -T */
	DIFF_INODE = 1u << 4,       /* -I */
	DIFF_SUPER = 1u << 5,       /* -S */
	DIFF_NO_XATTRS = 1u << 6,   /* --no-xattrs */
	DIFF_QUIET = 1u << 7,       /* -q */
	DIFF_JSON = 1u << 8,        /* --json */
};

/* The window each side's file contents are read and compared in. */
#define DIFF_WINDOW (256u * 1024u)
/* The block cache of each image side: files are read in order, so the readahead window (16
 * blocks of at most 1 MiB) and the metadata blocks at hand are all it needs to hold; the
 * library's default (64 MiB) would make the two sides take 170 MB on a 25 MB image pair. */
#define DIFF_CACHE (24u << 20)

struct diff {
	struct diff_side a, b;  /* old, new */
	unsigned flags;
	const char *extract;    /* -e DIR, or NULL */
	bool different;         /* a difference was reported */
	unsigned long nreported; /* JSON items written (for the commas) */
	unsigned char *wa, *wb; /* the content windows (owned) */
};

/* What differs, for diff_out. */
enum diff_kind {
	DK_REMOVED,   /* only in old: "< PATH" */
	DK_ADDED,     /* only in new: "> PATH" */
	DK_TYPE,
	DK_PERM,
	DK_UID,
	DK_GID,
	DK_GID2,      /* the gid, when the uid differed too: one text line for both */
	DK_MTIME,
	DK_INODE,
	DK_NLINK,
	DK_DEVICE,
	DK_TARGET,
	DK_SIZE,
	DK_CONTENTS,
	DK_XATTR,
};

/* A value shown in JSON: absent (null), a number, an octal mode or a string. */
struct diff_val {
	enum { DV_NULL, DV_NUM, DV_MODE, DV_STR, DV_BYTES } kind;
	uint64_t num;
	const char *str;        /* borrowed; DV_BYTES: len bytes, DV_STR: NUL-terminated */
	size_t len;
};

/* diff_side.c. Each prints its own message ("sqk diff: SIDE: /PATH: why") on failure and
 * returns 0 or a negative SQK_E* code. PATH is relative to the side's root ("" = root). */

/* Opens s->arg: a directory, else an image or URL through cmd_open. */
int diff_side_open(struct diff_side *s);
/* Closes what diff_side_open opened (NULL-safe for a side never opened). */
void diff_side_close(struct diff_side *s);
/* The root into the caller's *out (out->name owned by the caller: diff_node_free). */
int diff_side_root(struct diff_side *s, struct diff_node *out);
/* The entries of directory dir at path, sorted by name (byte order), into a new array in *out
 * (caller owns it: diff_nodes_free) and their count in *n. */
int diff_side_list(struct diff_side *s, const struct diff_node *dir, const char *path,
		   struct diff_node **out, size_t *n);
/* Frees n nodes of v and v itself (NULL-safe). */
void diff_nodes_free(struct diff_node *v, size_t n);
/* The target of symlink n into a new string in *out (caller frees). */
int diff_side_readlink(struct diff_side *s, const struct diff_node *n, const char *path,
		       char **out);
/* The xattr names of n, each NUL-terminated, in a new buffer *out of *len bytes (caller frees;
 * NULL and 0 for none). */
int diff_side_xattr_names(struct diff_side *s, const struct diff_node *n, const char *path,
			  char **out, size_t *len);
/* The value of xattr name of n in a new buffer *out of *len bytes (caller frees); SQK_ENOENT
 * (not printed) when n has no such xattr. */
int diff_side_xattr_get(struct diff_side *s, const struct diff_node *n, const char *path,
			const char *name, char **out, size_t *len);
/* Opens regular file n (at path) for diff_file_read; borrows s and n until diff_file_close. */
int diff_file_open(struct diff_side *s, const struct diff_node *n, const char *path,
		   struct diff_file *f);
/* Reads the next min(len, what is left) bytes: their count (0 at the end) or SQK_E*. */
ssize_t diff_file_read(struct diff_file *f, const char *path, void *buf, size_t len);
/* Closes f (NULL-safe after a failed open). */
void diff_file_close(struct diff_file *f);

/* diff_out.c: prints difference k of path (relative; "" = root) as text or JSON (name: the
 * xattr of DK_XATTR, or NULL; off: the first differing byte of DK_CONTENTS) and marks d
 * different. */
void diff_out(struct diff *d, enum diff_kind k, const char *path, const char *name,
	      const struct diff_val *old, const struct diff_val *new_, uint64_t off);
/* The start and the end of the JSON object (--json). */
void diff_json_begin(const struct diff *d);
void diff_json_end(const struct diff *d, int status);
/* -S: compares the superblocks of two images; prints what differs (sqfsdiff's lines). */
void diff_super(struct diff *d);
/* The name of a file type for JSON ("file", "dir", ...). */
const char *diff_type_name(uint32_t mode);

/* diff_xattr.c: compares the xattrs of a and b (names and values), reporting each that
 * differs. 0 or SQK_E* (printed). */
int diff_xattrs(struct diff *d, const struct diff_node *a, const struct diff_node *b,
		const char *path);

/* diff_blocks.c: for a file of two images of one compressor and block size whose block
 * lists are equal, compares its blocks as stored: *from gets the offset up to which its
 * contents are known equal (0 when the shortcut does not apply). 0 or SQK_E* (printed). */
int diff_same_blocks(struct diff *d, const struct diff_node *a, const struct diff_node *b,
		     const char *path, uint64_t *from);

/* diff_extract.c: -e DIR: writes regular file n of side s to DIR/old/PATH or DIR/new/PATH
 * (replacing a file there; missing folders made). 0 or SQK_E* (printed; no partial file
 * left). */
int diff_extract(struct diff *d, struct diff_side *s, const struct diff_node *n,
		 const char *path);
/* mkdir -p dir (borrowed). 0 or SQK_E* (printed). */
int diff_make_dir(const char *dir);

/* diff_tree.c: compares the two trees from their roots. 0 when done (d->different says
 * whether anything differed), or SQK_E* (printed). */
int diff_trees(struct diff *d);

#endif
