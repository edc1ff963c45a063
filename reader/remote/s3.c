/* SPDX-License-Identifier: BSD-2-Clause */
/* s3:// URLs (see s3.h): resolution of the object's URL, region, endpoint and credentials as
 * the AWS CLI does it, a Signature V4 signer, and the meaning of S3 error answers. */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>

#include "sqk/error.h"
#include "common/bytes.h"
#include "common/grow.h"
#include "s3.h"

/* ---- a growing string ---- */

struct sbuf {
	char *p;
	size_t len, cap;
	bool oom;
};

static void sb_addn(struct sbuf *b, const char *s, size_t n)
{
	if (b->oom)
		return;
	if (n > SIZE_MAX - b->len - 1 ||
	    sqk_grow(&b->p, &b->cap, b->len + n + 1 < 256 ? 256 : b->len + n + 1, 1, 0)) {
		b->oom = true;
		return;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}

static void sb_add(struct sbuf *b, const char *s)
{
	sb_addn(b, s, strlen(s));
}

/* The string (caller frees), or NULL after an allocation failure. */
static char *sb_take(struct sbuf *b)
{
	if (b->oom || !b->p) {
		free(b->p);
		return b->oom ? NULL : strdup("");
	}
	return b->p;
}

static void msgf(char *msg, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void msgf(char *msg, size_t cap, const char *fmt, ...)
{
	va_list ap;

	if (!msg || !cap)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, cap, fmt, ap);
	va_end(ap);
}

/* An environment variable, NULL when unset or empty. */
static const char *env(const char *name)
{
	const char *v = getenv(name);

	return v && v[0] ? v : NULL;
}

/* ---- URLs ---- */

/* Borrows s. */
bool sqk_s3_is_url(const char *s)
{
	return s && !strncasecmp(s, "s3://", 5);
}

/* Borrows url; caller frees *bucket and *key. */
int sqk_s3_split(const char *url, char **bucket, char **key)
{
	const char *b, *slash;

	*bucket = *key = NULL;
	if (!sqk_s3_is_url(url))
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
char *sqk_s3_uri_encode(const char *s, bool keep_slash)
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
int sqk_s3_object_url(const char *endpoint, const char *region, const char *bucket,
		      const char *key, char **out)
{
	char *eb = sqk_s3_uri_encode(bucket, false), *ek = sqk_s3_uri_encode(key, true);
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

/* ---- the shared credentials and config files ---- */

static char *trim(char *s)
{
	char *e;

	while (*s == ' ' || *s == '\t')
		s++;
	e = s + strlen(s);
	while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r' || e[-1] == '\n'))
		*--e = '\0';
	return s;
}

/* A "[name]" line: whether it names section. */
static bool section_is(char *line, const char *section)
{
	char *end = strrchr(line, ']');

	if (!end)
		return false;
	*end = '\0';
	return !strcmp(trim(line + 1), section);
}

/* A "key = value" line of the current section: the value when it is key's (caller frees). */
static int key_line(char *line, const char *key, char **out)
{
	char *eq = strchr(line, '=');

	if (!eq)
		return SQK_ENOENT;
	*eq = '\0';
	if (strcasecmp(trim(line), key))
		return SQK_ENOENT;
	*out = strdup(trim(eq + 1));
	return *out ? 0 : SQK_ENOMEM;
}

/* Borrows path, section and key; caller frees *out. */
int sqk_s3_ini_get(const char *path, const char *section, const char *key, char **out)
{
	FILE *f = fopen(path, "re");
	char *line = NULL;
	size_t cap = 0;
	bool in = false;
	int rc = SQK_ENOENT;

	*out = NULL;
	if (!f)
		return SQK_ENOENT;
	while (rc == SQK_ENOENT && getline(&line, &cap, f) >= 0) {
		char *t = trim(line);

		if (!*t || *t == '#' || *t == ';')
			continue;
		if (*t == '[')
			in = section_is(t, section);
		else if (in && line[0] != ' ' && line[0] != '\t') /* indented: a nested setting */
			rc = key_line(t, key, out);
	}
	free(line);
	fclose(f);
	return rc;
}

/* The file named by $var (a leading ~/ is the home folder), else ~/.aws/name. Caller frees;
 * NULL when neither is known (or ENOMEM). */
static char *aws_file(const char *var, const char *name)
{
	const char *v = env(var), *home = env("HOME");
	char *p = NULL;

	if (v && strncmp(v, "~/", 2))
		return strdup(v);
	if (!home)
		return NULL;
	if (asprintf(&p, "%s/%s%s", home, v ? "" : ".aws/", v ? v + 2 : name) < 0)
		return NULL;
	return p;
}

static const char *profile_name(void)
{
	const char *p = env("AWS_PROFILE");

	return p ? p : env("AWS_DEFAULT_PROFILE") ? env("AWS_DEFAULT_PROFILE") : "default";
}

/* `key` of the profile in the config file, whose sections are [default] and [profile NAME]. */
static int config_get(const char *key, char **out, char *file, size_t cap)
{
	const char *prof = profile_name();
	char *path = aws_file("AWS_CONFIG_FILE", "config"), *sect = NULL;
	int rc = SQK_ENOENT;

	*out = NULL;
	if (!path)
		return SQK_ENOENT;
	if (file)
		snprintf(file, cap, "%s", path);
	if (!strcmp(prof, "default"))
		rc = sqk_s3_ini_get(path, "default", key, out);
	if (rc == SQK_ENOENT && asprintf(&sect, "profile %s", prof) >= 0)
		rc = sqk_s3_ini_get(path, sect, key, out);
	free(sect);
	free(path);
	return rc;
}

/* Caller frees *out. */
int sqk_s3_region(char **out)
{
	const char *v = env("AWS_REGION");
	int rc;

	if (!v)
		v = env("AWS_DEFAULT_REGION");
	if (v) {
		*out = strdup(v);
		return *out ? 0 : SQK_ENOMEM;
	}
	rc = config_get("region", out, NULL, 0);
	if (rc == 0 && !**out) {
		free(*out);
		rc = SQK_ENOENT;
	}
	if (rc != SQK_ENOENT)
		return rc;
	*out = strdup(SQK_S3_DEFAULT_REGION);
	return *out ? 0 : SQK_ENOMEM;
}

/* Borrows endpoint; caller frees *out. */
int sqk_s3_endpoint(const char *endpoint, char **out, char *msg, size_t cap)
{
	const char *e = endpoint ? endpoint : env("AWS_ENDPOINT_URL_S3");
	const char *from = endpoint ? "the S3 endpoint" : "$AWS_ENDPOINT_URL_S3";
	size_t n;

	*out = NULL;
	if (!e) {
		e = env("AWS_ENDPOINT_URL");
		from = "$AWS_ENDPOINT_URL";
	}
	if (!e)
		return 0;
	if ((strncasecmp(e, "http://", 7) && strncasecmp(e, "https://", 8)) ||
	    strpbrk(e, "?# \t")) {
		msgf(msg, cap, "%s is not an http:// or https:// URL without query", from);
		return SQK_EINVAL;
	}
	n = strlen(e);
	while (n && e[n - 1] == '/')
		n--;
	*out = strndup(e, n);
	return *out ? 0 : SQK_ENOMEM;
}

/* NULL-safe. */
void sqk_s3_creds_clear(struct sqk_s3_creds *c)
{
	char **f[] = { &c->access_key, &c->secret_key, &c->token };

	if (!c)
		return;
	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
		if (*f[i]) {
			OPENSSL_cleanse(*f[i], strlen(*f[i]));
			free(*f[i]);
			*f[i] = NULL;
		}
	}
}

static int dup_or_null(const char *v, char **out)
{
	*out = v ? strdup(v) : NULL;
	return v && !*out ? SQK_ENOMEM : 0;
}

/* From the environment: 0, SQK_ENOENT (none), SQK_EACCESS (only one of the two). */
static int creds_env(struct sqk_s3_creds *c, char *msg, size_t cap)
{
	const char *id = env("AWS_ACCESS_KEY_ID"), *sk = env("AWS_SECRET_ACCESS_KEY");
	const char *tok = env("AWS_SESSION_TOKEN") ? env("AWS_SESSION_TOKEN")
						   : env("AWS_SECURITY_TOKEN");

	if (!id && !sk)
		return SQK_ENOENT;
	if (!id || !sk) {
		msgf(msg, cap, "partial AWS credentials in the environment: %s is not set",
		     id ? "AWS_SECRET_ACCESS_KEY" : "AWS_ACCESS_KEY_ID");
		return SQK_EACCESS;
	}
	snprintf(c->source, sizeof(c->source), "from AWS_ACCESS_KEY_ID");
	if (dup_or_null(id, &c->access_key) || dup_or_null(sk, &c->secret_key) ||
	    dup_or_null(tok, &c->token))
		return SQK_ENOMEM;
	return 0;
}

/* The three keys of one section of one file: 0, SQK_ENOENT, SQK_EACCESS (partial). */
static int creds_file(struct sqk_s3_creds *c, const char *path, const char *sect, char *msg,
		      size_t cap)
{
	const char *prof = profile_name();
	int a, b, t;

	a = sqk_s3_ini_get(path, sect, "aws_access_key_id", &c->access_key);
	b = sqk_s3_ini_get(path, sect, "aws_secret_access_key", &c->secret_key);
	t = sqk_s3_ini_get(path, sect, "aws_session_token", &c->token);
	if (a == SQK_ENOMEM || b == SQK_ENOMEM || t == SQK_ENOMEM)
		return SQK_ENOMEM;
	if (a && b)
		return SQK_ENOENT;
	if (a || b || !c->access_key[0] || !c->secret_key[0]) {
		msgf(msg, cap, "partial AWS credentials in profile '%s' of %s: %s is missing", prof,
		     path, a || !c->access_key[0] ? "aws_access_key_id" : "aws_secret_access_key");
		return SQK_EACCESS;
	}
	if (c->token && !c->token[0]) {
		free(c->token);
		c->token = NULL;
	}
	snprintf(c->source, sizeof(c->source), "from profile '%s' of %s", prof, path);
	return 0;
}

/* The profile in the shared credentials file ([NAME]), else in the config file. */
static int creds_profile(struct sqk_s3_creds *c, char *msg, size_t cap, char *cred_path,
			 char *conf_path, size_t pcap)
{
	const char *prof = profile_name();
	char *path = aws_file("AWS_SHARED_CREDENTIALS_FILE", "credentials"), *sect = NULL;
	int rc = SQK_ENOENT;

	snprintf(cred_path, pcap, "%s", path ? path : "~/.aws/credentials");
	if (path)
		rc = creds_file(c, path, prof, msg, cap);
	free(path);
	if (rc != SQK_ENOENT)
		return rc;
	sqk_s3_creds_clear(c);
	path = aws_file("AWS_CONFIG_FILE", "config");
	snprintf(conf_path, pcap, "%s", path ? path : "~/.aws/config");
	if (path && !strcmp(prof, "default"))
		rc = creds_file(c, path, "default", msg, cap);
	if (path && rc == SQK_ENOENT && asprintf(&sect, "profile %s", prof) >= 0)
		rc = creds_file(c, path, sect, msg, cap);
	free(sect);
	free(path);
	if (rc == SQK_ENOENT)
		sqk_s3_creds_clear(c);
	return rc;
}

/* Caller owns *out (sqk_s3_creds_clear), also after a failure. */
int sqk_s3_credentials(struct sqk_s3_creds *out, char *msg, size_t cap)
{
	char cred[1024] = "", conf[1024] = "";
	int rc;

	memset(out, 0, sizeof(*out));
	rc = creds_env(out, msg, cap);
	if (rc == SQK_ENOENT)
		rc = creds_profile(out, msg, cap, cred, conf, sizeof(cred));
	if (rc == SQK_ENOENT) {
		msgf(msg, cap,
		     "no AWS credentials found: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are "
		     "not set and profile '%s' has none in %s or %s (use --no-sign-request for a "
		     "public bucket)", profile_name(), cred, conf);
		rc = SQK_EACCESS;
	}
	if (rc)
		sqk_s3_creds_clear(out);
	return rc;
}

/* ---- resolution ---- */

/* NULL-safe. */
void sqk_s3_free(struct sqk_s3 *s)
{
	if (!s)
		return;
	sqk_s3_creds_clear(&s->creds);
	free(s->bucket);
	free(s->key);
	free(s->region);
	free(s->endpoint);
	free(s->url);
	free(s);
}

/* Borrows url and endpoint; caller owns *out. */
int sqk_s3_resolve(const char *url, const char *endpoint, bool no_sign, struct sqk_s3 **out,
		   char *msg, size_t cap)
{
	struct sqk_s3 *s = calloc(1, sizeof(*s));
	int rc;

	*out = NULL;
	if (!s)
		return SQK_ENOMEM;
	s->sign = !no_sign;
	rc = sqk_s3_split(url, &s->bucket, &s->key);
	if (rc == SQK_EINVAL)
		msgf(msg, cap, "not an s3://BUCKET/KEY URL (a bucket and an object key)");
	if (!rc)
		rc = sqk_s3_region(&s->region);
	if (!rc && strpbrk(s->region, ":/ \t")) {
		msgf(msg, cap, "the AWS region '%s' is not a region name", s->region);
		rc = SQK_EINVAL;
	}
	if (!rc)
		rc = sqk_s3_endpoint(endpoint, &s->endpoint, msg, cap);
	if (!rc)
		rc = sqk_s3_object_url(s->endpoint, s->region, s->bucket, s->key, &s->url);
	if (!rc && s->sign)
		rc = sqk_s3_credentials(&s->creds, msg, cap);
	if (!rc && snprintf(s->sigv4, sizeof(s->sigv4), "aws:amz:%s:s3", s->region) >=
			   (int)sizeof(s->sigv4)) {
		msgf(msg, cap, "the AWS region name is too long");
		rc = SQK_EINVAL;
	}
	if (rc) {
		sqk_s3_free(s);
		return rc;
	}
	*out = s;
	return 0;
}

/* ---- error answers ---- */

/* Borrows body. */
bool sqk_s3_xml_tag(const char *body, size_t len, const char *tag, char *out, size_t cap)
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
static int explain_403(const struct sqk_s3 *s, const char *code, char *out, size_t cap)
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
int sqk_s3_explain(const struct sqk_s3 *s, long status, const char *body, size_t len,
		   const char *hdr_region, char *out, size_t cap)
{
	char code[64] = "", region[64] = "", head[96], tail[256] = "";
	int rc = SQK_EIO;

	sqk_s3_xml_tag(body, len, "Code", code, sizeof(code));
	if (hdr_region && hdr_region[0])
		snprintf(region, sizeof(region), "%s", hdr_region);
	else
		sqk_s3_xml_tag(body, len, "Region", region, sizeof(region));
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

/* ---- Signature V4 ---- */

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
static int canon_headers(const struct sqk_sigv4_req *r, struct sbuf *ch, struct sbuf *sh)
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
int sqk_sigv4_canonical(const struct sqk_sigv4_req *r, char **creq, char **signed_hdrs)
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
static int signing_key(const struct sqk_sigv4_req *r, const char *date, unsigned char k[32])
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
int sqk_sigv4_sign(const struct sqk_sigv4_req *r, char sig[65], char **string_to_sign)
{
	unsigned char d[32], k[32];
	char date[9], hash[65], *creq = NULL, *sts = NULL;
	int rc;

	if (!r->amz_date || strlen(r->amz_date) != 16 || !r->secret)
		return SQK_EINVAL;
	rc = sqk_sigv4_canonical(r, &creq, NULL);
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
