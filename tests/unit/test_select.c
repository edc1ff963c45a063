/* SPDX-License-Identifier: BSD-2-Clause */
/* Check suite for the readers' selection and option parser (cli/select.c, cli/cmdopt.c): on an
 * image built in memory, unsquashfs's matching (a component at a time, a whole match bringing
 * its subtree, directories made on the way, no hidden names for '*', excludes, the depth
 * bound, a literal name with wildcard characters, a callback that skips a directory or stops);
 * and the parser's order of words, single-dash long names, clusters, "--" and its one-line
 * errors. unsquashfs itself is compared in tests/integration/t_56_extract_habits.sh. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cmd.h"
#include "cli/cmdopt.h"
#include "cli/select.h"
#include "sqk/sqk.h"
#include "testutil.h"

static char tree[64];
static struct sqk_io *io;
static struct sqk_image *img;

/* a/b/c/h, a/b/g, a/f1, a/f12, a/.dot, d/f1x, e/, top, .h/x, "st[x]" */
static void setup(void)
{
	test_tree_new(tree, sizeof(tree), "select");
	test_tree_dir(tree, "a");
	test_tree_dir(tree, "a/b");
	test_tree_dir(tree, "a/b/c");
	test_tree_dir(tree, "d");
	test_tree_dir(tree, "e");
	test_tree_dir(tree, ".h");
	test_tree_put(tree, "a/b/c/h", 1);
	test_tree_put(tree, "a/b/g", 2);
	test_tree_put(tree, "a/f1", 3);
	test_tree_put(tree, "a/f12", 4);
	test_tree_put(tree, "a/.dot", 5);
	test_tree_put(tree, "d/f1x", 6);
	test_tree_put(tree, "top", 7);
	test_tree_put(tree, ".h/x", 8);
	test_tree_put(tree, "st[x]", 9);
	io = test_build_dir(tree, false, NULL);
	ck_assert_int_eq(sqk_image_open_io(io, NULL, &img), 0);
}

static void teardown(void)
{
	sqk_image_close(img);
	sqk_io_destroy(io);
	test_tree_remove(tree);
}

/* What a walk reported: "path" for a whole entry, "path+" for one on the way, "<" for a
 * directory left; space-separated. */
struct seen {
	char buf[1024];
	const char *skip;  /* a path whose directory is not entered (callback returns 1) */
	const char *stop;  /* a path at which the walk is ended (-77) */
};

static int record(void *ctx, const struct sel_entry *e)
{
	struct seen *s = ctx;
	size_t n = strlen(s->buf);

	ck_assert_int_eq(e->err, 0);
	if (e->post) {
		snprintf(s->buf + n, sizeof(s->buf) - n, "< ");
		return 0;
	}
	snprintf(s->buf + n, sizeof(s->buf) - n, "%s%s ", *e->path ? e->path : "/",
		 e->whole ? "" : "+");
	if (s->stop && !strcmp(e->path, s->stop))
		return -77;
	return s->skip && !strcmp(e->path, s->skip);
}

/* Walks with the patterns (a NULL-terminated list; "!x" an exclude) and depth; returns the
 * record (static). */
static const char *walk(uint32_t depth, const char *const *pats, const char *skip)
{
	static struct seen s;
	struct sel sel;

	memset(&s, 0, sizeof(s));
	s.skip = skip;
	sel_init(&sel);
	sel.max_depth = depth;
	for (; *pats; pats++)
		ck_assert_int_eq(sel_add(&sel, **pats == '!' ? *pats + 1 : *pats, **pats == '!'),
				 0);
	ck_assert_int_eq(sel_walk(&sel, img, record, &s), 0);
	sel_free(&sel);
	return s.buf;
}

#define WALK(depth, ...) walk(depth, (const char *const[]){ __VA_ARGS__, NULL }, NULL)
#define ALL SEL_NO_MAX_DEPTH

START_TEST(test_everything)
{
	ck_assert_str_eq(walk(ALL, (const char *const[]){ NULL }, NULL),
			 "/ .h .h/x < a a/.dot a/b a/b/c a/b/c/h < a/b/g < a/f1 a/f12 < d d/f1x "
			 "< e < st[x] top < ");
}
END_TEST

START_TEST(test_globs)
{
	ck_assert_str_eq(WALK(ALL, "a/f1*"), "/+ a+ a/f1 a/f12 < < ");
	/* e matches '*' and is made on the way, empty; top is no directory: not */
	ck_assert_str_eq(WALK(ALL, "*/f1*"), "/+ a+ a/f1 a/f12 < d+ d/f1x < e+ < < ");
	ck_assert_str_eq(WALK(ALL, "a/*/c"), "/+ a+ a/b+ a/b/c a/b/c/h < < < < ");
	/* a leading '.' only explicitly */
	ck_assert_str_eq(WALK(ALL, "?h/*", ".?/x"), "/+ .h+ .h/x < < ");
	ck_assert_str_eq(WALK(ALL, "//a//b/"), "/+ a+ a/b a/b/c a/b/c/h < a/b/g < < < ");
	/* a whole match wins over one on the way */
	ck_assert_str_eq(WALK(ALL, "a/b/c", "a"),
			 "/+ a a/.dot a/b a/b/c a/b/c/h < a/b/g < a/f1 a/f12 < < ");
	ck_assert_str_eq(WALK(ALL, "nothing*"), "/+ < ");
	ck_assert_str_eq(WALK(ALL, "/"), "/ .h .h/x < a a/.dot a/b a/b/c a/b/c/h < a/b/g < a/f1 "
			 "a/f12 < d d/f1x < e < st[x] top < ");
}
END_TEST

START_TEST(test_excludes_depth)
{
	ck_assert_str_eq(WALK(ALL, "!a/b", "!top", "!.h", "!st*"),
			 "/ a a/.dot a/f1 a/f12 < d d/f1x < e < < ");
	ck_assert_str_eq(WALK(ALL, "a", "!*/f1*"), "/+ a a/.dot a/b a/b/c a/b/c/h < a/b/g < < < ");
	ck_assert_str_eq(WALK(0, "a"), "/+ < ");
	ck_assert_str_eq(WALK(1, "!st*"), "/ .h < a < d < e < top < ");
	ck_assert_str_eq(WALK(2, "a"), "/+ a a/.dot a/b < a/f1 a/f12 < < ");
	ck_assert_str_eq(WALK(1, "a/b"), "/+ a+ < < ");
}
END_TEST

START_TEST(test_literal_and_callback)
{
	struct seen s = { .stop = "a/f1" };
	struct sel sel;

	/* "st[x]" as a pattern matches "stx", not the name "st[x]"; made literal, it does */
	ck_assert(sel_is_glob("st[x]") && !sel_is_glob("a/b c"));
	ck_assert_str_eq(WALK(ALL, "st[x]"), "/+ < ");
	sel_init(&sel);
	ck_assert_int_eq(sel_add(&sel, "st[x]", false), 0);
	ck_assert_int_eq(sel_make_literal(&sel, 0), 0);
	ck_assert_int_eq(sel_walk(&sel, img, record, &s), 0);
	ck_assert_str_eq(s.buf, "/+ st[x] < ");
	ck_assert(sel.pats[0].hit);
	sel_free(&sel);
	/* 1 leaves a directory unentered (its POST still comes); a negative value ends it */
	ck_assert_str_eq(walk(ALL, (const char *const[]){ "a", NULL }, "a/b"),
			 "/+ a a/.dot a/b < a/f1 a/f12 < < ");
	memset(s.buf, 0, sizeof(s.buf));
	sel_init(&sel);
	ck_assert_int_eq(sel_walk(&sel, img, record, &s), -77);
	ck_assert_str_eq(s.buf, "/ .h .h/x < a a/.dot a/b a/b/c a/b/c/h < a/b/g < a/f1 ");
	sel_free(&sel);
}
END_TEST

/* ---- cmdopt ---- */

static const struct option longs[] = {
	{ "dest", required_argument, NULL, 'd' },
	{ "force", no_argument, NULL, 'f' },
	{ "max-depth", required_argument, NULL, 'm' },
	{ "max-rate", required_argument, NULL, 'r' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

/* Parses the words (argv[0] "t") into a record: "c=arg" per option, "@word" per positional,
 * "ERR" for an error (then stops). */
static const char *parse(char **argv, int argc)
{
	static char out[512];
	struct cmdopt p;
	int ch;

	out[0] = '\0';
	cmdopt_init(&p, "t", argc, argv, longs, "d:fj:nh");
	while ((ch = cmdopt_next(&p)) != CMDOPT_END) {
		size_t n = strlen(out);

		if (ch == CMDOPT_ERR) {
			snprintf(out + n, sizeof(out) - n, "ERR[%s]", p.msg);
			break;
		}
		if (ch == CMDOPT_POS)
			snprintf(out + n, sizeof(out) - n, "@%s ", p.arg);
		else
			snprintf(out + n, sizeof(out) - n, "%c=%s ", ch, p.arg ? p.arg : "");
	}
	return out;
}

#define PARSE(...) parse((char *[]){ "t", __VA_ARGS__, NULL }, \
			 (int)(sizeof((char *[]){ "t", __VA_ARGS__ }) / sizeof(char *)))

START_TEST(test_cmdopt)
{
	char *v[] = { "t", "img", "-f", "p1", "--", "-x", NULL };
	struct cmdopt p;

	ck_assert_str_eq(PARSE("img", "-dest", "out", "a", "-force", "b"),
			 "@img d=out @a f= @b ");
	ck_assert_str_eq(PARSE("--dest=o", "--fo", "-fj4", "-nd", "x", "--max-d", "3"),
			 "d=o f= f= j=4 n= d=x m=3 ");
	ck_assert_str_eq(PARSE("a", "--", "-f", "--dest"), "@a @-f @--dest ");
	ck_assert_str_eq(PARSE("-", "-h"), "@- h= ");
	ck_assert_str_eq(PARSE("img", "-fh"),
			 "@img f= ERR[unknown option '-h' (in '-fh'); sqk t --help lists the "
			 "options]");
	ck_assert_str_eq(PARSE("-x1"), "ERR[unknown option '-x1'; sqk t --help lists the options]");
	ck_assert_str_eq(PARSE("--max", "1"),
			 "ERR[ambiguous option '--max'; sqk t --help lists the options]");
	ck_assert_str_eq(PARSE("-max", "1"),
			 "ERR[unknown option '-max'; sqk t --help lists the options]");
	ck_assert_str_eq(PARSE("--force=1"),
			 "ERR[option '--force' takes no value; sqk t --help lists the options]");
	ck_assert_str_eq(PARSE("x", "-d"),
			 "@x ERR[option '-d' needs a value; sqk t --help lists the options]");
	/* positionals are also gathered at argv[1..npos], in order */
	cmdopt_init(&p, "t", 6, v, longs, "d:fj:nh");
	while (cmdopt_next(&p) != CMDOPT_END)
		;
	ck_assert_int_eq(p.npos, 3);
	ck_assert_str_eq(v[1], "img");
	ck_assert_str_eq(v[2], "p1");
	ck_assert_str_eq(v[3], "-x");
}
END_TEST

/* sel_check_paths, shared by extract and ls: a missing literal PATH fails, a pattern that
 * names an entry as written becomes that entry, excludes are not looked up; sel_path_ok. */
START_TEST(test_check_paths)
{
	struct cmd c = { .name = "test", .image = "img", .img = img };
	struct seen rec = { 0 };
	struct sel sel;

	sel_init(&sel);
	ck_assert_int_eq(sel_add(&sel, "st[x]", false), 0);
	ck_assert_int_eq(sel_add(&sel, "/a//f1", false), 0);
	ck_assert_int_eq(sel_add(&sel, "nothing*", false), 0);
	ck_assert_int_eq(sel_add(&sel, "gone", true), 0);
	ck_assert_int_eq(sel_check_paths(&sel, &c, "listed"), 0);
	ck_assert_int_eq(sel_walk(&sel, img, record, &rec), 0);
	ck_assert_str_eq(rec.buf, "/+ a+ a/f1 < st[x] < ");
	ck_assert(sel.pats[0].hit && sel.pats[1].hit && !sel.pats[2].hit);
	sel_warn_unmatched(&sel, &c);
	ck_assert_int_eq(sel_add(&sel, "a/nope", false), 0);
	ck_assert_int_eq(sel_check_paths(&sel, &c, "listed"), -1);
	sel_free(&sel);
	ck_assert(sel_path_ok("a/b.c/.d/..e") && sel_path_ok("/a//b/"));
	ck_assert(!sel_path_ok("a/./b") && !sel_path_ok("..") && !sel_path_ok("a/.."));
}
END_TEST

static Suite *select_suite(void)
{
	Suite *s = suite_create("select");
	TCase *t = tcase_create("select");
	TCase *o = tcase_create("cmdopt");

	tcase_add_checked_fixture(t, setup, teardown);
	tcase_add_test(t, test_everything);
	tcase_add_test(t, test_globs);
	tcase_add_test(t, test_excludes_depth);
	tcase_add_test(t, test_literal_and_callback);
	tcase_add_test(t, test_check_paths);
	tcase_add_test(o, test_cmdopt);
	suite_add_tcase(s, t);
	suite_add_tcase(s, o);
	return s;
}

int main(void)
{
	return test_run_suite(select_suite());
}
