#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# The background fetch of a mounted remote image (served by a real nginx, bytes counted from its
# access log):
#  1. a sqkfuse mount with a cache folder, after reading one file, fetches the rest of the image
#     into the folder by itself: one log line says so, nginx served about the image's size (no
#     byte twice); with the server stopped every file reads correctly from the live mount; and a
#     new mount (the server back on the same port) reads every file with only the open's
#     requests served
#  2. -o cache_size smaller than the image: the background stops at the limit with one log
#     line, never evicts (every file another image left in the folder before, the oldest, is
#     still there), the folder stays under the limit, and nginx served about the limit
#  3. without the background (-o nobackground when sqkfuse has it; one-shot `sqk cat` always):
#     nothing beyond what is read is fetched
#  4. an access-ordered image: the hint's ranges and then the rest, each byte served once
#  5. an image with a digest tree (4 KiB chunks): chunks and digest groups all end up in the
#     cache folder (a warm mount reads every file with only the open's requests)
#  6. a read that misses while the background runs asks for its whole unit, and the background
#     fetches the units around it next
#  7. through libsqk itself (python ctypes): opts.background false fetches nothing beyond the
#     open; background_rate caps it; bytes_background and background_left count it, and the
#     line that says it is done goes to opts.log
. "$(dirname "$0")/lib.sh"
need_root
need_sqk
need_feature remote
need_cmd python3 curl fusermount3 mountpoint
[ -e /dev/fuse ] || skip "no /dev/fuse"
SQKFUSE=${SQKFUSE:-$(dirname "$SQK")/sqkfuse}
[ -x "$SQKFUSE" ] || fail "sqkfuse not found at $SQKFUSE"
W=$(scratch bg)
MIB=1048576

# 4 directories of 12 files of 512 KiB of random (incompressible) bytes: 24 MiB
rand_tree "$W/src" 85
mkdir -p "$W/www"
sqk_build "$W/src" "$W/www/img.sqsh"
SIZE=$(stat -c %s "$W/www/img.sqsh")
http_serve "$W/www"
URL=$HTTP_URL/img.sqsh
info "image $SIZE bytes"

read_all() {
	local f
	for f in "$W"/src/d*/f*; do
		cmp -s "$f" "$1/${f#"$W/src/"}" || fail "$2: ${f#"$W/src/"} read through the mount differs"
	done
}

# ---- 1. the whole image ends up in the cache folder ----------------------------------------
mark=$(http_log_mark)
fuse_mount "$URL" "$W/m" -o "cache_dir=$W/cache"
cmp -s "$W/src/d2/f05" "$W/m/d2/f05" || fail "d2/f05 read through the mount differs"
wait_log "in the background in" 120
grep "in the background" "$TMP/fuse.err" | sed 's/^/    | /'
[ "$(grep -c "background" "$TMP/fuse.err")" = 1 ] || fail "more than one background line: $(grep background "$TMP/fuse.err")"
grep -q "the image is in the cache folder $W/cache" "$TMP/fuse.err" || fail "the line does not name the cache folder: $(grep background "$TMP/fuse.err")"
sleep 0.5 # nginx logs a request when it ends
read -r nreq nbytes <<<"$(http_log_bytes "$mark")"
info "read one file: $nreq requests, $nbytes bytes served (image $SIZE)"
[ "$nbytes" -ge $(( SIZE * 95 / 100 )) ] || fail "the background fetched $nbytes bytes of a $SIZE-byte image"
[ "$nbytes" -le $(( SIZE + 3 * 65536 )) ] || { http_log_ranges "$mark" | sort | uniq -c | sort -rn | head >&2; fail "$nbytes bytes served for a $SIZE-byte image: bytes fetched twice"; }
cb=$(dir_bytes "$W/cache")
info "cache folder: $cb bytes"
[ "$cb" -ge $(( SIZE * 95 / 100 )) ] || fail "the cache folder holds $cb bytes of a $SIZE-byte image"
http_stop "$HTTP_PID"
read_all "$W/m" "server stopped"
fuse_umount "$W/m"
http_restart
mark=$(http_log_mark)
fuse_mount "$URL" "$W/m" -o "cache_dir=$W/cache"
read_all "$W/m" "warm mount"
fuse_umount "$W/m"
sleep 0.5
read -r nreq nbytes <<<"$(http_log_bytes "$mark")"
info "warm mount, every file read: $nreq requests, $nbytes bytes served"
# the open: its first and last 64 KiB (and a request for digests beyond them)
[ "$nbytes" -le $(( 4 * 65536 )) ] || { http_log_ranges "$mark" >&2; fail "the warm mount fetched $nbytes bytes: the image was not all in the cache folder"; }
grep -q "in the background" "$TMP/fuse.err" && fail "the warm mount fetched in the background: $(grep background "$TMP/fuse.err")"

# ---- 2. a cache_size below the image's size ---------------------------------------------------
# another image's files in the folder first: the oldest, what an eviction would remove first
LIMIT=$(( 8 * MIB ))
cp "$W/www/img.sqsh" "$W/www/other.sqsh"
printf 'other' | dd of="$W/www/other.sqsh" bs=1 seek=$(( 2 * MIB )) conv=notrunc status=none
run_capture other timeout 120 "$SQK" cat --cache-dir "$W/small" --cache-size "$LIMIT" "$HTTP_URL/other.sqsh" d0/f00 d0/f01 d0/f02
[ "$RC" = 0 ] || { show_err; fail "sqk cat of a second image exited $RC"; }
before=$(cd "$W/small" && find . -type f ! -name '.*' | sort)
sleep 1.1 # older by mtime than what follows
mark=$(http_log_mark)
# nothing read (a read may evict: it is not the background): the mount starts it by itself
fuse_mount "$URL" "$W/m" -o "cache_dir=$W/small,cache_size=$LIMIT"
wait_log "stopped at the cache size limit" 120
grep "background" "$TMP/fuse.err" | sed 's/^/    | /'
[ "$(grep -c "background" "$TMP/fuse.err")" = 1 ] || fail "more than one background line: $(grep background "$TMP/fuse.err")"
after=$(cd "$W/small" && find . -type f ! -name '.*' | sort)
gone=$(comm -23 <(echo "$before") <(echo "$after"))
[ -z "$gone" ] || fail "the background evicted cache files: $gone"
cb=$(dir_bytes "$W/small")
sleep 0.5
read -r nreq nbytes <<<"$(http_log_bytes "$mark")"
info "cache_size $LIMIT: $(echo "$before" | wc -l) files of another image before, $(echo "$after" | wc -l) files after, $cb bytes; $nbytes bytes served"
[ "$cb" -le "$LIMIT" ] || fail "the cache folder holds $cb bytes, more than cache_size $LIMIT"
[ "$cb" -ge $(( LIMIT - 2 * MIB )) ] || fail "the background stopped at $cb bytes, far below cache_size $LIMIT"
[ "$nbytes" -le "$LIMIT" ] || fail "$nbytes bytes served with cache_size $LIMIT"
read_all "$W/m" "cache_size $LIMIT"
fuse_umount "$W/m"

# ---- 3. without the background: only what is read --------------------------------------------
ONE=$(( 512 * 1024 ))
if "$SQKFUSE" --help 2>&1 | grep -q nobackground; then
	mark=$(http_log_mark)
	fuse_mount "$URL" "$W/m" -o "cache_dir=$W/lazy,nobackground"
	cmp -s "$W/src/d1/f03" "$W/m/d1/f03" || fail "d1/f03 read through the mount differs"
	sleep 2 # a background fetch would have started by now
	fuse_umount "$W/m"
	read -r nreq nbytes <<<"$(http_log_bytes "$mark")"
	info "-o nobackground, one file read: $nbytes bytes served"
	[ "$nbytes" -le $(( ONE + 8 * 65536 )) ] || fail "-o nobackground fetched $nbytes bytes for a file of $ONE"
else
	info "sqkfuse has no -o nobackground yet: checked with sqk cat only"
fi
mark=$(http_log_mark)
run_capture cat timeout 120 "$SQK" cat --cache-dir "$W/lazy2" "$URL" d1/f04
[ "$RC" = 0 ] || { show_err; fail "sqk cat exited $RC"; }
cmp -s "$OUT_FILE" "$W/src/d1/f04" || fail "sqk cat of the URL: wrong bytes"
sleep 1
read -r nreq nbytes <<<"$(http_log_bytes "$mark")"
info "sqk cat of one file: $nbytes bytes served"
[ "$nbytes" -le $(( ONE + 8 * 65536 )) ] || fail "sqk cat fetched $nbytes bytes for a file of $ONE"
# ---- 4. an access-ordered image: the hint first, then the rest, no byte twice ---------------
printf 'd2/f05\nd0/f00\nd3/f11\nd1/f07\n' >"$W/trace"
run_capture order "$SQK" mkimage -q --order "$W/trace" "$W/src" "$W/www/ord.sqsh"
[ "$RC" = 0 ] || { show_err; fail "mkimage --order failed"; }
OSIZE=$(stat -c %s "$W/www/ord.sqsh")
mark=$(http_log_mark)
fuse_mount "$HTTP_URL/ord.sqsh" "$W/m" -o "cache_dir=$W/ordc"
wait_log "in the background in" 120
for f in d2/f05 d0/f00 d3/f11 d1/f07; do
	cmp -s "$W/src/$f" "$W/m/$f" || fail "$f differs through the mount of the ordered image"
done
fuse_umount "$W/m"
read -r nreq nbytes <<<"$(http_log_bytes "$mark")"
info "ordered image ($OSIZE bytes): $nreq requests, $nbytes bytes served"
[ "$nbytes" -le $(( OSIZE + 3 * 65536 )) ] || fail "$nbytes bytes served for a $OSIZE-byte ordered image: the hint's ranges fetched twice"
[ "$(dir_bytes "$W/ordc")" -ge $(( OSIZE * 95 / 100 )) ] || fail "the ordered image is not all in the cache folder"

# ---- 5. a digest tree: the groups of chunk digests are kept too -------------------------------
sqk_build --digest-tree --checksum-chunk 4K "$W/src" "$W/www/tree.sqsh"
fuse_mount "$HTTP_URL/tree.sqsh" "$W/m" -o "cache_dir=$W/treec"
wait_log "in the background in" 120
fuse_umount "$W/m"
mark=$(http_log_mark)
fuse_mount "$HTTP_URL/tree.sqsh" "$W/m" -o "cache_dir=$W/treec"
read_all "$W/m" "digest tree, warm"
fuse_umount "$W/m"
read -r nreq nbytes <<<"$(http_log_bytes "$mark")"
info "digest tree (4 KiB chunks), warm mount, every file read: $nreq requests, $nbytes bytes"
[ "$nbytes" -le $(( 4 * 65536 )) ] || { http_log_ranges "$mark" | head >&2; fail "the warm mount of the digest-tree image fetched $nbytes bytes"; }

# ---- 6. a read that misses while the background runs: its whole unit, then its neighbours --
# At background_rate 512 KiB/s the background starts a unit every 2 s after its first, so the
# units it asks for after one read show what it chose: those around the read's unit (the start
# reads on there), not the next in image order.
F=d2/f05
FOFF=$(python3 -c 'import sys; print(open(sys.argv[1], "rb").read().find(open(sys.argv[2], "rb").read(4096)))' "$W/www/img.sqsh" "$W/src/$F")
U=$(( FOFF / MIB ))
[ $(( FOFF % MIB )) -ge $(( 2 * 65536 )) ] || fail "setup: $F at $FOFF is at its unit's start"
fuse_mount "$URL" "$W/m" -o "cache_dir=$W/nearc,background_rate=$(( MIB / 2 ))"
mark=$(http_log_mark)
cmp -s "$W/src/$F" "$W/m/$F" || fail "$F read through the mount differs"
sleep 5
fuse_umount "$W/m"
http_log_ranges "$mark" >"$TMP/near.log"
python3 - "$TMP/near.log" "$U" "$MIB" <<'PY' || fail "a read that missed while the background ran (unit $U, $F at $FOFF)"
import re, sys
log, u, mib = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rs = [tuple(map(int, m.groups())) for m in re.finditer(r"range=bytes=(\d+)-(\d+)", open(log).read())]
print("    | ranges after the read: " + " ".join("%d-%d" % r for r in rs))
if not any(a == u * mib for a, _ in rs):
    sys.exit("the read did not ask for the start of its unit %d" % u)
bg = [a // mib for a, _ in rs if a // mib not in (0, u, u + 1)]
if not bg:
    sys.exit("no background unit after the read")
far = [x for x in bg if abs(x - u) > 8]
if far:
    sys.exit("the background went on with units %s, not those around unit %d" % (far, u))
PY

# ---- 7. the library: opts.background off / on with background_rate, the counters ---------
LIBSQK=$(dirname "$SQK")/../lib/libsqk.so.2
if [ ! -f "$LIBSQK" ]; then
	info "no libsqk.so.2 next to $SQK: the library checks skipped"
	exit 0
fi
if ldd "$LIBSQK" 2>/dev/null | grep -q -E 'lib(t|a)san'; then
	info "$LIBSQK is a sanitizer build (python cannot load it): the library checks skipped"
	exit 0
fi
# bg.py URL CACHE BACKGROUND RATE SECONDS: opens the image through libsqk (sqk_image_open, as a
# mount does but in one process), waits SECONDS (or, with SECONDS 0, until background_left is
# 0) and prints "bytes_background background_left" and the log lines.
cat >"$W/bg.py" <<'PY'
import ctypes as C, sys, time
lib = C.CDLL(sys.argv[1])
LOG = C.CFUNCTYPE(None, C.c_void_p, C.c_char_p)
class HttpOpts(C.Structure):
    _fields_ = [("size", C.c_size_t), ("cache_dir", C.c_char_p), ("cache_size_set", C.c_bool),
                ("cache_size", C.c_uint64), ("retries_set", C.c_bool), ("retries", C.c_uint),
                ("timeout_s", C.c_uint), ("headers", C.c_void_p), ("nheaders", C.c_size_t),
                ("root_hash", C.c_void_p), ("ca_file", C.c_char_p), ("raw", C.c_bool),
                ("connections", C.c_uint), ("mem_bytes", C.c_size_t), ("log", LOG),
                ("log_ctx", C.c_void_p), ("s3_endpoint", C.c_char_p),
                ("no_sign_request", C.c_bool), ("background", C.c_bool),
                ("background_rate", C.c_uint64)]
class OpenOpts(C.Structure): # the 0.2 prefix, which libsqk.so.2 accepts
    _fields_ = [("size", C.c_size_t), ("offset", C.c_uint64), ("cache_bytes", C.c_size_t),
                ("readahead_blocks", C.c_uint), ("threads", C.c_uint), ("log", LOG),
                ("log_ctx", C.c_void_p), ("name", C.c_char_p), ("no_verify", C.c_bool),
                ("quiet_mismatch", C.c_bool), ("http", C.POINTER(HttpOpts)),
                ("root_hash", C.c_void_p), ("no_prefetch", C.c_bool)]
class Stats(C.Structure):
    _fields_ = [("size", C.c_size_t)] + [(n, C.c_uint64) for n in
                ("requests", "bytes", "bytes_unused", "retries", "disk_hits", "disk_misses",
                 "corrupt", "digest_groups", "bytes_background", "background_left")]
lines = []
log = LOG(lambda ctx, msg: lines.append(msg.decode()))
url, cache, bg, rate, secs = sys.argv[2], sys.argv[3], sys.argv[4] == "1", int(sys.argv[5]), float(sys.argv[6])
ho = HttpOpts(size=C.sizeof(HttpOpts), cache_dir=cache.encode(), log=log, background=bg,
              background_rate=rate)
oo = OpenOpts(size=C.sizeof(OpenOpts), log=log, http=C.pointer(ho))
img = C.c_void_p()
lib.sqk_image_open.argtypes = [C.c_char_p, C.POINTER(OpenOpts), C.POINTER(C.c_void_p)]
rc = lib.sqk_image_open(url.encode(), C.byref(oo), C.byref(img))
if rc:
    sys.exit("sqk_image_open: %d %s" % (rc, lines))
lib.sqk_image_http_stats.argtypes = [C.c_void_p, C.POINTER(Stats)]
st = Stats(size=C.sizeof(Stats))
t0 = time.monotonic()
while True:
    time.sleep(0.1)
    lib.sqk_image_http_stats(img, C.byref(st))
    if (secs and time.monotonic() - t0 >= secs) or (not secs and time.monotonic() - t0 > 100):
        break
    if not secs and st.background_left == 0 and lines:
        break
print(st.bytes_background, st.background_left)
lib.sqk_image_close.argtypes = [C.c_void_p]
lib.sqk_image_close(img)
for l in lines:
    print(l)
PY
mark=$(http_log_mark)
python3 "$W/bg.py" "$LIBSQK" "$URL" "$W/lib0" 0 0 1.5 >"$TMP/lib0.out" 2>&1 || { cat "$TMP/lib0.out" >&2; fail "bg.py failed"; }
read -r bb left <"$TMP/lib0.out"
sleep 0.5
read -r nreq nbytes <<<"$(http_log_bytes "$mark")"
info "opts.background false: bytes_background $bb, background_left $left, $nbytes bytes served"
[ "$bb" = 0 ] && [ "$left" = 0 ] || fail "without opts.background: bytes_background $bb, background_left $left"
[ "$nbytes" -le $(( 8 * 65536 )) ] || fail "without opts.background the open fetched $nbytes bytes"
# 2 MiB/s: in 1.5 s at most about 2 + 3 MiB (the first unit, the bucket, a unit in flight),
# where loopback fetches the whole 24 MiB in well under a second
RATE=$(( 2 * MIB ))
python3 "$W/bg.py" "$LIBSQK" "$URL" "$W/lib1" 1 "$RATE" 1.5 >"$TMP/lib1.out" 2>&1 || { cat "$TMP/lib1.out" >&2; fail "bg.py failed"; }
read -r bb left <"$TMP/lib1.out"
info "background_rate $RATE, after 1.5 s: bytes_background $bb, background_left $left"
[ "$bb" -gt 0 ] || fail "background_rate $RATE: nothing fetched in 1.5 s"
[ "$bb" -le $(( 6 * MIB )) ] || fail "background_rate $RATE: $bb bytes fetched in 1.5 s"
[ "$left" -gt $(( 10 * MIB )) ] || fail "background_rate $RATE: background_left $left after 1.5 s"
python3 "$W/bg.py" "$LIBSQK" "$URL" "$W/lib2" 1 0 0 >"$TMP/lib2.out" 2>&1 || { cat "$TMP/lib2.out" >&2; fail "bg.py failed"; }
read -r bb left <"$TMP/lib2.out"
info "no rate: bytes_background $bb, background_left $left; $(sed -n 2p "$TMP/lib2.out")"
[ "$left" = 0 ] || fail "background_left $left at the end"
[ "$bb" -ge $(( SIZE * 9 / 10 )) ] && [ "$bb" -le "$SIZE" ] || fail "bytes_background $bb for a $SIZE-byte image"
grep -q "the image is in the cache folder $W/lib2" "$TMP/lib2.out" || fail "no log line through opts.log: $(cat "$TMP/lib2.out")"
exit 0
