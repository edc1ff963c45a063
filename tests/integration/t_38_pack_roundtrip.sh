#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# Pack files and dumps, both ways. A gensquashfs pack file given to gensquashfs -F and to
# sqk mkimage --pack gives equal listings and contents, glob lines included. `sqk ls --pseudo IMG` writes byte for
# byte what `unsquashfs -pf -` writes, and both $MKSQUASHFS -pf and sqk mkimage -pf rebuild
# from it an image equal to the first (listing with times, contents, hard links, xattrs).
# `sqk ls --pack IMG` writes what `rdsquashfs -d` writes (but for a second name of a file,
# a link line), and gensquashfs -F and sqk mkimage --pack rebuild from it, with the extracted
# tree as the pack directory, images equal to each other and to the first but for the times
# a pack file does not carry.
. "$(dirname "$0")/lib.sh"
need_root
need_sqk
peer_squashfs_tools
need_squashfs_tools 4.7
need_cmd gensquashfs rdsquashfs getfattr

W=$(scratch pack)
T=1700000000

# -lln listing, link counts, contents and xattrs of image $2 into $W/$1.*
survey() {
	local n=$1 img=$2
	"$UNSQUASHFS" -lln "$img" >"$W/$n.lst" || fail "$n: cannot list $img"
	rm -rf "$W/$n.x"
	"$UNSQUASHFS" -q -n -xattrs -d "$W/$n.x" "$img" >/dev/null 2>&1 || fail "$n: cannot extract"
	(cd "$W/$n.x" && find . -printf '%p %y %n\n' | sort) >"$W/$n.links"
	(cd "$W/$n.x" && find . -type f -exec sha256sum {} + | sort) >"$W/$n.sums"
	(cd "$W/$n.x" && getfattr -R -h -d -m - -e hex . 2>/dev/null) >"$W/$n.xattrs"
}

same() { # A B [notimes]: the surveys of A and B are equal
	local a=$1 b=$2 k
	if [ "${3:-}" = notimes ]; then
		for k in "$a" "$b"; do
			sed -E 's/ [0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2} / /' "$W/$k.lst" \
				>"$W/$k.lst.nt"
		done
		diff "$W/$a.lst.nt" "$W/$b.lst.nt" >&2 || fail "$a / $b: listings differ"
	else
		diff "$W/$a.lst" "$W/$b.lst" >&2 || fail "$a / $b: listings differ"
	fi
	diff "$W/$a.links" "$W/$b.links" >&2 || fail "$a / $b: link counts differ"
	diff "$W/$a.sums" "$W/$b.sums" >&2 || fail "$a / $b: contents differ"
	diff "$W/$a.xattrs" "$W/$b.xattrs" >&2 || fail "$a / $b: xattrs differ"
}

# 1. A pack file of every keyword, to gensquashfs and to sqk.
mkdir -p "$W/in/lib"
echo init >"$W/in/init"
head -c 200000 /dev/urandom >"$W/in/lib/libx.so"
echo 'name with space' >"$W/in/lib/my file"
cat >"$W/pack" <<'P'
# a small root file system
dir /dev 0755 0 0
nod /dev/console 0600 0 5 c 5 1
nod /dev/sda 0660 0 6 b 8 0
dir /root 0700 0 0
file /sbin/init 0755 0 0 init
file /lib/libx.so 0644 0 0
file "/lib/my file" 0640 1 2
slink /bin/sh 0777 0 0 /sbin/init
link /sbin/init.hl 0 0 0 /sbin/init
pipe /run/initctl 0600 0 0
sock /run/log 0666 0 0
P
gensquashfs -F "$W/pack" -D "$W/in" -q "$W/ng.sqsh" >"$W/ng.log" 2>&1 ||
	fail "gensquashfs -F failed: $(cat "$W/ng.log")"
"$SQK" mkimage -q --pack "$W/pack" -D "$W/in" "$W/sqk.sqsh" || fail "sqk --pack failed"
survey ng "$W/ng.sqsh"
survey sqk "$W/sqk.sqsh"
same ng sqk
grep -q '^./sbin/init f 2$' "$W/sqk.links" || fail "sbin/init.hl is not a hard link"
[ "$(wc -l <"$W/sqk.lst")" -ge 14 ] || fail "listing incomplete: $(cat "$W/sqk.lst")"
# -F with the input files next to the pack file, and gensquashfs's short option
cp "$W/pack" "$W/in/pack"
"$SQK" mkimage -q -F "$W/in/pack" "$W/sqk2.sqsh" || fail "sqk -F failed"
survey sqk2 "$W/sqk2.sqsh"
same ng sqk2

# glob lines: types, -name, -path, *, -keeptime, -nonrecursive, --. gensquashfs 1.2 reads a
# globbed file from its image path (not from where it found it) and writes duplicate names when
# two globs take one file: the lines keep PATH = LOCATION and take each file once.
G=$W/glob
mkdir -p "$G/lib/sub" "$G/lib/empty" "$G/other"
echo a >"$G/lib/libz.so.1"
echo b >"$G/lib/libz.so"
echo c >"$G/lib/sub/libq.so.2"
echo x >"$G/other/x"
echo y >"$G/other/y"
ln -s libz.so.1 "$G/lib/link.so.1"
mkfifo "$G/lib/fifo" "$G/other/fifo"
mknod "$G/lib/null" c 1 3
chown 5:6 "$G/lib/libz.so"
touch -d @1600000000 "$G/other/fifo"
printf '%s\n' 'dir /usr 0755 0 0' 'glob /lib 0755 0 0 -type d lib' \
	'glob /lib 0644 0 0 -type f -name "*.so.*" lib' 'glob /lib * * * -type l lib' \
	'glob /other 0600 2 2 -type f -path "other/x*" -- other' \
	'glob /other * * * -keeptime -type p other' >"$G/list1"
printf '%s\n' 'glob /lib * * * -nonrecursive lib' 'glob /lib/sub 0700 1 1 -type f lib/sub' \
	>"$G/list2"
for l in list1 list2; do
	gensquashfs -F "$G/$l" -q "$W/g.$l.ng.sqsh" >"$W/g.log" 2>&1 ||
		fail "gensquashfs -F $l failed: $(cat "$W/g.log")"
	"$SQK" mkimage -q --pack "$G/$l" "$W/g.$l.sqk.sqsh" || fail "sqk --pack $l failed"
	survey "g.$l.ng" "$W/g.$l.ng.sqsh"
	survey "g.$l.sqk" "$W/g.$l.sqk.sqsh"
	same "g.$l.ng" "g.$l.sqk"
done
grep -q ' squashfs-root/other/x$' "$W/g.list1.sqk.lst" && ! grep -q 'other/y' "$W/g.list1.sqk.lst" &&
	grep -q '^p.* 2020-09-13 .*other/fifo$' "$W/g.list1.sqk.lst" ||
	fail "glob list1: $(cat "$W/g.list1.sqk.lst")"
printf '%s\n' 'glob /lib 0755 0 0 -size 1 lib' >"$G/bad"
"$SQK" mkimage -q --pack "$G/bad" "$W/bad.sqsh" 2>"$W/bad.err" && fail "an unknown glob option taken"
grep -q "pack file entry at $G/bad:1: unknown glob option at '-size 1 lib'" "$W/bad.err" ||
	fail "glob message: $(cat "$W/bad.err")"

# 2. An image with all kinds of entry, made by mksquashfs.
S=$W/src
mkdir -p "$S/d/sub" "$S/e"
echo hello >"$S/a"
printf 'xyz' >"$S/d/b"
head -c 300000 /dev/urandom >"$S/d/sub/big"
: >"$S/d/empty"
ln "$S/a" "$S/d/a.hl"
ln -s a "$S/l"
ln -s 'a b\c"d' "$S/weird link"
echo q >"$S/sp ace"
mkfifo "$S/p"
mknod "$S/c" c 1 3
setfattr -n user.foo -v bar "$S/a"
setfattr -n user.bin -v 0x00ff0a "$S/d/b"
chmod 4755 "$S/d/b"
chown 12:34 "$S/d/sub/big"
find "$S" -exec touch -h -d @1650000000 {} +
SOURCE_DATE_EPOCH=$T "$MKSQUASHFS" "$S" "$W/orig.sqsh" -noappend -quiet -no-progress \
	>/dev/null 2>&1 || fail "mksquashfs of the source failed"
survey orig "$W/orig.sqsh"

# 3. --pseudo: unsquashfs -pf's bytes; both builders rebuild the image from it.
"$UNSQUASHFS" -pf - "$W/orig.sqsh" >"$W/u.pf" 2>/dev/null || fail "unsquashfs -pf failed"
"$SQK" ls --pseudo "$W/orig.sqsh" >"$W/s.pf" || fail "sqk ls --pseudo failed"
cmp "$W/u.pf" "$W/s.pf" || fail "sqk ls --pseudo differs from unsquashfs -pf"
grep -q '^d/a.hl L a$' "$W/s.pf" && grep -q '^a x user.foo=bar$' "$W/s.pf" ||
	fail "the dump lacks the link or the xattr: $(head -n 20 "$W/s.pf")"
"$SQK" mkimage -q -pf "$W/s.pf" "$W/pf.sqk.sqsh" || fail "sqk mkimage -pf (no SOURCE) failed"
"$SQK" ls --pseudo "$W/orig.sqsh" | "$SQK" mkimage -q -pf - "$W/pf.stdin.sqsh" ||
	fail "sqk mkimage -pf - failed"
"$MKSQUASHFS" - "$W/pf.mks.sqsh" -noappend -quiet -no-progress -pf "$W/s.pf" \
	>"$W/pf.mks.log" 2>&1 || fail "mksquashfs -pf of sqk's dump failed: $(cat "$W/pf.mks.log")"
for k in pf.sqk pf.stdin pf.mks; do
	survey "$k" "$W/$k.sqsh"
	same orig "$k"
	# sqk diff: the same tree (contents, owners, modes, times, xattrs, links), exit 0
	run_capture "diff_$k" "$SQK" diff -T "$W/orig.sqsh" "$W/$k.sqsh"
	[ "$RC" = 0 ] && [ ! -s "$OUT_FILE" ] ||
		{ show_err; fail "sqk diff -T orig $k: exit $RC: $(head -n 5 "$OUT_FILE")"; }
done
# and sqk diff sees a difference in a rebuilt image: one definition changed
sed 's|^a x user.foo=bar$|a x user.foo=baz|' "$W/s.pf" >"$W/s2.pf"
"$SQK" mkimage -q -pf "$W/s2.pf" "$W/pf2.sqsh" || fail "sqk mkimage -pf of the changed dump failed"
run_capture diff_changed "$SQK" diff "$W/orig.sqsh" "$W/pf2.sqsh"
[ "$RC" = 1 ] && grep -q "^/a has a different xattr user.foo" "$OUT_FILE" ||
	{ show_err; fail "sqk diff of a changed xattr: exit $RC: $(cat "$OUT_FILE")"; }

# 4. --pack: rdsquashfs -d's lines; gensquashfs and sqk rebuild from it and an extracted tree.
rdsquashfs -d "$W/orig.sqsh" >"$W/r.pack" || fail "rdsquashfs -d failed"
"$SQK" ls --pack "$W/orig.sqsh" >"$W/s.pack" || fail "sqk ls --pack failed"
# the one difference: rdsquashfs writes a second name of a file as another file
grep -qx 'file d/a.hl 0644 0 0' "$W/r.pack" || fail "rdsquashfs -d: $(cat "$W/r.pack")"
sed 's|^file d/a.hl 0644 0 0$|link d/a.hl 0 0 0 a|' "$W/r.pack" >"$W/r.linked.pack"
diff "$W/r.linked.pack" "$W/s.pack" >&2 || fail "sqk ls --pack differs from rdsquashfs -d"
gensquashfs -F "$W/s.pack" -D "$W/orig.x" -q "$W/pk.ng.sqsh" >"$W/pk.log" 2>&1 ||
	fail "gensquashfs -F of sqk's pack failed: $(cat "$W/pk.log")"
"$SQK" mkimage -q --pack "$W/s.pack" --pack-dir "$W/orig.x" "$W/pk.sqk.sqsh" ||
	fail "sqk --pack of its own pack failed"
"$SQK" ls --pack --pack-root "$W/orig.x" "$W/orig.sqsh" >"$W/s.rooted.pack"
grep -qF "file d/b 04755 0 0 $W/orig.x/d/b" "$W/s.rooted.pack" ||
	fail "--pack-root: $(cat "$W/s.rooted.pack")"
"$SQK" mkimage -q --pack "$W/s.rooted.pack" "$W/pk.rooted.sqsh" || fail "--pack-root build failed"
survey pk.ng "$W/pk.ng.sqsh"
for k in pk.sqk pk.rooted; do
	survey "$k" "$W/$k.sqsh"
	same pk.ng "$k"
	run_capture "diff_$k" "$SQK" diff "$W/pk.ng.sqsh" "$W/$k.sqsh"
	[ "$RC" = 0 ] || { show_err; fail "sqk diff pk.ng $k: exit $RC: $(head -n 5 "$OUT_FILE")"; }
done
# xattrs are not in a pack file (gensquashfs takes them with -A): compare the rest
: >"$W/orig.xattrs"
: >"$W/pk.sqk.xattrs"
same orig pk.sqk notimes
echo "pack files and dumps against gensquashfs and squashfs-tools $SQFS_TOOLS_VERSION: ok"
