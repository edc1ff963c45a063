#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# make install PREFIX=/usr DESTDIR=...: programs, libsqk (static, shared), headers and libsqk.pc;
# a program built with `pkg-config --cflags --libs libsqk` reads an image through the library.
. "$(dirname "$0")/lib.sh"
need_sqk
need_cmd make cc pkg-config
TOP=$(cd "$IT_DIR/../.." && pwd)
W=$(scratch inst)
D=$W/root
make -s -C "$TOP" install PREFIX=/usr DESTDIR="$D" BUILD="$(dirname "$(dirname "$SQK")")" \
	>"$TMP/install.log" 2>&1 || { cat "$TMP/install.log" >&2; fail "make install failed"; }
for f in usr/bin/sqk usr/bin/sqkfuse usr/lib/libsqk.a usr/lib/libsqk.so.2 usr/lib/libsqk.so \
	usr/include/sqk/sqk.h usr/include/sqk/sqk_check.h usr/include/sqk/remote.h \
	usr/lib/pkgconfig/libsqk.pc; do
	[ -e "$D/$f" ] || fail "make install did not install $f"
done
grep -q '^prefix=/usr$' "$D/usr/lib/pkgconfig/libsqk.pc" || fail "libsqk.pc does not say prefix=/usr"

# the manual pages and the bash completion; the version is the Makefile's everywhere
for f in usr/share/man/man1/sqk.1 usr/share/man/man8/sqkfuse.8 \
	usr/share/bash-completion/completions/sqk usr/share/bash-completion/completions/sqkfuse; do
	[ -e "$D/$f" ] || fail "make install did not install $f"
done
ver=$("$D/usr/bin/sqk" --version | head -n 1) || fail "the installed sqk --version failed"
ver=${ver#sqk }
"$D/usr/bin/sqkfuse" --version | head -n 1 | grep -qx "sqkfuse $ver" ||
	fail "sqkfuse --version does not say $ver: $("$D/usr/bin/sqkfuse" --version)"
grep -q "^Version: $ver\$" "$D/usr/lib/pkgconfig/libsqk.pc" || fail "libsqk.pc does not say Version: $ver"
for p in man1/sqk.1 man8/sqkfuse.8; do
	grep -q "^\.TH .*\"squashkit $ver\"" "$D/usr/share/man/$p" || fail "$p does not say squashkit $ver"
	out=$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -l "$D/usr/share/man/$p" 2>&1 >/dev/null)
	[ -z "$out" ] || fail "man -l $p warns: $out"
done
# man finds them by name under the installed MANPATH
MANPATH=$D/usr/share/man MANWIDTH=80 man sqk 2>/dev/null | grep -q 'sqk umount' || fail "man sqk did not show sqk(1)"
MANPATH=$D/usr/share/man MANWIDTH=80 man 8 sqkfuse 2>/dev/null | grep -q 'max_threads' ||
	fail "man 8 sqkfuse did not show sqkfuse(8)"
# the installed completion completes subcommands, a subcommand's options and image files
touch "$W/one.sqsh"
comp=$(cd "$W" && PATH=$D/usr/bin:$PATH bash -c '
	. "$1"
	c() { COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); COMPREPLY=(); $F; echo "${COMPREPLY[*]}"; }
	F=_sqk; c sqk ex; c sqk ""; c sqk mkimage --no-d; c sqk info one.s; c sqk sign --ke
	F=_sqkfuse; c sqkfuse one.sqsh . -o thr' _ "$D/usr/share/bash-completion/completions/sqk" 2>&1)
expect=$(printf '%s\n' extract "mkimage ls cat extract tar info stat verify keygen sign mount umount diff help version --help --version" \
	--no-dedup one.sqsh --key threads=)
[ "$comp" = "$expect" ] || fail "bash completion: got
$comp
expected
$expect"
info "man pages and bash completion installed; version $ver; completion: $(echo $comp | head -c 60)..."
# the installed headers shadow no system header: glibc's <error.h> and <endian.h> (through
# <sys/types.h>) stay the system's
cat >"$W/app.c" <<'C'
#include <error.h>
#include <sqk/sqk.h>
#include <sqk/sqk_check.h>
#include <stdio.h>
#include <sys/types.h>
#if !defined(BYTE_ORDER) || !defined(LITTLE_ENDIAN)
#error "<sys/types.h> lost BYTE_ORDER: a squashkit header shadows <endian.h>"
#endif
int main(int argc, char **argv)
{
	(void)error_message_count; /* glibc's <error.h>, not squashkit's */
	struct sqk_image *img;
	struct sqk_inode f;
	char buf[64];
	int e = sqk_image_open(argv[1], NULL, &img);
	if (e || (e = sqk_lookup_path(img, "hello.txt", &f))) {
		fprintf(stderr, "%s\n", sqk_strerror(e));
		return 1;
	}
	ssize_t n = sqk_read(img, &f, buf, sizeof(buf) - 1, 0);
	buf[n > 0 ? n : 0] = 0;
	printf("%u %s", sqk_image_super(img)->inode_count, buf);
	sqk_image_close(img);
	return 0;
}
C
export PKG_CONFIG_SYSROOT_DIR=$D PKG_CONFIG_PATH=$D/usr/lib/pkgconfig
cc "$W/app.c" $(pkg-config --cflags --libs libsqk) -o "$W/app" || fail "cannot build against libsqk.pc"
mkdir -p "$W/src/d"
echo "hello from libsqk" >"$W/src/hello.txt"
sqk_build -q "$W/src" "$W/img.sqsh"
out=$(LD_LIBRARY_PATH=$D/usr/lib "$W/app" "$W/img.sqsh") || fail "the program failed: $out"
[ "$out" = "3 hello from libsqk" ] || fail "unexpected output: '$out'"
info "installed libsqk used through pkg-config: $out"

# libsqk.so exports exactly the functions its installed headers declare (SQK_API): no internals
need_cmd nm
nm -D --defined-only "$D/usr/lib/libsqk.so.2" | awk '$2 ~ /^[TW]$/ {print $3}' | sort >"$TMP/versioned"
# every function is in the version script's node (sqk_x@@LIBSQK_2.0), none unversioned
bad=$(grep -v '@@LIBSQK_2\.[0-9]*$' "$TMP/versioned") &&
	fail "libsqk.so exports functions outside its version script's nodes: $bad"
sed 's/@@.*//' "$TMP/versioned" >"$TMP/exported"
readelf -d "$D/usr/lib/libsqk.so.2" | grep -q 'SONAME.*\[libsqk\.so\.2\]' ||
	fail "libsqk.so.2 does not carry the SONAME libsqk.so.2"
python3 - "$D/usr/include/sqk" "$TMP/exported" <<'PY' || fail "libsqk.so's exports differ from its headers"
import os, re, sys
decl, bare = set(), set()
for d, _, fs in os.walk(sys.argv[1]):
    for f in fs:
        s = re.sub(r'/\*.*?\*/', '', open(os.path.join(d, f)).read(), flags=re.S)
        for m in re.finditer(r'^(SQK_API )?(?!static)[a-z][\w \*]*?\b(sqk_[a-z0-9_]+)\(', s, re.M):
            (decl if m.group(1) else bare).add(m.group(2))
exp = set(open(sys.argv[2]).read().split())
bad = False
for what, names in (("declared without SQK_API", bare), ("exported but not in a header", exp - decl),
                    ("declared but not exported", decl - exp)):
    if names:
        print("%s: %s" % (what, " ".join(sorted(names))))
        bad = True
print("%d functions declared and exported" % len(decl & exp))
sys.exit(1 if bad or not decl else 0)
PY
info "libsqk.so exports $(wc -l <"$TMP/exported") symbols, each declared in an installed header"
exit 0
