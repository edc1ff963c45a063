/* SPDX-License-Identifier: BSD-2-Clause */
/* sqk ls --pseudo and --pack: an image's tree as the definitions that build it again.
 *
 * --pseudo writes what unsquashfs -pf writes: one definition per entry (PATH D|R|S|B|C|I TIME
 * MODE UID GID ..., hard links as PATH L FIRST, xattrs as PATH x NAME=VALUE), then the line
 * "# START OF DATA - DO NOT MODIFY" and every file's content in the same stream; each R line
 * names its LENGTH and OFFSET in that data. mksquashfs -pf and sqk mkimage -pf read it back.
 *
 * --pack writes what rdsquashfs -d writes: a gensquashfs pack file (file, dir, nod, slink, pipe,
 * sock) whose file lines take their content from a tree extracted elsewhere (--pack-root, as
 * rdsquashfs -p, or gensquashfs -D). Unlike rdsquashfs, a second name of a file is a link line
 * (the link survives the round trip) and a root that is not 0755 0 0 gets a dir / line. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/grow.h"
#include "ls_dump.h"

struct dump {
	struct cmd *c;
	FILE *out;
	enum ls_dump_kind kind;
	const char *root;         /* pack: prefix of input paths, or NULL */
	const char *where;        /* the listed PATH, for messages */
	char **first;             /* inode number -> the first path of a file with links (owned) */
	uint32_t nfirst;
	struct sqk_inode *files;  /* pseudo: the files whose data follows, in order (owned) */
	size_t nfiles, cap;
	uint64_t offset;          /* pseudo: where the next file's data starts */
};

/* unsquashfs's escaping of a name: '"', '\' and white space get a backslash. */
static void put_pseudo_name(FILE *o, const char *p)
{
	if (!*p) {
		fputc('/', o);
		return;
	}
	for (; *p; p++) {
		if (*p == '"' || *p == '\\' || isspace((unsigned char)*p))
			fputc('\\', o);
		fputc(*p, o);
	}
}

/* gensquashfs's PATH: bare, or quoted (with \" and \\) when it has white space or '"'. */
static void put_pack_name(FILE *o, const char *p)
{
	if (!*p) {
		fputc('/', o);
		return;
	}
	if (!strpbrk(p, " \t\"")) {
		fputs(p, o);
		return;
	}
	fputc('"', o);
	for (; *p; p++) {
		if (*p == '"' || *p == '\\')
			fputc('\\', o);
		fputc(*p, o);
	}
	fputc('"', o);
}

/* unsquashfs's xattr value: as is when printable, else 0t with \ooo for the rest and '\'. */
static void put_xattr_value(FILE *o, const unsigned char *v, size_t n)
{
	bool printable = true;
	for (size_t i = 0; i < n; i++)
		printable &= v[i] >= 32 && v[i] <= 126;
	if (printable) {
		fwrite(v, 1, n, o);
		return;
	}
	fputs("0t", o);
	for (size_t i = 0; i < n; i++)
		if (v[i] < 32 || v[i] > 126 || v[i] == '\\')
			fprintf(o, "\\%03o", v[i]);
		else
			fputc(v[i], o);
}

static int put_xattrs(struct dump *d, const char *path, const struct sqk_inode *ino)
{
	size_t len, vlen;
	char *names = NULL;
	unsigned char *val = NULL;
	int err = ino->xattr_idx == SQK_NONE32 ? 1 : sqk_xattr_list(d->c->img, ino, NULL, 0, &len);
	if (err)
		return err > 0 ? 0 : (cmd_err(d->c, path, err, "cannot list xattrs"), err);
	if (!(names = malloc(len + 1)) || (err = sqk_xattr_list(d->c->img, ino, names, len, &len)))
		goto out;
	for (size_t at = 0; at < len && !err; at += strlen(names + at) + 1) {
		const char *name = names + at;
		err = sqk_xattr_get(d->c->img, ino, name, NULL, 0, &vlen);
		unsigned char *nv = err ? NULL : realloc(val, vlen + 1);
		if (!err && !nv)
			err = SQK_ENOMEM;
		if (!err && !(err = sqk_xattr_get(d->c->img, ino, name, (val = nv), vlen, &vlen))) {
			put_pseudo_name(d->out, path);
			fprintf(d->out, " x %s=", name);
			put_xattr_value(d->out, val, vlen);
			fputc('\n', d->out);
		}
	}
out:
	if (!names)
		err = SQK_ENOMEM;
	if (err)
		cmd_err(d->c, path, err, "cannot read xattrs");
	free(names);
	free(val);
	return err;
}

/* The first name of a file with links: remembered, or found (*first). */
static int link_of(struct dump *d, const char *path, const struct sqk_inode *ino,
		   bool seen, const char **first)
{
	*first = NULL;
	if (cmd_is(ino, SQK_T_DIR) || ino->nlink < 2 || ino->ino >= d->nfirst)
		return 0;
	if (seen) {
		*first = d->first[ino->ino];
		return 0;
	}
	if (!d->first[ino->ino] && !(d->first[ino->ino] = strdup(path)))
		return SQK_ENOMEM;
	return 0;
}

static char type_letter(const struct sqk_inode *ino)
{
	static const char letters[] = "?DRSBCII";
	uint16_t t = sqk_basic_type(ino->type);
	return t <= SQK_T_SOCKET ? letters[t] : '?';
}

static int pseudo_entry(struct dump *d, const char *path, const struct sqk_inode *ino,
			const char *first)
{
	FILE *o = d->out;
	put_pseudo_name(o, path);
	if (first) {
		fputs(" L ", o);
		put_pseudo_name(o, first);
		fputc('\n', o);
		return 0;
	}
	fprintf(o, " %c %u %o %u %u", type_letter(ino), ino->mtime, ino->mode & 07777, ino->uid,
		ino->gid);
	char target[SQK_SYMLINK_MAX + 1];
	size_t tlen;
	int err = 0;
	switch (sqk_basic_type(ino->type)) {
	case SQK_T_FILE:
		fprintf(o, " %llu %llu %d\n", (unsigned long long)ino->size,
			(unsigned long long)d->offset, ino->sparse != 0);
		d->offset += ino->size;
		if (mem_grow(&d->files, &d->cap, d->nfiles + 1, sizeof(*d->files), 0))
			return SQK_ENOMEM;
		d->files[d->nfiles++] = *ino;
		break;
	case SQK_T_SYMLINK:
		err = sqk_readlink(d->c->img, ino, target, sizeof(target), &tlen);
		if (err)
			cmd_err(d->c, path, err, "cannot read symlink");
		else
			fprintf(o, " %s\n", target);
		break;
	case SQK_T_BLKDEV:
	case SQK_T_CHRDEV:
		fprintf(o, " %u %u\n", sqk_rdev_major(ino->rdev), sqk_rdev_minor(ino->rdev));
		break;
	case SQK_T_FIFO: fputs(" f\n", o); break;
	case SQK_T_SOCKET: fputs(" s\n", o); break;
	default: fputc('\n', o); break;
	}
	return err ? err : put_xattrs(d, path, ino);
}

static int pack_entry(struct dump *d, const char *path, const struct sqk_inode *ino,
		      const char *first)
{
	static const char *const kw[] = { "?", "dir", "file", "slink", "nod", "nod", "pipe",
					  "sock" };
	FILE *o = d->out;
	uint16_t t = sqk_basic_type(ino->type);
	bool root = !*path;
	if (root && (ino->mode & 07777) == 0755 && !ino->uid && !ino->gid)
		return 0; /* gensquashfs's default root, as rdsquashfs leaves it out */
	fprintf(o, "%s ", first ? "link" : t <= SQK_T_SOCKET ? kw[t] : "?");
	put_pack_name(o, path);
	if (first) {
		fprintf(o, " 0 0 0 %s\n", first);
		return 0;
	}
	fprintf(o, " 0%o %u %u", ino->mode & 07777, ino->uid, ino->gid);
	char target[SQK_SYMLINK_MAX + 1];
	size_t tlen;
	int err = 0;
	if (t == SQK_T_FILE && d->root)
		fprintf(o, " %s/%s", d->root, path);
	else if (t == SQK_T_BLKDEV || t == SQK_T_CHRDEV)
		fprintf(o, " %c %u %u", t == SQK_T_CHRDEV ? 'c' : 'b', sqk_rdev_major(ino->rdev),
			sqk_rdev_minor(ino->rdev));
	else if (t == SQK_T_SYMLINK && !(err = sqk_readlink(d->c->img, ino, target,
							     sizeof(target), &tlen)))
		fprintf(o, " %s", target);
	else if (err)
		cmd_err(d->c, path, err, "cannot read symlink");
	fputc('\n', o);
	return err;
}

/* Every file's content after the data mark, in the order of the R lines. */
static int put_data(struct dump *d)
{
	enum { BUFSZ = 1 << 16 };
	char *buf = malloc(BUFSZ);
	int r = 0;
	fputs("#\n# START OF DATA - DO NOT MODIFY\n#\n", d->out);
	if (!buf) {
		cmd_err(d->c, d->where, SQK_ENOMEM, "cannot copy the files' data");
		return 1;
	}
	for (size_t i = 0; i < d->nfiles && !r; i++) {
		const struct sqk_inode *f = &d->files[i];
		for (uint64_t off = 0; off < f->size && !r;) {
			size_t want = f->size - off < BUFSZ ? (size_t)(f->size - off) : BUFSZ;
			ssize_t n = sqk_read(d->c->img, f, buf, want, off);
			if (n <= 0)
				cmd_read_err(d->c, d->where, f, n < 0 ? (int)n : SQK_ECORRUPT,
					     "cannot read inode %u", f->ino);
			r = n <= 0 || fwrite(buf, 1, (size_t)n, d->out) != (size_t)n;
			off += n > 0 ? (uint64_t)n : 0;
		}
	}
	free(buf);
	return r;
}

static int dump_walk(struct dump *d, const struct sqk_inode *dir)
{
	struct sqk_walk_entry e = { 0 };
	struct sqk_walk *w;
	int r = sqk_walk_open(d->c->img, dir, SQK_WALK_ONCE, SQK_WALK_MAX_DEPTH, &w);
	while (r == 0 && (r = sqk_walk_next(w, &e)) == 1) {
		const char *first;
		bool seen = e.flags & SQK_WALK_SEEN;
		if ((e.flags & SQK_WALK_LOOP) || (seen && cmd_is(&e.inode, SQK_T_DIR))) {
			cmd_err(d->c, e.path, SQK_ECORRUPT, "directory loop");
			r = SQK_ECORRUPT;
			break;
		}
		r = link_of(d, e.path, &e.inode, seen, &first);
		if (!r)
			r = d->kind == LS_DUMP_PACK ? pack_entry(d, e.path, &e.inode, first) :
						      pseudo_entry(d, e.path, &e.inode, first);
	}
	if (r < 0 && r != SQK_ECORRUPT)
		cmd_err(d->c, e.path ? e.path : d->where, r, "cannot list");
	sqk_walk_close(w);
	return r < 0 ? 1 : 0;
}

int ls_dump(struct cmd *c, const struct sqk_inode *dir, const char *where,
	    enum ls_dump_kind kind, const char *pack_root, FILE *out)
{
	struct dump d = { .c = c, .out = out, .kind = kind, .root = pack_root, .where = where };
	if (!cmd_is(dir, SQK_T_DIR)) {
		cmd_err(c, where, 0, "not a directory (--pseudo and --pack write a tree)");
		return 1;
	}
	d.nfirst = sqk_image_super(c->img)->inode_count + 1;
	d.first = calloc(d.nfirst, sizeof(*d.first));
	int r = d.first ? dump_walk(&d, dir) : 1;
	if (!d.first)
		cmd_err(c, where, SQK_ENOMEM, "cannot list");
	if (!r && kind == LS_DUMP_PSEUDO)
		r = put_data(&d);
	for (uint32_t i = 0; d.first && i < d.nfirst; i++)
		free(d.first[i]);
	free(d.first);
	free(d.files);
	return r;
}
