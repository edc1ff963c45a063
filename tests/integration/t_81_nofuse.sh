#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# Without libfuse3 (HAVE_FUSE=0, as on a machine without libfuse3-dev): sqk builds and every
# command but `mount` works; `sqk mount` says why it cannot; no sqkfuse is built and nothing
# links libfuse3.
. "$(dirname "$0")/lib.sh"
need_sqk
need_cmd make cc ldd
TOP=$(cd "$IT_DIR/../.." && pwd)
W=$(scratch nofuse)
B=$W/build
make -s -C "$TOP" -j2 HAVE_FUSE=0 BUILD="$B" OPT=-O0 all >"$TMP/make.log" 2>&1 ||
	{ tail -n 30 "$TMP/make.log" >&2; fail "make HAVE_FUSE=0 failed"; }
[ -x "$B/bin/sqk" ] || fail "no sqk built without FUSE"
[ ! -e "$B/bin/sqkfuse" ] || fail "sqkfuse was built without FUSE"
if ldd "$B/bin/sqk" "$B/lib/libsqk.so.2" 2>&1 | grep -q "libfuse\|not found\|No such"; then
	fail "sqk or libsqk links libfuse3 (or is missing): $(ldd "$B/bin/sqk" "$B/lib/libsqk.so.2" 2>&1 | grep "libfuse\|not found\|No such")"
fi
mkdir -p "$W/src"
echo "no fuse needed" >"$W/src/f.txt"
run_capture mk "$B/bin/sqk" mkimage "$W/src" "$W/img.sqsh"
[ "$RC" = 0 ] || { show_err; fail "sqk mkimage without FUSE exited $RC"; }
run_capture cat "$B/bin/sqk" cat "$W/img.sqsh" f.txt
[ "$RC" = 0 ] && [ "$(cat "$OUT_FILE")" = "no fuse needed" ] || { show_err; fail "sqk cat without FUSE"; }
run_capture mount "$B/bin/sqk" mount "$W/img.sqsh" "$W"
[ "$RC" = 1 ] || fail "sqk mount without FUSE exited $RC, expected 1"
grep -q libfuse3 "$ERR_FILE" || { show_err; fail "sqk mount without FUSE does not say why"; }
info "built without libfuse3: sqk works, sqk mount says: $(cat "$ERR_FILE")"
exit 0
