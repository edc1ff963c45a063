/* SPDX-License-Identifier: BSD-2-Clause */
/* Internal state of the image builder, shared by its stages:
 * a source (source.h: source_dir.c, source_tar.c) yields entries → tree (tree.c, or walk.c on
 * disk), xattrs and ids (attrs.c) → each file's content read once (data.c: dedup in dedup.c,
 * tails in the spill store spill.c, blocks compressed and written by pipeline.c) → tables
 * (tables.c) → build.c puts the image together; cli/mkimage.c is `sqk mkimage` (cli/mkimage_options.c) with the
 * image file. */
#ifndef SQK_MK_H
#define SQK_MK_H

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/compressor.h"
#include "common/format.h"
#include "common/integrity.h"
#include "sqk/io.h"
#include "common/meta.h"
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
struct mk_data;
struct mk_source;
struct mk_entry;
struct mk_xattr_kv;
struct mk_order;
struct mk_pseudo;
struct sqk_hint_range;

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
	struct sqk_compressor *comp; /* main-thread compressor (metadata) */
	struct sqk_io *out;          /* image output (borrowed) */
	uint64_t pos;                /* next write position (owned by the writer during data) */
	struct sqk_integ_writer *integ; /* hashes every byte written; NULL with --no-checksums */
	bool have_root;              /* root_hash set: integrity data was appended */
	uint8_t root_hash[SQK_INTEG_DIGEST_SIZE];
	struct sqk_frag_entry *frags;
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

/* ctx.c: the context helpers. mk_grow is sqk_grow (common/grow.h: arrp is a T **, the array
 * of *cap elements of sz bytes grows to hold need, overflow-checked) with the failure reported
 * through c. */
int mk_grow(struct mk_ctx *c, void *arrp, size_t *cap, size_t need, size_t sz);

/* Records the first error message (printf-style) and returns err. Thread-safe. */
int mk_fail(struct mk_ctx *c, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

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

/* walk.c: the tree of an ordered source (the directory walker) held on disk: each directory's
 * entries go to a store that spills to a temporary file once it is complete; memory keeps the
 * 32-byte file records, the directories and the hard links. mk_walk_start, then
 * mk_tree_disk_ops; the image is byte for byte the one the tree in memory gives. */
int mk_walk_start(struct mk_ctx *c);

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

/* pseudo.c: --pseudo / --pseudo-def definitions, parsed before the source is read (errors name
 * FILE:LINE) and applied after it. */
struct mk_pseudo;
int mk_pseudo_load(struct mk_ctx *c, struct mk_pseudo **out);
int mk_pseudo_apply(struct mk_ctx *c, const struct mk_pseudo *p);
/* Whether a definition of p looks up path (its own path, its parent, a link's target): such an
 * entry of the source stays a node of the tree, where the definition can find it. */
bool mk_pseudo_names(const struct mk_pseudo *p, const char *path);
void mk_pseudo_free(struct mk_pseudo *p);

/* Writes n's path in the image ("/a/b") into buf, shortened when it does not fit. */
void mk_node_path(const struct mk_node *n, char *buf, size_t cap);

/* attrs.c: id table and xattr sets. */
int mk_ids_create(struct mk_ids **out);
void mk_ids_destroy(struct mk_ids *ids);
int mk_ids_index(struct mk_ctx *c, uint32_t id, uint16_t *idx);
uint32_t mk_ids_count(const struct mk_ids *ids);
const uint32_t *mk_ids_values(const struct mk_ids *ids);

int mk_xattrs_create(struct mk_xattrs **out);
void mk_xattrs_destroy(struct mk_xattrs *x);
/* Interns the set kv[0..n) (borrowed; names with their namespace, those SquashFS cannot store are
 * left out); *idx = SQK_NONE32 when nothing is left. origin names the file in messages. */
int mk_xattrs_intern(struct mk_ctx *c, const char *origin, const struct mk_xattr_kv *kv,
		     size_t n, uint32_t *idx);
uint32_t mk_xattrs_count(const struct mk_xattrs *x);
/* Encodes the kv stream and the xattr id entries (refs relative to kv start). */
int mk_xattrs_encode(struct mk_ctx *c, struct sqk_meta_writer *kv, struct sqk_meta_writer *ids);

/* data.c: file content. mk_data_start before the first file; mk_data_file reads n's content
 * from src now (blocks go to the pipeline, the tail is kept for a fragment, a duplicate of an
 * earlier file is found by size and SHA-256 and shares its data); mk_data_finish writes the
 * fragment blocks, waits for the pipeline and points duplicates at their originals. */
int mk_data_start(struct mk_ctx *c);
int mk_data_file(struct mk_ctx *c, const struct mk_file_ref *fr, struct mk_source *src,
		 const struct mk_entry *e);
int mk_data_finish(struct mk_ctx *c);
/* Packs the tails waiting so far (the front files', order.c) into fragment blocks in the order
 * they came, before any other file's data. */
int mk_data_flush_front(struct mk_ctx *c);
/* Frees the data stage after an error (mk_data_finish frees it otherwise); returns the
 * pipeline's own error (a failed write), which is then the cause to report. */
int mk_data_abort(struct mk_ctx *c);

/* dedup.c: the index of file contents by (size, SHA-256); *orig is the earlier file with the
 * same content, or NULL after n was added. */
struct mk_dedup;
int mk_dedup_create(struct mk_ctx *c, struct mk_dedup **out);
void mk_dedup_destroy(struct mk_dedup *d);
bool mk_dedup_size_seen(const struct mk_dedup *d, uint64_t size);
int mk_dedup_find(struct mk_ctx *c, const struct mk_dedup *d, uint64_t size,
		  const uint8_t *digest, const struct mk_file **orig);
int mk_dedup_find_or_add(struct mk_ctx *c, struct mk_dedup *d, const struct mk_file *f,
			 const uint8_t *digest, const struct mk_file **orig);

/* similar.c: near-duplicate fragment pieces. A sketch is the MK_SKETCH_K smallest distinct
 * hashes of a tail's 8-byte shingles; a later tail whose full sketch shares MK_SKETCH_NEAR values
 * with a piece's (among MK_SKETCH_SCAN candidates per value) is its near-duplicate (measured on the bench corpus: 16 and 12 pack its fragments 1.3% smaller
 * than the type-and-directory order alone; looser thresholds break up directories and lose). */
#define MK_SKETCH_K 16
#define MK_SKETCH_NEAR 12
#define MK_SKETCH_SCAN 64     /* candidates looked at per sketch value */
#define MK_SKETCH_WINDOW 65536u /* pieces clustered together (bounds the index's memory) */
/* Shorter tails get no sketch and stay where the type-and-directory order puts them: what a
 * near-duplicate could save on them is under their length, while sketching and clustering
 * cost as much per piece as for a large one (the bench corpus: 6,619 such tails, 1.0 MB of
 * its 559 MB; a tree of 1,000,000 numbered records of 40 bytes: all of it). */
#define MK_SKETCH_MIN 256u
struct mk_sketch {
	uint32_t v[MK_SKETCH_K];
	uint8_t n;
};
/* Fills *s with the sketch of b[0..len); tails under 8 bytes get an empty one. */
void mk_sketch_of(const uint8_t *b, size_t len, struct mk_sketch *s);
/* Orders n pieces (sketches sk, lengths len; borrowed) for packing: perm[0..n) lists them with
 * each piece followed by the later near-duplicates that fit one block of bs bytes with it;
 * grp[k] is the position in perm of the cluster's first piece for a clustered piece at
 * position k, SQK_NONE32 for one left alone. perm and grp are the caller's (n entries). */
int mk_cluster(struct mk_ctx *c, const struct mk_sketch *sk, const uint32_t *len, size_t n,
	       uint32_t bs, uint32_t *perm, uint32_t *grp);

/* spill.c: the spill store of byte strings (file tails for the fragment blocks, digests,
 * directory entries), in memory up to budget bytes, then in an unnamed temporary file; what
 * names it in messages. put copies data and gives its ref (the bytes put before it); get
 * copies it back. */
struct mk_spill;
int mk_spill_create(struct mk_ctx *c, const char *what, size_t budget, struct mk_spill **out);
void mk_spill_destroy(struct mk_spill *t);
int mk_spill_put(struct mk_ctx *c, struct mk_spill *t, const void *data, size_t len,
		 uint64_t *ref);
int mk_spill_get(struct mk_ctx *c, struct mk_spill *t, uint64_t ref, void *buf, size_t len);
/* Writes out the bytes buffered for the file, so that any range put can be read back (get
 * reads a range either from the file or from the write buffer, not from both). */
int mk_spill_flush(struct mk_ctx *c, struct mk_spill *t);
/* Forgets everything put so far (refs start again from 0); the memory and file are reused. */
void mk_spill_reset(struct mk_spill *t);

/* order.c: --order FILE and -sort FILE. mk_order_load reads both lists before anything is
 * written (a malformed line is an error naming FILE and its line; listed paths the source does
 * not hold give one warning); mk_order_front reads the files laid out first (after
 * mk_data_start, before the walk); mk_order_take is asked for each file the walk gives: 1 when
 * it was taken care of (its data already written, or put aside for after the walk: negative
 * priority), 0 to read it now; mk_order_deferred reads the ones put aside (before
 * mk_data_finish). All are no-ops without the options. */
int mk_order_load(struct mk_ctx *c);
int mk_order_front(struct mk_ctx *c);
int mk_order_take(struct mk_ctx *c, const struct mk_file_ref *fr, const struct mk_entry *e);
int mk_order_deferred(struct mk_ctx *c);
/* The prefetch hint's ranges for the finished tables (sb): the superblock and the front files'
 * blocks as one range from 0, the inode and directory tables and the lookup tables when small.
 * Returns how many (0 without --order/-sort). */
#define MK_HINT_RANGES 4
size_t mk_order_hint(const struct mk_ctx *c, const struct sqk_super *sb,
		     struct sqk_hint_range *r);
/* Files laid out first (found in the source) and their bytes. */
size_t mk_order_count(const struct mk_ctx *c, uint64_t *bytes);
void mk_order_free(struct mk_ctx *c);
/* The line parsers (exposed for the tests). A trace line (len bytes, no '\n'; a trailing '\r'
 * dropped) is decoded in place (\xHH escapes, len updated): 0, 1 for a blank line, SQK_EINVAL
 * with *why. A sort line (NUL-terminated, no '\n') as mksquashfs reads it: PATH PRIORITY, the
 * path up to white space with backslash escaping the next byte, '#' comments; 0 with *path
 * pointing into line and *prio, 1 for a blank or comment line, SQK_EINVAL with *why. */
int mk_trace_line(char *line, size_t *len, const char **why);
int mk_sort_line(char *line, char **path, int *prio, const char **why);
/* Normalizes an image path in place (no leading '/', no empty or "." components); false when
 * it has a ".." component. */
bool mk_order_norm(char *p);

/* tables.c: inode, directory, fragment, export, id and xattr tables, then the superblock. */
int mk_tables_write(struct mk_ctx *c, struct sqk_super *sb);

/* Writes len bytes at c->pos and advances it (the writer thread, or the main thread outside
 * the data stage). */
int mk_write(struct mk_ctx *c, const void *buf, size_t len);

static inline bool mk_cancelled(const struct mk_ctx *c)
{
	return c->cancel && atomic_load(c->cancel) != 0;
}

#endif
