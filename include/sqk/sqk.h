/* SPDX-License-Identifier: BSD-2-Clause */
/* libsqk — read SquashFS 4.0 images (from squashkit, mksquashfs, gensquashfs, tar2sqfs).
 *
 * ABI: the options structs a caller passes (sqk_open_opts, sqk_http_opts) and the result structs
 * the library fills (sqk_stats, sqk_image_info, sqk_http_stats) start with `size_t size`, the
 * sizeof of the caller's version: set it with the *_init functions (options, with every
 * default) or to sizeof (results). Fields are only appended; the library accepts every size
 * from a struct's first version on (common/abi.h), so a program built against an older
 * libsqk.so.2 runs with a newer one. The hot per-entry structs (sqk_inode, sqk_dirent,
 * sqk_mismatch) have no size field: they change only with the SONAME (libsqk.so.N). A size
 * the library does not accept is SQK_EABI.
 *
 * Every function returns 0 (or a length) on success and a negative SQK_E* code (sqk/error.h,
 * sqk_strerror()) on failure. An image handle is thread-safe: any number of threads may call
 * any function on one image concurrently. Nothing read from an image is trusted: every offset,
 * size and count is bounds-checked; corruption gives SQK_ECORRUPT / SQK_EDECOMPRESS /
 * SQK_EBOUNDS and a message through the log callback naming the image and the offset. */
#ifndef SQK_LIBSQK_H
#define SQK_LIBSQK_H

#include "api.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "counts.h"
#include "error.h"
#include "io.h"
#include "types.h"
#include "remote.h"

#ifdef __cplusplus
extern "C" {
#endif

struct sqk_image;

/* The version of the library running ("MAJOR.MINOR.PATCH", static storage): the SONAME's
 * number (libsqk.so.2) changes with every incompatible change, MINOR with every addition. */
SQK_API const char *sqk_version(void);

struct sqk_open_opts {
	size_t size;                /* sizeof(struct sqk_open_opts): sqk_open_opts_init sets it */
	uint64_t offset;            /* byte offset of the superblock in the file (embedded) */
	size_t cache_bytes;         /* decompressed block cache limit; 0 = 64 MiB */
	unsigned readahead_blocks;  /* sequential readahead window in blocks; 0 = default (16) */
	unsigned threads;           /* decompression workers for readahead; 0 = online CPUs */
	/* Called (from any thread) with a one-line message on corruption or I/O errors. */
	void (*log)(void *log_ctx, const char *msg);
	void *log_ctx;
	const char *name;           /* image name used in messages (copied); NULL = the path */
	/* Reads are verified by default: every byte read is checked against the image's integrity
	 * data when it has some (and starts at offset 0 of its file), each chunk hashed once per
	 * open; a mismatch fails that read with SQK_ECORRUPT and is logged once per chunk. A
	 * zero-initialised sqk_open_opts (or NULL opts) therefore verifies. no_verify turns it off
	 * for local images (remote images are always verified by their backend). An image without
	 * integrity data is read unchecked (sqk_image_verified() says which). */
	bool no_verify;
	/* A chunk that fails its check after the open is not logged: the caller names it itself,
	 * with the path it knows, from sqk_image_mismatch() (sqk's commands do). One that fails
	 * the open (the superblock's chunk, the tables read at open) is logged. */
	bool quiet_mismatch;
	/* Remote images (http:// and https:// paths): fetching, cache, headers (borrowed for the
	 * open only; NULL = defaults). Their reads are always verified when the image has integrity
	 * data. Its root_hash must be NULL (SQK_EINVAL): the pin is root_hash below. */
	const struct sqk_http_opts *http;
	/* 32 bytes (borrowed for the open only), NULL = any: the root digest of the image's
	 * integrity data must equal it, local or remote, else the open fails with SQK_ECORRUPT and
	 * a log line (the two digests, or that the image has no integrity data). */
	const uint8_t *root_hash;
	/* Remote images: do not fetch the image's prefetch hint ranges at open (see
	 * sqk_image_prefetch). */
	bool no_prefetch;
	/* Fields below: appended in 0.3.0 (libsqk.so.2 accepts the shorter struct). */
	/* Refuse an image without integrity data (SQK_ENOINTEG, logged) instead of reading it
	 * unchecked. Implied by root_hash and by trusted keys. */
	bool require_integrity;
	/* Trusted Ed25519 public keys: PEM files (a NULL-terminated array of paths) and a folder
	 * of them (every regular *.pub file in it), borrowed for the open only. When either is
	 * given the image must carry a valid signature (sqk sign) by one of those keys over its
	 * integrity root digest and size: checked at open, before any content is served, else
	 * the open fails with SQK_EUNTRUSTED and a log line naming the key ids found (a key file
	 * that cannot be read or is not Ed25519: SQK_EINVAL, logged). Reads are then checked with
	 * SHA-256, as with root_hash, since tampering is in scope, even with no_verify. */
	const char *const *trust;
	const char *trust_dir;
	/* Remote images with a disk cache: the newest signed time accepted from a URL is kept
	 * there per key, and an image signed earlier is refused (SQK_EROLLBACK) unless this is
	 * set. */
	bool allow_rollback;
};

/* Sets *o to the defaults (zero: verified reads, 64 MiB cache, ...) with o->size set. NULL opts
 * to the sqk_image_open* functions mean the same. */
SQK_API void sqk_open_opts_init(struct sqk_open_opts *o);

/* An inode as decoded from the image. Plain data: the caller owns it, copies are fine. */
struct sqk_inode {
	uint64_t ref;         /* inode reference (block << 16 | offset) */
	uint32_t ino;         /* inode number, 1..inode_count */
	uint16_t type;        /* on-disk type 1..14 */
	uint32_t mode;        /* full st_mode: S_IFMT bits from the type, plus permission bits */
	uint32_t uid, gid;    /* resolved through the id table */
	uint32_t mtime;
	uint32_t nlink;
	uint64_t size;        /* file: bytes; directory: listing size + 3; symlink: its length */
	uint32_t rdev;        /* devices: SquashFS encoding (sqk_rdev_major/minor) */
	uint32_t xattr_idx;   /* SQK_NONE32 = none */
	/* Locators (meaning depends on the type). */
	uint64_t blocks_start;  /* files */
	uint32_t frag_index;    /* files: SQK_NONE32 = no fragment */
	uint32_t frag_offset;
	uint64_t sparse;
	uint32_t parent;        /* directories: parent inode number */
	uint32_t dir_block;     /* directories: listing block, relative to directory_table_start */
	uint16_t dir_offset;
	uint16_t index_count;   /* extended directories */
	uint64_t body_ref;      /* ref of what follows the fixed part (size words, index, target) */
};

struct sqk_dirent {
	const char *name;     /* borrowed from the iterator; valid until its next call */
	size_t name_len;
	uint32_t ino;
	uint16_t type;        /* basic type 1..7 */
	uint64_t ref;         /* inode reference, for sqk_inode_get */
};

/* An open directory listing (sqk_dir_open): opaque, its layout private to libsqk. */
struct sqk_dir_iter;

/* A tree walk (sqk_walk_open): opaque. */
struct sqk_walk;

struct sqk_stats {
	size_t size;                /* the caller's sizeof(struct sqk_stats), set before the call */
	uint64_t data_blocks_decompressed;
	uint64_t fragment_blocks_decompressed;
	uint64_t metadata_blocks_decompressed;
	uint64_t cache_hits;
	uint64_t cache_misses;
	uint64_t bytes_read;        /* bytes read from the image */
	uint64_t readahead_batches;
	uint64_t chunks_hashed;     /* verified reads: integrity chunks hashed (good ones once) */
	uint64_t chunks_xxh3;       /* of those, checked with their XXH3-64 fast checksum */
	uint64_t chunks_sha256;     /* of those, checked with their SHA-256 digest */
};

/* What a walk of every inode reachable from the root finds (sqk_image_info). Plain data. The
 * superblock fields are in sqk_image_super, the compressor options in sqk_image_comp, the
 * integrity trailer in sqk_image_integrity. */
struct sqk_image_info {
	size_t size;                /* the caller's sizeof(struct sqk_image_info), set before */
	uint64_t inodes_found;      /* distinct inode numbers reached from the root (included) */
	uint64_t kinds[8];          /* of those, by basic type 1..7 (SQK_T_DIR..SQK_T_SOCKET) */
	uint64_t file_bytes;        /* sum of the sizes of the distinct regular files */
	uint64_t sparse_bytes;      /* sum of their sparse byte counts (extended file inodes) */
	/* Stored (non-sparse) data blocks of the distinct files; a block list that several files
	 * share (duplicates) counts once. */
	uint64_t data_blocks;
	uint64_t inode_table_bytes;     /* inode_table_start to directory_table_start */
	uint64_t directory_table_bytes; /* directory_table_start to the first lookup table */
	uint64_t inode_metadata_blocks;
	uint64_t directory_metadata_blocks;
	/* What sqk mkimage's summary counts, in its words (sqk/counts.h): the inodes by kind
	 * as above (devices, fifos and sockets together), the extra names of files, data_blocks
	 * and those stored raw, the sparse blocks (duplicates' once), the fragment blocks of the
	 * superblock, the duplicates (a file whose data is an earlier file's, by size and place).*/
	struct sqk_counts counts;
};

/* Opens the image at path, or at an http:// or https:// URL (opts may be NULL). Caller owns *out
 * (sqk_image_close). */
SQK_API int sqk_image_open(const char *path, const struct sqk_open_opts *opts,
			   struct sqk_image **out);

/* Opens an image on fd (borrowed: must stay open until close). Caller owns *out. */
SQK_API int sqk_image_open_fd(int fd, const struct sqk_open_opts *opts, struct sqk_image **out);

/* Opens an image on io (borrowed; opts->offset is added to every position). Caller owns *out. */
SQK_API int sqk_image_open_io(struct sqk_io *io, const struct sqk_open_opts *opts,
		      struct sqk_image **out);

/* Opens the image served at url (range requests; opts->http tunes them; opts->offset must be 0).
 * The metadata tables are fetched at open, in few requests. Caller owns *out. SQK_ENOREMOTE
 * (a line naming url logged) when libsqk was built without the remote backend. */
SQK_API int sqk_image_open_url(const char *url, const struct sqk_open_opts *opts,
			       struct sqk_image **out);

/* Remote images: fails every pending and later fetch at once (for shutdown while requests hang);
 * no-op for local images. */
SQK_API void sqk_image_cancel(struct sqk_image *img);

/* Stops the image's background threads (they start again on demand): call it before fork().
 * Transfers in flight end (the prefetch of the hint among them). */
SQK_API void sqk_image_quiesce(struct sqk_image *img);

/* Remote images with a prefetch hint (sqk mkimage --order / -sort): starts fetching its ranges
 * in parallel parts and returns at once; reads of bytes still on their way wait for them, what
 * is there already is not fetched again. sqk_image_open_url does it unless opts.no_prefetch; a
 * caller that forks after the open (a daemon) opens with no_prefetch and calls this after the
 * fork. Then starts the background fetch of an image opened with http.background
 * (sqk_io_http_background). No-op for local images or without a hint; NULL-safe. */
SQK_API void sqk_image_prefetch(struct sqk_image *img);

/* Files a caller is about to read whole, in another order than the image's (sqk tar or
 * extract of a folder: an access-ordered image keeps a start's files at its front, out of the
 * tree's order), fetched ahead in image order on a remote image (sqk_prefetch_*). */
struct sqk_prefetch;

/* A new empty set for img (borrowed: it must outlive the set) that fetches at most max bytes,
 * counted in whole integrity chunks (64 KiB without integrity data), as the remote io fetches
 * them and holds them in memory until they are read; never more than the io's prefetch takes
 * of one range (half the memory cache, sqk_http_opts.mem_bytes). Files less than 256 KiB
 * apart in the image are fetched as one run; the runs holding files in the image's prefetch
 * hint ranges come first (files the hint, once fetched, has on their way are left out), then
 * the others in the order their first files were added, the last one kept cut on a chunk
 * boundary. *out owned by the caller: sqk_prefetch_start or sqk_prefetch_free. SQK_EINVAL,
 * SQK_ENOMEM. */
SQK_API int sqk_prefetch_new(struct sqk_image *img, uint64_t max, struct sqk_prefetch **out);

/* Adds the data blocks and fragment block of file (borrowed; anything but a regular file, a
 * file past the max, or any file of a local image: ignored). SQK_EINVAL, SQK_ENOMEM, or SQK_E*
 * when its block list does not decode. */
SQK_API int sqk_prefetch_add(struct sqk_prefetch *p, const struct sqk_inode *file);

/* Starts fetching p's bytes in image order, in parallel parts, and frees p (NULL-safe); it
 * does not wait for the network. Reads of bytes still on their way wait for their own part; a
 * walk through the image takes files in them as fetched (they neither extend nor end it, as
 * the hint's once fetched), so that it is fetched ahead through the other files between them
 * only. The set's ranges are kept for that until the image is closed (16 bytes each). */
SQK_API void sqk_prefetch_start(struct sqk_prefetch *p);

/* Frees p without fetching anything; NULL-safe. */
SQK_API void sqk_prefetch_free(struct sqk_prefetch *p);

/* The above for every regular file at or below top (NULL = the root): 0, SQK_ENOMEM, or the
 * error of opening the walk at top (nothing fetched then); unreadable parts below it are left
 * out (their reads say what is wrong). No-op for local images. Borrows both. */
SQK_API int sqk_image_prefetch_tree(struct sqk_image *img, const struct sqk_inode *top,
				    uint64_t max);

/* Remote images: copies the transfer and disk-cache counters. SQK_ENOENT for local images. */
SQK_API int sqk_image_http_stats(struct sqk_image *img, struct sqk_http_stats *out);

/* The I/O object the image reads through (borrowed, lives as long as img). */
SQK_API struct sqk_io *sqk_image_io(struct sqk_image *img);

/* Closes img; NULL-safe. */
SQK_API void sqk_image_close(struct sqk_image *img);

/* The validated superblock (borrowed, lives as long as img). */
SQK_API const struct sqk_super *sqk_image_super(const struct sqk_image *img);

/* Compressor options of the image (borrowed). */
SQK_API const struct sqk_comp_config *sqk_image_comp(const struct sqk_image *img);

/* Decodes the inode at ref. */
SQK_API int sqk_inode_get(struct sqk_image *img, uint64_t ref, struct sqk_inode *out);

/* The root directory. */
SQK_API int sqk_image_root(struct sqk_image *img, struct sqk_inode *out);

/* Looks up name (not NUL-terminated; len bytes) in directory dir, using the directory index.
 * SQK_ENOENT if absent. */
SQK_API int sqk_lookup(struct sqk_image *img, const struct sqk_inode *dir, const char *name,
		       size_t len, struct sqk_inode *out);

/* Resolves a '/'-separated path from the root: "." and ".." as in POSIX (".." of the root is the
 * root), no symlinks followed; "" or "/" = root. */
SQK_API int sqk_lookup_path(struct sqk_image *img, const char *path, struct sqk_inode *out);

/* Opens the listing of directory dir (borrowed for the call: copied) for sqk_dir_next, without
 * . and ..; SQK_EINVAL when dir is not a directory, SQK_ENOMEM. Borrows img (which must outlive
 * it); the caller owns *out (NULL on failure) and frees it with sqk_dir_close. One iterator is
 * for one thread at a time; several may read one directory at once. */
SQK_API int sqk_dir_open(struct sqk_image *img, const struct sqk_inode *dir,
			 struct sqk_dir_iter **out);

/* Next entry: returns 1 with the caller's *e filled, 0 at the end, or SQK_E* (logged, naming
 * the metadata block; every later call returns 0). e->name is borrowed from it: valid (and
 * NUL-terminated) until the next call or sqk_dir_close. Names are validated (not empty, no
 * '/' or NUL, not . or .., sorted and unique), and so are the entry's inode number (1 to the
 * image's inode count), type and offset. */
SQK_API int sqk_dir_next(struct sqk_dir_iter *it, struct sqk_dirent *e);

/* Frees it; NULL-safe. */
SQK_API void sqk_dir_close(struct sqk_dir_iter *it);

/* Entries it has returned so far (borrows it). */
SQK_API uint64_t sqk_dir_index(const struct sqk_dir_iter *it);

/* Image position of the metadata block it reads from now, for messages naming an offset
 * (borrows it). */
SQK_API uint64_t sqk_dir_pos(const struct sqk_dir_iter *it);

/* The walk of a tree: sqk_walk_open, then sqk_walk_next until it returns 0, then sqk_walk_close.
 * Depth first, each directory's entries in their stored (sorted) order, a directory before its
 * entries; iterative (a stack on the heap, never the C stack), however deep the image nests.
 *
 * Flags of sqk_walk_open: */
#define SQK_WALK_ONCE  0x1u /* each inode number once: an entry whose inode number was met before
			     * (a hard link; a second name of a directory in a crafted image) has
			     * SQK_WALK_SEEN set, and such a directory is not entered */
#define SQK_WALK_LEAVE 0x2u /* also report every directory again after its entries (event
			     * SQK_WALK_POST), for post-order work; it comes right after the
			     * directory when the directory is not entered */

/* The deepest an entry may be below the start: the one depth policy of squashkit (the builder
 * refuses deeper trees). A larger max_depth is taken as this one. */
#define SQK_WALK_MAX_DEPTH 2048u

/* What sqk_walk_next reports (sqk_walk_entry.event). */
enum sqk_walk_event {
	SQK_WALK_PRE = 1,      /* an entry (the start first, at depth 0) */
	SQK_WALK_POST = 2,     /* SQK_WALK_LEAVE: a directory after its entries */
	/* Errors (sqk_walk_next returns the SQK_E* code); the walk may go on with the next call: */
	SQK_WALK_ERR_LIST = 3, /* the listing of the directory at path failed (its other entries
				* are not reported; e.pos names the metadata block) */
	SQK_WALK_ERR_INODE = 4, /* the inode of the entry at path does not decode (e.dirent says
				 * what the listing holds; the entry is not reported) */
	SQK_WALK_ERR_DEPTH = 5, /* the directory at path (depth max_depth or more) holds entries
				 * deeper than the bound (SQK_ETOOBIG): it is not entered */
	SQK_WALK_ERR_FATAL = 6, /* out of memory: the walk is over (e.path may be NULL) */
};

/* Entry flags (sqk_walk_entry.flags). */
#define SQK_WALK_SEEN 0x1u /* SQK_WALK_ONCE: its inode number was reported before */
#define SQK_WALK_LOOP 0x2u /* a directory that is also one above it (a crafted image's loop):
			    * never entered */

/* One step of a walk, filled by sqk_walk_next. Everything it points to is borrowed from the walk
 * until the next sqk_walk_next or sqk_walk_close. */
struct sqk_walk_entry {
	int event;                    /* enum sqk_walk_event */
	unsigned flags;               /* SQK_WALK_SEEN, SQK_WALK_LOOP */
	const char *path;             /* relative to the start, '/'-separated, NUL-terminated; ""
				       * for the start */
	size_t path_len;
	const char *name;             /* its last component (the end of path); "" for the start */
	size_t name_len;
	unsigned depth;               /* components of path: 0 for the start */
	uint64_t index;               /* its place in its directory's listing, from 0 */
	struct sqk_dirent dirent;     /* as its directory lists it (the start: from its inode) */
	struct sqk_inode inode;       /* decoded (not for SQK_WALK_ERR_INODE) */
	const struct sqk_inode *parent; /* the directory listing it; NULL for the start */
	uint64_t pos;                 /* SQK_WALK_ERR_LIST: image position of the failed block */
};

/* Starts a walk of the tree at start (borrowed for the call: copied; NULL = the root), which is
 * reported first. flags: SQK_WALK_*. max_depth bounds the depth of the entries reported
 * (SQK_WALK_MAX_DEPTH at most; 0 = the start only): a directory at that depth or deeper that has
 * entries gives SQK_WALK_ERR_DEPTH instead. Nothing is logged by the walk (the directory
 * iterator logs a bad listing, as sqk_dir_next does); the caller names paths in its messages.
 * Borrows img (which must outlive the walk); the caller owns *out (NULL on failure), freed with
 * sqk_walk_close. Returns 0, SQK_ENOMEM, or the error of reading the root. */
SQK_API int sqk_walk_open(struct sqk_image *img, const struct sqk_inode *start, unsigned flags,
			  unsigned max_depth, struct sqk_walk **out);

/* sqk_walk_open from the entry at path (as sqk_lookup_path resolves it; borrowed). */
SQK_API int sqk_walk_open_path(struct sqk_image *img, const char *path, unsigned flags,
			       unsigned max_depth, struct sqk_walk **out);

/* Next step into the caller's *e: 1 (an entry or, with SQK_WALK_LEAVE, a directory left), 0 at
 * the end, or SQK_E* with e->event saying what failed and e->path where. After an error the walk
 * goes on at the next call (the failed part left out), except after SQK_WALK_ERR_FATAL. */
SQK_API int sqk_walk_next(struct sqk_walk *w, struct sqk_walk_entry *e);

/* After sqk_walk_next reported a directory (SQK_WALK_PRE): do not enter it (with
 * SQK_WALK_LEAVE, its SQK_WALK_POST comes next). No effect otherwise. */
SQK_API void sqk_walk_skip(struct sqk_walk *w);

/* Frees w; NULL-safe. */
SQK_API void sqk_walk_close(struct sqk_walk *w);

/* Copies a symlink's target into buf (cap bytes, NUL-terminated if it fits); *len = length. */
SQK_API int sqk_readlink(struct sqk_image *img, const struct sqk_inode *link, char *buf, size_t cap,
		 size_t *len);

/* Reads up to len bytes of a regular file at off. Returns the bytes read (fewer only at end of
 * file; 0 at or past it) or SQK_E*. Sparse blocks read as zeros without I/O. */
SQK_API ssize_t sqk_read(struct sqk_image *img, const struct sqk_inode *file, void *buf, size_t len,
		 uint64_t off);

/* sqk_read_ex flags. SQK_READ_ASIDE: a read outside the file's sequential stream (e.g. a cache
 * fill next to a random read): it starts no readahead and leaves the position at which later
 * reads count as sequential unchanged. */
#define SQK_READ_ASIDE 1u

/* True when a read of file at off continues its sequential stream (a read in the first block, or
 * where the previous read ended): such reads start readahead. */
SQK_API bool sqk_read_sequential(struct sqk_image *img, const struct sqk_inode *file, uint64_t off);

/* sqk_read with flags (SQK_READ_*). */
SQK_API ssize_t sqk_read_ex(struct sqk_image *img, const struct sqk_inode *file, void *buf,
			    size_t len, uint64_t off, unsigned flags);

/* sqk_read_ex that also sets *sequential (when not NULL) to whether the read continued the
 * file's sequential stream, as sqk_read_sequential would have said just before it: one lookup of
 * the file's block index, no window between the question and the read. */
SQK_API ssize_t sqk_read_stream(struct sqk_image *img, const struct sqk_inode *file, void *buf,
				size_t len, uint64_t off, unsigned flags, bool *sequential);

/* Lists the xattr names of an inode, each NUL-terminated with its prefix ("user.x\0...").
 * With cap 0, only sets *len to the size needed; SQK_ETOOBIG if cap is too small. */
SQK_API int sqk_xattr_list(struct sqk_image *img, const struct sqk_inode *ino, char *buf,
			   size_t cap, size_t *len);

/* Gets one xattr value (name with prefix). SQK_ENOENT if absent; cap 0 = size only;
 * SQK_ETOOBIG if cap is too small. */
SQK_API int sqk_xattr_get(struct sqk_image *img, const struct sqk_inode *ino, const char *name,
		  void *buf, size_t cap, size_t *len);

/* True when reads of img are verified (not opts.no_verify, and integrity data was loaded; or
 * a remote image whose backend checks every chunk). */
SQK_API bool sqk_image_verified(const struct sqk_image *img);

/* A chunk of the image that failed its integrity check in a verified read. */
struct sqk_mismatch {
	uint64_t start, end;  /* its image bytes [start, end), superblock-relative */
	uint64_t chunk;       /* its index in the integrity data */
	uint32_t ino;         /* the inode whose read hit it (0 = metadata, or not known) */
};

/* Fills the caller's *out with the latest mismatch hit by a failed read for inode ino, or by a
 * read of metadata (its ino 0), and forgets it, so that each is reported once; ino 0 takes the
 * latest of any. SQK_ENOENT when there is none. A read failing with SQK_ECORRUPT on a verified
 * image left one here when its bytes did not match their digest (the latest 16 are kept). */
SQK_API int sqk_image_mismatch(struct sqk_image *img, uint32_t ino, struct sqk_mismatch *out);

/* Fills the caller's *out with the image's authenticated integrity trailer (root digest, chunk
 * size). SQK_ENOENT when the image has none (or does not start at offset 0 of its file),
 * SQK_ECORRUPT when it does not match its root digest. */
SQK_API int sqk_image_integrity(struct sqk_image *img, struct sqk_integ_trailer *out);

/* One Ed25519 signature of an image (sqk sign, sqk mkimage --sign). Plain data; changes only
 * with the SONAME. */
struct sqk_signature {
	char key_id[17];            /* 16 hex digits: the first 8 bytes of SHA-256(public_key) */
	uint8_t public_key[32];
	uint64_t time;              /* when it was signed (seconds since the epoch), signed */
	char comment[1025];         /* the signed comment (UTF-8), "" for none */
	bool valid;                 /* it verifies over this image's root digest and size */
	bool trusted;               /* its key is one the open trusted (opts.trust, trust_dir) */
};

/* Fills out[0 .. min(*n, max)) with the image's signatures and *n with their count (0 for an
 * image without a signature block), each checked against the image's authenticated integrity
 * trailer. SQK_ECORRUPT when the signature block is damaged, SQK_ENOENT when the image has no
 * integrity data to sign (or does not start at offset 0). Borrows img; out is the caller's. */
SQK_API int sqk_image_signatures(struct sqk_image *img, struct sqk_signature *out, size_t max,
				 size_t *n);

/* How many groups of chunk digests of the image's digest tree do not match their group digest,
 * in the caller's *count (borrows img): 0 for a flat layout. Verified reads check every group
 * at open (each bad one is logged; reads of the image bytes it covers fail with SQK_ECORRUPT,
 * the rest of the image reads); with opts.no_verify they are checked by this call. SQK_ENOENT
 * (*count 0) without integrity data, or for a remote image: its groups are fetched and checked
 * only when a read needs them (sqk_image_http_stats counts the failed checks). SQK_ECORRUPT
 * when the trailer itself is not valid (as sqk_image_integrity), SQK_EIO. */
SQK_API int sqk_image_damaged_groups(struct sqk_image *img, uint64_t *count);

/* Whether the image carries fast checksums (an XXH3-64 per chunk, common/integrity.h): 0 and
 * the number of chunks they cover in *nchunks when a valid block is there; *used when verified
 * reads of img check those chunks with them (not with a pinned root digest, nor --no-verify).
 * SQK_ENOENT without a block (or without integrity data), SQK_EUNSUPPORTED for a block of
 * another version or algorithm, SQK_ECORRUPT for one that does not decode. */
SQK_API int sqk_image_fast_checksums(struct sqk_image *img, uint64_t *nchunks, bool *used);

/* Copies the counters into the caller's *out (out->size set): 0 or SQK_EABI. */
SQK_API int sqk_image_stats(struct sqk_image *img, struct sqk_stats *out);

/* The stored form of data, for copying compressed blocks verbatim (sqk mkimage --reuse).
 * sqk_file_blocks: the size words of file's blocks (without a tail kept in a fragment) into
 * words[0..cap) (caller's), their number in *count (SQK_ETOOBIG when cap is too small; *count
 * still set). The first block is at file->blocks_start, each next one after the previous one's
 * stored bytes (word & SQK_BLOCK_SIZE_MASK; 0 = sparse, nothing stored). */
SQK_API int sqk_file_blocks(struct sqk_image *img, const struct sqk_inode *file, uint32_t *words,
			    uint32_t cap, uint32_t *count);
/* Fragment table entry idx: block position and size word (SQK_EBOUNDS past the table). */
SQK_API int sqk_fragment_entry(struct sqk_image *img, uint32_t idx, uint64_t *start,
			       uint32_t *word);
/* Reads len stored bytes at image position pos into buf (caller's): bounds-checked, verified
 * when reads of img are verified. */
SQK_API int sqk_image_read_raw(struct sqk_image *img, uint64_t pos, void *buf, size_t len);

/* Walks every inode reachable from the root once, and the metadata block headers of the inode
 * and directory tables, filling the caller's *out (out->size set; borrows img). A failure is
 * logged naming the path or the offset; *out is then partial. SQK_EABI for a size it does not
 * accept (nothing walked). */
SQK_API int sqk_image_info(struct sqk_image *img, struct sqk_image_info *out);

/* The prefetch hint (common/hint.h; sqk mkimage --order or -sort): the byte ranges a start
 * reads, for fetching them ahead. Writes up to max ranges into out (caller's array; at most
 * SQK_HINT_MAX_RANGES exist) and their count in *n (SQK_ETOOBIG with *n set when more than max).
 * SQK_ENOENT when the image has none (or no integrity data); SQK_ECORRUPT for a block that does
 * not decode. Two small reads, verified when reads of img are; thread-safe. */
SQK_API int sqk_image_hint(struct sqk_image *img, struct sqk_hint_range *out, size_t max,
			   size_t *n);

#ifdef __cplusplus
}
#endif

#endif
