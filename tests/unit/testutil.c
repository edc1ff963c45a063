/* SPDX-License-Identifier: BSD-2-Clause */
/* Helpers shared by the Check suites. */
#include "testutil.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/integrity.h"
#include "sqk/io.h"
#include "mkimage/build.h"

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

void test_tree_new(char *tree, size_t cap, const char *tag)
{
	snprintf(tree, cap, "/tmp/sqk-test-%s.XXXXXX", tag);
	ck_assert_ptr_nonnull(mkdtemp(tree));
}

void test_log_add(void *ctx, const char *msg)
{
	struct test_log *l = ctx;
	size_t n = strlen(l->text);

	snprintf(l->text + n, sizeof(l->text) - n, "%s\n", msg);
	l->lines++;
}

void test_tree_put(const char *tree, const char *rel, size_t len)
{
	char p[4096];
	uint8_t *buf = malloc(len ? len : 1);
	FILE *f;

	ck_assert_ptr_nonnull(buf);
	test_fill_random(buf, len, len + 1);
	snprintf(p, sizeof(p), "%s/%s", tree, rel);
	f = fopen(p, "wb");
	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fwrite(buf, 1, len, f), len);
	fclose(f);
	free(buf);
}

void test_tree_dir(const char *tree, const char *rel)
{
	char p[4096];

	snprintf(p, sizeof(p), "%s/%s", tree, rel);
	ck_assert_int_eq(mkdir(p, 0755), 0);
}

void test_tree_remove(const char *tree)
{
	char cmd[4200];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tree);
	ck_assert_int_eq(system(cmd), 0);
}

/* test_build_dir, with mkimage --order order_file (NULL: none). */
static struct sqk_io *build_dir(const char *src, bool no_checksums, uint8_t *root,
				const char *order_file)
{
	char *sources[1] = { (char *)src };
	struct sqk_build_opts o;
	struct sqk_build_source s;
	struct sqk_build_result r;
	struct sqk_io *out;
	int err;

	sqk_build_opts_init(&o);
	o.quiet = true;
	o.block_size = 4096;
	o.no_checksums = no_checksums;
	o.order_file = order_file;
	sqk_build_source_init(&s, SQK_BUILD_DIRS);
	s.sources = sources;
	s.nsources = 1;
	sqk_build_result_init(&r);
	ck_assert_int_eq(sqk_io_mem_create(NULL, 0, &out), 0);
	err = sqk_build(&o, &s, out, &r);
	ck_assert_msg(err == 0, "build: %d %s", err, r.msg);
	ck_assert(r.have_root == !no_checksums);
	if (root)
		memcpy(root, r.root_hash, SQK_INTEG_DIGEST_SIZE);
	return out;
}

struct sqk_io *test_build_dir(const char *src, bool no_checksums, uint8_t *root)
{
	return build_dir(src, no_checksums, root, NULL);
}

struct sqk_io *test_build_ordered(const char *src, const char *order_file)
{
	return build_dir(src, false, NULL, order_file);
}

int test_listen_local(unsigned short *port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t al = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	ck_assert_int_eq(listen(fd, 64), 0);
	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&a, &al), 0);
	*port = ntohs(a.sin_port);
	return fd;
}

size_t test_read_head(int fd, char *buf, size_t cap)
{
	size_t got = 0;
	ssize_t r;

	buf[0] = '\0';
	while (got < cap - 1 && (r = read(fd, buf + got, cap - 1 - got)) > 0) {
		got += (size_t)r;
		buf[got] = '\0';
		if (strstr(buf, "\r\n\r\n"))
			break;
	}
	return got;
}
