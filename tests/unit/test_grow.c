/* SPDX-License-Identifier: BSD-2-Clause */
/* Unit tests of the one array grower (common/grow.c): doubling, zeroing, overflow refused with
 * the old array kept. */
#include <check.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "sqk/error.h"
#include "common/grow.h"
#include "testutil.h"

START_TEST(test_grow_doubles)
{
	uint32_t *a = NULL;
	size_t cap = 0;

	ck_assert_int_eq(mem_grow(&a, &cap, 1, sizeof(*a), 1), 0);
	ck_assert_uint_eq(cap, 8);
	for (size_t i = 0; i < cap; i++)
		ck_assert_uint_eq(a[i], 0);
	a[7] = 42;
	ck_assert_int_eq(mem_grow(&a, &cap, 8, sizeof(*a), 1), 0); /* fits: unchanged */
	ck_assert_uint_eq(cap, 8);
	ck_assert_int_eq(mem_grow(&a, &cap, 9, sizeof(*a), 1), 0);
	ck_assert_uint_eq(cap, 16);
	ck_assert_uint_eq(a[7], 42);
	for (size_t i = 8; i < cap; i++)
		ck_assert_uint_eq(a[i], 0);
	ck_assert_int_eq(mem_grow(&a, &cap, 1000, sizeof(*a), 0), 0);
	ck_assert_uint_eq(cap, 1024);
	ck_assert_uint_eq(a[7], 42);
	free(a);
}
END_TEST

START_TEST(test_grow_overflow)
{
	uint64_t *a = NULL, *keep;
	size_t cap = 0;

	ck_assert_int_eq(mem_grow(&a, &cap, 3, sizeof(*a), 0), 0);
	keep = a;
	a[2] = 7;
	ck_assert_int_eq(mem_grow(&a, &cap, SIZE_MAX / 4, sizeof(*a), 0), SQK_ENOMEM);
	ck_assert_int_eq(mem_grow(&a, &cap, SIZE_MAX, 1, 0), SQK_ENOMEM); /* past PTRDIFF_MAX */
	ck_assert_int_eq(mem_grow(&a, &cap, (size_t)PTRDIFF_MAX / 8 + 1, 8, 0), SQK_ENOMEM);
	ck_assert_ptr_eq(a, keep);
	ck_assert_uint_eq(cap, 8);
	ck_assert_uint_eq(a[2], 7);
	free(a);
}
END_TEST

static Suite *grow_suite(void)
{
	Suite *s = suite_create("grow");
	TCase *tc = tcase_create("grow");

	tcase_add_test(tc, test_grow_doubles);
	tcase_add_test(tc, test_grow_overflow);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return test_run_suite(grow_suite());
}
