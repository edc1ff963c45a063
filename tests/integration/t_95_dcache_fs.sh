#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# The remote images' disk cache on the filesystems a cache folder lives on: the Check suite's
# "disk cache" case (tests/unit/test_http.c: the bound over every image's folder, processes
# sharing one folder, damaged and odd files) run with its scratch folders ($TMPDIR) on XFS,
# btrfs, ext4 and tmpfs, each loop-mounted for it. The cache counts the blocks its files take,
# and the filesystems allocate them differently (XFS keeps blocks past the end of a file that a
# write extended, for minutes after its close).
. "$(dirname "$0")/lib.sh"
need_root
need_sqk
need_feature remote
need_cmd mkfs.xfs mkfs.btrfs mkfs.ext4
UNIT=$(cd "$(dirname "$SQK")/.." && pwd)/tests/test_http
[ -x "$UNIT" ] || skip "$UNIT is not built (make unit builds it)"
W=$(scratch fs)

for fs in xfs btrfs ext4 tmpfs; do
	mkdir -p "$W/$fs"
	if [ "$fs" = tmpfs ]; then
		mount -t tmpfs -o size=256m tmpfs "$W/$fs" || fail "cannot mount a tmpfs"
	else
		truncate -s 512M "$W/$fs.img" || fail "cannot make $W/$fs.img"
		case $fs in
		xfs) mkfs.xfs -q "$W/$fs.img" ;;
		btrfs) mkfs.btrfs -q "$W/$fs.img" >/dev/null ;;
		ext4) mkfs.ext4 -q -F "$W/$fs.img" ;;
		esac || fail "mkfs.$fs failed"
		mount -o loop "$W/$fs.img" "$W/$fs" || fail "cannot loop-mount the $fs image"
	fi
	_MOUNTS="$W/$fs $_MOUNTS"
	out=$(TMPDIR="$W/$fs" CK_RUN_CASE="disk cache" CK_FORK=yes "$UNIT" 2>&1)
	rc=$?
	last=$(printf '%s\n' "$out" | tail -n 1)
	info "$fs: $last"
	if [ "$rc" != 0 ] || ! printf '%s\n' "$last" | grep -q '^100%: Checks: [1-9]'; then
		printf '%s\n' "$out" | sed 's/^/    | /' >&2
		fail "the disk cache's checks failed with their folders on $fs"
	fi
	umount "$W/$fs" || fail "cannot unmount $W/$fs"
done
