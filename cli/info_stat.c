/* SPDX-License-Identifier: BSD-2-Clause */
/* sqk info -s (-stat, --stat): the superblock report in the lines of `unsquashfs -s` (4.7),
 * from libsqk's validated superblock and compressor options; the number of xattr ids is read
 * from the head of the xattr id table. */
#include "info_stat.h"

#include <string.h>
#include <time.h>

#include "common/compressor.h"
#include "common/endian.h"

static const char *const is_gzip_strategies[] = {
	"default", "filtered", "huffman_only", "run_length_encoded", "fixed",
};

/* "\tStrategies selected: a, b" (gzip) or "\tFilters selected: a, b" (xz) for bits. */
static void is_names(const char *head, uint32_t bits, bool xz)
{
	const char *sep = head;

	for (unsigned i = 0; i < 32; i++) {
		const char *n;

		if (!(bits >> i & 1))
			continue;
		n = xz ? xz_bcj_name(1u << i)
		       : i < sizeof(is_gzip_strategies) / sizeof(is_gzip_strategies[0])
			     ? is_gzip_strategies[i] : NULL;
		if (n)
			printf("%s%s", sep, n);
		else
			printf("%sbit %u", sep, i);
		sep = ", ";
	}
	if (sep != head)
		printf("\n");
	else if (xz)
		printf("\tNo filters specified\n");
	else
		printf("%sdefault\n", head);
}

/* The stored compressor options, as each of unsquashfs's compressors displays them. */
static void is_comp_opts(const struct sqk_comp_config *cc)
{
	switch (cc->id) {
	case SQK_COMP_GZIP:
		printf("\tcompression-level %d\n", cc->level ? cc->level : 9);
		printf("\twindow-size %d\n", cc->gzip_window ? cc->gzip_window : 15);
		is_names("\tStrategies selected: ", cc->gzip_strategies, false);
		break;
	case SQK_COMP_XZ:
		printf("\tDictionary size %u\n", cc->xz_dict ? cc->xz_dict : cc->block_size);
		is_names("\tFilters selected: ", cc->xz_bcj, true);
		break;
	case SQK_COMP_LZ4:
		if (cc->lz4_hc)
			printf("\tHigh Compression option specified (-Xhc)\n");
		break;
	case SQK_COMP_LZO:
		printf("\talgorithm %s\n", lzo_algorithm_name(cc->lzo_algorithm));
		if (cc->lzo_algorithm == SQK_LZO1X_999 || cc->lzo_algorithm == SQK_LZO_DEFAULT)
			printf("\tcompression level %d\n", cc->level ? cc->level : 8);
		break;
	case SQK_COMP_ZSTD:
		printf("\tcompression-level %d\n", cc->level ? cc->level : 15);
		break;
	default:
		break;
	}
}

/* The xattr id count of the table's head (its second field), 0 without a table. */
static int is_xattr_ids(struct cmd *c, const struct sqk_super *s, uint32_t *n)
{
	uint8_t head[16];
	int r;

	*n = 0;
	if (s->xattr_id_table_start == SQK_NONE64)
		return 0;
	r = sqk_image_read_raw(c->img, s->xattr_id_table_start, head, sizeof(head));
	if (r) {
		cmd_err(c, NULL, r, "cannot read the xattr id table at %llu",
			(unsigned long long)s->xattr_id_table_start);
		return r;
	}
	*n = get_le32(head + 8);
	return 0;
}

/* "Sun Dec  6 07:33:35 2026", as asctime() writes it. */
static void is_when(uint32_t mkfs, bool utc, char *out, size_t cap)
{
	time_t t = mkfs;
	struct tm tm;

	if (!(utc ? gmtime_r(&t, &tm) : localtime_r(&t, &tm)) ||
	    !strftime(out, cap, "%a %b %e %H:%M:%S %Y", &tm))
		snprintf(out, cap, "failed to get time");
}

/* The flag lines, in unsquashfs's order and words. */
static void is_flags(uint16_t f)
{
	printf("Filesystem is %sexportable via NFS\n", f & SQK_FLAG_EXPORTABLE ? "" : "not ");
	printf("Inodes are %scompressed\n", f & SQK_FLAG_UNCOMP_INODES ? "un" : "");
	printf("Data is %scompressed\n", f & SQK_FLAG_UNCOMP_DATA ? "un" : "");
	printf("Uids/Gids (Id table) are %scompressed\n",
	       f & (SQK_FLAG_UNCOMP_INODES | SQK_FLAG_UNCOMP_IDS) ? "un" : "");
	if (f & SQK_FLAG_NO_FRAGS) {
		printf("Fragments are not stored\n");
	} else {
		printf("Fragments are %scompressed\n", f & SQK_FLAG_UNCOMP_FRAGS ? "un" : "");
		printf("Tailends are %spacked into fragments\n",
		       f & SQK_FLAG_ALWAYS_FRAGS ? "" : "not ");
	}
	if (f & SQK_FLAG_NO_XATTRS)
		printf("Xattrs are not stored\n");
	else
		printf("Xattrs are %scompressed\n", f & SQK_FLAG_UNCOMP_XATTRS ? "un" : "");
	printf("Duplicates are %sremoved\n", f & SQK_FLAG_DUPLICATES ? "" : "not ");
}

int info_stat(struct cmd *c, bool utc)
{
	const struct sqk_super *s = sqk_image_super(c->img);
	const char *name = comp_name(s->compressor);
	uint32_t xids;
	char when[64];

	if (is_xattr_ids(c, s, &xids))
		return 1;
	is_when(s->mkfs_time, utc, when, sizeof(when));
	printf("Found a valid SQUASHFS 4:0 superblock on %s.\n", c->shown ? c->shown : c->image);
	printf("Creation or last append time %s\n", when);
	printf("Filesystem size %llu bytes (%.2f Kbytes / %.2f Mbytes)\n",
	       (unsigned long long)s->bytes_used, (double)s->bytes_used / 1024.0,
	       (double)s->bytes_used / (1024.0 * 1024.0));
	printf("Compression %s\n", name ? name : "unknown");
	if (s->flags & SQK_FLAG_COMP_OPTS)
		is_comp_opts(sqk_image_comp(c->img));
	printf("Block size %u\n", s->block_size);
	is_flags(s->flags);
	printf("Number of fragments %u\n", s->fragment_count);
	printf("Number of inodes %u\n", s->inode_count);
	printf("Number of ids %u\n", s->id_count);
	if (!(s->flags & SQK_FLAG_NO_XATTRS))
		printf("Number of xattr ids %u\n", xids);
	return 0;
}
