#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# mksquashfs habits of `sqk mkimage` (issue 17, point 4): options anywhere (mksquashfs puts
# them after SOURCE... IMAGE), "--", the mksquashfs spellings (-comp, -processors, -all-root,
# -no-xattrs, -quiet, -no-progress, -noappend...), mksquashfs's -e (every argument after it an
# exact path, absolute or relative to each source; -wildcards and -regex patterns), -ef, a
# warning naming every exclude that matched nothing, -mem refused with its reason, an unknown
# option named as typed. Exclude lists are compared with real mksquashfs (unsquashfs -l vs
# sqk ls -R).
. "$(dirname "$0")/lib.sh"
need_root
need_sqk
need_cmd unsquashfs mksquashfs python3 script

W=$(scratch habits)
SRC=$W/src S2=$W/s2
mkdir -p "$SRC/a/b" "$SRC/deep/a" "$SRC/x" "$SRC/st*r" "$SRC/stXr" "$S2/a" "$S2/q"
for f in a/b/f deep/a/g x/h x/y.gz top.gz .hid.gz 'st*r/i' stxr; do echo "$f" >"$SRC/$f"; done
echo z >"$S2/a/z"
echo w >"$S2/q/w"
# text that compresses differently under each compressor, an owner to force, an xattr to drop
python3 -c 'import sys; sys.stdout.write("".join("line %d of the text %d\n" % (i, i * i % 97) for i in range(20000)))' >"$SRC/x/text"
chown 1234:5678 "$SRC/x/h"
python3 -c 'import os, sys; os.setxattr(sys.argv[1], "user.habit", b"kept")' "$SRC/top.gz" ||
	fail "cannot set a user. xattr in $W"
export SOURCE_DATE_EPOCH=1700000000

# same IMG1 IMG2 WHAT: the two images are byte-identical
same() {
	cmp -s "$1" "$2" || fail "$3: $(basename "$1") and $(basename "$2") differ"
	info "$3: identical"
}
differ() {
	cmp -s "$1" "$2" && fail "$3: $(basename "$1") and $(basename "$2") are identical"
	return 0
}

# ---- 1. options after the paths: the same bytes as before them ------------------------------
sqk_build -q -b 64K -c xz --no-fragments --all-root --no-xattrs "$SRC" "$W/before.sqsh"
sqk_build "$SRC" "$W/after.sqsh" -q -b 64K -c xz --no-fragments --all-root --no-xattrs
sqk_build -q -b 64K "$SRC" -c xz "$W/between.sqsh" --no-fragments --all-root --no-xattrs
sqk_build "$SRC" "$W/mks.sqsh" -quiet -b 64K -comp xz -no-fragments -all-root -no-xattrs
same "$W/before.sqsh" "$W/after.sqsh" "options after the paths"
same "$W/before.sqsh" "$W/between.sqsh" "options between the paths"
same "$W/before.sqsh" "$W/mks.sqsh" "mksquashfs spellings after the paths"
# each of those options changes the image, so the comparisons above can fail
sqk_build -q -b 64K -c xz --no-fragments --all-root "$SRC" "$W/xattrs.sqsh"
differ "$W/before.sqsh" "$W/xattrs.sqsh" "-no-xattrs"
sqk_build -q -b 64K -c xz --no-fragments --no-xattrs "$SRC" "$W/owners.sqsh"
differ "$W/before.sqsh" "$W/owners.sqsh" "-all-root"
# several sources with an option between them
sqk_build -q -b 64K "$SRC" "$S2" "$W/multi1.sqsh"
sqk_build "$SRC" -b 64K "$S2" "$W/multi2.sqsh" -quiet
same "$W/multi1.sqsh" "$W/multi2.sqsh" "several sources, an option between them"

# ---- 2. -comp xz after the paths really gives xz (it used to be taken for a source) ----------
sqk_build "$SRC" "$W/xz.sqsh" -comp xz -q
assert_comp "$W/xz.sqsh" xz
"$SQK" info "$W/xz.sqsh" | grep -Eq '^compressor: +xz' || fail "sqk info does not say xz"
sqk_build "$SRC" "$W/zstd.sqsh" -q
assert_comp "$W/zstd.sqsh" zstd
# -Xbcj's list and mksquashfs's block size forms
sqk_build "$SRC" "$W/bcj1.sqsh" -q -comp xz -Xbcj x86,arm -b 64KB
sqk_build -q -c xz --bcj x86 --bcj arm -b 64K "$SRC" "$W/bcj2.sqsh"
same "$W/bcj1.sqsh" "$W/bcj2.sqsh" "-Xbcj x86,arm -b 64KB"

# ---- 3. -quiet prints nothing; -no-progress keeps the summary ------------------------------
run_capture quiet "$SQK" mkimage "$SRC" "$W/quiet.sqsh" -quiet
[ "$RC" = 0 ] || { show_err; fail "-quiet build exited $RC"; }
[ -s "$OUT_FILE" ] && fail "-quiet printed on stdout: $(head -n 3 "$OUT_FILE")"
[ -s "$ERR_FILE" ] && fail "-quiet printed on stderr: $(head -n 3 "$ERR_FILE")"
check_superblock "$W/quiet.sqsh"
run_capture loud "$SQK" mkimage "$SRC" "$W/loud.sqsh"
grep -q '^image ' "$OUT_FILE" || fail "no summary without -quiet (so the check above means nothing)"
# on a terminal (script gives the build a pty): the progress line, then without it
tty_build() {
	rm -f "$W/tty.sqsh"
	script -qec "$(printf '%q ' "$SQK" mkimage "$SRC" "$W/tty.sqsh" "$@")" /dev/null \
		>"$TMP/tty.out" 2>&1 || fail "build on a terminal ($*) failed: $(tail -n 3 "$TMP/tty.out")"
}
tty_build
grep -q 'MiB/s' "$TMP/tty.out" || fail "no progress line on a terminal: $(head -c 300 "$TMP/tty.out")"
grep -q '^image ' "$TMP/tty.out" || fail "no summary on a terminal"
tty_build -no-progress
grep -q 'MiB/s' "$TMP/tty.out" && fail "-no-progress: a progress line was shown"
grep -q '^image ' "$TMP/tty.out" || fail "-no-progress: the summary is missing"
grep -q '^root hash ' "$TMP/tty.out" || fail "-no-progress: the summary is cut short"
tty_build --no-progress
grep -q 'MiB/s' "$TMP/tty.out" && fail "--no-progress: a progress line was shown"
tty_build -quiet
[ -s "$TMP/tty.out" ] && fail "-quiet on a terminal printed: $(head -c 300 "$TMP/tty.out")"
info "-quiet: nothing printed; -no-progress: summary, no progress line (on a pty)"

# ---- 4. -processors N is -j N; the bytes do not depend on it --------------------------------
sqk_build "$SRC" "$W/p1.sqsh" -q -processors 1
sqk_build "$SRC" "$W/p3.sqsh" -q -processors 3
sqk_build -q -j 1 "$SRC" "$W/j1.sqsh"
same "$W/p1.sqsh" "$W/p3.sqsh" "-processors 1 and 3"
same "$W/p1.sqsh" "$W/j1.sqsh" "-processors 1 and -j 1"
run_capture p3 "$SQK" mkimage "$SRC" "$W/p3b.sqsh" -processors 3
grep -q 'with 3 threads' "$OUT_FILE" || fail "-processors 3: the summary says $(grep '^time' "$OUT_FILE")"

# ---- 5. mksquashfs's -e: exact paths; -wildcards ------------------------------------------
# lists IMAGE as paths, one a line, sorted
sqk_list() { "$SQK" ls -R "$1" | LC_ALL=C sort; }
mks_list() { unsquashfs -l "$1" | sed -n 's#^squashfs-root/##p' | LC_ALL=C sort; }
# vs_mks NAME SOURCES... -- ARGS...: sqk and mksquashfs, the same ARGS after the paths, give
# the same file list (and sqk's is left in $W/NAME.lst)
vs_mks() {
	local name=$1 srcs=() args=()
	shift
	while [ "$1" != -- ]; do srcs+=("$1"); shift; done
	shift
	args=("$@")
	mksquashfs "${srcs[@]}" "$W/$name.mks" -noappend -quiet -no-progress "${args[@]}" \
		>"$TMP/mks.out" 2>&1 || fail "$name: mksquashfs failed: $(tail -n 3 "$TMP/mks.out")"
	sqk_build "${srcs[@]}" "$W/$name.sqsh" -quiet "${args[@]}"
	mks_list "$W/$name.mks" >"$W/$name.mks.lst"
	sqk_list "$W/$name.sqsh" >"$W/$name.lst"
	if ! cmp -s "$W/$name.mks.lst" "$W/$name.lst"; then
		diff "$W/$name.mks.lst" "$W/$name.lst" | head -n 20 >&2
		fail "$name: sqk and mksquashfs keep different files for: ${args[*]}"
	fi
	info "$name: same $(wc -l <"$W/$name.lst") entries as mksquashfs for: ${args[*]}"
}
has() { grep -qxF -- "$2" "$W/$1.lst" || fail "$1: '$2' is missing from the image"; }
hasnt() { grep -qxF -- "$2" "$W/$1.lst" && fail "$1: '$2' is in the image but was excluded"; return 0; }

cd "$W" || fail "cd $W"
# relative to the source: a (the top one) goes, deep/a (same name, deeper) stays
vs_mks rel "$SRC" -- -e a
hasnt rel a; hasnt rel a/b/f; has rel deep/a; has rel deep/a/g
# a glob-like name is taken literally: st*r goes, stxr and stXr stay
vs_mks literal "$SRC" -- -e 'st*r' x/y.gz
hasnt literal 'st*r'; has literal stxr; has literal stXr; hasnt literal x/y.gz; has literal x/h
# absolute forms: /..., ./..., ../...
vs_mks abs "$SRC" -- -e "$SRC/deep/a" ./src/x "../$(basename "$W")/src/a/b/f"
hasnt abs deep/a; has abs deep; hasnt abs x; hasnt abs a/b/f; has abs a/b
# a relative source path, and several sources (relative to each)
vs_mks relsrc src -- -e deep x/text
vs_mks keepdir "$SRC" -- -keep-as-directory -e a
has keepdir src; hasnt keepdir src/a; has keepdir src/deep/a
vs_mks multi "$SRC" "$S2" -- -e a ./s2/q
hasnt multi src/a; hasnt multi s2/a; hasnt multi s2/q; has multi s2; has multi src/deep/a
# -wildcards: anchored, one component at a time, leading dots explicit; "... " at any depth
vs_mks wild_top "$SRC" -- -wildcards -e '*.gz' 'st?r'
hasnt wild_top top.gz; has wild_top .hid.gz; has wild_top x/y.gz; hasnt wild_top stxr
vs_mks wild_any "$SRC" -- -wildcards -e '... *.gz'
hasnt wild_any x/y.gz; hasnt wild_any top.gz; has wild_any .hid.gz
vs_mks wild_sub "$SRC" -- -wildcards -e '*/a' 'x/*'
hasnt wild_sub deep/a; has wild_sub a; has wild_sub x; hasnt wild_sub x/h
vs_mks wild_ext "$SRC" -- -wildcards -e '!(x|a)'
vs_mks wild_multi "$SRC" "$S2" -- -wildcards -e s2 '*/x'
# -regex: POSIX extended, found anywhere in a component, one component at a time
vs_mks regex "$SRC" -- -regex -e 'gz$' '^st.r$' 'x/^h'
hasnt regex top.gz; hasnt regex .hid.gz; has regex x/y.gz; hasnt regex x/h; has regex x/text
vs_mks regex_any "$SRC" -- -regex -e '... ^[ab]$'
hasnt regex_any a; hasnt regex_any deep/a; has regex_any deep
# "... a/?" (several components at any depth): what mksquashfs documents since 4.6 (4.5.1
# excluded every 'a' instead), so checked directly
sqk_build "$SRC" "$W/wild_deep.sqsh" -q -wildcards -e '... a/?'
sqk_list "$W/wild_deep.sqsh" >"$W/wild_deep.lst"
has wild_deep a; hasnt wild_deep a/b; has wild_deep deep/a; hasnt wild_deep deep/a/g
# -ef FILE: the same as -e with its lines
printf '  a\n# a comment\n\n\\st*r\nx/y.gz\n' >"$W/ex.lst"
vs_mks ef "$SRC" -- -ef "$W/ex.lst"
sqk_build "$SRC" "$W/ef_e.sqsh" -quiet -e a 'st*r' x/y.gz
same "$W/ef.sqsh" "$W/ef_e.sqsh" "-ef FILE and -e with its lines"
# --exclude keeps its glob meaning beside -e ('*' crosses '/')
sqk_build "$SRC" "$W/glob.sqsh" -q --exclude '*.gz' -e deep
sqk_list "$W/glob.sqsh" >"$W/glob.lst"
hasnt glob x/y.gz; hasnt glob .hid.gz; hasnt glob deep; has glob x/h
cd / || fail "cd /"

# ---- 6. a warning for every exclude that matched nothing -----------------------------------
run_capture unmatched "$SQK" mkimage "$SRC" "$W/um.sqsh" -quiet --exclude 'zz*' --exclude '*.gz' \
	-e a nosuch /etc/passwd a/b
[ "$RC" = 0 ] || { show_err; fail "build with unmatched excludes exited $RC"; }
[ -s "$OUT_FILE" ] && fail "-quiet printed on stdout"
grep -q "exclude 'zz\*' matched nothing" "$ERR_FILE" || { show_err; fail "no warning naming --exclude 'zz*'"; }
grep -q "\-e 'nosuch' matched nothing: no such path in the source" "$ERR_FILE" ||
	{ show_err; fail "no warning naming -e nosuch"; }
grep -q "\-e '/etc/passwd' matched nothing: it is not inside a source" "$ERR_FILE" ||
	{ show_err; fail "no warning naming -e /etc/passwd"; }
[ "$(wc -l <"$ERR_FILE")" = 3 ] || { show_err; fail "expected 3 warning lines (a, a/b and *.gz matched)"; }
# an old habit: -e as the glob --exclude was; the warning says what -e takes now
run_capture glob_e "$SQK" mkimage "$SRC" "$W/um3.sqsh" -q -e '*.gz'
grep -q "\-e '\*.gz' matched nothing: no such path in the source (-e takes exact paths; a pattern wants -wildcards" \
	"$ERR_FILE" || { show_err; fail "no hint for -e with a glob"; }
run_capture wild_unmatched "$SQK" mkimage "$SRC" "$W/um2.sqsh" -q -wildcards -e '... *.zip' a
grep -q "\-e '... \*.zip' (-wildcards) matched nothing" "$ERR_FILE" ||
	{ show_err; fail "no warning naming -wildcards '... *.zip'"; }
[ "$(wc -l <"$ERR_FILE")" = 1 ] || { show_err; fail "expected 1 warning line"; }
info "unmatched excludes: one line each, naming them"

# ---- 7. refusals: -mem, unknown options named as typed, -e's rest of the line --------------
# refused NAME EXIT PATTERN ARGS...: mkimage ARGS fails with EXIT, stderr matches, no image
refused() {
	local name=$1 code=$2 pat=$3
	shift 3
	rm -f "$W/no.sqsh"
	run_capture "$name" "$SQK" mkimage "$@"
	[ "$RC" = "$code" ] || { show_err; fail "$name: exit $RC, expected $code: $*"; }
	grep -Eq -- "$pat" "$ERR_FILE" || { show_err; fail "$name: stderr does not match /$pat/"; }
	[ ! -e "$W/no.sqsh" ] || fail "$name: an image was written"
	info "$name: $(head -n 1 "$ERR_FILE" | cut -c1-110)"
}
refused mem 2 "-mem is not supported: it is mksquashfs's total memory.*--mem SIZE is another" \
	"$SRC" "$W/no.sqsh" -mem 512M
sqk_build "$SRC" "$W/mem.sqsh" -q --mem 8M
refused unknown_word 2 "unknown option '-no-such-word'" "$SRC" "$W/no.sqsh" -no-such-word
refused unknown_after_value 2 "unknown option '-Y'" "$SRC" "$W/no.sqsh" -j 2 -Y
grep -q "'2'" "$ERR_FILE" && fail "the unknown option's message names the value before it"
refused unknown_long 2 "unknown option '--frobnicate'" -b 64K --frobnicate "$SRC" "$W/no.sqsh"
refused unknown_bundle 2 "unknown option '-Z' \(in '-qZ'" "$SRC" "$W/no.sqsh" -qZ
refused e_first 2 "put the paths before -e" -e a "$SRC" "$W/no.sqsh"
refused regex 2 "invalid regular expression 'a\('" "$SRC" "$W/no.sqsh" -regex -e 'x/a(' 
refused tar_e 2 "excludes are not applied to a tar stream" --tar /dev/null "$W/no.sqsh" -e a

# ---- 8. "--" ends the options; --tar [FILE] IMAGE with options after it ----------------------
mkdir -p "$W/dash/-comp"
echo d >"$W/dash/-comp/f"
(cd "$W/dash" && "$SQK" mkimage -q -- -comp out.sqsh) || fail "-- then a source named -comp"
[ "$("$SQK" ls "$W/dash/out.sqsh")" = f ] || fail "--: the source -comp was not packed"
"$SQK" tar -o "$W/t.tar" "$W/zstd.sqsh" || fail "sqk tar failed"
sqk_build --tar "$W/t.tar" "$W/fromtar.sqsh" -comp gzip -quiet
assert_comp "$W/fromtar.sqsh" gzip
sqk_build "$W/t.tar" "$W/fromtar2.sqsh" -tar -comp gzip -quiet
same "$W/fromtar.sqsh" "$W/fromtar2.sqsh" "--tar FILE IMAGE and FILE IMAGE -tar"
info "all mksquashfs habits checked"
