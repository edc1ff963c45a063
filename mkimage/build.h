/* SPDX-License-Identifier: BSD-2-Clause */
/* The image builder as a library: options with their defaults, a source description, one call
 * that writes a SquashFS 4.0 image (with its integrity data) into an I/O object, and a result
 * the library fills (the error's code and message, the root digest, the counts). Command lines
 * only parse argv into these structs (cli/mkimage_options.c) and print (cli/mkimage.c). */
#ifndef SQK_BUILD_H
#define SQK_BUILD_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/compressor.h"
#include "common/format.h"
#include "common/integrity.h"
#include "common/sign.h"
#include "sqk/io.h"

/* ---- options ---- */

/* A dm-verity hash tree (common/verity.h) over the image's bytes [0, E), E being its end with
 * the integrity data: what veritysetup format would write for that file. */
enum sqk_build_verity {
	SQK_BUILD_VERITY_NONE = 0,
	SQK_BUILD_VERITY_SIDECAR, /* the area goes to the output open_verity gives */
	SQK_BUILD_VERITY_APPEND,  /* the area follows E in the image's own output */
};

struct sqk_build_opts {
	size_t size;            /* sizeof(struct sqk_build_opts): set by sqk_build_opts_init */
	const char *image;      /* the output's name in messages; a file there is never taken into
				 * the image (NULL: "image") */
	uint32_t block_size;    /* 4K..1M, a power of two (128K) */
	struct sqk_comp_config comp; /* zstd at its default level; block_size is copied in */
	int threads;            /* compression threads, 1..1024 (the online CPUs) */
	bool no_fragments;      /* tails and small files get blocks of their own */
	bool no_tailends;       /* fragments for small files only */
	bool no_dedup;
	bool no_xattrs;
	bool no_exports;
	bool no_checksums;      /* no integrity data after the image */
	uint32_t checksum_chunk; /* integrity chunk size, 4K..1M (0 = 64K) */
	bool digest_tree;       /* a digest tree whatever the digests' size (by default only past
				 * 4 MiB of digests) */
	bool progress;          /* a progress line on stderr (false) */
	bool quiet;             /* no notes on stderr (warnings still print) */
	int64_t force_uid;      /* -1 = keep each entry's owner */
	int64_t force_gid;
	int64_t set_mtime;      /* -1 = keep (--mtime: every mtime and the image time) */
	int64_t clamp_time; /* -1 = none (SOURCE_DATE_EPOCH: image time, newer mtimes clamped) */
	uint32_t default_mode;  /* directories a source implies but never lists (0755) */
	uint32_t default_uid, default_gid; /* (0, 0) */
	int64_t default_mtime;  /* (0; set_mtime, or at most clamp_time, when those are set) */
	uint64_t mem;           /* memory for what waits until the end (4M), a quarter each for: */
	size_t tail_mem;        /* file tails (0 = mem / 4), */
	size_t digest_mem;      /* file digests (0 = mem / 4), */
	size_t entry_mem;       /* directory entries of a walked tree (0 = mem / 4) */
	uint32_t piece_batch;   /* tails sorted together into fragments (0 = default); tests */
	const char *order_file; /* --order FILE: paths laid out first, with a prefetch hint */
	const char *sort_file;  /* -sort FILE: mksquashfs priorities */
	const char *reuse;      /* an earlier image whose blocks may be copied (NULL) */
	atomic_int *cancel;     /* when it becomes non-zero the build stops with SQK_EINTR (NULL) */
	/* Called once the source and every input (pseudo files, --reuse, --order, -sort) are open
	 * and checked, before the first byte is written, when sqk_build got no out_io: creates the
	 * output (*io, owned by the caller, borrowed by the build until it returns) so that a typo
	 * costs no old image. *skip_fd: a file the source must not take in (the temporary the
	 * image goes to), or -1. Returns 0 or an SQK_E* code with a message in msg. */
	int (*open_output)(void *arg, struct sqk_io **io, int *skip_fd, char *msg, size_t cap);
	void *open_arg;
	/* Signatures (common/sign.h) in a block after the integrity data, which they need: each
	 * of the nsign_keys keys (borrowed Ed25519 keys; at most 64) signs the root digest and
	 * the image's end with sign_comment (NULL = none) at sign_time (-1: clamp_time when set,
	 * else the time of the build). */
	EVP_PKEY *const *sign_keys;
	size_t nsign_keys;
	const char *sign_comment;
	int64_t sign_time;
	enum sqk_build_verity verity;
	const uint8_t *verity_salt; /* NULL: derived from the options (mk_verity_salt), so that the
				     * same build gives the same tree */
	size_t verity_salt_len;     /* with verity_salt: 0..256 bytes (0: no salt) */
	/* SQK_BUILD_VERITY_SIDECAR: called once, when the tree is complete (after the integrity
	 * data, before the superblock): the output the area is written to from offset 0, then
	 * synced (*io owned by the caller, borrowed until sqk_build returns; arg is open_arg).
	 * Returns 0 or an SQK_E* code with a message in msg. */
	int (*open_verity)(void *arg, struct sqk_io **io, char *msg, size_t cap);
	/* mksquashfs's tree options (SQK_BUILD_DIRS for the walk ones). */
	bool one_file_system;   /* no descent into another file system: a directory there is
				 * stored empty, any other entry there left out */
	bool one_file_system_x; /* ... and such a directory is left out too */
	bool no_hardlinks;      /* each name of a file with several names is a file of its own
				 * (dedup still shares their data) */
	bool info;              /* a line on stdout for each entry as it is added */
	int32_t max_depth;      /* directories at this depth (the root is 0) are stored empty
				 * (-1 = no limit) */
	int64_t root_mode;      /* the root's permission bits, 0..07777 (-1 = the source's) */
	int64_t root_uid;       /* the root's owner (-1 = the source's; force_uid still wins) */
	int64_t root_gid;
	int64_t root_time;      /* the root's mtime (-1 = the source's; SQK_BUILD_TIME_NEWEST:
				 * the newest mtime stored); set_mtime still wins */
	int64_t mkfs_time;      /* the superblock's time (-1 = clamp_time, else set_mtime, else
				 * the newest mtime stored) */
	const char *xattrs_exclude; /* POSIX extended regex: xattr names of the source left out */
	const char *xattrs_include; /* POSIX extended regex: only the names matching it kept */
	const char *const *xattrs_add; /* NAME=VALUE (mksquashfs's value syntax: 0s base64, 0x
					* hex, 0t text with \ooo, 0b or none raw) added to every
					* entry (user.*: regular files and directories only) */
	size_t nxattrs_add;
	/* Append (mkimage/append.c): the existing SquashFS 4.0 image whose tree the source is
	 * added to (NULL: a new image). Its data and fragment blocks are copied as they are, in
	 * front of the new data; its compressor, options and block size replace the ones above
	 * (a note names each of them append_given marks); never written to (the output is
	 * another file, renamed over it by the caller). */
	const char *append;
	const char *root_becomes; /* append: the old root becomes this entry of the new root
				   * (NULL: the source's entries join the old root) */
	uint32_t append_given;    /* SQK_BUILD_GIVEN_*: settings the caller chose */
	const char *root_symmode; /* a symbolic mode (chmod's u=rwx,go=rx) applied to the
				   * source root's mode, as mksquashfs's -root-mode (NULL: none;
				   * root_mode, when set, comes first) */
};

/* root_time: the newest mtime stored (mksquashfs's "inode"). */
#define SQK_BUILD_TIME_NEWEST (-2)

/* Settings of a build an appended-to image decides (append_given). */
#define SQK_BUILD_GIVEN_COMP       0x1u /* comp.id */
#define SQK_BUILD_GIVEN_LEVEL      0x2u /* comp.level and the other compressor options */
#define SQK_BUILD_GIVEN_BLOCK_SIZE 0x4u

/* Fills o with every default and o->size. */
void sqk_build_opts_init(struct sqk_build_opts *o);

/* ---- the source ---- */

enum sqk_build_source_kind {
	SQK_BUILD_DIRS = 1,     /* files and directories on disk: sources[0..nsources) */
	SQK_BUILD_TAR,          /* a tar stream (plain or compressed): tar_path */
	SQK_BUILD_CUSTOM,       /* the caller's struct mk_source (mkimage/source.h): custom */
	SQK_BUILD_NONE,         /* nothing but the definitions (pseudo, pack_file) */
};

/* One mksquashfs action (ACTION@EXPRESSION, mkimage/action.h): a file of them, or one. */
struct sqk_build_action {
	bool file;
	const char *arg;        /* the path, or the action (borrowed) */
};

/* One pseudo definition (mksquashfs style): a file of them, or one line. */
struct sqk_build_pseudo {
	bool file;
	const char *arg;        /* the path, or the definition (borrowed) */
};

struct mk_source;

/* What the image holds. Every pointer is borrowed for the length of sqk_build. */
struct sqk_build_source {
	size_t size;            /* sizeof(struct sqk_build_source): set by sqk_build_source_init */
	enum sqk_build_source_kind kind;
	/* SQK_BUILD_DIRS: one directory's contents are the root; several paths (or a non-directory)
	 * each become an entry of the root, by base name, as one does with keep_as_directory. */
	char *const *sources;
	int nsources;
	bool keep_as_directory;
	const char *const *excludes;     /* globs matched against source-relative paths */
	int nexcludes;
	const char *const *mks_excludes; /* mksquashfs's -e / -ef: exact paths, or patterns */
	int nmks_excludes;
	bool wildcards;                  /* mks_excludes are patterns (-wildcards) */
	bool regex;                      /* ... POSIX extended regular expressions (-regex) */
	const char *tar_path;            /* SQK_BUILD_TAR: NULL or "-" = standard input */
	struct mk_source *custom;        /* SQK_BUILD_CUSTOM (not destroyed by the build) */
	/* Any kind: definitions applied after the source, in order. */
	const struct sqk_build_pseudo *pseudo;
	int npseudo;
	/* SQK_BUILD_TAR: read on after an end-of-archive when a tar header follows (tar -i:
	 * concatenated archives); by default the stream ends there, as in GNU tar and bsdtar. */
	bool tar_ignore_zeros;
	/* Any kind: a gensquashfs pack file ("-": standard input), applied before the pseudo
	 * definitions, its input files relative to pack_dir (NULL: the pack file's directory). */
	const char *pack_file;
	const char *pack_dir;
	const char *pseudo_dir; /* -pd: "d MODE UID GID" or "D TIME MODE UID GID", or NULL */
	bool pseudo_override;   /* -pseudo-override: the definitions' owners win over force_uid
				 * and force_gid (by default those apply to them too) */
	/* SQK_BUILD_DIRS: mksquashfs's actions, applied to each entry in order */
	const struct sqk_build_action *actions;
	int nactions;
};

/* Fills s for kind with nothing listed yet, and s->size. */
void sqk_build_source_init(struct sqk_build_source *s, enum sqk_build_source_kind kind);

/* ---- the result ---- */

/* Inodes of each kind, bytes and blocks, as the summary prints them. */
struct sqk_build_counts {
	uint64_t files, dirs, symlinks, devices, ipc, hardlinks;
	uint64_t file_bytes;         /* sizes of the regular files (duplicates too) */
	uint64_t dup_files, dup_bytes;
	uint64_t bytes_in;           /* file bytes read and stored */
	uint64_t data_blocks, raw_blocks, frag_blocks, sparse_blocks;
	uint32_t xattr_sets;
	uint64_t mtimes_clamped;     /* entries whose mtime was outside 0..2^32-1 */
};

struct sqk_build_result {
	size_t size;                 /* sizeof(struct sqk_build_result): set by the caller
				      * (sqk_build_result_init) */
	int err;                     /* what sqk_build returned */
	char msg[1024];              /* the first error, naming the path and offset ("" = none) */
	struct sqk_super super;      /* the superblock written */
	uint64_t image_bytes;        /* bytes written: the image, its hint and integrity data (and
				      * an appended dm-verity area) */
	bool have_root;              /* root_hash is set: integrity data was appended */
	uint8_t root_hash[SQK_INTEG_DIGEST_SIZE];
	struct sqk_build_counts counts;
	uint64_t reused_blocks, reused_bytes, reused_frag_blocks; /* --reuse */
	bool ordered;                /* order_file or sort_file was given */
	uint64_t order_files, order_bytes; /* files laid out first, and their bytes */
	size_t hint_ranges;          /* ranges of the prefetch hint written (0 = none) */
	bool have_verity;            /* a dm-verity tree was written (opts.verity) */
	uint8_t verity_root[32];     /* its root hash */
	uint64_t verity_data_end;    /* E: it covers [0, E); where an appended area starts */
	uint64_t verity_len;         /* the area's bytes (superblock block and tree) */
	uint16_t verity_salt_len;
	uint8_t verity_salt[256];
	uint8_t verity_uuid[16];     /* its superblock's uuid */
	bool appended;               /* opts.append: the old tree was kept */
	uint64_t append_kept;        /* entries of the old image kept (its root unless moved
				      * by root_becomes not counted) */
	uint64_t append_added;       /* entries of the source added (its root not counted) */
};

/* Zeroes r and sets r->size. */
void sqk_build_result_init(struct sqk_build_result *r);

/* ---- the build ---- */

/* Reads src once, in order, and writes the image into out_io (borrowed; positions from 0),
 * superblock last, then the integrity data, then one sync; with out_io NULL, opts->open_output
 * gives the output once the inputs are checked. Creates, renames and removes no file. opts and
 * src are borrowed. Returns 0 or an SQK_E* code, also in result->err with the message in
 * result->msg. SQK_EABI: opts, src or result has a size this library does not know (then
 * result is only written when its own size is right). */
int sqk_build(const struct sqk_build_opts *opts, const struct sqk_build_source *src,
	      struct sqk_io *out_io, struct sqk_build_result *result);

#endif
