#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# mksquashfs's remaining tree options on `sqk mkimage` (issue 31, point 4), each against
# mksquashfs 4.7.5 on the same tree: -one-file-system and -one-file-system-x (a tmpfs mounted
# inside the source), -max-depth, -no-hardlinks, -root-mode/-root-uid/-root-gid/-root-time,
# -mkfs-time, -all-time (seconds and date strings), -force-uid/-force-gid by name, the
# -xattrs-exclude/-include/-add filters (0x, 0s, 0t values), -o OFFSET (read back by sqk ls
# --offset, unsquashfs -o, a kernel loop mount with offset=, sqk verify --offset), and each bad
# value refused with one line naming the option and nothing written. The listings compared
# are unsquashfs -lln's; xattrs are read from both extractions.
. "$(dirname "$0")/lib.sh"
need_root
need_sqk
need_cmd python3
peer_squashfs_tools
need_squashfs_tools 4.7

W=$(scratch mksopts)
SRC=$W/src
mkdir -p "$SRC/a/b/c" "$SRC/d" "$SRC/mnt" "$SRC/e"
echo one >"$SRC/a/f1"
echo two >"$SRC/a/b/f2"
echo three >"$SRC/a/b/c/f3"
ln "$SRC/a/f1" "$SRC/d/hl"
ln -s f1 "$SRC/a/sl"
mkfifo "$SRC/a/fifo"
chown 1234:5678 "$SRC/a/b/f2"
python3 - "$SRC" <<'EOF' || fail "cannot set xattrs in $W"
import os, sys
s = sys.argv[1]
os.setxattr(s + "/a/f1", "user.foo", b"bar")
os.setxattr(s + "/a/f1", "trusted.t", b"tt")
os.setxattr(s + "/d", "user.zap", b"1")
os.setxattr(s + "/a/b", "user.keep", b"k")
EOF
# a file system of its own inside the source
mount -t tmpfs -o size=1m,mode=1777 sqk-t17 "$SRC/mnt" || skip "cannot mount a tmpfs"
at_exit "umount '$SRC/mnt'"
mkdir "$SRC/mnt/sub"
echo inside >"$SRC/mnt/inside"
unset SOURCE_DATE_EPOCH # mksquashfs refuses it with -all-time and -mkfs-time

# build_both NAME OPTION...: the same options to mksquashfs and sqk mkimage
build_both() {
	local name=$1 out
	shift
	rm -f "$W/$name.p.sqsh" "$W/$name.s.sqsh"
	out=$("$MKSQUASHFS" "$SRC" "$W/$name.p.sqsh" -noappend -quiet -no-progress "$@" 2>&1) ||
		fail "mksquashfs $* failed: $out"
	"$SQK" mkimage "$SRC" "$W/$name.s.sqsh" -q "$@" 2>"$TMP/$name.err" ||
		fail "sqk mkimage $* failed: $(cat "$TMP/$name.err")"
}

# same_listing NAME WHAT: unsquashfs -lln of both images equal
same_listing() {
	"$UNSQUASHFS" -lln "$W/$1.p.sqsh" >"$TMP/$1.p.lln" || fail "unsquashfs -lln of $1.p"
	"$UNSQUASHFS" -lln "$W/$1.s.sqsh" >"$TMP/$1.s.lln" || fail "unsquashfs -lln of $1.s"
	diff -u "$TMP/$1.p.lln" "$TMP/$1.s.lln" >&2 || fail "$2: listings differ (mksquashfs -, sqk +)"
	info "$2: listings equal ($(wc -l <"$TMP/$1.s.lln") entries)"
}

# super_field NAME SIDE FIELD: a line of unsquashfs -s ("MISSING" when there is none, which
# no comparison below accepts: a failure inside $(...) would not end the test)
super_field() {
	"$UNSQUASHFS" -s "$W/$1.$2.sqsh" | grep "^[[:space:]]*$3" || echo "MISSING $3 in $1.$2"
}
# same_field NAME FIELD: that line equal in both images, and there
same_field() {
	local p s
	p=$(super_field "$1" p "$2") s=$(super_field "$1" s "$2")
	case "$p$s" in *MISSING*) fail "no '$2' in unsquashfs -s: $p / $s" ;; esac
	[ "$p" = "$s" ] || fail "$1: mksquashfs '$p', sqk '$s'"
	info "$1: $s"
}

# ---- 1. -one-file-system, -one-file-system-x, -max-depth ------------------------------------
build_both plain
same_listing plain "no option"
grep -q 'squashfs-root/mnt/inside' "$TMP/plain.s.lln" || fail "the tmpfs is not in a plain build"
build_both onefs -one-file-system
same_listing onefs "-one-file-system"
grep -q 'squashfs-root/mnt$' "$TMP/onefs.s.lln" || fail "-one-file-system: no mnt directory"
grep -q 'squashfs-root/mnt/' "$TMP/onefs.s.lln" && fail "-one-file-system: crossed into mnt"
"$SQK" mkimage "$SRC" "$W/msg.sqsh" --one-file-system --no-progress >/dev/null 2>"$TMP/msg.err"
grep -q "mnt' is on another file system: stored as an empty directory" "$TMP/msg.err" ||
	fail "-one-file-system names no mount point: $(cat "$TMP/msg.err")"
build_both onefsx -one-file-system-x
same_listing onefsx "-one-file-system-x"
grep -q 'squashfs-root/mnt' "$TMP/onefsx.s.lln" && fail "-one-file-system-x kept mnt"
for n in 0 1 2 3; do
	build_both depth$n -max-depth $n
	same_listing depth$n "-max-depth $n"
done
# deeper than the tree: the same bytes as without the option (nothing else changes)
"$SQK" mkimage "$SRC" "$W/deep.sqsh" -q --max-depth 100
cmp "$W/plain.s.sqsh" "$W/deep.sqsh" || fail "--max-depth 100 changed the image of a shallow tree"

# ---- 2. -no-hardlinks: two inodes, one copy of the data ------------------------------------
build_both nohl -no-hardlinks
same_listing nohl "-no-hardlinks"
same_field nohl 'Number of inodes'
[ "$(super_field plain s 'Number of inodes')" != "$(super_field nohl s 'Number of inodes')" ] ||
	fail "-no-hardlinks did not add an inode"
"$SQK" mkimage "$SRC" "$W/nohl2.sqsh" --no-hardlinks >"$TMP/nohl.out" 2>&1
grep -q '^duplicates 1 files' "$TMP/nohl.out" ||
	fail "-no-hardlinks: the data is not shared: $(grep '^duplicates' "$TMP/nohl.out")"

# ---- 3. the root's attributes, the times, owners by name -----------------------------------
build_both root -root-mode 0700 -root-uid 12 -root-gid daemon -root-time 7000
same_listing root "-root-mode -root-uid -root-gid -root-time"
grep -q '^drwx------ 12/1 .* 1970-01-01 01:56 squashfs-root$' "$TMP/root.s.lln" ||
	fail "the root's attributes: $(head -n 1 "$TMP/root.s.lln")"
# symbolic -root-mode, as mksquashfs 4.7.5: applied to the source root's mode
old_mode=$(stat -c %a "$SRC")
chmod 00751 "$SRC"
for m in u=rwx,go=rx go-w,o+t g=u a=r,u+w +X g+w,o-x u-x,g=o 0700; do
	build_both rsym -root-mode "$m"
	same_listing rsym "-root-mode $m"
done
# where mksquashfs's rules are not chmod(1)'s: no who letter leaves the set-id bits alone
chmod 2750 "$SRC"
for m in =rx +s =X a-s u+s,o+t; do
	build_both rsym -root-mode "$m"
	same_listing rsym "-root-mode $m on 2750"
done
chmod 00751 "$SRC"
build_both rsym -root-mode g+w,o-x
same_listing rsym "-root-mode g+w,o-x"
grep -q '^drwxrwx--- .* squashfs-root$' "$TMP/rsym.s.lln" ||
	fail "-root-mode g+w,o-x on 0751: $(head -n 1 "$TMP/rsym.s.lln")"
chmod "$old_mode" "$SRC"
build_both rootn -root-uid bin -force-uid 5 -force-gid daemon -root-time "2020-01-01 UTC"
same_listing rootn "-force-uid 5 over -root-uid bin, -force-gid daemon, a date string"
build_both times -all-time 1000 -mkfs-time 5000
same_listing times "-all-time 1000"
same_field times 'Creation'
touch -d 2001-01-01 "$SRC" # "inode": the newest mtime, not the root's own
build_both rinode -root-time inode -mkfs-time inode
same_listing rinode "-root-time inode"
grep -q ' 2001-01-01 .* squashfs-root$' "$TMP/rinode.s.lln" && fail "-root-time inode kept the root's time"
same_field rinode 'Creation'
build_both dates -all-time "2021-06-01 12:00 UTC" -mkfs-time "2022-01-01 UTC"
same_listing dates "-all-time with a date string"
same_field dates 'Creation'

# ---- 4. xattrs: the filters and the additions ----------------------------------------------
# xattrs_of DIR: every entry's xattrs, sorted
xattrs_of() {
	python3 - "$1" <<'EOF'
import os, sys
top = sys.argv[1]
for d, dirs, files in sorted(os.walk(top)):
    for n in [""] + sorted(dirs + files):
        p = os.path.join(d, n) if n else d
        for k in sorted(os.listxattr(p, follow_symlinks=False)):
            v = os.getxattr(p, k, follow_symlinks=False)
            print(os.path.relpath(p, top), k, v.hex())
EOF
}
# same_xattrs NAME WHAT: both images extracted, their xattrs equal
same_xattrs() {
	rm -rf "$W/$1.px" "$W/$1.sx"
	"$UNSQUASHFS" -q -no-progress -d "$W/$1.px" "$W/$1.p.sqsh" >/dev/null || fail "unsquashfs $1.p"
	"$UNSQUASHFS" -q -no-progress -d "$W/$1.sx" "$W/$1.s.sqsh" >/dev/null || fail "unsquashfs $1.s"
	xattrs_of "$W/$1.px" >"$TMP/$1.px"
	xattrs_of "$W/$1.sx" >"$TMP/$1.sx"
	diff -u "$TMP/$1.px" "$TMP/$1.sx" >&2 || fail "$2: xattrs differ (mksquashfs -, sqk +)"
	info "$2: xattrs equal ($(wc -l <"$TMP/$1.sx") values)"
}
umount "$SRC/mnt" # tmpfs xattrs aside
build_both x0
same_xattrs x0 "no option"
grep -q 'a/f1 user.foo 626172' "$TMP/x0.sx" || fail "no user.foo in a plain build"
build_both xex -xattrs-exclude '^user\.f'
same_xattrs xex "-xattrs-exclude"
grep -q 'user.foo' "$TMP/xex.sx" && fail "-xattrs-exclude kept user.foo"
build_both xin -xattrs-include '^trusted'
same_xattrs xin "-xattrs-include"
build_both xadd -xattrs-add user.new=hello -xattrs-add trusted.x=0x414243 \
	-xattrs-add user.b=0sYWJj -xattrs-add 'user.t=0ta\101b'
same_xattrs xadd "-xattrs-add raw, 0x, 0s, 0t"
grep -q '^a/f1 user.t 614162$' "$TMP/xadd.sx" || fail "-xattrs-add 0t: $(grep user.t "$TMP/xadd.sx")"
grep -q '^a/sl user.new' "$TMP/xadd.sx" && fail "-xattrs-add put a user. xattr on a symlink"
grep -q '^a/sl trusted.x 414243$' "$TMP/xadd.sx" || fail "-xattrs-add: no trusted.x on a symlink"
mount -t tmpfs -o size=1m,mode=1777 sqk-t17 "$SRC/mnt" || fail "cannot mount the tmpfs again"
mkdir "$SRC/mnt/sub"
echo inside >"$SRC/mnt/inside"

# ---- 5. -o OFFSET: an embedded image -------------------------------------------------------
for off in 4096 5000 1M; do
	rm -f "$W/off.p.img" "$W/off.s.img"
	"$MKSQUASHFS" "$SRC" "$W/off.p.img" -noappend -quiet -no-progress -o $off >/dev/null 2>&1 ||
		fail "mksquashfs -o $off failed"
	"$SQK" mkimage "$SRC" "$W/off.s.img" -o $off --no-progress >"$TMP/off.out" 2>"$TMP/off.err" ||
		fail "sqk mkimage -o $off failed: $(cat "$TMP/off.err")"
	n=$(numfmt --from=iec $off)
	grep -q "^image .*at offset $n\$" "$TMP/off.out" || fail "-o $off: summary $(head -n 1 "$TMP/off.out")"
	grep -q "no integrity data" "$TMP/off.err" || fail "-o $off: no note on the integrity data"
	cmp -n "$n" "$W/off.s.img" /dev/zero || fail "-o $off: the bytes before the image are not zeros"
	[ "$(stat -c %s "$W/off.s.img")" -gt "$n" ] || fail "-o $off: no image after the offset"
	"$UNSQUASHFS" -o $n -lln "$W/off.p.img" >"$TMP/off.p.lln" || fail "unsquashfs -o of mksquashfs's"
	"$UNSQUASHFS" -o $n -lln "$W/off.s.img" >"$TMP/off.s.lln" || fail "unsquashfs -o $n of sqk's"
	diff -u "$TMP/off.p.lln" "$TMP/off.s.lln" >&2 || fail "-o $off: listings differ"
	"$SQK" ls -R --offset $n "$W/off.s.img" >"$TMP/off.ls" || fail "sqk ls --offset $n failed"
	grep -q 'mnt/inside' "$TMP/off.ls" || fail "sqk ls --offset $n: $(head -n 3 "$TMP/off.ls")"
	"$SQK" verify --offset $n "$W/off.s.img" >"$TMP/off.v" 2>&1 ||
		fail "sqk verify --offset $n: $(cat "$TMP/off.v")"
	grep -q ': clean' "$TMP/off.v" || fail "sqk verify --offset $n: $(cat "$TMP/off.v")"
	info "-o $off: unsquashfs -o, sqk ls and sqk verify --offset read it"
done
if grep -qw squashfs /proc/filesystems || modprobe squashfs 2>/dev/null; then
	mkdir -p "$W/mp"
	if mount -t squashfs -o loop,ro,offset=1048576 "$W/off.s.img" "$W/mp" 2>"$TMP/mount.err"; then
		at_exit "umount '$W/mp' 2>/dev/null"
		cmp "$W/mp/a/b/c/f3" "$SRC/a/b/c/f3" || fail "-o: the kernel reads other bytes"
		umount "$W/mp"
		info "-o 1M image: the kernel mounts it with offset="
	else
		info "kernel mount with offset= not possible here: $(cat "$TMP/mount.err")"
	fi
fi
# a block device: the image at the offset, the old one there intact when -o is past its end
if command -v losetup >/dev/null && truncate -s 8M "$W/dev.img" &&
	LOOP=$(losetup -f --show "$W/dev.img" 2>/dev/null); then
	at_exit "losetup -d '$LOOP'"
	"$SQK" mkimage "$SRC" "$LOOP" -o 1M -q || fail "sqk mkimage -o 1M onto $LOOP failed"
	"$UNSQUASHFS" -o 1048576 -lln "$LOOP" >"$TMP/dev.lln" || fail "unsquashfs -o of $LOOP"
	diff -u "$TMP/off.s.lln" "$TMP/dev.lln" >&2 || fail "-o 1M on a device: listings differ"
	run_capture devpast "$SQK" mkimage "$SRC" "$LOOP" -o 9M -q
	[ "$RC" = 1 ] && grep -q "past the end of the block device" "$ERR_FILE" ||
		{ show_err; fail "-o 9M on an 8M device: exit $RC"; }
	grep -q "superblock is zeroed" "$ERR_FILE" && fail "-o past the end touched the device"
	"$UNSQUASHFS" -o 1048576 -lln "$LOOP" >"$TMP/dev2.lln" || fail "-o past the end: old image gone"
	info "-o on a block device: written at the offset; past its end refused, nothing touched"
fi
# signatures need integrity data, which an image at an offset does not get
"$SQK" keygen "$W/k" >/dev/null 2>&1 || fail "sqk keygen failed"
run_capture osign "$SQK" mkimage "$SRC" "$W/osign.img" -o 4096 --sign "$W/k"
[ "$RC" = 2 ] && grep -q -- "--offset with --sign is not supported" "$ERR_FILE" ||
	{ show_err; fail "-o with --sign: exit $RC"; }

# ---- 6. -Xdict-size: stored in the compressor options, read by unsquashfs and the kernel ------
python3 -c 'import sys; sys.stdout.write("".join("row %d of %d\n" % (i, i * i % 251) for i in range(30000)))' \
	>"$SRC/a/text"
for d in 50% 37.5% 48K 32768 12.5%; do
	build_both dict -comp xz -Xdict-size $d
	same_field dict 'Dictionary size'
	rm -rf "$W/dict.x"
	"$UNSQUASHFS" -q -no-progress -d "$W/dict.x" "$W/dict.s.sqsh" >/dev/null ||
		fail "unsquashfs of the -Xdict-size $d image"
	cmp "$W/dict.x/a/text" "$SRC/a/text" || fail "-Xdict-size $d: unsquashfs reads other bytes"
	info "-Xdict-size $d: unsquashfs extracts it"
done
"$SQK" mkimage "$SRC" "$W/dict2.sqsh" -q -b 1M --xz-dict-size 512K -c xz
"$UNSQUASHFS" -s "$W/dict2.sqsh" | grep -q 'Dictionary size 524288' || fail "--xz-dict-size 512K"
if grep -qw squashfs /proc/filesystems && mount -t squashfs -o loop,ro "$W/dict.s.sqsh" "$W/mp" 2>/dev/null; then
	at_exit "umount '$W/mp' 2>/dev/null"
	cmp "$W/mp/a/text" "$SRC/a/text" || fail "-Xdict-size: the kernel reads other bytes"
	umount "$W/mp"
	info "-Xdict-size 12.5%: the kernel reads it"
fi

# ---- 7. bad values: one line naming the option, exit 2, nothing written --------------------
bad() {
	local opt=$1
	rm -f "$W/bad.sqsh"
	run_capture bad "$SQK" mkimage "$SRC" "$W/bad.sqsh" "$@"
	[ "$RC" = 2 ] || { show_err; fail "$* exited $RC, not 2"; }
	[ "$(wc -l <"$ERR_FILE")" = 1 ] || { show_err; fail "$*: not one line"; }
	grep -q -- "$opt" "$ERR_FILE" || { show_err; fail "$*: the option is not named"; }
	[ -e "$W/bad.sqsh" ] && fail "$*: an image was written"
	info "refused: $(cat "$ERR_FILE")"
}
bad -max-depth x
bad -max-depth -1
bad -root-mode 0999
bad -root-mode u+q
bad -root-mode x=y
bad -root-mode u+rw,
bad -root-uid no-such-user-t17
bad -root-gid no-such-group-t17
bad -force-uid no-such-user-t17
bad --force-gid 12x
bad -root-time "not a date at all"
bad -mkfs-time 99999999999
bad -all-time inode
bad -xattrs-exclude '('
bad -xattrs-include '[a'
bad -xattrs-add user.x
bad -xattrs-add foo.x=1
bad -xattrs-add user.x=0xZZ
bad -xattrs-add 'user.x=0t\9'
bad -o 12Q
bad -Xdict-size 100K -comp xz
bad -Xdict-size 4K -comp xz
bad -Xdict-size 256K -comp xz
bad -Xdict-size 101% -comp xz
bad -Xdict-size 0.5K -comp xz
bad -Xdict-size 50%
exit 0
