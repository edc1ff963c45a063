#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# Reproducibility: the same tree gives byte-identical images whatever -j is, on repeated runs at
# different wall-clock times, and from a copy whose directories list in another order (tmpfs).
# SOURCE_DATE_EPOCH sets the superblock time and clamps newer mtimes, leaving older ones alone.
# A cold tree (the read-ahead scout) and the tree through a FUSE view give the same bytes.
. "$(dirname "$0")/lib.sh"
need_root
need_sqk
need_cmd unsquashfs python3 cmp

W=$(scratch rep)
SRC=$W/src
$MKTREE --no-sparse "$SRC" || fail "mktree failed"

same() {
	cmp "$1" "$2" >"$TMP/cmp.out" 2>&1 ||
		fail "$3: images differ: $(head -n 1 "$TMP/cmp.out") (sizes $(stat -c %s "$1") and $(stat -c %s "$2"))"
	info "$3: identical"
}

sqk_build -j 1 "$SRC" "$W/j1.sqsh"
sqk_build -j 7 "$SRC" "$W/j7.sqsh"
same "$W/j1.sqsh" "$W/j7.sqsh" "-j 1 vs -j 7"
sqk_build -j 2 "$SRC" "$W/j2a.sqsh"
sleep 1.1
sqk_build -j 2 "$SRC" "$W/j2b.sqsh"
same "$W/j2a.sqsh" "$W/j2b.sqsh" "-j 2 twice, 1 s apart"
same "$W/j1.sqsh" "$W/j2a.sqsh" "-j 1 vs -j 2"
sqk_build -j 2 -c xz "$SRC" "$W/xz1.sqsh"
sqk_build -j 1 -c xz "$SRC" "$W/xz2.sqsh"
same "$W/xz1.sqsh" "$W/xz2.sqsh" "xz -j 2 vs -j 1"
extract "$W/j7.sqsh" "$W/x"
tree_equal "-j 7 image" "$SRC" "$W/x"
rm -rf "$W/x"

# A copy on tmpfs: readdir returns another order there (and other inode numbers).
if mkdir -p "$W/tmpfs" && mount -t tmpfs -o size=256m,mode=755 tmpfs "$W/tmpfs" 2>/dev/null; then
	_MOUNTS="$W/tmpfs $_MOUNTS"
	cp -a "$SRC" "$W/tmpfs/copy" || fail "cp -a to tmpfs failed"
	if $TREECMP "$SRC" "$W/tmpfs/copy" >"$TMP/copycmp.out" 2>&1; then
		[ "$(ls -f "$SRC/bigdir" | head -n 5)" != "$(ls -f "$W/tmpfs/copy/bigdir" | head -n 5)" ] ||
			info "note: readdir order is the same on the copy"
		sqk_build -j 2 "$W/tmpfs/copy" "$W/copy.sqsh"
		same "$W/j1.sqsh" "$W/copy.sqsh" "copy on tmpfs (other readdir order)"
	else
		head -n 5 "$TMP/copycmp.out"
		info "cp -a to tmpfs does not preserve the tree here; order check skipped"
	fi
	umount "$W/tmpfs"
else
	info "cannot mount tmpfs; readdir-order check skipped"
fi

# SOURCE_DATE_EPOCH: superblock time = SDE; mtimes newer than SDE clamped, older kept.
SDE=1600010000   # mktree: file mtimes 1600000000+7i, directories newer
run_capture sde env SOURCE_DATE_EPOCH=$SDE "$SQK" mkimage -j 2 "$SRC" "$W/sde.sqsh"
[ "$RC" = 0 ] || { show_err; fail "build with SOURCE_DATE_EPOCH exited $RC"; }
t=$(sb_u32 "$W/sde.sqsh" 8)
[ "$t" = $SDE ] || fail "SOURCE_DATE_EPOCH=$SDE: superblock mkfs_time is $t"
# the tree really has mtimes on both sides of SDE
n_new=$(find "$SRC" -newermt "@$SDE" | wc -l)
n_old=$(find "$SRC" ! -newermt "@$SDE" | wc -l)
[ "$n_new" -gt 5 ] && [ "$n_old" -gt 5 ] || fail "tree lacks mtimes around $SDE ($n_new newer, $n_old older)"
extract "$W/sde.sqsh" "$W/x"
tree_equal "SOURCE_DATE_EPOCH=$SDE (unsquashfs)" "$SRC" "$W/x" --clamp-mtime $SDE
rm -rf "$W/x"
if grep -qw squashfs /proc/filesystems && [ -e /dev/loop-control ]; then
	mount_sq "$W/sde.sqsh" "$W/mnt"
	tree_equal "SOURCE_DATE_EPOCH=$SDE (kernel)" "$SRC" "$W/mnt" --clamp-mtime $SDE
	umount_sq "$W/mnt"
fi
run_capture sde2 env SOURCE_DATE_EPOCH=$SDE "$SQK" mkimage -j 1 "$SRC" "$W/sde2.sqsh"
[ "$RC" = 0 ] || { show_err; fail "build with SOURCE_DATE_EPOCH exited $RC"; }
same "$W/sde.sqsh" "$W/sde2.sqsh" "SOURCE_DATE_EPOCH -j 2 vs -j 1"
cmp -s "$W/sde.sqsh" "$W/j1.sqsh" && fail "SOURCE_DATE_EPOCH had no effect on the image"
# SDE later than every mtime: nothing clamped, only the image time changes
run_capture sde3 env SOURCE_DATE_EPOCH=4294967295 "$SQK" mkimage "$SRC" "$W/sde3.sqsh"
[ "$RC" = 0 ] || { show_err; fail "build with SOURCE_DATE_EPOCH=4294967295 exited $RC"; }
[ "$(sb_u32 "$W/sde3.sqsh" 8)" = 4294967295 ] || fail "SOURCE_DATE_EPOCH=4294967295: mkfs_time $(sb_u32 "$W/sde3.sqsh" 8)"
extract "$W/sde3.sqsh" "$W/x"
tree_equal "SOURCE_DATE_EPOCH=max (unsquashfs)" "$SRC" "$W/x"
rm -rf "$W/x"

# The read-ahead scout of a cold source changes no byte: the tree's own pages dropped (its
# first read misses: the scout starts, and the walk reads through the descriptors it opened),
# and the tree through a FUSE view (tests/bench/slowfs.c, 200 us a request), where RWF_NOWAIT
# cannot tell a miss and the scout starts at the first read.
sync -f "$SRC/."
find "$SRC" -type f -exec dd if={} iflag=nocache count=0 status=none \;
sqk_build -j 2 "$SRC" "$W/cold.sqsh"
same "$W/j1.sqsh" "$W/cold.sqsh" "cold tree (read-ahead scout)"
if [ -c /dev/fuse ] && pkg-config --exists fuse3 2>/dev/null &&
	cc -O2 -o "$W/slowfs" "$IT_DIR/../bench/slowfs.c" $(pkg-config --cflags --libs fuse3) \
		2>"$TMP/slowfs.cc"; then
	mkdir "$W/slow"
	"$W/slowfs" "$SRC" "$W/slow" -o delay_us=200 || fail "slowfs did not mount $SRC"
	_MOUNTS="$W/slow $_MOUNTS"
	sqk_build -j 2 "$W/slow" "$W/slow.sqsh"
	fusermount3 -u "$W/slow"
	same "$W/j1.sqsh" "$W/slow.sqsh" "the tree through a FUSE view (the scout's descriptors)"
else
	info "slowfs not built ($(head -n 1 "$TMP/slowfs.cc" 2>/dev/null)): FUSE-view check skipped"
fi
exit 0
