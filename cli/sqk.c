/* SPDX-License-Identifier: BSD-2-Clause */
/* sqk: the command-line front door; dispatches to the subcommands. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#if SQK_HAVE_FUSE
#include "fuse/mount.h"
#endif
#include "mkimage.h"
#include "cmd.h"
#include "diff.h"
#include "sign.h"
#if SQK_HAVE_TAR
#include "tar.h"
#endif
#include "umount.h"

#ifndef SQK_VERSION
#define SQK_VERSION "unknown" /* the Makefile's VERSION, given to this file */
#endif

static void usage(FILE *f)
{
	fprintf(f, "usage: sqk COMMAND [ARGS...]\n"
		   "\n"
		   "commands:\n"
		   "  mkimage [OPTIONS] SOURCE... IMAGE   build a SquashFS image\n"
		   "  ls [-l] [-R] IMAGE [PATH]           list a directory of an image\n"
		   "  cat IMAGE PATH...                   write files of an image to stdout\n"
		   "  extract [OPTIONS] IMAGE [DEST] [PATH...]\n"
		   "                                      extract an image (or the entries PATH\n"
		   "                                      globs select) into DEST (squashfs-root)\n"
		   "  tar [-o FILE] IMAGE [PATH]          write the image (or PATH) as a pax tar "
		   "archive\n"
		   "  info [--json] IMAGE                 superblock fields and statistics\n"
		   "  stat IMAGE PATH...                  what the inode of PATH holds (as "
		   "rdsquashfs -s)\n"
		   "  verify [-j N] [--json] [--root-hash HEX] IMAGE\n"
		   "                                      check integrity data and structure\n"
		   "                                      (exit 0 clean, 4 errors, 8 failure, 16 "
		   "usage,\n"
		   "                                      32 interrupted)\n"
		   "  keygen [--force] KEY                make an Ed25519 key pair (KEY, KEY.pub)\n"
		   "  sign --key KEY [--comment TEXT] IMAGE\n"
		   "                                      add or replace the signature of KEY\n"
		   "  mount IMAGE MOUNTPOINT [-o OPTS]    mount read-only with FUSE (as sqkfuse)\n"
		   "  umount [-z] MOUNTPOINT              unmount a sqkfuse mount\n"
		   "  diff [OPTIONS] OLD NEW              compare two images or directories (as\n"
		   "                                      sqfsdiff; exit 0 same, 1 different)\n"
		   "  help [COMMAND]                      this text, or the --help of COMMAND\n"
		   "  version                             print the version (also --version)\n"
		   "\n"
		   "Each command takes --help (sqk help COMMAND prints it too). The reading "
		   "commands\n"
		   "(ls, cat, extract, tar, info, stat, verify, diff) take --offset N for an\n"
		   "image starting N bytes into the file. Manual pages: sqk(1), sqkfuse(8).\n"
		   "Exit status: 0 ok, 1 error, 2 usage (verify: as fsck, above).\n");
}

static int mount_main(int argc, char **argv)
{
#if SQK_HAVE_FUSE
	argv[0] = "sqk mount";
	return sqkfuse_main(argc, argv);
#else
	(void)argc;
	(void)argv;
	fprintf(stderr,
		"sqk mount: this sqk was built without FUSE support (HAVE_FUSE=0; it "
		"needs libfuse3: install libfuse3-dev and rebuild), so it cannot mount; the "
		"other commands work\n");
	return 1;
#endif
}

#if SQK_HAVE_TAR
#define TAR_MAIN tar_main
#else
static int tar_not_built(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "sqk tar: this sqk was built without tar support (HAVE_TAR=0; it needs "
			"libarchive: install libarchive-dev and rebuild)\n");
	return 1;
}
#define TAR_MAIN tar_not_built
#endif

/* The optional features this sqk was built with, as `sqk --version` lists them. */
static const struct feature {
	const char *name;
	bool on;
} features[] = {
	{ "fuse", SQK_HAVE_FUSE }, { "remote", SQK_HAVE_REMOTE }, { "tar", SQK_HAVE_TAR },
	{ "lzo", SQK_HAVE_LZO },   { "lz4", SQK_HAVE_LZ4 },
};

static void print_version(void)
{
	printf("sqk %s\nfeatures:", SQK_VERSION);
	for (size_t i = 0; i < sizeof(features) / sizeof(features[0]); i++)
		printf(" %s%s", features[i].on ? "+" : "-", features[i].name);
	printf("\n");
}

static int help_main(int argc, char **argv);

static const struct command {
	const char *name;
	int (*main)(int argc, char **argv);
} commands[] = {
	{ "mkimage", mkimage_main }, { "ls", ls_main },
	{ "cat", cat_main },	 { "extract", extract_main },
	{ "tar", TAR_MAIN },	 { "info", info_main },
	{ "verify", verify_main },	 { "keygen", keygen_main },
	{ "sign", sign_main },		 { "mount", mount_main },
	{ "umount", umount_main },	 { "help", help_main },
	{ "stat", stat_main },
	{ "diff", diff_main },
};

static const struct command *find(const char *name)
{
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(commands[i].name, name))
			return &commands[i];
	return NULL;
}

/* sqk help [COMMAND]: the overview, or what `sqk COMMAND --help` prints (and its status). */
static int help_main(int argc, char **argv)
{
	if (argc < 2 || !strcmp(argv[1], "help") || !strcmp(argv[1], "--help") ||
	    !strcmp(argv[1], "-h")) {
		usage(stdout);
		return 0;
	}
	if (argc > 2) {
		fprintf(stderr, "sqk help: expected at most one COMMAND\n");
		return 2;
	}
	if (!strcmp(argv[1], "version")) {
		printf("usage: sqk version (or sqk --version): prints the version of sqk and the\n"
		       "features it was built with\n");
		return 0;
	}
	const struct command *c = find(argv[1]);
	if (!c) {
		fprintf(stderr, "sqk help: unknown command '%s' (sqk help lists them)\n", argv[1]);
		return 2;
	}
	char name[32], opt[] = "--help";
	snprintf(name, sizeof(name), "%s", c->name);
	char *av[] = { name, opt, NULL };
	return c->main(2, av);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	const char *cmd = argv[1];
	const struct command *c = find(cmd);
	if (c)
		return c->main(argc - 1, argv + 1);
	if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(cmd, "version") || !strcmp(cmd, "--version") || !strcmp(cmd, "-V")) {
		print_version();
		return 0;
	}
	fprintf(stderr, "sqk: unknown command '%s'\n", cmd);
	usage(stderr);
	return 2;
}
