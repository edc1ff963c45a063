/* SPDX-License-Identifier: BSD-2-Clause */
/* The builder's public entry (sqk/build.h): the defaults, the checks of the callers' structs
 * (their sizes, then the values), the source opened from its description, the other inputs
 * (mk_build_inputs), only then the output asked for, the build (build.c), and the result. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sqk/error.h"
#include "common/verity.h"
#include "mk.h"
#include "attrs.h"
#include "order.h"
#include "reuse.h"
#include "append.h"
#include "source.h"

void sqk_build_opts_init(struct sqk_build_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->size = sizeof(*o);
	o->block_size = 131072;
	o->comp.id = SQK_COMP_ZSTD;
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	o->threads = n > 0 ? (int)(n > 1024 ? 1024 : n) : 1;
	o->force_uid = -1;
	o->force_gid = -1;
	o->set_mtime = -1;
	o->clamp_time = -1;
	o->default_mode = 0755;
	o->mem = 4u << 20;
	o->sign_time = -1;
	o->max_depth = -1;
	o->root_mode = -1;
	o->root_uid = -1;
	o->root_gid = -1;
	o->root_time = -1;
	o->mkfs_time = -1;
}

void sqk_build_source_init(struct sqk_build_source *s, enum sqk_build_source_kind kind)
{
	memset(s, 0, sizeof(*s));
	s->size = sizeof(*s);
	s->kind = kind;
}

void sqk_build_result_init(struct sqk_build_result *r)
{
	memset(r, 0, sizeof(*r));
	r->size = sizeof(*r);
}

static bool pow2_in(uint32_t v, uint32_t lo, uint32_t hi)
{
	return v >= lo && v <= hi && !(v & (v - 1));
}

/* Puts the message in r and returns err. */
static int refuse(struct sqk_build_result *r, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int refuse(struct sqk_build_result *r, int err, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(r->msg, sizeof(r->msg), fmt, ap);
	va_end(ap);
	return err;
}

/* SQK_EABI when o or s (either may be NULL) has a size this library does not know. */
static int check_sizes(const struct sqk_build_opts *o, const struct sqk_build_source *s,
		       struct sqk_build_result *r)
{
	if (!o || o->size != sizeof(*o))
		return refuse(r, SQK_EABI, "struct sqk_build_opts of %zu bytes: this library knows "
			      "%zu", o ? o->size : 0, sizeof(*o));
	if (!s || s->size != sizeof(*s))
		return refuse(r, SQK_EABI, "struct sqk_build_source of %zu bytes: this library "
			      "knows %zu", s ? s->size : 0, sizeof(*s));
	return 0;
}

/* The values sqk_build_opts_init documents, checked before anything is set up. */
static int check_opts(const struct sqk_build_opts *o, const struct sqk_build_source *s,
		      struct sqk_build_result *r)
{
	if (!pow2_in(o->block_size, 4096, 1u << 20))
		return refuse(r, SQK_EINVAL, "block size %u: need a power of two, 4K..1M",
			      o->block_size);
	if (o->checksum_chunk && !pow2_in(o->checksum_chunk, 4096, 1u << 20))
		return refuse(r, SQK_EINVAL, "checksum chunk %u: need a power of two, 4K..1M",
			      o->checksum_chunk);
	if (o->threads < 1 || o->threads > 1024)
		return refuse(r, SQK_EINVAL, "%d threads: need 1..1024", o->threads);
	if (o->digest_tree && o->no_checksums)
		return refuse(r, SQK_EINVAL,
			      "a digest tree needs integrity data (not no_checksums)");
	if (o->nsign_keys && o->no_checksums)
		return refuse(r, SQK_EINVAL, "signing needs integrity data (not no_checksums)");
	if (o->nsign_keys > SQK_SIG_MAX_ENTRIES || (o->nsign_keys && !o->sign_keys))
		return refuse(r, SQK_EINVAL, "%zu signing keys: need at most %u",
			      o->nsign_keys, SQK_SIG_MAX_ENTRIES);
	if (o->sign_comment && sig_comment_check(o->sign_comment, strlen(o->sign_comment)))
		return refuse(r, SQK_EINVAL, "the signed comment: need UTF-8 without control "
			      "characters, at most %u bytes", SQK_SIG_COMMENT_MAX);
	if (s->kind == SQK_BUILD_DIRS ? s->nsources < 1 :
	    s->kind == SQK_BUILD_CUSTOM ? !s->custom :
	    s->kind == SQK_BUILD_NONE ? !s->npseudo && !s->pack_file : s->kind != SQK_BUILD_TAR)
		return refuse(r, SQK_EINVAL, "no source to build from");
	if (o->verity > SQK_BUILD_VERITY_APPEND || (o->verity_salt && o->verity_salt_len > 256))
		return refuse(r, SQK_EINVAL, "dm-verity: unknown mode %d or a salt over 256 bytes",
			      (int)o->verity);
	if (o->verity == SQK_BUILD_VERITY_SIDECAR && !o->open_verity)
		return refuse(r, SQK_EINVAL, "a dm-verity sidecar needs open_verity");
	if (o->root_becomes && !o->append)
		return refuse(r, SQK_EINVAL, "-root-becomes needs an image to append to");
	if (o->append && (o->order_file || o->sort_file || o->reuse))
		return refuse(r, SQK_EINVAL, "%s cannot be combined with appending to '%s' "
			      "(-noappend replaces it)", o->reuse ? "--reuse" :
			      o->order_file ? "--order" : "-sort", o->append);
	if (s->nactions && s->kind != SQK_BUILD_DIRS)
		return refuse(r, SQK_EINVAL, "actions (-action, -action-file) are not supported "
			      "with %s", s->kind == SQK_BUILD_TAR ? "--tar" : "a custom source");
	if (s->kind != SQK_BUILD_DIRS && (o->order_file || o->sort_file))
		return refuse(r, SQK_EINVAL, "%s needs source directories",
			      o->order_file ? "--order" : "-sort");
	return 0;
}

/* A regular file the walk must not take in (the existing image, the temporary it goes to). */
static void remember_skip(struct mk_ctx *c, const char *path, int fd)
{
	struct stat st;
	if ((path ? stat(path, &st) : fstat(fd, &st)) == 0 && S_ISREG(st.st_mode) && c->nskip < 2) {
		c->skip_dev[c->nskip] = st.st_dev;
		c->skip_ino[c->nskip++] = st.st_ino;
	}
}

static int open_source(struct mk_ctx *c, struct mk_source **src)
{
	switch (c->src->kind) {
	case SQK_BUILD_DIRS: return mk_source_dir_create(c, src);
	case SQK_BUILD_NONE: return mk_source_none_create(c, src);
#if SQK_HAVE_TAR
	case SQK_BUILD_TAR: return mk_source_tar_create(c, c->src->tar_path, src);
#else
	case SQK_BUILD_TAR:
		*src = NULL;
		return mk_fail(c, SQK_ENOTBUILT, "tar input is not in this build of squashkit "
			       "(built with HAVE_TAR=0; it needs libarchive)");
#endif
	default: *src = NULL; return 0;
	}
}

/* The output: the caller's, or the one open_output creates now that the inputs are checked. */
static int open_output(struct mk_ctx *c, struct sqk_io *out_io)
{
	char msg[sizeof(c->errmsg)];
	int skip_fd = -1;

	if (out_io) {
		c->out = out_io;
		return 0;
	}
	if (!c->opt->open_output)
		return mk_fail(c, SQK_EINVAL, "no output: neither out_io nor open_output");
	msg[0] = 0;
	int err = c->opt->open_output(c->opt->open_arg, &c->out, &skip_fd, msg, sizeof(msg));
	if (err)
		return mk_fail(c, err, "%s", *msg ? msg : sqk_strerror(err));
	if (skip_fd >= 0)
		remember_skip(c, NULL, skip_fd);
	return 0;
}

/* Opens the source and the inputs, then the output, and builds. */
static int run(struct mk_ctx *c, struct sqk_io *out_io, struct sqk_super *sb)
{
	struct mk_source *own = NULL;

	remember_skip(c, c->opt->image, -1);
	int err = open_source(c, &own);
	if (!err)
		err = mk_build_inputs(c);
	if (!err && mk_cancelled(c))
		err = mk_fail(c, SQK_EINTR, "interrupted");
	if (!err)
		err = open_output(c, out_io);
	if (!err)
		err = mk_build(c, own ? own : c->src->custom, sb);
	if (!err && own)
		mk_source_dir_warn_excludes(own, c);
	mk_source_destroy(own);
	if (!err && mk_cancelled(c))
		err = mk_fail(c, SQK_EINTR, "interrupted");
	return err;
}

static void fill_result(const struct mk_ctx *c, const struct sqk_super *sb,
			struct sqk_build_result *r)
{
	const struct mk_stats *s = &c->st;
	r->super = *sb;
	r->image_bytes = c->pos;
	r->have_root = c->have_root;
	memcpy(r->root_hash, c->root_hash, sizeof(r->root_hash));
	r->counts = (struct sqk_build_counts){
		.files = s->files, .dirs = s->dirs, .symlinks = s->symlinks, .devices = s->devices,
		.ipc = s->ipc, .hardlinks = s->hardlinks, .file_bytes = s->file_bytes,
		.dup_files = s->dup_files, .dup_bytes = s->dup_bytes, .bytes_in = s->bytes_in,
		.data_blocks = s->data_blocks, .raw_blocks = s->raw_blocks,
		.frag_blocks = s->frag_blocks, .sparse_blocks = atomic_load(&s->sparse_blocks),
		.xattr_sets = c->xattrs ? mk_xattrs_count(c->xattrs) : 0,
		.mtimes_clamped = c->mtimes_clamped,
	};
	if (c->reuse) {
		r->reused_blocks = c->reuse->blocks;
		r->reused_bytes = c->reuse->bytes;
		r->reused_frag_blocks = c->reuse->frag_blocks;
	}
	if (c->append) {
		r->appended = true;
		mk_append_counts(c->append, &r->append_kept, &r->append_added);
	}
	r->ordered = c->order != NULL;
	r->order_files = mk_order_count(c, &r->order_bytes);
	r->hint_ranges = c->hint_ranges;
	if (c->have_verity) {
		struct verity_sb vsb;

		verity_builder_sb(c->verity, &vsb);
		r->have_verity = true;
		memcpy(r->verity_root, c->verity_root, sizeof(r->verity_root));
		r->verity_data_end = c->verity_end;
		r->verity_len = c->verity_len;
		r->verity_salt_len = vsb.salt_size;
		memcpy(r->verity_salt, vsb.salt, vsb.salt_size);
		memcpy(r->verity_uuid, vsb.uuid, sizeof(r->verity_uuid));
	}
}

int sqk_build(const struct sqk_build_opts *opts, const struct sqk_build_source *src,
	      struct sqk_io *out_io, struct sqk_build_result *result)
{
	struct mk_ctx c;
	struct sqk_super sb = { 0 };

	if (!result || result->size != sizeof(*result))
		return SQK_EABI;
	sqk_build_result_init(result);
	int err = check_sizes(opts, src, result);
	if (!err)
		err = check_opts(opts, src, result);
	if (err)
		return result->err = err;
	err = mk_ctx_init(&c, opts, src);
	if (!err)
		err = run(&c, out_io, &sb);
	if (err)
		snprintf(result->msg, sizeof(result->msg), "%s",
			 *c.errmsg ? c.errmsg : sqk_strerror(err));
	else
		fill_result(&c, &sb, result);
	mk_ctx_free(&c);
	return result->err = err;
}
