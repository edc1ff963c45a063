/* SPDX-License-Identifier: BSD-2-Clause */
/* Directory listings: the run iterator with name validation (sorted, unique, no '/', not . or
 * ..) behind the opaque sqk_dir_open/next/close, lookup through the directory index of extended
 * directories, and path resolution. */
#include <stdlib.h>
#include <string.h>

#include "common/endian.h"
#include "common/grow.h"
#include "internal.h"
#include "common/meta.h"
#include "common/format.h"

static void iter_at(struct sqk_image *img, const struct sqk_inode *dir, uint32_t block,
		    uint32_t off, uint32_t remaining, struct sqk_dir_iter *it)
{
	memset(it, 0, sizeof(*it));
	it->img = img;
	it->pos = img->sb.directory_table_start + block;
	it->off = off;
	it->remaining = remaining;
}

/* it is the caller's storage and borrows img. */
int dir_start(struct sqk_image *img, const struct sqk_inode *dir, struct sqk_dir_iter *it)
{
	if (sqk_basic_type(dir->type) != SQK_T_DIR)
		return SQK_EINVAL;
	iter_at(img, dir, dir->dir_block, dir->dir_offset,
		dir->size > 3 ? (uint32_t)(dir->size - 3) : 0, it);
	return 0;
}

static int iter_read(struct sqk_dir_iter *it, void *buf, size_t len)
{
	struct sqk_image *img = it->img;
	struct mcur c = { .pos = it->pos, .off = it->off, .end = img->dir_end };
	int rc;

	if (it->remaining < len)
		return SQK_ECORRUPT;
	rc = meta_read(img, &c, buf, len);
	if (rc)
		return rc;
	it->pos = c.pos;
	it->off = c.off;
	it->remaining -= (uint32_t)len;
	return 0;
}

static int next_run(struct sqk_dir_iter *it)
{
	uint8_t raw[SQK_DIR_HEADER_SIZE];
	struct dir_header h;
	int rc = iter_read(it, raw, sizeof(raw));

	if (rc)
		return rc;
	dir_header_decode(raw, &h);
	if (h.count + 1 > SQK_DIR_RUN_MAX || h.count + 1 == 0)
		return SQK_ECORRUPT;
	it->run_left = h.count + 1;
	it->run_block = h.start_block;
	it->run_ino = h.inode_number;
	return 0;
}

static bool name_ok(const char *n, size_t len)
{
	if (len == 0 || memchr(n, '/', len) || memchr(n, 0, len))
		return false;
	return !(len == 1 && n[0] == '.') && !(len == 2 && n[0] == '.' && n[1] == '.');
}


static int read_entry(struct sqk_dir_iter *it, struct sqk_dirent *e)
{
	uint8_t raw[SQK_DIR_ENTRY_SIZE];
	char name[SQK_NAME_MAX + 1];
	struct dir_entry d;
	size_t len;
	int64_t ino;
	int rc = iter_read(it, raw, sizeof(raw));

	if (rc)
		return rc;
	dir_entry_decode(raw, &d);
	len = (size_t)d.name_size + 1;
	if (len > SQK_NAME_MAX)
		return SQK_ECORRUPT;
	rc = iter_read(it, name, len);
	if (rc)
		return rc;
	name[len] = 0;
	ino = (int64_t)it->run_ino + d.inode_delta;
	if (!name_ok(name, len) || d.type < SQK_T_DIR || d.type > SQK_T_SOCKET || ino < 1 ||
	    ino > it->img->sb.inode_count || d.offset >= SQK_META_SIZE)
		return SQK_ECORRUPT;
	if (it->index > 0 && dir_name_cmp(it->name, strlen(it->name), name, len) >= 0)
		return SQK_ECORRUPT;
	memcpy(it->name, name, len + 1);
	e->name = it->name;
	e->name_len = len;
	e->ino = (uint32_t)ino;
	e->type = d.type;
	e->ref = ((uint64_t)it->run_block << 16) | d.offset;
	return 0;
}

/* Borrows img and dir (copied: dir may go away); the caller owns *out (sqk_dir_close). */
int sqk_dir_open(struct sqk_image *img, const struct sqk_inode *dir, struct sqk_dir_iter **out)
{
	struct sqk_dir_iter *it = malloc(sizeof(*it));
	int rc;

	*out = NULL;
	if (!it)
		return SQK_ENOMEM;
	rc = dir_start(img, dir, it);
	if (rc) {
		free(it);
		return rc;
	}
	*out = it;
	return 0;
}

/* NULL-safe. */
void sqk_dir_close(struct sqk_dir_iter *it)
{
	free(it);
}

/* Fills *e (its name borrowed from it); 1 = entry, 0 = end, < 0 = error. */
int sqk_dir_next(struct sqk_dir_iter *it, struct sqk_dirent *e)
{
	int rc = 0;

	if (it->run_left == 0) {
		if (it->remaining == 0)
			return 0;
		rc = next_run(it);
	}
	if (rc == 0)
		rc = read_entry(it, e);
	if (rc == 0) {
		it->run_left--;
		/* what is left after a run must hold a header */
		if (it->run_left == 0 && it->remaining > 0 && it->remaining < SQK_DIR_HEADER_SIZE)
			rc = SQK_ECORRUPT;
	}
	if (rc) {
		img_logf(it->img, "bad directory entry in block at offset %llu: %s",
			 (unsigned long long)it->pos, sqk_strerror(rc));
		it->remaining = 0;
		it->run_left = 0;
		return rc;
	}
	it->index++;
	return 1;
}

/* Scans the directory index for the last entry whose name ≤ the target and positions it there. */
static int seek_index(struct sqk_image *img, const struct sqk_inode *dir, const char *name,
		      size_t len, struct sqk_dir_iter *it)
{
	struct mcur c;
	uint32_t listing = (uint32_t)(dir->size - 3), last = 0;

	inode_cursor(img, dir->body_ref, &c);
	for (uint32_t i = 0; i < dir->index_count; i++) {
		uint8_t raw[SQK_DIR_INDEX_SIZE];
		char iname[SQK_NAME_MAX + 1];
		struct sqk_dir_index d;
		int rc = meta_read(img, &c, raw, sizeof(raw));

		if (rc)
			return rc;
		dir_index_decode(raw, &d);
		if (d.name_size + 1 > SQK_NAME_MAX || d.name_size + 1 == 0)
			return SQK_ECORRUPT;
		rc = meta_read(img, &c, iname, d.name_size + 1);
		if (rc)
			return rc;
		if (d.index <= last || d.index >= listing)
			return SQK_ECORRUPT;
		if (dir_name_cmp(iname, d.name_size + 1, name, len) > 0)
			break;
		last = d.index;
		iter_at(img, dir, d.start_block, (dir->dir_offset + d.index) % SQK_META_SIZE,
			listing - d.index, it);
	}
	return 0;
}

/* Fills the caller's *out with entry name[0..len) of dir; SQK_ENOENT if absent. */
int sqk_lookup(struct sqk_image *img, const struct sqk_inode *dir, const char *name, size_t len,
	       struct sqk_inode *out)
{
	struct sqk_dir_iter it;
	struct sqk_dirent e;
	int rc = dir_start(img, dir, &it);

	if (rc)
		return rc;
	if (dir->type == SQK_T_LDIR && dir->index_count && dir->size > 3)
		rc = seek_index(img, dir, name, len, &it);
	while (rc == 0 && (rc = sqk_dir_next(&it, &e)) == 1) {
		int cmp = dir_name_cmp(e.name, e.name_len, name, len);

		if (cmp == 0)
			return sqk_inode_get(img, e.ref, out);
		rc = cmp > 0 ? SQK_ENOENT : 0;
	}
	return rc == 0 ? SQK_ENOENT : rc;
}

/* Fills the caller's *out with the inode at path (borrowed). */
int sqk_lookup_path(struct sqk_image *img, const char *path, struct sqk_inode *out)
{
	struct sqk_inode *up = NULL; /* the directories walked through, for ".." */
	size_t depth = 0, cap = 0;
	struct sqk_inode cur;
	int rc = sqk_image_root(img, &cur);

	while (rc == 0 && *path) {
		size_t n;

		while (*path == '/')
			path++;
		n = strcspn(path, "/");
		if (n == 0)
			break;
		if (sqk_basic_type(cur.type) != SQK_T_DIR) {
			rc = SQK_ENOENT;
		} else if (n == 2 && path[0] == '.' && path[1] == '.') {
			if (depth) /* ".." of the root is the root */
				cur = up[--depth];
		} else if (!(n == 1 && path[0] == '.')) {
			rc = mem_grow(&up, &cap, depth + 1, sizeof(*up), 0);
			if (rc)
				break;
			up[depth++] = cur;
			rc = sqk_lookup(img, &cur, path, n, &cur);
		}
		path += n;
	}
	free(up);
	if (rc == 0)
		*out = cur;
	return rc;
}

/* Borrows it. */
uint64_t sqk_dir_index(const struct sqk_dir_iter *it)
{
	return it->index;
}

/* Borrows it. */
uint64_t sqk_dir_pos(const struct sqk_dir_iter *it)
{
	return it->pos;
}
