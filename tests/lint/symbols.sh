#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# libsqk's symbols are its API and nothing else: the functions the installed headers declare
# with SQK_API are exactly what libsqk.so exports and what libsqk.a defines globally, no other
# symbol of either is named sqk_*, and a C++ program links statically against libsqk.a alone
# (with libsqk.pc's private requirements) and reads an image.
cd "$(dirname "$0")/../.." || exit 1
TOP=$PWD
: "${LIBSQK_DIR:=$TOP/build/lib}" "${SQK:=$TOP/build/bin/sqk}"
T=$(mktemp -d /tmp/sqk-symbols.XXXXXX) || exit 1
trap 'rm -rf "$T"' EXIT
pass=0 failn=0
check() { # WHAT FILE-WITH-DIFFERENCES
	if [ -s "$2" ]; then
		echo "FAIL: $1:"
		sed 's/^/  /' "$2" | head -n 40
		failn=$((failn + 1))
	else
		pass=$((pass + 1))
	fi
}
# the API: every SQK_API declaration's function name (declarations may span lines)
cat include/sqk/*.h | tr '\n' ' ' | grep -o 'SQK_API [^;]*(' |
	grep -o 'sqk_[a-z0-9_]*($' | tr -d '(' | sort -u >"$T/api"
[ "$(wc -l <"$T/api")" -gt 50 ] || { echo "FAIL: found only $(wc -l <"$T/api") API functions"; exit 1; }

so=$(readlink -f "$LIBSQK_DIR/libsqk.so")
nm -D --defined-only "$so" | awk '$2 ~ /^[TDBRVWi]$/ {print $3}' | sed 's/@.*//' | sort -u >"$T/so"
comm -13 "$T/api" "$T/so" >"$T/d"; check "libsqk.so exports what no header declares" "$T/d"
comm -23 "$T/api" "$T/so" >"$T/d"; check "libsqk.so does not export these API functions" "$T/d"

nm "$LIBSQK_DIR/libsqk.a" 2>/dev/null | awk 'NF == 3 && $2 ~ /^[TDBRVWGS]$/ {print $3}' | sort -u >"$T/a"
comm -13 "$T/api" "$T/a" >"$T/d"; check "libsqk.a defines global symbols beyond the API" "$T/d"
comm -23 "$T/api" "$T/a" >"$T/d"; check "libsqk.a does not define these API functions" "$T/d"
# local symbols too: a name under sqk_ is the API's
nm "$LIBSQK_DIR/libsqk.a" "$so" 2>/dev/null | awk 'NF == 3 {print $3}' | grep '^sqk_' |
	sed 's/[.@].*//' | sort -u | comm -23 - "$T/api" >"$T/d"
check "symbols named sqk_ that are not the API (internal functions take their module's prefix)" "$T/d"

# a static link against libsqk.a and its private requirements alone
mkdir -p "$T/src"
printf 'static\n' >"$T/src/f"
"$SQK" mkimage -q "$T/src" "$T/img.sqsh" >/dev/null 2>&1 || { echo "FAIL: sqk mkimage"; exit 1; }
req=$(sed -n 's/^Requires.private: //p' "$LIBSQK_DIR/libsqk.pc")
# shellcheck disable=SC2086
if out=$(g++ -std=c++17 -I"$TOP/include" tests/lint/api_cxx.cc "$LIBSQK_DIR/libsqk.a" \
	$(pkg-config --libs $req) -pthread -o "$T/static" 2>&1) &&
	got=$("$T/static" "$T/img.sqsh") && [ "${got%% version=*}" = "entries=2 files=1 bytes=7 check_errors=0" ]; then
	pass=$((pass + 1))
else
	echo "FAIL: a static link against libsqk.a: ${out:-$got}"
	failn=$((failn + 1))
fi
echo "symbols: $pass passed, $failn failed"
[ "$failn" = 0 ]
