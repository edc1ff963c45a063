/* SPDX-License-Identifier: BSD-2-Clause */
/* What the pseudo-definition files share (pseudo.c parses and applies, pseudo_data.c gives
 * content, pseudo_pack.c reads gensquashfs pack files, pseudo_xattr.c the x definitions). */
#ifndef SQK_MK_PSEUDO_INT_H
#define SQK_MK_PSEUDO_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "mk.h"

/* glob's options (pdef.glob): the types it takes (none: all), what comes from the scanned
 * files ('*'), and the scan's flags. */
enum {
	PGLOB_BLK = 1u << 0, PGLOB_CHR = 1u << 1, PGLOB_DIR = 1u << 2, PGLOB_FIFO = 1u << 3,
	PGLOB_FILE = 1u << 4, PGLOB_LNK = 1u << 5, PGLOB_SOCK = 1u << 6, PGLOB_TYPES = 0x7f,
	PGLOB_MODE_SRC = 1u << 8, PGLOB_UID_SRC = 1u << 9, PGLOB_GID_SRC = 1u << 10,
	PGLOB_PATH = 1u << 11, PGLOB_XDEV = 1u << 12, PGLOB_KEEPTIME = 1u << 13,
	PGLOB_NORECURSE = 1u << 14,
};

/* One definition. type: d m c b s i (as written, lower case), L (a hard link to an image
 * entry), l (an image entry, else a file of this machine, not followed), h (a file of this
 * machine, followed), f (a command's output), x (an xattr), r (R: a range of the pseudo file),
 * P (a pack file's `file`: content from a file of this machine, attributes from the line),
 * g (a pack file's glob: a directory of this machine scanned into the image). */
struct pdef {
	char *path;
	char type;
	bool parents;       /* missing parent directories are made (pack files) */
	bool pack;          /* from a pack file (messages) */
	int64_t mtime;      /* -1: the default */
	uint32_t mode, uid, gid, maj, min;
	char *symmode;      /* a symbolic MODE, applied at the end (NULL: mode) */
	char *target;       /* s: target; l L h P: the linked path; i: "f"/"s"; f: the command;
			     * x: NAME=VALUE */
	uint64_t len, off;  /* r: length and offset in the data of data file `data` */
	uint32_t data;
	uint32_t glob;      /* g (a pack file's glob): PGLOB_* */
	char *pattern;      /* g: -name or -path pattern, or NULL */
	char where[160];    /* "FILE:LINE" or "--pseudo-def" for messages */
	const char *line;   /* while parsing: the line (borrowed), for columns in messages */
	unsigned col;       /* while parsing: the column of the word at hand (1-based) */
};

/* The data part of an unsquashfs -pf file (after "# START OF DATA"): a file and where the data
 * starts (stdin's is copied to an unlinked temporary file, fd kept open). */
struct pdata {
	char *path;
	int fd;             /* -1 until opened */
	uint64_t start;
};

struct mk_pseudo {
	struct pdef *v;
	size_t n, cap;
	struct pdata *data;
	size_t ndata, data_cap;
	bool have_pd;       /* -pd: the default directory */
	struct pdef pd;
	char **names;       /* the paths the definitions look up, sorted (mk_pseudo_names) */
	size_t nnames, names_cap;
};

/* Next word of *s: quoted or bare, with \ escapes; NULL at the end of the line; *bad on an
 * unbalanced quote or no memory. Caller frees. */
char *pseudo_word(const char **s, bool *bad);
/* "pseudo definition" or "pack file entry": what messages call d. */
const char *pseudo_what(const struct pdef *d);
/* Fails the build with "pseudo definition at WHERE: " and fmt with arg. */
int pseudo_err(struct mk_ctx *c, const struct pdef *d, const char *fmt, const char *arg);
/* A new, zeroed definition at the end of p (where: for messages); NULL after mk_fail. */
struct pdef *pseudo_new(struct mk_ctx *c, struct mk_pseudo *p, const char *where);
void pseudo_pdef_free(struct pdef *d);
/* Numeric id or user/group name of this machine. 0 or -1. */
int pseudo_id(const char *s, bool user, uint32_t *out);

/* pseudo_pack.c: the definitions of gensquashfs pack file `file` (input files relative to dir,
 * or to the pack file's directory when dir is NULL; "-": standard input). */
int pseudo_pack_load(struct mk_ctx *c, struct mk_pseudo *p, const char *file, const char *dir);

/* pseudo.c: applies one definition (p: the set it belongs to). */
int pseudo_apply_one(struct mk_ctx *c, struct mk_pseudo *p, const struct pdef *d);

/* pseudo_glob.c: parses glob's [OPTIONS...] LOCATION (rest, borrowed) into d (input paths
 * relative to dir), and applies it: the scan of LOCATION into the directory d->path. */
int pseudo_glob_parse(struct mk_ctx *c, struct pdef *d, const char *rest, const char *dir);
int pseudo_glob_apply(struct mk_ctx *c, struct mk_pseudo *p, const struct pdef *d);

/* pseudo_data.c: applies the definitions that have content (f h l P r): *done = false when d
 * is not one of them. */
int pseudo_apply_data(struct mk_ctx *c, struct mk_pseudo *p, const struct pdef *d,
		      bool *done);
/* date -d t +%s: *secs. 0 or -1. */
int pseudo_date(struct mk_ctx *c, const char *t, int64_t *secs);
/* Copies the rest of f (standard input) to an unlinked temporary file: *fd. */
int pseudo_spool(struct mk_ctx *c, FILE *f, int *fd);

/* pseudo_xattr.c: checks an x definition's NAME=VALUE (at load), and applies it. */
int pseudo_xattr_check(struct mk_ctx *c, const struct pdef *d);
int pseudo_xattr_apply(struct mk_ctx *c, const struct pdef *d);

#endif
