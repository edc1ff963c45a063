/* SPDX-License-Identifier: BSD-2-Clause */
/* The listing habits of unsquashfs (-ls, -lls, -lln, -lc, -llc, -linfo, -UTC, -full-precision)
 * and of getfattr (xattr values), shared by sqk extract, sqk ls and sqk stat: the options, one
 * line per entry as unsquashfs prints it, owner names from the passwd and group files (cached
 * per id), and the walk of the tree that prints the entries a selection (select.h) picks. */
#ifndef SQK_LISTING_H
#define SQK_LISTING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "cmd.h"

/* Names of ids, looked up once each (getpwuid_r/getgrgid_r). */
struct lst_names {
	struct lst_name *slot; /* open addressing, cap a power of two (owned) */
	size_t cap, used;
	bool group;            /* getgrgid_r, else getpwuid_r */
};

enum lst_mode {
	LST_NONE = 0,
	LST_SHORT,  /* -ls: paths only */
	LST_LONG,   /* -lls: mode, owner/group, size, time, path */
};

struct listing {
	enum lst_mode mode;   /* LST_NONE: no listing option given */
	bool only;         /* -ls, -lls, -lln, -lc, -llc: list, extract nothing */
	bool numeric;      /* -lln: ids as numbers */
	bool concise;      /* -lc, -llc: files and empty directories only */
	bool info;         /* -li, -linfo (extract): list what is extracted, and extract */
	bool utc;          /* -UTC: times in UTC, not the local time zone */
	bool full_time;    /* -full-precision: seconds too */
	bool escape;       /* names with C escapes (a terminal), else as stored */
	bool xattrs;       /* sqk ls --xattrs: each entry's xattrs after its line */
	struct lst_names users, groups;
};

/* Sets l to no listing (zeroed, its caches empty). */
void lst_init(struct listing *l);

/* Which commands take an option of lst_take. */
#define LST_FOR_EXTRACT 0x1u
#define LST_FOR_LS 0x2u

/* Takes the listing option arg (unsquashfs's spelling: -lls, -llnumeric, -UTC ...) into l when
 * it is one for the command `who` (LST_FOR_*): true when taken. */
bool lst_take(struct listing *l, const char *arg, unsigned who);

/* Removes the listing options from argv[1..argc) (up to a "--"), taking them into l; returns
 * the new argc (argv[argc] stays NULL). For the commands that parse the rest with getopt. */
int lst_strip(struct listing *l, int argc, char **argv, unsigned who);

/* The name of uid (or gid, by the cache's kind) into buf (12 bytes): the passwd (group) file's
 * name, or the number when there is none. The returned string is borrowed from the cache or
 * buf. */
const char *lst_name(struct lst_names *n, uint32_t id, char buf[12]);

/* True when id has a name in the passwd (group) file. */
bool lst_has_name(struct lst_names *n, uint32_t id);

/* ls -l's mode string, e.g. "drwxr-sr-t" (unsquashfs's too). */
void lst_mode_string(uint32_t mode, char out[11]);

/* Writes s to f, with control characters and backslashes as C escapes when escape. */
void lst_put(bool escape, const char *s, FILE *f);

/* Frees the caches of l (l may be reused zeroed). */
void lst_free(struct listing *l);

/* Prints the entry ino at path (borrowed) as unsquashfs prints it with l->mode. Returns 0 or
 * SQK_E* (a symlink whose target cannot be read; nothing printed). */
int lst_line(struct listing *l, struct sqk_image *img, const char *path,
	     const struct sqk_inode *ino);

struct sel;

/* Prints, as unsquashfs does, under the name prefix (borrowed), the entries of c's image that
 * the selection s (cli/select.h: PATH patterns, excludes, a maximum depth) picks, and the
 * directories on the way to them (every entry when s has no PATH). Borrows s.
 * Returns 0 or SQK_E* (the message printed naming the path). */
int lst_tree_sel(struct listing *l, struct cmd *c, const char *prefix, struct sel *s);

/* Strips the leading and trailing slashes of paths[0..n) and joins repeated ones, in place
 * (for sqk stat, which takes exact paths). */
void lst_norm_paths(char **paths, size_t n);

/* Writes ino's xattrs to f, one per line as `getfattr -d -m -` shows them (name="text" with \\
 * and \" escaped, or name=0sBASE64 for a value that is not printable ASCII; one trailing NUL
 * dropped), each line after indent. Returns 0 or SQK_E*. */
int lst_xattrs(struct sqk_image *img, const struct sqk_inode *ino, const char *indent, FILE *f);

#endif
