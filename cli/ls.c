/* sqk ls: lists a directory of an image (or one entry), optionally long and recursive. */
#include "cmd.h"
#include "common/depth.h"

#include <getopt.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

struct sqk_ls {
	struct sqk_cmd c;
	int longfmt;
	int recursive;
	int escape;   /* 1: names with C escapes (-b), 0: as stored (-N), -1: escape on a tty */
	int status;   /* exit status so far */
	uint8_t *dir_seen; /* -R: a bit per inode number, set once its directory is listed (owned) */
	uint32_t inode_count;
};

static void ls_usage(FILE *f)
{
	fprintf(f,
		"usage: sqk ls [-l] [-R] [-b|-N] [--offset N] [OPTIONS] IMAGE|URL [PATH]\n"
		"\n"
		"Lists the directory PATH of a SquashFS image (default: the root), or the entry PATH\n"
		"itself when it is not a directory. Entries appear in the image's (sorted) order.\n"
		"\n"
		"  -l, --long        long format as ls -l: mode, links, uid, gid (numeric), size (or\n"
		"                    major, minor for devices), mtime (YYYY-MM-DD HH:MM, local time),\n"
		"                    name, and -> TARGET for symlinks\n"
		"  -R, --recursive   list every entry below PATH, one per line, named by its path\n"
		"                    relative to PATH (directories before their contents)\n"
		"  -b, --escape      print control characters and backslashes in names and link\n"
		"                    targets as C escapes (\\n, \\t, \\\\, \\ooo): one entry, one line\n"
		"  -N, --literal     print names as stored\n"
		"                    (default: --escape when the output is a terminal, else --literal)\n"
		"      --offset N    the image starts N bytes into the file (mksquashfs -offset)\n"
		SQK_CMD_REMOTE_HELP
		"  -h, --help        this text\n"
		"\n"
		"Exit status: 0 ok, 1 error (missing path, corrupt image, I/O), 2 usage.\n");
}

/* ls -l's mode string, e.g. "drwxr-sr-t". */
static void ls_mode_string(uint32_t mode, char out[11])
{
	static const char rwx[] = "rwxrwxrwx";
	int i;

	switch (mode & S_IFMT) {
	case S_IFDIR: out[0] = 'd'; break;
	case S_IFLNK: out[0] = 'l'; break;
	case S_IFBLK: out[0] = 'b'; break;
	case S_IFCHR: out[0] = 'c'; break;
	case S_IFIFO: out[0] = 'p'; break;
	case S_IFSOCK: out[0] = 's'; break;
	default: out[0] = '-'; break;
	}
	for (i = 0; i < 9; i++)
		out[1 + i] = (mode & (0400u >> i)) ? rwx[i] : '-';
	if (mode & S_ISUID)
		out[3] = (mode & S_IXUSR) ? 's' : 'S';
	if (mode & S_ISGID)
		out[6] = (mode & S_IXGRP) ? 's' : 'S';
	if (mode & S_ISVTX)
		out[9] = (mode & S_IXOTH) ? 't' : 'T';
	out[10] = '\0';
}

/* Writes s, with control characters and backslashes as C escapes when l->escape. */
static void ls_put(const struct sqk_ls *l, const char *s)
{
	if (!l->escape) {
		fputs(s, stdout);
		return;
	}
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '\\')
			fputs("\\\\", stdout);
		else if (*p == '\n')
			fputs("\\n", stdout);
		else if (*p == '\t')
			fputs("\\t", stdout);
		else if (*p < 0x20 || *p == 0x7f)
			printf("\\%03o", *p);
		else
			putchar(*p);
	}
}

/* Prints one entry; name is the text printed as its name. */
static void ls_print(struct sqk_ls *l, const char *name, const struct sqk_inode *ino)
{
	char mode[11], size[48], when[32], target[SQK_SYMLINK_MAX + 1];
	time_t t = ino->mtime;
	struct tm tm;
	size_t tlen;
	int err;

	if (!l->longfmt) {
		ls_put(l, name);
		putchar('\n');
		return;
	}
	ls_mode_string(ino->mode, mode);
	if (sqk_cmd_is(ino, SQK_T_BLKDEV) || sqk_cmd_is(ino, SQK_T_CHRDEV))
		snprintf(size, sizeof(size), "%u, %u", sqk_rdev_major(ino->rdev),
			 sqk_rdev_minor(ino->rdev));
	else
		snprintf(size, sizeof(size), "%llu", (unsigned long long)ino->size);
	if (!localtime_r(&t, &tm) || !strftime(when, sizeof(when), "%Y-%m-%d %H:%M", &tm))
		snprintf(when, sizeof(when), "%u", ino->mtime);
	printf("%s %3u %5u %5u %9s %s ", mode, ino->nlink, ino->uid, ino->gid, size, when);
	ls_put(l, name);
	if (sqk_cmd_is(ino, SQK_T_SYMLINK)) {
		err = sqk_readlink(l->c.img, ino, target, sizeof(target), &tlen);
		if (err) {
			printf("\n");
			sqk_cmd_err(&l->c, name, err, "cannot read symlink");
			l->status = 1;
			return;
		}
		fputs(" -> ", stdout);
		ls_put(l, target);
	}
	printf("\n");
}

/* Joins prefix and name into a new string ("name" when prefix is empty). */
static char *ls_join(const char *prefix, const char *name)
{
	size_t a = strlen(prefix), b = strlen(name);
	char *p = malloc(a + b + 2);

	if (!p)
		return NULL;
	if (a) {
		memcpy(p, prefix, a);
		p[a++] = '/';
	}
	memcpy(p + a, name, b + 1);
	return p;
}

/* The directories on the way down from the listed PATH: a crafted image can make a directory
 * its own descendant, and recursion must neither loop nor exhaust the stack. */
struct ls_up {
	uint64_t ref;
	unsigned depth;
	const struct ls_up *up;
};

static int ls_check_loop(struct sqk_ls *l, const struct sqk_inode *dir, const struct ls_up *up,
			 const char *where)
{
	for (const struct ls_up *a = up; a; a = a->up) {
		if (a->ref == dir->ref) {
			sqk_cmd_err(&l->c, where, SQK_ECORRUPT, "directory loop");
			return SQK_ECORRUPT;
		}
	}
	/* A directory reached under a second name (a crafted image: two entries of each level
	 * naming one child) would be listed again at every level, 2^depth times in all. */
	if (l->dir_seen && !sqk_cmd_ino_mark(l->dir_seen, l->inode_count, dir->ino)) {
		sqk_cmd_err(&l->c, where, SQK_ECORRUPT,
			    "directory inode %u reached twice (a directory loop)", dir->ino);
		return SQK_ECORRUPT;
	}
	/* dir is at depth up->depth + 1 below PATH, its entries one more (common/depth.h) */
	if (up && up->depth + 1 >= SQK_DEPTH_MAX && dir->size > 3) {
		char b[2 * SQK_DEPTH_SHOWN + 4];
		sqk_cmd_err(&l->c, sqk_depth_shown(where, b), SQK_ETOOBIG,
			    "directories nested deeper than %u levels (the most sqk walks)",
			    SQK_DEPTH_MAX);
		return SQK_ETOOBIG;
	}
	return 0;
}

/* Lists dir; rel is the path printed for its entries (relative to the listed PATH), where is the
 * image path of dir for messages, up the directories above it. */
static int ls_dir(struct sqk_ls *l, const struct sqk_inode *dir, const char *rel,
		  const char *where, const struct ls_up *up)
{
	struct ls_up self = { dir->ref, up ? up->depth + 1 : 0, up };
	struct sqk_dir_iter it;
	struct sqk_dirent e;
	struct sqk_inode ino;
	int r = ls_check_loop(l, dir, up, where);

	if (r)
		return r;
	r = sqk_dir_iter_init(l->c.img, dir, &it);
	while (r == 0 && (r = sqk_dir_iter_next(&it, &e)) == 1) {
		char *path = ls_join(l->recursive ? rel : "", e.name);
		char *full = ls_join(where, e.name);

		if (!path || !full) {
			free(path);
			free(full);
			r = SQK_ENOMEM;
			break;
		}
		r = sqk_inode_get(l->c.img, e.ref, &ino);
		if (r) {
			sqk_cmd_err(&l->c, full, r, "cannot read inode");
		} else {
			ls_print(l, path, &ino);
			if (l->recursive && sqk_cmd_is(&ino, SQK_T_DIR))
				r = ls_dir(l, &ino, path, full, &self);
		}
		free(path);
		free(full);
		if (r)
			return r;
	}
	if (r < 0) {
		sqk_cmd_err(&l->c, where, r, "cannot list directory");
		return r;
	}
	return 0;
}

static int ls_parse(struct sqk_ls *l, int argc, char **argv, const char **path)
{
	static const struct option opts[] = {
		{ "long", no_argument, NULL, 'l' },
		{ "recursive", no_argument, NULL, 'R' },
		{ "escape", no_argument, NULL, 'b' },
		{ "literal", no_argument, NULL, 'N' },
		{ "offset", required_argument, NULL, 'o' },
		{ "help", no_argument, NULL, 'h' },
		SQK_CMD_REMOTE_LONGOPTS,
		{ NULL, 0, NULL, 0 },
	};
	int ch;

	l->escape = -1;
	while ((ch = getopt_long(argc, argv, "lRbNh", opts, NULL)) != -1) {
		switch (ch) {
		case 'l': l->longfmt = 1; break;
		case 'R': l->recursive = 1; break;
		case 'b': l->escape = 1; break;
		case 'N': l->escape = 0; break;
		case 'o':
			if (sqk_parse_u64(optarg, UINT64_MAX, &l->c.offset)) {
				sqk_cmd_usage_err("ls", "bad --offset '%s'", optarg);
				return 2;
			}
			break;
		case 'h': ls_usage(stdout); return 0;
		default:
			ch = sqk_cmd_remote_opt("ls", &l->c.remote, ch, optarg);
			if (ch == 0)
				break;
			if (ch == 1)
				ls_usage(stderr);
			return 2;
		}
	}
	if (optind >= argc || argc - optind > 2) {
		sqk_cmd_usage_err("ls", "expected IMAGE [PATH]");
		return 2;
	}
	if (l->escape < 0)
		l->escape = isatty(STDOUT_FILENO);
	l->c.image = argv[optind];
	*path = optind + 1 < argc ? argv[optind + 1] : "";
	return -1;
}

int sqk_ls_main(int argc, char **argv)
{
	struct sqk_ls l;
	struct sqk_inode ino;
	const char *path;
	int r;

	memset(&l, 0, sizeof(l));
	l.c.name = "ls";
	r = ls_parse(&l, argc, argv, &path);
	if (r >= 0)
		return r;
	if (sqk_cmd_open(&l.c)) {
		sqk_cmd_close(&l.c); /* what the options and the URL's name hold */
		return 1;
	}
	while (*path == '/')
		path++;
	r = sqk_cmd_lookup(&l.c, path, &ino);
	if (!r) {
		if (sqk_cmd_is(&ino, SQK_T_DIR) && l.recursive) {
			l.inode_count = sqk_image_super(l.c.img)->inode_count;
			l.dir_seen = calloc(sqk_cmd_ino_set_bytes(l.inode_count), 1);
			if (!l.dir_seen) {
				sqk_cmd_err(&l.c, NULL, SQK_ENOMEM, "cannot allocate the walk's table");
				r = SQK_ENOMEM;
			}
		}
		if (!r && sqk_cmd_is(&ino, SQK_T_DIR))
			r = ls_dir(&l, &ino, "", path, NULL);
		else
			ls_print(&l, path, &ino);
	}
	fflush(stdout);
	if (ferror(stdout)) {
		sqk_cmd_err(&l.c, NULL, 0, "error writing to stdout");
		r = 1;
	}
	free(l.dir_seen);
	sqk_cmd_close(&l.c);
	return r || l.status ? 1 : 0;
}
