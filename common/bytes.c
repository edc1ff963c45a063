/* SPDX-License-Identifier: BSD-2-Clause */
/* Small byte-string helpers (see bytes.h). */
#include "bytes.h"

#include <stdint.h>
#include <string.h>

/* Compared a zero block at a time: as fast as memcmp for the data blocks the builder checks. */
bool bytes_all_zero(const void *p, size_t len)
{
	static const uint8_t zero[256];
	const uint8_t *b = p;

	while (len >= sizeof(zero)) {
		if (memcmp(b, zero, sizeof(zero)))
			return false;
		b += sizeof(zero);
		len -= sizeof(zero);
	}
	return memcmp(b, zero, len) == 0;
}

void bytes_hex(const void *in, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";
	const uint8_t *d = in;

	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[d[i] >> 4];
		out[2 * i + 1] = digits[d[i] & 15];
	}
}

int bytes_hex_digit(int ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	if (ch >= 'A' && ch <= 'F')
		return ch - 'A' + 10;
	return -1;
}

int bytes_from_hex(const char *hex, void *out, size_t n)
{
	uint8_t *o = out;

	if (!hex || strlen(hex) != 2 * n)
		return -1;
	for (size_t i = 0; i < n; i++) {
		int hi = bytes_hex_digit(hex[2 * i]), lo = bytes_hex_digit(hex[2 * i + 1]);

		if (hi < 0 || lo < 0)
			return -1;
		o[i] = (uint8_t)(hi << 4 | lo);
	}
	return 0;
}
