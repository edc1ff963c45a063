#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# A remote image over a slow link: a network namespace of its own whose loopback delays every
# packet by 10 ms (20 ms round trips), with nginx and sqkfuse inside it. The rich tree
# mounted from the URL is identical to the source, cold (every chunk fetched) and warm (the
# same cache_dir: far fewer bytes fetched); sqk ls -lR / cat / extract inside the namespace give
# the local results. The delay comes from ns_add_delay (lib.sh): netem where the kernel has it,
# else NFQUEUE with tests/netdelay.py. Skips when network namespaces are not available or
# neither way of delaying works; SQK_IT_NETEM_OPTIONAL=1 runs it without the delay instead. The
# namespace, the iptables rule and the delay helper are always removed.
# sqkfuse enters only the namespace's network (nsenter --net): `ip netns exec` would also give
# it a private mount namespace, where its mount is invisible to this test.
. "$(dirname "$0")/lib.sh"
need_root
need_sqk
need_feature remote
need_cmd ip nsenter python3 curl fusermount3 mountpoint
[ -e /dev/fuse ] || skip "no /dev/fuse"
SQKFUSE_REAL=${SQKFUSE:-$(dirname "$SQK")/sqkfuse}
[ -x "$SQKFUSE_REAL" ] || fail "sqkfuse not found at $SQKFUSE_REAL"
export XDG_CACHE_HOME=$TMP/xdg-cache
W=$(scratch netem)

NS=sqk-$$
ip netns add "$NS" 2>"$TMP/netns.err" || skip "cannot create a network namespace: $(cat "$TMP/netns.err")"
at_exit "ip netns del $NS 2>/dev/null"
NSPATH=/run/netns/$NS
[ -e "$NSPATH" ] || NSPATH=/var/run/netns/$NS
[ -e "$NSPATH" ] || fail "ip netns add made no $NSPATH"
IN_NS="ip netns exec $NS"
# `ip netns exec` remounts /sys, which a chroot or a restricted container refuses: that machine
# lacks the namespace this test needs (a skip with the reason, not a failure).
$IN_NS true 2>"$TMP/netns.err" || skip "cannot run in a network namespace: $(cat "$TMP/netns.err")"
$IN_NS ip link set lo up 2>"$TMP/netns.err" ||
	skip "cannot bring up lo in a network namespace: $(cat "$TMP/netns.err")"
NETEM=1
if ns_add_delay "$NS" 10; then
	info "delay: $NS_DELAY_DESC"
else
	[ -n "${SQK_IT_NETEM_OPTIONAL:-}" ] || skip "cannot delay packets in a namespace: $NS_DELAY_WHY"
	NETEM=0
	info "no delay ($NS_DELAY_WHY); running without it (SQK_IT_NETEM_OPTIONAL)"
fi

$MKTREE "$W/src" || fail "mktree failed"
mkdir -p "$W/www"
sqk_build -q "$W/src" "$W/www/img.sqsh"
LOCAL=$W/www/img.sqsh
SIZE=$(stat -c %s "$LOCAL")
NETNS_EXEC=$IN_NS http_serve "$W/www"
URL=$HTTP_URL/img.sqsh
curl -s -o /dev/null --max-time 2 "$URL" && info "note: something outside the namespace answers on port $HTTP_PORT too"

# the round trip inside the namespace: a TCP connect takes one
rtt=$($IN_NS curl -s -o /dev/null -w '%{time_connect}' "$HTTP_URL/")
info "nginx in $NS at $HTTP_URL; TCP connect ${rtt}s"
if [ $NETEM = 1 ]; then
	python3 -c "import sys; sys.exit(0 if $rtt >= 0.018 else 1)" || fail "no 20 ms round trip in $NS (connect took ${rtt}s)"
fi

# ns_sqk NAME ARGS...: run_capture of `sqk ARGS` in the namespace, within 300 s, must exit 0.
ns_sqk() {
	local name=$1 t0
	shift
	t0=$(date +%s%N)
	run_capture "$name" timeout 300 $IN_NS "$SQK" "$@"
	SECS=$(python3 -c "print(round(($(date +%s%N) - $t0) / 1e9, 2))")
	[ "$RC" = 0 ] || { show_err; fail "sqk $* in $NS exited $RC"; }
}
stat_get() {
	python3 -c 'import json, sys; print(int(json.load(open(sys.argv[1]))[sys.argv[2]]))' "$1" "$2" ||
		fail "no count $2 in $1"
}

ns_sqk probe ls "$URL"
ns_sqk ls ls -l -R "$URL"
cmp -s "$OUT_FILE" <("$SQK" ls -l -R "$LOCAL") || fail "sqk ls -lR in $NS differs"
info "sqk ls -lR: identical (${SECS}s)"
mark=$(http_log_mark)
ns_sqk cat cat --cache-size 0 "$URL" files/random_4m files/text_3m
cmp -s "$OUT_FILE" <(cat "$W/src/files/random_4m" "$W/src/files/text_3m") || fail "sqk cat in $NS: wrong bytes"
info "sqk cat of 7 MiB, cold: ${SECS}s, nginx served $(http_log_bytes "$mark" | awk '{ print $1 " requests, " $2 " bytes" }')"
ns_sqk extract extract --cache-size 0 "$URL" "$W/x"
tree_equal "sqk extract in $NS (${SECS}s)" "$W/src" "$W/x"
rm -rf "$W/x"

# sqkfuse in the namespace's network, mounted in ours
cat >"$TMP/sqkfuse-ns" <<EOF
#!/bin/sh
exec nsenter --net=$NSPATH "$SQKFUSE_REAL" "\$@"
EOF
chmod +x "$TMP/sqkfuse-ns"
SQKFUSE=$TMP/sqkfuse-ns
C=$W/cache
for run in cold warm; do
	t0=$(date +%s%N)
	fuse_mount "$URL" "$W/m" -o "cache_dir=$C,stats=$W/$run.json"
	[ "$(readlink "/proc/$FUSE_PID/ns/net")" = "$(readlink "/proc/$$/ns/net")" ] &&
		fail "sqkfuse runs in this test's network namespace, not in $NS"
	tree_equal "sqkfuse in $NS, $run" "$W/src" "$W/m"
	fuse_umount "$W/m"
	info "$run: $(python3 -c "print(round(($(date +%s%N) - $t0) / 1e9, 2))")s; $(stat_get "$W/$run.json" http_requests) requests, $(stat_get "$W/$run.json" http_bytes) bytes, $(stat_get "$W/$run.json" disk_cache_hits) disk-cache hits"
done
cold=$(stat_get "$W/cold.json" http_bytes)
warm=$(stat_get "$W/warm.json" http_bytes)
# each chunk once; the open's tail request (the last 64 KiB, not chunk-aligned) may overlap one
[ "$cold" -le $((SIZE + 65536)) ] || fail "the cold mount fetched $cold bytes for a $SIZE-byte image"
[ "$(stat_get "$W/cold.json" http_retries)" = 0 ] || fail "retries on a slow but healthy link"
[ $((warm * 4)) -le "$cold" ] || fail "the warm mount fetched $warm bytes, the cold one $cold"
[ "$(stat_get "$W/warm.json" disk_cache_hits)" -gt 0 ] || fail "the warm mount had no disk-cache hits"
exit 0
