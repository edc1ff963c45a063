/* SPDX-License-Identifier: BSD-2-Clause */
/* libsqk image checker: verifies the integrity data (chunk digests, root digest) of an image
 * and walks its whole structure (superblock, table indexes, metadata blocks, every inode and
 * directory, every data and fragment block), reporting each finding with its byte range and the
 * region it breaks. Used by `sqk verify` and by the fuzzing target. */
#ifndef SQK_SQK_CHECK_H
#define SQK_SQK_CHECK_H

#include "api.h"

#include <stdbool.h>
#include <stdint.h>

#include "counts.h"
#include "error.h"
#include "io.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One finding. All strings are borrowed for the duration of the report callback only. */
struct sqk_check_report {
	const char *kind;     /* "integrity", "structure" */
	uint64_t start, end;  /* byte range [start, end) in the file, or 0,0 when unknown */
	const char *region;   /* "superblock", "inode table", "fragment block 12",
			       * "data of /path/to/file", "integrity data", ... */
	const char *msg;
};

/* Versioned by their size fields as sqk.h says (sqk_check_opts_init; results: size = sizeof). */
struct sqk_check_opts {
	size_t size;              /* sizeof(struct sqk_check_opts): sqk_check_opts_init sets it */
	unsigned threads;         /* 0 = online CPUs */
	const uint8_t *root_hash; /* 32 bytes, NULL = not checked */
	uint64_t offset;          /* byte offset of the superblock in the file */
	/* Called (serialised, from any thread) for each finding; NULL = none. */
	void (*report)(void *ctx, const struct sqk_check_report *r);
	void *ctx;
	uint64_t max_errors;      /* stop after this many findings; 0 = unlimited */
};

struct sqk_check_result {
	size_t size;              /* the caller's sizeof(struct sqk_check_result), set before */
	uint64_t errors;          /* findings reported (integrity + structure) */
	uint64_t corrupt_ranges;  /* merged corrupt byte ranges found by the chunk digests */
	uint64_t structural;      /* structural findings */
	bool has_integrity;
	bool root_hash_ok;        /* the trailer's root digest equals opts->root_hash */
	uint64_t chunks, chunks_bad;
	uint64_t inodes, dirs, files;
	uint64_t data_blocks, fragment_blocks, metadata_blocks; /* checked (duplicates' again) */
	/* What the image holds in the words of sqk info and sqk mkimage's summary (sqk_image_info),
	 * when its inodes walk (counts_ok). */
	bool counts_ok;
	struct sqk_counts counts;
	/* Bytes follow the image that are not a whole integrity trailer: integrity data cut off
	 * or damaged (an error, never "no integrity data"). Appended in 0.3.0. */
	bool integrity_truncated;
};

/* Sets *o to the defaults (zero) with o->size set; NULL opts mean the same. */
SQK_API void sqk_check_opts_init(struct sqk_check_opts *o);

/* Checks the image behind io (borrowed; file_size bytes; opts borrowed, NULL = defaults).
 * Returns 0 when the check ran (errors counted in the caller's *res, res->size set), or SQK_E*
 * on an operational error (out of memory, I/O failure on an in-range read; SQK_EABI for a
 * size it does not accept). */
SQK_API int sqk_check_image(struct sqk_io *io, uint64_t file_size, const struct sqk_check_opts *o,
		    struct sqk_check_result *res);

#ifdef __cplusplus
}
#endif

#endif
