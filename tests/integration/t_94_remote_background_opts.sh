#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# The options of the background fetch of remote mounts (served by a real nginx, bytes counted
# from its access log). What the background itself fetches is not asserted here; what the
# options hand to the library is, through the stats= file:
#  1. a default mount asks for the background fetch (stats: background true, background_rate 0,
#     http_bytes_background and background_left counts, the first within http_bytes);
#     -o background_rate=10M hands 10 MiB a second on
#  2. -o nobackground: background false, no byte fetched in the background, none left to fetch,
#     and nginx served only what the read of one file needs
#  3. sqk mount as a daemon (the command returns once mounted) with --no-background and
#     --background-rate 2M: the same as -o nobackground, background_rate=2M; the files read
#     right; --background-rate=1G alone: background true; the prefetch hint of an ordered image
#     is fetched by the daemon without a read
#  4. bad values (-o background_rate=bad / =0 / empty, --background-rate bad / =12Q): exit 2, a
#     message naming the option, nothing mounted and no request sent
#  5. local images take the options and ignore them (as cache_dir= and the other remote-only
#     options); a bad value is refused there too
#  6. sqk info --json of a remote image has http_bytes_background, 0 (one-shot commands never
#     fetch in the background); of a local image no http counters; the --help texts name the
#     options and the counter
. "$(dirname "$0")/lib.sh"
need_root
need_sqk
need_feature remote fuse
need_cmd python3 curl fusermount3 mountpoint
[ -e /dev/fuse ] || skip "no /dev/fuse"
SQKFUSE=${SQKFUSE:-$(dirname "$SQK")/sqkfuse}
[ -x "$SQKFUSE" ] || fail "sqkfuse not found at $SQKFUSE"
export XDG_CACHE_HOME=$TMP/xdg-cache
W=$(scratch bgopts)
CH=65536

# d/f0..f5: 1 MiB of random (incompressible) bytes each
python3 - "$W/src" <<'PY' || fail "cannot make the source tree"
import os, random, sys
r = random.Random(94)
os.makedirs(os.path.join(sys.argv[1], "d"))
for i in range(6):
    with open(os.path.join(sys.argv[1], "d", "f%d" % i), "wb") as o:
        o.write(r.randbytes(1 << 20))
PY
mkdir -p "$W/www"
sqk_build "$W/src" "$W/www/img.sqsh"
printf 'd/f4\nd/f1\n' >"$W/trace"
sqk_build -q --order "$W/trace" "$W/src" "$W/www/ord.sqsh"
SIZE=$(stat -c %s "$W/www/img.sqsh")
META=$(python3 -c 'import struct, sys; sb = open(sys.argv[1], "rb").read(96); print(struct.unpack_from("<Q", sb, 40)[0] - struct.unpack_from("<Q", sb, 64)[0])' "$W/www/img.sqsh")
http_serve "$W/www"
URL=$HTTP_URL/img.sqsh
# one file of 1 MiB: its data, a chunk of alignment at each end; the open: 2 x 64 KiB, the
# metadata rounded to chunks (plus one), the integrity tail within the last 64 KiB
LIMIT=$(( (1 << 20) + 2 * CH + 4 * CH + (META / CH + 2) * CH ))
[ "$LIMIT" -lt $(( SIZE / 2 )) ] || fail "image of $SIZE bytes: too small for the laziness check"
info "image $SIZE bytes, metadata $META bytes, at $URL"

# bg_stats FILE BACKGROUND RATE: the stats file of a remote mount holds the background counters
# and the settings handed to the library.
bg_stats() {
	python3 - "$@" <<'PY' || fail "stats $1: $(head -c 2000 "$1")"
import json, sys
j = json.load(open(sys.argv[1]))
for k in ("http_bytes", "http_bytes_background", "background_left"):
    assert isinstance(j.get(k), int) and not isinstance(j[k], bool) and j[k] >= 0, "%s is %r" % (k, j.get(k))
assert j["http_bytes_background"] <= j["http_bytes"], "more background bytes than bytes"
want = sys.argv[2] == "true"
assert j.get("background") is want, "background is %r, not %s" % (j.get("background"), sys.argv[2])
assert j.get("background_rate") == int(sys.argv[3]), "background_rate is %r, not %s" % (j.get("background_rate"), sys.argv[3])
if not want:
    assert j["http_bytes_background"] == 0 and j["background_left"] == 0, "background off, yet %r" % j
PY
}
# wait_json FILE: a daemon writes its stats at unmount, after `sqk umount` returned.
wait_json() {
	local i
	for i in $(seq 200); do
		python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "$1" 2>/dev/null && return 0
		sleep 0.05
	done
	fail "no stats file $1 after the unmount"
}
# daemon_mount DIR IMAGE ARGS...: `sqk mount IMAGE DIR ARGS` without -f: it must return 0 with
# DIR mounted (the daemon goes on).
daemon_mount() {
	local dir=$1 img=$2
	shift 2
	mkdir -p "$dir"
	_MOUNTS="$dir $_MOUNTS"
	run_capture dmount timeout 60 "$SQK" mount "$img" "$dir" "$@"
	[ "$RC" = 0 ] || { show_err; fail "sqk mount $img $* exited $RC"; }
	mountpoint -q "$dir" || fail "sqk mount $img $* returned without a mount"
}
daemon_umount() {
	run_capture dumount "$SQK" umount "$1"
	[ "$RC" = 0 ] || { show_err; fail "sqk umount $1 exited $RC"; }
}
# served MARK: the body bytes nginx sent since MARK.
served() {
	http_log_bytes "$1" | awk '{ print $2 }'
}

# ---- 1. the default, and -o background_rate ---------------------------------------------------
fuse_mount "$URL" "$W/m" -o "cache_dir=$W/c1,stats=$W/s1.json"
cmp -s "$W/src/d/f2" "$W/m/d/f2" || fail "default mount: d/f2 differs"
fuse_umount "$W/m"
bg_stats "$W/s1.json" true 0
fuse_mount "$URL" "$W/m" -o "cache_dir=$W/c2,stats=$W/s2.json,background_rate=10M"
cmp -s "$W/src/d/f3" "$W/m/d/f3" || fail "background_rate=10M: d/f3 differs"
fuse_umount "$W/m"
bg_stats "$W/s2.json" true $(( 10 << 20 ))
info "default: background asked for ($(json_get "$W/s1.json" http_bytes_background) of $(json_get "$W/s1.json" http_bytes) bytes in the background); background_rate=10M handed on"

# ---- 2. -o nobackground -----------------------------------------------------------------------
mark=$(http_log_mark)
fuse_mount "$URL" "$W/m" -o "cache_dir=$W/c3,stats=$W/s3.json,nobackground"
cmp -s "$W/src/d/f0" "$W/m/d/f0" || fail "nobackground: d/f0 differs"
sleep 1 # a background fetch, if one ran, would have fetched more by now
fuse_umount "$W/m"
bg_stats "$W/s3.json" false 0
got=$(served "$mark")
info "-o nobackground, one 1 MiB file read: nginx served $got bytes (limit $LIMIT, image $SIZE)"
[ "$got" -ge $(( 1 << 20 )) ] || fail "nginx served $got bytes for a 1 MiB file: the log is not counting"
[ "$got" -le "$LIMIT" ] || { http_log_ranges "$mark" >&2; fail "-o nobackground: nginx served $got bytes for one 1 MiB file"; }

# ---- 3. sqk mount as a daemon -----------------------------------------------------------------
mark=$(http_log_mark)
daemon_mount "$W/m" "$URL" --no-background --background-rate 2M -o "cache_dir=$W/c4,stats=$W/s4.json"
cmp -s "$W/src/d/f5" "$W/m/d/f5" || fail "sqk mount --no-background: d/f5 differs"
sleep 1
daemon_umount "$W/m"
wait_json "$W/s4.json"
bg_stats "$W/s4.json" false $(( 2 << 20 ))
got=$(served "$mark")
info "sqk mount --no-background --background-rate 2M: nginx served $got bytes for one file"
[ "$got" -le "$LIMIT" ] || { http_log_ranges "$mark" >&2; fail "--no-background: nginx served $got bytes for one 1 MiB file"; }
daemon_mount "$W/m" "$URL" "--background-rate=1G" -o "cache_dir=$W/c5,stats=$W/s5.json"
cmp -s "$W/src/d/f1" "$W/m/d/f1" || fail "sqk mount --background-rate=1G: d/f1 differs"
daemon_umount "$W/m"
wait_json "$W/s5.json"
bg_stats "$W/s5.json" true $(( 1 << 30 ))
# the daemon fetches the hint of an ordered image without a read
"$SQK" info --json "$W/www/ord.sqsh" >"$W/ord.json" || fail "sqk info --json of the ordered image failed"
HINT=$(python3 -c 'import json, sys; print(sum(r["length"] for r in json.load(open(sys.argv[1]))["prefetch_hint"]))' "$W/ord.json")
[ "$HINT" -ge $(( 2 << 20 )) ] || fail "the hint covers $HINT bytes, less than the 2 ordered files"
# hint_served MARK: the bytes of the hint's ranges nginx sent since MARK (the open's own
# requests not counted: the daemon is unmounted only once the hint's last request is in)
hint_served() {
	http_log_ranges "$1" | python3 -c '
import json, re, sys
hint, size = json.load(open(sys.argv[1]))["prefetch_hint"], int(sys.argv[2])
got = 0
for line in sys.stdin:
    m = re.search(r"range=bytes=([0-9]*)-([0-9]*) 206 ", line)
    if not m or "/ord.sqsh" not in line:
        continue
    if m.group(1):
        a, b = int(m.group(1)), int(m.group(2)) + 1
    else:  # a suffix range: the open asks for the tail (the tables) so
        a, b = size - int(m.group(2)), size
    got += sum(max(0, min(b, r["start"] + r["length"]) - max(a, r["start"])) for r in hint)
print(got)' "$W/ord.json" "$(stat -c %s "$W/www/ord.sqsh")"
}
mark=$(http_log_mark)
daemon_mount "$W/m" "$HTTP_URL/ord.sqsh" --no-background -o "cache_dir=$W/c6"
got=0
for i in $(seq 100); do
	got=$(hint_served "$mark")
	[ "$got" -ge "$HINT" ] && break
	sleep 0.1
done
daemon_umount "$W/m"
info "sqk mount of an ordered image: $got bytes of a $HINT-byte hint fetched without a read"
[ "$got" -ge "$HINT" ] || fail "the daemon fetched $got bytes of a $HINT-byte hint"

# ---- 4. bad values ----------------------------------------------------------------------------
# refused PATTERN PROGRAM ARGS...: exit 2, PATTERN in stderr, nothing mounted, no request
refused() {
	local pat=$1 m
	shift
	mkdir -p "$W/mbad"
	_MOUNTS="$W/mbad $_MOUNTS"
	m=$(http_log_mark)
	run_capture bad timeout 60 "$@"
	mountpoint -q "$W/mbad" && fail "$* mounted"
	[ "$RC" = 2 ] || { show_err; fail "$*: exit $RC, not 2 (usage)"; }
	grep -q -- "$pat" "$ERR_FILE" || { show_err; fail "$*: no message naming $pat"; }
	[ "$(http_log_bytes "$m")" = "0 0" ] || fail "$*: requests sent: $(http_log_ranges "$m")"
	info "refused: $(head -n 1 "$ERR_FILE")"
}
refused "invalid background_rate=bad (" "$SQKFUSE" "$URL" "$W/mbad" -f -o background_rate=bad
refused "invalid background_rate=0 (" "$SQKFUSE" "$URL" "$W/mbad" -f -o "cache_dir=$W/c7,background_rate=0"
refused "invalid background_rate= (" "$SQKFUSE" "$URL" "$W/mbad" -f -o background_rate=
refused "invalid background_rate=5X (" "$SQK" mount "$URL" "$W/mbad" -o background_rate=5X
refused "invalid --background-rate bad (" "$SQK" mount "$URL" "$W/mbad" --background-rate bad
refused "invalid --background-rate 12Q (" "$SQK" mount "$URL" "$W/mbad" --background-rate=12Q
grep -q -- "--no-background turns the background fetch off" "$ERR_FILE" || { show_err; fail "the message does not say how to turn it off"; }

# ---- 5. local images --------------------------------------------------------------------------
fuse_mount "$W/www/img.sqsh" "$W/m" -o "nobackground,background_rate=1M,stats=$W/s8.json"
cmp -s "$W/src/d/f4" "$W/m/d/f4" || fail "local image with -o nobackground: d/f4 differs"
fuse_umount "$W/m"
python3 - "$W/s8.json" <<'PY' || fail "local stats: $(cat "$W/s8.json")"
import json, sys
j = json.load(open(sys.argv[1]))
assert not {"http_bytes", "background", "http_bytes_background"} & set(j), j
PY
refused "invalid background_rate=x (" "$SQKFUSE" "$W/www/img.sqsh" "$W/mbad" -f -o background_rate=x
info "local image: nobackground and background_rate accepted and ignored, a bad value refused"

# ---- 6. sqk info --json, --help ---------------------------------------------------------------
run_capture inforem "$SQK" info --json "$URL"
[ "$RC" = 0 ] || { show_err; fail "sqk info --json $URL exited $RC"; }
python3 - "$OUT_FILE" <<'PY' || fail "sqk info --json of the URL: $(cat "$OUT_FILE")"
import json, sys
j = json.load(open(sys.argv[1]))
assert j["http_bytes_background"] == 0 and j["http_bytes"] > 0, j
PY
run_capture infoloc "$SQK" info --json "$W/www/img.sqsh"
[ "$RC" = 0 ] || { show_err; fail "sqk info --json of the local image exited $RC"; }
grep -q '"http_' "$OUT_FILE" && fail "sqk info --json of a local image has http counters"
"$SQKFUSE" --help >"$W/h.fuse" || fail "sqkfuse --help exited $?"
"$SQK" mount --help >"$W/h.mount" || fail "sqk mount --help exited $?"
"$SQK" info --help >"$W/h.info" || fail "sqk info --help exited $?"
for t in "-o nobackground" "-o background_rate=BYTES" "--no-background" "--background-rate BYTES"; do
	grep -q -- "$t" "$W/h.fuse" || fail "sqkfuse --help does not name $t"
	grep -q -- "$t" "$W/h.mount" || fail "sqk mount --help does not name $t"
done
grep -q "http_bytes_background" "$W/h.info" || fail "sqk info --help does not name http_bytes_background"
info "sqk info --json: http_bytes_background 0 over the URL, no http counters locally; --help names the options"
exit 0
