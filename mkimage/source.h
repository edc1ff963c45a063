/* SPDX-License-Identifier: BSD-2-Clause */
/* What the builder reads: a source is an iterator of entries in tree order, each regular file's
 * content read right after its entry, in order, once. The directory walker (source_dir.c) and
 * the tar reader (source_tar.c) are sources; tests make synthetic ones. */
#ifndef SQK_MK_SOURCE_H
#define SQK_MK_SOURCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct mk_ctx;

/* An mtime that means "the newest of the tree" (a synthetic root). */
#define MK_MTIME_NEWEST INT64_MIN

/* One extended attribute: full name with its namespace ("user.x"); value borrowed. */
struct mk_xattr_kv {
	const char *name;
	const void *value;
	size_t size;
};

/* One entry. Every pointer is borrowed from the source until its next call to next(). */
struct mk_entry {
	const char *path;      /* relative to the image root, '/'-separated, "" for the root;
				* no empty, "." or ".." components */
	const char *origin;    /* what messages name: the source path or the archive member */
	mode_t mode;           /* type and permission bits */
	uint32_t uid, gid;
	int64_t mtime;
	uint32_t dev_major, dev_minor; /* character and block devices */
	uint64_t size;         /* regular files: bytes of content */
	const char *target;    /* symlinks: the target */
	const char *link; /* a hard link to the earlier entry at this path (archives), or NULL */
	bool has_id;           /* id_dev/id_ino identify the file (hard links of a walked tree) */
	uint64_t id_dev, id_ino;
	bool maybe_sparse;     /* the content may have holes: ask data_at() */
	const struct mk_xattr_kv *xattrs;
	size_t nxattrs;
	uint64_t st_size;      /* the source's own size of the entry (a directory's), for actions */
	uint64_t st_ino, st_blocks; /* its inode number and 512-byte blocks there, for actions */
	uint32_t st_nlink;     /* its link count there, for actions */
	/* A regular file's data as actions chose it (action.h, MK_ACT_*; 0: as the options say):
	 * blocks stored raw, a fragment allowed, the tail of a large file in a fragment. */
	uint8_t act_raw, act_frag, act_tail;
};

struct mk_source;

struct mk_source_ops {
	/* read() may go back to offset 0 of the current file (a file on disk; not a stream). */
	bool rereadable;
	/* Entries come depth first, each directory's in name order (dir_name_cmp), no path twice:
	 * the builder then keeps no index of names. */
	bool ordered;
	/* Fills e with the next entry: 0, 1 at the end, or an SQK_E* error reported through c.
	 * A parent comes before its children; an entry the source cannot store is skipped by it. */
	int (*next)(struct mk_source *s, struct mk_ctx *c, struct mk_entry *e);
	/* Reads exactly len bytes of the current file's content at off (offsets only grow; bytes
	 * may be skipped). A short file is SQK_ECHANGED; errors name e->origin through c. */
	int (*read)(struct mk_source *s, struct mk_ctx *c, uint64_t off, void *buf, size_t len);
	/* Optional: the first data offset at or after off (UINT64_MAX: none) for maybe_sparse
	 * files; NULL when the source knows no holes. */
	int (*data_at)(struct mk_source *s, struct mk_ctx *c, uint64_t off, uint64_t *data);
	/* Optional: called after the content was read, to check the file did not change. */
	int (*end_file)(struct mk_source *s, struct mk_ctx *c);
	/* Frees the source and what it owns. */
	void (*destroy)(struct mk_source *s);
	/* Optional, for ordered sources: the directory given last is left out, so its entries are
	 * not wanted (they are not read). */
	void (*skip_dir)(struct mk_source *s);
};

/* A source: ops plus the implementation's state behind it. */
struct mk_source {
	const struct mk_source_ops *ops;
};

/* The directory walker over opt->sources (one directory: its contents are the root; several
 * paths or a non-directory: a root holding each by its base name). skip_dev/skip_ino name
 * files never to take in (the image being written). Caller owns *out. */
int mk_source_dir_create(struct mk_ctx *c, struct mk_source **out);

/* The read-ahead scout of the directory walk s (prefetch.h), or NULL while none was started (a
 * warm tree). Borrowed from s. */
struct mk_prefetch;
struct mk_prefetch *mk_source_dir_prefetch(struct mk_source *s);

/* Files by path, for --order and -sort: s is a second directory source over the same sources
 * (mk_source_dir_create), never walked with next(); what it finds is what the walk would find.
 *
 * mk_source_dir_file: fills e for the regular file at image path rel, ready for read(): 0, 1
 * when the walk would not give a regular file there (missing, excluded, under a symlink, the
 * image), 2 for a directory (dirs_too), or an error. e's pointers last until the next call. */
int mk_source_dir_file(struct mk_source *s, struct mk_ctx *c, const char *rel, bool dirs_too,
		       struct mk_entry *e);
/* The disk path of the file mk_source_dir_file found last (borrowed). */
const char *mk_source_dir_disk_path(const struct mk_source *s);
/* Calls visit with the image path of every regular file the walk would give under the directory
 * at image path rel ("" = all), in walk order; nothing for a path that is not such a directory.
 * A non-zero return of visit stops the listing and is returned. */
typedef int (*mk_source_dir_visit)(void *arg, struct mk_ctx *c, const char *rel);
int mk_source_dir_list(struct mk_source *s, struct mk_ctx *c, const char *rel,
		       mk_source_dir_visit visit, void *arg);
/* The image path (*out, caller frees) of the file-system path fs_path (absolute or relative to
 * the working directory; its last component not followed): 0, or 1 when it is in no source. */
int mk_source_dir_resolve(struct mk_source *s, struct mk_ctx *c, const char *fs_path,
			  char **out);
/* mksquashfs's reading of a relative sort-file path: inside one of the source directories. *out
 * (caller frees) is the image path of the first source holding rel, *count how many do. */
int mk_source_dir_in_sources(struct mk_source *s, struct mk_ctx *c, const char *rel,
			     char **out, int *count);
/* After a build from s (a directory source; for any other source nothing): one line on stderr
 * for each exclude of c->opt that left nothing out, naming it (and for an -e path, why). */
void mk_source_dir_warn_excludes(struct mk_source *s, struct mk_ctx *c);

/* The tar reader (libarchive) over path ("-" or NULL: standard input), compressed or not.
 * Caller owns *out. */
int mk_source_tar_create(struct mk_ctx *c, const char *path, struct mk_source **out);

/* A source of no entry (a build from pseudo definitions or a pack file alone; pseudo_data.c).
 * *out is static: destroying it does nothing. */
int mk_source_none_create(struct mk_ctx *c, struct mk_source **out);

static inline void mk_source_destroy(struct mk_source *s)
{
	if (s)
		s->ops->destroy(s);
}

#endif
