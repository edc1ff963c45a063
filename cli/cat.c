/* SPDX-License-Identifier: BSD-2-Clause */
/* sqk cat: copies regular files of an image to stdout, in 1 MiB sequential reads so the
 * library's readahead sees a sequential stream. */
#include "cmd.h"
#include "progress.h"
#include "cmdopt.h"
#include "select.h"

#include <errno.h>
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
		"the remaining paths are still written. A PATH with wildcards (*, ?, [...]) that\n"
		"names no entry as written is a pattern, as unsquashfs -cat takes it: the files\n"
		"it matches, matched a component at a time, in the image's order.\n"
		"\n"
		"  -o, --offset N    the image starts N bytes into the file (K/M/G; mksquashfs\n"
		"                    -offset, unsquashfs -o)\n"
		"  -n, --no-progress no progress line (shown on a terminal's stderr after 1 s "
		"when\n"
		"                    standard output is not that terminal)\n"
		SQK_CMD_REMOTE_HELP
		"  -h, --help        this text\n"
		"\n"
		"Options may come anywhere on the line (-- ends them); each long one also\n"
		"with one dash, as unsquashfs spells them.\n"
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

/* A glob's walk: the files it matches, copied (or counted) in the image's order. */
struct cat_glob {
	struct cmd *c;
	void *buf;            /* NULL: count into files and bytes */
	struct progress *pr;
	int status;
	uint64_t files, bytes;
};

static int cat_glob_cb(void *ctx, const struct sel_entry *e)
{
	struct cat_glob *g = ctx;

	if (e->err) {
		if (g->buf)
			cmd_err(g->c, e->path, e->err, "cannot read the directory listing");
		g->status = 1;
		return 0;
	}
	if (e->post || !e->whole)
		return 0;
	if (!cmd_is(e->ino, SQK_T_FILE)) {
		if (g->buf)
			cmd_err(g->c, e->path, 0, "not a regular file");
		g->status = 1;
		return 1;
	}
	if (!g->buf) {
		g->files++;
		g->bytes += e->ino->size;
	} else {
		g->status |= cat_one(g->c, e->path, g->buf, g->pr);
	}
	return 0;
}

/* cat_one for every entry the glob pat matches (buf NULL: counts them into *g). */
static int cat_glob(struct cmd *c, const char *pat, void *buf, struct progress *pr,
		    struct cat_glob *g)
{
	struct sel s;
	int r;

	*g = (struct cat_glob){ .c = c, .buf = buf, .pr = pr };
	sel_init(&s);
	r = sel_add(&s, pat, false);
	if (!r)
		r = sel_walk(&s, c->img, cat_glob_cb, g);
	if (r)
		cmd_err(c, pat, r, "cannot walk the image");
	else if (!s.pats[0].hit && buf)
		cmd_err(c, NULL, 0, "'%s' matches nothing in the image", pat);
	g->status |= r || !s.pats[0].hit;
	sel_free(&s);
	return g->status;
}

/* A PATH with wildcards that does not name an entry as written: a pattern. */
static bool cat_is_glob(struct cmd *c, const char *path)
{
	struct sqk_inode ino;

	return sel_is_glob(path) && sqk_lookup_path(c->img, path, &ino) != 0;
}

/* The totals of the progress line: the regular files among the PATHs (the others fail). */
static void cat_totals(struct cmd *c, char **paths, int n, struct progress *pr)
{
	struct sqk_inode ino;
	uint64_t files = 0, bytes = 0;
	int i;

	struct cat_glob g;

	for (i = 0; i < n; i++) {
		if (cat_is_glob(c, paths[i]) && cat_glob(c, paths[i], NULL, pr, &g) == 0) {
			files += g.files;
			bytes += g.bytes;
		} else if (sqk_lookup_path(c->img, paths[i], &ino) == 0 &&
			   cmd_is(&ino, SQK_T_FILE)) {
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
	struct cat_glob g;

	for (i = 0; i < n; i++)
		status |= cat_is_glob(c, paths[i]) ? cat_glob(c, paths[i], buf, &pr, &g)
						   : cat_one(c, paths[i], buf, &pr);
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

int cat_paths(struct cmd *c, char **paths, int n, bool progress)
{
	void *buf = malloc(SQK_CAT_CHUNK);
	int status;

	if (!buf) {
		cmd_err(c, NULL, SQK_ENOMEM, "cannot allocate a buffer");
		cmd_close(c);
		return 1;
	}
	if (cmd_open(c)) {
		cmd_close(c); /* what the options and the URL's name hold */
		free(buf);
		return 1;
	}
	status = cat_run(c, paths, n, buf, progress);
	cmd_close(c);
	free(buf);
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
	struct cmdopt p;
	bool progress = true;
	int ch;

	cmdopt_init(&p, "cat", argc, argv, opts, "o:nh");
	while ((ch = cmdopt_next(&p)) != CMDOPT_END) {
		switch (ch) {
		case CMDOPT_POS: break;
		case CMDOPT_ERR: cmd_remote_free(&c.remote); return 2;
		case 'o':
			if (parse_bytes(p.arg, UINT64_MAX, &c.offset)) {
				cmd_usage_err("cat", "bad offset '%s' for %s", p.arg, p.as);
				return 2;
			}
			break;
		case 'n':
		case CAT_OPT_NO_PROGRESS: progress = false; break;
		case 'h': cat_usage(stdout); return 0;
		default:
			if (cmd_remote_opt("cat", &c.remote, ch, p.arg) == 0)
				break;
			cmd_remote_free(&c.remote);
			return 2;
		}
	}
	if (p.npos < 2) {
		cmd_usage_err("cat", "expected IMAGE PATH...");
		cmd_remote_free(&c.remote);
		return 2;
	}
	c.image = argv[1];
	return cat_paths(&c, argv + 2, p.npos - 1, progress);
}
