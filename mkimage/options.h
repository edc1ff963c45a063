/* The builder's options (struct mk_options), as `sqk mkimage` fills them from the command line
 * and the environment (cli/mkimage_options.c parses them). */
#ifndef SQK_MK_OPTIONS_H
#define SQK_MK_OPTIONS_H

#include <stdbool.h>
#include <stdint.h>

#include "common/compressor.h"

/* One --pseudo FILE or --pseudo-def DEF, in command-line order. */
struct mk_pseudo_arg {
	bool file;
	const char *arg;     /* borrowed from argv */
};

struct mk_options {
	char **sources;      /* owned array of strings borrowed from argv */
	int nsources;
	const char *image;   /* borrowed from argv */
	bool force;          /* --force, -noappend: replace an IMAGE that is not a SquashFS image */
	uint32_t block_size;
	struct sqk_comp_config comp;
	int threads;
	bool no_fragments;
	bool no_tailends;
	bool no_dedup;
	bool no_xattrs;
	bool no_exports;
	bool quiet;          /* -q, -quiet: no progress line, no summary (warnings still print) */
	bool no_progress;    /* --no-progress, -no-progress: no progress line, summary kept */
	bool no_checksums;   /* no integrity data after the image */
	uint32_t checksum_chunk; /* integrity chunk size; 0 = default (64K) */
	bool digest_tree;    /* --digest-tree: a digest tree whatever the digests' size */
	bool progress;       /* progress bar (TTY and not quiet) */
	const char **excludes; /* --exclude GLOB: owned array of borrowed strings */
	int nexcludes;
	/* mksquashfs's excludes (-e PATH... to the end of the command line, -ef FILE): exact
	 * paths, absolute (/, ./, ../) or relative to each source, or with -wildcards patterns
	 * matched a component at a time ("... " in front: at any depth). Owned array of strings
	 * borrowed from argv or owned by mks_exclude_text. */
	const char **mks_excludes;
	int nmks_excludes;
	bool wildcards;      /* -wildcards or -regex: the -e excludes are patterns */
	bool regex;          /* -regex: POSIX extended regular expressions, not shell patterns */
	char **mks_exclude_text; /* owned: the lines of -ef files */
	int nmks_exclude_text;
	bool all_root;
	bool keep_as_directory; /* one source directory: an entry of the root, as several are */
	int64_t force_uid;   /* -1 = keep */
	int64_t force_gid;
	int64_t set_mtime;   /* -1 = keep (--mtime) */
	int64_t clamp_time;  /* -1 = none (SOURCE_DATE_EPOCH) */
	bool tar;            /* --tar: the source is a tar stream */
	const char *tar_path; /* --tar FILE; NULL or "-" = standard input */
	uint32_t default_mode; /* directories a source implies but never lists */
	uint32_t default_uid, default_gid;
	int64_t default_mtime;
	uint64_t mem;        /* --mem: memory budget for what waits until the end */
	size_t tail_mem;     /* of which file tails, */
	size_t digest_mem;   /* file digests (dedup), */
	size_t entry_mem;    /* directory entries of a walked tree (the rest: temporary files) */
	uint32_t piece_batch; /* tails sorted together into fragments (0: MK_PIECE_BATCH); tests */
	const char *order_file; /* --order FILE: a trace of first reads (paths in that order) */
	const char *sort_file;  /* -sort FILE: mksquashfs priorities */
	const char *reuse;   /* --reuse OLD: an earlier image whose blocks may be copied */
	struct mk_pseudo_arg *pseudo; /* owned array */
	int npseudo;
};

#endif
