/* The build from start to end: output opened as an unnamed temporary file in the destination
 * directory, walk, dedup, data, tables, superblock last, padding, integrity data (every byte
 * written is hashed on its way out), one fsync, then the file is linked and renamed into place.
 * Any failure leaves the destination as it was. */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/error.h"
#include "common/format.h"
#include "mk.h"
#include "mkimage.h"
#include "common/sigwatch.h"

int mk_fail(struct mk_ctx *c, int err, const char *fmt, ...)
{
	pthread_mutex_lock(&c->errmu);
	if (!c->first_err) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(c->errmsg, sizeof(c->errmsg), fmt, ap);
		va_end(ap);
		c->first_err = err;
	}
	pthread_mutex_unlock(&c->errmu);
	return err;
}

int mk_write(struct mk_ctx *c, const void *buf, size_t len)
{
	int err = sqk_io_write_at(c->out, c->pos, buf, len);
	if (err)
		return mk_fail(c, err, "cannot write image '%s' at offset %llu: %s", c->opt->image,
			       (unsigned long long)c->pos,
			       err == SQK_EIO ? strerror(errno) : sqk_strerror(err));
	if (c->integ && (err = sqk_integ_writer_update(c->integ, c->pos, buf, len)))
		return mk_fail(c, err, "cannot hash image '%s' at offset %llu: %s", c->opt->image,
			       (unsigned long long)c->pos, sqk_strerror(err));
	c->pos += len;
	return 0;
}

/* Output file state: an O_TMPFILE fd, or a named temporary where O_TMPFILE is unsupported. */
struct outfile {
	int fd;
	char *dir;
	char *tmpname; /* named temporary (fallback or while linking), NULL otherwise */
};

static int out_open(struct mk_ctx *c, struct outfile *o)
{
	char *copy = strdup(c->opt->image);
	if (!copy)
		return mk_fail(c, SQK_ENOMEM, "out of memory");
	o->dir = strdup(dirname(copy));
	free(copy);
	if (!o->dir)
		return mk_fail(c, SQK_ENOMEM, "out of memory");
	o->fd = open(o->dir, O_TMPFILE | O_WRONLY | O_CLOEXEC, 0666);
	if (o->fd >= 0)
		return 0;
	if (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL)
		return mk_fail(c, sqk_from_errno(errno), "cannot create image in '%s': %s", o->dir,
			       strerror(errno));
	size_t len = strlen(o->dir) + 32;
	o->tmpname = malloc(len);
	if (!o->tmpname)
		return mk_fail(c, SQK_ENOMEM, "out of memory");
	snprintf(o->tmpname, len, "%s/.sqk-XXXXXX", o->dir);
	o->fd = mkostemp(o->tmpname, O_CLOEXEC);
	if (o->fd < 0) {
		int e = errno;
		free(o->tmpname);
		o->tmpname = NULL;
		return mk_fail(c, sqk_from_errno(e), "cannot create image in '%s': %s", o->dir,
			       strerror(e));
	}
	mode_t um = umask(0);
	umask(um);
	fchmod(o->fd, 0666 & ~um);
	return 0;
}

static void out_abort(struct outfile *o)
{
	if (o->fd >= 0)
		close(o->fd);
	if (o->tmpname)
		unlink(o->tmpname);
	free(o->tmpname);
	free(o->dir);
	o->fd = -1;
	o->tmpname = NULL;
	o->dir = NULL;
}

/* Gives the finished temporary file the image's name, atomically replacing an old image. */
static int out_commit(struct mk_ctx *c, struct outfile *o)
{
	if (!o->tmpname) {
		char proc[64];
		size_t len = strlen(o->dir) + 40;
		o->tmpname = malloc(len);
		if (!o->tmpname)
			return mk_fail(c, SQK_ENOMEM, "out of memory");
		snprintf(proc, sizeof(proc), "/proc/self/fd/%d", o->fd);
		for (unsigned i = 0;; i++) {
			snprintf(o->tmpname, len, "%s/.sqk-%d-%u.tmp", o->dir, (int)getpid(), i);
			if (!linkat(AT_FDCWD, proc, AT_FDCWD, o->tmpname, AT_SYMLINK_FOLLOW))
				break;
			if (errno != EEXIST || i > 100) {
				int e = errno;
				free(o->tmpname);
				o->tmpname = NULL;
				return mk_fail(c, sqk_from_errno(e), "cannot create '%s': %s",
					       c->opt->image, strerror(e));
			}
		}
	}
	if (rename(o->tmpname, c->opt->image))
		return mk_fail(c, sqk_from_errno(errno), "cannot rename to '%s': %s", c->opt->image,
			       strerror(errno));
	free(o->tmpname);
	o->tmpname = NULL;
	close(o->fd);
	o->fd = -1;
	free(o->dir);
	o->dir = NULL;
	return 0;
}

static void remember_skip(struct mk_ctx *c, const char *path, int fd)
{
	struct stat st;
	if ((path ? stat(path, &st) : fstat(fd, &st)) == 0 && S_ISREG(st.st_mode) && c->nskip < 2) {
		c->skip_dev[c->nskip] = st.st_dev;
		c->skip_ino[c->nskip++] = st.st_ino;
	}
}

static uint16_t image_flags(const struct mk_options *o, bool comp_opts, uint32_t nxattr_sets)
{
	uint16_t f = 0;
	if (!o->no_dedup)
		f |= SQK_FLAG_DUPLICATES;
	if (!o->no_exports)
		f |= SQK_FLAG_EXPORTABLE;
	if (o->no_fragments)
		f |= SQK_FLAG_NO_FRAGS;
	else if (!o->no_tailends)
		f |= SQK_FLAG_ALWAYS_FRAGS;
	if (o->no_xattrs)
		f |= SQK_FLAG_NO_XATTRS;
	if (comp_opts)
		f |= SQK_FLAG_COMP_OPTS;
	(void)nxattr_sets;
	return f;
}

/* Writes the compressor options block (if any) right after the superblock's space. */
static int write_head(struct mk_ctx *c, bool *comp_opts)
{
	uint8_t opts[16], blk[32];
	size_t len = 0;
	int err = sqk_comp_options_write(&c->opt->comp, opts, &len);
	if (err)
		return mk_fail(c, err, "compressor options: %s", sqk_strerror(err));
	c->pos = SQK_SUPER_SIZE;
	*comp_opts = len > 0;
	if (!len)
		return 0;
	/* Stored raw, as mksquashfs does. */
	blk[0] = (uint8_t)len;
	blk[1] = 0x80;
	memcpy(blk + 2, opts, len);
	return mk_write(c, blk, len + 2);
}

/* Writes the superblock at offset 0 (last, so a torn build has no valid magic). */
static int write_super(struct mk_ctx *c, const struct sqk_super *sb)
{
	uint8_t raw[SQK_SUPER_SIZE];
	int err;

	sqk_super_encode(sb, raw);
	err = sqk_io_write_at(c->out, 0, raw, sizeof(raw));
	if (!err && c->integ)
		err = sqk_integ_writer_update(c->integ, 0, raw, sizeof(raw));
	if (err)
		return mk_fail(c, err, "cannot write the superblock of '%s': %s", c->opt->image,
			       sqk_strerror(err));
	return 0;
}

/* Appends the digests, padding and trailer after the padded image (c->pos). */
static int write_integrity(struct mk_ctx *c)
{
	uint8_t *blob;
	size_t len;
	int err = sqk_integ_writer_finish(c->integ, c->pos, &blob, &len, c->root_hash);

	if (err)
		return mk_fail(c, err, "cannot finish the integrity data of '%s': %s",
			       c->opt->image, sqk_strerror(err));
	err = sqk_io_write_at(c->out, c->pos, blob, len);
	free(blob);
	if (err)
		return mk_fail(c, err, "cannot write image '%s' at offset %llu: %s", c->opt->image,
			       (unsigned long long)c->pos,
			       err == SQK_EIO ? strerror(errno) : sqk_strerror(err));
	c->pos += len;
	c->have_root = true;
	return 0;
}

static int write_tail(struct mk_ctx *c, struct sqk_super *sb, bool comp_opts)
{
	const struct mk_options *o = c->opt;
	static const uint8_t zeros[SQK_PAD];
	sb->magic = SQK_MAGIC;
	sb->mkfs_time = o->clamp_time >= 0 ? (uint32_t)o->clamp_time :
			o->set_mtime >= 0 ? (uint32_t)o->set_mtime : c->newest_mtime;
	sb->block_size = o->block_size;
	sb->compressor = o->comp.id;
	sb->block_log = (uint16_t)__builtin_ctz(o->block_size);
	sb->flags = image_flags(o, comp_opts, mk_xattrs_count(c->xattrs));
	sb->version_major = 4;
	sb->version_minor = 0;
	size_t pad = (SQK_PAD - c->pos % SQK_PAD) % SQK_PAD;
	int err = pad ? mk_write(c, zeros, pad) : 0;
	if (!err)
		err = write_super(c, sb);
	if (!err && c->integ)
		err = write_integrity(c);
	if (!err && (err = sqk_io_sync(c->out)))
		err = mk_fail(c, err, "cannot flush '%s' to disk: %s", o->image, sqk_strerror(err));
	return err;
}

int mk_build(struct mk_ctx *c, struct sqk_super *sb)
{
	bool comp_opts = false;
	int err = 0;

	if (!c->opt->no_checksums && !c->integ) {
		err = sqk_integ_writer_create(c->opt->checksum_chunk, &c->integ);
		if (err)
			return mk_fail(c, err, "cannot set up the integrity writer: %s",
				       sqk_strerror(err));
	}
	err = mk_tree_build(c);
	if (!err && !c->opt->no_dedup)
		err = mk_dedup(c);
	if (!err)
		err = write_head(c, &comp_opts);
	if (!err)
		err = mk_data_write(c);
	if (!err && mk_cancelled(c))
		err = mk_fail(c, SQK_EINTR, "interrupted");
	if (!err)
		err = mk_tables_write(c, sb);
	if (!err)
		err = write_tail(c, sb, comp_opts);
	return err;
}

/* ---- summary ---- */

static void summary(const struct mk_ctx *c, const struct sqk_super *sb, double secs)
{
	const struct mk_stats *s = &c->st;
	uint64_t total = 0, fsize = c->pos; /* the file, integrity data included */
	for (size_t i = 0; i < c->nnodes; i++)
		if (c->nodes[i]->file)
			total += c->nodes[i]->size;
	printf("image      %s\n", c->opt->image);
	printf("format     SquashFS 4.0, %s, %u KiB blocks%s\n", sqk_comp_name(sb->compressor),
	       sb->block_size / 1024, c->opt->no_fragments ? ", no fragments" : "");
	printf("size       %llu bytes (%.2f MiB) for %llu bytes of file data: %.1f%%\n",
	       (unsigned long long)fsize, (double)fsize / 1048576.0, (unsigned long long)total,
	       total ? 100.0 * (double)fsize / (double)total : 100.0);
	printf("inodes     %u: %llu files, %llu directories, %llu symlinks, %llu devices, "
	       "%llu fifos/sockets; %llu extra hard links\n", sb->inode_count,
	       (unsigned long long)s->files, (unsigned long long)s->dirs,
	       (unsigned long long)s->symlinks, (unsigned long long)s->devices,
	       (unsigned long long)s->ipc, (unsigned long long)s->hardlinks);
	printf("blocks     %llu data (%llu stored raw), %llu sparse, %u fragment blocks\n",
	       (unsigned long long)s->data_blocks, (unsigned long long)s->raw_blocks,
	       (unsigned long long)atomic_load(&s->sparse_blocks), sb->fragment_count);
	printf("duplicates %llu files, %llu bytes\n", (unsigned long long)s->dup_files,
	       (unsigned long long)s->dup_bytes);
	printf("ids        %u; xattr sets %u\n", sb->id_count, mk_xattrs_count(c->xattrs));
	if (c->have_root) {
		char hex[2 * SQK_INTEG_DIGEST_SIZE + 1];
		sqk_integ_hex(c->root_hash, hex);
		printf("root hash  %s\n", hex);
	} else {
		printf("root hash  none (--no-checksums)\n");
	}
	printf("time       %.2f s with %d threads\n", secs, c->opt->threads);
}

static void count_kinds(struct mk_ctx *c)
{
	for (size_t i = 0; i < c->nnodes; i++) {
		mode_t m = c->nodes[i]->mode;
		if (S_ISREG(m))
			c->st.files++;
		else if (S_ISDIR(m))
			c->st.dirs++;
		else if (S_ISLNK(m))
			c->st.symlinks++;
		else if (S_ISCHR(m) || S_ISBLK(m))
			c->st.devices++;
		else
			c->st.ipc++;
	}
}

int mk_ctx_init(struct mk_ctx *c, const struct mk_options *o, atomic_int *cancel)
{
	memset(c, 0, sizeof(*c));
	c->opt = o;
	c->cancel = cancel;
	pthread_mutex_init(&c->errmu, NULL);
	if (mk_ids_create(&c->ids) || mk_xattrs_create(&c->xattrs))
		return mk_fail(c, SQK_ENOMEM, "out of memory");
	int err = sqk_compressor_create(&o->comp, &c->comp);
	if (err)
		return mk_fail(c, err, "cannot set up the %s compressor: %s", sqk_comp_name(o->comp.id),
			       sqk_strerror(err));
	return 0;
}

void mk_ctx_free(struct mk_ctx *c)
{
	mk_tree_free(c);
	mk_ids_destroy(c->ids);
	mk_xattrs_destroy(c->xattrs);
	sqk_compressor_destroy(c->comp);
	sqk_io_destroy(c->out);
	sqk_integ_writer_destroy(c->integ);
	free(c->frags);
	pthread_mutex_destroy(&c->errmu);
}

static int run(struct mk_ctx *c, struct outfile *of, struct sqk_super *sb)
{
	remember_skip(c, c->opt->image, -1);
	int err = out_open(c, of);
	if (!err) {
		remember_skip(c, NULL, of->fd);
		err = sqk_io_fd_create(of->fd, 0, false, &c->out);
		if (err)
			err = mk_fail(c, err, "out of memory");
	}
	if (!err)
		err = mk_build(c, sb);
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
	struct outfile of = { .fd = -1 };
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
		out_abort(&of);
		if (sig)
			fprintf(stderr, "sqk mkimage: interrupted by %s; no image written\n",
				strsignal(sig));
		else
			fprintf(stderr, "sqk mkimage: %s; no image written\n", c.errmsg);
		mk_ctx_free(&c);
		mk_options_free(&o);
		return sig ? 128 + sig : 1;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	count_kinds(&c);
	if (!o.quiet)
		summary(&c, &sb, (double)(t1.tv_sec - t0.tv_sec) +
				     (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
	mk_ctx_free(&c);
	mk_options_free(&o);
	return 0;
}
