/* SPDX-License-Identifier: BSD-2-Clause */
/* URLs and request headers of remote images: which paths are URLs, the name shown for one (no
 * credentials, no query), the checks and parsing of "Name: value" header lines, the options'
 * defaults. Plain string work, built also without the remote backend (HAVE_REMOTE=0). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "sqk/error.h"
#include "url.h"

/* Fills the caller's *o with the defaults. */
void sqk_http_opts_init(struct sqk_http_opts *o)
{
	abi_copy_in(o, sizeof(*o), NULL, HTTP_OPTS_V1);
}

/* Borrows s. */
bool sqk_is_url(const char *s)
{
	return s && (!strncasecmp(s, "http://", 7) || !strncasecmp(s, "https://", 8) ||
		     !strncasecmp(s, "s3://", 5));
}

/* Borrows s. */
bool sqk_looks_like_url(const char *s)
{
	size_t i = 0;

	if (!s || !isalpha((unsigned char)s[0]))
		return false;
	while (isalnum((unsigned char)s[i]) || s[i] == '+' || s[i] == '-' || s[i] == '.')
		i++;
	return !strncmp(s + i, "://", 3);
}

/* Borrows line. */
int sqk_http_header_check(const char *line)
{
	const char *colon = line ? strchr(line, ':') : NULL;
	const char *p;

	if (!colon || colon == line || strpbrk(line, "\r\n"))
		return SQK_EINVAL;
	for (p = line; p < colon; p++) {
		if (*p <= ' ' || *p >= 127)
			return SQK_EINVAL;
	}
	return 0;
}

/* Splits text (changed in place: each line NUL-terminated) into "Name: value" lines appended
 * to hdrs[*n..max) (pointers into text); empty lines and '#' comments are skipped. SQK_EINVAL
 * for a bad line, SQK_ETOOBIG past max headers. */
static int header_lines(char *text, const char **hdrs, size_t max, size_t *n)
{
	char *line, *save = NULL;

	for (line = strtok_r(text, "\r\n", &save); line; line = strtok_r(NULL, "\r\n", &save)) {
		if (line[0] == '#' || line[strspn(line, " \t")] == '\0')
			continue;
		if (sqk_http_header_check(line))
			return SQK_EINVAL;
		if (*n == max)
			return SQK_ETOOBIG;
		hdrs[(*n)++] = line;
	}
	return 0;
}

/* Reads the header file at path into *text (caller frees, also on errors) and splits it with
 * header_lines. SQK_EIO (errno set) when it cannot be read. */
int sqk_http_header_file(const char *path, char **text, const char **hdrs, size_t max, size_t *n)
{
	FILE *f = fopen(path, "re");
	size_t cap = 0;
	ssize_t got;

	*text = NULL;
	if (!f)
		return SQK_EIO;
	got = getdelim(text, &cap, '\0', f);
	fclose(f);
	if (got < 0) {
		free(*text);
		*text = strdup(""); /* an empty file: no headers */
		if (!*text)
			return SQK_ENOMEM;
	}
	return header_lines(*text, hdrs, max, n);
}

/* scheme://host[:port]/path: no user info, no query, no fragment (presigned URLs keep their
 * secrets in the query). Caller frees. */
char *sqk_url_display(const char *url)
{
	const char *hs = strstr(url, "://"), *at, *end;
	size_t sl, len;
	char *out;

	hs = hs ? hs + 3 : url;
	end = hs + strcspn(hs, "?#");
	at = memchr(hs, '@', (size_t)(end - hs));
	if (at && at < hs + strcspn(hs, "/"))
		hs = at + 1;
	sl = (size_t)(strstr(url, "://") ? strstr(url, "://") + 3 - url : 0);
	len = sl + (size_t)(end - hs);
	out = malloc(len + 1);
	if (!out)
		return NULL;
	memcpy(out, url, sl);
	memcpy(out + sl, hs, (size_t)(end - hs));
	out[len] = '\0';
	return out;
}
