/* SPDX-License-Identifier: BSD-2-Clause */
/* `sqk verify`'s dm-verity check: the tree beside the image (IMAGE.verity, with IMAGE.roothash
 * when it is there: cli/verity_files.h) or appended to it, recomputed from the image's bytes
 * (common/verity.h: verity_check), its findings reported like the checker's, a part of the
 * summary line and of the JSON object. */
#ifndef SQK_CLI_VERIFY_VERITY_H
#define SQK_CLI_VERIFY_VERITY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "sqk/sqk_check.h"
#include "common/verity.h"

struct vv {
	const char *where;       /* NULL: no tree found; "sidecar" or "appended" */
	char *tree;              /* the sidecar's path (owned), NULL when appended */
	char *root_file;         /* IMAGE.roothash (owned) */
	bool pinned;             /* root_file was there and read: the root hash checked */
	bool checked;            /* the tree was read and checked (r is valid) */
	uint64_t at;             /* where its superblock is in its file (--hash-offset) */
	struct verity_check r;
	uint64_t findings;       /* reported */
};

/* Looks for the tree of image (its path; io borrowed, size bytes, the image at offset 0) and
 * checks it, each finding passed to report(ctx, ...). 0 (also when there is no tree: v->where
 * NULL), or an operational error (I/O, memory) with a message in msg. v is the caller's, freed
 * with vv_free. */
int vv_run(struct vv *v, const char *image, struct sqk_io *io, uint64_t size,
	   void (*report)(void *ctx, const struct sqk_check_report *r), void *ctx, char *msg,
	   size_t cap);

/* The summary line's part: "; dm-verity: ...". */
void vv_summary(const struct vv *v, FILE *f);

/* The JSON value of "verity": an object, or null when there is no tree. */
void vv_json(const struct vv *v, FILE *f);

/* Frees what v owns. */
void vv_free(struct vv *v);

#endif
