#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# Remote images behind a caching proxy (issue 32): an nginx origin (http_serve) and a caching
# nginx in front of it with `slice 1m` + `proxy_cache_lock on` and the slice in the cache key
# (docs/remote.md, "Caching proxies and CDNs"), both on 127.0.0.1:
#  1. 8 clients with cache folders of their own extract the image through the proxy at once:
#     every tree is identical to the source, the origin sends at most 1.2x the image's bytes
#     (its access log), and every request the clients sent lies inside one 1 MiB slice (the
#     proxy's access log), so each costs the proxy one cached sub-request at most
#  2. one client alone (sqk tar of the image: a walk) through the cold proxy takes at most 1.3x
#     its time direct to the origin, and gets the local tar's bytes (the median of 5 runs of each; a query string the origin ignores makes each run a cold
#     set of cache keys). The origin is far: in a network namespace of the test's own, packets
#     to and from the origin's port wait 10 ms each way (ns_add_delay with NS_DELAY_MATCH), the
#     client and the proxy are near each other. Without a namespace or a way to delay, part 2
#     is left out (said in the log).
. "$(dirname "$0")/lib.sh"
need_sqk
need_feature remote
need_cmd python3 curl ip
W=$(scratch cdn)

IN_NS=""
NS=sqk91-$$
if [ "$(id -u)" = 0 ] && ip netns add "$NS" 2>"$TMP/netns.err"; then
	at_exit "ip netns del $NS 2>/dev/null"
	if ip netns exec "$NS" ip link set lo up 2>>"$TMP/netns.err"; then
		IN_NS="ip netns exec $NS"
	fi
fi
[ -n "$IN_NS" ] || info "no network namespace ($(head -n 1 "$TMP/netns.err" 2>/dev/null)): part 2 left out"

# 24 MiB of incompressible files and a few small ones, so the link (not the open) dominates
python3 - "$W/src" <<'PY' || fail "cannot make the source tree"
import os, random, sys
r = random.Random(91)
for d in range(4):
    p = os.path.join(sys.argv[1], "d%d" % d)
    os.makedirs(p)
    for f in range(6):
        with open(os.path.join(p, "big%d" % f), "wb") as o:
            o.write(r.randbytes((1 << 20) + r.randrange(1 << 20)))
    for f in range(20):
        with open(os.path.join(p, "small%02d" % f), "w") as o:
            o.write("file %d of %d\n" % (f, d) * r.randrange(1, 400))
PY
mkdir -p "$W/www"
sqk_build -q "$W/src" "$W/www/img.sqsh"
SIZE=$(stat -c %s "$W/www/img.sqsh")
NETNS_EXEC=$IN_NS http_serve "$W/www"
ORIGIN_PORT=$HTTP_PORT
ORIGIN_LOG=$HTTP_LOG

# The caching proxy: its own nginx (http_serve writes only origin configurations).
P=$(mktemp -d "$TMP/cachenginx.XXXXXX")
mkdir -p "$P/cache" "$P/tmp"
NGINX=/usr/sbin/nginx
[ -x "$NGINX" ] || NGINX=$(command -v nginx)
for try in 1 2 3 4 5; do
	PPORT=$(NETNS_EXEC=$IN_NS free_port) || fail "cannot pick a free port"
	cat >"$P/nginx.conf" <<CONF
user root;
worker_processes 2;
error_log $P/error.log info;
pid $P/nginx.pid;
events { worker_connections 1024; }
http {
	log_format sqk '\$request_method \$request_uri range=\$http_range \$status \$body_bytes_sent \$upstream_cache_status \$request_time';
	access_log $P/access.log sqk;
	client_body_temp_path $P/tmp;
	proxy_temp_path $P/tmp;
	proxy_cache_path $P/cache levels=1:2 keys_zone=img:10m max_size=2g inactive=1h use_temp_path=off;
	upstream origin {
		server 127.0.0.1:$ORIGIN_PORT;
		keepalive 32;
	}
	server {
		listen 127.0.0.1:$PPORT;
		location / {
			slice 1m;
			proxy_cache img;
			proxy_cache_key \$uri\$is_args\$args\$slice_range;
			proxy_set_header Range \$slice_range;
			proxy_cache_valid 200 206 1h;
			proxy_cache_lock on;
			proxy_cache_lock_timeout 60s;
			proxy_cache_lock_age 60s;
			proxy_buffer_size 256k;
			proxy_buffers 8 256k;
			proxy_busy_buffers_size 512k;
			proxy_http_version 1.1;
			proxy_set_header Connection "";
			proxy_pass http://origin;
		}
	}
}
CONF
	$IN_NS "$NGINX" -e "$P/error.log" -p "$P" -c "$P/nginx.conf" -g 'daemon off;' >>"$P/out" 2>&1 &
	PPID_NGINX=$!
	ok=0
	for i in $(seq 100); do
		$IN_NS curl -s -o /dev/null --max-time 2 "http://127.0.0.1:$PPORT/" && { ok=1; break; }
		kill -0 "$PPID_NGINX" 2>/dev/null || break
		sleep 0.05
	done
	[ $ok = 1 ] && break
	kill "$PPID_NGINX" 2>/dev/null
	wait "$PPID_NGINX" 2>/dev/null
done
[ $ok = 1 ] || { cat "$P/out" "$P/error.log" >&2; fail "the caching nginx did not start"; }
at_exit "http_stop $PPID_NGINX"
PROXY=http://127.0.0.1:$PPORT
info "image $SIZE bytes; origin $HTTP_URL, caching proxy $PROXY"

# ---- 1. 8 clients at once --------------------------------------------------------------------
mark=$(http_log_mark)
pids=()
for c in 1 2 3 4 5 6 7 8; do
	timeout 300 $IN_NS "$SQK" extract --cache-dir "$W/cache$c" "$PROXY/img.sqsh?set=1" "$W/out$c" \
		>"$W/client$c.log" 2>&1 &
	pids+=($!)
done
for c in 1 2 3 4 5 6 7 8; do
	wait "${pids[$((c - 1))]}" || { cat "$W/client$c.log" >&2; fail "client $c failed"; }
done
for c in 1 2 3 4 5 6 7 8; do
	python3 "$IT_DIR/treecmp.py" "$W/src" "$W/out$c" --ignore-root-attrs --no-xattrs >"$W/cmp$c" 2>&1 ||
		{ head -20 "$W/cmp$c" >&2; fail "client $c extracted a different tree"; }
done
read -r nreq nbytes <<<"$(http_log_bytes "$mark")"
ratio=$(python3 -c "print(round($nbytes / $SIZE, 2))")
info "8 clients through the proxy: the origin served $nreq requests, $nbytes bytes (${ratio}x the image)"
[ "$nbytes" -le $((SIZE * 12 / 10)) ] ||
	{ http_log_ranges "$mark" | sort | uniq -c | sort -rn | head -20 >&2
	  fail "the origin sent ${ratio}x the image for 8 clients behind the proxy (at most 1.2x)"; }
[ "$(awk '$2 ~ /img.sqsh/ && $4 != 206' "$P/access.log" | wc -l)" = 0 ] ||
	fail "the proxy answered with errors: $(awk '$2 ~ /img.sqsh/ && $4 != 206' "$P/access.log" | head -3)"

python3 - "$P/access.log" <<'PY' || fail "requests through the proxy cross its 1 MiB slices"
import re, sys
bad = n = 0
for line in open(sys.argv[1]):
    m = re.search(r"img\.sqsh\S* range=bytes=([0-9]*)-([0-9]*) ", line)
    if not m:
        continue
    n += 1
    if m.group(1) == "":  # a suffix range (the open's tail): the last slice or two
        continue
    a, b = int(m.group(1)), int(m.group(2))
    if a >> 20 != b >> 20:
        bad += 1
        if bad <= 5:
            sys.stderr.write("crosses a slice: " + line)
sys.stderr.write("%d requests through the proxy, %d across slices\n" % (n, bad))
sys.exit(1 if bad or n == 0 else 0)
PY

# ---- 2. one client: through the cold proxy against direct ------------------------------------
[ -n "$IN_NS" ] || exit 0
NS_DELAY_MATCH="-p tcp -m multiport --ports $ORIGIN_PORT" ns_add_delay "$NS" 10 ||
	{ info "cannot delay packets ($NS_DELAY_WHY): part 2 left out"; exit 0; }
info "delay: $NS_DELAY_DESC"
# tar_secs URL OUT: the seconds one `sqk tar` of URL into OUT takes (no disk cache).
tar_secs() {
	local t0
	t0=$(date +%s%N)
	timeout 300 $IN_NS "$SQK" tar --cache-size 0 -o "$2" --force "$1" >"$W/one.log" 2>&1 ||
		{ cat "$W/one.log" >&2; fail "sqk tar $1 failed"; }
	python3 -c "print(($(date +%s%N) - $t0) / 1e9)"
}
"$SQK" tar -o "$W/want.tar" "$W/www/img.sqsh" || fail "sqk tar of the local image failed"
direct=() proxied=()
for run in 1 2 3 4 5; do
	direct+=("$(tar_secs "$HTTP_URL/img.sqsh" "$W/d.tar")")
	proxied+=("$(tar_secs "$PROXY/img.sqsh?run=$run" "$W/p.tar")")
	cmp -s "$W/p.tar" "$W/want.tar" || fail "run $run through the proxy: wrong bytes"
done
read -r dmed pmed ratio <<<"$(python3 -c '
import statistics, sys
d = statistics.median(map(float, sys.argv[1].split()))
p = statistics.median(map(float, sys.argv[2].split()))
print("%.3f %.3f %.2f" % (d, p, p / d))' "${direct[*]}" "${proxied[*]}")"
info "one client: direct ${direct[*]} s, through the cold proxy ${proxied[*]} s: medians $dmed / $pmed s = ${ratio}x"
python3 -c "import sys; sys.exit(0 if $ratio <= 1.3 else 1)" ||
	fail "one client through the cold proxy took ${ratio}x its time direct (at most 1.3x)"
