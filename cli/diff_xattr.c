/* SPDX-License-Identifier: BSD-2-Clause */
/* sqk diff: the xattrs of an entry both sides have, which sqfsdiff does not compare: each name
 * one side lacks (added, removed) and each value that differs, by name. */
#include "diff.h"

#include <stdlib.h>
#include <string.h>

/* The names of a list (NUL-terminated, one after the other) as a sorted array (caller frees). */
static int dx_split(const char *buf, size_t len, const char ***out, size_t *n)
{
	size_t cnt = 0, i = 0;

	for (size_t k = 0; k < len; k++)
		cnt += buf[k] == '\0';
	*n = 0;
	*out = cnt ? malloc(cnt * sizeof(**out)) : NULL;
	if (cnt && !*out)
		return SQK_ENOMEM;
	for (size_t at = 0; at < len && i < cnt; at += strlen(buf + at) + 1)
		if (buf[at])
			(*out)[i++] = buf + at;
	*n = i;
	return 0;
}

static int dx_cmp(const void *x, const void *y)
{
	return strcmp(*(const char *const *)x, *(const char *const *)y);
}

/* Xattr name of one side or both: reports it when it is on one side only or its values
 * differ. */
static int dx_one(struct diff *d, const struct diff_node *a, const struct diff_node *b,
		  const char *path, const char *name, bool in_a, bool in_b)
{
	char *va = NULL, *vb = NULL;
	size_t la = 0, lb = 0;
	int r = in_a ? diff_side_xattr_get(&d->a, a, path, name, &va, &la) : 0;

	if (r == 0 && in_b)
		r = diff_side_xattr_get(&d->b, b, path, name, &vb, &lb);
	if (r == SQK_ENOENT) /* gone since it was listed: a side that changes under us */
		r = 0;
	if (r == 0 && (!va || !vb || la != lb || memcmp(va, vb, la))) {
		struct diff_val oa = { va ? DV_BYTES : DV_NULL, 0, va, la };
		struct diff_val ob = { vb ? DV_BYTES : DV_NULL, 0, vb, lb };

		diff_out(d, DK_XATTR, path, name, &oa, &ob, 0);
	}
	free(va);
	free(vb);
	return r;
}

int diff_xattrs(struct diff *d, const struct diff_node *a, const struct diff_node *b,
		const char *path)
{
	char *la = NULL, *lb = NULL;
	size_t sa = 0, sb = 0, na = 0, nb = 0, i = 0, j = 0;
	const char **xa = NULL, **xb = NULL;
	int r = diff_side_xattr_names(&d->a, a, path, &la, &sa), c;

	if (r == 0)
		r = diff_side_xattr_names(&d->b, b, path, &lb, &sb);
	if (r == 0)
		r = dx_split(la, sa, &xa, &na);
	if (r == 0)
		r = dx_split(lb, sb, &xb, &nb);
	if (na > 1)
		qsort(xa, na, sizeof(*xa), dx_cmp);
	if (nb > 1)
		qsort(xb, nb, sizeof(*xb), dx_cmp);
	while (r == 0 && (i < na || j < nb)) {
		c = i == na ? 1 : j == nb ? -1 : strcmp(xa[i], xb[j]);
		r = dx_one(d, a, b, path, c > 0 ? xb[j] : xa[i], c <= 0, c >= 0);
		i += c <= 0;
		j += c >= 0;
	}
	free(xa);
	free(xb);
	free(la);
	free(lb);
	return r;
}
