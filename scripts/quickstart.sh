#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Quick start on a fresh Debian 12 (as root): installs what is missing, builds squashkit, then
# packs a default directory into an image and prints the builder's summary.
# Usage: sh scripts/quickstart.sh [SOURCE_DIR] [IMAGE]
set -e
cd "$(dirname "$0")/.."
SRC=${1:-/usr/share/doc}
IMG=${2:-/tmp/squashkit-demo.sqsh}
sh scripts/install-deps.sh
make -j"$(nproc)"
echo "quickstart: packing $SRC into $IMG"
build/bin/sqk mkimage "$SRC" "$IMG"
if command -v unsquashfs >/dev/null 2>&1; then
	n=$(unsquashfs -l "$IMG" | grep -c '^squashfs-root')
	echo "quickstart: unsquashfs lists $n entries in $IMG"
fi
