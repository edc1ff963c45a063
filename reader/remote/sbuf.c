/* SPDX-License-Identifier: BSD-2-Clause */
/* A growing string (see sbuf.h). */
#include "sbuf.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/grow.h"

void sb_addn(struct sbuf *b, const char *s, size_t n)
{
	if (b->oom)
		return;
	if (n > SIZE_MAX - b->len - 1 ||
	    mem_grow(&b->p, &b->cap, b->len + n + 1 < 256 ? 256 : b->len + n + 1, 1, 0)) {
		b->oom = true;
		return;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}

void sb_add(struct sbuf *b, const char *s)
{
	sb_addn(b, s, strlen(s));
}

char *sb_take(struct sbuf *b)
{
	if (b->oom || !b->p) {
		free(b->p);
		return b->oom ? NULL : strdup("");
	}
	return b->p;
}
