/* SPDX-License-Identifier: BSD-2-Clause */
/* The counts of an image's contents in the words every command uses for them: the sqk mkimage
 * summary (what was written), sqk info and sqk verify (what the image holds, through libsqk's
 * sqk_image_info). One place for the words, so the three say the same thing the same way. */
#ifndef SQK_COUNTS_H
#define SQK_COUNTS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

struct sqk_counts {
	uint64_t inodes;
	uint64_t files, dirs, symlinks, devices, fifos_sockets; /* inodes by kind */
	uint64_t hard_links;      /* names of files beyond each file's first */
	uint64_t data_blocks;     /* stored data blocks; a block list shared by duplicates once */
	uint64_t raw_blocks;      /* of those, stored uncompressed */
	uint64_t sparse_blocks;   /* blocks of zeros not stored */
	uint64_t fragment_blocks;
	uint64_t dup_files, dup_bytes; /* files whose data is an earlier file's */
};

/* "15: 6 files, 4 directories, 1 symlinks, 2 devices, 2 fifos/sockets; 1 extra hard links" */
static inline void sqk_counts_inodes(const struct sqk_counts *c, char *buf, size_t len)
{
	snprintf(buf, len, "%llu: %llu files, %llu directories, %llu symlinks, %llu devices, "
		 "%llu fifos/sockets; %llu extra hard links", (unsigned long long)c->inodes,
		 (unsigned long long)c->files, (unsigned long long)c->dirs,
		 (unsigned long long)c->symlinks, (unsigned long long)c->devices,
		 (unsigned long long)c->fifos_sockets, (unsigned long long)c->hard_links);
}

/* "3 data (1 stored raw), 8 sparse, 1 fragment blocks" */
static inline void sqk_counts_blocks(const struct sqk_counts *c, char *buf, size_t len)
{
	snprintf(buf, len, "%llu data (%llu stored raw), %llu sparse, %llu fragment blocks",
		 (unsigned long long)c->data_blocks, (unsigned long long)c->raw_blocks,
		 (unsigned long long)c->sparse_blocks, (unsigned long long)c->fragment_blocks);
}

/* "2 files, 300006 bytes" */
static inline void sqk_counts_dups(const struct sqk_counts *c, char *buf, size_t len)
{
	snprintf(buf, len, "%llu files, %llu bytes", (unsigned long long)c->dup_files,
		 (unsigned long long)c->dup_bytes);
}

/* The same counts as the members of a JSON object (no braces), indent before each line. */
static inline void sqk_counts_json(const struct sqk_counts *c, FILE *f, const char *indent)
{
	fprintf(f, "%s\"inodes\": %llu, \"files\": %llu, \"directories\": %llu, "
		"\"symlinks\": %llu,\n"
		"%s\"devices\": %llu, \"fifos_sockets\": %llu, \"extra_hard_links\": %llu,\n"
		"%s\"data_blocks\": %llu, \"raw_blocks\": %llu, \"sparse_blocks\": %llu,\n"
		"%s\"fragment_blocks\": %llu, \"duplicate_files\": %llu, \"duplicate_bytes\": %llu",
		indent, (unsigned long long)c->inodes, (unsigned long long)c->files,
		(unsigned long long)c->dirs, (unsigned long long)c->symlinks, indent,
		(unsigned long long)c->devices, (unsigned long long)c->fifos_sockets,
		(unsigned long long)c->hard_links, indent, (unsigned long long)c->data_blocks,
		(unsigned long long)c->raw_blocks, (unsigned long long)c->sparse_blocks, indent,
		(unsigned long long)c->fragment_blocks, (unsigned long long)c->dup_files,
		(unsigned long long)c->dup_bytes);
}

#ifdef __cplusplus
}
#endif

#endif
