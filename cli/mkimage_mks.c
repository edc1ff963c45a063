/* SPDX-License-Identifier: BSD-2-Clause */
/* The values of mksquashfs's tree, time, owner, xattr and output options of `sqk mkimage`
 * (mkimage_mks.h), checked as mksquashfs checks them, into the builder's options. */
#include "mkimage_mks.h"

#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/compressor.h"
#include "common/datestr.h"
#include "common/grow.h"
#include "common/parse.h"
#include "mkimage_options.h"
#include "mkimage/entry_opts.h"
#include "mkimage/action.h"

static int bad(const char *as, const char *arg, const char *why)
{
	fprintf(stderr, "sqk mkimage: invalid %s '%s': %s\n", as, arg, why);
	return -1;
}

int mks_owner(const char *as, const char *arg, bool group, int64_t *out)
{
	uint64_t v;
	if (!parse_u64(arg, UINT32_MAX, &v)) {
		*out = (int64_t)v;
		return 0;
	}
	if (*arg >= '0' && *arg <= '9')
		return bad(as, arg, group ? "need a gid 0..4294967295 or a group name" :
			   "need a uid 0..4294967295 or a user name");
	errno = 0;
	if (group) {
		struct group *g = getgrnam(arg);
		if (g) {
			*out = g->gr_gid;
			return 0;
		}
	} else {
		struct passwd *p = getpwnam(arg);
		if (p) {
			*out = p->pw_uid;
			return 0;
		}
	}
	return bad(as, arg, group ? "no such group (a gid or a name of the group file)" :
		   "no such user (a uid or a name of the passwd file)");
}

/* A time as mksquashfs's -mkfs-time, -all-time and -root-time take it: seconds since 1970,
 * "inode" (newest: when the option has that meaning) or what `date -d` reads ("now", "last
 * week", "2024-01-01 UTC"). */
static int parse_when(const char *as, const char *arg, bool inode_ok, int64_t *out)
{
	uint64_t v;
	if (inode_ok && !strcmp(arg, "inode")) {
		*out = -2;
		return 0;
	}
	if (parse_u64(arg, UINT32_MAX, &v) && (!*arg || date_seconds(arg, &v)))
		return bad(as, arg, "need seconds 0..4294967295 since 1970, or a date the date "
			   "command reads (e.g. \"2024-01-01 UTC\")");
	*out = (int64_t)v;
	return 0;
}

static int check_regex(const char *as, const char *arg)
{
	regex_t re;
	int rc = regcomp(&re, arg, REG_EXTENDED | REG_NOSUB);
	if (!rc) {
		regfree(&re);
		return 0;
	}
	char why[256];
	regerror(rc, &re, why, sizeof(why));
	return bad(as, arg, why);
}

static int add_xattr(struct mk_options *o, const char *as, const char *arg)
{
	char why[128];
	if (mk_eopts_check_add(arg, why, sizeof(why)))
		return bad(as, arg, why);
	if (o->nxattrs_add == SIZE_MAX ||
	    mem_grow(&o->xattrs_add, &o->xattrs_add_cap, o->nxattrs_add + 1,
		     sizeof(*o->xattrs_add), 0)) {
		fprintf(stderr, "sqk mkimage: out of memory\n");
		return -1;
	}
	o->xattrs_add[o->nxattrs_add++] = arg;
	return 0;
}

/* The options of a time. */
static int time_opt(struct mk_options *o, int c, const char *arg, const char *as)
{
	int64_t t;
	switch (c) {
	case MKS_OPT_ROOTTIME: return parse_when(as, arg, true, &o->build.root_time);
	case MKS_OPT_MKFSTIME:
		if (parse_when(as, arg, true, &t))
			return -1;
		o->build.mkfs_time = t; /* "inode": -2, the newest mtime, sqk's default */
		return 0;
	case MKS_OPT_ALLTIME:
		if (!strcmp(arg, "inode"))
			return bad(as, arg, "\"inode\" is not supported here: give the time");
		return parse_when(as, arg, false, &o->build.set_mtime);
	default: return 1;
	}
}

int mks_xz_dict(struct mk_options *o)
{
	const char *as = "-Xdict-size", *arg = o->xz_dict;
	uint64_t bs = o->build.block_size, v = 0;
	char *end;
	if (!arg)
		return 0;
	if (o->build.comp.id != SQK_COMP_XZ) {
		fprintf(stderr, "sqk mkimage: -Xdict-size needs -comp xz\n");
		return -1;
	}
	errno = 0;
	double d = strtod(arg, &end);
	if (end == arg || errno || d <= 0)
		return bad(as, arg, "need a size (K, M suffix) or a percentage of the block size");
	if (!strcmp(end, "%")) {
		if (d > 100)
			return bad(as, arg, "a percentage must be more than 0 and at most 100");
		v = (uint64_t)((double)bs * d / 100);
	} else {
		uint64_t mul = !*end ? 1 : !strcmp(end, "K") || !strcmp(end, "k") ? 1024 :
			       !strcmp(end, "M") || !strcmp(end, "m") ? 1048576 : 0;
		if (!mul || d != (double)(uint64_t)d || d > (double)(1u << 30))
			return bad(as, arg, "need a whole size (K, M suffix) or a percentage "
				   "of the block size");
		v = (uint64_t)d * mul;
	}
	if (v > bs) {
		char why[96];
		snprintf(why, sizeof(why), "larger than the block size (%llu bytes)",
			 (unsigned long long)bs);
		return bad(as, arg, why);
	}
	if (v < 8192)
		return bad(as, arg, "the dictionary must be 8K or larger");
	uint64_t low = v & -v;
	if (v != low && v != low + 2 * low)
		return bad(as, arg, "the xz header stores only 2^n or 2^n + 2^(n-1) bytes");
	o->build.comp.xz_dict = (uint32_t)v;
	return 0;
}

/* -root-mode: octal (the bits) or symbolic (applied to the source root's mode), read as
 * mksquashfs 4.7.5 reads it (its rules, which the chmod action shares). */
static int root_mode(struct mk_options *o, const char *as, const char *arg)
{
	uint32_t mode;
	if (!parse_mode(arg, &mode)) {
		o->build.root_mode = mode;
		o->build.root_symmode = NULL;
		return 0;
	}
	struct act_mode m;
	char why[256];
	int err = act_mode_parse(arg, &m, why, sizeof(why));
	free(m.ops);
	if (err)
		return bad(as, arg, why);
	o->build.root_mode = -1;
	o->build.root_symmode = arg;
	return 0;
}

int mks_opt(struct mk_options *o, int c, const char *arg, const char *as)
{
	uint64_t v;
	switch (c) {
	case MKS_OPT_ONEFS: o->build.one_file_system = true; return 0;
	case MKS_OPT_ONEFSX: o->build.one_file_system_x = true; return 0;
	case MKS_OPT_NOHARDLINKS: o->build.no_hardlinks = true; return 0;
	case MKS_OPT_INFO: o->build.info = true; return 0;
	case MKS_OPT_PROGRESS: o->force_progress = true; return 0;
	case MKS_OPT_XDICT: o->xz_dict = arg; return 0;
	case MKS_OPT_OFFSET:
		if (parse_bytes(arg, UINT64_MAX / 4, &v))
			return bad(as, arg, "need a number of bytes (K, M or G suffix allowed)");
		o->offset = v;
		return 0;
	case MKS_OPT_MAXDEPTH:
		if (parse_u64(arg, INT32_MAX, &v))
			return bad(as, arg, "need a number of levels, 0 or more");
		o->build.max_depth = (int32_t)v;
		return 0;
	case MKS_OPT_ROOTMODE: return root_mode(o, as, arg);
	case MKS_OPT_ROOTUID: return mks_owner(as, arg, false, &o->build.root_uid);
	case MKS_OPT_ROOTGID: return mks_owner(as, arg, true, &o->build.root_gid);
	case MKS_OPT_XEXCLUDE:
	case MKS_OPT_XINCLUDE:
		if (check_regex(as, arg))
			return -1;
		if (c == MKS_OPT_XEXCLUDE)
			o->build.xattrs_exclude = arg;
		else
			o->build.xattrs_include = arg;
		o->build.no_xattrs = false;
		return 0;
	case MKS_OPT_XADD:
		o->build.no_xattrs = false;
		return add_xattr(o, as, arg);
	default: return time_opt(o, c, arg, as);
	}
}
