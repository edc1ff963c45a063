#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# A crafted image whose directories form a DAG: at each of 40 levels, the entries `a` and `b`
# name the same child directory, so a walk that only checks for loops on its way down lists
# 2^40 paths. Every reader walk (ls -R, tar, extract, verify) must stop at the second visit
# with a message naming it, quickly; info (which counts each inode once) must finish quickly. The image comes from mksquashfs (uncompressed
# metadata, -noI) with each `b` entry patched to point at its sibling `a`.
. "$(dirname "$0")/lib.sh"
need_sqk
need_cmd python3 mksquashfs timeout
W=$(scratch dag)

d=$W/src
for _ in $(seq 1 40); do
	mkdir -p "$d/a" "$d/b"
	d=$d/a
done
mksquashfs "$W/src" "$W/dag.sqsh" -noI -noD -noF -noX -no-xattrs -quiet -no-progress >/dev/null 2>&1 ||
	fail "mksquashfs failed"
python3 - "$W/dag.sqsh" "$W/bad.sqsh" <<'PY' || fail "cannot patch the image"
import re, sys
data = bytearray(open(sys.argv[1], 'rb').read())
# directory entries: u16 offset, s16 inode delta, u16 type (1 = dir), u16 name_size - 1, name
pat = re.compile(rb'(....)\x01\x00\x00\x00a(....)\x01\x00\x00\x00b', re.S)
n = 0
for m in list(pat.finditer(data)):
    data[m.start(2):m.end(2)] = m.group(1)
    n += 1
assert n >= 39, n
open(sys.argv[2], 'wb').write(data)
PY
# the unpatched image lists 80 directories
n=$(timeout 20 "$SQK" ls -R "$W/dag.sqsh" | wc -l)
[ "$n" = 80 ] || fail "sqk ls -R of the good image: $n lines, expected 80"

for cmd in "ls -R" tar "extract" verify info; do
	case $cmd in
	extract) set -- extract "$W/bad.sqsh" "$W/x" ;;
	*) set -- $cmd "$W/bad.sqsh" ;;
	esac
	timeout 20 "$SQK" "$@" >"$W/out" 2>"$W/err"
	rc=$?
	[ "$rc" != 124 ] || fail "sqk $cmd of the DAG image did not finish in 20 s"
	[ "$cmd" != info ] || { [ "$rc" -lt 128 ] || fail "sqk info died (exit $rc)"; continue; }
	[ "$rc" != 0 ] || { cat "$W/err" >&2; fail "sqk $cmd of the DAG image exited 0"; }
	[ "$rc" -lt 128 ] || fail "sqk $cmd of the DAG image died (exit $rc)"
	lines=$(wc -l <"$W/out")
	[ "$lines" -le 200 ] || fail "sqk $cmd of the DAG image printed $lines lines"
	grep -qiE "twice|second name" "$W/err" "$W/out" ||
		{ cat "$W/err" >&2; fail "sqk $cmd: no message naming the second visit"; }
done
info "a directory reached under two names stops every walk (ls -R, tar, extract, verify); info finishes"
