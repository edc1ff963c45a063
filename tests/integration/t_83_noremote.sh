#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# Without the remote backend (HAVE_REMOTE=0, as on a machine without libcurl's headers): libsqk
# exports the same functions, nothing links libcurl, local images work, and a URL is refused
# with one line naming the missing feature, by every command and by sqkfuse.
. "$(dirname "$0")/lib.sh"
need_sqk
need_cmd make cc ldd nm
TOP=$(cd "$IT_DIR/../.." && pwd)
LIB=$(dirname "$(dirname "$SQK")")/lib/libsqk.so.2
[ -e "$LIB" ] || fail "no $LIB beside $SQK"
W=$(scratch noremote)
B=$W/build
make -s -C "$TOP" -j2 HAVE_REMOTE=0 BUILD="$B" OPT=-O0 all >"$TMP/make.log" 2>&1 ||
	{ tail -n 30 "$TMP/make.log" >&2; fail "make HAVE_REMOTE=0 failed"; }
[ -x "$B/bin/sqk" ] || fail "no sqk built without the remote backend"
bins="$B/bin/sqk $B/lib/libsqk.so.2"
[ -x "$B/bin/sqkfuse" ] && bins="$bins $B/bin/sqkfuse"
# shellcheck disable=SC2086
if ldd $bins 2>&1 | grep -q "libcurl\|not found\|No such"; then
	fail "a program or libsqk links libcurl (or is missing): $(ldd $bins 2>&1 | grep "libcurl\|not found\|No such")"
fi
grep -q libcurl "$B/lib/libsqk.pc" && fail "libsqk.pc requires libcurl: $(grep Requires "$B/lib/libsqk.pc")"
"$B/bin/sqk" --version | grep -q '^features:' || fail "sqk --version lists no features"
"$B/bin/sqk" --version | grep -q '^features:.* -remote\( \|$\)' || fail "sqk --version does not list remote as left out"

# the same exports (and versions) as the build with the backend
exports() {
	nm -D --defined-only "$1" | awk '$2 ~ /^[TW]$/ {print $3}' | sort
}
exports "$LIB" >"$TMP/with"
exports "$B/lib/libsqk.so.2" >"$TMP/without"
grep -q '^sqk_image_open_url@@' "$TMP/without" || fail "libsqk without the backend lacks sqk_image_open_url"
diff -u "$TMP/with" "$TMP/without" >&2 || fail "libsqk exports differ with HAVE_REMOTE=0"

mkdir -p "$W/src"
echo "no curl needed" >"$W/src/f.txt"
run_capture mk "$B/bin/sqk" mkimage "$W/src" "$W/img.sqsh"
[ "$RC" = 0 ] || { show_err; fail "sqk mkimage without the backend exited $RC"; }
run_capture cat "$B/bin/sqk" cat "$W/img.sqsh" f.txt
[ "$RC" = 0 ] && [ "$(cat "$OUT_FILE")" = "no curl needed" ] || { show_err; fail "sqk cat without the backend"; }

# a URL: exit 1 (verify: 8), one line naming the URL (without its secrets) and the feature
WHY="remote images are not supported by this build (built with HAVE_REMOTE=0; needs libcurl)"
URL=http://127.0.0.1:1/x.sqsh
for cmd in ls info cat tar extract verify; do
	args=$URL
	case $cmd in
	cat) args="$URL f.txt" ;;
	extract) args="$URL $W/x" ;;
	esac
	# shellcheck disable=SC2086
	run_capture "$cmd" "$B/bin/sqk" "$cmd" --header "Authorization: Bearer SECRET" $args
	want=1
	[ "$cmd" = verify ] && want=8
	[ "$RC" = "$want" ] || { show_err; fail "sqk $cmd $URL without the backend exited $RC, not $want"; }
	[ "$(cat "$ERR_FILE")" = "sqk $cmd: $URL: $WHY" ] ||
		{ show_err; fail "sqk $cmd $URL without the backend: not the one line"; }
done
run_capture s3 "$B/bin/sqk" ls "s3://bucket/key.sqsh?X-Amz-Signature=SECRET"
[ "$RC" = 1 ] && [ "$(cat "$ERR_FILE")" = "sqk ls: s3://bucket/key.sqsh: $WHY" ] ||
	{ show_err; fail "sqk ls s3://... without the backend: exit $RC, not the one line"; }
if [ -x "$B/bin/sqkfuse" ]; then
	mkdir -p "$W/m"
	run_capture fuse "$B/bin/sqkfuse" "$URL" "$W/m"
	[ "$RC" != 0 ] && grep -q ": $URL: $WHY\$" "$ERR_FILE" ||
		{ show_err; fail "sqkfuse $URL without the backend: exit $RC, not the message"; }
fi
info "built without libcurl: same exports, local images work, a URL says: $WHY"
exit 0
