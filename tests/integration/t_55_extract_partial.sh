#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# A file whose extraction fails half way is removed, never left with short or wrong bytes
# (issue 30, point 1). The image (gzip: a flipped byte in a compressed block fails to
# decompress) holds a.txt, docs/b.txt, docs/text.txt (compressible, several blocks) and
# z/big.bin (1 MiB of random bytes: raw blocks) with a second name z/zlink.bin, in this order.
#  1. one byte of big.bin's data flipped (found by its content): `sqk extract` (default, -j 1,
#     -j 4) exits 1 with one line naming /z/big.bin, the bad chunk and "removed the partial file
#     DEST/z/big.bin"; neither z/big.bin nor its hard link z/zlink.bin exists; every file
#     written is whole (-j 1: the three before big.bin); the summary says "(1 partial file
#     removed)"; no temporary .sqk-partial.* name is left
#  2. --force over a DEST holding older versions: z/big.bin and z/zlink.bin keep their old
#     contents (the new file was written under a temporary name, removed); the others are the
#     old or the new version, whole, never a mix
#  3. the write side: big.bin over RLIMIT_FSIZE (EFBIG after 900 KiB) is removed as well, and
#     under --force the old version is kept
#  4. --no-verify: the byte flipped in a raw block is not noticed (exit 0, exactly that byte
#     differs: what --no-verify means); a byte flipped in a gzip block of docs/text.txt fails
#     to decompress: extract removes text.txt; cat and tar exit 1 naming /docs/text.txt and a
#     file offset, cat's output is a prefix of the right bytes; sqkfuse -o noverify gives EIO
. "$(dirname "$0")/lib.sh"
need_sqk
need_cmd python3 cmp
W=$(scratch xpart)

mkdir -p "$W/src/docs" "$W/src/z"
python3 - "$W/src" <<'PY'
import os, random, sys
r = random.Random(55)
d = sys.argv[1]
open(os.path.join(d, 'a.txt'), 'wb').write(b''.join(b'a line %d\n' % i for i in range(500)))
open(os.path.join(d, 'docs/b.txt'), 'wb').write(b'small b\n' * 50)
open(os.path.join(d, 'docs/text.txt'), 'wb').write(
    b''.join(b'text line %d %x\n' % (i, r.getrandbits(32)) for i in range(30000)))
open(os.path.join(d, 'z/big.bin'), 'wb').write(r.randbytes(1 << 20))
PY
ln "$W/src/z/big.bin" "$W/src/z/zlink.bin"
sqk_build -q -c gzip "$W/src" "$W/good.sqsh"

# bad.sqsh: big.bin's byte at file offset 600016 (block 4, from file offset 524288) flipped;
# prints the image offset of the byte.
cp "$W/good.sqsh" "$W/bad.sqsh"
AT=$(python3 - "$W/bad.sqsh" "$W/src/z/big.bin" <<'PY'
import sys
img = bytearray(open(sys.argv[1], 'rb').read())
needle = open(sys.argv[2], 'rb').read()[600000:600032]
at = img.find(needle)
assert at > 0 and img.find(needle, at + 1) < 0, at
img[at + 16] ^= 0x5a
open(sys.argv[1], 'wb').write(img)
print(at + 16)
PY
) || fail "cannot corrupt big.bin's data"
CS=$((AT / 65536 * 65536))
info "flipped image byte $AT of /z/big.bin's data (chunk $((AT / 65536)))"

# gz.sqsh: a byte in the middle of docs/text.txt's compressed blocks flipped (found with the
# image layout); read with --no-verify, so that the block is decompressed (a verified read
# would refuse its chunk first).
TXT=$(python3 "$IT_DIR/sqfs_patch.py" layout "$W/good.sqsh" | python3 -c '
import json, sys
d = json.load(sys.stdin)["data"]
s, e = [(s, e) for s, e, what in d if what == "data of /docs/text.txt"][0]
print(s, e)') || fail "cannot find docs/text.txt's blocks"
read -r TS TE <<<"$TXT"
[ $((TE - TS)) -gt 65536 ] || fail "docs/text.txt has only $((TE - TS)) bytes of blocks"
cp "$W/good.sqsh" "$W/gz.sqsh"
python3 - "$W/gz.sqsh" $(((TS + TE) / 2)) <<'PY'
import sys
img = bytearray(open(sys.argv[1], 'rb').read())
img[int(sys.argv[2])] ^= 0x5a
open(sys.argv[1], 'wb').write(img)
PY

# no_partial D: no temporary name is left anywhere in D.
no_partial() {
	local left
	left=$(find "$1" -name '.sqk-partial*')
	[ -z "$left" ] || fail "temporary files left: $left"
}

# whole_or_absent D F...: each F under D is missing or equal to the source's.
whole_or_absent() {
	local d=$1 f
	shift
	for f in "$@"; do
		[ ! -e "$d/$f" ] || cmp -s "$d/$f" "$W/src/$f" || fail "$d/$f exists and is not whole"
	done
}

# ---- 1. a corrupt block in big.bin -----------------------------------------------------------
for j in "" "-j 1" "-j 4"; do
	D=$W/x$j
	D=${D// /}
	run_capture ex "$SQK" extract $j "$W/bad.sqsh" "$D"
	[ "$RC" = 1 ] || { show_err; fail "extract $j of the corrupted image exited $RC"; }
	grep -q "^sqk extract: .*: /z/big.bin: read failed at file offset [0-9]*: integrity check failed at image offset $CS (.*): removed the partial file $D/z/big.bin\$" "$ERR_FILE" ||
		{ show_err; fail "extract $j: no line naming /z/big.bin, its chunk and the removal"; }
	[ "$(grep -c "integrity check failed" "$ERR_FILE")" = 1 ] ||
		{ show_err; fail "extract $j: the failure is not printed once"; }
	[ ! -e "$D/z/big.bin" ] || fail "extract $j left z/big.bin ($(stat -c %s "$D/z/big.bin") bytes)"
	[ ! -e "$D/z/zlink.bin" ] || fail "extract $j made the hard link z/zlink.bin"
	whole_or_absent "$D" a.txt docs/b.txt docs/text.txt
	no_partial "$D"
	grep -Eq "^sqk extract: .*: extracted [0-3] of 4 files into $D before the error \\(1 partial file removed\\); $D is incomplete\$" "$ERR_FILE" ||
		{ show_err; fail "extract $j: the summary does not count the removed file"; }
	[ "$j" != "-j 1" ] || grep -q "extracted 3 of 4 files" "$ERR_FILE" ||
		{ show_err; fail "extract -j 1: not the three files before big.bin"; }
done
# one thread: the files before big.bin are all written
for f in a.txt docs/b.txt docs/text.txt; do
	cmp -s "$W/x-j1/$f" "$W/src/$f" || fail "extract -j 1: $f is not whole"
done
info "a corrupt block: big.bin removed, its hard link not made, the other files whole"

# ---- 2. --force over older versions ----------------------------------------------------------
# old_dest D: a DEST holding older versions of a.txt, z/big.bin and z/zlink.bin, and a file the
# image does not have.
old_dest() {
	rm -rf "$1"
	mkdir -p "$1/z"
	echo "old a" >"$1/a.txt"
	echo "old big" >"$1/z/big.bin"
	echo "old link" >"$1/z/zlink.bin"
	echo "keep" >"$1/extra"
}

# old_kept D: z/big.bin and z/zlink.bin as old_dest made them; a.txt old or new, whole.
old_kept() {
	[ "$(cat "$1/z/big.bin")" = "old big" ] || fail "--force: z/big.bin is not the old version"
	[ "$(cat "$1/z/zlink.bin")" = "old link" ] || fail "--force: z/zlink.bin is not the old version"
	[ "$(cat "$1/extra")" = keep ] || fail "--force: extra changed"
	[ "$(cat "$1/a.txt")" = "old a" ] || cmp -s "$1/a.txt" "$W/src/a.txt" ||
		fail "--force: a.txt is neither the old nor the new version"
	whole_or_absent "$1" docs/b.txt docs/text.txt
	no_partial "$1"
}

for j in 1 4; do
	D=$W/force$j
	old_dest "$D"
	run_capture exf "$SQK" extract --force -j $j "$W/bad.sqsh" "$D"
	[ "$RC" = 1 ] || { show_err; fail "extract --force -j $j exited $RC"; }
	grep -q "^sqk extract: .*: /z/big.bin: read failed at .*: removed the partial file; $D/z/big.bin is kept as it was\$" "$ERR_FILE" ||
		{ show_err; fail "extract --force -j $j: the message does not say the old file is kept"; }
	old_kept "$D"
done
cmp -s "$W/force1/a.txt" "$W/src/a.txt" || fail "--force -j 1: a.txt (before big.bin) not replaced"
# and from the intact image every entry is replaced, the hard link made, also where DEST holds
# a directory (rename cannot replace one: it is removed once the file is whole)
rm "$W/force1/z/zlink.bin"
mkdir -p "$W/force1/z/zlink.bin/d" "$W/force1/docs/b.txt/d"
echo in-the-way >"$W/force1/docs/b.txt/d/f"
run_capture exok "$SQK" extract --force "$W/good.sqsh" "$W/force1"
[ "$RC" = 0 ] || { show_err; fail "extract --force of the intact image exited $RC"; }
for f in a.txt docs/b.txt docs/text.txt z/big.bin z/zlink.bin; do
	cmp -s "$W/force1/$f" "$W/src/$f" || fail "--force of the intact image: $f is wrong"
done
[ "$(stat -c %i "$W/force1/z/big.bin")" = "$(stat -c %i "$W/force1/z/zlink.bin")" ] ||
	fail "--force of the intact image: z/zlink.bin is not a hard link of z/big.bin"
no_partial "$W/force1"
info "--force: the old big.bin and zlink.bin kept after the failure, replaced from a good image"

# ---- 3. a failed write (EFBIG at 900 KiB) ----------------------------------------------------
run_capture efbig bash -c "trap '' XFSZ; ulimit -f 900; exec '$SQK' extract -j 1 '$W/good.sqsh' '$W/fb'"
[ "$RC" = 1 ] || { show_err; fail "extract over the file size limit exited $RC"; }
grep -q "^sqk extract: .*: /z/big.bin: write failed: File too large (in $W/fb): removed the partial file $W/fb/z/big.bin\$" "$ERR_FILE" ||
	{ show_err; fail "EFBIG: no line naming /z/big.bin and its removal"; }
[ ! -e "$W/fb/z/big.bin" ] || fail "EFBIG: z/big.bin left ($(stat -c %s "$W/fb/z/big.bin") bytes)"
for f in a.txt docs/b.txt docs/text.txt; do
	cmp -s "$W/fb/$f" "$W/src/$f" || fail "EFBIG: $f is not whole"
done
no_partial "$W/fb"
old_dest "$W/fbf"
run_capture efbigf bash -c "trap '' XFSZ; ulimit -f 900; exec '$SQK' extract --force -j 1 '$W/good.sqsh' '$W/fbf'"
[ "$RC" = 1 ] || { show_err; fail "extract --force over the file size limit exited $RC"; }
grep -q "/z/big.bin: write failed: File too large .*: removed the partial file; $W/fbf/z/big.bin is kept as it was\$" "$ERR_FILE" ||
	{ show_err; fail "EFBIG --force: no line saying the old file is kept"; }
old_kept "$W/fbf"
info "a failed write: big.bin removed (the old version kept under --force)"

# ---- 4. --no-verify --------------------------------------------------------------------------
# a flipped byte in a raw block decompresses: not noticed, by definition
run_capture nv "$SQK" extract --no-verify "$W/bad.sqsh" "$W/nv"
[ "$RC" = 0 ] || { show_err; fail "extract --no-verify exited $RC"; }
[ "$(cmp "$W/nv/z/big.bin" "$W/src/z/big.bin" | sed 's/.*byte \([0-9]*\),.*/\1/')" = 600017 ] ||
	fail "extract --no-verify: not exactly the flipped byte differs"
# a flipped byte in a gzip block does not decompress: text.txt removed
run_capture nvgz "$SQK" extract --no-verify -j 1 "$W/gz.sqsh" "$W/nvgz"
[ "$RC" = 1 ] || { show_err; fail "extract --no-verify of the bad gzip block exited $RC"; }
grep -q "^sqk extract: .*: /docs/text.txt: read failed at file offset [0-9]*: .*: removed the partial file $W/nvgz/docs/text.txt\$" "$ERR_FILE" ||
	{ show_err; fail "bad gzip block: no line naming /docs/text.txt and its removal"; }
[ ! -e "$W/nvgz/docs/text.txt" ] || fail "bad gzip block: docs/text.txt left"
whole_or_absent "$W/nvgz" a.txt docs/b.txt
no_partial "$W/nvgz"
# cat and tar cannot take back what they wrote: exit 1, a message, no wrong bytes
run_capture catgz "$SQK" cat --no-verify "$W/gz.sqsh" docs/text.txt
[ "$RC" = 1 ] || { show_err; fail "cat of the bad gzip block exited $RC"; }
grep -q "^sqk cat: .*: /docs/text.txt: read failed at file offset [0-9]*" "$ERR_FILE" ||
	{ show_err; fail "cat: no message naming /docs/text.txt and a file offset"; }
n=$(stat -c %s "$OUT_FILE")
[ "$n" -lt "$(stat -c %s "$W/src/docs/text.txt")" ] && cmp -s -n "$n" "$OUT_FILE" "$W/src/docs/text.txt" ||
	fail "cat of the bad gzip block: the output ($n bytes) is not a prefix of the right bytes"
run_capture targz "$SQK" tar --no-verify "$W/gz.sqsh"
[ "$RC" = 1 ] || { show_err; fail "tar of the bad gzip block exited $RC"; }
grep -q "^sqk tar: .*: /docs/text.txt: read failed at file offset [0-9]*" "$ERR_FILE" ||
	{ show_err; fail "tar: no message naming /docs/text.txt and a file offset"; }
info "--no-verify: a wrong byte that decompresses is extracted; a block that does not is not"

SQKFUSE=${SQKFUSE:-$(dirname "$SQK")/sqkfuse}
if [ "$(id -u)" != 0 ] || [ ! -e /dev/fuse ] || [ ! -x "$SQKFUSE" ] ||
	! command -v fusermount3 >/dev/null; then
	info "no FUSE here (root, /dev/fuse, sqkfuse, fusermount3); skipped the mount part"
	exit 0
fi
fuse_mount "$W/gz.sqsh" "$W/m" -o noverify
if cat "$W/m/docs/text.txt" >"$W/fuse.out" 2>"$W/cat.err"; then
	fail "sqkfuse: reading the bad gzip block succeeded"
fi
grep -q "Input/output error" "$W/cat.err" || fail "sqkfuse: not EIO: $(cat "$W/cat.err")"
n=$(stat -c %s "$W/fuse.out")
cmp -s -n "$n" "$W/fuse.out" "$W/src/docs/text.txt" || fail "sqkfuse: the bytes read are wrong"
cmp -s "$W/m/a.txt" "$W/src/a.txt" || fail "sqkfuse: a.txt differs through the mount"
fuse_umount "$W/m"
info "sqkfuse -o noverify: EIO for the bad gzip block after $n right bytes"
