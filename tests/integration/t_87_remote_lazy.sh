#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# Remote reads stay lazy (served by a real nginx, bytes counted from its access log); every mount
# here is purely lazy (-o nobackground: no fetch of the rest of the image in the background):
#  1. on a sqkfuse mount of a plain image (no --order), reading one whole file of each of 20
#     directories (files of 768 KiB, the other files of each directory lying right after it in
#     the image) fetches at most those files' data, rounded to integrity chunks, plus what the
#     open fetches (first and last 64 KiB, the metadata tables); the files between them are not
#     fetched ahead
#  2. stats= reports http_bytes_unused, and it is small for that workload
#  3. a walk through the image in its own order (tar of the whole tree) still fetches ahead
#     across files: few requests, each byte at most once, and the same bytes as the source
#     also over a tree of small files in fragment blocks of two types (whose groups of fragment
#     blocks are read in turn): under 80 requests for 60 directories (about 140 when a walk's
#     reads were taken for one stream)
#  4. an image built with --order carries a prefetch hint: a mount fetches its ranges at once,
#     before anything is read, and reading the listed files then fetches nothing more; with
#     -o noprefetch the mount fetches only what the open needs; the hint's ranges are asked
#     for before the metadata tables (the open reads the hint first), and the threads the open
#     starts leave the signals to sqkfuse's signal thread
#  5. a file read at random (4 KiB preads at 12 offsets, last block first) is fetched whole in
#     the background from its second read on: a few requests, not one for each cold region, and
#     no byte beyond the file's own chunks
#  6. an image whose metadata tables are larger than 4 MiB (100,000 entries with incompressible
#     names) is not fetched whole at open: listing one directory of it fetches well under 1 MiB
. "$(dirname "$0")/lib.sh"
need_root
need_sqk
need_feature remote
need_cmd python3 curl fusermount3 mountpoint tar
[ -e /dev/fuse ] || skip "no /dev/fuse"
SQKFUSE=${SQKFUSE:-$(dirname "$SQK")/sqkfuse}
[ -x "$SQKFUSE" ] || fail "sqkfuse not found at $SQKFUSE"
W=$(scratch lazy)

# 20 directories d00..d19, each with 6 files of 768 KiB of random (incompressible) bytes: a..f
python3 - "$W/src" <<'PY' || fail "cannot make the source tree"
import os, random, sys
r = random.Random(87)
for d in range(20):
    p = os.path.join(sys.argv[1], "d%02d" % d)
    os.makedirs(p)
    for f in "abcdef":
        with open(os.path.join(p, f), "wb") as o:
            o.write(r.randbytes(768 << 10))
PY
mkdir -p "$W/www"
sqk_build "$W/src" "$W/www/img.sqsh"
SIZE=$(stat -c %s "$W/www/img.sqsh")
http_serve "$W/www"
URL=$HTTP_URL/img.sqsh
META=$(python3 - "$W/www/img.sqsh" <<'PY'
import struct, sys
sb = open(sys.argv[1], "rb").read(96)
bytes_used, = struct.unpack_from("<Q", sb, 40)
inode_start, = struct.unpack_from("<Q", sb, 64)
print(bytes_used - inode_start)
PY
)
info "image $SIZE bytes, metadata tables $META bytes"

# ---- 1. one file of each directory -----------------------------------------------------------
mark=$(http_log_mark)
fuse_mount "$URL" "$W/m" -o "stats=$W/stats.json" -o "cache_dir=$W/cache,nobackground"
for d in $(seq -f %02g 0 19); do
	# the 3rd file: readahead of the old kind (across forward gaps) would run into d/d..f
	cmp -s "$W/src/d$d/c" "$W/m/d$d/c" || fail "d$d/c read through the mount differs"
done
fuse_umount "$W/m"
read -r nreq nbytes <<<"$(http_log_bytes "$mark")"
CH=65536
# each file: its 768 KiB, up to 2 chunks of alignment; the open: 2 x 64 KiB, the metadata
# rounded to chunks (plus one), and the integrity tail (digests + trailer) within the last 64 KiB
limit=$(( 20 * (768 * 1024 + 2 * CH) + 2 * CH + (META / CH + 2) * CH ))
info "20 files of 768 KiB: $nreq requests, $nbytes bytes served (limit $limit; image $SIZE)"
[ "$nbytes" -le "$limit" ] || { http_log_ranges "$mark" | head -40 >&2; fail "reading 20 files fetched $nbytes bytes, more than their data plus metadata ($limit)"; }
[ "$nbytes" -ge $(( 20 * 768 * 1024 )) ] || fail "only $nbytes bytes served for 20 files of 768 KiB: the log is not counting"

# ---- 2. stats: http_bytes and http_bytes_unused ----------------------------------------------
[ -s "$W/stats.json" ] || fail "no stats file"
hb=$(stat_get "$W/stats.json" http_bytes)
hu=$(stat_get "$W/stats.json" http_bytes_unused)
info "stats: http_bytes $hb, http_bytes_unused $hu"
[ "$hb" -ge $(( 20 * 768 * 1024 )) ] || fail "stats http_bytes $hb for 20 files of 768 KiB"
# what was fetched and never read: chunk alignment at the ends of each file, the unread part of
# the first 64 KiB and of the metadata chunks
[ "$hu" -le $(( 20 * 2 * CH + 2 * CH + (META / CH + 2) * CH )) ] || fail "http_bytes_unused $hu: readahead fetched what no read used"

# ---- 3. a walk in image order still fetches ahead across files --------------------------------
rm -rf "$W/cache"
mark=$(http_log_mark)
fuse_mount "$URL" "$W/m" -o "cache_dir=$W/cache,nobackground"
(cd "$W/m" && tar cf - .) >"$W/walk.tar" || fail "tar of the mount failed"
fuse_umount "$W/m"
mkdir -p "$W/out"
tar xf "$W/walk.tar" -C "$W/out" || fail "tar x failed"
diff -r "$W/src" "$W/out" >/dev/null || fail "tar of the mount differs from the source"
read -r nreq nbytes <<<"$(http_log_bytes "$mark")"
info "tar of the tree: $nreq requests, $nbytes bytes served (image $SIZE)"
[ "$nbytes" -le $(( SIZE + CH )) ] || fail "the walk fetched $nbytes bytes for a $SIZE-byte image"
# 120 files read one after the other: without readahead across files each would cost at least
# one request of its own, and one more for each 1 MiB unit of the request grid it crosses
# (about 210); with it, about one request per unit
units=$(( (SIZE + (1 << 20) - 1) >> 20 ))
[ "$nreq" -lt $(( units * 3 / 2 )) ] ||
	fail "the walk took $nreq requests ($units units of 1 MiB): no readahead across files"
python3 - "$W/frag" <<'PY' || fail "cannot make the small-file tree"
import os, random, sys
r = random.Random(3)
for d in range(60):
    p = os.path.join(sys.argv[1], "d%02d" % d)
    os.makedirs(p)
    with open(os.path.join(p, "big.dat"), "wb") as o:
        o.write(r.randbytes(300 << 10))
    for i in range(30):
        with open(os.path.join(p, "s%02d.%s" % (i, "ab"[i % 2])), "wb") as o:
            o.write(r.randbytes(3000))
PY
sqk_build "$W/frag" "$W/www/frag.sqsh"
FSIZE=$(stat -c %s "$W/www/frag.sqsh")
rm -rf "$W/cache"
mark=$(http_log_mark)
fuse_mount "$HTTP_URL/frag.sqsh" "$W/m" -o "cache_dir=$W/cache,nobackground"
(cd "$W/m" && tar cf - .) >"$W/frag.tar" || fail "tar of the small-file mount failed"
fuse_umount "$W/m"
rm -rf "$W/fout" && mkdir -p "$W/fout" && tar xf "$W/frag.tar" -C "$W/fout" || fail "tar x failed"
diff -r "$W/frag" "$W/fout" >/dev/null || fail "tar of the small-file mount differs from the source"
read -r nreq nbytes <<<"$(http_log_bytes "$mark")"
info "tar of 60 directories of small files: $nreq requests, $nbytes bytes served (image $FSIZE)"
[ "$nbytes" -le $(( FSIZE + CH )) ] || fail "the walk fetched $nbytes bytes for a $FSIZE-byte image"
[ "$nreq" -lt 80 ] || fail "the walk over fragment blocks took $nreq requests"

# ---- 4. the prefetch hint of an access-ordered image -----------------------------------------
printf 'd03/c\nd07/a\nd11/f\nd00/b\n' >"$W/trace"
run_capture order "$SQK" mkimage -q --order "$W/trace" "$W/src" "$W/www/ord.sqsh"
[ "$RC" = 0 ] || { show_err; fail "mkimage --order failed"; }
HINT=$("$SQK" info --json "$W/www/ord.sqsh" | python3 -c 'import json, sys; print(sum(r["length"] for r in json.load(sys.stdin)["prefetch_hint"]))') ||
	fail "sqk info --json shows no prefetch_hint"
[ "$HINT" -ge $(( 4 * 768 * 1024 )) ] || fail "the hint covers $HINT bytes, less than the 4 ordered files"
OSIZE=$(stat -c %s "$W/www/ord.sqsh")
rm -rf "$W/cache"
mark=$(http_log_mark)
fuse_mount "$HTTP_URL/ord.sqsh" "$W/m" -o "cache_dir=$W/cache,nobackground"
# nothing is read: the hint's ranges arrive on their own (nginx logs a request when it ends)
got=0
for i in $(seq 100); do
	read -r nreq got <<<"$(http_log_bytes "$mark")"
	[ "$got" -ge "$HINT" ] && break
	sleep 0.1
done
info "ordered image ($OSIZE bytes, hint $HINT bytes): $got bytes fetched before any read"
[ "$got" -ge "$HINT" ] || fail "the mount fetched $got bytes of a $HINT-byte hint without reads"
# each byte once: the prefetch is started after sqkfuse's fork, not cut off and fetched again
[ "$got" -le $(( HINT + 4 * CH + (META / CH + 2) * CH )) ] || fail "the mount fetched $got bytes for a $HINT-byte hint: ranges fetched twice"
before=$got
for f in d03/c d07/a d11/f d00/b; do
	cmp -s "$W/src/$f" "$W/m/$f" || fail "$f differs through the mount of the ordered image"
done
fuse_umount "$W/m"
read -r nreq got <<<"$(http_log_bytes "$mark")"
info "after reading the 4 listed files: $got bytes in $nreq requests"
[ "$got" -le $(( HINT + 4 * CH + (META / CH + 2) * CH )) ] || fail "reading the listed files fetched $((got - before)) bytes beyond the prefetched hint"
rm -rf "$W/cache"
mark=$(http_log_mark)
fuse_mount "$HTTP_URL/ord.sqsh" "$W/m" -o "cache_dir=$W/cache,nobackground" -o noprefetch
sleep 1
fuse_umount "$W/m"
read -r nreq got <<<"$(http_log_bytes "$mark")"
info "-o noprefetch: $got bytes in $nreq requests"
[ "$got" -le $(( 4 * CH + (META / CH + 2) * CH )) ] || fail "with -o noprefetch the mount fetched $got bytes"
# commands fetch what they read, never the hint's ranges (a mounted start's working set): sqk ls
# of the root, sqk cat of a file of the hint; --no-prefetch is still taken
rm -rf "$W/cache"
mark=$(http_log_mark)
"$SQK" ls --cache-dir "$W/cache" "$HTTP_URL/ord.sqsh" >"$W/ls.out" || fail "sqk ls of ord.sqsh failed"
grep -qx d03 "$W/ls.out" || fail "sqk ls of ord.sqsh lists no d03: $(head -n 3 "$W/ls.out")"
sleep 0.5
read -r nreq got <<<"$(http_log_bytes "$mark")"
info "sqk ls of the ordered image: $got bytes in $nreq requests"
[ "$got" -le $(( 3 * CH + (META / CH + 2) * CH )) ] || fail "sqk ls fetched $got bytes: the hint's ranges too"
rm -rf "$W/cache"
mark=$(http_log_mark)
"$SQK" cat --cache-dir "$W/cache" "$HTTP_URL/ord.sqsh" d11/f >"$W/cat.out" || fail "sqk cat of ord.sqsh failed"
cmp -s "$W/cat.out" "$W/src/d11/f" || fail "sqk cat d11/f of ord.sqsh differs from the source"
sleep 0.5
read -r nreq got <<<"$(http_log_bytes "$mark")"
info "sqk cat of a file of the hint: $got bytes in $nreq requests"
[ "$got" -le $(( $(stat -c %s "$W/src/d11/f") + 4 * CH + (META / CH + 2) * CH )) ] ||
	fail "sqk cat of one file fetched $got bytes: the hint's ranges too"
# a tar of the whole image reads it all: the hint's ranges come first, in parallel parts, where
# a walk in the tree's order would fetch the front of an access-ordered image (here 400 files of
# 12 KiB laid out in the reverse of the tree's order) a chunk at a time
python3 - "$W/rev" "$W/revtrace" <<'PY' || fail "cannot make the tree laid out in reverse"
import os, random, sys
r = random.Random(9)
names = []
for d in range(10):
    os.makedirs(os.path.join(sys.argv[1], "r%02d" % d))
    for i in range(40):
        names.append("r%02d/%02d" % (d, i))
        open(os.path.join(sys.argv[1], names[-1]), "wb").write(r.randbytes(12288))
open(sys.argv[2], "w").write("".join(n + "\n" for n in reversed(names)))
PY
run_capture revorder "$SQK" mkimage -q --order "$W/revtrace" "$W/rev" "$W/www/rev.sqsh"
[ "$RC" = 0 ] || { show_err; fail "mkimage --order of the reversed tree failed"; }
tar_reqs() { # PATH OPTIONS...: requests of a cold sqk tar of rev.sqsh (its files checked)
	local path=$1
	shift
	rm -rf "$W/cache" "$W/tout" && mkdir -p "$W/tout"
	mark=$(http_log_mark)
	"$SQK" tar "$@" --cache-dir "$W/cache" "$HTTP_URL/rev.sqsh" $path -o - |
		tar xf - -C "$W/tout" || fail "sqk tar $* of rev.sqsh failed"
	diff -r "$W/rev" "$W/tout" >/dev/null || fail "sqk tar $* of rev.sqsh differs from the source"
	sleep 0.5
	read -r nreq got <<<"$(http_log_bytes "$mark")"
	echo "$nreq"
}
with=$(tar_reqs "") root=$(tar_reqs /) without=$(tar_reqs "" --no-prefetch)
info "sqk tar of an image laid out in reverse: $with requests ($root naming /), $without with --no-prefetch"
[ "$with" -le $(( without / 2 )) ] || fail "sqk tar of the whole ordered image did not fetch its hint first"
[ "$root" -le $(( without / 2 )) ] || fail "sqk tar of the ordered image's / did not fetch its hint first"
# a tar or extract of folders fetches their files' data first, in image order and parallel
# parts: the front of rev.sqsh holds them in the reverse of the order the walk reads them
sub_reqs() { # tar|extract OPTIONS...: requests of a cold read of r02 and r07 (files checked)
	local how=$1
	shift
	rm -rf "$W/cache" "$W/tout" && mkdir -p "$W/tout"
	mark=$(http_log_mark)
	if [ "$how" = tar ]; then
		"$SQK" tar "$@" --cache-dir "$W/cache" "$HTTP_URL/rev.sqsh" r07 -o - |
			tar xf - -C "$W/tout" || fail "sqk tar $* r07 of rev.sqsh failed"
		mv "$W/tout" "$W/tout7" && mkdir "$W/tout" && mv "$W/tout7" "$W/tout/r07"
	else
		"$SQK" extract -q "$@" --cache-dir "$W/cache" -d "$W/tout" "$HTTP_URL/rev.sqsh" \
			r07 r02 || fail "sqk extract $* r07 r02 of rev.sqsh failed"
		diff -r "$W/rev/r02" "$W/tout/r02" >/dev/null ||
			fail "sqk extract $* of rev.sqsh's r02 differs from the source"
	fi
	diff -r "$W/rev/r07" "$W/tout/r07" >/dev/null ||
		fail "sqk $how $* of rev.sqsh's r07 differs from the source"
	sleep 0.5
	read -r nreq got <<<"$(http_log_bytes "$mark")"
	echo "$nreq $got"
}
read -r tw tw_b <<<"$(sub_reqs tar)"
read -r two two_b <<<"$(sub_reqs tar --no-prefetch)"
read -r xw xw_b <<<"$(sub_reqs extract)"
read -r xwo xwo_b <<<"$(sub_reqs extract --no-prefetch)"
rm -rf "$W/cache"
mark=$(http_log_mark)
"$SQK" ls --cache-dir "$W/cache" "$HTTP_URL/rev.sqsh" r07 >/dev/null || fail "sqk ls r07 of rev.sqsh failed"
sleep 0.5
read -r nopen got <<<"$(http_log_bytes "$mark")"
info "sqk tar of a folder of rev.sqsh: $tw requests ($tw_b bytes), $two ($two_b) with" \
	"--no-prefetch; extract of two folders: $xw ($xw_b), $xwo ($xwo_b); an open: $nopen"
# its 8 chunks in parallel parts (at most two per folder: a unit's end), where the walk asks
# for them one by one
[ $(( tw - nopen )) -le 2 ] || fail "sqk tar of a folder made $(( tw - nopen )) requests for its data"
[ $(( xw - nopen )) -le 4 ] || fail "sqk extract of two folders made $(( xw - nopen )) requests for their data"
[ $(( two - nopen )) -ge 4 ] && [ $(( xwo - nopen )) -ge 8 ] ||
	fail "sqk tar / extract with --no-prefetch fetched the folders' data in bulk"
# and no further: a walk of a folder of an image in the tree's order (here 16 files of 200 KiB,
# then two more such folders) is fetched ahead to the end of the folder's files, not past it
python3 - "$W/walk" <<'PY' || fail "cannot make the tree of three folders"
import os, random, sys
r = random.Random(3)
for d in "abc":
    os.makedirs(os.path.join(sys.argv[1], d))
    for i in range(16):
        open(os.path.join(sys.argv[1], d, "%02d" % i), "wb").write(r.randbytes(200 << 10))
PY
sqk_build "$W/walk" "$W/www/walk.sqsh"
fold_bytes() { # OPTIONS...: bytes of a cold sqk tar of walk.sqsh's a (its files checked)
	rm -rf "$W/cache" "$W/tout" && mkdir -p "$W/tout"
	mark=$(http_log_mark)
	"$SQK" tar "$@" --cache-dir "$W/cache" "$HTTP_URL/walk.sqsh" a -o - | tar xf - -C "$W/tout" ||
		fail "sqk tar $* a of walk.sqsh failed"
	diff -r "$W/walk/a" "$W/tout" >/dev/null || fail "sqk tar $* a of walk.sqsh differs"
	sleep 0.5
	read -r nreq got <<<"$(http_log_bytes "$mark")"
	echo "$got"
}
rm -rf "$W/cache"
mark=$(http_log_mark)
"$SQK" ls --cache-dir "$W/cache" "$HTTP_URL/walk.sqsh" a >/dev/null || fail "sqk ls a of walk.sqsh failed"
sleep 0.5
read -r nreq open_b <<<"$(http_log_bytes "$mark")"
fw=$(fold_bytes) fwo=$(fold_bytes --no-prefetch)
info "sqk tar of walk.sqsh's a (3.2 MB of files): $fw bytes, $fwo with --no-prefetch," \
	"an open $open_b"
[ "$fw" -le $(( open_b + (16 * 200 << 10) + 2 * CH )) ] || fail "sqk tar of a fetched $fw bytes: past the folder"
[ "$fwo" -gt $(( open_b + (16 * 200 << 10) + 2 * CH )) ] || fail "the walk with --no-prefetch fetched no more"

# a walk of the whole image in the tree's order takes the hint's files as fetched: they neither
# end nor extend its run through the files between them (here 8 folders of 12 files of 150 KiB,
# every fourth laid out first), which it then fetches ahead as in an image in the tree's order
python3 - "$W/mix" "$W/mixtrace" <<'PY' || fail "cannot make the tree of mixed order"
import os, random, sys
r = random.Random(5)
front = []
for d in range(8):
    os.makedirs(os.path.join(sys.argv[1], "m%d" % d))
    for i in range(12):
        open(os.path.join(sys.argv[1], "m%d/%02d" % (d, i)), "wb").write(r.randbytes(150 << 10))
        if i % 4 == 0:
            front.append("m%d/%02d" % (d, i))
open(sys.argv[2], "w").write("".join(n + "\n" for n in front))
PY
run_capture mixorder "$SQK" mkimage -q --order "$W/mixtrace" "$W/mix" "$W/www/mix.sqsh"
[ "$RC" = 0 ] || { show_err; fail "mkimage --order of the mixed tree failed"; }
rm -rf "$W/cache" "$W/tout" && mkdir -p "$W/tout"
mark=$(http_log_mark)
"$SQK" tar --cache-dir "$W/cache" "$HTTP_URL/mix.sqsh" -o - | tar xf - -C "$W/tout" ||
	fail "sqk tar of mix.sqsh failed"
diff -r "$W/mix" "$W/tout" >/dev/null || fail "sqk tar of mix.sqsh differs from the source"
sleep 0.5
read -r nreq got <<<"$(http_log_bytes "$mark")"
info "sqk tar of an image with every fourth file laid out first: $nreq requests, $got bytes" \
	"(101 when each of them ended the walk)"
[ "$nreq" -le 50 ] || fail "sqk tar of mix.sqsh made $nreq requests: the walk broke at the hint's files"

# the hint's ranges are asked for before the metadata tables come, as soon as the open has the
# hint, so that a start's first reads find them on their way: an image whose tables (16,000
# entries, about 400 KiB) are past the open's last 128 KiB, mounted through faultproxy, which
# logs each request as it arrives and as it ends and holds each answer 300 ms: the first hint
# range arrives before the tables' answer is sent (after it when the open fetched the tables
# first)
python3 - "$W/many" <<'PY' || fail "cannot make the tree of many names"
import os, random, sys
r = random.Random(5)
os.makedirs(os.path.join(sys.argv[1], "n"))
for i in range(16000):
    open(os.path.join(sys.argv[1], "n", "%05d-%s" % (i, r.randbytes(16).hex())), "w").close()
with open(os.path.join(sys.argv[1], "big.dat"), "wb") as o:
    o.write(r.randbytes(3 << 20))
PY
printf 'big.dat\n' >"$W/mtrace"
run_capture order2 "$SQK" mkimage -q --order "$W/mtrace" "$W/many" "$W/www/many.sqsh"
[ "$RC" = 0 ] || { show_err; fail "mkimage --order of the tree of many names failed"; }
TAB=$("$SQK" info --json "$W/www/many.sqsh" | python3 -c 'import json, sys; print(json.load(sys.stdin)["tables"]["inode"])')
MSIZE=$(stat -c %s "$W/www/many.sqsh")
[ $(( MSIZE - TAB )) -gt 196608 ] || fail "the tables start $((MSIZE - TAB)) bytes before the end: within the open's tail"
proxy_start
rm -rf "$W/cache"
fuse_mount "$PROXY_URL/_f/delay=300/many.sqsh" "$W/m" -o "cache_dir=$W/cache,nobackground"
cmp -s "$W/many/big.dat" "$W/m/big.dat" || fail "big.dat differs through the mount of many.sqsh"
# the threads the open started (before sqkfuse's signal thread) leave SIGHUP, SIGINT and
# SIGTERM to it: every other thread of the mount blocks them (the signal thread's waiting in
# sigtimedwait unblocks them for the wait)
for st in /proc/"$FUSE_PID"/task/*/status; do
	grep -q sigtimedwait "${st%/status}/wchan" 2>/dev/null && continue
	blk=$(awk '/^SigBlk:/ { print $2 }' "$st" 2>/dev/null)
	[ -n "$blk" ] || continue # a thread that ended meanwhile
	[ $(( 0x$blk & 0x4003 )) = $(( 0x4003 )) ] ||
		fail "thread ${st%/status} of sqkfuse does not block SIGHUP, SIGINT and SIGTERM (SigBlk $blk)"
done
fuse_umount "$W/m"
python3 - "$PROXY_LOG" "$TAB" <<'PY' || fail "the hint's ranges were not asked for while the metadata tables came"
import re, sys
tab = int(sys.argv[2])
# (line, request number, first byte, last byte, arrival or end) in the log's order
ev = [(i, int(m.group(3)), int(m.group(1)), int(m.group(2)), m.group(4) == "asked")
      for i, line in enumerate(open(sys.argv[1]))
      for m in [re.search(r"delay=300 GET /many\.sqsh range=bytes=(\d+)-(\d+) #(\d+): (\w+)",
                          line)] if m]
tables = [(i, n) for i, n, a, b, asked in ev if not asked and a <= tab <= b]
hint = [(i, n) for i, n, a, b, asked in ev if asked and 0 < a and b < tab]
print("tables' answer (line, request): %s; first hint range asked: %s" % (tables[:1], hint[:1]))
sys.exit(0 if tables and hint and hint[0][0] < tables[0][0] else 1)
PY
# a daemon-mode sqkfuse killed while its daemon opens the image (by a timeout, say) leaves no
# daemon to mount after the command has failed
rm -rf "$W/cache"
"$SQKFUSE" "$PROXY_URL/_f/delay=300/many.sqsh" "$W/m" -o "cache_dir=$W/cache,nobackground" \
	2>"$TMP/killed.err" &
parent=$! child=""
for i in $(seq 100); do child=$(pgrep -P "$parent") && break; sleep 0.02; done
[ -n "$child" ] || fail "sqkfuse started no daemon"
kill -TERM "$parent"
wait "$parent" 2>/dev/null || :
for i in $(seq 100); do
	kill -0 "$child" 2>/dev/null && ! mountpoint -q "$W/m" || break
	sleep 0.1
done
mountpoint -q "$W/m" && fail "sqkfuse killed while opening the image mounted it afterwards"
kill -0 "$child" 2>/dev/null && fail "sqkfuse's daemon still runs 10 s after its command was killed"
info "killed while opening: its daemon ended, nothing mounted"

# ---- 5. a file read at random is fetched whole ------------------------------------------------
rm -rf "$W/cache"
fuse_mount "$URL" "$W/m" -o "cache_dir=$W/cache,nobackground"
cat "$W/m/d00/a" >/dev/null # the open and a first file: what follows is the random reads only
sleep 0.5
mark=$(http_log_mark)
python3 - "$W/src/d09/e" "$W/m/d09/e" <<'PY' || fail "random reads through the mount differ"
import os, sys
want, got = open(sys.argv[1], "rb").read(), os.open(sys.argv[2], os.O_RDONLY)
for i in range(12):
    off = (11 - i) * 65536 + 4096 * i
    assert os.pread(got, 4096, off) == want[off:off + 4096], off
PY
fuse_umount "$W/m"
read -r nreq got <<<"$(http_log_bytes "$mark")"
info "12 random 4 KiB reads of a cold 768 KiB file: $nreq requests, $got bytes"
[ "$nreq" -le 4 ] || fail "12 random reads of one file took $nreq requests: not fetched whole"
[ "$got" -le $(( 768 * 1024 + 2 * CH )) ] || fail "random reads of a 768 KiB file fetched $got bytes"

# ---- 6. large metadata tables are fetched as they are read ------------------------------------
python3 - "$W/big.tar" <<'PY' || fail "cannot write the tar of 100,000 entries"
import random, sys, tarfile
r = random.Random(5)
with tarfile.open(sys.argv[1], "w", format=tarfile.GNU_FORMAT) as t:
    for d in range(100):
        ti = tarfile.TarInfo("d%03d" % d)
        ti.type, ti.mode = tarfile.DIRTYPE, 0o755
        t.addfile(ti)
        for i in range(1000):
            ti = tarfile.TarInfo("d%03d/%s" % (d, r.randbytes(40).hex()))
            ti.mode, ti.mtime, ti.uid = 0o644, r.randrange(1 << 30), r.randrange(1000)
            t.addfile(ti)
PY
run_capture bigmeta "$SQK" mkimage -q --tar "$W/big.tar" "$W/www/big.sqsh"
[ "$RC" = 0 ] || { show_err; fail "mkimage --tar of 100,000 entries failed"; }
rm -f "$W/big.tar"
BIGMETA=$(python3 - "$W/www/big.sqsh" <<'PY'
import struct, sys
sb = open(sys.argv[1], "rb").read(96)
print(struct.unpack_from("<Q", sb, 40)[0] - struct.unpack_from("<Q", sb, 64)[0])
PY
)
[ "$BIGMETA" -gt $((4 << 20)) ] || fail "the metadata of 100,000 entries is only $BIGMETA bytes: not a large-table case"
mark=$(http_log_mark)
run_capture bigls "$SQK" ls --cache-size 0 "$HTTP_URL/big.sqsh" d050
[ "$RC" = 0 ] || { show_err; fail "sqk ls of one directory of the large image failed"; }
[ "$(grep -c . "$OUT_FILE")" = 1000 ] || fail "sqk ls d050 listed $(grep -c . "$OUT_FILE") entries, not 1000"
read -r nreq got <<<"$(http_log_bytes "$mark")"
info "image with $BIGMETA bytes of metadata: listing one directory fetched $got bytes in $nreq requests"
[ "$got" -lt $((1 << 20)) ] || fail "listing one directory fetched $got bytes: the $BIGMETA bytes of tables were fetched at open"
exit 0
