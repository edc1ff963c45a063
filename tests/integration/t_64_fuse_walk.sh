#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# sqkfuse's pushes ahead of a tree walk (fuse/walk.h): files read in the order of their directory
# listings are pushed whole into the page cache before the walker asks for them.
#   1. A tree of 3 directories (60 files of 60-300 KiB, text that compresses, each different,
#      so each has data blocks and a tail in a fragment block; a 2 MiB file, too big to push; an
#      empty file; a subdirectory in the middle of a listing) on an sqk image with integrity data
#      (verified reads), read as a walk reads it (listing, then the files in listing order), a
#      little slower than tar: every file compared with the source byte for byte; the 4th file
#      read is resident in the page cache before its read (pushed: its blocks were decompressed
#      ahead); stats=: most files pushed (walk_pushes) and never requested (read_requests at most
#      a third of -o nowalk's), every data block decompressed exactly once (the count the
#      image's files need). Then tar of the tree through a fresh mount, extracted and compared:
#      pushes, each block decompressed once.
#   2. The same with -o nowalk: nothing resident before its read, no pushes, a read request for
#      every non-empty file, the same bytes and the same decompression counts.
#   3. The files read in a shuffled order (fixed seed) through a fresh mount: the walk stays off
#      (no pushes), the bytes are right.
#   4. With trace=, no pushes: the trace lists every file read (a push would hide its read).
#   5. Zero-message opendirs: about one opendir request for the mount; two big directories listed by
#      4 threads at once (many readdirplus calls each, interleaved) and the whole tree: the
#      listings equal the source's.
. "$(dirname "$0")/lib.sh"
need_root
need_sqk
need_feature fuse
need_cmd python3 fusermount3 mountpoint tar fincore
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

# walk_read OPTS OUT: reads the mounted tree as a walk does (each directory listed, then its
# files in listing order, subdirectories after the files), a little slower than tar would (the
# machine may be loaded: the pushes get time to land), comparing every file with the source;
# after the first 3 files of a/, the 4th must be resident in the page cache before it is read
# (when OPTS is empty; with nowalk it must not be). Then tar of the tree through a fresh mount,
# extracted and compared. Stats of the first mount in OUT/stats.json.
walk_read() {
	rm -rf "$2"; mkdir -p "$2/x"
	fuse_mount "$W/w.sqsh" "$W/mnt" -o "stats=$2/stats.json${1:+,$1}"
	python3 - "$W/src" "$W/mnt" "$1" <<'PY' || fail "walk through the mount ($1): wrong bytes or not pushed"
import os, subprocess, sys, time
src, mnt, opts = sys.argv[1:4]
def resident(p):
    out = subprocess.run(['fincore', '--bytes', '--noheadings', '--output', 'RES', p],
                         capture_output=True, text=True, check=True).stdout
    return int(out.strip() or 0)
nread = 0
def walk(rel):
    global nread
    ents = list(os.scandir(os.path.join(mnt, rel)))  # the listing, in its order
    for e in ents:
        if not e.is_file(follow_symlinks=False):
            continue
        p = os.path.join(rel, e.name)
        if rel == 'a' and nread == 3:  # three files read in order: the walk is on
            want = (os.path.getsize(os.path.join(src, p)) + 4095) // 4096 * 4096
            deadline = time.time() + 10
            while opts != 'nowalk' and resident(e.path) < want and time.time() < deadline:
                time.sleep(0.05)
            got = resident(e.path)
            print("%s before its read: %d of %d bytes resident" % (p, got, want))
            assert got == (0 if opts == 'nowalk' else want), "%s: %d bytes resident" % (p, got)
        with open(e.path, 'rb') as f, open(os.path.join(src, p), 'rb') as g:
            assert f.read() == g.read(), p
        if rel == 'a' or nread > 3:
            nread += 1
        time.sleep(0.02)
    for e in ents:
        if e.is_dir(follow_symlinks=False):
            walk(os.path.join(rel, e.name))
for d in sorted(os.listdir(mnt)):
    walk(d)
print("%d files read, identical" % nread)
PY
	fuse_umount "$W/mnt"
	fuse_mount "$W/w.sqsh" "$W/mnt" -o "stats=$2/tar.json${1:+,$1}"
	(cd "$W/mnt" && tar -cf - .) | tar -xf - -C "$2/x" || fail "tar through the mount failed ($1)"
	fuse_umount "$W/mnt"
	diff -r "$W/src" "$2/x" >/dev/null || fail "tar through the mount ($1) differs from the source"
}
walk_read "" "$W/on"
walk_read nowalk "$W/off"

python3 - "$W/src" "$W/on" "$W/off" "$NFILES" <<'PY' || fail "pushes ahead of the walk: wrong counts"
import json, os, sys
src, n = sys.argv[1], int(sys.argv[4])
on, off = (json.load(open(os.path.join(d, 'stats.json'))) for d in sys.argv[2:4])
ton, toff = (json.load(open(os.path.join(d, 'tar.json'))) for d in sys.argv[2:4])
bs = 131072
blocks = sum(os.path.getsize(os.path.join(p, f)) // bs for p, _, fs in os.walk(src) for f in fs)
print("files %d, data blocks %d" % (n, blocks))
print("walk:   %s\n  tar: %s" % (on, ton))
print("nowalk: %s\n  tar: %s" % (off, toff))
for name, st in (("walk", on), ("nowalk", off), ("walk tar", ton), ("nowalk tar", toff)):
    assert st["data_blocks_decompressed"] == blocks, "%s: %d data blocks decompressed, %d in the files" % (name, st["data_blocks_decompressed"], blocks)
    assert st["fragment_blocks_decompressed"] == off["fragment_blocks_decompressed"], "%s: fragment blocks decompressed differ" % name
# pushed: everything but the files read before the walk was on and the one too big
assert on["walk_pushes"] >= n - 6, "only %d of %d files pushed" % (on["walk_pushes"], n)
assert ton["walk_pushes"] > 0, "tar: no pushes"
# the files read before the walk was on and the 2 MiB file take requests; pushed files none
assert on["read_requests"] * 3 <= off["read_requests"], "walk: %d read requests (nowalk %d)" % (on["read_requests"], off["read_requests"])
assert off["walk_pushes"] == 0 and toff["walk_pushes"] == 0, "nowalk pushed files"
assert off["read_requests"] >= n, "nowalk: %d read requests for %d files" % (off["read_requests"], n)
PY
info "walk: files pushed ahead (resident before their read), blocks decompressed once, the bytes right; nowalk: a request a file"

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

# 5. Zero-message opendirs (FUSE_CAP_NO_OPENDIR_SUPPORT): one opendir request for the whole
#    mount (answered ENOSYS; a few when the first listings race it); each readdir finds its listing by directory and offset. Two big
#    directories (1500 and 2100 names: many readdirplus calls each) listed by 4 threads at once,
#    interleaved, 5 times each, and a walk of the whole tree: every listing equals the source's.
python3 - "$W/src2" <<'PY'
import os, sys
d = sys.argv[1]
for sub, n in (('big1', 1500), ('big2', 2100)):
    os.makedirs(os.path.join(d, sub))
    for i in range(n):
        with open(os.path.join(d, sub, 'entry-with-a-longish-name-%05d' % i), 'w') as f:
            f.write('%d\n' % i)
PY
cp -a "$W/src/." "$W/src2/"
sqk_build -q "$W/src2" "$W/d.sqsh"
rm -f "$W/stats.json"
fuse_mount "$W/d.sqsh" "$W/mnt" -o "stats=$W/stats.json"
python3 - "$W/src2" "$W/mnt" <<'PY' || fail "listings through zero-message opendirs differ from the source"
import os, sys, threading
src, mnt = sys.argv[1], sys.argv[2]
errs = []
def lister(sub):
    want = sorted(os.listdir(os.path.join(src, sub)))
    for _ in range(5):
        got = [e.name for e in os.scandir(os.path.join(mnt, sub))]
        if sorted(got) != want or len(got) != len(want):
            errs.append((sub, len(got), len(want)))
ts = [threading.Thread(target=lister, args=(s,)) for s in ('big1', 'big2', 'big1', 'big2')]
[t.start() for t in ts]; [t.join() for t in ts]
for p, ds, fs in os.walk(src):
    rel = os.path.relpath(p, src)
    if sorted(os.listdir(os.path.join(mnt, rel))) != sorted(ds + fs):
        errs.append(rel)
assert not errs, errs[:5]
print("concurrent listings of 1500 and 2100 names and the whole tree: identical")
PY
fuse_umount "$W/mnt"
python3 - "$W/stats.json" <<'PY' || fail "zero-message opendirs: opendir requests were sent"
import json, sys
st = json.load(open(sys.argv[1]))
print("opendir requests: %d" % st["opendir_requests"])
# the first ENOSYS reply tells the kernel; opendirs racing it (the 4 threads) may still come;
# with opendir requests there would be one for each of the 20 listings and every directory
assert st["opendir_requests"] <= 4, st
PY
info "zero-message opendirs: one opendir request, listings right also when interleaved"
