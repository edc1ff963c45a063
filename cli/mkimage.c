/* `sqk mkimage`: options, the output (judged before any source is read: a file is written as
 * an unnamed temporary in the destination directory, linked and renamed into place after the
 * one fsync, so a failed build leaves the destination as it was; a block device is written in
 * place), signals, the summary. The build itself is mkimage/build.c. */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/counts.h"
#include "common/error.h"
#include "common/format.h"
#include "common/sigwatch.h"
#include "mkimage/mk.h"
#include "mkimage.h"
#include "mkimage_options.h"
#include "common/outfile.h"
#include "mkimage/reuse.h"
#include "mkimage/source.h"

static const struct sqk_outfile_kind image_kind = {
	.what = "a SquashFS image",
	.ours = sqk_outfile_is_squashfs,
	.devices = true,
};

/* Whether --reuse OLD is the block device IMAGE names: its blocks would be overwritten while
 * they are copied (a file is not: the old one stays until the rename). */
static bool reuse_is_output(const struct mk_options *o)
{
	struct stat a, b;
	return o->reuse && !stat(o->reuse, &a) && !stat(o->image, &b) && S_ISBLK(a.st_mode) &&
	       S_ISBLK(b.st_mode) && a.st_rdev == b.st_rdev;
}

/* Judges the output (outfile.h) before anything is read or written, with no side effects: a
 * refusal ends the run there. Fills *t (the caller frees it). */
static int out_judge(struct mk_ctx *c, struct sqk_outfile_target *t)
{
	if (!strcmp(c->opt->image, "-"))
		return mk_fail(c, SQK_EINVAL, "writing an image to standard output is not "
			       "supported: name a file (./- for a file named '-')");
	if (reuse_is_output(c->opt))
		return mk_fail(c, SQK_EINVAL, "--reuse '%s' is the block device the image goes to, "
			       "written in place: copy the old image to a file first", c->opt->reuse);
	if (sqk_outfile_judge(c->opt->image, &image_kind, c->opt->force, t))
		return mk_fail(c, SQK_ENOMEM, "out of memory");
	if (t->verdict == SQK_OUT_REFUSED)
		return mk_fail(c, SQK_EINVAL, "%s", t->why);
	return 0;
}

/* Opens the judged output t (taken over), once the sources are open: a device's start is
 * zeroed only now. Makes c->out write to it: a device through a capped sink, so an image too
 * big for it is found whole and never half-lands there. */
static int out_open(struct mk_ctx *c, struct sqk_outfile_target *t, struct sqk_outfile *o)
{
	char msg[700];
	int err;

	if (sqk_outfile_create_judged(o, c->opt->image, t, ".sqk", msg, sizeof(msg)))
		return mk_fail(c, errno ? sqk_from_errno(errno) : SQK_EINVAL, "%s", msg);
	err = sqk_io_fd_create(o->fd, 0, false, &c->out);
	if (!err && o->device) {
		struct sqk_io *fd_io = c->out;
		if ((err = sqk_io_capped_create(fd_io, o->dev_size, &c->out)))
			sqk_io_destroy(fd_io);
	}
	return err ? mk_fail(c, err, "out of memory") : 0;
}

/* A device: checks the image fitted. A file: gives the finished temporary the image's name,
 * atomically replacing an old image. */
static int out_commit(struct mk_ctx *c, struct sqk_outfile *o)
{
	uint64_t need = sqk_io_capped_overflow(c->out);

	if (need)
		return mk_fail(c, SQK_ENOSPC, "the image needs %llu bytes, the block device '%s' "
			       "holds %llu", (unsigned long long)need, c->opt->image,
			       (unsigned long long)o->dev_size);
	bool dev = o->device;
	if (!sqk_outfile_commit(o, NULL))
		return 0;
	if (errno == EEXIST) /* something else took the name since it was judged */
		return mk_fail(c, sqk_from_errno(errno), "'%s' changed during the build: not "
			       "replaced", c->opt->image);
	return mk_fail(c, sqk_from_errno(errno), "cannot %s '%s': %s", dev ? "close" : "rename to",
		       c->opt->image, strerror(errno));
}

static void remember_skip(struct mk_ctx *c, const char *path, int fd)
{
	struct stat st;
	if ((path ? stat(path, &st) : fstat(fd, &st)) == 0 && S_ISREG(st.st_mode) && c->nskip < 2) {
		c->skip_dev[c->nskip] = st.st_dev;
		c->skip_ino[c->nskip++] = st.st_ino;
	}
}

/* ---- summary ---- */

static void summary(const struct mk_ctx *c, const struct sqk_super *sb, double secs)
{
	const struct mk_stats *s = &c->st;
	uint64_t total = s->file_bytes, fsize = c->pos; /* the file, integrity data included */
	printf("image      %s\n", c->opt->image);
	printf("format     SquashFS 4.0, %s, %u KiB blocks%s\n", sqk_comp_name(sb->compressor),
	       sb->block_size / 1024, c->opt->no_fragments ? ", no fragments" : "");
	printf("size       %llu bytes (%.2f MiB) for %llu bytes of file data: %.1f%%\n",
	       (unsigned long long)fsize, (double)fsize / 1048576.0, (unsigned long long)total,
	       total ? 100.0 * (double)fsize / (double)total : 100.0);
	struct sqk_counts k = { sb->inode_count, s->files, s->dirs, s->symlinks, s->devices, s->ipc,
				s->hardlinks, s->data_blocks, s->raw_blocks,
				atomic_load(&s->sparse_blocks), sb->fragment_count, s->dup_files,
				s->dup_bytes };
	char line[256];
	sqk_counts_inodes(&k, line, sizeof(line)); /* the words of sqk info and sqk verify */
	printf("inodes     %s\n", line);
	sqk_counts_blocks(&k, line, sizeof(line));
	printf("blocks     %s\n", line);
	sqk_counts_dups(&k, line, sizeof(line));
	printf("duplicates %s\n", line);
	printf("ids        %u; xattr sets %u\n", sb->id_count, mk_xattrs_count(c->xattrs));
	if (c->opt->reuse)
		printf("reused     %llu blocks (%.2f MiB) and %llu fragment blocks of %s\n",
		       (unsigned long long)(c->reuse ? c->reuse->blocks : 0),
		       c->reuse ? (double)c->reuse->bytes / 1048576.0 : 0.0,
		       (unsigned long long)(c->reuse ? c->reuse->frag_blocks : 0), c->opt->reuse);
	if (c->order) {
		uint64_t bytes;
		size_t n = mk_order_count(c, &bytes);
		printf("order      %zu files laid out first (%.2f MiB); prefetch hint: ", n,
		       (double)bytes / 1048576.0);
		if (c->hint_ranges)
			printf("%zu ranges\n", c->hint_ranges);
		else
			printf("none\n");
	}
	if (c->have_root) {
		char hex[2 * SQK_INTEG_DIGEST_SIZE + 1];
		sqk_integ_hex(c->root_hash, hex);
		printf("root hash  %s\n", hex);
	} else {
		printf("root hash  none (--no-checksums)\n");
	}
	printf("time       %.2f s with %d threads\n", secs, c->opt->threads);
}

/* Judges the output, opens the sources and the other inputs, only then creates the output
 * (a missing source or a bad --reuse leaves an old image, on a file or a device, as it was),
 * builds and commits. */
static int run(struct mk_ctx *c, struct sqk_outfile *of, struct sqk_super *sb)
{
	struct sqk_outfile_target t = { 0 };
	struct mk_source *src = NULL;

	remember_skip(c, c->opt->image, -1);
	int err = out_judge(c, &t);
	if (!err)
		err = c->opt->tar ? mk_source_tar_create(c, c->opt->tar_path, &src) :
				    mk_source_dir_create(c, &src);
	if (!err)
		err = mk_build_inputs(c);
	if (!err && mk_cancelled(c))
		err = mk_fail(c, SQK_EINTR, "interrupted");
	if (!err && !(err = out_open(c, &t, of)))
		remember_skip(c, NULL, of->fd);
	sqk_outfile_target_free(&t);
	if (!err)
		err = mk_build(c, src, sb);
	if (!err)
		mk_source_dir_warn_excludes(src, c);
	mk_source_destroy(src);
	if (!err && mk_cancelled(c))
		err = mk_fail(c, SQK_EINTR, "interrupted");
	if (!err)
		err = out_commit(c, of);
	return err;
}

int sqk_mkimage_main(int argc, char **argv)
{
	struct mk_options o;
	struct mk_ctx c;
	struct sqk_sigwatch sw;
	struct sqk_outfile of = { .fd = -1 };
	struct sqk_super sb = { 0 };
	struct timespec t0, t1;
	int r = mk_options_parse(argc, argv, &o);
	if (r)
		return r > 0 ? 0 : 2;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (sqk_sigwatch_start(&sw, NULL, NULL)) {
		fprintf(stderr, "sqk mkimage: cannot start the signal thread\n");
		mk_options_free(&o);
		return 1;
	}
	int err = mk_ctx_init(&c, &o, &sw.sig);
	if (!err)
		err = run(&c, &of, &sb);
	sqk_sigwatch_stop(&sw);
	if (err) {
		int sig = atomic_load(&sw.sig);
		const char *dev = of.device ? " (the device's old superblock is zeroed: an older "
					      "image there is gone)" : "";
		sqk_outfile_abort(&of);
		if (sig)
			fprintf(stderr, "sqk mkimage: interrupted by %s; no image written%s\n",
				strsignal(sig), dev);
		else
			fprintf(stderr, "sqk mkimage: %s; no image written%s\n", c.errmsg, dev);
		mk_ctx_free(&c);
		mk_options_free(&o);
		return sig ? 128 + sig : 1;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (!o.quiet)
		summary(&c, &sb, (double)(t1.tv_sec - t0.tv_sec) +
				     (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
	mk_ctx_free(&c);
	mk_options_free(&o);
	return 0;
}
