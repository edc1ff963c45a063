/* SPDX-License-Identifier: BSD-2-Clause */
/* The x pseudo definition (PATH x NAME=VALUE): an xattr added to (or replacing one of) an
 * entry's, with mksquashfs's -xattrs-add value forms (xattr_value.h). */
#include <stdlib.h>
#include <string.h>

#include "sqk/error.h"
#include "attrs.h"
#include "pseudo_int.h"
#include "source.h"
#include "tree.h"
#include "xattr_value.h"

/* NAME=VALUE into kv, the value decoded into buf (strlen(def) bytes); *bad: what is wrong. */
static int parse_kv(const char *def, char *name, uint8_t *buf, struct mk_xattr_kv *kv,
		    const char **bad)
{
	const char *eq = strchr(def, '=');
	if (!eq || eq == def || !eq[1]) {
		*bad = !eq ? "no '=' in NAME=VALUE" : eq == def ? "empty NAME" : "empty VALUE";
		return -1;
	}
	memcpy(name, def, (size_t)(eq - def));
	name[eq - def] = 0;
	size_t n = 0;
	int r = mk_xattr_value(eq + 1, buf, &n, bad);
	if (!r && !mk_xattr_name_ok(name, strlen(name))) {
		*bad = "NAME must start with user., trusted. or security.";
		r = -1;
	}
	*kv = (struct mk_xattr_kv){ .name = name, .value = buf, .size = n };
	return r;
}

/* Runs parse_kv on d's definition; calls then with kv (0 when it is NULL). */
static int with_kv(struct mk_ctx *c, const struct pdef *d, int (*then)(struct mk_ctx *c,
		   const struct pdef *d, const struct mk_xattr_kv *kv))
{
	size_t len = strlen(d->target) + 1;
	char *name = malloc(len);
	uint8_t *buf = malloc(len);
	struct mk_xattr_kv kv;
	const char *bad = NULL;
	int err = !name || !buf ? mk_fail(c, SQK_ENOMEM, "out of memory") :
		  parse_kv(d->target, name, buf, &kv, &bad) ? pseudo_err(c, d, "%s", bad) :
		  then ? then(c, d, &kv) : 0;
	free(name);
	free(buf);
	return err;
}

int pseudo_xattr_check(struct mk_ctx *c, const struct pdef *d)
{
	return with_kv(c, d, NULL);
}

static int add_kv(struct mk_ctx *c, const struct pdef *d, const struct mk_xattr_kv *kv)
{
	struct mk_node *n = mk_tree_find(c, d->path);
	if (!n)
		return pseudo_err(c, d, "'%s' is not in the image", d->path);
	if (c->opt->no_xattrs)
		return 0;
	return mk_xattrs_add_one(c, d->where, n->xattr_idx, kv, &n->xattr_idx);
}

int pseudo_xattr_apply(struct mk_ctx *c, const struct pdef *d)
{
	return with_kv(c, d, add_kv);
}
