/* SPDX-License-Identifier: BSD-2-Clause */
/* sqk umount: unmounts a sqkfuse mount (sqkfuse or sqk mount). */
#ifndef SQK_UMOUNT_H
#define SQK_UMOUNT_H

/* Runs `sqk umount [-z] MOUNTPOINT` (argv[0] is "umount"). Returns the exit status: 0 unmounted,
 * 1 error (not a sqkfuse mount, busy, not permitted), 2 usage. */
int umount_main(int argc, char **argv);

#endif
