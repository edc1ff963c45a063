#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# Fast checksums (issue 17, point 2: verified reads within 10% wall / 15% CPU). sqk mkimage
# writes an XXH3-64 of every chunk in a block at the end of the bytes the SHA-256 digests cover
# (common/integrity.h); verified reads use it unless a root hash is pinned.
# - the block is there, right (checked against libxxhash by check_superblock), and sqk info says
#   which checksums the image carries (text and --json); --no-checksums writes neither;
# - an image whose fast entry for one chunk is wrong but whose SHA-256 digests and root were
#   re-signed to match (so only the XXH3 path can see it): `sqk cat` and sqkfuse fail that read
#   (so the default reads use XXH3), `--root-hash` / `-o root_hash=` read the right bytes (so a
#   pin reads with SHA-256), `sqk verify` names the chunk whose fast checksum is wrong;
# - a flipped byte inside the block itself (not re-signed): the open falls back to SHA-256 with
#   one line saying so, every file reads right; `sqk verify` reports the block's chunk;
# - an image without the block (the same image with its integrity data rebuilt over the image
#   alone, as sqk built them before) reads verified with SHA-256: a flipped raw byte is caught,
#   and sqk info says SHA-256 only;
# - the kernel, unsquashfs and squashfuse read an image with the block.
. "$(dirname "$0")/lib.sh"
need_sqk
need_cmd python3 cmp
W=$(scratch fast)
SQKFUSE=$(dirname "$SQK")/sqkfuse

mkdir -p "$W/src/sub"
python3 - "$W/src" <<'PY'
import os, random, sys
r = random.Random(67)
d = sys.argv[1]
open(os.path.join(d, 'big.bin'), 'wb').write(r.randbytes(1 << 20))
open(os.path.join(d, 'other.bin'), 'wb').write(r.randbytes(300000))
open(os.path.join(d, 'sub/small.txt'), 'wb').write(b''.join(b'line %d\n' % i for i in range(3000)))
PY
sqk_build -q "$W/src" "$W/good.sqsh"
check_superblock "$W/good.sqsh" # the fast block's entries against libxxhash's XXH3-64

# 1. sqk info: which checksums.
"$SQK" info "$W/good.sqsh" >"$W/info.txt" || fail "sqk info failed"
grep -q '^integrity: *SHA-256 per 64 KiB chunk, XXH3-64 for verified reads$' "$W/info.txt" ||
	{ cat "$W/info.txt" >&2; fail "sqk info does not name both checksums"; }
"$SQK" info --json "$W/good.sqsh" >"$W/info.json" || fail "sqk info --json failed"
python3 - "$W/info.json" "$W/good.sqsh" <<'PY' || fail "sqk info --json: wrong checksums fields"
import json, struct, sys
j = json.load(open(sys.argv[1]))
d = open(sys.argv[2], 'rb').read()
covered = struct.unpack_from('<Q', d, len(d) - 112)[0]
at = covered - struct.unpack_from('<Q', d, covered - 24)[0]
assert j['checksums'] == ['SHA-256', 'XXH3-64'], j['checksums']
assert j['fast_checksum_chunks'] == at // 65536, (j['fast_checksum_chunks'], at)
PY
sqk_build -q --no-checksums "$W/src" "$W/plain.sqsh"
python3 - "$W/plain.sqsh" <<'PY' || fail "--no-checksums wrote fast checksums"
import sys
assert b'SQKFAST1' not in open(sys.argv[1], 'rb').read()
PY
"$SQK" info --json "$W/plain.sqsh" | python3 -c '
import json, sys
j = json.load(sys.stdin)
assert j["checksums"] == [] and j["fast_checksum_chunks"] is None, j' ||
	fail "sqk info --json of an image without integrity data: checksums not empty"
info "the block is written, right, and named by sqk info"

# 2. A wrong fast entry, the digests re-signed: the chunk of big.bin's byte 600000.
python3 - "$W/good.sqsh" "$W/src/big.bin" "$W/entry.sqsh" "$W/entry.txt" <<'PY' || fail "cannot craft the image"
import hashlib, struct, sys
img = bytearray(open(sys.argv[1], 'rb').read())
at = img.find(open(sys.argv[2], 'rb').read()[600000:600032])
assert at > 0
size = len(img)
tr = size - 128
cs, covered, _, n = struct.unpack_from('<IQQQ', img, tr + 12)
fat = covered - struct.unpack_from('<Q', img, covered - 24)[0]
k = at // cs
img[fat + 8 * k] ^= 0x01
kb = fat // cs  # the chunk holding that entry: its digest, then the root, re-signed
img[covered + 32 * kb:covered + 32 * kb + 32] = hashlib.sha256(img[kb * cs:min((kb + 1) * cs, covered)]).digest()
root = hashlib.sha256(bytes(img[tr:tr + 40]) + bytes(32) + bytes(img[tr + 72:tr + 128]) +
                      bytes(img[covered:covered + 32 * n])).digest()
img[tr + 40:tr + 72] = root
open(sys.argv[3], 'wb').write(img)
open(sys.argv[4], 'w').write('%d %s %d\n' % (k, root.hex(), k * cs))
PY
read -r K ROOT CS <"$W/entry.txt"
info "fast entry of chunk $K (bytes $CS..) made wrong, SHA-256 digests and root re-signed"
"$SQK" verify --root-hash "$ROOT" "$W/entry.sqsh" >"$W/v.out" 2>&1
RC=$?
[ "$RC" = 4 ] || { cat "$W/v.out" >&2; fail "sqk verify of the wrong entry exited $RC (want 4)"; }
grep -q "integrity error in fast checksums .*: fast checksum of chunk $K (bytes $CS\.\.$((CS + 65535))) does not match the chunk, which matches its SHA-256 digest" "$W/v.out" ||
	{ cat "$W/v.out" >&2; fail "sqk verify does not name chunk $K's fast checksum"; }
[ "$(grep -c 'integrity error' "$W/v.out")" = 1 ] || { cat "$W/v.out" >&2; fail "sqk verify: not exactly one finding"; }
run_capture cat "$SQK" cat "$W/entry.sqsh" big.bin
[ "$RC" = 1 ] || { show_err; fail "sqk cat (XXH3 path) of the chunk with the wrong entry exited $RC"; }
grep -q "integrity check failed at image offset $CS (bytes $CS\.\.$((CS + 65535)), chunk $K," "$ERR_FILE" ||
	{ show_err; fail "sqk cat: no message naming chunk $K"; }
run_capture catpin "$SQK" cat --root-hash "$ROOT" "$W/entry.sqsh" big.bin
[ "$RC" = 0 ] || { show_err; fail "sqk cat --root-hash (SHA-256 path) exited $RC"; }
cmp -s "$OUT_FILE" "$W/src/big.bin" || fail "sqk cat --root-hash: wrong bytes"
run_capture catother "$SQK" cat "$W/entry.sqsh" other.bin
[ "$RC" = 0 ] && cmp -s "$OUT_FILE" "$W/src/other.bin" || { show_err; fail "sqk cat other.bin: not read right"; }
if [ -x "$SQKFUSE" ] && [ -e /dev/fuse ] && command -v fusermount3 >/dev/null 2>&1; then
	fuse_mount "$W/entry.sqsh" "$W/m1"
	cat "$W/m1/big.bin" >/dev/null 2>&1 && fail "sqkfuse served the chunk with the wrong fast checksum"
	cmp -s "$W/m1/other.bin" "$W/src/other.bin" || fail "sqkfuse: other.bin wrong"
	fuse_umount "$W/m1"
	fuse_mount "$W/entry.sqsh" "$W/m2" -o "root_hash=$ROOT"
	cmp -s "$W/m2/big.bin" "$W/src/big.bin" || fail "sqkfuse -o root_hash: big.bin not read right (SHA-256 path)"
	fuse_umount "$W/m2"
	info "sqkfuse: EIO on the XXH3 path, right bytes with -o root_hash"
else
	info "sqkfuse cases skipped: no /dev/fuse or fusermount3"
fi

# 3. A flipped byte inside the fast block (not re-signed). With 64 KiB chunks here the block
# shares its chunk with the image's tables: the open fails as for any damage to them, naming
# the chunk (and saying the block is not used). With 4 KiB chunks the block has chunks of its
# own: the open falls back to SHA-256 with one line, every file reads right.
flip_block() {
	python3 - "$1" "$2" <<'PY' || fail "cannot corrupt the block of $1"
import struct, sys
img = bytearray(open(sys.argv[1], 'rb').read())
covered = struct.unpack_from('<Q', img, len(img) - 112)[0]
fat = covered - struct.unpack_from('<Q', img, covered - 24)[0]
img[fat + 3] ^= 0x20
open(sys.argv[2], 'wb').write(img)
PY
}
flip_block "$W/good.sqsh" "$W/block.sqsh"
run_capture catblk "$SQK" cat "$W/block.sqsh" big.bin
[ "$RC" = 1 ] && [ ! -s "$OUT_FILE" ] || { show_err; fail "sqk cat with a damaged block (and tables' chunk) exited $RC"; }
grep -q "fast checksum block ending at image offset [0-9]* not used (chunk [0-9]* does not match its digest): reads are checked with SHA-256" "$ERR_FILE" &&
	grep -q "integrity check failed at image offset [0-9]*: bytes [0-9.]* (chunk [0-9]*) do not match their digest" "$ERR_FILE" ||
	{ show_err; fail "sqk cat: the damaged block's chunk is not named"; }
mkdir -p "$W/src4"
python3 -c 'import random, sys; open(sys.argv[1], "wb").write(random.Random(4).randbytes(5 << 20))' "$W/src4/f.bin"
sqk_build -q --checksum-chunk 4K "$W/src4" "$W/c4.sqsh"
check_superblock "$W/c4.sqsh"
"$SQK" info "$W/c4.sqsh" | grep -q '^integrity: *SHA-256 per 4 KiB chunk, XXH3-64 for verified reads$' ||
	fail "sqk info of a 4 KiB-chunk image"
flip_block "$W/c4.sqsh" "$W/c4b.sqsh"
run_capture catblk4 "$SQK" cat "$W/c4b.sqsh" f.bin
[ "$RC" = 0 ] || { show_err; fail "sqk cat with a damaged fast block (chunks of its own) exited $RC"; }
cmp -s "$OUT_FILE" "$W/src4/f.bin" || fail "sqk cat with a damaged fast block: wrong bytes"
grep -q "fast checksum block ending at image offset [0-9]* not used (chunk [0-9]* does not match its digest): reads are checked with SHA-256" "$ERR_FILE" ||
	{ show_err; fail "sqk cat: no line saying the fast checksums are not used"; }
[ "$(grep -c . "$ERR_FILE")" = 1 ] || { show_err; fail "sqk cat: more than the one line"; }
"$SQK" verify "$W/c4b.sqsh" >"$W/v2.out" 2>&1
RC=$?
[ "$RC" = 4 ] && grep -q "integrity error in fast checksums .*chunk digest mismatch" "$W/v2.out" ||
	{ cat "$W/v2.out" >&2; fail "sqk verify of the damaged block: exit $RC, no finding in the fast checksums"; }
info "a damaged block: the open fails when the tables share its chunk, else SHA-256 for every read, said once; verify names it"

# 4. The same image as sqk wrote it before the fast checksums: SHA-256 only.
python3 - "$W/good.sqsh" "$W/old.sqsh" <<'PY' || fail "cannot rebuild the old layout"
import hashlib, struct, sys
img = open(sys.argv[1], 'rb').read()
tr = img[-128:]
cs, covered = struct.unpack_from('<IQ', tr, 12)
fat = covered - struct.unpack_from('<Q', img, covered - 24)[0]
data = img[:fat]
n = (fat + cs - 1) // cs
dig = b''.join(hashlib.sha256(data[k * cs:(k + 1) * cs]).digest() for k in range(n))
pad = (4096 - (fat + 32 * n + 128) % 4096) % 4096
t = bytearray(tr)
struct.pack_into('<IIQQQ', t, 8, 1, cs, fat, fat, n)
t[40:72] = bytes(32)
t[40:72] = hashlib.sha256(bytes(t) + dig).digest()
open(sys.argv[2], 'wb').write(data + dig + bytes(pad) + bytes(t))
PY
check_superblock "$W/old.sqsh"
"$SQK" info "$W/old.sqsh" | grep -q '^integrity: *SHA-256 per 64 KiB chunk$' ||
	fail "sqk info of an image without fast checksums does not say SHA-256 only"
run_capture catold "$SQK" cat "$W/old.sqsh" big.bin
[ "$RC" = 0 ] && cmp -s "$OUT_FILE" "$W/src/big.bin" && [ ! -s "$ERR_FILE" ] ||
	{ show_err; fail "sqk cat of the old layout"; }
"$SQK" verify "$W/old.sqsh" >/dev/null || fail "sqk verify of the old layout is not clean"
python3 - "$W/old.sqsh" "$W/src/big.bin" <<'PY' || fail "cannot flip the byte"
import sys
img = bytearray(open(sys.argv[1], 'rb').read())
at = img.find(open(sys.argv[2], 'rb').read()[600000:600032])
img[at + 16] ^= 0x5a
open(sys.argv[1], 'wb').write(img)
PY
run_capture catold2 "$SQK" cat "$W/old.sqsh" big.bin
[ "$RC" = 1 ] && grep -q "/big.bin: .*integrity check failed at image offset" "$ERR_FILE" ||
	{ show_err; fail "sqk cat of the old layout with a flipped raw byte exited $RC"; }
info "an image without the block: verified with SHA-256"

# 5. Readers that know nothing of the block.
if command -v unsquashfs >/dev/null 2>&1; then
	unsquashfs -d "$W/x" "$W/good.sqsh" >/dev/null 2>&1 || fail "unsquashfs rejects the image"
	python3 "$IT_DIR/treecmp.py" "$W/src" "$W/x" >"$W/tc.out" 2>&1 || fail "unsquashfs: $(tail -3 "$W/tc.out")"
	info "unsquashfs reads it"
fi
