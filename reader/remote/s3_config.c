/* SPDX-License-Identifier: BSD-2-Clause */
/* The AWS shared credentials and config files (INI), and what s3:// URLs take from them and
 * from the environment as the AWS CLI does: the region, the endpoint and the credentials (see
 * s3.h). Nothing here ever prints a secret. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/crypto.h>

#include "sqk/error.h"
#include "s3.h"
#include "s3_internal.h"

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
int s3_ini_get(const char *path, const char *section, const char *key, char **out)
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
		rc = s3_ini_get(path, "default", key, out);
	if (rc == SQK_ENOENT && asprintf(&sect, "profile %s", prof) >= 0)
		rc = s3_ini_get(path, sect, key, out);
	free(sect);
	free(path);
	return rc;
}

/* Caller frees *out. */
int s3_region(char **out)
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
int s3_endpoint(const char *endpoint, char **out, char *msg, size_t cap)
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
void s3_creds_clear(struct s3_creds *c)
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
static int creds_env(struct s3_creds *c, char *msg, size_t cap)
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
static int creds_file(struct s3_creds *c, const char *path, const char *sect, char *msg,
		      size_t cap)
{
	const char *prof = profile_name();
	int a, b, t;

	a = s3_ini_get(path, sect, "aws_access_key_id", &c->access_key);
	b = s3_ini_get(path, sect, "aws_secret_access_key", &c->secret_key);
	t = s3_ini_get(path, sect, "aws_session_token", &c->token);
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
static int creds_profile(struct s3_creds *c, char *msg, size_t cap, char *cred_path,
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
	s3_creds_clear(c);
	path = aws_file("AWS_CONFIG_FILE", "config");
	snprintf(conf_path, pcap, "%s", path ? path : "~/.aws/config");
	if (path && !strcmp(prof, "default"))
		rc = creds_file(c, path, "default", msg, cap);
	if (path && rc == SQK_ENOENT && asprintf(&sect, "profile %s", prof) >= 0)
		rc = creds_file(c, path, sect, msg, cap);
	free(sect);
	free(path);
	if (rc == SQK_ENOENT)
		s3_creds_clear(c);
	return rc;
}

/* Caller owns *out (s3_creds_clear), also after a failure. */
int s3_credentials(struct s3_creds *out, char *msg, size_t cap)
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
		s3_creds_clear(out);
	return rc;
}
