#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# Integrity data: a default image carries it (checked independently by check_superblock) and
# still mounts with the kernel, extracts with unsquashfs and mounts with squashfuse, identical to
# the source; `sqk info` shows the root hash mkimage printed; --no-checksums leaves none and
# such an image reads unchecked (silently; --verify says it is unverified); one byte flipped in
# a file's data fails that file only, by default as with the old `--verify` / `-o verify` (sqk
# cat: one message naming the path and the chunk; sqkfuse: EIO, logged with the path; other
# files intact; the mount stays up), while with --no-verify / -o noverify the same read returns
# wrong data without an error. (t_66_verify_default covers cat, extract, tar and sqk mount.)
. "$(dirname "$0")/lib.sh"
need_sqk
need_cmd python3
W=$(scratch integ)

# 1. The rich tree with default options: integrity data, ignored by the other readers.
$MKTREE "$W/src" || fail "mktree failed"
sqk_build "$W/src" "$W/img.sqsh"
check_superblock "$W/img.sqsh"
root=$(awk '$1 == "root" && $2 == "hash" { print $3 }' "$TMP/build.out")
[ ${#root} = 64 ] || fail "mkimage printed no root hash: $(cat "$TMP/build.out")"
info "root hash $root"
got=$("$SQK" info "$W/img.sqsh" | awk '/^root hash:/ { print $3 }')
[ "$got" = "$root" ] || fail "sqk info shows root hash '$got', mkimage printed $root"
"$SQK" info --json "$W/img.sqsh" >"$TMP/info.json" || fail "sqk info --json failed"
python3 - "$TMP/info.json" "$root" <<'PY' || fail "sqk info --json: bad integrity keys"
import json, sys
j = json.load(open(sys.argv[1]))
assert j["root_hash"] == sys.argv[2], j["root_hash"]
assert j["integrity_chunk_size"] == 65536 and j["integrity"] == "ok", j
PY
# reproducible: the same input gives the same bytes, hence the same root
sqk_build -q "$W/src" "$W/img2.sqsh"
[ ! -s "$TMP/build.out" ] || fail "-q printed: $(cat "$TMP/build.out")"
cmp -s "$W/img.sqsh" "$W/img2.sqsh" || fail "two builds of the same tree differ"
rm -f "$W/img2.sqsh"
# a verified extraction of everything (the default), and with the old --verify
must "$SQK" extract "$W/img.sqsh" "$W/vx"
tree_equal "sqk extract" "$W/src" "$W/vx"
rm -rf "$W/vx"
must "$SQK" extract --verify "$W/img.sqsh" "$W/vx"
tree_equal "sqk extract --verify" "$W/src" "$W/vx"
rm -rf "$W/vx"

if [ "$(id -u)" = 0 ] && [ -e /dev/loop-control ] && grep -qw squashfs /proc/filesystems; then
	mount_sq "$W/img.sqsh" "$W/kmnt"
	tree_equal "kernel mount" "$W/src" "$W/kmnt"
	umount_sq "$W/kmnt"
else
	info "no kernel squashfs mounts here; skipped that part"
fi
if command -v unsquashfs >/dev/null; then
	extract "$W/img.sqsh" "$W/ux"
	tree_equal "unsquashfs" "$W/src" "$W/ux"
	rm -rf "$W/ux"
fi
squashfuse_equal "$W/img.sqsh" "$W/src" "$W/sfmnt"

# 2. --no-checksums: nothing after the padding; read unverified, silently; --verify says so.
C=$W/c
mkdir -p "$C/src"
python3 - "$C/src" <<'PY'
import os, random, sys
r = random.Random(65)
d = sys.argv[1]
open(os.path.join(d, 'raw.bin'), 'wb').write(r.randbytes(1 << 20))
open(os.path.join(d, 'other.bin'), 'wb').write(r.randbytes(300000))
open(os.path.join(d, 'text.txt'), 'wb').write(b''.join(b'line %d of some text\n' % i for i in range(40000)))
PY
sqk_build -q --no-fragments --no-checksums "$C/src" "$C/plain.sqsh"
check_superblock "$C/plain.sqsh" --no-checksums
"$SQK" info "$C/plain.sqsh" | grep -q '^integrity: *none$' || fail "sqk info does not say 'integrity: none'"
run_capture catplain "$SQK" cat --verify "$C/plain.sqsh" raw.bin
[ "$RC" = 0 ] || { show_err; fail "sqk cat --verify on an image without integrity data failed"; }
cmp -s "$OUT_FILE" "$C/src/raw.bin" || fail "sqk cat --verify (no integrity data): wrong bytes"
grep -q "no integrity data.*reads are not verified" "$ERR_FILE" ||
	{ show_err; fail "no 'not verified' notice"; }
run_capture catplain "$SQK" cat "$C/plain.sqsh" raw.bin
[ "$RC" = 0 ] && [ ! -s "$ERR_FILE" ] || { show_err; fail "sqk cat (no integrity data): exit $RC or a message"; }
cmp -s "$OUT_FILE" "$C/src/raw.bin" || fail "sqk cat (no integrity data): wrong bytes"

# 3. One byte flipped inside raw.bin's data (raw blocks are stored as is: find it by content).
sqk_build -q --no-fragments "$C/src" "$C/good.sqsh"
cp "$C/good.sqsh" "$C/bad.sqsh"
python3 - "$C/bad.sqsh" "$C/src/raw.bin" <<'PY' || fail "cannot corrupt the image"
import sys
img = bytearray(open(sys.argv[1], 'rb').read())
needle = open(sys.argv[2], 'rb').read()[600000:600032]
at = img.find(needle)
assert at > 0 and img.find(needle, at + 1) < 0, at
img[at + 16] ^= 0x5a
open(sys.argv[1], 'wb').write(img)
# the flipped chunk has a fast checksum: the default reads below check it with XXH3-64
import struct
covered = struct.unpack_from('<Q', img, len(img) - 112)[0]
assert img[covered - 8:covered] == b'SQKFAST1', 'no fast checksum block'
assert (at + 16) // 65536 < struct.unpack_from('<Q', img, covered - 32)[0], 'chunk without an entry'
PY
"$SQK" info "$C/good.sqsh" | grep -q '^integrity: *SHA-256 per 64 KiB chunk, XXH3-64 for verified reads$' ||
	fail "sqk info does not say the reads use XXH3-64"
for v in "" --verify; do
	run_capture catbad "$SQK" cat $v "$C/bad.sqsh" raw.bin
	[ "$RC" = 1 ] || fail "sqk cat $v of the corrupted file exited $RC"
	grep -q "^sqk cat: .*: /raw.bin: read failed at file offset [0-9]*: integrity check failed at image offset [0-9]* (bytes [0-9]*\.\.[0-9]*, chunk [0-9]*, do not match their digest; in the block at file offset 524288)$" \
		"$ERR_FILE" || { show_err; fail "no integrity message naming the path and the chunk"; }
	[ "$(wc -l <"$ERR_FILE")" = 1 ] || { show_err; fail "more than one line"; }
	for f in other.bin text.txt; do
		run_capture catok "$SQK" cat $v "$C/bad.sqsh" "$f"
		[ "$RC" = 0 ] || { show_err; fail "sqk cat $v $f (intact) failed"; }
		cmp -s "$OUT_FILE" "$C/src/$f" || fail "sqk cat $v $f: wrong bytes"
	done
done
run_capture catnov "$SQK" cat --no-verify "$C/bad.sqsh" raw.bin
[ "$RC" = 0 ] || { show_err; fail "sqk cat --no-verify failed"; }
if cmp -s "$OUT_FILE" "$C/src/raw.bin"; then fail "the corruption did not change the file"; fi
info "with --no-verify the corrupted file reads without error (and wrong)"

# 4. sqkfuse on the corrupted image: verified by default, and with the old -o verify.
SQKFUSE=${SQKFUSE:-$(dirname "$SQK")/sqkfuse}
if [ "$(id -u)" != 0 ] || [ ! -e /dev/fuse ] || [ ! -x "$SQKFUSE" ] ||
	! command -v fusermount3 >/dev/null; then
	info "no FUSE here (root, /dev/fuse, sqkfuse, fusermount3); skipped the sqkfuse part"
	exit 0
fi

for v in "" "-o verify"; do
	fuse_mount "$C/bad.sqsh" "$C/m" $v
	if cat "$C/m/raw.bin" >/dev/null 2>"$TMP/cat.err"; then fail "reading the corrupted file succeeded"; fi
	grep -q "Input/output error" "$TMP/cat.err" || fail "not EIO: $(cat "$TMP/cat.err")"
	cmp -s "$C/m/other.bin" "$C/src/other.bin" || fail "other.bin differs through the mount"
	cmp -s "$C/m/text.txt" "$C/src/text.txt" || fail "text.txt differs through the mount"
	# the start of raw.bin (before the damaged chunk) still reads
	cmp -s <(head -c 131072 "$C/m/raw.bin") <(head -c 131072 "$C/src/raw.bin") ||
		fail "the intact start of raw.bin does not read"
	mountpoint -q "$C/m" || fail "the mount went away"
	ls "$C/m" >/dev/null || fail "listing the mount failed"
	grep -q "raw.bin: read at offset" "$TMP/fuse.err" || { cat "$TMP/fuse.err" >&2; fail "log does not name raw.bin"; }
	grep -q "integrity check failed" "$TMP/fuse.err" || { cat "$TMP/fuse.err" >&2; fail "log has no integrity message"; }
	fuse_umount "$C/m"
done

# With -o noverify the same read returns wrong data and no error.
fuse_mount "$C/bad.sqsh" "$C/m" -o noverify
cat "$C/m/raw.bin" >"$TMP/raw.out" || fail "unverified read of the corrupted file failed"
if cmp -s "$TMP/raw.out" "$C/src/raw.bin"; then fail "unverified read returned the right bytes?"; fi
fuse_umount "$C/m"

# An image without integrity data: served; with -o verify sqkfuse says it is unverified, once.
fuse_mount "$C/plain.sqsh" "$C/m"
cmp -s "$C/m/raw.bin" "$C/src/raw.bin" || fail "raw.bin differs (image without integrity data)"
if grep -q "integrity" "$TMP/fuse.err"; then cat "$TMP/fuse.err" >&2; fail "sqkfuse logged about integrity"; fi
fuse_umount "$C/m"
fuse_mount "$C/plain.sqsh" "$C/m" -o verify
cmp -s "$C/m/raw.bin" "$C/src/raw.bin" || fail "raw.bin differs (image without integrity data)"
grep -q "no integrity data; reads are not verified" "$TMP/fuse.err" ||
	{ cat "$TMP/fuse.err" >&2; fail "sqkfuse did not log the missing integrity data"; }
[ "$(grep -c "no integrity data" "$TMP/fuse.err")" = 1 ] || fail "logged more than once"
fuse_umount "$C/m"
