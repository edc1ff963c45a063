#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# Rich tree (devices, xattrs, hard links, 5 GiB sparse file, ...) built with the default
# compressor (zstd): kernel loop mount, unsquashfs and squashfuse_ll must all reproduce it.
. "$(dirname "$0")/lib.sh"
kernel_roundtrip zstd
