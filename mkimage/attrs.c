/* SPDX-License-Identifier: BSD-2-Clause */
/* Owner ids and extended attributes: the id table (values in first-use order) and the xattr sets,
 * each distinct set stored once, long values out of line and shared between sets. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#define XXH_STATIC_LINKING_ONLY
#include <xxhash.h>

#include "common/endian.h"
#include "sqk/error.h"
#include "common/grow.h"
#include "common/format.h"
#include "common/meta.h"
#include "mk.h"
#include "attrs.h"
#include "source.h"

/* ---- id table ---- */

struct mk_ids {
	uint32_t *values;
	uint32_t count;
	size_t cap;
	uint32_t *slots; /* open addressing: index + 1, 0 = empty */
	uint32_t nslots;
};

int mk_ids_create(struct mk_ids **out)
{
	struct mk_ids *ids = calloc(1, sizeof(*ids));
	if (!ids)
		return SQK_ENOMEM;
	ids->nslots = 256;
	ids->slots = calloc(ids->nslots, sizeof(*ids->slots));
	if (!ids->slots) {
		free(ids);
		return SQK_ENOMEM;
	}
	*out = ids;
	return 0;
}

void mk_ids_destroy(struct mk_ids *ids)
{
	if (!ids)
		return;
	free(ids->values);
	free(ids->slots);
	free(ids);
}

static uint32_t id_slot(const struct mk_ids *ids, uint32_t id)
{
	uint32_t j = (id * 2654435761u) & (ids->nslots - 1);
	while (ids->slots[j] && ids->values[ids->slots[j] - 1] != id)
		j = (j + 1) & (ids->nslots - 1);
	return j;
}

static int ids_grow(struct mk_ids *ids)
{
	uint32_t *ns = calloc((size_t)ids->nslots * 2, sizeof(*ns));
	if (!ns)
		return SQK_ENOMEM;
	free(ids->slots);
	ids->slots = ns;
	ids->nslots *= 2;
	for (uint32_t i = 0; i < ids->count; i++)
		ids->slots[id_slot(ids, ids->values[i])] = i + 1;
	return 0;
}

int mk_ids_index(struct mk_ctx *c, uint32_t id, uint16_t *idx)
{
	struct mk_ids *ids = c->ids;
	uint32_t j = id_slot(ids, id);
	if (ids->slots[j]) {
		*idx = (uint16_t)(ids->slots[j] - 1);
		return 0;
	}
	if (ids->count >= 65535)
		return mk_fail(c, SQK_ETOOBIG, "more than 65535 distinct owner ids");
	int err = mk_grow(c, &ids->values, &ids->cap, (size_t)ids->count + 1, sizeof(*ids->values));
	if (err)
		return err;
	ids->values[ids->count++] = id;
	ids->slots[j] = ids->count;
	*idx = (uint16_t)(ids->count - 1);
	if (ids->count * 2 > ids->nslots && ids_grow(ids))
		return mk_fail(c, SQK_ENOMEM, "out of memory");
	return 0;
}

uint32_t mk_ids_count(const struct mk_ids *ids)
{
	return ids->count;
}

const uint32_t *mk_ids_values(const struct mk_ids *ids)
{
	return ids->values;
}

/* ---- xattrs ---- */

struct xpair {
	uint16_t prefix;
	uint16_t name_len;
	char *name;       /* without prefix, owned */
	uint32_t value_len;
	uint8_t *value;   /* owned */
};

struct xset {
	struct xpair *pairs;
	uint32_t n;
	uint64_t hash;
};

struct mk_xattrs {
	struct xset *sets;
	uint32_t nsets;
	size_t cap;
	uint32_t *slots; /* set index + 1 */
	uint32_t nslots;
};


int mk_xattrs_create(struct mk_xattrs **out)
{
	struct mk_xattrs *x = calloc(1, sizeof(*x));
	if (!x)
		return SQK_ENOMEM;
	*out = x;
	return 0;
}

static void set_free(struct xset *s)
{
	for (uint32_t i = 0; i < s->n; i++) {
		free(s->pairs[i].name);
		free(s->pairs[i].value);
	}
	free(s->pairs);
}

void mk_xattrs_destroy(struct mk_xattrs *x)
{
	if (!x)
		return;
	for (uint32_t i = 0; i < x->nsets; i++)
		set_free(&x->sets[i]);
	free(x->sets);
	free(x->slots);
	free(x);
}

uint32_t mk_xattrs_count(const struct mk_xattrs *x)
{
	return x->nsets;
}

static int pair_cmp(const void *a, const void *b)
{
	const struct xpair *p = a, *q = b;
	if (p->prefix != q->prefix)
		return p->prefix < q->prefix ? -1 : 1;
	size_t l = p->name_len < q->name_len ? p->name_len : q->name_len;
	int r = memcmp(p->name, q->name, l);
	return r ? r : (p->name_len > q->name_len) - (p->name_len < q->name_len);
}

static uint64_t set_hash(const struct xset *s)
{
	XXH3_state_t st;
	XXH3_64bits_reset(&st);
	for (uint32_t i = 0; i < s->n; i++) {
		const struct xpair *p = &s->pairs[i];
		uint8_t hdr[8];
		put_le16(hdr, p->prefix);
		put_le16(hdr + 2, p->name_len);
		put_le32(hdr + 4, p->value_len);
		XXH3_64bits_update(&st, hdr, sizeof(hdr));
		XXH3_64bits_update(&st, p->name, p->name_len);
		XXH3_64bits_update(&st, p->value, p->value_len);
	}
	return XXH3_64bits_digest(&st);
}

static bool set_equal(const struct xset *a, const struct xset *b)
{
	if (a->hash != b->hash || a->n != b->n)
		return false;
	for (uint32_t i = 0; i < a->n; i++) {
		const struct xpair *p = &a->pairs[i], *q = &b->pairs[i];
		if (pair_cmp(p, q) || p->value_len != q->value_len ||
		    memcmp(p->value, q->value, p->value_len))
			return false;
	}
	return true;
}

static uint32_t set_slot(const struct mk_xattrs *x, const struct xset *s)
{
	uint32_t j = (uint32_t)s->hash & (x->nslots - 1);
	while (x->slots[j] && !set_equal(&x->sets[x->slots[j] - 1], s))
		j = (j + 1) & (x->nslots - 1);
	return j;
}

static int sets_grow(struct mk_xattrs *x)
{
	uint32_t ncap = x->nslots ? x->nslots * 2 : 64;
	uint32_t *ns = calloc(ncap, sizeof(*ns));
	if (!ns)
		return SQK_ENOMEM;
	free(x->slots);
	x->slots = ns;
	x->nslots = ncap;
	for (uint32_t i = 0; i < x->nsets; i++)
		x->slots[set_slot(x, &x->sets[i])] = i + 1;
	return 0;
}

/* Interns s (taking ownership of its pairs) and returns its index. */
static int intern_set(struct mk_xattrs *x, struct xset *s, uint32_t *idx)
{
	if ((x->nsets + 1) * 2 > x->nslots && sets_grow(x))
		return SQK_ENOMEM;
	s->hash = set_hash(s);
	uint32_t j = set_slot(x, s);
	if (x->slots[j]) {
		set_free(s);
		*idx = x->slots[j] - 1;
		return 0;
	}
	if (mem_grow(&x->sets, &x->cap, (size_t)x->nsets + 1, sizeof(*x->sets), 0))
		return SQK_ENOMEM;
	/* shrink to fit (an exact size, not mem_grow): a kept set's pairs take s->n slots */
	struct xpair *fit = realloc(s->pairs, s->n * sizeof(*fit));
	if (fit)
		s->pairs = fit;
	x->sets[x->nsets] = *s;
	x->slots[j] = ++x->nsets;
	*idx = x->nsets - 1;
	return 0;
}

static int prefix_of(const char *name, size_t *plen)
{
	for (unsigned i = 0; i < SQK_XATTR_NPREFIX; i++) {
		size_t l = strlen(xattr_prefix(i));
		if (!strncmp(name, xattr_prefix(i), l) && name[l]) {
			*plen = l;
			return (int)i;
		}
	}
	return -1;
}

static int add_pair(struct mk_ctx *c, const char *origin, struct xset *s, size_t *cap,
		    const struct mk_xattr_kv *kv)
{
	size_t plen;
	int pfx = prefix_of(kv->name, &plen);
	if (pfx < 0 || strlen(kv->name + plen) > 0xFFFF)
		return 0; /* other namespaces cannot be stored in SquashFS */
	if (kv->size > 65536)
		return mk_fail(c, SQK_ETOOBIG, "xattr %s of '%s' is too large (%zu bytes)",
			       kv->name, origin, kv->size);
	int err = mk_grow(c, &s->pairs, cap, (size_t)s->n + 1, sizeof(*s->pairs));
	if (err)
		return err;
	struct xpair *p = &s->pairs[s->n++];
	memset(p, 0, sizeof(*p));
	p->prefix = (uint16_t)pfx;
	p->name_len = (uint16_t)strlen(kv->name + plen);
	p->name = strdup(kv->name + plen);
	p->value = malloc(kv->size + 1);
	if (!p->name || !p->value)
		return mk_fail(c, SQK_ENOMEM, "out of memory");
	if (kv->size)
		memcpy(p->value, kv->value, kv->size);
	p->value_len = (uint32_t)kv->size;
	return 0;
}

int mk_xattrs_intern(struct mk_ctx *c, const char *origin, const struct mk_xattr_kv *kv,
		     size_t n, uint32_t *idx)
{
	struct xset s = { 0 };
	size_t cap = 0;
	int err = 0;
	*idx = SQK_NONE32;
	for (size_t i = 0; i < n && !err; i++)
		err = add_pair(c, origin, &s, &cap, &kv[i]);
	if (!err && s.n) {
		qsort(s.pairs, s.n, sizeof(*s.pairs), pair_cmp);
		for (uint32_t i = 1; i < s.n; i++)
			if (!pair_cmp(&s.pairs[i - 1], &s.pairs[i])) {
				err =
				    mk_fail(c, SQK_EINVAL, "'%s': xattr %s%s listed twice", origin,
					    xattr_prefix(s.pairs[i].prefix), s.pairs[i].name);
				set_free(&s);
				return err;
			}
		err = intern_set(c->xattrs, &s, idx);
		if (err)
			return mk_fail(c, err, "out of memory");
		return 0;
	}
	set_free(&s);
	return err;
}

/* The set idx with kv added (a pair of the same name replaced), interned as *out. */
int mk_xattrs_add_one(struct mk_ctx *c, const char *origin, uint32_t idx,
		      const struct mk_xattr_kv *kv, uint32_t *out)
{
	const struct xset *s = idx == SQK_NONE32 ? NULL : &c->xattrs->sets[idx];
	uint32_t n = s ? s->n : 0, k = 0;
	struct mk_xattr_kv *v = calloc((size_t)n + 1, sizeof(*v));
	char **names = calloc((size_t)n + 1, sizeof(*names));
	int err = v && names ? 0 : mk_fail(c, SQK_ENOMEM, "out of memory");
	for (uint32_t i = 0; i < n && !err; i++) {
		const struct xpair *p = &s->pairs[i];
		if (asprintf(&names[i], "%s%s", xattr_prefix(p->prefix), p->name) < 0) {
			names[i] = NULL;
			err = mk_fail(c, SQK_ENOMEM, "out of memory");
		} else if (strcmp(names[i], kv->name)) {
			v[k++] = (struct mk_xattr_kv){ names[i], p->value, p->value_len };
		}
	}
	if (!err) {
		v[k++] = *kv;
		err = mk_xattrs_intern(c, origin, v, k, out);
	}
	for (uint32_t i = 0; names && i < n; i++)
		free(names[i]);
	free(names);
	free(v);
	return err;
}

/* Out-of-line values already written: (hash, pair, ref). Linear: long values are rare. */
struct ool_value {
	uint64_t hash;
	const struct xpair *p;
	uint64_t ref;
};

struct ool_values {
	struct ool_value *v;
	size_t n, cap;
};

static int write_ool(struct meta_writer *kv, const struct xpair *p, struct ool_values *vals,
		     uint64_t *ref)
{
	uint64_t h = XXH3_64bits(p->value, p->value_len);
	for (size_t i = 0; i < vals->n; i++) {
		const struct ool_value *v = &vals->v[i];
		if (v->hash == h && v->p->value_len == p->value_len &&
		    !memcmp(v->p->value, p->value, p->value_len)) {
			*ref = v->ref;
			return 0;
		}
	}
	if (mem_grow(&vals->v, &vals->cap, vals->n + 1, sizeof(*vals->v), 0))
		return SQK_ENOMEM;
	*ref = meta_writer_ref(kv);
	vals->v[vals->n++] = (struct ool_value){ h, p, *ref };
	uint8_t sz[4];
	put_le32(sz, p->value_len);
	int err = meta_writer_append(kv, sz, 4);
	return err ? err : meta_writer_append(kv, p->value, p->value_len);
}

static int write_pair(struct meta_writer *kv, const struct xpair *p, bool ool, uint64_t ref)
{
	uint8_t hdr[4], vs[4], r[8];
	put_le16(hdr, (uint16_t)(p->prefix | (ool ? 0x100 : 0)));
	put_le16(hdr + 2, p->name_len);
	put_le32(vs, ool ? 8 : p->value_len);
	put_le64(r, ref);
	int err = meta_writer_append(kv, hdr, 4);
	if (!err)
		err = meta_writer_append(kv, p->name, p->name_len);
	if (!err)
		err = meta_writer_append(kv, vs, 4);
	if (!err)
		err = meta_writer_append(kv, ool ? r : p->value, ool ? 8 : p->value_len);
	return err;
}

/* Writes one set: its new out-of-line values first, then its pairs; appends its id entry. */
static int encode_set(const struct xset *s, struct meta_writer *kv, struct meta_writer *ids,
		      struct ool_values *vals)
{
	uint64_t *refs = calloc(s->n, sizeof(*refs));
	uint32_t size = 0;
	int err = refs ? 0 : SQK_ENOMEM;
	for (uint32_t i = 0; i < s->n && !err; i++)
		if (s->pairs[i].value_len >= SQK_XATTR_OOL_MIN)
			err = write_ool(kv, &s->pairs[i], vals, &refs[i]);
	uint64_t first = meta_writer_ref(kv);
	for (uint32_t i = 0; i < s->n && !err; i++) {
		const struct xpair *p = &s->pairs[i];
		err = write_pair(kv, p, p->value_len >= SQK_XATTR_OOL_MIN, refs[i]);
		size += (uint32_t)(strlen(xattr_prefix(p->prefix)) + p->name_len + 1 +
				   p->value_len);
	}
	free(refs);
	if (err)
		return err;
	uint8_t e[SQK_XATTR_ID_SIZE];
	struct xattr_id id = { .ref = first, .count = s->n, .size = size };
	xattr_id_encode(&id, e);
	return meta_writer_append(ids, e, sizeof(e));
}

int mk_xattrs_encode(struct mk_ctx *c, struct meta_writer *kv, struct meta_writer *ids)
{
	struct mk_xattrs *x = c->xattrs;
	struct ool_values vals = { 0 };
	int err = 0;
	for (uint32_t i = 0; i < x->nsets && !err; i++)
		err = encode_set(&x->sets[i], kv, ids, &vals);
	free(vals.v);
	if (!err)
		err = meta_writer_finish(kv);
	if (!err)
		err = meta_writer_finish(ids);
	return err ? mk_fail(c, err, "cannot encode xattr tables: %s", sqk_strerror(err)) : 0;
}
