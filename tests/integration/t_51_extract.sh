#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# sqk extract: thread counts, PATH subsets, a non-empty DEST (refused without --force, left
# untouched), --force replacing entries without following a symlink planted in DEST, and
# crafted images with duplicate, unsorted, '..' and '/' names failing cleanly.
. "$(dirname "$0")/lib.sh"
need_root
need_sqk
need_cmd mksquashfs python3

W=$(scratch ext)
SRC=$W/src
$MKTREE --small --no-sparse "$SRC" || fail "mktree failed"
IMG=$W/img.sqsh
mksquashfs "$SRC" "$IMG" -noappend -no-progress -quiet -processors 2 >/dev/null ||
	fail "mksquashfs failed"

ok_extract() {
	run_capture ext "$SQK" extract "$@"
	[ "$RC" = 0 ] || { show_err; fail "sqk extract $* exited $RC"; }
}

# -j 1 and -j 7 give the same tree
for j in 1 7; do
	ok_extract -j $j "$IMG" "$W/x.j$j"
	tree_equal "-j $j" "$SRC" "$W/x.j$j"
done
rm -rf "$W/x.j7"
# the sanitizer build, when given: -j 4 extraction and a listing
if [ -n "${SQK_SAN:-}" ] && [ -x "$SQK_SAN" ]; then
	run_capture san "$SQK_SAN" extract -j 4 "$IMG" "$W/x.san"
	[ "$RC" = 0 ] || { show_err; fail "SQK_SAN extract exited $RC"; }
	tree_equal "SQK_SAN -j 4" "$SRC" "$W/x.san"
	run_capture san_ls "$SQK_SAN" ls -lR "$IMG"
	[ "$RC" = 0 ] || { show_err; fail "SQK_SAN ls -lR exited $RC"; }
	run_capture san_info "$SQK_SAN" info --json "$IMG"
	[ "$RC" = 0 ] || { show_err; fail "SQK_SAN info exited $RC"; }
	rm -rf "$W/x.san"
fi

# PATH subsets: only those subtrees (and their parents)
ok_extract "$IMG" "$W/x.sub" files hl/a /names/ディレクトリ/ hl/a/one links/rel
got=$(cd "$W/x.sub" && find . -mindepth 1 -maxdepth 1 | LC_ALL=C sort | tr '\n' ' ')
[ "$got" = "./files ./hl ./links ./names " ] || fail "PATH subsets: top level is '$got'"
tree_equal "PATH files" "$SRC/files" "$W/x.sub/files"
tree_equal "PATH hl/a" "$SRC/hl/a" "$W/x.sub/hl/a" --no-hardlinks
tree_equal "PATH names/ディレクトリ" "$SRC/names/ディレクトリ" "$W/x.sub/names/ディレクトリ"
[ "$(ls -A "$W/x.sub/links")" = rel ] || fail "PATH links/rel extracted $(ls -A "$W/x.sub/links")"
run_capture missing "$SQK" extract "$IMG" "$W/x.missing" no/such/path
[ "$RC" = 1 ] || fail "missing PATH exited $RC"
grep -q 'no/such\|/no' "$ERR_FILE" || { show_err; fail "missing PATH: message does not name it"; }
run_capture dotdot "$SQK" extract "$IMG" "$W/x.dd" files/../..
[ "$RC" = 2 ] || fail "PATH with .. exited $RC (expected 2)"
# -j is decimal ("08" is eight threads) and bounded
for j in -1 0x2 0 1025; do
	run_capture badj "$SQK" extract -j "$j" "$IMG" "$W/badj"
	[ "$RC" = 2 ] || fail "-j $j exited $RC (expected 2)"
	[ ! -e "$W/badj" ] || fail "-j $j created the destination"
done
ok_extract "$IMG" "$W/x.j08" -j 08 files
tree_equal "-j 08" "$SRC/files" "$W/x.j08/files"

# a non-empty DEST is refused and left untouched
D=$W/nonempty
mkdir -p "$D/files" && echo keep >"$D/files/size_1" && echo other >"$D/mine"
dir_state "$D" >"$W/state"
run_capture nonempty "$SQK" extract "$IMG" "$D"
[ "$RC" = 1 ] || fail "non-empty DEST: exit $RC (expected 1)"
grep -q -- '--force' "$ERR_FILE" || { show_err; fail "non-empty DEST: message does not say --force"; }
assert_dir_state "$D" "$W/state" "non-empty DEST without --force"
[ "$(cat "$D/files/size_1")" = keep ] || fail "non-empty DEST: files/size_1 was changed"

# --force: entries replaced; a symlink in DEST where the image has a directory is replaced,
# never followed (nothing written into the outside directory)
OUT=$W/outside
mkdir -p "$OUT" && echo untouched >"$OUT/marker"
dir_state "$OUT" >"$W/out_state"
rm -rf "$D" && mkdir -p "$D"
ln -s "$OUT" "$D/files"
ln -s "$OUT" "$D/top_level_file"
ln -s "$OUT/marker" "$D/dup"
mkdir -p "$D/hl/a/one"        # a directory where the image has a file
echo stale >"$D/extra"
ok_extract --force "$IMG" "$D"
assert_dir_state "$OUT" "$W/out_state" "--force with symlinks in DEST"
[ -d "$D/files" ] && [ ! -L "$D/files" ] || fail "--force: DEST/files is still a symlink"
[ -f "$D/top_level_file" ] && [ ! -L "$D/top_level_file" ] || fail "--force: top_level_file"
[ "$(cat "$D/extra")" = stale ] || fail "--force removed an entry not in the image"
rm -f "$D/extra"
tree_equal "--force over a prepared DEST" "$SRC" "$D" --ignore-root-attrs

# a subtree extraction with --force into a DEST whose parent component is a symlink
rm -rf "$D" && mkdir -p "$D" && ln -s "$OUT" "$D/dup"
ok_extract --force "$IMG" "$D" dup/a
assert_dir_state "$OUT" "$W/out_state" "--force PATH through a planted symlink"
tree_equal "--force dup/a" "$SRC/dup/a" "$D/dup/a"

# crafted images: names patched in an uncompressed directory table
C=$W/crafted
mkdir -p "$C/d"
i=0
for n in name_b name_c p1 p2 qq; do i=$((i + 1)); echo "content $i" >"$C/d/$n"; done
mksquashfs "$C" "$W/plain.sqsh" -noI -noD -noF -noX -noappend -no-progress -quiet \
	>/dev/null || fail "mksquashfs (crafted) failed"
# patch OLD NEW OUT: replace the single occurrence of OLD by NEW (same length)
patch_name() {
	python3 - "$W/plain.sqsh" "$1" "$2" "$3" <<'PYEOF' || fail "patching $1 failed"
import sys
src, old, new, out = sys.argv[1], sys.argv[2].encode(), sys.argv[3].encode(), sys.argv[4]
data = open(src, 'rb').read()
assert data.count(old) == 1, (old, data.count(old))
open(out, 'wb').write(data.replace(old, new))
PYEOF
}
for case in "name_c name_b duplicate" "name_c name_a unsorted" "p2 .. dotdot" "qq q/ slash" \
	"p1 .. dotdot_first"; do
	set -- $case
	patch_name "$1" "$2" "$W/bad_$3.sqsh"
	rm -rf "$W/x.bad" "$W/x.outside_probe"
	run_capture "bad_$3" "$SQK" extract "$W/bad_$3.sqsh" "$W/x.bad"
	[ "$RC" = 1 ] || { show_err; fail "crafted $3 name: exit $RC (expected 1)"; }
	grep -q ': /d: ' "$ERR_FILE" || { show_err; fail "crafted $3 name: error does not name /d"; }
	[ "$2" = name_a ] && [ -e "$W/x.bad/d/$2" ] && fail "crafted $3: entry '$2' created"
	[ -e "$W/x.bad/q" ] && fail "crafted $3: a path through '/' was created"
	info "crafted $3 name: $(head -n 1 "$ERR_FILE")"
	run_capture "ls_$3" "$SQK" ls -R "$W/bad_$3.sqsh"
	[ "$RC" = 1 ] || fail "ls -R of crafted $3 image exited $RC"
done
exit 0
