/* SPDX-License-Identifier: BSD-2-Clause */
/* The metadata-block codec: a byte stream cut into 8 KiB blocks, each stored with a u16 header,
 * compressed unless compression does not make it smaller. */
#ifndef SQK_META_H
#define SQK_META_H

#include <stddef.h>
#include <stdint.h>

#include "compressor.h"

#define SQK_META_SIZE 8192u
#define SQK_META_RAW 0x8000u

/* Accumulates a metadata stream in memory as encoded blocks (header + payload). */
struct meta_writer {
	struct compressor *comp; /* borrowed; NULL = store every block raw */
	uint8_t pending[SQK_META_SIZE];
	size_t pending_len;
	uint8_t *out;    /* encoded blocks so far (owned) */
	size_t out_len;
	size_t out_cap;
	uint32_t nblocks;
	uint64_t drained; /* encoded bytes handed out by meta_writer_drain before out */
	int error;       /* sticky first error */
};

/* Initialises w; comp is borrowed. */
void meta_writer_init(struct meta_writer *w, struct compressor *comp);

/* Frees w's buffers. */
void meta_writer_free(struct meta_writer *w);

/* Reference of the next byte to be appended: (encoded bytes so far << 16) | pending length. */
static inline uint64_t meta_writer_ref(const struct meta_writer *w)
{
	return ((w->drained + w->out_len) << 16) | w->pending_len;
}

/* Forgets the encoded blocks in out[0..out_len), which the caller has written out; the stream
 * goes on after them (references count them). Keeps the buffer. */
static inline void meta_writer_drain(struct meta_writer *w)
{
	w->drained += w->out_len;
	w->out_len = 0;
}

/* Appends bytes, flushing every full 8192-byte block. Returns 0 or SQK_E* (sticky). */
int meta_writer_append(struct meta_writer *w, const void *data, size_t len);

/* Flushes a partial last block (if any). Returns 0 or SQK_E*. */
int meta_writer_finish(struct meta_writer *w);

/* Encodes one block of len (1..8192) bytes into out (at least 2 + len bytes): compressed unless
 * that is not smaller. Returns the encoded length (2 + payload) or SQK_E*. */
ssize_t meta_encode_block(struct compressor *comp, const void *in, size_t len,
			      uint8_t *out);

/* Decodes the block whose header is at buf[0], with avail bytes available from buf. Writes up to
 * 8192 bytes to out and sets *used to the encoded length. expected: exact decompressed length
 * required (0 = any 1..8192). Returns the decompressed length or SQK_E*. */
ssize_t meta_decode_block(struct compressor *comp, const uint8_t *buf, size_t avail,
			      uint8_t *out, size_t expected, size_t *used);

#endif
