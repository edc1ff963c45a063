#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# Verified reads by default (issue 17, point 2). An image built by sqk (integrity data appended
# by default) gets one byte flipped inside a raw data block of big.bin (random bytes are stored
# uncompressed: the block is found by its content). Then, with no option:
# - `sqk cat`, `sqk extract` and `sqk tar` exit 1 with one message naming /big.bin, the image
#   offset of the bad chunk (and the file offset of the block), and never output the wrong
#   bytes: cat writes a prefix of the right content, extract (which stops at the first error)
#   removes the partial big.bin and says so, and what it wrote before is right, tar writes an
#   archive cut short without them;
# - the other files still read right; `ls`, `info` work; `sqk verify` finds the error (4);
# - `--verify` (the old option, now a no-op) does the same; `--no-verify` gives exit 0 and
#   the wrong bytes (so the test can fail);
# - an image without integrity data reads with no notice, and with one under --verify;
# - sqkfuse and `sqk mount`: EIO for big.bin (logged once), other files read, the mount stays
#   up; `-o noverify` serves the wrong bytes, `-o verify` is the default.
. "$(dirname "$0")/lib.sh"
need_sqk
need_cmd python3 cmp
W=$(scratch vdef)

mkdir -p "$W/src/sub/dir"
python3 - "$W/src" <<'PY'
import os, random, sys
r = random.Random(66)
d = sys.argv[1]
open(os.path.join(d, 'big.bin'), 'wb').write(r.randbytes(1 << 20))
open(os.path.join(d, 'other.bin'), 'wb').write(r.randbytes(300000))
open(os.path.join(d, 'small.txt'), 'wb').write(b''.join(b'line %d\n' % i for i in range(3000)))
open(os.path.join(d, 'sub/dir/nested.bin'), 'wb').write(r.randbytes(200000))
PY
sqk_build -q "$W/src" "$W/good.sqsh"
"$SQK" info "$W/good.sqsh" | grep -q '^root hash: *[0-9a-f]\{64\}$' ||
	fail "sqk info shows no root hash: the image has no integrity data"
"$SQK" info "$W/good.sqsh" | grep -q '^integrity: *SHA-256 per 64 KiB chunk, XXH3-64 for verified reads$' ||
	fail "sqk info: the image has no fast checksums (the default reads below would use SHA-256)"
ROOT=$("$SQK" info "$W/good.sqsh" | awk '/^root hash:/ { print $3 }')

# Flip one byte at big.bin's file offset 600016 (block 4 of 128 KiB, from file offset 524288).
# Prints the image offset of the byte and writes the flipped 32-byte window, which must never
# appear in any output of a verified read.
cp "$W/good.sqsh" "$W/bad.sqsh"
AT=$(python3 - "$W/bad.sqsh" "$W/src/big.bin" "$W/window" <<'PY'
import sys
img = bytearray(open(sys.argv[1], 'rb').read())
needle = open(sys.argv[2], 'rb').read()[600000:600032]
at = img.find(needle)
assert at > 0 and img.find(needle, at + 1) < 0, at
img[at + 16] ^= 0x5a
open(sys.argv[1], 'wb').write(img)
open(sys.argv[3], 'wb').write(bytes(img[at:at + 32]))
print(at + 16)
PY
) || fail "cannot corrupt the image"
CS=$((AT / 65536 * 65536))
CE=$((CS + 65535))
CHUNK=$((AT / 65536))
info "flipped image byte $AT: chunk $CHUNK, bytes $CS..$CE"

# no_wrong_bytes FILE: FILE does not hold the corrupted window.
no_wrong_bytes() {
	python3 - "$1" "$W/window" <<'PY' || fail "$1 holds the corrupted bytes"
import sys
assert open(sys.argv[2], 'rb').read() not in open(sys.argv[1], 'rb').read()
PY
}

# is_prefix FILE SRC: FILE is SRC's first bytes, fewer than all of them.
is_prefix() {
	local n
	n=$(stat -c %s "$1")
	[ "$n" -lt "$(stat -c %s "$2")" ] || fail "$1 is whole ($n bytes): the read did not fail"
	[ "$n" = 0 ] || cmp -s -n "$n" "$1" "$2" || fail "$1 ($n bytes) is not a prefix of $2"
}

# one_message CMD: stderr holds exactly one integrity line, naming /big.bin, the chunk's image
# offset and range, and the block's file offset.
one_message() {
	local want="/big.bin: .*integrity check failed at image offset $CS (bytes $CS\.\.$CE, chunk $CHUNK, do not match their digest; in the block at file offset 524288)"
	grep -q "^sqk $1: .*$want" "$ERR_FILE" || { show_err; fail "sqk $1: no message naming /big.bin and image offset $CS"; }
	[ "$(grep -c "integrity" "$ERR_FILE")" = 1 ] || { show_err; fail "sqk $1: the mismatch is not printed once"; }
}

# 1. cat: exit 1, one precise message, a prefix of the right bytes; the other files read. By
# default the chunk is checked with its XXH3-64; with --root-hash, with its SHA-256.
for opt in "" --verify "--root-hash $ROOT"; do
	run_capture cat "$SQK" cat $opt "$W/bad.sqsh" big.bin
	[ "$RC" = 1 ] || { show_err; fail "sqk cat $opt of the corrupted file exited $RC"; }
	one_message cat
	is_prefix "$OUT_FILE" "$W/src/big.bin"
	no_wrong_bytes "$OUT_FILE"
done
for f in other.bin small.txt sub/dir/nested.bin; do
	run_capture catok "$SQK" cat "$W/bad.sqsh" "$f"
	[ "$RC" = 0 ] || { show_err; fail "sqk cat $f (intact) exited $RC"; }
	cmp -s "$OUT_FILE" "$W/src/$f" || fail "sqk cat $f: wrong bytes"
	[ ! -s "$ERR_FILE" ] || { show_err; fail "sqk cat $f printed something"; }
done
# several paths: the bad one fails, the next is still written whole
run_capture cat2 "$SQK" cat "$W/bad.sqsh" big.bin other.bin
[ "$RC" = 1 ] || fail "sqk cat big.bin other.bin exited $RC"
one_message cat
cmp -s <(tail -c 300000 "$OUT_FILE") "$W/src/other.bin" || fail "other.bin after big.bin: wrong bytes"
no_wrong_bytes "$OUT_FILE"

# 2. extract (also with one thread per file and with -j 1).
for j in "" "-j 1" "-j 4"; do
	rm -rf "$W/x"
	run_capture ex "$SQK" extract $j "$W/bad.sqsh" "$W/x"
	[ "$RC" = 1 ] || { show_err; fail "sqk extract $j of the corrupted image exited $RC"; }
	one_message extract
	# extract stops at the first error: what it wrote before is whole and right
	for f in other.bin small.txt sub/dir/nested.bin; do
		[ ! -e "$W/x/$f" ] || cmp -s "$W/x/$f" "$W/src/$f" || fail "sqk extract $j: $f is wrong"
	done
	[ ! -e "$W/x/big.bin" ] || fail "sqk extract $j left a partial big.bin"
	grep -q "/big.bin: .*: removed the partial file $W/x/big.bin\$" "$ERR_FILE" ||
		{ show_err; fail "sqk extract $j: the message does not say big.bin was removed"; }
done
info "extract removes the partial big.bin and says so"

# 3. tar: exit 1, one message, an archive without the wrong bytes (and cut short).
run_capture tar "$SQK" tar "$W/bad.sqsh"
[ "$RC" = 1 ] || { show_err; fail "sqk tar of the corrupted image exited $RC"; }
one_message tar
no_wrong_bytes "$OUT_FILE"

# 4. --no-verify: exit 0 and the wrong bytes, from every command.
run_capture catnv "$SQK" cat --no-verify "$W/bad.sqsh" big.bin
[ "$RC" = 0 ] || { show_err; fail "sqk cat --no-verify exited $RC"; }
[ "$(cmp "$OUT_FILE" "$W/src/big.bin" | sed 's/.*byte \([0-9]*\),.*/\1/')" = 600017 ] ||
	fail "sqk cat --no-verify: not exactly the flipped byte differs"
rm -rf "$W/x"
run_capture exnv "$SQK" extract --no-verify "$W/bad.sqsh" "$W/x"
[ "$RC" = 0 ] || { show_err; fail "sqk extract --no-verify exited $RC"; }
if cmp -s "$W/x/big.bin" "$W/src/big.bin"; then fail "extract --no-verify: big.bin is right?"; fi
run_capture tarnv "$SQK" tar --no-verify "$W/bad.sqsh"
[ "$RC" = 0 ] || { show_err; fail "sqk tar --no-verify exited $RC"; }
python3 - "$OUT_FILE" "$W/window" <<'PY' || fail "tar --no-verify: the wrong bytes are not in the archive"
import sys
assert open(sys.argv[2], 'rb').read() in open(sys.argv[1], 'rb').read()
PY

# 5. The metadata is intact: ls and info work; verify finds the bad chunk.
run_capture ls "$SQK" ls -l "$W/bad.sqsh" /sub/dir
[ "$RC" = 0 ] && grep -q "nested.bin" "$OUT_FILE" || { show_err; fail "sqk ls of the corrupted image failed"; }
run_capture info "$SQK" info "$W/bad.sqsh"
[ "$RC" = 0 ] || { show_err; fail "sqk info of the corrupted image exited $RC"; }
run_capture ver "$SQK" verify "$W/bad.sqsh"
[ "$RC" = 4 ] || { show_err; fail "sqk verify of the corrupted image exited $RC, not 4"; }
run_capture vernv "$SQK" verify --no-verify "$W/bad.sqsh"
[ "$RC" = 16 ] || fail "sqk verify --no-verify exited $RC (a usage error: it always checks)"

# 6. No integrity data: read unchecked, silently; --verify says so.
sqk_build -q --no-checksums "$W/src" "$W/plain.sqsh"
run_capture plain "$SQK" cat "$W/plain.sqsh" big.bin
[ "$RC" = 0 ] && [ ! -s "$ERR_FILE" ] || { show_err; fail "sqk cat of an image without integrity data"; }
cmp -s "$OUT_FILE" "$W/src/big.bin" || fail "sqk cat (no integrity data): wrong bytes"
run_capture plainv "$SQK" cat --verify "$W/plain.sqsh" big.bin
[ "$RC" = 0 ] || { show_err; fail "sqk cat --verify (no integrity data) exited $RC"; }
grep -q "no integrity data.*reads are not verified" "$ERR_FILE" || { show_err; fail "no notice under --verify"; }

# 7. sqkfuse, and sqk mount (the same code).
SQKFUSE=${SQKFUSE:-$(dirname "$SQK")/sqkfuse}
if [ "$(id -u)" != 0 ] || [ ! -e /dev/fuse ] || [ ! -x "$SQKFUSE" ] ||
	! command -v fusermount3 >/dev/null; then
	info "no FUSE here (root, /dev/fuse, sqkfuse, fusermount3); skipped the mount part"
	exit 0
fi
printf '#!/bin/sh\nexec "%s" mount "$@"\n' "$SQK" >"$W/sqk-mount"
chmod +x "$W/sqk-mount"
for fuse in "$SQKFUSE" "$W/sqk-mount"; do
	for opt in "" "-o verify"; do
		SQKFUSE=$fuse fuse_mount "$W/bad.sqsh" "$W/m" $opt
		for _ in 1 2; do
			if cat "$W/m/big.bin" >"$W/fuse.out" 2>"$W/cat.err"; then
				fail "$fuse $opt: reading the corrupted file succeeded"
			fi
			grep -q "Input/output error" "$W/cat.err" || fail "$fuse $opt: not EIO: $(cat "$W/cat.err")"
			is_prefix "$W/fuse.out" "$W/src/big.bin"
		done
		for f in other.bin small.txt sub/dir/nested.bin; do
			cmp -s "$W/m/$f" "$W/src/$f" || fail "$fuse $opt: $f differs through the mount"
		done
		cmp -s <(head -c 524288 "$W/m/big.bin") <(head -c 524288 "$W/src/big.bin") ||
			fail "$fuse $opt: the intact start of big.bin does not read"
		mountpoint -q "$W/m" || fail "$fuse $opt: the mount went away"
		ls "$W/m/sub/dir" >/dev/null || fail "$fuse $opt: listing the mount failed"
		grep -q "integrity check failed at image offset $CS: bytes $CS\.\.$CE (chunk $CHUNK)" "$TMP/fuse.err" ||
			{ cat "$TMP/fuse.err" >&2; fail "$fuse $opt: the log does not name the chunk"; }
		[ "$(grep -c "integrity check failed" "$TMP/fuse.err")" = 1 ] ||
			{ cat "$TMP/fuse.err" >&2; fail "$fuse $opt: the mismatch is not logged once"; }
		grep -q "big.bin" "$TMP/fuse.err" || { cat "$TMP/fuse.err" >&2; fail "$fuse $opt: the log does not name big.bin"; }
		SQKFUSE=$fuse fuse_umount "$W/m"
	done
	SQKFUSE=$fuse fuse_mount "$W/bad.sqsh" "$W/m" -o noverify
	cat "$W/m/big.bin" >"$W/fuse.out" || fail "$fuse -o noverify: reading big.bin failed"
	[ "$(cmp "$W/fuse.out" "$W/src/big.bin" | sed 's/.*byte \([0-9]*\),.*/\1/')" = 600017 ] ||
		fail "$fuse -o noverify: not exactly the flipped byte differs"
	SQKFUSE=$fuse fuse_umount "$W/m"
done

# A trailer with one magic damaged is damaged integrity data, not "no integrity data": reads
# must not quietly go unverified.
python3 - "$W/good.sqsh" "$W/badmagic.sqsh" <<'PY'
import sys
d = bytearray(open(sys.argv[1], 'rb').read())
d[-1] ^= 0x01
open(sys.argv[2], 'wb').write(d)
PY
"$SQK" cat "$W/badmagic.sqsh" small.txt >"$W/bm.out" 2>"$W/bm.err" &&
	fail "sqk cat of an image whose trailer magic is damaged read it unverified"
grep -q "integrity data at the end of the file is not valid" "$W/bm.err" ||
	{ cat "$W/bm.err" >&2; fail "damaged trailer magic: no message"; }
"$SQK" cat --no-verify "$W/badmagic.sqsh" small.txt | cmp -s - "$W/src/small.txt" ||
	fail "--no-verify of an image whose trailer magic is damaged"
info "a damaged trailer magic fails verified opens (--no-verify reads)"

# A bad chunk under the tables read at open is named once; the layout is not blamed for it.
mkdir -p "$W/tsrc"
head -c 1000000 "$W/src/big.bin" >"$W/tsrc/r"
sqk_build -q "$W/tsrc" "$W/tables.sqsh"
python3 - "$W/tables.sqsh" "$W/tables-bad.sqsh" <<'PY'
import struct, sys
d = bytearray(open(sys.argv[1], 'rb').read())
d[struct.unpack_from('<Q', d, 48)[0]] ^= 1  # a byte of the id table
open(sys.argv[2], 'wb').write(d)
PY
"$SQK" ls "$W/tables-bad.sqsh" >/dev/null 2>"$W/tb.err" && fail "sqk ls of an image with a bad table chunk succeeded"
[ "$(grep -c "integrity check failed at image offset" "$W/tb.err")" = 1 ] ||
	{ cat "$W/tb.err" >&2; fail "bad table chunk: not named once"; }
grep -q "bad table layout" "$W/tb.err" && { cat "$W/tb.err" >&2; fail "bad table chunk: the layout is blamed"; }
"$SQK" ls --no-verify "$W/tables-bad.sqsh" >/dev/null 2>&1 || true
info "a bad chunk under the tables is named once, the layout not blamed"
