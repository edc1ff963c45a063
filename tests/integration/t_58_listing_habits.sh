#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# The listing and stat habits of unsquashfs 4.7 and rdsquashfs 1.2 (issue 31, point 2), against
# the peer tools on the same images (one made by mksquashfs, one by sqk mkimage) holding every
# inode kind, hard links, a 255-byte name, owners root, a uid and gid in the passwd and group
# files and ones in neither, xattrs (user., trusted., security.; text, binary, quotes), a
# 5 GiB sparse file:
#  1. sqk extract -l/-ls/-ll/-lls/-lln/-llnumeric/-lc/-llc IMG [PATH...] and sqk ls with the
#     same options print what unsquashfs prints, byte for byte, with TZ=UTC and TZ=IST-5:30,
#     with -UTC and -full-precision, under squashfs-root or -d DEST, for exact PATHs and
#     PATH patterns (several, with --exclude and --max-depth); sqk ls's own format lists a
#     pattern's matches as ls(1) lists several operands;
#     extract -linfo prints unsquashfs -linfo's lines and extracts;
#  2. sqk info -s (-stat, -UTC) prints unsquashfs -s's lines, for several compressors;
#  3. sqk stat prints rdsquashfs -s's lines (UID/GID: the same numbers, names where rdsquashfs
#     shows the id table index);
#  4. sqk ls --xattrs and sqk stat show the xattrs getfattr -d -m - shows on a tree unsquashfs
#     extracted;
#  5. sqk ls -l shows owner names, -n numbers.
# Deliberate differences, stated in docs/reading.md: a PATH not in the image is an error (sqk's
# habit; unsquashfs lists nothing); names are escaped when stdout is a terminal (not here).
. "$(dirname "$0")/lib.sh"
need_root
need_sqk
need_cmd rdsquashfs getfattr setfattr python3 mknod mkfifo truncate
peer_squashfs_tools
need_squashfs_tools 4.7

W=$(scratch listing)
S=$W/src
NAMED_U=$(getent passwd 1 | cut -d: -f1)
NAMED_G=$(getent group 1 | cut -d: -f1)
[ -n "$NAMED_U" ] && [ -n "$NAMED_G" ] || skip "no passwd and group entries for id 1"
getent passwd 4242 >/dev/null || getent group 4243 >/dev/null &&
	skip "uid 4242 or gid 4243 has a name here; the test needs ids without one"
LONG=$(printf 'L%.0s' $(seq 1 255))

mkdir -p "$S/d/e" "$S/empty" "$S/d/deep/er/est"
echo hello >"$S/f"
ln "$S/f" "$S/d/hl"
truncate -s 5G "$S/d/sparse"
python3 -c 'import sys; sys.stdout.write("x" * 300000)' >"$S/d/e/mid"
ln -s f "$S/sl"
ln -s ../../f "$S/d/e/sl2"
mknod "$S/cdev" c 4 5
mknod "$S/bdev" b 8 300
mkfifo "$S/fifo"
python3 -c 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$S/sock"
touch "$S/$LONG" "$S/d/deep/er/est/leaf"
chown 1:1 "$S/d/e/mid"
chown 4242:4243 "$S/f"
chown -h 1:4243 "$S/sl"
chmod 4755 "$S/d/e/mid"
chmod 1777 "$S/empty"
setfattr -n user.a -v hello "$S/f" &&
	setfattr -n user.bin -v 0x00ff0a22 "$S/d/e/mid" &&
	setfattr -n trusted.t -v 'q"uote\' "$S/d/e" &&
	setfattr -n user.nl -v "$(printf 'a\nb')" "$S/d" &&
	setfattr -n user.z -v 0x61626300 "$S/d" &&
	setfattr -n user.empty -v "" "$S/empty" &&
	setfattr -n security.selinux -v "system_u:object_r:x_t:s0" "$S/cdev" ||
	fail "cannot set xattrs in $W"
touch -d '2020-03-04 05:06:07 UTC' "$S/f"
find "$S" -exec touch -h -d '2024-07-08 23:59:58 UTC' {} + # a date that moves with TZ
touch -d '2020-03-04 05:06:07 UTC' "$S/f"

must "$MKSQUASHFS" "$S" "$W/peer.sqsh" -noappend -quiet -no-progress
sqk_build -q "$S" "$W/sqk.sqsh"
info "images of every inode kind, by mksquashfs $SQFS_TOOLS_VERSION and sqk"

# same WHAT FILE1 FILE2: byte-identical, else the diff
same() {
	cmp -s "$2" "$3" || { diff "$2" "$3" | head -20 >&2; fail "$1: sqk and the peer differ"; }
}

# ---- 1. unsquashfs's listings ----------------------------------------------------------
n=0
for img in "$W/peer.sqsh" "$W/sqk.sqsh"; do
	for tz in UTC IST-5:30; do
		for o in -l -ls -ll -lls -lln -llnumeric -lc -llc "-lls -UTC" "-lln -full-precision" \
			"-llc -full -UTC"; do
			for p in "" "d/e f" "d/deep/er /empty"; do
				# shellcheck disable=SC2086 # options and paths split on purpose
				TZ=$tz "$UNSQUASHFS" $o "$img" $p >"$W/u.out" 2>"$W/u.err" ||
					fail "unsquashfs $o $p: $(cat "$W/u.err")"
				# shellcheck disable=SC2086
				TZ=$tz "$SQK" extract $o "$img" $p >"$W/s.out" 2>"$W/s.err" ||
					fail "sqk extract $o $p: $(cat "$W/s.err")"
				same "TZ=$tz extract $o $(basename "$img") $p" "$W/u.out" "$W/s.out"
				[ "$o" = -l ] && continue # ls -l is ls's own long format
				# shellcheck disable=SC2086
				TZ=$tz "$SQK" ls $o "$img" $p >"$W/s.out" 2>"$W/s.err" ||
					fail "sqk ls $o $p: $(cat "$W/s.err")"
				same "TZ=$tz ls $o $(basename "$img") $p" "$W/u.out" "$W/s.out"
				n=$((n + 1))
			done
		done
	done
done
TZ=IST-5:30 "$UNSQUASHFS" -lls "$W/peer.sqsh" >"$W/u.out"
grep -q "^lrwxrwxrwx $NAMED_U/4243 .* 2024-07-09 05:29 squashfs-root/sl -> f\$" "$W/u.out" ||
	fail "the peer listing lacks the owner names or the time zone: $(cat "$W/u.out")"
grep -q "^-rw-r--r-- 4242/4243 " "$W/u.out" || fail "the peer listing lacks the numeric owner"
info "listings: $n option/path/time zone cases equal to unsquashfs's on both images"

"$UNSQUASHFS" -d "$W/out dir" -llc "$W/peer.sqsh" d/e sl >"$W/u.out"
"$SQK" extract -d "$W/out dir" -llc "$W/peer.sqsh" d/e sl >"$W/s.out"
same "-d DEST -llc" "$W/u.out" "$W/s.out"
grep -q "^-rwsr-xr-x $NAMED_U/$NAMED_G .* $W/out dir/d/e/mid\$" "$W/s.out" ||
	fail "-d DEST: $(cat "$W/s.out")"
[ ! -e "$W/out dir" ] || fail "-llc -d DEST made DEST"
info "-d DEST names the paths, as unsquashfs; nothing is made"

"$UNSQUASHFS" -d "$W/ux" -linfo "$W/peer.sqsh" d >"$W/u.out" || fail "unsquashfs -linfo"
"$SQK" extract -linfo "$W/peer.sqsh" "$W/ux2" d >"$W/s.out" 2>"$W/s.err" ||
	fail "sqk extract -linfo: $(cat "$W/s.err")"
grep "^[-dlcbps][-rwxsStT]\{9\} " "$W/u.out" | sed "s|$W/ux|$W/ux2|" >"$W/u.lines"
same "extract -linfo" "$W/u.lines" "$W/s.out"
cmp -s "$W/ux/d/e/mid" "$W/ux2/d/e/mid" && [ -d "$W/ux2/d/deep/er/est" ] ||
	fail "extract -linfo did not extract"
"$UNSQUASHFS" -d "$W/ui" -i "$W/peer.sqsh" d/e /sl >"$W/u.out" || fail "unsquashfs -i"
"$SQK" extract -d "$W/ui2" -info "$W/peer.sqsh" d/e /sl >"$W/s.out" 2>"$W/s.err" ||
	fail "sqk extract -d DEST -info: $(cat "$W/s.err")"
grep "^$W/ui\(/\|\$\)" "$W/u.out" | sed "s|^$W/ui|$W/ui2|" >"$W/u.lines"
same "extract -d DEST -info" "$W/u.lines" "$W/s.out"
[ -L "$W/ui2/sl" ] && [ -f "$W/ui2/d/e/mid" ] || fail "extract -d DEST -info did not extract"
info "extract -linfo, -d DEST -info list as unsquashfs does, and extract"

run_capture miss "$SQK" extract -lls "$W/peer.sqsh" d/nope
[ "$RC" = 1 ] && [ ! -s "$OUT_FILE" ] && grep -q "/d/nope: not in the image; nothing listed" "$ERR_FILE" ||
	{ show_err; fail "a PATH not in the image: exit $RC"; }
run_capture dots "$SQK" ls -lls "$W/peer.sqsh" d/e/../e
[ "$RC" = 1 ] && [ ! -s "$OUT_FILE" ] && grep -q "/d/e/../e: a . or .. component" "$ERR_FILE" ||
	{ show_err; fail "a PATH with ..: exit $RC"; }
"$UNSQUASHFS" -lls "$W/peer.sqsh" d/e >"$W/u.out"
"$SQK" ls -lls "$W/peer.sqsh" //d//e/ >"$W/s.out"
same "a PATH with repeated slashes" "$W/u.out" "$W/s.out"
info "a missing PATH, a PATH with ..: an error naming it, nothing listed; slashes joined"

# PATH patterns (unsquashfs's matching, as for extraction), several of them, with excludes
# and a depth bound, for sqk ls's listings as for extract's
n=0
set -f # the patterns split into PATHs, not expanded here
for img in "$W/peer.sqsh" "$W/sqk.sqsh"; do
	for p in "d/*" "*/e" "d/[ds]*" "?" "d/*/m*" "@(f|sl)" "d/e/mid d/*/e*" "nothing*"; do
		# shellcheck disable=SC2086 # several PATHs on purpose
		"$UNSQUASHFS" -lls "$img" $p >"$W/u.out" 2>/dev/null || fail "unsquashfs -lls $p"
		[ "$p" = "nothing*" ] || [ -s "$W/u.out" ] || fail "unsquashfs -lls $p listed nothing"
		for cmd in ls extract; do
			# shellcheck disable=SC2086
			"$SQK" $cmd -lls "$img" $p >"$W/s.out" 2>"$W/s.err" ||
				fail "sqk $cmd -lls $p: $(cat "$W/s.err")"
			same "$cmd -lls $(basename "$img") '$p'" "$W/u.out" "$W/s.out"
			n=$((n + 1))
		done
	done
	"$UNSQUASHFS" -llc -max-depth 2 -excludes "$img" d/e 'd/*p*' >"$W/u.out"
	"$SQK" ls -llc -max-depth 2 --exclude d/e --exclude 'd/*p*' "$img" >"$W/s.out" ||
		fail "sqk ls --exclude --max-depth"
	same "ls -llc --exclude --max-depth" "$W/u.out" "$W/s.out"
done
set +f
"$SQK" ls -lls "$W/peer.sqsh" 'nothing*' >"$W/s.out" 2>"$W/s.err" || fail "ls nothing*"
grep -q "'nothing\*' matched nothing" "$W/s.err" ||
	fail "a pattern that matches nothing: no warning: $(cat "$W/s.err")"
info "ls and extract -lls: $n PATH-pattern cases equal to unsquashfs's; --exclude, --max-depth"

# sqk ls's own format: a pattern's matches, as ls(1) lists several operands
"$SQK" ls "$W/peer.sqsh" 'd/*' f 'e*' >"$W/s.out" 2>"$W/s.err" || fail "ls 'd/*' f"
printf '%s\n' d/hl d/sparse f "" "d/deep:" er "" "d/e:" mid sl2 "" "empty:" >"$W/want"
same "ls 'd/*' f 'e*' (as ls(1) of several operands)" "$W/want" "$W/s.out"
"$SQK" ls "$W/peer.sqsh" 'd/d*' >"$W/s.out" && printf '%s\n' er >"$W/want" &&
	same "ls of a pattern matching one directory" "$W/want" "$W/s.out"
run_capture lsmiss "$SQK" ls "$W/peer.sqsh" f nope
[ "$RC" = 1 ] && grep -qx f "$OUT_FILE" && grep -q "nope" "$ERR_FILE" ||
	{ show_err; fail "ls f nope: exit $RC"; }
info "ls 'd/*' f: the matches, non-directories first, each directory under a header"

# ---- 2. info -s ------------------------------------------------------------------------
n=0
for c in "-comp gzip -Xcompression-level 5 -Xwindow-size 10 -Xstrategy filtered,fixed" \
	"-comp xz -Xbcj x86,arm -Xdict-size 50%" "-comp lz4 -Xhc" "-comp zstd -Xcompression-level 3" \
	"-comp lzo -Xalgorithm lzo1x_1" "-noI -noD -noF -noX -no-fragments -no-exports" \
	"-no-xattrs -always-use-fragments -b 4096"; do
	# shellcheck disable=SC2086
	"$MKSQUASHFS" "$S/d/e" "$W/c.sqsh" -noappend -quiet -no-progress $c >/dev/null 2>&1 ||
		{ info "mksquashfs $c not available here"; continue; }
	for img in "$W/c.sqsh" "$W/sqk.sqsh"; do
		for tz in UTC IST-5:30; do
			TZ=$tz "$UNSQUASHFS" -s "$img" >"$W/u.out"
			TZ=$tz "$SQK" info -s "$img" >"$W/s.out" || fail "sqk info -s"
			same "info -s $c" "$W/u.out" "$W/s.out"
			TZ=$tz "$UNSQUASHFS" -stat -UTC "$img" >"$W/u.out"
			TZ=$tz "$SQK" info -stat -UTC "$img" >"$W/s.out" || fail "sqk info -stat -UTC"
			same "info -stat -UTC $c" "$W/u.out" "$W/s.out"
			n=$((n + 1))
		done
	done
done
[ "$n" -ge 10 ] || fail "info -s: only $n cases ran"
[ "$("$SQK" info -mkfs-time "$W/peer.sqsh")" = "$("$UNSQUASHFS" -mkfs-time "$W/peer.sqsh")" ] ||
	fail "info -mkfs-time"
info "info -s: $n compressor/time zone cases equal to unsquashfs -s; -mkfs-time too"

# ---- 3. sqk stat against rdsquashfs -s --------------------------------------------------
paths=(/ f d d/e d/e/mid d/hl d/sparse sl d/e/sl2 cdev bdev fifo sock empty "$LONG")
for img in "$W/peer.sqsh" "$W/sqk.sqsh"; do
	for p in "${paths[@]}"; do
		rdsquashfs -s "$p" "$img" >"$W/r.out" || fail "rdsquashfs -s $p"
		"$SQK" stat "$img" "$p" >"$W/s.out" || fail "sqk stat $p"
		# the id table index is rdsquashfs's, the names sqk's: the numbers must agree
		sed -e 's/^\([UG]ID: [0-9]*\) (index = [0-9]*)$/\1/' "$W/r.out" >"$W/r.cmp"
		sed -e '/^Xattrs: /,$d' -e 's/^\([UG]ID: [0-9]*\) (.*)$/\1/' "$W/s.out" >"$W/s.cmp"
		same "stat $p ($(basename "$img"))" "$W/r.cmp" "$W/s.cmp"
	done
done
"$SQK" stat "$W/peer.sqsh" d/e/mid >"$W/s.out"
grep -qx "UID: 1 ($NAMED_U)" "$W/s.out" && grep -qx "GID: 1 ($NAMED_G)" "$W/s.out" ||
	fail "sqk stat: no owner names: $(cat "$W/s.out")"
"$SQK" stat "$W/peer.sqsh" d/sparse | grep -qx 'Block count: 40960' ||
	fail "sqk stat: the sparse file's block list"
info "sqk stat: rdsquashfs -s's lines on ${#paths[@]} entries of both images"

# ---- 4. xattrs against getfattr on a tree unsquashfs extracted -------------------------
"$UNSQUASHFS" -d "$W/x" -no-progress "$W/peer.sqsh" >/dev/null 2>&1 || fail "unsquashfs -d x"
(cd "$W/x" && getfattr -R -P -h -d -m - . 2>/dev/null) | awk '
	/^# file: / { f = substr($0, 9); sub(/^\.\//, "", f); next }
	/=/ { print f "\t" $0 }' | sort >"$W/g.out"
[ "$(wc -l <"$W/g.out")" -ge 7 ] || fail "getfattr found too few xattrs: $(cat "$W/g.out")"
for img in "$W/peer.sqsh" "$W/sqk.sqsh"; do
	"$SQK" ls -R -N --xattrs "$img" | awk '
		/^  / { print f "\t" substr($0, 3); next }
		{ f = $0 }' | sort >"$W/s.out"
	same "ls --xattrs ($(basename "$img")) vs getfattr -d" "$W/g.out" "$W/s.out"
	for p in d d/e/mid empty cdev; do
		"$SQK" stat "$img" "$p" | sed -n '/^Xattrs: /,$p' | sed -n 's/^\t//p' |
			sed "s|^|$p\t|" | sort >"$W/st.out"
		grep "^$p	" "$W/g.out" >"$W/gp.out"
		same "stat $p xattrs vs getfattr" "$W/gp.out" "$W/st.out"
	done
done
grep -qFx $'d\tuser.nl=0sYQpi' "$W/s.out" && grep -qFx $'d\tuser.z="abc"' "$W/s.out" &&
	grep -qFx $'d/e\ttrusted.t="q\\"uote\\\\"' "$W/s.out" ||
	fail "ls --xattrs: base64, the trailing NUL or the escapes: $(cat "$W/s.out")"
info "ls --xattrs and stat: the xattrs getfattr -d -m - shows, on both images"

# ---- 5. sqk ls -l: owner names, -n numbers -----------------------------------------------
"$SQK" ls -l "$W/peer.sqsh" >"$W/s.out"
grep -q "^lrwxrwxrwx   1 $NAMED_U  *4243  *1 .* sl -> f\$" "$W/s.out" &&
	grep -q "^-rw-r--r--   2  4242  4243 " "$W/s.out" && grep -q "^drwxr-xr-x   [0-9]* root  root " "$W/s.out" ||
	fail "ls -l: owner names: $(cat "$W/s.out")"
"$SQK" ls -l -n "$W/peer.sqsh" >"$W/s.out"
grep -q "^lrwxrwxrwx   1     1  4243  *1 .* sl -> f\$" "$W/s.out" ||
	fail "ls -l -n: $(cat "$W/s.out")"
info "ls -l: names from the passwd and group files; -n: numbers"
TZ=IST-5:30 "$SQK" ls -l "$W/peer.sqsh" f | grep -q ' 2020-03-04 10:36 f$' &&
	TZ=IST-5:30 "$SQK" ls -l -UTC -full "$W/peer.sqsh" f | grep -q ' 2020-03-04 05:06:07 f$' ||
	fail "ls -l: local time, -UTC, -full: $(TZ=IST-5:30 "$SQK" ls -l -UTC -full "$W/peer.sqsh" f)"
info "ls -l: local time; -UTC and -full too"
