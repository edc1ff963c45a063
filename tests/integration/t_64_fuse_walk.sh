#!/bin/bash
# sqkfuse's pushes ahead of a tree walk (fuse/walk.h): files read in the order of their directory
# listings are pushed whole into the page cache before the walker asks for them.
#   1. A tree of 3 directories (60 files of 60-300 KiB, text that compresses, each different,
#      so each has data blocks and a tail in a fragment block; a 2 MiB file, too big to push; an
#      empty file; a subdirectory in the middle of a listing) on an sqk image with integrity data
#      (verified reads): tar of the tree through the mount, its files compared with the source
#      byte for byte. stats=: most files were pushed (walk_pushes) and never requested
#      (read_requests at most a third of -o nowalk's: their blocks were decompressed before they
#      were read), and every data block was decompressed exactly once (the count the image's
#      files need, the same as with -o nowalk).
#   2. The same tar with -o nowalk: no pushes, a read request for every non-empty file, the same
#      bytes and the same decompression count.
#   3. The files read in a shuffled order (fixed seed) through a fresh mount: the walk stays off
#      (no pushes), the bytes are right.
#   4. With trace=, no pushes: the trace lists every file read (a push would hide its read).
. "$(dirname "$0")/lib.sh"
need_root
need_sqk
need_cmd python3 fusermount3 mountpoint tar
[ -e /dev/fuse ] || skip "no /dev/fuse"
SQKFUSE=${SQKFUSE:-$(dirname "$SQK")/sqkfuse}
[ -x "$SQKFUSE" ] || fail "sqkfuse not found at $SQKFUSE"
W=$(scratch walk)

python3 - "$W/src" <<'PY'
import os, random, sys
d = sys.argv[1]
r = random.Random(19)
words = [bytes(r.choice(b'abcdefghijklmnop') for _ in range(r.randint(3, 9))) for _ in range(400)]
def text(n, seed):
    rr = random.Random(seed)
    out = bytearray()
    while len(out) < n:
        out += rr.choice(words) + b' '
    return bytes(out[:n])
seed = 0
for sub in ('a', 'b', 'c'):
    os.makedirs(os.path.join(d, sub))
    for i in range(20):
        seed += 1
        with open(os.path.join(d, sub, 'f%02d' % i), 'wb') as f:
            f.write(text(r.randint(60, 300) << 10, seed))
os.makedirs(os.path.join(d, 'b', 'f10sub'))  # listed between f10 and f11
with open(os.path.join(d, 'b', 'f10sub', 'inner'), 'wb') as f:
    f.write(text(90 << 10, 1000))
with open(os.path.join(d, 'a', 'f05big'), 'wb') as f:
    f.write(text(2 << 20, 1001))
open(os.path.join(d, 'c', 'f07empty'), 'wb').close()
PY
sqk_build -q "$W/src" "$W/w.sqsh"
"$SQK" info "$W/w.sqsh" | grep -q '^root hash:' || fail "the image has no integrity data"
NFILES=$(find "$W/src" -type f -size +0 | wc -l)

# walk_tar OPTS OUT: tar of the mounted tree into OUT/x (extracted), stats in OUT/stats.json
walk_tar() {
	rm -rf "$2"; mkdir -p "$2/x"
	fuse_mount "$W/w.sqsh" "$W/mnt" -o "stats=$2/stats.json${1:+,$1}"
	(cd "$W/mnt" && tar -cf - .) | tar -xf - -C "$2/x" || fail "tar through the mount failed ($1)"
	fuse_umount "$W/mnt"
	diff -r "$W/src" "$2/x" >/dev/null || fail "tar through the mount ($1) differs from the source"
}
walk_tar "" "$W/on"
walk_tar nowalk "$W/off"

python3 - "$W/src" "$W/on/stats.json" "$W/off/stats.json" "$NFILES" <<'PY' || fail "pushes ahead of the walk: wrong counts"
import json, os, sys
src, on, off, n = sys.argv[1], json.load(open(sys.argv[2])), json.load(open(sys.argv[3])), int(sys.argv[4])
bs = 131072
blocks = sum(os.path.getsize(os.path.join(p, f)) // bs for p, _, fs in os.walk(src) for f in fs)
print("files %d, data blocks %d" % (n, blocks))
print("walk:   %s" % on)
print("nowalk: %s" % off)
assert on["data_blocks_decompressed"] == blocks, "walk: %d data blocks decompressed, %d in the files" % (on["data_blocks_decompressed"], blocks)
assert off["data_blocks_decompressed"] == blocks, "nowalk: %d data blocks decompressed" % off["data_blocks_decompressed"]
assert on["fragment_blocks_decompressed"] == off["fragment_blocks_decompressed"], "fragment blocks decompressed differ"
# pushed: everything but the files read before the walk was on and the one too big
assert on["walk_pushes"] >= n - 6, "only %d of %d files pushed" % (on["walk_pushes"], n)
# the files read before the walk was on and the 2 MiB file take requests, and so does a file
# the walker reaches before its push has landed; a pushed file none
assert on["read_requests"] * 3 <= off["read_requests"], "walk: %d read requests (nowalk %d)" % (on["read_requests"], off["read_requests"])
assert off["walk_pushes"] == 0, "nowalk pushed files"
assert off["read_requests"] >= n, "nowalk: %d read requests for %d files" % (off["read_requests"], n)
PY
info "walk: files pushed ahead, blocks decompressed once, the bytes right; nowalk: a request a file"

# 3. shuffled reads: no walk
rm -f "$W/stats.json"
fuse_mount "$W/w.sqsh" "$W/mnt" -o "stats=$W/stats.json"
ls -lR "$W/mnt" >/dev/null
python3 - "$W/src" "$W/mnt" <<'PY' || fail "shuffled reads through the mount differ from the source"
import os, random, sys
src, mnt = sys.argv[1], sys.argv[2]
files = sorted(os.path.relpath(os.path.join(p, f), src) for p, _, fs in os.walk(src) for f in fs)
random.Random(5).shuffle(files)
for f in files:
    with open(os.path.join(src, f), 'rb') as a, open(os.path.join(mnt, f), 'rb') as b:
        assert a.read() == b.read(), f
PY
fuse_umount "$W/mnt"
python3 - "$W/stats.json" <<'PY' || fail "shuffled reads turned the walk on"
import json, sys
st = json.load(open(sys.argv[1]))
print("shuffled: %s" % st)
assert st["walk_pushes"] == 0, "%d pushes" % st["walk_pushes"]
PY

# 4. trace=: every file read is traced, none pushed
rm -f "$W/stats.json"
fuse_mount "$W/w.sqsh" "$W/mnt" -o "stats=$W/stats.json,trace=$W/trace"
(cd "$W/mnt" && tar -cf - .) | cat >/dev/null  # not tar to /dev/null: it would not read
fuse_umount "$W/mnt"
[ "$(wc -l <"$W/trace")" = "$NFILES" ] || fail "trace= lists $(wc -l <"$W/trace") files, $NFILES read"
grep -q '"walk_pushes": 0' "$W/stats.json" || fail "trace=: files pushed: $(cat "$W/stats.json")"
info "shuffled reads and trace=: no pushes"
