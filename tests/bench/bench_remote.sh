#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# squashkit remote-read benchmark: an image served by nginx over loopback with 20 ms RTT, read
# through sqkfuse URL (HTTP range requests, on-disk chunk cache) and through the usual stacks.
# Every run is cold: fresh empty cache directories, page cache dropped (drop_caches).
#   1 tree     whole-tree tar: sqkfuse URL vs curl download + kernel loop mount    goal <= 1.20x
#   2 lazy     cat of every 10th regular file (sorted find order of the corpus):
#              sqkfuse URL vs curl download + kernel loop mount                    goal <= 0.50x
#   3 generic  whole-tree tar: sqkfuse URL vs rclone mount :http: (vfs-cache-mode full)
#              + squashfuse_ll on the mounted image file                           goal <= 0.30x
#   4 4K read  one dd bs=4096 count=1 of a cold file of >= 1 MiB: http_bytes from the
#              sqkfuse -o stats= JSON vs 2 integrity chunks (64 KiB) + the metadata
#              (superblock inode_table_start .. bytes_used)                        goal <= 1.00x
# Cases 2 and 4 mount with -o nobackground where sqkfuse has it (purely lazy: no background
# fetch of the rest of the image); case 1 with the defaults. The summary says PASS or MISS.
# The tree read is `tar -cf - -C MNT . | cat >/dev/null`: with -f /dev/null, GNU tar would not
# read the file data at all. The lazy and 4K reads check the bytes read against the corpus, the
# tree read does in round 1 (sha256 of every file in sorted order).
# Times include setting up the stack: curl's download and the loop mount, the sqkfuse mount,
# the rclone and squashfuse_ll mounts. Bytes and requests served are counted from nginx's log.
#
# Network: a network namespace made here (lo only, 127.0.0.1), nginx (worker_processes 1,
# keepalive, sendfile) serving the image from a tmpfs, 10 ms added each way on lo:
# `tc qdisc ... netem delay 10ms` where the kernel has netem, else packets of lo are queued
# to user space with NFQUEUE (iptables raw PREROUTING, after loopback has orphaned them, as
# netem orphans them) and released 10 ms later by a small nfnetlink client in python3
# (tests/netdelay.py, shared with ns_add_delay in tests/integration/lib.sh).
# Everything that reads runs in one `ip netns exec` shell (its own mount namespace).
#
# The image: `sqk mkimage` (zstd, integrity data) of the bench corpus of bench_read.sh.
# Environment: SQK (default build/bin/sqk), BENCH_CORPUS=DIR (reuse a corpus), BENCH_ROUNDS (3),
#   BENCH_DELAY_MS (10, one way), BENCH_TIMEOUT (seconds for one workload, 1200), BENCH_PEERS
#   (auto|debian|anchors, see peers.sh: squashfuse_ll 0.6.2 of /opt/anchors, else Debian's;
#   the result lines name its version).
# Exit status: 0 when every run succeeded (missed goals and a sqkfuse without URL support are
# reported, not fatal), 1 when a run failed, 2 on a setup error.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
SELF=$HERE/$(basename "$0")
NETDELAY=$(cd "$HERE/.." && pwd)/netdelay.py
die() { echo "bench_remote: $*" >&2; exit 2; }
log() { echo "bench_remote: $*"; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.3f", b - a }'; }
median() { # numbers on stdin (other words ignored) -> median or n/a
	grep -E '^[0-9.]+$' | sort -n | awk '{ a[NR] = $1 } END { if (!NR) print "n/a";
		else if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2 }'
}
ratio() { case "$1$2" in *n/a*) echo n/a;; *) awk -v a="$1" -v b="$2" 'BEGIN { if (b + 0 == 0) print "n/a"; else printf "%.2f\n", a / b }';; esac; }
goal() { case $1 in n/a) echo n/a;; *) awk -v v="$1" -v l="$2" 'BEGIN { print (v + 0 <= l + 0) ? "PASS" : "MISS" }';; esac; }
mib() { case $1 in n/a) echo n/a;; *) awk -v b="$1" 'BEGIN { printf "%.1f MiB", b / 1048576 }';; esac; }

# ============================================================ inner part ===
# Runs inside the namespace (ip netns exec), in a mount namespace of its own: every mount and
# daemon below lives and dies here.
inner() {
	# shellcheck disable=SC1091
	. "$S/vars"
	M=$S/m; LOGS=$S/logs; ALOG=$S/nginx/access.log
	mkdir -p "$M/kernel" "$M/sqkfuse" "$M/rclone" "$M/sqfuse" "$M/probe" "$S/dl" "$S/cache" "$S/res"
	DAEMONS=()
	inner_cleanup() {
		for m in "$M"/*; do is_mounted "$m" && { fusermount3 -u "$m" 2>/dev/null || umount "$m" 2>/dev/null || umount -l "$m"; }; done
		for p in "${DAEMONS[@]}"; do alive "$p" && kill -TERM "$p" 2>/dev/null; done
		sleep 0.3
		for p in "${DAEMONS[@]}"; do alive "$p" && kill -KILL "$p" 2>/dev/null; done
	}
	trap inner_cleanup EXIT
	trap 'exit 130' INT; trap 'exit 143' TERM

	drop() { sync; echo 3 >/proc/sys/vm/drop_caches; }
	# from /proc/self/mountinfo, without touching the file system (a hung daemon cannot block it)
	is_mounted() { awk -v m="$1" '$5 == m { f = 1 } END { exit !f }' /proc/self/mountinfo; }
	alive() { local st; st=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -c1); [ -n "$st" ] && [ "$st" != Z ]; }
	# wait_mount MNT PID: 0 mounted, 1 the daemon exited, 2 timed out (MOUNT_TMO seconds)
	wait_mount() {
		local end=$((SECONDS + MOUNT_TMO))
		while ! is_mounted "$1"; do
			alive "$2" || return 1
			[ "$SECONDS" -ge "$end" ] && return 2
			sleep 0.01
		done
	}
	# unmount_wait MNT [PID]: unmount, then wait (30 s at most) for the daemon to exit
	unmount_wait() {
		local end=$((SECONDS + 30))
		if is_mounted "$1"; then
			fusermount3 -u "$1" 2>/dev/null || umount "$1" 2>/dev/null || umount -l "$1"
		fi
		[ -n "${2:-}" ] || return 0
		while alive "$2" && [ "$SECONDS" -lt "$end" ]; do sleep 0.01; done
		if alive "$2"; then
			log "daemon $2 still running 30 s after unmounting $1: killed"
			kill -TERM "$2" 2>/dev/null; sleep 1; alive "$2" && kill -KILL "$2" 2>/dev/null
		fi
		wait "$2" 2>/dev/null
		return 0
	}
	# requests and body bytes that nginx logged after line $1 (waits for the log to settle)
	logmark() { wc -l <"$ALOG"; }
	served() {
		local n0=-1 n i
		for ((i = 0; i < 20; i++)); do n=$(wc -l <"$ALOG"); [ "$n" = "$n0" ] && break; n0=$n; sleep 0.1; done
		tail -n +"$(($1 + 1))" "$ALOG" | awk '{ n++; b += $2 } END { printf "%d %d\n", n, b }'
	}

	# ---- workloads: WORK MNT (a timeout on each, so that a hung mount cannot hang the bench) ----
	w_tree() { (set -o pipefail; timeout -k 10 "$TMO" tar -cf - -C "$1" . | cat >/dev/null); }
	w_lazy() { (cd "$1" && timeout -k 10 "$TMO" xargs -0 -a "$LIST" cat >/dev/null); }
	w_dd() { timeout -k 10 "$TMO" dd if="$1/$BIGF" of=/dev/null bs=4096 count=1 status=none; }
	# correctness, untimed, after the timed part (pages mostly cached by then)
	c_tree() { # round 1 only: it reads the whole tree again (mostly from the page cache)
		[ "$R" != 1 ] || [ "$(cd "$1" && find . -type f -print0 | LC_ALL=C sort -z | xargs -0 cat | sha256sum | cut -d' ' -f1)" = "$TREE_SHA" ]
	}
	c_lazy() { [ "$(cd "$1" && xargs -0 -a "$LIST" cat | sha256sum | cut -d' ' -f1)" = "$LAZY_SHA" ]; }
	c_dd() { cmp -s <(dd if="$1/$BIGF" bs=4096 count=1 status=none) <(dd if="$C/$BIGF" bs=4096 count=1 status=none); }

	# ---- stacks: run_STACK CASE -> R_SECS R_REQ R_BYTES (nginx) R_STATS (sqkfuse JSON) ----
	# A failure leaves R_SECS=FAIL and a line saying why.
	stack_fail() { R_SECS=FAIL; log "  $*"; }
	run_loop() {
		local w=$1 m=$M/kernel dl=$S/dl/image.sqsh mark t0 rc=0
		R_STATS=""; rm -f "$dl"; drop; mark=$(logmark)
		t0=$(now)
		if ! timeout -k 5 "$TMO" curl -sS --fail -o "$dl" "$URL" 2>>"$LOGS/curl.err"; then
			stack_fail "curl download failed: $(tail -n 1 "$LOGS/curl.err")"; return 1
		fi
		if ! mount -t squashfs -o loop,ro "$dl" "$m" 2>>"$LOGS/mount.err"; then
			stack_fail "loop mount failed: $(tail -n 1 "$LOGS/mount.err")"; rm -f "$dl"; return 1
		fi
		"w_$w" "$m" || rc=1
		R_SECS=$(since "$t0")
		[ "$rc" = 0 ] && { "c_$w" "$m" || { rc=2; stack_fail "curl+loop: $w read wrong data"; }; }
		[ "$rc" = 1 ] && stack_fail "curl+loop: $w workload failed"
		umount "$m" 2>/dev/null || umount -l "$m"
		rm -f "$dl"
		read -r R_REQ R_BYTES < <(served "$mark")
		return $rc
	}
	run_sqkfuse() {
		local w=$1 m=$M/sqkfuse d=$S/cache/sqkfuse st=$S/sqkfuse-stats.json mark t0 pid o rc=0
		R_STATS=""; rm -rf "$d" "$st"; mkdir -p "$d"; drop; mark=$(logmark)
		t0=$(now)
		if [ "$CACHE_OPT" = 1 ]; then o="cache_dir=$d,stats=$st"; else o="stats=$st"; fi
		# the laziness cases read purely lazily (no background fetch) where sqkfuse can
		[ "$w" = tree ] || [ "$NOBG" = 0 ] || o="$o,nobackground"
		# (XDG_CACHE_HOME: should -o cache_dir be ignored, the default cache is fresh too)
		XDG_CACHE_HOME=$d "$SQKFUSE" "$URL" "$m" -f -o "$o" 2>>"$LOGS/sqkfuse.err" &
		pid=$!; DAEMONS+=("$pid")
		if ! wait_mount "$m" "$pid"; then
			stack_fail "sqkfuse did not mount $URL (within ${MOUNT_TMO}s): $(tail -n 1 "$LOGS/sqkfuse.err")"
			unmount_wait "$m" "$pid"; return 1
		fi
		"w_$w" "$m" || rc=1
		R_SECS=$(since "$t0")
		[ "$rc" = 0 ] && { "c_$w" "$m" || { rc=2; stack_fail "sqkfuse: $w read wrong data"; }; }
		[ "$rc" = 1 ] && stack_fail "sqkfuse: $w workload failed: $(tail -n 1 "$LOGS/sqkfuse.err")"
		unmount_wait "$m" "$pid"
		read -r R_REQ R_BYTES < <(served "$mark")
		R_STATS=$(python3 -c '
import json, sys
try: d = json.load(open(sys.argv[1]))
except Exception: d = {}
print(" ".join(str(d.get(k, "n/a")) for k in ("http_requests", "http_bytes", "http_retries", "disk_cache_hits", "disk_cache_misses")))' "$st")
		rm -rf "$d"
		return $rc
	}
	run_rclone() {
		local w=$1 m2=$M/rclone m3=$M/sqfuse d=$S/cache/rclone mark t0 rpid spid rc=0
		R_STATS=""; rm -rf "$d"; mkdir -p "$d"; drop; mark=$(logmark)
		t0=$(now)
		rclone mount :http: "$m2" --http-url "http://127.0.0.1:$PORT/" --vfs-cache-mode full \
			--cache-dir "$d" --read-only --config "$S/rclone.conf" --log-file "$LOGS/rclone.log" \
			2>>"$LOGS/rclone.err" &
		rpid=$!; DAEMONS+=("$rpid")
		if ! wait_mount "$m2" "$rpid"; then
			stack_fail "rclone mount failed (within ${MOUNT_TMO}s): $(tail -n 1 "$LOGS/rclone.log" 2>/dev/null)"
			unmount_wait "$m2" "$rpid"; return 1
		fi
		"$SFLL" -f "$m2/image.sqsh" "$m3" 2>>"$LOGS/squashfuse.err" &
		spid=$!; DAEMONS+=("$spid")
		if ! wait_mount "$m3" "$spid"; then
			stack_fail "$SFLL_L on the rclone mount failed: $(tail -n 1 "$LOGS/squashfuse.err")"
			unmount_wait "$m3" "$spid"; unmount_wait "$m2" "$rpid"; return 1
		fi
		"w_$w" "$m3" || rc=1
		R_SECS=$(since "$t0")
		[ "$rc" = 0 ] && { "c_$w" "$m3" || { rc=2; stack_fail "rclone+$SFLL_L: $w read wrong data"; }; }
		[ "$rc" = 1 ] && stack_fail "rclone+$SFLL_L: $w workload failed"
		unmount_wait "$m3" "$spid"
		unmount_wait "$m2" "$rpid"
		read -r R_REQ R_BYTES < <(served "$mark")
		rm -rf "$d"
		return $rc
	}
	# one CASE STACK: run, append "secs requests bytes [sqkfuse stats]" to res/CASE.STACK
	one() {
		local c=$1 s=$2
		R_SECS=FAIL R_REQ=n/a R_BYTES=n/a R_STATS=""
		if "run_$s" "$c"; then :; else FAILED=1; fi
		echo "$R_SECS ${R_REQ:-n/a} ${R_BYTES:-n/a} $R_STATS" >>"$S/res/$c.$s"
		printf -v LINE '%s %s %ss (%s req, %s)' "$LINE" "$s" "$R_SECS" "${R_REQ:-n/a}" "$(mib "${R_BYTES:-n/a}")"
	}
	col() { awk -v c="$1" '$1 != "FAIL" { print $c }' "$S/res/$2" 2>/dev/null | median; }
	runs() { [ -s "$S/res/$1" ] && awk '{ print $1 }' "$S/res/$1" | tr '\n' ',' | sed 's/,$//' || echo n/a; }

	# ---- does sqkfuse read URLs yet, with -o cache_dir? ----
	# probe [OPTS]: mounts URL, stats the 4K-read file, unmounts; the reason of a failure in PROBE_ERR
	probe() {
		local pid ok=0
		mkdir -p "$S/cache/probe"
		XDG_CACHE_HOME=$S/cache/probe "$SQKFUSE" "$URL" "$M/probe" -f ${1:+-o "$1"} 2>"$LOGS/probe.err" &
		pid=$!; DAEMONS+=("$pid")
		if wait_mount "$M/probe" "$pid"; then
			timeout 60 stat "$M/probe/$BIGF" >/dev/null 2>&1 && ok=1 || PROBE_ERR="mounted, but stat of $BIGF failed"
		else
			PROBE_ERR=$(grep -v '^$' "$LOGS/probe.err" | head -n 2 | tr '\n' ' ')
			[ -n "$PROBE_ERR" ] || PROBE_ERR="no mount within ${MOUNT_TMO}s"
		fi
		unmount_wait "$M/probe" "$pid"
		rm -rf "$S/cache/probe"
		[ "$ok" = 1 ]
	}
	HAVE_URL=0 CACHE_OPT=1 PROBE_ERR="" NO_URL_WHY="" FAILED=0
	# built with URL support: its help says so; then a failure to mount is a failure, not "not yet"
	URL_BUILT=0; "$SQKFUSE" --help 2>&1 | grep -q 'cache_dir=' && URL_BUILT=1
	NOBG=0; "$SQKFUSE" --help 2>&1 | grep -q nobackground && NOBG=1
	if probe "cache_dir=$S/cache/probe"; then
		HAVE_URL=1
		log "sqkfuse mounts $URL with -o cache_dir$([ "$NOBG" = 1 ] && echo "; cases 2 and 4 with -o nobackground")"
	else
		NO_URL_WHY=$PROBE_ERR
		if [ "$URL_BUILT" = 0 ] && probe ""; then
			HAVE_URL=1 CACHE_OPT=0
			log "sqkfuse mounts $URL, but not with -o cache_dir ($NO_URL_WHY): measured WITHOUT the on-disk cache"
		elif [ "$URL_BUILT" = 1 ]; then
			FAILED=1
			log "FAILED: sqkfuse has URL support (its --help), but did not mount $URL: $NO_URL_WHY"
			log "the sqkfuse cases are reported as n/a; the baseline stacks are still measured"
		else
			log "sqkfuse has no URL support yet (no cache_dir in its --help): $NO_URL_WHY"
			log "the sqkfuse cases are reported as n/a; the baseline stacks are still measured"
		fi
	fi
	# sqk info --json URL and sqk cat --cache-dir URL PATH, untimed checks
	URL_INFO=n/a URL_CAT=n/a
	if timeout 120 "$SQK" info --json "$URL" >"$S/url-info.json" 2>"$LOGS/url-info.err"; then
		bu=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["bytes_used"])' "$S/url-info.json" 2>/dev/null)
		[ "$bu" = "$BYTES_USED" ] && URL_INFO=ok || URL_INFO="wrong bytes_used ($bu, image has $BYTES_USED)"
	else
		URL_INFO="fails: $(head -n 1 "$LOGS/url-info.err")"
	fi
	mkdir -p "$S/cache/cat"
	if timeout 300 "$SQK" cat --cache-dir "$S/cache/cat" "$URL" "$BIGF" >"$S/url-cat.out" 2>"$LOGS/url-cat.err"; then
		cmp -s "$S/url-cat.out" "$C/$BIGF" && URL_CAT=ok || URL_CAT="differs from the corpus file"
	else
		URL_CAT="fails: $(head -n 1 "$LOGS/url-cat.err")"
	fi
	rm -rf "$S/url-cat.out" "$S/cache/cat"
	log "sqk info --json URL: $URL_INFO; sqk cat --cache-dir DIR URL $BIGF: $URL_CAT"
	if [ "$URL_INFO/$URL_CAT" != ok/ok ] && "$SQK" cat --help 2>&1 | grep -q -- '--cache-dir'; then
		FAILED=1; log "FAILED: sqk has URL support (sqk cat --help), but the checks above did not pass"
	fi

	# ---- rounds ----
	SQ=(); [ "$HAVE_URL" = 1 ] && SQ=(sqkfuse)
	for R in $(seq "$ROUNDS"); do
		r=$R
		# rotate the order of the stacks from round to round
		case $((r % 3)) in
		1) order=("${SQ[@]}" loop rclone);; 2) order=(loop rclone "${SQ[@]}");; *) order=(rclone "${SQ[@]}" loop);;
		esac
		LINE="round $r/$ROUNDS tree:"
		for s in "${order[@]}"; do one tree "$s"; done
		log "$LINE"
		LINE="round $r/$ROUNDS lazy:"
		for s in "${order[@]}"; do [ "$s" = rclone ] || one lazy "$s"; done
		log "$LINE"
		LINE="round $r/$ROUNDS 4K read:"
		for s in "${order[@]}"; do [ "$s" = loop ] || one dd "$s"; done
		log "$LINE"
	done

	# ---- results ----
	T_SQ=$(col 1 tree.sqkfuse); T_LOOP=$(col 1 tree.loop); T_RC=$(col 1 tree.rclone)
	L_SQ=$(col 1 lazy.sqkfuse); L_LOOP=$(col 1 lazy.loop)
	D_BYTES=$(col 5 dd.sqkfuse); D_REQ=$(col 4 dd.sqkfuse)
	D_NGX_BYTES=$(col 3 dd.sqkfuse); D_NGX_REQ=$(col 2 dd.sqkfuse)
	D_RC_BYTES=$(col 3 dd.rclone); D_RC_REQ=$(col 2 dd.rclone)
	D_SQ_T=$(col 1 dd.sqkfuse); D_RC_T=$(col 1 dd.rclone)
	D_SRC="sqkfuse stats http_bytes"
	if [ "$D_BYTES" = n/a ] && [ "$D_NGX_BYTES" != n/a ]; then
		D_BYTES=$D_NGX_BYTES D_SRC="nginx's log: the sqkfuse stats have no http_bytes"
	fi
	LIMIT=$((2 * CHUNK + META))
	R1=$(ratio "$T_SQ" "$T_LOOP"); R2=$(ratio "$L_SQ" "$L_LOOP"); R3=$(ratio "$T_SQ" "$T_RC"); R4=$(ratio "$D_BYTES" "$LIMIT")
	x() { case $1 in n/a) echo n/a;; *) echo "${1}x";; esac; }
	echo
	echo "== squashkit remote bench (image $IMG_SIZE bytes over HTTP, RTT $RTT_MS ms by $DELAY_HOW, $ROUNDS rounds, medians, cold) =="
	local f='%-50s %10s %10s %7s  %s\n'
	printf "$f" test sqkfuse peer ratio goal
	printf "$f" "1 tree tar vs curl + loop mount (s)" "$T_SQ" "$T_LOOP" "$(x "$R1")" "<= 1.20x"
	printf "$f" "2 10% of files vs curl + loop mount (s)" "$L_SQ" "$L_LOOP" "$(x "$R2")" "<= 0.50x"
	printf "$f" "3 tree tar vs rclone + $SFLL_L (s)" "$T_SQ" "$T_RC" "$(x "$R3")" "<= 0.30x"
	printf "$f" "4 one cold 4K read, http_bytes vs limit" "$D_BYTES" "$LIMIT" "$(x "$R4")" "<= 1.00x"
	[ "$HAVE_URL" = 1 ] || echo "sqkfuse: no URL mount ($( [ "$URL_BUILT" = 1 ] && echo FAILED || echo 'not built yet'): $NO_URL_WHY): its columns are n/a"
	[ "$CACHE_OPT" = 1 ] || echo "sqkfuse: NO -o cache_dir support yet ($NO_URL_WHY): measured without the on-disk cache"
	echo "bytes of 4 from $D_SRC; limit: 2 integrity chunks of $CHUNK + metadata $META (inode_table_start $INODE_START .. bytes_used $BYTES_USED);" \
		"integrity data past bytes_used: $INTEG_BYTES bytes"
	echo "4K read of $BIGF ($(stat -c %s "$C/$BIGF") bytes): sqkfuse http_requests $D_REQ, nginx saw $D_NGX_REQ requests /" \
		"$D_NGX_BYTES bytes, $D_SQ_T s with the mount; rclone + $SFLL_L: $D_RC_REQ requests / $D_RC_BYTES bytes," \
		"$D_RC_T s; curl + loop: the whole image, $IMG_SIZE bytes"
	echo "served by nginx (median requests, bytes): tree: sqkfuse $(col 2 tree.sqkfuse) / $(mib "$(col 3 tree.sqkfuse)")," \
		"curl $(col 2 tree.loop) / $(mib "$(col 3 tree.loop)"), rclone $(col 2 tree.rclone) / $(mib "$(col 3 tree.rclone)");" \
		"lazy: sqkfuse $(col 2 lazy.sqkfuse) / $(mib "$(col 3 lazy.sqkfuse)"), curl $(col 2 lazy.loop) / $(mib "$(col 3 lazy.loop)")"
	if [ "$HAVE_URL" = 1 ]; then
		echo "sqkfuse stats (median http_requests http_bytes http_retries disk_cache_hits disk_cache_misses):" \
			"tree $(for c in 4 5 6 7 8; do col $c tree.sqkfuse; done | tr '\n' ' ')|" \
			"lazy $(for c in 4 5 6 7 8; do col $c lazy.sqkfuse; done | tr '\n' ' ')|" \
			"4K $(for c in 4 5 6 7 8; do col $c dd.sqkfuse; done | tr '\n' ' ')"
	fi
	echo "runs (s): tree curl+loop $(runs tree.loop), rclone $(runs tree.rclone), sqkfuse $(runs tree.sqkfuse);" \
		"lazy curl+loop $(runs lazy.loop), sqkfuse $(runs lazy.sqkfuse)"
	echo "sqk info --json URL: $URL_INFO; sqk cat --cache-dir DIR URL: $URL_CAT"
	echo
	echo "== summary =="
	printf '%-34s %-22s %-30s %8s %-9s %s\n' case sqkfuse peer ratio goal result
	printf '%-34s %-22s %-30s %8s %-9s %s\n' "1 full tree read (tar)" "$T_SQ s" "curl+loop $T_LOOP s" "$(x "$R1")" "<= 1.20x" "$(goal "$R1" 1.20)"
	printf '%-34s %-22s %-30s %8s %-9s %s\n' "2 lazy read of 10% of the files" "$L_SQ s" "curl+loop $L_LOOP s" "$(x "$R2")" "<= 0.50x" "$(goal "$R2" 0.50)"
	printf '%-34s %-22s %-30s %8s %-9s %s\n' "3 full tree, generic stack" "$T_SQ s" "rclone+sqfuse $SFLL_V $T_RC s" "$(x "$R3")" "<= 0.30x" "$(goal "$R3" 0.30)"
	printf '%-34s %-22s %-30s %8s %-9s %s\n' "4 bytes for one cold 4K read" "$D_BYTES B" "limit $LIMIT B" "$(x "$R4")" "<= 1.00x" "$(goal "$R4" 1.00)"
	[ "$FAILED" = 0 ] || { log "at least one run failed (see the lines above)"; exit 1; }
	exit 0
}

if [ "${1:-}" = --inner ]; then
	S=$2
	inner
	exit 2
fi

# ============================================================ outer part ===
START=$(now)
SQK=${SQK:-$HERE/../../build/bin/sqk}
SQKFUSE=$(dirname "$SQK")/sqkfuse
ROUNDS=${BENCH_ROUNDS:-3}
DELAY_MS=${BENCH_DELAY_MS:-10}
TMO=${BENCH_TIMEOUT:-1200}
MOUNT_TMO=60
PORT=8080
case $ROUNDS in ''|*[!0-9]*|0) die "BENCH_ROUNDS must be a positive integer (got '$ROUNDS')";; esac
case $DELAY_MS in ''|*[!0-9]*) die "BENCH_DELAY_MS must be an integer (got '$DELAY_MS')";; esac
[ "$(id -u)" = 0 ] || die "needs root (network namespace, mounts, drop_caches)"
[ -x "$SQK" ] && [ -x "$SQKFUSE" ] || die "build first (make)"
need() { # command package...
	command -v "$1" >/dev/null 2>&1 && return 0
	log "installing $*"
	shift
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null 2>&1 ||
		{ apt-get update -qq >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null 2>&1; }
}
. "$HERE/peers.sh"
peers_init "$HERE"
peers_pick squashfuse_ll
# Debian's squashfuse is the fallback: installed when neither it nor the anchor is there
[ -n "$(peer squashfuse_ll)" ] || { need squashfuse_ll squashfuse; peers_pick squashfuse_ll; }
SFLL=$(peer squashfuse_ll) SFLL_L=$(peer_label squashfuse_ll)
SFLL_V=${SFLL_L#squashfuse_ll }
[ -n "$SFLL" ] || die "squashfuse_ll missing"
log "peer: $(peers_summary)"
need nginx nginx-light; need rclone rclone; need fusermount3 fuse3
need ip iproute2; need tc iproute2; need curl curl; need python3 python3
for c in nginx rclone fusermount3 ip tc curl python3 timeout; do
	command -v "$c" >/dev/null 2>&1 || die "$c missing"
done
MADE_FUSERMOUNT=""
if ! command -v fusermount >/dev/null 2>&1; then
	# rclone 1.60 calls fusermount, Debian's fuse3 has fusermount3
	ln -s "$(command -v fusermount3)" /usr/local/bin/fusermount && MADE_FUSERMOUNT=/usr/local/bin/fusermount
fi

S=$(mktemp -d /var/tmp/sqk-bench-remote.XXXXXX) || die "mktemp failed"
# sqk and sqkfuse cache remote images under $XDG_CACHE_HOME/squashkit by default: never in ~/.cache
export XDG_CACHE_HOME=$S/xdg-cache
T=$S/tmpfs
NS=sqkbench$$
NS_MADE=0
PIDS=()
cleanup() {
	trap - EXIT INT TERM HUP
	# our processes: nginx, the delay helper, and whatever the inner shell left in the namespace
	if [ "$NS_MADE" = 1 ]; then
		for p in $(ip netns pids "$NS" 2>/dev/null) "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null; done
		for _ in $(seq 50); do [ -z "$(ip netns pids "$NS" 2>/dev/null)" ] && break; sleep 0.1; done
		for p in $(ip netns pids "$NS" 2>/dev/null); do kill -KILL "$p" 2>/dev/null; done
		ip netns del "$NS" 2>/dev/null
	fi
	for _ in $(seq 25); do mountpoint -q "$T" || break; umount "$T" 2>/dev/null && break; sleep 0.2; done
	mountpoint -q "$T" && umount -l "$T"
	[ -n "$MADE_FUSERMOUNT" ] && rm -f "$MADE_FUSERMOUNT"
	rm -rf "$S"
}
trap cleanup EXIT
trap 'exit 130' INT; trap 'exit 143' TERM; trap 'exit 129' HUP
mkdir -p "$T" "$S/logs" "$S/nginx/tmp"
mount -t tmpfs -o size=4g tmpfs "$T" || die "cannot mount tmpfs"
mkdir -p "$T/www"

# ---- corpus and image (the corpus of bench_read.sh) ----
if [ -n "${BENCH_CORPUS:-}" ]; then
	[ -d "$BENCH_CORPUS" ] || die "BENCH_CORPUS is not a directory: $BENCH_CORPUS"
	C=$(cd "$BENCH_CORPUS" && pwd)
else
	C=$S/corpus
	mkdir -p "$C"
	cp -a /usr/include "$C/include"
	cp -a /usr/share/doc "$C/doc"
	cp -a "$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["stdlib"])')" "$C/pylib"
fi
IMG=$T/www/image.sqsh
"$SQK" mkimage -q "$C" "$IMG" 2>"$S/logs/mkimage.err" || die "sqk mkimage failed: $(tail -n 1 "$S/logs/mkimage.err")"
IMG_SIZE=$(stat -c %s "$IMG")
read -r BYTES_USED INODE_START CHUNK < <("$SQK" info --json "$IMG" | python3 -c '
import json, sys
d = json.load(sys.stdin)
print(d["bytes_used"], d["tables"]["inode"], d.get("integrity_chunk_size") or 0)') ||
	die "sqk info --json of the image failed"
[ "$CHUNK" -gt 0 ] 2>/dev/null || die "the image has no integrity data (sqk mkimage default changed?)"
META=$((BYTES_USED - INODE_START))
INTEG_BYTES=$((IMG_SIZE - (BYTES_USED + 4095) / 4096 * 4096))
# every 10th regular file in sorted find order; the first file of >= 1 MiB (else the largest)
LIST=$S/lazy.list
(cd "$C" && find . -type f -print0 | LC_ALL=C sort -z | awk 'BEGIN { RS = ORS = "\0" } NR % 10 == 0') >"$LIST"
NLAZY=$(tr -cd '\0' <"$LIST" | wc -c)
[ "$NLAZY" -gt 0 ] || die "the corpus has fewer than 10 regular files"
LAZY_BYTES=$(cd "$C" && xargs -0 -a "$LIST" stat -c %s | awk '{ b += $1 } END { print b + 0 }')
LAZY_SHA=$(cd "$C" && xargs -0 -a "$LIST" cat | sha256sum | cut -d' ' -f1)
TREE_SHA=$(cd "$C" && find . -type f -print0 | LC_ALL=C sort -z | xargs -0 cat | sha256sum | cut -d' ' -f1)
BIGF=$(cd "$C" && find . -type f -size +1048575c -print0 | LC_ALL=C sort -z | head -z -n 1 | tr -d '\0')
if [ -z "$BIGF" ]; then
	BIGF=$(cd "$C" && find . -type f -printf '%s %p\n' | sort -k1,1nr -k2 | head -n 1 | cut -d' ' -f2-)
	log "no file of >= 1 MiB in the corpus: the 4K read uses the largest, $BIGF"
fi
BIGF=${BIGF#./}
log "image $IMG_SIZE bytes (bytes_used $BYTES_USED, metadata $META, integrity chunk $CHUNK);" \
	"corpus $C: $(find "$C" -type f | wc -l) files, lazy list $NLAZY files / $LAZY_BYTES bytes; 4K read of $BIGF"

# ---- network namespace, delay, nginx ----
ip netns add "$NS" || die "ip netns add failed"
NS_MADE=1
nsx() { ip netns exec "$NS" "$@"; }  # (a function: not for `&`, whose $! would be a subshell)
nsx ip link set lo up || die "cannot bring lo up in the namespace"
if nsx tc qdisc add dev lo root netem delay "${DELAY_MS}ms" 2>/dev/null ||
	{ modprobe sch_netem >/dev/null 2>&1 && nsx tc qdisc add dev lo root netem delay "${DELAY_MS}ms" 2>/dev/null; }; then
	DELAY_HOW="netem delay ${DELAY_MS}ms on lo"
else
	log "this kernel has no netem qdisc: delaying lo packets by ${DELAY_MS} ms through NFQUEUE instead"
	need iptables iptables
	command -v iptables >/dev/null 2>&1 || die "no netem and no iptables: cannot add delay"
	ip netns exec "$NS" python3 "$NETDELAY" 0 "$DELAY_MS" "$S/delay.ready" $$ 2>"$S/logs/delay.err" &
	PIDS+=($!); DELAY_PID=$!
	for _ in $(seq 100); do [ -e "$S/delay.ready" ] && break; kill -0 "$DELAY_PID" 2>/dev/null || break; sleep 0.1; done
	[ -e "$S/delay.ready" ] || die "the NFQUEUE delay helper did not start: $(tail -n 1 "$S/logs/delay.err")"
	# the receive side of lo: the sender's socket no longer owns the packet (TCP small queues
	# would otherwise throttle it, which netem avoids the same way)
	nsx iptables -t raw -A PREROUTING -i lo -j NFQUEUE --queue-num 0 --queue-bypass 2>"$S/logs/iptables.err" ||
		nsx iptables-legacy -t raw -A PREROUTING -i lo -j NFQUEUE --queue-num 0 --queue-bypass 2>>"$S/logs/iptables.err" ||
		die "iptables NFQUEUE rule failed: $(tail -n 1 "$S/logs/iptables.err")"
	DELAY_HOW="NFQUEUE ${DELAY_MS}ms each way (no netem in this kernel)"
fi
cat >"$S/nginx/nginx.conf" <<EOF
user root;
worker_processes 1;
pid $S/nginx/nginx.pid;
error_log $S/nginx/error.log;
events { worker_connections 1024; }
http {
	types { application/octet-stream sqsh; }
	default_type application/octet-stream;
	log_format bench '\$status \$body_bytes_sent \$request_method "\$http_range" \$request_time';
	access_log $S/nginx/access.log bench;
	sendfile on;
	tcp_nopush on;
	keepalive_timeout 75s;
	keepalive_requests 1000000;
	client_body_temp_path $S/nginx/tmp/body;
	proxy_temp_path $S/nginx/tmp/proxy;
	fastcgi_temp_path $S/nginx/tmp/fastcgi;
	uwsgi_temp_path $S/nginx/tmp/uwsgi;
	scgi_temp_path $S/nginx/tmp/scgi;
	server {
		listen 127.0.0.1:$PORT;
		root $T/www;
		autoindex on;
	}
}
EOF
: >"$S/nginx/access.log"
ip netns exec "$NS" nginx -p "$S/nginx" -e "$S/nginx/error.log" -c "$S/nginx/nginx.conf" -g 'daemon off;' 2>"$S/logs/nginx.err" &
PIDS+=($!); NGINX_PID=$!
URL=http://127.0.0.1:$PORT/image.sqsh
ok=0
for _ in $(seq 100); do
	nsx curl -s -o /dev/null -r 0-0 --max-time 5 "$URL" && { ok=1; break; }
	kill -0 "$NGINX_PID" 2>/dev/null || break
	sleep 0.1
done
[ "$ok" = 1 ] || die "nginx did not come up: $(cat "$S/logs/nginx.err" "$S/nginx/error.log" 2>/dev/null | tail -n 2)"
# RTT: TCP connect time, median of 5
RTT_MS=$(for _ in 1 2 3 4 5; do nsx curl -s -o /dev/null -r 0-0 -w '%{time_connect}\n' "$URL"; done |
	median | awk '{ printf "%.1f", $1 * 1000 }')
log "nginx on $URL inside namespace $NS; RTT $RTT_MS ms (TCP connect) with $DELAY_HOW"
awk -v r="$RTT_MS" -v d="$DELAY_MS" 'BEGIN { exit !(r < 1.5 * d || r > 3 * d) }' &&
	log "WARNING: measured RTT $RTT_MS ms, expected about $((2 * DELAY_MS)) ms"
: >"$S/rclone.conf"
: >"$S/nginx/access.log.start"

declare -p SQK SQKFUSE SFLL SFLL_L SFLL_V ROUNDS TMO MOUNT_TMO PORT URL C LIST NLAZY LAZY_SHA TREE_SHA BIGF IMG_SIZE BYTES_USED \
	INODE_START CHUNK META INTEG_BYTES DELAY_HOW RTT_MS >"$S/vars"
# in the background: `wait` returns on a signal, so that the traps run at once
ip netns exec "$NS" bash "$SELF" --inner "$S" &
wait $!
rc=$?
if [ "$rc" != 0 ]; then
	KEEP=$(mktemp -d /var/tmp/sqk-bench-remote-logs.XXXXXX) &&
		cp -a "$S/logs" "$S/nginx/access.log" "$S/nginx/error.log" "$KEEP/" 2>/dev/null &&
		log "logs kept in $KEEP"
fi
[ -n "${DELAY_PID:-}" ] && log "NFQUEUE delay helper used $(awk '{ printf "%.1f", ($14 + $15) / '"$(getconf CLK_TCK)"' }' "/proc/$DELAY_PID/stat" 2>/dev/null) CPU s"
log "whole run took $(since "$START") s"
exit $rc
