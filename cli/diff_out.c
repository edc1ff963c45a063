/* SPDX-License-Identifier: BSD-2-Clause */
/* sqk diff: what differs, as sqfsdiff's lines ("/a has different permissions", "< gone",
 * "regular file /f differs", the -S superblock report) or as one JSON object with an item per
 * difference (path, field, old and new values). */
#include "diff.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "common/compressor.h"
#include "common/json.h"

/* sqfsdiff's text of each kind: prefix, the path ("/" + relative path; bare for < and >),
 * suffix. NULL: no line (DK_GID when the uid differed too: one "ownership" line). */
static const struct {
	const char *field; /* JSON */
	const char *pre, *post;
	bool slash;
} dk_text[] = {
	[DK_REMOVED] = { "entry", "< ", "", false },
	[DK_ADDED] = { "entry", "> ", "", false },
	[DK_TYPE] = { "type", "", " has a different type", true },
	[DK_PERM] = { "mode", "", " has different permissions", true },
	[DK_UID] = { "uid", "", " has different ownership", true },
	[DK_GID] = { "gid", "", " has different ownership", true },
	[DK_GID2] = { "gid", NULL, NULL, true },
	[DK_MTIME] = { "mtime", "", " has a different timestamp", true },
	[DK_INODE] = { "inode", "", " has a different inode number", true },
	[DK_NLINK] = { "nlink", "", " has a different link count", true },
	[DK_DEVICE] = { "rdev", "", " has different device number", true },
	[DK_TARGET] = { "target", "", " has a different link target", true },
	[DK_SIZE] = { "size", "regular file ", " differs", true },
	[DK_CONTENTS] = { "contents", "regular file ", " differs", true },
	[DK_XATTR] = { "xattr", "", NULL, true },
};

const char *diff_type_name(uint32_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFDIR: return "dir";
	case S_IFREG: return "file";
	case S_IFLNK: return "symlink";
	case S_IFBLK: return "blockdev";
	case S_IFCHR: return "chardev";
	case S_IFIFO: return "fifo";
	case S_IFSOCK: return "socket";
	default: return "unknown";
	}
}

/* len bytes of s inside a JSON string, escaped as json_put_str does, NUL bytes included. */
static void dj_esc(const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;

	for (size_t i = 0; i < len; i++) {
		if (p[i] == '"' || p[i] == '\\')
			printf("\\%c", p[i]);
		else if (p[i] < 0x20 || p[i] >= 0x7F)
			printf("\\u%04x", p[i]);
		else
			putchar(p[i]);
	}
}

static void dj_bytes(const char *s, size_t len)
{
	putchar('"');
	dj_esc(s, len);
	putchar('"');
}

static void dj_val(const struct diff_val *v)
{
	if (!v || v->kind == DV_NULL)
		fputs("null", stdout);
	else if (v->kind == DV_NUM)
		printf("%llu", (unsigned long long)v->num);
	else if (v->kind == DV_MODE)
		printf("\"%04llo\"", (unsigned long long)v->num);
	else if (v->kind == DV_STR)
		json_put_str(stdout, v->str);
	else
		dj_bytes(v->str, v->len);
}

/* One JSON item; path NULL for a superblock field. */
static void dj_item(struct diff *d, const char *path, const char *field, const char *name,
		    const struct diff_val *old, const struct diff_val *new_, const uint64_t *off)
{
	printf("%s\n    {\"path\": ", d->nreported++ ? "," : "");
	if (path) {
		fputs("\"/", stdout);
		dj_esc(path, strlen(path));
		putchar('"');
	} else {
		fputs("null", stdout);
	}
	printf(", \"field\": \"%s\"", field);
	if (name) {
		fputs(", \"name\": ", stdout);
		json_put_str(stdout, name);
	}
	fputs(", \"old\": ", stdout);
	dj_val(old);
	fputs(", \"new\": ", stdout);
	dj_val(new_);
	if (off)
		printf(", \"offset\": %llu", (unsigned long long)*off);
	putchar('}');
}

static void dt_line(enum diff_kind k, const char *path, const char *name,
		    const struct diff_val *old, const struct diff_val *new_)
{
	if (k == DK_XATTR) {
		printf("/%s has %s xattr %s\n", path,
		       !old || old->kind == DV_NULL ? "an added"
		       : !new_ || new_->kind == DV_NULL ? "a removed" : "a different", name);
		return;
	}
	if (!dk_text[k].pre)
		return;
	printf("%s%s%s%s\n", dk_text[k].pre, dk_text[k].slash ? "/" : "", path, dk_text[k].post);
}

void diff_out(struct diff *d, enum diff_kind k, const char *path, const char *name,
	      const struct diff_val *old, const struct diff_val *new_, uint64_t off)
{
	d->different = true;
	if (d->flags & DIFF_QUIET)
		return;
	if (d->flags & DIFF_JSON)
		dj_item(d, path, dk_text[k].field, name, old, new_,
			k == DK_CONTENTS ? &off : NULL);
	else
		dt_line(k, path, name, old, new_);
}

void diff_json_begin(const struct diff *d)
{
	if ((d->flags & (DIFF_JSON | DIFF_QUIET)) != DIFF_JSON)
		return;
	fputs("{\n  \"old\": ", stdout);
	json_put_str(stdout, d->a.c.shown ? d->a.c.shown : d->a.arg);
	fputs(",\n  \"new\": ", stdout);
	json_put_str(stdout, d->b.c.shown ? d->b.c.shown : d->b.arg);
	fputs(",\n  \"differences\": [", stdout);
}

void diff_json_end(const struct diff *d, int status)
{
	if ((d->flags & (DIFF_JSON | DIFF_QUIET)) != DIFF_JSON)
		return;
	printf("%s],\n  \"different\": %s,\n  \"status\": %d\n}\n", d->nreported ? "\n  " : "",
	       d->different ? "true" : "false", status);
}

/* The superblock flags as sqfsdiff names them (SQK_FLAG_CHECK is not among them). */
static const struct {
	uint16_t mask;
	const char *name;
} ds_flags[] = {
	{ SQK_FLAG_UNCOMP_INODES, "uncompressed inodes" },
	{ SQK_FLAG_UNCOMP_DATA, "uncompressed data" },
	{ SQK_FLAG_UNCOMP_FRAGS, "uncompressed fragments" },
	{ SQK_FLAG_NO_FRAGS, "no fragments" },
	{ SQK_FLAG_ALWAYS_FRAGS, "always fragments" },
	{ SQK_FLAG_DUPLICATES, "no duplicates" },
	{ SQK_FLAG_EXPORTABLE, "exportable" },
	{ SQK_FLAG_UNCOMP_XATTRS, "uncompressed xattrs" },
	{ SQK_FLAG_NO_XATTRS, "no xattrs" },
	{ SQK_FLAG_COMP_OPTS, "compressor options" },
	{ SQK_FLAG_UNCOMP_IDS, "uncompressed ids" },
};

/* A counted field: "NAME: +N" (text) or a JSON item named field. */
static void ds_value(struct diff *d, const char *name, const char *field, uint64_t a,
		     uint64_t b)
{
	struct diff_val va = { DV_NUM, a, NULL, 0 }, vb = { DV_NUM, b, NULL, 0 };

	if (a == b)
		return;
	if (d->flags & DIFF_JSON)
		dj_item(d, NULL, field, NULL, &va, &vb, NULL);
	else
		printf("%s: %c%llu\n", name, a < b ? '+' : '-',
		       (unsigned long long)(a < b ? b - a : a - b));
}

/* A table's position: "Location of NAME differs" (text) or a JSON item. */
static void ds_where(struct diff *d, const char *name, const char *field, uint64_t a,
		     uint64_t b)
{
	struct diff_val va = { DV_NUM, a, NULL, 0 }, vb = { DV_NUM, b, NULL, 0 };

	if (a == b)
		return;
	if (d->flags & DIFF_JSON)
		dj_item(d, NULL, field, NULL, &va, &vb, NULL);
	else
		printf("Location of %s differs\n", name);
}

static void ds_flag_lines(struct diff *d, uint16_t a, uint16_t b)
{
	struct diff_val va = { DV_NUM, a, NULL, 0 }, vb = { DV_NUM, b, NULL, 0 };
	uint16_t x = a ^ b;

	if (!x)
		return;
	if (d->flags & DIFF_JSON) {
		dj_item(d, NULL, "super.flags", NULL, &va, &vb, NULL);
		return;
	}
	fputs("flags:\n", stdout);
	for (size_t i = 0; i < sizeof(ds_flags) / sizeof(ds_flags[0]); i++) {
		if (x & ds_flags[i].mask)
			printf("\t%c%s\n", a & ds_flags[i].mask ? '<' : '>', ds_flags[i].name);
		x &= (uint16_t)~ds_flags[i].mask;
	}
	for (unsigned bit = 0; bit < 16; bit++)
		if (x & (1u << bit))
			printf("\t%c additional unknown\n", a & (1u << bit) ? '<' : '>');
}

static void ds_comp(struct diff *d, uint16_t a, uint16_t b)
{
	const char *na = comp_name(a), *nb = comp_name(b);
	struct diff_val va = { DV_STR, 0, na ? na : "unknown", 0 };
	struct diff_val vb = { DV_STR, 0, nb ? nb : "unknown", 0 };

	if (a == b)
		return;
	if (d->flags & DIFF_JSON)
		dj_item(d, NULL, "super.compressor", NULL, &va, &vb, NULL);
	else
		printf("compressor: %s vs %s\n", va.str, vb.str);
}

void diff_super(struct diff *d)
{
	const struct sqk_super *a = sqk_image_super(d->a.c.img), *b = sqk_image_super(d->b.c.img);

	if (!memcmp(a, b, sizeof(*a)))
		return;
	d->different = true;
	if (d->flags & DIFF_QUIET)
		return;
	if (!(d->flags & DIFF_JSON))
		fputs("======== super blocks are different ========\n", stdout);
	ds_value(d, "inode count", "super.inode_count", a->inode_count, b->inode_count);
	ds_value(d, "modification time", "super.mkfs_time", a->mkfs_time, b->mkfs_time);
	ds_value(d, "block size", "super.block_size", a->block_size, b->block_size);
	ds_value(d, "block log", "super.block_log", a->block_log, b->block_log);
	ds_value(d, "fragment table entries", "super.fragment_count", a->fragment_count,
		 b->fragment_count);
	ds_value(d, "ID table entries", "super.id_count", a->id_count, b->id_count);
	ds_comp(d, a->compressor, b->compressor);
	ds_flag_lines(d, a->flags, b->flags);
	ds_value(d, "total bytes used", "super.bytes_used", a->bytes_used, b->bytes_used);
	ds_where(d, "root inode", "super.root_inode", a->root_inode, b->root_inode);
	ds_where(d, "ID table", "super.id_table_start", a->id_table_start, b->id_table_start);
	ds_where(d, "xattr ID table", "super.xattr_id_table_start", a->xattr_id_table_start,
		 b->xattr_id_table_start);
	ds_where(d, "inode table", "super.inode_table_start", a->inode_table_start,
		 b->inode_table_start);
	ds_where(d, "directory table", "super.directory_table_start", a->directory_table_start,
		 b->directory_table_start);
	ds_where(d, "fragment table", "super.fragment_table_start", a->fragment_table_start,
		 b->fragment_table_start);
	ds_where(d, "export table", "super.export_table_start", a->export_table_start,
		 b->export_table_start);
}
