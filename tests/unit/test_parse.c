/* SPDX-License-Identifier: BSD-2-Clause */
/* Unit tests of the one number rule (common/parse.c): decimal only, bounds without overflow,
 * size suffixes. */
#include <check.h>
#include <stdint.h>

#include "sqk/error.h"
#include "common/parse.h"
#include "testutil.h"

START_TEST(test_u64)
{
	uint64_t v = 7;

	ck_assert_int_eq(parse_u64("0", 10, &v), 0);
	ck_assert_uint_eq(v, 0);
	ck_assert_int_eq(parse_u64("08", 10, &v), 0); /* decimal, not octal */
	ck_assert_uint_eq(v, 8);
	ck_assert_int_eq(parse_u64("10", 10, &v), 0);
	ck_assert_uint_eq(v, 10);
	ck_assert_int_eq(parse_u64("18446744073709551615", UINT64_MAX, &v), 0);
	ck_assert_uint_eq(v, UINT64_MAX);
	v = 7;
	static const char *const bad[] = { "", "-1", "+1", " 1", "1 ", "0x10", "1e3", "11", "1k",
					    "18446744073709551616", "99999999999999999999999" };
	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		uint64_t max = i == 10 || i == 9 ? UINT64_MAX : 10;

		ck_assert_msg(parse_u64(bad[i], max, &v) == SQK_EINVAL, "'%s' accepted",
			      bad[i]);
	}
	ck_assert_uint_eq(v, 7); /* untouched on errors */
	ck_assert_int_eq(parse_u64(NULL, 10, &v), SQK_EINVAL);
}
END_TEST

START_TEST(test_size)
{
	uint64_t v;

	ck_assert_int_eq(parse_bytes("64M", UINT64_MAX, &v), 0);
	ck_assert_uint_eq(v, 64u << 20);
	ck_assert_int_eq(parse_bytes("4k", UINT64_MAX, &v), 0);
	ck_assert_uint_eq(v, 4096);
	ck_assert_int_eq(parse_bytes("2G", UINT64_MAX, &v), 0);
	ck_assert_uint_eq(v, (uint64_t)2 << 30);
	ck_assert_int_eq(parse_bytes("1048576", 1048576, &v), 0);
	ck_assert_int_eq(parse_bytes("1M", 1048576, &v), 0);
	ck_assert_int_eq(parse_bytes("2M", 1048576, &v), SQK_EINVAL);
	ck_assert_int_eq(parse_bytes("-1", UINT64_MAX, &v), SQK_EINVAL);
	ck_assert_int_eq(parse_bytes("1T", UINT64_MAX, &v), SQK_EINVAL);
	ck_assert_int_eq(parse_bytes("1MB", UINT64_MAX, &v), SQK_EINVAL);
	ck_assert_int_eq(parse_bytes("M", UINT64_MAX, &v), SQK_EINVAL);
	ck_assert_int_eq(parse_bytes("17179869184G", UINT64_MAX, &v), SQK_EINVAL); /* 2^64 */
}
END_TEST

static Suite *parse_suite(void)
{
	Suite *s = suite_create("parse");
	TCase *tc = tcase_create("numbers");

	tcase_add_test(tc, test_u64);
	tcase_add_test(tc, test_size);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return test_run_suite(parse_suite());
}
