/* SPDX-License-Identifier: BSD-2-Clause */
/* JSON output helpers of the tools' --json modes (not installed). */
#ifndef SQK_JSON_H
#define SQK_JSON_H

#include <stdio.h>

/* Writes s as a JSON string literal to f: '"' and '\' escaped, control and non-ASCII bytes as
 * \u00XX. Borrows s and f. */
void json_put_str(FILE *f, const char *s);

#endif
