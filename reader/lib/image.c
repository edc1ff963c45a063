/* SPDX-License-Identifier: BSD-2-Clause */
/* Opening an image: the superblock validated as the kernel does it, the compressor options block,
 * the integrity data (verified_reads.c: reads are verified unless opts.no_verify), the table
 * layout (tables.c), then the shared cache, the compressor pool and the readahead workers. Also
 * the small accessors of the handle. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "internal.h"
#include "open_io.h"
#include "common/abi.h"
#include "common/meta.h"
#include "common/format.h"
#include "common/verity.h"

#define DEFAULT_CACHE (64u << 20)
#define DEFAULT_READAHEAD 16u

/* The superblock as the kernel judges it; each refusal logged with the field and its value. */
static int check_super(struct sqk_image *img)
{
	const struct sqk_super *sb = &img->sb;

	if (sb->magic != SQK_MAGIC || sb->version_major != 4 || sb->version_minor != 0) {
		img_logf(img,
			 "bad superblock: magic 0x%08x, version %u.%u (the integrity data says "
			 "it was a SquashFS 4.0 image: it is damaged)",
			 sb->magic, sb->version_major, sb->version_minor);
		return SQK_ECORRUPT;
	}
	if (sb->block_size < SQK_MIN_BLOCK || sb->block_size > SQK_MAX_BLOCK ||
	    sb->block_log > 20 || sb->block_size != 1u << sb->block_log) {
		img_logf(img,
			 "bad superblock: block size %u with block_log %u (a power of two from "
			 "4 KiB to 1 MiB, 2^block_log)",
			 sb->block_size, sb->block_log);
		return SQK_ECORRUPT;
	}
	if (sb->flags & SQK_FLAG_CHECK) {
		img_logf(img, "bad superblock: flag 0x0004 (check data, SquashFS 1.x-3.x) set in a "
			 "4.0 image");
		return SQK_EUNSUPPORTED;
	}
	if (sb->bytes_used > img->file_size || sb->bytes_used < SQK_SUPER_SIZE) {
		img_logf(img, "bad superblock: bytes_used %llu, the file has %llu bytes",
			 (unsigned long long)sb->bytes_used, (unsigned long long)img->file_size);
		return SQK_ECORRUPT;
	}
	if ((sb->root_inode & 0xFFFF) > SQK_META_SIZE || sb->inode_count == 0) {
		img_logf(img, "bad superblock: root inode reference 0x%llx, %u inodes",
			 (unsigned long long)sb->root_inode, sb->inode_count);
		return SQK_ECORRUPT;
	}
	return 0;
}

/* Before anything else is read (the integrity trailer included): an empty file, a file that is
 * not SquashFS, another SquashFS version or a truncated image is refused with a line of its own
 * naming the image and what it is (super_diagnose); the bytes are not verified, only
 * judged. offset is the caller's, for the message. */
static int probe_super(struct sqk_image *img, uint64_t offset)
{
	uint8_t head[SQK_PROBE_SIZE] = { 0 }, tail[SQK_INTEG_TRAILER_SIZE];
	size_t n, t = sizeof(tail);
	char why[512];
	uint64_t size;
	int rc = sqk_io_get_size(img->io, &size);

	if (rc)
		return rc;
	size = img->owned_io ? size : size > img->base ? size - img->base : 0;
	n = size < sizeof(head) ? (size_t)size : sizeof(head);
	if (n && (rc = sqk_io_read_at(img->io, img->base, head, n)) != 0)
		return rc;
	rc = super_diagnose(img->name, offset, head, n, NULL, 0, size, why, sizeof(why));
	/* not SquashFS 4.0 at its start: the end may be the integrity data of an image */
	if ((rc == SQK_ENOTSQFS || rc == SQK_EVERSION) && img->at_zero && size >= t &&
	    sqk_io_read_at(img->io, img->base + size - t, tail, t) == 0)
		rc = super_diagnose(img->name, offset, head, n, tail, t, size, why, sizeof(why));
	if (rc && img->log)
		img->log(img->log_ctx, why);
	return rc;
}

/* Reads the options block (if flagged) and fills img->comp. */
static int read_options(struct sqk_image *img)
{
	uint8_t buf[2 + SQK_META_SIZE], out[SQK_META_SIZE];
	size_t avail, used;
	ssize_t n = 0;

	if (!(img->sb.flags & SQK_FLAG_COMP_OPTS))
		return comp_options_read(img->sb.compressor, img->sb.block_size, NULL, 0,
					     &img->comp);
	avail = img->sb.bytes_used - SQK_SUPER_SIZE;
	if (avail > sizeof(buf))
		avail = sizeof(buf);
	n = img_read(img, SQK_SUPER_SIZE, buf, avail);
	if (n == 0)
		n = meta_decode_block(NULL, buf, avail, out, 0, &used);
	if (n == SQK_EINVAL)
		n = SQK_EUNSUPPORTED; /* a compressed options block: nobody writes one */
	if (n < 0)
		return (int)n;
	return comp_options_read(img->sb.compressor, img->sb.block_size, out, (size_t)n,
				     &img->comp);
}

static int read_super(struct sqk_image *img, const struct sqk_open_opts *o)
{
	uint8_t raw[SQK_SUPER_SIZE];
	char why[160];
	int rc = sqk_io_get_size(img->io, &img->file_size);

	if (rc)
		return rc;
	if (!img->owned_io) {
		if (img->file_size < img->base)
			return SQK_ECORRUPT;
		img->file_size -= img->base;
	}
	rc = verify_locate(img);
	if (rc == 0)
		rc = verify_init(img);
	if (rc == 0)
		rc = verify_pin(img, o->root_hash);
	if (rc == 0 && img->require_integ)
		rc = verify_require(img);
	if (rc == 0)
		rc = trust_check(img, o);
	if (rc)
		return rc;
	rc = img_read(img, 0, raw, sizeof(raw));
	if (rc)
		return rc == SQK_EBOUNDS ? SQK_ECORRUPT : rc;
	super_decode(raw, &img->sb);
	rc = check_super(img); /* logs why */
	if (rc)
		return rc;
	rc = comp_supported(img->sb.compressor, why, sizeof(why));
	if (rc) {
		img_logf(img, "%s", why);
		return rc;
	}
	rc = verify_covers(img);
	if (rc == 0)
		rc = verify_fast(img, o->root_hash || img->trusted);
	if (rc)
		return rc;
	rc = read_options(img);
	if (rc)
		img_logf(img, "bad compressor options: %s", sqk_strerror(rc));
	return rc;
}

static int setup(struct sqk_image *img, const struct sqk_open_opts *o)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	struct sqk_open_opts dflt;
	int rc;

	if (!o) {
		sqk_open_opts_init(&dflt);
		o = &dflt;
	}

	img->readahead = o && o->readahead_blocks ? o->readahead_blocks : DEFAULT_READAHEAD;
	img->nthreads = o && o->threads ? o->threads : (cpus > 0 ? (unsigned)cpus : 1);
	rc = cache_create(o && o->cache_bytes ? o->cache_bytes : DEFAULT_CACHE, &img->cache);
	if (rc == 0)
		rc = findex_cache_create(&img->findex);
	if (rc == 0)
		rc = probe_super(img, o ? o->offset : 0);
	if (rc == 0)
		rc = read_super(img, o);
	if (rc == 0)
		cache_set_block_size(img->cache, img->sb.block_size);
	if (rc == 0)
		rc = load_tables(img);
	/* Readahead workers start on first use, not here: a process that forks after opening
	 * (a daemon detaching) would otherwise keep an image whose workers are gone. */
	return rc;
}

static int open_common(struct sqk_io *io, struct sqk_io *owned, const struct sqk_open_opts *o,
		       const char *path, struct sqk_image **out)
{
	struct sqk_image *img = calloc(1, sizeof(*img));
	const char *name = o && o->name ? o->name : path;
	int rc;

	*out = NULL;
	if (!img || (o && o->http && o->http->root_hash)) { /* the pin is o->root_hash */
		free(img);
		sqk_io_destroy(owned);
		return img ? SQK_EINVAL : SQK_ENOMEM;
	}
	pthread_mutex_init(&img->pool.mu, NULL);
	pthread_mutex_init(&img->workers_mu, NULL);
	seqwalk_init(&img->walk);
	pthread_mutex_init(&img->rabufs.mu, NULL);
	img->io = io;
	img->owned_io = owned;
	img->remote_verified = sqk_io_verified(io);
	img->base = owned ? 0 : (o ? o->offset : 0);
	img->at_zero = !o || o->offset == 0;
	img->prefetch_clip = UINT64_MAX; /* another io's prefetch: all it is given */
	/* verified unless asked not to; trusted keys verify whatever no_verify says (a backend
	 * that checks every chunk itself, remote_verified, needs no second check) */
	img->verify_req = !o || !o->no_verify ||
			  ((o->trust || o->trust_dir) && !img->remote_verified);
	img->require_integ = o && (o->require_integrity || o->trust || o->trust_dir);
	pthread_mutex_init(&img->bad_mu, NULL);
	pthread_mutex_init(&img->vmu, NULL);
	pthread_cond_init(&img->vcv, NULL);
	if (o) {
		img->log = o->log;
		img->log_ctx = o->log_ctx;
	}
	img->name = strdup(name ? name : "image");
	rc = img->name ? setup(img, o) : SQK_ENOMEM;
	if (rc) {
		sqk_image_close(img);
		return rc;
	}
	/* from now on: a mismatch while opening is logged, as the caller has no image to ask */
	img->quiet_mismatch = o && o->quiet_mismatch;
	*out = img;
	return 0;
}

#define OPEN_OPTS_V1 SQK_ABI_SIZE_V1(struct sqk_open_opts, no_prefetch)
#define STATS_V1 SQK_ABI_SIZE_V1(struct sqk_stats, chunks_sha256)

/* Borrows o; fills the caller's *o with the defaults. */
void sqk_open_opts_init(struct sqk_open_opts *o)
{
	abi_copy_in(o, sizeof(*o), NULL, OPEN_OPTS_V1);
}

/* Borrows opts; fills the caller's *o. */
int img_take_opts(const struct sqk_open_opts *opts, struct sqk_open_opts *o)
{
	return abi_copy_in(o, sizeof(*o), opts, OPEN_OPTS_V1);
}

/* Borrows io (must outlive the image); caller owns *out. */
int sqk_image_open_io(struct sqk_io *io, const struct sqk_open_opts *opts,
		      struct sqk_image **out)
{
	struct sqk_open_opts o;

	if (!io || !out)
		return SQK_EINVAL;
	*out = NULL;
	if (img_take_opts(opts, &o))
		return SQK_EABI;
	return open_common(io, NULL, &o, NULL, out);
}

/* Borrows fd (must stay open until close); caller owns *out. */
int sqk_image_open_fd(int fd, const struct sqk_open_opts *opts, struct sqk_image **out)
{
	struct sqk_open_opts o;
	struct sqk_io *io;
	int rc;

	if (!out)
		return SQK_EINVAL;
	*out = NULL;
	if (img_take_opts(opts, &o))
		return SQK_EABI;
	rc = sqk_io_fd_create(fd, o.offset, false, &io);
	if (rc)
		return rc;
	return open_common(io, io, &o, NULL, out);
}

/* Borrows img. */
void sqk_image_prefetch(struct sqk_image *img)
{
	if (img && img->nhint)
		atomic_store(&img->hint_fetched, true);
	for (size_t i = 0; img && i < img->nhint; i++)
		sqk_io_prefetch(img->io, img->base + img->hint[i].start, img->hint[i].length,
				false);
	if (img)
		sqk_io_http_background(img->io); /* after the hint, when asked for at open */
}

/* Loads the image's prefetch hint (the working set it was laid out for: sqk mkimage --order /
 * -sort; a walk through it is fetched ahead to its end only) and, when fetch, starts fetching
 * its ranges (sqk_image_prefetch). */
static void load_hint(struct sqk_image *img, bool fetch)
{
	struct sqk_hint_range *fit;
	struct sqk_hint_range *r = malloc(SQK_HINT_MAX_RANGES * sizeof(*r));
	size_t n = 0;

	if (!r || sqk_image_hint(img, r, SQK_HINT_MAX_RANGES, &n) || n == 0) {
		free(r);
		if (fetch)
			sqk_io_http_background(img->io); /* no hint: nothing to wait for */
		return;
	}
	fit = realloc(r, n * sizeof(*r)); /* shrink to fit, not mem_grow */
	img->hint = fit ? fit : r;
	img->nhint = n;
	if (fetch)
		sqk_image_prefetch(img);
}

/* Takes io over (destroyed on failure too); borrows o; caller owns *out. */
int img_open_remote(struct sqk_io *io, const struct sqk_open_opts *o, const char *name,
		    uint64_t clip, struct sqk_image **out)
{
	int rc = open_common(io, io, o, name, out);

	/* the backend found no trailer: the file must end at the image's padded end */
	if (!rc && !(*out)->remote_verified && (rc = verify_no_trailer(*out)) != 0) {
		sqk_image_close(*out);
		*out = NULL;
	}
	if (!rc) {
		(*out)->lazy_first = true;
		(*out)->prefetch_clip = clip;
		load_hint(*out, !o->no_prefetch);
	}
	return rc;
}

/* Borrows img. */
void sqk_image_cancel(struct sqk_image *img)
{
	if (img)
		sqk_io_cancel(img->io);
}

/* Borrows img; no other call on img may run meanwhile. */
void sqk_image_quiesce(struct sqk_image *img)
{
	if (!img)
		return;
	pthread_mutex_lock(&img->workers_mu);
	workers_stop(img);
	img->workers_tried = false;
	pthread_mutex_unlock(&img->workers_mu);
	sqk_io_quiesce(img->io);
}

/* Borrows img; fills the caller's *out. */
int sqk_image_http_stats(struct sqk_image *img, struct sqk_http_stats *out)
{
	return sqk_io_stats(img->io, out) ? SQK_ENOENT : 0;
}

/* Borrowed; lives as long as img. */
struct sqk_io *sqk_image_io(struct sqk_image *img)
{
	return img->io;
}

/* A path that names no image file (a directory, an unsupported URL): err, logged as fmt with
 * the image's name. */
static int not_a_file(const char *path, const struct sqk_open_opts *o, int err, const char *fmt)
{
	char msg[1024];

	if (o && o->log) {
		snprintf(msg, sizeof(msg), fmt, o->name ? o->name : path);
		o->log(o->log_ctx, msg);
	}
	return err;
}

/* Borrows path; caller owns *out. */
int sqk_image_open(const char *path, const struct sqk_open_opts *user, struct sqk_image **out)
{
	struct sqk_open_opts o, *opts = &o;
	struct stat st;
	struct sqk_io *io;
	int fd, rc;

	if (!path || !out)
		return SQK_EINVAL;
	*out = NULL;
	if (img_take_opts(user, &o))
		return SQK_EABI;
	if (sqk_is_url(path))
		return sqk_image_open_url(path, opts, out);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK); /* a FIFO: judged, not waited on */
	if (fd < 0 && errno == ENOENT && sqk_looks_like_url(path))
		return not_a_file(path, opts, SQK_ESCHEME,
				  "%s: unsupported URL scheme; http, https "
				  "and s3 are");
	if (fd < 0)
		return sqk_from_errno(errno);
	if (fstat(fd, &st) == 0 && (S_ISDIR(st.st_mode) || S_ISFIFO(st.st_mode))) {
		close(fd);
		return S_ISDIR(st.st_mode)
			   ? not_a_file(path, opts, SQK_EISDIR, "'%s' is a directory")
			   : not_a_file(path, opts, SQK_ENOTSQFS,
					"'%s' is a FIFO: not a SquashFS image");
	}
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	rc = sqk_io_fd_create(fd, o.offset, true, &io);
	if (rc) {
		close(fd);
		return rc;
	}
	return open_common(io, io, opts, path, out);
}

/* Frees everything img owns; NULL-safe. */
void sqk_image_close(struct sqk_image *img)
{
	if (!img)
		return;
	workers_stop(img);
	pthread_mutex_destroy(&img->workers_mu);
	seqwalk_free(&img->walk);
	rabufs_free(&img->rabufs);
	findex_cache_destroy(img->findex);
	cache_destroy(img->cache);
	pool_free(&img->pool);
	pthread_mutex_destroy(&img->pool.mu);
	sqk_io_destroy(img->owned_io);
	free(img->ids);
	free(img->frags);
	free(img->xattr_index);
	verify_free(img);
	sig_trust_free(&img->trust_set);
	pthread_mutex_destroy(&img->bad_mu);
	pthread_mutex_destroy(&img->vmu);
	pthread_cond_destroy(&img->vcv);
	free(img->hint);
	fetched_free(img);
	free(img->name);
	free(img);
}

/* Borrowed; lives as long as img. */
const struct sqk_super *sqk_image_super(const struct sqk_image *img)
{
	return &img->sb;
}

/* Borrowed; lives as long as img. */
const struct sqk_comp_config *sqk_image_comp(const struct sqk_image *img)
{
	return &img->comp;
}

/* Copies the counters into the caller's *out (its size set). */
int sqk_image_stats(struct sqk_image *img, struct sqk_stats *out)
{
	struct sqk_stats s = { .size = sizeof(s) };

	s.data_blocks_decompressed = atomic_load(&img->st.data);
	s.fragment_blocks_decompressed = atomic_load(&img->st.frag);
	s.metadata_blocks_decompressed = atomic_load(&img->st.meta);
	s.cache_hits = atomic_load(&img->st.hits);
	s.cache_misses = atomic_load(&img->st.misses);
	s.bytes_read = atomic_load(&img->st.bytes);
	s.readahead_batches = atomic_load(&img->st.batches);
	s.chunks_hashed = atomic_load(&img->st.hashed);
	s.chunks_xxh3 = atomic_load(&img->st.xxh3);
	s.chunks_sha256 = atomic_load(&img->st.sha256);
	return abi_copy_out(out, &s, sizeof(s), STATS_V1);
}

/* Static storage. */
const char *sqk_version(void)
{
	return SQK_VERSION;
}
