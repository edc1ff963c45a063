#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# sqk mkimage --order TRACE and -sort FILE: the files a trace lists are laid out first, their
# blocks contiguous at the start of the data area in trace order and their tails in the fragment
# blocks right after, in trace order; one warning names the path the source does not hold; the
# prefetch hint (sqk info --json prefetch_hint) covers exactly those blocks and the tables, and
# lies inside the bytes the integrity digests cover. Same bytes with -j 1 and -j 2; the kernel,
# unsquashfs, squashfuse, sqkfuse and sqk verify read the image and it equals the source.
# --no-checksums: the order without a hint, and a message. -sort: priorities order the blocks
# (a directory's applies to its subtree, a file's own overrides it, negative ones last); a
# malformed line fails naming its line and leaves the old image in place. --tar refuses both.
. "$(dirname "$0")/lib.sh"
need_sqk
need_cmd python3 unsquashfs
DIR=$(cd "$(dirname "$0")" && pwd)
SQKFUSE=${SQKFUSE:-$(dirname "$SQK")/sqkfuse}

W=$(scratch order)
S=$W/src
mkdir -p "$S/app/lib" "$S/app/share" "$S/data" "$S/zz"
rnd() { head -c "$2" /dev/urandom >"$1"; }
# block size 16K: sizes with full blocks and a tail, exact blocks, small files
rnd "$S/app/bin" 50000              # 3 blocks + tail
rnd "$S/app/lib/libbig.so" 70000     # 4 blocks + tail
rnd "$S/app/lib/libx.so" 32768       # 2 blocks exactly, no tail
rnd "$S/app/share/conf" 300          # small file: a fragment
rnd "$S/app/share/icon" 20000
rnd "$S/data/big0" 40000
rnd "$S/data/blob" 100000
rnd "$S/data/small" 700
rnd "$S/zz/late" 20000
rnd "$S/back\\slash" 1234
cp "$S/app/bin" "$S/zz/bin.copy"      # a later duplicate of an ordered file
cp "$S/app/share/conf" "$S/app/share/conf.dup" # an ordered file duplicating an earlier one
for i in $(seq 1 30); do rnd "$S/data/f$i" $((i * 311)); done

# shuffled subset; a missing path, a blank line, an escape, a path listed twice
cat >"$W/trace" <<'EOF'
zz/late
app/share/conf

back\x5cslash
app/lib/libbig.so
no/such/file
app/bin
app/share/conf.dup
data/f7
app/lib/libx.so
zz/late
EOF
ORDER="zz/late app/share/conf back\\slash app/lib/libbig.so app/bin app/share/conf.dup data/f7 app/lib/libx.so"

build() { "$SQK" mkimage -q -c gzip -b 16K "$@"; }
build -j 1 --order "$W/trace" "$S" "$W/o1.sqk" 2>"$W/o1.err" || fail "build failed: $(cat "$W/o1.err")"
build -j 2 --order "$W/trace" "$S" "$W/o2.sqk" 2>"$W/o2.err" || fail "build -j 2 failed"
cmp -s "$W/o1.sqk" "$W/o2.sqk" || fail "-j 1 and -j 2 give different images"
build -j 2 --order "$W/trace" "$S" "$W/o3.sqk" 2>/dev/null || fail "build failed"
cmp -s "$W/o1.sqk" "$W/o3.sqk" || fail "two builds give different images"
info "-j 1, -j 2 and a second build: same bytes"
check_superblock "$W/o1.sqk" # the integrity data, with the hint block inside what it covers

[ "$(grep -c . "$W/o1.err")" = 1 ] || fail "expected one warning line, got: $(cat "$W/o1.err")"
grep -q "1 listed path is not a regular file.*no/such/file" "$W/o1.err" ||
	fail "warning does not name the count and the path: $(cat "$W/o1.err")"

"$SQK" info --json "$W/o1.sqk" >"$W/info.json" || fail "sqk info --json failed"
"$SQK" info "$W/o1.sqk" | grep -q '^prefetch hint: .*2 ranges' || fail "sqk info shows no hint"

# The layout, from the image's own inodes and fragment table.
python3 - "$DIR" "$W/o1.sqk" "$W/info.json" $ORDER <<'EOF' || fail "layout check failed"
import json, struct, sys
sys.path.insert(0, sys.argv[1])
from sqfs_patch import Image
im = Image(sys.argv[2])
info = json.load(open(sys.argv[3]))
order = sys.argv[4:]
bs = im.sb['block_size']
def blocks(path):
    d = im.lookup(path)
    n = d['size'] // bs if d['frag'] != 0xFFFFFFFF else (d['size'] + bs - 1) // bs
    ln = sum(struct.unpack_from('<I', im.ino, d['words'] + 4 * k)[0] & 0xFFFFFF for k in range(n))
    return d, ln
def walk(d, path=''):
    for name, ref, _, _ in im.listing(d):
        c = im.inode(ref)
        p = path + '/' + name if path else name
        if c['type'] in (1, 8):
            yield from walk(c, p)
        elif c['type'] in (2, 9):
            yield p
files = list(walk(im.inode(im.sb['root_inode'])))
pos, frags, first_data = 96, [], None
for p in order:
    d, ln = blocks(p)
    if p == 'app/share/conf.dup':
        c, _ = blocks('app/share/conf')
        assert (d['frag'], d['foff']) == (c['frag'], c['foff']), 'ordered duplicate not shared'
        continue
    if ln:
        assert d['blocks'] == pos, '%s: blocks at %d, expected %d (trace order)' % (p, d['blocks'], pos)
        pos += ln
    if d['frag'] != 0xFFFFFFFF:
        frags.append((d['frag'], d['foff'], p))
assert frags == sorted(frags), 'fragments not in trace order: %s' % frags
assert [f[0] for f in frags][0] == 0, 'first ordered tail not in fragment block 0'
k = max(f[0] for f in frags) + 1
for i in range(k):
    s, ln = im.frag_entry(i)
    assert s == pos, 'fragment block %d at %d, expected %d (right after)' % (i, s, pos)
    pos += ln
# everything else after, its tails in later fragment blocks
for p in files:
    if p in order:
        continue
    d, ln = blocks(p)
    if p == 'zz/bin.copy':
        o, oln = blocks('app/bin')
        assert d['blocks'] == o['blocks'] and ln == oln, 'later duplicate does not share blocks'
        continue
    if ln:
        assert d['blocks'] >= pos, '%s: blocks at %d inside the ordered range' % (p, d['blocks'])
    if d['frag'] != 0xFFFFFFFF:
        assert d['frag'] >= k, '%s: tail in an ordered fragment block' % p
hint = info['prefetch_hint']
sb = im.sb
assert hint == [{'start': 0, 'length': pos},
                {'start': sb['inode_table_start'], 'length': sb['bytes_used'] - sb['inode_table_start']}], \
    'hint %s, expected [0, %d) and the tables' % (hint, pos)
# the hint block: right after the padded image, inside covered, before the fast checksums
# (which end the covered bytes: common/integrity.h) and the digests
data = open(sys.argv[2], 'rb').read()
tr = data[-128:]
covered = struct.unpack_from('<Q', tr, 16)[0]
padded = (sb['bytes_used'] + 4095) // 4096 * 4096
assert data[covered - 8:covered] == b'SQKFAST1', 'no fast checksum block ends the covered bytes'
covered -= struct.unpack_from('<Q', data, covered - 24)[0]
assert covered == padded + 4096, 'hint ends at %d, padded image %d' % (covered, padded)
foot = data[covered - 32:covered]
assert foot[24:] == b'SQKHINT1' and struct.unpack_from('<IIQQ', foot) == (2, 1, 4096, 0), foot
print('  ordered data and %d fragment blocks end at %d; hint %s' % (k, pos, hint))
EOF

# Readers that know nothing of hints read it; so do ours.
need_kernel_mount
mount_sq "$W/o1.sqk" "$W/mnt"
python3 "$DIR/treecmp.py" "$S" "$W/mnt" >"$W/tc.out" 2>&1 || fail "kernel mount differs: $(tail -5 "$W/tc.out")"
umount_sq "$W/mnt"
unsquashfs -l "$W/o1.sqk" >/dev/null 2>&1 || fail "unsquashfs -l rejects the image"
unsquashfs -d "$W/x" "$W/o1.sqk" >/dev/null 2>&1 || fail "unsquashfs rejects the image"
python3 "$DIR/treecmp.py" "$S" "$W/x" --ignore-root-attrs >/dev/null || fail "unsquashfs output differs"
"$SQK" verify "$W/o1.sqk" >"$W/verify.out" 2>&1 || fail "sqk verify: $(cat "$W/verify.out")"
grep -q clean "$W/verify.out" || fail "sqk verify not clean: $(cat "$W/verify.out")"
if [ -e /dev/fuse ] && command -v squashfuse >/dev/null; then
	squashfuse "$W/o1.sqk" "$W/mnt" || fail "squashfuse cannot mount"
	_MOUNTS="$W/mnt $_MOUNTS"
	diff -r "$S" "$W/mnt" >/dev/null || fail "squashfuse content differs"
	fusermount -u "$W/mnt"
fi
if [ -e /dev/fuse ] && [ -x "$SQKFUSE" ]; then
	fuse_mount "$W/o1.sqk" "$W/mnt"
	diff -r "$S" "$W/mnt" >/dev/null || fail "sqkfuse content differs"
	fuse_umount "$W/mnt"
fi
info "kernel, unsquashfs, squashfuse, sqkfuse and sqk verify accept it"

# A corrupt hint (digests recomputed would be needed to hide it): verify names the hint.
python3 - "$W/o1.sqk" "$W/bad.sqk" <<'EOF'
import sys
b = bytearray(open(sys.argv[1], 'rb').read())
used = int.from_bytes(b[40:48], 'little')
b[(used + 4095) // 4096 * 4096 + 5] ^= 1
open(sys.argv[2], 'wb').write(b)
EOF
"$SQK" verify "$W/bad.sqk" >"$W/bad.out" 2>&1 && fail "sqk verify accepts a corrupt hint"
grep -q "prefetch hint" "$W/bad.out" || fail "verify does not name the hint: $(cat "$W/bad.out")"

# --no-checksums: ordered all the same, no hint, one message.
build --no-checksums --order "$W/trace" "$S" "$W/nc.sqk" 2>"$W/nc.err" || fail "build failed"
grep -q "no prefetch hint without integrity data" "$W/nc.err" || fail "no message: $(cat "$W/nc.err")"
"$SQK" info --json "$W/nc.sqk" | grep -q '"prefetch_hint": \[\]' || fail "--no-checksums image has a hint"
check_superblock "$W/nc.sqk" --no-checksums
cmp -s <(head -c 200000 "$W/o1.sqk" | tail -c +97) <(head -c 200000 "$W/nc.sqk" | tail -c +97) ||
	fail "--no-checksums changed the ordered layout"
info "--no-checksums: same layout, no hint, a message"

# -sort: priorities.
cat >"$W/sort" <<'EOF'
# mksquashfs style
app 10
app/lib/libx.so 20
app/share/icon -5
data/blob -10
zz/late 0
EOF
build -sort "$W/sort" "$S" "$W/s.sqk" 2>"$W/s.err" || fail "-sort build failed: $(cat "$W/s.err")"
[ ! -s "$W/s.err" ] || fail "-sort warned: $(cat "$W/s.err")"
build --sort "$W/sort" "$S" "$W/s2.sqk" 2>/dev/null || fail "--sort build failed"
cmp -s "$W/s.sqk" "$W/s2.sqk" || fail "-sort and --sort differ"
python3 - "$DIR" "$W/s.sqk" <<'EOF' || fail "-sort layout check failed"
import sys
sys.path.insert(0, sys.argv[1])
from sqfs_patch import Image
im = Image(sys.argv[2])
b = lambda p: im.lookup(p)['blocks']
# 20, then app's subtree (10) in walk order, then priority 0 in walk order, then -5, then -10
seq = ['app/lib/libx.so', 'app/bin', 'app/lib/libbig.so', 'data/big0', 'zz/late',
       'app/share/icon', 'data/blob']
got = [b(p) for p in seq]
assert got == sorted(got) and len(set(got)) == len(got), list(zip(seq, got))
print('  -sort order:', ' < '.join(seq))
EOF
mount_sq "$W/s.sqk" "$W/mnt"
python3 "$DIR/treecmp.py" "$S" "$W/mnt" >/dev/null 2>&1 || fail "-sort image differs from the source"
umount_sq "$W/mnt"

# A missing entry: one warning with the count, the build goes on.
printf 'app 10\nno/such 3\nnor/this -2\n' >"$W/miss.sort"
build -sort "$W/miss.sort" "$S" "$W/m.sqk" 2>"$W/m.err" || fail "-sort with missing entries failed"
[ "$(grep -c . "$W/m.err")" = 1 ] && grep -q "2 listed paths are not a file or directory.*no/such" "$W/m.err" ||
	fail "-sort missing entries: $(cat "$W/m.err")"

# A malformed line: the error names the file and the line; the old image stays.
cp "$W/s.sqk" "$W/keep.sqk"
printf 'app 10\n\nzz/late high\n' >"$W/bad.sort"
build -noappend -sort "$W/bad.sort" "$S" "$W/s.sqk" 2>"$W/bs.err" && fail "a malformed sort file was accepted"
grep -q "bad.sort' line 3" "$W/bs.err" || fail "error does not name line 3: $(cat "$W/bs.err")"
cmp -s "$W/s.sqk" "$W/keep.sqk" || fail "the old image changed"
printf 'app 40000\n' >"$W/bad.sort"
build -noappend -sort "$W/bad.sort" "$S" "$W/s.sqk" 2>"$W/bs.err" && fail "priority 40000 was accepted"
grep -q "line 1: priority outside -32768..32767" "$W/bs.err" || fail "range: $(cat "$W/bs.err")"
info "-sort: priorities, subtree, override, negatives last; malformed lines fail by line"

"$SQK" mkimage -q --tar --order "$W/trace" /dev/null "$W/t.sqk" 2>"$W/t.err"
[ $? = 2 ] || fail "--tar --order not refused as a usage error"
grep -q "needs source directories" "$W/t.err" || fail "no message: $(cat "$W/t.err")"
exit 0
