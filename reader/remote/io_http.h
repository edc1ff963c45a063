/* SPDX-License-Identifier: BSD-2-Clause */
/* The remote backend's calls for the tools beyond its API (<sqk/remote.h>): display names,
 * request headers. Not installed, not exported. */
#ifndef SQK_IO_HTTP_H
#define SQK_IO_HTTP_H

#include <stddef.h>
#include <stdint.h>

#include "sqk/io.h"
#include "sqk/remote.h"

/* url without its query string or credentials, for messages. Caller frees; NULL on ENOMEM. */
char *sqk_url_display(const char *url);

/* Splits the text of a header file (changed in place: each line NUL-terminated) into "Name:
 * value" lines appended to hdrs[*n..max) (pointers into text); empty lines and '#' comments are
 * skipped. SQK_EINVAL for a bad line, SQK_ETOOBIG past max headers. */
int sqk_http_header_lines(char *text, const char **hdrs, size_t max, size_t *n);

/* Reads the header file at path (borrowed) into *text (caller frees, also after an error) and
 * splits it as sqk_http_header_lines does. SQK_EIO (errno set) when the file cannot be read. */
int sqk_http_header_file(const char *path, char **text, const char **hdrs, size_t max,
			 size_t *n);

/* Checks one "Name: value" header line (no CR/LF, a name before ':'). 0 or SQK_EINVAL. */
int sqk_http_header_check(const char *line);

#endif
