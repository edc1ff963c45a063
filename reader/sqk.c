/* sqk: the command-line front door; dispatches to the subcommands. */
#include <stdio.h>
#include <string.h>

#include "mkimage/mkimage.h"

#define SQK_VERSION "0.1.0"

static void usage(FILE *f)
{
	fprintf(f, "usage: sqk COMMAND [ARGS...]\n"
		   "\n"
		   "commands:\n"
		   "  mkimage [OPTIONS] SOURCE... IMAGE   build a SquashFS image (see sqk mkimage --help)\n"
		   "  help                                this text\n"
		   "  version                             print the version\n");
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
