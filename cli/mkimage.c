/* SPDX-License-Identifier: BSD-2-Clause */
/* `sqk mkimage`: argv into the builder's options (cli/mkimage_options.c), the output (judged before
 * any source is read: a file is written as an unnamed temporary in the destination directory,
 * linked and renamed into place after the one fsync, so a failed build leaves the destination
 * as it was; a block device is written in place), signals, sqk_build (sqk/build.h), the
 * summary. */
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "sqk/counts.h"
#include "sqk/error.h"
#include "common/bytes.h"
#include "common/format.h"
#include "common/sign.h"
#include "cli/lib/outfile.h"
#include "cli/lib/sigwatch.h"
#include "mkimage.h"
#include "mkimage_options.h"
#include "mkimage_verity.h"
#include "mkimage/build.h"

static const struct outfile_kind image_kind = {
	.what = "a SquashFS image",
	.ours = outfile_is_squashfs,
	.devices = true,
};

/* The output of one run: judged first, created when the builder asks (out_open), committed
 * after the build. */
struct output {
	const struct mk_options *o;
	struct outfile_target t;
	struct outfile of;
	struct sqk_io *io;       /* writes to of.fd (a device: through a capped sink) */
	struct mkv verity;       /* --verity: the files beside the image */
	char msg[1024];          /* why the output failed, when it did */
};

static int out_fail(struct output *out, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int out_fail(struct output *out, int err, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(out->msg, sizeof(out->msg), fmt, ap);
	va_end(ap);
	return err;
}

/* Whether --reuse OLD is the block device IMAGE names: its blocks would be overwritten while
 * they are copied (a file is not: the old one stays until the rename). */
static bool reuse_is_output(const struct mk_options *o)
{
	struct stat a, b;
	const char *reuse = o->build.reuse;
	return reuse && !stat(reuse, &a) && !stat(o->image, &b) && S_ISBLK(a.st_mode) &&
	       S_ISBLK(b.st_mode) && a.st_rdev == b.st_rdev;
}

/* The size of the block device at path, 0 when it cannot be read. */
static uint64_t device_bytes(const char *path)
{
	uint64_t n = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	if (ioctl(fd, BLKGETSIZE64, &n))
		n = 0;
	close(fd);
	return n;
}

/* Whether the file at path starts with the SquashFS magic (what outfile_judge replaces
 * unforced, and what is appended to). */
static bool holds_squashfs(const char *path)
{
	uint8_t head[4];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	bool yes = fd >= 0 && read(fd, head, sizeof(head)) == (ssize_t)sizeof(head) &&
		   outfile_is_squashfs(head, sizeof(head));

	if (fd >= 0)
		close(fd);
	return yes;
}

/* Appending, as mksquashfs does by default: a SquashFS image already at IMAGE (not forced,
 * and no --reuse, which names a rebuild) is the build's old image; the new one replaces it only
 * once complete. A block device is written in place, which would destroy the old image first:
 * refused. */
static int out_append(struct output *out, struct mk_options *o)
{
	if (o->force || o->build.reuse || !holds_squashfs(out->t.path))
		return 0;
	if (o->offset)
		return out_fail(out, SQK_EINVAL, "'%s' holds a SquashFS image: appending with "
				"--offset is not supported (-noappend replaces it)", o->image);
	if (out->t.verdict == SQK_OUT_DEVICE)
		return out_fail(out, SQK_EINVAL, "'%s' is a block device holding a SquashFS image: "
				"appending in place is not supported (-noappend replaces it)",
				o->image);
	if (out->t.verdict == SQK_OUT_REPLACE)
		o->build.append = out->t.path;
	return 0;
}

/* Judges the output (outfile.h) before anything is read or written, with no side effects: a
 * refusal ends the run there. */
static int out_judge(struct output *out, struct mk_options *o)
{
	if (!strcmp(o->image, "-"))
		return out_fail(out, SQK_EINVAL, "writing an image to standard output is not "
				"supported: name a file (./- for a file named '-')");
	if (reuse_is_output(o))
		return out_fail(out, SQK_EINVAL, "--reuse '%s' is the block device the image goes "
				"to, written in place: copy the old image to a file first",
				o->build.reuse);
	if (outfile_judge(o->image, &image_kind, o->force, &out->t))
		return out_fail(out, SQK_ENOMEM, "out of memory");
	if (out->t.verdict == SQK_OUT_REFUSED)
		return out_fail(out, SQK_EINVAL, "%s", out->t.why);
	uint64_t dev = out->t.verdict == SQK_OUT_DEVICE && o->offset ? device_bytes(out->t.path)
								      : 0;
	if (dev && o->offset >= dev)
		return out_fail(out, SQK_EINVAL, "--offset %llu is past the end of the block "
				"device '%s' (%llu bytes)", (unsigned long long)o->offset, o->image,
				(unsigned long long)dev);
	if (out_append(out, o))
		return SQK_EINVAL;
	if (o->build.verity == SQK_BUILD_VERITY_NONE)
		return 0;
	return mkv_judge(&out->verity, o, out->t.verdict == SQK_OUT_DEVICE, out->msg,
			 sizeof(out->msg));
}

/* open_output of sqk_build_opts: opens the judged output once the sources and the other inputs
 * are open (a device's start is zeroed only now), a device through a capped sink, so an image
 * too big for it is found whole and never half-lands there. */
static int out_open(void *arg, struct sqk_io **io, int *skip_fd, char *msg, size_t cap)
{
	struct output *out = arg;
	int err;

	if (outfile_create_judged(&out->of, out->o->image, &out->t, ".sqk", msg, cap))
		return errno ? sqk_from_errno(errno) : SQK_EINVAL;
	uint64_t at = out->o->offset; /* -o: the image after that many bytes (a hole) */
	if (out->of.device && at >= out->of.dev_size) {
		snprintf(msg, cap, "--offset %llu is past the end of the block device '%s' (%llu "
			 "bytes)", (unsigned long long)at, out->o->image,
			 (unsigned long long)out->of.dev_size);
		return SQK_EINVAL;
	}
	/* an older image at the offset: its superblock goes first, as the device's start did */
	static const uint8_t zeros[SQK_SUPER_SIZE];
	if (out->of.device && at && pwrite(out->of.fd, zeros, sizeof(zeros), (off_t)at) !=
	    (ssize_t)sizeof(zeros)) {
		snprintf(msg, cap, "cannot write to '%s' at offset %llu: %s", out->o->image,
			 (unsigned long long)at, strerror(errno));
		return sqk_from_errno(errno);
	}
	err = sqk_io_fd_create(out->of.fd, at, false, &out->io);
	if (!err && out->of.device) {
		struct sqk_io *fd_io = out->io;
		if ((err = sqk_io_capped_create(fd_io, out->of.dev_size - at, &out->io)))
			sqk_io_destroy(fd_io);
	}
	if (err) {
		out->io = NULL;
		snprintf(msg, cap, "out of memory");
		return err;
	}
	*io = out->io;
	*skip_fd = out->of.fd;
	return 0;
}

/* open_verity of sqk_build_opts: the tree's file beside the image. */
static int out_open_verity(void *arg, struct sqk_io **io, char *msg, size_t cap)
{
	struct output *out = arg;

	return mkv_open_tree(&out->verity, io, msg, cap);
}

/* A device: checks the image fitted. A file: gives the finished temporary the image's name,
 * atomically replacing an old image. */
static int out_commit(struct output *out)
{
	const char *image = out->o->image;
	uint64_t need = sqk_io_capped_overflow(out->io);

	if (need)
		return out_fail(out, SQK_ENOSPC,
				"the image needs %llu bytes, the block device '%s' "
				"holds %llu",
				(unsigned long long)need, image,
				(unsigned long long)out->of.dev_size);
	bool dev = out->of.device;
	if (!outfile_commit(&out->of, NULL))
		return 0;
	if (errno == EEXIST) /* something else took the name since it was judged */
		return out_fail(out, sqk_from_errno(errno), "'%s' changed during the build: not "
				"replaced", image);
	return out_fail(out, sqk_from_errno(errno), "cannot %s '%s': %s",
			dev ? "close" : "rename to", image, strerror(errno));
}

/* ---- summary ---- */

/* The dm-verity lines: the root hash and where it and the tree are (for an appended tree, the
 * offset veritysetup's --hash-offset takes), the salt. */
static void verity_summary(const struct mk_options *o, const struct mkv *v,
			   const struct sqk_build_result *r)
{
	char root[2 * SQK_INTEG_DIGEST_SIZE + 1], salt[2 * sizeof(r->verity_salt) + 1] = "-";
	const char *rootf = v->f[MKV_ROOT].write ? v->f[MKV_ROOT].path : NULL;

	integ_hex(r->verity_root, root);
	if (r->verity_salt_len) {
		bytes_hex(r->verity_salt, r->verity_salt_len, salt);
		salt[2 * r->verity_salt_len] = 0;
	}
	printf("verity     root hash %s%s%s%s%s\n", root, rootf ? " in " : "", rootf ? rootf : "",
	       v->signing ? ", signed in " : "", v->signing ? v->f[MKV_SIG].path : "");
	if (o->build.verity == SQK_BUILD_VERITY_APPEND)
		printf("verity     tree of %llu bytes appended: --hash-offset=%llu, salt %s\n",
		       (unsigned long long)r->verity_len, (unsigned long long)r->verity_data_end,
		       salt);
	else
		printf("verity     tree of %llu bytes in %s, salt %s\n",
		       (unsigned long long)r->verity_len, v->f[MKV_TREE].path, salt);
}

static void summary(const struct mk_options *o, const struct mkv *v,
		    const struct sqk_build_result *r, double secs)
{
	const struct sqk_build_counts *s = &r->counts;
	const struct sqk_super *sb = &r->super;
	uint64_t total = s->file_bytes, fsize = r->image_bytes; /* integrity data included */
	if (o->offset)
		printf("image      %s, at offset %llu\n", o->image, (unsigned long long)o->offset);
	else
		printf("image      %s\n", o->image);
	if (r->appended)
		printf("appended to %s: %llu entries kept, %llu added\n", o->image,
		       (unsigned long long)r->append_kept, (unsigned long long)r->append_added);
	printf("format     SquashFS 4.0, %s, %u KiB blocks%s\n", comp_name(sb->compressor),
	       sb->block_size / 1024, o->build.no_fragments ? ", no fragments" : "");
	printf("size       %llu bytes (%.2f MiB) for %llu bytes of file data: %.1f%%\n",
	       (unsigned long long)fsize, (double)fsize / 1048576.0, (unsigned long long)total,
	       total ? 100.0 * (double)fsize / (double)total : 100.0);
	struct sqk_counts k = { sb->inode_count, s->files, s->dirs, s->symlinks, s->devices, s->ipc,
				s->hardlinks, s->data_blocks, s->raw_blocks, s->sparse_blocks,
				sb->fragment_count, s->dup_files, s->dup_bytes };
	char line[256];
	sqk_counts_inodes(&k, line, sizeof(line)); /* the words of sqk info and sqk verify */
	printf("inodes     %s\n", line);
	sqk_counts_blocks(&k, line, sizeof(line));
	printf("blocks     %s\n", line);
	sqk_counts_dups(&k, line, sizeof(line));
	printf("duplicates %s\n", line);
	printf("ids        %u; xattr sets %u\n", sb->id_count, s->xattr_sets);
	if (o->build.reuse)
		printf("reused     %llu blocks (%.2f MiB) and %llu fragment blocks of %s\n",
		       (unsigned long long)r->reused_blocks, (double)r->reused_bytes / 1048576.0,
		       (unsigned long long)r->reused_frag_blocks, o->build.reuse);
	if (r->ordered) {
		printf("order      %llu files laid out first (%.2f MiB); prefetch hint: ",
		       (unsigned long long)r->order_files, (double)r->order_bytes / 1048576.0);
		if (r->hint_ranges)
			printf("%zu ranges\n", r->hint_ranges);
		else
			printf("none\n");
	}
	if (r->have_root) {
		char hex[2 * SQK_INTEG_DIGEST_SIZE + 1];
		integ_hex(r->root_hash, hex);
		printf("root hash  %s\n", hex);
	} else {
		printf("root hash  none (--no-checksums)\n");
	}
	for (int i = 0; i < o->nsign; i++) {
		uint8_t pub[SQK_SIG_PUB_SIZE];
		char id[2 * SQK_SIG_ID_SIZE + 1];

		sig_public_of(o->sign_keys[i], pub);
		sig_key_id_hex(pub, id);
		printf("%-11sby key %s (%s)\n", i ? "" : "signed", id, o->sign_paths[i]);
	}
	if (r->have_verity)
		verity_summary(o, v, r);
	printf("time       %.2f s with %d threads\n", secs, o->build.threads);
}

/* Judges the output, then builds: sqk_build opens the sources and the other inputs and only
 * then asks for the output (out_open; a missing source or a bad --reuse leaves an old image,
 * on a file or a device, as it was); then commits. The message of a failure is in *msg. */
static int run(struct mk_options *o, struct output *out, struct sqk_build_result *res,
	       const char **msg)
{
	int err = out_judge(out, o);

	*msg = out->msg;
	if (err)
		return err;
	o->build.open_output = out_open;
	o->build.open_verity = out_open_verity;
	o->build.open_arg = out;
	err = sqk_build(&o->build, &o->src, NULL, res);
	if (err) {
		*msg = res->msg;
		return err;
	}
	if (o->build.cancel && atomic_load(o->build.cancel))
		return out_fail(out, SQK_EINTR, "interrupted");
	/* the files beside the image first: a failure there leaves the old image as it was */
	if (res->have_verity && (err = mkv_write(&out->verity, res, out->msg, sizeof(out->msg))))
		return err;
	if (res->have_verity && (err = mkv_commit(&out->verity, out->msg, sizeof(out->msg))))
		return err;
	err = out_commit(out);
	if (!err && res->have_verity)
		mkv_remove_stale(&out->verity, o->quiet);
	return err;
}

int mkimage_main(int argc, char **argv)
{
	struct mk_options o;
	struct sigwatch sw;
	struct output out = { .o = &o, .of = { .fd = -1 } };
	struct sqk_build_result res;
	struct timespec t0, t1;
	const char *msg = "";
	int r = mk_options_parse(argc, argv, &o);
	if (r)
		return r > 0 ? 0 : 2;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (sigwatch_start(&sw, NULL, NULL)) {
		fprintf(stderr, "sqk mkimage: cannot start the signal thread\n");
		mk_options_free(&o);
		return 1;
	}
	o.build.cancel = &sw.sig;
	sqk_build_result_init(&res);
	mkv_init(&out.verity);
	int err = run(&o, &out, &res, &msg);
	const char *what = o.build.append ? "the old image is unchanged" : "no image written";
	sigwatch_stop(&sw);
	sqk_io_destroy(out.io);
	if (err) {
		int sig = atomic_load(&sw.sig);
		const char *dev = out.of.device
				      ? " (the device's old superblock is zeroed: an older "
					"image there is gone)"
				      : "";
		outfile_abort(&out.of);
		mkv_free(&out.verity);
		if (sig)
			fprintf(stderr, "sqk mkimage: interrupted by %s; %s%s\n",
				strsignal(sig), what, dev);
		else
			fprintf(stderr, "sqk mkimage: %s; %s%s\n", msg, what, dev);
		outfile_target_free(&out.t);
		mk_options_free(&o);
		return sig ? 128 + sig : 1;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (!o.quiet)
		summary(&o, &out.verity, &res, (double)(t1.tv_sec - t0.tv_sec) +
				  (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
	outfile_target_free(&out.t);
	mkv_free(&out.verity);
	mk_options_free(&o);
	return 0;
}
