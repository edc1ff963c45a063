/* Helpers shared by the Check suites (linked into every test program). */
#ifndef SQK_TESTUTIL_H
#define SQK_TESTUTIL_H

#include <check.h>
#include <stddef.h>
#include <stdint.h>

/* Next value of a xorshift64 generator with state *s (non-zero). */
uint64_t test_xorshift(uint64_t *s);

/* Fills p[0..len) with deterministic pseudo-random bytes derived from seed (incompressible). */
void test_fill_random(uint8_t *p, size_t len, uint64_t seed);

/* Runs suite s (Check frees it); returns the test program's exit status. */
int test_run_suite(Suite *s);

#endif
