/* SPDX-License-Identifier: BSD-2-Clause */
/* Near-duplicate fragment pieces: a bottom-k sketch of each tail's 8-byte shingles, and the
 * clustering that moves a piece's near-duplicates (most sketch values shared) next to it in the
 * fragment order, so that they share one block and compress against each other. */
#include <stdlib.h>
#include <string.h>

#include "sqk/error.h"
#include "mk.h"
#include "similar.h"

/* One multiply: the top half of the product depends on all eight bytes. */
static uint32_t shingle_hash(const uint8_t *p)
{
	uint64_t v;
	memcpy(&v, p, sizeof(v));
	return (uint32_t)((v * 0x9E3779B97F4A7C15ULL) >> 32);
}

/* Inserts h into the sorted, distinct values v[0..*n) kept to the MK_SKETCH_K smallest; the
 * caller has checked that h is below the largest when there are K already. */
static void sketch_add(uint32_t *v, uint8_t *n, uint32_t h)
{
	unsigned k = *n;
	unsigned lo = 0, hi = k;
	while (lo < hi) {
		unsigned mid = (lo + hi) / 2;
		if (v[mid] < h)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < k && v[lo] == h)
		return;
	if (k == MK_SKETCH_K)
		k--;
	memmove(v + lo + 1, v + lo, (k - lo) * sizeof(*v));
	v[lo] = h;
	*n = (uint8_t)(k + 1);
}

void mk_sketch_of(const uint8_t *b, size_t len, struct mk_sketch *s)
{
	memset(s, 0, sizeof(*s));
	for (size_t i = 0; i + 8 <= len; i++) {
		uint32_t h = shingle_hash(b + i);
		if (s->n < MK_SKETCH_K || h < s->v[MK_SKETCH_K - 1])
			sketch_add(s->v, &s->n, h);
	}
}

/* Whether two sorted sketches share at least `need` values; stops once they cannot. */
static bool share_at_least(const struct mk_sketch *a, const struct mk_sketch *b, unsigned need)
{
	unsigned i = 0, j = 0, c = 0;
	while (i < a->n && j < b->n && c < need) {
		unsigned left = a->n - i < b->n - j ? a->n - i : b->n - j;
		if (c + left < need)
			return false;
		if (a->v[i] == b->v[j]) {
			c++;
			i++;
			j++;
		} else if (a->v[i] < b->v[j]) {
			i++;
		} else {
			j++;
		}
	}
	return c >= need;
}

/* A quick necessary condition of sharing MK_SKETCH_NEAR values for full sketches: each
 * misses at most K - NEAR of the other's values, so each holds one of the other's first
 * K - NEAR + 1, and its smallest value is at most that one. */
static bool may_share(const struct mk_sketch *a, const struct mk_sketch *b)
{
	unsigned m = MK_SKETCH_K - MK_SKETCH_NEAR;
	return b->v[0] <= a->v[m] && a->v[0] <= b->v[m];
}

struct sk_entry {
	uint32_t h, idx;
};

static int entry_cmp(const void *a, const void *b)
{
	const struct sk_entry *x = a, *y = b;
	if (x->h != y->h)
		return x->h < y->h ? -1 : 1;
	return (x->idx > y->idx) - (x->idx < y->idx);
}

/* The first entry of e[0..n) (sorted) at or after (h, idx); n when none. */
static size_t first_of(const struct sk_entry *e, size_t n, uint32_t h, uint32_t idx)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (e[mid].h < h || (e[mid].h == h && e[mid].idx < idx))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

struct cluster_run {
	const struct mk_sketch *sk;
	const uint32_t *len;
	const struct sk_entry *e;
	size_t ne;
	uint8_t *used;
	uint32_t *perm, *grp;
	uint32_t *stamp;            /* per piece: 1 + the last seed that looked at it */
	uint32_t near[MK_SKETCH_K * MK_SKETCH_SCAN];
	size_t out;
};

static int u32_cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return (x > y) - (x < y);
}

/* Emits seed i, then its near-duplicates in order, as many as fit one block of bs bytes with
 * it. The candidates: for each value of i's sketch, the first MK_SKETCH_SCAN pieces after i
 * (in order) whose full sketch has it; a near-duplicate is a candidate whose sketch shares
 * MK_SKETCH_NEAR values with i's (full) one. Every piece before i is placed already. */
static void grow_cluster(struct cluster_run *r, uint32_t i, uint32_t bs)
{
	size_t seed_at = r->out, nn = 0;
	uint64_t bytes = r->len[i];
	r->used[i] = 1;
	r->perm[r->out++] = i;
	for (unsigned k = 0; r->sk[i].n == MK_SKETCH_K && k < MK_SKETCH_K; k++) {
		uint32_t h = r->sk[i].v[k];
		size_t q = first_of(r->e, r->ne, h, i + 1);
		for (unsigned seen = 0; q < r->ne && r->e[q].h == h && seen < MK_SKETCH_SCAN;
		     q++, seen++) {
			uint32_t j = r->e[q].idx;
			if (r->stamp[j] == i + 1 || r->used[j])
				continue;
			r->stamp[j] = i + 1; /* looked at once per seed */
			if (may_share(&r->sk[i], &r->sk[j]) &&
			    share_at_least(&r->sk[i], &r->sk[j], MK_SKETCH_NEAR))
				r->near[nn++] = j;
		}
	}
	if (nn > 1)
		qsort(r->near, nn, sizeof(*r->near), u32_cmp);
	for (size_t q = 0; q < nn; q++) {
		uint32_t j = r->near[q];
		if (bytes + r->len[j] > bs)
			continue;
		r->used[j] = 1;
		bytes += r->len[j];
		r->grp[seed_at] = (uint32_t)seed_at;
		r->grp[r->out] = (uint32_t)seed_at;
		r->perm[r->out++] = j;
	}
}

int mk_cluster(struct mk_ctx *c, const struct mk_sketch *sk, const uint32_t *len, size_t n,
	       uint32_t bs, uint32_t *perm, uint32_t *grp)
{
	size_t ne = 0;
	for (size_t i = 0; i < n; i++)
		ne += sk[i].n == MK_SKETCH_K ? MK_SKETCH_K : 0;
	struct sk_entry *e = ne ? malloc(ne * sizeof(*e)) : NULL;
	uint8_t *used = calloc(n ? n : 1, 1);
	uint32_t *stamp = calloc(n ? n : 1, sizeof(*stamp));
	struct cluster_run *r = calloc(1, sizeof(*r));
	if ((ne && !e) || !used || !stamp || !r) {
		free(e);
		free(used);
		free(stamp);
		free(r);
		return mk_fail(c, SQK_ENOMEM, "out of memory");
	}
	ne = 0;
	for (size_t i = 0; i < n; i++)
		for (unsigned k = 0; sk[i].n == MK_SKETCH_K && k < MK_SKETCH_K; k++)
			e[ne++] = (struct sk_entry){ sk[i].v[k], (uint32_t)i };
	if (ne > 1)
		qsort(e, ne, sizeof(*e), entry_cmp);
	*r = (struct cluster_run){ .sk = sk, .len = len, .e = e, .ne = ne, .used = used,
				   .perm = perm, .grp = grp, .stamp = stamp };
	for (size_t i = 0; i < n; i++)
		grp[i] = SQK_NONE32;
	for (size_t i = 0; i < n; i++)
		if (!used[i])
			grow_cluster(r, (uint32_t)i, bs);
	free(r);
	free(e);
	free(used);
	free(stamp);
	return 0;
}
