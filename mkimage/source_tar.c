/* SPDX-License-Identifier: BSD-2-Clause */
/* A tar stream as a source, read with libarchive: ustar, GNU and pax, every sparse form, SCHILY and
 * LIBARCHIVE xattrs, hard links, long names, concatenated archives, compressed with any filter
 * libarchive knows (gzip, xz, zstd, bzip2, lz4...). File content is handed to the builder as it
 * arrives; nothing is staged. Names are made relative and confined to the image: a leading '/'
 * and "./" go, ".." is resolved and cannot climb above the root (as an extraction confines it).
 * Names are bytes, whatever the charset; owners are the numeric ids (not the user names). Zero
 * bytes of input are an error (a producer that failed), an archive of zero blocks a root. */
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/bytes.h"
#include "common/depth.h"
#include "sqk/error.h"
#include "common/format.h"
#include "common/grow.h"
#include "mk.h"
#include "source.h"

struct tar_xattr;

/* The decompressed stream is copied from the raw reader (every filter, format "raw") in chunks
 * of at least FEED_CHUNK bytes (but the last) and handed to a tar reader, one per archive of a
 * concatenation. When a tar reader meets its end-of-archive, what it was handed and did not
 * consume lies in the last two regions handed (it reads ahead a block or two at most): that is
 * kept ("pending") and handed first to the next reader, if a tar header follows. */
#define FEED_CHUNK (1u << 16)

struct feed_region {
	const uint8_t *p;
	int64_t at;                /* stream offset of p[0] */
	size_t len;
};

struct tar_source {
	struct mk_source base;
	struct archive *a;         /* the tar reader of the current archive */
	struct archive *raw;       /* the input through its filters */
	uint8_t *chunk[2];         /* the last two chunks pulled from raw */
	size_t chunk_cap[2];
	int cur;                   /* chunk pulled last */
	uint8_t *pend;             /* bytes pend_at.. of the stream, handed before any new chunk */
	size_t pend_len, pend_off, pend_cap;
	int64_t pend_at;           /* stream offset of pend[pend_off] */
	int64_t pulled;            /* bytes pulled from raw so far */
	int64_t start;             /* stream offset of the current tar reader's first byte */
	struct feed_region last[2]; /* the last two regions handed to a tar reader, [1] newest */
	bool raw_eof;
	char shown[2 * SQK_DEPTH_SHOWN + 4]; /* the entry as messages name it (origin_shown) */
	const char *name;          /* the archive as messages name it */
	struct archive_entry *ae;  /* current entry (owned by a) */
	char *path, *link, *origin;
	size_t path_cap, link_cap, origin_cap;
	int64_t header_at;         /* offset of the current entry's header in the stream */
	struct mk_xattr_kv *kv;    /* the current entry's xattrs, */
	struct tar_xattr *xa;      /* as read */
	size_t kv_cap, xa_cap;
	/* content of the current file: the data block libarchive gave last */
	const uint8_t *blk;
	size_t blk_len;
	int64_t blk_off;
	bool eof;
	bool warned_dotdot;
};

/* The current entry for messages: a name of thousands of levels by its two ends. */
static const char *origin_shown(struct tar_source *t)
{
	return depth_shown(t->origin ? t->origin : "", t->shown);
}

static int64_t stream_pos(struct tar_source *t)
{
	return t->start + archive_filter_bytes(t->a, 0);
}

static int archive_err(struct tar_source *t)
{
	return archive_errno(t->a) == ENOMEM ? SQK_ENOMEM : SQK_ECORRUPT;
}

/* An error while the current entry's content was read: names the entry, its header's offset
 * and how far the stream got (offsets are in the tar stream, after decompression). */
static int fail_archive(struct mk_ctx *c, struct tar_source *t, const char *what)
{
	const char *msg = archive_error_string(t->a);
	return mk_fail(c, archive_err(t), "tar '%s': '%s' (header at offset %lld): %s at offset "
		       "%lld: %s", t->name, origin_shown(t), (long long)t->header_at,
		       what, (long long)stream_pos(t), msg ? msg : "unreadable");
}

/* A header libarchive could not read: named by its offset and the entry before it (a damaged
 * header has no name to trust). After a fatal error libarchive no longer tells the header's
 * position; the stream then stopped at it (a header is read whole or not at all). */
static int fail_header(struct mk_ctx *c, struct tar_source *t)
{
	const char *msg = archive_error_string(t->a);
	int64_t at = archive_read_header_position(t->a);
	at = at < 0 ? -1 : t->start + at;
	if (at < 0 || at < t->header_at)
		at = stream_pos(t);
	bool prev = t->origin && *t->origin;
	return mk_fail(c, archive_err(t), "tar '%s': bad entry header at offset %lld (%s%s%s): %s",
		       t->name, (long long)at, prev ? "after '" : "the first entry",
		       prev ? origin_shown(t) : "", prev ? "'" : "", msg ? msg : "unreadable");
}

static int grow_str(struct mk_ctx *c, char **buf, size_t *cap, size_t need)
{
	return mk_grow(c, buf, cap, need, 1);
}

/* Writes the confined relative form of name into *out: components "" and "." dropped, ".."
 * removes the previous one and is dropped at the root. */
static int confine(struct mk_ctx *c, struct tar_source *t, const char *name, char **out,
		   size_t *cap)
{
	size_t len = strlen(name), o = 0;
	int err = grow_str(c, out, cap, len + 1);
	if (err)
		return err;
	char *p = *out;
	for (size_t i = 0; i < len;) {
		size_t j = i;
		while (j < len && name[j] != '/')
			j++;
		size_t n = j - i;
		if (n == 2 && name[i] == '.' && name[i + 1] == '.') {
			if (!o && !t->warned_dotdot) {
				char b[2 * SQK_DEPTH_SHOWN + 4];
				fprintf(stderr,
					"sqk mkimage: tar '%s': '%s' climbs above the root; "
					"kept inside it\n",
					t->name, depth_shown(name, b));
				t->warned_dotdot = true;
			}
			while (o && p[o - 1] != '/')
				o--;
			if (o)
				o--;
		} else if (n && !(n == 1 && name[i] == '.')) {
			if (o)
				p[o++] = '/';
			memcpy(p + o, name + i, n);
			o += n;
		}
		i = j + 1;
	}
	p[o] = 0;
	return 0;
}

/* One xattr as read, with its place in the header (a later one of the same name wins). */
struct tar_xattr {
	struct mk_xattr_kv kv;
	size_t at;
};

static int xattr_cmp(const void *a, const void *b)
{
	const struct tar_xattr *x = a, *y = b;
	int r = strcmp(x->kv.name, y->kv.name);
	return r ? r : x->at < y->at ? -1 : x->at > y->at;
}

/* The entry's xattrs, each name once: bsdtar's pax headers carry every xattr twice (as
 * LIBARCHIVE.xattr.* and SCHILY.xattr.*), and libarchive gives both. */
static int entry_xattrs(struct mk_ctx *c, struct tar_source *t, struct mk_entry *e)
{
	size_t n = (size_t)archive_entry_xattr_reset(t->ae);
	if (!n)
		return 0;
	int err = mk_grow(c, &t->kv, &t->kv_cap, n, sizeof(*t->kv));
	if (err || (err = mk_grow(c, &t->xa, &t->xa_cap, n, sizeof(*t->xa))))
		return err;
	size_t got = 0, k = 0;
	const char *name;
	const void *value;
	size_t size;
	while (got < n && archive_entry_xattr_next(t->ae, &name, &value, &size) == ARCHIVE_OK) {
		t->xa[got] =
			(struct tar_xattr){ { .name = name, .value = value, .size = size }, got };
		got++;
	}
	qsort(t->xa, got, sizeof(*t->xa), xattr_cmp);
	for (size_t i = 0; i < got; i++)
		if (i + 1 == got || strcmp(t->xa[i].kv.name, t->xa[i + 1].kv.name))
			t->kv[k++] = t->xa[i].kv;
	e->xattrs = t->kv;
	e->nxattrs = k;
	return 0;
}

static int fill_entry(struct mk_ctx *c, struct tar_source *t, struct mk_entry *e)
{
	struct archive_entry *ae = t->ae;
	memset(e, 0, sizeof(*e));
	e->path = t->path;
	e->origin = t->origin;
	e->mode = archive_entry_mode(ae);
	int64_t uid = archive_entry_uid(ae), gid = archive_entry_gid(ae);
	if (uid < 0 || uid > UINT32_MAX || gid < 0 || gid > UINT32_MAX)
		return mk_fail(c, SQK_ETOOBIG, "tar '%s': '%s' at offset %lld: owner %lld:%lld is "
			       "not storable", t->name, origin_shown(t), (long long)t->header_at,
			       (long long)uid, (long long)gid);
	e->uid = (uint32_t)uid;
	e->gid = (uint32_t)gid;
	e->mtime = archive_entry_mtime(ae);
	const char *hl = archive_entry_hardlink(ae);
	if (hl) {
		int err = confine(c, t, hl, &t->link, &t->link_cap);
		if (err)
			return err;
		/* the tree would find the entry's own node as the target (and extracting it
		 * fails too) */
		if (!strcmp(t->link, t->path))
			return mk_fail(c, SQK_EINVAL, "tar '%s': '%s' at offset %lld: hard link to "
				       "itself", t->name, origin_shown(t), (long long)t->header_at);
		e->link = t->link;
		return entry_xattrs(c, t, e);
	}
	switch (archive_entry_filetype(ae)) {
	case AE_IFREG:
		e->size = archive_entry_size(ae) > 0 ? (uint64_t)archive_entry_size(ae) : 0;
		e->maybe_sparse = archive_entry_sparse_count(ae) > 0;
		break;
	case AE_IFLNK:
		e->target = archive_entry_symlink(ae);
		if (!e->target)
			e->target = "";
		break;
	case AE_IFCHR:
	case AE_IFBLK:
		e->dev_major = (uint32_t)archive_entry_rdevmajor(ae);
		e->dev_minor = (uint32_t)archive_entry_rdevminor(ae);
		break;
	case AE_IFDIR:
	case AE_IFIFO:
	case AE_IFSOCK:
		break;
	default:
		return mk_fail(c, SQK_EUNSUPPORTED, "tar '%s': '%s' at offset %lld: unsupported "
			       "entry type", t->name, origin_shown(t), (long long)t->header_at);
	}
	return entry_xattrs(c, t, e);
}

/* ---- the stream under the tar readers ---- */

/* Pulls the next chunk of the decompressed stream into the chunk buffer not pulled last (the
 * tar reader may still read the other): *len 0 at the end. -1: raw's error, -2: no memory. */
static int pull_chunk(struct tar_source *t, const uint8_t **out, size_t *len)
{
	int k = 1 - t->cur;
	size_t got = 0;
	while (!t->raw_eof && got < FEED_CHUNK) {
		const void *b;
		size_t n;
		la_int64_t off;
		int r = archive_read_data_block(t->raw, &b, &n, &off);
		if (r == ARCHIVE_EOF) {
			t->raw_eof = true;
			break;
		}
		if (r != ARCHIVE_OK && r != ARCHIVE_WARN)
			return -1;
		if (got + n > t->chunk_cap[k] &&
		    mem_grow(&t->chunk[k], &t->chunk_cap[k],
			     got + n > 2 * FEED_CHUNK ? got + n : 2 * FEED_CHUNK, 1, 0))
			return -2;
		memcpy(t->chunk[k] + got, b, n);
		got += n;
	}
	t->cur = k;
	t->pulled += (int64_t)got;
	*out = t->chunk[k];
	*len = got;
	return 0;
}

/* libarchive's read callback of the tar readers: the pending bytes, then new chunks. */
static la_ssize_t feed_read(struct archive *a, void *ud, const void **buf)
{
	struct tar_source *t = ud;
	struct feed_region r;
	if (t->pend_off < t->pend_len) {
		r = (struct feed_region){t->pend + t->pend_off, t->pend_at,
					 t->pend_len - t->pend_off};
		t->pend_at += (int64_t)r.len;
		t->pend_off = t->pend_len;
	} else {
		int err = pull_chunk(t, &r.p, &r.len);
		if (err) {
			const char *m = err == -2 ? "out of memory" : archive_error_string(t->raw);
			int e = err == -2 ? ENOMEM : archive_errno(t->raw);
			archive_set_error(a, e > 0 ? e : EIO, "%s", m ? m : "read error");
			return -1;
		}
		r.at = t->pulled - (int64_t)r.len;
	}
	if (r.len) { /* the end of the stream (0 bytes) keeps the last two regions */
		t->last[0] = t->last[1];
		t->last[1] = r;
	}
	*buf = r.p;
	return (la_ssize_t)r.len;
}

/* Makes pend hold the stream from offset from to what was pulled: the bytes a tar reader was
 * handed and did not consume (in the last two regions handed). */
static int keep_unread(struct mk_ctx *c, struct tar_source *t, int64_t from)
{
	size_t need = (size_t)(t->pulled - from);
	uint8_t *np = malloc(need + FEED_CHUNK);
	if (!np)
		return mk_fail(c, SQK_ENOMEM, "out of memory");
	int64_t lo = t->pulled;
	for (int i = 0; i < 2; i++) {
		const struct feed_region *r = &t->last[i];
		int64_t a = r->at > from ? r->at : from, b = r->at + (int64_t)r->len;
		if (r->p && a < b) {
			memcpy(np + (a - from), r->p + (a - r->at), (size_t)(b - a));
			lo = a < lo ? a : lo;
		}
	}
	if (need && lo != from) {
		free(np);
		return mk_fail(c, SQK_ECORRUPT,
			       "tar '%s': the data after the end of the archive "
			       "at offset %lld was lost (internal error)",
			       t->name, (long long)from);
	}
	free(t->pend);
	t->pend = np;
	t->pend_cap = need + FEED_CHUNK;
	t->pend_len = need;
	t->pend_off = 0;
	t->pend_at = from;
	t->last[0] = t->last[1] = (struct feed_region){ 0 };
	return 0;
}

/* Appends chunks to pend until it holds a block past pend_off (or the stream ends). */
static int pend_fill(struct mk_ctx *c, struct tar_source *t)
{
	while (t->pend_len - t->pend_off < 512 && !t->raw_eof) {
		const uint8_t *p;
		size_t n;
		int err = pull_chunk(t, &p, &n);
		/* exact, not mem_grow: pend only ever takes the few chunks up to the next header */
		if (!err && t->pend_len + n > t->pend_cap) {
			uint8_t *np = realloc(t->pend, t->pend_len + n);
			if (np) {
				t->pend = np;
				t->pend_cap = t->pend_len + n;
			} else {
				err = -2;
			}
		}
		if (err)
			return mk_fail(c, err == -2 ? SQK_ENOMEM : SQK_EIO,
				       "cannot read tar '%s': %s", t->name,
				       err == -2 ? "out of memory" : archive_error_string(t->raw));
		memcpy(t->pend + t->pend_len, p, n);
		t->pend_len += n;
	}
	return 0;
}

/* Whether h is a tar header: its checksum (octal, the sum of its bytes with the checksum field
 * taken as spaces, unsigned or, as old tars wrote it, signed) is right. */
static bool tar_header_ok(const uint8_t *h)
{
	unsigned i = 148, digits = 0;
	uint64_t want = 0, u = 0;
	int64_t s = 0;
	while (i < 156 && h[i] == ' ')
		i++;
	for (; i < 156 && h[i] >= '0' && h[i] <= '7'; i++, digits++)
		want = want * 8 + (uint64_t)(h[i] - '0');
	if (!digits || (i < 156 && h[i] && h[i] != ' '))
		return false;
	for (unsigned k = 0; k < 512; k++) {
		uint8_t b = k >= 148 && k < 156 ? ' ' : h[k];
		u += b;
		s += (int8_t)b;
	}
	return want == u || (int64_t)want == s;
}

/* What follows the end of the archive: read to the end (a pipe's writer is not cut off),
 * counted, and ignored with a warning (GNU tar and bsdtar stop at the end-of-archive; tar -i
 * reads on). header: it starts with a tar header, so it may be a concatenated archive. */
static int ignore_rest(struct mk_ctx *c, struct tar_source *t, int64_t at, bool header)
{
	uint64_t n = t->pend_len - t->pend_off;
	bool zeros = bytes_all_zero(t->pend + t->pend_off, n);
	const uint8_t *p;
	size_t len;
	int err = 0;
	while (!t->raw_eof && !(err = pull_chunk(t, &p, &len))) {
		n += len;
		zeros = zeros && bytes_all_zero(p, len);
	}
	if (err)
		return mk_fail(c, err == -2 ? SQK_ENOMEM : SQK_EIO, "cannot read tar '%s': %s",
			       t->name, err == -2 ? "out of memory" : archive_error_string(t->raw));
	t->pend_off = t->pend_len;
	if (zeros)
		fprintf(stderr,
			"sqk mkimage: tar '%s': %llu zero byte%s after the end of the "
			"archive (offset %lld) %s not a whole 512-byte block: ignored\n",
			t->name, (unsigned long long)n, n == 1 ? "" : "s", (long long)at,
			n == 1 ? "is" : "are");
	else if (header)
		fprintf(stderr, "sqk mkimage: tar '%s': %llu bytes after the end of the archive "
			"(offset %lld) start with a tar header: ignored, as GNU tar and bsdtar do "
			"(--ignore-zeros reads concatenated archives)\n",
			t->name, (unsigned long long)n, (long long)at);
	else
		fprintf(stderr, "sqk mkimage: tar '%s': %llu byte%s after the end of the archive "
			"(offset %lld) %s not a tar header: ignored, as GNU tar and bsdtar do\n",
			t->name, (unsigned long long)n, n == 1 ? "" : "s", (long long)at,
			n == 1 ? "is" : "are");
	return 0;
}

static int open_tar_reader(struct mk_ctx *c, struct tar_source *t);

/* The tar reader met an end-of-archive (one or two zero blocks, or the end of the stream).
 * Zero blocks after it are skipped (record padding); with --ignore-zeros a tar header then
 * starts a concatenated archive, read on (as `tar -i` does); anything else ends the input, with
 * a warning unless it is padding. Returns 0 with a reader for the next archive, 1 at the end. */
static int after_end(struct mk_ctx *c, struct tar_source *t)
{
	int64_t end = stream_pos(t);
	int err = keep_unread(c, t, end);
	archive_read_free(t->a);
	t->a = NULL;
	while (!err) {
		if ((err = pend_fill(c, t)))
			break;
		size_t avail = t->pend_len - t->pend_off;
		const uint8_t *h = t->pend + t->pend_off;
		if (!avail)
			return 1;
		if (avail >= 512 && bytes_all_zero(h, 512)) {
			t->pend_off += 512;
			t->pend_at += 512;
			end += 512;
		} else {
			bool header = avail >= 512 && tar_header_ok(h);
			if (header && c->src->tar_ignore_zeros) {
				t->start = end;
				return open_tar_reader(c, t);
			}
			err = ignore_rest(c, t, end, header);
			return err ? err : 1;
		}
	}
	return err;
}

/* A tar reader for the archive starting at t->start (pend, then the chunks to come). */
static int open_tar_reader(struct mk_ctx *c, struct tar_source *t)
{
	t->a = archive_read_new();
	if (!t->a)
		return mk_fail(c, SQK_ENOMEM, "out of memory");
	archive_read_support_format_tar(t->a);
	archive_read_support_format_gnutar(t->a);
	if (archive_read_open(t->a, t, NULL, feed_read, NULL) == ARCHIVE_OK)
		return 0;
	/* EILSEQ is libarchive's "file format" errno where there is no EFTYPE (Linux) */
	int e = archive_errno(t->a);
	bool fmt = e == EILSEQ;
	const char *msg = archive_error_string(t->a);
	if (t->start)
		return mk_fail(c, fmt ? SQK_ECORRUPT : SQK_EIO,
			       "tar '%s': the archive concatenated "
			       "at offset %lld: %s",
			       t->name, (long long)t->start, msg ? msg : "unreadable");
	return mk_fail(c, fmt ? SQK_ECORRUPT : SQK_EIO, "cannot read tar '%s': %s%s%s%s", t->name,
		       fmt ? "not a tar archive (" : "", msg ? msg : "unreadable",
		       fmt ? ")" : e > 0 ? ": " : "", fmt || e <= 0 ? "" : strerror(e));
}

static int tar_next(struct mk_source *s, struct mk_ctx *c, struct mk_entry *e)
{
	struct tar_source *t = (struct tar_source *)s;
	if (!t->a)
		return 1;
	int r = archive_read_next_header(t->a, &t->ae);
	while (r == ARCHIVE_EOF) {
		int end = after_end(c, t);
		if (end)
			return end;
		r = archive_read_next_header(t->a, &t->ae);
	}
	if (r != ARCHIVE_OK && r != ARCHIVE_WARN)
		return fail_header(c, t);
	t->header_at = t->start + archive_read_header_position(t->a);
	const char *name = archive_entry_pathname(t->ae);
	if (!name)
		return fail_header(c, t);
	/* names are taken as bytes (libarchive keeps them as they are when a pax UTF-8 name does
	 * not convert to the locale's charset), so a failed conversion is no loss */
	const char *w = archive_error_string(t->a);
	int err = grow_str(c, &t->origin, &t->origin_cap, strlen(name) + 1);
	if (err)
		return err;
	strcpy(t->origin, name);
	if (r == ARCHIVE_WARN && !strstr(w ? w : "", "converted"))
		fprintf(stderr, "sqk mkimage: tar '%s': '%s' at offset %lld: %s\n", t->name,
			origin_shown(t), (long long)t->header_at, w ? w : "warning");
	if ((err = confine(c, t, name, &t->path, &t->path_cap)))
		return err;
	t->blk = NULL;
	t->blk_len = 0;
	t->blk_off = 0;
	t->eof = false;
	return fill_entry(c, t, e);
}

/* The next data block of the current file (holes lie between blocks). */
static int next_block(struct mk_ctx *c, struct tar_source *t)
{
	const void *b;
	size_t len;
	la_int64_t off;
	int r = archive_read_data_block(t->a, &b, &len, &off);
	if (r == ARCHIVE_EOF) {
		t->eof = true;
		t->blk = NULL;
		t->blk_len = 0;
		return 0;
	}
	if (r != ARCHIVE_OK && r != ARCHIVE_WARN)
		return fail_archive(c, t, "content");
	t->blk = b;
	t->blk_len = len;
	t->blk_off = off;
	return 0;
}

static int tar_read(struct mk_source *s, struct mk_ctx *c, uint64_t off, void *buf, size_t len)
{
	struct tar_source *t = (struct tar_source *)s;
	uint8_t *p = buf;
	while (len) {
		if (!t->eof && (!t->blk || (uint64_t)t->blk_off + t->blk_len <= off)) {
			int err = next_block(c, t);
			if (err)
				return err;
			continue;
		}
		if (t->eof || (uint64_t)t->blk_off > off) {
			/* a hole up to the next block (or the end) reads as zeros */
			uint64_t upto = t->eof ? off + len : (uint64_t)t->blk_off;
			size_t n = upto - off < len ? (size_t)(upto - off) : len;
			if (t->eof && archive_entry_size(t->ae) >= 0 &&
			    off + len > (uint64_t)archive_entry_size(t->ae))
				return mk_fail(c, SQK_ECORRUPT,
					       "tar '%s': '%s' at offset %lld: data "
					       "ends early",
					       t->name, origin_shown(t), (long long)t->header_at);
			memset(p, 0, n);
			p += n;
			off += n;
			len -= n;
			continue;
		}
		size_t at = (size_t)(off - (uint64_t)t->blk_off);
		size_t n = t->blk_len - at < len ? t->blk_len - at : len;
		memcpy(p, t->blk + at, n);
		p += n;
		off += n;
		len -= n;
	}
	return 0;
}

static int tar_data_at(struct mk_source *s, struct mk_ctx *c, uint64_t off, uint64_t *data)
{
	struct tar_source *t = (struct tar_source *)s;
	while (!t->eof && (!t->blk || (uint64_t)t->blk_off + t->blk_len <= off)) {
		int err = next_block(c, t);
		if (err)
			return err;
	}
	if (t->eof)
		*data = UINT64_MAX;
	else
		*data = (uint64_t)t->blk_off > off ? (uint64_t)t->blk_off : off;
	return 0;
}

/* The whole entry must have been there (a truncated archive fails here, not silently). */
static int tar_end_file(struct mk_source *s, struct mk_ctx *c)
{
	struct tar_source *t = (struct tar_source *)s;
	while (!t->eof) {
		int err = next_block(c, t);
		if (err)
			return err;
	}
	return 0;
}

static void tar_destroy(struct mk_source *s)
{
	struct tar_source *t = (struct tar_source *)s;
	if (t->a)
		archive_read_free(t->a);
	if (t->raw)
		archive_read_free(t->raw);
	free(t->chunk[0]);
	free(t->chunk[1]);
	free(t->pend);
	free(t->path);
	free(t->link);
	free(t->origin);
	free(t->kv);
	free(t->xa);
	free(t);
}

static const struct mk_source_ops tar_ops = {
	.rereadable = false,
	.next = tar_next,
	.read = tar_read,
	.data_at = tar_data_at,
	.end_file = tar_end_file,
	.destroy = tar_destroy,
};

int mk_source_tar_create(struct mk_ctx *c, const char *path, struct mk_source **out)
{
	*out = NULL;
	struct tar_source *t = calloc(1, sizeof(*t));
	if (!t)
		return mk_fail(c, SQK_ENOMEM, "out of memory");
	t->base.ops = &tar_ops;
	bool stdin_ = !path || !strcmp(path, "-");
	t->name = stdin_ ? "(standard input)" : path;
	/* Pax names are UTF-8: with a UTF-8 locale libarchive gives their bytes unchanged (in the C
	 * locale it would try to convert them to ASCII). SquashFS names are bytes, so is the image.
	 */
	const char *ct = setlocale(LC_CTYPE, NULL);
	if (!ct || !strcmp(ct, "C") || !strcmp(ct, "POSIX"))
		setlocale(LC_CTYPE, "C.UTF-8");
	t->raw = archive_read_new();
	if (!t->raw) {
		tar_destroy(&t->base);
		return mk_fail(c, SQK_ENOMEM, "out of memory");
	}
	archive_read_support_filter_all(t->raw);
	archive_read_support_format_raw(t->raw);
	archive_read_support_format_empty(t->raw);
	struct archive_entry *ae;
	int err = 0;
	if (archive_read_open_filename(t->raw, stdin_ ? NULL : path, 1u << 16) != ARCHIVE_OK ||
	    archive_read_next_header(t->raw, &ae) == ARCHIVE_FATAL) {
		int e = archive_errno(t->raw);
		const char *msg = archive_error_string(t->raw);
		err =
		    mk_fail(c, SQK_EIO, "cannot read tar '%s': %s%s%s", t->name,
			    msg ? msg : "unreadable", e > 0 ? ": " : "", e > 0 ? strerror(e) : "");
	} else if (archive_format(t->raw) == ARCHIVE_FORMAT_EMPTY) {
		/* no byte at all is a failed producer more likely than an archive (an empty tar
		 * is 10 KiB of zeros): an error, not an empty image */
		err = mk_fail(c, SQK_ECORRUPT, "tar '%s': empty input (0 bytes): not a tar archive",
			      t->name);
	} else {
		err = open_tar_reader(c, t);
	}
	if (err) {
		tar_destroy(&t->base);
		return err;
	}
	*out = &t->base;
	return 0;
}
