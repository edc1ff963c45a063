#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# sqk diff against squashfs-tools-ng's sqfsdiff (issue 31, point 3). Pairs of images of trees
# that differ in exactly one field each (a byte of contents, the size, mode, uid, gid, mtime,
# a symlink target, device numbers, an added file, a removed one, a file replaced by a
# directory, an xattr value, an added xattr): sqk diff prints sqfsdiff's lines, in its order,
# with its exit status, and also the line it names for each case; where they part (sqfsdiff
# exits 0 on a changed link target, does not see xattrs, calls a basic and an extended inode
# different) the sqk line is the one asserted. A tree built with another block size and
# compressor, and by mksquashfs, is the same tree; -S then reports what sqfsdiff -S does.
# -O -P -T -I -C behave as sqfsdiff's, -e extracts the same files. A directory or an http
# URL as either side gives the lines of the image it stands for; --json parses and names the
# field and both values; a missing file or a bad option is exit 2 with one line.
. "$(dirname "$0")/lib.sh"
need_root
need_sqk
need_cmd sqfsdiff python3 mknod mkfifo
peer_squashfs_tools

W=$(scratch diff)
export SOURCE_DATE_EPOCH=1700000000
T0=1000000

setx() { python3 -c 'import os, sys; os.setxattr(sys.argv[1], sys.argv[2], sys.argv[3].encode())' "$@"; }

# mkbase DIR: the tree every variant starts from
mkbase() {
	local d=$1
	mkdir -p "$d/d/sub" "$d/e"
	printf 'hello\n' >"$d/d/f"
	python3 -c 'import sys; sys.stdout.write("".join("line %d\n" % i for i in range(60000)))' \
		>"$d/big"
	echo x >"$d/a"
	echo keep >"$d/d/sub/k"
	ln -s target "$d/l"
	mknod "$d/dev" c 1 3
	mkfifo "$d/fifo"
	chmod 644 "$d/a" "$d/d/f" "$d/big" "$d/d/sub/k"
	chmod 755 "$d" "$d/d" "$d/d/sub" "$d/e"
	setx "$d/d/f" user.a one || fail "cannot set a user. xattr in $d"
}

# normalise DIR: every timestamp T0 (the variants change them; -T is tested on its own pair)
normalise() {
	find "$1" -exec touch -h -d "@$T0" {} +
}

# The variants: NAME, the change, the line sqk diff prints (sqfsdiff's where it has one).
VARIANTS=(
	"content|printf 'hellp\\n' >d/f|regular file /d/f differs"
	"bigbyte|python3 -c 'import sys; f = open(\"big\", \"r+b\"); f.seek(400000); f.write(b\"#\")'|regular file /big differs"
	"size|echo more >>d/f|regular file /d/f differs"
	"mode|chmod 600 a|/a has different permissions"
	"uid|chown 5 a|/a has different ownership"
	"gid|chgrp 5 a|/a has different ownership"
	"target|ln -sfn other l|/l has a different link target"
	"device|rm dev && mknod dev c 1 5|/dev has different device number"
	"added|echo new >d/new|> d/new"
	"removed|rm d/sub/k|< d/sub/k"
	"replaced|rm a && mkdir a|/a has a different type"
	"xattrval|setx d/f user.a two|/d/f has a different xattr user.a"
	"xattradd|setx d/sub/k user.b new|/d/sub/k has an added xattr user.b"
)

mkbase "$W/base"
normalise "$W/base"
sqk_build "$W/base" "$W/base.sqsh" -q
for v in "${VARIANTS[@]}"; do
	IFS='|' read -r name change line <<<"$v"
	cp -a "$W/base" "$W/$name"
	(cd "$W/$name" && eval "$change") || fail "$name: cannot make the variant ($change)"
	normalise "$W/$name"
	sqk_build "$W/$name" "$W/$name.sqsh" -q
done

# run_both NAME [OPTIONS]: sqfsdiff and sqk diff of base.sqsh and NAME.sqsh; sets P_RC, S_RC
# and leaves their stdout in $W/peer.out and $W/sqk.out
run_both() {
	local name=$1
	shift
	P_RC=0 S_RC=0
	sqfsdiff "$@" -a "$W/base.sqsh" -b "$W/$name.sqsh" >"$W/peer.out" 2>"$W/peer.err" || P_RC=$?
	"$SQK" diff "$@" "$W/base.sqsh" "$W/$name.sqsh" >"$W/sqk.out" 2>"$W/sqk.err" || S_RC=$?
	[ -s "$W/sqk.err" ] && fail "$name: sqk diff wrote to stderr: $(head -3 "$W/sqk.err")"
	return 0
}

# same_as_peer WHAT: sqk diff's output and status are sqfsdiff's
same_as_peer() {
	if ! diff -u "$W/peer.out" "$W/sqk.out" >"$W/d.out"; then
		cat "$W/d.out" >&2
		fail "$1: sqk diff's lines are not sqfsdiff's"
	fi
	[ "$P_RC" = "$S_RC" ] || fail "$1: sqfsdiff exits $P_RC, sqk diff $S_RC"
}

# ---- 1. one field each: sqfsdiff's line and status, or the sqk line where they part --------
for v in "${VARIANTS[@]}"; do
	IFS='|' read -r name change line <<<"$v"
	run_both "$name"
	[ "$(cat "$W/sqk.out")" = "$line" ] ||
		fail "$name: sqk diff printed '$(cat "$W/sqk.out")', expected '$line'"
	[ "$S_RC" = 1 ] || fail "$name: sqk diff exits $S_RC, not 1"
	case $name in
	target) # sqfsdiff 1.2 prints the line but exits 0 (it forgets the status)
		[ "$(cat "$W/peer.out")" = "$line" ] && [ "$P_RC" = 0 ] ||
			fail "target: sqfsdiff no longer says '$line' with exit 0 (rc $P_RC)" ;;
	xattrval | xattradd) # sqfsdiff does not compare xattrs; an added one makes the
		# inode extended, which sqfsdiff reports
		[ "$P_RC" != 2 ] || fail "$name: sqfsdiff failed: $(cat "$W/peer.err")" ;;
	*) same_as_peer "$name" ;;
	esac
	info "$name: $line"
done

# ---- 2. the switches --------------------------------------------------------------------------
check_switch() { # NAME OPTION RC: both tools exit RC with the same lines
	run_both "$1" $2
	same_as_peer "$1 $2"
	[ "$S_RC" = "$3" ] || fail "$1 $2: sqk diff exits $S_RC, expected $3"
	info "$1 $2: exit $3 as sqfsdiff"
}
check_switch uid -O 0
check_switch gid -O 0
check_switch mode -P 0
check_switch content -C 0
check_switch size -C 1

# -T: an mtime alone differs only with -T
cp -a "$W/base" "$W/mtime"
touch -d @2000 "$W/mtime/a"
sqk_build "$W/mtime" "$W/mtime.sqsh" -q
check_switch mtime "" 0
check_switch mtime -T 1
grep -qx '/a has a different timestamp' "$W/sqk.out" || fail "-T: no timestamp line"

# many differences at once: the same lines in the same order as sqfsdiff (-T -I too)
cp -a "$W/base" "$W/many"
(
	cd "$W/many" && printf 'hellp\n' >d/f && chmod 600 a && rm d/sub/k && echo n >d/sub/new &&
		rm fifo && mkdir -p fifo/in && echo z >fifo/in/z && chown 7:8 d && rm dev &&
		mknod dev b 3 4 && mkdir -p zz/deep && echo q >zz/deep/q && rm -r e
) || fail "cannot make the tree 'many'"
normalise "$W/many"
touch -d @3000 "$W/many/big"
sqk_build "$W/many" "$W/many.sqsh" -q
for o in "" -T -I "-T -I -C -O -P"; do
	check_switch many "$o" 1
done
[ "$(wc -l <"$W/sqk.out")" -ge 8 ] || fail "many: too few lines: $(cat "$W/sqk.out")"

# ---- 3. the same tree, another layout: no difference; -S as sqfsdiff -S -------------------
sqk_build "$W/base" "$W/layout.sqsh" -q -b 4096 -c xz --no-fragments
run_both layout
same_as_peer "block size, compressor, fragments"
[ "$S_RC" = 0 ] && [ ! -s "$W/sqk.out" ] || fail "layout: sqk diff sees a difference"
run_both layout -S
same_as_peer "-S"
grep -qx 'block size: -126976' "$W/sqk.out" && grep -qx 'compressor: zstd vs xz' "$W/sqk.out" ||
	fail "-S: no block size or compressor line: $(cat "$W/sqk.out")"
info "-S: $(wc -l <"$W/sqk.out") lines as sqfsdiff's"

# mksquashfs's image of the same tree is the same tree (and -I says what sqfsdiff -I says)
"$MKSQUASHFS" "$W/base" "$W/mks.sqsh" -noappend -quiet -no-progress >/dev/null 2>&1 ||
	fail "mksquashfs failed"
run_both mks
same_as_peer "mksquashfs image"
[ "$S_RC" = 0 ] || fail "mksquashfs image: sqk diff sees a difference: $(cat "$W/sqk.out")"
run_both mks -I
same_as_peer "mksquashfs image -I"

# a basic inode and an extended one of the same file: no difference for sqk diff (sqfsdiff
# says "has a basic type"); the only one is the xattr that made it extended
sqk_build "$W/base" "$W/noxattr.sqsh" -q --no-xattrs
run_both noxattr
grep -qx '/d/f has a basic type' "$W/peer.out" ||
	fail "basic/extended: sqfsdiff did not see it: $(cat "$W/peer.out")"
[ "$(cat "$W/sqk.out")" = "/d/f has a removed xattr user.a" ] ||
	fail "basic/extended: sqk diff printed '$(cat "$W/sqk.out")'"
"$SQK" diff --no-xattrs "$W/noxattr.sqsh" "$W/base.sqsh" >"$W/sqk.out" ||
	fail "basic/extended: sqk diff --no-xattrs sees a difference: $(cat "$W/sqk.out")"
info "basic vs extended inode: the same"

# a new hard link: sqfsdiff sees the name and the inode becoming extended, sqk diff the name
# and the link count; a directory side says the same
cp -a "$W/base" "$W/hardlink"
ln "$W/hardlink/a" "$W/hardlink/hl"
normalise "$W/hardlink"
sqk_build "$W/hardlink" "$W/hardlink.sqsh" -q
run_both hardlink
[ "$(cat "$W/peer.out")" = $'/a has an extended type\n> hl' ] ||
	[ "$(cat "$W/peer.out")" = $'> hl\n/a has an extended type' ] ||
	fail "hard link: sqfsdiff printed '$(cat "$W/peer.out")'"
[ "$(cat "$W/sqk.out")" = $'> hl\n/a has a different link count' ] && [ "$S_RC" = 1 ] ||
	fail "hard link: sqk diff printed '$(cat "$W/sqk.out")' (exit $S_RC)"
"$SQK" diff "$W/base.sqsh" "$W/hardlink" | cmp -s - "$W/sqk.out" ||
	fail "hard link: a directory side does not give the image's lines"
info "hard link: > hl, /a has a different link count"

# ---- 4. -e: the files that differ, under DIR/old and DIR/new, as sqfsdiff ------------------
sqfsdiff -a "$W/base.sqsh" -b "$W/many.sqsh" -e "$W/x-peer" >/dev/null
"$SQK" diff -e "$W/x-sqk" "$W/base.sqsh" "$W/many.sqsh" >/dev/null
[ $? = 1 ] || fail "-e: sqk diff did not exit 1"
diff -r "$W/x-peer" "$W/x-sqk" >&2 || fail "-e: sqk diff extracted other files than sqfsdiff"
[ "$(cat "$W/x-sqk/new/d/f")" = hellp ] && [ "$(cat "$W/x-sqk/old/d/f")" = hello ] &&
	[ -f "$W/x-sqk/old/d/sub/k" ] && [ -f "$W/x-sqk/new/zz/deep/q" ] ||
	fail "-e: not the files expected: $(cd "$W/x-sqk" && find . | sort)"
info "-e: $(cd "$W/x-sqk" && find . -type f | wc -l) files, as sqfsdiff"
# -q does not cut -e short
"$SQK" diff -q -e "$W/x-q" "$W/base.sqsh" "$W/many.sqsh" && fail "-q -e: exit 0"
diff -r "$W/x-peer" "$W/x-q" >&2 || fail "-q -e: not every file extracted"

# ---- 5. directory and URL sides: the lines of the image they stand for ----------------------
"$SQK" diff "$W/base" "$W/base.sqsh" >"$W/sqk.out" ||
	fail "a tree and its image differ: $(cat "$W/sqk.out")"
"$SQK" diff -T "$W/base.sqsh" "$W/base" >"$W/sqk.out" ||
	fail "an image and its tree differ (-T): $(cat "$W/sqk.out")"
for name in many content mode uid target device added removed replaced xattrval xattradd; do
	for pair in "base.sqsh $name" "base $name.sqsh" "base $name"; do
		set -- $pair
		"$SQK" diff "$W/base.sqsh" "$W/$name.sqsh" >"$W/img.out" 2>&1
		"$SQK" diff "$W/$1" "$W/$2" >"$W/dir.out" 2>&1
		diff -u "$W/img.out" "$W/dir.out" >&2 ||
			fail "sqk diff $pair: not the lines of the two images"
	done
done
info "directories as sides: the lines of their images"
if have_feature remote; then
	mkdir -p "$W/www"
	cp "$W/base.sqsh" "$W/many.sqsh" "$W/www/"
	http_serve "$W/www"
	"$SQK" diff "$W/base.sqsh" "$W/many.sqsh" >"$W/img.out"
	"$SQK" diff "$HTTP_URL/base.sqsh" "$W/many" >"$W/url.out" 2>&1
	diff -u "$W/img.out" "$W/url.out" >&2 || fail "URL side: not the lines of the image"
	"$SQK" diff -q "$HTTP_URL/base.sqsh" "$HTTP_URL/many.sqsh" &&
		fail "URL sides: -q exits 0 on different images"
	"$SQK" diff "$HTTP_URL/base.sqsh" "$W/base" >"$W/url.out" 2>&1 ||
		fail "URL side: differs from its tree: $(cat "$W/url.out")"
	info "http URL sides: the lines of the images"
else
	info "built without remote: the URL part is not run"
fi

# ---- 6. --json and -q ----------------------------------------------------------------------
"$SQK" diff --json "$W/base.sqsh" "$W/many.sqsh" >"$W/j.json"
[ $? = 1 ] || fail "--json: not exit 1"
"$SQK" diff --json "$W/base.sqsh" "$W/xattrval" >"$W/jx.json"
"$SQK" diff --json -T "$W/base.sqsh" "$W/mtime.sqsh" >"$W/jt.json"
"$SQK" diff --json "$W/base.sqsh" "$W/layout.sqsh" >"$W/j0.json" || fail "--json: same is not 0"
# the first differing byte past the first 256 KiB window, from an image and from a directory
"$SQK" diff --json "$W/base.sqsh" "$W/bigbyte.sqsh" >"$W/jb.json"
"$SQK" diff --json "$W/base" "$W/bigbyte" >"$W/jbd.json"
python3 - "$W" <<'EOF' || fail "--json output is not what was expected"
import json, sys
w = sys.argv[1]
j = json.load(open(w + "/j.json"))
assert j["status"] == 1 and j["different"] is True, j
items = {(d["path"], d["field"]): d for d in j["differences"]}
assert items[("/a", "mode")]["old"] == "0644" and items[("/a", "mode")]["new"] == "0600", items
assert items[("/d", "uid")]["old"] == 0 and items[("/d", "uid")]["new"] == 7, items
assert items[("/d", "gid")]["new"] == 8, items
c = items[("/d/f", "contents")]
assert c["offset"] == 4 and c["old"] is None, c
assert items[("/d/sub/k", "entry")] == {"path": "/d/sub/k", "field": "entry", "old": "file",
                                        "new": None}, items
assert items[("/zz/deep/q", "entry")]["new"] == "file", items
assert items[("/fifo", "type")]["old"] == "fifo" and items[("/fifo", "type")]["new"] == "dir"
assert items[("/dev", "type")]["new"] == "blockdev", items
x = json.load(open(w + "/jx.json"))["differences"]
assert x == [{"path": "/d/f", "field": "xattr", "name": "user.a", "old": "one",
              "new": "two"}], x
t = json.load(open(w + "/jt.json"))["differences"]
assert t == [{"path": "/a", "field": "mtime", "old": 1000000, "new": 2000}], t
for f in ("/jb.json", "/jbd.json"):
    b = json.load(open(w + f))["differences"]
    assert b == [{"path": "/big", "field": "contents", "old": None, "new": None,
                  "offset": 400000}], b
z = json.load(open(w + "/j0.json"))
assert z["status"] == 0 and z["differences"] == [] and z["different"] is False, z
EOF
info "--json: fields and values"
out=$("$SQK" diff -q "$W/base.sqsh" "$W/many.sqsh") && fail "-q: exit 0 on different images"
[ -z "$out" ] || fail "-q printed: $out"
"$SQK" diff -q "$W/base.sqsh" "$W/layout.sqsh" || fail "-q: same images not exit 0"

# ---- 7. trouble: exit 2, one line -----------------------------------------------------------
check_err() { # WHAT PATTERN CMD...: exit 2, one line on stderr matching PATTERN, no stdout
	local what=$1 pat=$2 rc=0
	shift 2
	"$@" >"$W/e.out" 2>"$W/e.err" || rc=$?
	[ "$rc" = 2 ] || fail "$what: exit $rc, not 2"
	[ "$(wc -l <"$W/e.err")" = 1 ] || fail "$what: not one line: $(cat "$W/e.err")"
	grep -q -- "$pat" "$W/e.err" || fail "$what: '$(cat "$W/e.err")' does not say '$pat'"
	[ ! -s "$W/e.out" ] || fail "$what: wrote to stdout"
	info "$what: $(cat "$W/e.err")"
}
check_err "missing image" "$W/nope.sqsh: No such file" "$SQK" diff "$W/nope.sqsh" "$W/base.sqsh"
check_err "bad option" "unknown option '-x'" "$SQK" diff -x "$W/base.sqsh" "$W/base.sqsh"
check_err "one tree" "missing the second tree" "$SQK" diff "$W/base.sqsh"
check_err "three trees" "unexpected argument" "$SQK" diff "$W/base" "$W/base" "$W/base"
check_err "-S on a directory" "is a directory" "$SQK" diff -S "$W/base" "$W/base.sqsh"
printf 'not an image at all, just some text that is long enough to be read\n' >"$W/junk"
rc=0
"$SQK" diff "$W/junk" "$W/base.sqsh" >/dev/null 2>"$W/e.err" || rc=$?
[ "$rc" = 2 ] && grep -q "$W/junk" "$W/e.err" || fail "not an image: exit $rc: $(cat "$W/e.err")"
# a damaged data block is trouble, also where both images store the file alike (equal block
# lists are compared as stored, verified, not decompressed)
mkdir "$W/one"
python3 -c 'import random, sys; sys.stdout.buffer.write(random.Random(1).randbytes(300000))' \
	>"$W/one/big"
sqk_build "$W/one" "$W/one.sqsh" -q --no-fragments
cp "$W/one.sqsh" "$W/bad.sqsh"
printf '\xff\xff\xff\xff' | dd of="$W/bad.sqsh" bs=1 seek=150000 conv=notrunc status=none
rc=0
"$SQK" diff "$W/one.sqsh" "$W/bad.sqsh" >"$W/e.out" 2>"$W/e.err" || rc=$?
[ "$rc" = 2 ] && grep -q "bad.sqsh: /big: .*integrity check failed" "$W/e.err" ||
	fail "damaged block: exit $rc: $(cat "$W/e.out" "$W/e.err")"
info "damaged data block: exit 2, $(head -1 "$W/e.err")"
# unverified, the random (stored raw) block just reads otherwise
rc=0
"$SQK" diff --no-verify "$W/one.sqsh" "$W/bad.sqsh" >"$W/e.out" 2>"$W/e.err" || rc=$?
[ "$rc" = 1 ] && [ "$(cat "$W/e.out")" = "regular file /big differs" ] ||
	fail "damaged block, --no-verify: exit $rc: $(cat "$W/e.out" "$W/e.err")"
# equal block lists (random data is stored raw: one byte changed keeps every size), the
# stored bytes differ from the second block on: the first differing byte is still found
cp -a "$W/one" "$W/one2"
printf 'Z' | dd of="$W/one2/big" bs=1 seek=200000 conv=notrunc status=none
sqk_build "$W/one2" "$W/one2.sqsh" -q --no-fragments
for o in "" --no-verify; do
	"$SQK" diff --json $o "$W/one.sqsh" "$W/one2.sqsh" | python3 -c '
import json, sys
d = json.load(sys.stdin)["differences"]
assert [(x["path"], x["field"], x.get("offset")) for x in d] == [("/big", "contents", 200000)], d
' || fail "one changed byte in equal block lists ($o): not found at 200000"
done
# the stored-block comparison and the decompressed one say the same
"$SQK" diff --json --no-verify "$W/base.sqsh" "$W/bigbyte.sqsh" | cmp -s - "$W/jb.json" ||
	fail "--no-verify (contents decompressed) differs from the stored-block comparison"
"$SQK" diff --help | grep -q -- '--no-permissions' || fail "--help does not list -P"
info "sqk diff agrees with sqfsdiff $(sqfsdiff --version | head -1 | awk '{print $NF}')"
