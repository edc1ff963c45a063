/* Command-line parsing for `sqk mkimage`. */
#include "options.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/parse.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: sqk mkimage [OPTIONS] SOURCE... IMAGE\n"
		"\n"
		"Packs SOURCE into a SquashFS 4.0 image. One source directory becomes the image root;\n"
		"several sources each become an entry of the root.\n"
		"\n"
		"  -b, --block-size SIZE   data block size, 4K..1M, power of two (default 128K)\n"
		"  -c, --compressor NAME   zstd (default), xz, gzip, lz4 or lzo\n"
		"  -l, --level N           compression level (zstd 1-22, xz 1-9, gzip 1-9, lz4 hc 1-12,\n"
		"                          lzo 1-9 with lzo1x_999 only)\n"
		"      --bcj FILTER        xz branch filter: x86, powerpc, ia64, arm, armthumb, sparc\n"
		"                          (repeatable; the smallest result per block is kept)\n"
		"      --lzo-algorithm A   lzo1x_1, lzo1x_1_11, lzo1x_1_12, lzo1x_1_15 or lzo1x_999\n"
		"                          (default, level 8)\n"
		"  -j, --threads N         compression threads (default: online CPUs)\n"
		"      --no-fragments      store tails and small files in their own blocks\n"
		"      --no-tailends       pack only small files into fragments, not tails of large files\n"
		"      --no-dedup          do not detect duplicate files\n"
		"      --no-xattrs         do not store extended attributes\n"
		"      --no-exports        omit the NFS export table\n"
		"      --no-checksums      no integrity data (SHA-256 of every chunk and a root digest,\n"
		"                          appended after the image by default; see sqk verify)\n"
		"      --checksum-chunk SIZE  integrity chunk size, 4K..1M, power of two (default 64K)\n"
		"  -e, --exclude GLOB      skip paths (relative to the source) matching GLOB; repeatable\n"
		"      --all-root          make every file owned by root (uid 0, gid 0)\n"
		"      --force             replace an IMAGE that is not a SquashFS image (-noappend)\n"
		"      --force-uid N       make every file owned by uid N\n"
		"      --force-gid N       make every file owned by gid N\n"
		"      --mtime T           set every mtime and the image time to T (seconds since 1970)\n"
		"      --tar               read a tar stream (plain, gzip, xz, zstd, bzip2...) instead of\n"
		"                          directories: sqk mkimage --tar [FILE|-] IMAGE (default stdin)\n"
		"      --default-mode OCT  mode of directories the tar implies but never lists (0755)\n"
		"      --default-uid N     their owner (default 0)\n"
		"      --default-gid N     their group (default 0)\n"
		"      --default-mtime T   their mtime (default 0, or --mtime / SOURCE_DATE_EPOCH)\n"
		"      --pseudo FILE       pseudo definitions (mksquashfs style) applied after the source:\n"
		"                          PATH d|m MODE UID GID, PATH c|b MODE UID GID MAJ MIN,\n"
		"                          PATH s MODE UID GID TARGET, PATH i MODE UID GID f|s, PATH l TO\n"
		"      --pseudo-def DEF    one definition; both repeatable, applied in order\n"
		"      --reuse OLD         copy compressed blocks and fragment blocks of the image OLD\n"
		"                          (same compressor and block size) where their content is the\n"
		"                          same, instead of compressing again; each is compared first\n"
		"      --order FILE        lay the files FILE lists (one image path a line, \\xHH escapes, as\n"
		"                          sqkfuse -o trace=FILE writes) out first, in that order, and\n"
		"                          record where they are (a prefetch hint for remote opens)\n"
		"      -sort, --sort FILE  mksquashfs sort file: PATH PRIORITY lines, -32768..32767;\n"
		"                          higher first, unlisted 0, a directory's applies below it\n"
		"      --mem SIZE          memory for what waits until the end: file tails, file digests,\n"
		"                          directory entries, a quarter each (default 4M); the rest\n"
		"                          waits in unnamed temporary files in $TMPDIR\n"
		"  -q, --quiet             no progress bar, no summary\n"
		"  -h, --help              this text\n"
		"\n"
		"mksquashfs spellings: -comp NAME, -Xcompression-level N, -Xalgorithm A.\n"
		"SOURCE_DATE_EPOCH (environment) sets the image time and clamps newer mtimes.\n"
		"Without it, the image time is the newest mtime stored, so the same input always gives\n"
		"the same image, whatever --threads is.\n"
		"Exit status: 0 success, 1 build error (nothing written), 2 usage error.\n");
}

static int parse_block_size(const char *s, uint32_t *out)
{
	uint64_t v;

	if (sqk_parse_size(s, 1048576, &v) || v < 4096 || (v & (v - 1)))
		return -1;
	*out = (uint32_t)v;
	return 0;
}

static int add_pseudo(struct mk_options *o, bool file, const char *arg)
{
	struct mk_pseudo_arg *n = realloc(o->pseudo, sizeof(*n) * (size_t)(o->npseudo + 1));
	if (!n) {
		fprintf(stderr, "sqk mkimage: out of memory\n");
		return -1;
	}
	o->pseudo = n;
	o->pseudo[o->npseudo++] = (struct mk_pseudo_arg){ .file = file, .arg = arg };
	return 0;
}

static int opt_error(const char *opt, const char *arg, const char *why)
{
	fprintf(stderr, "sqk mkimage: invalid %s '%s': %s\n", opt, arg, why);
	return -1;
}

static int add_exclude(struct mk_options *o, const char *glob)
{
	const char **n = realloc(o->excludes, sizeof(*n) * (size_t)(o->nexcludes + 1));
	if (!n) {
		fprintf(stderr, "sqk mkimage: out of memory\n");
		return -1;
	}
	o->excludes = n;
	o->excludes[o->nexcludes++] = glob;
	return 0;
}

static void set_defaults(struct mk_options *o)
{
	memset(o, 0, sizeof(*o));
	o->block_size = 131072;
	o->comp.id = SQK_COMP_ZSTD;
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	o->threads = n > 0 ? (int)n : 1;
	o->force_uid = -1;
	o->force_gid = -1;
	o->set_mtime = -1;
	o->clamp_time = -1;
	o->default_mode = 0755;
	o->default_mtime = 0;
	o->mem = 4u << 20;
}

enum { OPT_BCJ = 256, OPT_NOFRAG, OPT_NOTAIL, OPT_NODEDUP, OPT_NOXATTR, OPT_NOEXPORT,
       OPT_ALLROOT, OPT_FUID, OPT_FGID, OPT_MTIME, OPT_NOCSUM, OPT_CSUMCHUNK, OPT_LZOALG,
       OPT_TAR, OPT_DMODE, OPT_DUID, OPT_DGID, OPT_DMTIME, OPT_MEM,
       OPT_PSEUDO, OPT_PSEUDODEF, OPT_REUSE, OPT_ORDER, OPT_SORT, OPT_FORCE };

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
	{ "exclude", required_argument, NULL, 'e' },
	{ "all-root", no_argument, NULL, OPT_ALLROOT },
	{ "force-uid", required_argument, NULL, OPT_FUID },
	{ "force-gid", required_argument, NULL, OPT_FGID },
	{ "mtime", required_argument, NULL, OPT_MTIME },
	{ "tar", no_argument, NULL, OPT_TAR },
	{ "default-mode", required_argument, NULL, OPT_DMODE },
	{ "default-uid", required_argument, NULL, OPT_DUID },
	{ "default-gid", required_argument, NULL, OPT_DGID },
	{ "default-mtime", required_argument, NULL, OPT_DMTIME },
	{ "mem", required_argument, NULL, OPT_MEM },
	{ "pseudo", required_argument, NULL, OPT_PSEUDO },
	{ "pseudo-def", required_argument, NULL, OPT_PSEUDODEF },
	{ "reuse", required_argument, NULL, OPT_REUSE },
	{ "order", required_argument, NULL, OPT_ORDER },
	{ "sort", required_argument, NULL, OPT_SORT },
	{ "force", no_argument, NULL, OPT_FORCE },
	{ "quiet", no_argument, NULL, 'q' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

/* The mksquashfs spellings of options squashkit also has: the option they stand for, or 0. */
static int mksquashfs_alias(const char *word)
{
	if (strcmp(word, "-comp") == 0)
		return 'c';
	if (strcmp(word, "-Xcompression-level") == 0)
		return 'l';
	if (strcmp(word, "-Xalgorithm") == 0)
		return OPT_LZOALG;
	if (strcmp(word, "-sort") == 0)
		return OPT_SORT;
	if (strcmp(word, "-noappend") == 0)
		return OPT_FORCE;
	return 0;
}

/* As mksquashfs: a level is for lzo1x_999 only, whichever option came first. */
static int check_lzo(const struct mk_options *o, const char *level_arg)
{
	if (o->comp.lzo_algorithm && o->comp.id != SQK_COMP_LZO) {
		fprintf(stderr, "sqk mkimage: --lzo-algorithm needs --compressor lzo\n");
		return -1;
	}
	if (o->comp.id == SQK_COMP_LZO && level_arg && o->comp.lzo_algorithm &&
	    o->comp.lzo_algorithm != SQK_LZO1X_999)
		return opt_error("--level", level_arg, "only lzo1x_999 takes a level");
	return 0;
}

static int check_level(const struct mk_options *o, const char *arg)
{
	int lv = o->comp.level, lo = 1, hi = 22;
	switch (o->comp.id) {
	case SQK_COMP_XZ: hi = 9; break;
	case SQK_COMP_GZIP: hi = 9; break;
	case SQK_COMP_LZ4: hi = 12; break;
	case SQK_COMP_LZO: hi = 9; break;
	default: break;
	}
	if (arg && (lv < lo || lv > hi)) {
		char why[64];
		snprintf(why, sizeof(why), "must be %d..%d for %s", lo, hi,
			 sqk_comp_name(o->comp.id));
		return opt_error("--level", arg, why);
	}
	return 0;
}

static int handle_opt(struct mk_options *o, int c, const char **level_arg)
{
	uint64_t v;
	switch (c) {
	case 'b':
		if (parse_block_size(optarg, &o->block_size))
			return opt_error("--block-size", optarg, "need a power of two, 4K..1M");
		return 0;
	case 'c':
		o->comp.id = sqk_comp_id(optarg);
		if (sqk_comp_supported(o->comp.id, NULL, 0))
			return opt_error("--compressor", optarg, "choose zstd, xz, gzip, lz4 or lzo");
		return 0;
	case 'l':
		if (sqk_parse_u64(optarg, 22, &v))
			return opt_error("--level", optarg, "not a level");
		o->comp.level = (int)v;
		*level_arg = optarg;
		return 0;
	case OPT_BCJ: {
		uint32_t f = sqk_xz_bcj_from_name(optarg);
		if (!f)
			return opt_error("--bcj", optarg,
					 "choose x86, powerpc, ia64, arm, armthumb or sparc");
		o->comp.xz_bcj |= f;
		return 0;
	}
	case OPT_LZOALG:
		o->comp.lzo_algorithm = sqk_lzo_algorithm_from_name(optarg);
		if (!o->comp.lzo_algorithm)
			return opt_error("--lzo-algorithm", optarg,
					 "choose lzo1x_1, lzo1x_1_11, lzo1x_1_12, lzo1x_1_15 or "
					 "lzo1x_999");
		return 0;
	case 'j':
		if (sqk_parse_u64(optarg, 1024, &v) || v == 0)
			return opt_error("--threads", optarg, "need 1..1024");
		o->threads = (int)v;
		return 0;
	case OPT_NOFRAG: o->no_fragments = true; return 0;
	case OPT_NOTAIL: o->no_tailends = true; return 0;
	case OPT_NODEDUP: o->no_dedup = true; return 0;
	case OPT_NOXATTR: o->no_xattrs = true; return 0;
	case OPT_NOEXPORT: o->no_exports = true; return 0;
	case OPT_NOCSUM: o->no_checksums = true; return 0;
	case OPT_CSUMCHUNK:
		if (parse_block_size(optarg, &o->checksum_chunk))
			return opt_error("--checksum-chunk", optarg, "need a power of two, 4K..1M");
		return 0;
	case 'e': return add_exclude(o, optarg);
	case OPT_ALLROOT: o->force_uid = 0; o->force_gid = 0; return 0;
	case OPT_FUID:
		if (sqk_parse_u64(optarg, UINT32_MAX, &v))
			return opt_error("--force-uid", optarg, "need 0..4294967295");
		o->force_uid = (int64_t)v;
		return 0;
	case OPT_FGID:
		if (sqk_parse_u64(optarg, UINT32_MAX, &v))
			return opt_error("--force-gid", optarg, "need 0..4294967295");
		o->force_gid = (int64_t)v;
		return 0;
	case OPT_MTIME:
		if (sqk_parse_u64(optarg, UINT32_MAX, &v))
			return opt_error("--mtime", optarg, "need seconds 0..4294967295");
		o->set_mtime = (int64_t)v;
		return 0;
	case OPT_TAR: o->tar = true; return 0;
	case OPT_REUSE: o->reuse = optarg; return 0;
	case OPT_ORDER: o->order_file = optarg; return 0;
	case OPT_SORT: o->sort_file = optarg; return 0;
	case OPT_FORCE: o->force = true; return 0;
	case OPT_PSEUDO:
	case OPT_PSEUDODEF:
		return add_pseudo(o, c == OPT_PSEUDO, optarg);
	case OPT_DMODE:
		if (sqk_parse_mode(optarg, &o->default_mode))
			return opt_error("--default-mode", optarg, "need an octal mode 0..07777");
		return 0;
	case OPT_DUID:
		if (sqk_parse_u64(optarg, UINT32_MAX, &v))
			return opt_error("--default-uid", optarg, "need 0..4294967295");
		o->default_uid = (uint32_t)v;
		return 0;
	case OPT_DGID:
		if (sqk_parse_u64(optarg, UINT32_MAX, &v))
			return opt_error("--default-gid", optarg, "need 0..4294967295");
		o->default_gid = (uint32_t)v;
		return 0;
	case OPT_DMTIME:
		if (sqk_parse_u64(optarg, UINT32_MAX, &v))
			return opt_error("--default-mtime", optarg, "need seconds 0..4294967295");
		o->default_mtime = (int64_t)v;
		return 0;
	case OPT_MEM:
		if (sqk_parse_size(optarg, UINT64_MAX / 2, &v) || v < (1u << 20))
			return opt_error("--mem", optarg, "need a size of at least 1M");
		o->mem = v;
		return 0;
	case 'q': o->quiet = true; return 0;
	default: return -1;
	}
}

static int parse_env(struct mk_options *o)
{
	const char *sde = getenv("SOURCE_DATE_EPOCH");
	uint64_t v;
	if (!sde || !*sde)
		return 0;
	if (sqk_parse_u64(sde, UINT32_MAX, &v)) {
		fprintf(stderr, "sqk mkimage: invalid SOURCE_DATE_EPOCH '%s': need seconds "
				"0..4294967295\n", sde);
		return -1;
	}
	o->clamp_time = (int64_t)v;
	return 0;
}

int mk_options_parse(int argc, char **argv, struct mk_options *o)
{
	const char *level_arg = NULL;
	int c;
	set_defaults(o);
	optind = 1;
	opterr = 0;
	for (;;) {
		/* checked before getopt sees the word (it would read -comp as -c omp) */
		c = optind < argc ? mksquashfs_alias(argv[optind]) : 0;
		if (c == OPT_FORCE) {
			optind++;
			o->force = true;
			continue;
		}
		if (c && optind + 1 >= argc) {
			fprintf(stderr, "sqk mkimage: missing argument for option '%s'\n",
				argv[optind]);
			return -1;
		}
		if (c) {
			optarg = argv[optind + 1];
			optind += 2;
		} else if ((c = getopt_long(argc, argv, "+b:c:l:j:e:qh", long_opts, NULL)) == -1) {
			break;
		}
		if (c == 'h') {
			usage(stdout);
			return 1;
		}
		if (c == '?' || c == ':') {
			const char *bad = argv[optind - 1];
			fprintf(stderr, "sqk mkimage: %s option '%s'\n",
				c == ':' ? "missing argument for" : "unknown or incomplete", bad);
			usage(stderr);
			return -1;
		}
		if (handle_opt(o, c, &level_arg))
			return -1;
	}
	if (check_level(o, level_arg) || check_lzo(o, level_arg) || parse_env(o))
		return -1;
	if (o->comp.xz_bcj && o->comp.id != SQK_COMP_XZ) {
		fprintf(stderr, "sqk mkimage: --bcj needs --compressor xz\n");
		return -1;
	}
	if (o->tar && (argc - optind < 1 || argc - optind > 2)) {
		fprintf(stderr, "sqk mkimage: --tar takes [FILE|-] IMAGE\n");
		usage(stderr);
		return -1;
	}
	if (o->tar && (o->order_file || o->sort_file)) {
		fprintf(stderr, "sqk mkimage: %s needs source directories: a tar stream is read once, "
			"in its own order\n", o->order_file ? "--order" : "-sort");
		return -1;
	}
	if (!o->tar && argc - optind < 2) {
		fprintf(stderr, "sqk mkimage: need at least one SOURCE and the IMAGE path\n");
		usage(stderr);
		return -1;
	}
	o->tail_mem = (size_t)(o->mem / 4);
	o->digest_mem = (size_t)(o->mem / 4);
	o->entry_mem = (size_t)(o->mem / 4);
	if (o->set_mtime >= 0)
		o->default_mtime = o->set_mtime;
	else if (o->clamp_time >= 0 && o->default_mtime > o->clamp_time)
		o->default_mtime = o->clamp_time;
	if (o->tar)
		o->tar_path = argc - optind == 2 ? argv[optind] : NULL;
	o->sources = o->tar ? NULL : argv + optind;
	o->nsources = o->tar ? 0 : argc - optind - 1;
	o->image = argv[argc - 1];
	o->comp.block_size = o->block_size;
	if (o->comp.id == SQK_COMP_LZ4 && o->comp.level > 0)
		o->comp.lz4_hc = true;
	o->progress = !o->quiet && isatty(STDERR_FILENO);
	return 0;
}

void mk_options_free(struct mk_options *o)
{
	free(o->excludes);
	o->excludes = NULL;
	free(o->pseudo);
	o->pseudo = NULL;
	o->npseudo = 0;
}
