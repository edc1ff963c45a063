/* sqk: the command-line front door; dispatches to the subcommands. */
#include <stdio.h>
#include <string.h>

#ifndef SQK_NO_FUSE
#include "fuse/sqkfuse.h"
#endif
#include "mkimage/mkimage.h"
#include "reader/cmd/cmd.h"
#include "reader/cmd/tar.h"

#define SQK_VERSION "0.1.0"

static void usage(FILE *f)
{
	fprintf(f, "usage: sqk COMMAND [ARGS...]\n"
		   "\n"
		   "commands:\n"
		   "  mkimage [OPTIONS] SOURCE... IMAGE   build a SquashFS image\n"
		   "  ls [-l] [-R] IMAGE [PATH]           list a directory of an image\n"
		   "  cat IMAGE PATH...                   write files of an image to stdout\n"
		   "  extract [-j N] [--force] IMAGE DEST [PATH...]\n"
		   "                                      extract an image (or subtrees) into DEST\n"
		   "  tar [-o FILE] IMAGE [PATH]          write the image (or PATH) as a pax tar archive\n"
		   "  info [--json] IMAGE                 superblock fields and statistics\n"
		   "  verify [-j N] [--json] [--root-hash HEX] IMAGE\n"
		   "                                      check integrity data and structure\n"
		   "                                      (exit 0 clean, 4 errors, 8 failure, 16 usage)\n"
		   "  mount IMAGE MOUNTPOINT [-o OPTS]    mount read-only with FUSE (as sqkfuse)\n"
		   "  help                                this text\n"
		   "  version                             print the version\n"
		   "\n"
		   "Each command takes --help. The reading commands (ls, cat, extract, tar, info,\n"
		   "verify) take --offset N for an image starting N bytes into the file.\n"
		   "Exit status: 0 ok, 1 error, 2 usage.\n");
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	const char *cmd = argv[1];
	if (strcmp(cmd, "mkimage") == 0)
		return sqk_mkimage_main(argc - 1, argv + 1);
	if (strcmp(cmd, "mount") == 0) {
#ifndef SQK_NO_FUSE
		argv[1] = "sqk mount";
		return sqk_fuse_main(argc - 1, argv + 1);
#else
		fprintf(stderr, "sqk mount: this sqk was built without libfuse3 (install libfuse3-dev "
				"and rebuild), so it cannot mount; the other commands work\n");
		return 1;
#endif
	}
	if (strcmp(cmd, "ls") == 0)
		return sqk_ls_main(argc - 1, argv + 1);
	if (strcmp(cmd, "cat") == 0)
		return sqk_cat_main(argc - 1, argv + 1);
	if (strcmp(cmd, "extract") == 0)
		return sqk_extract_main(argc - 1, argv + 1);
	if (strcmp(cmd, "tar") == 0)
		return sqk_tar_main(argc - 1, argv + 1);
	if (strcmp(cmd, "info") == 0)
		return sqk_info_main(argc - 1, argv + 1);
	if (strcmp(cmd, "verify") == 0)
		return sqk_verify_main(argc - 1, argv + 1);
	if (strcmp(cmd, "help") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) {
		usage(stdout);
		return 0;
	}
	if (strcmp(cmd, "version") == 0 || strcmp(cmd, "--version") == 0) {
		printf("sqk %s\n", SQK_VERSION);
		return 0;
	}
	fprintf(stderr, "sqk: unknown command '%s'\n", cmd);
	usage(stderr);
	return 2;
}
