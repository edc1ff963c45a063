/* SPDX-License-Identifier: BSD-2-Clause */
/* The overflow-checked array grower (see grow.h). */
#include "grow.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sqk/error.h"

#define GROW_MIN 8u

/* No object may be larger than PTRDIFF_MAX bytes (malloc refuses them; pointer differences
 * inside them would overflow). */
#define GROW_MAX_BYTES ((size_t)PTRDIFF_MAX)

/* The capacity to grow to: need or more, doubling, never past GROW_MAX_BYTES (elem > 0 and
 * need * elem fits). */
static size_t next_cap(size_t cap, size_t need, size_t elem)
{
	size_t n = cap >= GROW_MIN ? cap : GROW_MIN;

	while (n < need)
		n = n <= GROW_MAX_BYTES / 2 / elem ? n * 2 : need;
	return n <= GROW_MAX_BYTES / elem ? n : need;
}

int mem_grow(void *arrp, size_t *cap, size_t need, size_t elem, int zero)
{
	void *old, *nv;
	size_t ncap;

	if (need <= *cap)
		return 0;
	if (elem == 0 || need > GROW_MAX_BYTES / elem)
		return SQK_ENOMEM;
	ncap = next_cap(*cap, need, elem);
	memcpy(&old, arrp, sizeof(old));
	nv = realloc(old, ncap * elem);
	if (!nv)
		return SQK_ENOMEM;
	if (zero)
		memset((char *)nv + *cap * elem, 0, (ncap - *cap) * elem);
	memcpy(arrp, &nv, sizeof(nv));
	*cap = ncap;
	return 0;
}
