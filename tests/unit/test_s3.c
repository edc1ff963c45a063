/* SPDX-License-Identifier: BSD-2-Clause */
/* Unit tests of s3:// support (common/s3.c): the Signature V4 signer against AWS's published
 * GET Object example, canonical headers and query; URI encoding of keys; URL building (path and
 * virtual-hosted style); credentials, region and endpoint resolved from the environment and the
 * shared files, with their precedence; S3 error documents turned into messages. Last, the real
 * transfer code against a server thread here: what libcurl signs for sqk_io_http_create() on an
 * s3:// URL checks out with the signer of s3.c, and the answer's error document is named. The
 * whole path against real servers is tests/integration/t_88_s3.sh. */
#include <check.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sqk/error.h"
#include "reader/remote/s3.h"
#include "sqk/remote.h"
#include "testutil.h"

#define EMPTY_SHA "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
#define EX_SECRET "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"

static char home[256];

/* Every AWS_* variable this code reads unset, HOME an empty folder of this test's own. */
static void clean_env(void)
{
	static const char *const vars[] = {
		"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
		"AWS_SECURITY_TOKEN", "AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_REGION",
		"AWS_DEFAULT_REGION", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3",
		"AWS_SHARED_CREDENTIALS_FILE", "AWS_CONFIG_FILE",
	};
	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
		unsetenv(vars[i]);
	snprintf(home, sizeof(home), "/tmp/sqk-test-s3.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(home));
	setenv("HOME", home, 1);
}

static void write_file(const char *rel, const char *text)
{
	char p[512];
	FILE *f;

	snprintf(p, sizeof(p), "%s/.aws", home);
	mkdir(p, 0700);
	snprintf(p, sizeof(p), "%s/%s", home, rel);
	f = fopen(p, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	fclose(f);
}

static void rm_home(void)
{
	char cmd[600];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", home);
	ck_assert_int_eq(system(cmd), 0);
}

/* ---- Signature V4 ---- */

/* AWS S3 API reference, "Signature Calculations for the Authorization Header: Transferring
 * Payload in a Single Chunk", example "GET Object": its string to sign and signature. */
START_TEST(test_sigv4_aws_example)
{
	static const char *const hdrs[] = {
		"Host: examplebucket.s3.amazonaws.com",
		"Range: bytes=0-9",
		("x-amz-content-sha256:" EMPTY_SHA),
		"x-amz-date: 20130524T000000Z",
	};
	struct sigv4_req r = {
		.method = "GET", .uri = "/test.txt", .headers = hdrs, .nheaders = 4,
		.payload_hash = EMPTY_SHA, .amz_date = "20130524T000000Z", .region = "us-east-1",
		.service = "s3", .secret = EX_SECRET,
	};
	char sig[65], *sts = NULL, *creq = NULL, *sh = NULL;

	ck_assert_int_eq(sigv4_canonical(&r, &creq, &sh), 0);
	ck_assert_str_eq(creq, "GET\n/test.txt\n\nhost:examplebucket.s3.amazonaws.com\n"
			       "range:bytes=0-9\nx-amz-content-sha256:" EMPTY_SHA "\n"
			       "x-amz-date:20130524T000000Z\n\n"
			       "host;range;x-amz-content-sha256;x-amz-date\n" EMPTY_SHA);
	ck_assert_str_eq(sh, "host;range;x-amz-content-sha256;x-amz-date");
	ck_assert_int_eq(sigv4_sign(&r, sig, &sts), 0);
	ck_assert_str_eq(sts, "AWS4-HMAC-SHA256\n20130524T000000Z\n"
			      "20130524/us-east-1/s3/aws4_request\n"
			      "7344ae5b7ee6c3e7e6b0fe0640412a37625d1fbfff95c48bbb2dc43964946972");
	ck_assert_str_eq(sig, "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
	free(sts);
	free(creq);
	free(sh);
}
END_TEST

/* Header order, case and blanks do not change the signature; another secret, date or region
 * does. */
START_TEST(test_sigv4_canonical_forms)
{
	static const char *const messy[] = {
		"X-Amz-Date:20130524T000000Z",
		"range:   bytes=0-9  ",
		"HOST:examplebucket.s3.amazonaws.com",
		("X-AMZ-Content-SHA256 : " EMPTY_SHA),
	};
	struct sigv4_req r = {
		.method = "GET", .uri = "/test.txt", .headers = messy, .nheaders = 4,
		.payload_hash = EMPTY_SHA, .amz_date = "20130524T000000Z", .region = "us-east-1",
		.service = "s3", .secret = EX_SECRET,
	};
	char sig[65];

	ck_assert_int_eq(sigv4_sign(&r, sig, NULL), 0);
	ck_assert_str_eq(sig, "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
	r.secret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEz";
	ck_assert_int_eq(sigv4_sign(&r, sig, NULL), 0);
	ck_assert_str_ne(sig, "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
	r.secret = EX_SECRET;
	r.region = "eu-west-1";
	ck_assert_int_eq(sigv4_sign(&r, sig, NULL), 0);
	ck_assert_str_ne(sig, "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
	r.amz_date = "2013";
	ck_assert_int_eq(sigv4_sign(&r, sig, NULL), SQK_EINVAL);
}
END_TEST

/* The query is sorted by name then value (a bare name gets '='); one name's header values are
 * joined with ',' in the order given; a runs of blanks inside a value become one space; a line
 * without ':' is refused. */
START_TEST(test_sigv4_query_and_merge)
{
	static const char *const hdrs[] = { "X-B: 2", "x-a: one   two", "x-b:1", "Host: h" };
	static const char *const bad[] = { "no colon here" };
	struct sigv4_req r = {
		.method = "GET", .uri = "/k", .query = "prefix=a&list-type=2&acl&b=2&b=1",
		.headers = hdrs, .nheaders = 4, .payload_hash = SQK_S3_UNSIGNED_PAYLOAD,
	};
	char *creq = NULL, *sh = NULL;

	ck_assert_int_eq(sigv4_canonical(&r, &creq, &sh), 0);
	ck_assert_str_eq(creq, "GET\n/k\nacl=&b=1&b=2&list-type=2&prefix=a\n"
			       "host:h\nx-a:one two\nx-b:2,1\n\nhost;x-a;x-b\nUNSIGNED-PAYLOAD");
	ck_assert_str_eq(sh, "host;x-a;x-b");
	free(creq);
	free(sh);
	r.headers = bad;
	r.nheaders = 1;
	ck_assert_int_eq(sigv4_canonical(&r, &creq, NULL), SQK_EINVAL);
}
END_TEST

/* ---- URLs ---- */

START_TEST(test_uri_encode)
{
	char *e = s3_uri_encode("dir/my file \xc3\xbc+%~_-.A9(x)?#&=", true);

	ck_assert_str_eq(e, "dir/my%20file%20%C3%BC%2B%25~_-.A9%28x%29%3F%23%26%3D");
	free(e);
	e = s3_uri_encode("a/b c", false);
	ck_assert_str_eq(e, "a%2Fb%20c");
	free(e);
}
END_TEST

START_TEST(test_split)
{
	static const char *const bad[] = { "s3://", "s3://b", "s3://b/", "s3:///k", "http://b/k" };
	char *b, *k;

	ck_assert(s3_is_url("S3://x/y"));
	ck_assert(!s3_is_url("s3:/x/y"));
	ck_assert(sqk_is_url("s3://x/y"));
	ck_assert_int_eq(s3_split("s3://bkt/dir/a b.sqsh", &b, &k), 0);
	ck_assert_str_eq(b, "bkt");
	ck_assert_str_eq(k, "dir/a b.sqsh");
	free(b);
	free(k);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_int_eq(s3_split(bad[i], &b, &k), SQK_EINVAL);
		ck_assert_ptr_null(b);
	}
}
END_TEST

/* Path style on an endpoint, virtual-hosted on AWS, path style on AWS for a bucket name that
 * is no DNS label (dots: TLS wildcards; upper case). Keys encoded, '/' kept. */
START_TEST(test_object_url)
{
	char *u;

	ck_assert_int_eq(s3_object_url("http://127.0.0.1:9000", "us-east-1", "bkt",
					   "d/x y.sqsh", &u), 0);
	ck_assert_str_eq(u, "http://127.0.0.1:9000/bkt/d/x%20y.sqsh");
	free(u);
	ck_assert_int_eq(s3_object_url(NULL, "eu-west-1", "my-bkt", "a/\xc3\xa9.sqsh", &u), 0);
	ck_assert_str_eq(u, "https://my-bkt.s3.eu-west-1.amazonaws.com/a/%C3%A9.sqsh");
	free(u);
	ck_assert_int_eq(s3_object_url(NULL, "us-east-1", "my.bkt", "k", &u), 0);
	ck_assert_str_eq(u, "https://s3.us-east-1.amazonaws.com/my.bkt/k");
	free(u);
	ck_assert_int_eq(s3_object_url(NULL, "us-east-1", "Bkt", "k", &u), 0);
	ck_assert_str_eq(u, "https://s3.us-east-1.amazonaws.com/Bkt/k");
	free(u);
}
END_TEST

/* ---- resolution ---- */

START_TEST(test_creds_env)
{
	struct s3_creds c;
	char msg[512];

	clean_env();
	setenv("AWS_ACCESS_KEY_ID", "AKENV", 1);
	setenv("AWS_SECRET_ACCESS_KEY", "SKENV", 1);
	setenv("AWS_SESSION_TOKEN", "TOKENV", 1);
	write_file(".aws/credentials", "[default]\naws_access_key_id=AKFILE\n"
				       "aws_secret_access_key=SKFILE\n");
	ck_assert_int_eq(s3_credentials(&c, msg, sizeof(msg)), 0);
	ck_assert_str_eq(c.access_key, "AKENV"); /* the environment before the file */
	ck_assert_str_eq(c.secret_key, "SKENV");
	ck_assert_str_eq(c.token, "TOKENV");
	ck_assert_ptr_null(strstr(c.source, "SKENV"));
	s3_creds_clear(&c);
	ck_assert_ptr_null(c.secret_key);
	unsetenv("AWS_SECRET_ACCESS_KEY");
	ck_assert_int_eq(s3_credentials(&c, msg, sizeof(msg)), SQK_EACCESS);
	ck_assert_ptr_nonnull(strstr(msg, "AWS_SECRET_ACCESS_KEY is not set"));
	s3_creds_clear(&c);
	rm_home();
}
END_TEST

/* Profiles of ~/.aws/credentials ([NAME]) by $AWS_PROFILE, comments, blanks, key case, nested
 * settings skipped; then [profile NAME] of the config file; $AWS_SHARED_CREDENTIALS_FILE and
 * $AWS_CONFIG_FILE (with ~/) move the files; nothing found: a message naming what was looked
 * at. */
START_TEST(test_creds_files)
{
	struct s3_creds c;
	char msg[512], path[400];

	clean_env();
	write_file(".aws/credentials",
		   "# comment\n[default]\naws_access_key_id = AKDEF\naws_secret_access_key=SKDEF\n"
		   "\n[prod]\n  ; indented comment\nAWS_ACCESS_KEY_ID =  AKPROD \n"
		   "s3 =\n  aws_secret_access_key = NESTED\naws_secret_access_key = SK=PROD\n"
		   "aws_session_token = TKPROD\n[half]\naws_access_key_id = AKHALF\n");
	write_file(".aws/config", "[default]\nregion = eu-west-3\n[profile cfg]\n"
				  "aws_access_key_id = AKCFG\naws_secret_access_key = SKCFG\n");
	ck_assert_int_eq(s3_credentials(&c, msg, sizeof(msg)), 0);
	ck_assert_str_eq(c.access_key, "AKDEF");
	ck_assert_ptr_null(c.token);
	ck_assert_ptr_nonnull(strstr(c.source, "profile 'default'"));
	s3_creds_clear(&c);
	setenv("AWS_PROFILE", "prod", 1);
	ck_assert_int_eq(s3_credentials(&c, msg, sizeof(msg)), 0);
	ck_assert_str_eq(c.access_key, "AKPROD");
	ck_assert_str_eq(c.secret_key, "SK=PROD");
	ck_assert_str_eq(c.token, "TKPROD");
	s3_creds_clear(&c);
	setenv("AWS_PROFILE", "cfg", 1);
	ck_assert_int_eq(s3_credentials(&c, msg, sizeof(msg)), 0);
	ck_assert_str_eq(c.access_key, "AKCFG");
	ck_assert_ptr_nonnull(strstr(c.source, ".aws/config"));
	s3_creds_clear(&c);
	setenv("AWS_PROFILE", "half", 1);
	ck_assert_int_eq(s3_credentials(&c, msg, sizeof(msg)), SQK_EACCESS);
	ck_assert_ptr_nonnull(strstr(msg, "aws_secret_access_key is missing"));
	s3_creds_clear(&c);
	setenv("AWS_PROFILE", "nosuch", 1);
	ck_assert_int_eq(s3_credentials(&c, msg, sizeof(msg)), SQK_EACCESS);
	ck_assert_ptr_nonnull(strstr(msg, "no AWS credentials found"));
	ck_assert_ptr_nonnull(strstr(msg, "profile 'nosuch'"));
	ck_assert_ptr_nonnull(strstr(msg, "--no-sign-request"));
	s3_creds_clear(&c);
	/* the files elsewhere */
	write_file("other-creds", "[nosuch]\naws_access_key_id=AKO\naws_secret_access_key=SKO\n");
	setenv("AWS_SHARED_CREDENTIALS_FILE", "~/other-creds", 1);
	ck_assert_int_eq(s3_credentials(&c, msg, sizeof(msg)), 0);
	ck_assert_str_eq(c.access_key, "AKO");
	s3_creds_clear(&c);
	snprintf(path, sizeof(path), "%s/other-creds", home);
	setenv("AWS_CONFIG_FILE", path, 1);
	unsetenv("AWS_SHARED_CREDENTIALS_FILE");
	setenv("AWS_PROFILE", "cfg", 1);
	ck_assert_int_eq(s3_credentials(&c, msg, sizeof(msg)), SQK_EACCESS);
	s3_creds_clear(&c);
	rm_home();
}
END_TEST

START_TEST(test_region)
{
	char *r;

	clean_env();
	ck_assert_int_eq(s3_region(&r), 0);
	ck_assert_str_eq(r, "us-east-1");
	free(r);
	write_file(".aws/config", "[default]\nregion = eu-west-3\n[profile p]\nregion=ap-south-1\n"
				  "[profile empty]\nregion =\n");
	ck_assert_int_eq(s3_region(&r), 0);
	ck_assert_str_eq(r, "eu-west-3");
	free(r);
	setenv("AWS_PROFILE", "p", 1);
	ck_assert_int_eq(s3_region(&r), 0);
	ck_assert_str_eq(r, "ap-south-1");
	free(r);
	setenv("AWS_PROFILE", "empty", 1);
	ck_assert_int_eq(s3_region(&r), 0);
	ck_assert_str_eq(r, "us-east-1");
	free(r);
	setenv("AWS_DEFAULT_REGION", "ca-central-1", 1);
	ck_assert_int_eq(s3_region(&r), 0);
	ck_assert_str_eq(r, "ca-central-1");
	free(r);
	setenv("AWS_REGION", "sa-east-1", 1);
	ck_assert_int_eq(s3_region(&r), 0);
	ck_assert_str_eq(r, "sa-east-1");
	free(r);
	rm_home();
}
END_TEST

START_TEST(test_endpoint)
{
	char *e, msg[256];

	clean_env();
	ck_assert_int_eq(s3_endpoint(NULL, &e, msg, sizeof(msg)), 0);
	ck_assert_ptr_null(e);
	setenv("AWS_ENDPOINT_URL", "http://all:1/", 1);
	ck_assert_int_eq(s3_endpoint(NULL, &e, msg, sizeof(msg)), 0);
	ck_assert_str_eq(e, "http://all:1");
	free(e);
	setenv("AWS_ENDPOINT_URL_S3", "https://s3only:2//", 1);
	ck_assert_int_eq(s3_endpoint(NULL, &e, msg, sizeof(msg)), 0);
	ck_assert_str_eq(e, "https://s3only:2");
	free(e);
	ck_assert_int_eq(s3_endpoint("http://given:3/pre", &e, msg, sizeof(msg)), 0);
	ck_assert_str_eq(e, "http://given:3/pre");
	free(e);
	ck_assert_int_eq(s3_endpoint("given:3", &e, msg, sizeof(msg)), SQK_EINVAL);
	ck_assert_ptr_nonnull(strstr(msg, "not an http:// or https:// URL"));
	setenv("AWS_ENDPOINT_URL_S3", "ftp://x", 1);
	ck_assert_int_eq(s3_endpoint(NULL, &e, msg, sizeof(msg)), SQK_EINVAL);
	ck_assert_ptr_nonnull(strstr(msg, "AWS_ENDPOINT_URL_S3"));
	rm_home();
}
END_TEST

/* The whole resolution; no_sign needs no credentials; without them a signed one fails. */
START_TEST(test_resolve)
{
	struct s3 *s;
	char msg[512];

	clean_env();
	setenv("AWS_REGION", "eu-north-1", 1);
	ck_assert_int_eq(s3_resolve("s3://bkt/k", NULL, false, &s, msg, sizeof(msg)),
			 SQK_EACCESS);
	ck_assert_ptr_nonnull(strstr(msg, "no AWS credentials found"));
	ck_assert_int_eq(s3_resolve("s3://bkt/a b", NULL, true, &s, msg, sizeof(msg)), 0);
	ck_assert(!s->sign);
	ck_assert_str_eq(s->url, "https://bkt.s3.eu-north-1.amazonaws.com/a%20b");
	s3_free(s);
	setenv("AWS_ACCESS_KEY_ID", "AK", 1);
	setenv("AWS_SECRET_ACCESS_KEY", "SK", 1);
	ck_assert_int_eq(s3_resolve("s3://bkt/k", "http://127.0.0.1:1", false, &s, msg,
					sizeof(msg)), 0);
	ck_assert(s->sign);
	ck_assert_str_eq(s->url, "http://127.0.0.1:1/bkt/k");
	ck_assert_str_eq(s->sigv4, "aws:amz:eu-north-1:s3");
	ck_assert_str_eq(s->creds.secret_key, "SK");
	s3_free(s);
	ck_assert_int_eq(s3_resolve("s3://bkt", NULL, false, &s, msg, sizeof(msg)),
			 SQK_EINVAL);
	ck_assert_ptr_nonnull(strstr(msg, "s3://BUCKET/KEY"));
	setenv("AWS_REGION", "bad/region", 1);
	ck_assert_int_eq(s3_resolve("s3://b/k", NULL, false, &s, msg, sizeof(msg)),
			 SQK_EINVAL);
	rm_home();
}
END_TEST

/* ---- error answers ---- */

static const struct s3 demo = {
	.bucket = "bkt", .key = "k", .region = "us-east-1", .sign = true,
	.creds = { .source = "from AWS_ACCESS_KEY_ID" },
};

#define XERR(code, extra)                                                                        \
	"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>" code "</Code><Message>m"     \
	"</Message>" extra "</Error>"

static int explain(const struct s3 *s, long st, const char *body, const char *hdr,
		   char *out)
{
	return s3_explain(s, st, body, body ? strlen(body) : 0, hdr, out, 256);
}

START_TEST(test_explain)
{
	struct s3 unsigned_s3 = demo;
	char m[256];

	ck_assert_int_eq(explain(&demo, 403, XERR("SignatureDoesNotMatch", ""), NULL, m),
			 SQK_EACCESS);
	ck_assert_str_eq(m, "HTTP status 403 (SignatureDoesNotMatch): access denied or signature "
			    "mismatch: check credentials (from AWS_ACCESS_KEY_ID)");
	ck_assert_int_eq(explain(&demo, 403, XERR("InvalidAccessKeyId", ""), NULL, m), SQK_EACCESS);
	ck_assert_ptr_nonnull(strstr(m, "(InvalidAccessKeyId): access denied"));
	ck_assert_int_eq(explain(&demo, 403, XERR("RequestTimeTooSkewed", ""), NULL, m),
			 SQK_EACCESS);
	ck_assert_ptr_nonnull(strstr(m, "clock of this machine is more than 15 minutes off"));
	unsigned_s3.sign = false;
	ck_assert_int_eq(explain(&unsigned_s3, 403, XERR("AccessDenied", ""), NULL, m),
			 SQK_EACCESS);
	ck_assert_ptr_nonnull(strstr(m, "unsigned request"));
	ck_assert_int_eq(explain(&demo, 404, XERR("NoSuchKey", "<Key>k</Key>"), NULL, m),
			 SQK_ENOENT);
	ck_assert_str_eq(m, "HTTP status 404 (NoSuchKey): no such object");
	ck_assert_int_eq(explain(&demo, 404, XERR("NoSuchBucket", ""), NULL, m), SQK_ENOENT);
	ck_assert_str_eq(m, "HTTP status 404 (NoSuchBucket): no such object: there is no bucket "
			    "'bkt'");
	ck_assert_int_eq(explain(&demo, 404, NULL, NULL, m), SQK_ENOENT);
	ck_assert_str_eq(m, "HTTP status 404: no such object");
	/* a wrong region: the header of a 301, or the <Region> of a 400 */
	ck_assert_int_eq(explain(&demo, 301, XERR("PermanentRedirect", ""), "eu-west-1", m),
			 SQK_EINVAL);
	ck_assert_str_eq(m, "HTTP status 301 (PermanentRedirect): the bucket is in region "
			    "eu-west-1, not us-east-1: set AWS_REGION=eu-west-1");
	ck_assert_int_eq(explain(&demo, 400, XERR("AuthorizationHeaderMalformed",
						  "<Region>ap-east-1</Region>"), NULL, m),
			 SQK_EINVAL);
	ck_assert_ptr_nonnull(strstr(m, "region ap-east-1, not us-east-1"));
	ck_assert_int_eq(explain(&demo, 301, NULL, NULL, m), SQK_EINVAL);
	ck_assert_ptr_nonnull(strstr(m, "another region"));
	ck_assert_int_eq(explain(&demo, 503, XERR("SlowDown", ""), NULL, m), SQK_EIO);
	ck_assert_str_eq(m, "HTTP status 503 (SlowDown)");
	ck_assert_int_eq(explain(&demo, 500, "<html>oops", NULL, m), SQK_EIO);
	ck_assert_str_eq(m, "HTTP status 500");
}
END_TEST

START_TEST(test_xml_tag)
{
	static const char body[] = "<Error><Code>Bad\x01" "Code\n</Code><Region>r</Region><Open>x";
	char out[8];

	ck_assert(s3_xml_tag(body, sizeof(body) - 1, "Code", out, sizeof(out)));
	ck_assert_str_eq(out, "BadCode");
	ck_assert(s3_xml_tag(body, sizeof(body) - 1, "Region", out, sizeof(out)));
	ck_assert_str_eq(out, "r");
	ck_assert(!s3_xml_tag(body, sizeof(body) - 1, "Open", out, sizeof(out)));
	ck_assert(!s3_xml_tag(body, sizeof(body) - 1, "Message", out, sizeof(out)));
	ck_assert(!s3_xml_tag(body, 10, "Region", out, sizeof(out))); /* cut before it */
	ck_assert(s3_xml_tag("<C>0123456789</C>", 17, "C", out, 4));
	ck_assert_str_eq(out, "012");
}
END_TEST

/* ---- what the transfers send ---- */

struct capture {
	int lfd;
	unsigned short port;
	char req[8192];         /* the last request's head */
	unsigned nreq;
	bool sig_ok;            /* every request's signature checked out */
	char signed_hdrs[256];
	const char *secret;
};

/* The value of header name in the request head (case-insensitive), into out. */
static bool req_header(const char *req, const char *name, char *out, size_t cap)
{
	size_t n = strlen(name);

	for (const char *l = strstr(req, "\r\n"); l && l[2]; l = strstr(l + 2, "\r\n")) {
		const char *s = l + 2, *e = strstr(s, "\r\n");

		if (!e || strncasecmp(s, name, n) || s[n] != ':')
			continue;
		s += n + 1;
		while (*s == ' ')
			s++;
		snprintf(out, cap, "%.*s", (int)(e - s), s);
		return true;
	}
	return false;
}

/* Checks the request's SigV4 Authorization with s3.c's signer over the headers it names. */
static bool check_signature(struct capture *c)
{
	char auth[512], cred[128], sh[256], sig[65], mine[65], uri[512], date[32], val[512];
	const char *hv[16];
	char lines[16][600];
	size_t n = 0;
	struct sigv4_req r = { .method = "GET", .service = "s3", .secret = c->secret };
	char region[64] = "";

	if (!req_header(c->req, "Authorization", auth, sizeof(auth)) ||
	    sscanf(auth, "AWS4-HMAC-SHA256 Credential=%127[^,], SignedHeaders=%255[^,], "
			 "Signature=%64s", cred, sh, sig) != 3 ||
	    sscanf(c->req, "GET %511s HTTP/", uri) != 1 ||
	    !req_header(c->req, "x-amz-date", date, sizeof(date)) ||
	    sscanf(cred, "%*[^/]/%*8s/%63[^/]/s3/aws4_request", region) != 1)
		return false;
	snprintf(c->signed_hdrs, sizeof(c->signed_hdrs), "%s", sh);
	for (char *save = NULL, *t = strtok_r(sh, ";", &save); t && n < 16;
	     t = strtok_r(NULL, ";", &save)) {
		if (!req_header(c->req, t, val, sizeof(val)))
			return false;
		snprintf(lines[n], sizeof(lines[n]), "%s: %s", t, val);
		hv[n] = lines[n];
		n++;
	}
	if (!req_header(c->req, "x-amz-content-sha256", val, sizeof(val)))
		return false;
	r.uri = uri;
	r.headers = hv;
	r.nheaders = n;
	r.payload_hash = val;
	r.amz_date = date;
	r.region = region;
	return sigv4_sign(&r, mine, NULL) == 0 && !strcmp(mine, sig);
}

/* Answers each request (one per connection) 404 NoSuchKey when its signature is right, else
 * 403 SignatureDoesNotMatch, as S3 does; stops when nothing comes for a second. */
static void *serve(void *arg)
{
	struct capture *c = arg;
	struct pollfd p = { .fd = c->lfd, .events = POLLIN };

	c->sig_ok = true;
	while (poll(&p, 1, 1000) == 1) {
		int fd = accept(c->lfd, NULL, NULL);
		char resp[512];
		const char *body;
		bool ok;

		if (fd < 0)
			break;
		test_read_head(fd, c->req, sizeof(c->req));
		c->nreq++;
		ok = check_signature(c);
		c->sig_ok = c->sig_ok && ok;
		body = ok ? "<Error><Code>NoSuchKey</Code><Message>The specified key does not "
			    "exist.</Message></Error>"
			  : "<Error><Code>SignatureDoesNotMatch</Code></Error>";
		snprintf(resp, sizeof(resp), "HTTP/1.1 %s\r\nContent-Type: application/xml\r\n"
			 "Content-Length: %zu\r\nConnection: close\r\n\r\n%s",
			 ok ? "404 Not Found" : "403 Forbidden", strlen(body), body);
		ck_assert_int_eq(write(fd, resp, strlen(resp)), (ssize_t)strlen(resp));
		close(fd);
	}
	return NULL;
}

static void listen_local(struct capture *c)
{
	c->lfd = test_listen_local(&c->port);
}

/* Opens s3://bkt/dir/a b+ü.sqsh on the server thread with the given secret: what is sent, and
 * the error named. */
static int open_against(struct capture *c, const char *secret, struct test_log *lb)
{
	char ep[64];
	struct sqk_http_opts o = {
	    .size = sizeof(o), .log = test_log_add, .log_ctx = lb, .retries_set = true};
	struct sqk_io *io = NULL;
	pthread_t t;
	int rc;

	clean_env();
	listen_local(c);
	c->secret = "test/secret+KEY";
	snprintf(ep, sizeof(ep), "http://127.0.0.1:%u/", c->port);
	setenv("AWS_ENDPOINT_URL", ep, 1);
	setenv("AWS_ACCESS_KEY_ID", "AKIDTEST", 1);
	setenv("AWS_SECRET_ACCESS_KEY", secret, 1);
	setenv("AWS_SESSION_TOKEN", "TOKEN/abc==", 1);
	setenv("AWS_REGION", "eu-central-1", 1);
	ck_assert_int_eq(pthread_create(&t, NULL, serve, c), 0);
	rc = sqk_io_http_create("s3://bkt/dir/a b+\xc3\xbc.sqsh", &o, &io);
	pthread_join(t, NULL);
	close(c->lfd);
	ck_assert_ptr_null(io);
	rm_home();
	return rc;
}

START_TEST(test_curl_signs_right)
{
	struct capture c = { 0 };
	struct test_log lb = { "", 0 };

	ck_assert_int_eq(open_against(&c, "test/secret+KEY", &lb), SQK_ENOENT);
	ck_assert_uint_eq(c.nreq, 2); /* the open's two requests; a 404 is not retried */
	ck_assert(c.sig_ok);
	ck_assert_ptr_nonnull(strstr(c.req, "GET /bkt/dir/a%20b%2B%C3%BC.sqsh HTTP/1.1\r\n"));
	/* c.req: the last of the open's two requests (first bytes, tail) */
	ck_assert(strstr(c.req, "Range: bytes=0-65535\r\n") ||
		  strstr(c.req, "Range: bytes=-131072\r\n"));
	ck_assert_str_eq(c.signed_hdrs,
			 "host;x-amz-content-sha256;x-amz-date;x-amz-security-token");
	ck_assert_ptr_nonnull(strstr(c.req, "x-amz-content-sha256: UNSIGNED-PAYLOAD\r\n"));
	ck_assert_ptr_nonnull(strstr(c.req, "x-amz-security-token: TOKEN/abc==\r\n"));
	ck_assert_ptr_nonnull(strstr(c.req, "Credential=AKIDTEST/"));
	ck_assert_ptr_nonnull(strstr(c.req, "/eu-central-1/s3/aws4_request"));
	ck_assert_ptr_nonnull(strstr(lb.text, "s3://bkt/dir/a b+\xc3\xbc.sqsh: bytes 0-65535: "
					      "HTTP status 404 (NoSuchKey): no such object"));
}
END_TEST

START_TEST(test_curl_wrong_secret)
{
	struct capture c = { 0 };
	struct test_log lb = { "", 0 };

	ck_assert_int_eq(open_against(&c, "not-the-secret", &lb), SQK_EACCESS);
	ck_assert_uint_eq(c.nreq, 2); /* the open's two requests, not retried */
	ck_assert(!c.sig_ok);
	ck_assert_ptr_nonnull(strstr(lb.text, "HTTP status 403 (SignatureDoesNotMatch): access "
					      "denied or signature mismatch: check credentials"));
	ck_assert_ptr_null(strstr(lb.text, "not-the-secret"));
	ck_assert_ptr_null(strstr(lb.text, "TOKEN/abc"));
}
END_TEST

static Suite *s3_suite(void)
{
	Suite *s = suite_create("s3");
	TCase *t = tcase_create("s3");

	tcase_set_timeout(t, 30);
	tcase_add_test(t, test_sigv4_aws_example);
	tcase_add_test(t, test_sigv4_canonical_forms);
	tcase_add_test(t, test_sigv4_query_and_merge);
	tcase_add_test(t, test_uri_encode);
	tcase_add_test(t, test_split);
	tcase_add_test(t, test_object_url);
	tcase_add_test(t, test_creds_env);
	tcase_add_test(t, test_creds_files);
	tcase_add_test(t, test_region);
	tcase_add_test(t, test_endpoint);
	tcase_add_test(t, test_resolve);
	tcase_add_test(t, test_explain);
	tcase_add_test(t, test_xml_tag);
	tcase_add_test(t, test_curl_signs_right);
	tcase_add_test(t, test_curl_wrong_secret);
	suite_add_tcase(s, t);
	return s;
}

int main(void)
{
	return test_run_suite(s3_suite());
}
