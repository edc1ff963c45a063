/* SPDX-License-Identifier: BSD-2-Clause */
/* The one depth policy of squashkit, shared by the builder and every reader walk.
 *
 * The depth of an entry is the number of components of its path below the root: the root is at
 * depth 0, "a" at 1, "a/b" at 2. SQK_DEPTH_MAX is the deepest an entry may be:
 *  - the builder (mkimage/tree.c and walk.c, whatever the source: a directory tree, a tar
 *    archive, pseudo definitions) refuses an entry deeper than that, naming it and its depth,
 *    and writes no image, so every image sqk builds can be walked back by every reader;
 *  - every reader walk (ls -R, extract, tar, verify's checker, info's count) stops with an error
 *    naming the directory when a directory of depth SQK_DEPTH_MAX or more has entries (an image
 *    another tool made, or a crafted one): no walk goes deeper, whatever the image says.
 * Why 2048: a path of N levels needs at least 2N bytes with its NUL ("a/" per level), so at 2048
 * levels every entry still has a relative path of at most PATH_MAX (4096) bytes, which one
 * open(2) takes whole (a tar archive holds it in a pax or GNU long name). Every reader walk is
 * libsqk's iterative one (reader/lib/walk.c, sqk_walk_open: SQK_WALK_MAX_DEPTH is this bound):
 * its stack of directory listings is on the heap (about 430 bytes a level), so no walk's depth
 * touches a thread's stack; extract keeps one open directory per level (it raises its
 * descriptor limit for that). The builder's emit recursion stays far inside a thread's stack
 * at the limit. No real tree comes near 2048 levels. The kernel and squashfs-tools set no limit
 * of their own (mksquashfs and unsquashfs recurse once per level, unsquashfs -max-depth is
 * opt-in), so a deeper image from them may overflow their stacks; sqk refuses to walk it. */
#ifndef SQK_DEPTH_H
#define SQK_DEPTH_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define SQK_DEPTH_MAX 2048u

/* The depth of a normalised relative path (no empty, "." or ".." components): "" is 0. */
static inline uint64_t path_depth(const char *path, size_t len)
{
	uint64_t n = len ? 1 : 0;
	for (size_t i = 0; i < len; i++)
		n += path[i] == '/';
	return n;
}

/* Messages name a path that deep by its two ends: p itself when short, else its first and last
 * SQK_DEPTH_SHOWN bytes around "..." in buf. */
#define SQK_DEPTH_SHOWN 72
static inline const char *depth_shown(const char *p, char buf[2 * SQK_DEPTH_SHOWN + 4])
{
	size_t n = strlen(p);
	if (n <= 2 * SQK_DEPTH_SHOWN + 3)
		return p;
	snprintf(buf, 2 * SQK_DEPTH_SHOWN + 4, "%.*s...%s", SQK_DEPTH_SHOWN, p,
		 p + n - SQK_DEPTH_SHOWN);
	return buf;
}

#endif
