#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# sqk mkimage --tar on hostile and odd archives of other projects' test suites (generated here by
# tar_hostile.py, never stored), and the one depth policy (common/depth.h, 2048 levels) of the
# builder and every reader walk:
#  1. an archive 222,371 directories deep (node-tar's excessively-deep.tar: one GNU long name)
#     is refused in well under a minute, exit 1, no crash, no image, and the message names the
#     entry by its two ends and its depth; so is a chain of listed directories one level over
#     the limit (2049), from a file and from standard input, and pseudo definitions 2049 deep;
#     an older image at the output path stays as it was;
#  2. a chain exactly at the limit (a file 2048 levels deep, 4095 bytes of path) builds; sqk
#     ls -R lists every entry, sqk extract (under a soft limit of 1024 open files) and the
#     kernel and sqkfuse mounts give the tree GNU tar extracts
#     from the archive (compared by directory fds: the paths are longer than PATH_MAX), sqk tar
#     lists what the source lists, sqk verify is clean, sqk info counts 2048 directories,
#     unsquashfs -l lists it all; pseudo definitions 2048 deep build;
#  3. an image deeper than the limit made by another tool (sqfstar, 2100 levels): ls -R, info,
#     verify, tar and extract stop with exit non-zero and an error naming the directory (by its
#     two ends: one short line) and the limit, no crash;
#  4. data after the end-of-archive is accepted with a warning naming its size and offset, as GNU
#     tar and bsdtar accept it: trailing NULs not a whole block (tar-split's extranils, also
#     gzipped), a stray block, a text line, a lone zero block followed by junk (libarchive's
#     plexus archiver file); the image holds what GNU tar extracts; a concatenated archive
#     ends the stream at the first end-of-archive with a warning, as GNU tar and bsdtar list
#     it; with --ignore-zeros all are read (the second after record padding, a third after a
#     lone zero block), as tar -i; junk right after an entry (no end blocks) is still an error;
#  5. a path that repeats a hard-linked file replaces that name only: the image extracts (sqk
#     extract, kernel mount) to the tree GNU tar extracts, hard-link groups included;
#  6. mtimes -1 and 2^33 (pax records) are stored as 0 and 2^32-1: one warning naming the first
#     entry, one line counting them; sqk ls -l and stat on the kernel mount show the clamped
#     values; the same for a directory source with files dated 1960 and 2200;
#  7. with SQK_SAN, the sanitized build runs the deep refusal and every walk at the limit clean.
. "$(dirname "$0")/lib.sh"
need_kernel_mount
need_sqk
need_feature tar
need_cmd tar python3 unsquashfs sqfstar gzip timeout
H="python3 $IT_DIR/tar_hostile.py"
W=$(scratch hostile)

# refused WHAT IMAGE: the last build exited 1 (not a signal), left no IMAGE, and its message
# names the depth, the limit and the entry by its two ends in one short line.
refused() {
	[ "$RC" = 1 ] || { show_err; fail "$1: exit $RC, expected 1"; }
	[ ! -e "$2" ] || fail "$1: an image was left at $2"
	grep -q " is $3 levels deep; an image holds at most 2048 levels" "$ERR_FILE" ||
		{ show_err; fail "$1: no message naming the depth $3 and the limit"; }
	grep -q "/\.\.\./" "$ERR_FILE" || { show_err; fail "$1: the entry is not named by its two ends"; }
	[ "$(wc -L <"$ERR_FILE")" -lt 400 ] || fail "$1: a message line of $(wc -L <"$ERR_FILE") bytes"
	info "$1: refused, exit 1, no image: $(cut -c1-90 "$ERR_FILE" | head -n 1)..."
}

# ---- 1. too deep: refused --------------------------------------------------------------------
$H deep 222371 "$W/excessively-deep.tar"
start=$(date +%s)
run_capture deep timeout -k 5 60 "$SQK" mkimage -q --tar "$W/excessively-deep.tar" "$W/deep.sqsh"
refused "222,371 levels (node-tar's excessively-deep.tar)" "$W/deep.sqsh" 222372
grep -q "foo.txt'" "$ERR_FILE" || fail "the deep entry's name (foo.txt) is not in the message"
[ $(($(date +%s) - start)) -lt 30 ] || fail "refusing the deep archive took $(($(date +%s) - start)) s"

$H chain 2049 "$W/over.tar"
$H chain 2048 "$W/limit.tar"
run_capture over "$SQK" mkimage -q --tar "$W/over.tar" "$W/over.sqsh"
refused "a chain of listed directories 2049 deep" "$W/over.sqsh" 2049
run_capture over_stdin sh -c '"$1" mkimage -q --tar - "$2" <"$3"' sh "$SQK" "$W/over_in.sqsh" "$W/over.tar"
refused "the same from standard input" "$W/over_in.sqsh" 2049

# an image already at the output path is left as it was
sqk_build -q --tar "$W/limit.tar" "$W/old.sqsh"
sum_before=$(sha256sum <"$W/old.sqsh")
run_capture over_old "$SQK" mkimage -q --force --tar "$W/over.tar" "$W/old.sqsh"
[ "$RC" = 1 ] || { show_err; fail "over the limit onto an existing image: exit $RC"; }
[ "$(sha256sum <"$W/old.sqsh")" = "$sum_before" ] || fail "the older image was changed"
info "an older image at the output path is left as it was"

mkdir "$W/empty"
$H pseudo 2049 "$W/pseudo2049"
run_capture pseudo_over "$SQK" mkimage -q --pseudo "$W/pseudo2049" "$W/empty" "$W/ps_over.sqsh"
refused "pseudo definitions 2049 deep" "$W/ps_over.sqsh" 2049

# ---- 2. at the limit: built and read back by every reader --------------------------------------
sqk_build -q --tar "$W/limit.tar" "$W/limit.sqsh"
check_superblock "$W/limit.sqsh"
mkdir "$W/gnu"
tar -xf "$W/limit.tar" -C "$W/gnu" || fail "GNU tar cannot extract the archive at the limit"

run_capture lsR "$SQK" ls -R "$W/limit.sqsh"
[ "$RC" = 0 ] || { show_err; fail "sqk ls -R at the limit: exit $RC"; }
[ "$(wc -l <"$OUT_FILE")" = 2048 ] || fail "sqk ls -R listed $(wc -l <"$OUT_FILE") entries, not 2048"
[ "$(awk '{ if (length($0) > m) m = length($0) } END { print m }' "$OUT_FILE")" = 4095 ] ||
	fail "sqk ls -R: the deepest path is not 4095 bytes"
info "sqk ls -R: 2048 entries, the deepest path 4095 bytes"

# under the usual soft limit of 1024 descriptors (extract keeps a directory open per level)
run_capture x sh -c 'ulimit -Sn 1024 && exec "$@"' sh "$SQK" extract "$W/limit.sqsh" "$W/x"
[ "$RC" = 0 ] || { show_err; fail "sqk extract at the limit (soft limit of 1024 fds): exit $RC"; }
$H fcmp "$W/gnu" "$W/x" >"$TMP/fcmp.out" || { cat "$TMP/fcmp.out" >&2; fail "sqk extract differs from GNU tar's extraction"; }
grep -q "deepest at level 2048, 0 differ" "$TMP/fcmp.out" || fail "extract: $(cat "$TMP/fcmp.out")"
info "sqk extract = GNU tar -x: $(cat "$TMP/fcmp.out")"

mount_sq "$W/limit.sqsh" "$W/mnt"
$H fcmp "$W/gnu" "$W/mnt" >"$TMP/fcmp.out" || { cat "$TMP/fcmp.out" >&2; fail "the kernel mount differs from GNU tar's extraction"; }
umount_sq "$W/mnt"
info "kernel mount = GNU tar -x"
SQKFUSE=${SQKFUSE:-$(dirname "$SQK")/sqkfuse}
if [ -x "$SQKFUSE" ] && [ -e /dev/fuse ] && command -v fusermount3 >/dev/null; then
	fuse_mount "$W/limit.sqsh" "$W/fmnt"
	$H fcmp "$W/gnu" "$W/fmnt" >"$TMP/fcmp.out" || { cat "$TMP/fcmp.out" >&2; fail "the sqkfuse mount differs from GNU tar's extraction"; }
	fuse_umount "$W/fmnt"
	info "sqkfuse mount = GNU tar -x"
else
	info "no sqkfuse or /dev/fuse: the FUSE mount at the limit is not checked"
fi

run_capture tarout "$SQK" tar -o "$W/back.tar" "$W/limit.sqsh"
[ "$RC" = 0 ] || { show_err; fail "sqk tar at the limit: exit $RC"; }
tar -tf "$W/limit.tar" | sed 's|/$||' | sort >"$TMP/src.list"
tar -tf "$W/back.tar" | sed 's|^\./||; s|/$||' | grep -v '^\.\?$' | sort >"$TMP/back.list"
cmp -s "$TMP/src.list" "$TMP/back.list" || fail "sqk tar lists other entries than the source archive"
info "sqk tar: the same $(wc -l <"$TMP/back.list") entries as the source archive"

run_capture verify "$SQK" verify "$W/limit.sqsh"
[ "$RC" = 0 ] && grep -q ': clean;' "$OUT_FILE" "$ERR_FILE" || { show_err; cat "$OUT_FILE" >&2; fail "sqk verify at the limit is not clean"; }
run_capture info "$SQK" info "$W/limit.sqsh"
[ "$RC" = 0 ] || { show_err; fail "sqk info at the limit: exit $RC"; }
grep -Eq '^ +directory +2048$' "$OUT_FILE" || fail "sqk info does not count 2048 directories"
unsquashfs -l "$W/limit.sqsh" >"$TMP/unsq.out" 2>&1 || fail "unsquashfs -l at the limit failed"
[ "$(grep -c '^squashfs-root' "$TMP/unsq.out")" = 2049 ] || fail "unsquashfs -l does not list 2049 names"
info "sqk verify clean, sqk info 2048 directories, unsquashfs -l lists it all"

$H pseudo 2048 "$W/pseudo2048"
sqk_build -q --pseudo "$W/pseudo2048" "$W/empty" "$W/ps.sqsh"
[ "$("$SQK" ls -R "$W/ps.sqsh" | wc -l)" = 2048 ] || fail "pseudo definitions 2048 deep: not 2048 entries"
info "pseudo definitions 2048 deep: built"

# ---- 3. an image deeper than the limit (sqfstar): every reader stops, naming the directory ----
$H chain 2100 "$W/c2100.tar"
sqfstar -quiet -no-progress "$W/c2100.sqfs" <"$W/c2100.tar" >/dev/null 2>&1 || fail "sqfstar failed"
deep_reader() {
	local name=$1
	shift
	run_capture "$name" "$SQK" "$@"
	[ "$RC" != 0 ] && [ "$RC" -lt 128 ] || { show_err; fail "sqk $* on 2100 levels: exit $RC"; }
	grep -q "nested deeper than 2048 levels" "$OUT_FILE" "$ERR_FILE" ||
		{ show_err; fail "sqk $*: no message naming the limit"; }
	grep -Eq "d/d/?\.\.\./?d/d" "$OUT_FILE" "$ERR_FILE" || fail "sqk $*: the directory is not named"
	[ "$(cat "$OUT_FILE" "$ERR_FILE" | grep 'nested deeper' | wc -L)" -lt 400 ] ||
		fail "sqk $*: a message line longer than 400 bytes"
}
deep_reader ls2100 ls -R "$W/c2100.sqfs"
deep_reader info2100 info "$W/c2100.sqfs"
deep_reader verify2100 verify "$W/c2100.sqfs"
deep_reader tar2100 tar -o "$W/c2100_back.tar" "$W/c2100.sqfs"
deep_reader x2100 extract "$W/c2100.sqfs" "$W/x2100"
info "2100 levels (sqfstar): ls -R, info, verify, tar, extract stop with the limit named"

# ---- 4. data after the end-of-archive ----------------------------------------------------------
for kind in nuls block text lone; do
	$H trailing $kind "$W/t_$kind.tar"
	run_capture "tr_$kind" "$SQK" mkimage -q --tar "$W/t_$kind.tar" "$W/t_$kind.sqsh"
	[ "$RC" = 0 ] || { show_err; fail "trailing $kind: exit $RC"; }
	case $kind in
	nuls) want="408 zero bytes after the end of the archive (offset 10240) are not a whole 512-byte block: ignored" ;;
	block) want="512 bytes after the end of the archive (offset 10240) are not a tar header: ignored" ;;
	text) want="25 bytes after the end of the archive (offset 10240) are not a tar header: ignored" ;;
	lone) want="512 bytes after the end of the archive (offset 4096) are not a tar header: ignored" ;;
	esac
	grep -qF "$want" "$ERR_FILE" || { show_err; fail "trailing $kind: no warning '$want'"; }
	[ "$(wc -l <"$ERR_FILE")" = 1 ] || { show_err; fail "trailing $kind: more than one line"; }
	rm -rf "$W/g_$kind" "$W/x_$kind"
	mkdir "$W/g_$kind"
	tar -xf "$W/t_$kind.tar" -C "$W/g_$kind" 2>/dev/null || fail "GNU tar refuses trailing $kind"
	must "$SQK" extract "$W/t_$kind.sqsh" "$W/x_$kind"
	$TREECMP "$W/g_$kind" "$W/x_$kind" --ignore-root-attrs >"$TMP/cmp.out" 2>&1 ||
		{ cat "$TMP/cmp.out" >&2; fail "trailing $kind: the image differs from GNU tar's extraction"; }
	info "trailing $kind: warned ('${want%%:*}'), image = GNU tar -x"
done
gzip -9n <"$W/t_nuls.tar" >"$W/t_nuls.tar.gz"
run_capture tr_gz "$SQK" mkimage -q --tar "$W/t_nuls.tar.gz" "$W/t_gz.sqsh"
[ "$RC" = 0 ] && grep -q "408 zero bytes after the end" "$ERR_FILE" || { show_err; fail "gzipped extranils: exit $RC"; }
cmp -s "$W/t_gz.sqsh" "$W/t_nuls.sqsh" || fail "gzipped extranils: another image than the plain archive"
info "gzipped (extranils.tar.gz): warned, same image"

# concatenated: a.tar (record padding), b.tar, a lone zero block, c.tar; then junk
python3 - "$W" <<'EOF'
import io, sys, tarfile
w = sys.argv[1]
def arc(name, data):
    b = io.BytesIO()
    with tarfile.open(fileobj=b, mode='w', format=tarfile.GNU_FORMAT) as t:
        ti = tarfile.TarInfo(name); ti.size = len(data); ti.mtime = 1700000000
        t.addfile(ti, io.BytesIO(data))
    return b.getvalue()
a, b, c = arc('a', b'one\n'), arc('b', b'two\n'), arc('c', b'three\n')
c_entries = c[:1024]          # header and data block, no end blocks
open(w + '/cat.tar', 'wb').write(a + b + b'\0' * 512 + c + b'junk after it all\n')
open(w + '/junk_mid.tar', 'wb').write(c_entries + b'\xab' * 512 + a)
# a lone zero block, then an archive whose end is 700 zero bytes (the stream ends in a short piece)
open(w + '/short_end.tar', 'wb').write(a[:1024] + b'\0' * 512 + b[:1024] + b'\0' * 700)
EOF
# by default the stream ends at its first end-of-archive, as GNU tar and bsdtar list it
run_capture cat1 "$SQK" mkimage -q --tar "$W/cat.tar" "$W/cat1.sqsh"
[ "$RC" = 0 ] || { show_err; fail "concatenated archives, default: exit $RC"; }
[ "$("$SQK" ls "$W/cat1.sqsh" | tr '\n' ' ')" = "$(tar -tf "$W/cat.tar" 2>/dev/null | tr '\n' ' ')" ] &&
	[ "$("$SQK" ls "$W/cat1.sqsh")" = a ] ||
	fail "concatenated archives, default: $("$SQK" ls "$W/cat1.sqsh" | tr '\n' ' ') (GNU tar: a)"
if command -v bsdtar >/dev/null; then
	[ "$(bsdtar -tf "$W/cat.tar" | tr '\n' ' ')" = "a " ] || fail "bsdtar reads on: $(bsdtar -tf "$W/cat.tar")"
fi
grep -q "tar '.*cat.tar': [0-9]* bytes after the end of the archive (offset 10240) start with a tar header: ignored, as GNU tar and bsdtar do (--ignore-zeros reads concatenated archives)" "$ERR_FILE" ||
	{ show_err; fail "concatenated, default: the archive after the end was not warned about"; }
info "concatenated archives, default: the first only, as GNU tar and bsdtar; a warning names the rest"
# --ignore-zeros reads on, as tar -i
run_capture cat "$SQK" mkimage -q --tar --ignore-zeros "$W/cat.tar" "$W/cat.sqsh"
[ "$RC" = 0 ] || { show_err; fail "concatenated archives with junk at the end: exit $RC"; }
[ "$("$SQK" ls "$W/cat.sqsh" | tr '\n' ' ')" = "a b c " ] || fail "concatenated archives: $("$SQK" ls "$W/cat.sqsh")"
[ "$(tar -itf "$W/cat.tar" 2>/dev/null | tr '\n' ' ')" = "a b c " ] || fail "GNU tar -i lists $(tar -itf "$W/cat.tar" 2>/dev/null)"
[ "$("$SQK" cat "$W/cat.sqsh" c)" = three ] || fail "concatenated archives: c has the wrong content"
grep -q "18 bytes after the end of the archive" "$ERR_FILE" || { show_err; fail "concatenated: the junk at the end was not warned about"; }
run_capture short_end "$SQK" mkimage -q --tar --ignore-zeros "$W/short_end.tar" "$W/short_end.sqsh"
[ "$RC" = 0 ] && [ "$("$SQK" ls "$W/short_end.sqsh" | tr '\n' ' ')" = "a b " ] || { show_err; fail "a short end after a lone zero block: exit $RC"; }
grep -q "188 zero bytes after the end of the archive (offset 3072)" "$ERR_FILE" || { show_err; fail "a short end: no warning"; }
info "--ignore-zeros: concatenated archives (after padding, after a lone zero block) all read; junk after them warned"
run_capture junk_mid "$SQK" mkimage -q --tar "$W/junk_mid.tar" "$W/junk_mid.sqsh"
[ "$RC" = 1 ] && [ ! -e "$W/junk_mid.sqsh" ] || { show_err; fail "junk right after an entry: exit $RC"; }
grep -q "bad entry header at offset 1024 (after 'c')" "$ERR_FILE" || { show_err; fail "junk right after an entry: message"; }
info "junk right after an entry (no end blocks): still an error naming the offset"

# ---- 5. a hard-linked name replaced ------------------------------------------------------------
$H hardlinks "$W/hl.tar"
sqk_build -q --tar "$W/hl.tar" "$W/hl.sqsh"
mkdir "$W/g_hl"
tar -xf "$W/hl.tar" -C "$W/g_hl" || fail "GNU tar cannot extract the hard-link archive"
must "$SQK" extract "$W/hl.sqsh" "$W/x_hl"
$TREECMP "$W/g_hl" "$W/x_hl" --ignore-root-attrs >"$TMP/cmp.out" 2>&1 ||
	{ cat "$TMP/cmp.out" >&2; fail "hard links replaced: sqk extract differs from GNU tar -x"; }
mount_sq "$W/hl.sqsh" "$W/mnt_hl"
$TREECMP "$W/g_hl" "$W/mnt_hl" --ignore-root-attrs >"$TMP/cmp.out" 2>&1 ||
	{ cat "$TMP/cmp.out" >&2; fail "hard links replaced: the kernel mount differs from GNU tar -x"; }
[ "$(cat "$W/mnt_hl/b")" = "old a" ] && [ "$(cat "$W/mnt_hl/a")" = "new a" ] &&
	[ "$(stat -c %h "$W/mnt_hl/h")" = 2 ] || fail "hard links replaced: wrong contents or link counts"
umount_sq "$W/mnt_hl"
check_superblock "$W/hl.sqsh"
must "$SQK" verify "$W/hl.sqsh"
info "a repeated hard-linked name replaces that name only: image = GNU tar -x (links included)"

# ---- 6. mtimes outside 32 bits -----------------------------------------------------------------
$H mtimes "$W/mt.tar"
run_capture mt "$SQK" mkimage -q --tar "$W/mt.tar" "$W/mt.sqsh"
[ "$RC" = 0 ] || { show_err; fail "mtimes: exit $RC"; }
grep -q "'before-1970': mtime -1 is outside what SquashFS stores (0..4294967295, 1970-01-01 to 2106-02-07): stored as 0" "$ERR_FILE" ||
	{ show_err; fail "mtimes: the first clamped entry is not named"; }
grep -q "^sqk mkimage: 2 entries had an mtime outside 0..4294967295, clamped" "$ERR_FILE" ||
	{ show_err; fail "mtimes: no count of the clamped entries"; }
[ "$(wc -l <"$ERR_FILE")" = 2 ] || { show_err; fail "mtimes: not exactly two lines"; }
"$SQK" ls -l "$W/mt.sqsh" >"$TMP/mtls.out"
grep -q "1970-01-01 00:00 before-1970$" "$TMP/mtls.out" && grep -q "2106-02-07 06:28 after-2106$" "$TMP/mtls.out" ||
	{ cat "$TMP/mtls.out" >&2; fail "mtimes: sqk ls -l does not show the clamped values"; }
mount_sq "$W/mt.sqsh" "$W/mnt_mt"
[ "$(stat -c %Y "$W/mnt_mt/before-1970") $(stat -c %Y "$W/mnt_mt/after-2106") $(stat -c %Y "$W/mnt_mt/last")" = "0 4294967295 4294967295" ] ||
	fail "mtimes on the kernel mount: $(stat -c '%n %Y' "$W"/mnt_mt/*)"
umount_sq "$W/mnt_mt"
info "tar mtimes -1, 2^33: stored 0, 2^32-1; one warning naming the first, one count"

mkdir "$W/dsrc"
touch -d '1960-01-01 UTC' "$W/dsrc/old"
touch -d '2200-01-01 UTC' "$W/dsrc/new"
run_capture mtd "$SQK" mkimage -q "$W/dsrc" "$W/mtd.sqsh"
[ "$RC" = 0 ] || { show_err; fail "directory mtimes: exit $RC"; }
grep -q "dsrc/new': mtime 7258118400 is outside" "$ERR_FILE" && grep -q "^sqk mkimage: 2 entries had an mtime" "$ERR_FILE" ||
	{ show_err; fail "directory mtimes: warning"; }
"$SQK" ls -l "$W/mtd.sqsh" >"$TMP/mtls.out"
grep -q "1970-01-01 00:00 old$" "$TMP/mtls.out" && grep -q "2106-02-07 06:28 new$" "$TMP/mtls.out" ||
	{ cat "$TMP/mtls.out" >&2; fail "directory mtimes: sqk ls -l"; }
info "directory source dated 1960 and 2200: clamped, warned"

# ---- 7. the sanitized build --------------------------------------------------------------------
if san_start; then
	san_sqk san_deep mkimage -q --tar "$W/excessively-deep.tar" "$W/san_deep.sqsh"
	[ "$RC" = 1 ] || { show_err; fail "sanitized: the deep archive: exit $RC"; }
	san_sqk san_limit mkimage -q --tar "$W/limit.tar" "$W/san_limit.sqsh"
	[ "$RC" = 0 ] || { show_err; fail "sanitized: the archive at the limit: exit $RC"; }
	cmp -s "$W/san_limit.sqsh" "$W/limit.sqsh" || fail "sanitized: another image at the limit"
	san_sqk san_lone mkimage -q --tar "$W/t_lone.tar" "$W/san_lone.sqsh"
	[ "$RC" = 0 ] || { show_err; fail "sanitized: trailing junk: exit $RC"; }
	san_sqk san_hl mkimage -q --tar "$W/hl.tar" "$W/san_hl.sqsh"
	cmp -s "$W/san_hl.sqsh" "$W/hl.sqsh" || fail "sanitized: another hard-link image"
	for args in "ls -R" "verify" "info" "tar -o $W/san.tar"; do
		san_sqk san_walk $args "$W/limit.sqsh"
		[ "$RC" = 0 ] || { show_err; fail "sanitized: sqk $args at the limit: exit $RC"; }
		san_sqk san_walk2100 $args "$W/c2100.sqfs"
		[ "$RC" != 0 ] && [ "$RC" -lt 128 ] || { show_err; fail "sanitized: sqk $args on 2100 levels: exit $RC"; }
	done
	san_sqk san_x extract "$W/limit.sqsh" "$W/san_x"
	[ "$RC" = 0 ] || { show_err; fail "sanitized: extract at the limit: exit $RC"; }
	info "sanitized build: deep refusal, the limit's build and walks, trailing data: clean"
fi
echo "ok"
