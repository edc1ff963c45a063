/* SPDX-License-Identifier: BSD-2-Clause */
/* Number parsing (see parse.h): the digits are read here, not by strtoull, so that no sign,
 * base prefix, leading space or locale slips through. */
#include "parse.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>

#include "sqk/error.h"

/* Reads the digits at s; *end is the first non-digit. SQK_EINVAL without digits or on overflow
 * of max. */
static int digits(const char *s, uint64_t max, uint64_t *out, const char **end)
{
	uint64_t v = 0;
	const char *p = s;

	if (!s || *s < '0' || *s > '9')
		return SQK_EINVAL;
	for (; *p >= '0' && *p <= '9'; p++) {
		unsigned d = (unsigned)(*p - '0');

		if (v > (max - d) / 10)
			return SQK_EINVAL;
		v = v * 10 + d;
	}
	*out = v;
	*end = p;
	return 0;
}

int parse_u64(const char *s, uint64_t max, uint64_t *out)
{
	const char *end;
	uint64_t v;

	if (digits(s, max, &v, &end) || *end)
		return SQK_EINVAL;
	*out = v;
	return 0;
}

int parse_bytes(const char *s, uint64_t max, uint64_t *out)
{
	const char *end;
	unsigned shift = 0;
	uint64_t v;

	if (digits(s, UINT64_MAX, &v, &end))
		return SQK_EINVAL;
	switch (*end) {
	case 'k': case 'K': shift = 10; end++; break;
	case 'm': case 'M': shift = 20; end++; break;
	case 'g': case 'G': shift = 30; end++; break;
	default: break;
	}
	if (*end || v > (max >> shift))
		return SQK_EINVAL;
	*out = v << shift;
	return 0;
}

int parse_mode(const char *s, uint32_t *out)
{
	char *end;
	if (!*s || *s == '-' || *s == '+')
		return SQK_EINVAL;
	errno = 0;
	unsigned long v = strtoul(s, &end, 8);
	if (errno || *end || v > 07777)
		return SQK_EINVAL;
	*out = (uint32_t)v;
	return 0;
}
