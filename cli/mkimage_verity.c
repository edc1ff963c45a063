/* SPDX-License-Identifier: BSD-2-Clause */
/* `sqk mkimage --verity`'s sidecar files (mkimage_verity.h): judged like the image (outfile.h:
 * a file of another kind is never replaced unless forced), written as temporaries, committed
 * with the image. */
#include "mkimage_verity.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "sqk/error.h"

static bool is_tree(const uint8_t *head, size_t len)
{
	return len >= 8 && !memcmp(head, VERITY_MAGIC, 8);
}

static bool is_root(const uint8_t *head, size_t len)
{
	size_t hex = 2 * VERITY_DIGEST;

	if (len != hex && !(len == hex + 1 && head[hex] == '\n'))
		return false;
	for (size_t i = 0; i < hex; i++)
		if (!head[i] || !strchr("0123456789abcdefABCDEF", head[i]))
			return false;
	return true;
}

/* A DER PKCS#7 structure starts with a SEQUENCE. */
static bool is_sig(const uint8_t *head, size_t len)
{
	return len >= 2 && head[0] == 0x30;
}

static const struct outfile_kind kinds[MKV_FILES] = {
	[MKV_TREE] = { .what = "a dm-verity hash tree", .ours = is_tree },
	[MKV_ROOT] = { .what = "a root hash file", .ours = is_root },
	[MKV_SIG] = { .what = "a PKCS#7 signature", .ours = is_sig },
};

static const char *const suffixes[MKV_FILES] = {
	[MKV_TREE] = VERITY_SUFFIX_TREE,
	[MKV_ROOT] = VERITY_SUFFIX_ROOT,
	[MKV_SIG] = VERITY_SUFFIX_SIG,
};

void mkv_init(struct mkv *v)
{
	memset(v, 0, sizeof(*v));
	for (int i = 0; i < MKV_FILES; i++)
		v->f[i].of.fd = -1;
}

/* Judges file i, which this build writes, or whose older copy it removes. */
static int judge_file(struct mkv_file *f, int i, const char *image, bool force, char *msg,
		      size_t cap)
{
	f->path = verity_sidecar_path(image, suffixes[i]);
	if (!f->path || outfile_judge(f->path, &kinds[i], f->write && force, &f->t)) {
		snprintf(msg, cap, "out of memory");
		return SQK_ENOMEM;
	}
	if (!f->write) { /* only one of its kind is removed, never another file */
		f->stale = f->t.verdict == SQK_OUT_REPLACE;
		return 0;
	}
	if (f->t.verdict != SQK_OUT_REFUSED)
		return 0;
	snprintf(msg, cap, "%s", f->t.why);
	return SQK_EINVAL;
}

int mkv_judge(struct mkv *v, const struct mk_options *o, bool device, char *msg, size_t cap)
{
	bool append = o->build.verity == SQK_BUILD_VERITY_APPEND;
	int err;

	if (device && (!append || o->verity_cert)) {
		snprintf(msg, cap, "'%s' is a block device: %s cannot go beside it "
			 "(--verity=append puts the tree on the device; the root hash is printed)",
			 o->image,
			 append ? "the root hash's signature" : "IMAGE.verity");
		return SQK_EINVAL;
	}
	if (device)
		return 0; /* appended, no file beside the device */
	v->f[MKV_TREE].write = !append;
	v->f[MKV_ROOT].write = true;
	v->f[MKV_SIG].write = o->verity_cert != NULL;
	for (int i = 0; i < MKV_FILES; i++)
		if ((err = judge_file(&v->f[i], i, o->image, o->force, msg, cap)))
			return err;
	if (!o->verity_cert)
		return 0;
	err = verity_signer_load(&v->signer, o->verity_cert, o->verity_key, msg, cap);
	v->signing = !err;
	return err;
}

/* Creates file f's temporary, as judged. */
static int create(struct mkv_file *f, char *msg, size_t cap)
{
	if (!outfile_create_judged(&f->of, f->path, &f->t, ".sqk", msg, cap))
		return 0;
	return errno ? sqk_from_errno(errno) : SQK_EINVAL;
}

int mkv_open_tree(struct mkv *v, struct sqk_io **io, char *msg, size_t cap)
{
	struct mkv_file *f = &v->f[MKV_TREE];
	int err = f->write ? create(f, msg, cap) : SQK_EINVAL;

	if (!err && (err = sqk_io_fd_create(f->of.fd, 0, false, &v->tree_io)))
		snprintf(msg, cap, "out of memory");
	*io = v->tree_io;
	return err;
}

/* Writes buf[0..len) into file f's new temporary and syncs it. */
static int write_file(struct mkv_file *f, const void *buf, size_t len, char *msg, size_t cap)
{
	const uint8_t *p = buf;
	int err = create(f, msg, cap);

	while (!err && len) {
		ssize_t n = write(f->of.fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		p += n;
		len -= (size_t)n;
	}
	if (!err && (len || fsync(f->of.fd))) {
		snprintf(msg, cap, "cannot write '%s': %s", f->path, strerror(errno));
		err = sqk_from_errno(errno);
	}
	return err;
}

int mkv_write(struct mkv *v, const struct sqk_build_result *r, char *msg, size_t cap)
{
	char text[2 * VERITY_DIGEST + 2];
	uint8_t *der = NULL;
	size_t len = 0;
	int err;

	if (!v->f[MKV_ROOT].write)
		return 0;
	verity_root_text(r->verity_root, text);
	err = write_file(&v->f[MKV_ROOT], text, strlen(text), msg, cap);
	/* the kernel and systemd check the signature of the hex digits, without the newline */
	if (!err && v->signing)
		err = verity_signer_sign(&v->signer, text, 2 * VERITY_DIGEST, &der, &len, msg, cap);
	if (!err && v->signing)
		err = write_file(&v->f[MKV_SIG], der, len, msg, cap);
	OPENSSL_free(der);
	return err;
}

int mkv_commit(struct mkv *v, char *msg, size_t cap)
{
	for (int i = 0; i < MKV_FILES; i++) {
		struct mkv_file *f = &v->f[i];

		if (f->of.fd < 0 || !outfile_commit(&f->of, NULL))
			continue;
		if (errno == EEXIST)
			snprintf(msg, cap, "'%s' changed during the build: not replaced", f->path);
		else
			snprintf(msg, cap, "cannot rename to '%s': %s", f->path, strerror(errno));
		return sqk_from_errno(errno);
	}
	return 0;
}

void mkv_remove_stale(struct mkv *v, bool quiet)
{
	for (int i = 0; i < MKV_FILES; i++) {
		struct mkv_file *f = &v->f[i];

		if (!f->stale || unlink(f->path))
			continue;
		if (!quiet)
			fprintf(stderr, "sqk mkimage: removed '%s' of an older build (this one "
				"has %s)\n", f->path, i == MKV_SIG ? "no signature" :
				"its dm-verity tree appended");
	}
}

void mkv_free(struct mkv *v)
{
	sqk_io_destroy(v->tree_io);
	v->tree_io = NULL;
	for (int i = 0; i < MKV_FILES; i++) {
		outfile_abort(&v->f[i].of);
		outfile_target_free(&v->f[i].t);
		free(v->f[i].path);
		v->f[i].path = NULL;
	}
	verity_signer_free(&v->signer);
}
