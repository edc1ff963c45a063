#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Quick start on a fresh Debian 12: installs the build dependencies (as root; otherwise says
# which are missing), builds squashkit, packs a default directory into an image and checks it.
# Under sudo the build runs as the user who called sudo, so that the tree stays theirs.
# Usage: sh scripts/quickstart.sh [SOURCE_DIR] [IMAGE]
set -e
cd "$(dirname "$0")/.."
SRC=${1:-/usr/share/doc}
IMG=${2:-/tmp/squashkit-demo.sqsh}
sh scripts/install-deps.sh build
as_user() {
	if [ "$(id -u)" = 0 ] && [ -n "${SUDO_USER:-}" ] && [ "$SUDO_USER" != root ]; then
		runuser -u "$SUDO_USER" -- "$@"
	else
		"$@"
	fi
}
as_user make -j"$(nproc)"
echo "quickstart: packing $SRC into $IMG"
as_user build/bin/sqk mkimage -noappend "$SRC" "$IMG"   # a rerun replaces the demo image
n=$(build/bin/sqk ls -R "$IMG" | wc -l)
echo "quickstart: sqk ls lists $n entries in $IMG; sqk verify says:"
build/bin/sqk verify "$IMG"
