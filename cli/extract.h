/* SPDX-License-Identifier: BSD-2-Clause */
/* Internals of sqk extract shared by extract.c (the command: the phases in order), its options
 * (extract_opts.c), its phases (extract_tree.c, extract_files.c, extract_dirs.c) and
 * extract_fs.c (safe filesystem operations relative to directory fds, metadata, contents). */
#ifndef SQK_EXTRACT_H
#define SQK_EXTRACT_H

#include <pthread.h>
#include <regex.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "cmd.h"
#include "listing.h"
#include "progress.h"
#include "select.h"

/* One extracted name. Directories, files and the rest share the table; indices stay valid. */
struct xent {
	char *path;           /* relative to DEST; "" = DEST itself */
	const char *name;     /* last component, inside path */
	int32_t parent;       /* entry index of the parent directory, -1 for DEST */
	int32_t link_to;      /* hard link: entry index of the first name, else -1 */
	uint32_t depth;
	bool walked;          /* directory: contents extracted (not just a PATH component) */
	bool made;            /* directory: created (or reused under --force) in DEST */
	bool replace;         /* regular file under --force with an entry at its name in DEST:
			       * written under a temporary name, renamed over that entry once
			       * whole (x_replace_at), so a failure leaves the entry as it was */
	bool not_made;        /* regular file not written whole (its partial file removed, or
			       * never created): no hard link is made to its name */
	struct sqk_inode ino;
};

struct extract {
	struct cmd c;
	const char *dest;
	int destfd;
	unsigned threads;
	bool force;
	bool root;            /* running as root: owners, devices, trusted./security. xattrs */
	uint32_t block_size;
	struct xent *ents;
	size_t nents, capents;
	int32_t *first;       /* by inode number: entry index of its first name, or -1 */
	size_t *jobs;         /* regular files whose contents the workers write */
	size_t njobs, capjobs;
	atomic_size_t next_job;
	atomic_int failed;
	atomic_int xattr_warned;
	atomic_size_t files_done; /* regular files written whole, with their metadata */
	atomic_size_t files_removed; /* partial files removed after their contents failed */
	atomic_size_t files_partial; /* partial files that could not be removed (named) */
	size_t made_dirs;     /* directories created under DEST (phase 1) */
	size_t made_other;    /* symlinks, devices, fifos, sockets, hard links made (phases 1, 3) */
	bool progress;        /* the progress line on a terminal (no --no-progress) */
	struct progress pr;
	struct listing lst;   /* -ls, -lls, ... (list only), -li, -linfo (list, extract) */
	struct sel sel;       /* PATH patterns, excludes, -max-depth */
	bool ignore_errors;   /* -ig: go on after an error, count it, exit 1 at the end */
	bool info;            /* -i: print each entry as it is made */
	bool no_xattrs;       /* -no-xattrs */
	bool cat;             /* -cat: the PATHs' files to stdout, nothing extracted */
	bool has_xinc, has_xexc; /* -xattrs-include / -xattrs-exclude given */
	regex_t xinc, xexc;
	atomic_size_t errors; /* errors gone past under -ig */
	const atomic_int *sig; /* the signal that stops the extraction (sigwatch), or NULL */
	char **lists;         /* -ef / -exclude-file contents (owned, freed by x_free_opts) */
	size_t nlists;
	const char *pseudo_file; /* -pf FILE: the image as pseudo definitions ("-": stdout) */
	bool stat;            /* -s, -stat: the superblock report (as sqk info -s) */
};

/* True when a signal asked the extraction to stop. */
static inline bool x_stopped(const struct extract *x)
{
	return x->sig && atomic_load(x->sig);
}

/* An error at entry or file: under -ig it is counted and the extraction goes on (true),
 * else it stops (false). */
static inline bool x_go_on(struct extract *x)
{
	if (!x->ignore_errors || x_stopped(x))
		return false;
	atomic_fetch_add(&x->errors, 1);
	return true;
}

/* Opens the directory of entry idx by walking its path from DEST, one component at a time with
 * O_DIRECTORY|O_NOFOLLOW (never through a symlink). Returns an fd or -1 with errno. */
int x_open_dir(struct extract *x, size_t idx);

/* Removes name in dfd (a whole tree for a directory) without following symlinks. */
int x_remove_at(int dfd, const char *name);

/* Applies owner, xattrs, mode and mtime of entry idx: through fd when fd >= 0 (files,
 * directories), else to name in dfd without following it. Returns 0 or -1 (message printed). */
int x_meta(struct extract *x, size_t idx, int fd, int dfd);

/* Why a file's contents could not be written, for the message printed once the partial
 * file is dealt with. */
struct x_fail {
	const char *what;     /* "read failed", "write failed", ... */
	int err;              /* a failed read: SQK_E*, else 0 */
	int errnum;           /* a failed write: errno, else 0 */
	uint64_t off;         /* a failed read: its file offset */
};

/* x_fail.what of a file whose writing a signal stopped. */
#define X_STOPPED "stopped"

/* Writes the contents of file entry idx into fd, leaving holes for all-zero blocks.
 * buf holds 1 MiB. Returns 0, or -1 with *f saying why (nothing printed). */
int x_write_file(struct extract *x, size_t idx, int fd, void *buf, struct x_fail *f);

/* Under --force: when an entry exists at the name of entry idx (a regular file) in dfd, marks
 * idx to be written under a temporary name and renamed over it (nothing is removed yet). */
void x_mark_replace(struct extract *x, size_t idx, int dfd);

/* Writes a temporary name for entry idx, unique to this process, into buf (cap bytes;
 * attempt > 0 for another one after EEXIST). The name says what it is (".sqk-partial..."). */
void x_tmp_name(char *buf, size_t cap, size_t idx, unsigned attempt);

/* Renames tmp over name in dfd; a directory at name (which rename cannot replace by a file)
 * is removed first. Returns 0 or -1 with errno. */
int x_replace_at(int dfd, const char *tmp, const char *name);

/* Prints an error about entry idx (errno-style message when errnum != 0). */
void x_err(struct extract *x, size_t idx, int errnum, const char *what);

/* The phases and the options, each in its file, called by extract.c (extract_main);
 * each returns 0 or -1 (message printed) unless said otherwise. */

/* extract_dump.c: -pf FILE and -s (unsquashfs's), through sqk ls --pseudo's and sqk info -s's
 * code. Runs with x parsed (its image not open); returns the exit status, messages printed. */
int x_dump(struct extract *x);

/* extract_opts.c */
/* Parses argv into x: -1 to go on, else the exit status to return (help, usage errors).
 * Borrows argv; what x owns after it is freed by x_free_opts. */
int x_parse(struct extract *x, int argc, char **argv);
/* Frees what x_parse allocated. */
void x_free_opts(struct extract *x);
/* Whether xattr name is extracted (-no-xattrs, -xattrs-include, -xattrs-exclude). */
bool x_xattr_wanted(const struct extract *x, const char *name);

/* extract_tree.c (phase 1) */
/* Appends an entry named name under parent; returns its index or -1. */
ssize_t x_add(struct extract *x, int32_t parent, const char *name,
	      const struct sqk_inode *ino);
/* Makes the selected entries (x->sel) below DEST, which is entry 0. */
int x_extract_tree(struct extract *x);

/* extract_files.c (phases 2 and 3) */
/* Phase 2: the workers that write the regular files' contents and metadata. */
int x_run_workers(struct extract *x);
/* Phase 3: the remaining names of hard-linked regular files. */
int x_link_files(struct extract *x);

/* extract_dirs.c */
/* Phase 4: directory owners, xattrs, modes and mtimes, deepest first; also after a failure,
 * for the directories made so far, so that none is left 0700. Every directory is tried: one
 * that fails does not leave the others unfinished. */
int x_dir_meta(struct extract *x);

#define SQK_X_CHUNK (1u << 20)

#endif
