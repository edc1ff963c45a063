/* sqk tar, walk side: visits the image in its own order (a directory, then its entries sorted as
 * stored, depth first) and writes one archive entry per name through libarchive: metadata,
 * xattrs, symlink targets, device numbers, hard links as link entries to the first name, and
 * regular files 1 MiB at a time, with the image's sparse blocks as pax sparse holes. */
#include "tar.h"
#include "common/depth.h"

#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Returns p grown to hold at least need elements (*cap updated), or NULL (p unchanged). */
static void *tar_grow(void *p, size_t *cap, size_t need, size_t elem)
{
	size_t n = *cap ? *cap : 64;

	if (need <= *cap)
		return p;
	while (n < need)
		n *= 2;
	p = realloc(p, n * elem);
	if (p)
		*cap = n;
	return p;
}

/* Appends "/name" (just "name" at the top of an empty path) to t->path. */
static int tar_path_push(struct sqk_tar *t, const char *name, size_t len)
{
	char *p = tar_grow(t->path, &t->pcap, t->plen + len + 2, 1);

	if (!p)
		return -1;
	t->path = p;
	if (t->plen)
		t->path[t->plen++] = '/';
	memcpy(t->path + t->plen, name, len);
	t->plen += len;
	t->path[t->plen] = '\0';
	return 0;
}

static void tar_path_pop(struct sqk_tar *t, size_t len)
{
	t->plen = len;
	t->path[len] = '\0';
}

static bool tar_interrupted(struct sqk_tar *t)
{
	int sig = atomic_load(&t->sig);

	if (sig)
		sqk_cmd_err(&t->c, t->path, 0, "interrupted by signal %d", sig);
	return sig != 0;
}

void sqk_tar_archive_err(struct sqk_tar *t, const char *what)
{
	if (t->out_errno)
		sqk_cmd_err(&t->c, NULL, 0, "cannot write the archive to %s: %s", t->out_name,
			    strerror(t->out_errno));
	else
		sqk_cmd_err(&t->c, t->path, 0, "%s: %s", what,
			    archive_error_string(t->a) ? archive_error_string(t->a)
						       : "libarchive error");
}


/* Rehashes the first-name table into twice the slots. */
static int tar_links_grow(struct sqk_tar *t)
{
	size_t cap = t->caplinks ? t->caplinks * 2 : 1024, i, j;
	struct sqk_tar_link *n = calloc(cap, sizeof(*n));

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
static int tar_link_first(struct sqk_tar *t, uint32_t ino, const char *name, const char **first)
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
	char *names = tar_grow(t->names, &t->capnames, t->nnames + len, 1);

	if (!names)
		return -1;
	t->names = names;
	memcpy(t->names + t->nnames, name, len);
	t->links[i].ino = ino;
	t->links[i].name = t->nnames;
	t->nnames += len;
	t->nlinks++;
	*first = NULL;
	return 0;
}

/* Adds every xattr of ino (all namespaces) to the entry. */
static int tar_xattrs(struct sqk_tar *t, const struct sqk_inode *ino)
{
	size_t len = 0, vlen, klen;
	const char *k, *end;
	char *q;
	int r;

	if (ino->xattr_idx == SQK_NONE32)
		return 0;
	r = sqk_xattr_list(t->c.img, ino, NULL, 0, &len);
	if (!r && len && !(q = tar_grow(t->xnames, &t->capxnames, len, 1)))
		r = SQK_ENOMEM;
	else if (!r && len)
		t->xnames = q;
	if (!r && len)
		r = sqk_xattr_list(t->c.img, ino, t->xnames, len, &len);
	if (r) {
		sqk_cmd_err(&t->c, t->path, r, "cannot list xattrs");
		return -1;
	}
	end = t->xnames + len;
	for (k = t->xnames; k < end; k += klen + 1) {
		klen = strnlen(k, (size_t)(end - k));
		if (k + klen == end)
			break; /* unterminated: the library never returns one */
		r = sqk_xattr_get(t->c.img, ino, k, NULL, 0, &vlen);
		if (!r && !(q = tar_grow(t->xval, &t->capxval, vlen ? vlen : 1, 1)))
			r = SQK_ENOMEM;
		else if (!r)
			t->xval = q;
		if (!r)
			r = sqk_xattr_get(t->c.img, ino, k, t->xval, vlen, &vlen);
		if (r) {
			sqk_cmd_err(&t->c, t->path, r, "cannot read xattr %s", k);
			return -1;
		}
		archive_entry_xattr_add_entry(t->ent, k, t->xval, vlen);
	}
	return 0;
}

/* Reads exactly len bytes of file at off into t->buf. */
static int tar_read(struct sqk_tar *t, const struct sqk_inode *ino, uint64_t off, size_t len)
{
	size_t got = 0;
	ssize_t n;

	while (got < len) {
		if (tar_interrupted(t))
			return -1;
		n = sqk_read(t->c.img, ino, t->buf + got, len - got, off + got);
		if (n <= 0) {
			sqk_cmd_read_err(&t->c, t->path, ino, n ? (int)n : SQK_ECORRUPT,
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
static int tar_map_blocks(struct sqk_tar *t, const struct sqk_inode *ino)
{
	uint32_t count = 0, k, *w;
	uint64_t off, len, end;
	struct sqk_tar_region *m;
	int r = sqk_file_blocks(t->c.img, ino, t->words, (uint32_t)t->capwords, &count);

	if (r == SQK_ETOOBIG) {
		w = tar_grow(t->words, &t->capwords, count, sizeof(*w));
		r = w ? sqk_file_blocks(t->c.img, ino, w, count, &count) : SQK_ENOMEM;
		t->words = w ? w : t->words;
	}
	if (r) {
		sqk_cmd_err(&t->c, t->path, r, "cannot read the file's block list");
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
		m = tar_grow(t->map, &t->capmap, t->nmap + 1, sizeof(*m));
		if (!m) {
			sqk_cmd_err(&t->c, t->path, SQK_ENOMEM, "cannot record the sparse map");
			return -1;
		}
		t->map = m;
		t->map[t->nmap++] = (struct sqk_tar_region){ off, len };
	}
	return 0;
}

/* Passes len bytes to libarchive (which drops the bytes that fall in holes). */
static int tar_put(struct sqk_tar *t, const unsigned char *p, size_t len)
{
	la_ssize_t w;

	while (len) {
		w = archive_write_data(t->a, p, len);
		if (w <= 0) {
			sqk_tar_archive_err(t, "cannot write file data");
			return -1;
		}
		p += w;
		len -= (size_t)w;
	}
	return 0;
}

/* Counts n bytes of file data stored, for the progress line. Returns 0. */
static int tar_counted(struct sqk_tar *t, uint64_t n)
{
	sqk_progress_add(&t->pr, 0, n);
	return 0;
}

/* Streams the file's bytes after its header; chunks wholly inside holes are not read. */
static int tar_file_data(struct sqk_tar *t, const struct sqk_inode *ino, bool in_buf, bool holes)
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
static int tar_header(struct sqk_tar *t)
{
	if (archive_write_header(t->a, t->ent) >= ARCHIVE_WARN)
		return 0;
	sqk_tar_archive_err(t, "cannot write the entry header");
	return -1;
}

/* Regular file: size, sparse map (when the image stores some block as a hole), header, data.
 * A file that fits in one chunk is read before its header: its corrupt block fails the
 * archive before the entry starts. */
static int tar_file(struct sqk_tar *t, const struct sqk_inode *ino)
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
	sqk_progress_add(&t->pr, 1, 0);
	return 0;
}

/* The type-specific part of a non-file entry, then its header. */
static int tar_special(struct sqk_tar *t, const struct sqk_inode *ino)
{
	char target[SQK_SYMLINK_MAX + 1];
	size_t len;
	int r;

	if (sqk_cmd_is(ino, SQK_T_SYMLINK)) {
		r = sqk_readlink(t->c.img, ino, target, sizeof(target), &len);
		if (!r && len >= sizeof(target))
			r = SQK_ETOOBIG;
		if (r) {
			sqk_cmd_err(&t->c, t->path, r, "cannot read symlink");
			return -1;
		}
		archive_entry_copy_symlink(t->ent, target);
	} else if (sqk_cmd_is(ino, SQK_T_BLKDEV) || sqk_cmd_is(ino, SQK_T_CHRDEV)) {
		archive_entry_set_rdevmajor(t->ent, sqk_rdev_major(ino->rdev));
		archive_entry_set_rdevminor(t->ent, sqk_rdev_minor(ino->rdev));
	}
	return tar_header(t);
}

/* Writes the entry of ino under the archive name name. */
static int tar_entry(struct sqk_tar *t, const struct sqk_inode *ino, const char *name)
{
	const char *first = NULL;

	if (sqk_cmd_is(ino, SQK_T_SOCKET)) {
		sqk_cmd_err(&t->c, t->path, 0, "warning: socket skipped (a tar archive cannot "
			    "hold sockets)");
		return 0;
	}
	if (!sqk_cmd_is(ino, SQK_T_DIR) && ino->nlink > 1 &&
	    tar_link_first(t, ino->ino, name, &first)) {
		sqk_cmd_err(&t->c, t->path, SQK_ENOMEM, "cannot record a hard link");
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
	return sqk_cmd_is(ino, SQK_T_FILE) ? tar_file(t, ino) : tar_special(t, ino);
}

/* A directory is walked once: a second visit is a loop (or a second name) in a corrupt image. */
static int tar_mark_dir(struct sqk_tar *t, const struct sqk_inode *dir, unsigned depth)
{
	/* dir is at depth `depth`, its entries one more: the recursion (and the stack) is
	 * bounded by the policy of common/depth.h whatever the image says */
	if (depth >= SQK_DEPTH_MAX && dir->size > 3) {
		char b[2 * SQK_DEPTH_SHOWN + 4];
		sqk_cmd_err(&t->c, sqk_depth_shown(t->path, b), SQK_ETOOBIG,
			    "directories nested deeper than %u levels (the most sqk walks)",
			    SQK_DEPTH_MAX);
		return -1;
	}
	if (!sqk_cmd_ino_mark(t->dir_seen, sqk_image_super(t->c.img)->inode_count, dir->ino)) {
		sqk_cmd_err(&t->c, t->path, SQK_ECORRUPT, "directory inode %u reached twice "
			    "(a directory loop)", dir->ino);
		return -1;
	}
	return 0;
}

/* Writes the entries of dir (t->path) and, depth first, of its subdirectories. */
static int tar_dir(struct sqk_tar *t, const struct sqk_inode *dir, unsigned depth)
{
	struct sqk_dir_iter it;
	struct sqk_dirent d;
	struct sqk_inode ino;
	size_t keep = t->plen;
	int r;

	if (tar_mark_dir(t, dir, depth))
		return -1;
	r = sqk_dir_iter_init(t->c.img, dir, &it);
	while (r == 0 && (r = sqk_dir_iter_next(&it, &d)) == 1) {
		if (tar_interrupted(t))
			return -1;
		if (tar_path_push(t, d.name, d.name_len)) {
			sqk_cmd_err(&t->c, t->path, SQK_ENOMEM, "cannot extend the path");
			return -1;
		}
		r = sqk_inode_get(t->c.img, d.ref, &ino);
		if (r) {
			sqk_cmd_err(&t->c, t->path, r, "cannot read inode");
			return -1;
		}
		if (tar_entry(t, &ino, t->path + t->rel) ||
		    (sqk_cmd_is(&ino, SQK_T_DIR) && tar_dir(t, &ino, depth + 1)))
			return -1;
		tar_path_pop(t, keep);
		r = 0;
	}
	if (r < 0) {
		sqk_cmd_err(&t->c, t->path, r, "cannot list directory");
		return -1;
	}
	return 0;
}

int sqk_tar_walk(struct sqk_tar *t, const struct sqk_inode *top)
{
	uint32_t count = sqk_image_super(t->c.img)->inode_count;

	t->block_size = sqk_image_super(t->c.img)->block_size;
	t->dir_seen = calloc(sqk_cmd_ino_set_bytes(count), 1);
	t->ent = archive_entry_new();
	t->buf = malloc(SQK_TAR_CHUNK);
	t->words = tar_grow(NULL, &t->capwords, 1024, sizeof(*t->words));
	if (!t->dir_seen || !t->ent || !t->buf || !t->words) {
		sqk_cmd_err(&t->c, NULL, SQK_ENOMEM, "cannot allocate the walk's tables");
		return -1;
	}
	if (tar_entry(t, top, t->top_name))
		return -1;
	return sqk_cmd_is(top, SQK_T_DIR) ? tar_dir(t, top, 0) : 0;
}
