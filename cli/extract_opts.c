/* SPDX-License-Identifier: BSD-2-Clause */
/* sqk extract's command line: usage, options and the PATH arguments' form. */
#include "extract.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

static void x_usage(FILE *f)
{
	fprintf(f,
		"usage: sqk extract [-j N] [--force] [--no-verify] [--offset N] [OPTIONS] "
		"IMAGE|URL DEST [PATH...]\n"
		"\n"
		"Extracts a SquashFS image into the directory DEST (created if missing), or only "
		"the\n"
		"subtrees PATH... (with their parent directories). Restores contents, permission "
		"bits\n"
		"(incl. setuid, setgid, sticky), owners (when run as root), mtimes, xattrs "
		"(trusted.\n"
		"and security. only as root), hard links, symlinks, devices, fifos and sockets; "
		"all-zero\n"
		"blocks are written as holes. The image root's attributes are applied to DEST.\n"
		"\n"
		"Safety: names that are empty, '.', '..', contain '/', or are duplicated or "
		"unsorted in\n"
		"a directory are rejected as corruption; nothing is written through a symlink or "
		"outside\n"
		"DEST. A DEST that exists and is not empty is refused unless --force.\n"
		"A PATH that is not in the image is an error before anything is made (DEST too).\n"
		"Extraction stops at the first error. A file whose contents fail half way (a "
		"corrupt\n"
		"block, a read or write error, a full disk) is removed, never left short or "
		"wrong;\n"
		"its hard links are not made. After a failure, the directories made still get "
		"their\n"
		"modes and mtimes, and a message says how many files were extracted and how "
		"many\n"
		"partial files were removed.\n"
		"\n"
		"  -d, --dest DEST   extract into DEST (then the arguments are IMAGE [PATH...])\n"
		"  -j, --threads N   threads writing file contents (default: online CPUs)\n"
		"  -f, --force       extract into a non-empty DEST, replacing entries in the way\n"
		"                    (a symlink in DEST is replaced, never followed; a file is "
		"written\n"
		"                    under a temporary name and renamed over the entry once "
		"whole,\n"
		"                    so a failed file leaves the entry as it was)\n"
		"      --offset N    the image starts N bytes into the file (mksquashfs -offset)\n"
		"      --no-progress no progress line (on a terminal's stderr: files and bytes "
		"done,\n"
		"                    the rate, the time left; a summary line at the end)\n"
		"unsquashfs's listings: -ls, -ll ... list and extract nothing (sqk extract -lls "
		"IMAGE\n"
		"[PATH...]); -i, -linfo list and extract. Paths are named under DEST (-d DEST),\n"
		"else squashfs-root, as unsquashfs does; PATHs are exact:\n"
		"  -l, -ls           paths only (unsquashfs -ls)\n"
		"  -ll, -lls         with mode, owner/group names, size and mtime (unsquashfs "
		"-lls)\n"
		"  -lln, -llnumeric  as -lls with numeric owners\n"
		"  -lc, -llc         as -ls, -lls with only files and empty directories\n"
		"  -i, -info         print the paths of what is extracted (listed before the "
		"files\n"
		"                    are written)\n"
		"  -li, -linfo       -i with the attributes of -lls\n"
		"  -UTC, --utc       times in UTC, not the local time zone\n"
		"  -full, -full-precision, --full-time  times with seconds\n"
		SQK_CMD_REMOTE_HELP
		"  -h, --help        this text\n"
		"\n"
		"Exit status: 0 ok, 1 error (corrupt image, I/O, DEST not empty, cannot create or "
		"set\n"
		"attributes), 2 usage.\n");
}

/* A PATH may not contain . or .. components. */
static bool x_path_ok(const char *p)
{
	const char *s = p;

	for (;;) {
		size_t len = strcspn(s, "/");

		if ((len == 1 && s[0] == '.') || (len == 2 && s[0] == '.' && s[1] == '.'))
			return false;
		if (!s[len])
			return true;
		s += len + 1;
	}
}

enum { X_OPT_NO_PROGRESS = 0x2100 };

static int x_args(struct extract *x, int argc, char **argv);

int x_parse(struct extract *x, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "dest", required_argument, NULL, 'd' },
		{ "threads", required_argument, NULL, 'j' },
		{ "force", no_argument, NULL, 'f' },
		{ "offset", required_argument, NULL, 'o' },
		{ "no-progress", no_argument, NULL, X_OPT_NO_PROGRESS },
		{ "help", no_argument, NULL, 'h' },
		SQK_CMD_REMOTE_LONGOPTS,
		{ NULL, 0, NULL, 0 },
	};
	uint64_t v;
	int ch;

	while ((ch = getopt_long(argc, argv, "d:j:fh", opts, NULL)) != -1) {
		switch (ch) {
		case 'd':
			x->dest = optarg;
			x->dest_opt = true;
			break;
		case 'j':
			if (parse_u64(optarg, 1024, &v) || v == 0) {
				cmd_usage_err("extract", "bad thread count '%s' (1-1024)",
						  optarg);
				return 2;
			}
			x->threads = (unsigned)v;
			break;
		case 'f': x->force = true; break;
		case X_OPT_NO_PROGRESS: x->progress = false; break;
		case 'o':
			if (parse_u64(optarg, UINT64_MAX, &x->c.offset)) {
				cmd_usage_err("extract", "bad --offset '%s'", optarg);
				return 2;
			}
			break;
		case 'h': x_usage(stdout); return 0;
		default:
			ch = cmd_remote_opt("extract", &x->c.remote, ch, optarg);
			if (ch == 0)
				break;
			if (ch == 1)
				x_usage(stderr);
			return 2;
		}
	}
	return x_args(x, argc, argv);
}

/* The arguments: IMAGE DEST [PATH...], or IMAGE [PATH...] with -d DEST or a listing. */
static int x_args(struct extract *x, int argc, char **argv)
{
	int i, skip = x->dest_opt || x->lst.only ? 1 : 2;

	if (argc - optind < skip) {
		cmd_usage_err("extract", skip == 1 ? "expected IMAGE [PATH...]"
						   : "expected IMAGE DEST [PATH...]");
		return 2;
	}
	x->npaths = argc - optind - skip;
	x->paths = argv + optind + skip;
	for (i = optind + skip; i < argc; i++) {
		if (!x_path_ok(argv[i])) {
			cmd_usage_err("extract", "PATH '%s' has a . or .. component", argv[i]);
			return 2;
		}
	}
	x->c.image = argv[optind];
	if (skip == 2)
		x->dest = argv[optind + 1];
	return -1;
}
