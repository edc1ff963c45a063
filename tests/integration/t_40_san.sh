#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# The ASan/UBSan build ($SQK_SAN) on the rich tree (without the 5 GiB file) with zstd and xz, and
# on a few error paths, so memory errors, leaks and undefined behaviour surface. Images are
# checked with unsquashfs + treecmp; any sanitizer report on stderr fails the test.
. "$(dirname "$0")/lib.sh"
need_root
need_cmd unsquashfs python3
[ -n "${SQK_SAN:-}" ] || skip "SQK_SAN not set (no sanitizer build)"
[ -x "$SQK_SAN" ] || skip "SQK_SAN=$SQK_SAN is not an executable file"

export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:detect_stack_use_after_return=1:strict_string_checks=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
SAN_RE='AddressSanitizer|LeakSanitizer|UndefinedBehaviorSanitizer|runtime error:|ThreadSanitizer'

W=$(scratch san)
SRC=$W/src
$MKTREE --no-sparse "$SRC" || fail "mktree failed"

no_san_report() {
	if grep -Eq "$SAN_RE" "$1"; then
		grep -E -A 25 "$SAN_RE" "$1" | head -n 60 >&2
		fail "$2: sanitizer report"
	fi
}

san_build() { # NAME SQK-ARGS...
	local name=$1 rc=0
	shift
	timeout -k 5 300 "$SQK_SAN" mkimage "$@" >"$TMP/$name.out" 2>"$TMP/$name.err" || rc=$?
	no_san_report "$TMP/$name.err" "$name"
	if [ $rc != 0 ]; then
		sed 's/^/    | /' "$TMP/$name.err" | tail -n 30 >&2
		fail "$name: sqk (sanitized) exited $rc: $*"
	fi
}

san_build zstd -j 2 "$SRC" "$W/zstd.sqsh"
check_superblock "$W/zstd.sqsh"
extract "$W/zstd.sqsh" "$W/x"
tree_equal "ASan build, zstd" "$SRC" "$W/x"
rm -rf "$W/x"

# holes (counted by the reading thread) between all-zero data blocks (counted by the writer
# thread): the two update the same statistics concurrently
mkdir -p "$W/alt"
python3 - "$W/alt/f" <<'PY'
import sys
bs = 131072
with open(sys.argv[1], 'wb') as f:
    for k in range(1, 512, 2):
        f.seek(k * bs)
        f.write(bytes(bs))
    f.truncate(512 * bs)
PY
san_build alt -j 2 "$W/alt" "$W/alt.sqsh"
grep -q '512 sparse' "$TMP/alt.out" || fail "holes and zero blocks: $(grep blocks "$TMP/alt.out")"
extract "$W/alt.sqsh" "$W/x"
cmp "$W/alt/f" "$W/x/f" || fail "holes and zero blocks: content differs"
rm -rf "$W/x"

# single-threaded code paths: once, under ASan/UBSan (t_41 sets SAN_THREADS_ONLY for TSan)
if [ -z "${SAN_THREADS_ONLY:-}" ]; then
san_build xz -c xz -j 2 --no-dedup "$SRC" "$W/xz.sqsh"
check_superblock "$W/xz.sqsh"
extract "$W/xz.sqsh" "$W/x"
tree_equal "ASan build, xz --no-dedup" "$SRC" "$W/x"
rm -rf "$W/x"

# small block size, gzip, no fragments, excludes, forced owner and time: other code paths
san_build misc -b 4K -c gzip --no-fragments --exclude '*.log' --exclude 'bigdir/entry_0001*' \
	--all-root --mtime 7 -j 3 "$SRC" "$W/misc.sqsh"
extract "$W/misc.sqsh" "$W/x"
tree_equal "ASan build, misc options" "$SRC" "$W/x" --uid 0 --gid 0 --mtime 7 \
	--exclude 'bigdir/entry_0001*' --exclude '*.log'
rm -rf "$W/x"
# several sources, lz4, 1M blocks
san_build multi -b 1M -c lz4 "$SRC/files" "$SRC/hl" "$SRC/xattr" "$SRC/top_level_file" "$W/multi.sqsh"
extract "$W/multi.sqsh" "$W/x"
for d in files hl xattr; do
	tree_equal "ASan build, several sources ($d)" "$SRC/$d" "$W/x/$d"
done
rm -rf "$W/x"
fi

# the result must equal the unsanitized build (same code, same input)
if [ -n "${SQK:-}" ] && [ -x "$SQK" ]; then
	sqk_build -j 1 "$SRC" "$W/plain.sqsh"
	cmp -s "$W/plain.sqsh" "$W/zstd.sqsh" || fail "sanitized and plain builds of the same tree differ"
	info "sanitized and plain builds identical"
fi

# error paths: must fail cleanly, without sanitizer reports (leaks on error paths included)
san_fail() { # NAME CMD...
	local name=$1 rc=0
	shift
	timeout -k 5 120 "$@" >"$TMP/$name.out" 2>"$TMP/$name.err" || rc=$?
	no_san_report "$TMP/$name.err" "$name"
	[ $rc != 0 ] || fail "$name: succeeded but must fail"
	[ $rc -lt 128 ] || { tail -n 20 "$TMP/$name.err" >&2; fail "$name: died with signal $((rc - 128))"; }
	info "$name: exit $rc: $(head -n 1 "$TMP/$name.err")"
}
mkdir -p "$W/out"
if [ -z "${SAN_THREADS_ONLY:-}" ]; then
	san_fail "nonexistent source" "$SQK_SAN" mkimage "$SRC/files" "$W/nope" "$W/out/a.sqsh"
	san_fail "bad block size" "$SQK_SAN" mkimage -b 3000 "$SRC" "$W/out/a.sqsh"
	san_fail "bad compressor" "$SQK_SAN" mkimage -c nosuch "$SRC" "$W/out/a.sqsh"
	san_fail "short sysfs file" "$SQK_SAN" mkimage "$SRC/files" /sys/kernel/mm/transparent_hugepage/enabled "$W/out/a.sqsh"
fi
if mkdir -p "$W/full" && mount -t tmpfs -o size=256k,mode=755 tmpfs "$W/full"; then
	_MOUNTS="$W/full $_MOUNTS"
	san_fail "ENOSPC" "$SQK_SAN" mkimage -j 2 "$SRC/files" "$W/full/a.sqsh"
	[ -z "$(ls -A "$W/full")" ] || fail "ENOSPC: leftovers $(ls -A "$W/full")"
	umount "$W/full"
fi
if command -v setpriv >/dev/null && [ -z "${SAN_THREADS_ONLY:-}" ]; then
	mkdir -p "$W/src_u/locked" "$W/out_u"
	echo x >"$W/src_u/f"
	chmod 000 "$W/src_u/locked"
	chown 65534 "$W/out_u"
	san_fail "unreadable directory" setpriv --reuid=65534 --regid=65534 --clear-groups \
		"$SQK_SAN" mkimage -j 2 "$W/src_u" "$W/out_u/a.sqsh"
fi
# interrupted: the cancellation path must not leak or race
mkdir -p "$W/src_big"
head -c 64M /dev/urandom >"$W/src_big/r"
for sig in TERM INT; do
	rc=0
	timeout --preserve-status -k 30 -s $sig 1.5 "$SQK_SAN" mkimage -c xz -j 2 "$W/src_big" "$W/out/big.sqsh" \
		>"$TMP/sig.out" 2>"$TMP/sig.err" || rc=$?
	no_san_report "$TMP/sig.err" "SIG$sig"
	[ $rc != 0 ] || fail "SIG$sig: the build finished within 1.5 s or ignored the signal"
	info "SIG$sig: exit $rc: $(head -n 1 "$TMP/sig.err")"
done
[ -z "$(ls -A "$W/out")" ] || fail "error paths left files: $(ls -A "$W/out")"

# sqkfuse (sanitized): the rich tree through the mount, a tar of it (pushes ahead of the walk),
# random page reads of a large file (page-cache fills on their thread), then SIGTERM in the
# middle of more reads: no report, exit 0.
SQKFUSE_SAN=$(dirname "$SQK_SAN")/sqkfuse
if [ -x "$SQKFUSE_SAN" ] && [ -e /dev/fuse ] && command -v fusermount3 >/dev/null; then
	head -c 8M /dev/urandom >"$SRC/files/random8m"
	SQKFUSE=$SQKFUSE_SAN
	san_build fuse -j 2 "$SRC" "$W/fuse.sqsh"
	fuse_mount "$W/fuse.sqsh" "$W/fm" -o threads=2,cache=4M
	tree_equal "sanitized sqkfuse" "$SRC" "$W/fm"
	# a tar of the tree: the walk's pushes on their thread, zero-message opendirs
	(cd "$W/fm" && tar -cf - .) | cat >/dev/null || fail "sanitized sqkfuse: tar of the tree failed"
	python3 - "$SRC/files/random8m" "$W/fm/files/random8m" <<'PY' || fail "sanitized sqkfuse: random reads differ"
import os, random, sys, threading
ref = open(sys.argv[1], 'rb').read()
def worker(seed):
    r = random.Random(seed)
    fd = os.open(sys.argv[2], os.O_RDONLY)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
    for _ in range(400):
        off = r.randrange(len(ref)) & ~4095
        assert os.pread(fd, 4096, off) == ref[off:off + 4096], off
ts = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
[t.start() for t in ts]
[t.join() for t in ts]
PY
	python3 - "$W/fm/files/random8m" <<'PY' &
import os, random, sys, time
fd = os.open(sys.argv[1], os.O_RDONLY)
os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
end, r = time.time() + 2, random.Random(1)
try:
    while time.time() < end:
        os.pread(fd, 4096, r.randrange(8 << 20) & ~4095)
except OSError:
    pass
PY
	sleep 0.5
	kill -TERM "$FUSE_PID"
	rc=0; wait "$FUSE_PID" || rc=$?
	wait
	no_san_report "$TMP/fuse.err" "sanitized sqkfuse"
	[ $rc = 0 ] || { tail -n 20 "$TMP/fuse.err" >&2; fail "sanitized sqkfuse exited $rc on SIGTERM"; }
	mountpoint -q "$W/fm" && fail "sanitized sqkfuse: still mounted after SIGTERM"
	info "sanitized sqkfuse: tree identical, random reads identical, clean SIGTERM"
fi
exit 0
