/* SPDX-License-Identifier: BSD-2-Clause */
/* Internals of sqk tar shared by tar.c (options, output file, libarchive setup) and tar_walk.c
 * (the walk in image order and one archive entry per name: metadata, xattrs, hard links, sparse
 * file data). */
#ifndef SQK_TAR_H
#define SQK_TAR_H

#include <stdatomic.h>
#include <stdbool.h>

#include "cmd.h"
#include "progress.h"

struct archive;
struct archive_entry;

/* Reads of file data: a multiple of every block size. */
#define SQK_TAR_CHUNK (1u << 20)

/* A data region of a file being written: [off, off + len) holds a block that is not all zero. */
struct tar_region {
	uint64_t off, len;
};

/* First name of an inode with several names: later names become hard-link entries to it. */
struct tar_link {
	uint32_t ino;         /* 0 = free slot */
	uint64_t name;        /* offset of the archive name in names */
};

struct tar {
	struct cmd c;
	struct archive *a;
	struct archive_entry *ent;
	int fd;               /* where the archive goes */
	struct sqk_image *_Atomic cancel_img; /* the image, for the signal watcher's cancel */
	bool sparse;          /* store sparse blocks as holes (default; --no-sparse clears) */
	uint32_t block_size;
	atomic_int sig;       /* signal that interrupts the walk (-o FILE only); 0 = none */
	int out_errno;        /* errno of the failed write of the archive, 0 = none */
	bool discard;         /* the archive failed: its output callback writes nothing more */
	const char *out_name; /* "stdout" or FILE, for messages */
	/* Image path of the current entry (no leading '/'); its archive name starts at rel. */
	char *path;
	size_t plen, pcap, rel;
	const char *top_name; /* archive name of the top entry ("." for a directory) */
	struct tar_link *links;
	size_t nlinks, caplinks;
	char *names;          /* archive names of first names, NUL-terminated */
	size_t nnames, capnames;
	struct tar_region *map;
	size_t nmap, capmap;
	uint32_t *words;      /* block list of the current file */
	size_t capwords;
	char *xnames, *xval;  /* xattr buffers, reused */
	size_t capxnames, capxval;
	unsigned char *buf;   /* SQK_TAR_CHUNK bytes */
	bool no_progress;     /* --no-progress */
	struct progress pr; /* the progress line on a terminal: files and bytes stored */
};

/* Entry point of `sqk tar`; argv[0] is the command name. Returns the process exit status. */
int tar_main(int argc, char **argv);

/* Writes the entry at t->path (top entry: the inode top) and everything below it. Returns 0
 * or -1 after printing an error (the archive is then unusable). */
int tar_walk(struct tar *t, const struct sqk_inode *top);

/* Prints the error of a failed libarchive call about the current entry (the write error when
 * the output failed). */
void tar_archive_err(struct tar *t, const char *what);

#endif
