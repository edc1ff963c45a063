/* SPDX-License-Identifier: BSD-2-Clause */
/* Versioned structs of the public API: every options struct a caller passes and every result
 * struct the library fills starts with `size_t size`, the sizeof of the caller's version of the
 * struct. Fields are only ever appended (a new field is a minor version); the library accepts
 * any size from the struct's first version on, as Linux's extensible syscall structs do:
 *  - options (copy_in): fields past the caller's size take their defaults (zero); a caller's
 *    struct larger than the library's is accepted when the bytes the library does not know are
 *    zero (a newer caller not using what is new), else SQK_EABI;
 *  - results (copy_out): the library writes the fields that fit in the caller's size and zeroes
 *    the rest of it; size stays the caller's.
 * A size below the first version's (an uninitialised struct, or a caller of before the size
 * field) is SQK_EABI. */
#ifndef SQK_ABI_H
#define SQK_ABI_H

#include <stddef.h>

/* The size of a struct's first version: up to and including its member m. */
#define SQK_ABI_SIZE_V1(type, m) (offsetof(type, m) + sizeof(((type *)0)->m))

/* Copies the caller's options src (borrowed; its first member the size_t size) into the
 * library's dst of dst_size bytes: 0, or SQK_EABI (dst then untouched). src NULL: dst zeroed
 * with its size set (the defaults). */
int abi_copy_in(void *dst, size_t dst_size, const void *src, size_t min_size);

/* Copies the library's result src (src_size bytes, its size member ignored) into the caller's
 * dst, whose size member says how much it holds: 0, or SQK_EABI (dst untouched). */
int abi_copy_out(void *dst, const void *src, size_t src_size, size_t min_size);

#endif
