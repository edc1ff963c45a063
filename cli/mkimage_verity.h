/* SPDX-License-Identifier: BSD-2-Clause */
/* `sqk mkimage --verity`'s files beside the image (cli/verity_files.h names them): judged with the
 * image before anything is read, written under temporary names (the tree when the builder has
 * it, the root hash and its signature after the build), renamed just before the image, and
 * those of an older build that this one does not write (a signature, a tree now appended)
 * removed after it. */
#ifndef SQK_CLI_MKIMAGE_VERITY_H
#define SQK_CLI_MKIMAGE_VERITY_H

#include <stdbool.h>
#include <stddef.h>

#include "cli/lib/outfile.h"
#include "cli/verity_files.h"
#include "mkimage/build.h"
#include "mkimage_options.h"

enum { MKV_TREE, MKV_ROOT, MKV_SIG, MKV_FILES };

/* One file beside the image. */
struct mkv_file {
	char *path;                      /* owned */
	struct outfile_target t;         /* what the judge saw there */
	struct outfile of;               /* its temporary once written (of.fd >= 0 until commit) */
	bool write;                      /* this build writes it */
	bool stale;                      /* not written, but an older one of its kind is there */
};

struct mkv {
	struct mkv_file f[MKV_FILES];
	struct verity_signer signer;     /* --verity-cert and --verity-key, loaded */
	bool signing;
	struct sqk_io *tree_io;          /* the tree's temporary (owned) */
};

/* Makes v empty (nothing to free yet). */
void mkv_init(struct mkv *v);

/* Names and judges the files of o's verity mode beside its image (device: the image is a block
 * device, written in place: nothing can go beside it), loads the signer. No side effects. 0, or
 * an SQK_E* code with the reason in msg. */
int mkv_judge(struct mkv *v, const struct mk_options *o, bool device, char *msg, size_t cap);

/* open_verity of sqk_build_opts: the tree's temporary, as an io (owned by v). */
int mkv_open_tree(struct mkv *v, struct sqk_io **io, char *msg, size_t cap);

/* After the build (r borrowed): the root hash file and its signature, as temporaries. */
int mkv_write(struct mkv *v, const struct sqk_build_result *r, char *msg, size_t cap);

/* Renames every temporary to its name (the image's commit follows). 0, or an SQK_E* code with
 * msg. */
int mkv_commit(struct mkv *v, char *msg, size_t cap);

/* After the image's commit: removes the files of an older build this one replaced by nothing
 * (a note on stderr for each, unless quiet). */
void mkv_remove_stale(struct mkv *v, bool quiet);

/* Removes the temporaries left and frees what v holds; safe again. */
void mkv_free(struct mkv *v);

#endif
