#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# The pseudo definitions of mksquashfs 4.7 beyond d m c b s i: f/F (a command's output), h and
# l (a file of this machine; l of a file in the source makes a hard link), L (a hard link to an
# image entry), x (xattrs, in each value form), the timed forms, -pd, -pf - (standard input),
# line continuations, -pseudo-override. The same definitions given to $MKSQUASHFS and to sqk mkimage on the same
# tree give equal `unsquashfs -lln` listings, equal contents, equal link counts and equal
# xattrs. A symbolic mode (an sqk extension) gives what its octal equivalent gives mksquashfs.
# A failing f command fails the build, naming the definition and the exit status, and writes
# nothing.
. "$(dirname "$0")/lib.sh"
need_root
need_sqk
peer_squashfs_tools
need_squashfs_tools 4.7
need_cmd getfattr

W=$(scratch pseudo_more)
SRC=$W/src
T=1700000000
mkdir -p "$SRC/etc" "$SRC/bin" "$SRC/share"
echo 'root:x:0:0::/root:/bin/sh' >"$SRC/etc/passwd"
printf '#!/bin/sh\necho hi\n' >"$SRC/bin/hello"
head -c 300000 /dev/urandom >"$SRC/share/blob"
echo 'outside the source' >"$W/host.txt"
ln -s host.txt "$W/host.link"
find "$SRC" -exec touch -h -d @1600000000 {} +

# Definitions both tools read. Paths of h and l are relative to the working directory (the
# source, as mksquashfs reads them), so "etc/passwd.l l etc/passwd" links to a source file.
cat >"$W/defs" <<'P'
etc/motd f 644 0 0 printf 'welcome %s\n' "$((6 * 7))"
etc/version F 1650000001 0444 0 0 echo 1.0; \
  echo second line
etc/passwd.l l etc/passwd
etc/host.h h ../host.link
etc/host.l l ../host.link
etc/passwd x user.comment=plain text value
etc/passwd x user.hex=0x00ff7f80
etc/passwd x user.b64=0saGVsbG8Ad29ybGQ=
etc/passwd x user.text=0tnul\000end
etc x trusted.dir=1
dev/null C 1650000002 666 0 0 1 3
dev/sda B 1650000003 660 0 6 8 0
dev/null2 L dev/null
run/fifo I 1650000004 620 0 0 f
run/sock I 1650000005 600 0 0 s
bin/sh S 1650000006 777 0 0 hello
srv D 1650000007 750 33 33
bin/hello M 1650000008 4755 0 0
deep/a/b/file F 1650000009 600 1 1 echo deep
P

build_both() { # NAME SQK_EXTRA... -- MKS_EXTRA...: $W/NAME.sqk and $W/NAME.mks from $SRC
	local name=$1 sargs=() margs=()
	shift
	while [ $# -gt 0 ] && [ "$1" != -- ]; do sargs+=("$1"); shift; done
	shift
	margs=("$@")
	(cd "$SRC" && SOURCE_DATE_EPOCH=$T "$SQK" mkimage -q --default-mtime $T "${sargs[@]}" \
		. "$W/$name.sqk") || fail "$name: sqk mkimage failed"
	(cd "$SRC" && SOURCE_DATE_EPOCH=$T "$MKSQUASHFS" . "$W/$name.mks" -noappend -quiet \
		-no-progress "${margs[@]}") >"$W/$name.mks.log" 2>&1 ||
		fail "$name: mksquashfs failed: $(tail -n 3 "$W/$name.mks.log")"
}

# listings (numeric owners, times), contents, link counts and xattrs of two images equal
same_images() { # NAME A B
	local n=$1 a=$2 b=$3 x
	"$UNSQUASHFS" -lln "$a" >"$W/$n.a.lst" || fail "$n: cannot list $a"
	"$UNSQUASHFS" -lln "$b" >"$W/$n.b.lst" || fail "$n: cannot list $b"
	diff "$W/$n.a.lst" "$W/$n.b.lst" >"$W/$n.diff" ||
		{ cat "$W/$n.diff" >&2; fail "$n: listings differ"; }
	for x in a b; do
		rm -rf "$W/$n.$x.x"
		"$UNSQUASHFS" -q -n -xattrs -d "$W/$n.$x.x" "$([ $x = a ] && echo "$a" || echo "$b")" \
			>/dev/null 2>&1 || fail "$n: cannot extract ($x)"
		(cd "$W/$n.$x.x" && find . -printf '%p %y %n\n' | sort) >"$W/$n.$x.links"
		(cd "$W/$n.$x.x" && find . -type f -exec sha256sum {} + | sort) >"$W/$n.$x.sums"
		(cd "$W/$n.$x.x" && getfattr -R -h -d -m - -e hex . 2>/dev/null) >"$W/$n.$x.xattrs"
	done
	diff "$W/$n.a.sums" "$W/$n.b.sums" >&2 || fail "$n: contents differ"
	diff "$W/$n.a.links" "$W/$n.b.links" >&2 || fail "$n: link counts differ"
	diff "$W/$n.a.xattrs" "$W/$n.b.xattrs" >&2 || fail "$n: xattrs differ"
}

# 1. Every type, from a file, with -pd for the missing parents (deep/a/b, dev, run).
build_both all -pd "d 0711 0 0" -pf "$W/defs" -- -pd "d 0711 0 0" -pf "$W/defs"
same_images all "$W/all.sqk" "$W/all.mks"
grep -q ' squashfs-root/etc/motd$' "$W/all.a.lst" && grep -q 'squashfs-root/deep/a/b/file' \
	"$W/all.a.lst" || fail "the listing lacks the new entries: $(cat "$W/all.a.lst")"
[ "$(cat "$W/all.a.x/etc/motd")" = "welcome 42" ] || fail "etc/motd: $(cat "$W/all.a.x/etc/motd")"
[ "$(cat "$W/all.a.x/etc/version")" = "$(printf '1.0\nsecond line')" ] ||
	fail "etc/version (a continued line): $(cat "$W/all.a.x/etc/version")"
cmp -s "$W/all.a.x/etc/host.h" "$W/host.txt" || fail "h did not follow the symlink"
[ "$(readlink "$W/all.a.x/etc/host.l")" = host.txt ] || fail "l followed the symlink"
grep -q '^./etc/passwd f 2$' "$W/all.a.links" || fail "etc/passwd.l is not a hard link"
grep -q '^./dev/null c 2$' "$W/all.a.links" || fail "dev/null2 is not a hard link"
grep -q 'user.text=0x6e756c00656e64' "$W/all.a.xattrs" || fail "0t value: $(cat "$W/all.a.xattrs")"
grep -q 'user.b64=0x68656c6c6f00776f726c64' "$W/all.a.xattrs" || fail "0s value"
grep -q 'drwx--x--x 0/0 .* squashfs-root/deep/a$' <(tr -s ' ' <"$W/all.a.lst") ||
	fail "-pd did not make deep/a 0711"

# 2. -pf - (standard input) and -p: the same image as from the file.
(cd "$SRC" && SOURCE_DATE_EPOCH=$T "$SQK" mkimage -q --default-mtime $T -pd "d 0711 0 0" \
	-pf - . "$W/stdin.sqk" <"$W/defs") || fail "-pf - failed"
same_images stdin "$W/stdin.sqk" "$W/all.mks"

# 3. A symbolic mode gives what its octal equivalent gives mksquashfs.
build_both sym -p "etc/passwd m u+x,g-r,o= 0 0" -p "bin m a=rx,u+w 0 0" -p \
	"srv2 D 1650000010 u=rwx,g=rx,a+t 0 0" -- -p "etc/passwd m 0700 0 0" \
	-p "bin m 0755 0 0" -p "srv2 D 1650000010 1750 0 0"
same_images sym "$W/sym.sqk" "$W/sym.mks"
grep -q '^-rwx------ .*squashfs-root/etc/passwd$' "$W/sym.a.lst" ||
	fail "u+x,g-r,o= on 0644: $(grep etc/passwd "$W/sym.a.lst")"

# 4. -all-root applies to the definitions' owners too, unless -pseudo-override (mksquashfs's).
for ovr in "" -pseudo-override; do
	d=${ovr:+ovr}
	build_both "owner$d" -all-root $ovr -p "srv3 d 755 33 33" -p "etc/passwd m 600 44 44" -- \
		-all-root $ovr -p "srv3 d 755 33 33" -p "etc/passwd m 600 44 44"
	same_images "owner$d" "$W/owner$d.sqk" "$W/owner$d.mks"
done
tr -s ' ' <"$W/owner.a.lst" | grep -q '^drwxr-xr-x 0/0 .* squashfs-root/srv3$' ||
	fail "-all-root did not apply to srv3: $(cat "$W/owner.a.lst")"
tr -s ' ' <"$W/ownerovr.a.lst" | grep -q '^-rw------- 44/44 .* squashfs-root/etc/passwd$' ||
	fail "-pseudo-override: $(cat "$W/ownerovr.a.lst")"

# 5. A failing command fails the build: named definition, exit status, nothing written.
printf '%s\n' '# one' 'bad f 644 0 0 echo partial; exit 3' >"$W/bad"
rm -f "$W/bad.sqk"
if "$SQK" mkimage -q -pf "$W/bad" "$SRC" "$W/bad.sqk" 2>"$W/bad.err"; then
	fail "a failing f command did not fail the build"
fi
grep -q "pseudo definition at $W/bad:2: command 'echo partial; exit 3' failed (exit status 3)" \
	"$W/bad.err" || fail "message: $(cat "$W/bad.err")"
[ ! -e "$W/bad.sqk" ] || fail "an image was written"
"$MKSQUASHFS" "$SRC" "$W/bad.mks" -noappend -quiet -no-progress -pf "$W/bad" \
	>/dev/null 2>&1 && info "(mksquashfs $SQFS_TOOLS_VERSION builds it anyway: sqk refuses)"

# 6. What sqk still refuses, by name: R on the command line; L to a missing entry.
"$SQK" mkimage -q -p "x R 1 644 0 0 1 0 0" "$SRC" "$W/r.sqk" 2>"$W/r.err" && fail "R taken from -p"
grep -q "'R' is only read from a pseudo file" "$W/r.err" || fail "R message: $(cat "$W/r.err")"
"$SQK" mkimage -q -p "x L nosuch" "$SRC" "$W/r.sqk" 2>"$W/r.err" && fail "L to nothing taken"
grep -q "'nosuch' is not a file in the image" "$W/r.err" || fail "L message: $(cat "$W/r.err")"
echo "pseudo definitions against mksquashfs $SQFS_TOOLS_VERSION: ok"
