/* SPDX-License-Identifier: BSD-2-Clause */
/* A Signature V4 signer of squashkit's own (see s3.h): the canonical request and the
 * signature. Tests check it against AWS's published example and use it to check what libcurl
 * sends. */
#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>

#include "sqk/error.h"
#include "common/bytes.h"
#include "s3.h"
#include "sbuf.h"

/* One header line, canonical: "name:value" with the name lower-cased and the value trimmed,
 * runs of blanks made one space. NULL on ENOMEM; *bad for a line without ':'. */
static char *canon_header(const char *line, bool *bad)
{
	const char *colon = strchr(line, ':'), *v;
	size_t o = 0, nl;
	char *out;
	bool blank = false;

	if (!colon || colon == line) {
		*bad = true;
		return NULL;
	}
	nl = (size_t)(colon - line);
	while (nl && (line[nl - 1] == ' ' || line[nl - 1] == '\t'))
		nl--;
	out = malloc(strlen(line) + 2);
	if (!out)
		return NULL;
	for (size_t i = 0; i < nl; i++)
		out[o++] = (char)tolower((unsigned char)line[i]);
	out[o++] = ':';
	for (v = colon + 1; *v == ' ' || *v == '\t'; v++)
		;
	for (; *v; v++) {
		if (*v == ' ' || *v == '\t') {
			blank = true;
			continue;
		}
		if (blank)
			out[o++] = ' ';
		blank = false;
		out[o++] = *v;
	}
	out[o] = '\0';
	return out;
}

/* A canonical header line and where it was given (one name's values keep their order). */
struct hline {
	char *s;
	size_t pos;
};

static int cmp_header(const void *a, const void *b)
{
	const struct hline *x = a, *y = b;
	size_t lx = strcspn(x->s, ":"), ly = strcspn(y->s, ":");
	int c = memcmp(x->s, y->s, lx < ly ? lx : ly);

	if (c)
		return c;
	if (lx != ly)
		return lx < ly ? -1 : 1;
	return x->pos < y->pos ? -1 : x->pos > y->pos;
}

/* The CanonicalHeaders and SignedHeaders parts: lines sorted by name, one name's values
 * joined by ','. */
static int canon_headers(const struct sigv4_req *r, struct sbuf *ch, struct sbuf *sh)
{
	struct hline *l = calloc(r->nheaders ? r->nheaders : 1, sizeof(*l));
	bool bad = false;
	int rc = 0;
	size_t i;

	if (!l)
		return SQK_ENOMEM;
	for (i = 0; i < r->nheaders && !rc; i++) {
		l[i].s = canon_header(r->headers[i], &bad);
		l[i].pos = i;
		rc = bad ? SQK_EINVAL : !l[i].s ? SQK_ENOMEM : 0;
	}
	if (!rc)
		qsort(l, r->nheaders, sizeof(*l), cmp_header);
	for (i = 0; i < r->nheaders && !rc; i++) {
		size_t nl = strcspn(l[i].s, ":");
		bool same = i > 0 && strcspn(l[i - 1].s, ":") == nl &&
			    !memcmp(l[i - 1].s, l[i].s, nl);

		if (same) {
			ch->len--; /* the previous line's '\n': one name's values join with ',' */
			sb_add(ch, ",");
			sb_add(ch, l[i].s + nl + 1);
		} else {
			sb_add(ch, l[i].s);
			if (i)
				sb_add(sh, ";");
			sb_addn(sh, l[i].s, nl);
		}
		sb_add(ch, "\n");
	}
	for (i = 0; i < r->nheaders; i++)
		free(l[i].s);
	free(l);
	return rc ? rc : ch->oom || sh->oom ? SQK_ENOMEM : 0;
}

static int cmp_param(const void *a, const void *b)
{
	const char *x = *(const char *const *)a, *y = *(const char *const *)b;
	size_t lx = strcspn(x, "="), ly = strcspn(y, "=");
	int c = memcmp(x, y, lx < ly ? lx : ly);

	if (c)
		return c;
	if (lx != ly)
		return lx < ly ? -1 : 1;
	return strcmp(x, y);
}

/* The CanonicalQueryString: the parameters (as sent, already encoded) sorted by name, then
 * value; a parameter without '=' gets an empty value. */
static int canon_query(const char *q, struct sbuf *out)
{
	char *copy, **p, *save = NULL, *t;
	size_t n = 0, i;

	if (!q || !*q)
		return 0;
	copy = strdup(q);
	p = calloc(strlen(q) / 2 + 2, sizeof(*p));
	if (!copy || !p) {
		free(copy);
		free(p);
		return SQK_ENOMEM;
	}
	for (t = strtok_r(copy, "&", &save); t; t = strtok_r(NULL, "&", &save))
		p[n++] = t;
	qsort(p, n, sizeof(*p), cmp_param);
	for (i = 0; i < n; i++) {
		if (i)
			sb_add(out, "&");
		sb_add(out, p[i]);
		if (!strchr(p[i], '='))
			sb_add(out, "=");
	}
	free(copy);
	free(p);
	return out->oom ? SQK_ENOMEM : 0;
}

/* Borrows r; caller frees *creq and *signed_hdrs. */
int sigv4_canonical(const struct sigv4_req *r, char **creq, char **signed_hdrs)
{
	struct sbuf c = { 0 }, ch = { 0 }, sh = { 0 };
	int rc;

	*creq = NULL;
	if (signed_hdrs)
		*signed_hdrs = NULL;
	sb_add(&c, r->method);
	sb_add(&c, "\n");
	sb_add(&c, r->uri && r->uri[0] ? r->uri : "/");
	sb_add(&c, "\n");
	rc = canon_query(r->query, &c);
	sb_add(&c, "\n");
	if (!rc)
		rc = canon_headers(r, &ch, &sh);
	if (!rc) {
		sb_add(&c, ch.p ? ch.p : "");
		sb_add(&c, "\n");
		sb_add(&c, sh.p ? sh.p : "");
		sb_add(&c, "\n");
		sb_add(&c, r->payload_hash);
	}
	free(ch.p);
	if (rc || c.oom) {
		free(c.p);
		free(sh.p);
		return rc ? rc : SQK_ENOMEM;
	}
	*creq = sb_take(&c);
	if (signed_hdrs)
		*signed_hdrs = sb_take(&sh);
	else
		free(sh.p);
	return *creq && (!signed_hdrs || *signed_hdrs) ? 0 : SQK_ENOMEM;
}

/* The lower-case hex of a 32-byte digest, NUL-terminated. */
static void hex32(const unsigned char *d, char out[65])
{
	bytes_hex(d, 32, out);
	out[64] = '\0';
}

/* out may be key. */
static void hmac(const void *key, size_t klen, const char *msg, unsigned char out[32])
{
	unsigned char d[EVP_MAX_MD_SIZE];
	unsigned int n = sizeof(d);

	HMAC(EVP_sha256(), key, (int)klen, (const unsigned char *)msg, strlen(msg), d, &n);
	memcpy(out, d, 32);
	OPENSSL_cleanse(d, sizeof(d));
}

/* The signing key: HMAC chain over "AWS4" + secret, date, region, service, "aws4_request". */
static int signing_key(const struct sigv4_req *r, const char *date, unsigned char k[32])
{
	size_t n = strlen(r->secret) + 5;
	char *s = malloc(n);

	if (!s)
		return SQK_ENOMEM;
	snprintf(s, n, "AWS4%s", r->secret);
	hmac(s, n - 1, date, k);
	OPENSSL_cleanse(s, n);
	free(s);
	hmac(k, 32, r->region, k);
	hmac(k, 32, r->service, k);
	hmac(k, 32, "aws4_request", k);
	return 0;
}

/* Borrows r; fills sig; caller frees *string_to_sign. */
int sigv4_sign(const struct sigv4_req *r, char sig[65], char **string_to_sign)
{
	unsigned char d[32], k[32];
	char date[9], hash[65], *creq = NULL, *sts = NULL;
	int rc;

	if (!r->amz_date || strlen(r->amz_date) != 16 || !r->secret)
		return SQK_EINVAL;
	rc = sigv4_canonical(r, &creq, NULL);
	if (rc)
		return rc;
	SHA256((const unsigned char *)creq, strlen(creq), d);
	free(creq);
	hex32(d, hash);
	memcpy(date, r->amz_date, 8);
	date[8] = '\0';
	if (asprintf(&sts, "AWS4-HMAC-SHA256\n%s\n%s/%s/%s/aws4_request\n%s", r->amz_date, date,
		     r->region, r->service, hash) < 0)
		return SQK_ENOMEM;
	if (signing_key(r, date, k)) {
		free(sts);
		return SQK_ENOMEM;
	}
	hmac(k, 32, sts, d);
	OPENSSL_cleanse(k, sizeof(k));
	hex32(d, sig);
	if (string_to_sign)
		*string_to_sign = sts;
	else
		free(sts);
	return 0;
}
