#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# Outputs that are not images (issue 17, point 1): what `sqk mkimage SRC... IMAGE` and
# `sqk tar -o FILE` do with what the output name already holds.
#  (a) a character device node (mknod), a FIFO, a socket, a directory: refused before any source
#      is read (a --tar FIFO nobody writes to is never opened), exit 1, a message naming it, the
#      node untouched (type, major:minor, inode)
#  (b) a non-empty file that is not an image (hard-linked): refused, both names intact; --force
#      and -noappend replace it (its other name keeps the old content); an empty file and an old
#      image are replaced; '-' is refused and nothing goes to stdout
#  (c) symlinks: followed and their target judged (text refused, old image replaced through the
#      link, which stays a link; a dangling link refused, its target not made; to a device node
#      refused)
#  (d) sqk tar -o: the same rules, with "a tar archive" (ustar, or gzip/xz/zstd) for "an image"
#  (f) a replaced image or archive keeps its mode and owner; something put at the name during
#      the build (a node, a new file) is not replaced and nothing is left; 'new/' refused
#  (e) block devices (loop devices on files): the image written in place (still a block device),
#      `sqk verify`, `sqk ls`, `sqk cat` and a kernel mount of the device; a device mounted
#      elsewhere refused (EBUSY) and its mount unharmed; a device too small: both sizes named,
#      its old superblock zeroed (no stale image); sqk tar -o onto a device, one failing
#      leaves zeros at its start; a missing source, --tar, --reuse or --pseudo file leaves the
#      device's old image; a device holding ext4 refused (mkimage, tar -o) unless --force
# Skips (exit 77, after running the rest) when loop devices or kernel squashfs are unavailable.
. "$(dirname "$0")/lib.sh"
need_root
need_sqk
need_cmd python3 timeout stat

W=$(scratch out)
cd "$W" || fail "cd $W"
S=$W/src
mkdir -p "$S/d"
echo alpha >"$S/a"
seq 1 20000 >"$S/d/numbers"
S2=$W/src2
mkdir -p "$S2"
echo beta >"$S2/b"

# node_state PATH: type, device numbers, inode, size and content hash of what PATH names (lstat).
node_state() {
	local h=-
	[ -f "$1" ] && [ ! -L "$1" ] && h=$(md5sum <"$1" | cut -d' ' -f1)
	echo "$(stat -c '%F %t:%T %i %h %s' "$1") $h"
}

# refused CASE PATH PATTERN CMD...: CMD exits 1 within 20 s with stderr matching PATTERN (an
# extended regex), prints nothing on stdout, and leaves PATH as it was.
refused() {
	local case=$1 path=$2 pat=$3 before
	shift 3
	before=$(node_state "$path")
	run_capture "$case" timeout -k 5 20 "$@"
	[ "$RC" = 124 ] && fail "$case: timed out (did it open what it should refuse?): $*"
	[ "$RC" = 1 ] || { show_err; fail "$case: exit $RC, expected 1: $*"; }
	grep -Eq -- "$pat" "$ERR_FILE" || { show_err; fail "$case: stderr does not match /$pat/"; }
	[ -s "$OUT_FILE" ] && fail "$case: printed on stdout: $(head -c 200 "$OUT_FILE")"
	[ "$(node_state "$path")" = "$before" ] ||
		fail "$case: $path changed: was '$before', now '$(node_state "$path")'"
	info "$case: $(head -n 1 "$ERR_FILE")"
}

# is_image PATH NAME: PATH is an image (not through a symlink check) holding file NAME.
is_image() {
	"$SQK" ls "$1" >"$TMP/ls.out" 2>"$TMP/ls.err" || { cat "$TMP/ls.err" >&2; fail "sqk ls $1"; }
	grep -qx "$2" "$TMP/ls.out" || fail "$1 does not hold '$2': $(tr '\n' ' ' <"$TMP/ls.out")"
}

# ---- (a) device nodes, FIFO, socket, directory ------------------------------------------------
mknod "$W/full" c 1 7 || fail "mknod failed"
refused "a: character device" "$W/full" "'$W/full' is a character device: not replaced" \
	"$SQK" mkimage -q "$S" "$W/full"
refused "a: character device, --force" "$W/full" "is a character device: not replaced" \
	"$SQK" mkimage -q --force "$S" "$W/full"
[ "$(stat -c '%F %t:%T' "$W/full")" = "character special file 1:7" ] ||
	fail "a: the node is now $(stat -c '%F %t:%T' "$W/full")"
mkfifo "$W/srcfifo"
refused "a: refused before the source is read" "$W/full" "is a character device" \
	"$SQK" mkimage -q --tar "$W/srcfifo" "$W/full"
mkfifo "$W/fifo"
refused "a: FIFO" "$W/fifo" "'$W/fifo' is a FIFO: not replaced" "$SQK" mkimage -q "$S" "$W/fifo"
[ -p "$W/fifo" ] || fail "a: the FIFO is gone"
python3 -c 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$W/sock" ||
	fail "cannot make a socket"
refused "a: socket" "$W/sock" "'$W/sock' is a socket: not replaced" "$SQK" mkimage -q "$S" "$W/sock"
mkdir "$W/adir" && echo keep >"$W/adir/inside"
refused "a: directory" "$W/adir" "'$W/adir' is a directory: not replaced" \
	"$SQK" mkimage -q "$S" "$W/adir"
[ "$(cat "$W/adir/inside")" = keep ] || fail "a: the directory's file changed"
[ -z "$(ls -A "$W" | grep -v -e '^src' -e '^full$' -e '^fifo$' -e '^sock$' -e '^adir$')" ] ||
	fail "a: files left behind: $(ls -A "$W" | tr '\n' ' ')"

# ---- (b) regular files -------------------------------------------------------------------------
echo "my notes" >"$W/notes.txt"
ln "$W/notes.txt" "$W/notes-other.txt"
refused "b: text file (2 hard links)" "$W/notes.txt" \
	"'$W/notes.txt' is a file \(one of 2 hard links\) that is not a SquashFS image: not replaced \(--force replaces it\)" \
	"$SQK" mkimage -q "$S" "$W/notes.txt"
[ "$(stat -c %h "$W/notes-other.txt")" = 2 ] || fail "b: the hard link was broken"
printf 'hsq' >"$W/short"
refused "b: 3 bytes" "$W/short" "not a SquashFS image" "$SQK" mkimage -q "$S" "$W/short"
must "$SQK" mkimage -q --force "$S" "$W/notes.txt"
is_image "$W/notes.txt" a
[ "$(cat "$W/notes-other.txt")" = "my notes" ] || fail "b: --force changed the other name"
[ "$(stat -c %h "$W/notes-other.txt")" = 1 ] || fail "b: the other name still has 2 links"
echo "more notes" >"$W/notes2.txt"
must "$SQK" mkimage -q -noappend "$S" "$W/notes2.txt"
is_image "$W/notes2.txt" a
: >"$W/empty"
must "$SQK" mkimage -q "$S" "$W/empty"
is_image "$W/empty" a
must "$SQK" mkimage -q "$S" "$W/img.sqsh"
must "$SQK" mkimage -q "$S2" "$W/img.sqsh" # an old image: replaced without --force
is_image "$W/img.sqsh" b
refused "b: standard output" "$W/img.sqsh" \
	"writing an image to standard output is not supported: name a file" \
	"$SQK" mkimage -q "$S" -
[ -e "$W/-" ] && fail "b: a file named '-' was written"

# ---- (c) symlinks ------------------------------------------------------------------------------
echo "linked notes" >"$W/ln-target.txt"
ln -s ln-target.txt "$W/l-txt"
refused "c: symlink to a text file" "$W/ln-target.txt" \
	"'$W/l-txt' \(a symlink to '$W/ln-target.txt'\) is a file that is not a SquashFS image" \
	"$SQK" mkimage -q "$S" "$W/l-txt"
[ -L "$W/l-txt" ] || fail "c: the symlink is gone"
mkdir "$W/sub"
ln -s ../img.sqsh "$W/sub/l-img"
must "$SQK" mkimage -q -noappend "$S" "$W/sub/l-img"
[ -L "$W/sub/l-img" ] && [ "$(readlink "$W/sub/l-img")" = ../img.sqsh ] ||
	fail "c: the symlink to the image is no longer that symlink"
is_image "$W/img.sqsh" a
ln -s new-target.sqsh "$W/l-dangling"
refused "c: dangling symlink" "$W/l-dangling" \
	"'$W/l-dangling' is a dangling symbolic link \(to '$W/new-target.sqsh'\): not written through" \
	"$SQK" mkimage -q "$S" "$W/l-dangling"
[ -e "$W/new-target.sqsh" ] && fail "c: the dangling symlink's target was created"
refused "c: tar -o dangling symlink" "$W/l-dangling" "is a dangling symbolic link" \
	"$SQK" tar -o "$W/l-dangling" "$W/img.sqsh"
[ -e "$W/new-target.sqsh" ] && fail "c: tar -o created the dangling symlink's target"
ln -s full "$W/l-full"
refused "c: symlink to a character device" "$W/full" \
	"'$W/l-full' \(a symlink to '$W/full'\) is a character device: not replaced" \
	"$SQK" mkimage -q "$S" "$W/l-full"
ln -s adir "$W/l-dir"
refused "c: symlink to a directory" "$W/adir" "is a directory: not replaced" \
	"$SQK" mkimage -q "$S" "$W/l-dir"
ln -s l-loop2 "$W/l-loop1" && ln -s l-loop1 "$W/l-loop2"
refused "c: symlink loop" "$W/l-loop1" "[Tt]oo many levels of symbolic links" \
	"$SQK" mkimage -q "$S" "$W/l-loop1"

# ---- (d) sqk tar -o ----------------------------------------------------------------------------
IMG=$W/img.sqsh
"$SQK" tar "$IMG" >"$W/ref.tar" || fail "sqk tar to stdout failed"
refused "d: tar -o character device" "$W/full" "'$W/full' is a character device: not replaced" \
	"$SQK" tar -o "$W/full" "$IMG"
refused "d: tar -o FIFO" "$W/fifo" "is a FIFO: not replaced" "$SQK" tar -o "$W/fifo" "$IMG"
refused "d: tar -o directory" "$W/adir" "is a directory: not replaced" \
	"$SQK" tar -o "$W/adir" "$IMG"
echo "tar notes" >"$W/t-notes.txt"
refused "d: tar -o text file" "$W/t-notes.txt" \
	"'$W/t-notes.txt' is a file that is not a tar archive: not replaced \(--force replaces it\)" \
	"$SQK" tar -o "$W/t-notes.txt" "$IMG"
refused "d: tar -o over an image" "$IMG" "is a file that is not a tar archive" \
	"$SQK" tar -o "$IMG" "$IMG"
must "$SQK" tar --force -o "$W/t-notes.txt" "$IMG"
cmp -s "$W/t-notes.txt" "$W/ref.tar" || fail "d: --force did not write the archive"
tar -cf "$W/old.tar" -C "$S" a
ln -s old.tar "$W/l-tar"
must "$SQK" tar -o "$W/l-tar" "$IMG" # an older archive, through a symlink: replaced
[ -L "$W/l-tar" ] || fail "d: the symlink to the archive was replaced"
cmp -s "$W/old.tar" "$W/ref.tar" || fail "d: the older archive was not replaced"
gzip -c "$W/ref.tar" >"$W/old.tgz"
must "$SQK" tar -z -o "$W/old.tgz" "$IMG" # a gzip file: taken for an archive
gzip -dc "$W/old.tgz" | cmp -s - "$W/ref.tar" || fail "d: the .tgz differs"

# ---- (f) replacing a file: its mode and owner kept; what appears meanwhile is not replaced -----
must "$SQK" mkimage -q "$S" "$W/owned.sqsh"
chmod 600 "$W/owned.sqsh" && chown nobody "$W/owned.sqsh" || fail "f: chmod/chown"
must "$SQK" mkimage -q -noappend "$S2" "$W/owned.sqsh"
is_image "$W/owned.sqsh" b
[ "$(stat -c '%a %U' "$W/owned.sqsh")" = "600 nobody" ] ||
	fail "f: the rebuilt image is $(stat -c '%a %U' "$W/owned.sqsh"), not 600 nobody"
"$SQK" tar -o "$W/owned.tar" "$W/owned.sqsh" || fail "f: tar -o"
chmod 640 "$W/owned.tar" && chown nobody "$W/owned.tar" || fail "f: chmod/chown"
must "$SQK" tar -o "$W/owned.tar" "$W/owned.sqsh"
[ "$(stat -c '%a %U' "$W/owned.tar")" = "640 nobody" ] ||
	fail "f: the rewritten archive is $(stat -c '%a %U' "$W/owned.tar"), not 640 nobody"
mkdir "$W/race"
# race NAME MAKE: sqk mkimage --tar FIFO race/NAME, while it waits MAKE (run in race/) puts
# something at race/NAME; the build then fails, what MAKE put there stays, nothing else is left.
race() {
	local name=$1 make=$2 pid before
	rm -f "$W/race/in" && mkfifo "$W/race/in"
	"$SQK" mkimage -q -noappend --tar "$W/race/in" "$W/race/$name" >"$TMP/race.out" \
		2>"$TMP/race.err" &
	pid=$!
	sleep 1
	(cd "$W/race" && eval "$make") || fail "f: $make"
	before=$(node_state "$W/race/$name")
	tar -cf - -C "$S" a >"$W/race/in"
	wait "$pid"
	RC=$?
	[ "$RC" = 1 ] || { cat "$TMP/race.err" >&2; fail "f: $make during the build: exit $RC"; }
	grep -q "'$W/race/$name' changed during the build: not replaced" "$TMP/race.err" ||
		{ cat "$TMP/race.err" >&2; fail "f: $make during the build: not said"; }
	[ "$(node_state "$W/race/$name")" = "$before" ] || fail "f: $make: race/$name was replaced"
	[ "$(ls -A "$W/race" | tr '\n' ' ')" = "in $name " ] ||
		fail "f: $make: left in race/: $(ls -A "$W/race" | tr '\n' ' ')"
	info "f: $(head -n 1 "$TMP/race.err")"
}
race out "mknod out c 1 3"
rm -f "$W/race/out"
cp "$W/owned.sqsh" "$W/race/old.sqsh"
race old.sqsh "rm old.sqsh && echo notes >old.sqsh"
refused "f: trailing slash" "$W" "'$W/newdir/' names a directory" "$SQK" mkimage -q "$S" "$W/newdir/"
[ -e "$W/newdir" ] && fail "f: the trailing-slash name was made"

# ---- (e) block devices -------------------------------------------------------------------------
NOLOOP=""
if ! command -v losetup >/dev/null 2>&1; then
	NOLOOP="losetup not installed"
elif ! [ -e /dev/loop-control ] && ! ls /dev/loop[0-9]* >/dev/null 2>&1; then
	NOLOOP="no /dev/loop devices"
elif ! grep -qw squashfs /proc/filesystems && ! modprobe squashfs 2>/dev/null; then
	NOLOOP="kernel has no squashfs support"
fi
# new_loop FILE SIZE: a loop device on a new FILE of SIZE; detached on exit. Sets LOOP.
new_loop() {
	truncate -s "$2" "$1" || fail "truncate $1"
	LOOP=$(losetup -f --show "$1" 2>"$TMP/losetup.err") || LOOP=""
	[ -n "$LOOP" ] && at_exit "losetup -d $LOOP"
}
if [ -z "$NOLOOP" ]; then
	new_loop "$W/dev.bin" 16M
	[ -n "$LOOP" ] || NOLOOP="losetup -f failed: $(head -n 1 "$TMP/losetup.err")"
fi
if [ -n "$NOLOOP" ]; then
	skip "block-device cases (e): $NOLOOP; cases (a)-(d) passed"
fi
L=$LOOP
info "e: loop device $L"
head -c 3000000 /dev/urandom >"$S/d/random"
must "$SQK" mkimage -q "$S" "$L"
[ -b "$L" ] || fail "e: $L is no longer a block device"
[ "$(losetup -n -O BACK-FILE "$L" | xargs basename)" = dev.bin ] || fail "e: $L lost its file"
"$SQK" verify "$L" >"$TMP/verify.out" 2>&1 || { cat "$TMP/verify.out" >&2; fail "e: sqk verify $L"; }
grep -q "clean" "$TMP/verify.out" && ! grep -q "integrity: none" "$TMP/verify.out" ||
	{ cat "$TMP/verify.out" >&2; fail "e: verify did not check the integrity data"; }
info "e: $(cat "$TMP/verify.out")"
[ "$("$SQK" ls -R "$L" | tr '\n' ' ')" = "a d d/numbers d/random " ] ||
	fail "e: sqk ls -R $L gives '$("$SQK" ls -R "$L" | tr '\n' ' ')'"
"$SQK" cat "$L" d/random | cmp -s - "$S/d/random" || fail "e: sqk cat $L d/random differs"
mkdir -p "$W/m"
mount -t squashfs -o ro "$L" "$W/m" || fail "e: kernel mount of $L failed"
_MOUNTS="$W/m $_MOUNTS"
diff -r "$S" "$W/m" >/dev/null || fail "e: the mounted device differs from the source"
refused "e: mounted device" "$L" "'$L' is a block device in use \(mounted" \
	"$SQK" mkimage -q -noappend "$S2" "$L"
refused "e: append to a device holding an image" "$L" \
	"'$L' is a block device holding a SquashFS image: appending in place is not supported" \
	"$SQK" mkimage -q "$S2" "$L"
refused "e: tar -o to the mounted device" "$L" "holding a SquashFS image: not replaced" \
	"$SQK" tar -o "$L" "$IMG"
refused "e: tar --force -o to the mounted device" "$L" "in use" "$SQK" tar --force -o "$L" "$IMG"
diff -r "$S" "$W/m" >/dev/null || fail "e: the mount changed after a refused write"
umount "$W/m" || fail "e: umount"
_MOUNTS=${_MOUNTS#"$W/m "}
# a --no-checksums image over one of the same padded size: the old trailer, still where the new
# image's would be, is not taken for its integrity data (its first digest does not match)
must "$SQK" mkimage -q -noappend --mtime 1000 "$S" "$L"
used1=$("$SQK" info "$L" | sed -n 's/^bytes used: *//p')
must "$SQK" mkimage -q -noappend --no-checksums --mtime 2000 "$S" "$L"
used2=$("$SQK" info "$L" | sed -n 's/^bytes used: *//p')
[ -n "$used1" ] && [ $(((used1 + 4095) / 4096)) = $(((used2 + 4095) / 4096)) ] ||
	fail "e: the two images differ in padded size ($used1, $used2 bytes): the case is not made"
"$SQK" verify "$L" >"$TMP/verify.out" 2>&1 || { cat "$TMP/verify.out" >&2; fail "e: stale trailer"; }
grep -q "integrity: none" "$TMP/verify.out" ||
	{ cat "$TMP/verify.out" >&2; fail "e: an old trailer was taken for the new image's"; }
"$SQK" cat "$L" d/random | cmp -s - "$S/d/random" || fail "e: sqk cat after the stale trailer"
# an image smaller than an old one on the same device: the new trailer is found, not the old
ln -s "$L" "$W/l-dev"
must "$SQK" mkimage -q -noappend --checksum-chunk 4K "$S2" "$W/l-dev"
[ -L "$W/l-dev" ] && [ -b "$L" ] || fail "e: the symlink to the device or the device changed"
"$SQK" verify "$L" >"$TMP/verify.out" 2>&1 || { cat "$TMP/verify.out" >&2; fail "e: verify 2"; }
[ "$("$SQK" cat "$L" b)" = beta ] || fail "e: the second image on $L is not read"
refused "e: --reuse of the device written" "$L" "--reuse '$L' is the block device the image goes to" \
	"$SQK" mkimage -q --reuse "$L" "$S2" "$L"
"$SQK" verify "$L" >/dev/null 2>&1 || fail "e: the refused --reuse harmed the image on $L"
# a source or an input that is not there: refused before the device is touched (the old image
# on it still reads)
for args in "$W/no-such-dir" "--tar $W/no-such.tar" "--reuse $W/no-such.sqsh $S2" \
	"--pseudo $W/no-such.pseudo $S2"; do
	run_capture "e: missing input" "$SQK" mkimage -q -noappend $args "$L"
	[ "$RC" = 1 ] && grep -q "no-such" "$ERR_FILE" || { show_err; fail "e: $args: exit $RC"; }
	grep -q "superblock is zeroed" "$ERR_FILE" && { show_err; fail "e: $args: device touched"; }
	[ "$(head -c 4 "$L")" = hsqs ] || fail "e: mkimage $args $L zeroed the device's old image"
	[ "$("$SQK" cat "$L" b)" = beta ] || fail "e: mkimage $args $L harmed the old image"
done
info "e: a missing source leaves the device's image: $(head -n 1 "$ERR_FILE")"

# a device holding another file system: refused (mkimage and tar -o) unless --force
truncate -s 8M "$W/ext.bin" && mkfs.ext4 -q -F "$W/ext.bin" || fail "e: mkfs.ext4"
L3=$(losetup -f --show "$W/ext.bin") || fail "e: losetup ext.bin"
at_exit "losetup -d $L3"
ext_magic() { od -An -tx1 -j 1080 -N 2 "$L3" | tr -d ' \n'; }
[ "$(ext_magic)" = 53ef ] || fail "e: no ext magic on $L3"
refused "e: device holding ext4" "$L3" \
	"'$L3' is a block device holding an ext2/3/4 file system: not replaced \(--force replaces it\)" \
	"$SQK" mkimage -q "$S2" "$L3"
refused "e: tar -o to a device holding ext4" "$L3" \
	"'$L3' is a block device holding an ext2/3/4 file system: not replaced" \
	"$SQK" tar -o "$L3" "$IMG"
[ "$(ext_magic)" = 53ef ] && cmp -s -n 4096 "$L3" "$W/ext.bin" ||
	fail "e: the refused writes changed the ext4 device"
must "$SQK" mkimage -q --force "$S2" "$L3"
[ "$("$SQK" cat "$L3" b)" = beta ] || fail "e: --force did not write $L3"
refused "e: tar -o to a device holding an image" "$L3" "holding a SquashFS image: not replaced" \
	"$SQK" tar -o "$L3" "$IMG"

# too small: an old image on a 1 MiB device, then one that needs more
new_loop "$W/small.bin" 1M
[ -n "$LOOP" ] || fail "e: second loop device: $(head -n 1 "$TMP/losetup.err")"
L2=$LOOP
must "$SQK" mkimage -q "$S2" "$L2"
must "$SQK" verify "$L2"
run_capture small "$SQK" mkimage -q -noappend "$S" "$L2"
[ "$RC" = 1 ] || { show_err; fail "e: too small: exit $RC"; }
need=$(sed -n "s/.*the image needs \([0-9]*\) bytes, the block device '.*' holds 1048576.*/\1/p" "$ERR_FILE")
[ -n "$need" ] && [ "$need" -gt 3000000 ] || { show_err; fail "e: too small: no message with both sizes"; }
grep -q "old superblock is zeroed" "$ERR_FILE" || { show_err; fail "e: too small: not said"; }
info "e: too small: $(head -n 1 "$ERR_FILE")"
cmp -s -n 96 "$L2" /dev/zero || fail "e: the old superblock on $L2 is still there"
[ -b "$L2" ] || fail "e: $L2 is no longer a block device"
"$SQK" ls "$L2" >/dev/null 2>&1 && fail "e: the old image on $L2 still reads"
if mount -t squashfs -o ro "$L2" "$W/m" 2>/dev/null; then
	umount "$W/m"
	fail "e: the kernel mounts the invalidated $L2"
fi

# sqk tar -o onto a device: the archive at its start; one too big for it: ENOSPC, both named
must "$SQK" tar -o "$L2" "$IMG"
head -c "$(stat -c %s "$W/ref.tar")" "$L2" | cmp -s - "$W/ref.tar" || fail "e: tar -o $L2 differs"
[ -b "$L2" ] || fail "e: tar -o replaced $L2"
must "$SQK" mkimage -q "$S" "$W/big.sqsh"
run_capture tar_small "$SQK" tar -o "$L2" "$W/big.sqsh"
[ "$RC" = 1 ] && grep -q "$L2 (a block device of 1048576 bytes): No space left on device" "$ERR_FILE" ||
	{ show_err; fail "e: tar -o onto a device too small: exit $RC"; }
info "e: tar too big: $(head -n 1 "$ERR_FILE")"
[ -b "$L2" ] || fail "e: tar -o replaced $L2"
cmp -s -n 4096 "$L2" /dev/zero || fail "e: the failed tar -o left a partial archive on $L2"
info "e: all block-device cases passed"
