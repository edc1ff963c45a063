#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# The installed headers (`make install-lib` into a scratch root: include/sqk/ as it is): each
# compiles alone in C99, C11 and C++17 with -Wall -Wextra -pedantic -Werror, with gcc and with
# clang when present; none includes a header that is not installed but the system's; and a
# C++17 program using every header reads an image through the installed libsqk.so and finds
# what is in it.
# Needs SQK (to build the image) and LIBSQK_DIR (build/lib).
cd "$(dirname "$0")/../.." || exit 1
TOP=$PWD
: "${SQK:=$TOP/build/bin/sqk}" "${LIBSQK_DIR:=$TOP/build/lib}"
T=$(mktemp -d /tmp/sqk-headers.XXXXXX) || exit 1
trap 'rm -rf "$T"' EXIT
pass=0 failn=0
ok() { pass=$((pass + 1)); }
bad() { echo "FAIL: $*"; failn=$((failn + 1)); }

# the headers as `make install-lib` puts them, beside the libraries just built
BUILD_DIR=$(dirname "$LIBSQK_DIR")
make -s -C "$TOP" install-lib PREFIX=/usr DESTDIR="$T/root" BUILD="$BUILD_DIR" >"$T/install.log" 2>&1 ||
	{ cat "$T/install.log"; echo "headers: make install-lib failed"; exit 1; }
INC=$T/root/usr/include
[ "$(cd "$INC/sqk" && ls)" = "$(cd "$TOP/include/sqk" && ls)" ] ||
	bad "make install-lib installed $(cd "$INC/sqk" && ls | tr '\n' ' '), not include/sqk/'s headers"

compilers=()
for c in "gcc -x c -std=c99" "gcc -x c -std=c11" "g++ -x c++ -std=c++17" \
	"clang -x c -std=c99" "clang -x c -std=c11" "clang++ -x c++ -std=c++17"; do
	command -v "${c%% *}" >/dev/null 2>&1 && compilers+=("$c")
done
for h in "$INC"/sqk/*.h; do
	name=${h#"$INC"/}
	# only <sqk/...> siblings (as "x.h") and system headers
	while read -r inc; do
		[ -e "$INC/sqk/$inc" ] || bad "$name includes \"$inc\", which is not an installed header"
	done < <(sed -n 's/^#include "\(.*\)"/\1/p' "$h")
	printf '#include <%s>\n#include <%s>\nint main(void) { return 0; }\n' "$name" "$name" >"$T/one.c"
	for c in "${compilers[@]}"; do
		# shellcheck disable=SC2086
		if out=$($c -Wall -Wextra -pedantic -Werror -I"$INC" -c "$T/one.c" -o "$T/one.o" 2>&1); then
			ok
		else
			bad "<$name> with $c: $out"
		fi
	done
done

# the C++ program against the shared library, on an image whose content the test knows
mkdir -p "$T/src/d"
printf 'one\n' >"$T/src/a.txt"
head -c 300000 /dev/urandom >"$T/src/d/big.bin"
ln -s a.txt "$T/src/link"
if ! "$SQK" mkimage -q "$T/src" "$T/img.sqsh" >"$T/mk.log" 2>&1; then
	bad "sqk mkimage failed: $(cat "$T/mk.log")"
elif ! out=$(g++ -std=c++17 -Wall -Wextra -pedantic -Werror -I"$INC" tests/lint/api_cxx.cc \
	-L"$T/root/usr/lib" -lsqk -o "$T/api_cxx" 2>&1); then
	bad "tests/lint/api_cxx.cc does not build against the headers: $out"
else
	got=$(LD_LIBRARY_PATH=$T/root/usr/lib "$T/api_cxx" "$T/img.sqsh")
	want="entries=5 files=2 bytes=300004 check_errors=0"
	case $got in
	"$want version="*) ok ;;
	*) bad "the C++ program read '$got', expected '$want version=...'" ;;
	esac
fi
echo "headers: $pass passed, $failn failed"
[ "$failn" = 0 ]
