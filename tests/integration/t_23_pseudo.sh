#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# --pseudo / --pseudo-def: an unprivileged user builds a root filesystem image with root-owned
# entries, device nodes, a fifo, a symlink, a hard link and changed modes; the kernel mount shows
# exactly those; mksquashfs's -pf with the same file lists the same tree; bad definitions are
# refused with FILE:LINE and leave no image.
. "$(dirname "$0")/lib.sh"
need_root
need_sqk
need_cmd unsquashfs mksquashfs setpriv

W=$(scratch pseudo)
chmod 777 "$W"
SRC=$W/src
mkdir -p "$SRC/etc" "$SRC/bin"
echo 'root:x:0:0::/root:/bin/sh' >"$SRC/etc/passwd"
printf '#!/bin/sh\necho hi\n' >"$SRC/bin/hello"
chmod 700 "$SRC/bin/hello"
touch -d @1600000000 "$SRC/etc/passwd" "$SRC/bin/hello" "$SRC/etc" "$SRC/bin" "$SRC"
chown -R 65534:65534 "$SRC"

cat >"$W/pseudo" <<'P'
# a bootable root file system, built without root
/ m 755 0 0
dev d 755 0 0
dev/console c 600 0 5 5 1
dev/null c 666 0 0 1 3
dev/sda b 660 0 6 8 0
etc m 755 0 0
etc/passwd m 644 0 0
bin/hello m 4755 0 0
bin/sh s 777 0 0 hello
"run/my fifo" i 620 0 0 f
etc/passwd.hl l etc/passwd
P
# run/ must exist before its fifo: given on the command line after the file it would be late,
# so it goes first through --pseudo-def (definitions apply in command-line order)
as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
as_nobody "$SQK" mkimage -q --pseudo-def 'run d 1777 0 0' --pseudo "$W/pseudo" "$SRC" \
	"$W/img.sqsh" || fail "non-root build with pseudo definitions failed"

M=$W/mnt
mount_sq "$W/img.sqsh" "$M"
st() { stat -c '%F %a %u:%g %t:%T' "$M/$1"; }
expect() {
	local got
	got=$(st "$1")
	[ "$got" = "$2" ] || fail "$1: got '$got', want '$2'"
}
expect . "directory 755 0:0 0:0"
expect dev "directory 755 0:0 0:0"
expect dev/console "character special file 600 0:5 5:1"
expect dev/null "character special file 666 0:0 1:3"
expect dev/sda "block special file 660 0:6 8:0"
expect etc "directory 755 0:0 0:0"
expect etc/passwd "regular file 644 0:0 0:0"
expect bin/hello "regular file 4755 0:0 0:0"
expect bin "directory 755 65534:65534 0:0"
expect run "directory 1777 0:0 0:0"
expect "run/my fifo" "fifo 620 0:0 0:0"
[ "$(readlink "$M/bin/sh")" = hello ] || fail "bin/sh does not point at hello"
[ "$(stat -c %i "$M/etc/passwd")" = "$(stat -c %i "$M/etc/passwd.hl")" ] ||
	fail "etc/passwd.hl is not a hard link of etc/passwd"
[ "$(stat -c %h "$M/etc/passwd")" = 2 ] || fail "etc/passwd link count is not 2"
cmp -s "$M/bin/hello" "$SRC/bin/hello" || fail "bin/hello content differs"
"$SQK" verify "$W/img.sqsh" >"$W/verify.out" 2>&1 || fail "sqk verify failed on the pseudo image"
umount_sq "$M"

# The same definitions through mksquashfs -pf: same listing. (mksquashfs 4.5's 'l' links to a
# file of the host, ours to an entry of the image: that line and its entry are left out.)
{ echo 'run d 1777 0 0'; cat "$W/pseudo"; } | grep -v -e '^#' -e ' l ' >"$W/pseudo.mks"
if mksquashfs "$SRC" "$W/mks.sqsh" -noappend -quiet -no-progress -pf "$W/pseudo.mks" \
	>"$W/mks.log" 2>&1; then
	# mode, owner, size or device numbers, name; not times, not directory sizes (the extra link),
	# not the root (mksquashfs 4.5 does not apply "/ m" to it; the mount check above covers it)
	norm() {
		unsquashfs -lln "$1" | grep -E "^[-dlcbps][-rwxsStT]{9} " | grep -v -e passwd.hl -e " squashfs-root$" |
			sed -E 's/ [0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2} / /; s/^(d[^ ]+ +[^ ]+) +[0-9]+ /\1 /' |
			tr -s ' ' | sort
	}
	norm "$W/img.sqsh" >"$W/a"
	norm "$W/mks.sqsh" >"$W/b"
	[ "$(grep -c 'dev/console' "$W/a")" = 1 ] && [ "$(wc -l <"$W/a")" -ge 11 ] ||
		fail "listing of our image is incomplete: $(cat "$W/a")"
	diff "$W/a" "$W/b" >"$W/diff" || { cat "$W/diff" >&2; fail "listing differs from mksquashfs -pf"; }
else
	info "mksquashfs -pf refused the file (older syntax): $(tail -n 1 "$W/mks.log")"
fi

# Bad definitions: the message names the file and line; no image is left.
bad() {
	local want=$1 def=$2
	printf '%s\n' '# first' "$def" >"$W/bad"
	rm -f "$W/bad.sqsh"
	if "$SQK" mkimage -q --pseudo "$W/bad" "$SRC" "$W/bad.sqsh" 2>"$W/err"; then
		fail "accepted bad definition '$def'"
	fi
	grep -q "$W/bad:2" "$W/err" || fail "'$def': message lacks FILE:LINE: $(cat "$W/err")"
	grep -q -- "$want" "$W/err" || fail "'$def': message lacks '$want': $(cat "$W/err")"
	[ ! -e "$W/bad.sqsh" ] || fail "'$def': an image was left behind"
}
bad "not in the image" "nosuch m 644 0 0"
bad "parent directory" "nodir/x c 600 0 0 1 1"
bad "already exists" "etc/passwd c 600 0 0 1 1"
bad "bad mode" "dev2 d 999 0 0"
bad "unknown user" "dev2 d 755 nosuchuser 0"
bad "MAJOR" "dev2 c 600 0 0 5000 1"
bad "failed (exit status 3)" "file f 644 0 0 exit 3"
bad "TYPE" "dev2 z 644 0 0"
bad "unbalanced" '"dev2 d 755 0 0'
bad "not a file" "x l etc"
"$SQK" mkimage -q --pseudo "$W/nosuch" "$SRC" "$W/bad.sqsh" 2>"$W/err" &&
	fail "accepted a missing pseudo file"
grep -q "cannot open pseudo file" "$W/err" || fail "missing file message: $(cat "$W/err")"
echo "pseudo definitions: ok"
