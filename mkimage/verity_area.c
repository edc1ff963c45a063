/* SPDX-License-Identifier: BSD-2-Clause */
/* The builder's dm-verity stage (--verity): the salt fixed before the first byte, every byte of
 * [0, E) hashed as it is written (mk_write, and the superblock and integrity data build.c writes
 * itself), and at E the tree completed and its area written after the image or into the
 * caller's sidecar output. Nothing is read back. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "sqk/error.h"
#include "common/endian.h"
#include "common/verity.h"
#include "mk.h"

/* The options that shape the image's bytes, in a fixed little-endian layout (not the thread
 * count or the memory budgets: the image is the same whatever they are). */
static size_t salt_input(const struct sqk_build_opts *o, uint8_t *b)
{
	static const char domain[] = "squashkit dm-verity salt 1";
	const struct sqk_comp_config *k = &o->comp;
	size_t n = sizeof(domain);

	memcpy(b, domain, sizeof(domain));
	put_le32(b + n, o->block_size);
	put_le32(b + n + 4, k->id);
	put_le32(b + n + 8, (uint32_t)k->level);
	put_le32(b + n + 12, k->xz_bcj);
	put_le32(b + n + 16, k->xz_dict);
	put_le32(b + n + 20, (uint32_t)k->gzip_window);
	put_le32(b + n + 24, k->gzip_strategies);
	put_le32(b + n + 28, (uint32_t)k->lzo_algorithm);
	b[n + 32] = (uint8_t)(k->lz4_hc | o->no_fragments << 1 | o->no_tailends << 2 |
			      o->no_dedup << 3 | o->no_xattrs << 4 | o->no_exports << 5 |
			      o->no_checksums << 6 | o->digest_tree << 7);
	n += 33;
	put_le32(b + n, o->checksum_chunk);
	put_le64(b + n + 4, (uint64_t)o->force_uid);
	put_le64(b + n + 12, (uint64_t)o->force_gid);
	put_le64(b + n + 20, (uint64_t)o->set_mtime);
	put_le64(b + n + 28, (uint64_t)o->clamp_time);
	put_le32(b + n + 36, o->default_mode);
	put_le32(b + n + 40, o->default_uid);
	put_le32(b + n + 44, o->default_gid);
	put_le64(b + n + 48, (uint64_t)o->default_mtime);
	return n + 56;
}

/* Fills the caller's salt. */
void mk_verity_salt(const struct sqk_build_opts *o, uint8_t salt[SQK_INTEG_DIGEST_SIZE])
{
	uint8_t in[160];

	hash_sha256(in, salt_input(o, in), salt);
}

int mk_verity_start(struct mk_ctx *c)
{
	const struct sqk_build_opts *o = c->opt;
	uint8_t derived[SQK_INTEG_DIGEST_SIZE];
	int err;

	if (o->verity == SQK_BUILD_VERITY_NONE || c->verity)
		return 0;
	if (!o->verity_salt)
		mk_verity_salt(o, derived);
	err = verity_builder_create(o->verity_salt ? o->verity_salt : derived,
				    o->verity_salt ? o->verity_salt_len : sizeof(derived),
				    &c->verity);
	if (err)
		return mk_fail(c, err, "cannot set up the dm-verity tree: %s", sqk_strerror(err));
	return 0;
}

int mk_verity_feed(struct mk_ctx *c, uint64_t off, const void *buf, size_t len)
{
	int err = c->verity ? verity_builder_update(c->verity, off, buf, len) : 0;

	if (err)
		return mk_fail(c, err, "cannot hash image '%s' at offset %llu for dm-verity: %s",
			       c->opt->image, (unsigned long long)off, sqk_strerror(err));
	return 0;
}

/* The area into the caller's sidecar output, from its start, synced. */
static int write_sidecar(struct mk_ctx *c)
{
	const struct sqk_build_opts *o = c->opt;
	struct sqk_io *io = NULL;
	char msg[sizeof(c->errmsg)] = "";
	int err = o->open_verity ? o->open_verity(o->open_arg, &io, msg, sizeof(msg)) : SQK_EINVAL;

	if (err)
		return mk_fail(c, err, "%s", *msg ? msg : sqk_strerror(err));
	err = verity_builder_write(c->verity, io, 0);
	if (!err)
		err = sqk_io_sync(io);
	if (err)
		return mk_fail(c, err, "cannot write the dm-verity tree of '%s': %s", o->image,
			       err == SQK_EIO ? strerror(errno) : sqk_strerror(err));
	return 0;
}

int mk_verity_finish(struct mk_ctx *c)
{
	int err;

	if (!c->verity)
		return 0;
	err = verity_builder_finish(c->verity, c->pos, c->verity_root);
	if (err)
		return mk_fail(c, err, "cannot complete the dm-verity tree of '%s': %s",
			       c->opt->image, sqk_strerror(err));
	c->verity_end = c->pos;
	c->verity_len = verity_area_len(c->pos / VERITY_BLOCK);
	if (c->opt->verity != SQK_BUILD_VERITY_APPEND) {
		err = write_sidecar(c);
	} else if ((err = verity_builder_write(c->verity, c->out, c->pos))) {
		mk_fail(c, err, "cannot write image '%s' at offset %llu: %s", c->opt->image,
			(unsigned long long)c->pos,
			err == SQK_EIO ? strerror(errno) : sqk_strerror(err));
	} else {
		c->pos += c->verity_len;
	}
	c->have_verity = !err;
	return err;
}
