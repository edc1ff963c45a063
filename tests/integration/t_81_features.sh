#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# Without the optional features (HAVE_FUSE=0 HAVE_REMOTE=0 HAVE_TAR=0 HAVE_LZO=0 HAVE_LZ4=0, as
# on a machine without their -dev packages): sqk and libsqk build warning-free, every other
# command works, each left-out feature is named when it is asked for, and nothing links its
# library.
. "$(dirname "$0")/lib.sh"
need_sqk
need_cmd make cc ldd
TOP=$(cd "$IT_DIR/../.." && pwd)
W=$(scratch nofeat)
B=$W/build
OFF="HAVE_FUSE=0 HAVE_REMOTE=0 HAVE_TAR=0 HAVE_LZO=0 HAVE_LZ4=0"
# shellcheck disable=SC2086
make -s -C "$TOP" -j2 $OFF WERROR=1 BUILD="$B" OPT=-O0 all >"$TMP/make.log" 2>&1 ||
	{ tail -n 30 "$TMP/make.log" >&2; fail "make $OFF failed"; }
grep -q "fuse=no remote=no tar=no lzo=no lz4=no" "$TMP/make.log" ||
	fail "make did not sum up the features left out: $(tail -n 1 "$TMP/make.log")"
[ -x "$B/bin/sqk" ] || fail "no sqk built without the optional features"
[ ! -e "$B/bin/sqkfuse" ] || fail "sqkfuse was built without FUSE"
"$B/bin/sqk" --version | grep -qx "features: -fuse -remote -tar -lzo -lz4" ||
	fail "sqk --version does not list the features left out: $("$B/bin/sqk" --version)"
libs=$(ldd "$B/bin/sqk" "$B"/lib/libsqk.so.* 2>&1)
if grep -q "libfuse\|libcurl\|libarchive\|liblzo\|liblz4\|not found\|No such" <<<"$libs"; then
	fail "sqk or libsqk links a left-out library (or is missing): $libs"
fi

mkdir -p "$W/src"
echo "no options needed" >"$W/src/f.txt"
run_capture mk "$B/bin/sqk" mkimage "$W/src" "$W/img.sqsh"
[ "$RC" = 0 ] || { show_err; fail "sqk mkimage without the optional features exited $RC"; }
run_capture cat "$B/bin/sqk" cat "$W/img.sqsh" f.txt
[ "$RC" = 0 ] && [ "$(cat "$OUT_FILE")" = "no options needed" ] || { show_err; fail "sqk cat"; }

# each left-out feature, asked for, is named with its switch and its library
expect_refusal() { # NAME STATUS PATTERN CMD...
	local name=$1 st=$2 pat=$3
	shift 3
	run_capture "$name" "$@"
	[ "$RC" = "$st" ] || { show_err; fail "$name exited $RC, expected $st"; }
	grep -q "$pat" "$ERR_FILE" || { show_err; fail "$name does not say why"; }
	info "$name: $(head -n 1 "$ERR_FILE")"
}
expect_refusal mount 1 "HAVE_FUSE=0.*libfuse3" "$B/bin/sqk" mount "$W/img.sqsh" "$W"
expect_refusal remote 1 "HAVE_REMOTE=0.*libcurl" "$B/bin/sqk" ls http://127.0.0.1:9/img.sqsh
expect_refusal comp-lzo 2 "HAVE_LZO=0.*liblzo2" "$B/bin/sqk" mkimage -comp lzo "$W/src" "$W/lzo.sqsh"
expect_refusal comp-lz4 2 "HAVE_LZ4=0.*liblz4" "$B/bin/sqk" mkimage -comp lz4 "$W/src" "$W/lz4.sqsh"
[ ! -e "$W/lzo.sqsh" ] && [ ! -e "$W/lz4.sqsh" ] || fail "a refused build left an image"
tar -C "$W/src" -cf "$W/src.tar" .
expect_refusal tar-in 1 "HAVE_TAR=0.*libarchive" "$B/bin/sqk" mkimage --tar "$W/src.tar" "$W/t.sqsh"
[ ! -e "$W/t.sqsh" ] || fail "a refused tar build left an image"
expect_refusal tar-out 1 "HAVE_TAR=0.*libarchive" "$B/bin/sqk" tar -o "$W/o.tar" "$W/img.sqsh"
# an image in a left-out codec, made by the full build, is named and refused by the reader
"$SQK" mkimage -q -comp lz4 "$W/src" "$W/full-lz4.sqsh" >/dev/null 2>&1 ||
	fail "the full build could not make an lz4 image"
expect_refusal read-lz4 1 "lz4.*HAVE_LZ4=0.*liblz4" "$B/bin/sqk" ls "$W/full-lz4.sqsh"
exit 0
