/* SPDX-License-Identifier: BSD-2-Clause */
/* s3:// URLs (see s3.h): the object's URL, its resolution with the region, endpoint and
 * credentials (s3_config.c), and the meaning of S3 error answers. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "sqk/error.h"
#include "s3.h"
#include "s3_internal.h"

/* ---- URLs ---- */

/* Borrows s. */
bool s3_is_url(const char *s)
{
	return s && !strncasecmp(s, "s3://", 5);
}

/* Borrows url; caller frees *bucket and *key. */
int s3_split(const char *url, char **bucket, char **key)
{
	const char *b, *slash;

	*bucket = *key = NULL;
	if (!s3_is_url(url))
		return SQK_EINVAL;
	b = url + 5;
	slash = strchr(b, '/');
	if (!slash || slash == b || !slash[1])
		return SQK_EINVAL;
	*bucket = strndup(b, (size_t)(slash - b));
	*key = strdup(slash + 1);
	if (!*bucket || !*key) {
		free(*bucket);
		free(*key);
		*bucket = *key = NULL;
		return SQK_ENOMEM;
	}
	return 0;
}

static bool unreserved(unsigned char c)
{
	return isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~';
}

/* Borrows s; caller frees. */
char *s3_uri_encode(const char *s, bool keep_slash)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t n = strlen(s), o = 0;
	char *out = malloc(3 * n + 1);

	if (!out)
		return NULL;
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (unreserved(*p) || (keep_slash && *p == '/')) {
			out[o++] = (char)*p;
		} else {
			out[o++] = '%';
			out[o++] = hex[*p >> 4];
			out[o++] = hex[*p & 15];
		}
	}
	out[o] = '\0';
	return out;
}

/* A bucket name usable as a host name label under s3.REGION.amazonaws.com (with TLS: no dots). */
static bool dns_bucket(const char *b)
{
	size_t n = strlen(b);

	if (n < 3 || n > 63 || b[0] == '-' || b[n - 1] == '-')
		return false;
	for (; *b; b++) {
		if (!(islower((unsigned char)*b) || isdigit((unsigned char)*b) || *b == '-'))
			return false;
	}
	return true;
}

/* Borrows the strings; caller frees *out. */
int s3_object_url(const char *endpoint, const char *region, const char *bucket,
		      const char *key, char **out)
{
	char *eb = s3_uri_encode(bucket, false), *ek = s3_uri_encode(key, true);
	int n = -1;

	*out = NULL;
	if (eb && ek) {
		if (endpoint)
			n = asprintf(out, "%s/%s/%s", endpoint, eb, ek);
		else if (dns_bucket(bucket))
			n = asprintf(out, "https://%s.s3.%s.amazonaws.com/%s", bucket, region, ek);
		else
			n = asprintf(out, "https://s3.%s.amazonaws.com/%s/%s", region, eb, ek);
	}
	free(eb);
	free(ek);
	if (n < 0) {
		*out = NULL;
		return SQK_ENOMEM;
	}
	return 0;
}

/* ---- resolution ---- */

/* NULL-safe. */
void s3_free(struct s3 *s)
{
	if (!s)
		return;
	s3_creds_clear(&s->creds);
	free(s->bucket);
	free(s->key);
	free(s->region);
	free(s->endpoint);
	free(s->url);
	free(s);
}

/* Borrows url and endpoint; caller owns *out. */
int s3_resolve(const char *url, const char *endpoint, bool no_sign, struct s3 **out,
		   char *msg, size_t cap)
{
	struct s3 *s = calloc(1, sizeof(*s));
	int rc;

	*out = NULL;
	if (!s)
		return SQK_ENOMEM;
	s->sign = !no_sign;
	rc = s3_split(url, &s->bucket, &s->key);
	if (rc == SQK_EINVAL)
		msgf(msg, cap, "not an s3://BUCKET/KEY URL (a bucket and an object key)");
	if (!rc)
		rc = s3_region(&s->region);
	if (!rc && strpbrk(s->region, ":/ \t")) {
		msgf(msg, cap, "the AWS region '%s' is not a region name", s->region);
		rc = SQK_EINVAL;
	}
	if (!rc)
		rc = s3_endpoint(endpoint, &s->endpoint, msg, cap);
	if (!rc)
		rc = s3_object_url(s->endpoint, s->region, s->bucket, s->key, &s->url);
	if (!rc && s->sign)
		rc = s3_credentials(&s->creds, msg, cap);
	if (!rc && snprintf(s->sigv4, sizeof(s->sigv4), "aws:amz:%s:s3", s->region) >=
			   (int)sizeof(s->sigv4)) {
		msgf(msg, cap, "the AWS region name is too long");
		rc = SQK_EINVAL;
	}
	if (rc) {
		s3_free(s);
		return rc;
	}
	*out = s;
	return 0;
}

/* ---- error answers ---- */

/* Borrows body. */
bool s3_xml_tag(const char *body, size_t len, const char *tag, char *out, size_t cap)
{
	size_t tl = strlen(tag), i, o = 0;
	const char *s = NULL, *e;

	if (!body || !cap)
		return false;
	for (i = 0; i + tl + 2 <= len; i++) {
		if (body[i] == '<' && !memcmp(body + i + 1, tag, tl) && body[i + tl + 1] == '>') {
			s = body + i + tl + 2;
			break;
		}
	}
	if (!s)
		return false;
	for (e = s; e < body + len && *e != '<'; e++)
		;
	if (e == body + len)
		return false;
	for (; s < e && o + 1 < cap; s++) {
		if (*s >= ' ' && *s < 127)
			out[o++] = *s;
	}
	out[o] = '\0';
	return true;
}

static bool code_is(const char *code, const char *what)
{
	return !strcmp(code, what);
}

/* What a refused (403) request means. */
static int explain_403(const struct s3 *s, const char *code, char *out, size_t cap)
{
	if (code_is(code, "RequestTimeTooSkewed")) {
		msgf(out, cap, "the clock of this machine is more than 15 minutes off the "
			       "server's: correct the system time");
		return SQK_EACCESS;
	}
	if (!s->sign)
		msgf(out, cap, "access denied to an unsigned request (--no-sign-request): the "
			       "bucket is not public");
	else
		msgf(out, cap, "access denied or signature mismatch: check credentials (%s)",
		     s->creds.source);
	return SQK_EACCESS;
}

/* Borrows everything; fills out. */
int s3_explain(const struct s3 *s, long status, const char *body, size_t len,
		   const char *hdr_region, char *out, size_t cap)
{
	char code[64] = "", region[64] = "", head[96], tail[256] = "";
	int rc = SQK_EIO;

	s3_xml_tag(body, len, "Code", code, sizeof(code));
	if (hdr_region && hdr_region[0])
		snprintf(region, sizeof(region), "%s", hdr_region);
	else
		s3_xml_tag(body, len, "Region", region, sizeof(region));
	snprintf(head, sizeof(head), "HTTP status %ld%s%s%s", status, code[0] ? " (" : "", code,
		 code[0] ? ")" : "");
	if (region[0] && strcmp(region, s->region) && status != 404) {
		msgf(tail, sizeof(tail), "the bucket is in region %s, not %s: set AWS_REGION=%s",
		     region, s->region, region);
		rc = SQK_EINVAL;
	} else if (status == 301 || status == 307 ||
		   code_is(code, "AuthorizationHeaderMalformed")) {
		msgf(tail, sizeof(tail), "the bucket is in another region or behind another "
					 "endpoint: set AWS_REGION or the S3 endpoint");
		rc = SQK_EINVAL;
	} else if (status == 403) {
		rc = explain_403(s, code, tail, sizeof(tail));
	} else if (status == 404) {
		if (code_is(code, "NoSuchBucket"))
			msgf(tail, sizeof(tail), "no such object: there is no bucket '%s'",
			     s->bucket);
		else
			msgf(tail, sizeof(tail), "no such object");
		rc = SQK_ENOENT;
	}
	msgf(out, cap, "%s%s%s", head, tail[0] ? ": " : "", tail);
	return rc;
}
