/* SPDX-License-Identifier: BSD-2-Clause */
/* SquashFS 4.0 on-disk structures, with explicit little-endian encode/decode. Never cast these
 * structs over image bytes: sizes below are the on-disk sizes, asserted at compile time against
 * the encoders' lengths. */
#ifndef SQK_FORMAT_H
#define SQK_FORMAT_H

#include "sqk/types.h"

#include <stddef.h>
#include <stdint.h>


struct inode_header {
	uint16_t type;
	uint16_t mode;
	uint16_t uid_idx;
	uint16_t gid_idx;
	uint32_t mtime;
	uint32_t inode_number;
};
#define SQK_INODE_HEADER_SIZE 16

struct dir_header {
	uint32_t count; /* entries - 1 */
	uint32_t start_block;
	uint32_t inode_number;
};
#define SQK_DIR_HEADER_SIZE 12

struct dir_entry {
	uint16_t offset;
	int16_t inode_delta;
	uint16_t type;
	uint16_t name_size; /* length - 1 */
};
#define SQK_DIR_ENTRY_SIZE 8

struct sqk_dir_index {
	uint32_t index;
	uint32_t start_block;
	uint32_t name_size; /* length - 1 */
};
#define SQK_DIR_INDEX_SIZE 12

struct frag_entry {
	uint64_t start;
	uint32_t size;
	uint32_t unused;
};
#define SQK_FRAG_ENTRY_SIZE 16

struct xattr_id {
	uint64_t ref;
	uint32_t count;
	uint32_t size;
};
#define SQK_XATTR_ID_SIZE 16

struct xattr_header {
	uint64_t kv_start;
	uint32_t count;
	uint32_t unused;
};
#define SQK_XATTR_HEADER_SIZE 16

/* The first bytes of a file that super_diagnose looks at (room for the magic numbers of
 * the formats it names: a tar header, an EROFS or ext superblock). */
#define SQK_PROBE_SIZE 4096u

/* Judges the start of a file before it is read as an image: head holds its first n bytes (n is
 * min(size, SQK_PROBE_SIZE)), tail its last tail_len bytes (SQK_INTEG_TRAILER_SIZE of them, or
 * 0: not looked at), size the bytes of the file from the image start (offset bytes in, named in
 * the message when not 0). Returns 0 for a SquashFS 4.0 superblock whose bytes_used fits in
 * size, and for a damaged one that sqk's integrity trailer at the end says covers an image
 * starting here (the callers' later checks say what is wrong); else SQK_EEMPTY, SQK_ENOTSQFS,
 * SQK_EVERSION or SQK_ETRUNCATED with one line in why naming name: "'x' is empty: not a
 * SquashFS image", "'x' is not a SquashFS image: it is gzip data", "x: SquashFS 3.0 image,
 * big-endian: only 4.0 is supported", "x: truncated image: file is N bytes, the superblock says
 * M", "'x' is not a SquashFS image at offset 0: its integrity data covers an image at offset K
 * (--offset K)". Borrows everything; writes at most len bytes. */
int super_diagnose(const char *name, uint64_t offset, const uint8_t *head, size_t n,
			       const uint8_t *tail, size_t tail_len, uint64_t size, char *why,
			       size_t len);

/* What a file that is not SquashFS holds, judged by its first n bytes: "gzip data", "a tar
 * archive", "an ELF file", "an EROFS image"... or NULL when the magic is not one known. */
const char *magic_name(const uint8_t *head, size_t n);

void super_encode(const struct sqk_super *s, uint8_t out[SQK_SUPER_SIZE]);
void super_decode(const uint8_t in[SQK_SUPER_SIZE], struct sqk_super *s);
void inode_header_encode(const struct inode_header *h, uint8_t *out);
void inode_header_decode(const uint8_t *in, struct inode_header *h);
void dir_header_encode(const struct dir_header *h, uint8_t *out);
void dir_header_decode(const uint8_t *in, struct dir_header *h);
void dir_entry_encode(const struct dir_entry *e, uint8_t *out);
void dir_entry_decode(const uint8_t *in, struct dir_entry *e);
void dir_index_encode(const struct sqk_dir_index *e, uint8_t *out);
void dir_index_decode(const uint8_t *in, struct sqk_dir_index *e);
void frag_entry_encode(const struct frag_entry *e, uint8_t *out);
void frag_entry_decode(const uint8_t *in, struct frag_entry *e);
void xattr_id_encode(const struct xattr_id *e, uint8_t *out);
void xattr_id_decode(const uint8_t *in, struct xattr_id *e);
void xattr_header_encode(const struct xattr_header *h, uint8_t *out);
void xattr_header_decode(const uint8_t *in, struct xattr_header *h);

/* Metadata blocks that hold a lookup table (fragment, export, id, xattr id) of count entries of
 * size bytes each, and the bytes of its index (one u64 position per block). */
uint64_t table_blocks(uint64_t count, unsigned size);
uint64_t table_index_bytes(uint64_t count, unsigned size);

/* The order of the names in a directory listing (the kernel's lookup and the directory index
 * rely on it): bytes compared as unsigned, a proper prefix first. a and b need no NUL. */
int dir_name_cmp(const char *a, size_t alen, const char *b, size_t blen);

/* The xattr name prefix of on-disk prefix id (low byte of the type): "user.", "trusted.",
 * "security."; NULL for any other id. */
#define SQK_XATTR_NPREFIX 3u
const char *xattr_prefix(unsigned id);

/* Linux "new" device number encoding used by SquashFS. */

#endif
