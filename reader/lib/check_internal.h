/* SPDX-License-Identifier: BSD-2-Clause */
/* Internals of the image checker (check*.c): the shared context, the finding reporter, the
 * interval map from byte ranges to the regions they break, and the list of data and fragment
 * blocks the structural walk collects for the parallel decompression pass. */
#ifndef SQK_CHECK_INTERNAL_H
#define SQK_CHECK_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>

#include "common/format.h"
#include "common/integrity.h"
#include "sqk/sqk_check.h"
#include "internal.h"

/* A byte range of the file (file offsets) and the region name it belongs to. */
struct chk_ival {
	uint64_t start, end;
	uint32_t label;
};

/* One data or fragment block to decompress: expected is the exact length (data) or the least
 * length (fragment). */
struct chk_job {
	uint64_t pos;       /* image position */
	uint32_t word;
	uint32_t expected;
	uint32_t label;
	uint32_t frag;      /* 1 = fragment block */
};

struct chk {
	struct sqk_io *io;
	uint64_t file_size;
	uint64_t offset;
	const struct sqk_check_opts *o;
	struct sqk_check_result *res;
	unsigned threads;
	pthread_mutex_t mu;       /* reporter, log message */
	atomic_bool stop;         /* max_errors reached */
	struct sqk_image *img;
	char logmsg[512];         /* last message from the library */
	char **labels;
	size_t nlabels, caplabels;
	struct chk_ival *iv;
	size_t niv, capiv;
	struct chk_job *jobs;
	size_t njobs, capjobs;
	uint64_t *bad;            /* merged corrupt ranges, start/end pairs (file offsets) */
	size_t nbad, capbad;      /* pairs in use, allocated */
	uint64_t *ino_ref;        /* by inode number: ref of the inode, or SQK_NONE64 */
	uint32_t *frag_need;      /* by fragment index: bytes the tails need */
	uint64_t data_start;      /* image positions of the data area */
	uint64_t data_end;
	uint64_t xattr_bytes;     /* decompressed size of the xattr key/value area */
	uint64_t found;           /* distinct inodes reached */
};

/* Reports one finding (printf-style message); structural selects the counter. */
void chk_report(struct chk *c, bool structural, uint64_t start, uint64_t end, const char *region,
		const char *fmt, ...) __attribute__((format(printf, 6, 7)));

/* Copies the library's last log message (or "" when none) into buf. */
void chk_last_log(struct chk *c, char *buf, size_t cap);

/* Interns a region name; returns its label index or SQK_ENOMEM. */
int chk_label(struct chk *c, const char *name, uint32_t *out);

/* Adds [start, end) of the image (positions relative to the superblock) labelled name. */
int chk_ival_add(struct chk *c, uint64_t start, uint64_t end, uint32_t label);

int chk_job_add(struct chk *c, const struct chk_job *j);

/* check_integ.c: the chunk digests, the root digest, the trailer. */
int chk_integrity(struct chk *c, struct integ *ig, bool *loaded);

/* check_meta.c: table regions and the metadata blocks of the inode and directory tables. */
int chk_tables(struct chk *c);

/* check_meta.c: table regions from the raw superblock when the image does not open. */
int chk_fallback_regions(struct chk *c);

/* check_walk.c: the tree walk from the root. */
int chk_walk(struct chk *c);

/* check_blocks.c: decompresses every collected block in parallel. */
int chk_blocks(struct chk *c);

/* Runs fn(arg) on n threads (the caller's thread included); returns the first error. */
int chk_parallel(unsigned n, int (*fn)(void *arg), void *arg);

#endif
