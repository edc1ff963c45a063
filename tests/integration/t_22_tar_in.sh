#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# sqk mkimage --tar: an image from a tar stream.
#  1. the rich tree (sockets removed: tar cannot hold them) through GNU tar (pax, xattrs of every
#     namespace, 5 GiB sparse file) gives the very bytes of the directory build, from stdin and
#     from a file; so does GNU format without xattrs (././@LongLink names, 'S' sparse headers) vs
#     --no-xattrs; bsdtar's archive (every xattr twice, LIBARCHIVE. and SCHILY.) mounts equal
#     to the source;
#  2. gzip, xz, zstd, bzip2, lz4 compressed archives, and concatenated gzip members, are read
#     directly: same bytes;
#  3. sparse files in the GNU, old GNU and pax 0.0/0.1/1.0 sparse formats read back right
#     (sqk cat, unsquashfs -d) and stay holes (the image is a few KiB);
#  4. sqfstar and tar2sqfs of the same archive list the same tree (unsquashfs -lln), and their
#     kernel mounts equal ours (contents, xattrs, hard links); only the root differs, which
#     the archive does not list;
#  5. directories the archive implies take --default-mode/uid/gid/mtime; one listed after its
#     contents takes its own attributes;
#  6. owners and device nodes from an archive made without root, built by uid 65534;
#  7. hostile names stay inside the image (one warning), nothing is written outside;
#  8. a truncated archive, a damaged header, a hard link to itself, garbage and empty input
#     fail with exit 1 and a message naming the entry and offset; no image is left and an
#     older image stays as it was; an empty archive (zeros only) is an image with a root;
#  9. concatenated archives: the first only by default, all with --ignore-zeros (with a hard
#     link across them); xattrs from pax records;
# 10. every image passes sqk verify; the tar image of the rich tree mounts equal to the source.
. "$(dirname "$0")/lib.sh"
need_kernel_mount
need_sqk
need_feature tar
need_cmd tar python3 unsquashfs cmp gzip
LLS="python3 $IT_DIR/tar_lls.py"
# zstd level 1: the test is about what is stored, and level 15 costs a minute on two cores
Z="-c zstd -l 1"
MAKE="python3 $IT_DIR/tar_make.py"

W=$(scratch tarin)
SRC=$W/src
$MKTREE "$SRC" || fail "mktree failed"
find "$SRC" -type s -delete
[ -z "$(find "$SRC" -type s)" ] || fail "sockets left in the source"

same() {
	cmp "$1" "$2" >"$TMP/cmp.out" 2>&1 ||
		fail "$3: images differ: $(head -n 1 "$TMP/cmp.out") (sizes $(stat -c %s "$1") and $(stat -c %s "$2"))"
	info "$3: identical to the directory build"
}

# verified IMAGE: the superblock and integrity data are right and sqk verify calls it clean.
verified() {
	check_superblock "$1"
	"$SQK" verify "$1" >"$TMP/verify.out" 2>&1 || {
		cat "$TMP/verify.out" >&2
		fail "sqk verify $1 failed"
	}
	grep -q ': clean;' "$TMP/verify.out" || fail "sqk verify $1: $(cat "$TMP/verify.out")"
}

# ---- 1. byte identity with the directory build ---------------------------------------------
sqk_build -q $Z "$SRC" "$W/dir.sqsh"
verified "$W/dir.sqsh"
tar --sort=name --sparse --xattrs --xattrs-include='*' -C "$SRC" -cf "$W/tree.tar" . ||
	fail "tar of the rich tree failed"
ps=0
tar --sort=name --sparse --xattrs --xattrs-include='*' -C "$SRC" -cf - . |
	"$SQK" mkimage -q $Z --tar - "$W/stdin.sqsh" >"$TMP/build.out" 2>"$TMP/build.err" || ps=$?
[ $ps = 0 ] || { cat "$TMP/build.err" >&2; fail "tar | sqk mkimage --tar - exited $ps"; }
# the latin-1 name is not UTF-8 in a pax record: libarchive warns, the name stays as bytes
[ ! -s "$TMP/build.err" ] || fail "the build of the rich tree's tar wrote: $(head -n 3 "$TMP/build.err")"
same "$W/dir.sqsh" "$W/stdin.sqsh" "tar | mkimage --tar -"
sqk_build -q $Z --tar "$W/tree.tar" "$W/file.sqsh"
same "$W/dir.sqsh" "$W/file.sqsh" "mkimage --tar FILE"
verified "$W/file.sqsh"

sqk_build -q $Z --no-xattrs "$SRC" "$W/dir_nx.sqsh"
tar --sort=name --sparse --format=gnu -C "$SRC" -cf "$W/gnu.tar" . || fail "tar --format=gnu failed"
python3 -c 'import sys; d = open(sys.argv[1], "rb").read(); sys.exit(b"././@LongLink" not in d)' \
	"$W/gnu.tar" || fail "the GNU-format archive has no ././@LongLink entry"
sqk_build -q $Z --no-xattrs --tar "$W/gnu.tar" "$W/gnu.sqsh"
same "$W/dir_nx.sqsh" "$W/gnu.sqsh" "GNU format (long names, 'S' sparse), --no-xattrs"
rm -f "$W/gnu.tar" "$W/dir_nx.sqsh" "$W/gnu.sqsh"

# ---- 10. the tar image mounts equal to the source ------------------------------------------
mount_sq "$W/file.sqsh" "$W/mnt"
tree_equal "kernel mount of the tar image" "$SRC" "$W/mnt"
umount_sq "$W/mnt"

if command -v bsdtar >/dev/null; then
	# bsdtar cannot make the latin-1 name UTF-8 and says so (exit 1), but stores it
	LC_ALL=C.UTF-8 bsdtar --xattrs --format=pax -C "$SRC" -cf "$W/bsd.tar" . 2>"$TMP/bsdtar.err"
	grep -v "Can't translate pathname" "$TMP/bsdtar.err" | grep . &&
		fail "bsdtar failed: $(head -n 3 "$TMP/bsdtar.err")"
	python3 -c 'import sys; d = open(sys.argv[1], "rb").read(); sys.exit(not (b"LIBARCHIVE.xattr.user.on_root" in d and b"SCHILY.xattr.user.on_root" in d))' \
		"$W/bsd.tar" || fail "bsdtar did not write each xattr twice any more: the case is gone"
	sqk_build -q $Z --tar "$W/bsd.tar" "$W/bsd.sqsh"
	verified "$W/bsd.sqsh"
	mount_sq "$W/bsd.sqsh" "$W/mnt"
	tree_equal "bsdtar pax archive (xattrs listed twice)" "$SRC" "$W/mnt"
	umount_sq "$W/mnt"
	rm -f "$W/bsd.tar" "$W/bsd.sqsh"
else
	info "bsdtar is not installed: its archive was not tried"
fi

# ---- 2. compressed archives --------------------------------------------------------------
# the rich tree without files/ and dup/ (their random MiB make xz and bzip2 slow): each
# compressed archive gives the bytes of the plain one
tar --sort=name --sparse --xattrs --xattrs-include='*' --exclude=./files --exclude=./dup \
	-C "$SRC" -cf "$W/small.tar" . || fail "tar of the smaller tree failed"
sqk_build -q $Z --tar "$W/small.tar" "$W/small.sqsh"
zsame() {
	cmp "$W/small.sqsh" "$W/z.sqsh" >"$TMP/cmp.out" 2>&1 ||
		fail "$1: image differs from the plain archive's: $(head -n 1 "$TMP/cmp.out")"
	info "$1: identical to the plain archive's image"
	rm -f "$W/z.sqsh"
}
for z in gzip xz zstd bzip2 lz4; do
	if ! command -v $z >/dev/null; then
		info "$z is not installed: not tried"
		continue
	fi
	case $z in xz) zopt="-0 -T0" ;; zstd | lz4) zopt="-q -1" ;; *) zopt=-1 ;; esac
	$z $zopt -c "$W/small.tar" >"$W/small.tar.z" || fail "$z failed"
	sqk_build -q $Z --tar "$W/small.tar.z" "$W/z.sqsh"
	zsame "$z archive"
done
gzip -1 -c "$W/small.tar" | sqk_build -q $Z --tar - "$W/z.sqsh" || fail "gzip archive on stdin"
zsame "gzip archive on stdin"
rm -f "$W/small.tar.z" "$W/small.tar" "$W/small.sqsh"

# ---- 4. peers: sqfstar, tar2sqfs ---------------------------------------------------------
# The archive lists no root ('./'): sqfstar 4.5.1 stops at 'Tar pathname can't have . or ..'
# on './' names. Each tool then gives the root its own defaults (sqfstar 0777 and the time of
# the build), the one line left out of the listing comparison and --ignore-root-attrs.
(cd "$SRC" && find . -mindepth 1 -maxdepth 1 -printf '%P\0' | LC_ALL=C sort -z |
	tar --null -T - --sort=name --sparse --xattrs --xattrs-include='*' -cf "$W/peer.tar") ||
	fail "tar for the peers failed"
sqk_build -q $Z --tar "$W/peer.tar" "$W/ours.sqsh"
verified "$W/ours.sqsh"
$LLS "$W/ours.sqsh" | grep -av '^/ ' >"$W/ours.lls" || fail "listing our image failed"
[ "$(wc -l <"$W/ours.lls")" -gt 3000 ] || fail "our listing has $(wc -l <"$W/ours.lls") lines"
npeer=0
peer() {
	local name=$1
	$LLS "$W/$name.sqsh" | grep -av '^/ ' >"$W/$name.lls" || fail "listing $name's image failed"
	if ! diff "$W/$name.lls" "$W/ours.lls" >"$TMP/peer.diff"; then
		head -n 20 "$TMP/peer.diff" >&2
		fail "$name and sqk list different trees for one archive"
	fi
	info "$name: unsquashfs -lln lists the same $(wc -l <"$W/ours.lls") entries"
	# A = theirs: treecmp checks a directory's link count only where A's is 2 + subdirectories;
	# tar2sqfs 1.2 counts every entry in it
	mount_sq "$W/$name.sqsh" "$W/theirs"
	mount_sq "$W/ours.sqsh" "$W/mnt"
	tree_equal "$name mount vs ours" "$W/theirs" "$W/mnt" --ignore-root-attrs
	umount_sq "$W/mnt"
	umount_sq "$W/theirs"
	rm -f "$W/$name.sqsh"
	npeer=$((npeer + 1))
}
# sqfstar 4.5.1 now and then stops on a sparse member of this archive ("Failed to read tar file
# files/holes_small ... truncated or corrupted") that GNU tar wrote and that our build above read,
# verified and mounted equal to the source: that case is reported and left to tar2sqfs; any other
# sqfstar failure fails the test.
if command -v sqfstar >/dev/null; then
	if sqfstar -no-progress -quiet -comp lz4 "$W/sqfstar.sqsh" <"$W/peer.tar" >"$TMP/sqfstar.out" 2>&1; then
		peer sqfstar
	elif grep -q "Failed to read tar file files/holes" "$TMP/sqfstar.out" && command -v tar2sqfs >/dev/null; then
		info "sqfstar could not read a sparse member GNU tar wrote: $(grep -a 'Failed to read' "$TMP/sqfstar.out" | head -n 1); compared with tar2sqfs only"
	else
		tail -n 5 "$TMP/sqfstar.out" >&2
		fail "sqfstar failed"
	fi
else
	info "sqfstar (squashfs-tools >= 4.5.1) is not installed: not compared"
fi
if command -v tar2sqfs >/dev/null; then
	tar2sqfs -q -j "$(nproc)" -c zstd -X level=1 "$W/tar2sqfs.sqsh" <"$W/peer.tar" >"$TMP/t2s.out" 2>&1 || {
		tail -n 5 "$TMP/t2s.out" >&2
		fail "tar2sqfs failed"
	}
	peer tar2sqfs
else
	info "tar2sqfs (squashfs-tools-ng) is not installed: not compared"
fi
rm -f "$W/peer.tar" "$W/ours.sqsh"

# ---- 3. sparse formats -------------------------------------------------------------------
SP=$W/sp
mkdir "$SP"
python3 - "$SP" <<'EOF' || fail "making the sparse files failed"
import os, random, sys
r = random.Random(5)
d = sys.argv[1]
with open(os.path.join(d, 'f'), 'wb') as f:          # 64 MiB, four small data pieces
    f.truncate(64 << 20)
    for off in (0, 5 << 20, (40 << 20) + 123, (64 << 20) - 7000):
        f.seek(off)
        f.write(r.randbytes(3000))
with open(os.path.join(d, 'tailhole'), 'wb') as f:   # data, then 16 MiB of hole
    f.write(r.randbytes(10000))
    f.truncate(16 << 20)
open(os.path.join(d, 'allhole'), 'wb').truncate(8 << 20)
EOF
for fmt in gnu oldgnu posix:0.0 posix:0.1 posix:1.0; do
	f=${fmt%%:*}
	v=
	[ "$f" = "$fmt" ] || v=--sparse-version=${fmt#*:}
	tar --sparse --format="$f" $v -C "$SP" -cf "$W/sp.tar" . || fail "tar --sparse $fmt failed"
	sqk_build -q --tar "$W/sp.tar" "$W/sp.sqsh"
	for n in f tailhole allhole; do
		"$SQK" cat "$W/sp.sqsh" "$n" | cmp - "$SP/$n" || fail "sparse $fmt: $n reads back wrong"
	done
	sz=$(stat -c %s "$W/sp.sqsh")
	[ "$sz" -lt 65536 ] || fail "sparse $fmt: image of 88 MiB of mostly holes is $sz bytes"
	info "sparse $fmt: contents right, image $sz bytes"
	verified "$W/sp.sqsh"
	if [ "$fmt" = posix:1.0 ]; then
		extract "$W/sp.sqsh" "$W/spx"
		for n in f tailhole allhole; do
			cmp "$W/spx/$n" "$SP/$n" || fail "sparse $fmt: unsquashfs extracts $n wrong"
		done
		rm -rf "$W/spx"
	fi
	rm -f "$W/sp.tar" "$W/sp.sqsh"
done

# ---- 5. implied directories --------------------------------------------------------------
$MAKE implied "$W/implied.tar" || fail "making implied.tar failed"
sqk_build -q --default-mode 0750 --default-uid 11 --default-gid 22 --default-mtime 123456789 \
	--tar "$W/implied.tar" "$W/implied.sqsh"
verified "$W/implied.sqsh"
$LLS "$W/implied.sqsh" >"$W/implied.lls" || fail "listing implied.sqsh failed"
cat >"$W/implied.want" <<'EOF'
/ drwxr-x--- 11/22 - 1973-11-29 21:33
/a drwxr-x--- 11/22 - 1973-11-29 21:33
/a/b drwxr-x--- 11/22 - 1973-11-29 21:33
/a/b/c.txt -rw-r----- 7/8 6 1970-01-12 13:46
/x drwx------ 5/6 - 1970-01-12 13:46
/x/y drwxr-x--- 11/22 - 1973-11-29 21:33
/x/y/z.txt -rw-r--r-- 0/0 3 1970-01-24 03:33
EOF
diff "$W/implied.want" "$W/implied.lls" >&2 || fail "implied directories: wrong attributes"
[ "$("$SQK" cat "$W/implied.sqsh" a/b/c.txt)" = hello ] || fail "a/b/c.txt: wrong content"
info "implied directories take --default-*; x listed after its contents takes its own"
sqk_build -q --tar "$W/implied.tar" "$W/implied0.sqsh"
$LLS "$W/implied0.sqsh" | grep '^/a ' | grep -qx '/a drwxr-xr-x 0/0 - 1970-01-01 00:00' ||
	fail "implied directory without --default-*: $($LLS "$W/implied0.sqsh" | grep '^/a ')"

# ---- 6. owners and devices without root --------------------------------------------------
O=$W/own
mkdir -p "$O/src/d" "$O/out"
echo data >"$O/src/d/f"
ln -s f "$O/src/d/l"
mkfifo "$O/src/d/p"
tar --sort=name --owner=1234 --group=99 --numeric-owner -C "$O/src" -cf "$O/o.tar" . ||
	fail "tar --owner failed"
$MAKE devices "$O/o.tar" || fail "adding the device nodes failed"
chmod 644 "$O/o.tar"
chmod 1777 "$O/out"
if command -v setpriv >/dev/null; then
	as_user="setpriv --reuid=65534 --regid=65534 --clear-groups"
elif command -v runuser >/dev/null; then
	as_user="runuser -u nobody --"
else
	as_user=
	info "neither setpriv nor runuser: the owners case runs as root"
fi
$as_user "$SQK" mkimage -q --tar "$O/o.tar" "$O/out/o.sqsh" 2>"$TMP/own.err" ||
	fail "unprivileged build failed: $(cat "$TMP/own.err")"
[ -z "$as_user" ] || [ "$(stat -c %u "$O/out/o.sqsh")" = 65534 ] ||
	fail "the image was not written by uid 65534"
verified "$O/out/o.sqsh"
# mode uid gid [major,minor] name [-> target]
"$SQK" ls -l -R "$O/out/o.sqsh" | awk '{
	if ($1 ~ /^[cb]/) print $1, $3, $4, $5 $6, $9
	else if ($1 ~ /^l/) print $1, $3, $4, $8, $9, $10
	else print $1, $3, $4, $8 }' >"$O/ls"
cat >"$O/want" <<'EOF'
drwxr-xr-x 1234 99 d
brw-rw---- 4000000000 3000000000 8,17 d/dev_b
crw--w---- 1234 99 300,70000 d/dev_c
-rw-r--r-- 1234 99 d/f
lrwxrwxrwx 1234 99 d/l -> f
prw-r--r-- 1234 99 d/p
EOF
diff "$O/want" "$O/ls" >&2 || fail "owners/devices of an archive built without root are wrong"
info "owners 1234:99, 4000000000:3000000000 and devices 300:70000, 8:17 stored (as uid 65534)"

# ---- 7. hostile names --------------------------------------------------------------------
H=$W/hostile/in/here
mkdir -p "$H"
$MAKE hostile "$W/hostile.tar" || fail "making hostile.tar failed"
find "$W" | LC_ALL=C sort >"$TMP/before.find"
(cd "$H" && "$SQK" mkimage -q --tar ../../../hostile.tar h.sqsh) 2>"$TMP/hostile.err" ||
	fail "hostile names: build failed: $(cat "$TMP/hostile.err")"
verified "$H/h.sqsh"
[ "$(grep -c 'climbs above the root' "$TMP/hostile.err")" = 1 ] ||
	fail "hostile names: want one warning, got: $(cat "$TMP/hostile.err")"
[ "$(wc -l <"$TMP/hostile.err")" = 1 ] || fail "hostile names: stderr: $(cat "$TMP/hostile.err")"
"$SQK" ls -R "$H/h.sqsh" >"$TMP/hostile.ls" || fail "sqk ls of the hostile image failed"
printf '%s\n' abs abs/path b etc etc/evil etc/hl lnk ok2 | diff - "$TMP/hostile.ls" >&2 ||
	fail "hostile names: wrong tree"
[ "$("$SQK" cat "$H/h.sqsh" etc/evil)" = evil ] && [ "$("$SQK" cat "$H/h.sqsh" b)" = b ] &&
	[ "$("$SQK" cat "$H/h.sqsh" abs/path)" = abs ] || fail "hostile names: wrong contents"
"$SQK" ls -l "$H/h.sqsh" etc/hl | grep -q '^-rw-r--r-- *2 ' || fail "etc/hl is not a hard link of etc/evil"
"$SQK" ls -l "$H/h.sqsh" lnk | grep -q -- '-> \.\./\.\./\.\./etc/passwd$' || fail "lnk's target changed"
new=$(find "$W" | LC_ALL=C sort | comm -13 "$TMP/before.find" -)
[ "$new" = "$H/h.sqsh" ] || fail "hostile names: files written: $new"
[ ! -e /etc/evil ] && [ ! -e /abs/path ] && [ ! -e "$W/etc" ] && [ ! -e "$W/b" ] ||
	fail "hostile names: something was written outside"
info "hostile names stored as abs/path, b, etc/evil, ok2 (one warning)"

# ---- 8. bad input ------------------------------------------------------------------------
B=$W/bad
mkdir -p "$B/out"
$MAKE threefiles "$B/good.tar" || fail "making threefiles failed"
python3 - "$B" <<'EOF' || fail "making the damaged archives failed"
import sys
d = sys.argv[1]
data = open(d + '/good.tar', 'rb').read()
open(d + '/trunc.tar', 'wb').write(data[:4096 + 150000])    # in second.bin's data
b = bytearray(data)
b[3584 + 10] ^= 0x55                                        # second.bin's header: bad checksum
open(d + '/badsum.tar', 'wb').write(bytes(b))
open(d + '/cuthdr.tar', 'wb').write(data[:304128 + 200])    # in third.txt's header
open(d + '/garbage', 'wb').write(b'this is not an archive\n' * 100)
open(d + '/empty', 'wb').close()
EOF
gzip -c "$B/trunc.tar" >"$B/trunc.tar.gz"
$MAKE selflink "$B/selflink.tar" || fail "making selflink.tar failed"
sqk_build -q --tar "$B/good.tar" "$B/out/img.sqsh"
cp "$B/out/img.sqsh" "$B/old.sqsh"
bad() {
	local what=$1 input=$2 want=$3 rc=0
	"$SQK" mkimage -q --tar "$input" "$B/out/img.sqsh" 2>"$TMP/bad.err" || rc=$?
	[ $rc = 1 ] || fail "$what: exit $rc, want 1 ($(cat "$TMP/bad.err"))"
	grep -qF -- "$want" "$TMP/bad.err" || fail "$what: message '$(cat "$TMP/bad.err")' lacks '$want'"
	cmp -s "$B/out/img.sqsh" "$B/old.sqsh" || fail "$what: the older image changed"
	[ "$(ls -A "$B/out")" = img.sqsh ] || fail "$what: left behind: $(ls -A "$B/out")"
	rc=0
	"$SQK" mkimage -q --tar - "$B/new.sqsh" <"$input" 2>"$TMP/bad.err" || rc=$?
	[ $rc = 1 ] && grep -qF -- "$want" "$TMP/bad.err" ||
		fail "$what on stdin: exit $rc, '$(cat "$TMP/bad.err")'"
	[ ! -e "$B/new.sqsh" ] || fail "$what on stdin: an image was written"
	info "$what: $(cat "$TMP/bad.err")"
}
bad "truncated in data" "$B/trunc.tar" "'second.bin' (header at offset 3584): content at offset 154096"
bad "truncated, gzip" "$B/trunc.tar.gz" "'second.bin' (header at offset 3584): content at offset 154096"
bad "bad header checksum" "$B/badsum.tar" "bad entry header at offset 3584 (after 'first.bin')"
bad "truncated in a header" "$B/cuthdr.tar" "bad entry header at offset 304128 (after 'second.bin')"
bad "hard link to itself" "$B/selflink.tar" "'a' at offset 1024: hard link to itself"
bad "garbage" "$B/garbage" "not a tar archive"
# zero bytes: a producer that failed before writing anything, not an archive (an empty tar
# archive is at least two zero blocks): an error, where tar2sqfs makes an empty image
bad "empty input" "$B/empty" "empty input (0 bytes): not a tar archive"
tar -cf "$B/none.tar" -T /dev/null || fail "tar of nothing failed"
sqk_build -q --tar "$B/none.tar" "$B/none.sqsh"
verified "$B/none.sqsh"
[ -z "$("$SQK" ls -R "$B/none.sqsh")" ] && [ "$(sb_u32 "$B/none.sqsh" 4)" = 1 ] ||
	fail "an empty archive does not give an image with a root only"
info "an empty archive (zero blocks) gives an image with a root only"

# ---- 9. concatenated archives, xattrs from pax records -----------------------------------
C=$W/cat
mkdir -p "$C/a/x" "$C/b/y"
echo A >"$C/a/x/fa"
echo B >"$C/b/y/fb"
head -c 300000 "$SRC/files/size_1048583" >"$C/b/y/big"
tar -C "$C/a" -cf "$C/a.tar" x && tar -C "$C/b" -cf "$C/b.tar" y || fail "tar failed"
$MAKE crosslink "$C/c.tar" || fail "making crosslink failed"
cat "$C/a.tar" "$C/b.tar" "$C/c.tar" | sqk_build -q --tar - "$C/a_only.sqsh" || fail "concatenated"
printf '%s\n' x x/fa | diff - <("$SQK" ls -R "$C/a_only.sqsh") >&2 ||
	fail "concatenated archives without --ignore-zeros: more than the first archive"
grep -q "start with a tar header: ignored" "$TMP/build.err" || fail "no warning about the archives after the first"
cat "$C/a.tar" "$C/b.tar" "$C/c.tar" | sqk_build -q --tar --ignore-zeros - "$C/abc.sqsh" || fail "concatenated"
verified "$C/abc.sqsh"
printf '%s\n' x x/fa y y/big y/fb y/link_to_a | diff - <("$SQK" ls -R "$C/abc.sqsh") >&2 ||
	fail "concatenated archives: entries missing"
[ "$("$SQK" cat "$C/abc.sqsh" x/fa)" = A ] && [ "$("$SQK" cat "$C/abc.sqsh" y/link_to_a)" = A ] ||
	fail "concatenated archives: wrong contents"
"$SQK" cat "$C/abc.sqsh" y/big | cmp - "$C/b/y/big" || fail "concatenated archives: y/big differs"
"$SQK" ls -l "$C/abc.sqsh" x/fa | grep -q '^-rw-r--r-- *2 ' || fail "the hard link across archives"
gzip -c "$C/a.tar" >"$C/a.tgz" && gzip -c "$C/b.tar" >"$C/b.tgz" || fail "gzip failed"
cat "$C/a.tgz" "$C/b.tgz" >"$C/ab.tgz"
sqk_build -q --tar --ignore-zeros "$C/ab.tgz" "$C/ab.sqsh"
printf '%s\n' x x/fa y y/big y/fb | diff - <("$SQK" ls -R "$C/ab.sqsh") >&2 ||
	fail "concatenated gzip members: entries missing"
info "concatenated archives (plain, with a hard link across them; gzip members): all entries"

$MAKE xattrs "$W/xattrs.tar" || fail "making xattrs.tar failed"
sqk_build -q --tar "$W/xattrs.tar" "$W/xattrs.sqsh"
verified "$W/xattrs.sqsh"
mount_sq "$W/xattrs.sqsh" "$W/mnt"
python3 - "$W/mnt" <<'EOF' || fail "xattrs from pax records are wrong"
import os, sys
m = sys.argv[1]
def xa(p):
    return {k: os.getxattr(os.path.join(m, p), k) for k in os.listxattr(os.path.join(m, p))}
want_f = {'user.a': b'va', 'trusted.b': b'vb', 'security.c': b'vc'}
want_g = {'user.bin': b'\x00\x01\xff', 'user.twice': b'same'}
for p, want in (('f', want_f), ('g', want_g)):
    got = xa(p)
    if got != want:
        sys.exit('%s: xattrs %r, want %r' % (p, got, want))
EOF
umount_sq "$W/mnt"
info "xattrs from SCHILY.xattr and LIBARCHIVE.xattr records (user., trusted., security.)"
