#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Integration suite driver: runs every tests/integration/t_*.sh in name order with bash.
#
#   SQK=/abs/build/bin/sqk [SQK_SAN=/abs/build/san/bin/sqk] [SQK_TSAN=/abs/build/tsan/bin/sqk] \
#     sh tests/integration/run.sh [PATTERN...]
#
# Each test gets SQK, SQK_SAN and TMP (a private scratch directory on a filesystem with
# user./trusted. xattrs and sparse files, removed afterwards unless KEEP=1). A test passes with
# exit 0, skips with exit 77 after printing "skipped: WHY", and fails otherwise. Optional PATTERN
# arguments select tests by substring (e.g. `run.sh t_30`). Ends with one summary line
#   integration: N passed, N failed, N skipped
# and exits non-zero when any test failed or when none ran (all skipped, or no name matched).
# Logs of failed tests are printed (last 60 lines);
# VERBOSE=1 prints the logs of passing tests too.

DIR=$(cd "$(dirname "$0")" && pwd)
: "${SQK:=}"
: "${SQK_SAN:=}"
: "${SQK_TSAN:=}"
export SQK SQK_SAN SQK_TSAN

pass=0 failn=0 skipn=0
failed_names=""

# Pick a scratch base with working trusted./user. xattrs (not tmpfs on older kernels).
pick_base() {
	for b in ${SQK_IT_TMPDIR:-} /var/tmp /tmp "$DIR/../../build"; do
		[ -d "$b" ] && [ -w "$b" ] || continue
		t=$(mktemp -d "$b/sqk-it.XXXXXX" 2>/dev/null) || continue
		if python3 - "$t" <<'EOF' 2>/dev/null; then
import os, sys
p = os.path.join(sys.argv[1], 'x')
open(p, 'w').close()
os.setxattr(p, 'user.t', b'1')
if os.getuid() == 0:
    os.setxattr(p, 'trusted.t', b'1')
with open(p, 'r+b') as f:
    f.truncate(1 << 30)
assert os.stat(p).st_blocks < 64
EOF
			echo "$t"
			return 0
		fi
		rm -rf "$t"
	done
	return 1
}

BASE=$(pick_base) || {
	echo "integration: no scratch filesystem with xattrs and sparse files found" >&2
	BASE=$(mktemp -d /tmp/sqk-it.XXXXXX)
}
chmod 755 "$BASE"
cleanup_base() {
	if [ -z "${KEEP:-}" ]; then
		rm -rf "$BASE"
	else
		echo "integration: scratch kept in $BASE"
	fi
}
trap cleanup_base EXIT
trap 'exit 130' INT TERM

if [ -z "$SQK" ]; then
	echo "integration: SQK is not set (path to the sqk binary)" >&2
fi
if [ "$(id -u)" != 0 ]; then
	echo "integration: not running as root; tests that need root or loop mounts will skip"
fi
echo "integration: SQK=$SQK SQK_SAN=${SQK_SAN:-<unset>} SQK_TSAN=${SQK_TSAN:-<unset>} scratch=$BASE"

for t in "$DIR"/t_*.sh; do
	[ -e "$t" ] || continue
	name=$(basename "$t" .sh)
	if [ $# -gt 0 ]; then
		sel=0
		for p in "$@"; do
			case $name in *"$p"*) sel=1 ;; esac
		done
		[ $sel = 1 ] || continue
	fi
	tdir="$BASE/$name"
	mkdir -p "$tdir" && chmod 755 "$tdir"
	log="$BASE/$name.log"
	start=$(date +%s)
	TMP="$tdir" bash "$t" >"$log" 2>&1 </dev/null
	rc=$?
	secs=$(( $(date +%s) - start ))
	if [ $rc = 0 ]; then
		pass=$((pass + 1))
		echo "PASS $name (${secs}s)"
		[ -n "${VERBOSE:-}" ] && sed 's/^/  | /' "$log"
	elif [ $rc = 77 ]; then
		skipn=$((skipn + 1))
		why=$(sed -n 's/^skipped: //p' "$log" | tail -n 1)
		echo "SKIP $name: ${why:-no reason given}"
	else
		failn=$((failn + 1))
		failed_names="$failed_names $name"
		why=$(grep -E '^FAIL: ' "$log" | tail -n 1 | sed 's/^FAIL: //')
		echo "FAIL $name (exit $rc, ${secs}s): ${why:-see log}"
		echo "---- last lines of $name log ----"
		tail -n 60 "$log" | sed 's/^/  | /'
		echo "----"
	fi
	# a test must not leave mounts behind
	if grep -q " $tdir" /proc/mounts 2>/dev/null; then
		echo "WARN $name left mounts under $tdir; unmounting"
		grep " $tdir" /proc/mounts | awk '{print $2}' | sort -r | while read -r m; do
			umount "$m" 2>/dev/null || umount -l "$m"
		done
	fi
	rm -rf "$tdir"
done

echo "integration: $pass passed, $failn failed, $skipn skipped"
[ $failn = 0 ] || exit 1
# a run that executed nothing proved nothing (every test skipped, or a pattern matched none)
if [ $pass = 0 ]; then
	echo "integration: no test ran" >&2
	exit 1
fi
# under CI, a skipped test is a missing install step or a missing kernel feature: say so loudly
if [ $skipn != 0 ] && [ -n "${CI:-}" ]; then
	echo "integration: $skipn test(s) skipped under CI (see the SKIP lines above)"
fi
exit 0
