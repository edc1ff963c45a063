/* SPDX-License-Identifier: BSD-2-Clause */
/* sqk tar, walk side: visits the image in its own order (a directory, then its entries sorted as
 * stored, depth first: libsqk's walk) and writes one archive entry per name through libarchive:
 * metadata, xattrs, symlink targets, device numbers, hard links as link entries to the first name,
 * and regular files 1 MiB at a time, with the image's sparse blocks as pax sparse holes. */
#include "tar.h"
#include "common/depth.h"
#include "common/grow.h"

#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Sets t->path to the image path of the walk's entry e: the top's, then "/" and e's path. */
static int tar_path_set(struct tar *t, const struct sqk_walk_entry *e)
{
	size_t top = t->rel ? t->rel - 1 : 0, at = top && e->path_len ? top + 1 : top;

	if (mem_grow(&t->path, &t->pcap, at + e->path_len + 1, 1, 0))
		return -1;
	if (at > top)
		t->path[top] = '/';
	memcpy(t->path + at, e->path, e->path_len + 1);
	t->plen = at + e->path_len;
	return 0;
}

static bool tar_interrupted(struct tar *t)
{
	int sig = atomic_load(&t->sig);

	if (sig)
		cmd_err(&t->c, t->path, 0, "interrupted by signal %d", sig);
	return sig != 0;
}

void tar_archive_err(struct tar *t, const char *what)
{
	if (t->out_errno)
		cmd_err(&t->c, NULL, 0, "cannot write the archive to %s: %s", t->out_name,
			    strerror(t->out_errno));
	else
		cmd_err(&t->c, t->path, 0, "%s: %s", what,
			    archive_error_string(t->a) ? archive_error_string(t->a)
						       : "libarchive error");
}


/* Rehashes the first-name table into twice the slots. */
static int tar_links_grow(struct tar *t)
{
	size_t cap = t->caplinks ? t->caplinks * 2 : 1024, i, j;
	struct tar_link *n = calloc(cap, sizeof(*n));

	if (!n)
		return -1;
	for (i = 0; i < t->caplinks; i++) {
		if (!t->links[i].ino)
			continue;
		j = (t->links[i].ino * 2654435761u) & (cap - 1);
		while (n[j].ino)
			j = (j + 1) & (cap - 1);
		n[j] = t->links[i];
	}
	free(t->links);
	t->links = n;
	t->caplinks = cap;
	return 0;
}

/* For an inode with several names: *first = the archive name it was first written under, or
 * NULL when name is its first name (then remembered). Returns 0 or -1 (out of memory). */
static int tar_link_first(struct tar *t, uint32_t ino, const char *name, const char **first)
{
	size_t i, len = strlen(name) + 1;

	if (t->nlinks * 2 >= t->caplinks && tar_links_grow(t))
		return -1;
	for (i = (ino * 2654435761u) & (t->caplinks - 1); t->links[i].ino;
	     i = (i + 1) & (t->caplinks - 1)) {
		if (t->links[i].ino == ino) {
			*first = t->names + t->links[i].name;
			return 0;
		}
	}
	if (mem_grow(&t->names, &t->capnames, t->nnames + len, 1, 0))
		return -1;
	memcpy(t->names + t->nnames, name, len);
	t->links[i].ino = ino;
	t->links[i].name = t->nnames;
	t->nnames += len;
	t->nlinks++;
	*first = NULL;
	return 0;
}

/* Adds every xattr of ino (all namespaces) to the entry. */
static int tar_xattrs(struct tar *t, const struct sqk_inode *ino)
{
	size_t len = 0, vlen, klen;
	const char *k, *end;
	int r;

	if (ino->xattr_idx == SQK_NONE32)
		return 0;
	r = sqk_xattr_list(t->c.img, ino, NULL, 0, &len);
	if (!r && len)
		r = mem_grow(&t->xnames, &t->capxnames, len, 1, 0);
	if (!r && len)
		r = sqk_xattr_list(t->c.img, ino, t->xnames, len, &len);
	if (r) {
		cmd_err(&t->c, t->path, r, "cannot list xattrs");
		return -1;
	}
	end = t->xnames + len;
	for (k = t->xnames; k < end; k += klen + 1) {
		klen = strnlen(k, (size_t)(end - k));
		if (k + klen == end)
			break; /* unterminated: the library never returns one */
		r = sqk_xattr_get(t->c.img, ino, k, NULL, 0, &vlen);
		if (!r)
			r = mem_grow(&t->xval, &t->capxval, vlen ? vlen : 1, 1, 0);
		if (!r)
			r = sqk_xattr_get(t->c.img, ino, k, t->xval, vlen, &vlen);
		if (r) {
			cmd_err(&t->c, t->path, r, "cannot read xattr %s", k);
			return -1;
		}
		archive_entry_xattr_add_entry(t->ent, k, t->xval, vlen);
	}
	return 0;
}

/* Reads exactly len bytes of file at off into t->buf. */
static int tar_read(struct tar *t, const struct sqk_inode *ino, uint64_t off, size_t len)
{
	size_t got = 0;
	ssize_t n;

	while (got < len) {
		if (tar_interrupted(t))
			return -1;
		n = sqk_read(t->c.img, ino, t->buf + got, len - got, off + got);
		if (n <= 0) {
			cmd_read_err(&t->c, t->path, ino, n ? (int)n : SQK_ECORRUPT,
					 "read failed at file offset %llu (file size %llu)",
					 (unsigned long long)(off + got),
					 (unsigned long long)ino->size);
			return -1;
		}
		got += (size_t)n;
	}
	return 0;
}

/* The data regions of a file from its block list: a block stored with no bytes is a hole
 * (zeros; sqk mkimage and mksquashfs store every all-zero block so); a tail kept in a fragment
 * never is. The library holds the whole list already: copying it costs no more. */
static int tar_map_blocks(struct tar *t, const struct sqk_inode *ino)
{
	uint32_t count = 0, k;
	uint64_t off, len, end;
	int r = sqk_file_blocks(t->c.img, ino, t->words, (uint32_t)t->capwords, &count);

	if (r == SQK_ETOOBIG) {
		r = mem_grow(&t->words, &t->capwords, count, sizeof(*t->words), 0);
		if (!r)
			r = sqk_file_blocks(t->c.img, ino, t->words, count, &count);
	}
	if (r) {
		cmd_err(&t->c, t->path, r, "cannot read the file's block list");
		return -1;
	}
	t->nmap = 0;
	for (k = 0, off = 0; off < ino->size; k++, off = end) {
		end = k < count && ino->size - off > t->block_size ? off + t->block_size
								   : ino->size;
		len = end - off;
		if (k < count && !(t->words[k] & SQK_BLOCK_SIZE_MASK))
			continue;
		if (t->nmap && t->map[t->nmap - 1].off + t->map[t->nmap - 1].len == off) {
			t->map[t->nmap - 1].len += len;
			continue;
		}
		if (mem_grow(&t->map, &t->capmap, t->nmap + 1, sizeof(*t->map), 0)) {
			cmd_err(&t->c, t->path, SQK_ENOMEM, "cannot record the sparse map");
			return -1;
		}
		t->map[t->nmap++] = (struct tar_region){ off, len };
	}
	return 0;
}

/* Passes len bytes to libarchive (which drops the bytes that fall in holes). */
static int tar_put(struct tar *t, const unsigned char *p, size_t len)
{
	la_ssize_t w;

	while (len) {
		w = archive_write_data(t->a, p, len);
		if (w <= 0) {
			tar_archive_err(t, "cannot write file data");
			return -1;
		}
		p += w;
		len -= (size_t)w;
	}
	return 0;
}

/* Counts n bytes of file data stored, for the progress line. Returns 0. */
static int tar_counted(struct tar *t, uint64_t n)
{
	progress_add(&t->pr, 0, n);
	return 0;
}

/* Streams the file's bytes after its header; chunks wholly inside holes are not read. */
static int tar_file_data(struct tar *t, const struct sqk_inode *ino, bool in_buf, bool holes)
{
	uint64_t off;
	size_t n, k = 0;

	if (in_buf)
		return tar_put(t, t->buf, (size_t)ino->size) ? -1 : tar_counted(t, ino->size);
	for (off = 0; off < ino->size; off += n) {
		n = ino->size - off < SQK_TAR_CHUNK ? (size_t)(ino->size - off) : SQK_TAR_CHUNK;
		while (holes && k < t->nmap && t->map[k].off + t->map[k].len <= off)
			k++;
		/* libarchive stores none of a hole's bytes: whatever t->buf holds will do */
		if (holes && (k == t->nmap || t->map[k].off >= off + n)) {
			if (tar_put(t, t->buf, n))
				return -1;
			tar_counted(t, n);
			continue;
		}
		if (tar_read(t, ino, off, n) || tar_put(t, t->buf, n))
			return -1;
		tar_counted(t, n);
	}
	return 0;
}

/* Writes the entry's header. ARCHIVE_WARN is fine: a name that is not text in the locale's
 * charset is stored as bytes (hdrcharset=BINARY). */
static int tar_header(struct tar *t)
{
	if (archive_write_header(t->a, t->ent) >= ARCHIVE_WARN)
		return 0;
	tar_archive_err(t, "cannot write the entry header");
	return -1;
}

/* Regular file: size, sparse map (when the image stores some block as a hole), header, data.
 * A file that fits in one chunk is read before its header: its corrupt block fails the
 * archive before the entry starts. */
static int tar_file(struct tar *t, const struct sqk_inode *ino)
{
	bool want_map = t->sparse && ino->size > t->block_size, holes;
	bool in_buf = ino->size <= SQK_TAR_CHUNK;
	size_t i;

	if ((in_buf && tar_read(t, ino, 0, (size_t)ino->size)) ||
	    (want_map && tar_map_blocks(t, ino)))
		return -1;
	holes = want_map && !(t->nmap == 1 && t->map[0].off == 0 && t->map[0].len == ino->size);
	archive_entry_set_size(t->ent, (la_int64_t)ino->size);
	for (i = 0; holes && i < t->nmap; i++)
		archive_entry_sparse_add_entry(t->ent, (la_int64_t)t->map[i].off,
					       (la_int64_t)t->map[i].len);
	if (holes && t->nmap == 0) /* all holes: one empty region at the end */
		archive_entry_sparse_add_entry(t->ent, (la_int64_t)ino->size, 0);
	if (tar_header(t) || tar_file_data(t, ino, in_buf, holes))
		return -1;
	progress_add(&t->pr, 1, 0);
	return 0;
}

/* The type-specific part of a non-file entry, then its header. */
static int tar_special(struct tar *t, const struct sqk_inode *ino)
{
	char target[SQK_SYMLINK_MAX + 1];
	size_t len;
	int r;

	if (cmd_is(ino, SQK_T_SYMLINK)) {
		r = sqk_readlink(t->c.img, ino, target, sizeof(target), &len);
		if (!r && len >= sizeof(target))
			r = SQK_ETOOBIG;
		if (r) {
			cmd_err(&t->c, t->path, r, "cannot read symlink");
			return -1;
		}
		archive_entry_copy_symlink(t->ent, target);
	} else if (cmd_is(ino, SQK_T_BLKDEV) || cmd_is(ino, SQK_T_CHRDEV)) {
		archive_entry_set_rdevmajor(t->ent, sqk_rdev_major(ino->rdev));
		archive_entry_set_rdevminor(t->ent, sqk_rdev_minor(ino->rdev));
	}
	return tar_header(t);
}

/* Writes the entry of ino under the archive name name. */
static int tar_entry(struct tar *t, const struct sqk_inode *ino, const char *name)
{
	const char *first = NULL;

	if (cmd_is(ino, SQK_T_SOCKET)) {
		cmd_err(&t->c, t->path, 0, "warning: socket skipped (a tar archive cannot "
			    "hold sockets)");
		return 0;
	}
	if (!cmd_is(ino, SQK_T_DIR) && ino->nlink > 1 &&
	    tar_link_first(t, ino->ino, name, &first)) {
		cmd_err(&t->c, t->path, SQK_ENOMEM, "cannot record a hard link");
		return -1;
	}
	archive_entry_clear(t->ent);
	archive_entry_copy_pathname(t->ent, name);
	archive_entry_set_mode(t->ent, ino->mode);
	archive_entry_set_uid(t->ent, ino->uid);
	archive_entry_set_gid(t->ent, ino->gid);
	archive_entry_set_mtime(t->ent, (time_t)ino->mtime, 0);
	if (first) { /* the inode's data, target and xattrs went with its first name */
		archive_entry_copy_hardlink(t->ent, first);
		return tar_header(t);
	}
	if (tar_xattrs(t, ino))
		return -1;
	return cmd_is(ino, SQK_T_FILE) ? tar_file(t, ino) : tar_special(t, ino);
}

/* The message of a failed step of the walk (t->path its image path). */
static void tar_walk_err(struct tar *t, const struct sqk_walk_entry *e, int r)
{
	char b[2 * SQK_DEPTH_SHOWN + 4];

	if (e->event == SQK_WALK_ERR_INODE)
		cmd_err(&t->c, t->path, r, "cannot read inode");
	else if (e->event == SQK_WALK_ERR_LIST)
		cmd_err(&t->c, t->path, r, "cannot list directory");
	else if (e->event == SQK_WALK_ERR_DEPTH) /* the bound of common/depth.h */
		cmd_err(&t->c, depth_shown(t->path, b), SQK_ETOOBIG,
			    "directories nested deeper than %u levels (the most sqk walks)",
			    SQK_DEPTH_MAX);
	else
		cmd_err(&t->c, t->path, r, "cannot extend the path");
}

/* Writes one entry of the walk (t->path its image path); a directory is walked once: a second
 * visit is a loop (or a second name) in a corrupt image. */
static int tar_walk_entry(struct tar *t, const struct sqk_walk_entry *e)
{
	if (tar_interrupted(t) ||
	    tar_entry(t, &e->inode, e->depth ? t->path + t->rel : t->top_name))
		return -1;
	if (cmd_is(&e->inode, SQK_T_DIR) && (e->flags & SQK_WALK_SEEN)) {
		cmd_err(&t->c, t->path, SQK_ECORRUPT, "directory inode %u reached twice "
			    "(a directory loop)", e->inode.ino);
		return -1;
	}
	return 0;
}

int tar_walk(struct tar *t, const struct sqk_inode *top)
{
	struct sqk_walk_entry e = { 0 };
	struct sqk_walk *w = NULL;
	int r;

	t->block_size = sqk_image_super(t->c.img)->block_size;
	t->ent = archive_entry_new();
	t->buf = malloc(SQK_TAR_CHUNK);
	if (!t->ent || !t->buf || mem_grow(&t->words, &t->capwords, 1024, sizeof(*t->words), 0) ||
	    sqk_walk_open(t->c.img, top, SQK_WALK_ONCE, SQK_WALK_MAX_DEPTH, &w)) {
		cmd_err(&t->c, NULL, SQK_ENOMEM, "cannot allocate the walk's tables");
		return -1;
	}
	while ((r = sqk_walk_next(w, &e)) == 1) {
		if (tar_path_set(t, &e)) {
			e.event = SQK_WALK_ERR_FATAL;
			r = SQK_ENOMEM;
			break;
		}
		if (tar_walk_entry(t, &e)) {
			sqk_walk_close(w);
			return -1;
		}
	}
	if (r < 0 && e.path && e.event != SQK_WALK_ERR_FATAL)
		tar_path_set(t, &e);
	if (r < 0)
		tar_walk_err(t, &e, r);
	sqk_walk_close(w);
	return r < 0 ? -1 : 0;
}
