/* SPDX-License-Identifier: BSD-2-Clause */
/* The FUSE front-end's entry point (mount.c), shared by the sqkfuse program and `sqk mount`. */
#ifndef SQK_FUSE_MOUNT_H
#define SQK_FUSE_MOUNT_H

/* Runs `sqkfuse IMAGE MOUNTPOINT [options]` (argv[0] is the program name). Returns the exit
 * status: 0 after a clean unmount, 1 on errors (reported before detaching), 2 on usage. */
int sqkfuse_main(int argc, char **argv);

#endif
