#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# Remote images over HTTP(S) range requests, served by a real nginx (http_serve):
#  1. sqkfuse mounts the URL of the rich tree's image: identical to the source (tree_equal);
#     stats= has the http/disk-cache counters; each byte is fetched at most once
#  2. sqk ls -R / ls -lR / cat / extract / info --json / verify through the URL give what they
#     give on the local file
#  3. on-disk cache: a warm `sqk cat` fetches nothing beyond what opening fetches; warm mounts
#     hit the disk cache; --cache-size bounds it, 0 turns it off; damaged cache files are not
#     served
#  4. an image replaced on the server: new readers get the new content, a live mount gets the
#     old content or EIO, never a mix (also with the same size and mtime)
#  5. --header / --header-file / -o header_file: sent (nginx demands them) and never printed in
#     stderr, --json, stats or the cache (nor URL credentials or a query string)
#  6. --root-hash / -o root_hash: the right digest opens, a wrong one is refused at open
#  7. an image built with --no-checksums round-trips over the URL too
#  8. one 4 KiB read of a cold file fetches at most 2 integrity chunks beyond the open's metadata
#  9. https with a private CA (--cacert, -o cacert=) and HTTP/2; without the CA: refused
# 10. with $SQK_SAN (ASan/UBSan build): the rich tree through its sqkfuse URL (cold, on-disk
#     cache) and its sqk ls -lR / cat of the URL: identical, no sanitizer report, exit 0
. "$(dirname "$0")/lib.sh"
need_root
need_sqk
need_feature remote
need_cmd python3 curl fusermount3 mountpoint
[ -e /dev/fuse ] || skip "no /dev/fuse"
SQKFUSE=${SQKFUSE:-$(dirname "$SQK")/sqkfuse}
[ -x "$SQKFUSE" ] || fail "sqkfuse not found at $SQKFUSE"
export XDG_CACHE_HOME=$TMP/xdg-cache   # the default cache folder stays in the scratch area
W=$(scratch remote)
SECRET=SECRET123

# no_secret WHAT FILE...: none of FILE... (files or folders) holds $SECRET.
no_secret() {
	local what=$1
	shift
	if grep -r -a -l -F "$SECRET" "$@" >"$TMP/leak" 2>/dev/null; then
		fail "$what: the secret appears in $(tr '\n' ' ' <"$TMP/leak")"
	fi
}
# stats_same NAME REQUESTS BYTES MINHITS: the --stats line of run NAME says what nginx served
# (REQUESTS requests, BYTES body bytes) and at least MINHITS chunks from the disk cache.
stats_same() {
	local line
	line=$(grep -E "^sqk cat: $URL: http: [0-9]+ requests, [0-9]+ bytes " "$TMP/$1.err") ||
		fail "$1: no --stats line in: $(cat "$TMP/$1.err")"
	set -- "$1" "$2" "$3" "$4" $(sed -E 's/.*http: ([0-9]+) requests, ([0-9]+) bytes .*disk cache ([0-9]+) hits.*/\1 \2 \3/' <<<"$line")
	[ "$5" = "$2" ] && [ "$6" = "$3" ] && [ "$7" -ge "$4" ] ||
		fail "$1: --stats says '$line'; nginx served $2 requests, $3 bytes"
}
# stat_get FILE KEY: a counter of a stats=/--json file, checked to be an integer.

$MKTREE "$W/src" || fail "mktree failed"
mkdir -p "$W/www/private"
sqk_build "$W/src" "$W/www/img.sqsh"
ROOT=$(awk '$1 == "root" && $2 == "hash" { print $3 }' "$TMP/build.out")
[ ${#ROOT} = 64 ] || fail "mkimage printed no root hash: $(cat "$TMP/build.out")"
LOCAL=$W/www/img.sqsh
SIZE=$(stat -c %s "$LOCAL")
cp "$LOCAL" "$W/www/private/img.sqsh"
# /private/ needs both headers: Authorization (the secret) and X-Sqk-Test (a second --header)
# shellcheck disable=SC2016 # nginx variables
HTTP_SERVER_CONF='location /private/ { set $ok ""; if ($http_authorization = "Bearer SECRET123") { set $ok a; } if ($http_x_sqk_test = "yes") { set $ok "${ok}b"; } if ($ok != ab) { return 403; } }'
http_serve "$W/www"
unset HTTP_SERVER_CONF
BASE=$HTTP_URL
URL=$BASE/img.sqsh
info "image $SIZE bytes at $URL, root hash $ROOT"

sqk_t probe ls "$URL"
[ "$RC" = 0 ] || { show_err; fail "sqk ls $URL exited $RC: no http:// support?"; }

# ---- 1. sqkfuse on the URL: the whole tree ---------------------------------------------------
mark=$(http_log_mark)
fuse_mount "$URL" "$W/m" -o "stats=$W/stats1.json"
tree_equal "sqkfuse on $URL" "$W/src" "$W/m"
fuse_umount "$W/m"
[ -s "$W/stats1.json" ] || fail "stats file not written at unmount"
for k in http_requests http_bytes http_retries disk_cache_hits disk_cache_misses; do
	stat_get "$W/stats1.json" $k >/dev/null
done
req=$(stat_get "$W/stats1.json" http_requests)
got=$(stat_get "$W/stats1.json" http_bytes)
[ "$req" -gt 0 ] && [ "$got" -gt 0 ] || fail "stats: $req requests, $got bytes for a full read"
[ "$(stat_get "$W/stats1.json" http_retries)" = 0 ] || fail "retries against a healthy server"
# each chunk once; the open's tail request (the last 64 KiB, not chunk-aligned) may overlap one
[ "$got" -le $((SIZE + 65536)) ] || fail "a full read fetched $got bytes for a $SIZE-byte image"
info "full tree through the mount: $req requests, $got bytes (image $SIZE); nginx: $(http_log_bytes "$mark")"
[ -d "$XDG_CACHE_HOME/squashkit" ] || fail "the default cache folder \$XDG_CACHE_HOME/squashkit was not used"

# ---- 2. the sqk commands through the URL equal the local ones --------------------------------
for opts in "-R" "-l -R"; do
	# shellcheck disable=SC2086
	sqk_ok lsl ls $opts "$LOCAL"
	cp "$OUT_FILE" "$TMP/ls.local"
	# shellcheck disable=SC2086
	sqk_ok lsr ls $opts "$URL"
	cmp -s "$TMP/ls.local" "$OUT_FILE" || { diff "$TMP/ls.local" "$OUT_FILE" | head >&2; fail "sqk ls $opts differs over the URL"; }
done
info "sqk ls -R / -lR: identical ($(wc -l <"$OUT_FILE") entries)"

CATS="files/random_4m files/text_3m files/mixed_2m files/holes_small files/size_131073 files/size_0 files/zeros_300k"
# shellcheck disable=SC2086
sqk_ok catr cat "$URL" $CATS
# shellcheck disable=SC2086
(cd "$W/src" && cat $CATS) | cmp -s - "$OUT_FILE" || fail "sqk cat of several files differs over the URL"
info "sqk cat: identical"

sqk_ok infol info --json "$LOCAL"
cp "$OUT_FILE" "$TMP/info.local"
sqk_ok infor info --json "$URL"
no_secret "info --json" "$OUT_FILE"
python3 - "$TMP/info.local" "$OUT_FILE" "$URL" <<'PY' || fail "sqk info --json differs over the URL"
import json, sys
a, b = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
http = ("http_requests", "http_bytes", "http_bytes_unused", "http_retries", "disk_cache_hits", "disk_cache_misses", "http_digest_groups", "http_bytes_background")
for k in http:
    assert isinstance(b.get(k), int) and b[k] >= 0, "remote info --json: %s is %r" % (k, b.get(k))
assert b["http_requests"] > 0, b
assert b["http_bytes_background"] == 0, "sqk info fetched in the background: %r" % b
assert b.get("http_offline") is False, "remote info --json: http_offline is %r" % b.get("http_offline")
for k in set(a) | set(b):
    if k in http or k in ("image", "http_offline"):
        continue
    assert a.get(k) == b.get(k), "%s: local %r, remote %r" % (k, a.get(k), b.get(k))
assert sys.argv[3] in str(b["image"]), b["image"]
print("  info --json: equal but for image; opened with %d requests, %d bytes" % (b["http_requests"], b["http_bytes"]))
PY

sqk_t verl verify --json "$LOCAL"
[ "$RC" = 0 ] || { show_err; fail "sqk verify of the local image exited $RC"; }
cp "$OUT_FILE" "$TMP/verify.local"
sqk_t verr verify --json --root-hash "$ROOT" "$URL"
[ "$RC" = 0 ] || { show_err; fail "sqk verify --root-hash over the URL exited $RC"; }
python3 - "$TMP/verify.local" "$OUT_FILE" <<'PY' || fail "sqk verify --json differs over the URL"
import json, sys
a, b = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert b["root_hash_checked"] and b["root_hash_ok"], b
for k in set(a) | set(b):
    if k not in ("image", "root_hash_checked", "root_hash_ok"):
        assert a.get(k) == b.get(k), "%s: local %r, remote %r" % (k, a.get(k), b.get(k))
PY
info "sqk verify: clean, same report, root hash checked"

sqk_ok extr extract "$URL" "$W/x"
tree_equal "sqk extract from the URL" "$W/src" "$W/x"
rm -rf "$W/x"

# ---- 3. the on-disk cache --------------------------------------------------------------------
C=$W/cache
mark=$(http_log_mark)
sqk_ok open1 info --json --cache-dir "$C" "$URL"
read -r open_req open_bytes <<<"$(http_log_bytes "$mark")"
mark=$(http_log_mark)
sqk_ok cold cat --stats --cache-dir "$C" "$URL" files/random_4m files/text_3m
cmp -s "$OUT_FILE" <(cat "$W/src/files/random_4m" "$W/src/files/text_3m") || fail "cold cat: wrong bytes"
read -r cold_req cold_bytes <<<"$(http_log_bytes "$mark")"
stats_same cold "$cold_req" "$cold_bytes" 0
mark=$(http_log_mark)
sqk_ok warm cat --stats --cache-dir "$C" "$URL" files/random_4m files/text_3m
cmp -s "$OUT_FILE" <(cat "$W/src/files/random_4m" "$W/src/files/text_3m") || fail "warm cat: wrong bytes"
read -r warm_req warm_bytes <<<"$(http_log_bytes "$mark")"
stats_same warm "$warm_req" "$warm_bytes" 1
sqk_ok statloc cat --stats "$LOCAL" files/text_3m
[ ! -s "$ERR_FILE" ] || fail "--stats of a local image printed: $(cat "$ERR_FILE")"
info "open: $open_req requests / $open_bytes bytes; cold cat: $cold_req / $cold_bytes; warm cat: $warm_req / $warm_bytes"
[ $((warm_req * 2)) -le "$cold_req" ] || fail "a warm cat made $warm_req requests, the cold one $cold_req"
[ $((warm_bytes * 4)) -le "$cold_bytes" ] || fail "a warm cat fetched $warm_bytes bytes, the cold one $cold_bytes"
[ "$warm_bytes" -le "$open_bytes" ] ||
	info "note: a warm cat fetches $((warm_bytes - open_bytes)) bytes more than opening (readahead not kept on disk?)"

# damaged cache files (a flipped byte; one chunk's file holding another chunk) are never served
python3 - "$C" <<'PY' || fail "cannot damage the cache"
import os, sys
files = sorted((os.path.join(d, f) for d, _, fs in os.walk(sys.argv[1]) for f in fs),
               key=lambda p: -os.path.getsize(p))
big = [p for p in files if os.path.getsize(p) >= 65536]
assert len(big) >= 6, "only %d chunk-sized files in the cache" % len(big)
for p in big[0::3]:
    b = bytearray(open(p, 'rb').read()); b[len(b) // 2] ^= 0x40; open(p, 'wb').write(b)
same = {}
for p in big[1::3]:
    same.setdefault(os.path.getsize(p), []).append(p)
swapped = 0
for ps in same.values():
    for x, y in zip(ps[0::2], ps[1::2]):
        bx, by = open(x, 'rb').read(), open(y, 'rb').read()
        open(x, 'wb').write(by); open(y, 'wb').write(bx); swapped += 1
print("  damaged %d cache files, swapped %d pairs" % (len(big[0::3]), swapped))
PY
sqk_t damaged cat --cache-dir "$C" "$URL" files/random_4m files/text_3m
[ "$RC" = 0 ] || { show_err; fail "cat with a damaged cache failed (exit $RC) instead of fetching again"; }
cmp -s "$OUT_FILE" <(cat "$W/src/files/random_4m" "$W/src/files/text_3m") || fail "a damaged cache was served"

# mounts: the second one hits the disk cache and fetches far less (both purely lazy: a
# background fetch would fill the cache with what the first did not read)
C2=$W/cache2
for i in 1 2; do
	fuse_mount "$URL" "$W/m" -o "cache_dir=$C2,stats=$W/cstats$i.json,nobackground"
	for f in files/random_4m files/text_3m files/mixed_2m; do
		cmp -s "$W/src/$f" "$W/m/$f" || fail "mount $i with cache_dir: $f differs"
	done
	fuse_umount "$W/m"
done
h1=$(stat_get "$W/cstats1.json" http_bytes)
h2=$(stat_get "$W/cstats2.json" http_bytes)
hits=$(stat_get "$W/cstats2.json" disk_cache_hits)
info "mounts with cache_dir: cold $h1 bytes fetched, warm $h2 bytes, $hits disk-cache hits"
[ "$hits" -gt 0 ] || fail "the warm mount had no disk-cache hits"
[ $((h2 * 4)) -le "$h1" ] || fail "the warm mount fetched $h2 bytes, the cold one $h1"

# --cache-size bounds the folder; 0 stores nothing
sqk_ok small cat --cache-dir "$W/c1m" --cache-size 1M "$URL" files/random_4m files/mixed_2m
cmp -s "$OUT_FILE" <(cat "$W/src/files/random_4m" "$W/src/files/mixed_2m") || fail "cat with a 1M cache: wrong bytes"
n=$(dir_bytes "$W/c1m")
info "--cache-size 1M after reading 6 MiB: $n bytes in the cache folder"
[ "$n" -le $((1048576 + 65536)) ] || fail "--cache-size 1M: the cache folder holds $n bytes"
sqk_ok nocache cat --cache-dir "$W/c0" --cache-size 0 "$URL" files/random_4m
cmp -s "$OUT_FILE" "$W/src/files/random_4m" || fail "cat with --cache-size 0: wrong bytes"
[ "$(dir_bytes "$W/c0")" -lt 65536 ] || fail "--cache-size 0 stored chunks: $(find "$W/c0" -type f | head)"

# ---- 4. the image changes on the server ------------------------------------------------------
V=$W/ver
mkdir -p "$V/www"
mkver() { # mkver N: tree v$N (big.bin random with seed N, text.txt with N) and its image
	mkdir -p "$V/s$1"
	python3 - "$V/s$1" "$1" <<'PY'
import os, random, sys
d, n = sys.argv[1], int(sys.argv[2])
r = random.Random(1000 + n)
open(os.path.join(d, 'big.bin'), 'wb').write(r.randbytes(1 << 20))
open(os.path.join(d, 'text.txt'), 'wb').write(b''.join(b'line %d of version 1\n' % i for i in range(30000)))
if n >= 2:
    open(os.path.join(d, 'new.txt'), 'wb').write(b'only in version %d\n' % n)
PY
	sqk_build -q --no-fragments "$V/s$1" "$V/v$1.sqsh"
}
mkver 1
mkver 2
mkver 3
CURL=$BASE/ver/chg.sqsh
mkdir -p "$W/www/ver"
cp "$V/v1.sqsh" "$W/www/ver/chg.sqsh"
touch -d @1700000000 "$W/www/ver/chg.sqsh"
CV=$W/cache-ver
sqk_ok v1 cat --cache-dir "$CV" "$CURL" big.bin
cmp -s "$OUT_FILE" "$V/s1/big.bin" || fail "v1: wrong bytes"
# a live mount of v1 that has read only the start of big.bin (lazy: nothing more in its cache)
fuse_mount "$CURL" "$W/mv" -o "cache_dir=$CV,nobackground"
cmp -s <(head -c 4096 "$W/mv/big.bin") <(head -c 4096 "$V/s1/big.bin") || fail "v1 mount: wrong bytes"
# another live mount of v1 without a disk cache, nothing of big.bin read yet
SQKFUSE_PID1=$FUSE_PID
fuse_mount "$CURL" "$W/mv0" -o cache_size=0
SQKFUSE_PID2=$FUSE_PID
ls "$W/mv0" >/dev/null || fail "ls of the v1 mount failed"
# replace by v2 (other size and mtime: another ETag)
cp "$V/v2.sqsh" "$W/www/ver/chg.new" && touch -d @1700000100 "$W/www/ver/chg.new"
mv "$W/www/ver/chg.new" "$W/www/ver/chg.sqsh"
sqk_ok v2 cat --cache-dir "$CV" "$CURL" big.bin new.txt
cmp -s "$OUT_FILE" <(cat "$V/s2/big.bin" "$V/s2/new.txt") || fail "after the change, sqk cat did not return v2"
sqk_ok v2ls ls -R --cache-dir "$CV" "$CURL"
cmp -s "$OUT_FILE" <("$SQK" ls -R "$V/v2.sqsh") || fail "after the change, sqk ls does not list v2"
for m in mv mv0; do
	if cat "$W/$m/big.bin" >"$TMP/live.out" 2>"$TMP/live.err"; then
		cmp -s "$TMP/live.out" "$V/s1/big.bin" || fail "live mount $m: big.bin is neither v1 nor an error after the change"
		info "live mount $m after the change: big.bin reads as v1"
	else
		grep -q 'Input/output error' "$TMP/live.err" || fail "live mount $m: $(cat "$TMP/live.err")"
		cmp -s "$TMP/live.out" <(head -c "$(stat -c %s "$TMP/live.out")" "$V/s1/big.bin") ||
			fail "live mount $m: bytes before the error are not v1's"
		info "live mount $m after the change: big.bin gives EIO"
	fi
	mountpoint -q "$W/$m" || fail "live mount $m went away"
done
FUSE_PID=$SQKFUSE_PID2 fuse_umount "$W/mv0"
FUSE_PID=$SQKFUSE_PID1 fuse_umount "$W/mv"
fuse_mount "$CURL" "$W/mv" -o "cache_dir=$CV"
cmp -s "$W/mv/big.bin" "$V/s2/big.bin" || fail "a new mount after the change does not show v2"
[ -f "$W/mv/new.txt" ] || fail "a new mount after the change has no new.txt"
fuse_umount "$W/mv"
# v2 -> v3: the same size and mtime (the same ETag and Last-Modified); only the digests differ
if [ "$(stat -c %s "$V/v2.sqsh")" = "$(stat -c %s "$V/v3.sqsh")" ]; then
	fuse_mount "$CURL" "$W/mv0" -o cache_size=0
	ls "$W/mv0" >/dev/null
	cp "$V/v3.sqsh" "$W/www/ver/chg.new" && touch -d @1700000100 "$W/www/ver/chg.new"
	mv "$W/www/ver/chg.new" "$W/www/ver/chg.sqsh"
	sqk_ok v3 cat --cache-dir "$CV" "$CURL" big.bin
	cmp -s "$OUT_FILE" "$V/s3/big.bin" ||
		fail "same size and mtime: sqk cat with the warm cache did not return v3"
	if cat "$W/mv0/big.bin" >"$TMP/live.out" 2>"$TMP/live.err"; then
		cmp -s "$TMP/live.out" "$V/s2/big.bin" || fail "same size and mtime: a live mount mixed v2 and v3"
	else
		cmp -s "$TMP/live.out" <(head -c "$(stat -c %s "$TMP/live.out")" "$V/s2/big.bin") ||
			fail "same size and mtime: the live mount returned v3 bytes before EIO"
	fi
	mountpoint -q "$W/mv0" || fail "the live mount went away"
	grep -q 'do not match\|changed' "$TMP/fuse.err" || info "note: no log line about the change: $(cat "$TMP/fuse.err")"
	fuse_umount "$W/mv0"
	info "same size and mtime: new readers get v3, the live mount never mixes"
else
	info "v2 and v3 images differ in size; same-ETag change not checked"
fi

# ---- 5. headers and secrets ------------------------------------------------------------------
PURL=$BASE/private/img.sqsh
H1="Authorization: Bearer $SECRET"
H2="X-Sqk-Test: yes"
sqk_t noauth ls "$PURL"
[ "$RC" != 0 ] || fail "the private URL opened without headers"
grep -q 403 "$ERR_FILE" || info "note: the 403 is not named: $(head -c 300 "$ERR_FILE")"
sqk_t halfauth ls --header "$H1" "$PURL"
[ "$RC" != 0 ] || fail "the private URL opened without X-Sqk-Test (the second header)"
no_secret "refused request" "$ERR_FILE" "$OUT_FILE"
sqk_ok auth ls -R --header "$H1" --header "$H2" "$PURL"
cmp -s "$OUT_FILE" <("$SQK" ls -R "$LOCAL") || fail "sqk ls -R of the private URL differs"
no_secret "sqk ls with --header" "$ERR_FILE"
sqk_ok authcat cat --header "$H1" --header "$H2" "$PURL" files/random_4m
cmp -s "$OUT_FILE" "$W/src/files/random_4m" || fail "sqk cat of the private URL: wrong bytes"
printf '%s\n%s\n' "$H1" "$H2" >"$W/headers"
sqk_ok authjson info --json --header-file "$W/headers" "$PURL"
no_secret "sqk info --json --header-file" "$ERR_FILE" "$OUT_FILE"
sqk_ok authver verify --json --header-file "$W/headers" "$PURL"
no_secret "sqk verify --json --header-file" "$ERR_FILE" "$OUT_FILE"
# errors with the secret set: a missing image (404), a malformed header line
sqk_t auth404 cat --header "$H1" --header "$H2" "$BASE/private/missing.sqsh" x
[ "$RC" != 0 ] || fail "a missing private image opened"
no_secret "404 with --header" "$ERR_FILE" "$OUT_FILE"
sqk_t badhdr ls --header "Bearer $SECRET" "$PURL"
[ "$RC" = 2 ] || { show_err; fail "a header line without a name was not a usage error (exit $RC)"; }
no_secret "malformed --header" "$ERR_FILE"
# the secret in URL credentials or a query string is not printed either
sqk_t urlcred cat "http://user:$SECRET@127.0.0.1:$HTTP_PORT/missing.sqsh" x
[ "$RC" != 0 ] || fail "a missing image opened"
no_secret "credentials in the URL" "$ERR_FILE" "$OUT_FILE"
sqk_ok urlquery info --json "$URL?sig=$SECRET"
no_secret "query string in the URL" "$ERR_FILE" "$OUT_FILE"
sqk_t urlquery2 cat "$BASE/missing.sqsh?sig=$SECRET" x
[ "$RC" != 0 ] || fail "a missing image opened"
no_secret "query string in an error" "$ERR_FILE"
# sqkfuse with -o header_file
CH=$W/cache-private
fuse_mount "$PURL" "$W/mp" -o "header_file=$W/headers,cache_dir=$CH,stats=$W/pstats.json"
cmp -s "$W/src/files/text_3m" "$W/mp/files/text_3m" || fail "private mount: text_3m differs"
cmp -s "$W/src/files/random_4m" "$W/mp/files/random_4m" || fail "private mount: random_4m differs"
tr '\0' ' ' <"/proc/$FUSE_PID/cmdline" >"$TMP/cmdline"
fuse_umount "$W/mp"
no_secret "sqkfuse -o header_file" "$TMP/fuse.err" "$W/pstats.json" "$CH" "$TMP/cmdline"
printf '%s\n' "$H1" >"$W/headers1"
rc=0
timeout 60 "$SQKFUSE" "$PURL" "$W/mp" -f -o "header_file=$W/headers1" 2>"$TMP/fuse1.err" || rc=$?
[ $rc != 0 ] && [ $rc != 124 ] || fail "sqkfuse on the private URL with one header of two: exit $rc"
mountpoint -q "$W/mp" && fail "mounted without the second header"
no_secret "sqkfuse refused" "$TMP/fuse1.err"
info "headers: sent (nginx accepted them), never printed; URL credentials and query hidden"

# ---- 6. root-hash pin ------------------------------------------------------------------------
BAD=$(printf '%s' "$ROOT" | tr '0123456789abcdef' '123456789abcdef0')
sqk_ok pin ls --root-hash "$ROOT" "$URL" files
sqk_t pinbad ls --root-hash "$BAD" "$URL" files
[ "$RC" != 0 ] || fail "a wrong --root-hash was accepted"
[ ! -s "$OUT_FILE" ] || fail "a wrong --root-hash still listed: $(head -n 3 "$OUT_FILE")"
sqk_t pinbadcat cat --root-hash "$BAD" "$URL" files/size_4096
[ "$RC" != 0 ] && [ ! -s "$OUT_FILE" ] || fail "sqk cat with a wrong --root-hash: exit $RC, $(stat -c %s "$OUT_FILE") bytes out"
sqk_t pinshort ls --root-hash "${ROOT:1}" "$URL"
[ "$RC" = 2 ] || fail "a 63-digit --root-hash: exit $RC, expected a usage error"
fuse_mount "$URL" "$W/mr" -o "root_hash=$ROOT"
cmp -s "$W/src/files/text_small" "$W/mr/files/text_small" || fail "pinned mount: text_small differs"
fuse_umount "$W/mr"
rc=0
timeout 60 "$SQKFUSE" "$URL" "$W/mr" -f -o "root_hash=$BAD" 2>"$TMP/pin.err" || rc=$?
[ $rc != 0 ] && [ $rc != 124 ] || fail "sqkfuse with a wrong root_hash: exit $rc"
mountpoint -q "$W/mr" && fail "mounted with a wrong root_hash"
info "root hash pin: the right digest opens, a wrong one is refused ($(head -n 1 "$TMP/pin.err"))"

# ---- 7. an image without integrity data ------------------------------------------------------
sqk_build -q --no-checksums "$W/src" "$W/www/plain.sqsh"
check_superblock "$W/www/plain.sqsh" --no-checksums
NURL=$BASE/plain.sqsh
fuse_mount "$NURL" "$W/mn" -o "stats=$W/nstats.json"
tree_equal "sqkfuse on a --no-checksums image's URL" "$W/src" "$W/mn"
fuse_umount "$W/mn"
[ "$(stat_get "$W/nstats.json" http_retries)" = 0 ] || fail "retries against a healthy server"
sqk_ok ncat cat "$NURL" files/random_4m files/text_3m
cmp -s "$OUT_FILE" <(cat "$W/src/files/random_4m" "$W/src/files/text_3m") || fail "--no-checksums: sqk cat differs"
sqk_ok nlist ls -l -R "$NURL"
cmp -s "$OUT_FILE" <("$SQK" ls -l -R "$W/www/plain.sqsh") || fail "--no-checksums: sqk ls -lR differs"
sqk_ok ninfo info --json "$NURL"
python3 - "$OUT_FILE" <<'PY' || fail "--no-checksums: info --json"
import json, sys
j = json.load(open(sys.argv[1]))
assert j["root_hash"] is None and j["integrity"] == "none", j
PY
sqk_t npin ls --root-hash "$ROOT" "$NURL"
[ "$RC" != 0 ] || fail "--root-hash accepted an image without integrity data"
info "--no-checksums image: round trip over the URL; --root-hash refuses it"

# ---- 8. bytes fetched for one 4 KiB read of a cold file ---------------------------------------
# Mount A only looks the file up; mount B looks it up and reads 4 KiB in its 6th block (no
# readahead: POSIX_FADV_RANDOM; no disk cache; no background fetch). B - A = what the read fetched.
fuse_mount "$URL" "$W/mb" -o "cache_size=0,stats=$W/bA.json,nobackground"
stat "$W/mb/files/text_3m" >/dev/null || fail "stat through the mount failed"
fuse_umount "$W/mb"
mark=$(http_log_mark)
fuse_mount "$URL" "$W/mb" -o "cache_size=0,stats=$W/bB.json,nobackground"
python3 - "$W/src/files/text_3m" "$W/mb/files/text_3m" <<'PY' || fail "4 KiB read through the mount"
import os, sys
src, mnt = sys.argv[1], sys.argv[2]
os.stat(mnt)
fd = os.open(mnt, os.O_RDONLY)
os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
off = 5 * 131072 + 8192
with open(src, 'rb') as f:
    f.seek(off)
    assert os.pread(fd, 4096, off) == f.read(4096), "wrong bytes"
os.close(fd)
PY
fuse_umount "$W/mb"
a=$(stat_get "$W/bA.json" http_bytes)
b=$(stat_get "$W/bB.json" http_bytes)
info "one 4 KiB read: open+lookup fetched $a bytes, open+lookup+read $b bytes ($((b - a)) for the read); nginx: $(http_log_bytes "$mark")"
[ $((b - a)) -le $((2 * 65536)) ] || fail "one 4 KiB read fetched $((b - a)) bytes (more than 2 chunks)"

# ---- 9. https: private CA, HTTP/2 ------------------------------------------------------------
if tls_certs "$W/tls"; then
	HTTP_TLS_CERT=$W/tls/server.pem HTTP_TLS_KEY=$W/tls/server.key HTTP_H2=1 http_serve "$W/www"
	SURL=$HTTP_URL/img.sqsh
	sqk_t tlsnoca ls "$SURL"
	[ "$RC" != 0 ] || fail "https with an unknown CA opened"
	info "https without the CA: refused ($(head -n 1 "$ERR_FILE"))"
	sqk_ok tls ls -R --cacert "$W/tls/ca.pem" "$SURL"
	cmp -s "$OUT_FILE" <("$SQK" ls -R "$LOCAL") || fail "https: sqk ls -R differs"
	sqk_ok tlscat cat --cacert "$W/tls/ca.pem" "$SURL" files/random_4m files/text_3m
	cmp -s "$OUT_FILE" <(cat "$W/src/files/random_4m" "$W/src/files/text_3m") || fail "https: sqk cat differs"
	mark=$(http_log_mark)
	fuse_mount "$SURL" "$W/ms" -o "cacert=$W/tls/ca.pem,cache_size=0,stats=$W/sstats.json"
	tree_equal "sqkfuse on $SURL" "$W/src" "$W/ms"
	fuse_umount "$W/ms"
	http_log_ranges "$mark" | awk '{ print $3 }' | sort | uniq -c | sed 's/^ */  requests: /'
	http_log_ranges "$mark" | grep -q ' HTTP/2.0 ' || fail "https: no request used HTTP/2"
	[ "$(stat_get "$W/sstats.json" http_retries)" = 0 ] || fail "https: retries against a healthy server"
	rc=0
	timeout 60 "$SQKFUSE" "$SURL" "$W/ms" -f 2>"$TMP/tls.err" || rc=$?
	[ $rc != 0 ] && [ $rc != 124 ] || fail "sqkfuse on https with an unknown CA: exit $rc"
	mountpoint -q "$W/ms" && fail "mounted https with an unknown CA"
else
	info "no certificates (openssl); https not checked"
fi

# ---- 10. the sanitized build -----------------------------------------------------------------
if san_start; then
	t0=$(date +%s)
	SQKFUSE=$SQKFUSE_SAN fuse_mount "$URL" "$W/msan" -o "cache_dir=$W/cache-san,stats=$W/san.json"
	tree_equal "sanitized sqkfuse on $URL" "$W/src" "$W/msan"
	san_fuse_umount "$W/msan"
	[ "$(stat_get "$W/san.json" http_retries)" = 0 ] || fail "sanitized sqkfuse: retries against a healthy server"
	san_sqk sanls ls -l -R "$URL"
	[ "$RC" = 0 ] || { show_err; fail "sanitized sqk ls -lR $URL exited $RC"; }
	cmp -s "$OUT_FILE" <("$SQK" ls -l -R "$LOCAL") || fail "sanitized sqk ls -lR differs over the URL"
	# shellcheck disable=SC2086
	san_sqk sancat cat --cache-size 0 "$URL" $CATS
	[ "$RC" = 0 ] || { show_err; fail "sanitized sqk cat $URL exited $RC"; }
	# shellcheck disable=SC2086
	(cd "$W/src" && cat $CATS) | cmp -s - "$OUT_FILE" || fail "sanitized sqk cat differs over the URL"
	# shellcheck disable=SC2086
	san_sqk sancatw cat --cache-dir "$W/cache-san" "$URL" $CATS
	[ "$RC" = 0 ] || { show_err; fail "sanitized sqk cat --cache-dir $URL exited $RC"; }
	# shellcheck disable=SC2086
	(cd "$W/src" && cat $CATS) | cmp -s - "$OUT_FILE" || fail "sanitized sqk cat from the disk cache differs"
	info "sanitized sqkfuse and sqk ls -lR / cat (cold, disk cache) over the URL: identical, no report ($(($(date +%s) - t0))s)"
fi
exit 0
