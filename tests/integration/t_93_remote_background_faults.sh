#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# Faults during the background fetch of a mounted remote image (a real nginx, behind
# faultproxy.py's delay so that the background is still running when the fault comes):
#  1. the server goes away and comes back: the background pauses (one line), a read of bytes not
#     fetched yet fails with EIO meanwhile, then it resumes and completes (its lines say so), the
#     whole image is in the cache folder and reads are correct
#  2. a full disk (the cache folder on a 3 MiB tmpfs): the background stops with one line naming
#     the cache folder and the reason; the mount goes on (every file reads correctly)
#  3. the image changes on the server (another image of the same size: a new ETag and root
#     digest): the background stops with one line naming the change
. "$(dirname "$0")/lib.sh"
need_root
need_sqk
need_feature remote
need_cmd python3 curl fusermount3 mountpoint
[ -e /dev/fuse ] || skip "no /dev/fuse"
SQKFUSE=${SQKFUSE:-$(dirname "$SQK")/sqkfuse}
[ -x "$SQKFUSE" ] || fail "sqkfuse not found at $SQKFUSE"
W=$(scratch bgf)
MIB=1048576

rand_tree "$W/src" 93
mkdir -p "$W/www"
sqk_build "$W/src" "$W/www/img.sqsh"
SIZE=$(stat -c %s "$W/www/img.sqsh")
http_serve "$W/www"
proxy_start
info "image $SIZE bytes"

read_all() {
	local f
	for f in "$W"/src/d*/f*; do
		cmp -s "$f" "$1/${f#"$W/src/"}" || fail "$2: ${f#"$W/src/"} read through the mount differs"
	done
}
bg_lines() { grep "background" "$TMP/fuse.err"; }

# ---- 1. the server goes away and comes back ----------------------------------------------
# 400 ms a request: 24 units, 3 at a time, take over 3 s
URL=$PROXY_URL/_f/delay=400/img.sqsh
fuse_mount "$URL" "$W/m" -o "cache_dir=$W/cache,retries=1"
sleep 1
http_stop "$HTTP_PID"
wait_log "the background fetch pauses" 60
# the image's end is fetched last: not there yet
if cat "$W/m/d3/f11" >/dev/null 2>"$TMP/eio.err"; then
	fail "a read of bytes not fetched succeeded with the server gone"
fi
grep -q "Input/output error" "$TMP/eio.err" || fail "the read failed with: $(cat "$TMP/eio.err")"
sleep 2
http_restart
wait_log "in the background in" 120
bg_lines | sed 's/^/    | /'
[ "$(bg_lines | grep -c "pauses")" = 1 ] || fail "not one pause line: $(bg_lines)"
bg_lines | grep -q "the background fetch resumed" || fail "no line says it resumed: $(bg_lines)"
grep -q "fetched .* MiB in the background in .*the image is in the cache folder $W/cache" "$TMP/fuse.err" || fail "no line says it completed: $(bg_lines)"
cb=$(dir_bytes "$W/cache")
info "cache folder after the outage: $cb bytes"
[ "$cb" -ge $(( SIZE * 95 / 100 )) ] || fail "the cache folder holds $cb bytes of a $SIZE-byte image"
http_stop "$HTTP_PID" # what follows comes from the cache
read_all "$W/m" "after the outage"
fuse_umount "$W/m"
http_restart

# ---- 2. a full disk -----------------------------------------------------------------------------
mkdir -p "$W/tiny"
mount -t tmpfs -o size=3m tmpfs "$W/tiny" || skip "cannot mount a tmpfs"
at_exit "umount -l '$W/tiny' 2>/dev/null"
fuse_mount "$HTTP_URL/img.sqsh" "$W/m" -o "cache_dir=$W/tiny/c"
wait_log "the background fetch stopped" 60
bg_lines | sed 's/^/    | /'
[ "$(bg_lines | wc -l)" = 1 ] || fail "not one background line: $(bg_lines)"
bg_lines | grep -q "cannot write to the cache folder $W/tiny/c: no space" || fail "the line does not name the folder and the reason: $(bg_lines)"
read_all "$W/m" "full disk"
kill -0 "$FUSE_PID" || fail "sqkfuse exited"
fuse_umount "$W/m"
[ "$(bg_lines | wc -l)" = 1 ] || fail "more background lines after reads: $(bg_lines)"

# ---- 3. the image changes on the server ----------------------------------------------------
# background_rate: the background is still fetching when the image changes (unlimited, it can
# have the whole image before the new one is built)
fuse_mount "$URL" "$W/m" -o "cache_dir=$W/cache3,background_rate=2M"
sleep 1
# another image of the same size (one file's bytes differ): a new ETag and root digest
cp -a "$W/src" "$W/src2"
head -c $(( 512 << 10 )) /dev/urandom >"$W/src2/d2/f05"
sqk_build "$W/src2" "$W/new.sqsh"
[ "$(stat -c %s "$W/new.sqsh")" = "$SIZE" ] || fail "the changed image has another size"
touch -d '@1000000000' "$W/new.sqsh"
mv "$W/new.sqsh" "$W/www/img.sqsh"
wait_log "the background fetch stopped" 60
bg_lines | sed 's/^/    | /'
[ "$(bg_lines | wc -l)" = 1 ] || fail "not one background line: $(bg_lines)"
bg_lines | grep -q "the image changed on the server (ETag" || fail "the line does not name the change: $(bg_lines)"
kill -0 "$FUSE_PID" || fail "sqkfuse exited"
fuse_umount "$W/m"
exit 0
