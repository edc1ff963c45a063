#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# A signal during `sqk extract` and `sqk verify` (issue 31, point 7).
#  1. SIGINT, then SIGTERM, while extract writes a big file (one thread): exit 130 / 143; one
#     line names the file and "removed the partial file DEST/...", then one says how many files
#     were extracted into DEST "before SIGINT stopped it" and that DEST is incomplete; no
#     partial or temporary file is left: every file in DEST is whole (cmp with the source);
#     DEST has its mode back (not the 0700 of the extraction)
#  2. the same under -f, replacing older files: the file being written is not renamed over
#     the old one, which is kept as it was
#  3. SIGINT and SIGTERM during verify: exit 32 (fsck's "cancelled"), a line saying the check
#     was interrupted and is incomplete
. "$(dirname "$0")/lib.sh"
need_sqk
need_cmd python3 cmp
W=$(scratch xsig)

# Two 60 MB text files in xz: a one-thread extraction takes seconds, verify too.
mkdir -p "$W/src"
python3 - "$W/src" <<'PY'
import random, sys
r = random.Random(57)
words = [b'%x' % r.getrandbits(20) for _ in range(5000)]
for n in ('a.txt', 'b.txt'):
    with open(sys.argv[1] + '/' + n, 'wb') as f:
        for k in range(150):
            f.write(b' '.join(r.choice(words) for _ in range(60000)) + b'\n')
PY
echo small >"$W/src/0small"
chmod 750 "$W/src"
sqk_build -q -c xz -l 1 "$W/src" "$W/big.sqsh"

# "${DFL[@]}" CMD...: CMD with SIGINT's default action (a background job of a script ignores
# it, as a command a user interrupts on a terminal does not); a simple command, so that $! is
# CMD's process
DFL=(python3 -c 'import os, signal, sys
signal.signal(signal.SIGINT, signal.SIG_DFL)
os.execvp(sys.argv[1], sys.argv[1:])')

# blocked PID: waits (up to 5 s) until PID is sqk and blocks SIGINT, as its signal thread makes
# it do once it runs: a signal before that would find bash (which blocks SIGINT while it forks)
# or python, not sqk
blocked() {
	local i m
	for i in $(seq 1 250); do
		m=$(sed -n 's/^SigBlk:[[:space:]]*//p' "/proc/$1/status" 2>/dev/null)
		[ "$(cat "/proc/$1/comm" 2>/dev/null)" = "$(basename "$SQK")" ] && [ -n "$m" ] &&
			(((0x$m & 2) != 0)) && return 0
		sleep 0.02
	done
}

# stop SIG DEST [extract options]: starts extract, sends SIG once a big file is being written
stop() {
	local sig=$1 dest=$2 i
	shift 2
	"${DFL[@]}" "$SQK" extract --no-progress -j 1 "$@" "$W/big.sqsh" "$dest" >"$W/x.out" 2>"$W/x.err" &
	local pid=$!
	for i in $(seq 1 400); do
		find "$dest" -name 'a.txt' -size +1k -o -name '.sqk-partial*' -size +1k 2>/dev/null |
			grep -q . && break
		sleep 0.02
	done
	kill -"$sig" "$pid" 2>/dev/null || fail "$sig: extract ended before the signal"
	RC=0
	wait "$pid" || RC=$?
}

# whole DEST: every regular file in DEST is the source's (none partial, no temporary name)
whole() {
	local f rel
	while IFS= read -r f; do
		rel=${f#"$1"/}
		case $rel in .sqk-partial*) fail "a temporary file left: $rel" ;; esac
		cmp -s "$f" "$W/src/$rel" || fail "$rel in $1 is not the source's (partial?)"
	done < <(find "$1" -type f)
}

for sig in INT TERM; do
	want=$((128 + $(kill -l "$sig")))
	D=$W/out.$sig
	stop "$sig" "$D"
	[ "$RC" = "$want" ] || { cat "$W/x.err" >&2; fail "SIG$sig: exit $RC, not $want"; }
	# the file being written: a.txt, or b.txt on a machine fast enough to finish a.txt first
	f=$(sed -n 's|.*: /\([ab]\.txt\): stopped by a signal: removed the partial file .*|\1|p' \
		"$W/x.err")
	[ -n "$f" ] && grep -q "/$f: stopped by a signal: removed the partial file $D/$f\$" \
		"$W/x.err" &&
		grep -q "extracted [0-9]* of 3 files into $D before SIG$sig stopped it (1 partial file removed); $D is incomplete" "$W/x.err" ||
		{ cat "$W/x.err" >&2; fail "SIG$sig: not the messages"; }
	[ "$(wc -l <"$W/x.err")" = 2 ] || { cat "$W/x.err" >&2; fail "SIG$sig: not two lines"; }
	[ ! -e "$D/$f" ] || fail "SIG$sig: $f left"
	whole "$D"
	[ "$(stat -c %a "$D")" = 750 ] || fail "SIG$sig: DEST's mode is $(stat -c %a "$D")"
	info "SIG$sig: exit $want, the partial $f removed, $(find "$D" -type f | wc -l) whole files, the message names DEST"
done

# -f over older files: the one being written stays as it was
D=$W/out.force
mkdir -p "$D"
echo old-a >"$D/a.txt"
echo old-b >"$D/b.txt"
stop INT "$D" -f
[ "$RC" = 130 ] || { cat "$W/x.err" >&2; fail "-f: exit $RC"; }
f=$(sed -n 's|.*: /\([ab]\.txt\): stopped by a signal: removed the partial file; .*|\1|p' \
	"$W/x.err")
[ -n "$f" ] && grep -q "/$f: stopped by a signal: removed the partial file; $D/$f is kept as it was" \
	"$W/x.err" || { cat "$W/x.err" >&2; fail "-f: not the message"; }
[ "$(cat "$D/$f")" = "old-${f%.txt}" ] || fail "-f: the older $f changed"
for g in a.txt b.txt; do # the other: the older one, or the image's, whole
	[ "$g" = "$f" ] || [ "$(cat "$D/$g")" = "old-${g%.txt}" ] || cmp -s "$D/$g" "$W/src/$g" ||
		fail "-f: $g is neither the older one nor the image's"
done
[ -z "$(find "$D" -name '.sqk-partial*')" ] || fail "-f: a temporary file left"
info "-f: SIGINT leaves the older $f as it was"

for sig in INT TERM; do
	"${DFL[@]}" "$SQK" verify --no-progress -j 1 "$W/big.sqsh" >"$W/v.out" 2>"$W/v.err" &
	pid=$!
	blocked "$pid"
	sleep 0.2
	kill -"$sig" "$pid" 2>/dev/null || fail "verify ended before SIG$sig"
	RC=0
	wait "$pid" || RC=$?
	[ "$RC" = 32 ] && grep -qx "sqk verify: $W/big.sqsh: the check was interrupted by SIG$sig and is incomplete (exit 32)" "$W/v.err" ||
		{ cat "$W/v.err" >&2; fail "verify, SIG$sig: exit $RC"; }
	! grep -q clean "$W/v.out" || fail "verify, SIG$sig: says clean"
	info "verify, SIG$sig: exit 32, 'the check was interrupted ... and is incomplete'"
done
"$SQK" verify --help | grep -q "32 interrupted" || fail "verify --help does not document 32"
"$SQK" extract --help | grep -q "130 SIGINT, 143 SIGTERM" || fail "extract --help: no codes"
