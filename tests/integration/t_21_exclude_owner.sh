#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# --exclude (globs on paths relative to the source; -e is mksquashfs's exact form, t_14), --all-root, --force-uid/--force-gid and
# --mtime, checked on extracted images against the source with the matching expectations.
. "$(dirname "$0")/lib.sh"
need_root
need_sqk
need_cmd unsquashfs python3

W=$(scratch excl)
SRC=$W/src
$MKTREE --small --no-sparse "$SRC" || fail "mktree failed"
# extra entries for the exclude patterns (then restore the directories' mtimes)
mkdir -p "$SRC/sub/dir/inner" "$SRC/sub/dirx" "$SRC/sub/deeper/dir"
echo a >"$SRC/a.log"
echo b >"$SRC/sub/b.log"
echo c >"$SRC/sub/dir/inner/c.txt"
echo d >"$SRC/sub/dirx/d.txt"
echo e >"$SRC/sub/deeper/dir/e.txt"
echo f >"$SRC/keep.logx"
echo g >"$SRC/sub/dir.log.keep"
touch -d @1500000000 "$SRC/sub/dir" "$SRC/sub/dir/inner" "$SRC/sub/dirx" "$SRC/sub/deeper" \
	"$SRC/sub/deeper/dir" "$SRC/sub" "$SRC"

check() {
	local name=$1 img=$W/$1.sqsh
	shift
	local -a build=() cmpopts=()
	while [ $# -gt 0 ] && [ "$1" != -- ]; do build+=("$1"); shift; done
	[ $# -gt 0 ] && shift
	cmpopts=("$@")
	sqk_build "${build[@]}" "$SRC" "$img"
	extract "$img" "$W/x.$name"
	tree_equal "$name: ${build[*]}" "$SRC" "$W/x.$name" "${cmpopts[@]}"
}

absent() {
	[ -e "$W/x.$1/$2" ] || [ -L "$W/x.$1/$2" ] && fail "$1: $2 is in the image but should be excluded"
	return 0
}
present() {
	[ -e "$W/x.$1/$2" ] || [ -L "$W/x.$1/$2" ] || fail "$1: $2 is missing from the image"
}

# Patterns: '*.log' (fnmatch without FNM_PATHNAME: '*' also matches '/', so sub/b.log goes too),
# an exact directory path, a name pattern for symlinks, a path with a multi-byte name.
check excl --exclude '*.log' --exclude 'sub/dir' --exclude 'links/*ing' --exclude 'names/日本語*' -- \
	--exclude '*.log' --exclude 'sub/dir' --exclude 'links/*ing' --exclude 'names/日本語*'
absent excl a.log
absent excl sub/b.log
absent excl sub/dir
absent excl links/dangling
absent excl names/日本語のファイル名
present excl keep.logx
present excl sub/dirx/d.txt
present excl sub/dir.log.keep
present excl sub/deeper/dir/e.txt
present excl links/long4000
# excluding the whole tree content except the root
check excl_all --exclude '*' -- --exclude '*'
[ -z "$(ls -A "$W/x.excl_all")" ] || fail "--exclude '*' left entries: $(ls -A "$W/x.excl_all" | head)"

# ownership
check allroot --all-root -- --uid 0 --gid 0
check force --force-uid 4242 --force-gid 100000 -- --uid 4242 --gid 100000
check force_uid --force-uid 70000 -- --uid 70000
check force_gid --force-gid 0 -- --gid 0
check force_max --force-uid 4294967294 --force-gid 65536 -- --uid 4294967294 --gid 65536
# all files owned by one id: the id table has one entry (id_count, offset 26)
[ "$(sb_u16 "$W/allroot.sqsh" 26)" = 1 ] || fail "--all-root: id_count is $(sb_u16 "$W/allroot.sqsh" 26), expected 1"

# --mtime: every inode, and the image time
check mtime --mtime 1234567890 -- --mtime 1234567890
[ "$(sb_u32 "$W/mtime.sqsh" 8)" = 1234567890 ] || fail "--mtime: superblock time is $(sb_u32 "$W/mtime.sqsh" 8)"
check mtime0 --mtime 0 -- --mtime 0
# --mtime together with SOURCE_DATE_EPOCH: the explicit option wins for the inodes
run_capture mtsde env SOURCE_DATE_EPOCH=1000 "$SQK" mkimage --mtime 1234567890 "$SRC" "$W/mtsde.sqsh"
[ "$RC" = 0 ] || { show_err; fail "--mtime with SOURCE_DATE_EPOCH exited $RC"; }
extract "$W/mtsde.sqsh" "$W/x.mtsde"
if ! $TREECMP "$SRC" "$W/x.mtsde" --mtime 1234567890 >/dev/null 2>&1 &&
	! $TREECMP "$SRC" "$W/x.mtsde" --mtime 1000 >/dev/null 2>&1; then
	fail "--mtime 1234567890 with SOURCE_DATE_EPOCH=1000: mtimes are neither all 1234567890 nor all 1000"
fi

# everything at once, seen through the kernel
if grep -qw squashfs /proc/filesystems && [ -e /dev/loop-control ]; then
	sqk_build --all-root --mtime 86400 --exclude '*.log' "$SRC" "$W/all.sqsh"
	mount_sq "$W/all.sqsh" "$W/mnt"
	tree_equal "kernel: --all-root --mtime --exclude" "$SRC" "$W/mnt" --uid 0 --gid 0 --mtime 86400 --exclude '*.log'
	umount_sq "$W/mnt"
fi
exit 0
