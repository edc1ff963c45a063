/* SPDX-License-Identifier: BSD-2-Clause */
/* sqk ls's PATH operands as unsquashfs patterns (ls_glob.c): each expanded to the entries it
 * matches, for ls's own format. */
#ifndef SQK_LS_GLOB_H
#define SQK_LS_GLOB_H

#include <stddef.h>

#include "cmd.h"

/* The image paths the operands pats[0..n) name (borrowed; c's image open): a PATH without
 * wildcards (. and .. taken), or one that names an entry as written, as it is (a missing one
 * is left for the lookup to report); a pattern, the entries it matches in the image's order,
 * and a warning on stderr when it matches none. *out (owned by the caller, ls_glob_free)
 * gets *nout paths with no leading '/'. Returns 0 or 1 (a pattern with a . or .. component,
 * out of memory or an unreadable image: the message printed). */
int ls_glob(struct cmd *c, char *const *pats, size_t n, char ***out, size_t *nout);

/* Frees paths[0..n) and the array. */
void ls_glob_free(char **paths, size_t n);

#endif
