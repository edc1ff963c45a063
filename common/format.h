/* SquashFS 4.0 on-disk structures, with explicit little-endian encode/decode. Never cast these
 * structs over image bytes: sizes below are the on-disk sizes, asserted at compile time against
 * the encoders' lengths. */
#ifndef SQK_FORMAT_H
#define SQK_FORMAT_H

#include "api.h"

#include <stddef.h>
#include <stdint.h>

#define SQK_MAGIC 0x73717368u
#define SQK_NONE64 UINT64_MAX
#define SQK_NONE32 UINT32_MAX
#define SQK_PAD 4096u
#define SQK_MIN_BLOCK 4096u
#define SQK_MAX_BLOCK 1048576u
#define SQK_BLOCK_RAW 0x01000000u
#define SQK_BLOCK_SIZE_MASK 0x00FFFFFFu
#define SQK_DIR_RUN_MAX 256u
#define SQK_NAME_MAX 256u
#define SQK_SYMLINK_MAX 4096u
#define SQK_XATTR_OOL_MIN 129u /* values this long or longer go out of line */

enum sqk_flag {
	SQK_FLAG_UNCOMP_INODES = 0x0001,
	SQK_FLAG_UNCOMP_DATA = 0x0002,
	SQK_FLAG_CHECK = 0x0004,
	SQK_FLAG_UNCOMP_FRAGS = 0x0008,
	SQK_FLAG_NO_FRAGS = 0x0010,
	SQK_FLAG_ALWAYS_FRAGS = 0x0020,
	SQK_FLAG_DUPLICATES = 0x0040,
	SQK_FLAG_EXPORTABLE = 0x0080,
	SQK_FLAG_UNCOMP_XATTRS = 0x0100,
	SQK_FLAG_NO_XATTRS = 0x0200,
	SQK_FLAG_COMP_OPTS = 0x0400,
	SQK_FLAG_UNCOMP_IDS = 0x0800,
};

enum sqk_inode_type {
	SQK_T_DIR = 1, SQK_T_FILE, SQK_T_SYMLINK, SQK_T_BLKDEV, SQK_T_CHRDEV, SQK_T_FIFO,
	SQK_T_SOCKET,
	SQK_T_LDIR, SQK_T_LFILE, SQK_T_LSYMLINK, SQK_T_LBLKDEV, SQK_T_LCHRDEV, SQK_T_LFIFO,
	SQK_T_LSOCKET,
};

struct sqk_super {
	uint32_t magic;
	uint32_t inode_count;
	uint32_t mkfs_time;
	uint32_t block_size;
	uint32_t fragment_count;
	uint16_t compressor;
	uint16_t block_log;
	uint16_t flags;
	uint16_t id_count;
	uint16_t version_major;
	uint16_t version_minor;
	uint64_t root_inode;
	uint64_t bytes_used;
	uint64_t id_table_start;
	uint64_t xattr_id_table_start;
	uint64_t inode_table_start;
	uint64_t directory_table_start;
	uint64_t fragment_table_start;
	uint64_t export_table_start;
};
#define SQK_SUPER_SIZE 96

struct sqk_inode_header {
	uint16_t type;
	uint16_t mode;
	uint16_t uid_idx;
	uint16_t gid_idx;
	uint32_t mtime;
	uint32_t inode_number;
};
#define SQK_INODE_HEADER_SIZE 16

struct sqk_dir_header {
	uint32_t count; /* entries - 1 */
	uint32_t start_block;
	uint32_t inode_number;
};
#define SQK_DIR_HEADER_SIZE 12

struct sqk_dir_entry {
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

struct sqk_frag_entry {
	uint64_t start;
	uint32_t size;
	uint32_t unused;
};
#define SQK_FRAG_ENTRY_SIZE 16

struct sqk_xattr_id {
	uint64_t ref;
	uint32_t count;
	uint32_t size;
};
#define SQK_XATTR_ID_SIZE 16

struct sqk_xattr_header {
	uint64_t kv_start;
	uint32_t count;
	uint32_t unused;
};
#define SQK_XATTR_HEADER_SIZE 16

/* The first bytes of a file that sqk_super_diagnose looks at (room for the magic numbers of
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
SQK_API int sqk_super_diagnose(const char *name, uint64_t offset, const uint8_t *head, size_t n,
			       const uint8_t *tail, size_t tail_len, uint64_t size, char *why,
			       size_t len);

/* What a file that is not SquashFS holds, judged by its first n bytes: "gzip data", "a tar
 * archive", "an ELF file", "an EROFS image"... or NULL when the magic is not one known. */
SQK_API const char *sqk_magic_name(const uint8_t *head, size_t n);

SQK_API void sqk_super_encode(const struct sqk_super *s, uint8_t out[SQK_SUPER_SIZE]);
SQK_API void sqk_super_decode(const uint8_t in[SQK_SUPER_SIZE], struct sqk_super *s);
SQK_API void sqk_inode_header_encode(const struct sqk_inode_header *h, uint8_t *out);
SQK_API void sqk_inode_header_decode(const uint8_t *in, struct sqk_inode_header *h);
SQK_API void sqk_dir_header_encode(const struct sqk_dir_header *h, uint8_t *out);
SQK_API void sqk_dir_header_decode(const uint8_t *in, struct sqk_dir_header *h);
SQK_API void sqk_dir_entry_encode(const struct sqk_dir_entry *e, uint8_t *out);
SQK_API void sqk_dir_entry_decode(const uint8_t *in, struct sqk_dir_entry *e);
SQK_API void sqk_dir_index_encode(const struct sqk_dir_index *e, uint8_t *out);
SQK_API void sqk_dir_index_decode(const uint8_t *in, struct sqk_dir_index *e);
SQK_API void sqk_frag_entry_encode(const struct sqk_frag_entry *e, uint8_t *out);
SQK_API void sqk_frag_entry_decode(const uint8_t *in, struct sqk_frag_entry *e);
SQK_API void sqk_xattr_id_encode(const struct sqk_xattr_id *e, uint8_t *out);
SQK_API void sqk_xattr_id_decode(const uint8_t *in, struct sqk_xattr_id *e);
SQK_API void sqk_xattr_header_encode(const struct sqk_xattr_header *h, uint8_t *out);
SQK_API void sqk_xattr_header_decode(const uint8_t *in, struct sqk_xattr_header *h);

/* Metadata blocks that hold a lookup table (fragment, export, id, xattr id) of count entries of
 * size bytes each, and the bytes of its index (one u64 position per block). */
SQK_API uint64_t sqk_table_blocks(uint64_t count, unsigned size);
SQK_API uint64_t sqk_table_index_bytes(uint64_t count, unsigned size);

/* The order of the names in a directory listing (the kernel's lookup and the directory index
 * rely on it): bytes compared as unsigned, a proper prefix first. a and b need no NUL. */
SQK_API int sqk_name_cmp(const char *a, size_t alen, const char *b, size_t blen);

/* The xattr name prefix of on-disk prefix id (low byte of the type): "user.", "trusted.",
 * "security."; NULL for any other id. */
#define SQK_XATTR_NPREFIX 3u
SQK_API const char *sqk_xattr_prefix(unsigned id);

/* Linux "new" device number encoding used by SquashFS. */
static inline uint32_t sqk_rdev_encode(uint32_t major, uint32_t minor)
{
	return (minor & 0xFFu) | ((major & 0xFFFu) << 8) | ((minor & ~0xFFu) << 12);
}

static inline uint32_t sqk_rdev_major(uint32_t rdev)
{
	return (rdev >> 8) & 0xFFFu;
}

static inline uint32_t sqk_rdev_minor(uint32_t rdev)
{
	return (rdev & 0xFFu) | ((rdev >> 12) & 0xFFF00u);
}

/* Basic inode type for an extended one (and identity for basic types). */
static inline uint16_t sqk_basic_type(uint16_t type)
{
	return type > SQK_T_SOCKET ? (uint16_t)(type - 7) : type;
}

/* S_IFMT bits (Linux values) of an inode type, basic or extended; 0 for an invalid type. */
static inline uint32_t sqk_type_ifmt(uint16_t type)
{
	static const uint32_t ifmt[8] = { 0, 0040000, 0100000, 0120000, 0060000, 0020000,
					  0010000, 0140000 };
	uint16_t b = sqk_basic_type(type);
	return b >= 1 && b <= 7 ? ifmt[b] : 0;
}

#endif
