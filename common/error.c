/* SPDX-License-Identifier: BSD-2-Clause */
/* Error code messages and errno mappings. */
#include "sqk/error.h"

#include <errno.h>

const char *sqk_strerror(int err)
{
	switch (err) {
	case SQK_OK: return "success";
	case SQK_EIO: return "input/output error";
	case SQK_ENOMEM: return "out of memory";
	case SQK_ECORRUPT: return "corrupt image data";
	case SQK_EBOUNDS: return "offset or size out of bounds";
	case SQK_EOVERFLOW: return "numeric overflow";
	case SQK_EUNSUPPORTED: return "unsupported feature";
	case SQK_EINVAL: return "invalid argument";
	case SQK_ECOMPRESS: return "compression failed";
	case SQK_EDECOMPRESS: return "decompression failed or gave the wrong size";
	case SQK_ENOSPC: return "no space left on device";
	case SQK_ECHANGED: return "file changed while being read";
	case SQK_EINTR: return "interrupted";
	case SQK_ENOENT: return "no such file or directory";
	case SQK_ETOOBIG: return "exceeds a format limit";
	case SQK_EACCESS: return "permission denied";
	case SQK_EEMPTY: return "empty file: not a SquashFS image";
	case SQK_ENOTSQFS: return "not a SquashFS image";
	case SQK_EVERSION: return "unsupported SquashFS version: only 4.0 is supported";
	case SQK_ETRUNCATED: return "truncated image: the file is shorter than the superblock says";
	case SQK_EISDIR: return "is a directory";
	case SQK_ESCHEME: return "unsupported URL scheme; http, https and s3 are";
	case SQK_EABI: return "struct size not supported by this libsqk (see sqk_version())";
	case SQK_ENOREMOTE:
		return "remote images are not supported by this build (built with HAVE_REMOTE=0; "
		       "needs libcurl)";
	case SQK_ENOTBUILT: return "not supported by this build (an optional feature was left out)";
	case SQK_ENOINTEG: return "the image has no integrity data, and it was required";
	case SQK_EUNTRUSTED: return "the image has no valid signature by a trusted key";
	case SQK_EROLLBACK: return "the image is older than one already accepted (rollback)";
	default: return "unknown error";
	}
}

bool sqk_err_not_image(int err)
{
	return (err <= SQK_EEMPTY && err >= SQK_ESCHEME) || err == SQK_ENOREMOTE;
}

int sqk_from_errno(int errnum)
{
	switch (errnum) {
	case 0: return SQK_OK;
	case ENOMEM: return SQK_ENOMEM;
	case ENOSPC: case EDQUOT: case EFBIG: return SQK_ENOSPC;
	case EINTR: return SQK_EINTR;
	case ENOENT: case ENOTDIR: return SQK_ENOENT;
	case EACCES: case EPERM: return SQK_EACCESS;
	case EINVAL: return SQK_EINVAL;
	case EOVERFLOW: return SQK_EOVERFLOW;
	case EISDIR: return SQK_EISDIR;
	default: return SQK_EIO;
	}
}

int sqk_to_errno(int err)
{
	switch (err) {
	case SQK_OK: return 0;
	case SQK_ENOMEM: return ENOMEM;
	case SQK_EINVAL: return EINVAL;
	case SQK_ENOENT: return ENOENT;
	case SQK_EACCESS: return EACCES;
	case SQK_ENOSPC: return ENOSPC;
	case SQK_EINTR: return EINTR;
	case SQK_EOVERFLOW: return EOVERFLOW;
	case SQK_EUNSUPPORTED: case SQK_ENOTBUILT: return EOPNOTSUPP;
	case SQK_ETOOBIG: return EFBIG;
	case SQK_EISDIR: return EISDIR;
	case SQK_ENOINTEG: case SQK_EUNTRUSTED: case SQK_EROLLBACK: return EACCES;
	case SQK_ESCHEME: return EPROTONOSUPPORT;
	case SQK_EABI: return EINVAL;
	case SQK_ENOREMOTE: return EPROTONOSUPPORT;
	default: return EIO;
	}
}
