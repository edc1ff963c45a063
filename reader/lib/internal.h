/* SPDX-License-Identifier: BSD-2-Clause */
/* libsqk internals shared by the reader's modules: the image handle, the shared block cache
 * (cache.c), block loading and the compressor pool (block.c), metadata streams (metaread.c),
 * per-file block indexes (findex.c) and readahead workers (readahead.c). */
#ifndef SQK_READER_INTERNAL_H
#define SQK_READER_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/compressor.h"
#include "common/format.h"
#include "common/hint.h"
#include "common/integrity.h"
#include "common/sign.h"
#include "sqk/sqk.h"

enum img_block_kind { SQK_BK_META, SQK_BK_DATA, SQK_BK_FRAG };

/* One cached decompressed block. refs > 0 pins it; state 1 = loading, 0 = ready, < 0 = failed. */
struct cblock {
	uint64_t pos;
	int kind;
	int state;
	unsigned refs;
	unsigned waiters; /* threads waiting for it to load */
	bool hashed;
	size_t len;      /* decompressed length */
	size_t stored;   /* encoded length (metadata: header + payload) */
	size_t cost;     /* bytes charged to the cache */
	uint8_t *data;
	struct cblock *hnext;
	struct cblock *prev, *next; /* LRU list (ready entries only) */
};

enum { SQK_CACHE_CLAIMED = 0, SQK_CACHE_HIT = 1, SQK_CACHE_PRESENT = 2 };

struct cache;

int cache_create(size_t limit, struct cache **out);
void cache_destroy(struct cache *c);
int cache_get(struct cache *c, uint64_t pos, int kind, bool wait, struct cblock **out);
void cache_fill(struct cache *c, struct cblock *b, uint8_t *data, size_t len,
		    size_t stored, int err);
void cache_put(struct cache *c, struct cblock *b);
void cache_set_block_size(struct cache *c, size_t block_size);
uint8_t *cache_buf(struct cache *c);

struct counters {
	atomic_uint_fast64_t data, frag, meta, hits, misses, bytes, batches, hashed;
	atomic_uint_fast64_t xxh3, sha256; /* of hashed: chunks checked by each */
};

struct comp_pool {
	pthread_mutex_t mu;
	struct compressor **free;
	size_t nfree, cap;
};

struct findex_cache;
struct workers;

/* Read buffers of readahead batches, kept for reuse: fresh memory would be page-faulted in by
 * every batch's read. */
#define SQK_RABUF_KEEP 8
struct rabufs {
	pthread_mutex_t mu;
	unsigned n;
	uint8_t *buf[SQK_RABUF_KEEP];
	size_t cap[SQK_RABUF_KEEP];
};

/* stream.c: whether the files being read are a walk through the image in its own order (as
 * tar of the tree reads them): consecutive files with data blocks, each read whole from its
 * start, each starting where the one before ended (give or take fragment blocks). */
struct seqwalk {
	pthread_mutex_t mu;
	uint64_t start;         /* where the data blocks of the run's first file start */
	uint64_t end;           /* end of the data blocks of the last file of the run */
	unsigned run;           /* files of the run so far */
	atomic_bool on;         /* run long enough: data reads may be fetched ahead across files */
};

#define SQK_BAD_KEPT 16 /* mismatches kept for sqk_image_mismatch */

struct sqk_image {
	struct sqk_io *io;
	struct sqk_io *owned_io;
	uint64_t base;          /* added to every position (io opens) */
	uint64_t file_size;     /* bytes available from the superblock on */
	struct sqk_super sb;
	struct sqk_comp_config comp;
	char *name;
	void (*log)(void *log_ctx, const char *msg);
	void *log_ctx;
	uint32_t *ids;
	struct frag_entry *frags;
	uint64_t inode_end;     /* end of the inode table (= directory_table_start) */
	uint64_t dir_end;       /* end of the directory table */
	uint64_t *xattr_index;  /* positions of the xattr id blocks */
	uint32_t xattr_count;
	uint64_t xattr_kv_start, xattr_kv_end, xattr_ids_end;
	unsigned readahead;
	unsigned nthreads;
	struct cache *cache;
	struct comp_pool pool;
	struct findex_cache *findex;
	struct workers *workers; /* started on first readahead (guarded by workers_mu) */
	struct rabufs rabufs;
	pthread_mutex_t workers_mu;
	bool workers_tried;
	struct counters st;
	bool at_zero;           /* the image starts at offset 0 of its file */
	bool verify_req;        /* !opts.no_verify */
	bool require_integ;     /* opts.require_integrity, or trusted keys given */
	/* at_zero: what follows the integrity data (integ_locate); file_size is its end */
	struct integ_where where;
	uint64_t raw_size;      /* the file's size: file_size and what follows it */
	/* trusted keys given and a valid signature by one of them found (trust.c) */
	bool trusted;
	uint64_t trusted_time;  /* the newest such signature's time, and its key */
	uint8_t trusted_pub[32];
	struct sig_trust trust_set; /* the keys trusted at open (owned) */
	/* opts.quiet_mismatch, set once the open is over (workers read it) */
	atomic_bool quiet_mismatch;
	bool integ_on;          /* integrity data loaded: every read is verified */
	/* integ_on: digest groups that failed their group digest at open */
	uint64_t groups_damaged;
	bool remote_verified;   /* a remote image whose backend checks every chunk it fetches */
	bool lazy_first;        /* no readahead on a file's first one-block read (remote images) */
	struct integ integ;
	struct integ_fast fast;  /* fast_on: XXH3-64 checks for chunks [0, fast.n) */
	bool fast_on;
	atomic_uint_fast64_t *vbits; /* chunks verified so far, one bit each */
	atomic_uint_fast64_t *vclaim; /* chunks being (or verified as) hashed by some thread */
	atomic_uint_fast64_t *vbad;   /* chunks found bad (logged once; checked again if read) */
	pthread_mutex_t vmu;          /* with vcv: waiting for a chunk another thread hashes */
	pthread_cond_t vcv;
	pthread_mutex_t bad_mu;       /* guards the recent mismatches */
	struct sqk_mismatch bad[SQK_BAD_KEPT]; /* failed reads' chunks, oldest first */
	unsigned nbad;
	struct seqwalk walk;
	struct sqk_hint_range *hint; /* remote: the prefetch hint's ranges, set at open */
	size_t nhint;
	atomic_bool hint_fetched;    /* sqk_image_prefetch asked for the hint's ranges */
	uint64_t prefetch_clip;      /* the most of one range the io's prefetch takes */
	_Atomic(struct fetched *) fetched; /* sqk_prefetch_start's ranges, newest first */
};

/* The merged ranges of one sqk_prefetch_start (image positions, ascending), immutable once
 * published; kept until the image closes. */
struct fetched {
	struct fetched *older;
	size_t n;
	struct sqk_hint_range r[];
};

void fetched_free(struct sqk_image *img);
bool fetched_has(const struct sqk_image *img, uint64_t pos);
const struct sqk_hint_range *hint_find(const struct sqk_image *img, uint64_t pos);

/* Metadata stream cursor: absolute block position, offset inside it, end of the table. */
struct mcur {
	uint64_t pos;
	uint32_t off;
	uint64_t end;
};

void img_logf(struct sqk_image *img, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int img_read(struct sqk_image *img, uint64_t pos, void *buf, size_t len);
int img_read_ino(struct sqk_image *img, uint64_t pos, void *buf, size_t len, uint32_t ino);

/* verified_reads.c: integrity data and verified reads. */
int verify_init(struct sqk_image *img);
int verify_no_trailer(struct sqk_image *img);
int verify_require(struct sqk_image *img);
int verify_locate(struct sqk_image *img);
/* trust.c: signatures by trusted keys (opts.trust, opts.trust_dir). */
int trust_check(struct sqk_image *img, const struct sqk_open_opts *o);
int verify_covers(struct sqk_image *img);
int verify_pin(struct sqk_image *img, const uint8_t *root_hash);
int verify_range(struct sqk_image *img, uint64_t pos, const void *buf, size_t len,
		     uint32_t ino);
int verify_span(struct sqk_image *img, uint64_t pos, size_t len, uint64_t bpos,
		    const void *buf, size_t blen, uint32_t ino);
void verify_free(struct sqk_image *img);
int verify_fast(struct sqk_image *img, bool pinned);
int img_read_raw(struct sqk_image *img, uint64_t pos, void *buf, size_t len);
int img_read_raw_ahead(struct sqk_image *img, uint64_t pos, void *buf, size_t len,
			   const struct sqk_io_ahead *ahead);

int pool_get(struct sqk_image *img, struct compressor **out);
void pool_put(struct sqk_image *img, struct compressor *c);
void pool_free(struct comp_pool *p);

int check_word(struct sqk_image *img, uint64_t pos, uint32_t word, uint32_t ino);
int decode_data(struct sqk_image *img, const uint8_t *src, uint32_t word, int kind,
		    size_t expected, uint64_t pos, uint32_t ino, struct cblock *b);
int data_block(struct sqk_image *img, uint64_t pos, uint32_t word, int kind, size_t expected,
		   uint32_t ino, struct cblock **out);
int check_len(struct sqk_image *img, struct cblock *b, int kind, size_t expected,
		  uint32_t ino);

int meta_block(struct sqk_image *img, uint64_t pos, uint64_t end, struct cblock **out);
int meta_read(struct sqk_image *img, struct mcur *c, void *buf, size_t len);
void inode_cursor(const struct sqk_image *img, uint64_t ref, struct mcur *c);
int load_tables(struct sqk_image *img);

/* A regular file's block list with positions checkpointed every SQK_FI_STEP blocks. */
#define SQK_FI_STEP 64u
struct findex {
	uint64_t ref;
	uint32_t ino;
	uint64_t size;
	uint64_t blocks_start;
	uint32_t nblocks;
	uint32_t *words;
	uint64_t *ckpt;
	uint32_t frag_index, frag_offset;
	atomic_uint_fast64_t next_off; /* where a sequential reader would continue */
	uint64_t data_end;      /* end of its data blocks (= blocks_start without any) */
	atomic_bool started;    /* its read at offset 0 happened (stream.c) */
	atomic_bool in_walk;    /* that read continued the walk */
	atomic_bool aside;      /* its blocks lie before the walk's position: no part of it */
	atomic_bool broken;     /* a read skipped ahead: the file is not read whole */
	atomic_bool whole;      /* read whole (counted once) */
	atomic_uint random_reads; /* reads out of sequence (the 2nd fetches it whole, remote) */
	atomic_uint_fast64_t hi; /* the furthest end of a read so far */
	unsigned refs;
	bool detached;
	uint64_t stamp;
};

int findex_cache_create(struct findex_cache **out);
void findex_cache_destroy(struct findex_cache *fc);
int findex_get(struct sqk_image *img, const struct sqk_inode *in, struct findex **out);
void findex_put(struct sqk_image *img, struct findex *fi);
uint64_t findex_pos(const struct findex *fi, uint32_t k);
size_t findex_expected(const struct sqk_image *img, const struct findex *fi, uint32_t k);

int workers_start(struct sqk_image *img, unsigned n);
void workers_stop(struct sqk_image *img);
void rabufs_free(struct rabufs *r);
uint8_t *rabufs_get(struct rabufs *r, size_t len, size_t *cap);
void rabufs_put(struct rabufs *r, uint8_t *buf, size_t cap);
int img_readahead(struct sqk_image *img, struct findex *fi, uint32_t k,
		  struct cblock **out);
void img_prefetch(struct sqk_image *img, struct findex *fi, uint32_t k);
bool ra_steal(struct sqk_image *img, uint64_t pos);

/* dir.c: a directory listing being read (struct sqk_dir_iter is opaque to the API's users:
 * sqk_dir_open allocates one; libsqk's own walks embed it). Borrows img. */
struct sqk_dir_iter {
	struct sqk_image *img;
	uint64_t pos;         /* absolute position of the current metadata block */
	uint32_t off;         /* offset inside it */
	uint32_t remaining;   /* listing bytes left */
	uint32_t run_left;    /* entries left in the current run */
	uint32_t run_block;
	uint32_t run_ino;
	uint64_t index;       /* entries returned so far */
	char name[SQK_NAME_MAX + 1];
};

/* dir.c: sets up *it (the caller's storage, no cleanup) to list dir; SQK_EINVAL for a
 * non-directory. sqk_dir_next reads it. */
int dir_start(struct sqk_image *img, const struct sqk_inode *dir, struct sqk_dir_iter *it);

/* stream.c: per-file streams and walks through the image, for fetching ahead. */
void seqwalk_init(struct seqwalk *w);
void seqwalk_free(struct seqwalk *w);
void stream_begin(struct sqk_image *img, struct findex *fi, uint64_t off, bool seq);
void stream_end(struct sqk_image *img, struct findex *fi, uint64_t end);
const struct sqk_io_ahead *stream_ahead(struct sqk_image *img, struct findex *fi,
					    uint64_t pos, struct sqk_io_ahead *tmp);

#endif
