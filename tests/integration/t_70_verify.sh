#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# sqk verify: a clean sqk image (with integrity data) and a clean mksquashfs image pass; every
# single-byte corruption at ~200 positions across a sqk image is reported with the region the
# position belongs to (computed from the layout by sqfs_patch.py); truncations are reported;
# --root-hash right/wrong; crafted structural corruptions of a mksquashfs image (raw inode and
# directory tables; a directory index that no longer leads to the entries) are each reported;
# --json is valid JSON; exit codes 0/4/8/16.
. "$(dirname "$0")/lib.sh"
need_sqk
need_cmd mksquashfs python3
PATCH="python3 $IT_DIR/sqfs_patch.py"

W=$(scratch vf)
mkdir -p "$W/src/d" "$W/m/a"
head -c 1500000 /dev/urandom >"$W/src/big"
for f in one two three; do echo "small file $f" >"$W/src/d/$f"; done
echo tiny >"$W/src/t"
sqk_build -c gzip --checksum-chunk 4K "$W/src" "$W/s.sqsh"
IMG=$W/s.sqsh
[ "$(tail -c 8 "$IMG")" = SQKINTG1 ] || fail "sqk mkimage wrote no integrity data"

expect_rc() {
	local want=$1 rc=0
	shift
	"$SQK" verify "$@" >"$W/out" 2>"$W/err" || rc=$?
	if [ "$rc" != "$want" ]; then
		cat "$W/out" "$W/err" >&2
		fail "sqk verify $* exited $rc, expected $want"
	fi
}

# clean images, JSON
expect_rc 0 "$IMG"
grep -q "clean" "$W/out" || fail "no clean summary"
info "clean sqk image passes: $(tail -n 1 "$W/out")"
expect_rc 0 -j 1 --json "$IMG"
python3 -m json.tool "$W/out" >/dev/null || fail "--json output is not valid JSON"

# --root-hash
ROOT=$("$SQK" info "$IMG" | awk '/^root hash:/ { print $3 }')
[ ${#ROOT} = 64 ] || fail "no root hash in sqk info"
expect_rc 0 --root-hash "$ROOT" "$IMG"
expect_rc 4 --root-hash "$(echo "$ROOT" | tr 0-9a-f 1-9a-f0)" "$IMG"
info "--root-hash right passes, wrong fails"

# usage and operational errors
expect_rc 16
expect_rc 16 -j 0 "$IMG"
expect_rc 16 --root-hash xyz "$IMG"
expect_rc 8 "$W/missing.sqsh"
info "exit 16 on bad usage, 8 on a missing file"

# truncations
for cut in 1 4096 half; do
	size=$(stat -c %s "$IMG")
	[ "$cut" = half ] && cut=$((size / 2))
	head -c $((size - cut)) "$IMG" >"$W/cut.sqsh"
	expect_rc 4 "$W/cut.sqsh"
done
info "truncations by 1, 4096 bytes and half are reported"

# single-byte corruptions: every position's region must be named by verify
python3 - "$SQK" "$IMG" "$IT_DIR" <<'PYEOF' || fail "single-byte corruptions"
import os, subprocess, sys
sys.path.insert(0, sys.argv[3])
import sqfs_patch
sqk, img = sys.argv[1], sys.argv[2]
im = sqfs_patch.Image(img)
size = len(im.img)
regs, _ = im.regions()
pos = set(range(0, size, max(1, size // 150)))
for s, e, _ in regs:
    pos.update({s, (s + e) // 2, e - 1})
pos.update({10, 40, 95, size - 1, size - 64, size - 128})
pos = sorted(p for p in pos if 0 <= p < size)
tmp = img + '.flip'
bad = 0
for p in pos:
    want = im.region_of(p)
    data = bytearray(im.img)
    data[p] ^= 0xFF
    open(tmp, 'wb').write(data)
    r = subprocess.run([sqk, 'verify', '-j', '2', tmp], capture_output=True, text=True)
    found = [l for l in r.stdout.splitlines() if 'integrity error in' in l]
    if r.returncode != 4 or not any(want in l for l in found):
        bad += 1
        print('position %d (%s): exit %d\n%s' % (p, want, r.returncode, r.stdout),
              file=sys.stderr)
os.unlink(tmp)
print('  %d single-byte corruptions, %d not reported with their region' % (len(pos), bad))
sys.exit(1 if bad else 0)
PYEOF

# mksquashfs image: clean, then crafted structural corruptions
(for i in $(seq 1 30000); do echo "line $i of some compressible text"; done) >"$W/m/big"
for f in f1 f2 f3; do echo "content $f" >"$W/m/a/$f"; done
echo x >"$W/m/c"
mkdir "$W/m/many"   # a listing over 8 KiB: the directory gets an index
for i in $(seq 1 400); do : >"$W/m/many/entry_with_a_rather_long_name_$i"; done
# two xattr sets sharing a value: mksquashfs stores it once, out of line
XATTRS=0
python3 - "$W/m/a" <<'PY' && XATTRS=1
import os, sys
for f, k in (('f1', 'user.x'), ('f2', 'user.y')):
    os.setxattr(os.path.join(sys.argv[1], f), 'user.big', b'v' * 300)
    os.setxattr(os.path.join(sys.argv[1], f), k, b'1')
PY
mksquashfs "$W/m" "$W/m.sqfs" -noappend -quiet -no-progress -noI -noId -noX >/dev/null ||
	fail "mksquashfs failed"
expect_rc 0 "$W/m.sqfs"
grep -q "integrity: none" "$W/out" || fail "mksquashfs image reported integrity data"
while read -r what arg region; do
	cp "$W/m.sqfs" "$W/p.sqfs"
	$PATCH patch "$W/p.sqfs" "$what" $arg >/dev/null || fail "patch $what failed"
	expect_rc 4 "$W/p.sqfs"
	grep -q "structure error in $region" "$W/out" ||
		{ cat "$W/out" >&2; fail "$what: no structural error in $region"; }
	expect_rc 4 --json "$W/p.sqfs"
	python3 -m json.tool "$W/out" >/dev/null || fail "$what: --json output is not valid JSON"
done <<LIST
inode-number-zero /c inode table
unsorted-name /a directory table
size-word-bit25 /big inode table
fragment-index /c inode table
id-index /a/f1 inode table
table-index-past-end - superblock
data-garbage /big data of /big
meta-header-len - inode table
dir-index-start /many inode table
$([ "$XATTRS" = 1 ] && echo "xattr-ool-ref - xattr table")
LIST
info "$((9 + XATTRS)) crafted structural corruptions of a mksquashfs image are reported"
