/* SPDX-License-Identifier: BSD-2-Clause */
/* Check suite for `sqk mkimage`'s command line (cli/mkimage_options.c) and the excludes of the
 * directory walker (mkimage/source_dir.c): options before, between and after the paths, "--",
 * the mksquashfs spellings, mksquashfs's -e (the rest of the command line) with exact paths and
 * with -wildcards or -regex, -ef files, the refusals (-mem, an unknown option named as typed, an
 * invalid regex), the dm-verity options, and which entries a walk gives under each kind of
 * exclude. */
#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/sign.h"
#include "sqk/error.h"
#include "mkimage/mk.h"
#include "cli/mkimage_options.h"
#include "mkimage/source.h"
#include "mkimage/entry_opts.h"
#include "testutil.h"

#define NARGS(a) ((int)(sizeof(a) / sizeof((a)[0])) - 1)

/* stderr of the rejections, captured: what the message named. */
static char errbuf[4096];

/* Parses argv (NULL-terminated) with stderr captured in errbuf. */
static int parse_quiet(int argc, char **argv, struct mk_options *o)
{
	char path[] = "/tmp/sqk-unit-err-XXXXXX";
	int fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	unlink(path);
	fflush(stderr);
	int saved = dup(STDERR_FILENO);
	dup2(fd, STDERR_FILENO);
	int r = mk_options_parse(argc, argv, o);
	fflush(stderr);
	dup2(saved, STDERR_FILENO);
	close(saved);
	ssize_t n = pread(fd, errbuf, sizeof(errbuf) - 1, 0);
	errbuf[n > 0 ? n : 0] = 0;
	close(fd);
	return r;
}

/* The common options fill the builder's options; bad values are refused. */
START_TEST(test_options_basic)
{
	struct mk_options o;
	char *ok[] = { "mkimage", "-b", "64K", "-c", "xz", "--bcj", "x86", "-j", "3",
		       "--exclude", "*.o", "--all-root", "src", "img", NULL };
	ck_assert_int_eq(mk_options_parse(14, ok, &o), 0);
	ck_assert_uint_eq(o.build.block_size, 65536);
	ck_assert_uint_eq(o.build.comp.id, SQK_COMP_XZ);
	ck_assert_uint_eq(o.build.comp.xz_bcj, SQK_BCJ_X86);
	ck_assert_int_eq(o.build.threads, 3);
	ck_assert_int_eq(o.nexcludes, 1);
	ck_assert_int_eq(o.build.force_uid, 0);
	ck_assert_str_eq(o.image, "img");
	ck_assert_int_eq(o.nsources, 1);
	mk_options_free(&o);

	/* The rejections print their messages; keep them out of the test log. */
	fflush(stderr);
	int saved = dup(STDERR_FILENO), devnull = open("/dev/null", O_WRONLY);
	dup2(devnull, STDERR_FILENO);
	const char *bad[][4] = { { "-b", "3000" }, { "-b", "2M" }, { "-c", "nosuch" },
				 { "-l", "23" }, { "--bcj", "x86" }, { "-j", "0" },
				 { "--force-uid", "-1" }, { "--mtime", "x" } };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char *argv[] = { "mkimage", (char *)bad[i][0], (char *)bad[i][1], "src", "img",
				 NULL };
		ck_assert_msg(mk_options_parse(5, argv, &o) == -1, "accepted %s %s", bad[i][0],
			      bad[i][1]);
		mk_options_free(&o);
	}
	char *one[] = { "mkimage", "img", NULL };
	ck_assert_int_eq(mk_options_parse(2, one, &o), -1);
	mk_options_free(&o);
	fflush(stderr);
	dup2(saved, STDERR_FILENO);
	close(saved);
	close(devnull);
}
END_TEST

/* Options after the paths, between them and before them mean the same. */
START_TEST(test_options_anywhere)
{
	struct mk_options o;
	char *after[] = { "mkimage", "src", "img", "-comp", "xz", "-b", "64K", "-processors", "3",
			  "-noappend", "-all-root", "-no-xattrs", "-quiet", NULL };
	ck_assert_int_eq(mk_options_parse(NARGS(after), after, &o), 0);
	ck_assert_int_eq(o.nsources, 1);
	ck_assert_str_eq(o.sources[0], "src");
	ck_assert_str_eq(o.image, "img");
	ck_assert_uint_eq(o.build.comp.id, SQK_COMP_XZ);
	ck_assert_uint_eq(o.build.block_size, 65536);
	ck_assert_int_eq(o.build.threads, 3);
	ck_assert(o.force && o.build.no_xattrs && o.quiet && !o.build.progress);
	ck_assert_int_eq(o.build.force_uid, 0);
	ck_assert_int_eq(o.build.force_gid, 0);
	mk_options_free(&o);

	char *between[] = { "mkimage", "a", "--level", "4", "b", "-j2", "c", "img", "-c", "gzip",
			    NULL };
	ck_assert_int_eq(mk_options_parse(NARGS(between), between, &o), 0);
	ck_assert_int_eq(o.nsources, 3);
	ck_assert_str_eq(o.sources[0], "a");
	ck_assert_str_eq(o.sources[1], "b");
	ck_assert_str_eq(o.sources[2], "c");
	ck_assert_str_eq(o.image, "img");
	ck_assert_int_eq(o.build.comp.level, 4);
	ck_assert_int_eq(o.build.threads, 2);
	mk_options_free(&o);

	/* "--" ends the options: a source named like an option */
	char *dd[] = { "mkimage", "-q", "--", "-comp", "--quiet", NULL };
	ck_assert_int_eq(mk_options_parse(NARGS(dd), dd, &o), 0);
	ck_assert_int_eq(o.nsources, 1);
	ck_assert_str_eq(o.sources[0], "-comp");
	ck_assert_str_eq(o.image, "--quiet");
	ck_assert_uint_eq(o.build.comp.id, SQK_COMP_ZSTD);
	mk_options_free(&o);

	/* --tar [FILE|-] IMAGE with options after it */
	char *tar1[] = { "mkimage", "--tar", "img", "-no-progress", NULL };
	ck_assert_int_eq(mk_options_parse(NARGS(tar1), tar1, &o), 0);
	ck_assert(o.tar && o.tar_path == NULL && o.no_progress && !o.quiet);
	ck_assert_str_eq(o.image, "img");
	mk_options_free(&o);
	char *tar2[] = { "mkimage", "-", "img", "-tar", "-b", "1Mbytes", NULL };
	ck_assert_int_eq(mk_options_parse(NARGS(tar2), tar2, &o), 0);
	ck_assert(o.tar);
	ck_assert_str_eq(o.tar_path, "-");
	ck_assert_str_eq(o.image, "img");
	ck_assert_uint_eq(o.build.block_size, 1048576);
	mk_options_free(&o);
}
END_TEST

/* The mksquashfs words that have an exact counterpart. */
START_TEST(test_mksquashfs_words)
{
	struct mk_options o;
	char *a[] = { "mkimage", "s", "i", "-comp", "xz", "-Xbcj", "x86,arm", "-no-fragments",
		      "-no-duplicates", "-no-exports", "-no-tailends", "-b", "128KB",
		      "-force-uid", "7", "-force-gid", "8", "-p", "x d 755 0 0", "-pf", "defs",
		      "-sort", "prio", NULL };
	ck_assert_int_eq(mk_options_parse(NARGS(a), a, &o), 0);
	ck_assert_uint_eq(o.build.comp.xz_bcj, SQK_BCJ_X86 | SQK_BCJ_ARM);
	ck_assert(o.build.no_fragments && o.build.no_dedup && o.build.no_exports &&
		  o.build.no_tailends);
	ck_assert_uint_eq(o.build.block_size, 131072);
	ck_assert_int_eq(o.build.force_uid, 7);
	ck_assert_int_eq(o.build.force_gid, 8);
	ck_assert_int_eq(o.npseudo, 2);
	ck_assert(!o.pseudo[0].file && o.pseudo[1].file);
	ck_assert_str_eq(o.build.sort_file, "prio");
	mk_options_free(&o);

	/* the defaults mksquashfs spells out, after their opposites */
	char *b[] = { "mkimage", "s", "i", "--no-xattrs", "-xattrs", "--no-exports", "-exports",
		      "--no-tailends", "-tailends", "-comp", "lz4", "-Xhc", "-root-owned", NULL };
	ck_assert_int_eq(mk_options_parse(NARGS(b), b, &o), 0);
	ck_assert(!o.build.no_xattrs && !o.build.no_exports && !o.build.no_tailends &&
		  o.build.comp.lz4_hc);
	ck_assert_int_eq(o.build.force_uid, 0);
	mk_options_free(&o);
}
END_TEST

/* mksquashfs's -e takes every argument after it; --exclude keeps its glob. */
START_TEST(test_mks_excludes)
{
	struct mk_options o;
	char *a[] = { "mkimage", "s", "i", "--exclude", "*.o", "-wildcards", "-e", "x/y", "-q",
		      "--", "... *.gz", NULL };
	ck_assert_int_eq(mk_options_parse(NARGS(a), a, &o), 0);
	ck_assert_int_eq(o.nexcludes, 1);
	ck_assert_str_eq(o.excludes[0], "*.o");
	ck_assert(o.wildcards && !o.quiet);
	ck_assert_int_eq(o.nmks_excludes, 4);
	ck_assert_str_eq(o.mks_excludes[0], "x/y");
	ck_assert_str_eq(o.mks_excludes[1], "-q");
	ck_assert_str_eq(o.mks_excludes[2], "--");
	ck_assert_str_eq(o.mks_excludes[3], "... *.gz");
	ck_assert_int_eq(o.nsources, 1);
	mk_options_free(&o);

	/* -ef FILE: blanks before, comments, a backslash escape, empty lines */
	char ef[] = "/tmp/sqk-unit-ef-XXXXXX";
	int fd = mkstemp(ef);
	ck_assert_int_ge(fd, 0);
	const char *text = "  one\n# comment\n\n\\#two\n\\ three\nlast";
	ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	char *b[] = { "mkimage", "-ef", ef, "s", "i", "-e", "tail", NULL };
	ck_assert_int_eq(mk_options_parse(NARGS(b), b, &o), 0);
	unlink(ef);
	ck_assert_int_eq(o.nmks_excludes, 5);
	ck_assert_str_eq(o.mks_excludes[0], "one");
	ck_assert_str_eq(o.mks_excludes[1], "#two");
	ck_assert_str_eq(o.mks_excludes[2], " three");
	ck_assert_str_eq(o.mks_excludes[3], "last");
	ck_assert_str_eq(o.mks_excludes[4], "tail");
	mk_options_free(&o);
}
END_TEST

/* What is refused, and that the message names what was typed. */
START_TEST(test_refusals)
{
	struct mk_options o;
	static const struct {
		const char *args[6];
		const char *says;
	} bad[] = {
		{ { "s", "i", "-no-such-word" }, "unknown option '-no-such-word'" },
		{ { "s", "-frob", "i" }, "unknown option '-frob'" },
		{ { "s", "i", "-qZ" }, "'-Z' (in '-qZ'" },
		{ { "s", "i", "--frobnicate=1" }, "unknown option '--frobnicate'" },
		{ { "s", "i", "--no" }, "ambiguous option '--no'" },
		{ { "s", "i", "--quiet=1" }, "'--quiet' takes no value" },
		{ { "s", "i", "-mem", "1G" }, "-mem is not supported" },
		{ { "s", "i", "-mem-percent", "10" }, "--mem SIZE is another thing" },
		{ { "s", "i", "-regex", "-e", "x/a(" }, "invalid regular expression 'a('" },
		{ { "s", "i", "-regex", "-e", "./x" }, "not supported with -regex" },
		{ { "s", "i", "-e" }, "-e needs at least one path" },
		{ { "-e", "s", "i" }, "put the paths before -e" },
		{ { "s", "i", "-processors", "0" }, "invalid -processors '0'" },
		{ { "s", "i", "-b" }, "option '-b' needs a value" },
		{ { "s", "i", "-b", "3KB" }, "invalid -b '3KB'" },
		{ { "s", "i", "-Xbcj", "x86,arm64" }, "invalid -Xbcj 'x86,arm64'" },
		{ { "s", "i", "-Xhc" }, "-Xhc needs -comp lz4" },
		{ { "s", "i", "-wildcards", "-e", "/abs" }, "not supported with -wildcards" },
		{ { "s", "i", "-wildcards", "-e", "... " }, "no pattern" },
		{ { "s", "i", "-ef", "/nonexistent/excludes" }, "-ef '/nonexistent/excludes'" },
		{ { "--tar", "t", "i", "-e", "x" }, "excludes are not applied to a tar stream" },
		{ { "--tar", "t", "i", "--exclude", "x" }, "--exclude needs source directories" },
		{ { "--tar", "t", "i", "-keep-as-directory" }, "needs a source directory" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char *argv[8] = { "mkimage" };
		int argc = 1;
		while (argc < 7 && bad[i].args[argc - 1])
			argv[argc] = (char *)bad[i].args[argc - 1], argc++;
		ck_assert_msg(parse_quiet(argc, argv, &o) == -1, "case %zu accepted", i);
		ck_assert_msg(strstr(errbuf, bad[i].says), "case %zu: '%s' not in: %s", i,
			      bad[i].says, errbuf);
		mk_options_free(&o); /* harmless after -1 */
	}
}
END_TEST

/* ---- the walk under excludes ---- */

static char tree[64];

static void mkpath(const char *rel, bool dir)
{
	char p[256];
	snprintf(p, sizeof(p), "%s/%s", tree, rel);
	if (dir) {
		ck_assert_int_eq(mkdir(p, 0755), 0);
		return;
	}
	FILE *f = fopen(p, "w");
	ck_assert_ptr_nonnull(f);
	fputs(rel, f);
	fclose(f);
}

/* src/{a/b/f, deep/a/g, x/h, x/y.gz, top.gz, .hid.gz, "st*r"/i, stxr} and s2/{a/z, q/w} */
static void make_trees(void)
{
	strcpy(tree, "/tmp/sqk-unit-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tree));
	const char *dirs[] = { "src", "src/a", "src/a/b", "src/deep", "src/deep/a", "src/x",
			       "src/st*r", "s2", "s2/a", "s2/q" };
	const char *files[] = { "src/a/b/f", "src/deep/a/g", "src/x/h", "src/x/y.gz", "src/top.gz",
				"src/.hid.gz", "src/st*r/i", "src/stxr", "s2/a/z", "s2/q/w" };
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++)
		mkpath(dirs[i], true);
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++)
		mkpath(files[i], false);
}

static void remove_trees(void)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tree);
	ck_assert_int_eq(system(cmd), 0);
}

/* Walks the sources of "mkimage ARGS..." (a NULL-terminated list; "@" stands for tree) and
 * returns the image paths it gives, space-separated, in walk order. */
static char *walk(const char *const *args)
{
	static char out[4096], store[16][256];
	char *argv[20] = { "mkimage" };
	int argc = 1;
	for (; args[argc - 1]; argc++) {
		const char *a = args[argc - 1];
		if (a[0] == '@') {
			snprintf(store[argc], sizeof(store[argc]), "%s%s", tree, a + 1);
			a = store[argc];
		}
		argv[argc] = (char *)a;
	}
	struct mk_options o;
	struct mk_ctx c;
	struct mk_source *src = NULL;
	struct mk_entry e;
	ck_assert_int_eq(mk_options_parse(argc, argv, &o), 0);
	ck_assert_int_eq(mk_ctx_init(&c, &o.build, &o.src), 0);
	ck_assert_int_eq(mk_source_dir_create(&c, &src), 0);
	out[0] = 0;
	int r;
	while ((r = src->ops->next(src, &c, &e)) == 0)
		if (*e.path)
			snprintf(out + strlen(out), sizeof(out) - strlen(out), "%s%s",
				 *out ? " " : "", e.path);
	ck_assert_int_eq(r, 1);
	mk_source_destroy(src);
	mk_ctx_free(&c);
	mk_options_free(&o);
	return out;
}

#define WALK(...) walk((const char *const[]){ __VA_ARGS__, NULL })

START_TEST(test_walk_excludes)
{
	make_trees();
	char cwd[512], rel[300];
	ck_assert_ptr_nonnull(getcwd(cwd, sizeof(cwd)));
	ck_assert_int_eq(chdir(tree), 0);
	/* exact: relative to the source; a name that exists deeper stays; a glob-like name is
	 * taken literally; absolute forms from the working directory */
	ck_assert_str_eq(WALK("@/src", "i", "-e", "a"),
			 ".hid.gz deep deep/a deep/a/g st*r st*r/i stxr top.gz x x/h x/y.gz");
	ck_assert_str_eq(WALK("@/src", "i", "-e", "st*r", "x/y.gz"),
			 ".hid.gz a a/b a/b/f deep deep/a deep/a/g stxr top.gz x x/h");
	snprintf(rel, sizeof(rel), "%s/src/deep/a", tree);
	ck_assert_str_eq(WALK("src", "i", "-e", rel, "./src/x", "../" ".", "nosuch"),
			 ".hid.gz a a/b a/b/f deep st*r st*r/i stxr top.gz");
	/* --exclude keeps its glob ('*' across '/') beside -e */
	ck_assert_str_eq(WALK("src", "i", "--exclude", "*.gz", "-e", "deep"),
			 "a a/b a/b/f st*r st*r/i stxr x x/h");
	/* -wildcards: anchored, one component at a time, dots explicit; "... " at any depth */
	ck_assert_str_eq(WALK("src", "i", "-wildcards", "-e", "*.gz"),
			 ".hid.gz a a/b a/b/f deep deep/a deep/a/g st*r st*r/i stxr x x/h x/y.gz");
	ck_assert_str_eq(WALK("src", "i", "-wildcards", "-e", "... *.gz", "st?r"),
			 ".hid.gz a a/b a/b/f deep deep/a deep/a/g x x/h");
	ck_assert_str_eq(WALK("src", "i", "-wildcards", "-e", "... a/?"),
			 ".hid.gz a deep deep/a st*r st*r/i stxr top.gz x x/h x/y.gz");
	ck_assert_str_eq(WALK("src", "i", "-wildcards", "-e", "!(x|a)"),
			 "a a/b a/b/f x x/h x/y.gz");
	/* -regex: found anywhere in a component; the last of -wildcards and -regex counts */
	ck_assert_str_eq(WALK("src", "i", "-wildcards", "-regex", "-e", "gz$", "^st.r$", "x/^h"),
			 "a a/b a/b/f deep deep/a deep/a/g x x/y.gz");
	ck_assert_str_eq(WALK("src", "i", "-regex", "-wildcards", "-e", "^st.r$"),
			 ".hid.gz a a/b a/b/f deep deep/a deep/a/g st*r st*r/i stxr top.gz x x/h "
			 "x/y.gz");
	ck_assert_str_eq(WALK("src", "i", "-regex", "-e", "... ^[ab]$"),
			 ".hid.gz deep st*r st*r/i stxr top.gz x x/h x/y.gz");
	/* several sources: relative to each; a whole source by an absolute path or a pattern */
	ck_assert_str_eq(WALK("src", "s2", "i", "-e", "a", "./s2/q"), "s2 src src/.hid.gz "
			 "src/deep src/deep/a src/deep/a/g src/st*r src/st*r/i src/stxr src/top.gz "
			 "src/x src/x/h src/x/y.gz");
	ck_assert_str_eq(WALK("src", "s2", "i", "-wildcards", "-e", "src", "*/a"),
			 "s2 s2/q s2/q/w");
	/* -keep-as-directory: one source as an entry of the root; -e still relative to it */
	ck_assert_str_eq(WALK("s2", "i", "-keep-as-directory", "-e", "a"), "s2 s2/q s2/q/w");
	ck_assert_str_eq(WALK("s2", "i", "--keep-as-directory", "-wildcards", "-e", "s2/q"),
			 "s2 s2/a s2/a/z");
	ck_assert_int_eq(chdir(cwd), 0);
	remove_trees();
}
END_TEST

/* --sign KEY (repeatable) loads each key into the builder's options before anything is built;
 * --sign-comment goes with it. A bad key, --sign without integrity data, a comment without
 * --sign or with a control character: refused, naming the option or the key file. */
START_TEST(test_sign_options)
{
	char dir[] = "/tmp/sqk-unit-sign-XXXXXX", k1[64], k2[64], why[256];
	struct mk_options o;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(k1, sizeof(k1), "%s/k1", dir);
	snprintf(k2, sizeof(k2), "%s/k2", dir);
	ck_assert_msg(sig_keygen(k1, false, NULL, why, sizeof(why)) == 0, "%s", why);
	ck_assert_int_eq(sig_keygen(k2, false, NULL, why, sizeof(why)), 0);
	char *ok[] = { "mkimage", "--sign", k1, "src", "img", "--sign", k2, "--sign-comment",
		       "v1.2", NULL };
	ck_assert_int_eq(mk_options_parse(NARGS(ok), ok, &o), 0);
	ck_assert_uint_eq(o.build.nsign_keys, 2);
	ck_assert_ptr_nonnull(o.build.sign_keys[1]);
	ck_assert_str_eq(o.build.sign_comment, "v1.2");
	ck_assert_int_eq(o.build.sign_time, -1);
	mk_options_free(&o);
	ck_assert_int_eq(chmod(k1, 0640), 0);
	char *open_key[] = { "mkimage", "--sign", k1, "src", "img", NULL };
	ck_assert_int_eq(parse_quiet(NARGS(open_key), open_key, &o), -1);
	ck_assert_msg(strstr(errbuf, k1) && strstr(errbuf, "mode 0640"), "%s", errbuf);
	char *pub[] = { "mkimage", "--sign", strcat(k2, ".pub"), "src", "img", NULL };
	ck_assert_int_eq(parse_quiet(NARGS(pub), pub, &o), -1);
	ck_assert_msg(strstr(errbuf, "a public key, not a private key"), "%s", errbuf);
	k2[strlen(k2) - 4] = '\0';
	char *nocsum[] = { "mkimage", "--sign", k2, "--no-checksums", "src", "img", NULL };
	ck_assert_int_eq(parse_quiet(NARGS(nocsum), nocsum, &o), -1);
	ck_assert_msg(strstr(errbuf, "--sign needs integrity data"), "%s", errbuf);
	char *alone[] = { "mkimage", "--sign-comment", "x", "src", "img", NULL };
	ck_assert_int_eq(parse_quiet(NARGS(alone), alone, &o), -1);
	ck_assert_msg(strstr(errbuf, "--sign-comment needs --sign"), "%s", errbuf);
	char *ctrl[] = { "mkimage", "--sign", k2, "--sign-comment", "a\nb", "src", "img", NULL };
	ck_assert_int_eq(parse_quiet(NARGS(ctrl), ctrl, &o), -1);
	ck_assert_msg(strstr(errbuf, "invalid --sign-comment"), "%s", errbuf);
	char cmd[64];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	ck_assert_int_eq(system(cmd), 0);
}
END_TEST

/* The dm-verity options: --verity takes a value only as --verity=MODE (the next word stays a
 * path), --verity-salt in hex or -, and what goes with --verity is refused without it. */
START_TEST(test_verity_options)
{
	struct mk_options o;
	char *a[] = { "mkimage", "--verity", "src", "img", NULL };
	char *b[] = { "mkimage", "src", "img", "--verity=append", "--verity-salt", "00ff10", NULL };
	char *c[] = { "mkimage", "src", "img", "--verity", "--verity-salt=-", "--verity-cert", "c",
		      "--verity-key", "k", NULL };

	ck_assert_int_eq(mk_options_parse(NARGS(a), a, &o), 0);
	ck_assert_int_eq(o.build.verity, SQK_BUILD_VERITY_SIDECAR);
	ck_assert_int_eq(o.nsources, 1);
	ck_assert_str_eq(o.image, "img");
	ck_assert_ptr_null(o.build.verity_salt);
	mk_options_free(&o);
	ck_assert_int_eq(mk_options_parse(NARGS(b), b, &o), 0);
	ck_assert_int_eq(o.build.verity, SQK_BUILD_VERITY_APPEND);
	ck_assert_uint_eq(o.build.verity_salt_len, 3);
	ck_assert(o.build.verity_salt[0] == 0 && o.build.verity_salt[1] == 0xff &&
		  o.build.verity_salt[2] == 0x10);
	mk_options_free(&o);
	ck_assert_int_eq(mk_options_parse(NARGS(c), c, &o), 0);
	ck_assert_ptr_nonnull(o.build.verity_salt);
	ck_assert_uint_eq(o.build.verity_salt_len, 0);
	ck_assert_str_eq(o.verity_cert, "c");
	ck_assert_str_eq(o.verity_key, "k");
	mk_options_free(&o);

	static const char *const bad[][3] = {
		{ "--verity=both", NULL, "choose sidecar" },
		{ "--verity-salt", "0", "even number of hex digits" },
		{ "--verity-salt", "zz", "even number of hex digits" },
		{ "--verity-cert", "c", "--verity-cert needs --verity" },
		{ "--verity-salt", "00", "--verity-salt needs --verity" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char *argv[] = { "mkimage", "src", "img", (char *)bad[i][0], (char *)bad[i][1],
				 NULL };
		ck_assert_msg(parse_quiet(bad[i][1] ? 5 : 4, argv, &o) == -1, "accepted %s",
			      bad[i][0]);
		ck_assert_msg(strstr(errbuf, bad[i][2]), "%s: %s", bad[i][0], errbuf);
	}
	char *half[] = { "mkimage", "src", "img", "--verity", "--verity-key", "k", NULL };
	ck_assert_int_eq(parse_quiet(NARGS(half), half, &o), -1);
	ck_assert_ptr_nonnull(strstr(errbuf, "--verity-key needs --verity-cert"));
}
END_TEST

/* mksquashfs's tree, time, owner, xattr and output options (cli/mkimage_mks.c), in both
 * spellings, and their refusals. */
START_TEST(test_mks_options)
{
	struct mk_options o;
	char *ok[] = { "mkimage", "s", "i", "-one-file-system-x", "-max-depth", "3",
		       "--no-hardlinks", "-root-mode", "0700", "-root-uid", "root", "--root-gid",
		       "0", "-root-time", "inode", "-mkfs-time", "5000", "-all-time", "1000",
		       "-xattrs-exclude", "^user\\.", "--xattrs-add", "user.a=0x41", "-info",
		       "-progress", "-o", "4K", "-force-uid", "root", "-comp", "xz",
		       "-Xdict-size", "37.5%", NULL };
	ck_assert_int_eq(parse_quiet(NARGS(ok), ok, &o), 0);
	ck_assert(o.build.one_file_system_x && o.build.no_hardlinks && o.build.info);
	ck_assert_int_eq(o.build.max_depth, 3);
	ck_assert_int_eq(o.build.root_mode, 0700);
	ck_assert_int_eq(o.build.root_uid, 0);
	ck_assert_int_eq(o.build.root_gid, 0);
	ck_assert_int_eq(o.build.root_time, SQK_BUILD_TIME_NEWEST);
	ck_assert_int_eq(o.build.mkfs_time, 5000);
	ck_assert_int_eq(o.build.set_mtime, 1000);
	ck_assert_int_eq(o.build.force_uid, 0);
	ck_assert_str_eq(o.build.xattrs_exclude, "^user\\.");
	ck_assert_uint_eq(o.build.nxattrs_add, 1);
	ck_assert_str_eq(o.build.xattrs_add[0], "user.a=0x41");
	ck_assert(o.build.progress); /* -progress: even off a terminal, even with -info */
	ck_assert_uint_eq(o.offset, 4096);
	ck_assert(o.build.no_checksums); /* an image at an offset gets no integrity data */
	ck_assert_uint_eq(o.build.comp.xz_dict, 49152);
	mk_options_free(&o);

	char *dflt[] = { "mkimage", "s", "i", NULL };
	ck_assert_int_eq(parse_quiet(NARGS(dflt), dflt, &o), 0);
	ck_assert(!o.build.one_file_system && !o.build.no_hardlinks && !o.build.info);
	ck_assert_int_eq(o.build.max_depth, -1);
	ck_assert_int_eq(o.build.root_mode, -1);
	ck_assert_int_eq(o.build.root_time, -1);
	ck_assert_int_eq(o.build.mkfs_time, -1);
	ck_assert_uint_eq(o.offset, 0);
	ck_assert_uint_eq(o.build.comp.xz_dict, 0);
	mk_options_free(&o);

	static const struct {
		const char *args[6];
		const char *says;
	} bad[] = {
		{ { "-max-depth", "x" }, "invalid -max-depth 'x'" },
		{ { "-root-mode", "u+q" }, "invalid -root-mode 'u+q'" },
		{ { "-root-uid", "no-such-user-unit" }, "no such user" },
		{ { "--root-gid", "no-such-group-unit" }, "no such group" },
		{ { "-force-gid", "7z" }, "need a gid" },
		{ { "-all-time", "inode" }, "\"inode\" is not supported here" },
		{ { "-xattrs-include", "(" }, "invalid -xattrs-include '('" },
		{ { "-xattrs-add", "user.x" }, "need NAME=VALUE" },
		{ { "-xattrs-add", "other.x=1" }, "user., trusted. or security. prefix" },
		{ { "-xattrs-add", "user.x=0sY$" }, "invalid base64 value" },
		{ { "-xattrs-add", "user.x=0x4" }, "invalid hexadecimal value" },
		{ { "-xattrs-add", "user.x=0t\\400" }, "invalid text value" },
		{ { "-xattrs-add", "user.x=0x" }, "empty after its format prefix" },
		{ { "-o", "1Q" }, "invalid -o '1Q'" },
		{ { "-o", "4K", "--digest-tree" }, "--offset with --digest-tree" },
		{ { "-Xdict-size", "50%" }, "-Xdict-size needs -comp xz" },
		{ { "-comp", "xz", "-Xdict-size", "80K" }, "2^n or 2^n + 2^(n-1)" },
		{ { "-comp", "xz", "-b", "64K", "-Xdict-size", "128K" }, "larger than the block" },
		{ { "-comp", "xz", "-Xdict-size", "0%" }, "invalid -Xdict-size '0%'" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char *argv[10] = { "mkimage", "s", "i" };
		int argc = 3;
		for (int k = 0; k < 6 && bad[i].args[k]; k++)
			argv[argc++] = (char *)bad[i].args[k];
		ck_assert_msg(parse_quiet(argc, argv, &o) == -1, "case %zu accepted", i);
		ck_assert_msg(strstr(errbuf, bad[i].says), "case %zu: '%s' not in: %s", i,
			      bad[i].says, errbuf);
		mk_options_free(&o);
	}
	/* accepted values of mksquashfs's syntax */
	static const char *const good[] = { "user.a=b", "user.a=0sYWJj", "user.a=0SYWI=",
					    "trusted.a=0X4142", "user.a=0t\\101b", "user.a=0bxy",
					    "security.a=0", "user.a=0q1" };
	char why[128];
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		ck_assert_msg(!mk_eopts_check_add(good[i], why, sizeof(why)), "%s: %s", good[i],
			      why);
}
END_TEST

static Suite *mkoptions_suite(void)
{
	Suite *s = suite_create("mkoptions");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_options_basic);
	tcase_add_test(tc, test_options_anywhere);
	tcase_add_test(tc, test_mksquashfs_words);
	tcase_add_test(tc, test_mks_excludes);
	tcase_add_test(tc, test_refusals);
	tcase_add_test(tc, test_verity_options);
	tcase_add_test(tc, test_walk_excludes);
	tcase_add_test(tc, test_sign_options);
	tcase_add_test(tc, test_mks_options);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return test_run_suite(mkoptions_suite());
}
