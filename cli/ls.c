/* SPDX-License-Identifier: BSD-2-Clause */
/* sqk ls: lists a directory of an image (or one entry), optionally long and recursive (through
 * libsqk's walk). */
#include "cmd.h"
#include "listing.h"
#include "ls_dump.h"
#include "ls_glob.h"
#include "select.h"
#include "common/depth.h"
#include "common/grow.h"

#include "cmdopt.h"
#include <unistd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

struct ls {
	struct cmd c;
	int longfmt;
	int recursive;
	int escape;   /* 1: names with C escapes (-b), 0: as stored (-N), -1: escape on a tty */
	int numeric;  /* -n: uid and gid as numbers */
	char **paths; /* the PATH arguments (in argv) */
	int npaths;
	int status;   /* exit status so far */
	struct listing lst; /* unsquashfs's listings (-lls ...), owner names, --xattrs */
	char *full;   /* the image path of the entry at hand, for messages (owned) */
	size_t fcap;
	enum ls_dump_kind dump; /* --pseudo, --pack: definitions instead of a listing (ls_dump.c) */
	const char *pack_root;  /* --pack-root DIR */
	struct sel sel;         /* the listings' --exclude patterns and --max-depth */
};

static void ls_usage(FILE *f)
{
	fprintf(f,
		"usage: sqk ls [-l [-n]] [-R] [-b|-N] [--xattrs] [--offset N] [OPTIONS] IMAGE|URL "
		"[PATH...]\n"
		"       sqk ls -ls|-lls|-lln|-lc|-llc [-UTC] [-full-precision] [--exclude GLOB]\n"
		"              [--max-depth N] [OPTIONS] IMAGE|URL [PATH...]\n"
		"\n"
		"Lists the directory PATH of a SquashFS image (default: the root), or the entry "
		"PATH\n"
		"itself when it is not a directory. Entries appear in the image's (sorted) order.\n"
		"A PATH with wildcards (* ? [...] @(a|b), a component at a time, as unsquashfs) "
		"stands\n"
		"for the entries it matches; with several, as ls(1): the entries that are not\n"
		"directories first, then each directory's contents under a \"PATH:\" header.\n"
		"\n"
		"  -l, --long        long format as ls -l: mode, links, owner, group (names from "
		"the\n"
		"                    passwd and group files, else numbers), size (or major, minor "
		"for\n"
		"                    devices), mtime (YYYY-MM-DD HH:MM, local time), name, and\n"
		"                    -> TARGET for symlinks\n"
		"  -n, --numeric-uid-gid  with -l: owner and group as numbers\n"
		"      --xattrs      after each entry, its xattrs, one per line, indented: "
		"name=\"text\"\n"
		"                    (\\ and \" escaped) or name=0sBASE64, as getfattr -d "
		"shows them\n"
		"  -R, --recursive   list every entry below PATH, one per line, named by its path\n"
		"                    relative to PATH (directories before their contents)\n"
		"  -b, --escape      print control characters and backslashes in names and link\n"
		"                    targets as C escapes (\\n, \\t, \\\\, \\ooo): one entry, one "
		"line\n"
		"  -N, --literal     print names as stored\n"
		"                    (default: --escape when the output is a terminal, else "
		"--literal)\n"
		"unsquashfs's listings (the whole tree under the name squashfs-root, or the\n"
		"directories on the way to what the PATH patterns match and everything below it):\n"
		"  -ls               paths only (as unsquashfs -ls)\n"
		"  -ll, -lls         with mode, owner/group names, size and mtime (unsquashfs "
		"-lls)\n"
		"  -lln, -llnumeric  as -lls with numeric owners\n"
		"  -lc, -llc         as -ls, -lls with only files and empty directories\n"
		"  -UTC, --utc       times in UTC, not the local time zone (also for -l)\n"
		"  -full, -full-precision, --full-time  times with seconds (also for -l)\n"
		"      --exclude GLOB  leave out what GLOB matches, and everything below it\n"
		"      --max-depth N  nothing deeper than N levels below the root\n"
		"Other options:\n"
		"  -o, --offset N    the image starts N bytes into the file (K/M/G; mksquashfs\n"
		"                    -offset, unsquashfs -o)\n"
		"      --pseudo      write the tree below PATH as pseudo definitions, then the "
		"files'\n"
		"                    data (as unsquashfs -pf -): sqk mkimage -pf FILE IMAGE and\n"
		"                    mksquashfs -pf build it again\n"
		"      --pack        write it as a gensquashfs pack file (as rdsquashfs -d); the "
		"files'\n"
		"                    content is read from an extracted tree (--pack-dir)\n"
		"      --pack-root DIR  --pack: each file line names DIR/PATH as its input (as\n"
		"                    rdsquashfs -p)\n"
		SQK_CMD_REMOTE_HELP
		"  -h, --help        this text\n"
		"\n"
		"Options may come anywhere on the line (-- ends them); each long one also\n"
		"with one dash, as unsquashfs spells them.\n"
		"Exit status: 0 ok, 1 error (missing path, corrupt image, I/O), 2 usage.\n");
}

/* Writes s, with control characters and backslashes as C escapes when l->escape. */
static void ls_put(const struct ls *l, const char *s)
{
	lst_put(l->escape, s, stdout);
}

/* The owner or group column: a name left-aligned, a number right-aligned (as GNU ls). */
static void ls_owner(struct ls *l, struct lst_names *n, uint32_t id)
{
	char b[12];

	if (!l->numeric && lst_has_name(n, id))
		printf(" %-5s", lst_name(n, id, b));
	else
		printf(" %5u", id);
}

/* --xattrs: the entry's xattrs after its line. */
static void ls_xattrs(struct ls *l, const char *name, const struct sqk_inode *ino)
{
	int err = l->lst.xattrs ? lst_xattrs(l->c.img, ino, "  ", stdout) : 0;

	if (err) {
		cmd_err(&l->c, name, err, "cannot read xattrs");
		l->status = 1;
	}
}

/* Prints one entry; name is the text printed as its name. */
static void ls_print(struct ls *l, const char *name, const struct sqk_inode *ino)
{
	char mode[11], size[48], when[32], target[SQK_SYMLINK_MAX + 1];
	time_t t = ino->mtime;
	struct tm tm;
	size_t tlen;
	int err;

	if (!l->longfmt) {
		ls_put(l, name);
		putchar('\n');
		ls_xattrs(l, name, ino);
		return;
	}
	lst_mode_string(ino->mode, mode);
	if (cmd_is(ino, SQK_T_BLKDEV) || cmd_is(ino, SQK_T_CHRDEV))
		snprintf(size, sizeof(size), "%u, %u", sqk_rdev_major(ino->rdev),
			 sqk_rdev_minor(ino->rdev));
	else
		snprintf(size, sizeof(size), "%llu", (unsigned long long)ino->size);
	if (!(l->lst.utc ? gmtime_r(&t, &tm) : localtime_r(&t, &tm)) ||
	    !strftime(when, sizeof(when), l->lst.full_time ? "%Y-%m-%d %H:%M:%S" : "%Y-%m-%d %H:%M",
		      &tm))
		snprintf(when, sizeof(when), "%u", ino->mtime);
	printf("%s %3u", mode, ino->nlink);
	ls_owner(l, &l->lst.users, ino->uid);
	ls_owner(l, &l->lst.groups, ino->gid);
	printf(" %9s %s ", size, when);
	ls_put(l, name);
	if (cmd_is(ino, SQK_T_SYMLINK)) {
		err = sqk_readlink(l->c.img, ino, target, sizeof(target), &tlen);
		if (err) {
			printf("\n");
			cmd_err(&l->c, name, err, "cannot read symlink");
			l->status = 1;
			return;
		}
		fputs(" -> ", stdout);
		ls_put(l, target);
	}
	printf("\n");
	ls_xattrs(l, name, ino);
}

/* Sets l->full to the image path of e: where (the listed PATH) joined with e's path. */
static int ls_full(struct ls *l, const char *where, const struct sqk_walk_entry *e)
{
	size_t a = strlen(where), at = a && e->path_len ? a + 1 : a;

	if (mem_grow(&l->full, &l->fcap, at + e->path_len + 1, 1, 0))
		return SQK_ENOMEM;
	memcpy(l->full, where, a);
	if (at > a)
		l->full[a] = '/';
	memcpy(l->full + at, e->path, e->path_len + 1);
	return 0;
}

/* A directory that -R does not enter, as a crafted image can make one: its own descendant
 * (a loop), or reached under a second name (two entries of each level naming one child would
 * list it again at every level, 2^depth times in all). */
static int ls_check_loop(struct ls *l, const struct sqk_walk_entry *e)
{
	if (e->flags & SQK_WALK_LOOP) {
		cmd_err(&l->c, l->full, SQK_ECORRUPT, "directory loop");
		return SQK_ECORRUPT;
	}
	if (e->flags & SQK_WALK_SEEN) {
		cmd_err(&l->c, l->full, SQK_ECORRUPT,
			    "directory inode %u reached twice (a directory loop)", e->inode.ino);
		return SQK_ECORRUPT;
	}
	return 0;
}

/* The message of a failed step of the walk (l->full its image path). */
static void ls_walk_err(struct ls *l, const struct sqk_walk_entry *e, int r)
{
	char b[2 * SQK_DEPTH_SHOWN + 4];

	if (e->event == SQK_WALK_ERR_INODE)
		cmd_err(&l->c, l->full, r, "cannot read inode");
	else if (e->event == SQK_WALK_ERR_LIST)
		cmd_err(&l->c, l->full, r, "cannot list directory");
	else /* SQK_WALK_ERR_DEPTH: common/depth.h */
		cmd_err(&l->c, depth_shown(l->full, b), SQK_ETOOBIG,
			    "directories nested deeper than %u levels (the most sqk walks)",
			    SQK_DEPTH_MAX);
}

/* Prints entry e of the walk (l->full its image path); 0 or the error, printed. */
static int ls_entry(struct ls *l, struct sqk_walk *w, const struct sqk_walk_entry *e)
{
	bool dir = cmd_is(&e->inode, SQK_T_DIR);

	if (e->depth > 0)
		ls_print(l, l->recursive ? e->path : e->name, &e->inode);
	if (dir && !l->recursive && e->depth > 0)
		sqk_walk_skip(w);
	return dir && l->recursive ? ls_check_loop(l, e) : 0;
}

/* Lists dir (at the image path where): its entries, or with -R every entry below it, named by
 * their path relative to it. The first failure stops the listing. */
static int ls_dir(struct ls *l, const struct sqk_inode *dir, const char *where)
{
	struct sqk_walk_entry e = { 0 };
	struct sqk_walk *w;
	int r = sqk_walk_open(l->c.img, dir, l->recursive ? SQK_WALK_ONCE : 0, SQK_WALK_MAX_DEPTH,
			      &w);

	while (r == 0 && (r = sqk_walk_next(w, &e)) == 1) {
		r = ls_full(l, where, &e);
		if (r == 0)
			r = ls_entry(l, w, &e);
		else
			e.event = SQK_WALK_ERR_FATAL;
		if (r) {
			sqk_walk_close(w);
			return r;
		}
	}
	if (r < 0 && e.event != SQK_WALK_ERR_FATAL && ls_full(l, where, &e) == 0)
		ls_walk_err(l, &e, r);
	else if (r < 0)
		cmd_err(&l->c, where, r, "cannot list directory");
	sqk_walk_close(w);
	return r;
}

enum { LS_OPT_XATTRS = 0x2000, LS_OPT_EXCLUDE, LS_OPT_MAX_DEPTH };

/* --exclude GLOB, --max-depth N (unsquashfs's listings only). -1 taken, 2 bad. */
static int ls_select_opt(struct ls *l, int ch, const char *arg, const char *as)
{
	uint64_t v;

	if (ch == LS_OPT_EXCLUDE) {
		if (!sel_path_ok(arg)) {
			cmd_usage_err("ls", "%s '%s' has a . or .. component", as, arg);
			return 2;
		}
		return sel_add(&l->sel, arg, true) ? 1 : -1;
	}
	if (parse_u64(arg, SEL_NO_MAX_DEPTH - 1, &v)) {
		cmd_usage_err("ls", "bad depth '%s' for %s", arg, as);
		return 2;
	}
	l->sel.max_depth = (uint32_t)v;
	return -1;
}

/* The combinations refused: 0 or 2 (message printed). */
static int ls_check_opts(struct ls *l, int npos)
{
	bool sel = l->sel.npats || l->sel.max_depth != SEL_NO_MAX_DEPTH;

	if (npos < 1) {
		cmd_usage_err("ls", "expected IMAGE [PATH...]");
		return 2;
	}
	if (sel && l->lst.mode == LST_NONE) {
		cmd_usage_err("ls", "--exclude and --max-depth go with the listings (-ls, -lls "
			      "...) only");
		return 2;
	}
	if (l->dump && npos > 2) {
		cmd_usage_err("ls", "--pseudo and --pack take one PATH");
		return 2;
	}
	return 0;
}

static int ls_parse(struct ls *l, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "long", no_argument, NULL, 'l' },
		{ "numeric-uid-gid", no_argument, NULL, 'n' },
		{ "recursive", no_argument, NULL, 'R' },
		{ "escape", no_argument, NULL, 'b' },
		{ "literal", no_argument, NULL, 'N' },
		{ "xattrs", no_argument, NULL, LS_OPT_XATTRS },
		{ "offset", required_argument, NULL, 'o' },
		{ "help", no_argument, NULL, 'h' },
		{ "pseudo", no_argument, NULL, LS_OPT_PSEUDO },
		{ "pack", no_argument, NULL, LS_OPT_PACK },
		{ "pack-root", required_argument, NULL, LS_OPT_PACK_ROOT },
		{ "exclude", required_argument, NULL, LS_OPT_EXCLUDE },
		{ "max-depth", required_argument, NULL, LS_OPT_MAX_DEPTH },
		SQK_CMD_REMOTE_LONGOPTS,
		{ NULL, 0, NULL, 0 },
	};
	struct cmdopt p;
	int ch;

	l->escape = -1;
	argc = lst_strip(&l->lst, argc, argv, LST_FOR_LS);
	cmdopt_init(&p, "ls", argc, argv, opts, "lnRbNo:h");
	while ((ch = cmdopt_next(&p)) != CMDOPT_END) {
		switch (ch) {
		case CMDOPT_POS: break;
		case CMDOPT_ERR: return 2;
		case 'l': l->longfmt = 1; break;
		case 'n': l->numeric = 1; break;
		case 'R': l->recursive = 1; break;
		case 'b': l->escape = 1; break;
		case 'N': l->escape = 0; break;
		case LS_OPT_XATTRS: l->lst.xattrs = true; break;
		case 'o':
			if (parse_bytes(p.arg, UINT64_MAX, &l->c.offset)) {
				cmd_usage_err("ls", "bad offset '%s' for %s", p.arg, p.as);
				return 2;
			}
			break;
		case 'h': ls_usage(stdout); return 0;
		case LS_OPT_PSEUDO: l->dump = LS_DUMP_PSEUDO; break;
		case LS_OPT_PACK: l->dump = LS_DUMP_PACK; break;
		case LS_OPT_PACK_ROOT: l->pack_root = p.arg; break;
		case LS_OPT_EXCLUDE: case LS_OPT_MAX_DEPTH:
			if ((ch = ls_select_opt(l, ch, p.arg, p.as)) >= 0)
				return ch;
			break;
		default:
			if (cmd_remote_opt("ls", &l->c.remote, ch, p.arg) == 0)
				break;
			return 2;
		}
	}
	if (ls_check_opts(l, p.npos))
		return 2;
	if (l->escape < 0)
		l->escape = isatty(STDOUT_FILENO);
	l->lst.escape = l->escape;
	l->c.image = argv[1];
	l->paths = argv + 2;
	l->npaths = p.npos - 1;
	return -1;
}

/* sqk ls -lls IMAGE [PATH...]: unsquashfs's listing, under the name squashfs-root, of what the
 * PATH patterns select (select.h, as sqk extract -lls). */
static int ls_unsquashfs(struct ls *l, char **paths, int npaths)
{
	for (int i = 0; i < npaths; i++) {
		if (!sel_path_ok(paths[i])) {
			cmd_err(&l->c, paths[i], 0, "a . or .. component; nothing listed");
			return 1;
		}
		if (sel_add(&l->sel, paths[i], false))
			return 1;
	}
	if (sel_check_paths(&l->sel, &l->c, "listed") ||
	    lst_tree_sel(&l->lst, &l->c, "squashfs-root", &l->sel))
		return 1;
	sel_warn_unmatched(&l->sel, &l->c);
	return 0;
}

/* Lists one operand: a directory's entries (under a "PATH:" header when head), else the
 * entry. pass 0 lists only non-directories, pass 1 only directories; *out counts what was
 * printed, for the blank line between groups. Returns 0 or the error (printed). */
static int ls_operand(struct ls *l, const char *path, int pass, bool head, int *out)
{
	struct sqk_inode ino;
	bool dir;
	int r;

	r = sqk_lookup_path(l->c.img, path, &ino);
	if (r) {
		if (pass == 0) /* said once */
			cmd_lookup(&l->c, path, &ino);
		return pass == 0 ? r : 0;
	}
	dir = cmd_is(&ino, SQK_T_DIR);
	if (dir != (pass == 1))
		return 0;
	if (l->dump)
		return ls_dump(&l->c, &ino, path, l->dump, l->pack_root, stdout);
	if (!dir) {
		ls_print(l, path, &ino);
		(*out)++;
		return 0;
	}
	if (head) {
		fputs(*out ? "\n" : "", stdout);
		ls_put(l, *path ? path : "/");
		fputs(":\n", stdout);
	}
	(*out)++;
	return ls_dir(l, &ino, path);
}

/* sqk ls IMAGE [PATH...]: as ls(1) lists several operands: the entries that are not
 * directories first, then each directory's contents under a "PATH:" header. A PATH pattern
 * stands for the entries it matches. */
static int ls_operands(struct ls *l)
{
	char *root = "", **paths;
	size_t n;
	int r, out = 0, bad = 0;

	r = ls_glob(&l->c, l->npaths ? l->paths : &root, l->npaths ? (size_t)l->npaths : 1,
		    &paths, &n);
	if (r)
		return r;
	if (l->dump && n != 1) {
		cmd_err(&l->c, l->paths[0], 0, "--pseudo and --pack take one entry; the "
			"pattern matches %zu", n);
		ls_glob_free(paths, n);
		return 1;
	}
	for (int pass = 0; pass < 2; pass++)
		for (size_t i = 0; i < n; i++)
			bad |= ls_operand(l, paths[i], pass, n > 1 || l->npaths > 1, &out) != 0;
	ls_glob_free(paths, n);
	return bad;
}

int ls_main(int argc, char **argv)
{
	struct ls l;
	int r;

	memset(&l, 0, sizeof(l));
	lst_init(&l.lst);
	sel_init(&l.sel);
	l.c.name = "ls";
	r = ls_parse(&l, argc, argv);
	if (r >= 0) {
		sel_free(&l.sel);
		return r;
	}
	if (cmd_open(&l.c)) {
		cmd_close(&l.c); /* what the options and the URL's name hold */
		return 1;
	}
	if (l.lst.mode != LST_NONE)
		r = ls_unsquashfs(&l, l.paths, l.npaths);
	else
		r = ls_operands(&l);
	fflush(stdout);
	if (ferror(stdout)) {
		cmd_err(&l.c, NULL, 0, "error writing to stdout");
		r = 1;
	}
	free(l.full);
	sel_free(&l.sel);
	lst_free(&l.lst);
	cmd_close(&l.c);
	return r == 2 ? 2 : r || l.status ? 1 : 0;
}
