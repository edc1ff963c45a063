/* SPDX-License-Identifier: BSD-2-Clause */
/* sqk info: formats what libsqk reports of an image: the superblock fields, the compressor
 * options, the statistics of a walk of every inode (sqk_image_info: kinds, distinct data blocks,
 * metadata blocks of the inode and directory tables), the integrity trailer and, for remote
 * images, the transfer counters. */
#include "cmd.h"
#include "info_stat.h"

#include "cmdopt.h"
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/compressor.h"
#include "common/integrity.h"
#include "common/json.h"

struct info {
	struct cmd c;
	int json;
	bool stat;              /* -s: the superblock as unsquashfs -s shows it */
	bool utc;               /* -UTC: its time in UTC */
	bool mkfs_time;         /* -mkfs-time: the superblock's time as a number */
	struct sqk_image_info st;
	int integ_rc;           /* sqk_image_integrity: 0, SQK_ENOENT or an error */
	struct sqk_integ_trailer integ;
	int damaged_rc;         /* sqk_image_damaged_groups: 0, SQK_ENOENT (remote) or an error */
	uint64_t damaged;       /* digest groups that do not match their group digest */
	int fast_rc;            /* sqk_image_fast_checksums: 0, SQK_ENOENT or an error */
	uint64_t fast_chunks;
	bool fast_used;
	int hint_rc;            /* sqk_image_hint: 0, SQK_ENOENT or an error */
	size_t nhint;
	struct sqk_hint_range hint[SQK_HINT_MAX_RANGES];
	int sig_rc;             /* sqk_image_signatures: 0 or an error */
	size_t nsig;
	struct sqk_signature sig[64];
};

static void info_usage(FILE *f)
{
	fprintf(f,
		"usage: sqk info [--json] [--offset N] [OPTIONS] IMAGE|URL\n"
		"       sqk info -s|-stat|--stat [-UTC] IMAGE|URL\n"
		"       sqk info -mkfs-time IMAGE|URL\n"
		"\n"
		"Prints the superblock of a SquashFS image (inode count, creation time, block "
		"size,\n"
		"fragment count, compressor and its options, flags, id count, bytes used, table\n"
		"positions) and statistics from a walk of every inode: inodes by kind, data "
		"blocks\n"
		"(stored, i.e. non-sparse, blocks of distinct files; blocks shared by duplicate "
		"files\n"
		"count once), fragment blocks, metadata blocks of the inode and directory tables, "
		"total\n"
		"file bytes and the compression ratio (file bytes / bytes used); the root hash of "
		"the\n"
		"integrity data (sqk mkimage appends it unless --no-checksums).\n"
		"\n"
		"      --json        one JSON object instead of text; keys: image, inodes,\n"
		"                    inodes_found, mkfs_time, block_size, fragment_blocks, "
		"compressor,\n"
		"                    compressor_options (those the compressor has),\n"
		"                    compressor_options_stored (false: the defaults), flags,\n"
		"                    flag_names, id_count, bytes_used, tables, inode_kinds,\n"
		"                    data_blocks, counts (as sqk mkimage's summary and sqk verify\n"
		"                    count: inodes, files, directories, symlinks, devices,\n"
		"                    fifos_sockets, extra_hard_links, data_blocks, raw_blocks,\n"
		"                    sparse_blocks, fragment_blocks, duplicate_files,\n"
		"                    duplicate_bytes), metadata_blocks,\n"
		"                    inode_metadata_blocks, directory_metadata_blocks, "
		"file_bytes,\n"
		"                    sparse_bytes, integrity (\"ok\", \"none\", \"corrupt\"),\n"
		"                    root_hash (hex or null), integrity_chunk_size (or null),\n"
		"                    digest_layout (\"flat\", \"tree\" or null), digest_groups "
		"and\n"
		"                    digests_per_group (a tree's groups of chunk digests, or "
		"null),\n"
		"                    damaged_digest_groups (those that do not match their group\n"
		"                    digest, then integrity is \"corrupt\"; null for a flat "
		"layout\n"
		"                    or a remote image, whose groups are checked when read),\n"
		"                    checksums ([\"SHA-256\"], with \"XXH3-64\" when the image "
		"has\n"
		"                    fast checksums; [] without integrity data),\n"
		"                    fast_checksum_chunks (the chunks they cover, or null),\n"
		"                    signatures ([{key_id, time, comment, valid, trusted}...],\n"
		"                    [] for none, null when the block is damaged),\n"
		"                    compression_ratio, prefetch_hint (the ranges sqk mkimage "
		"--order\n"
		"                    or -sort recorded: [{start, length}...], [] for none, null "
		"when\n"
		"                    not valid), http_bytes, http_bytes_unused,\n"
		"                    http_digest_groups and http_bytes_background (remote\n"
		"                    images; the last is 0: one-shot commands never fetch in\n"
		"                    the background, mounts do), http_offline (true when\n"
		"                    opened from the cache folder, the server unreachable);\n"
		"                    a failure: {image, error, exit_status}\n"
		"  -s, -stat, --stat the superblock in the lines of unsquashfs -s (time, size,\n"
		"                    compressor and its stored options, block size, flags, "
		"counts)\n"
		"  -UTC, --utc       with --stat: the time in UTC, not the local time zone\n"
		"  -mkfs-time, --mkfs-time  the superblock's time (seconds since 1970) alone, as\n"
		"                    unsquashfs -mkfs-time\n"
		"  -o, --offset N    the image starts N bytes into the file (K/M/G; mksquashfs\n"
		"                    -offset, unsquashfs -o)\n"
		SQK_CMD_REMOTE_HELP
		"  -h, --help        this text\n"
		"\n"
		"Options may come anywhere on the line (-- ends them); each long one also\n"
		"with one dash, as unsquashfs spells them.\n"
		"Exit status: 0 ok, 1 error (corrupt image, I/O), 2 usage.\n");
}

static const char *const info_flag_names[] = {
	"uncompressed_inodes", "uncompressed_data", "check", "uncompressed_fragments",
	"no_fragments", "always_fragments", "duplicates", "exportable", "uncompressed_xattrs",
	"no_xattrs", "compressor_options", "uncompressed_ids",
};

static const char *const info_kind_names[8] = {
	"unknown", "directory", "file", "symlink", "block_device", "char_device", "fifo", "socket",
};

static const char *info_comp_name(uint16_t id)
{
	const char *n = comp_name(id);

	return n ? n : "unknown";
}

/* The xz filters as words: " bcj=x86,arm", " bcj=none". */
static void info_bcj_names(uint32_t bits)
{
	const char *sep = "";

	printf(" bcj=");
	if (!bits)
		printf("none");
	for (uint32_t b = 1; b && b <= bits; b <<= 1) {
		const char *n = xz_bcj_name(b);

		if (!(bits & b))
			continue;
		if (n)
			printf("%s%s", sep, n);
		else
			printf("%s0x%x", sep, (unsigned)b);
		sep = ",";
	}
}

/* The compressor options an image can store, as "key": value pairs (JSON) or "key=value" words
 * (text): only those its compressor has (xz and lz4 have no level; lzo's other algorithms
 * take none). Without an options block the values are the defaults it implies. */
static void info_comp_opts(const struct sqk_comp_config *cc, bool stored, int json)
{
	const char *fmt = json ? "%s\"%s\": %llu" : "%s%s=%llu";
	const char *sep = json ? ", " : " ";

	switch (cc->id) {
	case SQK_COMP_XZ:
		printf(fmt, "", "dictionary_size",
		       (unsigned long long)(cc->xz_dict ? cc->xz_dict : cc->block_size));
		if (json)
			printf(fmt, sep, "bcj_filters", (unsigned long long)cc->xz_bcj);
		else
			info_bcj_names(cc->xz_bcj);
		break;
	case SQK_COMP_GZIP:
		printf(fmt, "", "level", (unsigned long long)cc->level);
		printf(fmt, sep, "window_bits",
		       (unsigned long long)(cc->gzip_window ? cc->gzip_window : 15));
		printf(fmt, sep, "strategies", (unsigned long long)cc->gzip_strategies);
		break;
	case SQK_COMP_LZ4:
		printf(fmt, "", "hc", (unsigned long long)cc->lz4_hc);
		break;
	case SQK_COMP_LZO:
		printf(json ? "\"algorithm\": \"%s\"" : "algorithm=%s",
		       lzo_algorithm_name(cc->lzo_algorithm));
		if (cc->lzo_algorithm == SQK_LZO1X_999)
			printf(fmt, sep, "level", (unsigned long long)cc->level);
		break;
	case SQK_COMP_ZSTD:
		printf(fmt, "", "level", (unsigned long long)cc->level);
		break;
	default:
		break;
	}
	if (!json && !stored && cc->id != SQK_COMP_LZMA)
		printf("; not stored: the defaults");
}

static double info_ratio(const struct info *in, const struct sqk_super *s)
{
	return s->bytes_used ? (double)in->st.file_bytes / (double)s->bytes_used : 0.0;
}

/* A trailer that does not match its root digest, or (a tree) a group of chunk digests that does
 * not match its group digest: the integrity data is damaged. */
static const char *info_integ_state(const struct info *in)
{
	if (in->integ_rc == 0)
		return in->damaged ? "corrupt" : "ok";
	return in->integ_rc == SQK_ENOENT ? "none" : "corrupt";
}

/* A tree's damaged groups as JSON: their count, or null when not known (a remote image). */
static void info_damaged_json(const struct info *in)
{
	if (in->damaged_rc)
		printf("  \"damaged_digest_groups\": null,\n");
	else
		printf("  \"damaged_digest_groups\": %llu,\n", (unsigned long long)in->damaged);
}

static void info_integrity_json(const struct info *in)
{
	char hex[2 * SQK_INTEG_DIGEST_SIZE + 1];

	printf("  \"integrity\": \"%s\",\n", info_integ_state(in));
	if (in->integ_rc) {
		printf("  \"root_hash\": null,\n  \"integrity_chunk_size\": null,\n");
		printf("  \"digest_layout\": null,\n  \"digest_groups\": null,\n"
		       "  \"digests_per_group\": null,\n  \"damaged_digest_groups\": null,\n");
		printf("  \"checksums\": [],\n  \"fast_checksum_chunks\": null,\n");
		return;
	}
	integ_hex(in->integ.root, hex);
	printf("  \"root_hash\": \"%s\",\n  \"integrity_chunk_size\": %u,\n", hex,
	       in->integ.chunk_size);
	if (in->integ.version == SQK_INTEG_VERSION_TREE) {
		printf("  \"digest_layout\": \"tree\",\n  \"digest_groups\": %llu,\n"
		       "  \"digests_per_group\": %u,\n", (unsigned long long)in->integ.ngroups,
		       in->integ.group_chunks);
		info_damaged_json(in);
	} else {
		printf("  \"digest_layout\": \"flat\",\n  \"digest_groups\": null,\n"
		       "  \"digests_per_group\": null,\n  \"damaged_digest_groups\": null,\n");
	}
	if (in->fast_rc)
		printf("  \"checksums\": [\"SHA-256\"],\n  \"fast_checksum_chunks\": null,\n");
	else
		printf("  \"checksums\": [\"SHA-256\", \"XXH3-64\"],\n"
		       "  \"fast_checksum_chunks\": %llu,\n", (unsigned long long)in->fast_chunks);
}

/* Which checksums the integrity data holds, in one line. */
static void info_checksums_text(const struct info *in)
{
	printf("integrity:               SHA-256 per %u KiB chunk", in->integ.chunk_size / 1024);
	if (in->fast_rc == 0)
		printf(", XXH3-64 for verified reads%s\n",
		       in->fast_used ? "" : " (not used by this open)");
	else if (in->fast_rc == SQK_ENOENT)
		printf("\n");
	else
		printf("; fast checksums not valid (%s)\n", sqk_strerror(in->fast_rc));
}

static void info_integrity_text(const struct info *in)
{
	char hex[2 * SQK_INTEG_DIGEST_SIZE + 1];

	if (in->integ_rc == SQK_ENOENT) {
		printf("integrity:               none\n");
	} else if (in->integ_rc) {
		printf("integrity:               corrupt (%s)\n", sqk_strerror(in->integ_rc));
	} else {
		if (in->damaged)
			printf(
			    "integrity:               corrupt: %llu of %llu digest groups damaged "
			    "(reads of the bytes they cover fail)\n",
			    (unsigned long long)in->damaged, (unsigned long long)in->integ.ngroups);
		integ_hex(in->integ.root, hex);
		printf("root hash:               %s\n", hex);
		printf("integrity chunk size:    %u\n", in->integ.chunk_size);
		if (in->integ.version == SQK_INTEG_VERSION_TREE)
			printf("digest layout:           tree: %llu group%s of %u digests\n",
			       (unsigned long long)in->integ.ngroups,
			       in->integ.ngroups == 1 ? "" : "s", in->integ.group_chunks);
		else
			printf("digest layout:           flat: %llu digests\n",
			       (unsigned long long)in->integ.nchunks);
		info_checksums_text(in);
	}
}

/* Remote images: what the transfers and the disk cache did for this command. */
static void info_http(const struct info *in, bool json)
{
	struct sqk_http_stats h = { .size = sizeof(h) };

	if (sqk_image_http_stats(in->c.img, &h))
		return;
	if (json) {
		printf("  \"http_requests\": %llu,\n  \"http_bytes\": %llu,\n"
		       "  \"http_bytes_unused\": %llu,\n  \"http_retries\": %llu,\n"
		       "  \"disk_cache_hits\": %llu,\n  \"disk_cache_misses\": %llu,\n"
		       "  \"http_digest_groups\": %llu,\n  \"http_bytes_background\": %llu,\n"
		       "  \"http_offline\": %s,\n",
		       (unsigned long long)h.requests, (unsigned long long)h.bytes,
		       (unsigned long long)h.bytes_unused,
		       (unsigned long long)h.retries, (unsigned long long)h.disk_hits,
		       (unsigned long long)h.disk_misses, (unsigned long long)h.digest_groups,
		       (unsigned long long)h.bytes_background, h.offline ? "true" : "false");
	} else {
		char text[512];

		cmd_http_text(text, sizeof(text), &h);
		printf("http:                    %s\n", text);
	}
}

/* What a hint range holds, for the text output. */
static const char *info_hint_what(const struct sqk_super *s, const struct sqk_hint_range *r)
{
	if (r->start == 0)
		return r->length > SQK_SUPER_SIZE ? "superblock and data" : "superblock";
	return r->start >= s->inode_table_start ? "tables" : "data";
}

static void info_hint(const struct info *in, bool json)
{
	const struct sqk_super *s = sqk_image_super(in->c.img);
	uint64_t total = 0;

	if (json) {
		if (in->hint_rc && in->hint_rc != SQK_ENOENT) {
			printf("  \"prefetch_hint\": null,\n");
			return;
		}
		printf("  \"prefetch_hint\": [");
		for (size_t i = 0; i < in->nhint; i++)
			printf("%s{\"start\": %llu, \"length\": %llu}", i ? ", " : "",
			       (unsigned long long)in->hint[i].start,
			       (unsigned long long)in->hint[i].length);
		printf("],\n");
		return;
	}
	if (in->hint_rc == SQK_ENOENT)
		return;
	if (in->hint_rc) {
		printf("prefetch hint:           not valid (%s)\n", sqk_strerror(in->hint_rc));
		return;
	}
	for (size_t i = 0; i < in->nhint; i++)
		total += in->hint[i].length;
	printf("prefetch hint:           %zu range%s, %.1f MiB:", in->nhint,
	       in->nhint == 1 ? "" : "s", (double)total / 1048576.0);
	for (size_t i = 0; i < in->nhint; i++)
		printf("%s 0x%llx-0x%llx %s", i ? "," : "", (unsigned long long)in->hint[i].start,
		       (unsigned long long)(in->hint[i].start + in->hint[i].length),
		       info_hint_what(s, &in->hint[i]));
	printf("\n");
}

static void info_print_json(const struct info *in)
{
	const struct sqk_super *s = sqk_image_super(in->c.img);
	const struct sqk_comp_config *cc = sqk_image_comp(in->c.img);
	unsigned i, first = 1;

	printf("{\n  \"image\": ");
	json_put_str(stdout, in->c.shown ? in->c.shown : in->c.image);
	printf(",\n  \"offset\": %llu,\n", (unsigned long long)in->c.offset);
	printf("  \"inodes\": %u,\n  \"inodes_found\": %llu,\n", s->inode_count,
	       (unsigned long long)in->st.inodes_found);
	printf("  \"mkfs_time\": %u,\n  \"block_size\": %u,\n", s->mkfs_time, s->block_size);
	printf("  \"fragment_blocks\": %u,\n  \"compressor\": \"%s\",\n", s->fragment_count,
	       info_comp_name(s->compressor));
	printf("  \"compressor_options\": {");
	info_comp_opts(cc, s->flags & SQK_FLAG_COMP_OPTS, 1);
	printf("},\n  \"compressor_options_stored\": %s,\n",
	       s->flags & SQK_FLAG_COMP_OPTS ? "true" : "false");
	printf("  \"flags\": %u,\n  \"flag_names\": [", s->flags);
	for (i = 0; i < 12; i++) {
		if (s->flags & (1u << i)) {
			printf("%s\"%s\"", first ? "" : ", ", info_flag_names[i]);
			first = 0;
		}
	}
	printf("],\n  \"id_count\": %u,\n  \"bytes_used\": %llu,\n", s->id_count,
	       (unsigned long long)s->bytes_used);
	printf("  \"tables\": {\"inode\": %llu, \"directory\": %llu, \"fragment\": %lld, "
	       "\"export\": %lld, \"id\": %llu, \"xattr_id\": %lld},\n",
	       (unsigned long long)s->inode_table_start,
	       (unsigned long long)s->directory_table_start,
	       s->fragment_table_start == SQK_NONE64 ? -1LL : (long long)s->fragment_table_start,
	       s->export_table_start == SQK_NONE64 ? -1LL : (long long)s->export_table_start,
	       (unsigned long long)s->id_table_start,
	       s->xattr_id_table_start == SQK_NONE64 ? -1LL : (long long)s->xattr_id_table_start);
	printf("  \"inode_kinds\": {");
	for (i = 1; i < 8; i++)
		printf("%s\"%s\": %llu", i > 1 ? ", " : "", info_kind_names[i],
		       (unsigned long long)in->st.kinds[i]);
	printf("},\n  \"data_blocks\": %llu,\n", (unsigned long long)in->st.data_blocks);
	printf("  \"counts\": {\n");
	sqk_counts_json(&in->st.counts, stdout, "    ");
	printf("\n  },\n");
	printf(
	    "  \"metadata_blocks\": %llu,\n  \"inode_metadata_blocks\": %llu,\n"
	    "  \"directory_metadata_blocks\": %llu,\n",
	    (unsigned long long)(in->st.inode_metadata_blocks + in->st.directory_metadata_blocks),
	    (unsigned long long)in->st.inode_metadata_blocks,
	    (unsigned long long)in->st.directory_metadata_blocks);
	printf("  \"file_bytes\": %llu,\n  \"sparse_bytes\": %llu,\n",
	       (unsigned long long)in->st.file_bytes, (unsigned long long)in->st.sparse_bytes);
	info_integrity_json(in);
	cmd_sigs_json(in->sig, in->nsig < 64 ? in->nsig : 64, in->sig_rc, "  ");
	info_hint(in, true);
	info_http(in, true);
	printf("  \"compression_ratio\": %.4f\n}\n", info_ratio(in, s));
}

static void info_print_pos(const char *what, uint64_t v)
{
	if (v == SQK_NONE64)
		printf("  %-22s none\n", what);
	else
		printf("  %-22s %llu\n", what, (unsigned long long)v);
}

static void info_print_text(const struct info *in)
{
	const struct sqk_super *s = sqk_image_super(in->c.img);
	time_t t = s->mkfs_time;
	struct tm tm;
	char when[64] = "?", line[256];
	unsigned i;

	if (gmtime_r(&t, &tm))
		strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S UTC", &tm);
	printf("image:                   %s", in->c.shown ? in->c.shown : in->c.image);
	if (in->c.offset)
		printf(" (at offset %llu)", (unsigned long long)in->c.offset);
	sqk_counts_inodes(&in->st.counts, line, sizeof(line));
	printf("\ninodes:                  %s", line); /* the words of sqk mkimage's summary */
	if (in->st.inodes_found != s->inode_count)
		printf("; only %llu reached from the root",
		       (unsigned long long)in->st.inodes_found);
	printf("\n");
	printf("created:                 %s (%u)\n", when, s->mkfs_time);
	printf("block size:              %u\n", s->block_size);
	printf("fragment blocks:         %u\n", s->fragment_count);
	printf("compressor:              %s (", info_comp_name(s->compressor));
	info_comp_opts(sqk_image_comp(in->c.img), s->flags & SQK_FLAG_COMP_OPTS, 0);
	printf(")\nflags:                   0x%04x", s->flags);
	for (i = 0; i < 12; i++)
		if (s->flags & (1u << i))
			printf(" %s", info_flag_names[i]);
	printf("\nids:                     %u\n", s->id_count);
	printf("bytes used:              %llu\n", (unsigned long long)s->bytes_used);
	printf("tables:\n");
	info_print_pos("inode table", s->inode_table_start);
	info_print_pos("directory table", s->directory_table_start);
	info_print_pos("fragment table", s->fragment_table_start);
	info_print_pos("export table", s->export_table_start);
	info_print_pos("id table", s->id_table_start);
	info_print_pos("xattr id table", s->xattr_id_table_start);
	printf("inodes by kind:\n");
	for (i = 1; i < 8; i++)
		printf("  %-22s %llu\n", info_kind_names[i], (unsigned long long)in->st.kinds[i]);
	sqk_counts_blocks(&in->st.counts, line, sizeof(line));
	printf("blocks:                  %s\n", line);
	sqk_counts_dups(&in->st.counts, line, sizeof(line));
	printf("duplicates:              %s\n", line);
	printf(
	    "metadata blocks:         %llu (inodes %llu, directories %llu)\n",
	    (unsigned long long)(in->st.inode_metadata_blocks + in->st.directory_metadata_blocks),
	    (unsigned long long)in->st.inode_metadata_blocks,
	    (unsigned long long)in->st.directory_metadata_blocks);
	printf("file bytes:              %llu (sparse %llu)\n",
	       (unsigned long long)in->st.file_bytes, (unsigned long long)in->st.sparse_bytes);
	printf("compression ratio:       %.2f\n", info_ratio(in, s));
	info_integrity_text(in);
	if (in->integ_rc == 0)
		cmd_sigs_text(in->sig, in->nsig < 64 ? in->nsig : 64, in->sig_rc);
	info_hint(in, false);
	info_http(in, false);
}

/* --json: a failure is a JSON object too, with the message (also on stderr) in "error". */
static void info_json_error(const struct info *in, const char *msg, int status)
{
	if (!in->json)
		return;
	fflush(stderr);
	printf("{\n  \"image\": ");
	if (in->c.image)
		json_put_str(stdout, in->c.shown ? in->c.shown : in->c.image);
	else
		printf("null");
	printf(",\n  \"error\": ");
	json_put_str(stdout, msg);
	printf(",\n  \"exit_status\": %d\n}\n", status);
}

/* A usage error: the message on stderr (and in the JSON object); returns 2. */
static int info_usage_fail(struct info *in, const char *fmt, const char *arg)
{
	char msg[512];

	snprintf(msg, sizeof(msg), fmt, arg);
	cmd_usage_err("info", "%s", msg);
	info_json_error(in, msg, 2);
	return 2;
}

static int info_parse(struct info *in, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "stat", no_argument, NULL, 's' },
		{ "utc", no_argument, NULL, 'U' },
		{ "mkfs-time", no_argument, NULL, 'M' },
		{ "offset", required_argument, NULL, 'o' },
		{ "help", no_argument, NULL, 'h' },
		SQK_CMD_REMOTE_LONGOPTS,
		{ NULL, 0, NULL, 0 },
	};
	char what[300];
	struct cmdopt p;
	int ch;

	for (int i = 1; i < argc && strcmp(argv[i], "--"); i++) {
		in->json |= !strcmp(argv[i], "--json"); /* a usage error is JSON too */
		if (!strcmp(argv[i], "-UTC")) /* unsquashfs's spelling */
			argv[i] = "--utc";
	}
	cmdopt_init(&p, "info", argc, argv, opts, "so:h");
	while ((ch = cmdopt_next(&p)) != CMDOPT_END) {
		switch (ch) {
		case CMDOPT_POS: break;
		case CMDOPT_ERR:
			info_json_error(in, p.msg, 2);
			return 2;
		case 'j': in->json = 1; break;
		case 's': in->stat = true; break;
		case 'U': in->utc = true; break;
		case 'M': in->mkfs_time = true; break;
		case 'o':
			if (parse_bytes(p.arg, UINT64_MAX, &in->c.offset))
				return info_usage_fail(in, "bad --offset '%s'", p.arg);
			break;
		case 'h': info_usage(stdout); return 0;
		default:
			if (cmd_remote_opt("info", &in->c.remote, ch, p.arg) == 0)
				break;
			if (ch == SQK_OPT_HEADER) /* the line may hold a secret: not shown */
				snprintf(what, sizeof(what), "bad --header: need 'Name: value'");
			else
				snprintf(what, sizeof(what), "bad argument '%s' for %s",
					 p.arg ? p.arg : "", p.as);
			info_json_error(in, what, 2);
			return 2;
		}
	}
	if (p.npos != 1)
		return info_usage_fail(in, "expected one IMAGE, got %s", p.npos ?
				       "more than one" : "none");
	if (in->json && (in->stat || in->mkfs_time))
		return info_usage_fail(in, "%s", "--json goes with neither --stat nor --mkfs-time");
	in->c.image = argv[1];
	return -1;
}

static int info_run(struct info *in)
{
	char msg[1024];
	int rc;

	in->st.size = sizeof(in->st);
	rc = sqk_image_info(in->c.img, &in->st);
	if (rc) {
		snprintf(msg, sizeof(msg), "%s: cannot walk the inodes: %s", in->c.shown ?
			 in->c.shown : in->c.image, sqk_strerror(rc));
		fprintf(stderr, "sqk info: %s\n", msg);
		info_json_error(in, msg, 1);
		return 1;
	}
	in->integ_rc = sqk_image_integrity(in->c.img, &in->integ);
	in->damaged_rc = in->integ_rc ? in->integ_rc :
			 sqk_image_damaged_groups(in->c.img, &in->damaged);
	in->fast_rc = in->integ_rc ? SQK_ENOENT :
		      sqk_image_fast_checksums(in->c.img, &in->fast_chunks, &in->fast_used);
	in->hint_rc = sqk_image_hint(in->c.img, in->hint, SQK_HINT_MAX_RANGES, &in->nhint);
	in->sig_rc = sqk_image_signatures(in->c.img, in->sig, 64, &in->nsig);
	if (in->sig_rc == SQK_ENOENT)
		in->sig_rc = 0; /* no integrity data: nothing signed */
	if (in->json)
		info_print_json(in);
	else
		info_print_text(in);
	return 0;
}

/* --json after a failed open: what the library said (the line that names what the file is),
 * else the error. */
static void info_open_error(struct info *in, int err)
{
	char msg[1024];
	const char *name = in->c.shown ? in->c.shown : in->c.image;

	if (sqk_err_not_image(err) && in->c.why[0])
		snprintf(msg, sizeof(msg), "%s", in->c.why);
	else if (in->c.why[0])
		snprintf(msg, sizeof(msg), "%s: cannot open image: %s (%s)", name,
			 sqk_strerror(err), in->c.why);
	else
		snprintf(msg, sizeof(msg), "%s: cannot open image: %s", name, sqk_strerror(err));
	info_json_error(in, msg, 1);
}

int info_main(int argc, char **argv)
{
	struct info *in = calloc(1, sizeof(*in));
	int r;

	if (!in)
		return 1;
	in->c.name = "info";
	r = info_parse(in, argc, argv);
	if (r < 0) {
		r = cmd_open(&in->c);
		if (r)
			info_open_error(in, r);
		if (!r && in->mkfs_time)
			printf("%u\n", sqk_image_super(in->c.img)->mkfs_time);
		else if (!r && in->stat)
			r = info_stat(&in->c, in->utc);
		else
			r = r ? 1 : info_run(in);
		fflush(stdout);
		if (!r && ferror(stdout)) {
			cmd_err(&in->c, NULL, 0, "error writing to stdout");
			r = 1;
		}
	}
	cmd_close(&in->c);
	free(in);
	return r;
}
