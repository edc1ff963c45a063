/* SPDX-License-Identifier: BSD-2-Clause */
/* Command-line parsing for `sqk mkimage`: argv and SOURCE_DATE_EPOCH into the builder's
 * sqk_build_opts and sqk_build_source (sqk/build.h), plus the few options only cli/mkimage.c uses.
 */
#include "mkimage_options.h"

#include <errno.h>
#include <limits.h>
#include <regex.h>
#include <getopt.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/bytes.h"
#include "common/grow.h"
#include "common/parse.h"
#include "common/sign.h"
#include "mkimage/action.h"
#include "sqk/error.h"
#include "mkimage_mks.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: sqk mkimage SOURCE... IMAGE [OPTIONS] [-e PATH...]\n"
		"       sqk mkimage --tar [FILE|-] IMAGE [OPTIONS]\n"
		"       sqk mkimage --pack FILE|--pseudo FILE... IMAGE [OPTIONS]\n"
		"\n"
		"Packs SOURCE into a SquashFS 4.0 image. One source directory becomes the image "
		"root;\n"
		"several sources each become an entry of the root. Options may come before, "
		"between or\n"
		"after the paths (as mksquashfs's, which come after them); -- ends the options.\n"
		"\n"
		"  -b, --block-size SIZE   data block size, 4K..1M, power of two (default 128K)\n"
		"  -c, --compressor NAME   zstd (default), xz, gzip, lz4 or lzo\n"
		"  -l, --level N           compression level (zstd 1-22, xz 1-9, gzip 1-9, lz4 hc "
		"1-12,\n"
		"                          lzo 1-9 with lzo1x_999 only)\n"
		"      --xz-dict-size SIZE the xz dictionary: a size up to the block size (2^n or "
		"2^n+2^(n-1),\n"
		"                          at least 8K; K, M suffixes) or a percentage of it "
		"(-Xdict-size)\n"
		"      --bcj FILTER        xz branch filter: x86, powerpc, ia64, arm, armthumb, "
		"sparc\n"
		"                          (repeatable; the smallest result per block is kept)\n"
		"      --lzo-algorithm A   lzo1x_1, lzo1x_1_11, lzo1x_1_12, lzo1x_1_15 or "
		"lzo1x_999\n"
		"                          (default, level 8)\n"
		"  -j, --threads N         compression threads (default: online CPUs)\n"
		"      --no-fragments      store tails and small files in their own blocks\n"
		"      --no-tailends       pack only small files into fragments, not tails of "
		"large files\n"
		"      --no-dedup          do not detect duplicate files\n"
		"      --no-xattrs         do not store extended attributes\n"
		"      --no-exports        omit the NFS export table\n"
		"      --no-checksums      no integrity data (SHA-256 of every chunk and a root "
		"digest,\n"
		"                          appended after the image by default; see sqk verify)\n"
		"      --checksum-chunk SIZE  integrity chunk size, 4K..1M, power of two (default "
		"64K)\n"
		"      --digest-tree       store the chunk digests as a tree of groups (4096 "
		"digests a\n"
		"                          group) for any size; by default only when they exceed 4 "
		"MiB,\n"
		"                          so that remote readers fetch them on demand\n"
		"      --sign KEY          sign the image with the Ed25519 private key KEY (sqk "
		"keygen;\n"
		"                          repeatable: a signature per key), as sqk sign does "
		"after\n"
		"                          a build, at SOURCE_DATE_EPOCH when set, else now\n"
		"      --sign-comment TEXT a signed comment for --sign, e.g. a version\n"
		"      --verity[=append]   a dm-verity hash tree of the image (veritysetup's "
		"format: SHA-256,\n"
		"                          4 KiB blocks) in IMAGE.verity, its root hash in "
		"IMAGE.roothash\n"
		"                          (foo.raw: foo.verity, foo.roothash, as systemd looks "
		"for them);\n"
		"                          =append puts the tree after the image in its file and "
		"prints the\n"
		"                          offset for veritysetup's --hash-offset\n"
		"      --verity-salt HEX   its salt, up to 256 bytes, or - for none (default: "
		"derived from\n"
		"                          the options, so the same build gives the same root "
		"hash)\n"
		"      --verity-cert CERT  with --verity-key KEY (PEM, RSA or ECDSA): also "
		"IMAGE.roothash.p7s,\n"
		"      --verity-key KEY    the PKCS#7 signature of the root hash that systemd "
		"checks\n"
		"      --exclude GLOB      skip paths (relative to the source) matching GLOB; "
		"repeatable\n"
		"                          (-e is mksquashfs's exclude now, see below)\n"
		"      --all-root          make every file owned by root (uid 0, gid 0)\n"
		"      --keep-as-directory one source directory becomes an entry of the root "
		"(named\n"
		"                          after it), as each of several sources does\n"
		"      --force             replace IMAGE (-noappend): a SquashFS image there is "
		"appended to\n"
		"                          otherwise, and another file is not replaced\n"
		"      --root-becomes NAME appending: the old root becomes the directory NAME of "
		"the new\n"
		"                          root (-root-becomes)\n"
		"      --force-uid USER    make every file owned by USER (a uid or a user name)\n"
		"      --force-gid GROUP   make every file owned by GROUP (a gid or a group name)\n"
		"      --mtime T           set every mtime and the image time to T (seconds since "
		"1970)\n"
		"      --tar               read a tar stream (plain, gzip, xz, zstd, bzip2...) "
		"instead of\n"
		"                          directories: sqk mkimage --tar [FILE|-] IMAGE (default "
		"stdin);\n"
		"                          it ends at the end-of-archive blocks, as in GNU tar\n"
		"      --ignore-zeros      --tar: read on after them (concatenated archives, "
		"tar -i)\n"
		"      --default-mode OCT  mode of directories the tar implies but never lists "
		"(0755)\n"
		"      --default-uid N     their owner (default 0)\n"
		"      --default-gid N     their group (default 0)\n"
		"      --default-mtime T   their mtime (default 0, or --mtime / "
		"SOURCE_DATE_EPOCH), and\n"
		"                          that of pseudo definitions without a TIME\n"
		"      --pseudo FILE       pseudo definitions (mksquashfs style) applied after the "
		"source:\n"
		"                          PATH d|m MODE UID GID, PATH c|b MODE UID GID MAJ MIN,\n"
		"                          PATH s MODE UID GID TARGET, PATH i MODE UID GID f|s, "
		"PATH l TO\n"
		"      --pseudo-def DEF    one definition; both repeatable, applied in order\n"
		"                          (also f MODE UID GID COMMAND, h/L PATH, x NAME=VALUE,\n"
		"                          upper case with a TIME, symbolic modes; FILE - is "
		"stdin)\n"
		"      --pseudo-dir DEF    -pd: \"d MODE UID GID\" (or \"D TIME MODE UID GID\") "
		"makes\n"
		"                          the missing parents of pseudo definitions\n"
		"      --pseudo-override   -pseudo-override: the definitions' owners win over "
		"--all-root,\n"
		"                          --force-uid and --force-gid (by default those apply to "
		"them)\n"
		"      --pack FILE         -F, --pack-file: a gensquashfs pack file (file, dir, "
		"nod,\n"
		"                          slink, link, pipe, sock, glob); SOURCE may then be left "
		"out\n"
		"      --pack-dir DIR      -D: where the pack file's input files are (default: "
		"its\n"
		"                          own directory)\n"
		"      --action ACTION@EXPR  a mksquashfs action (-action): exclude, prune, "
		"chmod, uid,\n"
		"                          gid, guid, uncompressed, no-fragments, "
		"always-use-fragments,\n"
		"                          xattrs-exclude... "
		"where the tests (name, pathname, type, size,\n"
		"                          perm, depth... with &&, || and !) hold; repeatable, "
		"in order\n"
		"      --action-file FILE  actions, one a line (-action-file); see "
		"docs/building-images.md\n"
		"      --reuse OLD         copy compressed blocks and fragment blocks of the image "
		"OLD\n"
		"                          (same compressor and block size) where their content is "
		"the\n"
		"                          same, instead of compressing again; each is compared "
		"first\n"
		"      --order FILE        lay the files FILE lists (one image path a line, \\xHH "
		"escapes, as\n"
		"                          sqkfuse -o trace=FILE writes) out first, in that order, "
		"and\n"
		"                          record where they are (a prefetch hint for remote "
		"opens)\n"
		"      -sort, --sort FILE  mksquashfs sort file: PATH PRIORITY lines, "
		"-32768..32767;\n"
		"                          higher first, unlisted 0, a directory's applies below "
		"it\n"
		"      --mem SIZE          memory for what waits until the end: file tails, file "
		"digests,\n"
		"                          directory entries, a quarter each (default 4M); the "
		"rest\n"
		"                          waits in unnamed temporary files in $TMPDIR\n"
		"  -q, --quiet             no progress line, no summary (warnings and errors still "
		"print)\n"
		"      --no-progress       no progress line; the summary is kept\n"
		"  -h, --help              this text\n"
		"      --one-file-system   do not cross into other file systems below the sources: "
		"a mount\n"
		"                          point is stored as an empty directory, a file mounted "
		"over is\n"
		"                          left out (-one-file-system)\n"
		"      --one-file-system-x the same, and mount points are left out too\n"
		"      --max-depth N       descend at most N levels of directories (0: an empty "
		"root)\n"
		"      --no-hardlinks      store each name of a hard-linked file as a file of its "
		"own (the\n"
		"                          data is still stored once)\n"
		"      --root-mode MODE    the root directory's permissions: octal, or symbolic\n"
		"                          (u=rwx,go=rx) applied to the source root's mode\n"
		"      --root-uid USER     the root directory's owner, a uid or a user name\n"
		"      --root-gid GROUP    the root directory's group, a gid or a group name\n"
		"      --root-time TIME    the root directory's mtime; TIME is seconds since 1970, "
		"\"inode\"\n"
		"                          (the newest mtime) or a date that date -d reads (\"2024-"
		"01-01 UTC\")\n"
		"      --mkfs-time TIME    the image's time in the superblock\n"
		"      --all-time TIME     every mtime and the image time (as --mtime, with date "
		"strings)\n"
		"      --xattrs-exclude RE leave out the xattrs whose names match the POSIX "
		"extended regex RE\n"
		"      --xattrs-include RE keep only the xattrs whose names match RE\n"
		"      --xattrs-add NAME=VALUE  add an xattr to every entry (user.*: files and "
		"directories\n"
		"                          only); VALUE raw, or 0s base64, 0x hex, 0t text with "
		"\\ooo;\n"
		"                          it replaces a source xattr of that name; repeatable\n"
		"      --info              print each entry as it is added, on stdout (the "
		"progress line\n"
		"                          is then off unless --progress)\n"
		"      --progress          the progress line even when stderr is not a terminal\n"
		"  -o, --offset N          write the image N bytes into IMAGE (K, M, G suffixes), "
		"after\n"
		"                          zeros; no integrity data then (read it with --offset "
		"N)\n"
		"\n"
		"mksquashfs spellings, same meaning: -comp NAME, -b SIZE (also 64KB, 1Mbytes),\n"
		"-Xcompression-level N, -Xalgorithm A, -Xbcj F1,F2,.., -Xhc (lz4 HC), -processors "
		"N,\n"
		"-noappend, -all-root, -root-owned, -force-uid N, -force-gid N, -no-xattrs, "
		"-xattrs,\n"
		"-no-fragments, -no-duplicates, -no-exports, -exports, -no-tailends, -tailends,\n"
		"-always-use-fragments, -keep-as-directory, -quiet, -no-progress, -p DEF, -pf "
		"FILE,\n"
		"-sort FILE, -tar, -ef FILE (exclude paths, one a line), -wildcards, -regex,\n"
		"-one-file-system, -one-file-system-x, -max-depth N, -no-hardlinks, -root-mode "
		"OCT,\n"
		"-root-uid USER, -root-gid GROUP, -root-time T, -mkfs-time T (-fstime), -all-time "
		"T\n"
		"(-inode-time), -xattrs-exclude RE, -xattrs-include RE, -xattrs-add NAME=VALUE, "
		"-info,\n"
		"-progress, -o N (-offset N), -Xdict-size SIZE, -root-becomes NAME, -action "
		"ACTION@EXPR,\n"
		"-action-file FILE; -force-uid and -force-gid take names too.\n"
		"An existing SquashFS IMAGE is appended to, as mksquashfs does: SOURCE joins its "
		"root\n"
		"(a root-level name it has already becomes name_1, name_2...), its data blocks are "
		"copied\n"
		"as they are, its compressor and block size are kept; the old image stays as it "
		"was until\n"
		"the new one is complete. -noappend (--force) replaces it instead.\n"
		"  -e PATH...              every argument after -e is an exclude: an exact path, "
		"absolute\n"
		"                          (/, ./ or ../ in front) or relative to each source; "
		"with\n"
		"                          -wildcards a pattern matched a path component at a time "
		"(*, ?,\n"
		"                          [...], extended globs), from the root, or at any depth "
		"after\n"
		"                          \"... \"; with -regex, POSIX extended regular "
		"expressions\n"
		"                          found in a component. An exclude that matched nothing "
		"is\n"
		"                          warned about.\n"
		"  -mem is refused: mksquashfs's total cache size has no counterpart here (--mem "
		"is the\n"
		"  budget of what waits until the end, a different thing).\n"
		"SOURCE_DATE_EPOCH (environment) sets the image time and clamps newer mtimes.\n"
		"Without it, the image time is the newest mtime stored, so the same input always "
		"gives\n"
		"the same image, whatever --threads is.\n"
		"Exit status: 0 success, 1 build error (nothing written), 2 usage error.\n");
}

/* A block size as -b and --block-size take it: sqk's size rule, and mksquashfs's spellings of
 * the suffix ("64KB", "64Kbytes", "1Mb"). */
static int parse_block_size(const char *s, uint32_t *out)
{
	char buf[32];
	size_t n = strlen(s);
	uint64_t v;

	if (n >= sizeof(buf))
		return -1;
	memcpy(buf, s, n + 1);
	for (size_t i = 0; i < n; i++) {
		if (strchr("kKmMgG", buf[i]) && i > 0 &&
		    (!strcmp(buf + i + 1, "B") || !strcmp(buf + i + 1, "b") ||
		     !strcmp(buf + i + 1, "bytes")))
			buf[i + 1] = 0;
	}
	if (parse_bytes(buf, 1048576, &v) || v < 4096 || (v & (v - 1)))
		return -1;
	*out = (uint32_t)v;
	return 0;
}

static int oom(void)
{
	fprintf(stderr, "sqk mkimage: out of memory\n");
	return -1;
}

/* Makes room for entry n of the array at *arrp (a T **) of capacity *cap. */
static int grow_one(void *arrp, size_t *cap, int n, size_t elem)
{
	return n < INT_MAX && !mem_grow(arrp, cap, (size_t)n + 1, elem, 0) ? 0 : oom();
}

static int add_pseudo(struct mk_options *o, bool file, const char *arg)
{
	if (grow_one(&o->pseudo, &o->pseudo_cap, o->npseudo, sizeof(*o->pseudo)))
		return -1;
	o->pseudo[o->npseudo++] = (struct sqk_build_pseudo){ .file = file, .arg = arg };
	return 0;
}

static int opt_error(const char *opt, const char *arg, const char *why)
{
	fprintf(stderr, "sqk mkimage: invalid %s '%s': %s\n", opt, arg, why);
	return -1;
}

/* One action, checked now (a mistake is a usage error; the build parses it again), kept as
 * text: text is borrowed from argv, or (own) a line of an action file, copied. */
static int keep_action(void *arg, const char *text, char *msg, size_t cap)
{
	struct mk_options *o = arg;
	struct mk_actions a = { 0 };
	char *copy = NULL;
	int err = mk_actions_parse(&a, text, msg, cap);
	mk_actions_clear(&a);
	if (err)
		return err;
	if ((o->action_file_pending && !(copy = strdup(text))) ||
	    (copy && mem_grow(&o->action_text, &o->action_text_cap,
			      (size_t)o->naction_text + 1, sizeof(*o->action_text), 0)) ||
	    mem_grow(&o->actions, &o->actions_cap, (size_t)o->nactions + 1, sizeof(*o->actions),
		     0)) {
		free(copy);
		snprintf(msg, cap, "out of memory");
		return SQK_ENOMEM;
	}
	if (copy)
		o->action_text[o->naction_text++] = copy;
	o->actions[o->nactions++] = (struct sqk_build_action){ .arg = copy ? copy : text };
	return 0;
}

/* -action ACTION@EXPR, -action-file FILE (read once here: it may be a pipe). */
static int add_action(struct mk_options *o, bool file, const char *arg, const char *as)
{
	char msg[600];
	o->action_file_pending = file;
	int err = file ? mk_actions_each_line(arg, keep_action, o, msg, sizeof(msg)) :
			 keep_action(o, arg, msg, sizeof(msg));
	o->action_file_pending = false;
	if (err)
		fprintf(stderr, "sqk mkimage: %s '%s': %s\n", as, arg, msg);
	return err ? -1 : 0;
}

/* Appends s (borrowed) to the string array *v of *n entries and capacity *cap. */
static int push_str(const char ***v, int *n, size_t *cap, const char *s)
{
	if (grow_one(v, cap, *n, sizeof(**v)))
		return -1;
	(*v)[(*n)++] = s;
	return 0;
}

static int add_exclude(struct mk_options *o, const char *glob)
{
	return push_str(&o->excludes, &o->nexcludes, &o->excludes_cap, glob);
}

/* One line of an -ef file, as mksquashfs reads it: leading blanks skipped, '#' starts a
 * comment line, a leading '\' is dropped (for names starting with a blank or '#'). */
static int add_exclude_line(struct mk_options *o, char *line)
{
	size_t len = strlen(line);
	if (len && line[len - 1] == '\n')
		line[--len] = 0;
	while (*line == ' ' || (*line >= '\t' && *line <= '\r'))
		line++;
	if (*line == '#')
		return 0;
	if (*line == '\\')
		line++;
	if (!*line)
		return 0;
	char *keep = strdup(line);
	if (!keep)
		return oom();
	if (grow_one(&o->mks_exclude_text, &o->mks_exclude_text_cap, o->nmks_exclude_text,
		     sizeof(*o->mks_exclude_text))) {
		free(keep);
		return -1;
	}
	o->mks_exclude_text[o->nmks_exclude_text++] = keep;
	return push_str(&o->mks_excludes, &o->nmks_excludes, &o->mks_excludes_cap, keep);
}

/* -ef FILE: mksquashfs's exclude file, one exclude a line. */
static int read_exclude_file(struct mk_options *o, const char *path)
{
	FILE *f = fopen(path, "re");
	char *line = NULL;
	size_t cap = 0;
	int err = 0;
	if (!f) {
		fprintf(stderr, "sqk mkimage: -ef '%s': cannot open: %s\n", path, strerror(errno));
		return -1;
	}
	errno = 0;
	while (!err && getline(&line, &cap, f) >= 0)
		err = add_exclude_line(o, line);
	if (!err && ferror(f)) {
		fprintf(stderr, "sqk mkimage: -ef '%s': cannot read: %s\n", path, strerror(errno));
		err = -1;
	}
	free(line);
	fclose(f);
	return err;
}

static void set_defaults(struct mk_options *o)
{
	memset(o, 0, sizeof(*o));
	sqk_build_opts_init(&o->build);
}

enum { OPT_BCJ = 256, OPT_NOFRAG, OPT_NOTAIL, OPT_NODEDUP, OPT_NOXATTR, OPT_NOEXPORT,
       OPT_ALLROOT, OPT_FUID, OPT_FGID, OPT_MTIME, OPT_NOCSUM, OPT_CSUMCHUNK, OPT_LZOALG,
       OPT_TAR, OPT_DMODE, OPT_DUID, OPT_DGID, OPT_DMTIME, OPT_MEM,
       OPT_PSEUDO, OPT_PSEUDODEF, OPT_REUSE, OPT_ORDER, OPT_SORT, OPT_FORCE,
       OPT_NOPROGRESS, OPT_XBCJ, OPT_XHC, OPT_XATTRS, OPT_EXPORTS, OPT_TAILENDS, OPT_MKSMEM,
       OPT_WILDCARDS, OPT_REGEX, OPT_EF, OPT_KEEPDIR, OPT_DTREE, OPT_SIGN, OPT_SIGNCOMMENT,
       OPT_VERITY, OPT_VSALT, OPT_VCERT, OPT_VKEY, OPT_IGNZEROS, OPT_PACK, OPT_PACKDIR,
       OPT_PSEUDODIR, OPT_PSEUDOOVR, OPT_ROOTBECOMES, OPT_ACTION, OPT_ACTIONFILE };

static const struct option long_opts[] = {
	{ "block-size", required_argument, NULL, 'b' },
	{ "compressor", required_argument, NULL, 'c' },
	{ "level", required_argument, NULL, 'l' },
	{ "bcj", required_argument, NULL, OPT_BCJ },
	{ "lzo-algorithm", required_argument, NULL, OPT_LZOALG },
	{ "threads", required_argument, NULL, 'j' },
	{ "no-fragments", no_argument, NULL, OPT_NOFRAG },
	{ "no-tailends", no_argument, NULL, OPT_NOTAIL },
	{ "no-dedup", no_argument, NULL, OPT_NODEDUP },
	{ "no-xattrs", no_argument, NULL, OPT_NOXATTR },
	{ "no-exports", no_argument, NULL, OPT_NOEXPORT },
	{ "no-checksums", no_argument, NULL, OPT_NOCSUM },
	{ "checksum-chunk", required_argument, NULL, OPT_CSUMCHUNK },
	{ "digest-tree", no_argument, NULL, OPT_DTREE },
	{ "sign", required_argument, NULL, OPT_SIGN },
	{ "sign-comment", required_argument, NULL, OPT_SIGNCOMMENT },
	{ "verity", optional_argument, NULL, OPT_VERITY },
	{ "verity-salt", required_argument, NULL, OPT_VSALT },
	{ "verity-cert", required_argument, NULL, OPT_VCERT },
	{ "verity-key", required_argument, NULL, OPT_VKEY },
	{ "exclude", required_argument, NULL, 'e' },
	{ "all-root", no_argument, NULL, OPT_ALLROOT },
	{ "keep-as-directory", no_argument, NULL, OPT_KEEPDIR },
	{ "force-uid", required_argument, NULL, OPT_FUID },
	{ "force-gid", required_argument, NULL, OPT_FGID },
	{ "mtime", required_argument, NULL, OPT_MTIME },
	{ "tar", no_argument, NULL, OPT_TAR },
	{ "ignore-zeros", no_argument, NULL, OPT_IGNZEROS },
	{ "default-mode", required_argument, NULL, OPT_DMODE },
	{ "default-uid", required_argument, NULL, OPT_DUID },
	{ "default-gid", required_argument, NULL, OPT_DGID },
	{ "default-mtime", required_argument, NULL, OPT_DMTIME },
	{ "mem", required_argument, NULL, OPT_MEM },
	{ "pseudo", required_argument, NULL, OPT_PSEUDO },
	{ "pseudo-def", required_argument, NULL, OPT_PSEUDODEF },
	{ "pseudo-dir", required_argument, NULL, OPT_PSEUDODIR },
	{ "pseudo-override", no_argument, NULL, OPT_PSEUDOOVR },
	{ "pack", required_argument, NULL, OPT_PACK },
	{ "pack-file", required_argument, NULL, OPT_PACK },
	{ "pack-dir", required_argument, NULL, OPT_PACKDIR },
	{ "reuse", required_argument, NULL, OPT_REUSE },
	{ "order", required_argument, NULL, OPT_ORDER },
	{ "sort", required_argument, NULL, OPT_SORT },
	{ "force", no_argument, NULL, OPT_FORCE },
	{ "quiet", no_argument, NULL, 'q' },
	{ "no-progress", no_argument, NULL, OPT_NOPROGRESS },
	{ "help", no_argument, NULL, 'h' },
	{ "one-file-system", no_argument, NULL, MKS_OPT_ONEFS },
	{ "one-file-system-x", no_argument, NULL, MKS_OPT_ONEFSX },
	{ "max-depth", required_argument, NULL, MKS_OPT_MAXDEPTH },
	{ "no-hardlinks", no_argument, NULL, MKS_OPT_NOHARDLINKS },
	{ "root-mode", required_argument, NULL, MKS_OPT_ROOTMODE },
	{ "root-uid", required_argument, NULL, MKS_OPT_ROOTUID },
	{ "root-gid", required_argument, NULL, MKS_OPT_ROOTGID },
	{ "root-time", required_argument, NULL, MKS_OPT_ROOTTIME },
	{ "mkfs-time", required_argument, NULL, MKS_OPT_MKFSTIME },
	{ "all-time", required_argument, NULL, MKS_OPT_ALLTIME },
	{ "xattrs-exclude", required_argument, NULL, MKS_OPT_XEXCLUDE },
	{ "xattrs-include", required_argument, NULL, MKS_OPT_XINCLUDE },
	{ "xattrs-add", required_argument, NULL, MKS_OPT_XADD },
	{ "info", no_argument, NULL, MKS_OPT_INFO },
	{ "progress", no_argument, NULL, MKS_OPT_PROGRESS },
	{ "offset", required_argument, NULL, MKS_OPT_OFFSET },
	{ "xz-dict-size", required_argument, NULL, MKS_OPT_XDICT },
	{ "root-becomes", required_argument, NULL, OPT_ROOTBECOMES },
	{ "action", required_argument, NULL, OPT_ACTION },
	{ "action-file", required_argument, NULL, OPT_ACTIONFILE },
	{ NULL, 0, NULL, 0 },
};

/* The short options: letter, then ':' when it takes a value. */
static const char short_opts[] = "b:c:l:j:qh";

/* mksquashfs's spellings (one dash, whole words) of options squashkit also has. */
static const struct {
	const char *word;
	int code;
	bool arg;
} mks_words[] = {
	{ "-comp", 'c', true },		      { "-b", 'b', true },
	{ "-Xcompression-level", 'l', true }, { "-Xalgorithm", OPT_LZOALG, true },
	{ "-Xbcj", OPT_XBCJ, true },	      { "-Xhc", OPT_XHC, false },
	{ "-processors", 'j', true },	      { "-sort", OPT_SORT, true },
	{ "-noappend", OPT_FORCE, false },    { "-all-root", OPT_ALLROOT, false },
	{ "-root-owned", OPT_ALLROOT, false }, { "-force-uid", OPT_FUID, true },
	{ "-force-gid", OPT_FGID, true },     { "-no-xattrs", OPT_NOXATTR, false },
	{ "-xattrs", OPT_XATTRS, false },     { "-no-fragments", OPT_NOFRAG, false },
	{ "-no-duplicates", OPT_NODEDUP, false }, { "-no-exports", OPT_NOEXPORT, false },
	{ "-exports", OPT_EXPORTS, false },   { "-no-tailends", OPT_NOTAIL, false },
	{ "-tailends", OPT_TAILENDS, false }, { "-always-use-fragments", OPT_TAILENDS, false },
	{ "-quiet", 'q', false },	      { "-no-progress", OPT_NOPROGRESS, false },
	{ "-p", OPT_PSEUDODEF, true },	      { "-pf", OPT_PSEUDO, true },
	{ "-tar", OPT_TAR, false },	      { "-ef", OPT_EF, true },
	{ "-wildcards", OPT_WILDCARDS, false }, { "-regex", OPT_REGEX, false },
	{ "-mem", OPT_MKSMEM, true },	      { "-mem-percent", OPT_MKSMEM, true },
	{ "-keep-as-directory", OPT_KEEPDIR, false }, { "-help", 'h', false },
	{ "-pd", OPT_PSEUDODIR, true },	      { "-F", OPT_PACK, true },
	{ "-D", OPT_PACKDIR, true },	      { "-pseudo-override", OPT_PSEUDOOVR, false },
	{ "-one-file-system", MKS_OPT_ONEFS, false },
	{ "-one-file-system-x", MKS_OPT_ONEFSX, false },
	{ "-max-depth", MKS_OPT_MAXDEPTH, true }, { "-no-hardlinks", MKS_OPT_NOHARDLINKS, false },
	{ "-root-mode", MKS_OPT_ROOTMODE, true }, { "-root-uid", MKS_OPT_ROOTUID, true },
	{ "-root-gid", MKS_OPT_ROOTGID, true },   { "-root-time", MKS_OPT_ROOTTIME, true },
	{ "-mkfs-time", MKS_OPT_MKFSTIME, true }, { "-fstime", MKS_OPT_MKFSTIME, true },
	{ "-all-time", MKS_OPT_ALLTIME, true },   { "-inode-time", MKS_OPT_ALLTIME, true },
	{ "-xattrs-exclude", MKS_OPT_XEXCLUDE, true },
	{ "-xattrs-include", MKS_OPT_XINCLUDE, true },
	{ "-xattrs-add", MKS_OPT_XADD, true },    { "-info", MKS_OPT_INFO, false },
	{ "-progress", MKS_OPT_PROGRESS, false }, { "-o", MKS_OPT_OFFSET, true },
	{ "-offset", MKS_OPT_OFFSET, true },     { "-Xdict-size", MKS_OPT_XDICT, true },
	{ "-root-becomes", OPT_ROOTBECOMES, true },
	{ "-action", OPT_ACTION, true },      { "-action-file", OPT_ACTIONFILE, true },
};

/* What the parse keeps besides o. */
struct parse_state {
	const char *level_arg;  /* the last -l value, checked against the compressor at the end */
	bool saw_e;             /* mksquashfs's -e took the rest of the command line */
};

/* As mksquashfs: a level is for lzo1x_999 only, whichever option came first. */
static int check_lzo(const struct mk_options *o, const char *level_arg)
{
	if (o->build.comp.lzo_algorithm && o->build.comp.id != SQK_COMP_LZO) {
		fprintf(stderr, "sqk mkimage: --lzo-algorithm needs --compressor lzo\n");
		return -1;
	}
	if (o->build.comp.id == SQK_COMP_LZO && level_arg && o->build.comp.lzo_algorithm &&
	    o->build.comp.lzo_algorithm != SQK_LZO1X_999)
		return opt_error("--level", level_arg, "only lzo1x_999 takes a level");
	return 0;
}

static int check_level(const struct mk_options *o, const char *arg)
{
	int lv = o->build.comp.level, lo = 1, hi = 22;
	switch (o->build.comp.id) {
	case SQK_COMP_XZ: hi = 9; break;
	case SQK_COMP_GZIP: hi = 9; break;
	case SQK_COMP_LZ4: hi = 12; break;
	case SQK_COMP_LZO: hi = 9; break;
	default: break;
	}
	if (arg && (lv < lo || lv > hi)) {
		char why[64];
		snprintf(why, sizeof(why), "must be %d..%d for %s", lo, hi,
			 comp_name(o->build.comp.id));
		return opt_error("--level", arg, why);
	}
	return 0;
}

/* -Xbcj F1,F2,...: mksquashfs's list form of --bcj. */
static int parse_xbcj(struct mk_options *o, const char *arg)
{
	const char *p = arg;
	do {
		char name[16];
		size_t n = strcspn(p, ",");
		uint32_t f = 0;
		if (n && n < sizeof(name)) {
			memcpy(name, p, n);
			name[n] = 0;
			f = xz_bcj_from_name(name);
		}
		if (!f)
			return opt_error("-Xbcj", arg,
					 "a comma-separated list of x86, powerpc, ia64, "
					 "arm, armthumb, sparc");
		o->build.comp.xz_bcj |= f;
		p += n;
	} while (*p++ == ',');
	return 0;
}

/* mksquashfs's -mem sizes its caches of the whole build; sqk has none to size. */
static int refuse_mks_mem(const char *as)
{
	fprintf(stderr, "sqk mkimage: %s is not supported: it is mksquashfs's total memory for "
		"its caches and queues, which sqk does not have to size (its reads and writes are "
		"streamed). sqk's --mem SIZE is another thing, the memory for what waits until the "
		"end of the build (tails, digests, directory entries) before it spills to "
		"temporary "
		"files; drop %s, or give --mem if that is what you meant\n", as, as);
	return -1;
}

static int parse_id(const char *as, const char *arg, int64_t *out)
{
	uint64_t v;
	if (parse_u64(arg, UINT32_MAX, &v))
		return opt_error(as, arg, "need 0..4294967295");
	*out = (int64_t)v;
	return 0;
}

static int parse_time(const char *as, const char *arg, int64_t *out)
{
	uint64_t v;
	if (parse_u64(arg, UINT32_MAX, &v))
		return opt_error(as, arg, "need seconds 0..4294967295");
	*out = (int64_t)v;
	return 0;
}

/* The flags: options without a value. 1 when c is none of them. */
static int handle_flag(struct mk_options *o, int c)
{
	switch (c) {
	case OPT_NOFRAG: o->build.no_fragments = true; return 0;
	case OPT_NOTAIL: o->build.no_tailends = true; return 0;
	case OPT_TAILENDS: o->build.no_tailends = false; return 0;
	case OPT_NODEDUP: o->build.no_dedup = true; return 0;
	case OPT_NOXATTR: o->build.no_xattrs = true; return 0;
	case OPT_XATTRS: o->build.no_xattrs = false; return 0;
	case OPT_NOEXPORT: o->build.no_exports = true; return 0;
	case OPT_EXPORTS: o->build.no_exports = false; return 0;
	case OPT_NOCSUM: o->build.no_checksums = true; return 0;
	case OPT_DTREE: o->build.digest_tree = true; return 0;
	case OPT_ALLROOT: o->build.force_uid = 0; o->build.force_gid = 0; return 0;
	case OPT_TAR: o->tar = true; return 0;
	case OPT_IGNZEROS: o->tar_ignore_zeros = true; return 0;
	case OPT_KEEPDIR: o->keep_as_directory = true; return 0;
	case OPT_PSEUDOOVR: o->pseudo_override = true; return 0;
	case OPT_FORCE: o->force = true; return 0;
	case OPT_XHC: o->build.comp.lz4_hc = true; return 0;
	case OPT_WILDCARDS: o->wildcards = true; o->regex = false; return 0;
	case OPT_REGEX: o->wildcards = true; o->regex = true; return 0;
	case 'q': o->quiet = true; return 0;
	case OPT_NOPROGRESS: o->no_progress = true; return 0;
	default: return 1;
	}
}

/* Options with a value about the compressor and the data. 1 when c is none of them. */
static int handle_data_opt(struct mk_options *o, int c, const char *arg, const char *as,
			   struct parse_state *ps)
{
	uint64_t v;
	switch (c) {
	case 'b':
		if (parse_block_size(arg, &o->build.block_size))
			return opt_error(as, arg, "need a power of two, 4K..1M");
		return 0;
	case 'c':
	{
		char why[160];
		int rc;

		o->build.comp.id = comp_id_from_name(arg);
		rc = comp_supported(o->build.comp.id, why, sizeof(why));
		if (rc)
			return opt_error(as, arg, rc == SQK_ENOTBUILT ? why
						    : "choose zstd, xz, gzip, lz4 or lzo");
		return 0;
	}
	case 'l':
		if (parse_u64(arg, 22, &v))
			return opt_error(as, arg, "not a level");
		o->build.comp.level = (int)v;
		ps->level_arg = arg;
		return 0;
	case OPT_BCJ: {
		uint32_t f = xz_bcj_from_name(arg);
		if (!f)
			return opt_error(as, arg,
					 "choose x86, powerpc, ia64, arm, armthumb or sparc");
		o->build.comp.xz_bcj |= f;
		return 0;
	}
	case OPT_XBCJ: return parse_xbcj(o, arg);
	case OPT_LZOALG:
		o->build.comp.lzo_algorithm = lzo_algorithm_from_name(arg);
		if (!o->build.comp.lzo_algorithm)
			return opt_error(as, arg,
					 "choose lzo1x_1, lzo1x_1_11, lzo1x_1_12, lzo1x_1_15 "
					 "or lzo1x_999");
		return 0;
	case 'j':
		if (parse_u64(arg, 1024, &v) || v == 0)
			return opt_error(as, arg, "need 1..1024");
		o->build.threads = (int)v;
		return 0;
	case OPT_CSUMCHUNK:
		if (parse_block_size(arg, &o->build.checksum_chunk))
			return opt_error(as, arg, "need a power of two, 4K..1M");
		return 0;
	case OPT_MEM:
		if (parse_bytes(arg, UINT64_MAX / 2, &v) || v < (1u << 20))
			return opt_error(as, arg, "need a size of at least 1M");
		o->build.mem = v;
		return 0;
	case OPT_MKSMEM: return refuse_mks_mem(as);
	default: return 1;
	}
}

/* Options with a value about the tree. 1 when c is none of them. */
static int handle_tree_opt(struct mk_options *o, int c, const char *arg, const char *as)
{
	int64_t t = 0;
	switch (c) {
	case 'e': return add_exclude(o, arg);
	case OPT_EF: return read_exclude_file(o, arg);
	case OPT_FUID: return mks_owner(as, arg, false, &o->build.force_uid);
	case OPT_FGID: return mks_owner(as, arg, true, &o->build.force_gid);
	case OPT_MTIME: return parse_time(as, arg, &o->build.set_mtime);
	case OPT_REUSE: o->build.reuse = arg; return 0;
	case OPT_ORDER: o->build.order_file = arg; return 0;
	case OPT_SORT: o->build.sort_file = arg; return 0;
	case OPT_PSEUDO:
	case OPT_PSEUDODEF:
		return add_pseudo(o, c == OPT_PSEUDO, arg);
	case OPT_DMODE:
		if (parse_mode(arg, &o->build.default_mode))
			return opt_error(as, arg, "need an octal mode 0..07777");
		return 0;
	case OPT_DUID:
	case OPT_DGID:
		if (parse_id(as, arg, &t))
			return -1;
		*(c == OPT_DUID ? &o->build.default_uid : &o->build.default_gid) = (uint32_t)t;
		return 0;
	case OPT_DMTIME: return parse_time(as, arg, &o->build.default_mtime);
	case OPT_SIGN: return push_str(&o->sign_paths, &o->nsign, &o->sign_cap, arg);
	case OPT_SIGNCOMMENT: o->sign_comment = arg; return 0;
	case OPT_PACK: o->pack_file = arg; return 0;
	case OPT_PACKDIR: o->pack_dir = arg; return 0;
	case OPT_PSEUDODIR: o->pseudo_dir = arg; return 0;
	case OPT_ACTION:
	case OPT_ACTIONFILE:
		return add_action(o, c == OPT_ACTIONFILE, arg, as);
	default: return 1;
	}
}

/* --verity-salt: up to 256 bytes in hex (veritysetup's limit), or "-" for none. */
static int parse_salt(struct mk_options *o, const char *as, const char *arg)
{
	size_t n = strlen(arg);

	if (!strcmp(arg, "-")) {
		o->build.verity_salt = o->verity_salt;
		o->build.verity_salt_len = 0;
		return 0;
	}
	if (!n || n % 2 || n > 2 * sizeof(o->verity_salt) ||
	    bytes_from_hex(arg, o->verity_salt, n / 2))
		return opt_error(as, arg, "need an even number of hex digits, at most 512 (256 "
				 "bytes), or - for no salt");
	o->build.verity_salt = o->verity_salt;
	o->build.verity_salt_len = n / 2;
	return 0;
}

/* The dm-verity options. 1 when c is none of them. */
static int handle_verity_opt(struct mk_options *o, int c, const char *arg, const char *as)
{
	switch (c) {
	case OPT_VERITY:
		if (!arg || !strcmp(arg, "sidecar"))
			o->build.verity = SQK_BUILD_VERITY_SIDECAR;
		else if (!strcmp(arg, "append"))
			o->build.verity = SQK_BUILD_VERITY_APPEND;
		else
			return opt_error(as, arg, "choose sidecar (the default) or append");
		return 0;
	case OPT_VSALT: return parse_salt(o, as, arg);
	case OPT_VCERT: o->verity_cert = arg; return 0;
	case OPT_VKEY: o->verity_key = arg; return 0;
	default: return 1;
	}
}

/* The canonical name of option code c, for messages: "--threads". */
static const char *long_name(int c, char *buf, size_t cap)
{
	for (const struct option *l = long_opts; l->name; l++)
		if (l->val == c) {
			snprintf(buf, cap, "--%s", l->name);
			return buf;
		}
	snprintf(buf, cap, "-%c", c);
	return buf;
}

/* -root-becomes, and the settings an appended-to image decides (so that a note names each one
 * given that it overrides). 1 when c is none of them; the others go on to their handlers. */
static int handle_append_opt(struct mk_options *o, int c, const char *arg)
{
	if (c == OPT_ROOTBECOMES) {
		o->build.root_becomes = arg;
		return 0;
	}
	return 1;
}

static void note_given(struct mk_options *o, int c)
{
	if (c == 'c')
		o->build.append_given |= SQK_BUILD_GIVEN_COMP;
	else if (c == 'b')
		o->build.append_given |= SQK_BUILD_GIVEN_BLOCK_SIZE;
	else if (c == 'l' || c == OPT_BCJ || c == OPT_XBCJ || c == OPT_LZOALG || c == OPT_XHC)
		o->build.append_given |= SQK_BUILD_GIVEN_LEVEL;
}

/* Applies option c with value arg (NULL for a flag); as is how the command line spelled it
 * (NULL: the long name). */
static int handle_opt(struct mk_options *o, int c, const char *arg, const char *as,
		      struct parse_state *ps)
{
	char name[32];
	if (!as)
		as = long_name(c, name, sizeof(name));
	note_given(o, c);
	int r = handle_flag(o, c);
	if (r == 1)
		r = handle_data_opt(o, c, arg, as, ps);
	if (r == 1)
		r = handle_tree_opt(o, c, arg, as);
	if (r == 1)
		r = handle_verity_opt(o, c, arg, as);
	if (r == 1)
		r = mks_opt(o, c, arg, as);
	if (r == 1)
		r = handle_append_opt(o, c, arg);
	return r == 1 ? -1 : r;
}

/* ---- the command line: options anywhere, "--", mksquashfs's words and its -e ---- */

static int unknown(const char *what, const char *word)
{
	fprintf(stderr, "sqk mkimage: %s '%s' (sqk mkimage --help lists the options)\n", what,
		word);
	return -1;
}

/* The value of the option at argv[*i] (the next word), or an error naming the option. */
static int next_value(int argc, char **argv, int *i, const char *opt, const char **val)
{
	if (*i + 1 >= argc) {
		fprintf(stderr, "sqk mkimage: option '%s' needs a value\n", opt);
		return -1;
	}
	*val = argv[++*i];
	return 0;
}

/* "--name" or "--name=value" at argv[*i]: an exact name, or the one name it abbreviates. */
static int parse_long(int argc, char **argv, int *i, struct mk_options *o,
		      struct parse_state *ps)
{
	const char *w = argv[*i] + 2, *eq = strchr(w, '=');
	size_t n = eq ? (size_t)(eq - w) : strlen(w);
	const struct option *hit = NULL;
	int nhits = 0;
	for (const struct option *l = long_opts; l->name; l++) {
		if (strncmp(l->name, w, n))
			continue;
		if (strlen(l->name) == n) {
			hit = l;
			nhits = 1;
			break;
		}
		hit = l;
		nhits++;
	}
	char word[64];
	snprintf(word, sizeof(word), "--%.*s", (int)(n < 40 ? n : 40), w);
	if (nhits != 1)
		return unknown(nhits ? "ambiguous option" : "unknown option", word);
	snprintf(word, sizeof(word), "--%s", hit->name);
	const char *val = NULL;
	if (hit->has_arg == no_argument && eq) {
		fprintf(stderr, "sqk mkimage: option '%s' takes no value\n", word);
		return -1;
	}
	if (hit->has_arg == optional_argument) {
		val = eq ? eq + 1 : NULL; /* only as --name=value */
	} else if (hit->has_arg != no_argument) {
		if (eq)
			val = eq + 1;
		else if (next_value(argc, argv, i, word, &val))
			return -1;
	}
	if (hit->val == 'h') {
		usage(stdout);
		return 1;
	}
	return handle_opt(o, hit->val, val, NULL, ps);
}

/* "-qj4" at argv[*i]: short options, the last one's value attached or the next word. An
 * unknown letter is named with the word it is in; "-one-file-system" by its whole word. */
static int parse_short(int argc, char **argv, int *i, struct mk_options *o,
		       struct parse_state *ps)
{
	const char *w = argv[*i];
	for (const char *p = w + 1; *p; p++) {
		const char *d = *p != ':' ? strchr(short_opts, *p) : NULL;
		char opt[3] = { '-', *p, 0 };
		if (!d) {
			if (p == w + 1)
				return unknown("unknown option", w);
			fprintf(stderr,
				"sqk mkimage: unknown option '%s' (in '%s'; sqk mkimage --help "
				"lists the options)\n",
				opt, w);
			return -1;
		}
		if (*p == 'h') {
			usage(stdout);
			return 1;
		}
		if (d[1] != ':') {
			if (handle_opt(o, *p, NULL, NULL, ps))
				return -1;
			continue;
		}
		const char *val = p + 1;
		if (!*val && next_value(argc, argv, i, opt, &val))
			return -1;
		int r = handle_opt(o, *p, val, NULL, ps);
		if (r && val == p + 1 && p == w + 1 && strlen(val) > 1)
			fprintf(stderr,
				"sqk mkimage: ('%s' was read as %s '%s'; mksquashfs's options are "
				"whole words, listed by --help)\n",
				w, opt, val);
		return r;
	}
	return 0;
}

/* A mksquashfs word at argv[*i] ("-comp xz"): 0 done, 1 help, -1 error, 2 not such a word. */
static int parse_mks_word(int argc, char **argv, int *i, struct mk_options *o,
			  struct parse_state *ps)
{
	const char *w = argv[*i], *val = NULL;
	for (size_t k = 0; k < sizeof(mks_words) / sizeof(mks_words[0]); k++) {
		if (strcmp(w, mks_words[k].word))
			continue;
		if (mks_words[k].code == 'h') {
			usage(stdout);
			return 1;
		}
		if (mks_words[k].code == OPT_MKSMEM)
			return refuse_mks_mem(w);
		if (mks_words[k].arg && next_value(argc, argv, i, w, &val))
			return -1;
		return handle_opt(o, mks_words[k].code, val, w, ps);
	}
	return 2;
}

/* mksquashfs's -e at argv[i]: every later argument is an exclude. */
static int take_mks_excludes(int argc, char **argv, int i, struct mk_options *o,
			     struct parse_state *ps)
{
	if (i + 1 >= argc) {
		fprintf(stderr,
			"sqk mkimage: -e needs at least one path after it (as in mksquashfs, "
			"every argument after -e is an exclude; --exclude GLOB is the glob "
			"form)\n");
		return -1;
	}
	ps->saw_e = true;
	while (++i < argc)
		if (push_str(&o->mks_excludes, &o->nmks_excludes, &o->mks_excludes_cap, argv[i]))
			return -1;
	return 0;
}

/* A positional argument (a source, the image or the tar file), borrowed from argv. */
static int add_path(struct mk_options *o, char *w)
{
	if (grow_one(&o->sources, &o->sources_cap, o->nsources, sizeof(*o->sources)))
		return -1;
	o->sources[o->nsources++] = w;
	return 0;
}

/* Walks argv: options, mksquashfs words and positional arguments (into o->sources, all of
 * them: mk_options_parse splits off the image). 0, 1 (help printed) or -1. */
static int parse_argv(int argc, char **argv, struct mk_options *o, struct parse_state *ps)
{
	bool options = true;
	for (int i = 1; i < argc; i++) {
		const char *w = argv[i];
		int r;
		if (!options || w[0] != '-' || !w[1]) {
			r = add_path(o, argv[i]);
		} else if (!strcmp(w, "--")) {
			options = false;
			r = 0;
		} else if (!strcmp(w, "-e")) {
			return take_mks_excludes(argc, argv, i, o, ps);
		} else if ((r = parse_mks_word(argc, argv, &i, o, ps)) == 2) {
			r = w[1] == '-' ? parse_long(argc, argv, &i, o, ps)
					: parse_short(argc, argv, &i, o, ps);
		}
		if (r)
			return r;
	}
	return 0;
}

static int parse_env(struct mk_options *o)
{
	const char *sde = getenv("SOURCE_DATE_EPOCH");
	uint64_t v;
	if (!sde || !*sde)
		return 0;
	if (parse_u64(sde, UINT32_MAX, &v)) {
		fprintf(stderr, "sqk mkimage: invalid SOURCE_DATE_EPOCH '%s': need seconds "
				"0..4294967295\n", sde);
		return -1;
	}
	o->build.clamp_time = (int64_t)v;
	return 0;
}

/* -regex: each component of pat (between '/') must compile, as mksquashfs requires. */
static int check_regex(const char *x, const char *pat)
{
	char comp[4096];
	while (*pat) {
		size_t n = strcspn(pat, "/");
		regex_t re;
		int rc = 0;
		if (n >= sizeof(comp)) {
			fprintf(stderr, "sqk mkimage: -e '%s': a component is too long\n", x);
			return -1;
		}
		memcpy(comp, pat, n);
		comp[n] = 0;
		if (n && (rc = regcomp(&re, comp, REG_EXTENDED | REG_NOSUB)) != 0) {
			char why[256];
			regerror(rc, &re, why, sizeof(why));
			fprintf(stderr,
				"sqk mkimage: -e '%s': invalid regular expression '%s': %s\n", x,
				comp, why);
			return -1;
		}
		if (n)
			regfree(&re);
		pat += n + (pat[n] == '/');
	}
	return 0;
}

/* The rules of mksquashfs's wildcard and regex excludes it checks when it reads them. */
static int check_wildcards(const struct mk_options *o)
{
	const char *opt = o->regex ? "-regex" : "-wildcards";
	for (int i = 0; o->wildcards && i < o->nmks_excludes; i++) {
		const char *x = o->mks_excludes[i];
		const char *pat = strncmp(x, "... ", 4) ? x : x + 4;
		if (x[0] == '/' || !strncmp(x, "./", 2) || !strncmp(x, "../", 3)) {
			fprintf(stderr,
				"sqk mkimage: -e '%s': /, ./ and ../ in front are not supported "
				"with %s (as in mksquashfs)\n",
				x, opt);
			return -1;
		}
		if (!pat[strspn(pat, "/")]) {
			fprintf(stderr, "sqk mkimage: -e '%s': no pattern\n", x);
			return -1;
		}
		if (o->regex && check_regex(x, pat))
			return -1;
	}
	return 0;
}

/* --sign and --sign-comment: integrity data to sign, a comment a signature takes. */
static int check_sign(const struct mk_options *o)
{
	if (o->nsign && o->build.no_checksums) {
		fprintf(stderr, "sqk mkimage: --sign needs integrity data (not --no-checksums): a "
			"signature signs its root digest\n");
		return -1;
	}
	if (o->sign_comment && !o->nsign) {
		fprintf(stderr, "sqk mkimage: --sign-comment needs --sign KEY\n");
		return -1;
	}
	if (o->nsign > (int)SQK_SIG_MAX_ENTRIES) {
		fprintf(stderr, "sqk mkimage: %d --sign keys: an image holds at most %u "
			"signatures\n", o->nsign, SQK_SIG_MAX_ENTRIES);
		return -1;
	}
	if (o->sign_comment && sig_comment_check(o->sign_comment, strlen(o->sign_comment))) {
		fprintf(stderr, "sqk mkimage: invalid --sign-comment: need UTF-8 without control "
			"characters, at most 1024 bytes\n");
		return -1;
	}
	return 0;
}

/* The dm-verity options go with --verity, the certificate with its key. */
static int check_verity(const struct mk_options *o)
{
	const char *lone = o->build.verity_salt ? "--verity-salt" : o->verity_cert ?
			   "--verity-cert" : o->verity_key ? "--verity-key" : NULL;

	if (lone && o->build.verity == SQK_BUILD_VERITY_NONE) {
		fprintf(stderr, "sqk mkimage: %s needs --verity\n", lone);
		return -1;
	}
	if (!o->verity_cert != !o->verity_key) {
		fprintf(stderr, "sqk mkimage: %s needs %s: the certificate and its private key\n",
			o->verity_cert ? "--verity-cert" : "--verity-key",
			o->verity_cert ? "--verity-key" : "--verity-cert");
		return -1;
	}
	return 0;
}

/* Loads the --sign keys before anything is built: a bad key costs no build. */
static int load_sign_keys(struct mk_options *o)
{
	char why[512];

	if (!o->nsign)
		return 0;
	o->sign_keys = calloc((size_t)o->nsign, sizeof(*o->sign_keys));
	if (!o->sign_keys)
		return oom();
	for (int i = 0; i < o->nsign; i++) {
		if (sig_load_private(o->sign_paths[i], &o->sign_keys[i], why, sizeof(why))) {
			fprintf(stderr, "sqk mkimage: --sign %s: %s\n", o->sign_paths[i], why);
			return -1;
		}
	}
	o->build.sign_keys = o->sign_keys;
	o->build.nsign_keys = (size_t)o->nsign;
	o->build.sign_comment = o->sign_comment;
	return 0;
}

/* Option combinations; o->nsources counts every positional argument here. */
static int check_combinations(const struct mk_options *o, const struct parse_state *ps)
{
	if (check_level(o, ps->level_arg) || check_lzo(o, ps->level_arg) || check_wildcards(o))
		return -1;
	if (o->build.digest_tree && o->build.no_checksums) {
		fprintf(stderr,
			"sqk mkimage: --digest-tree needs integrity data (not --no-checksums)\n");
		return -1;
	}
	if (check_sign(o) || check_verity(o))
		return -1;
	if (o->offset && (o->build.verity != SQK_BUILD_VERITY_NONE || o->nsign ||
			  o->build.digest_tree)) {
		fprintf(stderr, "sqk mkimage: --offset with %s is not supported: an image at an "
			"offset gets no integrity data (readers use it only at offset 0 of a "
			"file)\n", o->nsign ? "--sign" : o->build.digest_tree ? "--digest-tree" :
			"--verity");
		return -1;
	}

	if (o->build.comp.xz_bcj && o->build.comp.id != SQK_COMP_XZ) {
		fprintf(stderr, "sqk mkimage: --bcj needs --compressor xz\n");
		return -1;
	}
	if (o->build.comp.lz4_hc && o->build.comp.id != SQK_COMP_LZ4) {
		fprintf(stderr, "sqk mkimage: -Xhc needs -comp lz4\n");
		return -1;
	}
	if (o->tar && (o->build.order_file || o->build.sort_file)) {
		fprintf(stderr,
			"sqk mkimage: %s needs source directories: a tar stream is read once, "
			"in its own order\n",
			o->build.order_file ? "--order" : "-sort");
		return -1;
	}
	if (o->tar && o->keep_as_directory) {
		fprintf(stderr,
			"sqk mkimage: --keep-as-directory needs a source directory, not a tar "
			"stream\n");
		return -1;
	}
	if (o->tar && (o->nexcludes || o->nmks_excludes)) {
		fprintf(stderr,
			"sqk mkimage: %s needs source directories: excludes are not applied "
			"to a tar stream\n",
			o->nexcludes ? "--exclude" : "-e");
		return -1;
	}
	if (o->tar_ignore_zeros && !o->tar) {
		fprintf(stderr, "sqk mkimage: --ignore-zeros needs --tar: it reads on after a tar "
			"stream's end-of-archive blocks\n");
		return -1;
	}
	if (o->pack_dir && !o->pack_file) {
		fprintf(stderr, "sqk mkimage: --pack-dir needs --pack FILE (a directory to pack "
			"is a SOURCE)\n");
		return -1;
	}
	if (o->nactions && o->tar) {
		fprintf(stderr, "sqk mkimage: -action and -action-file are not supported with "
			"--tar (as mksquashfs's with -tar)\n");
		return -1;
	}
	if (o->tar && (o->nsources < 1 || o->nsources > 2)) {
		fprintf(stderr, "sqk mkimage: --tar takes [FILE|-] IMAGE\n");
		usage(stderr);
		return -1;
	}
	if (!o->tar && o->nsources < (o->pack_file || o->npseudo ? 1 : 2)) {
		fprintf(stderr, "sqk mkimage: need at least one SOURCE and the IMAGE path%s\n",
			ps->saw_e ? " (every argument after -e is an exclude: put the paths before "
				    "-e)" : "");
		usage(stderr);
		return -1;
	}
	return 0;
}

/* Points the builder's structs at what the parse collected. */
static void fill_source(struct mk_options *o)
{
	struct sqk_build_source *s = &o->src;
	sqk_build_source_init(s, o->tar ? SQK_BUILD_TAR :
			      o->nsources ? SQK_BUILD_DIRS : SQK_BUILD_NONE);
	s->sources = o->sources;
	s->nsources = o->nsources;
	s->keep_as_directory = o->keep_as_directory;
	s->excludes = o->excludes;
	s->nexcludes = o->nexcludes;
	s->mks_excludes = o->mks_excludes;
	s->nmks_excludes = o->nmks_excludes;
	s->wildcards = o->wildcards;
	s->regex = o->regex;
	s->tar_path = o->tar_path;
	s->tar_ignore_zeros = o->tar_ignore_zeros;
	s->pseudo = o->pseudo;
	s->npseudo = o->npseudo;
	s->pack_file = o->pack_file;
	s->pack_dir = o->pack_dir;
	s->pseudo_dir = o->pseudo_dir;
	s->pseudo_override = o->pseudo_override;
	o->build.xattrs_add = o->xattrs_add;
	o->build.nxattrs_add = o->nxattrs_add;
	s->actions = o->actions;
	s->nactions = o->nactions;
	o->build.image = o->image;
	o->build.quiet = o->quiet;
}

int mk_options_parse(int argc, char **argv, struct mk_options *o)
{
	struct parse_state ps = { 0 };
	set_defaults(o);
	int r = parse_argv(argc, argv, o, &ps);
	if (!r && (check_combinations(o, &ps) || mks_xz_dict(o) || parse_env(o) ||
		   load_sign_keys(o)))
		r = -1;
	if (r) {
		mk_options_free(o);
		return r > 0 ? 1 : -1;
	}
	int npos = o->nsources;
	o->image = o->sources[npos - 1];
	if (o->tar)
		o->tar_path = npos == 2 ? o->sources[0] : NULL;
	o->nsources = o->tar ? 0 : npos - 1;
	fill_source(o);
	if (o->offset && !o->build.no_checksums) {
		o->build.no_checksums = true;
		if (!o->quiet)
			fprintf(stderr, "sqk mkimage: note: the image goes at offset %llu of '%s': "
				"no integrity data (readers use it only for an image at offset "
				"0)\n",
				(unsigned long long)o->offset, o->image);
	}
	/* as mksquashfs: -info turns the line off, -progress on again, even off a terminal */
	o->build.progress = !o->quiet && !o->no_progress &&
			    (o->force_progress || (!o->build.info && isatty(STDERR_FILENO)));
	return 0;
}

void mk_options_free(struct mk_options *o)
{
	free(o->sources);
	o->sources = NULL;
	o->nsources = 0;
	o->sources_cap = 0;
	free(o->excludes);
	o->excludes = NULL;
	o->nexcludes = 0;
	o->excludes_cap = 0;
	free(o->mks_excludes);
	o->mks_excludes = NULL;
	o->nmks_excludes = 0;
	o->mks_excludes_cap = 0;
	for (int i = 0; i < o->nmks_exclude_text; i++)
		free(o->mks_exclude_text[i]);
	free(o->mks_exclude_text);
	o->mks_exclude_text = NULL;
	o->nmks_exclude_text = 0;
	o->mks_exclude_text_cap = 0;
	free(o->pseudo);
	o->pseudo = NULL;
	o->npseudo = 0;
	o->pseudo_cap = 0;
	free(o->actions);
	o->actions = NULL;
	o->nactions = 0;
	o->actions_cap = 0;
	for (int i = 0; i < o->naction_text; i++)
		free(o->action_text[i]);
	free(o->action_text);
	o->action_text = NULL;
	o->naction_text = 0;
	o->action_text_cap = 0;
	for (int i = 0; o->sign_keys && i < o->nsign; i++)
		EVP_PKEY_free(o->sign_keys[i]);
	free(o->sign_keys);
	o->sign_keys = NULL;
	free(o->sign_paths);
	o->sign_paths = NULL;
	o->nsign = 0;
	o->sign_cap = 0;
	o->build.sign_keys = NULL;
	o->build.nsign_keys = 0;
	free(o->xattrs_add);
	o->xattrs_add = NULL;
	o->nxattrs_add = 0;
	o->xattrs_add_cap = 0;
	o->build.xattrs_add = NULL;
	o->build.nxattrs_add = 0;
}
