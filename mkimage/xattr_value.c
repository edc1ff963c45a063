/* SPDX-License-Identifier: BSD-2-Clause */
/* mksquashfs's xattr value forms (xattr_value.h), decoded in one place for every input that
 * takes them. */
#include <string.h>

#include <openssl/evp.h>

#include "common/bytes.h"
#include "xattr_value.h"

/* 0t: text, where \ and three octal digits (at most \377) are one byte. */
static int decode_text(const char *s, uint8_t *out, size_t *n)
{
	size_t k = 0;

	for (; *s; k++) {
		unsigned v = 0;

		if (*s != '\\') {
			out[k] = (uint8_t)*s++;
			continue;
		}
		for (int i = 1; i <= 3; i++) {
			if (s[i] < '0' || s[i] > '7')
				return -1;
			v = v * 8 + (unsigned)(s[i] - '0');
		}
		if (v > 255)
			return -1;
		out[k] = (uint8_t)v;
		s += 4;
	}
	*n = k;
	return 0;
}

/* 0s: base64 (OpenSSL's decoder), its '=' padding optional. */
static int decode_base64(const char *s, uint8_t *out, size_t *n)
{
	size_t len = strlen(s), k = 0;
	unsigned char quad[4];
	uint8_t three[3];

	while (len && s[len - 1] == '=')
		len--;
	if (len % 4 == 1 || strlen(s) - len > 2)
		return -1;
	for (size_t i = 0; i < len; i += 4) {
		size_t m = len - i < 4 ? len - i : 4;

		memcpy(quad, s + i, m);
		memset(quad + m, '=', 4 - m);
		if (memchr(quad, '=', m) || EVP_DecodeBlock(three, quad, 4) != 3)
			return -1;
		memcpy(out + k, three, m - 1);
		k += m - 1;
	}
	*n = k;
	return 0;
}

int mk_xattr_value(const char *v, uint8_t *out, size_t *n, const char **why)
{
	const char *rest = v + 2;
	char p = v[0] == '0' && v[1] ? v[1] : 0;

	if (!p || !strchr("sSxXtTbB", p)) {
		*n = strlen(v);
		memcpy(out, v, *n);
		return 0;
	}
	if (!*rest) {
		*why = "the value is empty after its format prefix";
		return -1;
	}
	switch (p) {
	case 's': case 'S':
		*why = "invalid base64 value";
		return decode_base64(rest, out, n);
	case 'x': case 'X':
		*why = "invalid hexadecimal value";
		if (strlen(rest) % 2 || bytes_from_hex(rest, out, strlen(rest) / 2))
			return -1;
		*n = strlen(rest) / 2;
		return 0;
	case 't': case 'T':
		*why = "invalid text value (\\ needs three octal digits, at most \\377)";
		return decode_text(rest, out, n);
	default:
		*n = strlen(rest);
		memcpy(out, rest, *n);
		return 0;
	}
}

bool mk_xattr_name_ok(const char *name, size_t len)
{
	static const char *const pre[] = { "user.", "trusted.", "security." };

	for (size_t i = 0; i < sizeof(pre) / sizeof(pre[0]); i++)
		if (len > strlen(pre[i]) && !strncmp(name, pre[i], strlen(pre[i])))
			return true;
	return false;
}
