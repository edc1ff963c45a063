/* SPDX-License-Identifier: BSD-2-Clause */
/* sqk ls --pseudo / --pack (ls_dump.c): an image's tree as definitions for a new build. */
#ifndef SQK_CLI_LS_DUMP_H
#define SQK_CLI_LS_DUMP_H

#include <stdio.h>

#include "cmd.h"

enum ls_dump_kind {
	LS_DUMP_NONE = 0,
	LS_DUMP_PSEUDO, /* unsquashfs -pf: definitions, then the files' data in the same stream */
	LS_DUMP_PACK,   /* rdsquashfs -d: a gensquashfs pack file */
};

/* ls's option codes for --pseudo, --pack, --pack-root (clear of letters and SQK_OPT_*). */
enum { LS_OPT_PSEUDO = 0x3100, LS_OPT_PACK, LS_OPT_PACK_ROOT };

/* Writes the tree at dir (borrowed; the image is c->img) to out as kind. pack_root (borrowed,
 * or NULL): LS_DUMP_PACK's prefix of each file's input path (rdsquashfs -p). Messages name
 * where (the listed PATH). Returns 0, or 1 after printing the error. */
int ls_dump(struct cmd *c, const struct sqk_inode *dir, const char *where,
	    enum ls_dump_kind kind, const char *pack_root, FILE *out);

#endif
