/* SPDX-License-Identifier: BSD-2-Clause */
/* The --pseudo definitions (pseudo.c). */
#ifndef SQK_MK_PSEUDO_H
#define SQK_MK_PSEUDO_H

#include <stdbool.h>

#include "mk.h"

/* pseudo.c: --pseudo / --pseudo-def definitions, parsed before the source is read (errors name
 * FILE:LINE) and applied after it. */
struct mk_pseudo;
int mk_pseudo_load(struct mk_ctx *c, struct mk_pseudo **out);
int mk_pseudo_apply(struct mk_ctx *c, struct mk_pseudo *p);
/* Whether a definition of p looks up path (its own path, its parent, a link's target): such an
 * entry of the source stays a node of the tree, where the definition can find it. */
bool mk_pseudo_names(const struct mk_pseudo *p, const char *path);
void mk_pseudo_free(struct mk_pseudo *p);

#endif
