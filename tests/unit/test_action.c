/* SPDX-License-Identifier: BSD-2-Clause */
/* Check suite for mksquashfs's actions (mkimage/action_parse.c, mkimage/action.c): the parser
 * (operators strictly left to right, parentheses, !, quotes and backslashes, arguments) and its
 * errors, each naming the word and its column; the evaluation of each test against an entry's
 * path, attributes and depth; what each action does to an entry; symbolic modes; action files
 * with continuation lines and comments. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sqk/error.h"
#include "mkimage/action.h"
#include "mkimage/source.h"
#include "testutil.h"

static char msg[512];

/* Parses the one action text into a fresh set: its code, the message in msg. */
static int parse1(struct mk_actions *a, const char *text)
{
	memset(a, 0, sizeof(*a));
	msg[0] = 0;
	return mk_actions_parse(a, text, msg, sizeof(msg));
}

/* An entry at path with mode, owner 1000:1000, size bytes. */
static struct mk_entry entry(const char *path, mode_t mode, uint64_t size)
{
	struct mk_entry e = { .path = path, .origin = path, .mode = mode, .uid = 1000, .gid = 1000,
			      .size = size, .st_size = size };
	return e;
}

static uint32_t depth(const char *p)
{
	uint32_t d = *p ? 1 : 0;
	for (; *p; p++)
		d += *p == '/';
	return d;
}

/* Whether the action text leaves the entry (path, mode, size) in. */
static bool kept(const char *text, const char *path, mode_t mode, uint64_t size)
{
	struct mk_actions a;
	ck_assert_msg(parse1(&a, text) == 0, "%s: %s", text, msg);
	struct mk_entry e = entry(path, mode, size);
	bool k = mk_actions_apply(&a, &e, depth(path), 131072);
	mk_actions_clear(&a);
	return k;
}

/* The message of a refused action, which must name what and where. */
static void refused(const char *text, const char *want)
{
	struct mk_actions a;
	int err = parse1(&a, text);
	mk_actions_clear(&a);
	ck_assert_msg(err == SQK_EINVAL, "%s: accepted", text);
	ck_assert_msg(strstr(msg, want), "%s: got \"%s\", want \"%s\"", text, msg, want);
}

/* && and || have no precedence: "a || b && c" is "(a || b) && c", as mksquashfs reads it;
 * parentheses group; ! applies to the atom after it. */
START_TEST(test_left_to_right)
{
	ck_assert(kept("exclude@true || false && false", "a", S_IFREG | 0644, 1));
	ck_assert(kept("exclude@true || (false && false)", "a", S_IFREG | 0644, 1) == false);
	ck_assert(kept("exclude@false && true || false", "a", S_IFREG | 0644, 1));
	ck_assert(!kept("exclude@false && false || true", "a", S_IFREG | 0644, 1));
	ck_assert(kept("exclude@false && (false || true)", "a", S_IFREG | 0644, 1));
	ck_assert(kept("exclude@!true", "a", S_IFREG | 0644, 1));
	ck_assert(!kept("exclude@!false && true", "a", S_IFREG | 0644, 1));
	ck_assert(kept("exclude@!(true && true)", "a", S_IFREG | 0644, 1));
	ck_assert(!kept("exclude@!!true", "a", S_IFREG | 0644, 1));
	ck_assert(!kept("exclude @ ( ( true ) )", "a", S_IFREG | 0644, 1));
	ck_assert(!kept("exclude()@true", "a", S_IFREG | 0644, 1));
}
END_TEST

/* Quotes and backslashes keep operators and blanks in a word; quotes toggle anywhere. */
START_TEST(test_quoting)
{
	ck_assert(!kept("exclude@name(\"a b\")", "d/a b", S_IFREG | 0644, 1));
	ck_assert(!kept("exclude@name(a\\ b)", "d/a b", S_IFREG | 0644, 1));
	ck_assert(!kept("exclude@name(\"x&&y||z!(),@\")", "x&&y||z!(),@", S_IFREG | 0644, 1));
	ck_assert(!kept("exclude@name(x\\&\\&y)", "x&&y", S_IFREG | 0644, 1));
	ck_assert(!kept("exclude@name(ab\"c d\"e)", "abc de", S_IFREG | 0644, 1));
	ck_assert(!kept("exclude@\"name\"(f)", "f", S_IFREG | 0644, 1));
	ck_assert(kept("exclude@name(\"a b\")", "a", S_IFREG | 0644, 1));
}
END_TEST

/* Every error is one line naming the bad word (or what was expected) and its column. */
START_TEST(test_errors)
{
	refused("chwon(1)@true", "column 1: no such action 'chwon'");
	refused("no-xattr@true", "column 1: no such action 'no-xattr'");
	refused("move(x)@true", "column 1: action 'move' is not supported");
	refused("xattrs-add(user.a)@true", "column 12: 'user.a': expected NAME=VALUE");
	refused("xattrs-add(user.=1)@true", "expected NAME=VALUE");
	refused("xattrs-add(user.a=0xABC)@true", "invalid hexadecimal value");
	refused("xattrs-add(user.a=0t\\\\18)@true", "invalid text value");
	refused("xattrs-add(user.a=0s$$$$)@true", "invalid base64 value");
	refused("xattrs-exclude(\\()@true", "column 16: regex '(': ");
	refused("exclude@mtimes(1)", "column 9: no such test 'mtimes'");
	refused("exclude@name(a) && dircount(4)", "column 20: test 'dircount' is not supported");
	refused("exclude@name(*.c", "column 17: expected \",\" or \")\", got the end");
	refused("exclude@name(a) name(b)", "column 17: expected \"&&\", \"||\" or the end, "
		"got 'name'");
	refused("exclude@(name(a)", "column 17: expected \"&&\", \"||\" or \")\", got the end");
	refused("exclude@name(a))", "column 16: expected \"&&\", \"||\" or the end, got \")\"");
	refused("exclude@name(a) ||", "column 19: expected a test, \"!\" or \"(\", got the end");
	refused("exclude@&& name(a)", "column 9: expected a test");
	refused("exclude name(a)", "column 9: expected \"(\" or \"@\", got 'name'");
	refused("@true", "column 1: expected an action, got \"@\"");
	refused("exclude@name(\"abc)", "column 14: a quote (\") not closed");
	refused("exclude@name(a,b)", "column 9: test 'name' takes 1 argument, got 2");
	refused("exclude(x)@true", "column 1: action 'exclude' takes 0 arguments, got 1");
	refused("exclude@size(1X)", "column 14: '1X': trailing characters after the number");
	refused("exclude@size(big)", "column 14: 'big': a number expected");
	refused("exclude@size_range(<1, 5)", "column 20: '<1': no <, >, - or + in a range");
	refused("exclude@type(q)", "column 14: type 'q': expected f, d, l, c, b, p or s");
	refused("chmod(u+q)@true", "column 7: mode 'u+q': expected r, w, x, X, s or t at 'q'");
	refused("chmod(19)@true", "column 7: mode '19': not an octal number");
	refused("chmod(17777)@true", "column 7: mode '17777': above 07777");
	refused("chmod(644,u+x)@true", "column 11: an octal mode is the only argument");
	refused("chmod@true", "action 'chmod' takes one or more arguments");
	refused("uid(no-such-user-sqk)@true", "column 5: 'no-such-user-sqk': no such user");
	refused("exclude@user(no-such-user-sqk)", "column 14: 'no-such-user-sqk': no such user");
	refused("gid(4294967296)@true", "no such group");
	refused("exclude@name(a\\", "a \\ with nothing after it");
}
END_TEST

/* name, pathname, subpathname: the base name, the path with "/" in front, its first
 * components; wildcards do not cross "/". */
START_TEST(test_names)
{
	mode_t f = S_IFREG | 0644, d = S_IFDIR | 0755;
	ck_assert(!kept("exclude@name(*.c)", "d1/b.c", f, 1));
	ck_assert(kept("exclude@name(d1)", "x/d1/b.c", f, 1));
	ck_assert(!kept("exclude@pathname(d1/*)", "d1/b.c", f, 1));
	ck_assert(!kept("exclude@pathname(/d1/*)", "d1/b.c", f, 1));
	ck_assert(kept("exclude@pathname(d1/*)", "d1/d2/c.c", f, 1));
	ck_assert(kept("exclude@pathname(*.c)", "d1/b.c", f, 1));
	ck_assert(!kept("exclude@subpathname(d1)", "d1", d, 0));
	ck_assert(!kept("exclude@subpathname(d1)", "d1/d2/c.c", f, 1));
	ck_assert(!kept("exclude@subpathname(d*/d2)", "d1/d2/c.c", f, 1));
	ck_assert(kept("exclude@subpathname(d1/d3)", "d1/d2/c.c", f, 1));
	ck_assert(!kept("exclude@name(\"+(a|b).c\")", "x/a.c", f, 1));
	ck_assert(kept("exclude@name(\"+(a|b).c\")", "x/c.c", f, 1));
}
END_TEST

/* Numbers: < <= = >= > (and find's - +), K/M/G; filesize only for files, dirsize only for
 * directories, size for any; ranges inclusive; depth 1 at the root's entries. */
START_TEST(test_numbers)
{
	mode_t f = S_IFREG | 0644, d = S_IFDIR | 0755;
	ck_assert(!kept("exclude@size(+1K)", "a", f, 1025));
	ck_assert(kept("exclude@size(+1K)", "a", f, 1024));
	ck_assert(!kept("exclude@size(>=1K)", "a", f, 1024));
	ck_assert(!kept("exclude@size(-1M)", "a", f, 1048575));
	ck_assert(kept("exclude@size(<1M)", "a", f, 1048576));
	ck_assert(!kept("exclude@size(<=1M)", "a", f, 1048576));
	ck_assert(!kept("exclude@size(2G)", "a", f, 2ull << 30));
	ck_assert(kept("exclude@filesize(>0)", "a", d, 4096));
	ck_assert(!kept("exclude@dirsize(>0)", "a", d, 4096));
	ck_assert(kept("exclude@dirsize(>0)", "a", f, 4096));
	ck_assert(!kept("exclude@size(4096)", "a", d, 4096));
	ck_assert(!kept("exclude@filesize_range(10, 20)", "a", f, 20));
	ck_assert(kept("exclude@filesize_range(10, 20)", "a", f, 21));
	ck_assert(!kept("exclude@tailsize(5)", "a", f, 131072 + 5));
	ck_assert(!kept("exclude@depth(1)", "a", f, 1));
	ck_assert(kept("exclude@depth(1)", "a/b", f, 1));
	ck_assert(!kept("exclude@depth(>2)", "a/b/c", f, 1));
	ck_assert(!kept("exclude@depth_range(2,3)", "a/b", f, 1));
	ck_assert(!kept("exclude@uid(1000) && gid(<1001)", "a", f, 1));
	ck_assert(kept("exclude@uid(0)", "a", f, 1));
	ck_assert(!kept("exclude@user(1000)", "a", f, 1));
	ck_assert(kept("exclude@user(root)", "a", f, 1));
	ck_assert(kept("exclude@group(root)", "a", f, 1));
}
END_TEST

/* inode, nlink and the blocks of the source's stat; fileblocks only files, dirblocks only
 * directories. */
START_TEST(test_stat_tests)
{
	struct mk_actions a;
	const char *yes[] = { "exclude@nlink(>2)", "exclude@inode(77)", "exclude@blocks(16)",
			      "exclude@fileblocks_range(10,20)", "exclude@nlink_range(3,3)" };
	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		ck_assert_msg(parse1(&a, yes[i]) == 0, "%s: %s", yes[i], msg);
		struct mk_entry e = entry("f", S_IFREG | 0644, 1);
		e.st_nlink = 3;
		e.st_ino = 77;
		e.st_blocks = 16;
		ck_assert_msg(mk_actions_apply(&a, &e, 1, 4096) == 0, "%s", yes[i]);
		e.mode = S_IFDIR | 0755;
		ck_assert_int_eq(mk_actions_apply(&a, &e, 1, 4096), i == 3 ? 1 : 0);
		mk_actions_clear(&a);
	}
}
END_TEST

/* type and perm (find's: exact, -all of the bits, /any of them; octal or symbolic). */
START_TEST(test_type_perm)
{
	ck_assert(!kept("exclude@type(l)", "a", S_IFLNK | 0777, 1));
	ck_assert(kept("exclude@type(f)", "a", S_IFLNK | 0777, 1));
	ck_assert(!kept("exclude@type(p)", "a", S_IFIFO | 0644, 0));
	ck_assert(!kept("exclude@type(s)", "a", S_IFSOCK | 0644, 0));
	ck_assert(!kept("exclude@type(c)", "a", S_IFCHR | 0644, 0));
	ck_assert(!kept("exclude@type(b)", "a", S_IFBLK | 0644, 0));
	ck_assert(!kept("exclude@perm(0600)", "a", S_IFREG | 0600, 1));
	ck_assert(kept("exclude@perm(0600)", "a", S_IFREG | 0644, 1));
	ck_assert(!kept("exclude@perm(u=rw,go=r)", "a", S_IFREG | 0644, 1));
	ck_assert(!kept("exclude@perm(-u=w)", "a", S_IFREG | 0644, 1));
	ck_assert(kept("exclude@perm(-ug=w)", "a", S_IFREG | 0644, 1));
	ck_assert(!kept("exclude@perm(/ugo=w)", "a", S_IFREG | 0604, 1));
	ck_assert(!kept("exclude@perm(/022)", "a", S_IFREG | 0620, 1));
	ck_assert(kept("exclude@perm(/022)", "a", S_IFREG | 0644, 1));
	ck_assert(!kept("exclude@perm(-4000)", "a", S_IFREG | 04755, 1));
}
END_TEST

/* Symbolic modes as mksquashfs applies them: no class = all but s/t, X for directories or
 * where some x is set, = clears the classes' bits, u/g/o copy a class's bits. */
START_TEST(test_modes)
{
	static const struct { const char *mode; mode_t in, out; } v[] = {
		{ "chmod(u+r)", S_IFREG | 0, S_IFREG | 0400 },
		{ "chmod(ug+rw)", S_IFREG | 0, S_IFREG | 0660 },
		{ "chmod(u=rw,go=r)", S_IFREG | 0777, S_IFREG | 0644 },
		{ "chmod(644)", S_IFDIR | 04777, S_IFDIR | 0644 },
		{ "chmod(ug=o)", S_IFREG | 0705, S_IFREG | 0555 },
		{ "chmod(a=rX)", S_IFDIR | 0700, S_IFDIR | 0555 },
		{ "chmod(a=rX)", S_IFREG | 0600, S_IFREG | 0444 },
		{ "chmod(a=rX)", S_IFREG | 0700, S_IFREG | 0555 },
		{ "chmod(+s)", S_IFREG | 0755, S_IFREG | 0755 },
		{ "chmod(u+s,g+s)", S_IFREG | 0755, S_IFREG | 06755 },
		{ "chmod(+t)", S_IFDIR | 0755, S_IFDIR | 0755 },
		{ "chmod(o+t)", S_IFDIR | 0755, S_IFDIR | 01755 },
		{ "chmod(go-rwx)", S_IFREG | 0777, S_IFREG | 0700 },
		{ "chmod(u=o-w)", S_IFREG | 0607, S_IFREG | 0507 },
		{ "chmod(=)", S_IFREG | 04777, S_IFREG | 04000 },
	};
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		char text[64];
		struct mk_actions a;
		snprintf(text, sizeof(text), "%s@true", v[i].mode);
		ck_assert_msg(parse1(&a, text) == 0, "%s: %s", text, msg);
		ck_assert_msg(act_mode_apply(&a.rules[0].mode, v[i].in) == v[i].out,
			      "%s on %o: %o, want %o", text, v[i].in,
			      act_mode_apply(&a.rules[0].mode, v[i].in), v[i].out);
		mk_actions_clear(&a);
	}
}
END_TEST

/* The actions: attributes changed in order (a later test sees an earlier change), chmod not
 * on symlinks, the data actions only on files, prune on the changed entry, exclude on the
 * source's; the root is never left out but its attributes change. */
START_TEST(test_apply)
{
	struct mk_actions a = { 0 };
	const char *lines[] = { "guid(7,8)@name(f)", "chmod(700)@uid(7)", "uncompressed@uid(7)",
				"no-fragments@true", "always-use-fragments@name(g)",
				"prune@perm(0700) && name(f)", "exclude@gid(8)",
				"chmod(0)@pathname(/)" };
	for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++)
		ck_assert_msg(mk_actions_parse(&a, lines[i], msg, sizeof(msg)) == 0, "%s", msg);
	struct mk_entry e = entry("d/f", S_IFREG | 0644, 10);
	ck_assert(!mk_actions_apply(&a, &e, 2, 4096)); /* pruned: 0700 after the chmod */
	e = entry("d/g", S_IFREG | 0644, 10);
	ck_assert(mk_actions_apply(&a, &e, 2, 4096));
	ck_assert_uint_eq(e.mode, S_IFREG | 0644);
	ck_assert_uint_eq(e.act_raw, MK_ACT_DEFAULT);
	ck_assert_uint_eq(e.act_frag, MK_ACT_OFF);
	ck_assert_uint_eq(e.act_tail, MK_ACT_ON);
	e = entry("d/g", S_IFLNK | 0777, 3);
	ck_assert(mk_actions_apply(&a, &e, 2, 4096));
	ck_assert_uint_eq(e.act_frag, MK_ACT_DEFAULT);
	e = entry("", S_IFDIR | 0755, 0);
	ck_assert(mk_actions_apply(&a, &e, 0, 4096));
	ck_assert_uint_eq(e.mode, S_IFDIR);
	mk_actions_clear(&a);

	ck_assert_int_eq(parse1(&a, "guid(7,8)@true"), 0);
	ck_assert_int_eq(mk_actions_parse(&a, "uncompressed@uid(7)", msg, sizeof(msg)), 0);
	ck_assert_int_eq(mk_actions_parse(&a, "chmod(u+x)@true", msg, sizeof(msg)), 0);
	e = entry("f", S_IFREG | 0644, 10);
	ck_assert(mk_actions_apply(&a, &e, 1, 4096));
	ck_assert_uint_eq(e.uid, 7);
	ck_assert_uint_eq(e.gid, 8);
	ck_assert_uint_eq(e.act_raw, MK_ACT_ON);
	ck_assert_uint_eq(e.mode, S_IFREG | 0744);
	e = entry("l", S_IFLNK | 0777, 1);
	ck_assert(mk_actions_apply(&a, &e, 1, 4096));
	ck_assert_uint_eq(e.mode, S_IFLNK | 0777);
	ck_assert_uint_eq(e.uid, 7);
	mk_actions_clear(&a);

	/* exclude sees the source's attributes, before any change */
	ck_assert_int_eq(parse1(&a, "guid(7,8)@true"), 0);
	ck_assert_int_eq(mk_actions_parse(&a, "exclude@uid(7)", msg, sizeof(msg)), 0);
	e = entry("f", S_IFREG | 0644, 10);
	ck_assert(mk_actions_apply(&a, &e, 1, 4096));
	mk_actions_clear(&a);
}
END_TEST

/* xattrs-exclude drops the names its regex matches, where its test holds; where some
 * xattrs-include tests hold, only the names one of their regexes matches stay. */
START_TEST(test_xattrs)
{
	static const struct mk_xattr_kv kv[] = {
		{ "user.a", "A", 1 }, { "user.b", "B", 1 }, { "trusted.x", "X", 1 },
	};
	struct mk_actions a = { 0 };
	const char *lines[] = { "xattrs-exclude(^user\\.a$)@name(f*)",
				"xattrs-include(^user)@type(d)", "xattrs-include(x$)@name(dd)" };
	for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++)
		ck_assert_msg(mk_actions_parse(&a, lines[i], msg, sizeof(msg)) == 0, "%s", msg);
	struct mk_entry e = entry("f1", S_IFREG | 0644, 1);
	e.xattrs = kv;
	e.nxattrs = 3;
	ck_assert_int_eq(mk_actions_apply(&a, &e, 1, 4096), 1);
	ck_assert_uint_eq(e.nxattrs, 2);
	ck_assert_str_eq(e.xattrs[0].name, "user.b");
	ck_assert_str_eq(e.xattrs[1].name, "trusted.x");
	e = entry("dd", S_IFDIR | 0755, 1);
	e.xattrs = kv;
	e.nxattrs = 3;
	ck_assert_int_eq(mk_actions_apply(&a, &e, 1, 4096), 1);
	ck_assert_uint_eq(e.nxattrs, 3); /* each name matches one of the two includes */
	e = entry("d", S_IFDIR | 0755, 1);
	e.xattrs = kv;
	e.nxattrs = 3;
	ck_assert_int_eq(mk_actions_apply(&a, &e, 1, 4096), 1);
	ck_assert_uint_eq(e.nxattrs, 2);
	ck_assert_str_eq(e.xattrs[1].name, "user.b");
	e = entry("g", S_IFREG | 0644, 1);
	e.xattrs = kv;
	e.nxattrs = 3;
	ck_assert_int_eq(mk_actions_apply(&a, &e, 1, 4096), 1);
	ck_assert_uint_eq(e.nxattrs, 3);
	mk_actions_clear(&a);

	/* xattrs-add, each value form; user. ones not on symlinks */
	const char *adds[] = { "xattrs-add(user.p=plain)@true", "xattrs-add(user.h=0x4142)@true",
			       "xattrs-add(user.s=0sQUJD)@true", "xattrs-add(user.u=0sQUI)@true",
			       "xattrs-add(user.t=0ta\\\\101b)@true",
			       "xattrs-add(trusted.b=0b0x41)@true" };
	static const struct { const char *v; size_t n; } want[] = {
		{ "plain", 5 }, { "AB", 2 }, { "ABC", 3 }, { "AB", 2 }, { "aAb", 3 }, { "0x41", 4 },
	};
	for (size_t i = 0; i < sizeof(adds) / sizeof(adds[0]); i++)
		ck_assert_msg(mk_actions_parse(&a, adds[i], msg, sizeof(msg)) == 0, "%s", msg);
	e = entry("f", S_IFREG | 0644, 1);
	ck_assert_int_eq(mk_actions_apply(&a, &e, 1, 4096), 1);
	ck_assert_uint_eq(e.nxattrs, 6);
	for (size_t i = 0; i < 6; i++) {
		ck_assert_uint_eq(e.xattrs[i].size, want[i].n);
		ck_assert(!memcmp(e.xattrs[i].value, want[i].v, want[i].n));
	}
	e = entry("l", S_IFLNK | 0777, 1);
	ck_assert_int_eq(mk_actions_apply(&a, &e, 1, 4096), 1);
	ck_assert_uint_eq(e.nxattrs, 1);
	ck_assert_str_eq(e.xattrs[0].name, "trusted.b");
	mk_actions_clear(&a);
}
END_TEST

/* sqk's extensions (not in mksquashfs 4.7.5): chown as chown(1) or guid, no-fragment,
 * always-fragment and no-xattrs, the mtime and mtime_range tests (seconds or a date string). */
START_TEST(test_extensions)
{
	static const struct mk_xattr_kv kv[] = { { "user.a", "A", 1 }, { "trusted.x", "X", 1 } };
	struct mk_actions a = { 0 };
	const char *lines[] = { "chown(7:8)@name(a)", "chown(9)@name(b)", "chown(:6)@name(c)",
				"chown(3, 4)@name(d)", "no-fragment@name(a)",
				"always-fragment@name(b)", "no-xattrs@name(c)",
				"xattrs-add(user.n=1)@true" };
	for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++)
		ck_assert_msg(mk_actions_parse(&a, lines[i], msg, sizeof(msg)) == 0, "%s: %s",
			      lines[i], msg);
	static const struct { const char *p; uint32_t uid, gid; int frag, tail; size_t nx; } w[] = {
		{ "a", 7, 8, MK_ACT_OFF, MK_ACT_DEFAULT, 3 },
		{ "b", 9, 1000, MK_ACT_DEFAULT, MK_ACT_ON, 3 },
		{ "c", 1000, 6, MK_ACT_DEFAULT, MK_ACT_DEFAULT, 0 },
		{ "d", 3, 4, MK_ACT_DEFAULT, MK_ACT_DEFAULT, 3 },
	};
	for (size_t i = 0; i < sizeof(w) / sizeof(w[0]); i++) {
		struct mk_entry e = entry(w[i].p, S_IFREG | 0644, 10);
		e.xattrs = kv;
		e.nxattrs = 2;
		ck_assert_int_eq(mk_actions_apply(&a, &e, 1, 4096), 1);
		ck_assert_uint_eq(e.uid, w[i].uid);
		ck_assert_uint_eq(e.gid, w[i].gid);
		ck_assert_int_eq(e.act_frag, w[i].frag);
		ck_assert_int_eq(e.act_tail, w[i].tail);
		ck_assert_uint_eq(e.nxattrs, w[i].nx);
	}
	mk_actions_clear(&a);
	refused("chown(1:2:3)@true", "'2:3': no such group");
	refused("chown(:)@true", "column 7: chown: a user or a group expected");
	refused("chown(1,2,3)@true", "action 'chown' takes USER[:GROUP] or USER, GROUP");
	refused("no-fragment(1)@true", "action 'no-fragment' takes 0 arguments");

	/* mtime: <, <=, =, >=, >, ranges; seconds or what date -d reads */
	static const struct { const char *t; int64_t mtime; bool excluded; } m[] = {
		{ "mtime(<100)", 99, true }, { "mtime(<100)", 100, false },
		{ "mtime(<=100)", 100, true }, { "mtime(100)", 100, true },
		{ "mtime(100)", 101, false }, { "mtime(>=100)", 100, true },
		{ "mtime(>100)", 100, false }, { "mtime(>100)", 101, true },
		{ "mtime(\"<2024-01-01 00:00:00 UTC\")", 1704067199, true },
		{ "mtime(\"<2024-01-01 00:00:00 UTC\")", 1704067200, false },
		{ "mtime(\"@1704067200\")", 1704067200, true },
		{ "mtime_range(10, 20)", 10, true }, { "mtime_range(10, 20)", 20, true },
		{ "mtime_range(10, 20)", 21, false }, { "mtime_range(10, 20)", 9, false },
		{ "mtime(>10) && mtime(<20)", 15, true },
	};
	for (size_t i = 0; i < sizeof(m) / sizeof(m[0]); i++) {
		char text[128];
		snprintf(text, sizeof(text), "exclude@%s", m[i].t);
		ck_assert_msg(parse1(&a, text) == 0, "%s: %s", text, msg);
		struct mk_entry e = entry("f", S_IFREG | 0644, 1);
		e.mtime = m[i].mtime;
		ck_assert_msg(mk_actions_apply(&a, &e, 1, 4096) == !m[i].excluded, "%s at %lld",
			      text, (long long)m[i].mtime);
		mk_actions_clear(&a);
	}
	refused("exclude@mtime(<notadate)", "column 15: '<notadate': need "
		"seconds since 1970 or a date");
	refused("exclude@mtime()", "column 9: test 'mtime' takes 1 argument, got 0");
	refused("exclude@mtime_range(<1, 5)", "column 21: '<1': no <, <=, > or >= in a range");
	refused("exclude@mtime(4294967296)", "need seconds since 1970");

	/* act_mode_parse: a mode string (-root-mode) read by the chmod action's parser */
	static const struct { const char *spec; mode_t old, want; } md[] = {
		{ "u=rwx,go=rx", S_IFDIR | 02750, S_IFDIR | 0755 },
		{ "=rx", S_IFDIR | 02750, S_IFDIR | 02555 }, /* no who: set-id bits stay */
		{ "+s", S_IFDIR | 0750, S_IFDIR | 0750 },
		{ "g=u,o+X", S_IFDIR | 0700, S_IFDIR | 0771 },
		{ "755", S_IFREG | 04600, S_IFREG | 0755 },
	};
	for (size_t i = 0; i < sizeof(md) / sizeof(md[0]); i++) {
		struct act_mode am;
		ck_assert_msg(act_mode_parse(md[i].spec, &am, msg, sizeof(msg)) == 0, "%s: %s",
			      md[i].spec, msg);
		ck_assert_msg(act_mode_apply(&am, md[i].old) == md[i].want, "%s: %o", md[i].spec,
			      (unsigned)act_mode_apply(&am, md[i].old));
		free(am.ops);
	}
	static const struct { const char *spec, *want; } bad[] = {
		{ "u+rw,", "expected an octal mode" }, { "", "expected an octal mode" },
		{ "g=uo", "mode 'g=uo': expected +, - or = at 'o'" },
		{ "u+q", "expected an octal mode" }, { "u)", "expected an octal mode" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct act_mode am;
		ck_assert_int_eq(act_mode_parse(bad[i].spec, &am, msg, sizeof(msg)), SQK_EINVAL);
		ck_assert_msg(strstr(msg, bad[i].want), "%s: got \"%s\"", bad[i].spec, msg);
		free(am.ops);
	}
}
END_TEST

/* An action file: one a line, \ continues it, blank and # lines skipped; an error names the
 * line it starts on. */
START_TEST(test_file)
{
	char path[] = "/tmp/sqk-act-XXXXXX";
	int fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	const char *text = "# a comment\n\n   exclude@name(a) \\\n || name(b)\n"
			   "chmod(600)@true\n  # another\nexclude@name(c) &&\\\n \\\n bogus(1)\n";
	ck_assert_int_eq(write(fd, text, strlen(text)), (int)strlen(text));
	close(fd);
	struct mk_actions a = { 0 };
	ck_assert_int_eq(mk_actions_parse_file(&a, path, msg, sizeof(msg)), SQK_EINVAL);
	ck_assert_msg(strstr(msg, "line 7: column ") && strstr(msg, "no such test 'bogus'"),
		      "%s", msg);
	ck_assert_uint_eq(a.n, 2);
	struct mk_entry e = entry("x/b", S_IFREG | 0644, 1);
	ck_assert(!mk_actions_apply(&a, &e, 2, 4096));
	mk_actions_clear(&a);
	unlink(path);
	ck_assert_int_ne(mk_actions_parse_file(&a, path, msg, sizeof(msg)), 0);
	ck_assert_msg(strstr(msg, "cannot open"), "%s", msg);
	mk_actions_clear(&a);
}
END_TEST

static Suite *action_suite(void)
{
	Suite *s = suite_create("action");
	TCase *t = tcase_create("action");
	tcase_add_test(t, test_left_to_right);
	tcase_add_test(t, test_quoting);
	tcase_add_test(t, test_errors);
	tcase_add_test(t, test_names);
	tcase_add_test(t, test_numbers);
	tcase_add_test(t, test_stat_tests);
	tcase_add_test(t, test_type_perm);
	tcase_add_test(t, test_modes);
	tcase_add_test(t, test_apply);
	tcase_add_test(t, test_xattrs);
	tcase_add_test(t, test_file);
	tcase_add_test(t, test_extensions);
	suite_add_tcase(s, t);
	return s;
}

int main(void)
{
	return test_run_suite(action_suite());
}
