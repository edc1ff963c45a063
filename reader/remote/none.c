/* SPDX-License-Identifier: BSD-2-Clause */
/* The remote backend's exported functions in a libsqk built without it (HAVE_REMOTE=0, no
 * libcurl): the same symbols, so that a program linked against either build loads; opening a
 * URL fails with SQK_ENOREMOTE and a logged line naming it, nothing is ever a remote io. */
#include <stdio.h>
#include <stdlib.h>

#include "reader/lib/open_io.h"
#include "url.h"

/* "URL: remote images are not supported by this build (...)" to log (borrowed; may be NULL). */
static int refuse(const char *url, void (*log)(void *, const char *), void *log_ctx)
{
	char *shown = sqk_url_display(url);
	char msg[1024];

	if (log) {
		snprintf(msg, sizeof(msg), "%s: %s", shown ? shown : "URL",
			 sqk_strerror(SQK_ENOREMOTE));
		log(log_ctx, msg);
	}
	free(shown);
	return SQK_ENOREMOTE;
}

/* Borrows url and opts; *out is always NULL. */
int sqk_io_http_create(const char *url, const struct sqk_http_opts *user, struct sqk_io **out)
{
	struct sqk_http_opts o;

	*out = NULL;
	if (!sqk_is_url(url))
		return SQK_EINVAL;
	if (abi_copy_in(&o, sizeof(o), user, HTTP_OPTS_V1))
		return SQK_EABI;
	return refuse(url, o.log, o.log_ctx);
}

/* Borrows url and opts; *out is always NULL. */
int sqk_image_open_url(const char *url, const struct sqk_open_opts *opts, struct sqk_image **out)
{
	struct sqk_open_opts o;

	if (!url || !out)
		return SQK_EINVAL;
	*out = NULL;
	if (img_take_opts(opts, &o))
		return SQK_EABI;
	return refuse(url, o.log, o.log_ctx);
}

/* Borrows io. */
bool sqk_io_is_http(const struct sqk_io *io)
{
	return false;
}

/* Borrows io. */
void sqk_io_http_cancel(struct sqk_io *io)
{
}

/* Borrows io. */
void sqk_io_http_background(struct sqk_io *io)
{
}

/* Borrows io. */
int sqk_io_http_stats(struct sqk_io *io, struct sqk_http_stats *out)
{
	return SQK_EINVAL;
}

/* Borrows io. */
bool sqk_io_http_verified(const struct sqk_io *io)
{
	return false;
}

/* Borrows io. */
const char *sqk_io_http_name(const struct sqk_io *io)
{
	return NULL;
}
