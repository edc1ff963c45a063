/* SPDX-License-Identifier: BSD-2-Clause */
/* sqk extract's command line: usage, options (unsquashfs's spellings too, anywhere on the
 * line), the PATH patterns, extract and exclude lists, and where DEST comes from. */
#include "extract.h"
#include "cmdopt.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void x_usage(FILE *f)
{
	fprintf(f,
		"usage: sqk extract [OPTIONS] IMAGE|URL [DEST] [PATH...]\n"
		"       sqk extract -pf FILE | -s [-UTC] [OPTIONS] IMAGE|URL\n"
		"       sqk extract [OPTIONS] -d DEST IMAGE|URL [PATH...]   (unsquashfs's form)\n"
		"       sqk extract -cat [OPTIONS] IMAGE|URL PATH...\n"
		"\n"
		"Extracts a SquashFS image into the directory DEST (created if missing; default\n"
		"squashfs-root, as unsquashfs), or only the entries that PATH... select, with\n"
		"their parent directories. Options may come anywhere on the line; -- ends them.\n"
		"DEST is the second positional argument unless -d, -cat, -excludes or -ex is\n"
		"given: then every positional after IMAGE is a PATH (sqk extract IMG alone\n"
		"extracts into squashfs-root).\n"
		"\n"
		"PATH is a pattern as unsquashfs takes it: matched a component at a time with\n"
		"shell wildcards (*, ?, [...]; a leading '.' only explicitly); a directory\n"
		"matching a whole PATH brings everything below it. A PATH without wildcards\n"
		"that is not in the image is an error before anything is made; a pattern\n"
		"matching nothing is a warning.\n"
		"\n"
		"Restores contents, permission bits (incl. setuid, setgid, sticky), owners\n"
		"(when run as root), mtimes, xattrs (trusted. and security. only as root), hard\n"
		"links, symlinks, devices, fifos and sockets; all-zero blocks are written as\n"
		"holes. The image root's attributes are applied to DEST.\n"
		"\n"
		"Safety: names that are empty, '.', '..', contain '/', or are duplicated or\n"
		"unsorted in a directory are rejected as corruption; nothing is written through\n"
		"a symlink or outside DEST. A DEST that exists and is not empty is refused\n"
		"unless -f. A file whose contents fail half way (a corrupt block, a read or\n"
		"write error, a full disk, a signal) is removed, never left short or wrong; its\n"
		"hard links are not made. Extraction stops at the first error (-st), or goes on\n"
		"past each with -ig. After a failure or a signal, the directories made still\n"
		"get their modes and mtimes, and a message says how many files were extracted\n"
		"and how many partial files removed.\n"
		"\n"
		"  -d, --dest DEST        extract into DEST (unsquashfs -d, -dest)\n"
		"  -f, --force            extract into a non-empty DEST, replacing entries in\n"
		"                         the way (a symlink in DEST is replaced, never\n"
		"                         followed; a file is written under a temporary name\n"
		"                         and renamed over the entry once whole, so a failed\n"
		"                         file leaves it as it was)\n"
		"  -e, -ef, --extract-file FILE  PATH patterns from FILE, one a line (leading\n"
		"                         blanks dropped; unsquashfs -e, -ef, -extract-file)\n"
		"      --exclude GLOB     leave out the entries GLOB matches, with what is\n"
		"                         below them\n"
		"      --exclude-file, -exc, -excf FILE  exclude patterns from FILE, one a line\n"
		"      --excludes         the PATHs after this option are excludes\n"
		"                         (unsquashfs -excludes)\n"
		"      -ex, --exclude-list GLOB... ';'  excludes up to a ';' word\n"
		"      --max-depth, -max N  descend at most N levels (1: the root's entries)\n"
		"  -j, -p, --threads, -processors N  threads writing file contents (default:\n"
		"                         online CPUs)\n"
		"  -o, --offset N         the image starts N bytes into the file (K/M/G\n"
		"                         suffixes; mksquashfs -offset, unsquashfs -o)\n"
		"  -n, --no-progress      no progress line (on a terminal's stderr: files and\n"
		"                         bytes done, the rate, the time left; a summary line\n"
		"                         at the end)\n"
		"  -q, --quiet            the same (unsquashfs -q): errors are still printed\n"
		"  -i, --info             print each entry (DEST/PATH) on stdout as it is made\n"
		"      -ig, --ignore-errors  go on after an error (that file or entry left out,\n"
		"                         a partial file removed); exit 1 at the end with the\n"
		"                         count\n"
		"      -st, --strict-errors  stop at the first error (the default)\n"
		"  -x, --xattrs           restore xattrs (the default)\n"
		"      -no, --no-xattrs   do not restore xattrs\n"
		"      --xattrs-include REGEX  restore only the xattrs whose names REGEX\n"
		"                         matches\n"
		"      --xattrs-exclude REGEX  do not restore the xattrs whose names REGEX\n"
		"                         matches\n"
		"      --cat              write the files PATH... select to stdout (as sqk\n"
		"                         cat), extracting nothing\n"
		"      -pf, --pseudo-file FILE  write the image as pseudo definitions to FILE\n"
		"                         (- for stdout) and extract nothing (unsquashfs -pf;\n"
		"                         as sqk ls --pseudo)\n"
		"  -s, -stat, --stat      print the superblock as unsquashfs -s (as sqk info\n"
		"                         -s), extracting nothing\n"
		"unsquashfs's listings: -ls, -ll ... list and extract nothing (sqk extract -lls "
		"IMAGE\n"
		"[PATH...]); -li, -linfo list and extract. Paths are named under DEST (-d DEST),\n"
		"else squashfs-root, as unsquashfs does; PATHs and excludes select as above:\n"
		"  -l, -ls                paths only (unsquashfs -ls)\n"
		"  -ll, -lls              with mode, owner/group names, size and mtime\n"
		"                         (unsquashfs -lls)\n"
		"  -lln, -llnumeric       as -lls with numeric owners\n"
		"  -lc, -llc              as -ls, -lls with only files and empty directories\n"
		"  -li, -linfo            the -lls lines of what is extracted (listed before\n"
		"                         the files are written)\n"
		"  -UTC, --utc            times in UTC, not the local time zone\n"
		"  -full, -full-precision, --full-time  times with seconds\n"
		SQK_CMD_REMOTE_HELP
		"  -h, --help             this text\n"
		"Every long option may also be given with one dash, as unsquashfs spells them\n"
		"(-dest, -force, -ef, -excludes, -max-depth, -ig, -st, -no-xattrs, -info,\n"
		"-cat).\n"
		"\n"
		"Exit status: 0 ok, 1 error (corrupt image, I/O, DEST not empty, cannot create\n"
		"or set attributes; with -ig: after all of it, when there was any error), 2\n"
		"usage, 128+N when stopped by signal N (130 SIGINT, 143 SIGTERM): the message\n"
		"names DEST, the files extracted and the partial file removed.\n"
		"\n");
}

enum {
	X_OPT_NO_PROGRESS = 0x2100, X_OPT_EXCLUDE, X_OPT_EXCLUDE_FILE, X_OPT_EXCLUDES,
	X_OPT_EXCLUDE_LIST, X_OPT_MAX_DEPTH, X_OPT_IG, X_OPT_ST, X_OPT_NO_XATTRS,
	X_OPT_XINC, X_OPT_XEXC, X_OPT_CAT, X_OPT_PF, X_OPT_STAT,
};

/* What the command line says beyond x's fields: the positionals and where DEST comes from. */
struct x_args {
	struct cmdopt p;
	char **pos;           /* positionals in order (borrowed) */
	bool *excl;           /* pos[i] came after -excludes */
	int npos;
	bool excludes;        /* -excludes seen */
	bool in_list;         /* inside -ex ... ; */
	bool no_dest_pos;     /* -d, -cat, -excludes or -ex: no DEST positional */
};

/* A handler's 0 (done) as the parser's -1 (go on); an exit status as it is. */
static int taken(int r)
{
	return r ? r : -1;
}

/* Adds pattern (borrowed) to the selection after checking it. 0 or 2. */
static int x_pattern(struct extract *x, const char *pat, bool exclude)
{
	if (!sel_path_ok(pat)) {
		cmd_usage_err("extract", "PATH '%s' has a . or .. component", pat);
		return 2;
	}
	if (sel_add(&x->sel, pat, exclude)) {
		cmd_usage_err("extract", "out of memory");
		return 2;
	}
	return 0;
}

/* Reads a list file (-ef, -exclude-file): one pattern a line, leading blanks dropped, empty
 * lines skipped. The text is kept in x->lists. 0 or 2. */
static int x_list_file(struct extract *x, const char *file, bool exclude)
{
	FILE *f = fopen(file, "r");
	char *text = NULL, *line, *save = NULL, **l;
	size_t cap = 0;
	ssize_t n;

	if (!f || (n = getdelim(&text, &cap, '\0', f)) < 0 || ferror(f)) {
		cmd_usage_err("extract", "cannot read the %s list '%s': %s",
			      exclude ? "exclude" : "extract", file, strerror(errno));
		if (f)
			fclose(f);
		free(text);
		return 2;
	}
	fclose(f);
	l = realloc(x->lists, (x->nlists + 1) * sizeof(*l));
	if (!l) {
		free(text);
		return 2;
	}
	x->lists = l;
	x->lists[x->nlists++] = text;
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		line += strspn(line, " \t");
		line[strcspn(line, "\r")] = '\0';
		if (*line && x_pattern(x, line, exclude))
			return 2;
	}
	return 0;
}

static int x_regex(regex_t *re, bool *has, const char *arg, const char *as)
{
	if (*has)
		regfree(re);
	*has = regcomp(re, arg, REG_EXTENDED | REG_NOSUB) == 0;
	if (!*has) {
		cmd_usage_err("extract", "%s '%s': not a regular expression", as, arg);
		return 2;
	}
	return 0;
}

/* The numbers: -j/-p, -o, -max-depth. -1 taken, 2 bad. */
static int x_number(struct extract *x, int ch, const char *arg, const char *as)
{
	uint64_t v;

	if (ch == 'j' || ch == 'p') {
		if (parse_u64(arg, 1024, &v) || v == 0) {
			cmd_usage_err("extract", "bad thread count '%s' for %s (1-1024)", arg, as);
			return 2;
		}
		x->threads = (unsigned)v;
	} else if (ch == 'o') {
		if (parse_bytes(arg, UINT64_MAX, &x->c.offset)) {
			cmd_usage_err("extract", "bad offset '%s' for %s", arg, as);
			return 2;
		}
	} else {
		if (parse_u64(arg, SEL_NO_MAX_DEPTH - 1, &v)) {
			cmd_usage_err("extract", "bad depth '%s' for %s", arg, as);
			return 2;
		}
		x->sel.max_depth = (uint32_t)v;
	}
	return -1;
}

/* The selection and xattr options. -1 taken, 0 not one of them, else the exit status. */
static int x_select_opt(struct extract *x, struct x_args *a, int ch, const char *arg)
{
	switch (ch) {
	case 'e': return taken(x_list_file(x, arg, false));
	case X_OPT_EXCLUDE: return taken(x_pattern(x, arg, true));
	case X_OPT_EXCLUDE_FILE: return taken(x_list_file(x, arg, true));
	case X_OPT_EXCLUDES: a->excludes = a->no_dest_pos = true; return -1;
	case X_OPT_EXCLUDE_LIST: a->in_list = a->no_dest_pos = true; return -1;
	case X_OPT_MAX_DEPTH: return x_number(x, ch, arg, a->p.as);
	case 'x': x->no_xattrs = false; return -1;
	case X_OPT_NO_XATTRS: x->no_xattrs = true; return -1;
	case X_OPT_XINC: return taken(x_regex(&x->xinc, &x->has_xinc, arg, a->p.as));
	case X_OPT_XEXC: return taken(x_regex(&x->xexc, &x->has_xexc, arg, a->p.as));
	default: return 0;
	}
}

/* One option. -1 taken, else the exit status. */
static int x_option(struct extract *x, struct x_args *a, int ch, const char *arg)
{
	int r = x_select_opt(x, a, ch, arg);

	if (r)
		return r;
	switch (ch) {
	case 'j': case 'p': case 'o': return x_number(x, ch, arg, a->p.as);
	case 'f': x->force = true; return -1;
	case 'n': case 'q': case X_OPT_NO_PROGRESS: x->progress = false; return -1;
	case 'd': x->dest = arg; a->no_dest_pos = true; return -1;
	case 'i': x->info = true; return -1;
	case X_OPT_IG: x->ignore_errors = true; return -1;
	case X_OPT_ST: x->ignore_errors = false; return -1;
	case X_OPT_CAT: x->cat = a->no_dest_pos = true; return -1;
	case X_OPT_PF: x->pseudo_file = arg; a->no_dest_pos = true; return -1;
	case 's': case X_OPT_STAT: x->stat = a->no_dest_pos = true; return -1;
	case 'h': x_usage(stdout); return 0;
	default:
		r = cmd_remote_opt("extract", &x->c.remote, ch, arg);
		return r == 0 ? -1 : 2;
	}
}

static const struct option x_longs[] = {
	{ "threads", required_argument, NULL, 'j' },
	{ "processors", required_argument, NULL, 'p' },
	{ "force", no_argument, NULL, 'f' },
	{ "offset", required_argument, NULL, 'o' },
	{ "no-progress", no_argument, NULL, X_OPT_NO_PROGRESS },
	{ "quiet", no_argument, NULL, 'q' },
	{ "dest", required_argument, NULL, 'd' },
	{ "ef", required_argument, NULL, 'e' },
	{ "extract-file", required_argument, NULL, 'e' },
	{ "exclude", required_argument, NULL, X_OPT_EXCLUDE },
	{ "exclude-file", required_argument, NULL, X_OPT_EXCLUDE_FILE },
	{ "exc", required_argument, NULL, X_OPT_EXCLUDE_FILE },
	{ "excf", required_argument, NULL, X_OPT_EXCLUDE_FILE },
	{ "excludes", no_argument, NULL, X_OPT_EXCLUDES },
	{ "exclude-list", no_argument, NULL, X_OPT_EXCLUDE_LIST },
	{ "ex", no_argument, NULL, X_OPT_EXCLUDE_LIST },
	{ "max-depth", required_argument, NULL, X_OPT_MAX_DEPTH },
	{ "max", required_argument, NULL, X_OPT_MAX_DEPTH },
	{ "info", no_argument, NULL, 'i' },
	{ "ignore-errors", no_argument, NULL, X_OPT_IG },
	{ "ig", no_argument, NULL, X_OPT_IG },
	{ "strict-errors", no_argument, NULL, X_OPT_ST },
	{ "st", no_argument, NULL, X_OPT_ST },
	{ "xattrs", no_argument, NULL, 'x' },
	{ "no-xattrs", no_argument, NULL, X_OPT_NO_XATTRS },
	{ "no", no_argument, NULL, X_OPT_NO_XATTRS },
	{ "xattrs-include", required_argument, NULL, X_OPT_XINC },
	{ "xattrs-exclude", required_argument, NULL, X_OPT_XEXC },
	{ "cat", no_argument, NULL, X_OPT_CAT },
	{ "pf", required_argument, NULL, X_OPT_PF },
	{ "pseudo-file", required_argument, NULL, X_OPT_PF },
	{ "stat", no_argument, NULL, X_OPT_STAT },
	{ "help", no_argument, NULL, 'h' },
	SQK_CMD_REMOTE_LONGOPTS,
	{ NULL, 0, NULL, 0 },
};

/* A positional word: into a->pos, or an exclude of -ex ... ';'. 0 or 2. */
static int x_positional(struct extract *x, struct x_args *a, char *w)
{
	if (a->in_list) {
		if (!strcmp(w, ";"))
			a->in_list = false;
		else if (x_pattern(x, w, true))
			return 2;
		return 0;
	}
	a->excl[a->npos] = a->excludes;
	a->pos[a->npos++] = w;
	return 0;
}

/* IMAGE, DEST and the PATHs from the positionals. -1 or 2. */
static int x_positionals(struct extract *x, struct x_args *a)
{
	int i = 1;

	if (a->in_list) {
		cmd_usage_err("extract", "-ex: the exclude list needs a ';' word at its end");
		return 2;
	}
	if (a->npos < 1 || (x->cat && a->npos < 2)) {
		cmd_usage_err("extract", x->cat ? "-cat: expected IMAGE PATH..." :
			      "expected IMAGE [DEST] [PATH...]");
		return 2;
	}
	x->c.image = a->pos[0];
	if (!a->no_dest_pos && !x->lst.only && a->npos > 1) {
		if (sel_is_glob(a->pos[1])) {
			cmd_usage_err("extract", "DEST '%s' looks like a PATH pattern: give DEST "
				      "first, or -d DEST", a->pos[1]);
			return 2;
		}
		x->dest = a->pos[i++];
	}
	for (; i < a->npos; i++)
		if (x_pattern(x, a->pos[i], a->excl[i]))
			return 2;
	if (!x->dest)
		x->dest = "squashfs-root";
	return -1;
}

int x_parse(struct extract *x, int argc, char **argv)
{
	struct x_args a = { .pos = calloc((size_t)argc + 1, sizeof(char *)),
			    .excl = calloc((size_t)argc + 1, sizeof(bool)) };
	int ch, r = -1;

	if (!a.pos || !a.excl) {
		free(a.pos);
		free(a.excl);
		return 1;
	}
	cmdopt_init(&a.p, "extract", argc, argv, x_longs, "j:p:fo:nqd:e:xish");
	while (r < 0 && (ch = cmdopt_next(&a.p)) != CMDOPT_END) {
		if (ch == CMDOPT_ERR)
			r = 2;
		else if (ch == CMDOPT_POS)
			r = taken(x_positional(x, &a, (char *)a.p.arg));
		else
			r = x_option(x, &a, ch, a.p.arg);
	}
	if (r < 0)
		r = x_positionals(x, &a);
	free(a.pos);
	free(a.excl);
	return r;
}

void x_free_opts(struct extract *x)
{
	for (size_t i = 0; i < x->nlists; i++)
		free(x->lists[i]);
	free(x->lists);
	if (x->has_xinc)
		regfree(&x->xinc);
	if (x->has_xexc)
		regfree(&x->xexc);
	sel_free(&x->sel);
}

bool x_xattr_wanted(const struct extract *x, const char *name)
{
	if (x->no_xattrs)
		return false;
	if (x->has_xinc && regexec(&x->xinc, name, 0, NULL, 0))
		return false;
	return !(x->has_xexc && regexec(&x->xexc, name, 0, NULL, 0) == 0);
}
