/* Helpers shared by the Check suites. */
#include "testutil.h"

#include <stdlib.h>

int test_run_suite(Suite *s)
{
	SRunner *sr = srunner_create(s);
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

uint64_t test_xorshift(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

void test_fill_random(uint8_t *p, size_t len, uint64_t seed)
{
	uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = (uint8_t)(test_xorshift(&s) >> 32);
}
