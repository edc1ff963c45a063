#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# --reuse OLD: a rebuild after changes (appended, changed in the middle, truncated, removed,
# added, renamed files) copies the old image's blocks and fragment blocks where the content is
# the same, and the new image is complete: it verifies, mounts in the kernel equal to the new
# source, lists the same tree as a full build and is within 1% of its size. Reuse is checked by
# the summary's counts, and its safety by an old image with corrupted blocks (no checksums): the
# corrupted blocks are not taken, the new image is still right.
. "$(dirname "$0")/lib.sh"
need_kernel_mount
need_sqk
need_cmd unsquashfs python3

W=$(scratch reuse)
SRC=$W/src
$MKTREE --small "$SRC" || fail "mktree failed"
# some larger files with several blocks, text-like so they compress
python3 - "$SRC" <<'P'
import os, sys, random
r = random.Random(7)
words = [bytes(r.choice(b'abcdefghij') for _ in range(r.randint(2, 9))) for _ in range(500)]
os.makedirs(os.path.join(sys.argv[1], 'big'), exist_ok=True)
for i in range(12):
    with open(os.path.join(sys.argv[1], 'big', 'f%02d.txt' % i), 'wb') as f:
        f.write(b' '.join(r.choice(words) for _ in range(60000 + i * 5000)))
for i in range(300):
    with open(os.path.join(sys.argv[1], 'big', 's%03d.txt' % i), 'wb') as f:
        f.write(b' '.join(r.choice(words) for _ in range(50 + i)))
P
"$SQK" mkimage -q "$SRC" "$W/old.sqsh" || fail "first build failed"

# Changes
printf 'appended\n' >>"$SRC/big/f00.txt"
python3 - "$SRC/big/f03.txt" <<'P'
import sys
with open(sys.argv[1], 'r+b') as f:
    f.seek(200000); f.write(b'CHANGED IN THE MIDDLE')
P
truncate -s 100000 "$SRC/big/f05.txt"
rm "$SRC/big/f07.txt" "$SRC/big/s010.txt"
mv "$SRC/big/f08.txt" "$SRC/big/renamed.txt"
echo 'a new small file' >"$SRC/big/new.txt"
printf 'x' >>"$SRC/big/s020.txt"

"$SQK" mkimage -q "$SRC" "$W/full.sqsh" || fail "full build failed"
"$SQK" mkimage --reuse "$W/old.sqsh" "$SRC" "$W/new.sqsh" >"$W/new.out" ||
	fail "rebuild with --reuse failed"
line=$(grep '^reused' "$W/new.out") || fail "no reused line in the summary: $(cat "$W/new.out")"
info "$line"
blocks=$(echo "$line" | awk '{ print $2 }')
frags=$(echo "$line" | awk '{ print $7 }')
[ "$blocks" -ge 20 ] || fail "only $blocks blocks reused"
[ "$frags" -ge 1 ] || fail "no fragment block reused"

"$SQK" verify "$W/new.sqsh" >"$W/verify.out" 2>&1 || fail "sqk verify: $(cat "$W/verify.out")"
mount_sq "$W/new.sqsh" "$W/mnt"
tree_equal "kernel mount of the rebuilt image" "$SRC" "$W/mnt"
umount_sq "$W/mnt"
unsquashfs -lls "$W/full.sqsh" | sed 1,3d | sort >"$W/full.lst"
unsquashfs -lls "$W/new.sqsh" | sed 1,3d | sort >"$W/new.lst"
diff "$W/full.lst" "$W/new.lst" >&2 || fail "the rebuilt image lists another tree than a full build"
fs=$(stat -c %s "$W/full.sqsh")
ns=$(stat -c %s "$W/new.sqsh")
[ $((ns * 100)) -le $((fs * 101)) ] || fail "rebuilt image $ns bytes, full build $fs: over 1% more"
info "sizes: full $fs, rebuilt $ns"

# The old image in place: rebuilding onto its own path works (it is read until the rename).
cp "$W/old.sqsh" "$W/inplace.sqsh"
"$SQK" mkimage -q --reuse "$W/inplace.sqsh" "$SRC" "$W/inplace.sqsh" || fail "in-place rebuild failed"
cmp -s "$W/inplace.sqsh" "$W/new.sqsh" || fail "in-place rebuild differs from the rebuild"

# Another compressor: nothing reused, said so, the image still right.
"$SQK" mkimage -c xz --reuse "$W/old.sqsh" "$SRC" "$W/xz.sqsh" >"$W/xz.out" 2>"$W/xz.err" ||
	fail "xz rebuild failed"
grep -q 'nothing reused' "$W/xz.err" || fail "no note about the compressor: $(cat "$W/xz.err")"
grep -q '^reused     0 blocks' "$W/xz.out" || fail "xz rebuild reused blocks: $(grep reused "$W/xz.out")"
extract "$W/xz.sqsh" "$W/xxz"
tree_equal "xz rebuild" "$SRC" "$W/xxz"

# A damaged old image without checksums: every data block's first stored byte flipped. No
# block of it may be taken; the result is right.
"$SQK" mkimage -q --no-checksums "$SRC" "$W/plain.sqsh" || fail "plain build failed"
cp "$W/plain.sqsh" "$W/bad.sqsh"
python3 - "$W/bad.sqsh" <<'P'
import struct, sys
with open(sys.argv[1], 'r+b') as f:
    sb = f.read(96)
    inode_start = struct.unpack_from('<Q', sb, 64)[0]
    pos = 96
    step = 4096
    # flip bytes spread over the data area (between the superblock and the tables)
    while pos < inode_start - 1:
        f.seek(pos); b = f.read(1); f.seek(pos); f.write(bytes([b[0] ^ 0x55])); pos += step
P
"$SQK" mkimage --reuse "$W/bad.sqsh" "$SRC" "$W/fromb.sqsh" >"$W/fromb.out" 2>"$W/fromb.err" ||
	fail "rebuild from a damaged old image failed: $(cat "$W/fromb.err")"
mount_sq "$W/fromb.sqsh" "$W/mnt2"
tree_equal "rebuild from a damaged old image" "$SRC" "$W/mnt2"
umount_sq "$W/mnt2"
info "from the damaged image: $(grep '^reused' "$W/fromb.out")"

# A missing old image is an error naming it; nothing written.
"$SQK" mkimage -q --reuse "$W/nosuch.sqsh" "$SRC" "$W/none.sqsh" 2>"$W/none.err" &&
	fail "a missing --reuse image was accepted"
grep -q 'nosuch.sqsh' "$W/none.err" || fail "message does not name the old image: $(cat "$W/none.err")"
[ ! -e "$W/none.sqsh" ] || fail "an image was left behind"
echo "reuse: ok"
