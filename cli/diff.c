/* SPDX-License-Identifier: BSD-2-Clause */
/* sqk diff OLD NEW: the options (sqfsdiff's, and sqk's reading options), opening both sides,
 * the walk (diff_tree.c) and the exit status: 0 same, 1 different, 2 trouble, as diff(1) and
 * sqfsdiff. */
#include "diff.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

enum { DIFF_OPT_JSON = 0x2000, DIFF_OPT_NO_XATTRS, DIFF_OPT_OFFSET };

static void diff_usage(FILE *f)
{
	fprintf(f,
		"usage: sqk diff [OPTIONS] OLD NEW\n"
		"       sqk diff [OPTIONS] -a OLD -b NEW\n"
		"\n"
		"Compares two trees, as squashfs-tools-ng's sqfsdiff: each of OLD and NEW is\n"
		"a SquashFS image, an http://, https:// or s3:// URL of one, or a directory.\n"
		"Each difference is one line on stdout, in sqfsdiff's words: '< PATH' (only\n"
		"in OLD), '> PATH' (only in NEW), '/PATH has different permissions', 'regular\n"
		"file /PATH differs', ... Entries compare by kind, owner, permissions, link\n"
		"count, xattrs, device numbers, link targets, file sizes and contents; a basic\n"
		"and an extended inode of the same kind are the same, and so is the layout of\n"
		"the data.\n"
		"\n"
		"  -a, --old OLD          the first tree (or the first argument)\n"
		"  -b, --new NEW          the second tree (or the second argument)\n"
		"  -C, --no-contents      do not compare file contents (sizes still)\n"
		"  -O, --no-owner         do not compare owners (uid, gid)\n"
		"  -P, --no-permissions   do not compare permission bits\n"
		"      --no-xattrs        do not compare xattrs\n"
		"  -T, --timestamps       compare modification times too\n"
		"  -I, --inode-num        compare inode numbers too\n"
		"  -S, --super            compare the superblocks too (two images: block size,\n"
		"                         compressor, flags, counts, table positions)\n"
		"  -e, --extract DIR      write the regular files that differ, or that one side\n"
		"                         only has, under DIR/old and DIR/new\n"
		"  -q, --quiet            print nothing; stop at the first difference (with -e:\n"
		"                         once every file is written)\n"
		"      --json             one JSON object: each difference with its path, field,\n"
		"                         old and new values\n"
		"      --offset N         images start N bytes into their files\n"
		SQK_CMD_REMOTE_HELP
		"  -h, --help             this text\n"
		"\n"
		"Exit status: 0 same, 1 different, 2 trouble (a usage error, a side that cannot\n"
		"be read).\n");
}

/* An option of sqfsdiff's set, or the output ones. 0 taken, 2 bad argument. */
static int diff_flag(struct diff *d, int ch, const char *arg)
{
	switch (ch) {
	case 'a': d->a.arg = arg; break;
	case 'b': d->b.arg = arg; break;
	case 'C': d->flags |= DIFF_NO_CONTENTS; break;
	case 'O': d->flags |= DIFF_NO_OWNER; break;
	case 'P': d->flags |= DIFF_NO_PERM; break;
	case 'T': d->flags |= DIFF_TIME; break;
	case 'I': d->flags |= DIFF_INODE; break;
	case 'S': d->flags |= DIFF_SUPER; break;
	case 'e': d->extract = arg; break;
	case 'q': d->flags |= DIFF_QUIET; break;
	case DIFF_OPT_JSON: d->flags |= DIFF_JSON; break;
	case DIFF_OPT_NO_XATTRS: d->flags |= DIFF_NO_XATTRS; break;
	case DIFF_OPT_OFFSET:
		if (parse_u64(arg, UINT64_MAX, &d->a.c.offset)) {
			cmd_usage_err("diff", "bad --offset '%s'", arg);
			return 2;
		}
		d->b.c.offset = d->a.c.offset;
		break;
	default:
		return cmd_remote_opt("diff", &d->a.c.remote, ch, arg) ? 2 : 0;
	}
	return 0;
}

/* The sides from -a, -b and the arguments left. 0, or 2 (message printed). */
static int diff_sides(struct diff *d, int argc, char **argv)
{
	for (int i = optind; i < argc; i++) {
		if (!d->a.arg) {
			d->a.arg = argv[i];
		} else if (!d->b.arg) {
			d->b.arg = argv[i];
		} else {
			cmd_usage_err("diff", "unexpected argument '%s': two trees at most",
				      argv[i]);
			return 2;
		}
	}
	if (!d->a.arg || !d->b.arg) {
		cmd_usage_err("diff", "missing %s tree (expected OLD NEW)",
			      d->a.arg ? "the second" : "both the first and the second");
		return 2;
	}
	return 0;
}

/* Parses argv into d: -1 to go on, else the exit status. */
static int diff_parse(struct diff *d, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "old", required_argument, NULL, 'a' },
		{ "new", required_argument, NULL, 'b' },
		{ "no-contents", no_argument, NULL, 'C' },
		{ "no-owner", no_argument, NULL, 'O' },
		{ "no-permissions", no_argument, NULL, 'P' },
		{ "timestamps", no_argument, NULL, 'T' },
		{ "inode-num", no_argument, NULL, 'I' },
		{ "super", no_argument, NULL, 'S' },
		{ "extract", required_argument, NULL, 'e' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "json", no_argument, NULL, DIFF_OPT_JSON },
		{ "no-xattrs", no_argument, NULL, DIFF_OPT_NO_XATTRS },
		{ "offset", required_argument, NULL, DIFF_OPT_OFFSET },
		{ "help", no_argument, NULL, 'h' },
		SQK_CMD_REMOTE_LONGOPTS,
		{ NULL, 0, NULL, 0 },
	};
	int ch;

	opterr = 0;
	while ((ch = getopt_long(argc, argv, ":a:b:COPTISe:qh", opts, NULL)) != -1) {
		if (ch == 'h') {
			diff_usage(stdout);
			return 0;
		}
		if (ch == '?' || ch == ':') {
			cmd_usage_err("diff", "%s '%s'", ch == '?' ? "unknown option"
				      : "missing argument for", argv[optind - 1]);
			return 2;
		}
		if (diff_flag(d, ch, optarg))
			return 2;
	}
	return diff_sides(d, argc, argv) ? 2 : -1;
}

/* Opens both sides (the remote options given once serve both). 0 or 2. */
static int diff_open(struct diff *d)
{
	d->b.c.remote = d->a.c.remote;
	d->b.c.remote.nfiles = 0; /* the header files' text belongs to a's copy */
	if (diff_side_open(&d->a) || diff_side_open(&d->b))
		return 2;
	if ((d->flags & DIFF_SUPER) && (d->a.is_dir || d->b.is_dir)) {
		cmd_usage_err("diff", "-S compares the superblocks of two images: %s is a "
			      "directory", d->a.is_dir ? d->a.arg : d->b.arg);
		return 2;
	}
	d->wa = malloc(DIFF_WINDOW);
	d->wb = malloc(DIFF_WINDOW);
	if (!d->wa || !d->wb) {
		fprintf(stderr, "sqk diff: %s\n", sqk_strerror(SQK_ENOMEM));
		return 2;
	}
	return 0;
}

/* Compares the open sides; the exit status. */
static int diff_run(struct diff *d)
{
	int r, status;

	if (d->extract && diff_make_dir(d->extract))
		return 2;
	diff_json_begin(d);
	r = diff_trees(d);
	if (r == 0 && (d->flags & DIFF_SUPER) && !(d->different && (d->flags & DIFF_QUIET)))
		diff_super(d);
	status = r ? 2 : d->different ? 1 : 0;
	diff_json_end(d, status);
	if (fflush(stdout) || ferror(stdout)) {
		fprintf(stderr, "sqk diff: error writing to stdout\n");
		status = 2;
	}
	return status;
}

int diff_main(int argc, char **argv)
{
	struct diff d;
	int status;

	memset(&d, 0, sizeof(d));
	d.a.sub = "old";
	d.b.sub = "new";
	status = diff_parse(&d, argc, argv);
	if (status < 0)
		status = diff_open(&d);
	if (status == 0 && d.a.c.name)
		status = diff_run(&d);
	free(d.wa);
	free(d.wb);
	if (d.b.c.name)
		diff_side_close(&d.b);
	else
		cmd_remote_free(&d.b.c.remote);
	if (d.a.c.name)
		diff_side_close(&d.a);
	else
		cmd_remote_free(&d.a.c.remote);
	return status;
}
