#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# A remote image opened from its cache folder while its server cannot be reached (a real nginx,
# stopped; then answering 404):
#  1. sqk cat of files read before, the server stopped: their bytes, one line saying the open
#     was made from the cache folder, --stats and info --json say so (http_offline); a file never
#     read fails (non-zero exit, its bytes named), never served short
#  2. a mount whose background fetched the whole image, mounted again with the server stopped:
#     the whole tree reads correctly, stats= says "http_offline": true
#  3. the server back: opens are made online again (http_offline false); an online open that
#     finds the record up to date does not write it again
#  4. the image gone from the server (404), or a damaged record: the open fails as without a
#     cache folder, nothing opened from it
#  5. an image without integrity data: nothing kept, its open fails with the server stopped; the
#     record counts against --cache-size (a 1 MiB cache folder stays within it)
#  6. https with a CA file that does not load (a configuration error, not an unreachable
#     server): refused, named, never opened from the cache folder
. "$(dirname "$0")/lib.sh"
need_root
need_sqk
need_feature remote
need_cmd python3 curl fusermount3 mountpoint cmp
[ -e /dev/fuse ] || skip "no /dev/fuse"
SQKFUSE=${SQKFUSE:-$(dirname "$SQK")/sqkfuse}
[ -x "$SQKFUSE" ] || fail "sqkfuse not found at $SQKFUSE"
export XDG_CACHE_HOME=$TMP/xdg-cache
W=$(scratch offline)

rand_tree "$W/src" 96
mkdir -p "$W/www"
sqk_build "$W/src" "$W/www/img.sqsh"
sqk_build "$W/src" "$W/www/plain.sqsh" --no-checksums
http_serve "$W/www"
URL=$HTTP_URL/img.sqsh
C=$W/cache

# same_as NAME FILE...: run NAME's stdout is the files of the source tree, one after another.
same_as() {
	local name=$1 f
	shift
	for f in "$@"; do cat "$W/src/$f"; done >"$TMP/want"
	cmp -s "$TMP/want" "$TMP/$name.out" || fail "$name: the bytes differ from the source's"
}
offline_line() { grep -c "the server cannot be reached: opening from the cache folder $1" "$2"; }

# ---- 1. one-shot commands ------------------------------------------------------------------
sqk_ok online cat --cache-dir "$C" "$URL" d0/f00 d2/f05
same_as online d0/f00 d2/f05
[ "$(offline_line "$C" "$TMP/online.err")" = 0 ] || fail "an online open said it was offline"
ls "$C/urls" >"$TMP/maps" || fail "no maps in $C/urls"
[ "$(wc -l <"$TMP/maps")" = 1 ] || fail "not one map: $(cat "$TMP/maps")"
MAP=$C/urls/$(cat "$TMP/maps")
# the record: an entry of the image's cache folder, counted against the cache's limit
REC=$C/$(awk '{ print $3 }' "$MAP")/c000$(head -c 12 "$TMP/maps")
[ -f "$REC" ] || fail "no record $REC (map: $(cat "$MAP"))"
http_stop "$HTTP_PID"

sqk_ok off cat --stats --cache-dir "$C" "$URL" d0/f00 d2/f05
same_as off d0/f00 d2/f05
[ "$(offline_line "$C" "$TMP/off.err")" = 1 ] || { show_err; fail "not one line says the open was made from the cache folder"; }
grep -q "^sqk cat: $URL: http: [0-9]* requests, 0 bytes .*; opened offline from the cache folder$" "$TMP/off.err" ||
	{ show_err; fail "the --stats line does not say the open was offline"; }
sqk_ok offinfo info --json --cache-dir "$C" "$URL"
[ "$(json_get "$TMP/offinfo.out" http_offline)" = True ] || fail "info --json: http_offline is not true"
[ "$(json_get "$TMP/offinfo.out" http_bytes)" = 0 ] || fail "info --json: bytes received offline"

sqk_t never cat --cache-dir "$C" "$URL" d3/f11
[ "$RC" != 0 ] || fail "a file never read was served with the server stopped"
grep -qE "bytes [1-9][0-9]*-[0-9]+: " "$TMP/never.err" || { show_err; fail "the failed read does not name its bytes"; }
grep -q "d3/f11" "$TMP/never.err" || { show_err; fail "the failed read does not name the file"; }
[ "$(stat -c %s "$TMP/never.out")" -lt $(( 512 << 10 )) ] || fail "a failed read gave the whole file"
info "offline: cached files read; a file never read fails:"
sed 's/^/    | /' "$TMP/never.err"

# ---- 2. a mount -----------------------------------------------------------------------------
http_restart
fuse_mount "$URL" "$W/m" -o "cache_dir=$W/c2"
wait_log "in the background in" 120
fuse_umount "$W/m"
http_stop "$HTTP_PID"
fuse_mount "$URL" "$W/m" -o "cache_dir=$W/c2,stats=$W/stats.json"
tree_equal "the offline mount" "$W/src" "$W/m"
fuse_umount "$W/m"
[ "$(offline_line "$W/c2" "$TMP/fuse.err")" = 1 ] || { cat "$TMP/fuse.err" >&2; fail "the mount does not say it was opened from the cache folder"; }
[ "$(json_get "$W/stats.json" http_offline)" = True ] || fail "stats=: http_offline is not true"
[ "$(stat_get "$W/stats.json" http_bytes)" = 0 ] || fail "the offline mount of a whole cached image received bytes"

# ---- 3. the server back ---------------------------------------------------------------------
http_restart
t0=$(stat -c %i "$REC")
m0=$(stat -c %y "$MAP")
sqk_ok back info --json --cache-dir "$C" "$URL"
[ "$(json_get "$TMP/back.out" http_offline)" = False ] || fail "with the server back the open was offline"
[ "$(stat -c %i "$REC")" = "$t0" ] && [ "$(stat -c %y "$MAP")" = "$m0" ] ||
	fail "an online open wrote an unchanged record again"

# ---- 4. 404, a damaged record -----------------------------------------------------------------
mv "$W/www/img.sqsh" "$W/img.sqsh"
sqk_t gone cat --cache-dir "$C" "$URL" d0/f00
[ "$RC" != 0 ] || fail "an image gone from the server (404) was opened from the cache folder"
[ "$(offline_line "$C" "$TMP/gone.err")" = 0 ] || fail "a 404 opened the cached copy"
grep -q "404" "$TMP/gone.err" || { show_err; fail "the 404 is not named"; }
mv "$W/img.sqsh" "$W/www/img.sqsh"
http_stop "$HTTP_PID"
printf 'X' | dd of="$REC" bs=1 seek=2000 conv=notrunc status=none
sqk_t damaged cat --cache-dir "$C" "$URL" d0/f00
[ "$RC" != 0 ] || fail "a damaged record opened"
[ -s "$TMP/damaged.out" ] && fail "a damaged record served bytes"
grep -qF "the cache folder's record of the image's open ($REC) is damaged" "$TMP/damaged.err" ||
	{ show_err; fail "the damaged record is not named"; }

# ---- 5. no integrity data ---------------------------------------------------------------------
http_restart
sqk_ok plain cat --cache-dir "$W/c5" "$HTTP_URL/plain.sqsh" d0/f00
same_as plain d0/f00
[ ! -e "$W/c5/urls" ] || fail "an image without integrity data was kept for offline opens"
# a cache too small for the record keeps none: the limit holds
sqk_ok tiny cat --cache-dir "$W/c6" --cache-size 1M "$URL" d0/f00 d0/f01 d0/f02
[ "$(dir_bytes "$W/c6")" -le $(( 1048576 + 65536 )) ] || fail "--cache-size 1M: $(dir_bytes "$W/c6") bytes"
http_stop "$HTTP_PID"
sqk_t plainoff cat --cache-dir "$W/c5" "$HTTP_URL/plain.sqsh" d0/f00
[ "$RC" != 0 ] || fail "an image without integrity data opened with the server stopped"

# ---- 6. a TLS configuration error ----------------------------------------------------------
if tls_certs "$W/tls"; then
	HTTP_TLS_CERT=$W/tls/server.pem HTTP_TLS_KEY=$W/tls/server.key http_serve "$W/www"
	SURL=$HTTP_URL/img.sqsh
	sqk_ok tlson cat --cacert "$W/tls/ca.pem" --cache-dir "$W/c7" "$SURL" d0/f00
	same_as tlson d0/f00
	[ -n "$(ls "$W/c7/urls" 2>/dev/null)" ] || fail "https: nothing kept for an open without the server"
	sqk_t tlsbad cat --cacert "$W/no-such-ca.pem" --cache-dir "$W/c7" "$SURL" d0/f00
	[ "$RC" != 0 ] || fail "https with a CA file that does not load opened"
	[ -s "$TMP/tlsbad.out" ] && fail "https with a CA file that does not load served bytes"
	[ "$(offline_line "$W/c7" "$TMP/tlsbad.err")" = 0 ] ||
		fail "a CA file that does not load opened the copy in the cache folder"
	grep -q "no-such-ca.pem" "$TMP/tlsbad.err" || { show_err; fail "the CA file is not named"; }
	grep -q "retries exhausted" "$TMP/tlsbad.err" && fail "a CA file that does not load was tried again"
	info "https, a CA file that does not load: $(head -n 1 "$TMP/tlsbad.err")"
else
	info "no certificates (openssl): the TLS case not checked"
fi
info "offline opens: cat, info, a mount; 404, a damaged record, no integrity data and a TLS error refused"
