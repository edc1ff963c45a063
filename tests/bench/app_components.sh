#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# The components of bench_app.sh's app-start cases, one cold run each, with a request log that
# shows the serial fetch chain (issue 16's analysis; not part of make bench):
#   curl download of the image, then the start on a kernel loop mount of the download
#   sqkfuse URL + the start (stats=), per image
# nginx logs "msec request_time connection status body_bytes_sent range" per request, one log
# per case in OUT/CASE.log (msec is the end of the response; its start is msec - request_time).
# Usage: app_components.sh IMAGEDIR OUT [IMAGE...]   (IMAGEDIR holds IMAGE.sqsh, default
#   "plain ordered"; it should be a tmpfs). Environment: SQK (build/bin/sqk), BENCH_DELAY_MS
#   (10, one way), SQKFUSE_OPTS (more -o options), APP (the tree of bench_app.sh: /var/tmp/sqk-bench-app/app), RATE=100mbit for
#   the tbf limit of bench_app.sh's slow cases. Reference output: APP/../app.out.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
SELF=$HERE/$(basename "$0")
RL_NAME=app_components
# shellcheck source=remote_lib.sh
. "$HERE/remote_lib.sh"

start_app() { # MNT HOME TIMEFILE: the start, its wall/user/sys seconds in TIMEFILE
	/usr/bin/time -f "%e %U %S" -o "$3" env -i PATH=/usr/bin:/bin HOME="$2" MPLCONFIGDIR="$2" PYTHONHOME="$1" LD_LIBRARY_PATH="$1/lib" \
		PYTHONDONTWRITEBYTECODE=1 PYTZ_TZDATADIR="$1/share/zoneinfo" PYTHONTZPATH="$1/share/zoneinfo" \
		LC_ALL=C.UTF-8 timeout -k 10 600 "$1/bin/python3" -s "$HERE/app_start.py"
}

settle() { # the log written out (nginx logs a request when its response is complete)
	local n0=-1 n i
	for ((i = 0; i < 20; i++)); do n=$(wc -l <"$ALOG"); [ "$n" = "$n0" ] && break; n0=$n; sleep 0.1; done
}

inner() {
	. "$S/vars"
	local m=$S/m img t0 t1 t2 pid h=$S/home mark
	mkdir -p "$m"
	[ "${RATE:-}" = 100mbit ] && { rate_limit on || die "tbf failed"; }
	for img in $IMAGES; do
		# curl download + loop mount + start
		rm -f "$S/dl.sqsh"; drop; mark=$(logmark "$ALOG")
		t0=$(now)
		curl -sS --fail -o "$S/dl.sqsh" "$BASE/$img.sqsh" || die "curl failed"
		mount -t squashfs -o loop,ro "$S/dl.sqsh" "$m" || die "loop mount failed"
		t1=$(now)
		rm -rf "$h"; mkdir -p "$h"
		start_app "$m" "$h" "$OUT/$img.loop.time" >"$OUT/$img.loop.out" 2>/dev/null
		t2=$(now)
		umount "$m"; rm -f "$S/dl.sqsh"
		cmp -s "$OUT/$img.loop.out" "$APP_OUT" && ok=ok || ok=WRONG
		echo "$img loop download $(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.3f", b-a}') start $(awk -v a="$t1" -v b="$t2" 'BEGIN{printf "%.3f", b-a}') total $(awk -v a="$t0" -v b="$t2" 'BEGIN{printf "%.3f", b-a}') time(e,u,s) $(cat "$OUT/$img.loop.time") $ok load $(cut -d' ' -f1 /proc/loadavg)" | tee -a "$OUT/summary"
		settle; tail -n +"$((mark + 1))" "$ALOG" >"$OUT/$img.loop.log"
		# sqkfuse URL + start
		rm -rf "$S/cache"; mkdir -p "$S/cache"; drop; mark=$(logmark "$ALOG")
		t0=$(now)
		XDG_CACHE_HOME=$S/cache "$SQKFUSE" "$BASE/$img.sqsh" "$m" -f -o "cache_dir=$S/cache,stats=$OUT/$img.stats.json${SQKFUSE_OPTS:+,$SQKFUSE_OPTS}" 2>"$OUT/$img.sqkfuse.err" &
		pid=$!
		MOUNT_TMO=60; wait_mount "$m" "$pid" || die "sqkfuse did not mount"
		t1=$(now)
		rm -rf "$h"; mkdir -p "$h"
		start_app "$m" "$h" "$OUT/$img.fuse.time" >"$OUT/$img.fuse.out" 2>/dev/null
		t2=$(now)
		unmount_wait "$m" "$pid"
		cmp -s "$OUT/$img.fuse.out" "$APP_OUT" && ok=ok || ok=WRONG
		settle; tail -n +"$((mark + 1))" "$ALOG" >"$OUT/$img.fuse.log"
		read -r nreq nbytes nerr < <(awk '{ n++; b += $5; if ($4 !~ /^2/) e++ } END { printf "%d %d %d\n", n, b, e }' "$OUT/$img.fuse.log")
		echo "$img sqkfuse mount $(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.3f", b-a}') start $(awk -v a="$t1" -v b="$t2" 'BEGIN{printf "%.3f", b-a}') total $(awk -v a="$t0" -v b="$t2" 'BEGIN{printf "%.3f", b-a}') time(e,u,s) $(cat "$OUT/$img.fuse.time") $ok requests $nreq bytes $nbytes non2xx $nerr load $(cut -d' ' -f1 /proc/loadavg)" | tee -a "$OUT/summary"
	done
	rate_limit off
	exit 0
}

if [ "${1:-}" = --inner ]; then
	S=$2
	inner
fi

WWW=$(cd "$1" && pwd) || die "no image dir"
mkdir -p "$2" && OUT=$(cd "$2" && pwd) || die "no output dir"
shift 2
IMAGES=${*:-plain ordered}
SQK=${SQK:-$HERE/../../build/bin/sqk}
SQKFUSE=$(cd "$(dirname "$SQK")" && pwd)/sqkfuse
APP=${APP:-/var/tmp/sqk-bench-app/app}
APP_OUT=$(dirname "$APP")/app.out
[ -s "$APP_OUT" ] || die "no reference output $APP_OUT (run bench_app.sh once)"
S=$(mktemp -d /var/tmp/app-components.XXXXXX)
NS=sqkac$$ NS_MADE=0 PIDS=() DELAY_PID=""
trap 'net_down; rm -rf "$S"' EXIT
trap 'exit 130' INT TERM
net_up "${BENCH_DELAY_MS:-10}" "$OUT"
# nginx as remote_lib.sh's, with the timing of each request in its log
nginx_up "$S/nginx" "$WWW" 8080
sed -i "s/log_format bench .*/log_format bench '\$msec \$request_time \$connection \$status \$body_bytes_sent \"\$http_range\"';/" "$S/nginx/nginx.conf"
kill -HUP "$NGINX_PID"; sleep 0.5
ALOG=$S/nginx/access.log
: >"$ALOG"
BASE=http://127.0.0.1:8080
log "RTT $(rtt_ms "$BASE/plain.sqsh") ms ($DELAY_HOW)"
: >"$ALOG"
SQKFUSE_OPTS=${SQKFUSE_OPTS:-}
declare -p SQKFUSE BASE ALOG OUT IMAGES APP_OUT DELAY_HOW SQKFUSE_OPTS >"$S/vars"
[ -n "${RATE:-}" ] && echo "RATE=$RATE" >>"$S/vars"
ip netns exec "$NS" bash "$SELF" --inner "$S"
