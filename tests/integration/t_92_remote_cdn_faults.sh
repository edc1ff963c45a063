#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# Remote images behind caches and mirrors (issue 32), served by nginx through
# tests/integration/faultproxy.py:
#  1. a slow cache fill: every response's headers come at once but its body only 1.5 s later
#     (a caching proxy that fills the whole file before it serves a range), with --timeout 1
#     --retries 0: the stalled bodies are asked again with twice the patience (not a retry of
#     --retries), so info and cat succeed with few requests, the bytes are right, and the
#     client says why it asked again
#  2. two mirrors with identical bytes but other ETags behind a round-robin (faultproxy alt=):
#     every open and read works with the right bytes (the other ETag is checked: its trailer
#     has the same root digest); two URLs of one image share one cache folder (keyed by the
#     root digest); a server with a new ETag in every answer is read right once 8 of them
#     were checked; an image of the same size with other bytes is refused, naming both ETags
#  3. 4 processes started together with one cache folder, reading a 24 MiB file of one image:
#     the server sends about the image once (per-unit locks in the folder; chunks on disk as
#     they arrive), each gets the right bytes (twice)
. "$(dirname "$0")/lib.sh"
need_sqk
need_feature remote
need_cmd python3 curl
W=$(scratch cdnfaults)
export XDG_CACHE_HOME=$TMP/xdg-cache
S=$W/src
mkdir -p "$S" "$W/www"
python3 - "$S" <<'PY'
import os, random, sys
r = random.Random(92)
d = sys.argv[1]
open(os.path.join(d, 'raw.bin'), 'wb').write(r.randbytes(3 << 20))
open(os.path.join(d, 'small.txt'), 'wb').write(b'a small file\n')
PY
sqk_build -q "$S" "$W/www/img.sqsh"
SIZE=$(stat -c %s "$W/www/img.sqsh")
http_serve "$W/www"
proxy_start
purl() { echo "$PROXY_URL/_f/$1/img.sqsh"; }
info "image $SIZE bytes; nginx $HTTP_URL, proxy $PROXY_URL"

json_count() { # json_count FILE KEY
	python3 -c 'import json, sys; print(int(json.load(open(sys.argv[1]))[sys.argv[2]]))' "$1" "$2" ||
		fail "no count $2 in $1: $(head -c 1000 "$1")"
}
proxy_requests() { # proxy_requests MODE
	proxy_stats "$1" | python3 -c 'import json, sys; print(json.load(sys.stdin)["requests"])'
}

# ---- 1. a slow cache fill --------------------------------------------------------------------
M=bodydelay=1500
sqk_ok stallinfo info --json --cache-size 0 --timeout 1 --retries 0 "$(purl $M,tag=info)"
r=$(json_count "$OUT_FILE" http_retries)
n=$(json_count "$OUT_FILE" http_requests)
[ "$r" -ge 1 ] || fail "$M: no request was asked again (http_retries $r)"
[ "$r" -le "$n" ] || fail "$M: $r requests asked again for $n requests (once each at most)"
grep -q "stalled 1s after the headers; asking again, waiting up to 2s" "$ERR_FILE" ||
	{ show_err; fail "$M: no message says why a request was asked again"; }
sqk_ok stallcat cat --cache-size 0 --timeout 1 --retries 0 "$(purl $M)" raw.bin small.txt
cmp -s "$OUT_FILE" <(cat "$S/raw.bin" "$S/small.txt") || fail "$M: wrong bytes"
p=$(proxy_requests $M)
[ "$p" -le 20 ] || fail "$M: cat took $p requests"
info "slow fill ($M, --timeout 1 --retries 0): info with $n requests, $r asked again; cat right with $p requests (${SECS}s)"

# ---- 2. mirrors with other ETags -------------------------------------------------------------
# img-b.sqsh: the same bytes, another mtime (nginx's ETag is mtime-size); img-c.sqsh: another
# image of the same size (raw.bin's bytes differ, stored as they are)
cp "$W/www/img.sqsh" "$W/www/img-b.sqsh"
touch -d '2001-02-03 04:05:06' "$W/www/img-b.sqsh"
S2=$W/src2
mkdir -p "$S2"
python3 -c 'import random, sys; sys.stdout.buffer.write(random.Random(1092).randbytes(3 << 20))' >"$S2/raw.bin"
cp "$S/small.txt" "$S2/small.txt"
touch -r "$S/raw.bin" "$S2/raw.bin"
touch -r "$S/small.txt" "$S2/small.txt"
touch -r "$S" "$S2"
sqk_build -q "$S2" "$W/www/img-c.sqsh"
[ "$(stat -c %s "$W/www/img-c.sqsh")" = "$SIZE" ] || fail "img-c.sqsh is not $SIZE bytes: the test needs the same size"
cmp -s "$W/www/img.sqsh" "$W/www/img-c.sqsh" && fail "img-c.sqsh is not another image"
etag_of() { curl -sI "$HTTP_URL/$1" | tr -d '\r' | awk 'tolower($1) == "etag:" { print $2 }'; }
EA=$(etag_of img.sqsh) EB=$(etag_of img-b.sqsh) EC=$(etag_of img-c.sqsh)
[ -n "$EA" ] && [ "$EA" != "$EB" ] && [ "$EA" != "$EC" ] || fail "no distinct ETags: $EA $EB $EC"
for i in 1 2 3 4; do
	sqk_ok mirror$i cat --cache-size 0 "$(purl alt=img-b.sqsh,tag=$i)" raw.bin small.txt
	cmp -s "$OUT_FILE" <(cat "$S/raw.bin" "$S/small.txt") || fail "two mirrors, open $i: wrong bytes"
done
grep -q "has the same root digest" "$ERR_FILE" ||
	{ show_err; fail "two mirrors: no message says the other ETag is the same image"; }
sqk_ok mirrorls ls -l -R --cache-size 0 "$(purl alt=img-b.sqsh,tag=ls)"
cmp -s "$OUT_FILE" <("$SQK" ls -l -R "$W/www/img.sqsh") || fail "two mirrors: ls -lR differs"
info "two mirrors with ETags $EA and $EB: 4 opens and reads right, ls -lR right"
# a server with a new ETag in every answer (If-Match honoured): each used to wait for a check of
# its own, for ever; after 8 checks ETags are not checked any more
sqk_ok newetag cat --cache-size 0 "$(purl newetag)" raw.bin small.txt
cmp -s "$OUT_FILE" <(cat "$S/raw.bin" "$S/small.txt") || fail "a new ETag in every answer: wrong bytes"
grep -q "ETags change from answer to answer (8 checked)" "$ERR_FILE" ||
	{ show_err; fail "a new ETag in every answer: no message says ETags are not checked any more"; }
c=$(grep -c "has the same root digest" "$ERR_FILE")
[ "$c" = 8 ] || { show_err; fail "a new ETag in every answer: $c checks, not 8"; }
info "a new ETag in every answer: cat right in ${SECS}s after $c checks"
# the disk cache is the image's (its root digest), not the URL's
mark=$(http_log_mark)
sqk_ok cache1 cat --cache-dir "$W/shared" "$HTTP_URL/img.sqsh" raw.bin
mid=$(http_log_mark)
sqk_ok cache2 cat --cache-dir "$W/shared" "$HTTP_URL/img-b.sqsh" raw.bin
cmp -s "$OUT_FILE" "$S/raw.bin" || fail "img-b.sqsh from the shared cache: wrong bytes"
read -r n1 b1 <<<"$(http_log_bytes "$mark")"
read -r n2 b2 <<<"$(http_log_bytes "$mid")"
b1=$((b1 - b2))
[ "$b2" -le $((256 << 10)) ] ||
	fail "img-b.sqsh after img.sqsh with one cache folder fetched $b2 bytes (the first $b1)"
info "one cache folder for two URLs of one image: the second fetched $b2 bytes (the first $b1)"
# a really changed image of the same size behind the same name: refused, both ETags named
sqk_t changed cat --cache-size 0 "$(purl alt=img-c.sqsh)" raw.bin
[ "$RC" != 0 ] || fail "a changed image behind a mirror was read (exit 0)"
grep -q "the image changed on the server (ETag [^ ]*, was [^ ]*)" "$ERR_FILE" ||
	{ show_err; fail "a changed image: no message naming the ETags"; }
for e in "$EA" "$EC"; do
	grep -qF "$e" "$ERR_FILE" || { show_err; fail "a changed image: ETag $e not named"; }
done
info "a changed image of the same size behind a mirror: refused ($(grep -m1 'changed on the server' "$ERR_FILE"))"

# ---- 3. processes sharing a cache folder share requests ---------------------------------------
S3=$W/src3
mkdir -p "$S3"
python3 -c 'import random, sys; sys.stdout.buffer.write(random.Random(3092).randbytes(24 << 20))' >"$S3/big.bin"
sqk_build -q "$S3" "$W/www/img-d.sqsh"
DSIZE=$(stat -c %s "$W/www/img-d.sqsh")
for round in 1 2; do
	rm -rf "$W/four"
	mark=$(http_log_mark)
	pids=()
	for c in 1 2 3 4; do
		timeout 180 "$SQK" cat --cache-dir "$W/four" "$HTTP_URL/img-d.sqsh" big.bin >"$W/four$c.out" 2>"$W/four$c.err" &
		pids+=($!)
	done
	for c in 1 2 3 4; do
		wait "${pids[$((c - 1))]}" || { cat "$W/four$c.err" >&2; fail "process $c of 4 failed"; }
		cmp -s "$W/four$c.out" "$S3/big.bin" || fail "process $c of 4: wrong bytes"
	done
	read -r n b <<<"$(http_log_bytes "$mark")"
	ratio=$(python3 -c "print(round($b / $DSIZE, 2))")
	info "4 processes, one cache folder, round $round: $n requests, $b bytes (${ratio}x the image of $DSIZE)"
	# each opens with its own two requests (192 KiB); the rest once
	[ "$b" -le $((DSIZE * 11 / 10 + 4 * (192 << 10))) ] ||
		fail "4 processes sharing a cache folder fetched ${ratio}x the image"
done
