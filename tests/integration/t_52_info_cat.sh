#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# sqk cat, ls and info on mksquashfs and sqk mkimage images of the small rich tree: cat of every
# regular file equals the source, ls -lR lists the same paths as find, info --json is valid JSON
# whose counts match the source tree; usage and error exit codes.
. "$(dirname "$0")/lib.sh"
need_root
need_sqk
need_cmd mksquashfs python3 cmp

W=$(scratch ic)
SRC=$W/src
$MKTREE --small --no-sparse "$SRC" || fail "mktree failed"
mksquashfs "$SRC" "$W/m.sqsh" -comp xz -b 64K -noappend -no-progress -quiet -processors 2 \
	>/dev/null || fail "mksquashfs failed"
sqk_build -c lz4 "$SRC" "$W/s.sqsh"

check_image() {
	local img=$1 what=$2 n=0 p
	# cat: every regular file, byte for byte
	while IFS= read -r -d '' p; do
		"$SQK" cat "$img" "$p" >"$W/cat.out" 2>"$W/cat.err" ||
			{ cat "$W/cat.err" >&2; fail "$what: sqk cat $p failed"; }
		cmp -s "$W/cat.out" "$SRC/$p" || fail "$what: sqk cat $p differs from the source"
		n=$((n + 1))
	done < <(cd "$SRC" && find . -type f -printf '%P\0')
	info "$what: cat of $n files matches"
	# several paths in one call are concatenated
	"$SQK" cat "$img" files/size_1 /files/text_small >"$W/cat2.out" || fail "$what: cat two files"
	cat "$SRC/files/size_1" "$SRC/files/text_small" | cmp -s - "$W/cat2.out" ||
		fail "$what: cat of two files differs"

	# ls -lR: same paths as find (names are the last field; no spaces in the fields before)
	run_capture lsR "$SQK" ls -R "$img"
	[ "$RC" = 0 ] || { show_err; fail "$what: ls -R exited $RC"; }
	(cd "$SRC" && find . -mindepth 1 -printf '%P\n') | LC_ALL=C sort >"$W/find.txt"
	LC_ALL=C sort "$OUT_FILE" >"$W/ls.txt"
	diff "$W/find.txt" "$W/ls.txt" >&2 || fail "$what: ls -R paths differ from find"
	run_capture lslR "$SQK" ls -lnR "$img"
	[ "$RC" = 0 ] || { show_err; fail "$what: ls -lR exited $RC"; }
	[ "$(grep -c '' "$OUT_FILE")" = "$(grep -c '' "$W/ls.txt")" ] ||
		fail "$what: ls -lR printed a different number of lines than ls -R"
	grep -q '^brw-r-----   1     0     6      8, 1 .* dev/block_8_1$' "$OUT_FILE" ||
		fail "$what: ls -lR line of dev/block_8_1: $(grep block_8_1 "$OUT_FILE")"
	grep -q '^-rwsrwsrwt .* modes/suid_sgid_sticky$' "$OUT_FILE" ||
		fail "$what: ls -lR mode string of suid_sgid_sticky"
	grep -q '^lrwxrwxrwx .* links/rel -> \.\./files/size_1$' "$OUT_FILE" ||
		fail "$what: ls -lR symlink line"
	grep -q '^-rw-r--r--   3 .* hl/three$' "$OUT_FILE" || fail "$what: ls -lR nlink of hl/three"
	# one entry, and a directory
	[ "$("$SQK" ls "$img" files/size_1)" = files/size_1 ] || fail "$what: ls of one file"
	[ "$("$SQK" ls "$img" /hl/b)" = "$(printf 'c\nsmall_y')" ] || fail "$what: ls hl/b"

	# info --json: valid, and counts agree with the source tree
	run_capture info "$SQK" info --json "$img"
	[ "$RC" = 0 ] || { show_err; fail "$what: info --json exited $RC"; }
	python3 - "$OUT_FILE" "$SRC" <<'PYEOF' || fail "$what: info --json check failed"
import json, os, sys
j = json.load(open(sys.argv[1]))
for k in ('data_blocks', 'fragment_blocks', 'inodes', 'bytes_used', 'block_size', 'compressor'):
    assert k in j, 'missing key %s' % k
assert isinstance(j['compressor'], str), j['compressor']
inos, size = set(), 0
for dp, dn, fn in os.walk(sys.argv[2]):
    for n in [dp] + [os.path.join(dp, x) for x in fn + dn]:
        st = os.lstat(n)
        if st.st_ino not in inos and os.path.isfile(n) and not os.path.islink(n):
            size += st.st_size
        inos.add(st.st_ino)
assert j['inodes'] == len(inos), ('inodes', j['inodes'], len(inos))
assert j['inodes_found'] == len(inos), ('inodes_found', j['inodes_found'], len(inos))
assert j['file_bytes'] == size, ('file_bytes', j['file_bytes'], size)
assert 0 < j['data_blocks'], j
assert j['metadata_blocks'] >= 2, j
print('  info: %d inodes, %d data blocks, %d fragment blocks, %d metadata blocks, ratio %.2f'
      % (j['inodes'], j['data_blocks'], j['fragment_blocks'], j['metadata_blocks'],
         j['compression_ratio']))
PYEOF
	run_capture infotext "$SQK" info "$img"
	[ "$RC" = 0 ] && grep -q '^blocks: .* data ' "$OUT_FILE" || { show_err; fail "$what: info"; }
}

check_image "$W/m.sqsh" "mksquashfs xz 64K"
check_image "$W/s.sqsh" "sqk mkimage lz4"
python3 -c 'import json,sys; assert json.load(open(sys.argv[1]))["compressor"]=="lz4"' \
		"$TMP/info.out" || fail "info --json compressor is not lz4"

# data_blocks: a duplicate file's blocks count once; sparse blocks do not count
D=$W/dd
mkdir -p "$D"
head -c 300000 /dev/urandom >"$D/a" && cp "$D/a" "$D/b"
truncate -s 1000000 "$D/holes" && printf 'x' | dd of="$D/holes" bs=1 seek=500000 conv=notrunc 2>/dev/null
mksquashfs "$D" "$W/dd.sqsh" -no-fragments -noappend -no-progress -quiet >/dev/null ||
	fail "mksquashfs dd failed"
got=$("$SQK" info --json "$W/dd.sqsh" | python3 -c 'import json,sys; print(json.load(sys.stdin)["data_blocks"])')
# a, b: 3 blocks once (128K blocks: 2 full + tail); holes: 1 stored block of 8
[ "$got" = 4 ] || fail "data_blocks of the dedup/sparse image is $got, expected 4"

# exit codes: usage 2, errors 1, help 0
for c in ls cat info extract; do
	"$SQK" "$c" --help >/dev/null || fail "sqk $c --help failed"
	"$SQK" "$c" --help | grep -q 'Exit status' || fail "sqk $c --help has no exit status"
	run_capture "u_$c" "$SQK" "$c"
	[ "$RC" = 2 ] || fail "sqk $c without arguments exited $RC (expected 2)"
	run_capture "o_$c" "$SQK" "$c" --bogus-option "$W/m.sqsh"
	[ "$RC" = 2 ] || fail "sqk $c --bogus-option exited $RC (expected 2)"
done
"$SQK" help | grep -q extract || fail "sqk help does not list extract"
run_capture nofile "$SQK" cat "$W/m.sqsh" files/nope
[ "$RC" = 1 ] && grep -q 'files/nope' "$ERR_FILE" || { show_err; fail "cat of a missing file"; }
run_capture notreg "$SQK" cat "$W/m.sqsh" links/rel
[ "$RC" = 1 ] && grep -q 'not a regular file' "$ERR_FILE" || { show_err; fail "cat of a symlink"; }
run_capture nols "$SQK" ls "$W/m.sqsh" nope
[ "$RC" = 1 ] || fail "ls of a missing path exited $RC"
head -c 100000 /dev/urandom >"$W/garbage"
for c in "ls" "info" "cat x" "extract $W/x.garbage"; do
	# shellcheck disable=SC2086
	run_capture garbage "$SQK" ${c%% *} "$W/garbage" $(echo "$c" | cut -s -d' ' -f2)
	[ "$RC" = 1 ] || fail "sqk $c on garbage exited $RC (expected 1)"
	grep -q "$W/garbage" "$ERR_FILE" || { show_err; fail "sqk $c: error does not name the image"; }
done

# A directory that contains itself (crafted): ls -R reports the loop instead of recursing forever.
LOOP=$IT_DIR/../fuzz/corpus/read/crafted-dir-loop.sqfs
[ -f "$LOOP" ] || fail "missing fixture $LOOP"
run_capture loop timeout 20 "$SQK" ls -R "$LOOP"
[ "$RC" = 1 ] || { show_err; fail "sqk ls -R on a looping image exited $RC (expected 1)"; }
grep -q 'directory loop' "$ERR_FILE" || { show_err; fail "sqk ls -R did not report the loop"; }
info "ls -R on a looping directory: reported, exit 1"

# names with control characters: -b escapes them (one entry, one line), -N and a pipe print
# them as stored
mkdir -p "$W/odd"
python3 - "$W/odd" <<'PY'
import os, sys
d = sys.argv[1]
for n in ['new\nline', 'tab\there', 'back\\slash', 'bell\x07', 'plain']:
    open(os.path.join(d, n), 'w').close()
os.symlink('to\nthere', os.path.join(d, 'link'))
PY
sqk_build -q "$W/odd" "$W/odd.sqsh"
run_capture ls_b "$SQK" ls -b "$W/odd.sqsh"
printf '%s\n' 'back\\slash' 'bell\007' link 'new\nline' plain 'tab\there' >"$W/odd.want"
diff "$W/odd.want" "$OUT_FILE" >&2 || fail "ls -b: names not escaped as expected"
run_capture ls_lb "$SQK" ls -l -b "$W/odd.sqsh" link
grep -q -- '-> to\\nthere$' "$OUT_FILE" || { cat "$OUT_FILE" >&2; fail "ls -l -b: link target not escaped"; }
run_capture ls_n "$SQK" ls "$W/odd.sqsh"
python3 - "$OUT_FILE" <<'PY' || fail "ls (piped): names not printed as stored"
import sys
got = open(sys.argv[1], 'rb').read()
want = b''.join(n + b'\n' for n in [b'back\\slash', b'bell\x07', b'link', b'new\nline', b'plain', b'tab\there'])
assert got == want, got
PY
info "ls -b escapes control characters; piped output is literal"
exit 0
