/* SPDX-License-Identifier: BSD-2-Clause */
/* What s3.c and s3_config.c share (not installed): messages into the caller's buffer and the
 * environment. */
#ifndef SQK_S3_INTERNAL_H
#define SQK_S3_INTERNAL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

/* Formats into msg (cap bytes); nothing when msg is NULL or cap is 0. */
static inline void msgf(char *msg, size_t cap, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static inline void msgf(char *msg, size_t cap, const char *fmt, ...)
{
	va_list ap;

	if (!msg || !cap)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, cap, fmt, ap);
	va_end(ap);
}

/* An environment variable, NULL when unset or empty. */
static inline const char *env(const char *name)
{
	const char *v = getenv(name);

	return v && v[0] ? v : NULL;
}

#endif
