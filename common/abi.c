/* SPDX-License-Identifier: BSD-2-Clause */
/* Versioned structs of the public API: copying them in and out by their size field (abi.h). */
#include "abi.h"

#include <string.h>

#include "bytes.h"
#include "sqk/error.h"

static size_t size_of(const void *s)
{
	size_t n;

	memcpy(&n, s, sizeof(n));
	return n;
}

static int zero_from(const void *s, size_t from, size_t to)
{
	return bytes_all_zero((const unsigned char *)s + from, to - from) ? 0 : SQK_EABI;
}

int abi_copy_in(void *dst, size_t dst_size, const void *src, size_t min_size)
{
	size_t n;

	if (!src) {
		memset(dst, 0, dst_size);
		memcpy(dst, &dst_size, sizeof(dst_size));
		return 0;
	}
	n = size_of(src);
	if (n < min_size || (n > dst_size && zero_from(src, dst_size, n)))
		return SQK_EABI;
	memset(dst, 0, dst_size);
	memcpy(dst, src, n < dst_size ? n : dst_size);
	memcpy(dst, &dst_size, sizeof(dst_size));
	return 0;
}

int abi_copy_out(void *dst, const void *src, size_t src_size, size_t min_size)
{
	size_t n;

	if (!dst || (n = size_of(dst)) < min_size)
		return SQK_EABI;
	memset(dst, 0, n);
	memcpy(dst, src, n < src_size ? n : src_size);
	memcpy(dst, &n, sizeof(n));
	return 0;
}
