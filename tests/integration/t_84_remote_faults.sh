#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# Remote images through faultproxy.py (nginx behind it): every fault mode gives either a
# successful retry with the right bytes or an error (non-zero exit / EIO), never wrong bytes;
# a mount stays up after a failed read and reads other files (and the same file, once the
# fault is gone) afterwards; SIGTERM to sqkfuse while its reads hang unmounts within seconds.
#   delay    within --timeout: fine, no retries; longer than --timeout: retried, then an error
#   503      503x=N recovers (http_retries >= N); always 503: an error naming the status
#   drop     dropx=N recovers; always: an error
#   hang     hangx=1 recovers after --timeout; always: an error after the retries
#   trickle  a body below 1 KiB/s for --timeout: an error after the retries, not hours
#   noetag   with alt=: an image without integrity data whose answers differ only in
#            Last-Modified is refused at open; under a mount, such an answer is refused and
#            logged, and no read returns the other version's bytes
#   corrupt  a flipped byte in a file's data: that file fails (EIO, a log line with the URL
#            and the byte range), the others read; sqk verify reports it; nothing bad is cached;
#            a flipped byte in the metadata or the integrity data: refused
#   norange  (200 with the whole body) an error at once, no retries
#   wrongsize (another total in Content-Range) an error
# Faults on a mounted image use the proxy's "gated" modes: the mount opens cleanly, the test
# arms the fault, reads, disarms and reads again.
. "$(dirname "$0")/lib.sh"
need_root
need_sqk
need_feature remote
need_cmd python3 curl fusermount3 mountpoint timeout
[ -e /dev/fuse ] || skip "no /dev/fuse"
SQKFUSE=${SQKFUSE:-$(dirname "$SQK")/sqkfuse}
[ -x "$SQKFUSE" ] || fail "sqkfuse not found at $SQKFUSE"
export XDG_CACHE_HOME=$TMP/xdg-cache
W=$(scratch faults)
S=$W/src
mkdir -p "$S" "$W/www"
python3 - "$S" <<'PY'
import os, random, sys
r = random.Random(84)
d = sys.argv[1]
open(os.path.join(d, 'raw.bin'), 'wb').write(r.randbytes(1 << 20))
open(os.path.join(d, 'other.bin'), 'wb').write(r.randbytes(300000))
open(os.path.join(d, 'small.txt'), 'wb').write(b'a small file\n')
open(os.path.join(d, 'text.txt'), 'wb').write(b''.join(b'line %d of some text %d\n' % (i, r.randint(0, 99)) for i in range(40000)))
PY
sqk_build -q --no-fragments "$S" "$W/www/img.sqsh"
IMG=$W/www/img.sqsh
SIZE=$(stat -c %s "$IMG")
# OFF: a byte of raw.bin's data (stored raw: found by content), well inside the file
OFF=$(python3 - "$IMG" "$S/raw.bin" <<'PY'
import sys
img = open(sys.argv[1], 'rb').read()
needle = open(sys.argv[2], 'rb').read()[600000:600032]
at = img.find(needle)
assert at > 0 and img.find(needle, at + 1) < 0
print(at + 16)
PY
) || fail "cannot find raw.bin's data in the image"
INODE_TABLE=$("$SQK" info --json "$IMG" | python3 -c 'import json, sys; print(json.load(sys.stdin)["tables"]["inode"])')
http_serve "$W/www"
proxy_start
info "image $SIZE bytes; raw.bin byte 600016 at offset $OFF; nginx $HTTP_URL, proxy $PROXY_URL"

purl() { echo "$PROXY_URL/_f/$1/img.sqsh"; }

# The proxy itself, with curl: each mode does what the tests below rely on.
pc() { curl -s --max-time 10 "$@"; }
exp100=$TMP/exp100
head -c 200 "$IMG" | tail -c 100 >"$exp100"
pc -r 100-199 "$PROXY_URL/img.sqsh" | cmp -s - "$exp100" || fail "proxy: passthrough range differs"
[ "$(pc -r 100-199 "$(purl corrupt@150,tag=pc)" | cmp -l - "$exp100" | awk '{ print $1 }')" = 51 ] ||
	fail "proxy: corrupt@150 did not flip exactly byte 150"
pc -r 200-299 "$(purl corrupt@150,tag=pc)" | cmp -s - <(head -c 300 "$IMG" | tail -c 100) ||
	fail "proxy: corrupt@150 changed a range without offset 150"
[ "$(pc -r 100-199 -o /dev/null -w '%{http_code} %{size_download}' "$(purl norange,tag=pc)")" = "200 $SIZE" ] ||
	fail "proxy: norange did not give the whole body"
pc -r 0-9 -o /dev/null "$(purl wrongsize,tag=pc)"
pc -r 0-9 -o /dev/null -D - "$(purl wrongsize,tag=pc)" | grep -qi "^content-range: bytes 0-9/$((SIZE + 4096))" ||
	fail "proxy: wrongsize did not rewrite the total"
[ "$(pc -o /dev/null -w '%{http_code}' "$(purl 503x=1,tag=pc)")" = 503 ] || fail "proxy: 503x=1 did not answer 503"
[ "$(pc -r 0-9 -o /dev/null -w '%{http_code}' "$(purl 503x=1,tag=pc)")" = 206 ] || fail "proxy: 503x=1 did not pass the 2nd"
rc=0; pc -r 0-99999 -o /dev/null "$(purl dropx=1,tag=pc)" || rc=$?
[ $rc = 18 ] || fail "proxy: dropx=1 did not cut the body short (curl exit $rc)"
pc -r 0-99999 "$(purl dropx=1,tag=pc)" | cmp -s - <(head -c 100000 "$IMG") || fail "proxy: dropx=1 dropped the 2nd"
rc=0; pc --max-time 1 -o /dev/null "$(purl hangx=1,tag=pc)" || rc=$?
[ $rc = 28 ] || fail "proxy: hangx=1 answered (curl exit $rc)"
info "faultproxy.py: passthrough, corrupt, norange, wrongsize, 503x, dropx, hangx behave"
NOC=(--cache-size 0)

sqk_fails() { # sqk_fails NAME ARGS...: must exit non-zero; stdout (if any) is the right bytes' start
	sqk_t "$@"
	[ "$RC" != 0 ] || fail "sqk ${*:2} succeeded"
}
# is_prefix FILE SRC: FILE holds the first bytes of SRC (possibly none).
is_prefix() {
	cmp -s "$1" <(head -c "$(stat -c %s "$1")" "$2")
}
# has_range_line FILE URL OFF: FILE has a line naming URL and a byte range A-B (or A..B) with OFF
has_range_line() {
	python3 - "$@" <<'PY'
import re, sys
path, url, off = sys.argv[1], sys.argv[2], int(sys.argv[3])
for line in open(path, errors='replace'):
    if url in line:
        for a, b in re.findall(r'(\d+)\s*(?:-|\.\.)\s*(\d+)', line.replace(url, '')):
            if int(a) <= off <= int(b):
                sys.exit(0)
sys.exit(1)
PY
}
json_count() { # json_count FILE KEY
	python3 -c 'import json, sys; print(int(json.load(open(sys.argv[1]))[sys.argv[2]]))' "$1" "$2" ||
		fail "no count $2 in $1: $(head -c 1000 "$1")"
}
# proxy_faults MODE [ITEM]: faults the proxy injected for MODE (of ITEM, or all).
proxy_faults() {
	proxy_stats "$1" | python3 -c 'import json, sys; j = json.load(sys.stdin); print(j["items"].get(sys.argv[1], 0) if len(sys.argv) > 1 else j["faults"])' ${2:+"$2"}
}
# all_files_ok DIR WHAT: every file of the source reads back identical under DIR.
all_files_ok() {
	local f
	for f in raw.bin other.bin small.txt text.txt; do
		timeout 120 cmp -s "$S/$f" "$1/$f" || fail "$2: $f differs or does not read"
	done
}
# mount_refused WHAT URL DIR [SQKFUSE ARGS]: sqkfuse exits non-zero without mounting.
mount_refused() {
	local what=$1 url=$2 dir=$3 rc=0
	shift 3
	mkdir -p "$dir"
	_MOUNTS="$dir $_MOUNTS"
	timeout 120 "$SQKFUSE" "$url" "$dir" -f "$@" 2>"$TMP/refused.err" || rc=$?
	[ $rc != 124 ] || fail "$what: sqkfuse mounted or hung instead of refusing the image"
	[ $rc != 0 ] || fail "$what: sqkfuse exited 0"
	mountpoint -q "$dir" && fail "$what: mounted"
	info "$what: mount refused (exit $rc): $(tail -n 1 "$TMP/refused.err")"
}
# read_fails DIR FILE WHAT: reading DIR/FILE fails with EIO within 120 s; what it returned
# before the error is the file's start; the mount stays up.
read_fails() {
	local rc=0
	timeout 120 cat "$1/$2" >"$TMP/read.out" 2>"$TMP/read.err" || rc=$?
	[ $rc != 124 ] || fail "$3: reading $2 hangs"
	[ $rc != 0 ] || fail "$3: reading $2 succeeded ($(cmp -s "$TMP/read.out" "$S/$2" && echo right || echo WRONG) bytes)"
	grep -q 'Input/output error' "$TMP/read.err" || fail "$3: reading $2 did not fail with EIO: $(cat "$TMP/read.err")"
	is_prefix "$TMP/read.out" "$S/$2" || fail "$3: wrong bytes before the error"
	mountpoint -q "$1" || fail "$3: the mount went away"
}
# gated MODE EXPECT OPTS: mount the proxied URL (OPTS: sqkfuse -o options), read small.txt,
# arm MODE, read raw.bin (EXPECT: eio, ok, or any = right bytes or EIO), disarm, read every
# file. Leaves the stats in $W/gated.json.
gated() {
	local mode=$1 expect=$2 opts=$3 dir=$W/g rc=0
	rm -f "$W/gated.json"
	fuse_mount "$(purl "$mode")" "$dir" -o "cache_size=0,stats=$W/gated.json${opts:+,$opts}"
	cmp -s "$S/small.txt" "$dir/small.txt" || fail "$mode: small.txt differs before the fault"
	proxy_arm "$mode"
	case $expect in
	eio)
		read_fails "$dir" raw.bin "$mode (armed)"
		grep -qF "$(purl "$mode")" "$TMP/fuse.err" ||
			{ cat "$TMP/fuse.err" >&2; fail "$mode: no log line names the URL"; }
		;;
	ok)
		timeout 120 cmp -s "$S/raw.bin" "$dir/raw.bin" || fail "$mode (armed): raw.bin differs or fails"
		;;
	any)
		if ! timeout 120 cat "$dir/raw.bin" >"$TMP/read.out" 2>"$TMP/read.err"; then
			is_prefix "$TMP/read.out" "$S/raw.bin" || fail "$mode (armed): wrong bytes before the error"
			expect="EIO"
		else
			cmp -s "$TMP/read.out" "$S/raw.bin" || fail "$mode (armed): raw.bin reads WRONG bytes"
			expect="right bytes"
		fi
		;;
	esac
	mountpoint -q "$dir" || fail "$mode: the mount went away"
	proxy_disarm "$mode"
	if [ "$expect" != eio ] && [ "$expect" != ok ]; then
		for f in raw.bin text.txt other.bin; do
			if timeout 120 cat "$dir/$f" >"$TMP/read.out" 2>"$TMP/read.err"; then
				cmp -s "$TMP/read.out" "$S/$f" || fail "$mode (disarmed): $f reads WRONG bytes"
			else
				is_prefix "$TMP/read.out" "$S/$f" || fail "$mode (disarmed): wrong bytes before the error"
				info "$mode (disarmed): $f still fails: $(cat "$TMP/read.err")"
			fi
		done
	else
		all_files_ok "$dir" "$mode (disarmed)"
	fi
	fuse_umount "$dir"
	info "$mode on a mounted image: raw.bin $expect while armed, then fine; $(proxy_faults "$mode") faults, $(json_count "$W/gated.json" http_retries) retries"
}

sqk_t probe ls "$(purl tag=probe)"
[ "$RC" = 0 ] || { show_err; fail "sqk ls through the proxy exited $RC: no http:// support?"; }
sqk_ok base cat "${NOC[@]}" "$PROXY_URL/img.sqsh" raw.bin other.bin
cmp -s "$OUT_FILE" <(cat "$S/raw.bin" "$S/other.bin") || fail "through the proxy, no fault: wrong bytes"

# ---- delay -----------------------------------------------------------------------------------
sqk_ok delay cat "${NOC[@]}" "$(purl delay=300)" raw.bin other.bin
cmp -s "$OUT_FILE" <(cat "$S/raw.bin" "$S/other.bin") || fail "delay=300: wrong bytes"
[ "$(proxy_faults delay=300)" -ge 2 ] || fail "delay=300: the proxy delayed $(proxy_faults delay=300) requests"
sqk_ok delayinfo info --json "${NOC[@]}" "$(purl delay=300,tag=info)"
[ "$(json_count "$OUT_FILE" http_retries)" = 0 ] || fail "delay=300 (timeout 30 s): retried"
sqk_ok delay2 cat "${NOC[@]}" --timeout 5 "$(purl delay=1500)" small.txt
cmp -s "$OUT_FILE" "$S/small.txt" || fail "delay=1500, --timeout 5: wrong bytes"
sqk_fails slow cat "${NOC[@]}" --timeout 1 --retries 1 "$(purl delay=4000)" small.txt
[ "$SECS" -lt 30 ] || fail "delay=4000 with --timeout 1 --retries 1 took $SECS s"
[ "$(proxy_stats delay=4000 | python3 -c 'import json,sys; print(json.load(sys.stdin)["requests"])')" -ge 2 ] ||
	fail "delay=4000 with --timeout 1: the request was not retried"
info "delay: 300 ms and 1.5 s (--timeout 5) read fine; 4 s with --timeout 1 fails after a retry (${SECS}s)"
fuse_mount "$(purl delay=50)" "$W/m" -o cache_size=0
all_files_ok "$W/m" "mount with delay=50"
fuse_umount "$W/m"

# ---- 503 -------------------------------------------------------------------------------------
sqk_ok e503info info --json "${NOC[@]}" "$(purl 503x=2,tag=info)"
r=$(json_count "$OUT_FILE" http_retries)
[ "$r" -ge 2 ] || fail "503x=2: http_retries is $r"
sqk_ok e503cat cat "${NOC[@]}" "$(purl 503x=3)" raw.bin text.txt
cmp -s "$OUT_FILE" <(cat "$S/raw.bin" "$S/text.txt") || fail "503x=3: wrong bytes"
sqk_fails e503r0 cat "${NOC[@]}" --retries 0 "$(purl 503x=1,tag=r0)" small.txt
# the open's two requests (first bytes, tail) go out at once: a retry would be a third
[ "$(proxy_stats 503x=1,tag=r0 | python3 -c 'import json,sys; print(json.load(sys.stdin)["requests"])')" -le 2 ] ||
	fail "--retries 0 still retried"
sqk_fails e503all cat "${NOC[@]}" --retries 2 "$(purl 503)" raw.bin
[ ! -s "$OUT_FILE" ] || fail "always 503: output written"
grep -q 503 "$ERR_FILE" || { show_err; fail "always 503: the error does not name the status"; }
[ "$SECS" -lt 60 ] || fail "always 503 with --retries 2 took $SECS s"
info "503: 503x=2 recovers with $r retries; always 503 fails in ${SECS}s: $(tail -n 1 "$ERR_FILE")"
fuse_mount "$(purl 503x=3,tag=mnt)" "$W/m" -o "cache_size=0,stats=$W/s503.json"
all_files_ok "$W/m" "mount with 503x=3"
fuse_umount "$W/m"
[ "$(json_count "$W/s503.json" http_retries)" -ge 3 ] || fail "mount with 503x=3: http_retries $(json_count "$W/s503.json" http_retries)"
mount_refused "always 503" "$(purl 503,tag=mnt)" "$W/m" -o retries=1
gated 503,gated eio retries=2
gated 503x=2,gated ok ""
[ "$(json_count "$W/gated.json" http_retries)" -ge 2 ] || fail "503x=2 on a mounted image: no retries counted"

# ---- drop ------------------------------------------------------------------------------------
sqk_ok dropinfo info --json "${NOC[@]}" "$(purl dropx=2,tag=info)"
r=$(json_count "$OUT_FILE" http_retries)
[ "$r" -ge 2 ] || fail "dropx=2: http_retries is $r"
sqk_ok dropcat cat "${NOC[@]}" "$(purl dropx=3)" raw.bin text.txt
cmp -s "$OUT_FILE" <(cat "$S/raw.bin" "$S/text.txt") || fail "dropx=3: wrong bytes"
sqk_fails dropall cat "${NOC[@]}" --retries 2 "$(purl drop)" raw.bin
[ ! -s "$OUT_FILE" ] || fail "always drop: output written"
info "drop: dropx=2 recovers with $r retries; always: fails in ${SECS}s: $(tail -n 1 "$ERR_FILE")"
fuse_mount "$(purl dropx=3,tag=mnt)" "$W/m" -o "cache_size=0,stats=$W/sdrop.json"
all_files_ok "$W/m" "mount with dropx=3"
fuse_umount "$W/m"
[ "$(json_count "$W/sdrop.json" http_retries)" -ge 3 ] || fail "mount with dropx=3: no retries counted"
mount_refused "always drop" "$(purl drop,tag=mnt)" "$W/m" -o retries=1
gated drop,gated eio retries=2
gated dropx=2,gated ok ""

# ---- hang ------------------------------------------------------------------------------------
sqk_ok hang1 info --json "${NOC[@]}" --timeout 2 "$(purl hangx=1,tag=info)"
r=$(json_count "$OUT_FILE" http_retries)
[ "$r" -ge 1 ] || fail "hangx=1: http_retries is $r"
[ "$MS" -ge 1900 ] && [ "$SECS" -lt 30 ] || fail "hangx=1 with --timeout 2 took $MS ms"
sqk_ok hangcat cat "${NOC[@]}" --timeout 2 "$(purl hangx=1)" raw.bin
cmp -s "$OUT_FILE" "$S/raw.bin" || fail "hangx=1: wrong bytes"
sqk_fails hangall cat "${NOC[@]}" --timeout 1 --retries 1 "$(purl hang)" raw.bin
[ "$SECS" -lt 30 ] || fail "always hang with --timeout 1 --retries 1 took $SECS s"
info "hang: hangx=1 recovers after the 2 s timeout; always: fails in ${SECS}s: $(tail -n 1 "$ERR_FILE")"
mount_refused "always hang" "$(purl hang,tag=mnt)" "$W/m" -o timeout=1,retries=1
gated hang,gated eio timeout=1,retries=1
gated hangx=1,gated ok timeout=2
[ "$(json_count "$W/gated.json" http_retries)" -ge 1 ] || fail "hangx=1 on a mounted image: no retries counted"

# ---- trickle: the body at 300 bytes a second, below the floor of 1 KiB/s --------------------
sqk_fails trickle cat "${NOC[@]}" --timeout 2 --retries 1 "$(purl trickle=300)" raw.bin
[ "$SECS" -lt 30 ] || fail "a body at 300 bytes/s with --timeout 2 --retries 1 took $SECS s"
grep -q "too slow" "$ERR_FILE" || { show_err; fail "a body at 300 bytes/s: no message says why"; }
info "trickle: a body at 300 bytes/s fails in ${SECS}s: $(tail -n 1 "$ERR_FILE")"

# ---- a changed image without integrity data, behind a proxy that drops ETags ---------------
# nc.sqsh: n.sqsh's size and layout, raw.bin's bytes and the file's mtime other; every second
# answer comes from it once armed (no ETag in any answer: only Last-Modified tells them apart)
sqk_build -q --no-fragments --no-checksums "$S" "$W/www/n.sqsh"
S2=$W/src2
cp -a "$S" "$S2"
python3 -c 'import random, sys; sys.stdout.buffer.write(random.Random(1084).randbytes(1 << 20))' >"$S2/raw.bin"
touch -r "$S/raw.bin" "$S2/raw.bin"
sqk_build -q --no-fragments --no-checksums "$S2" "$W/www/nc.sqsh"
[ "$(stat -c %s "$W/www/nc.sqsh")" = "$(stat -c %s "$W/www/n.sqsh")" ] || fail "nc.sqsh is not n.sqsh's size"
touch -d '2001-02-03 04:05:06' "$W/www/nc.sqsh"
nurl() { echo "$PROXY_URL/_f/$1/n.sqsh"; }
sqk_fails nochange cat --cache-size 0 "$(nurl noetag,alt=nc.sqsh)" raw.bin
grep -q "changed on the server during the open (Last-Modified" "$ERR_FILE" ||
	{ show_err; fail "two versions without ETags at open: no message naming Last-Modified"; }
M=noetag,alt=nc.sqsh,gated
fuse_mount "$(nurl $M)" "$W/mn" -o cache_size=0,noprefetch,nobackground
cmp -s "$S/small.txt" "$W/mn/small.txt" || fail "no ETags: small.txt differs before the change"
proxy_arm "$M"
# every second request goes to nc.sqsh: a read is refused (EIO), or the kernel's read of the
# page again comes through n.sqsh; never nc.sqsh's bytes
for f in raw.bin other.bin text.txt; do
	rc=0
	timeout 120 cat "$W/mn/$f" >"$TMP/read.out" 2>"$TMP/read.err" || rc=$?
	[ $rc != 124 ] || fail "no ETags: reading $f hangs"
	if [ $rc = 0 ]; then
		cmp -s "$TMP/read.out" "$S/$f" || fail "no ETags: $f read with another version's bytes"
	else
		grep -q 'Input/output error' "$TMP/read.err" || fail "no ETags: $f: $(cat "$TMP/read.err")"
		is_prefix "$TMP/read.out" "$S/$f" || fail "no ETags: $f: wrong bytes before the error"
	fi
done
[ "$(proxy_faults "$M" alt)" -ge 1 ] || fail "no ETags: no request went to nc.sqsh"
grep -q "the image changed on the server (Last-Modified .*, was .*)" "$TMP/fuse.err" ||
	{ tail -n 5 "$TMP/fuse.err" >&2; fail "no ETags: no log line naming Last-Modified"; }
proxy_disarm "$M"
fuse_umount "$W/mn"
info "no ETags, another Last-Modified: refused at open and under a mount ($(grep -m1 -o 'the image changed on the server (Last-Modified[^)]*)' "$TMP/fuse.err"))"

# sigterm_hung TAG WHAT: SIGTERM to $SQKFUSE (WHAT in messages) while its reads hang (timeout
# 30 s): unmounted within 5 s, exit 0 without a sanitizer report, the reader ends with an error,
# every hung request is closed.
sigterm_hung() {
	local M=hang,gated,tag=$1 what=$2 i rc=0 hung
	fuse_mount "$(purl "$M")" "$W/mt" -o cache_size=0
	cmp -s "$S/small.txt" "$W/mt/small.txt" || fail "$what: small.txt differs"
	proxy_arm "$M"
	cat "$W/mt/raw.bin" >"$TMP/term.out" 2>"$TMP/term.err" &
	READER=$!
	for i in $(seq 100); do
		[ "$(proxy_faults "$M" hang)" -ge 1 ] && break
		sleep 0.1
	done
	[ "$(proxy_faults "$M" hang)" -ge 1 ] || fail "$what: the read never reached the proxy"
	sleep 0.5
	kill -TERM "$FUSE_PID"
	for i in $(seq 50); do kill -0 "$FUSE_PID" 2>/dev/null || break; sleep 0.1; done
	kill -0 "$FUSE_PID" 2>/dev/null && fail "$what still runs 5 s after SIGTERM while reads hang"
	wait "$FUSE_PID" || rc=$?
	san_clean "$TMP/fuse.err" "$what, SIGTERM while reads hang"
	[ $rc = 0 ] || { tail -n 20 "$TMP/fuse.err" >&2; fail "$what exited $rc on SIGTERM while reads hang"; }
	mountpoint -q "$W/mt" && fail "$what: still mounted after SIGTERM"
	for i in $(seq 50); do kill -0 "$READER" 2>/dev/null || break; sleep 0.1; done
	kill -0 "$READER" 2>/dev/null && { kill -9 "$READER"; fail "$what: the reader still hangs 5 s after the unmount"; }
	wait "$READER" && fail "$what: the hung read succeeded?"
	is_prefix "$TMP/term.out" "$S/raw.bin" || fail "$what: the hung read returned wrong bytes"
	hung=$(proxy_faults "$M" hang)
	for i in $(seq 50); do
		[ "$(grep -c "$M GET.*hung request closed by the client" "$PROXY_LOG")" -ge "$hung" ] && break
		sleep 0.1
	done
	[ "$(grep -c "$M GET.*hung request closed by the client" "$PROXY_LOG")" -ge "$hung" ] ||
		fail "$what left hung connections open after exiting"
	proxy_disarm "$M"
	info "$what: SIGTERM with $hung hung requests: unmounted within 5 s, exit 0, the reader got an error"
}
sigterm_hung term sqkfuse

# ---- corrupt ---------------------------------------------------------------------------------
CU=$(purl "corrupt@$OFF")
sqk_t corr cat "${NOC[@]}" "$CU" raw.bin
[ "$RC" = 1 ] || { show_err; fail "corrupt@$OFF: sqk cat raw.bin exited $RC"; }
is_prefix "$OUT_FILE" "$S/raw.bin" || fail "corrupt@$OFF: sqk cat wrote wrong bytes"
has_range_line "$ERR_FILE" "$CU" "$OFF" || { show_err; fail "corrupt@$OFF: no message with the URL and a byte range holding $OFF"; }
info "corrupt: sqk cat raw.bin fails: $(grep -F "$CU" "$ERR_FILE" | head -n 1)"
sqk_ok corrok cat "${NOC[@]}" "$CU" other.bin text.txt small.txt
cmp -s "$OUT_FILE" <(cat "$S/other.bin" "$S/text.txt" "$S/small.txt") || fail "corrupt@$OFF: other files differ"
sqk_t corrver verify --json "$CU"
[ "$RC" = 4 ] || { show_err; fail "sqk verify of a corrupted transfer exited $RC, expected 4"; }
[ "$(json_count "$OUT_FILE" chunks_bad)" = 1 ] || fail "sqk verify: chunks_bad is not 1: $(cat "$OUT_FILE")"
sqk_t correx extract "${NOC[@]}" "$CU" "$W/cx"
[ "$RC" != 0 ] || fail "sqk extract of a corrupted transfer succeeded"
rm -rf "$W/cx"
fuse_mount "$CU" "$W/mc" -o "cache_size=0"
read_fails "$W/mc" raw.bin "corrupt@$OFF mount"
read_fails "$W/mc" raw.bin "corrupt@$OFF mount, again"
for f in other.bin text.txt small.txt; do
	cmp -s "$S/$f" "$W/mc/$f" || fail "corrupt@$OFF mount: $f differs"
done
cmp -s <(head -c 131072 "$W/mc/raw.bin") <(head -c 131072 "$S/raw.bin") || fail "the intact start of raw.bin does not read"
has_range_line "$TMP/fuse.err" "$CU" "$OFF" || { cat "$TMP/fuse.err" >&2; fail "no log line with the URL and a range holding $OFF"; }
fuse_umount "$W/mc"
info "corrupt on a mount: EIO for raw.bin, others fine; log: $(grep -F "$CU" "$TMP/fuse.err" | head -n 1)"
# nothing bad reaches the disk cache: the same URL and cache, fault off, reads right
M=corrupt@$OFF,gated,tag=poison
proxy_arm "$M"
sqk_fails poison cat --cache-dir "$W/cp" "$(purl "$M")" raw.bin
fuse_mount "$(purl "$M")" "$W/mc" -o "cache_dir=$W/cp"
read_fails "$W/mc" raw.bin "corrupt with cache_dir"
fuse_umount "$W/mc"
proxy_disarm "$M"
sqk_ok unpoison cat --cache-dir "$W/cp" "$(purl "$M")" raw.bin
cmp -s "$OUT_FILE" "$S/raw.bin" || fail "a corrupted chunk was cached"
# a flipped byte in the metadata (inode table) or in the integrity data: nothing is listed
for o in $((INODE_TABLE + 10)) $((SIZE - 100)); do
	sqk_t corrmeta ls -l -R "${NOC[@]}" "$(purl "corrupt@$o")"
	[ "$RC" != 0 ] || fail "corrupt@$o (metadata/integrity data): sqk ls succeeded"
	is_prefix "$OUT_FILE" <("$SQK" ls -l -R "$IMG") || fail "corrupt@$o: sqk ls printed wrong entries"
	# (no disk cache: the image's cache, keyed by its root digest, has these bytes right)
	mount_refused "corrupt@$o" "$(purl "corrupt@$o,tag=mnt")" "$W/m" -o cache_size=0
done
info "corrupt metadata / integrity data: refused"

# ---- norange / wrongsize ---------------------------------------------------------------------
sqk_fails norange cat "${NOC[@]}" "$(purl norange)" raw.bin
[ ! -s "$OUT_FILE" ] || fail "norange: output written"
[ "$SECS" -lt 10 ] || fail "norange: took $SECS s (retried?)"
grep -qi range "$ERR_FILE" || { show_err; fail "norange: the error does not mention the Range request"; }
info "norange: $(tail -n 1 "$ERR_FILE")"
mount_refused "norange" "$(purl norange,tag=mnt)" "$W/m"
gated norange,gated eio ""
sqk_fails wrongsize cat "${NOC[@]}" "$(purl wrongsize)" raw.bin
[ ! -s "$OUT_FILE" ] || is_prefix "$OUT_FILE" "$S/raw.bin" || fail "wrongsize: wrong bytes"
info "wrongsize: $(tail -n 1 "$ERR_FILE")"
mount_refused "wrongsize" "$(purl wrongsize,tag=mnt)" "$W/m"
gated wrongsize,gated any ""

# ---- several faults at once, 8 threads reading random ranges ---------------------------------
M=503x=6,dropx=6,delay=20,gated,tag=par
fuse_mount "$(purl "$M")" "$W/mp" -o "cache_size=0,stats=$W/spar.json"
proxy_arm "$M"
timeout 300 python3 - "$S" "$W/mp" <<'PY' || fail "random reads under faults differ from the source"
import os, random, sys, threading
src, mnt = sys.argv[1], sys.argv[2]
names = sorted(os.listdir(src))
errors = []
def worker(seed):
    r = random.Random(seed)
    for _ in range(40):
        n = r.choice(names)
        size = os.path.getsize(os.path.join(src, n))
        off = r.randrange(size)
        ln = r.choice([1, 4096, 65536, 300000])
        try:
            with open(os.path.join(src, n), 'rb') as a, open(os.path.join(mnt, n), 'rb') as b:
                a.seek(off); b.seek(off)
                if a.read(ln) != b.read(ln):
                    errors.append((n, off, ln, 'differs'))
        except OSError as e:
            errors.append((n, off, ln, str(e)))
ts = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
[t.start() for t in ts]
[t.join() for t in ts]
if errors:
    print("failures:", errors[:10]); sys.exit(1)
PY
proxy_disarm "$M"
fuse_umount "$W/mp"
f=$(proxy_faults "$M")
r=$(json_count "$W/spar.json" http_retries)
[ "$r" -ge 1 ] || fail "8 readers under faults: no retries counted ($f faults injected)"
info "8 threads x 40 random reads with 503s, drops and delays: identical; $f faults, $r retries"

# ---- the sanitized build ($SQK_SAN) ----------------------------------------------------------
# Its sqkfuse through corrupt@ (raw.bin) plus 503x=2: EIO for raw.bin, the other files right,
# exit 0 at unmount; its sqk cat of raw.bin: exit 1, no wrong bytes; SIGTERM to its sqkfuse
# while reads hang. Any sanitizer report fails.
if san_start; then
	t0=$(date +%s)
	M=corrupt@$OFF,503x=2,tag=san
	SQKFUSE=$SQKFUSE_SAN fuse_mount "$(purl "$M")" "$W/ms" -o "cache_size=0,stats=$W/ssan.json"
	read_fails "$W/ms" raw.bin "sanitized sqkfuse, corrupt@$OFF"
	for f in other.bin text.txt small.txt; do
		cmp -s "$S/$f" "$W/ms/$f" || fail "sanitized sqkfuse, corrupt@$OFF: $f differs"
	done
	has_range_line "$TMP/fuse.err" "$(purl "$M")" "$OFF" ||
		{ cat "$TMP/fuse.err" >&2; fail "sanitized sqkfuse: no log line with the URL and a range holding $OFF"; }
	san_fuse_umount "$W/ms"
	[ "$(proxy_faults "$M" 503)" = 2 ] && [ "$(proxy_faults "$M" corrupt)" -ge 1 ] ||
		fail "sanitized sqkfuse: the proxy injected $(proxy_stats "$M")"
	[ "$(json_count "$W/ssan.json" http_retries)" -ge 2 ] || fail "sanitized sqkfuse: 503x=2 without retries"
	M=corrupt@$OFF,503x=2,tag=sancat
	san_sqk sancat cat "${NOC[@]}" "$(purl "$M")" raw.bin
	[ "$RC" = 1 ] || { show_err; fail "sanitized sqk cat through corrupt@$OFF,503x=2 exited $RC"; }
	is_prefix "$OUT_FILE" "$S/raw.bin" || fail "sanitized sqk cat through corrupt@$OFF: wrong bytes"
	SQKFUSE=$SQKFUSE_SAN sigterm_hung santerm "sanitized sqkfuse"
	info "sanitized sqkfuse and sqk through corrupt@ + 503x=2 and hung reads: no report ($(($(date +%s) - t0))s)"
fi
exit 0
