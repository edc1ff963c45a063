#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# A cut or damaged trailer never turns verification off (issue 30, point 1):
#  1. an image with one byte flipped in a file's raw data block (a byte that still "decompresses")
#     and its last byte cut off: sqk cat/extract/ls/info refuse it naming the file, its size and
#     the image's padded end; --no-verify reads it (the wrong byte); sqk verify says "integrity
#     data truncated" with exit 4
#  2. the trailer cut at every length from 1 byte to the whole trailer, then at every 4 KiB
#     boundary and inside the digests (of a flat and of a digest-tree image, inside a digest
#     group): every read refuses; cut exactly at the padded end: no integrity data (reads work,
#     info says none), and --require-integrity refuses it, as it refuses a --no-checksums image
#  3. a file grown with zeros after its whole integrity data reads verified (the flipped byte is
#     caught); one grown with zeros after the padded image has no integrity data
#  4. remote (nginx on 127.0.0.1): the cut image is refused, the image cut at its padded end
#     reads, --require-integrity refuses it
#  5. a block device (loop) over the cut file is refused; over the good file it reads verified
. "$(dirname "$0")/lib.sh"
need_sqk
need_cmd python3 cmp
W=$(scratch cut)

mkdir -p "$W/src/d"
head -c 300000 /dev/urandom >"$W/src/d/big"
seq 1 20000 >"$W/src/small"
sqk_build -c gzip "$W/src" "$W/good.sqsh"
# a digest tree of 4 KiB chunks in groups of 4096 digests: 20 MB give two groups
mkdir -p "$W/tsrc"
cp "$W/src/small" "$W/tsrc/"
head -c 20000000 /dev/urandom >"$W/tsrc/huge"
sqk_build -c gzip --digest-tree --checksum-chunk 4K "$W/tsrc" "$W/tree.sqsh"

# the padded end (bytes_used rounded up to 4 KiB) and the offset of a byte of big's data
read -r PADDED FLIP < <(python3 - "$W/good.sqsh" "$W/src/d/big" <<'PY'
import struct, sys
img = open(sys.argv[1], "rb").read()
big = open(sys.argv[2], "rb").read()
used = struct.unpack_from("<Q", img, 40)[0]
at = img.find(big[150000:150064])   # random bytes: stored raw, found once
assert at > 0 and img.find(big[150000:150064], at + 1) < 0
print((used + 4095) // 4096 * 4096, at + 10)
PY
) || fail "cannot find big's data in the image"
SIZE=$(stat -c %s "$W/good.sqsh")
[ "$SIZE" -gt "$PADDED" ] || fail "the image has no integrity data"

# flip one byte of big's data, cut the last byte
cp "$W/good.sqsh" "$W/flip.sqsh"
python3 - "$W/flip.sqsh" "$FLIP" <<'PY'
import sys
f = open(sys.argv[1], "r+b"); f.seek(int(sys.argv[2])); b = f.read(1)
f.seek(int(sys.argv[2])); f.write(bytes([b[0] ^ 0x5a]))
PY
head -c -1 "$W/flip.sqsh" >"$W/cut1.sqsh"

# ---- 1. the everyday partial copy --------------------------------------------------------
for cmd in "cat IMG d/big" "ls IMG" "info IMG" "extract IMG $W/x1"; do
	run_capture c1 "$SQK" ${cmd/IMG/$W/cut1.sqsh}
	[ "$RC" != 0 ] || fail "sqk $cmd of the cut image succeeded"
	grep -q "cut1.sqsh: integrity data truncated or damaged: the file has $((SIZE - 1)) bytes, the image ends at $PADDED" "$ERR_FILE" ||
		{ show_err; fail "sqk $cmd: no message naming the file, its size and the padded end"; }
done
[ ! -e "$W/x1/d/big" ] || fail "extract of the cut image wrote d/big"
run_capture c2 "$SQK" cat --no-verify "$W/cut1.sqsh" d/big
[ "$RC" = 0 ] || { show_err; fail "--no-verify did not read the cut image"; }
cmp -s "$OUT_FILE" "$W/src/d/big" && fail "--no-verify read the flipped byte right?"
[ "$(cmp "$OUT_FILE" "$W/src/d/big" | wc -l)" = 1 ] || fail "--no-verify: not one byte differs"
"$SQK" info --no-verify "$W/cut1.sqsh" | grep -q "^integrity: *corrupt" ||
	fail "sqk info --no-verify of the cut image does not say corrupt"
run_capture c3 "$SQK" verify "$W/cut1.sqsh"
[ "$RC" = 4 ] || { show_err; fail "sqk verify of the cut image: exit $RC, want 4"; }
grep -q "integrity data truncated" "$OUT_FILE" || fail "sqk verify does not say truncated"
grep -q "integrity: truncated" "$OUT_FILE" || fail "sqk verify's summary does not say truncated"
run_capture c4 "$SQK" verify --json "$W/cut1.sqsh"
grep -q '"integrity_truncated": true' "$OUT_FILE" || fail "verify --json: integrity_truncated"

# ---- 2. every cut ---------------------------------------------------------------------------
# cut_case IMG N: IMG without its last N bytes must be refused by a verified read
cut_case() {
	local img=$1 n=$2 size
	size=$(stat -c %s "$img")
	head -c $((size - n)) "$img" >"$W/c.sqsh"
	run_capture cc "$SQK" cat "$W/c.sqsh" small
	[ "$RC" != 0 ] || fail "$(basename "$img") cut by $n bytes: sqk cat read it"
	grep -q "integrity data truncated or damaged\|integrity data at the end of the file is not valid\|is damaged" "$ERR_FILE" ||
		{ show_err; fail "$(basename "$img") cut by $n bytes: not refused as damaged integrity data"; }
}
for img in "$W/good.sqsh" "$W/tree.sqsh"; do
	size=$(stat -c %s "$img")
	used=$(python3 -c 'import struct,sys; print(struct.unpack_from("<Q", open(sys.argv[1],"rb").read(96), 40)[0])' "$img")
	padded=$(((used + 4095) / 4096 * 4096))
	area=$((size - padded))
	for n in $(seq 1 128); do cut_case "$img" "$n"; done
	# every 4 KiB boundary of the area and one byte either side, and a sample in between
	for b in $(seq 4096 4096 $((area - 1))); do
		for n in $((b - 1)) $b $((b + 1)); do
			[ "$n" -lt "$area" ] && cut_case "$img" "$n"
		done
	done
	for n in $(seq 129 3989 $((area - 1))); do cut_case "$img" "$n"; done
	# exactly at the padded end: an image without integrity data
	head -c "$padded" "$img" >"$W/p.sqsh"
	run_capture pe "$SQK" cat "$W/p.sqsh" small
	[ "$RC" = 0 ] && cmp -s "$OUT_FILE" "$W/src/small" ||
		{ show_err; fail "$(basename "$img") cut at its padded end does not read"; }
	"$SQK" info "$W/p.sqsh" | grep -q "^integrity: *none" || fail "cut at the padded end: not none"
	run_capture pr "$SQK" cat --require-integrity "$W/p.sqsh" small
	[ "$RC" != 0 ] && [ ! -s "$OUT_FILE" ] || fail "--require-integrity read an image without it"
	grep -q "has no integrity data, and it is required" "$ERR_FILE" || { show_err; fail "--require-integrity: no message"; }
done
# inside a digest group of the tree image: the group digests follow the chunk digests, so a
# cut anywhere in [covered, end) is covered above; check the tree has several groups
"$SQK" info --json "$W/tree.sqsh" | grep -q '"digest_groups": [2-9]' || fail "tree: fewer than 2 groups"

sqk_build --no-checksums "$W/src" "$W/none.sqsh"
run_capture nr "$SQK" ls --require-integrity "$W/none.sqsh"
[ "$RC" != 0 ] || fail "--require-integrity listed a --no-checksums image"
run_capture nn "$SQK" ls "$W/none.sqsh"
[ "$RC" = 0 ] && grep -q small "$OUT_FILE" || fail "a --no-checksums image does not list"
run_capture nv "$SQK" verify "$W/none.sqsh"
[ "$RC" = 0 ] || { show_err; fail "verify of a --no-checksums image: exit $RC"; }

# ---- 3. grown with zeros ---------------------------------------------------------------------
cp "$W/flip.sqsh" "$W/grown.sqsh"
truncate -s $((SIZE + 1048576)) "$W/grown.sqsh"
run_capture g1 "$SQK" cat "$W/grown.sqsh" d/big
[ "$RC" != 0 ] || fail "a zero-grown image with a flipped byte read without an error"
grep -q "integrity\|does not match" "$ERR_FILE" || { show_err; fail "zero-grown: no integrity error"; }
"$SQK" info "$W/grown.sqsh" | grep -q "^root hash" || fail "zero-grown: info shows no root hash"
head -c "$PADDED" "$W/good.sqsh" >"$W/gp.sqsh"
truncate -s $((PADDED + 65536)) "$W/gp.sqsh"
run_capture g2 "$SQK" cat "$W/gp.sqsh" small
[ "$RC" = 0 ] && cmp -s "$OUT_FILE" "$W/src/small" || { show_err; fail "zero padding: not read"; }

# ---- 4. remote -------------------------------------------------------------------------------
if command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ]; then
	if have_feature remote; then
		mkdir -p "$W/www"
		cp "$W/cut1.sqsh" "$W/www/cut.sqsh"
		head -c "$PADDED" "$W/good.sqsh" >"$W/www/padded.sqsh"
		cp "$W/good.sqsh" "$W/www/good.sqsh"
		http_serve "$W/www"
		run_capture r1 "$SQK" cat --cache-size 0 "$HTTP_URL/cut.sqsh" d/big
		[ "$RC" != 0 ] || fail "remote: the cut image was read"
		grep -q "integrity data truncated or damaged" "$ERR_FILE" || { show_err; fail "remote: cut not named"; }
		run_capture r2 "$SQK" cat --cache-size 0 "$HTTP_URL/padded.sqsh" small
		[ "$RC" = 0 ] && cmp -s "$OUT_FILE" "$W/src/small" || { show_err; fail "remote: padded image not read"; }
		run_capture r3 "$SQK" cat --cache-size 0 --require-integrity "$HTTP_URL/padded.sqsh" small
		[ "$RC" != 0 ] || fail "remote: --require-integrity read an image without it"
		run_capture r4 "$SQK" cat --cache-size 0 --require-integrity "$HTTP_URL/good.sqsh" small
		[ "$RC" = 0 ] && cmp -s "$OUT_FILE" "$W/src/small" || { show_err; fail "remote: good image"; }
	else
		info "remote: built without it, skipped"
	fi
fi

# ---- 5. block devices ------------------------------------------------------------------------
if [ "$(id -u)" = 0 ] && command -v losetup >/dev/null 2>&1 &&
	LOOP=$(losetup -f --show -r "$W/cut1.sqsh" 2>/dev/null); then
	at_exit "losetup -d $LOOP"
	run_capture b1 "$SQK" cat "$LOOP" d/big
	[ "$RC" != 0 ] || fail "a loop device over the cut image was read"
	grep -q "integrity data truncated or damaged" "$ERR_FILE" || { show_err; fail "loop: not refused as cut"; }
	LOOP2=$(losetup -f --show -r "$W/flip.sqsh") || fail "losetup"
	at_exit "losetup -d $LOOP2"
	run_capture b2 "$SQK" cat "$LOOP2" d/big
	[ "$RC" != 0 ] && grep -q "does not match\|integrity" "$ERR_FILE" ||
		{ show_err; fail "loop: the flipped byte was not caught"; }
else
	info "no loop devices: block device part skipped"
fi
echo "ok"
