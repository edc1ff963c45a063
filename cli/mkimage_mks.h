/* SPDX-License-Identifier: BSD-2-Clause */
/* More of mksquashfs's options for `sqk mkimage`: -one-file-system[-x], -max-depth,
 * -no-hardlinks, the root's attributes, -mkfs-time, -all-time, owners by name, the xattr
 * filters and additions, -info, -progress. mkimage_options.c lists them (codes MKS_OPT_*) and
 * hands their values here. */
#ifndef SQK_CLI_MKIMAGE_MKS_H
#define SQK_CLI_MKIMAGE_MKS_H

#include <stdbool.h>
#include <stdint.h>

struct mk_options;

/* Option codes, apart from mkimage_options.c's own. */
enum {
	MKS_OPT_ONEFS = 1000, MKS_OPT_ONEFSX, MKS_OPT_MAXDEPTH, MKS_OPT_NOHARDLINKS,
	MKS_OPT_ROOTMODE, MKS_OPT_ROOTUID, MKS_OPT_ROOTGID, MKS_OPT_ROOTTIME, MKS_OPT_MKFSTIME,
	MKS_OPT_ALLTIME, MKS_OPT_XEXCLUDE, MKS_OPT_XINCLUDE, MKS_OPT_XADD, MKS_OPT_INFO,
	MKS_OPT_PROGRESS, MKS_OPT_OFFSET, MKS_OPT_XDICT,
};

/* Applies option code c (MKS_OPT_*) with value arg (NULL for a flag), spelled as on the command
 * line. 0, -1 after a one-line message naming the option, or 1 when c is not one of these. */
int mks_opt(struct mk_options *o, int c, const char *arg, const char *as);

/* -Xdict-size: the xz dictionary from o's value, once the block size is known (a percentage
 * of it, or a size up to it, 2^n or 2^n + 2^(n-1), at least 8K), as mksquashfs checks it.
 * 0, or -1 after a message naming the option. */
int mks_xz_dict(struct mk_options *o);

/* -force-uid/-force-gid/-root-uid/-root-gid's value: a number or a name of the passwd (group)
 * file, as mksquashfs takes it. 0 or -1 after a message naming as. */
int mks_owner(const char *as, const char *arg, bool group, int64_t *out);

#endif
