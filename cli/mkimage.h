/* SPDX-License-Identifier: BSD-2-Clause */
/* `sqk mkimage`'s entry point (cli/mkimage.c), called by the sqk dispatcher. */
#ifndef SQK_MKIMAGE_H
#define SQK_MKIMAGE_H

/* Runs `sqk mkimage` with argv[0] = "mkimage". Returns the process exit status. */
int mkimage_main(int argc, char **argv);

#endif
