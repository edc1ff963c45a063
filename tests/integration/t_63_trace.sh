#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# sqkfuse -o trace=FILE lists the files whose data was read, once each, in first-read order, as
# paths relative to the image root with bytes outside printable ASCII and '\' as \xHH:
#   1. A tree with nested directories, a name with a space, one with a newline, a backslash and
#      UTF-8, a hard-link pair and a symlink: a hard-linked file read first through its second
#      name, a big file of which only 10 bytes are read, files stat'ed but never read, directories
#      listed (ls -lR), files read twice, a file read through a symlink: the trace is exactly the
#      files read, in that order, each once (the hard link under the name it was read by, the
#      symlink as its target), byte for byte; decoding \xHH gives paths that exist in the source;
#      no temporary is left beside it and an older trace file is replaced.
#   2. names=0 (no names kept): the same reads give the same trace, every name found at unmount
#      in the image's directories (the hard link then under its first name in directory order).
#   3. subdir=./d1/../d1: paths are still relative to the image root (d1/d2/...), also with
#      names=0.
#   4. names=16 over 600 files walked first (find, ls -lR: the table evicts nearly every name
#      before the read), 300 files read in a shuffled order: the trace names each of them right,
#      in that order; stats= shows at most 16 names held.
#   5. A trace path in a missing directory, under a regular file, naming a directory, or (run as
#      nobody) in a directory without write permission: sqkfuse exits 1 at once naming the path,
#      nothing is mounted, nothing is created.
#   6. The traces of 1 and 3 feed sqk mkimage --order of the whole source: every listed path is a
#      file of it (no "left out" warning), and the image extracts to the source.
. "$(dirname "$0")/lib.sh"
need_root
need_sqk
need_feature fuse
need_cmd python3 fusermount3 mountpoint
[ -e /dev/fuse ] || skip "no /dev/fuse"
SQKFUSE=${SQKFUSE:-$(dirname "$SQK")/sqkfuse}
[ -x "$SQKFUSE" ] || fail "sqkfuse not found at $SQKFUSE"
W=$(scratch trace)

# decode TRACE: the paths of TRACE, one a line, \xHH decoded, checked to exist under $W/src;
# prints them as Python reprs (unambiguous, one a line).
decode() {
	python3 - "$1" "$W/src" <<'PY'
import os, re, sys
data = open(sys.argv[1], 'rb').read()
assert data == b'' or data.endswith(b'\n'), 'the trace does not end with a newline'
for line in data.split(b'\n')[:-1]:
    assert all(0x20 <= c <= 0x7e for c in line), 'unescaped byte in %r' % line
    assert not re.search(rb'\\(?!x[0-9a-f]{2})', line), 'a lone backslash in %r' % line
    path = re.sub(rb'\\x([0-9a-f]{2})', lambda m: bytes([int(m.group(1), 16)]), line)
    assert not path.startswith(b'/'), 'absolute path %r' % path
    assert os.path.lexists(os.path.join(sys.argv[2].encode(), path)), 'no %r in the source' % path
    print(repr(path))
PY
}

# 1. The rich tree.
S=$W/src
mkdir -p "$S/d1/d2/d3" "$S/links" "$S/w" "$S/t" "$S/empty_dir"
echo "deep file" >"$S/d1/d2/d3/deep.txt"
echo "next to it" >"$S/d1/d2/other.txt"
echo "space" >"$S/sp ace.txt"
python3 -c 'import sys; open(sys.argv[1].encode() + b"/w/new\nline\\back\xc3\xa9", "w").write("odd\n")' "$S" ||
	fail "cannot create the odd name"
head -c 300000 /dev/urandom >"$S/big.bin"
echo "linked" >"$S/links/a_first"
ln "$S/links/a_first" "$S/links/b_second"
echo "target" >"$S/t/target.txt"
ln -s ../t/target.txt "$S/links/sl"
echo "never read" >"$S/stat_only.txt"
echo "never read either" >"$S/d1/d2/stat_too.txt"
: >"$S/zero.txt"
sqk_build -q "$S" "$W/img.sqsh"

# reads MNT: the reads whose trace is checked (the odd name through Python: no shell quoting)
reads() {
	cat "$1/links/b_second" >/dev/null || fail "cat links/b_second"
	head -c 10 "$1/big.bin" >/dev/null || fail "head -c 10 big.bin"
	stat "$1/stat_only.txt" "$1/d1/d2/stat_too.txt" "$1/zero.txt" >/dev/null || fail "stat"
	cat "$1/sp ace.txt" >/dev/null || fail "cat 'sp ace.txt'"
	python3 -c 'import sys; open(sys.argv[1].encode() + b"/w/new\nline\\back\xc3\xa9", "rb").read()' "$1" ||
		fail "reading the odd name failed"
	ls -lR "$1" >/dev/null || fail "ls -lR"
	cat "$1/d1/d2/d3/deep.txt" >/dev/null || fail "cat deep.txt"
	cat "$1/links/a_first" "$1/d1/d2/d3/deep.txt" >/dev/null || fail "cat again"
	cat "$1/links/sl" >/dev/null || fail "cat through the symlink"
	cat "$1/zero.txt" >/dev/null || fail "cat zero.txt"
}
# expected FILE FIRST_LINK_NAME: the trace reads() must give
expected() {
	printf '%s\n' "links/$2" big.bin 'sp ace.txt' 'w/new\x0aline\x5cback\xc3\xa9' \
		d1/d2/d3/deep.txt t/target.txt >"$1"
}

T=$W/out/trace.txt
mkdir -p "$W/out"
echo "an old trace" >"$T"
fuse_mount "$W/img.sqsh" "$W/mnt" -o trace="$T"
reads "$W/mnt"
[ "$(cat "$T")" = "an old trace" ] || fail "the trace file changed before unmount"
fuse_umount "$W/mnt"
expected "$W/want1" b_second
cmp -s "$T" "$W/want1" || fail "trace differs: got
$(cat -A "$T")
want
$(cat -A "$W/want1")"
[ "$(ls -A "$W/out")" = trace.txt ] || fail "files left beside the trace: $(ls -A "$W/out")"
got=$(decode "$T") || fail "the trace does not decode to paths of the source"
[ "$(printf '%s\n' "$got" | sed -n 4p)" = "b'w/new\\nline\\\\back\\xc3\\xa9'" ] ||
	fail "the odd name decodes to $(printf '%s\n' "$got" | sed -n 4p)"
cp "$T" "$W/trace1"
info "default names: $(wc -l <"$T") files in first-read order, each once; the odd name decodes back"

# 2. No names kept: every file named by the walk at unmount.
fuse_mount "$W/img.sqsh" "$W/mnt" -o trace="$T",names=0
reads "$W/mnt"
fuse_umount "$W/mnt"
expected "$W/want2" a_first
cmp -s "$T" "$W/want2" || fail "names=0: trace differs: got
$(cat -A "$T")
want
$(cat -A "$W/want2")"
decode "$T" >/dev/null || fail "names=0: the trace does not decode to paths of the source"
info "names=0: the same trace, the hard link under its first name"

# 3. subdir: relative to the image root, not to the subdir.
for o in "" ",names=0"; do
	rm -f "$T"
	fuse_mount "$W/img.sqsh" "$W/mnt" -o "trace=$T,subdir=./d1/../d1$o"
	cat "$W/mnt/d2/other.txt" "$W/mnt/d2/d3/deep.txt" >/dev/null || fail "subdir$o: reads failed"
	fuse_umount "$W/mnt"
	[ "$(cat "$T")" = "d1/d2/other.txt
d1/d2/d3/deep.txt" ] || fail "subdir$o: trace is $(cat -A "$T")"
done
cp "$T" "$W/trace3"
info "subdir=d1: paths relative to the image root"

# 4. names=16, 600 files walked, 300 read in a shuffled order.
M=$W/many
mkdir -p "$M"
python3 - "$M/src" "$M/order" <<'PY' || fail "cannot make the many-files tree"
import os, random, sys
root, order = sys.argv[1], sys.argv[2]
paths = []
for d in range(20):
    sub = os.path.join(root, 'dir%02d' % d, 'sub')
    os.makedirs(sub)
    for f in range(30):
        p = 'dir%02d/sub/file %03d' % (d, f)
        open(os.path.join(root, p), 'w').write('%s\n' % p)
        paths.append(p)
random.seed(63)
with open(order, 'w') as o:
    o.write(''.join(p + '\n' for p in random.sample(paths, 300)))
PY
sqk_build -q "$M/src" "$M/img.sqsh"
fuse_mount "$M/img.sqsh" "$M/mnt" -o trace="$M/trace",names=16,stats="$M/stats.json"
[ "$(find "$M/mnt" -type f | wc -l)" = 600 ] || fail "names=16: find does not count 600 files"
ls -lR "$M/mnt" >/dev/null || fail "names=16: ls -lR failed"
python3 - "$M/mnt" "$M/order" <<'PY' || fail "names=16: reading the files failed"
import sys
for p in open(sys.argv[2]).read().splitlines():
    if open(sys.argv[1] + '/' + p).read() != p + '\n':
        sys.exit('%s reads wrong' % p)
PY
fuse_umount "$M/mnt"
cmp -s "$M/trace" "$M/order" || fail "names=16: the trace differs from the read order:
$(diff "$M/order" "$M/trace" | head -n 20)"
names=$(json_get "$M/stats.json" node_names)
[ "$names" -le 16 ] || fail "names=16 kept $names names"
info "names=16: 300 of 600 files read after a walk, all named in order ($names names held)"

# 5. Trace paths that cannot be written fail the mount at once.
touch "$W/plain"
mkdir -p "$W/ro"
chmod 555 "$W/ro"
chmod 644 "$W/img.sqsh"
AS=""
command -v setpriv >/dev/null && AS="setpriv --reuid=65534 --regid=65534 --clear-groups"
for bad in "$W/missing/trace.txt" "$W/plain/trace.txt" "$W/out" "$W/out/" ${AS:+"$W/ro/trace.txt"}; do
	before=$(ls -A "$W/out" "$W/ro")
	mkdir -p "$W/mnt5"
	as=""
	[ "$bad" = "$W/ro/trace.txt" ] && as=$AS
	# a mount that wrongly succeeds serves in the foreground: the timeout ends it
	timeout 20 $as "$SQKFUSE" "$W/img.sqsh" "$W/mnt5" -f -o trace="$bad" 2>"$W/err5" && rc=0 || rc=$?
	[ "$rc" = 1 ] || fail "trace=$bad: exit status $rc, want 1"
	mountpoint -q "$W/mnt5" && fail "trace=$bad: something is mounted"
	grep -qF "'$bad'" "$W/err5" || fail "trace=$bad: the message does not name it: $(cat "$W/err5")"
	[ "$(ls -A "$W/out" "$W/ro")" = "$before" ] || fail "trace=$bad: files appeared in $W/out or $W/ro"
	[ ! -e "$W/missing" ] || fail "trace=$bad: $W/missing was created"
done
info "unwritable trace paths: exit 1 before mounting, naming the path: $(head -n 1 "$W/err5")"
# a trace is judged as sqk mkimage judges IMAGE: a device node or a dangling symlink is refused
# (the node stays a node), before anything is mounted
mknod "$W/cdev" c 1 7
ln -s "$W/nowhere" "$W/dangling"
for bad in "$W/cdev" "$W/dangling"; do
	timeout 20 "$SQKFUSE" "$W/img.sqsh" "$W/mnt5" -f -o trace="$bad" 2>"$W/err5" && rc=0 || rc=$?
	[ "$rc" = 1 ] || fail "trace=$bad: exit status $rc, want 1"
	mountpoint -q "$W/mnt5" && fail "trace=$bad: something is mounted"
	grep -qE "'$bad' is a (character device|dangling symbolic link)" "$W/err5" ||
		fail "trace=$bad: no reason naming it: $(cat "$W/err5")"
done
[ -c "$W/cdev" ] && [ "$(stat -c %t:%T "$W/cdev")" = 1:7 ] || fail "trace=cdev: the device node was replaced"
[ ! -e "$W/nowhere" ] || fail "trace=dangling: its target was created"
info "a trace onto a device node or a dangling symlink is refused, the node kept"
[ -n "$AS" ] || info "no setpriv: the unwritable directory case was not run"

# 6. The traces feed sqk mkimage --order.
for t in trace1 trace3; do
	sqk_build -q --order "$W/$t" "$S" "$W/ordered_$t.sqsh"
	grep -q 'left out' "$TMP/build.err" && fail "--order $t: $(cat "$TMP/build.err")"
	must "$SQK" extract "$W/ordered_$t.sqsh" "$W/x_$t"
	tree_equal "--order $t" "$S" "$W/x_$t"
done
info "the traces feed sqk mkimage --order: every path found, the image extracts to the source"
exit 0
