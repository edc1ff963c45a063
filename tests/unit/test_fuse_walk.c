/* SPDX-License-Identifier: BSD-2-Clause */
/* Unit tests of sqkfuse's tree-walk detection (fuse/walk.c): reads in listing order turn the walk
 * on and name the next files, each once; files above the bound are skipped; a new listing during
 * the walk pushes its first files; the walk comes back to a directory after a subdirectory;
 * reads at random, and reads before the walk is on, push nothing; pushes given back are named
 * again. */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>

#include "fuse/walk.h"
#include "testutil.h"

#define MAXF (1u << 20)

/* Lists n files of dir with ids base, base+1, ...; size 1000 unless big[i]. */
static void list(struct sqk_walk *w, uint64_t dir, uint64_t base, unsigned n, const int *big)
{
	for (unsigned i = 0; i < n; i++)
		walk_listed(w, dir, base + i, big && big[i] ? 2 * MAXF : 1000, i == 0);
}

static size_t rd(struct sqk_walk *w, uint64_t id, struct walk_push *p)
{
	return walk_read(w, id, 0, p, SQK_WALK_BATCH);
}

START_TEST(test_walk_in_order)
{
	struct sqk_walk *w;
	struct walk_push p[SQK_WALK_BATCH];
	int big[20] = { [5] = 1 };

	ck_assert_int_eq(walk_create(MAXF, &w), 0);
	list(w, 1, 100, 20, big);
	ck_assert_uint_eq(walk_after_listing(w, 1, p, SQK_WALK_BATCH), 0); /* walk off */
	ck_assert_uint_eq(rd(w, 100, p), 0);
	ck_assert_uint_eq(rd(w, 101, p), 0);
	size_t n = rd(w, 102, p); /* the third in a row: on, the rest but the big one */
	ck_assert_uint_eq(n, 16);
	ck_assert_uint_eq(p[0].id, 103);
	ck_assert_uint_eq(p[0].len, 1000);
	ck_assert_uint_eq(p[1].id, 104);
	ck_assert_uint_eq(p[2].id, 106); /* 105 is above the bound */
	ck_assert_uint_eq(p[15].id, 119);
	ck_assert(!walk_unread(w, 102));
	ck_assert(walk_unread(w, 103));
	ck_assert_uint_eq(rd(w, 105, p), 0); /* the big one read through requests: nothing new */
	ck_assert_uint_eq(rd(w, 110, p), 0); /* a pushed one requested anyway: still the walk */
	ck_assert(!walk_unread(w, 110));
	/* a new listing while the walk is on pushes its first files at once */
	list(w, 2, 200, 3, NULL);
	n = walk_after_listing(w, 2, p, SQK_WALK_BATCH);
	ck_assert_uint_eq(n, 3);
	ck_assert_uint_eq(p[0].id, 200);
	ck_assert_uint_eq(walk_after_listing(w, 2, p, SQK_WALK_BATCH), 0); /* once each */
	walk_destroy(w);
}
END_TEST

START_TEST(test_walk_back_from_subdir)
{
	struct sqk_walk *w;
	struct walk_push p[SQK_WALK_BATCH];

	ck_assert_int_eq(walk_create(MAXF, &w), 0);
	list(w, 1, 100, 100, NULL); /* more than one push window */
	for (uint64_t id = 100; id < 103; id++)
		rd(w, id, p);
	/* 103..150 pushed; the walker goes into a subdirectory and reads its files */
	list(w, 2, 500, 4, NULL);
	ck_assert_uint_eq(walk_after_listing(w, 2, p, SQK_WALK_BATCH), 4);
	/* back in directory 1, the first file past the pushes: still the walk, the next ones */
	size_t n = rd(w, 151, p);
	ck_assert_uint_gt(n, 0);
	ck_assert_uint_eq(p[0].id, 152);
	walk_destroy(w);
}
END_TEST

START_TEST(test_walk_random_pushes_nothing)
{
	struct sqk_walk *w;
	struct walk_push p[SQK_WALK_BATCH];
	static const uint64_t order[] = { 7, 3, 12, 0, 18, 5, 9, 1, 15, 10, 2, 14, 6, 19, 11, 4 };

	ck_assert_int_eq(walk_create(MAXF, &w), 0);
	list(w, 1, 100, 20, NULL);
	for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++)
		ck_assert_uint_eq(rd(w, 100 + order[i], p), 0);
	ck_assert_uint_eq(rd(w, 999, p), 0); /* never listed */
	ck_assert(walk_unread(w, 999));
	/* two in order, then a jump: the streak starts again */
	ck_assert_uint_eq(rd(w, 116, p), 0);
	ck_assert_uint_eq(rd(w, 117, p), 0);
	ck_assert_uint_eq(rd(w, 108, p), 0);
	ck_assert_uint_eq(rd(w, 109, p), 0);
	ck_assert_uint_gt(rd(w, 110, p), 0); /* 108, 109, 110: three in a row */
	walk_destroy(w);
}
END_TEST

/* Pushes the store could not queue, given back, are named again by the next read in the walk. */
START_TEST(test_walk_unpush)
{
	struct sqk_walk *w;
	struct walk_push p[SQK_WALK_BATCH];

	ck_assert_int_eq(walk_create(MAXF, &w), 0);
	list(w, 1, 100, 30, NULL);
	rd(w, 100, p);
	rd(w, 101, p);
	ck_assert_uint_eq(rd(w, 102, p), 27);
	walk_unpush(w, p + 10, 17); /* 113..129 not queued */
	size_t n = rd(w, 103, p);
	ck_assert_uint_eq(n, 17);
	ck_assert_uint_eq(p[0].id, 113);
	ck_assert_uint_eq(p[16].id, 129);
	walk_destroy(w);
}
END_TEST

/* The ring forgets the oldest listings: their files are no longer named. */
START_TEST(test_walk_bounded)
{
	struct sqk_walk *w;
	struct walk_push p[SQK_WALK_BATCH];

	ck_assert_int_eq(walk_create(MAXF, &w), 0);
	list(w, 1, 100, 10, NULL);
	list(w, 2, 1000000, 20000, NULL);
	for (uint64_t id = 100; id < 110; id++)
		ck_assert_uint_eq(rd(w, id, p), 0);
	walk_destroy(w);
}
END_TEST

static Suite *walk_suite(void)
{
	Suite *s = suite_create("fuse_walk");
	TCase *tc = tcase_create("walk");

	tcase_add_test(tc, test_walk_in_order);
	tcase_add_test(tc, test_walk_back_from_subdir);
	tcase_add_test(tc, test_walk_random_pushes_nothing);
	tcase_add_test(tc, test_walk_unpush);
	tcase_add_test(tc, test_walk_bounded);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return test_run_suite(walk_suite());
}
