/* SPDX-License-Identifier: BSD-2-Clause */
/* sqk umount: finds MOUNTPOINT in /proc/self/mountinfo, refuses it unless it is a sqkfuse mount
 * (type fuse.sqkfuse: sqkfuse and sqk mount set that subtype), then unmounts it as
 * `fusermount3 -u` does: with umount2() as root, else by running fusermount3 (setuid root; it
 * checks that the mount is the user's). No libfuse needed: sqk built without FUSE has it too. */
#include "umount.h"

#include <errno.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <unistd.h>

#define SQKFUSE_TYPE "fuse.sqkfuse"

static void usage(FILE *f)
{
	fprintf(f, "usage: sqk umount [-z] MOUNTPOINT\n"
		   "\n"
		   "Unmounts the sqkfuse mount at MOUNTPOINT (made by sqkfuse or sqk mount), as\n"
		   "fusermount3 -u does: directly as root, else through fusermount3 (part of "
		   "fuse3),\n"
		   "which allows it to the user who mounted it. Anything else at MOUNTPOINT "
		   "(another\n"
		   "filesystem, another FUSE filesystem, no mount) is refused. sqkfuse then "
		   "exits,\n"
		   "writing its -o stats= and -o trace= files.\n"
		   "\n"
		   "  -z, --lazy    detach now even if busy; unmounted when no longer in use\n"
		   "  -h, --help    this text\n"
		   "\n"
		   "Exit status: 0 unmounted, 1 error (not a sqkfuse mount, busy, not permitted),\n"
		   "2 usage.\n");
}

/* The mount point as mountinfo spells it: the parent resolved, the last component kept, so
 * that the mount of a daemon that died (stat gives ENOTCONN) is still found. Caller frees. */
static char *resolve(const char *mnt)
{
	char *copy = strdup(mnt), *dcopy = strdup(mnt), *out = NULL;
	size_t len = copy ? strlen(copy) : 0;

	while (copy && len > 1 && copy[len - 1] == '/')
		copy[--len] = 0;
	if (copy && dcopy) {
		const char *base = basename(copy);
		if (!strcmp(base, ".") || !strcmp(base, "..") || !strcmp(base, "/")) {
			out = realpath(copy, NULL);
		} else {
			strcpy(dcopy, copy);
			char *dir = realpath(dirname(dcopy), NULL);
			size_t n = dir ? strlen(dir) + strlen(base) + 2 : 0;
			out = dir ? malloc(n) : NULL;
			if (out)
				snprintf(out, n, "%s%s%s", dir, strcmp(dir, "/") ? "/" : "", base);
			free(dir);
		}
	}
	free(copy);
	free(dcopy);
	return out;
}

/* Decodes mountinfo's octal escapes (\040 space, \011 tab, \012 newline, \134 '\') in place. */
static void unescape(char *s)
{
	char *w = s;

	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' &&
		    s[3] >= '0' && s[3] <= '7') {
			*w++ = (char)((s[1] - '0') << 6 | (s[2] - '0') << 3 | (s[3] - '0'));
			s += 3;
		} else {
			*w++ = *s;
		}
	}
	*w = 0;
}

/* The type of the top-most mount on path into type (cap bytes). Returns 1 found, 0 none, -1 when
 * mountinfo cannot be read. */
static int find_mount(const char *path, char *type, size_t cap)
{
	FILE *f = fopen("/proc/self/mountinfo", "r");
	char *line = NULL;
	size_t lcap = 0;
	int found = 0;

	if (!f)
		return -1;
	while (getline(&line, &lcap, f) > 0) {
		/* ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - TYPE SOURCE SUPER */
		char *save = NULL, *tok = strtok_r(line, " \n", &save), *mp = NULL;
		for (int i = 0; tok && i < 4; i++)
			tok = strtok_r(NULL, " \n", &save);
		mp = tok;
		while (tok && strcmp(tok, "-"))
			tok = strtok_r(NULL, " \n", &save);
		tok = tok ? strtok_r(NULL, " \n", &save) : NULL;
		if (!mp || !tok)
			continue;
		unescape(mp);
		if (!strcmp(mp, path)) { /* later lines are mounts on top of earlier ones */
			snprintf(type, cap, "%s", tok);
			found = 1;
		}
	}
	free(line);
	fclose(f);
	return found;
}

/* Unmounts path: umount2 as root, else fusermount3 -u (exec'd: its status is ours). */
static int unmount(const char *shown, const char *path, int lazy)
{
	if (geteuid() == 0) {
		if (!umount2(path, UMOUNT_NOFOLLOW | (lazy ? MNT_DETACH : 0)))
			return 0;
		if (errno == EBUSY)
			fprintf(stderr,
				"sqk umount: %s: busy (files or directories are open on it; "
				"-z detaches it now and unmounts it when they are closed)\n",
				shown);
		else
			fprintf(stderr, "sqk umount: %s: %s\n", shown, strerror(errno));
		return 1;
	}
	char *argv[] = { "fusermount3", "-u", lazy ? "-z" : NULL, NULL, NULL };
	argv[lazy ? 3 : 2] = (char *)path;
	fflush(NULL);
	execvp(argv[0], argv);
	fprintf(stderr, "sqk umount: %s: cannot run fusermount3 (part of fuse3; needed to unmount "
		"as a user other than root): %s\n", shown, strerror(errno));
	return 1;
}

int umount_main(int argc, char **argv)
{
	static const struct option lo[] = { { "lazy", no_argument, NULL, 'z' },
					    { "help", no_argument, NULL, 'h' },
					    { NULL, 0, NULL, 0 } };
	char type[256];
	int ch, lazy = 0;

	optind = 1;
	while ((ch = getopt_long(argc, argv, "zh", lo, NULL)) != -1) {
		if (ch == 'h') {
			usage(stdout);
			return 0;
		}
		if (ch != 'z') {
			fprintf(stderr, "sqk umount: bad option (see sqk umount --help)\n");
			return 2;
		}
		lazy = 1;
	}
	if (argc - optind != 1) {
		fprintf(stderr, "sqk umount: expected one MOUNTPOINT (see sqk umount --help)\n");
		return 2;
	}
	const char *shown = argv[optind];
	char *path = resolve(shown);
	if (!path) {
		fprintf(stderr, "sqk umount: %s: %s\n", shown, strerror(errno));
		return 1;
	}
	int found = find_mount(path, type, sizeof(type)), rc = 1;
	if (found < 0)
		fprintf(stderr, "sqk umount: cannot read /proc/self/mountinfo: %s\n",
			strerror(errno));
	else if (!found)
		fprintf(stderr, "sqk umount: %s: not a mount point\n", shown);
	else if (strcmp(type, SQKFUSE_TYPE))
		fprintf(stderr, "sqk umount: %s: a %s mount, not a sqkfuse one: refused (umount or "
			"fusermount3 -u unmount it)\n", shown, type);
	else
		rc = unmount(shown, path, lazy);
	free(path);
	return rc;
}
