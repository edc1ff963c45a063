#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# unsquashfs's habits of `sqk extract` and `sqk cat` (issue 31, point 2), each compared with
# unsquashfs 4.7.5 on the same image (made by sqk mkimage): the trees (treecmp: presence, type,
# mode, owners, mtime, xattrs, hard links, contents) or the bytes written.
#  1. PATH globs (one or many), -ef lists, -excludes, -ex ... ';', -exclude-file, --exclude,
#     -max-depth with and without PATHs, -q, -p; options before, between and after the
#     positionals
#  2. the default DEST squashfs-root (in a scratch cwd), the old IMAGE DEST PATH form, a DEST
#     that looks like a glob refused, -f into a non-empty DEST
#  3. -ig on an image with a damaged block: the other files extracted, the bad one absent, a
#     count and exit 1 (unsquashfs: 2); -st (the default) stops at it
#  4. -o OFFSET (an image 8 KiB into a file), -no-xattrs, -info's list, the listing modes
#     (-ls, -lln, -lc, -lls) with globs, excludes, -max-depth and -ef, -cat and sqk cat globs
#  5. a bad option of each reading command: one line naming it and the hint, exit 2 (verify:
#     16), never the help; `sqk ls IMG -lh` does not print the help
#  6. -pf FILE / -pf - and -s / -stat -UTC print what unsquashfs -pf and -s print, byte for
#     byte; -pf into an unwritable place leaves nothing, -s with a PATH is refused
. "$(dirname "$0")/lib.sh"
need_root
need_sqk
need_cmd python3 cmp
peer_squashfs_tools
need_squashfs_tools 4.7
W=$(scratch xhab)
IMG=$W/img.sqsh

SRC=$W/src
mkdir -p "$SRC/a/b/c" "$SRC/d" "$SRC/e" "$SRC/.h"
for f in a/f1 a/f12 a/b/g a/b/c/h d/f1x top .h/x a/.dot; do echo "$f" >"$SRC/$f"; done
ln -s ../a "$SRC/e/ln"
ln "$SRC/top" "$SRC/a/hl"
chown 1234:5678 "$SRC/a/f12"
chmod 4755 "$SRC/a/b/g"
python3 -c 'import os, sys; os.setxattr(sys.argv[1], "user.k", b"v")' "$SRC/a/f1" ||
	fail "cannot set a user. xattr in $W"
sqk_build -q "$SRC" "$IMG"

N=0
# both WHAT ARGS...: unsquashfs -d U ARGS and sqk extract -d S ARGS give the same tree
both() {
	local what=$1 u s
	shift
	N=$((N + 1))
	u=$W/u.$N s=$W/s.$N
	run_capture unsq "$UNSQUASHFS" -n -d "$u" "$@"
	[ "$RC" = 0 ] || { show_err; fail "$what: unsquashfs exited $RC"; }
	run_capture sqkx "$SQK" extract -n -d "$s" "$@"
	[ "$RC" = 0 ] || { show_err; fail "$what: sqk extract exited $RC"; }
	tree_equal "$what" "$u" "$s"
}

# ---- 1. selection ---------------------------------------------------------------------------
both "one glob" "$IMG" 'a/f1*'
both "a glob on the first component" "$IMG" '*/f1*'
both "several paths" "$IMG" a/b d top
both "a leading '/' and '//'" "$IMG" /a//b/
both "a glob in the middle" "$IMG" 'a/*/c'
both "'*' (no hidden names)" "$IMG" '*'
both "'.*' and '?op'" "$IMG" '.*' '?op'
both "a bracket" "$IMG" 'a/[b]'
both "a hard link whose first name is not extracted" "$IMG" a/hl
printf 'a/f1\n  d\n\ntop\n' >"$W/list"
both "-ef list" -ef "$W/list" "$IMG"
both "-e list and a PATH" -e "$W/list" "$IMG" a/b/c
both "-excludes" -excludes "$IMG" a/b d
both "-excludes glob" -excludes "$IMG" '*/f1*'
both "-excludes of a hard link's first name" -excludes "$IMG" top
both "-ex list" -ex a/b top ';' "$IMG"
echo a/b >"$W/xlist"
both "-exclude-file" -exclude-file "$W/xlist" "$IMG" a
for depth in 0 1 2; do
	both "-max-depth $depth" -max-depth "$depth" "$IMG"
done
both "-max-depth 2 a" -max-depth 2 "$IMG" a
both "-max-depth 1 a/b" -max-depth 1 "$IMG" a/b
both "-q, -p 1, -f into a new DEST" -q -p 1 -f "$IMG" a
[ ! -s "$ERR_FILE" ] || { show_err; fail "-q: sqk printed something"; }

# --exclude GLOB (sqk's spelling) against unsquashfs's -exclude-file of the same pattern; options
# after and between the positionals
echo '*/b' >"$W/xglob"
run_capture unsq "$UNSQUASHFS" -n -d "$W/u.xg" -exclude-file "$W/xglob" "$IMG" a
run_capture sqkx "$SQK" extract "$IMG" -n a --exclude '*/b' -d "$W/s.xg"
[ "$RC" = 0 ] || { show_err; fail "--exclude after the paths: exit $RC"; }
tree_equal "--exclude GLOB, options after the positionals" "$W/u.xg" "$W/s.xg"
run_capture sqkx "$SQK" extract "$IMG" 'a/f1*' -d "$W/s.mid" -no-progress -max-depth 2 d
[ "$RC" = 0 ] || { show_err; fail "options between the PATHs: exit $RC"; }
tree_equal "options between the PATHs ('*/f1*' but e)" "$W/u.2" "$W/s.mid" --exclude e
[ -f "$W/s.mid/d/f1x" ] && [ -f "$W/s.mid/a/f12" ] && [ ! -e "$W/s.mid/a/b" ] ||
	fail "options between the PATHs: not the entries of 'a/f1*' and d"

# ---- 2. DEST -------------------------------------------------------------------------------
mkdir "$W/cwd.u" "$W/cwd.s"
(cd "$W/cwd.u" && "$UNSQUASHFS" -n "$IMG" >/dev/null 2>&1) || fail "unsquashfs into the cwd"
(cd "$W/cwd.s" && "$SQK" extract -n "$IMG" 2>"$W/cwd.err") || fail "sqk extract IMG: $(cat "$W/cwd.err")"
[ "$(ls -A "$W/cwd.s")" = squashfs-root ] || fail "sqk extract IMG made $(ls -A "$W/cwd.s")"
tree_equal "the default DEST squashfs-root" "$W/cwd.u/squashfs-root" "$W/cwd.s/squashfs-root"
run_capture sqkx "$SQK" extract -n "$IMG" "$W/old" a/b d top
tree_equal "the IMAGE DEST PATH form" "$W/u.3" "$W/old"
run_capture sqkx "$SQK" extract -n "$IMG" 'a/f1*'
[ "$RC" = 2 ] && grep -q "DEST 'a/f1\*' looks like a PATH pattern" "$ERR_FILE" &&
	[ ! -e 'a' ] || { show_err; fail "a glob as DEST: exit $RC"; }
info "a glob in DEST's place refused (exit 2, names -d)"

# -f: into a DEST with an extra file and an older a/f1
for t in u s; do
	mkdir -p "$W/f.$t/a"
	echo old >"$W/f.$t/a/f1"
	echo mine >"$W/f.$t/keep"
done
run_capture sqkx "$SQK" extract -n -d "$W/f.s" "$IMG"
[ "$RC" = 1 ] && grep -q "exists and is not empty" "$ERR_FILE" ||
	{ show_err; fail "a non-empty DEST without -f: exit $RC"; }
run_capture unsq "$UNSQUASHFS" -n -f -d "$W/f.u" "$IMG"
[ "$RC" = 0 ] || { show_err; fail "unsquashfs -f exited $RC"; }
run_capture sqkx "$SQK" extract -n -f -d "$W/f.s" "$IMG"
[ "$RC" = 0 ] || { show_err; fail "sqk extract -f exited $RC"; }
tree_equal "-f into a non-empty DEST (an extra file kept, a/f1 replaced)" "$W/f.u" "$W/f.s"
[ "$(cat "$W/f.s/keep")" = mine ] && [ "$(cat "$W/f.s/a/f1")" = a/f1 ] || fail "-f: wrong files"

# ---- 3. -ig and -st on a damaged block -------------------------------------------------------
mkdir -p "$W/dsrc/d"
python3 - "$W/dsrc" <<'PY'
import random, sys
r = random.Random(56)
for n in ('a.txt', 'd/m.txt', 'z.txt'):
    open(sys.argv[1] + '/' + n, 'wb').write(
        b''.join(b'line %d %x\n' % (i, r.getrandbits(32)) for i in range(20000)))
PY
sqk_build -q -c gzip "$W/dsrc" "$W/good.sqsh"
python3 "$IT_DIR/sqfs_patch.py" layout "$W/good.sqsh" | python3 -c '
import json, sys
d = json.load(sys.stdin)["data"]
print(*[(s + e) // 2 for s, e, what in d if what == "data of /d/m.txt"])' >"$W/mid" ||
	fail "cannot find /d/m.txt's blocks"
python3 - "$W/good.sqsh" "$W/bad.sqsh" "$(cat "$W/mid")" <<'PY'
import sys
img = bytearray(open(sys.argv[1], 'rb').read())
img[int(sys.argv[3])] ^= 0x5a
open(sys.argv[2], 'wb').write(img)
PY
run_capture unsq "$UNSQUASHFS" -n -ig -d "$W/ig.u" "$W/bad.sqsh"
[ "$RC" = 2 ] || { show_err; fail "unsquashfs -ig exited $RC, not 2"; }
run_capture sqkx "$SQK" extract -n -ig -d "$W/ig.s" "$W/bad.sqsh"
[ "$RC" = 1 ] || { show_err; fail "sqk extract -ig exited $RC, not 1"; }
grep -q "1 error gone past (-ignore-errors): extracted 2 of 3 files into $W/ig.s" "$ERR_FILE" &&
	grep -q "/d/m.txt: read failed.*removed the partial file" "$ERR_FILE" ||
	{ show_err; fail "sqk extract -ig: not the count and the file named"; }
tree_equal "-ig: the same files as unsquashfs -ig" "$W/ig.u" "$W/ig.s"
[ ! -e "$W/ig.s/d/m.txt" ] && cmp -s "$W/ig.s/z.txt" "$W/dsrc/z.txt" || fail "-ig: wrong files"
run_capture sqkx "$SQK" extract -n -st -p 1 -d "$W/st.s" "$W/bad.sqsh"
[ "$RC" = 1 ] && grep -q "extracted 1 of 3 files into $W/st.s before the error" "$ERR_FILE" &&
	[ ! -e "$W/st.s/d/m.txt" ] && [ ! -e "$W/st.s/z.txt" ] ||
	{ show_err; fail "sqk extract -st: exit $RC, or it went on"; }
info "-st: stopped at /d/m.txt, exit 1"

# ---- 4. -o, -no-xattrs, -info, -cat ----------------------------------------------------------
{ head -c 8192 /dev/urandom; cat "$IMG"; } >"$W/embedded.bin"
both "-o 8192" -o 8192 "$W/embedded.bin"
both "-o 8K" -o 8K "$W/embedded.bin"
both "-no-xattrs" -no-xattrs "$IMG"
python3 -c 'import os, sys; sys.exit(len(os.listxattr(sys.argv[1])) != 0)' "$W/s.$N/a/f1" ||
	fail "-no-xattrs: a/f1 has xattrs"
python3 -c 'import os, sys; sys.exit(os.getxattr(sys.argv[1], "user.k") != b"v")' "$W/s.1/a/f1" ||
	fail "the default: a/f1 lost user.k"
both "-xattrs-exclude '^user\\.'" -xattrs-exclude '^user\.' "$IMG"

"$UNSQUASHFS" -n -i -d "$W/i.u" "$IMG" a | grep "^$W/i.u" | sed "s|^$W/i.u|DEST|" >"$W/i.u.txt"
"$SQK" extract -n -i -d "$W/i.s" "$IMG" a | sed "s|^$W/i.s|DEST|" >"$W/i.s.txt"
diff "$W/i.u.txt" "$W/i.s.txt" >&2 || fail "-info: the lists differ"
info "-info: the same $(wc -l <"$W/i.s.txt") lines as unsquashfs -info"

# the listing modes select as extraction does (globs, excludes, -max-depth)
lsboth() {
	local what=$1
	shift
	"$UNSQUASHFS" "$@" >"$W/l.u" 2>/dev/null || fail "$what: unsquashfs $*"
	"$SQK" extract "$@" >"$W/l.s" 2>"$W/l.err" || { cat "$W/l.err" >&2; fail "$what: sqk extract $*"; }
	diff "$W/l.u" "$W/l.s" >&2 || fail "$what: the listings differ"
	[ -s "$W/l.s" ] || fail "$what: nothing listed"
}
lsboth "-ls with a glob" -ls "$IMG" 'a/f1*'
lsboth "-lln with two globs and an exclude" -lln -ex 'a/b/c' ';' "$IMG" '*/f1*' a/b
lsboth "-ls -excludes" -ls -excludes "$IMG" 'a/b/c' d
lsboth "-lc with -max-depth 2" -lc -max-depth 2 "$IMG"
lsboth "-lls -ef list" -lls -ef "$W/list" "$IMG"
info "listing modes with globs, excludes, -max-depth, -ef: unsquashfs's lines"

"$UNSQUASHFS" -cat "$IMG" 'a/f1*' top d/f1x >"$W/cat.u" 2>/dev/null || fail "unsquashfs -cat"
"$SQK" extract -cat "$IMG" 'a/f1*' top d/f1x >"$W/cat.s" || fail "sqk extract -cat"
"$SQK" cat "$IMG" 'a/f1*' -n top d/f1x >"$W/cat.c" || fail "sqk cat with a glob"
cmp "$W/cat.u" "$W/cat.s" && cmp "$W/cat.u" "$W/cat.c" || fail "-cat: other bytes"
run_capture sqkx "$SQK" cat "$IMG" 'a/*'
[ "$RC" = 1 ] && grep -q "/a/b: not a regular file" "$ERR_FILE" && cmp -s "$OUT_FILE" \
	<(cat "$SRC/a/f1" "$SRC/a/f12" "$SRC/a/hl") || { show_err; fail "cat 'a/*'"; }
info "-cat, sqk cat: the bytes of unsquashfs -cat (globs, several paths)"

# ---- 5. bad options ----------------------------------------------------------------------------
for c in ls cat extract tar info verify; do
	for bad in -Q --nope; do
		run_capture bad "$SQK" "$c" "$IMG" "$bad" top
		want=2
		[ "$c" = verify ] && want=16
		[ "$RC" = "$want" ] && [ "$(wc -l <"$ERR_FILE")" = 1 ] && [ ! -s "$OUT_FILE" ] &&
			grep -qx "sqk $c: unknown option '$bad'; sqk $c --help lists the options" \
				"$ERR_FILE" || { show_err; fail "sqk $c ... $bad: exit $RC"; }
	done
done
info "a bad option: one line naming it, exit 2 (verify 16), for ls cat extract tar info verify"
run_capture lh "$SQK" ls "$IMG" -lh
[ "$RC" = 2 ] && ! grep -q usage "$OUT_FILE" "$ERR_FILE" && [ "$(wc -l <"$ERR_FILE")" = 1 ] ||
	{ show_err; fail "sqk ls IMG -lh: exit $RC"; }
run_capture lo "$SQK" ls -o 8192 "$W/embedded.bin" a/b
[ "$RC" = 0 ] && [ "$(cat "$OUT_FILE")" = "$(printf 'c\ng')" ] || { show_err; fail "ls -o"; }
info "sqk ls IMG -lh: one line, exit 2; sqk ls -o OFFSET"

# ---- 6. -pf FILE, -s: unsquashfs's, through sqk ls --pseudo's and sqk info -s's code -------
"$UNSQUASHFS" -pf "$W/u.pf" "$IMG" >/dev/null 2>&1 || fail "unsquashfs -pf FILE"
"$SQK" extract -pf "$W/s.pf" "$IMG" || fail "sqk extract -pf FILE"
cmp "$W/u.pf" "$W/s.pf" || fail "extract -pf FILE differs from unsquashfs -pf FILE"
grep -q "^a/b/g R .* 4755 0 0 " "$W/s.pf" || fail "extract -pf: no a/b/g line: $(head "$W/s.pf")"
"$UNSQUASHFS" -pf - "$IMG" 2>/dev/null >"$W/u.pf"
"$SQK" extract "$IMG" -pseudo-file - >"$W/s.pf" || fail "sqk extract -pseudo-file -"
cmp "$W/u.pf" "$W/s.pf" || fail "extract -pf - differs from unsquashfs -pf -"
run_capture pfbad "$SQK" extract -pf "$W/nodir/x.pf" "$IMG"
[ "$RC" = 1 ] && [ ! -e "$W/nodir" ] && grep -q "cannot create $W/nodir/x.pf" "$ERR_FILE" ||
	{ show_err; fail "extract -pf into a missing directory: exit $RC"; }
for tz in UTC IST-5:30; do
	TZ=$tz "$UNSQUASHFS" -s "$IMG" >"$W/u.s"
	TZ=$tz "$SQK" extract -s "$IMG" >"$W/s.s" || fail "sqk extract -s"
	cmp "$W/u.s" "$W/s.s" || { diff "$W/u.s" "$W/s.s" >&2; fail "extract -s, TZ=$tz"; }
	TZ=$tz "$UNSQUASHFS" -stat -UTC "$IMG" >"$W/u.s"
	TZ=$tz "$SQK" extract -stat -UTC "$IMG" >"$W/s.s" || fail "sqk extract -stat -UTC"
	cmp "$W/u.s" "$W/s.s" || { diff "$W/u.s" "$W/s.s" >&2; fail "extract -stat -UTC"; }
done
grep -q "^Found a valid SQUASHFS 4:0 superblock" "$W/s.s" || fail "extract -s: $(cat "$W/s.s")"
run_capture sp "$SQK" extract -s "$IMG" a
[ "$RC" = 2 ] && [ ! -s "$OUT_FILE" ] && grep -q -- "-s takes IMAGE alone" "$ERR_FILE" ||
	{ show_err; fail "extract -s IMG PATH: exit $RC"; }
info "extract -pf FILE, -pf -, -s, -stat -UTC: unsquashfs's bytes; bad uses refused"
