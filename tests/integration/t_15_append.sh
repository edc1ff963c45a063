#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# Append, the mksquashfs way (issue 31, point 1): `sqk mkimage SOURCE IMAGE` with an existing
# SquashFS IMAGE adds SOURCE to its root, twice in a row and with -root-becomes, a clashing
# root-level name (a file, a directory) becoming name_1, name_2..., -all-root changing the new
# entries only; compared with mksquashfs
# 4.7.5 doing the same to its own image: the listings (unsquashfs -lln, directory sizes left
# out) and the extracted trees are equal. The appended image mounts with the kernel (same
# tree) and passes sqk verify; an old file's copy among the new files is a duplicate (counted);
# the old compressor and block size win with a note; -noappend replaces; an image whose data
# is not all before its tables, and an image at an offset (mksquashfs -o), are refused with
# the reason and left byte-identical, with no stray file; the old image's signatures are
# dropped with a warning (even with -q) unless --sign signs the new image; the old image's
# prefetch hint is carried (its ranges in the old data kept, the new tables named instead of
# the old ones), an image without one stays without.
. "$(dirname "$0")/lib.sh"
need_root
need_sqk
need_kernel_mount
need_cmd python3 cmp
peer_squashfs_tools

W=$(scratch append)
A=$W/A B=$W/B C=$W/C
$MKTREE --small --no-sparse "$A" >/dev/null || fail "mktree failed"
# one file of A that B copies (a duplicate across old and new), of a size nothing else has
head -c 300007 /dev/urandom >"$A/blob"
# B: a directory and a file named as root entries of A, new entries, the copy of blob
mkdir -p "$B/files/in" "$B/newdir"
echo "B's own file" >"$B/files/in/b1"
echo "B's top_level_file" >"$B/top_level_file"
cp "$A/blob" "$B/newdir/blob_copy"
head -c 200003 /dev/urandom >"$B/newdir/big"
ln -s ../top_level_file "$B/newdir/link"
chmod 0750 "$B"
touch -d '2011-11-11 11:11:11' "$B"
# C: appended with -root-becomes old (nothing clashes), then again (everything clashes)
mkdir -p "$C/bigdir"
echo c1 >"$C/c1"
echo inner >"$C/bigdir/inner"

mkdir -p "$W/m" "$W/s"
M=$W/m/img.sqsh S=$W/s/img.sqsh

# lln IMAGE: unsquashfs -lln with the directory sizes (encoding-dependent) left out.
lln() {
	"$UNSQUASHFS" -lln "$1" | sed -E 's/^(d[^ ]+ +[^ ]+ +)[0-9]+ /\1- /' ||
		fail "unsquashfs -lln $1 failed"
}

# step WHAT SQK-OPTIONS -- MKSQUASHFS-OPTIONS -- SOURCE...: the same append by both tools.
step() {
	local what=$1 sopts=() mopts=()
	shift
	while [ "$1" != -- ]; do sopts+=("$1"); shift; done
	shift
	while [ "$1" != -- ]; do mopts+=("$1"); shift; done
	shift
	"$MKSQUASHFS" "$@" "$M" -no-progress "${mopts[@]}" >"$TMP/mks.out" 2>"$TMP/mks.err" ||
		{ cat "$TMP/mks.err" >&2; fail "$what: mksquashfs failed"; }
	sqk_build "$@" "$S" "${sopts[@]}"
	lln "$M" >"$TMP/m.lln"
	lln "$S" >"$TMP/s.lln"
	diff -u "$TMP/m.lln" "$TMP/s.lln" >"$TMP/lln.diff" ||
		{ head -n 40 "$TMP/lln.diff" >&2; fail "$what: the listings differ"; }
	info "$what: listings equal ($(wc -l <"$TMP/s.lln") lines)"
	[ "$(ls -A "$W/s")" = img.sqsh ] || fail "$what: stray files: $(ls -A "$W/s")"
}

# ---- 1. the first image, then B appended: clashes renamed, old settings kept -----------------
step "first image" -comp gzip -- -comp gzip -- "$A"
step "append B" -comp xz -b 64K -- -- "$B"
grep -q "appended to $S: [1-9][0-9]* entries kept, 8 added" "$TMP/build.out" ||
	fail "no 'appended to' summary line: $(cat "$TMP/build.out")"
grep -q "'files' is in '$S' already: added as 'files_1'" "$TMP/build.err" ||
	fail "the clash of the directory 'files' is not named: $(cat "$TMP/build.err")"
grep -q "'top_level_file' is in '$S' already: added as 'top_level_file_1'" "$TMP/build.err" ||
	fail "the clash of the file 'top_level_file' is not named"
grep -q "its compressor gzip is kept (xz overridden)" "$TMP/build.err" ||
	fail "no note that the old compressor wins: $(cat "$TMP/build.err")"
grep -q "its block size 128 KiB is kept (64 KiB overridden)" "$TMP/build.err" ||
	fail "no note that the old block size wins"
assert_comp "$S" gzip
grep -Eq '^duplicates +1 files, 300007 bytes' "$TMP/build.out" ||
	fail "the copy of an old file is not a duplicate: $(grep duplicates "$TMP/build.out")"
# the duplicate shares the old file's blocks: the same start in both inodes
"$SQK" ls -l "$S" /files_1/in/b1 >/dev/null || fail "files_1/in/b1 is not in the image"

# ---- 2. -root-becomes, then C again: every root name clashes ---------------------------------
step "append C -root-becomes old" -root-becomes old -- -root-becomes old -- "$C"
grep -q "appended to $S: [1-9][0-9]* entries kept, 3 added" "$TMP/build.out" ||
	fail "-root-becomes: summary $(grep appended "$TMP/build.out")"
step "append C again" --root-becomes=again -- -root-becomes again -- "$C"
# -all-root: the new entries' owners only (the old entries keep theirs, as with mksquashfs)
step "append C a third time, -all-root" -all-root -- -all-root -- "$C"
grep -q "'c1' is in '$S' already: added as 'c1_1'" "$TMP/build.err" ||
	fail "c1 is not renamed c1_1"

# ---- 3. the same trees: extracted, and mounted by the kernel; sqk verify ----------------------
"$UNSQUASHFS" -n -d "$W/mx" "$M" >/dev/null 2>"$TMP/unsq.err" || fail "unsquashfs of $M failed"
"$UNSQUASHFS" -n -d "$W/sx" "$S" >/dev/null 2>"$TMP/unsq.err" || fail "unsquashfs of $S failed"
tree_equal "extracted: mksquashfs's and sqk's appended images" "$W/mx" "$W/sx"
mount_sq "$S" "$W/mnt"
tree_equal "kernel mount of sqk's appended image" "$W/mx" "$W/mnt"
umount_sq "$W/mnt"
run_capture verify "$SQK" verify "$S"
[ "$RC" = 0 ] && grep -q ": clean;" "$OUT_FILE" || { show_err; fail "sqk verify: $(cat "$OUT_FILE")"; }
info "sqk verify: clean"

# ---- 4. -noappend replaces ---------------------------------------------------------------------
cp "$S" "$W/s/keep.sqsh"
sqk_build "$C" "$W/s/keep.sqsh" -noappend
grep -q "appended" "$TMP/build.out" && fail "-noappend appended"
"$UNSQUASHFS" -lln "$W/s/keep.sqsh" | grep -q "squashfs-root/old" && fail "-noappend kept old entries"
[ "$("$UNSQUASHFS" -lln "$W/s/keep.sqsh" | wc -l)" = 4 ] || fail "-noappend: not C alone"
info "-noappend replaces"

# ---- 5. refused, left as it was: data after the tables; an image at an offset ----------------
mkdir -p "$W/bad" "$W/off" "$W/one"
head -c 4096 /dev/urandom >"$W/one/f"
"$MKSQUASHFS" "$W/one" "$W/bad/img.sqsh" -noappend -no-progress -quiet -b 4096 -noI \
	-no-fragments >/dev/null || fail "mksquashfs of one block failed"
# move the file's one block between the inode and the directory table (a layout mksquashfs
# never writes, valid still): the tables after it move, with the pointers of their indexes
python3 - "$W/bad/img.sqsh" <<'EOF' || fail "cannot move the block"
import struct, sys
p = sys.argv[1]
b = bytearray(open(p, 'rb').read())
sb = list(struct.unpack_from('<IIIIIHHHHHHQQQQQQQQ', b, 0))
itab, dtab = sb[15], sb[16]
assert b[itab + 1] & 0x80, 'inode table compressed'
at = itab + 2
assert struct.unpack_from('<H', b, at)[0] == 2, 'not a basic file inode first'
start, = struct.unpack_from('<I', b, at + 16)
n = struct.unpack_from('<I', b, at + 32)[0] & 0xFFFFFF
blk = bytes(b[start:start + n])
struct.pack_into('<I', b, at + 16, dtab)
b[dtab:dtab] = blk
for i in (12, 13, 16, 17, 18):         # bytes_used, id, directory, fragment, export tables
    if sb[i] != (1 << 64) - 1 and sb[i] >= dtab:
        sb[i] += n
for i in (13, 18):                     # one metadata block each: the id and export index
    v, = struct.unpack_from('<Q', b, sb[i])
    struct.pack_into('<Q', b, sb[i], v + n)
struct.pack_into('<IIIIIHHHHHHQQQQQQQQ', b, 0, *sb)
del b[sb[12]:]
b += bytes(-len(b) % 4096)
open(p, 'wb').write(b)
EOF
"$UNSQUASHFS" -n -d "$W/badx" "$W/bad/img.sqsh" >/dev/null 2>&1 && cmp -s "$W/badx/f" "$W/one/f" ||
	fail "the moved block does not read back with unsquashfs"
cp "$W/bad/img.sqsh" "$TMP/bad.orig"
run_capture bad "$SQK" mkimage "$C" "$W/bad/img.sqsh"
[ "$RC" = 1 ] || { show_err; fail "a block after the tables: exit $RC, expected 1"; }
grep -q "cannot append to '$W/bad/img.sqsh': the blocks of '/f' are not in the data before its tables" \
	"$ERR_FILE" || { show_err; fail "a block after the tables: no reason given"; }
grep -q "the old image is unchanged" "$ERR_FILE" || fail "no word that the old image is unchanged"
cmp -s "$W/bad/img.sqsh" "$TMP/bad.orig" || fail "a refused append changed the image"
[ "$(ls -A "$W/bad")" = img.sqsh ] || fail "a refused append left $(ls -A "$W/bad")"
info "data after the tables: refused ($(tail -n 1 "$ERR_FILE" | cut -c1-100)...)"

"$MKSQUASHFS" "$W/one" "$W/off/img.sqsh" -noappend -no-progress -quiet -o 8192 >/dev/null ||
	fail "mksquashfs -o 8192 failed"
cp "$W/off/img.sqsh" "$TMP/off.orig"
run_capture off "$SQK" mkimage "$C" "$W/off/img.sqsh"
[ "$RC" = 1 ] || { show_err; fail "an image at an offset: exit $RC, expected 1"; }
grep -q "is not a SquashFS image" "$ERR_FILE" || { show_err; fail "offset image: no reason"; }
cmp -s "$W/off/img.sqsh" "$TMP/off.orig" || fail "an image at an offset was changed"
[ "$(ls -A "$W/off")" = img.sqsh ] || fail "a refused append left $(ls -A "$W/off")"
info "an image at an offset: refused ($(cut -c1-100 "$ERR_FILE")...)"

# ---- 6. signatures: the old image's are dropped, with a note; --sign signs the new one ---------
"$SQK" keygen "$W/key" >/dev/null 2>&1 || fail "sqk keygen failed"
sqk_build -q --sign "$W/key" "$C" "$W/signed.sqsh"
sqk_build -q "$C" "$W/signed.sqsh"
grep -q "appending to '$W/signed.sqsh': its 1 signature is dropped" "$TMP/build.err" ||
	fail "no note that the old signature is dropped: $(cat "$TMP/build.err")"
"$SQK" info "$W/signed.sqsh" | grep -Eq '^signatures: +none' ||
	fail "the appended image still lists a signature"
sqk_build -q --sign "$W/key" "$C" "$W/signed.sqsh"
grep -q "dropped" "$TMP/build.err" && fail "a note of dropped signatures with --sign"
run_capture verify "$SQK" verify --trust "$W/key.pub" "$W/signed.sqsh"
[ "$RC" = 0 ] || { show_err; fail "the appended image signed with --sign does not verify"; }
info "signatures: dropped with a note, made anew with --sign"

# ---- 7. the prefetch hint: the old ranges in the copied data kept, the new tables named ------
mkdir -p "$W/h"
printf '%s\n' blob top_level_file >"$W/h/order"
sqk_build -q --order "$W/h/order" "$A" "$W/h/img.sqsh"
"$SQK" info --json "$W/h/img.sqsh" >"$W/h/old.json" || fail "sqk info --json of the ordered image"
sqk_build -q "$C" "$W/h/img.sqsh"
"$SQK" info --json "$W/h/img.sqsh" >"$W/h/new.json" || fail "sqk info --json of the appended one"
python3 - "$W/h/old.json" "$W/h/new.json" "$W/h/img.sqsh" <<'EOF' || fail "the hint was not carried"
import json, struct, sys
old, new = (json.load(open(p))['prefetch_hint'] for p in sys.argv[1:3])
sb = open(sys.argv[3], 'rb').read(96)
itab, bused = struct.unpack_from('<Q', sb, 64)[0], struct.unpack_from('<Q', sb, 40)[0]
assert len(old) == 2 and old[0]['start'] == 0 and old[0]['length'] > 300007, 'old hint %s' % old
# the old data keeps its offsets: the same first range; the old tables' range is replaced by
# the new tables' (new data comes between)
assert new[0] == old[0], 'old data ranges %s, expected %s' % (new[:1], old[:1])
assert new[1:] == [{'start': itab, 'length': bused - itab}], \
    'new tables %s, expected [%d, %d)' % (new[1:], itab, bused)
assert old[1]['start'] < itab, 'no new data between the old and the new tables'
print('  old hint %s, appended image %s' % (old, new))
EOF
"$SQK" info "$W/h/img.sqsh" | grep -q '^prefetch hint: .*2 ranges' ||
	fail "sqk info (a local open) does not read the appended image's hint"
run_capture hverify "$SQK" verify "$W/h/img.sqsh"
[ "$RC" = 0 ] || { show_err; fail "the appended image with a hint does not verify"; }
# an image without a hint stays without one
sqk_build -q "$A" "$W/h/plain.sqsh"
sqk_build -q "$C" "$W/h/plain.sqsh"
"$SQK" info --json "$W/h/plain.sqsh" | grep -q '"prefetch_hint": \[\]' ||
	fail "an image without a hint got one by an append"
# --no-checksums: no hint possible, said so
sqk_build -q --order "$W/h/order" "$A" "$W/h/nc.sqsh"
sqk_build -q --no-checksums "$C" "$W/h/nc.sqsh"
grep -q "its prefetch hint is dropped: no prefetch hint without integrity data" \
	"$TMP/build.err" || fail "--no-checksums: no note of the dropped hint: $(cat "$TMP/build.err")"
info "prefetch hint: carried by an append (old ranges kept, new tables named), none made"

# -root-becomes without an image to append to: a usage error, nothing written
run_capture rb "$SQK" mkimage "$C" "$W/new.sqsh" -root-becomes x
[ "$RC" != 0 ] && grep -q "root-becomes needs an image to append to" "$ERR_FILE" ||
	{ show_err; fail "-root-becomes on a new image: exit $RC"; }
[ ! -e "$W/new.sqsh" ] || fail "-root-becomes on a new image wrote it"
info "append: all checks passed"
