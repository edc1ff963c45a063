/* SPDX-License-Identifier: BSD-2-Clause */
/* Symbolic modes as chmod(1) and mksquashfs take them (symmode.c). */
#ifndef SQK_MK_SYMMODE_H
#define SQK_MK_SYMMODE_H

#include <stdbool.h>
#include <stdint.h>

/* Applies spec (borrowed: an octal mode, or clauses [ugoa]*[+-=][rwxXst|ugo]*, comma
 * separated, as the chmod action takes them) to the permission bits old of an entry (dir: a
 * directory, for X) and sets *out. 0, or -1 (*bad_at = 0: the mode as a whole is named). */
int mk_symmode_apply(const char *spec, uint32_t old, bool dir, uint32_t *out, size_t *bad_at);

/* Whether spec is symbolic (not a plain octal number). */
bool mk_symmode_is_symbolic(const char *spec);

#endif
