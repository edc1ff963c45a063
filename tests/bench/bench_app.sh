#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# squashkit remote application-start benchmark (issues 16 and 32): two applications in images
# served by nginx over loopback with 20 ms RTT (and at 100 Mbit/s), started from the mount. Every
# run is cold: a fresh empty cache directory, page cache dropped (drop_caches).
# The applications (BENCH_APPS, default "py cc"):
#   py  a Python start (tests/bench/app_start.py): the image's own python3 with PYTHONHOME=MNT
#       and LD_LIBRARY_PATH=MNT/lib: numpy, scipy, pandas, scikit-learn, sympy, babel, pytz,
#       networkx and matplotlib imported, a figure drawn with the font list built from the
#       image's fonts, babel locales, time zones, a data set read. It checks that every module
#       and shared object it loaded came from the image.
#   cc  a C and C++ toolchain start (tests/bench/app_cc.sh): the image is a sysroot of Debian's
#       gcc 12 and binutils; gcc-12 and g++-12 from MNT (--sysroot=MNT) compile app_cc.c (C17,
#       POSIX and Linux headers) and app_cc.cpp (the C++ standard library's headers), link them
#       and run the program. strace checks that every file the tools opened came from the image
#       (on the local tree every run, and on the local mount the trace is recorded on).
# Each start's output is checked against a run on the local tree.
# Cases (BENCH_CASES, default "app ordered lazy readers seq slow"), for each application:
#   app      plain image: sqkfuse URL + the start, against curl download + kernel loop mount +
#            the start                                               goal <= 1.00x
#   ordered  the access-ordered image (the start's trace recorded on a local mount, sqkfuse
#            IMAGE MNT -o trace=FILE; sqk mkimage --order FILE): sqkfuse URL + the start
#            against its floor, the larger of (a) the start on a local sqkfuse mount of the
#            same image file (tmpfs, no network) and (b) the link's time for the hint's bytes
#            (curl of one range of that many bytes of the image)    goal <= 1.15x the floor
#   lazy     the plain image from a purely lazy mount (-o nobackground where sqkfuse has it,
#            else today's mount, lazy by itself): time and bytes served
#                                                                    goal: bytes <= LAZY_PCT_app %
#   slow     app and ordered again on a 100 Mbit/s link (tbf rate 100mbit burst 32kbit latency
#            400ms on lo, on top of the delay): plain <= 1.00x curl+loop; ordered <= 1.15x its
#            floor (b measured on this link) and <= 0.50x curl+loop
# and on a data image:
#   readers  8 cat of 8 different cold 16 MiB files at once through one sqkfuse URL mount,
#            against one cat of one of them                          goal <= 1.30x
#   seq      a sequential cat of a 1 GiB file of random bytes through sqkfuse URL: its
#            throughput against curl's of the image on the same link goal >= 0.90x
# For reference, the starts are also timed on a kernel loop mount of the image file on the tmpfs.
# Times of app, ordered, lazy, slow include setting up the stack (curl's download and the loop
# mount; the sqkfuse mount); readers and seq time the reads on a mount made just before. Bytes
# served are the response bodies nginx sent during the case ($body_bytes_sent from its log:
# opening, digests, background fetch and retries included); % of the image is of its file size.
#
# The Python tree (>= 500 MB): Debian's python3.11 with the packages of APP_PKGS (installed
# with apt-get when missing), copied into BENCH_TMPDIR/app: bin/python3, lib/python3.11,
# lib/python3/dist-packages (symbolic links out of the tree followed, matplotlib's mpl-data from
# /usr/share copied next to the package), share/zoneinfo (PYTZ_TZDATADIR, PYTHONTZPATH), and in
# lib/ the shared objects (ldd) of the interpreter and of every extension module, glibc excepted.
# The toolchain tree: BENCH_TMPDIR/cc, see app_cc.sh (the packages of CC_PKGS).
# The trees and the images are kept in BENCH_TMPDIR for the next run (and the logs of the last
# run in BENCH_TMPDIR/last-logs); the images are made again when sqk changes (its sha256; the
# ordered ones when sqkfuse does too), the trees when the package versions do.
#
# Network: as tests/bench/bench_remote.sh (tests/bench/remote_lib.sh): a network namespace,
# 10 ms each way on lo (netem, else NFQUEUE and tests/netdelay.py), nginx serving the images
# from a tmpfs; everything that reads runs in one `ip netns exec` shell with its own mounts.
# Environment: SQK (default build/bin/sqk), BENCH_ROUNDS (3), BENCH_TMPDIR
#   (/var/tmp/sqk-bench-app), BENCH_DELAY_MS (10, one way), BENCH_TIMEOUT (600 s a workload),
#   BENCH_CASES (a subset of the cases above), BENCH_APPS (a subset of "py cc").
# Exit status: 0 when every run succeeded (missed goals and options sqk does not have yet are
# reported, not fatal), 1 when a run failed, 2 on a setup error.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
SELF=$HERE/$(basename "$0")
START_PY=$HERE/app_start.py
RL_NAME=bench_app
# shellcheck source=remote_lib.sh
. "$HERE/remote_lib.sh"
# shellcheck source=app_cc.sh
. "$HERE/app_cc.sh"

APP_PKGS="python3.11 python3-numpy python3-scipy python3-pandas python3-matplotlib python3-sklearn
	python3-sympy python3-babel python3-tz python3-networkx python3-pil"
TREE_VERSION=1          # of the way the tree is assembled: a change makes it again
CC_TREE_VERSION=1       # of app_cc.sh's tree
NREADERS=8 READER_MIB=16 BIG_MIB=1024
# the lazy case's goal: bytes served at most this % of the plain image (the figures before the
# background fetch, at 92bab67: py 48.7-49.0%, cc 51.3%, with a little room)
# shellcheck disable=SC2034 # read as ${!l}
LAZY_PCT_py=50 LAZY_PCT_cc=52.5

# the environment of the start from tree or mount $1 (a fresh matplotlib config dir in $2)
start_app() {
	env -i PATH=/usr/bin:/bin HOME="$2" MPLCONFIGDIR="$2" PYTHONHOME="$1" LD_LIBRARY_PATH="$1/lib" \
		PYTHONDONTWRITEBYTECODE=1 PYTZ_TZDATADIR="$1/share/zoneinfo" PYTHONTZPATH="$1/share/zoneinfo" \
		LC_ALL=C.UTF-8 timeout -k 10 "$TMO" "$1/bin/python3" -s "$START_PY"
}

# start_of APP MNT DIR: the start of application APP from MNT (a fresh empty folder DIR)
start_of() {
	case $1 in
	py) start_app "$2" "$3";;
	cc) cc_start "$2" "$3";;
	esac
}
# img_of APP KIND: the image file name of APP's KIND (plain, ordered)
img_of() { case $1 in py) echo "$2.sqsh";; *) echo "$1-$2.sqsh";; esac; }

# ============================================================ inner part ===
inner() {
	# shellcheck disable=SC1091
	. "$S/vars"
	M=$S/m; LOGS=$S/logs; ALOG=$S/nginx/access.log
	mkdir -p "$M/kernel" "$M/sqkfuse" "$S/dl" "$S/cache" "$S/res" "$S/run"
	DAEMONS=()
	inner_cleanup() {
		for m in "$M"/*; do is_mounted "$m" && { fusermount3 -u "$m" 2>/dev/null || umount "$m" 2>/dev/null || umount -l "$m"; }; done
		for p in "${DAEMONS[@]}"; do alive "$p" && kill -TERM "$p" 2>/dev/null; done
		sleep 0.3
		for p in "${DAEMONS[@]}"; do alive "$p" && kill -KILL "$p" 2>/dev/null; done
		rate_limit off
	}
	trap inner_cleanup EXIT
	trap 'exit 130' INT; trap 'exit 143' TERM
	FAILED=0

	# ---- workloads on a mount: WORK MNT ----
	w_start() { # the start of $W_APP; its output checked against the local run
		local h=$S/run/home rc=0 ref=$S/ref/$W_APP.out
		rm -rf "$h"; mkdir -p "$h"
		start_of "$W_APP" "$1" "$h" >"$S/run/start.out" 2>"$S/run/start.err" || rc=1
		[ "$rc" = 0 ] && { cmp -s "$S/run/start.out" "$ref" || rc=2; }
		case $rc in
		1) log "  the $W_APP start failed: $(tail -n 2 "$S/run/start.err" | tr '\n' ' ')";;
		2) log "  the $W_APP start printed other results than on the local tree:"; diff "$ref" "$S/run/start.out" | head -n 5;;
		esac
		return $rc
	}
	w_one() { timeout -k 10 "$TMO" cat "$1/data/r0" >/dev/null; }
	w_many() {
		local i rc=0 pids=()
		for ((i = 0; i < NREADERS; i++)); do timeout -k 10 "$TMO" cat "$1/data/r$i" >/dev/null & pids+=($!); done
		for p in "${pids[@]}"; do wait "$p" || rc=1; done
		return $rc
	}
	w_big() { timeout -k 10 "$TMO" cat "$1/data/big" >/dev/null; }
	# correctness of the reads, untimed, after the timed part (round 1 only for the big file)
	c_one() { [ "$(sha256sum <"$1/data/r0" | cut -d' ' -f1)" = "${DATA_SHA[0]}" ]; }
	c_many() { local i; for ((i = 0; i < NREADERS; i++)); do [ "$(sha256sum <"$1/data/r$i" | cut -d' ' -f1)" = "${DATA_SHA[i]}" ] || return 1; done; }
	c_big() { [ "$R" != 1 ] || [ "$(sha256sum <"$1/data/big" | cut -d' ' -f1)" = "$BIG_SHA" ]; }

	# ---- stacks: run_STACK IMAGE WORK -> R_SECS R_REQ R_BYTES R_ERR (nginx) R_STATS ----
	stack_fail() { R_SECS=FAIL; log "  $*"; }
	run_loop() { # curl download + loop mount + WORK
		local img=$1 w=$2 m=$M/kernel dl=$S/dl/image.sqsh mark t0 dls rc=0
		R_STATS=""; rm -f "$dl"; drop; mark=$(logmark "$ALOG")
		t0=$(now)
		if ! timeout -k 5 "$TMO" curl -sS --fail -o "$dl" "$BASE/$img" 2>>"$LOGS/curl.err"; then
			stack_fail "curl download failed: $(tail -n 1 "$LOGS/curl.err")"; return 1
		fi
		if ! mount -t squashfs -o loop,ro "$dl" "$m" 2>>"$LOGS/mount.err"; then
			stack_fail "loop mount failed: $(tail -n 1 "$LOGS/mount.err")"; rm -f "$dl"; return 1
		fi
		dls=$(since "$t0")
		"w_$w" "$m" || rc=1
		R_SECS=$(since "$t0")
		[ "$rc" = 1 ] && stack_fail "curl+loop: $w failed"
		R_STATS=$dls
		umount "$m" 2>/dev/null || umount -l "$m"
		rm -f "$dl"
		read -r R_REQ R_BYTES R_ERR < <(served "$ALOG" "$mark")
		return $rc
	}
	# run_sqkfuse IMAGE WORK [t]: sqkfuse URL + WORK; with t, the time of WORK alone (mounted first)
	run_sqkfuse() {
		local img=$1 w=$2 m=$M/sqkfuse d=$S/cache/sqkfuse st=$S/sqkfuse-stats.json mark t0 pid rc=0
		R_STATS=""; rm -rf "$d" "$st"; mkdir -p "$d"; drop; mark=$(logmark "$ALOG")
		t0=$(now)
		# (its stderr of this run in sqkfuse.run.err, appended to sqkfuse.err after)
		XDG_CACHE_HOME=$d "$SQKFUSE" "$BASE/$img" "$m" -f -o "cache_dir=$d,stats=$st${XOPT:+,$XOPT}" 2>"$LOGS/sqkfuse.run.err" &
		pid=$!; DAEMONS+=("$pid")
		if ! wait_mount "$m" "$pid"; then
			stack_fail "sqkfuse did not mount $BASE/$img (within ${MOUNT_TMO}s): $(tail -n 1 "$LOGS/sqkfuse.run.err")"
			unmount_wait "$m" "$pid"; cat "$LOGS/sqkfuse.run.err" >>"$LOGS/sqkfuse.err"; return 1
		fi
		[ "${3:-}" = t ] && t0=$(now)
		"w_$w" "$m" || rc=1
		R_SECS=$(since "$t0")
		[ "$rc" = 0 ] && [ "$w" != start ] && { "c_$w" "$m" || { rc=2; stack_fail "sqkfuse: $w read wrong data"; }; }
		[ "$rc" = 1 ] && stack_fail "sqkfuse: $w failed: $(tail -n 1 "$LOGS/sqkfuse.run.err")"
		unmount_wait "$m" "$pid"
		cat "$LOGS/sqkfuse.run.err" >>"$LOGS/sqkfuse.err"
		read -r R_REQ R_BYTES R_ERR < <(served "$ALOG" "$mark")
		R_STATS=$(python3 -c '
import json, sys
try: d = json.load(open(sys.argv[1]))
except Exception: d = {}
print(" ".join(str(d.get(k, "n/a")) for k in ("http_requests", "http_bytes", "http_bytes_unused", "http_retries",
	"http_bytes_background")))' "$st")
		rm -rf "$d"
		return $rc
	}
	# run_local STACK IMAGE WORK: the floor without the network, image file on the tmpfs, page
	# cache dropped: a kernel loop mount (STACK loop) or sqkfuse (STACK fuse) of it + WORK
	run_local() {
		local how=$1 img=$WWW/$2 w=$3 m=$M/kernel t0 pid="" rc=0
		R_STATS=""; drop
		t0=$(now)
		if [ "$how" = loop ]; then
			mount -t squashfs -o loop,ro "$img" "$m" 2>>"$LOGS/mount.err" || { stack_fail "local loop mount failed"; return 1; }
		else
			m=$M/sqkfuse
			"$SQKFUSE" "$img" "$m" -f 2>>"$LOGS/sqkfuse-local.err" &
			pid=$!; DAEMONS+=("$pid")
			wait_mount "$m" "$pid" || { stack_fail "local sqkfuse mount failed"; unmount_wait "$m" "$pid"; return 1; }
		fi
		"w_$w" "$m" || rc=1
		R_SECS=$(since "$t0")
		[ "$rc" = 1 ] && stack_fail "local $how: $w failed"
		unmount_wait "$m" $pid
		R_REQ=0 R_BYTES=0 R_ERR=0
		return $rc
	}
	run_curl() { # the image to /dev/null: the link's throughput
		local img=$1 mark t0
		R_STATS=""; mark=$(logmark "$ALOG")
		t0=$(now)
		if ! timeout -k 5 "$TMO" curl -sS --fail -o /dev/null "$BASE/$img" 2>>"$LOGS/curl.err"; then
			stack_fail "curl failed: $(tail -n 1 "$LOGS/curl.err")"; return 1
		fi
		R_SECS=$(since "$t0")
		read -r R_REQ R_BYTES R_ERR < <(served "$ALOG" "$mark")
	}
	run_hint() { # IMAGE BYTES: one range of BYTES of the image to /dev/null: the link's time for
		local img=$1 n=$2 mark t0 # the hint's bytes
		R_STATS=""; mark=$(logmark "$ALOG")
		t0=$(now)
		if ! timeout -k 5 "$TMO" curl -sS --fail -r "0-$((n - 1))" -o /dev/null "$BASE/$img" 2>>"$LOGS/curl.err"; then
			stack_fail "curl of the hint's bytes failed: $(tail -n 1 "$LOGS/curl.err")"; return 1
		fi
		R_SECS=$(since "$t0")
		read -r R_REQ R_BYTES R_ERR < <(served "$ALOG" "$mark")
	}
	# one CASE STACK ARGS...: run, append "secs requests bytes non2xx [sqkfuse stats | curl's
	# download secs]" to res/CASE.STACK
	one() {
		local c=$1 s=$2
		shift 2
		R_SECS=FAIL R_REQ=n/a R_BYTES=n/a R_ERR=n/a R_STATS=""
		"run_$s" "$@" || FAILED=1
		echo "$R_SECS ${R_REQ:-n/a} ${R_BYTES:-n/a} ${R_ERR:-n/a} $R_STATS" >>"$S/res/$c.$s"
		printf -v LINE '%s %s %ss (%s req, %s)' "$LINE" "$s" "$R_SECS" "${R_REQ:-n/a}" "$(mib "${R_BYTES:-n/a}")"
	}
	want() { case " $CASES " in *" $1 "*) return 0;; esac; return 1; }

	# ---- rounds: 20 ms RTT, then the same app starts at 100 Mbit/s ----
	# app_round PREFIX APP: the plain and ordered starts of APP (results in res/PREFIXAPP_KIND.*)
	app_round() {
		local p=$1 app=$2 img c f v n ord s
		W_APP=$app
		for img in plain ordered; do
			if [ -z "$p" ]; then want "$([ $img = plain ] && echo app || echo ordered)" || continue; fi
			v=HAVE_ORDER_$app
			[ "$img" = plain ] || [ "${!v}" = 1 ] || continue
			c=$p${app}_$img f=$(img_of "$app" "$img")
			LINE="round $R/$ROUNDS ${p}$app $img start:"
			if [ $((R % 2)) = 1 ]; then ord="sqkfuse loop"; else ord="loop sqkfuse"; fi
			for s in $ord; do one "$c" "$s" "$f" start; done
			if [ -z "$p" ]; then
				for s in loop fuse; do
					R_SECS=FAIL; run_local "$s" "$f" start || FAILED=1
					echo "$R_SECS" >>"$S/res/local_${app}_$img.$s"
					LINE="$LINE local $s ${R_SECS}s"
				done
			fi
			if [ "$img" = ordered ]; then
				n=HINT_$app
				[ "${!n}" -gt 0 ] && one "$c" hint "$f" "${!n}"
			fi
			log "$LINE"
		done
		if [ -z "$p" ] && want lazy; then
			LINE="round $R/$ROUNDS $app lazy start ($([ -n "$XOPT_LAZY" ] && echo "-o $XOPT_LAZY" || echo "the plain mount of today, lazy")):"
			XOPT=$XOPT_LAZY one "${app}_lazy" sqkfuse "$(img_of "$app" plain)" start
			log "$LINE"
		fi
	}
	for phase in fast slow; do
		if [ "$phase" = slow ]; then
			want slow || break
			rate_limit on || { log "FAILED: cannot add the tbf rate limit on lo"; FAILED=1; break; }
			log "lo rate limited: $(tc qdisc show dev lo | tr '\n' ';')"
		fi
		for R in $(seq "$ROUNDS"); do
			if [ "$phase" = fast ]; then p=""; else p=slow_; fi
			for app in $APPS; do app_round "$p" "$app"; done
			[ "$phase" = fast ] || continue
			if want readers; then
				LINE="round $R/$ROUNDS readers:"
				one readers1 sqkfuse data.sqsh one t
				one readers8 sqkfuse data.sqsh many t
				log "$LINE"
			fi
			if want seq; then
				LINE="round $R/$ROUNDS 1 GiB read:"
				one seq curl data.sqsh
				one seq sqkfuse data.sqsh big t
				log "$LINE"
			fi
		done
	done
	rate_limit off
	[ "$FAILED" = 0 ] || exit 1
	exit 0
}

if [ "${1:-}" = --inner ]; then
	S=$2
	. "$S/vars"
	inner
	exit 2
fi

# ============================================================ outer part ===
START=$(now)
SQK=${SQK:-$HERE/../../build/bin/sqk}
SQK=$(cd "$(dirname "$SQK")" && pwd)/$(basename "$SQK")
SQKFUSE=$(dirname "$SQK")/sqkfuse
ROUNDS=${BENCH_ROUNDS:-3}
DELAY_MS=${BENCH_DELAY_MS:-10}
TMO=${BENCH_TIMEOUT:-600}
BT=${BENCH_TMPDIR:-/var/tmp/sqk-bench-app}
CASES=${BENCH_CASES:-app ordered lazy readers seq slow}
APPS=${BENCH_APPS:-py cc}
MOUNT_TMO=60
PORT=8080
case $ROUNDS in ''|*[!0-9]*|0) die "BENCH_ROUNDS must be a positive integer (got '$ROUNDS')";; esac
case $DELAY_MS in ''|*[!0-9]*) die "BENCH_DELAY_MS must be an integer (got '$DELAY_MS')";; esac
for c in $CASES; do case $c in app|ordered|lazy|readers|seq|slow) ;; *) die "unknown case '$c' in BENCH_CASES";; esac; done
for a in $APPS; do case $a in py|cc) ;; *) die "unknown application '$a' in BENCH_APPS (py, cc)";; esac; done
want() { case " $CASES " in *" $1 "*) return 0;; esac; return 1; }
[ "$(id -u)" = 0 ] || die "needs root (packages, network namespace, mounts, drop_caches)"
[ -x "$SQK" ] && [ -x "$SQKFUSE" ] || die "build first (make)"
need nginx nginx-light; need fusermount3 fuse3; need ip iproute2; need tc iproute2; need curl curl
need python3 python3; case " $APPS " in *" cc "*) need strace strace;; esac
for c in nginx fusermount3 ip tc curl python3 timeout sha256sum; do
	command -v "$c" >/dev/null 2>&1 || die "$c missing"
done

# ---- the application trees ----
mkdir -p "$BT" || die "cannot make $BT"
py_tree() {
	local p missing="" H
	for p in $APP_PKGS; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing="$missing $p"
	done
	if [ -n "$missing" ]; then
		log "installing$missing"
		# shellcheck disable=SC2086
		apt_install $missing || die "apt-get install$missing failed"
	fi
	A=$BT/app
	STAMP=$(echo "tree $TREE_VERSION"; dpkg-query -W $APP_PKGS 2>/dev/null; sha256sum "$START_PY" | cut -d' ' -f1)
	# make_tree DIR: the self-contained Python tree (see the head of this file)
	make_tree() {
		local d=$1 lib
		rm -rf "$d"; mkdir -p "$d/bin" "$d/lib/python3" "$d/share"
		cp -p /usr/bin/python3.11 "$d/bin/python3.11" && ln -s python3.11 "$d/bin/python3" || return 1
		# -L: follow the links out of the tree (babel's CLDR data, sitecustomize.py); a dangling one
		# (matplotlib's jquery for the web backend) is reported by cp and left out
		cp -rL --preserve=mode,timestamps /usr/lib/python3.11 "$d/lib/" 2>>"$BT/tree.log"
		cp -rL --preserve=mode,timestamps /usr/lib/python3/dist-packages "$d/lib/python3/" 2>>"$BT/tree.log"
		[ -d "$d/lib/python3/dist-packages/matplotlib/mpl-data" ] ||
			cp -rL --preserve=mode,timestamps /usr/share/matplotlib/mpl-data "$d/lib/python3/dist-packages/matplotlib/" 2>>"$BT/tree.log"
		cp -rL --preserve=mode,timestamps /usr/share/zoneinfo "$d/share/" 2>>"$BT/tree.log"
		[ -x "$d/bin/python3.11" ] && [ -d "$d/lib/python3/dist-packages/numpy" ] && [ -d "$d/share/zoneinfo" ] || return 1
		# the shared objects of the interpreter and the extension modules, glibc excepted
		find "$d/bin/python3.11" "$d/lib" -type f \( -name '*.so' -o -name '*.so.*' -o -name python3.11 \) -print0 |
			xargs -0 ldd 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// { print $3 }' | sort -u |
			grep -vE '/(ld-linux[^/]*|libc|libm|libpthread|libdl|librt|libutil|libresolv|libmvec|libanl|libcrypt)\.so[^/]*$' |
			while read -r lib; do
				case $lib in "$d"/*) continue;; esac
				[ -e "$d/lib/$(basename "$lib")" ] || cp -L "$lib" "$d/lib/$(basename "$lib")"
			done
		compgen -G "$d/lib/*.so*" >/dev/null
	}
	if [ "$(cat "$BT/app.stamp" 2>/dev/null)" != "$STAMP" ] || [ ! -x "$A/bin/python3" ]; then
		log "making the application tree in $A"
		: >"$BT/tree.log"
		rm -f "$BT/app.stamp" "$BT/images.key"
		make_tree "$A.new" || die "making the tree failed: $(tail -n 2 "$BT/tree.log")"
		rm -rf "$A" && mv "$A.new" "$A" || die "cannot move the tree into place"
		echo "$STAMP" >"$BT/app.stamp"
		[ -s "$BT/tree.log" ] && log "cp left out (dangling links): $(wc -l <"$BT/tree.log") entries, see $BT/tree.log"
	fi
	# the reference output: the start on the local tree, every run (the font list depends on the
	# system's fonts too)
	H=$(mktemp -d)
	start_app "$A" "$H" >"$BT/app.out" 2>"$BT/app.err" || die "the start fails on the local tree: $(tail -n 3 "$BT/app.err")"
	rm -rf "$H"
	APP_OUT=$BT/app.out
	grep -q '^outside 0' "$APP_OUT" || die "the start on the local tree loads from outside it: $(grep '^outside' "$APP_OUT")"
	TREE_BYTES=$(du -sb "$A" | cut -f1)
	TREE_FILES=$(find "$A" -type f | wc -l)
	[ "$TREE_BYTES" -ge 500000000 ] || log "WARNING: the tree is $TREE_BYTES bytes, under the 500 MB of the issue"
	mkdir -p "$BT/ref" && cp "$APP_OUT" "$BT/ref/py.out"

}
# the toolchain tree (app_cc.sh); its reference output and strace check every run
cc_tree() {
	local p missing="" h
	for p in $CC_PKGS; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing="$missing $p"
	done
	if [ -n "$missing" ]; then
		log "installing$missing"
		# shellcheck disable=SC2086
		apt_install $missing || die "apt-get install$missing failed"
	fi
	# shellcheck disable=SC2086
	CC_STAMP=$(echo "cc tree $CC_TREE_VERSION"; dpkg-query -W $CC_PKGS 2>/dev/null)
	if [ "$(cat "$BT/cc.stamp" 2>/dev/null)" != "$CC_STAMP" ] || [ ! -x "$BT/cc/usr/bin/gcc-12" ]; then
		log "making the toolchain tree in $BT/cc"
		: >"$BT/cc-tree.log"
		rm -f "$BT/cc.stamp" "$BT/cc-images.key"
		cc_make_tree "$BT/cc.new" "$BT/cc-tree.log" || die "making the toolchain tree failed: $(tail -n 2 "$BT/cc-tree.log")"
		rm -rf "$BT/cc" && mv "$BT/cc.new" "$BT/cc" || die "cannot move the toolchain tree into place"
		echo "$CC_STAMP" >"$BT/cc.stamp"
	fi
	h=$(mktemp -d)
	cc_start "$BT/cc" "$h" >"$BT/cc.out" 2>"$BT/cc.err" || die "the toolchain start fails on the local tree: $(tail -n 3 "$BT/cc.err")"
	rm -rf "$h"; h=$(mktemp -d)
	cc_outside "$BT/cc" "$h" >"$BT/cc-outside.out" 2>"$BT/cc.err" || die "strace of the toolchain start failed: $(tail -n 2 "$BT/cc.err")"
	rm -rf "$h"
	grep -q '^outside 0$' "$BT/cc-outside.out" ||
		die "the toolchain start on the local tree opens files outside it: $(grep -A3 '^outside' "$BT/cc-outside.out" | tr '\n' ' ')"
	mkdir -p "$BT/ref" && cp "$BT/cc.out" "$BT/ref/cc.out"
	CC_BYTES=$(du -sb "$BT/cc" | cut -f1)
	CC_FILES=$(find "$BT/cc" -type f | wc -l)
}
case " $APPS " in *" py "*) py_tree;; esac
case " $APPS " in *" cc "*) cc_tree;; esac

# ---- the images: plain and access-ordered (when sqk has --order and sqkfuse -o trace=) of each
# application, data ----
NO_ORDER_WHY=""
"$SQK" mkimage --help 2>&1 | grep -q -- '--order' || NO_ORDER_WHY="sqk mkimage has no --order"
"$SQKFUSE" --help 2>&1 | grep -q 'trace=' || NO_ORDER_WHY="${NO_ORDER_WHY:+$NO_ORDER_WHY, }sqkfuse has no -o trace="
want ordered || want slow || NO_ORDER_WHY=${NO_ORDER_WHY:-"not asked for (BENCH_CASES)"}
HAVE_ORDER_py=0 HAVE_ORDER_cc=0 HINT_py=0 HINT_cc=0 SZ_py_plain=n/a SZ_py_ordered=n/a SZ_cc_plain=n/a SZ_cc_ordered=n/a
# the lazy case: -o nobackground where sqkfuse has it (else today's mount, lazy by itself)
XOPT_LAZY=""; "$SQKFUSE" --help 2>&1 | grep -q nobackground && XOPT_LAZY=nobackground
# record_trace APP TREE: the start of APP on a local sqkfuse mount of its plain image with
# -o trace=, then sqk mkimage --order; sets WHY on failure
record_trace() {
	local app=$1 tree=$2 pre=$3 tm h tpid
	tm=$(mktemp -d) h=$(mktemp -d)
	rm -f "$BT/${pre}trace"
	"$SQKFUSE" "$BT/$(img_of "$app" plain)" "$tm" -f -o "trace=$BT/${pre}trace" 2>"$BT/${pre}trace.err" &
	tpid=$!
	for _ in $(seq 600); do mountpoint -q "$tm" && break; kill -0 "$tpid" 2>/dev/null || break; sleep 0.1; done
	if mountpoint -q "$tm"; then
		start_of "$app" "$tm" "$h" >"$BT/${pre}trace.out" 2>>"$BT/${pre}trace.err" ||
			log "the $app start failed on the trace mount: $(tail -n 1 "$BT/${pre}trace.err")"
		fusermount3 -u "$tm"
	else
		log "sqkfuse -o trace= did not mount: $(tail -n 1 "$BT/${pre}trace.err")"
	fi
	wait "$tpid"
	rmdir "$tm"; rm -rf "$h"
	if [ ! -s "$BT/${pre}trace" ] || ! cmp -s "$BT/${pre}trace.out" "$BT/ref/$app.out"; then
		WHY="no trace recorded ($(tail -n 1 "$BT/${pre}trace.err"))"; return 1
	fi
	"$SQK" mkimage -q -noappend --order "$BT/${pre}trace" "$tree" "$BT/$(img_of "$app" ordered).tmp" 2>"$BT/${pre}mkimage-order.err" &&
		mv "$BT/$(img_of "$app" ordered).tmp" "$BT/$(img_of "$app" ordered)" ||
		{ WHY="sqk mkimage --order failed: $(tail -n 1 "$BT/${pre}mkimage-order.err")"; return 1; }
}
# cc_mount_check: the toolchain start under strace on a local sqkfuse mount of its plain image
cc_mount_check() {
	local tm h tpid out
	tm=$(mktemp -d) h=$(mktemp -d)
	"$SQKFUSE" "$BT/$(img_of cc plain)" "$tm" -f 2>>"$BT/cc-trace.err" &
	tpid=$!
	for _ in $(seq 600); do mountpoint -q "$tm" && break; kill -0 "$tpid" 2>/dev/null || break; sleep 0.1; done
	out=$(cc_outside "$tm" "$h" 2>&1 | grep -A3 '^outside')
	mountpoint -q "$tm" && fusermount3 -u "$tm"
	wait "$tpid"
	rmdir "$tm"; rm -rf "$h"
	[ "$(echo "$out" | head -n 1)" = "outside 0" ] || die "the toolchain start on a sqkfuse mount opens files outside it: $(echo "$out" | tr '\n' ' ')"
	log "strace: every file the toolchain start opened came from the sqkfuse mount"
}
# app_images APP TREE STAMP: APP's images (made again when sqk, the tree or, for the ordered
# one, sqkfuse changed); sets HAVE_ORDER_APP, HINT_APP (the hint's bytes), SZ_APP_KIND
app_images() {
	local app=$1 tree=$2 stamp=$3 pre key okey plain ordered t0 WHY=$NO_ORDER_WHY
	pre=$([ "$app" = py ] || echo "$app-")
	plain=$BT/$(img_of "$app" plain) ordered=$BT/$(img_of "$app" ordered)
	key=$( (sha256sum "$SQK" | cut -d' ' -f1; echo "$stamp") | sha256sum | cut -d' ' -f1)
	# the ordered image depends on sqkfuse (its trace) and the start's sources
	okey=$( (echo "$key"; sha256sum "$SQKFUSE" | cut -d' ' -f1
		[ "$app" = py ] || sha256sum "$HERE/app_cc.c" "$HERE/app_cc.cpp" | cut -d' ' -f1) | sha256sum | cut -d' ' -f1)
	[ "$(cat "$BT/${pre}images.key" 2>/dev/null)" = "$key" ] ||
		rm -f "$plain" "$ordered" "$BT/${pre}trace" "$BT/${pre}images.key" "$BT/${pre}ordered.key"
	if [ ! -s "$plain" ]; then
		log "sqk mkimage of the $app tree"
		t0=$(now)
		"$SQK" mkimage -q -noappend "$tree" "$plain.tmp" 2>"$BT/${pre}mkimage.err" || die "sqk mkimage failed: $(tail -n 1 "$BT/${pre}mkimage.err")"
		mv "$plain.tmp" "$plain"
		log "  $(since "$t0") s"
	fi
	echo "$key" >"$BT/${pre}images.key"
	[ -n "$WHY" ] || [ "$(cat "$BT/${pre}ordered.key" 2>/dev/null)" = "$okey" ] ||
		rm -f "$ordered" "$BT/${pre}trace" "$BT/${pre}ordered.key"
	if [ -z "$WHY" ] && [ ! -s "$ordered" ]; then
		log "recording the trace of the $app start on a local sqkfuse mount, sqk mkimage --order"
		record_trace "$app" "$tree" "$pre" && echo "$okey" >"$BT/${pre}ordered.key"
		[ "$app" = cc ] && cc_mount_check
	fi
	printf -v "SZ_${app}_plain" %s "$(stat -c %s "$plain")"
	if [ -z "$WHY" ] && [ -s "$ordered" ]; then
		printf -v "HAVE_ORDER_$app" 1
		printf -v "SZ_${app}_ordered" %s "$(stat -c %s "$ordered")"
		printf -v "HINT_$app" %s "$("$SQK" info --json "$ordered" | python3 -c '
import json, sys
print(sum(r["length"] for r in json.load(sys.stdin).get("prefetch_hint") or []))')"
	else
		log "access-ordered $app image not available: $WHY"
	fi
}
case " $APPS " in *" py "*) app_images py "$A" "$STAMP";; esac
case " $APPS " in *" cc "*) app_images cc "$BT/cc" "$CC_STAMP";; esac
DKEY=$(sha256sum "$SQK" | cut -d' ' -f1)
[ "$(cat "$BT/data.key" 2>/dev/null)" = "$DKEY" ] || rm -f "$BT/data.sqsh"
if [ ! -s "$BT/data.sqsh" ]; then
	log "the data image: $NREADERS files of $READER_MIB MiB and one of $BIG_MIB MiB, random bytes"
	rm -rf "$BT/data"; mkdir -p "$BT/data/data"
	for ((i = 0; i < NREADERS; i++)); do head -c $((READER_MIB << 20)) /dev/urandom >"$BT/data/data/r$i"; done
	head -c $((BIG_MIB << 20)) /dev/urandom >"$BT/data/data/big"
	(cd "$BT/data/data" && sha256sum r* big) >"$BT/data.sha"
	"$SQK" mkimage -q -noappend "$BT/data" "$BT/data.sqsh.tmp" 2>"$BT/mkimage-data.err" || die "sqk mkimage of the data failed: $(tail -n 1 "$BT/mkimage-data.err")"
	mv "$BT/data.sqsh.tmp" "$BT/data.sqsh"
	rm -rf "$BT/data"
fi
echo "$DKEY" >"$BT/data.key"
DATA_SHA=(); for ((i = 0; i < NREADERS; i++)); do DATA_SHA+=("$(awk -v f="r$i" '$2 == f { print $1 }' "$BT/data.sha")"); done
BIG_SHA=$(awk '$2 == "big" { print $1 }' "$BT/data.sha")
SZ_data=$(stat -c %s "$BT/data.sqsh")
case " $APPS " in *" py "*) log "Python tree $A: $TREE_BYTES bytes, $TREE_FILES files; images: plain $SZ_py_plain bytes, ordered $SZ_py_ordered (hint $HINT_py)";; esac
case " $APPS " in *" cc "*) log "toolchain tree $BT/cc: $CC_BYTES bytes, $CC_FILES files; images: plain $SZ_cc_plain bytes, ordered $SZ_cc_ordered (hint $HINT_cc)";; esac
if [ -n "$XOPT_LAZY" ]; then LZ="-o $XOPT_LAZY"; else LZ="sqkfuse has no -o nobackground: the plain mount of today, lazy"; fi
log "data image $SZ_data bytes; lazy case: $LZ"

# ---- network namespace, delay, nginx; images served from a tmpfs ----
S=$(mktemp -d /var/tmp/sqk-bench-app-run.XXXXXX) || die "mktemp failed"
export XDG_CACHE_HOME=$S/xdg-cache
T=$S/tmpfs NS=sqkapp$$ NS_MADE=0 PIDS=() DELAY_PID=""
cleanup() {
	trap - EXIT INT TERM HUP
	net_down
	for _ in $(seq 25); do mountpoint -q "$T" || break; umount "$T" 2>/dev/null && break; sleep 0.2; done
	mountpoint -q "$T" && umount -l "$T"
	rm -rf "$S"
}
trap cleanup EXIT
trap 'exit 130' INT; trap 'exit 143' TERM; trap 'exit 129' HUP
mkdir -p "$T" "$S/logs" "$S/nginx"
mount -t tmpfs -o size=6g tmpfs "$T" || die "cannot mount tmpfs"
mkdir -p "$T/www"
cp "$BT/data.sqsh" "$T/www/" || die "cannot copy the data image to the tmpfs"
for a in $APPS; do
	cp "$BT/$(img_of "$a" plain)" "$T/www/" || die "cannot copy the $a image to the tmpfs"
	v=HAVE_ORDER_$a; [ "${!v}" = 1 ] || continue
	cp "$BT/$(img_of "$a" ordered)" "$T/www/" || die "cannot copy the ordered $a image to the tmpfs"
done
mkdir -p "$S/ref" && cp "$BT"/ref/*.out "$S/ref/" || die "cannot copy the reference outputs"
net_up "$DELAY_MS" "$S/logs"
nginx_up "$S/nginx" "$T/www" "$PORT"
BASE=http://127.0.0.1:$PORT
RTT_MS=$(rtt_ms "$BASE/data.sqsh")
log "nginx on $BASE inside namespace $NS; RTT $RTT_MS ms (TCP connect) with $DELAY_HOW"
WWW=$T/www
declare -p SQK SQKFUSE ROUNDS TMO MOUNT_TMO BASE WWW START_PY DATA_SHA BIG_SHA NREADERS DELAY_HOW CASES \
	APPS HAVE_ORDER_py HAVE_ORDER_cc HINT_py HINT_cc XOPT_LAZY >"$S/vars"
ip netns exec "$NS" bash "$SELF" --inner "$S" &
wait $!
rc=$?

# ---- results ----
col() { awk -v c="$1" '$1 != "FAIL" { print $c }' "$S/res/$2" 2>/dev/null | median; }
runs() { [ -s "$S/res/$1" ] && awk '{ print $1 }' "$S/res/$1" | tr '\n' ',' | sed 's/,$//' || echo n/a; }
x() { case $1 in n/a) echo n/a;; *) echo "${1}x";; esac; }
echo
echo "== squashkit application-start bench (RTT $RTT_MS ms by $DELAY_HOW, $ROUNDS round(s), medians, cold) =="
echo "workloads:"
case " $APPS " in *" py "*)
	echo "  py: a Python start, PYTHONHOME=MNT LD_LIBRARY_PATH=MNT/lib MNT/bin/python3 -s tests/bench/app_start.py;"
	echo "      tree $TREE_BYTES bytes, $TREE_FILES files (Debian python3.11 and: $(echo "$APP_PKGS" | tr -s ' \t\n' ' ' | sed 's/^python3.11 //; s/ $//'))"
	echo "      images: plain $SZ_py_plain, ordered $SZ_py_ordered bytes (prefetch hint $HINT_py bytes)";;
esac
case " $APPS " in *" cc "*)
	echo "  cc: a C/C++ toolchain start, MNT/usr/bin/gcc-12 and g++-12 --sysroot=MNT compile and link"
	echo "      tests/bench/app_cc.c and app_cc.cpp, the program run; tree $CC_BYTES bytes, $CC_FILES files (Debian gcc 12, binutils)"
	echo "      images: plain $SZ_cc_plain, ordered $SZ_cc_ordered bytes (prefetch hint $HINT_cc bytes)";;
esac
echo "  data: $NREADERS files of $READER_MIB MiB and one of $BIG_MIB MiB of random bytes, image $SZ_data bytes"
FMT='%-34s %8s %-30s %7s %10s %7s %-10s %s\n'
# shellcheck disable=SC2059
printf "$FMT" case "sqk (s)" "against (s)" ratio served "% image" goal result
# line NAME SECS AGAINST RATIO BYTES SIZE GOAL VERDICT (MISS and n/a counted in MISSES)
MISSES=0
line() {
	# shellcheck disable=SC2059
	printf "$FMT" "$1" "$2" "$3" "$(x "$4")" "$(mib "$5")" "$(pct "$5" "$6")" "$7" "$8"
	case $8 in MISS|n/a) MISSES=$((MISSES + 1));; esac
}
# plain_line NAME CASE SIZE: the start against curl+loop+start, goal <= 1.00x
plain_line() {
	local sq lo r
	[ -s "$S/res/$2.sqkfuse" ] || return 0
	sq=$(col 1 "$2.sqkfuse"); lo=$(col 1 "$2.loop"); r=$(ratio "$sq" "$lo")
	line "$1" "$sq" "curl+loop+start $lo" "$r" "$(col 3 "$2.sqkfuse")" "$3" "<= 1.00x" "$(verdict "$r" 1.00)"
}
# ordered_line NAME CASE APP SIZE [slow]: the start against its floor (<= 1.15x); on the slow
# link also against curl+loop+start (<= 0.50x)
ordered_line() {
	local sq lo fl fb fa r v=HAVE_ORDER_$3
	[ "${!v}" = 1 ] || { printf '%-34s %s\n' "$1" "not available: ${NO_ORDER_WHY:-see the log}"; return 0; }
	[ -s "$S/res/$2.sqkfuse" ] || return 0
	sq=$(col 1 "$2.sqkfuse"); lo=$(col 1 "$2.loop")
	fa=$(col 1 "local_$3_ordered.fuse"); fb=$(col 1 "$2.hint"); fl=$(maxof "$fa" "$fb")
	r=$(ratio "$sq" "$fl")
	line "$1" "$sq" "floor $fl (local $fa, hint $fb)" "$r" "$(col 3 "$2.sqkfuse")" "$4" "<= 1.15x" "$(verdict "$r" 1.15)"
	r=$(ratio "$sq" "$lo")
	if [ -n "${5:-}" ]; then
		line "  against download + mount" "$sq" "curl+loop+start $lo" "$r" n/a n/a "<= 0.50x" "$(verdict "$r" 0.50)"
	else
		line "  against download + mount" "$sq" "curl+loop+start $lo" "$r" n/a n/a "(none)" "-"
	fi
}
# lazy_line NAME APP SIZE: bytes served <= LAZY_PCT_APP % of the image
lazy_line() {
	local b p l=LAZY_PCT_$2
	[ -s "$S/res/$2_lazy.sqkfuse" ] || return 0
	b=$(col 3 "$2_lazy.sqkfuse"); p=$(pct "$b" "$3")
	line "$1" "$(col 1 "$2_lazy.sqkfuse")" "$([ -n "$XOPT_LAZY" ] && echo "-o $XOPT_LAZY" || echo "(today's mount, lazy)")" n/a "$b" "$3" \
		"<= ${!l}%" "$(verdict "${p%\%}" "${!l}")"
}
for a in $APPS; do
	psz=SZ_${a}_plain osz=SZ_${a}_ordered
	want app && plain_line "$a plain start, 20 ms" "${a}_plain" "${!psz}"
	want ordered && ordered_line "$a ordered start, 20 ms" "${a}_ordered" "$a" "${!osz}"
	want lazy && lazy_line "$a lazy start (bytes), 20 ms" "$a" "${!psz}"
	if want slow; then
		plain_line "$a plain start, 100 Mbit/s" "slow_${a}_plain" "${!psz}"
		ordered_line "$a ordered start, 100 Mbit/s" "slow_${a}_ordered" "$a" "${!osz}" slow
	fi
done
if want readers; then
	r1=$(col 1 readers1.sqkfuse); r8=$(col 1 readers8.sqkfuse); rr=$(ratio "$r8" "$r1")
	line "$NREADERS readers vs 1 (data), 20 ms" "$r8" "one reader $r1" "$rr" "$(col 3 readers8.sqkfuse)" "$SZ_data" "<= 1.30x" "$(verdict "$rr" 1.30)"
fi
if want seq; then
	ts=$(col 1 seq.sqkfuse); tc_=$(col 1 seq.curl)
	# throughput ratio: (1 GiB / sqkfuse time) / (image bytes / curl time)
	tr_=$(case "$ts$tc_" in *n/a*) echo n/a;; *) awk -v a="$ts" -v b="$tc_" -v f=$((BIG_MIB << 20)) -v i="$SZ_data" \
		'BEGIN { printf "%.2f\n", (f / a) / (i / b) }';; esac)
	line "1 GiB read, throughput, 20 ms" "$ts" "curl of the image $tc_" "$tr_" "$(col 3 seq.sqkfuse)" "$SZ_data" ">= 0.90x" "$(verdict "$tr_" 0.90 min)"
	echo "  throughput: sqkfuse $(awk -v a="$ts" -v f=$((BIG_MIB << 20)) 'BEGIN { if (a + 0) printf "%.1f", f / a / 1048576; else print "n/a" }') MiB/s," \
		"curl $(awk -v b="$tc_" -v i="$SZ_data" 'BEGIN { if (b + 0) printf "%.1f", i / b / 1048576; else print "n/a" }') MiB/s"
fi
echo "goals missed (or not measured): $MISSES"
for a in $APPS; do
	for img in plain ordered; do
		[ -s "$S/res/local_${a}_$img.loop" ] || continue
		echo "local, $a $img image file on a tmpfs, no network, cold: the start on a kernel loop mount" \
			"$(col 1 "local_${a}_$img.loop") s, on sqkfuse $(col 1 "local_${a}_$img.fuse") s"
	done
done
echo "sqkfuse stats (median http_requests http_bytes http_bytes_unused http_retries http_bytes_background)"
echo "and nginx (requests, non-2xx); curl+loop: the download's own time (dl):"
for c in $(cd "$S/res" 2>/dev/null && ls ./*.sqkfuse | sed 's,^\./,,; s,\.sqkfuse$,,' | sort); do
	echo "  $c: stats $(for k in 5 6 7 8 9; do col $k "$c.sqkfuse"; done | tr '\n' ' ')| nginx $(col 2 "$c.sqkfuse") req, $(col 4 "$c.sqkfuse") non-2xx;" \
		"runs (s) sqkfuse $(runs "$c.sqkfuse")$([ -s "$S/res/$c.loop" ] && echo ", curl+loop $(runs "$c.loop") (dl $(col 5 "$c.loop"))")$([ -s "$S/res/$c.curl" ] && echo ", curl $(runs "$c.curl")")$([ -s "$S/res/$c.hint" ] && echo ", hint's bytes $(runs "$c.hint")")"
done
# the logs of the last run, for a look at the requests (nginx: status bytes method range secs)
rm -rf "$BT/last-logs"; mkdir -p "$BT/last-logs" &&
	cp -a "$S/logs/." "$S/nginx/access.log" "$S/nginx/error.log" "$BT/last-logs/" 2>/dev/null
if [ "$rc" != 0 ]; then
	KEEP=$(mktemp -d /var/tmp/sqk-bench-app-logs.XXXXXX) &&
		cp -a "$S/logs" "$S/nginx/access.log" "$S/nginx/error.log" "$S/run" "$KEEP/" 2>/dev/null &&
		log "at least one run failed; logs kept in $KEEP"
fi
[ -n "$DELAY_PID" ] && log "NFQUEUE delay helper used $(awk '{ printf "%.1f", ($14 + $15) / '"$(getconf CLK_TCK)"' }' "/proc/$DELAY_PID/stat" 2>/dev/null) CPU s"
log "whole run took $(since "$START") s"
exit $rc
