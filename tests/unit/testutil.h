/* SPDX-License-Identifier: BSD-2-Clause */
/* Helpers shared by the Check suites (linked into every test program). */
#ifndef SQK_TESTUTIL_H
#define SQK_TESTUTIL_H

#include <check.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Next value of a xorshift64 generator with state *s (non-zero). */
uint64_t test_xorshift(uint64_t *s);

/* Fills p[0..len) with deterministic pseudo-random bytes derived from seed (incompressible). */
void test_fill_random(uint8_t *p, size_t len, uint64_t seed);

/* Runs suite s (Check frees it); returns the test program's exit status. */
int test_run_suite(Suite *s);

struct sqk_io;

/* Source trees on disk for the suites that build from a directory. tree is the caller's
 * buffer of cap bytes; test_tree_new makes a fresh /tmp/sqk-test-TAG.XXXXXX in it. */
void test_tree_new(char *tree, size_t cap, const char *tag);

/* Writes tree/rel: len deterministic incompressible bytes (seeded by len). */
void test_tree_put(const char *tree, const char *rel, size_t len);

/* Makes the directory tree/rel (mode 0755). */
void test_tree_dir(const char *tree, const char *rel);

/* Removes the whole tree. */
void test_tree_remove(const char *tree);

/* The lines a library's log callback was given (sqk_open_opts.log, sqk_http_opts.log: ctx a
 * zeroed struct test_log), one after another, and their count. */
struct test_log {
	char text[8192];
	int lines;
};

void test_log_add(void *ctx, const char *msg);

/* Builds the directory src through sqk_build (quiet, 4 KiB blocks, integrity data unless
 * no_checksums) into a memory image; copies the root digest into root when not NULL. Fails the
 * test on any error. Caller owns the result (sqk_io_destroy). */
struct sqk_io *test_build_dir(const char *src, bool no_checksums, uint8_t *root);

/* The same with integrity data and mkimage --order order_file: the files it lists laid out
 * first, with a prefetch hint. */
struct sqk_io *test_build_ordered(const char *src, const char *order_file);

/* A listening TCP socket on 127.0.0.1, on a port the kernel chose (in *port). Fails the test
 * on any error. Caller owns the descriptor. */
int test_listen_local(unsigned short *port);

/* Reads an HTTP request's head from fd into buf (cap bytes): up to its blank line, or cap - 1
 * bytes, or the end of the stream; always NUL-terminated. Returns the bytes read. */
size_t test_read_head(int fd, char *buf, size_t cap);

#endif
