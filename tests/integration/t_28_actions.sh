#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# mksquashfs's actions on `sqk mkimage` (issue 31, point 4): the same -action (and
# -action-file) given to mksquashfs 4.7.x and to sqk on the same tree give the same image
# contents: `unsquashfs -lln` listings equal (nothing normalised) and the same file bytes, for
# each action sqk applies (exclude, prune, chmod/mode, uid, gid, guid) under each test (name,
# pathname, subpathname, type, size, filesize, dirsize, perm, user, group, uid, gid, depth, the
# ranges, true/false), with &&, ||, ! and parentheses (strictly left to right), quotes and an
# action file with continuation lines. The data actions (uncompressed, no-fragments,
# always-use-fragments, dont-always-use-fragments, tailend...) give the same layout: per file,
# the same number of blocks, of raw blocks, and a fragment or not (read from both images with
# sqfs_patch.py). Actions and tests sqk does not apply are refused by name with one line, exit
# 2, nothing written; actions that match nothing leave the image byte-identical.
. "$(dirname "$0")/lib.sh"
need_root
need_sqk
need_cmd python3 md5sum
peer_squashfs_tools
need_squashfs_tools 4.6 # actions

W=$(scratch actions)
SRC=$W/src
mkdir -p "$SRC/a/b" "$SRC/deep/x/y" "$SRC/proj/.git/objects" "$SRC/empty" "$SRC/sp ace"
echo hi >"$SRC/a/f.c"
echo hello >"$SRC/a/b/g.h"
echo main >"$SRC/proj/main.c"
echo cfg >"$SRC/proj/.git/config"
echo obj >"$SRC/proj/.git/objects/o1"
echo 'spaced && odd' >"$SRC/sp ace/x&&y.txt"
printf 'x%.0s' $(seq 3000) >"$SRC/deep/x/y/mid.txt"
seq 1 20000 >"$SRC/a/big.txt"
seq 5 30000 >"$SRC/deep/log.txt"
head -c 9000 /dev/urandom >"$SRC/a/rand.gz"
head -c 2000 /dev/urandom >"$SRC/deep/x/small.bin"
head -c 300000 /dev/urandom >"$SRC/deep/blob.bin"
echo twice >"$SRC/deep/x/h1"
ln "$SRC/deep/x/h1" "$SRC/deep/x/h2"
truncate -s 1M "$SRC/deep/sparse"
: >"$SRC/a/zero"
ln -s a/f.c "$SRC/link"
ln -s /nowhere "$SRC/deep/abs"
mkfifo "$SRC/fifo"
mknod "$SRC/cdev" c 1 3
mknod "$SRC/bdev" b 7 0
chown 1234:5678 "$SRC/a/f.c"
chown daemon:bin "$SRC/a/b/g.h" "$SRC/deep/x"
chown -h 99:99 "$SRC/link"
chmod 600 "$SRC/a/big.txt"
chmod 4755 "$SRC/deep/x/y/mid.txt"
chmod 1777 "$SRC/empty"
chmod 640 "$SRC/proj/main.c"
chmod 711 "$SRC/deep"

# the files' bytes, by path
sums() {
	(cd "$1" && find . -type f -print0 | LC_ALL=C sort -z | xargs -0 -r md5sum)
}

# both IMG_STEM ARGS...: mksquashfs and sqk, the same ARGS after SRC IMAGE.
both() {
	local stem=$1 rc=0
	shift
	rm -f "$stem.mks" "$stem.sqk"
	"$MKSQUASHFS" "$SRC" "$stem.mks" -noappend -quiet -no-progress "$@" \
		>"$TMP/mks.out" 2>&1 || rc=$?
	[ "$rc" = 0 ] || { cat "$TMP/mks.out" >&2; fail "mksquashfs $* exited $rc"; }
	sqk_build "$SRC" "$stem.sqk" -quiet "$@"
}

# same_as_mks NAME ARGS...: the two images list and extract the same.
n_same=0
same_as_mks() {
	local name=$1 stem=$W/img
	shift
	both "$stem" "$@"
	"$UNSQUASHFS" -lln "$stem.mks" >"$TMP/mks.lst" || fail "$name: unsquashfs -lln (mksquashfs)"
	"$UNSQUASHFS" -lln "$stem.sqk" >"$TMP/sqk.lst" || fail "$name: unsquashfs -lln (sqk)"
	if ! diff -u "$TMP/mks.lst" "$TMP/sqk.lst" >"$TMP/lst.diff"; then
		head -n 40 "$TMP/lst.diff" >&2
		fail "$name: the listings differ ($*)"
	fi
	rm -rf "$W/x.mks" "$W/x.sqk"
	"$UNSQUASHFS" -n -d "$W/x.mks" "$stem.mks" >/dev/null 2>&1 || fail "$name: extract (mks)"
	"$UNSQUASHFS" -n -d "$W/x.sqk" "$stem.sqk" >/dev/null 2>&1 || fail "$name: extract (sqk)"
	[ "$(sums "$W/x.mks")" = "$(sums "$W/x.sqk")" ] || fail "$name: file contents differ"
	n_same=$((n_same + 1))
	echo "$name" >>"$TMP/names"
}

# The action must change something (else the comparison proves nothing about it).
changes() {
	local name=$1
	shift
	same_as_mks "$name" "$@"
	"$UNSQUASHFS" -lln "$W/plain.sqk" >"$TMP/plain.lst"
	cmp -s "$TMP/plain.lst" "$TMP/sqk.lst" && fail "$name: the action changed nothing ($*)"
	return 0
}

sqk_build "$SRC" "$W/plain.sqk" -quiet
same_as_mks "no actions"

# ---- 1. exclude under each test --------------------------------------------------------------
changes "name" -action 'exclude@name(*.c)'
changes "name, quoted" -action 'exclude@name("x&&y.txt")'
changes "name, escaped" -action 'exclude@name(x\&\&y.txt)'
changes "name, extglob" -action 'exclude@name("+(f|g).?")'
changes "pathname" -action 'exclude@pathname(a/*)'
changes "pathname from /" -action 'exclude@pathname(/deep/x/y/*)'
changes "pathname with a blank" -action 'exclude@pathname("sp ace/*")'
changes "subpathname" -action 'exclude@subpathname(deep/x)'
changes "type f" -action 'exclude@type(f)'
changes "type d" -action 'exclude@type(d)'
changes "type l" -action 'exclude@type(l)'
changes "type p, c, b" -action 'exclude@type(p) || type(c) || type(b)'
changes "size +" -action 'exclude@size(+1K) && !type(d)'
changes "size <=" -action 'exclude@size(<=10)'
changes "size K" -action 'exclude@size(-8k)'
changes "filesize" -action 'exclude@filesize(>=9000)'
changes "filesize_range" -action 'exclude@filesize_range(2000, 9000)'
changes "dirsize" -action 'exclude@dirsize(>100000)||name(b)'
changes "perm octal" -action 'exclude@perm(0600)'
changes "perm symbolic" -action 'exclude@perm(u=rw,g=r)'
changes "perm all of" -action 'exclude@perm(-u+s)'
changes "perm any of" -action 'exclude@perm(/o=t)'
changes "user" -action 'exclude@user(daemon)'
changes "group" -action 'exclude@group(bin)'
changes "uid" -action 'exclude@uid(1234)'
changes "gid" -action 'exclude@gid(>5000)'
changes "uid_range" -action 'exclude@uid_range(1,1234)'
changes "depth" -action 'exclude@depth(>2)'
changes "depth_range" -action 'exclude@depth_range(2,2) && type(d)'
changes "nlink" -action 'exclude@nlink(2) && !type(d)'
changes "blocks" -action 'exclude@blocks(0) && type(f)'
changes "fileblocks" -action 'exclude@fileblocks(>8)'
changes "dirblocks_range" -action 'exclude@dirblocks_range(1,8)'
changes "inode_range" -action "exclude@inode_range(0,$(stat -c %i "$SRC/a/big.txt"))"
same_as_mks "false" -action 'exclude@false'

# ---- 2. operators: left to right, !, parentheses ---------------------------------------------
changes "no precedence" -action 'exclude@type(f) || type(l) && name(l*)'
changes "parentheses" -action 'exclude@type(f) || (type(l) && name(l*))'
changes "not" -action 'exclude@!type(d) && !name(*.txt)'
changes "not of a group" -action 'exclude@depth(2) && !(name(b) || name(x))'
changes "blanks" -action 'exclude @ ( name ( f.c ) || name ( g.h ) )'

# ---- 3. prune: the directory and all under it, tested after the attribute actions ----------
changes "prune a directory" -action 'prune@name(.git) && type(d)'
changes "prune after chmod" -action 'chmod(700)@name(b)' -action 'prune@perm(0700) && type(d)'
changes "exclude before chmod" -action 'chmod(700)@name(b)' -action 'exclude@perm(0700)'

# ---- 4. chmod / mode, uid, gid, guid ----------------------------------------------------------
changes "chmod octal" -action 'chmod(700)@type(d)'
changes "chmod symbolic" -action 'chmod(u=rw,go=r)@type(f)'
changes "chmod X" -action 'chmod(a=rX)@true'
changes "chmod copy class" -action 'chmod(ug=o)@true'
changes "chmod s t" -action 'chmod(u+s,o+t)@depth(1)'
changes "mode" -action 'mode(go-rwx)@!type(l)'
changes "chmod the root" -action 'chmod(0750)@pathname(/)'
changes "uid by name" -action 'uid(daemon)@name(*.c)'
changes "uid by number" -action 'uid(4321)@type(l)'
changes "gid" -action 'gid(bin)@depth(1)'
changes "guid" -action 'guid(777,888)@subpathname(deep)'
changes "later tests see changes" -action 'uid(42)@name(f.c)' -action 'chmod(0)@uid(42)'
changes "-force-uid wins" -force-uid 5 -action 'uid(6)@true' -action 'gid(7)@uid(6)'

# ---- 4b. xattrs-exclude, xattrs-include: the xattrs each file keeps -------------------------
XS=$W/xsrc
mkdir -p "$XS/d"
echo 1 >"$XS/f1"
echo 2 >"$XS/g2"
for f in "$XS/f1" "$XS/g2" "$XS/d" "$XS"; do
	python3 -c 'import os, sys
for n, v in (("user.a", b"A"), ("user.b", b"B"), ("trusted.x", b"X")):
    os.setxattr(sys.argv[1], n, v)' "$f" || fail "cannot set xattrs in $W"
done
xattr_list() {
	python3 -c 'import os, sys
r = sys.argv[1]
for dp, dn, fn in sorted(os.walk(r)):
    for n in sorted(dn + fn) + ([""] if dp == r else []):
        p = os.path.join(dp, n) if n else dp
        print(os.path.relpath(p, r), sorted((k, os.getxattr(p, k, follow_symlinks=False))
                                            for k in os.listxattr(p, follow_symlinks=False)))' \
		"$1"
}
same_xattrs() {
	rm -rf "$W/xm" "$W/xs" "$W/x.mks" "$W/x.sqk"
	"$MKSQUASHFS" "$XS" "$W/x.mks" -noappend -quiet -no-progress "$@" >/dev/null 2>&1 ||
		fail "xattrs: mksquashfs $* failed"
	sqk_build "$XS" "$W/x.sqk" -quiet "$@"
	"$UNSQUASHFS" -n -d "$W/xm" "$W/x.mks" >/dev/null 2>&1 || fail "xattrs: extract (mks)"
	"$UNSQUASHFS" -n -d "$W/xs" "$W/x.sqk" >/dev/null 2>&1 || fail "xattrs: extract (sqk)"
	xattr_list "$W/xm" >"$TMP/xm.lst"
	xattr_list "$W/xs" >"$TMP/xs.lst"
	diff -u "$TMP/xm.lst" "$TMP/xs.lst" >&2 || fail "xattrs: they differ ($*)"
	xattr_list "$XS" | cmp -s - "$TMP/xs.lst" && fail "xattrs: nothing changed ($*)"
	n_same=$((n_same + 1))
}
same_xattrs -action 'xattrs-exclude(^user\.a)@name(f*)'
same_xattrs -action 'xattrs-include(^user)@true'
same_xattrs -action 'xattrs-exclude(.)@type(d)'
same_xattrs -action 'xattrs-include(b$)@type(f)' -action 'xattrs-exclude(^user)@name(g2)'
same_xattrs -action 'chmod(700)@name(f1)' -action 'xattrs-exclude(^trusted)@perm(0700)'
same_xattrs -action 'xattrs-add(user.c=hello)@true'
same_xattrs -action 'xattrs-add(trusted.t=0x414243)@name(f1)' \
	-action 'xattrs-add("user.s=0saGVsbG8gd29ybGQ=")@type(d)'
same_xattrs -action 'xattrs-add(user.t=0thello\\000world)@true' \
	-action 'xattrs-add(security.z=0bxyz)@name(g2)' -action 'xattrs-exclude(^user.a)@true'
run_capture dupx "$SQK" mkimage "$XS" "$W/dup.sqk" -quiet -action 'xattrs-add(user.a=x)@true'
[ "$RC" = 1 ] && grep -q "xattr user.a listed twice" "$ERR_FILE" ||
	{ show_err; fail "xattrs-add of a name the file has: exit $RC"; }

# ---- 5. an action file: several actions, comments, continuation, quotes ---------------------
cat >"$W/actions" <<'EOF'
# leave the repository's metadata out
prune@name(.git) && \
	type(d)

   exclude@name("x&&y.txt")
chmod(u=rwx,g=rx,o=)@type(d) && !pathname(/)
guid(daemon, bin)@filesize(<100) || \
  name(*.gz)
EOF
changes "action file" -action-file "$W/actions"
changes "action file and -action" -action-file "$W/actions" -action 'exclude@depth(3)'

# an action file from a pipe is read once: the same image as from a file
printf 'exclude@name(*.c) ||\\\n name(*.h)\n' >"$W/pipe.actions"
changes "action file with a continuation" -action-file "$W/pipe.actions"
sqk_build "$SRC" "$W/pipe.sqk" -quiet -action-file <(cat "$W/pipe.actions")
cmp -s "$W/img.sqk" "$W/pipe.sqk" || fail "-action-file from a pipe: not the image from a file"

# ---- 5b. several sources, and one kept as a directory: paths and depths from the image root ---
# (the made-up root of several sources differs from mksquashfs's in its mode and mtime since
# before the actions: its line, the first, is left out of that comparison)
several() {
	local name=$1 srcs=()
	shift
	while [ "$1" != -- ]; do
		srcs+=("$1")
		shift
	done
	shift
	rm -f "$W/m.mks" "$W/m.sqk"
	"$MKSQUASHFS" "${srcs[@]}" "$W/m.mks" -noappend -quiet -no-progress "$@" "${ACT[@]}" \
		>/dev/null 2>&1 || fail "$name: mksquashfs failed"
	sqk_build "${srcs[@]}" "$W/m.sqk" -quiet "$@" "${ACT[@]}"
	diff <("$UNSQUASHFS" -lln "$W/m.mks" | tail -n +2) \
		<("$UNSQUASHFS" -lln "$W/m.sqk" | tail -n +2) >"$TMP/m.diff" ||
		{ cat "$TMP/m.diff" >&2; fail "$name: the listings differ (${ACT[*]})"; }
}
for a in 'exclude@pathname(a/b/*)' 'exclude@depth(1) && name(f.c)' 'chmod(700)@depth(2)' \
	'exclude@subpathname(deep/x)' 'prune@depth(3)'; do
	ACT=(-action "$a")
	several "several sources" "$SRC/a" "$SRC/deep" --
	several "keep as directory" "$SRC/deep" -- -keep-as-directory
	n_same=$((n_same + 2))
done

# ---- 6. the data actions: the same layout per file -------------------------------------------
layout() {
	python3 - "$IT_DIR" "$1" <<'EOF'
import struct, sys
sys.path.insert(0, sys.argv[1])
from sqfs_patch import Image
im = Image(sys.argv[2])
bs = im.sb['block_size']
todo, out = [('', im.inode(im.sb['root_inode']))], []
while todo:
    path, d = todo.pop()
    for name, ref, _, _ in im.listing(d):
        c = im.inode(ref)
        p = path + '/' + name
        if c['type'] in (1, 8):
            todo.append((p, c))
        elif c['type'] in (2, 9):
            frag = c['frag'] != 0xFFFFFFFF
            n = c['size'] // bs if frag else (c['size'] + bs - 1) // bs
            w = [struct.unpack_from('<I', im.ino, c['words'] + 4 * k)[0] for k in range(n)]
            raw = sum(1 for x in w if x & (1 << 24))
            out.append('%s blocks=%d raw=%d fragment=%s' % (p, n, raw, 'yes' if frag else 'no'))
print('\n'.join(sorted(out)))
EOF
}

# same_layout NAME SQK_ONLY_ARGS -- ARGS...: per file blocks, raw blocks and fragment equal.
same_layout() {
	local name=$1 extra=()
	shift
	while [ "$1" != -- ]; do
		extra+=("$1")
		shift
	done
	shift
	rm -f "$W/l.mks" "$W/l.sqk"
	"$MKSQUASHFS" "$SRC" "$W/l.mks" -noappend -quiet -no-progress -comp gzip -b 4096 "$@" \
		>/dev/null 2>&1 || fail "$name: mksquashfs $* failed"
	sqk_build "$SRC" "$W/l.sqk" -quiet -comp gzip -b 4096 "${extra[@]}" "$@"
	layout "$W/l.mks" >"$TMP/l.mks" || fail "$name: cannot read the layout (mksquashfs)"
	layout "$W/l.sqk" >"$TMP/l.sqk" || fail "$name: cannot read the layout (sqk)"
	if ! diff -u "$TMP/l.mks" "$TMP/l.sqk" >"$TMP/l.diff"; then
		cat "$TMP/l.diff" >&2
		fail "$name: the layouts differ"
	fi
	"$UNSQUASHFS" -lln "$W/l.mks" >"$TMP/mks.lst"
	"$UNSQUASHFS" -lln "$W/l.sqk" >"$TMP/sqk.lst"
	cmp -s "$TMP/mks.lst" "$TMP/sqk.lst" || fail "$name: the listings differ"
	info "$name: same layout ($(grep -c 'raw=[1-9]' "$TMP/l.sqk") files with raw blocks," \
		"$(grep -c 'fragment=yes' "$TMP/l.sqk") in fragments)"
}
# mksquashfs packs no tails of large files by default, sqk does: the two defaults side by side
same_layout "no actions, tails" -- -always-use-fragments
same_layout "no actions, no tails" --no-tailends --
grep -q '/a/big.txt blocks=27 raw=0 fragment=no' "$TMP/l.sqk" ||
	fail "big.txt is not 27 compressed blocks without a fragment: $(grep big "$TMP/l.sqk")"
same_layout "uncompressed" --no-tailends -- -action 'uncompressed@name(*.txt)'
grep -q '/a/big.txt blocks=27 raw=27 fragment=no' "$TMP/l.sqk" ||
	fail "uncompressed: big.txt is not 27 raw blocks: $(grep big "$TMP/l.sqk")"
same_layout "uncompressed, tails" -- -always-use-fragments -action 'uncompressed@size(<4000)'
same_layout "compressed" --no-tailends -- -action 'uncompressed@true' \
	-action 'compressed@name(big.txt)'
same_layout "no-fragments" --no-tailends -- -action 'no-fragments@name(*.c) || name(*.h)'
grep -q '/a/f.c blocks=1 raw=1 fragment=no' "$TMP/l.sqk" ||
	fail "no-fragments: f.c has a fragment: $(grep f.c "$TMP/l.sqk")"
same_layout "fragments" --no-fragments -- -no-fragments -action 'fragments@depth(1)'
same_layout "always-use-fragments" --no-tailends -- -action 'always-use-fragments@filesize(>8K)'
grep -q '/a/big.txt blocks=26 raw=0 fragment=yes' "$TMP/l.sqk" ||
	fail "always-use-fragments: big.txt has no tail fragment: $(grep big "$TMP/l.sqk")"
same_layout "tailend" --no-tailends -- -action 'tailend@name(log.txt)'
same_layout "dont-always-use-fragments" -- -always-use-fragments \
	-action 'dont-always-use-fragments@name(log.txt)'
same_layout "no-tailend" -- -always-use-fragments -action 'no-tailend@true'
same_layout "noop" --no-tailends -- -action 'noop@true'

# ---- 6b. with -sort and --order: files laid out first are left out, or stored, as the actions
# say: no data of a file left out stays behind (bytes_used within a block of the build without
# the sort, whose fragments are packed in another order; blob.bin is 300 KB of random bytes)
near() {
	python3 -c 'import struct, sys
u = [struct.unpack_from("<Q", open(p, "rb").read(96), 40)[0] for p in sys.argv[1:]]
sys.exit(abs(u[0] - u[1]) >= 4096)' "$1" "$2"
}
printf 'deep/blob.bin 10\na 5\ndeep 3\n' >"$W/sortfile"
printf 'deep/blob.bin\na/big.txt\na/f.c\n' >"$W/orderfile"
for a in 'exclude@name(blob.bin)' 'prune@name(deep)' 'uncompressed@name(*.txt)' \
	'exclude@name(a) || name(x)'; do
	same_layout "-sort, $a" --no-tailends -- -sort "$W/sortfile" -action "$a"
	sqk_build "$SRC" "$W/nosort.sqk" -noappend -quiet -comp gzip -b 4096 --no-tailends -action "$a"
	near "$W/l.sqk" "$W/nosort.sqk" || fail "-sort, $a: not the size of the unsorted image"
	sqk_build "$SRC" "$W/order.sqk" -noappend -quiet -comp gzip -b 4096 --no-tailends -action "$a" \
		--order "$W/orderfile"
	"$UNSQUASHFS" -lln "$W/order.sqk" | cmp -s - "$TMP/sqk.lst" || fail "--order, $a: listing"
	layout "$W/order.sqk" | cmp -s - "$TMP/l.sqk" || fail "--order, $a: layout"
	near "$W/order.sqk" "$W/nosort.sqk" || fail "--order, $a: not the size of the unsorted image"
done

# ---- 7. refused by name: one line, exit 2, nothing written (an old image kept) ---------------
sqk_build "$SRC" "$W/old.sqk" -quiet
cp "$W/old.sqk" "$W/old.copy"
# refused WHAT ARGS...: exit 2, one line on stderr containing WHAT, old.sqk untouched.
refused() {
	local want=$1
	shift
	run_capture refused "$SQK" mkimage "$SRC" "$W/old.sqk" -quiet "$@"
	[ "$RC" = 2 ] || { show_err; fail "$*: exit $RC, want 2"; }
	[ "$(wc -l <"$ERR_FILE")" = 1 ] || { show_err; fail "$*: more than one line"; }
	grep -qF -- "$want" "$ERR_FILE" || { show_err; fail "$*: the message does not say '$want'"; }
	cmp -s "$W/old.sqk" "$W/old.copy" || fail "$*: the old image changed"
	rm -f "$W/new.sqk"
	run_capture refused2 "$SQK" mkimage "$SRC" "$W/new.sqk" -quiet "$@"
	[ "$RC" = 2 ] && [ ! -e "$W/new.sqk" ] || fail "$*: exit $RC or an image written"
	info "refused: $(cat "$ERR_FILE")"
}
refused "no such action 'chwon'" -action 'chwon(1)@true'
refused "no such test 'mtimes'" -action 'exclude@mtimes(>5)'
refused "'<nodate': need seconds since 1970 or a date" -action 'exclude@mtime(<nodate)'
refused "action 'move' is not supported" -action 'move(x)@name(f.c)'
refused "action 'empty' is not supported" -action 'empty@true'
refused "'user.a': expected NAME=VALUE" -action 'xattrs-add(user.a)@true'
refused "'other.a=1': expected NAME=VALUE" -action 'xattrs-add(other.a=1)@true'
refused "'user.a=0x4': invalid hexadecimal value" -action 'xattrs-add(user.a=0x4)@true'
refused "column 16: regex '(': " -action 'xattrs-exclude(\()@true'
refused "test 'dircount' is not supported" -action 'exclude@name(a) || dircount(5)'
refused "test 'readlink' is not supported" -action 'prune@readlink("name(a)")'
refused "column 17: expected \",\" or \")\", got the end" -action 'exclude@name(*.c'
refused "column 14: type 'z'" -action 'exclude@type(z)'
printf 'exclude@true\nbogus@true\n' >"$W/bad.actions"
refused "-action-file '$W/bad.actions': line 2: column 1: no such action 'bogus'" \
	-action-file "$W/bad.actions"
refused "not supported with --tar" -action 'exclude@true' --tar
# mksquashfs 4.7.5 refuses sqk's extensions (section 9): they are not its habits
for a in 'chown(1)@true' 'exclude@mtime(>5)' 'no-xattrs@true' 'no-fragment@true' \
	'always-fragment@true' 'exclude@mtime_range(1,5)'; do
	"$MKSQUASHFS" "$SRC" "$W/m.sqsh" -noappend -quiet -action "$a" >/dev/null 2>&1 &&
		fail "mksquashfs accepts $a"
done

# ---- 8. actions that match nothing: the same bytes as none --------------------------------
export SOURCE_DATE_EPOCH=1700000000
sqk_build "$SRC" "$W/none.sqk" -quiet
sqk_build "$SRC" "$W/nomatch.sqk" -quiet -action 'exclude@name(no-such-name)' \
	-action 'chmod(777)@false' -action 'uncompressed@name(nothing)'
cmp -s "$W/none.sqk" "$W/nomatch.sqk" || fail "actions that match nothing changed the image"
info "actions matching nothing: byte-identical"
info "$n_same action sets give the same image as mksquashfs $SQFS_TOOLS_VERSION"

# ---- 9. sqk's extensions (not in mksquashfs 4.7.5) -------------------------------------------
# chown, no-fragment, always-fragment and no-xattrs give the same bytes as mksquashfs's spelling
alias_same() {
	local src=$1 ext=$2 mks=$3 base=$4
	shift 4
	rm -f "$W/ext.sqk" "$W/mks.sqk"
	sqk_build "$src" "$W/ext.sqk" -quiet "$@" -action "$ext"
	sqk_build "$src" "$W/mks.sqk" -quiet "$@" -action "$mks"
	cmp -s "$W/ext.sqk" "$W/mks.sqk" || fail "$ext: not the image of $mks"
	cmp -s "$W/ext.sqk" "$base" && fail "$ext: changed nothing"
	n_same=$((n_same + 1))
}
sqk_build "$XS" "$W/xnone.sqk" -quiet
sqk_build "$SRC" "$W/notail.sqk" -quiet -no-tailends
alias_same "$SRC" 'chown(daemon:bin)@name(*.c)' 'guid(daemon, bin)@name(*.c)' "$W/none.sqk"
alias_same "$SRC" 'chown(7, 8)@type(d)' 'guid(7, 8)@type(d)' "$W/none.sqk"
alias_same "$SRC" 'chown(7)@type(d)' 'uid(7)@type(d)' "$W/none.sqk"
alias_same "$SRC" 'chown(:bin)@type(f)' 'gid(bin)@type(f)' "$W/none.sqk"
alias_same "$SRC" 'no-fragment@size(<5000)' 'no-fragments@size(<5000)' "$W/none.sqk"
alias_same "$SRC" 'always-fragment@name(*.bin)' 'always-use-fragments@name(*.bin)' \
	"$W/notail.sqk" -no-tailends
alias_same "$XS" 'no-xattrs@name(f1) || type(d)' 'xattrs-exclude(.)@name(f1) || type(d)' \
	"$W/xnone.sqk"
alias_same "$XS" 'no-xattrs@name(g2)' 'xattrs-include(^$)@name(g2)' "$W/xnone.sqk"
info "chown, no-fragment, always-fragment, no-xattrs: the bytes of their mksquashfs spelling"

# mtime selects the files find's -newermt selects
MT=$W/mt
mkdir -p "$MT/d"
for t in '2019-05-05 10:00' '2021-03-03 12:00' '2023-01-01 00:00:00' '2024-06-01 08:00' \
	'2025-12-31 23:59'; do
	f=$MT/$(echo "$t" | tr -dc 0-9)
	echo "$t" >"$f"
	cp -p "$f" "$MT/d/"
	touch -d "$t UTC" "$f" "$MT/d/${f##*/}"
done
mt_files() {
	(cd "$1" && find . -type f "${@:2}" | LC_ALL=C sort)
}
mtime_case() {
	local expr=$1
	shift
	rm -f "$W/mt.sqk"
	sqk_build "$MT" "$W/mt.sqk" -quiet -action "exclude@type(f) && !($expr)"
	rm -rf "$W/mtx"
	"$UNSQUASHFS" -n -d "$W/mtx" "$W/mt.sqk" >/dev/null 2>&1 || fail "mtime: extract"
	mt_files "$W/mtx" >"$TMP/mt.got"
	mt_files "$MT" "$@" >"$TMP/mt.want"
	diff -u "$TMP/mt.want" "$TMP/mt.got" >&2 || fail "mtime: $expr is not find $*"
	[ -s "$TMP/mt.got" ] && [ "$(wc -l <"$TMP/mt.got")" -lt 10 ] ||
		fail "mtime: $expr keeps all or none"
}
mtime_case 'mtime(">2023-01-01 00:00:00 UTC")' -newermt '2023-01-01 00:00:00 UTC'
mtime_case 'mtime(">=2023-01-01 00:00:00 UTC")' -newermt '2022-12-31 23:59:59 UTC'
mtime_case 'mtime(<1672531200)' ! -newermt @1672531199
mtime_case 'mtime(1672531200)' -newermt @1672531199 ! -newermt @1672531200
mtime_case 'mtime_range(1577836800, "2024-06-01 08:00 UTC")' -newermt @1577836799 \
	! -newermt '2024-06-01 08:00 UTC'
mtime_case 'mtime("<=@1672531200") && name(2*)' ! -newermt @1672531200 -name '2*'
info "mtime and mtime_range select what find -newermt selects"
info "$n_same action sets give the same image as their reference"
