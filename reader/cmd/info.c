/* sqk info: superblock fields, compressor options and statistics gathered by walking every
 * inode once (kinds, distinct data blocks, metadata blocks of the inode and directory tables). */
#include "cmd.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/compressor.h"
#include "common/endian.h"

#define SQK_META_BLOCK 8192u

/* Raw access to the image bytes, for what the library does not expose (block size words,
 * metadata block headers). */
struct info_raw {
	struct sqk_io *io;      /* the image's (borrowed): local, at --offset, or remote */
	uint64_t bytes_used;
	struct sqk_compressor *comp;
	uint64_t cur_pos;       /* absolute position of the cached decoded block, or NONE64 */
	uint64_t cur_next;
	size_t cur_len;
	uint8_t cur[SQK_META_BLOCK];
	uint8_t enc[SQK_META_BLOCK];
};

struct info_stats {
	uint64_t kinds[8];      /* by basic type 1..7 */
	uint64_t found;         /* distinct inodes reached from the root */
	uint64_t file_bytes;    /* sum of distinct regular files' sizes */
	uint64_t sparse_bytes;
	uint64_t data_blocks;
	uint64_t inode_meta_blocks;
	uint64_t dir_meta_blocks;
	uint64_t *runs;         /* (blocks_start, non-sparse count) pairs of distinct files */
	size_t nruns, caprun;
	uint8_t *seen;          /* by inode number */
};

struct sqk_info {
	struct sqk_cmd c;
	int json;
	struct info_raw raw;
	struct info_stats st;
	int integ_rc;           /* sqk_image_integrity: 0, SQK_ENOENT or an error */
	struct sqk_integ_trailer integ;
};

static void info_usage(FILE *f)
{
	fprintf(f,
		"usage: sqk info [--json] [--offset N] [OPTIONS] IMAGE|URL\n"
		"\n"
		"Prints the superblock of a SquashFS image (inode count, creation time, block size,\n"
		"fragment count, compressor and its options, flags, id count, bytes used, table\n"
		"positions) and statistics from a walk of every inode: inodes by kind, data blocks\n"
		"(stored, i.e. non-sparse, blocks of distinct files; blocks shared by duplicate files\n"
		"count once), fragment blocks, metadata blocks of the inode and directory tables, total\n"
		"file bytes and the compression ratio (file bytes / bytes used); the root hash of the\n"
		"integrity data (sqk mkimage appends it unless --no-checksums).\n"
		"\n"
		"      --json        one JSON object instead of text; keys: image, inodes,\n"
		"                    inodes_found, mkfs_time, block_size, fragment_blocks, compressor,\n"
		"                    compressor_options, flags, flag_names, id_count, bytes_used,\n"
		"                    tables, inode_kinds, data_blocks, metadata_blocks,\n"
		"                    inode_metadata_blocks, directory_metadata_blocks, file_bytes,\n"
		"                    sparse_bytes, integrity (\"ok\", \"none\", \"corrupt\"),\n"
		"                    root_hash (hex or null), integrity_chunk_size (or null),\n"
		"                    compression_ratio\n"
		"      --offset N    the image starts N bytes into the file (mksquashfs -offset)\n"
		SQK_CMD_REMOTE_HELP
		"  -h, --help        this text\n"
		"\n"
		"Exit status: 0 ok, 1 error (corrupt image, I/O), 2 usage.\n");
}

static int raw_pread(struct sqk_info *in, uint64_t pos, void *buf, size_t len)
{
	int err;

	if (pos > in->raw.bytes_used || len > in->raw.bytes_used - pos) {
		sqk_cmd_err(&in->c, NULL, SQK_EBOUNDS, "%zu bytes at offset %llu past bytes_used",
			    len, (unsigned long long)pos);
		return SQK_EBOUNDS;
	}
	err = sqk_io_read_at(in->raw.io, pos, buf, len);
	if (err) {
		sqk_cmd_err(&in->c, NULL, err, "read of %zu bytes (offset %llu)", len,
			    (unsigned long long)pos);
		return err == SQK_EBOUNDS ? SQK_EBOUNDS : SQK_EIO;
	}
	return 0;
}

/* Reads the header of the metadata block at pos; *len = stored payload length. */
static int raw_meta_header(struct sqk_info *in, uint64_t pos, size_t *len, int *raw)
{
	uint8_t h[2];
	uint16_t v;

	if (raw_pread(in, pos, h, 2))
		return SQK_EIO;
	v = sqk_get_le16(h);
	*len = v & 0x7FFFu;
	*raw = (v & 0x8000u) != 0;
	if (*len == 0 || *len > SQK_META_BLOCK) {
		sqk_cmd_err(&in->c, NULL, SQK_ECORRUPT, "bad metadata block header 0x%04x (offset %llu)",
			    v, (unsigned long long)pos);
		return SQK_ECORRUPT;
	}
	return 0;
}

/* Decodes the metadata block at absolute pos into the cache. */
static int raw_meta_load(struct sqk_info *in, uint64_t pos)
{
	struct info_raw *r = &in->raw;
	size_t len;
	ssize_t n;
	int raw, err;

	if (r->cur_pos == pos)
		return 0;
	err = raw_meta_header(in, pos, &len, &raw);
	if (!err)
		err = raw_pread(in, pos + 2, raw ? r->cur : r->enc, len);
	if (err)
		return err;
	n = (ssize_t)len;
	if (!raw)
		n = sqk_decompress(r->comp, r->enc, len, r->cur, SQK_META_BLOCK);
	if (n <= 0) {
		sqk_cmd_err(&in->c, NULL, n < 0 ? (int)n : SQK_EDECOMPRESS,
			    "metadata block (offset %llu)", (unsigned long long)pos);
		return n < 0 ? (int)n : SQK_EDECOMPRESS;
	}
	r->cur_pos = pos;
	r->cur_len = (size_t)n;
	r->cur_next = pos + 2 + len;
	return 0;
}

/* Reads len bytes of the metadata stream starting at table + ref. */
static int raw_meta_read(struct sqk_info *in, uint64_t table, uint64_t ref, void *out, size_t len)
{
	uint64_t pos = table + (ref >> 16);
	size_t off = ref & 0xFFFFu, n;
	uint8_t *o = out;
	int err;

	while (len) {
		err = raw_meta_load(in, pos);
		if (err)
			return err;
		if (off >= in->raw.cur_len) {
			sqk_cmd_err(&in->c, NULL, SQK_ECORRUPT, "offset %zu past metadata block end "
				    "(offset %llu)", off, (unsigned long long)pos);
			return SQK_ECORRUPT;
		}
		n = in->raw.cur_len - off < len ? in->raw.cur_len - off : len;
		memcpy(o, in->raw.cur + off, n);
		o += n;
		len -= n;
		off = 0;
		pos = in->raw.cur_next;
	}
	return 0;
}

/* Counts the metadata blocks from start up to end by following their headers. */
static int raw_count_meta(struct sqk_info *in, uint64_t start, uint64_t end, uint64_t *count)
{
	uint64_t pos = start;
	size_t len;
	int raw, err;

	*count = 0;
	while (pos < end) {
		err = raw_meta_header(in, pos, &len, &raw);
		if (err)
			return err;
		pos += 2 + len;
		(*count)++;
	}
	if (pos != end) {
		sqk_cmd_err(&in->c, NULL, SQK_ECORRUPT, "metadata blocks run past the next table "
			    "at offset %llu (offset %llu)", (unsigned long long)end,
			    (unsigned long long)pos);
		return SQK_ECORRUPT;
	}
	return 0;
}

/* Lower bound v to the smallest candidate above after. */
static void info_min_above(uint64_t *best, uint64_t v, uint64_t after)
{
	if (v != SQK_NONE64 && v > after && v < *best)
		*best = v;
}

/* The position where the directory table ends: the first byte of the next table. */
static uint64_t info_dir_table_end(struct sqk_info *in, const struct sqk_super *s)
{
	uint64_t best = s->bytes_used, after = s->directory_table_start;
	uint8_t b[8];

	info_min_above(&best, s->fragment_table_start, after);
	info_min_above(&best, s->export_table_start, after);
	info_min_above(&best, s->id_table_start, after);
	info_min_above(&best, s->xattr_id_table_start, after);
	if (s->fragment_count && s->fragment_table_start != SQK_NONE64 &&
	    !raw_pread(in, s->fragment_table_start, b, 8))
		info_min_above(&best, sqk_get_le64(b), after);
	if (s->export_table_start != SQK_NONE64 && !raw_pread(in, s->export_table_start, b, 8))
		info_min_above(&best, sqk_get_le64(b), after);
	if (s->id_count && !raw_pread(in, s->id_table_start, b, 8))
		info_min_above(&best, sqk_get_le64(b), after);
	if (s->xattr_id_table_start != SQK_NONE64 && !raw_pread(in, s->xattr_id_table_start, b, 8))
		info_min_above(&best, sqk_get_le64(b), after);
	return best;
}

static int info_add_run(struct info_stats *st, uint64_t start, uint64_t count)
{
	if (st->nruns == st->caprun) {
		size_t cap = st->caprun ? st->caprun * 2 : 256;
		uint64_t *p = realloc(st->runs, cap * 2 * sizeof(*p));

		if (!p)
			return SQK_ENOMEM;
		st->runs = p;
		st->caprun = cap;
	}
	st->runs[2 * st->nruns] = start;
	st->runs[2 * st->nruns + 1] = count;
	st->nruns++;
	return 0;
}

/* Counts the stored (non-zero) size words of a regular file. */
static int info_file(struct sqk_info *in, const struct sqk_inode *f, const char *path)
{
	const struct sqk_super *s = sqk_image_super(in->c.img);
	uint64_t n = f->size / s->block_size, i, stored = 0;
	uint8_t *w;
	int err;

	if (f->frag_index == SQK_NONE32 && f->size % s->block_size)
		n++;
	in->st.file_bytes += f->size;
	in->st.sparse_bytes += f->sparse;
	if (!n)
		return 0;
	if (n > (SIZE_MAX / 4) || !(w = malloc(n * 4)))
		return SQK_ENOMEM;
	err = raw_meta_read(in, s->inode_table_start, f->body_ref, w, n * 4);
	if (err) {
		sqk_cmd_err(&in->c, path, err, "cannot read the block list");
	} else {
		for (i = 0; i < n; i++)
			stored += sqk_get_le32(w + 4 * i) != 0;
		if (stored)
			err = info_add_run(&in->st, f->blocks_start, stored);
	}
	free(w);
	return err;
}

static char *info_join(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	char *p = malloc(la + lb + 2);

	if (p) {
		memcpy(p, a, la);
		p[la] = '/';
		memcpy(p + la + 1, b, lb + 1);
	}
	return p;
}

/* Visits every entry below dir once per inode. */
static int info_walk(struct sqk_info *in, const struct sqk_inode *dir, const char *path)
{
	uint32_t count = sqk_image_super(in->c.img)->inode_count;
	struct sqk_dir_iter it;
	struct sqk_dirent e;
	struct sqk_inode ino;
	int r;

	r = sqk_dir_iter_init(in->c.img, dir, &it);
	while (r == 0 && (r = sqk_dir_iter_next(&it, &e)) == 1) {
		char *p = info_join(path, e.name);

		if (!p)
			return SQK_ENOMEM;
		r = sqk_inode_get(in->c.img, e.ref, &ino);
		if (r) {
			sqk_cmd_err(&in->c, p, r, "cannot read inode");
		} else if (ino.ino >= 1 && ino.ino <= count && !in->st.seen[ino.ino]) {
			in->st.seen[ino.ino] = 1;
			in->st.found++;
			in->st.kinds[sqk_basic_type(ino.type) & 7]++;
			if (sqk_cmd_is(&ino, SQK_T_FILE))
				r = info_file(in, &ino, p);
			else if (sqk_cmd_is(&ino, SQK_T_DIR))
				r = info_walk(in, &ino, p);
		}
		free(p);
		if (r)
			return r;
	}
	if (r < 0)
		sqk_cmd_err(&in->c, path, r, "cannot list directory");
	return r < 0 ? r : 0;
}

static int info_cmp_run(const void *a, const void *b)
{
	const uint64_t *x = a, *y = b;

	if (x[0] != y[0])
		return x[0] < y[0] ? -1 : 1;
	return x[1] < y[1] ? 1 : x[1] > y[1];
}

/* Data blocks: each distinct blocks_start counted once, with its longest block list. */
static void info_count_data(struct info_stats *st)
{
	size_t i;

	if (st->nruns)
		qsort(st->runs, st->nruns, 2 * sizeof(uint64_t), info_cmp_run);
	for (i = 0; i < st->nruns; i++)
		if (i == 0 || st->runs[2 * i] != st->runs[2 * (i - 1)])
			st->data_blocks += st->runs[2 * i + 1];
}

static int info_gather(struct sqk_info *in)
{
	const struct sqk_super *s = sqk_image_super(in->c.img);
	struct sqk_inode root;
	int err;

	in->st.seen = calloc((size_t)s->inode_count + 2, 1);
	if (!in->st.seen)
		return SQK_ENOMEM;
	err = sqk_image_root(in->c.img, &root);
	if (err) {
		sqk_cmd_err(&in->c, "", err, "cannot read the root inode");
		return err;
	}
	if (root.ino >= 1 && root.ino <= s->inode_count)
		in->st.seen[root.ino] = 1;
	in->st.found = 1;
	in->st.kinds[SQK_T_DIR]++;
	err = info_walk(in, &root, "");
	if (err)
		return err;
	info_count_data(&in->st);
	err = raw_count_meta(in, s->inode_table_start, s->directory_table_start,
			     &in->st.inode_meta_blocks);
	if (!err)
		err = raw_count_meta(in, s->directory_table_start, info_dir_table_end(in, s),
				     &in->st.dir_meta_blocks);
	return err;
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
	const char *n = sqk_comp_name(id);

	return n ? n : "unknown";
}

/* Writes s as a JSON string literal. */
static void info_json_str(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	putchar('"');
	for (; *p; p++) {
		if (*p == '"' || *p == '\\')
			printf("\\%c", *p);
		else if (*p < 0x20 || *p >= 0x7F)
			printf("\\u%04x", *p);
		else
			putchar(*p);
	}
	putchar('"');
}

/* Compressor options as "key": value pairs (JSON) or "key=value" words (text). */
static void info_comp_opts(const struct sqk_comp_config *cc, int json)
{
	const char *fmt = json ? "\"%s\": %llu" : "%s=%llu";
	const char *sep = json ? ", " : " ";

	printf(fmt, "level", (unsigned long long)cc->level);
	switch (cc->id) {
	case SQK_COMP_XZ:
		printf("%s", sep);
		printf(fmt, "dictionary_size", (unsigned long long)(cc->xz_dict ? cc->xz_dict :
								    cc->block_size));
		printf("%s", sep);
		printf(fmt, "bcj_filters", (unsigned long long)cc->xz_bcj);
		break;
	case SQK_COMP_GZIP:
		printf("%s", sep);
		printf(fmt, "window_bits", (unsigned long long)(cc->gzip_window ? cc->gzip_window : 15));
		printf("%s", sep);
		printf(fmt, "strategies", (unsigned long long)cc->gzip_strategies);
		break;
	case SQK_COMP_LZ4:
		printf("%s", sep);
		printf(fmt, "hc", (unsigned long long)cc->lz4_hc);
		break;
	default:
		break;
	}
}

static double info_ratio(const struct sqk_info *in, const struct sqk_super *s)
{
	return s->bytes_used ? (double)in->st.file_bytes / (double)s->bytes_used : 0.0;
}

static const char *info_integ_state(const struct sqk_info *in)
{
	return in->integ_rc == 0 ? "ok" : in->integ_rc == SQK_ENOENT ? "none" : "corrupt";
}

static void info_integrity_json(const struct sqk_info *in)
{
	char hex[2 * SQK_INTEG_DIGEST_SIZE + 1];

	printf("  \"integrity\": \"%s\",\n", info_integ_state(in));
	if (in->integ_rc) {
		printf("  \"root_hash\": null,\n  \"integrity_chunk_size\": null,\n");
		return;
	}
	sqk_integ_hex(in->integ.root, hex);
	printf("  \"root_hash\": \"%s\",\n  \"integrity_chunk_size\": %u,\n", hex,
	       in->integ.chunk_size);
}

static void info_integrity_text(const struct sqk_info *in)
{
	char hex[2 * SQK_INTEG_DIGEST_SIZE + 1];

	if (in->integ_rc == SQK_ENOENT) {
		printf("integrity:               none\n");
	} else if (in->integ_rc) {
		printf("integrity:               corrupt (%s)\n", sqk_strerror(in->integ_rc));
	} else {
		sqk_integ_hex(in->integ.root, hex);
		printf("root hash:               %s\n", hex);
		printf("integrity chunk size:    %u\n", in->integ.chunk_size);
	}
}

/* Remote images: what the transfers and the disk cache did for this command. */
static void info_http(const struct sqk_info *in, bool json)
{
	struct sqk_http_stats h;

	if (sqk_image_http_stats(in->c.img, &h))
		return;
	if (json)
		printf("  \"http_requests\": %llu,\n  \"http_bytes\": %llu,\n  \"http_retries\": %llu,\n"
		       "  \"disk_cache_hits\": %llu,\n  \"disk_cache_misses\": %llu,\n",
		       (unsigned long long)h.requests, (unsigned long long)h.bytes,
		       (unsigned long long)h.retries, (unsigned long long)h.disk_hits,
		       (unsigned long long)h.disk_misses);
	else
		printf("http:                    %llu requests, %llu bytes, %llu retries; disk cache "
		       "%llu hits, %llu misses\n",
		       (unsigned long long)h.requests, (unsigned long long)h.bytes,
		       (unsigned long long)h.retries, (unsigned long long)h.disk_hits,
		       (unsigned long long)h.disk_misses);
}

static void info_print_json(const struct sqk_info *in)
{
	const struct sqk_super *s = sqk_image_super(in->c.img);
	const struct sqk_comp_config *cc = sqk_image_comp(in->c.img);
	unsigned i, first = 1;

	printf("{\n  \"image\": ");
	info_json_str(in->c.shown ? in->c.shown : in->c.image);
	printf(",\n  \"offset\": %llu,\n", (unsigned long long)in->c.offset);
	printf("  \"inodes\": %u,\n  \"inodes_found\": %llu,\n", s->inode_count,
	       (unsigned long long)in->st.found);
	printf("  \"mkfs_time\": %u,\n  \"block_size\": %u,\n", s->mkfs_time, s->block_size);
	printf("  \"fragment_blocks\": %u,\n  \"compressor\": \"%s\",\n", s->fragment_count,
	       info_comp_name(s->compressor));
	printf("  \"compressor_options\": {");
	info_comp_opts(cc, 1);
	printf("},\n  \"flags\": %u,\n  \"flag_names\": [", s->flags);
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
	       (unsigned long long)s->inode_table_start, (unsigned long long)s->directory_table_start,
	       s->fragment_table_start == SQK_NONE64 ? -1LL : (long long)s->fragment_table_start,
	       s->export_table_start == SQK_NONE64 ? -1LL : (long long)s->export_table_start,
	       (unsigned long long)s->id_table_start,
	       s->xattr_id_table_start == SQK_NONE64 ? -1LL : (long long)s->xattr_id_table_start);
	printf("  \"inode_kinds\": {");
	for (i = 1; i < 8; i++)
		printf("%s\"%s\": %llu", i > 1 ? ", " : "", info_kind_names[i],
		       (unsigned long long)in->st.kinds[i]);
	printf("},\n  \"data_blocks\": %llu,\n", (unsigned long long)in->st.data_blocks);
	printf("  \"metadata_blocks\": %llu,\n  \"inode_metadata_blocks\": %llu,\n"
	       "  \"directory_metadata_blocks\": %llu,\n",
	       (unsigned long long)(in->st.inode_meta_blocks + in->st.dir_meta_blocks),
	       (unsigned long long)in->st.inode_meta_blocks,
	       (unsigned long long)in->st.dir_meta_blocks);
	printf("  \"file_bytes\": %llu,\n  \"sparse_bytes\": %llu,\n",
	       (unsigned long long)in->st.file_bytes, (unsigned long long)in->st.sparse_bytes);
	info_integrity_json(in);
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

static void info_print_text(const struct sqk_info *in)
{
	const struct sqk_super *s = sqk_image_super(in->c.img);
	time_t t = s->mkfs_time;
	struct tm tm;
	char when[64] = "?";
	unsigned i;

	if (gmtime_r(&t, &tm))
		strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S UTC", &tm);
	printf("image:                   %s", in->c.shown ? in->c.shown : in->c.image);
	if (in->c.offset)
		printf(" (at offset %llu)", (unsigned long long)in->c.offset);
	printf("\ninodes:                  %u (%llu reached from the root)\n", s->inode_count,
	       (unsigned long long)in->st.found);
	printf("created:                 %s (%u)\n", when, s->mkfs_time);
	printf("block size:              %u\n", s->block_size);
	printf("fragment blocks:         %u\n", s->fragment_count);
	printf("compressor:              %s (", info_comp_name(s->compressor));
	info_comp_opts(sqk_image_comp(in->c.img), 0);
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
	printf("data blocks:             %llu\n", (unsigned long long)in->st.data_blocks);
	printf("fragment blocks:         %u\n", s->fragment_count);
	printf("metadata blocks:         %llu (inodes %llu, directories %llu)\n",
	       (unsigned long long)(in->st.inode_meta_blocks + in->st.dir_meta_blocks),
	       (unsigned long long)in->st.inode_meta_blocks,
	       (unsigned long long)in->st.dir_meta_blocks);
	printf("file bytes:              %llu (sparse %llu)\n",
	       (unsigned long long)in->st.file_bytes, (unsigned long long)in->st.sparse_bytes);
	printf("compression ratio:       %.2f\n", info_ratio(in, s));
	info_integrity_text(in);
	info_http(in, false);
}

static int info_parse(struct sqk_info *in, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "offset", required_argument, NULL, 'o' },
		{ "help", no_argument, NULL, 'h' },
		SQK_CMD_REMOTE_LONGOPTS,
		{ NULL, 0, NULL, 0 },
	};
	int ch;

	while ((ch = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (ch) {
		case 'j': in->json = 1; break;
		case 'o':
			if (sqk_parse_u64(optarg, UINT64_MAX, &in->c.offset)) {
				sqk_cmd_usage_err("info", "bad --offset '%s'", optarg);
				return 2;
			}
			break;
		case 'h': info_usage(stdout); return 0;
		default:
			ch = sqk_cmd_remote_opt("info", &in->c.remote, ch, optarg);
			if (ch == 0)
				break;
			if (ch == 1)
				info_usage(stderr);
			return 2;
		}
	}
	if (argc - optind != 1) {
		sqk_cmd_usage_err("info", "expected IMAGE");
		return 2;
	}
	in->c.image = argv[optind];
	return -1;
}

static int info_run(struct sqk_info *in)
{
	const struct sqk_super *s = sqk_image_super(in->c.img);
	int err;

	in->raw.io = sqk_image_io(in->c.img);
	in->raw.bytes_used = s->bytes_used;
	in->raw.cur_pos = SQK_NONE64;
	err = sqk_compressor_create(sqk_image_comp(in->c.img), &in->raw.comp);
	if (err) {
		sqk_cmd_err(&in->c, NULL, err, "compressor");
		return 1;
	}
	err = info_gather(in);
	if (err)
		return 1;
	in->integ_rc = sqk_image_integrity(in->c.img, &in->integ);
	if (in->json)
		info_print_json(in);
	else
		info_print_text(in);
	return 0;
}

int sqk_info_main(int argc, char **argv)
{
	struct sqk_info *in = calloc(1, sizeof(*in));
	int r;

	if (!in)
		return 1;
	in->c.name = "info";
	r = info_parse(in, argc, argv);
	if (r < 0) {
		r = 1;
		if (!sqk_cmd_open(&in->c))
			r = info_run(in);
		fflush(stdout);
		if (!r && ferror(stdout)) {
			sqk_cmd_err(&in->c, NULL, 0, "error writing to stdout");
			r = 1;
		}
	}
	sqk_compressor_destroy(in->raw.comp);
	sqk_cmd_close(&in->c);
	free(in->st.runs);
	free(in->st.seen);
	free(in);
	return r;
}
