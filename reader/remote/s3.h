/* SPDX-License-Identifier: BSD-2-Clause */
/* s3:// URLs for remote images. An s3://BUCKET/KEY URL is resolved, as the AWS CLI does it, to
 * the object's URL (path-style ENDPOINT/BUCKET/KEY when an endpoint is given, virtual-hosted
 * https://BUCKET.s3.REGION.amazonaws.com/KEY for AWS itself), the region and the credentials
 * (environment, then the shared credentials and config files); the transfers sign each request
 * with libcurl's AWS Signature V4 (http_fetch.c). s3.c resolves URLs and turns S3 error
 * answers into messages, s3_config.c reads the environment and the AWS files, sigv4.c is a
 * SigV4 signer of squashkit's own (tests check it against AWS's published example and use it
 * to check what libcurl sends). Nothing here ever prints a secret. */
#ifndef SQK_S3_H
#define SQK_S3_H

#include <stdbool.h>
#include <stddef.h>

#define SQK_S3_DEFAULT_REGION "us-east-1"
#define SQK_S3_UNSIGNED_PAYLOAD "UNSIGNED-PAYLOAD"

struct s3_creds {
	char *access_key;        /* AWS access key id */
	char *secret_key;
	char *token;             /* session token, or NULL */
	char source[160];        /* where they came from, for messages (never the values) */
};

/* One object and how to reach it. */
struct s3 {
	char *bucket, *key;      /* from the URL, as given (the key is not percent-decoded) */
	char *region;
	char *endpoint;          /* without trailing '/'; NULL = AWS */
	char *url;               /* the object's URL (no secrets) */
	bool sign;               /* false: unsigned requests (public buckets) */
	struct s3_creds creds;
	char sigv4[96];          /* "aws:amz:REGION:s3" for CURLOPT_AWS_SIGV4 */
};

/* True when s starts with s3:// (case-insensitive). Borrows s. */
bool s3_is_url(const char *s);

/* Splits s3://BUCKET/KEY into *bucket and *key (caller frees both). SQK_EINVAL when the URL has
 * no bucket or no key. Borrows url. */
int s3_split(const char *url, char **bucket, char **key);

/* s percent-encoded as S3 wants it: every byte but A-Za-z0-9 -._~ (and '/' when keep_slash) as
 * %XX (upper-case hex). Caller frees; NULL on ENOMEM. Borrows s. */
char *s3_uri_encode(const char *s, bool keep_slash);

/* The object's URL: ENDPOINT/BUCKET/KEY (endpoint given), https://BUCKET.s3.REGION.amazonaws.com
 * /KEY (AWS; https://s3.REGION.amazonaws.com/BUCKET/KEY for a bucket name that is not a DNS
 * label). Caller frees *out. Borrows everything else. */
int s3_object_url(const char *endpoint, const char *region, const char *bucket,
		      const char *key, char **out);

/* The value of key (case-insensitive) in [section] of the INI file at path (AWS credentials or
 * config format; indented sub-settings are skipped). Caller frees *out. SQK_ENOENT when the
 * file, section or key is absent; SQK_ENOMEM. Borrows the rest. */
int s3_ini_get(const char *path, const char *section, const char *key, char **out);

/* The region: $AWS_REGION, $AWS_DEFAULT_REGION, `region` of the profile in the config file, else
 * us-east-1. Caller frees *out. */
int s3_region(char **out);

/* The endpoint: endpoint (borrowed) when not NULL, else $AWS_ENDPOINT_URL_S3, else
 * $AWS_ENDPOINT_URL, else none (*out = NULL). Caller frees *out. SQK_EINVAL (msg says why) for
 * one that is not an http:// or https:// URL without query. */
int s3_endpoint(const char *endpoint, char **out, char *msg, size_t cap);

/* The credentials: $AWS_ACCESS_KEY_ID + $AWS_SECRET_ACCESS_KEY (+ $AWS_SESSION_TOKEN), else the
 * profile ($AWS_PROFILE, default "default") of the shared credentials file
 * ($AWS_SHARED_CREDENTIALS_FILE, ~/.aws/credentials), else of the config file ($AWS_CONFIG_FILE,
 * ~/.aws/config). Caller owns *out (s3_creds_clear). SQK_EACCESS (msg says what was looked
 * at) when none or only part are found; SQK_ENOMEM. */
int s3_credentials(struct s3_creds *out, char *msg, size_t cap);

/* Wipes and frees the secrets; NULL-safe. */
void s3_creds_clear(struct s3_creds *c);

/* Resolves url (s3://BUCKET/KEY) with endpoint (NULL = from the environment) into *out, with
 * credentials unless no_sign. Caller owns *out (s3_free). On failure msg holds a one-line
 * reason (no secrets): SQK_EINVAL (bad URL or endpoint), SQK_EACCESS (no credentials). */
int s3_resolve(const char *url, const char *endpoint, bool no_sign, struct s3 **out,
		   char *msg, size_t cap);

/* NULL-safe; wipes the secrets. */
void s3_free(struct s3 *s);

/* The text of the first <tag>...</tag> of an XML body (printable ASCII kept, cut to cap - 1):
 * true when found. Borrows body (need not be NUL-terminated). */
bool s3_xml_tag(const char *body, size_t len, const char *tag, char *out, size_t cap);

/* One line saying what a failed answer means (status, the S3 error Code of the body, the region
 * of an x-amz-bucket-region header, NULL when none), for messages; returns the SQK_E* code for
 * it: SQK_EACCESS (403), SQK_ENOENT (404), SQK_EINVAL (wrong region), else SQK_EIO. */
int s3_explain(const struct s3 *s, long status, const char *body, size_t len,
		   const char *hdr_region, char *out, size_t cap);

/* A request to sign with Signature V4; everything borrowed. */
struct sigv4_req {
	const char *method;          /* "GET" */
	const char *uri;             /* the path as sent (already URI-encoded) */
	const char *query;           /* the query as sent, without '?'; NULL or "" = none */
	const char *const *headers;  /* "Name: value" lines, all signed */
	size_t nheaders;
	const char *payload_hash;    /* hex SHA-256 of the body, or UNSIGNED-PAYLOAD */
	const char *amz_date;        /* YYYYMMDDTHHMMSSZ (its first 8 characters: the scope date) */
	const char *region, *service;
	const char *secret;
};

/* The canonical request of r (*creq) and its SignedHeaders list (*signed_hdrs, may be NULL to
 * skip): headers lower-cased, trimmed, sorted and merged; the query sorted. Caller frees.
 * SQK_EINVAL for a header line without ':'; SQK_ENOMEM. */
int sigv4_canonical(const struct sigv4_req *r, char **creq, char **signed_hdrs);

/* The signature of r as 64 hex digits (and, when string_to_sign is not NULL, the string signed,
 * which the caller frees). 0, SQK_EINVAL or SQK_ENOMEM. */
int sigv4_sign(const struct sigv4_req *r, char sig[65], char **string_to_sign);

#endif
