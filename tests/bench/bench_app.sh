#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# squashkit remote application-start benchmark (issue 16): a Python installation with its
# site-packages in an image served by nginx over loopback with 20 ms RTT, started from the
# mount. Every run is cold: a fresh empty cache directory, page cache dropped (drop_caches).
#   1 app plain     curl download + kernel loop mount + the start, against
#                   sqkfuse URL + the start, on the plain image    goal <= 1.00x and <= 40% served
#   2 app ordered   the same on the access-ordered image (trace of the start recorded on a
#                   local mount, sqkfuse IMAGE MNT -o trace=FILE; sqk mkimage --order FILE)
#                                                                  goal <= 0.45x
#   3 8 readers     8 cat of 8 different cold 16 MiB files at once through one sqkfuse URL
#                   mount, against one cat of one of them          goal <= 1.30x
#   4 1 GiB read    a sequential cat of a 1 GiB file of random bytes through sqkfuse URL:
#                   its throughput against curl's of the image on the same link  goal >= 0.90x
#   5, 6            cases 1 and 2 on a 100 Mbit/s link (tbf rate 100mbit burst 32kbit
#                   latency 400ms on lo, on top of the delay)     goal 6 <= 0.20x
# The start (tests/bench/app_start.py) runs the image's own python3 with PYTHONHOME=MNT and
# LD_LIBRARY_PATH=MNT/lib: numpy, scipy, pandas, scikit-learn, sympy, babel, pytz, networkx and
# matplotlib imported, a figure drawn with the font list built from the image's fonts, babel
# locales, time zones, a data set read. Its output is checked against a run on the local tree,
# and it checks that every module and shared object it loaded came from the image.
# For reference, the start is also timed on local mounts of the image file (on the tmpfs, no
# network): a kernel loop mount and sqkfuse, the floor of each stack.
# Times of 1, 2, 5, 6 include setting up the stack (curl's download and the loop mount; the
# sqkfuse mount); 3 and 4 time the reads on a mount made just before. Bytes served are the
# response bodies nginx sent during the case ($body_bytes_sent from its log: opening, digests
# and retries included); % of the image is of the image file's size.
#
# The application tree (>= 500 MB): Debian's python3.11 with the packages of APP_PKGS (installed
# with apt-get when missing), copied into BENCH_TMPDIR/app: bin/python3, lib/python3.11,
# lib/python3/dist-packages (symbolic links out of the tree followed, matplotlib's mpl-data from
# /usr/share copied next to the package), share/zoneinfo (PYTZ_TZDATADIR, PYTHONTZPATH), and in
# lib/ the shared objects (ldd) of the interpreter and of every extension module, glibc excepted.
# The tree and the images are kept in BENCH_TMPDIR for the next run (and the logs of the last
# run in BENCH_TMPDIR/last-logs); the images are made again
# when sqk changes (its sha256; the ordered one when sqkfuse does too), the tree when the package
# versions do.
#
# Network: as tests/bench/bench_remote.sh (tests/bench/remote_lib.sh): a network namespace,
# 10 ms each way on lo (netem, else NFQUEUE and tests/netdelay.py), nginx serving the images
# from a tmpfs; everything that reads runs in one `ip netns exec` shell with its own mounts.
# Environment: SQK (default build/bin/sqk), BENCH_ROUNDS (3), BENCH_TMPDIR
#   (/var/tmp/sqk-bench-app), BENCH_DELAY_MS (10, one way), BENCH_TIMEOUT (600 s a workload),
#   BENCH_CASES (default "app ordered readers seq slow": a subset to run).
# Exit status: 0 when every run succeeded (missed goals and options sqk does not have yet are
# reported, not fatal), 1 when a run failed, 2 on a setup error.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
SELF=$HERE/$(basename "$0")
START_PY=$HERE/app_start.py
RL_NAME=bench_app
# shellcheck source=remote_lib.sh
. "$HERE/remote_lib.sh"

APP_PKGS="python3.11 python3-numpy python3-scipy python3-pandas python3-matplotlib python3-sklearn
	python3-sympy python3-babel python3-tz python3-networkx python3-pil"
TREE_VERSION=1          # of the way the tree is assembled: a change makes it again
NREADERS=8 READER_MIB=16 BIG_MIB=1024

# the environment of the start from tree or mount $1 (a fresh matplotlib config dir in $2)
start_app() {
	env -i PATH=/usr/bin:/bin HOME="$2" MPLCONFIGDIR="$2" PYTHONHOME="$1" LD_LIBRARY_PATH="$1/lib" \
		PYTHONDONTWRITEBYTECODE=1 PYTZ_TZDATADIR="$1/share/zoneinfo" PYTHONTZPATH="$1/share/zoneinfo" \
		LC_ALL=C.UTF-8 timeout -k 10 "$TMO" "$1/bin/python3" -s "$START_PY"
}

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
	w_start() { # the start; its output checked against the local run
		local h=$S/run/home rc=0
		rm -rf "$h"; mkdir -p "$h"
		start_app "$1" "$h" >"$S/run/start.out" 2>"$S/run/start.err" || rc=1
		[ "$rc" = 0 ] && { cmp -s "$S/run/start.out" "$APP_OUT" || rc=2; }
		case $rc in
		1) log "  the start failed: $(tail -n 2 "$S/run/start.err" | tr '\n' ' ')";;
		2) log "  the start printed other results than on the local tree:"; diff "$APP_OUT" "$S/run/start.out" | head -n 5;;
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
		XDG_CACHE_HOME=$d "$SQKFUSE" "$BASE/$img" "$m" -f -o "cache_dir=$d,stats=$st" 2>"$LOGS/sqkfuse.run.err" &
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
print(" ".join(str(d.get(k, "n/a")) for k in ("http_requests", "http_bytes", "http_bytes_unused", "http_retries")))' "$st")
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
	for phase in fast slow; do
		if [ "$phase" = slow ]; then
			want slow || break
			rate_limit on || { log "FAILED: cannot add the tbf rate limit on lo"; FAILED=1; break; }
			log "lo rate limited: $(tc qdisc show dev lo | tr '\n' ';')"
		fi
		for R in $(seq "$ROUNDS"); do
			if [ "$phase" = fast ]; then p=""; else p=slow_; fi
			for img in plain ordered; do
				[ "$phase" = slow ] || want "$([ $img = plain ] && echo app || echo ordered)" || continue
				[ "$img" = plain ] || [ "$HAVE_ORDER" = 1 ] || continue
				LINE="round $R/$ROUNDS ${p}$img app start:"
				if [ $((R % 2)) = 1 ]; then ord="sqkfuse loop"; else ord="loop sqkfuse"; fi
				for s in $ord; do one "$p$img" "$s" "$img.sqsh" start; done
				if [ "$phase" = fast ]; then
					for s in loop fuse; do
						R_SECS=FAIL; run_local "$s" "$img.sqsh" start || FAILED=1
						echo "$R_SECS" >>"$S/res/local_$img.$s"
						LINE="$LINE local $s ${R_SECS}s"
					done
				fi
				log "$LINE"
			done
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
CASES=${BENCH_CASES:-app ordered readers seq slow}
MOUNT_TMO=60
PORT=8080
case $ROUNDS in ''|*[!0-9]*|0) die "BENCH_ROUNDS must be a positive integer (got '$ROUNDS')";; esac
case $DELAY_MS in ''|*[!0-9]*) die "BENCH_DELAY_MS must be an integer (got '$DELAY_MS')";; esac
for c in $CASES; do case $c in app|ordered|readers|seq|slow) ;; *) die "unknown case '$c' in BENCH_CASES";; esac; done
[ "$(id -u)" = 0 ] || die "needs root (packages, network namespace, mounts, drop_caches)"
[ -x "$SQK" ] && [ -x "$SQKFUSE" ] || die "build first (make)"
need nginx nginx-light; need fusermount3 fuse3; need ip iproute2; need tc iproute2; need curl curl
need python3 python3
for c in nginx fusermount3 ip tc curl python3 timeout sha256sum; do
	command -v "$c" >/dev/null 2>&1 || die "$c missing"
done

# ---- the application tree ----
missing=""
for p in $APP_PKGS; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing="$missing $p"
done
if [ -n "$missing" ]; then
	log "installing$missing"
	# shellcheck disable=SC2086
	apt_install $missing || die "apt-get install$missing failed"
fi
mkdir -p "$BT" || die "cannot make $BT"
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

# ---- the images: plain, access-ordered (when sqk has --order and sqkfuse -o trace=), data ----
HAVE_ORDER=0 NO_ORDER_WHY=""
"$SQK" mkimage --help 2>&1 | grep -q -- '--order' || NO_ORDER_WHY="sqk mkimage has no --order"
"$SQKFUSE" --help 2>&1 | grep -q 'trace=' || NO_ORDER_WHY="${NO_ORDER_WHY:+$NO_ORDER_WHY, }sqkfuse has no -o trace="
KEY=$( (sha256sum "$SQK" | cut -d' ' -f1; echo "$STAMP") | sha256sum | cut -d' ' -f1)
# the ordered image also depends on sqkfuse (its trace)
OKEY=$( (echo "$KEY"; sha256sum "$SQKFUSE" | cut -d' ' -f1) | sha256sum | cut -d' ' -f1)
if [ "$(cat "$BT/images.key" 2>/dev/null)" != "$KEY" ]; then
	rm -f "$BT/plain.sqsh" "$BT/ordered.sqsh" "$BT/trace" "$BT/data.sqsh" "$BT/images.key"
fi
[ "$(cat "$BT/ordered.key" 2>/dev/null)" = "$OKEY" ] || rm -f "$BT/ordered.sqsh" "$BT/trace" "$BT/ordered.key"
if [ ! -s "$BT/plain.sqsh" ]; then
	log "sqk mkimage of the tree"
	t0=$(now)
	"$SQK" mkimage -q "$A" "$BT/plain.sqsh.tmp" 2>"$BT/mkimage.err" || die "sqk mkimage failed: $(tail -n 1 "$BT/mkimage.err")"
	mv "$BT/plain.sqsh.tmp" "$BT/plain.sqsh"
	log "  $(since "$t0") s"
fi
case " $CASES " in *" ordered "*|*" slow "*) ;; *) NO_ORDER_WHY=${NO_ORDER_WHY:-"not asked for (BENCH_CASES)"};; esac
if [ -z "$NO_ORDER_WHY" ] && [ ! -s "$BT/ordered.sqsh" ]; then
	log "recording the trace of the start on a local sqkfuse mount, sqk mkimage --order"
	TM=$(mktemp -d) H=$(mktemp -d)
	rm -f "$BT/trace"
	"$SQKFUSE" "$BT/plain.sqsh" "$TM" -f -o "trace=$BT/trace" 2>"$BT/trace.err" &
	tpid=$!
	for _ in $(seq 600); do mountpoint -q "$TM" && break; kill -0 "$tpid" 2>/dev/null || break; sleep 0.1; done
	if mountpoint -q "$TM"; then
		start_app "$TM" "$H" >"$BT/trace.out" 2>>"$BT/trace.err" || log "the start failed on the trace mount: $(tail -n 1 "$BT/trace.err")"
		fusermount3 -u "$TM"
	else
		log "sqkfuse -o trace= did not mount: $(tail -n 1 "$BT/trace.err")"
	fi
	wait "$tpid"
	rmdir "$TM"; rm -rf "$H"
	if [ -s "$BT/trace" ] && cmp -s "$BT/trace.out" "$APP_OUT"; then
		"$SQK" mkimage -q --order "$BT/trace" "$A" "$BT/ordered.sqsh.tmp" 2>"$BT/mkimage-order.err" &&
			mv "$BT/ordered.sqsh.tmp" "$BT/ordered.sqsh" && echo "$OKEY" >"$BT/ordered.key" ||
			NO_ORDER_WHY="sqk mkimage --order failed: $(tail -n 1 "$BT/mkimage-order.err")"
	else
		NO_ORDER_WHY="no trace recorded ($(tail -n 1 "$BT/trace.err"))"
	fi
fi
[ -z "$NO_ORDER_WHY" ] && [ -s "$BT/ordered.sqsh" ] && HAVE_ORDER=1
if [ ! -s "$BT/data.sqsh" ]; then
	log "the data image: $NREADERS files of $READER_MIB MiB and one of $BIG_MIB MiB, random bytes"
	rm -rf "$BT/data"; mkdir -p "$BT/data/data"
	for ((i = 0; i < NREADERS; i++)); do head -c $((READER_MIB << 20)) /dev/urandom >"$BT/data/data/r$i"; done
	head -c $((BIG_MIB << 20)) /dev/urandom >"$BT/data/data/big"
	(cd "$BT/data/data" && sha256sum r* big) >"$BT/data.sha"
	"$SQK" mkimage -q "$BT/data" "$BT/data.sqsh.tmp" 2>"$BT/mkimage-data.err" || die "sqk mkimage of the data failed: $(tail -n 1 "$BT/mkimage-data.err")"
	mv "$BT/data.sqsh.tmp" "$BT/data.sqsh"
	rm -rf "$BT/data"
fi
echo "$KEY" >"$BT/images.key"
DATA_SHA=(); for ((i = 0; i < NREADERS; i++)); do DATA_SHA+=("$(awk -v f="r$i" '$2 == f { print $1 }' "$BT/data.sha")"); done
BIG_SHA=$(awk '$2 == "big" { print $1 }' "$BT/data.sha")
SZ_plain=$(stat -c %s "$BT/plain.sqsh"); SZ_data=$(stat -c %s "$BT/data.sqsh")
SZ_ordered=n/a; [ "$HAVE_ORDER" = 1 ] && SZ_ordered=$(stat -c %s "$BT/ordered.sqsh")
log "tree $A: $TREE_BYTES bytes, $TREE_FILES files; images: plain $SZ_plain bytes, ordered $SZ_ordered, data $SZ_data"
[ "$HAVE_ORDER" = 1 ] || log "access-ordered image not available: $NO_ORDER_WHY"

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
cp "$BT/plain.sqsh" "$BT/data.sqsh" "$T/www/" || die "cannot copy the images to the tmpfs"
[ "$HAVE_ORDER" = 1 ] && { cp "$BT/ordered.sqsh" "$T/www/" || die "cannot copy the ordered image"; }
net_up "$DELAY_MS" "$S/logs"
nginx_up "$S/nginx" "$T/www" "$PORT"
BASE=http://127.0.0.1:$PORT
RTT_MS=$(rtt_ms "$BASE/plain.sqsh")
log "nginx on $BASE inside namespace $NS; RTT $RTT_MS ms (TCP connect) with $DELAY_HOW"
WWW=$T/www
declare -p SQK SQKFUSE ROUNDS TMO MOUNT_TMO BASE WWW APP_OUT START_PY HAVE_ORDER DATA_SHA BIG_SHA NREADERS \
	DELAY_HOW CASES >"$S/vars"
ip netns exec "$NS" bash "$SELF" --inner "$S" &
wait $!
rc=$?

# ---- results ----
col() { awk -v c="$1" '$1 != "FAIL" { print $c }' "$S/res/$2" 2>/dev/null | median; }
runs() { [ -s "$S/res/$1" ] && awk '{ print $1 }' "$S/res/$1" | tr '\n' ',' | sed 's/,$//' || echo n/a; }
x() { case $1 in n/a) echo n/a;; *) echo "${1}x";; esac; }
both() { case "$1/$2" in *NOT*) echo "NOT met";; *n/a*) echo n/a;; *) echo met;; esac; }
echo
echo "== squashkit application-start bench (RTT $RTT_MS ms by $DELAY_HOW, $ROUNDS round(s), medians, cold) =="
echo "tree: $TREE_BYTES bytes, $TREE_FILES files (Debian python3.11 and: $(echo "$APP_PKGS" | tr -s ' \t\n' ' ' | sed 's/^python3.11 //; s/ $//'));" \
	"images: plain $SZ_plain, ordered $SZ_ordered, data $SZ_data bytes"
echo "the start: PYTHONHOME=MNT LD_LIBRARY_PATH=MNT/lib MNT/bin/python3 -s tests/bench/app_start.py"
printf '%-26s %8s %-22s %6s %10s %7s %-17s %s\n' case "sqk (s)" "other (s)" ratio served "% image" goal result
app_line() { # name case image-size limit [pct-limit]
	local sq lo r b p g
	sq=$(col 1 "$2.sqkfuse"); lo=$(col 1 "$2.loop"); r=$(ratio "$sq" "$lo"); b=$(col 3 "$2.sqkfuse"); p=$(pct "$b" "$3")
	g=$(goal "$r" "$4")
	if [ -n "${5:-}" ]; then g=$(both "$g" "$(goal "${p%\%}" "$5")"); fi
	[ "$3" = n/a ] && { printf '%-26s %s\n' "$1" "not available: $NO_ORDER_WHY"; return; }
	printf '%-26s %8s %-22s %6s %10s %7s %-17s %s\n' "$1" "$sq" "curl+loop $lo (dl $(col 5 "$2.loop"))" "$(x "$r")" "$(mib "$b")" "$p" \
		"<= $4x${5:+, <= $5%}" "$g"
}
want() { case " $CASES " in *" $1 "*) return 0;; esac; return 1; }
want app && app_line "1 app start, plain" plain "$SZ_plain" 1.00 40
want ordered && app_line "2 app start, ordered" ordered "$SZ_ordered" 0.45
if want readers; then
	r1=$(col 1 readers1.sqkfuse); r8=$(col 1 readers8.sqkfuse); rr=$(ratio "$r8" "$r1")
	printf '%-26s %8s %-22s %6s %10s %7s %-17s %s\n' "3 $NREADERS readers vs 1" "$r8" "one reader $r1" "$(x "$rr")" \
		"$(mib "$(col 3 readers8.sqkfuse)")" "$(pct "$(col 3 readers8.sqkfuse)" "$SZ_data")" "<= 1.30x" "$(goal "$rr" 1.30)"
fi
if want seq; then
	ts=$(col 1 seq.sqkfuse); tc_=$(col 1 seq.curl)
	# throughput ratio: (1 GiB / sqkfuse time) / (image bytes / curl time)
	tr_=$(case "$ts$tc_" in *n/a*) echo n/a;; *) awk -v a="$ts" -v b="$tc_" -v f=$((BIG_MIB << 20)) -v i="$SZ_data" \
		'BEGIN { printf "%.2f\n", (f / a) / (i / b) }';; esac)
	printf '%-26s %8s %-22s %6s %10s %7s %-17s %s\n' "4 1 GiB read, throughput" "$ts" "curl $tc_" "$(x "$tr_")" \
		"$(mib "$(col 3 seq.sqkfuse)")" "$(pct "$(col 3 seq.sqkfuse)" "$SZ_data")" ">= 0.90x" "$(goal "$tr_" 0.90 min)"
	echo "  throughput: sqkfuse $(awk -v a="$ts" -v f=$((BIG_MIB << 20)) 'BEGIN { if (a + 0) printf "%.1f", f / a / 1048576; else print "n/a" }') MiB/s," \
		"curl $(awk -v b="$tc_" -v i="$SZ_data" 'BEGIN { if (b + 0) printf "%.1f", i / b / 1048576; else print "n/a" }') MiB/s"
fi
if want slow; then
	app_line "5 app plain, 100 Mbit/s" slow_plain "$SZ_plain" 1.00
	app_line "6 app ordered, 100 Mbit/s" slow_ordered "$SZ_ordered" 0.20
fi
for img in plain ordered; do
	[ -s "$S/res/local_$img.loop" ] || continue
	echo "local floor, $img image file on a tmpfs, no network, cold: the start on a kernel loop mount" \
		"$(col 1 "local_$img.loop") s, on sqkfuse $(col 1 "local_$img.fuse") s"
done
echo "sqkfuse stats (median http_requests http_bytes http_bytes_unused http_retries) and nginx (requests, non-2xx):"
for c in plain ordered readers1 readers8 seq slow_plain slow_ordered; do
	[ -s "$S/res/$c.sqkfuse" ] || continue
	echo "  $c: stats $(for k in 5 6 7 8; do col $k "$c.sqkfuse"; done | tr '\n' ' ')| nginx $(col 2 "$c.sqkfuse") req, $(col 4 "$c.sqkfuse") non-2xx;" \
		"runs (s) sqkfuse $(runs "$c.sqkfuse")$([ -s "$S/res/$c.loop" ] && echo ", curl+loop $(runs "$c.loop")")$([ -s "$S/res/$c.curl" ] && echo ", curl $(runs "$c.curl")")"
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
