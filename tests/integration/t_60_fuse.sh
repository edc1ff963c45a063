#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# sqkfuse: mount images of the rich tree built by mksquashfs and by sqk mkimage and compare them
# with the source (content, modes, owners, mtimes, devices, links, xattrs, hard links); 16
# threads reading random ranges; a corrupted file gives EIO while the others stay readable and
# the mount stays up; stats= shows one decompression per block; SIGTERM unmounts.
. "$(dirname "$0")/lib.sh"
need_root
need_sqk
need_feature fuse
need_cmd python3 mksquashfs fusermount3 mountpoint
[ -e /dev/fuse ] || skip "no /dev/fuse"
SQKFUSE=${SQKFUSE:-$(dirname "$SQK")/sqkfuse}
[ -x "$SQKFUSE" ] || fail "sqkfuse not found at $SQKFUSE"
W=$(scratch fuse)

$MKTREE "$W/src" || fail "mktree failed"

# 1. mksquashfs image (zstd) and sqk image (xz): full comparison through the mount.
mksquashfs "$W/src" "$W/peer.sqsh" -comp zstd -noappend -quiet -no-progress >/dev/null 2>&1 ||
	fail "mksquashfs failed"
fuse_mount "$W/peer.sqsh" "$W/m1"
tree_equal "sqkfuse on mksquashfs image" "$W/src" "$W/m1"
# read-only: writes fail with EROFS
if touch "$W/m1/newfile" 2>"$TMP/touch.err"; then fail "creating a file succeeded"; fi
grep -qi 'read-only' "$TMP/touch.err" || fail "write did not fail with EROFS: $(cat "$TMP/touch.err")"
# statfs
[ "$(stat -f -c %b "$W/m1")" -gt 0 ] || fail "statfs reports no blocks"
fuse_umount "$W/m1"

sqk_build -q -c xz "$W/src" "$W/own.sqsh"
fuse_mount "$W/own.sqsh" "$W/m2" -o threads=2,cache=8M
tree_equal "sqkfuse on sqk image" "$W/src" "$W/m2"
fuse_umount "$W/m2"

# 2. Stress: 16 threads read random ranges of large files and compare with the source.
B=$W/big
mkdir -p "$B/src"
python3 - "$B/src" <<'PY'
import os, random, sys
r = random.Random(7)
d = sys.argv[1]
words = [bytes(r.choice(b'abcdefghij klmnop\n') for _ in range(r.randint(3, 9))) for _ in range(500)]
for i in range(4):
    with open(os.path.join(d, 'text%d' % i), 'wb') as f:
        f.write(b' '.join(r.choice(words) for _ in range(600000)))
with open(os.path.join(d, 'random'), 'wb') as f:
    f.write(r.randbytes(6 << 20))
PY
sqk_build -q --no-fragments "$B/src" "$B/big.sqsh"
fuse_mount "$B/big.sqsh" "$B/mnt" -o stats="$B/stats.json"
python3 - "$B/src" "$B/mnt" <<'PY' || fail "random reads through the mount differ from the source"
import os, random, sys, threading
src, mnt = sys.argv[1], sys.argv[2]
names = sorted(os.listdir(src))
errors = []
def worker(seed):
    r = random.Random(seed)
    for _ in range(150):
        n = r.choice(names)
        size = os.path.getsize(os.path.join(src, n))
        off = r.randrange(size)
        ln = r.choice([1, 4096, 65536, 300000])
        with open(os.path.join(src, n), 'rb') as a, open(os.path.join(mnt, n), 'rb') as b:
            a.seek(off); b.seek(off)
            if a.read(ln) != b.read(ln):
                errors.append((n, off, ln))
ts = [threading.Thread(target=worker, args=(i,)) for i in range(16)]
[t.start() for t in ts]
[t.join() for t in ts]
if errors:
    print("mismatches:", errors[:10]); sys.exit(1)
print("16 threads x 150 random reads: identical")
PY
fuse_umount "$B/mnt"

# 3. stats=: a sequential read of every large file decompresses each data block exactly once.
rm -f "$B/stats.json"
fuse_mount "$B/big.sqsh" "$B/mnt" -o stats="$B/stats.json"
for f in "$B/mnt"/*; do cat "$f" >/dev/null; done
for f in "$B/mnt"/*; do cat "$f" >/dev/null; done   # second pass: page cache / block cache
fuse_umount "$B/mnt"
[ -s "$B/stats.json" ] || fail "stats file not written at unmount"
python3 - "$B/src" "$B/stats.json" <<'PY' || fail "blocks were not decompressed exactly once"
import json, os, sys
src, st = sys.argv[1], json.load(open(sys.argv[2]))
for k in ("data_blocks_decompressed", "fragment_blocks_decompressed",
          "metadata_blocks_decompressed", "cache_hits", "cache_misses", "bytes_read_from_image"):
    assert k in st, "missing key %s" % k
# random data is stored raw: raw blocks are not decompressed but still counted as read blocks?
# Count only text files' blocks as the lower bound and all blocks as the upper bound.
bs = 131072
total = sum((os.path.getsize(os.path.join(src, n)) + bs - 1) // bs for n in os.listdir(src))
got = st["data_blocks_decompressed"]
print("data blocks: %d in the files, %d decompressed; stats %s" % (total, got, st))
if got > total:
    sys.exit("a block was decompressed more than once (%d > %d)" % (got, total))
text = sum((os.path.getsize(os.path.join(src, n)) + bs - 1) // bs for n in os.listdir(src) if n.startswith('text'))
if got < text:
    sys.exit("fewer decompressions (%d) than compressed blocks (%d)" % (got, text))
PY
# The kernel's readahead covers sequential reads: no page cache fills. On one thread: with
# several, its requests may be answered out of order, and a small one then counts as a random
# read and fills its group (harmless: the block is in the cache; a CI run saw 4 of 97 reads).
rm -f "$B/stats.json"
fuse_mount "$B/big.sqsh" "$B/mnt" -s -o stats="$B/stats.json"
for f in "$B/mnt"/*; do cat "$f" >/dev/null; done
fuse_umount "$B/mnt"
fills=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["page_cache_fills"])' "$B/stats.json") ||
	fail "no page_cache_fills in the stats"
[ "$fills" = 0 ] || fail "sequential reads filled the page cache $fills times"

# 4. Corruption inside one file: EIO for that file, a log line naming it, others readable.
C=$W/corrupt
mkdir -p "$C/src"
python3 - "$C/src" <<'PY'
import os, random, sys
r = random.Random(3)
d = sys.argv[1]
text = lambda n: b'\n'.join(b'line %d of some compressible text %d' % (i, r.randint(0, 9)) for i in range(n))
open(os.path.join(d, 'a_broken.txt'), 'wb').write(text(20000))
open(os.path.join(d, 'b_fine.txt'), 'wb').write(text(20000))
open(os.path.join(d, 'c_small.txt'), 'wb').write(b'small file\n')
PY
mksquashfs "$C/src" "$C/img.sqsh" -comp zstd -noappend -quiet -no-progress >/dev/null 2>&1 ||
	fail "mksquashfs failed"
# mksquashfs writes the first file's first block right after the superblock (offset 96).
python3 - "$C/img.sqsh" <<'PY'
import sys
with open(sys.argv[1], 'r+b') as f:
    f.seek(96); f.write(b'\xff' * 64)
PY
: >"$TMP/fuse.err"
fuse_mount "$C/img.sqsh" "$C/mnt"
if cat "$C/mnt/a_broken.txt" >/dev/null 2>"$TMP/cat.err"; then fail "reading the corrupted file succeeded"; fi
grep -q 'Input/output error' "$TMP/cat.err" || fail "corrupted file did not give EIO: $(cat "$TMP/cat.err")"
cmp -s "$C/mnt/b_fine.txt" "$C/src/b_fine.txt" || fail "intact file unreadable after corruption"
cmp -s "$C/mnt/c_small.txt" "$C/src/c_small.txt" || fail "intact small file unreadable"
mountpoint -q "$C/mnt" || fail "mount went away after EIO"
grep -q 'a_broken.txt' "$TMP/fuse.err" || fail "no log line names the corrupted file: $(cat "$TMP/fuse.err")"
info "corruption: EIO for a_broken.txt, others intact; log: $(grep a_broken "$TMP/fuse.err" | head -n 1)"
fuse_umount "$C/mnt"

# 4b. The log line names the whole path, put together from the node table when the error is
#     logged: for a corrupted file two directories down; again after the kernel forgot every
#     node (dropping the dentry cache sends FORGETs) and looked it up anew; and, read through an
#     open descriptor, under the name the file was first reached by (a hard link listed by
#     readdirplus) after the kernel forgot that link's directory, which the entry still needs.
N=$W/nested
mkdir -p "$N/src/d1/d2" "$N/src/d3"
python3 - "$N/src" <<'PY'
import os, random, sys
r = random.Random(5)
d = sys.argv[1]
text = lambda n: b'\n'.join(b'line %d of some compressible text %d' % (i, r.randint(0, 9)) for i in range(n))
open(os.path.join(d, 'd1/d2/a_broken.txt'), 'wb').write(text(20000))
open(os.path.join(d, 'd1/d2/b_fine.txt'), 'wb').write(text(20000))
os.link(os.path.join(d, 'd1/d2/a_broken.txt'), os.path.join(d, 'd3/link.txt'))
PY
mksquashfs "$N/src" "$N/img.sqsh" -comp zstd -noappend -quiet -no-progress >/dev/null 2>&1 ||
	fail "mksquashfs failed"
python3 - "$N/img.sqsh" <<'PY'
import sys
with open(sys.argv[1], 'r+b') as f:  # the first file's first block, as above
    f.seek(96); f.write(b'\xff' * 64)
PY
logged() { # logged PATH: how many log lines name PATH as the failing node
	grep -cF "$N/img.sqsh: $1: read" "$TMP/fuse.err"
}
fuse_mount "$N/img.sqsh" "$N/mnt"
cmp -s "$N/mnt/d1/d2/b_fine.txt" "$N/src/d1/d2/b_fine.txt" || fail "nested intact file unreadable"
if cat "$N/mnt/d1/d2/a_broken.txt" >/dev/null 2>&1; then fail "reading the corrupted file succeeded"; fi
[ "$(logged /d1/d2/a_broken.txt)" -ge 1 ] || fail "no log line names /d1/d2/a_broken.txt: $(cat "$TMP/fuse.err")"
n=$(logged /d1/d2/a_broken.txt)
echo 2 >/proc/sys/vm/drop_caches
if cat "$N/mnt/d1/d2/a_broken.txt" >/dev/null 2>&1; then fail "reading the corrupted file succeeded"; fi
[ "$(logged /d1/d2/a_broken.txt)" -gt "$n" ] ||
	fail "after forgets, no new log line names /d1/d2/a_broken.txt: $(cat "$TMP/fuse.err")"
echo 2 >/proc/sys/vm/drop_caches
ls -l "$N/mnt/d3" >/dev/null || fail "cannot list d3"
exec 3<"$N/mnt/d1/d2/a_broken.txt" || fail "cannot open the corrupted file"
echo 2 >/proc/sys/vm/drop_caches # d3 and its dentry go; the open file stays known
if cat <&3 >/dev/null 2>&1; then fail "reading the corrupted file succeeded"; fi
exec 3<&-
[ "$(logged /d3/link.txt)" -ge 1 ] ||
	fail "after its directory was forgotten, no log line names /d3/link.txt: $(cat "$TMP/fuse.err")"
grep -q ': ?' "$TMP/fuse.err" && fail "a log line has an unknown path: $(grep ': ?' "$TMP/fuse.err")"
info "nested corruption: log lines name /d1/d2/a_broken.txt, also after forgets, and /d3/link.txt"
fuse_umount "$N/mnt"

# 5. Bad image, missing mount point, bad option: reported before detaching, non-zero exit.
rc=0; "$SQKFUSE" "$C/src/c_small.txt" "$C/mnt" 2>"$TMP/bad.err" || rc=$?
[ $rc != 0 ] || fail "a non-image mounted"
mountpoint -q "$C/mnt" && fail "a non-image got mounted"
rc=0; "$SQKFUSE" "$W/peer.sqsh" "$W/nonexistent" 2>"$TMP/bad.err" || rc=$?
[ $rc != 0 ] || fail "missing mount point accepted"
grep -q nonexistent "$TMP/bad.err" || fail "missing mount point not named: $(cat "$TMP/bad.err")"
rc=0; "$SQKFUSE" "$W/peer.sqsh" "$C/mnt" -o no_such_option 2>"$TMP/bad.err" || rc=$?
[ $rc != 0 ] || fail "unknown option accepted"
mountpoint -q "$C/mnt" && fail "mounted despite a bad option"
# numbers follow one rule: decimal digits within the option's range, nothing else
for bad in cache=-1 cache=1T fill=-1 fill=65 threads=0x4 readahead=-2 offset=1e3 retries=101 timeout=0 \
	names=-1 names=4294967296; do
	rc=0; "$SQKFUSE" "$W/peer.sqsh" "$C/mnt" -o "$bad" 2>"$TMP/bad.err" || rc=$?
	[ $rc = 2 ] || fail "-o $bad: exit $rc, expected 2 (usage): $(cat "$TMP/bad.err")"
	grep -q "${bad%%=*}" "$TMP/bad.err" || fail "-o $bad: the message does not name the option"
	mountpoint -q "$C/mnt" && fail "mounted with -o $bad"
done
fuse_mount "$W/peer.sqsh" "$C/mnt" -o threads=08,readahead=08,fill=0 # 08 is eight, not octal
[ -n "$(ls "$C/mnt")" ] || fail "empty mount with threads=08"
fuse_umount "$C/mnt"

# 6. Daemon mode (no -f): the process forks before opening the image; sequential reads of large
#    files (readahead on worker threads) must still work in the detached daemon.
mkdir -p "$B/dmnt"
"$SQKFUSE" "$B/big.sqsh" "$B/dmnt" || fail "sqkfuse (daemon mode) failed to mount"
_MOUNTS="$B/dmnt $_MOUNTS"
for f in "$B/src"/*; do
	timeout 60 cmp "$f" "$B/dmnt/$(basename "$f")" || fail "daemon mode: $(basename "$f") differs or hangs"
done
fusermount3 -u "$B/dmnt" || fail "cannot unmount the daemon-mode mount"
info "daemon mode: large files read back identical"
# started with stdin, stdout or stderr closed (by a launcher): the daemon's messages never pass
# for "ready" (exit 0 with nothing mounted), nor is the parent left waiting on a served mount
closed_run() { # REDIRECTIONS IMAGE: sqkfuse IMAGE on $B/dmnt with those fds closed; its exit
	timeout 30 sh -c "exec \"\$0\" \"\$1\" \"\$2\" $1" "$SQKFUSE" "$2" "$B/dmnt"
}
first=$(ls "$B/src" | head -n 1)
for closed in '<&- >&-' '>&- 2>&-' '<&- 2>&-'; do
	rc=0; closed_run "$closed" "$B/big.sqsh" || rc=$?
	[ $rc = 0 ] || fail "daemon mode with $closed: exit $rc (124: the parent hung)"
	mountpoint -q "$B/dmnt" || fail "daemon mode with $closed: exit 0 but not mounted"
	cmp -s "$B/src/$first" "$B/dmnt/$first" || fail "daemon mode with $closed: $first differs"
	fusermount3 -u "$B/dmnt" || fail "cannot unmount the mount made with $closed"
	rc=0; closed_run "$closed" "$C/src/c_small.txt" || rc=$?
	[ $rc = 1 ] || fail "a non-image in daemon mode with $closed: exit $rc, expected 1"
	mountpoint -q "$B/dmnt" && fail "a non-image got mounted with $closed"
done
info "daemon mode with closed stdio: mounts and exits 0, a bad image exits 1"

# 7. Page-cache fill: one 4 KiB read (POSIX_FADV_RANDOM: no readahead) brings the whole block
#    into the page cache, so the block's other 31 pages are read without a request; with
#    fill=0 each page is a request; fill=4 caches the aligned group of 4 blocks.
# A page found missing is tried once more on a new mount (a VM may reclaim page-cache pages on
# its own: one of 128 went once); a page too many, or missing twice, fails.
fill_check() { # fill_check OPTS EXPECTED_REQUESTS EXPECTED_RESIDENT_BYTES
	local try rc
	for try in 1 2; do
		fill_once "$@" && return 0
		rc=$?
		[ "$rc" = 3 ] && [ "$try" = 1 ] || fail "fill ($1): wrong bytes, or not cached as asked"
		info "fill ($1): a page missing; once more"
	done
}
fill_once() {
	rm -f "$B/stats.json"
	fuse_mount "$B/big.sqsh" "$B/mnt" -o "stats=$B/stats.json,$1"
	local rc=0
	python3 - "$B/src/random" "$B/mnt/random" "$3" <<'PY' || rc=$?
import os, subprocess, sys, time
src, mnt, want = sys.argv[1], sys.argv[2], int(sys.argv[3])
bs = 131072
blk = 5 * bs
fd = os.open(mnt, os.O_RDONLY)
os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
ref = open(src, 'rb').read()
assert os.pread(fd, 4096, blk + 8192) == ref[blk + 8192:blk + 12288], "first read differs"
def resident():
    out = subprocess.run(['fincore', '--bytes', '--noheadings', '--output', 'RES', mnt],
                         capture_output=True, text=True, check=True).stdout
    return int(out.strip())
deadline = time.time() + 10
while resident() < want and time.time() < deadline:
    time.sleep(0.02)
time.sleep(0.1)
got = resident()
print("resident after one 4 KiB read: %d bytes (expected %d)" % (got, want))
for off in range(blk, blk + bs, 4096):  # the block's pages, now from the page cache
    assert os.pread(fd, 4096, off) == ref[off:off + 4096], "page at %d differs" % off
assert got <= want, "resident %d > %d" % (got, want)
if got < want:
    sys.exit(3)
PY
	fuse_umount "$B/mnt"
	[ "$rc" = 0 ] || return "$rc"
	python3 - "$B/stats.json" "$2" <<'PY' || fail "fill ($1): wrong number of read requests"
import json, sys
st, want = json.load(open(sys.argv[1])), int(sys.argv[2])
print("read requests: %d (expected %d), fills: %d" % (st["read_requests"], want, st["page_cache_fills"]))
assert st["read_requests"] == want
PY
}
fill_check fill=1 1 131072
fill_check fill=0 32 4096
fill_check fill=4 1 524288
info "page-cache fill: one request per block with fill=1, one per page with fill=0"

# 8. SIGTERM unmounts cleanly, also under load.
fuse_mount "$W/peer.sqsh" "$W/m3"
kill -TERM "$FUSE_PID"
wait "$FUSE_PID" || fail "sqkfuse exited $? on SIGTERM"
mountpoint -q "$W/m3" && fail "still mounted after SIGTERM"
info "SIGTERM: unmounted, exit 0"
# ... also while 8 threads read random pages (fills in flight, requests queued in the kernel),
#     signalled at different moments.
for delay in 0.3 1 1.7; do
fuse_mount "$B/big.sqsh" "$B/mnt"
python3 - "$B/mnt" <<'PY' &
import os, random, sys, threading, time
d = sys.argv[1]
names = sorted(os.listdir(d))
end = time.time() + 3  # reads of cached pages still work after the unmount
def worker(seed):
    r = random.Random(seed)
    try:
        fds = [os.open(os.path.join(d, n), os.O_RDONLY) for n in names]
        for fd in fds:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
        while time.time() < end:
            fd = r.choice(fds)
            os.pread(fd, 4096, r.randrange(os.fstat(fd).st_size) & ~4095)
    except OSError:
        pass  # the mount went away
ts = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
[t.start() for t in ts]
[t.join() for t in ts]
PY
READERS=$!
sleep "$delay"
kill -TERM "$FUSE_PID"
for i in $(seq 300); do kill -0 "$FUSE_PID" 2>/dev/null || break; sleep 0.1; done
kill -0 "$FUSE_PID" 2>/dev/null && fail "sqkfuse still running 30 s after SIGTERM under load"
wait "$FUSE_PID" || fail "sqkfuse exited $? on SIGTERM under load"
mountpoint -q "$B/mnt" && fail "still mounted after SIGTERM under load"
for i in $(seq 100); do kill -0 "$READERS" 2>/dev/null || break; sleep 0.1; done
kill -0 "$READERS" 2>/dev/null && { kill -9 "$READERS"; fail "readers hang after SIGTERM"; }
done
info "SIGTERM under random-read load: unmounted, exit 0, readers ended"

# 9. `sqk mount`, and mount.fuse3 the way an /etc/fstab line "IMAGE DIR fuse.sqkfuse
#    ro,allow_other 0 0" reaches sqkfuse (mount(8) itself finds sqkfuse only in its standard
#    PATH, where make install puts it).
mkdir -p "$B/m9"
"$SQK" mount "$B/big.sqsh" "$B/m9" -o cache=16M || fail "sqk mount failed"
_MOUNTS="$B/m9 $_MOUNTS"
cmp "$B/src/random" "$B/m9/random" || fail "sqk mount: file differs"
umount "$B/m9" || fail "umount after sqk mount failed"
if command -v mount.fuse3 >/dev/null; then
	PATH="$(dirname "$SQKFUSE"):$PATH" mount.fuse3 "$B/big.sqsh" "$B/m9" -t sqkfuse \
		-o ro,allow_other || fail "mount.fuse3 -t sqkfuse failed"
	grep -q " $B/m9 fuse.sqkfuse ro" /proc/mounts || fail "no fuse.sqkfuse ro mount in /proc/mounts"
	grep " $B/m9 " /proc/mounts | grep -q allow_other || fail "allow_other not passed through"
	cmp "$B/src/random" "$B/m9/random" || fail "mount.fuse3: file differs"
	umount "$B/m9" || fail "umount after mount.fuse3 failed"
	info "sqk mount and mount.fuse3 (fstab) mounts read back identical"
fi
exit 0
