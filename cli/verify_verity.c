/* SPDX-License-Identifier: BSD-2-Clause */
/* `sqk verify`'s dm-verity check (verify_verity.h): find the tree (the sidecar first, else an
 * area appended to the image), check it against the image's bytes and IMAGE.roothash, report. */
#include "verify_verity.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/verity_files.h"
#include "common/bytes.h"
#include "common/integrity.h"
#include "common/json.h"
#include "sqk/error.h"

/* One finding, in the checker's form: kind "integrity", region "dm-verity". */
static void finding(struct vv *v, void (*report)(void *, const struct sqk_check_report *),
		    void *ctx, uint64_t start, uint64_t end, const char *fmt, ...)
	__attribute__((format(printf, 6, 7)));

static void finding(struct vv *v, void (*report)(void *, const struct sqk_check_report *),
		    void *ctx, uint64_t start, uint64_t end, const char *fmt, ...)
{
	char msg[768];
	struct sqk_check_report r = { "integrity", start, end, "dm-verity", msg };
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	v->findings++;
	report(ctx, &r);
}

/* The findings of a tree that was checked. */
static void report_check(struct vv *v, const uint8_t *want,
			 void (*report)(void *, const struct sqk_check_report *), void *ctx)
{
	const struct verity_check *r = &v->r;
	const char *file = v->tree ? v->tree : "the image";
	char got[2 * VERITY_DIGEST + 1], pin[2 * VERITY_DIGEST + 1];

	if (r->bad_data)
		finding(v, report, ctx, r->first_bad_data * VERITY_BLOCK,
			(r->first_bad_data + 1) * VERITY_BLOCK,
			"data block %llu does not match its hash in the tree (%llu of %llu data "
			"blocks do not)", (unsigned long long)r->first_bad_data,
			(unsigned long long)r->bad_data, (unsigned long long)r->sb.data_blocks);
	if (r->bad_hash)
		finding(v, report, ctx, v->tree ? 0 : r->first_bad_hash,
			v->tree ? 0 : r->first_bad_hash + VERITY_BLOCK,
			"the hash block at offset %llu of %s does not match the tree (%llu blocks "
			"do not)", (unsigned long long)r->first_bad_hash, file,
			(unsigned long long)r->bad_hash);
	if (want && !r->root_ok) {
		bytes_hex(r->root, VERITY_DIGEST, got);
		bytes_hex(want, VERITY_DIGEST, pin);
		got[2 * VERITY_DIGEST] = pin[2 * VERITY_DIGEST] = 0;
		finding(v, report, ctx, 0, 0, "the tree's root hash %s differs from %s in '%s'",
			got, pin, v->root_file);
	}
}

/* Where the tree is: the sidecar (*hash: its io, owned by the caller), else an appended area
 * (*hash = io). v->where stays NULL when there is none. */
static int find_tree(struct vv *v, const char *image, struct sqk_io *io, uint64_t size,
		     struct sqk_io **hash, char *msg, size_t cap)
{
	struct integ_where w;
	char why[256];
	int fd, err;

	v->tree = verity_sidecar_path(image, VERITY_SUFFIX_TREE);
	if (!v->tree)
		return SQK_ENOMEM;
	fd = open(v->tree, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		err = sqk_io_fd_create(fd, 0, true, hash);
		if (err)
			close(fd);
		v->where = err ? NULL : "sidecar";
		return err;
	}
	if (errno != ENOENT) {
		snprintf(msg, cap, "cannot open '%s': %s", v->tree, strerror(errno));
		return sqk_from_errno(errno);
	}
	free(v->tree);
	v->tree = NULL;
	err = integ_locate(io, size, &w, why, sizeof(why)); /* damaged: the checker said so */
	if (err == SQK_ECORRUPT || (!err && w.verity_end == w.verity_at))
		return 0;
	if (!err) {
		v->at = w.verity_at;
		*hash = io;
		v->where = "appended";
	}
	return err;
}

/* Borrows io; v is the caller's. */
int vv_run(struct vv *v, const char *image, struct sqk_io *io, uint64_t size,
	   void (*report)(void *ctx, const struct sqk_check_report *r), void *ctx, char *msg,
	   size_t cap)
{
	struct sqk_io *hash = NULL;
	uint8_t want[VERITY_DIGEST];
	char why[512];
	int err;

	memset(v, 0, sizeof(*v));
	err = find_tree(v, image, io, size, &hash, msg, cap);
	if (err || !v->where)
		goto out;
	v->root_file = verity_sidecar_path(image, VERITY_SUFFIX_ROOT);
	err = v->root_file ? verity_read_root(v->root_file, want, why, sizeof(why)) : SQK_ENOMEM;
	v->pinned = !err;
	if (err == SQK_ECORRUPT)
		finding(v, report, ctx, 0, 0, "%s", why);
	if (err && err != SQK_ENOENT && err != SQK_ECORRUPT) {
		snprintf(msg, cap, "%s", err == SQK_ENOMEM ? "out of memory" : why);
		goto out;
	}
	err = verity_check(io, size, hash, v->at, v->pinned ? want : NULL, &v->r);
	v->checked = !err;
	if (!err)
		report_check(v, v->pinned ? want : NULL, report, ctx);
	else if (err == SQK_ENOENT || err == SQK_ECORRUPT || err == SQK_EUNSUPPORTED)
		finding(v, report, ctx, 0, 0, "%s %s", v->tree ? v->tree : "the appended area",
			err == SQK_ENOENT ? "has no dm-verity superblock" :
			err == SQK_EUNSUPPORTED ? "is a dm-verity tree of other parameters than "
			"sqk checks (hash type 1, SHA-256, 4096-byte blocks)" :
			"has a damaged dm-verity superblock, or its data or tree do not fit in "
			"the files");
	if (err == SQK_ENOENT || err == SQK_ECORRUPT || err == SQK_EUNSUPPORTED)
		err = 0;
	else if (err)
		snprintf(msg, cap, "dm-verity check: %s", sqk_strerror(err));
out:
	if (hash != io)
		sqk_io_destroy(hash);
	return err;
}

void vv_summary(const struct vv *v, FILE *f)
{
	if (!v->where) {
		fprintf(f, "; dm-verity: none");
		return;
	}
	fprintf(f, "; dm-verity: %s%s%s", v->where, v->tree ? " " : "", v->tree ? v->tree : "");
	if (!v->tree)
		fprintf(f, " at %llu", (unsigned long long)v->at);
	if (!v->checked) {
		fprintf(f, ", not checked");
		return;
	}
	fprintf(f, ", %llu data blocks checked, %llu bad", (unsigned long long)v->r.sb.data_blocks,
		(unsigned long long)v->r.bad_data);
	if (v->pinned)
		fprintf(f, ", root hash %s %s", v->r.root_ok ? "matches" : "differs from",
			v->root_file);
	else
		fprintf(f, ", root hash not pinned (no %s)", v->root_file);
}

void vv_json(const struct vv *v, FILE *f)
{
	char root[2 * VERITY_DIGEST + 1];

	if (!v->where) {
		fprintf(f, "null");
		return;
	}
	fprintf(f, "{\"where\": \"%s\", \"tree\": ", v->where);
	if (v->tree)
		json_put_str(f, v->tree);
	else
		fprintf(f, "null");
	fprintf(f, ", \"hash_offset\": %llu, \"checked\": %s", (unsigned long long)v->at,
		v->checked ? "true" : "false");
	if (v->checked) {
		bytes_hex(v->r.root, VERITY_DIGEST, root);
		root[2 * VERITY_DIGEST] = 0;
		fprintf(f, ", \"data_blocks\": %llu, \"bad_data_blocks\": %llu, "
			"\"bad_hash_blocks\": %llu, \"root_hash\": \"%s\"",
			(unsigned long long)v->r.sb.data_blocks, (unsigned long long)v->r.bad_data,
			(unsigned long long)v->r.bad_hash, root);
		if (v->r.bad_data)
			fprintf(f, ", \"first_bad_data_block\": %llu",
				(unsigned long long)v->r.first_bad_data);
	}
	fprintf(f, ", \"root_hash_file\": ");
	if (v->pinned)
		json_put_str(f, v->root_file);
	else
		fprintf(f, "null");
	fprintf(f, ", \"root_hash_ok\": %s}", v->pinned && v->checked && v->r.root_ok ? "true" :
		"false");
}

void vv_free(struct vv *v)
{
	free(v->tree);
	free(v->root_file);
	v->tree = NULL;
	v->root_file = NULL;
}
