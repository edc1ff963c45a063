/* SPDX-License-Identifier: BSD-2-Clause */
/* sqk keygen and sqk sign: Ed25519 keys and image signatures (common/sign.h). cli/sign.c is the
 * command, cli/sign_image.c what it reads of the image (where it ends, its integrity checked)
 * and how the signed copy is written. */
#ifndef SQK_CLI_SIGN_H
#define SQK_CLI_SIGN_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/integrity.h"
#include "common/sign.h"

/* Runs `sqk keygen [--force] KEY` (argv[0] is "keygen"). Returns the exit status: 0 made, 1 error
 * (nothing written), 2 usage. */
int keygen_main(int argc, char **argv);

/* Runs `sqk sign` (argv[0] is "sign"). Returns the exit status: 0 signed, 1 error (the image
 * unchanged), 2 usage or a bad key. */
int sign_main(int argc, char **argv);

/* What sqk sign found at the end of an image file. */
struct sign_image {
	const char *name;      /* the image in messages (borrowed) */
	int fd;                /* open for reading (borrowed) */
	uint64_t size;         /* F: the file's size */
	uint64_t image_end;    /* E: where the image and its integrity data end */
	uint64_t start;        /* S: where the signature block starts (F without one) */
	struct sig_block blk;  /* the signatures there (owned; empty without a block) */
	uint8_t root[SQK_INTEG_DIGEST_SIZE]; /* the root digest of the trailer that ends at E */
	uint32_t chunk_size;
	uint64_t nchunks;
};

/* Finds E and S in the file behind im->fd (im->size bytes) and the signatures already there:
 * from the signature block's footer, or the integrity trailer ending the file; reads the root
 * digest. 0, or -1 after putting why (whylen bytes) naming im->name: no integrity data, damaged
 * integrity data or signature block, an end of file this sqk does not know. */
int sign_image_locate(struct sign_image *im, char *why, size_t whylen);

/* Checks every chunk of [0, E) against its SHA-256 digest (the whole integrity data loaded and
 * checked against the root first). cancel (may be NULL) non-zero stops it. 0, or -1 with why
 * naming the image and what did not match. */
int sign_image_check(struct sign_image *im, atomic_int *cancel, char *why, size_t whylen);

/* Writes the signed copy of the image to out_fd (a new, empty file): [0, S) copied in the kernel
 * where the file system can (copy_file_range), read and written where not, then blk (encoded,
 * NULL: none) at S; synced. 0, or -1 with why. */
int sign_image_write(struct sign_image *im, int out_fd, const uint8_t *blk, size_t len,
		     atomic_int *cancel, char *why, size_t whylen);

#endif
