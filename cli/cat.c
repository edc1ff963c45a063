/* SPDX-License-Identifier: BSD-2-Clause */
/* sqk cat: copies regular files of an image to stdout, in 1 MiB sequential reads so the
 * library's readahead sees a sequential stream. */
#include "cmd.h"
#include "progress.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SQK_CAT_CHUNK (1u << 20)
/* A cat still running after this many seconds is a long one: its progress line appears. */
#define SQK_CAT_PROGRESS_DELAY 1.0

enum { CAT_OPT_NO_PROGRESS = 0x2100 };

static void cat_usage(FILE *f)
{
	fprintf(f,
		"usage: sqk cat [--no-verify] [--offset N] [OPTIONS] IMAGE|URL PATH...\n"
		"\n"
		"Writes the contents of the regular files PATH... of a SquashFS image to standard\n"
		"output, one after the other. A PATH that is missing or not a regular file is an "
		"error;\n"
		"the remaining paths are still written.\n"
		"\n"
		"      --offset N    the image starts N bytes into the file (mksquashfs -offset)\n"
		"      --no-progress no progress line (shown on a terminal's stderr after 1 s "
		"when\n"
		"                    standard output is not that terminal)\n"
		SQK_CMD_REMOTE_HELP
		"  -h, --help        this text\n"
		"\n"
		"Exit status: 0 ok, 1 error (missing path, not a file, corrupt image, I/O), 2 "
		"usage.\n");
}

/* Copies one file to stdout, counting it in pr. Returns 0, or 1 after printing an error. */
static int cat_one(struct cmd *c, const char *path, void *buf, struct progress *pr)
{
	struct sqk_inode ino;
	uint64_t off = 0;
	ssize_t n;

	if (cmd_lookup(c, path, &ino))
		return 1;
	if (!cmd_is(&ino, SQK_T_FILE)) {
		cmd_err(c, path, 0, "not a regular file");
		return 1;
	}
	while (off < ino.size) {
		n = sqk_read(c->img, &ino, buf, SQK_CAT_CHUNK, off);
		if (n < 0) {
			cmd_read_err(c, path, &ino, (int)n, "read failed at file offset %llu",
					 (unsigned long long)off);
			return 1;
		}
		if (n == 0) {
			cmd_err(c, path, SQK_ECORRUPT, "file ends at %llu, inode size %llu",
				    (unsigned long long)off, (unsigned long long)ino.size);
			return 1;
		}
		if (cmd_write_all(STDOUT_FILENO, buf, (size_t)n)) {
			cmd_err(c, path, 0, "writing to stdout: %s", strerror(errno));
			return 1;
		}
		off += (uint64_t)n;
		progress_add(pr, 0, (uint64_t)n);
	}
	progress_add(pr, 1, 0);
	return 0;
}

/* The totals of the progress line: the regular files among the PATHs (the others fail). */
static void cat_totals(struct cmd *c, char **paths, int n, struct progress *pr)
{
	struct sqk_inode ino;
	uint64_t files = 0, bytes = 0;
	int i;

	for (i = 0; i < n; i++) {
		if (sqk_lookup_path(c->img, paths[i], &ino) == 0 && cmd_is(&ino, SQK_T_FILE)) {
			files++;
			bytes += ino.size;
		}
	}
	progress_totals(pr, files, bytes);
}

/* Writes every PATH, with the progress line and its summary on a terminal. */
static int cat_run(struct cmd *c, char **paths, int n, void *buf, bool progress)
{
	struct progress pr;
	char size[32], rate[32];
	int i, status = 0;
	double secs;

	progress_init(&pr, "cat", progress && !isatty(STDOUT_FILENO));
	if (pr.on)
		cat_totals(c, paths, n, &pr);
	c->progress = &pr;
	progress_start(&pr, SQK_CAT_PROGRESS_DELAY);
	for (i = 0; i < n; i++)
		status |= cat_one(c, paths[i], buf, &pr);
	progress_stop(&pr);
	c->progress = NULL;
	if (status == 0) {
		secs = progress_elapsed(&pr);
		progress_size(size, sizeof(size), pr.total_bytes);
		progress_rate(rate, sizeof(rate), pr.total_bytes, secs);
		progress_summary(&pr, "%llu %s (%s) written in %.1f s, %s",
				     (unsigned long long)pr.total_files,
				     plural(pr.total_files, "file", "files"), size, secs, rate);
	}
	return status;
}

int cat_main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "offset", required_argument, NULL, 'o' },
		{ "no-progress", no_argument, NULL, CAT_OPT_NO_PROGRESS },
		{ "help", no_argument, NULL, 'h' },
		SQK_CMD_REMOTE_LONGOPTS,
		{ NULL, 0, NULL, 0 },
	};
	struct cmd c = { .name = "cat" };
	bool progress = true;
	int ch, status;
	void *buf;

	while ((ch = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (ch) {
		case 'o':
			if (parse_u64(optarg, UINT64_MAX, &c.offset)) {
				cmd_usage_err("cat", "bad --offset '%s'", optarg);
				return 2;
			}
			break;
		case CAT_OPT_NO_PROGRESS: progress = false; break;
		case 'h': cat_usage(stdout); return 0;
		default:
			ch = cmd_remote_opt("cat", &c.remote, ch, optarg);
			if (ch == 0)
				break;
			if (ch == 1)
				cat_usage(stderr);
			return 2;
		}
	}
	if (argc - optind < 2) {
		cmd_usage_err("cat", "expected IMAGE PATH...");
		return 2;
	}
	c.image = argv[optind];
	buf = malloc(SQK_CAT_CHUNK);
	if (!buf) {
		cmd_err(&c, NULL, SQK_ENOMEM, "cannot allocate a buffer");
		return 1;
	}
	if (cmd_open(&c)) {
		cmd_close(&c); /* what the options and the URL's name hold */
		free(buf);
		return 1;
	}
	status = cat_run(&c, argv + optind + 1, argc - optind - 1, buf, progress);
	cmd_close(&c);
	free(buf);
	return status;
}
