/* SPDX-License-Identifier: BSD-2-Clause */
/* sqk stat: what an entry's inode holds, in the lines of `rdsquashfs -s` (squashfs-tools-ng):
 * type (basic or extended), number, mode, owners, time, link count, xattr index, link target,
 * device number, a file's fragment, size and block list, a directory's listing place; then
 * its xattrs as getfattr shows them. */
#include "cmd.h"
#include "listing.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

static const char *const st_types[15] = {
	"UNKNOWN", "directory", "file", "symbolic link", "block device", "character device",
	"named pipe", "socket", "extended directory", "extended file", "extended symbolic link",
	"extended block device", "extended character device", "extended named pipe",
	"extended socket",
};

static void st_usage(FILE *f)
{
	fprintf(f,
		"usage: sqk stat [--offset N] [OPTIONS] IMAGE|URL PATH...\n"
		"\n"
		"Prints what the inode of each PATH holds, in the lines of rdsquashfs -s: name, "
		"inode\n"
		"type (basic or extended), inode number, access bits, UID and GID (with their "
		"names\n"
		"from the passwd and group files, where rdsquashfs gives their id table index),\n"
		"last modified (UTC), hard link count, xattr index, link target, device number;\n"
		"for a file its fragment index and offset, size, sparse bytes, blocks start and "
		"the\n"
		"size of each block; for a directory its listing's block, offset and size, the "
		"parent\n"
		"inode and the index entry count. Then \"Xattrs: N\" and each xattr as getfattr "
		"-d\n"
		"shows it (name=\"text\" or name=0sBASE64). PATHs are separated by an empty line.\n"
		"\n"
		"      --offset N    the image starts N bytes into the file (mksquashfs -offset)\n"
		SQK_CMD_REMOTE_HELP
		"  -h, --help        this text\n"
		"\n"
		"Exit status: 0 ok, 1 error (missing path, corrupt image, I/O), 2 usage.\n");
}

static int st_parse(struct cmd *c, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "offset", required_argument, NULL, 'o' },
		{ "help", no_argument, NULL, 'h' },
		SQK_CMD_REMOTE_LONGOPTS,
		{ NULL, 0, NULL, 0 },
	};
	int ch;

	while ((ch = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (ch) {
		case 'o':
			if (parse_u64(optarg, UINT64_MAX, &c->offset)) {
				cmd_usage_err("stat", "bad --offset '%s'", optarg);
				return 2;
			}
			break;
		case 'h': st_usage(stdout); return 0;
		default:
			ch = cmd_remote_opt("stat", &c->remote, ch, optarg);
			if (ch == 0)
				break;
			if (ch == 1)
				st_usage(stderr);
			return 2;
		}
	}
	if (argc - optind < 2) {
		cmd_usage_err("stat", "expected IMAGE PATH...");
		return 2;
	}
	c->image = argv[optind];
	return -1;
}

/* A file's fragment, size and blocks. */
static int st_file(struct cmd *c, const char *path, const struct sqk_inode *ino)
{
	uint32_t n = 0, *w = NULL;
	int r = sqk_file_blocks(c->img, ino, NULL, 0, &n);

	if (r == SQK_ETOOBIG) {
		w = malloc((size_t)n * sizeof(*w));
		r = w ? sqk_file_blocks(c->img, ino, w, n, &n) : SQK_ENOMEM;
	}
	if (r) {
		free(w);
		cmd_err(c, path, r, "cannot read the block list");
		return r;
	}
	printf("Fragment index: 0x%X\nFragment offset: %u\n", ino->frag_index, ino->frag_offset);
	printf("File size: %llu\n", (unsigned long long)ino->size);
	if (ino->type == SQK_T_LFILE)
		printf("Sparse: %llu\n", (unsigned long long)ino->sparse);
	printf("Blocks start: %llu\nBlock count: %u\n", (unsigned long long)ino->blocks_start, n);
	for (uint32_t i = 0; i < n; i++)
		printf("\tBlock #%u size: %u (%s)\n", i, w[i] & SQK_BLOCK_SIZE_MASK,
		       w[i] & SQK_BLOCK_RAW ? "uncompressed" : "compressed");
	free(w);
	return 0;
}

/* The type-specific lines after the common ones. */
static int st_kind(struct cmd *c, const char *path, const struct sqk_inode *ino)
{
	char target[SQK_SYMLINK_MAX + 1];
	size_t len;
	int r;

	if (cmd_is(ino, SQK_T_SYMLINK)) {
		r = sqk_readlink(c->img, ino, target, sizeof(target), &len);
		if (r) {
			cmd_err(c, path, r, "cannot read symlink");
			return r;
		}
		printf("Link target: %s\n", target);
	} else if (cmd_is(ino, SQK_T_BLKDEV) || cmd_is(ino, SQK_T_CHRDEV)) {
		printf("Device number: %u:%u (%u)\n", sqk_rdev_major(ino->rdev),
		       sqk_rdev_minor(ino->rdev), ino->rdev);
	} else if (cmd_is(ino, SQK_T_FILE)) {
		return st_file(c, path, ino);
	} else if (cmd_is(ino, SQK_T_DIR)) {
		printf("Start block: %u\nOffset: %u\nListing size: %llu\nParent inode: %u\n",
		       ino->dir_block, ino->dir_offset, (unsigned long long)ino->size,
		       ino->parent);
		if (ino->type == SQK_T_LDIR)
			printf("Directory index entries: %u\n", ino->index_count);
	}
	return 0;
}

/* "Xattrs: N" and the xattrs, one per line. */
static int st_xattrs(struct cmd *c, const char *path, const struct sqk_inode *ino)
{
	size_t len = 0, n = 0, at;
	char *names = NULL;
	int r = ino->xattr_idx == SQK_NONE32 ? 0 : sqk_xattr_list(c->img, ino, NULL, 0, &len);

	if (!r && len) {
		names = malloc(len);
		r = names ? sqk_xattr_list(c->img, ino, names, len, &len) : SQK_ENOMEM;
	}
	for (at = 0; !r && at < len; at += strlen(names + at) + 1)
		n++;
	free(names);
	if (!r) {
		printf("Xattrs: %zu\n", n);
		r = lst_xattrs(c->img, ino, "\t", stdout);
	}
	if (r)
		cmd_err(c, path, r, "cannot read xattrs");
	return r;
}

/* "UID: 33 (www-data)", or "UID: 4242" for an id without a name. */
static void st_id(const char *what, struct lst_names *n, uint32_t id)
{
	char b[12];

	if (lst_has_name(n, id))
		printf("%s: %u (%s)\n", what, id, lst_name(n, id, b));
	else
		printf("%s: %u\n", what, id);
}

/* The lines of one PATH (borrowed). */
static int st_one(struct cmd *c, struct listing *l, const char *path)
{
	struct sqk_inode ino;
	const char *name = strrchr(path, '/');
	char when[64];
	time_t t;
	struct tm tm;
	int r = cmd_lookup(c, path, &ino);

	if (r)
		return r;
	t = ino.mtime;
	if (!gmtime_r(&t, &tm) || !strftime(when, sizeof(when), "%a, %d %b %Y %T %z", &tm))
		snprintf(when, sizeof(when), "?");
	printf("Name: %s\n", name ? name + 1 : path);
	printf("Inode type: %s\n", st_types[ino.type < 15 ? ino.type : 0]);
	printf("Inode number: %u\nAccess: 0%o\n", ino.ino, ino.mode & 07777u);
	st_id("UID", &l->users, ino.uid);
	st_id("GID", &l->groups, ino.gid);
	printf("Last modified: %s (%u)\n", when, ino.mtime);
	if (ino.type != SQK_T_FILE)
		printf("Hard link count: %u\n", ino.nlink);
	if (ino.type > SQK_T_SOCKET)
		printf("Xattr index: 0x%X\n", ino.xattr_idx);
	r = st_kind(c, path, &ino);
	if (!r)
		r = st_xattrs(c, path, &ino);
	return r;
}

int stat_main(int argc, char **argv)
{
	struct cmd c;
	struct listing l;
	int r, i, bad = 0;

	memset(&c, 0, sizeof(c));
	c.name = "stat";
	lst_init(&l);
	r = st_parse(&c, argc, argv);
	if (r >= 0)
		return r;
	if (cmd_open(&c)) {
		cmd_close(&c);
		return 1;
	}
	lst_norm_paths(argv + optind + 1, (size_t)(argc - optind - 1));
	for (i = optind + 1; i < argc; i++) {
		if (i > optind + 1)
			printf("\n");
		bad |= st_one(&c, &l, argv[i]) != 0;
	}
	fflush(stdout);
	if (ferror(stdout)) {
		cmd_err(&c, NULL, 0, "error writing to stdout");
		bad = 1;
	}
	lst_free(&l);
	cmd_close(&c);
	return bad;
}
