/* SPDX-License-Identifier: BSD-2-Clause */
/* Extended attributes (id entry → key/value pairs, out-of-line values) and symlink targets. */
#include <string.h>

#include "common/endian.h"
#include "internal.h"
#include "common/meta.h"
#include "common/format.h"


struct xpair {
	uint16_t type;
	uint16_t name_len;
	char name[SQK_NAME_MAX * 2];
	uint32_t vsize;
};

/* Positions kv at the first pair of ino's xattr set; *count = pairs. */
static int xattr_start(struct sqk_image *img, const struct sqk_inode *ino, struct mcur *kv,
		       uint32_t *count)
{
	uint64_t off = (uint64_t)ino->xattr_idx * SQK_XATTR_ID_SIZE, blk = off / SQK_META_SIZE;
	uint64_t nblocks = table_blocks(img->xattr_count, SQK_XATTR_ID_SIZE);
	struct mcur c = { .off = (uint32_t)(off % SQK_META_SIZE) };
	uint8_t raw[SQK_XATTR_ID_SIZE];
	struct xattr_id id;
	int rc;

	*count = 0;
	if (ino->xattr_idx == SQK_NONE32)
		return 0;
	if (ino->xattr_idx >= img->xattr_count)
		return SQK_ECORRUPT;
	c.pos = img->xattr_index[blk];
	c.end = blk + 1 < nblocks ? img->xattr_index[blk + 1] : img->xattr_ids_end;
	rc = meta_read(img, &c, raw, sizeof(raw));
	if (rc)
		return rc;
	xattr_id_decode(raw, &id);
	kv->pos = img->xattr_kv_start + (id.ref >> 16);
	kv->off = (uint32_t)(id.ref & 0xFFFF);
	kv->end = img->xattr_kv_end;
	*count = id.count;
	return 0;
}

/* Reads a pair's key and value size, leaving kv at the value. */
static int read_pair(struct sqk_image *img, struct mcur *kv, struct xpair *p)
{
	uint8_t raw[4];
	int rc = meta_read(img, kv, raw, 4);

	if (rc)
		return rc;
	p->type = get_le16(raw);
	p->name_len = get_le16(raw + 2);
	if ((p->type & 0xFF) >= SQK_XATTR_NPREFIX || (p->type & ~0x1FFu) ||
	    p->name_len >= sizeof(p->name) || p->name_len == 0)
		return SQK_ECORRUPT;
	rc = meta_read(img, kv, p->name, p->name_len);
	if (rc == 0)
		rc = meta_read(img, kv, raw, 4);
	p->vsize = get_le32(raw);
	if (rc == 0 && (p->type & 0x100) && p->vsize != 8)
		rc = SQK_ECORRUPT;
	return rc;
}

/* Fills the caller's buf with NUL-separated full names; *len = bytes needed. */
int sqk_xattr_list(struct sqk_image *img, const struct sqk_inode *ino, char *buf, size_t cap,
		   size_t *len)
{
	struct mcur kv;
	struct xpair p;
	uint32_t count;
	size_t need = 0;
	int rc = xattr_start(img, ino, &kv, &count);

	for (uint32_t i = 0; rc == 0 && i < count; i++) {
		const char *pre;
		size_t plen;

		rc = read_pair(img, &kv, &p);
		if (rc == 0)
			rc = meta_read(img, &kv, NULL, p.vsize);
		if (rc)
			break;
		pre = xattr_prefix(p.type & 0xFF);
		plen = strlen(pre);
		if (need + plen + p.name_len + 1 <= cap) {
			memcpy(buf + need, pre, plen);
			memcpy(buf + need + plen, p.name, p.name_len);
			buf[need + plen + p.name_len] = 0;
		}
		need += plen + p.name_len + 1;
	}
	if (rc)
		return rc;
	*len = need;
	return cap && need > cap ? SQK_ETOOBIG : 0;
}

/* Reads the value the pair's value field leads to (following an out-of-line reference). */
static int read_value(struct sqk_image *img, struct mcur *kv, const struct xpair *p,
		      void *buf, size_t cap, size_t *len)
{
	uint32_t size = p->vsize;
	struct mcur c = *kv;
	uint8_t raw[8];
	int rc;

	if (p->type & 0x100) {
		rc = meta_read(img, kv, raw, 8);
		if (rc)
			return rc;
		c.pos = img->xattr_kv_start + (get_le64(raw) >> 16);
		c.off = (uint32_t)(get_le64(raw) & 0xFFFF);
		rc = meta_read(img, &c, raw, 4);
		if (rc)
			return rc;
		size = get_le32(raw);
	}
	*len = size;
	if (cap == 0)
		return 0;
	if (size > cap)
		return SQK_ETOOBIG;
	return meta_read(img, &c, buf, size);
}

/* Fills the caller's buf with the value of name (borrowed); *len = its size. */
int sqk_xattr_get(struct sqk_image *img, const struct sqk_inode *ino, const char *name,
		  void *buf, size_t cap, size_t *len)
{
	struct mcur kv;
	struct xpair p;
	uint32_t count;
	int rc = xattr_start(img, ino, &kv, &count);

	for (uint32_t i = 0; rc == 0 && i < count; i++) {
		const char *pre;
		size_t plen;

		rc = read_pair(img, &kv, &p);
		if (rc)
			break;
		pre = xattr_prefix(p.type & 0xFF);
		plen = strlen(pre);
		if (strncmp(name, pre, plen) == 0 && strlen(name + plen) == p.name_len &&
		    memcmp(name + plen, p.name, p.name_len) == 0)
			return read_value(img, &kv, &p, buf, cap, len);
		rc = meta_read(img, &kv, NULL, p.vsize);
	}
	return rc ? rc : SQK_ENOENT;
}

/* Fills the caller's buf with link's target (truncated to cap); *len = its full length. */
int sqk_readlink(struct sqk_image *img, const struct sqk_inode *link, char *buf, size_t cap,
		 size_t *len)
{
	struct mcur c;
	size_t n = (size_t)link->size;
	int rc;

	if (sqk_basic_type(link->type) != SQK_T_SYMLINK)
		return SQK_EINVAL;
	if (n > SQK_SYMLINK_MAX)
		return SQK_ECORRUPT;
	inode_cursor(img, link->body_ref, &c);
	rc = meta_read(img, &c, buf, n < cap ? n : cap);
	if (rc)
		return rc;
	if (n < cap)
		buf[n] = 0;
	*len = n;
	return 0;
}
