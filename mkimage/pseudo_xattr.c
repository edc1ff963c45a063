/* SPDX-License-Identifier: BSD-2-Clause */
/* The x pseudo definition (PATH x NAME=VALUE): an xattr added to (or replacing one of) an
 * entry's, with mksquashfs's -xattrs-add value forms: plain bytes, 0t text with \ooo escapes,
 * 0x hexadecimal, 0s base64 (OpenSSL's decoder). */
#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>

#include "sqk/error.h"
#include "attrs.h"
#include "pseudo_int.h"
#include "source.h"
#include "tree.h"

static int hexval(char h)
{
	return h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10 :
	       h >= 'A' && h <= 'F' ? h - 'A' + 10 : -1;
}

static int decode_hex(const char *s, uint8_t *out, size_t *n)
{
	size_t len = strlen(s);
	if (!len || len % 2)
		return -1;
	for (size_t i = 0; i < len; i += 2) {
		int a = hexval(s[i]), b = hexval(s[i + 1]);
		if (a < 0 || b < 0)
			return -1;
		out[i / 2] = (uint8_t)(a << 4 | b);
	}
	*n = len / 2;
	return 0;
}

static int decode_text(const char *s, uint8_t *out, size_t *n)
{
	size_t o = 0;
	for (; *s; s++) {
		if (*s != '\\') {
			out[o++] = (uint8_t)*s;
			continue;
		}
		unsigned v = 0;
		for (int i = 1; i <= 3; i++) {
			if (s[i] < '0' || s[i] > '7')
				return -1;
			v = v << 3 | (unsigned)(s[i] - '0');
		}
		if (v > 255)
			return -1;
		out[o++] = (uint8_t)v;
		s += 3;
	}
	*n = o;
	return 0;
}

static int decode_b64(const char *s, uint8_t *out, size_t *n)
{
	size_t len = strlen(s);
	if (!len || len % 4 || len > INT32_MAX)
		return -1;
	int r = EVP_DecodeBlock(out, (const unsigned char *)s, (int)len);
	if (r < 0)
		return -1;
	size_t pad = s[len - 1] == '=' ? (s[len - 2] == '=' ? 2 : 1) : 0;
	*n = (size_t)r - pad;
	return 0;
}

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
	const char *v = eq + 1;
	size_t n = strlen(v);
	int r = 0;
	if (n > 2 && v[0] == '0' && (v[1] == 's' || v[1] == 'S'))
		r = decode_b64(v + 2, buf, &n), *bad = "bad base64 VALUE";
	else if (n > 2 && v[0] == '0' && (v[1] == 'x' || v[1] == 'X'))
		r = decode_hex(v + 2, buf, &n), *bad = "bad hexadecimal VALUE";
	else if (n > 2 && v[0] == '0' && (v[1] == 't' || v[1] == 'T'))
		r = decode_text(v + 2, buf, &n), *bad = "bad \\ooo escape in the VALUE";
	else
		memcpy(buf, v, n);
	static const char *const ns[] = { "user.", "trusted.", "security." };
	bool known = false;
	for (size_t i = 0; i < sizeof(ns) / sizeof(ns[0]); i++)
		known |= !strncmp(name, ns[i], strlen(ns[i])) && name[strlen(ns[i])];
	if (!r && !known) {
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
