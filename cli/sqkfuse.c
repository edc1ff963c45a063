/* SPDX-License-Identifier: BSD-2-Clause */
/* sqkfuse: mount a SquashFS image read-only through FUSE. */
#include "fuse/mount.h"

int main(int argc, char **argv)
{
	return sqkfuse_main(argc, argv);
}
