/* SPDX-License-Identifier: BSD-2-Clause */
/* mksquashfs's NAME=VALUE xattrs (xattr_value.c), as -xattrs-add, the xattrs-add action and the
 * x pseudo definition take them. */
#ifndef SQK_MK_XATTR_VALUE_H
#define SQK_MK_XATTR_VALUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Decodes v (borrowed) into out (room for strlen(v) bytes), *n bytes: 0s/0S base64 (padding
 * optional), 0x/0X hex, 0t/0T text with \ooo escapes, 0b/0B or no prefix the bytes as they
 * are. 0, or -1 with *why saying what is wrong. */
int mk_xattr_value(const char *v, uint8_t *out, size_t *n, const char **why);

/* Whether the first len bytes of name are an xattr name a SquashFS image can hold: user.,
 * trusted. or security. and something after. */
bool mk_xattr_name_ok(const char *name, size_t len);

#endif
