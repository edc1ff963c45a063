/* `sqk mkimage`'s command line: argv and the environment parsed into the builder's options. */
#ifndef SQK_CLI_MKIMAGE_OPTIONS_H
#define SQK_CLI_MKIMAGE_OPTIONS_H

#include "mkimage/options.h"

/* Parses argv (argv[0] = "mkimage") into o: options anywhere (before, between or after the
 * paths), "--" ends them, mksquashfs's "-e" takes every argument after it. Returns 0, 1 when
 * help was printed, or -1 after printing an error naming the option. o borrows argv; what it
 * owns after 0 is freed with mk_options_free (after 1 or -1 nothing is left to free; calling
 * it then is harmless). */
int mk_options_parse(int argc, char **argv, struct mk_options *o);

/* Frees what mk_options_parse allocated. */
void mk_options_free(struct mk_options *o);

#endif
