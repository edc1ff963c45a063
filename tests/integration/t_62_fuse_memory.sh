#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# sqkfuse's node table (the names behind the paths in log lines) stays within its budget
# (-o names=N) whatever the number of files, and a node whose name was evicted is never logged
# under a wrong path:
#   1. names=64, a tree of 3,000 files walked (find, ls -lR): stats= counts at most 64 names; the
#      corrupted file read after the walk is logged as its path, a tail of it after "...", or
#      "inode N" with its inode number, nothing else; after the kernel forgot every node
#      (FORGETs of evicted names are ignored), a new lookup names the whole path again; the
#      mount keeps working and unmounts with exit 0.
#   2. names=0: the corrupted file is logged as "inode N".
#   3. Default budget, 200,000 files in 200 directories: after walking the first half and then
#      all of it, the daemon's peak RSS (VmHWM) is under 60 MiB, and with cache=4M (the block
#      cache no longer growing) the second 100,000 files add less than 4 MiB (a name per file
#      took about 75 bytes, 7 MiB here).
# The trees are tar streams written by Python and packed with sqk mkimage --tar (no files on
# disk), so the test takes well under a minute.
. "$(dirname "$0")/lib.sh"
need_root
need_sqk
need_feature fuse
need_cmd python3 fusermount3 mountpoint
[ -e /dev/fuse ] || skip "no /dev/fuse"
SQKFUSE=${SQKFUSE:-$(dirname "$SQK")/sqkfuse}
[ -x "$SQKFUSE" ] || fail "sqkfuse not found at $SQKFUSE"
W=$(scratch fusemem)

# mktar DIRS PER_DIR [BIG]: a tar stream on stdout of directories dNNN with PER_DIR small files
# fNNNNNNN each, and with BIG (a path such as d005/big.txt) a 300 KB text file (blocks, not only
# a fragment).
mktar() {
	python3 - "$@" <<'PY'
import sys
dirs, per = int(sys.argv[1]), int(sys.argv[2])
big = sys.argv[3] if len(sys.argv) > 3 else None
out = sys.stdout.buffer

def hdr(name, mode, size, typ):
    h = bytearray(512)
    h[0:len(name)] = name.encode()
    h[100:108] = b'%07o\0' % mode
    h[108:124] = b'0000000\0' * 2
    h[124:136] = b'%011o\0' % size
    h[136:148] = b'%011o\0' % 1000000
    h[148:156] = b' ' * 8
    h[156] = ord(typ)
    h[257:265] = b'ustar\x0000'
    h[148:156] = b'%06o\0 ' % sum(h)
    return bytes(h)

def member(name, data):
    pad = -len(data) % 512
    return hdr(name, 0o644, len(data), '0') + data + b'\0' * pad

buf = []
for d in range(dirs):
    dn = 'd%03d' % d
    buf.append(hdr(dn + '/', 0o755, 0, '5'))
    for i in range(d * per, (d + 1) * per):
        buf.append(member('%s/f%07d' % (dn, i), b'%s/f%07d: file %d\n' % (dn.encode(), i, i)))
    if big and big.startswith(dn + '/'):
        text = b'\n'.join(b'line %d of some compressible text' % i for i in range(9000))
        buf.append(member(big, text))
    if len(buf) > 4000:
        out.write(b''.join(buf))
        buf = []
buf.append(b'\0' * 1024)
out.write(b''.join(buf))
PY
}

# hwm PID: the peak RSS of PID in KiB.
hwm() {
	sed -n 's/^VmHWM:[[:space:]]*\([0-9]*\) kB$/\1/p' "/proc/$1/status"
}

# 1. A budget of 64 names for 3,000 files.
S=$W/small
mkdir -p "$S"
mktar 10 300 d005/big.txt | "$SQK" mkimage -q -c gzip --tar - "$S/img.sqsh" ||
	fail "sqk mkimage --tar of the small tree failed"
python3 "$IT_DIR/sqfs_patch.py" patch "$S/img.sqsh" data-garbage /d005/big.txt >/dev/null ||
	fail "patching the data block of /d005/big.txt failed"
# noverify (here and below): the garbage lies in the superblock's integrity chunk (a verified
# mount refuses the image); this is about the names in the log of a block that does not decode
fuse_mount "$S/img.sqsh" "$S/mnt" -o noverify,names=64,stats="$S/stats.json"
ino=$(stat -c %i "$S/mnt/d005/big.txt") || fail "cannot stat /d005/big.txt"
[ "$(find "$S/mnt" -type f | wc -l)" = 3001 ] || fail "find through names=64 does not count 3001 files"
ls -lR "$S/mnt" >/dev/null || fail "ls -lR through names=64 failed"
# every log line about the broken file names it rightly, as far as the table still knows it
check_names() { # check_names WHEN: fails on a log line for the broken file under another name
	local bad
	bad=$(grep -F "$S/img.sqsh: " "$TMP/fuse.err" | grep -F ': read' |
		grep -vE "img\.sqsh: (/d005/big\.txt|\.\.\./big\.txt|\.\.\./d005/big\.txt|inode $ino): read ")
	[ -z "$bad" ] || fail "$1: a log line names the broken file wrongly: $bad"
}
if cat "$S/mnt/d005/big.txt" >/dev/null 2>&1; then fail "reading the corrupted file succeeded"; fi
n=$(grep -c ': read ' "$TMP/fuse.err")
[ "$n" -ge 1 ] || fail "no log line for the corrupted file: $(cat "$TMP/fuse.err")"
check_names "after the walk"
info "names=64, after a walk of 3001 files: $(grep -o 'img.sqsh: .*: read' "$TMP/fuse.err" | head -n 1)"
echo 2 >/proc/sys/vm/drop_caches # FORGETs, mostly of names evicted long ago
if cat "$S/mnt/d005/big.txt" >/dev/null 2>&1; then fail "reading the corrupted file succeeded"; fi
[ "$(grep -cF "img.sqsh: /d005/big.txt: read " "$TMP/fuse.err")" -ge 1 ] ||
	fail "after forgets, a new lookup in a full table does not name /d005/big.txt: $(cat "$TMP/fuse.err")"
check_names "after forgets"
grep -q ': ?' "$TMP/fuse.err" && fail "a log line has an unknown path: $(grep ': ?' "$TMP/fuse.err")"
[ "$(cat "$S/mnt/d009/f0002999")" = "d009/f0002999: file 2999" ] || fail "a small file reads wrong"
[ "$(find "$S/mnt" -type f | wc -l)" = 3001 ] || fail "a second walk does not count 3001 files"
mountpoint -q "$S/mnt" || fail "the mount went away"
fuse_umount "$S/mnt"
names=$(json_get "$S/stats.json" node_names)
[ "$names" -le 64 ] || fail "names=64 kept $names names"
info "names=64: log lines name the broken file rightly, also after forgets; $names names at unmount"

# 2. No names at all: the inode number.
fuse_mount "$S/img.sqsh" "$S/mnt" -o noverify,names=0
if cat "$S/mnt/d005/big.txt" >/dev/null 2>&1; then fail "reading the corrupted file succeeded"; fi
grep -qF "img.sqsh: inode $ino: read " "$TMP/fuse.err" ||
	fail "names=0: no log line names inode $ino: $(cat "$TMP/fuse.err")"
fuse_umount "$S/mnt"
info "names=0: the broken file is logged as inode $ino"

# 3. Peak RSS over 200,000 files with the default budget.
B=$W/many
mkdir -p "$B"
mktar 200 1000 | "$SQK" mkimage -q --tar - "$B/img.sqsh" || fail "sqk mkimage --tar of 200,000 files failed"
walk() { # walk OPTS: leaves the VmHWM (KiB) after half the tree in H1 and after all of it in H2
	fuse_mount "$B/img.sqsh" "$B/mnt" -o "$1"
	[ "$(find "$B/mnt"/d0[0-9][0-9] -type f | wc -l)" = 100000 ] || fail "$1: find counts wrong"
	H1=$(hwm "$FUSE_PID")
	[ "$(find "$B/mnt" -type f | wc -l)" = 200000 ] || fail "$1: find counts wrong"
	ls -lR "$B/mnt" >/dev/null || fail "$1: ls -lR failed"
	H2=$(hwm "$FUSE_PID")
	fuse_umount "$B/mnt"
	[ -n "$H1" ] && [ -n "$H2" ] || fail "no VmHWM read"
}
walk stats="$B/stats.json"
names=$(json_get "$B/stats.json" node_names)
[ "$names" -le 65536 ] || fail "the default budget kept $names names"
[ "$H2" -lt $((60 * 1024)) ] || fail "a walk of 200,000 files peaked at $H2 KiB (limit 60 MiB)"
info "200,000 files, defaults: peak RSS $((H1 / 1024)) MiB after 100,000, $((H2 / 1024)) MiB after all; $names names"
walk cache=4M
[ $((H2 - H1)) -lt 4096 ] ||
	fail "with cache=4M, the second 100,000 files grew the peak RSS by $((H2 - H1)) KiB (limit 4 MiB)"
info "cache=4M: peak RSS $H1 KiB after 100,000 files, $H2 KiB after 200,000"
exit 0
