/* SPDX-License-Identifier: BSD-2-Clause */
/* Error codes shared by every part of squashkit: 0 or a negative SQK_E* value. */
#ifndef SQK_ERROR_H
#define SQK_ERROR_H

#include "api.h"

#include <stdbool.h>

#ifdef __cplusplus
extern "C" {
#endif

enum sqk_error {
	SQK_OK = 0,
	SQK_EIO = -1,          /* read/write failed; errno has the detail */
	SQK_ENOMEM = -2,       /* allocation failed */
	SQK_ECORRUPT = -3,     /* image data is inconsistent */
	SQK_EBOUNDS = -4,      /* offset or size outside the image */
	SQK_EOVERFLOW = -5,    /* arithmetic would overflow */
	SQK_EUNSUPPORTED = -6, /* feature or compressor not supported */
	SQK_EINVAL = -7,       /* bad argument */
	SQK_ECOMPRESS = -8,    /* compressor failed */
	SQK_EDECOMPRESS = -9,  /* decompressor failed or produced the wrong size */
	SQK_ENOSPC = -10,      /* no space left on the destination */
	SQK_ECHANGED = -11,    /* a source file changed while it was read */
	SQK_EINTR = -12,       /* interrupted by a signal */
	SQK_ENOENT = -13,      /* no such file or entry */
	SQK_ETOOBIG = -14,     /* a count or size exceeds a format limit */
	SQK_EACCESS = -15,     /* permission denied */
	/* Why a file is not an image libsqk reads; the open logs a line naming it and the detail
	 * (the version found, the sizes), and the commands print that line alone. */
	SQK_EEMPTY = -16,      /* the file (or what follows the offset) is empty */
	SQK_ENOTSQFS = -17,    /* no SquashFS magic at the start */
	SQK_EVERSION = -18,    /* SquashFS, but not version 4.0 (1.x, 2.x, 3.x, big-endian) */
	SQK_ETRUNCATED = -19,  /* the file is shorter than the superblock's bytes_used */
	SQK_EISDIR = -20,      /* a directory given as the image */
	SQK_ESCHEME = -21,     /* a URL of a scheme other than http, https and s3 */
	/* A versioned struct whose size field this library does not accept (too small for its
	 * first version, or larger with non-zero bytes it does not know): see common/abi.h. */
	SQK_EABI = -22,
	/* A remote image (http, https, s3) given to a libsqk built without the remote backend
	 * (HAVE_REMOTE=0, no libcurl); sqk_image_open* logs a line naming the URL. */
	SQK_ENOREMOTE = -23,
	/* An optional feature (a compressor, tar) this build was made without. */
	SQK_ENOTBUILT = -24,
	/* The open asked for integrity data (require_integrity, a pinned root hash, trusted keys)
	 * and the image has none. */
	SQK_ENOINTEG = -25,
	/* Trusted keys were given and the image has no valid signature by any of them. */
	SQK_EUNTRUSTED = -26,
	/* A signed image older than one already accepted from the same place (rollback). */
	SQK_EROLLBACK = -27,
};

/* Returns a static, human-readable message for an SQK_E* code (never NULL). */
SQK_API const char *sqk_strerror(int err);

/* True for the codes that say the input is not a readable SquashFS 4.0 image at all (SQK_EEMPTY
 * to SQK_ESCHEME, and SQK_ENOREMOTE: none this build reads): sqk_image_open* logs one line with
 * the detail for each before returning it. */
SQK_API bool sqk_err_not_image(int err);

/* Maps an errno value to the closest SQK_E* code. */
SQK_API int sqk_from_errno(int errnum);

/* Maps an SQK_E* code to a positive errno value (for FUSE replies). */
SQK_API int sqk_to_errno(int err);

#ifdef __cplusplus
}
#endif

#endif
