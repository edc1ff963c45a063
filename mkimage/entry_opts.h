/* SPDX-License-Identifier: BSD-2-Clause */
/* mksquashfs's options that change an entry as the source gives it, whatever the source: the
 * root's mode, owner and time (-root-mode, -root-uid, -root-gid, -root-time), the xattr filters
 * and additions (-xattrs-exclude, -xattrs-include, -xattrs-add), -no-hardlinks, -info. */
#ifndef SQK_MK_ENTRY_OPTS_H
#define SQK_MK_ENTRY_OPTS_H

#include <stddef.h>

#include "mk.h"
#include "source.h"

/* Compiles c->opt's xattr regexes and decodes its -xattrs-add values into c->eopts (nothing
 * when none is given): 0 or an error naming the option, through c. */
int mk_eopts_open(struct mk_ctx *c);
/* Checks one -xattrs-add argument as mk_eopts_open reads it: 0, or -1 with the reason in why. */
int mk_eopts_check_add(const char *arg, char *why, size_t cap);
/* Frees c->eopts. */
void mk_eopts_free(struct mk_ctx *c);
/* Applies the options to e, fresh from the source: its xattr list may then point into
 * c->eopts (borrowed until the next call). 0 or an error through c. */
int mk_eopts_entry(struct mk_ctx *c, struct mk_entry *e);
/* -info: the line of e on stdout, in mksquashfs's words (without its inode numbers). */
void mk_eopts_info(struct mk_ctx *c, const struct mk_entry *e);

#endif
