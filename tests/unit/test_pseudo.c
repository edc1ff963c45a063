/* SPDX-License-Identifier: BSD-2-Clause */
/* Check suite for pseudo definitions and pack files (mkimage/pseudo*.c, symmode.c): sqk_build
 * from definitions alone (SQK_BUILD_NONE) into a memory image, read back through libsqk. Each
 * definition type makes the entry it names (d c b s i f x L R, timed forms, -pd parents), a
 * failing f command fails the build naming the definition and the exit status, symbolic modes
 * follow chmod's rules, each pack-file keyword makes its entry (glob: t_38), and bad lines are
 * refused with the file, line and column. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sqk/error.h"
#include "sqk/io.h"
#include "sqk/sqk.h"
#include "mkimage/build.h"
#include "mkimage/symmode.h"
#include "testutil.h"

/* What a build takes: inline definitions, a pseudo file, a pack file, -pd. */
struct inputs {
	const char *const *defs;
	int ndefs;
	const char *pseudo_file;
	const char *pack_file;
	const char *pack_dir;
	const char *pd;
};

/* Builds in into *mem (caller destroys); returns the error, the message in msg (1024). */
static int build(const struct inputs *in, struct sqk_io **mem, char *msg)
{
	struct sqk_build_opts o;
	struct sqk_build_source s;
	struct sqk_build_result r;
	struct sqk_build_pseudo p[16];
	int n = 0;
	sqk_build_opts_init(&o);
	o.quiet = true;
	o.block_size = 4096;
	o.image = "/nonexistent/img";
	sqk_build_source_init(&s, SQK_BUILD_NONE);
	if (in->pseudo_file)
		p[n++] = (struct sqk_build_pseudo){ .file = true, .arg = in->pseudo_file };
	for (int i = 0; i < in->ndefs && n < 16; i++)
		p[n++] = (struct sqk_build_pseudo){ .file = false, .arg = in->defs[i] };
	s.pseudo = p;
	s.npseudo = n;
	s.pack_file = in->pack_file;
	s.pack_dir = in->pack_dir;
	s.pseudo_dir = in->pd;
	sqk_build_result_init(&r);
	ck_assert_int_eq(sqk_io_mem_create(NULL, 0, mem), 0);
	int err = sqk_build(&o, &s, *mem, &r);
	snprintf(msg, 1024, "%s", r.msg);
	return err;
}

static struct sqk_image *build_ok(const struct inputs *in, struct sqk_io **mem)
{
	char msg[1024];
	struct sqk_image *img;
	int err = build(in, mem, msg);
	ck_assert_msg(err == 0, "build failed: %s", msg);
	ck_assert_int_eq(sqk_image_open_io(*mem, NULL, &img), 0);
	return img;
}

/* The build fails, its message holding each of want[0..n). */
static void build_fails(const struct inputs *in, const char *const *want, int n)
{
	char msg[1024];
	struct sqk_io *mem;
	ck_assert_int_ne(build(in, &mem, msg), 0);
	for (int i = 0; i < n; i++)
		ck_assert_msg(strstr(msg, want[i]), "'%s' not in '%s'", want[i], msg);
	sqk_io_destroy(mem);
}

static struct sqk_inode get(struct sqk_image *img, const char *path)
{
	struct sqk_inode ino;
	ck_assert_msg(sqk_lookup_path(img, path, &ino) == 0, "%s missing", path);
	return ino;
}

static void assert_text(struct sqk_image *img, const char *path, const char *want)
{
	struct sqk_inode ino = get(img, path);
	char buf[256];
	ssize_t n = sqk_read(img, &ino, buf, sizeof(buf) - 1, 0);
	ck_assert_int_ge(n, 0);
	buf[n] = 0;
	ck_assert_str_eq(buf, want);
}

/* A temporary file holding text; path is a buffer of 64 bytes. */
static void temp_file(char *path, const char *text)
{
	snprintf(path, 64, "/tmp/sqk-pseudo.XXXXXX");
	int fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

/* Every type of definition makes the entry it names, with its mode, owner and time. */
START_TEST(test_each_type)
{
	static const char *const defs[] = {
		"/ d 0750 1 2", "dev d 755 0 0", "dev/null c 666 0 0 1 3",
		"dev/sda B 1600000000 660 0 6 8 0", "bin S 1600000001 777 0 0 usr/bin",
		"run D 1600000002 1777 0 0", "run/fifo i 620 0 0 f", "run/sock I 5 600 0 0 s",
		"etc d u=rwx,go=rx 0 0", "etc/motd f 644 0 0 printf 'hi %s' there",
		"etc/motd x user.note=0x6869", "etc/motd x user.text=plain words",
		"etc/motd2 L etc/motd", "etc/ver F 1700000000 0400 3 4 echo 1.0",
	};
	struct inputs in = { .defs = defs, .ndefs = (int)(sizeof(defs) / sizeof(defs[0])) };
	struct sqk_io *mem;
	struct sqk_image *img = build_ok(&in, &mem);
	struct sqk_inode root, i;
	ck_assert_int_eq(sqk_image_root(img, &root), 0);
	ck_assert_uint_eq(root.mode, S_IFDIR | 0750);
	ck_assert_uint_eq(root.uid, 1);
	ck_assert_uint_eq(root.gid, 2);
	i = get(img, "dev/null");
	ck_assert_uint_eq(i.mode, S_IFCHR | 0666);
	ck_assert_uint_eq(sqk_rdev_major(i.rdev), 1);
	ck_assert_uint_eq(sqk_rdev_minor(i.rdev), 3);
	i = get(img, "dev/sda");
	ck_assert_uint_eq(i.mode, S_IFBLK | 0660);
	ck_assert_uint_eq(i.gid, 6);
	ck_assert_uint_eq(i.mtime, 1600000000);
	i = get(img, "bin");
	ck_assert_uint_eq(i.mode, S_IFLNK | 0777);
	ck_assert_uint_eq(i.mtime, 1600000001);
	char target[64];
	size_t tlen;
	ck_assert_int_eq(sqk_readlink(img, &i, target, sizeof(target), &tlen), 0);
	ck_assert_str_eq(target, "usr/bin");
	ck_assert_uint_eq(get(img, "run").mode, S_IFDIR | 01777);
	ck_assert_uint_eq(get(img, "run/fifo").mode, S_IFIFO | 0620);
	i = get(img, "run/sock");
	ck_assert_uint_eq(i.mode, S_IFSOCK | 0600);
	ck_assert_uint_eq(i.mtime, 5);
	ck_assert_uint_eq(get(img, "etc").mode, S_IFDIR | 0755);
	assert_text(img, "etc/motd", "hi there");
	i = get(img, "etc/motd");
	ck_assert_uint_eq(i.nlink, 2);
	ck_assert_uint_eq(get(img, "etc/motd2").ino, i.ino);
	char val[32];
	size_t vlen;
	ck_assert_int_eq(sqk_xattr_get(img, &i, "user.note", val, sizeof(val), &vlen), 0);
	ck_assert_uint_eq(vlen, 2);
	ck_assert(!memcmp(val, "hi", 2));
	ck_assert_int_eq(sqk_xattr_get(img, &i, "user.text", val, sizeof(val), &vlen), 0);
	ck_assert(vlen == 11 && !memcmp(val, "plain words", 11));
	assert_text(img, "etc/ver", "1.0\n");
	i = get(img, "etc/ver");
	ck_assert_uint_eq(i.mode, S_IFREG | 0400);
	ck_assert_uint_eq(i.uid, 3);
	ck_assert_uint_eq(i.mtime, 1700000000);
	sqk_image_close(img);
	sqk_io_destroy(mem);
}
END_TEST

/* A command that fails fails the build, naming the definition and its exit status. */
START_TEST(test_command_fails)
{
	static const char *const defs[] = { "out f 644 0 0 echo partial; exit 3" };
	static const char *const want[] = { "--pseudo-def", "'echo partial; exit 3'",
					    "exit status 3" };
	struct inputs in = { .defs = defs, .ndefs = 1 };
	build_fails(&in, want, 3);
	static const char *const sig[] = { "out f 644 0 0 kill -9 $$" };
	static const char *const wsig[] = { "signal 9" };
	in.defs = sig;
	build_fails(&in, wsig, 1);
}
END_TEST

/* Symbolic modes with mksquashfs's rules: who, + - =, X, s, t, copies from u g o, lists. */
START_TEST(test_symbolic_modes)
{
	static const struct {
		const char *spec;
		uint32_t old;
		bool dir;
		uint32_t want;
	} ok[] = {
		{ "u+rwx,go=rx", 0, false, 0755 }, { "a-w", 0777, false, 0555 },
		{ "g=u", 0750, false, 0770 },	   { "a+t", 0755, true, 01755 },
		{ "a+X", 0644, false, 0644 },	   { "a+X", 0644, true, 0755 },
		{ "a+X", 0744, false, 0755 },	   { "u+s,g+s", 0755, false, 06755 },
		{ "o=", 0777, false, 0770 },	   { "=r", 0777, false, 0444 },
		{ "0640", 0777, false, 0640 },	   { "u-x+w", 0500, false, 0600 },
		{ "+t", 0755, true, 0755 },	   { "=rx", 02750, true, 02555 },
	};
	for (size_t k = 0; k < sizeof(ok) / sizeof(ok[0]); k++) {
		uint32_t m;
		size_t at;
		ck_assert_msg(!mk_symmode_apply(ok[k].spec, ok[k].old, ok[k].dir, &m, &at),
			      "%s refused", ok[k].spec);
		ck_assert_msg(m == ok[k].want, "%s on %o: %o, want %o", ok[k].spec, ok[k].old, m,
			      ok[k].want);
	}
	static const struct {
		const char *spec;
		size_t at;
	} bad[] = { { "u+q", 0 }, { "u", 0 }, { "u+r;g+r", 0 }, { "z+r", 0 }, { "08", 0 } };
	for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
		uint32_t m;
		size_t at = 99;
		ck_assert_msg(mk_symmode_apply(bad[k].spec, 0, false, &m, &at), "%s taken",
			      bad[k].spec);
		ck_assert_msg(at == bad[k].at, "%s: at %zu, want %zu", bad[k].spec, at, bad[k].at);
	}
	/* m with a symbolic mode changes the bits an entry has */
	static const char *const defs[] = { "d d 0700 0 0", "d m go+rX 0 0" };
	struct inputs in = { .defs = defs, .ndefs = 2 };
	struct sqk_io *mem;
	struct sqk_image *img = build_ok(&in, &mem);
	ck_assert_uint_eq(get(img, "d").mode, S_IFDIR | 0755);
	sqk_image_close(img);
	sqk_io_destroy(mem);
}
END_TEST

/* R reads the data part of its file (unsquashfs -pf's layout); -pd makes missing parents. */
START_TEST(test_range_and_pd)
{
	char path[64];
	temp_file(path, "/ D 10 755 0 0\n"
			"a/b/one R 11 644 0 0 3 0 0\n"
			"a/two R 12 600 0 0 5 3 0\n"
			"a/b/link L a/b/one\n"
			"#\n# START OF DATA - DO NOT MODIFY\n#\n"
			"abcHELLO");
	struct inputs in = { .pseudo_file = path, .pd = "D 99 0711 7 8" };
	struct sqk_io *mem;
	struct sqk_image *img = build_ok(&in, &mem);
	assert_text(img, "a/b/one", "abc");
	assert_text(img, "a/two", "HELLO");
	struct sqk_inode i = get(img, "a/b");
	ck_assert_uint_eq(i.mode, S_IFDIR | 0711);
	ck_assert_uint_eq(i.uid, 7);
	ck_assert_uint_eq(i.mtime, 99);
	ck_assert_uint_eq(get(img, "a/b/link").ino, get(img, "a/b/one").ino);
	ck_assert_uint_eq(get(img, "a/two").mtime, 12);
	sqk_image_close(img);
	sqk_io_destroy(mem);
	unlink(path);
	/* without -pd, a missing parent is an error; R without its data part too */
	temp_file(path, "a/b/one R 11 644 0 0 3 0 0\n");
	struct inputs no_pd = { .pseudo_file = path };
	static const char *const want[] = { ":1", "'R' without" };
	build_fails(&no_pd, want, 2);
	unlink(path);
}
END_TEST

/* Bad lines name the file, the line and the column of the word at fault. */
START_TEST(test_errors_name_line_and_column)
{
	static const struct {
		const char *line, *want;
	} cases[] = {
		{ "x d 7z9 0 0", ":2 column 5: bad mode '7z9'" },
		{ "x d 755 nosuchuser9 0", ":2 column 9: unknown user" },
		{ "  x d 755 0 nosuchgroup9", ":2 column 13: unknown group" },
		{ "x c 600 0 0 5000 1", ":2 column 13: need MAJOR" },
		{ "x q 600 0 0", ":2 column 3: need PATH TYPE" },
		{ "x f 600 0 0", ":2 column 12: 'f' needs a COMMAND" },
		{ "x x novalue", ":2 column 5: no '='" },
		{ "x x other.a=1", "NAME must start with user." },
		{ "x x user.a=0xZZ", "invalid hexadecimal value" },
		{ "x D notadate-zz 755 0 0", ":2 column 5: bad time" },
		{ "x i 600 0 0 q", ":2 column 13: 'i' needs f" },
		{ "x d 755 0 0 extra", ":2 column 13: unexpected 'extra'" },
		{ "\"x d 755 0 0", "unbalanced quotes" },
	};
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		char path[64], text[128], where[128];
		snprintf(text, sizeof(text), "# first\n%s\n", cases[k].line);
		temp_file(path, text);
		snprintf(where, sizeof(where), "pseudo definition at %s:2", path);
		const char *want[] = { where, cases[k].want };
		struct inputs in = { .pseudo_file = path };
		build_fails(&in, want, 2);
		unlink(path);
	}
}
END_TEST

/* Each pack-file keyword makes its entry; parents are made; file reads LOCATION (or PATH)
 * relative to the pack directory. */
START_TEST(test_pack_types)
{
	char dir[] = "/tmp/sqk-pack.XXXXXX", path[128], data[128];
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(data, sizeof(data), "%s/in.txt", dir);
	FILE *f = fopen(data, "w");
	ck_assert_ptr_nonnull(f);
	fputs("content\n", f);
	fclose(f);
	char sub[128];
	snprintf(sub, sizeof(sub), "%s/opt", dir);
	ck_assert_int_eq(mkdir(sub, 0755), 0);
	snprintf(sub, sizeof(sub), "%s/opt/my app", dir);
	ck_assert_int_eq(link(data, sub), 0);
	snprintf(path, sizeof(path), "%s/list", dir);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs("# a comment\n"
	      "dir /dev 0755 0 0\n"
	      "nod /dev/console 0600 0 5 c 5 1\n"
	      "nod /dev/sda 0660 0 6 b 8 0\n"
	      "file /bin/init 0755 1 2 in.txt\n"
	      "file \"/opt/my app\" 0600 0 0\n"
	      "slink /bin/sh 0777 0 0 init with space\n"
	      "link /bin/init2 0 0 0 /bin/init\n"
	      "pipe /run/fifo 0644 0 0\n"
	      "sock /run/sock 0600 0 0\n", f);
	fclose(f);
	struct inputs in = { .pack_file = path };
	struct sqk_io *mem;
	struct sqk_image *img = build_ok(&in, &mem);
	struct sqk_inode i = get(img, "dev/console");
	ck_assert_uint_eq(i.mode, S_IFCHR | 0600);
	ck_assert_uint_eq(i.gid, 5);
	ck_assert_uint_eq(sqk_rdev_major(i.rdev), 5);
	ck_assert_uint_eq(get(img, "dev/sda").mode, S_IFBLK | 0660);
	assert_text(img, "bin/init", "content\n");
	i = get(img, "bin/init");
	ck_assert_uint_eq(i.mode, S_IFREG | 0755);
	ck_assert_uint_eq(i.uid, 1);
	ck_assert_uint_eq(i.mtime, 0); /* gensquashfs's default time */
	ck_assert_uint_eq(i.nlink, 2);
	ck_assert_uint_eq(get(img, "bin/init2").ino, i.ino);
	assert_text(img, "opt/my app", "content\n");
	ck_assert_uint_eq(get(img, "opt").mode, S_IFDIR | 0755); /* made as a parent */
	char target[64];
	size_t tlen;
	i = get(img, "bin/sh");
	ck_assert_int_eq(sqk_readlink(img, &i, target, sizeof(target), &tlen), 0);
	ck_assert_str_eq(target, "init with space");
	ck_assert_uint_eq(get(img, "run/fifo").mode, S_IFIFO | 0644);
	ck_assert_uint_eq(get(img, "run/sock").mode, S_IFSOCK | 0600);
	sqk_image_close(img);
	sqk_io_destroy(mem);

	/* bad lines: the file and line */
	static const struct {
		const char *line, *want;
	} cases[] = {
		{ "file /x 0999 0 0", "bad MODE" },
		{ "nod /x 0600 0 0 q 1 1", "nod needs c|b" },
		{ "glob /usr 0755 0 0 -bogus ./lib", "unknown glob option at '-bogus ./lib'" },
		{ "glob /usr 0755 0 0 nosuchdir", "nosuchdir': No such file" },
		{ "fil /x 0600 0 0", "unknown entry type" },
		{ "slink /x 0777 0 0", "missing the last field of slink" },
		{ "file /nosuchfile 0600 0 0", "nosuchfile" },
	};
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		char where[160];
		f = fopen(path, "w");
		ck_assert_ptr_nonnull(f);
		fprintf(f, "dir /d 0755 0 0\n%s\n", cases[k].line);
		fclose(f);
		snprintf(where, sizeof(where), "%s:2", path);
		const char *want[] = { where, cases[k].want };
		build_fails(&in, want, 2);
	}
	unlink(path);
	unlink(data);
	unlink(sub);
	snprintf(sub, sizeof(sub), "%s/opt", dir);
	rmdir(sub);
	rmdir(dir);
}
END_TEST

static Suite *pseudo_suite(void)
{
	Suite *s = suite_create("pseudo");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_each_type);
	tcase_add_test(tc, test_command_fails);
	tcase_add_test(tc, test_symbolic_modes);
	tcase_add_test(tc, test_range_and_pd);
	tcase_add_test(tc, test_errors_name_line_and_column);
	tcase_add_test(tc, test_pack_types);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return test_run_suite(pseudo_suite());
}
