/* SPDX-License-Identifier: BSD-2-Clause */
/* Signed images trusted by key (opts.trust, opts.trust_dir): at open, before any content is
 * read, the image must carry a valid Ed25519 signature (common/sign.h) by a trusted key over
 * its authenticated integrity root digest and its end; the failure names the key ids found.
 * The signature block is read raw: its signatures authenticate themselves. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/sign.h"
#include "internal.h"
#include "open_io.h"

/* The trusted keys of o into *t; a key file or folder that does not load is logged. */
static int load_trust(struct sqk_image *img, const struct sqk_open_opts *o, struct sig_trust *t)
{
	char why[512];
	int rc = 0;

	for (size_t i = 0; o->trust && o->trust[i] && !rc; i++) {
		rc = sig_trust_add_file(t, o->trust[i], why, sizeof(why));
		if (rc)
			img_logf(img, "trusted key %s: %s", o->trust[i], why);
	}
	if (!rc && o->trust_dir && (rc = sig_trust_add_dir(t, o->trust_dir, why, sizeof(why))))
		img_logf(img, "trusted keys: %s", why);
	return rc == SQK_ENOMEM || rc == SQK_EIO ? rc : rc ? SQK_EINVAL : 0;
}

/* Appends to out (len bytes) the key ids of b's entries, each with what was found of it. */
static void describe(const struct sig_block *b, const struct sig_status *st, char *out,
		     size_t len)
{
	size_t at = 0;

	out[0] = '\0';
	for (size_t i = 0; i < b->n && at < len; i++) {
		char id[2 * SQK_SIG_ID_SIZE + 1];
		int n;

		sig_key_id_hex(b->e[i].pub, id);
		n = snprintf(out + at, len - at, "%s%s (%s%s)", i ? ", " : "", id,
			     st[i].valid ? "valid" : "INVALID",
			     st[i].trusted ? ", trusted" : ", not trusted");
		at += n > 0 ? (size_t)n : 0;
	}
}

/* The signature block of the image checked against t: a trusted valid one is required. */
static int check_block(struct sqk_image *img, const struct sig_trust *t,
		       const struct sqk_integ_trailer *tr)
{
	struct sig_block b = { 0 };
	struct sig_status *st = NULL;
	struct sig_summary sum = { 0 };
	uint64_t s;
	char found[1024];
	int rc = sig_block_read(img->io, img->raw_size, &b, &s);

	if (rc == 0 && !(st = calloc(b.n, sizeof(*st))))
		rc = SQK_ENOMEM;
	if (rc == 0)
		rc = sig_check(&b, t, tr->root, img->file_size, st, &sum);
	if (rc == 0 && sum.ok) {
		img->trusted = true;
		img->trusted_time = sum.newest;
		memcpy(img->trusted_pub, b.e[sum.newest_index].pub, sizeof(img->trusted_pub));
	} else if (rc == 0) {
		describe(&b, st, found, sizeof(found));
		img_logf(img, "no valid signature by a trusted key (trusted keys: %zu); signatures "
			 "found: %s", t->n, found);
		rc = SQK_EUNTRUSTED;
	} else if (rc == SQK_ECORRUPT || rc == SQK_ENOENT) {
		img_logf(img, "the signature block is damaged: no signature can be trusted");
		rc = SQK_EUNTRUSTED;
	}
	free(st);
	sig_block_free(&b);
	return rc;
}

/* Borrows o. */
int trust_check(struct sqk_image *img, const struct sqk_open_opts *o)
{
	struct sig_trust t = { 0 };
	struct sqk_integ_trailer tr;
	int rc;

	if (!o->trust && !o->trust_dir)
		return 0;
	rc = load_trust(img, o, &t);
	if (rc == 0 && sqk_image_integrity(img, &tr) != 0)
		rc = SQK_ENOINTEG; /* verify_require said why */
	if (rc == 0 && !img->where.sig_len) {
		img_logf(img, "the image is not signed (no signature block; trusted keys: %zu)",
			 t.n);
		rc = SQK_EUNTRUSTED;
	}
	if (rc == 0)
		rc = check_block(img, &t, &tr);
	img->trust_set = t; /* sqk_image_signatures says which keys are trusted */
	return rc;
}

/* One entry as the API shows it. */
static void entry_out(const struct sig_entry *e, const struct sig_status *st,
		      struct sqk_signature *out)
{
	memset(out, 0, sizeof(*out));
	sig_key_id_hex(e->pub, out->key_id);
	memcpy(out->public_key, e->pub, sizeof(out->public_key));
	out->time = e->time;
	if (e->comment_len)
		memcpy(out->comment, e->comment, e->comment_len); /* <= 1024, decoded */
	out->valid = st->valid;
	out->trusted = st->trusted;
}

/* Borrows img; fills the caller's out[0 .. max) and *n. */
int sqk_image_signatures(struct sqk_image *img, struct sqk_signature *out, size_t max,
			 size_t *n)
{
	struct sig_block b = { 0 };
	struct sig_status *st = NULL;
	struct sig_summary sum;
	struct sqk_integ_trailer tr;
	uint64_t s;
	int rc;

	if (!img || !n || (max && !out))
		return SQK_EINVAL;
	*n = 0;
	rc = sqk_image_integrity(img, &tr);
	if (rc || !img->where.sig_len)
		return rc;
	rc = sig_block_read(img->io, img->raw_size, &b, &s);
	if (rc == SQK_ENOENT)
		rc = SQK_ECORRUPT; /* the open found its footer */
	if (rc == 0 && !(st = calloc(b.n, sizeof(*st))))
		rc = SQK_ENOMEM;
	if (rc == 0)
		rc = sig_check(&b, &img->trust_set, tr.root, img->file_size, st, &sum);
	for (size_t i = 0; rc == 0 && i < b.n && i < max; i++)
		entry_out(&b.e[i], &st[i], &out[i]);
	if (rc == 0)
		*n = b.n;
	free(st);
	sig_block_free(&b);
	return rc;
}

/* Borrows img; fills the caller's *time and pub. */
bool img_trusted(const struct sqk_image *img, uint64_t *time, uint8_t pub[32])
{
	if (!img->trusted)
		return false;
	*time = img->trusted_time;
	memcpy(pub, img->trusted_pub, sizeof(img->trusted_pub));
	return true;
}
