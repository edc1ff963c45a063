/* Internal state of the image builder, shared by its stages:
 * walk (tree.c) → xattrs/ids (attrs.c) → dedup (dedup.c) → data (data.c, workers in pipeline.c)
 * → tables (tables.c) → image file (image.c). */
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
#include "common/io.h"
#include "common/meta.h"
#include "options.h"

/* Placement of a regular file's data in the image. */
struct mk_file {
	uint64_t size;
	uint64_t blocks_start;
	uint32_t *words;       /* nblocks size words (owned) */
	uint32_t nblocks;
	uint32_t frag_index;   /* SQK_NONE32 = no fragment */
	uint32_t frag_offset;
	uint64_t sparse;       /* bytes in sparse blocks */
	struct mk_node *dup_of; /* canonical node with identical content, or NULL */
	bool started;          /* blocks_start set by the writer */
	bool maybe_sparse;     /* st_blocks says the file has holes */
};

/* One entry of the source tree. Hard links: every name has its own node; `link` points at the
 * canonical node (the first name met) which carries the inode. */
struct mk_node {
	char *name;            /* owned; "" for the root */
	size_t name_len;
	char *path;            /* owned source path (NULL for a synthetic root) */
	struct mk_node *parent;
	struct mk_node **children; /* owned array, sorted by name (memcmp) */
	size_t nchildren;
	struct mk_node *link;  /* canonical node of a hard-link group, NULL if self */
	mode_t mode;
	uint32_t uid, gid;
	uint32_t mtime;
	uint32_t rdev;         /* SquashFS encoding */
	uint64_t size;         /* regular files */
	char *target;          /* symlink target (owned) */
	size_t target_len;
	dev_t st_dev;
	ino_t st_ino;
	uint32_t nlink;        /* names in the image (canonical nodes) */
	uint32_t ino;          /* inode number, 1..inode_count */
	uint32_t xattr_idx;    /* SQK_NONE32 = none */
	uint16_t uid_idx, gid_idx;
	uint32_t nsubdirs;
	uint64_t inode_ref;
	bool emitted;
	uint32_t order;        /* position in tree order (for stable sorting) */
	struct mk_file *file;  /* regular files (owned) */
};

struct mk_stats {
	uint64_t files, dirs, symlinks, devices, ipc, hardlinks;
	uint64_t dup_files, dup_bytes;
	uint64_t bytes_in;           /* file bytes read and stored */
	uint64_t data_blocks, raw_blocks, frag_blocks;
	atomic_uint_fast64_t sparse_blocks; /* counted by the reader and the writer thread */
	uint64_t xattr_sets;
};

struct mk_xattrs;
struct mk_ids;
struct mk_pipeline;

struct mk_ctx {
	const struct mk_options *opt;
	struct mk_node *root;
	struct mk_node **nodes;     /* canonical nodes in tree (walk) order; owned array */
	size_t nnodes, nodes_cap;
	uint32_t inode_count;
	uint32_t newest_mtime;
	struct mk_xattrs *xattrs;
	struct mk_ids *ids;
	struct sqk_compressor *comp; /* main-thread compressor (metadata) */
	struct sqk_io *out;          /* image output */
	uint64_t pos;                /* next write position (owned by the writer during data) */
	struct sqk_integ_writer *integ; /* hashes every byte written; NULL with --no-checksums */
	bool have_root;              /* root_hash set: integrity data was appended */
	uint8_t root_hash[SQK_INTEG_DIGEST_SIZE];
	struct sqk_frag_entry *frags;
	uint32_t nfrags, frags_cap;
	struct mk_stats st;
	atomic_int *cancel;          /* set to a signal number on SIGINT/SIGTERM */
	dev_t skip_dev[2];           /* the existing image and our temp file: skipped by the walk */
	ino_t skip_ino[2];
	int nskip;
	pthread_mutex_t errmu;       /* guards errmsg/first_err (workers may fail too) */
	int first_err;
	char errmsg[1024];           /* first error, with the path */
};

/* Sets up c for options o (borrowed, must outlive c); cancel may be NULL. */
int mk_ctx_init(struct mk_ctx *c, const struct mk_options *o, atomic_int *cancel);

/* Frees what c owns, including c->out. */
void mk_ctx_free(struct mk_ctx *c);

/* Builds the image of c->opt's sources into c->out (set by the caller; positions from 0) and
 * fills sb. Does not create, sync-and-rename or remove any file. */
int mk_build(struct mk_ctx *c, struct sqk_super *sb);

/* Records the first error message (printf-style) and returns err. */
int mk_fail(struct mk_ctx *c, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* tree.c: walks the sources into c->root and c->nodes; numbers inodes. */
int mk_tree_build(struct mk_ctx *c);
void mk_tree_free(struct mk_ctx *c);

/* attrs.c: id table and xattr sets. */
int mk_ids_create(struct mk_ids **out);
void mk_ids_destroy(struct mk_ids *ids);
int mk_ids_index(struct mk_ctx *c, uint32_t id, uint16_t *idx);
uint32_t mk_ids_count(const struct mk_ids *ids);
const uint32_t *mk_ids_values(const struct mk_ids *ids);

int mk_xattrs_create(struct mk_xattrs **out);
void mk_xattrs_destroy(struct mk_xattrs *x);
/* Reads the xattrs of path and interns the set; *idx = SQK_NONE32 when there are none. */
int mk_xattrs_read(struct mk_ctx *c, const char *path, uint32_t *idx);
uint32_t mk_xattrs_count(const struct mk_xattrs *x);
/* Encodes the kv stream and the xattr id entries (refs relative to kv start). */
int mk_xattrs_encode(struct mk_ctx *c, struct sqk_meta_writer *kv, struct sqk_meta_writer *ids);

/* dedup.c: marks files whose content equals an earlier file (f->dup_of). */
int mk_dedup(struct mk_ctx *c);

/* data.c: writes every file's blocks and the fragment blocks. */
int mk_data_write(struct mk_ctx *c);

/* tables.c: inode, directory, fragment, export, id and xattr tables, then the superblock. */
int mk_tables_write(struct mk_ctx *c, struct sqk_super *sb);

/* Writes len bytes at c->pos and advances it. */
int mk_write(struct mk_ctx *c, const void *buf, size_t len);

static inline bool mk_cancelled(const struct mk_ctx *c)
{
	return c->cancel && atomic_load(c->cancel) != 0;
}



/* data.c helpers shared with dedup.c: open a source file for reading (error names the path)
 * and read exactly len bytes at off (a short read means the file changed: SQK_ECHANGED). */
int mk_open_source(struct mk_ctx *c, const struct mk_node *n, int *fd);
int mk_pread(struct mk_ctx *c, const struct mk_node *n, int fd, uint64_t off, void *buf,
	     size_t len);
#endif
