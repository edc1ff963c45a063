#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# An interrupted append leaves the old image as it was (issue 31, point 1): `sqk mkimage SOURCE
# IMAGE` appending to an existing IMAGE is killed (SIGKILL, and SIGINT) at several points of
# its run (while the old data is copied, while new files are compressed, while the tables are
# written); each time IMAGE is byte-identical to what it was (cmp) and its directory holds
# nothing else (no temporary, no recovery file). SIGINT ends with exit 130 and a message that
# says the old image is unchanged. The same append left alone completes, keeping the old
# entries and adding the new ones.
. "$(dirname "$0")/lib.sh"
need_root
need_sqk
need_cmd python3 cmp timeout

W=$(scratch kill)
OLD=$W/old NEW=$W/new
mkdir -p "$OLD/many" "$NEW/many"
# incompressible data (gzip is slow on it: the run lasts long enough to be hit), many files
for i in 1 2 3 4 5 6; do head -c $((6 << 20)) /dev/urandom >"$OLD/big$i"; done
for i in 1 2 3 4 5 6; do head -c $((6 << 20)) /dev/urandom >"$NEW/big$i"; done
python3 - "$OLD/many" "$NEW/many" <<'EOF'
import os, sys
for d in sys.argv[1:]:
    for i in range(3000):
        with open(os.path.join(d, 'f%04d' % i), 'wb') as f:
            f.write(os.urandom(100 + i % 700))
EOF
mkdir -p "$W/img"
IMG=$W/img/img.sqsh
sqk_build -q -comp gzip "$OLD" "$IMG"
cp "$IMG" "$W/orig.sqsh"

# state: the image directory as it must be after every interrupted run
# state_ok WHAT: the old image byte-identical, or (a kill that came after the rename, the
# append complete) the whole appended image, then put back; nothing else in the directory
state_ok() {
	[ "$(ls -A "$W/img")" = img.sqsh ] || fail "$1: the directory holds $(ls -A "$W/img")"
	cmp -s "$IMG" "$W/orig.sqsh" && return 0
	"$SQK" verify "$IMG" >/dev/null 2>&1 && "$SQK" ls "$IMG" | grep -qx many_1 ||
		fail "$1: the old image changed and is not the whole appended image"
	info "$1: the kill came after the rename: the image is the whole appended one"
	cp "$W/orig.sqsh" "$IMG"
}

# The time of an append left alone (on a copy), to spread the kills over it.
cp "$IMG" "$W/copy.sqsh"
t0=$(date +%s.%N)
"$SQK" mkimage -q "$NEW" "$W/copy.sqsh" || fail "the append of the copy failed"
t1=$(date +%s.%N)
T=$(python3 -c "print($t1 - $t0)")
info "an append takes ${T}s"
rm -f "$W/copy.sqsh"

# kill_at SIG FRACTION: starts the append, sends SIG after FRACTION of T; prints the exit code
# (the append must still have been running: a run that finished first is retried sooner).
kill_at() {
	local sig=$1 frac=$2 try pid rc delay
	for try in 1 2 3 4; do
		delay=$(python3 -c "print($T * $frac / $try)")
		"$SQK" mkimage -q "$NEW" "$IMG" 2>"$TMP/kill.err" &
		pid=$!
		sleep "$delay"
		if kill -s "$sig" "$pid" 2>/dev/null; then
			rc=0
			wait "$pid" || rc=$?
			# the signal landed before the end: the exit status says so
			if [ "$rc" != 0 ]; then
				echo "$rc"
				return 0
			fi
		else
			wait "$pid" || true
		fi
		# finished first: the image was appended to; put the old one back
		cp "$W/orig.sqsh" "$IMG"
	done
	fail "SIG$sig at $frac of ${T}s: the append always finished first"
}

for frac in 0.02 0.1 0.25 0.45 0.65 0.85 0.97; do
	rc=$(kill_at KILL "$frac")
	[ "$rc" = 137 ] || fail "SIGKILL at $frac: exit $rc"
	state_ok "SIGKILL at $frac of the run"
	info "SIGKILL at $frac of the run: old image byte-identical, no stray file"
done
for frac in 0.1 0.5 0.9; do
	rc=$(kill_at INT "$frac")
	[ "$rc" = 130 ] || fail "SIGINT at $frac: exit $rc, expected 130"
	grep -q "interrupted by Interrupt; the old image is unchanged" "$TMP/kill.err" ||
		fail "SIGINT at $frac: $(cat "$TMP/kill.err")"
	state_ok "SIGINT at $frac of the run"
	info "SIGINT at $frac of the run: exit 130, old image byte-identical, no stray file"
done

# left alone, the append completes: old and new entries, the new ones renamed where they clash
sqk_build "$NEW" "$IMG"
grep -q "appended to $IMG: 3007 entries kept, 3007 added" "$TMP/build.out" ||
	fail "the append did not complete: $(cat "$TMP/build.out")"
"$SQK" ls "$IMG" >"$TMP/ls.out" || fail "sqk ls of the appended image failed"
for n in big1 big1_1 many many_1; do
	grep -qx "$n" "$TMP/ls.out" || fail "'$n' is not in the appended image"
done
"$SQK" verify "$IMG" >/dev/null || fail "sqk verify of the appended image failed"
info "the append left alone: 3007 entries kept, 3007 added, verified"
