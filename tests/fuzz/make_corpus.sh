#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Regenerates the fuzz seed corpus: small images of one tiny tree (fragments, tails, a sparse
# block, xattrs including a shared out-of-line value, a hard link, symlinks, devices, an empty
# directory, a 300-entry directory that gets a directory index) packed by `sqk mkimage` (with
# and without integrity data), mksquashfs and gensquashfs with each compressor, and mksquashfs
# without compression, and two tiny uncompressed images of a smaller tree.
# Usage: make_corpus.sh SQK OUTDIR (as root, for the device nodes and trusted.* xattrs).
set -eu
export SOURCE_DATE_EPOCH=1700000000 # reproducible mksquashfs/gensquashfs output
SQK=${1:?sqk binary}
OUT=${2:?output directory}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
R=$T/tree
mkdir -p "$R/emptydir" "$R/big" "$R/sub/deeper"
printf 'hello, squashfs\n' > "$R/hello.txt"
: > "$R/empty"
i=0
while [ $i -lt 700 ]; do printf 'line %05d of a small text file\n' $i; i=$((i + 1)); done \
	> "$R/multi.txt"
{ head -c 4000 "$R/multi.txt"; head -c 8192 /dev/zero; printf 'tail after a hole'; } \
	> "$R/sparse.bin"
printf 'deep file\n' > "$R/sub/deeper/f"
ln "$R/hello.txt" "$R/hardlink"
ln -s hello.txt "$R/sym"
ln -s "$(printf '%0200d' 0)" "$R/longsym"
mknod "$R/null" c 1 3
mknod "$R/loop0" b 7 0
mkfifo "$R/fifo"
i=0
while [ $i -lt 300 ]; do echo $i > "$R/big/entry_with_a_rather_long_name_$i"; i=$((i + 1)); done
V=$(printf 'shared-value-%0180d' 0)
setfattr -n user.note -v small "$R/hello.txt"
for f in multi.txt sparse.bin sub/deeper/f emptydir; do
	setfattr -n user.shared -v "$V" "$R/$f"
done
setfattr -n trusted.t -v 1 "$R/sub"
setfattr -n security.selinux -v system_u:object_r:etc_t:s0 "$R/sub/deeper"
touch -h -d @1700000000 "$R" "$R"/* "$R"/*/* "$R"/*/*/* 2>/dev/null || true

mkdir -p "$OUT"
for c in gzip xz lz4 zstd; do
	"$SQK" mkimage -q -j 1 -c "$c" "$R" "$OUT/sqk-$c.sqfs"
	"$SQK" mkimage -q -j 1 -c "$c" -b 4K --no-fragments "$R" "$OUT/sqk-$c-4k-nofrag.sqfs"
	mksquashfs "$R" "$OUT/mksq-$c.sqfs" -comp "$c" -b 4K -nopad -quiet -no-progress \
		-processors 1 >/dev/null
done
mksquashfs "$R" "$OUT/mksq-gzip-nofrag-noxattr.sqfs" -comp gzip -no-fragments -no-xattrs \
	-nopad -quiet -no-progress -processors 1 >/dev/null
mksquashfs "$R" "$OUT/mksq-xz-alwaysfrag.sqfs" -comp xz -b 4K -always-use-fragments \
	-nopad -quiet -no-progress -processors 1 >/dev/null
"$SQK" mkimage -q -j 1 -c zstd --no-tailends --no-exports --no-xattrs "$R" \
	"$OUT/sqk-zstd-notail-noexport.sqfs"
# Uncompressed tables and data: mutations reach the fields instead of the decompressors.
mksquashfs "$R" "$OUT/mksq-raw.sqfs" -noI -noD -noF -noX -b 4K -nopad -quiet -no-progress \
	-processors 1 >/dev/null
mksquashfs "$R" "$OUT/mksq-raw-small.sqfs" -noI -noD -noF -noX -b 4K -e big multi.txt -nopad \
	-quiet -no-progress -processors 1 >/dev/null
"$SQK" mkimage -q -j 1 -c lz4 -b 4K --checksum-chunk 4K "$R" "$OUT/sqk-lz4-4k-chunk4k.sqfs"
"$SQK" mkimage -q -j 1 -c gzip --no-checksums "$R" "$OUT/sqk-gzip-nochecksums.sqfs"
if command -v gensquashfs >/dev/null; then
	gensquashfs -q -j 1 -c xz -b 4096 -B 1024 -D "$R" "$OUT/gensq-xz.sqfs" >/dev/null
	gensquashfs -q -j 1 -c lz4 -b 4096 -B 1024 -D "$R" "$OUT/gensq-lz4.sqfs" >/dev/null
fi

# Small raw images (about 6 KB, no integrity data): most mutations hit metadata, and many leave
# an image the checker calls clean, which fuzz_verify's oracle then reads whole.
S=$T/small
mkdir -p "$S/d/e" "$S/empty"
printf 'hi\n' > "$S/a"
head -c 5000 /dev/zero | tr '\0' q > "$S/b"
{ head -c 4096 /dev/zero; printf 'after'; } > "$S/sparse"
printf x > "$S/d/e/f"
ln -s a "$S/l"
ln "$S/a" "$S/h"
setfattr -n user.k -v val "$S/a"
setfattr -n user.z -v "$(printf '%0100d' 0)" "$S/d"
touch -h -d @1700000000 "$S" "$S"/* "$S"/*/* "$S"/*/*/*
mksquashfs "$S" "$OUT/raw-tiny-frag.sqfs" -comp gzip -b 4K -noI -noD -noF -noX -nopad -quiet \
	-no-progress -processors 1 >/dev/null
mksquashfs "$S" "$OUT/raw-tiny-nofrag.sqfs" -comp gzip -b 4K -noI -noD -noF -noX \
	-no-fragments -nopad -quiet -no-progress -processors 1 >/dev/null

# About 2000 nested directories (mksquashfs stops where the path exceeds PATH_MAX).
D=$T/deep
mkdir -p "$D"
python3 -c 'import os
os.chdir("'"$D"'")
for i in range(3000):
    os.mkdir("d"); os.chdir("d")' 2>/dev/null || true
mksquashfs "$D" "$OUT/mksq-deep.sqfs" -comp zstd -nopad -quiet -no-progress -processors 1 \
	-no-xattrs >/dev/null 2>&1
# A directory loop: entry a/b is pointed at the root inode (raw tables make the patch simple).
L=$T/loop
mkdir -p "$L/a/b"
echo x > "$L/a/f"
mksquashfs "$L" "$T/loop.sqfs" -noI -noD -noF -noX -nopad -quiet -no-progress -processors 1 \
	-no-xattrs >/dev/null
python3 - "$T/loop.sqfs" "$OUT/crafted-dir-loop.sqfs" <<'PY'
import struct, sys
d = bytearray(open(sys.argv[1], 'rb').read())
root = struct.unpack_from('<Q', d, 32)[0]
dirs = struct.unpack_from('<Q', d, 72)[0]
ent = d.index(b'\x01\x00\x00\x00b', dirs) - 4  # offset, inode delta, type 1, name_size 0, "b"
struct.pack_into('<H', d, ent, root & 0xFFFF)
open(sys.argv[2], 'wb').write(d)
PY
