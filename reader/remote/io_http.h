/* SPDX-License-Identifier: BSD-2-Clause */
/* The remote backend's calls for libsqk and the tools beyond its API (<sqk/remote.h>): fetching
 * ahead, stopping the transfer thread before fork(), display names, request headers. Not
 * installed, not exported. */
#ifndef SQK_IO_HTTP_H
#define SQK_IO_HTTP_H

#include <stddef.h>
#include <stdint.h>

#include "sqk/io.h"
#include "sqk/remote.h"

/* Fetches [off, off + len) ahead of use, coalesced, in parallel parts, and waits for it (the
 * metadata tables at open). Best effort: errors surface when the bytes are read. */
void sqk_io_http_prefetch(struct sqk_io *io, uint64_t off, uint64_t len);

/* Starts fetching [off, off + len) in parts of 1 MiB, in order, `connections` at a time,
 * and returns at once (the prefetch hint's ranges at open; a file read at random); a read of those bytes waits for them (its request is then moved ahead of
 * readahead). Best effort: errors surface when the bytes are read. */
void sqk_io_http_prefetch_async(struct sqk_io *io, uint64_t off, uint64_t len);

/* Stops the transfer thread (it starts again on the next fetch): before fork(). Transfers in
 * flight and queued end with SQK_EINTR. No read of io may run during it, from any thread: a job
 * queued while the thread is being joined (a digest group request asked again after a quiesce
 * cut it off, sqk_http_group_need) can land after the thread's final queue flush, with no thread
 * to run it, and its reader waits forever. */
void sqk_io_http_quiesce(struct sqk_io *io);

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
