/* SPDX-License-Identifier: BSD-2-Clause */
/* sqk tar: writes an image, or the subtree at PATH, as a pax archive through libarchive, to
 * standard output or to a file (judged first, then a temporary renamed into place once complete,
 * or a block device written in place). Options and output here; the walk and the entries in
 * tar_walk.c. */
#include "tar.h"

#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include "cmdopt.h"
#include <libgen.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/lib/outfile.h"
#include "cli/lib/sigwatch.h"

enum { TAR_OPT_OFFSET = 0x2000, TAR_OPT_ZSTD, TAR_OPT_NO_SPARSE, TAR_OPT_VERIFY, TAR_OPT_FORCE,
       TAR_OPT_NO_PROGRESS };

struct tar_opts {
	const char *out;      /* -o FILE; NULL = stdout */
	bool force;           /* --force: FILE may replace a file that is not an archive */
	char out_desc[640];   /* FILE, or FILE and its size for a block device: for messages */
	int filter;           /* 0, 'z' gzip, 'J' xz, TAR_OPT_ZSTD */
	const char *path;     /* PATH in the image ("" = root) */
};


static void tar_usage(FILE *f)
{
	fprintf(f,
		"usage: sqk tar [-o FILE [--force]] [-z|-J|--zstd] [--no-sparse] [--no-verify]\n"
		"               [--offset N] [OPTIONS] IMAGE|URL [PATH]\n"
		"\n"
		"Writes the image, or the subtree at PATH, as a POSIX pax tar archive to\n"
		"standard output (not a terminal) or to FILE. Entries come in image order:\n"
		"a directory, then its entries sorted as stored, depth first, named\n"
		"relative to PATH without a leading './'. The top directory is the entry\n"
		"'./' (its mode, owner, mtime and xattrs go to the directory extracted\n"
		"into, as with `tar -C DIR -cf - .`). A PATH that is not a directory gives\n"
		"one entry, named after its last component.\n"
		"\n"
		"Stored: permission bits (with setuid, setgid, sticky), numeric owners (no\n"
		"user or group names), mtimes, symlinks, hard links (the first name in\n"
		"image order carries the data and xattrs, later names are links to it),\n"
		"character and block devices, fifos, xattrs of every namespace\n"
		"(SCHILY.xattr records: GNU tar --xattrs --xattrs-include='*', or bsdtar),\n"
		"the image's sparse blocks (all-zero blocks, for sqk mkimage and\n"
		"mksquashfs) as holes (GNU sparse format 1.0), names as stored (bytes,\n"
		"hdrcharset=BINARY when not ASCII). Sockets cannot be in a tar archive:\n"
		"each is skipped with a warning.\n"
		"\n"
		"  -o, --output FILE  write FILE: a temporary file in its directory, renamed\n"
		"                     over FILE when complete, removed on failure ('-' =\n"
		"                     standard output); a block device is written in place.\n"
		"                     Refused: a character device, FIFO, socket, directory,\n"
		"                     and a non-empty file that is not a tar archive (gzip,\n"
		"                     xz or zstd compressed or not); symlinks are followed\n"
		"      --force        replace FILE even if it is not a tar archive\n"
		"  -z, --gzip         compress the archive with gzip\n"
		"  -J, --xz           compress the archive with xz\n"
		"      --zstd         compress the archive with zstd\n"
		"      --no-sparse    store holes as zeros, for readers without GNU sparse\n"
		"                     1.0 support\n"
		"      --offset N     the image starts N bytes into the file\n"
		"  -n, --no-progress  no progress line on a terminal's stderr\n"
		SQK_CMD_REMOTE_HELP
		"  -h, --help         this text\n"
		"\n"
		"An error (a corrupt block, a failed write, a closed pipe) ends the output\n"
		"without the end-of-archive blocks, so that readers of it fail too.\n"
		"Options may come anywhere on the line (-- ends them); each long one also\n"
		"with one dash, as unsquashfs spells them.\n"
		"Exit status: 0 ok (also when sockets were skipped), 1 error, 2 usage,\n"
		"128+N when interrupted by signal N while writing FILE.\n");
}

static int tar_option(struct tar *t, struct tar_opts *o, int ch, const char *arg)
{
	switch (ch) {
	case 'o': o->out = strcmp(arg, "-") ? arg : NULL; return -1;
	case TAR_OPT_FORCE: o->force = true; return -1;
	case 'z': case 'J': case TAR_OPT_ZSTD: o->filter = ch; return -1;
	case TAR_OPT_NO_SPARSE: t->sparse = false; return -1;
	case TAR_OPT_NO_PROGRESS: t->no_progress = true; return -1;
	case 'h': tar_usage(stdout); return 0;
	case TAR_OPT_OFFSET:
		if (!parse_bytes(arg, UINT64_MAX, &t->c.offset))
			return -1;
		cmd_usage_err("tar", "bad --offset '%s'", arg);
		return 2;
	default:
		ch = cmd_remote_opt("tar", &t->c.remote, ch, arg);
		return ch == 0 ? -1 : 2;
	}
}

/* Returns -1 to go on, else the exit status. */
static int tar_parse(struct tar *t, struct tar_opts *o, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "gzip", no_argument, NULL, 'z' },
		{ "xz", no_argument, NULL, 'J' },
		{ "zstd", no_argument, NULL, TAR_OPT_ZSTD },
		{ "no-sparse", no_argument, NULL, TAR_OPT_NO_SPARSE },
		{ "offset", required_argument, NULL, TAR_OPT_OFFSET },
		{ "no-progress", no_argument, NULL, TAR_OPT_NO_PROGRESS },
		{ "force", no_argument, NULL, TAR_OPT_FORCE },
		{ "help", no_argument, NULL, 'h' },
		SQK_CMD_REMOTE_LONGOPTS,
		{ NULL, 0, NULL, 0 },
	};
	struct cmdopt p;
	int ch, r;

	cmdopt_init(&p, "tar", argc, argv, opts, "o:zJnh");
	while ((ch = cmdopt_next(&p)) != CMDOPT_END) {
		if (ch == CMDOPT_ERR)
			return 2;
		if (ch != CMDOPT_POS && (r = tar_option(t, o, ch == 'n' ? TAR_OPT_NO_PROGRESS : ch,
							p.arg)) >= 0)
			return r;
	}
	if (p.npos < 1 || p.npos > 2) {
		cmd_usage_err("tar", "expected IMAGE [PATH]");
		return 2;
	}
	t->c.image = argv[1];
	o->path = p.npos > 1 ? argv[2] : "";
	if (!o->out && isatty(STDOUT_FILENO)) {
		cmd_usage_err("tar", "refusing to write a tar archive to a terminal (redirect "
				  "standard output or use -o FILE)");
		return 2;
	}
	return -1;
}

/* Sets the image path of the top entry (PATH without extra slashes) and its archive name. */
static int tar_top(struct tar *t, const char *path, const struct sqk_inode *top)
{
	size_t len;
	const char *slash;

	while (*path == '/')
		path++;
	len = strlen(path);
	while (len && path[len - 1] == '/')
		len--;
	t->pcap = len + 64;
	t->path = malloc(t->pcap);
	if (!t->path)
		return SQK_ENOMEM;
	memcpy(t->path, path, len);
	t->path[len] = '\0';
	t->plen = len;
	t->rel = len ? len + 1 : 0;
	if (cmd_is(top, SQK_T_DIR)) {
		t->top_name = ".";
		return 0;
	}
	slash = strrchr(t->path, '/');
	t->top_name = slash ? slash + 1 : t->path;
	if (!strcmp(t->top_name, ".") || !strcmp(t->top_name, "..")) {
		cmd_err(&t->c, t->path, 0, "PATH must end with the entry's name");
		return SQK_EINVAL;
	}
	return 0;
}

/* Gives the complete archive its name (synced first), atomically replacing an older file.
 * errno on failure. */
static int tar_out_commit(struct outfile *o)
{
	return fsync(o->fd) ? -1 : outfile_commit(o, NULL);
}

static const struct outfile_kind tar_kind = {
	.what = "a tar archive",
	.ours = outfile_is_tar,
	.devices = true,
};

/* Judges -o FILE before the image is opened (outfile.h); a refusal is printed. 0 or -1. */
static int tar_out_judge(struct tar *t, const struct tar_opts *o)
{
	struct outfile_target tg;

	if (!o->out)
		return 0;
	if (outfile_judge(o->out, &tar_kind, o->force, &tg)) {
		cmd_err(&t->c, NULL, SQK_ENOMEM, "out of memory");
		return -1;
	}
	if (tg.verdict == SQK_OUT_REFUSED) /* about FILE, not the image: no image prefix */
		fprintf(stderr, "sqk tar: %s\n", tg.why);
	outfile_target_free(&tg);
	return tg.verdict == SQK_OUT_REFUSED ? -1 : 0;
}

/* Opens -o FILE for writing (judged again: it may have changed) and names it for messages. */
static int tar_out_open(struct tar *t, struct tar_opts *o, struct outfile *out)
{
	char msg[700];

	if (outfile_create(out, o->out, &tar_kind, o->force, ".sqk-tar", msg, sizeof(msg))) {
		fprintf(stderr, "sqk tar: %s\n", msg);
		return -1;
	}
	if (out->device) {
		snprintf(o->out_desc, sizeof(o->out_desc), "%s (a block device of %llu bytes)",
			 o->out, (unsigned long long)out->dev_size);
		t->out_name = o->out_desc;
	}
	return 0;
}

/* libarchive's output callback: everything it produces goes to t->fd, whole. */
static la_ssize_t tar_write_cb(struct archive *a, void *ctx, const void *buf, size_t len)
{
	struct tar *t = ctx;

	if (t->discard) { /* the archive failed: nothing more of it is written */
		archive_set_error(a, ECANCELED, "archive abandoned");
		return -1;
	}
	if (cmd_write_all(t->fd, buf, len)) {
		t->out_errno = errno;
		archive_set_error(a, errno, "write failed");
		return -1;
	}
	return (la_ssize_t)len;
}

static int tar_archive_open(struct tar *t, int filter)
{
	int r;

	t->a = archive_write_new();
	if (!t->a) {
		cmd_err(&t->c, NULL, SQK_ENOMEM, "cannot start the archive");
		return -1;
	}
	r = archive_write_set_format_pax(t->a);
	/* only SCHILY.xattr records: without this option (unknown to old libarchive versions,
	 * which then write both) a LIBARCHIVE.xattr copy of each xattr follows, which GNU tar
	 * warns about, one line per xattr */
	if (r == ARCHIVE_OK)
		archive_write_set_format_option(t->a, "pax", "xattrheader", "SCHILY");
	if (r == ARCHIVE_OK && filter)
		r = filter == 'z' ? archive_write_add_filter_gzip(t->a)
		    : filter == 'J' ? archive_write_add_filter_xz(t->a)
				    : archive_write_add_filter_zstd(t->a);
	/* a compressed stream ends with its last byte: zero padding after it upsets zstd and xz */
	if (r == ARCHIVE_OK && filter)
		r = archive_write_set_bytes_in_last_block(t->a, 1);
	if (r == ARCHIVE_OK)
		r = archive_write_open2(t->a, t, NULL, tar_write_cb, NULL, NULL);
	if (r != ARCHIVE_OK) {
		tar_archive_err(t, "cannot start the archive");
		return -1;
	}
	return 0;
}

/* Ends the archive: its last blocks written and flushed on success; on failure nothing more
 * (what libarchive still holds is dropped), so that readers of the truncated archive fail too.
 * archive_write_close runs either way: it is what frees libarchive's output buffers. */
static int tar_archive_end(struct tar *t, int ok)
{
	int r = 0;

	if (!t->a)
		return ok ? 0 : -1;
	t->discard = !ok;
	if (archive_write_close(t->a) != ARCHIVE_OK && ok) {
		tar_archive_err(t, "cannot finish the archive");
		r = -1;
	}
	archive_write_free(t->a);
	t->a = NULL;
	return ok ? r : -1;
}

static void tar_on_signal(void *ctx, int sig)
{
	struct tar *t = ctx;
	struct sqk_image *img = atomic_load(&t->cancel_img);

	atomic_store(&t->sig, sig);
	if (img) /* remote reads that hang fail at once */
		sqk_image_cancel(img);
}

static void tar_free(struct tar *t)
{
	archive_entry_free(t->ent);
	free(t->path);
	free(t->links);
	free(t->names);
	free(t->map);
	free(t->words);
	free(t->xnames);
	free(t->xval);
	free(t->buf);
}

/* On a terminal: the progress line, against the files and bytes below top (walked first). */
static void tar_progress_start(struct tar *t, const struct sqk_inode *top)
{
	uint64_t files, bytes;

	progress_init(&t->pr, "tar", !t->no_progress);
	t->c.progress = &t->pr;
	if (t->pr.on && progress_count(t->c.img, top, &files, &bytes) == 0)
		progress_totals(&t->pr, files, bytes);
	progress_start(&t->pr, 0);
}

/* The terminal's summary line after a complete archive. */
static void tar_summary(const struct tar *t)
{
	uint64_t bytes = atomic_load(&t->pr.bytes), files = atomic_load(&t->pr.files);
	double secs = progress_elapsed(&t->pr);
	char size[32], rate[32];

	progress_size(size, sizeof(size), bytes);
	progress_rate(rate, sizeof(rate), bytes, secs);
	progress_summary(&t->pr, "%llu %s (%s) archived to %s in %.1f s, %s",
			     (unsigned long long)files, plural(files, "file", "files"), size,
			     t->out_name, secs, rate);
}

/* Opens the image and the output, writes the archive. Returns 0 or -1 (message printed). */
static int tar_run(struct tar *t, struct tar_opts *o, struct outfile *out)
{
	struct sqk_inode top;
	int ok;

	t->c.whole = !o->path[0] || !strcmp(o->path, "/") || !strcmp(o->path, ".");
	if (tar_out_judge(t, o) || cmd_open(&t->c))
		return -1;
	atomic_store(&t->cancel_img, t->c.img);
	if (cmd_lookup(&t->c, o->path, &top))
		return -1;
	if (!t->c.whole && !t->c.remote.no_prefetch)
		sqk_image_prefetch_tree(t->c.img, &top, CMD_PREFETCH_MAX); /* best effort */
	if (tar_top(t, o->path, &top)) {
		if (!t->path)
			cmd_err(&t->c, NULL, SQK_ENOMEM, "out of memory");
		return -1;
	}
	if (o->out && tar_out_open(t, o, out))
		return -1;
	t->fd = o->out ? out->fd : STDOUT_FILENO;
	if (tar_archive_open(t, o->filter))
		return tar_archive_end(t, 0);
	tar_progress_start(t, &top);
	ok = tar_walk(t, &top) == 0;
	progress_stop(&t->pr);
	if (tar_archive_end(t, ok))
		return -1;
	if (atomic_load(&t->sig)) { /* arrived after the last entry: FILE is still not made */
		cmd_err(&t->c, NULL, 0, "interrupted by signal %d", atomic_load(&t->sig));
		return -1;
	}
	if (o->out && tar_out_commit(out)) {
		if (errno == EEXIST) /* something else took the name since it was judged */
			cmd_err(&t->c, NULL, 0, "'%s' changed during the write: not replaced",
				    o->out);
		else
			cmd_err(&t->c, NULL, 0, "cannot write '%s': %s", o->out,
				    strerror(errno));
		return -1;
	}
	tar_summary(t);
	return 0;
}

int tar_main(int argc, char **argv)
{
	struct tar t;
	struct tar_opts o = { 0 };
	struct outfile out = { .fd = -1 };
	struct sigwatch sw;
	bool watching = false;
	int r, sig;

	memset(&t, 0, sizeof(t));
	t.c.name = "tar";
	t.sparse = true;
	r = tar_parse(&t, &o, argc, argv);
	if (r >= 0) {
		cmd_remote_free(&t.c.remote);
		return r;
	}
	t.out_name = o.out ? o.out : "stdout";
	/* a closed pipe is an error to report (EPIPE), not a signal to die of */
	signal(SIGPIPE, SIG_IGN);
	/* with -o, a signal stops the walk so that the temporary file goes */
	if (o.out && sigwatch_start(&sw, tar_on_signal, &t) == 0)
		watching = true;
	r = tar_run(&t, &o, &out);
	outfile_abort(&out);
	if (watching)
		sigwatch_stop(&sw);
	sig = atomic_load(&t.sig);
	cmd_close(&t.c);
	tar_free(&t);
	return sig ? 128 + sig : r ? 1 : 0;
}
