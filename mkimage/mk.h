/* SPDX-License-Identifier: BSD-2-Clause */
/* The image builder's state shared by all its stages (struct mk_ctx, the tree's nodes and files)
 * and the context helpers (ctx.c); each stage has its own header: a source (source.h:
 * source_dir.c, source_tar.c) yields entries → tree (tree.h: tree.c, or walk.c on disk), xattrs
 * and ids (attrs.h) → each file's content read once (data.h: dedup.h, similar.h for tails,
 * spill.h, blocks compressed and written by pipeline.h) → tables (tables.h) → build.c puts the
 * image together, with --order/-sort (order.h) and --pseudo (pseudo.h); cli/mkimage.c is
 * `sqk mkimage` (cli/mkimage_options.c) with the image file. */
#ifndef SQK_MK_H
#define SQK_MK_H

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/format.h"
#include "common/integrity.h"
#include "sqk/io.h"
#include "mkimage/build.h"

/* The full blocks of a regular file (none for a file that is all fragment): their size words
 * and what was not stored. */
struct mk_fblocks {
	uint64_t sparse;       /* bytes in holes the reader skipped (main thread) */
	uint64_t zero_bytes;   /* bytes in all-zero blocks stored sparse (writer thread) */
	uint32_t n;            /* size words */
	bool started;          /* blocks_start set by the writer */
	uint32_t words[];
};

/* A regular file's content in the image: 32 bytes, kept for every file until the tables are
 * written (the rest of an entry may be on disk by then). A duplicate has no data of its own. */
#define MK_FRAG_DUP 0xFFFFFFFEu
struct mk_file {
	uint64_t size;
	uint64_t blocks_start;
	union {
		struct mk_fblocks *blk;       /* owned; NULL = no full blocks */
		const struct mk_file *dup_of; /* frag_index == MK_FRAG_DUP: the original */
	};
	uint32_t frag_index;   /* SQK_NONE32 = no fragment; MK_FRAG_DUP = a duplicate */
	uint32_t frag_offset;
};

/* The file whose data f's inode points at (f itself, or the original of a duplicate). */
static inline const struct mk_file *mk_file_data(const struct mk_file *f)
{
	return f->frag_index == MK_FRAG_DUP ? f->dup_of : f;
}

/* What the data stage needs of a file entry besides its content: its position in the walk and
 * that of its logical directory (for the order of fragment pieces). */
struct mk_file_ref {
	struct mk_file *file;  /* NULL: no content to read */
	uint32_t order;
	uint32_t ldir;
};

/* One entry of the image tree. Hard links: every name has its own node; `link` points at the
 * canonical node (the first name met) which carries the inode. */
struct mk_node {
	char *name;            /* owned; "" for the root */
	struct mk_node *parent;
	struct mk_node **children; /* owned array; sorted by name (memcmp) once the tree is done */
	struct mk_node *link;  /* canonical node of a hard-link group, NULL if self */
	char *target;          /* symlink target (owned) */
	struct mk_file *file;  /* regular files (the walk's record: file_no) */
	uint32_t nchildren;    /* the array grows by doubling from 8 */
	uint32_t name_len;
	uint32_t target_len;
	mode_t mode;
	uint32_t mtime;
	uint32_t rdev;         /* SquashFS encoding */
	uint32_t nlink;        /* names in the image (canonical nodes) */
	uint32_t xattr_idx;    /* SQK_NONE32 = none */
	uint32_t order;        /* position in tree order (for stable sorting) */
	uint64_t seq;          /* the source's entry that made it (its name's, for a stand-in) */
	uint32_t file_no;      /* regular files: the walk's file record (walk.h) */
	uint32_t dir_no;       /* directories: number in the walk (at the end) */
	uint32_t group;        /* hard-link group in the walk (at the end), SQK_NONE32 = none */
	uint32_t nspilled;     /* directories: entries in the external sort (tree.c) */
	uint16_t uid_idx, gid_idx;
	bool implied;          /* a directory no entry listed (yet): default attributes */
	bool born_implied;     /* made as the parent of an entry (not listed then) */
	bool newest_mtime;     /* takes the newest mtime of the tree (a synthetic root) */
	bool dead;             /* replaced by a later entry of the same path: not in the image */
	bool pending;          /* the inode of a hard link to a sorted entry, found at the end */
	bool ov_attrs, ov_mtime; /* pending: mode bits and owner (and mtime) set by --pseudo */
};

struct mk_stats {
	uint64_t files, dirs, symlinks, devices, ipc, hardlinks; /* inodes of each kind */
	uint64_t file_bytes;         /* sizes of the regular files (duplicates too) */
	uint64_t dup_files, dup_bytes;
	uint64_t bytes_in;           /* file bytes read and stored */
	uint64_t data_blocks, raw_blocks, frag_blocks;
	atomic_uint_fast64_t sparse_blocks; /* counted by the reader and the writer thread */
	uint64_t xattr_sets;
};

struct mk_xattrs;
struct mk_ids;
struct mk_pipeline;
struct mk_tree;
struct mk_walk;
struct mk_reuse;
struct mk_append;
struct mk_data;
struct mk_source;
struct mk_order;
struct mk_pseudo;
struct mk_actions;
struct verity_builder;

struct mk_ctx {
	const struct sqk_build_opts *opt; /* = &optv */
	struct sqk_build_opts optv;  /* the caller's options, defaults derived (ctx.c) */
	const struct sqk_build_source *src; /* borrowed */
	struct mk_node *root;
	struct mk_tree *tree;       /* lookups while the tree is built (tree.c) */
	struct mk_walk *walk;       /* or: a walked tree, its entries on disk (walk.c) */
	const struct mk_tree_ops *tops; /* the one of the two in use (NULL before the source) */
	struct mk_data *data;       /* the data stage while files are read (data.c) */
	struct mk_reuse *reuse;     /* --reuse: the old image, or NULL (reuse.c) */
	struct mk_order *order;     /* --order / -sort, or NULL (order.c) */
	struct mk_pseudo *pseudo;   /* --pseudo definitions, or NULL (pseudo.c) */
	bool inputs_ready;          /* mk_build_inputs done */
	uint64_t dir_table_end;     /* set by tables.c (the hint names the tables) */
	size_t hint_ranges;         /* ranges of the prefetch hint written, 0 = none */
	struct mk_node **nodes;     /* canonical nodes in tree (walk) order; owned array */
	size_t nnodes, nodes_cap;
	uint32_t inode_count;
	uint32_t newest_mtime;
	struct mk_xattrs *xattrs;
	struct mk_ids *ids;
	struct compressor *comp; /* main-thread compressor (metadata) */
	struct sqk_io *out;          /* image output (borrowed) */
	uint64_t pos;                /* next write position (owned by the writer during data) */
	uint64_t image_end;          /* where the integrity data ends (dm-verity, signatures) */
	struct integ_writer *integ; /* hashes every byte written; NULL with --no-checksums */
	struct verity_builder *verity; /* the dm-verity tree of every byte written (opt->verity),
					* or NULL */
	bool have_root;              /* root_hash set: integrity data was appended */
	uint8_t root_hash[SQK_INTEG_DIGEST_SIZE];
	bool have_verity;            /* the tree was written: */
	uint8_t verity_root[SQK_INTEG_DIGEST_SIZE]; /* its root hash, */
	uint64_t verity_end;         /* the end E of the bytes it covers, */
	uint64_t verity_len;         /* and its area's length */
	struct frag_entry *frags;
	uint32_t nfrags;             /* fragment blocks planned (main thread) */
	size_t frags_cap;            /* frags: grown by the writer thread as it writes them */
	struct mk_stats st;
	uint64_t mtimes_clamped;     /* entries whose mtime was outside 0..2^32-1 (tree.c) */
	atomic_int *cancel;          /* opt->cancel: non-zero = stop (a signal number) */
	dev_t skip_dev[2];           /* the existing image and our temp file: skipped by the walk */
	ino_t skip_ino[2];
	int nskip;
	pthread_mutex_t errmu;       /* guards errmsg/first_err (workers may fail too) */
	int first_err;
	char errmsg[1024];           /* first error, with the path */
	struct mk_eopts *eopts;      /* the xattr filters and additions (entry_opts.c), or NULL */
	struct mk_append *append;    /* opt->append: the old image (append.c), or NULL */
	struct mk_actions *actions;  /* -action, -action-file (action.c), or NULL */
};

/* Sets up c for options o (copied, its derived defaults filled in: mk_opts_derive) and the
 * source description s (borrowed, must outlive c). On error the message is in c->errmsg and c
 * must still be freed with mk_ctx_free. */
int mk_ctx_init(struct mk_ctx *c, const struct sqk_build_opts *o,
		const struct sqk_build_source *s);

/* Fills the options' values that default to others: the memory shares, the compressor's block
 * size and lz4's high-compression mode when a level is set, the implied directories' mtime. */
void mk_opts_derive(struct sqk_build_opts *o);

/* Frees what c owns (not c->out, the caller's). */
void mk_ctx_free(struct mk_ctx *c);

/* What the build reads besides its source, opened and checked before the output is created
 * (a typo must not cost an old image): the integrity writer, the pseudo definitions (kept in c),
 * --reuse OLD, the --order/-sort lists. mk_build calls it when the caller did not. On error the
 * first message is in c->errmsg. */
int mk_build_inputs(struct mk_ctx *c);

/* The build behind sqk_build: reads every entry of src (borrowed) once, in order, and writes
 * the image into c->out (positions from 0), superblock last, then the integrity data, then one
 * sync; fills sb. On error the first message is in c->errmsg. */
int mk_build(struct mk_ctx *c, struct mk_source *src, struct sqk_super *sb);

/* ctx.c: the context helpers. mk_grow is mem_grow (common/grow.h: arrp is a T **, the array
 * of *cap elements of sz bytes grows to hold need, overflow-checked) with the failure reported
 * through c. */
int mk_grow(struct mk_ctx *c, void *arrp, size_t *cap, size_t need, size_t sz);

/* Records the first error message (printf-style) and returns err. Thread-safe. */
int mk_fail(struct mk_ctx *c, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Writes len bytes at c->pos and advances it (the writer thread, or the main thread outside
 * the data stage). */
int mk_write(struct mk_ctx *c, const void *buf, size_t len);

/* verity_area.c: the dm-verity tree (common/verity.h) of the image's bytes [0, E).
 * mk_verity_start sets up c->verity (mk_build_inputs, before the first byte); mk_verity_feed
 * hashes the bytes written at off (every writer of [0, E) calls it once per byte; nothing when
 * there is no tree); mk_verity_finish, at c->pos == E, completes the tree and writes its area
 * (after E, c->pos then past it, or into opt->open_verity's output). Errors through mk_fail. */
int mk_verity_start(struct mk_ctx *c);
int mk_verity_feed(struct mk_ctx *c, uint64_t off, const void *buf, size_t len);
int mk_verity_finish(struct mk_ctx *c);

/* The salt of a build without opt->verity_salt: SHA-256 of a domain string and every option
 * that shapes the image's bytes, so that the same build gives the same tree. */
void mk_verity_salt(const struct sqk_build_opts *o, uint8_t salt[SQK_INTEG_DIGEST_SIZE]);

static inline bool mk_cancelled(const struct mk_ctx *c)
{
	return c->cancel && atomic_load(c->cancel) != 0;
}

#endif
